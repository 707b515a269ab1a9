//! The command table's rows of `bits.rs` (`table.rs` says what a row holds).

use super::super::{range, Cmd, Spec};

/// In the order `COMMANDS` lists them.
pub(super) const ROWS: &[Spec] = &[
    Spec {
        acl: &["@bitmap"],
        keys: &[range(&["RW", "access", "update"], 1, 0, 1)],
        ..spec!(
            Setbit,
            "setbit",
            4,
            &["write", "denyoom"],
            (1, 1, 1),
            "bitmap",
            "2.2.0",
            "Sets or clears the bit at offset in the string value stored at key"
        )
    },
    Spec {
        acl: &["@bitmap"],
        keys: &[range(&["RO", "access"], 1, 0, 1)],
        ..spec!(
            Getbit,
            "getbit",
            3,
            &["readonly", "fast"],
            (1, 1, 1),
            "bitmap",
            "2.2.0",
            "Returns the bit value at offset in the string value stored at key"
        )
    },
    Spec {
        acl: &["@bitmap"],
        keys: &[range(&["RO", "access"], 1, 0, 1)],
        ..spec!(Bitcount, "bitcount", -2, &["readonly"], (1, 1, 1), "bitmap", "2.6.0", "Count set bits in a string")
    },
    Spec {
        acl: &["@bitmap"],
        keys: &[range(&["RO", "access"], 1, 0, 1)],
        ..spec!(
            Bitpos,
            "bitpos",
            -3,
            &["readonly"],
            (1, 1, 1),
            "bitmap",
            "2.8.7",
            "Find first bit set or clear in a string"
        )
    },
    Spec {
        acl: &["@bitmap"],
        keys: &[range(&["OW", "update"], 2, 0, 1), range(&["RO", "access"], 3, -1, 1)],
        ..spec!(
            Bitop,
            "bitop",
            -4,
            &["write", "denyoom"],
            (2, -1, 1),
            "bitmap",
            "2.6.0",
            "Perform bitwise operations between strings"
        )
    },
    Spec {
        acl: &["@bitmap"],
        keys: &[range(&["RW", "access", "update", "variable_flags"], 1, 0, 1)
            .notes("This command allows both access and modification of the key")],
        ..spec!(
            Bitfield,
            "bitfield",
            -2,
            &["write", "denyoom"],
            (1, 1, 1),
            "bitmap",
            "3.2.0",
            "Perform arbitrary bitfield integer operations on strings"
        )
    },
    Spec {
        acl: &["@bitmap"],
        keys: &[range(&["RO", "access"], 1, 0, 1)],
        ..spec!(
            BitfieldRo,
            "bitfield_ro",
            -2,
            &["readonly", "fast"],
            (1, 1, 1),
            "bitmap",
            "6.0.0",
            "Perform arbitrary bitfield integer operations on strings. Read-only variant of BITFIELD"
        )
    },
];
