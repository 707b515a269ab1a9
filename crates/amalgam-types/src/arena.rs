//! A paged byte arena for the large forms: element bytes stored
//! back to back in fixed-size pages, addressed by 4-byte [`Handle`]s, so a
//! large collection's element costs its payload plus a 1–2 byte header
//! (and its table slot elsewhere), not an allocation of its own.
//!
//! ## Layout
//! ```text
//! Handle (u32):   [ page index : 16 ][ byte offset in the page : 16 ]
//!
//! page bytes:     [hdr][body........][hdr][body...][hdr][body.....] ...
//!                  hdr = varint(body_len << 1 | dead)
//! ```
//! * Pages hold at most [`PAGE_BYTES`]; an open page's capacity starts at
//!   [`PAGE_BYTES_MIN`] and doubles as it fills, so a small large-form
//!   value does not pay for a whole page. An element whose encoded size
//!   exceeds [`DEDICATED_BYTES_MIN`] gets a page of its own, sized
//!   exactly (offset 0).
//! * Allocation appends to the one *open* page (log-structured); `free`
//!   only sets the header's dead bit and counts the page's dead bytes;
//!   [`Arena::overwrite`] rewrites a same-length element in place.
//!   A page whose bytes are all dead is released at once.
//! * **Compaction** ([`Arena::compact_step`]): a page whose dead bytes
//!   exceed half its used bytes is queued once; calls move its live
//!   elements to the open page, at most [`COMPACT_MOVES_MAX`] a call,
//!   marking each moved one dead where it was, and release the page once
//!   it is empty, telling the caller every old → new handle so it can
//!   re-point its table slot. An element not moved yet stays readable at
//!   its old handle meanwhile. Bound per call: [`COMPACT_MOVES_MAX`]
//!   elements and [`COMPACT_SKIPS_MAX`] stale queue entries. (A whole
//!   page a call, as before, moved up to ~1,000 small elements, each
//!   re-pointed by its holder: a ~0.5 ms pause inside one ZPOPMIN.)
//!   Callers invoke it after every `free` (every element removal); the
//!   moving it does is at most the live elements of pages that became
//!   more dead than live, so it is amortised O(1) per removed element. If
//!   callers keep up, every page but the open one and the one being
//!   emptied is at least half live, so `mem_bytes` ≤ 2 × live bytes + two
//!   pages + bookkeeping.
//! * **Positions** for SCAN: every page carries a sequence number, newer
//!   pages higher, and a position is `(seq, offset)`. New elements and
//!   relocated ones are always placed after every existing element (the
//!   open page is always the newest; a dedicated page closes the open
//!   one; a fully-dead open page restarts under a fresh sequence number),
//!   so an element's position only ever increases. A cursor walking
//!   positions upward therefore returns every element present for the
//!   whole walk at least once ([`Arena::scan`]).
//!
//! ## Limits
//! [`PAGES_MAX`] pages (the 16-bit page index): 4 GiB of small elements,
//! or 65,536 dedicated ones, per arena (per collection). `alloc` panics
//! beyond that, as a `Vec` does beyond `isize::MAX`.

pub mod table;
pub use table::Table;

/// Bytes a page holds at most (the 16-bit offset addresses it).
pub const PAGE_BYTES: usize = 64 * 1024;
/// An open page's first capacity; it doubles up to [`PAGE_BYTES`] so a
/// collection just past its compact limit pays ~its size, not 64 KiB.
pub const PAGE_BYTES_MIN: usize = 256;
/// An element whose encoded size (header + body) is above this gets a
/// page of its own, so closing a full page wastes at most this much.
pub const DEDICATED_BYTES_MIN: usize = PAGE_BYTES / 4;
/// Pages per arena: the 16-bit page index of a [`Handle`].
pub const PAGES_MAX: usize = 1 << 16;
/// Stale compaction-queue entries (pages released or already compacted)
/// one [`Arena::compact_step`] call skips at most.
pub const COMPACT_SKIPS_MAX: usize = 8;
/// Live elements one [`Arena::compact_step`] call moves at most (each
/// one re-pointed by the caller: a sorted set's tree descent, ~1,500
/// instructions).
pub const COMPACT_MOVES_MAX: usize = 16;
/// Dead elements [`Arena::scan`] steps over per live element it may
/// return (Redis's SCAN visits at most 10 empty buckets per COUNT).
pub const SCAN_DEAD_PER_LIVE_MAX: usize = 10;

