//! Redis's sorted-set commands over RESP, black-box, byte for byte:
//! replies (scores as `%.17g` bulk strings in RESP2, doubles in RESP3;
//! WITHSCORES pairs flat in RESP2, nested in RESP3), error texts and
//! their order, WRONGTYPE, emptied sets deleting their key, and the
//! compact → large crossing (128 members, 64-byte members), and the
//! blocking BZPOPMIN BZPOPMAX BZMPOP. Runs against
//! amalgam by default; CI also runs it against Debian's redis-server 7
//! (`AMALGAM_TEST_RESP_ADDR`, see `common/mod.rs`), which proves every
//! expectation here is Redis's own.
mod common;
use common::resp::*;
use common::*;
use std::time::Duration;

const WRONGTYPE: &str = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
const NOT_INT: &str = "-ERR value is not an integer or out of range\r\n";
const NOT_FLOAT: &str = "-ERR value is not a valid float\r\n";
const RANGE_NOT_FLOAT: &str = "-ERR min or max is not a float\r\n";
const LEX_RANGE: &str = "-ERR min or max not valid string range item\r\n";
const SYNTAX: &str = "-ERR syntax error\r\n";
const EMPTY: &str = "*0\r\n";
const NULL_ARRAY2: &str = "*-1\r\n";
/// Members a compact sorted set holds at most (zset-max-listpack-entries).
const COMPACT_MEMBERS_MAX: usize = 128;
/// Bytes a compact sorted set's member holds at most
/// (zset-max-listpack-value).
const COMPACT_MEMBER_BYTES_MAX: usize = 64;

/// An array reply of bulk strings.
fn arr(items: &[&str]) -> String {
    let mut s = format!("*{}\r\n", items.len());
    for i in items {
        s.push_str(&bulk(i));
    }
    s
}

/// A RESP3 double reply.
fn dbl(v: &str) -> String {
    format!(",{v}\r\n")
}

/// WITHSCORES pairs in RESP2: one flat array of bulk strings.
fn pairs2(p: &[(&str, &str)]) -> String {
    let mut s = format!("*{}\r\n", p.len() * 2);
    for (m, sc) in p {
        s.push_str(&bulk(m));
        s.push_str(&bulk(sc));
    }
    s
}

/// WITHSCORES pairs in RESP3: an array of `[member, double]` arrays.
fn pairs3(p: &[(&str, &str)]) -> String {
    let mut s = format!("*{}\r\n", p.len());
    for (m, sc) in p {
        s.push_str(&format!("*2\r\n{}{}", bulk(m), dbl(sc)));
    }
    s
}

/// `k` filled with `pairs` (score, member).
fn zadd(c: &mut Resp, k: &str, pairs: &[(&str, &str)]) {
    let mut args = vec!["ZADD", k];
    for (s, m) in pairs {
        args.push(s);
        args.push(m);
    }
    let n = as_int(&c.call(&args));
    assert!(n >= 0);
}

fn hello3(c: &mut Resp) {
    assert!(c.call(&["HELLO", "3"]).starts_with('%'));
}

#[test]
fn zadd_flags_and_replies() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("z");
    assert_eq!(c.call(&["ZADD", &k, "1", "a", "2", "b", "3", "c"]), int(3));
    assert_eq!(c.call(&["TYPE", &k]), "+zset\r\n");
    // NX adds only new members; XX only updates; CH counts updates.
    assert_eq!(c.call(&["ZADD", &k, "NX", "5", "a", "4", "d"]), int(1));
    assert_eq!(c.call(&["ZSCORE", &k, "a"]), bulk("1"));
    assert_eq!(c.call(&["ZADD", &k, "XX", "10", "a", "20", "zz"]), int(0));
    assert_eq!(c.call(&["ZSCORE", &k, "a"]), bulk("10"));
    assert_eq!(c.call(&["ZSCORE", &k, "zz"]), NULL2);
    assert_eq!(c.call(&["ZADD", &k, "XX", "CH", "11", "a", "2", "b"]), int(1));
    // GT/LT only move a score up/down; new members are still added.
    assert_eq!(c.call(&["ZADD", &k, "GT", "CH", "1", "a", "12", "b", "7", "e"]), int(2));
    assert_eq!(c.call(&["ZSCORE", &k, "a"]), bulk("11"));
    assert_eq!(c.call(&["ZSCORE", &k, "b"]), bulk("12"));
    assert_eq!(c.call(&["ZADD", &k, "LT", "ch", "100", "a", "0", "c"]), int(1));
    assert_eq!(c.call(&["ZSCORE", &k, "c"]), bulk("0"));
    // INCR: the new score, nil when a flag refuses.
    assert_eq!(c.call(&["ZADD", &k, "INCR", "1.5", "a"]), bulk("12.5"));
    assert_eq!(c.call(&["ZADD", &k, "NX", "INCR", "1", "a"]), NULL2);
    assert_eq!(c.call(&["ZADD", &k, "XX", "INCR", "1", "new"]), NULL2);
    assert_eq!(c.call(&["ZADD", &k, "GT", "INCR", "-1", "a"]), NULL2);
    assert_eq!(c.call(&["ZADD", &k, "INCR", "0", "a"]), bulk("12.5"));
    // XX on a missing key creates nothing.
    let none = key("none");
    assert_eq!(c.call(&["ZADD", &none, "XX", "1", "a"]), int(0));
    assert_eq!(c.call(&["ZADD", &none, "XX", "INCR", "1", "a"]), NULL2);
    assert_eq!(c.call(&["EXISTS", &none]), int(0));
    // Errors, in Redis's order: pairs, flag conflicts, then every score.
    assert_eq!(
        c.call(&["ZADD", &k, "NX", "XX", "1", "a"]),
        error("ERR XX and NX options at the same time are not compatible")
    );
    let gtlt = error("ERR GT, LT, and/or NX options at the same time are not compatible");
    assert_eq!(c.call(&["ZADD", &k, "GT", "LT", "1", "a"]), gtlt);
    assert_eq!(c.call(&["ZADD", &k, "NX", "GT", "1", "a"]), gtlt);
    assert_eq!(
        c.call(&["ZADD", &k, "INCR", "1", "a", "2", "b"]),
        error("ERR INCR option supports a single increment-element pair")
    );
    assert_eq!(c.call(&["ZADD", &k, "1", "a", "2"]), SYNTAX);
    assert_eq!(c.call(&["ZADD", &k, "NX", "XX", "1"]), SYNTAX);
    assert_eq!(c.call(&["ZADD", &k, "1"]), error("ERR wrong number of arguments for 'zadd' command"));
    assert_eq!(c.call(&["ZADD", &k, "1", "a", "x", "b"]), NOT_FLOAT);
    assert_eq!(c.call(&["ZADD", &k, "nan", "a"]), NOT_FLOAT);
    assert_eq!(c.call(&["ZADD", &k, "", "a"]), NOT_FLOAT);
    assert_eq!(c.call(&["ZSCORE", &k, "a"]), bulk("12.5"), "nothing added by a refused ZADD");
    // Infinities, and inf + -inf.
    assert_eq!(c.call(&["ZADD", &k, "inf", "i", "-inf", "j"]), int(2));
    assert_eq!(c.call(&["ZSCORE", &k, "i"]), bulk("inf"));
    assert_eq!(c.call(&["ZSCORE", &k, "j"]), bulk("-inf"));
    assert_eq!(c.call(&["ZINCRBY", &k, "-inf", "i"]), error("ERR resulting score is not a number (NaN)"));
    assert_eq!(c.call(&["ZSCORE", &k, "i"]), bulk("inf"));
    // ZINCRBY: creates key and member; %.17g.
    let n = key("n");
    assert_eq!(c.call(&["ZINCRBY", &n, "0.1", "m"]), bulk("0.10000000000000001"));
    assert_eq!(c.call(&["ZINCRBY", &n, "2", "m"]), bulk("2.1000000000000001"));
    assert_eq!(c.call(&["ZINCRBY", &n, "x", "m"]), NOT_FLOAT);
    assert_eq!(c.call(&["ZINCRBY", &n, "1e300", "m"]), bulk("1.0000000000000001e+300"));
    hello3(&mut c);
    assert_eq!(c.call(&["ZINCRBY", &n, "-1e300", "m"]), dbl("0"));
    assert_eq!(c.call(&["ZADD", &n, "INCR", "1.5", "m"]), dbl("1.5"));
    assert_eq!(c.call(&["ZADD", &n, "NX", "INCR", "1.5", "m"]), NULL3);
    assert_eq!(c.call(&["ZSCORE", &n, "m"]), dbl("1.5"));
    assert_eq!(c.call(&["ZSCORE", &n, "x"]), NULL3);
}

