//! Per-thread state of one store, and epoch-based reclamation.
//!
//! Each thread that touches a store gets a [`Local`] (through the
//! `thread_local` crate, so two stores in one process do not share them):
//! its epoch mark, its memory pool, its block of CAS values and its
//! counters. Only the owner thread touches the `UnsafeCell` part; other
//! threads read only the atomics (`mark`, `items`, `bytes`).
//!
//! # Reclamation (HOW IT WORKS)
//!
//! Readers take no lock, so an item unlinked by a writer may still be in
//! use by a reader that loaded its pointer just before. Mercury proposes
//! per-thread locks that the expand thread shares with workers; we use the
//! same per-thread words as epoch marks (Fraser's epoch scheme, as in
//! crossbeam-epoch, but per store so a dropped store frees everything):
//!
//! * `pin`: the thread copies the global epoch E into its mark with the
//!   ACTIVE bit and issues the *light* fence of an asymmetric pair
//!   (`barrier.rs`). Every index access happens while pinned; the guard's
//!   lifetime bounds every item reference.
//! * `retire(item)`: after unlinking, the writer puts the item in its bag.
//!   A full bag (by items, or with membarrier also by bytes) is collected,
//!   and so is a bag every so many pins while garbage waits.
//! * collect: read the global epoch G, issue the *heavy* fence, stamp the
//!   bag with the global epoch S read after it (S ≥ G: the bag is sealed),
//!   then try to advance.
//! * advance: the global epoch moves from G to G+1 only when every ACTIVE
//!   mark, read after the heavy fence, equals G.
//! * free: a bag stamped S is freed into the thread's own pool once the
//!   global epoch is at least S + 2.
//!
//! The fences: with Linux's membarrier (`barrier.rs`) the light fence is a
//! compiler fence, free on every operation, and the heavy one a
//! `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` system call, which
//! orders with every thread's light fence as a SeqCst fence would;
//! without it (and under loom) both are SeqCst fences, the pin's an `xchg`
//! on x86-64. `barrier.rs` says why the light side is enough.
//!
//! WHY IT IS CORRECT: a reader that can hold a pointer to an item pinned
//! before the item was unlinked, so its mark is ≤ S (the fences order its
//! pin before the stamp's epoch read). Reaching S + 2 needs an advance from
//! S + 1, which needs every active mark to equal S + 1, so that reader has
//! unpinned. Tables retired by the expand thread go through the same bags.
//! One heavy fence serves both the stamp and the advance: the stamp needs
//! the bag's unlinks before its epoch read, the advance its read of G
//! before the mark reads, and G is read before the fence and S after it.
//! Each costs a system call under membarrier, so bags are bigger there
//! ([`BAG_ITEMS_MAX_ASYMMETRIC`]) and unpin collects less often
//! ([`PINS_PER_COLLECT_ASYMMETRIC`]).
//!
//! LIMITATIONS: garbage waits in the bag of the thread that retired it
//! until that thread runs again; a thread that goes idle forever keeps up
//! to one bag ([`BAG_ITEMS_MAX`], or [`BAG_ITEMS_MAX_ASYMMETRIC`] with
//! membarrier) unreclaimed. `Store::reclaim` drains the calling thread's
//! bags.

use crate::barrier;
use crate::pool::{Block, LocalPool, SharedPool};
use crate::segment::OpenSegments;
// The epoch words and fences come from `sync.rs`: std's in normal builds,
// loom's under `cfg(loom)`, so the loom models explore the real protocol.
use crate::sync::{fence, AtomicU64, Ordering};
use crate::table::Table;
use crossbeam_utils::CachePadded;
#[cfg(loom)]
use loom_locals::ThreadLocal;
use std::cell::UnsafeCell;
use std::collections::VecDeque;
use std::sync::atomic::AtomicI64;
#[cfg(not(loom))]
use thread_local::ThreadLocal;