/// A page keeps the offset of every this-many-th element it was given
/// (live or dead), so a random pick jumps near an element and walks at
/// most this many (`Arena::random`). 2 bytes per 32 elements.
pub const RANDOM_SKIP_ELEMENTS: usize = 32;
/// Rejection rounds of one random pick inside a page (each lands on a
/// live element with probability ≥ about 1/2, since a page more than half
/// dead is compacted) before it falls back to counting live elements.
pub const RANDOM_TRIES_MAX: usize = 16;
const _: () = assert!(PAGE_BYTES <= 1 << 16, "offsets are 16 bits");
const _: () = assert!(PAGE_BYTES_MIN.is_power_of_two() && PAGE_BYTES.is_power_of_two());
const _: () = assert!(DEDICATED_BYTES_MIN < PAGE_BYTES);

/// Header bit: the element has been freed.
const DEAD_BIT: u64 = 1;

/// The address of one element: page index (high 16 bits) and byte offset
/// in the page (low 16 bits). Valid until the element is freed or moved
/// by [`Arena::compact_step`] (which reports the new handle).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Handle(u32);

impl Handle {
    fn new(page: usize, offset: usize) -> Handle {
        debug_assert!(page < PAGES_MAX && offset < PAGE_BYTES);
        Handle(((page as u32) << 16) | offset as u32)
    }
    /// The page the handle addresses (one compaction step moves the
    /// elements of one page).
    pub(crate) fn page(self) -> usize {
        (self.0 >> 16) as usize
    }
    fn offset(self) -> usize {
        (self.0 & 0xFFFF) as usize
    }
    /// The handle as a plain `u32` (for tables that store raw words).
    pub fn to_u32(self) -> u32 {
        self.0
    }
    /// The inverse of [`Handle::to_u32`].
    pub fn from_u32(v: u32) -> Handle {
        Handle(v)
    }
}

#[derive(Debug, Default)]
struct Page {
    /// Elements back to back; `len()` is the used bytes.
    bytes: Vec<u8>,
    /// Bytes (headers included) of freed elements in `bytes`.
    dead: usize,
    /// Live elements in `bytes` (for uniform random picks).
    live: u32,
    /// Position order; 0 while the page slot is released.
    seq: u32,
    /// True while the page is in `Arena::sparse` (queued once) or being
    /// emptied by `Arena::compact_step`.
    queued: bool,
    /// True for a page holding one oversized element.
    dedicated: bool,
    /// Elements written to `bytes` since it was last emptied, live or dead.
    count: u32,
    /// The offset of elements 0, RANDOM_SKIP_ELEMENTS, 2 × … of `bytes`
    /// (elements never move within a page, so this only grows).
    skip: Vec<u16>,
}

/// The paged arena. See the module documentation.
#[derive(Debug)]
pub struct Arena {
    pages: Vec<Page>,
    /// Page indices in increasing `seq` (position) order; the open page,
    /// if any, is last.
    order: Vec<u16>,
    /// Released page slots, reused before the page vector grows.
    free_pages: Vec<u16>,
    /// Pages queued for compaction (dead > half), possibly stale.
    sparse: Vec<u16>,
    /// The page being emptied by [`Arena::compact_step`] and the offset
    /// its next call starts at.
    compacting: Option<(u16, u32)>,
    /// The page allocations go to; always the newest page.
    open: Option<u16>,
    next_seq: u32,
    /// Live elements.
    live: usize,
    /// Sum of page capacities, kept incrementally.
    page_bytes: usize,
    /// Heap bytes of the pages' skip vectors.
    skip_bytes: usize,
}

impl Default for Arena {
    fn default() -> Self {
        Arena::new()
    }
}

/// Reads the header at the front of `buf`: (body length, dead, header bytes).
fn header(buf: &[u8]) -> Option<(usize, bool, usize)> {
    let (v, n) = crate::varint::get(buf)?;
    let len = usize::try_from(v >> 1).ok()?;
    Some((len, v & DEAD_BIT != 0, n))
}

impl Arena {
    /// An empty arena (no allocation until the first element).
    pub fn new() -> Arena {
        Arena {
            pages: Vec::new(),
            order: Vec::new(),
            free_pages: Vec::new(),
            sparse: Vec::new(),
            compacting: None,
            open: None,
            next_seq: 1,
            live: 0,
            page_bytes: 0,
            skip_bytes: 0,
        }
    }

    /// Live elements.
    pub fn len(&self) -> usize {
        self.live
    }

    /// True when no element is live.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Heap bytes this arena holds from the allocator: page capacities
    /// plus its bookkeeping vectors (not the `Arena` struct itself, which
    /// lives inline in its owner). O(1).
    pub fn mem_bytes(&self) -> usize {
        self.page_bytes
            + self.skip_bytes
            + self.pages.capacity() * std::mem::size_of::<Page>()
            + (self.order.capacity() + self.free_pages.capacity() + self.sparse.capacity()) * 2
    }

    fn take_seq(&mut self) -> u32 {
        let s = self.next_seq;
        // 2^32 pages opened in one collection's life is 256 TiB written.
        self.next_seq = s.checked_add(1).expect("arena page sequence exhausted");
        s
    }

