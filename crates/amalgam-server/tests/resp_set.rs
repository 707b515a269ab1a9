//! Redis's set commands over RESP, black-box: SADD SREM SMEMBERS
//! SISMEMBER SMISMEMBER SCARD SPOP SRANDMEMBER SMOVE SINTER SINTERCARD
//! SUNION SDIFF SINTERSTORE SUNIONSTORE SDIFFSTORE SSCAN, in RESP2 and
//! RESP3, compact and past the thresholds (512 integers, 128 strings),
//! with arity and WRONGTYPE errors. Runs against amalgam by default; CI
//! also runs it against Debian's redis-server 7.0 (`AMALGAM_TEST_RESP_ADDR`,
//! see `common/mod.rs`), which proves every expectation here is Redis's
//! own, except those marked amalgam-only.
//!
//! Set order is the form's (and Redis's dict's), and picks are random:
//! the tests compare members as sets, and random picks by size and
//! distinctness, never as sequences.
mod common;
use common::resp::*;
use common::*;
use std::collections::BTreeSet;

/// Integers an intset holds at most (set-max-intset-entries).
const INTSET_MAX: usize = 512;
/// Strings a compact (listpack) set holds at most (set-max-listpack-entries).
const LISTPACK_MAX: usize = 128;

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

/// A parsed reply: enough of RESP for these tests.
#[derive(Debug, Clone, PartialEq)]
enum Val {
    Bulk(String),
    Int(i64),
    Null,
    /// `*` (RESP2 and RESP3 arrays).
    Array(Vec<Val>),
    /// `~` (RESP3 sets).
    Set(Vec<Val>),
    Other(String),
}

impl Val {
    fn bulk(&self) -> &str {
        match self {
            Val::Bulk(s) => s,
            v => panic!("not a bulk string: {v:?}"),
        }
    }
    fn items(&self) -> &[Val] {
        match self {
            Val::Array(v) | Val::Set(v) => v,
            v => panic!("not an aggregate: {v:?}"),
        }
    }
    fn strings(&self) -> Vec<String> {
        self.items().iter().map(|v| v.bulk().to_string()).collect()
    }
}

fn parse(reply: &str) -> Val {
    fn at(b: &[u8], i: &mut usize) -> Val {
        let end = *i + b[*i..].windows(2).position(|w| w == b"\r\n").expect("CRLF");
        let head = std::str::from_utf8(&b[*i + 1..end]).unwrap().to_string();
        let t = b[*i];
        *i = end + 2;
        match t {
            b'$' => {
                let n: i64 = head.parse().unwrap();
                if n < 0 {
                    return Val::Null;
                }
                let s = String::from_utf8_lossy(&b[*i..*i + n as usize]).into_owned();
                *i += n as usize + 2;
                Val::Bulk(s)
            }
            b':' => Val::Int(head.parse().unwrap()),
            b'_' => Val::Null,
            b'*' | b'~' => {
                let n: i64 = head.parse().unwrap();
                if n < 0 {
                    return Val::Null;
                }
                let v = (0..n).map(|_| at(b, i)).collect();
                if t == b'*' {
                    Val::Array(v)
                } else {
                    Val::Set(v)
                }
            }
            _ => Val::Other(head),
        }
    }
    let b = reply.as_bytes();
    let mut i = 0;
    let v = at(b, &mut i);
    assert_eq!(i, b.len(), "one whole reply: {reply:?}");
    v
}

/// The members in an aggregate reply, as a set (asserting no repeats).
fn members_of(reply: &str) -> BTreeSet<String> {
    let v = parse(reply).strings();
    let s: BTreeSet<String> = v.iter().cloned().collect();
    assert_eq!(s.len(), v.len(), "repeated members: {v:?}");
    s
}

fn smembers(c: &mut Resp, k: &str) -> BTreeSet<String> {
    members_of(&c.call(&["SMEMBERS", k]))
}

