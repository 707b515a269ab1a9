//! The command table's rows of amalgam-server's `repl.rs` (`table.rs` says what a row holds).

use super::super::{Cmd, Spec};

/// In the order `COMMANDS` lists them.
pub(super) const ROWS: &[Spec] = &[
    spec!(Replicaof, "replicaof", 3, &["admin", "noscript", "stale", "no_async_loading"], (0, 0, 0), "server", "5.0.0", "Make the server a replica of another instance, or promote it as master."),
    spec!(Failover, "failover", -1, &["admin", "noscript", "stale"], (0, 0, 0), "server", "6.2.0", "Start a coordinated failover between this server and one of its replicas."),
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
