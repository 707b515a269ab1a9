//! The public store: memcached's item operations on the index, the pools
//! and the epoch scheme, plus the dedicated expand (maintenance) thread.
//!
//! This file holds the store's state: [`Store`], the [`Inner`] its threads
//! share (each field says what it holds and its invariant; `flush_lock`
//! gives the lock order), cache mode's [`Cache`], and [`Pinned`], the epoch
//! pin every operation runs under; and how a store is torn down (`Drop`).
//! The operations are split by concern, each file adding its own
//! `impl Store` / `impl Inner` blocks:
//!
//! | file | what |
//! |---|---|
//! | `config.rs` | [`Config`], its defaults and limits, [`ConfigError`]; `Store::new` |
//! | `error.rs` | [`Error`]: why an operation did not store, find or change an item |
//! | `expiry.rs` | [`Expiry`] and the store's clock (seconds, milliseconds, `advance_clock`) |
//! | `item_ref.rs` | [`ItemRef`], the read-only view of a stored item |
//! | `read.rs` | the key hash, lookup, liveness; GET, [`Reader`] sessions, batched reads and prefetch |
//! | `write.rs` | the write commands (set … delete, `update`, `rename`), each a decision; [`NewValue`], [`Update`] |
//! | `mutate.rs` | the heart of every write (`Inner::mutate`: decide and apply under the bucket lock); CAS uniques; building an item |
//! | `memory.rs` | where an item's memory comes from and goes: pools, segments, making room, retiring |
//! | `limits.rs` | the per-thread value limit, the memory limit at run time, cache mode's memory account |
//! | `flush.rs` | `flush_all`, now or delayed, and the flush state the journal records |
//! | `cache.rs` | cache mode's policy in force and switching it; the wake slack; queue dumps for tests |
//! | `maintenance.rs` | the maintenance thread: table doubling, sweeps, reclaiming ahead of writers |
//! | `stats.rs` | [`Stats`], the counters summed over threads, the stall watcher |
//!
//! A write's path through them: `write.rs` says what to do with the
//! key's live item; `memory.rs` makes room before any lock is taken
//! (cache mode); `mutate.rs` takes a CAS unique, builds the new item and,
//! under the bucket lock, publishes it, journals and counts it; the item
//! it replaced is retired through the epochs (`memory.rs`) and, in cache
//! mode, its segment is later reclaimed (`reclaim.rs`). A read
//! (`read.rs`) takes no lock and writes nothing shared.
//!
//! The crate's other files add to the same types through what is
//! `pub(crate)` here (`reclaim.rs`, `outsized.rs`, `journal.rs`,
//! `txn.rs`, `prepared.rs`, `scan.rs`). Inside this directory, what one
//! file calls in another is `pub(super)`, and `Inner`'s private fields are
//! declared in this file so that every file of the store, and no other,
//! reaches them.

mod cache;
mod config;
mod error;
mod expiry;
mod flush;
mod item_ref;
mod limits;
mod maintenance;
mod memory;
mod mutate;
mod read;
mod stats;
mod write;

pub use config::{
    Config, ConfigError, INITIAL_BUCKETS_LOG2_DEFAULT, ITEM_SIZE_MAX_BYTES_DEFAULT, ITEM_SIZE_MAX_BYTES_LIMIT,
    MEMORY_LIMIT_BYTES_DEFAULT,
};
pub use error::Error;
pub use expiry::{Expiry, RELATIVE_EXPIRY_SECONDS_MAX};
pub use item_ref::ItemRef;
pub use maintenance::{CACHE_INDEX_BUDGET_SHARE, CACHE_LOAD_PER_BUCKET_MAX, LOAD_PER_BUCKET_MAX};
pub(crate) use mutate::{Decision, IndexFull};
pub use read::{Reader, BATCH_WINDOW_KEYS};
pub use stats::Stats;
pub use write::{check_key, counter_value, NewValue, Update};

use crate::item;
use crate::local::{Epochs, Local};
use crate::pool::{SharedPool, SMALL_ITEM_BYTES_MAX};
use crate::table::Table;
#[cfg(doc)]
use cache::{ACTIVE_CLOCK, ACTIVE_S3FIFO};
use mutate::drop_unpublished_object;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// An embeddable, concurrent key-value store with memcached's item
/// semantics: Mercury's chained hash table with MemC3's optimistic reads.
///
/// `Store` is `Send + Sync`; share it with `Arc<Store>` or `&Store` across
/// any number of threads. Dropping it stops its expand thread and frees all
/// memory.
///
/// ```
/// use amalgam_engine::{Expiry, Store};
/// use std::sync::Arc;
/// let store = Arc::new(Store::new(Default::default()).unwrap());
/// let s2 = Arc::clone(&store);
/// std::thread::spawn(move || s2.set(b"from-thread", b"1", 0, Expiry::Never).unwrap()).join().unwrap();
/// assert!(store.get(b"from-thread", |_| ()).is_some());
/// ```
pub struct Store {
    pub(crate) inner: Arc<Inner>,
    maintenance: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("stats", &self.stats()).finish()
    }
}