fn strs(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// Adds `members` to `k` in batches; returns how many were new.
fn fill(c: &mut Resp, k: &str, members: &[String]) -> i64 {
    let mut added = 0;
    for chunk in members.chunks(100) {
        let mut args = vec!["SADD", k];
        args.extend(chunk.iter().map(String::as_str));
        added += as_int(&c.call(&args));
    }
    added
}

fn ints(range: std::ops::Range<i64>) -> Vec<String> {
    range.map(|i| i.to_string()).collect()
}

fn words(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

#[test]
fn add_remove_and_membership() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("s");
    let none = key("none");
    assert_eq!(c.call(&["SADD", &k, "a", "b", "c"]), int(3));
    // A member named twice counts once; an existing one is not new.
    assert_eq!(c.call(&["SADD", &k, "a", "d", "d"]), int(1));
    assert_eq!(c.call(&["SADD", &k, "a"]), int(0));
    assert_eq!(c.call(&["SCARD", &k]), int(4));
    assert_eq!(c.call(&["SCARD", &none]), int(0));
    assert_eq!(c.call(&["TYPE", &k]), "+set\r\n");
    assert_eq!(smembers(&mut c, &k), strs(&["a", "b", "c", "d"]));
    assert_eq!(c.call(&["SMEMBERS", &none]), "*0\r\n");
    assert_eq!(c.call(&["SISMEMBER", &k, "b"]), int(1));
    assert_eq!(c.call(&["SISMEMBER", &k, "zz"]), int(0));
    assert_eq!(c.call(&["SISMEMBER", &none, "b"]), int(0));
    assert_eq!(c.call(&["SMISMEMBER", &k, "a", "zz", "d", "a"]), "*4\r\n:1\r\n:0\r\n:1\r\n:1\r\n");
    assert_eq!(c.call(&["SMISMEMBER", &none, "a", "b"]), "*2\r\n:0\r\n:0\r\n");
    assert_eq!(c.call(&["SREM", &k, "a", "zz", "a"]), int(1));
    assert_eq!(c.call(&["SREM", &none, "a"]), int(0));
    assert_eq!(c.call(&["SCARD", &k]), int(3));
    // Removing the last members deletes the key.
    assert_eq!(c.call(&["SREM", &k, "b", "c", "d"]), int(3));
    assert_eq!(c.call(&["EXISTS", &k]), int(0));
    assert_eq!(c.call(&["TYPE", &k]), "+none\r\n");

    // Integers: canonical ones and strings that only look like them.
    let n = key("nums");
    assert_eq!(c.call(&["SADD", &n, "1", "-5", "007", "+3", "9223372036854775807", "-0", ""]), int(7));
    assert_eq!(c.call(&["SISMEMBER", &n, "7"]), int(0));
    assert_eq!(c.call(&["SISMEMBER", &n, "007"]), int(1));
    assert_eq!(c.call(&["SISMEMBER", &n, ""]), int(1));
    assert_eq!(smembers(&mut c, &n), strs(&["1", "-5", "007", "+3", "9223372036854775807", "-0", ""]));
    let i = key("ints");
    assert_eq!(c.call(&["SADD", &i, "3", "1", "2", "-9223372036854775808"]), int(4));
    assert_eq!(c.call(&["OBJECT", "ENCODING", &i]), bulk("intset"));
    assert_eq!(c.call(&["SREM", &i, "01", "x"]), int(0));
    assert_eq!(c.call(&["SREM", &i, "1"]), int(1));
    assert_eq!(smembers(&mut c, &i), strs(&["2", "3", "-9223372036854775808"]));
    // Binary members.
    let b = key("bin");
    c.send_raw(&encode(&[b"SADD", b.as_bytes(), b"a\0b", b"\r\n"]));
    assert_eq!(c.reply(), int(2));
    c.send_raw(&encode(&[b"SISMEMBER", b.as_bytes(), b"a\0b"]));
    assert_eq!(c.reply(), int(1));
    assert_eq!(c.call(&["SISMEMBER", &b, "a"]), int(0));
    for d in [k, n, i, b] {
        c.call(&["DEL", &d]);
    }
}

#[test]
fn arity_and_wrong_type() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    for (cmd, args) in [
        ("sadd", &["k"][..]),
        ("srem", &["k"]),
        ("smembers", &[]),
        ("sismember", &["k"]),
        ("smismember", &["k"]),
        ("scard", &[]),
        ("spop", &[]),
        ("srandmember", &[]),
        ("smove", &["a", "b"]),
        ("sinter", &[]),
        ("sintercard", &["1"]),
        ("sunion", &[]),
        ("sdiff", &[]),
        ("sinterstore", &["d"]),
        ("sunionstore", &["d"]),
        ("sdiffstore", &["d"]),
        ("sscan", &["k"]),
    ] {
        let mut a = vec![cmd.to_uppercase()];
        a.extend(args.iter().map(|s| s.to_string()));
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        assert_eq!(c.call(&a), error(&format!("ERR wrong number of arguments for '{cmd}' command")), "{cmd}");
    }
    let s = key("str");
    let h = key("hash");
    let set = key("set");
    let none = key("none");
    assert_eq!(c.call(&["SET", &s, "x"]), OK);
    assert_eq!(c.call(&["HSET", &h, "f", "v"]), int(1));
    assert_eq!(c.call(&["SADD", &set, "a"]), int(1));
    let wrong = error(WRONGTYPE);
    for other in [&s, &h] {
        for cmd in [
            &["SADD", other, "a"][..],
            &["SREM", other, "a"],
            &["SMEMBERS", other],
            &["SISMEMBER", other, "a"],
            &["SMISMEMBER", other, "a"],
            &["SCARD", other],
            &["SPOP", other],
            &["SPOP", other, "2"],
            &["SPOP", other, "0"],
            &["SRANDMEMBER", other],
            &["SRANDMEMBER", other, "-2"],
            &["SMOVE", other, &set, "a"],
            &["SMOVE", &set, other, "a"],
            &["SMOVE", &set, other, "zz"],
            &["SINTER", &set, other],
            &["SINTER", &none, other],
            &["SUNION", other, &set],
            &["SDIFF", &none, other],
            &["SDIFF", &set, other],
            &["SINTERCARD", "2", &none, other],
            &["SINTERSTORE", &key("d"), &set, other],
            &["SUNIONSTORE", &key("d"), other],
            &["SDIFFSTORE", &key("d"), &set, other],
            &["SSCAN", other, "0"],
            &["SSCAN", other, "0", "COUNT", "0"],
        ] {
            assert_eq!(c.call(cmd), wrong, "{cmd:?}");
        }
    }
    // Nothing above changed the keys.
    assert_eq!(c.call(&["GET", &s]), bulk("x"));
    assert_eq!(c.call(&["HGET", &h, "f"]), bulk("v"));
    assert_eq!(smembers(&mut c, &set), strs(&["a"]));
    assert_eq!(c.call(&["EXISTS", &key("d")]), int(0));
    for d in [s, h, set] {
        c.call(&["DEL", &d]);
    }
}

