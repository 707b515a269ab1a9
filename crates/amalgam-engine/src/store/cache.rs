//! Cache mode's policy in force: the methods of the shared `Cache`
//! state, switching the policy at run time (`Store::set_eviction`, with
//! why a switch is sound), the wake slack of free segments, and the queue
//! dumps that the tests of the eviction order read.

#[cfg(doc)]
use super::Reader;
use super::{Cache, ConfigError, Store};
use crate::evict::{Eviction, Policy, Queue, Scope};
use crate::item;
use crate::segment::EVICT_RESERVE_SEGMENTS;
use std::sync::atomic::Ordering;

/// Cache mode: free segments above the reserve at which writers start
/// waking the eviction (maintenance) thread, and to which it reclaims, so
/// it stays ahead of them: one per 2^EVICT_WAKE_SLACK_SHARE_LOG2 segments
/// of the budget (`Cache::wake_slack`), at least 1 and at most
/// EVICT_WAKE_SLACK_SEGMENTS_MAX. One segment was too little for a busy
/// large cache: under HSET at pipeline 16 over 100 k small hashes (~650
/// MB/s of new versions into a 1 GiB cache) writers found the reserve
/// reached and reclaimed themselves ~70 times a second, their replies
/// waiting for it; with 4 (1 GiB) they did so 0–7 times in 6 s, and SETs
/// on a full 1 GiB cache never (docs/bench-log/2026-11-26-collections.md
/// § Writers no longer reclaim in a busy cache). Budgets under 512 MiB keep 1: a slack of 4
/// at 256 MiB cost SET at pipeline 16 there its p99 (1.24 → 1.55–1.90 ms,
/// the reclaiming thread's share of the 2 vCPUs), and each segment is a
/// larger share of the items.
const EVICT_WAKE_SLACK_SHARE_LOG2: u32 = 8;
/// See EVICT_WAKE_SLACK_SHARE_LOG2: 16 MiB of 1 MiB segments (0.4% of a
/// 4 GiB budget and above).
const EVICT_WAKE_SLACK_SEGMENTS_MAX: usize = 16;

/// The wake slack (EVICT_WAKE_SLACK_SHARE_LOG2) for `segments` segments
/// in the budget.
pub(super) fn wake_slack_for(segments: usize) -> usize {
    (segments >> EVICT_WAKE_SLACK_SHARE_LOG2).clamp(1, EVICT_WAKE_SLACK_SEGMENTS_MAX)
}

/// `Cache::active`'s low bit: CLOCK in force.
pub(super) const ACTIVE_CLOCK: u32 = 0;
/// `Cache::active`'s low bit: S3-FIFO in force.
pub(super) const ACTIVE_S3FIFO: u32 = 1;

/// `Cache::active`'s low bit for an evicting policy (`None` has no
/// policy object and never reaches here).
pub(super) fn active_bit(e: Eviction) -> u32 {
    match e {
        Eviction::S3Fifo => ACTIVE_S3FIFO,
        Eviction::Clock | Eviction::None => ACTIVE_CLOCK,
    }
}

/// volatile-ttl: the medians of the last this many reclaimed segments'
/// deadlines are remembered (`Cache::ttl_cut`).
pub(crate) const TTL_MEDIANS_KEPT: usize = 16;
/// volatile-ttl: a segment with items with a TTL gives up at least
/// 1/2^TTL_EVICT_SHARE_MIN_LOG2 of its items (when it has that many with
/// a TTL), so its reclamation frees memory even when its keys all expire
/// later than the others' (reclaim.rs, "Volatile scopes").
const TTL_EVICT_SHARE_MIN_LOG2: u32 = 3;

impl Cache {
    /// Whether writers leave reclaiming to the maintenance thread because
    /// a volatile scope found nothing it may evict (`refusing`, set by a
    /// refused write, cleared by a reclamation that freed a segment):
    /// only with a maintenance thread to clear it.
    pub(crate) fn refusing_volatile(&self) -> bool {
        self.background
            && self.refusing.load(Ordering::Relaxed)
            && Scope::from_index(self.scope.load(Ordering::Relaxed)).volatile()
    }

