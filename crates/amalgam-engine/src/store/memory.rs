//! Where an item's memory comes from and where it goes: store mode's
//! per-thread pools, cache mode's segments (room made before a write, and
//! again when a write found none), and unlinked items and objects retired
//! through the epochs.

use super::mutate::NewItem;
use super::{local_add, Cache, Decision, Error, IndexFull, Inner, ItemRef, Local, Store};
use crate::item;
use crate::local::Garbage;
use crate::object::{ObjectCell, RetiredCell};
use crate::pool::{Block, SMALL_ITEM_BYTES_MAX};
use crate::reclaim::Reclaim;
use crate::segment::{Segments, EVICT_RESERVE_SEGMENTS, ITEM_ALIGN_BYTES};
use crate::stall::{Stall, Timing};
use std::sync::atomic::Ordering;

/// Epoch advances `reclaim` attempts.
const RECLAIM_ROUNDS_MAX: usize = 64;

/// Cache mode: segments a writer reclaims itself before it gives up on
/// keeping items and reclaims with forced eviction (every live item of the
/// segment evicted, which always frees a whole segment). The contract's
/// progress rule bounds honest passes by `freq_max + 1` per item; this
/// caps the writer's work regardless of the queue's length (and is large
/// enough that on the small caches of tests/cache.rs the engine never
/// forces, so its order is exactly `evict::Model`'s).
const WRITER_RECLAIMS_MAX: usize = 64;
/// Cache mode: times a writer retries its epoch collection (yielding in
/// between) waiting for a segment it reclaimed to pass its grace period;
/// only a reader pinned for this long (a stuck `Reader`) exhausts it.
const GRACE_WAIT_ROUNDS_MAX: usize = 100_000;
/// Cache mode: times a write that found no free segment makes room by
/// force and tries again (`Inner::with_room`). One normally suffices; the
/// bound only stops a writer racing others for the same freed segments.
const ROOM_RETRIES_MAX: usize = 4;

impl Inner {
    pub(crate) fn alloc(&self, local: &Local, len: usize) -> Result<Block, Error> {
        if self.shared.reserved_bytes() > self.shared.budget_bytes() && self.store_over_budget(self.object_bytes()) {
            // The budget was lowered below the chunks already reserved
            // (`Store::set_memory_limit`): Redis's noeviction refuses
            // every write that needs memory while the used memory is past
            // maxmemory, even one the free lists could serve. Free what
            // this thread retired first (deletes count once freed).
            // SAFETY: own Local; the reference ends with this statement.
            if unsafe { local.owned() }.pin_depth == 0 {
                self.epochs.reclaim(local, &self.shared, RECLAIM_ROUNDS_MAX);
            }
            if self.store_over_budget(self.object_bytes()) {
                return Err(Error::OutOfMemory);
            }
        }
        for attempt in 0..2 {
            // SAFETY: our own Local, no other owned reference live.
            let owned = unsafe { local.owned() };
            if let Some(b) = owned.pool.alloc(&self.shared, len) {
                local.block_bytes.store(owned.pool.live_bytes as i64, Ordering::Relaxed);
                return Ok(b);
            }
            // Budget exhausted: free what this thread has retired and try
            // once more (only possible when not pinned).
            if attempt == 0 && owned.pin_depth == 0 {
                self.epochs.reclaim(local, &self.shared, RECLAIM_ROUNDS_MAX);
            }
        }
        Err(Error::OutOfMemory)
    }