/// Retired objects per bag before it is sealed (crossbeam-epoch uses 64),
/// with plain fences.
pub(crate) const BAG_ITEMS_MAX: usize = 64;
/// The same with membarrier, whose heavy fence (a system call and an
/// interrupt of every CPU running one of our threads, about 1 µs) comes
/// once per bag: 512 items make it a few ns per overwrite, against the
/// 5–10 ns every pin saves; a bag of 8 B / 8 B items is 12 KiB.
pub(crate) const BAG_ITEMS_MAX_ASYMMETRIC: usize = 512;
/// With membarrier a bag is also sealed once it holds this many bytes, so
/// large items do not wait in bags eight times as large as with plain
/// fences (512 items of 512 KiB would be 256 MiB per thread); a bag of
/// 256 KiB costs one heavy fence per 256 KiB retired, nothing next to
/// copying it. (Plain fences keep their 64 items, whatever their size.)
const BAG_BYTES_MAX_ASYMMETRIC: usize = 256 << 10;
/// A pin collects every this many pins while the thread has garbage, so
/// a thread that retires rarely still frees it (plain fences).
const PINS_PER_COLLECT: u64 = 128;
/// The same with membarrier (each collection is one heavy fence).
const PINS_PER_COLLECT_ASYMMETRIC: u64 = 1024;
const _: () = assert!(PINS_PER_COLLECT.is_power_of_two() && PINS_PER_COLLECT_ASYMMETRIC.is_power_of_two());
/// Sealed bags examined per collection (bounds one collection's work).
const BAGS_PER_COLLECT_MAX: usize = 16;

/// Mark bit: the thread is inside a pinned section.
const ACTIVE: u64 = 1;

/// Something unlinked that a reader may still see.
pub(crate) enum Garbage {
    Item(Block),
    Table(Box<Table>),
    /// A reclaimed cache-mode segment (by id): freed to the segment log.
    Segment(u32),
    /// A finished snapshot's state (writers may still hold its pointer).
    Snapshot(crate::journal::SnapBox),
    /// An object whose item left the index (object.rs); dropping frees it.
    Object(crate::object::RetiredCell),
    /// Cache mode: an outsized item (outsized.rs) that left the index.
    Outsized(Block),
    /// loom models only: what "freeing" means for a model's block (the
    /// model poisons it), run exactly where the collector frees garbage.
    #[cfg(loom)]
    Loom(Box<dyn FnOnce() + Send>),
}

impl Garbage {
    /// Bytes it holds, for the bag's byte bound; a table, segment or
    /// snapshot counts as a full bag with membarrier (large and rare: its
    /// bag is sealed at once).
    fn bytes(&self) -> usize {
        match self {
            Garbage::Item(b) | Garbage::Outsized(b) => b.bytes,
            Garbage::Table(_) | Garbage::Segment(_) | Garbage::Snapshot(_) => BAG_BYTES_MAX_ASYMMETRIC,
            Garbage::Object(o) => o.charged(),
            #[cfg(loom)]
            Garbage::Loom(_) => 0,
        }
    }
}

pub(crate) struct Bag {
    epoch: u64,
    items: Vec<Garbage>,
}

/// The owner-only part of a Local.
pub(crate) struct Owned {
    pub pin_depth: u32,
    pub pins: u64,
    pub bag: Vec<Garbage>,
    /// Bytes in `bag` (saturating; see `Garbage::bytes`).
    pub bag_bytes: usize,
    pub sealed: VecDeque<Bag>,
    pub pool: LocalPool,
    /// Cache mode: this thread's open segment per queue (segment.rs).
    pub open: OpenSegments,
    /// Cache mode: the eviction policy (`Cache::active`) this thread's
    /// last write saw; a write that sees another seals `open` first.
    pub policy_seen: u32,
    /// Next CAS value to hand out and the end of this thread's block.
    pub cas_next: u64,
    pub cas_end: u64,
    /// The flush generation the CAS block was taken under.
    pub cas_generation: u64,
    /// Inserts since the last expansion check.
    pub inserts_since_check: u32,
    /// While [`Store::with_value_bytes_max`](crate::Store::with_value_bytes_max)
    /// runs on this thread: the longest value its writes may store, in
    /// place of `Config::item_size_max_bytes` (None: that limit).
    pub value_bytes_max: Option<usize>,
    /// Cache mode: bytes of an outsized item (outsized.rs) a write of this
    /// thread found no room for; its retry makes room first (0: none).
    pub outsized_wanted: usize,
}