    /// volatile-ttl's cut for a reclaimed segment of `items` items whose
    /// items with a TTL have `deadlines` (unix ms, reordered here): its
    /// items with a TTL expiring no later go. The cut is the lowest median
    /// of the last TTL_MEDIANS_KEPT segments (this one's included), so a
    /// segment of late deadlines keeps them while others hold sooner ones;
    /// but at most this segment's median (the soonest half goes at most)
    /// and at least its TTL_EVICT_SHARE_MIN_LOG2 share's deadline (some
    /// goes, so a reclamation frees memory). 0 (nothing goes) without
    /// deadlines. Called by the reclaimer (serialized by its mutex);
    /// bounded by the segment's items (a selection).
    pub(crate) fn ttl_cut(&self, deadlines: &mut [u64], items: usize) -> u64 {
        if deadlines.is_empty() {
            return 0;
        }
        let n = deadlines.len();
        let median = *deadlines.select_nth_unstable((n - 1) / 2).1;
        let least = items.div_ceil(1 << TTL_EVICT_SHARE_MIN_LOG2).clamp(1, n);
        let floor = *deadlines.select_nth_unstable(least - 1).1;
        let lowest = {
            let mut m = self.ttl_medians.lock().unwrap_or_else(|e| e.into_inner());
            let (ring, at) = &mut *m;
            ring[*at % TTL_MEDIANS_KEPT] = median;
            *at += 1;
            ring[..(*at).min(TTL_MEDIANS_KEPT)].iter().copied().min().unwrap_or(median)
        };
        lowest.max(floor).min(median.max(floor))
    }

    /// Free segments the maintenance thread keeps: the writers' reserve
    /// ([`EVICT_RESERVE_SEGMENTS`]) and the wake slack above it. At or
    /// below this a writer wakes the thread and the thread reclaims.
    #[inline]
    pub(crate) fn keep_free(&self) -> usize {
        EVICT_RESERVE_SEGMENTS + self.wake_slack.load(Ordering::Relaxed)
    }

    /// The policy in force.
    #[inline]
    pub(crate) fn policy(&self) -> &dyn Policy {
        self.policy_of(self.active.load(Ordering::Relaxed))
    }

    /// The policy a value of `active` names.
    #[inline]
    fn policy_of(&self, active: u32) -> &dyn Policy {
        if active & 1 == ACTIVE_S3FIFO {
            &self.s3fifo
        } else {
            &self.clock
        }
    }

    /// The queue a new item goes to under the policy `active` names,
    /// without a virtual call (this is on every cache-mode write).
    #[inline]
    pub(super) fn admit(&self, active: u32, key_hash: u64) -> Queue {
        if active & 1 == ACTIVE_S3FIFO {
            self.s3fifo.admit(key_hash)
        } else {
            self.clock.admit(key_hash)
        }
    }
}

impl Store {
    /// The eviction policy in force ([`Eviction::None`] in store mode).
    pub fn eviction(&self) -> Eviction {
        match &self.inner.cache {
            None => Eviction::None,
            Some(c) if c.active.load(Ordering::Relaxed) & 1 == ACTIVE_S3FIFO => Eviction::S3Fifo,
            Some(_) => Eviction::Clock,
        }
    }

    /// Switches a cache's eviction policy at run time between CLOCK and
    /// S3-FIFO; Err for store mode or to [`Eviction::None`] (items live in
    /// size-class pools in store mode and in the segment log in cache mode:
    /// a switch would copy every item across). Switching to the policy in
    /// force changes nothing.
    ///
    /// # Why a switch is sound
    ///
    /// Both policies run on the same segment log and obey one contract
    /// (`evict/mod.rs`), so the state a policy leaves is one the other
    /// accepts: items carry a frequency of at most 3 (2 bits) and CLOCK
    /// keeps any nonzero one as 0 (still one pass of progress per item);
    /// S3-FIFO starts with its ghost as it was (stale entries only admit a
    /// key to Main once). The reclaimer's decisions stay serialized by its
    /// mutex, and a writer or reclaimer that read the old policy an instant
    /// before the switch makes one decision by it, which either policy's
    /// contract allows. GET hits raise frequencies up to the new cap from
    /// the next load on.
    ///
    /// # No segment is left behind
    ///
    /// Every segment the old policy's queues hold stays reclaimable:
    ///
    /// * *Sealed segments* are popped by queue, and both policies name
    ///   both queues: CLOCK's `victim` names Small while anything is left
    ///   there (it never writes there itself), and moves what it keeps to
    ///   Main; S3-FIFO reclaims CLOCK's Main as its own.
    /// * *Open segments* are reclaimed only once their owner seals them
    ///   (it may be writing into one), and an owner used to seal one only
    ///   when it wrote to that queue again. Under CLOCK no one writes to
    ///   Small again, so a writer's open Small segment stayed open, its
    ///   items never evicted, unless that writer happened to reclaim a
    ///   segment itself (it may seal its own; the maintenance thread, which
    ///   reclaims ahead of writers, may not): a race, which
    ///   `docs/cache-mode.md` tells in full. Now each switch counts in
    ///   `Cache::active`, and a thread's first write that sees a new count
    ///   seals all its open segments before it allocates
    ///   (`Inner::alloc_in_segment`); a thread that may stay idle calls
    ///   [`Store::follow_eviction`] to do the same without writing (the
    ///   server's workers do when the switch wakes them). A thread that
    ///   does neither keeps its open segments (at most one per queue)
    ///   until it writes, as an idle thread does under any one policy.
    ///
    /// ```
    /// # use amalgam_engine::{evict::Eviction, Config, Store};
    /// let store = Store::new(Config { eviction: Eviction::S3Fifo, ..Config::default() }).unwrap();
    /// store.set_eviction(Eviction::Clock).unwrap();
    /// assert_eq!(store.eviction(), Eviction::Clock);
    /// assert!(store.set_eviction(Eviction::None).is_err());
    /// ```
    pub fn set_eviction(&self, to: Eviction) -> Result<(), ConfigError> {
        let Some(cache) = &self.inner.cache else {
            return Err(ConfigError(
                "store mode (eviction none) cannot start evicting: restart with --eviction".into(),
            ));
        };
        if to == Eviction::None {
            return Err(ConfigError("a cache cannot become a store (eviction none): restart with --eviction".into()));
        }
        // Two switches at once: the frequency cap must end as the policy's.
        let _one = cache.switching.lock().unwrap_or_else(|e| e.into_inner());
        let bit = active_bit(to);
        let now = cache.active.load(Ordering::Relaxed);
        if now & 1 == bit {
            return Ok(());
        }
        let next = ((now >> 1).wrapping_add(1) << 1) | bit;
        self.inner.freq_max.store(cache.policy_of(next).freq_max().min(item::FREQ_BITS_MAX), Ordering::Relaxed);
        cache.active.store(next, Ordering::Relaxed);
        Ok(())
    }