#[test]
fn point_reads_and_removal() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("z");
    let none = key("none");
    zadd(&mut c, &k, &[("1", "a"), ("2", "b"), ("2", "c"), ("3", "d")]);
    assert_eq!(c.call(&["ZCARD", &k]), int(4));
    assert_eq!(c.call(&["ZCARD", &none]), int(0));
    assert_eq!(c.call(&["ZMSCORE", &k, "a", "x", "d"]), format!("*3\r\n{}{NULL2}{}", bulk("1"), bulk("3")));
    assert_eq!(c.call(&["ZMSCORE", &none, "a", "b"]), format!("*2\r\n{NULL2}{NULL2}"));
    assert_eq!(c.call(&["ZSCORE", &none, "a"]), NULL2);
    assert_eq!(c.call(&["ZRANK", &k, "a"]), int(0));
    assert_eq!(c.call(&["ZRANK", &k, "c"]), int(2));
    assert_eq!(c.call(&["ZREVRANK", &k, "c"]), int(1));
    assert_eq!(c.call(&["ZRANK", &k, "x"]), NULL2);
    assert_eq!(c.call(&["ZREVRANK", &none, "x"]), NULL2);
    assert_eq!(c.call(&["ZCOUNT", &k, "-inf", "+inf"]), int(4));
    assert_eq!(c.call(&["ZCOUNT", &k, "(1", "2"]), int(2));
    assert_eq!(c.call(&["ZCOUNT", &k, "(1", "(2"]), int(0));
    assert_eq!(c.call(&["ZCOUNT", &none, "0", "1"]), int(0));
    assert_eq!(c.call(&["ZCOUNT", &none, "a", "1"]), RANGE_NOT_FLOAT);
    let lex = key("lex");
    zadd(&mut c, &lex, &[("0", "a"), ("0", "b"), ("0", "c"), ("0", "d")]);
    assert_eq!(c.call(&["ZLEXCOUNT", &lex, "-", "+"]), int(4));
    assert_eq!(c.call(&["ZLEXCOUNT", &lex, "[b", "(d"]), int(2));
    assert_eq!(c.call(&["ZLEXCOUNT", &lex, "b", "+"]), LEX_RANGE);
    assert_eq!(c.call(&["ZLEXCOUNT", &none, "-", "+"]), int(0));
    assert_eq!(c.call(&["ZREM", &k, "a", "x", "b"]), int(2));
    assert_eq!(c.call(&["ZREM", &k, "a"]), int(0));
    assert_eq!(c.call(&["ZREM", &none, "a"]), int(0));
    assert_eq!(c.call(&["ZREM", &k, "c", "d"]), int(2));
    assert_eq!(c.call(&["EXISTS", &k]), int(0), "an emptied sorted set is deleted");
    hello3(&mut c);
    zadd(&mut c, &k, &[("0.5", "a")]);
    assert_eq!(c.call(&["ZMSCORE", &k, "a", "x"]), format!("*2\r\n{}{NULL3}", dbl("0.5")));
    assert_eq!(c.call(&["ZRANK", &k, "x"]), NULL3);
}

