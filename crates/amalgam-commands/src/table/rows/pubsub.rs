//! The command table's rows of the RESP front end's `resp/pubsub.rs` (amalgam-server) (`table.rs` says what a row holds).

use super::super::{range, Cmd, Spec};

/// In the order `COMMANDS` lists them.
pub(super) const ROWS: &[Spec] = &[
    spec!(
        Subscribe,
        "subscribe",
        -2,
        &["pubsub", "noscript", "loading", "stale"],
        (0, 0, 0),
        "pubsub",
        "2.0.0",
        "Listen for messages published to the given channels"
    ),
    spec!(
        Unsubscribe,
        "unsubscribe",
        -1,
        &["pubsub", "noscript", "loading", "stale"],
        (0, 0, 0),
        "pubsub",
        "2.0.0",
        "Stop listening for messages posted to the given channels"
    ),
    spec!(
        Psubscribe,
        "psubscribe",
        -2,
        &["pubsub", "noscript", "loading", "stale"],
        (0, 0, 0),
        "pubsub",
        "2.0.0",
        "Listen for messages published to channels matching the given patterns"
    ),
    spec!(
        Punsubscribe,
        "punsubscribe",
        -1,
        &["pubsub", "noscript", "loading", "stale"],
        (0, 0, 0),
        "pubsub",
        "2.0.0",
        "Stop listening for messages posted to channels matching the given patterns"
    ),
    spec!(
        Publish,
        "publish",
        3,
        &["pubsub", "loading", "stale", "fast"],
        (0, 0, 0),
        "pubsub",
        "2.0.0",
        "Post a message to a channel"
    ),
    Spec {
        subcommands: &[
            spec!(
                Pubsub,
                "pubsub|numsub",
                -2,
                &["pubsub", "loading", "stale"],
                (0, 0, 0),
                "pubsub",
                "2.8.0",
                "Get the count of subscribers for channels"
            ),
            spec!(
                Pubsub,
                "pubsub|numpat",
                2,
                &["pubsub", "loading", "stale"],
                (0, 0, 0),
                "pubsub",
                "2.8.0",
                "Get the count of unique patterns pattern subscriptions"
            ),
            spec!(
                Pubsub,
                "pubsub|channels",
                -2,
                &["pubsub", "loading", "stale"],
                (0, 0, 0),
                "pubsub",
                "2.8.0",
                "List active channels"
            ),
            spec!(
                Pubsub,
                "pubsub|help",
                2,
                &["loading", "stale"],
                (0, 0, 0),
                "pubsub",
                "6.2.0",
                "Show helpful text about the different subcommands"
            ),
            spec!(
                Pubsub,
                "pubsub|shardchannels",
                -2,
                &["pubsub", "loading", "stale"],
                (0, 0, 0),
                "pubsub",
                "7.0.0",
                "List active shard channels"
            ),
            spec!(
                Pubsub,
                "pubsub|shardnumsub",
                -2,
                &["pubsub", "loading", "stale"],
                (0, 0, 0),
                "pubsub",
                "7.0.0",
                "Get the count of subscribers for shard channels"
            ),
        ],
        ..spec!(Pubsub, "pubsub", -2, &[], (0, 0, 0), "pubsub", "2.8.0", "A container for Pub/Sub commands")
    },
    Spec {
        keys: &[range(&["not_key"], 1, -1, 1)],
        ..spec!(
            Ssubscribe,
            "ssubscribe",
            -2,
            &["pubsub", "noscript", "loading", "stale"],
            (1, -1, 1),
            "pubsub",
            "7.0.0",
            "Listen for messages published to the given shard channels"
        )
    },
    Spec {
        keys: &[range(&["not_key"], 1, -1, 1)],
        ..spec!(
            Sunsubscribe,
            "sunsubscribe",
            -1,
            &["pubsub", "noscript", "loading", "stale"],
            (1, -1, 1),
            "pubsub",
            "7.0.0",
            "Stop listening for messages posted to the given shard channels"
        )
    },
    Spec {
        keys: &[range(&["not_key"], 1, 0, 1)],
        ..spec!(
            Spublish,
            "spublish",
            3,
            &["pubsub", "loading", "stale", "fast"],
            (1, 1, 1),
            "pubsub",
            "7.0.0",
            "Post a message to a shard channel"
        )
    },
];
