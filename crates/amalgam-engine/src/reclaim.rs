//! Cache mode's reclamation: freeing a whole segment while optimistic
//! readers and writers run, with the eviction policy deciding per item.
//!
//! # HOW IT WORKS
//!
//! Segcache (Yang et al., NSDI '21) frees memory a segment at a time and
//! decides per object whether to keep it (§4.3, merge-based eviction);
//! MemC3 §4 and S3-FIFO (SOSP '23 §4) are per-item FIFO policies with
//! reinsertion. On a log the two meet: [`Inner::reclaim_segment`]
//!
//! 0. with [`Config::merge_segments`](crate::Config) (off in the engine's
//!    default config, on in the server's), first looks for garbage: a run of 2..=16 consecutive
//!    SEALED segments within the first 64 of a queue whose live bytes add
//!    up to at most 90% of one segment. Their live items are copied, as
//!    they are (same frequency, no policy decision, nothing evicted), into
//!    one fresh segment that takes the run's place in the queue, so queue
//!    order, and with it the policy's eviction order, is kept; the run is
//!    retired as in step 4. A merge holds the reclaimer mutex only per
//!    window of items (`Copies::PerWindow`; it needs it only to ask the
//!    policy once its output is full), so writers reclaiming a victim
//!    meanwhile do not wait for a run of 16 segments; the output goes in
//!    after the segment that preceded the run (`RunPlace`), wherever
//!    concurrent pops and pushes have moved it. Under overwrite-heavy
//!    loads most of the log is dead versions of hot keys, which otherwise
//!    wait for their segment to reach the head while live items are
//!    evicted (Segcache's merge, §4.3, without its eviction part). Measured
//!    (`docs/bench-log/2026-11-23-cache-mode.md` § Items held under an
//!    overwrite-heavy load): at `-m 64` under 50% SET Zipf, 404-519 k live items become 655-740 k
//!    (memcached: 559 k), and the MemC3 replay's miss ratios stay within
//!    0.08 points at every size.
//! 1. asks the policy which queue's head goes (`Policy::victim`, from the
//!    bytes per queue) and pops that queue's oldest SEALED segment
//!    (`Segments::pop_victim`; it falls back to the other queue when that
//!    one has none). The segment is now RECLAIMING: no writer owns it and
//!    no one else will pop it.
//! 2. a segment whose live bytes are 0 is retired at once (step 4),
//!    unwalked: every item in it was unlinked (2a below). Otherwise it
//!    walks its items in log order (they are self-describing). For each,
//!    it computes the key's hash, locks the key's bucket (following MOVED
//!    into the successor while an expansion runs, as every writer does),
//!    and checks liveness against the index: is a slot pointing at *this
//!    address*? If not, the item was overwritten, deleted, or abandoned
//!    unpublished: skip. If the slot does point here but the item has
//!    expired or was flushed, unlink it (never reinserted).
//! 3. otherwise asks `Policy::reclaim(queue, freq, hash)`:
//!    * `Evict`: unlink the slot; count `evictions`, and
//!      `evicted_unfetched` when freq is 0;
//!    * `Keep { queue, freq }`: copy the item into the reclaimer's open
//!      segment of that queue with the new frequency and swap the slot's
//!      pointer (one release store) — all under the bucket lock, so no
//!      writer can replace the item between the check and the swap. If no
//!      free segment is left for the copy, the item is evicted instead
//!      (the progress rule in `docs/cache-mode.md`).
//! 4. retires the segment through the epoch scheme (`Garbage::Segment`);
//!    after the grace period the epoch collector returns it to the free
//!    list (`Segments::release`).
//!
//! # VOLATILE SCOPES (Redis's `volatile-*`, `evict::Scope`)
//!
//! Read once per reclaimed segment. Under a volatile scope, step 3 asks
//! the policy only about items with a TTL; an item without one is kept
//! (copied to Main with its frequency: the scope's exception to the
//! contract's progress rule). Under volatile-ttl, an item with a TTL goes
//! if its deadline is at or before the segment's cut (`Cache::ttl_cut`,
//! computed from the deadlines of the segment's items before the walk),
//! else it is kept the same way. Two things change with it:
//!
//! * *No room to keep.* An item the scope forbids to evict that finds no
//!   free segment for its copy stays linked where it is; after the walk
//!   the segment goes back, SEALED, to its queue's tail
//!   (`Segments::requeue`) instead of being retired, its live bytes
//!   lowered by what the walk unlinked or copied out (each of those was
//!   counted when linked and is subtracted once, here, so the count stays
//!   at or above the linked bytes: 2a below holds). The walk reports
//!   [`Reclaimed::Stuck`].
//! * *Nothing to free.* A walk that freed (evicted, found expired or dead)
//!   under 1/2^VOLATILE_FREED_SHARE_LOG2 of its segment copied about all it
//!   walked: it reports [`Reclaimed::Kept`]. Writers stop at either and
//!   their write answers out of memory (Redis's `-OOM`); from then on
//!   (`Cache::refusing_volatile`) they leave the search for room to the
//!   maintenance thread, which walks on past Stuck (it copied nothing)
//!   and a few Kept segments at most once per VOLATILE_PROBE_PERIOD_MS
//!   (maintenance.rs), so a cache full of keys without a TTL refuses a
//!   write at the cost of a load, not of a walk.
//!
//! # WHY IT IS CORRECT UNDER CONCURRENCY
//!
//! * *Readers never see reused memory.* When step 4 runs, every slot that
//!   pointed into the segment has been cleared or swapped (step 2 visits
//!   every item; an item is in at most one slot, and only a bucket-lock
//!   holder changes slots). A reader that loaded such a pointer was pinned
//!   before the unlink; the segment is reused only after the global epoch
//!   has advanced twice past the retirement (local.rs), i.e. after that
//!   reader unpinned. Exactly the argument for a single item in store mode.
//! * *2a: a segment whose live bytes are 0 has no linked item.* Only two
//!   places put an item's address into a slot: a write publishing its new
//!   item (`Inner::mutate`) and the reclaimer's copy (step 3); each adds
//!   the item's aligned size to its segment's live bytes under the
//!   bucket lock, after the slot store. Every unlink of an item that is
//!   not in a segment being reclaimed (a replace, a delete, the sweep)
//!   subtracts the same size (`Inner::retire_item`) after the unlink, so
//!   the count is the bytes of the items linked now plus those unlinked
//!   whose subtraction is not yet seen: never below the linked ones. The
//!   adds for a SEALED segment all precede its seal (its owner published
//!   or abandoned every item first), which the pop's acquire load pairs
//!   with; so a RECLAIMING segment reading 0 has no linked item and none
//!   can be linked into it again (nothing allocates there). Its items'
//!   readers are covered by the grace period as above. Debug builds check
//!   it on every such skip (`assert_none_linked`); an item count that
//!   wrongly read 0 would be a use after free, so the check runs in
//!   every test that fills a cache. Under overwrite-heavy loads nearly
//!   every segment reaching the head is wholly dead (HSET over 100 k small
//!   hashes: every hash rewritten ~20 times while the log turns once),
//!   and the walk was the reclaimer's whole cost.
//! * *No item is lost.* A writer publishes an item only into its own OPEN
//!   segment, and an OPEN segment is never reclaimed; the owner seals it
//!   only when its next allocation does not fit, i.e. after finishing (and
//!   publishing or abandoning) every item in it. The seal is a release
//!   store that the pop's acquire load pairs with, so the walk sees whole
//!   headers. A writer that replaces an item concurrently holds the bucket
//!   lock; either it runs first (the slot no longer points here: dead) or
//!   after (it replaces the copy, or finds the key gone).
//! * *A GET may raise the frequency during the copy.* The meta byte is
//!   read atomically (`item::copy_with_freq`); the raise is lost, which
//!   only makes the item a little colder.
//! * *Deadlock.* The reclaimer holds the `Cache::reclaimer` mutex (for a
//!   victim's whole walk, or a merge's window) and then one bucket lock at
//!   a time; writers never take the reclaimer mutex
//!   while holding a bucket lock (they make room in `Inner::make_room`,
//!   before locking anything, and a write whose allocation under a bucket
//!   lock found no free segment gives the lock up, reports out of memory
//!   to `Inner::with_room`, which makes room and runs it again). The
//!   segment free list and queue mutexes are leaves.
//!
//! # LIMITS
//!
//! One call handles one segment: at most `segment_bytes / 8` items, one
//! bucket lock each, plus one copy each (at most one segment of copies,
//! since the copies are no larger than the segment). The order is exact
//! at segment granularity: items of one segment are decided in log order,
//! segments in queue order; with one item per segment it is the order of
//! `evict::Model` (tests/cache.rs checks this).

