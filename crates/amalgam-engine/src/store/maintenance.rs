//! The maintenance thread ("amalgam-expand"): when the table doubles and
//! how (Mercury §3), the sweeps of flushed and expired items, reclaiming
//! segments ahead of writers in cache mode, and the write clock's ticks.

use super::mutate::counted_bytes;
use super::{count_item, local_add, Inner, Local, Pinned, Store};
use crate::item;
use crate::local::Garbage;
use crate::reclaim::Reclaim;
use crate::stall::{Stall, Timing};
use crate::table::{self, Table, TABLE_LOG2_MAX};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Mean items per bucket above which the table doubles. Seven slots per
/// line and Poisson-distributed chains: at a mean of 4, 5% of buckets need
/// an overflow line and 98% of items sit in their bucket's own line; after
/// the doubling the mean is 2 and overflow all but vanishes (0.05%).
///
/// ```
/// use amalgam_engine::{Expiry, Store, LOAD_PER_BUCKET_MAX};
/// let store = Store::new(Default::default()).unwrap();
/// for i in 0..10_000u32 {
///     store.set(&i.to_le_bytes(), b"v", 0, Expiry::Never).unwrap();
/// }
/// store.wait_for_expansion(std::time::Duration::from_secs(10));
/// let st = store.stats();
/// assert!(st.items <= st.buckets * LOAD_PER_BUCKET_MAX as u64);
/// ```
pub const LOAD_PER_BUCKET_MAX: usize = 4;
/// [`LOAD_PER_BUCKET_MAX`] in cache mode, where the index is charged to
/// the memory budget (the memory account below): every byte the index
/// takes is a byte fewer for items, so a cache keeps its table twice as
/// dense as a store. At a mean of 7 per bucket 45% of buckets need an
/// overflow line and 87% of items sit in their bucket's own line
/// (Poisson, seven slots); the index then costs 9–18 bytes per item
/// instead of 18–37 at a mean of 2–4. 16 B / 32 B items fill `-m 64`
/// at about 0.9 M items, 6.8 per bucket of a 2^17 table. The server's
/// `stats` report the overflow nodes (`hash_overflow_nodes`).
pub const CACHE_LOAD_PER_BUCKET_MAX: usize = 7;
/// Cache mode: the bucket array may take at most this fraction (1/n) of
/// the budget. Past it the table stops doubling and chains grow instead
/// (overflow lines, charged to the budget as they are handed out): a
/// cache of tiny items pays longer chains rather than an index that
/// crowds out the items.
///
/// ```
/// # use amalgam_engine::{evict::Eviction, Config, Expiry, Store, CACHE_INDEX_BUDGET_SHARE};
/// let budget = 2 << 20;
/// let store = Store::new(Config { memory_limit_bytes: budget, eviction: Eviction::S3Fifo, ..Config::default() }).unwrap();
/// for i in 0..200_000u32 {
///     store.set(&i.to_le_bytes(), b"", 0, Expiry::Never).unwrap();
/// }
/// store.wait_for_expansion(std::time::Duration::from_secs(10));
/// assert!(store.stats().buckets * 64 <= (budget / CACHE_INDEX_BUDGET_SHARE) as u64);
/// ```
pub const CACHE_INDEX_BUDGET_SHARE: usize = 4;

/// Inserts a thread makes between two checks of the table's load.
const INSERTS_PER_LOAD_CHECK: u32 = 256;

/// Buckets the maintenance thread sweeps before checking for other work.
const SWEEP_STEP_BUCKETS: usize = 4096;
/// How often the maintenance thread wakes without being asked.
const MAINTENANCE_PERIOD: Duration = Duration::from_millis(250);
/// Buckets the background expiry sweep visits per maintenance wake (a
/// bounded step: about 16 Ki bucket lines and their items, a few ms; a
/// table of 2^24 buckets is swept in about 17 minutes). memcached's LRU
/// crawler plays this part there.
const EXPIRY_SWEEP_BUCKETS_PER_WAKE: usize = 16 * 1024;
/// Most doublings one expansion may do at once (a 16x larger table).
const EXPANSION_LOG2_STEP_MAX: u32 = 4;
/// How far ahead of its position the expand thread prefetches items.
const MIGRATE_PREFETCH_AHEAD_BUCKETS: usize = 8;

