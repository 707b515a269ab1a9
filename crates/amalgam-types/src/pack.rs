//! The compact, contiguous encoding (Redis's listpack idea): one byte
//! string, no pointers, that is the whole value, read in place.
//!
//! ```text
//! pack:   [varint count][entry 0][entry 1] ... [entry count-1]
//! entry:  [varint len][len bytes]
//! ```
//! `count` makes [`count`] O(1). Entries are opaque byte strings; a type
//! gives them meaning by position: a hash stores `field, value` pairs
//! (stride 2), a set its members (stride 1), a sorted set `member, score`
//! pairs, a list its items. An empty pack is the single byte `0`.
//!
//! ## API
//! * Reading borrowed bytes (never panics, whatever the bytes): [`count`],
//!   [`iter`] / [`iter_from`] (entries and their offsets), [`find`]
//!   (first entry equal to a key among every `stride`-th), [`entry_at`].
//!   Malformed bytes end the iteration early; [`validate`] checks a
//!   whole pack once (for bytes from outside: snapshots, the engine).
//! * Building, in place in a `Vec<u8>` (O(pack bytes), as a compact
//!   value is bounded by its type's threshold): [`new`], [`from_entries`],
//!   [`push`], [`insert`], [`remove`], [`replace`]; [`push_in`] and
//!   [`remove_in`] for a pack behind a caller's header bytes.
//!
//! Offsets ([`Pos::offset`]) are byte offsets of an entry's length prefix
//! in the pack, valid until the pack is next modified.

use crate::varint;
use crate::Corrupt;

/// Bytes of the empty pack.
pub const EMPTY: &[u8] = &[0];

/// Where an entry is: its index and the byte offset of its length prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pos {
    pub index: usize,
    pub offset: usize,
}

/// An empty pack.
pub fn new() -> Vec<u8> {
    EMPTY.to_vec()
}

/// Bytes one entry of `len` bytes takes in a pack.
pub fn entry_bytes(len: usize) -> usize {
    varint::len(len as u64) + len
}

/// A pack of `entries`, in order, allocated once at its exact size.
pub fn from_entries<'a>(entries: impl Iterator<Item = &'a [u8]> + Clone) -> Vec<u8> {
    let (mut n, mut bytes) = (0usize, 0usize);
    // Bounded by the entries given (twice: size, then copy).
    for e in entries.clone() {
        n += 1;
        bytes += entry_bytes(e.len());
    }
    let mut out = Vec::with_capacity(varint::len(n as u64) + bytes);
    varint::put(&mut out, n as u64);
    for e in entries {
        varint::put(&mut out, e.len() as u64);
        out.extend_from_slice(e);
    }
    out
}

/// (entry count, header bytes), or None if the header is malformed.
fn header(p: &[u8]) -> Option<(usize, usize)> {
    let (n, h) = varint::get(p)?;
    Some((usize::try_from(n).ok()?, h))
}

/// Entries in the pack (0 for malformed bytes). O(1).
pub fn count(p: &[u8]) -> usize {
    header(p).map_or(0, |(n, _)| n)
}

/// Checks the whole pack: a well-formed header, exactly `count` entries
/// that end exactly at the end. Returns the count.
pub fn validate(p: &[u8]) -> Result<usize, Corrupt> {
    let (n, mut at) = header(p).ok_or(Corrupt)?;
    // A count larger than the bytes could hold is rejected before looping.
    if n > p.len() {
        return Err(Corrupt);
    }
    // Bounded by n ≤ p.len().
    for _ in 0..n {
        let (_, next) = entry_at(p, at).ok_or(Corrupt)?;
        at = next;
    }
    if at != p.len() {
        return Err(Corrupt);
    }
    Ok(n)
}

/// The entry whose length prefix is at `offset`, and the offset after it.
pub fn entry_at(p: &[u8], offset: usize) -> Option<(&[u8], usize)> {
    let rest = p.get(offset..)?;
    let (len, h) = varint::get(rest)?;
    let len = usize::try_from(len).ok()?;
    let end = h.checked_add(len)?;
    let e = rest.get(h..end)?;
    Some((e, offset + end))
}

/// Borrowed iteration over a pack's entries; see [`iter`].
#[derive(Clone, Debug)]
pub struct Iter<'a> {
    p: &'a [u8],
    at: usize,
    index: usize,
    left: usize,
}