use crate::evict::{Queue, Scope, Verdict};
use crate::item;
use crate::local::{Garbage, Local};
use crate::segment::{OpenSegments, ITEM_ALIGN_BYTES};
use crate::store::{count_item, local_add, Inner, ItemRef, Pinned};
use crate::table::split_hash;
use std::sync::atomic::Ordering;

/// What a reclamation ([`Inner::reclaim_segment`]) came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reclaimed {
    /// A segment was retired, its walk freeing enough (every walk under
    /// the all-keys scope; see VOLATILE_FREED_SHARE_LOG2).
    Freed,
    /// Volatile scope: the walk kept about everything by copying it; more
    /// walks would move items without freeing memory.
    Kept,
    /// Volatile scope: items it may not evict found no free segment to be
    /// copied to, and the segment went back to its queue's tail (a
    /// starved cache, `Inner::starved`). Nothing was copied, so the
    /// maintenance thread walks on, within its per-wake bound, to the
    /// segments behind, which may hold items with a TTL.
    Stuck,
    /// No queue had a sealed segment.
    Nothing,
}

impl Reclaimed {
    /// Whether memory was freed.
    pub(crate) fn freed(self) -> bool {
        self == Reclaimed::Freed
    }
}

/// A run of consecutive sealed segments whose live bytes add up to at
/// most this share of one segment is merged into one segment (step 0 of
/// the essay) before the policy's victim is reclaimed. Below 100 because
/// live bytes are counted approximately while writers run.
pub(crate) const MERGE_LIVE_PERCENT_MAX: usize = 90;
/// Queue positions from the head where a run may start, per queue and
/// reclamation (bounds the scan under the queue's mutex).
pub(crate) const MERGE_SCAN_SEGMENTS: usize = 64;
/// Most segments merged at once.
pub(crate) const MERGE_RUN_SEGMENTS_MAX: usize = 16;
/// Items of a reclaimed segment hashed and prefetched together before each
/// is decided (the engine's batch window, MICA §5.3).
const RECLAIM_WINDOW_ITEMS: usize = crate::store::BATCH_WINDOW_KEYS;

