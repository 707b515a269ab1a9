//! The index: Mercury's chained hash table (Mercury §3) read the way MemC3
//! reads (MemC3 §3.2: tags, optimistic version-checked lookups).
//!
//! # Layout
//!
//! Every bucket is one 64-byte, 64-byte-aligned cache line. Fetching the
//! bucket fetches its lock, its `hasmoved` bit, its version and seven tagged
//! item pointers at once (Mercury §3 "Locks": the lock is co-located with
//! the entry so taking it costs no extra miss):
//!
//! ```text
//!  0        4        8                                                64
//!  +--------+--------+--------+--------+-- ... --+--------+
//!  | lock   | next   | slot 0 | slot 1 |         | slot 6 |
//!  +--------+--------+--------+--------+-- ... --+--------+
//!  lock (u32): bit 31 LOCKED   a writer (or the expand thread) owns the bucket
//!              bit 30 MOVED    Mercury's `hasmoved`: the chain now lives in the successor table
//!              bit 29 HELD     a transaction holds it (with LOCKED): readers wait too (`txn.rs`)
//!              bits 0-28       version, +1 on every unlock
//!  next (u32): index of the first overflow node in this table's arena, 0 = none
//!  slot (u64): bits 48-63 tag (16 low bits of the key's hash), bits 0-47 item pointer; 0 = empty
//! ```
//!
//! Overflow nodes are the same 64-byte struct (their lock word unused), so a
//! chain is a list of cache lines of seven slots each. A node that a
//! removal leaves empty at the chain's tail is unlinked and kept on its
//! arena's free list for the next chain that grows, so a chain's memory
//! follows its current length, not the longest it ever had (under churn
//! every bucket's load sometimes peaks past seven, and without reuse the
//! arena would grow to a node per bucket). A reader still walking a
//! reused node is safe: nodes live as long as their table, a hit needs the
//! key itself (and a reused node holds only its new chain's keys, or the
//! key's own current item), and a miss is believed only if the bucket's
//! version did not move, which the unlink (under the bucket lock) moves.
//!
//! The key's hash picks the bucket with bits 16.. and the tag with bits
//! 0..16, so the two are independent and the tag survives a doubling
//! unchanged.
//!
//! # Reads (no lock, no shared write)
//!
//! A reader loads the lock word, scans the chain comparing tags and
//! dereferencing only items whose tag matches, then (after an acquire fence)
//! loads the lock word again. Items are immutable and a slot changes only by
//! one atomic store, and writers never move an entry between slots, so a
//! pointer found by the scan was the key's current item at the moment it was
//! loaded: a hit needs no version check. A miss is believed only if the
//! version did not change and no writer held the lock meanwhile (MemC3
//! §3.2.1); otherwise the reader retries. Either way a MOVED bit seen at the
//! start or the end sends the reader to the successor table.
//!
//! # Writes
//!
//! A writer spins on its bucket's LOCKED bit (the only lock on the write
//! path; writers on different buckets never contend, Mercury §3), checks
//! MOVED (Mercury's race: the expand thread may have migrated the bucket
//! while the writer waited), and changes slots with release stores. Unlock
//! bumps the version. A critical section is bounded by one chain.
//!
//! # Expansion (Mercury §3 "Hash table expansion")
//!
//! See [`Table::migrate_bucket`] and `store/maintenance.rs`'s expand thread: the
//! successor table (twice the buckets) is published through
//! `Table::successor` (entering the expanding state); the expand thread then
//! locks one old bucket at a time, copies its entries into the successor
//! (old bucket `i` splits into new buckets `i` and `i + N`, which no one else
//! touches until `i` is marked MOVED), and unlocks it with MOVED set. Workers
//! route by `Table::migrated` (Mercury's progress counter `r`, published
//! every [`PROGRESS_STRIDE_BUCKETS`] buckets) and by the MOVED bit, so no
//! request waits for more than one bucket's rehash. Leaving the expanding
//! state is one store to the store's `current` pointer; the old table is
//! freed through the epoch scheme once no reader can hold it.

