//! List: Redis's LPUSH … LMPOP over two forms.
//!
//! * **Compact** (Redis's listpack): one [`pack`](crate::pack),
//!   `[varint count][entry]*` with `entry = [varint length][bytes]`,
//!   while the list fits one chunk under `list-max-listpack-size`. The
//!   server keeps it as an item's value and reads it in place
//!   ([`packed_len`], [`packed_index`], [`packed_range`]); a write edits
//!   it in O(its bytes), which the threshold bounds.
//! * **Large** (Redis's quicklist): a deque of chunks of the same entry
//!   encoding, each with its count (`list/quick.rs`, `list/chunk.rs`):
//!   end pushes and pops O(1) amortized, positional operations skip whole
//!   chunks, middle edits rewrite one chunk.
//!
//! A list converts compact → large once, when a write makes it overflow
//! one chunk or when the server finds it written often ([`List::to_large`],
//! amalgam-commands `typed.rs`: a large list is changed in place, a compact
//! one rewritten whole per write), and never back (Redis 7.0's lists are always quicklists —
//! its OBJECT ENCODING says "quicklist" even for a short list; 7.2 added
//! the listpack form and converts back; we convert once, like 7.0's
//! other types). An element costs its bytes plus a 1–3 byte length
//! (Redis's listpack: 2–3), and a chunk ~40 bytes per 8 KiB.
//!
//! Measured (tests/mem_zset_list.rs): 23.1 B per item for 10^6 items of
//! 22 bytes pushed at either end (Redis 7.0.15: 24 B). LINDEX walks chunk
//! counts from the nearer end: ~2,800 chunk headers at most at 10^6 such
//! items with the default 8 KiB chunks (Redis walks its quicklist nodes
//! the same way).
//!
//! Index arguments are Redis's: `i64`, negative counts from the end.

mod chunk;
mod quick;

use std::collections::vec_deque;

pub use chunk::Entries;
use chunk::{entry_at, entry_size, put_entry, Chunk, Limit};
use quick::{build_chunks, Quick};

use crate::{pack, varint, Corrupt, Thresholds};

/// First byte of [`List::encode`]'s output (format version 1).
pub const ENCODING_TAG: u8 = 0x4C;

/// LPOS's errors (Redis 7.0's texts).
pub const ERR_LPOS_RANK_ZERO: &str = "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list";
pub const ERR_LPOS_COUNT_NEGATIVE: &str = "ERR COUNT can't be negative";
pub const ERR_LPOS_MAXLEN_NEGATIVE: &str = "ERR MAXLEN can't be negative";
/// LSET past either end.
pub const ERR_INDEX_OUT_OF_RANGE: &str = "ERR index out of range";

/// A Redis list.
#[derive(Clone, Debug)]
pub struct List {
    limit: Limit,
    repr: Repr,
}

#[derive(Clone, Debug)]
enum Repr {
    /// `[count u32 LE][entries]`.
    Compact(Vec<u8>),
    Large(Quick),
}

/// One run of entries: a compact list's body or one chunk.
#[derive(Clone, Copy, Debug)]
struct View<'a> {
    bytes: &'a [u8],
    count: usize,
}

impl<'a> View<'a> {
    fn iter(self) -> Entries<'a> {
        Entries::new(self.bytes, self.count)
    }
    /// Offsets of the entries (for backward walks): O(entries).
    fn offsets(self) -> Vec<usize> {
        // Each entry takes a byte at least: a garbage count cannot make
        // this allocate more than the bytes.
        let mut out = Vec::with_capacity(self.count.min(self.bytes.len()));
        let mut off = 0;
        // Bounded: at most `count` entries.
        while out.len() < self.count {
            match entry_at(self.bytes, off) {
                Some((_, next)) => {
                    out.push(off);
                    off = next;
                }
                None => break,
            }
        }
        out
    }
}