#[test]
fn thresholds_keep_every_member() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    // Integers: intset → hashtable past 512.
    let k = key("ints");
    let all = ints(0..(INTSET_MAX as i64 + 100));
    assert_eq!(fill(&mut c, &k, &all[..INTSET_MAX]), INTSET_MAX as i64);
    assert_eq!(c.call(&["OBJECT", "ENCODING", &k]), bulk("intset"));
    assert_eq!(fill(&mut c, &k, &all[INTSET_MAX..]), 100);
    assert_eq!(c.call(&["OBJECT", "ENCODING", &k]), bulk("hashtable"));
    assert_eq!(c.call(&["SCARD", &k]), int(all.len() as i64));
    assert_eq!(smembers(&mut c, &k), all.iter().cloned().collect());
    for m in ["0", "511", "512", "611"] {
        assert_eq!(c.call(&["SISMEMBER", &k, m]), int(1), "{m}");
    }
    assert_eq!(c.call(&["SISMEMBER", &k, "612"]), int(0));
    // A string member in the large integer set keeps the integers.
    assert_eq!(c.call(&["SADD", &k, "x"]), int(1));
    assert_eq!(c.call(&["SISMEMBER", &k, "600"]), int(1));
    assert_eq!(c.call(&["SCARD", &k]), int(all.len() as i64 + 1));

    // Strings: compact → hashtable past 128.
    let w = key("words");
    let all = words("member-", LISTPACK_MAX + 72);
    assert_eq!(fill(&mut c, &w, &all[..LISTPACK_MAX]), LISTPACK_MAX as i64);
    if !server.is_redis {
        // Amalgam-only: Redis 7.2's name (7.0 says hashtable).
        assert_eq!(c.call(&["OBJECT", "ENCODING", &w]), bulk("listpack"));
    }
    assert_eq!(fill(&mut c, &w, &all[LISTPACK_MAX..]), 72);
    assert_eq!(c.call(&["OBJECT", "ENCODING", &w]), bulk("hashtable"));
    assert_eq!(smembers(&mut c, &w), all.iter().cloned().collect());
    assert_eq!(c.call(&["SMISMEMBER", &w, "member-0", "member-199", "member-200"]), "*3\r\n:1\r\n:1\r\n:0\r\n");

    // A small intset that gets a string keeps its integers.
    let m = key("mixed");
    assert_eq!(c.call(&["SADD", &m, "1", "2", "3"]), int(3));
    assert_eq!(c.call(&["SADD", &m, "a"]), int(1));
    assert_eq!(smembers(&mut c, &m), strs(&["1", "2", "3", "a"]));

    // Removing everything from a large set deletes the key.
    let mut args = vec!["SREM", &w];
    args.extend(all.iter().map(String::as_str));
    assert_eq!(c.call(&args), int(all.len() as i64));
    assert_eq!(c.call(&["EXISTS", &w]), int(0));
    for d in [k, m] {
        c.call(&["DEL", &d]);
    }
}

