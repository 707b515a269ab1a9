//! The command table's rows of `geo.rs` (`table.rs` says what a row holds).

use super::super::{Begin, Cmd, Find, KeySpec, Spec};

/// In the order `COMMANDS` lists them.
pub(super) const ROWS: &[Spec] = &[
    Spec {
        acl: &["@geo"],
        keys: &[KeySpec { notes: "", flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Geoadd, "geoadd", -5, &["write", "denyoom"], (1, 1, 1), "geo", "3.2.0", "Add one or more geospatial items in the geospatial index represented using a sorted set")
    },
    Spec {
        acl: &["@geo"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Geodist, "geodist", -4, &["readonly"], (1, 1, 1), "geo", "3.2.0", "Returns the distance between two members of a geospatial index")
    },
    Spec {
        acl: &["@geo"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Geohash, "geohash", -2, &["readonly"], (1, 1, 1), "geo", "3.2.0", "Returns members of a geospatial index as standard geohash strings")
    },
    Spec {
        acl: &["@geo"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Geopos, "geopos", -2, &["readonly"], (1, 1, 1), "geo", "3.2.0", "Returns longitude and latitude of members of a geospatial index")
    },
    Spec {
        acl: &["@geo"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }, KeySpec { notes: "", flags: &["OW", "update"], begin: Begin::Keyword("STORE", 6), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }, KeySpec { notes: "", flags: &["OW", "update"], begin: Begin::Keyword("STOREDIST", 6), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Georadius, "georadius", -6, &["write", "denyoom", "movablekeys"], (1, 1, 1), "geo", "3.2.0", "Query a sorted set representing a geospatial index to fetch members matching a given maximum distance from a point")
    },
    Spec {
        acl: &["@geo"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(GeoradiusRo, "georadius_ro", -6, &["readonly"], (1, 1, 1), "geo", "3.2.10", "A read-only variant for GEORADIUS")
    },
    Spec {
        acl: &["@geo"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }, KeySpec { notes: "", flags: &["OW", "update"], begin: Begin::Keyword("STORE", 5), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }, KeySpec { notes: "", flags: &["OW", "update"], begin: Begin::Keyword("STOREDIST", 5), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Georadiusbymember, "georadiusbymember", -5, &["write", "denyoom", "movablekeys"], (1, 1, 1), "geo", "3.2.0", "Query a sorted set representing a geospatial index to fetch members matching a given maximum distance from a member")
    },
    Spec {
        acl: &["@geo"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(GeoradiusbymemberRo, "georadiusbymember_ro", -5, &["readonly"], (1, 1, 1), "geo", "3.2.10", "A read-only variant for GEORADIUSBYMEMBER")
    },
    Spec {
        acl: &["@geo"],
        keys: &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Geosearch, "geosearch", -7, &["readonly"], (1, 1, 1), "geo", "6.2.0", "Query a sorted set representing a geospatial index to fetch members inside an area of a box or a circle.")
    },
    Spec {
        acl: &["@geo"],
        keys: &[KeySpec { notes: "", flags: &["OW", "update"], begin: Begin::Index(1), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }, KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Range { lastkey: 0, keystep: 1, limit: 0 } }],
        ..spec!(Geosearchstore, "geosearchstore", -8, &["write", "denyoom"], (1, 2, 1), "geo", "6.2.0", "Query a sorted set representing a geospatial index to fetch members inside an area of a box or a circle, and store the result in another key.")
    },
];
