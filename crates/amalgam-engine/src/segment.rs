//! Cache mode's item memory: a log of fixed-size segments (Segcache,
//! Yang et al., NSDI '21 §4.1–4.3), replacing the size classes of
//! `pool.rs` when `Config::eviction` is not `None`.
//!
//! # Layout
//!
//! The log is one anonymous mapping of `count = reserve / segment_bytes`
//! segments, reserved at start and paged in by first touch: the reserve is
//! the budget (`memory_limit_bytes`), or the most it may be raised to at
//! run time (`Config::memory_limit_max_bytes`, then mapped with
//! `MAP_NORESERVE`). The memory account below, not the mapping, bounds
//! what is resident. Items
//! are laid end to end in a segment, each starting 8-byte aligned, and are
//! self-describing (`item::layout`), so a sealed segment is walked from
//! offset 0 to its fill offset:
//!
//! ```text
//!  segment id s: base + s * segment_bytes
//!  +--------+--+--------------+---------+--+----- ... ----+-----------+
//!  | item 0 |pad| item 1      | item 2  |pad|             | (unused)  |
//!  +--------+--+--------------+---------+--+----- ... ----+-----------+
//!  0                                                      fill        segment_bytes
//! ```
//!
//! The header of a segment lives in a side table ([`SegmentMeta`], one
//! cache line each, so the mapping holds nothing but items and an item may
//! use all `segment_bytes`): state, queue, fill offset, live bytes and
//! creation order.
//!
//! # Life of a segment
//!
//! ```text
//!  FREE ──take──► OPEN (one owner bump-allocates; already at its queue's tail)
//!                  │ owner takes its next segment: seal
//!                  ▼
//!                SEALED (immutable but for FREQ bits) ──pop_victim──► RECLAIMING
//!                                                                       │ reclaimed (reclaim.rs),
//!                                                                       │ retired through the epochs
//!                  FREE ◄──────────── release (after the grace period) ─┘
//! ```
//!
//! A segment joins its queue when it is opened, so queue order is opening
//! order, and only SEALED segments are reclaimed: every item in a sealed
//! segment was written (and published or abandoned) by an operation that
//! has finished, because the owner seals a segment only when its *next*
//! allocation does not fit. An OPEN segment found at a queue's head (an
//! idle thread's) is rotated to the tail instead.
//!
//! # Resident segments and the memory account
//!
//! `-m` covers the items and the index (`store/limits.rs`, "memory account"):
//! the store sets a *limit* on resident segment memory, the budget minus
//! what the index takes, and lowers it when the index grows. Residency is
//! counted in *granules*: the mapping starts on a 2 MiB boundary and is
//! advised for hugepages, so a granule is one hugepage (two 1 MiB
//! segments), or one segment where segments are larger. A granule is
//! either *cold* (never touched, or given back with `MADV_DONTNEED`: no
//! page resident) or resident; the free segments of resident granules are
//! *warm*. Writers take warm segments first; a cold granule is paged in
//! (its segments all become warm) only while fewer than `limit` granules
//! are resident; and a free segment that completes a wholly free granule
//! while more than `limit` are resident sends that granule cold at once.
//! So the segments available to writers (`free_count`) are the warm ones
//! plus the room left under the limit, and when the limit drops below
//! what is in use, `free_count` falls to the reserve and the usual
//! reclamation evicts until it holds again. Cold granules are taken
//! lowest first.
//!
//! # Locks
//!
//! `free` and each queue are short `Mutex`es taken once per segment
//! (1 MiB of items), never nested in each other, and never while a bucket
//! lock is held *and* waiting is possible: they only guard a vector push or
//! pop. Bump allocation inside an open segment takes no lock.

use crate::evict::Queue;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Bytes in one segment: memcached's slab page size, so memcached's default
/// largest item (`-I 1m`) fits one segment.
///
/// ```
/// assert_eq!(amalgam_engine::SEGMENT_BYTES, 1 << 20);
/// ```
pub const SEGMENT_BYTES: usize = 1 << 20;
/// Free segments the eviction thread keeps in reserve; a writer that finds
/// no more than this many reclaims a segment itself before taking one
/// (unless a reclaimed segment is already waiting for its grace period:
/// then it takes from the reserve). The reserve is what the reclaimer
/// copies kept items into. One (it was two): at `-m 64` each idle segment
/// costs 2% of the items a cache holds.
///
/// ```
/// assert!(amalgam_engine::EVICT_RESERVE_SEGMENTS >= 1);
/// ```
pub const EVICT_RESERVE_SEGMENTS: usize = 1;
/// Fewest segments a cache-mode budget may hold: the reserve, the
/// reclaimer's two open segments, one writer's two, and two to reclaim.
///
/// ```
/// assert!(amalgam_engine::SEGMENTS_MIN > amalgam_engine::EVICT_RESERVE_SEGMENTS);
/// ```
pub const SEGMENTS_MIN: usize = EVICT_RESERVE_SEGMENTS + 6;
/// Smallest segment accepted (the hidden test knob `Config::segment_bytes`):
/// room for one small item.
pub const SEGMENT_BYTES_MIN: usize = 32;
/// Items start at multiples of this in a segment.
pub(crate) const ITEM_ALIGN_BYTES: usize = 8;
/// Smallest segment mapping put on hugepages (see `Segments::new`): from
/// here on a 2 MiB granule is at most 0.4% of the budget, and hugepages
/// save the TLB misses of gigabytes of items.
///
/// ```
/// assert!(amalgam_engine::HUGEPAGE_BUDGET_MIN >= 256 * (2 << 20));
/// ```
pub const HUGEPAGE_BUDGET_MIN: usize = 512 << 20;
/// Largest segment count (ids are u32).
const SEGMENTS_MAX: usize = u32::MAX as usize;