#[test]
fn spop_counts() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let none = key("none");
    for (k, all) in [(key("small"), words("m", 10)), (key("large"), ints(0..700))] {
        assert_eq!(fill(&mut c, &k, &all), all.len() as i64);
        let all: BTreeSet<String> = all.into_iter().collect();
        let one = parse(&c.call(&["SPOP", &k])).bulk().to_string();
        assert!(all.contains(&one), "{one}");
        assert_eq!(c.call(&["SISMEMBER", &k, &one]), int(0));
        let three = members_of(&c.call(&["SPOP", &k, "3"]));
        assert_eq!(three.len(), 3);
        assert!(three.is_subset(&all) && !three.contains(&one));
        assert_eq!(c.call(&["SCARD", &k]), int(all.len() as i64 - 4));
        assert_eq!(c.call(&["SPOP", &k, "0"]), "*0\r\n");
        // A count past the size pops everything and deletes the key.
        let rest = members_of(&c.call(&["SPOP", &k, "100000"]));
        assert_eq!(rest.len(), all.len() - 4);
        let mut seen = rest.clone();
        seen.extend(three);
        seen.insert(one);
        assert_eq!(seen, all);
        assert_eq!(c.call(&["EXISTS", &k]), int(0));
    }
    assert_eq!(c.call(&["SPOP", &none]), NULL2);
    assert_eq!(c.call(&["SPOP", &none, "3"]), "*0\r\n");
    assert_eq!(c.call(&["SPOP", &none, "0"]), "*0\r\n");
    let k = key("k");
    assert_eq!(c.call(&["SADD", &k, "a"]), int(1));
    for bad in ["-1", "x", "1.5"] {
        assert_eq!(c.call(&["SPOP", &k, bad]), error("ERR value is out of range, must be positive"), "{bad}");
    }
    assert_eq!(c.call(&["SPOP", &k, "1", "2"]), error("ERR syntax error"));
    assert_eq!(c.call(&["SPOP", &k]), bulk("a"));
    assert_eq!(c.call(&["EXISTS", &k]), int(0));
}

#[test]
fn srandmember_counts() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let none = key("none");
    for (k, all) in [(key("small"), words("m", 10)), (key("ints"), ints(0..5)), (key("large"), words("w", 300))] {
        assert_eq!(fill(&mut c, &k, &all), all.len() as i64);
        let n = all.len();
        let all: BTreeSet<String> = all.into_iter().collect();
        assert!(all.contains(parse(&c.call(&["SRANDMEMBER", &k])).bulk()));
        // Positive: distinct members, at most the set's size.
        let some = members_of(&c.call(&["SRANDMEMBER", &k, "3"]));
        assert_eq!(some.len(), 3);
        assert!(some.is_subset(&all));
        assert_eq!(members_of(&c.call(&["SRANDMEMBER", &k, &(n + 5).to_string()])), all);
        assert_eq!(members_of(&c.call(&["SRANDMEMBER", &k, &n.to_string()])), all);
        // Negative: exactly |count| picks, repeats allowed.
        let picks = parse(&c.call(&["SRANDMEMBER", &k, "-50"])).strings();
        assert_eq!(picks.len(), 50);
        assert!(picks.iter().all(|p| all.contains(p)));
        assert_eq!(c.call(&["SRANDMEMBER", &k, "0"]), "*0\r\n");
        // Nothing was removed.
        assert_eq!(c.call(&["SCARD", &k]), int(n as i64));
        c.call(&["DEL", &k]);
    }
    assert_eq!(c.call(&["SRANDMEMBER", &none]), NULL2);
    assert_eq!(c.call(&["SRANDMEMBER", &none, "5"]), "*0\r\n");
    assert_eq!(c.call(&["SRANDMEMBER", &none, "-5"]), "*0\r\n");
    let k = key("k");
    assert_eq!(c.call(&["SADD", &k, "a"]), int(1));
    assert_eq!(c.call(&["SRANDMEMBER", &k, "x"]), error("ERR value is not an integer or out of range"));
    assert_eq!(c.call(&["SRANDMEMBER", &k, "1", "2"]), error("ERR syntax error"));
    let range = "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807";
    assert_eq!(c.call(&["SRANDMEMBER", &k, "-9223372036854775808"]), error(range));
    assert_eq!(c.call(&["SRANDMEMBER", &none, "-9223372036854775808"]), error(range));
    assert_eq!(c.call(&["SRANDMEMBER", &k, "9223372036854775807"]), "*1\r\n$1\r\na\r\n");
    if !server.is_redis {
        // Amalgam-only: a bound on picks with repetition (Redis builds
        // the reply and may run out of memory).
        assert_eq!(c.call(&["SRANDMEMBER", &k, "-9223372036854775807"]), error("ERR value is out of range"));
    }
    c.call(&["DEL", &k]);
}

