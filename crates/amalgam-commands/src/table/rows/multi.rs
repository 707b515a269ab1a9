//! The command table's rows of the RESP front end's `resp/multi.rs` (amalgam-server) (`table.rs` says what a row holds).

use super::super::{Begin, Cmd, Find, KeySpec, Spec};

/// In the order `COMMANDS` lists them.
pub(super) const ROWS: &[Spec] = &[
    Spec {
        acl: &["@transaction"],
        ..spec!(
            Multi,
            "multi",
            1,
            &["noscript", "loading", "stale", "fast", "allow_busy"],
            (0, 0, 0),
            "transactions",
            "1.2.0",
            "Mark the start of a transaction block"
        )
    },
    Spec {
        acl: &["@transaction"],
        ..spec!(
            Exec,
            "exec",
            1,
            &["noscript", "loading", "stale", "skip_slowlog"],
            (0, 0, 0),
            "transactions",
            "1.2.0",
            "Execute all commands issued after MULTI"
        )
    },
    Spec {
        acl: &["@transaction"],
        ..spec!(
            Discard,
            "discard",
            1,
            &["noscript", "loading", "stale", "fast", "allow_busy"],
            (0, 0, 0),
            "transactions",
            "2.0.0",
            "Discard all commands issued after MULTI"
        )
    },
    Spec {
        acl: &["@transaction"],
        keys: &[KeySpec {
            notes: "",
            flags: &["RO"],
            begin: Begin::Index(1),
            find: Find::Range { lastkey: -1, keystep: 1, limit: 0 },
        }],
        ..spec!(
            Watch,
            "watch",
            -2,
            &["noscript", "loading", "stale", "fast", "allow_busy"],
            (1, -1, 1),
            "transactions",
            "2.2.0",
            "Watch the given keys to determine execution of the MULTI/EXEC block"
        )
    },
    Spec {
        acl: &["@transaction"],
        ..spec!(
            Unwatch,
            "unwatch",
            1,
            &["noscript", "loading", "stale", "fast", "allow_busy"],
            (0, 0, 0),
            "transactions",
            "2.2.0",
            "Forget about all watched keys"
        )
    },
];