#[test]
fn zrange_family() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("z");
    let none = key("none");
    zadd(&mut c, &k, &[("1", "a"), ("2", "b"), ("3", "c"), ("4", "d"), ("5", "e")]);
    assert_eq!(c.call(&["ZRANGE", &k, "0", "-1"]), arr(&["a", "b", "c", "d", "e"]));
    assert_eq!(c.call(&["ZRANGE", &k, "-2", "100", "WITHSCORES"]), pairs2(&[("d", "4"), ("e", "5")]));
    assert_eq!(c.call(&["ZRANGE", &k, "3", "1"]), EMPTY);
    assert_eq!(c.call(&["ZRANGE", &k, "0", "1", "REV"]), arr(&["e", "d"]));
    assert_eq!(c.call(&["ZREVRANGE", &k, "0", "1", "WITHSCORES"]), pairs2(&[("e", "5"), ("d", "4")]));
    assert_eq!(c.call(&["ZRANGE", &k, "(1", "3", "BYSCORE"]), arr(&["b", "c"]));
    assert_eq!(c.call(&["ZRANGE", &k, "+inf", "(1", "BYSCORE", "REV", "LIMIT", "1", "2"]), arr(&["d", "c"]));
    assert_eq!(
        c.call(&["ZRANGEBYSCORE", &k, "-inf", "+inf", "LIMIT", "1", "2", "WITHSCORES"]),
        pairs2(&[("b", "2"), ("c", "3")])
    );
    assert_eq!(c.call(&["ZRANGEBYSCORE", &k, "2", "3", "LIMIT", "0", "-1"]), arr(&["b", "c"]));
    assert_eq!(c.call(&["ZRANGEBYSCORE", &k, "2", "3", "LIMIT", "-1", "5"]), EMPTY);
    assert_eq!(c.call(&["ZREVRANGEBYSCORE", &k, "4", "2"]), arr(&["d", "c", "b"]));
    assert_eq!(c.call(&["ZREVRANGEBYSCORE", &k, "2", "4"]), EMPTY);
    let lex = key("lex");
    zadd(&mut c, &lex, &[("0", "a"), ("0", "b"), ("0", "c"), ("0", "d"), ("0", "e")]);
    assert_eq!(c.call(&["ZRANGEBYLEX", &lex, "[b", "(e"]), arr(&["b", "c", "d"]));
    assert_eq!(c.call(&["ZRANGEBYLEX", &lex, "-", "+", "LIMIT", "1", "2"]), arr(&["b", "c"]));
    assert_eq!(c.call(&["ZREVRANGEBYLEX", &lex, "+", "[c"]), arr(&["e", "d", "c"]));
    assert_eq!(c.call(&["ZRANGE", &lex, "[e", "-", "BYLEX", "REV", "LIMIT", "0", "2"]), arr(&["e", "d"]));
    assert_eq!(c.call(&["ZRANGE", &none, "0", "-1"]), EMPTY);
    assert_eq!(c.call(&["ZRANGEBYLEX", &none, "-", "+"]), EMPTY);
    // Errors: options first (in order), their conflicts, then the range,
    // then the key.
    assert_eq!(c.call(&["ZRANGE", &none, "0", "x"]), NOT_INT);
    assert_eq!(c.call(&["ZRANGE", &k, "0", "1", "foo"]), SYNTAX);
    assert_eq!(c.call(&["ZRANGE", &k, "0", "1", "LIMIT", "0"]), SYNTAX);
    assert_eq!(c.call(&["ZRANGE", &k, "0", "1", "BYSCORE", "LIMIT", "x", "1"]), NOT_INT);
    assert_eq!(
        c.call(&["ZRANGE", &k, "0", "-1", "LIMIT", "0", "1"]),
        error("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")
    );
    assert_eq!(
        c.call(&["ZRANGEBYLEX", &lex, "-", "+", "WITHSCORES"]),
        error("ERR syntax error, WITHSCORES not supported in combination with BYLEX")
    );
    assert_eq!(c.call(&["ZRANGEBYSCORE", &k, "0", "1", "REV"]), SYNTAX);
    assert_eq!(c.call(&["ZRANGE", &k, "0", "1", "BYSCORE", "BYLEX"]), SYNTAX);
    assert_eq!(c.call(&["ZREVRANGE", &k, "0", "1", "REV"]), SYNTAX);
    assert_eq!(c.call(&["ZRANGE", &k, "0", "-1", "BYLEX"]), LEX_RANGE);
    assert_eq!(c.call(&["ZRANGEBYSCORE", &none, "a", "b"]), RANGE_NOT_FLOAT);
    assert_eq!(c.call(&["ZRANGE", &k, "1", "0", "BYSCORE", "LIMIT", "0", "1", "WITHSCORES"]), EMPTY);
    hello3(&mut c);
    assert_eq!(c.call(&["ZRANGE", &k, "0", "1", "WITHSCORES"]), pairs3(&[("a", "1"), ("b", "2")]));
    assert_eq!(c.call(&["ZREVRANGEBYSCORE", &k, "+inf", "4", "WITHSCORES"]), pairs3(&[("e", "5"), ("d", "4")]));
    assert_eq!(c.call(&["ZRANGE", &k, "0", "1"]), arr(&["a", "b"]));
}

#[test]
fn zrangestore() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("z");
    let dst = key("dst");
    let none = key("none");
    zadd(&mut c, &k, &[("1", "a"), ("2", "b"), ("3", "c")]);
    assert_eq!(c.call(&["ZRANGESTORE", &dst, &k, "1", "-1"]), int(2));
    assert_eq!(c.call(&["ZRANGE", &dst, "0", "-1", "WITHSCORES"]), pairs2(&[("b", "2"), ("c", "3")]));
    assert_eq!(c.call(&["ZRANGESTORE", &dst, &k, "+inf", "-inf", "BYSCORE", "REV", "LIMIT", "0", "1"]), int(1));
    assert_eq!(c.call(&["ZRANGE", &dst, "0", "-1", "WITHSCORES"]), pairs2(&[("c", "3")]));
    assert_eq!(c.call(&["ZRANGESTORE", &dst, &k, "0", "-1", "WITHSCORES"]), SYNTAX);
    // An empty result deletes the destination.
    assert_eq!(c.call(&["ZRANGESTORE", &dst, &none, "0", "-1"]), int(0));
    assert_eq!(c.call(&["EXISTS", &dst]), int(0));
    // The destination may hold any kind (and a TTL): it is replaced.
    assert_eq!(c.call(&["SET", &dst, "x", "EX", "100"]), OK);
    assert_eq!(c.call(&["ZRANGESTORE", &dst, &k, "0", "0"]), int(1));
    assert_eq!(c.call(&["TYPE", &dst]), "+zset\r\n");
    assert_eq!(c.call(&["TTL", &dst]), int(-1));
    let s = key("s");
    assert_eq!(c.call(&["SET", &s, "x"]), OK);
    assert_eq!(c.call(&["ZRANGESTORE", &dst, &s, "0", "0"]), WRONGTYPE);
}