const _: () = assert!(SEGMENT_BYTES.is_power_of_two() && SEGMENT_BYTES % ITEM_ALIGN_BYTES == 0);
const _: () = assert!(SEGMENT_BYTES_MIN % ITEM_ALIGN_BYTES == 0);

/// `SegmentMeta::state` values.
const FREE: u8 = 0;
const OPEN: u8 = 1;
const SEALED: u8 = 2;
const RECLAIMING: u8 = 3;

/// The side-table header of one segment.
#[repr(align(64))]
#[derive(Debug)]
pub(crate) struct SegmentMeta {
    /// FREE, OPEN, SEALED or RECLAIMING. The owner's release store of
    /// SEALED pairs with the reclaimer's acquire load in `pop_victim`, so
    /// the reclaimer sees every item byte the owner wrote.
    state: AtomicU8,
    /// `Queue::index` of the queue the segment belongs to.
    queue: AtomicU8,
    /// Bytes used from the start; final once SEALED.
    fill: AtomicUsize,
    /// Bytes of items the index points to (published minus unlinked):
    /// never below the bytes of the items linked now, never below 0
    /// (`add_live`). The reclaimer retires a segment reading 0 unwalked
    /// and merges sparse runs by it (reclaim.rs, 2a).
    live_bytes: AtomicI64,
    /// Creation order: a global counter taken when the segment was opened.
    seq: AtomicU64,
}

/// An open segment as its single owner sees it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct OpenSegment {
    pub id: u32,
    pub fill: usize,
}

/// Every thread's open segments, one per queue.
pub(crate) type OpenSegments = [Option<OpenSegment>; 2];

/// Where a run popped for merging stood in its queue, so the merged
/// segment can take its place (`Segments::insert_sealed`) even though other
/// reclaimers popped from the head, and writers pushed at the tail, while
/// it was merged: the nearest SEALED segment before the run, as (id, seq)
/// so that a segment freed and reused in the meantime is not mistaken for
/// it. None when there is none (the run was at the head).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RunPlace {
    after: Option<(u32, u64)>,
}

/// The segment log of one store.
pub(crate) struct Segments {
    base: *mut u8,
    segment_bytes: usize,
    count: usize,
    metas: Box<[SegmentMeta]>,
    /// Free segment ids and the resident-segment account.
    free: Mutex<FreeLists>,
    /// Segments a writer may take now: warm ones plus the room under the
    /// limit (`FreeLists::available`), published under `free`.
    free_count: AtomicUsize,
    /// Segments RECLAIMING: popped, waiting for their grace period.
    reclaiming: AtomicUsize,
    /// Per queue, segment ids oldest first (OPEN ones included).
    queues: [Mutex<VecDeque<u32>>; 2],
    queue_len: [AtomicUsize; 2],
    next_seq: AtomicU64,
    /// `FreeLists::resident`, published for statistics.
    resident: AtomicUsize,
    /// Segments taken and not yet free (`resident - warm`), published.
    in_use: AtomicUsize,
}

/// The free segments, split by residency, and the account they obey.
#[derive(Debug)]
struct FreeLists {
    /// Free segments of resident granules (a stack: recently freed, likely
    /// cached, first).
    warm: Vec<u32>,
    /// Cold granules (no page resident, every segment free), lowest on top.
    cold: Vec<u32>,
    /// Granules that may hold resident pages: all but the cold ones.
    resident: usize,
    /// Most granules that may be resident (the store's memory account).
    limit: usize,
    /// Segments per granule.
    per: usize,
}

impl FreeLists {
    /// Segments a writer may take now, and where the next warm one is in
    /// `warm` (if any may be taken).
    ///
    /// Free segments are the warm ones plus those of cold granules there
    /// is room to page in; no more are available than the limit leaves
    /// beside the segments in use. When the limit has dropped below the
    /// resident granules, the `resident - limit` granules with the most
    /// free segments are *draining*: their free segments are not handed
    /// out, so as reclamation frees their other segments they become
    /// wholly free and `trim` sends them cold. (Writers would otherwise
    /// refill every hole as fast as reclamation makes it.) Among the rest,
    /// the next segment taken fills the granule with the fewest free
    /// segments (keeping free segments together), the most recently freed
    /// first. Bounded by the warm list's length.
    fn plan(&self, count: usize) -> (usize, Option<usize>) {
        let per = self.per;
        let room = self.limit.saturating_sub(self.resident).min(self.cold.len()) * per;
        let left = (self.limit * per).min(count).saturating_sub(self.in_use(count));
        if per == 1 || self.warm.is_empty() {
            let next = self.warm.len().checked_sub(1);
            return ((self.warm.len() + room).min(left), next);
        }
        let warm_in = self.warm_per_granule();
        let mut draining: Vec<(usize, usize)> = warm_in.iter().map(|(&g, &n)| (n, g)).collect();
        draining.sort_unstable_by(|a, b| b.cmp(a));
        draining.truncate(self.resident.saturating_sub(self.limit));
        let draining: std::collections::HashSet<usize> = draining.into_iter().map(|(_, g)| g).collect();
        let takeable = |i: &usize| !draining.contains(&(self.warm[*i] as usize / per));
        let next = (0..self.warm.len()).rev().filter(takeable).min_by_key(|&i| warm_in[&(self.warm[i] as usize / per)]);
        let free = (0..self.warm.len()).filter(takeable).count() + room;
        (free.min(left), next)
    }