/// A reclamation under a volatile scope whose walk freed (evicted, found
/// expired or found dead) less than 1/2^VOLATILE_FREED_SHARE_LOG2 of the
/// segment's bytes reports that it reclaimed nothing ("Volatile scopes"
/// in the essay): its copies took about as much as it gave back, so
/// walking on would only move items without freeing memory.
const VOLATILE_FREED_SHARE_LOG2: u32 = 3;

/// How one walk decides, and what it did (per segment).
struct Rules {
    /// Every candidate is evicted whatever the policy says ([`Reclaim::Force`]).
    force: bool,
    /// Which items are candidates (read once per reclamation).
    scope: Scope,
    /// [`Scope::VolatileTtl`]: the segment's cut, a deadline in unix
    /// milliseconds: its items with a TTL expiring no later go.
    ttl_cut_ms: u64,
    /// Items that are no candidate and found no free segment to be copied
    /// to: still linked, so the segment goes back to its queue.
    left: usize,
    /// Bytes of the segment's items this walk unlinked or copied out.
    moved_bytes: i64,
    /// Bytes of the segment's items evicted, expired or found dead.
    freed_bytes: usize,
}

impl Rules {
    fn new(force: bool, scope: Scope) -> Rules {
        Rules { force, scope, ttl_cut_ms: 0, left: 0, moved_bytes: 0, freed_bytes: 0 }
    }
}

