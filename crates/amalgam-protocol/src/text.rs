//! The text protocol's requests, parsed from the front of a read buffer.
//!
//! [`parse`] looks at the bytes a connection has buffered and returns one of:
//! a complete [`Request`] and the bytes it used; [`Parse::Incomplete`] (read
//! more); or a [`Failure`] that says what to answer, how many bytes to drop
//! and whether to close — exactly as memcached 1.6 reacts to the same input.

use crate::{GET_LINE_BYTES_MAX, KEY_BYTES_MAX, LINE_BYTES_MAX};

/// memcached's reply strings for failures (without the trailing CRLF).
pub mod reply {
    pub const ERROR: &str = "ERROR";
    pub const BAD_FORMAT: &str = "CLIENT_ERROR bad command line format";
    pub const BAD_CHUNK: &str = "CLIENT_ERROR bad data chunk";
    pub const BAD_EXPTIME: &str = "CLIENT_ERROR invalid exptime argument";
    pub const BAD_DELTA: &str = "CLIENT_ERROR invalid numeric delta argument";
    pub const DELETE_USAGE: &str = "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]";
    pub const TOO_LARGE: &str = "SERVER_ERROR object too large for cache";
    pub const OUT_OF_MEMORY: &str = "SERVER_ERROR out of memory storing object";
    pub const NON_NUMERIC: &str = "CLIENT_ERROR cannot increment or decrement non-numeric value";
    /// Not sent for a text command line: memcached closes such a
    /// connection silently (kept for callers that name it).
    pub const LINE_TOO_LONG: &str = "CLIENT_ERROR line too long";
}

/// The storage commands, which carry a data block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreOp {
    Set,
    Add,
    Replace,
    Append,
    Prepend,
    Cas,
}

/// The keys of a get-family command: the rest of the line, split on spaces
/// lazily (no allocation, any number of keys).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Keys<'a>(&'a [u8]);

impl<'a> Keys<'a> {
    /// Keys split from `line` (space-separated), as a get line's are: for
    /// callers that name keys or `stats` arguments without a text line
    /// (the binary protocol's `stat` group).
    pub fn new(line: &'a [u8]) -> Keys<'a> {
        Keys(line)
    }

    /// The keys in order.
    pub fn iter(&self) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.0.split(|&b| b == b' ').filter(|t| !t.is_empty())
    }
}

/// One parsed request, borrowing from the read buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request<'a> {
    /// get / gets (`cas`), or gat / gats with `touch: Some(exptime)`.
    Get {
        keys: Keys<'a>,
        cas: bool,
        touch: Option<i64>,
    },
    /// set / add / replace / append / prepend / cas and their data block.
    Store {
        op: StoreOp,
        key: &'a [u8],
        flags: u32,
        exptime: i64,
        cas_unique: u64,
        data: &'a [u8],
        noreply: bool,
    },
    Delete {
        key: &'a [u8],
        noreply: bool,
    },
    Arith {
        incr: bool,
        key: &'a [u8],
        delta: u64,
        noreply: bool,
    },
    Touch {
        key: &'a [u8],
        exptime: i64,
        noreply: bool,
    },
    /// flush_all with its delay in seconds (0 = now).
    FlushAll {
        delay: i64,
        noreply: bool,
    },
    Version,
    /// verbosity with its level (memcached keeps it for `stats settings`).
    Verbosity {
        level: u32,
        noreply: bool,
    },
    Quit,
    /// stats with its arguments (empty for plain `stats`).
    Stats {
        args: Keys<'a>,
    },
    /// shutdown with its arguments (`graceful`, or none); the server
    /// decides (memcached allows it only with `-A`).
    Shutdown {
        args: Keys<'a>,
    },
    /// refresh_certs: read the TLS certificate files again (memcached's
    /// reply is "OK" or the reason, noreply aside).
    RefreshCerts {
        noreply: bool,
    },
    /// lru_crawler with its arguments (`metadump all`, ...).
    LruCrawler {
        args: Keys<'a>,
    },
    /// slabs with its arguments (`automove N`, `reassign SRC DST`).
    Slabs {
        args: Keys<'a>,
    },
    /// lru with its arguments (`tune …`, `mode flat|segmented`,
    /// `temp_ttl N`).
    Lru {
        args: Keys<'a>,
    },
    /// watch with its event classes (`fetchers mutations …`; none:
    /// fetchers).
    Watch {
        args: Keys<'a>,
    },
    /// A meta command (`mn mg ms md ma me`) that [`crate::meta::parse`]
    /// validated: its line (from the command word, without CRLF) and, for
    /// `ms`, its data block. Rebuild it with
    /// [`crate::meta::MetaRequest::from_line`].
    Meta {
        cmd: crate::meta::MetaCmd,
        line: &'a [u8],
        data: &'a [u8],
    },
}

