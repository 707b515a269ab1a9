//! The engine's stall watcher (`stall.rs`): a table doubling's strides,
//! the expiry sweep's steps and eviction passes reach it as their kinds,
//! and nothing is timed while it is not watching.

use amalgam_engine::evict::Eviction;
use amalgam_engine::{Config, Expiry, Stall, StallWatcher, Store};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Bound on waiting for the maintenance thread (not a speed asserted).
const WAIT: Duration = Duration::from_secs(30);

#[derive(Default)]
struct Recorder {
    on: AtomicBool,
    seen: Mutex<HashMap<Stall, usize>>,
}

impl StallWatcher for Recorder {
    fn watching(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }
    fn stalled(&self, kind: Stall, _took: Duration) {
        *self.seen.lock().unwrap().entry(kind).or_default() += 1;
    }
}

impl Recorder {
    fn count(&self, kind: Stall) -> usize {
        self.seen.lock().unwrap().get(&kind).copied().unwrap_or(0)
    }

    /// Waits (bounded) until `kind` has been seen.
    fn wait_for(&self, kind: Stall) -> bool {
        let start = Instant::now();
        while self.count(kind) == 0 {
            if start.elapsed() > WAIT {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        true
    }
}

#[test]
fn doubling_strides_and_expiry_steps_are_timed_while_watched() {
    let store = Store::new(Config { initial_buckets_log2: 4, ..Config::default() }).unwrap();
    let rec = Arc::new(Recorder::default());
    assert!(store.set_stall_watcher(rec.clone()).is_ok());
    assert!(store.set_stall_watcher(rec.clone()).is_err(), "one watcher per store");

    for i in 0..1000u32 {
        store.set(&i.to_le_bytes(), b"v", 0, Expiry::Never).unwrap();
    }
    store.wait_for_expansion(WAIT);
    assert!(store.stats().expansions > 0);
    assert!(rec.seen.lock().unwrap().is_empty(), "not watching: nothing timed");

    rec.on.store(true, Ordering::Relaxed);
    for i in 1000..100_000u32 {
        store.set(&i.to_le_bytes(), b"v", 0, Expiry::Never).unwrap();
    }
    store.wait_for_expansion(WAIT);
    assert!(rec.wait_for(Stall::ExpansionStep), "a doubling's strides are timed");

    // An expiry turns the background sweep on; each step is timed.
    store.set(b"ttl", b"v", 0, Expiry::at_millis(store.now_millis() + 60_000)).unwrap();
    assert!(rec.wait_for(Stall::ExpireCycle), "the expiry sweep's steps are timed");
    assert_eq!(rec.count(Stall::EvictionCycle), 0, "store mode never evicts");
}

#[test]
fn eviction_passes_are_timed() {
    let store =
        Store::new(Config { eviction: Eviction::S3Fifo, memory_limit_bytes: 16 << 20, ..Config::default() }).unwrap();
    let rec = Arc::new(Recorder { on: AtomicBool::new(true), ..Recorder::default() });
    assert!(store.set_stall_watcher(rec.clone()).is_ok());
    let value = vec![b'v'; 1000];
    for i in 0..50_000u32 {
        store.set(&i.to_le_bytes(), &value, 0, Expiry::Never).unwrap();
    }
    assert!(store.stats().evictions > 0);
    assert!(rec.wait_for(Stall::EvictionCycle), "eviction passes are timed");
}