#[test]
fn smove() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (a, b, none) = (key("a"), key("b"), key("none"));
    assert_eq!(c.call(&["SADD", &a, "x", "y"]), int(2));
    assert_eq!(c.call(&["SMOVE", &a, &b, "x"]), int(1));
    assert_eq!(smembers(&mut c, &a), strs(&["y"]));
    assert_eq!(smembers(&mut c, &b), strs(&["x"]));
    assert_eq!(c.call(&["SMOVE", &a, &b, "zz"]), int(0));
    assert_eq!(c.call(&["SMOVE", &none, &b, "x"]), int(0));
    assert_eq!(c.call(&["EXISTS", &none]), int(0));
    // Same key: 1 if the member is there, nothing changes.
    assert_eq!(c.call(&["SMOVE", &a, &a, "y"]), int(1));
    assert_eq!(c.call(&["SMOVE", &a, &a, "zz"]), int(0));
    assert_eq!(smembers(&mut c, &a), strs(&["y"]));
    // Already in the destination: still 1; the source's last member
    // leaving deletes it.
    assert_eq!(c.call(&["SADD", &b, "y"]), int(1));
    assert_eq!(c.call(&["SMOVE", &a, &b, "y"]), int(1));
    assert_eq!(c.call(&["EXISTS", &a]), int(0));
    assert_eq!(smembers(&mut c, &b), strs(&["x", "y"]));
    // Integers into a string set and strings into an intset.
    assert_eq!(c.call(&["SADD", &a, "1", "2"]), int(2));
    assert_eq!(c.call(&["SMOVE", &a, &b, "1"]), int(1));
    assert_eq!(c.call(&["SMOVE", &b, &a, "x"]), int(1));
    assert_eq!(smembers(&mut c, &a), strs(&["2", "x"]));
    assert_eq!(smembers(&mut c, &b), strs(&["1", "y"]));
    // A missing source with a destination of another kind: WRONGTYPE.
    let s = key("str");
    assert_eq!(c.call(&["SET", &s, "v"]), OK);
    assert_eq!(c.call(&["SMOVE", &none, &s, "x"]), int(0));
    for d in [a, b, s] {
        c.call(&["DEL", &d]);
    }
}

#[test]
fn algebra_and_store() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (a, b, e, none, d) = (key("a"), key("b"), key("e"), key("none"), key("dst"));
    assert_eq!(c.call(&["SADD", &a, "1", "2", "3", "x", "y"]), int(5));
    assert_eq!(c.call(&["SADD", &b, "2", "3", "4", "y", "z"]), int(5));
    assert_eq!(c.call(&["SADD", &e, "3", "y", "q"]), int(3));
    assert_eq!(members_of(&c.call(&["SINTER", &a, &b])), strs(&["2", "3", "y"]));
    assert_eq!(members_of(&c.call(&["SINTER", &a, &b, &e])), strs(&["3", "y"]));
    assert_eq!(members_of(&c.call(&["SINTER", &a])), smembers(&mut c, &a));
    assert_eq!(c.call(&["SINTER", &a, &none]), "*0\r\n");
    assert_eq!(c.call(&["SINTER", &none, &a]), "*0\r\n");
    assert_eq!(members_of(&c.call(&["SUNION", &a, &b, &none])), strs(&["1", "2", "3", "4", "x", "y", "z"]));
    assert_eq!(c.call(&["SUNION", &none]), "*0\r\n");
    assert_eq!(members_of(&c.call(&["SDIFF", &a, &b])), strs(&["1", "x"]));
    assert_eq!(members_of(&c.call(&["SDIFF", &a, &b, &e, &none])), strs(&["1", "x"]));
    assert_eq!(members_of(&c.call(&["SDIFF", &a, &none])), smembers(&mut c, &a));
    assert_eq!(c.call(&["SDIFF", &none, &a]), "*0\r\n");
    assert_eq!(c.call(&["SDIFF", &a, &a]), "*0\r\n");

    // STORE: replies with the size; replaces a key of another kind and
    // its expiry.
    assert_eq!(c.call(&["SET", &d, "old", "EX", "1000"]), OK);
    assert_eq!(c.call(&["SINTERSTORE", &d, &a, &b]), int(3));
    assert_eq!(c.call(&["TYPE", &d]), "+set\r\n");
    assert_eq!(c.call(&["TTL", &d]), int(-1));
    assert_eq!(smembers(&mut c, &d), strs(&["2", "3", "y"]));
    assert_eq!(c.call(&["SUNIONSTORE", &d, &a, &b]), int(7));
    assert_eq!(smembers(&mut c, &d), strs(&["1", "2", "3", "4", "x", "y", "z"]));
    assert_eq!(c.call(&["SDIFFSTORE", &d, &a, &b]), int(2));
    assert_eq!(smembers(&mut c, &d), strs(&["1", "x"]));
    // The destination may be a source.
    assert_eq!(c.call(&["SUNIONSTORE", &d, &d, &e]), int(5));
    assert_eq!(smembers(&mut c, &d), strs(&["1", "x", "3", "y", "q"]));
    // An empty result deletes the destination.
    assert_eq!(c.call(&["SINTERSTORE", &d, &a, &none]), int(0));
    assert_eq!(c.call(&["EXISTS", &d]), int(0));
    assert_eq!(c.call(&["HSET", &d, "f", "v"]), int(1));
    assert_eq!(c.call(&["SDIFFSTORE", &d, &a, &a]), int(0));
    assert_eq!(c.call(&["EXISTS", &d]), int(0));
    assert_eq!(c.call(&["SUNIONSTORE", &d, &none]), int(0));
    assert_eq!(c.call(&["EXISTS", &d]), int(0));
    assert_eq!(c.call(&["HSET", &d, "f", "v"]), int(1));
    assert_eq!(c.call(&["SUNIONSTORE", &d, &a]), int(5));
    assert_eq!(c.call(&["TYPE", &d]), "+set\r\n");

    // Large sets: integers and strings past the thresholds.
    let (li, ls) = (key("li"), key("ls"));
    fill(&mut c, &li, &ints(0..1000));
    let evens: Vec<String> = (0..700).map(|i| (i * 2).to_string()).collect();
    fill(&mut c, &ls, &evens);
    fill(&mut c, &ls, &words("w", 200));
    let inter: BTreeSet<String> = (0..500).map(|i| (i * 2).to_string()).collect();
    assert_eq!(members_of(&c.call(&["SINTER", &li, &ls])), inter);
    assert_eq!(c.call(&["SINTERSTORE", &d, &ls, &li]), int(500));
    assert_eq!(smembers(&mut c, &d), inter);
    assert_eq!(c.call(&["SUNIONSTORE", &d, &li, &ls]), int(1000 + 200 + 200));
    assert_eq!(c.call(&["SDIFFSTORE", &d, &ls, &li]), int(200 + 200));
    assert_eq!(c.call(&["SISMEMBER", &d, "1200"]), int(1));
    assert_eq!(c.call(&["SISMEMBER", &d, "998"]), int(0));
    assert_eq!(c.call(&["SINTERCARD", "2", &li, &ls]), int(500));
    assert_eq!(c.call(&["SINTERCARD", "2", &li, &ls, "LIMIT", "10"]), int(10));
    for k in [a, b, e, d, li, ls] {
        c.call(&["DEL", &k]);
    }
}