/// How to react to input that is not a valid request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The line to answer (CRLF added by the composer); None answers nothing.
    pub reply: Option<&'static str>,
    /// True if the command carried `noreply` (memcached then stays silent).
    pub noreply: bool,
    /// Bytes of the buffer this failure used up.
    pub consumed: usize,
    /// Further bytes to discard as they arrive (a refused data block).
    pub swallow: usize,
    /// Close the connection after answering.
    pub close: bool,
    /// A key to unlink: memcached drops the old value of a `set` (or `ms`)
    /// it refuses as too large, so no stale data outlives a failed update.
    pub unlink: Option<Unlink>,
}

/// Where the key of a refused store is in the buffer (offsets from where
/// the request starts), and whether those bytes are base64 (an `ms` with
/// `b`, whose decoded key is in no buffer) to decode before unlinking.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unlink {
    pub start: usize,
    pub end: usize,
    pub base64: bool,
}

impl Unlink {
    /// The key to unlink, read from `request` (the buffer from where the
    /// request starts) and, for a base64 key, decoded into `scratch`.
    /// None only if a base64 key does not decode, which the parser has
    /// already refused.
    pub fn key<'k>(&self, request: &'k [u8], scratch: &'k mut [u8; KEY_BYTES_MAX]) -> Option<&'k [u8]> {
        let raw = request.get(self.start..self.end)?;
        if !self.base64 {
            return Some(raw);
        }
        let n = crate::meta::base64_decode(raw, scratch)?;
        Some(&scratch[..n])
    }
}

/// What [`parse`] found at the front of the buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parse<'a> {
    /// A request and the number of bytes it used.
    Done(Request<'a>, usize),
    /// Not a whole request yet.
    Incomplete,
    /// Invalid input and what to do about it.
    Fail(Failure),
}

/// Limits the parser enforces that depend on the server's configuration.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Largest data block accepted (memcached refuses larger ones with
    /// `SERVER_ERROR object too large for cache` and swallows them).
    pub value_bytes_max: usize,
}

