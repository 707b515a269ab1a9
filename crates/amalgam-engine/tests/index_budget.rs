//! Cache mode's memory account (engine `segment.rs`, `store/limits.rs`
//! `account_memory`): the budget covers the index as well as the items.
//! A file of its own so its RSS checks run in a process of their own (the
//! tests of one file share a process and run in parallel).

use amalgam_engine::evict::Eviction;
use amalgam_engine::{Config, Expiry, Store, CACHE_INDEX_BUDGET_SHARE, SEGMENT_BYTES};

mod common;
use common::rss_bytes;

/// Tiny items push the table to
/// its cap (CACHE_INDEX_BUDGET_SHARE of the budget) and then grow chains;
/// the segments give up what the index takes, so resident segment memory
/// plus the index stays within the budget once the reclaimer has caught
/// up (it may lag by the granules still draining: it is checked after
/// each round of writes and must hold by the last), every SET succeeds,
/// and RSS grows by no more than the budget, S3-FIFO's ghost and a slack.
#[test]
fn index_is_charged_to_the_budget() {
    const BUDGET: usize = 32 * SEGMENT_BYTES;
    let config = Config { eviction: Eviction::S3Fifo, memory_limit_bytes: BUDGET, ..Config::default() };
    let store = Store::new(config).unwrap();
    let rss_before = rss_bytes();
    let mut held_at = None;
    for round in 0..8u64 {
        for i in 0..500_000u64 {
            store.set(&(round * 500_000 + i).to_le_bytes(), b"v", 0, Expiry::Never).unwrap();
        }
        store.wait_for_expansion(std::time::Duration::from_secs(30));
        // Let the maintenance thread run one round of its account.
        std::thread::sleep(std::time::Duration::from_millis(300));
        let st = store.stats();
        assert!(st.buckets * 64 <= (BUDGET / CACHE_INDEX_BUDGET_SHARE) as u64, "{st:?}");
        assert!(st.segment_limit * st.segment_bytes + st.index_bytes <= BUDGET as u64, "limit + index: {st:?}");
        if st.reserved_bytes + st.index_bytes <= BUDGET as u64 && held_at.is_none() && st.evictions > 0 {
            held_at = Some(round);
        }
    }
    let st = store.stats();
    assert!(st.overflow_nodes > 0 && st.evictions > 0, "the index grew past its table and items were evicted: {st:?}");
    assert!(held_at.is_some(), "resident segments + index never came within the budget: {st:?}");
    assert!(st.reserved_bytes + st.index_bytes <= BUDGET as u64 + 2 * SEGMENT_BYTES as u64, "{st:?}");
    let grown = rss_bytes().saturating_sub(rss_before);
    let ghost = BUDGET / 32;
    assert!(grown <= BUDGET + ghost + (8 << 20), "RSS grew {grown} bytes for a {BUDGET}-byte budget: {st:?}");
}
