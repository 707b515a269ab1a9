//! # amalgam-protocol
//!
//! memcached's text, meta and binary protocols and Redis's RESP, parsed
//! from and composed into byte buffers.
//! No I/O, no engine: the server hands this crate the bytes it has read and
//! gets back requests that borrow from them (no copy of keys or values),
//! and composes replies into its write buffer with the functions here.
//!
//! ## What "memcached's" means here
//! Every reply line and every error string is memcached 1.6's, byte for
//! byte (`proto_text.c` is the reference): the tokenizer splits on spaces
//! only; token-count checks answer `ERROR`; bad numbers answer
//! `CLIENT_ERROR bad command line format` or the command's own message; a
//! value whose length exceeds the item size limit answers `SERVER_ERROR
//! object too large for cache` and its data is swallowed; a command line
//! longer than [`LINE_BYTES_MAX`] without a newline closes the connection
//! (multi-gets may be longer, up to [`GET_LINE_BYTES_MAX`]).
//!
//! ## Meta protocol
//! memcached's meta commands (mn/mg/ms/md/ma/me) are parsed in [`meta`],
//! reached from [`text::parse`] for any two-letter command starting `m`.
//!
//! ## Binary protocol
//! memcached's deprecated binary protocol (24-byte headers, opcodes,
//! statuses) is in [`binary`]: [`binary::parse`] has the same shape as
//! [`text::parse`] (a request borrowing the buffer, `Incomplete`, or a
//! failure saying what to answer, what to swallow and whether to close),
//! and the composers write responses with memcached 1.6.18's statuses and
//! error bodies. A connection is binary when its first byte is
//! [`binary::MAGIC_REQUEST`]; the server decides that once, as memcached
//! does. SASL is not implemented: its opcodes answer `Unknown command`,
//! as memcached started without `-S` does.
//!
//! ## RESP
//! Redis's protocol (RESP2 and RESP3: multibulk and inline requests,
//! Redis 7's protocol errors and limits) is in [`resp`], with the same
//! shape: borrowed arguments, no I/O.

#![forbid(unsafe_code)]

pub mod binary;
pub mod compose;
pub mod meta;
pub mod resp;
pub mod text;

/// memcached's `KEY_MAX_LENGTH`.
pub const KEY_BYTES_MAX: usize = 250;

/// A command line (without its data block) longer than this with no `\n`
/// closes the connection: memcached's check in `try_read_command_ascii`.
pub const LINE_BYTES_MAX: usize = 2048;

/// Longest multi-get line accepted. memcached grows its buffer without
/// bound for `get`/`gets` lines; we bound it (about 4000 keys of 250 bytes).
pub const GET_LINE_BYTES_MAX: usize = 1 << 20;

const _: () = assert!(LINE_BYTES_MAX < GET_LINE_BYTES_MAX);
const _: () = assert!(KEY_BYTES_MAX + 64 < LINE_BYTES_MAX);