/// The runs of a list, front to back (or back to front with `.rev()`).
#[derive(Clone, Debug)]
enum Views<'a> {
    One(Option<View<'a>>),
    Many(vec_deque::Iter<'a, Chunk>),
}

impl<'a> Iterator for Views<'a> {
    type Item = View<'a>;
    fn next(&mut self) -> Option<View<'a>> {
        match self {
            Views::One(v) => v.take(),
            Views::Many(it) => it.next().map(chunk_view),
        }
    }
}

impl DoubleEndedIterator for Views<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        match self {
            Views::One(v) => v.take(),
            Views::Many(it) => it.next_back().map(chunk_view),
        }
    }
}

fn chunk_view(c: &Chunk) -> View<'_> {
    View { bytes: c.live(), count: c.len() }
}

/// Borrowed iteration over a range of a list (LRANGE).
#[derive(Clone, Debug)]
pub struct Range<'a> {
    cur: Entries<'a>,
    rest: Views<'a>,
    left: usize,
}

impl<'a> Iterator for Range<'a> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        // Bounded: each turn yields or moves to the next run.
        while self.left > 0 {
            if let Some(v) = self.cur.next() {
                self.left -= 1;
                return Some(v);
            }
            self.cur = self.rest.next()?.iter();
        }
        None
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.left))
    }
}

/// Redis's LRANGE / LTRIM normalization: `Some((start, stop))` inclusive
/// and in range, or None for an empty range.
pub fn normalize_range(len: usize, start: i64, stop: i64) -> Option<(usize, usize)> {
    let n = len as i64;
    let s = if start < 0 { start.saturating_add(n).max(0) } else { start };
    let e = if stop < 0 { stop.saturating_add(n) } else { stop };
    if s > e || s >= n || e < 0 {
        return None;
    }
    Some((s as usize, e.min(n - 1) as usize))
}

/// Redis's index: negative counts from the end; None past either end.
pub fn normalize_index(len: usize, i: i64) -> Option<usize> {
    let n = len as i64;
    let i = if i < 0 { i.checked_add(n)? } else { i };
    (0..n).contains(&i).then_some(i as usize)
}

/// LPOS's argument checks, in Redis's order (RANK, COUNT, MAXLEN).
pub fn lpos_check(rank: i64, count: i64, maxlen: i64) -> Result<(), &'static str> {
    if rank == 0 {
        return Err(ERR_LPOS_RANK_ZERO);
    }
    if count < 0 {
        return Err(ERR_LPOS_COUNT_NEGATIVE);
    }
    if maxlen < 0 {
        return Err(ERR_LPOS_MAXLEN_NEGATIVE);
    }
    Ok(())
}

fn range_in<'a>(mut views: Views<'a>, len: usize, start: i64, stop: i64) -> Range<'a> {
    let empty = Range { cur: Entries::new(&[], 0), rest: Views::One(None), left: 0 };
    let Some((s, e)) = normalize_range(len, start, stop) else {
        return empty;
    };
    let mut skip = s;
    // Bounded: one step per run.
    while let Some(v) = views.next() {
        if skip < v.count {
            let mut cur = v.iter();
            if skip > 0 {
                cur.nth(skip - 1);
            }
            return Range { cur, rest: views, left: e - s + 1 };
        }
        skip -= v.count;
    }
    empty
}

/// LPOS over runs: the indexes of the matches of `value`, skipping
/// `|rank| - 1` matches first (from the back if `rank < 0`), at most
/// `count` of them (0: all), looking at most at `maxlen` elements (0:
/// all). `rank` must not be 0 ([`lpos_check`]). Redis 7.0 negates
/// `i64::MIN` into itself: such a rank skips nothing and ignores `count`,
/// and so does this.
fn position_in(views: Views<'_>, len: usize, value: &[u8], rank: i64, count: usize, maxlen: usize) -> Vec<usize> {
    let (skip, count) = if rank == i64::MIN { (0, 0) } else { (rank.unsigned_abs() as usize - 1, count) };
    let mut out = Vec::new();
    let mut seen = 0usize;
    let mut matches = 0usize;
    let maxlen = if maxlen == 0 { usize::MAX } else { maxlen };
    // Visits one element; false to stop.
    let mut visit = |e: &[u8], index: usize| -> bool {
        if seen >= maxlen {
            return false;
        }
        seen += 1;
        if e == value {
            matches += 1;
            if matches > skip {
                out.push(index);
                if count != 0 && out.len() >= count {
                    return false;
                }
            }
        }
        true
    };
    if rank > 0 {
        let mut index = 0;
        // Bounded: every element once at most.
        'runs: for v in views {
            for e in v.iter() {
                if !visit(e, index) {
                    break 'runs;
                }
                index += 1;
            }
        }
    } else {
        let mut index = len;
        'back: for v in views.rev() {
            // Bounded: every element once at most.
            for off in v.offsets().into_iter().rev() {
                index -= 1;
                let Some((e, _)) = entry_at(v.bytes, off) else {
                    break 'back;
                };
                if !visit(e, index) {
                    break 'back;
                }
            }
        }
    }
    out
}