/// Cache mode: free segments (above the reserve and the wake slack) at or
/// below which the maintenance thread runs its memory account every
/// ACCOUNT_PERIOD_NEAR_FULL instead of every MAINTENANCE_PERIOD: as the
/// segments near the limit, a limit lowered late (overflow lines handed
/// out since the last account) would make the next reclamation evict
/// several segments at once.
const ACCOUNT_NEAR_FULL_SEGMENTS: usize = 4;
/// See ACCOUNT_NEAR_FULL_SEGMENTS.
const ACCOUNT_PERIOD_NEAR_FULL: Duration = Duration::from_millis(10);
/// Cache mode: segments the maintenance thread reclaims per wake-up before
/// it looks at its other work (bounds one round).
const EVICT_SEGMENTS_PER_WAKE_MAX: usize = 64;
/// Cache mode, a volatile scope refusing writes (`Cache::refusing`: the
/// last reclamations found nothing they may evict): the maintenance thread
/// alone looks for room, at most once per this period, walking on past
/// up to VOLATILE_PROBE_SEGMENTS segments that kept everything. Writers
/// wake the thread on every write; without the period a cache full of
/// keys without a TTL would copy a segment per refused write.
const VOLATILE_PROBE_PERIOD_MS: u64 = 250;
/// See VOLATILE_PROBE_PERIOD_MS.
const VOLATILE_PROBE_SEGMENTS: usize = 8;

impl Inner {
    /// Counts an insert and wakes the expand thread when the table's mean
    /// load passes `load_max` (Mercury's aggressive expansion).
    pub(super) fn note_insert(&self, local: &Local, t: &Table) {
        // SAFETY: own Local, no other owned reference live.
        let owned = unsafe { local.owned() };
        owned.inserts_since_check += 1;
        if owned.inserts_since_check < INSERTS_PER_LOAD_CHECK {
            return;
        }
        owned.inserts_since_check = 0;
        if t.successor().is_none() && self.needs_expansion(t) {
            if let Some(th) = self.maintenance_thread.get() {
                th.unpark();
            }
        }
    }

    /// True when `t` (the current table, held pinned or by the
    /// maintenance thread) is loaded past `load_max`.
    fn needs_expansion(&self, t: &Table) -> bool {
        if t.log2() >= self.table_log2_max() {
            return false;
        }
        let items = self.item_count();
        items > self.load_max << t.log2()
            && (self.cache.is_none() || items > (2 * self.load_max) << t.log2() || self.doubling_pays(t, items))
    }

    /// Cache mode: whether doubling `t` leaves room for more items than
    /// the cache holds now. The budget pays for the index (the memory
    /// account), so a cache at capacity that doubles evicts to make room
    /// for the bigger table: with 16 B / 32 B items at `-m 64` a 2^18
    /// table would hold ~830 k items where the 2^17 one holds ~900 k at a
    /// mean of 7 per bucket. Estimated from the segments' current items
    /// per segment and the successor's bucket array (its overflow lines
    /// all but vanish at half the load). A chain twice
    /// CACHE_LOAD_PER_BUCKET_MAX long doubles regardless (`needs_expansion`).
    fn doubling_pays(&self, t: &Table, items: u64) -> bool {
        let (Some(cache), Some(segs)) = (&self.cache, &self.shared.segments) else { return true };
        let in_use = segs.in_use().max(1) as u64;
        let index_after = Table::bucket_bytes(t.log2() + 1);
        let segments_after = (self.shared.budget_bytes().saturating_sub(index_after) / segs.segment_bytes())
            .saturating_sub(cache.keep_free()) as u64;
        segments_after * items / in_use > items
    }

    /// The largest table: TABLE_LOG2_MAX, or in cache mode the largest
    /// whose bucket array fits CACHE_INDEX_BUDGET_SHARE of the budget.
    fn table_log2_max(&self) -> u32 {
        if self.cache.is_none() {
            return TABLE_LOG2_MAX;
        }
        let share = self.shared.budget_bytes() / CACHE_INDEX_BUDGET_SHARE;
        let buckets = (share / Table::bucket_bytes(0)).max(1);
        (usize::BITS - 1 - buckets.leading_zeros()).min(TABLE_LOG2_MAX)
    }

    /// The successor's size: double (Mercury), or more when inserts have
    /// outrun the expand thread, so that the new table holds the current
    /// items at no more than `load_max` — a bulk load then pays a
    /// few large expansions instead of a chain of back-to-back doublings. Bounded by EXPANSION_LOG2_STEP_MAX.
    fn expansion_target_log2(&self, old: &Table) -> u32 {
        let items = self.item_count().max(1);
        let want = items.div_ceil(self.load_max).next_power_of_two().trailing_zeros();
        want.clamp(old.log2() + 1, old.log2() + EXPANSION_LOG2_STEP_MAX).min(self.table_log2_max())
    }

