//! The stream against a model: a vector of entries and the three IDs
//! and counter Redis keeps, driven by every write (proptest), and unit
//! tests of Redis's rules.

use super::*;
use proptest::prelude::*;

fn pairs(n: u8) -> Vec<(Vec<u8>, Vec<u8>)> {
    // Entries alternate between two field sets, so nodes hold entries
    // that share the master fields and entries that do not.
    if n % 3 == 0 {
        vec![(b"other".to_vec(), vec![n; (n % 7) as usize])]
    } else {
        vec![(b"f".to_vec(), vec![b'v'; n as usize]), (b"g".to_vec(), n.to_string().into_bytes())]
    }
}

fn borrow(p: &[(Vec<u8>, Vec<u8>)]) -> Vec<(&[u8], &[u8])> {
    p.iter().map(|(f, v)| (f.as_slice(), v.as_slice())).collect()
}

#[derive(Default, Debug, Clone)]
struct Model {
    entries: Vec<Entry>,
    last_id: StreamId,
    max_deleted: StreamId,
    added: u64,
}

#[derive(Debug, Clone)]
enum Step {
    Add { gap_ms: u64, same_ms: bool, n: u8 },
    Del(usize),
    TrimMax { max: u64, approx: bool, limit: u64 },
    TrimMin { pick: usize, approx: bool },
    Roundtrip,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (0u64..3, any::<bool>(), any::<u8>()).prop_map(|(gap_ms, same_ms, n)| Step::Add { gap_ms, same_ms, n }),
        2 => any::<usize>().prop_map(Step::Del),
        1 => (0u64..400, any::<bool>(), prop_oneof![Just(0u64), 1u64..300]).prop_map(|(max, approx, limit)| Step::TrimMax { max, approx, limit }),
        1 => (any::<usize>(), any::<bool>()).prop_map(|(pick, approx)| Step::TrimMin { pick, approx }),
        1 => Just(Step::Roundtrip),
    ]
}

fn check(s: &Stream, m: &Model) {
    assert_eq!(s.len(), m.entries.len() as u64);
    assert_eq!(s.last_id(), m.last_id);
    assert_eq!(s.max_deleted(), m.max_deleted);
    assert_eq!(s.entries_added(), m.added);
    assert_eq!(s.range(StreamId::MIN, StreamId::MAX, false, 0), m.entries);
    let mut rev = m.entries.clone();
    rev.reverse();
    assert_eq!(s.range(StreamId::MIN, StreamId::MAX, true, 0), rev);
    if let (Some(a), Some(b)) = (m.entries.first(), m.entries.last()) {
        assert_eq!(s.first_id(), a.id);
        assert_eq!(s.last_valid_id(), b.id);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]
    #[test]
    fn stream_matches_model(steps in proptest::collection::vec(step(), 1..600), lo in 0usize..50, span in 0usize..80, count in 0usize..5) {
        let mut s = Stream::new();
        let mut m = Model::default();
        let mut now = 1_000u64;
        for st in steps {
            match st {
                Step::Add { gap_ms, same_ms, n } => {
                    now += gap_ms;
                    let want = if same_ms { AddId::Partial(m.last_id.ms.max(1)) } else { AddId::Auto };
                    let id = match s.next_id(want, now) { Ok(id) => id, Err(_) => continue };
                    let p = pairs(n);
                    prop_assert!(s.append(id, &borrow(&p)));
                    m.entries.push(Entry { id, pairs: p });
                    m.last_id = id;
                    m.added += 1;
                }
                Step::Del(i) => {
                    if m.entries.is_empty() { prop_assert!(!s.delete(StreamId::new(now, 0))); continue; }
                    let e = m.entries.remove(i % m.entries.len());
                    prop_assert!(s.delete(e.id));
                    prop_assert!(!s.delete(e.id));
                    m.max_deleted = m.max_deleted.max(e.id);
                }
                Step::TrimMax { max, approx, limit } => {
                    let limit = if approx { limit } else { 0 };
                    let before = s.len();
                    let n = s.trim(Trim { strategy: TrimStrategy::MaxLen(max), approx, limit });
                    prop_assert_eq!(before - s.len(), n);
                    if !approx { prop_assert!(s.len() <= max); }
                    prop_assert!(s.len() >= max.min(before));
                    m.entries.drain(..n as usize);
                }
                Step::TrimMin { pick, approx } => {
                    let min = if m.entries.is_empty() { StreamId::new(now, 0) } else { m.entries[pick % m.entries.len()].id };
                    let n = s.trim(Trim { strategy: TrimStrategy::MinId(min), approx, limit: 0 });
                    let below = m.entries.iter().filter(|e| e.id < min).count();
                    if approx { prop_assert!(n as usize <= below); } else { prop_assert_eq!(n as usize, below); }
                    m.entries.drain(..n as usize);
                }
                Step::Roundtrip => {
                    let mut enc = Vec::new();
                    s.encode(&mut enc);
                    s = Stream::decode(&enc).unwrap();
                }
            }
            check(&s, &m);
        }
        // A bounded range, both ways, with a count.
        if !m.entries.is_empty() {
            let a = m.entries[lo % m.entries.len()].id;
            let b = m.entries[(lo + span) % m.entries.len()].id;
            let want: Vec<Entry> = m.entries.iter().filter(|e| e.id >= a && e.id <= b).cloned().collect();
            let fwd: Vec<Entry> = want.iter().take(if count == 0 { usize::MAX } else { count }).cloned().collect();
            let bwd: Vec<Entry> = want.iter().rev().take(if count == 0 { usize::MAX } else { count }).cloned().collect();
            prop_assert_eq!(s.range(a, b, false, count), fwd);
            prop_assert_eq!(s.range(a, b, true, count), bwd);
        }
        // The log's trim effect replays to the same entries.
        let mut copy = s.clone();
        let eff = s.trim_effect();
        copy.trim_to(eff);
        prop_assert_eq!(copy.range(StreamId::MIN, StreamId::MAX, false, 0), m.entries);
    }
}

