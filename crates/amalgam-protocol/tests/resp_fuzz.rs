//! Stable-Rust fuzzing of the RESP parser: proptest feeds it random bytes
//! and mutated streams of valid multibulk and inline commands, split into
//! random reads, and checks the invariants in `resp_invariants/mod.rs`
//! (the same ones the cargo-fuzz target `fuzz/fuzz_targets/resp_parse.rs`
//! checks with coverage guidance).

mod resp_invariants;

use proptest::prelude::*;
use proptest::sample::Index;
use resp_invariants::{check_stream, cuts_from};

/// An argument: short words, binary bytes, around the small bulk limit.
fn arg() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        6 => "[a-zA-Z0-9:]{0,6}".prop_map(String::into_bytes),
        2 => prop::collection::vec(any::<u8>(), 0..12),
        1 => Just(vec![b'v'; 8]),
        1 => Just(vec![b'v'; 9]),
    ]
}

/// A multibulk command; sometimes a count or length that lies.
fn multibulk() -> impl Strategy<Value = Vec<u8>> {
    (prop::collection::vec(arg(), 1..5), -1i8..=1, any::<bool>()).prop_map(|(args, off, lie_len)| {
        let n = (args.len() as i64 + if lie_len { 0 } else { off as i64 }).max(-1);
        let mut out = format!("*{n}\r\n").into_bytes();
        for (i, a) in args.iter().enumerate() {
            let len = a.len() as i64 + if lie_len && i == 0 { off as i64 } else { 0 };
            out.extend_from_slice(format!("${len}\r\n").as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
        out
    })
}

/// An inline command: words, quoted parts with escapes, odd spacing.
fn inline() -> impl Strategy<Value = Vec<u8>> {
    let word = prop_oneof![
        4 => "[a-z0-9]{1,5}",
        1 => Just("\"a b\"".to_string()),
        1 => Just("\"\\x41\\n\\\"\"".to_string()),
        1 => Just("'it\\'s'".to_string()),
        1 => Just("\"open".to_string()),
        1 => Just("x\"y z\"".to_string()),
        1 => Just("\"a\"b".to_string()),
    ];
    let sep = prop::sample::select(vec![" ", "  ", "\t", " \x0b"]);
    let eol = prop::sample::select(vec!["\r\n", "\n", "\r\n"]);
    (prop::collection::vec((word, sep), 0..4), eol).prop_map(|(words, eol)| {
        let mut s = String::new();
        for (w, sep) in words {
            s.push_str(&w);
            s.push_str(sep);
        }
        s.push_str(eol);
        s.into_bytes()
    })
}

/// Headers around every check the parser makes.
fn odd() -> impl Strategy<Value = Vec<u8>> {
    prop::sample::select(vec![
        "*0\r\n",
        "*-1\r\n",
        "*01\r\n",
        "*-2\r\n",
        "* 1\r\n",
        "*1\r\n$-1\r\n",
        "*1\r\n$01\r\n",
        "*1\r\n:1\r\n",
        "*999999999999\r\n",
        "*1048577\r\n",
        "*1\r\n$2147483648\r\n",
        "*2\r\n$3\r\nGET\r\n",
        "\r\n",
        "\n",
        "*1\rx$1\r\nx\r\n",
        "*1\r\n$4\r\nPINGxx",
    ])
    .prop_map(|s| s.as_bytes().to_vec())
}

fn cuts(len: usize, picks: &[Index]) -> Vec<usize> {
    let mut c: Vec<usize> = picks.iter().map(|i| i.index(len + 1)).collect();
    c.sort_unstable();
    c
}

/// Edits applied to a stream of commands.
#[derive(Clone, Debug)]
enum Mutation {
    Insert(Index, Vec<u8>),
    Delete(Index, usize),
    Set(Index, u8),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let bytes = prop::collection::vec(prop::sample::select(b"*$\r\n-0123456789\"' x".to_vec()), 1..5);
    prop_oneof![
        (any::<Index>(), bytes).prop_map(|(i, b)| Mutation::Insert(i, b)),
        (any::<Index>(), 1usize..6).prop_map(|(i, n)| Mutation::Delete(i, n)),
        (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Mutation::Set(i, b)),
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
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes(input in prop::collection::vec(any::<u8>(), 0..600), picks in prop::collection::vec(any::<Index>(), 0..6)) {
        check_stream(&input, &cuts(input.len(), &picks));
    }

    #[test]
    fn protocol_alphabet(
        input in prop::collection::vec(prop::sample::select(b"*$:+-0123456789\r\n\"' \\xGETS".to_vec()), 0..300),
        picks in prop::collection::vec(any::<Index>(), 0..6),
    ) {
        check_stream(&input, &cuts(input.len(), &picks));
        check_stream(&input, &cuts_from(&input));
    }

    #[test]
    fn valid_and_odd_commands(
        cmds in prop::collection::vec(prop_oneof![4 => multibulk(), 2 => inline(), 1 => odd()], 1..8),
        picks in prop::collection::vec(any::<Index>(), 0..6),
    ) {
        let input = cmds.concat();
        check_stream(&input, &cuts(input.len(), &picks));
    }

    #[test]
    fn mutated_commands(
        cmds in prop::collection::vec(prop_oneof![multibulk(), inline()], 1..8),
        edits in prop::collection::vec(mutation(), 1..5),
        picks in prop::collection::vec(any::<Index>(), 0..6),
    ) {
        let mut input = cmds.concat();
        edits.iter().for_each(|m| apply(&mut input, m));
        check_stream(&input, &cuts(input.len(), &picks));
    }
}

/// Inputs on a limit, or that once broke an invariant.
#[test]
fn edge_cases() {
    let long_inline = vec![b'x'; 70_000];
    let mut long_count = b"*".to_vec();
    long_count.extend(vec![b'1'; 70_000]);
    for input in [
        &b""[..],
        b"*",
        b"*\r\n",
        b"*1\r\n$",
        b"$",
        b"\0\r\n",
        b"\"",
        b"*1\r\n$0\r\n\r\n",
        b"*2\r\n$3\r\nSET\r\n$1\r\nk",
        &long_inline,
        &long_count,
    ] {
        check_stream(input, &cuts_from(input));
        check_stream(input, &[0, 1, input.len() / 2]);
    }
}
