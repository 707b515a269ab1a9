//! The command table's rows of `strings.rs`, GET SET MGET MSET first (the front rows `lookup` compares one by one) (`table.rs` says what a row holds).

use super::super::{range, Cmd, Spec};

/// In the order `COMMANDS` lists them.
pub(super) const ROWS: &[Spec] = &[
    Spec {
        acl: &["@string"],
        keys: &[range(&["RO", "access"], 1, 0, 1)],
        ..spec!(Get, "get", 2, &["readonly", "fast"], (1, 1, 1), "string", "1.0.0", "Get the value of a key")
    },
    Spec {
        acl: &["@string"],
        keys: &[range(&["RW", "access", "update", "variable_flags"], 1, 0, 1)
            .notes("RW and ACCESS due to the optional `GET` argument")],
        ..spec!(Set, "set", -3, &["write", "denyoom"], (1, 1, 1), "string", "1.0.0", "Set the string value of a key")
    },
    Spec {
        acl: &["@string"],
        tips: &["request_policy:multi_shard"],
        keys: &[range(&["RO", "access"], 1, -1, 1)],
        ..spec!(
            Mget,
            "mget",
            -2,
            &["readonly", "fast"],
            (1, -1, 1),
            "string",
            "1.0.0",
            "Get the values of all the given keys"
        )
    },
    Spec {
        acl: &["@string"],
        tips: &["request_policy:multi_shard", "response_policy:all_succeeded"],
        keys: &[range(&["OW", "update"], 1, -1, 2)],
        ..spec!(
            Mset,
            "mset",
            -3,
            &["write", "denyoom"],
            (1, -1, 2),
            "string",
            "1.0.1",
            "Set multiple keys to multiple values"
        )
    },
    Spec {
        acl: &["@string"],
        keys: &[range(&["RW", "access", "update"], 1, 0, 1)],
        ..spec!(
            Incr,
            "incr",
            2,
            &["write", "denyoom", "fast"],
            (1, 1, 1),
            "string",
            "1.0.0",
            "Increment the integer value of a key by one"
        )
    },
    Spec {
        acl: &["@string"],
        keys: &[range(&["OW", "insert"], 1, 0, 1)],
        ..spec!(
            Setnx,
            "setnx",
            3,
            &["write", "denyoom", "fast"],
            (1, 1, 1),
            "string",
            "1.0.0",
            "Set the value of a key, only if the key does not exist"
        )
    },
    Spec {
        acl: &["@string"],
        keys: &[range(&["OW", "update"], 1, 0, 1)],
        ..spec!(
            Setex,
            "setex",
            4,
            &["write", "denyoom"],
            (1, 1, 1),
            "string",
            "2.0.0",
            "Set the value and expiration of a key"
        )
    },
    Spec {
        acl: &["@string"],
        keys: &[range(&["OW", "update"], 1, 0, 1)],
        ..spec!(
            Psetex,
            "psetex",
            4,
            &["write", "denyoom"],
            (1, 1, 1),
            "string",
            "2.6.0",
            "Set the value and expiration in milliseconds of a key"
        )
    },
    Spec {
        acl: &["@string"],
        keys: &[range(&["RW", "access", "update"], 1, 0, 1)],
        ..spec!(
            Getset,
            "getset",
            3,
            &["write", "denyoom", "fast"],
            (1, 1, 1),
            "string",
            "1.0.0",
            "Set the string value of a key and return its old value"
        )
    },
    Spec {
        acl: &["@string"],
        keys: &[range(&["RW", "access", "delete"], 1, 0, 1)],
        ..spec!(
            Getdel,
            "getdel",
            2,
            &["write", "fast"],
            (1, 1, 1),
            "string",
            "6.2.0",
            "Get the value of a key and delete the key"
        )
    },
    Spec {
        acl: &["@string"],
        keys: &[range(&["RW", "access", "update"], 1, 0, 1).notes("RW and UPDATE because it changes the TTL")],
        ..spec!(
            Getex,
            "getex",
            -2,
            &["write", "fast"],
            (1, 1, 1),
            "string",
            "6.2.0",
            "Get the value of a key and optionally set its expiration"
        )
    },
    Spec {
        acl: &["@string"],
        tips: &["request_policy:multi_shard", "response_policy:agg_min"],
        keys: &[range(&["OW", "insert"], 1, -1, 2)],
        ..spec!(
            Msetnx,
            "msetnx",
            -3,
            &["write", "denyoom"],
            (1, -1, 2),
            "string",
            "1.0.1",
            "Set multiple keys to multiple values, only if none of the keys exist"
        )
    },
    Spec {
        acl: &["@string"],
        keys: &[range(&["RW", "access", "update"], 1, 0, 1)],
        ..spec!(
            Decr,
            "decr",
            2,
            &["write", "denyoom", "fast"],
            (1, 1, 1),
            "string",
            "1.0.0",
            "Decrement the integer value of a key by one"
        )
    },
    Spec {
        acl: &["@string"],
        keys: &[range(&["RW", "access", "update"], 1, 0, 1)],
        ..spec!(
            Incrby,
            "incrby",
            3,
            &["write", "denyoom", "fast"],
            (1, 1, 1),
            "string",
            "1.0.0",
            "Increment the integer value of a key by the given amount"
        )
    },
    Spec {
        acl: &["@string"],
        keys: &[range(&["RW", "access", "update"], 1, 0, 1)],
        ..spec!(
            Decrby,
            "decrby",
            3,
            &["write", "denyoom", "fast"],
            (1, 1, 1),
            "string",
            "1.0.0",
            "Decrement the integer value of a key by the given number"
        )
    },
    Spec {
        acl: &["@string"],
        keys: &[range(&["RW", "access", "update"], 1, 0, 1)],
        ..spec!(
            Incrbyfloat,
            "incrbyfloat",
            3,
            &["write", "denyoom", "fast"],
            (1, 1, 1),
            "string",
            "2.6.0",
            "Increment the float value of a key by the given amount"
        )
    },
    Spec {
        acl: &["@string"],
        keys: &[range(&["RW", "insert"], 1, 0, 1)],
        ..spec!(
            Append,
            "append",
            3,
            &["write", "denyoom", "fast"],
            (1, 1, 1),
            "string",
            "2.0.0",
            "Append a value to a key"
        )
    },
    Spec {
        acl: &["@string"],
        keys: &[range(&["RO"], 1, 0, 1)],
        ..spec!(
            Strlen,
            "strlen",
            2,
            &["readonly", "fast"],
            (1, 1, 1),
            "string",
            "2.2.0",
            "Get the length of the value stored in a key"
        )
    },
    Spec {
        acl: &["@string"],
        keys: &[range(&["RO", "access"], 1, 0, 1)],
        ..spec!(
            Getrange,
            "getrange",
            4,
            &["readonly"],
            (1, 1, 1),
            "string",
            "2.4.0",
            "Get a substring of the string stored at a key"
        )
    },
    Spec {
        acl: &["@string"],
        keys: &[range(&["RO", "access"], 1, 0, 1)],
        ..spec!(
            Substr,
            "substr",
            4,
            &["readonly"],
            (1, 1, 1),
            "string",
            "1.0.0",
            "Get a substring of the string stored at a key"
        )
    },
    Spec {
        acl: &["@string"],
        keys: &[range(&["RW", "update"], 1, 0, 1)],
        ..spec!(
            Setrange,
            "setrange",
            4,
            &["write", "denyoom"],
            (1, 1, 1),
            "string",
            "2.2.0",
            "Overwrite part of a string at key starting at the specified offset"
        )
    },
];
