//! memcached's binary protocol: requests parsed from the front of a read
//! buffer, responses composed into a write buffer.
//!
//! Deprecated by memcached 1.6 but still spoken by spymemcached and other
//! Java clients, pylibmc with `binary=True` and libmemcached's
//! `memccapable -b`. A connection speaks it when its first byte is
//! [`MAGIC_REQUEST`] (memcached's `try_read_command_negotiate`), and then
//! for the rest of its life.
//!
//! ## Packet layout (all numbers big-endian)
//! ```text
//!   byte   0      1       2..3     4       5         6..7      8..11     12..15   16..23
//!        magic  opcode  key len  extras  data type  vbucket/  body len  opaque   CAS
//!        0x80/                   len                status
//!        0x81                                      (response)
//!   then body = extras (extras len) | key (key len) | value (the rest)
//! ```
//!
//! ## What memcached 1.6.18 does, and so this parser (`proto_bin.c`)
//! * It waits for the 24-byte header, then for the extras and the key
//!   (not the value): a magic other than `0x80` closes the connection
//!   without a reply; a key and extras longer than the body answer
//!   `Unknown command` and close; a key over [`KEY_BYTES_MAX`] answers
//!   `Invalid arguments` and closes; so does a known command whose
//!   extras, key or body lengths are not its own.
//! * A value over the item size limit answers `Too large.` at once and
//!   the value's bytes are swallowed as they arrive (a refused `set` also
//!   unlinks the key's old value); the connection stays open.
//! * An unknown opcode (and, without SASL, the SASL opcodes 0x20-0x22, and
//!   `verbosity` 0x1b, which 1.6 no longer dispatches) answers
//!   `Unknown command`. memcached swallows the whole body length *after*
//!   the extras and key it has already consumed; we copy that, so the
//!   stream stays in step with memcached's for the same bytes.
//! * touch/gat and stat consume only the header, extras and key: body
//!   bytes past them are read as the next request (memcached does not
//!   check the body length of these commands).
//! * Quiet commands (`…Q`) answer nothing on success; they do answer
//!   errors, except a get/gat miss, which is silent.

use crate::text::{Limits, Unlink};
use crate::KEY_BYTES_MAX;

/// First byte of every request; a text connection never starts with it.
pub const MAGIC_REQUEST: u8 = 0x80;
/// First byte of every response.
pub const MAGIC_RESPONSE: u8 = 0x81;
/// Bytes of a request or response header.
pub const HEADER_BYTES: usize = 24;
/// Longest request the parser ever waits to see whole before deciding:
/// header, extras and a key up to the 16-bit key length.
pub const HEAD_BYTES_MAX: usize = HEADER_BYTES + u8::MAX as usize + u16::MAX as usize;
/// The extras of a set/add/replace: flags and expiration.
pub const STORE_EXTRAS_BYTES: usize = 8;
/// The extras of incr/decr: delta, initial value and expiration.
pub const ARITH_EXTRAS_BYTES: usize = 20;
/// The extras of touch/gat and of a flush with a delay: an expiration.
pub const EXPIRY_EXTRAS_BYTES: usize = 4;
/// The incr/decr expiration that means "do not create a missing counter".
pub const ARITH_NO_CREATE: u32 = 0xffff_ffff;

/// Opcodes (memcached's `protocol_binary_command`).
pub mod opcode {
    pub const GET: u8 = 0x00;
    pub const SET: u8 = 0x01;
    pub const ADD: u8 = 0x02;
    pub const REPLACE: u8 = 0x03;
    pub const DELETE: u8 = 0x04;
    pub const INCREMENT: u8 = 0x05;
    pub const DECREMENT: u8 = 0x06;
    pub const QUIT: u8 = 0x07;
    pub const FLUSH: u8 = 0x08;
    pub const GETQ: u8 = 0x09;
    pub const NOOP: u8 = 0x0a;
    pub const VERSION: u8 = 0x0b;
    pub const GETK: u8 = 0x0c;
    pub const GETKQ: u8 = 0x0d;
    pub const APPEND: u8 = 0x0e;
    pub const PREPEND: u8 = 0x0f;
    pub const STAT: u8 = 0x10;
    pub const SETQ: u8 = 0x11;
    pub const ADDQ: u8 = 0x12;
    pub const REPLACEQ: u8 = 0x13;
    pub const DELETEQ: u8 = 0x14;
    pub const INCREMENTQ: u8 = 0x15;
    pub const DECREMENTQ: u8 = 0x16;
    pub const QUITQ: u8 = 0x17;
    pub const FLUSHQ: u8 = 0x18;
    pub const APPENDQ: u8 = 0x19;
    pub const PREPENDQ: u8 = 0x1a;
    /// Not dispatched by memcached 1.6: answered `Unknown command`.
    pub const VERBOSITY: u8 = 0x1b;
    pub const TOUCH: u8 = 0x1c;
    pub const GAT: u8 = 0x1d;
    pub const GATQ: u8 = 0x1e;
    pub const SASL_LIST_MECHS: u8 = 0x20;
    pub const SASL_AUTH: u8 = 0x21;
    pub const SASL_STEP: u8 = 0x22;
    pub const GATK: u8 = 0x23;
    pub const GATKQ: u8 = 0x24;
}

