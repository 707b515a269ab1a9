//! Redis's geo commands over RESP, black-box, byte for byte: GEOADD's
//! scores (the 52-bit geohash, exactly Redis's) and its NX/XX/CH, GEODIST
//! in every unit, GEOHASH, GEOPOS (bulk strings in RESP2, doubles in
//! RESP3), GEORADIUS GEORADIUSBYMEMBER (and _RO) GEOSEARCH GEOSEARCHSTORE
//! with every option (FROMMEMBER FROMLONLAT BYRADIUS BYBOX ASC DESC COUNT
//! ANY WITHCOORD WITHDIST WITHHASH STORE STOREDIST), their error texts and
//! their order, WRONGTYPE, the sorted set underneath (TYPE, OBJECT
//! ENCODING), and the paths a command takes besides a plain call: EVAL,
//! MULTI/EXEC, SELECT with STORE destinations, COMMAND's key
//! specifications, ACL categories and keys. Runs against amalgam by
//! default; with `AMALGAM_TEST_RESP_ADDR` against Debian's redis-server
//! 7.0.15 (see `common/mod.rs`), which proves every expectation here is
//! Redis's own.
mod common;
use common::resp::*;
use common::*;

const WRONGTYPE: &str = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
const SYNTAX: &str = "-ERR syntax error\r\n";
const NOT_FLOAT: &str = "-ERR value is not a valid float\r\n";
const NOT_INT: &str = "-ERR value is not an integer or out of range\r\n";
const UNIT: &str = "-ERR unsupported unit provided. please use M, KM, FT, MI\r\n";
const MEMBER: &str = "-ERR could not decode requested zset member\r\n";
const EMPTY: &str = "*0\r\n";
const NIL: &str = "$-1\r\n";
const OK: &str = "+OK\r\n";

/// An array reply of bulk strings.
fn arr(items: &[&str]) -> String {
    let mut s = format!("*{}\r\n", items.len());
    for i in items {
        s.push_str(&bulk(i));
    }
    s
}

/// A position as GEOPOS and WITHCOORD reply it: two bulk strings (RESP2).
fn pos2(x: &str, y: &str) -> String {
    format!("*2\r\n{}{}", bulk(x), bulk(y))
}

/// A position in RESP3: two doubles.
fn pos3(x: &str, y: &str) -> String {
    format!("*2\r\n,{x}\r\n,{y}\r\n")
}

/// Search results WITHDIST: `[member, distance]` per member.
fn with_dist(items: &[(&str, &str)]) -> String {
    let mut s = format!("*{}\r\n", items.len());
    for (m, d) in items {
        s.push_str(&format!("*2\r\n{}{}", bulk(m), bulk(d)));
    }
    s
}

fn hello3(c: &mut Resp) {
    assert!(c.call(&["HELLO", "3"]).starts_with('%'));
}

/// Six Sicilian cities, as the Redis documentation's examples.
const SICILY: [(&str, &str, &str); 6] = [
    ("13.361389", "38.115556", "Palermo"),
    ("15.087269", "37.502669", "Catania"),
    ("13.583333", "37.316667", "Agrigento"),
    ("15.556", "38.193", "Messina"),
    ("15.2866", "37.0755", "Siracusa"),
    ("12.5139", "38.0176", "Trapani"),
];

/// A new key holding [`SICILY`].
fn sicily(c: &mut Resp) -> String {
    let k = key("sicily");
    let mut args = vec!["GEOADD", &k];
    for (x, y, m) in &SICILY {
        args.extend([*x, *y, *m]);
    }
    assert_eq!(c.call(&args), int(6));
    k
}

#[test]
fn geoadd_stores_redis_scores() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("geoadd");
    assert_eq!(
        c.call(&["GEOADD", &k, "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania"]),
        int(2)
    );
    assert_eq!(c.call(&["ZSCORE", &k, "Palermo"]), bulk("3479099956230698"));
    assert_eq!(c.call(&["ZSCORE", &k, "Catania"]), bulk("3479447370796909"));
    assert_eq!(c.call(&["TYPE", &k]), "+zset\r\n");
    assert_eq!(c.call(&["OBJECT", "ENCODING", &k]), bulk("listpack"));
    // The spans' limits: the upper ones keep a slice one past the last
    // (bits 52 and 53), the lower corner is 0.
    assert_eq!(
        c.call(&["GEOADD", &k, "180", "85.05112878", "top", "-180", "-85.05112878", "bot", "180", "0", "east"]),
        int(3)
    );
    assert_eq!(c.call(&["ZSCORE", &k, "top"]), bulk("13510798882111488"));
    assert_eq!(c.call(&["ZSCORE", &k, "bot"]), bulk("0"));
    assert_eq!(c.call(&["ZSCORE", &k, "east"]), bulk("10133099161583616"));
    assert_eq!(c.call(&["GEOADD", &k, "1e-300", "-1e-300", "tiny", "0x10", "1", "hex"]), int(2));
    assert_eq!(c.call(&["ZSCORE", &k, "tiny"]), bulk("3377699720527872"));
    // NX adds only new members, XX updates only old ones, CH counts changes.
    assert_eq!(c.call(&["GEOADD", &k, "NX", "1", "1", "Palermo", "2", "2", "new"]), int(1));
    assert_eq!(c.call(&["ZSCORE", &k, "Palermo"]), bulk("3479099956230698"));
    assert_eq!(c.call(&["GEOADD", &k, "xx", "1", "1", "Palermo", "3", "3", "other"]), int(0));
    assert_eq!(c.call(&["ZSCORE", &k, "Palermo"]), bulk("3377822707026402"));
    assert_eq!(c.call(&["ZSCORE", &k, "other"]), NIL);
    assert_eq!(c.call(&["GEOADD", &k, "XX", "CH", "13.361389", "38.115556", "Palermo"]), int(1));
    assert_eq!(c.call(&["GEOADD", &k, "ch", "13.361389", "38.115556", "Palermo", "4", "4", "four"]), int(1));
    assert_eq!(c.call(&["GEOADD", &k, "CH", "NX", "5", "5", "four", "6", "6", "six"]), int(1));
    // Option and argument errors.
    assert_eq!(c.call(&["GEOADD", &k, "NX", "XX", "1", "1", "a"]), SYNTAX);
    assert_eq!(c.call(&["GEOADD", &k, "ch", "ch", "ch"]), SYNTAX);
    assert_eq!(c.call(&["GEOADD", &k, "1", "2", "3", "4"]), SYNTAX);
    assert_eq!(c.call(&["GEOADD", &k, "1", "2"]), error("ERR wrong number of arguments for 'geoadd' command"));
    assert_eq!(c.call(&["GEOADD", &k, "GT", "1", "a"]), NOT_FLOAT);
    for bad in ["x", "nan", "1e400", " 1", ""] {
        assert_eq!(c.call(&["GEOADD", &k, bad, "1", "a"]), NOT_FLOAT, "{bad:?}");
        assert_eq!(c.call(&["GEOADD", &k, "1", bad, "a"]), NOT_FLOAT, "{bad:?}");
    }
    let pair = |x: &str, y: &str| error(&format!("ERR invalid longitude,latitude pair {x},{y}"));
    assert_eq!(c.call(&["GEOADD", &k, "200", "100", "m"]), pair("200.000000", "100.000000"));
    assert_eq!(c.call(&["GEOADD", &k, "inf", "1", "m"]), pair("inf", "1.000000"));
    assert_eq!(c.call(&["GEOADD", &k, "1", "-inf", "m"]), pair("1.000000", "-inf"));
    assert_eq!(c.call(&["GEOADD", &k, "180.0000001", "1", "m"]), pair("180.000000", "1.000000"));
    assert_eq!(c.call(&["GEOADD", &k, "0", "85.05112879", "m"]), pair("0.000000", "85.051129"));
    // A bad triple anywhere: nothing is added.
    assert_eq!(c.call(&["GEOADD", &k, "1", "1", "x", "200", "1", "y"]), pair("200.000000", "1.000000"));
    assert_eq!(c.call(&["ZSCORE", &k, "x"]), NIL);
    // Arguments are checked before the key's type.
    let s = key("string");
    assert_eq!(c.call(&["SET", &s, "v"]), OK);
    assert_eq!(c.call(&["GEOADD", &s, "200", "1", "a"]), pair("200.000000", "1.000000"));
    assert_eq!(c.call(&["GEOADD", &s, "1", "1", "a"]), WRONGTYPE);
    assert_eq!(c.call(&["DEL", &k, &s]), int(2));
}

