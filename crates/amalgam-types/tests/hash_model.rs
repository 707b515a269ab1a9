//! Model-based tests of `Hash` against a `BTreeMap`: random operation
//! sequences with tiny and default thresholds (so the compact → large
//! conversion happens mid-sequence), every query checked after every
//! operation, the borrowed compact readers and the snapshot encoding
//! checked against the same model, HSCAN's guarantee under churn, and
//! decode fed garbage.

use amalgam_types::hash::{self, Hash, HashError};
use amalgam_types::Thresholds;
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Fields the operations draw from: short ones and a long one (which
/// forces the large form under tiny thresholds).
fn field(i: u8) -> Vec<u8> {
    if i == 19 {
        b"a-field-name-longer-than-tiny-limits".to_vec()
    } else {
        format!("f{i}").into_bytes()
    }
}

#[derive(Clone, Debug)]
enum Op {
    Insert(u8, Vec<u8>),
    Remove(u8),
    IncrBy(u8, i64),
    IncrByFloat(u8, &'static str),
    Random(i64),
    Snapshot,
}

fn op() -> impl Strategy<Value = Op> {
    let value = prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..12),
        (-50i64..50).prop_map(|v| v.to_string().into_bytes()),
        Just(b"9223372036854775807".to_vec()),
        Just(b"01".to_vec()),
        Just(b"2.5".to_vec()),
    ];
    prop_oneof![
        4 => (0u8..20, value).prop_map(|(f, v)| Op::Insert(f, v)),
        2 => (0u8..20).prop_map(Op::Remove),
        1 => (0u8..20, prop_oneof![-5i64..5, Just(i64::MAX), Just(i64::MIN)]).prop_map(|(f, d)| Op::IncrBy(f, d)),
        1 => (0u8..20, prop_oneof![Just("0.5"), Just("-1"), Just("abc"), Just("inf"), Just("1e3")])
            .prop_map(|(f, d)| Op::IncrByFloat(f, d)),
        1 => (-8i64..8).prop_map(Op::Random),
        1 => Just(Op::Snapshot),
    ]
}

fn thresholds() -> impl Strategy<Value = Thresholds> {
    prop_oneof![
        Just(Thresholds::default()),
        (0usize..6, 0usize..10).prop_map(|(entries, value)| Thresholds {
            hash_max_listpack_entries: entries,
            hash_max_listpack_value: value,
            ..Thresholds::default()
        }),
    ]
}

/// string2ll, written independently of the crate's: the canonical
/// decimal form of an i64.
fn model_int(v: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(v).ok()?;
    let n: i64 = s.parse().ok()?;
    (n.to_string() == s).then_some(n)
}

fn check(h: &Hash, m: &Model, th: &Thresholds, was_large: &mut bool) {
    assert_eq!(h.len(), m.len());
    assert_eq!(h.is_empty(), m.is_empty());
    for i in 0..20 {
        let f = field(i);
        assert_eq!(h.get(&f), m.get(&f).map(Vec::as_slice), "get {f:?}");
        assert_eq!(h.contains(&f), m.contains_key(&f));
    }
    let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = h.iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect();
    pairs.sort();
    assert_eq!(pairs, m.iter().map(|(f, v)| (f.clone(), v.clone())).collect::<Vec<_>>());
    // Forms: compact only within the thresholds; never back once large.
    match h.encoding() {
        "listpack" => {
            assert!(!*was_large, "converted back");
            assert!(m.len() <= th.hash_max_listpack_entries);
            assert!(m
                .iter()
                .all(|(f, v)| f.len() <= th.hash_max_listpack_value && v.len() <= th.hash_max_listpack_value));
            let p = h.packed().expect("compact bytes");
            assert_eq!(hash::packed_len(p), m.len());
            for (f, v) in m {
                assert_eq!(hash::packed_get(p, f), Some(v.as_slice()));
            }
            let mut borrowed: Vec<(Vec<u8>, Vec<u8>)> =
                hash::packed_iter(p).map(|(f, v)| (f.to_vec(), v.to_vec())).collect();
            borrowed.sort();
            assert_eq!(borrowed, pairs);
            let back = Hash::from_packed(p).unwrap();
            assert_eq!(back.len(), m.len());
            assert!(h.mem_bytes() >= p.len());
        }
        "hashtable" => {
            *was_large = true;
            assert!(h.packed().is_none());
        }
        other => panic!("encoding {other}"),
    }
    // Full HSCAN visits exactly the fields (no mutation in between).
    let mut seen = BTreeSet::new();
    let mut cursor = 0;
    for step in 0.. {
        cursor = h.scan(cursor, 1 + step % 3, &mut |f, v| {
            assert_eq!(m.get(f).map(Vec::as_slice), Some(v));
            seen.insert(f.to_vec());
        });
        if cursor == 0 {
            break;
        }
        assert!(step < 10_000, "scan does not end");
    }
    assert_eq!(seen, m.keys().cloned().collect());
}

