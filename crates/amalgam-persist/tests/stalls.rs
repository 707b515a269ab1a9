//! Persistence's stall watcher (`stall.rs`): the log's writes and fsyncs
//! and the snapshots' slices reach it, each as its own kind, and nothing
//! is timed while it is not watching. Also `set_fsync` at run time: a
//! switch to `always` makes each commit an fsync, a switch away does not.

use amalgam_engine::{Config, Expiry, Store};
use amalgam_persist::stall::{Stall, StallWatcher};
use amalgam_persist::{Fsync, Persistence};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Default)]
struct Recorder {
    on: AtomicBool,
    seen: Mutex<HashMap<Stall, usize>>,
}

impl StallWatcher<Stall> for Recorder {
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
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!("amalgam-persist-stalls-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    p
}

fn open(dir: &std::path::Path, fsync: Fsync) -> (Arc<Store>, Arc<Persistence>) {
    let store = Arc::new(Store::new(Config::default()).unwrap());
    let cfg = amalgam_persist::Config {
        dir: dir.to_path_buf(),
        fsync,
        snapshot_every: None,
        snapshot_after_writes: None,
        snapshot_cpu_percent: 100,
        thresholds: Default::default(),
    };
    let (p, _) = Persistence::open(cfg, Arc::clone(&store)).unwrap();
    (store, p)
}

#[test]
fn log_steps_and_snapshot_slices_reach_the_watcher_only_while_it_watches() {
    let dir = temp_dir("watch");
    let (store, p) = open(&dir, Fsync::No);
    let rec = Arc::new(Recorder::default());
    p.set_stall_watcher(rec.clone());

    store.set(b"a", b"1", 0, Expiry::Never).unwrap();
    p.commit();
    assert_eq!(rec.count(Stall::LogWrite), 0, "not watching: nothing timed");

    rec.on.store(true, Ordering::Relaxed);
    store.set(b"b", b"2", 0, Expiry::Never).unwrap();
    p.commit();
    assert_eq!(rec.count(Stall::LogWrite), 1, "one write(2)");
    assert_eq!(rec.count(Stall::LogFsyncAlways), 0, "`no` does not sync");

    // A switch to `always` syncs at once (everything appended so far),
    // then each commit is a write and an fsync.
    p.set_fsync(Fsync::Always);
    let synced = rec.count(Stall::LogFsyncBackground);
    assert_eq!(synced, 1, "the switch's own sync");
    for i in 0..5u8 {
        store.set(&[b'k', i], b"v", 0, Expiry::Never).unwrap();
        p.commit();
    }
    assert_eq!(rec.count(Stall::LogFsyncAlways), 5, "one fsync per commit under always");
    assert!(p.committed() >= Persistence::last_appended_here(), "durable");

    // And away again: commits write, never sync.
    p.set_fsync(Fsync::No);
    for i in 0..5u8 {
        store.set(&[b'n', i], b"v", 0, Expiry::Never).unwrap();
        p.commit();
    }
    assert_eq!(rec.count(Stall::LogFsyncAlways), 5, "no fsync under no");

    for i in 0..20_000u32 {
        store.set(&i.to_le_bytes(), b"value", 0, Expiry::Never).unwrap();
    }
    p.snapshot().unwrap();
    assert!(rec.count(Stall::SnapshotSlice) > 0, "a snapshot's slices are timed");
    p.shutdown();
    let _ = std::fs::remove_dir_all(&dir);
}
