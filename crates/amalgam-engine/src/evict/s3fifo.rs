//! S3-FIFO (Yang, Zhang, Qiu, Yue, Vinayak: "FIFO queues are all you need
//! for cache eviction", SOSP '23).
//!
//! ```text
//!   new item ──(key hash in ghost?)──no──► Small (10% of bytes) ──head──► freq > 0 ? ──yes──► Main
//!                       │                                                    │no
//!                       yes                                                  ▼
//!                       ▼                                             evict, remember hash in ghost
//!                      Main ──head──► freq > 0 ? ──yes──► Main with freq - 1
//!                                       │no
//!                                       ▼ evict
//! ```
//!
//! Most objects in cache workloads are requested once and never again
//! ("one-hit wonders"); the small queue lets them go after a short stay
//! without ever displacing the main queue, which makes S3-FIFO resistant to
//! scans. The ghost remembers the hashes of items evicted from Small so a
//! key that comes back soon after is admitted straight to Main.
//!
//! # The ghost, without a lock
//!
//! The paper's ghost is a FIFO of as many key hashes as Main holds items.
//! Here it is a direct-mapped table of 16-bit fingerprints
//! (`AtomicU16`, relaxed): a hash selects a slot by its low bits and stores
//! its high 16 bits there, overwriting whatever was there. A newer entry
//! evicts an older one that maps to the same slot, which approximates FIFO
//! order; a false positive needs a 16-bit fingerprint match in that slot
//! (about 2^-16 per lookup, and it only admits one item to Main). Writers consult it concurrently from `admit`,
//! the reclaiming thread fills it; a ghost hit consumes the entry.
//!
//! The table is sized from the budget (2 bytes per slot, up to 128 MiB) and mapped on its
//! own (`GhostTable`: anonymous zeroed memory, advised for hugepages from
//! 2 MiB as the pool's chunks are): no page of it is resident until an
//! eviction writes there, and a probe's random slot costs no 4 KiB TLB
//! miss on top of its cache miss.

use super::{Policy, Queue, Verdict, FREQ_LIMIT};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU8, Ordering};

/// Small queue's share of the cache by default, in percent of bytes (the
/// paper's 10%); [`S3Fifo::set_small_percent`] changes it at run time.
pub const SMALL_QUEUE_PERCENT: u8 = 10;
/// Smallest small-queue share accepted: at 0 no new item would be on
/// probation (every one would go through Small without a stay).
pub const SMALL_QUEUE_PERCENT_MIN: u8 = 1;
/// Largest small-queue share accepted: past half, the probationary queue
/// would be the larger one and the main queue the afterthought, which is
/// no longer the algorithm.
pub const SMALL_QUEUE_PERCENT_MAX: u8 = 50;
/// Fewest ghost entries, whatever the item-count hint.
pub const GHOST_ENTRIES_MIN: usize = 1024;
/// Most ghost entries (2 bytes each: 128 MiB).
const GHOST_ENTRIES_MAX: usize = 1 << 26;
/// An empty ghost slot. A hash whose fingerprint is 0 is stored as 1.
const GHOST_EMPTY: u16 = 0;
const _: () = assert!(GHOST_EMPTY == 0, "a zeroed mapping is an empty ghost");

/// The ghost's slots in a mapping of their own (see the module docs).
struct GhostTable {
    slots: NonNull<AtomicU16>,
    len: usize,
}

// SAFETY: the table is plain memory accessed only through atomics, owned
// by the GhostTable until its drop.
unsafe impl Send for GhostTable {}
// SAFETY: as above: every shared access is an atomic operation.
unsafe impl Sync for GhostTable {}

impl GhostTable {
    /// `len` zeroed (GHOST_EMPTY) slots. Running out of address space here
    /// aborts, as a failed Box allocation would.
    fn new(len: usize) -> GhostTable {
        let layout = std::alloc::Layout::array::<AtomicU16>(len).expect("ghost size fits a layout");
        let Some(p) = crate::pool::map_zeroed(layout.size()) else { std::alloc::handle_alloc_error(layout) };
        // The mapping is page-aligned, so aligned for AtomicU16, and not null.
        let slots = NonNull::new(p as *mut AtomicU16).expect("mmap never returns null on success");
        GhostTable { slots, len }
    }

