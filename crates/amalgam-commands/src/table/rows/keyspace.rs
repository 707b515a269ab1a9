//! The command table's rows of `keyspace.rs` (`table.rs` says what a row holds).

use super::super::{range, Cmd, Spec};

/// In the order `COMMANDS` lists them.
pub(super) const ROWS: &[Spec] = &[
    Spec {
        acl: &["@keyspace"],
        tips: &["request_policy:all_shards", "nondeterministic_output"],
        ..spec!(
            Randomkey,
            "randomkey",
            1,
            &["readonly"],
            (0, 0, 0),
            "generic",
            "1.0.0",
            "Return a random key from the keyspace"
        )
    },
    Spec {
        acl: &["@keyspace"],
        keys: &[range(&["RO", "access"], 1, 0, 1), range(&["OW", "update"], 2, 0, 1)],
        ..spec!(Copy, "copy", -3, &["write", "denyoom"], (1, 2, 1), "generic", "6.2.0", "Copy a key")
    },
    Spec {
        acl: &["@keyspace"],
        keys: &[range(&["RW", "access", "update"], 1, 0, 1)],
        ..spec!(Move, "move", 3, &["write", "fast"], (1, 1, 1), "generic", "1.0.0", "Move a key to another database")
    },
    Spec {
        acl: &["@keyspace", "@dangerous"],
        ..spec!(Swapdb, "swapdb", 3, &["write", "fast"], (0, 0, 0), "server", "4.0.0", "Swaps two Redis databases")
    },
];