#[test]
fn pops() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("z");
    let none = key("none");
    zadd(&mut c, &k, &[("1", "a"), ("2", "b"), ("3", "c"), ("4", "d")]);
    assert_eq!(c.call(&["ZPOPMIN", &k]), pairs2(&[("a", "1")]));
    assert_eq!(c.call(&["ZPOPMAX", &k, "2"]), pairs2(&[("d", "4"), ("c", "3")]));
    assert_eq!(c.call(&["ZPOPMIN", &k, "0"]), EMPTY);
    assert_eq!(c.call(&["ZPOPMIN", &none]), EMPTY);
    assert_eq!(c.call(&["ZPOPMIN", &none, "3"]), EMPTY);
    let positive = error("ERR value is out of range, must be positive");
    assert_eq!(c.call(&["ZPOPMIN", &k, "-1"]), positive);
    assert_eq!(c.call(&["ZPOPMIN", &k, "x"]), positive);
    assert_eq!(c.call(&["ZPOPMIN", &k, "1", "2"]), SYNTAX);
    assert_eq!(c.call(&["ZPOPMAX", &k, "10"]), pairs2(&[("b", "2")]));
    assert_eq!(c.call(&["EXISTS", &k]), int(0));
    // ZMPOP: the first non-empty key; nested pairs in RESP2 too.
    zadd(&mut c, &k, &[("1", "a"), ("2", "b"), ("3", "c")]);
    let nested2 = |key: &str, p: &[(&str, &str)]| {
        let mut s = format!("*2\r\n{}*{}\r\n", bulk(key), p.len());
        for (m, sc) in p {
            s.push_str(&format!("*2\r\n{}{}", bulk(m), bulk(sc)));
        }
        s
    };
    assert_eq!(c.call(&["ZMPOP", "2", &none, &k, "MIN"]), nested2(&k, &[("a", "1")]));
    assert_eq!(c.call(&["ZMPOP", "1", &k, "MAX", "COUNT", "5"]), nested2(&k, &[("c", "3"), ("b", "2")]));
    assert_eq!(c.call(&["EXISTS", &k]), int(0));
    assert_eq!(c.call(&["ZMPOP", "1", &k, "MIN"]), NULL_ARRAY2);
    assert_eq!(c.call(&["ZMPOP", "0", &k, "MIN"]), error("ERR numkeys should be greater than 0"));
    assert_eq!(c.call(&["ZMPOP", "2", &k, "MIN"]), SYNTAX);
    assert_eq!(c.call(&["ZMPOP", "1", &k, "FOO"]), SYNTAX);
    assert_eq!(c.call(&["ZMPOP", "1", &k, "MIN", "COUNT", "0"]), error("ERR count should be greater than 0"));
    assert_eq!(c.call(&["ZMPOP", "1", &k, "MIN", "COUNT", "1", "COUNT", "1"]), SYNTAX);
    hello3(&mut c);
    zadd(&mut c, &k, &[("1", "a"), ("2", "b"), ("3", "c")]);
    // Without a count the pair is flat in RESP3 too; with one, nested.
    assert_eq!(c.call(&["ZPOPMIN", &k]), format!("*2\r\n{}{}", bulk("a"), dbl("1")));
    assert_eq!(c.call(&["ZPOPMAX", &k, "1"]), pairs3(&[("c", "3")]));
    assert_eq!(c.call(&["ZMPOP", "1", &k, "MIN"]), format!("*2\r\n{}{}", bulk(&k), pairs3(&[("b", "2")])));
    assert_eq!(c.call(&["ZMPOP", "1", &k, "MIN"]), NULL3);
}

#[test]
fn remove_ranges() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("z");
    let none = key("none");
    zadd(&mut c, &k, &[("1", "a"), ("2", "b"), ("3", "c"), ("4", "d"), ("5", "e"), ("6", "f")]);
    assert_eq!(c.call(&["ZREMRANGEBYRANK", &k, "0", "1"]), int(2));
    assert_eq!(c.call(&["ZREMRANGEBYSCORE", &k, "(3", "4"]), int(1));
    assert_eq!(c.call(&["ZRANGE", &k, "0", "-1"]), arr(&["c", "e", "f"]));
    assert_eq!(c.call(&["ZREMRANGEBYRANK", &k, "5", "10"]), int(0));
    assert_eq!(c.call(&["ZREMRANGEBYRANK", &k, "x", "1"]), NOT_INT);
    assert_eq!(c.call(&["ZREMRANGEBYSCORE", &k, "a", "1"]), RANGE_NOT_FLOAT);
    assert_eq!(c.call(&["ZREMRANGEBYLEX", &k, "a", "b"]), LEX_RANGE);
    assert_eq!(c.call(&["ZREMRANGEBYRANK", &none, "0", "1"]), int(0));
    assert_eq!(c.call(&["ZREMRANGEBYSCORE", &k, "-inf", "+inf"]), int(3));
    assert_eq!(c.call(&["EXISTS", &k]), int(0));
    let lex = key("lex");
    zadd(&mut c, &lex, &[("0", "a"), ("0", "b"), ("0", "c"), ("0", "d")]);
    assert_eq!(c.call(&["ZREMRANGEBYLEX", &lex, "[a", "(c"]), int(2));
    assert_eq!(c.call(&["ZRANGE", &lex, "0", "-1"]), arr(&["c", "d"]));
    assert_eq!(c.call(&["ZREMRANGEBYLEX", &lex, "-", "+"]), int(2));
    assert_eq!(c.call(&["EXISTS", &lex]), int(0));
}

#[test]
fn randmember_and_scan() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("z");
    let none = key("none");
    zadd(&mut c, &k, &[("1", "a"), ("2", "b"), ("3", "c")]);
    let one = c.call(&["ZRANDMEMBER", &k]);
    assert!([bulk("a"), bulk("b"), bulk("c")].contains(&one), "{one:?}");
    assert_eq!(c.call(&["ZRANDMEMBER", &none]), NULL2);
    assert_eq!(c.call(&["ZRANDMEMBER", &none, "5"]), EMPTY);
    assert_eq!(c.call(&["ZRANDMEMBER", &k, "0"]), EMPTY);
    assert_eq!(c.call(&["ZRANDMEMBER", &k, "x"]), NOT_INT);
    assert_eq!(c.call(&["ZRANDMEMBER", &k, "1", "foo"]), SYNTAX);
    assert_eq!(
        c.call(&["ZRANDMEMBER", &k, "-9223372036854775808"]),
        error("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
    );
    assert_eq!(c.call(&["ZRANDMEMBER", &k, "-9223372036854775807", "WITHSCORES"]), error("ERR value is out of range"));
    // A count at least the size: every member once.
    let all = c.call(&["ZRANDMEMBER", &k, "10", "WITHSCORES"]);
    assert!(all.starts_with("*6\r\n"), "{all:?}");
    for p in [("a", "1"), ("b", "2"), ("c", "3")] {
        assert!(all.contains(&format!("{}{}", bulk(p.0), bulk(p.1))), "{all:?}");
    }
    // Negative: |count| picks, repeats allowed.
    let picks = c.call(&["ZRANDMEMBER", &k, "-5"]);
    assert!(picks.starts_with("*5\r\n"), "{picks:?}");
    // ZSCAN: scores as bulk strings in both protocols.
    assert_eq!(
        c.call(&["ZSCAN", &k, "0"]),
        format!("*2\r\n{}{}", bulk("0"), pairs2(&[("a", "1"), ("b", "2"), ("c", "3")]))
    );
    assert_eq!(c.call(&["ZSCAN", &k, "0", "MATCH", "b*"]), format!("*2\r\n{}{}", bulk("0"), pairs2(&[("b", "2")])));
    assert_eq!(c.call(&["ZSCAN", &none, "0"]), format!("*2\r\n{}{EMPTY}", bulk("0")));
    assert_eq!(c.call(&["ZSCAN", &k, "x"]), error("ERR invalid cursor"));
    assert_eq!(c.call(&["ZSCAN", &k, "0", "COUNT", "0"]), SYNTAX);
    assert_eq!(c.call(&["ZSCAN", &k, "0", "FOO"]), SYNTAX);
    // Redis checks the options only once it found the key.
    assert_eq!(c.call(&["ZSCAN", &none, "0", "FOO"]), format!("*2\r\n{}{EMPTY}", bulk("0")));
    hello3(&mut c);
    assert_eq!(c.call(&["ZSCAN", &k, "0", "MATCH", "c"]), format!("*2\r\n{}{}", bulk("0"), pairs2(&[("c", "3")])));
    let all = c.call(&["ZRANDMEMBER", &k, "3", "WITHSCORES"]);
    assert!(all.starts_with("*3\r\n*2\r\n"), "{all:?}");
    assert!(all.contains(&format!("*2\r\n{}{}", bulk("b"), dbl("2"))), "{all:?}");
}