    #[inline]
    fn get(&self, i: usize) -> &AtomicU16 {
        assert!(i < self.len);
        // SAFETY: i < len slots of the live mapping; zeroed memory is a valid
        // AtomicU16 (0 = GHOST_EMPTY), and every access is atomic.
        unsafe { &*self.slots.as_ptr().add(i) }
    }
}

impl Drop for GhostTable {
    fn drop(&mut self) {
        // SAFETY: exactly the mapping made in `new`; `&mut self` means no
        // reference into it is live.
        unsafe { crate::pool::unmap(self.slots.as_ptr() as *mut u8, self.len * std::mem::size_of::<AtomicU16>()) };
    }
}

impl std::fmt::Debug for GhostTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GhostTable").field("len", &self.len).finish()
    }
}

/// S3-FIFO with a 2-bit frequency.
///
/// ```
/// use amalgam_engine::evict::{Policy, Queue, S3Fifo, Verdict};
/// let p = S3Fifo::new(1000);
/// assert_eq!(p.admit(7), Queue::Small);
/// assert_eq!(p.reclaim(Queue::Small, 0, 7), Verdict::Evict); // remembered in the ghost
/// assert_eq!(p.admit(7), Queue::Main);                        // so it comes back to Main
/// ```
#[derive(Debug)]
pub struct S3Fifo {
    ghost: GhostTable,
    mask: usize,
    /// Set by the first eviction into the ghost (written once, read on
    /// every admission): until then `admit` answers without touching the
    /// ghost, whose random slot is a cache and TLB miss per write (it is
    /// sized from the budget: up to 128 MiB, mostly never written).
    used: AtomicBool,
    /// Small's share of the bytes, in percent ([`SMALL_QUEUE_PERCENT`]
    /// unless set): read by `victim` once per reclaimed segment, relaxed
    /// (a reclamation that reads the old share makes one more choice by it).
    small_percent: AtomicU8,
}

impl S3Fifo {
    /// A policy whose ghost holds about `items_hint` hashes (rounded up to a
    /// power of two within [`GHOST_ENTRIES_MIN`]..=2^26).
    ///
    /// ```
    /// let _ = amalgam_engine::evict::S3Fifo::new(1 << 20);
    /// ```
    pub fn new(items_hint: usize) -> S3Fifo {
        let n = items_hint.clamp(GHOST_ENTRIES_MIN, GHOST_ENTRIES_MAX).next_power_of_two();
        S3Fifo {
            ghost: GhostTable::new(n),
            mask: n - 1,
            used: AtomicBool::new(false),
            small_percent: AtomicU8::new(SMALL_QUEUE_PERCENT),
        }
    }

    /// Small's share of the cache, in percent of bytes.
    ///
    /// ```
    /// let p = amalgam_engine::evict::S3Fifo::new(0);
    /// assert_eq!(p.small_percent(), amalgam_engine::evict::SMALL_QUEUE_PERCENT);
    /// ```
    pub fn small_percent(&self) -> u8 {
        self.small_percent.load(Ordering::Relaxed)
    }

    /// Sets Small's share (from [`SMALL_QUEUE_PERCENT_MIN`] to
    /// [`SMALL_QUEUE_PERCENT_MAX`]), or Err saying the range. Takes effect
    /// at the next reclamation: a larger share keeps new items on
    /// probation longer; a smaller one sends reclamation to Small's head
    /// until it is down to the new share (nothing is moved at once).
    ///
    /// ```
    /// use amalgam_engine::evict::{Policy, Queue, S3Fifo};
    /// let p = S3Fifo::new(0);
    /// assert_eq!(p.victim([15, 85]), Queue::Small);
    /// p.set_small_percent(20).unwrap();
    /// assert_eq!(p.victim([15, 85]), Queue::Main);
    /// assert!(p.set_small_percent(0).unwrap_err().contains("from 1 to 50"));
    /// ```
    pub fn set_small_percent(&self, percent: u8) -> Result<(), String> {
        if !(SMALL_QUEUE_PERCENT_MIN..=SMALL_QUEUE_PERCENT_MAX).contains(&percent) {
            return Err(format!(
                "S3-FIFO's small queue share must be from {SMALL_QUEUE_PERCENT_MIN} to {SMALL_QUEUE_PERCENT_MAX} \
                 percent; got {percent}"
            ));
        }
        self.small_percent.store(percent, Ordering::Relaxed);
        Ok(())
    }

