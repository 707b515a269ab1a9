//! Model-based tests of the log's ops (op.rs): random sequences of ops of
//! each kind, each one encoded, decoded and applied to a value that
//! starts empty — under tiny thresholds (so values convert to their large
//! form mid-sequence) and Redis's defaults — must leave the value equal
//! to a plain model (BTreeMap, VecDeque, BTreeSet, BTreeMap of scores)
//! after every op; an op the value cannot have logged (LSET past the end,
//! LINSERT without its pivot, a rotation of an empty list) is refused and
//! changes nothing. Also: `Op::decode` of arbitrary bytes never panics,
//! and what it accepts re-encodes to bytes that decode to the same op.

use amalgam_types::list::normalize_range;
use amalgam_types::op::Op;
use amalgam_types::stream::{StreamId, TrimTo};
use amalgam_types::value::Value;
use amalgam_types::{Corrupt, Kind, Thresholds};
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// Thresholds so small every kind converts after a few elements.
fn tiny() -> Thresholds {
    Thresholds {
        hash_max_listpack_entries: 3,
        hash_max_listpack_value: 8,
        set_max_intset_entries: 3,
        set_max_listpack_entries: 3,
        set_max_listpack_value: 8,
        zset_max_listpack_entries: 3,
        zset_max_listpack_value: 8,
        list_max_listpack_size: 3,
        hll_sparse_max_bytes: 30,
        stream_node_max_entries: 3,
        stream_node_max_bytes: 64,
    }
}

/// Elements from a small pool (integers for the intset, short and long
/// strings for the value-length thresholds), so removals hit.
fn elem() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        (0u8..12).prop_map(|i| i.to_string().into_bytes()),
        (0u8..12).prop_map(|i| format!("e{i}").into_bytes()),
        (0u8..3).prop_map(|i| format!("a-long-element-past-tiny-{i}").into_bytes()),
    ]
}

fn elems() -> impl Strategy<Value = Vec<Vec<u8>>> {
    prop::collection::vec(elem(), 0..6)
}

fn op_of(kind: Kind) -> BoxedStrategy<Op> {
    match kind {
        Kind::Hash => prop_oneof![
            3 => prop::collection::vec((elem(), elem()), 1..5).prop_map(Op::HSet),
            1 => elems().prop_map(Op::HDel),
        ]
        .boxed(),
        Kind::List => prop_oneof![
            4 => (any::<bool>(), prop::collection::vec(elem(), 1..6)).prop_map(|(left, items)| Op::Push { left, items }),
            2 => (any::<bool>(), 0u64..4).prop_map(|(left, count)| Op::Pop { left, count }),
            1 => (-8i64..8, elem()).prop_map(|(index, item)| Op::LSet { index, item }),
            1 => (any::<bool>(), elem(), elem()).prop_map(|(before, pivot, item)| Op::LInsert { before, pivot, item }),
            1 => (-3i64..4, elem()).prop_map(|(count, item)| Op::LRem { count, item }),
            1 => (-8i64..8, -8i64..8).prop_map(|(start, stop)| Op::LTrim { start, stop }),
            1 => (any::<bool>(), any::<bool>()).prop_map(|(from_left, to_left)| Op::LRotate { from_left, to_left }),
        ]
        .boxed(),
        Kind::Set => prop_oneof![3 => elems().prop_map(Op::SAdd), 1 => elems().prop_map(Op::SRem)].boxed(),
        Kind::ZSet => prop_oneof![
            3 => prop::collection::vec(
                (prop_oneof![(-20i32..20).prop_map(|s| f64::from(s) / 4.0), Just(f64::INFINITY), Just(-0.0)], elem()),
                1..5
            )
            .prop_map(Op::ZAdd),
            1 => elems().prop_map(Op::ZRem),
            1 => (-6i64..6, -6i64..6).prop_map(|(start, stop)| Op::ZRemRank { start, stop }),
        ]
        .boxed(),
        Kind::Stream => prop_oneof![
            6 => (sid(), prop::collection::vec((elem(), elem()), 0..4), trim()).prop_map(|(id, pairs, trim)| Op::XAdd { id, pairs, trim }),
            2 => prop::collection::vec(sid(), 0..4).prop_map(Op::XDel),
            1 => trim().prop_filter_map("a trim", |t| t).prop_map(Op::XTrim),
        ]
        .boxed(),
    }
}

/// A stream ID from a small range, so ops collide.
fn sid() -> impl Strategy<Value = StreamId> {
    (0u64..40, 0u64..3).prop_map(|(ms, seq)| StreamId::new(ms, seq))
}

fn trim() -> impl Strategy<Value = Option<TrimTo>> {
    prop_oneof![4 => Just(None), 1 => sid().prop_map(|id| Some(TrimTo::Below(id))), 1 => Just(Some(TrimTo::All))]
}