#[test]
fn sintercard() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (a, b, none) = (key("a"), key("b"), key("none"));
    assert_eq!(c.call(&["SADD", &a, "1", "2", "3", "x"]), int(4));
    assert_eq!(c.call(&["SADD", &b, "2", "3", "x", "q"]), int(4));
    assert_eq!(c.call(&["SINTERCARD", "2", &a, &b]), int(3));
    assert_eq!(c.call(&["SINTERCARD", "1", &a]), int(4));
    assert_eq!(c.call(&["SINTERCARD", "2", &a, &none]), int(0));
    assert_eq!(c.call(&["SINTERCARD", "1", &none]), int(0));
    assert_eq!(c.call(&["SINTERCARD", "2", &a, &b, "LIMIT", "2"]), int(2));
    assert_eq!(c.call(&["SINTERCARD", "2", &a, &b, "limit", "0"]), int(3));
    assert_eq!(c.call(&["SINTERCARD", "2", &a, &b, "LIMIT", "9223372036854775807"]), int(3));
    // The last LIMIT wins.
    assert_eq!(c.call(&["SINTERCARD", "2", &a, &b, "LIMIT", "1", "LIMIT", "2"]), int(2));
    let numkeys = error("ERR numkeys should be greater than 0");
    for bad in ["0", "-1", "x", "99999999999999999999"] {
        assert_eq!(c.call(&["SINTERCARD", bad, &a]), numkeys, "{bad}");
    }
    let too_many = error("ERR Number of keys can't be greater than number of args");
    assert_eq!(c.call(&["SINTERCARD", "2", &a]), too_many);
    assert_eq!(c.call(&["SINTERCARD", "2147483648", &a]), too_many);
    let limit = error("ERR LIMIT can't be negative");
    assert_eq!(c.call(&["SINTERCARD", "1", &a, "LIMIT", "-1"]), limit);
    assert_eq!(c.call(&["SINTERCARD", "1", &a, "LIMIT", "x"]), limit);
    assert_eq!(c.call(&["SINTERCARD", "1", &a, "LIMIT"]), error("ERR syntax error"));
    assert_eq!(c.call(&["SINTERCARD", "1", &a, "foo"]), error("ERR syntax error"));
    // numkeys counts keys: here the second "key" is LIMIT's word.
    assert_eq!(c.call(&["SINTERCARD", "2", &a, "LIMIT", "1"]), error("ERR syntax error"));
    for k in [a, b] {
        c.call(&["DEL", &k]);
    }
}

