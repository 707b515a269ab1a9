//! The command table's rows of `stream.rs` (`table.rs` says what a row holds),
//! from redis-server 7.0.15's COMMAND INFO (scripts/command-rows.py).

use super::super::{Begin, Cmd, Find, KeySpec, Spec};

/// In the order `COMMANDS` lists them.
pub(super) const ROWS: &[Spec] = &[
    Spec {
        acl: &["@stream"],
        tips: &["nondeterministic_output"],
        keys: &[KeySpec { notes: "UPDATE instead of INSERT because of the optional trimming feature", flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Xadd, "xadd", -5, &["write", "denyoom", "fast"], (1, 1, 1), "stream", "5.0.0", "Appends a new entry to a stream")
    },
    Spec {
        acl: &["@stream"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Xrange, "xrange", -4, &["readonly"], (1, 1, 1), "stream", "5.0.0", "Return a range of elements in a stream, with IDs matching the specified IDs interval")
    },
    Spec {
        acl: &["@stream"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Xrevrange, "xrevrange", -4, &["readonly"], (1, 1, 1), "stream", "5.0.0", "Return a range of elements in a stream, with IDs matching the specified IDs interval, in reverse order (from greater to smaller IDs) compared to XRANGE")
    },
    Spec {
        acl: &["@stream"],
        keys: &[KeySpec { notes: "", flags: &["RO"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Xlen, "xlen", 2, &["readonly", "fast"], (1, 1, 1), "stream", "5.0.0", "Return the number of entries in a stream")
    },
    Spec {
        acl: &["@stream"],
        keys: &[KeySpec { notes: "", flags: &["RW", "delete"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Xdel, "xdel", -3, &["write", "fast"], (1, 1, 1), "stream", "5.0.0", "Removes the specified entries from the stream. Returns the number of items actually deleted, that may be different from the number of IDs passed in case certain IDs do not exist.")
    },
    Spec {
        acl: &["@stream"],
        tips: &["nondeterministic_output"],
        keys: &[KeySpec { notes: "", flags: &["RW", "delete"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Xtrim, "xtrim", -4, &["write"], (1, 1, 1), "stream", "5.0.0", "Trims the stream to (approximately if '~' is passed) a certain size")
    },
    Spec {
        acl: &["@stream"],
        keys: &[KeySpec { notes: "", flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Xsetid, "xsetid", -3, &["write", "denyoom", "fast"], (1, 1, 1), "stream", "5.0.0", "An internal command for replicating stream values")
    },
    Spec {
        acl: &["@stream"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Keyword("STREAMS", 1), find: Find::Range { lastkey: -1, keystep: 1, limit: 2 } }],
        ..spec!(Xread, "xread", -4, &["readonly", "blocking", "movablekeys"], (0, 0, 0), "stream", "5.0.0", "Return never seen elements in multiple streams, with IDs greater than the ones reported by the caller for each stream. Can block.")
    },
    Spec {
        acl: &["@stream"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Keyword("STREAMS", 4), find: Find::Range { lastkey: -1, keystep: 1, limit: 2 } }],
        ..spec!(Xreadgroup, "xreadgroup", -7, &["write", "blocking", "movablekeys"], (0, 0, 0), "stream", "5.0.0", "Return new entries from a stream using a consumer group, or access the history of the pending entries for a given consumer. Can block.")
    },
    Spec {
        acl: &["@stream"],
        keys: &[KeySpec { notes: "", flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Xack, "xack", -4, &["write", "fast"], (1, 1, 1), "stream", "5.0.0", "Marks a pending message as correctly processed, effectively removing it from the pending entries list of the consumer group. Return value of the command is the number of messages successfully acknowledged, that is, the IDs we were actually able to resolve in the PEL.")
    },
    Spec {
        acl: &["@stream"],
        tips: &["nondeterministic_output"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Xpending, "xpending", -3, &["readonly"], (1, 1, 1), "stream", "5.0.0", "Return information and entries from a stream consumer group pending entries list, that are messages fetched but never acknowledged.")
    },
    Spec {
        acl: &["@stream"],
        tips: &["nondeterministic_output"],
        keys: &[KeySpec { notes: "", flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Xclaim, "xclaim", -6, &["write", "fast"], (1, 1, 1), "stream", "5.0.0", "Changes (or acquires) ownership of a message in a consumer group, as if the message was delivered to the specified consumer.")
    },
    Spec {
        acl: &["@stream"],
        tips: &["nondeterministic_output"],
        keys: &[KeySpec { notes: "", flags: &["RW", "delete"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Xautoclaim, "xautoclaim", -6, &["write", "fast"], (1, 1, 1), "stream", "6.2.0", "Changes (or acquires) ownership of messages in a consumer group, as if the messages were delivered to the specified consumer.")
    },
    Spec {
        subcommands: &[
        Spec {
            acl: &["@stream"],
            keys: &[KeySpec { notes: "", flags: &["RW", "insert"], begin: Begin::Index(2), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
            ..spec!(Xgroup, "xgroup|create", -5, &["write", "denyoom"], (2, 2, 1), "stream", "5.0.0", "Create a consumer group.")
        },
        Spec {
            acl: &["@stream"],
            keys: &[KeySpec { notes: "", flags: &["RW", "insert"], begin: Begin::Index(2), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
            ..spec!(Xgroup, "xgroup|createconsumer", 5, &["write", "denyoom"], (2, 2, 1), "stream", "6.2.0", "Create a consumer in a consumer group.")
        },
        Spec {
            acl: &["@stream"],
            keys: &[KeySpec { notes: "", flags: &["RW", "delete"], begin: Begin::Index(2), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
            ..spec!(Xgroup, "xgroup|delconsumer", 5, &["write"], (2, 2, 1), "stream", "5.0.0", "Delete a consumer from a consumer group.")
        },
        Spec {
            acl: &["@stream"],
            keys: &[KeySpec { notes: "", flags: &["RW", "delete"], begin: Begin::Index(2), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
            ..spec!(Xgroup, "xgroup|destroy", 4, &["write"], (2, 2, 1), "stream", "5.0.0", "Destroy a consumer group.")
        },
        Spec {
            acl: &["@stream"],
            keys: &[KeySpec { notes: "", flags: &["RW", "update"], begin: Begin::Index(2), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
            ..spec!(Xgroup, "xgroup|setid", -5, &["write"], (2, 2, 1), "stream", "5.0.0", "Set a consumer group to an arbitrary last delivered ID value.")
        },
        Spec {
            acl: &["@stream"],
            ..spec!(Xgroup, "xgroup|help", 2, &["loading", "stale"], (0, 0, 0), "stream", "5.0.0", "Show helpful text about the different subcommands")
        },
        ],
        ..spec!(Xgroup, "xgroup", -2, &[], (0, 0, 0), "stream", "5.0.0", "A container for consumer groups commands")
    },
    Spec {
        subcommands: &[
        Spec {
            acl: &["@stream"],
            keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
            ..spec!(Xinfo, "xinfo|stream", -3, &["readonly"], (2, 2, 1), "stream", "5.0.0", "Get information about a stream")
        },
        Spec {
            acl: &["@stream"],
            keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
            ..spec!(Xinfo, "xinfo|groups", 3, &["readonly"], (2, 2, 1), "stream", "5.0.0", "List the consumer groups of a stream")
        },
        Spec {
            acl: &["@stream"],
            tips: &["nondeterministic_output"],
            keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
            ..spec!(Xinfo, "xinfo|consumers", 4, &["readonly"], (2, 2, 1), "stream", "5.0.0", "List the consumers in a consumer group")
        },
        Spec {
            acl: &["@stream"],
            ..spec!(Xinfo, "xinfo|help", 2, &["loading", "stale"], (0, 0, 0), "stream", "5.0.0", "Show helpful text about the different subcommands")
        },
        ],
        ..spec!(Xinfo, "xinfo", -2, &[], (0, 0, 0), "stream", "5.0.0", "A container for stream introspection commands")
    },
];
