//! One chunk of list entries (Redis's listpack node inside a quicklist).
//!
//! ```text
//! buf:  [ dead or reserved ... | len entry | len entry | ... ]
//!        0                 head                        buf.len()   capacity
//! entry = [varint byte length][bytes]
//! ```
//!
//! Entries are parsed forwards only (no back-length: 1 byte per item
//! saved, which is what keeps a 22-byte item at 23 bytes). `head` lets a
//! front pop advance instead of moving the rest of the chunk, and lets a
//! chunk built by front pushes fill downwards from its end. The space
//! before `head` is reclaimed by moving the live entries only when a push
//! needs it AND the move leaves at least a quarter of the chunk free
//! ([`MOVE_FREE_FRACTION`]), so a queue that pushes at one end and pops
//! at the other cannot move a full chunk on every push.
//!
//! ## Moves
//! A chunk short of room grows by a quarter of its capacity ([`GROWTH_QUARTERS`])
//! up to the limit's size, then a new chunk starts. A move for a push
//! leaves all the free space at the pushing end when the other end is
//! untouched (a front push with no room behind the entries, a back push
//! with none in front), else half at each end: a one-chunk list pushed
//! at both ends would otherwise move all its entries to one end and back
//! on every push. Either way a move (with the growth before it when the
//! free space is short) leaves a share of the chunk free at the pushing
//! end, so moves stay amortized O(1) per pushed byte.

use crate::varint;

/// A move to reclaim dead space happens only when at least
/// `capacity / MOVE_FREE_FRACTION` bytes are free after it, so the move's
/// cost (at most the chunk's bytes) is paid for by that many bytes of
/// pushes that need no move.
pub(crate) const MOVE_FREE_FRACTION: usize = 4;

/// Least room a list moved to the large form gets in front of its
/// entries (`List::to_large`).
pub(crate) const FRONT_ROOM_BYTES_MIN: usize = 256;

/// A chunk below its limit's size that runs out of room grows to this
/// many quarters of its capacity (1.25×), within the limit: a list moved
/// to the large form with its compact bytes (`List::to_large_long`)
/// grows in steps of a quarter of its size, as jemalloc's size classes
/// do (what Redis's listpack pays), instead of starting a chunk of the
/// limit's whole 8 KiB for its next entry.
pub(crate) const GROWTH_QUARTERS: usize = 5;

/// The capacity a chunk of capacity `cap` grows to: 1.25× within
/// `bytes_max`, and at least `need` (its live bytes and the new entry).
/// Never below `cap` when `cap < bytes_max` (the quarter is taken after
/// the multiplication: `cap / 4 * 5` is below `cap` for 1–3, 6, 7, 11),
/// so a chunk with dead bytes in front still has room for them.
#[inline]
fn grown(cap: usize, need: usize, bytes_max: usize) -> usize {
    (cap.saturating_mul(GROWTH_QUARTERS) / 4).min(bytes_max).max(need)
}

/// Bytes an entry of `n` bytes takes in a chunk.
#[inline]
pub(crate) fn entry_size(n: usize) -> usize {
    varint::len(n as u64) + n
}

/// Appends an entry.
#[inline]
pub(crate) fn put_entry(out: &mut Vec<u8>, v: &[u8]) {
    varint::put(out, v.len() as u64);
    out.extend_from_slice(v);
}

/// The entry at `off` in `buf` and the offset after it; None if the bytes
/// there are not an entry (never panics).
#[inline]
pub(crate) fn entry_at(buf: &[u8], off: usize) -> Option<(&[u8], usize)> {
    let (n, w) = varint::get(buf.get(off..)?)?;
    let start = off + w;
    let end = start.checked_add(usize::try_from(n).ok()?)?;
    Some((buf.get(start..end)?, end))
}

/// Borrowed forward iteration over at most `left` entries of a byte run;
/// stops early (never panics) on bytes that are not entries.
#[derive(Clone, Debug)]
pub struct Entries<'a> {
    pub(crate) buf: &'a [u8],
    pub(crate) off: usize,
    pub(crate) left: usize,
}

impl<'a> Entries<'a> {
    pub(crate) fn new(buf: &'a [u8], left: usize) -> Self {
        Entries { buf, off: 0, left }
    }
}

impl<'a> Iterator for Entries<'a> {
    type Item = &'a [u8];
    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        if self.left == 0 {
            return None;
        }
        match entry_at(self.buf, self.off) {
            Some((v, next)) => {
                self.off = next;
                self.left -= 1;
                Some(v)
            }
            None => {
                self.left = 0;
                None
            }
        }
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.left))
    }
}

/// What bounds a chunk (`list-max-listpack-size`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Limit {
    /// At most this many entries, and at most [`SAFETY_BYTES_MAX`] bytes.
    Entries(usize),
    /// At most this many bytes.
    Bytes(usize),
}

/// Redis's `SIZE_SAFETY_LIMIT`: a chunk bounded by an entry count still
/// stays within 8 KiB.
pub(crate) const SAFETY_BYTES_MAX: usize = 8 * 1024;