    /// Cache mode: what the calling thread's next write would do first
    /// after a policy switch ([`Store::set_eviction`]): seals its open
    /// segments if the policy changed since its last write, so they can be
    /// reclaimed. For a thread that may stay idle after a switch (the
    /// server's workers call it when CONFIG SET eviction wakes them):
    /// without it, its open segments wait for a write that may never come.
    /// Does nothing inside a [`Reader`] session (the thread is pinned, and
    /// a write of its own may be in progress), in store mode, or when
    /// nothing changed: a load and a compare.
    ///
    /// ```
    /// # use amalgam_engine::{evict::Eviction, Config, Expiry, Store};
    /// let store = Store::new(Config { eviction: Eviction::S3Fifo, ..Config::default() }).unwrap();
    /// store.set(b"k", b"v", 0, Expiry::Never).unwrap();
    /// store.set_eviction(Eviction::Clock).unwrap();
    /// store.follow_eviction();
    /// assert!(store.get(b"k", |_| ()).is_some());
    /// ```
    pub fn follow_eviction(&self) {
        let inner = &*self.inner;
        let (Some(cache), Some(segs)) = (&inner.cache, &inner.shared.segments) else { return };
        let local = inner.epochs.local(&inner.shared);
        // SAFETY: our own Local; the reference ends with this function.
        let owned = unsafe { local.owned() };
        let active = cache.active.load(Ordering::Relaxed);
        if active == owned.policy_seen || owned.pin_depth != 0 {
            return;
        }
        // Not pinned: every item this thread allocated is finished (items
        // are allocated and published or abandoned under one pin).
        segs.seal_open(&mut owned.open);
        owned.policy_seen = active;
    }

    /// S3-FIFO's small-queue share, in percent of the cache's bytes (None
    /// in store mode). Kept while CLOCK is in force, for a switch back.
    pub fn small_queue_percent(&self) -> Option<u8> {
        self.inner.cache.as_ref().map(|c| c.s3fifo.small_percent())
    }

    /// Sets S3-FIFO's small-queue share at run time
    /// ([`S3Fifo::set_small_percent`](crate::evict::S3Fifo::set_small_percent):
    /// from 1 to 50 percent, taking effect at the next reclamation); Err
    /// saying the range, or for store mode.
    ///
    /// ```
    /// # use amalgam_engine::{evict::Eviction, Config, Store};
    /// let store = Store::new(Config { eviction: Eviction::S3Fifo, ..Config::default() }).unwrap();
    /// assert_eq!(store.small_queue_percent(), Some(10));
    /// store.set_small_queue_percent(25).unwrap();
    /// assert_eq!(store.small_queue_percent(), Some(25));
    /// assert!(store.set_small_queue_percent(51).is_err());
    /// ```
    pub fn set_small_queue_percent(&self, percent: u8) -> Result<(), ConfigError> {
        let Some(cache) = &self.inner.cache else {
            return Err(ConfigError("store mode (eviction none) has no small queue".into()));
        };
        cache.s3fifo.set_small_percent(percent).map_err(ConfigError)
    }

