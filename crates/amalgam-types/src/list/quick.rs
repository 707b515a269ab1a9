//! The large list: a deque of chunks (Redis's quicklist), each with its
//! entry count so a positional operation skips whole chunks.
//!
//! * Pushes and pops at either end touch one end chunk: O(1) amortized
//!   (see `chunk.rs` for the in-chunk moves). A back pop needs the back
//!   entry's offset, and entries parse forwards only, so the offsets of the
//!   back chunk's entries are cached in `tail` (built by one O(chunk) scan
//!   on the first back pop, then popped one per back pop; any other edit
//!   of the back chunk drops the cache).
//! * Positional reads (LINDEX, LSET, LRANGE's start) walk chunk counts
//!   from the nearer end: at most `len / 2 / entries-per-chunk` chunks,
//!   then at most one chunk's entries.
//! * A middle edit (LSET, LINSERT, LREM, LTRIM) rewrites the one chunk it
//!   touches: O(chunk bytes). A chunk that overflows splits into halves;
//!   neighbours that fit one chunk together merge.

use std::collections::VecDeque;

use super::chunk::{entry_size, to_u32, Chunk, Limit};

#[derive(Clone, Debug)]
pub(crate) struct Quick {
    /// Never empty chunks; the deque is non-empty while `len > 0`.
    pub(crate) chunks: VecDeque<Chunk>,
    /// Entries over all chunks.
    pub(crate) len: usize,
    pub(crate) limit: Limit,
    /// When `tail_valid`: offsets of the back chunk's entries, front to
    /// back, so a back pop is O(1).
    tail: Vec<u32>,
    tail_valid: bool,
    /// Sum of the chunks' buffer capacities (kept incrementally).
    chunk_bytes: usize,
}

impl Quick {
    pub(crate) fn new(limit: Limit) -> Quick {
        Quick { chunks: VecDeque::new(), len: 0, limit, tail: Vec::new(), tail_valid: false, chunk_bytes: 0 }
    }

    /// A large list holding `chunks` (each within `limit`, none empty).
    pub(crate) fn from_chunks(limit: Limit, chunks: Vec<Chunk>) -> Quick {
        let mut q = Quick::new(limit);
        q.len = chunks.iter().map(Chunk::len).sum();
        q.chunk_bytes = chunks.iter().map(|c| c.buf.capacity()).sum();
        q.chunks = chunks.into();
        q
    }

