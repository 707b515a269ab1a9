//! Model-based tests of `Set` against a `BTreeSet`: random operation
//! sequences over integer, integer-looking and string members with tiny
//! and default thresholds (intset → listpack → hashtable conversions
//! mid-sequence), every query checked after every operation, the
//! borrowed compact readers, snapshots, SPOP/SRANDMEMBER rules, the
//! multi-set algebra against BTreeSet's, SSCAN under churn, and decode
//! fed garbage.

use amalgam_types::set::{self, Member, Set};
use amalgam_types::Thresholds;
use proptest::prelude::*;
use std::collections::BTreeSet;

type Model = BTreeSet<Vec<u8>>;

/// The member universe: integers (small, wide, extreme), strings that
/// look like integers but are not canonical, short and long strings.
fn member(i: u8) -> Vec<u8> {
    match i {
        0..=11 => (i as i64 - 3).to_string().into_bytes(),
        12 => b"70000".to_vec(),
        13 => b"-3000000000".to_vec(),
        14 => i64::MIN.to_string().into_bytes(),
        15 => i64::MAX.to_string().into_bytes(),
        16 => b"01".to_vec(),
        17 => b"+1".to_vec(),
        18 => b"-0".to_vec(),
        19 => b"".to_vec(),
        20..=27 => vec![b'a' + (i - 20)],
        _ => b"a-member-longer-than-tiny-limits".to_vec(),
    }
}
const MEMBERS: u8 = 29;

fn model_int(v: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(v).ok()?;
    let n: i64 = s.parse().ok()?;
    (n.to_string() == s).then_some(n)
}

#[derive(Clone, Debug)]
enum Op {
    Insert(u8),
    Remove(u8),
    Pop(usize),
    Random(i64),
    Snapshot,
}

fn op(ints_only: bool) -> impl Strategy<Value = Op> {
    let m = if ints_only { 0u8..16 } else { 0u8..MEMBERS };
    prop_oneof![
        5 => m.clone().prop_map(Op::Insert),
        2 => m.prop_map(Op::Remove),
        1 => (0usize..4).prop_map(Op::Pop),
        1 => (-6i64..6).prop_map(Op::Random),
        1 => Just(Op::Snapshot),
    ]
}

fn thresholds() -> impl Strategy<Value = Thresholds> {
    prop_oneof![
        Just(Thresholds::default()),
        (0usize..6, 0usize..6, 0usize..8).prop_map(|(ints, entries, value)| Thresholds {
            set_max_intset_entries: ints,
            set_max_listpack_entries: entries,
            set_max_listpack_value: value,
            ..Thresholds::default()
        }),
    ]
}

fn members_of(s: &Set) -> Model {
    let v: Vec<Vec<u8>> = s.iter().map(|m| m.to_vec()).collect();
    let set: Model = v.iter().cloned().collect();
    assert_eq!(set.len(), v.len(), "iteration repeats a member");
    set
}

fn check(s: &Set, m: &Model, th: &Thresholds, was: &mut u8) {
    assert_eq!(s.len(), m.len());
    for i in 0..MEMBERS {
        let x = member(i);
        assert_eq!(s.contains(&x), m.contains(&x), "contains {x:?}");
    }
    assert_eq!(&members_of(s), m);
    // Forms only move forward: intset (0) → listpack (1) → hashtable (2).
    let rank = match s.encoding() {
        "intset" => {
            assert!(m.iter().all(|x| model_int(x).is_some()));
            assert!(m.len() <= th.set_max_intset_entries);
            assert!(s.iter().all(|x| matches!(x, Member::Int(_))));
            let ints: Vec<i64> = s.iter().map(|x| x.as_i64().unwrap()).collect();
            assert!(ints.windows(2).all(|w| w[0] < w[1]), "intset ascending");
            0
        }
        "listpack" => {
            assert!(m.len() <= th.set_max_listpack_entries);
            assert!(m.iter().all(|x| x.len() <= th.set_max_listpack_value));
            1
        }
        "hashtable" => 2,
        other => panic!("encoding {other}"),
    };
    assert!(rank >= *was, "converted back");
    *was = rank;
    match s.packed() {
        Some(p) => {
            assert!(rank < 2);
            assert_eq!(set::packed_len(p), m.len());
            for i in 0..MEMBERS {
                let x = member(i);
                assert_eq!(set::packed_contains(p, &x), m.contains(&x));
            }
            let borrowed: Model = set::packed_iter(p).map(|x| x.to_vec()).collect();
            assert_eq!(&borrowed, m);
            assert_eq!(Set::from_packed(p).unwrap().len(), m.len());
        }
        None => assert_eq!(rank, 2),
    }
    let mut seen = Model::new();
    let mut cursor = 0;
    for step in 0.. {
        cursor = s.scan(cursor, 1 + step % 4, &mut |x| {
            seen.insert(x.to_vec());
        });
        if cursor == 0 {
            break;
        }
        assert!(step < 10_000);
    }
    assert_eq!(&seen, m);
}