/// A stream entry's fields and values.
type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// The plain model of a collection.
#[derive(Clone, Debug, Default)]
struct Model {
    hash: BTreeMap<Vec<u8>, Vec<u8>>,
    list: VecDeque<Vec<u8>>,
    set: BTreeSet<Vec<u8>>,
    zset: BTreeMap<Vec<u8>, f64>,
    /// Stream: its entries in order and its last ID.
    stream: Vec<(StreamId, Pairs)>,
    stream_last: StreamId,
}

/// Redis's index normalization (negative from the end); None outside.
fn index(len: usize, i: i64) -> Option<usize> {
    let i = if i < 0 { len as i64 + i } else { i };
    (0..len as i64).contains(&i).then_some(i as usize)
}

impl Model {
    /// Applies `op` as its doc says; Err where the op cannot apply.
    fn apply(&mut self, op: &Op) -> Result<(), Corrupt> {
        match op {
            Op::HSet(pairs) => {
                for (f, v) in pairs {
                    self.hash.insert(f.clone(), v.clone());
                }
            }
            Op::HDel(fields) => {
                for f in fields {
                    self.hash.remove(f);
                }
            }
            Op::Push { left, items } => {
                for i in items {
                    if *left {
                        self.list.push_front(i.clone());
                    } else {
                        self.list.push_back(i.clone());
                    }
                }
            }
            Op::Pop { left, count } => {
                for _ in 0..*count {
                    if *left {
                        self.list.pop_front();
                    } else {
                        self.list.pop_back();
                    }
                }
            }
            Op::LSet { index: i, item } => {
                let i = index(self.list.len(), *i).ok_or(Corrupt)?;
                self.list[i] = item.clone();
            }
            Op::LInsert { before, pivot, item } => {
                let at = self.list.iter().position(|e| e == pivot).ok_or(Corrupt)?;
                self.list.insert(if *before { at } else { at + 1 }, item.clone());
            }
            Op::LRem { count, item } => {
                let mut left = if *count == 0 { usize::MAX } else { count.unsigned_abs() as usize };
                let mut kept: Vec<Vec<u8>> = Vec::new();
                let from_tail = *count < 0;
                let order: Vec<Vec<u8>> = if from_tail {
                    self.list.iter().rev().cloned().collect()
                } else {
                    self.list.iter().cloned().collect()
                };
                for e in order {
                    if left > 0 && &e == item {
                        left -= 1;
                    } else {
                        kept.push(e);
                    }
                }
                if from_tail {
                    kept.reverse();
                }
                self.list = kept.into();
            }
            Op::LTrim { start, stop } => {
                self.list = match normalize_range(self.list.len(), *start, *stop) {
                    Some((s, e)) => self.list.range(s..=e).cloned().collect(),
                    None => VecDeque::new(),
                };
            }
            Op::LRotate { from_left, to_left } => {
                let e = if *from_left { self.list.pop_front() } else { self.list.pop_back() };
                let e = e.ok_or(Corrupt)?;
                if *to_left {
                    self.list.push_front(e);
                } else {
                    self.list.push_back(e);
                }
            }
            Op::SAdd(m) => self.set.extend(m.iter().cloned()),
            Op::SRem(m) => {
                for x in m {
                    self.set.remove(x);
                }
            }
            Op::ZAdd(pairs) => {
                for (s, m) in pairs {
                    self.zset.insert(m.clone(), *s);
                }
            }
            Op::ZRem(m) => {
                for x in m {
                    self.zset.remove(x);
                }
            }
            Op::XAdd { id, pairs, trim } => {
                if *id <= self.stream_last || self.stream.last().is_some_and(|e| e.0 >= *id) {
                    return Err(Corrupt);
                }
                self.stream.push((*id, pairs.clone()));
                self.stream_last = *id;
                if let Some(t) = trim {
                    self.stream_trim(*t);
                }
            }
            Op::XDel(ids) => self.stream.retain(|e| !ids.contains(&e.0)),
            Op::XTrim(t) => self.stream_trim(*t),
            // Not generated: XSETID's replay is tested in amalgam-types' stream tests.
            Op::XSetId { last, .. } => self.stream_last = *last,
            // Not generated: groups are tested in amalgam-types' stream tests.
            Op::XGroups(_) => {}
            Op::ZRemRank { start, stop } => {
                let order = self.zset_order();
                if let Some((s, e)) = normalize_range(order.len(), *start, *stop) {
                    for (m, _) in &order[s..=e] {
                        self.zset.remove(m);
                    }
                }
            }
        }
        Ok(())
    }

