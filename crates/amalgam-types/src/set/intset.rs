//! Redis's intset as bytes: sorted distinct integers, all in the
//! narrowest width (2, 4 or 8 bytes, little-endian) that holds every one
//! of them; binary search for lookups. The width only widens (as Redis's).
//!
//! ```text
//! [width: 2|4|8][v0][v1]...[vn-1]     v0 < v1 < ... (signed)
//! ```
//! Readers never panic on other bytes: a bad width reads as empty.

use crate::Corrupt;

/// The widths an intset may use, narrowest first.
const WIDTHS: [usize; 3] = [2, 4, 8];

/// An empty intset.
pub(crate) fn new() -> Vec<u8> {
    vec![2]
}

/// True if `tag` (a compact set's first byte) names an intset width.
pub(crate) fn is_tag(tag: u8) -> bool {
    WIDTHS.contains(&(tag as usize))
}

fn width(b: &[u8]) -> usize {
    match b.first() {
        Some(&w) if is_tag(w) => w as usize,
        _ => 0,
    }
}

/// The narrowest width that holds `v`.
fn width_for(v: i64) -> usize {
    if i16::try_from(v).is_ok() {
        2
    } else if i32::try_from(v).is_ok() {
        4
    } else {
        8
    }
}

/// Members.
pub(crate) fn len(b: &[u8]) -> usize {
    match width(b) {
        0 => 0,
        w => (b.len() - 1) / w,
    }
}

fn read(chunk: &[u8]) -> i64 {
    match *chunk {
        [a, b] => i64::from(i16::from_le_bytes([a, b])),
        [a, b, c, d] => i64::from(i32::from_le_bytes([a, b, c, d])),
        [a, b, c, d, e, f, g, h] => i64::from_le_bytes([a, b, c, d, e, f, g, h]),
        _ => 0,
    }
}

/// The i-th smallest member (`i < len`).
pub(crate) fn get(b: &[u8], i: usize) -> i64 {
    let w = width(b);
    b.get(1 + i * w..1 + (i + 1) * w).map_or(0, read)
}

/// Members in ascending order.
pub(crate) fn iter(b: &[u8]) -> impl Iterator<Item = i64> + '_ {
    let w = width(b).max(1);
    let body = if width(b) == 0 { &[][..] } else { &b[1..] };
    body.chunks_exact(w).map(read)
}

/// Binary search: Ok(index) if present, Err(insertion index) if not.
/// Bounded: log2(len) probes.
pub(crate) fn search(b: &[u8], v: i64) -> Result<usize, usize> {
    let (mut lo, mut hi) = (0, len(b));
    while lo < hi {
        let mid = (lo + hi) / 2;
        match get(b, mid).cmp(&v) {
            std::cmp::Ordering::Less => lo = mid + 1,
            std::cmp::Ordering::Greater => hi = mid,
            std::cmp::Ordering::Equal => return Ok(mid),
        }
    }
    Err(lo)
}

/// Smallest and largest member.
pub(crate) fn min_max(b: &[u8]) -> Option<(i64, i64)> {
    let n = len(b);
    (n > 0).then(|| (get(b, 0), get(b, n - 1)))
}

/// Adds `v`; false if present. Widens all members first if needed.
pub(crate) fn insert(b: &mut Vec<u8>, v: i64) -> bool {
    let Err(at) = search(b, v) else { return false };
    let w = width(b).max(2);
    let need = width_for(v);
    if need > w {
        let mut wide = Vec::with_capacity(1 + (len(b) + 1) * need);
        wide.push(need as u8);
        // Bounded by the members.
        for x in iter(b) {
            wide.extend_from_slice(&x.to_le_bytes()[..need]);
        }
        *b = wide;
    }
    let w = width(b);
    let pos = 1 + at * w;
    b.splice(pos..pos, v.to_le_bytes()[..w].iter().copied());
    true
}

/// Removes `v`; false if absent.
pub(crate) fn remove(b: &mut Vec<u8>, v: i64) -> bool {
    let Ok(at) = search(b, v) else { return false };
    let w = width(b);
    b.drain(1 + at * w..1 + (at + 1) * w);
    true
}

/// Checks untrusted bytes: a known width, whole members, strictly
/// ascending. Returns the count.
pub(crate) fn validate(b: &[u8]) -> Result<usize, Corrupt> {
    let w = width(b);
    if w == 0 || (b.len() - 1) % w != 0 {
        return Err(Corrupt);
    }
    let mut prev: Option<i64> = None;
    // Bounded by the members.
    for x in iter(b) {
        if prev.is_some_and(|p| p >= x) {
            return Err(Corrupt);
        }
        prev = Some(x);
    }
    Ok(len(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widens_and_stays_sorted() {
        let mut b = new();
        for v in [5i64, -3, 40_000, 1 << 40, -(1 << 40), 0, i64::MIN, i64::MAX] {
            assert!(insert(&mut b, v));
            assert!(!insert(&mut b, v));
        }
        assert_eq!(b[0], 8);
        let all: Vec<i64> = iter(&b).collect();
        let mut sorted = all.clone();
        sorted.sort();
        assert_eq!(all, sorted);
        assert_eq!(validate(&b), Ok(8));
        assert!(remove(&mut b, 40_000));
        assert!(!remove(&mut b, 40_000));
        assert_eq!(search(&b, 5).map(|i| get(&b, i)), Ok(5));
        assert_eq!(min_max(&b), Some((i64::MIN, i64::MAX)));
        assert_eq!(validate(&[3, 0]), Err(Corrupt));
        assert_eq!(validate(&[2, 5, 0, 5, 0]), Err(Corrupt), "not ascending");
        assert_eq!(len(&[7, 1, 2]), 0);
    }
}
