//! Model test: `ZSet` against a `BTreeMap` member → score (and the sorted
//! Vec derived from it), with thresholds small enough that the compact →
//! large conversion happens mid-sequence. Every query is checked after
//! every operation, in both forms, through the packed view when compact,
//! and across encode/decode.

use std::collections::{BTreeMap, HashSet};

use amalgam_types::zset::{self, AddFlags, AddOutcome, Aggregate, LexBound, LexRange, ScoreRange, ZSet, ZView};
use amalgam_types::Thresholds;
use proptest::prelude::*;

type Model = BTreeMap<Vec<u8>, f64>;

#[derive(Clone, Debug)]
enum Op {
    Add(Vec<u8>, f64, AddFlags),
    Remove(Vec<u8>),
    RemRank(i64, i64),
    RemScore(ScoreRange),
    RemLex(Vec<u8>, Vec<u8>),
    PopMin(usize),
    PopMax(usize),
}

const SCORES: [f64; 9] = [f64::NEG_INFINITY, -1.5, -0.0, 0.0, 0.5, 1.0, 2.0, 3.25, f64::INFINITY];

fn score() -> impl Strategy<Value = f64> {
    (0..SCORES.len()).prop_map(|i| SCORES[i])
}

fn member() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        10 => prop::collection::vec(b'a'..=b'd', 0..3),
        1 => (60usize..80).prop_map(|n| vec![b'z'; n]),
    ]
}

fn flags() -> impl Strategy<Value = AddFlags> {
    // Only combinations Redis accepts (AddFlags::check is tested apart).
    prop_oneof![
        4 => Just(AddFlags::default()),
        1 => Just(AddFlags { nx: true, ..AddFlags::default() }),
        1 => Just(AddFlags { xx: true, ..AddFlags::default() }),
        1 => Just(AddFlags { gt: true, ..AddFlags::default() }),
        1 => Just(AddFlags { lt: true, xx: true, ..AddFlags::default() }),
        2 => Just(AddFlags { incr: true, ..AddFlags::default() }),
        1 => Just(AddFlags { incr: true, gt: true, ..AddFlags::default() }),
    ]
}

fn lex_arg() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(b"-".to_vec()),
        Just(b"+".to_vec()),
        prop::collection::vec(b'a'..=b'd', 0..3).prop_map(|m| [b"[".as_slice(), &m].concat()),
        prop::collection::vec(b'a'..=b'd', 0..3).prop_map(|m| [b"(".as_slice(), &m].concat()),
    ]
}

fn score_range() -> impl Strategy<Value = ScoreRange> {
    (score(), any::<bool>(), score(), any::<bool>()).prop_map(|(min, a, max, b)| ScoreRange {
        min: zset::normalize(min),
        min_exclusive: a,
        max: zset::normalize(max),
        max_exclusive: b,
    })
}

fn op(same_score: bool) -> impl Strategy<Value = Op> {
    let s = if same_score { Just(0.0).boxed() } else { score().boxed() };
    let f = if same_score { Just(AddFlags::default()).boxed() } else { flags().boxed() };
    prop_oneof![
        8 => (member(), s, f).prop_map(|(m, s, f)| Op::Add(m, s, f)),
        3 => member().prop_map(Op::Remove),
        1 => (-6i64..6, -6i64..6).prop_map(|(a, b)| Op::RemRank(a, b)),
        1 => score_range().prop_map(Op::RemScore),
        1 => (lex_arg(), lex_arg()).prop_map(|(a, b)| Op::RemLex(a, b)),
        1 => (0usize..3).prop_map(Op::PopMin),
        1 => (0usize..3).prop_map(Op::PopMax),
    ]
}

fn sorted(m: &Model) -> Vec<(Vec<u8>, f64)> {
    let mut v: Vec<(Vec<u8>, f64)> = m.iter().map(|(k, &s)| (k.clone(), s)).collect();
    v.sort_by(|a, b| a.1.partial_cmp(&b.1).unwrap().then_with(|| a.0.cmp(&b.0)));
    v
}

fn model_add(m: &mut Model, member: &[u8], score: f64, f: AddFlags) -> Result<AddOutcome, &'static str> {
    let score = if score == 0.0 { 0.0 } else { score };
    match m.get(member).copied() {
        Some(cur) => {
            if f.nx {
                return Ok(AddOutcome::Skipped);
            }
            let mut new = if f.incr { cur + score } else { score };
            if new.is_nan() {
                return Err(zset::ERR_NAN);
            }
            if new == 0.0 {
                new = 0.0;
            }
            if (f.lt && new >= cur) || (f.gt && new <= cur) {
                return Ok(AddOutcome::Skipped);
            }
            if new == cur {
                return Ok(AddOutcome::Unchanged(cur));
            }
            m.insert(member.to_vec(), new);
            Ok(AddOutcome::Updated(new))
        }
        None if f.xx => Ok(AddOutcome::Skipped),
        None => {
            m.insert(member.to_vec(), score);
            Ok(AddOutcome::Added(score))
        }
    }
}

