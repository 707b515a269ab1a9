//! Stable-Rust fuzzing of the binary protocol's parser: proptest feeds it
//! random bytes and mutated streams of well-formed and malformed packets,
//! split into random reads, and checks the invariants in
//! `binary_invariants/mod.rs` (the same ones the cargo-fuzz target
//! `fuzz/fuzz_targets/binary_parse.rs` checks with coverage guidance).

mod binary_invariants;

use amalgam_protocol::binary::{opcode as op, request};
use binary_invariants::{check_stream, cuts_from};
use proptest::prelude::*;

/// Opcodes the parser knows, a few it does not, SASL and verbosity.
fn opcode() -> impl Strategy<Value = u8> {
    prop_oneof![
        8 => prop::sample::select(vec![
            op::GET, op::GETQ, op::GETK, op::GETKQ, op::SET, op::SETQ, op::ADD, op::REPLACE, op::APPEND,
            op::PREPENDQ, op::DELETE, op::DELETEQ, op::INCREMENT, op::DECREMENTQ, op::QUIT, op::QUITQ,
            op::FLUSH, op::FLUSHQ, op::NOOP, op::VERSION, op::STAT, op::TOUCH, op::GAT, op::GATKQ,
        ]),
        1 => prop::sample::select(vec![op::VERBOSITY, op::SASL_LIST_MECHS, op::SASL_AUTH, op::SASL_STEP, 0x50, 0xff]),
    ]
}

/// The extras length each command takes, or a wrong one.
fn extras_for(opcode: u8, wrong: bool) -> usize {
    let right = match opcode {
        op::SET | op::SETQ | op::ADD | op::REPLACE => 8,
        op::INCREMENT | op::DECREMENTQ => 20,
        op::TOUCH | op::GAT | op::GATKQ => 4,
        _ => 0,
    };
    if wrong {
        (right + 3) % 21
    } else {
        right
    }
}

/// One packet, mostly well-formed: sometimes wrong extras, a key of 0 or
/// 251 bytes, a body length that lies, a bad magic.
fn packet() -> impl Strategy<Value = Vec<u8>> {
    (
        opcode(),
        prop_oneof![6 => "[a-z]{1,6}".prop_map(String::into_bytes), 1 => Just(Vec::new()), 1 => Just(vec![b'k'; 251])],
        prop::collection::vec(any::<u8>(), 0..12),
        any::<u8>(),
        (any::<bool>(), -3i8..=3, any::<bool>(), any::<u32>(), any::<u64>()),
    )
        .prop_map(|(opc, key, value, extras_fill, (wrong, lie, bad_magic, opaque, cas))| {
            let extras = vec![extras_fill; extras_for(opc, wrong && lie == 0)];
            let mut p = request(opc, &key, &extras, &value, opaque, cas);
            if lie != 0 && !wrong {
                let body = u32::from_be_bytes([p[8], p[9], p[10], p[11]]) as i64 + lie as i64;
                p[8..12].copy_from_slice(&(body.max(0) as u32).to_be_bytes());
            }
            if bad_magic && lie == 3 {
                p[0] = 0x81;
            }
            p
        })
}

fn stream() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(packet(), 1..6).prop_map(|ps| ps.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes(input in prop::collection::vec(any::<u8>(), 0..128), cuts in prop::collection::vec(0usize..128, 0..6)) {
        let mut cuts = cuts;
        cuts.sort_unstable();
        check_stream(&input, &cuts);
    }

    #[test]
    fn packet_streams(input in stream(), cuts in prop::collection::vec(0usize..400, 0..8)) {
        let mut cuts = cuts;
        cuts.sort_unstable();
        check_stream(&input, &cuts);
    }

    #[test]
    fn mutated_streams(input in stream(), at in any::<prop::sample::Index>(), byte in any::<u8>(), cuts in prop::collection::vec(0usize..400, 0..8)) {
        let mut input = input;
        let i = at.index(input.len());
        input[i] = byte;
        let mut cuts = cuts;
        cuts.sort_unstable();
        check_stream(&input, &cuts);
    }

    /// The read boundaries the cargo-fuzz target derives from its input.
    #[test]
    fn fuzz_target_cuts(input in stream()) {
        check_stream(&input, &cuts_from(&input));
    }
}
