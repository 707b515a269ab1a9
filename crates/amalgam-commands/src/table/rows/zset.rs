//! The command table's rows of `zset.rs`, `zset/algebra.rs` (`table.rs` says what a row holds).

use super::super::{Begin, Cmd, Find, KeySpec, Spec};

/// In the order `COMMANDS` lists them.
pub(super) const ROWS: &[Spec] = &[
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zadd, "zadd", -4, &["write", "denyoom", "fast"], (1, 1, 1), "sorted-set", "1.2.0", "Add one or more members to a sorted set, or update its score if it already exists")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RW", "access", "update"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zincrby, "zincrby", 4, &["write", "denyoom", "fast"], (1, 1, 1), "sorted-set", "1.2.0", "Increment the score of a member in a sorted set")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RW", "delete"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zrem, "zrem", -3, &["write", "fast"], (1, 1, 1), "sorted-set", "1.2.0", "Remove one or more members from a sorted set")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RO"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zcard, "zcard", 2, &["readonly", "fast"], (1, 1, 1), "sorted-set", "1.2.0", "Get the number of members in a sorted set")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zscore, "zscore", 3, &["readonly", "fast"], (1, 1, 1), "sorted-set", "1.2.0", "Get the score associated with the given member in a sorted set")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zmscore, "zmscore", -3, &["readonly", "fast"], (1, 1, 1), "sorted-set", "6.2.0", "Get the score associated with the given members in a sorted set")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zrank, "zrank", 3, &["readonly", "fast"], (1, 1, 1), "sorted-set", "2.0.0", "Determine the index of a member in a sorted set")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zrevrank, "zrevrank", 3, &["readonly", "fast"], (1, 1, 1), "sorted-set", "2.0.0", "Determine the index of a member in a sorted set, with scores ordered from high to low")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zcount, "zcount", 4, &["readonly", "fast"], (1, 1, 1), "sorted-set", "2.0.0", "Count the members in a sorted set with scores within the given values")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zlexcount, "zlexcount", 4, &["readonly", "fast"], (1, 1, 1), "sorted-set", "2.8.9", "Count the number of members in a sorted set between a given lexicographical range")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zrange, "zrange", -4, &["readonly"], (1, 1, 1), "sorted-set", "1.2.0", "Return a range of members in a sorted set")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zrangebyscore, "zrangebyscore", -4, &["readonly"], (1, 1, 1), "sorted-set", "1.0.5", "Return a range of members in a sorted set, by score")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zrevrangebyscore, "zrevrangebyscore", -4, &["readonly"], (1, 1, 1), "sorted-set", "2.2.0", "Return a range of members in a sorted set, by score, with scores ordered from high to low")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zrangebylex, "zrangebylex", -4, &["readonly"], (1, 1, 1), "sorted-set", "2.8.9", "Return a range of members in a sorted set, by lexicographical range")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zrevrangebylex, "zrevrangebylex", -4, &["readonly"], (1, 1, 1), "sorted-set", "2.8.9", "Return a range of members in a sorted set, by lexicographical range, ordered from higher to lower strings.")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zrevrange, "zrevrange", -4, &["readonly"], (1, 1, 1), "sorted-set", "1.2.0", "Return a range of members in a sorted set, by index, with scores ordered from high to low")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["OW", "update"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }, KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zrangestore, "zrangestore", -5, &["write", "denyoom"], (1, 2, 1), "sorted-set", "6.2.0", "Store a range of members from sorted set into another key")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zpopmin, "zpopmin", -2, &["write", "fast"], (1, 1, 1), "sorted-set", "5.0.0", "Remove and return members with the lowest scores in a sorted set")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zpopmax, "zpopmax", -2, &["write", "fast"], (1, 1, 1), "sorted-set", "5.0.0", "Remove and return members with the highest scores in a sorted set")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 } }],
        ..spec!(Zmpop, "zmpop", -4, &["write", "movablekeys"], (0, 0, 0), "sorted-set", "7.0.0", "Remove and return members with scores in a sorted set")
    },
    Spec {
        acl: &["@sortedset"],
        tips: &["nondeterministic_output"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zrandmember, "zrandmember", -2, &["readonly"], (1, 1, 1), "sorted-set", "6.2.0", "Get one or multiple random elements from a sorted set")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RW", "delete"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zremrangebyrank, "zremrangebyrank", 4, &["write"], (1, 1, 1), "sorted-set", "2.0.0", "Remove all members in a sorted set within the given indexes")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RW", "delete"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zremrangebyscore, "zremrangebyscore", 4, &["write"], (1, 1, 1), "sorted-set", "1.2.0", "Remove all members in a sorted set within the given scores")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RW", "delete"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zremrangebylex, "zremrangebylex", 4, &["write"], (1, 1, 1), "sorted-set", "2.8.9", "Remove all members in a sorted set between the given lexicographical range")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 } }],
        ..spec!(Zunion, "zunion", -3, &["readonly", "movablekeys"], (0, 0, 0), "sorted-set", "6.2.0", "Add multiple sorted sets")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 } }],
        ..spec!(Zinter, "zinter", -3, &["readonly", "movablekeys"], (0, 0, 0), "sorted-set", "6.2.0", "Intersect multiple sorted sets")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 } }],
        ..spec!(Zdiff, "zdiff", -3, &["readonly", "movablekeys"], (0, 0, 0), "sorted-set", "6.2.0", "Subtract multiple sorted sets")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["OW", "update"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }, KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 } }],
        ..spec!(Zunionstore, "zunionstore", -4, &["write", "denyoom", "movablekeys"], (1, 1, 1), "sorted-set", "2.0.0", "Add multiple sorted sets and store the resulting sorted set in a new key")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["OW", "update"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }, KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 } }],
        ..spec!(Zinterstore, "zinterstore", -4, &["write", "denyoom", "movablekeys"], (1, 1, 1), "sorted-set", "2.0.0", "Intersect multiple sorted sets and store the resulting sorted set in a new key")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["OW", "update"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }, KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 } }],
        ..spec!(Zdiffstore, "zdiffstore", -4, &["write", "denyoom", "movablekeys"], (1, 1, 1), "sorted-set", "6.2.0", "Subtract multiple sorted sets and store the resulting sorted set in a new key")
    },
    Spec {
        acl: &["@sortedset"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 } }],
        ..spec!(Zintercard, "zintercard", -3, &["readonly", "movablekeys"], (0, 0, 0), "sorted-set", "7.0.0", "Intersect multiple sorted sets and return the cardinality of the result")
    },
    Spec {
        acl: &["@sortedset"],
        tips: &["nondeterministic_output"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Zscan, "zscan", -3, &["readonly"], (1, 1, 1), "sorted-set", "2.8.0", "Incrementally iterate sorted sets elements and associated scores")
    },
];