    /// Free segments of each resident granule that has any.
    fn warm_per_granule(&self) -> std::collections::HashMap<usize, usize> {
        let mut warm_in = std::collections::HashMap::new();
        for &id in &self.warm {
            *warm_in.entry(id as usize / self.per).or_default() += 1;
        }
        warm_in
    }

    /// Segments resident (whole granules; the last may be partial).
    fn resident_segments(&self, count: usize) -> usize {
        (self.resident * self.per).min(count)
    }

    /// Segments taken and not yet free again.
    fn in_use(&self, count: usize) -> usize {
        self.resident_segments(count).saturating_sub(self.warm.len())
    }
}

// SAFETY: `base` names the mapping this struct owns; all shared state is
// atomic or behind a Mutex, and item bytes are accessed under the rules in
// the module documentation.
unsafe impl Send for Segments {}
// SAFETY: as above.
unsafe impl Sync for Segments {}

impl std::fmt::Debug for Segments {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Segments").field("count", &self.count).field("free", &self.free_count()).finish()
    }
}

impl Segments {
    /// The log for a budget that may later be raised up to `reserve_bytes`
    /// (at least `budget_bytes`; `Store::set_memory_limit`), or Err with
    /// what to change. The mapping covers the reserve; the resident limit
    /// starts at the budget.
    pub(crate) fn new(budget_bytes: usize, reserve_bytes: usize, segment_bytes: usize) -> Result<Segments, String> {
        if segment_bytes < SEGMENT_BYTES_MIN || segment_bytes % ITEM_ALIGN_BYTES != 0 {
            return Err(format!(
                "segment size must be a multiple of {ITEM_ALIGN_BYTES} of at least {SEGMENT_BYTES_MIN}"
            ));
        }
        let budget_count = budget_bytes / segment_bytes;
        if !(SEGMENTS_MIN..=SEGMENTS_MAX).contains(&budget_count) {
            return Err(format!(
                "cache mode needs a memory limit of at least {SEGMENTS_MIN} segments of {segment_bytes} bytes \
                 ({} bytes); got {budget_bytes}",
                SEGMENTS_MIN * segment_bytes
            ));
        }
        let count = (reserve_bytes.max(budget_bytes) / segment_bytes).min(SEGMENTS_MAX);
        // Large budgets of segments of half a hugepage or more live on
        // hugepages, counted in granules of one hugepage (segment sizes
        // are powers of two, so granules tile hugepages exactly) or one
        // segment where segments are larger. Smaller budgets live on small
        // pages, a granule per segment: at `-m 64` rounding the account
        // down to 2 MiB would cost up to 3% of the items. Decided by the
        // budget the store starts with, not the reserve: a small cache
        // that may grow keeps its exact account.
        let huge = segment_bytes * 2 >= crate::pool::CHUNK_BYTES && budget_count * segment_bytes >= HUGEPAGE_BUDGET_MIN;
        let per = if huge { (crate::pool::CHUNK_BYTES / segment_bytes).max(1) } else { 1 };
        let granules = count.div_ceil(per);
        // The starting limit: the budget's granules (a partial last one
        // only when the mapping ends there, as before reserves existed).
        let limit = if count == budget_count { granules } else { budget_count / per };
        let bytes = count * segment_bytes;
        let map = if count > budget_count {
            crate::pool::map_address_space(bytes, huge)
        } else if huge {
            crate::pool::map_zeroed_aligned(bytes)
        } else {
            crate::pool::map_zeroed_small_pages(bytes)
        };
        let base = map.ok_or_else(|| format!("could not map {} bytes of segments", count * segment_bytes))?;
        let metas = (0..count)
            .map(|_| SegmentMeta {
                state: AtomicU8::new(FREE),
                queue: AtomicU8::new(0),
                fill: AtomicUsize::new(0),
                live_bytes: AtomicI64::new(0),
                seq: AtomicU64::new(0),
            })
            .collect();
        Ok(Segments {
            base,
            segment_bytes,
            count,
            metas,
            free: Mutex::new(FreeLists {
                warm: Vec::with_capacity(count),
                cold: (0..granules as u32).rev().collect(),
                resident: 0,
                limit,
                per,
            }),
            free_count: AtomicUsize::new((limit * per).min(count)),
            reclaiming: AtomicUsize::new(0),
            queues: [Mutex::new(VecDeque::with_capacity(count)), Mutex::new(VecDeque::with_capacity(count))],
            queue_len: [AtomicUsize::new(0), AtomicUsize::new(0)],
            next_seq: AtomicU64::new(0),
            resident: AtomicUsize::new(0),
            in_use: AtomicUsize::new(0),
        })
    }

    pub(crate) fn segment_bytes(&self) -> usize {
        self.segment_bytes
    }

    pub(crate) fn count(&self) -> usize {
        self.count
    }

    pub(crate) fn free_count(&self) -> usize {
        self.free_count.load(Ordering::Acquire)
    }

