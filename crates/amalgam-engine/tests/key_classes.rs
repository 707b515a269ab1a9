//! Key classes (key_classes.rs): the per-class counts the write path
//! keeps against a walk of the index, over every path a key comes into
//! being or goes by — SET of a new key, overwrite, DEL, RENAME, RESTORE,
//! a collection's creation and removal, expiry, eviction, FLUSHALL —
//! and a property test of random mixes of them.

use amalgam_engine::evict::Eviction;
use amalgam_engine::namespace::{encode, name_in};
use amalgam_engine::{Config, Expiry, NewValue, Object, Store, Update};
use proptest::prelude::*;
use std::any::Any;
use std::time::{Duration, Instant};

const CLASSES: usize = 16;
/// How long a test waits for the maintenance thread's sweeps.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(30);

fn class(name: &[u8]) -> u16 {
    (name.iter().map(|&b| u32::from(b)).sum::<u32>() % CLASSES as u32) as u16
}

fn counted(config: Config) -> Store {
    let store = Store::new(config).unwrap();
    store.count_key_classes(class, CLASSES).unwrap();
    store
}

/// Live namespace-0 items per class, and every live item, by a walk.
fn walk(store: &Store) -> (Vec<u64>, u64) {
    let mut by_class = vec![0u64; CLASSES];
    let mut all = 0;
    let mut cursor = 0;
    loop {
        cursor = store.scan(cursor, |it| {
            all += 1;
            if let Some(name) = name_in(0, it.key()) {
                by_class[class(name) as usize] += 1;
            }
        });
        if cursor == 0 {
            break;
        }
    }
    (by_class, all)
}