/// A compact list's entry count and entries' bytes, or Corrupt if
/// `bytes` has no pack header.
fn split_packed(bytes: &[u8]) -> Result<(usize, &[u8]), Corrupt> {
    let (n, h) = varint::get(bytes).ok_or(Corrupt)?;
    Ok((usize::try_from(n).map_err(|_| Corrupt)?, &bytes[h..]))
}

/// Bytes of a compact list's count header.
fn header_len(bytes: &[u8]) -> usize {
    varint::get(bytes).map_or(0, |(_, h)| h)
}

/// A compact list's entry count, or Corrupt if `bytes` has no header.
pub fn packed_len(bytes: &[u8]) -> Result<usize, Corrupt> {
    split_packed(bytes).map(|(n, _)| n)
}

fn packed_view(bytes: &[u8]) -> Views<'_> {
    match split_packed(bytes) {
        Ok((count, body)) => Views::One(Some(View { bytes: body, count })),
        Err(_) => Views::One(None),
    }
}

/// LINDEX on a compact list's bytes (never panics on garbage: None).
pub fn packed_index(bytes: &[u8], i: i64) -> Option<&[u8]> {
    let len = packed_len(bytes).ok()?;
    let i = normalize_index(len, i)?;
    packed_view(bytes).next()?.iter().nth(i)
}

/// LRANGE on a compact list's bytes (garbage ends the iteration early).
pub fn packed_range(bytes: &[u8], start: i64, stop: i64) -> Range<'_> {
    let len = packed_len(bytes).unwrap_or(0);
    range_in(packed_view(bytes), len, start, stop)
}

/// LPOS on a compact list's bytes; see [`List::position`].
pub fn packed_position(bytes: &[u8], value: &[u8], rank: i64, count: usize, maxlen: usize) -> Vec<usize> {
    let len = packed_len(bytes).unwrap_or(0);
    position_in(packed_view(bytes), len, value, rank, count, maxlen)
}

impl List {
    /// An empty list bounded by `t.list_max_listpack_size` (kept for the
    /// list's life, as Redis's quicklist keeps its fill).
    pub fn new(t: &Thresholds) -> List {
        List { limit: Limit::from_config(t.list_max_listpack_size), repr: Repr::Compact(pack::new()) }
    }

    /// Adopts a compact list's bytes (as [`List::packed`] gave them);
    /// Corrupt if they are not one. Bytes that do not fit one chunk of
    /// `t`'s limit become a large list.
    pub fn from_packed(bytes: Vec<u8>, t: &Thresholds) -> Result<List, Corrupt> {
        pack::validate(&bytes)?;
        Ok(List::adopt(bytes, t))
    }

    /// [`List::from_packed`] for bytes this build packed (the store's; see
    /// `Hash::from_packed_trusted`): the count is the header's, the
    /// entries are not walked (debug builds still check them).
    pub fn from_packed_trusted(bytes: Vec<u8>, t: &Thresholds) -> List {
        debug_assert!(pack::validate(&bytes).is_ok(), "trusted bytes that are not a pack");
        List::adopt(bytes, t)
    }

