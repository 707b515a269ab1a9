//! Stable-Rust fuzzing of the text parser: proptest feeds it random bytes
//! and mutated streams of valid commands, split into random reads, and
//! checks the invariants in `invariants/mod.rs` (the same ones the
//! cargo-fuzz target in `fuzz/` checks with coverage guidance).

mod invariants;

use invariants::{check_stream, cuts_from};
use proptest::prelude::*;
use proptest::sample::Index;

/// Keys: short, at the length limit, just over it.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => "[a-z]{1,3}",
        1 => Just("k".repeat(250)),
        1 => Just("k".repeat(251)),
    ]
}

/// Numbers around every bound the parser checks, and a few non-numbers.
fn num() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => (0u32..20).prop_map(|n| n.to_string()),
        4 => prop::sample::select(vec![
            "-1", "-0", "4294967295", "4294967296", "2147483647", "2147483648", "-2147483648",
            "-2147483649", "18446744073709551615", "18446744073709551616", "000000000000000000001",
            "1048576", "1048577", "x", "1x", "+1", "-", "",
        ])
        .prop_map(String::from),
    ]
}

fn noreply() -> impl Strategy<Value = &'static str> {
    prop_oneof![3 => Just(""), 2 => Just(" noreply"), 1 => Just(" norepl")]
}

/// A line ending: mostly CRLF, sometimes bare LF.
fn eol() -> impl Strategy<Value = &'static str> {
    prop_oneof![4 => Just("\r\n"), 1 => Just("\n")]
}

/// A storage command and its data block: the block's real length is the
/// declared one, or one off; it ends in CRLF or something else.
fn store() -> impl Strategy<Value = Vec<u8>> {
    let op = prop::sample::select(vec!["set", "add", "replace", "append", "prepend", "cas"]);
    let len = prop_oneof![4 => (0usize..12).prop_map(Some), 1 => Just(None)];
    (op, key(), num(), num(), len, num(), num(), noreply(), -1i8..=1, prop::sample::select(vec!["\r\n", "\n", "xy"]))
        .prop_map(|(op, key, flags, exp, len, bad_len, cas, noreply, off, end)| {
            let declared = len.map_or(bad_len, |l| l.to_string());
            let cas = if op == "cas" { format!(" {cas}") } else { String::new() };
            let mut out = format!("{op} {key} {flags} {exp} {declared}{cas}{noreply}\r\n").into_bytes();
            let real = len.unwrap_or(3).saturating_add_signed(off as isize);
            out.extend(std::iter::repeat_n(b'v', real));
            out.extend_from_slice(end.as_bytes());
            out
        })
}

/// Any other command line.
fn line() -> impl Strategy<Value = Vec<u8>> {
    let get = (prop::sample::select(vec!["get", "gets"]), prop::collection::vec(key(), 0..4))
        .prop_map(|(c, ks)| format!("{c} {}", ks.join(" ")));
    let gat = (prop::sample::select(vec!["gat", "gats"]), num(), prop::collection::vec(key(), 0..3))
        .prop_map(|(c, e, ks)| format!("{c} {e} {}", ks.join(" ")));
    let arith = (prop::sample::select(vec!["incr", "decr"]), key(), num(), noreply())
        .prop_map(|(c, k, d, n)| format!("{c} {k} {d}{n}"));
    let delete = (key(), prop::sample::select(vec!["", " 0", " 5"]), noreply())
        .prop_map(|(k, h, n)| format!("delete {k}{h}{n}"));
    let touch = (key(), num(), noreply()).prop_map(|(k, e, n)| format!("touch {k} {e}{n}"));
    let flush = (prop::sample::select(vec!["", " 0", " 10", " -1", " x"]), noreply())
        .prop_map(|(d, n)| format!("flush_all{d}{n}"));
    let verbosity = (num(), noreply()).prop_map(|(v, n)| format!("verbosity {v}{n}"));
    let other = prop::sample::select(vec![
        "version",
        "quit",
        "stats",
        "stats slabs",
        "bogus",
        "g",
        "",
        "GET / HTTP/1.1",
        "set",
        "get",
    ])
    .prop_map(String::from);
    let padding = prop::sample::select(vec![0usize, 0, 0, 1, 3, 120, LINE_PAD]);
    (prop_oneof![get, gat, arith, delete, touch, flush, verbosity, other], padding, any::<bool>(), eol()).prop_map(
        |(l, pad, lead, eol)| {
            let spaces = " ".repeat(pad);
            if lead { format!("{spaces}{l}{eol}") } else { format!("{l}{spaces}{eol}") }.into_bytes()
        },
    )
}

