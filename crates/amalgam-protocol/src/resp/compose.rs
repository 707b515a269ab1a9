//! Reply composition, RESP2 and RESP3, into the caller's write buffer.
//!
//! A connection speaks RESP2 until it sends `HELLO 3`. The two differ only
//! where RESP3 has a type RESP2 lacks; each function here writes the
//! RESP2 form Redis itself falls back to:
//!
//! | RESP3 | RESP2 |
//! |---|---|
//! | null `_` | null bulk `$-1` (or null array `*-1`) |
//! | map `%n` | flat array `*2n` |
//! | set `~n` | array `*n` |
//! | verbatim `=len txt:…` | bulk string |

use crate::compose::push_u64;

/// The protocol version a connection speaks (`HELLO 2|3`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Proto {
    #[default]
    Resp2,
    Resp3,
}

fn push_i64(out: &mut Vec<u8>, v: i64) {
    if v < 0 {
        out.push(b'-');
    }
    push_u64(out, v.unsigned_abs());
}

fn push_header(out: &mut Vec<u8>, kind: u8, n: u64) {
    out.push(kind);
    push_u64(out, n);
    out.extend_from_slice(b"\r\n");
}

/// `+text\r\n`; `text` holds no CR or LF.
///
/// ```
/// let mut out = Vec::new();
/// amalgam_protocol::resp::push_simple(&mut out, "OK");
/// assert_eq!(out, b"+OK\r\n");
/// ```
pub fn push_simple(out: &mut Vec<u8>, text: &str) {
    debug_assert!(!text.contains(['\r', '\n']));
    out.push(b'+');
    out.extend_from_slice(text.as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// `-message\r\n`, with any CR or LF in `message` (which may quote the
/// client's input) turned into spaces, as Redis's `addReplyErrorFormat`
/// does.
///
/// ```
/// let mut out = Vec::new();
/// amalgam_protocol::resp::push_error(&mut out, b"ERR unknown command 'a\r\nb'");
/// assert_eq!(out, b"-ERR unknown command 'a  b'\r\n");
/// ```
pub fn push_error(out: &mut Vec<u8>, message: &[u8]) {
    out.push(b'-');
    out.extend(message.iter().map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }));
    out.extend_from_slice(b"\r\n");
}

/// `:n\r\n`.
///
/// ```
/// let mut out = Vec::new();
/// amalgam_protocol::resp::push_int(&mut out, -2);
/// assert_eq!(out, b":-2\r\n");
/// ```
pub fn push_int(out: &mut Vec<u8>, n: i64) {
    out.push(b':');
    push_i64(out, n);
    out.extend_from_slice(b"\r\n");
}

/// `$len\r\nbytes\r\n`.
///
/// ```
/// let mut out = Vec::new();
/// amalgam_protocol::resp::push_bulk(&mut out, b"hi");
/// assert_eq!(out, b"$2\r\nhi\r\n");
/// ```
pub fn push_bulk(out: &mut Vec<u8>, bytes: &[u8]) {
    out.reserve(bytes.len() + 16);
    push_header(out, b'$', bytes.len() as u64);
    out.extend_from_slice(bytes);
    out.extend_from_slice(b"\r\n");
}

/// A missing value: `_` in RESP3, the null bulk string `$-1` in RESP2.
///
/// ```
/// use amalgam_protocol::resp::{push_null, Proto};
/// let mut out = Vec::new();
/// push_null(&mut out, Proto::Resp2);
/// push_null(&mut out, Proto::Resp3);
/// assert_eq!(out, b"$-1\r\n_\r\n");
/// ```
pub fn push_null(out: &mut Vec<u8>, proto: Proto) {
    out.extend_from_slice(match proto {
        Proto::Resp2 => b"$-1\r\n",
        Proto::Resp3 => b"_\r\n",
    });
}

/// A missing array: `_` in RESP3, the null array `*-1` in RESP2.
pub fn push_null_array(out: &mut Vec<u8>, proto: Proto) {
    out.extend_from_slice(match proto {
        Proto::Resp2 => b"*-1\r\n",
        Proto::Resp3 => b"_\r\n",
    });
}

/// The header of an array of `n` elements.
pub fn push_array(out: &mut Vec<u8>, n: usize) {
    push_header(out, b'*', n as u64);
}

/// The header of a map of `pairs` key-value pairs (`%` in RESP3, a flat
/// array of `2 * pairs` in RESP2); the caller writes key, value, ….
///
/// ```
/// use amalgam_protocol::resp::{push_map, Proto};
/// let mut out = Vec::new();
/// push_map(&mut out, 2, Proto::Resp2);
/// push_map(&mut out, 2, Proto::Resp3);
/// assert_eq!(out, b"*4\r\n%2\r\n");
/// ```
pub fn push_map(out: &mut Vec<u8>, pairs: usize, proto: Proto) {
    match proto {
        Proto::Resp2 => push_header(out, b'*', 2 * pairs as u64),
        Proto::Resp3 => push_header(out, b'%', pairs as u64),
    }
}

/// The header of a set of `n` elements (`~` in RESP3, an array in RESP2).
pub fn push_set(out: &mut Vec<u8>, n: usize, proto: Proto) {
    push_header(out, if proto == Proto::Resp3 { b'~' } else { b'*' }, n as u64);
}

/// A verbatim string of format `txt` or `mkd` (`=` in RESP3, a bulk
/// string in RESP2): how Redis sends INFO.
///
/// ```
/// use amalgam_protocol::resp::{push_verbatim, Proto};
/// let mut out = Vec::new();
/// push_verbatim(&mut out, Proto::Resp3, b"txt", b"a:1\r\n");
/// assert_eq!(out, b"=9\r\ntxt:a:1\r\n\r\n");
/// ```
pub fn push_verbatim(out: &mut Vec<u8>, proto: Proto, format: &[u8; 3], text: &[u8]) {
    match proto {
        Proto::Resp2 => push_bulk(out, text),
        Proto::Resp3 => {
            push_header(out, b'=', text.len() as u64 + 4);
            out.extend_from_slice(format);
            out.push(b':');
            out.extend_from_slice(text);
            out.extend_from_slice(b"\r\n");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers() {
        for v in [0i64, 1, -1, i64::MAX, i64::MIN] {
            let mut out = Vec::new();
            push_int(&mut out, v);
            assert_eq!(out, format!(":{v}\r\n").as_bytes());
        }
    }
}
