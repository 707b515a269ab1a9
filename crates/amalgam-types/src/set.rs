//! Set (work in progress).

/// Redis's `string2ll`: `s` as an i64 iff it is the integer's canonical
/// decimal form (no sign but `-`, no leading zeros, no `-0`, at most 20
/// bytes, in range). This decides intset membership and HINCRBY's and
/// INCR's "is an integer".
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    /// Redis's `LONG_STR_SIZE` (21): longer strings are not integers.
    const INT_STR_BYTES_MAX: usize = 20;
    if s.is_empty() || s.len() > INT_STR_BYTES_MAX {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (neg, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, s),
    };
    match digits.first() {
        Some(b'1'..=b'9') => {}
        _ => return None,
    }
    let mut v: u64 = 0;
    // Bounded: ≤ 20 digits.
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    if neg {
        // -(2^63) is i64::MIN, which wrapping_neg maps to itself.
        (v <= 1 << 63).then(|| (v as i64).wrapping_neg())
    } else {
        i64::try_from(v).ok()
    }
}
