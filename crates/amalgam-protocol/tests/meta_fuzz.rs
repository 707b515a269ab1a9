//! Stable-Rust fuzzing of the meta commands (mn mg ms md ma me): proptest
//! streams of valid-looking and broken meta lines, fed whole and split
//! into random reads. The parser must not panic, must make progress, must
//! react the same however the stream is split, and every accepted meta
//! line must rebuild into a `MetaRequest`. (The text protocol's own
//! invariants, in `invariants/mod.rs`, know only the text replies.)

use amalgam_protocol::meta::MetaRequest;
use amalgam_protocol::text::{parse, Limits, Parse, Request};
use proptest::prelude::*;

/// Parse rounds per stream, far more than any generated stream needs.
const ROUNDS_MAX: usize = 10_000;

/// What a server would do with the stream, fed in pieces ending at `cuts`.
fn drive(input: &[u8], cuts: &[usize], limits: Limits) -> Vec<String> {
    let mut events = Vec::new();
    let mut ends: Vec<usize> = cuts.iter().copied().filter(|&c| c < input.len()).collect();
    ends.push(input.len());
    let (mut at, mut swallow) = (0usize, 0usize);
    for end in ends {
        for _ in 0..ROUNDS_MAX {
            if swallow > 0 {
                let n = swallow.min(end.saturating_sub(at));
                at += n;
                swallow -= n;
            }
            if at >= end || swallow > 0 {
                break;
            }
            match parse(&input[at..end], limits) {
                Parse::Done(req, n) => {
                    assert!(n > 0 && at + n <= end);
                    if let Request::Meta { cmd, line, .. } = req {
                        assert!(MetaRequest::from_line(cmd, line).is_some(), "{:?}", String::from_utf8_lossy(line));
                    }
                    events.push(format!("{req:?}"));
                    at += n;
                }
                Parse::Fail(f) => {
                    assert!(f.consumed > 0 && at + f.consumed <= end);
                    events.push(format!("{:?} {}", f.reply, f.swallow));
                    at += f.consumed;
                    swallow = f.swallow;
                    if f.close {
                        return events;
                    }
                }
                Parse::Incomplete => break,
            }
        }
    }
    events
}

/// One flag token: known flags with good and bad arguments, unknown ones.
fn flag() -> impl Strategy<Value = String> {
    let letter = prop::sample::select(b"bcfhklOqstuvNRTEFCMJDIPLxWZ~".to_vec());
    let arg = prop::sample::select(vec![
        "",
        "0",
        "1",
        "-1",
        "30",
        "4294967296",
        "18446744073709551616",
        "x",
        "E",
        "A",
        "P",
        "R",
        "S",
        "I",
        "D",
        "+",
        "-",
        "DD",
        "12345678901234567890123456789012345",
    ]);
    (letter, arg).prop_map(|(l, a)| format!("{}{a}", l as char))
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => "[a-z]{1,3}",
        2 => Just("Zm9v".to_string()),
        1 => Just("Zm9v=".to_string()),
        1 => Just("k".repeat(250)),
        1 => Just("k".repeat(251)),
    ]
}

/// A meta command line and, for ms, a data block of roughly the declared
/// length.
fn command() -> impl Strategy<Value = Vec<u8>> {
    let cmd = prop::sample::select(vec!["mg", "ms", "md", "ma", "mn", "me", "mx", "m"]);
    let len = prop_oneof![4 => (0usize..8).prop_map(|n| n.to_string()), 1 => Just("-1".to_string()), 1 => Just("x".to_string())];
    (cmd, key(), len, prop::collection::vec(flag(), 0..22), -1i8..=1, prop::sample::select(vec!["\r\n", "\n"]))
        .prop_map(|(cmd, key, len, flags, off, eol)| {
            let mut line = format!("{cmd} {key}");
            if cmd == "ms" {
                line.push(' ');
                line.push_str(&len);
            }
            for f in &flags {
                line.push(' ');
                line.push_str(f);
            }
            let mut out = format!("{line}{eol}").into_bytes();
            if cmd == "ms" {
                let n = len.parse::<usize>().unwrap_or(2).saturating_add_signed(off as isize);
                out.extend(std::iter::repeat_n(b'v', n));
                out.extend_from_slice(b"\r\n");
            }
            out
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn meta_streams_parse_the_same_however_split(
        cmds in prop::collection::vec(command(), 1..6),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
    ) {
        let input: Vec<u8> = cmds.concat();
        for limits in [Limits { value_bytes_max: 1 << 20 }, Limits { value_bytes_max: 3 }] {
            let whole = drive(&input, &[], limits);
            let mut cuts: Vec<usize> = cuts.iter().map(|c| c.index(input.len() + 1)).collect();
            cuts.sort_unstable();
            prop_assert_eq!(&whole, &drive(&input, &cuts, limits));
        }
    }
}