    /// A fresh page slot with `capacity` bytes, appended to the order.
    fn new_page(&mut self, capacity: usize, dedicated: bool) -> usize {
        let seq = self.take_seq();
        let idx = match self.free_pages.pop() {
            Some(i) => i as usize,
            None => {
                assert!(self.pages.len() < PAGES_MAX, "arena full: {PAGES_MAX} pages");
                self.pages.push(Page::default());
                self.pages.len() - 1
            }
        };
        let page = &mut self.pages[idx];
        page.bytes = Vec::with_capacity(capacity);
        page.dead = 0;
        page.live = 0;
        page.seq = seq;
        page.queued = false;
        page.dedicated = dedicated;
        self.page_bytes += page.bytes.capacity();
        self.order.push(idx as u16);
        idx
    }

    /// Gives a page slot back (its bytes freed, its position gone).
    fn release(&mut self, idx: usize) {
        if self.compacting.is_some_and(|(p, _)| p as usize == idx) {
            self.compacting = None;
        }
        let page = &mut self.pages[idx];
        self.page_bytes -= page.bytes.capacity();
        page.bytes = Vec::new();
        page.seq = 0;
        page.dead = 0;
        page.live = 0;
        page.queued = false;
        page.dedicated = false;
        page.count = 0;
        self.skip_bytes -= page.skip.capacity() * 2;
        page.skip = Vec::new();
        if self.open == Some(idx as u16) {
            self.open = None;
        }
        // Bounded by PAGES_MAX; pages are released at most once per
        // page-full of frees, so this is cheap amortised.
        if let Some(at) = self.order.iter().position(|&p| p as usize == idx) {
            self.order.remove(at);
        }
        self.free_pages.push(idx as u16);
    }

    /// Stops allocating into the open page (optionally trimming its spare
    /// capacity) and queues it for compaction if it is mostly dead: the
    /// open page is never queued while open, since compacting it would
    /// only move its live elements to a fresh, smaller page.
    fn close_open(&mut self, trim: bool) {
        let Some(o) = self.open.take() else { return };
        let page = &mut self.pages[o as usize];
        if trim {
            let before = page.bytes.capacity();
            page.bytes.shrink_to_fit();
            self.page_bytes = self.page_bytes - before + page.bytes.capacity();
        }
        if page.dead * 2 > page.bytes.len() && !page.queued {
            page.queued = true;
            self.sparse.push(o);
        }
    }

    /// Stores the concatenation of `parts` as one element.
    ///
    /// # Panics
    /// When the arena already has [`PAGES_MAX`] pages in use.
    pub fn alloc(&mut self, parts: &[&[u8]]) -> Handle {
        let body: usize = parts.iter().map(|p| p.len()).sum();
        let hdr = (body as u64) << 1;
        let need = crate::varint::len(hdr) + body;
        let (idx, offset) = if need > DEDICATED_BYTES_MIN {
            // Close the open page so later elements still land after this
            // one (positions only increase); trim its unused capacity.
            self.close_open(true);
            (self.new_page(need, true), 0)
        } else {
            let fits = self.open.is_some_and(|o| self.pages[o as usize].bytes.len() + need <= PAGE_BYTES);
            let idx = match (fits, self.open) {
                (true, Some(o)) => o as usize,
                _ => {
                    self.close_open(false);
                    let idx = self.new_page(PAGE_BYTES_MIN.max(need.next_power_of_two()), false);
                    self.open = Some(idx as u16);
                    idx
                }
            };
            let page = &mut self.pages[idx];
            let len = page.bytes.len();
            if len + need > page.bytes.capacity() {
                let before = page.bytes.capacity();
                let target = (before * 2).max(len + need).min(PAGE_BYTES);
                page.bytes.reserve_exact(target - len);
                self.page_bytes = self.page_bytes - before + page.bytes.capacity();
            }
            (idx, len)
        };
        let page = &mut self.pages[idx];
        page.live += 1;
        if page.count as usize % RANDOM_SKIP_ELEMENTS == 0 {
            let before = page.skip.capacity();
            page.skip.push(offset as u16);
            self.skip_bytes = self.skip_bytes - before * 2 + page.skip.capacity() * 2;
        }
        page.count += 1;
        crate::varint::put(&mut page.bytes, hdr);
        // Bounded by parts.len().
        for p in parts {
            page.bytes.extend_from_slice(p);
        }
        self.live += 1;
        Handle::new(idx, offset)
    }