pub(crate) struct Inner {
    /// The table that owns keys not yet routed elsewhere; during an
    /// expansion its successor takes over bucket by bucket.
    current: AtomicPtr<Table>,
    /// The key hash, seeded per store (Config::hash_seed or random).
    hasher: foldhash::quality::FixedState,
    pub(crate) item_size_max: usize,
    /// The mean load above which the table doubles: LOAD_PER_BUCKET_MAX,
    /// or CACHE_LOAD_PER_BUCKET_MAX in cache mode.
    load_max: u64,
    pub(crate) shared: SharedPool,
    pub(crate) epochs: Epochs,
    /// Next unreserved CAS value (CAS uniques start at 1).
    cas_counter: AtomicU64,
    /// Items with a CAS below this were flushed.
    pub(crate) flush_cas: AtomicU64,
    /// Bumped by every flush so threads drop CAS blocks from before it,
    /// and by the write clock's ticks while store times are wanted
    /// (clock.rs).
    flush_generation: AtomicU64,
    /// Store times from CAS uniques (clock.rs): `mg l`, `me la=`.
    write_clock: crate::clock::WriteClock,
    /// Unix time of a delayed flush_all, 0 if none.
    flush_at: AtomicU64,
    /// Held while the flush state (`flush_cas`, `flush_at`) changes and
    /// the change is journaled, and while a snapshot journals that state
    /// (journal.rs, "The flush state"). Lock order: a bucket lock, then
    /// this (a liveness check under a bucket lock may run a due delayed
    /// flush); its holder takes no bucket lock and calls only the journal.
    flush_lock: std::sync::Mutex<()>,
    /// Set when the maintenance thread should sweep flushed items.
    sweep_requested: AtomicBool,
    /// The background expiry sweep waits until then (Redis's CLIENT PAUSE
    /// holds active expiry): [`Store::hold_expiry`].
    expiry_held_until: std::sync::Mutex<Option<std::time::Instant>>,
    /// Set by the first write of an item with an expiry: until then the
    /// background expiry sweep has nothing to find and does not run.
    pub(crate) ttl_seen: AtomicBool,
    /// Items removed by the sweeps, and full expiry-sweep passes.
    swept_items: AtomicU64,
    /// The most `item_bytes + index_bytes` seen (Stats::peak_used_bytes):
    /// raised by the maintenance loop, every MAINTENANCE_PERIOD at most,
    /// and by each `stats` call.
    peak_used_bytes: AtomicU64,
    expiry_sweeps: AtomicU64,
    expansions: AtomicU64,
    /// Seconds added to the system clock (tests of expiry).
    clock_offset: AtomicI64,
    shutdown: AtomicBool,
    /// Set by the maintenance thread when it has nothing left to do: no
    /// expansion due and everything it retired (old tables) freed.
    quiet: AtomicBool,
    maintenance_thread: std::sync::OnceLock<std::thread::Thread>,
    /// Cache mode's state; None in store mode.
    pub(crate) cache: Option<Cache>,
    /// Persistence's journal, if attached (journal.rs).
    pub(crate) journal: std::sync::OnceLock<Arc<dyn crate::journal::Journal>>,
    /// Who times the engine's steps (stall.rs), if anyone.
    pub(crate) stall_watcher: std::sync::OnceLock<Arc<dyn crate::stall::StallWatcher>>,
    /// Who hears of keys created, expired and evicted (key_events.rs).
    pub(crate) key_watcher: std::sync::OnceLock<Arc<dyn crate::key_events::KeyWatcher>>,
    /// Which of those events it wants now (`key_events::CREATED` …).
    pub(crate) key_events: std::sync::atomic::AtomicU8,
    /// The count of items per class of key, if the server asked for it
    /// (key_classes.rs).
    pub(crate) key_classes: std::sync::OnceLock<crate::key_classes::KeyClasses>,
    /// The flush fence the last whole sweep ran under: while `flush_cas`
    /// is above it, flushed items may still be in the index (and in the
    /// key classes' counts).
    swept_fence: AtomicU64,
    /// The running snapshot's state, null if none (journal.rs).
    pub(crate) snapshot: AtomicPtr<crate::journal::SnapState>,
    /// Held by the expand thread while it expands and by a snapshot while
    /// it runs: the two exclude each other (journal.rs).
    pub(crate) expand_gate: std::sync::Mutex<()>,
    /// The policy's `freq_max` in cache mode, 0 in store mode: a GET hit
    /// raises an item's frequency while it is below this (so 0 writes
    /// nothing, with one load of a field read on every GET anyway).
    freq_max: std::sync::atomic::AtomicU8,
}