    fn stream_trim(&mut self, t: TrimTo) {
        match t {
            TrimTo::Below(id) => self.stream.retain(|e| e.0 >= id),
            TrimTo::All => self.stream.clear(),
        }
    }

    /// Members by (score, member), as a sorted set orders them.
    fn zset_order(&self) -> Vec<(Vec<u8>, f64)> {
        let mut v: Vec<(Vec<u8>, f64)> = self.zset.iter().map(|(m, s)| (m.clone(), *s)).collect();
        v.sort_by(|a, b| a.1.partial_cmp(&b.1).unwrap().then_with(|| a.0.cmp(&b.0)));
        v
    }

    /// Asserts `v` holds what the model holds.
    fn check(&self, v: &Value) {
        match v {
            Value::Hash(h) => {
                let got: BTreeMap<Vec<u8>, Vec<u8>> = h.iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect();
                assert_eq!(got, self.hash);
                assert_eq!(h.len(), self.hash.len());
            }
            Value::List(l) => {
                let got: Vec<Vec<u8>> = l.iter().map(|e| e.to_vec()).collect();
                assert_eq!(got, self.list.iter().cloned().collect::<Vec<_>>());
            }
            Value::Set(s) => {
                let got: BTreeSet<Vec<u8>> = s.iter().map(|m| m.to_vec()).collect();
                assert_eq!(got, self.set);
                assert_eq!(s.len(), self.set.len());
            }
            Value::ZSet(z) => {
                let got: Vec<(Vec<u8>, f64)> = z.iter().map(|(m, s)| (m.to_vec(), s)).collect();
                assert_eq!(got, self.zset_order());
            }
            Value::Stream(s) => {
                let got: Vec<_> =
                    s.range(StreamId::MIN, StreamId::MAX, false, 0).into_iter().map(|e| (e.id, e.pairs)).collect();
                assert_eq!(got, self.stream);
                assert_eq!(s.last_id(), self.stream_last);
            }
        }
    }
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![Just(Kind::Hash), Just(Kind::List), Just(Kind::Set), Just(Kind::ZSet), Just(Kind::Stream)]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, .. ProptestConfig::default() })]

    /// The log's ops, decoded from their encoding and applied to an empty
    /// value, give the model's contents after every op.
    #[test]
    fn logged_ops_replay_to_the_model(
        (kind, ops) in kind().prop_flat_map(|k| (Just(k), prop::collection::vec(op_of(k), 0..40))),
        small in any::<bool>(),
    ) {
        let t = if small { tiny() } else { Thresholds::default() };
        let mut v = Value::new(kind, &t);
        let mut model = Model::default();
        for op in &ops {
            let decoded = Op::decode(&op.to_bytes()).expect("an op's own encoding decodes");
            prop_assert_eq!(&decoded, op);
            let want = model.apply(op);
            let got = decoded.apply(&mut v, &t);
            prop_assert_eq!(got, want, "{:?}", op);
            model.check(&v);
        }
        if small && ops.len() > 20 && !v.is_empty() && v.len() > 8 && kind != Kind::Stream {
            prop_assert!(v.packed().is_none(), "tiny thresholds convert a value of {} elements", v.len());
        }
    }

    /// Arbitrary bytes never panic the decoder; what it accepts re-encodes
    /// to an op that decodes the same (the canonical form).
    #[test]
    fn op_decode_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        if let Ok(op) = Op::decode(&bytes) {
            prop_assert_eq!(Op::decode(&op.to_bytes()), Ok(op));
        }
    }
}

/// Corrupt-but-decodable ops on a value of another kind are refused.
#[test]
fn an_op_of_another_kind_changes_nothing() {
    let t = Thresholds::default();
    for kind in [Kind::Hash, Kind::List, Kind::Set, Kind::ZSet, Kind::Stream] {
        let mut v = Value::new(kind, &t);
        let fill = match kind {
            Kind::Hash => Op::HSet(vec![(b"f".to_vec(), b"v".to_vec())]),
            Kind::List => Op::Push { left: true, items: vec![b"x".to_vec()] },
            Kind::Set => Op::SAdd(vec![b"x".to_vec()]),
            Kind::ZSet => Op::ZAdd(vec![(1.0, b"x".to_vec())]),
            Kind::Stream => Op::XAdd { id: StreamId::new(1, 1), pairs: vec![], trim: None },
        };
        fill.apply(&mut v, &t).unwrap();
        for other in [
            Op::HDel(vec![b"f".to_vec()]),
            Op::Pop { left: true, count: 1 },
            Op::SRem(vec![b"x".to_vec()]),
            Op::ZRem(vec![b"x".to_vec()]),
        ] {
            if other.kind() != kind {
                assert_eq!(other.apply(&mut v, &t), Err(Corrupt));
                assert_eq!(v.len(), 1);
            }
        }
    }
}
