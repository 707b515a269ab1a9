//! ZUNION / ZINTER / ZDIFF (and their STORE forms): Redis 7.0's
//! `zunionInterDiffGenericCommand` arithmetic.
//!
//! * A member's value from input i is `weight_i × score`, and NaN (0 ×
//!   inf) becomes 0 — except for the second and later inputs of an
//!   intersection, where Redis aggregates the NaN itself: SUM turns the
//!   NaN sum into 0, MIN and MAX keep the value so far (so `ZINTER 2 a b
//!   WEIGHTS 2 0` of inf and -inf is 0, not inf, as redis-server 7.0.15
//!   answers).
//! * SUM adds (NaN from inf + -inf becomes 0), MIN and MAX compare.
//! * Union and intersection visit inputs from the smallest (Redis sorts
//!   them by size; we sort stably), so a sum adds in Redis's order when
//!   sizes differ. Difference keeps the first input's scores as they are.
//!
//! Inputs are [`Scored`]: a sorted set, or (for the server) a plain set
//! whose members all score 1, as Redis accepts.

use std::collections::HashMap;

use super::{cmp_pair, ZSet};
use crate::Thresholds;

/// How scores of one member in several inputs combine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Aggregate {
    #[default]
    Sum,
    Min,
    Max,
}

impl Aggregate {
    fn apply(self, acc: &mut f64, v: f64) {
        match self {
            Aggregate::Sum => {
                *acc += v;
                if acc.is_nan() {
                    *acc = 0.0;
                }
            }
            Aggregate::Min => {
                if v < *acc {
                    *acc = v;
                }
            }
            Aggregate::Max => {
                if v > *acc {
                    *acc = v;
                }
            }
        }
    }
}

/// An input of the set algebra.
pub trait Scored {
    /// Members.
    fn card(&self) -> usize;
    /// A member's score.
    fn score_of(&self, member: &[u8]) -> Option<f64>;
    /// Calls `f` on every member (any order).
    fn each(&self, f: &mut dyn FnMut(&[u8], f64));
}

impl Scored for ZSet {
    fn card(&self) -> usize {
        self.len()
    }
    fn score_of(&self, member: &[u8]) -> Option<f64> {
        self.score(member)
    }
    fn each(&self, f: &mut dyn FnMut(&[u8], f64)) {
        for (m, s) in self.iter() {
            f(m, s);
        }
    }
}

/// A plain set as an input: every member scores 1 (Redis's ZUNION and
/// friends accept sets).
impl Scored for crate::set::Set {
    fn card(&self) -> usize {
        self.len()
    }
    fn score_of(&self, member: &[u8]) -> Option<f64> {
        self.contains(member).then_some(1.0)
    }
    fn each(&self, f: &mut dyn FnMut(&[u8], f64)) {
        for m in self.iter() {
            m.with_bytes(|b| f(b, 1.0));
        }
    }
}

fn weighted(w: f64, s: f64) -> f64 {
    let v = w * s;
    if v.is_nan() {
        0.0
    } else {
        v
    }
}

/// Input indexes from the smallest input up (stable).
fn by_size(inputs: &[&dyn Scored]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..inputs.len()).collect();
    order.sort_by_key(|&i| inputs[i].card());
    order
}

fn weight(weights: &[f64], i: usize) -> f64 {
    weights.get(i).copied().unwrap_or(1.0)
}

fn finish(acc: HashMap<Vec<u8>, f64>, t: &Thresholds) -> ZSet {
    let mut pairs: Vec<(&[u8], f64)> = acc.iter().map(|(m, &s)| (m.as_slice(), s)).collect();
    pairs.sort_by(|a, b| cmp_pair(a.1, a.0, b.1, b.0));
    ZSet::from_pairs(pairs, t)
}

/// ZUNION: every member of any input. `weights` (one per input, default
/// 1) scale scores; the result's form follows `t`.
pub fn union(inputs: &[&dyn Scored], weights: &[f64], agg: Aggregate, t: &Thresholds) -> ZSet {
    let mut acc: HashMap<Vec<u8>, f64> = HashMap::new();
    // Bounded: every member of every input once.
    for i in by_size(inputs) {
        let w = weight(weights, i);
        inputs[i].each(&mut |m, s| {
            let v = weighted(w, s);
            match acc.get_mut(m) {
                Some(a) => agg.apply(a, v),
                None => {
                    acc.insert(m.to_vec(), v);
                }
            }
        });
    }
    finish(acc, t)
}

/// ZINTER: members of every input (none if any input is empty).
pub fn inter(inputs: &[&dyn Scored], weights: &[f64], agg: Aggregate, t: &Thresholds) -> ZSet {
    let order = by_size(inputs);
    let mut acc: HashMap<Vec<u8>, f64> = HashMap::new();
    let Some((&first, rest)) = order.split_first() else {
        return ZSet::new(t);
    };
    if inputs[first].card() == 0 {
        return ZSet::new(t);
    }
    // Bounded: the smallest input's members × the inputs.
    inputs[first].each(&mut |m, s| {
        let mut a = weighted(weight(weights, first), s);
        for &j in rest {
            match inputs[j].score_of(m) {
                Some(sj) => agg.apply(&mut a, weight(weights, j) * sj),
                None => return,
            }
        }
        acc.insert(m.to_vec(), a);
    });
    finish(acc, t)
}

/// ZDIFF: members of the first input in none of the others, with their
/// scores.
pub fn diff(inputs: &[&dyn Scored], t: &Thresholds) -> ZSet {
    let mut acc: HashMap<Vec<u8>, f64> = HashMap::new();
    let Some((first, rest)) = inputs.split_first() else {
        return ZSet::new(t);
    };
    // Bounded: the first input's members × the inputs.
    first.each(&mut |m, s| {
        if rest.iter().all(|o| o.score_of(m).is_none()) {
            acc.insert(m.to_vec(), s);
        }
    });
    finish(acc, t)
}
