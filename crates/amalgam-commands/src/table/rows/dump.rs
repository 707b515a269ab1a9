//! The command table's rows of `dump.rs` (`table.rs` says what a row holds).

use super::super::{range, Begin, Cmd, Find, KeySpec, Spec};

/// In the order `COMMANDS` lists them.
pub(super) const ROWS: &[Spec] = &[
    Spec {
        acl: &["@keyspace"],
        tips: &["nondeterministic_output"],
        keys: &[range(&["RO", "access"], 1, 0, 1)],
        ..spec!(
            Dump,
            "dump",
            2,
            &["readonly"],
            (1, 1, 1),
            "generic",
            "2.6.0",
            "Return a serialized version of the value stored at the specified key."
        )
    },
    Spec {
        acl: &["@keyspace", "@dangerous"],
        keys: &[range(&["OW", "update"], 1, 0, 1)],
        ..spec!(
            Restore,
            "restore",
            -4,
            &["write", "denyoom"],
            (1, 1, 1),
            "generic",
            "2.6.0",
            "Create a key using the provided serialized value, previously obtained using DUMP."
        )
    },
    Spec {
        acl: &["@keyspace", "@dangerous"],
        keys: &[range(&["OW", "update"], 1, 0, 1)],
        ..spec!(
            RestoreAsking,
            "restore-asking",
            -4,
            &["write", "denyoom", "asking"],
            (1, 1, 1),
            "server",
            "3.0.0",
            "An internal command for migrating keys in a cluster"
        )
    },
    Spec {
        acl: &["@keyspace", "@dangerous"],
        tips: &["nondeterministic_output"],
        keys: &[
            range(&["RW", "access", "delete"], 3, 0, 1),
            KeySpec {
                notes: "",
                flags: &["RW", "access", "delete", "incomplete"],
                begin: Begin::Keyword("KEYS", -2),
                find: Find::Range { lastkey: -1, keystep: 1, limit: 0 },
            },
        ],
        ..spec!(
            Migrate,
            "migrate",
            -6,
            &["write", "movablekeys"],
            (3, 3, 1),
            "generic",
            "2.6.0",
            "Atomically transfer a key from a Redis instance to another one."
        )
    },
];