#[test]
fn xadd_id_rules() {
    let mut s = Stream::new();
    assert_eq!(s.next_id(AddId::Explicit(StreamId::new(5, 5)), 1), Ok(StreamId::new(5, 5)));
    assert_eq!(s.next_id(AddId::Partial(0), 1), Ok(StreamId::new(0, 1)));
    assert!(s.append(StreamId::new(5, 5), &[(b"a", b"1")]));
    assert_eq!(s.next_id(AddId::Explicit(StreamId::new(5, 5)), 1), Err(ERR_ID_TOO_SMALL));
    assert_eq!(s.next_id(AddId::Partial(5), 1), Ok(StreamId::new(5, 6)));
    assert_eq!(s.next_id(AddId::Partial(4), 1), Err(ERR_ID_TOO_SMALL));
    assert_eq!(s.next_id(AddId::Partial(6), 1), Ok(StreamId::new(6, 0)));
    assert_eq!(s.next_id(AddId::Auto, 1), Ok(StreamId::new(5, 6)));
    assert_eq!(s.next_id(AddId::Auto, 9), Ok(StreamId::new(9, 0)));
    assert!(!s.append(StreamId::new(5, 5), &[(b"a", b"1")]));
    assert!(s.force_ids(StreamId::new(7, u64::MAX), None, None));
    assert_eq!(s.next_id(AddId::Partial(7), 1), Err(ERR_ID_TOO_SMALL));
    assert_eq!(s.next_id(AddId::Auto, 1), Ok(StreamId::new(8, 0)));
    assert!(s.force_ids(StreamId::MAX, None, None));
    assert_eq!(s.next_id(AddId::Auto, 1), Err(ERR_EXHAUSTED));
}

#[test]
fn nodes_share_fields_and_split_at_the_entry_bound() {
    let mut s = Stream::new();
    for i in 0..250u64 {
        assert!(s.append(StreamId::new(i + 1, 0), &[(b"field", b"value"), (b"n", b"1")]));
    }
    assert_eq!(s.nodes(), 3);
    // An entry sharing the master fields costs its ID deltas, flags and
    // values: well under the fields' bytes.
    let per_entry = s.node_bytes as f64 / 250.0;
    assert!(per_entry < 16.0, "{per_entry}");
    // Approximate trims take whole nodes only.
    assert_eq!(s.trim(Trim { strategy: TrimStrategy::MaxLen(180), approx: true, limit: 0 }), 0);
    assert_eq!(s.trim(Trim { strategy: TrimStrategy::MaxLen(150), approx: true, limit: 0 }), 100);
    assert_eq!(s.trim(Trim { strategy: TrimStrategy::MaxLen(10), approx: true, limit: 50 }), 0);
    assert_eq!(s.trim(Trim { strategy: TrimStrategy::MaxLen(10), approx: false, limit: 0 }), 140);
    assert_eq!(s.len(), 10);
    assert_eq!(s.first_id(), StreamId::new(241, 0));
}

