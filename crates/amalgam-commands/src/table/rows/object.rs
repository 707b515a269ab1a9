//! The command table's rows of `object.rs` (`table.rs` says what a row holds).

use super::super::{range, Cmd, Spec};

/// In the order `COMMANDS` lists them.
pub(super) const ROWS: &[Spec] = &[
    Spec {
        tips: &["nondeterministic_output"],
        ..spec!(
            Time,
            "time",
            1,
            &["loading", "stale", "fast"],
            (0, 0, 0),
            "server",
            "2.6.0",
            "Return the current server time"
        )
    },
    Spec {
        acl: &["@keyspace"],
        tips: &["request_policy:multi_shard", "response_policy:agg_sum"],
        keys: &[range(&["RO"], 1, -1, 1)],
        ..spec!(
            Touch,
            "touch",
            -2,
            &["readonly", "fast"],
            (1, -1, 1),
            "generic",
            "3.2.1",
            "Alters the last access time of a key(s). Returns the number of existing keys specified."
        )
    },
    Spec {
        subcommands: &[
            Spec {
                acl: &["@keyspace"],
                tips: &["nondeterministic_output"],
                keys: &[range(&["RO"], 2, 0, 1)],
                ..spec!(
                    Object,
                    "object|encoding",
                    3,
                    &["readonly"],
                    (2, 2, 1),
                    "generic",
                    "2.2.3",
                    "Inspect the internal encoding of a Redis object"
                )
            },
            Spec {
                acl: &["@keyspace"],
                tips: &["nondeterministic_output"],
                keys: &[range(&["RO"], 2, 0, 1)],
                ..spec!(
                    Object,
                    "object|freq",
                    3,
                    &["readonly"],
                    (2, 2, 1),
                    "generic",
                    "4.0.0",
                    "Get the logarithmic access frequency counter of a Redis object"
                )
            },
            Spec {
                acl: &["@keyspace"],
                tips: &["nondeterministic_output"],
                keys: &[range(&["RO"], 2, 0, 1)],
                ..spec!(
                    Object,
                    "object|idletime",
                    3,
                    &["readonly"],
                    (2, 2, 1),
                    "generic",
                    "2.2.3",
                    "Get the time since a Redis object was last accessed"
                )
            },
            Spec {
                acl: &["@keyspace"],
                tips: &["nondeterministic_output"],
                keys: &[range(&["RO"], 2, 0, 1)],
                ..spec!(
                    Object,
                    "object|refcount",
                    3,
                    &["readonly"],
                    (2, 2, 1),
                    "generic",
                    "2.2.3",
                    "Get the number of references to the value of the key"
                )
            },
            Spec {
                acl: &["@keyspace"],
                ..spec!(
                    Object,
                    "object|help",
                    2,
                    &["loading", "stale"],
                    (0, 0, 0),
                    "generic",
                    "6.2.0",
                    "Show helpful text about the different subcommands"
                )
            },
        ],
        ..spec!(
            Object,
            "object",
            -2,
            &[],
            (0, 0, 0),
            "generic",
            "2.2.3",
            "A container for object introspection commands"
        )
    },
];
