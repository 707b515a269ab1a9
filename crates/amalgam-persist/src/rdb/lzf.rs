//! LZF decompression (Marc Lehmann's liblzf, `lzf_d.c`), as Redis 7.0's
//! `rdbGenericLoadStringObject` applies it to an `RDB_ENC_LZF` string.
//!
//! ## The format
//! A run of instructions, each starting with a control byte `c`:
//! * `c < 32`: a literal run, the next `c + 1` bytes copied as they are;
//! * otherwise a back-reference: length `c >> 5` (7 means "7 plus the
//!   next byte"), then one more byte; the copy starts
//!   `((c & 0x1f) << 8) + that byte + 1` bytes back in the output and is
//!   `length + 2` bytes long (it may overlap what it writes, so it is
//!   copied byte by byte).
//!
//! ## Bounds
//! The output's length is declared by the payload; the caller checks it
//! against [`LZF_EXPANSION_MAX`] times the compressed length before
//! anything is allocated, so a hostile payload cannot make us allocate
//! more than its own size justifies. The loop consumes at least one input
//! byte per instruction and stops at the input's end; every copy is
//! checked against both buffers.

/// The most output bytes one input byte can produce: a back-reference of
/// three bytes (control, extra length 255, offset) copies 7 + 255 + 2 =
/// 264 bytes, 88 per input byte; a literal produces fewer.
pub const LZF_EXPANSION_MAX: usize = 88;

/// True if `input_len` compressed bytes can expand to `out_len` bytes
/// ([`LZF_EXPANSION_MAX`]): what a declared length is checked against
/// before anything is allocated or charged.
pub fn may_expand_to(input_len: usize, out_len: usize) -> bool {
    out_len <= input_len.saturating_mul(LZF_EXPANSION_MAX)
}

/// Decompresses `input` into exactly `out_len` bytes, or `None` if the
/// input is malformed or does not produce exactly `out_len` bytes.
/// Bounded: every instruction consumes at least one input byte.
pub fn decompress(input: &[u8], out_len: usize) -> Option<Vec<u8>> {
    if !may_expand_to(input.len(), out_len) {
        return None;
    }
    let mut out = Vec::with_capacity(out_len);
    let mut ip = 0;
    while ip < input.len() {
        let ctrl = usize::from(input[ip]);
        ip += 1;
        if ctrl < 32 {
            let run = ctrl + 1;
            let lit = input.get(ip..ip + run)?;
            if out.len() + run > out_len {
                return None;
            }
            out.extend_from_slice(lit);
            ip += run;
        } else {
            let mut len = ctrl >> 5;
            if len == 7 {
                len += usize::from(*input.get(ip)?);
                ip += 1;
            }
            let low = usize::from(*input.get(ip)?);
            ip += 1;
            let back = ((ctrl & 0x1f) << 8) + low + 1;
            let len = len + 2;
            if back > out.len() || out.len() + len > out_len {
                return None;
            }
            let from = out.len() - back;
            // Byte by byte: the source may overlap what is written.
            for i in 0..len {
                let b = out[from + i];
                out.push(b);
            }
        }
    }
    (out.len() == out_len).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_and_backref() {
        // "abcabcabc": literal "abc" then a reference 3 back, 6 long.
        let input = [2, b'a', b'b', b'c', (4 << 5), 2];
        assert_eq!(decompress(&input, 9).as_deref(), Some(&b"abcabcabc"[..]));
        // Wrong declared length either way.
        assert_eq!(decompress(&input, 8), None);
        assert_eq!(decompress(&input, 10), None);
    }

    #[test]
    fn hostile() {
        // Reference before any output.
        assert_eq!(decompress(&[0x20, 0], 3), None);
        // Literal past the end.
        assert_eq!(decompress(&[5, b'a'], 6), None);
        // Truncated reference.
        assert_eq!(decompress(&[0, b'a', 0xe0], 10), None);
        // A declared length no input could justify.
        assert_eq!(decompress(&[0, b'a'], 1 << 40), None);
    }
}
