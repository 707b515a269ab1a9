//! Requests and replies of memcached's text and meta protocols, and of
//! Redis's RESP (GET and SET of one key here; the collection commands'
//! requests in `command.rs`), as the network driver writes and reads them.
//!
//! Requests are appended to a connection's write buffer. Replies are parsed
//! one complete unit at a time from the front of a read buffer: a unit is a
//! reply line, or a hit line together with its data block. The parser keeps
//! no state between calls; a partial unit answers `Ok(None)` and is parsed
//! again, whole, once more bytes have arrived. Anything that is not a reply
//! the driver can have asked for is `Err(Malformed)`.

use crate::workload::key_into;

/// Wire protocol of the benchmarked server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Protocol {
    /// memcached's text protocol: `get k1 k2 …`, `set k 0 0 n`.
    Text,
    /// memcached's meta protocol: `mg k v`, `ms k n`; a multi-get is quiet
    /// `mg k k v q` commands closed by `mn`.
    Meta,
    /// Redis's RESP2: `GET k`, `SET k v` as multibulk arrays; one key per
    /// request (`--multiget 1`). Preloads speak it too (a Redis server
    /// has no memcached port).
    Resp,
}

impl Protocol {
    /// Name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Text => "text",
            Protocol::Meta => "meta",
            Protocol::Resp => "resp",
        }
    }
}

/// One complete reply unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A hit with its data block: text `VALUE <key> <flags> <bytes>[ <cas>]`
    /// or meta `VA <bytes>[ <flags>]`. `key` is the key id parsed from the
    /// returned key (text, or meta's `k` flag), if it was returned and is hex.
    /// The data is the `len` bytes before the unit's final `\r\n`.
    Value {
        /// Key id, if the reply carries a hex key.
        key: Option<u64>,
        /// Data bytes.
        len: usize,
    },
    /// End of a (multi-)get: text `END`, meta `MN`.
    End,
    /// Meta miss: `EN`.
    Miss,
    /// A store succeeded: text `STORED`, meta `HD`.
    Stored,
    /// A store did not happen: `NOT_STORED`, `EXISTS`, `NOT_FOUND` (text) or
    /// `NS`, `EX`, `NF` (meta).
    NotStored,
    /// `ERROR`: the server did not know the command.
    Error,
    /// `CLIENT_ERROR …`.
    ClientError,
    /// `SERVER_ERROR …`.
    ServerError,
    /// RESP integer `:<n>` (HSET, LPUSH, SADD, ZADD, SISMEMBER, the
    /// cardinality commands).
    Integer(i64),
    /// RESP array `*<len>` with all its elements (ZRANGE); the elements
    /// are checked for form and skipped, not returned. A null array
    /// (`*-1`) is a [`Event::Miss`].
    Array {
        /// Elements at the top level.
        len: usize,
    },
}

/// A reply the driver cannot have asked for; the connection is out of step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Malformed(pub String);

/// memcached's `KEY_MAX_LENGTH`.
pub const KEY_BYTES_MAX: usize = 250;

/// Longest reply line accepted (a text `VALUE` line with a 250-byte key is
/// about 300 bytes).
pub const LINE_BYTES_MAX: usize = 4096;

/// Most elements of one RESP array accepted (the driver asks for at most
/// ten: `ZRANGE k 0 9`); more means the connection is out of step.
pub const ARRAY_ELEMENTS_MAX: usize = 1024;

/// Deepest nesting of RESP arrays accepted (the top-level array is 1).
pub const ARRAY_DEPTH_MAX: usize = 4;

