//! The command table's rows of `list.rs` (`table.rs` says what a row holds).

use super::super::{Begin, Cmd, Find, KeySpec, Spec};

/// In the order `COMMANDS` lists them.
pub(super) const ROWS: &[Spec] = &[
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
];