use crate::item;
use crate::sync::{fence, spin_hint, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// Tagged item slots in one bucket line (64 - 8 bytes of lock and link).
pub(crate) const SLOTS_PER_BUCKET: usize = 7;

/// Writer owns the bucket.
pub(crate) const LOCKED: u32 = 1 << 31;
/// Mercury's `hasmoved`: the bucket's entries live in the successor table.
pub(crate) const MOVED: u32 = 1 << 30;
/// A transaction holds the bucket (always with LOCKED): its keys may be
/// half-way through a multi-key change, so readers wait for it as well
/// (`txn.rs`). Writers see LOCKED and wait as for any writer.
pub(crate) const HELD: u32 = 1 << 29;
/// Version counter bits; wrapping after 2^29 unlocks is harmless because a
/// reader's scan is shorter than 2^29 writer critical sections.
pub(crate) const VERSION_MASK: u32 = HELD - 1;

const TAG_SHIFT: u32 = 48;
const PTR_MASK: u64 = (1 << TAG_SHIFT) - 1;

/// Bits of the hash below this go to the tag, bits from it up pick the bucket.
pub(crate) const INDEX_SHIFT: u32 = 16;
/// Largest table: bucket index bits available above the tag.
pub(crate) const TABLE_LOG2_MAX: u32 = 64 - INDEX_SHIFT - 8;

/// Overflow nodes a chain may have. The hash is seeded per store and the
/// table doubles when the mean load passes `LOAD_PER_BUCKET_MAX`, so real
/// chains have zero or one node; the bound only caps loops.
pub(crate) const CHAIN_NODES_MAX: usize = 1024;

/// Buckets the expand thread migrates between two publications of its
/// progress counter: often enough that workers route straight to the
/// successor for almost all migrated buckets, rarely enough that the
/// counter's cache line does not bounce on every bucket.
pub(crate) const PROGRESS_STRIDE_BUCKETS: usize = 64;

/// Times a reader retries a miss that raced with a writer before it gives
/// up on optimism and takes the bucket lock (a hot bucket under a write
/// storm must not starve readers).
pub(crate) const OPTIMISTIC_RETRIES_MAX: usize = 64;

/// Overflow arena: nodes in segment 0; each later segment doubles.
const ARENA_SEGMENT0_LOG2: u32 = 6;
const ARENA_SEGMENTS: usize = 32 - ARENA_SEGMENT0_LOG2 as usize;

/// One cache line of the index. See the module documentation for the layout.
#[repr(C, align(64))]
pub(crate) struct Bucket {
    lock: AtomicU32,
    next: AtomicU32,
    slots: [AtomicU64; SLOTS_PER_BUCKET],
}

impl Bucket {
    #[cfg(loom)]
    fn new() -> Bucket {
        Bucket { lock: AtomicU32::new(0), next: AtomicU32::new(0), slots: std::array::from_fn(|_| AtomicU64::new(0)) }
    }
}

/// Splits a hash into (bucket bits, tag).
#[inline]
pub fn split_hash(hash: u64) -> (u64, u16) {
    // Tag 0 is never used, so an empty slot (word 0) never matches a tag
    // and the readers' scan needs no emptiness test.
    (hash >> INDEX_SHIFT, (hash as u16).max(1))
}

#[inline]
fn slot_word(tag: u16, ptr: *const u8) -> u64 {
    debug_assert!(!ptr.is_null() && (ptr as u64) & !PTR_MASK == 0);
    ((tag as u64) << TAG_SHIFT) | ptr as u64
}

#[inline]
fn slot_tag(word: u64) -> u16 {
    (word >> TAG_SHIFT) as u16
}

#[inline]
fn slot_ptr(word: u64) -> *const u8 {
    (word & PTR_MASK) as *const u8
}

/// The bucket array, zero-filled: all-zero bytes are an empty bucket.
struct BucketArray {
    ptr: *mut Bucket,
    len: usize,
}

// SAFETY: a BucketArray is only an owned allocation of atomics.
unsafe impl Send for BucketArray {}
// SAFETY: all shared access goes through the atomics inside Bucket.
unsafe impl Sync for BucketArray {}

impl BucketArray {
    #[cfg(not(loom))]
    fn new(len: usize) -> Option<BucketArray> {
        let bytes = len.checked_mul(std::mem::size_of::<Bucket>())?;
        let ptr = crate::pool::map_zeroed(bytes)?;
        Some(BucketArray { ptr: ptr as *mut Bucket, len })
    }

    #[cfg(loom)]
    fn new(len: usize) -> Option<BucketArray> {
        let v: Box<[Bucket]> = (0..len).map(|_| Bucket::new()).collect();
        Some(BucketArray { ptr: Box::into_raw(v) as *mut Bucket, len })
    }

    #[inline]
    fn get(&self, i: usize) -> &Bucket {
        assert!(i < self.len);
        // SAFETY: i < len, and the array lives as long as &self.
        unsafe { &*self.ptr.add(i) }
    }

    /// The bucket at `hash_bits & (len - 1)`: any bits name a bucket (len
    /// is a power of two), so no bounds check is needed.
    #[inline(always)]
    fn get_masked(&self, hash_bits: usize) -> &Bucket {
        debug_assert!(self.len.is_power_of_two());
        // SAFETY: the mask keeps the index below len, and the array lives
        // as long as &self.
        unsafe { &*self.ptr.add(hash_bits & (self.len - 1)) }
    }
}

impl Drop for BucketArray {
    fn drop(&mut self) {
        #[cfg(not(loom))]
        // SAFETY: ptr and len are the mapping made in `new`; Bucket has no
        // destructor to run.
        unsafe {
            crate::pool::unmap(self.ptr as *mut u8, self.len * std::mem::size_of::<Bucket>());
        }
        #[cfg(loom)]
        // SAFETY: ptr is the Box<[Bucket]> leaked in `new`.
        unsafe {
            drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(self.ptr, self.len)));
        }
    }
}

/// Overflow nodes, addressed by a u32 index so the link fits in the bucket
/// line. Segments never move and nodes are never freed while the table
/// lives, so a reader may follow a stale link safely: at worst it scans a
/// node the writer has since re-linked, and the version check catches it.
struct OverflowArena {
    segments: [AtomicPtr<Bucket>; ARENA_SEGMENTS],
    /// Next unused index; index 0 means "no node". On a line of its own:
    /// the expand thread bumps it for every overflow node it fills, and
    /// readers of the successor read the Table's other fields on every GET
    /// (sharing a line cost readers 63% of their throughput during a
    /// doubling; docs/bench-log/2026-11-24-engine-embedded.md § GET
    /// throughput while the table doubles).
    next_free: crossbeam_utils::CachePadded<AtomicU32>,
    grow: std::sync::Mutex<()>,
    /// Nodes unlinked from a chain's tail, empty, for reuse. Pushed by a
    /// bucket-lock holder after its unlink (so its LOCKED store happens
    /// before any reuse a reader could see); popped by the next `alloc`.
    reusable: std::sync::Mutex<Vec<u32>>,
}

impl OverflowArena {
    fn new() -> OverflowArena {
        OverflowArena {
            segments: std::array::from_fn(|_| AtomicPtr::new(std::ptr::null_mut())),
            next_free: crossbeam_utils::CachePadded::new(AtomicU32::new(1)),
            grow: std::sync::Mutex::new(()),
            reusable: std::sync::Mutex::new(Vec::new()),
        }
    }

    fn locate(index: u32) -> (usize, usize) {
        let j = index as usize - 1 + (1 << ARENA_SEGMENT0_LOG2);
        let top = usize::BITS - 1 - j.leading_zeros();
        let seg = (top - ARENA_SEGMENT0_LOG2) as usize;
        (seg, j - (1 << top))
    }

    fn segment_len(seg: usize) -> usize {
        1 << (ARENA_SEGMENT0_LOG2 as usize + seg)
    }

