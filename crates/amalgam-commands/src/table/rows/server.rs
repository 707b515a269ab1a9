//! The command table's rows of the RESP front end's `resp/server.rs`, `resp/client.rs`, `resp/command.rs`, `resp/monitor.rs` … (amalgam-server) (`table.rs` says what a row holds).

use super::super::{Cmd, Spec};

/// In the order `COMMANDS` lists them.
pub(super) const ROWS: &[Spec] = &[
    Spec {
        acl: &["@connection"],
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
        ..spec!(Ping, "ping", -1, &["fast"], (0, 0, 0), "connection", "1.0.0", "Ping the server")
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
                ..spec!(
                    Latency,
                    "latency|reset",
                    -2,
                    &["admin", "noscript", "loading", "stale"],
                    (0, 0, 0),
                    "server",
                    "2.8.13",
                    "Reset latency data for one or more events."
                )
            },
            Spec {
                tips: &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"],
                ..spec!(
                    Latency,
                    "latency|history",
                    3,
                    &["admin", "noscript", "loading", "stale"],
                    (0, 0, 0),
                    "server",
                    "2.8.13",
                    "Return timestamp-latency samples for the event."
                )
            },
            Spec {
                tips: &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"],
                ..spec!(
                    Latency,
                    "latency|doctor",
                    2,
                    &["admin", "noscript", "loading", "stale"],
                    (0, 0, 0),
                    "server",
                    "2.8.13",
                    "Return a human readable latency analysis report."
                )
            },
            spec!(
                Latency,
                "latency|help",
                2,
                &["loading", "stale"],
                (0, 0, 0),
                "server",
                "2.8.13",
                "Show helpful text about the different subcommands."
            ),
            Spec {
                tips: &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"],
                ..spec!(
                    Latency,
                    "latency|histogram",
                    -2,
                    &["admin", "noscript", "loading", "stale"],
                    (0, 0, 0),
                    "server",
                    "7.0.0",
                    "Return the cumulative distribution of latencies of a subset of commands or all."
                )
            },
            Spec {
                tips: &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"],
                ..spec!(
                    Latency,
                    "latency|graph",
                    3,
                    &["admin", "noscript", "loading", "stale"],
                    (0, 0, 0),
                    "server",
                    "2.8.13",
                    "Return a latency graph for the event."
                )
            },
            Spec {
                tips: &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"],
                ..spec!(
                    Latency,
                    "latency|latest",
                    2,
                    &["admin", "noscript", "loading", "stale"],
                    (0, 0, 0),
                    "server",
                    "2.8.13",
                    "Return the latest latency samples for all events."
                )
            },
        ],
        ..spec!(
            Latency,
            "latency",
            -2,
            &[],
            (0, 0, 0),
            "server",
            "2.8.13",
            "A container for latency diagnostics commands"
        )
    },
    Spec {
        ..spec!(
            Debug,
            "debug",
            -2,
            &["admin", "noscript", "loading", "stale"],
            (0, 0, 0),
            "server",
            "1.0.0",
            "A container for debugging commands"
        )
    },
    Spec {
        subcommands: &[
            Spec {
                tips: &["nondeterministic_output_order"],
                ..spec!(
                    Module,
                    "module|list",
                    2,
                    &["admin", "noscript"],
                    (0, 0, 0),
                    "server",
                    "4.0.0",
                    "List all modules loaded by the server"
                )
            },
            spec!(
                Module,
                "module|load",
                -3,
                &["admin", "noscript", "no_async_loading"],
                (0, 0, 0),
                "server",
                "4.0.0",
                "Load a module"
            ),
            spec!(
                Module,
                "module|loadex",
                -3,
                &["admin", "noscript", "no_async_loading"],
                (0, 0, 0),
                "server",
                "7.0.0",
                "Load a module with extended parameters"
            ),
            spec!(
                Module,
                "module|unload",
                3,
                &["admin", "noscript", "no_async_loading"],
                (0, 0, 0),
                "server",
                "4.0.0",
                "Unload a module"
            ),
            spec!(
                Module,
                "module|help",
                2,
                &["loading", "stale"],
                (0, 0, 0),
                "server",
                "5.0.0",
                "Show helpful text about the different subcommands"
            ),
        ],
        ..spec!(Module, "module", -2, &[], (0, 0, 0), "server", "4.0.0", "A container for module commands")
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
                    "client|pause",
                    -3,
                    &["admin", "noscript", "loading", "stale"],
                    (0, 0, 0),
                    "connection",
                    "2.9.50",
                    "Stop processing commands from clients for some time"
                )
            },
            Spec {
                acl: &["@connection"],
                ..spec!(
                    Client,
                    "client|unpause",
                    2,
                    &["admin", "noscript", "loading", "stale"],
                    (0, 0, 0),
                    "connection",
                    "6.2.0",
                    "Resume processing of clients that were paused"
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
                    "client|tracking",
                    -3,
                    &["noscript", "loading", "stale"],
                    (0, 0, 0),
                    "connection",
                    "6.0.0",
                    "Enable or disable server assisted client side caching support"
                )
            },
            Spec {
                acl: &["@connection"],
                ..spec!(
                    Client,
                    "client|caching",
                    3,
                    &["noscript", "loading", "stale"],
                    (0, 0, 0),
                    "connection",
                    "6.0.0",
                    "Instruct the server about tracking or not keys in the next request"
                )
            },
            Spec {
                acl: &["@connection"],
                ..spec!(
                    Client,
                    "client|getredir",
                    2,
                    &["noscript", "loading", "stale"],
                    (0, 0, 0),
                    "connection",
                    "6.0.0",
                    "Get tracking notifications redirection client ID if any"
                )
            },
            Spec {
                acl: &["@connection"],
                ..spec!(
                    Client,
                    "client|trackinginfo",
                    2,
                    &["noscript", "loading", "stale"],
                    (0, 0, 0),
                    "connection",
                    "6.2.0",
                    "Return information about server assisted client side caching for the current connection"
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
];