fn norm_range(len: usize, start: i64, stop: i64) -> Option<(usize, usize)> {
    let n = len as i64;
    let s = if start < 0 { (start + n).max(0) } else { start };
    let e = if stop < 0 { stop + n } else { stop };
    if s > e || s >= n || e < 0 {
        None
    } else {
        Some((s as usize, e.min(n - 1) as usize))
    }
}

fn in_lex(r: &LexRange<'_>, m: &[u8]) -> bool {
    let lo = match r.min {
        LexBound::Min => true,
        LexBound::Max => false,
        LexBound::Inclusive(b) => m >= b,
        LexBound::Exclusive(b) => m > b,
    };
    let hi = match r.max {
        LexBound::Min => false,
        LexBound::Max => true,
        LexBound::Inclusive(b) => m <= b,
        LexBound::Exclusive(b) => m < b,
    };
    lo && hi
}

fn in_score(r: &ScoreRange, s: f64) -> bool {
    (if r.min_exclusive { s > r.min } else { s >= r.min }) && (if r.max_exclusive { s < r.max } else { s <= r.max })
}

fn apply(z: &mut ZSet, m: &mut Model, op: &Op) {
    match op {
        Op::Add(mem, s, f) => {
            assert_eq!(z.add(mem, *s, *f), model_add(m, mem, *s, *f), "add {mem:?} {s} {f:?}");
        }
        Op::Remove(mem) => assert_eq!(z.remove(mem), m.remove(mem)),
        Op::RemRank(a, b) => {
            let v = sorted(m);
            let want = match norm_range(v.len(), *a, *b) {
                Some((s, e)) => {
                    for (k, _) in &v[s..=e] {
                        m.remove(k);
                    }
                    e - s + 1
                }
                None => 0,
            };
            assert_eq!(z.remove_range_by_rank(*a, *b), want);
        }
        Op::RemScore(r) => {
            let before = m.len();
            m.retain(|_, s| !in_score(r, *s));
            assert_eq!(z.remove_range_by_score(r), before - m.len());
        }
        Op::RemLex(a, b) => {
            let r = LexRange::parse(a, b).unwrap();
            let all_same = m.values().all(|&s| s == 0.0);
            let got = z.remove_range_by_lex(&r);
            if all_same {
                let before = m.len();
                m.retain(|k, _| !in_lex(&r, k));
                assert_eq!(got, before - m.len());
            } else {
                // Mixed scores: Redis leaves the result undefined; resync
                // the model with what was removed.
                m.retain(|k, _| z.score(k).is_some());
            }
        }
        Op::PopMin(n) => {
            let v = sorted(m);
            let want: Vec<(Vec<u8>, f64)> = v.into_iter().take(*n).collect();
            for (k, _) in &want {
                m.remove(k);
            }
            assert_eq!(z.pop_min(*n), want);
        }
        Op::PopMax(n) => {
            let v = sorted(m);
            let want: Vec<(Vec<u8>, f64)> = v.into_iter().rev().take(*n).collect();
            for (k, _) in &want {
                m.remove(k);
            }
            assert_eq!(z.pop_max(*n), want);
        }
    }
}

