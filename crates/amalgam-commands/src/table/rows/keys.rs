//! The command table's rows of `keys.rs` (`table.rs` says what a row holds).

use super::super::{range, Begin, Cmd, Find, KeySpec, Spec};

/// In the order `COMMANDS` lists them.
pub(super) const ROWS: &[Spec] = &[
    Spec {
        acl: &["@keyspace"],
        tips: &["request_policy:multi_shard", "response_policy:agg_sum"],
        keys: &[range(&["RM", "delete"], 1, -1, 1)],
        ..spec!(Del, "del", -2, &["write"], (1, -1, 1), "generic", "1.0.0", "Delete a key")
    },
    Spec {
        acl: &["@keyspace"],
        tips: &["request_policy:multi_shard", "response_policy:agg_sum"],
        keys: &[range(&["RO"], 1, -1, 1)],
        ..spec!(
            Exists,
            "exists",
            -2,
            &["readonly", "fast"],
            (1, -1, 1),
            "generic",
            "1.0.0",
            "Determine if a key exists"
        )
    },
    Spec {
        acl: &["@keyspace"],
        keys: &[range(&["RW", "update"], 1, 0, 1)],
        ..spec!(
            Expire,
            "expire",
            -3,
            &["write", "fast"],
            (1, 1, 1),
            "generic",
            "1.0.0",
            "Set a key's time to live in seconds"
        )
    },
    Spec {
        acl: &["@keyspace"],
        tips: &["nondeterministic_output"],
        keys: &[range(&["RO", "access"], 1, 0, 1)],
        ..spec!(
            Ttl,
            "ttl",
            2,
            &["readonly", "fast"],
            (1, 1, 1),
            "generic",
            "1.0.0",
            "Get the time to live for a key in seconds"
        )
    },
    Spec {
        acl: &["@keyspace"],
        tips: &["request_policy:multi_shard", "response_policy:agg_sum"],
        keys: &[range(&["RM", "delete"], 1, -1, 1)],
        ..spec!(
            Unlink,
            "unlink",
            -2,
            &["write", "fast"],
            (1, -1, 1),
            "generic",
            "4.0.0",
            "Delete a key asynchronously in another thread. Otherwise it is just as DEL, but non blocking."
        )
    },
    Spec {
        acl: &["@keyspace"],
        keys: &[range(&["RW", "update"], 1, 0, 1)],
        ..spec!(
            Pexpire,
            "pexpire",
            -3,
            &["write", "fast"],
            (1, 1, 1),
            "generic",
            "2.6.0",
            "Set a key's time to live in milliseconds"
        )
    },
    Spec {
        acl: &["@keyspace"],
        keys: &[range(&["RW", "update"], 1, 0, 1)],
        ..spec!(
            Expireat,
            "expireat",
            -3,
            &["write", "fast"],
            (1, 1, 1),
            "generic",
            "1.2.0",
            "Set the expiration for a key as a UNIX timestamp"
        )
    },
    Spec {
        acl: &["@keyspace"],
        keys: &[range(&["RW", "update"], 1, 0, 1)],
        ..spec!(
            Pexpireat,
            "pexpireat",
            -3,
            &["write", "fast"],
            (1, 1, 1),
            "generic",
            "2.6.0",
            "Set the expiration for a key as a UNIX timestamp specified in milliseconds"
        )
    },
    Spec {
        acl: &["@keyspace"],
        tips: &["nondeterministic_output"],
        keys: &[range(&["RO", "access"], 1, 0, 1)],
        ..spec!(
            Pttl,
            "pttl",
            2,
            &["readonly", "fast"],
            (1, 1, 1),
            "generic",
            "2.6.0",
            "Get the time to live for a key in milliseconds"
        )
    },
    Spec {
        acl: &["@keyspace"],
        keys: &[range(&["RO", "access"], 1, 0, 1)],
        ..spec!(
            Expiretime,
            "expiretime",
            2,
            &["readonly", "fast"],
            (1, 1, 1),
            "generic",
            "7.0.0",
            "Get the expiration Unix timestamp for a key"
        )
    },
    Spec {
        acl: &["@keyspace"],
        keys: &[range(&["RO", "access"], 1, 0, 1)],
        ..spec!(
            Pexpiretime,
            "pexpiretime",
            2,
            &["readonly", "fast"],
            (1, 1, 1),
            "generic",
            "7.0.0",
            "Get the expiration Unix timestamp for a key in milliseconds"
        )
    },
    Spec {
        acl: &["@keyspace"],
        keys: &[range(&["RW", "update"], 1, 0, 1)],
        ..spec!(
            Persist,
            "persist",
            2,
            &["write", "fast"],
            (1, 1, 1),
            "generic",
            "2.2.0",
            "Remove the expiration from a key"
        )
    },
    Spec {
        acl: &["@keyspace"],
        keys: &[range(&["RO"], 1, 0, 1)],
        ..spec!(
            Type,
            "type",
            2,
            &["readonly", "fast"],
            (1, 1, 1),
            "generic",
            "1.0.0",
            "Determine the type stored at key"
        )
    },
    Spec {
        acl: &["@keyspace"],
        tips: &["nondeterministic_output", "request_policy:special"],
        ..spec!(Scan, "scan", -2, &["readonly"], (0, 0, 0), "generic", "2.8.0", "Incrementally iterate the keys space")
    },
    Spec {
        acl: &["@keyspace", "@dangerous"],
        tips: &["request_policy:all_shards", "nondeterministic_output_order"],
        ..spec!(
            Keys,
            "keys",
            2,
            &["readonly"],
            (0, 0, 0),
            "generic",
            "1.0.0",
            "Find all keys matching the given pattern"
        )
    },
    Spec {
        acl: &["@keyspace"],
        tips: &["request_policy:all_shards", "response_policy:agg_sum"],
        ..spec!(
            Dbsize,
            "dbsize",
            1,
            &["readonly", "fast"],
            (0, 0, 0),
            "server",
            "1.0.0",
            "Return the number of keys in the selected database"
        )
    },
    Spec {
        acl: &["@keyspace", "@dangerous"],
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
        ..spec!(
            Flushdb,
            "flushdb",
            -1,
            &["write"],
            (0, 0, 0),
            "server",
            "1.0.0",
            "Remove all keys from the current database"
        )
    },
    Spec {
        acl: &["@keyspace", "@dangerous"],
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
        ..spec!(
            Flushall,
            "flushall",
            -1,
            &["write"],
            (0, 0, 0),
            "server",
            "1.0.0",
            "Remove all keys from all databases"
        )
    },
    Spec {
        acl: &["@keyspace"],
        keys: &[
            KeySpec {
                notes: "",
                flags: &["RW", "access", "delete"],
                begin: Begin::Index(1),
                find: Find::Range { lastkey: 0, keystep: 1, limit: 0 },
            },
            KeySpec {
                notes: "",
                flags: &["OW", "update"],
                begin: Begin::Index(2),
                find: Find::Range { lastkey: 0, keystep: 1, limit: 0 },
            },
        ],
        ..spec!(Rename, "rename", 3, &["write"], (1, 2, 1), "generic", "1.0.0", "Rename a key")
    },
    Spec {
        acl: &["@keyspace"],
        keys: &[
            KeySpec {
                notes: "",
                flags: &["RW", "access", "delete"],
                begin: Begin::Index(1),
                find: Find::Range { lastkey: 0, keystep: 1, limit: 0 },
            },
            KeySpec {
                notes: "",
                flags: &["OW", "insert"],
                begin: Begin::Index(2),
                find: Find::Range { lastkey: 0, keystep: 1, limit: 0 },
            },
        ],
        ..spec!(
            Renamenx,
            "renamenx",
            3,
            &["write", "fast"],
            (1, 2, 1),
            "generic",
            "1.0.0",
            "Rename a key, only if the new key does not exist"
        )
    },
];
