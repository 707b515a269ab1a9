//! The command table's rows of `hll.rs` (`table.rs` says what a row holds),
//! from redis-server 7.0.15's COMMAND INFO (scripts/command-rows.py).

use super::super::{range, Cmd, Spec};

/// In the order `COMMANDS` lists them.
pub(super) const ROWS: &[Spec] = &[
    Spec {
        acl: &["@hyperloglog"],
        keys: &[range(&["RW", "insert"], 1, 0, 1)],
        ..spec!(
            Pfadd,
            "pfadd",
            -2,
            &["write", "denyoom", "fast"],
            (1, 1, 1),
            "hyperloglog",
            "2.8.9",
            "Adds the specified elements to the specified HyperLogLog."
        )
    },
    Spec {
        acl: &["@hyperloglog"],
        keys: &[range(&["RW", "access"], 1, -1, 1)
            .notes("RW because it may change the internal representation of the key, and propagate to replicas")],
        ..spec!(
            Pfcount,
            "pfcount",
            -2,
            &["readonly"],
            (1, -1, 1),
            "hyperloglog",
            "2.8.9",
            "Return the approximated cardinality of the set(s) observed by the HyperLogLog at key(s)."
        )
    },
    Spec {
        acl: &["@hyperloglog"],
        keys: &[range(&["RW", "access", "insert"], 1, 0, 1), range(&["RO", "access"], 2, -1, 1)],
        ..spec!(
            Pfmerge,
            "pfmerge",
            -2,
            &["write", "denyoom"],
            (1, -1, 1),
            "hyperloglog",
            "2.8.9",
            "Merge N different HyperLogLogs into a single one."
        )
    },
    Spec {
        acl: &["@hyperloglog"],
        keys: &[range(&["RW", "access"], 2, 0, 1)],
        ..spec!(
            Pfdebug,
            "pfdebug",
            3,
            &["write", "denyoom", "admin"],
            (2, 2, 1),
            "hyperloglog",
            "2.8.9",
            "Internal commands for debugging HyperLogLog values"
        )
    },
    Spec {
        acl: &["@hyperloglog"],
        ..spec!(
            Pfselftest,
            "pfselftest",
            1,
            &["admin"],
            (0, 0, 0),
            "hyperloglog",
            "2.8.9",
            "An internal command for testing HyperLogLog values"
        )
    },
];
