//! Invariants of [`text::parse`], checked on arbitrary input.
//!
//! Shared by the stable proptest suite (`tests/parse_fuzz.rs`) and the
//! cargo-fuzz target (`fuzz/fuzz_targets/text_parse.rs`, which includes
//! this file by path), so both check exactly the same things:
//!
//! * every single `parse` result is well-formed (see [`check_one`]): bytes
//!   used are within the buffer and non-zero for `Done`/`Fail`, keys are
//!   1..=250 bytes without spaces or newlines, data blocks have their
//!   declared length and end in CRLF, replies are memcached's lines, a
//!   result never depends on bytes past the ones it used, and a request
//!   seen whole is `Incomplete` when cut short;
//! * driving a whole stream the way the server does (advance by `consumed`,
//!   discard `swallow` more bytes, stop on `close`) terminates, and gives
//!   the same events however the stream is split into reads (as long as no
//!   line is long enough for the read split to matter to memcached too).

use amalgam_protocol::compose::push_line;
use amalgam_protocol::meta::{meta_reply, MetaCmd, MetaRequest};
use amalgam_protocol::text::{parse, reply, Failure, Limits, Parse, Request};
use amalgam_protocol::{GET_LINE_BYTES_MAX, KEY_BYTES_MAX, LINE_BYTES_MAX};

/// A tiny limit (every value is too large), a small one, and the default.
pub const LIMITS: [Limits; 3] =
    [Limits { value_bytes_max: 0 }, Limits { value_bytes_max: 8 }, Limits { value_bytes_max: 1 << 20 }];

/// Every reply line the parser may ask for.
const REPLIES: [&str; 23] = [
    reply::ERROR,
    reply::BAD_FORMAT,
    reply::BAD_CHUNK,
    reply::BAD_EXPTIME,
    reply::BAD_DELTA,
    reply::DELETE_USAGE,
    reply::TOO_LARGE,
    reply::OUT_OF_MEMORY,
    reply::NON_NUMERIC,
    reply::LINE_TOO_LONG,
    meta_reply::DUPLICATE_FLAG,
    meta_reply::INVALID_FLAG,
    meta_reply::INVALID_OR_DUPLICATE,
    meta_reply::BAD_TOKEN,
    meta_reply::DECODE_KEY,
    meta_reply::M_LENGTH,
    meta_reply::BAD_INITIAL,
    meta_reply::BAD_DELTA,
    meta_reply::OPAQUE_TOO_LONG,
    meta_reply::MG_FLAGS_TOO_LONG,
    meta_reply::FLAGS_TOO_LONG,
    meta_reply::MS_BAD_MODE,
    meta_reply::MA_BAD_MODE,
];

/// The commands that carry a data block.
const STORE_COMMANDS: [&[u8]; 7] = [b"set", b"add", b"replace", b"append", b"prepend", b"cas", b"ms"];

/// The command word of the line at the front of `buf`.
fn command_word(buf: &[u8]) -> &[u8] {
    let line = &buf[..first_newline(buf).unwrap_or(buf.len())];
    line.split(|&b| b == b' ').find(|w| !w.is_empty()).unwrap_or(b"")
}

/// What the server does for one parse result, so that runs over
/// differently split input can be compared: the request itself, which
/// borrows from the input (both runs read the same bytes). Formatting it
/// into a String instead (`{req:?}`, every byte of a data block as a
/// decimal number) cost the fuzz target most of its time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event<'a> {
    Done(Request<'a>),
    Fail(Failure),
}

fn first_newline(buf: &[u8]) -> Option<usize> {
    buf.iter().position(|&b| b == b'\n')
}

fn within(outer: &[u8], inner: &[u8]) -> bool {
    let (o, i) = (outer.as_ptr() as usize, inner.as_ptr() as usize);
    i >= o && i + inner.len() <= o + outer.len()
}

fn check_key_bytes(key: &[u8]) {
    assert!(!key.is_empty() && key.len() <= KEY_BYTES_MAX, "key length {}", key.len());
    // memcached's tokenizer splits on spaces and ends the line at a NUL.
    assert!(!key.contains(&b' ') && !key.contains(&b'\n') && !key.contains(&0), "key {key:?}");
}

fn check_key(line: &[u8], key: &[u8]) {
    check_key_bytes(key);
    assert!(within(line, key), "key outside its command line");
}

/// A meta request the parser accepted: its line is within the command line
/// and rebuilds into a `MetaRequest` (which the server relies on).
fn check_meta(line: &[u8], cmd: MetaCmd, meta_line: &[u8]) {
    assert!(within(line, meta_line) && meta_line.starts_with(b"m"), "meta line {meta_line:?}");
    let req = MetaRequest::from_line(cmd, meta_line).expect("accepted meta line does not rebuild");
    assert_eq!(req.cmd, cmd);
    if cmd != MetaCmd::Noop && !req.flags.base64 {
        check_key(meta_line, meta_line.split(|&b| b == b' ').filter(|w| !w.is_empty()).nth(1).unwrap());
        check_key_bytes(req.key());
    }
    assert!(req.key().len() <= KEY_BYTES_MAX);
}