#[test]
fn geoadd_crosses_into_the_large_encoding() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("geolarge");
    let names: Vec<String> = (0..129).map(|i| format!("m{i}")).collect();
    let coords: Vec<(String, String)> = (0..129)
        .map(|i| (format!("{:.4}", 2.0 + i as f64 * 0.001), format!("{:.4}", 48.0 + i as f64 * 0.0005)))
        .collect();
    let mut args = vec!["GEOADD", &k];
    for ((x, y), m) in coords.iter().zip(&names).take(128) {
        args.extend([x.as_str(), y.as_str(), m.as_str()]);
    }
    assert_eq!(c.call(&args), int(128));
    assert_eq!(c.call(&["OBJECT", "ENCODING", &k]), bulk("listpack"));
    assert_eq!(c.call(&["GEOADD", &k, &coords[128].0, &coords[128].1, &names[128]]), int(1));
    assert_eq!(c.call(&["OBJECT", "ENCODING", &k]), bulk("skiplist"));
    assert_eq!(c.call(&["ZCARD", &k]), int(129));
    // Searches read the large form as they read the compact one.
    assert_eq!(
        c.call(&["GEOSEARCH", &k, "FROMMEMBER", "m64", "BYRADIUS", "200", "m", "ASC", "WITHDIST"]),
        with_dist(&[
            ("m64", "0.0000"),
            ("m63", "92.6952"),
            ("m65", "92.8638"),
            ("m62", "185.7106"),
            ("m66", "185.8770")
        ])
    );
    assert_eq!(
        c.call(&["GEOSEARCH", &k, "FROMLONLAT", "2.1", "48.05", "BYBOX", "100", "100", "m", "WITHHASH"]),
        "*1\r\n*2\r\n$4\r\nm100\r\n:3663726196772256\r\n"
    );
    assert_eq!(c.call(&["GEORADIUS", &k, "2", "48", "150", "m", "DESC", "COUNT", "2"]), arr(&["m1", "m0"]));
    assert_eq!(c.call(&["DEL", &k]), int(1));
}

