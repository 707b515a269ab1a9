//! Hooks for persistence (issue 5; the log and files are in
//! `amalgam-persist`): a journal of mutations, fork-less point-in-time
//! snapshots, and the restore calls recovery uses.
//!
//! # The journal
//!
//! Every acknowledged change of a key's state reaches [`Journal::record`]
//! from inside [`Store`]'s write path, *under the key's bucket lock*, as
//! the key's whole new state ([`Change::Put`] carries the new item: an
//! append, incr or touch is journaled as the value it produced; a
//! collection, engine `object.rs`, as its tagged item, with two
//! exceptions that keep a large object out of the log: a rewrite that
//! keeps the object is a [`Change::Meta`], and an in-place change of it a
//! [`Change::Op`] carrying the writer's record of the change). So the
//! calls for one key arrive in the order the changes were made, and
//! replaying them is idempotent: applying a suffix of the journal twice, or
//! over a snapshot that already holds some of it, gives the same store.
//! What is *not* journaled: evictions and the reclamation of expired or
//! flushed items (cache mode and the sweep change no key's logical state;
//! an expired item is simply not restored), and failed operations.
//!
//! # Snapshots without fork (DESIGN.md § Persistence)
//!
//! Redis forks and lets copy-on-write keep the point-in-time image; the
//! Redis/memcached study measured up to +209% memory for it. Here the
//! snapshot is a cursor over the buckets, and a writer that is about to
//! change a bucket the cursor has not reached yet first serializes that
//! bucket's items (its *pre-image*) into the snapshot. Each bucket is
//! therefore serialized exactly once, by whichever comes first, and always
//! in its state at the cut; both happen under the bucket lock, which
//! already orders them. The per-bucket "snapshot epoch" is one bit in a
//! bitmap made for each snapshot (bucket count / 8 bytes: 2 MiB for 16 M
//! buckets), so the extra memory is that bitmap plus the sink's buffers,
//! not a copy of the data.
//!
//! The table must not be replaced while the cursor runs (the bitmap is
//! indexed by its buckets), so a snapshot and an expansion exclude each
//! other through `expand_gate`: the snapshot waits for a running expansion
//! to finish, and the expand thread does not start one while a snapshot
//! runs (chains absorb the inserts meanwhile; CHAIN_NODES_MAX leaves three
//! orders of magnitude of headroom over the load factor).
//!
//! ## The cut and the journal
//!
//! [`Store::snapshot`] calls `before_cut` (persistence rotates its log
//! there and remembers the position L) and then publishes the snapshot.
//! A write journaled before L finished its record under its bucket lock
//! before the cut, so whoever serializes that bucket later sees it. A write
//! journaled at or after L may or may not be in the snapshot, and is
//! replayed from the log either way; replay is idempotent. Recovery is
//! therefore: load the snapshot, replay the log from L. (A
//! [`Change::Op`] is not idempotent: it carries its object's version,
//! object.rs, and replay applies it only to the version before it.)
//!
//! ## The flush state
//!
//! The flush fence (items with a CAS unique below it are gone) and a
//! pending delayed flush live in no bucket, so the argument above does not
//! cover them. Fix (found by tests/persist_hooks.rs): they used to be
//! neither in the snapshot nor ordered with the cut, and recovery went
//! wrong three ways: a `flush_all` journaled before L whose fence the
//! cursor did not see yet (it was applied after the record) left its items
//! in the snapshot, and nothing after L removed them; a write that took
//! its CAS unique before a flush and was journaled after L came back to
//! life (the recovered store had no fence); and a `flush_all <delay>`
//! journaled before L was lost. Also, a replayed Flush did not cancel a
//! pending delayed flush as `flush_all` had, and two concurrent flushes
//! could be journaled in the opposite order to their effects. Now
//! * every change of the flush state and its record happen under one
//!   mutex (`Inner::flush_lock`), so the journal's order of Flush and
//!   FlushAt records is the order they took effect in, and after every
//!   Flush no delayed flush is pending;
//! * [`Store::snapshot`], after its cursor, journals the flush state under
//!   that mutex: a Flush with the current fence and, if one is pending, a
//!   FlushAt. These records come after L, so "load the snapshot, replay
//!   the log from L" restores the state; flush records between L and them
//!   are replayed too, which is harmless (a fence only ever rises and is
//!   applied by CAS unique, whatever the order);
//! * [`Store::restore_flush`] cancels a pending delayed flush.
//!
//! A writer reads the snapshot pointer after taking its bucket lock; with
//! no snapshot running that is one load of a read-mostly line.