    /// The element's bytes.
    ///
    /// # Panics
    /// If `h` does not address an element of this arena (a caller bug).
    #[inline]
    pub fn get(&self, h: Handle) -> &[u8] {
        let bytes = &self.pages[h.page()].bytes[h.offset()..];
        // A body under 64 bytes has a one-byte header (the common case: a
        // sorted set's comparisons read elements here in every descent).
        if let Some(&b) = bytes.first() {
            if b < 0x80 {
                debug_assert!(u64::from(b) & DEAD_BIT == 0, "arena handle to a freed element");
                return &bytes[1..1 + usize::from(b >> 1)];
            }
        }
        let (len, dead, n) = header(bytes).expect("arena handle addresses no element");
        debug_assert!(!dead, "arena handle to a freed element");
        &bytes[n..n + len]
    }

    /// The element's bytes, writable in place: its length, handle and
    /// position cannot change (a sorted set rewrites a member's score
    /// this way). Whatever indexes the element by its bytes is the
    /// caller's to keep true.
    ///
    /// # Panics
    /// If `h` does not address an element of this arena (a caller bug).
    pub fn get_mut(&mut self, h: Handle) -> &mut [u8] {
        let bytes = &mut self.pages[h.page()].bytes[h.offset()..];
        let (len, dead, n) = header(bytes).expect("arena handle addresses no element");
        debug_assert!(!dead, "arena handle to a freed element");
        &mut bytes[n..n + len]
    }

    /// Replaces the element's bytes with the concatenation of `parts` in
    /// place if it has exactly the old length (the handle and position
    /// stay; an HSET of a same-length value does not move the field, so
    /// it cannot run ahead of a SCAN cursor). False, changing nothing,
    /// otherwise.
    pub fn overwrite(&mut self, h: Handle, parts: &[&[u8]]) -> bool {
        let body: usize = parts.iter().map(|p| p.len()).sum();
        let bytes = &mut self.pages[h.page()].bytes;
        let Some((len, dead, n)) = header(&bytes[h.offset()..]) else {
            return false;
        };
        if dead || len != body {
            return false;
        }
        let mut at = h.offset() + n;
        // Bounded by parts.len().
        for p in parts {
            bytes[at..at + p.len()].copy_from_slice(p);
            at += p.len();
        }
        true
    }

    /// Frees the element; its bytes are reclaimed when its page is
    /// released (all dead) or compacted ([`Arena::compact_step`]).
    pub fn free(&mut self, h: Handle) {
        let idx = h.page();
        let page = &mut self.pages[idx];
        let (len, dead, n) = header(&page.bytes[h.offset()..]).expect("arena handle");
        assert!(!dead, "arena: double free");
        // The dead bit is bit 0 of the varint's first byte.
        page.bytes[h.offset()] |= DEAD_BIT as u8;
        page.dead += n + len;
        page.live -= 1;
        self.live -= 1;
        if page.dead == page.bytes.len() {
            if self.open == Some(idx as u16) {
                // The open page is all dead: reuse its capacity under a
                // fresh sequence number (still the newest page), so a
                // SCAN cursor inside its old contents stays behind it.
                let seq = self.take_seq();
                let page = &mut self.pages[idx];
                page.bytes.clear();
                page.dead = 0;
                page.seq = seq;
                page.queued = false;
                page.count = 0;
                page.skip.clear();
            } else {
                self.release(idx);
            }
        } else if page.dead * 2 > page.bytes.len() && !page.queued && self.open != Some(idx as u16) {
            page.queued = true;
            self.sparse.push(idx as u16);
        }
    }

    /// True if a page is waiting for [`Arena::compact_step`].
    pub fn needs_compaction(&self) -> bool {
        self.compacting.is_some() || !self.sparse.is_empty()
    }

    /// Moves up to [`COMPACT_MOVES_MAX`] live elements of a mostly-dead
    /// page (dead bytes > half its used bytes) to the open page, marking
    /// each dead where it was, and releases the page once it is empty;
    /// calls `relocate(old, new, bytes)` for each moved element so the
    /// caller can re-point whatever holds `old`. The page being emptied is
    /// continued before another is taken from the queue. Does nothing if
    /// no page qualifies. Bound: [`COMPACT_MOVES_MAX`] elements and
    /// ≤ [`COMPACT_SKIPS_MAX`] stale queue entries. Call it after every
    /// `free`.
    pub fn compact_step(&mut self, relocate: &mut dyn FnMut(Handle, Handle, &[u8])) {
        let (idx, mut at) = match self.compacting {
            Some((p, at)) => (p as usize, at as usize),
            None => {
                let mut victim = None;
                // Bounded: COMPACT_SKIPS_MAX stale entries, then one victim.
                for _ in 0..=COMPACT_SKIPS_MAX {
                    let Some(idx) = self.sparse.pop() else { return };
                    let page = &mut self.pages[idx as usize];
                    if page.queued && page.seq != 0 {
                        victim = Some(idx as usize);
                        break;
                    }
                }
                let Some(idx) = victim else { return };
                if self.open == Some(idx as u16) {
                    self.open = None;
                }
                // `queued` stays set while the page is emptied, so `free`
                // does not queue it again.
                (idx, 0)
            }
        };
        // Taken out while elements move (alloc writes other pages);
        // restored below.
        let mut old = std::mem::take(&mut self.pages[idx].bytes);
        let (mut moved, mut dead_bytes) = (0usize, 0usize);
        // Bounded: COMPACT_MOVES_MAX live elements, and the page's bytes.
        while at < old.len() && moved < COMPACT_MOVES_MAX {
            let Some((len, dead, n)) = header(&old[at..]) else {
                at = old.len();
                break;
            };
            if !dead {
                old[at] |= DEAD_BIT as u8;
                moved += 1;
                dead_bytes += n + len;
                self.live -= 1; // alloc counts it again
                let body = &old[at + n..at + n + len];
                let new = self.alloc(&[body]);
                relocate(Handle::new(idx, at), new, body);
            }
            at += n + len;
        }
        let page = &mut self.pages[idx];
        page.bytes = old;
        page.dead += dead_bytes;
        page.live -= moved as u32;
        if at >= page.bytes.len() {
            self.release(idx);
        } else {
            self.compacting = Some((idx as u16, at as u32));
        }
    }