#[test]
fn geodist_geohash_geopos() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = sicily(&mut c);
    assert_eq!(c.call(&["GEODIST", &k, "Palermo", "Catania"]), bulk("166274.1516"));
    assert_eq!(c.call(&["GEODIST", &k, "Palermo", "Catania", "m"]), bulk("166274.1516"));
    assert_eq!(c.call(&["GEODIST", &k, "Palermo", "Catania", "KM"]), bulk("166.2742"));
    assert_eq!(c.call(&["GEODIST", &k, "Palermo", "Catania", "mi"]), bulk("103.3182"));
    assert_eq!(c.call(&["GEODIST", &k, "Palermo", "Catania", "Ft"]), bulk("545518.8700"));
    assert_eq!(c.call(&["GEODIST", &k, "Palermo", "Palermo"]), bulk("0.0000"));
    assert_eq!(c.call(&["GEODIST", &k, "Palermo", "nope"]), NIL);
    assert_eq!(c.call(&["GEODIST", &k, "Palermo", "Catania", "yd"]), UNIT);
    assert_eq!(c.call(&["GEODIST", &k, "a", "b", "c", "d"]), SYNTAX);
    assert_eq!(c.call(&["GEODIST", &k, "a"]), error("ERR wrong number of arguments for 'geodist' command"));
    let none = key("none");
    assert_eq!(c.call(&["GEODIST", &none, "a", "b"]), NIL);
    // The unit is checked before the key.
    assert_eq!(c.call(&["GEODIST", &none, "a", "b", "xx"]), UNIT);
    assert_eq!(
        c.call(&["GEOHASH", &k, "Palermo", "Catania", "nope"]),
        format!("*3\r\n{}{}{NIL}", bulk("sqc8b49rny0"), bulk("sqdtr74hyu0"))
    );
    assert_eq!(c.call(&["GEOHASH", &k]), EMPTY);
    assert_eq!(c.call(&["GEOHASH", &none, "a", "b"]), format!("*2\r\n{NIL}{NIL}"));
    assert_eq!(
        c.call(&["GEOPOS", &k, "Palermo", "nope", "Trapani"]),
        format!(
            "*3\r\n{}*-1\r\n{}",
            pos2("13.36138933897018433", "38.11555639549629859"),
            pos2("12.51390248537063599", "38.01759956157248865")
        )
    );
    assert_eq!(c.call(&["GEOPOS", &k]), EMPTY);
    assert_eq!(c.call(&["GEOPOS", &none, "a", "b"]), "*2\r\n*-1\r\n*-1\r\n");
    // Positions are cell centres, clamped to the spans.
    let e = key("edges");
    assert_eq!(
        c.call(&["GEOADD", &e, "180", "85.05112878", "top", "-180", "-85.05112878", "bot", "1e-300", "0", "tiny"]),
        int(3)
    );
    assert_eq!(
        c.call(&["GEOPOS", &e, "top", "bot", "tiny"]),
        format!(
            "*3\r\n{}{}{}",
            pos2("180", "85.0511287799999991"),
            pos2("-179.99999731779098511", "-85.05112751263942528"),
            pos2("0.00000268220901489", "0.00000126736058093")
        )
    );
    assert_eq!(c.call(&["GEOHASH", &e, "top", "bot", "tiny"]), arr(&["bp05b5048p0", "00bh0hbj200", "s0000000000"]));
    // Any sorted set answers, whatever its scores (x86-64's conversions).
    let z = key("zset");
    assert_eq!(c.call(&["ZADD", &z, "-5", "neg", "inf", "inf", "1.5", "frac"]), int(3));
    assert_eq!(
        c.call(&["GEOPOS", &z, "neg", "inf", "frac"]),
        format!(
            "*3\r\n{}{}{}",
            pos2("180", "85.0511287799999991"),
            pos2("-179.99999731779098511", "-85.05112751263942528"),
            pos2("-179.99999731779098511", "-85.05112497791824921")
        )
    );
    assert_eq!(c.call(&["GEOHASH", &z, "neg", "frac"]), arr(&["bp05b5048p0", "00bh0hbj210"]));
    assert_eq!(c.call(&["GEODIST", &z, "neg", "inf", "km"]), bulk("18919.8446"));
    // WRONGTYPE.
    let s = key("string");
    assert_eq!(c.call(&["SET", &s, "v"]), OK);
    for cmd in [&["GEOPOS", &s, "a"][..], &["GEOHASH", &s, "a"], &["GEODIST", &s, "a", "b"]] {
        assert_eq!(c.call(cmd), WRONGTYPE, "{cmd:?}");
    }
    assert_eq!(c.call(&["GEODIST", &s, "a", "b", "xx"]), UNIT);
    // RESP3: positions are doubles, missing ones null; distances and
    // hashes stay bulk strings.
    hello3(&mut c);
    assert_eq!(
        c.call(&["GEOPOS", &k, "Palermo", "nope"]),
        format!("*2\r\n{}_\r\n", pos3("13.36138933897018433", "38.11555639549629859"))
    );
    assert_eq!(c.call(&["GEOPOS", &none, "a"]), "*1\r\n_\r\n");
    assert_eq!(c.call(&["GEODIST", &k, "Palermo", "Catania"]), bulk("166274.1516"));
    assert_eq!(c.call(&["GEODIST", &k, "Palermo", "nope"]), "_\r\n");
    assert_eq!(c.call(&["GEOHASH", &k, "Palermo", "nope"]), format!("*2\r\n{}_\r\n", bulk("sqc8b49rny0")));
    assert_eq!(c.call(&["DEL", &k, &e, &z, &s]), int(4));
}