/// Response statuses (memcached's `protocol_binary_response_status`).
pub mod status {
    pub const SUCCESS: u16 = 0x00;
    pub const KEY_ENOENT: u16 = 0x01;
    pub const KEY_EEXISTS: u16 = 0x02;
    pub const E2BIG: u16 = 0x03;
    pub const EINVAL: u16 = 0x04;
    pub const NOT_STORED: u16 = 0x05;
    pub const DELTA_BADVAL: u16 = 0x06;
    /// "The vbucket belongs to another server" (protocol_binary.h):
    /// memcached never sends it; a Redis Cluster node's memcached port
    /// answers it for a key of another node's slot.
    pub const NOT_MY_VBUCKET: u16 = 0x07;
    pub const UNKNOWN_COMMAND: u16 = 0x81;
    pub const ENOMEM: u16 = 0x82;
}

/// memcached's body for an error status (`write_bin_error`).
pub fn error_text(status: u16) -> &'static str {
    match status {
        status::KEY_ENOENT => "Not found",
        status::KEY_EEXISTS => "Data exists for key.",
        status::E2BIG => "Too large.",
        status::EINVAL => "Invalid arguments",
        status::NOT_STORED => "Not stored.",
        status::DELTA_BADVAL => "Non-numeric server-side value for incr or decr",
        status::UNKNOWN_COMMAND => "Unknown command",
        status::ENOMEM => "Out of memory",
        _ => "",
    }
}

/// The storage commands; a non-zero request CAS makes set/add/replace a
/// compare-and-swap and guards append/prepend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreOp {
    Set,
    Add,
    Replace,
    Append,
    Prepend,
}

/// A request's command and its arguments, borrowing from the read buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command<'a> {
    /// get, getq, getk, getkq.
    Get {
        key: &'a [u8],
        quiet: bool,
        with_key: bool,
    },
    /// touch: answers the flags, no value.
    Touch {
        key: &'a [u8],
        exptime: u32,
    },
    /// gat, gatq, gatk, gatkq.
    Gat {
        key: &'a [u8],
        exptime: u32,
        quiet: bool,
        with_key: bool,
    },
    /// set/add/replace (flags and expiration from the extras) and
    /// append/prepend (no extras: flags and expiration are 0 and unused).
    Store {
        op: StoreOp,
        key: &'a [u8],
        flags: u32,
        exptime: u32,
        value: &'a [u8],
        quiet: bool,
    },
    Delete {
        key: &'a [u8],
        quiet: bool,
    },
    /// incr/decr with memcached's initial value and expiration for a
    /// missing counter ([`ARITH_NO_CREATE`]: do not create).
    Arith {
        incr: bool,
        key: &'a [u8],
        delta: u64,
        initial: u64,
        exptime: u32,
        quiet: bool,
    },
    Quit {
        quiet: bool,
    },
    /// flush with its delay (0: now).
    Flush {
        exptime: u32,
        quiet: bool,
    },
    Noop,
    Version,
    /// stat with its group (the key; empty for the general stats).
    Stat {
        group: &'a [u8],
    },
}

/// One parsed request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request<'a> {
    /// The opcode as sent (quiet variants included): responses echo it.
    pub opcode: u8,
    /// Echoed in the response.
    pub opaque: u32,
    /// The request's CAS (0: none).
    pub cas: u64,
    pub command: Command<'a>,
}

