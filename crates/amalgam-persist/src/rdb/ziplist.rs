//! Redis's ziplist (`ziplist.c`), read-only: the blob inside the types
//! Redis 3.2–6.2 wrote (`LIST_ZIPLIST` 10, `ZSET_ZIPLIST` 12,
//! `HASH_ZIPLIST` 13, and each node of `LIST_QUICKLIST` 14), which Redis
//! 7.0 still loads (converting them to listpacks): a payload DUMPed by
//! Redis 6 (RDB version 9) restores here as it does in 7.0.
//!
//! ## Layout
//! ```text
//!   zlbytes u32 LE | zltail u32 LE (offset of the last entry) | zllen u16 LE | entry* | 0xFF
//!   entry = prevlen (1 byte < 254, or 0xFE + u32 LE) | encoding | data
//! ```
//! Encodings by the first byte:
//!
//! | first byte | entry |
//! |---|---|
//! | `00pppppp` | string, 6-bit length |
//! | `01pppppp` + 1 byte | string, 14-bit length (big-endian) |
//! | `0x80` + u32 BE | string, 32-bit length |
//! | `0xC0` `0xD0` `0xE0` | int16, int32, int64 LE |
//! | `0xF0` | int24 LE |
//! | `0xFE` | int8 |
//! | `0xF1`..=`0xFD` | the integer 0..=12 (the low nibble minus one) |
//! | `0xFF` | the end |
//!
//! ## Checks (Redis's `ziplistValidateIntegrity` with `deep`)
//! zlbytes equals the blob's length and the blob ends with 0xFF, met only
//! there at an entry's start; every entry lies inside the blob; every
//! prevlen is the previous entry's length; zltail is the last entry's
//! offset; zllen matches the count unless it is 65535 (unknown).
//! Bounded: each entry advances at least two bytes.

use super::listpack::Entry;

/// zlbytes, zltail, zllen.
const HEADER_BYTES: usize = 10;
/// zllen when the list holds 65535 entries or more.
const COUNT_UNKNOWN: u16 = u16::MAX;
const END: u8 = 0xFF;
/// A prevlen byte saying "four bytes follow".
const PREVLEN_BIG: u8 = 0xFE;

/// The entry at `zl[pos..]`: its prevlen, the entry, and its whole length.
fn entry_at(zl: &[u8], pos: usize) -> Option<(usize, Entry<'_>, usize)> {
    let (prevlen, p) = match *zl.get(pos)? {
        PREVLEN_BIG => {
            let s = zl.get(pos + 1..pos + 5)?;
            (u32::from_le_bytes([s[0], s[1], s[2], s[3]]) as usize, pos + 5)
        }
        n => (usize::from(n), pos + 1),
    };
    let b0 = *zl.get(p)?;
    let le = |n: usize| -> Option<i64> {
        let s = zl.get(p + 1..p + 1 + n)?;
        let mut v = [0u8; 8];
        v[..n].copy_from_slice(s);
        // Sign-extend from n bytes.
        let shift = 64 - 8 * n as u32;
        Some((i64::from_le_bytes(v) << shift) >> shift)
    };
    let string = |hdr: usize, len: usize| -> Option<(Entry<'_>, usize)> {
        let start = p.checked_add(hdr)?;
        let s = zl.get(start..start.checked_add(len)?)?;
        Some((Entry::Str(s), hdr + len))
    };
    let (e, enc_and_data) = match b0 {
        0x00..=0x3f => string(1, usize::from(b0 & 0x3f))?,
        0x40..=0x7f => string(2, (usize::from(b0 & 0x3f) << 8) | usize::from(*zl.get(p + 1)?))?,
        0x80 => {
            let s = zl.get(p + 1..p + 5)?;
            string(5, u32::from_be_bytes([s[0], s[1], s[2], s[3]]) as usize)?
        }
        0xc0 => (Entry::Int(le(2)?), 3),
        0xd0 => (Entry::Int(le(4)?), 5),
        0xe0 => (Entry::Int(le(8)?), 9),
        0xf0 => (Entry::Int(le(3)?), 4),
        0xfe => (Entry::Int(le(1)?), 2),
        0xf1..=0xfd => (Entry::Int(i64::from(b0 & 0x0f) - 1), 1),
        _ => return None,
    };
    Some((prevlen, e, p - pos + enc_and_data))
}

/// Calls `f` with every entry of the ziplist `zl`, in order, after
/// checking the whole of it (module notes); `None` if it is malformed or
/// `f` refused an entry. Returns the number of entries.
pub fn for_each<'a>(zl: &'a [u8], mut f: impl FnMut(Entry<'a>) -> Option<()>) -> Option<usize> {
    let count = check(zl)?;
    let mut pos = HEADER_BYTES;
    // Bounded: check() walked the same entries.
    while zl[pos] != END {
        let (_, e, len) = entry_at(zl, pos)?;
        f(e)?;
        pos += len;
    }
    Some(count)
}

