//! # RESP: Redis's protocol, parsed and composed over borrowed bytes
//!
//! The second wire protocol of Amalgam (DESIGN.md § RESP), beside
//! memcached's [`text`](crate::text). Like it, this module does no I/O and
//! knows no engine: the server hands [`Parser::parse`] the bytes a
//! connection has buffered and gets back the arguments of one command,
//! borrowed from those bytes, or "read more", or a protocol error to answer
//! before closing; replies are composed into the server's write buffer with
//! the functions of [`compose`](self::compose).
//!
//! ## What "Redis's" means here
//! Redis 7's `networking.c` is the reference, behaviour and error text byte
//! for byte:
//! * A request starting with `*` is a multibulk array of bulk strings
//!   (`*<n>\r\n` then `$<len>\r\n<bytes>\r\n` per element); anything else
//!   is an inline command, one line split like `sdssplitargs` splits it
//!   (quotes, `\xHH` escapes).
//! * Counts and lengths are read with Redis's `string2ll` (no sign but `-`,
//!   no leading zeros, no spaces). An array header is found by its `\r`
//!   and, like Redis, the byte after a `\r` and the two bytes after a bulk
//!   string's body are skipped unchecked.
//! * `*0`, `*-1` and blank inline lines are empty commands: skipped, no
//!   reply.
//! * Every protocol error answers `-ERR Protocol error: …` and the
//!   connection is closed (Redis's `setProtocolError`); a request that
//!   outgrows [`Limits::request_bytes_max`] is closed without a reply, as
//!   Redis closes a client past `client-query-buffer-limit`.
//!
//! ## Limits (each one is Redis's unless said otherwise)
//! | limit | value | Redis |
//! |---|---|---|
//! | [`INLINE_BYTES_MAX`] | 64 KiB without a line end | `PROTO_INLINE_MAX_SIZE` |
//! | [`ARRAY_ELEMENTS_MAX`] | 1 Mi elements | 7.0: `INT_MAX` (bounded by the query buffer); 1 Mi up to 6.2 |
//! | [`Limits::bulk_bytes_max`] | the server's `proto-max-bulk-len` (512 MB), at most 1 GiB | `proto-max-bulk-len`, 512 MB |
//! | [`Limits::request_bytes_max`] | max([`REQUEST_BYTES_MIN`], bulk limit + 64 KiB) | `client-query-buffer-limit`, 1 GiB |
//!
//! ## Deviations, on purpose
//! Redis finds line ends with `strchr`, which stops at a NUL byte, so a NUL
//! before the `\r`/`\n` makes Redis wait for more input until the 64 KiB
//! limit; here a NUL is an ordinary byte (a header with one is an invalid
//! length; an inline line still ends at its first NUL, as `sdssplitargs`
//! makes it).
//!
//! ## Work per call
//! A request that arrives in pieces is not re-scanned: [`Parser`] keeps how
//! far it got (elements found, a header read, bytes searched for a line
//! end), so each byte is examined a bounded number of times however the
//! request is split into reads.

mod compose;
mod parse;

pub use compose::{
    push_array, push_bulk, push_error, push_int, push_map, push_null, push_null_array, push_set, push_simple,
    push_verbatim, Proto,
};
pub use parse::{string2ll, Limits, Parse, Parser, PendingBulk, ProtocolError};

/// Redis's `PROTO_INLINE_MAX_SIZE`: an inline command, or an array or
/// bulk-string header, with this many bytes buffered and no line end yet
/// is refused (`too big inline request`, `too big mbulk count string`,
/// `too big bulk count string`).
pub const INLINE_BYTES_MAX: usize = 64 * 1024;

/// Most elements an array request may declare (`invalid multibulk
/// length` past it). Redis 6.2 and earlier used this bound; 7.0 allows up
/// to `INT_MAX` and relies on its 1 GiB query-buffer limit instead.
pub const ARRAY_ELEMENTS_MAX: usize = 1024 * 1024;

/// Redis's `INT_MAX` check on the declared element count: the number in
/// the error's condition, kept to show the two bounds agree.
const ARRAY_ELEMENTS_REDIS_MAX: i64 = i32::MAX as i64;
const _: () = assert!((ARRAY_ELEMENTS_MAX as i64) <= ARRAY_ELEMENTS_REDIS_MAX);

/// Most elements an array request may declare while its connection must
/// still authenticate (`unauthenticated multibulk length` past it, and
/// the connection closed): Redis 7's bound, so a client without the
/// password cannot make the server hold a large request.
pub const UNAUTHENTICATED_ARRAY_ELEMENTS_MAX: usize = 10;

/// Longest bulk string while the connection must still authenticate
/// (`unauthenticated bulk length` past it, and closed): Redis 7's bound.
pub const UNAUTHENTICATED_BULK_BYTES_MAX: usize = 16 * 1024;

/// The least [`Limits::request_bytes_max`]: a whole request (all of an
/// MSET's arguments, say) must fit the connection's read buffer, which the
/// server lets grow to about this much per connection.
pub const REQUEST_BYTES_MIN: usize = 8 << 20;
const _: () = assert!(REQUEST_BYTES_MIN > INLINE_BYTES_MAX);

/// Error replies (without the leading `-` and trailing CRLF), Redis 7's
/// text. Protocol errors are [`ProtocolError::message`].
pub mod err {
    pub const SYNTAX: &str = "ERR syntax error";
    pub const NOT_INTEGER: &str = "ERR value is not an integer or out of range";
    pub const INT_RANGE: &str = "ERR value is out of range, value must between -2147483648 and 2147483647";
    pub const NOT_FLOAT: &str = "ERR value is not a valid float";
    pub const OVERFLOW: &str = "ERR increment or decrement would overflow";
    pub const DECR_OVERFLOW: &str = "ERR decrement would overflow";
    pub const NAN_OR_INF: &str = "ERR increment would produce NaN or Infinity";
    pub const OFFSET_RANGE: &str = "ERR offset is out of range";
    pub const STRING_TOO_LONG: &str = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";
    pub const DB_INDEX: &str = "ERR DB index is out of range";
    pub const INVALID_CURSOR: &str = "ERR invalid cursor";
    pub const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";
    pub const NOPROTO: &str = "NOPROTO unsupported protocol version";
    pub const PROTO_NOT_INTEGER: &str = "ERR Protocol version is not an integer or out of range";
    pub const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";
    pub const AUTH_NO_PASSWORD: &str = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?";
    pub const CLIENT_NAME: &str = "ERR Client names cannot contain spaces, newlines or special characters.";
    pub const EXPIRE_NX_XX: &str = "ERR NX and XX, GT or LT options at the same time are not compatible";
    pub const EXPIRE_GT_LT: &str = "ERR GT and LT options at the same time are not compatible";
}