/// Parses the unit at the front of `buf`: `Ok(Some((event, bytes used)))`,
/// `Ok(None)` if `buf` holds only part of it, `Err` if it is not a reply.
pub fn parse(proto: Protocol, buf: &[u8]) -> Result<Option<(Event, usize)>, Malformed> {
    if proto == Protocol::Resp {
        return parse_resp(buf);
    }
    let Some(nl) = buf.iter().position(|&b| b == b'\n') else {
        if buf.len() > LINE_BYTES_MAX {
            return Err(malformed("reply line too long", buf));
        }
        return Ok(None);
    };
    if nl == 0 || buf[nl - 1] != b'\r' {
        return Err(malformed("reply line not ended by \\r\\n", &buf[..nl]));
    }
    let line = &buf[..nl - 1];
    let after = nl + 1;
    let mut tokens = line.split(|&b| b == b' ');
    let first = tokens.next().unwrap_or(b"");
    let simple = |e: Event| Ok(Some((e, after)));
    match first {
        b"ERROR" => return simple(Event::Error),
        b"CLIENT_ERROR" => return simple(Event::ClientError),
        b"SERVER_ERROR" => return simple(Event::ServerError),
        _ => {}
    }
    let (event, key, len) = match (proto, first) {
        (Protocol::Text, b"END") if line.len() == 3 => return simple(Event::End),
        (Protocol::Text, b"STORED") if line.len() == 6 => return simple(Event::Stored),
        (Protocol::Text, b"NOT_STORED" | b"EXISTS" | b"NOT_FOUND") => return simple(Event::NotStored),
        (Protocol::Text, b"VALUE") => {
            // VALUE <key> <flags> <bytes>[ <cas>]
            let key = tokens.next();
            let flags = tokens.next().and_then(parse_decimal);
            let len = tokens.next().and_then(parse_decimal);
            let cas_ok = tokens.next().is_none_or(|c| parse_decimal(c).is_some());
            match (key, flags, len) {
                (Some(k), Some(_), Some(n)) if cas_ok && tokens.next().is_none() => ("VALUE", parse_hex(k), n),
                _ => return Err(malformed("bad VALUE line", line)),
            }
        }
        (Protocol::Meta, b"HD") => return simple(Event::Stored),
        (Protocol::Meta, b"EN") => return simple(Event::Miss),
        (Protocol::Meta, b"MN") => return simple(Event::End),
        (Protocol::Meta, b"NS" | b"EX" | b"NF") => return simple(Event::NotStored),
        (Protocol::Meta, b"VA") => {
            // VA <bytes>[ <flag>…]; the `k` flag returns the key.
            let Some(n) = tokens.next().and_then(parse_decimal) else {
                return Err(malformed("bad VA line", line));
            };
            let mut key = None;
            for flag in tokens {
                if let [b'k', k @ ..] = flag {
                    key = parse_hex(k);
                }
            }
            ("VA", key, n)
        }
        _ => return Err(malformed("unexpected reply", line)),
    };
    let end = after.checked_add(len).and_then(|e| e.checked_add(2)).ok_or_else(|| malformed(event, line))?;
    if buf.len() < end {
        return Ok(None);
    }
    if &buf[end - 2..end] != b"\r\n" {
        return Err(malformed("data block not ended by \\r\\n after", line));
    }
    Ok(Some((Event::Value { key, len }, end)))
}

