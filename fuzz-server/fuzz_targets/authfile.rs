//! libFuzzer target for memcached's ASCII authentication (`-Y`): the invariants in
//! crates/amalgam-server/tests/fuzz_checks/authfile.rs, which the fuzz smoke
//! test (crates/amalgam-server/tests/fuzz_smoke.rs) also runs in `cargo
//! test`.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../crates/amalgam-server/tests/fuzz_checks/authfile.rs"]
mod checks;

fuzz_target!(|data: &[u8]| {
    checks::check(data);
});