fn round_trip(h: &Hash, m: &Model) {
    let mut enc = Vec::new();
    h.encode(&mut enc);
    let back = Hash::decode(&enc).expect("decode own encoding");
    assert_eq!(back.len(), m.len());
    assert_eq!(back.encoding(), h.encoding());
    for (f, v) in m {
        assert_eq!(back.get(f), Some(v.as_slice()));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn hash_matches_model(th in thresholds(), ops in proptest::collection::vec(op(), 1..120), seed in any::<u64>()) {
        let mut h = Hash::new();
        let mut m = Model::new();
        let mut was_large = false;
        let mut s = seed | 1;
        let mut rng = move || { s ^= s << 13; s ^= s >> 7; s ^= s << 17; s };
        for op in ops {
            match op {
                Op::Insert(f, v) => {
                    let f = field(f);
                    assert_eq!(h.insert(&f, &v, &th), m.insert(f, v).is_none());
                }
                Op::Remove(f) => {
                    let f = field(f);
                    assert_eq!(h.remove(&f), m.remove(&f).is_some());
                }
                Op::IncrBy(f, d) => {
                    let f = field(f);
                    let want = match m.get(&f) {
                        None => Ok(d),
                        Some(v) => match model_int(v) {
                            None => Err(HashError::NotAnInteger),
                            Some(cur) => cur.checked_add(d).ok_or(HashError::Overflow),
                        },
                    };
                    assert_eq!(h.incr_by(&f, d, &th), want);
                    if let Ok(n) = want {
                        m.insert(f, n.to_string().into_bytes());
                    }
                }
                Op::IncrByFloat(f, d) => {
                    let f = field(f);
                    match h.incr_by_float(&f, d.as_bytes(), &th) {
                        Ok(v) => {
                            // Integers and halves are exact in any precision.
                            if let Some(cur) = m.get(&f).and_then(|c| model_int(c)) {
                                if d == "0.5" && cur.unsigned_abs() < 1 << 40 {
                                    assert_eq!(v, format!("{}", cur as f64 + 0.5).into_bytes());
                                }
                            }
                            m.insert(f, v);
                        }
                        Err(e) => {
                            let cur = m.get(&f);
                            match d {
                                "abc" => assert_eq!(e, HashError::IncrNotAFloat),
                                "inf" => assert_eq!(e, HashError::IncrNanOrInfinity),
                                _ => assert!(cur.is_some() && e == HashError::NotAFloat, "{e:?} on {cur:?}"),
                            }
                        }
                    }
                }
                Op::Random(count) => {
                    let mut got = Vec::new();
                    h.random_fields(count, &mut rng, &mut |f, v| {
                        assert_eq!(m.get(f).map(Vec::as_slice), Some(v));
                        got.push(f.to_vec());
                    });
                    let want = if count >= 0 { (count as usize).min(m.len()) }
                        else if m.is_empty() { 0 } else { count.unsigned_abs() as usize };
                    assert_eq!(got.len(), want);
                    if count > 0 {
                        let distinct: BTreeSet<_> = got.iter().collect();
                        assert_eq!(distinct.len(), want, "distinct");
                    }
                }
                Op::Snapshot => round_trip(&h, &m),
            }
            check(&h, &m, &th, &mut was_large);
        }
        round_trip(&h, &m);
    }

    /// HSCAN's guarantee: fields present from the first call to the last
    /// are returned, whatever else is added and removed in between.
    #[test]
    fn scan_survives_churn(seed in any::<u64>(), n in 20usize..400, count in 4usize..20) {
        const CHURN_MAX: usize = 50;
        let mut live_churn: Vec<u64> = Vec::new();
        let th = Thresholds { hash_max_listpack_entries: 8, ..Thresholds::default() };
        let mut s = seed | 1;
        let mut rng = move || { s ^= s << 13; s ^= s >> 7; s ^= s << 17; s };
        let mut h = Hash::new();
        for i in 0..n {
            h.insert(format!("stable{i}").as_bytes(), b"v", &th);
        }
        let mut seen = BTreeSet::new();
        let mut cursor = 0;
        let mut next = 0u64;
        for _ in 0..100_000 {
            cursor = h.scan(cursor, count, &mut |f, _| { seen.insert(f.to_vec()); });
            // Churn, one write per call: new fields (at most CHURN_MAX
            // live, so the hash stays bounded), removal of churn fields,
            // same-length value rewrites of stable fields (in place) and
            // other-length ones (moved to the end).
            match rng() % 4 {
                0 if live_churn.len() < CHURN_MAX => {
                    h.insert(format!("churn{next}").as_bytes(), b"x", &th);
                    live_churn.push(next);
                    next += 1;
                }
                0 | 1 => {
                    if !live_churn.is_empty() {
                        let k = live_churn.swap_remove((rng() % live_churn.len() as u64) as usize);
                        let removed = h.remove(format!("churn{k}").as_bytes());
                        prop_assert!(removed);
                    }
                }
                2 => { h.insert(format!("stable{}", rng() % n as u64).as_bytes(), b"w", &th); }
                _ => { h.insert(format!("stable{}", rng() % n as u64).as_bytes(), b"rewritten", &th); }
            }
            if cursor == 0 { break; }
        }
        prop_assert_eq!(cursor, 0);
        for i in 0..n {
            prop_assert!(seen.contains(format!("stable{i}").as_bytes()), "stable{} missed", i);
        }
    }

    #[test]
    fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        let _ = Hash::decode(&bytes);
        let _ = Hash::from_packed(&bytes);
        let _ = hash::packed_get(&bytes, b"f1");
        let _ = hash::packed_iter(&bytes).count();
    }

    #[test]
    fn decode_of_damaged_encodings(flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..4), large in any::<bool>()) {
        let th = if large { Thresholds { hash_max_listpack_entries: 1, ..Thresholds::default() } } else { Thresholds::default() };
        let mut h = Hash::new();
        for i in 0..6 {
            h.insert(field(i).as_slice(), format!("v{i}").as_bytes(), &th);
        }
        let mut enc = Vec::new();
        h.encode(&mut enc);
        for (at, x) in flips {
            let i = at % enc.len();
            enc[i] ^= x;
        }
        if let Ok(d) = Hash::decode(&enc) {
            // Whatever decodes is a consistent hash.
            let n = d.iter().count();
            prop_assert_eq!(n, d.len());
        }
    }
}