/// The error response a failure answers with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrorReply {
    pub opcode: u8,
    pub status: u16,
    pub opaque: u32,
}

/// How to react to input that is not a request to execute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The error to answer ([`push_error`]); None answers nothing.
    pub reply: Option<ErrorReply>,
    /// Bytes of the buffer this failure used up.
    pub consumed: usize,
    /// Further bytes to discard (a refused value, an unknown command's
    /// body), counted from `consumed` on.
    pub swallow: usize,
    /// Close the connection after answering.
    pub close: bool,
    /// A key to unlink (offsets from the request's start): memcached drops
    /// the old value of a `set` it refuses as too large.
    pub unlink: Option<Unlink>,
}

/// What [`parse`] found at the front of the buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parse<'a> {
    /// A request and the number of bytes it used.
    Done(Request<'a>, usize),
    /// Not enough bytes to decide yet.
    Incomplete,
    /// Invalid input and what to do about it.
    Fail(Failure),
}

fn be_u16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}

fn be_u32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn be_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_be_bytes(a)
}

/// Parses one request from the front of `buf` (see the module doc for
/// memcached's reactions, which this reproduces). Never reads past
/// [`HEAD_BYTES_MAX`] bytes before deciding, except for a store's value,
/// which is at most `limits.value_bytes_max`.
pub fn parse(buf: &[u8], limits: Limits) -> Parse<'_> {
    if buf.len() < HEADER_BYTES {
        return Parse::Incomplete;
    }
    let opcode = buf[1];
    let key_len = be_u16(&buf[2..4]) as usize;
    let extras_len = buf[4] as usize;
    let body_len = be_u32(&buf[8..12]) as usize;
    let opaque = be_u32(&buf[12..16]);
    let cas = be_u64(&buf[16..24]);
    let fail = |status: u16, consumed: usize, swallow: usize, close: bool| {
        Parse::Fail(Failure {
            reply: Some(ErrorReply { opcode, status, opaque }),
            consumed,
            swallow,
            close,
            unlink: None,
        })
    };
    if buf[0] != MAGIC_REQUEST {
        return Parse::Fail(Failure { reply: None, consumed: buf.len(), swallow: 0, close: true, unlink: None });
    }
    let head = HEADER_BYTES + extras_len + key_len;
    if buf.len() < head {
        return Parse::Incomplete;
    }
    if key_len + extras_len > body_len {
        return fail(status::UNKNOWN_COMMAND, head, 0, true);
    }
    if key_len > KEY_BYTES_MAX {
        return fail(status::EINVAL, head, 0, true);
    }
    let extras = &buf[HEADER_BYTES..HEADER_BYTES + extras_len];
    let key = &buf[HEADER_BYTES + extras_len..head];
    let request = |command| Request { opcode, opaque, cas, command };
    let invalid = fail(status::EINVAL, head, 0, true);
    // Only the header, extras and key with every length as its command
    // requires (memcached's `protocol_error` checks in dispatch).
    let bare = extras_len == 0 && key_len == 0 && body_len == 0;
    use opcode::*;
    let command = match opcode {
        GET | GETQ | GETK | GETKQ => {
            if extras_len != 0 || body_len != key_len || key_len == 0 {
                return invalid;
            }
            Command::Get { key, quiet: matches!(opcode, GETQ | GETKQ), with_key: matches!(opcode, GETK | GETKQ) }
        }
        TOUCH | GAT | GATQ | GATK | GATKQ => {
            if extras_len != EXPIRY_EXTRAS_BYTES || key_len == 0 {
                return invalid;
            }
            let exptime = be_u32(extras);
            if opcode == TOUCH {
                Command::Touch { key, exptime }
            } else {
                Command::Gat {
                    key,
                    exptime,
                    quiet: matches!(opcode, GATQ | GATKQ),
                    with_key: matches!(opcode, GATK | GATKQ),
                }
            }
        }
        SET | SETQ | ADD | ADDQ | REPLACE | REPLACEQ | APPEND | APPENDQ | PREPEND | PREPENDQ => {
            let (op, quiet) = match opcode {
                SET => (StoreOp::Set, false),
                SETQ => (StoreOp::Set, true),
                ADD => (StoreOp::Add, false),
                ADDQ => (StoreOp::Add, true),
                REPLACE => (StoreOp::Replace, false),
                REPLACEQ => (StoreOp::Replace, true),
                APPEND => (StoreOp::Append, false),
                APPENDQ => (StoreOp::Append, true),
                PREPEND => (StoreOp::Prepend, false),
                _ => (StoreOp::Prepend, true),
            };
            let concat = matches!(op, StoreOp::Append | StoreOp::Prepend);
            let ok =
                if concat { key_len > 0 && extras_len == 0 } else { extras_len == STORE_EXTRAS_BYTES && key_len > 0 };
            if !ok {
                return invalid;
            }
            let value_len = body_len - key_len - extras_len;
            if value_len > limits.value_bytes_max {
                let unlink = (op == StoreOp::Set).then_some(Unlink {
                    start: HEADER_BYTES + extras_len,
                    end: head,
                    base64: false,
                });
                return Parse::Fail(Failure {
                    reply: Some(ErrorReply { opcode, status: status::E2BIG, opaque }),
                    consumed: head,
                    swallow: value_len,
                    close: false,
                    unlink,
                });
            }
            let end = head + value_len;
            if buf.len() < end {
                return Parse::Incomplete;
            }
            let (flags, exptime) = if concat { (0, 0) } else { (be_u32(&extras[..4]), be_u32(&extras[4..8])) };
            let value = &buf[head..end];
            return Parse::Done(request(Command::Store { op, key, flags, exptime, value, quiet }), end);
        }
        DELETE | DELETEQ => {
            if key_len == 0 || extras_len != 0 || body_len != key_len {
                return invalid;
            }
            Command::Delete { key, quiet: opcode == DELETEQ }
        }
        INCREMENT | INCREMENTQ | DECREMENT | DECREMENTQ => {
            if key_len == 0 || extras_len != ARITH_EXTRAS_BYTES || body_len != key_len + extras_len {
                return invalid;
            }
            Command::Arith {
                incr: matches!(opcode, INCREMENT | INCREMENTQ),
                key,
                delta: be_u64(&extras[0..8]),
                initial: be_u64(&extras[8..16]),
                exptime: be_u32(&extras[16..20]),
                quiet: matches!(opcode, INCREMENTQ | DECREMENTQ),
            }
        }
        QUIT | QUITQ => {
            if !bare {
                return invalid;
            }
            Command::Quit { quiet: opcode == QUITQ }
        }
        FLUSH | FLUSHQ => {
            if key_len != 0 || body_len != extras_len || !(extras_len == 0 || extras_len == EXPIRY_EXTRAS_BYTES) {
                return invalid;
            }
            let exptime = if extras_len == EXPIRY_EXTRAS_BYTES { be_u32(extras) } else { 0 };
            Command::Flush { exptime, quiet: opcode == FLUSHQ }
        }
        NOOP | VERSION => {
            if !bare {
                return invalid;
            }
            if opcode == NOOP {
                Command::Noop
            } else {
                Command::Version
            }
        }
        STAT => {
            if extras_len != 0 {
                return invalid;
            }
            Command::Stat { group: key }
        }
        SASL_LIST_MECHS => {
            if !bare {
                return invalid;
            }
            return fail(status::UNKNOWN_COMMAND, head, 0, false);
        }
        SASL_AUTH | SASL_STEP => {
            if extras_len != 0 || key_len == 0 {
                return invalid;
            }
            // Without SASL memcached swallows the body past the key.
            return fail(status::UNKNOWN_COMMAND, head, body_len - key_len, false);
        }
        _ => return fail(status::UNKNOWN_COMMAND, head, body_len, false),
    };
    Parse::Done(request(command), head)
}

