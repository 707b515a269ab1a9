//! SETBIT GETBIT BITCOUNT BITPOS BITOP BITFIELD BITFIELD_RO, LCS, TIME,
//! TOUCH and OBJECT, black-box. Every expectation here is Redis 7.0's
//! (CI runs this file against redis-server too), except the test that
//! starts an amalgam of its own.
mod common;
use common::resp::*;
use common::*;

const OFFSET: &str = "ERR bit offset is not an integer or out of range";

/// An array of integer replies (null as None), as RESP2 text.
fn ints(v: &[Option<i64>]) -> String {
    let mut s = format!("*{}\r\n", v.len());
    for x in v {
        match x {
            Some(n) => s.push_str(&int(*n)),
            None => s.push_str(NULL2),
        }
    }
    s
}

#[test]
fn setbit_getbit() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("bits");
    assert_eq!(c.call(&["SETBIT", &k, "-1", "1"]), error(OFFSET));
    assert_eq!(c.call(&["SETBIT", &k, "x", "1"]), error(OFFSET));
    assert_eq!(c.call(&["SETBIT", &k, "4294967296", "1"]), error(OFFSET));
    assert_eq!(c.call(&["SETBIT", &k, "0", "2"]), error("ERR bit is not an integer or out of range"));
    assert_eq!(c.call(&["EXISTS", &k]), int(0), "errors create nothing");
    assert_eq!(c.call(&["SETBIT", &k, "7", "1"]), int(0));
    assert_eq!(c.call(&["SETBIT", &k, "7", "1"]), int(1));
    assert_eq!(c.call(&["SETBIT", &k, "7", "0"]), int(1));
    assert_eq!(c.call(&["SETBIT", &k, "17", "1"]), int(0));
    assert_eq!(c.call(&["GET", &k]), bulk("\0\0@"), "grown with zero bytes, bit 0 first");
    assert_eq!(c.call(&["GETBIT", &k, "17"]), int(1));
    assert_eq!(c.call(&["GETBIT", &k, "18"]), int(0));
    assert_eq!(c.call(&["GETBIT", &k, "100000"]), int(0));
    assert_eq!(c.call(&["GETBIT", &k, "-1"]), error(OFFSET));
    assert_eq!(c.call(&["GETBIT", &key("nokey"), "3"]), int(0));
    assert_eq!(c.call(&["SETBIT", &k, "1"]), error("ERR wrong number of arguments for 'setbit' command"));
}

#[test]
fn bitcount_and_bitpos() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (s, ff, missing) = (key("hello"), key("ff"), key("nokey"));
    assert_eq!(c.call(&["SET", &s, "hello"]), OK);
    assert_eq!(c.call(&["BITCOUNT", &s]), int(21));
    assert_eq!(c.call(&["BITCOUNT", &s, "0", "1", "BIT"]), int(1));
    assert_eq!(c.call(&["BITCOUNT", &s, "1", "-2"]), int(12));
    assert_eq!(c.call(&["BITCOUNT", &s, "-2", "-1", "bit"]), int(2));
    assert_eq!(c.call(&["BITCOUNT", &s, "5", "2"]), int(0));
    assert_eq!(c.call(&["BITCOUNT", &s, "0"]), error("ERR syntax error"));
    assert_eq!(c.call(&["BITCOUNT", &s, "0", "1", "foo"]), error("ERR syntax error"));
    assert_eq!(c.call(&["BITCOUNT", &s, "a", "b"]), error("ERR value is not an integer or out of range"));
    assert_eq!(c.call(&["BITCOUNT", &missing, "0"]), int(0), "7.0 answers a missing key before the arguments");

    assert_eq!(c.call(&["BITPOS", &s, "1"]), int(1));
    assert_eq!(c.call(&["BITPOS", &s, "0"]), int(0));
    assert_eq!(c.call(&["BITPOS", &s, "1", "2"]), int(17));
    assert_eq!(c.call(&["BITPOS", &s, "1", "10", "20", "bit"]), int(10));
    assert_eq!(c.call(&["BITPOS", &s, "0", "-1", "-1", "bit"]), int(-1));
    assert_eq!(c.call(&["BITPOS", &s, "2"]), error("ERR The bit argument must be 1 or 0."));
    assert_eq!(c.call(&["BITPOS", &missing, "0"]), int(0));
    assert_eq!(c.call(&["BITPOS", &missing, "1"]), int(-1));
    assert_eq!(c.call(&["SETRANGE", &ff, "0", "\u{7f}"]), int(1));
    assert_eq!(c.call(&["SETBIT", &ff, "0", "1"]), int(0));
    assert_eq!(c.call(&["APPEND", &ff, "\u{7f}"]), int(2));
    assert_eq!(c.call(&["SETBIT", &ff, "8", "1"]), int(0), "now \\xff\\xff");
    assert_eq!(c.call(&["BITPOS", &ff, "0"]), int(16), "past the end counts as zeros");
    assert_eq!(c.call(&["BITPOS", &ff, "0", "0", "-1"]), int(-1), "not with an explicit end");
    assert_eq!(c.call(&["BITPOS", &ff, "0", "1"]), int(16));
    assert_eq!(c.call(&["BITPOS", &ff, "0", "0", "-1", "bit"]), int(-1));
    assert_eq!(c.call(&["BITPOS", &ff, "0", "3", "bit"]), error("ERR value is not an integer or out of range"));
    assert_eq!(c.call(&["BITPOS", &ff, "0", "0", "x", "bit"]), error("ERR value is not an integer or out of range"));
    assert_eq!(c.call(&["BITPOS", &ff, "0", "0", "5", "x"]), error("ERR syntax error"));
}

