//! Large sorted sets through many levels of the B+tree: the shapes a
//! benchmark makes (redis-benchmark's ZADD then ZPOPMIN with random
//! members and scores, ascending and descending inserts, interleaved pops
//! and adds), checked against a model at every step's end. Found by
//! `redis-benchmark -t zadd,zpopmin -r 100000 -n 200000 -P 16`: removals
//! could leave an inner node whose only leaf was empty, and the next
//! removal above it panicked.

use amalgam_types::zset::{AddFlags, ZSet};
use amalgam_types::Thresholds;
use std::collections::BTreeSet;

/// xorshift64*: deterministic.
fn rng(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed | 1;
    move || {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        s.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

const N: u64 = if cfg!(debug_assertions) { 30_000 } else { 200_000 };

/// Model order: (score, member), scores as ordered bits (all finite here).
type Model = BTreeSet<(i64, Vec<u8>)>;

fn add(z: &mut ZSet, m: &mut Model, member: Vec<u8>, score: i64) {
    if let Some(old) = z.score(&member) {
        m.remove(&(old as i64, member.clone()));
    }
    z.add(&member, score as f64, AddFlags::default()).unwrap();
    m.insert((score, member));
}

fn pop_min_checked(z: &mut ZSet, m: &mut Model, count: usize) {
    let got = z.pop_min(count);
    for (member, score) in got {
        let want = m.pop_first().expect("model not empty");
        assert_eq!((score as i64, member.to_vec()), want);
    }
    assert_eq!(z.len(), m.len());
}

#[test]
fn random_adds_then_pops_to_empty() {
    let t = Thresholds::default();
    let (mut z, mut m) = (ZSet::new(&t), Model::new());
    let mut r = rng(42);
    for _ in 0..N {
        let k = r() % 100_000;
        add(&mut z, &mut m, format!("element:{k:06}").into_bytes(), (r() % 100_000) as i64);
    }
    while !m.is_empty() {
        pop_min_checked(&mut z, &mut m, 1);
    }
    assert!(z.is_empty());
}

#[test]
fn ascending_and_descending_inserts_popped_from_both_ends() {
    let t = Thresholds::default();
    for descending in [false, true] {
        let (mut z, mut m) = (ZSet::new(&t), Model::new());
        for i in 0..N as i64 {
            let s = if descending { -i } else { i };
            add(&mut z, &mut m, format!("m{i}").into_bytes(), s);
        }
        let mut r = rng(7);
        while !m.is_empty() {
            if r() % 2 == 0 {
                pop_min_checked(&mut z, &mut m, 1 + (r() % 3) as usize);
            } else {
                let got = z.pop_max(1);
                for (member, score) in got {
                    let want = m.pop_last().expect("model not empty");
                    assert_eq!((score as i64, member.to_vec()), want);
                }
            }
            assert_eq!(z.len(), m.len());
        }
    }
}

#[test]
fn interleaved_adds_and_pops() {
    let t = Thresholds::default();
    let (mut z, mut m) = (ZSet::new(&t), Model::new());
    let mut r = rng(99);
    for round in 0..N {
        let k = r() % 50_000;
        add(&mut z, &mut m, format!("e{k}").into_bytes(), (r() % 1000) as i64);
        if round % 3 == 0 {
            pop_min_checked(&mut z, &mut m, 2);
        }
    }
    // Everything still there in order.
    let all: Vec<(i64, Vec<u8>)> = z.iter().map(|(mem, s)| (s as i64, mem.to_vec())).collect();
    assert_eq!(all, m.iter().cloned().collect::<Vec<_>>());
    while !m.is_empty() {
        pop_min_checked(&mut z, &mut m, 7);
    }
}