/// Appends a response header.
#[allow(clippy::too_many_arguments)]
pub fn push_header(
    out: &mut Vec<u8>,
    opcode: u8,
    status: u16,
    opaque: u32,
    cas: u64,
    extras_len: u8,
    key_len: u16,
    body_len: u32,
) {
    out.push(MAGIC_RESPONSE);
    out.push(opcode);
    out.extend_from_slice(&key_len.to_be_bytes());
    out.push(extras_len);
    out.push(0); // data type: raw bytes
    out.extend_from_slice(&status.to_be_bytes());
    out.extend_from_slice(&body_len.to_be_bytes());
    out.extend_from_slice(&opaque.to_be_bytes());
    out.extend_from_slice(&cas.to_be_bytes());
}

/// Appends a whole response: header, extras, key, value.
///
/// ```
/// use amalgam_protocol::binary::{push_response, opcode, status};
/// let mut out = Vec::new();
/// push_response(&mut out, opcode::GETK, status::SUCCESS, 7, 3, &5u32.to_be_bytes(), b"k", b"hi");
/// assert_eq!(out.len(), 24 + 4 + 1 + 2);
/// assert_eq!(&out[..2], &[0x81, 0x0c]);
/// ```
#[allow(clippy::too_many_arguments)]
pub fn push_response(
    out: &mut Vec<u8>,
    opcode: u8,
    status: u16,
    opaque: u32,
    cas: u64,
    extras: &[u8],
    key: &[u8],
    value: &[u8],
) {
    debug_assert!(extras.len() <= u8::MAX as usize && key.len() <= u16::MAX as usize);
    let body = extras.len() + key.len() + value.len();
    out.reserve(HEADER_BYTES + body);
    push_header(out, opcode, status, opaque, cas, extras.len() as u8, key.len() as u16, body as u32);
    out.extend_from_slice(extras);
    out.extend_from_slice(key);
    out.extend_from_slice(value);
}