#[test]
fn bitop() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (a, b, d, missing) = (key("opa"), key("opb"), key("opd"), key("nokey"));
    assert_eq!(c.call(&["SET", &a, "hello"]), OK);
    assert_eq!(c.call(&["SET", &b, "12345"]), OK);
    assert_eq!(c.call(&["BITOP", "AND", &d, &a, &b]), int(5));
    assert_eq!(c.call(&["GET", &d]), bulk("   $%"));
    assert_eq!(c.call(&["BITOP", "xor", &d, &a, &a]), int(5));
    assert_eq!(c.call(&["GET", &d]), bulk("\0\0\0\0\0"));
    assert_eq!(c.call(&["SET", &b, "ab"]), OK);
    assert_eq!(c.call(&["BITOP", "OR", &d, &b, &missing]), int(2));
    assert_eq!(c.call(&["GET", &d]), bulk("ab"));
    assert_eq!(c.call(&["BITOP", "NOT", &d, &a, &b]), error("ERR BITOP NOT must be called with a single source key."));
    assert_eq!(c.call(&["BITOP", "foo", &d, &a]), error("ERR syntax error"));
    assert_eq!(c.call(&["BITOP", "AND", &d, &missing]), int(0));
    assert_eq!(c.call(&["EXISTS", &d]), int(0), "an empty result deletes the destination");
}

