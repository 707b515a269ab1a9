//! The command table's rows of `set.rs` (`table.rs` says what a row holds).

use super::super::{Begin, Cmd, Find, KeySpec, Spec};

/// In the order `COMMANDS` lists them.
pub(super) const ROWS: &[Spec] = &[
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
];
