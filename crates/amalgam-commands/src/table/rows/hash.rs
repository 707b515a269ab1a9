//! The command table's rows of `hash.rs` (`table.rs` says what a row holds).

use super::super::{range, Cmd, Spec};

/// In the order `COMMANDS` lists them.
pub(super) const ROWS: &[Spec] = &[
    Spec {
        acl: &["@hash"],
        keys: &[range(&["RW", "update"], 1, 0, 1)],
        ..spec!(
            Hset,
            "hset",
            -4,
            &["write", "denyoom", "fast"],
            (1, 1, 1),
            "hash",
            "2.0.0",
            "Set the string value of a hash field"
        )
    },
    Spec {
        acl: &["@hash"],
        keys: &[range(&["RW", "insert"], 1, 0, 1)],
        ..spec!(
            Hsetnx,
            "hsetnx",
            4,
            &["write", "denyoom", "fast"],
            (1, 1, 1),
            "hash",
            "2.0.0",
            "Set the value of a hash field, only if the field does not exist"
        )
    },
    Spec {
        acl: &["@hash"],
        keys: &[range(&["RO", "access"], 1, 0, 1)],
        ..spec!(Hget, "hget", 3, &["readonly", "fast"], (1, 1, 1), "hash", "2.0.0", "Get the value of a hash field")
    },
    Spec {
        acl: &["@hash"],
        keys: &[range(&["RO", "access"], 1, 0, 1)],
        ..spec!(
            Hmget,
            "hmget",
            -3,
            &["readonly", "fast"],
            (1, 1, 1),
            "hash",
            "2.0.0",
            "Get the values of all the given hash fields"
        )
    },
    Spec {
        acl: &["@hash"],
        keys: &[range(&["RW", "update"], 1, 0, 1)],
        ..spec!(
            Hmset,
            "hmset",
            -4,
            &["write", "denyoom", "fast"],
            (1, 1, 1),
            "hash",
            "2.0.0",
            "Set multiple hash fields to multiple values"
        )
    },
    Spec {
        acl: &["@hash"],
        keys: &[range(&["RW", "delete"], 1, 0, 1)],
        ..spec!(Hdel, "hdel", -3, &["write", "fast"], (1, 1, 1), "hash", "2.0.0", "Delete one or more hash fields")
    },
    Spec {
        acl: &["@hash"],
        keys: &[range(&["RO"], 1, 0, 1)],
        ..spec!(
            Hlen,
            "hlen",
            2,
            &["readonly", "fast"],
            (1, 1, 1),
            "hash",
            "2.0.0",
            "Get the number of fields in a hash"
        )
    },
    Spec {
        acl: &["@hash"],
        keys: &[range(&["RO"], 1, 0, 1)],
        ..spec!(
            Hstrlen,
            "hstrlen",
            3,
            &["readonly", "fast"],
            (1, 1, 1),
            "hash",
            "3.2.0",
            "Get the length of the value of a hash field"
        )
    },
    Spec {
        acl: &["@hash"],
        keys: &[range(&["RO"], 1, 0, 1)],
        ..spec!(
            Hexists,
            "hexists",
            3,
            &["readonly", "fast"],
            (1, 1, 1),
            "hash",
            "2.0.0",
            "Determine if a hash field exists"
        )
    },
    Spec {
        acl: &["@hash"],
        tips: &["nondeterministic_output_order"],
        keys: &[range(&["RO", "access"], 1, 0, 1)],
        ..spec!(Hkeys, "hkeys", 2, &["readonly"], (1, 1, 1), "hash", "2.0.0", "Get all the fields in a hash")
    },
    Spec {
        acl: &["@hash"],
        tips: &["nondeterministic_output_order"],
        keys: &[range(&["RO", "access"], 1, 0, 1)],
        ..spec!(Hvals, "hvals", 2, &["readonly"], (1, 1, 1), "hash", "2.0.0", "Get all the values in a hash")
    },
    Spec {
        acl: &["@hash"],
        tips: &["nondeterministic_output_order"],
        keys: &[range(&["RO", "access"], 1, 0, 1)],
        ..spec!(
            Hgetall,
            "hgetall",
            2,
            &["readonly"],
            (1, 1, 1),
            "hash",
            "2.0.0",
            "Get all the fields and values in a hash"
        )
    },
    Spec {
        acl: &["@hash"],
        keys: &[range(&["RW", "access", "update"], 1, 0, 1)],
        ..spec!(
            Hincrby,
            "hincrby",
            4,
            &["write", "denyoom", "fast"],
            (1, 1, 1),
            "hash",
            "2.0.0",
            "Increment the integer value of a hash field by the given number"
        )
    },
    Spec {
        acl: &["@hash"],
        keys: &[range(&["RW", "access", "update"], 1, 0, 1)],
        ..spec!(
            Hincrbyfloat,
            "hincrbyfloat",
            4,
            &["write", "denyoom", "fast"],
            (1, 1, 1),
            "hash",
            "2.6.0",
            "Increment the float value of a hash field by the given amount"
        )
    },
    Spec {
        acl: &["@hash"],
        tips: &["nondeterministic_output"],
        keys: &[range(&["RO", "access"], 1, 0, 1)],
        ..spec!(
            Hrandfield,
            "hrandfield",
            -2,
            &["readonly"],
            (1, 1, 1),
            "hash",
            "6.2.0",
            "Get one or multiple random fields from a hash"
        )
    },
    Spec {
        acl: &["@hash"],
        tips: &["nondeterministic_output"],
        keys: &[range(&["RO", "access"], 1, 0, 1)],
        ..spec!(
            Hscan,
            "hscan",
            -3,
            &["readonly"],
            (1, 1, 1),
            "hash",
            "2.8.0",
            "Incrementally iterate hash fields and associated values"
        )
    },
];