/// One RESP reply: `+OK` (stored), `$-1`, `_` or `*-1` (a miss), `$<n>`
/// and its data (a hit; RESP carries no key), `:<n>` (an integer),
/// `*<n>` with its `n` elements (an array; elements may be bulk strings,
/// nulls, integers, simple strings or arrays, nested at most
/// [`ARRAY_DEPTH_MAX`] deep, at most [`ARRAY_ELEMENTS_MAX`] each), `-…`
/// (an error: `-ERR unknown command` is [`Event::Error`], `-OOM`
/// [`Event::ServerError`], others — `-WRONGTYPE` too — [`Event::ClientError`]).
fn parse_resp(buf: &[u8]) -> Result<Option<(Event, usize)>, Malformed> {
    let Some((line, after)) = resp_line(buf)? else { return Ok(None) };
    let simple = |e: Event| Ok(Some((e, after)));
    match line {
        b"+OK" => simple(Event::Stored),
        b"$-1" | b"_" | b"*-1" => simple(Event::Miss),
        [b'-', rest @ ..] if rest.starts_with(b"ERR unknown command") => simple(Event::Error),
        [b'-', rest @ ..] if rest.starts_with(b"OOM") => simple(Event::ServerError),
        [b'-', ..] => simple(Event::ClientError),
        [b':', digits @ ..] => {
            simple(Event::Integer(parse_integer(digits).ok_or_else(|| malformed("bad integer", line))?))
        }
        [b'$', digits @ ..] => {
            let len = parse_decimal(digits).ok_or_else(|| malformed("bad bulk length", line))?;
            Ok(bulk_end(buf, after, len, line)?.map(|end| (Event::Value { key: None, len }, end)))
        }
        [b'*', digits @ ..] => {
            let len = array_len(digits, line)?;
            Ok(skip_elements(buf, after, len, 1)?.map(|end| (Event::Array { len }, end)))
        }
        _ => Err(malformed("unexpected reply", line)),
    }
}

/// The `\r\n`-ended line at the front of `buf` (without its end) and the
/// offset after it; `None` if it has not all arrived.
fn resp_line(buf: &[u8]) -> Result<Option<(&[u8], usize)>, Malformed> {
    let Some(nl) = buf.iter().position(|&b| b == b'\n') else {
        if buf.len() > LINE_BYTES_MAX {
            return Err(malformed("reply line too long", buf));
        }
        return Ok(None);
    };
    if nl == 0 || buf[nl - 1] != b'\r' {
        return Err(malformed("reply line not ended by \\r\\n", &buf[..nl]));
    }
    Ok(Some((&buf[..nl - 1], nl + 1)))
}

/// End of a bulk string of `len` bytes whose data starts at `at`; `None`
/// if it has not all arrived.
fn bulk_end(buf: &[u8], at: usize, len: usize, line: &[u8]) -> Result<Option<usize>, Malformed> {
    let end = at.checked_add(len).and_then(|e| e.checked_add(2)).ok_or_else(|| malformed("bulk", line))?;
    if buf.len() < end {
        return Ok(None);
    }
    if &buf[end - 2..end] != b"\r\n" {
        return Err(malformed("bulk string not ended by \\r\\n after", line));
    }
    Ok(Some(end))
}

fn array_len(digits: &[u8], line: &[u8]) -> Result<usize, Malformed> {
    match parse_decimal(digits) {
        Some(n) if n <= ARRAY_ELEMENTS_MAX => Ok(n),
        Some(_) => Err(malformed("array longer than ARRAY_ELEMENTS_MAX", line)),
        None => Err(malformed("bad array length", line)),
    }
}

/// Checks and skips `n` array elements starting at `buf[at..]` (`depth`:
/// the array's nesting level); returns the offset after the last, or
/// `None` if they have not all arrived. The parser keeps no state, so a
/// partial array is scanned again from its start: bounded by
/// [`ARRAY_ELEMENTS_MAX`] and [`ARRAY_DEPTH_MAX`].
fn skip_elements(buf: &[u8], mut at: usize, n: usize, depth: usize) -> Result<Option<usize>, Malformed> {
    for _ in 0..n {
        let Some((line, after)) = resp_line(&buf[at..])? else { return Ok(None) };
        let after = at + after;
        let end = match line {
            b"$-1" | b"_" | b"*-1" => Some(after),
            [b'+', ..] => Some(after),
            [b':', digits @ ..] => {
                parse_integer(digits).ok_or_else(|| malformed("bad integer in array", line))?;
                Some(after)
            }
            [b'$', digits @ ..] => {
                let len = parse_decimal(digits).ok_or_else(|| malformed("bad bulk length in array", line))?;
                bulk_end(buf, after, len, line)?
            }
            [b'*', ..] if depth >= ARRAY_DEPTH_MAX => return Err(malformed("arrays nested too deep", line)),
            [b'*', digits @ ..] => skip_elements(buf, after, array_len(digits, line)?, depth + 1)?,
            _ => return Err(malformed("unexpected array element", line)),
        };
        let Some(end) = end else { return Ok(None) };
        at = end;
    }
    Ok(Some(at))
}

