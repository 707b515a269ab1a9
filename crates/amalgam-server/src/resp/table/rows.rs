//! The rows of the command table (`table.rs` says what a row holds).

use super::{range, Begin, Cmd, Find, KeySpec, Spec};

/// Every command, the most frequent first (lookup scans in order).
pub static COMMANDS: [Spec; 191] = [
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
        acl: &["@connection"],
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
        ..spec!(Ping, "ping", -1, &["fast"], (0, 0, 0), "connection", "1.0.0", "Ping the server")
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
        ..spec!(Substr, "substr", 4, &["readonly"], (1, 1, 1), "string", "1.0.0", "Get a substring of the string stored at a key")
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
    spec!(
        Save,
        "save",
        1,
        &["admin", "noscript", "no_async_loading", "no_multi"],
        (0, 0, 0),
        "server",
        "1.0.0",
        "Synchronously save the dataset to disk"
    ),
    spec!(
        Bgsave,
        "bgsave",
        -1,
        &["admin", "noscript", "no_async_loading"],
        (0, 0, 0),
        "server",
        "1.0.0",
        "Asynchronously save the dataset to disk"
    ),
    Spec {
        acl: &["@admin", "@dangerous"],
        tips: &["nondeterministic_output"],
        ..spec!(
            Lastsave,
            "lastsave",
            1,
            &["loading", "stale", "fast"],
            (0, 0, 0),
            "server",
            "1.0.0",
            "Get the UNIX time stamp of the last successful save to disk"
        )
    },
    Spec {
        acl: &["@admin", "@dangerous"],
        ..spec!(
            Shutdown,
            "shutdown",
            -1,
            &["admin", "noscript", "loading", "stale", "no_multi", "allow_busy"],
            (0, 0, 0),
            "server",
            "1.0.0",
            "Synchronously save the dataset to disk and then shut down the server"
        )
    },
    Spec {
        acl: &["@connection"],
        ..spec!(
            Echo,
            "echo",
            2,
            &["loading", "stale", "fast"],
            (0, 0, 0),
            "connection",
            "1.0.0",
            "Echo the given string"
        )
    },
    Spec {
        acl: &["@connection"],
        ..spec!(
            Quit,
            "quit",
            -1,
            &["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"],
            (0, 0, 0),
            "connection",
            "1.0.0",
            "Close the connection"
        )
    },
    Spec {
        acl: &["@connection"],
        ..spec!(
            Reset,
            "reset",
            1,
            &["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"],
            (0, 0, 0),
            "connection",
            "6.2.0",
            "Reset the connection"
        )
    },
    Spec {
        acl: &["@connection"],
        ..spec!(
            Select,
            "select",
            2,
            &["loading", "stale", "fast"],
            (0, 0, 0),
            "connection",
            "1.0.0",
            "Change the selected database for the current connection"
        )
    },
    Spec {
        acl: &["@dangerous"],
        tips: &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"],
        ..spec!(
            Info,
            "info",
            -1,
            &["loading", "stale"],
            (0, 0, 0),
            "server",
            "1.0.0",
            "Get information and statistics about the server"
        )
    },
    Spec {
        subcommands: &[
            spec!(
                Config,
                "config|get",
                -3,
                &["admin", "noscript", "loading", "stale"],
                (0, 0, 0),
                "server",
                "2.0.0",
                "Get the values of configuration parameters"
            ),
            Spec {
                tips: &["request_policy:all_nodes", "response_policy:all_succeeded"],
                ..spec!(
                    Config,
                    "config|set",
                    -4,
                    &["admin", "noscript", "loading", "stale"],
                    (0, 0, 0),
                    "server",
                    "2.0.0",
                    "Set configuration parameters to the given values"
                )
            },
            spec!(
                Config,
                "config|resetstat",
                2,
                &["admin", "noscript", "loading", "stale"],
                (0, 0, 0),
                "server",
                "2.0.0",
                "Reset the stats returned by INFO"
            ),
            spec!(
                Config,
                "config|rewrite",
                2,
                &["admin", "noscript", "loading", "stale"],
                (0, 0, 0),
                "server",
                "2.8.0",
                "Rewrite the configuration file with the in memory configuration"
            ),
            spec!(
                Config,
                "config|help",
                2,
                &["loading", "stale"],
                (0, 0, 0),
                "server",
                "5.0.0",
                "Show helpful text about the different subcommands"
            ),
        ],
        ..spec!(
            Config,
            "config",
            -2,
            &[],
            (0, 0, 0),
            "server",
            "2.0.0",
            "A container for server configuration commands"
        )
    },
    Spec {
        subcommands: &[
            Spec {
                tips: &["request_policy:all_nodes", "nondeterministic_output"],
                ..spec!(
                    Slowlog,
                    "slowlog|get",
                    -2,
                    &["admin", "loading", "stale"],
                    (0, 0, 0),
                    "server",
                    "2.2.12",
                    "Get the slow log's entries"
                )
            },
            Spec {
                tips: &["request_policy:all_nodes", "response_policy:agg_sum", "nondeterministic_output"],
                ..spec!(
                    Slowlog,
                    "slowlog|len",
                    2,
                    &["admin", "loading", "stale"],
                    (0, 0, 0),
                    "server",
                    "2.2.12",
                    "Get the slow log's length"
                )
            },
            Spec {
                tips: &["request_policy:all_nodes", "response_policy:all_succeeded"],
                ..spec!(
                    Slowlog,
                    "slowlog|reset",
                    2,
                    &["admin", "loading", "stale"],
                    (0, 0, 0),
                    "server",
                    "2.2.12",
                    "Clear all entries from the slow log"
                )
            },
            spec!(
                Slowlog,
                "slowlog|help",
                2,
                &["loading", "stale"],
                (0, 0, 0),
                "server",
                "6.2.0",
                "Show helpful text about the different subcommands"
            ),
        ],
        ..spec!(Slowlog, "slowlog", -2, &[], (0, 0, 0), "server", "2.2.12", "A container for slow log commands")
    },
    Spec {
        subcommands: &[
            Spec {
                tips: &["request_policy:all_nodes", "response_policy:all_succeeded"],
                ..spec!(Latency, "latency|reset", -2, &["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "2.8.13", "Reset latency data for one or more events.")
            },
            Spec {
                tips: &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"],
                ..spec!(Latency, "latency|history", 3, &["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "2.8.13", "Return timestamp-latency samples for the event.")
            },
            Spec {
                tips: &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"],
                ..spec!(Latency, "latency|doctor", 2, &["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "2.8.13", "Return a human readable latency analysis report.")
            },
            spec!(Latency, "latency|help", 2, &["loading", "stale"], (0, 0, 0), "server", "2.8.13", "Show helpful text about the different subcommands."),
            Spec {
                tips: &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"],
                ..spec!(Latency, "latency|histogram", -2, &["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "7.0.0", "Return the cumulative distribution of latencies of a subset of commands or all.")
            },
            Spec {
                tips: &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"],
                ..spec!(Latency, "latency|graph", 3, &["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "2.8.13", "Return a latency graph for the event.")
            },
            Spec {
                tips: &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"],
                ..spec!(Latency, "latency|latest", 2, &["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "2.8.13", "Return the latest latency samples for all events.")
            },
        ],
        ..spec!(Latency, "latency", -2, &[], (0, 0, 0), "server", "2.8.13", "A container for latency diagnostics commands")
    },
    Spec {
        ..spec!(Debug, "debug", -2, &["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "1.0.0", "A container for debugging commands")
    },
    Spec {
        subcommands: &[
            Spec {
                tips: &["nondeterministic_output_order"],
                ..spec!(Module, "module|list", 2, &["admin", "noscript"], (0, 0, 0), "server", "4.0.0", "List all modules loaded by the server")
            },
            spec!(Module, "module|load", -3, &["admin", "noscript", "no_async_loading"], (0, 0, 0), "server", "4.0.0", "Load a module"),
            spec!(Module, "module|loadex", -3, &["admin", "noscript", "no_async_loading"], (0, 0, 0), "server", "7.0.0", "Load a module with extended parameters"),
            spec!(Module, "module|unload", 3, &["admin", "noscript", "no_async_loading"], (0, 0, 0), "server", "4.0.0", "Unload a module"),
            spec!(Module, "module|help", 2, &["loading", "stale"], (0, 0, 0), "server", "5.0.0", "Show helpful text about the different subcommands"),
        ],
        ..spec!(Module, "module", -2, &[], (0, 0, 0), "server", "4.0.0", "A container for module commands")
    },
    Spec {
        acl: &["@connection"],
        ..spec!(Readonly, "readonly", 1, &["loading", "stale", "fast"], (0, 0, 0), "cluster", "3.0.0", "Enables read queries for a connection to a cluster replica node")
    },
    Spec {
        acl: &["@connection"],
        ..spec!(Readwrite, "readwrite", 1, &["loading", "stale", "fast"], (0, 0, 0), "cluster", "3.0.0", "Disables read queries for a connection to a cluster replica node")
    },
    Spec {
        acl: &["@connection"],
        tips: &["nondeterministic_output_order"],
        subcommands: &[
            Spec {
                acl: &["@connection"],
                ..spec!(
                    Command,
                    "command|count",
                    2,
                    &["loading", "stale"],
                    (0, 0, 0),
                    "server",
                    "2.8.13",
                    "Get total number of Redis commands"
                )
            },
            Spec {
                acl: &["@connection"],
                tips: &["nondeterministic_output_order"],
                ..spec!(
                    Command,
                    "command|docs",
                    -2,
                    &["loading", "stale"],
                    (0, 0, 0),
                    "server",
                    "7.0.0",
                    "Get array of specific Redis command documentation"
                )
            },
            Spec {
                acl: &["@connection"],
                tips: &["nondeterministic_output_order"],
                ..spec!(
                    Command,
                    "command|info",
                    -2,
                    &["loading", "stale"],
                    (0, 0, 0),
                    "server",
                    "2.8.13",
                    "Get array of specific Redis command details, or all when no argument is given."
                )
            },
            Spec {
                acl: &["@connection"],
                tips: &["nondeterministic_output_order"],
                ..spec!(
                    Command,
                    "command|list",
                    -2,
                    &["loading", "stale"],
                    (0, 0, 0),
                    "server",
                    "7.0.0",
                    "Get an array of Redis command names"
                )
            },
            Spec {
                acl: &["@connection"],
                ..spec!(
                    Command,
                    "command|getkeys",
                    -4,
                    &["loading", "stale"],
                    (0, 0, 0),
                    "server",
                    "2.8.13",
                    "Extract keys given a full Redis command"
                )
            },
            Spec {
                acl: &["@connection"],
                ..spec!(
                    Command,
                    "command|getkeysandflags",
                    -4,
                    &["loading", "stale"],
                    (0, 0, 0),
                    "server",
                    "7.0.0",
                    "Extract keys and access flags given a full Redis command"
                )
            },
            Spec {
                acl: &["@connection"],
                ..spec!(
                    Command,
                    "command|help",
                    2,
                    &["loading", "stale"],
                    (0, 0, 0),
                    "server",
                    "5.0.0",
                    "Show helpful text about the different subcommands"
                )
            },
        ],
        ..spec!(
            Command,
            "command",
            -1,
            &["loading", "stale"],
            (0, 0, 0),
            "server",
            "2.8.13",
            "Get array of Redis command details"
        )
    },
    Spec {
        subcommands: &[
            Spec {
                acl: &["@connection"],
                ..spec!(
                    Client,
                    "client|id",
                    2,
                    &["noscript", "loading", "stale"],
                    (0, 0, 0),
                    "connection",
                    "5.0.0",
                    "Returns the client ID for the current connection"
                )
            },
            Spec {
                acl: &["@connection"],
                ..spec!(
                    Client,
                    "client|getname",
                    2,
                    &["noscript", "loading", "stale"],
                    (0, 0, 0),
                    "connection",
                    "2.6.9",
                    "Get the current connection name"
                )
            },
            Spec {
                acl: &["@connection"],
                ..spec!(
                    Client,
                    "client|setname",
                    3,
                    &["noscript", "loading", "stale"],
                    (0, 0, 0),
                    "connection",
                    "2.6.9",
                    "Set the current connection name"
                )
            },
            Spec {
                acl: &["@connection"],
                tips: &["request_policy:all_nodes", "response_policy:all_succeeded"],
                ..spec!(
                    Client,
                    "client|setinfo",
                    4,
                    &["noscript", "loading", "stale"],
                    (0, 0, 0),
                    "connection",
                    "7.2.0",
                    "Set client or connection specific info"
                )
            },
            Spec {
                acl: &["@connection"],
                tips: &["nondeterministic_output"],
                ..spec!(
                    Client,
                    "client|info",
                    2,
                    &["noscript", "loading", "stale"],
                    (0, 0, 0),
                    "connection",
                    "6.2.0",
                    "Returns information about the current client connection."
                )
            },
            Spec {
                acl: &["@connection"],
                tips: &["nondeterministic_output"],
                ..spec!(
                    Client,
                    "client|list",
                    -2,
                    &["admin", "noscript", "loading", "stale"],
                    (0, 0, 0),
                    "connection",
                    "2.4.0",
                    "Get the list of client connections"
                )
            },
            Spec {
                acl: &["@connection"],
                ..spec!(
                    Client,
                    "client|kill",
                    -3,
                    &["admin", "noscript", "loading", "stale"],
                    (0, 0, 0),
                    "connection",
                    "2.4.0",
                    "Kill the connection of a client"
                )
            },
            Spec {
                acl: &["@connection"],
                ..spec!(
                    Client,
                    "client|reply",
                    3,
                    &["noscript", "loading", "stale"],
                    (0, 0, 0),
                    "connection",
                    "3.2.0",
                    "Instruct the server whether to reply to commands"
                )
            },
            Spec {
                acl: &["@connection"],
                ..spec!(
                    Client,
                    "client|no-evict",
                    3,
                    &["admin", "noscript", "loading", "stale"],
                    (0, 0, 0),
                    "connection",
                    "7.0.0",
                    "Set client eviction mode for the current connection"
                )
            },
            Spec {
                acl: &["@connection"],
                ..spec!(
                    Client,
                    "client|unblock",
                    -3,
                    &["admin", "noscript", "loading", "stale"],
                    (0, 0, 0),
                    "connection",
                    "5.0.0",
                    "Unblock a client blocked in a blocking command from a different connection"
                )
            },
            Spec {
                acl: &["@connection"],
                ..spec!(
                    Client,
                    "client|no-touch",
                    3,
                    &["noscript", "loading", "stale"],
                    (0, 0, 0),
                    "connection",
                    "7.2.0",
                    "Controls whether commands sent by the client will alter the LRU/LFU of the keys they access."
                )
            },
            Spec {
                acl: &["@connection"],
                ..spec!(
                    Client,
                    "client|help",
                    2,
                    &["loading", "stale"],
                    (0, 0, 0),
                    "connection",
                    "5.0.0",
                    "Show helpful text about the different subcommands"
                )
            },
        ],
        ..spec!(
            Client,
            "client",
            -2,
            &[],
            (0, 0, 0),
            "connection",
            "2.4.0",
            "A container for client connection commands"
        )
    },
    spec!(
        Monitor,
        "monitor",
        1,
        &["admin", "noscript", "loading", "stale"],
        (0, 0, 0),
        "server",
        "1.0.0",
        "Listen for all requests received by the server in real time"
    ),
    Spec {
        acl: &["@bitmap"],
        keys: &[range(&["RW", "access", "update"], 1, 0, 1)],
        ..spec!(
            Setbit,
            "setbit",
            4,
            &["write", "denyoom"],
            (1, 1, 1),
            "bitmap",
            "2.2.0",
            "Sets or clears the bit at offset in the string value stored at key"
        )
    },
    Spec {
        acl: &["@bitmap"],
        keys: &[range(&["RO", "access"], 1, 0, 1)],
        ..spec!(
            Getbit,
            "getbit",
            3,
            &["readonly", "fast"],
            (1, 1, 1),
            "bitmap",
            "2.2.0",
            "Returns the bit value at offset in the string value stored at key"
        )
    },
    Spec {
        acl: &["@bitmap"],
        keys: &[range(&["RO", "access"], 1, 0, 1)],
        ..spec!(Bitcount, "bitcount", -2, &["readonly"], (1, 1, 1), "bitmap", "2.6.0", "Count set bits in a string")
    },
    Spec {
        acl: &["@bitmap"],
        keys: &[range(&["RO", "access"], 1, 0, 1)],
        ..spec!(
            Bitpos,
            "bitpos",
            -3,
            &["readonly"],
            (1, 1, 1),
            "bitmap",
            "2.8.7",
            "Find first bit set or clear in a string"
        )
    },
    Spec {
        acl: &["@bitmap"],
        keys: &[range(&["OW", "update"], 2, 0, 1), range(&["RO", "access"], 3, -1, 1)],
        ..spec!(
            Bitop,
            "bitop",
            -4,
            &["write", "denyoom"],
            (2, -1, 1),
            "bitmap",
            "2.6.0",
            "Perform bitwise operations between strings"
        )
    },
    Spec {
        acl: &["@bitmap"],
        keys: &[range(&["RW", "access", "update", "variable_flags"], 1, 0, 1)
            .notes("This command allows both access and modification of the key")],
        ..spec!(
            Bitfield,
            "bitfield",
            -2,
            &["write", "denyoom"],
            (1, 1, 1),
            "bitmap",
            "3.2.0",
            "Perform arbitrary bitfield integer operations on strings"
        )
    },
    Spec {
        acl: &["@bitmap"],
        keys: &[range(&["RO", "access"], 1, 0, 1)],
        ..spec!(
            BitfieldRo,
            "bitfield_ro",
            -2,
            &["readonly", "fast"],
            (1, 1, 1),
            "bitmap",
            "6.0.0",
            "Perform arbitrary bitfield integer operations on strings. Read-only variant of BITFIELD"
        )
    },
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
    Spec {
        acl: &["@string"],
        keys: &[range(&["RO", "access"], 1, 1, 1)],
        ..spec!(Lcs, "lcs", -3, &["readonly"], (1, 2, 1), "string", "7.0.0", "Find longest common substring")
    },
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
        subcommands: &[
            Spec {
                tips: &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"],
                ..spec!(
                    Memory,
                    "memory|doctor",
                    2,
                    &[],
                    (0, 0, 0),
                    "server",
                    "4.0.0",
                    "Outputs memory problems report"
                )
            },
            Spec {
                tips: &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"],
                ..spec!(Memory, "memory|stats", 2, &[], (0, 0, 0), "server", "4.0.0", "Show memory usage details")
            },
            Spec {
                keys: &[range(&["RO"], 2, 0, 1)],
                ..spec!(
                    Memory,
                    "memory|usage",
                    -3,
                    &["readonly"],
                    (2, 2, 1),
                    "server",
                    "4.0.0",
                    "Estimate the memory usage of a key"
                )
            },
            Spec {
                tips: &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"],
                ..spec!(
                    Memory,
                    "memory|malloc-stats",
                    2,
                    &[],
                    (0, 0, 0),
                    "server",
                    "4.0.0",
                    "Show allocator internal stats"
                )
            },
            Spec {
                tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
                ..spec!(
                    Memory,
                    "memory|purge",
                    2,
                    &[],
                    (0, 0, 0),
                    "server",
                    "4.0.0",
                    "Ask the allocator to release memory"
                )
            },
            Spec {
                ..spec!(
                    Memory,
                    "memory|help",
                    2,
                    &["loading", "stale"],
                    (0, 0, 0),
                    "server",
                    "4.0.0",
                    "Show helpful text about the different subcommands"
                )
            },
        ],
        ..spec!(
            Memory,
            "memory",
            -2,
            &[],
            (0, 0, 0),
            "server",
            "4.0.0",
            "A container for memory diagnostics commands"
        )
    },
    Spec {
        acl: &["@connection"],
        ..spec!(
            Hello,
            "hello",
            -1,
            &["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"],
            (0, 0, 0),
            "connection",
            "6.0.0",
            "Handshake with Redis"
        )
    },
    Spec {
        acl: &["@connection"],
        ..spec!(
            Auth,
            "auth",
            -2,
            &["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"],
            (0, 0, 0),
            "connection",
            "1.0.0",
            "Authenticate to the server"
        )
    },
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
    Spec {
        acl: &["@list"],
        keys: &[KeySpec {
            notes: "",
            flags: &["RW", "insert"],
            begin: Begin::Index(1),
            find: Find::Range { lastkey: 0, keystep: 1, limit: 0 },
        }],
        ..spec!(
            Lpush,
            "lpush",
            -3,
            &["write", "denyoom", "fast"],
            (1, 1, 1),
            "list",
            "1.0.0",
            "Prepend one or multiple elements to a list"
        )
    },
    Spec {
        acl: &["@list"],
        keys: &[KeySpec {
            notes: "",
            flags: &["RW", "insert"],
            begin: Begin::Index(1),
            find: Find::Range { lastkey: 0, keystep: 1, limit: 0 },
        }],
        ..spec!(
            Rpush,
            "rpush",
            -3,
            &["write", "denyoom", "fast"],
            (1, 1, 1),
            "list",
            "1.0.0",
            "Append one or multiple elements to a list"
        )
    },
    Spec {
        acl: &["@list"],
        keys: &[KeySpec {
            notes: "",
            flags: &["RW", "insert"],
            begin: Begin::Index(1),
            find: Find::Range { lastkey: 0, keystep: 1, limit: 0 },
        }],
        ..spec!(
            Lpushx,
            "lpushx",
            -3,
            &["write", "denyoom", "fast"],
            (1, 1, 1),
            "list",
            "2.2.0",
            "Prepend an element to a list, only if the list exists"
        )
    },
    Spec {
        acl: &["@list"],
        keys: &[KeySpec {
            notes: "",
            flags: &["RW", "insert"],
            begin: Begin::Index(1),
            find: Find::Range { lastkey: 0, keystep: 1, limit: 0 },
        }],
        ..spec!(
            Rpushx,
            "rpushx",
            -3,
            &["write", "denyoom", "fast"],
            (1, 1, 1),
            "list",
            "2.2.0",
            "Append an element to a list, only if the list exists"
        )
    },
    Spec {
        acl: &["@list"],
        keys: &[KeySpec {
            notes: "",
            flags: &["RW", "access", "delete"],
            begin: Begin::Index(1),
            find: Find::Range { lastkey: 0, keystep: 1, limit: 0 },
        }],
        ..spec!(
            Lpop,
            "lpop",
            -2,
            &["write", "fast"],
            (1, 1, 1),
            "list",
            "1.0.0",
            "Remove and get the first elements in a list"
        )
    },
    Spec {
        acl: &["@list"],
        keys: &[KeySpec {
            notes: "",
            flags: &["RW", "access", "delete"],
            begin: Begin::Index(1),
            find: Find::Range { lastkey: 0, keystep: 1, limit: 0 },
        }],
        ..spec!(
            Rpop,
            "rpop",
            -2,
            &["write", "fast"],
            (1, 1, 1),
            "list",
            "1.0.0",
            "Remove and get the last elements in a list"
        )
    },
    Spec {
        acl: &["@list"],
        keys: &[KeySpec {
            notes: "",
            flags: &["RO"],
            begin: Begin::Index(1),
            find: Find::Range { lastkey: 0, keystep: 1, limit: 0 },
        }],
        ..spec!(Llen, "llen", 2, &["readonly", "fast"], (1, 1, 1), "list", "1.0.0", "Get the length of a list")
    },
    Spec {
        acl: &["@list"],
        keys: &[KeySpec {
            notes: "",
            flags: &["RO", "access"],
            begin: Begin::Index(1),
            find: Find::Range { lastkey: 0, keystep: 1, limit: 0 },
        }],
        ..spec!(Lrange, "lrange", 4, &["readonly"], (1, 1, 1), "list", "1.0.0", "Get a range of elements from a list")
    },
    Spec {
        acl: &["@list"],
        keys: &[KeySpec {
            notes: "",
            flags: &["RO", "access"],
            begin: Begin::Index(1),
            find: Find::Range { lastkey: 0, keystep: 1, limit: 0 },
        }],
        ..spec!(
            Lindex,
            "lindex",
            3,
            &["readonly"],
            (1, 1, 1),
            "list",
            "1.0.0",
            "Get an element from a list by its index"
        )
    },
    Spec {
        acl: &["@list"],
        keys: &[KeySpec {
            notes: "",
            flags: &["RW", "update"],
            begin: Begin::Index(1),
            find: Find::Range { lastkey: 0, keystep: 1, limit: 0 },
        }],
        ..spec!(
            Lset,
            "lset",
            4,
            &["write", "denyoom"],
            (1, 1, 1),
            "list",
            "1.0.0",
            "Set the value of an element in a list by its index"
        )
    },
    Spec {
        acl: &["@list"],
        keys: &[KeySpec {
            notes: "",
            flags: &["RW", "insert"],
            begin: Begin::Index(1),
            find: Find::Range { lastkey: 0, keystep: 1, limit: 0 },
        }],
        ..spec!(
            Linsert,
            "linsert",
            5,
            &["write", "denyoom"],
            (1, 1, 1),
            "list",
            "2.2.0",
            "Insert an element before or after another element in a list"
        )
    },
    Spec {
        acl: &["@list"],
        keys: &[KeySpec {
            notes: "",
            flags: &["RW", "delete"],
            begin: Begin::Index(1),
            find: Find::Range { lastkey: 0, keystep: 1, limit: 0 },
        }],
        ..spec!(Lrem, "lrem", 4, &["write"], (1, 1, 1), "list", "1.0.0", "Remove elements from a list")
    },
    Spec {
        acl: &["@list"],
        keys: &[KeySpec {
            notes: "",
            flags: &["RW", "delete"],
            begin: Begin::Index(1),
            find: Find::Range { lastkey: 0, keystep: 1, limit: 0 },
        }],
        ..spec!(Ltrim, "ltrim", 4, &["write"], (1, 1, 1), "list", "1.0.0", "Trim a list to the specified range")
    },
    Spec {
        acl: &["@list"],
        keys: &[KeySpec {
            notes: "",
            flags: &["RO", "access"],
            begin: Begin::Index(1),
            find: Find::Range { lastkey: 0, keystep: 1, limit: 0 },
        }],
        ..spec!(
            Lpos,
            "lpos",
            -3,
            &["readonly"],
            (1, 1, 1),
            "list",
            "6.0.6",
            "Return the index of matching elements on a list"
        )
    },
    Spec {
        acl: &["@list"],
        keys: &[
            KeySpec {
                notes: "",
                flags: &["RW", "access", "delete"],
                begin: Begin::Index(1),
                find: Find::Range { lastkey: 0, keystep: 1, limit: 0 },
            },
            KeySpec {
                notes: "",
                flags: &["RW", "insert"],
                begin: Begin::Index(2),
                find: Find::Range { lastkey: 0, keystep: 1, limit: 0 },
            },
        ],
        ..spec!(
            Lmove,
            "lmove",
            5,
            &["write", "denyoom"],
            (1, 2, 1),
            "list",
            "6.2.0",
            "Pop an element from a list, push it to another list and return it"
        )
    },
    Spec {
        acl: &["@list"],
        keys: &[
            KeySpec {
                notes: "",
                flags: &["RW", "access", "delete"],
                begin: Begin::Index(1),
                find: Find::Range { lastkey: 0, keystep: 1, limit: 0 },
            },
            KeySpec {
                notes: "",
                flags: &["RW", "insert"],
                begin: Begin::Index(2),
                find: Find::Range { lastkey: 0, keystep: 1, limit: 0 },
            },
        ],
        ..spec!(
            Rpoplpush,
            "rpoplpush",
            3,
            &["write", "denyoom"],
            (1, 2, 1),
            "list",
            "1.2.0",
            "Remove the last element in a list, prepend it to another list and return it"
        )
    },
    Spec {
        acl: &["@list"],
        keys: &[KeySpec {
            notes: "",
            flags: &["RW", "access", "delete"],
            begin: Begin::Index(1),
            find: Find::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 },
        }],
        ..spec!(Lmpop, "lmpop", -4, &["write", "movablekeys"], (0, 0, 0), "list", "7.0.0", "Pop elements from a list")
    },
    Spec {
        acl: &["@list"],
        keys: &[KeySpec {
            notes: "",
            flags: &["RW", "access", "delete"],
            begin: Begin::Index(1),
            find: Find::Range { lastkey: -2, keystep: 1, limit: 0 },
        }],
        ..spec!(
            Blpop,
            "blpop",
            -3,
            &["write", "noscript", "blocking"],
            (1, -2, 1),
            "list",
            "2.0.0",
            "Remove and get the first element in a list, or block until one is available"
        )
    },
    Spec {
        acl: &["@list"],
        keys: &[KeySpec {
            notes: "",
            flags: &["RW", "access", "delete"],
            begin: Begin::Index(1),
            find: Find::Range { lastkey: -2, keystep: 1, limit: 0 },
        }],
        ..spec!(
            Brpop,
            "brpop",
            -3,
            &["write", "noscript", "blocking"],
            (1, -2, 1),
            "list",
            "2.0.0",
            "Remove and get the last element in a list, or block until one is available"
        )
    },
    Spec {
        acl: &["@list"],
        keys: &[
            KeySpec {
                notes: "",
                flags: &["RW", "access", "delete"],
                begin: Begin::Index(1),
                find: Find::Range { lastkey: 0, keystep: 1, limit: 0 },
            },
            KeySpec {
                notes: "",
                flags: &["RW", "insert"],
                begin: Begin::Index(2),
                find: Find::Range { lastkey: 0, keystep: 1, limit: 0 },
            },
        ],
        ..spec!(
            Blmove,
            "blmove",
            6,
            &["write", "denyoom", "noscript", "blocking"],
            (1, 2, 1),
            "list",
            "6.2.0",
            "Pop an element from a list, push it to another list and return it; or block until one is available"
        )
    },
    Spec {
        acl: &["@list"],
        keys: &[
            KeySpec {
                notes: "",
                flags: &["RW", "access", "delete"],
                begin: Begin::Index(1),
                find: Find::Range { lastkey: 0, keystep: 1, limit: 0 },
            },
            KeySpec {
                notes: "",
                flags: &["RW", "insert"],
                begin: Begin::Index(2),
                find: Find::Range { lastkey: 0, keystep: 1, limit: 0 },
            },
        ],
        ..spec!(
            Brpoplpush,
            "brpoplpush",
            4,
            &["write", "denyoom", "noscript", "blocking"],
            (1, 2, 1),
            "list",
            "2.2.0",
            "Pop an element from a list, push it to another list and return it; or block until one is available"
        )
    },
    Spec {
        acl: &["@list"],
        keys: &[KeySpec {
            notes: "",
            flags: &["RW", "access", "delete"],
            begin: Begin::Index(2),
            find: Find::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 },
        }],
        ..spec!(
            Blmpop,
            "blmpop",
            -5,
            &["write", "blocking", "movablekeys"],
            (0, 0, 0),
            "list",
            "7.0.0",
            "Pop elements from a list, or block until one is available"
        )
    },
    Spec {
        acl: &["@set"],
        keys: &[KeySpec {
            notes: "",
            flags: &["RW", "insert"],
            begin: Begin::Index(1),
            find: Find::Range { lastkey: 0, keystep: 1, limit: 0 },
        }],
        ..spec!(
            Sadd,
            "sadd",
            -3,
            &["write", "denyoom", "fast"],
            (1, 1, 1),
            "set",
            "1.0.0",
            "Add one or more members to a set"
        )
    },
    Spec {
        acl: &["@set"],
        keys: &[KeySpec {
            notes: "",
            flags: &["RW", "delete"],
            begin: Begin::Index(1),
            find: Find::Range { lastkey: 0, keystep: 1, limit: 0 },
        }],
        ..spec!(
            Srem,
            "srem",
            -3,
            &["write", "fast"],
            (1, 1, 1),
            "set",
            "1.0.0",
            "Remove one or more members from a set"
        )
    },
    Spec {
        acl: &["@set"],
        tips: &["nondeterministic_output_order"],
        keys: &[KeySpec {
            notes: "",
            flags: &["RO", "access"],
            begin: Begin::Index(1),
            find: Find::Range { lastkey: 0, keystep: 1, limit: 0 },
        }],
        ..spec!(Smembers, "smembers", 2, &["readonly"], (1, 1, 1), "set", "1.0.0", "Get all the members in a set")
    },
    Spec {
        acl: &["@set"],
        keys: &[KeySpec {
            notes: "",
            flags: &["RO"],
            begin: Begin::Index(1),
            find: Find::Range { lastkey: 0, keystep: 1, limit: 0 },
        }],
        ..spec!(
            Sismember,
            "sismember",
            3,
            &["readonly", "fast"],
            (1, 1, 1),
            "set",
            "1.0.0",
            "Determine if a given value is a member of a set"
        )
    },
    Spec {
        acl: &["@set"],
        keys: &[KeySpec {
            notes: "",
            flags: &["RO", "access"],
            begin: Begin::Index(1),
            find: Find::Range { lastkey: 0, keystep: 1, limit: 0 },
        }],
        ..spec!(
            Smismember,
            "smismember",
            -3,
            &["readonly", "fast"],
            (1, 1, 1),
            "set",
            "6.2.0",
            "Returns the membership associated with the given elements for a set"
        )
    },
    Spec {
        acl: &["@set"],
        keys: &[KeySpec {
            notes: "",
            flags: &["RO"],
            begin: Begin::Index(1),
            find: Find::Range { lastkey: 0, keystep: 1, limit: 0 },
        }],
        ..spec!(
            Scard,
            "scard",
            2,
            &["readonly", "fast"],
            (1, 1, 1),
            "set",
            "1.0.0",
            "Get the number of members in a set"
        )
    },
    Spec {
        acl: &["@set"],
        tips: &["nondeterministic_output"],
        keys: &[KeySpec {
            notes: "",
            flags: &["RW", "access", "delete"],
            begin: Begin::Index(1),
            find: Find::Range { lastkey: 0, keystep: 1, limit: 0 },
        }],
        ..spec!(
            Spop,
            "spop",
            -2,
            &["write", "fast"],
            (1, 1, 1),
            "set",
            "1.0.0",
            "Remove and return one or multiple random members from a set"
        )
    },
    Spec {
        acl: &["@set"],
        tips: &["nondeterministic_output"],
        keys: &[KeySpec {
            notes: "",
            flags: &["RO", "access"],
            begin: Begin::Index(1),
            find: Find::Range { lastkey: 0, keystep: 1, limit: 0 },
        }],
        ..spec!(
            Srandmember,
            "srandmember",
            -2,
            &["readonly"],
            (1, 1, 1),
            "set",
            "1.0.0",
            "Get one or multiple random members from a set"
        )
    },
    Spec {
        acl: &["@set"],
        keys: &[
            KeySpec {
                notes: "",
                flags: &["RW", "access", "delete"],
                begin: Begin::Index(1),
                find: Find::Range { lastkey: 0, keystep: 1, limit: 0 },
            },
            KeySpec {
                notes: "",
                flags: &["RW", "insert"],
                begin: Begin::Index(2),
                find: Find::Range { lastkey: 0, keystep: 1, limit: 0 },
            },
        ],
        ..spec!(
            Smove,
            "smove",
            4,
            &["write", "fast"],
            (1, 2, 1),
            "set",
            "1.0.0",
            "Move a member from one set to another"
        )
    },
    Spec {
        acl: &["@set"],
        tips: &["nondeterministic_output_order"],
        keys: &[KeySpec {
            notes: "",
            flags: &["RO", "access"],
            begin: Begin::Index(1),
            find: Find::Range { lastkey: -1, keystep: 1, limit: 0 },
        }],
        ..spec!(Sinter, "sinter", -2, &["readonly"], (1, -1, 1), "set", "1.0.0", "Intersect multiple sets")
    },
    Spec {
        acl: &["@set"],
        keys: &[KeySpec {
            notes: "",
            flags: &["RO", "access"],
            begin: Begin::Index(1),
            find: Find::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 },
        }],
        ..spec!(
            Sintercard,
            "sintercard",
            -3,
            &["readonly", "movablekeys"],
            (0, 0, 0),
            "set",
            "7.0.0",
            "Intersect multiple sets and return the cardinality of the result"
        )
    },
    Spec {
        acl: &["@set"],
        tips: &["nondeterministic_output_order"],
        keys: &[KeySpec {
            notes: "",
            flags: &["RO", "access"],
            begin: Begin::Index(1),
            find: Find::Range { lastkey: -1, keystep: 1, limit: 0 },
        }],
        ..spec!(Sunion, "sunion", -2, &["readonly"], (1, -1, 1), "set", "1.0.0", "Add multiple sets")
    },
    Spec {
        acl: &["@set"],
        tips: &["nondeterministic_output_order"],
        keys: &[KeySpec {
            notes: "",
            flags: &["RO", "access"],
            begin: Begin::Index(1),
            find: Find::Range { lastkey: -1, keystep: 1, limit: 0 },
        }],
        ..spec!(Sdiff, "sdiff", -2, &["readonly"], (1, -1, 1), "set", "1.0.0", "Subtract multiple sets")
    },
    Spec {
        acl: &["@set"],
        keys: &[
            KeySpec {
                notes: "",
                flags: &["RW", "update"],
                begin: Begin::Index(1),
                find: Find::Range { lastkey: 0, keystep: 1, limit: 0 },
            },
            KeySpec {
                notes: "",
                flags: &["RO", "access"],
                begin: Begin::Index(2),
                find: Find::Range { lastkey: -1, keystep: 1, limit: 0 },
            },
        ],
        ..spec!(
            Sinterstore,
            "sinterstore",
            -3,
            &["write", "denyoom"],
            (1, -1, 1),
            "set",
            "1.0.0",
            "Intersect multiple sets and store the resulting set in a key"
        )
    },
    Spec {
        acl: &["@set"],
        keys: &[
            KeySpec {
                notes: "",
                flags: &["OW", "update"],
                begin: Begin::Index(1),
                find: Find::Range { lastkey: 0, keystep: 1, limit: 0 },
            },
            KeySpec {
                notes: "",
                flags: &["RO", "access"],
                begin: Begin::Index(2),
                find: Find::Range { lastkey: -1, keystep: 1, limit: 0 },
            },
        ],
        ..spec!(
            Sunionstore,
            "sunionstore",
            -3,
            &["write", "denyoom"],
            (1, -1, 1),
            "set",
            "1.0.0",
            "Add multiple sets and store the resulting set in a key"
        )
    },
    Spec {
        acl: &["@set"],
        keys: &[
            KeySpec {
                notes: "",
                flags: &["OW", "update"],
                begin: Begin::Index(1),
                find: Find::Range { lastkey: 0, keystep: 1, limit: 0 },
            },
            KeySpec {
                notes: "",
                flags: &["RO", "access"],
                begin: Begin::Index(2),
                find: Find::Range { lastkey: -1, keystep: 1, limit: 0 },
            },
        ],
        ..spec!(
            Sdiffstore,
            "sdiffstore",
            -3,
            &["write", "denyoom"],
            (1, -1, 1),
            "set",
            "1.0.0",
            "Subtract multiple sets and store the resulting set in a key"
        )
    },
    Spec {
        acl: &["@set"],
        tips: &["nondeterministic_output"],
        keys: &[KeySpec {
            notes: "",
            flags: &["RO", "access"],
            begin: Begin::Index(1),
            find: Find::Range { lastkey: 0, keystep: 1, limit: 0 },
        }],
        ..spec!(Sscan, "sscan", -3, &["readonly"], (1, 1, 1), "set", "2.8.0", "Incrementally iterate Set elements")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zadd, "zadd", -4, &["write", "denyoom", "fast"], (1, 1, 1), "sorted-set", "1.2.0", "Add one or more members to a sorted set, or update its score if it already exists")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RW", "access", "update"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zincrby, "zincrby", 4, &["write", "denyoom", "fast"], (1, 1, 1), "sorted-set", "1.2.0", "Increment the score of a member in a sorted set")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RW", "delete"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zrem, "zrem", -3, &["write", "fast"], (1, 1, 1), "sorted-set", "1.2.0", "Remove one or more members from a sorted set")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RO"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zcard, "zcard", 2, &["readonly", "fast"], (1, 1, 1), "sorted-set", "1.2.0", "Get the number of members in a sorted set")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zscore, "zscore", 3, &["readonly", "fast"], (1, 1, 1), "sorted-set", "1.2.0", "Get the score associated with the given member in a sorted set")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zmscore, "zmscore", -3, &["readonly", "fast"], (1, 1, 1), "sorted-set", "6.2.0", "Get the score associated with the given members in a sorted set")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zrank, "zrank", 3, &["readonly", "fast"], (1, 1, 1), "sorted-set", "2.0.0", "Determine the index of a member in a sorted set")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zrevrank, "zrevrank", 3, &["readonly", "fast"], (1, 1, 1), "sorted-set", "2.0.0", "Determine the index of a member in a sorted set, with scores ordered from high to low")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zcount, "zcount", 4, &["readonly", "fast"], (1, 1, 1), "sorted-set", "2.0.0", "Count the members in a sorted set with scores within the given values")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zlexcount, "zlexcount", 4, &["readonly", "fast"], (1, 1, 1), "sorted-set", "2.8.9", "Count the number of members in a sorted set between a given lexicographical range")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zrange, "zrange", -4, &["readonly"], (1, 1, 1), "sorted-set", "1.2.0", "Return a range of members in a sorted set")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zrangebyscore, "zrangebyscore", -4, &["readonly"], (1, 1, 1), "sorted-set", "1.0.5", "Return a range of members in a sorted set, by score")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zrevrangebyscore, "zrevrangebyscore", -4, &["readonly"], (1, 1, 1), "sorted-set", "2.2.0", "Return a range of members in a sorted set, by score, with scores ordered from high to low")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zrangebylex, "zrangebylex", -4, &["readonly"], (1, 1, 1), "sorted-set", "2.8.9", "Return a range of members in a sorted set, by lexicographical range")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zrevrangebylex, "zrevrangebylex", -4, &["readonly"], (1, 1, 1), "sorted-set", "2.8.9", "Return a range of members in a sorted set, by lexicographical range, ordered from higher to lower strings.")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zrevrange, "zrevrange", -4, &["readonly"], (1, 1, 1), "sorted-set", "1.2.0", "Return a range of members in a sorted set, by index, with scores ordered from high to low")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["OW", "update"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }, KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zrangestore, "zrangestore", -5, &["write", "denyoom"], (1, 2, 1), "sorted-set", "6.2.0", "Store a range of members from sorted set into another key")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zpopmin, "zpopmin", -2, &["write", "fast"], (1, 1, 1), "sorted-set", "5.0.0", "Remove and return members with the lowest scores in a sorted set")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zpopmax, "zpopmax", -2, &["write", "fast"], (1, 1, 1), "sorted-set", "5.0.0", "Remove and return members with the highest scores in a sorted set")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 } }],
        ..spec!(Zmpop, "zmpop", -4, &["write", "movablekeys"], (0, 0, 0), "sorted-set", "7.0.0", "Remove and return members with scores in a sorted set")
    },
    Spec {
        acl: &["@sortedset"],
        tips: &["nondeterministic_output"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zrandmember, "zrandmember", -2, &["readonly"], (1, 1, 1), "sorted-set", "6.2.0", "Get one or multiple random elements from a sorted set")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RW", "delete"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zremrangebyrank, "zremrangebyrank", 4, &["write"], (1, 1, 1), "sorted-set", "2.0.0", "Remove all members in a sorted set within the given indexes")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RW", "delete"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zremrangebyscore, "zremrangebyscore", 4, &["write"], (1, 1, 1), "sorted-set", "1.2.0", "Remove all members in a sorted set within the given scores")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RW", "delete"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zremrangebylex, "zremrangebylex", 4, &["write"], (1, 1, 1), "sorted-set", "2.8.9", "Remove all members in a sorted set between the given lexicographical range")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 } }],
        ..spec!(Zunion, "zunion", -3, &["readonly", "movablekeys"], (0, 0, 0), "sorted-set", "6.2.0", "Add multiple sorted sets")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 } }],
        ..spec!(Zinter, "zinter", -3, &["readonly", "movablekeys"], (0, 0, 0), "sorted-set", "6.2.0", "Intersect multiple sorted sets")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 } }],
        ..spec!(Zdiff, "zdiff", -3, &["readonly", "movablekeys"], (0, 0, 0), "sorted-set", "6.2.0", "Subtract multiple sorted sets")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["OW", "update"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }, KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 } }],
        ..spec!(Zunionstore, "zunionstore", -4, &["write", "denyoom", "movablekeys"], (1, 1, 1), "sorted-set", "2.0.0", "Add multiple sorted sets and store the resulting sorted set in a new key")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["OW", "update"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }, KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 } }],
        ..spec!(Zinterstore, "zinterstore", -4, &["write", "denyoom", "movablekeys"], (1, 1, 1), "sorted-set", "2.0.0", "Intersect multiple sorted sets and store the resulting sorted set in a new key")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["OW", "update"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }, KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 } }],
        ..spec!(Zdiffstore, "zdiffstore", -4, &["write", "denyoom", "movablekeys"], (1, 1, 1), "sorted-set", "6.2.0", "Subtract multiple sorted sets and store the resulting sorted set in a new key")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 } }],
        ..spec!(Zintercard, "zintercard", -3, &["readonly", "movablekeys"], (0, 0, 0), "sorted-set", "7.0.0", "Intersect multiple sorted sets and return the cardinality of the result")
    },
    Spec {
        acl: &["@sortedset"],
        tips: &["nondeterministic_output"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zscan, "zscan", -3, &["readonly"], (1, 1, 1), "sorted-set", "2.8.0", "Incrementally iterate sorted sets elements and associated scores")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range { lastkey: -2, keystep: 1, limit: 0 } }],
        ..spec!(Bzpopmin, "bzpopmin", -3, &["write", "noscript", "blocking", "fast"], (1, -2, 1), "sorted-set", "5.0.0", "Remove and return the member with the lowest score from one or more sorted sets, or block until one is available")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range { lastkey: -2, keystep: 1, limit: 0 } }],
        ..spec!(Bzpopmax, "bzpopmax", -3, &["write", "noscript", "blocking", "fast"], (1, -2, 1), "sorted-set", "5.0.0", "Remove and return the member with the highest score from one or more sorted sets, or block until one is available")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RW", "access", "delete"], begin: Begin::Index(2), find: Find::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 } }],
        ..spec!(Bzmpop, "bzmpop", -5, &["write", "blocking", "movablekeys"], (0, 0, 0), "sorted-set", "7.0.0", "Remove and return members with scores in a sorted set or block until one is available")
    },
    Spec {
        acl: &["@transaction"],
        ..spec!(Multi, "multi", 1, &["noscript", "loading", "stale", "fast", "allow_busy"], (0, 0, 0), "transactions", "1.2.0", "Mark the start of a transaction block")
    },
    Spec {
        acl: &["@transaction"],
        ..spec!(Exec, "exec", 1, &["noscript", "loading", "stale", "skip_slowlog"], (0, 0, 0), "transactions", "1.2.0", "Execute all commands issued after MULTI")
    },
    Spec {
        acl: &["@transaction"],
        ..spec!(Discard, "discard", 1, &["noscript", "loading", "stale", "fast", "allow_busy"], (0, 0, 0), "transactions", "2.0.0", "Discard all commands issued after MULTI")
    },
    Spec {
        acl: &["@transaction"],
        keys: &[KeySpec { notes: "", flags: &["RO"], begin: Begin::Index(1), find: Find::Range { lastkey: -1, keystep: 1, limit: 0 } }],
        ..spec!(Watch, "watch", -2, &["noscript", "loading", "stale", "fast", "allow_busy"], (1, -1, 1), "transactions", "2.2.0", "Watch the given keys to determine execution of the MULTI/EXEC block")
    },
    Spec {
        acl: &["@transaction"],
        ..spec!(Unwatch, "unwatch", 1, &["noscript", "loading", "stale", "fast", "allow_busy"], (0, 0, 0), "transactions", "2.2.0", "Forget about all watched keys")
    },
    Spec {
        acl: &["@keyspace"],
        keys: &[KeySpec { notes: "", flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }, KeySpec { notes: "", flags: &["OW", "update"], begin: Begin::Index(2), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Rename, "rename", 3, &["write"], (1, 2, 1), "generic", "1.0.0", "Rename a key")
    },
    Spec {
        acl: &["@keyspace"],
        keys: &[KeySpec { notes: "", flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }, KeySpec { notes: "", flags: &["OW", "insert"], begin: Begin::Index(2), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Renamenx, "renamenx", 3, &["write", "fast"], (1, 2, 1), "generic", "1.0.0", "Rename a key, only if the new key does not exist")
    },
    Spec {
        subcommands: &[
            spec!(Acl, "acl|deluser", -3, &["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "6.0.0", "Remove the specified ACL users and the associated rules"),
            spec!(Acl, "acl|load", 2, &["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "6.0.0", "Reload the ACLs from the configured ACL file"),
            spec!(Acl, "acl|getuser", 3, &["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "6.0.0", "Get the rules for a specific ACL user"),
            spec!(Acl, "acl|save", 2, &["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "6.0.0", "Save the current ACL rules in the configured ACL file"),
            spec!(Acl, "acl|whoami", 2, &["noscript", "loading", "stale"], (0, 0, 0), "server", "6.0.0", "Return the name of the user associated to the current connection"),
            spec!(Acl, "acl|users", 2, &["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "6.0.0", "List the username of all the configured ACL rules"),
            spec!(Acl, "acl|setuser", -3, &["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "6.0.0", "Modify or create the rules for a specific ACL user"),
            spec!(Acl, "acl|help", 2, &["loading", "stale"], (0, 0, 0), "server", "6.0.0", "Show helpful text about the different subcommands"),
            spec!(Acl, "acl|list", 2, &["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "6.0.0", "List the current ACL rules in ACL config file format"),
            spec!(Acl, "acl|cat", -2, &["noscript", "loading", "stale"], (0, 0, 0), "server", "6.0.0", "List the ACL categories or the commands inside a category"),
            spec!(Acl, "acl|genpass", -2, &["noscript", "loading", "stale"], (0, 0, 0), "server", "6.0.0", "Generate a pseudorandom secure password to use for ACL users"),
            spec!(Acl, "acl|log", -2, &["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "6.0.0", "List latest events denied because of ACLs in place"),
            spec!(Acl, "acl|dryrun", -4, &["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "7.0.0", "Returns whether the user can execute the given command without executing the command."),
        ],
        ..spec!(Acl, "acl", -2, &[], (0, 0, 0), "server", "6.0.0", "A container for Access List Control commands ")
    },
    spec!(Subscribe, "subscribe", -2, &["pubsub", "noscript", "loading", "stale"], (0, 0, 0), "pubsub", "2.0.0", "Listen for messages published to the given channels"),
    spec!(Unsubscribe, "unsubscribe", -1, &["pubsub", "noscript", "loading", "stale"], (0, 0, 0), "pubsub", "2.0.0", "Stop listening for messages posted to the given channels"),
    spec!(Psubscribe, "psubscribe", -2, &["pubsub", "noscript", "loading", "stale"], (0, 0, 0), "pubsub", "2.0.0", "Listen for messages published to channels matching the given patterns"),
    spec!(Punsubscribe, "punsubscribe", -1, &["pubsub", "noscript", "loading", "stale"], (0, 0, 0), "pubsub", "2.0.0", "Stop listening for messages posted to channels matching the given patterns"),
    spec!(Publish, "publish", 3, &["pubsub", "loading", "stale", "fast"], (0, 0, 0), "pubsub", "2.0.0", "Post a message to a channel"),
    Spec {
        subcommands: &[
            spec!(Pubsub, "pubsub|numsub", -2, &["pubsub", "loading", "stale"], (0, 0, 0), "pubsub", "2.8.0", "Get the count of subscribers for channels"),
            spec!(Pubsub, "pubsub|numpat", 2, &["pubsub", "loading", "stale"], (0, 0, 0), "pubsub", "2.8.0", "Get the count of unique patterns pattern subscriptions"),
            spec!(Pubsub, "pubsub|channels", -2, &["pubsub", "loading", "stale"], (0, 0, 0), "pubsub", "2.8.0", "List active channels"),
            spec!(Pubsub, "pubsub|help", 2, &["loading", "stale"], (0, 0, 0), "pubsub", "6.2.0", "Show helpful text about the different subcommands"),
            spec!(Pubsub, "pubsub|shardchannels", -2, &["pubsub", "loading", "stale"], (0, 0, 0), "pubsub", "7.0.0", "List active shard channels"),
            spec!(Pubsub, "pubsub|shardnumsub", -2, &["pubsub", "loading", "stale"], (0, 0, 0), "pubsub", "7.0.0", "Get the count of subscribers for shard channels"),
        ],
        ..spec!(Pubsub, "pubsub", -2, &[], (0, 0, 0), "pubsub", "2.8.0", "A container for Pub/Sub commands")
    },
    Spec {
        keys: &[range(&["not_key"], 1, -1, 1)],
        ..spec!(Ssubscribe, "ssubscribe", -2, &["pubsub", "noscript", "loading", "stale"], (1, -1, 1), "pubsub", "7.0.0", "Listen for messages published to the given shard channels")
    },
    Spec {
        keys: &[range(&["not_key"], 1, -1, 1)],
        ..spec!(Sunsubscribe, "sunsubscribe", -1, &["pubsub", "noscript", "loading", "stale"], (1, -1, 1), "pubsub", "7.0.0", "Stop listening for messages posted to the given shard channels")
    },
    Spec {
        keys: &[range(&["not_key"], 1, 0, 1)],
        ..spec!(Spublish, "spublish", 3, &["pubsub", "loading", "stale", "fast"], (1, 1, 1), "pubsub", "7.0.0", "Post a message to a shard channel")
    },
    spec!(Replicaof, "replicaof", 3, &["admin", "noscript", "stale", "no_async_loading"], (0, 0, 0), "server", "5.0.0", "Make the server a replica of another instance, or promote it as master."),
    spec!(Slaveof, "slaveof", 3, &["admin", "noscript", "stale", "no_async_loading"], (0, 0, 0), "server", "1.0.0", "Make the server a replica of another instance, or promote it as master."),
    Spec {
        acl: &["@admin", "@dangerous"],
        ..spec!(Role, "role", 1, &["noscript", "loading", "stale", "fast"], (0, 0, 0), "server", "2.8.12", "Return the role of the instance in the context of replication")
    },
    spec!(Replconf, "replconf", -1, &["admin", "noscript", "loading", "stale", "allow_busy"], (0, 0, 0), "server", "3.0.0", "An internal command for configuring the replication stream"),
    spec!(Psync, "psync", -3, &["admin", "noscript", "no_async_loading", "no_multi"], (0, 0, 0), "server", "2.8.0", "Internal command used for replication"),
    spec!(Sync, "sync", 1, &["admin", "noscript", "no_async_loading", "no_multi"], (0, 0, 0), "server", "1.0.0", "Internal command used for replication"),
    Spec {
        acl: &["@connection"],
        tips: &["request_policy:all_shards", "response_policy:agg_min"],
        ..spec!(Wait, "wait", 3, &["noscript"], (0, 0, 0), "generic", "3.0.0", "Wait for the synchronous replication of all the write commands sent in the context of the current connection")
    },
];