/// Every member SSCAN returns, from cursor 0 back to 0.
fn scan_all(c: &mut Resp, k: &str, extra: &[&str]) -> BTreeSet<String> {
    let mut cursor = "0".to_string();
    let mut seen = BTreeSet::new();
    for _ in 0..10_000 {
        let mut args = vec!["SSCAN", k, &cursor];
        args.extend_from_slice(extra);
        let r = parse(&c.call(&args));
        let r = r.items();
        seen.extend(r[1].strings());
        cursor = r[0].bulk().to_string();
        if cursor == "0" {
            return seen;
        }
    }
    panic!("SSCAN did not come back to cursor 0");
}

#[test]
fn sscan() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let none = key("none");
    for (k, all) in [
        (key("small"), words("m", 20)),
        (key("ints"), ints(0..100)),
        (key("bigints"), ints(0..1500)),
        (key("big"), words("w", 1000)),
    ] {
        fill(&mut c, &k, &all);
        let all: BTreeSet<String> = all.into_iter().collect();
        assert_eq!(scan_all(&mut c, &k, &[]), all, "{k}");
        assert_eq!(scan_all(&mut c, &k, &["COUNT", "7"]), all, "{k}");
        let ones: BTreeSet<String> = all.iter().filter(|m| m.ends_with('1')).cloned().collect();
        assert_eq!(scan_all(&mut c, &k, &["MATCH", "*1", "COUNT", "50"]), ones, "{k}");
        c.call(&["DEL", &k]);
    }
    assert_eq!(c.call(&["SSCAN", &none, "0"]), "*2\r\n$1\r\n0\r\n*0\r\n");
    // Options are checked after the key: an absent key scans empty.
    assert_eq!(c.call(&["SSCAN", &none, "0", "COUNT", "0"]), "*2\r\n$1\r\n0\r\n*0\r\n");
    let k = key("k");
    assert_eq!(c.call(&["SADD", &k, "a"]), int(1));
    assert_eq!(c.call(&["SSCAN", &k, "x"]), error("ERR invalid cursor"));
    assert_eq!(c.call(&["SSCAN", &k, "0", "COUNT", "0"]), error("ERR syntax error"));
    assert_eq!(c.call(&["SSCAN", &k, "0", "COUNT", "x"]), error("ERR value is not an integer or out of range"));
    assert_eq!(c.call(&["SSCAN", &k, "0", "MATCH"]), error("ERR syntax error"));
    assert_eq!(c.call(&["SSCAN", &k, "0", "FOO", "1"]), error("ERR syntax error"));
    assert_eq!(c.call(&["SSCAN", &k, "0"]), "*2\r\n$1\r\n0\r\n*1\r\n$1\r\na\r\n");
    c.call(&["DEL", &k]);
}

#[test]
fn resp3_reply_types() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    assert!(c.call(&["HELLO", "3"]).starts_with('%'));
    let (k, none) = (key("k"), key("none"));
    assert_eq!(c.call(&["SADD", &k, "a", "b", "c"]), int(3));
    // Sets are `~`; SRANDMEMBER with a count and SSCAN arrays.
    assert!(matches!(parse(&c.call(&["SMEMBERS", &k])), Val::Set(v) if v.len() == 3));
    assert!(matches!(parse(&c.call(&["SINTER", &k, &k])), Val::Set(v) if v.len() == 3));
    assert!(matches!(parse(&c.call(&["SUNION", &k])), Val::Set(v) if v.len() == 3));
    assert!(matches!(parse(&c.call(&["SDIFF", &k, &none])), Val::Set(v) if v.len() == 3));
    assert!(matches!(parse(&c.call(&["SRANDMEMBER", &k, "2"])), Val::Array(v) if v.len() == 2));
    assert!(matches!(parse(&c.call(&["SSCAN", &k, "0"])), Val::Array(v) if v.len() == 2));
    assert!(matches!(parse(&c.call(&["SRANDMEMBER", &k, "5"])), Val::Array(v) if v.len() == 3));
    assert!(matches!(parse(&c.call(&["SRANDMEMBER", &k, "-5"])), Val::Array(v) if v.len() == 5));
    assert!(matches!(parse(&c.call(&["SPOP", &k, "2"])), Val::Set(v) if v.len() == 2));
    // Popping the whole set is a set too.
    let whole = key("whole");
    assert_eq!(c.call(&["SADD", &whole, "1", "2", "3"]), int(3));
    assert!(matches!(parse(&c.call(&["SPOP", &whole, "5"])), Val::Set(v) if v.len() == 3));
    assert_eq!(c.call(&["EXISTS", &whole]), int(0));
    assert_eq!(c.call(&["SMEMBERS", &none]), "~0\r\n");
    assert_eq!(c.call(&["SINTER", &none, &k]), "~0\r\n");
    assert_eq!(c.call(&["SPOP", &none]), NULL3);
    assert_eq!(c.call(&["SPOP", &none, "2"]), "~0\r\n");
    assert_eq!(c.call(&["SPOP", &k, "0"]), "~0\r\n");
    assert_eq!(c.call(&["SRANDMEMBER", &none]), NULL3);
    assert_eq!(c.call(&["SRANDMEMBER", &none, "2"]), "*0\r\n");
    assert!(matches!(parse(&c.call(&["SPOP", &k])), Val::Bulk(_)));
    assert_eq!(c.call(&["EXISTS", &k]), int(0));
    assert_eq!(parse(&c.call(&["SRANDMEMBER", &k])), Val::Null);
    assert!(c.call(&["HELLO", "2"]).starts_with('*'));
}