fn check_view(v: ZView<'_>, m: &Model) {
    let want = sorted(m);
    let own = |it: zset::ZRange<'_>| -> Vec<(Vec<u8>, f64)> { it.map(|(m, s)| (m.to_vec(), s)).collect() };
    assert_eq!(v.len(), m.len());
    assert_eq!(own(v.iter()), want);
    for (k, (mem, s)) in want.iter().enumerate() {
        assert_eq!(v.score(mem), Some(*s));
        assert_eq!(v.rank(mem, false), Some(k));
        assert_eq!(v.rank(mem, true), Some(want.len() - 1 - k));
    }
    assert_eq!(v.score(b"nope"), None);
    assert_eq!(v.rank(b"nope", false), None);
    let n = want.len() as i64;
    let rev: Vec<(Vec<u8>, f64)> = want.iter().rev().cloned().collect();
    for (a, b) in [(0, -1), (1, 2), (-2, -1), (n / 2, n), (3, 1), (-100, 100)] {
        let fwd = match norm_range(want.len(), a, b) {
            Some((s, e)) => want[s..=e].to_vec(),
            None => vec![],
        };
        assert_eq!(own(v.range_by_rank(a, b, false)), fwd, "rank {a} {b}");
        let back = match norm_range(want.len(), a, b) {
            Some((s, e)) => rev[s..=e].to_vec(),
            None => vec![],
        };
        assert_eq!(own(v.range_by_rank(a, b, true)), back, "revrank {a} {b}");
    }
    let limits = [(0i64, -1i64), (1, 2), (0, 0), (-1, 3), (2, -1), (10, 1)];
    for (lo, hi) in [(0, 8), (1, 6), (3, 3), (6, 2), (2, 5)] {
        for (ea, eb) in [(false, false), (true, false), (false, true), (true, true)] {
            let r = ScoreRange {
                min: zset::normalize(SCORES[lo]),
                min_exclusive: ea,
                max: zset::normalize(SCORES[hi]),
                max_exclusive: eb,
            };
            let inr: Vec<(Vec<u8>, f64)> = want.iter().filter(|p| in_score(&r, p.1)).cloned().collect();
            assert_eq!(v.count_in(&r), inr.len());
            for rev in [false, true] {
                for (off, cnt) in limits {
                    let mut w = inr.clone();
                    if rev {
                        w.reverse();
                    }
                    let w: Vec<_> = if off < 0 {
                        vec![]
                    } else {
                        w.into_iter().skip(off as usize).take(if cnt < 0 { usize::MAX } else { cnt as usize }).collect()
                    };
                    assert_eq!(own(v.range_by_score(&r, rev, off, cnt)), w, "{r:?} {rev} {off} {cnt}");
                }
            }
        }
    }
    if m.values().all(|&s| s == 0.0) {
        for (a, b) in [("-", "+"), ("[a", "[c"), ("(a", "(c"), ("[b", "+"), ("-", "(b"), ("[c", "[a"), ("+", "-")] {
            let r = LexRange::parse(a.as_bytes(), b.as_bytes()).unwrap();
            let inr: Vec<(Vec<u8>, f64)> = want.iter().filter(|p| in_lex(&r, &p.0)).cloned().collect();
            assert_eq!(v.lex_count(&r), inr.len());
            for rev in [false, true] {
                for (off, cnt) in limits {
                    let mut w = inr.clone();
                    if rev {
                        w.reverse();
                    }
                    let w: Vec<_> = if off < 0 {
                        vec![]
                    } else {
                        w.into_iter().skip(off as usize).take(if cnt < 0 { usize::MAX } else { cnt as usize }).collect()
                    };
                    assert_eq!(own(v.range_by_lex(&r, rev, off, cnt)), w);
                }
            }
        }
    }
}

fn check(z: &ZSet, m: &Model, t: &Thresholds) {
    check_view(z.view(), m);
    if let Some(p) = z.packed() {
        check_view(ZView::packed(p), m);
        let back = ZSet::from_packed(p.to_vec(), t).unwrap();
        check_view(back.view(), m);
    }
    let mut enc = Vec::new();
    z.encode(&mut enc);
    let d = ZSet::decode(&enc, t).unwrap();
    check_view(d.view(), m);
    check_view(z.duplicate().view(), m);
    // Random members.
    let mut x = 0x1234_5678_9ABC_DEF1u64 ^ m.len() as u64;
    let mut rng = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for count in [-5i64, 0, 1, 2, 3, 100] {
        let got = z.random_members(count, &mut rng);
        let expect_len = if m.is_empty() {
            0
        } else if count < 0 {
            count.unsigned_abs() as usize
        } else {
            (count as usize).min(m.len())
        };
        assert_eq!(got.len(), expect_len, "randmember {count}");
        for (k, s) in &got {
            assert_eq!(m.get(k), Some(s));
        }
        if count > 0 {
            let distinct: HashSet<&Vec<u8>> = got.iter().map(|p| &p.0).collect();
            assert_eq!(distinct.len(), got.len());
        }
    }
    // A full scan sees every member.
    let mut seen = HashSet::new();
    let mut cursor = 0;
    // Bounded: a scan returns at least one member per call.
    for _ in 0..=m.len() + 1 {
        cursor = z.scan(cursor, 2, &mut |k, s| {
            assert_eq!(m.get(k), Some(&s));
            seen.insert(k.to_vec());
        });
        if cursor == 0 {
            break;
        }
    }
    assert_eq!(cursor, 0);
    assert_eq!(seen.len(), m.len());
    assert!(z.mem_bytes() > 0);
}