    /// Free segments plus those reclaimed and waiting for their grace
    /// period (free soon, whatever anyone does).
    pub(crate) fn free_or_pending(&self) -> usize {
        self.free_count() + self.pending()
    }

    /// Segments reclaimed and waiting for their grace period.
    pub(crate) fn pending(&self) -> usize {
        self.reclaiming.load(Ordering::Acquire)
    }

    /// Bytes of segment memory that may be resident (resident granules):
    /// the bound on resident item memory.
    pub(crate) fn resident_bytes(&self) -> usize {
        self.resident.load(Ordering::Relaxed) * self.segment_bytes
    }

    /// Sets the most segment bytes that may be resident (rounded down to
    /// whole granules, at least SEGMENTS_MIN segments' worth unless
    /// `starved`, at most the mapping), gives wholly free granules beyond
    /// it back to the kernel, and returns the segments resident after that
    /// (more than `limit()` while items still hold them: the reclaimer
    /// then evicts, since `free_count` is at the reserve). `starved`: the
    /// budget is below the fewest segments a cache works with (CONFIG SET
    /// maxmemory 1, as Redis's tests force out of memory), so no segment
    /// may stay: every evictable item goes and writes answer out of memory.
    pub(crate) fn set_limit_bytes(&self, bytes: usize, starved: bool) -> usize {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        let granule_bytes = free.per * self.segment_bytes;
        let floor = if starved { 0 } else { SEGMENTS_MIN.div_ceil(free.per) };
        let granules = self.count.div_ceil(free.per);
        let limit = (bytes / granule_bytes).clamp(floor.min(granules), granules);
        if limit == free.limit && free.resident <= limit {
            return free.resident_segments(self.count); // the common case: nothing to do
        }
        free.limit = limit;
        self.trim(free)
    }

    /// The current limit, in segments.
    pub(crate) fn limit(&self) -> usize {
        let free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        (free.limit * free.per).min(self.count)
    }

    /// Sends wholly free granules cold, discarding their pages, while more
    /// than `limit` granules are resident; publishes the counts and
    /// returns the resident segment count. The pages are discarded outside
    /// the lock (segments on neither list are taken by no one meanwhile).
    /// Bounded by the warm list's length.
    fn trim(&self, mut free: std::sync::MutexGuard<'_, FreeLists>) -> usize {
        let mut gone = Vec::new();
        if free.resident > free.limit {
            let per = free.per;
            let granule_len = |g: usize| per.min(self.count - g * per);
            let warm_in = free.warm_per_granule();
            let mut whole: Vec<usize> =
                warm_in.into_iter().filter(|&(g, n)| n == granule_len(g)).map(|(g, _)| g).collect();
            whole.sort_unstable();
            whole.truncate(free.resident - free.limit);
            if !whole.is_empty() {
                free.warm.retain(|&id| whole.binary_search(&(id as usize / per)).is_err());
                free.resident -= whole.len();
                gone = whole;
            }
        }
        self.publish(&free);
        let per = free.per;
        drop(free);
        if gone.is_empty() {
            return self.resident.load(Ordering::Relaxed);
        }
        for &g in &gone {
            let first = (g * per) as u32;
            let bytes = per.min(self.count - g * per) * self.segment_bytes;
            // SAFETY: every segment of the granule is FREE and on no list:
            // nothing points into it (each was released after its grace
            // period, or never used), and no one can take it until the
            // granule is pushed below.
            unsafe { crate::pool::discard(self.base_of(first), bytes) };
        }
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        free.cold.extend(gone.iter().map(|&g| g as u32));
        // Lowest on top again (trims are rare and the list is short).
        free.cold.sort_unstable_by(|a, b| b.cmp(a));
        self.publish(&free);
        self.resident.load(Ordering::Relaxed)
    }

    fn publish(&self, free: &FreeLists) {
        self.free_count.store(free.plan(self.count).0, Ordering::Release);
        self.resident.store(free.resident_segments(self.count), Ordering::Relaxed);
        self.in_use.store(free.in_use(self.count), Ordering::Relaxed);
    }

    /// Segments taken and not yet free again (open, sealed, or reclaimed
    /// and waiting for their grace period).
    pub(crate) fn in_use(&self) -> usize {
        self.in_use.load(Ordering::Relaxed)
    }

    /// Bytes each queue holds, whole segments (open ones included), for
    /// `Policy::victim`.
    pub(crate) fn queue_bytes(&self) -> [usize; 2] {
        [0, 1].map(|q| self.queue_len[q].load(Ordering::Relaxed) * self.segment_bytes)
    }

    fn meta(&self, id: u32) -> &SegmentMeta {
        &self.metas[id as usize]
    }

    /// First byte of segment `id`.
    pub(crate) fn base_of(&self, id: u32) -> *mut u8 {
        assert!((id as usize) < self.count);
        // SAFETY: id < count, so the offset is inside the mapping.
        unsafe { self.base.add(id as usize * self.segment_bytes) }
    }

    /// True if `p` lies in the segment log (cache mode's outsized items,
    /// `outsized.rs`, lie outside it).
    pub(crate) fn contains(&self, p: *const u8) -> bool {
        (p as usize).wrapping_sub(self.base as usize) < self.count * self.segment_bytes
    }

    /// The segment holding the item at `p` (an address inside the mapping).
    pub(crate) fn id_of(&self, p: *const u8) -> u32 {
        let off = (p as usize).wrapping_sub(self.base as usize);
        assert!(off < self.count * self.segment_bytes, "item outside the segment log");
        (off / self.segment_bytes) as u32
    }

