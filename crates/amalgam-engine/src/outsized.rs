//! Cache mode's outsized items: items larger than one segment.
//!
//! # Why
//! A segment (`segment.rs`) holds whole items, so before this an item had
//! to fit one segment, and segments were as large as `-I` rounded up: a
//! 512 MB RESP string needed 512 MB segments, and a small budget (`-m 8`)
//! had only eight 1 MiB segments, about three of them kept free or open
//! (0.55x memcached's kilobyte items, docs/cache-mode.md § Small budgets).
//! Now segments stay small and an item that does not fit one is
//! *outsized*: allocated on its own, charged to the same budget, and
//! evicted by the same policy.
//!
//! # How it works
//! * **Memory.** An outsized item is one block from the system allocator
//!   (`LocalPool::alloc_outsized`, rounded to [`OUTSIZED_ALIGN_BYTES`]),
//!   laid out like any item, so the index, GETs and the journal see no
//!   difference. Its bytes are counted in the shared pool's reservation,
//!   which cache mode uses for nothing else, and the memory account
//!   (`Inner::account_memory`) charges that reservation: the segments'
//!   resident limit drops by what outsized items take, and the reclaimer
//!   evicts small items until both fit the budget together.
//! * **Bound.** Outsized items together may take at most
//!   [`Inner::outsized_cap`]: the budget less the most the index may take
//!   (1/[`CACHE_INDEX_BUDGET_SHARE`](crate::CACHE_INDEX_BUDGET_SHARE))
//!   and the segments the log needs to run
//!   ([`SEGMENTS_MIN`](crate::SEGMENTS_MIN)). An item larger than that is
//!   refused as too large; one that fits the cap but not what is left of
//!   it makes room first.
//! * **Eviction.** Outsized items are queued in the order they were
//!   written (`Cache::outsized`: key hash and address). A write that finds
//!   no room notes the size it wants and reports out of memory; before
//!   its retry, `Inner::make_room_now` runs [`Inner::evict_outsized`] with
//!   no lock held, which takes the oldest entry and, under its key's bucket lock,
//!   asks the policy (`Policy::reclaim` on the main queue, as for an item
//!   at the head of the log): *keep* sets the item's frequency in place and
//!   queues it again at the tail (no copy), *evict* unlinks it. An entry
//!   whose item is no longer in the index (overwritten, deleted, expired,
//!   or never published) is dropped. The memory is freed after the epoch
//!   grace period (`Garbage::Outsized`), like any unlinked item's.
//! * **Safety of the queue.** An entry's address is compared with the slot
//!   words of its key's bucket under the bucket lock (`find_ptr`) and
//!   dereferenced only when a slot holds it, so a stale entry is never
//!   read. (If the block was freed and the allocator gave the same address
//!   to a newer outsized item of the same key, the stale entry stands for
//!   the newer item; the newer item's own entry then finds nothing later.)
//!
//! * **Ageing with the log.** Each entry carries its place in log order
//!   (the creation order of the next segment when it was written). When
//!   the reclaimer reclaims a segment, the outsized items written before
//!   that segment are at the log's head too, and the policy decides on
//!   them then ([`Inner::age_outsized`]): so small writes, which make the
//!   reclaimer run, evict outsized items as they evict small ones, and a
//!   kept item goes back to the tail.
//!
//! # Limits
//! The policy sees an outsized item as one item, whatever its size, and
//! visits at most [`OUTSIZED_AGED_PER_SEGMENT_MAX`] per segment reclaimed.
//! The queue's
//! stale entries are dropped as the queue is walked, and the whole queue
//! is checked once it is longer than [`OUTSIZED_QUEUE_SLACK`] plus twice
//! the outsized items the reservation could hold.

use crate::evict::{Queue, Scope, Verdict};
use crate::item;
use crate::local::Local;
use crate::pool::Block;
use crate::store::{count_item, local_add, Error, Inner, ItemRef, Pinned};
use crate::table::split_hash;
use std::sync::atomic::Ordering;

/// Outsized blocks are whole pages (the system allocator maps them).
pub(crate) const OUTSIZED_ALIGN_BYTES: usize = 4096;
/// Stale entries the outsized queue may hold beyond twice its live ones
/// before a write checks the whole queue.
pub(crate) const OUTSIZED_QUEUE_SLACK: usize = 64;

/// Outsized items the policy visits per segment reclaimed, at most
/// (`Inner::age_outsized`): bounds the reclaimer's extra work.
pub(crate) const OUTSIZED_AGED_PER_SEGMENT_MAX: usize = 4;

/// The reclaimer's mutex held: the policy may decide.
pub(crate) type ReclaimerGuard<'a> = std::sync::MutexGuard<'a, crate::segment::OpenSegments>;

/// The bytes an outsized item of `total` bytes takes.
pub(crate) fn block_bytes(total: usize) -> usize {
    total.next_multiple_of(OUTSIZED_ALIGN_BYTES)
}