/// An item's deadline in unix milliseconds (0: none), from its expiry
/// second and the milliseconds past it.
fn deadline_ms(expiry_s: u32, expiry_ms: u16) -> u64 {
    if expiry_s == 0 {
        0
    } else {
        u64::from(expiry_s) * 1000 + u64::from(expiry_ms)
    }
}

/// How a reclamation reaches the reclaimer's open segments (where kept
/// items are copied) and with them the right to ask the policy.
enum Copies<'a> {
    /// Locked for the whole walk: a victim's reclamation, so that
    /// reclamations, and the policy's decisions with them, follow the
    /// queues' order exactly (tests/cache.rs compares it with
    /// `evict::Model`). One segment: the hold is bounded by its items.
    Held(&'a mut OpenSegments),
    /// Locked per window of RECLAIM_WINDOW_ITEMS items: a merge, which
    /// may walk MERGE_RUN_SEGMENTS_MAX segments and needs the policy only
    /// when its output is full. Holding the mutex for the whole run kept
    /// writers that reached the free-segment reserve waiting for it (the
    /// tail measured in docs/bench-log/2026-11-24-resp-vs-redis.md §
    /// Reclaiming in prefetched windows).
    PerWindow(&'a std::sync::Mutex<OpenSegments>),
}

/// Who reclaims, and how ([`Inner::reclaim_segment`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reclaim {
    /// The maintenance thread, ahead of the writers: merges first.
    Background,
    /// A writer at the reserve (or the expand thread making room for a
    /// table): one victim's walk, merging only if no maintenance thread
    /// reclaims.
    Writer,
    /// A writer's bounded fallback: every live item of the victim is
    /// evicted whatever the policy says, which always frees a segment.
    Force,
}

impl Reclaim {
    /// A writer's reclamation, forced on its last round.
    pub(crate) fn writer(last_round: bool) -> Reclaim {
        if last_round {
            Reclaim::Force
        } else {
            Reclaim::Writer
        }
    }
}

/// A merge's output segment as the reclaimer fills it.
struct MergeOut {
    id: u32,
    base: *mut u8,
    fill: usize,
    cap: usize,
}

impl Inner {
    /// Step 0 of the essay: merges a sparse run of `queue` into one
    /// segment placed where the run was. False if there was none. If no
    /// free segment is left for the output, the run is reclaimed as
    /// victims are (the policy decides) instead.
    /// The caller holds no lock: the reclaimer mutex is taken per window.
    fn merge_sparse_run(&self, local: &Local, queue: Queue) -> bool {
        let (Some(cache), Some(segs)) = (&self.cache, &self.shared.segments) else { return false };
        let live_max = (segs.segment_bytes() * MERGE_LIVE_PERCENT_MAX / 100) as i64;
        let Some((place, run)) = segs.pop_sparse_run(queue, MERGE_SCAN_SEGMENTS, MERGE_RUN_SEGMENTS_MAX, live_max)
        else {
            return false;
        };
        let copies = Copies::PerWindow(&cache.reclaimer);
        let Some(out_id) = segs.take_detached(queue, 0) else {
            self.reclaim_run(local, copies, queue, &run, false, None);
            return true;
        };
        let mut out = MergeOut { id: out_id, base: segs.base_of(out_id), fill: 0, cap: segs.segment_bytes() };
        self.reclaim_run(local, copies, queue, &run, false, Some(&mut out));
        if out.fill > 0 {
            segs.insert_sealed(queue, place, out.id, out.fill);
        } else {
            segs.give_back(out.id);
        }
        let freed = run.len() - usize::from(out.fill > 0);
        cache.merged_segments.fetch_add(freed as u64, Ordering::Relaxed);
        true
    }