/// A RESP integer: optional `-`, then 1..=19 decimal digits, within i64.
fn parse_integer(s: &[u8]) -> Option<i64> {
    let (neg, digits) = match s {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, s),
    };
    let v = i64::try_from(parse_decimal(digits)?).ok()?;
    Some(if neg { -v } else { v })
}

/// Data of a [`Event::Value`] unit of `used` bytes at the front of `buf`.
pub fn value_data(buf: &[u8], used: usize, len: usize) -> &[u8] {
    &buf[used - 2 - len..used - 2]
}

fn malformed(what: &str, line: &[u8]) -> Malformed {
    let shown: String = String::from_utf8_lossy(&line[..line.len().min(80)]).escape_debug().collect();
    Malformed(format!("{what}: \"{shown}\""))
}

fn parse_decimal(s: &[u8]) -> Option<usize> {
    if s.is_empty() || s.len() > 19 || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(s.iter().fold(0usize, |n, &d| n * 10 + usize::from(d - b'0')))
}

/// A key written by `workload::key_into` back to its id; `None` if it is
/// not lower-case hex or does not fit in 64 bits.
pub fn parse_hex(s: &[u8]) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    let mut v: u64 = 0;
    for &c in s {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => return None,
        };
        if v >> 60 != 0 {
            return None;
        }
        v = (v << 4) | u64::from(d);
    }
    Some(v)
}

/// Appends a GET of `keys` (at least one): text `get k1 k2 …`; meta
/// `mg k v` for one key, else one quiet `mg k k v q` per key and `mn`.
/// `scratch` is reused for key encoding.
pub fn push_get(
    proto: Protocol,
    out: &mut Vec<u8>,
    keys: impl ExactSizeIterator<Item = u64>,
    key_bytes: usize,
    scratch: &mut Vec<u8>,
) {
    let n = keys.len();
    debug_assert!(n > 0);
    match proto {
        Protocol::Text => {
            out.extend_from_slice(b"get");
            for k in keys {
                key_into(k, key_bytes, scratch);
                out.push(b' ');
                out.extend_from_slice(scratch);
            }
            out.extend_from_slice(b"\r\n");
        }
        Protocol::Meta if n == 1 => {
            for k in keys {
                key_into(k, key_bytes, scratch);
                out.extend_from_slice(b"mg ");
                out.extend_from_slice(scratch);
                out.extend_from_slice(b" v\r\n");
            }
        }
        Protocol::Meta => {
            for k in keys {
                key_into(k, key_bytes, scratch);
                out.extend_from_slice(b"mg ");
                out.extend_from_slice(scratch);
                out.extend_from_slice(b" k v q\r\n");
            }
            out.extend_from_slice(b"mn\r\n");
        }
        // One GET per key (the driver asks for one key per request).
        Protocol::Resp => {
            for k in keys {
                key_into(k, key_bytes, scratch);
                out.extend_from_slice(b"*2\r\n$3\r\nGET\r\n");
                push_bulk(out, scratch);
            }
        }
    }
}

/// Appends a RESP bulk string.
pub(crate) fn push_bulk(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(b'$');
    push_decimal(out, bytes.len());
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(bytes);
    out.extend_from_slice(b"\r\n");
}