    /// A uniformly random live element, chosen by `r` (a random word), or
    /// None if the arena is empty. The per-page live counts pick the page
    /// (so each page in proportion to its live elements; O(pages)), then
    /// rejection sampling picks inside it: a uniform element slot, live
    /// or dead, reached through the page's skip offsets in at most
    /// [`RANDOM_SKIP_ELEMENTS`] steps, kept if live (so uniform among the
    /// page's live elements). A page is at most about half dead, so
    /// [`RANDOM_TRIES_MAX`] rounds almost never run out; then it counts
    /// live elements to the `k`-th, which is exact but walks the page.
    /// Why: SPOP and SRANDMEMBER on a large set used to walk ~half a page
    /// (a thousand elements) per pick (docs/bench-log/2026-11-25-collections.md
    /// § After transactions, the SPOP pick and the B+tree fix).
    pub fn random(&self, r: u64) -> Option<Handle> {
        if self.live == 0 {
            return None;
        }
        let mut k = (r % self.live as u64) as usize;
        // Bounded by the pages (≤ PAGES_MAX), then one page's elements.
        for &idx in &self.order {
            let page = &self.pages[idx as usize];
            if k >= page.live as usize {
                k -= page.live as usize;
                continue;
            }
            // An independent stream for the slot (splitmix64 of r).
            let mut x = r;
            for _ in 0..RANDOM_TRIES_MAX {
                x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
                let mut z = x;
                z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                z ^= z >> 31;
                let slot = (z % u64::from(page.count.max(1))) as usize;
                let Some(&start) = page.skip.get(slot / RANDOM_SKIP_ELEMENTS) else { break };
                let mut walk = PageIter { bytes: &page.bytes, at: start as usize };
                // Bounded by RANDOM_SKIP_ELEMENTS steps.
                if let Some((at, _, dead)) = walk.nth(slot % RANDOM_SKIP_ELEMENTS) {
                    if !dead {
                        return Some(Handle::new(idx as usize, at));
                    }
                }
            }
            for (at, _, dead) in (PageIter { bytes: &page.bytes, at: 0 }) {
                if !dead {
                    if k == 0 {
                        return Some(Handle::new(idx as usize, at));
                    }
                    k -= 1;
                }
            }
        }
        debug_assert!(false, "arena live counts disagree");
        None
    }

