//! The eviction policy changed at run time (`Store::set_eviction`, the
//! server's CONFIG SET eviction) and S3-FIFO's small-queue share
//! (`Store::set_small_queue_percent`): on a full cache, with assertions
//! that hold whatever the thread timing (which items must be gone, not how
//! fast). A file of its own, apart from memory_limit.rs, whose RSS check
//! would see these tests' stores grow beside it (a file's tests share a
//! process and run in parallel).

use amalgam_engine::evict::{Eviction, Queue};
use amalgam_engine::{Config, Expiry, Store, SEGMENT_BYTES};

mod full_cache;
use full_cache::{cache, fill, settle, VALUE_BYTES};

/// The eviction policy switched at run time (`Store::set_eviction`),
/// S3-FIFO to CLOCK and back, on a full cache: writes go on, evictions go
/// on, and nothing S3-FIFO left is stranded. No key is ever read, so every
/// item has frequency 0 and is evicted when its segment is reclaimed; the
/// writes under CLOCK are two budgets' worth, so every segment older than
/// the switch must have been reclaimed (CLOCK drains Small first, then
/// Main oldest first) whichever thread reclaimed it, the maintenance
/// thread or the writer: every one of S3-FIFO's keys is gone and Small
/// holds no segment. The writer's own open Small segment, which nothing
/// but its owner may seal, is sealed by its first write under CLOCK (it
/// used to stay open, its items held for good, whenever the maintenance
/// thread did all the reclaiming: a race on thread timing).
#[test]
fn eviction_policy_switches_at_run_time() {
    const BUDGET: usize = 32 * SEGMENT_BYTES;
    const KEYS: u64 = 60_000;
    let store = cache(BUDGET, 0);
    fill(&store, 0, KEYS);
    let s3 = settle(&store, BUDGET as u64);
    assert!(s3.evictions > 0, "{s3:?}");
    assert_eq!(store.eviction(), Eviction::S3Fifo);
    assert!(!store.dump_segments(Queue::Small).is_empty(), "S3-FIFO writes new items to Small");

    store.set_eviction(Eviction::Clock).unwrap();
    store.set_eviction(Eviction::Clock).unwrap(); // the policy in force: nothing changes
    assert_eq!(store.eviction(), Eviction::Clock);
    fill(&store, 1_000_000, KEYS);
    let clock = settle(&store, BUDGET as u64);
    assert!(clock.evictions > s3.evictions, "CLOCK evicts: {clock:?}");
    let left: Vec<u64> = (0..KEYS).filter(|i| store.get(format!("key:{i}").as_bytes(), |_| ()).is_some()).collect();
    assert!(
        left.is_empty(),
        "{} of S3-FIFO's keys left after CLOCK's writes, e.g. {:?}: {clock:?}",
        left.len(),
        &left[..left.len().min(5)]
    );
    assert_eq!(store.dump_segments(Queue::Small), [], "CLOCK drained S3-FIFO's Small queue");
    assert!(store.get(format!("key:{}", 1_000_000 + KEYS - 1).as_bytes(), |_| ()).is_some());

    store.set_eviction(Eviction::S3Fifo).unwrap();
    fill(&store, 2_000_000, KEYS);
    let back = settle(&store, BUDGET as u64);
    assert!(back.evictions > clock.evictions && back.reserved_bytes + back.index_bytes <= BUDGET as u64, "{back:?}");
    assert!(!store.dump_segments(Queue::Small).is_empty(), "S3-FIFO writes to Small again");
    assert!(store.set_eviction(Eviction::None).is_err());

    let plain = Store::new(Config::default()).unwrap();
    assert!(plain.set_eviction(Eviction::Clock).is_err(), "store mode stays store mode");
    assert_eq!(plain.eviction(), Eviction::None);
}

/// Writes `n` distinct keys from `from` and reads each once: every item
/// leaves S3-FIFO's Small for Main (a hit while on probation), so both
/// queues fill and Small keeps to its share.
fn fill_read_once(store: &Store, from: u64, n: u64) {
    let value = vec![b'v'; VALUE_BYTES];
    for i in from..from + n {
        let key = format!("key:{i}");
        store.set(key.as_bytes(), &value, 0, Expiry::Never).unwrap();
        assert!(store.get(key.as_bytes(), |_| ()).is_some());
    }
}