#[test]
fn union_inter_diff() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (a, b, none, s) = (key("a"), key("b"), key("none"), key("s"));
    zadd(&mut c, &a, &[("1", "x"), ("2", "y"), ("3", "z")]);
    zadd(&mut c, &b, &[("10", "y"), ("20", "z"), ("30", "w")]);
    assert_eq!(c.call(&["ZUNION", "2", &a, &b]), arr(&["x", "y", "z", "w"]));
    assert_eq!(
        c.call(&["ZUNION", "2", &a, &b, "WITHSCORES"]),
        pairs2(&[("x", "1"), ("y", "12"), ("z", "23"), ("w", "30")])
    );
    assert_eq!(
        c.call(&["ZUNION", "2", &a, &b, "WEIGHTS", "2", "0.5", "AGGREGATE", "MAX", "WITHSCORES"]),
        pairs2(&[("x", "2"), ("y", "5"), ("z", "10"), ("w", "15")])
    );
    assert_eq!(c.call(&["ZINTER", "2", &a, &b, "AGGREGATE", "MIN", "WITHSCORES"]), pairs2(&[("y", "2"), ("z", "3")]));
    assert_eq!(c.call(&["ZINTER", "2", &a, &none]), EMPTY);
    assert_eq!(c.call(&["ZUNION", "2", &a, &none, "WITHSCORES"]), pairs2(&[("x", "1"), ("y", "2"), ("z", "3")]));
    assert_eq!(c.call(&["ZDIFF", "2", &a, &b, "WITHSCORES"]), pairs2(&[("x", "1")]));
    assert_eq!(c.call(&["ZDIFF", "2", &none, &a]), EMPTY);
    assert_eq!(c.call(&["ZINTERCARD", "2", &a, &b]), int(2));
    assert_eq!(c.call(&["ZINTERCARD", "2", &a, &b, "LIMIT", "1"]), int(1));
    assert_eq!(c.call(&["ZINTERCARD", "2", &a, &b, "LIMIT", "0"]), int(2));
    // inf × 0 and inf + -inf are 0.
    let (p, q) = (key("p"), key("q"));
    zadd(&mut c, &p, &[("inf", "m")]);
    zadd(&mut c, &q, &[("-inf", "m")]);
    assert_eq!(c.call(&["ZUNION", "2", &p, &q, "WITHSCORES"]), pairs2(&[("m", "0")]));
    assert_eq!(c.call(&["ZINTER", "2", &p, &q, "WEIGHTS", "0", "1", "WITHSCORES"]), pairs2(&[("m", "-inf")]));
    // Errors, in Redis's order: numkeys, the keys' kinds, the options.
    assert_eq!(c.call(&["ZUNION", "0", &a]), error("ERR at least 1 input key is needed for 'zunion' command"));
    assert_eq!(
        c.call(&["ZINTERSTORE", &none, "0", &a]),
        error("ERR at least 1 input key is needed for 'zinterstore' command")
    );
    assert_eq!(c.call(&["ZINTERCARD", "0", &a]), error("ERR at least 1 input key is needed for 'zintercard' command"));
    assert_eq!(c.call(&["ZUNION", "x", &a]), NOT_INT);
    assert_eq!(c.call(&["ZUNION", "3", &a, &b]), SYNTAX);
    assert_eq!(c.call(&["SET", &s, "v"]), OK);
    assert_eq!(c.call(&["ZUNION", "2", &a, &s, "WEIGHTS", "x"]), WRONGTYPE);
    assert_eq!(c.call(&["ZUNION", "2", &a, &b, "WEIGHTS", "x", "1"]), error("ERR weight value is not a float"));
    assert_eq!(c.call(&["ZUNION", "2", &a, &b, "WEIGHTS", "1"]), SYNTAX);
    assert_eq!(c.call(&["ZUNION", "2", &a, &b, "AGGREGATE", "FOO"]), SYNTAX);
    assert_eq!(c.call(&["ZDIFF", "2", &a, &b, "WEIGHTS", "1", "1"]), SYNTAX);
    assert_eq!(c.call(&["ZINTERCARD", "2", &a, &b, "WITHSCORES"]), SYNTAX);
    assert_eq!(c.call(&["ZINTERCARD", "2", &a, &b, "LIMIT", "-1"]), error("ERR LIMIT can't be negative"));
    assert_eq!(c.call(&["ZINTERCARD", "2", &a, &b, "LIMIT", "x"]), error("ERR LIMIT can't be negative"));
    // STORE forms: replace the destination (any kind), delete it when
    // empty, reject WITHSCORES.
    let d = key("d");
    assert_eq!(c.call(&["ZUNIONSTORE", &d, "2", &a, &b, "WEIGHTS", "1", "-1"]), int(4));
    assert_eq!(
        c.call(&["ZRANGE", &d, "0", "-1", "WITHSCORES"]),
        pairs2(&[("w", "-30"), ("z", "-17"), ("y", "-8"), ("x", "1")])
    );
    assert_eq!(c.call(&["ZINTERSTORE", &d, "2", &a, &b]), int(2));
    assert_eq!(c.call(&["ZRANGE", &d, "0", "-1", "WITHSCORES"]), pairs2(&[("y", "12"), ("z", "23")]));
    assert_eq!(c.call(&["ZDIFFSTORE", &d, "2", &b, &a]), int(1));
    assert_eq!(c.call(&["ZRANGE", &d, "0", "-1", "WITHSCORES"]), pairs2(&[("w", "30")]));
    assert_eq!(c.call(&["ZUNIONSTORE", &d, "1", &a, "WITHSCORES"]), SYNTAX);
    assert_eq!(c.call(&["ZDIFFSTORE", &d, "1", &a, "AGGREGATE", "SUM"]), SYNTAX);
    assert_eq!(c.call(&["ZINTERSTORE", &d, "2", &a, &none]), int(0));
    assert_eq!(c.call(&["EXISTS", &d]), int(0));
    assert_eq!(c.call(&["ZUNIONSTORE", &s, "1", &a]), int(3));
    assert_eq!(c.call(&["TYPE", &s]), "+zset\r\n");
    // A source may be the destination.
    assert_eq!(c.call(&["ZUNIONSTORE", &a, "2", &a, &b]), int(4));
    assert_eq!(c.call(&["ZSCORE", &a, "y"]), bulk("12"));
    hello3(&mut c);
    assert_eq!(c.call(&["ZINTER", "2", &a, &b, "WITHSCORES"]), pairs3(&[("y", "22"), ("z", "43"), ("w", "60")]));
    assert_eq!(c.call(&["ZDIFF", "1", &b, "WITHSCORES"]), pairs3(&[("y", "10"), ("z", "20"), ("w", "30")]));
}