/// Spaces enough to push a line past memcached's 2048-byte limit.
const LINE_PAD: usize = 2100;

/// Edits applied to a stream of valid commands.
#[derive(Clone, Debug)]
enum Mutation {
    Insert(Index, Vec<u8>),
    Delete(Index, usize),
    Set(Index, u8),
    Duplicate(Index, usize, Index),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let bytes = prop::collection::vec(prop::sample::select(b" \r\n0123456789-getsxk".to_vec()), 1..6);
    prop_oneof![
        (any::<Index>(), prop_oneof![bytes, Just(b"\r\n".to_vec()), Just(b"noreply ".to_vec())])
            .prop_map(|(i, b)| Mutation::Insert(i, b)),
        (any::<Index>(), 1usize..8).prop_map(|(i, n)| Mutation::Delete(i, n)),
        (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Mutation::Set(i, b)),
        (any::<Index>(), 1usize..40, any::<Index>()).prop_map(|(i, n, j)| Mutation::Duplicate(i, n, j)),
    ]
}

fn apply(buf: &mut Vec<u8>, m: &Mutation) {
    if buf.is_empty() {
        return;
    }
    match m {
        Mutation::Insert(i, b) => {
            let at = i.index(buf.len() + 1);
            buf.splice(at..at, b.iter().copied());
        }
        Mutation::Delete(i, n) => {
            let at = i.index(buf.len());
            buf.drain(at..(at + n).min(buf.len()));
        }
        Mutation::Set(i, b) => {
            let at = i.index(buf.len());
            buf[at] = *b;
        }
        Mutation::Duplicate(i, n, j) => {
            let from = i.index(buf.len());
            let part = buf[from..(from + n).min(buf.len())].to_vec();
            let at = j.index(buf.len() + 1);
            buf.splice(at..at, part);
        }
    }
}

/// Read boundaries: up to 6 random offsets into a stream of `len` bytes.
fn cuts(len: usize, picks: &[Index]) -> Vec<usize> {
    let mut c: Vec<usize> = picks.iter().map(|i| i.index(len + 1)).collect();
    c.sort_unstable();
    c
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes(input in prop::collection::vec(any::<u8>(), 0..600), picks in prop::collection::vec(any::<Index>(), 0..6)) {
        check_stream(&input, &cuts(input.len(), &picks));
    }

    #[test]
    fn protocol_alphabet(
        input in prop::collection::vec(prop::sample::select(b"getsadcrplinoy0123456789 -\r\n".to_vec()), 0..300),
        picks in prop::collection::vec(any::<Index>(), 0..6),
    ) {
        check_stream(&input, &cuts(input.len(), &picks));
        check_stream(&input, &cuts_from(&input));
    }

    #[test]
    fn valid_commands(
        cmds in prop::collection::vec(prop_oneof![store(), line()], 1..8),
        picks in prop::collection::vec(any::<Index>(), 0..6),
    ) {
        let input = cmds.concat();
        check_stream(&input, &cuts(input.len(), &picks));
    }

    #[test]
    fn mutated_commands(
        cmds in prop::collection::vec(prop_oneof![store(), line()], 1..8),
        edits in prop::collection::vec(mutation(), 1..5),
        picks in prop::collection::vec(any::<Index>(), 0..6),
    ) {
        let mut input = cmds.concat();
        edits.iter().for_each(|m| apply(&mut input, m));
        check_stream(&input, &cuts(input.len(), &picks));
    }
}

/// Inputs that once broke an invariant, or sit right on a limit.
#[test]
fn edge_cases() {
    let long_get = [b"get ".as_slice(), &[b'k'; 3000], b"\r\n"].concat();
    let padded_get = [&[b' '; 101][..], b"get k", &[b' '; 2000], b"\r\n"].concat();
    let long_junk = vec![b'x'; 3000];
    for input in [
        &b""[..],
        b"\n",
        b"\r\n\r\n",
        b"set k 0 0 0\r\n\r\n",
        b"set k 0 0 2147483647\r\n",
        b"set k 0 0 1 noreply\r\nab",
        b"gat 10\r\n",
        b"gats -2147483648 a b\r\n",
        b"delete k 0 noreply\r\n",
        b"quit\r\nget k\r\n",
        b"GET / HTTP/1.1\r\nget k\r\n",
        &long_get,
        &padded_get,
        &long_junk,
    ] {
        for c in [vec![], cuts_from(input), (0..input.len()).collect()] {
            check_stream(input, &c);
        }
    }
}
