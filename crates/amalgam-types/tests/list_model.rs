//! Model test: `List` against a `VecDeque<Vec<u8>>` implementing Redis's
//! rules directly, with thresholds small enough that conversions and
//! chunk splits/merges happen mid-sequence. Every query is checked after
//! every operation, and the snapshot and packed forms round-trip.

use std::collections::VecDeque;

use amalgam_types::list::{self, List};
use amalgam_types::Thresholds;
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    PushBack(Vec<u8>),
    PushFront(Vec<u8>),
    PopFront(usize),
    PopBack(usize),
    Set(i64, Vec<u8>),
    Insert(bool, Vec<u8>, Vec<u8>),
    Remove(i64, Vec<u8>),
    Trim(i64, i64),
}

fn value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        8 => prop::collection::vec(b'a'..=b'c', 0..3),
        1 => (0usize..300).prop_map(|n| vec![b'x'; n]),
        1 => (1000usize..5000).prop_map(|n| vec![b'y'; n]),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => value().prop_map(Op::PushBack),
        6 => value().prop_map(Op::PushFront),
        2 => (0usize..4).prop_map(Op::PopFront),
        2 => (0usize..4).prop_map(Op::PopBack),
        2 => (-12i64..12, value()).prop_map(|(i, v)| Op::Set(i, v)),
        2 => (any::<bool>(), value(), value()).prop_map(|(b, p, v)| Op::Insert(b, p, v)),
        2 => (-3i64..4, value()).prop_map(|(c, v)| Op::Remove(c, v)),
        1 => (-15i64..15, -15i64..15).prop_map(|(a, b)| Op::Trim(a, b)),
    ]
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

fn norm_index(len: usize, i: i64) -> Option<usize> {
    let i = if i < 0 { i + len as i64 } else { i };
    (0..len as i64).contains(&i).then_some(i as usize)
}

fn apply(l: &mut List, m: &mut VecDeque<Vec<u8>>, op: &Op) {
    match op {
        Op::PushBack(v) => {
            l.push_back(v);
            m.push_back(v.clone());
        }
        Op::PushFront(v) => {
            l.push_front(v);
            m.push_front(v.clone());
        }
        Op::PopFront(n) => {
            let want: Vec<Vec<u8>> = (0..*n).map_while(|_| m.pop_front()).collect();
            assert_eq!(l.pop_front(*n), want);
        }
        Op::PopBack(n) => {
            let want: Vec<Vec<u8>> = (0..*n).map_while(|_| m.pop_back()).collect();
            assert_eq!(l.pop_back(*n), want);
        }
        Op::Set(i, v) => {
            let r = l.set(*i, v);
            match norm_index(m.len(), *i) {
                Some(i) => {
                    assert_eq!(r, Ok(()));
                    m[i] = v.clone();
                }
                None => assert_eq!(r, Err(list::ERR_INDEX_OUT_OF_RANGE)),
            }
        }
        Op::Insert(before, pivot, v) => {
            let r = l.insert(*before, pivot, v);
            match m.iter().position(|e| e == pivot) {
                Some(at) => {
                    m.insert(if *before { at } else { at + 1 }, v.clone());
                    assert_eq!(r, Some(m.len()));
                }
                None => assert_eq!(r, None),
            }
        }
        Op::Remove(count, v) => {
            let limit = if *count == 0 { usize::MAX } else { count.unsigned_abs() as usize };
            let mut hits: Vec<usize> = m.iter().enumerate().filter(|(_, e)| *e == v).map(|(i, _)| i).collect();
            if *count < 0 {
                hits.reverse();
            }
            hits.truncate(limit);
            hits.sort_unstable();
            for &i in hits.iter().rev() {
                m.remove(i);
            }
            assert_eq!(l.remove(*count, v), hits.len());
        }
        Op::Trim(a, b) => {
            l.trim(*a, *b);
            match norm_range(m.len(), *a, *b) {
                Some((s, e)) => {
                    m.truncate(e + 1);
                    m.drain(..s);
                }
                None => m.clear(),
            }
        }
    }
}

fn lpos_model(m: &VecDeque<Vec<u8>>, v: &[u8], rank: i64, count: usize, maxlen: usize) -> Vec<usize> {
    let maxlen = if maxlen == 0 { m.len() } else { maxlen.min(m.len()) };
    let idx: Vec<usize> = if rank > 0 { (0..maxlen).collect() } else { (0..maxlen).map(|k| m.len() - 1 - k).collect() };
    let hits = idx.into_iter().filter(|&i| m[i] == v).skip(rank.unsigned_abs() as usize - 1);
    if count == 0 {
        hits.collect()
    } else {
        hits.take(count).collect()
    }
}