#[test]
fn georadius_options_and_replies() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = sicily(&mut c);
    let r = |more: &[&'static str]| {
        let mut v = vec!["GEORADIUS", k.as_str(), "15", "37", "200", "km"];
        v.extend_from_slice(more);
        v
    };
    // Without ASC/DESC: Redis's scan order (cell by cell).
    assert_eq!(c.call(&r(&[])), arr(&["Siracusa", "Agrigento", "Palermo", "Catania", "Messina"]));
    assert_eq!(c.call(&r(&["ASC"])), arr(&["Siracusa", "Catania", "Agrigento", "Messina", "Palermo"]));
    assert_eq!(
        c.call(&r(&["DESC", "WITHDIST"])),
        with_dist(&[
            ("Palermo", "190.4424"),
            ("Messina", "141.4499"),
            ("Agrigento", "130.4235"),
            ("Catania", "56.4413"),
            ("Siracusa", "26.7955")
        ])
    );
    // COUNT sorts ascending; the options nest in Redis's order.
    assert_eq!(
        c.call(&r(&["WITHCOORD", "WITHDIST", "WITHHASH", "COUNT", "2"])),
        format!(
            "*2\r\n*4\r\n{}{}:3476514830710512\r\n{}*4\r\n{}{}:3479447370796909\r\n{}",
            bulk("Siracusa"),
            bulk("26.7955"),
            pos2("15.28659850358963013", "37.07549947051170847"),
            bulk("Catania"),
            bulk("56.4413"),
            pos2("15.08726745843887329", "37.50266842333162032")
        )
    );
    // ANY stops at COUNT in scan order, then sorts only if asked.
    assert_eq!(c.call(&r(&["COUNT", "2", "ANY"])), arr(&["Siracusa", "Agrigento"]));
    assert_eq!(c.call(&r(&["any", "desc", "count", "2"])), arr(&["Agrigento", "Siracusa"]));
    assert_eq!(c.call(&r(&["COUNT", "3", "COUNT", "1"])), arr(&["Siracusa"]));
    assert_eq!(c.call(&r(&["DESC", "ASC", "COUNT", "1"])), arr(&["Siracusa"]));
    // Units.
    let units = |u: &'static str, d: &'static str| vec!["GEORADIUS", k.as_str(), "15", "37", d, u, "WITHDIST"];
    assert_eq!(
        c.call(&units("mi", "100")),
        with_dist(&[("Siracusa", "16.6500"), ("Agrigento", "81.0416"), ("Catania", "35.0711"), ("Messina", "87.8931")])
    );
    assert_eq!(c.call(&units("FT", "300000")), with_dist(&[("Siracusa", "87911.8744"), ("Catania", "185174.7305")]));
    assert_eq!(c.call(&units("M", "90000")), with_dist(&[("Siracusa", "26795.5393"), ("Catania", "56441.2579")]));
    assert_eq!(c.call(&units("km", "0")), EMPTY);
    assert_eq!(c.call(&units("km", "inf")).lines().next(), Some("*6"));
    // Errors, in Redis's order: the position, the radius, the unit, then
    // the options one by one, then their combinations.
    let g = |x: &'static str, y: &'static str, d: &'static str, u: &'static str, more: &[&'static str]| {
        let mut v = vec!["GEORADIUS", k.as_str(), x, y, d, u];
        v.extend_from_slice(more);
        v
    };
    assert_eq!(c.call(&g("x", "37", "1", "km", &[])), NOT_FLOAT);
    assert_eq!(
        c.call(&g("15", "91", "x", "km", &[])),
        error("ERR invalid longitude,latitude pair 15.000000,91.000000")
    );
    assert_eq!(c.call(&g("15", "37", "x", "km", &[])), error("ERR need numeric radius"));
    assert_eq!(c.call(&g("15", "37", "1e400", "km", &[])), error("ERR need numeric radius"));
    assert_eq!(c.call(&g("15", "37", "-1", "kk", &[])), error("ERR radius cannot be negative"));
    assert_eq!(c.call(&g("15", "37", "1", "kk", &[])), UNIT);
    assert_eq!(c.call(&g("15", "37", "1", "km", &["COUNT", "0"])), error("ERR COUNT must be > 0"));
    assert_eq!(c.call(&g("15", "37", "1", "km", &["COUNT", "-1"])), error("ERR COUNT must be > 0"));
    assert_eq!(c.call(&g("15", "37", "1", "km", &["COUNT", "x"])), NOT_INT);
    assert_eq!(c.call(&g("15", "37", "1", "km", &["COUNT", "99999999999999999999"])), NOT_INT);
    assert_eq!(c.call(&g("15", "37", "1", "km", &["COUNT"])), SYNTAX);
    assert_eq!(c.call(&g("15", "37", "1", "km", &["STORE"])), SYNTAX);
    assert_eq!(c.call(&g("15", "37", "1", "km", &["STOREDIST"])), SYNTAX);
    assert_eq!(c.call(&g("15", "37", "1", "km", &["FROMMEMBER", "Palermo"])), SYNTAX);
    assert_eq!(c.call(&g("15", "37", "1", "km", &["BYRADIUS", "1", "km"])), SYNTAX);
    assert_eq!(c.call(&g("15", "37", "1", "km", &["ANY"])), error("ERR the ANY argument requires COUNT argument"));
    assert_eq!(c.call(&g("15", "37", "1", "km", &["COUNT", "0", "bogus"])), error("ERR COUNT must be > 0"));
    assert_eq!(c.call(&g("15", "37", "1", "km", &["bogus", "COUNT", "0"])), SYNTAX);
    assert_eq!(
        c.call(&g("15", "37", "1", "km", &["STORE", "d", "WITHDIST"])),
        error("ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options")
    );
    assert_eq!(
        c.call(&["GEORADIUS", &k, "1", "2", "3"]),
        error("ERR wrong number of arguments for 'georadius' command")
    );
    // A missing key: the arguments are still checked, then nothing.
    let none = key("none");
    assert_eq!(
        c.call(&["GEORADIUS", &none, "200", "1", "1", "km"]),
        error("ERR invalid longitude,latitude pair 200.000000,1.000000")
    );
    assert_eq!(c.call(&["GEORADIUS", &none, "1", "1", "1", "km", "WITHDIST"]), EMPTY);
    // The type first of all.
    let s = key("string");
    assert_eq!(c.call(&["SET", &s, "v"]), OK);
    assert_eq!(c.call(&["GEORADIUS", &s, "200", "1", "x", "km"]), WRONGTYPE);
    // GEORADIUS_RO: the same search, no STORE.
    assert_eq!(
        c.call(&["GEORADIUS_RO", &k, "15", "37", "200", "km", "COUNT", "3", "DESC"]),
        arr(&["Palermo", "Messina", "Agrigento"])
    );
    assert_eq!(c.call(&["GEORADIUS_RO", &k, "15", "37", "200", "km", "STORE", "d"]), SYNTAX);
    assert_eq!(c.call(&["GEORADIUS_RO", &k, "15", "37", "200", "km", "STOREDIST", "d"]), SYNTAX);
    // RESP3: coordinates are doubles.
    hello3(&mut c);
    assert_eq!(
        c.call(&r(&["WITHCOORD", "COUNT", "1"])),
        format!("*1\r\n*2\r\n{}{}", bulk("Siracusa"), pos3("15.28659850358963013", "37.07549947051170847"))
    );
    assert_eq!(c.call(&["DEL", &k, &s]), int(2));
}

#[test]
fn georadiusbymember_options_and_errors() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = sicily(&mut c);
    assert_eq!(
        c.call(&["GEORADIUSBYMEMBER", &k, "Palermo", "200", "km", "WITHDIST"]),
        with_dist(&[
            ("Trapani", "75.0079"),
            ("Agrigento", "90.9778"),
            ("Palermo", "0.0000"),
            ("Catania", "166.2742"),
            ("Messina", "192.1355")
        ])
    );
    assert_eq!(
        c.call(&["GEORADIUSBYMEMBER", &k, "Palermo", "100", "km", "WITHCOORD"]),
        format!(
            "*3\r\n*2\r\n{}{}*2\r\n{}{}*2\r\n{}{}",
            bulk("Trapani"),
            pos2("12.51390248537063599", "38.01759956157248865"),
            bulk("Agrigento"),
            pos2("13.5833314061164856", "37.31666804993816555"),
            bulk("Palermo"),
            pos2("13.36138933897018433", "38.11555639549629859")
        )
    );
    assert_eq!(
        c.call(&["GEORADIUSBYMEMBER_RO", &k, "Catania", "100", "km", "ASC", "WITHDIST"]),
        with_dist(&[("Catania", "0.0000"), ("Siracusa", "50.6809"), ("Messina", "87.1229")])
    );
    assert_eq!(c.call(&["GEORADIUSBYMEMBER_RO", &k, "Catania", "100", "km", "STORE", "d"]), SYNTAX);
    // The member first, then the radius and unit, then the options.
    assert_eq!(c.call(&["GEORADIUSBYMEMBER", &k, "nope", "x", "km"]), MEMBER);
    assert_eq!(c.call(&["GEORADIUSBYMEMBER", &k, "Palermo", "x", "km"]), error("ERR need numeric radius"));
    assert_eq!(c.call(&["GEORADIUSBYMEMBER", &k, "Palermo", "1", "x"]), UNIT);
    assert_eq!(c.call(&["GEORADIUSBYMEMBER", &k, "Palermo", "1", "km", "COUNT", "0"]), error("ERR COUNT must be > 0"));
    // A missing key skips the member and the radius, not the options.
    let none = key("none");
    assert_eq!(c.call(&["GEORADIUSBYMEMBER", &none, "nope", "x", "km"]), EMPTY);
    assert_eq!(c.call(&["GEORADIUSBYMEMBER", &none, "nope", "x", "km", "COUNT", "0"]), error("ERR COUNT must be > 0"));
    assert_eq!(c.call(&["GEORADIUSBYMEMBER", &none, "nope", "1", "km", "STORE", "d"]), int(0));
    assert_eq!(
        c.call(&["GEORADIUSBYMEMBER", &k, "Palermo", "1"]),
        error("ERR wrong number of arguments for 'georadiusbymember' command")
    );
    assert_eq!(
        c.call(&["GEORADIUSBYMEMBER_RO", &k]),
        error("ERR wrong number of arguments for 'georadiusbymember_ro' command")
    );
    assert_eq!(c.call(&["georadiusbymember_RO", &k, "Palermo", "10", "km"]), arr(&["Palermo"]));
    assert_eq!(c.call(&["DEL", &k]), int(1));
}