    /// Walks every segment of `run` (RECLAIMING, popped by the caller) in
    /// order, deciding each item (steps 2-3, or the merge of step 0 with
    /// `merge`), then retires the segments (step 4).
    fn reclaim_run(
        &self,
        local: &Local,
        mut copies: Copies<'_>,
        queue: Queue,
        run: &[(u32, usize)],
        force: bool,
        mut merge: Option<&mut MergeOut>,
    ) -> Reclaimed {
        let (Some(cache), Some(segs)) = (&self.cache, &self.shared.segments) else { return Reclaimed::Nothing };
        let mut now = None;
        let mut items: Vec<(*const u8, usize)> = Vec::new();
        let mut deadlines: Vec<u64> = Vec::new();
        let scope = Scope::from_index(cache.scope.load(Ordering::Relaxed));
        let mut freed_enough = !scope.volatile();
        let mut retired = 0;
        let mut stuck = false;
        for &(id, fill) in run {
            let mut rules = Rules::new(force, scope);
            if segs.live_and_seq(id).0 == 0 {
                // Every item of it was unlinked: nothing to decide, no
                // walk (step 2a of the essay). Debug builds walk anyway
                // and check that no slot points into it.
                #[cfg(debug_assertions)]
                self.assert_none_linked(id, fill);
                self.epochs.retire(local, &self.shared, Garbage::Segment(id));
                retired += 1;
                freed_enough = true;
                continue;
            }
            items.clear();
            // SAFETY: the segment is RECLAIMING: sealed (every item in it up
            // to `fill` written, made visible by the seal/pop
            // release/acquire pair), owned by us, and freed only by the
            // retirement below.
            unsafe { segs.walk(id, fill, |p, total| items.push((p, total))) };
            if scope == Scope::VolatileTtl {
                // The deadlines of the segment's items with a TTL (dead
                // ones included: a header read, no lock).
                deadlines.clear();
                // SAFETY: as for the walk: items of a segment we own.
                deadlines.extend(
                    items.iter().map(|&(p, _)| unsafe { deadline_ms(item::expiry_of(p), item::expiry_ms_of(p)) }),
                );
                deadlines.retain(|&d| d != 0);
                rules.ttl_cut_ms = cache.ttl_cut(&mut deadlines, items.len());
            }
            // MICA §5.3's batching, applied to the walk: hash a window of
            // items and prefetch their buckets, then decide each. Pinned
            // per window, so a long run (a merge walks up to
            // MERGE_RUN_SEGMENTS_MAX segments) never holds the epoch back.
            let mut hashes = [0u64; RECLAIM_WINDOW_ITEMS];
            for window in items.chunks(RECLAIM_WINDOW_ITEMS) {
                let pin = Pinned::new(self);
                let t = pin.current();
                for (h, &(p, _)) in hashes.iter_mut().zip(window) {
                    // SAFETY: p is an item of a segment we own (above).
                    *h = self.hash(unsafe { item::key(p) });
                    t.route(*h).prefetch(*h);
                }
                let mut locked;
                let copies: &mut OpenSegments = match &mut copies {
                    Copies::Held(c) => c,
                    Copies::PerWindow(m) => {
                        locked = m.lock().unwrap_or_else(|e| e.into_inner());
                        &mut locked
                    }
                };
                for (&h, &(p, total)) in hashes.iter().zip(window) {
                    self.reclaim_item(&pin, copies, queue, p, h, total, &mut rules, merge.as_deref_mut(), &mut now);
                }
            }
            if rules.left > 0 {
                // Volatile scope, no room to copy an item it may not
                // evict: the segment goes back, holding what is left.
                segs.add_live(segs.base_of(id), -rules.moved_bytes);
                segs.requeue(queue, id, fill);
                stuck = true;
                continue;
            }
            if rules.freed_bytes << VOLATILE_FREED_SHARE_LOG2 >= fill {
                freed_enough = true;
            }
            self.epochs.retire(local, &self.shared, Garbage::Segment(id));
            retired += 1;
        }
        cache.reclaimed_segments.fetch_add(retired, Ordering::Relaxed);
        if retired > 0 && freed_enough {
            if cache.refusing.load(Ordering::Relaxed) {
                cache.refusing.store(false, Ordering::Relaxed);
            }
            Reclaimed::Freed
        } else if stuck {
            Reclaimed::Stuck
        } else {
            Reclaimed::Kept
        }
    }