/// Appends memcached's error response for `reply` (CAS 0, the status's
/// text as the body).
pub fn push_error(out: &mut Vec<u8>, reply: ErrorReply) {
    push_error_text(out, reply, error_text(reply.status));
}

/// Appends an error response with a text of its own (memcached's
/// `out_of_memory` messages, without their `SERVER_ERROR ` prefix).
pub fn push_error_text(out: &mut Vec<u8>, reply: ErrorReply, text: &str) {
    push_response(out, reply.opcode, reply.status, reply.opaque, 0, &[], &[], text.as_bytes());
}

/// Builds a request packet (for tests, tools and clients).
///
/// ```
/// use amalgam_protocol::binary::{opcode, request, parse, Command, Parse};
/// use amalgam_protocol::text::Limits;
/// let p = request(opcode::GET, b"k", &[], b"", 9, 0);
/// match parse(&p, Limits { value_bytes_max: 1 << 20 }) {
///     Parse::Done(r, n) => {
///         assert_eq!(n, p.len());
///         assert_eq!(r.command, Command::Get { key: b"k", quiet: false, with_key: false });
///     }
///     other => panic!("{other:?}"),
/// }
/// ```
pub fn request(opcode: u8, key: &[u8], extras: &[u8], value: &[u8], opaque: u32, cas: u64) -> Vec<u8> {
    let mut p = Vec::with_capacity(HEADER_BYTES + extras.len() + key.len() + value.len());
    p.push(MAGIC_REQUEST);
    p.push(opcode);
    p.extend_from_slice(&(key.len() as u16).to_be_bytes());
    p.push(extras.len() as u8);
    p.push(0);
    p.extend_from_slice(&[0, 0]);
    p.extend_from_slice(&((extras.len() + key.len() + value.len()) as u32).to_be_bytes());
    p.extend_from_slice(&opaque.to_be_bytes());
    p.extend_from_slice(&cas.to_be_bytes());
    p.extend_from_slice(extras);
    p.extend_from_slice(key);
    p.extend_from_slice(value);
    p
}