fn check(zl: &[u8]) -> Option<usize> {
    if zl.len() < HEADER_BYTES + 1 {
        return None;
    }
    let zlbytes = u32::from_le_bytes([zl[0], zl[1], zl[2], zl[3]]) as usize;
    let zltail = u32::from_le_bytes([zl[4], zl[5], zl[6], zl[7]]) as usize;
    let zllen = u16::from_le_bytes([zl[8], zl[9]]);
    if zlbytes != zl.len() || zl[zl.len() - 1] != END {
        return None;
    }
    let (mut pos, mut prev_len, mut last, mut count) = (HEADER_BYTES, 0usize, HEADER_BYTES, 0usize);
    // Bounded: each entry advances pos by at least 2 (prevlen and
    // encoding) and pos stays below zl.len().
    while zl[pos] != END {
        let (prevlen, _, len) = entry_at(zl, pos)?;
        if prevlen != prev_len || pos + len >= zl.len() {
            return None;
        }
        last = pos;
        prev_len = len;
        pos += len;
        count += 1;
    }
    if pos != zl.len() - 1 || last != zltail {
        return None;
    }
    if zllen != COUNT_UNKNOWN && usize::from(zllen) != count {
        return None;
    }
    Some(count)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A ziplist of `entries` as Redis writes it (for tests).
    pub(crate) fn build(entries: &[Entry<'_>]) -> Vec<u8> {
        let mut body = Vec::new();
        let (mut prev, mut tail) = (0usize, HEADER_BYTES);
        for e in entries {
            let start = body.len();
            tail = HEADER_BYTES + start;
            if prev < 254 {
                body.push(prev as u8);
            } else {
                body.push(PREVLEN_BIG);
                body.extend_from_slice(&(prev as u32).to_le_bytes());
            }
            match *e {
                Entry::Int(i) if (0..=12).contains(&i) => body.push(0xf1 + i as u8),
                Entry::Int(i) if i8::try_from(i).is_ok() => body.extend_from_slice(&[0xfe, i as u8]),
                Entry::Int(i) if i16::try_from(i).is_ok() => {
                    body.push(0xc0);
                    body.extend_from_slice(&(i as i16).to_le_bytes());
                }
                Entry::Int(i) if (-(1 << 23)..(1 << 23)).contains(&i) => {
                    body.push(0xf0);
                    body.extend_from_slice(&(i as i32).to_le_bytes()[..3]);
                }
                Entry::Int(i) if i32::try_from(i).is_ok() => {
                    body.push(0xd0);
                    body.extend_from_slice(&(i as i32).to_le_bytes());
                }
                Entry::Int(i) => {
                    body.push(0xe0);
                    body.extend_from_slice(&i.to_le_bytes());
                }
                Entry::Str(s) if s.len() < 64 => {
                    body.push(s.len() as u8);
                    body.extend_from_slice(s);
                }
                Entry::Str(s) if s.len() < 16384 => {
                    body.extend_from_slice(&[0x40 | (s.len() >> 8) as u8, s.len() as u8]);
                    body.extend_from_slice(s);
                }
                Entry::Str(s) => {
                    body.push(0x80);
                    body.extend_from_slice(&(s.len() as u32).to_be_bytes());
                    body.extend_from_slice(s);
                }
            }
            prev = body.len() - start;
        }
        let total = HEADER_BYTES + body.len() + 1;
        let mut zl = Vec::with_capacity(total);
        zl.extend_from_slice(&(total as u32).to_le_bytes());
        zl.extend_from_slice(&(tail as u32).to_le_bytes());
        zl.extend_from_slice(&(entries.len().min(COUNT_UNKNOWN as usize) as u16).to_le_bytes());
        zl.extend_from_slice(&body);
        zl.push(END);
        zl
    }

    fn read(zl: &[u8]) -> Option<Vec<Entry<'_>>> {
        let mut v = Vec::new();
        for_each(zl, |e| {
            v.push(e);
            Some(())
        })?;
        Some(v)
    }

    #[test]
    fn round_trip_every_encoding() {
        let long = vec![b'x'; 20_000];
        let mid = vec![b'y'; 300];
        let entries = [
            Entry::Int(0),
            Entry::Int(12),
            Entry::Int(-1),
            Entry::Int(100),
            Entry::Int(-30000),
            Entry::Int(8_000_000),
            Entry::Int(-2_000_000_000),
            Entry::Int(i64::MAX),
            Entry::Str(b""),
            Entry::Str(b"abc"),
            Entry::Str(&mid),
            Entry::Str(&long),
            Entry::Str(b"after a long one: a 5-byte prevlen"),
        ];
        let zl = build(&entries);
        assert_eq!(read(&zl).unwrap(), entries);
    }

    #[test]
    fn hostile() {
        let zl = build(&[Entry::Str(b"abc"), Entry::Int(5), Entry::Str(b"z")]);
        assert!(read(&zl[..zl.len() - 1]).is_none());
        let mut t = zl.clone();
        t[0] += 1;
        assert!(read(&t).is_none());
        let mut tail = zl.clone();
        tail[4] += 1;
        assert!(read(&tail).is_none());
        let mut n = zl.clone();
        n[8] = 7;
        assert!(read(&n).is_none());
        let mut prev = zl.clone();
        prev[HEADER_BYTES + 5] = 9;
        assert!(read(&prev).is_none());
        let mut enc = zl.clone();
        enc[HEADER_BYTES + 1] = 0x81;
        assert!(read(&enc).is_none());
        let mut u = zl.clone();
        u[8..10].copy_from_slice(&COUNT_UNKNOWN.to_le_bytes());
        assert_eq!(read(&u).unwrap().len(), 3);
    }
}
