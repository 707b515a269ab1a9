//! The command table's rows of `sort.rs` (`table.rs` says what a row holds).
//!
//! Redis 7.0 marks the keys SORT's BY and GET patterns read, and its STORE
//! destination, as `unknown` key specifications: the first derive from
//! the sorted collection's contents, the second may be anywhere among the
//! options. Their keys come from SORT's own key finder
//! (`table::sort_keys`, Redis's `sortGetKeys`), as COMMAND GETKEYS, ACL and
//! MULTI ask for them.

use super::super::{range, Begin, Cmd, Find, KeySpec, Spec};

/// The patterns' reads (BY, GET): `unknown`, as Redis states it.
const PATTERN_READS: KeySpec = KeySpec {
    notes: "For the optional BY/GET keyword. It is marked 'unknown' because the key names derive from the content of the key we sort",
    flags: &["RO", "access"],
    begin: Begin::Unknown,
    find: Find::Unknown,
};

/// In the order `COMMANDS` lists them.
pub(super) const ROWS: &[Spec] = &[
    Spec {
        acl: &["@set", "@sortedset", "@list", "@dangerous"],
        keys: &[
            range(&["RO", "access"], 1, 0, 1),
            PATTERN_READS,
            KeySpec {
                notes: "For the optional STORE keyword. It is marked 'unknown' because the keyword can appear anywhere in the argument array",
                flags: &["OW", "update"],
                begin: Begin::Unknown,
                find: Find::Unknown,
            },
        ],
        ..spec!(
            Sort,
            "sort",
            -2,
            &["write", "denyoom", "movablekeys"],
            (1, 1, 1),
            "generic",
            "1.0.0",
            "Sort the elements in a list, set or sorted set"
        )
    },
    Spec {
        acl: &["@set", "@sortedset", "@list", "@dangerous"],
        keys: &[range(&["RO", "access"], 1, 0, 1), PATTERN_READS],
        ..spec!(
            SortRo,
            "sort_ro",
            -2,
            &["readonly", "movablekeys"],
            (1, 1, 1),
            "generic",
            "7.0.0",
            "Sort the elements in a list, set or sorted set. Read-only variant of SORT."
        )
    },
];
