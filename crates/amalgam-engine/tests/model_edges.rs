//! Model-based tests of the edges `model.rs` leaves out: values at and
//! around the item size limit (small and large-item pools), append and
//! prepend across the limit, touch/gat changing an item's header size,
//! memcached's expiry rules at their boundaries (relative up to 30 days,
//! absolute beyond, negative, zero) and delayed `flush_all`.
//!
//! The size limit counts header + key + value and the header grows by 4
//! bytes with flags and with an expiry, so the largest value depends on
//! the key length and on whether flags and an expiry are set. The tests
//! find that largest value by asking a scratch store, and check that the
//! store under test takes exactly up to it.
use amalgam_engine::{Config, Error, Expiry, Store, KEY_BYTES_MAX, RELATIVE_EXPIRY_SECONDS_MAX, SMALL_ITEM_BYTES_MAX};
use proptest::prelude::*;
use std::collections::HashMap;
use std::sync::OnceLock;

/// The default `-I`: large enough that values near the limit go through
/// the large-item (system allocator) path, not the size classes.
const ITEM_SIZE_MAX: usize = 1 << 20;
const KEYS: usize = 4;
const _: () = assert!(ITEM_SIZE_MAX > SMALL_ITEM_BYTES_MAX);

fn config() -> Config {
    Config {
        memory_limit_bytes: 256 << 20,
        item_size_max_bytes: ITEM_SIZE_MAX,
        initial_buckets_log2: 1,
        hash_seed: Some(11),
        ..Config::default()
    }
}

fn key(i: usize) -> Vec<u8> {
    match i {
        0 => b"k".to_vec(),
        1 => vec![b'x'; KEY_BYTES_MAX],
        _ => format!("key:{i}").into_bytes(),
    }
}

/// Largest value a key of `klen` bytes can hold with (or without) flags
/// and an expiry, found by bisection on a scratch store.
fn limit(klen: usize, flags: bool, expiry: bool) -> usize {
    static LIMITS: OnceLock<HashMap<(usize, bool, bool), usize>> = OnceLock::new();
    let all = LIMITS.get_or_init(|| {
        let store = Store::new(config()).unwrap();
        let mut m = HashMap::new();
        for k in 0..KEYS {
            let klen = key(k).len();
            for f in [false, true] {
                for e in [false, true] {
                    let scratch = vec![b'Z'; klen];
                    let (fl, ex) = (u32::from(f), if e { Expiry::At(u32::MAX) } else { Expiry::Never });
                    let fits = |n: usize| match store.set(&scratch, &vec![0; n], fl, ex) {
                        Ok(_) => true,
                        Err(Error::TooLarge) => false,
                        Err(e) => panic!("scratch set of {n} bytes: {e}"),
                    };
                    let (mut lo, mut hi) = (0, ITEM_SIZE_MAX); // fits(lo), !fits(hi)
                    assert!(fits(lo) && !fits(hi));
                    while hi - lo > 1 {
                        let mid = (lo + hi) / 2;
                        if fits(mid) {
                            lo = mid
                        } else {
                            hi = mid
                        }
                    }
                    m.insert((klen, f, e), lo);
                    store.delete(&scratch).unwrap();
                }
            }
        }
        m
    });
    all[&(klen, flags, expiry)]
}

/// A value of `len` bytes whose bytes depend on `seed` and position (so a
/// wrong copy or a wrong length shows).
fn bytes(len: usize, seed: u8) -> Vec<u8> {
    let mut v = vec![seed; len];
    for (i, b) in v.iter_mut().enumerate().take(64) {
        *b = seed.wrapping_add(i as u8);
    }
    if len > 64 {
        let n = len;
        for (i, b) in v[n - 64..].iter_mut().enumerate() {
            *b = seed ^ (i as u8);
        }
    }
    v
}

#[derive(Clone, Copy, Debug)]
enum Len {
    Fixed(usize),
    /// The key's limit (for these flags and expiry) plus this delta.
    Limit(i32),
}

#[derive(Clone, Copy, Debug)]
enum Exp {
    Never,
    In(i64),
    /// now + seconds, as an absolute unix time.
    AbsIn(i64),
    /// Exactly 30 days: still relative.
    ThirtyDays,
    /// 30 days + 1 s: an absolute time in 1970, already past.
    ThirtyDaysPlusOne,
    Negative,
}

#[derive(Clone, Debug)]
enum Op {
    Set(usize, Len, u8, bool, Exp),
    Append(usize, Len, u8),
    Prepend(usize, Len, u8),
    Touch(usize, Exp),
    Gat(usize, Exp),
    Delete(usize),
    Get(usize),
    Advance(i64),
    FlushAt(i64),
}

