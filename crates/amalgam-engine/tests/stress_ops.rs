//! Multi-threaded stress of the read-modify-write operations `stress.rs`
//! leaves out, each while the table expands under it (it starts at 16
//! buckets and background writers keep inserting):
//! * cas: threads increment one counter through get + cas retry loops;
//!   the final count is exact (no two cas calls succeed on one version);
//! * append: threads append tagged records to one key; every record is
//!   there exactly once, each thread's in its own order;
//! * add: threads race to add the same fresh keys; exactly one wins each;
//! * delete/re-add churn with large (> 512 KiB, system-allocated) and
//!   small values while readers check that no value is ever torn;
//! * flush_all while writers run: every write that returns after the
//!   flush returned is visible, and the sweep empties the index;
//! * memory: after all that, deleting everything and reclaiming returns
//!   every pool block and every reserved large item.
//!
//! Sizes shrink in debug builds; nothing here measures time.
use amalgam_engine::{Config, Error, Expiry, Store, SMALL_ITEM_BYTES_MAX};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

const THREADS: u64 = 4;
const OPS: u64 = if cfg!(debug_assertions) { 2_000 } else { 20_000 };
/// Keys the background grower inserts, to keep expansions running.
const GROW_KEYS: u64 = if cfg!(debug_assertions) { 60_000 } else { 400_000 };
const RECLAIM_ATTEMPTS_MAX: usize = 100_000;

fn store() -> Store {
    Store::new(Config { memory_limit_bytes: 1 << 30, initial_buckets_log2: 4, ..Config::default() }).unwrap()
}

fn reclaim_fully(store: &Store) {
    for _ in 0..RECLAIM_ATTEMPTS_MAX {
        if store.reclaim() {
            return;
        }
        std::thread::yield_now();
    }
    panic!("reclaim did not finish in {RECLAIM_ATTEMPTS_MAX} attempts");
}

/// Keys the grower inserts even if told to stop, so at least one
/// expansion (16 buckets, 4 items each) is due in every test.
const GROW_KEYS_MIN: u64 = 5_000;

/// Inserts up to GROW_KEYS keys from a background thread until `stop`
/// (and at least GROW_KEYS_MIN); returns how many it inserted.
fn grow(store: &Store, stop: &AtomicBool) -> u64 {
    let mut n = 0;
    while n < GROW_KEYS && (n < GROW_KEYS_MIN || !stop.load(Ordering::Relaxed)) {
        store.set(format!("grow:{n}").as_bytes(), &n.to_le_bytes(), 0, Expiry::Never).unwrap();
        n += 1;
    }
    n
}

fn checksum(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xCBF2_9CE4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01B3))
}

/// A value of `len` + 16 bytes: a pattern, its length and its checksum.
fn value(len: usize, seed: u64) -> Vec<u8> {
    let mut v: Vec<u8> = (0..len).map(|i| (i as u64).wrapping_mul(seed | 1) as u8).collect();
    v.extend_from_slice(&(len as u64).to_le_bytes());
    let c = checksum(&v);
    v.extend_from_slice(&c.to_le_bytes());
    v
}

fn verify(v: &[u8]) {
    assert!(v.len() >= 16, "value of {} bytes", v.len());
    let (body, sum) = v.split_at(v.len() - 8);
    assert_eq!(checksum(body), u64::from_le_bytes(sum.try_into().unwrap()), "torn value of {} bytes", v.len());
    assert_eq!(u64::from_le_bytes(body[body.len() - 8..].try_into().unwrap()) as usize, v.len() - 16);
}

#[test]
fn cas_increments_are_never_lost() {
    let store = store();
    store.set(b"c", b"0", 0, Expiry::Never).unwrap();
    let stop = AtomicBool::new(false);
    let expansions_before = store.stats().expansions;
    let mut all_cas = Vec::new();
    std::thread::scope(|s| {
        let grower = s.spawn(|| grow(&store, &stop));
        let workers: Vec<_> = (0..THREADS)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    let mut conflicts = 0u64;
                    for _ in 0..OPS {
                        loop {
                            let (n, cas) = store
                                .get(b"c", |it| {
                                    (std::str::from_utf8(it.value()).unwrap().parse::<u64>().unwrap(), it.cas())
                                })
                                .expect("counter present");
                            match store.cas(b"c", (n + 1).to_string().as_bytes(), 0, Expiry::Never, cas) {
                                Ok(c) => {
                                    // Unique, not increasing: each thread draws
                                    // from its own block of CAS values.
                                    assert_ne!(c, cas, "a cas must give the item a new CAS unique");
                                    mine.push(c);
                                    break;
                                }
                                Err(Error::Exists) => conflicts += 1,
                                Err(e) => panic!("cas: {e}"),
                            }
                        }
                    }
                    (mine, conflicts)
                })
            })
            .collect();
        for w in workers {
            all_cas.extend(w.join().unwrap().0);
        }
        stop.store(true, Ordering::Relaxed);
        grower.join().unwrap();
    });
    assert_eq!(store.get(b"c", |it| it.value().to_vec()), Some((THREADS * OPS).to_string().into_bytes()), "lost cas");
    let n = all_cas.len();
    all_cas.sort_unstable();
    all_cas.dedup();
    assert_eq!(all_cas.len(), n, "two successful cas calls returned one CAS unique");
    // The grower's inserts made an expansion due; it may still be running.
    assert!(store.wait_for_expansion(Duration::from_secs(60)));
    assert!(store.stats().expansions > expansions_before, "no expansion ran");
}

