//! The request parser: multibulk arrays and inline commands, resumable
//! across reads (see the module docs of [`crate::resp`]).

use super::{
    ARRAY_ELEMENTS_MAX, ARRAY_ELEMENTS_REDIS_MAX, INLINE_BYTES_MAX, REQUEST_BYTES_MIN,
    UNAUTHENTICATED_ARRAY_ELEMENTS_MAX, UNAUTHENTICATED_BULK_BYTES_MAX,
};
use std::borrow::Cow;

/// Bounds that depend on the server's configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Longest bulk string accepted (`invalid bulk length` past it):
    /// Redis's `proto-max-bulk-len`.
    pub bulk_bytes_max: usize,
    /// A request still incomplete with more than this many bytes buffered
    /// closes the connection without a reply.
    pub request_bytes_max: usize,
}

impl Limits {
    /// The limits for a server that accepts bulk strings of up to
    /// `bulk_bytes_max` bytes (`proto-max-bulk-len`): a request may be one
    /// such string plus a command line's worth of other arguments.
    ///
    /// ```
    /// let l = amalgam_protocol::resp::Limits::for_bulk_len(1 << 20);
    /// assert_eq!(l.bulk_bytes_max, 1 << 20);
    /// assert_eq!(l.request_bytes_max, amalgam_protocol::resp::REQUEST_BYTES_MIN);
    /// let l = amalgam_protocol::resp::Limits::for_bulk_len(512 << 20);
    /// assert_eq!(l.request_bytes_max, (512 << 20) + amalgam_protocol::resp::INLINE_BYTES_MAX);
    /// ```
    pub fn for_bulk_len(bulk_bytes_max: usize) -> Limits {
        Limits {
            bulk_bytes_max,
            request_bytes_max: REQUEST_BYTES_MIN.max(bulk_bytes_max.saturating_add(INLINE_BYTES_MAX)),
        }
    }
}

/// Input that is not RESP. Every one is answered with [`message`]
/// (if any) and the connection closed.
///
/// [`message`]: ProtocolError::message
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProtocolError {
    /// An array count that is not a number, or out of range.
    InvalidMultibulkLength,
    /// A bulk length that is not a number, negative, or over the limit.
    InvalidBulkLength,
    /// More than [`UNAUTHENTICATED_ARRAY_ELEMENTS_MAX`] elements before
    /// the connection authenticated.
    UnauthenticatedMultibulkLength,
    /// A bulk string over [`UNAUTHENTICATED_BULK_BYTES_MAX`] before the
    /// connection authenticated.
    UnauthenticatedBulkLength,
    /// An array element that is not a bulk string; the byte found instead.
    ExpectedDollar(u8),
    /// An inline command with no line end within [`INLINE_BYTES_MAX`].
    TooBigInline,
    /// An array header with no `\r` within [`INLINE_BYTES_MAX`].
    TooBigMultibulkCount,
    /// A bulk-string header with no `\r` within [`INLINE_BYTES_MAX`].
    TooBigBulkCount,
    /// An inline command whose quotes do not close (or close mid-word).
    UnbalancedQuotes,
    /// A request past [`Limits::request_bytes_max`]: closed silently.
    RequestTooLarge,
}