fn fail(reply: &'static str, consumed: usize) -> Parse<'static> {
    Parse::Fail(Failure { reply: Some(reply), noreply: false, consumed, swallow: 0, close: false, unlink: None })
}

/// C's `isspace`: what `strtol` skips before a number and what memcached's
/// `safe_strto*` accept right after one.
fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// C's `strtoull` as memcached's `safe_strto*` use it: leading white space,
/// an optional sign, decimal digits, then the end of the token or white
/// space. Returns the sign and the magnitude, or None where memcached's
/// check fails (no digits, junk after them, or beyond 64 bits: ERANGE).
fn c_strtonum(t: &[u8]) -> Option<(bool, u64)> {
    let t = &t[t.iter().position(|&b| !is_c_space(b)).unwrap_or(t.len())..];
    let (neg, t) = match t.first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let digits = t.iter().position(|b| !b.is_ascii_digit()).unwrap_or(t.len());
    if digits == 0 || (digits < t.len() && !is_c_space(t[digits])) {
        return None;
    }
    let mut v: u64 = 0;
    for &d in &t[..digits] {
        v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    Some((neg, v))
}

/// memcached's `safe_strtoull` (delta, cas unique): `strtoull`, refusing a
/// minus sign only when the result looks negative as a signed number.
pub(crate) fn parse_strtoull(t: &[u8]) -> Option<u64> {
    let (neg, v) = c_strtonum(t)?;
    let v = if neg { v.wrapping_neg() } else { v };
    if (v as i64) < 0 && neg {
        return None;
    }
    Some(v)
}

/// memcached's `safe_strtoul` for 32-bit fields (flags): `strtoul` on a
/// 64-bit `long`, stored into a `uint32_t` (so truncated).
pub(crate) fn parse_u32(t: &[u8]) -> Option<u32> {
    parse_strtoull(t).map(|v| v as u32)
}

/// memcached's `safe_strtoull`: decimal digits, no sign.
pub fn parse_u64(t: &[u8]) -> Option<u64> {
    if t.is_empty() || t.len() > 20 || !t.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(t).ok()?.parse().ok()
}

/// Where the data block of the storage request at the front of `buf`
/// ends (its trailing CRLF included), once its command line is buffered:
/// `set`/`add`/`replace`/`append`/`prepend`/`cas <key> <flags> <exptime>
/// <bytes>` and meta's `ms <key> <datalen>`. None for anything else or a
/// line not yet whole. Only a sizing hint (the server reads a large value
/// into a buffer of exactly this size instead of one that doubles and
/// copies as it fills): [`parse`] still decides what the request is.
///
/// ```
/// use amalgam_protocol::text::block_end;
/// assert_eq!(block_end(b"set k 0 0 100000\r\nabc"), Some(18 + 100_000 + 2));
/// assert_eq!(block_end(b"ms k 5 T0\r\nab"), Some(11 + 5 + 2));
/// assert_eq!(block_end(b"get k\r\n"), None);
/// assert_eq!(block_end(b"set k 0 0 100000"), None);
/// ```
pub fn block_end(buf: &[u8]) -> Option<usize> {
    let head = &buf[..buf.len().min(crate::LINE_BYTES_MAX)];
    let nl = memchr(b'\n', head)?;
    let line = head[..nl].strip_suffix(b"\r").unwrap_or(&head[..nl]);
    // The first five words are all it needs (meta requests have more).
    let mut w = [&line[..0]; 5];
    let mut n = 0;
    for word in line.split(|&b| b == b' ').filter(|w| !w.is_empty()).take(5) {
        w[n] = word;
        n += 1;
    }
    let len = match w[0] {
        b"set" | b"add" | b"replace" | b"append" | b"prepend" | b"cas" if n >= 5 => w[4],
        b"ms" if n >= 3 => w[2],
        _ => return None,
    };
    let vlen = usize::try_from(parse_u64(len)?).ok()?;
    (nl + 1).checked_add(vlen)?.checked_add(2)
}

/// memcached's `safe_strtol` (exptime, length): `strtol` on a 64-bit
/// `long` (ERANGE beyond it), stored into an `int32_t` (so truncated:
/// 2147483648 becomes -2147483648, 4294967396 becomes 100).
pub(crate) fn parse_i32(t: &[u8]) -> Option<i64> {
    let (neg, v) = c_strtonum(t)?;
    let l: i64 = if neg {
        if v > 1 << 63 {
            return None;
        }
        (v as i64).wrapping_neg()
    } else {
        i64::try_from(v).ok()?
    };
    Some(i64::from(l as i32))
}

/// Splits a command line into at most `N` words (memcached's tokenizer:
/// spaces only, runs of spaces collapse). Returns the word count, or None
/// if there are more than `N`. Public for the server's in-place receiving
/// of large values (`inplace.rs`), which reads a storage line before its
/// data block has arrived.
pub fn words<const N: usize>(line: &[u8]) -> Option<([&[u8]; N], usize)> {
    let mut out = [&line[..0]; N];
    let mut n = 0;
    for w in line.split(|&b| b == b' ').filter(|w| !w.is_empty()) {
        if n == N {
            return None;
        }
        out[n] = w;
        n += 1;
    }
    Some((out, n))
}

/// Parses the request at the front of `buf`.
///
/// ```
/// use amalgam_protocol::text::{parse, Limits, Parse, Request};
/// let limits = Limits { value_bytes_max: 1 << 20 };
/// match parse(b"delete k\r\nget", limits) {
///     Parse::Done(Request::Delete { key, noreply }, used) => {
///         assert_eq!((key, noreply, used), (&b"k"[..], false, 10));
///     }
///     other => panic!("{other:?}"),
/// }
/// assert_eq!(parse(b"get", limits), Parse::Incomplete);
/// ```
pub fn parse(buf: &[u8], limits: Limits) -> Parse<'_> {
    let Some(nl) = memchr(b'\n', buf) else {
        return incomplete_line(buf);
    };
    let consumed = nl + 1;
    let mut line = &buf[..nl];
    if line.last() == Some(&b'\r') {
        line = &line[..line.len() - 1];
    }
    // memcached tokenizes the line as a C string: it ends at a NUL.
    if let Some(nul) = memchr(0, line) {
        line = &line[..nul];
    }
    let start = line.iter().position(|&b| b != b' ').unwrap_or(line.len());
    let body = &line[start..];
    let cmd_end = body.iter().position(|&b| b == b' ').unwrap_or(body.len());
    let (cmd, rest) = (&body[..cmd_end], &body[cmd_end..]);
    if cmd.len() < 2 {
        return fail(reply::ERROR, consumed);
    }
    if cmd.len() == 2 && cmd[0] == b'm' {
        return crate::meta::parse(cmd[1], body, buf, consumed, limits);
    }
    match cmd {
        b"get" | b"gets" | b"gat" | b"gats" => parse_get(cmd, rest, consumed),
        b"set" => parse_store(StoreOp::Set, rest, buf, consumed, limits),
        b"add" => parse_store(StoreOp::Add, rest, buf, consumed, limits),
        b"replace" => parse_store(StoreOp::Replace, rest, buf, consumed, limits),
        b"append" => parse_store(StoreOp::Append, rest, buf, consumed, limits),
        b"prepend" => parse_store(StoreOp::Prepend, rest, buf, consumed, limits),
        b"cas" => parse_store(StoreOp::Cas, rest, buf, consumed, limits),
        b"incr" | b"decr" => parse_arith(cmd == b"incr", rest, consumed),
        b"delete" => parse_delete(rest, consumed),
        b"touch" => parse_touch(rest, consumed),
        b"flush_all" => parse_flush_all(rest, consumed),
        b"version" => Parse::Done(Request::Version, consumed),
        b"quit" => Parse::Done(Request::Quit, consumed),
        b"verbosity" => parse_verbosity(rest, consumed),
        b"stats" => Parse::Done(Request::Stats { args: Keys(rest) }, consumed),
        b"shutdown" => Parse::Done(Request::Shutdown { args: Keys(rest) }, consumed),
        b"lru_crawler" => Parse::Done(Request::LruCrawler { args: Keys(rest) }, consumed),
        b"slabs" => Parse::Done(Request::Slabs { args: Keys(rest) }, consumed),
        b"lru" => Parse::Done(Request::Lru { args: Keys(rest) }, consumed),
        b"watch" => Parse::Done(Request::Watch { args: Keys(rest) }, consumed),
        b"refresh_certs" => {
            let noreply = rest.split(|&b| b == b' ').any(|w| w == b"noreply");
            Parse::Done(Request::RefreshCerts { noreply }, consumed)
        }
        _ => {
            // memcached closes on what looks like an HTTP request line.
            let last = body.rsplit(|&b| b == b' ').find(|w| !w.is_empty()).unwrap_or(b"");
            if last.starts_with(b"HTTP/") {
                Parse::Fail(Failure { reply: None, noreply: false, consumed, swallow: 0, close: true, unlink: None })
            } else {
                fail(reply::ERROR, consumed)
            }
        }
    }
}

fn memchr(needle: u8, hay: &[u8]) -> Option<usize> {
    hay.iter().position(|&b| b == needle)
}

/// No newline yet: wait, unless the line is already too long to be a
/// command (memcached: more than 2048 bytes and not a get closes the
/// connection without a reply).
fn incomplete_line(buf: &[u8]) -> Parse<'_> {
    if buf.len() <= LINE_BYTES_MAX {
        return Parse::Incomplete;
    }
    let trimmed = &buf[buf.iter().position(|&b| b != b' ').unwrap_or(buf.len())..];
    let leading = buf.len() - trimmed.len();
    let is_get = trimmed.starts_with(b"get ") || trimmed.starts_with(b"gets ");
    if leading <= 100 && is_get && buf.len() <= GET_LINE_BYTES_MAX {
        return Parse::Incomplete;
    }
    Parse::Fail(Failure { reply: None, noreply: false, consumed: buf.len(), swallow: 0, close: true, unlink: None })
}

