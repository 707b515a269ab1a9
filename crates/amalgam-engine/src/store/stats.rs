//! What the store reports about itself: [`Stats`], the item and object
//! counts summed over the threads, and the watcher of its timed steps.

use super::{Inner, Pinned, Store};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Counters describing a store at one moment (each read separately, so
/// mutually consistent only when the store is quiet).
///
/// ```
/// use amalgam_engine::{Expiry, Store};
/// let store = Store::new(Default::default()).unwrap();
/// store.set(b"a", b"1", 0, Expiry::Never).unwrap();
/// assert_eq!(store.stats().items, 1);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// Items in the index (expired ones not yet reclaimed included).
    pub items: u64,
    /// Bytes of those items' keys and values, and their objects' charges
    /// (object.rs).
    pub item_bytes: u64,
    /// Bytes charged for objects (object.rs), included in `item_bytes`.
    pub object_bytes: i64,
    /// Bytes of pool blocks handed out and not yet freed.
    pub block_bytes: i64,
    /// Chunk and large-item bytes reserved against the budget (store
    /// mode); bytes of segments that may be resident (cache mode).
    pub reserved_bytes: u64,
    /// Cache mode: bytes of outsized items (larger than a segment, each
    /// its own block: `outsized.rs`), charged to the budget; 0 in store
    /// mode, whose large items count in `reserved_bytes`.
    pub outsized_bytes: u64,
    /// The budget (`memory_limit_bytes`).
    pub memory_limit_bytes: u64,
    /// Buckets in the current table.
    pub buckets: u64,
    /// Overflow nodes in the current table's arena (linked into chains,
    /// or empty and kept for reuse): its size.
    pub overflow_nodes: u64,
    /// Of those, the ones linked into chains now.
    pub overflow_nodes_in_use: u64,
    /// Bytes of the current index (buckets and overflow nodes).
    pub index_bytes: u64,
    /// The most `item_bytes + index_bytes` the store has held as far as
    /// its maintenance loop saw (it looks at least every 250 ms) and
    /// every `stats` call (Redis's `used_memory_peak`).
    pub peak_used_bytes: u64,
    /// Completed table doublings.
    pub expansions: u64,
    /// True while an expansion is in flight.
    pub expanding: bool,
    /// Cache mode: live items evicted to make room.
    pub evictions: u64,
    /// Cache mode: evicted items that no GET had read.
    pub evicted_unfetched: u64,
    /// Cache mode: expired items reclaimed (on access, by the sweep or by
    /// segment reclamation) that no GET had read.
    pub expired_unfetched: u64,
    /// Cache mode: segments reclaimed.
    pub reclaimed_segments: u64,
    /// Cache mode: segments freed by merging sparse runs (their live items
    /// packed into one segment in the run's place, nothing evicted).
    pub merged_segments: u64,
    /// Cache mode: writes that found the free segments at the reserve and
    /// reclaimed before going on (`Inner::make_room`; their replies waited
    /// for it). Near zero while the maintenance thread keeps ahead.
    pub writer_reclaims: u64,
    /// Expired or flushed items the background sweep removed.
    pub swept_items: u64,
    /// Full passes of the background expiry sweep over the table.
    pub expiry_sweeps: u64,
    /// Cache mode: segments in the budget, and how many a writer may take
    /// now (free and paged in, or room under `segment_limit`).
    pub segments: u64,
    /// See `segments`.
    pub free_segments: u64,
    /// Cache mode: most segments that may be resident, i.e. the budget
    /// less the index (the memory account).
    pub segment_limit: u64,
    /// Cache mode: bytes the eviction policy's own structures may make
    /// resident (S3-FIFO's ghost), on top of the budget.
    pub policy_bytes: u64,
    /// Cache mode: bytes per segment (the largest item it can hold).
    pub segment_bytes: u64,
}

/// Bytes of table `t`'s index: its buckets and overflow nodes, a cache
/// line each.
pub(super) fn index_bytes(t: &crate::table::Table) -> u64 {
    ((t.bucket_count() + t.overflow_nodes()) * 64) as u64
}

impl Inner {
    /// The stall watcher, if one is installed (stall.rs).
    #[inline]
    pub(crate) fn watcher(&self) -> Option<&dyn crate::stall::StallWatcher> {
        self.stall_watcher.get().map(|w| &**w)
    }

    /// Bytes charged for objects now (object.rs, MEMORY): the sum of the
    /// threads' counters (one relaxed load each).
    pub(super) fn object_bytes(&self) -> usize {
        self.epochs.all().map(|l| l.object_bytes.load(Ordering::Relaxed)).sum::<i64>().max(0) as usize
    }