/// Bytes per chunk for `list-max-listpack-size` -1 ..= -5.
const LEVEL_BYTES: [usize; 5] = [4096, 8192, 16384, 32768, 65536];

/// Largest positive `list-max-listpack-size` Redis accepts (`FILL_MAX`).
pub(crate) const FILL_ENTRIES_MAX: usize = (1 << 15) - 1;

impl Limit {
    /// Redis's reading of `list-max-listpack-size` (below -5 it is -5, 0
    /// is 1 entry, above [`FILL_ENTRIES_MAX`] it is that).
    pub(crate) fn from_config(fill: i64) -> Limit {
        if fill >= 0 {
            Limit::Entries((fill as usize).clamp(1, FILL_ENTRIES_MAX))
        } else {
            let level = (fill.unsigned_abs() as usize).min(LEVEL_BYTES.len());
            Limit::Bytes(LEVEL_BYTES[level - 1])
        }
    }

    /// The most bytes a chunk of several entries holds.
    pub(crate) fn bytes_max(self) -> usize {
        match self {
            Limit::Entries(_) => SAFETY_BYTES_MAX,
            Limit::Bytes(b) => b,
        }
    }

    /// Whether a chunk of `count` entries and `bytes` bytes is within the
    /// limit. A chunk of one entry always is (a big element gets a chunk
    /// of its own, as Redis gives it a node).
    #[inline]
    pub(crate) fn fits(self, count: usize, bytes: usize) -> bool {
        count <= 1
            || match self {
                Limit::Entries(n) => count <= n && bytes <= SAFETY_BYTES_MAX,
                Limit::Bytes(b) => bytes <= b,
            }
    }

    /// Capacity to give a new chunk whose first entry takes `need` bytes:
    /// the whole byte limit when bounded by bytes (a chunk fills to it;
    /// the slack left is under one entry), else room for the entry count
    /// at this entry's size.
    pub(crate) fn initial_capacity(self, need: usize) -> usize {
        match self {
            Limit::Bytes(b) => b.max(need),
            Limit::Entries(n) => need.saturating_mul(n).min(SAFETY_BYTES_MAX).max(need),
        }
    }
}

/// A chunk: entries in `buf[head..]`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Chunk {
    /// Entries live in `buf[head..]`; bytes before `head` are dead.
    pub(crate) buf: Vec<u8>,
    /// Offset of the first live entry; `<= buf.len()`.
    pub(crate) head: u32,
    /// Live entries.
    pub(crate) count: u32,
}

impl Chunk {
    /// An empty chunk for pushes at the back.
    pub(crate) fn for_back(cap: usize) -> Chunk {
        Chunk { buf: Vec::with_capacity(cap), head: 0, count: 0 }
    }

    /// An empty chunk for pushes at the front: it fills downwards from
    /// its end, so each front push writes in place.
    pub(crate) fn for_front(cap: usize) -> Chunk {
        let buf = vec![0; cap];
        Chunk { head: to_u32(cap), buf, count: 0 }
    }