fn check(l: &List, m: &VecDeque<Vec<u8>>, t: &Thresholds) {
    assert_eq!(l.len(), m.len());
    let all: Vec<&[u8]> = l.iter().collect();
    let want: Vec<&[u8]> = m.iter().map(Vec::as_slice).collect();
    assert_eq!(all, want);
    let n = m.len() as i64;
    for i in [-n - 1, -n, -1, 0, 1, n / 2, n - 1, n] {
        assert_eq!(l.index(i), norm_index(m.len(), i).map(|i| m[i].as_slice()), "index {i}");
    }
    for (a, b) in [(0, -1), (1, -2), (-3, -1), (n / 3, n / 2), (2, 1), (-100, 100)] {
        let got: Vec<&[u8]> = l.range(a, b).collect();
        let want: Vec<&[u8]> = match norm_range(m.len(), a, b) {
            Some((s, e)) => m.range(s..=e).map(Vec::as_slice).collect(),
            None => vec![],
        };
        assert_eq!(got, want, "range {a} {b}");
        if let Some(p) = l.packed() {
            assert_eq!(list::packed_range(p, a, b).collect::<Vec<_>>(), want);
        }
    }
    for v in [&b"a"[..], b"", b"ab"] {
        for (rank, count, maxlen) in [(1, 0, 0), (-1, 0, 0), (2, 1, 0), (-2, 2, 3), (1, 1, 2)] {
            let want = lpos_model(m, v, rank, count, maxlen);
            assert_eq!(l.position(v, rank, count, maxlen), want, "lpos {v:?} {rank} {count} {maxlen}");
            if let Some(p) = l.packed() {
                assert_eq!(list::packed_position(p, v, rank, count, maxlen), want);
            }
        }
    }
    if let Some(p) = l.packed() {
        assert_eq!(list::packed_len(p), Ok(m.len()));
        assert_eq!(list::packed_index(p, -1), m.back().map(Vec::as_slice));
        let back = List::from_packed(p.to_vec(), t).unwrap();
        assert_eq!(back.iter().collect::<Vec<_>>(), want);
    }
    let mut enc = Vec::new();
    l.encode(&mut enc);
    let d = List::decode(&enc, t).unwrap();
    assert_eq!(d.iter().collect::<Vec<_>>(), want);
    let payload: usize = m.iter().map(Vec::len).sum();
    assert!(l.mem_bytes() >= payload);
}

fn thresholds() -> impl Strategy<Value = Thresholds> {
    prop_oneof![Just(1i64), Just(2), Just(3), Just(5), Just(-1), Just(-2), Just(-5)]
        .prop_map(|n| Thresholds { list_max_listpack_size: n, ..Thresholds::default() })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn list_matches_model(t in thresholds(), ops in prop::collection::vec(op(), 1..120)) {
        let mut l = List::new(&t);
        let mut m = VecDeque::new();
        for op in &ops {
            apply(&mut l, &mut m, op);
            check(&l, &m, &t);
        }
    }

    #[test]
    fn decode_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        let t = Thresholds::default();
        let _ = List::decode(&bytes, &t);
        let _ = List::from_packed(bytes.clone(), &t);
        let _ = list::packed_range(&bytes, 0, -1).count();
        let _ = list::packed_index(&bytes, -1);
        let _ = list::packed_position(&bytes, b"a", -1, 0, 0);
    }
}

#[test]
fn queue_and_stack_patterns_stay_consistent() {
    // Many items through one end and out the other, and back pops after
    // front pushes: the paths the head offset and tail cache serve.
    let t = Thresholds::default();
    let mut l = List::new(&t);
    let mut m = VecDeque::new();
    for i in 0..20_000u32 {
        let v = i.to_le_bytes().repeat(1 + (i % 7) as usize);
        if i % 3 == 0 {
            l.push_front(&v);
            m.push_front(v);
        } else {
            l.push_back(&v);
            m.push_back(v);
        }
        if i % 5 == 0 {
            assert_eq!(l.pop_front(1), m.pop_front().into_iter().collect::<Vec<_>>());
        }
        if i % 7 == 0 {
            assert_eq!(l.pop_back(1), m.pop_back().into_iter().collect::<Vec<_>>());
        }
    }
    check(&l, &m, &t);
    // Drain from the back entirely.
    while let Some(v) = m.pop_back() {
        assert_eq!(l.pop_back(1), vec![v]);
    }
    assert!(l.is_empty());
}