    /// Counts `bytes` of item at `p` as pointed to (or, negative, no longer
    /// pointed to) by the index. Never below 0: a subtraction follows the
    /// unlink of an item whose addition preceded its link under the same
    /// bucket lock, so the addition is earlier in the count's modification
    /// order (reclaim.rs, 2a). Debug builds check it.
    pub(crate) fn add_live(&self, p: *const u8, bytes: i64) {
        let id = self.id_of(p);
        let before = self.meta(id).live_bytes.fetch_add(bytes, Ordering::Relaxed);
        debug_assert!(
            before + bytes >= 0,
            "segment {id}'s live bytes went below 0 ({before} {bytes:+}): an unlink subtracted what no link added"
        );
    }

    /// Takes a free segment for `queue` if more than `floor` are free, and
    /// appends it to the queue's tail as OPEN.
    fn take(&self, queue: Queue, floor: usize) -> Option<u32> {
        let id = self.take_detached(queue, floor)?;
        let mut q = self.queues[queue.index()].lock().unwrap_or_else(|e| e.into_inner());
        q.push_back(id);
        self.queue_len[queue.index()].store(q.len(), Ordering::Relaxed);
        Some(id)
    }

    /// Bump-allocates `len` bytes (rounded up to ITEM_ALIGN_BYTES) in the
    /// owner's open segment of `queue`; when it is full, takes a free
    /// segment (only if more than `floor` are free) and seals the old one.
    /// None if `len` exceeds a segment or no segment could be taken.
    ///
    /// The caller owns `open` exclusively and must have finished (published
    /// or abandoned) every item it allocated before this call.
    pub(crate) fn bump(&self, open: &mut OpenSegments, queue: Queue, len: usize, floor: usize) -> Option<*mut u8> {
        let len = len.checked_next_multiple_of(ITEM_ALIGN_BYTES)?;
        if len > self.segment_bytes {
            return None;
        }
        let slot = &mut open[queue.index()];
        if let Some(o) = slot {
            if o.fill + len <= self.segment_bytes {
                // SAFETY: o.fill + len <= segment_bytes: inside segment o.id.
                let p = unsafe { self.base_of(o.id).add(o.fill) };
                o.fill += len;
                self.meta(o.id).fill.store(o.fill, Ordering::Relaxed);
                return Some(p);
            }
        }
        let id = self.take(queue, floor)?;
        if let Some(old) = slot.take() {
            self.seal(old);
        }
        *slot = Some(OpenSegment { id, fill: len });
        self.meta(id).fill.store(len, Ordering::Relaxed);
        Some(self.base_of(id))
    }

    /// Makes an open segment reclaimable. Release: every item byte the owner
    /// wrote is visible to the reclaimer's acquire load in `pop_victim`.
    fn seal(&self, o: OpenSegment) {
        let m = self.meta(o.id);
        m.fill.store(o.fill, Ordering::Relaxed);
        m.state.store(SEALED, Ordering::Release);
    }

    /// Seals every segment in `open` (the caller's, which has no item in
    /// progress, as for `bump`) and leaves it empty: the owner's next
    /// write to any queue takes a fresh segment. Used when the eviction
    /// policy changes (`Store::set_eviction`).
    pub(crate) fn seal_open(&self, open: &mut OpenSegments) {
        for slot in open.iter_mut() {
            if let Some(o) = slot.take() {
                self.seal(o);
            }
        }
    }

    /// Removes the oldest SEALED segment of `queue` for reclamation.
    /// An OPEN segment at the head is sealed first if it is one of `own`
    /// (the caller's: it has no item in progress), else rotated to the tail
    /// (another thread is filling it). Bounded by the queue's length.
    /// Returns (id, fill).
    pub(crate) fn pop_victim(&self, queue: Queue, own: &mut [&mut OpenSegments]) -> Option<(u32, usize)> {
        let mut q = self.queues[queue.index()].lock().unwrap_or_else(|e| e.into_inner());
        for _ in 0..q.len() {
            let id = *q.front().expect("non-empty");
            let m = self.meta(id);
            for open in own.iter_mut() {
                let slot = &mut open[queue.index()];
                if let Some(o) = slot.filter(|o| o.id == id) {
                    *slot = None;
                    self.seal(o);
                }
            }
            if m.state.load(Ordering::Acquire) == SEALED {
                q.pop_front();
                self.queue_len[queue.index()].store(q.len(), Ordering::Relaxed);
                m.state.store(RECLAIMING, Ordering::Relaxed);
                self.reclaiming.fetch_add(1, Ordering::AcqRel);
                return Some((id, m.fill.load(Ordering::Relaxed)));
            }
            q.rotate_left(1);
        }
        None
    }