    /// The node at `index` (non-zero, previously returned by `alloc`).
    fn node(&self, index: u32) -> &Bucket {
        let (seg, off) = Self::locate(index);
        let base = self.segments[seg].load(Ordering::Acquire);
        assert!(!base.is_null(), "overflow link to an unallocated segment");
        // SAFETY: the segment holds segment_len(seg) > off buckets and lives
        // as long as the arena.
        unsafe { &*base.add(off) }
    }

    /// An empty node (a reused one first); None when the u32 index space
    /// is exhausted.
    fn alloc(&self) -> Option<u32> {
        if let Some(index) = self.reusable.lock().unwrap_or_else(|e| e.into_inner()).pop() {
            return Some(index);
        }
        let index = self.next_free.fetch_add(1, Ordering::Relaxed);
        if index == 0 || index == u32::MAX {
            return None;
        }
        let (seg, _) = Self::locate(index);
        if seg >= ARENA_SEGMENTS {
            return None;
        }
        if self.segments[seg].load(Ordering::Acquire).is_null() {
            let _g = self.grow.lock().unwrap_or_else(|e| e.into_inner());
            if self.segments[seg].load(Ordering::Acquire).is_null() {
                let fresh = alloc_nodes(Self::segment_len(seg))?;
                self.segments[seg].store(fresh, Ordering::Release);
            }
        }
        Some(index)
    }

    fn nodes_allocated(&self) -> usize {
        self.next_free.load(Ordering::Relaxed) as usize - 1
    }

    /// Takes back an empty node its chain no longer links to.
    fn recycle(&self, index: u32) {
        self.reusable.lock().unwrap_or_else(|e| e.into_inner()).push(index);
    }

    /// Nodes linked into chains now.
    fn nodes_in_use(&self) -> usize {
        self.nodes_allocated().saturating_sub(self.reusable.lock().unwrap_or_else(|e| e.into_inner()).len())
    }

    /// Bytes of the arena that may be resident: every node handed out,
    /// to the end of its 4 KiB page (nodes are handed out in index order,
    /// and segments are mapped on small pages, `alloc_nodes`).
    fn resident_bytes(&self) -> usize {
        let nodes = self.nodes_allocated().min(u32::MAX as usize - 1);
        if nodes == 0 {
            return 0;
        }
        let (seg, off) = Self::locate(nodes as u32);
        let node = std::mem::size_of::<Bucket>();
        let full: usize = (0..seg).map(|s| Self::segment_len(s) * node).sum();
        full + ((off + 1) * node).next_multiple_of(4096)
    }
}

impl Drop for OverflowArena {
    fn drop(&mut self) {
        for (seg, p) in self.segments.iter().enumerate() {
            let p = p.load(Ordering::Relaxed);
            if !p.is_null() {
                // SAFETY: p holds segment_len(seg) nodes from alloc_nodes, and
                // the arena (so every reference into it) is going away.
                unsafe { free_nodes(p, Self::segment_len(seg)) };
            }
        }
    }
}

/// Zeroed nodes for an overflow segment: mapped, not taken from the heap,
/// so freed segments go back to the kernel (glibc would keep them), and on
/// small pages, so a node handed out makes 4 KiB resident, not 2 MiB.
#[cfg(not(loom))]
fn alloc_nodes(n: usize) -> Option<*mut Bucket> {
    crate::pool::map_zeroed_small_pages(n * std::mem::size_of::<Bucket>()).map(|p| p as *mut Bucket)
}

#[cfg(loom)]
fn alloc_nodes(n: usize) -> Option<*mut Bucket> {
    let v: Box<[Bucket]> = (0..n).map(|_| Bucket::new()).collect();
    Some(Box::into_raw(v) as *mut Bucket)
}

/// # Safety
/// `p` and `n` are one `alloc_nodes` result, no longer referenced.
#[cfg(not(loom))]
unsafe fn free_nodes(p: *mut Bucket, n: usize) {
    // SAFETY: forwarded from the caller.
    unsafe { crate::pool::unmap(p as *mut u8, n * std::mem::size_of::<Bucket>()) };
}

/// # Safety
/// `p` and `n` are one `alloc_nodes` result, no longer referenced.
#[cfg(loom)]
unsafe fn free_nodes(p: *mut Bucket, n: usize) {
    // SAFETY: forwarded from the caller: p is a leaked Box<[Bucket]> of n.
    unsafe { drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(p, n))) };
}

/// One generation of the index: 2^log2 buckets plus overflow nodes.
pub struct Table {
    buckets: BucketArray,
    log2: u32,
    overflow: OverflowArena,
    /// Null when not expanding; else the table with twice the buckets that
    /// this one is being migrated into. Set once, before any bucket is
    /// MOVED; never cleared (a late reader still follows it).
    successor: AtomicPtr<Table>,
    /// Mercury's progress counter: buckets below this index are migrated.
    /// On a line of its own, like the arena's `next_free`: the expand thread
    /// writes it every PROGRESS_STRIDE_BUCKETS while every GET reads the
    /// Table's other fields.
    migrated: crossbeam_utils::CachePadded<AtomicUsize>,
}

/// What one optimistic search of one chain found.
#[derive(Debug, PartialEq, Eq)]
pub enum Probe {
    Hit(*const u8),
    Miss,
    /// The bucket moved to the successor table; look there.
    Moved,
    /// A writer raced with a miss; look again.
    Retry,
}

impl Table {
    /// A table of 2^log2 empty buckets, or None if the memory map failed.
    pub fn new(log2: u32) -> Option<Table> {
        assert!(log2 <= TABLE_LOG2_MAX);
        Some(Table {
            buckets: BucketArray::new(1usize << log2)?,
            log2,
            overflow: OverflowArena::new(),
            successor: AtomicPtr::new(std::ptr::null_mut()),
            migrated: crossbeam_utils::CachePadded::new(AtomicUsize::new(0)),
        })
    }

    pub fn log2(&self) -> u32 {
        self.log2
    }

    pub fn bucket_count(&self) -> usize {
        1 << self.log2
    }

