//! Invariants of [`resp::Parser`], checked on arbitrary input.
//!
//! Shared by the stable proptest suite (`tests/resp_fuzz.rs`) and the
//! cargo-fuzz target (`fuzz/fuzz_targets/resp_parse.rs`, which includes
//! this file by path), so both check exactly the same things:
//!
//! * every single result is well-formed (see [`check_one`]): bytes used
//!   are within the buffer and not zero; a command has at least one
//!   argument; a multibulk command's arguments respect the bulk limit,
//!   re-encode to exactly the bytes used and parse back the same; the
//!   result never depends on bytes past the ones it used; every cut-short
//!   prefix of a request is `Incomplete`; errors carry Redis's texts;
//! * driving a stream the way the server does (one parser for the
//!   connection, advance by what a request used, stop at an error) ends,
//!   and gives the same events however the stream is split into reads,
//!   while nothing in it reaches the 64 KiB line limit (whose reaction
//!   depends on the split in Redis too).

use amalgam_protocol::resp::{Limits, Parse, Parser, ProtocolError, INLINE_BYTES_MAX};
use std::borrow::Cow;

/// A tiny bulk limit (most values too long), a small one, the default.
pub const LIMITS: [Limits; 3] = [
    Limits { bulk_bytes_max: 0, request_bytes_max: 8 << 20 },
    Limits { bulk_bytes_max: 8, request_bytes_max: 8 << 20 },
    Limits { bulk_bytes_max: 1 << 20, request_bytes_max: 8 << 20 },
];

/// What the server sees, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    Command(Vec<Vec<u8>>),
    Empty,
    Error(ProtocolError),
}

fn multibulk(args: &[Vec<u8>]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Parses `buf` with a fresh parser and checks the result on its own.
pub fn check_one(buf: &[u8], limits: Limits) -> (Parse, Vec<Vec<u8>>) {
    let mut args: Vec<Cow<'_, [u8]>> = Vec::new();
    let r = Parser::new().parse(buf, limits, &mut args);
    let owned: Vec<Vec<u8>> = args.iter().map(|a| a.to_vec()).collect();
    match r {
        Parse::Command { consumed } | Parse::Empty { consumed } => {
            assert!(consumed > 0 && consumed <= buf.len(), "used {consumed} of {}", buf.len());
            let is_command = matches!(r, Parse::Command { .. });
            assert_eq!(is_command, !owned.is_empty(), "{r:?} with {} args", owned.len());
            // Nothing past what it used matters.
            let mut again = Vec::new();
            assert_eq!(Parser::new().parse(&buf[..consumed], limits, &mut again), r);
            assert_eq!(again.iter().map(|a| a.to_vec()).collect::<Vec<_>>(), owned);
            // Every prefix is incomplete (with a fresh parser).
            for cut in [0, consumed / 2, consumed - 1] {
                let mut none = Vec::new();
                assert_eq!(Parser::new().parse(&buf[..cut], limits, &mut none), Parse::Incomplete, "cut {cut}");
                assert!(none.is_empty());
            }
            if buf[0] == b'*' && is_command {
                assert!(owned.iter().all(|a| a.len() <= limits.bulk_bytes_max));
                // Canonical input re-encodes byte for byte (Redis skips
                // the CRLFs unread, so only when they are CRLFs).
                let again = multibulk(&owned);
                if again.len() == consumed && again == buf[..consumed] {
                    let mut back = Vec::new();
                    assert_eq!(Parser::new().parse(&again, limits, &mut back), r);
                }
                let mut back = Vec::new();
                let rr = Parser::new().parse(&again, limits, &mut back);
                assert_eq!(rr, Parse::Command { consumed: again.len() });
                assert_eq!(back.iter().map(|a| a.to_vec()).collect::<Vec<_>>(), owned);
            }
        }
        Parse::Incomplete => assert!(owned.is_empty()),
        Parse::Error(e) => {
            assert!(owned.is_empty());
            let m = e.message().expect("only an oversized request closes silently");
            assert!(m.starts_with(b"ERR Protocol error: "), "{}", String::from_utf8_lossy(&m));
        }
    }
    (r, owned)
}

/// Drives `input` through one parser as the server does, the bytes
/// arriving in reads that end at `cuts`. Returns the events and whether
/// the stream ended inside a request.
pub fn drive(input: &[u8], limits: Limits, cuts: &[usize]) -> (Vec<Event>, bool) {
    let mut events = Vec::new();
    let mut ends = cuts.iter().copied().filter(|&c| c < input.len()).chain([input.len()]);
    let mut avail = ends.next().unwrap_or(input.len());
    let mut pos = 0usize;
    let mut parser = Parser::new();
    let mut steps = 0usize;
    loop {
        steps += 1;
        assert!(steps <= 2 * (input.len() + cuts.len()) + 4, "no progress");
        if pos == avail {
            match ends.next() {
                Some(e) => {
                    avail = avail.max(e);
                    continue;
                }
                None => return (events, false),
            }
        }
        let mut args = Vec::new();
        match parser.parse(&input[pos..avail], limits, &mut args) {
            Parse::Command { consumed } => {
                events.push(Event::Command(args.iter().map(|a| a.to_vec()).collect()));
                pos += consumed;
            }
            Parse::Empty { consumed } => {
                events.push(Event::Empty);
                pos += consumed;
            }
            Parse::Error(e) => {
                events.push(Event::Error(e));
                return (events, false);
            }
            Parse::Incomplete => match ends.next() {
                Some(e) => avail = avail.max(e),
                None => return (events, true),
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
        if input.len() < INLINE_BYTES_MAX {
            assert_eq!(whole, split, "events differ when split at {cuts:?}");
        }
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