    /// Every live element in position order (handle, bytes).
    pub fn iter(&self) -> impl Iterator<Item = (Handle, &[u8])> + '_ {
        self.order.iter().flat_map(move |&idx| {
            let bytes = &self.pages[idx as usize].bytes;
            PageIter { bytes, at: 0 }
                .filter_map(move |(at, body, dead)| (!dead).then_some((Handle::new(idx as usize, at), body)))
        })
    }

    /// One SCAN step: calls `f` on live elements at positions ≥ `cursor`
    /// in position order, at most `count` of them (at least 1) and
    /// stepping over at most `count` × [`SCAN_DEAD_PER_LIVE_MAX`] dead
    /// ones, and returns the cursor to continue from, or 0 when the end
    /// was reached. Cursor 0 starts a scan. Any `u64` is accepted (a
    /// forged cursor resumes at the next element boundary).
    ///
    /// Guarantee (Redis's SCAN): an element present from the call with
    /// cursor 0 until the call returning 0 is passed to `f` at least
    /// once, because positions only increase (module docs). Elements may
    /// be reported more than once if compaction moves them ahead.
    ///
    /// Termination: like Redis's, only if the collection stays bounded —
    /// and here also only if the scan outpaces the elements placed at the
    /// end meanwhile (new ones, rewrites that change an element's length,
    /// compaction moves, which are at most the bytes freed). A scan racing
    /// a write load larger than its COUNT per call may not finish.
    pub fn scan(&self, cursor: u64, count: usize, f: &mut dyn FnMut(Handle, &[u8])) -> u64 {
        let want_seq = (cursor >> 32) as u32;
        let want_off = (cursor & 0xFFFF_FFFF) as usize;
        let mut live_left = count.max(1);
        let mut dead_left = live_left.saturating_mul(SCAN_DEAD_PER_LIVE_MAX);
        // First page at or after the cursor's sequence number.
        let start = self.order.partition_point(|&p| self.pages[p as usize].seq < want_seq);
        // Bounded by the pages; each page's walk by its bytes; stops on the
        // live/dead budgets.
        for &idx in &self.order[start..] {
            let page = &self.pages[idx as usize];
            let skip_below = if page.seq == want_seq { want_off } else { 0 };
            for (at, body, dead) in (PageIter { bytes: &page.bytes, at: 0 }) {
                if at < skip_below {
                    continue;
                }
                if live_left == 0 || dead_left == 0 {
                    return (u64::from(page.seq) << 32) | at as u64;
                }
                if dead {
                    dead_left -= 1;
                } else {
                    live_left -= 1;
                    f(Handle::new(idx as usize, at), body);
                }
            }
        }
        0
    }
}