/// Plain sets are inputs whose members score 1.
#[test]
fn sets_are_inputs_with_score_one() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (a, s) = (key("a"), key("s"));
    assert_eq!(c.call(&["SADD", &s, "y", "w", "v"]), int(3));
    zadd(&mut c, &a, &[("1", "x"), ("2", "y")]);
    assert_eq!(
        c.call(&["ZUNION", "2", &a, &s, "WITHSCORES"]),
        pairs2(&[("v", "1"), ("w", "1"), ("x", "1"), ("y", "3")])
    );
    assert_eq!(c.call(&["ZINTER", "2", &a, &s, "WEIGHTS", "1", "5", "WITHSCORES"]), pairs2(&[("y", "7")]));
    assert_eq!(c.call(&["ZDIFF", "2", &s, &a, "WITHSCORES"]), pairs2(&[("v", "1"), ("w", "1")]));
    assert_eq!(c.call(&["ZINTERCARD", "2", &s, &a]), int(1));
    // But a set is not a sorted set for the other commands.
    assert_eq!(c.call(&["ZRANGE", &s, "0", "-1"]), WRONGTYPE);
}

#[test]
fn wrongtype_against_a_string() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let s = key("s");
    assert_eq!(c.call(&["SET", &s, "v"]), OK);
    let cmds: [&[&str]; 26] = [
        &["ZADD", &s, "1", "a"],
        &["ZADD", &s, "XX", "1", "a"],
        &["ZINCRBY", &s, "1", "a"],
        &["ZREM", &s, "a"],
        &["ZCARD", &s],
        &["ZSCORE", &s, "a"],
        &["ZMSCORE", &s, "a"],
        &["ZRANK", &s, "a"],
        &["ZREVRANK", &s, "a"],
        &["ZCOUNT", &s, "0", "1"],
        &["ZLEXCOUNT", &s, "-", "+"],
        &["ZRANGE", &s, "0", "-1"],
        &["ZRANGEBYSCORE", &s, "0", "1"],
        &["ZREVRANGEBYSCORE", &s, "1", "0"],
        &["ZRANGEBYLEX", &s, "-", "+"],
        &["ZREVRANGEBYLEX", &s, "+", "-"],
        &["ZREVRANGE", &s, "0", "1"],
        &["ZPOPMIN", &s],
        &["ZPOPMAX", &s, "2"],
        &["ZMPOP", "1", &s, "MIN"],
        &["ZRANDMEMBER", &s],
        &["ZRANDMEMBER", &s, "2"],
        &["ZREMRANGEBYRANK", &s, "0", "1"],
        &["ZREMRANGEBYSCORE", &s, "0", "1"],
        &["ZREMRANGEBYLEX", &s, "-", "+"],
        &["ZSCAN", &s, "0"],
    ];
    for cmd in cmds {
        assert_eq!(c.call(cmd), WRONGTYPE, "{cmd:?}");
    }
    assert_eq!(c.call(&["GET", &s]), bulk("v"), "the string is untouched");
    // And other kinds' commands on a sorted set.
    let z = key("z");
    zadd(&mut c, &z, &[("1", "a")]);
    assert_eq!(c.call(&["GET", &z]), WRONGTYPE);
    assert_eq!(c.call(&["APPEND", &z, "x"]), WRONGTYPE);
    assert_eq!(c.call(&["SADD", &z, "x"]), WRONGTYPE);
    assert_eq!(c.call(&["LPUSH", &z, "x"]), WRONGTYPE);
    assert_eq!(c.call(&["HGET", &z, "x"]), WRONGTYPE);
}

