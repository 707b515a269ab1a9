//! The memory limit changed at run time (`Store::set_memory_limit`,
//! Redis's `CONFIG SET maxmemory`): a cache lowered evicts down to the new
//! budget and gives the memory back to the kernel; one raised holds more,
//! up to the address space reserved at start; a store lowered refuses
//! writes (out of memory) until deletes bring it under. A file of its own
//! so its RSS check runs in a process of its own (the tests of one file
//! share a process and run in parallel, so that check is one test).

use amalgam_engine::{Config, Error, Expiry, Store, SEGMENTS_MIN, SEGMENT_BYTES};
use std::sync::Mutex;
use std::time::{Duration, Instant};

mod common;
use common::rss_bytes;

mod full_cache;
use full_cache::{cache, fill, settle, SETTLE_WAIT};

/// Lowered from 64 to 16 segments: the cache evicts down to the new
/// budget in the background (no write needed), the resident memory the
/// account allows falls with it, RSS falls (the granules given back with
/// MADV_DONTNEED), and writes go on within the new budget. Raised back
/// to 64, it fills past 16 again.
/// The tests of this file run one at a time: `cache_shrinks_and_grows_back`
/// reads the process's RSS, which another test's store filling or
/// freeing at the same moment moves by tens of MiB (seen: the freed
/// 48 MiB measured as 23.8 MiB while the other three ran beside it on a
/// loaded machine). Each test holds this lock for its whole run.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn cache_shrinks_and_grows_back() {
    let _alone = one_at_a_time();
    const BUDGET: usize = 64 * SEGMENT_BYTES;
    const SMALL: usize = 16 * SEGMENT_BYTES;
    let store = cache(BUDGET, BUDGET);
    fill(&store, 0, 120_000);
    let full = settle(&store, BUDGET as u64);
    assert!(full.evictions > 0 && full.reserved_bytes > SMALL as u64 * 3, "filled past 48 MiB: {full:?}");
    let rss_full = rss_bytes();

    store.set_memory_limit(SMALL).unwrap();
    let st = settle(&store, SMALL as u64);
    assert_eq!(st.memory_limit_bytes, SMALL as u64);
    assert!(st.reserved_bytes + st.index_bytes <= SMALL as u64, "evicted down to the new budget: {st:?}");
    assert!(st.items < full.items / 2 && st.evictions > full.evictions, "{full:?} then {st:?}");
    let rss_small = rss_bytes();
    assert!(
        rss_full.saturating_sub(rss_small) >= (BUDGET - SMALL) / 2,
        "RSS {rss_full} -> {rss_small}: the freed segments' pages went back to the kernel"
    );

    // Writes go on within the new budget.
    fill(&store, 1_000_000, 50_000);
    let st = settle(&store, SMALL as u64);
    assert!(st.reserved_bytes + st.index_bytes <= SMALL as u64, "still within the budget: {st:?}");
    assert!(store.get(b"key:1049999", |_| ()).is_some(), "the newest key is held");

    // Raised back: the cache holds more again.
    store.set_memory_limit(BUDGET).unwrap();
    fill(&store, 2_000_000, 120_000);
    let st = settle(&store, BUDGET as u64);
    assert!(st.reserved_bytes > 2 * SMALL as u64, "grew past the small budget again: {st:?}");
}