#[test]
fn xsetid_checks() {
    let mut s = Stream::new();
    s.append(StreamId::new(1, 0), &[(b"a", b"1")]);
    s.append(StreamId::new(2, 0), &[(b"a", b"1")]);
    assert!(s.delete(StreamId::new(2, 0)));
    assert_eq!(s.max_deleted(), StreamId::new(2, 0));
    // Below the last entry: refused; below a tombstone: taken (7.0.15).
    assert!(s.set_id(StreamId::new(0, 5), None, None).is_err());
    assert_eq!(s.set_id(StreamId::new(1, 5), None, None), Ok(()));
    // The next entry goes below the tombstone, in a node of its own.
    assert!(s.append(StreamId::new(1, 6), &[(b"a", b"2")]));
    assert_eq!(s.range(StreamId::MIN, StreamId::MAX, false, 0).len(), 2);
    assert_eq!(s.range(StreamId::MIN, StreamId::new(1, 9), false, 0).len(), 2);
    assert_eq!(s.range(StreamId::new(1, 0), StreamId::new(1, 6), true, 0).len(), 2);
    let mut enc = Vec::new();
    s.encode(&mut enc);
    assert_eq!(Stream::decode(&enc).unwrap().len(), 2);
    assert!(s.set_id(StreamId::new(3, 0), Some(0), None).is_err());
    assert_eq!(s.set_id(StreamId::new(3, 0), Some(7), Some(StreamId::new(2, 5))), Ok(()));
    assert_eq!((s.last_id(), s.entries_added(), s.max_deleted()), (StreamId::new(3, 0), 7, StreamId::new(2, 5)));
}

#[test]
fn damaged_encodings_are_corrupt_not_a_panic() {
    let mut s = Stream::new();
    for i in 0..30u64 {
        s.append(StreamId::new(i + 1, i), &borrow(&pairs(i as u8)));
    }
    s.delete(StreamId::new(3, 2));
    s.groups.push(Group::new(b"g", StreamId::new(2, 1), 4));
    let mut enc = Vec::new();
    s.encode(&mut enc);
    let back = Stream::decode(&enc).unwrap();
    assert_eq!(back.range(StreamId::MIN, StreamId::MAX, false, 0), s.range(StreamId::MIN, StreamId::MAX, false, 0));
    assert_eq!(back.groups, s.groups);
    for cut in 0..enc.len() {
        assert!(Stream::decode(&enc[..cut]).is_err(), "cut at {cut}");
    }
    for i in 0..enc.len() {
        let mut c = enc.clone();
        c[i] ^= 0x5A;
        let _ = Stream::decode(&c);
    }
}

/// The PEL's two views agree: every pending entry is in its consumer's
/// set and nowhere else, and every consumer's set is in the group's PEL.
fn check_pel(s: &Stream) {
    for g in s.groups() {
        let mut n = 0;
        for (name, c) in &g.consumers {
            for id in &c.pending {
                assert_eq!(&g.pending[id].consumer, name);
                n += 1;
            }
        }
        assert_eq!(n, g.pending.len());
    }
}

#[derive(Debug, Clone)]
enum GroupStep {
    Add,
    Del(usize),
    ReadNew { c: u8, count: usize, noack: bool },
    History { c: u8 },
    Ack(usize),
    Claim { c: u8, pick: usize, idle: u64, force: bool, justid: bool },
    AutoClaim { c: u8, count: usize },
    DelConsumer(u8),
    SetId(usize),
}