#[test]
fn bitfield() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (k, missing) = (key("bf"), key("nokey"));
    let r = c.call(&[
        "BITFIELD", &k, "SET", "i8", "0", "-100", "GET", "u8", "0", "GET", "i4", "0", "INCRBY", "u2", "0", "5",
        "OVERFLOW", "SAT", "INCRBY", "i8", "0", "200", "OVERFLOW", "FAIL", "INCRBY", "i8", "0", "1", "SET", "u8", "#2",
        "255", "GET", "u8", "16",
    ]);
    assert_eq!(r, ints(&[Some(0), Some(156), Some(-7), Some(3), Some(127), None, Some(0), Some(255)]));
    assert_eq!(c.call(&["STRLEN", &k]), int(3));
    assert_eq!(
        c.call(&["BITFIELD", &k, "GET", "u8", "0", "GET", "u8", "8", "GET", "u8", "16"]),
        ints(&[Some(127), Some(0), Some(255)])
    );
    assert_eq!(c.call(&["BITFIELD", &k]), "*0\r\n");
    let r = c.call(&[
        "BITFIELD",
        &k,
        "OVERFLOW",
        "WRAP",
        "INCRBY",
        "i64",
        "0",
        "9223372036854775807",
        "INCRBY",
        "i64",
        "0",
        "9223372036854775807",
        "INCRBY",
        "u63",
        "64",
        "-1",
    ]);
    assert_eq!(r, ints(&[Some(-71777218572845057), Some(9151594818281930750), Some(9223372036854775807)]));
    let r = c.call(&[
        "BITFIELD",
        &k,
        "OVERFLOW",
        "sat",
        "incrby",
        "u63",
        "64",
        "-1",
        "incrby",
        "i64",
        "0",
        "-9223372036854775808",
        "incrby",
        "i64",
        "0",
        "-9223372036854775808",
    ]);
    assert_eq!(r, ints(&[Some(9223372036854775806), Some(-71777218572845058), Some(i64::MIN)]));

    assert_eq!(c.call(&["BITFIELD", &missing, "GET", "u8", "0"]), ints(&[Some(0)]));
    assert_eq!(c.call(&["EXISTS", &missing]), int(0), "GETs alone create nothing");
    let fail = key("bffail");
    assert_eq!(c.call(&["BITFIELD", &fail, "OVERFLOW", "FAIL", "INCRBY", "u2", "0", "5"]), ints(&[None]));
    assert_eq!(c.call(&["STRLEN", &fail]), int(1), "a write that overflows still sizes the value");
    let s = key("bfs");
    assert_eq!(c.call(&["SET", &s, "hello"]), OK);
    assert_eq!(
        c.call(&["BITFIELD_RO", &s, "GET", "i16", "8", "GET", "u63", "0", "GET", "i64", "0"]),
        ints(&[Some(25964), Some(3761268982783410176), Some(7522537965566820352)])
    );
    assert_eq!(c.call(&["BITFIELD", &s, "GET", "u8", "#1"]), ints(&[Some(101)]));
    let bad_type = "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.";
    for t in ["u64", "i65", "u0", "x8", "I8"] {
        assert_eq!(c.call(&["BITFIELD", &s, "GET", t, "0"]), error(bad_type), "{t}");
    }
    assert_eq!(c.call(&["BITFIELD", &s, "GET", "i8", "-1"]), error(OFFSET));
    assert_eq!(c.call(&["BITFIELD", &s, "GET", "u8", "#x"]), error(OFFSET));
    assert_eq!(c.call(&["BITFIELD", &s, "GET", "i8", "4294967296"]), error(OFFSET));
    assert_eq!(c.call(&["BITFIELD", &s, "OVERFLOW", "foo"]), error("ERR Invalid OVERFLOW type specified"));
    assert_eq!(c.call(&["BITFIELD", &s, "GET"]), error("ERR syntax error"));
    assert_eq!(c.call(&["BITFIELD", &s, "foo"]), error("ERR syntax error"));
    assert_eq!(
        c.call(&["BITFIELD", &s, "INCRBY", "u8", "0", "x"]),
        error("ERR value is not an integer or out of range")
    );
    assert_eq!(
        c.call(&["BITFIELD_RO", &s, "SET", "u8", "0", "1"]),
        error("ERR BITFIELD_RO only supports the GET subcommand")
    );
    assert_eq!(c.call(&["GET", &s]), bulk("hello"), "a refused BITFIELD writes nothing");
}

#[test]
fn lcs() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (a, b) = (key("lcs1"), key("lcs2"));
    assert_eq!(c.call(&["SET", &a, "ohmytext"]), OK);
    assert_eq!(c.call(&["SET", &b, "mynewtext"]), OK);
    assert_eq!(c.call(&["LCS", &a, &b]), bulk("mytext"));
    assert_eq!(c.call(&["LCS", &a, &b, "LEN"]), int(6));
    let range = |a0: i64, a1: i64, b0: i64, b1: i64, len: Option<i64>| {
        let mut s =
            format!("*{}\r\n*2\r\n{}{}*2\r\n{}{}", 2 + usize::from(len.is_some()), int(a0), int(a1), int(b0), int(b1));
        if let Some(l) = len {
            s.push_str(&int(l));
        }
        s
    };
    let idx = |ranges: &[String]| {
        format!("*4\r\n{}*{}\r\n{}{}{}", bulk("matches"), ranges.len(), ranges.concat(), bulk("len"), int(6))
    };
    assert_eq!(c.call(&["LCS", &a, &b, "IDX"]), idx(&[range(4, 7, 5, 8, None), range(2, 3, 0, 1, None)]));
    assert_eq!(c.call(&["LCS", &a, &b, "IDX", "MINMATCHLEN", "4", "WITHMATCHLEN"]), idx(&[range(4, 7, 5, 8, Some(4))]));
    assert_eq!(
        c.call(&["LCS", &a, &b, "idx", "withmatchlen"]),
        idx(&[range(4, 7, 5, 8, Some(4)), range(2, 3, 0, 1, Some(2))])
    );
    assert_eq!(
        c.call(&["LCS", &a, &b, "LEN", "IDX"]),
        error("ERR If you want both the length and indexes, please just use IDX.")
    );
    assert_eq!(c.call(&["LCS", &a, &b, "foo"]), error("ERR syntax error"));
    assert_eq!(c.call(&["LCS", &a, &b, "MINMATCHLEN", "x"]), error("ERR value is not an integer or out of range"));
    assert_eq!(c.call(&["LCS", &a, &key("nokey")]), bulk(""));
}