/// Concurrent SMOVEs between two sets never lose or duplicate a member
/// (each takes one key's lock at a time and puts a member back if the
/// add fails; Redis runs them one by one).
#[test]
fn concurrent_smoves_keep_every_member() {
    const MEMBERS: usize = 50;
    const THREADS: usize = 4;
    const MOVES: usize = 300;
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (a, b) = (key("a"), key("b"));
    let all = ints(0..MEMBERS as i64);
    fill(&mut c, &a, &all);
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            let (server, a, b) = (&server, &a, &b);
            scope.spawn(move || {
                let mut c = Resp::new(server);
                for i in 0..MOVES {
                    let m = ((i * 7 + t * 13) % MEMBERS).to_string();
                    let (from, to) = if (i + t) % 2 == 0 { (a, b) } else { (b, a) };
                    let r = as_int(&c.call(&["SMOVE", from, to, &m]));
                    assert!(r == 0 || r == 1, "{r}");
                }
            });
        }
    });
    let (in_a, in_b) = (smembers(&mut c, &a), smembers(&mut c, &b));
    assert!(in_a.is_disjoint(&in_b), "in both: {:?}", in_a.intersection(&in_b).collect::<Vec<_>>());
    assert_eq!(in_a.union(&in_b).cloned().collect::<BTreeSet<_>>(), all.into_iter().collect());
    for k in [a, b] {
        c.call(&["DEL", &k]);
    }
}

/// Amalgam-only: with `--dir`, set writes (the *STORE forms too) are
/// served and persisted like any write (issue 19 item 4; they used to be
/// refused). Restarts are tested in persist_collections.rs.
#[test]
fn writes_served_when_persisting() {
    let dir = std::env::temp_dir().join(format!("amalgam-resp-set-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let d = dir.to_string_lossy().into_owned();
    if let Some(server) = resp_private(&["--dir", &d]) {
        let mut c = Resp::new(&server);
        let (k, dst) = (key("k"), key("dst"));
        assert_eq!(c.call(&["SADD", &k, "a"]), int(1));
        assert_eq!(c.call(&["SUNIONSTORE", &dst, &k]), int(1));
        assert_eq!(c.call(&["SMEMBERS", &dst]), "*1\r\n$1\r\na\r\n");
        assert_eq!(c.call(&["EXISTS", &k, &dst]), int(2));
        drop(server);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Amalgam-only: a compact set larger than an item (`-I 2k`) is stored as
/// an object and keeps every member, read, written and stored.
#[test]
fn compact_set_larger_than_an_item() {
    let Some(server) = resp_private(&["-I", "2k"]) else { return };
    let mut c = Resp::new(&server);
    let (k, dst) = (key("k"), key("dst"));
    // 100 members of 40 bytes: compact by count and size, ~4 KB packed.
    let all: Vec<String> = (0..100).map(|i| format!("{i:040}")).collect();
    assert_eq!(fill(&mut c, &k, &all), 100);
    assert_eq!(c.call(&["OBJECT", "ENCODING", &k]), bulk("listpack"));
    assert_eq!(smembers(&mut c, &k), all.iter().cloned().collect());
    assert_eq!(c.call(&["SREM", &k, &all[0]]), int(1));
    assert_eq!(c.call(&["SUNIONSTORE", &dst, &k]), int(99));
    assert_eq!(smembers(&mut c, &dst), all[1..].iter().cloned().collect());
    assert_eq!(scan_all(&mut c, &dst, &[]), all[1..].iter().cloned().collect());
}