fn parse_get<'a>(cmd: &[u8], rest: &'a [u8], consumed: usize) -> Parse<'a> {
    let cas = cmd.ends_with(b"s");
    let touch = cmd.starts_with(b"gat");
    let mut keys = Keys(rest);
    let mut exptime = None;
    if touch {
        let trimmed = &rest[rest.iter().position(|&b| b != b' ').unwrap_or(rest.len())..];
        if trimmed.is_empty() {
            return fail(reply::ERROR, consumed);
        }
        let end = trimmed.iter().position(|&b| b == b' ').unwrap_or(trimmed.len());
        match parse_i32(&trimmed[..end]) {
            Some(e) => exptime = Some(e),
            None => return fail(reply::BAD_EXPTIME, consumed),
        }
        keys = Keys(&trimmed[end..]);
    } else if keys.iter().next().is_none() {
        return fail(reply::ERROR, consumed);
    }
    if keys.iter().any(|k| k.len() > KEY_BYTES_MAX) {
        return fail(reply::BAD_FORMAT, consumed);
    }
    Parse::Done(Request::Get { keys, cas, touch: exptime }, consumed)
}

fn parse_store<'a>(op: StoreOp, rest: &'a [u8], buf: &'a [u8], consumed: usize, limits: Limits) -> Parse<'a> {
    let Some((w, n)) = words::<7>(rest) else { return fail(reply::ERROR, consumed) };
    let base = if op == StoreOp::Cas { 5 } else { 4 };
    if n != base && n != base + 1 {
        return fail(reply::ERROR, consumed);
    }
    let noreply = w[n - 1] == b"noreply";
    let bad =
        |reply| Parse::Fail(Failure { reply: Some(reply), noreply, consumed, swallow: 0, close: false, unlink: None });
    let key = w[0];
    if key.len() > KEY_BYTES_MAX {
        return bad(reply::BAD_FORMAT);
    }
    let (Some(flags), Some(exptime), Some(vlen)) = (parse_u32(w[1]), parse_i32(w[2]), parse_i32(w[3])) else {
        return bad(reply::BAD_FORMAT);
    };
    let cas_unique = if op == StoreOp::Cas {
        match parse_strtoull(w[4]) {
            Some(c) => c,
            None => return bad(reply::BAD_FORMAT),
        }
    } else {
        0
    };
    // memcached: `vlen < 0 || vlen > (INT_MAX - 2)` (room for the CRLF).
    if vlen < 0 || vlen > i64::from(i32::MAX) - 2 {
        return bad(reply::BAD_FORMAT);
    }
    let vlen = vlen as usize;
    if vlen > limits.value_bytes_max {
        return Parse::Fail(Failure {
            reply: Some(reply::TOO_LARGE),
            noreply,
            consumed,
            swallow: vlen + 2,
            close: false,
            unlink: (op == StoreOp::Set).then(|| {
                let start = key.as_ptr() as usize - buf.as_ptr() as usize;
                Unlink { start, end: start + key.len(), base64: false }
            }),
        });
    }
    let end = consumed + vlen + 2;
    if buf.len() < end {
        return Parse::Incomplete;
    }
    if &buf[end - 2..end] != b"\r\n" {
        return Parse::Fail(Failure {
            reply: Some(reply::BAD_CHUNK),
            noreply,
            consumed: end,
            swallow: 0,
            close: false,
            unlink: None,
        });
    }
    let data = &buf[consumed..end - 2];
    Parse::Done(Request::Store { op, key, flags, exptime, cas_unique, data, noreply }, end)
}

