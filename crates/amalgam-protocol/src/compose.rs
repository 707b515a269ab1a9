//! Reply composition into a caller's buffer: no allocation beyond the
//! buffer's own growth, numbers formatted on the stack.

/// Appends the decimal form of `v`.
pub fn push_u64(out: &mut Vec<u8>, mut v: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// Appends `line` and CRLF.
pub fn push_line(out: &mut Vec<u8>, line: &str) {
    out.extend_from_slice(line.as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// Appends one get hit: `VALUE <key> <flags> <bytes>[ <cas>]\r\n<data>\r\n`.
///
/// ```
/// let mut out = Vec::new();
/// amalgam_protocol::compose::push_value(&mut out, b"k", 5, b"hi", Some(9));
/// assert_eq!(out, b"VALUE k 5 2 9\r\nhi\r\n");
/// ```
pub fn push_value(out: &mut Vec<u8>, key: &[u8], flags: u32, data: &[u8], cas: Option<u64>) {
    out.reserve(key.len() + data.len() + 48);
    out.extend_from_slice(b"VALUE ");
    out.extend_from_slice(key);
    out.push(b' ');
    push_u64(out, flags as u64);
    out.push(b' ');
    push_u64(out, data.len() as u64);
    if let Some(c) = cas {
        out.push(b' ');
        push_u64(out, c);
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

/// Appends one `STAT <name> <value>\r\n` line.
pub fn push_stat(out: &mut Vec<u8>, name: &str, value: impl std::fmt::Display) {
    use std::io::Write;
    let _ = write!(out, "STAT {name} {value}\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        for v in [0u64, 7, 10, 99, 12345, u64::MAX] {
            let mut out = Vec::new();
            push_u64(&mut out, v);
            assert_eq!(out, v.to_string().as_bytes());
        }
    }
}
