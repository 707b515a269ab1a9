//! Multi-threaded tests of `Store::atomically` (txn.rs), run while the
//! table doubles under them. They check
//! * no lost or duplicated unit: threads move units between accounts in
//!   transactions, auditors sum all accounts in transactions, and every sum
//!   and the final one are exact;
//! * no partial transaction seen by plain readers: writers set a pair of
//!   keys to the same generation in one transaction; readers outside any
//!   transaction read the first key, then the second, and must never see
//!   the second older than the first;
//! * no deadlock: transactions over overlapping key sets in every order
//!   finish (the test would hang otherwise);
//! * a transaction's own reads see its own writes, and nested calls run
//!   under the outer one's buckets.
//!
//! Nothing here measures time.
use amalgam_engine::{Config, Expiry, Store};
use std::sync::atomic::{AtomicU64, Ordering};

const ACCOUNTS: u64 = 64;
const UNITS_PER_ACCOUNT: u64 = 1_000;
const MOVERS: u64 = 3;
const MOVES_PER_THREAD: u64 = if cfg!(debug_assertions) { 3_000 } else { 30_000 };
const PAIRS: u64 = 32;
/// Fresh keys inserted while the test runs, to make the table double.
const GROWTH_KEYS: u64 = if cfg!(debug_assertions) { 60_000 } else { 400_000 };
/// Every checker (auditor, plain reader) runs at least this many checks,
/// and goes on until the writers finish: however the threads are
/// scheduled, the checks happen (a checker that only looped "while the
/// writers run" could find them already done and check nothing).
const MIN_CHECKS: u64 = 200;

fn account(i: u64) -> Vec<u8> {
    format!("acct:{i}").into_bytes()
}

fn read_u64(store: &Store, key: &[u8]) -> u64 {
    store.get(key, |it| std::str::from_utf8(it.value()).unwrap().parse::<u64>().unwrap()).expect("the key exists")
}

fn put_u64(store: &Store, key: &[u8], v: u64) {
    store.set(key, v.to_string().as_bytes(), 0, Expiry::Never).unwrap();
}

/// A small table, so the growth thread's inserts double it several times
/// during the run.
fn small_store() -> Store {
    Store::new(Config { initial_buckets_log2: 4, ..Config::default() }).unwrap()
}

/// A xorshift generator per thread (no dependency, reproducible).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn transfers_conserve_units_while_the_table_doubles() {
    let store = small_store();
    for i in 0..ACCOUNTS {
        put_u64(&store, &account(i), UNITS_PER_ACCOUNT);
    }
    let movers_done = AtomicU64::new(0);
    let audits = AtomicU64::new(0);
    let all: Vec<Vec<u8>> = (0..ACCOUNTS).map(account).collect();
    std::thread::scope(|s| {
        for t in 0..MOVERS {
            let (store, movers_done) = (&store, &movers_done);
            s.spawn(move || {
                let mut rng = Rng(0x9e37_79b9 + t);
                for _ in 0..MOVES_PER_THREAD {
                    let (a, b) = (rng.next() % ACCOUNTS, rng.next() % ACCOUNTS);
                    let (ka, kb) = (account(a), account(b));
                    store.atomically(&[&ka, &kb], || {
                        let va = read_u64(store, &ka);
                        if va == 0 || a == b {
                            return;
                        }
                        put_u64(store, &ka, va - 1);
                        let vb = read_u64(store, &kb);
                        put_u64(store, &kb, vb + 1);
                    });
                }
                movers_done.fetch_add(1, Ordering::Relaxed);
            });
        }
        let (store, movers_done, audits, all) = (&store, &movers_done, &audits, &all);
        s.spawn(move || {
            for n in 0.. {
                if n >= MIN_CHECKS && movers_done.load(Ordering::Relaxed) == MOVERS {
                    break;
                }
                let sum: u64 = store.atomically(all, || all.iter().map(|k| read_u64(store, k)).sum());
                assert_eq!(sum, ACCOUNTS * UNITS_PER_ACCOUNT, "an audit saw a transfer half-done");
                audits.fetch_add(1, Ordering::Relaxed);
            }
        });
        s.spawn(move || {
            for i in 0..GROWTH_KEYS {
                store.set(format!("grow:{i}").as_bytes(), b"x", 0, Expiry::Never).unwrap();
            }
        });
    });
    assert!(audits.load(Ordering::Relaxed) >= MIN_CHECKS);
    let sum: u64 = all.iter().map(|k| read_u64(&store, k)).sum();
    assert_eq!(sum, ACCOUNTS * UNITS_PER_ACCOUNT);
    assert!(store.len() as u64 >= GROWTH_KEYS, "the growth keys are all there");
}