/// One outsized item, as queued (see the module essay).
#[derive(Debug)]
pub(crate) struct Outsized {
    /// The key's hash: its bucket, and the tag its slot carries.
    hash: u64,
    /// Its place in log order: the creation order the next segment had
    /// when it was written (or last kept). Segments reclaimed up to here
    /// mean the log's head has passed it (`Inner::age_outsized`).
    seq: u64,
    /// The item's address; compared, never dereferenced unless a slot of
    /// the key's bucket holds it.
    ptr: usize,
}

/// What [`Inner::visit_outsized`] found an entry to be.
enum Found {
    /// Not in the index any more: drop the entry.
    Gone,
    /// Kept by the policy: queue again.
    Kept,
    /// Evicted (or expired) now.
    Evicted,
}

impl Inner {
    /// Most bytes all outsized items may take together (module essay).
    pub(crate) fn outsized_cap(&self) -> usize {
        let Some(segs) = &self.shared.segments else { return 0 };
        let budget = self.shared.budget_bytes();
        budget
            .saturating_sub(budget / crate::CACHE_INDEX_BUDGET_SHARE)
            .saturating_sub(crate::SEGMENTS_MIN * segs.segment_bytes())
    }

    /// A block for an outsized item of `len` bytes for `key`: TooLarge if
    /// it could never fit, OutOfMemory (with the size noted for the retry's
    /// `make_room`) if it does not fit now. Never evicts (the caller may
    /// hold a bucket lock).
    pub(crate) fn alloc_outsized(&self, local: &Local, key: &[u8], len: usize) -> Result<Block, Error> {
        let block = self.reserve_outsized(local, len)?;
        self.queue_outsized(self.hash(key), block.ptr);
        Ok(block)
    }

    /// Queues the outsized item at `ptr` (key hash `hash`) for eviction, at
    /// the tail. [`Inner::alloc_outsized`] queues its block at once (the
    /// item is published under the bucket lock it is built under); a
    /// prepared value (`prepared.rs`) is queued only once published, since
    /// the queue drops an entry it finds unpublished.
    pub(crate) fn queue_outsized(&self, hash: u64, ptr: *const u8) {
        let cache = self.cache.as_ref().expect("cache mode");
        let seq = self.shared.segments.as_ref().map_or(0, |s| s.next_seq());
        let entry = Outsized { hash, seq, ptr: ptr as usize };
        cache.outsized.lock().unwrap_or_else(|e| e.into_inner()).push_back(entry);
    }

    /// [`Inner::alloc_outsized`] without queueing the block: TooLarge,
    /// OutOfMemory (size noted), or a block charged to the budget.
    pub(crate) fn reserve_outsized(&self, local: &Local, len: usize) -> Result<Block, Error> {
        let bytes = block_bytes(len);
        let cap = self.outsized_cap();
        if bytes > cap {
            return Err(Error::TooLarge);
        }
        // SAFETY: our own Local; the reference ends with this function and
        // no other is made meanwhile.
        let owned = unsafe { local.owned() };
        if self.shared.reserved_bytes() + bytes > cap {
            owned.outsized_wanted = bytes;
            return Err(Error::OutOfMemory);
        }
        let Some(block) = owned.pool.alloc_outsized(&self.shared, len) else {
            owned.outsized_wanted = bytes;
            return Err(Error::OutOfMemory);
        };
        debug_assert_eq!(block.bytes, bytes);
        Ok(block)
    }

    /// Makes room for an outsized item of `wanted` bytes (no lock held):
    /// walks the outsized queue from its oldest entry, dropping entries
    /// whose item is gone and asking the policy about the others, until
    /// the reservation has room or every entry has been visited twice (a
    /// kept item's frequency drops each time, so a second visit can evict
    /// it). Waits for the grace period after evicting, when it may, so the
    /// memory is free for the retry. Also checks the whole queue when it
    /// has grown long with stale entries.
    /// Returns whether anything was evicted (the retry may then succeed).
    pub(crate) fn evict_outsized(&self, local: &Local, wanted: usize) -> bool {
        let Some(cache) = &self.cache else { return false };
        let cap = self.outsized_cap();
        let queued = cache.outsized.lock().unwrap_or_else(|e| e.into_inner()).len();
        let live_max = self.shared.reserved_bytes() / self.shared.segments.as_ref().map_or(1, |s| s.segment_bytes());
        let compact = queued > 2 * live_max + OUTSIZED_QUEUE_SLACK;
        let mut evicted = false;
        for _ in 0..2 * queued {
            if !compact && self.shared.reserved_bytes() + wanted <= cap {
                break;
            }
            // The policy decides under the reclaimer's mutex (its
            // contract); lock order: reclaimer, bucket, outsized queue.
            let serialized = cache.reclaimer.lock().unwrap_or_else(|e| e.into_inner());
            let Some(mut entry) = cache.outsized.lock().unwrap_or_else(|e| e.into_inner()).pop_front() else { break };
            let room = self.shared.reserved_bytes() + wanted <= cap;
            match self.visit_outsized(local, &entry, !room, &serialized) {
                Found::Gone => {}
                Found::Evicted => evicted = true,
                Found::Kept => {
                    entry.seq = self.shared.segments.as_ref().map_or(0, |s| s.next_seq());
                    cache.outsized.lock().unwrap_or_else(|e| e.into_inner()).push_back(entry);
                }
            }
        }
        // SAFETY: own Local; the reference ends with this statement.
        if evicted && unsafe { local.owned() }.pin_depth == 0 {
            self.wait_grace(local);
        }
        evicted
    }