/// Started at 16 segments with room reserved for 64: raising holds about
/// four times the items (the address space was reserved, not paged in, so
/// the small start costs no more RSS than a 16-segment cache). Past the
/// reserve, and under the fewest segments, a change is refused naming the
/// limits, and nothing changes.
#[test]
fn cache_grows_into_its_reserve_and_refuses_past_it() {
    let _alone = one_at_a_time();
    const SMALL: usize = 16 * SEGMENT_BYTES;
    const MAX: usize = 64 * SEGMENT_BYTES;
    let store = cache(SMALL, MAX);
    assert_eq!(store.memory_limit_max_bytes(), MAX);
    fill(&store, 0, 100_000);
    let small = settle(&store, SMALL as u64);
    assert!(small.evictions > 0, "{small:?}");
    assert!(small.reserved_bytes + small.index_bytes <= SMALL as u64, "the reserve is not used: {small:?}");

    store.set_memory_limit(MAX).unwrap();
    fill(&store, 1_000_000, 100_000);
    let big = settle(&store, MAX as u64);
    assert_eq!(big.memory_limit_bytes, MAX as u64);
    assert!(big.items > 3 * small.items, "a budget four times larger holds more: {small:?} then {big:?}");

    let e = store.set_memory_limit(MAX + 1).unwrap_err().to_string();
    assert!(e.contains(&MAX.to_string()), "{e}");
    // From 1 byte (Redis's `maxmemory 1`: below SEGMENTS_MIN segments
    // nothing stays and writes are refused); 0 is no limit, refused.
    let e = store.set_memory_limit(0).unwrap_err().to_string();
    assert!(e.contains(&format!("from 1 to {MAX}")), "{e}");
    store.set_memory_limit(SEGMENTS_MIN * big.segment_bytes as usize - 1).unwrap();
    store.set_memory_limit(1).unwrap();
    store.set_memory_limit(MAX).unwrap();
    assert_eq!(store.stats().memory_limit_bytes, MAX as u64, "a refused change changes nothing");
    assert!(store.set_memory_limit(usize::MAX).is_err(), "cache mode has no 'no limit'");
}

/// Without a reserve (the default) the budget can be lowered and raised
/// back to where it started, not past it.
#[test]
fn cache_without_reserve_returns_to_its_start() {
    let _alone = one_at_a_time();
    const BUDGET: usize = 16 * SEGMENT_BYTES;
    let store = cache(BUDGET, 0);
    assert_eq!(store.memory_limit_max_bytes(), BUDGET);
    store.set_memory_limit(8 * SEGMENT_BYTES).unwrap();
    store.set_memory_limit(BUDGET).unwrap();
    assert!(store.set_memory_limit(BUDGET + SEGMENT_BYTES).is_err());
}

/// Store mode: a limit lowered below what is stored refuses writes (out of
/// memory, as Redis's noeviction past maxmemory) though the free lists
/// could serve them; deletes bring it back under and writes succeed; no
/// limit (usize::MAX) shows as 0 and refuses nothing the machine has.
#[test]
fn store_refuses_past_a_lowered_limit_until_deletes() {
    let _alone = one_at_a_time();
    let store = Store::new(Config { memory_limit_bytes: 64 << 20, ..Config::default() }).unwrap();
    assert_eq!(store.memory_limit_max_bytes(), usize::MAX);
    fill(&store, 0, 8_000); // about 8 MiB of blocks
    let before = store.stats();
    assert!(before.block_bytes > 7 << 20, "{before:?}");

    store.set_memory_limit(4 << 20).unwrap();
    assert_eq!(store.stats().memory_limit_bytes, 4 << 20);
    assert_eq!(store.set(b"key:0", b"small", 0, Expiry::Never), Err(Error::OutOfMemory), "overwrite refused");
    assert_eq!(store.set(b"new", b"x", 0, Expiry::Never), Err(Error::OutOfMemory), "insert refused");
    assert!(store.get(b"key:0", |_| ()).is_some(), "reads go on");

    for i in 0..6_000u64 {
        store.delete(format!("key:{i}").as_bytes()).unwrap();
    }
    // The deleted blocks are freed after their grace period; a refused
    // write frees what its thread retired first, so one retry suffices,
    // but the epoch may need another thread to move on: bounded retries.
    let start = Instant::now();
    while store.set(b"new", b"x", 0, Expiry::Never).is_err() {
        assert!(start.elapsed() < SETTLE_WAIT, "still refused after deletes: {:?}", store.stats());
        std::thread::sleep(Duration::from_millis(10));
    }

    store.set_memory_limit(usize::MAX).unwrap();
    assert_eq!(store.stats().memory_limit_bytes, 0, "no limit shows as 0");
    fill(&store, 100_000, 8_000);
    store.set_memory_limit(64 << 20).unwrap();
    assert_eq!(store.stats().memory_limit_bytes, 64 << 20);
}