    /// Removes, for merging, the first run of 2..=`run_max` consecutive
    /// SEALED segments of `queue` within its first `scan` positions whose
    /// live bytes add up to at most `live_max` (the run is as long as the
    /// bound allows). Returns the run's place and its (id, fill)s, oldest
    /// first; they are RECLAIMING. Bounded by `scan * run_max` steps.
    pub(crate) fn pop_sparse_run(
        &self,
        queue: Queue,
        scan: usize,
        run_max: usize,
        live_max: i64,
    ) -> Option<(RunPlace, Vec<(u32, usize)>)> {
        let mut q = self.queues[queue.index()].lock().unwrap_or_else(|e| e.into_inner());
        let sealed_live = |id: u32| {
            let m = self.meta(id);
            (m.state.load(Ordering::Acquire) == SEALED).then(|| m.live_bytes.load(Ordering::Relaxed))
        };
        for start in 0..q.len().min(scan) {
            let mut live = 0i64;
            let mut n = 0;
            while n < run_max && start + n < q.len() {
                match sealed_live(q[start + n]) {
                    Some(l) if live + l <= live_max => {
                        live += l;
                        n += 1;
                    }
                    _ => break,
                }
            }
            if n >= 2 {
                let run: Vec<(u32, usize)> = q
                    .drain(start..start + n)
                    .map(|id| {
                        let m = self.meta(id);
                        m.state.store(RECLAIMING, Ordering::Relaxed);
                        (id, m.fill.load(Ordering::Relaxed))
                    })
                    .collect();
                self.queue_len[queue.index()].store(q.len(), Ordering::Relaxed);
                self.reclaiming.fetch_add(run.len(), Ordering::AcqRel);
                // The nearest SEALED segment before the run: sealed segments
                // leave the queue only by being popped, while an OPEN one at
                // the head is rotated to the tail (`pop_victim`), which would
                // carry the merged run to the tail with it.
                let after = q
                    .range(..start)
                    .rev()
                    .find(|&&id| self.meta(id).state.load(Ordering::Acquire) == SEALED)
                    .map(|&id| (id, self.meta(id).seq.load(Ordering::Relaxed)));
                return Some((RunPlace { after }, run));
            }
        }
        None
    }

    /// Takes a free segment (if more than `floor` are free) as OPEN for
    /// `queue` without putting it in the queue: a merge's output, placed
    /// later with [`Segments::insert_sealed`] or handed back with
    /// [`Segments::give_back`].
    pub(crate) fn take_detached(&self, queue: Queue, floor: usize) -> Option<u32> {
        let id = {
            let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
            let (available, mut next) = free.plan(self.count);
            if available <= floor {
                return None;
            }
            if next.is_none() {
                // available > 0 with no takeable warm segment: room under
                // the limit for a cold granule, whose segments all turn warm.
                let g = free.cold.pop().expect("available > floor >= 0") as usize;
                free.resident += 1;
                let per = free.per;
                let ids = g * per..(g * per + per).min(self.count);
                free.warm.extend(ids.rev().map(|id| id as u32));
                next = Some(free.warm.len() - 1);
            }
            let id = free.warm.remove(next.expect("available > 0: a takeable warm segment or room"));
            self.publish(&free);
            id
        };
        let m = self.meta(id);
        debug_assert_eq!(m.state.load(Ordering::Relaxed), FREE);
        m.queue.store(queue.index() as u8, Ordering::Relaxed);
        m.fill.store(0, Ordering::Relaxed);
        m.live_bytes.store(0, Ordering::Relaxed);
        m.seq.store(self.next_seq.fetch_add(1, Ordering::Relaxed), Ordering::Relaxed);
        m.state.store(OPEN, Ordering::Relaxed);
        Some(id)
    }

    /// Seals a detached segment holding `fill` bytes and inserts it in
    /// `queue` at `place`: right after the segment that preceded the run,
    /// if that segment is still in the queue, else at the head (it was
    /// reclaimed, so everything older than the run has gone too).
    /// Release: as `seal`. Bounded by the queue's length.
    pub(crate) fn insert_sealed(&self, queue: Queue, place: RunPlace, id: u32, fill: usize) {
        let m = self.meta(id);
        m.fill.store(fill, Ordering::Relaxed);
        m.state.store(SEALED, Ordering::Release);
        let mut q = self.queues[queue.index()].lock().unwrap_or_else(|e| e.into_inner());
        let at = place
            .after
            .and_then(|(prev, seq)| {
                let i = q.iter().position(|&x| x == prev)?;
                (self.meta(prev).seq.load(Ordering::Relaxed) == seq).then_some(i + 1)
            })
            .unwrap_or(0);
        q.insert(at, id);
        self.queue_len[queue.index()].store(q.len(), Ordering::Relaxed);
    }

    /// Puts a RECLAIMING segment back, SEALED, at the tail of `queue`: a
    /// reclamation under a volatile scope left items in it it may not
    /// evict and had no free segment to copy them to (reclaim.rs,
    /// "Volatile scopes"). It is reclaimed again once the queue has turned
    /// (at the tail, so the next reclamation reaches other segments).
    /// Release: as `seal` (nothing new was written into it).
    pub(crate) fn requeue(&self, queue: Queue, id: u32, fill: usize) {
        let m = self.meta(id);
        assert_eq!(m.state.load(Ordering::Relaxed), RECLAIMING, "only a segment being reclaimed goes back");
        m.fill.store(fill, Ordering::Relaxed);
        m.state.store(SEALED, Ordering::Release);
        {
            let mut q = self.queues[queue.index()].lock().unwrap_or_else(|e| e.into_inner());
            q.push_back(id);
            self.queue_len[queue.index()].store(q.len(), Ordering::Relaxed);
        }
        self.reclaiming.fetch_sub(1, Ordering::AcqRel);
    }

    /// Returns a detached segment nothing was ever published in straight
    /// to the free list (no reader can hold a pointer into it).
    pub(crate) fn give_back(&self, id: u32) {
        self.free_segment(id, OPEN, "only a detached, unused segment is given back");
    }

