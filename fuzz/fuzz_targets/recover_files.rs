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

/// Where the scratch files go: tmpfs if the machine has one (recovery
/// reads and cuts files like any others there; on ext4 creating and
/// removing them per input cost more than the recovery itself), else the
/// temporary directory.
const SCRATCH_BASE: &str = "/dev/shm";

fuzz_target!(|data: &[u8]| {
    // Every input recovers into a fresh store whose first item chunk the
    // engine advises for hugepages, so each input zeroed a whole 2 MiB
    // page for a few items: 18 % of this target's time (perf). Recovery's
    // logic does not depend on the page size.
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| amalgam_engine::disable_hugepages_for_process().expect("prctl(PR_SET_THP_DISABLE)"));
    let base = Some(std::path::PathBuf::from(SCRATCH_BASE)).filter(|p| p.is_dir()).unwrap_or_else(std::env::temp_dir);
    let dir = base.join(format!("amalgam-fuzz-recover-{}", std::process::id()));
    recover_invariants::check(data, &dir);
});