fn round_trip(s: &Set, m: &Model) {
    let mut enc = Vec::new();
    s.encode(&mut enc);
    let back = Set::decode(&enc).expect("decode own encoding");
    assert_eq!(&members_of(&back), m);
    assert_eq!(back.encoding(), s.encoding());
}

fn build(members: &[u8], th: &Thresholds) -> (Set, Model) {
    let mut s = Set::new();
    let mut m = Model::new();
    for &i in members {
        let x = member(i);
        assert_eq!(s.insert(&x, th), m.insert(x));
    }
    (s, m)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn set_matches_model(th in thresholds(), ints_only in any::<bool>(), seed in any::<u64>(),
                         ops in proptest::collection::vec(op(false), 1..120),
                         int_ops in proptest::collection::vec(op(true), 1..60)) {
        let ops = if ints_only { int_ops } else { ops };
        let mut s = Set::new();
        let mut m = Model::new();
        let mut was = 0u8;
        let mut r = seed | 1;
        let mut rng = move || { r ^= r << 13; r ^= r >> 7; r ^= r << 17; r };
        for op in ops {
            match op {
                Op::Insert(i) => {
                    let x = member(i);
                    assert_eq!(s.insert(&x, &th), m.insert(x));
                }
                Op::Remove(i) => {
                    let x = member(i);
                    assert_eq!(s.remove(&x), m.remove(&x));
                }
                Op::Pop(count) => {
                    let popped = s.pop_random(count, &mut rng);
                    assert_eq!(popped.len(), count.min(m.len()));
                    let distinct: Model = popped.iter().cloned().collect();
                    assert_eq!(distinct.len(), popped.len());
                    for x in &popped {
                        assert!(m.remove(x), "popped a non-member {x:?}");
                    }
                }
                Op::Random(count) => {
                    let mut got = Vec::new();
                    s.random_members(count, &mut rng, &mut |x| got.push(x.to_vec()));
                    let want = if count >= 0 { (count as usize).min(m.len()) }
                        else if m.is_empty() { 0 } else { count.unsigned_abs() as usize };
                    assert_eq!(got.len(), want);
                    assert!(got.iter().all(|x| m.contains(x)));
                    if count > 0 {
                        assert_eq!(got.iter().collect::<BTreeSet<_>>().len(), want);
                    }
                }
                Op::Snapshot => round_trip(&s, &m),
            }
            check(&s, &m, &th, &mut was);
        }
        round_trip(&s, &m);
    }

    #[test]
    fn algebra_matches_btreeset(th in thresholds(),
                                a in proptest::collection::vec(0u8..MEMBERS, 0..12),
                                b in proptest::collection::vec(0u8..MEMBERS, 0..12),
                                c in proptest::collection::vec(0u8..16, 0..12),
                                limit in 0usize..4) {
        let (sa, ma) = build(&a, &th);
        let (sb, mb) = build(&b, &th);
        let (sc, mc) = build(&c, &th);
        let sets = [&sa, &sb, &sc];
        let inter: Model = ma.iter().filter(|x| mb.contains(*x) && mc.contains(*x)).cloned().collect();
        let union: Model = ma.iter().chain(&mb).chain(&mc).cloned().collect();
        let diff: Model = ma.iter().filter(|x| !mb.contains(*x) && !mc.contains(*x)).cloned().collect();
        prop_assert_eq!(members_of(&set::inter(&sets, &th)), inter.clone());
        prop_assert_eq!(members_of(&set::union(&sets, &th)), union);
        prop_assert_eq!(members_of(&set::diff(&sets, &th)), diff);
        let card = if limit == 0 { inter.len() } else { inter.len().min(limit) };
        prop_assert_eq!(set::inter_card(&sets, limit), card);
        // Pairs too (SINTER a b, SDIFF b a).
        let ab: Model = ma.intersection(&mb).cloned().collect();
        prop_assert_eq!(members_of(&set::inter(&[&sa, &sb], &th)), ab);
        let ba: Model = mb.difference(&ma).cloned().collect();
        prop_assert_eq!(members_of(&set::diff(&[&sb, &sa], &th)), ba);
    }

    /// SSCAN's guarantee on both large forms under churn.
    #[test]
    fn scan_survives_churn(seed in any::<u64>(), n in 20usize..400, count in 3usize..20, strings in any::<bool>()) {
        const CHURN_MAX: usize = 50;
        let mut live_churn: Vec<u64> = Vec::new();
        let th = Thresholds { set_max_intset_entries: 8, set_max_listpack_entries: 8, ..Thresholds::default() };
        let name = |i: u64| if strings { format!("s{i}") } else { (i * 7919).to_string() };
        let mut r = seed | 1;
        let mut rng = move || { r ^= r << 13; r ^= r >> 7; r ^= r << 17; r };
        let mut s = Set::new();
        for i in 0..n as u64 {
            s.insert(name(2 * i).as_bytes(), &th);
        }
        let mut seen = Model::new();
        let mut cursor = 0;
        let mut next = 0u64;
        for _ in 0..100_000 {
            cursor = s.scan(cursor, count, &mut |x| { seen.insert(x.to_vec()); });
            // Churn on odd members only, one write per call, at most
            // CHURN_MAX live (bounded, so the scan ends).
            if rng() % 2 == 0 && live_churn.len() < CHURN_MAX {
                s.insert(name(2 * next + 1).as_bytes(), &th);
                live_churn.push(next);
                next += 1;
            } else if !live_churn.is_empty() {
                let k = live_churn.swap_remove((rng() % live_churn.len() as u64) as usize);
                let removed = s.remove(name(2 * k + 1).as_bytes());
                prop_assert!(removed);
            }
            if cursor == 0 { break; }
        }
        prop_assert_eq!(cursor, 0);
        for i in 0..n as u64 {
            prop_assert!(seen.contains(name(2 * i).as_bytes()), "{} missed", name(2 * i));
        }
    }

    #[test]
    fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        let _ = Set::decode(&bytes);
        let _ = Set::from_packed(&bytes);
        let _ = set::packed_contains(&bytes, b"1");
        let _ = set::packed_len(&bytes);
        let _ = set::packed_iter(&bytes).count();
    }

    #[test]
    fn decode_of_damaged_encodings(flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..4), form in 0u8..4) {
        let th = Thresholds { set_max_intset_entries: 4, set_max_listpack_entries: 4, ..Thresholds::default() };
        let members: Vec<u8> = match form { 0 => vec![0, 1, 2], 1 => vec![0, 20, 21], 2 => (0..10).collect(), _ => (20..28).collect() };
        let (s, _) = build(&members, &th);
        let mut enc = Vec::new();
        s.encode(&mut enc);
        for (at, x) in flips {
            let i = at % enc.len();
            enc[i] ^= x;
        }
        if let Ok(d) = Set::decode(&enc) {
            prop_assert_eq!(members_of(&d).len(), d.len());
        }
    }
}