#[test]
fn plain_readers_never_see_half_a_transaction() {
    let store = small_store();
    let first = |p: u64| format!("pair:{p}:a").into_bytes();
    let second = |p: u64| format!("pair:{p}:b").into_bytes();
    for p in 0..PAIRS {
        put_u64(&store, &first(p), 0);
        put_u64(&store, &second(p), 0);
    }
    let writers_done = AtomicU64::new(0);
    let checks = AtomicU64::new(0);
    std::thread::scope(|s| {
        for t in 0..2u64 {
            let (store, writers_done) = (&store, &writers_done);
            s.spawn(move || {
                let mut rng = Rng(77 + t);
                for g in 1..=MOVES_PER_THREAD {
                    let p = rng.next() % PAIRS;
                    let (a, b) = (first(p), second(p));
                    store.atomically(&[&b, &a], || {
                        // Generations only grow: take the larger of the
                        // two writers' next values.
                        let next = read_u64(store, &a).max(g);
                        put_u64(store, &a, next);
                        put_u64(store, &b, next);
                    });
                }
                writers_done.fetch_add(1, Ordering::Relaxed);
            });
        }
        for t in 0..2u64 {
            let (store, writers_done, checks) = (&store, &writers_done, &checks);
            s.spawn(move || {
                let mut rng = Rng(991 + t);
                for n in 0.. {
                    if n >= MIN_CHECKS && writers_done.load(Ordering::Relaxed) == 2 {
                        break;
                    }
                    let p = rng.next() % PAIRS;
                    let a = read_u64(store, &first(p));
                    let b = read_u64(store, &second(p));
                    assert!(b >= a, "pair {p}: read a={a} then b={b}: a transaction was seen half-done");
                    checks.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        let store = &store;
        s.spawn(move || {
            for i in 0..GROWTH_KEYS {
                store.set(format!("grow:{i}").as_bytes(), b"x", 0, Expiry::Never).unwrap();
            }
        });
    });
    assert!(checks.load(Ordering::Relaxed) >= 2 * MIN_CHECKS);
    for p in 0..PAIRS {
        assert_eq!(read_u64(&store, &first(p)), read_u64(&store, &second(p)));
    }
}

#[test]
fn overlapping_key_sets_in_any_order_finish() {
    let store = small_store();
    let keys: Vec<Vec<u8>> = (0..16).map(|i| format!("k{i}").into_bytes()).collect();
    for k in &keys {
        put_u64(&store, k, 0);
    }
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let (store, keys) = (&store, &keys);
            s.spawn(move || {
                let mut rng = Rng(5 + t);
                for _ in 0..MOVES_PER_THREAD {
                    // 2-6 keys in a random order, duplicates allowed.
                    let n = 2 + (rng.next() % 5) as usize;
                    let set: Vec<&Vec<u8>> = (0..n).map(|_| &keys[(rng.next() % 16) as usize]).collect();
                    store.atomically(&set, || {
                        for k in &set {
                            let v = read_u64(store, k);
                            put_u64(store, k, v + 1);
                        }
                    });
                }
            });
        }
    });
    let total: u64 = keys.iter().map(|k| read_u64(&store, k)).sum();
    // Each transaction added one per listed key, duplicates included.
    assert!(total >= 4 * MOVES_PER_THREAD * 2);
}

#[test]
fn a_transaction_reads_its_own_writes_and_nests() {
    let store = small_store();
    let r = store.atomically(&[&b"x"[..], b"y"], || {
        assert!(store.get(b"x", |_| ()).is_none());
        put_u64(&store, b"x", 1);
        let inner = store.atomically(&[&b"y"[..]], || {
            put_u64(&store, b"y", read_u64(&store, b"x") + 1);
            read_u64(&store, b"y")
        });
        store.delete(b"x").unwrap();
        assert!(store.get(b"x", |_| ()).is_none());
        inner
    });
    assert_eq!(r, 2);
    assert_eq!(read_u64(&store, b"y"), 2);
    // The buckets are free again: plain writes and reads go through.
    put_u64(&store, b"x", 5);
    assert_eq!(read_u64(&store, b"x"), 5);
}

#[test]
fn stamps_change_with_every_write_and_deadline() {
    let store = Store::new(Config::default()).unwrap();
    let stamp = |k: &[u8]| store.get(k, |it| it.stamp());
    store.set(b"s", b"v", 0, Expiry::Never).unwrap();
    let a = stamp(b"s").unwrap();
    assert_eq!(stamp(b"s").unwrap(), a, "a read changes nothing");
    store.set(b"s", b"v", 0, Expiry::Never).unwrap();
    let b = stamp(b"s").unwrap();
    assert_ne!(a, b, "a rewrite of the same value");
    store.touch(b"s", Expiry::At(store.now() + 100)).unwrap();
    assert_ne!(stamp(b"s").unwrap(), b, "a new deadline");
}