fn parse_arith(incr: bool, rest: &[u8], consumed: usize) -> Parse<'_> {
    let Some((w, n)) = words::<3>(rest) else { return fail(reply::ERROR, consumed) };
    if n != 2 && n != 3 {
        return fail(reply::ERROR, consumed);
    }
    let noreply = w[n - 1] == b"noreply";
    let bad =
        |reply| Parse::Fail(Failure { reply: Some(reply), noreply, consumed, swallow: 0, close: false, unlink: None });
    if w[0].len() > KEY_BYTES_MAX {
        return bad(reply::BAD_FORMAT);
    }
    match parse_strtoull(w[1]) {
        Some(delta) => Parse::Done(Request::Arith { incr, key: w[0], delta, noreply }, consumed),
        None => bad(reply::BAD_DELTA),
    }
}

fn parse_delete(rest: &[u8], consumed: usize) -> Parse<'_> {
    let Some((w, n)) = words::<3>(rest) else { return fail(reply::ERROR, consumed) };
    if n == 0 {
        return fail(reply::ERROR, consumed);
    }
    let noreply = w[n - 1] == b"noreply";
    if n > 1 {
        let hold_is_zero = w[1] == b"0";
        let valid = (n == 2 && (hold_is_zero || noreply)) || (n == 3 && hold_is_zero && noreply);
        if !valid {
            return Parse::Fail(Failure {
                reply: Some(reply::DELETE_USAGE),
                noreply,
                consumed,
                swallow: 0,
                close: false,
                unlink: None,
            });
        }
    }
    if w[0].len() > KEY_BYTES_MAX {
        return Parse::Fail(Failure {
            reply: Some(reply::BAD_FORMAT),
            noreply,
            consumed,
            swallow: 0,
            close: false,
            unlink: None,
        });
    }
    Parse::Done(Request::Delete { key: w[0], noreply }, consumed)
}