/// A reply line as the server writes it: memcached's text, one CRLF at the
/// end and no other CR or LF, printable ASCII.
fn check_reply(line: &str) {
    assert!(REPLIES.contains(&line), "unknown reply {line:?}");
    let mut out = Vec::new();
    push_line(&mut out, line);
    assert!(out.ends_with(b"\r\n"));
    let body = &out[..out.len() - 2];
    assert!(!body.is_empty() && body.iter().all(|&b| (b' '..=b'~').contains(&b)), "reply {line:?}");
}

/// Checks one result of `parse(buf, limits)`; returns it.
pub fn check_one(buf: &[u8], limits: Limits) -> Parse<'_> {
    let result = parse(buf, limits);
    let nl = first_newline(buf);
    let line_end = nl.map(|n| n + 1);
    match result {
        Parse::Done(req, n) => {
            let line_end = line_end.expect("Done without a newline");
            assert!(n > 0 && n <= buf.len(), "Done used {n} of {}", buf.len());
            let line = &buf[..line_end - 1];
            match req {
                Request::Meta { cmd, line: meta_line, data } if cmd == MetaCmd::Set => {
                    check_meta(line, cmd, meta_line);
                    assert!(data.len() <= limits.value_bytes_max);
                    assert_eq!(n, line_end + data.len() + 2);
                    assert_eq!(&buf[n - 2..n], b"\r\n");
                    assert_eq!(data.as_ptr(), buf[line_end..].as_ptr(), "data is not the block after the line");
                }
                Request::Store { key, data, .. } => {
                    check_key(line, key);
                    assert!(data.len() <= limits.value_bytes_max);
                    assert_eq!(n, line_end + data.len() + 2);
                    assert_eq!(&buf[n - 2..n], b"\r\n");
                    assert_eq!(data.as_ptr(), buf[line_end..].as_ptr(), "data is not the block after the line");
                }
                other => {
                    assert_eq!(n, line_end, "{other:?} used more than its line");
                    match other {
                        Request::Get { keys, touch, .. } => {
                            let keys: Vec<&[u8]> = keys.iter().collect();
                            // `gat <exptime>` with no key is memcached's END.
                            assert!(touch.is_some() || !keys.is_empty(), "get without keys");
                            keys.iter().for_each(|k| check_key(line, k));
                        }
                        Request::Delete { key, .. } | Request::Arith { key, .. } | Request::Touch { key, .. } => {
                            check_key(line, key)
                        }
                        Request::Stats { args }
                        | Request::Shutdown { args }
                        | Request::LruCrawler { args }
                        | Request::Slabs { args }
                        | Request::Lru { args }
                        | Request::Watch { args } => args.iter().for_each(|a| assert!(within(line, a))),
                        Request::Meta { cmd, line: meta_line, data } => {
                            check_meta(line, cmd, meta_line);
                            assert!(data.is_empty(), "{cmd:?} with a data block");
                        }
                        _ => {}
                    }
                }
            }
        }
        Parse::Fail(f) => {
            assert!(f.consumed > 0 && f.consumed <= buf.len(), "Fail used {} of {}", f.consumed, buf.len());
            match f.reply {
                Some(r) => check_reply(r),
                None => assert!(f.close, "silent failure that keeps the connection"),
            }
            if f.close {
                assert_eq!(f.swallow, 0, "close and swallow");
                assert!(!f.noreply);
            }
            if f.swallow > 0 {
                if f.reply == Some(reply::TOO_LARGE) {
                    assert!(f.swallow > limits.value_bytes_max + 2, "swallowed a block that fits");
                } else {
                    // memcached swallows the block of an ms it refuses.
                    assert_eq!(command_word(buf), b"ms", "{f:?} swallows");
                    assert!(f.swallow >= 2);
                }
            }
            if f.noreply {
                // The line as memcached tokenizes it: without its CR, and a
                // C string (it ends at a NUL).
                let mut line = &buf[..line_end.expect("noreply without a line") - 1];
                line = line.strip_suffix(b"\r").unwrap_or(line);
                line = &line[..line.iter().position(|&b| b == 0).unwrap_or(line.len())];
                assert!(line.split(|&b| b == b' ').any(|w| w == b"noreply"), "noreply not on the line");
            }
            if let Some(unlink) = f.unlink {
                // The key of a refused `set` or `ms`, to drop its old value.
                assert_eq!(f.reply, Some(reply::TOO_LARGE), "unlink on {f:?}");
                let le = line_end.expect("unlink without a line");
                let (start, end) = (unlink.start, unlink.end);
                assert!(start < end && end < le, "unlink {start}..{end} outside the line");
                check_key(&buf[..le - 1], &buf[start..end]);
                // A base64 key (ms with b) decodes, as the parser checked.
                let mut scratch = [0; KEY_BYTES_MAX];
                assert!(unlink.key(buf, &mut scratch).is_some(), "unlink key {unlink:?} does not decode");
            }
            match line_end {
                None => {
                    // memcached closes without a reply.
                    assert_eq!(f.reply, None);
                    assert!(f.close && f.consumed == buf.len() && buf.len() > LINE_BYTES_MAX);
                }
                Some(le) if f.reply == Some(reply::BAD_CHUNK) => {
                    assert!(f.consumed >= le + 2, "bad chunk used only its line");
                    assert_ne!(&buf[f.consumed - 2..f.consumed], b"\r\n", "bad chunk that ends in CRLF");
                }
                Some(le) => assert_eq!(f.consumed, le, "{f:?} used more than its line"),
            }
        }
        Parse::Incomplete => match line_end {
            None => {
                assert!(buf.len() <= GET_LINE_BYTES_MAX, "{} bytes without a newline still incomplete", buf.len());
                if buf.len() > LINE_BYTES_MAX {
                    let t = &buf[buf.iter().position(|&b| b != b' ').unwrap_or(buf.len())..];
                    assert!(t.starts_with(b"get ") || t.starts_with(b"gets "), "long non-get line kept");
                }
            }
            Some(le) => {
                // Only a storage command waits past its line, for at most
                // a block of the largest size and its CRLF.
                let cmd = command_word(buf);
                assert!(STORE_COMMANDS.contains(&cmd), "incomplete after a whole {cmd:?} line");
                assert!(buf.len() < le + limits.value_bytes_max + 2);
            }
        },
    }
    // No look-ahead: the bytes used alone give the same answer.
    let used = match result {
        Parse::Done(_, n) => n,
        Parse::Fail(f) => f.consumed,
        Parse::Incomplete => buf.len(),
    };
    if used < buf.len() {
        assert_eq!(parse(&buf[..used], limits), result, "result depends on bytes after the ones used");
    }
    result
}