/// Cache mode's shared state (the segments themselves are in
/// `SharedPool::segments`, where the epoch scheme frees into them).
pub(crate) struct Cache {
    /// Both policies, built at start so the policy can change at run time
    /// (`Store::set_eviction`); `active` names the one in force. Concrete
    /// types rather than `dyn Policy`: a writer's `admit` is inlined.
    clock: crate::evict::Clock,
    pub(crate) s3fifo: crate::evict::S3Fifo,
    /// `switches << 1 | policy`, policy [`ACTIVE_S3FIFO`] or
    /// [`ACTIVE_CLOCK`], switches counting `Store::set_eviction`'s changes.
    /// Relaxed: a writer or the reclaimer that reads the old policy for a
    /// moment after a switch makes one more decision by it, which the
    /// contract allows (`Store::set_eviction`). Each writer remembers the
    /// value its last write saw (`Owned::policy_seen`): a write that sees
    /// another one seals that thread's open segments first
    /// (`Inner::alloc_in_segment`), so no segment stays open in a queue
    /// the new policy never writes to.
    active: std::sync::atomic::AtomicU32,
    /// Held while `Store::set_eviction` changes `active` and the frequency
    /// cap with it.
    switching: std::sync::Mutex<()>,
    /// Serializes the policy's decisions (the Policy contract: `reclaim`
    /// never runs concurrently with itself) and owns the reclaimer's open
    /// segments, into which kept items are copied. A victim's reclamation
    /// holds it throughout; a merge per window (reclaim.rs, `Copies`).
    pub(crate) reclaimer: std::sync::Mutex<crate::segment::OpenSegments>,
    /// Whether the maintenance thread reclaims ahead of writers.
    pub(crate) background: bool,
    /// Free segments above the reserve the maintenance thread keeps
    /// (`wake_slack_for` of the budget's segments; set again by each
    /// memory account, as the budget may change).
    pub(crate) wake_slack: AtomicUsize,
    /// [`Config::index_in_budget`].
    pub(crate) index_in_budget: bool,
    /// [`Config::merge_segments`].
    pub(crate) merge: bool,
    /// Which items a reclamation may evict ([`crate::evict::Scope`] as its
    /// index; `Store::set_scope`). Relaxed: read once per reclaimed
    /// segment, never on the read or write path; a reclamation that read
    /// the old scope for a moment after a change decides one segment by it.
    pub(crate) scope: std::sync::atomic::AtomicU8,
    /// The last write that needed room found none and was refused (out
    /// of memory): set by `Inner::with_room`, cleared by a reclamation
    /// that freed a segment. Read by `Store::out_of_memory` (MULTI's
    /// queue-time check), never on the request path.
    pub(crate) refusing: AtomicBool,
    /// When the maintenance thread last looked for room for a refusing
    /// volatile scope (unix ms; maintenance.rs, VOLATILE_PROBE_PERIOD_MS).
    pub(crate) probed_ms: AtomicU64,
    /// volatile-ttl: the last reclaimed segments' median deadlines and
    /// how many were recorded (`Cache::ttl_cut`).
    pub(crate) ttl_medians: std::sync::Mutex<([u64; cache::TTL_MEDIANS_KEPT], usize)>,
    /// Unit tests: the next this many segment allocations fail as if the
    /// free list were empty (`Inner::alloc_in_segment`).
    #[cfg(test)]
    alloc_failures: std::sync::atomic::AtomicU32,
    pub(crate) evictions: AtomicU64,
    pub(crate) evicted_unfetched: AtomicU64,
    pub(crate) expired_unfetched: AtomicU64,
    pub(crate) reclaimed_segments: AtomicU64,
    pub(crate) merged_segments: AtomicU64,
    /// See `Stats::writer_reclaims`.
    pub(crate) writer_reclaims: AtomicU64,
    /// Outsized items in the order they were written (outsized.rs).
    pub(crate) outsized: std::sync::Mutex<std::collections::VecDeque<crate::outsized::Outsized>>,
}

