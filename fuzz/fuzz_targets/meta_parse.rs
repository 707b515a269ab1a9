//! libFuzzer target for the meta commands (`amalgam_protocol::meta`). The
//! server reaches `meta::parse` only through `text::parse`, so this target
//! drives `text::parse` like `text_parse` does, with the same invariants
//! (`tests/invariants/mod.rs`: replies, swallowed `ms` blocks, accepted
//! lines rebuilding into a `MetaRequest`, read-split independence), but on
//! input that starts with a meta command: an `m` is put in front of input
//! that lacks one. Its own corpus and dictionary keep the search on meta.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../crates/amalgam-protocol/tests/invariants/mod.rs"]
#[allow(dead_code)]
mod invariants;

fuzz_target!(|data: &[u8]| {
    if data.first() == Some(&b'm') {
        invariants::check_stream(data, &invariants::cuts_from(data));
    } else {
        let input = [b"m".as_slice(), data].concat();
        invariants::check_stream(&input, &invariants::cuts_from(&input));
    }
});
