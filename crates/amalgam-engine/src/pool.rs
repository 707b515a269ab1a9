//! Item memory: per-thread pools carved from 2 MiB chunks (Mercury §3
//! "Memory Allocator").
//!
//! # How it works
//!
//! The store's memory budget is counted in whole chunks. A thread's
//! [`LocalPool`] takes a chunk from the [`SharedPool`] (one short global
//! lock per 2 MiB, the only global lock) and bump-allocates blocks of any
//! size class from it; a freed block goes on the thread's own free list for
//! its class, so steady-state allocation and free touch no shared cache
//! line. When a chunk's tail is too small for a request, the tail is cut
//! into the largest classes that fit and pushed on the free lists, so at
//! most 7 bytes of a chunk are ever wasted.
//!
//! Memory freed on one thread and needed on another moves through the
//! shared depot in batches: a free list that grows past
//! [`LOCAL_FREE_BYTES_MAX`] hands a batch of [`DEPOT_BATCH_BLOCKS`] blocks
//! to the depot, and a thread whose budget is exhausted takes a batch back.
//!
//! Items larger than [`SMALL_ITEM_BYTES_MAX`] are allocated one by one from
//! the system allocator; they count against the same budget.
//!
//! Chunks are mapped with `mmap` and advised `MADV_HUGEPAGE` (Mercury used
//! 2 MiB pages to cut TLB misses). They are returned to the kernel only when
//! the store is dropped: a cache's working set is its budget.
//!
//! # Size classes
//!
//! 8-byte steps up to 128 bytes, 16-byte steps up to 256, then steps of
//! about 1/16 (rounded to 64 bytes) up to 512 KiB. Classes of 8, 16 and 32
//! bytes never straddle a cache line, so small items cost one line each.
//!
//! # Limitations
//!
//! Blocks once carved from a chunk keep their class until they return to
//! some free list; cache mode (eviction) revisits this to stop calcification.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Bytes in one chunk: the unit of the budget and of `madvise` hugepages.
///
/// ```
/// assert_eq!(amalgam_engine::CHUNK_BYTES, 2 << 20);
/// ```
pub const CHUNK_BYTES: usize = 2 << 20;
/// Largest item served from a size class; larger items get their own
/// allocation (a class this size still packs 4 per chunk).
///
/// ```
/// assert_eq!(amalgam_engine::SMALL_ITEM_BYTES_MAX * 4, amalgam_engine::CHUNK_BYTES);
/// ```
pub const SMALL_ITEM_BYTES_MAX: usize = CHUNK_BYTES / 4;
/// A thread's free list for one class may hold this many bytes before it
/// gives a batch to the depot.
pub const LOCAL_FREE_BYTES_MAX: usize = 1 << 20;
/// Blocks moved between a thread and the depot at once.
pub const DEPOT_BATCH_BLOCKS: usize = 64;
/// Smallest block: room for the free list's link.
const BLOCK_BYTES_MIN: usize = 8;

const _: () = assert!(SMALL_ITEM_BYTES_MAX <= CHUNK_BYTES);
const _: () = assert!(CHUNK_BYTES.is_power_of_two());

/// The size classes, ascending.
pub(crate) struct Classes {
    sizes: Vec<usize>,
    /// class index for sizes 1..=256 by (size + 7) / 8.
    small: Vec<u8>,
}

impl Classes {
    pub(crate) fn new() -> Classes {
        let mut sizes = Vec::new();
        let mut s = BLOCK_BYTES_MIN;
        while s <= 128 {
            sizes.push(s);
            s += 8;
        }
        s = 144;
        while s <= 256 {
            sizes.push(s);
            s += 16;
        }
        while s < SMALL_ITEM_BYTES_MAX {
            s = ((s + s / 16) + 63) & !63;
            sizes.push(s.min(SMALL_ITEM_BYTES_MAX));
        }
        let mut small = vec![0u8; 256 / 8 + 1];
        for (i, slot) in small.iter_mut().enumerate() {
            let want = (i * 8).max(1);
            *slot = sizes.iter().position(|&c| c >= want).expect("class") as u8;
        }
        Classes { sizes, small }
    }