/// S3-FIFO's small-queue share set at run time: with every item read once
/// (so Main fills with what Small promotes), Small holds about its share
/// of the segments, at 10% and then at 40%; outside 1..=50 a share is
/// refused, naming the range.
#[test]
fn small_queue_share_changes_at_run_time() {
    const BUDGET: usize = 32 * SEGMENT_BYTES;
    let store = cache(BUDGET, 0);
    assert_eq!(store.small_queue_percent(), Some(10));
    let shares = |store: &Store| Queue::ALL.map(|q| store.dump_segments(q).len());
    fill_read_once(&store, 0, 60_000);
    settle(&store, BUDGET as u64);
    let [small_10, main_10] = shares(&store);
    // Small is chosen at its share or above, so it stays within a segment
    // or two of it (plus the writer's open one).
    assert!(small_10 * 100 <= (small_10 + main_10) * 10 + 300, "Small near 10%: {small_10} of {}", small_10 + main_10);
    store.set_small_queue_percent(40).unwrap();
    assert_eq!(store.small_queue_percent(), Some(40));
    fill_read_once(&store, 1_000_000, 60_000);
    settle(&store, BUDGET as u64);
    let [small_40, main_40] = shares(&store);
    assert!(
        small_40 * 100 >= (small_40 + main_40) * 35 && small_40 > 2 * small_10,
        "Small grew to its new share: {small_10} of {} segments, then {small_40} of {}",
        small_10 + main_10,
        small_40 + main_40
    );
    let e = store.set_small_queue_percent(0).unwrap_err().to_string();
    assert!(e.contains("from 1 to 50 percent; got 0"), "{e}");
    assert!(store.set_small_queue_percent(51).is_err());
    assert_eq!(store.small_queue_percent(), Some(40), "a refused change changes nothing");
    assert!(Store::new(Config::default()).unwrap().set_small_queue_percent(20).is_err(), "store mode has none");
}

/// A thread that wrote under S3-FIFO and then stays idle: its open Small
/// segment can be sealed only by itself, and CLOCK never writes to Small,
/// so its newest items would stay for good. `Store::follow_eviction` (what
/// the server's workers call when CONFIG SET eviction wakes them) seals it
/// without a write; then two budgets of another thread's writes under
/// CLOCK leave none of its keys, deterministically (none was read).
#[test]
fn an_idle_writer_follows_the_switch() {
    const BUDGET: usize = 32 * SEGMENT_BYTES;
    const KEYS: u64 = 40_000;
    let store = std::sync::Arc::new(cache(BUDGET, 0));
    let (to_idle, idle_hears) = std::sync::mpsc::channel::<()>();
    let (to_main, main_hears) = std::sync::mpsc::channel::<()>();
    let idle = {
        let store = std::sync::Arc::clone(&store);
        std::thread::spawn(move || {
            fill(&store, 0, KEYS);
            to_main.send(()).unwrap();
            // Idle (alive, so its Local stays its own) until the switch.
            idle_hears.recv().unwrap();
            store.follow_eviction();
            store.follow_eviction(); // a second call finds nothing to do
            to_main.send(()).unwrap();
            idle_hears.recv().unwrap();
        })
    };
    main_hears.recv().unwrap();
    store.set_eviction(Eviction::Clock).unwrap();
    to_idle.send(()).unwrap();
    main_hears.recv().unwrap();
    fill(&store, 1_000_000, 60_000);
    settle(&store, BUDGET as u64);
    let left = (0..KEYS).filter(|i| store.get(format!("key:{i}").as_bytes(), |_| ()).is_some()).count();
    assert_eq!(left, 0, "the idle writer's S3-FIFO keys all evicted under CLOCK: {:?}", store.stats());
    assert_eq!(store.dump_segments(Queue::Small), []);
    to_idle.send(()).unwrap();
    idle.join().unwrap();
}
