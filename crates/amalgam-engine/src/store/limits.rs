//! Limits: the value length a thread's writes are held to
//! (`Store::with_value_bytes_max`), the memory limit changed at run time
//! (`Store::set_memory_limit`, with how a change takes effect), store
//! mode's budget check and cache mode's memory account.

use super::cache::wake_slack_for;
use super::config::ITEM_SIZE_MAX_BYTES_LIMIT;
#[cfg(doc)]
use super::{Config, Stats};
use super::{ConfigError, Inner, Local, Pinned, Store};
use crate::segment::SEGMENTS_MIN;
use std::sync::atomic::Ordering;

impl Inner {
    /// Store mode: whether the memory in use plus `extra` bytes reaches
    /// the budget. In use is the chunks reserved while they are within
    /// the budget (a full store's free lists count as used, so a new
    /// collection is not promised memory a chunk could not supply); once
    /// the budget has been lowered below the chunks
    /// (`Store::set_memory_limit`: chunks are never given back), it is the
    /// blocks handed out, summed over the threads (one relaxed load each,
    /// only in that state), so deletes bring the store back under it.
    pub(super) fn store_over_budget(&self, extra: usize) -> bool {
        let budget = self.shared.budget_bytes();
        let reserved = self.shared.reserved_bytes();
        let used = if reserved > budget {
            self.epochs.all().map(|l| l.block_bytes.load(Ordering::Relaxed)).sum::<i64>().max(0) as usize
        } else {
            reserved
        };
        used.saturating_add(extra) >= budget
    }

    /// Cache mode's memory account: the budget covers the segments and
    /// the index (bucket arrays and overflow lines of the current table
    /// and, while expanding, its successor; plus `extra_index_bytes` about
    /// to be mapped), the two parts that grow with the items held. The
    /// policy's own memory (S3-FIFO's ghost, `Policy::memory_bytes`) is
    /// sized from the budget when the store is made and is not charged:
    /// it is the documented fixed overhead on top of the budget (1/32 of
    /// it), like memcached's own fixed structures beside its `-m`. Sets
    /// the segments' resident limit to what is left and returns the
    /// segments resident after that and the limit, or None in store mode.
    /// Called by the maintenance thread every round (overflow lines grow
    /// between rounds by at most what a round's inserts hand out) and
    /// around every doubling.
    /// Cache mode: whether the budget is below the fewest segments a cache
    /// works with (SEGMENTS_MIN): only CONFIG SET maxmemory sets one
    /// (`Store::set_memory_limit`; a cache cannot start so), and then no
    /// segment stays resident (`Segments::set_limit_bytes`).
    pub(super) fn starved(&self, segs: &crate::segment::Segments) -> bool {
        self.shared.budget_bytes() < SEGMENTS_MIN * segs.segment_bytes()
    }

    pub(super) fn account_memory(&self, extra_index_bytes: usize) -> Option<(usize, usize)> {
        let (Some(cache), Some(segs)) = (&self.cache, &self.shared.segments) else { return None };
        let budget_segments = self.shared.budget_bytes() / segs.segment_bytes();
        cache.wake_slack.store(wake_slack_for(budget_segments), Ordering::Relaxed);
        if !cache.index_in_budget {
            return None;
        }
        let index = {
            let pin = Pinned::new(self);
            let t = pin.current();
            t.resident_bytes() + t.successor().map_or(0, |n| n.resident_bytes())
        };
        // Objects (object.rs) live outside the segments: charging them
        // here shrinks what segments may hold, so the reclaimer evicts
        // until items and objects fit the budget together.
        // Outsized items (outsized.rs) likewise: the shared reservation
        // counts only them in cache mode.
        let charged = index + extra_index_bytes + self.object_bytes() + self.shared.reserved_bytes();
        let resident = segs.set_limit_bytes(self.shared.budget_bytes().saturating_sub(charged), self.starved(segs));
        Some((resident, segs.limit()))
    }
}