    pub(crate) fn count(&self) -> usize {
        self.sizes.len()
    }

    pub(crate) fn size(&self, class: usize) -> usize {
        self.sizes[class]
    }

    /// The class serving `bytes`, or None if it is a large item.
    #[inline]
    pub(crate) fn class_of(&self, bytes: usize) -> Option<usize> {
        if bytes <= 256 {
            Some(self.small[bytes.div_ceil(8)] as usize)
        } else if bytes <= SMALL_ITEM_BYTES_MAX {
            Some(self.sizes.partition_point(|&c| c < bytes))
        } else {
            None
        }
    }
}

/// Maps `bytes` of zeroed memory, advised for transparent hugepages when
/// it is at least one chunk.
pub(crate) fn map_zeroed(bytes: usize) -> Option<*mut u8> {
    let p = map_zeroed_small_pages(bytes)?;
    if bytes >= CHUNK_BYTES {
        advise_hugepages(p, bytes);
    }
    Some(p)
}

/// Maps `bytes` of zeroed memory starting on a 2 MiB boundary, advised for
/// hugepages: every aligned 2 MiB of it is one hugepage (or none), which
/// is what cache mode's resident-segment account counts in
/// (`segment.rs`). Unmap with [`unmap`]`(p, bytes)`.
pub(crate) fn map_zeroed_aligned(bytes: usize) -> Option<*mut u8> {
    map_aligned(bytes, 0)
}

/// Address space for cache mode's segment log when its budget may be
/// raised past what it starts with (`Store::set_memory_limit`): mapped
/// with `MAP_NORESERVE`, so the kernel charges no commit for the part the
/// memory account does not let the store touch (the account, not the
/// mapping, bounds what is resident). On a 2 MiB boundary and advised for
/// hugepages when `aligned` (as [`map_zeroed_aligned`]), else small pages.
/// Unmap with [`unmap`]`(p, bytes)`.
pub(crate) fn map_address_space(bytes: usize, aligned: bool) -> Option<*mut u8> {
    if aligned {
        map_aligned(bytes, libc::MAP_NORESERVE)
    } else {
        map_anonymous(bytes, libc::MAP_NORESERVE)
    }
}

/// [`map_zeroed_aligned`] with extra mmap flags.
fn map_aligned(bytes: usize, flags: libc::c_int) -> Option<*mut u8> {
    let bytes = bytes.max(1);
    // Over-map by one chunk and trim so the start is 2 MiB aligned.
    let raw = map_anonymous(bytes.checked_add(CHUNK_BYTES)?, flags)?;
    let aligned = (raw as usize).next_multiple_of(CHUNK_BYTES) as *mut u8;
    let head = aligned as usize - raw as usize;
    // SAFETY: head and tail lie inside the mapping just made and outside
    // [aligned, aligned + bytes), which we keep.
    unsafe {
        if head > 0 {
            unmap(raw, head);
        }
        let tail = CHUNK_BYTES - head;
        if tail > 0 {
            unmap(aligned.add(bytes), tail);
        }
    }
    advise_hugepages(aligned, bytes);
    Some(aligned)
}

/// Maps `bytes` of zeroed memory on small pages only: for memory touched
/// a line at a time and charged by the byte (the overflow arena), where a
/// hugepage would make 2 MiB resident for one line; and the base of the
/// two mappings above.
pub(crate) fn map_zeroed_small_pages(bytes: usize) -> Option<*mut u8> {
    map_anonymous(bytes, 0)
}

/// An anonymous private read-write mapping of `bytes`, with `flags` added
/// (0 or MAP_NORESERVE).
fn map_anonymous(bytes: usize, flags: libc::c_int) -> Option<*mut u8> {
    let bytes = bytes.max(1);
    // SAFETY: an anonymous private mapping with no address hint has no
    // preconditions; the result is checked for MAP_FAILED.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | flags,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return None;
    }
    Some(p as *mut u8)
}

