//! libFuzzer target for the TLS record path through the connection state
//! machine (a worker's connection over a fake socket, a fixed test
//! certificate): the invariants in
//! crates/amalgam-server/tests/fuzz_checks/tls_conn.rs, which the fuzz
//! smoke test (crates/amalgam-server/tests/fuzz_smoke.rs) also runs in
//! `cargo test`.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../crates/amalgam-server/tests/fuzz_checks/tls_conn.rs"]
mod checks;

fuzz_target!(|data: &[u8]| {
    checks::check(data);
});