/// Crossing the thresholds: the 129th member, or a 65-byte member, makes
/// the set large ("skiplist"); every command answers the same in both
/// forms.
#[test]
fn a_large_sorted_set() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("big");
    for i in 0..COMPACT_MEMBERS_MAX {
        assert_eq!(c.call(&["ZADD", &k, &i.to_string(), &format!("m{i:04}")]), int(1));
    }
    assert_eq!(c.call(&["OBJECT", "ENCODING", &k]), bulk("listpack"));
    assert_eq!(c.call(&["ZADD", &k, "1000", "last"]), int(1));
    assert_eq!(c.call(&["OBJECT", "ENCODING", &k]), bulk("skiplist"));
    assert_eq!(c.call(&["ZCARD", &k]), int(COMPACT_MEMBERS_MAX as i64 + 1));
    assert_eq!(c.call(&["ZSCORE", &k, "m0100"]), bulk("100"));
    assert_eq!(c.call(&["ZRANK", &k, "m0100"]), int(100));
    assert_eq!(c.call(&["ZREVRANK", &k, "last"]), int(0));
    assert_eq!(c.call(&["ZRANGE", &k, "10", "11", "WITHSCORES"]), pairs2(&[("m0010", "10"), ("m0011", "11")]));
    assert_eq!(c.call(&["ZRANGEBYSCORE", &k, "(125", "+inf"]), arr(&["m0126", "m0127", "last"]));
    assert_eq!(c.call(&["ZREVRANGE", &k, "0", "1"]), arr(&["last", "m0127"]));
    assert_eq!(c.call(&["ZCOUNT", &k, "100", "200"]), int(28));
    assert_eq!(c.call(&["ZINCRBY", &k, "-1000", "last"]), bulk("0"));
    assert_eq!(c.call(&["ZRANGE", &k, "0", "1"]), arr(&["last", "m0000"]));
    assert_eq!(c.call(&["ZPOPMIN", &k, "2"]), pairs2(&[("last", "0"), ("m0000", "0")]));
    assert_eq!(c.call(&["ZREMRANGEBYRANK", &k, "0", "99"]), int(100));
    assert_eq!(c.call(&["ZCARD", &k]), int(27));
    // Large stays large (Redis converts back only on a store).
    assert_eq!(c.call(&["OBJECT", "ENCODING", &k]), bulk("skiplist"));
    let d = key("d");
    assert_eq!(c.call(&["ZUNIONSTORE", &d, "1", &k]), int(27));
    assert_eq!(c.call(&["OBJECT", "ENCODING", &d]), bulk("listpack"));
    let mut cursor = "0".to_string();
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..1000 {
        let r = c.call(&["ZSCAN", &k, &cursor, "COUNT", "5"]);
        let mut lines = r.split("\r\n");
        lines.next();
        lines.next();
        cursor = lines.next().unwrap().to_string();
        let body: Vec<&str> = lines.collect();
        for m in body.iter().filter(|l| l.starts_with('m')).step_by(1) {
            seen.insert(m.to_string());
        }
        if cursor == "0" {
            break;
        }
    }
    assert_eq!(seen.len(), 27, "ZSCAN saw every member");
    assert_eq!(c.call(&["ZREMRANGEBYSCORE", &k, "-inf", "+inf"]), int(27));
    assert_eq!(c.call(&["EXISTS", &k]), int(0));
    // A long member makes a set large at once.
    let long = "x".repeat(COMPACT_MEMBER_BYTES_MAX + 1);
    let l = key("long");
    assert_eq!(c.call(&["ZADD", &l, "1", &"y".repeat(COMPACT_MEMBER_BYTES_MAX)]), int(1));
    assert_eq!(c.call(&["OBJECT", "ENCODING", &l]), bulk("listpack"));
    assert_eq!(c.call(&["ZADD", &l, "2", &long]), int(1));
    assert_eq!(c.call(&["OBJECT", "ENCODING", &l]), bulk("skiplist"));
    hello3(&mut c);
    assert_eq!(c.call(&["ZRANGE", &l, "1", "1", "WITHSCORES"]), pairs3(&[(&long, "2")]));
    assert_eq!(c.call(&["ZPOPMAX", &l]), format!("*2\r\n{}{}", bulk(&long), dbl("2")));
}

#[test]
fn expiry_survives_zset_writes() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("z");
    zadd(&mut c, &k, &[("1", "a"), ("2", "b")]);
    assert_eq!(c.call(&["EXPIRE", &k, "100"]), int(1));
    assert_eq!(c.call(&["ZADD", &k, "3", "c"]), int(1));
    assert_eq!(c.call(&["ZREM", &k, "a"]), int(1));
    assert_eq!(c.call(&["ZINCRBY", &k, "1", "b"]), bulk("3"));
    let ttl = as_int(&c.call(&["TTL", &k]));
    assert!((99..=100).contains(&ttl), "TTL {ttl}");
}

/// COMMAND INFO's name, arity, flags and key positions are Redis 7.0's.
#[test]
fn command_info_of_zset_commands() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let head = |name: &str, arity: i64, flags: &[&str], keys: (i64, i64, i64)| {
        let mut s = format!("*1\r\n*10\r\n{}{}*{}\r\n", bulk(name), int(arity), flags.len());
        for f in flags {
            s.push_str(&format!("+{f}\r\n"));
        }
        s.push_str(&format!("{}{}{}", int(keys.0), int(keys.1), int(keys.2)));
        s
    };
    let cases = [
        ("zadd", head("zadd", -4, &["write", "denyoom", "fast"], (1, 1, 1))),
        ("zrange", head("zrange", -4, &["readonly"], (1, 1, 1))),
        ("zrangestore", head("zrangestore", -5, &["write", "denyoom"], (1, 2, 1))),
        ("zunionstore", head("zunionstore", -4, &["write", "denyoom", "movablekeys"], (1, 1, 1))),
        ("zmpop", head("zmpop", -4, &["write", "movablekeys"], (0, 0, 0))),
        ("zremrangebyscore", head("zremrangebyscore", 4, &["write"], (1, 1, 1))),
    ];
    for (name, want) in cases {
        let got = c.call(&["COMMAND", "INFO", name]);
        assert!(got.starts_with(&want), "{name}:\n got: {got:?}\nwant: {want:?}…");
    }
}

/// A server whose connections land on two workers when it is amalgam
/// (wake-ups cross threads); Redis when one is named.
fn two_workers() -> Option<Server> {
    resp_private(&["-t", "2"]).or_else(resp_server)
}