impl ProtocolError {
    /// The error line to send (without `-` and CRLF; a byte of the input
    /// may appear in it), or None to close without a reply.
    ///
    /// ```
    /// use amalgam_protocol::resp::ProtocolError;
    /// assert_eq!(ProtocolError::ExpectedDollar(b':').message().unwrap(), b"ERR Protocol error: expected '$', got ':'");
    /// ```
    pub fn message(self) -> Option<Vec<u8>> {
        let text: &str = match self {
            ProtocolError::InvalidMultibulkLength => "invalid multibulk length",
            ProtocolError::InvalidBulkLength => "invalid bulk length",
            ProtocolError::UnauthenticatedMultibulkLength => "unauthenticated multibulk length",
            ProtocolError::UnauthenticatedBulkLength => "unauthenticated bulk length",
            ProtocolError::ExpectedDollar(b) => {
                let mut m = b"ERR Protocol error: expected '$', got '".to_vec();
                m.push(b);
                m.push(b'\'');
                return Some(m);
            }
            ProtocolError::TooBigInline => "too big inline request",
            ProtocolError::TooBigMultibulkCount => "too big mbulk count string",
            ProtocolError::TooBigBulkCount => "too big bulk count string",
            ProtocolError::UnbalancedQuotes => "unbalanced quotes in request",
            ProtocolError::RequestTooLarge => return None,
        };
        Some(format!("ERR Protocol error: {text}").into_bytes())
    }
}

/// What [`Parser::parse`] found at the front of the buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parse {
    /// A command: its arguments (name first, at least one) were appended
    /// to the caller's vector; `consumed` bytes of the buffer were used.
    Command { consumed: usize },
    /// An empty command (`*0`, `*-1`, a blank inline line): skip
    /// `consumed` bytes, answer nothing.
    Empty { consumed: usize },
    /// Not a whole request yet: call again, with the same request still at
    /// the front of the buffer and more bytes after it.
    Incomplete,
    /// Not RESP: answer, close.
    Error(ProtocolError),
}

/// A bulk string whose body is still arriving ([`Parser::pending_bulk`]);
/// offsets from the request's first byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PendingBulk {
    /// Its place in the array (0 is the command's name).
    pub index: usize,
    /// Elements the array declares.
    pub declared: usize,
    /// Where its `$` header starts.
    pub header_at: usize,
    /// Where its body starts.
    pub body_at: usize,
    /// Its length.
    pub len: usize,
}

/// A connection's parser: how far it has got in the request at the front
/// of the buffer, so that a request arriving in many reads is scanned
/// once. All offsets are from the request's first byte, so they stay right
/// when the caller moves its buffer.
///
/// Contract: after `Incomplete`, the caller calls again with the same
/// request at the front of `buf` (more bytes may follow); after any other
/// result the parser is ready for the next request.
#[derive(Debug, Default)]
pub struct Parser {
    /// Elements the array at the front declares; 0 before its header.
    declared: usize,
    /// Offset of the next element's header (or body, with `bulk` set).
    next: usize,
    /// Length of the bulk string whose header was read, body pending.
    bulk: Option<usize>,
    /// The elements read so far.
    ranges: Vec<(usize, usize)>,
    /// Bytes from `next` already searched for a line end without one.
    searched: usize,
}

/// Capacity of [`Parser::ranges`] kept between requests; a larger one
/// (left by a huge array) is released.
const RANGES_KEEP: usize = 1024;

/// Elements reserved up front for an array: its declared count, at most
/// this (a declared count is only a claim).
const RANGES_RESERVE_MAX: usize = 1024;

impl Parser {
    /// A parser with no request in progress.
    pub fn new() -> Parser {
        Parser::default()
    }

