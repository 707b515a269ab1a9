//! `Journal::record_large` and `Journal::fill` (issue 18 §5): the Put of a
//! plain value of `JOURNAL_LARGE_VALUE_BYTES_MIN` or more comes in two
//! steps, the place under the key's bucket lock and the fill once it is
//! released (in a transaction, once all its buckets are), in the order
//! the places were taken, with the item as published, readable even after
//! another thread has replaced it. Small values and collections come
//! through `record` as before. Nothing measures time: every wait is
//! bounded and fails the test when it runs out.

use amalgam_engine::{Change, Expiry, ItemRef, Journal, Store, JOURNAL_LARGE_VALUE_BYTES_MIN};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::time::Duration;

/// How long a write of the key from another thread may take in `fill`
/// (it waits for the bucket lock if the lock is still held: then the
/// test fails).
const OTHER_WRITER_WAIT: Duration = Duration::from_secs(10);

#[derive(Default)]
struct TwoStep {
    store: OnceLock<Arc<Store>>,
    events: Mutex<Vec<String>>,
    /// The key another thread overwrites during each fill.
    overwrite: bool,
}

impl TwoStep {
    fn push(&self, e: String) {
        self.events.lock().unwrap().push(e);
    }

    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.events.lock().unwrap())
    }
}

fn key(it: &ItemRef<'_>) -> String {
    String::from_utf8_lossy(it.key()).into_owned()
}

impl Journal for TwoStep {
    fn record(&self, change: Change<'_>) {
        if let Change::Put(it) = change {
            self.push(format!("put {} {}", key(&it), it.value().len()));
        }
    }

    fn record_large(&self, it: ItemRef<'_>) -> bool {
        self.push(format!("place {} {}", key(&it), it.value().len()));
        true
    }

    fn fill(&self, it: ItemRef<'_>) {
        let first = it.value()[0];
        if self.overwrite {
            // The bucket is released: another thread replaces the item
            // at once (it would wait for the lock otherwise).
            let store = Arc::clone(self.store.get().unwrap());
            let k = it.key().to_vec();
            let (tx, rx) = mpsc::channel();
            std::thread::spawn(move || {
                store.set(&k, b"small", 0, Expiry::Never).unwrap();
                let _ = tx.send(());
            });
            assert!(rx.recv_timeout(OTHER_WRITER_WAIT).is_ok(), "fill ran with the bucket still locked");
        }
        // The item as published, still readable (the writer's epoch pin).
        assert!(it.value().iter().all(|&b| b == first), "the item changed under the fill");
        self.push(format!("fill {} {} {}", key(&it), it.value().len(), first as char));
    }
}

fn store_with(j: &Arc<TwoStep>) -> Arc<Store> {
    let store = Arc::new(Store::new(Default::default()).unwrap());
    let _ = j.store.set(Arc::clone(&store));
    assert!(store.set_journal(j.clone()).is_ok());
    store
}

#[test]
fn a_large_put_is_placed_under_the_lock_and_filled_after_it() {
    let j = Arc::new(TwoStep { overwrite: true, ..Default::default() });
    let store = store_with(&j);
    let big = vec![b'a'; JOURNAL_LARGE_VALUE_BYTES_MIN];
    store.with_value_bytes_max(usize::MAX, || store.set(b"k", &big, 0, Expiry::Never)).unwrap();
    let n = JOURNAL_LARGE_VALUE_BYTES_MIN;
    // The other thread's overwrite, journaled in between.
    assert_eq!(j.take(), [format!("place k {n}"), "put k 5".into(), format!("fill k {n} a")]);
    assert_eq!(store.get(b"k", |it| it.value().to_vec()).as_deref(), Some(&b"small"[..]));
    // Just under the line: one record, as before.
    store.with_value_bytes_max(usize::MAX, || store.set(b"s", &big[..n - 1], 0, Expiry::Never)).unwrap();
    assert_eq!(j.take(), [format!("put s {}", n - 1)]);
}

#[test]
fn a_transactions_large_puts_are_filled_in_order_after_its_buckets_are_released() {
    let j = Arc::new(TwoStep { overwrite: true, ..Default::default() });
    let store = store_with(&j);
    let n = JOURNAL_LARGE_VALUE_BYTES_MIN;
    let (a, more) = (vec![b'a'; n], vec![b'x'; n]);
    store.set(b"k2", b"x", 0, Expiry::Never).unwrap();
    j.take();
    store.with_value_bytes_max(usize::MAX, || {
        store.atomically(&[&b"k1"[..], b"k2"], || {
            store.set(b"k1", &a, 0, Expiry::Never).unwrap();
            store.append(b"k2", &more).unwrap();
            store.set(b"k1", b"tiny", 0, Expiry::Never).unwrap();
            store.set(b"k1", &a, 0, Expiry::Never).unwrap();
            // Inside: places only.
            let inside = j.take();
            assert_eq!(
                inside,
                [format!("place k1 {n}"), format!("place k2 {}", n + 1), "put k1 4".into(), format!("place k1 {n}")]
            );
        })
    });
    // After: the fills, in order, each with its own item (the first k1
    // was replaced inside the transaction, and is still readable).
    let after: Vec<String> = j.take().into_iter().filter(|e| e.starts_with("fill")).collect();
    assert_eq!(after, [format!("fill k1 {n} a"), format!("fill k2 {} x", n + 1), format!("fill k1 {n} a")]);
}

#[test]
fn a_transaction_that_panics_still_fills_its_places() {
    let j = Arc::new(TwoStep::default());
    let store = store_with(&j);
    let n = JOURNAL_LARGE_VALUE_BYTES_MIN;
    let big = vec![b'p'; n];
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        store.with_value_bytes_max(usize::MAX, || {
            store.atomically(&[&b"k"[..]], || {
                store.set(b"k", &big, 0, Expiry::Never).unwrap();
                panic!("a handler's bug");
            })
        })
    }));
    assert!(r.is_err());
    // The place is filled (the log would wait for it forever otherwise),
    // and the bucket is free.
    assert_eq!(j.take(), [format!("place k {n}"), format!("fill k {n} p")]);
    store.set(b"k", b"after", 0, Expiry::Never).unwrap();
}