/// Walks one page's elements: (offset, body, dead). Stops at the end or
/// at a malformed header (which `alloc` never writes).
struct PageIter<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Iterator for PageIter<'a> {
    type Item = (usize, &'a [u8], bool);
    fn next(&mut self) -> Option<Self::Item> {
        let rest = self.bytes.get(self.at..)?;
        let (len, dead, n) = header(rest)?;
        let body = rest.get(n..n.checked_add(len)?)?;
        let at = self.at;
        self.at += n + len;
        Some((at, body, dead))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// xorshift64*: a tiny deterministic generator for the model test.
    fn rng(seed: u64) -> impl FnMut() -> u64 {
        let mut s = seed | 1;
        move || {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            s.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
    }

    #[test]
    fn alloc_get_free() {
        let mut a = Arena::new();
        assert_eq!(a.mem_bytes(), 0);
        let h1 = a.alloc(&[b"field", b"value"]);
        let h2 = a.alloc(&[]);
        let big = vec![7u8; DEDICATED_BYTES_MIN + 1];
        let h3 = a.alloc(&[&big]);
        assert_eq!(a.get(h1), b"fieldvalue");
        assert!(a.overwrite(h1, &[b"FIELD", b"VALUE"]));
        assert_eq!(a.get(h1), b"FIELDVALUE");
        assert!(!a.overwrite(h1, &[b"longer value"]));
        assert_eq!(a.get(h1), b"FIELDVALUE");
        a.get_mut(h1)[..5].copy_from_slice(b"fIeLd");
        assert_eq!(a.get(h1), b"fIeLdVALUE");
        assert_eq!(a.get(h3), &big[..], "a write in place stays inside its element");
        assert_eq!(a.get(h2), b"");
        assert_eq!(a.get(h3), &big[..]);
        assert_eq!(a.len(), 3);
        a.free(h3);
        assert_eq!(a.len(), 2);
        assert!(a.mem_bytes() < DEDICATED_BYTES_MIN, "dedicated page released");
        a.free(h1);
        a.free(h2);
        assert!(a.is_empty());
    }

    #[test]
    fn page_growth_is_geometric_and_capped() {
        let mut a = Arena::new();
        let body = [1u8; 100];
        // Bounded: 5,000 small elements (~7.7 pages).
        let hs: Vec<Handle> = (0..5_000).map(|_| a.alloc(&[&body])).collect();
        let used = 5_000 * 101;
        let mem = a.mem_bytes();
        assert!(mem >= used && mem < used + 2 * PAGE_BYTES, "{mem} vs {used}");
        assert!(hs.iter().all(|&h| a.get(h) == body));
    }

    #[test]
    fn compaction_reclaims_and_relocates() {
        let mut a = Arena::new();
        // Bounded: 20,000 elements, ~10 pages.
        let hs: Vec<Handle> = (0..20_000u32).map(|i| a.alloc(&[&i.to_le_bytes(), &[0; 28]])).collect();
        let full = a.mem_bytes();
        let mut table: BTreeMap<u32, Handle> = hs.iter().enumerate().map(|(i, &h)| (i as u32, h)).collect();
        // Free 3 of every 4 elements, compacting after each free.
        for i in 0..20_000u32 {
            if i % 4 != 0 {
                a.free(table.remove(&i).unwrap());
                a.compact_step(&mut |old, new, bytes| {
                    let k = u32::from_le_bytes(bytes[..4].try_into().unwrap());
                    let slot = table.get_mut(&k).unwrap();
                    assert_eq!(*slot, old);
                    *slot = new;
                });
            }
        }
        for (&k, &h) in &table {
            assert_eq!(&a.get(h)[..4], &k.to_le_bytes());
        }
        let mem = a.mem_bytes();
        assert!(mem * 2 < full, "{mem} of {full}");
        assert_eq!(a.len(), 5_000);
    }

    /// A page is emptied a few elements a call: the ones not moved yet stay
    /// readable where they are; the page goes once empty, whether the last
    /// step or a `free` empties it; then the next queued page is taken.
    #[test]
    fn compaction_is_incremental() {
        let mut a = Arena::new();
        // Bounded: 6,000 elements of 32 bytes, ~3 full pages.
        let hs: Vec<Handle> = (0..6_000u32).map(|i| a.alloc(&[&i.to_le_bytes(), &[7; 28]])).collect();
        let first_page = hs[0].page();
        let on_first: Vec<usize> = (0..hs.len()).filter(|&i| hs[i].page() == first_page).collect();
        assert!(on_first.len() > 4 * COMPACT_MOVES_MAX);
        // Free all but the last 2*MOVES+1 of the first page's elements:
        // more than half dead, so it is queued.
        let keep = 2 * COMPACT_MOVES_MAX + 1;
        let (doomed, kept) = on_first.split_at(on_first.len() - keep);
        for &i in doomed {
            a.free(hs[i]);
        }
        assert!(a.needs_compaction());
        let mut moved = Vec::new();
        a.compact_step(&mut |old, new, _| moved.push((old, new)));
        assert_eq!(moved.len(), COMPACT_MOVES_MAX, "one call moves at most COMPACT_MOVES_MAX");
        assert!(a.needs_compaction(), "the page is not empty yet");
        for &(old, new) in &moved {
            assert_eq!(old.page(), first_page);
            assert_ne!(new.page(), first_page);
            let i = hs.iter().position(|&h| h == old).expect("a moved element was allocated");
            assert!(kept.contains(&i), "only live elements move");
            assert_eq!(&a.get(new)[..4], &(i as u32).to_le_bytes());
        }
        // Not moved yet: readable at the old handles.
        let rest: Vec<usize> = kept.iter().copied().filter(|&i| moved.iter().all(|m| m.0 != hs[i])).collect();
        assert_eq!(rest.len(), keep - COMPACT_MOVES_MAX);
        for &i in &rest {
            assert_eq!(&a.get(hs[i])[..4], &(i as u32).to_le_bytes());
        }
        // The rest freed by hand: the page is released by free, and
        // compaction has nothing left to do.
        let len = a.len();
        for &i in &rest {
            a.free(hs[i]);
        }
        assert_eq!(a.len(), len - rest.len());
        assert!(!a.needs_compaction());
        a.compact_step(&mut |_, _, _| panic!("nothing to move"));
        assert_eq!(a.len(), 6_000 - doomed.len() - rest.len());
        // Every other element is where it was.
        for (i, &h) in hs.iter().enumerate().filter(|&(_, h)| h.page() != first_page) {
            assert_eq!(&a.get(h)[..4], &(i as u32).to_le_bytes());
        }
    }

    /// Random alloc/free/compact against a model; every element readable,
    /// memory bounded by twice the live bytes plus a page, scans complete.
    #[test]
    fn model() {
        for seed in 1..=20u64 {
            let mut r = rng(seed);
            let mut a = Arena::new();
            let mut model: BTreeMap<u64, (Handle, Vec<u8>)> = BTreeMap::new();
            let mut next_id = 0u64;
            // Bounded: 4,000 operations per seed.
            for _ in 0..4_000 {
                let op = r() % 10;
                if op < 5 || model.is_empty() {
                    let len = match r() % 20 {
                        0 => (r() % (2 * DEDICATED_BYTES_MIN as u64)) as usize,
                        _ => (r() % 200) as usize,
                    };
                    let mut body = next_id.to_le_bytes().to_vec();
                    body.resize(8 + len, (next_id % 251) as u8);
                    let h = a.alloc(&[&body[..3], &body[3..]]);
                    model.insert(next_id, (h, body));
                    next_id += 1;
                } else {
                    let k = *model.keys().nth((r() % model.len() as u64) as usize).unwrap();
                    let (h, _) = model.remove(&k).unwrap();
                    a.free(h);
                    a.compact_step(&mut |old, new, bytes| {
                        let id = u64::from_le_bytes(bytes[..8].try_into().unwrap());
                        let e = model.get_mut(&id).unwrap();
                        assert_eq!(e.0, old);
                        assert_eq!(e.1, bytes);
                        e.0 = new;
                    });
                }
                assert_eq!(a.len(), model.len());
                if let Some(h) = a.random(r()) {
                    let id = u64::from_le_bytes(a.get(h)[..8].try_into().unwrap());
                    assert_eq!(model[&id].0, h, "random picks a live element");
                }
                assert_eq!(a.random(r()).is_none(), model.is_empty());
            }
            // Drain the queue, then the bound holds.
            for _ in 0..PAGES_MAX {
                if !a.needs_compaction() {
                    break;
                }
                a.compact_step(&mut |_, new, bytes| {
                    let id = u64::from_le_bytes(bytes[..8].try_into().unwrap());
                    model.get_mut(&id).unwrap().0 = new;
                });
            }
            let live: usize = model.values().map(|(_, b)| b.len() + 3).sum();
            assert!(a.mem_bytes() <= 2 * live + 2 * PAGE_BYTES + 4096, "seed {seed}");
            for (h, body) in model.values() {
                assert_eq!(a.get(*h), &body[..]);
            }
            let mut seen: Vec<Vec<u8>> = a.iter().map(|(_, b)| b.to_vec()).collect();
            seen.sort();
            let mut want: Vec<Vec<u8>> = model.values().map(|(_, b)| b.clone()).collect();
            want.sort();
            assert_eq!(seen, want);
        }
    }

    /// Positions only increase: a scan interleaved with frees, compaction
    /// and inserts returns every element present throughout.
    #[test]
    fn random_is_uniform_over_live_elements() {
        // Elements of varying sizes over several pages, every third freed
        // (so pages hold dead slots the rejection must skip); with a fixed
        // seed the counts are deterministic, and each must be near the mean.
        let mut a = Arena::new();
        let mut live = Vec::new();
        for i in 0..3000u32 {
            let body = vec![b'x'; 10 + (i as usize * 7) % 90];
            let h = a.alloc(&[&body]);
            if i % 3 == 0 {
                a.free(h);
            } else {
                live.push(h);
            }
        }
        let mut counts: std::collections::HashMap<Handle, u32> = std::collections::HashMap::new();
        let mut r = rng(7);
        let draws = live.len() as u32 * 150;
        for _ in 0..draws {
            let h = a.random(r()).expect("not empty");
            *counts.entry(h).or_default() += 1;
        }
        assert_eq!(counts.len(), live.len(), "every live element is picked, no dead one");
        for h in &live {
            let c = counts[h];
            assert!((90..=210).contains(&c), "{h:?} picked {c} times of a mean of 150");
        }
    }

    #[test]
    fn scan_guarantee_under_churn() {
        for seed in 1..=20u64 {
            let mut r = rng(seed);
            let mut a = Arena::new();
            let mut model: BTreeMap<u64, Handle> = BTreeMap::new();
            let mut next_id = 0u64;
            // Bounded: 3,000 initial elements.
            for _ in 0..3_000 {
                let body = next_id.to_le_bytes();
                model.insert(next_id, a.alloc(&[&body, &[0; 20]]));
                next_id += 1;
            }
            let stable: Vec<u64> = model.keys().copied().filter(|k| k % 3 == 0).collect();
            let mut seen = std::collections::BTreeSet::new();
            let mut cursor = 0;
            // Bounded: at most 100,000 scan steps.
            for step in 0..100_000 {
                cursor = a.scan(cursor, 1 + (r() % 7) as usize, &mut |_, b| {
                    seen.insert(u64::from_le_bytes(b[..8].try_into().unwrap()));
                });
                // Churn: free a non-stable element, compact, insert one.
                for _ in 0..3 {
                    let cand = r() % next_id;
                    if cand % 3 != 0 {
                        if let Some(h) = model.remove(&cand) {
                            a.free(h);
                            a.compact_step(&mut |_, new, b| {
                                let id = u64::from_le_bytes(b[..8].try_into().unwrap());
                                *model.get_mut(&id).unwrap() = new;
                            });
                        }
                    }
                }
                if r() % 2 == 0 {
                    let body = next_id.to_le_bytes();
                    model.insert(next_id, a.alloc(&[&body, &[0; 20]]));
                    next_id += 1;
                }
                if cursor == 0 {
                    assert!(step > 0);
                    break;
                }
            }
            assert_eq!(cursor, 0, "scan finished");
            for k in stable {
                assert!(seen.contains(&k), "seed {seed}: {k} missed");
            }
        }
    }

    #[test]
    fn forged_cursor_does_not_panic() {
        let mut a = Arena::new();
        // Bounded: 100 elements.
        for i in 0..100u8 {
            a.alloc(&[&[i; 10]]);
        }
        let mut r = rng(9);
        // Bounded: 1,000 forged cursors.
        for _ in 0..1_000 {
            let c = ((r() % 4) << 32) | (r() % 2000);
            a.scan(c, 5, &mut |_, b| assert_eq!(b.len(), 10));
        }
    }
}