    /// Parses the request at the front of `buf`, appending a command's
    /// arguments to `args` (borrowed from `buf`, or owned where an inline
    /// command's quotes had escapes).
    ///
    /// ```
    /// use amalgam_protocol::resp::{Limits, Parse, Parser};
    /// let mut p = Parser::new();
    /// let mut args = Vec::new();
    /// let limits = Limits::for_bulk_len(1 << 20);
    /// assert_eq!(p.parse(b"*2\r\n$3\r\nGET\r\n$1\r", limits, &mut args), Parse::Incomplete);
    /// assert_eq!(p.parse(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", limits, &mut args), Parse::Command { consumed: 20 });
    /// assert_eq!(args, [&b"GET"[..], b"k"]);
    /// ```
    pub fn parse<'a>(&mut self, buf: &'a [u8], limits: Limits, args: &mut Vec<Cow<'a, [u8]>>) -> Parse {
        self.parse_as::<false>(buf, limits, args)
    }

    /// [`Parser::parse`] for a connection that must still authenticate:
    /// arrays of at most [`UNAUTHENTICATED_ARRAY_ELEMENTS_MAX`] elements,
    /// bulk strings of at most [`UNAUTHENTICATED_BULK_BYTES_MAX`] bytes
    /// (Redis checks `authRequired` as it reads each request's lengths).
    /// A separate entry, so the authenticated path's code has no test of
    /// it.
    ///
    /// ```
    /// use amalgam_protocol::resp::{Limits, Parse, Parser, ProtocolError};
    /// let l = Limits::for_bulk_len(1 << 20);
    /// let mut args = Vec::new();
    /// assert_eq!(
    ///     Parser::new().parse_unauthenticated(b"*11\r\n", l, &mut args),
    ///     Parse::Error(ProtocolError::UnauthenticatedMultibulkLength)
    /// );
    /// assert_eq!(
    ///     Parser::new().parse_unauthenticated(b"*2\r\n$3\r\nSET\r\n$16385\r\n", l, &mut args),
    ///     Parse::Error(ProtocolError::UnauthenticatedBulkLength)
    /// );
    /// assert_eq!(Parser::new().parse(b"*11\r\n", l, &mut args), Parse::Incomplete);
    /// ```
    pub fn parse_unauthenticated<'a>(&mut self, buf: &'a [u8], limits: Limits, args: &mut Vec<Cow<'a, [u8]>>) -> Parse {
        self.parse_as::<true>(buf, limits, args)
    }

    #[inline(always)]
    fn parse_as<'a, const UNAUTHENTICATED: bool>(
        &mut self,
        buf: &'a [u8],
        limits: Limits,
        args: &mut Vec<Cow<'a, [u8]>>,
    ) -> Parse {
        let r = if buf.first() == Some(&b'*') || self.declared > 0 {
            self.multibulk::<UNAUTHENTICATED>(buf, limits)
        } else if buf.is_empty() {
            Parse::Incomplete
        } else {
            self.inline(buf, args)
        };
        match r {
            Parse::Incomplete if buf.len() > limits.request_bytes_max => {
                self.reset();
                Parse::Error(ProtocolError::RequestTooLarge)
            }
            Parse::Incomplete => r,
            Parse::Command { consumed } if self.declared > 0 => {
                args.extend(self.ranges.iter().map(|&(s, e)| Cow::Borrowed(&buf[s..e])));
                self.reset();
                Parse::Command { consumed }
            }
            _ => {
                self.reset();
                r
            }
        }
    }

    /// Bytes the request at the front of the buffer needs before the
    /// parser can get past the bulk string it is in, counted from the
    /// request's first byte: the header of that string has been read and
    /// its body (with its CRLF) ends there. None while no body is pending.
    /// The server sizes a read buffer to hold it exactly, so a large value
    /// arrives in place instead of through a buffer that doubles (and
    /// copies) as it fills.
    ///
    /// ```
    /// use amalgam_protocol::resp::{Limits, Parse, Parser};
    /// let (mut p, mut args) = (Parser::new(), Vec::new());
    /// let limits = Limits::for_bulk_len(1 << 20);
    /// assert_eq!(p.parse(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100000\r\nab", limits, &mut args), Parse::Incomplete);
    /// assert_eq!(p.wanted(), Some(29 + 100_000 + 2));
    /// ```
    pub fn wanted(&self) -> Option<usize> {
        self.bulk.map(|len| self.next + len + 2)
    }

    /// The bulk string the parser is inside (its header read, its body
    /// still arriving) when it is not the array's first element, with
    /// where its header starts: the server receives a large SET value
    /// straight into its item (issue 18) and gives the parser the request
    /// with that element rewritten as empty. None otherwise.
    ///
    /// ```
    /// use amalgam_protocol::resp::{Limits, Parse, Parser, PendingBulk};
    /// let (mut p, mut args) = (Parser::new(), Vec::new());
    /// let buf = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100000\r\nab";
    /// assert_eq!(p.parse(buf, Limits::for_bulk_len(1 << 20), &mut args), Parse::Incomplete);
    /// let b = p.pending_bulk().unwrap();
    /// assert_eq!(b, PendingBulk { index: 2, declared: 3, header_at: 20, body_at: 29, len: 100_000 });
    /// assert_eq!(p.element(buf, 0), Some(&b"SET"[..]));
    /// assert_eq!(p.element(buf, 1), Some(&b"k"[..]));
    /// assert_eq!(p.element(buf, 2), None);
    /// ```
    pub fn pending_bulk(&self) -> Option<PendingBulk> {
        let len = self.bulk?;
        let &(_, prev_end) = self.ranges.last()?;
        Some(PendingBulk {
            index: self.ranges.len(),
            declared: self.declared,
            header_at: prev_end + 2,
            body_at: self.next,
            len,
        })
    }

    /// Element `i` of the request in progress at the front of `buf`, if
    /// it has been read whole (see [`Parser::pending_bulk`]).
    pub fn element<'a>(&self, buf: &'a [u8], i: usize) -> Option<&'a [u8]> {
        let &(s, e) = self.ranges.get(i)?;
        buf.get(s..e)
    }

    fn reset(&mut self) {
        self.declared = 0;
        self.next = 0;
        self.bulk = None;
        self.searched = 0;
        self.ranges.clear();
        if self.ranges.capacity() > RANGES_KEEP {
            self.ranges = Vec::new();
        }
    }

    /// The offset of the first `needle` at or after `self.next`, searching
    /// only bytes not searched before.
    fn find(&mut self, buf: &[u8], needle: u8) -> Option<usize> {
        let from = self.next + self.searched;
        match buf.get(from..).and_then(|t| t.iter().position(|&b| b == needle)) {
            Some(i) => {
                self.searched = 0;
                Some(from + i)
            }
            None => {
                self.searched = buf.len().saturating_sub(self.next);
                None
            }
        }
    }

    /// A header line at `self.next` (`*<n>` or `$<len>`), ended by `\r`
    /// and one more byte: Ok(Some(end of the number)), Ok(None) if not all
    /// here, Err(too_big) past [`INLINE_BYTES_MAX`].
    fn header(&mut self, buf: &[u8], too_big: ProtocolError) -> Result<Option<usize>, ProtocolError> {
        match self.find(buf, b'\r') {
            None if buf.len() - self.next > INLINE_BYTES_MAX => Err(too_big),
            None => Ok(None),
            // Redis wants one byte after the `\r` (and does not look at it).
            Some(cr) if cr + 2 > buf.len() => {
                self.searched = cr - self.next;
                Ok(None)
            }
            Some(cr) => Ok(Some(cr)),
        }
    }

    fn multibulk<const UNAUTHENTICATED: bool>(&mut self, buf: &[u8], limits: Limits) -> Parse {
        if self.declared == 0 {
            let cr = match self.header(buf, ProtocolError::TooBigMultibulkCount) {
                Ok(Some(cr)) => cr,
                Ok(None) => return Parse::Incomplete,
                Err(e) => return Parse::Error(e),
            };
            let n = match string2ll(&buf[1..cr]) {
                Some(n) if n <= ARRAY_ELEMENTS_REDIS_MAX && n <= ARRAY_ELEMENTS_MAX as i64 => n,
                _ => return Parse::Error(ProtocolError::InvalidMultibulkLength),
            };
            if n <= 0 {
                return Parse::Empty { consumed: cr + 2 };
            }
            if UNAUTHENTICATED && n as usize > UNAUTHENTICATED_ARRAY_ELEMENTS_MAX {
                return Parse::Error(ProtocolError::UnauthenticatedMultibulkLength);
            }
            self.declared = n as usize;
            self.next = cr + 2;
            self.ranges.reserve(self.declared.min(RANGES_RESERVE_MAX));
        }
        // Bounded by `declared` elements, each one header and one body.
        while self.ranges.len() < self.declared {
            let len = match self.bulk {
                Some(len) => len,
                None => {
                    let cr = match self.header(buf, ProtocolError::TooBigBulkCount) {
                        Ok(Some(cr)) => cr,
                        Ok(None) => return Parse::Incomplete,
                        Err(e) => return Parse::Error(e),
                    };
                    if buf[self.next] != b'$' {
                        return Parse::Error(ProtocolError::ExpectedDollar(buf[self.next]));
                    }
                    let len = match string2ll(&buf[self.next + 1..cr]) {
                        Some(n) if n >= 0 && n as u64 <= limits.bulk_bytes_max as u64 => n as usize,
                        _ => return Parse::Error(ProtocolError::InvalidBulkLength),
                    };
                    if UNAUTHENTICATED && len > UNAUTHENTICATED_BULK_BYTES_MAX {
                        return Parse::Error(ProtocolError::UnauthenticatedBulkLength);
                    }
                    self.next = cr + 2;
                    self.bulk = Some(len);
                    len
                }
            };
            // Body and the two bytes after it (Redis skips them unread).
            if buf.len() - self.next < len + 2 {
                return Parse::Incomplete;
            }
            self.ranges.push((self.next, self.next + len));
            self.next += len + 2;
            self.bulk = None;
        }
        Parse::Command { consumed: self.next }
    }

    fn inline<'a>(&mut self, buf: &'a [u8], args: &mut Vec<Cow<'a, [u8]>>) -> Parse {
        let Some(nl) = self.find(buf, b'\n') else {
            if buf.len() > INLINE_BYTES_MAX {
                return Parse::Error(ProtocolError::TooBigInline);
            }
            return Parse::Incomplete;
        };
        let mut line = &buf[..nl];
        if line.last() == Some(&b'\r') {
            line = &line[..line.len() - 1];
        }
        // Redis splits the line as a C string: it ends at a NUL.
        if let Some(nul) = line.iter().position(|&b| b == 0) {
            line = &line[..nul];
        }
        let before = args.len();
        if split_args(line, args).is_err() {
            args.truncate(before);
            return Parse::Error(ProtocolError::UnbalancedQuotes);
        }
        if args.len() == before {
            Parse::Empty { consumed: nl + 1 }
        } else {
            Parse::Command { consumed: nl + 1 }
        }
    }
}

