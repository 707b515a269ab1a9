//! The invariants of the ACL rule parser (amalgam-server's
//! resp/acl.rs): an ACL file's text (`--aclfile`, ACL LOAD) or, after a
//! leading NUL, ACL SETUSER modifiers separated by NULs (which, unlike a
//! file's words, may hold spaces). Neither panics; and what ACL SAVE
//! writes for a user a UTF-8 file defined (`User::describe`, ACL LIST's
//! line) loads back as the same user (described the same).
//!
//! Shared by the libFuzzer target (fuzz-server/fuzz_targets/acl_rules.rs)
//! and the fuzz smoke test (tests/fuzz_smoke.rs).
use amalgam_server::resp::acl::{parse_acl_file, User};

/// Checks one input (module notes).
pub fn check(data: &[u8]) {
    if let Some(ops) = data.strip_prefix(&[0]) {
        // ACL SETUSER: every modifier in turn, stopping at the first
        // refused (Redis publishes none of them then).
        let mut u = User::new(b"fuzz");
        for op in ops.split(|&b| b == 0) {
            if u.apply(op).is_err() {
                break;
            }
        }
        let _ = u.describe();
        return;
    }
    let Ok(users) = parse_acl_file(data, "fuzz") else { return };
    if std::str::from_utf8(data).is_err() {
        // Names and patterns are shown lossily: no round trip to check.
        return;
    }
    for u in users.values() {
        let line = u.describe();
        let again = parse_acl_file(line.as_bytes(), "saved").unwrap_or_else(|e| panic!("{line:?} does not load: {e}"));
        let back = again.get(&u.name).unwrap_or_else(|| panic!("{line:?} lost its user"));
        assert_eq!(back.describe(), line, "saved and loaded");
    }
}