/// Waits until the index holds only live items (the sweeps have unlinked
/// what expired or was flushed) and the counts are known, then checks
/// them against a walk.
fn check(store: &Store) {
    let start = Instant::now();
    loop {
        let (by_class, all) = walk(store);
        let counts: Option<Vec<u64>> = (0..CLASSES).map(|c| store.key_class_len(c)).collect();
        if store.len() as u64 == all {
            if let Some(counts) = counts {
                assert_eq!(counts, by_class);
                return;
            }
        }
        assert!(start.elapsed() < SETTLE_TIMEOUT, "the sweeps did not settle: {} items, {all} live", store.len());
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A collection's object.
struct Thing;

impl Object for Thing {
    fn mem_bytes(&self) -> usize {
        8
    }
    fn kind(&self) -> u8 {
        42
    }
    fn encode(&self, _out: &mut Vec<u8>) {}
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

fn put_object(store: &Store, key: &[u8]) {
    store
        .update(key, |_| {
            let put = Update::Put {
                value: NewValue::Object(Box::new(Thing)),
                flags: 0,
                expiry: Expiry::Never,
                fresh_cas: true,
                marks: 0,
            };
            (put, ())
        })
        .unwrap();
}

fn remove(store: &Store, key: &[u8]) {
    store.update(key, |_| (Update::Remove, ())).unwrap();
}

#[test]
fn every_path_counts() {
    let store = counted(Config::default());
    assert!(store.counts_key_classes());
    assert!(store.count_key_classes(class, CLASSES).is_err(), "once only");
    // SET of new keys, overwrites, ADD, DEL.
    for i in 0..200u32 {
        store.set(format!("k{i}").as_bytes(), b"v", 0, Expiry::Never).unwrap();
    }
    for i in 0..100u32 {
        store.set(format!("k{i}").as_bytes(), b"w", 0, Expiry::Never).unwrap();
    }
    store.add(b"added", b"v", 0, Expiry::Never).unwrap();
    for i in 0..50u32 {
        store.delete(format!("k{i}").as_bytes()).unwrap();
    }
    check(&store);
    // Other namespaces are not counted; namespace 0's escaped names are.
    store.set(&encode(3, b"k1"), b"v", 0, Expiry::Never).unwrap();
    store.set(&encode(0, b"\xffk"), b"v", 0, Expiry::Never).unwrap();
    assert_eq!(store.key_class_len(class(b"\xffk") as usize), Some(walk(&store).0[class(b"\xffk") as usize]));
    check(&store);
    // RENAME onto a new key and onto an existing one; RESTORE.
    store.rename(b"k60", b"renamed", false).unwrap();
    store.rename(b"k61", b"k62", false).unwrap();
    store.restore(b"restored", b"v", 0, Expiry::Never, 0).unwrap();
    check(&store);
    // A collection created, replaced, removed.
    put_object(&store, b"list");
    put_object(&store, b"list");
    put_object(&store, b"set");
    remove(&store, b"set");
    check(&store);
    // Expiry: unlinked by the sweep, and by a write that finds the key dead.
    let soon = Expiry::At(store.now() + 2);
    for i in 100..150u32 {
        store.set(format!("k{i}").as_bytes(), b"v", 0, soon).unwrap();
    }
    store.advance_clock(10);
    store.set(b"k100", b"again", 0, Expiry::Never).unwrap();
    store.delete(b"k101").unwrap_err();
    check(&store);
    // FLUSHALL: unknown until its sweep is done, then 0 everywhere.
    store.flush_all();
    check(&store);
    assert!((0..CLASSES).all(|c| store.key_class_len(c) == Some(0)));
    store.set(b"after", b"v", 0, Expiry::Never).unwrap();
    check(&store);
    assert_eq!(store.key_class_len(CLASSES), None, "out of range");
}

#[test]
fn items_already_stored_are_counted() {
    let store = Store::new(Config::default()).unwrap();
    for i in 0..300u32 {
        store.set(format!("k{i}").as_bytes(), b"v", 0, Expiry::Never).unwrap();
    }
    assert_eq!(store.key_class_len(0), None, "not counted yet");
    store.count_key_classes(class, CLASSES).unwrap();
    check(&store);
}

#[test]
fn eviction_counts() {
    let store = counted(Config {
        eviction: Eviction::Clock,
        memory_limit_bytes: 8 << 20,
        background_eviction: false,
        ..Config::default()
    });
    let value = vec![b'x'; 1000];
    for i in 0..40_000u32 {
        let _ = store.set(format!("k{i}").as_bytes(), &value, 0, Expiry::Never);
    }
    assert!(store.stats().evictions > 0, "the test evicts");
    check(&store);
}

#[derive(Debug, Clone)]
enum Op {
    Set(u8),
    SetSoon(u8),
    Delete(u8),
    Rename(u8, u8),
    Object(u8),
    Remove(u8),
    Restore(u8),
    OtherNamespace(u8),
    Advance,
    Flush,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => any::<u8>().prop_map(Op::Set),
        2 => any::<u8>().prop_map(Op::SetSoon),
        4 => any::<u8>().prop_map(Op::Delete),
        2 => (any::<u8>(), any::<u8>()).prop_map(|(a, b)| Op::Rename(a, b)),
        2 => any::<u8>().prop_map(Op::Object),
        2 => any::<u8>().prop_map(Op::Remove),
        1 => any::<u8>().prop_map(Op::Restore),
        1 => any::<u8>().prop_map(Op::OtherNamespace),
        1 => Just(Op::Advance),
        1 => Just(Op::Flush),
    ]
}

fn key(k: u8) -> Vec<u8> {
    format!("key{}", k % 64).into_bytes()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn counts_match_a_walk(ops in proptest::collection::vec(op(), 1..200)) {
        let store = counted(Config::default());
        for op in ops {
            match op {
                Op::Set(k) => { store.set(&key(k), b"v", 0, Expiry::Never).unwrap(); }
                Op::SetSoon(k) => { store.set(&key(k), b"v", 0, Expiry::At(store.now() + 2)).unwrap(); }
                Op::Delete(k) => { let _ = store.delete(&key(k)); }
                Op::Rename(a, b) => {
                    if key(a) != key(b) {
                        let _ = store.rename(&key(a), &key(b), b % 2 == 0);
                    }
                }
                Op::Object(k) => put_object(&store, &key(k)),
                Op::Remove(k) => remove(&store, &key(k)),
                Op::Restore(k) => { store.restore(&key(k), b"r", 0, Expiry::Never, 0).unwrap(); }
                Op::OtherNamespace(k) => { store.set(&encode(1 + k % 3, &key(k)), b"v", 0, Expiry::Never).unwrap(); }
                Op::Advance => store.advance_clock(5),
                Op::Flush => store.flush_all(),
            }
        }
        check(&store);
    }
}