/// One thread's state for one store.
pub(crate) struct Local {
    /// (epoch << 1) | ACTIVE while pinned, 0 otherwise.
    mark: CachePadded<AtomicU64>,
    /// Items this thread added minus items it removed (may go negative);
    /// the store's item count is the sum over threads.
    pub items: AtomicI64,
    /// Bytes of items, same convention.
    pub bytes: AtomicI64,
    /// Bytes of pool blocks this thread allocated minus those it freed.
    pub block_bytes: AtomicI64,
    /// Bytes charged for objects (object.rs) this thread stored, grew or
    /// retired, same convention.
    pub object_bytes: AtomicI64,
    /// Items per key namespace (`namespace.rs`), same convention; only
    /// keys stored with a namespace prefix are counted.
    pub ns_items: [AtomicI64; crate::namespace::NAMESPACES],
    /// Items with a deadline, all namespaces (INFO keyspace's `expires=`).
    pub ttl_items: AtomicI64,
    /// Items with a deadline per namespace, as `ns_items`.
    pub ns_ttl_items: [AtomicI64; crate::namespace::NAMESPACES],
    owned: UnsafeCell<Owned>,
}

// SAFETY: `owned` is touched only by the thread the ThreadLocal gave this
// Local to (see `Local::owned`); everything else is atomic.
unsafe impl Sync for Local {}

impl Local {
    fn new(shared: &SharedPool, bag_items_max: usize) -> Local {
        Local {
            mark: CachePadded::new(AtomicU64::new(0)),
            items: AtomicI64::new(0),
            bytes: AtomicI64::new(0),
            block_bytes: AtomicI64::new(0),
            object_bytes: AtomicI64::new(0),
            ns_items: [const { AtomicI64::new(0) }; crate::namespace::NAMESPACES],
            ttl_items: AtomicI64::new(0),
            ns_ttl_items: [const { AtomicI64::new(0) }; crate::namespace::NAMESPACES],
            owned: UnsafeCell::new(Owned {
                pin_depth: 0,
                pins: 0,
                bag: Vec::with_capacity(bag_items_max),
                bag_bytes: 0,
                sealed: VecDeque::new(),
                pool: LocalPool::new(&shared.classes),
                open: [None, None],
                policy_seen: 0,
                cas_next: 0,
                cas_end: 0,
                cas_generation: 0,
                inserts_since_check: 0,
                value_bytes_max: None,
                outsized_wanted: 0,
            }),
        }
    }

    /// The owner-only state.
    ///
    /// # Safety
    /// Only the thread that got this Local from `Epochs::local` may call
    /// this, and it must not hold two of the returned references at once.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn owned(&self) -> &mut Owned {
        // SAFETY: forwarded from the caller.
        unsafe { &mut *self.owned.get() }
    }

    /// Empties the bags at teardown, handing each retired item block to
    /// `free` (tables are dropped here).
    pub(crate) fn drain_garbage(&mut self, mut free: impl FnMut(Block)) {
        let owned = self.owned.get_mut();
        let bags = owned.sealed.drain(..).flat_map(|b| b.items).chain(owned.bag.drain(..));
        for g in bags {
            match g {
                Garbage::Item(b) => free(b),
                Garbage::Table(t) => drop(t),
                // The segment mapping is unmapped with the store.
                Garbage::Segment(_) => {}
                Garbage::Snapshot(s) => drop(s),
                Garbage::Object(o) => drop(o),
                Garbage::Outsized(b) => {
                    let layout = std::alloc::Layout::from_size_align(b.bytes, 64).expect("layout");
                    // SAFETY: outsized blocks are allocated with exactly
                    // this layout (pool.rs, alloc_outsized); at teardown
                    // nothing references them.
                    unsafe { std::alloc::dealloc(b.ptr, layout) };
                }
                #[cfg(loom)]
                Garbage::Loom(f) => drop(f),
            }
        }
    }
}

/// The epoch state of one store.
pub(crate) struct Epochs {
    global: CachePadded<AtomicU64>,
    locals: ThreadLocal<Local>,
    /// [`BAG_ITEMS_MAX`], or [`BAG_ITEMS_MAX_ASYMMETRIC`] with membarrier.
    bag_items_max: usize,
    /// [`BAG_BYTES_MAX_ASYMMETRIC`] with membarrier, else no bound
    /// (`usize::MAX`, which the saturating sum of real sizes never reaches).
    bag_bytes_max: usize,
    /// [`PINS_PER_COLLECT`] (or `_ASYMMETRIC`) − 1: an unpin collects when
    /// its pin count has none of these bits set.
    collect_pins_mask: u64,
    /// Unique for the life of the process (never reused), so a thread's
    /// cached Local pointer can never be mistaken for another store's.
    id: u64,
}