/// Turns transparent hugepages off for this whole process and the
/// processes it starts (`prctl(PR_SET_THP_DISABLE)`): the kernel then
/// ignores the engine's `MADV_HUGEPAGE` advice and zeroes and maps memory
/// 4 KiB at a time. For processes that build many short-lived tiny
/// stores, where zeroing a 2 MiB page per store dominates (the recovery
/// fuzz target); a server keeps hugepages (Mercury's TLB argument above).
pub fn disable_hugepages_for_process() -> std::io::Result<()> {
    // SAFETY: PR_SET_THP_DISABLE takes one integer argument and no
    // pointers; it changes only how the kernel backs later faults.
    let rc = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn advise_hugepages(p: *mut u8, bytes: usize) {
    // SAFETY: p..p+bytes is a mapping of ours; madvise is advice and its
    // failure (no THP support) is harmless.
    unsafe {
        libc::madvise(p as *mut libc::c_void, bytes, libc::MADV_HUGEPAGE);
    }
}

/// Unmaps memory from [`map_zeroed`].
///
/// # Safety
/// `p` and `bytes` must be exactly one earlier `map_zeroed` result, and no
/// reference into it may be used afterwards.
pub(crate) unsafe fn unmap(p: *mut u8, bytes: usize) {
    // SAFETY: forwarded from the caller.
    unsafe {
        libc::munmap(p as *mut libc::c_void, bytes.max(1));
    }
}

/// Gives the pages of `p..p + bytes` (inside a [`map_zeroed`] mapping)
/// back to the kernel; the range stays mapped and reads as zeros when next
/// touched. Cache mode uses it for segments its memory account no longer
/// covers (`segment.rs`).
///
/// # Safety
/// The range lies inside one live `map_zeroed` mapping, and nothing in it
/// is referenced (its contents are lost).
pub(crate) unsafe fn discard(p: *mut u8, bytes: usize) {
    // SAFETY: forwarded from the caller; MADV_DONTNEED on a private
    // anonymous mapping only drops pages. Failure leaves them resident,
    // which costs memory, not correctness.
    unsafe {
        libc::madvise(p as *mut libc::c_void, bytes, libc::MADV_DONTNEED);
    }
}

/// One 2 MiB chunk, aligned to 2 MiB so it can be one hugepage.
struct Chunk(*mut u8);
// SAFETY: a chunk is plain memory owned by the SharedPool.
unsafe impl Send for Chunk {}

/// Process-wide side of the allocator for one store: the budget, the list
/// of chunks (to unmap at drop) and the depot of free batches.
pub(crate) struct SharedPool {
    pub(crate) classes: Classes,
    /// Cache mode's segment log (segment.rs); None in store mode. Here so
    /// the epoch scheme, which frees into the pool, frees segments too.
    pub(crate) segments: Option<crate::segment::Segments>,
    /// The budget; changed at run time by `Store::set_memory_limit`
    /// (usize::MAX: no limit, store mode only). Relaxed: a writer that
    /// reads the old value for a moment after a change reserves against
    /// it, which is the change's own race with that writer.
    budget_bytes: AtomicUsize,
    /// Chunks plus large items, in bytes; never above `budget_bytes` when
    /// reserved (a budget lowered later may sit below it: chunks are never
    /// given back in store mode).
    reserved_bytes: AtomicUsize,
    chunks: Mutex<Vec<Chunk>>,
    depot: Vec<Mutex<Vec<FreeList>>>,
}

impl SharedPool {
    pub(crate) fn new(budget_bytes: usize) -> SharedPool {
        let classes = Classes::new();
        let depot = (0..classes.count()).map(|_| Mutex::new(Vec::new())).collect();
        SharedPool {
            classes,
            segments: None,
            budget_bytes: AtomicUsize::new(budget_bytes),
            reserved_bytes: AtomicUsize::new(0),
            chunks: Mutex::new(Vec::new()),
            depot,
        }
    }

    pub(crate) fn budget_bytes(&self) -> usize {
        self.budget_bytes.load(Ordering::Relaxed)
    }

    /// Sets the budget (`Store::set_memory_limit` checks the value).
    pub(crate) fn set_budget_bytes(&self, bytes: usize) {
        self.budget_bytes.store(bytes, Ordering::Relaxed);
    }

    pub(crate) fn reserved_bytes(&self) -> usize {
        self.reserved_bytes.load(Ordering::Relaxed)
    }

    fn reserve(&self, bytes: usize) -> bool {
        self.reserved_bytes
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |r| {
                r.checked_add(bytes).filter(|&n| n <= self.budget_bytes())
            })
            .is_ok()
    }

    fn release(&self, bytes: usize) {
        self.reserved_bytes.fetch_sub(bytes, Ordering::Relaxed);
    }

    fn new_chunk(&self) -> Option<*mut u8> {
        if !self.reserve(CHUNK_BYTES) {
            return None;
        }
        let Some(aligned) = map_zeroed_aligned(CHUNK_BYTES) else {
            self.release(CHUNK_BYTES);
            return None;
        };
        self.chunks.lock().unwrap_or_else(|e| e.into_inner()).push(Chunk(aligned));
        Some(aligned)
    }

    fn take_batch(&self, class: usize) -> Option<FreeList> {
        self.depot[class].lock().unwrap_or_else(|e| e.into_inner()).pop()
    }

    fn give_batch(&self, class: usize, batch: FreeList) {
        self.depot[class].lock().unwrap_or_else(|e| e.into_inner()).push(batch);
    }
}

