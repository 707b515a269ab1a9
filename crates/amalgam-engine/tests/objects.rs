//! Typed values (object.rs): value tags, objects changed in place, and
//! who frees an object — on every path an item leaves the index by, and
//! never on the paths that move it to a new item.

use amalgam_engine::evict::Eviction;
use amalgam_engine::{Config, Error, Expiry, NewValue, Object, Store, Update, TAG_BYTES, TAG_OBJECT};
use std::any::Any;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A test object: a vector of numbers that counts its drops.
struct Numbers {
    items: Vec<u64>,
    drops: Arc<AtomicUsize>,
}

impl Drop for Numbers {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

impl Object for Numbers {
    fn mem_bytes(&self) -> usize {
        self.items.capacity() * 8
    }
    fn kind(&self) -> u8 {
        42
    }
    fn encode(&self, out: &mut Vec<u8>) {
        for n in &self.items {
            out.extend_from_slice(&n.to_le_bytes());
        }
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

fn numbers(items: Vec<u64>, drops: &Arc<AtomicUsize>) -> Box<dyn Object> {
    Box::new(Numbers { items, drops: Arc::clone(drops) })
}

/// Stores a new object at `key` (replacing whatever is there).
fn put(store: &Store, key: &[u8], obj: Box<dyn Object>, expiry: Expiry) {
    let mut obj = Some(obj);
    store
        .update(key, |_| {
            let o = obj.take().expect("one build: nothing makes room here");
            (Update::Put { value: NewValue::Object(o), flags: 0, expiry, fresh_cas: true, marks: 0 }, ())
        })
        .unwrap();
}

/// The object's numbers, read as a reader does (no bucket lock).
fn read(store: &Store, key: &[u8]) -> Option<Vec<u64>> {
    store.get(key, |it| {
        let cell = it.object()?;
        let guard = cell.read();
        Some(guard.as_any().downcast_ref::<Numbers>().expect("Numbers").items.clone())
    })?
}

/// Pushes `n` in place, under the bucket lock, journaling a record.
fn push(store: &Store, key: &[u8], n: u64) -> bool {
    let ((pushed,), _) = store
        .update(key, |old| {
            let Some(cell) = old.and_then(|o| o.object()) else { return (Update::Keep, (false,)) };
            let mut w = cell.write();
            w.as_any_mut().downcast_mut::<Numbers>().expect("Numbers").items.push(n);
            (Update::InPlace { record: n.to_le_bytes().to_vec() }, (true,))
        })
        .unwrap();
    pushed
}

/// Frees garbage until `drops` reaches `want` (epochs need a few rounds).
fn wait_drops(store: &Store, drops: &AtomicUsize, want: usize) {
    for _ in 0..1000 {
        store.reclaim();
        if drops.load(Ordering::SeqCst) >= want {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(drops.load(Ordering::SeqCst), want);
}

fn stores() -> Vec<Store> {
    let cache = Config { memory_limit_bytes: 64 << 20, eviction: Eviction::S3Fifo, ..Config::default() };
    vec![Store::new(Config::default()).unwrap(), Store::new(cache).unwrap()]
}

#[test]
fn an_object_is_read_changed_in_place_and_counted() {
    for store in stores() {
        let drops = Arc::new(AtomicUsize::new(0));
        put(&store, b"k", numbers(vec![1, 2], &drops), Expiry::Never);
        assert_eq!(store.get(b"k", |it| it.tag()), Some(TAG_OBJECT));
        assert_eq!(read(&store, b"k"), Some(vec![1, 2]));
        let before = store.stats().object_bytes;
        assert!(before > 0);
        for n in 3..=100 {
            assert!(push(&store, b"k", n));
        }
        assert_eq!(read(&store, b"k"), Some((1..=100).collect()));
        assert!(store.stats().object_bytes > before, "an in-place write is charged");
        assert_eq!(drops.load(Ordering::SeqCst), 0);
        // A plain string is not an object, and InPlace on it keeps it.
        store.set(b"s", b"v", 0, Expiry::Never).unwrap();
        assert_eq!(store.get(b"s", |it| (it.tag(), it.object().is_none())), Some((TAG_BYTES, true)));
        assert!(!push(&store, b"s", 1));
        assert_eq!(store.get(b"s", |it| it.value().to_vec()), Some(b"v".to_vec()));
    }
}

#[test]
fn a_rewrite_that_keeps_the_value_keeps_the_object() {
    for store in stores() {
        let drops = Arc::new(AtomicUsize::new(0));
        put(&store, b"k", numbers(vec![7], &drops), Expiry::Never);
        // EXPIRE-style: same value, new expiry, marks 0 (the engine keeps
        // the tag for NewValue::Same whatever marks says).
        let at = Expiry::At(store.now() + 1000);
        store
            .update(b"k", |_| {
                (Update::Put { value: NewValue::Same, flags: 0, expiry: at, fresh_cas: false, marks: 0 }, ())
            })
            .unwrap();
        // memcached's touch does not see an object (absent to memcached).
        assert_eq!(store.touch(b"k", Expiry::Never), Err(Error::NotFound));
        wait_drops(&store, &drops, 0);
        assert_eq!(read(&store, b"k"), Some(vec![7]));
        assert_eq!(store.get(b"k", |it| it.tag()), Some(TAG_OBJECT));
    }
}

#[test]
fn every_way_out_of_the_index_frees_the_object_once() {
    for store in stores() {
        let drops = Arc::new(AtomicUsize::new(0));
        // Deleted.
        put(&store, b"a", numbers(vec![1], &drops), Expiry::Never);
        store.delete(b"a").unwrap();
        wait_drops(&store, &drops, 1);
        // Replaced by a string.
        put(&store, b"b", numbers(vec![1], &drops), Expiry::Never);
        store.set(b"b", b"plain", 0, Expiry::Never).unwrap();
        wait_drops(&store, &drops, 2);
        assert_eq!(store.get(b"b", |it| it.value().to_vec()), Some(b"plain".to_vec()));
        // Replaced by another object.
        put(&store, b"c", numbers(vec![1], &drops), Expiry::Never);
        put(&store, b"c", numbers(vec![2], &drops), Expiry::Never);
        wait_drops(&store, &drops, 3);
        assert_eq!(read(&store, b"c"), Some(vec![2]));
        // Removed by Update::Remove.
        store.update(b"c", |_| (Update::Remove, ())).unwrap();
        wait_drops(&store, &drops, 4);
        // Expired, then found by a write.
        put(&store, b"d", numbers(vec![1], &drops), Expiry::At(store.now() + 2));
        store.advance_clock(3);
        assert_eq!(read(&store, b"d"), None);
        assert_eq!(store.add(b"d", b"x", 0, Expiry::Never).map(|_| ()), Ok(()));
        wait_drops(&store, &drops, 5);
        // Flushed, then swept.
        put(&store, b"e", numbers(vec![1], &drops), Expiry::Never);
        store.flush_all();
        for _ in 0..1000 {
            if drops.load(Ordering::SeqCst) == 6 {
                break;
            }
            store.reclaim();
            std::thread::sleep(Duration::from_millis(2));
        }
        assert_eq!(drops.load(Ordering::SeqCst), 6);
        // Born expired: never published, freed at once.
        put(&store, b"f", numbers(vec![1], &drops), Expiry::At(1));
        assert_eq!(drops.load(Ordering::SeqCst), 7);
        assert_eq!(store.stats().object_bytes, 0, "every charge is returned");
    }
}

#[test]
fn memcached_writes_treat_an_object_as_absent() {
    let store = Store::new(Config::default()).unwrap();
    let drops = Arc::new(AtomicUsize::new(0));
    put(&store, b"k", numbers(vec![5], &drops), Expiry::Never);
    assert_eq!(store.append(b"k", b"x"), Err(Error::NotStored));
    assert_eq!(store.prepend(b"k", b"x"), Err(Error::NotStored));
    assert_eq!(store.incr(b"k", 1), Err(Error::NotFound));
    assert_eq!(store.decr(b"k", 1), Err(Error::NotFound));
    assert_eq!(read(&store, b"k"), Some(vec![5]));
    assert_eq!(drops.load(Ordering::SeqCst), 0);
}

#[test]
fn dropping_the_store_drops_its_objects() {
    for store in stores() {
        let drops = Arc::new(AtomicUsize::new(0));
        for i in 0..50u64 {
            put(&store, format!("k{i}").as_bytes(), numbers(vec![i], &drops), Expiry::Never);
        }
        store.delete(b"k0").unwrap();
        drop(store);
        assert_eq!(drops.load(Ordering::SeqCst), 50);
    }
}

#[test]
fn eviction_frees_objects() {
    // A small cache filled past its budget with objects: evicted ones are
    // dropped, live ones stay readable, none is dropped twice.
    let store =
        Store::new(Config { memory_limit_bytes: 4 << 20, eviction: Eviction::S3Fifo, ..Config::default() }).unwrap();
    let drops = Arc::new(AtomicUsize::new(0));
    let total = 200_000u64;
    for i in 0..total {
        put(&store, format!("key:{i:08}").as_bytes(), numbers(vec![i], &drops), Expiry::Never);
    }
    let live = (0..total).filter(|i| read(&store, format!("key:{i:08}").as_bytes()) == Some(vec![*i])).count();
    assert!(live > 0 && (live as u64) < total, "some evicted, some kept: {live}");
    store.reclaim();
    drop(store);
    assert_eq!(drops.load(Ordering::SeqCst), total as usize);
}

#[test]
fn readers_and_in_place_writers_on_one_object() {
    let store = Arc::new(Store::new(Config::default()).unwrap());
    let drops = Arc::new(AtomicUsize::new(0));
    put(&store, b"k", numbers(Vec::new(), &drops), Expiry::Never);
    const PUSHES: u64 = 20_000;
    let writer = {
        let store = Arc::clone(&store);
        std::thread::spawn(move || {
            for n in 0..PUSHES {
                assert!(push(&store, b"k", n));
            }
        })
    };
    let mut last = 0;
    while !writer.is_finished() {
        let v = read(&store, b"k").expect("present");
        // A reader sees a prefix of the pushes, never a torn state.
        assert!(v.len() >= last && v.iter().enumerate().all(|(i, &n)| n == i as u64));
        last = v.len();
    }
    writer.join().unwrap();
    assert_eq!(read(&store, b"k").map(|v| v.len() as u64), Some(PUSHES));
}

#[test]
fn objects_count_against_the_budget() {
    // Store mode: writes that grow objects are refused past the budget.
    let store = Store::new(Config { memory_limit_bytes: 8 << 20, ..Config::default() }).unwrap();
    let drops = Arc::new(AtomicUsize::new(0));
    assert!(!store.objects_over_budget());
    put(&store, b"small", numbers(vec![1; 1000], &drops), Expiry::Never);
    assert!(!store.objects_over_budget());
    put(&store, b"big", numbers(vec![1; 2 << 20], &drops), Expiry::Never); // 16 MiB
    assert!(store.objects_over_budget());
    store.delete(b"big").unwrap();
    wait_drops(&store, &drops, 1);
    assert!(!store.objects_over_budget());

    // Cache mode: never refused; the reclaimer evicts items until items
    // and objects fit the budget together.
    let budget = 32 << 20;
    let store =
        Store::new(Config { memory_limit_bytes: budget, eviction: Eviction::S3Fifo, ..Config::default() }).unwrap();
    let value = [7u8; 100];
    let keys = 200_000u64; // about 24 MB of items
    for i in 0..keys {
        store.set(format!("s:{i:08}").as_bytes(), &value, 0, Expiry::Never).unwrap();
    }
    let live_strings =
        |store: &Store| (0..keys).filter(|i| store.get(format!("s:{i:08}").as_bytes(), |_| ()).is_some()).count();
    let before = live_strings(&store);
    put(&store, b"big", numbers(vec![1; 2 << 20], &drops), Expiry::Never); // 16 MiB
    assert!(!store.objects_over_budget());
    // The maintenance thread re-accounts every round; writes make it
    // reclaim. Bounded wait for the segments to shrink below the budget
    // less the object.
    let mut fits = false;
    for round in 0..2000u64 {
        store.set(format!("t:{round}").as_bytes(), &value, 0, Expiry::Never).unwrap();
        let s = store.stats();
        if s.reserved_bytes as usize + s.object_bytes as usize <= budget {
            fits = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(fits, "segments shrink to leave room for the object: {:?}", store.stats());
    assert!(live_strings(&store) < before, "items were evicted to make room");
    // The object is an item like any other: S3-FIFO may have evicted it
    // too (it was never read), and then its charge is gone with it.
    match read(&store, b"big") {
        Some(v) => assert_eq!(v.len(), 2 << 20),
        None => {
            store.reclaim();
            assert_eq!(store.stats().object_bytes, 0);
        }
    }
}
