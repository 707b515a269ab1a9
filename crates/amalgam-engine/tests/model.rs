//! Model-based property tests: random sequences of every store operation,
//! each answer checked against a `HashMap` model of memcached's semantics
//! (memcached's doc/protocol.txt), then the whole contents compared.
//!
//! Keys come from a small set so operations collide; the table starts at
//! 2 buckets so sequences run through expansions. Expiry times are kept at
//! least 10 s away from any clock step, so the wall clock ticking during a
//! case cannot move an item across its expiry.
use amalgam_engine::{Config, Error, Expiry, Store, KEY_BYTES_MAX};
use proptest::prelude::*;
use std::collections::HashMap;

/// Item size limit of the stores under test (header + key + value).
const ITEM_SIZE_MAX: usize = 64 << 10;
/// A value that can never fit under [`ITEM_SIZE_MAX`].
const OVERSIZE_VALUE_BYTES: usize = ITEM_SIZE_MAX + 1;
/// Distinct keys per case.
const KEYS: usize = 12;

#[derive(Clone, Debug, PartialEq)]
struct Entry {
    value: Vec<u8>,
    flags: u32,
    /// Absolute expiry (store clock seconds); 0 = never.
    expires: u32,
    cas: u64,
}

#[derive(Clone, Copy, Debug)]
enum Exp {
    Never,
    /// Relative seconds.
    In(i64),
    /// Absolute: now + seconds, written as a unix time.
    AbsIn(i64),
    /// Negative: already expired.
    Past,
}

#[derive(Clone, Debug)]
enum Op {
    Set(usize, Vec<u8>, u32, Exp),
    Add(usize, Vec<u8>, u32, Exp),
    Replace(usize, Vec<u8>, u32, Exp),
    /// Cas with the current CAS unique (true) or a stale one (false).
    Cas(usize, Vec<u8>, u32, bool),
    Append(usize, Vec<u8>),
    Prepend(usize, Vec<u8>),
    SetNumber(usize, u64),
    Incr(usize, u64),
    Decr(usize, u64),
    Touch(usize, Exp),
    Gat(usize, Exp),
    Delete(usize),
    Get(usize),
    GetBatch(Vec<usize>),
    FlushAll,
    Advance(i64),
    Oversize(usize),
    BadKey(usize),
}

fn key(i: usize) -> Vec<u8> {
    // Lengths 1, 250 and in between, so both key-size edges take part.
    match i {
        0 => b"k".to_vec(),
        1 => vec![b'x'; KEY_BYTES_MAX],
        _ => format!("key:{i}").into_bytes(),
    }
}

fn value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(Vec::new()),
        proptest::collection::vec(any::<u8>(), 0..40),
        proptest::collection::vec(any::<u8>(), 200..1200),
    ]
}