    /// A list of a valid pack's bytes: compact if they fit one chunk of
    /// `t`'s limit, else large.
    fn adopt(bytes: Vec<u8>, t: &Thresholds) -> List {
        // Not List::new: its empty pack is an allocation every compact
        // write would make and free for nothing.
        let limit = Limit::from_config(t.list_max_listpack_size);
        let (count, h) = split_packed(&bytes).map_or((0, bytes.len()), |(n, body)| (n, bytes.len() - body.len()));
        if limit.fits(count, bytes.len() - h) {
            return List { limit, repr: Repr::Compact(bytes) };
        }
        let chunks = build_chunks(limit, Entries::new(&bytes[h..], count));
        List { limit, repr: Repr::Large(Quick::from_chunks(limit, chunks)) }
    }

    /// The compact form's bytes, or None once the list is large.
    pub fn packed(&self) -> Option<&[u8]> {
        match &self.repr {
            Repr::Compact(b) => Some(b),
            Repr::Large(_) => None,
        }
    }

    /// The compact bytes, moved out (see `Hash::take_packed`).
    pub(crate) fn take_packed(&mut self) -> Option<Vec<u8>> {
        match &mut self.repr {
            Repr::Compact(b) => Some(std::mem::take(b)),
            Repr::Large(_) => None,
        }
    }

