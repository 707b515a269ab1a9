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
];