fn exp() -> impl Strategy<Value = Exp> {
    prop_oneof![
        4 => Just(Exp::Never),
        2 => prop_oneof![Just(10i64), Just(30)].prop_map(Exp::In),
        1 => Just(Exp::AbsIn(30)),
        1 => Just(Exp::Past),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let k = 0..KEYS;
    prop_oneof![
        6 => (k.clone(), value(), any::<u32>(), exp()).prop_map(|(k, v, f, e)| Op::Set(k, v, f, e)),
        2 => (k.clone(), value(), any::<u32>(), exp()).prop_map(|(k, v, f, e)| Op::Add(k, v, f, e)),
        2 => (k.clone(), value(), any::<u32>(), exp()).prop_map(|(k, v, f, e)| Op::Replace(k, v, f, e)),
        2 => (k.clone(), value(), any::<u32>(), any::<bool>()).prop_map(|(k, v, f, c)| Op::Cas(k, v, f, c)),
        2 => (k.clone(), proptest::collection::vec(any::<u8>(), 0..64)).prop_map(|(k, d)| Op::Append(k, d)),
        2 => (k.clone(), proptest::collection::vec(any::<u8>(), 0..64)).prop_map(|(k, d)| Op::Prepend(k, d)),
        2 => (k.clone(), prop_oneof![0..100u64, Just(u64::MAX - 1), Just(u64::MAX), any::<u64>()])
            .prop_map(|(k, n)| Op::SetNumber(k, n)),
        2 => (k.clone(), prop_oneof![0..1000u64, Just(u64::MAX), any::<u64>()]).prop_map(|(k, d)| Op::Incr(k, d)),
        2 => (k.clone(), prop_oneof![0..1000u64, Just(u64::MAX), any::<u64>()]).prop_map(|(k, d)| Op::Decr(k, d)),
        1 => (k.clone(), exp()).prop_map(|(k, e)| Op::Touch(k, e)),
        1 => (k.clone(), exp()).prop_map(|(k, e)| Op::Gat(k, e)),
        2 => k.clone().prop_map(Op::Delete),
        4 => k.clone().prop_map(Op::Get),
        2 => proptest::collection::vec(k.clone(), 0..40).prop_map(Op::GetBatch),
        1 => Just(Op::FlushAll),
        1 => prop_oneof![Just(0i64), Just(20)].prop_map(Op::Advance),
        1 => k.clone().prop_map(Op::Oversize),
        1 => (0usize..3).prop_map(Op::BadKey),
    ]
}

struct Model {
    map: HashMap<usize, Entry>,
    /// True once anything may linger in the index unseen (flush, expiry).
    lingering: bool,
}

impl Model {
    fn live(&mut self, k: usize, now: u32) -> Option<&mut Entry> {
        if self.map.get(&k).is_some_and(|e| e.expires != 0 && e.expires <= now) {
            self.map.remove(&k);
        }
        self.map.get_mut(&k)
    }
}

fn expiry(e: Exp, now: u32) -> (Expiry, u32) {
    let x = match e {
        Exp::Never => Expiry::from_memcached(0, now),
        Exp::In(s) => Expiry::from_memcached(s, now),
        Exp::AbsIn(s) => Expiry::from_memcached(i64::from(now) + s, now),
        Exp::Past => Expiry::from_memcached(-1, now),
    };
    let raw = match x {
        Expiry::Never => 0,
        Expiry::At(t) => t,
        Expiry::AtMillis(_) => unreachable!("memcached's expiry is whole seconds"),
    };
    (x, raw)
}

fn fresh_cas(store_cas: u64, seen: &mut Vec<u64>) {
    assert!(!seen.contains(&store_cas), "CAS {store_cas} handed out twice");
    seen.push(store_cas);
}

fn read(store: &Store, k: usize) -> Option<Entry> {
    store.get(&key(k), |it| Entry {
        value: it.value().to_vec(),
        flags: it.flags(),
        expires: match it.expiry() {
            Expiry::Never => 0,
            Expiry::At(t) => t,
            Expiry::AtMillis(ms) => unreachable!("the model sets whole seconds only, got {ms} ms"),
        },
        cas: it.cas(),
    })
}

fn run(ops: &[Op]) {
    let store = Store::new(Config {
        memory_limit_bytes: 64 << 20,
        item_size_max_bytes: ITEM_SIZE_MAX,
        initial_buckets_log2: 1,
        hash_seed: Some(7),
        ..Config::default()
    })
    .unwrap();
    let mut m = Model { map: HashMap::new(), lingering: false };
    let mut cases = Vec::new();
    for op in ops {
        let now = store.now();
        match op.clone() {
            Op::Set(k, v, f, e) => {
                let (x, raw) = expiry(e, now);
                let cas = store.set(&key(k), &v, f, x).unwrap();
                fresh_cas(cas, &mut cases);
                m.map.remove(&k);
                if !x.is_expired(now) {
                    m.map.insert(k, Entry { value: v, flags: f, expires: raw, cas });
                }
            }
            Op::Add(k, v, f, e) => {
                let (x, raw) = expiry(e, now);
                let r = store.add(&key(k), &v, f, x);
                if m.live(k, now).is_some() {
                    assert_eq!(r, Err(Error::NotStored));
                } else {
                    let cas = r.unwrap();
                    fresh_cas(cas, &mut cases);
                    if !x.is_expired(now) {
                        m.map.insert(k, Entry { value: v, flags: f, expires: raw, cas });
                    }
                }
            }
            Op::Replace(k, v, f, e) => {
                let (x, raw) = expiry(e, now);
                let r = store.replace(&key(k), &v, f, x);
                if m.live(k, now).is_none() {
                    assert_eq!(r, Err(Error::NotStored));
                } else {
                    let cas = r.unwrap();
                    fresh_cas(cas, &mut cases);
                    m.map.remove(&k);
                    if !x.is_expired(now) {
                        m.map.insert(k, Entry { value: v, flags: f, expires: raw, cas });
                    }
                }
            }
            Op::Cas(k, v, f, current) => {
                let live = m.live(k, now).map(|e| e.cas);
                let unique = match live {
                    Some(c) if current => c,
                    Some(c) => c.wrapping_add(1_000_003),
                    None => 42,
                };
                let r = store.cas(&key(k), &v, f, Expiry::Never, unique);
                match live {
                    None => assert_eq!(r, Err(Error::NotFound)),
                    Some(_) if !current => assert_eq!(r, Err(Error::Exists)),
                    Some(_) => {
                        let cas = r.unwrap();
                        fresh_cas(cas, &mut cases);
                        m.map.insert(k, Entry { value: v, flags: f, expires: 0, cas });
                    }
                }
            }
            Op::Append(k, d) | Op::Prepend(k, d) => {
                let append = matches!(op, Op::Append(..));
                let r = if append { store.append(&key(k), &d) } else { store.prepend(&key(k), &d) };
                match m.live(k, now) {
                    None => assert_eq!(r, Err(Error::NotStored)),
                    Some(e) => {
                        let cas = r.unwrap();
                        fresh_cas(cas, &mut cases);
                        if append {
                            e.value.extend_from_slice(&d);
                        } else {
                            e.value.splice(0..0, d.iter().copied());
                        }
                        e.cas = cas;
                    }
                }
            }
            Op::SetNumber(k, n) => {
                let v = n.to_string().into_bytes();
                let cas = store.set(&key(k), &v, 0, Expiry::Never).unwrap();
                fresh_cas(cas, &mut cases);
                m.map.insert(k, Entry { value: v, flags: 0, expires: 0, cas });
            }
            Op::Incr(k, d) | Op::Decr(k, d) => {
                let incr = matches!(op, Op::Incr(..));
                let r = if incr { store.incr(&key(k), d) } else { store.decr(&key(k), d) };
                match m.live(k, now) {
                    None => assert_eq!(r, Err(Error::NotFound)),
                    Some(e) => {
                        match model_counter(&e.value) {
                            None => assert_eq!(r, Err(Error::NonNumeric), "value {:?}", e.value),
                            Some(v) => {
                                let new = if incr { v.wrapping_add(d) } else { v.saturating_sub(d) };
                                assert_eq!(r, Ok(new));
                                let mut digits = new.to_string().into_bytes();
                                // memcached keeps the length when the number
                                // shrinks, padding with spaces.
                                if digits.len() < e.value.len() {
                                    digits.resize(e.value.len(), b' ');
                                }
                                e.value = digits;
                                let c = read(&store, k).expect("counter present").cas;
                                assert_ne!(c, e.cas, "incr/decr must change the CAS unique");
                                fresh_cas(c, &mut cases);
                                e.cas = c;
                            }
                        }
                    }
                }
            }
            Op::Touch(k, e) | Op::Gat(k, e) => {
                let (x, raw) = expiry(e, now);
                let gat = matches!(op, Op::Gat(..));
                let got = if gat {
                    store.touch_and_get(&key(k), x, |it| (it.value().to_vec(), it.flags(), it.cas()))
                } else {
                    store.touch(&key(k), x).err().map(Err).or(Some(Ok((Vec::new(), 0, 0))))
                };
                match m.live(k, now) {
                    None if gat => assert_eq!(got, None),
                    None => assert_eq!(got, Some(Err(Error::NotFound))),
                    Some(ent) => {
                        let (v, f, c) = got.unwrap().unwrap();
                        if gat {
                            assert_eq!((&v, f, c), (&ent.value, ent.flags, ent.cas));
                        }
                        ent.expires = raw;
                        if x.is_expired(now) {
                            m.map.remove(&k);
                        }
                    }
                }
            }
            Op::Delete(k) => {
                let r = store.delete(&key(k));
                assert_eq!(r, if m.live(k, now).is_some() { Ok(()) } else { Err(Error::NotFound) });
                m.map.remove(&k);
            }
            Op::Get(k) => assert_eq!(read(&store, k), m.live(k, now).cloned(), "get key {k}"),
            Op::GetBatch(ks) => {
                let keys: Vec<Vec<u8>> = ks.iter().map(|&k| key(k)).collect();
                let mut got = vec![None; ks.len()];
                store.get_batch(&keys, |i, it| got[i] = it.map(|it| (it.value().to_vec(), it.flags(), it.cas())));
                for (i, &k) in ks.iter().enumerate() {
                    let want = m.live(k, now).map(|e| (e.value.clone(), e.flags, e.cas));
                    assert_eq!(got[i], want, "get_batch key {k}");
                }
            }
            Op::FlushAll => {
                store.flush_all();
                m.map.clear();
                m.lingering = true;
            }
            Op::Advance(s) => {
                store.advance_clock(s);
                m.lingering |= s > 0;
            }
            Op::Oversize(k) => {
                let before = read(&store, k);
                let big = vec![b'v'; OVERSIZE_VALUE_BYTES];
                assert_eq!(store.set(&key(k), &big, 0, Expiry::Never), Err(Error::TooLarge));
                // memcached drops the old item when a set fails for size;
                // Amalgam keeps it: the failed set had no effect.
                assert_eq!(read(&store, k), before);
            }
            Op::BadKey(which) => {
                let bad: Vec<u8> = if which == 0 { Vec::new() } else { vec![b'k'; KEY_BYTES_MAX + which] };
                assert_eq!(store.set(&bad, b"v", 0, Expiry::Never), Err(Error::BadKey));
                assert_eq!(store.add(&bad, b"v", 0, Expiry::Never), Err(Error::BadKey));
                assert_eq!(store.delete(&bad), Err(Error::BadKey));
                assert_eq!(store.incr(&bad, 1), Err(Error::BadKey));
                assert_eq!(store.append(&bad, b"x"), Err(Error::BadKey));
                assert_eq!(store.get(&bad, |_| ()), None);
            }
        }
    }
    let now = store.now();
    for k in 0..KEYS {
        assert_eq!(read(&store, k), m.live(k, now).cloned(), "final contents, key {k}");
    }
    if m.lingering {
        assert!(store.len() >= m.map.len());
    } else {
        assert_eq!(store.len(), m.map.len());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn operations_match_the_model(ops in proptest::collection::vec(op(), 1..120)) {
        run(&ops);
    }
}

#[test]
fn counters_wrap_and_floor_and_keep_their_width() {
    run(&[
        Op::SetNumber(3, u64::MAX),
        Op::Incr(3, 1),
        Op::Get(3),
        Op::SetNumber(4, 1000),
        Op::Decr(4, 1),
        Op::Decr(4, 5000),
        Op::Get(4),
        Op::Incr(4, 123_456),
        Op::Get(4),
    ]);
    let store = Store::new(Config::default()).unwrap();
    store.set(b"n", b"10", 0, Expiry::Never).unwrap();
    assert_eq!(store.decr(b"n", 1), Ok(9));
    assert_eq!(store.get(b"n", |it| it.value().to_vec()).unwrap(), b"9 ");
    assert_eq!(store.incr(b"n", u64::MAX), Ok(8));
}

/// memcached's `safe_strtoull` over a stored value, written plainly (the
/// model's own reading, not the engine's): leading whitespace, a sign,
/// digits, then the end, whitespace or a NUL; past u64 refused; a minus
/// only where strtoull's negation stays below 2^63.
fn model_counter(v: &[u8]) -> Option<u64> {
    let ws = |b: u8| b" \t\n\x0b\x0c\r".contains(&b);
    let s: Vec<u8> = v.iter().copied().skip_while(|&b| ws(b)).collect();
    let (neg, rest) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, &s[..]),
    };
    let digits: Vec<u8> = rest.iter().copied().take_while(u8::is_ascii_digit).collect();
    if digits.is_empty() {
        return None;
    }
    if let Some(&next) = rest.get(digits.len()) {
        if !(ws(next) || next == 0) {
            return None;
        }
    }
    let n: u64 = std::str::from_utf8(&digits).ok()?.parse().ok()?;
    if !neg {
        return Some(n);
    }
    let m = n.wrapping_neg();
    ((m as i64) >= 0).then_some(m)
}