    /// Overflow nodes handed out so far (linked into chains, or empty and
    /// kept for reuse): the arena's size.
    pub fn overflow_nodes(&self) -> usize {
        self.overflow.nodes_allocated()
    }

    /// Overflow nodes linked into chains now.
    pub fn overflow_nodes_in_use(&self) -> usize {
        self.overflow.nodes_in_use()
    }

    /// Bytes of this table that may be resident: the bucket array and the
    /// overflow nodes handed out (cache mode charges them to its budget).
    pub fn resident_bytes(&self) -> usize {
        self.bucket_count() * std::mem::size_of::<Bucket>() + self.overflow.resident_bytes()
    }

    /// Bytes the bucket array of a table of 2^log2 buckets takes.
    pub fn bucket_bytes(log2: u32) -> usize {
        (1usize << log2) * std::mem::size_of::<Bucket>()
    }

    #[inline]
    pub fn index(&self, hash: u64) -> usize {
        (split_hash(hash).0 as usize) & (self.bucket_count() - 1)
    }

    #[inline]
    pub(crate) fn bucket(&self, i: usize) -> &Bucket {
        self.buckets.get(i)
    }

    /// The successor table, or None when this table is not being expanded.
    #[inline]
    pub fn successor(&self) -> Option<&Table> {
        let p = self.successor.load(Ordering::Acquire);
        if p.is_null() {
            return None;
        }
        // SAFETY: a successor is published (release) fully built and is freed
        // only after this table is (it becomes `current` first, and the
        // epoch scheme frees tables in retirement order).
        Some(unsafe { &*p })
    }

    /// Publishes the successor: enters the expanding state.
    pub fn set_successor(&self, next: *mut Table) {
        assert!(self.successor.load(Ordering::Relaxed).is_null());
        self.successor.store(next, Ordering::Release);
    }

    /// Routes a hash to the table that owns its bucket now, by Mercury's
    /// progress counter. The caller still checks MOVED in the bucket itself.
    /// Bounded: one step per table generation (at most TABLE_LOG2_MAX).
    #[inline]
    pub fn route(&self, hash: u64) -> &Table {
        let mut t = self;
        for _ in 0..=TABLE_LOG2_MAX {
            match t.successor() {
                Some(next) if t.index(hash) < t.migrated.load(Ordering::Acquire) => t = next,
                _ => break,
            }
        }
        t
    }

    /// Prefetches the bucket line for `hash` (MICA §5.3's first stage).
    #[inline]
    pub fn prefetch(&self, hash: u64) {
        prefetch_line(self.bucket(self.index(hash)) as *const Bucket as *const u8);
    }

    /// The first item pointer in the hash's bucket line whose tag matches,
    /// without validation: only a hint for MICA's second prefetch stage.
    #[inline]
    pub fn peek_candidate(&self, hash: u64) -> Option<*const u8> {
        let tag = split_hash(hash).1;
        let b = self.bucket(self.index(hash));
        b.slots.iter().find_map(|s| {
            let w = s.load(Ordering::Relaxed);
            (w != 0 && slot_tag(w) == tag).then(|| slot_ptr(w))
        })
    }

    fn scan(&self, b: &Bucket, tag: u16, key: &[u8]) -> Result<Option<*const u8>, ()> {
        let mut node = b;
        for _ in 0..=CHAIN_NODES_MAX {
            for s in &node.slots {
                // Acquire pairs with the writer's release store of the slot,
                // so the item's bytes are visible before we read them.
                let w = s.load(Ordering::Acquire);
                if w != 0 && slot_tag(w) == tag {
                    let p = slot_ptr(w);
                    // SAFETY: a pointer in a slot names a published item; the
                    // caller's epoch guard keeps it from being freed even if a
                    // writer unlinks it right now.
                    if unsafe { item::key_eq(p, key) } {
                        return Ok(Some(p));
                    }
                }
            }
            match node.next.load(Ordering::Acquire) {
                0 => return Ok(None),
                n => node = self.overflow.node(n),
            }
        }
        Err(())
    }

    /// The common lookup in one step, or None when it needs [`probe`]'s
    /// general path: the key's bucket is in this table or (while it
    /// expands) in its successor, not MOVED, and its chain is the bucket's
    /// own line (no overflow node). A hit found here is
    /// returned without the version check, as in `probe` (a pointer read
    /// from a slot was the key's current item when it was read); a miss is
    /// believed only if the version did not move.
    ///
    /// Why a separate path: a GET's time is its two dependent cache misses
    /// (bucket, then item), and the CPU overlaps one GET's misses with the
    /// next GET's only if the instructions between them fit its reorder
    /// window (about 150 on this machine's Zen 3:
    /// docs/bench-log/2026-11-25-engine.md § "Why a GET is short"). The general loop (routing by progress,
    /// retries, chains) is kept out of this path's instruction stream.
    ///
    /// [`probe`]: Table::probe
    #[inline(always)]
    pub fn probe_quiet(&self, hash: u64, tag: u16, key: &[u8]) -> Option<Probe> {
        let next = self.successor.load(Ordering::Acquire);
        if next.is_null() {
            return self.probe_line(hash, tag, key);
        }
        // Expanding: one step of `route` (a GET during a doubling must not
        // lose the short path either: docs/bench-log/2026-11-24-engine-embedded.md
        // § GET throughput while the table doubles). Deeper routing is the general path's.
        let mut t = self;
        if self.index(hash) < self.migrated.load(Ordering::Acquire) {
            // SAFETY: as in `successor`.
            t = unsafe { &*next };
            if !t.successor.load(Ordering::Acquire).is_null() {
                return None;
            }
        }
        t.probe_line(hash, tag, key)
    }