impl<'a> Iter<'a> {
    /// Where the next entry is.
    pub fn pos(&self) -> Pos {
        Pos { index: self.index, offset: self.at }
    }
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        if self.left == 0 {
            return None;
        }
        match entry_at(self.p, self.at) {
            Some((e, next)) => {
                self.at = next;
                self.index += 1;
                self.left -= 1;
                Some(e)
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

/// The entries in order (stops early on malformed bytes).
pub fn iter(p: &[u8]) -> Iter<'_> {
    match header(p) {
        Some((n, h)) => Iter { p, at: h, index: 0, left: n },
        None => Iter { p, at: 0, index: 0, left: 0 },
    }
}

/// The entries from `pos` on (a position [`Iter::pos`] or [`find`] gave).
pub fn iter_from(p: &[u8], pos: Pos) -> Iter<'_> {
    Iter { p, at: pos.offset, index: pos.index, left: count(p).saturating_sub(pos.index) }
}

/// The first entry equal to `key` among entries 0, stride, 2·stride, …
/// Bounded by the pack's entries.
pub fn find(p: &[u8], stride: usize, key: &[u8]) -> Option<Pos> {
    debug_assert!(stride >= 1);
    let mut it = iter(p);
    loop {
        let pos = it.pos();
        let e = it.next()?;
        if e == key {
            return Some(pos);
        }
        // Skip the rest of the group (stride - 1 entries).
        for _ in 1..stride {
            it.next()?;
        }
    }
}

/// Replaces `p[range]` with the concatenation of `parts`, moving the
/// tail once (memmove) and writing the parts in place: no temporary
/// vector and no byte-at-a-time copy. `Vec::splice`, which this replaced,
/// allocated its replacement and filled the gap through an iterator:
/// ~40% of a compact hash's HSET and of a compact list's LPUSH in
/// instructions (callgrind, issue 19 §6).
fn splice(p: &mut Vec<u8>, range: std::ops::Range<usize>, parts: &[&[u8]]) {
    let add: usize = parts.iter().map(|x| x.len()).sum();
    let (start, end) = (range.start, range.end);
    let old_len = p.len();
    if add > end - start {
        let grow = add - (end - start);
        p.resize(old_len + grow, 0);
        p.copy_within(end..old_len, end + grow);
    } else if add < end - start {
        let shrink = (end - start) - add;
        p.copy_within(end..old_len, end - shrink);
        p.truncate(old_len - shrink);
    }
    let mut at = start;
    // Bounded by parts.len().
    for x in parts {
        p[at..at + x.len()].copy_from_slice(x);
        at += x.len();
    }
}

/// A varint's bytes, on the stack.
fn varint_bytes(v: u64) -> ([u8; varint::VARINT_BYTES_MAX], usize) {
    let mut b = [0u8; varint::VARINT_BYTES_MAX];
    let mut n = 0;
    let mut v = v;
    // Bounded: at most VARINT_BYTES_MAX iterations (7 bits each).
    while v >= 0x80 {
        b[n] = (v as u8) | 0x80;
        v >>= 7;
        n += 1;
    }
    b[n] = v as u8;
    (b, n + 1)
}

/// Rewrites the count header of the pack at `p[base..]` (it may change
/// width; in place when it does not).
fn set_count(p: &mut Vec<u8>, base: usize, n: usize) {
    let old_h = header(&p[base..]).map_or(0, |(_, h)| h);
    let (b, len) = varint_bytes(n as u64);
    if len == old_h {
        p[base..base + len].copy_from_slice(&b[..len]);
    } else {
        splice(p, base..base + old_h, &[&b[..len]]);
    }
}

/// Appends entries at the end.
pub fn push(p: &mut Vec<u8>, entries: &[&[u8]]) {
    push_in(p, 0, entries)
}

/// [`push`] for a pack that starts at `p[base..]` (after a caller's own
/// header, e.g. a set's tag byte).
pub fn push_in(p: &mut Vec<u8>, base: usize, entries: &[&[u8]]) {
    let n = count(&p[base..]);
    p.reserve(entries.iter().map(|e| entry_bytes(e.len())).sum());
    // Bounded by entries.len().
    for e in entries {
        varint::put(p, e.len() as u64);
        p.extend_from_slice(e);
    }
    set_count(p, base, n + entries.len());
}

/// Inserts entries before the entry at `offset` (or at the end if
/// `offset` is the pack's length).
pub fn insert(p: &mut Vec<u8>, offset: usize, entries: &[&[u8]]) {
    let n = count(p);
    match entries {
        [e] => {
            // The common case (LPUSH, one member): no temporary at all.
            let (b, len) = varint_bytes(e.len() as u64);
            splice(p, offset..offset, &[&b[..len], e]);
        }
        _ => {
            let mut add = Vec::with_capacity(entries.iter().map(|e| entry_bytes(e.len())).sum());
            // Bounded by entries.len().
            for e in entries {
                varint::put(&mut add, e.len() as u64);
                add.extend_from_slice(e);
            }
            splice(p, offset..offset, &[&add]);
        }
    }
    set_count(p, 0, n + entries.len());
}

/// Removes `k` entries starting with the one at `offset`.
pub fn remove(p: &mut Vec<u8>, offset: usize, k: usize) {
    remove_in(p, 0, offset, k)
}

/// [`remove`] for a pack that starts at `p[base..]`; `offset` is relative
/// to the pack.
pub fn remove_in(p: &mut Vec<u8>, base: usize, offset: usize, k: usize) {
    let n = count(&p[base..]);
    let mut end = offset;
    // Bounded by k.
    for _ in 0..k {
        match entry_at(&p[base..], end) {
            Some((_, next)) => end = next,
            None => break,
        }
    }
    splice(p, base + offset..base + end, &[]);
    set_count(p, base, n.saturating_sub(k));
}

/// Replaces the entry at `offset` with `entry`.
pub fn replace(p: &mut Vec<u8>, offset: usize, entry: &[u8]) {
    let end = entry_at(p, offset).map_or(offset, |(_, next)| next);
    let (b, len) = varint_bytes(entry.len() as u64);
    // A same-size overwrite (HSET of a field's value by one as long)
    // moves nothing: splice only copies the new bytes over the old.
    splice(p, offset..end, &[&b[..len], entry]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_read_modify() {
        let mut p = new();
        assert_eq!(count(&p), 0);
        assert_eq!(validate(&p), Ok(0));
        push(&mut p, &[b"a", b"1", b"bb", b"22"]);
        assert_eq!(count(&p), 4);
        assert_eq!(iter(&p).collect::<Vec<_>>(), [&b"a"[..], b"1", b"bb", b"22"]);
        let pos = find(&p, 2, b"bb").unwrap();
        assert_eq!(pos.index, 2);
        assert_eq!(find(&p, 2, b"1"), None, "values are not keys");
        assert_eq!(find(&p, 1, b"1").unwrap().index, 1);
        replace(&mut p, pos.offset, b"xyz");
        assert_eq!(iter(&p).nth(2), Some(&b"xyz"[..]));
        remove(&mut p, pos.offset, 2);
        assert_eq!(iter(&p).collect::<Vec<_>>(), [&b"a"[..], b"1"]);
        let at = find(&p, 1, b"a").unwrap().offset;
        insert(&mut p, at, &[b"z"]);
        assert_eq!(iter(&p).collect::<Vec<_>>(), [&b"z"[..], b"a", b"1"]);
        assert_eq!(validate(&p), Ok(3));
        let q = from_entries(iter(&p));
        assert_eq!(p, q);
    }

    #[test]
    fn count_header_widens() {
        let mut p = new();
        // Bounded: 300 pushes.
        for i in 0..300u32 {
            push(&mut p, &[&i.to_le_bytes()]);
        }
        assert_eq!(validate(&p), Ok(300));
        let pos = find(&p, 1, &5u32.to_le_bytes()).unwrap();
        remove(&mut p, pos.offset, 200);
        assert_eq!(validate(&p), Ok(100));
        assert_eq!(iter(&p).last(), Some(&299u32.to_le_bytes()[..]));
    }

    #[test]
    fn edits_match_a_rebuilt_pack() {
        // Every in-place edit (splice: grow, shrink, same size; the count
        // header widening and narrowing at 128) against the pack rebuilt
        // from a plain list of entries.
        let mut p = new();
        let mut model: Vec<Vec<u8>> = Vec::new();
        let mut s = 0x2545_F491_4F6C_DD1Du64;
        // Bounded: 3,000 random edits.
        for _ in 0..3_000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let e: Vec<u8> = vec![(s >> 8) as u8; (s >> 16) as usize % 200];
            let i = if model.is_empty() { 0 } else { (s >> 32) as usize % model.len() };
            let mut it = iter(&p);
            it.by_ref().take(i).for_each(drop);
            let offset = it.pos().offset;
            match s % 4 {
                0 | 1 if model.len() < 300 => {
                    insert(&mut p, offset, &[&e]);
                    model.insert(i, e);
                }
                2 if !model.is_empty() => {
                    replace(&mut p, offset, &e);
                    model[i] = e;
                }
                _ if !model.is_empty() => {
                    remove(&mut p, offset, 1);
                    model.remove(i);
                }
                _ => {}
            }
            assert_eq!(p, from_entries(model.iter().map(Vec::as_slice)));
        }
        // Several entries at once, and a same-size replace.
        let first = iter(&p).pos().offset;
        insert(&mut p, first, &[b"ab", b"cd"]);
        model.splice(0..0, [b"ab".to_vec(), b"cd".to_vec()]);
        replace(&mut p, first, b"xy");
        model[0] = b"xy".to_vec();
        assert_eq!(p, from_entries(model.iter().map(Vec::as_slice)));
    }

    #[test]
    fn garbage_never_panics() {
        let mut s = 0x9E37_79B9_7F4A_7C15u64;
        // Bounded: 20,000 random byte strings.
        for _ in 0..20_000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let len = (s % 24) as usize;
            let bytes: Vec<u8> = (0..len).map(|i| (s >> (i % 8 * 8)) as u8).collect();
            let _ = validate(&bytes);
            let _ = iter(&bytes).count();
            let _ = find(&bytes, 2, b"x");
        }
        assert_eq!(validate(&[1]), Err(Corrupt));
        assert_eq!(validate(&[1, 0, 0]), Err(Corrupt), "trailing bytes");
    }
}