impl Drop for SharedPool {
    fn drop(&mut self) {
        for c in self.chunks.get_mut().unwrap_or_else(|e| e.into_inner()).drain(..) {
            // SAFETY: each chunk is an aligned CHUNK_BYTES mapping made in
            // new_chunk; the store (and so every item) is gone.
            unsafe { unmap(c.0, CHUNK_BYTES) };
        }
    }
}

/// An intrusive singly linked list of free blocks of one class; each block's
/// first 8 bytes hold the next pointer.
#[derive(Debug)]
pub(crate) struct FreeList {
    head: *mut u8,
    len: usize,
}

// SAFETY: the blocks are plain memory owned by whoever owns the list.
unsafe impl Send for FreeList {}

impl FreeList {
    const fn new() -> FreeList {
        FreeList { head: std::ptr::null_mut(), len: 0 }
    }

    /// # Safety
    /// `p` is a free block of at least 8 bytes that nothing else references.
    unsafe fn push(&mut self, p: *mut u8) {
        // SAFETY: forwarded: p is ours and has room for the link.
        unsafe { std::ptr::write_unaligned(p as *mut *mut u8, self.head) };
        self.head = p;
        self.len += 1;
    }

    fn pop(&mut self) -> Option<*mut u8> {
        if self.head.is_null() {
            return None;
        }
        let p = self.head;
        // SAFETY: p is a block pushed by `push`, whose first word is the link.
        self.head = unsafe { std::ptr::read_unaligned(p as *const *mut u8) };
        self.len -= 1;
        Some(p)
    }

    /// Splits off up to `n` blocks.
    fn split(&mut self, n: usize) -> FreeList {
        let mut out = FreeList::new();
        for _ in 0..n {
            match self.pop() {
                // SAFETY: p was just taken off our own list.
                Some(p) => unsafe { out.push(p) },
                None => break,
            }
        }
        out
    }
}

/// A thread's pool for one store. Used only by its owning thread.
pub(crate) struct LocalPool {
    bump: *mut u8,
    bump_end: *mut u8,
    free: Vec<FreeList>,
    /// Bytes of blocks handed out and not yet freed, by this thread's
    /// allocations minus its frees (may go negative per thread).
    pub(crate) live_bytes: isize,
}

