//! RESP2 and RESP3 frames as the flows read them: replies, and the frames
//! nobody asked for (RESP3 `>` pushes: tracking's `invalidate`; a RESP2
//! subscriber's `pmessage` arrays).
//!
//! [`parse`] reads the one complete frame at the front of a buffer and
//! borrows from it: a scalar's bytes, or an aggregate's element bytes
//! (`body`), which [`Elements`] walks with [`parse`] again (they are
//! complete, being inside a complete frame). It keeps no state: a partial
//! frame answers `Ok(None)` and is scanned again, whole, when more bytes
//! have arrived, which the limits below bound ([`ELEMENTS_MAX`] elements
//! per aggregate, [`DEPTH_MAX`] levels). Anything else is `Err`: the
//! connection is out of step.
//!
//! The two shapes the flows dig into:
//! * **XREADGROUP … COUNT 1 STREAMS s >**: RESP2 `*1 [*2 [name, *1 [*2
//!   [id, fields]]]]`, RESP3 `%1 {name: *1 [*2 [id, fields]]}`; a null
//!   (`*-1`, `_`) when the group has read all. [`first_entry_id`].
//! * **invalidate push**: `>2 [invalidate, *n [key…]]`, or `>2 [invalidate,
//!   _]` (the whole keyspace, after FLUSHALL). [`invalidated_keys`].

/// Most elements of one aggregate (the flows ask for a handful: one
/// entry, a HELLO map; an invalidate push names the keys one write
/// touched).
pub const ELEMENTS_MAX: usize = 1024;
/// Deepest nesting accepted (XREADGROUP's reply is 5 deep: reply, stream,
/// entries, entry, fields).
pub const DEPTH_MAX: usize = 8;
/// Longest header or simple line accepted.
pub const LINE_BYTES_MAX: usize = 4096;

/// One complete frame, borrowed from the buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// `+…`, and RESP3's `#` (boolean), `,` (double), `(` (big number):
    /// the line after the type byte.
    Simple(&'a [u8]),
    /// `-…` or RESP3's blob error `!`: the message.
    Error(&'a [u8]),
    /// `:<n>`.
    Integer(i64),
    /// `$<n>` or RESP3's verbatim `=<n>`: the data.
    Bulk(&'a [u8]),
    /// `$-1`, `*-1`, RESP3 `_`.
    Null,
    /// `*` array, `~` set, `%` map (`len` counts keys and values: twice
    /// the pairs), `>` push (`push`), with its elements' bytes.
    Aggregate {
        /// Top-level elements.
        len: usize,
        /// A RESP3 push (`>`), not a reply.
        push: bool,
        /// The elements, back to back.
        body: &'a [u8],
    },
}

/// Not a frame: the connection is out of step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Malformed(pub String);

/// Parses the frame at the front of `buf`: `Ok(Some((frame, bytes
/// used)))`, `Ok(None)` if only part of it has arrived.
pub fn parse(buf: &[u8]) -> Result<Option<(Frame<'_>, usize)>, Malformed> {
    parse_at(buf, 1)
}

fn parse_at(buf: &[u8], depth: usize) -> Result<Option<(Frame<'_>, usize)>, Malformed> {
    let Some((line, after)) = line(buf)? else { return Ok(None) };
    let Some((&ty, rest)) = line.split_first() else { return Err(malformed("empty line", line)) };
    let frame = match ty {
        b'+' | b'#' | b',' | b'(' => Frame::Simple(rest),
        b'-' => Frame::Error(rest),
        b'_' if rest.is_empty() => Frame::Null,
        b':' => Frame::Integer(integer(rest).ok_or_else(|| malformed("bad integer", line))?),
        b'$' | b'*' if rest == b"-1" => Frame::Null,
        b'$' | b'=' | b'!' => {
            let len = decimal(rest).ok_or_else(|| malformed("bad bulk length", line))?;
            let end = after.checked_add(len).and_then(|e| e.checked_add(2)).ok_or_else(|| malformed("bulk", line))?;
            if buf.len() < end {
                return Ok(None);
            }
            if &buf[end - 2..end] != b"\r\n" {
                return Err(malformed("bulk not ended by \\r\\n", line));
            }
            let data = &buf[after..end - 2];
            let frame = if ty == b'!' { Frame::Error(data) } else { Frame::Bulk(data) };
            return Ok(Some((frame, end)));
        }
        b'*' | b'~' | b'%' | b'>' => {
            let n = decimal(rest).ok_or_else(|| malformed("bad aggregate length", line))?;
            let len = if ty == b'%' { n.checked_mul(2) } else { Some(n) };
            let len = len.filter(|&l| l <= ELEMENTS_MAX).ok_or_else(|| malformed("aggregate too long", line))?;
            if len > 0 && depth >= DEPTH_MAX {
                return Err(malformed("aggregates nested too deep", line));
            }
            let mut at = after;
            for _ in 0..len {
                let Some((_, used)) = parse_at(&buf[at..], depth + 1)? else { return Ok(None) };
                at += used;
            }
            let frame = Frame::Aggregate { len, push: ty == b'>', body: &buf[after..at] };
            return Ok(Some((frame, at)));
        }
        _ => return Err(malformed("unknown frame type", line)),
    };
    Ok(Some((frame, after)))
}

/// The elements of an aggregate's `body`, in order. Each is complete (the
/// aggregate was); one that does not parse ends the walk early.
#[derive(Debug)]
pub struct Elements<'a> {
    body: &'a [u8],
    left: usize,
}

/// Walks `len` elements of `body` (an [`Frame::Aggregate`]'s).
pub fn elements(len: usize, body: &[u8]) -> Elements<'_> {
    Elements { body, left: len }
}

