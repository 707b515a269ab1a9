//! libFuzzer target for `amalgam_protocol::resp::Parser`: the input is a
//! byte stream a Redis client might send. It is driven through one parser
//! as the server drives a connection's (advance by what a request used,
//! stop at a protocol error or when more bytes are needed), whole and split
//! into reads, under tiny, small and default bulk limits, checking the
//! invariants shared with the proptest suite
//! (`crates/amalgam-protocol/tests/resp_invariants/mod.rs`).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../crates/amalgam-protocol/tests/resp_invariants/mod.rs"]
#[allow(dead_code)]
mod resp_invariants;

fuzz_target!(|data: &[u8]| {
    resp_invariants::check_stream(data, &resp_invariants::cuts_from(data));
});