    /// [`Table::probe_quiet`]'s search of one bucket line of this table.
    #[inline(always)]
    fn probe_line(&self, hash: u64, tag: u16, key: &[u8]) -> Option<Probe> {
        let b = self.buckets.get_masked(split_hash(hash).0 as usize);
        let before = b.lock.load(Ordering::Acquire);
        // A moved bucket, or one a transaction holds: the general path
        // (one test of the word the seqlock check loads anyway).
        if before & (MOVED | HELD) != 0 {
            return None;
        }
        debug_assert_ne!(tag, 0, "split_hash never makes tag 0");
        for s in &b.slots {
            // Acquire: as in `scan`. An empty slot's tag, 0, matches none.
            let w = s.load(Ordering::Acquire);
            if slot_tag(w) == tag {
                let p = slot_ptr(w);
                // SAFETY: as in `scan`: the caller is pinned.
                if unsafe { item::key_eq(p, key) } {
                    return Some(Probe::Hit(p));
                }
            }
        }
        if b.next.load(Ordering::Acquire) != 0 {
            return None;
        }
        // The seqlock reader's check, as in `probe`.
        fence(Ordering::Acquire);
        let after = b.lock.load(Ordering::Acquire);
        (before == after && before & LOCKED == 0).then_some(Probe::Miss)
    }

    /// One optimistic lookup of `key` in bucket `i` (MemC3 §3.2.1).
    ///
    /// The caller must hold an epoch guard for as long as it uses a returned
    /// pointer.
    pub fn probe(&self, i: usize, tag: u16, key: &[u8]) -> Probe {
        let b = self.bucket(i);
        let before = b.lock.load(Ordering::Acquire);
        if before & MOVED != 0 {
            return Probe::Moved;
        }
        if before & HELD != 0 {
            // A transaction holds the bucket. Its own thread reads what it
            // has written (nothing else can change the chain meanwhile);
            // anyone else waits for the transaction to end, so no reader
            // sees some of its keys changed and others not (`txn.rs`).
            if crate::txn::holds(b) {
                return match self.scan(b, tag, key) {
                    Ok(Some(p)) => Probe::Hit(p),
                    Ok(None) => Probe::Miss,
                    Err(()) => Probe::Retry,
                };
            }
            return Probe::Retry;
        }
        let found = self.scan(b, tag, key);
        // Orders the slot loads above before the lock-word load below
        // (the seqlock reader's fence; pairs with the fence in `lock`).
        fence(Ordering::Acquire);
        // Acquire as well: if this sees MOVED, the caller next reads the
        // successor's buckets, which must show the migrated entries (pairs
        // with the release unlock in `migrate_bucket`).
        let after = b.lock.load(Ordering::Acquire);
        if after & MOVED != 0 {
            return Probe::Moved;
        }
        match found {
            Ok(Some(p)) => Probe::Hit(p),
            Ok(None) if before == after && before & LOCKED == 0 => Probe::Miss,
            _ => Probe::Retry,
        }
    }