/// RAII pin of the calling thread's epoch.
pub(crate) struct Pinned<'s> {
    inner: &'s Inner,
    pub(crate) local: &'s Local,
}

impl<'s> Pinned<'s> {
    pub(crate) fn new(inner: &'s Inner) -> Pinned<'s> {
        let local = inner.epochs.local(&inner.shared);
        inner.epochs.pin(local);
        Pinned { inner, local }
    }

    pub(crate) fn current(&self) -> &'s Table {
        // SAFETY: `current` always holds a live table; a replaced one is
        // retired through the epoch scheme, which we are pinned in.
        unsafe { &*self.inner.current.load(Ordering::Acquire) }
    }
}

impl Drop for Pinned<'_> {
    fn drop(&mut self) {
        self.inner.epochs.unpin(self.local, &self.inner.shared);
    }
}

/// Adds to a counter only the owner thread writes (no RMW needed).
#[inline]
pub(crate) fn local_add(c: &AtomicI64, delta: i64) {
    c.store(c.load(Ordering::Relaxed) + delta, Ordering::Relaxed);
}

/// Counts a change of `items` items of `key`, `ttl` of them with a
/// deadline (the layout's expiry bit, [`crate::item::has_expiry`]), in the
/// items with a deadline and in the key's namespace (`namespace.rs`). For
/// a key stored as is and no deadline: two tests (the mutate path passes
/// the key it holds, so nothing of the item is decoded for it).
#[inline(always)]
pub(crate) fn count_change(local: &crate::local::Local, key: &[u8], items: i64, ttl: i64) {
    if ttl != 0 {
        local_add(&local.ttl_items, ttl);
    }
    if key.first() == Some(&crate::namespace::NS_ESCAPE) {
        count_namespaced(local, key, items, ttl);
    }
}

/// The namespace part of [`count_change`], out of line.
#[cold]
#[inline(never)]
fn count_namespaced(local: &crate::local::Local, key: &[u8], items: i64, ttl: i64) {
    if let Some(ns) = crate::namespace::counted(key) {
        local_add(&local.ns_items[ns], items);
        local_add(&local.ns_ttl_items[ns], ttl);
    }
}

/// [`count_change`] for one item at `p`.
///
/// # Safety
/// `p` is a live item (or one just unlinked and not yet reclaimed) that
/// the caller's pin or bucket lock protects.
#[inline(always)]
pub(crate) unsafe fn count_item(local: &crate::local::Local, p: *const u8, delta: i64) {
    // SAFETY: forwarded from the caller.
    let (ttl, key) = unsafe { (crate::item::has_expiry(p), crate::item::key(p)) };
    count_change(local, key, delta, if ttl { delta } else { 0 });
}

impl Drop for Store {
    fn drop(&mut self) {
        self.inner.shutdown.store(true, Ordering::Release);
        if let Some(h) = self.maintenance.take() {
            h.thread().unpark();
            let _ = h.join();
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Only large items (store mode) and outsized items (cache mode,
        // outsized.rs) live outside the chunks the SharedPool unmaps and
        // the segment log.
        let store_mode = self.shared.segments.is_none();
        let segments = self.shared.segments.as_ref();
        let large = |p: *const u8| {
            // An object item owns its cell (object.rs): drop it with the
            // store.
            // SAFETY: every pointer in the table is a live item; we are the
            // last owner of the store, so no reader holds the cell.
            unsafe { drop_unpublished_object(p) };
            // SAFETY: as above.
            let total = unsafe { item::layout(p) }.total();
            let outside = match segments {
                None => total > SMALL_ITEM_BYTES_MAX,
                Some(s) => !s.contains(p),
            };
            if outside {
                let bytes = total.next_multiple_of(4096);
                let layout = std::alloc::Layout::from_size_align(bytes, 64).expect("layout");
                // SAFETY: large items are allocated with exactly this layout.
                unsafe { std::alloc::dealloc(p as *mut u8, layout) };
            }
        };
        let t = *self.current.get_mut();
        // SAFETY: `current` is the Box leaked when the table became current.
        let table = unsafe { Box::from_raw(t) };
        table.for_each_item_exclusive(large);
        drop(table);
        for local in self.epochs.locals_mut() {
            local.drain_garbage(|b| {
                if store_mode && b.bytes > SMALL_ITEM_BYTES_MAX {
                    let layout = std::alloc::Layout::from_size_align(b.bytes, 64).expect("layout");
                    // SAFETY: as above.
                    unsafe { std::alloc::dealloc(b.ptr, layout) };
                }
            });
        }
    }
}