    /// OBJECT ENCODING's name for the form ("listpack" / "quicklist";
    /// Redis 7.0 itself says "quicklist" for both).
    pub fn encoding(&self) -> &'static str {
        match self.repr {
            Repr::Compact(_) => "listpack",
            Repr::Large(_) => "quicklist",
        }
    }

    /// LLEN.
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Compact(b) => packed_len(b).unwrap_or(0),
            Repr::Large(q) => q.len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes held from the allocator for this value, struct included
    /// (capacities, kept incrementally: O(1)).
    pub fn mem_bytes(&self) -> usize {
        std::mem::size_of::<List>()
            + match &self.repr {
                Repr::Compact(b) => b.capacity(),
                Repr::Large(q) => q.heap_bytes(),
            }
    }

    fn views(&self) -> Views<'_> {
        match &self.repr {
            Repr::Compact(b) => packed_view(b),
            Repr::Large(q) => Views::Many(q.chunks.iter()),
        }
    }

    /// Converts a compact list to the large form now, whatever its size
    /// (the server does it for a list written often: a large list is
    /// changed in place, a compact one rewritten whole on every write).
    /// No-op when already large.
    pub fn to_large(&mut self) {
        if let Repr::Compact(_) = self.repr {
            let q = self.make_large();
            let live = q.chunks.front().map_or(0, Chunk::live_len);
            // Room for as many bytes again in front (see Quick::front_room).
            q.front_room(live.max(chunk::FRONT_ROOM_BYTES_MIN));
        }
    }

    /// Where a push or pop of a large list is about to look, for the
    /// engine's prefetch (`Object::hint_addrs`): level 0 the end chunks'
    /// records in the deque, level 1 the end chunks' first and last
    /// bytes. Addresses only: nothing is read here beyond level 0's
    /// records (which level 1 reads).
    pub fn hint_addrs(&self, level: usize) -> [usize; 2] {
        let Repr::Large(q) = &self.repr else { return [0; 2] };
        let (Some(front), Some(back)) = (q.chunks.front(), q.chunks.back()) else { return [0; 2] };
        match level {
            0 => [front as *const Chunk as usize, back as *const Chunk as usize],
            _ => [front.buf.as_ptr() as usize + front.head as usize, back.buf.as_ptr() as usize + back.buf.len()],
        }
    }

    /// Converts a compact list to the large form because it is long (the
    /// server does it for a list past its byte threshold that is written
    /// again: a compact write rewrites all of the list's bytes into a new
    /// item, a large one changes one chunk in place). Its one chunk gets
    /// room in front for a quarter of its bytes, the step by which it
    /// then grows (`chunk.rs`), rather than [`List::to_large`]'s room for
    /// a queue. No-op when already large.
    pub fn to_large_long(&mut self) {
        if let Repr::Compact(_) = self.repr {
            let q = self.make_large();
            let live = q.chunks.front().map_or(0, Chunk::live_len);
            q.front_room(live / 4 * (chunk::GROWTH_QUARTERS - 4));
        }
    }

    /// Converts to the large form (once).
    fn make_large(&mut self) -> &mut Quick {
        if let Repr::Compact(b) = &mut self.repr {
            let count = packed_len(b).unwrap_or(0);
            let mut buf = std::mem::take(b);
            buf.drain(..header_len(&buf));
            let chunk = Chunk { buf, head: 0, count: chunk::to_u32(count) };
            let chunks = if count == 0 { Vec::new() } else { vec![chunk] };
            self.repr = Repr::Large(Quick::from_chunks(self.limit, chunks));
        }
        match &mut self.repr {
            Repr::Large(q) => q,
            Repr::Compact(_) => unreachable!("just converted"),
        }
    }

    /// Whether a compact list can take one more entry of `n` bytes.
    fn compact_takes(&self, bytes: &[u8], n: usize) -> bool {
        let count = packed_len(bytes).unwrap_or(0);
        self.limit.fits(count + 1, bytes.len() - header_len(bytes) + entry_size(n))
    }

    /// RPUSH of one element.
    pub fn push_back(&mut self, v: &[u8]) {
        if let Repr::Compact(b) = &self.repr {
            if self.compact_takes(b, v.len()) {
                let Repr::Compact(b) = &mut self.repr else { unreachable!() };
                pack::push(b, &[v]);
                return;
            }
        }
        self.make_large().push_back(v);
    }

    /// LPUSH of one element.
    pub fn push_front(&mut self, v: &[u8]) {
        if let Repr::Compact(b) = &self.repr {
            if self.compact_takes(b, v.len()) {
                let Repr::Compact(b) = &mut self.repr else { unreachable!() };
                let h = header_len(b);
                pack::insert(b, h, &[v]);
                return;
            }
        }
        self.make_large().push_front(v);
    }

    /// LPOP with a count: up to `count` elements from the front.
    pub fn pop_front(&mut self, count: usize) -> Vec<Vec<u8>> {
        let n = count.min(self.len());
        match &mut self.repr {
            Repr::Compact(b) => {
                let h = header_len(b);
                let out: Vec<Vec<u8>> = Entries::new(&b[h..], n).map(<[u8]>::to_vec).collect();
                pack::remove(b, h, out.len());
                out
            }
            // Bounded: n <= len.
            Repr::Large(q) => (0..n).map_while(|_| q.pop_front()).collect(),
        }
    }

    /// RPOP with a count: up to `count` elements from the back, last first.
    pub fn pop_back(&mut self, count: usize) -> Vec<Vec<u8>> {
        let len = self.len();
        let n = count.min(len);
        match &mut self.repr {
            Repr::Compact(b) => {
                let h = header_len(b);
                let body = &b[h..];
                let mut it = Entries::new(body, len - n);
                it.by_ref().for_each(drop);
                let cut = it.off;
                let mut out: Vec<Vec<u8>> = Entries::new(&body[cut..], n).map(<[u8]>::to_vec).collect();
                out.reverse();
                pack::remove(b, h + cut, out.len());
                out
            }
            // Bounded: n <= len.
            Repr::Large(q) => (0..n).map_while(|_| q.pop_back()).collect(),
        }
    }

    /// LINDEX.
    pub fn index(&self, i: i64) -> Option<&[u8]> {
        let i = normalize_index(self.len(), i)?;
        match &self.repr {
            Repr::Compact(b) => packed_index(b, i as i64),
            Repr::Large(q) => {
                let (ci, j) = q.locate(i);
                q.chunks[ci].get(j)
            }
        }
    }

    /// LRANGE (Redis's start/stop rules).
    pub fn range(&self, start: i64, stop: i64) -> Range<'_> {
        range_in(self.views(), self.len(), start, stop)
    }

    /// Every element, front to back.
    pub fn iter(&self) -> Range<'_> {
        self.range(0, -1)
    }

    /// Rebuilds a compact list from `entries`, converting to large if
    /// they no longer fit one chunk.
    fn rebuild_compact<'a>(&mut self, entries: impl IntoIterator<Item = &'a [u8]>) {
        let all: Vec<&[u8]> = entries.into_iter().collect();
        let bytes: usize = all.iter().map(|e| entry_size(e.len())).sum();
        if self.limit.fits(all.len(), bytes) {
            self.repr = Repr::Compact(pack::from_entries(all.iter().copied()));
        } else {
            let chunks = build_chunks(self.limit, all);
            self.repr = Repr::Large(Quick::from_chunks(self.limit, chunks));
        }
    }

    /// LSET: Err([`ERR_INDEX_OUT_OF_RANGE`]) past either end.
    pub fn set(&mut self, i: i64, v: &[u8]) -> Result<(), &'static str> {
        let i = normalize_index(self.len(), i).ok_or(ERR_INDEX_OUT_OF_RANGE)?;
        match &mut self.repr {
            Repr::Compact(b) => {
                let old = std::mem::take(b);
                let (n, body) = split_packed(&old).unwrap_or((0, &[]));
                let it = Entries::new(body, n);
                self.rebuild_compact(it.enumerate().map(|(k, e)| if k == i { v } else { e }));
            }
            Repr::Large(q) => q.set(i, v),
        }
        Ok(())
    }

    /// LINSERT: puts `v` before (or after) the first element equal to
    /// `pivot`; the new length, or None if there is no such element.
    pub fn insert(&mut self, before: bool, pivot: &[u8], v: &[u8]) -> Option<usize> {
        let at = self.iter().position(|e| e == pivot)?;
        let at = if before { at } else { at + 1 };
        match &mut self.repr {
            Repr::Compact(b) => {
                let old = std::mem::take(b);
                let (n, body) = split_packed(&old).unwrap_or((0, &[]));
                let first = Entries::new(body, at);
                let mut skip = Entries::new(body, at);
                skip.by_ref().for_each(drop);
                let rest = Entries::new(&body[skip.off..], n - at);
                self.rebuild_compact(first.chain(std::iter::once(v)).chain(rest));
            }
            Repr::Large(q) => q.insert_at(at, v),
        }
        Some(self.len())
    }

    /// LREM: removes up to `|count|` elements equal to `v` (all if 0),
    /// from the front if `count > 0`, from the back if `count < 0`;
    /// returns how many it removed.
    pub fn remove(&mut self, count: i64, v: &[u8]) -> usize {
        let limit = if count == 0 { usize::MAX } else { count.unsigned_abs() as usize };
        // Indexes per run of the matches to remove.
        let views: Vec<View<'_>> = self.views().collect();
        let mut drops: Vec<(usize, Vec<usize>)> = Vec::new();
        let mut found = 0;
        let order: Box<dyn Iterator<Item = usize>> =
            if count >= 0 { Box::new(0..views.len()) } else { Box::new((0..views.len()).rev()) };
        // Bounded: every element once at most.
        'runs: for ri in order {
            let mut hits: Vec<usize> = views[ri].iter().enumerate().filter(|(_, e)| *e == v).map(|(k, _)| k).collect();
            if count < 0 {
                hits.reverse();
            }
            let mut take = Vec::new();
            for k in hits {
                if found == limit {
                    break;
                }
                take.push(k);
                found += 1;
            }
            take.sort_unstable();
            if !take.is_empty() {
                drops.push((ri, take));
            }
            if found == limit {
                break 'runs;
            }
        }
        drop(views);
        if found == 0 {
            return 0;
        }
        match &mut self.repr {
            Repr::Compact(b) => {
                let old = std::mem::take(b);
                let (n, body) = split_packed(&old).unwrap_or((0, &[]));
                let gone = &drops[0].1;
                let mut d = gone.iter().peekable();
                let kept = Entries::new(body, n).enumerate().filter_map(|(k, e)| {
                    if d.peek() == Some(&&k) {
                        d.next();
                        None
                    } else {
                        Some(e)
                    }
                });
                self.rebuild_compact(kept);
            }
            Repr::Large(q) => {
                // Highest chunk first: an edit of chunk `ci` may merge it
                // into chunk `ci - 1` (whose entries stay first, at the
                // same indexes) or with later chunks (already handled),
                // so the lower chunks' indexes stay valid.
                drops.sort_by_key(|d| std::cmp::Reverse(d.0));
                for (ci, take) in drops {
                    q.remove_in_chunk(ci, &take);
                }
            }
        }
        found
    }

    /// LTRIM: keeps `start ..= stop` (Redis's rules); an empty range
    /// empties the list (the server then deletes the key).
    pub fn trim(&mut self, start: i64, stop: i64) {
        let len = self.len();
        let Some((s, e)) = normalize_range(len, start, stop) else {
            self.repr = Repr::Compact(pack::new());
            return;
        };
        if s == 0 && e + 1 == len {
            return;
        }
        match &mut self.repr {
            Repr::Compact(b) => {
                let old = std::mem::take(b);
                let it = Entries::new(&old[header_len(&old)..], len);
                self.rebuild_compact(it.skip(s).take(e - s + 1));
            }
            Repr::Large(q) => q.keep(s, e),
        }
    }

    /// LPOS: indexes of the matches of `value`; see [`lpos_check`] for the
    /// argument errors (`rank` must not be 0). `count` 0 means all,
    /// `maxlen` 0 means the whole list.
    pub fn position(&self, value: &[u8], rank: i64, count: usize, maxlen: usize) -> Vec<usize> {
        position_in(self.views(), self.len(), value, rank, count, maxlen)
    }

    /// The snapshot form: `[ENCODING_TAG][varint count][entry]*`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.push(ENCODING_TAG);
        varint::put(out, self.len() as u64);
        for e in self.iter() {
            put_entry(out, e);
        }
    }

    /// Reads [`List::encode`]'s form; Corrupt (never a panic) on anything
    /// else.
    pub fn decode(bytes: &[u8], t: &Thresholds) -> Result<List, Corrupt> {
        let (&tag, rest) = bytes.split_first().ok_or(Corrupt)?;
        if tag != ENCODING_TAG {
            return Err(Corrupt);
        }
        let (count, w) = varint::get(rest).ok_or(Corrupt)?;
        let body = &rest[w..];
        // Each entry takes at least one byte: a larger count is a lie.
        if count > body.len() as u64 {
            return Err(Corrupt);
        }
        let mut l = List::new(t);
        let mut off = 0;
        // Bounded: `count` <= body bytes.
        for _ in 0..count {
            let (e, next) = entry_at(body, off).ok_or(Corrupt)?;
            l.push_back(e);
            off = next;
        }
        if off != body.len() {
            return Err(Corrupt);
        }
        Ok(l)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny(n: i64) -> Thresholds {
        Thresholds { list_max_listpack_size: n, ..Thresholds::default() }
    }

    #[test]
    fn to_large_keeps_items_and_front_pushes_stay_in_one_chunk() {
        let t = Thresholds::default();
        let mut l = List::new(&t);
        for i in 0..10u8 {
            l.push_back(&[i; 32]);
        }
        l.to_large();
        assert_eq!(l.encoding(), "quicklist");
        let Repr::Large(q) = &l.repr else { panic!("large") };
        assert_eq!(q.chunks.len(), 1);
        // Bounded: 100 rounds of a front push and a front pop (the hot
        // queue): the room made in front takes them, no new chunk.
        for i in 0..100u8 {
            l.push_front(&[100 + i; 32]);
            let Repr::Large(q) = &l.repr else { panic!("large") };
            assert_eq!(q.chunks.len(), 1, "round {i}");
            assert_eq!(l.pop_front(1), vec![vec![100 + i; 32]]);
        }
        let items: Vec<Vec<u8>> = l.range(0, -1).map(<[u8]>::to_vec).collect();
        assert_eq!(items, (0..10u8).map(|i| vec![i; 32]).collect::<Vec<_>>());
        assert_eq!(l.pop_back(1), vec![vec![9u8; 32]]);
        assert_eq!(l.len(), 9);
    }

    #[test]
    fn a_long_list_grows_its_one_chunk_in_steps() {
        let t = Thresholds::default();
        let mut l = List::new(&t);
        for i in 0..40u8 {
            l.push_back(&[i; 32]);
        }
        let compact = l.mem_bytes();
        l.to_large_long();
        assert_eq!(l.encoding(), "quicklist");
        // Front and back pushes until the chunk is near the 8 KiB limit:
        // the one chunk grows by quarters, never to more than 1.5x what
        // its entries need (before, a front push past its room started a
        // new chunk of the whole limit).
        for i in 0..160u8 {
            if i % 2 == 0 {
                l.push_front(&[i; 32]);
            } else {
                l.push_back(&[i; 32]);
            }
            let Repr::Large(q) = &l.repr else { panic!("large") };
            assert_eq!(q.chunks.len(), 1, "push {i}");
            let live = q.chunks[0].live_len();
            let cap = q.chunks[0].buf.capacity();
            assert!(cap <= live * 3 / 2 + 64, "push {i}: {cap} for {live}");
        }
        assert!(l.mem_bytes() < compact * 6, "{} vs {compact} compact at 40 entries", l.mem_bytes());
        let want: Vec<Vec<u8>> = (0..160u8)
            .rev()
            .filter(|i| i % 2 == 0)
            .map(|i| vec![i; 32])
            .chain((0..40u8).map(|i| vec![i; 32]))
            .chain((0..160u8).filter(|i| i % 2 == 1).map(|i| vec![i; 32]))
            .collect();
        let items: Vec<Vec<u8>> = l.range(0, -1).map(<[u8]>::to_vec).collect();
        assert_eq!(items, want);
        // Past the limit, a full chunk is left alone and a new one starts.
        for i in 0..100u8 {
            l.push_front(&[i; 32]);
        }
        let Repr::Large(q) = &l.repr else { panic!("large") };
        assert!(q.chunks.len() >= 2);
        assert!(q.chunks.iter().all(|c| c.live_len() <= 8192));
    }

    #[test]
    fn converts_once_and_keeps_order() {
        let mut l = List::new(&tiny(3));
        for i in 0..10u8 {
            l.push_back(&[i]);
        }
        assert_eq!(l.encoding(), "quicklist");
        let all: Vec<u8> = l.iter().map(|e| e[0]).collect();
        assert_eq!(all, (0..10).collect::<Vec<_>>());
        l.trim(4, 4);
        assert_eq!(l.encoding(), "quicklist");
        assert_eq!(l.len(), 1);
    }

    #[test]
    fn normalize_matches_redis() {
        assert_eq!(normalize_range(5, 3, 1), None);
        assert_eq!(normalize_range(5, -100, 1), Some((0, 1)));
        assert_eq!(normalize_range(5, 10, 20), None);
        assert_eq!(normalize_range(5, 0, 100), Some((0, 4)));
        assert_eq!(normalize_index(5, -5), Some(0));
        assert_eq!(normalize_index(5, -6), None);
        assert_eq!(normalize_index(5, i64::MIN), None);
    }

    #[test]
    fn lpos_like_redis() {
        let mut l = List::new(&Thresholds::default());
        for e in ["a", "b", "a", "c", "a"] {
            l.push_back(e.as_bytes());
        }
        assert_eq!(l.position(b"a", -1, 0, 0), vec![4, 2, 0]);
        assert_eq!(l.position(b"a", 2, 0, 3), vec![2]);
        assert_eq!(l.position(b"a", 1, 0, 3), vec![0, 2]);
        assert_eq!(l.position(b"a", -2, 1, 0), vec![2]);
        assert_eq!(l.position(b"a", i64::MIN, 1, 0), vec![4, 2, 0]);
        assert_eq!(lpos_check(0, 0, 0), Err(ERR_LPOS_RANK_ZERO));
    }
}
