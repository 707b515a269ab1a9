//! libFuzzer target for `amalgam_protocol::binary::parse`: the input is a
//! byte stream a binary-protocol client might send. It is driven through
//! the parser as the server drives a binary connection (advance by what a
//! request used, swallow what a failure says, stop at a close), whole and
//! split into reads, under tiny, small and default value limits, checking
//! the invariants shared with the proptest suite
//! (`crates/amalgam-protocol/tests/binary_invariants/mod.rs`).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../crates/amalgam-protocol/tests/binary_invariants/mod.rs"]
#[allow(dead_code)]
mod binary_invariants;

fuzz_target!(|data: &[u8]| {
    binary_invariants::check_stream(data, &binary_invariants::cuts_from(data));
});