/// Waits until exactly `n` clients are blocked on a server of this
/// test's own; on an external (shared) server, a fixed wait for the
/// command to reach it (a wait, not an assertion on speed).
fn await_blocked(server: &Server, n: usize) {
    /// Polls before giving up (20 ms apart: 10 s).
    const POLLS_MAX: usize = 500;
    if !server.is_own() {
        return std::thread::sleep(Duration::from_millis(200));
    }
    let mut admin = Resp::new(server);
    for _ in 0..POLLS_MAX {
        let info = admin.call(&["INFO", "clients"]);
        if info.lines().any(|l| l.trim() == format!("blocked_clients:{n}")) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("blocked_clients never reached {n}");
}

#[test]
fn bzpop_serves_at_once_or_is_woken_by_zadd() {
    let Some(server) = two_workers() else { return };
    let (k, k2, none) = (key("q"), key("q2"), key("none"));
    let mut waiter = Resp::new(&server);
    let mut writer = Resp::new(&server);
    zadd(&mut writer, &k, &[("1", "a"), ("2", "b"), ("3", "c")]);
    // Served at once: [key, member, score].
    assert_eq!(waiter.call(&["BZPOPMIN", &none, &k, "0"]), format!("*3\r\n{}{}{}", bulk(&k), bulk("a"), bulk("1")));
    assert_eq!(waiter.call(&["BZPOPMAX", &k, "0"]), format!("*3\r\n{}{}{}", bulk(&k), bulk("c"), bulk("3")));
    let nested = |key: &str, p: &[(&str, &str)]| {
        let mut s = format!("*2\r\n{}*{}\r\n", bulk(key), p.len());
        for (m, sc) in p {
            s.push_str(&format!("*2\r\n{}{}", bulk(m), bulk(sc)));
        }
        s
    };
    assert_eq!(waiter.call(&["BZMPOP", "0", "2", &none, &k, "MIN", "COUNT", "5"]), nested(&k, &[("b", "2")]));
    assert_eq!(writer.call(&["EXISTS", &k]), int(0));
    // Blocked, then woken by a ZADD from another connection.
    waiter.send(&["BZPOPMIN", &k, &k2, "0"]);
    await_blocked(&server, 1);
    assert!(waiter.silent(), "blocked until a ZADD");
    assert_eq!(writer.call(&["ZADD", &k2, "5", "x", "4", "y"]), int(2));
    assert_eq!(waiter.reply(), format!("*3\r\n{}{}{}", bulk(&k2), bulk("y"), bulk("4")));
    assert_eq!(writer.call(&["ZRANGE", &k2, "0", "-1"]), arr(&["x"]));
    // ZINCRBY that adds a member wakes too (BZMPOP takes up to COUNT).
    waiter.send(&["BZMPOP", "0", "1", &k, "MAX", "COUNT", "2"]);
    await_blocked(&server, 1);
    assert_eq!(writer.call(&["ZINCRBY", &k, "7", "m"]), bulk("7"));
    assert_eq!(waiter.reply(), nested(&k, &[("m", "7")]));
    // A *STORE that creates the key wakes too.
    waiter.send(&["BZPOPMAX", &k, "0"]);
    await_blocked(&server, 1);
    assert_eq!(writer.call(&["ZUNIONSTORE", &k, "1", &k2]), int(1));
    assert_eq!(waiter.reply(), format!("*3\r\n{}{}{}", bulk(&k), bulk("x"), bulk("5")));
    // Timeouts answer the null array.
    assert_eq!(waiter.call(&["BZPOPMIN", &none, "0.01"]), NULL_ARRAY2);
    assert_eq!(waiter.call(&["BZMPOP", "0.01", "1", &none, "MIN"]), NULL_ARRAY2);
    hello3(&mut waiter);
    assert_eq!(waiter.call(&["BZPOPMIN", &none, "0.01"]), NULL3);
    zadd(&mut writer, &k, &[("1.5", "a")]);
    assert_eq!(waiter.call(&["BZPOPMIN", &k, "0"]), format!("*3\r\n{}{}{}", bulk(&k), bulk("a"), dbl("1.5")));
    zadd(&mut writer, &k, &[("2.5", "b")]);
    assert_eq!(waiter.call(&["BZMPOP", "0", "1", &k, "MIN"]), format!("*2\r\n{}{}", bulk(&k), pairs3(&[("b", "2.5")])));
}

#[test]
fn bzpop_errors() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (k, s, none) = (key("z"), key("s"), key("none"));
    zadd(&mut c, &k, &[("1", "a")]);
    assert_eq!(c.call(&["SET", &s, "v"]), OK);
    assert_eq!(c.call(&["BZPOPMIN", &k, "x"]), error("ERR timeout is not a float or out of range"));
    assert_eq!(c.call(&["BZPOPMIN", &k, "-1"]), error("ERR timeout is negative"));
    assert_eq!(c.call(&["BZMPOP", "x", "1", &k, "MIN"]), error("ERR timeout is not a float or out of range"));
    assert_eq!(c.call(&["BZMPOP", "0", "0", &k, "MIN"]), error("ERR numkeys should be greater than 0"));
    // BZMPOP reads numkeys, MIN|MAX and COUNT before the timeout.
    assert_eq!(c.call(&["BZMPOP", "x", "1", &k, "FOO"]), SYNTAX);
    assert_eq!(c.call(&["BZMPOP", "0", "1", &k, "MIN", "COUNT", "0"]), error("ERR count should be greater than 0"));
    // Any key of another kind answers WRONGTYPE before blocking.
    assert_eq!(c.call(&["BZPOPMIN", &s, "0"]), WRONGTYPE);
    assert_eq!(c.call(&["BZPOPMIN", &none, &s, "0"]), WRONGTYPE);
    assert_eq!(c.call(&["BZMPOP", "0", "1", &s, "MIN"]), WRONGTYPE);
    assert_eq!(c.call(&["BZPOPMAX", &s, &k, "0"]), WRONGTYPE);
    assert_eq!(c.call(&["ZCARD", &k]), int(1), "nothing popped");
}

/// Writers on several connections (two workers on amalgam): increments
/// all land, and members popped while others are added are neither lost
/// nor duplicated, across the compact → large crossing.
#[test]
fn racing_writers_lose_and_duplicate_nothing() {
    /// Connections writing at once, and operations each.
    const WRITERS: usize = 4;
    const OPS: usize = 150;
    let Some(server) = two_workers() else { return };
    let (k, q) = (key("counter"), key("queue"));
    let member = |reply: &str| reply.split("\r\n").nth(2).unwrap().to_string();
    let mut popped = std::collections::BTreeSet::new();
    std::thread::scope(|s| {
        for w in 0..WRITERS {
            let (server, k, q) = (&server, &k, &q);
            s.spawn(move || {
                let mut c = Resp::new(server);
                for i in 0..OPS {
                    let r = c.call(&["ZINCRBY", k, "1", "m"]);
                    assert!(r.starts_with('$'), "{r:?}");
                    assert_eq!(c.call(&["ZADD", q, &i.to_string(), &format!("w{w}_{i:04}")]), int(1));
                }
            });
        }
        // Pops while the writers add (bounded: the writers' total).
        let mut c = Resp::new(&server);
        for _ in 0..WRITERS * OPS / 2 {
            let r = c.call(&["ZPOPMIN", &q]);
            if r != EMPTY {
                assert!(popped.insert(member(&r)), "popped twice: {r:?}");
            }
        }
    });
    // The writers are done: the rest, in one pop.
    let mut c = Resp::new(&server);
    let rest = c.call(&["ZPOPMIN", &q, &(WRITERS * OPS).to_string()]);
    let lines: Vec<&str> = rest.split("\r\n").collect();
    // *2n, then $len, member, $len, score per pair.
    for pair in lines[1..lines.len() - 1].chunks(4) {
        assert!(popped.insert(pair[1].to_string()), "popped twice: {}", pair[1]);
    }
    assert_eq!(popped.len(), WRITERS * OPS, "every member popped exactly once");
    assert_eq!(c.call(&["EXISTS", &q]), int(0));
    assert_eq!(c.call(&["ZSCORE", &k, "m"]), bulk(&(WRITERS * OPS).to_string()));
}