fn parse_touch(rest: &[u8], consumed: usize) -> Parse<'_> {
    let Some((w, n)) = words::<3>(rest) else { return fail(reply::ERROR, consumed) };
    if n != 2 && n != 3 {
        return fail(reply::ERROR, consumed);
    }
    let noreply = w[n - 1] == b"noreply";
    let bad =
        |reply| Parse::Fail(Failure { reply: Some(reply), noreply, consumed, swallow: 0, close: false, unlink: None });
    if w[0].len() > KEY_BYTES_MAX {
        return bad(reply::BAD_FORMAT);
    }
    match parse_i32(w[1]) {
        Some(exptime) => Parse::Done(Request::Touch { key: w[0], exptime, noreply }, consumed),
        None => bad(reply::BAD_EXPTIME),
    }
}

fn parse_flush_all(rest: &[u8], consumed: usize) -> Parse<'_> {
    let Some((w, n)) = words::<2>(rest) else { return fail(reply::ERROR, consumed) };
    let noreply = n > 0 && w[n - 1] == b"noreply";
    let args = n - usize::from(noreply);
    if args == 0 {
        return Parse::Done(Request::FlushAll { delay: 0, noreply }, consumed);
    }
    match parse_i32(w[0]) {
        Some(delay) => Parse::Done(Request::FlushAll { delay, noreply }, consumed),
        None => Parse::Fail(Failure {
            reply: Some(reply::BAD_EXPTIME),
            noreply,
            consumed,
            swallow: 0,
            close: false,
            unlink: None,
        }),
    }
}