#[test]
fn concurrent_appends_keep_every_record_once() {
    const RECORD: usize = 12;
    let store = store();
    store.set(b"log", b"", 0, Expiry::Never).unwrap();
    // Fixed, not scaled for release builds: the value grows by a record
    // per append and so walks through every size class, and pool chunks
    // stay with their class once reserved (no slab rebalancing), so a
    // value of megabytes would exhaust the budget by design.
    let ops = 500u64;
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let grower = s.spawn(|| grow(&store, &stop));
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let store = &store;
                s.spawn(move || {
                    for i in 0..ops {
                        // Record: thread (4 bytes), sequence (8 bytes).
                        let mut r = [0u8; RECORD];
                        r[..4].copy_from_slice(&(t as u32).to_le_bytes());
                        r[4..].copy_from_slice(&i.to_le_bytes());
                        if i % 2 == 0 { store.append(b"log", &r) } else { store.prepend(b"log", &r) }.unwrap();
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        stop.store(true, Ordering::Relaxed);
        grower.join().unwrap();
    });
    let log = store.get(b"log", |it| it.value().to_vec()).unwrap();
    assert_eq!(log.len(), RECORD * (THREADS * ops) as usize, "lost or duplicated records");
    // Appended records (even sequence numbers) appear after the prepended
    // ones, each thread's appends in increasing order, its prepends in
    // decreasing order.
    let mut last_append = vec![None::<u64>; THREADS as usize];
    let mut last_prepend = vec![None::<u64>; THREADS as usize];
    let mut seen = vec![vec![false; ops as usize]; THREADS as usize];
    for r in log.chunks(RECORD) {
        let t = u32::from_le_bytes(r[..4].try_into().unwrap()) as usize;
        let i = u64::from_le_bytes(r[4..].try_into().unwrap());
        assert!(!seen[t][i as usize], "record {t}/{i} twice");
        seen[t][i as usize] = true;
        if i % 2 == 0 {
            assert!(last_append[t].is_none_or(|l| l < i), "appends of thread {t} out of order");
            last_append[t] = Some(i);
        } else {
            assert!(last_prepend[t].is_none_or(|l| l > i), "prepends of thread {t} out of order");
            last_prepend[t] = Some(i);
        }
    }
}

#[test]
fn exactly_one_add_wins_each_key() {
    let store = store();
    let keys = OPS * 4;
    let winners = AtomicU64::new(0);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (store, winners) = (&store, &winners);
            s.spawn(move || {
                for k in 0..keys {
                    match store.add(format!("add:{k}").as_bytes(), &t.to_le_bytes(), 0, Expiry::Never) {
                        Ok(_) => {
                            winners.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(Error::NotStored) => {}
                        Err(e) => panic!("add: {e}"),
                    }
                }
            });
        }
    });
    assert_eq!(winners.load(Ordering::Relaxed), keys);
    assert_eq!(store.len() as u64, keys);
    assert!(store.wait_for_expansion(Duration::from_secs(60)));
    assert!(store.stats().expansions > 0);
}