    /// Allocator bytes held, besides the struct itself.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.chunk_bytes
            + self.chunks.capacity() * std::mem::size_of::<Chunk>()
            + self.tail.capacity() * std::mem::size_of::<u32>()
    }

    /// Runs `f` on chunk `ci`, keeping `chunk_bytes` true.
    fn edit<R>(&mut self, ci: usize, f: impl FnOnce(&mut Chunk) -> R) -> R {
        let c = &mut self.chunks[ci];
        let before = c.buf.capacity();
        let r = f(c);
        self.chunk_bytes = self.chunk_bytes - before + c.buf.capacity();
        r
    }

    fn remove_chunk(&mut self, ci: usize) {
        if let Some(c) = self.chunks.remove(ci) {
            self.chunk_bytes -= c.buf.capacity();
        }
        if ci >= self.chunks.len() {
            self.drop_tail_cache();
        }
    }

    fn insert_chunk(&mut self, ci: usize, c: Chunk) {
        self.chunk_bytes += c.buf.capacity();
        self.chunks.insert(ci, c);
    }

    fn drop_tail_cache(&mut self) {
        self.tail_valid = false;
        self.tail.clear();
    }

    pub(crate) fn push_back(&mut self, v: &[u8]) {
        let limit = self.limit;
        if let Some(last) = self.chunks.len().checked_sub(1) {
            let (old_len, old_head) = (self.chunks[last].buf.len(), self.chunks[last].head);
            if self.edit(last, |c| c.try_push_back(v, limit)) {
                self.len += 1;
                if self.tail_valid && self.chunks[last].head == old_head {
                    self.tail.push(to_u32(old_len));
                } else {
                    self.drop_tail_cache();
                }
                return;
            }
            // The old back chunk is sealed: give back growth slack (only
            // count-bounded chunks have more than one entry's worth).
            let slack = self.chunks[last].buf.capacity() - self.chunks[last].buf.len();
            if slack > self.chunks[last].buf.capacity() / 8 {
                self.edit(last, |c| c.buf.shrink_to_fit());
            }
        }
        let mut c = Chunk::for_back(limit.initial_capacity(entry_size(v.len())));
        let pushed = c.try_push_back(v, limit);
        debug_assert!(pushed, "an empty chunk takes any entry");
        self.insert_chunk(self.chunks.len(), c);
        self.drop_tail_cache();
        self.len += 1;
    }

    /// Gives the front chunk `bytes` of room before its first entry
    /// (within the chunk limit), its entries moved to the end: a list
    /// converted from its exact-size compact bytes (`List::to_large`)
    /// would otherwise start a new chunk on its next front push and drop
    /// it on the next front pop, allocating and zeroing a whole chunk
    /// per push on a queue that pushes and pops at the front.
    pub(crate) fn front_room(&mut self, bytes: usize) {
        if self.chunks.is_empty() {
            return;
        }
        self.drop_tail_cache();
        let max = self.limit.bytes_max();
        self.edit(0, |c| {
            let live = c.live_len();
            let want = (live + bytes).min(max.max(live));
            if c.buf.capacity() < want {
                c.buf.reserve_exact(want - c.buf.len());
            } else {
                // The compact bytes' vector may have doubled for the write
                // that converts them: the room asked for, no more.
                c.buf.shrink_to(want);
            }
            c.move_to_end();
        });
    }

    pub(crate) fn push_front(&mut self, v: &[u8]) {
        let limit = self.limit;
        if !self.chunks.is_empty() {
            if self.chunks.len() == 1 {
                self.drop_tail_cache();
            }
            if self.edit(0, |c| c.try_push_front(v, limit)) {
                self.len += 1;
                return;
            }
        }
        let mut c = Chunk::for_front(limit.initial_capacity(entry_size(v.len())));
        let pushed = c.try_push_front(v, limit);
        debug_assert!(pushed, "an empty chunk takes any entry");
        self.insert_chunk(0, c);
        self.len += 1;
    }

    pub(crate) fn pop_front(&mut self) -> Option<Vec<u8>> {
        if self.chunks.len() == 1 {
            self.drop_tail_cache();
        }
        let v = self.edit(0, Chunk::pop_front)?;
        self.len -= 1;
        if self.chunks[0].count == 0 {
            self.remove_chunk(0);
        }
        Some(v)
    }

    pub(crate) fn pop_back(&mut self) -> Option<Vec<u8>> {
        let last = self.chunks.len().checked_sub(1)?;
        if !self.tail_valid {
            self.chunks[last].offsets(&mut self.tail);
            self.tail_valid = true;
        }
        let off = self.tail.pop()? as usize;
        let v = self.edit(last, |c| c.pop_back_at(off))?;
        self.len -= 1;
        if self.chunks[last].count == 0 {
            self.remove_chunk(last);
        }
        Some(v)
    }

    /// The chunk holding entry `i` (< len) and `i`'s index inside it,
    /// walking counts from the nearer end.
    pub(crate) fn locate(&self, i: usize) -> (usize, usize) {
        if i < self.len / 2 {
            let mut rest = i;
            // Bounded: one step per chunk.
            for (ci, c) in self.chunks.iter().enumerate() {
                if rest < c.len() {
                    return (ci, rest);
                }
                rest -= c.len();
            }
        } else {
            let mut from_back = self.len - 1 - i;
            // Bounded: one step per chunk.
            for (ci, c) in self.chunks.iter().enumerate().rev() {
                if from_back < c.len() {
                    return (ci, c.len() - 1 - from_back);
                }
                from_back -= c.len();
            }
        }
        unreachable!("index below len is in some chunk")
    }

    /// Puts `built` where chunk `ci` was (and merges the seams).
    fn replace(&mut self, ci: usize, built: Vec<Chunk>) {
        let n = built.len();
        self.remove_chunk(ci);
        for (k, c) in built.into_iter().enumerate() {
            self.insert_chunk(ci + k, c);
        }
        if ci + n >= self.chunks.len() {
            self.drop_tail_cache();
        }
        // Seams: after the last new chunk, then before the first.
        if n > 0 {
            self.try_merge(ci + n - 1);
        }
        if ci > 0 {
            self.try_merge(ci - 1);
        }
    }

    /// Merges chunks `ci` and `ci + 1` if they fit one chunk together.
    fn try_merge(&mut self, ci: usize) -> bool {
        if ci + 1 >= self.chunks.len() {
            return false;
        }
        let (a, b) = (&self.chunks[ci], &self.chunks[ci + 1]);
        if !self.limit.fits(a.len() + b.len(), a.live_len() + b.live_len()) {
            return false;
        }
        let merged = Chunk::from_entries(a.iter().chain(b.iter()));
        self.remove_chunk(ci + 1);
        self.remove_chunk(ci);
        self.insert_chunk(ci, merged);
        if ci + 1 >= self.chunks.len() {
            self.drop_tail_cache();
        }
        true
    }

    pub(crate) fn set(&mut self, i: usize, v: &[u8]) {
        let (ci, j) = self.locate(i);
        let c = &self.chunks[ci];
        let built = build_chunks(self.limit, c.iter().enumerate().map(|(k, e)| if k == j { v } else { e }));
        self.replace(ci, built);
    }

    /// Inserts `v` so it becomes entry `i` (<= len).
    pub(crate) fn insert_at(&mut self, i: usize, v: &[u8]) {
        if i == 0 {
            return self.push_front(v);
        }
        if i == self.len {
            return self.push_back(v);
        }
        let (ci, j) = self.locate(i);
        let c = &self.chunks[ci];
        let built = build_chunks(self.limit, c.iter().take(j).chain(std::iter::once(v)).chain(c.iter().skip(j)));
        self.replace(ci, built);
        self.len += 1;
    }

    /// Removes the entries of chunk `ci` whose indexes (inside it) are in
    /// `drop` (ascending), merging around it.
    pub(crate) fn remove_in_chunk(&mut self, ci: usize, drop: &[usize]) {
        if drop.is_empty() {
            return;
        }
        self.len -= drop.len();
        let c = &self.chunks[ci];
        if drop.len() == c.len() {
            self.remove_chunk(ci);
            if ci > 0 {
                self.try_merge(ci - 1);
            }
            return;
        }
        let mut d = drop.iter().peekable();
        let kept = c.iter().enumerate().filter_map(|(k, e)| {
            if d.peek() == Some(&&k) {
                d.next();
                None
            } else {
                Some(e)
            }
        });
        let built = vec![Chunk::from_entries(kept)];
        self.replace(ci, built);
    }

    /// Keeps entries `start ..= stop` (valid, non-empty range).
    pub(crate) fn keep(&mut self, start: usize, stop: usize) {
        let mut front = start;
        let mut back = self.len - 1 - stop;
        // Whole chunks first. Bounded: one step per chunk.
        while front > 0 && self.chunks[0].len() <= front {
            front -= self.chunks[0].len();
            self.len -= self.chunks[0].len();
            self.remove_chunk(0);
        }
        while back > 0 {
            let last = self.chunks.len() - 1;
            if self.chunks[last].len() > back {
                break;
            }
            back -= self.chunks[last].len();
            self.len -= self.chunks[last].len();
            self.remove_chunk(last);
        }
        // Then inside the end chunks: the front by advancing its head, the
        // back by truncating.
        if front > 0 {
            if self.chunks.len() == 1 {
                self.drop_tail_cache();
            }
            self.len -= front;
            self.edit(0, |c| {
                // Bounded: `front` < the chunk's entries.
                for _ in 0..front {
                    c.pop_front();
                }
            });
        }
        if back > 0 {
            self.drop_tail_cache();
            let last = self.chunks.len() - 1;
            self.len -= back;
            self.edit(last, |c| {
                let mut offs = Vec::new();
                c.offsets(&mut offs);
                let keep = c.len() - back;
                c.buf.truncate(offs[keep] as usize);
                c.count = to_u32(keep);
            });
        }
        if self.chunks.len() >= 2 {
            self.try_merge(self.chunks.len() - 2);
        }
        if self.chunks.len() >= 2 {
            self.try_merge(0);
        }
    }
}

