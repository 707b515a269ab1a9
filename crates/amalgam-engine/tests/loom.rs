//! loom models of the concurrency core, run with
//! `RUSTFLAGS="--cfg loom" cargo test -p amalgam-engine --release --test loom`.
//!
//! They drive the real `Table` code (its atomics are loom's under
//! `cfg(loom)`) on a table of one or two buckets with hand-made items:
//! 1. the bucket lock / version protocol: a writer replaces and inserts
//!    while an optimistic reader probes; the reader never misses a key that
//!    is present throughout, and never sees a value that was not written;
//! 2. the expansion hand-off (Mercury §3): the expand thread publishes the
//!    successor and migrates the bucket while a writer updates a key and a
//!    reader looks it up; the update is never lost and the reader never
//!    misses.
#![cfg(loom)]

use amalgam_engine::loom_api::{leak_item, split_hash, value_of, Probe, Table};
use loom::thread;
use std::sync::Arc;

/// The model's hash: the key's first byte picks the bucket bits, tag 7.
fn hash_of(key: &[u8]) -> u64 {
    ((key[0] as u64) << 16) | 7
}

/// Looks `key` up the way the store does: route, probe, follow MOVED,
/// retry a raced miss (bounded), else lock.
fn lookup(t: &Table, key: &[u8]) -> Option<Vec<u8>> {
    let h = hash_of(key);
    let tag = split_hash(h).1;
    let mut t = t.route(h);
    for _ in 0..4 {
        let i = t.index(h);
        match t.probe(i, tag, key) {
            Probe::Hit(p) => return Some(value_of(p)),
            Probe::Miss => return None,
            Probe::Moved => t = t.successor().expect("successor"),
            Probe::Retry => match t.lock(i) {
                Some(g) => return g.find(tag, key).map(|(_, p)| value_of(p)),
                None => t = t.successor().expect("successor"),
            },
        }
    }
    panic!("lookup did not settle");
}

/// Sets `key` the way the store does: route, lock, follow MOVED.
fn set(t: &Table, key: &[u8], value: &[u8]) {
    let h = hash_of(key);
    let tag = split_hash(h).1;
    let mut t = t.route(h);
    for _ in 0..4 {
        let i = t.index(h);
        match t.lock(i) {
            Some(mut g) => {
                let p = leak_item(key, value, 1);
                match g.find(tag, key) {
                    Some((slot, _)) => g.replace(slot, tag, p),
                    None => g.insert(tag, p).expect("room"),
                }
                return;
            }
            None => t = t.successor().expect("successor"),
        }
    }
    panic!("set did not settle");
}

#[test]
fn bucket_lock_and_version_protocol() {
    loom::model(|| {
        let t = Arc::new(Table::new(0).unwrap());
        set(&t, b"a", b"1");
        let w = {
            let t = Arc::clone(&t);
            thread::spawn(move || {
                set(&t, b"a", b"2");
                set(&t, b"b", b"x");
            })
        };
        let a = lookup(&t, b"a");
        assert!(a.as_deref() == Some(b"1") || a.as_deref() == Some(b"2"), "{a:?}");
        let b = lookup(&t, b"b");
        assert!(b.is_none() || b.as_deref() == Some(b"x"));
        w.join().unwrap();
        assert_eq!(lookup(&t, b"a").as_deref(), Some(&b"2"[..]));
        assert_eq!(lookup(&t, b"b").as_deref(), Some(&b"x"[..]));
    });
}

#[test]
fn expansion_hand_off() {
    loom::model(|| {
        let old = Arc::new(Table::new(0).unwrap());
        // Key "a" (0x61) and "b" (0x62) split to different new buckets.
        set(&old, b"a", b"1");
        set(&old, b"b", b"1");
        let expander = {
            let old = Arc::clone(&old);
            thread::spawn(move || {
                let next = Box::into_raw(Box::new(Table::new(1).unwrap()));
                old.set_successor(next);
                old.migrate_bucket(0, &|p| hash_of(&value_key(p))).unwrap();
                old.set_migrated(1);
            })
        };
        let writer = {
            let old = Arc::clone(&old);
            thread::spawn(move || set(&old, b"a", b"2"))
        };
        let seen = lookup(&old, b"b");
        assert_eq!(seen.as_deref(), Some(&b"1"[..]), "b must never be missed");
        expander.join().unwrap();
        writer.join().unwrap();
        // After the expansion the successor is authoritative and holds the
        // writer's update wherever the race put it.
        let next = old.successor().expect("expanded");
        assert_eq!(lookup(next, b"a").as_deref(), Some(&b"2"[..]), "update lost");
        assert_eq!(lookup(next, b"b").as_deref(), Some(&b"1"[..]));
        assert_eq!(lookup(&old, b"a").as_deref(), Some(&b"2"[..]));
        // SAFETY-free teardown: the successor is leaked on purpose (loom
        // models are tiny; the engine frees tables through its epochs).
    });
}

/// The key of a leaked item, for the rehash callback.
fn value_key(p: *const u8) -> Vec<u8> {
    amalgam_engine::loom_api::key_of(p)
}