    /// Cache mode: `len` bytes at the end of this thread's open segment of
    /// the queue the policy in force admits the key (of hash `key_hash`)
    /// to. Never reclaims (the caller may hold a bucket lock): writers
    /// make room first, in `make_room`, before they lock anything.
    ///
    /// The first write of a thread after the policy changed
    /// (`Store::set_eviction`) first seals the thread's open segments: the
    /// new policy may never write to one of their queues again (CLOCK
    /// writes nothing to Small), and an open segment is reclaimed by no one
    /// but its owner, so it would stay, with its items, for good.
    pub(super) fn alloc_in_segment(
        &self,
        local: &Local,
        cache: &Cache,
        key_hash: u64,
        len: usize,
    ) -> Result<Block, Error> {
        let segs = self.shared.segments.as_ref().expect("cache mode has segments");
        if len > segs.segment_bytes() {
            return Err(Error::TooLarge);
        }
        #[cfg(test)]
        if self.cache.as_ref().is_some_and(|c| {
            c.alloc_failures.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1)).is_ok()
        }) {
            return Err(Error::OutOfMemory);
        }
        // SAFETY: our own Local; no other reference to its owned part is
        // live (this one ends with the function).
        let owned = unsafe { local.owned() };
        let active = cache.active.load(Ordering::Relaxed);
        if active != owned.policy_seen {
            // Every item this thread allocated before is finished (bump's
            // own precondition), so its open segments may be sealed.
            segs.seal_open(&mut owned.open);
            owned.policy_seen = active;
        }
        let p = segs.bump(&mut owned.open, cache.admit(active, key_hash), len, 0);
        match p {
            Some(ptr) => Ok(Block { ptr, bytes: len.next_multiple_of(ITEM_ALIGN_BYTES) }),
            None => Err(Error::OutOfMemory),
        }
    }

    /// Cache mode, at the start of every write, before any lock and before
    /// the item is built: while free segments are at or below the reserve,
    /// reclaim (bounded: WRITER_RECLAIMS_MAX segments, the last ones by
    /// forced eviction, each followed by its grace period). With the
    /// maintenance thread reclaiming ahead this is normally one load.
    pub(crate) fn make_room(&self, local: &Local) {
        let (Some(cache), Some(segs)) = (&self.cache, &self.shared.segments) else { return };

        let free = segs.free_count();
        if cache.background && free <= cache.keep_free() {
            if let Some(th) = self.maintenance_thread.get() {
                th.unpark();
            }
        }
        // SAFETY: own Local; the reference ends with this statement.
        if free > EVICT_RESERVE_SEGMENTS || unsafe { local.owned() }.pin_depth != 0 {
            // A pinned writer (inside a Reader) cannot wait for a grace
            // period it is holding up; it takes from the reserve.
            return;
        }
        if free > 0 && segs.pending() > 0 {
            // Another thread (normally the maintenance thread, woken above
            // a segment earlier) has reclaimed a segment that is freed as
            // soon as its grace period ends: take from the reserve rather
            // than evict a second segment's items for the same room.
            return;
        }
        if self.starved(segs) {
            // A budget under the fewest segments (CONFIG SET maxmemory 1):
            // no segment may stay, this thread's open ones included, or
            // writes would go on filling them.
            // SAFETY: own Local, not pinned (checked above): no item of
            // ours is in progress; the reference ends with this statement.
            segs.seal_open(&mut unsafe { local.owned() }.open);
        }
        if cache.refusing_volatile() {
            // Nothing this scope may evict was found: the maintenance
            // thread, woken above, looks for room at its own pace
            // (VOLATILE_PROBE_PERIOD_MS); the write takes what is free or
            // answers out of memory, as Redis's does at once.
            return;
        }
        // Whatever it reaches, the write goes on: with nothing reclaimable
        // it takes from the reserve. Timed: this write's reply waits.
        cache.writer_reclaims.fetch_add(1, Ordering::Relaxed);
        let timing = Timing::start(self.watcher());
        self.reclaim_above_reserve(local, segs);
        timing.end(self.watcher(), Stall::EvictionCycle);
    }

    /// A writer's reclamation: reclaims one segment at a time (the last of
    /// WRITER_RECLAIMS_MAX rounds by forced eviction), each followed by its
    /// grace period, until more than the reserve is free. Returns whether
    /// it got there; false when nothing was left to reclaim.
    fn reclaim_above_reserve(&self, local: &Local, segs: &Segments) -> bool {
        for round in 0..WRITER_RECLAIMS_MAX {
            if segs.free_count() > EVICT_RESERVE_SEGMENTS {
                return true;
            }
            let reclaimed = self.reclaim_segment(local, Reclaim::writer(round + 1 == WRITER_RECLAIMS_MAX));
            self.wait_grace(local);
            if !reclaimed.freed() {
                return false;
            }
        }
        segs.free_count() > EVICT_RESERVE_SEGMENTS
    }

    /// Cache mode: runs the write `op`, and when it failed because no
    /// segment was free (out of memory), makes room by force and runs it
    /// again, up to ROOM_RETRIES_MAX times. `op` must have changed nothing
    /// when it reports out of memory (its decision was Keep, or it failed
    /// before locking anything).
    ///
    /// Why `make_room` alone is not enough: it leaves at least one free
    /// segment (the reserve) for the moment it looks, but every writer past
    /// it may take one, and a writer whose open segment is full takes a new
    /// one. Two writers past `make_room` at once, or one racing a reclaimer
    /// whose segment waits for its grace period, can find the free list
    /// empty when they allocate (found by tests/cache.rs's concurrent test
    /// run twice at once on 2 vCPUs: 1 run in 7 failed a SET). Allocation
    /// may happen under a bucket lock, where nothing can be reclaimed, so
    /// the write reports out of memory and is retried from the top here,
    /// where it holds no lock.
    pub(crate) fn with_room<T: IndexFull>(&self, local: &Local, mut op: impl FnMut() -> T) -> T {
        self.make_room(local);
        let mut r = op();
        for _ in 0..ROOM_RETRIES_MAX {
            if !r.is_out_of_memory() || !self.make_room_now(local) {
                break;
            }
            r = op();
        }
        if let Some(cache) = self.cache.as_ref().filter(|_| r.is_out_of_memory()) {
            cache.refusing.store(true, Ordering::Relaxed);
        }
        r
    }

    /// [`Inner::mutate`] for a write that builds its item under the bucket
    /// lock: `decide` runs again after making room when the build found no
    /// free segment (out of memory, with the decision Keep); see
    /// `with_room`.
    pub(super) fn mutate_with_room<R: IndexFull>(
        &self,
        key: &[u8],
        mut decide: impl FnMut(&Local, Option<ItemRef<'_>>) -> Decision<R>,
    ) -> R {
        self.with_room(self.epochs.local(&self.shared), || self.mutate(key, &mut decide))
    }

    /// Cache mode, after a write found no free segment: reclaims (the last
    /// round by forced eviction) until more than the reserve is free, or,
    /// when nothing is left that this thread could reclaim, waits (yielding,
    /// bounded by GRACE_WAIT_ROUNDS_MAX) for segments other threads
    /// reclaimed to pass their grace period. Returns whether a segment is
    /// free; false in store mode, for a pinned caller (it cannot wait for a
    /// grace period it holds up) and when the cache has nothing to give.
    fn make_room_now(&self, local: &Local) -> bool {
        let (Some(_), Some(segs)) = (&self.cache, &self.shared.segments) else { return false };
        // SAFETY: own Local; the reference ends with this statement.
        let wanted = std::mem::take(&mut unsafe { local.owned() }.outsized_wanted);
        if crate::txn::active() {
            // Inside `Store::atomically` the thread holds buckets out of
            // any eviction's order: evicting (which takes the reclaimer's
            // mutex, then other buckets) could wait for a transaction
            // that waits for us (txn.rs, "Memory"). The write fails with
            // out of memory instead.
            return false;
        }
        if wanted > 0 {
            // An outsized item found no room (outsized.rs): evict outsized
            // items; a pinned caller evicts too, and its retry may still
            // find the memory waiting for the grace period.
            return self.evict_outsized(local, wanted);
        }
        // SAFETY: own Local; the reference ends with this statement.
        if unsafe { local.owned() }.pin_depth != 0 {
            return false;
        }
        if self.cache.as_ref().is_some_and(|c| c.refusing_volatile()) {
            return segs.free_count() > 0; // as in `make_room`
        }
        if self.reclaim_above_reserve(local, segs) {
            return true;
        }
        for _ in 0..GRACE_WAIT_ROUNDS_MAX {
            if segs.free_count() > 0 || segs.pending() == 0 {
                break;
            }
            std::thread::yield_now();
        }
        segs.free_count() > 0
    }

    /// [`Inner::build`] for a write that holds no lock yet: on out of
    /// memory it makes room by force and tries again (see `with_room`).
    pub(super) fn build_unlocked(&self, local: &Local, n: &NewItem<'_>, cas: u64) -> Result<(Block, usize), Error> {
        self.with_room(local, || self.build(local, n, cas))
    }

    /// Frees what this thread retired (its reclaimed segments), yielding
    /// while another thread's pin holds the grace period. Bounded by
    /// GRACE_WAIT_ROUNDS_MAX rounds. The caller is not pinned.
    pub(crate) fn wait_grace(&self, local: &Local) {
        for _ in 0..GRACE_WAIT_ROUNDS_MAX {
            if self.epochs.reclaim(local, &self.shared, 4) {
                return;
            }
            std::thread::yield_now();
        }
    }

    /// Frees a block that was never published.
    pub(crate) fn free_unpublished(&self, local: &Local, block: Block) {
        if self.shared.segments.as_ref().is_some_and(|s| !s.contains(block.ptr)) {
            // An outsized item (outsized.rs): its own block, freed now.
            // SAFETY: own Local, no other owned reference live; the block
            // was never published, so no reader can hold it.
            unsafe { local.owned().pool.free_outsized(&self.shared, block) };
            return;
        }
        if self.cache.is_some() {
            // Cache mode: the bytes stay in their segment as garbage (not
            // in the index, so dead) until the segment is reclaimed.
            return;
        }
        // SAFETY: own Local, no other owned reference live.
        let owned = unsafe { local.owned() };
        // SAFETY: never published, so no reader can hold it.
        unsafe { owned.pool.free(&self.shared, block) };
        local.block_bytes.store(owned.pool.live_bytes as i64, Ordering::Relaxed);
    }

    /// An item just unlinked from the index (under its bucket lock, now
    /// released): store mode frees it after the grace period; cache mode
    /// leaves it in its segment and counts it out of the segment's live
    /// bytes (and as expired-unfetched if it expired unread).
    pub(crate) fn retire_item(&self, local: &Local, p: *const u8) {
        match &self.shared.segments {
            None => {
                let block = Block { ptr: p as *mut u8, bytes: self.block_size(p) };
                self.epochs.retire(local, &self.shared, Garbage::Item(block));
            }
            Some(segs) => {
                // SAFETY: p is unlinked but its segment cannot be reclaimed
                // (nor, outsized, freed) before our pin (or, for the
                // sweep, the epoch) ends.
                let (l, freq) = unsafe { (item::layout(p), item::freq(p)) };
                if segs.contains(p) {
                    segs.add_live(p, -(l.total().next_multiple_of(ITEM_ALIGN_BYTES) as i64));
                } else {
                    let block = Block { ptr: p as *mut u8, bytes: crate::outsized::block_bytes(l.total()) };
                    self.epochs.retire(local, &self.shared, Garbage::Outsized(block));
                }
                self.count_expired_unfetched(l.meta.expiry, l.meta.expiry_ms, freq);
            }
        }
    }

    /// Retires the object an unlinked item held, if it is an object item
    /// (object.rs, WHO OWNS AN OBJECT): freed after the grace period, as
    /// the item is. The caller has checked that no new item holds it.
    pub(crate) fn retire_object(&self, local: &Local, p: *const u8) {
        // SAFETY: p was just unlinked under our pin: still allocated.
        let it = unsafe { ItemRef::new(p) };
        if let Some(cell) = it.object() {
            local_add(&local.object_bytes, -(cell.charged() as i64));
            let owned = RetiredCell(cell as *const ObjectCell as *mut ObjectCell);
            self.epochs.retire(local, &self.shared, Garbage::Object(owned));
        }
    }

    /// Counts an unlinked item as expired-unfetched if it had expired and
    /// no GET read it (cache mode; store mode tracks no reads).
    pub(crate) fn count_expired_unfetched(&self, expiry: u32, expiry_ms: u16, freq: u8) {
        if let Some(c) = &self.cache {
            if freq == 0 && expiry != 0 && !self.expiry_live(expiry, self.now(), || expiry_ms) {
                c.expired_unfetched.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn block_size(&self, p: *const u8) -> usize {
        // SAFETY: p is an item of this store still allocated.
        let total = unsafe { item::layout(p) }.total();
        match self.shared.classes.class_of(total) {
            Some(c) if total <= SMALL_ITEM_BYTES_MAX => self.shared.classes.size(c),
            _ => total.next_multiple_of(4096),
        }
    }
}

impl Store {
    /// Bytes the item `it` (found in this store) holds from memory: its
    /// block — the pool's size class in store mode, its aligned length in
    /// a cache-mode segment — plus, for an object item, the object's
    /// charge (object.rs, MEMORY: the allocator's bytes it holds and its
    /// cell). Redis's MEMORY USAGE, as far as the engine knows it; the
    /// key's share of the index (a slot of a 64-byte bucket line) is not
    /// in it.
    ///
    /// ```
    /// # use amalgam_engine::{Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// store.set(b"key", b"value", 0, Expiry::Never).unwrap();
    /// let (size, bytes) = store.peek(b"key", |it| (it.size(), store.item_mem_bytes(&it))).unwrap();
    /// assert!(bytes >= size && bytes < size + 8, "{bytes} for an item of {size}");
    /// ```
    pub fn item_mem_bytes(&self, it: &ItemRef<'_>) -> usize {
        let inner = &*self.inner;
        let block = match &inner.shared.segments {
            None => inner.block_size(it.ptr),
            // SAFETY: `it` is live for its lifetime (ItemRef's contract).
            Some(_) => unsafe { item::layout(it.ptr) }.total().next_multiple_of(ITEM_ALIGN_BYTES),
        };
        block + it.object().map_or(0, ObjectCell::charged)
    }

    /// Frees what the calling thread has retired, as far as other threads'
    /// pins allow. Returns true when all of it was freed. Servers need not
    /// call this; tests of memory accounting do.
    ///
    /// ```
    /// # use amalgam_engine::{Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// store.set(b"k", b"v", 0, Expiry::Never).unwrap();
    /// store.delete(b"k").unwrap();
    /// assert!(store.reclaim());
    /// assert_eq!(store.stats().block_bytes, 0);
    /// ```
    pub fn reclaim(&self) -> bool {
        let inner = &*self.inner;
        let local = inner.epochs.local(&inner.shared);
        inner.epochs.reclaim(local, &inner.shared, RECLAIM_ROUNDS_MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evict::Eviction;
    use crate::segment::SEGMENT_BYTES;
    use crate::store::{Config, Expiry, NewValue, Update};

    /// `Inner::with_room`, deterministically: allocations made to fail as
    /// if other writers had just taken every free segment. Each kind of
    /// write is retried after making room and succeeds, an update's
    /// decision runs again on the retry (and only the last run counts),
    /// and past ROOM_RETRIES_MAX the write answers out of memory having
    /// changed nothing.
    #[test]
    fn writes_that_find_no_free_segment_retry_after_making_room() {
        let config = Config { eviction: Eviction::S3Fifo, memory_limit_bytes: 16 * SEGMENT_BYTES, ..Config::default() };
        let store = Store::new(config).unwrap();
        let cache = store.inner.cache.as_ref().unwrap();
        let fail_next = |n: usize| cache.alloc_failures.store(n as u32, Ordering::Relaxed);
        let value = |k: &[u8]| store.get(k, |it| it.value().to_vec());
        store.set(b"n", b"1", 0, Expiry::Never).unwrap();
        store.set(b"k", b"v", 0, Expiry::Never).unwrap();

        fail_next(1);
        store.set(b"s", b"x", 0, Expiry::Never).unwrap();
        assert_eq!(value(b"s").as_deref(), Some(&b"x"[..]));
        fail_next(1);
        store.append(b"k", b"w").unwrap();
        assert_eq!(value(b"k").as_deref(), Some(&b"vw"[..]));
        fail_next(1);
        assert_eq!(store.incr(b"n", 2), Ok(3));
        fail_next(1);
        store.touch(b"k", Expiry::At(u32::MAX)).unwrap();
        assert_eq!(store.get(b"k", |it| it.expiry()), Some(Expiry::At(u32::MAX)));
        fail_next(1);
        let mut runs = 0;
        let (seen, cas) = store
            .update(b"k", |old| {
                runs += 1;
                let put = Update::Put {
                    value: NewValue::Bytes(b"u"),
                    flags: 3,
                    expiry: Expiry::Never,
                    fresh_cas: true,
                    marks: 0,
                };
                (put, (runs, old.map(|it| it.value().to_vec())))
            })
            .unwrap();
        assert_eq!(seen, (2, Some(b"vw".to_vec())), "decided again on the retry, seeing the item as it was");
        assert!(cas.is_some());
        assert_eq!(store.get(b"k", |it| (it.value().to_vec(), it.flags())), Some((b"u".to_vec(), 3)));
        assert_eq!(cache.alloc_failures.load(Ordering::Relaxed), 0);

        // One more failure than retries: out of memory, nothing changed.
        fail_next(ROOM_RETRIES_MAX + 1);
        assert_eq!(store.set(b"s", b"y", 0, Expiry::Never), Err(Error::OutOfMemory));
        assert_eq!(value(b"s").as_deref(), Some(&b"x"[..]));
        fail_next(ROOM_RETRIES_MAX + 1);
        assert_eq!(store.append(b"s", b"z"), Err(Error::OutOfMemory));
        assert_eq!(value(b"s").as_deref(), Some(&b"x"[..]));
        fail_next(0);
    }
}