    /// Debug builds: panics if a slot points at an item of segment `id`
    /// (RECLAIMING, items written up to `fill`), whose live bytes read 0:
    /// the count that lets [`Inner::reclaim_run`] skip its walk is wrong.
    #[cfg(debug_assertions)]
    fn assert_none_linked(&self, id: u32, fill: usize) {
        let Some(segs) = &self.shared.segments else { return };
        let mut items = Vec::new();
        // SAFETY: as in `reclaim_run`: RECLAIMING, ours, not yet retired.
        unsafe { segs.walk(id, fill, |p, _| items.push(p)) };
        for p in items {
            let pin = Pinned::new(self);
            // SAFETY: p is an item of a segment we own (above).
            let h = self.hash(unsafe { item::key(p) });
            let guard = pin.current().lock_routed(h);
            assert!(
                guard.find_ptr(split_hash(h).1, p).is_none(),
                "segment {id}: live bytes 0 but an item of it is linked"
            );
        }
    }

    /// Reclaims one segment (module essay), or merges a sparse run first
    /// as [`Reclaim`] allows. With [`Reclaim::Force`], every live item is
    /// evicted whatever the policy says (the writer's bounded fallback: it
    /// always frees a whole segment). Returns false if no queue had a
    /// sealed segment. The caller must not hold a bucket lock; it may be
    /// pinned (the maintenance thread is not; writers are not).
    pub(crate) fn reclaim_segment(&self, local: &Local, how: Reclaim) -> Reclaimed {
        let (Some(cache), Some(segs)) = (&self.cache, &self.shared.segments) else { return Reclaimed::Nothing };
        let first = cache.policy().victim(segs.queue_bytes());
        let other = if first == Queue::Main { Queue::Small } else { Queue::Main };
        let force = how == Reclaim::Force;
        let merge = match how {
            Reclaim::Background => true,
            // A writer merges only when no maintenance thread does: a merge
            // walks up to MERGE_RUN_SEGMENTS_MAX segments, and a writer's
            // connections wait for whatever it walks (measured: max latency
            // 23-44 ms with writers merging, SET at pipeline 16 on a full
            // cache; docs/bench-log/2026-11-24-resp-vs-redis.md § Writers
            // leave merging to the maintenance thread).
            Reclaim::Writer => !cache.background,
            Reclaim::Force => false,
        };
        if merge && cache.merge {
            let timing = crate::stall::Timing::start(self.watcher());
            if self.merge_sparse_run(local, first) || self.merge_sparse_run(local, other) {
                timing.end(self.watcher(), crate::stall::Stall::SegmentMerge);
                return Reclaimed::Freed;
            }
        }
        let mut copies = cache.reclaimer.lock().unwrap_or_else(|e| e.into_inner());
        let popped = {
            // SAFETY: our own Local; `make_room` and the maintenance loop
            // call us with no item of ours in progress and no other
            // reference to the owned part live (this one ends here).
            let mine = &mut unsafe { local.owned() }.open;
            let mut own = [&mut *copies, mine];
            segs.pop_victim(first, &mut own)
                .map(|v| (v, first))
                .or_else(|| segs.pop_victim(other, &mut own).map(|v| (v, other)))
        };
        let Some((victim, queue)) = popped else { return Reclaimed::Nothing };
        let head_seq = segs.live_and_seq(victim.0).1;
        let freed = self.reclaim_run(local, Copies::Held(&mut copies), queue, &[victim], force, None);
        // Outsized items written before this segment are at the head too.
        self.age_outsized(local, head_seq, &copies);
        freed
    }