    /// `state` -> FREE, onto the free list.
    fn free_segment(&self, id: u32, state: u8, why: &str) {
        let m = self.meta(id);
        assert_eq!(m.state.load(Ordering::Relaxed), state, "{why}");
        m.state.store(FREE, Ordering::Relaxed);
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        free.warm.push(id);
        self.trim(free);
    }

    /// Returns a reclaimed segment to the free list. Called only after the
    /// epoch grace period that followed its reclamation, so no reader can
    /// still hold a pointer into it.
    pub(crate) fn release(&self, id: u32) {
        self.free_segment(id, RECLAIMING, "only a reclaimed segment is freed");
        self.reclaiming.fetch_sub(1, Ordering::AcqRel);
    }

    /// The segment ids of `queue`, oldest first, with their fill offsets
    /// (tests and dumps; the fill of an OPEN segment is its owner's last).
    pub(crate) fn queue_snapshot(&self, queue: Queue) -> Vec<(u32, usize)> {
        let q = self.queues[queue.index()].lock().unwrap_or_else(|e| e.into_inner());
        q.iter().map(|&id| (id, self.meta(id).fill.load(Ordering::Acquire))).collect()
    }

    /// The creation order the next segment taken will get: an outsized
    /// item written now sits, in log order, after every segment so far
    /// (`outsized.rs`).
    pub(crate) fn next_seq(&self) -> u64 {
        self.next_seq.load(Ordering::Relaxed)
    }

    /// Live bytes and creation order of segment `id` (also `outsized.rs`:
    /// how far the log's head has moved).
    pub(crate) fn live_and_seq(&self, id: u32) -> (i64, u64) {
        let m = self.meta(id);
        (m.live_bytes.load(Ordering::Relaxed), m.seq.load(Ordering::Relaxed))
    }

    /// The items of segment `id` from 0 to `fill`, in log order. Bounded:
    /// at most `fill / ITEM_ALIGN_BYTES` steps.
    ///
    /// # Safety
    /// The segment's items up to `fill` are all written (it is SEALED or
    /// RECLAIMING, or the caller is its owner) and it is not freed while
    /// `f` runs.
    pub(crate) unsafe fn walk(&self, id: u32, fill: usize, mut f: impl FnMut(*const u8, usize)) {
        let base = self.base_of(id);
        let mut at = 0;
        for _ in 0..fill.div_ceil(ITEM_ALIGN_BYTES) {
            if at >= fill {
                return;
            }
            // SAFETY: at < fill <= segment_bytes; the caller guarantees a
            // written item starts here (items are laid end to end).
            let p = unsafe { base.add(at) };
            // SAFETY: as above.
            let total = unsafe { crate::item::layout(p) }.total();
            f(p, total);
            at += total.next_multiple_of(ITEM_ALIGN_BYTES);
        }
    }
}

