//! Redis's listpack (`listpack.c`), read-only: the blob inside
//! `RDB_TYPE_HASH_LISTPACK`, `RDB_TYPE_ZSET_LISTPACK` and the packed
//! nodes of `RDB_TYPE_LIST_QUICKLIST_2`.
//!
//! ## Layout
//! ```text
//!   total bytes u32 LE | entry count u16 LE (65535: unknown) | entry* | 0xFF
//!   entry = encoding+data | backlen (1-5 bytes: encoding+data's length)
//! ```
//! Encodings by the first byte:
//!
//! | first byte | entry |
//! |---|---|
//! | `0xxxxxxx` | 7-bit unsigned integer |
//! | `10xxxxxx` | string, 6-bit length, then the bytes |
//! | `110xxxxx` + 1 byte | 13-bit signed integer |
//! | `1110xxxx` + 1 byte | string, 12-bit length, then the bytes |
//! | `0xF0` + u32 LE | string, 32-bit length, then the bytes |
//! | `0xF1` `0xF2` `0xF3` `0xF4` | signed integer of 16, 24, 32, 64 bits LE |
//! | `0xFF` | the end |
//!
//! The backlen (`lpEncodeBacklen`) is the length of encoding plus data in
//! 7-bit groups, most significant first, every byte but the first with
//! its high bit set, so it reads backwards from the next entry.
//!
//! ## Checks (Redis's `lpValidateIntegrity` with `deep`)
//! The header's total equals the blob's length; the blob ends with the
//! only 0xFF met at an entry's start; every entry lies inside the blob;
//! every backlen is exactly the one Redis writes for its entry; the count
//! matches the header's (unless unknown). Bounded: each entry advances at
//! least two bytes.

/// Header: total bytes (u32) and entry count (u16).
pub const HEADER_BYTES: usize = 6;
/// The header's count when the list holds 65535 entries or more.
pub const COUNT_UNKNOWN: u16 = u16::MAX;
/// The end marker.
const EOF: u8 = 0xFF;

/// One listpack entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry<'a> {
    Int(i64),
    Str(&'a [u8]),
}

impl Entry<'_> {
    /// The element's bytes: a string as it is, an integer in decimal
    /// (as Redis's `lpGetValue` callers make it).
    pub fn to_bytes(self) -> Vec<u8> {
        match self {
            Entry::Int(i) => i.to_string().into_bytes(),
            Entry::Str(s) => s.to_vec(),
        }
    }
}

/// The bytes `lpEncodeBacklen` writes for an entry of `len` bytes.
fn backlen_bytes(len: usize) -> ([u8; 5], usize) {
    let mut b = [0u8; 5];
    // Redis's thresholds, strict as lpEncodeBacklen writes them.
    let n = if len <= 127 {
        1
    } else if len < 16383 {
        2
    } else if len < 2_097_151 {
        3
    } else if len < 268_435_455 {
        4
    } else {
        5
    };
    for (i, slot) in b.iter_mut().take(n).enumerate() {
        let shift = 7 * (n - 1 - i);
        let group = ((len >> shift) & 127) as u8;
        *slot = if i == 0 { group } else { group | 128 };
    }
    (b, n)
}

fn sign_extend(v: u64, bits: u32) -> i64 {
    let shift = 64 - bits;
    ((v << shift) as i64) >> shift
}