    /// The log's head has passed the segment of creation order `head_seq`
    /// (just reclaimed): the outsized items written before it are at the
    /// head too, and the policy decides on them now, as on that segment's
    /// items (at most [`OUTSIZED_AGED_PER_SEGMENT_MAX`] per segment). So
    /// outsized items age with the log, and small writes evict them too.
    /// The caller holds the reclaimer's mutex (`serialized`).
    pub(crate) fn age_outsized(&self, local: &Local, head_seq: u64, serialized: &ReclaimerGuard<'_>) {
        let Some(cache) = &self.cache else { return };
        for _ in 0..OUTSIZED_AGED_PER_SEGMENT_MAX {
            let entry = {
                let mut q = cache.outsized.lock().unwrap_or_else(|e| e.into_inner());
                match q.front() {
                    Some(e) if e.seq <= head_seq => q.pop_front(),
                    _ => None,
                }
            };
            let Some(mut entry) = entry else { return };
            if let Found::Kept = self.visit_outsized(local, &entry, true, serialized) {
                entry.seq = self.shared.segments.as_ref().map_or(0, |s| s.next_seq());
                cache.outsized.lock().unwrap_or_else(|e| e.into_inner()).push_back(entry);
            }
        }
    }

    /// One queued outsized item: gone, kept (after the policy's verdict,
    /// or unconditionally unless `decide`), or evicted. The policy runs
    /// only under the reclaimer's mutex (`_serialized`).
    fn visit_outsized(&self, local: &Local, entry: &Outsized, decide: bool, _serialized: &ReclaimerGuard<'_>) -> Found {
        let cache = self.cache.as_ref().expect("cache mode");
        let pin = Pinned::new(self);
        let tag = split_hash(entry.hash).1;
        let p = entry.ptr as *const u8;
        let mut guard = pin.current().lock_routed(entry.hash);
        let Some(slot) = guard.find_ptr(tag, p) else { return Found::Gone };
        if !decide {
            return Found::Kept;
        }
        // SAFETY: p is in a slot of the bucket we hold locked: a live item.
        let it = unsafe { ItemRef::new(p) };
        // SAFETY: as above.
        let freq = unsafe { item::freq(p) };
        let mut now = None;
        let expired = !self.is_live(&it, &mut now);
        if !expired && it.expiry_raw() == 0 && Scope::from_index(cache.scope.load(Ordering::Relaxed)).volatile() {
            // A volatile scope (Redis's volatile-*): no candidate without a
            // TTL, as in reclaim.rs; kept as it is.
            return Found::Kept;
        }
        if !expired {
            if let Verdict::Keep { freq: f, .. } = cache.policy().reclaim(Queue::Main, freq, entry.hash) {
                if f < freq {
                    // SAFETY: live item, bucket lock held.
                    unsafe { item::set_freq(p, f) };
                    return Found::Kept;
                }
                // A keep that does not lower the frequency would make no
                // progress (the Policy contract's rule): evict.
            }
        }
        guard.remove(slot);
        drop(guard);
        if expired {
            // SAFETY: unlinked under our pin: still allocated.
            if self.watching(crate::key_events::EXPIRED) && unsafe { self.dead_by_expiry(p) } {
                self.tell(crate::key_events::KeyEvent::Expired, it.key());
            }
        } else if self.watching(crate::key_events::EVICTED) {
            self.tell(crate::key_events::KeyEvent::Evicted, it.key());
        }
        local_add(&local.items, -1);
        // SAFETY: p was in the bucket we held locked; retired below.
        unsafe { count_item(local, p, -1) };
        // SAFETY: as above.
        unsafe { self.count_class_unlinked(p) };
        local_add(&local.bytes, -((it.key().len() + it.value().len()) as i64));
        if expired {
            self.retire_item(local, p);
        } else {
            // SAFETY: unlinked under our pin: still allocated.
            let total = unsafe { item::layout(p) }.total();
            let block = Block { ptr: p as *mut u8, bytes: block_bytes(total) };
            self.epochs.retire(local, &self.shared, crate::local::Garbage::Outsized(block));
            cache.evictions.fetch_add(1, Ordering::Relaxed);
            if freq == 0 {
                cache.evicted_unfetched.fetch_add(1, Ordering::Relaxed);
            }
        }
        Found::Evicted
    }
}