// A whole store request (header, extras, a key within the limit, a value
// within -I) fits the read buffer the server sizes for a text command line
// and its data block.
const _: () = assert!(HEADER_BYTES + u8::MAX as usize + KEY_BYTES_MAX < crate::LINE_BYTES_MAX);
// A head the parser waits for fits the read buffer's floor.
const _: () = assert!(HEAD_BYTES_MAX < crate::GET_LINE_BYTES_MAX);

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits { value_bytes_max: 16 };

    fn done(p: &[u8]) -> (Request<'_>, usize) {
        match parse(p, LIMITS) {
            Parse::Done(r, n) => (r, n),
            other => panic!("{other:?}"),
        }
    }

    fn failure(p: &[u8]) -> Failure {
        match parse(p, LIMITS) {
            Parse::Fail(f) => f,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn header_fields() {
        let p = request(opcode::GETKQ, b"key", &[], b"", 0x0102_0304, 0x1122_3344_5566_7788);
        assert_eq!(&p[..12], &[0x80, 0x0d, 0, 3, 0, 0, 0, 0, 0, 0, 0, 3]);
        let (r, n) = done(&p);
        assert_eq!(n, p.len());
        assert_eq!((r.opcode, r.opaque, r.cas), (opcode::GETKQ, 0x0102_0304, 0x1122_3344_5566_7788));
        assert_eq!(r.command, Command::Get { key: b"key", quiet: true, with_key: true });
    }

    /// Parses `p` whole and compares its command with `want`.
    #[track_caller]
    fn check(p: Vec<u8>, want: Command<'_>) {
        let (r, n) = done(&p);
        assert_eq!((r.command, n), (want, p.len()));
    }

    #[test]
    fn every_command_shape() {
        let set_extras = [0, 0, 0, 7, 0, 0, 0, 60];
        check(
            request(opcode::ADDQ, b"k", &set_extras, b"val", 1, 5),
            Command::Store { op: StoreOp::Add, key: b"k", flags: 7, exptime: 60, value: b"val", quiet: true },
        );
        check(
            request(opcode::PREPEND, b"k", &[], b"v", 1, 0),
            Command::Store { op: StoreOp::Prepend, key: b"k", flags: 0, exptime: 0, value: b"v", quiet: false },
        );
        let mut ext = Vec::new();
        ext.extend_from_slice(&3u64.to_be_bytes());
        ext.extend_from_slice(&9u64.to_be_bytes());
        ext.extend_from_slice(&ARITH_NO_CREATE.to_be_bytes());
        check(
            request(opcode::DECREMENTQ, b"n", &ext, b"", 1, 0),
            Command::Arith { incr: false, key: b"n", delta: 3, initial: 9, exptime: ARITH_NO_CREATE, quiet: true },
        );
        check(
            request(opcode::GATK, b"k", &100u32.to_be_bytes(), b"", 1, 0),
            Command::Gat { key: b"k", exptime: 100, quiet: false, with_key: true },
        );
        check(request(opcode::TOUCH, b"k", &5u32.to_be_bytes(), b"", 1, 0), Command::Touch { key: b"k", exptime: 5 });
        check(
            request(opcode::FLUSHQ, b"", &10u32.to_be_bytes(), b"", 1, 0),
            Command::Flush { exptime: 10, quiet: true },
        );
        check(request(opcode::FLUSH, b"", &[], b"", 1, 0), Command::Flush { exptime: 0, quiet: false });
        check(request(opcode::DELETEQ, b"k", &[], b"", 1, 0), Command::Delete { key: b"k", quiet: true });
        check(request(opcode::QUITQ, b"", &[], b"", 1, 0), Command::Quit { quiet: true });
        check(request(opcode::NOOP, b"", &[], b"", 1, 0), Command::Noop);
        check(request(opcode::VERSION, b"", &[], b"", 1, 0), Command::Version);
        check(request(opcode::STAT, b"items", &[], b"", 1, 0), Command::Stat { group: b"items" });
    }

    #[test]
    fn every_prefix_is_incomplete() {
        let p = request(opcode::SET, b"key", &[0; 8], b"value", 1, 0);
        for cut in 0..p.len() {
            assert_eq!(parse(&p[..cut], LIMITS), Parse::Incomplete, "cut {cut}");
        }
        // A pipelined next request is not read into this one.
        let mut two = p.clone();
        two.extend_from_slice(&request(opcode::NOOP, b"", &[], b"", 2, 0));
        assert_eq!(done(&two).1, p.len());
    }

    #[test]
    fn touch_and_stat_leave_extra_body_bytes_unread() {
        // memcached reads only header, extras and key for these.
        let mut p = request(opcode::TOUCH, b"k", &[0; 4], b"", 1, 0);
        let head = p.len();
        p[8..12].copy_from_slice(&(5 + 24u32).to_be_bytes());
        assert_eq!(done(&p).1, head);
        let mut p = request(opcode::STAT, b"", &[], b"", 1, 0);
        p[8..12].copy_from_slice(&24u32.to_be_bytes());
        assert_eq!(done(&p).1, HEADER_BYTES);
    }

    #[test]
    fn malformed_headers() {
        // Bad magic: close without a reply.
        let mut p = request(opcode::NOOP, b"", &[], b"", 1, 0);
        p[0] = 0x81;
        let f = failure(&p);
        assert_eq!((f.reply, f.close), (None, true));
        // Key and extras longer than the body: Unknown command, close.
        let mut p = request(opcode::GET, b"abc", &[], b"", 9, 0);
        p[8..12].copy_from_slice(&2u32.to_be_bytes());
        let f = failure(&p);
        assert_eq!(f.reply, Some(ErrorReply { opcode: opcode::GET, status: status::UNKNOWN_COMMAND, opaque: 9 }));
        assert!(f.close);
        // A key over 250 bytes: Invalid arguments, close.
        let f = failure(&request(opcode::GET, &[b'k'; 251], &[], b"", 1, 0));
        assert_eq!((f.reply.map(|r| r.status), f.close), (Some(status::EINVAL), true));
        // Wrong lengths for the command.
        for p in [
            request(opcode::GET, b"", &[], b"", 1, 0),
            request(opcode::SET, b"k", &[0; 4], b"v", 1, 0),
            request(opcode::INCREMENT, b"k", &[0; 20], b"v", 1, 0),
            request(opcode::NOOP, b"", &[], b"x", 1, 0),
            request(opcode::FLUSH, b"", &[0; 2], b"", 1, 0),
            request(opcode::SASL_AUTH, b"", &[], b"", 1, 0),
        ] {
            let f = failure(&p);
            assert_eq!((f.reply.map(|r| r.status), f.close), (Some(status::EINVAL), true), "{p:?}");
        }
    }

    #[test]
    fn unknown_commands_swallow_their_body_after_the_key() {
        let f = failure(&request(0x50, b"abc", &[0; 2], b"xyz", 4, 0));
        assert_eq!(f.reply, Some(ErrorReply { opcode: 0x50, status: status::UNKNOWN_COMMAND, opaque: 4 }));
        assert_eq!((f.consumed, f.swallow, f.close), (HEADER_BYTES + 5, 8, false));
        let f = failure(&request(opcode::SASL_AUTH, b"PLAIN", &[], b"data", 4, 0));
        assert_eq!((f.consumed, f.swallow, f.close), (HEADER_BYTES + 5, 4, false));
        let f = failure(&request(opcode::VERBOSITY, b"", &[0; 4], b"", 4, 0));
        assert_eq!(f.reply.map(|r| r.status), Some(status::UNKNOWN_COMMAND));
    }

    #[test]
    fn too_large_is_decided_from_the_head() {
        let p = request(opcode::SET, b"key", &[0; 8], &[b'v'; 17], 3, 0);
        let head = HEADER_BYTES + 8 + 3;
        let f = failure(&p[..head]);
        assert_eq!(f.reply, Some(ErrorReply { opcode: opcode::SET, status: status::E2BIG, opaque: 3 }));
        assert_eq!((f.consumed, f.swallow, f.close), (head, 17, false));
        assert_eq!(f.unlink, Some(Unlink { start: HEADER_BYTES + 8, end: head, base64: false }));
        // Only a set unlinks the old value.
        let f = failure(&request(opcode::ADD, b"key", &[0; 8], &[b'v'; 17], 3, 0));
        assert_eq!(f.unlink, None);
        // At the limit is fine.
        assert!(matches!(parse(&request(opcode::SET, b"key", &[0; 8], &[b'v'; 16], 3, 0), LIMITS), Parse::Done(..)));
    }

    #[test]
    fn responses() {
        let mut out = Vec::new();
        push_response(&mut out, opcode::GETK, status::SUCCESS, 0x0a0b_0c0d, 2, &[0, 0, 0, 9], b"k", b"vv");
        assert_eq!(
            out,
            [
                &[0x81, 0x0c, 0, 1, 4, 0, 0, 0, 0, 0, 0, 7, 0x0a, 0x0b, 0x0c, 0x0d, 0, 0, 0, 0, 0, 0, 0, 2][..],
                &[0, 0, 0, 9],
                b"k",
                b"vv"
            ]
            .concat()
        );
        out.clear();
        push_error(&mut out, ErrorReply { opcode: opcode::INCREMENT, status: status::DELTA_BADVAL, opaque: 1 });
        assert_eq!(&out[6..8], &[0, 6]);
        assert_eq!(&out[24..], b"Non-numeric server-side value for incr or decr");
        assert_eq!(u32::from_be_bytes([out[8], out[9], out[10], out[11]]) as usize, out.len() - 24);
    }
}