impl Store {
    /// Runs `f` with this thread's writes limited by value length instead
    /// of by `Config::item_size_max_bytes`: a value of up to `value_bytes`
    /// bytes (at most [`ITEM_SIZE_MAX_BYTES_LIMIT`]) is stored whatever
    /// its header and key add. The server runs RESP commands so, since
    /// Redis limits a string by its length (`proto-max-bulk-len`) while
    /// memcached's `-I` limits the whole item; recovery restores so, since
    /// what was stored once must come back. Nests; the previous limit is
    /// back when `f` returns or unwinds. The memory budget still applies.
    ///
    /// ```
    /// # use amalgam_engine::{Config, Error, Expiry, Store};
    /// let store = Store::new(Config { item_size_max_bytes: 1024, memory_limit_bytes: 8 << 20, ..Config::default() }).unwrap();
    /// let big = vec![7u8; 4096];
    /// assert_eq!(store.set(b"k", &big, 0, Expiry::Never), Err(Error::TooLarge));
    /// assert!(store.with_value_bytes_max(4096, || store.set(b"k", &big, 0, Expiry::Never)).is_ok());
    /// assert_eq!(store.with_value_bytes_max(4095, || store.set(b"k", &big, 0, Expiry::Never)), Err(Error::TooLarge));
    /// ```
    pub fn with_value_bytes_max<R>(&self, value_bytes: usize, f: impl FnOnce() -> R) -> R {
        /// Puts the thread's previous limit back, also on unwinding.
        struct Restore<'a>(&'a Local, Option<usize>);
        impl Drop for Restore<'_> {
            fn drop(&mut self) {
                // SAFETY: the calling thread's own Local; the reference
                // ends with this statement.
                unsafe { self.0.owned() }.value_bytes_max = self.1;
            }
        }
        let local = self.inner.epochs.local(&self.inner.shared);
        let limit = value_bytes.min(ITEM_SIZE_MAX_BYTES_LIMIT);
        // SAFETY: the calling thread's own Local; the reference ends with
        // this statement.
        let previous = unsafe { local.owned() }.value_bytes_max.replace(limit);
        let _restore = Restore(local, previous);
        f()
    }

    /// True when a write that grows a value outside the items (an object,
    /// object.rs) should be refused: store mode, with the pool's reserved
    /// memory and the objects' bytes together at or past the budget.
    /// Cache mode never refuses: its reclaimer evicts until items and
    /// objects fit (objects are charged to the budget there). Redis's
    /// `maxmemory` with `noeviction` refuses such writes the same way,
    /// before they run.
    ///
    /// ```
    /// let store = amalgam_engine::Store::new(Default::default()).unwrap();
    /// assert!(!store.objects_over_budget());
    /// ```
    pub fn objects_over_budget(&self) -> bool {
        let inner = &*self.inner;
        inner.cache.is_none() && inner.store_over_budget(inner.object_bytes())
    }

    /// Redis's out of memory (`performEvictions` answering EVICT_FAIL):
    /// the memory in use is past the limit and nothing more can be
    /// evicted, so Redis refuses every command queued in MULTI and every
    /// write that may grow memory. Store mode: the blocks handed out and
    /// the objects reach the budget (not the chunks reserved, which stay
    /// reserved after deletes: a store filled once and emptied is not out
    /// of memory). Cache mode:
    /// the budget is under the fewest segments (CONFIG SET maxmemory 1,
    /// `Inner::starved`), or the last write that needed room was refused
    /// and no reclamation has freed a segment since (a volatile scope
    /// with nothing it may evict). Not on the request path: a few loads,
    /// and in store mode past a lowered limit one per thread.
    ///
    /// ```
    /// let store = amalgam_engine::Store::new(Default::default()).unwrap();
    /// assert!(!store.out_of_memory());
    /// ```
    pub fn out_of_memory(&self) -> bool {
        let inner = &*self.inner;
        match (&inner.cache, &inner.shared.segments) {
            (Some(cache), Some(segs)) => inner.starved(segs) || cache.refusing.load(Ordering::Relaxed),
            _ => {
                let blocks = inner.epochs.all().map(|l| l.block_bytes.load(Ordering::Relaxed)).sum::<i64>();
                blocks.max(0) as usize + inner.object_bytes() >= inner.shared.budget_bytes()
            }
        }
    }

    /// The memory limit (`memory_limit_bytes`, memcached's `-m`, Redis's
    /// `maxmemory`) changed at run time, or Err saying which values are
    /// possible. Store mode takes any value (`usize::MAX`: no limit, which
    /// [`Stats::memory_limit_bytes`] shows as 0, Redis's `maxmemory 0`);
    /// cache mode takes from 1 byte up to [`Store::memory_limit_max_bytes`]:
    /// below [`SEGMENTS_MIN`](crate::SEGMENTS_MIN) segments no segment
    /// stays, so every item the scope lets it evict goes and writes answer
    /// out of memory (Redis's tests set `maxmemory 1` to force that).
    ///
    /// # How a change takes effect
    ///
    /// The limit is one number (`SharedPool::budget_bytes`) that both modes
    /// already obey everywhere memory is handed out, so a change is a
    /// store of that number and a wake-up; nothing is resized in place.
    ///
    /// * **Cache mode, lower.** The memory account (`account_memory`, run
    ///   here at once and by the maintenance thread every round) sets the
    ///   segments' resident limit to the new budget less the index. With
    ///   the limit below the segments in use, `free_count` falls to zero
    ///   (`segment.rs`, "Resident segments"): the maintenance thread, woken
    ///   here, evicts through the policy as it does for any full cache,
    ///   at most EVICT_SEGMENTS_PER_WAKE_MAX segments per round before it
    ///   looks at its other work, and a writer that finds no free segment
    ///   reclaims at most WRITER_RECLAIMS_MAX itself. So the cache comes
    ///   down in steps of whole segments, each behind its epoch grace
    ///   period, never in one stall; and a granule whose segments are all
    ///   free while more are resident than the limit is discarded at once
    ///   (`MADV_DONTNEED`), so the process's resident memory falls with
    ///   the limit rather than only its item count.
    /// * **Cache mode, raise.** The resident limit rises; cold granules
    ///   beyond the old one are paged in as writers need them. The segment
    ///   log is one mapping, so it can grow only inside the address space
    ///   reserved at start ([`Config::memory_limit_max_bytes`]); past it
    ///   the change is refused, naming the maximum.
    /// * **Store mode.** Chunks are reserved against the budget as they
    ///   are needed, so raising it simply lets more be reserved. Lowering
    ///   it below the chunks already reserved cannot give them back (their
    ///   blocks are spread over every size class's free lists): instead
    ///   every allocation refuses (out of memory, Redis's `-OOM`) while
    ///   the blocks in use plus objects reach the new budget, and succeeds
    ///   again once deletes bring them below it.
    ///
    /// # Limitations
    ///
    /// The index does not shrink: in cache mode its bytes stay charged, so
    /// a much lower budget holds fewer items than a cache started at that
    /// budget until keys are gone. The eviction policy's own structure
    /// (S3-FIFO's ghost) keeps the size it was given at start. Store
    /// mode's chunks stay mapped once reserved.
    ///
    /// ```
    /// # use amalgam_engine::{evict::Eviction, Config, Store};
    /// let store = Store::new(Config {
    ///     eviction: Eviction::S3Fifo,
    ///     memory_limit_bytes: 16 << 20,
    ///     memory_limit_max_bytes: 64 << 20,
    ///     ..Config::default()
    /// })
    /// .unwrap();
    /// store.set_memory_limit(48 << 20).unwrap();
    /// assert_eq!(store.stats().memory_limit_bytes, 48 << 20);
    /// assert!(store.set_memory_limit(65 << 20).unwrap_err().to_string().contains("67108864"));
    /// ```
    pub fn set_memory_limit(&self, bytes: usize) -> Result<(), ConfigError> {
        self.check_memory_limit(bytes)?;
        let inner = &*self.inner;
        inner.shared.set_budget_bytes(bytes);
        if let Some(cache) = &inner.cache {
            cache.refusing.store(false, Ordering::Relaxed); // look again
        }
        if let (Some(cache), Some(segs)) = (&inner.cache, &inner.shared.segments) {
            if cache.index_in_budget {
                inner.account_memory(0);
            } else {
                segs.set_limit_bytes(bytes.saturating_sub(inner.shared.reserved_bytes()), inner.starved(segs));
            }
        }
        if let Some(th) = inner.maintenance_thread.get() {
            th.unpark();
        }
        Ok(())
    }

    /// Whether [`Store::set_memory_limit`] would take `bytes` (Err: why
    /// not, naming the range), changing nothing.
    pub fn check_memory_limit(&self, bytes: usize) -> Result<(), ConfigError> {
        if let Some(segs) = &self.inner.shared.segments {
            // From 1 byte: a budget under SEGMENTS_MIN segments keeps no
            // segment (`Inner::starved`), Redis's `maxmemory 1`.
            let (min, max) = (1, segs.count() * segs.segment_bytes());
            if !(min..=max).contains(&bytes) {
                return Err(ConfigError(format!(
                    "cache mode's memory limit must be from {min} to {max} bytes (the most reserved at start: \
                     restart with a larger maximum to go past it); got {bytes}"
                )));
            }
        }
        Ok(())
    }

    /// The most [`Store::set_memory_limit`] accepts: in cache mode the
    /// segment log reserved at start (`Config::memory_limit_max_bytes`),
    /// in store mode `usize::MAX` (no limit).
    pub fn memory_limit_max_bytes(&self) -> usize {
        match &self.inner.shared.segments {
            Some(segs) => segs.count() * segs.segment_bytes(),
            None => usize::MAX,
        }
    }
}