impl<'a> Iterator for Elements<'a> {
    type Item = Frame<'a>;

    fn next(&mut self) -> Option<Frame<'a>> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let (frame, used) = parse(self.body).ok().flatten()?;
        self.body = &self.body[used..];
        Some(frame)
    }
}

/// The elements of `frame` if it is an aggregate (a push or not) of
/// exactly `n`.
fn exactly(frame: Frame<'_>, n: usize) -> Option<Elements<'_>> {
    match frame {
        Frame::Aggregate { len, body, .. } if len == n => Some(elements(len, body)),
        _ => None,
    }
}

/// What an XREADGROUP of COUNT 1 over one stream answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Read<'a> {
    /// The id of the one entry delivered.
    Entry(&'a [u8]),
    /// Null: nothing new for the group.
    Empty,
}

/// The entry id of an XREADGROUP reply over one stream (RESP2 or RESP3
/// shape, module comment); `None` if the reply has another shape.
pub fn first_entry_id(frame: Frame<'_>) -> Option<Read<'_>> {
    if frame == Frame::Null {
        return Some(Read::Empty);
    }
    let mut stream = match frame {
        // RESP3: a map of one stream name to its entries.
        Frame::Aggregate { len: 2, push: false, body } => elements(2, body),
        _ => exactly(exactly(frame, 1)?.next()?, 2)?,
    };
    let _name = stream.next()?;
    let mut entries = exactly(stream.next()?, 1)?;
    let mut entry = exactly(entries.next()?, 2)?;
    match entry.next()? {
        Frame::Bulk(id) => Some(Read::Entry(id)),
        _ => None,
    }
}

/// The keys a RESP3 `invalidate` push names: `Some(n)` (`n` keys; 0 for
/// the null "every key" form), `None` if `frame` is not one.
pub fn invalidated_keys(frame: Frame<'_>) -> Option<usize> {
    let Frame::Aggregate { len: 2, push: true, body } = frame else { return None };
    let mut e = elements(2, body);
    if e.next()? != Frame::Bulk(b"invalidate") {
        return None;
    }
    match e.next()? {
        Frame::Aggregate { len, push: false, .. } => Some(len),
        Frame::Null => Some(0),
        _ => None,
    }
}

/// Whether `frame` is a subscriber's `pmessage` (RESP2 array or RESP3
/// push of four: `pmessage`, pattern, channel, message).
pub fn is_pmessage(frame: Frame<'_>) -> bool {
    exactly(frame, 4).and_then(|mut e| e.next()) == Some(Frame::Bulk(b"pmessage"))
}

/// The `\r\n`-ended line at the front of `buf` (without it) and the
/// offset after it; `None` if it has not all arrived.
fn line(buf: &[u8]) -> Result<Option<(&[u8], usize)>, Malformed> {
    let scan = &buf[..buf.len().min(LINE_BYTES_MAX + 2)];
    let Some(nl) = scan.iter().position(|&b| b == b'\n') else {
        if buf.len() > LINE_BYTES_MAX {
            return Err(malformed("line too long", buf));
        }
        return Ok(None);
    };
    if nl == 0 || buf[nl - 1] != b'\r' {
        return Err(malformed("line not ended by \\r\\n", &buf[..nl]));
    }
    Ok(Some((&buf[..nl - 1], nl + 1)))
}

/// 1..=19 decimal digits.
fn decimal(s: &[u8]) -> Option<usize> {
    if s.is_empty() || s.len() > 19 || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(s.iter().fold(0usize, |n, &d| n * 10 + usize::from(d - b'0')))
}

/// An optional `-` and a decimal within i64.
fn integer(s: &[u8]) -> Option<i64> {
    let (neg, digits) = match s {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, s),
    };
    let v = i64::try_from(decimal(digits)?).ok()?;
    Some(if neg { -v } else { v })
}

fn malformed(what: &str, line: &[u8]) -> Malformed {
    let shown: String = String::from_utf8_lossy(&line[..line.len().min(80)]).escape_debug().collect();
    Malformed(format!("{what}: \"{shown}\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// XREADGROUP's RESP2 reply delivering entry 12-1 of stream `s1`.
    const READ2: &[u8] = b"*1\r\n*2\r\n$2\r\ns1\r\n*1\r\n*2\r\n$4\r\n12-1\r\n*2\r\n$1\r\nf\r\n$3\r\nv\r\n\r\n";
    /// The same in RESP3.
    const READ3: &[u8] = b"%1\r\n$2\r\ns1\r\n*1\r\n*2\r\n$4\r\n12-1\r\n*2\r\n$1\r\nf\r\n$3\r\nv\r\n\r\n";
    const INVALIDATE: &[u8] = b">2\r\n$10\r\ninvalidate\r\n*2\r\n$3\r\nk01\r\n$3\r\nk02\r\n";
    const PMESSAGE: &[u8] = b"*4\r\n$8\r\npmessage\r\n$10\r\n__key*__:*\r\n$17\r\n__keyspace@0__:k1\r\n$3\r\nset\r\n";

    /// Every frame of `buf`, fed in pieces cut at `cuts` (as a read
    /// buffer fills): what each piece-wise parse sees must equal the whole.
    fn frames_in_pieces(buf: &[u8], cuts: &[usize]) -> Vec<String> {
        let mut have = Vec::new();
        let mut out = Vec::new();
        let mut from = 0;
        for &to in cuts.iter().chain(std::iter::once(&buf.len())) {
            have.extend_from_slice(&buf[from..to]);
            from = to;
            while let Some((frame, used)) = parse(&have).unwrap() {
                out.push(format!("{frame:?}"));
                have.drain(..used);
            }
        }
        assert!(have.is_empty(), "left over: {:?}", String::from_utf8_lossy(&have));
        out
    }

    #[test]
    fn replies_and_pushes_interleave() {
        let mut b = Vec::new();
        b.extend_from_slice(b"$3\r\nabc\r\n");
        b.extend_from_slice(INVALIDATE);
        b.extend_from_slice(b"_\r\n:1\r\n+OK\r\n-ERR no\r\n");
        b.extend_from_slice(b">2\r\n$10\r\ninvalidate\r\n_\r\n");
        b.extend_from_slice(READ2);
        b.extend_from_slice(READ3);
        b.extend_from_slice(b"*-1\r\n$-1\r\n#t\r\n,1.5\r\n=7\r\ntxt:abc\r\n!3\r\nbad\r\n~1\r\n:2\r\n");
        let whole = frames_in_pieces(&b, &[]);
        assert_eq!(whole.len(), 16, "{whole:?}");
        for cut in 0..=b.len() {
            assert_eq!(frames_in_pieces(&b, &[cut]), whole, "cut at {cut}");
        }
        let every: Vec<usize> = (1..b.len()).collect();
        assert_eq!(frames_in_pieces(&b, &every), whole, "byte by byte");
        // What each frame is, in order.
        let mut rest = &b[..];
        let mut next = || {
            let (f, used) = parse(rest).unwrap().unwrap();
            rest = &rest[used..];
            f
        };
        assert_eq!(next(), Frame::Bulk(b"abc"));
        assert_eq!(invalidated_keys(next()), Some(2));
        assert_eq!(next(), Frame::Null);
        assert_eq!(next(), Frame::Integer(1));
        assert_eq!(next(), Frame::Simple(b"OK"));
        assert_eq!(next(), Frame::Error(b"ERR no"));
        assert_eq!(invalidated_keys(next()), Some(0));
        assert_eq!(first_entry_id(next()), Some(Read::Entry(b"12-1")));
        assert_eq!(first_entry_id(next()), Some(Read::Entry(b"12-1")));
        assert_eq!(first_entry_id(next()), Some(Read::Empty));
        assert_eq!(next(), Frame::Null);
        assert_eq!(next(), Frame::Simple(b"t"));
        assert_eq!(next(), Frame::Simple(b"1.5"));
        assert_eq!(next(), Frame::Bulk(b"txt:abc"));
        assert_eq!(next(), Frame::Error(b"bad"));
        assert!(matches!(next(), Frame::Aggregate { len: 1, push: false, .. }));
    }

    #[test]
    fn shapes_are_told_apart() {
        let one = |b: &'static [u8]| parse(b).unwrap().unwrap().0;
        // A reply is not a push, a push is not a reply.
        assert_eq!(invalidated_keys(one(b"*2\r\n$10\r\ninvalidate\r\n*0\r\n")), None);
        assert_eq!(invalidated_keys(one(b">2\r\n$7\r\nmessage\r\n*0\r\n")), None);
        assert_eq!(invalidated_keys(one(b">3\r\n$10\r\ninvalidate\r\n*0\r\n:1\r\n")), None);
        assert_eq!(invalidated_keys(one(INVALIDATE)), Some(2));
        assert!(is_pmessage(one(PMESSAGE)));
        assert!(!is_pmessage(one(b"*3\r\n$10\r\npsubscribe\r\n$1\r\np\r\n:1\r\n")));
        assert!(!is_pmessage(one(b"*4\r\n$7\r\nmessage\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n")));
        // XREADGROUP: an empty entry list, two streams, a non-bulk id.
        assert_eq!(first_entry_id(one(b"*1\r\n*2\r\n$1\r\ns\r\n*0\r\n")), None);
        assert_eq!(first_entry_id(one(b"*2\r\n$1\r\ns\r\n*0\r\n")), None);
        assert_eq!(first_entry_id(one(b"*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n:1\r\n*0\r\n")), None);
        assert_eq!(first_entry_id(one(b"_\r\n")), Some(Read::Empty));
        assert_eq!(first_entry_id(one(b":1\r\n")), None);
        assert_eq!(first_entry_id(one(b"-NOGROUP x\r\n")), None);
    }

    #[test]
    fn every_prefix_is_incomplete() {
        for whole in [READ2, READ3, INVALIDATE, PMESSAGE] {
            for n in 0..whole.len() {
                assert_eq!(parse(&whole[..n]), Ok(None), "prefix {n} of {:?}", String::from_utf8_lossy(whole));
            }
            assert_eq!(parse(whole).unwrap().unwrap().1, whole.len());
        }
    }

    #[test]
    fn malformed_frames_are_errors() {
        for bad in [
            &b"\r\n"[..],
            b"x\r\n",
            b"+OK\n",
            b":x\r\n",
            b":99999999999999999999\r\n",
            b"$x\r\n",
            b"$1\r\nab\r\n",
            b"*x\r\n",
            b"*-2\r\n",
            b"_x\r\n",
            b"*1\r\n%x\r\n",
            b">1\r\n$1\r\nab\r\n",
        ] {
            assert!(parse(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
        assert!(parse(format!("*{}\r\n", ELEMENTS_MAX + 1).as_bytes()).is_err());
        assert!(parse(format!("%{}\r\n", ELEMENTS_MAX / 2 + 1).as_bytes()).is_err());
        let nested = |depth: usize| {
            let mut b = b"*1\r\n".repeat(depth);
            b.extend_from_slice(b":1\r\n");
            b
        };
        assert!(parse(&nested(DEPTH_MAX - 1)).unwrap().is_some());
        assert!(parse(&nested(DEPTH_MAX)).is_err());
        assert!(parse(&[b'+'; LINE_BYTES_MAX + 1]).is_err());
        assert_eq!(parse(&[b'+'; LINE_BYTES_MAX]), Ok(None));
    }
}