#[test]
fn geosearch_from_and_by() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = sicily(&mut c);
    let s = |more: &[&'static str]| {
        let mut v = vec!["GEOSEARCH", k.as_str()];
        v.extend_from_slice(more);
        v
    };
    assert_eq!(
        c.call(&s(&["FROMLONLAT", "14", "37.6", "BYRADIUS", "150", "km"])),
        arr(&["Trapani", "Agrigento", "Palermo", "Catania", "Siracusa"])
    );
    assert_eq!(
        c.call(&s(&["FROMLONLAT", "14", "37.6", "BYRADIUS", "150", "km", "DESC", "COUNT", "3"])),
        arr(&["Trapani", "Siracusa", "Catania"])
    );
    // A box is width (east-west) by height (north-south).
    assert_eq!(
        c.call(&s(&["FROMMEMBER", "Palermo", "BYBOX", "300", "100", "km", "ASC", "WITHDIST"])),
        with_dist(&[("Palermo", "0.0000"), ("Trapani", "75.0079")])
    );
    assert_eq!(
        c.call(&s(&["FROMMEMBER", "Palermo", "BYBOX", "100", "300", "km", "ASC", "WITHDIST"])),
        with_dist(&[("Palermo", "0.0000"), ("Agrigento", "90.9778")])
    );
    assert_eq!(
        c.call(&s(&["frommember", "Palermo", "bybox", "0", "0", "km", "withdist"])),
        with_dist(&[("Palermo", "0.0000")])
    );
    assert_eq!(
        c.call(&s(&[
            "FROMLONLAT",
            "14",
            "37.6",
            "BYBOX",
            "400",
            "200",
            "km",
            "WITHDIST",
            "WITHHASH",
            "ASC",
            "COUNT",
            "2"
        ])),
        format!(
            "*2\r\n*3\r\n{}{}:3479030013248308\r\n*3\r\n{}{}:3479099956230698\r\n",
            bulk("Agrigento"),
            bulk("48.4405"),
            bulk("Palermo"),
            bulk("80.2077")
        )
    );
    assert_eq!(
        c.call(&s(&["FROMLONLAT", "15", "37", "BYBOX", "400", "400", "Mi", "COUNT", "1", "ANY"])),
        arr(&["Siracusa"])
    );
    assert_eq!(c.call(&s(&["FROMLONLAT", "15", "37", "BYRADIUS", "0", "km"])), EMPTY);
    assert_eq!(c.call(&s(&["FROMMEMBER", "Palermo", "BYRADIUS", "0", "km"])), arr(&["Palermo"]));
    // A repeated FROM or BY option of the same kind: the last one.
    assert_eq!(
        c.call(&s(&["FROMLONLAT", "1", "1", "FROMLONLAT", "15", "37", "BYRADIUS", "30", "km"])),
        arr(&["Siracusa"])
    );
    assert_eq!(
        c.call(&s(&["FROMMEMBER", "Palermo", "FROMMEMBER", "Siracusa", "BYRADIUS", "1", "km", "BYRADIUS", "60", "km"])),
        arr(&["Siracusa", "Catania"])
    );
    // Errors: the two kinds of each mixed, the options' own errors in
    // order, then the combinations (with the command's name as sent).
    assert_eq!(c.call(&s(&["FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "BYBOX", "1", "1", "km"])), SYNTAX);
    assert_eq!(c.call(&s(&["FROMLONLAT", "15", "37", "FROMMEMBER", "Palermo", "BYRADIUS", "200", "km"])), SYNTAX);
    assert_eq!(c.call(&s(&["FROMMEMBER", "Palermo", "FROMLONLAT", "1", "1", "BYRADIUS", "1", "km"])), SYNTAX);
    assert_eq!(c.call(&s(&["FROMMEMBER", "nope", "BYRADIUS", "x", "km"])), MEMBER);
    assert_eq!(c.call(&s(&["BYRADIUS", "x", "km", "FROMMEMBER", "nope"])), error("ERR need numeric radius"));
    assert_eq!(
        c.call(&s(&["FROMLONLAT", "200", "1", "BYRADIUS", "1", "km"])),
        error("ERR invalid longitude,latitude pair 200.000000,1.000000")
    );
    assert_eq!(c.call(&s(&["FROMLONLAT", "x", "1", "BYRADIUS", "1", "km"])), NOT_FLOAT);
    assert_eq!(c.call(&s(&["FROMLONLAT", "1", "1", "BYRADIUS", "-1", "km"])), error("ERR radius cannot be negative"));
    assert_eq!(c.call(&s(&["FROMLONLAT", "1", "1", "BYBOX", "x", "y", "km"])), error("ERR need numeric width"));
    assert_eq!(c.call(&s(&["FROMLONLAT", "1", "1", "BYBOX", "1", "y", "km"])), error("ERR need numeric height"));
    assert_eq!(
        c.call(&s(&["FROMLONLAT", "1", "1", "BYBOX", "1", "-1", "kx"])),
        error("ERR height or width cannot be negative")
    );
    assert_eq!(c.call(&s(&["FROMLONLAT", "1", "1", "BYBOX", "1", "1", "kx"])), UNIT);
    assert_eq!(c.call(&s(&["FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "STORE", "d"])), SYNTAX);
    assert_eq!(c.call(&s(&["FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "STOREDIST"])), SYNTAX);
    assert_eq!(
        c.call(&s(&["FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "ANY"])),
        error("ERR the ANY argument requires COUNT argument")
    );
    assert_eq!(
        c.call(&["geoSEARCH", &k, "FROMLONLAT", "1", "2", "WITHDIST", "ASC"]),
        error("ERR exactly one of BYRADIUS and BYBOX can be specified for geoSEARCH")
    );
    assert_eq!(
        c.call(&["GeoSearch", &k, "BYRADIUS", "1", "km", "WITHDIST", "ASC"]),
        error("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for GeoSearch")
    );
    assert_eq!(
        c.call(&["GEOSEARCH", &k, "FROMLONLAT", "15", "37"]),
        error("ERR wrong number of arguments for 'geosearch' command")
    );
    // A missing key: options are read (not FROMMEMBER's member), then nothing.
    let none = key("none");
    assert_eq!(c.call(&["GEOSEARCH", &none, "FROMMEMBER", "nope", "BYRADIUS", "200", "km"]), EMPTY);
    assert_eq!(c.call(&["GEOSEARCH", &none, "FROMMEMBER", "x", "FROMLONLAT", "1", "1", "BYRADIUS", "1", "km"]), SYNTAX);
    assert_eq!(
        c.call(&["GEOSEARCH", &none, "FROMLONLAT", "200", "1", "BYRADIUS", "1", "km"]),
        error("ERR invalid longitude,latitude pair 200.000000,1.000000")
    );
    assert_eq!(
        c.call(&["GEOSEARCH", &none, "FROMLONLAT", "1", "2", "BYRADIUS", "1", "km", "ANY"]),
        error("ERR the ANY argument requires COUNT argument")
    );
    let w = key("string");
    assert_eq!(c.call(&["SET", &w, "v"]), OK);
    assert_eq!(c.call(&["GEOSEARCH", &w, "FROMMEMBER", "x", "BYRADIUS", "1", "km"]), WRONGTYPE);
    hello3(&mut c);
    assert_eq!(
        c.call(&s(&["FROMMEMBER", "Trapani", "BYBOX", "10", "10", "km", "WITHCOORD", "WITHDIST"])),
        format!(
            "*1\r\n*3\r\n{}{}{}",
            bulk("Trapani"),
            bulk("0.0000"),
            pos3("12.51390248537063599", "38.01759956157248865")
        )
    );
    assert_eq!(c.call(&["DEL", &k, &w]), int(2));
}

#[test]
fn store_and_storedist() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = sicily(&mut c);
    let d = key("dst");
    let d2 = key("dst2");
    assert_eq!(
        c.call(&["GEOSEARCHSTORE", &d, &k, "FROMLONLAT", "15", "37", "BYRADIUS", "60", "km", "STOREDIST"]),
        int(2)
    );
    assert_eq!(
        c.call(&["ZRANGE", &d, "0", "-1", "WITHSCORES"]),
        arr(&["Siracusa", "26.795539305873376", "Catania", "56.441257870158204"])
    );
    assert_eq!(
        c.call(&["GEOSEARCHSTORE", &d, &k, "FROMLONLAT", "15", "37", "BYRADIUS", "60", "km", "COUNT", "1"]),
        int(1)
    );
    assert_eq!(c.call(&["ZRANGE", &d, "0", "-1", "WITHSCORES"]), arr(&["Siracusa", "3476514830710512"]));
    assert_eq!(
        c.call(&["GEOPOS", &d, "Siracusa"]),
        format!("*1\r\n{}", pos2("15.28659850358963013", "37.07549947051170847"))
    );
    // GEORADIUS STORE keeps the hashes, STOREDIST the distances in the
    // unit asked; the last of them given wins.
    assert_eq!(c.call(&["GEORADIUS", &k, "15", "37", "200", "km", "store", &d, "count", "1"]), int(1));
    assert_eq!(c.call(&["ZRANGE", &d, "0", "-1", "WITHSCORES"]), arr(&["Siracusa", "3476514830710512"]));
    assert_eq!(c.call(&["GEORADIUS", &k, "15", "37", "30", "km", "STORE", &d2, "STOREDIST", &d]), int(1));
    assert_eq!(c.call(&["ZRANGE", &d, "0", "-1", "WITHSCORES"]), arr(&["Siracusa", "26.795539305873376"]));
    assert_eq!(c.call(&["EXISTS", &d2]), int(0));
    assert_eq!(
        c.call(&["GEORADIUSBYMEMBER", &k, "Palermo", "100", "km", "STOREDIST", &d, "DESC", "COUNT", "1"]),
        int(1)
    );
    assert_eq!(c.call(&["ZRANGE", &d, "0", "-1", "WITHSCORES"]), arr(&["Agrigento", "90.977753537996037"]));
    // The destination is replaced whatever it held; an empty result or a
    // missing source deletes it.
    let s = key("string");
    assert_eq!(c.call(&["SET", &s, "v"]), OK);
    assert_eq!(c.call(&["GEOSEARCHSTORE", &s, &k, "FROMMEMBER", "Palermo", "BYRADIUS", "100", "km"]), int(3));
    assert_eq!(c.call(&["TYPE", &s]), "+zset\r\n");
    assert_eq!(c.call(&["GEOSEARCHSTORE", &d, &k, "FROMMEMBER", "Palermo", "BYRADIUS", "1", "m"]), int(1));
    assert_eq!(c.call(&["GEOSEARCHSTORE", &d, &k, "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m"]), int(0));
    assert_eq!(c.call(&["EXISTS", &d]), int(0));
    let none = key("none");
    assert_eq!(c.call(&["GEOSEARCHSTORE", &s, &none, "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km"]), int(0));
    assert_eq!(c.call(&["EXISTS", &s]), int(0));
    assert_eq!(c.call(&["SET", &s, "v"]), OK);
    assert_eq!(c.call(&["GEORADIUS", &none, "15", "37", "200", "km", "STORE", &s]), int(0));
    assert_eq!(c.call(&["EXISTS", &s]), int(0));
    // The source's type is checked; STORE's incompatibilities.
    assert_eq!(c.call(&["SET", &s, "v"]), OK);
    assert_eq!(c.call(&["GEOSEARCHSTORE", &d, &s, "FROMMEMBER", "Palermo", "BYRADIUS", "200", "km"]), WRONGTYPE);
    assert_eq!(
        c.call(&["GEOSEARCHSTORE", &d, &k, "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "WITHDIST"]),
        error("ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options")
    );
    assert_eq!(
        c.call(&["GEOSEARCHstore", &d, &k, "BYRADIUS", "1", "km", "STOREDIST", "ASC"]),
        error("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for GEOSEARCHstore")
    );
    assert_eq!(
        c.call(&["GEOSEARCHSTORE", &d, &k, "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "STORE", &d2]),
        SYNTAX
    );
    assert_eq!(
        c.call(&["GEOSEARCHSTORE", &d, &k]),
        error("ERR wrong number of arguments for 'geosearchstore' command")
    );
    // A large result is stored in the large encoding.
    let big = key("big");
    let names: Vec<String> = (0..200).map(|i| format!("p{i}")).collect();
    let coords: Vec<String> = (0..200).map(|i| format!("{:.4}", i as f64 * 0.001)).collect();
    let mut args = vec!["GEOADD", big.as_str()];
    for (x, m) in coords.iter().zip(&names) {
        args.extend([x.as_str(), "10", m.as_str()]);
    }
    assert_eq!(c.call(&args), int(200));
    assert_eq!(c.call(&["GEOSEARCHSTORE", &d, &big, "FROMLONLAT", "0.1", "10", "BYRADIUS", "100", "km"]), int(200));
    assert_eq!(c.call(&["OBJECT", "ENCODING", &d]), bulk("skiplist"));
    assert_eq!(
        c.call(&["GEOSEARCHSTORE", &d, &big, "FROMLONLAT", "0.1", "10", "BYRADIUS", "100", "km", "COUNT", "5"]),
        int(5)
    );
    assert_eq!(c.call(&["OBJECT", "ENCODING", &d]), bulk("listpack"));
    assert_eq!(c.call(&["ZRANGE", &d, "0", "-1"]), arr(&["p98", "p99", "p100", "p101", "p102"]));
    assert_eq!(c.call(&["DEL", &k, &d, &s, &big]), int(4));
}

#[test]
fn equal_distances_order_as_redis() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("ties");
    let names: Vec<String> = (0..12).map(|i| format!("same{i}")).collect();
    let mut args = vec!["GEOADD", k.as_str()];
    for m in &names {
        args.extend(["2.35", "48.85", m.as_str()]);
    }
    args.extend(["2.36", "48.85", "other"]);
    assert_eq!(c.call(&args), int(13));
    let q = |more: &[&'static str]| {
        let mut v = vec!["GEOSEARCH", k.as_str(), "FROMLONLAT", "2.35", "48.85", "BYRADIUS", "10", "km"];
        v.extend_from_slice(more);
        v
    };
    // A full sort is stable (glibc's merge sort): ties in scan order.
    let scan =
        ["same0", "same1", "same10", "same11", "same2", "same3", "same4", "same5", "same6", "same7", "same8", "same9"];
    let mut asc = scan.to_vec();
    asc.push("other");
    assert_eq!(c.call(&q(&["ASC"])), arr(&asc));
    let mut desc = vec!["other"];
    desc.extend(scan);
    assert_eq!(c.call(&q(&["DESC"])), arr(&desc));
    // COUNT below the matches: Redis's partial quicksort moves ties.
    assert_eq!(c.call(&q(&["COUNT", "5"])), arr(&["same0", "same1", "same10", "same11", "same2"]));
    assert_eq!(c.call(&q(&["COUNT", "5", "DESC"])), arr(&["other", "same1", "same10", "same11", "same2"]));
    assert_eq!(
        c.call(&q(&["COUNT", "12", "DESC"])),
        arr(&[
            "other", "same1", "same10", "same11", "same2", "same3", "same0", "same5", "same6", "same7", "same8",
            "same9"
        ])
    );
    assert_eq!(c.call(&["DEL", &k]), int(1));
}

#[test]
fn scripts_transactions_and_databases() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("ev");
    assert_eq!(
        c.call(&["EVAL", "return redis.call('GEOADD', KEYS[1], 13.361389, 38.115556, 'Palermo')", "1", &k]),
        int(1)
    );
    assert_eq!(
        c.call(&["EVAL", "return redis.call('GEOPOS', KEYS[1], 'Palermo')", "1", &k]),
        format!("*1\r\n{}", pos2("13.36138933897018433", "38.11555639549629859"))
    );
    assert_eq!(
        c.call(&["EVAL", "return redis.call('GEORADIUS', KEYS[1], 13, 38, 100, 'km', 'WITHDIST')", "1", &k]),
        with_dist(&[("Palermo", "34.1601")])
    );
    assert_eq!(
        c.call(&[
            "EVAL",
            "return redis.pcall('GEOSEARCH', KEYS[1], 'FROMMEMBER', 'nope', 'BYRADIUS', 1, 'km')",
            "1",
            &k
        ]),
        MEMBER
    );
    assert!(c
        .call(&["EVAL_RO", "return redis.call('GEOADD', KEYS[1], 1, 1, 'x')", "1", &k])
        .starts_with("-ERR Write commands are not allowed from read-only scripts"));
    assert_eq!(
        c.call(&["EVAL_RO", "return redis.call('GEORADIUS_RO', KEYS[1], 13, 38, 100, 'km')", "1", &k]),
        arr(&["Palermo"])
    );
    // MULTI/EXEC queues and runs them.
    let m = key("multi");
    let md = key("multidst");
    assert_eq!(c.call(&["MULTI"]), OK);
    assert_eq!(c.call(&["GEOADD", &m, "1", "2", "a", "3", "4", "b"]), "+QUEUED\r\n");
    assert_eq!(
        c.call(&["GEOSEARCH", &m, "FROMMEMBER", "a", "BYRADIUS", "1000", "km", "ASC", "WITHDIST"]),
        "+QUEUED\r\n"
    );
    assert_eq!(
        c.call(&["GEOSEARCHSTORE", &md, &m, "FROMMEMBER", "a", "BYRADIUS", "1000", "km", "STOREDIST"]),
        "+QUEUED\r\n"
    );
    assert_eq!(c.call(&["ZRANGE", &md, "0", "-1", "WITHSCORES"]), "+QUEUED\r\n");
    assert_eq!(
        c.call(&["EXEC"]),
        format!(
            "*4\r\n:2\r\n{}:2\r\n{}",
            with_dist(&[("a", "0.0000"), ("b", "314.3718")]),
            arr(&["a", "0", "b", "314.3718348336028"])
        )
    );
    // Another database: the source, GEOSEARCHSTORE's destination and
    // every STORE/STOREDIST destination (the last STORE wins) live there.
    let (src, d1, d2, d3, d4) = (key("dbsrc"), key("d1"), key("d2"), key("d3"), key("d4"));
    assert_eq!(c.call(&["SELECT", "9"]), OK);
    assert_eq!(c.call(&["GEOADD", &src, "1", "2", "a", "3", "4", "b"]), int(2));
    assert_eq!(c.call(&["GEORADIUS", &src, "1", "2", "1000", "km", "STORE", &d1, "STORE", &d2]), int(2));
    assert_eq!(c.call(&["GEORADIUS", &src, "1", "2", "1000", "km", "STOREDIST", &d3]), int(2));
    assert_eq!(c.call(&["GEOSEARCHSTORE", &d4, &src, "FROMMEMBER", "a", "BYRADIUS", "1000", "km"]), int(2));
    assert_eq!(c.call(&["EXISTS", &src, &d1, &d2, &d3, &d4]), int(4));
    assert_eq!(c.call(&["SELECT", "0"]), OK);
    assert_eq!(c.call(&["EXISTS", &src, &d1, &d2, &d3, &d4]), int(0));
    assert_eq!(c.call(&["SELECT", "9"]), OK);
    assert_eq!(c.call(&["DEL", &src, &d2, &d3, &d4]), int(4));
    assert_eq!(c.call(&["SELECT", "0"]), OK);
    assert_eq!(c.call(&["DEL", &k, &m, &md]), int(3));
}

/// The key names of a COMMAND GETKEYS reply.
fn keys_of(c: &mut Resp, args: &[&str]) -> Vec<String> {
    let mut v = vec!["COMMAND", "GETKEYS"];
    v.extend_from_slice(args);
    call(c, &v).array().iter().map(|k| k.bulk().to_string()).collect()
}

#[test]
fn command_rows_key_specs_and_acl() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let info = c.call(&["COMMAND", "INFO", "georadius", "georadius_ro", "geosearchstore", "geoadd"]);
    assert!(info.starts_with("*4\r\n*10\r\n$9\r\ngeoradius\r\n:-6\r\n*3\r\n+write\r\n+denyoom\r\n+movablekeys\r\n:1\r\n:1\r\n:1\r\n*3\r\n+@write\r\n+@geo\r\n+@slow\r\n"), "{info}");
    assert!(
        info.contains(
            "$12\r\ngeoradius_ro\r\n:-6\r\n*1\r\n+readonly\r\n:1\r\n:1\r\n:1\r\n*3\r\n+@read\r\n+@geo\r\n+@slow\r\n"
        ),
        "{info}"
    );
    assert!(info.contains("$14\r\ngeosearchstore\r\n:-8\r\n*2\r\n+write\r\n+denyoom\r\n:1\r\n:2\r\n:1\r\n"), "{info}");
    assert!(
        info.contains(
            "$7\r\nkeyword\r\n$4\r\nspec\r\n*4\r\n$7\r\nkeyword\r\n$9\r\nSTOREDIST\r\n$9\r\nstartfrom\r\n:6\r\n"
        ),
        "{info}"
    );
    assert_eq!(keys_of(&mut c, &["georadius", "k", "1", "2", "3", "km", "STORE", "d"]), ["k", "d"]);
    assert_eq!(keys_of(&mut c, &["georadius", "k", "1", "2", "3", "km", "storedist", "d"]), ["k", "d"]);
    assert_eq!(keys_of(&mut c, &["georadius", "k", "1", "2", "3", "km"]), ["k"]);
    assert_eq!(
        keys_of(&mut c, &["georadiusbymember", "k", "m", "3", "km", "STORE", "d", "STOREDIST", "e"]),
        ["k", "d", "e"]
    );
    assert_eq!(
        keys_of(&mut c, &["geosearchstore", "d", "s", "FROMLONLAT", "1", "2", "BYRADIUS", "1", "km"]),
        ["d", "s"]
    );
    assert_eq!(keys_of(&mut c, &["geodist", "k", "a", "b"]), ["k"]);
    let mut geo: Vec<String> =
        call(&mut c, &["ACL", "CAT", "geo"]).array().iter().map(|v| v.bulk().to_string()).collect();
    geo.sort();
    assert_eq!(
        geo,
        [
            "geoadd",
            "geodist",
            "geohash",
            "geopos",
            "georadius",
            "georadius_ro",
            "georadiusbymember",
            "georadiusbymember_ro",
            "geosearch",
            "geosearchstore"
        ]
    );
    // ACL: the category, and STORE destinations checked as keys.
    let (u, v) = (key("geou"), key("geov"));
    assert_eq!(c.call(&["ACL", "SETUSER", &u, "on", "nopass", "~src*", "+@all", "-@geo", "+geopos"]), OK);
    assert_eq!(
        c.call(&["ACL", "DRYRUN", &u, "GEOADD", "src", "1", "1", "m"]),
        bulk("This user has no permissions to run the 'geoadd' command")
    );
    assert_eq!(c.call(&["ACL", "DRYRUN", &u, "GEOPOS", "src", "m"]), OK);
    assert_eq!(c.call(&["ACL", "SETUSER", &v, "on", "nopass", "~src*", "+@geo"]), OK);
    let denied = bulk("This user has no permissions to access the 'other' key");
    assert_eq!(c.call(&["ACL", "DRYRUN", &v, "GEORADIUS", "src", "1", "1", "1", "km", "STORE", "other"]), denied);
    assert_eq!(c.call(&["ACL", "DRYRUN", &v, "GEORADIUS", "src", "1", "1", "1", "km", "STORE", "srcdst"]), OK);
    assert_eq!(
        c.call(&["ACL", "DRYRUN", &v, "GEORADIUSBYMEMBER", "src", "m", "1", "km", "STOREDIST", "other"]),
        denied
    );
    assert_eq!(
        c.call(&["ACL", "DRYRUN", &v, "GEOSEARCHSTORE", "other", "src", "FROMLONLAT", "1", "1", "BYRADIUS", "1", "km"]),
        denied
    );
    assert_eq!(
        c.call(&["ACL", "DRYRUN", &v, "ZADD", "src", "1", "m"]),
        bulk("This user has no permissions to run the 'zadd' command")
    );
    assert_eq!(c.call(&["ACL", "DELUSER", &u, &v]), int(2));
}