/// C's `isspace`.
fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn hex_value(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// Redis's `sdssplitargs` on a line without NUL: words separated by
/// white space; `"…"` with `\n \r \t \b \a \xHH` and `\<any>` escapes;
/// `'…'` with only `\'`; a closing quote must be followed by white space
/// or the end. A quote inside a word opens a quoted part of that word.
/// Bounded by the line's length (each byte is looked at once or twice).
fn split_args<'a>(line: &'a [u8], args: &mut Vec<Cow<'a, [u8]>>) -> Result<(), ()> {
    let mut p = 0;
    let at = |i: usize| line.get(i).copied().unwrap_or(0);
    loop {
        while p < line.len() && is_c_space(line[p]) {
            p += 1;
        }
        if p >= line.len() {
            return Ok(());
        }
        let start = p;
        let mut end = start;
        let mut owned: Option<Vec<u8>> = None;
        let (mut in_dq, mut in_sq) = (false, false);
        loop {
            let c = at(p);
            if in_dq {
                let cur = owned.get_or_insert_with(Vec::new);
                if c == b'\\' && at(p + 1) == b'x' && hex_value(at(p + 2)).is_some() && hex_value(at(p + 3)).is_some() {
                    cur.push(hex_value(at(p + 2)).unwrap_or(0) * 16 + hex_value(at(p + 3)).unwrap_or(0));
                    p += 3;
                } else if c == b'\\' && at(p + 1) != 0 {
                    p += 1;
                    cur.push(match at(p) {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => other,
                    });
                } else if c == b'"' {
                    if at(p + 1) != 0 && !is_c_space(at(p + 1)) {
                        return Err(());
                    }
                    p += 1;
                    break;
                } else if c == 0 {
                    return Err(());
                } else {
                    cur.push(c);
                }
            } else if in_sq {
                let cur = owned.get_or_insert_with(Vec::new);
                if c == b'\\' && at(p + 1) == b'\'' {
                    p += 1;
                    cur.push(b'\'');
                } else if c == b'\'' {
                    if at(p + 1) != 0 && !is_c_space(at(p + 1)) {
                        return Err(());
                    }
                    p += 1;
                    break;
                } else if c == 0 {
                    return Err(());
                } else {
                    cur.push(c);
                }
            } else {
                match c {
                    b' ' | b'\n' | b'\r' | b'\t' => {
                        end = p;
                        p += 1;
                        break;
                    }
                    0 => {
                        end = p.min(line.len());
                        break;
                    }
                    b'"' | b'\'' => {
                        // The word so far becomes the start of an owned one.
                        owned.get_or_insert_with(|| line[start..p].to_vec());
                        if c == b'"' {
                            in_dq = true;
                        } else {
                            in_sq = true;
                        }
                    }
                    _ => {
                        if let Some(cur) = owned.as_mut() {
                            cur.push(c);
                        }
                    }
                }
            }
            p += 1;
        }
        match owned {
            Some(v) => args.push(Cow::Owned(v)),
            None => args.push(Cow::Borrowed(&line[start..end])),
        }
    }
}