/// Chunks holding `entries`: one if they fit, else filled to half the
/// limit each so the next inserts on either side fit without a split.
pub(crate) fn build_chunks<'a>(limit: Limit, entries: impl IntoIterator<Item = &'a [u8]>) -> Vec<Chunk> {
    let all: Vec<&[u8]> = entries.into_iter().collect();
    let bytes: usize = all.iter().map(|e| entry_size(e.len())).sum();
    if limit.fits(all.len(), bytes) {
        if all.is_empty() {
            return Vec::new();
        }
        return vec![Chunk::from_entries(all)];
    }
    let half = match limit {
        Limit::Entries(n) => Limit::Entries((n / 2).max(1)),
        Limit::Bytes(b) => Limit::Bytes(b / 2),
    };
    let (half_count, half_bytes) = match half {
        Limit::Entries(n) => (n, super::chunk::SAFETY_BYTES_MAX / 2),
        Limit::Bytes(b) => (usize::MAX, b),
    };
    let mut out = Vec::new();
    let mut from = 0;
    let (mut count, mut size) = (0usize, 0usize);
    // Bounded: one step per entry.
    for (k, e) in all.iter().enumerate() {
        let s = entry_size(e.len());
        if count > 0 && (count + 1 > half_count || size + s > half_bytes) {
            out.push(Chunk::from_entries(all[from..k].iter().copied()));
            from = k;
            count = 0;
            size = 0;
        }
        count += 1;
        size += s;
    }
    if from < all.len() {
        out.push(Chunk::from_entries(all[from..].iter().copied()));
    }
    out
}