fn group_step() -> impl Strategy<Value = GroupStep> {
    prop_oneof![
        4 => Just(GroupStep::Add),
        1 => any::<usize>().prop_map(GroupStep::Del),
        3 => (0u8..3, 0usize..4, any::<bool>()).prop_map(|(c, count, noack)| GroupStep::ReadNew { c, count, noack }),
        1 => (0u8..3).prop_map(|c| GroupStep::History { c }),
        2 => any::<usize>().prop_map(GroupStep::Ack),
        1 => (0u8..3, any::<usize>(), 0u64..3, any::<bool>(), any::<bool>())
            .prop_map(|(c, pick, idle, force, justid)| GroupStep::Claim { c, pick, idle, force, justid }),
        1 => (0u8..3, 1usize..4).prop_map(|(c, count)| GroupStep::AutoClaim { c, count }),
        1 => (0u8..3).prop_map(GroupStep::DelConsumer),
        1 => any::<usize>().prop_map(GroupStep::SetId),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]
    /// Random group commands keep the PEL consistent, deliver each new
    /// entry once per group (without SETID), and survive encode/decode.
    #[test]
    fn groups_keep_their_pel_consistent(steps in proptest::collection::vec(group_step(), 1..200)) {
        let mut s = Stream::new();
        assert!(s.create_group(b"g", StreamId::MIN, 0));
        assert!(!s.create_group(b"g", StreamId::MIN, 0));
        let mut now = 10u64;
        let mut delivered: Vec<StreamId> = Vec::new();
        let mut rewound = false;
        for st in steps {
            now += 1;
            let name = |c: u8| vec![b'c', c];
            match st {
                GroupStep::Add => {
                    let id = s.next_id(AddId::Auto, now).unwrap();
                    s.append(id, &[(b"f", b"v")]);
                }
                GroupStep::Del(i) => {
                    let all = s.range(StreamId::MIN, StreamId::MAX, false, 0);
                    if !all.is_empty() { s.delete(all[i % all.len()].id); }
                }
                GroupStep::ReadNew { c, count, noack } => {
                    s.touch_consumer(b"g", &name(c), now).unwrap();
                    let got = s.read_new(b"g", &name(c), count, noack, now).unwrap();
                    prop_assert!(count == 0 || got.len() <= count);
                    for e in got {
                        prop_assert!(rewound || !delivered.contains(&e.id));
                        delivered.push(e.id);
                    }
                }
                GroupStep::History { c } => {
                    let got = s.read_history(b"g", &name(c), StreamId::MIN, 0, now).unwrap();
                    let own: Vec<StreamId> = s.group(b"g").unwrap().consumers.get(&name(c)).map(|x| x.pending.iter().copied().collect()).unwrap_or_default();
                    prop_assert_eq!(got.iter().map(|d| d.0).collect::<Vec<_>>(), own);
                }
                GroupStep::Ack(i) => {
                    let pel: Vec<StreamId> = s.group(b"g").unwrap().pending.keys().copied().collect();
                    if !pel.is_empty() {
                        let id = pel[i % pel.len()];
                        prop_assert_eq!(s.ack(b"g", &[id, id]), Some(1));
                    }
                }
                GroupStep::Claim { c, pick, idle, force, justid } => {
                    let all = s.range(StreamId::MIN, StreamId::MAX, false, 0);
                    if all.is_empty() { continue; }
                    let id = all[pick % all.len()].id;
                    let o = ClaimOptions { min_idle_ms: idle, delivery_ms: now, force, justid, ..ClaimOptions::default() };
                    let got = s.claim(b"g", &name(c), &[id], &o, now).unwrap();
                    for (gid, fields) in &got {
                        prop_assert_eq!(*gid, id);
                        prop_assert_eq!(fields.is_none(), justid);
                        prop_assert_eq!(&s.group(b"g").unwrap().pending[gid].consumer, &name(c));
                    }
                }
                GroupStep::AutoClaim { c, count } => {
                    let a = s.autoclaim(b"g", &name(c), &AutoClaim { min_idle_ms: 0, start: StreamId::MIN, count, justid: false }, now).unwrap();
                    prop_assert!(a.claimed.len() + a.deleted.len() <= count);
                    for (id, _) in &a.claimed {
                        prop_assert_eq!(&s.group(b"g").unwrap().pending[id].consumer, &name(c));
                    }
                }
                GroupStep::DelConsumer(c) => {
                    s.delete_consumer(b"g", &name(c)).unwrap();
                }
                GroupStep::SetId(i) => {
                    let all = s.range(StreamId::MIN, StreamId::MAX, false, 0);
                    let id = if all.is_empty() { StreamId::MIN } else { all[i % all.len()].id };
                    s.set_group_id(b"g", id, ENTRIES_READ_UNKNOWN);
                    rewound = true;
                }
            }
            check_pel(&s);
            let mut enc = Vec::new();
            s.encode(&mut enc);
            prop_assert_eq!(&Stream::decode(&enc).unwrap().groups, &s.groups);
            let mut copy = s.clone();
            copy.groups.clear();
            copy.set_groups_bytes(&s.groups_bytes()).unwrap();
            prop_assert_eq!(&copy.groups, &s.groups);
        }
    }
}

#[test]
fn lag_and_entries_read_as_redis() {
    let mut s = Stream::new();
    assert!(s.create_group(b"g", StreamId::MIN, ENTRIES_READ_UNKNOWN));
    assert_eq!(s.lag(s.group(b"g").unwrap()), Some(0), "nothing ever added");
    for i in 1..=5u64 {
        s.append(StreamId::new(i, 0), &[(b"f", b"v")]);
    }
    // Unknown entries-read, no tombstones: estimated from the first ID.
    assert_eq!(s.lag(s.group(b"g").unwrap()), Some(5));
    s.touch_consumer(b"g", b"c", 1).unwrap();
    assert_eq!(s.read_new(b"g", b"c", 2, false, 1).unwrap().len(), 2);
    let g = s.group(b"g").unwrap();
    assert_eq!((g.entries_read, g.last_id), (2, StreamId::new(2, 0)));
    assert_eq!(s.lag(s.group(b"g").unwrap()), Some(3));
    // A tombstone ahead of the group: the lag cannot be told.
    assert!(s.delete(StreamId::new(4, 0)));
    assert_eq!(s.lag(s.group(b"g").unwrap()), None);
    assert_eq!(s.read_new(b"g", b"c", 0, false, 1).unwrap().len(), 2);
    assert_eq!(s.group(b"g").unwrap().entries_read, 5);
    assert_eq!(s.lag(s.group(b"g").unwrap()), Some(0));
}