/// Reads the entry at `lp[pos..]`: the entry and the length of its
/// encoding plus data, or `None` if it does not fit.
fn entry_at(lp: &[u8], pos: usize) -> Option<(Entry<'_>, usize)> {
    let b0 = *lp.get(pos)?;
    let byte = |i: usize| lp.get(pos + i).copied().map(u64::from);
    let le = |n: usize| -> Option<u64> {
        let s = lp.get(pos + 1..pos + 1 + n)?;
        Some(s.iter().rev().fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
    };
    let string = |hdr: usize, len: usize| -> Option<(Entry<'_>, usize)> {
        let start = pos.checked_add(hdr)?;
        let s = lp.get(start..start.checked_add(len)?)?;
        Some((Entry::Str(s), hdr + len))
    };
    match b0 {
        0x00..=0x7f => Some((Entry::Int(i64::from(b0)), 1)),
        0x80..=0xbf => string(1, usize::from(b0 & 0x3f)),
        0xc0..=0xdf => {
            let v = (u64::from(b0 & 0x1f) << 8) | byte(1)?;
            Some((Entry::Int(sign_extend(v, 13)), 2))
        }
        0xe0..=0xef => {
            let len = (usize::from(b0 & 0x0f) << 8) | usize::try_from(byte(1)?).ok()?;
            string(2, len)
        }
        0xf0 => string(5, usize::try_from(le(4)?).ok()?),
        0xf1 => Some((Entry::Int(sign_extend(le(2)?, 16)), 3)),
        0xf2 => Some((Entry::Int(sign_extend(le(3)?, 24)), 4)),
        0xf3 => Some((Entry::Int(sign_extend(le(4)?, 32)), 5)),
        0xf4 => Some((Entry::Int(le(8)? as i64), 9)),
        _ => None,
    }
}

/// Calls `f` with every entry of the listpack `lp`, in order, after
/// checking the whole of it (see the module notes); `None` if it is
/// malformed or `f` refused an entry. Nothing is called for a malformed
/// listpack. Returns the number of entries.
pub fn for_each<'a>(lp: &'a [u8], mut f: impl FnMut(Entry<'a>) -> Option<()>) -> Option<usize> {
    let count = check(lp)?;
    let mut pos = HEADER_BYTES;
    // Bounded: check() walked the same entries.
    while lp[pos] != EOF {
        let (e, len) = entry_at(lp, pos)?;
        f(e)?;
        pos += len + backlen_bytes(len).1;
    }
    Some(count)
}

/// Checks `lp` whole; its number of entries.
fn check(lp: &[u8]) -> Option<usize> {
    if lp.len() < HEADER_BYTES + 1 {
        return None;
    }
    let total = u32::from_le_bytes([lp[0], lp[1], lp[2], lp[3]]) as usize;
    let declared = u16::from_le_bytes([lp[4], lp[5]]);
    if total != lp.len() || lp[lp.len() - 1] != EOF {
        return None;
    }
    let mut pos = HEADER_BYTES;
    let mut count = 0usize;
    // Bounded: each entry advances pos by at least 2 (one byte of
    // encoding, one of backlen) and pos stays below lp.len().
    while lp[pos] != EOF {
        let (_, len) = entry_at(lp, pos)?;
        let (back, n) = backlen_bytes(len);
        let end = pos + len;
        if lp.get(end..end + n)? != &back[..n] {
            return None;
        }
        pos = end + n;
        if pos >= lp.len() {
            return None;
        }
        count += 1;
    }
    if pos != lp.len() - 1 {
        return None;
    }
    if declared != COUNT_UNKNOWN && usize::from(declared) != count {
        return None;
    }
    Some(count)
}

/// A listpack of `entries` as Redis writes it, with the encodings Redis
/// picks for their lengths and values (streams' DUMP, `stream.rs`; the
/// tests).
pub(crate) fn build(entries: &[Entry<'_>]) -> Vec<u8> {
    let mut body = Vec::new();
    for e in entries {
        let start = body.len();
        match *e {
            Entry::Int(i) => {
                if (0..=127).contains(&i) {
                    body.push(i as u8);
                } else if (-4096..4096).contains(&i) {
                    let v = (i as u64) & 0x1fff;
                    body.push(0xc0 | (v >> 8) as u8);
                    body.push(v as u8);
                } else if i16::try_from(i).is_ok() {
                    body.push(0xf1);
                    body.extend_from_slice(&(i as i16).to_le_bytes());
                } else if (-(1 << 23)..(1 << 23)).contains(&i) {
                    body.push(0xf2);
                    body.extend_from_slice(&(i as i32).to_le_bytes()[..3]);
                } else if i32::try_from(i).is_ok() {
                    body.push(0xf3);
                    body.extend_from_slice(&(i as i32).to_le_bytes());
                } else {
                    body.push(0xf4);
                    body.extend_from_slice(&i.to_le_bytes());
                }
            }
            Entry::Str(s) => {
                if s.len() < 64 {
                    body.push(0x80 | s.len() as u8);
                } else if s.len() < 4096 {
                    body.push(0xe0 | (s.len() >> 8) as u8);
                    body.push(s.len() as u8);
                } else {
                    body.push(0xf0);
                    body.extend_from_slice(&(s.len() as u32).to_le_bytes());
                }
                body.extend_from_slice(s);
            }
        }
        let (b, n) = backlen_bytes(body.len() - start);
        body.extend_from_slice(&b[..n]);
    }
    let total = HEADER_BYTES + body.len() + 1;
    let mut lp = Vec::with_capacity(total);
    lp.extend_from_slice(&(total as u32).to_le_bytes());
    lp.extend_from_slice(&(entries.len().min(COUNT_UNKNOWN as usize) as u16).to_le_bytes());
    lp.extend_from_slice(&body);
    lp.push(EOF);
    lp
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn read(lp: &[u8]) -> Option<Vec<Entry<'_>>> {
        let mut v = Vec::new();
        for_each(lp, |e| {
            v.push(e);
            Some(())
        })?;
        Some(v)
    }

    #[test]
    fn round_trip_every_encoding() {
        let long = vec![b'x'; 5000];
        let mid = vec![b'y'; 300];
        let entries = [
            Entry::Int(0),
            Entry::Int(127),
            Entry::Int(-1),
            Entry::Int(4095),
            Entry::Int(-4096),
            Entry::Int(30000),
            Entry::Int(-8_000_000),
            Entry::Int(2_000_000_000),
            Entry::Int(i64::MIN),
            Entry::Str(b""),
            Entry::Str(b"abc"),
            Entry::Str(&mid),
            Entry::Str(&long),
        ];
        let lp = build(&entries);
        assert_eq!(read(&lp).unwrap(), entries);
    }

    #[test]
    fn backlen_matches_redis() {
        assert_eq!(backlen_bytes(127), ([127, 0, 0, 0, 0], 1));
        assert_eq!(backlen_bytes(128), ([1, 128, 0, 0, 0], 2));
        assert_eq!(backlen_bytes(16383).1, 3);
    }

    #[test]
    fn hostile() {
        let lp = build(&[Entry::Str(b"abc"), Entry::Int(5)]);
        // Truncated, wrong total, wrong count, bad backlen, bad encoding.
        assert!(read(&lp[..lp.len() - 1]).is_none());
        let mut t = lp.clone();
        t[0] += 1;
        assert!(read(&t).is_none());
        let mut c = lp.clone();
        c[4] = 3;
        assert!(read(&c).is_none());
        let mut b = lp.clone();
        b[HEADER_BYTES + 4] = 9;
        assert!(read(&b).is_none());
        let mut e = lp.clone();
        e[HEADER_BYTES] = 0xf5;
        assert!(read(&e).is_none());
        // A 32-bit string length past the end.
        let mut big = build(&[Entry::Str(&[b'z'; 5000])]);
        big[HEADER_BYTES + 1..HEADER_BYTES + 5].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(read(&big).is_none());
        // Unknown count is accepted.
        let mut u = lp.clone();
        u[4..6].copy_from_slice(&COUNT_UNKNOWN.to_le_bytes());
        assert_eq!(read(&u).unwrap().len(), 2);
    }
}
