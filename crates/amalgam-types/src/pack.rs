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

/// Rewrites the count header of the pack at `p[base..]` (it may change
/// width).
fn set_count(p: &mut Vec<u8>, base: usize, n: usize) {
    let old_h = header(&p[base..]).map_or(0, |(_, h)| h);
    let mut v = Vec::with_capacity(varint::VARINT_BYTES_MAX);
    varint::put(&mut v, n as u64);
    p.splice(base..base + old_h, v);
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
    let mut add = Vec::with_capacity(entries.iter().map(|e| entry_bytes(e.len())).sum());
    // Bounded by entries.len().
    for e in entries {
        varint::put(&mut add, e.len() as u64);
        add.extend_from_slice(e);
    }
    p.splice(offset..offset, add);
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
    p.drain(base + offset..base + end);
    set_count(p, base, n.saturating_sub(k));
}

/// Replaces the entry at `offset` with `entry`.
pub fn replace(p: &mut Vec<u8>, offset: usize, entry: &[u8]) {
    let end = entry_at(p, offset).map_or(offset, |(_, next)| next);
    let mut add = Vec::with_capacity(entry_bytes(entry.len()));
    varint::put(&mut add, entry.len() as u64);
    add.extend_from_slice(entry);
    p.splice(offset..end, add);
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