    /// Cache mode, on the maintenance thread, before a doubling to
    /// `next_log2`: charges the successor's bucket array to the budget and
    /// evicts until the segments fit what is left, so the table's growth
    /// never takes the process past its budget. Bounded: at most one
    /// reclamation per segment, each followed by its grace period.
    fn make_room_for_table(&self, local: &Local, next_log2: u32) {
        let Some(segs) = &self.shared.segments else { return };
        for _ in 0..=segs.count() {
            let Some((resident, limit)) = self.account_memory(Table::bucket_bytes(next_log2)) else { return };
            if resident <= limit || self.shutdown.load(Ordering::Relaxed) {
                return;
            }
            let reclaimed = self.reclaim_segment(local, Reclaim::Writer);
            self.wait_grace(local);
            if !reclaimed.freed() {
                return;
            }
        }
    }

    /// Mercury §3's three phases, run by the maintenance thread.
    fn expand(&self) {
        let local = self.epochs.local(&self.shared);
        // SAFETY: only this thread replaces `current`.
        let old = unsafe { &*self.current.load(Ordering::Acquire) };
        let next_log2 = self.expansion_target_log2(old);
        self.make_room_for_table(local, next_log2);
        let Some(next) = Table::new(next_log2) else {
            return; // could not map the new table; try again later
        };
        // Initialization: publish the successor (workers start routing).
        let next = Box::into_raw(Box::new(next));
        old.set_successor(next);
        // Rehashing: one bucket at a time, under that bucket's lock only.
        let rehash = |p: *const u8| {
            // SAFETY: p is in a bucket the expand thread holds locked.
            self.hash(unsafe { item::key(p) })
        };
        let n = old.bucket_count();
        let mut timing = Timing::start(self.watcher());
        for i in 0..n {
            old.prefetch_bucket_items(i + MIGRATE_PREFETCH_AHEAD_BUCKETS);
            self.epochs.pin(local);
            let r = old.migrate_bucket(i, &rehash);
            self.epochs.unpin(local, &self.shared);
            r.expect("the successor's overflow arena holds every chain");
            if (i + 1) % table::PROGRESS_STRIDE_BUCKETS == 0 {
                old.set_migrated(i + 1);
                timing.end(self.watcher(), Stall::ExpansionStep);
                timing = Timing::start(self.watcher());
            }
        }
        old.set_migrated(n);
        // Termination: the successor becomes current; the old table is
        // freed once no pinned thread can still be routing through it.
        self.current.store(next, Ordering::Release);
        // SAFETY: `old` was the Box leaked when it became current.
        let old_box = unsafe { Box::from_raw(old as *const Table as *mut Table) };
        self.epochs.retire(local, &self.shared, Garbage::Table(old_box));
        self.expansions.fetch_add(1, Ordering::Relaxed);
        if self.cache.is_some() {
            // Free the old table now, so the account gives its bytes back
            // to the segments without counting them twice.
            self.wait_grace(local);
            self.account_memory(0);
        }
    }

    /// Removes flushed and expired items from the current table, a step of
    /// SWEEP_STEP_BUCKETS buckets per pin. Skipped while expanding (the
    /// maintenance thread runs the expansion itself, so this cannot race).
    fn sweep(&self) {
        // SAFETY: only this thread replaces `current`.
        let t = unsafe { &*self.current.load(Ordering::Acquire) };
        // Every item under this fence is gone once the pass is whole
        // (`flush_unswept`); a flush during the pass asks for another.
        let fence = self.flush_cas.load(Ordering::SeqCst);
        let mut i = 0;
        let n = t.bucket_count();
        while i < n && !self.shutdown.load(Ordering::Relaxed) {
            let end = (i + SWEEP_STEP_BUCKETS).min(n);
            self.sweep_range(t, i, end);
            i = end;
        }
        if i >= n {
            self.swept_fence.fetch_max(fence, Ordering::AcqRel);
        }
    }

    /// True while [`Store::hold_expiry`]'s deadline lies ahead.
    fn expiry_held(&self) -> bool {
        let held = self.expiry_held_until.lock().unwrap_or_else(|e| e.into_inner());
        held.is_some_and(|until| std::time::Instant::now() < until)
    }