// SAFETY: the raw pointers name memory owned by the store's SharedPool; a
// LocalPool moves between threads only when thread_local hands a dead
// thread's slot to a new thread.
unsafe impl Send for LocalPool {}

/// What an allocation returned.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Block {
    pub ptr: *mut u8,
    /// Bytes actually reserved (the class size, or the large size).
    pub bytes: usize,
}

// SAFETY: a Block is exclusively owned memory of the store's pools; it is
// handed between threads only inside retired-garbage bags and pools.
unsafe impl Send for Block {}

impl LocalPool {
    pub(crate) fn new(classes: &Classes) -> LocalPool {
        LocalPool {
            bump: std::ptr::null_mut(),
            bump_end: std::ptr::null_mut(),
            free: (0..classes.count()).map(|_| FreeList::new()).collect(),
            live_bytes: 0,
        }
    }

    /// A block of at least `bytes`, or None when the budget is exhausted.
    pub(crate) fn alloc(&mut self, shared: &SharedPool, bytes: usize) -> Option<Block> {
        let Some(class) = shared.classes.class_of(bytes) else {
            return self.alloc_large(shared, bytes);
        };
        let size = shared.classes.size(class);
        let ptr = self.alloc_class(shared, class, size)?;
        self.live_bytes += size as isize;
        Some(Block { ptr, bytes: size })
    }

    fn alloc_class(&mut self, shared: &SharedPool, class: usize, size: usize) -> Option<*mut u8> {
        if let Some(p) = self.free[class].pop() {
            return Some(p);
        }
        if (self.bump_end as usize) - (self.bump as usize) >= size {
            let p = self.bump;
            // SAFETY: bump + size <= bump_end, inside the current chunk.
            self.bump = unsafe { self.bump.add(size) };
            return Some(p);
        }
        if let Some(batch) = shared.take_batch(class) {
            self.free[class] = batch;
            return self.free[class].pop();
        }
        let chunk = shared.new_chunk()?;
        self.retire_tail(shared);
        self.bump = chunk;
        // SAFETY: the chunk is CHUNK_BYTES long.
        self.bump_end = unsafe { chunk.add(CHUNK_BYTES) };
        let p = self.bump;
        // SAFETY: size <= SMALL_ITEM_BYTES_MAX <= CHUNK_BYTES.
        self.bump = unsafe { self.bump.add(size) };
        Some(p)
    }

    /// Cuts the rest of the current chunk into free blocks.
    fn retire_tail(&mut self, shared: &SharedPool) {
        let bound = shared.classes.count();
        for _ in 0..bound {
            let left = self.bump_end as usize - self.bump as usize;
            if left < BLOCK_BYTES_MIN {
                break;
            }
            let class = shared.classes.sizes.partition_point(|&c| c <= left) - 1;
            let size = shared.classes.size(class);
            // SAFETY: [bump, bump + size) is unused memory of our chunk.
            unsafe {
                self.free[class].push(self.bump);
                self.bump = self.bump.add(size);
            }
        }
        self.bump = std::ptr::null_mut();
        self.bump_end = std::ptr::null_mut();
    }

    /// Cache mode's outsized items (`outsized.rs`): a block of its own from
    /// the system allocator, counted in the shared reservation (which
    /// cache mode uses for nothing else) so the memory account charges it.
    pub(crate) fn alloc_outsized(&mut self, shared: &SharedPool, bytes: usize) -> Option<Block> {
        self.alloc_large(shared, bytes)
    }