    fn slot(&self, key_hash: u64) -> (&AtomicU16, u16) {
        // The top 16 bits: independent of the slot's (low, at most 26) bits.
        let fp = ((key_hash >> 48) as u16).max(1);
        (self.ghost.get(key_hash as usize & self.mask), fp)
    }

    /// Remembers an evicted key hash.
    fn ghost_insert(&self, key_hash: u64) {
        if !self.used.load(Ordering::Relaxed) {
            self.used.store(true, Ordering::Relaxed);
        }
        let (slot, fp) = self.slot(key_hash);
        slot.store(fp, Ordering::Relaxed);
    }

    /// True (once) if the hash was remembered and not yet displaced.
    fn ghost_take(&self, key_hash: u64) -> bool {
        if !self.used.load(Ordering::Relaxed) {
            return false;
        }
        let (slot, fp) = self.slot(key_hash);
        slot.load(Ordering::Relaxed) == fp
            && slot.compare_exchange(fp, GHOST_EMPTY, Ordering::Relaxed, Ordering::Relaxed).is_ok()
    }
}

impl Policy for S3Fifo {
    fn name(&self) -> &'static str {
        "s3fifo"
    }

    fn memory_bytes(&self) -> usize {
        self.ghost.len * std::mem::size_of::<AtomicU16>()
    }

    fn freq_max(&self) -> u8 {
        FREQ_LIMIT
    }

    fn admit(&self, key_hash: u64) -> Queue {
        if self.ghost_take(key_hash) {
            Queue::Main
        } else {
            Queue::Small
        }
    }

    fn reclaim(&self, queue: Queue, freq: u8, key_hash: u64) -> Verdict {
        match queue {
            // Accessed while on probation: promoted, its count starting over.
            Queue::Small if freq > 0 => Verdict::Keep { queue: Queue::Main, freq: 0 },
            Queue::Small => {
                self.ghost_insert(key_hash);
                Verdict::Evict
            }
            Queue::Main if freq > 0 => Verdict::Keep { queue: Queue::Main, freq: freq - 1 },
            Queue::Main => Verdict::Evict,
        }
    }

    fn victim(&self, bytes: [usize; 2]) -> Queue {
        let small = bytes[Queue::Small.index()];
        let total = small + bytes[Queue::Main.index()];
        let percent = usize::from(self.small_percent());
        if small > 0 && (small * 100 >= total * percent || bytes[Queue::Main.index()] == 0) {
            Queue::Small
        } else {
            Queue::Main
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ghost_remembers_until_displaced_and_answers_once() {
        let p = S3Fifo::new(GHOST_ENTRIES_MIN);
        let h = 0xdead_beef_0000_0005u64;
        assert_eq!(p.reclaim(Queue::Small, 0, h), Verdict::Evict);
        // Another hash in the same slot displaces it.
        let other = 0x1234_5678_0000_0005u64;
        assert_eq!(p.reclaim(Queue::Small, 0, other), Verdict::Evict);
        assert_eq!(p.admit(h), Queue::Small);
        assert_eq!(p.admit(other), Queue::Main);
        assert_eq!(p.admit(other), Queue::Small, "a ghost hit consumes the entry");
    }

    #[test]
    fn victim_keeps_small_near_its_share() {
        let p = S3Fifo::new(0);
        assert_eq!(p.victim([0, 0]), Queue::Main);
        assert_eq!(p.victim([5, 95]), Queue::Main);
        assert_eq!(p.victim([10, 90]), Queue::Small);
        assert_eq!(p.victim([1, 0]), Queue::Small);
    }

    #[test]
    fn main_decrements_before_evicting() {
        let p = S3Fifo::new(0);
        assert_eq!(p.reclaim(Queue::Main, 3, 1), Verdict::Keep { queue: Queue::Main, freq: 2 });
        assert_eq!(p.reclaim(Queue::Main, 1, 1), Verdict::Keep { queue: Queue::Main, freq: 0 });
        assert_eq!(p.reclaim(Queue::Main, 0, 1), Verdict::Evict);
        assert_eq!(p.reclaim(Queue::Small, 2, 1), Verdict::Keep { queue: Queue::Main, freq: 0 });
    }
}
