//! Multi-threaded stress tests of the engine: writers, readers and table
//! expansions at once (issue 2 §5). They check
//! * no false miss: keys stored before the readers start and never deleted
//!   are always found, by `get` and `get_batch`, while expansions run;
//! * no torn value: every value carries its key id, version and a checksum;
//! * no lost update: each key has one writer; after the run it holds that
//!   writer's last version, and a shared counter incremented by every
//!   thread ends at the exact total;
//! * monotonic reads: a reader never sees a key's version go backwards;
//! * unique CAS values across all threads;
//! * memory returns to the pools: after deleting everything, the pool
//!   blocks handed out come back to zero.
//!
//! Sizes shrink in debug builds so `cargo test` stays quick; nothing here
//! measures time.
use amalgam_engine::{Config, Error, Expiry, Store};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const WRITERS: u64 = 2;
const READERS: u64 = 2;
/// Keys stored before the readers start and never touched again.
const STABLE_KEYS: u64 = if cfg!(debug_assertions) { 20_000 } else { 200_000 };
/// Keys owned by each writer and overwritten round after round.
const OWNED_KEYS: u64 = if cfg!(debug_assertions) { 4_000 } else { 40_000 };
/// Rounds of overwrites per writer.
const ROUNDS: u64 = if cfg!(debug_assertions) { 6 } else { 20 };
/// Fresh keys each writer inserts per round, to keep the table growing.
const GROW_PER_ROUND: u64 = if cfg!(debug_assertions) { 8_000 } else { 80_000 };
/// Value lengths cycled through (bytes, before the 24-byte trailer).
const VALUE_BODY_BYTES: [usize; 5] = [0, 16, 90, 1500, 3000];
/// Bound on reclaim attempts before the test gives up and fails.
const RECLAIM_ATTEMPTS_MAX: usize = 100_000;

fn key(id: u64) -> [u8; 10] {
    let mut k = [b'k'; 10];
    k[2..].copy_from_slice(&id.to_le_bytes());
    k
}

fn checksum(bytes: &[u8]) -> u64 {
    // FNV-1a: cheap, order-sensitive, enough to catch a torn copy.
    bytes.iter().fold(0xCBF2_9CE4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01B3))
}

fn value(id: u64, version: u64) -> Vec<u8> {
    let body = VALUE_BODY_BYTES[((id + version) % VALUE_BODY_BYTES.len() as u64) as usize];
    let mut v = Vec::with_capacity(body + 24);
    v.extend((0..body).map(|i| (i as u64 ^ id ^ version) as u8));
    v.extend_from_slice(&id.to_le_bytes());
    v.extend_from_slice(&version.to_le_bytes());
    let c = checksum(&v);
    v.extend_from_slice(&c.to_le_bytes());
    v
}

/// Checks a value's trailer and returns (id, version); panics if torn.
fn verify(v: &[u8]) -> (u64, u64) {
    assert!(v.len() >= 24, "value too short: {} bytes", v.len());
    let (body, sum) = v.split_at(v.len() - 8);
    assert_eq!(checksum(body), u64::from_le_bytes(sum.try_into().unwrap()), "torn value");
    let id = u64::from_le_bytes(body[body.len() - 16..body.len() - 8].try_into().unwrap());
    let version = u64::from_le_bytes(body[body.len() - 8..].try_into().unwrap());
    (id, version)
}