impl Drop for Segments {
    fn drop(&mut self) {
        // SAFETY: base and count * segment_bytes are the mapping made in
        // `new`; the store, and so every item reference, is gone.
        unsafe { crate::pool::unmap(self.base, self.count * self.segment_bytes) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_is_one_line() {
        assert_eq!(std::mem::size_of::<SegmentMeta>(), 64);
    }

    #[test]
    fn bump_seals_on_full_and_victims_come_oldest_first() {
        let s = Segments::new(SEGMENTS_MIN * 64, 0, 64).unwrap();
        let mut open: OpenSegments = [None, None];
        let a = s.bump(&mut open, Queue::Main, 30, 0).unwrap();
        let b = s.bump(&mut open, Queue::Main, 30, 0).unwrap();
        assert_eq!(b as usize - a as usize, 32, "8-byte aligned, end to end");
        assert_eq!(s.id_of(a), s.id_of(b));
        assert!(s.pop_victim(Queue::Main, &mut []).is_none(), "another thread's open segment is not reclaimable");
        let c = s.bump(&mut open, Queue::Main, 8, 0).unwrap();
        assert_ne!(s.id_of(c), s.id_of(a), "full: a new segment");
        assert_eq!(s.queue_bytes(), [0, 128]);
        assert_eq!(s.pop_victim(Queue::Main, &mut []), Some((s.id_of(a), 64)));
        assert_eq!(s.free_count(), SEGMENTS_MIN - 2);
        s.release(s.id_of(a));
        assert_eq!(s.free_count(), SEGMENTS_MIN - 1);
        assert!(s.bump(&mut open, Queue::Main, 65, 0).is_none(), "larger than a segment");
        assert!(s.bump(&mut open, Queue::Main, 64, SEGMENTS_MIN).is_none(), "at the floor");
        assert!(s.resident_bytes() <= SEGMENTS_MIN * 64);
        // The caller's own open segment is sealed and reclaimed.
        assert_eq!(s.pop_victim(Queue::Main, &mut [&mut open]), Some((s.id_of(c), 8)));
        assert!(open[Queue::Main.index()].is_none());
    }

    /// A merged run's segment goes back after the segment that preceded
    /// the run, wherever that has moved; at the head when that segment
    /// was reclaimed meanwhile, even if its id was reused since.
    #[test]
    fn merged_run_goes_back_after_its_predecessor() {
        let setup = || {
            let s = Segments::new(SEGMENTS_MIN * 64, 0, 64).unwrap();
            let mut open: OpenSegments = [None, None];
            let ids: Vec<u32> = (0..5).map(|_| s.id_of(s.bump(&mut open, Queue::Main, 64, 0).unwrap())).collect();
            s.add_live(s.base_of(ids[0]), 64); // dense: not part of a sparse run
            let (place, run) = s.pop_sparse_run(Queue::Main, 8, 2, 10).expect("ids 1 and 2 are sparse");
            assert_eq!(run.iter().map(|r| r.0).collect::<Vec<_>>(), ids[1..3]);
            assert_eq!(place, RunPlace { after: Some((ids[0], s.live_and_seq(ids[0]).1)) });
            let out = s.take_detached(Queue::Main, 0).unwrap();
            (s, open, ids, place, out)
        };
        let queue = |s: &Segments| s.queue_snapshot(Queue::Main).iter().map(|q| q.0).collect::<Vec<_>>();
        // Nothing moved.
        let (s, _open, ids, place, out) = setup();
        s.insert_sealed(Queue::Main, place, out, 8);
        assert_eq!(queue(&s), [ids[0], out, ids[3], ids[4]]);
        // The predecessor was reclaimed meanwhile.
        let (s, _open, ids, place, out) = setup();
        assert_eq!(s.pop_victim(Queue::Main, &mut []).map(|v| v.0), Some(ids[0]));
        s.insert_sealed(Queue::Main, place, out, 8);
        assert_eq!(queue(&s), [out, ids[3], ids[4]]);
        // ... and its id reused at the tail.
        let (s, mut open, ids, place, out) = setup();
        assert_eq!(s.pop_victim(Queue::Main, &mut []).map(|v| v.0), Some(ids[0]));
        s.release(ids[0]);
        let mut reused = None;
        for _ in 0..SEGMENTS_MIN {
            let id = s.id_of(s.bump(&mut open, Queue::Main, 64, 0).unwrap());
            if id == ids[0] {
                reused = Some(id);
                break;
            }
        }
        assert_eq!(reused, Some(ids[0]), "the free list hands the id out again");
        s.insert_sealed(Queue::Main, place, out, 8);
        assert_eq!(queue(&s)[0], out);
        // An OPEN segment before the run (another writer's, which
        // `pop_victim` rotates to the tail) is not a place: the head is.
        let s = Segments::new(SEGMENTS_MIN * 64, 0, 64).unwrap();
        let (mut idle, mut busy): (OpenSegments, OpenSegments) = ([None, None], [None, None]);
        let open_id = s.id_of(s.bump(&mut idle, Queue::Main, 8, 0).unwrap());
        let ids: Vec<u32> = (0..4).map(|_| s.id_of(s.bump(&mut busy, Queue::Main, 64, 0).unwrap())).collect();
        let (place, run) = s.pop_sparse_run(Queue::Main, 8, 2, 10).expect("ids 0 and 1 are sparse");
        assert_eq!(run.iter().map(|r| r.0).collect::<Vec<_>>(), ids[..2]);
        assert_eq!(place, RunPlace { after: None });
        let out = s.take_detached(Queue::Main, 0).unwrap();
        s.insert_sealed(Queue::Main, place, out, 8);
        assert_eq!(queue(&s), [out, open_id, ids[2], ids[3]]);
    }

    /// The resident limit, in 2 MiB granules of two 1 MiB segments: a
    /// lower limit makes segments unavailable at once and sends wholly
    /// free granules cold (their pages discarded) as they are released.
    #[test]
    fn limit_bounds_resident_granules() {
        const MIB: usize = 1 << 20;
        let s = Segments::new(HUGEPAGE_BUDGET_MIN, 0, MIB).unwrap();
        assert_eq!(s.set_limit_bytes(17 * MIB, false), 0, "nothing paged in yet");
        assert_eq!(s.limit(), 16, "rounded down to whole granules");
        assert_eq!(s.free_count(), 16);
        let mut open: OpenSegments = [None, None];
        let mut ids = Vec::new();
        while let Some(p) = s.bump(&mut open, Queue::Main, MIB, 0) {
            // SAFETY: p starts a fresh segment of MIB bytes we own.
            unsafe { p.write(0xab) };
            ids.push(s.id_of(p));
        }
        assert_eq!(ids, (0..16).collect::<Vec<u32>>(), "cold granules are taken lowest first, within the limit");
        assert_eq!((s.resident_bytes(), s.free_count()), (16 * MIB, 0));
        // Lower the limit: nothing is free to give back yet, and nothing
        // may be taken until reclamation brings in-use segments under it.
        assert_eq!(s.set_limit_bytes(12 * MIB, false), 16);
        assert_eq!(s.free_count(), 0);
        let mut own = [&mut open];
        for expect_resident in [16, 14, 14, 12] {
            let (id, _) = s.pop_victim(Queue::Main, &mut own).unwrap();
            s.release(id);
            assert_eq!(s.resident_bytes(), expect_resident * MIB, "a granule goes cold once both halves are free");
        }
        assert_eq!(s.free_count(), 0, "12 in use at a limit of 12");
        // SAFETY: segment 0 is FREE and cold; reading it races with no one.
        assert_eq!(unsafe { s.base_of(0).read() }, 0, "a cold granule's pages were discarded");
        // Raise it again: the room comes back as cold granules to page in.
        s.set_limit_bytes(32 * MIB, false);
        assert_eq!(s.free_count(), 20);
    }
}
