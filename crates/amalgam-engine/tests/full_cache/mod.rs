//! Helpers of the tests that run a cache at its memory limit
//! (memory_limit.rs, eviction_switch.rs): a cache of a given budget,
//! distinct keys written into it, and a bounded wait for the maintenance
//! thread to evict down.

use amalgam_engine::evict::Eviction;
use amalgam_engine::{Config, Expiry, Store};
use std::time::{Duration, Instant};

/// Bytes per test value: about a thousand items per segment.
pub const VALUE_BYTES: usize = 1000;
/// How long the maintenance thread may take to evict down (a bound on
/// waiting, not a speed asserted: it normally takes milliseconds).
pub const SETTLE_WAIT: Duration = Duration::from_secs(30);

/// An S3-FIFO cache of `budget` bytes that may grow to `max` (0: no
/// room reserved beyond the budget).
pub fn cache(budget: usize, max: usize) -> Store {
    Store::new(Config {
        eviction: Eviction::S3Fifo,
        memory_limit_bytes: budget,
        memory_limit_max_bytes: max,
        ..Config::default()
    })
    .unwrap()
}

/// Writes `n` distinct keys from `from` with VALUE_BYTES values.
pub fn fill(store: &Store, from: u64, n: u64) {
    let value = vec![b'v'; VALUE_BYTES];
    for i in from..from + n {
        store.set(format!("key:{i}").as_bytes(), &value, 0, Expiry::Never).unwrap();
    }
}

/// Waits (bounded by SETTLE_WAIT) until resident segment memory plus the
/// index fits `budget`; returns the stats then.
pub fn settle(store: &Store, budget: u64) -> amalgam_engine::Stats {
    let start = Instant::now();
    loop {
        let st = store.stats();
        if st.reserved_bytes + st.index_bytes <= budget || start.elapsed() > SETTLE_WAIT {
            return st;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