    /// Takes bucket `i`'s lock, or returns None if the bucket has MOVED
    /// (then the caller retries in the successor). Spins while another
    /// writer holds it; that writer's critical section is bounded by one
    /// chain, so the wait is too.
    pub fn lock(&self, i: usize) -> Option<BucketGuard<'_>> {
        self.acquire(i, LOCKED)
    }

    /// The spin of [`Table::lock`] and [`Table::lock_held`]: sets `bits`
    /// (LOCKED, and HELD for a transaction) once the bucket is free.
    fn acquire(&self, i: usize, bits: u32) -> Option<BucketGuard<'_>> {
        let b = self.bucket(i);
        let backoff = crossbeam_utils::Backoff::new();
        loop {
            // Acquire: seeing MOVED must make the migrated entries in the
            // successor visible to the retry there (loom found this edge).
            let w = b.lock.load(Ordering::Acquire);
            if w & MOVED != 0 {
                return None;
            }
            if w & LOCKED == 0
                && b.lock.compare_exchange_weak(w, w | bits, Ordering::Acquire, Ordering::Relaxed).is_ok()
            {
                // Orders the LOCKED store before our slot stores, so a
                // reader that sees any of them sees the lock word change
                // (pairs with the reader's acquire fence in `probe`).
                fence(Ordering::Release);
                return Some(BucketGuard { table: self, bucket: b, word: w, moved: false, borrowed: false });
            }
            if w & HELD != 0 && crate::txn::holds(b) {
                // This thread's transaction holds it: a write inside the
                // transaction works under the transaction's lock, which
                // the transaction releases (`txn.rs`).
                return Some(BucketGuard { table: self, bucket: b, word: w, moved: false, borrowed: true });
            }
            if backoff.is_completed() {
                std::thread::yield_now();
            } else {
                backoff.snooze();
            }
            spin_hint();
        }
    }

    /// Locks the bucket that owns `hash` now, following MOVED buckets into
    /// the successor (the writers' and the reclaimer's way in). Bounded:
    /// one step per table generation.
    pub fn lock_routed(&self, hash: u64) -> BucketGuard<'_> {
        let mut t = self.route(hash);
        for _ in 0..=TABLE_LOG2_MAX {
            match t.lock(t.index(hash)) {
                Some(g) => return g,
                None => t = t.successor().expect("MOVED implies a successor"),
            }
        }
        unreachable!("routing is bounded by the table generations")
    }

    /// Takes bucket `i`'s lock for a transaction (LOCKED and HELD), or
    /// returns None if the bucket has MOVED. Spins while a writer or
    /// another transaction holds it (`txn.rs` orders the acquisitions so
    /// that this wait ends).
    pub fn lock_held(&self, i: usize) -> Option<BucketGuard<'_>> {
        self.acquire(i, LOCKED | HELD)
    }

    /// [`Table::lock_held`] without waiting for another holder: Err(true)
    /// if the bucket was MOVED (route to the successor), Err(false) if
    /// another thread holds it. A transaction extending its held set
    /// takes a bucket ranked before one it holds only this way (`txn.rs`,
    /// "Growing the held set"). A failed compare-and-swap with the bucket
    /// still free is retried (a concurrent version bump), at most
    /// [`TRY_LOCK_CAS_MAX`] times.
    pub fn try_lock_held(&self, i: usize) -> Result<BucketGuard<'_>, bool> {
        let b = self.bucket(i);
        for _ in 0..TRY_LOCK_CAS_MAX {
            let w = b.lock.load(Ordering::Acquire);
            if w & MOVED != 0 {
                return Err(true);
            }
            if w & LOCKED != 0 {
                return Err(false);
            }
            if b.lock.compare_exchange_weak(w, w | LOCKED | HELD, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                // As in `acquire`: the LOCKED store before our slot stores.
                fence(Ordering::Release);
                return Ok(BucketGuard { table: self, bucket: b, word: w, moved: false, borrowed: false });
            }
        }
        Err(false)
    }

    /// The bucket that owns `hash` now (routing as `lock_routed` does,
    /// without locking): the address a transaction compares with the
    /// buckets it holds. Only meaningful to a thread that holds the
    /// bucket or is about to lock it and re-check.
    pub(crate) fn bucket_of(&self, hash: u64) -> (&Table, usize) {
        let mut t = self.route(hash);
        for _ in 0..=TABLE_LOG2_MAX {
            let i = t.index(hash);
            if t.bucket(i).lock.load(Ordering::Acquire) & MOVED == 0 {
                return (t, i);
            }
            t = t.successor().expect("MOVED implies a successor");
        }
        unreachable!("routing is bounded by the table generations")
    }

    /// Moves bucket `i`'s entries into the successor (Mercury's expand
    /// thread, one bucket at a time) and marks it MOVED.
    ///
    /// Only the expand thread calls this, for i in 0..N in order. The
    /// successor has 2^d times the buckets (d >= 1); old bucket `i` splits
    /// into the new buckets whose low bits are `i`, which no one else
    /// touches until the MOVED store below, so they are filled without
    /// their locks. `rehash` gives
    /// an item's full hash (the slot keeps only 16 bits of it).
    ///
    /// Returns the number of entries moved, or Err if the successor's
    /// overflow arena is exhausted.
    pub fn migrate_bucket(&self, i: usize, rehash: &dyn Fn(*const u8) -> u64) -> Result<usize, ()> {
        let next = self.successor().expect("migrate_bucket outside an expansion");
        let mut guard = self.lock(i).expect("a bucket moves only once");
        let mut moved = 0;
        let mut result = Ok(());
        guard.for_each_entry(|tag, p| {
            let j = next.index(rehash(p));
            debug_assert_eq!(j & (self.bucket_count() - 1), i);
            if result.is_ok() {
                result = next.insert_unlocked(j, tag, p);
                moved += 1;
            }
        });
        result?;
        guard.moved = true;
        drop(guard);
        Ok(moved)
    }

    /// Prefetches the items bucket `i`'s line points to (the expand thread
    /// calls this a few buckets ahead, so rehashing their keys overlaps the
    /// memory latency instead of paying it bucket by bucket).
    pub fn prefetch_bucket_items(&self, i: usize) {
        if i >= self.bucket_count() {
            return;
        }
        for s in &self.bucket(i).slots {
            let w = s.load(Ordering::Relaxed);
            if w != 0 {
                prefetch_line(slot_ptr(w));
            }
        }
    }

    /// Publishes the migration progress counter.
    pub fn set_migrated(&self, buckets: usize) {
        self.migrated.store(buckets, Ordering::Release);
    }

    fn insert_unlocked(&self, i: usize, tag: u16, p: *const u8) -> Result<(), ()> {
        let b = self.bucket(i);
        let mut node = b;
        for _ in 0..=CHAIN_NODES_MAX {
            for s in &node.slots {
                if s.load(Ordering::Relaxed) == 0 {
                    s.store(slot_word(tag, p), Ordering::Release);
                    return Ok(());
                }
            }
            match node.next.load(Ordering::Relaxed) {
                0 => {
                    let n = self.overflow.alloc().ok_or(())?;
                    let fresh = self.overflow.node(n);
                    fresh.slots[0].store(slot_word(tag, p), Ordering::Release);
                    node.next.store(n, Ordering::Release);
                    return Ok(());
                }
                n => node = self.overflow.node(n),
            }
        }
        Err(())
    }

    /// Visits every item pointer of the table (for teardown and
    /// statistics); the caller must ensure no writer runs concurrently.
    pub fn for_each_item_exclusive(&self, mut f: impl FnMut(*const u8)) {
        for i in 0..self.bucket_count() {
            let b = self.bucket(i);
            if b.lock.load(Ordering::Relaxed) & MOVED != 0 {
                continue;
            }
            let mut node = b;
            for _ in 0..=CHAIN_NODES_MAX {
                for s in &node.slots {
                    let w = s.load(Ordering::Relaxed);
                    if w != 0 {
                        f(slot_ptr(w));
                    }
                }
                match node.next.load(Ordering::Relaxed) {
                    0 => break,
                    n => node = self.overflow.node(n),
                }
            }
        }
    }
}

/// A locked bucket. Changes to its slots are made only through this guard;
/// dropping it unlocks the bucket and bumps its version.
pub struct BucketGuard<'t> {
    table: &'t Table,
    bucket: &'t Bucket,
    /// The lock word as it was before we locked it.
    word: u32,
    /// Set by the expand thread: unlock with MOVED.
    moved: bool,
    /// The calling thread's transaction holds this bucket: dropping the
    /// guard leaves it locked (the transaction unlocks it at its end).
    borrowed: bool,
}

/// Where an entry sits in a locked chain.
#[derive(Clone, Copy)]
pub struct SlotRef<'t> {
    slot: &'t AtomicU64,
}

impl<'t> BucketGuard<'t> {
    fn for_each_entry(&self, mut f: impl FnMut(u16, *const u8)) {
        let mut node = self.bucket;
        for _ in 0..=CHAIN_NODES_MAX {
            for s in &node.slots {
                let w = s.load(Ordering::Relaxed);
                if w != 0 {
                    f(slot_tag(w), slot_ptr(w));
                }
            }
            match node.next.load(Ordering::Relaxed) {
                0 => return,
                n => node = self.table.overflow.node(n),
            }
        }
    }

    /// Visits the chain's item pointers under the lock (snapshots).
    pub fn for_each_item(&self, mut f: impl FnMut(*const u8)) {
        self.for_each_entry(|_, p| f(p));
    }

