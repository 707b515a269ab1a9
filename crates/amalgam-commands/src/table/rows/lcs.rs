//! The command table's rows of `lcs.rs` (`table.rs` says what a row holds).

use super::super::{range, Cmd, Spec};

/// In the order `COMMANDS` lists them.
pub(super) const ROWS: &[Spec] = &[Spec {
    acl: &["@string"],
    keys: &[range(&["RO", "access"], 1, 1, 1)],
    ..spec!(Lcs, "lcs", -3, &["readonly"], (1, 2, 1), "string", "7.0.0", "Find longest common substring")
}];