use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::Arc;

use crate::local::Garbage;
use crate::store::{Expiry, Inner, ItemRef, NewValue, Pinned, Store, Update};
use crate::table::{BucketGuard, Table};

/// Buckets the snapshot cursor visits per epoch pin, so it never holds
/// back reclamation for long.
const SNAPSHOT_STEP_BUCKETS: usize = 4096;

/// A change of one key's state, as the journal sees it.
#[derive(Debug)]
pub enum Change<'a> {
    /// The key now holds this item: its whole new state (value, flags,
    /// expiry, CAS). Every successful set, add, replace, cas, append,
    /// prepend, incr, decr, touch and gat arrives as one. A typed item
    /// (object.rs) carries its tag ([`ItemRef::tag`]); for a new object
    /// item, [`ItemRef::object`] reads the object (no writer can hold it:
    /// `record` runs under the bucket lock every object writer takes).
    Put(ItemRef<'a>),
    /// The key was deleted (a delete, or a write whose expiry is already
    /// past).
    Delete(&'a [u8]),
    /// A `flush_all` took effect: every item whose CAS is below
    /// `fence_cas` is gone, whenever it was written, and no delayed flush
    /// is pending. [`Store::snapshot`] also journals the current fence
    /// this way (see "The flush state" in the module notes).
    Flush {
        /// Items with a CAS below this are flushed.
        fence_cas: u64,
    },
    /// A delayed `flush_all` was scheduled for unix time `at` (a later
    /// [`Change::Flush`] follows when it takes effect). [`Store::snapshot`]
    /// also journals a pending one this way.
    FlushAt {
        /// Unix seconds.
        at: u32,
    },
    /// The key's item was rewritten keeping its object (the same cell:
    /// `NewValue::Same` on an object item, as the EXPIRE family and
    /// PERSIST do): only its flags, expiry, CAS and marks may differ, so
    /// a log records those and not the object (which may be large).
    Meta(ItemRef<'a>),
    /// The object of this object item (object.rs) was changed in place;
    /// `record` is the change in the writer's own encoding
    /// (`Update::InPlace`). The item's other fields are unchanged; its
    /// object's [`ObjectCell::version`](crate::ObjectCell::version) is
    /// the one this change made (one more than before it): replay over a
    /// snapshot applies a change only to the version before it, since a
    /// change journaled just after the cut may be in the snapshot already
    /// (ops, unlike Puts, are not idempotent).
    Op {
        /// The item, for its key (and kind, through its object).
        item: ItemRef<'a>,
        /// The change, as the writer encoded it.
        record: &'a [u8],
    },
}

/// Receives every change to the store (see the module notes for the
/// ordering guarantee). Implemented by persistence.
///
/// `record` is called under a bucket lock on the writer's thread (Flush
/// and FlushAt under the store's flush lock instead): it must be short,
/// must not block on I/O for long, and must not call back into the store.
///
/// ```
/// use amalgam_engine::{Change, Expiry, Journal, Store};
/// use std::sync::{Arc, Mutex};
/// #[derive(Default)]
/// struct Keys(Mutex<Vec<Vec<u8>>>);
/// impl Journal for Keys {
///     fn record(&self, change: Change<'_>) {
///         if let Change::Put(it) = change {
///             self.0.lock().unwrap().push(it.key().to_vec());
///         }
///     }
/// }
/// let store = Store::new(Default::default()).unwrap();
/// let keys = Arc::new(Keys::default());
/// assert!(store.set_journal(keys.clone()).is_ok());
/// store.set(b"k", b"v", 0, Expiry::Never).unwrap();
/// assert_eq!(*keys.0.lock().unwrap(), vec![b"k".to_vec()]);
/// ```
pub trait Journal: Send + Sync + 'static {
    /// One change; see the trait notes.
    fn record(&self, change: Change<'_>);

    /// A [`Change::Put`] of a plain item (`TAG_BYTES`) whose value is at
    /// least [`JOURNAL_LARGE_VALUE_BYTES_MIN`], under the bucket lock like
    /// [`Journal::record`]. Answer true to have the record made in two
    /// steps: its place taken now, under the lock, so one key's records
    /// keep their order, and its bytes framed in [`Journal::fill`], which
    /// the writer then calls with the same item once it has released the
    /// bucket lock (inside [`Store::atomically`], once the transaction has
    /// released all its buckets), in the order of these calls, on this
    /// thread, still pinned in the epoch: the item's memory is readable
    /// there, and a plain item's bytes never change once published,
    /// though the key may hold another item by then. So a large value is
    /// not copied into its record while other writers of the bucket wait
    /// (issue 18 §5). The default records it at once and answers false.
    fn record_large(&self, item: ItemRef<'_>) -> bool {
        self.record(Change::Put(item));
        false
    }

    /// The second step of a [`Journal::record_large`] that answered true.
    fn fill(&self, _item: ItemRef<'_>) {}
}

/// A plain item's value at least this long is journaled through
/// [`Journal::record_large`] (its record framed after the bucket lock is
/// released): a copy of a megabyte is about the longest a bucket lock
/// should be held for one.
pub const JOURNAL_LARGE_VALUE_BYTES_MIN: usize = 1 << 20;

/// Receives a snapshot's items. `item` is called under the item's bucket
/// lock, from the thread running [`Store::snapshot`] or from a writer
/// about to change a bucket the cursor has not reached; it must be short
/// and must not call back into the store.
///
/// ```
/// use amalgam_engine::{ItemRef, SnapshotSink};
/// use std::sync::atomic::{AtomicU64, Ordering};
/// struct Count(AtomicU64);
/// impl SnapshotSink for Count {
///     fn item(&self, _: ItemRef<'_>) {
///         self.0.fetch_add(1, Ordering::Relaxed);
///     }
/// }
/// ```
pub trait SnapshotSink: Send + Sync {
    /// One live item as of the snapshot's cut.
    fn item(&self, item: ItemRef<'_>);
}

/// What one snapshot did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SnapshotStats {
    /// Items given to the sink.
    pub items: u64,
    /// Buckets serialized by writers before the cursor reached them.
    pub buckets_by_writers: u64,
    /// Buckets in the table.
    pub buckets: u64,
}

/// The state of a running snapshot, reached by writers through
/// `Inner::snapshot`.
pub(crate) struct SnapState {
    table: *const Table,
    /// Bit i set: bucket i has been serialized.
    done: Box<[AtomicU64]>,
    sink: Arc<dyn SnapshotSink>,
    items: AtomicU64,
    by_writers: AtomicU64,
}

// SAFETY: `table` is only compared by address and dereferenced by no one
// through this struct; the rest is Send + Sync.
unsafe impl Send for SnapState {}
// SAFETY: as above.
unsafe impl Sync for SnapState {}

impl SnapState {
    /// Marks bucket i serialized; true if this call did it first.
    fn claim(&self, i: usize) -> bool {
        let bit = 1u64 << (i % 64);
        self.done[i / 64].fetch_or(bit, Ordering::AcqRel) & bit == 0
    }
}

impl Inner {
    /// The writers' side of the snapshot: called with bucket `i` of the
    /// guard's table locked, before any change to it.
    #[inline]
    pub(crate) fn snapshot_before_write(&self, guard: &BucketGuard<'_>, hash: u64) {
        let s = self.snapshot.load(Ordering::Acquire);
        if !s.is_null() {
            // SAFETY: a published SnapState is freed only after it is
            // unpublished and a grace period has passed; we are pinned.
            let s = unsafe { &*s };
            let t = guard.table();
            if std::ptr::eq(t, s.table) && self.serialize_bucket(s, guard, t.index(hash)) {
                s.by_writers.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Serializes bucket i's live items into the snapshot unless it was
    /// serialized already; true if this call did it.
    fn serialize_bucket(&self, s: &SnapState, guard: &BucketGuard<'_>, i: usize) -> bool {
        if !s.claim(i) {
            return false;
        }
        let mut now = None;
        let mut n = 0;
        guard.for_each_item(|p| {
            // SAFETY: p is in the chain we hold locked.
            let it = unsafe { ItemRef::new(p) };
            if self.is_live(&it, &mut now) {
                s.sink.item(it);
                n += 1;
            }
        });
        s.items.fetch_add(n, Ordering::Relaxed);
        true
    }
}

impl Store {
    /// Attaches the journal that receives every later change (see
    /// [`Journal`]). Once per store; recovery restores first, then
    /// attaches, so restored items are not journaled again.
    ///
    /// Returns the journal back if one is attached already.
    pub fn set_journal(&self, journal: Arc<dyn Journal>) -> Result<(), Arc<dyn Journal>> {
        self.inner.journal.set(journal)
    }

    /// Writes a point-in-time snapshot of every live item to `sink`
    /// without stopping writers and without copying the store (see the
    /// module notes). `before_cut` runs just before the cut; persistence
    /// rotates its log there. Blocks the calling thread until every bucket
    /// is serialized; one snapshot at a time (a second caller waits).
    /// With a journal attached, it then journals the store's flush state
    /// (a [`Change::Flush`], and a [`Change::FlushAt`] if one is pending),
    /// which replaying the log from the cut restores.
    ///
    /// ```
    /// use amalgam_engine::{ItemRef, SnapshotSink, Expiry, Store};
    /// use std::sync::{Arc, Mutex};
    /// #[derive(Default)]
    /// struct Keys(Mutex<Vec<Vec<u8>>>);
    /// impl SnapshotSink for Keys {
    ///     fn item(&self, it: ItemRef<'_>) {
    ///         self.0.lock().unwrap().push(it.key().to_vec());
    ///     }
    /// }
    /// let store = Store::new(Default::default()).unwrap();
    /// store.set(b"a", b"1", 0, Expiry::Never).unwrap();
    /// let keys = Arc::new(Keys::default());
    /// let stats = store.snapshot(keys.clone(), || ());
    /// assert_eq!(stats.items, 1);
    /// assert_eq!(*keys.0.lock().unwrap(), vec![b"a".to_vec()]);
    /// ```
    pub fn snapshot(&self, sink: Arc<dyn SnapshotSink>, before_cut: impl FnOnce()) -> SnapshotStats {
        self.snapshot_paced(sink, before_cut, &mut || ())
    }

    /// [`Store::snapshot`], calling `between_steps` after each step of
    /// SNAPSHOT_STEP_BUCKETS buckets, unpinned and holding no lock: a
    /// background snapshot sleeps there to bound its share of the CPU.
    ///
    /// ```
    /// use amalgam_engine::{ItemRef, SnapshotSink, Store};
    /// use std::sync::Arc;
    /// struct Nothing;
    /// impl SnapshotSink for Nothing {
    ///     fn item(&self, _: ItemRef<'_>) {}
    /// }
    /// let store = Store::new(Default::default()).unwrap();
    /// let mut steps = 0;
    /// store.snapshot_paced(Arc::new(Nothing), || (), &mut || steps += 1);
    /// assert!(steps >= 1);
    /// ```
    pub fn snapshot_paced(
        &self,
        sink: Arc<dyn SnapshotSink>,
        before_cut: impl FnOnce(),
        between_steps: &mut dyn FnMut(),
    ) -> SnapshotStats {
        let inner = &*self.inner;
        // Excludes expansion: the table stays the same until we are done.
        let _gate = inner.expand_gate.lock().unwrap_or_else(|e| e.into_inner());
        let local = inner.epochs.local(&inner.shared);
        let pin = Pinned::new(inner);
        let t = pin.current();
        debug_assert!(t.successor().is_none(), "the gate excludes a running expansion");
        let n = t.bucket_count();
        let state = Box::new(SnapState {
            table: t,
            done: (0..n.div_ceil(64)).map(|_| AtomicU64::new(0)).collect(),
            sink,
            items: AtomicU64::new(0),
            by_writers: AtomicU64::new(0),
        });
        // The table stays (the gate holds expansion off), so the pin can
        // go before before_cut, which may do I/O.
        drop(pin);
        before_cut();
        let state = Box::into_raw(state);
        inner.snapshot.store(state, Ordering::SeqCst);
        // SAFETY: we free it only below, after unpublishing it.
        let s = unsafe { &*state };
        let mut i = 0;
        while i < n {
            let pin = Pinned::new(inner);
            let end = (i + SNAPSHOT_STEP_BUCKETS).min(n);
            // The table cannot be retired while we hold the gate.
            let t = pin.current();
            debug_assert!(std::ptr::eq(t, s.table));
            for b in i..end {
                let g = t.lock(b).expect("no bucket moves while the gate is held");
                inner.serialize_bucket(s, &g, b);
            }
            drop(pin);
            i = end;
            between_steps();
        }
        // The flush state, which no bucket holds (module notes). After the
        // cursor, so that a flusher stalled between its record and its
        // effect delays only this step; any time after the cut is right.
        if let Some(j) = inner.journal.get() {
            inner.journal_flush_state(&**j);
        }
        inner.snapshot.store(std::ptr::null_mut(), Ordering::SeqCst);
        let stats = SnapshotStats {
            items: s.items.load(Ordering::Relaxed),
            buckets_by_writers: s.by_writers.load(Ordering::Relaxed),
            buckets: n as u64,
        };
        // A writer may still hold the pointer (every bit is set, so it
        // calls nothing); free the state after a grace period, and wait for
        // it so the sink is dropped before we return.
        // SAFETY: unpublished above; the Box was leaked by us.
        inner.epochs.retire(local, &inner.shared, Garbage::Snapshot(unsafe { Box::from_raw(state) }));
        inner.wait_grace(local);
        stats
    }

    /// Recovery: stores an item exactly as it was, CAS unique included,
    /// and keeps later CAS uniques above it. Not journaled if called
    /// before [`Store::set_journal`]. An item already expired is not
    /// stored (and removes the key).
    ///
    /// ```
    /// use amalgam_engine::{Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// store.restore(b"k", b"v", 7, Expiry::Never, 1000).unwrap();
    /// assert_eq!(store.get(b"k", |it| (it.flags(), it.cas())), Some((7, 1000)));
    /// assert!(store.set(b"k", b"w", 0, Expiry::Never).unwrap() > 1000);
    /// ```
    pub fn restore(&self, key: &[u8], value: &[u8], flags: u32, expiry: Expiry, cas: u64) -> Result<(), crate::Error> {
        self.inner.raise_cas_counter(cas.saturating_add(1));
        // What was stored once comes back whatever `-I` is now: a RESP
        // string is limited by its length alone (`with_value_bytes_max`).
        self.with_value_bytes_max(crate::ITEM_SIZE_MAX_BYTES_LIMIT, || {
            self.store_with_cas(key, value, flags, expiry, cas).map(|_| ())
        })
    }

    /// Recovery: stores a typed item (object.rs) exactly as it was: the
    /// value `make` builds (packed bytes under `tag`, or an object) with
    /// these fields and CAS unique, keeping later CAS uniques above it.
    /// `make` may run more than once (cache mode makes room and retries,
    /// as `Store::update`); an expired item is not stored (and removes the
    /// key). For TAG_BYTES items use [`Store::restore`].
    ///
    /// ```
    /// use amalgam_engine::{Expiry, NewValue, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// store.restore_typed(b"k", 3, 0, Expiry::Never, 50, || NewValue::Bytes(b"packed")).unwrap();
    /// assert_eq!(store.get(b"k", |it| (it.tag(), it.cas(), it.value().to_vec())), Some((3, 50, b"packed".to_vec())));
    /// ```
    pub fn restore_typed<'v>(
        &self,
        key: &[u8],
        tag: u8,
        flags: u32,
        expiry: Expiry,
        cas: u64,
        mut make: impl FnMut() -> NewValue<'v>,
    ) -> Result<(), crate::Error> {
        self.inner.raise_cas_counter(cas.saturating_add(1));
        let r = self.update_cas(key, Some(cas), |_| {
            (Update::Put { value: make(), flags, expiry, fresh_cas: true, marks: tag & crate::object::TAG_MASK }, ())
        });
        r.map(|_| ())
    }

    /// Recovery: applies a journaled [`Change::Meta`]: the key's live item
    /// keeps its value (and tag) and takes these fields and CAS unique.
    /// Nothing happens to an absent key (the log's order makes that
    /// impossible unless the file was damaged).
    ///
    /// ```
    /// use amalgam_engine::{Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// store.restore(b"k", b"v", 0, Expiry::Never, 10).unwrap();
    /// store.restore_meta(b"k", 5, Expiry::At(4_000_000_000), 10).unwrap();
    /// assert_eq!(store.get(b"k", |it| (it.flags(), it.expiry())), Some((5, Expiry::At(4_000_000_000))));
    /// ```
    pub fn restore_meta(&self, key: &[u8], flags: u32, expiry: Expiry, cas: u64) -> Result<(), crate::Error> {
        self.inner.raise_cas_counter(cas.saturating_add(1));
        let r = self.update_cas(key, Some(cas), |old| match old {
            Some(o) => (Update::Put { value: NewValue::Same, flags, expiry, fresh_cas: true, marks: o.marks() }, ()),
            None => (Update::Keep, ()),
        });
        r.map(|_| ())
    }

    /// Recovery: applies a journaled [`Change::Flush`]: every item whose
    /// CAS is below `fence_cas` is gone, later writes get CAS uniques at or
    /// above it, and a pending delayed flush is cancelled (as `flush_all`
    /// cancels one; a delayed flush that ran cleared itself).
    ///
    /// ```
    /// use amalgam_engine::{Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// store.restore(b"old", b"v", 0, Expiry::Never, 10).unwrap();
    /// store.restore(b"new", b"v", 0, Expiry::Never, 30).unwrap();
    /// store.restore_flush(20);
    /// assert!(store.get(b"old", |_| ()).is_none());
    /// assert!(store.get(b"new", |_| ()).is_some());
    /// ```
    pub fn restore_flush(&self, fence_cas: u64) {
        self.inner.restore_flush_state(fence_cas);
    }

    /// The CAS unique the next write would get at the earliest (recovery
    /// checks and tests).
    ///
    /// ```
    /// let store = amalgam_engine::Store::new(Default::default()).unwrap();
    /// assert!(store.cas_floor() >= 1);
    /// ```
    pub fn cas_floor(&self) -> u64 {
        self.inner.cas_floor()
    }

    /// The flush fence: items whose CAS is below it are gone (0: never
    /// flushed). A replica shifts its primary's CAS uniques above it.
    ///
    /// ```
    /// let store = amalgam_engine::Store::new(Default::default()).unwrap();
    /// assert_eq!(store.flush_fence(), 0);
    /// store.flush_all();
    /// assert!(store.flush_fence() > 0);
    /// ```
    pub fn flush_fence(&self) -> u64 {
        self.inner.flush_cas.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// A snapshot state retired through the epoch scheme.
pub(crate) type SnapBox = Box<SnapState>;

/// Null: no snapshot running.
pub(crate) fn no_snapshot() -> AtomicPtr<SnapState> {
    AtomicPtr::new(std::ptr::null_mut())
}