fn thresholds() -> impl Strategy<Value = Thresholds> {
    (prop_oneof![Just(0usize), Just(1), Just(2), Just(4), Just(128)], prop_oneof![Just(1usize), Just(3), Just(64)])
        .prop_map(|(e, v)| Thresholds {
            zset_max_listpack_entries: e,
            zset_max_listpack_value: v,
            ..Thresholds::default()
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn zset_matches_model(t in thresholds(), ops in prop::collection::vec(op(false), 1..60)) {
        let mut z = ZSet::new(&t);
        let mut m = Model::new();
        for op in &ops {
            apply(&mut z, &mut m, op);
            check(&z, &m, &t);
        }
    }

    #[test]
    fn zset_lex_matches_model(t in thresholds(), ops in prop::collection::vec(op(true), 1..60)) {
        let mut z = ZSet::new(&t);
        let mut m = Model::new();
        for op in &ops {
            apply(&mut z, &mut m, op);
            check(&z, &m, &t);
        }
    }

    #[test]
    fn algebra_matches_model(
        t in thresholds(),
        a in prop::collection::btree_map(member(), score(), 0..12),
        b in prop::collection::btree_map(member(), score(), 0..12),
        wa in prop_oneof![Just(1.0f64), Just(2.0), Just(0.0), Just(-1.0)],
        agg in prop_oneof![Just(Aggregate::Sum), Just(Aggregate::Min), Just(Aggregate::Max)],
    ) {
        let za = ZSet::from_pairs(a.iter().map(|(k, &s)| (k.as_slice(), s)), &t);
        let zb = ZSet::from_pairs(b.iter().map(|(k, &s)| (k.as_slice(), s)), &t);
        let inputs: [&dyn zset::Scored; 2] = [&za, &zb];
        let w = [wa, 1.0];
        let weighted = |w: f64, s: f64| { let v = w * s; if v.is_nan() { 0.0 } else { v } };
        let combine = |x: f64, y: f64| match agg {
            Aggregate::Sum => { let v = x + y; if v.is_nan() { 0.0 } else { v } }
            Aggregate::Min => x.min(y),
            Aggregate::Max => x.max(y),
        };
        let norm = |s: f64| if s == 0.0 { 0.0 } else { s };
        // Inputs in size order, as Redis (and zset::union) visit them.
        let (first, second) = if zb.len() < za.len() { (1, 0) } else { (0, 1) };
        let maps = [&a, &b];
        let mut u = Model::new();
        for &i in &[first, second] {
            for (k, &s) in maps[i] {
                let v = weighted(w[i], norm(s));
                let e = u.entry(k.clone()).or_insert(f64::NAN);
                *e = if e.is_nan() { v } else { combine(*e, v) };
            }
        }
        let got = zset::union(&inputs, &w, agg, &t);
        prop_assert_eq!(pairs_of(&got), sorted(&u.iter().map(|(k, &s)| (k.clone(), norm(s))).collect()));
        let mut i = Model::new();
        for (k, &s) in maps[first] {
            if let Some(&s2) = maps[second].get(k) {
                // The later input's NaN is aggregated as is (Redis).
                i.insert(k.clone(), norm(combine(weighted(w[first], norm(s)), w[second] * norm(s2))));
            }
        }
        let got = zset::inter(&inputs, &w, agg, &t);
        prop_assert_eq!(pairs_of(&got), sorted(&i));
        let d: Model = a.iter().filter(|(k, _)| !b.contains_key(*k)).map(|(k, &s)| (k.clone(), norm(s))).collect();
        prop_assert_eq!(pairs_of(&zset::diff(&inputs, &t)), sorted(&d));
    }

    #[test]
    fn decode_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..80)) {
        let t = Thresholds::default();
        let _ = ZSet::decode(&bytes, &t);
        let _ = ZSet::from_packed(bytes.clone(), &t);
        let v = ZView::packed(&bytes);
        let _ = v.len();
        let _ = v.iter().count();
        let _ = v.score(b"a");
        let _ = v.rank(b"a", true);
        let _ = v.count_in(&ScoreRange::ALL);
        let _ = v.range_by_rank(0, -1, true).count();
        let _ = v.at(3);
    }
}

fn pairs_of(z: &ZSet) -> Vec<(Vec<u8>, f64)> {
    z.iter().map(|(m, s)| (m.to_vec(), s)).collect()
}

#[test]
fn zadd_flag_errors_are_redis_texts() {
    let f = |nx, xx, gt, lt, incr| AddFlags { nx, xx, gt, lt, incr };
    assert_eq!(f(true, true, false, false, false).check(1), Err(zset::ERR_XX_NX));
    assert_eq!(f(true, false, true, false, false).check(1), Err(zset::ERR_GT_LT_NX));
    assert_eq!(f(false, false, true, true, false).check(1), Err(zset::ERR_GT_LT_NX));
    assert_eq!(f(false, false, false, false, true).check(2), Err(zset::ERR_INCR_PAIRS));
    assert_eq!(f(false, true, true, false, true).check(1), Ok(()));
    let mut z = ZSet::new(&Thresholds::default());
    let incr = f(false, false, false, false, true);
    assert_eq!(z.add(b"a", f64::INFINITY, incr), Ok(AddOutcome::Added(f64::INFINITY)));
    assert_eq!(z.add(b"a", f64::NEG_INFINITY, incr), Err(zset::ERR_NAN));
}
