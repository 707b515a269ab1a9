//! libFuzzer target for recovery (`amalgam_persist::recover`): the input is
//! a program of log operations, an optional snapshot and damage to both (or
//! raw bytes as a log segment), written to a scratch directory; recovery
//! must start, keep every record before the first damaged byte, and be
//! idempotent. The invariants and the input layout are shared with the
//! proptest suite (`crates/amalgam-persist/tests/recover_invariants/mod.rs`).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../crates/amalgam-persist/tests/recover_invariants/mod.rs"]
#[allow(dead_code)]
mod recover_invariants;

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("amalgam-fuzz-recover-{}", std::process::id()));
    recover_invariants::check(data, &dir);
});