/// Appends a SET of `key` to `value` (flags 0, no expiry, with a reply):
/// text `set k 0 0 n`, meta `ms k n`.
pub fn push_set(proto: Protocol, out: &mut Vec<u8>, key: u64, key_bytes: usize, value: &[u8], scratch: &mut Vec<u8>) {
    key_into(key, key_bytes, scratch);
    match proto {
        Protocol::Resp => {
            out.extend_from_slice(b"*3\r\n$3\r\nSET\r\n");
            push_bulk(out, scratch);
            push_bulk(out, value);
            return;
        }
        Protocol::Text => {
            out.extend_from_slice(b"set ");
            out.extend_from_slice(scratch);
            out.extend_from_slice(b" 0 0 ");
        }
        Protocol::Meta => {
            out.extend_from_slice(b"ms ");
            out.extend_from_slice(scratch);
            out.push(b' ');
        }
    }
    push_decimal(out, value.len());
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// [`push_set`] with an expiry of `ttl_secs` seconds (at least 1):
/// RESP `SET k v EX t`, text `set k 0 t n`, meta `ms k n T<t>`.
pub fn push_set_ex(
    proto: Protocol,
    out: &mut Vec<u8>,
    key: u64,
    key_bytes: usize,
    value: &[u8],
    ttl_secs: u32,
    scratch: &mut Vec<u8>,
) {
    key_into(key, key_bytes, scratch);
    let ttl = ttl_secs.max(1).to_string();
    match proto {
        Protocol::Resp => {
            out.extend_from_slice(b"*5\r\n$3\r\nSET\r\n");
            push_bulk(out, scratch);
            push_bulk(out, value);
            push_bulk(out, b"EX");
            push_bulk(out, ttl.as_bytes());
            return;
        }
        Protocol::Text => {
            out.extend_from_slice(b"set ");
            out.extend_from_slice(scratch);
            out.extend_from_slice(b" 0 ");
            out.extend_from_slice(ttl.as_bytes());
            out.push(b' ');
        }
        Protocol::Meta => {
            out.extend_from_slice(b"ms ");
            out.extend_from_slice(scratch);
            out.push(b' ');
        }
    }
    push_decimal(out, value.len());
    if proto == Protocol::Meta {
        out.extend_from_slice(b" T");
        out.extend_from_slice(ttl.as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// Appends `n` in decimal without allocating.
pub(crate) fn push_decimal(out: &mut Vec<u8>, n: usize) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut v = n;
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

/// Whether a GET of `n` keys ends with [`Event::End`] (text; meta
/// multi-get's `mn`) rather than with its one `VA` or `EN` (meta, one key).
pub fn get_ends_with_end(proto: Protocol, n: usize) -> bool {
    proto == Protocol::Text || (proto == Protocol::Meta && n > 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::key_of;

    /// Parses all of `buf`, which must end on a unit boundary.
    fn parse_all(proto: Protocol, mut buf: &[u8]) -> Vec<Event> {
        let mut out = Vec::new();
        while !buf.is_empty() {
            let (e, used) = parse(proto, buf).unwrap().expect("complete unit");
            out.push(e);
            buf = &buf[used..];
        }
        out
    }

    /// Feeds `buf` to the parser in pieces cut at `cuts`, keeping what is
    /// not yet parsed, as the driver's read buffer does.
    fn parse_in_pieces(proto: Protocol, buf: &[u8], cuts: &[usize]) -> Vec<Event> {
        let mut have = Vec::new();
        let mut out = Vec::new();
        let mut from = 0;
        for &to in cuts.iter().chain(std::iter::once(&buf.len())) {
            have.extend_from_slice(&buf[from..to]);
            from = to;
            while let Some((e, used)) = parse(proto, &have).unwrap() {
                out.push(e);
                have.drain(..used);
            }
        }
        assert!(have.is_empty(), "left over: {:?}", String::from_utf8_lossy(&have));
        out
    }

    fn text_stream() -> (Vec<u8>, Vec<Event>) {
        let k1 = key_of(0x1234, 16);
        let k2 = key_of(0xbeef, 16);
        let mut b = Vec::new();
        b.extend_from_slice(b"VALUE ");
        b.extend_from_slice(&k1);
        b.extend_from_slice(b" 0 5\r\nhello\r\nVALUE ");
        b.extend_from_slice(&k2);
        // Data containing \r\n and "END" must be skipped by length, not scanned.
        b.extend_from_slice(b" 7 7 99\r\nEND\r\n\r\n\r\nEND\r\n");
        b.extend_from_slice(b"END\r\nSTORED\r\nNOT_STORED\r\nERROR\r\nCLIENT_ERROR bad data chunk\r\n");
        b.extend_from_slice(b"SERVER_ERROR out of memory storing object\r\nVALUE zz 0 0\r\n\r\nEND\r\n");
        let ev = vec![
            Event::Value { key: Some(0x1234), len: 5 },
            Event::Value { key: Some(0xbeef), len: 7 },
            Event::End,
            Event::End,
            Event::Stored,
            Event::NotStored,
            Event::Error,
            Event::ClientError,
            Event::ServerError,
            Event::Value { key: None, len: 0 },
            Event::End,
        ];
        (b, ev)
    }

    fn meta_stream() -> (Vec<u8>, Vec<Event>) {
        let b = b"VA 5\r\nhello\r\nEN\r\nVA 4 k00ff\r\nHD\r\n\r\nMN\r\nHD\r\nNS\r\nEX\r\nNF\r\nERROR\r\n\
                  SERVER_ERROR nope\r\nVA 0 f0 kzz\r\n\r\nMN\r\n"
            .to_vec();
        let ev = vec![
            Event::Value { key: None, len: 5 },
            Event::Miss,
            Event::Value { key: Some(0xff), len: 4 },
            Event::End,
            Event::Stored,
            Event::NotStored,
            Event::NotStored,
            Event::NotStored,
            Event::Error,
            Event::ServerError,
            Event::Value { key: None, len: 0 },
            Event::End,
        ];
        (b, ev)
    }

    fn resp_stream() -> (Vec<u8>, Vec<Event>) {
        // A bulk whose data holds \r\n and "+OK" is skipped by length.
        let b = b"$5\r\nhello\r\n$-1\r\n_\r\n+OK\r\n$7\r\n+OK\r\n\r\n\r\n$0\r\n\r\n\
                  -ERR unknown command 'x', with args beginning with: \r\n-OOM command not allowed\r\n-ERR syntax error\r\n"
            .to_vec();
        let ev = vec![
            Event::Value { key: None, len: 5 },
            Event::Miss,
            Event::Miss,
            Event::Stored,
            Event::Value { key: None, len: 7 },
            Event::Value { key: None, len: 0 },
            Event::Error,
            Event::ServerError,
            Event::ClientError,
        ];
        (b, ev)
    }

    #[test]
    fn resp_replies() {
        let (b, ev) = resp_stream();
        assert_eq!(parse_all(Protocol::Resp, &b), ev);
        for cut in 0..=b.len() {
            for cut2 in cut..=b.len() {
                assert_eq!(parse_in_pieces(Protocol::Resp, &b, &[cut, cut2]), ev, "cuts {cut} {cut2}");
            }
        }
        for bad in [&b":x\r\n"[..], b"$x\r\n", b"$1\r\nab\r\n", b"*1\r\n-ERR x\r\n", b"+OK\n"] {
            assert!(parse(Protocol::Resp, bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
        let mut out = Vec::new();
        let mut s = Vec::new();
        push_get(Protocol::Resp, &mut out, [1u64].into_iter(), 4, &mut s);
        push_set(Protocol::Resp, &mut out, 2, 4, b"hey", &mut s);
        assert_eq!(out, b"*2\r\n$3\r\nGET\r\n$4\r\n0001\r\n*3\r\n$3\r\nSET\r\n$4\r\n0002\r\n$3\r\nhey\r\n");
        assert!(!get_ends_with_end(Protocol::Resp, 1));
    }

    /// Integers and arrays (the collection commands' replies), including
    /// bulks holding \r\n and array-looking text, nested arrays and nulls.
    fn resp_collection_stream() -> (Vec<u8>, Vec<Event>) {
        let b = b":0\r\n:1\r\n:-42\r\n:9223372036854775807\r\n*0\r\n*-1\r\n\
                  *3\r\n$3\r\nabc\r\n$4\r\n*1\r\n\r\n$-1\r\n\
                  *4\r\n:5\r\n+x\r\n*2\r\n$1\r\na\r\n_\r\n*0\r\n$2\r\nok\r\n"
            .to_vec();
        let ev = vec![
            Event::Integer(0),
            Event::Integer(1),
            Event::Integer(-42),
            Event::Integer(i64::MAX),
            Event::Array { len: 0 },
            Event::Miss,
            Event::Array { len: 3 },
            Event::Array { len: 4 },
            Event::Value { key: None, len: 2 },
        ];
        (b, ev)
    }

    #[test]
    fn resp_integers_and_arrays() {
        let (b, ev) = resp_collection_stream();
        assert_eq!(parse_all(Protocol::Resp, &b), ev);
        for cut in 0..=b.len() {
            assert_eq!(parse_in_pieces(Protocol::Resp, &b, &[cut]), ev, "cut at {cut}");
        }
        let every: Vec<usize> = (1..b.len()).collect();
        assert_eq!(parse_in_pieces(Protocol::Resp, &b, &every), ev, "byte by byte");
        for cut in 0..=b.len() {
            for cut2 in cut..=b.len() {
                assert_eq!(parse_in_pieces(Protocol::Resp, &b, &[cut, cut2]), ev, "cuts {cut} {cut2}");
            }
        }
        // Every proper prefix of an array is incomplete, not an error.
        let arr = b"*2\r\n$3\r\nabc\r\n*1\r\n:7\r\n";
        for n in 0..arr.len() {
            assert_eq!(parse(Protocol::Resp, &arr[..n]), Ok(None), "prefix {n}");
        }
        assert_eq!(parse(Protocol::Resp, arr), Ok(Some((Event::Array { len: 2 }, arr.len()))));
    }

    #[test]
    fn resp_arrays_are_bounded() {
        let mut long = format!("*{}\r\n", ARRAY_ELEMENTS_MAX).into_bytes();
        long.extend(std::iter::repeat_n(&b":1\r\n"[..], ARRAY_ELEMENTS_MAX).flatten());
        assert_eq!(parse(Protocol::Resp, &long), Ok(Some((Event::Array { len: ARRAY_ELEMENTS_MAX }, long.len()))));
        let too_long = format!("*{}\r\n", ARRAY_ELEMENTS_MAX + 1);
        assert!(parse(Protocol::Resp, too_long.as_bytes()).is_err());
        let nested = |depth: usize| {
            let mut b = b"*1\r\n".repeat(depth);
            b.extend_from_slice(b":1\r\n");
            b
        };
        let ok = nested(ARRAY_DEPTH_MAX);
        assert_eq!(parse(Protocol::Resp, &ok), Ok(Some((Event::Array { len: 1 }, ok.len()))));
        assert!(parse(Protocol::Resp, &nested(ARRAY_DEPTH_MAX + 1)).is_err());
        for bad in [
            &b":\r\n"[..],
            b":-\r\n",
            b":1x\r\n",
            b":99999999999999999999\r\n",
            b":9223372036854775808\r\n",
            b"*x\r\n",
            b"*-2\r\n",
            b"*1\r\n:x\r\n",
            b"*1\r\n-ERR no\r\n",
            b"*1\r\n$2\r\nabc\r\n",
            b"*1\r\nhello\r\n",
        ] {
            assert!(parse(Protocol::Resp, bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn whole_streams_parse() {
        for (proto, (b, ev)) in [(Protocol::Text, text_stream()), (Protocol::Meta, meta_stream())] {
            assert_eq!(parse_all(proto, &b), ev, "{proto:?}");
        }
    }

    #[test]
    fn split_at_every_byte_boundary() {
        for (proto, (b, ev)) in [(Protocol::Text, text_stream()), (Protocol::Meta, meta_stream())] {
            for cut in 0..=b.len() {
                assert_eq!(parse_in_pieces(proto, &b, &[cut]), ev, "{proto:?} cut at {cut}");
            }
            let every: Vec<usize> = (1..b.len()).collect();
            assert_eq!(parse_in_pieces(proto, &b, &every), ev, "{proto:?} byte by byte");
            for cut in 0..b.len() {
                for cut2 in cut..b.len() {
                    assert_eq!(parse_in_pieces(proto, &b, &[cut, cut2]), ev, "{proto:?} cuts {cut} {cut2}");
                }
            }
        }
    }

    #[test]
    fn value_data_is_located() {
        let b = b"VALUE 00ab 0 3\r\nxyz\r\nEND\r\n";
        let (e, used) = parse(Protocol::Text, b).unwrap().unwrap();
        assert_eq!(e, Event::Value { key: Some(0xab), len: 3 });
        assert_eq!(value_data(b, used, 3), b"xyz");
    }

    #[test]
    fn malformed_replies_are_errors() {
        let bad: &[(Protocol, &[u8])] = &[
            (Protocol::Text, b"VALUE k 0 3\r\nabcXY"),
            (Protocol::Text, b"VALUE k 0\r\n"),
            (Protocol::Text, b"VALUE k 0 x\r\n"),
            (Protocol::Text, b"VALUE k 0 1 2 3\r\n"),
            (Protocol::Text, b"HD\r\n"),
            (Protocol::Text, b"ENDX\r\n"),
            (Protocol::Text, b"END\n"),
            (Protocol::Text, b"\n"),
            (Protocol::Meta, b"END\r\n"),
            (Protocol::Meta, b"VA\r\n"),
            (Protocol::Meta, b"VA 2\r\nabc\r\n"),
            (Protocol::Meta, b"STORED\r\n"),
        ];
        for (proto, b) in bad {
            assert!(parse(*proto, b).is_err(), "{proto:?} {:?}", String::from_utf8_lossy(b));
        }
        assert!(parse(Protocol::Text, &[b'x'; LINE_BYTES_MAX + 1]).is_err());
        assert_eq!(parse(Protocol::Text, &[b'x'; LINE_BYTES_MAX]), Ok(None));
    }

    #[test]
    fn requests_are_encoded() {
        let mut out = Vec::new();
        let mut s = Vec::new();
        push_get(Protocol::Text, &mut out, [1u64, 0xab].into_iter(), 4, &mut s);
        push_set(Protocol::Text, &mut out, 2, 4, b"hey", &mut s);
        assert_eq!(out, b"get 0001 00ab\r\nset 0002 0 0 3\r\nhey\r\n");
        out.clear();
        push_get(Protocol::Meta, &mut out, [1u64].into_iter(), 4, &mut s);
        push_get(Protocol::Meta, &mut out, [1u64, 2].into_iter(), 4, &mut s);
        push_set(Protocol::Meta, &mut out, 3, 4, b"", &mut s);
        assert_eq!(out, b"mg 0001 v\r\nmg 0001 k v q\r\nmg 0002 k v q\r\nmn\r\nms 0003 0\r\n\r\n");
    }

    #[test]
    fn hex_keys_round_trip() {
        for id in [0u64, 1, 0xabc, u64::from(u32::MAX), u64::MAX] {
            assert_eq!(parse_hex(&key_of(id, 16)), Some(id));
        }
        assert_eq!(parse_hex(&key_of(77, 24)), Some(77));
        assert_eq!(parse_hex(b"1ffffffffffffffff"), None);
        assert_eq!(parse_hex(b"AB"), None);
    }
}