    /// The table this bucket belongs to.
    pub fn table(&self) -> &'t Table {
        self.table
    }

    /// The slot holding `key`, with its item pointer.
    pub fn find(&self, tag: u16, key: &[u8]) -> Option<(SlotRef<'t>, *const u8)> {
        let at = self.find_slot(|w| {
            // SAFETY: we hold the bucket lock, so the item in the slot is
            // live (only a lock holder unlinks and retires it).
            slot_tag(w) == tag && unsafe { item::key_eq(slot_ptr(w), key) }
        })?;
        let p = slot_ptr(at.slot.load(Ordering::Relaxed));
        Some((at, p))
    }

    /// The slot pointing at exactly the item `p` (with tag `tag`), if
    /// any: what [`find`](Self::find) returns for `p`'s key when the slot
    /// holds `p` (a key is in at most one slot), but without reading any
    /// item, so a slot holding a newer version of the key costs no miss.
    pub fn find_ptr(&self, tag: u16, p: *const u8) -> Option<SlotRef<'t>> {
        let want = slot_word(tag, p);
        self.find_slot(|w| w == want)
    }

    /// The first non-empty slot of the chain whose word satisfies `hit`.
    /// Bounded: CHAIN_NODES_MAX nodes.
    #[inline]
    fn find_slot(&self, mut hit: impl FnMut(u64) -> bool) -> Option<SlotRef<'t>> {
        let mut node = self.bucket;
        for _ in 0..=CHAIN_NODES_MAX {
            for s in &node.slots {
                let w = s.load(Ordering::Relaxed);
                if w != 0 && hit(w) {
                    return Some(SlotRef { slot: s });
                }
            }
            match node.next.load(Ordering::Relaxed) {
                0 => return None,
                n => node = self.table.overflow.node(n),
            }
        }
        None
    }

    /// Replaces the item in a slot found by [`find`](Self::find).
    pub fn replace(&mut self, at: SlotRef<'t>, tag: u16, p: *const u8) {
        at.slot.store(slot_word(tag, p), Ordering::Release);
    }

    /// Empties a slot found by [`find`](Self::find), then gives back
    /// overflow nodes left empty at the chain's tail.
    pub fn remove(&mut self, at: SlotRef<'t>) {
        at.slot.store(0, Ordering::Release);
        self.trim_tail();
    }

    /// Unlinks empty overflow nodes from the chain's tail and recycles
    /// them (module documentation: why a reader still walking one is
    /// safe). Bounded: CHAIN_NODES_MAX nodes, each found by one walk.
    fn trim_tail(&mut self) {
        for _ in 0..CHAIN_NODES_MAX {
            let mut prev = self.bucket;
            let mut last = match prev.next.load(Ordering::Relaxed) {
                0 => return,
                n => n,
            };
            for _ in 0..CHAIN_NODES_MAX {
                match self.table.overflow.node(last).next.load(Ordering::Relaxed) {
                    0 => break,
                    n => {
                        prev = self.table.overflow.node(last);
                        last = n;
                    }
                }
            }
            if self.table.overflow.node(last).slots.iter().any(|s| s.load(Ordering::Relaxed) != 0) {
                return;
            }
            // Release: a reader that sees the link gone sees our LOCKED
            // store too (and so retries a miss).
            prev.next.store(0, Ordering::Release);
            self.table.overflow.recycle(last);
        }
    }

    /// Puts a new entry in the first empty slot of the chain, appending an
    /// overflow node if all are full. Err if the chain is at its bound or
    /// the overflow arena is exhausted (both unreachable in practice).
    pub fn insert(&mut self, tag: u16, p: *const u8) -> Result<(), ()> {
        let mut node = self.bucket;
        for _ in 0..=CHAIN_NODES_MAX {
            for s in &node.slots {
                if s.load(Ordering::Relaxed) == 0 {
                    s.store(slot_word(tag, p), Ordering::Release);
                    return Ok(());
                }
            }
            match node.next.load(Ordering::Relaxed) {
                0 => {
                    let n = self.table.overflow.alloc().ok_or(())?;
                    let fresh = self.table.overflow.node(n);
                    fresh.slots[0].store(slot_word(tag, p), Ordering::Release);
                    // Release: the node's slot is visible before the link.
                    node.next.store(n, Ordering::Release);
                    return Ok(());
                }
                n => node = self.table.overflow.node(n),
            }
        }
        Err(())
    }

    /// Visits the chain's entries under the lock, letting `f` decide per
    /// entry whether to remove it (used by flush and the expiry sweep).
    /// Returns the removed pointers' count.
    pub fn retain(&mut self, mut keep: impl FnMut(*const u8) -> bool) -> usize {
        let mut removed = 0;
        let mut node = self.bucket;
        for _ in 0..=CHAIN_NODES_MAX {
            for s in &node.slots {
                let w = s.load(Ordering::Relaxed);
                if w != 0 && !keep(slot_ptr(w)) {
                    s.store(0, Ordering::Release);
                    removed += 1;
                }
            }
            match node.next.load(Ordering::Relaxed) {
                0 => break,
                n => node = self.table.overflow.node(n),
            }
        }
        if removed > 0 {
            self.trim_tail();
        }
        removed
    }
}

impl BucketGuard<'_> {
    /// The bucket's address (a transaction's held set).
    pub(crate) fn bucket_addr(&self) -> usize {
        self.bucket as *const Bucket as usize
    }
}

/// Compare-and-swap attempts [`Table::try_lock_held`] makes on a free
/// bucket before it reports it taken.
const TRY_LOCK_CAS_MAX: usize = 16;

impl Drop for BucketGuard<'_> {
    fn drop(&mut self) {
        if self.borrowed {
            return;
        }
        let mut w = (self.word.wrapping_add(1)) & VERSION_MASK;
        if self.moved {
            w |= MOVED;
        }
        // Release: every slot store above is visible to whoever sees the
        // new version (or MOVED) with an acquire load.
        self.bucket.lock.store(w, Ordering::Release);
    }
}