    /// Frees a block from [`LocalPool::alloc_outsized`].
    ///
    /// # Safety
    /// As for [`LocalPool::free`]: nothing references `block` any more.
    pub(crate) unsafe fn free_outsized(&mut self, shared: &SharedPool, block: Block) {
        self.live_bytes -= block.bytes as isize;
        let layout = std::alloc::Layout::from_size_align(block.bytes, 64).expect("layout");
        // SAFETY: allocated by alloc_large with exactly this layout; the
        // caller guarantees no reference is left.
        unsafe { std::alloc::dealloc(block.ptr, layout) };
        shared.release(block.bytes);
    }

    fn alloc_large(&mut self, shared: &SharedPool, bytes: usize) -> Option<Block> {
        let rounded = bytes.checked_next_multiple_of(4096)?;
        if !shared.reserve(rounded) {
            return None;
        }
        let layout = std::alloc::Layout::from_size_align(rounded, 64).ok()?;
        // SAFETY: layout has non-zero size.
        let ptr = unsafe { std::alloc::alloc(layout) };
        if ptr.is_null() {
            shared.release(rounded);
            return None;
        }
        self.live_bytes += rounded as isize;
        Some(Block { ptr, bytes: rounded })
    }

    /// Returns a block to this thread's pool.
    ///
    /// # Safety
    /// `block` came from `alloc` of a pool of the same store, and nothing
    /// references it any more (the epoch scheme guarantees this for items).
    pub(crate) unsafe fn free(&mut self, shared: &SharedPool, block: Block) {
        self.live_bytes -= block.bytes as isize;
        match shared.classes.class_of(block.bytes) {
            Some(class) if block.bytes <= SMALL_ITEM_BYTES_MAX => {
                // SAFETY: forwarded from the caller.
                unsafe { self.free[class].push(block.ptr) };
                if self.free[class].len * block.bytes > LOCAL_FREE_BYTES_MAX {
                    let batch = self.free[class].split(DEPOT_BATCH_BLOCKS);
                    shared.give_batch(class, batch);
                }
            }
            _ => {
                let layout = std::alloc::Layout::from_size_align(block.bytes, 64).expect("layout");
                // SAFETY: a large block was allocated with exactly this layout.
                unsafe { std::alloc::dealloc(block.ptr, layout) };
                shared.release(block.bytes);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_cover_every_small_size() {
        let c = Classes::new();
        for bytes in 1..=SMALL_ITEM_BYTES_MAX {
            let class = c.class_of(bytes).expect("small");
            assert!(c.size(class) >= bytes, "{bytes}");
            if class > 0 {
                assert!(c.size(class - 1) < bytes, "{bytes} not in its smallest class");
            }
        }
        assert!(c.class_of(SMALL_ITEM_BYTES_MAX + 1).is_none());
        assert_eq!(c.size(c.class_of(27).unwrap()), 32);
    }

    #[test]
    fn blocks_return_to_the_pool_and_are_reused() {
        let shared = SharedPool::new(4 * CHUNK_BYTES);
        let mut pool = LocalPool::new(&shared.classes);
        let blocks: Vec<_> = (0..1000).map(|_| pool.alloc(&shared, 27).unwrap()).collect();
        assert_eq!(pool.live_bytes, 32 * 1000);
        for b in &blocks {
            // SAFETY: each block came from this pool and is unreferenced.
            unsafe { pool.free(&shared, *b) };
        }
        assert_eq!(pool.live_bytes, 0);
        let again = pool.alloc(&shared, 30).unwrap();
        assert!(blocks.iter().any(|b| b.ptr == again.ptr));
        assert_eq!(shared.reserved_bytes(), CHUNK_BYTES);
    }

    #[test]
    fn budget_is_enforced() {
        let shared = SharedPool::new(CHUNK_BYTES);
        let mut pool = LocalPool::new(&shared.classes);
        let mut n = 0;
        while pool.alloc(&shared, 1000).is_some() {
            n += 1;
            assert!(n <= CHUNK_BYTES / 1000);
        }
        assert!(n >= CHUNK_BYTES / 1024 - 1);
        assert!(pool.alloc(&shared, SMALL_ITEM_BYTES_MAX + 1).is_none());
    }
}