fn rng(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

fn owned_id(writer: u64, i: u64) -> u64 {
    1_000_000_000 + writer * OWNED_KEYS + i
}

fn grow_id(writer: u64, n: u64) -> u64 {
    2_000_000_000 + writer * 1_000_000_000 / WRITERS + n
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

#[test]
fn writers_readers_and_expansions() {
    let store =
        Store::new(Config { memory_limit_bytes: 4 << 30, initial_buckets_log2: 4, ..Config::default() }).unwrap();
    for id in 0..STABLE_KEYS {
        store.set(&key(id), &value(id, 0), id as u32, Expiry::Never).unwrap();
    }
    let expansions_before = store.stats().expansions;
    let done = AtomicBool::new(false);
    let mut all_cas: Vec<u64> = Vec::new();
    std::thread::scope(|s| {
        let store = &store;
        let done = &done;
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                s.spawn(move || {
                    let mut cas = Vec::new();
                    let mut grown = 0;
                    for round in 1..=ROUNDS {
                        for i in 0..OWNED_KEYS {
                            let id = owned_id(w, i);
                            cas.push(store.set(&key(id), &value(id, round), 0, Expiry::Never).unwrap());
                        }
                        for _ in 0..GROW_PER_ROUND {
                            let id = grow_id(w, grown);
                            grown += 1;
                            cas.push(store.set(&key(id), &value(id, 1), 0, Expiry::Never).unwrap());
                        }
                        // A shared counter: no increment may be lost.
                        for _ in 0..100 {
                            match store.incr(b"counter", 1) {
                                Ok(_) => {}
                                Err(Error::NotFound) => {
                                    if store.add(b"counter", b"1", 0, Expiry::Never).is_err() {
                                        store.incr(b"counter", 1).unwrap();
                                    }
                                }
                                Err(e) => panic!("incr: {e}"),
                            }
                        }
                    }
                    reclaim_fully(store);
                    cas
                })
            })
            .collect();
        let readers: Vec<_> = (0..READERS)
            .map(|r| {
                s.spawn(move || {
                    let mut seed = 0x9E37_79B9_7F4A_7C15u64 ^ (r + 1);
                    let mut seen = vec![0u64; (WRITERS * OWNED_KEYS) as usize];
                    let mut reads = 0u64;
                    let mut batch_keys = Vec::with_capacity(32);
                    while !done.load(Ordering::Acquire) {
                        let id = rng(&mut seed) % STABLE_KEYS;
                        let got = store.get(&key(id), |it| (verify(it.value()), it.flags()));
                        assert_eq!(got, Some(((id, 0), id as u32)), "stable key {id} missing or wrong");
                        // The same through a read session spanning several lookups.
                        let session = store.reader();
                        for _ in 0..8 {
                            let id = rng(&mut seed) % STABLE_KEYS;
                            let got = session.get(&key(id), |it| verify(it.value()));
                            assert_eq!(got, Some((id, 0)), "stable key {id} missing in a read session");
                        }
                        drop(session);

                        let slot = rng(&mut seed) % (WRITERS * OWNED_KEYS);
                        let id = owned_id(slot / OWNED_KEYS, slot % OWNED_KEYS);
                        if let Some((got_id, version)) = store.get(&key(id), |it| verify(it.value())) {
                            assert_eq!(got_id, id);
                            assert!(version >= seen[slot as usize], "version of key {id} went backwards");
                            seen[slot as usize] = version;
                        }

                        batch_keys.clear();
                        batch_keys.extend((0..32).map(|_| rng(&mut seed) % STABLE_KEYS));
                        let keys: Vec<[u8; 10]> = batch_keys.iter().map(|&id| key(id)).collect();
                        store.get_batch(&keys, |i, it| {
                            let it = it.unwrap_or_else(|| panic!("get_batch missed stable key {}", batch_keys[i]));
                            assert_eq!(verify(it.value()), (batch_keys[i], 0));
                        });
                        reads += 1;
                    }
                    reclaim_fully(store);
                    reads
                })
            })
            .collect();
        for w in writers {
            all_cas.extend(w.join().unwrap());
        }
        done.store(true, Ordering::Release);
        for r in readers {
            assert!(r.join().unwrap() > 0);
        }
    });
    let st = store.stats();
    assert!(st.expansions > expansions_before, "no expansion ran during the test: {st:?}");

    for w in 0..WRITERS {
        for i in 0..OWNED_KEYS {
            let id = owned_id(w, i);
            assert_eq!(store.get(&key(id), |it| verify(it.value())), Some((id, ROUNDS)), "lost update of {id}");
        }
    }
    let counter = store.get(b"counter", |it| it.value().to_vec()).unwrap();
    let counter: u64 = std::str::from_utf8(&counter).unwrap().trim().parse().unwrap();
    assert_eq!(counter, WRITERS * ROUNDS * 100, "lost increments");

    let n = all_cas.len();
    all_cas.sort_unstable();
    all_cas.dedup();
    assert_eq!(all_cas.len(), n, "a CAS value was handed out twice");

    // Everything deleted and reclaimed: the pools get every block back.
    assert!(store.wait_for_expansion(Duration::from_secs(60)));
    let mut ids: Vec<u64> = (0..STABLE_KEYS).collect();
    ids.extend((0..WRITERS).flat_map(|w| (0..OWNED_KEYS).map(move |i| owned_id(w, i))));
    ids.extend((0..WRITERS).flat_map(|w| (0..ROUNDS * GROW_PER_ROUND).map(move |n| grow_id(w, n))));
    for id in ids {
        store.delete(&key(id)).unwrap();
    }
    store.delete(b"counter").unwrap();
    reclaim_fully(&store);
    let st = store.stats();
    assert_eq!(st.items, 0, "{st:?}");
    assert_eq!(st.item_bytes, 0, "{st:?}");
    assert_eq!(st.block_bytes, 0, "blocks not returned to the pools: {st:?}");
}

#[test]
fn a_full_store_says_out_of_memory_and_recovers() {
    let store = Store::new(Config { memory_limit_bytes: 8 << 20, ..Config::default() }).unwrap();
    let v = vec![b'x'; 1000];
    let mut stored = 0u64;
    let err = loop {
        match store.set(&key(stored), &v, 0, Expiry::Never) {
            Ok(_) => stored += 1,
            Err(e) => break e,
        }
        assert!(stored < 1_000_000, "an 8 MiB budget held a million 1 KB items");
    };
    assert_eq!(err, Error::OutOfMemory);
    assert!(stored > 1000, "only {stored} items fit in 8 MiB");
    // Nothing stored before is lost, and other operations still answer.
    for id in 0..stored {
        assert_eq!(store.get(&key(id), |it| it.value().len()), Some(1000), "key {id}");
    }
    assert_eq!(store.append(&key(0), &v), Err(Error::OutOfMemory));
    // Freeing items makes room again.
    for id in 0..stored / 2 {
        store.delete(&key(id)).unwrap();
    }
    reclaim_fully(&store);
    for id in 0..stored / 4 {
        store.set(&key(id), &v, 0, Expiry::Never).unwrap_or_else(|e| panic!("set after deletes: {e}"));
    }
    // Threads racing for the last bytes all get an answer, never a panic.
    std::thread::scope(|s| {
        for t in 0..2u64 {
            let store = &store;
            let v = &v;
            s.spawn(move || {
                for i in 0..stored {
                    match store.set(&key(10_000_000 * (t + 1) + i), v, 0, Expiry::Never) {
                        Ok(_) | Err(Error::OutOfMemory) => {}
                        Err(e) => panic!("unexpected {e}"),
                    }
                }
            });
        }
    });
}