#[test]
fn churn_with_large_items_never_tears_and_returns_all_memory() {
    let store = store();
    // Keys 0..KEYS; even keys are never deleted once written.
    const KEYS: u64 = 64;
    let lens = [0usize, 10, 200, 3000, SMALL_ITEM_BYTES_MAX - 200, SMALL_ITEM_BYTES_MAX + 4096];
    for k in (0..KEYS).step_by(2) {
        store.set(&k.to_le_bytes(), &value(lens[k as usize % lens.len()], k), 0, Expiry::Never).unwrap();
    }
    let rounds = if cfg!(debug_assertions) { 300 } else { 3000 };
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let grower = s.spawn(|| grow(&store, &stop));
        let writers: Vec<_> = (0..2u64)
            .map(|t| {
                let store = &store;
                s.spawn(move || {
                    let mut seed = t + 1;
                    for r in 0..rounds {
                        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                        let k = (seed >> 33) % KEYS;
                        let len = lens[(seed >> 20) as usize % lens.len()];
                        let key = k.to_le_bytes();
                        if k % 2 == 1 && r % 3 == 0 {
                            let _ = store.delete(&key);
                        } else {
                            store.set(&key, &value(len, seed), 0, Expiry::Never).unwrap();
                        }
                    }
                    reclaim_fully(store);
                })
            })
            .collect();
        let readers: Vec<_> = (0..2u64)
            .map(|_| {
                let (store, stop) = (&store, &stop);
                s.spawn(move || {
                    let keys: Vec<[u8; 8]> = (0..KEYS).map(|k| k.to_le_bytes()).collect();
                    while !stop.load(Ordering::Relaxed) {
                        store.get_batch(&keys, |i, it| match it {
                            Some(it) => verify(it.value()),
                            None => assert!(i % 2 == 1, "key {i} missing"),
                        });
                    }
                    reclaim_fully(store);
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        stop.store(true, Ordering::Relaxed);
        for r in readers {
            r.join().unwrap();
        }
        grower.join().unwrap();
    });
    assert!(store.wait_for_expansion(Duration::from_secs(60)));
    for k in 0..KEYS {
        let _ = store.delete(&k.to_le_bytes());
    }
    for n in 0..GROW_KEYS {
        let _ = store.delete(format!("grow:{n}").as_bytes());
    }
    reclaim_fully(&store);
    let st = store.stats();
    assert_eq!((st.items, st.item_bytes, st.block_bytes), (0, 0, 0), "{st:?}");
    assert!(st.reserved_bytes <= 64 * amalgam_engine::CHUNK_BYTES as u64, "large items still reserved: {st:?}");
}

#[test]
fn writes_after_a_concurrent_flush_survive_it() {
    let store = store();
    let per_thread = OPS;
    let flushed = AtomicBool::new(false);
    let written = std::thread::scope(|s| {
        let writers: Vec<_> = (0..2u64)
            .map(|t| {
                let (store, flushed) = (&store, &flushed);
                s.spawn(move || {
                    // Keys written once the flush has returned.
                    // Writes at least `per_thread` keys and goes on until
                    // some were written after the flush.
                    let mut after = Vec::new();
                    let mut i = 0;
                    while i < per_thread || after.len() < 100 {
                        let was_flushed = flushed.load(Ordering::SeqCst);
                        let key = format!("w{t}:{i}");
                        store.set(key.as_bytes(), b"v", 0, Expiry::Never).unwrap();
                        if was_flushed {
                            after.push(key);
                        }
                        i += 1;
                    }
                    (i, after)
                })
            })
            .collect();
        s.spawn(|| {
            while store.len() < per_thread as usize / 2 {
                std::thread::yield_now();
            }
            store.flush_all();
            flushed.store(true, Ordering::SeqCst);
        });
        let mut written = Vec::new();
        for w in writers {
            let (n, after) = w.join().unwrap();
            for key in after {
                assert!(store.get(key.as_bytes(), |_| ()).is_some(), "{key} written after the flush is gone");
            }
            written.push(n);
        }
        written
    });
    // The sweep removes the flushed items from the index (bounded wait).
    // A set in flight during the flush may insert a flushed item behind the
    // sweep: at most one per writer lingers (dead, counted by len()).
    let live = written
        .iter()
        .enumerate()
        .flat_map(|(t, &n)| (0..n).map(move |i| format!("w{t}:{i}")))
        .filter(|k| store.get(k.as_bytes(), |_| ()).is_some())
        .count();
    let mut len = store.len();
    for _ in 0..2000 {
        if len <= live + 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
        len = store.len();
    }
    assert!(len >= live && len <= live + 2, "the sweep left flushed items in the index: {len} vs {live} live");
}

#[test]
fn large_items_run_out_of_memory_and_recover() {
    let store = Store::new(Config { memory_limit_bytes: 16 << 20, ..Config::default() }).unwrap();
    let v = value(SMALL_ITEM_BYTES_MAX + 10_000, 3);
    let mut stored = 0u64;
    loop {
        match store.set(&stored.to_le_bytes(), &v, 0, Expiry::Never) {
            Ok(_) => stored += 1,
            Err(Error::OutOfMemory) => break,
            Err(e) => panic!("{e}"),
        }
        assert!(stored < 1000, "16 MiB held 1000 half-MiB items");
    }
    assert!(stored >= 8, "only {stored} large items fit in 16 MiB");
    for k in 0..stored {
        assert_eq!(store.get(&k.to_le_bytes(), |it| verify(it.value())), Some(()));
    }
    // Small items still fit in the rest (or fail cleanly).
    match store.set(b"small", b"v", 0, Expiry::Never) {
        Ok(_) | Err(Error::OutOfMemory) => {}
        Err(e) => panic!("{e}"),
    }
    for k in 0..stored {
        store.delete(&k.to_le_bytes()).unwrap();
    }
    reclaim_fully(&store);
    for k in 0..stored {
        store.set(&k.to_le_bytes(), &v, 0, Expiry::Never).unwrap_or_else(|e| panic!("set {k} after deletes: {e}"));
    }
    for k in 0..stored {
        store.delete(&k.to_le_bytes()).unwrap();
    }
    let _ = store.delete(b"small");
    reclaim_fully(&store);
    let st = store.stats();
    assert_eq!((st.items, st.block_bytes), (0, 0), "{st:?}");
}