fn len() -> impl Strategy<Value = Len> {
    prop_oneof![
        Just(Len::Fixed(0)),
        Just(Len::Fixed(1)),
        (2usize..300).prop_map(Len::Fixed),
        Just(Len::Fixed(SMALL_ITEM_BYTES_MAX - 100)),
        Just(Len::Fixed(SMALL_ITEM_BYTES_MAX + 100)),
        (-3i32..=2).prop_map(Len::Limit),
    ]
}

fn exp() -> impl Strategy<Value = Exp> {
    prop_oneof![
        3 => Just(Exp::Never),
        2 => prop_oneof![Just(10i64), Just(100)].prop_map(Exp::In),
        1 => Just(Exp::AbsIn(100)),
        1 => Just(Exp::ThirtyDays),
        1 => Just(Exp::ThirtyDaysPlusOne),
        1 => Just(Exp::Negative),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let k = 0..KEYS;
    prop_oneof![
        6 => (k.clone(), len(), any::<u8>(), any::<bool>(), exp()).prop_map(|(k, l, s, f, e)| Op::Set(k, l, s, f, e)),
        2 => (k.clone(), len(), any::<u8>()).prop_map(|(k, l, s)| Op::Append(k, l, s)),
        2 => (k.clone(), len(), any::<u8>()).prop_map(|(k, l, s)| Op::Prepend(k, l, s)),
        2 => (k.clone(), exp()).prop_map(|(k, e)| Op::Touch(k, e)),
        2 => (k.clone(), exp()).prop_map(|(k, e)| Op::Gat(k, e)),
        1 => k.clone().prop_map(Op::Delete),
        3 => k.clone().prop_map(Op::Get),
        1 => prop_oneof![Just(0i64), Just(50), Just(200)].prop_map(Op::Advance),
        1 => prop_oneof![Just(0i64), Just(30)].prop_map(Op::FlushAt),
    ]
}

#[derive(Clone, Debug, PartialEq)]
struct Entry {
    value: Vec<u8>,
    flags: u32,
    expires: u32,
    cas: u64,
}

fn expiry(e: Exp, now: u32) -> Expiry {
    let exptime = match e {
        Exp::Never => 0,
        Exp::In(s) => s,
        Exp::AbsIn(s) => i64::from(now) + s,
        Exp::ThirtyDays => RELATIVE_EXPIRY_SECONDS_MAX,
        Exp::ThirtyDaysPlusOne => RELATIVE_EXPIRY_SECONDS_MAX + 1,
        Exp::Negative => -1,
    };
    let x = Expiry::from_memcached(exptime, now);
    // memcached's rules, independently of the engine's conversion.
    let want = match e {
        Exp::Never => Expiry::Never,
        Exp::In(s) => Expiry::At(now + s as u32),
        Exp::AbsIn(s) => Expiry::At(now + s as u32),
        Exp::ThirtyDays => Expiry::At(now + RELATIVE_EXPIRY_SECONDS_MAX as u32),
        Exp::ThirtyDaysPlusOne => Expiry::At(RELATIVE_EXPIRY_SECONDS_MAX as u32 + 1),
        Exp::Negative => x,
    };
    assert_eq!(x, want, "{e:?}");
    if matches!(e, Exp::Negative | Exp::ThirtyDaysPlusOne) {
        assert!(x.is_expired(now));
    }
    x
}

fn raw(x: Expiry) -> u32 {
    match x {
        Expiry::Never => 0,
        Expiry::At(t) => t,
        Expiry::AtMillis(ms) => unreachable!("the model sets whole seconds only, got {ms} ms"),
    }
}

fn read(store: &Store, k: usize) -> Option<Entry> {
    store.get(&key(k), |it| Entry {
        value: it.value().to_vec(),
        flags: it.flags(),
        expires: raw(it.expiry()),
        cas: it.cas(),
    })
}

struct Model {
    map: HashMap<usize, Entry>,
    /// Unix time of a pending delayed flush.
    flush_at: Option<u32>,
}

impl Model {
    /// Applies a due delayed flush and drops an expired entry; the live
    /// entry of `k`, if any.
    fn live(&mut self, k: usize, now: u32) -> Option<&mut Entry> {
        if self.flush_at.is_some_and(|t| t <= now) {
            self.map.clear();
            self.flush_at = None;
        }
        if self.map.get(&k).is_some_and(|e| e.expires != 0 && e.expires <= now) {
            self.map.remove(&k);
        }
        self.map.get_mut(&k)
    }
}

fn run(ops: &[Op]) {
    let store = Store::new(config()).unwrap();
    let mut m = Model { map: HashMap::new(), flush_at: None };
    let mut seen_cas = std::collections::HashSet::new();
    for op in ops {
        let now = store.now();
        match *op {
            Op::Set(k, l, seed, has_flags, e) => {
                let x = expiry(e, now);
                let flags = if has_flags { 0x8000_0001 } else { 0 };
                let klen = key(k).len();
                let max = limit(klen, has_flags, raw(x) != 0);
                let n = match l {
                    Len::Fixed(n) => n,
                    Len::Limit(d) => (max as i64 + i64::from(d)) as usize,
                };
                let v = bytes(n, seed);
                let r = store.set(&key(k), &v, flags, x);
                m.live(k, now);
                if n > max {
                    assert_eq!(r, Err(Error::TooLarge), "set of {n} bytes, limit {max}");
                } else {
                    let cas = r.unwrap_or_else(|e| panic!("set of {n} bytes, limit {max}: {e}"));
                    assert!(seen_cas.insert(cas), "CAS {cas} handed out twice");
                    m.map.remove(&k);
                    if !x.is_expired(now) {
                        m.map.insert(k, Entry { value: v, flags, expires: raw(x), cas });
                    }
                }
            }
            Op::Append(k, l, seed) | Op::Prepend(k, l, seed) => {
                let append = matches!(op, Op::Append(..));
                let klen = key(k).len();
                let cur = m.live(k, now).cloned();
                let (max, curlen) = match &cur {
                    Some(e) => (limit(klen, e.flags != 0, e.expires != 0), e.value.len()),
                    None => (limit(klen, false, false), 0),
                };
                let n = match l {
                    Len::Fixed(n) => n,
                    // So that the result lands at the limit + d.
                    Len::Limit(d) => (max as i64 + i64::from(d) - curlen as i64).max(0) as usize,
                };
                let d = bytes(n, seed);
                let r = if append { store.append(&key(k), &d) } else { store.prepend(&key(k), &d) };
                match cur {
                    None => assert_eq!(r, Err(Error::NotStored)),
                    Some(_) if curlen + n > max => {
                        assert_eq!(r, Err(Error::TooLarge), "{curlen} + {n} bytes, limit {max}")
                    }
                    Some(_) => {
                        let cas = r.unwrap_or_else(|e| panic!("{curlen} + {n} bytes, limit {max}: {e}"));
                        assert!(seen_cas.insert(cas), "CAS {cas} handed out twice");
                        let e = m.map.get_mut(&k).unwrap();
                        if append {
                            e.value.extend_from_slice(&d);
                        } else {
                            e.value.splice(0..0, d);
                        }
                        e.cas = cas;
                    }
                }
            }
            Op::Touch(k, e) | Op::Gat(k, e) => {
                let x = expiry(e, now);
                let gat = matches!(op, Op::Gat(..));
                let got = if gat {
                    store.touch_and_get(&key(k), x, |it| Entry {
                        value: it.value().to_vec(),
                        flags: it.flags(),
                        expires: raw(it.expiry()),
                        cas: it.cas(),
                    })
                } else {
                    match store.touch(&key(k), x) {
                        Err(Error::NotFound) => None,
                        r => Some(r.map(|()| Entry { value: Vec::new(), flags: 0, expires: 0, cas: 0 })),
                    }
                };
                match m.live(k, now) {
                    None => assert_eq!(got, None),
                    Some(ent) => {
                        // memcached's touch never fails on a present item:
                        // the header may grow by an expiry field, and the
                        // item must still be accepted.
                        let got = got
                            .expect("touch of a live key")
                            .unwrap_or_else(|e| panic!("touch of a {}-byte value to {x:?}: {e}", ent.value.len()));
                        ent.expires = raw(x);
                        if gat {
                            // The CAS unique does not change on touch.
                            assert_eq!(got, *ent);
                        }
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
            Op::Advance(s) => store.advance_clock(s),
            Op::FlushAt(0) => {
                store.flush_all();
                m.map.clear();
                m.flush_at = None;
            }
            Op::FlushAt(d) => {
                store.flush_all_at(now + d as u32);
                // A pending flush already due has taken effect; the new
                // one replaces only a flush still to come.
                m.live(usize::MAX, now);
                m.flush_at = Some(now + d as u32);
            }
        }
    }
    let now = store.now();
    for k in 0..KEYS {
        assert_eq!(read(&store, k), m.live(k, now).cloned(), "final contents, key {k}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn size_limits_and_expiry_edges_match_the_model(ops in proptest::collection::vec(op(), 1..60)) {
        run(&ops);
    }
}

#[test]
fn limits_are_what_the_item_layout_gives() {
    // Flags and an expiry each cost 4 bytes of header; a longer key costs
    // its length.
    for k in 0..KEYS {
        let klen = key(k).len();
        let bare = limit(klen, false, false);
        assert_eq!(limit(klen, true, false), bare - 4);
        assert_eq!(limit(klen, false, true), bare - 4);
        assert_eq!(limit(klen, true, true), bare - 8);
        assert!(bare < ITEM_SIZE_MAX - klen && bare > ITEM_SIZE_MAX - klen - 32);
    }
}

#[test]
fn a_value_at_the_limit_round_trips_and_one_byte_more_is_refused() {
    let store = Store::new(config()).unwrap();
    for k in [0, 1] {
        let max = limit(key(k).len(), false, false);
        let v = bytes(max, 7);
        let cas = store.set(&key(k), &v, 0, Expiry::Never).unwrap();
        assert_eq!(read(&store, k).map(|e| (e.value == v, e.cas)), Some((true, cas)));
        assert_eq!(store.set(&key(k), &bytes(max + 1, 8), 0, Expiry::Never), Err(Error::TooLarge));
        let other = vec![b'A'; key(k).len()];
        assert_eq!(store.add(&other, &bytes(max + 1, 8), 0, Expiry::Never), Err(Error::TooLarge));
        assert_eq!(store.append(&key(k), b"x"), Err(Error::TooLarge));
        assert_eq!(store.prepend(&key(k), b"x"), Err(Error::TooLarge));
        assert_eq!(read(&store, k).map(|e| e.value == v), Some(true), "a refused write changed the item");
        assert_eq!(store.get(&other, |_| ()), None);
        // A value of several times the limit, and the largest usize, are
        // refused without allocating.
        assert_eq!(store.set(&key(k), &vec![0; 4 * ITEM_SIZE_MAX], 0, Expiry::Never), Err(Error::TooLarge));
    }
}

#[test]
fn touch_may_add_an_expiry_to_an_item_at_the_limit() {
    // memcached's touch and gat change the expiry in place: they never
    // fail for size. Amalgam's item header grows by 4 bytes when an
    // expiry is added, which must not make touch refuse the item.
    let store = Store::new(config()).unwrap();
    let max = limit(1, true, false);
    let v = bytes(max, 3);
    let cas = store.set(b"k", &v, 9, Expiry::Never).unwrap();
    let far = Expiry::from_memcached(1000, store.now());
    assert_eq!(store.touch(b"k", far), Ok(()));
    assert_eq!(store.get(b"k", |it| (it.value() == v, it.flags(), it.expiry(), it.cas())), Some((true, 9, far, cas)));
    let got = store.touch_and_get(b"k", Expiry::Never, |it| it.cas());
    assert_eq!(got, Some(Ok(cas)));
    let got = store.touch_and_get(b"k", far, |it| it.value().len());
    assert_eq!(got, Some(Ok(max)));
}

#[test]
fn expiry_follows_memcached_at_the_thirty_day_boundary() {
    let store = Store::new(config()).unwrap();
    let now = store.now();
    let thirty = Expiry::from_memcached(RELATIVE_EXPIRY_SECONDS_MAX, now);
    assert_eq!(thirty, Expiry::At(now + RELATIVE_EXPIRY_SECONDS_MAX as u32));
    store.set(b"rel", b"v", 0, thirty).unwrap();
    // One second more is an absolute time in January 1970: gone at once.
    let abs = Expiry::from_memcached(RELATIVE_EXPIRY_SECONDS_MAX + 1, now);
    assert!(abs.is_expired(now));
    store.set(b"old", b"v", 0, Expiry::Never).unwrap();
    store.set(b"old", b"v2", 0, abs).unwrap();
    assert_eq!(store.get(b"old", |_| ()), None, "a set with a past absolute time must remove the key");
    assert_eq!(store.add(b"old", b"v3", 0, Expiry::Never).map(|_| ()), Ok(()));
    // Negative: expired immediately, also for touch.
    assert_eq!(store.touch(b"old", Expiry::from_memcached(-1, now)), Ok(()));
    assert_eq!(store.get(b"old", |_| ()), None);
    assert_eq!(store.touch(b"old", Expiry::Never), Err(Error::NotFound));
    // Huge exptimes saturate instead of wrapping into the past.
    assert_eq!(Expiry::from_memcached(i64::MAX, now), Expiry::At(u32::MAX));
    store.set(b"far", b"v", 0, Expiry::from_memcached(i64::MAX, now)).unwrap();
    // The relative item lives exactly until its second.
    store.advance_clock(RELATIVE_EXPIRY_SECONDS_MAX - 5);
    assert!(store.get(b"rel", |_| ()).is_some());
    store.advance_clock(10);
    assert_eq!(store.get(b"rel", |_| ()), None);
    assert!(store.get(b"far", |_| ()).is_some());
}

#[test]
fn a_delayed_flush_hides_older_items_as_soon_as_it_is_due() {
    let store = Store::new(config()).unwrap();
    store.set(b"a", b"1", 0, Expiry::Never).unwrap();
    store.flush_all_at(store.now() + 10);
    assert!(store.get(b"a", |_| ()).is_some(), "flushed before its time");
    store.advance_clock(11);
    // memcached compares each item against the flush time on access; the
    // item must be gone now, not only once the maintenance thread woke.
    assert_eq!(store.get(b"a", |_| ()), None, "a due delayed flush left an item visible");
    assert_eq!(store.delete(b"a"), Err(Error::NotFound));
}

#[test]
fn a_delayed_flush_spares_items_stored_after_it_was_due() {
    let store = Store::new(config()).unwrap();
    store.set(b"a", b"1", 0, Expiry::Never).unwrap();
    store.flush_all_at(store.now() + 10);
    store.advance_clock(11);
    // Stored after the flush time: must survive it, however late the
    // maintenance thread gets to the flush.
    store.set(b"b", b"2", 0, Expiry::Never).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(600));
    assert_eq!(store.get(b"a", |_| ()), None);
    assert_eq!(store.get(b"b", |it| it.value().to_vec()), Some(b"2".to_vec()), "a set after the flush time was lost");
}

#[test]
fn counters_keep_memcached_shapes() {
    let store = Store::new(config()).unwrap();
    let e = Expiry::from_memcached(1000, store.now());
    store.set(b"n", b"99", 5, e).unwrap();
    let c0 = store.get(b"n", |it| it.cas()).unwrap();
    assert_eq!(store.incr(b"n", 1), Ok(100));
    assert_eq!(store.get(b"n", |it| (it.value().to_vec(), it.flags(), it.expiry())), Some((b"100".to_vec(), 5, e)));
    assert_eq!(store.decr(b"n", 1), Ok(99));
    assert_eq!(store.get(b"n", |it| it.value().to_vec()).unwrap(), b"99 ");
    assert_eq!(store.incr(b"n", 1), Ok(100));
    assert_eq!(store.get(b"n", |it| it.value().to_vec()).unwrap(), b"100");
    assert_ne!(store.get(b"n", |it| it.cas()).unwrap(), c0);
    // Wrap at 2^64 and floor at 0.
    store.set(b"n", u64::MAX.to_string().as_bytes(), 0, Expiry::Never).unwrap();
    assert_eq!(store.incr(b"n", 1), Ok(0));
    assert_eq!(store.get(b"n", |it| it.value().len()), Some(20), "width kept, padded");
    assert_eq!(store.decr(b"n", 1), Ok(0));
    assert_eq!(store.incr(b"n", u64::MAX), Ok(u64::MAX));
    // Not numbers: empty, too large for u64, letters, a sign.
    for v in [&b""[..], b"18446744073709551616", b"12abc", b"abc", b"-1", b"1.5"] {
        store.set(b"s", v, 0, Expiry::Never).unwrap();
        assert_eq!(store.incr(b"s", 1), Err(Error::NonNumeric), "{:?}", String::from_utf8_lossy(v));
        assert_eq!(store.decr(b"s", 1), Err(Error::NonNumeric), "{:?}", String::from_utf8_lossy(v));
        assert_eq!(store.get(b"s", |it| it.value().to_vec()).unwrap(), v, "a refused incr changed the value");
    }
    assert_eq!(store.incr(b"missing", 1), Err(Error::NotFound));
    // A counter whose item has expired is not found.
    store.set(b"t", b"1", 0, Expiry::from_memcached(5, store.now())).unwrap();
    store.advance_clock(6);
    assert_eq!(store.incr(b"t", 1), Err(Error::NotFound));
    assert_eq!(store.len(), 2);
}
