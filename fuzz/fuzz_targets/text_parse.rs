//! libFuzzer target for `amalgam_protocol::text::parse`: the input is a
//! byte stream a client might send. It is driven through the parser as the
//! server does (advance by what a request used, discard swallowed data
//! blocks, stop on close or when more bytes are needed), whole and split
//! into reads, under tiny, small and default limits, checking the
//! invariants shared with the proptest suite (`tests/invariants/mod.rs`).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../crates/amalgam-protocol/tests/invariants/mod.rs"]
#[allow(dead_code)]
mod invariants;

fuzz_target!(|data: &[u8]| {
    invariants::check_stream(data, &invariants::cuts_from(data));
});
