//! Invariants of [`binary::parse`], checked on arbitrary input.
//!
//! Shared by the stable proptest suite (`tests/binary_fuzz.rs`) and the
//! cargo-fuzz target (`fuzz/fuzz_targets/binary_parse.rs`, which includes
//! this file by path), so both check exactly the same things:
//!
//! * every single result is well-formed (see [`check_one`]): bytes used
//!   are within the buffer and not zero; a request's key is at most 250
//!   bytes and is the key the header points at; the result never depends
//!   on bytes past the ones it used; every cut-short prefix of a request
//!   is `Incomplete`; a failure answers one of memcached's statuses with
//!   its text (or, for a bad magic, nothing) and unlinks only a key it
//!   consumed;
//! * driving a stream the way the server does (advance by what a request
//!   used, swallow what a failure says, stop at a close) ends, and gives
//!   the same events however the stream is split into reads.

use amalgam_protocol::binary::{error_text, parse, Command, Parse, HEADER_BYTES};
use amalgam_protocol::text::Limits;
use amalgam_protocol::KEY_BYTES_MAX;

/// A tiny value limit (most values too large), a small one, the default.
pub const LIMITS: [Limits; 3] =
    [Limits { value_bytes_max: 0 }, Limits { value_bytes_max: 8 }, Limits { value_bytes_max: 1 << 20 }];

/// What the server sees, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    Request(String),
    Failure { reply: Option<(u8, u16, u32)>, swallow: usize, close: bool },
}

fn key_of<'a>(c: &Command<'a>) -> &'a [u8] {
    match *c {
        Command::Get { key, .. }
        | Command::Touch { key, .. }
        | Command::Gat { key, .. }
        | Command::Store { key, .. }
        | Command::Delete { key, .. }
        | Command::Arith { key, .. } => key,
        Command::Stat { group } => group,
        _ => b"",
    }
}

/// Parses `buf` and checks the result on its own.
pub fn check_one(buf: &[u8], limits: Limits) {
    let r = parse(buf, limits);
    match r {
        Parse::Done(req, n) => {
            assert!(n >= HEADER_BYTES && n <= buf.len(), "used {n} of {}", buf.len());
            let key = key_of(&req.command);
            assert!(key.len() <= KEY_BYTES_MAX);
            let extras_len = buf[4] as usize;
            assert_eq!(key, &buf[HEADER_BYTES + extras_len..HEADER_BYTES + extras_len + key.len()]);
            assert_eq!(req.opcode, buf[1]);
            if let Command::Store { value, .. } = req.command {
                assert!(value.len() <= limits.value_bytes_max);
                assert_eq!(value, &buf[n - value.len()..n]);
            }
            assert_eq!(parse(&buf[..n], limits), r, "bytes past the request changed it");
            for cut in [0, n / 2, n - 1] {
                assert_eq!(parse(&buf[..cut], limits), Parse::Incomplete, "cut {cut} of {n}");
            }
        }
        Parse::Incomplete => {}
        Parse::Fail(f) => {
            assert!(f.consumed <= buf.len());
            match f.reply {
                None => assert!(f.close && buf[0] != 0x80, "only a bad magic closes silently"),
                Some(e) => {
                    assert!(!error_text(e.status).is_empty(), "status {:#x}", e.status);
                    assert_eq!(e.opcode, buf[1]);
                    assert!(f.consumed >= HEADER_BYTES);
                    // Decided from the head alone: the same with nothing after it.
                    assert_eq!(parse(&buf[..f.consumed], limits), r);
                }
            }
            if let Some(u) = f.unlink {
                assert!(u.start < u.end && u.end <= f.consumed && u.end - u.start <= KEY_BYTES_MAX);
            }
        }
    }
}

/// Drives `input` through the parser as the server does, the bytes
/// arriving in reads that end at `cuts`. Returns the events.
pub fn drive(input: &[u8], limits: Limits, cuts: &[usize]) -> Vec<Event> {
    let mut events = Vec::new();
    let mut ends = cuts.iter().copied().filter(|&c| c < input.len()).chain([input.len()]);
    let mut avail = ends.next().unwrap_or(input.len());
    let mut pos = 0usize;
    let mut swallow = 0usize;
    let mut steps = 0usize;
    loop {
        steps += 1;
        assert!(steps <= 2 * (input.len() + cuts.len()) + 4, "no progress");
        if swallow > 0 {
            let n = swallow.min(avail - pos);
            pos += n;
            swallow -= n;
        }
        if pos == avail || swallow > 0 {
            match ends.next() {
                Some(e) => {
                    avail = avail.max(e);
                    continue;
                }
                None => return events,
            }
        }
        match parse(&input[pos..avail], limits) {
            Parse::Done(req, n) => {
                events.push(Event::Request(format!("{req:?}")));
                pos += n;
            }
            Parse::Fail(f) => {
                events.push(Event::Failure {
                    reply: f.reply.map(|e| (e.opcode, e.status, e.opaque)),
                    swallow: f.swallow,
                    close: f.close,
                });
                if f.close {
                    return events;
                }
                pos += f.consumed;
                swallow = f.swallow;
            }
            Parse::Incomplete => match ends.next() {
                Some(e) => avail = avail.max(e),
                None => return events,
            },
        }
    }
}

/// Everything, for one input and a set of read boundaries.
pub fn check_stream(input: &[u8], cuts: &[usize]) {
    for limits in LIMITS {
        check_one(input, limits);
        let whole = drive(input, limits, &[]);
        let split = drive(input, limits, cuts);
        assert_eq!(whole, split, "events differ when split at {cuts:?}");
    }
}

/// Read boundaries derived from the input itself (for the fuzz target):
/// a few offsets from an xorshift seeded with the input's FNV hash.
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