    /// Steps 2 and 3 of the essay for the item at `p` of `total` bytes.
    #[allow(clippy::too_many_arguments)]
    fn reclaim_item(
        &self,
        pin: &Pinned<'_>,
        copies: &mut crate::segment::OpenSegments,
        queue: Queue,
        p: *const u8,
        hash: u64,
        total: usize,
        rules: &mut Rules,
        merge: Option<&mut MergeOut>,
        now: &mut Option<u32>,
    ) {
        let (Some(cache), Some(segs)) = (&self.cache, &self.shared.segments) else { return };
        let tag = split_hash(hash).1;
        let aligned = total.next_multiple_of(ITEM_ALIGN_BYTES);
        let mut guard = pin.current().lock_routed(hash);
        let Some(slot) = guard.find_ptr(tag, p) else {
            rules.freed_bytes += aligned;
            return; // dead: overwritten, deleted or never published
        };
        // SAFETY: p is in a slot of the bucket we hold locked.
        let it = unsafe { ItemRef::new(p) };
        // SAFETY: as above.
        let freq = unsafe { item::freq(p) };
        let local = pin.local;
        let unlink_counts = || {
            local_add(&local.items, -1);
            // SAFETY: p is in the bucket we hold locked.
            unsafe { count_item(local, p, -1) };
            // SAFETY: as above.
            unsafe { self.count_class_unlinked(p) };
            local_add(
                &local.bytes,
                -((it.key().len() + it.value().len() + it.object().map_or(0, |c| c.charged())) as i64),
            );
        };
        if !self.is_live(&it, now) {
            guard.remove(slot);
            drop(guard);
            rules.freed_bytes += aligned;
            rules.moved_bytes += aligned as i64;
            // SAFETY: unlinked under our pin: still allocated.
            if self.watching(crate::key_events::EXPIRED) && unsafe { self.dead_by_expiry(p) } {
                self.tell(crate::key_events::KeyEvent::Expired, it.key());
            }
            unlink_counts();
            self.retire_object(local, p);
            self.count_expired_unfetched(it.expiry_raw(), it.expiry_ms_raw(), freq);
            return;
        }
        if let Some(out) = merge {
            // Merging: the item stays in its place in the queue's order,
            // as it is, if the output has room (live bytes are counted
            // approximately; past that, the policy decides as usual).
            let len = total.next_multiple_of(ITEM_ALIGN_BYTES);
            if out.fill + len <= out.cap {
                // SAFETY: fill + len <= cap: inside the output segment,
                // which only this reclaimer writes and nothing references
                // beyond `fill` yet.
                let dst = unsafe { out.base.add(out.fill) };
                out.fill += len;
                // SAFETY: p is a live item of `total` bytes; dst is fresh,
                // unpublished and at least `total` bytes long.
                unsafe { item::copy_with_freq(p, dst, total, freq) };
                guard.replace(slot, tag, dst);
                segs.add_live(dst, len as i64);
                rules.moved_bytes += len as i64;
                return;
            }
        }
        // "Volatile scopes" in the essay: an item without a TTL is no
        // candidate; under volatile-ttl a candidate past the cut is kept.
        let deadline = deadline_ms(it.expiry_raw(), it.expiry_ms_raw());
        let candidate = !rules.scope.volatile() || deadline != 0;
        let verdict = if !candidate || (rules.scope == Scope::VolatileTtl && deadline > rules.ttl_cut_ms) {
            Verdict::Keep { queue: Queue::Main, freq }
        } else {
            match cache.policy().reclaim(queue, freq, hash) {
                Verdict::Keep { .. } if rules.force => Verdict::Evict,
                v => v,
            }
        };
        if let Verdict::Keep { queue: to, freq: f } = verdict {
            debug_assert!(
                to != queue || f < freq || rules.scope.volatile(),
                "Keep without progress breaks the Policy contract"
            );
            if let Some(dst) = segs.bump(copies, to, total, 0) {
                // SAFETY: p is a live item of `total` bytes; dst is fresh,
                // unpublished and `total` bytes long in another segment.
                unsafe { item::copy_with_freq(p, dst, total, f) };
                guard.replace(slot, tag, dst);
                segs.add_live(dst, aligned as i64);
                rules.moved_bytes += aligned as i64;
                return;
            }
            if !candidate {
                // No free segment for the copy, and the scope forbids
                // evicting it: it stays where it is (the segment goes back).
                rules.left += 1;
                return;
            }
            // No free segment for the copy: evict (progress rule).
        }
        guard.remove(slot);
        drop(guard);
        rules.freed_bytes += aligned;
        rules.moved_bytes += aligned as i64;
        if self.watching(crate::key_events::EVICTED) {
            self.tell(crate::key_events::KeyEvent::Evicted, it.key());
        }
        unlink_counts();
        self.retire_object(local, p);
        cache.evictions.fetch_add(1, Ordering::Relaxed);
        if freq == 0 {
            cache.evicted_unfetched.fetch_add(1, Ordering::Relaxed);
        }
    }
}