/// Redis's `string2ll`: an optional `-`, then `0` alone or digits not
/// starting with `0`, nothing else, within `i64`.
///
/// ```
/// use amalgam_protocol::resp::string2ll;
/// assert_eq!(string2ll(b"-12"), Some(-12));
/// assert_eq!(string2ll(b"0"), Some(0));
/// for bad in [&b""[..], b"-", b"-0", b"01", b"+1", b" 1", b"1 ", b"9223372036854775808"] {
///     assert_eq!(string2ll(bad), None);
/// }
/// assert_eq!(string2ll(b"-9223372036854775808"), Some(i64::MIN));
/// ```
pub fn string2ll(s: &[u8]) -> Option<i64> {
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
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    if neg {
        if v > 1 << 63 {
            None
        } else {
            Some((v as i64).wrapping_neg())
        }
    } else {
        i64::try_from(v).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits { bulk_bytes_max: 1 << 20, request_bytes_max: 8 << 20 };

    fn one(input: &[u8]) -> (Parse, Vec<Vec<u8>>) {
        let mut p = Parser::new();
        let mut args = Vec::new();
        let r = p.parse(input, LIMITS, &mut args);
        (r, args.into_iter().map(|a| a.into_owned()).collect())
    }

    fn inline(line: &str) -> Result<Vec<String>, ()> {
        let mut args = Vec::new();
        split_args(line.as_bytes(), &mut args)?;
        Ok(args.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect())
    }

    #[test]
    fn inline_splitting_is_sdssplitargs() {
        assert_eq!(inline("set a b"), Ok(vec!["set".into(), "a".into(), "b".into()]));
        assert_eq!(inline("  get\t k  "), Ok(vec!["get".into(), "k".into()]));
        assert_eq!(inline(r#"set "a b" 'c d'"#), Ok(vec!["set".into(), "a b".into(), "c d".into()]));
        assert_eq!(inline(r#"x "\x41\n\"" 'it\'s'"#), Ok(vec!["x".into(), "A\n\"".into(), "it's".into()]));
        assert_eq!(inline(r#"ab"c d" e"#), Ok(vec!["abc d".into(), "e".into()]));
        assert_eq!(inline(r#""\xZZ""#), Ok(vec!["xZZ".into()]));
        assert_eq!(inline("a\x0bb"), Ok(vec!["a\x0bb".into()]));
        assert_eq!(inline(r#"""#), Err(()));
        assert_eq!(inline(r#""a"b"#), Err(()));
        assert_eq!(inline(r#"'a'b"#), Err(()));
        assert_eq!(inline(r#""a\"#), Err(()));
        assert_eq!(inline(""), Ok(vec![]));
    }

    #[test]
    fn multibulk_errors_are_redis_texts() {
        let msg = |i: &[u8]| match one(i).0 {
            Parse::Error(e) => String::from_utf8(e.message().unwrap()).unwrap(),
            other => panic!("{other:?}"),
        };
        assert_eq!(msg(b"*999999999999\r\n"), "ERR Protocol error: invalid multibulk length");
        assert_eq!(msg(b"*01\r\n"), "ERR Protocol error: invalid multibulk length");
        assert_eq!(msg(b"*1048577\r\n"), "ERR Protocol error: invalid multibulk length");
        assert_eq!(msg(b"*2\r\n$2147483648\r\n"), "ERR Protocol error: invalid bulk length");
        assert_eq!(msg(b"*2\r\n$1048577\r\n"), "ERR Protocol error: invalid bulk length");
        assert_eq!(msg(b"*2\r\n$-1\r\n"), "ERR Protocol error: invalid bulk length");
        assert_eq!(msg(b"*2\r\n:1\r\n"), "ERR Protocol error: expected '$', got ':'");
        assert_eq!(msg(b"set \"a\r\n"), "ERR Protocol error: unbalanced quotes in request");
        let long = vec![b'a'; INLINE_BYTES_MAX + 1];
        assert_eq!(msg(&long), "ERR Protocol error: too big inline request");
        let mut star = b"*".to_vec();
        star.extend(vec![b'1'; INLINE_BYTES_MAX + 1]);
        assert_eq!(msg(&star), "ERR Protocol error: too big mbulk count string");
    }

    #[test]
    fn empty_commands_and_unchecked_terminators() {
        assert_eq!(one(b"*0\r\n").0, Parse::Empty { consumed: 4 });
        assert_eq!(one(b"*-1\r\n").0, Parse::Empty { consumed: 5 });
        assert_eq!(one(b"\r\n").0, Parse::Empty { consumed: 2 });
        // Redis skips the two bytes after a body without looking.
        let (r, args) = one(b"*1\r\n$4\r\nPINGxx");
        assert_eq!((r, args), (Parse::Command { consumed: 14 }, vec![b"PING".to_vec()]));
        assert_eq!(one(b"*1\r").0, Parse::Incomplete);
    }

    #[test]
    fn resumes_where_it_stopped() {
        let req = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n";
        let mut p = Parser::new();
        for cut in 0..req.len() {
            let mut args = Vec::new();
            assert_eq!(p.parse(&req[..cut], LIMITS, &mut args), Parse::Incomplete, "cut {cut}");
            assert!(args.is_empty());
        }
        let mut args = Vec::new();
        assert_eq!(p.parse(req, LIMITS, &mut args), Parse::Command { consumed: req.len() });
        assert_eq!(args, [&b"SET"[..], b"k", b"hello"]);
    }

    #[test]
    fn request_bound_closes_silently() {
        let limits = Limits { bulk_bytes_max: 100, request_bytes_max: 64 };
        let mut input = b"*100\r\n".to_vec();
        for _ in 0..20 {
            input.extend_from_slice(b"$1\r\nx\r\n");
        }
        let mut args = Vec::new();
        let r = Parser::new().parse(&input, limits, &mut args);
        assert_eq!(r, Parse::Error(ProtocolError::RequestTooLarge));
        assert_eq!(ProtocolError::RequestTooLarge.message(), None);
    }
}