    /// A chunk holding `entries` (already known to fit one chunk).
    pub(crate) fn from_entries<'a>(entries: impl IntoIterator<Item = &'a [u8]>) -> Chunk {
        let mut c = Chunk::default();
        for e in entries {
            put_entry(&mut c.buf, e);
            c.count += 1;
        }
        c.buf.shrink_to_fit();
        c
    }

    #[inline]
    pub(crate) fn live(&self) -> &[u8] {
        &self.buf[self.head as usize..]
    }

    #[inline]
    pub(crate) fn live_len(&self) -> usize {
        self.buf.len() - self.head as usize
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.count as usize
    }

    pub(crate) fn iter(&self) -> Entries<'_> {
        Entries::new(self.live(), self.len())
    }

    /// Offsets (into `buf`) of every entry, front to back.
    pub(crate) fn offsets(&self, out: &mut Vec<u32>) {
        out.clear();
        let mut off = self.head as usize;
        // Bounded: one step per live entry.
        for _ in 0..self.count {
            out.push(to_u32(off));
            off = entry_at(&self.buf, off).map_or(self.buf.len(), |(_, n)| n);
        }
    }

    /// The entry at `i` (< len).
    pub(crate) fn get(&self, i: usize) -> Option<&[u8]> {
        self.iter().nth(i)
    }

    /// Appends `v` if the chunk's limit allows; false if it does not (the
    /// caller starts a new chunk). Amortized O(|v|): see the module doc.
    pub(crate) fn try_push_back(&mut self, v: &[u8], limit: Limit) -> bool {
        let need = entry_size(v.len());
        let live = self.live_len();
        if !limit.fits(self.len() + 1, live + need) {
            return false;
        }
        if self.buf.len() + need > self.buf.capacity() {
            let cap = self.buf.capacity();
            let front_used = self.head > 0;
            if !front_used || live + need + cap / MOVE_FREE_FRACTION > cap {
                let max = limit.bytes_max();
                if front_used && cap >= max {
                    // A chunk of the limit's size, mostly live: a new chunk
                    // is cheaper than moving this one every few pushes.
                    return false;
                }
                // Grow geometrically up to the limit (count-bounded chunks
                // do not know their byte size in advance; a converted
                // list's chunk starts at its entries' size).
                let want = grown(cap, live + need, max);
                self.buf.reserve_exact(want - self.buf.len());
            }
            if front_used {
                // The front takes pushes or pops too: half the free
                // space stays there (module notes, "Moves").
                let free = self.buf.capacity() - live;
                self.move_live((free / 2).min(free - need));
            }
        }
        put_entry(&mut self.buf, v);
        self.count += 1;
        true
    }

    /// Prepends `v` if the chunk's limit allows; false if it does not.
    pub(crate) fn try_push_front(&mut self, v: &[u8], limit: Limit) -> bool {
        let need = entry_size(v.len());
        let live = self.live_len();
        if !limit.fits(self.len() + 1, live + need) {
            return false;
        }
        if (self.head as usize) < need {
            let cap = self.buf.capacity();
            // Room behind the entries: the back takes pushes or pops too.
            let back_used = self.buf.len() < cap;
            if live + need + cap / MOVE_FREE_FRACTION > cap {
                let max = limit.bytes_max();
                if cap >= max {
                    // A chunk of the limit's size: a new chunk (as at the
                    // back).
                    return false;
                }
                // Smaller: grow, then move below.
                let want = grown(cap, live + need, max);
                self.buf.reserve_exact(want - self.buf.len());
            }
            let free = self.buf.capacity() - live;
            self.move_live(if back_used { (free / 2).max(need) } else { free });
        }
        let at = self.head as usize - need;
        // The length, then the bytes, written in place (no temporary).
        let w = varint::write(&mut self.buf[at..], v.len() as u64);
        self.buf[at + w..at + need].copy_from_slice(v);
        self.head = to_u32(at);
        self.count += 1;
        true
    }

    /// Moves the live entries to start at `to` (`to` + live bytes within
    /// the capacity): O(live bytes).
    fn move_live(&mut self, to: usize) {
        let (h, end) = (self.head as usize, self.buf.len());
        let live = end - h;
        debug_assert!(to + live <= self.buf.capacity());
        if to + live > end {
            self.buf.resize(to + live, 0);
        }
        self.buf.copy_within(h..end, to);
        self.buf.truncate(to + live);
        self.head = to_u32(to);
    }

    /// Moves the live entries to the end of the capacity, all free space
    /// in front of them (O(live bytes)).
    pub(crate) fn move_to_end(&mut self) {
        let free = self.buf.capacity() - self.live_len();
        self.move_live(free);
    }

    /// Removes and returns the front entry.
    pub(crate) fn pop_front(&mut self) -> Option<Vec<u8>> {
        if self.count == 0 {
            return None;
        }
        let (v, next) = entry_at(&self.buf, self.head as usize)?;
        let v = v.to_vec();
        self.head = to_u32(next);
        self.count -= 1;
        if self.count == 0 {
            self.buf.clear();
            self.head = 0;
        }
        Some(v)
    }

    /// Removes and returns the entry that starts at `off` (the back one).
    pub(crate) fn pop_back_at(&mut self, off: usize) -> Option<Vec<u8>> {
        let (v, _) = entry_at(&self.buf, off)?;
        let v = v.to_vec();
        self.buf.truncate(off);
        self.count -= 1;
        if self.count == 0 {
            self.buf.clear();
            self.head = 0;
        }
        Some(v)
    }
}

/// Offsets and counts in a chunk fit a u32: a chunk holds at most the
/// limit's bytes or one element, and the server refuses elements over
/// 512 MB (Redis's `proto-max-bulk-len`).
#[inline]
pub(crate) fn to_u32(v: usize) -> u32 {
    u32::try_from(v).expect("chunk offsets fit u32: elements are under 4 GiB")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An 11-byte chunk with 3 dead bytes in front, full to its capacity:
    /// a back push grows it. With the quarter taken before multiplying,
    /// the grown size (10) was below the buffer's length (11) and the
    /// reservation underflowed (found by the list model test in CI).
    #[test]
    fn growth_never_below_capacity() {
        let mut c = Chunk::from_entries([&b"ab"[..], b"c", b"d", b"e", b"f"]);
        assert_eq!(c.buf.capacity(), 11, "precondition: an exact 11-byte chunk");
        assert_eq!(c.pop_front().as_deref(), Some(&b"ab"[..]));
        assert!(c.try_push_back(b"g", Limit::Bytes(8192)));
        let got: Vec<&[u8]> = c.iter().collect();
        assert_eq!(got, [&b"c"[..], b"d", b"e", b"f", b"g"]);
        for cap in 0..64 {
            assert!(grown(cap, 0, 8192) >= cap, "cap {cap}");
        }
    }
}