    /// Raises the peak of `item_bytes + index_bytes` to what they are now
    /// and returns it (the maintenance loop; one relaxed load per thread).
    pub(super) fn note_peak(&self, index_bytes: u64) -> u64 {
        let items: u64 = self.epochs.all().fold(0u64, |a, l| a.wrapping_add(l.bytes.load(Ordering::Relaxed) as u64));
        let now = items.wrapping_add(index_bytes);
        self.peak_used_bytes.fetch_max(now, Ordering::Relaxed).max(now)
    }

    pub(super) fn item_count(&self) -> u64 {
        self.epochs.all().map(|l| l.items.load(Ordering::Relaxed)).sum::<i64>().max(0) as u64
    }
}

impl Store {
    /// Installs the watcher of the engine's timed steps (`stall.rs`: table
    /// doubling strides, expiry sweep steps, eviction passes, segment
    /// merges); Err (the watcher back) if one is installed already.
    pub fn set_stall_watcher(
        &self,
        watcher: Arc<dyn crate::stall::StallWatcher>,
    ) -> Result<(), Arc<dyn crate::stall::StallWatcher>> {
        self.inner.stall_watcher.set(watcher)
    }

    /// Number of items in the index (expired but unreclaimed ones included).
    ///
    /// ```
    /// let store = amalgam_engine::Store::new(Default::default()).unwrap();
    /// assert_eq!(store.len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.inner.item_count() as usize
    }

    /// True when [`len`](Self::len) is 0.
    ///
    /// ```
    /// assert!(amalgam_engine::Store::new(Default::default()).unwrap().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A snapshot of the store's counters.
    ///
    /// ```
    /// let store = amalgam_engine::Store::new(Default::default()).unwrap();
    /// assert_eq!(store.stats().buckets, 1024);
    /// ```
    pub fn stats(&self) -> Stats {
        let inner = &*self.inner;
        let pin = Pinned::new(inner);
        let t = pin.current();
        let mut s = Stats {
            items: inner.item_count(),
            memory_limit_bytes: match inner.shared.budget_bytes() {
                usize::MAX => 0,
                b => b as u64,
            },
            reserved_bytes: inner.shared.reserved_bytes() as u64,
            buckets: t.bucket_count() as u64,
            overflow_nodes: t.overflow_nodes() as u64,
            overflow_nodes_in_use: t.overflow_nodes_in_use() as u64,
            expansions: inner.expansions.load(Ordering::Relaxed),
            expanding: t.successor().is_some(),
            ..Stats::default()
        };
        s.index_bytes = index_bytes(t);
        if let (Some(c), Some(segs)) = (&inner.cache, &inner.shared.segments) {
            s.outsized_bytes = s.reserved_bytes;
            s.reserved_bytes = segs.resident_bytes() as u64;
            s.segment_limit = segs.limit() as u64;
            s.policy_bytes = c.policy().memory_bytes() as u64;
            s.evictions = c.evictions.load(Ordering::Relaxed);
            s.evicted_unfetched = c.evicted_unfetched.load(Ordering::Relaxed);
            s.expired_unfetched = c.expired_unfetched.load(Ordering::Relaxed);
            s.reclaimed_segments = c.reclaimed_segments.load(Ordering::Relaxed);
            s.merged_segments = c.merged_segments.load(Ordering::Relaxed);
            s.writer_reclaims = c.writer_reclaims.load(Ordering::Relaxed);
            s.segments = (segs.count().min(inner.shared.budget_bytes() / segs.segment_bytes())) as u64;
            s.free_segments = segs.free_count() as u64;
            s.segment_bytes = segs.segment_bytes() as u64;
        }
        s.swept_items = inner.swept_items.load(Ordering::Relaxed);
        s.expiry_sweeps = inner.expiry_sweeps.load(Ordering::Relaxed);
        for l in inner.epochs.all() {
            s.item_bytes = s.item_bytes.wrapping_add(l.bytes.load(Ordering::Relaxed) as u64);
            s.block_bytes += l.block_bytes.load(Ordering::Relaxed);
            s.object_bytes += l.object_bytes.load(Ordering::Relaxed);
        }
        let used = s.item_bytes.wrapping_add(s.index_bytes);
        s.peak_used_bytes = inner.peak_used_bytes.fetch_max(used, Ordering::Relaxed).max(used);
        s
    }
}
