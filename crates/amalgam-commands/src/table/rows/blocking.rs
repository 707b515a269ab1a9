//! The command table's rows of the RESP front end's `resp/blocking.rs` (amalgam-server) (`table.rs` says what a row holds).

use super::super::{Begin, Cmd, Find, KeySpec, Spec};

/// In the order `COMMANDS` lists them.
pub(super) const ROWS: &[Spec] = &[
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
];