    /// Which items a cache's reclamations may evict (None in store mode).
    pub fn scope(&self) -> Option<Scope> {
        self.inner.cache.as_ref().map(|c| Scope::from_index(c.scope.load(Ordering::Relaxed)))
    }

    /// Sets which items a cache's reclamations may evict (Redis's
    /// `allkeys-*` or `volatile-*`, [`Scope`]), from the next reclaimed
    /// segment on; Err for store mode, which evicts nothing. Nothing moves
    /// at once: items are decided as their segments reach the head.
    ///
    /// ```
    /// # use amalgam_engine::{evict::{Eviction, Scope}, Config, Store};
    /// let store = Store::new(Config { eviction: Eviction::S3Fifo, ..Config::default() }).unwrap();
    /// assert_eq!(store.scope(), Some(Scope::AllKeys));
    /// store.set_scope(Scope::VolatileTtl).unwrap();
    /// assert_eq!(store.scope(), Some(Scope::VolatileTtl));
    /// assert!(Store::new(Config::default()).unwrap().set_scope(Scope::Volatile).is_err());
    /// ```
    pub fn set_scope(&self, scope: Scope) -> Result<(), ConfigError> {
        let Some(cache) = &self.inner.cache else {
            return Err(ConfigError("store mode (eviction none) evicts nothing: restart with --eviction".into()));
        };
        cache.scope.store(scope.index(), Ordering::Relaxed);
        cache.refusing.store(false, Ordering::Relaxed);
        if let Some(th) = self.inner.maintenance_thread.get() {
            th.unpark();
        }
        Ok(())
    }

    /// Whether the store evicts (cache mode) or refuses writes when full
    /// (store mode, `Eviction::None`).
    pub fn is_cache(&self) -> bool {
        self.inner.cache.is_some()
    }

    /// Cache mode, for tests of the eviction order: the live items of
    /// `queue`, oldest first (segments in queue order, items in log order
    /// within a segment), with their frequencies. Found through the index
    /// (a full scan), so it is safe while other threads run, but only a
    /// quiet store gives a consistent picture. Empty in store mode.
    #[doc(hidden)]
    pub fn dump_queue(&self, queue: Queue) -> Vec<(Vec<u8>, u8)> {
        let Some(segs) = &self.inner.shared.segments else { return Vec::new() };
        let order: std::collections::HashMap<u32, usize> =
            segs.queue_snapshot(queue).iter().enumerate().map(|(i, &(id, _))| (id, i)).collect();
        let mut found = Vec::new();
        let mut cursor = 0;
        loop {
            cursor = self.scan(cursor, |it| {
                if !segs.contains(it.ptr) {
                    return; // outsized (outsized.rs): in no segment's queue
                }
                let id = segs.id_of(it.ptr);
                if let Some(&pos) = order.get(&id) {
                    let off = it.ptr as usize - segs.base_of(id) as usize;
                    // SAFETY: `it` is live for this callback (scan's pin).
                    let freq = unsafe { item::freq(it.ptr) };
                    found.push((pos, off, it.key().to_vec(), freq));
                }
            });
            if cursor == 0 {
                break;
            }
        }
        found.sort();
        found.into_iter().map(|(_, _, k, f)| (k, f)).collect()
    }

    /// Cache mode, for tests: the segments of `queue` oldest first, as
    /// (fill bytes, live bytes, creation sequence number).
    #[doc(hidden)]
    pub fn dump_segments(&self, queue: Queue) -> Vec<(usize, i64, u64)> {
        let Some(segs) = &self.inner.shared.segments else { return Vec::new() };
        segs.queue_snapshot(queue)
            .into_iter()
            .map(|(id, fill)| {
                let (live, seq) = segs.live_and_seq(id);
                (fill, live, seq)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The wake slack: one segment below 512 of them (`-m 512` of 1 MiB
    /// segments), a 256th of them above, 16 at most.
    #[test]
    fn wake_slack_scales_with_the_budget() {
        assert_eq!(wake_slack_for(0), 1);
        assert_eq!(wake_slack_for(64), 1);
        assert_eq!(wake_slack_for(511), 1);
        assert_eq!(wake_slack_for(1024), 4);
        assert_eq!(wake_slack_for(4096), 16);
        assert_eq!(wake_slack_for(1 << 20), EVICT_WAKE_SLACK_SEGMENTS_MAX);
    }
}