/// A request or failure seen whole is `Incomplete` when cut at `cut` (if
/// its line is short enough that memcached would also wait for more).
pub fn check_prefix(buf: &[u8], limits: Limits, result: Parse<'_>, cut: usize) {
    let used = match result {
        Parse::Done(_, n) => n,
        // (A failure with no newline in the buffer is a line too long.)
        Parse::Fail(f) if first_newline(buf).is_some() => f.consumed,
        _ => return,
    };
    let line_len = first_newline(buf).map_or(usize::MAX, |n| n + 1);
    if line_len > LINE_BYTES_MAX || used == 0 {
        return;
    }
    let cut = cut % used;
    assert_eq!(parse(&buf[..cut], limits), Parse::Incomplete, "cut at {cut} of {used}");
}

/// Drives `input` through the parser as the server does, the bytes arriving
/// in reads that end at `cuts` (ascending offsets; the rest arrives at the
/// end). Checks every result; returns the events.
pub fn drive<'a>(input: &'a [u8], limits: Limits, cuts: &[usize]) -> Vec<Event<'a>> {
    let mut events = Vec::new();
    let mut ends = cuts.iter().copied().filter(|&c| c < input.len()).chain([input.len()]);
    let mut avail = ends.next().unwrap_or(input.len());
    let (mut pos, mut swallow) = (0usize, 0usize);
    let mut steps = 0usize;
    loop {
        steps += 1;
        assert!(steps <= 2 * (input.len() + cuts.len()) + 4, "no progress");
        if swallow > 0 {
            let n = swallow.min(avail - pos);
            pos += n;
            swallow -= n;
        }
        if swallow > 0 || pos == avail {
            match ends.next() {
                Some(e) if e > avail => {
                    avail = e;
                    continue;
                }
                Some(_) => continue,
                None => break,
            }
        }
        let buf = &input[pos..avail];
        let result = check_one(buf, limits);
        match result {
            Parse::Done(req, n) => {
                events.push(Event::Done(req));
                pos += n;
                if req == Request::Quit {
                    break;
                }
            }
            Parse::Fail(f) => {
                events.push(Event::Fail(f));
                pos += f.consumed;
                swallow = f.swallow;
                if f.close {
                    break;
                }
            }
            Parse::Incomplete => match ends.next() {
                Some(e) => avail = e.max(avail),
                None => break,
            },
        }
    }
    events
}

/// True if no line of `input` is long enough that memcached's reaction
/// depends on how it was split into reads.
pub fn split_insensitive(input: &[u8]) -> bool {
    input.split(|&b| b == b'\n').all(|l| l.len() < LINE_BYTES_MAX)
}

/// Everything, for one input and a set of read boundaries.
pub fn check_stream(input: &[u8], cuts: &[usize]) {
    for limits in LIMITS {
        let whole = drive(input, limits, &[]);
        let split = drive(input, limits, cuts);
        if split_insensitive(input) {
            assert_eq!(whole, split, "events differ when split at {cuts:?}");
        }
        let first = parse(input, limits);
        for &c in cuts {
            check_prefix(input, limits, first, c);
        }
    }
}

/// Read boundaries derived from the input itself (for the fuzz target,
/// whose input is just bytes): a few offsets from an xorshift seeded with
/// the input's FNV hash.
pub fn cuts_from(input: &[u8]) -> Vec<usize> {
    let mut x = input.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3)) | 1;
    let mut cuts: Vec<usize> = (0..8)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % (input.len() as u64 + 1)) as usize
        })
        .collect();
    cuts.sort_unstable();
    cuts
}