#[inline]
pub(crate) fn prefetch_line(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch is a hint; it never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(std::mem::size_of::<Bucket>(), 64);
        assert_eq!(std::mem::align_of::<Bucket>(), 64);
        assert_eq!(std::mem::offset_of!(Bucket, lock), 0);
        assert_eq!(std::mem::offset_of!(Bucket, next), 4);
        assert_eq!(std::mem::offset_of!(Bucket, slots), 8);
        assert_eq!(LOCKED & MOVED, 0);
        assert_eq!(VERSION_MASK & (LOCKED | MOVED), 0);
    }

    #[test]
    fn arena_segments_tile_the_index_space() {
        let mut expect = (0usize, 0usize);
        for i in 1u32..5000 {
            let got = OverflowArena::locate(i);
            assert_eq!(got, expect, "index {i}");
            expect.1 += 1;
            if expect.1 == OverflowArena::segment_len(expect.0) {
                expect = (expect.0 + 1, 0);
            }
        }
    }

    #[test]
    fn find_ptr_matches_only_the_exact_slot_word() {
        let t = Table::new(4).expect("a small table maps");
        let mut g = t.lock(0).expect("bucket 0 exists and is not moved");
        // More entries than one line holds, so the chain's overflow node is
        // searched too. The pointers are never dereferenced.
        let ptr = |i: usize| (0x10_0000 + i * 64) as *const u8;
        for i in 0..12 {
            g.insert(i as u16, ptr(i)).expect("the arena has nodes");
        }
        for i in 0..12 {
            let slot = g.find_ptr(i as u16, ptr(i)).expect("each inserted entry is found");
            assert_eq!(slot_word(i as u16, ptr(i)), slot.slot.load(Ordering::Relaxed));
        }
        assert!(g.find_ptr(3, ptr(4)).is_none(), "same tag as an entry, other item");
        assert!(g.find_ptr(4, ptr(3)).is_none(), "same item as an entry, other tag");
        assert!(g.find_ptr(0, ptr(12)).is_none());
    }

    /// An item for `key` with an empty value, in a buffer of its own.
    fn item_for(key: &[u8]) -> Vec<u8> {
        let meta = item::Meta { cas: 1, flags: 0, expiry: 0, expiry_ms: 0, marks: 0 };
        let mut v = vec![0u8; item::encoded_len(key.len(), 0, &meta)];
        item::write_header_and_key(&mut v, key, 0, &meta);
        v
    }

    #[test]
    fn probe_quiet_answers_only_for_a_quiet_line() {
        let t = Table::new(4).expect("a small table maps");
        let keys: Vec<Vec<u8>> = (0..12).map(|i| format!("key{i}").into_bytes()).collect();
        let items: Vec<Vec<u8>> = keys.iter().map(|k| item_for(k)).collect();
        // Hash i: bucket 0, tag i + 1. Twelve entries: seven in the line,
        // five in an overflow node.
        let hash = |i: usize| (i + 1) as u64;
        {
            let mut g = t.lock(0).expect("bucket 0 exists and is not moved");
            for (i, it) in items.iter().enumerate() {
                g.insert(split_hash(hash(i)).1, it.as_ptr()).expect("the arena has nodes");
            }
        }
        for (i, k) in keys.iter().enumerate() {
            let got = t.probe_quiet(hash(i), split_hash(hash(i)).1, k);
            if i < SLOTS_PER_BUCKET {
                assert_eq!(got, Some(Probe::Hit(items[i].as_ptr())), "key {i} is in the line");
            } else {
                assert_eq!(got, None, "key {i} is in the overflow node: the general path's");
            }
        }
        // Same tag as key 0, another key: not a hit, and with a chain
        // behind the line not a miss either.
        assert_eq!(t.probe_quiet(hash(0), split_hash(hash(0)).1, b"other"), None);
        // Bucket 1 is empty and has no chain: a believed miss.
        let h1 = (1u64 << INDEX_SHIFT) | 5;
        assert_eq!(t.probe_quiet(h1, split_hash(h1).1, b"absent"), Some(Probe::Miss));
        // A writer holds bucket 1: its miss is not believed.
        let g1 = t.lock(1).expect("bucket 1 exists");
        assert_eq!(t.probe_quiet(h1, split_hash(h1).1, b"absent"), None);
        drop(g1);
        // Expanding, nothing migrated yet: the old table still answers.
        let next = Box::into_raw(Box::new(Table::new(5).expect("maps")));
        t.set_successor(next);
        assert_eq!(t.probe_quiet(hash(0), split_hash(hash(0)).1, &keys[0]), Some(Probe::Hit(items[0].as_ptr())));
        assert_eq!(t.probe_quiet(h1, split_hash(h1).1, b"absent"), Some(Probe::Miss));
        // Bucket 1 marked migrated by the progress counter: the lookup goes
        // to the successor, whose bucket 1 is empty (a believed miss there,
        // even for a key the old bucket would have held).
        t.set_migrated(2);
        assert_eq!(t.probe_quiet(hash(0), split_hash(hash(0)).1, &keys[0]), Some(Probe::Miss));
        // A successor that expands in turn: the general path's.
        let next2 = Box::into_raw(Box::new(Table::new(6).expect("maps")));
        // SAFETY: `next` is live until the Box::from_raw below.
        unsafe { &*next }.set_successor(next2);
        assert_eq!(t.probe_quiet(hash(0), split_hash(hash(0)).1, &keys[0]), None);
        // SAFETY: `next` and `next2` came from Box::into_raw above and
        // nothing else frees them; neither they nor `t` are used after this.
        unsafe {
            drop(Box::from_raw(next2));
            drop(Box::from_raw(next));
        }
    }

    #[test]
    fn slot_word_roundtrips() {
        let p = 0x7fff_dead_beefusize as *const u8;
        let w = slot_word(0xabcd, p);
        assert_eq!(slot_tag(w), 0xabcd);
        assert_eq!(slot_ptr(w), p);
    }
}
