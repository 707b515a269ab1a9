//! The command table's rows of `memory.rs` (`table.rs` says what a row holds).

use super::super::{range, Cmd, Spec};

/// In the order `COMMANDS` lists them.
pub(super) const ROWS: &[Spec] = &[Spec {
    subcommands: &[
        Spec {
            tips: &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"],
            ..spec!(Memory, "memory|doctor", 2, &[], (0, 0, 0), "server", "4.0.0", "Outputs memory problems report")
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
            ..spec!(Memory, "memory|purge", 2, &[], (0, 0, 0), "server", "4.0.0", "Ask the allocator to release memory")
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
    ..spec!(Memory, "memory", -2, &[], (0, 0, 0), "server", "4.0.0", "A container for memory diagnostics commands")
}];