    /// The background expiry sweep (issue 4 §3): one bounded step of
    /// EXPIRY_SWEEP_BUCKETS_PER_WAKE buckets from `cursor` per maintenance
    /// wake, wrapping around the table; no full-table pause, and nothing at
    /// all until some item has had an expiry. A doubling restarts it at 0
    /// (bucket i of the old table is buckets i, i + n, ... of the new).
    /// Returns whether it swept anything (false until an expiry is seen).
    fn expiry_sweep_step(&self, cursor: &mut (u32, usize)) -> bool {
        if !self.ttl_seen.load(Ordering::Relaxed) {
            return false;
        }
        // SAFETY: only this thread replaces `current`.
        let t = unsafe { &*self.current.load(Ordering::Acquire) };
        if cursor.0 != t.log2() {
            *cursor = (t.log2(), 0);
        }
        let n = t.bucket_count();
        let mut i = cursor.1;
        let end = (i + EXPIRY_SWEEP_BUCKETS_PER_WAKE).min(n);
        while i < end && !self.shutdown.load(Ordering::Relaxed) {
            let step_end = (i + SWEEP_STEP_BUCKETS).min(end);
            self.sweep_range(t, i, step_end);
            i = step_end;
        }
        if i >= n {
            self.expiry_sweeps.fetch_add(1, Ordering::Relaxed);
            i = 0;
        }
        cursor.1 = i;
        true
    }

    /// Removes flushed and expired items from buckets `from..to` of `t`
    /// (the current table, not expanding: only the maintenance thread
    /// expands, and it is the caller), under one pin.
    fn sweep_range(&self, t: &Table, from: usize, to: usize) {
        let local = self.epochs.local(&self.shared);
        {
            self.epochs.pin(local);
            let now = self.now();
            let flush_cas = self.flush_cas.load(Ordering::Relaxed);
            for b in from..to {
                let Some(mut g) = t.lock(b) else { continue };
                let mut dead = Vec::new();
                g.retain(|p| {
                    // SAFETY: p is in a slot of the bucket we hold locked.
                    let l = unsafe { item::layout(p) };
                    let live = l.meta.cas >= flush_cas && self.expiry_live(l.meta.expiry, now, || l.meta.expiry_ms);
                    if !live {
                        dead.push(p);
                    }
                    live
                });
                drop(g);
                self.swept_items.fetch_add(dead.len() as u64, Ordering::Relaxed);
                let tell = self.watching(crate::key_events::EXPIRED);
                for p in dead {
                    // SAFETY: p is still allocated (just unlinked; our pin).
                    if tell && unsafe { self.dead_by_expiry(p) } {
                        // SAFETY: as above.
                        self.tell(crate::key_events::KeyEvent::Expired, unsafe { item::key(p) });
                    }
                    // SAFETY: p is still allocated (just unlinked).
                    local_add(&local.bytes, -unsafe { counted_bytes(p) });
                    local_add(&local.items, -1);
                    // SAFETY: as above.
                    unsafe { count_item(local, p, -1) };
                    // SAFETY: as above.
                    unsafe { self.count_class_unlinked(p) };
                    self.retire_object(local, p);
                    self.retire_item(local, p);
                }
            }
            self.epochs.unpin(local, &self.shared);
        }
    }

    /// Cache mode, on the maintenance thread: reclaims segments until more
    /// than EVICT_RESERVE_SEGMENTS + the wake slack are free or
    /// on their way (bounded: EVICT_SEGMENTS_PER_WAKE_MAX per call), so
    /// writers find free segments without reclaiming themselves. Returns
    /// true if it reclaimed anything.
    fn evict_ahead(&self, local: &Local) -> bool {
        let (Some(cache), Some(segs)) = (&self.cache, &self.shared.segments) else { return false };
        if !cache.background {
            return false;
        }
        let probing = cache.refusing_volatile();
        if probing {
            let now = self.now_millis();
            if now < cache.probed_ms.load(Ordering::Relaxed) + VOLATILE_PROBE_PERIOD_MS {
                return false;
            }
            cache.probed_ms.store(now, Ordering::Relaxed);
        }
        let mut reclaimed = false;
        let timing = Timing::start(self.watcher());
        let keep_free = cache.keep_free();
        let mut kept = 0;
        for _ in 0..EVICT_SEGMENTS_PER_WAKE_MAX {
            if segs.free_or_pending() > keep_free || self.shutdown.load(Ordering::Relaxed) {
                break;
            }
            match self.reclaim_segment(local, Reclaim::Background) {
                crate::reclaim::Reclaimed::Freed => {}
                // Nothing copied: walk on to the segments behind (bounded).
                crate::reclaim::Reclaimed::Stuck => continue,
                crate::reclaim::Reclaimed::Kept if probing && kept < VOLATILE_PROBE_SEGMENTS => {
                    kept += 1;
                    continue;
                }
                crate::reclaim::Reclaimed::Kept | crate::reclaim::Reclaimed::Nothing => break,
            }
            reclaimed = true;
            self.epochs.reclaim(local, &self.shared, 1);
        }
        if reclaimed {
            timing.end(self.watcher(), Stall::EvictionCycle);
        }
        reclaimed
    }

