//! Redis Cluster's commands (`amalgam-cluster` serves them; the RESP
//! front end's `resp/cluster.rs` routes them): CLUSTER and its
//! subcommands, ASKING, READONLY and READWRITE, as Redis 7.0 states them
//! (`scripts/command-rows.py`).

use super::super::{Cmd, Spec};

/// In the order `COMMANDS` lists them.
pub(super) const ROWS: &[Spec] = &[
    Spec {
        subcommands: &[
            Spec {
                ..spec!(
                    Cluster,
                    "cluster|addslots",
                    -3,
                    &["admin", "stale", "no_async_loading"],
                    (0, 0, 0),
                    "cluster",
                    "3.0.0",
                    "Assign new hash slots to receiving node"
                )
            },
            Spec {
                ..spec!(
                    Cluster,
                    "cluster|addslotsrange",
                    -4,
                    &["admin", "stale", "no_async_loading"],
                    (0, 0, 0),
                    "cluster",
                    "7.0.0",
                    "Assign new hash slots to receiving node"
                )
            },
            Spec {
                tips: &["nondeterministic_output"],
                ..spec!(
                    Cluster,
                    "cluster|bumpepoch",
                    2,
                    &["admin", "stale", "no_async_loading"],
                    (0, 0, 0),
                    "cluster",
                    "3.0.0",
                    "Advance the cluster config epoch"
                )
            },
            Spec {
                tips: &["nondeterministic_output"],
                ..spec!(
                    Cluster,
                    "cluster|count-failure-reports",
                    3,
                    &["admin", "stale"],
                    (0, 0, 0),
                    "cluster",
                    "3.0.0",
                    "Return the number of failure reports active for a given node"
                )
            },
            Spec {
                ..spec!(
                    Cluster,
                    "cluster|countkeysinslot",
                    3,
                    &["stale"],
                    (0, 0, 0),
                    "cluster",
                    "3.0.0",
                    "Return the number of local keys in the specified hash slot"
                )
            },
            Spec {
                ..spec!(
                    Cluster,
                    "cluster|delslots",
                    -3,
                    &["admin", "stale", "no_async_loading"],
                    (0, 0, 0),
                    "cluster",
                    "3.0.0",
                    "Set hash slots as unbound in receiving node"
                )
            },
            Spec {
                ..spec!(
                    Cluster,
                    "cluster|delslotsrange",
                    -4,
                    &["admin", "stale", "no_async_loading"],
                    (0, 0, 0),
                    "cluster",
                    "7.0.0",
                    "Set hash slots as unbound in receiving node"
                )
            },
            Spec {
                ..spec!(
                    Cluster,
                    "cluster|failover",
                    -2,
                    &["admin", "stale", "no_async_loading"],
                    (0, 0, 0),
                    "cluster",
                    "3.0.0",
                    "Forces a replica to perform a manual failover of its master."
                )
            },
            Spec {
                ..spec!(
                    Cluster,
                    "cluster|flushslots",
                    2,
                    &["admin", "stale", "no_async_loading"],
                    (0, 0, 0),
                    "cluster",
                    "3.0.0",
                    "Delete a node's own slots information"
                )
            },
            Spec {
                ..spec!(
                    Cluster,
                    "cluster|forget",
                    3,
                    &["admin", "stale", "no_async_loading"],
                    (0, 0, 0),
                    "cluster",
                    "3.0.0",
                    "Remove a node from the nodes table"
                )
            },
            Spec {
                tips: &["nondeterministic_output"],
                ..spec!(
                    Cluster,
                    "cluster|getkeysinslot",
                    4,
                    &["stale"],
                    (0, 0, 0),
                    "cluster",
                    "3.0.0",
                    "Return local key names in the specified hash slot"
                )
            },
            Spec {
                ..spec!(
                    Cluster,
                    "cluster|help",
                    2,
                    &["loading", "stale"],
                    (0, 0, 0),
                    "cluster",
                    "5.0.0",
                    "Show helpful text about the different subcommands"
                )
            },
            Spec {
                tips: &["nondeterministic_output"],
                ..spec!(
                    Cluster,
                    "cluster|info",
                    2,
                    &["stale"],
                    (0, 0, 0),
                    "cluster",
                    "3.0.0",
                    "Provides info about Redis Cluster node state"
                )
            },
            Spec {
                ..spec!(
                    Cluster,
                    "cluster|keyslot",
                    3,
                    &["stale"],
                    (0, 0, 0),
                    "cluster",
                    "3.0.0",
                    "Returns the hash slot of the specified key"
                )
            },
            Spec {
                tips: &["nondeterministic_output"],
                ..spec!(
                    Cluster,
                    "cluster|links",
                    2,
                    &["stale"],
                    (0, 0, 0),
                    "cluster",
                    "7.0.0",
                    "Returns a list of all TCP links to and from peer nodes in cluster"
                )
            },
            Spec {
                ..spec!(
                    Cluster,
                    "cluster|meet",
                    -4,
                    &["admin", "stale", "no_async_loading"],
                    (0, 0, 0),
                    "cluster",
                    "3.0.0",
                    "Force a node cluster to handshake with another node"
                )
            },
            Spec {
                ..spec!(Cluster, "cluster|myid", 2, &["stale"], (0, 0, 0), "cluster", "3.0.0", "Return the node id")
            },
            Spec {
                tips: &["nondeterministic_output"],
                ..spec!(
                    Cluster,
                    "cluster|nodes",
                    2,
                    &["stale"],
                    (0, 0, 0),
                    "cluster",
                    "3.0.0",
                    "Get Cluster config for the node"
                )
            },
            Spec {
                tips: &["nondeterministic_output"],
                ..spec!(
                    Cluster,
                    "cluster|replicas",
                    3,
                    &["admin", "stale"],
                    (0, 0, 0),
                    "cluster",
                    "5.0.0",
                    "List replica nodes of the specified master node"
                )
            },
            Spec {
                ..spec!(
                    Cluster,
                    "cluster|replicate",
                    3,
                    &["admin", "stale", "no_async_loading"],
                    (0, 0, 0),
                    "cluster",
                    "3.0.0",
                    "Reconfigure a node as a replica of the specified master node"
                )
            },
            Spec {
                ..spec!(
                    Cluster,
                    "cluster|reset",
                    -2,
                    &["admin", "noscript", "stale"],
                    (0, 0, 0),
                    "cluster",
                    "3.0.0",
                    "Reset a Redis Cluster node"
                )
            },
            Spec {
                ..spec!(
                    Cluster,
                    "cluster|saveconfig",
                    2,
                    &["admin", "stale", "no_async_loading"],
                    (0, 0, 0),
                    "cluster",
                    "3.0.0",
                    "Forces the node to save cluster state on disk"
                )
            },
            Spec {
                ..spec!(
                    Cluster,
                    "cluster|set-config-epoch",
                    3,
                    &["admin", "stale", "no_async_loading"],
                    (0, 0, 0),
                    "cluster",
                    "3.0.0",
                    "Set the configuration epoch in a new node"
                )
            },
            Spec {
                ..spec!(
                    Cluster,
                    "cluster|setslot",
                    -4,
                    &["admin", "stale", "no_async_loading"],
                    (0, 0, 0),
                    "cluster",
                    "3.0.0",
                    "Bind a hash slot to a specific node"
                )
            },
            Spec {
                tips: &["nondeterministic_output"],
                ..spec!(
                    Cluster,
                    "cluster|shards",
                    2,
                    &["stale"],
                    (0, 0, 0),
                    "cluster",
                    "7.0.0",
                    "Get array of cluster slots to node mappings"
                )
            },
            Spec {
                tips: &["nondeterministic_output"],
                ..spec!(
                    Cluster,
                    "cluster|slaves",
                    3,
                    &["admin", "stale"],
                    (0, 0, 0),
                    "cluster",
                    "3.0.0",
                    "List replica nodes of the specified master node"
                )
            },
            Spec {
                tips: &["nondeterministic_output"],
                ..spec!(
                    Cluster,
                    "cluster|slots",
                    2,
                    &["stale"],
                    (0, 0, 0),
                    "cluster",
                    "3.0.0",
                    "Get array of Cluster slot to node mappings"
                )
            },
        ],
        ..spec!(Cluster, "cluster", -2, &[], (0, 0, 0), "cluster", "3.0.0", "A container for cluster commands")
    },
    Spec {
        acl: &["@connection"],
        ..spec!(
            Asking,
            "asking",
            1,
            &["fast"],
            (0, 0, 0),
            "cluster",
            "3.0.0",
            "Sent by cluster clients after an -ASK redirect"
        )
    },
    Spec {
        acl: &["@connection"],
        ..spec!(
            Readonly,
            "readonly",
            1,
            &["loading", "stale", "fast"],
            (0, 0, 0),
            "cluster",
            "3.0.0",
            "Enables read queries for a connection to a cluster replica node"
        )
    },
    Spec {
        acl: &["@connection"],
        ..spec!(
            Readwrite,
            "readwrite",
            1,
            &["loading", "stale", "fast"],
            (0, 0, 0),
            "cluster",
            "3.0.0",
            "Disables read queries for a connection to a cluster replica node"
        )
    },
];
