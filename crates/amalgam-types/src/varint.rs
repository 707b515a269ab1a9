//! The length prefix every encoding in this crate shares: unsigned
//! LEB128, 7 bits a byte, low bits first. Lengths below 128 take one
//! byte, below 16 Ki two, so a collection's element pays one or two
//! bytes for its length (Redis's listpack pays 2–3: an encoding byte and
//! a back-length).

/// Bytes a `u64` takes at most.
pub const VARINT_BYTES_MAX: usize = 10;

/// Bytes [`put`] writes for `v`.
pub fn len(v: u64) -> usize {
    // One byte per started group of 7 bits; 0 takes one byte.
    ((64 - (v | 1).leading_zeros()) as usize).div_ceil(7)
}

/// Appends `v` to `out`.
pub fn put(out: &mut Vec<u8>, mut v: u64) {
    // Bounded: at most VARINT_BYTES_MAX iterations (7 bits each).
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends `b` prefixed with its length as a varint.
pub fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// Writes `v` at the start of `out` (at least [`len`]`(v)` bytes long);
/// returns the bytes written.
pub fn write(out: &mut [u8], mut v: u64) -> usize {
    let mut i = 0;
    // Bounded: at most VARINT_BYTES_MAX iterations (7 bits each).
    while v >= 0x80 {
        out[i] = (v as u8) | 0x80;
        v >>= 7;
        i += 1;
    }
    out[i] = v as u8;
    i + 1
}

/// Reads a varint from the front of `buf`: its value and the bytes it
/// took, or None if `buf` ends inside it or it is longer than
/// [`VARINT_BYTES_MAX`] bytes or overflows a `u64`.
pub fn get(buf: &[u8]) -> Option<(u64, usize)> {
    // Nearly every length in a compact value is below 128: one byte,
    // answered without the loop (pack::find calls this per entry).
    if let Some(&b) = buf.first() {
        if b < 0x80 {
            return Some((u64::from(b), 1));
        }
    }
    let mut v = 0u64;
    for (i, &b) in buf.iter().take(VARINT_BYTES_MAX).enumerate() {
        let bits = u64::from(b & 0x7F);
        let shift = 7 * i as u32;
        if shift == 63 && bits > 1 {
            return None;
        }
        v |= bits << shift;
        if b & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_lengths() {
        for v in [0, 1, 127, 128, 16_383, 16_384, u32::MAX as u64, u64::MAX] {
            let mut out = Vec::new();
            put(&mut out, v);
            assert_eq!(out.len(), len(v), "{v}");
            let mut at = [0u8; VARINT_BYTES_MAX];
            assert_eq!(write(&mut at, v), out.len(), "{v}");
            assert_eq!(&at[..out.len()], &out[..], "{v}");
            assert_eq!(get(&out), Some((v, out.len())), "{v}");
            assert_eq!(get(&out[..out.len() - 1]), None, "truncated {v}");
        }
        assert_eq!(len(127), 1);
        assert_eq!(len(128), 2);
    }

    #[test]
    fn rejects_overlong_and_overflow() {
        assert_eq!(get(&[0x80; 11]), None);
        let mut over = vec![0xFF; 9];
        over.push(0x02); // bit 64 set
        assert_eq!(get(&over), None);
    }
}