fn parse_verbosity(rest: &[u8], consumed: usize) -> Parse<'_> {
    let Some((w, n)) = words::<2>(rest) else { return fail(reply::ERROR, consumed) };
    if n == 0 {
        return fail(reply::ERROR, consumed);
    }
    let noreply = w[n - 1] == b"noreply";
    let Some(level) = parse_u32(w[0]) else {
        return Parse::Fail(Failure {
            reply: Some(reply::BAD_FORMAT),
            noreply,
            consumed,
            swallow: 0,
            close: false,
            unlink: None,
        });
    };
    Parse::Done(Request::Verbosity { level, noreply }, consumed)
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: Limits = Limits { value_bytes_max: 1 << 20 };

    fn done(input: &[u8]) -> (Request<'_>, usize) {
        match parse(input, L) {
            Parse::Done(r, n) => (r, n),
            other => panic!("{:?} -> {other:?}", String::from_utf8_lossy(input)),
        }
    }

    fn failure(input: &[u8]) -> Failure {
        match parse(input, L) {
            Parse::Fail(f) => f,
            other => panic!("{:?} -> {other:?}", String::from_utf8_lossy(input)),
        }
    }

    #[test]
    fn get_family() {
        let (r, n) = done(b"get a  bb c\r\n");
        assert_eq!(n, 13);
        let Request::Get { keys, cas: false, touch: None } = r else { panic!("{r:?}") };
        assert_eq!(keys.iter().collect::<Vec<_>>(), vec![&b"a"[..], b"bb", b"c"]);
        assert!(matches!(done(b"gets a\n").0, Request::Get { cas: true, touch: None, .. }));
        assert!(matches!(done(b"gat 10 a\r\n").0, Request::Get { cas: false, touch: Some(10), .. }));
        assert!(matches!(done(b"gats -1 a\r\n").0, Request::Get { cas: true, touch: Some(-1), .. }));
        assert_eq!(failure(b"get\r\n").reply, Some(reply::ERROR));
        assert_eq!(failure(b"gat x a\r\n").reply, Some(reply::BAD_EXPTIME));
        let long = [b"get a ".as_slice(), &[b'k'; 251], b"\r\n"].concat();
        assert_eq!(failure(&long).reply, Some(reply::BAD_FORMAT));
    }

    #[test]
    fn storage_commands_wait_for_their_data() {
        assert_eq!(parse(b"set k 1 2 5\r\nhel", L), Parse::Incomplete);
        let (r, n) = done(b"set k 1 2 5\r\nhello\r\nget k\r\n");
        assert_eq!(n, 20);
        assert_eq!(
            r,
            Request::Store {
                op: StoreOp::Set,
                key: b"k",
                flags: 1,
                exptime: 2,
                cas_unique: 0,
                data: b"hello",
                noreply: false
            }
        );
        let (r, _) = done(b"cas k 0 0 1 99 noreply\r\nx\r\n");
        assert!(matches!(r, Request::Store { op: StoreOp::Cas, cas_unique: 99, noreply: true, .. }));
    }

    #[test]
    fn storage_errors_match_memcached() {
        assert_eq!(failure(b"set k 0 0\r\n").reply, Some(reply::ERROR));
        assert_eq!(failure(b"set k 0 0 1 2 3\r\n").reply, Some(reply::ERROR));
        assert_eq!(failure(b"set k x 0 1\r\n").reply, Some(reply::BAD_FORMAT));
        assert_eq!(failure(b"set k 0 0 -1\r\n").reply, Some(reply::BAD_FORMAT));
        // memcached's safe_strto* : 64-bit strtol, truncated to 32 bits.
        assert_eq!(failure(b"set k -1 0 1\r\n").reply, Some(reply::BAD_FORMAT));
        assert_eq!(failure(b"set k 0 0 2147483648\r\n").reply, Some(reply::BAD_FORMAT));
        assert_eq!(failure(b"set k 0 0 2147483646\r\n").reply, Some(reply::BAD_FORMAT));
        assert_eq!(failure(b"set k 0 0 2147483645\r\n").reply, Some(reply::TOO_LARGE));
        assert_eq!(failure(b"set k 0 0 99999999999999999999\r\n").reply, Some(reply::BAD_FORMAT));
        let (r, _) = done(b"set k 4294967296 +4294967396 -0\r\n\r\n");
        assert!(matches!(r, Request::Store { flags: 0, exptime: 100, data: b"", .. }), "{r:?}");
        let (r, _) = done(b"set k 0 2147483648 4294967297\r\nx\r\n");
        assert!(matches!(r, Request::Store { exptime: -2147483648, data: b"x", .. }), "{r:?}");
        let f = failure(b"set k 0 0 3\r\nabcde\r\n");
        assert_eq!((f.reply, f.consumed), (Some(reply::BAD_CHUNK), 18));
        let f = parse(b"set k 0 0 2000000\r\n", L);
        assert_eq!(
            f,
            Parse::Fail(Failure {
                reply: Some(reply::TOO_LARGE),
                noreply: false,
                consumed: 19,
                swallow: 2_000_002,
                close: false,
                unlink: Some(Unlink { start: 4, end: 5, base64: false }),
            })
        );
        assert!(failure(b"set k 0 0 -1 noreply\r\n").noreply);
    }

    #[test]
    fn other_commands() {
        assert_eq!(done(b"delete k\r\n").0, Request::Delete { key: b"k", noreply: false });
        assert_eq!(done(b"delete k 0\r\n").0, Request::Delete { key: b"k", noreply: false });
        assert_eq!(done(b"delete k noreply\r\n").0, Request::Delete { key: b"k", noreply: true });
        assert_eq!(failure(b"delete k 5\r\n").reply, Some(reply::DELETE_USAGE));
        assert_eq!(done(b"incr k 5\r\n").0, Request::Arith { incr: true, key: b"k", delta: 5, noreply: false });
        assert_eq!(failure(b"decr k -1\r\n").reply, Some(reply::BAD_DELTA));
        assert_eq!(done(b"decr k +2\r\n").0, Request::Arith { incr: false, key: b"k", delta: 2, noreply: false });
        assert_eq!(failure(b"incr k 18446744073709551616\r\n").reply, Some(reply::BAD_DELTA));
        // A NUL ends the line, as in memcached's C-string tokenizer.
        assert_eq!(done(b"delete a\0b\r\n").0, Request::Delete { key: b"a", noreply: false });
        assert_eq!(done(b"touch k 10 noreply\r\n").0, Request::Touch { key: b"k", exptime: 10, noreply: true });
        assert_eq!(done(b"flush_all\r\n").0, Request::FlushAll { delay: 0, noreply: false });
        assert_eq!(done(b"flush_all 10 noreply\r\n").0, Request::FlushAll { delay: 10, noreply: true });
        assert_eq!(done(b"flush_all noreply\r\n").0, Request::FlushAll { delay: 0, noreply: true });
        assert_eq!(done(b"version\r\n").0, Request::Version);
        assert_eq!(done(b"verbosity 1\r\n").0, Request::Verbosity { level: 1, noreply: false });
        assert_eq!(done(b"quit\r\n").0, Request::Quit);
        assert_eq!(failure(b"bogus\r\n").reply, Some(reply::ERROR));
        assert_eq!(failure(b"\r\n").reply, Some(reply::ERROR));
        assert!(failure(b"GET / HTTP/1.1\r\n").close);
    }

    #[test]
    fn long_lines_close_unless_multiget() {
        let junk = vec![b'x'; LINE_BYTES_MAX + 1];
        assert!(failure(&junk).close);
        let mut get = b"get ".to_vec();
        get.resize(LINE_BYTES_MAX + 10, b'k');
        assert_eq!(parse(&get, L), Parse::Incomplete);
    }

    #[test]
    fn random_bytes_never_panic() {
        let mut x = 0x1234_5678_9abc_def0u64;
        for _ in 0..20_000 {
            let mut buf = Vec::new();
            for _ in 0..(x % 64) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let alphabet = b"getsadl0123456789 \r\n-knoreplyc";
                buf.push(alphabet[(x % alphabet.len() as u64) as usize]);
            }
            let _ = parse(&buf, L);
        }
    }
}