#[test]
fn time_touch_object() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let t = c.call(&["TIME"]);
    let parts: Vec<&str> = t.split("\r\n").collect();
    assert_eq!(parts[0], "*2", "{t}");
    let (secs, micros): (u64, u64) = (parts[2].parse().unwrap(), parts[4].parse().unwrap());
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    assert!(secs.abs_diff(now) <= 2 && micros < 1_000_000, "{t}");
    let (s, i, big, missing) = (key("objs"), key("obji"), key("objbig"), key("nokey"));
    assert_eq!(c.call(&["SET", &s, "hello"]), OK);
    assert_eq!(c.call(&["SET", &i, "12345"]), OK);
    assert_eq!(c.call(&["SET", &big, &"x".repeat(45)]), OK);
    assert_eq!(c.call(&["TOUCH", &s, &i, &missing, &s]), int(3));
    assert_eq!(c.call(&["OBJECT", "ENCODING", &i]), bulk("int"));
    assert_eq!(c.call(&["OBJECT", "encoding", &s]), bulk("embstr"));
    assert_eq!(c.call(&["OBJECT", "ENCODING", &big]), bulk("raw"));
    assert_eq!(c.call(&["SET", &big, "012"]), OK);
    assert_eq!(c.call(&["OBJECT", "ENCODING", &big]), bulk("embstr"), "a leading zero is not an integer");
    assert_eq!(c.call(&["OBJECT", "ENCODING", &missing]), NULL2);
    assert_eq!(c.call(&["OBJECT", "REFCOUNT", &s]), int(1));
    assert_eq!(c.call(&["OBJECT", "IDLETIME", &missing]), NULL2);
    assert_eq!(c.call(&["OBJECT", "FREQ", &missing]), NULL2);
    assert!(c.call(&["OBJECT", "IDLETIME", &s]).starts_with(':'));
    assert_eq!(c.call(&["OBJECT", "FREQ", &s]), error("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."));
    assert_eq!(c.call(&["OBJECT", "foo", &s]), error("ERR unknown subcommand 'foo'. Try OBJECT HELP."));
    assert_eq!(c.call(&["OBJECT", "FREQ"]), error("ERR wrong number of arguments for 'object|freq' command"));
    assert!(c
        .call(&["OBJECT", "HELP"])
        .contains("+OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n"));
}

#[test]
fn object_refcount_of_shared_integers() {
    // Redis shares the integers 0..9999 (REFCOUNT INT_MAX) only without
    // an LRU/LFU policy: amalgam's store mode reports noeviction.
    let Some(server) = resp_private(&["--eviction", "none"]) else { return };
    let mut c = Resp::new(&server);
    assert_eq!(c.call(&["SET", "small", "44"]), OK);
    assert_eq!(c.call(&["OBJECT", "REFCOUNT", "small"]), int(2147483647));
    assert_eq!(c.call(&["SET", "large", "12345"]), OK);
    assert_eq!(c.call(&["OBJECT", "REFCOUNT", "large"]), int(1));
    let cache = resp_private(&[]).unwrap();
    let mut c = Resp::new(&cache);
    assert_eq!(c.call(&["SET", "small", "44"]), OK);
    assert_eq!(c.call(&["OBJECT", "REFCOUNT", "small"]), int(1), "allkeys-lru shares none");
}

#[test]
fn bit_offsets_are_bounded_by_proto_max_bulk_len() {
    // As Redis's: an offset whose byte lies at or past proto-max-bulk-len
    // is refused (here set to its least, 1 MB, so the test stays small).
    let Some(server) = resp_private(&["--proto-max-bulk-len", "1mb"]) else { return };
    let mut c = Resp::new(&server);
    let last = (1u64 << 20) * 8 - 1;
    assert_eq!(c.call(&["GETBIT", "k", &(last + 1).to_string()]), error(OFFSET));
    assert_eq!(c.call(&["SETBIT", "k", &(last + 1).to_string(), "1"]), error(OFFSET));
    assert_eq!(c.call(&["GETBIT", "k", &last.to_string()]), int(0));
    assert_eq!(c.call(&["BITFIELD", "k", "GET", "u8", &(last - 7).to_string()]), ints(&[Some(0)]));
    assert_eq!(c.call(&["BITFIELD", "k", "GET", "u8", &(last + 1).to_string()]), error(OFFSET));
    // A value of the whole limit is a string Redis stores (past -I too).
    assert_eq!(c.call(&["SETBIT", "k", "8000", "1"]), int(0));
    assert_eq!(c.call(&["STRLEN", "k"]), int(1001));
    assert_eq!(c.call(&["SETBIT", "k", &last.to_string(), "1"]), int(0));
    assert_eq!(c.call(&["STRLEN", "k"]), int(1 << 20));
    assert_eq!(c.call(&["GETBIT", "k", "8000"]), int(1));
}