/// Source of [`Epochs::id`]; 0 is never handed out. Always std's: a
/// process-wide counter, not part of the protocol (and loom's atomics
/// cannot be statics).
static EPOCHS_IDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

#[cfg(not(loom))]
std::thread_local! {
    /// The Local this thread used last, as (Epochs id, pointer). One entry
    /// suffices: a thread almost always works on one store, and the
    /// `thread_local` crate's lookup cost ~30 instructions per GET.
    static LAST_LOCAL: std::cell::Cell<(u64, *const Local)> = const { std::cell::Cell::new((0, std::ptr::null())) };
}

impl Epochs {
    pub(crate) fn new() -> Epochs {
        // Before the first pin of this store: decides the fences for good.
        barrier::init();
        let asymmetric = barrier::asymmetric();
        Epochs {
            global: CachePadded::new(AtomicU64::new(0)),
            locals: ThreadLocal::new(),
            bag_items_max: if asymmetric { BAG_ITEMS_MAX_ASYMMETRIC } else { BAG_ITEMS_MAX },
            bag_bytes_max: if asymmetric { BAG_BYTES_MAX_ASYMMETRIC } else { usize::MAX },
            collect_pins_mask: if asymmetric { PINS_PER_COLLECT_ASYMMETRIC } else { PINS_PER_COLLECT } - 1,
            id: EPOCHS_IDS.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// The calling thread's Local (created on first use).
    #[inline]
    pub(crate) fn local(&self, shared: &SharedPool) -> &Local {
        #[cfg(not(loom))]
        {
            let (id, p) = LAST_LOCAL.with(|c| c.get());
            if id == self.id {
                // SAFETY: this thread cached `p` from `self.locals` (the id
                // is unique to `self`); `self.locals` never drops an entry
                // while `self` lives, and `&self` proves it does.
                return unsafe { &*p };
            }
            self.local_slow(shared)
        }
        #[cfg(loom)]
        self.locals.get_or(self.id, || Local::new(shared, self.bag_items_max))
    }

    /// The first use on this thread, or a switch between stores: out of
    /// line, so the cached path above inlines without a call frame.
    #[cfg(not(loom))]
    #[cold]
    #[inline(never)]
    fn local_slow(&self, shared: &SharedPool) -> &Local {
        let l = self.locals.get_or(|| Local::new(shared, self.bag_items_max));
        LAST_LOCAL.with(|c| c.set((self.id, l as *const Local)));
        l
    }

    /// Every thread's Local, exclusively (teardown).
    pub(crate) fn locals_mut(&mut self) -> impl Iterator<Item = &mut Local> {
        self.locals.iter_mut()
    }

    /// Every thread's Local (read only their atomics).
    pub(crate) fn all(&self) -> impl Iterator<Item = &Local> {
        self.locals.iter()
    }

    /// Marks the calling thread active in the current epoch. Re-entrant.
    #[inline]
    pub(crate) fn pin(&self, local: &Local) {
        // SAFETY: `local` is the calling thread's own Local.
        let owned = unsafe { local.owned() };
        owned.pin_depth += 1;
        if owned.pin_depth > 1 {
            return;
        }
        owned.pins += 1;
        let e = self.global.load(Ordering::Relaxed);
        let mark = (e << 1) | ACTIVE;
        // The mark store must be ordered before every index load of this
        // pinned section (pairs with the heavy fence in `collect` and
        // `reclaim`). With membarrier a compiler fence does it (`barrier.rs`:
        // the heavy side orders the CPU). A relaxed load of a static picks
        // the branch, decided once per process.
        if barrier::asymmetric() {
            local.mark.store(mark, Ordering::Relaxed);
            barrier::light();
        } else {
            publish_mark_fenced(&local.mark, mark);
        }
    }

    /// Leaves the pinned section; every few pins also collects garbage.
    #[inline]
    pub(crate) fn unpin(&self, local: &Local, shared: &SharedPool) {
        // SAFETY: `local` is the calling thread's own Local.
        let owned = unsafe { local.owned() };
        owned.pin_depth -= 1;
        if owned.pin_depth > 0 {
            return;
        }
        // Release: every load of the section happens before the mark is
        // seen inactive by an advancing thread.
        local.mark.store(0, Ordering::Release);
        if owned.pins & self.collect_pins_mask == 0 && (!owned.bag.is_empty() || !owned.sealed.is_empty()) {
            self.collect(local, owned, shared);
        }
    }

    /// Defers freeing `g` until no pinned reader can hold it. The caller has
    /// already unlinked it.
    pub(crate) fn retire(&self, local: &Local, shared: &SharedPool, g: Garbage) {
        // SAFETY: `local` is the calling thread's own Local.
        let owned = unsafe { local.owned() };
        owned.bag_bytes = owned.bag_bytes.saturating_add(g.bytes());
        owned.bag.push(g);
        if owned.bag.len() >= self.bag_items_max || owned.bag_bytes >= self.bag_bytes_max {
            self.collect(local, owned, shared);
        }
    }

    /// Seals the bag (if any) and tries to move the global epoch forward by
    /// one, under one heavy fence; returns the global epoch. Bounded by the
    /// number of threads that ever touched the store.
    fn seal_and_advance(&self, owned: &mut Owned) -> u64 {
        // Read before the fence, as crossbeam-epoch's `try_advance` does:
        // then any stamp read after a later heavy fence is ≥ g (module
        // essay, and `barrier.rs` for the membarrier case).
        let g = self.global.load(Ordering::Relaxed);
        // Orders the bag's unlinks before the stamp's epoch read, and the
        // read of g before the mark reads (module essay).
        barrier::heavy();
        if !owned.bag.is_empty() {
            let epoch = self.global.load(Ordering::Relaxed);
            let items = std::mem::replace(&mut owned.bag, Vec::with_capacity(self.bag_items_max));
            owned.bag_bytes = 0;
            owned.sealed.push_back(Bag { epoch, items });
        }
        for l in self.locals.iter() {
            let m = l.mark.load(Ordering::Relaxed);
            if m & ACTIVE != 0 && m >> 1 != g {
                return g;
            }
        }
        // Pairs with the Release store in `unpin`: the sections the scan
        // saw end happen before anything freed below.
        fence(Ordering::Acquire);
        match self.global.compare_exchange(g, g + 1, Ordering::Release, Ordering::Relaxed) {
            Ok(_) => g + 1,
            Err(now) => now,
        }
    }

    /// Seals the calling thread's bag, advances the epoch if it can, and
    /// frees the thread's bags that no reader can still see. Bounded by
    /// BAGS_PER_COLLECT_MAX bags.
    fn collect(&self, local: &Local, owned: &mut Owned, shared: &SharedPool) {
        let g = self.seal_and_advance(owned);
        for _ in 0..BAGS_PER_COLLECT_MAX {
            match owned.sealed.front() {
                Some(bag) if bag.epoch + 2 <= g => {}
                _ => break,
            }
            let bag = owned.sealed.pop_front().expect("front exists");
            for garbage in bag.items {
                match garbage {
                    // SAFETY: the bag's epoch is two behind the global
                    // epoch, so no reader holds the item (module essay).
                    Garbage::Item(block) => unsafe { owned.pool.free(shared, block) },
                    Garbage::Table(t) => drop(t),
                    Garbage::Segment(id) => shared.segments.as_ref().expect("segments exist in cache mode").release(id),
                    Garbage::Snapshot(s) => drop(s),
                    Garbage::Object(o) => drop(o),
                    // SAFETY: as for Item: its grace period is over.
                    Garbage::Outsized(block) => unsafe { owned.pool.free_outsized(shared, block) },
                    #[cfg(loom)]
                    Garbage::Loom(free) => free(),
                }
            }
        }
        local.block_bytes.store(owned.pool.live_bytes as i64, Ordering::Relaxed);
    }

    /// Seals and frees everything the calling thread retired, advancing the
    /// epoch as far as other threads allow. Returns true when nothing of
    /// this thread's is left unreclaimed. Bounded: `rounds` advances.
    pub(crate) fn reclaim(&self, local: &Local, shared: &SharedPool, rounds: usize) -> bool {
        // SAFETY: `local` is the calling thread's own Local.
        let owned = unsafe { local.owned() };
        assert_eq!(owned.pin_depth, 0, "reclaim while pinned could never free");
        if owned.bag.is_empty() && owned.sealed.is_empty() {
            // Nothing to free: no heavy fence (the maintenance thread asks
            // at every wake).
            return true;
        }
        for _ in 0..rounds {
            // The first round seals the bag.
            self.collect(local, owned, shared);
            if owned.sealed.is_empty() {
                return true;
            }
        }
        owned.sealed.is_empty() && owned.bag.is_empty()
    }
}

/// The pin's mark store with plain fences (no membarrier, and under loom).
/// Out of line so the common path is the fall-through: the call costs the
/// fallback a few cycles next to its full barrier.
#[cold]
#[inline(never)]
fn publish_mark_fenced(word: &AtomicU64, mark: u64) {
    // On x86-64 a SeqCst swap (one `xchg`, a full barrier) is cheaper than
    // store + `mfence`; crossbeam-epoch makes the same choice. Not under
    // loom: loom checks the language's memory model, where a SeqCst RMW is
    // no fence for the loads after it (that `xchg` is one is a hardware
    // fact; crossbeam-epoch also takes the fence path under Miri), and loom
    // models SeqCst accesses as AcqRel, so it would flag the swap.
    #[cfg(all(target_arch = "x86_64", not(loom)))]
    word.swap(mark, Ordering::SeqCst);
    #[cfg(any(not(target_arch = "x86_64"), loom))]
    {
        word.store(mark, Ordering::Relaxed);
        fence(Ordering::SeqCst);
    }
}

/// The registry of Locals under loom. The `thread_local` crate keys its
/// entries by OS thread, and loom runs every model thread as a coroutine
/// on one OS thread, so under loom all threads would share one Local (and
/// its entry's `present` flag, a std atomic, would be invisible to loom).
/// This stand-in gives each loom thread its own Local and publishes it
/// the way the crate does (a release store that `iter`'s acquire load
/// pairs with), with loom's atomics, so the model explores a thread's
/// first pin racing an advance. Normal builds never compile it.
#[cfg(loom)]
mod loom_locals {
    use super::Local;
    use crate::sync::{AtomicPtr, AtomicUsize, Ordering};
    use std::cell::RefCell;

    /// Threads one model may register (loom allows 5 per model; the
    /// models use 2); `get_or` panics beyond it.
    const ENTRIES: usize = 4;

    loom::thread_local! {
        /// This loom thread's Locals, by `Epochs::id` (only the owner
        /// reads it, so it carries nothing between threads).
        static MINE: RefCell<Vec<(u64, *const Local)>> = RefCell::new(Vec::new());
    }

    pub(crate) struct ThreadLocal<T> {
        entries: [AtomicPtr<T>; ENTRIES],
        next: AtomicUsize,
    }

    impl ThreadLocal<Local> {
        pub(crate) fn new() -> Self {
            ThreadLocal {
                entries: std::array::from_fn(|_| AtomicPtr::new(std::ptr::null_mut())),
                next: AtomicUsize::new(0),
            }
        }

        pub(crate) fn get_or(&self, id: u64, create: impl FnOnce() -> Local) -> &Local {
            if let Some(p) = MINE.with(|m| m.borrow().iter().find(|e| e.0 == id).map(|e| e.1)) {
                // SAFETY: published below by this thread; entries live as
                // long as `self`.
                return unsafe { &*p };
            }
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            assert!(i < ENTRIES, "more threads than the loom registry holds");
            let p = Box::into_raw(Box::new(create()));
            self.entries[i].store(p, Ordering::Release);
            MINE.with(|m| m.borrow_mut().push((id, p)));
            // SAFETY: as above.
            unsafe { &*p }
        }

        pub(crate) fn iter(&self) -> impl Iterator<Item = &Local> {
            // SAFETY: a non-null entry is a published, never freed Box.
            self.entries.iter().filter_map(|e| unsafe { e.load(Ordering::Acquire).as_ref() })
        }

        pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = &mut Local> {
            // SAFETY: as above; `&mut self` excludes every other user.
            self.entries.iter_mut().filter_map(|e| unsafe { e.with_mut(|p| (*p).as_mut()) })
        }
    }

    impl<T> Drop for ThreadLocal<T> {
        fn drop(&mut self) {
            for e in &mut self.entries {
                let p = e.with_mut(|p| *p);
                if !p.is_null() {
                    // SAFETY: made by Box::into_raw in `get_or`, dropped once.
                    drop(unsafe { Box::from_raw(p) });
                }
            }
        }
    }
}