    /// Once a second: a write-clock checkpoint at the CAS counter, and,
    /// while store times are wanted, a new generation so every thread's
    /// next write takes a fresh CAS block (clock.rs). The counter is read
    /// before the bump: a block taken after a thread sees the bump starts
    /// at or above it.
    fn tick_write_clock(&self) {
        let now = self.now();
        if !self.write_clock.due(now) {
            return;
        }
        let cas = self.cas_counter.load(Ordering::SeqCst);
        if self.write_clock.tick(now, cas) && self.write_clock.wanted(now) {
            self.flush_generation.fetch_add(1, Ordering::SeqCst);
        }
    }

    pub(super) fn maintenance_loop(&self) {
        let local = self.epochs.local(&self.shared);
        let mut expiry_cursor = (0u32, 0usize);
        let mut last_expiry_step = std::time::Instant::now();
        while !self.shutdown.load(Ordering::Acquire) {
            // SAFETY: only this thread replaces and frees tables.
            let current = unsafe { &*self.current.load(Ordering::Acquire) };
            if self.needs_expansion(current) {
                // A running snapshot holds the gate: expand after it.
                if let Ok(_gate) = self.expand_gate.try_lock() {
                    self.quiet.store(false, Ordering::Release);
                    self.expand();
                    continue;
                }
            }
            self.flush_if_due();
            self.tick_write_clock();
            if self.sweep_requested.swap(false, Ordering::AcqRel) {
                self.sweep();
            }
            // Time-gated: the loop wakes every millisecond while it has
            // garbage to free, and the sweep is background work.
            if last_expiry_step.elapsed() >= MAINTENANCE_PERIOD && !self.expiry_held() {
                last_expiry_step = std::time::Instant::now();
                let timing = Timing::start(self.watcher());
                if self.expiry_sweep_step(&mut expiry_cursor) {
                    timing.end(self.watcher(), Stall::ExpireCycle);
                }
            }
            self.account_memory(0);
            self.note_peak(super::stats::index_bytes(current));
            let evicting = self.evict_ahead(local);
            let clean = self.epochs.reclaim(local, &self.shared, 4) && !evicting;
            self.quiet.store(clean, Ordering::Release);
            let near_full = self
                .cache
                .as_ref()
                .zip(self.shared.segments.as_ref())
                .is_some_and(|(cache, segs)| segs.free_count() <= cache.keep_free() + ACCOUNT_NEAR_FULL_SEGMENTS);
            let period = match (clean, near_full) {
                (false, _) => Duration::from_millis(1),
                (true, true) => ACCOUNT_PERIOD_NEAR_FULL,
                (true, false) => MAINTENANCE_PERIOD,
            };
            // Wake just after the next second begins, so the write clock's
            // checkpoint lands within a millisecond or two of it (clock.rs).
            let to_next_second = Duration::from_millis(1000 - self.now_millis() % 1000 + 1);
            let period = period.min(to_next_second);
            std::thread::park_timeout(period);
        }
    }
}

impl Store {
    /// Waits until no expansion is running or due and the tables it
    /// replaced are freed (tests and benchmarks that want a quiet table). Bounded by `timeout`; returns false if it
    /// ran out.
    ///
    /// ```
    /// let store = amalgam_engine::Store::new(Default::default()).unwrap();
    /// assert!(store.wait_for_expansion(std::time::Duration::from_secs(5)));
    /// ```
    pub fn wait_for_expansion(&self, timeout: Duration) -> bool {
        let start = std::time::Instant::now();
        while start.elapsed() < timeout {
            let busy = {
                let pin = Pinned::new(&self.inner);
                let t = pin.current();
                t.successor().is_some() || self.inner.needs_expansion(t)
            };
            if !busy && self.inner.quiet.load(Ordering::Acquire) {
                return true;
            }
            if let Some(th) = self.inner.maintenance_thread.get() {
                th.unpark();
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        false
    }
}
