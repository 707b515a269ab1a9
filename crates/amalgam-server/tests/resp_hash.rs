//! Redis's hash commands over RESP, black-box, byte for byte: HSET HSETNX
//! HGET HMGET HMSET HDEL HLEN HSTRLEN HEXISTS HKEYS HVALS HGETALL HINCRBY
//! HINCRBYFLOAT HRANDFIELD HSCAN, in RESP2 and RESP3, in the compact form
//! and past its thresholds (512 fields, 64-byte fields or values), with
//! WRONGTYPE, expiry, TYPE and SCAN's TYPE filter. Runs against amalgam
//! by default; CI also runs it against Debian's redis-server 7
//! (`AMALGAM_TEST_RESP_ADDR`, see `common/mod.rs`), which proves every
//! expectation here is Redis's own.
//!
//! Where Redis's order is its dict's (a hash past the thresholds, random
//! picks, SCAN), the tests compare sets, not sequences; while compact,
//! both keep insertion order, which the tests compare exactly.
mod common;
use common::resp::*;
use common::*;
use std::collections::{BTreeSet, HashMap};

/// Fields a compact hash holds at most (Redis's hash-max-listpack-entries).
const COMPACT_FIELDS_MAX: usize = 512;
/// Bytes a compact hash's field or value holds at most
/// (hash-max-listpack-value).
const COMPACT_VALUE_BYTES_MAX: usize = 64;
/// Fields of the hashes made large by their count.
const LARGE_FIELDS: usize = 600;

/// An array reply of bulk strings.
fn arr(items: &[&str]) -> String {
    let mut s = format!("*{}\r\n", items.len());
    for i in items {
        s.push_str(&bulk(i));
    }
    s
}

/// A RESP3 map reply of bulk string pairs.
fn map3(pairs: &[(&str, &str)]) -> String {
    let mut s = format!("%{}\r\n", pairs.len());
    for (k, v) in pairs {
        s.push_str(&bulk(k));
        s.push_str(&bulk(v));
    }
    s
}

/// A parsed reply: enough of RESP for these tests.
#[derive(Debug, Clone, PartialEq)]
enum Val {
    Bulk(String),
    Int(i64),
    Null,
    Array(Vec<Val>),
    Map(Vec<(Val, Val)>),
    Other(String),
}

impl Val {
    fn bulk(&self) -> &str {
        match self {
            Val::Bulk(s) => s,
            v => panic!("not a bulk string: {v:?}"),
        }
    }
    fn array(&self) -> &[Val] {
        match self {
            Val::Array(v) => v,
            v => panic!("not an array: {v:?}"),
        }
    }
    /// The bulk strings of an array of bulk strings.
    fn strings(&self) -> Vec<String> {
        self.array().iter().map(|v| v.bulk().to_string()).collect()
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
            b'*' => {
                let n: i64 = head.parse().unwrap();
                if n < 0 {
                    return Val::Null;
                }
                Val::Array((0..n).map(|_| at(b, i)).collect())
            }
            b'%' => {
                let n: usize = head.parse().unwrap();
                Val::Map((0..n).map(|_| (at(b, i), at(b, i))).collect())
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

/// Fills `k` with fields `f0..f{n-1}` holding `v0..v{n-1}`, in batches.
fn fill(c: &mut Resp, k: &str, n: usize) {
    let mut i = 0;
    while i < n {
        let end = (i + 100).min(n);
        let pairs: Vec<String> = (i..end).flat_map(|j| [format!("f{j}"), format!("v{j}")]).collect();
        let mut args = vec!["HSET", k];
        args.extend(pairs.iter().map(String::as_str));
        assert_eq!(c.call(&args), int((end - i) as i64));
        i = end;
    }
}

/// HGETALL as a field → value map (RESP2 or RESP3).
fn getall(c: &mut Resp, k: &str) -> HashMap<String, String> {
    match parse(&c.call(&["HGETALL", k])) {
        Val::Array(v) => v.chunks(2).map(|p| (p[0].bulk().to_string(), p[1].bulk().to_string())).collect(),
        Val::Map(m) => m.iter().map(|(f, v)| (f.bulk().to_string(), v.bulk().to_string())).collect(),
        v => panic!("HGETALL: {v:?}"),
    }
}

/// Every field HSCAN returns, iterating from cursor 0 back to 0, with
/// the number of calls it took; asserts each value matches `want`.
fn scan_all(c: &mut Resp, k: &str, extra: &[&str]) -> (BTreeSet<String>, usize) {
    let mut cursor = "0".to_string();
    let mut seen = BTreeSet::new();
    for calls in 1..=10_000 {
        let mut args = vec!["HSCAN", k, &cursor];
        args.extend_from_slice(extra);
        let r = parse(&c.call(&args));
        let r = r.array();
        let page = r[1].strings();
        assert_eq!(page.len() % 2, 0, "{page:?}");
        for p in page.chunks(2) {
            assert_eq!(p[1], p[0].replacen('f', "v", 1), "value of {}", p[0]);
            seen.insert(p[0].clone());
        }
        cursor = r[0].bulk().to_string();
        if cursor == "0" {
            return (seen, calls);
        }
    }
    panic!("HSCAN did not come back to cursor 0");
}

fn all_fields(n: usize) -> BTreeSet<String> {
    (0..n).map(|i| format!("f{i}")).collect()
}

#[test]
fn set_get_and_counts() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("h");
    assert_eq!(c.call(&["HSET", &k, "a", "1", "b", "2"]), int(2));
    // A field named twice counts once; an update is not new.
    assert_eq!(c.call(&["HSET", &k, "a", "10", "c", "3", "c", "30"]), int(1));
    assert_eq!(c.call(&["HMSET", &k, "d", "4", "a", "1"]), OK);
    assert_eq!(c.call(&["HSETNX", &k, "a", "x"]), int(0));
    assert_eq!(c.call(&["HSETNX", &k, "e", "5"]), int(1));
    assert_eq!(c.call(&["HGET", &k, "a"]), bulk("1"));
    assert_eq!(c.call(&["HGET", &k, "c"]), bulk("30"));
    assert_eq!(c.call(&["HGET", &k, "zz"]), NULL2);
    assert_eq!(c.call(&["HGET", &key("none"), "a"]), NULL2);
    assert_eq!(
        c.call(&["HMGET", &k, "a", "zz", "e", "a"]),
        format!("*4\r\n{}{NULL2}{}{}", bulk("1"), bulk("5"), bulk("1"))
    );
    assert_eq!(c.call(&["HMGET", &key("none"), "a", "b"]), format!("*2\r\n{NULL2}{NULL2}"));
    assert_eq!(c.call(&["HLEN", &k]), int(5));
    assert_eq!(c.call(&["HLEN", &key("none")]), int(0));
    assert_eq!(c.call(&["HSTRLEN", &k, "c"]), int(2));
    assert_eq!(c.call(&["HSTRLEN", &k, "zz"]), int(0));
    assert_eq!(c.call(&["HSTRLEN", &key("none"), "a"]), int(0));
    assert_eq!(c.call(&["HEXISTS", &k, "d"]), int(1));
    assert_eq!(c.call(&["HEXISTS", &k, "zz"]), int(0));
    assert_eq!(c.call(&["HEXISTS", &key("none"), "a"]), int(0));
    // A compact hash keeps insertion order, in Redis's listpack as here.
    assert_eq!(c.call(&["HKEYS", &k]), arr(&["a", "b", "c", "d", "e"]));
    assert_eq!(c.call(&["HVALS", &k]), arr(&["1", "2", "30", "4", "5"]));
    assert_eq!(c.call(&["HGETALL", &k]), arr(&["a", "1", "b", "2", "c", "30", "d", "4", "e", "5"]));
    for cmd in ["HKEYS", "HVALS", "HGETALL"] {
        assert_eq!(c.call(&[cmd, &key("none")]), "*0\r\n", "{cmd}");
    }
    // Empty fields and values, and any bytes, are fields and values.
    let e = key("empty");
    assert_eq!(c.call(&["HSET", &e, "", ""]), int(1));
    assert_eq!(c.call(&["HGET", &e, ""]), bulk(""));
    assert_eq!(c.call(&["HEXISTS", &e, ""]), int(1));
    assert_eq!(c.call(&["HSTRLEN", &e, ""]), int(0));
    let b = key("bin");
    let mut req = encode(&[b"HSET", b.as_bytes(), b"f\r\n\0", b"v\0\xff\r\n"]);
    req.extend_from_slice(&encode(&[b"HGET", b.as_bytes(), b"f\r\n\0"]));
    req.extend_from_slice(&encode(&[b"HSTRLEN", b.as_bytes(), b"f\r\n\0"]));
    c.send_raw(&req);
    assert_eq!(c.reply(), int(1));
    assert_eq!(c.reply(), format!("$5\r\nv\0{}\r\n\r\n", char::REPLACEMENT_CHARACTER));
    assert_eq!(c.reply(), int(5));
    assert_eq!(c.call(&["TYPE", &k]), "+hash\r\n");
    // HMSET and HSETNX create a hash too.
    let m = key("hm");
    assert_eq!(c.call(&["HMSET", &m, "a", "1"]), OK);
    assert_eq!(c.call(&["TYPE", &m]), "+hash\r\n");
    let n = key("hnx");
    assert_eq!(c.call(&["HSETNX", &n, "a", "1"]), int(1));
    assert_eq!(c.call(&["HGETALL", &n]), arr(&["a", "1"]));
}

#[test]
fn arity_errors() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("arity");
    assert_eq!(c.call(&["HSET", &k, "a", "1"]), int(1));
    for (cmd, args) in [
        ("hset", &[][..]),
        ("hset", &["k"]),
        ("hset", &["k", "f"]),
        ("hset", &["k", "f", "v", "g"]),
        ("hmset", &["k", "f"]),
        ("hmset", &["k", "f", "v", "g"]),
        ("hsetnx", &["k", "f"]),
        ("hsetnx", &["k", "f", "v", "x"]),
        ("hget", &["k"]),
        ("hget", &["k", "f", "g"]),
        ("hmget", &["k"]),
        ("hdel", &["k"]),
        ("hlen", &[]),
        ("hlen", &["k", "x"]),
        ("hstrlen", &["k"]),
        ("hexists", &["k"]),
        ("hkeys", &[]),
        ("hvals", &["k", "x"]),
        ("hgetall", &[]),
        ("hincrby", &["k", "f"]),
        ("hincrby", &["k", "f", "1", "2"]),
        ("hincrbyfloat", &["k", "f"]),
        ("hrandfield", &[]),
        ("hscan", &["k"]),
    ] {
        let mut v = vec![cmd];
        v.extend(args.iter().map(|a| if *a == "k" { k.as_str() } else { a }));
        assert_eq!(c.call(&v), error(&format!("ERR wrong number of arguments for '{cmd}' command")), "{v:?}");
    }
    // None of these changed the hash.
    assert_eq!(c.call(&["HGETALL", &k]), arr(&["a", "1"]));
}

#[test]
fn hdel_and_emptying_deletes_the_key() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("del");
    assert_eq!(c.call(&["HSET", &k, "a", "1", "b", "2", "c", "3"]), int(3));
    assert_eq!(c.call(&["HDEL", &k, "zz"]), int(0));
    assert_eq!(c.call(&["HDEL", &k, "a", "a", "zz"]), int(1), "a field named twice is deleted once");
    assert_eq!(c.call(&["HDEL", &key("none"), "a"]), int(0));
    assert_eq!(c.call(&["HGETALL", &k]), arr(&["b", "2", "c", "3"]));
    assert_eq!(c.call(&["HDEL", &k, "b", "c"]), int(2));
    assert_eq!(c.call(&["EXISTS", &k]), int(0));
    assert_eq!(c.call(&["TYPE", &k]), "+none\r\n");
    assert_eq!(c.call(&["HLEN", &k]), int(0));
    // The key is free for another kind.
    assert_eq!(c.call(&["SET", &k, "s"]), OK);
    assert_eq!(c.call(&["TYPE", &k]), "+string\r\n");
    // A large hash emptied is deleted too.
    let big = key("bigdel");
    fill(&mut c, &big, LARGE_FIELDS);
    let fields: Vec<String> = (0..LARGE_FIELDS).map(|i| format!("f{i}")).collect();
    let mut args = vec!["HDEL", big.as_str(), "nope"];
    args.extend(fields[..LARGE_FIELDS - 1].iter().map(String::as_str));
    assert_eq!(c.call(&args), int(LARGE_FIELDS as i64 - 1));
    assert_eq!(c.call(&["HGETALL", &big]), arr(&[&fields[LARGE_FIELDS - 1], &format!("v{}", LARGE_FIELDS - 1)]));
    assert_eq!(c.call(&["HDEL", &big, &fields[LARGE_FIELDS - 1]]), int(1));
    assert_eq!(c.call(&["EXISTS", &big]), int(0));
    assert_eq!(c.call(&["TYPE", &big]), "+none\r\n");
    // Writes that fail on a missing key create nothing.
    let n = key("nothing");
    assert_eq!(c.call(&["HINCRBY", &n, "f", "x"]), error("ERR value is not an integer or out of range"));
    assert_eq!(c.call(&["HINCRBYFLOAT", &n, "f", "abc"]), error("ERR value is not a valid float"));
    assert_eq!(c.call(&["HINCRBYFLOAT", &n, "f", "inf"]), error("ERR value is NaN or Infinity"));
    assert_eq!(c.call(&["EXISTS", &n]), int(0));
    // HINCRBYFLOAT checks its increment before the key's kind.
    let s = key("hibf-str");
    assert_eq!(c.call(&["SET", &s, "x"]), OK);
    assert_eq!(c.call(&["HINCRBYFLOAT", &s, "f", "abc"]), error("ERR value is not a valid float"));
    assert_eq!(c.call(&["HINCRBYFLOAT", &s, "f", "-inf"]), error("ERR value is NaN or Infinity"));
    assert_eq!(
        c.call(&["HINCRBYFLOAT", &s, "f", "1.5"]),
        error("WRONGTYPE Operation against a key holding the wrong kind of value")
    );
    assert_eq!(c.call(&["GET", &s]), bulk("x"));
}

#[test]
fn hincrby() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("incr");
    assert_eq!(c.call(&["HINCRBY", &k, "n", "5"]), int(5), "a missing key and field count as 0");
    assert_eq!(c.call(&["HINCRBY", &k, "n", "-10"]), int(-5));
    assert_eq!(c.call(&["HINCRBY", &k, "n", "0"]), int(-5));
    assert_eq!(c.call(&["HGET", &k, "n"]), bulk("-5"));
    let not_int = error("ERR value is not an integer or out of range");
    for bad in ["x", "1.5", " 1", "1 ", "+1", "0x1", "1e2", "", "99999999999999999999"] {
        assert_eq!(c.call(&["HINCRBY", &k, "n", bad]), not_int, "increment {bad:?}");
    }
    let hash_not_int = error("ERR hash value is not an integer");
    for bad in ["abc", " 1", "1 ", "01", "-0", "+5", "1.5", "", "9223372036854775808"] {
        assert_eq!(c.call(&["HSET", &k, "s", bad]), int(i64::from(bad == "abc")), "{bad:?}");
        assert_eq!(c.call(&["HINCRBY", &k, "s", "1"]), hash_not_int, "value {bad:?}");
        assert_eq!(c.call(&["HGET", &k, "s"]), bulk(bad), "unchanged");
    }
    let overflow = error("ERR increment or decrement would overflow");
    assert_eq!(c.call(&["HSET", &k, "max", "9223372036854775807", "min", "-9223372036854775808"]), int(2));
    assert_eq!(c.call(&["HINCRBY", &k, "max", "1"]), overflow);
    assert_eq!(c.call(&["HINCRBY", &k, "min", "-1"]), overflow);
    assert_eq!(c.call(&["HINCRBY", &k, "max", "0"]), int(i64::MAX));
    assert_eq!(c.call(&["HINCRBY", &k, "min", "9223372036854775807"]), int(-1));
    assert_eq!(c.call(&["HINCRBY", &k, "z", "-9223372036854775808"]), int(i64::MIN));
    assert_eq!(c.call(&["HGET", &k, "max"]), bulk("9223372036854775807"));
    // A value too long for the compact form is still a number.
    assert_eq!(c.call(&["HSET", &k, "long", &"1".repeat(COMPACT_VALUE_BYTES_MAX + 1)]), int(1));
    assert_eq!(c.call(&["HINCRBY", &k, "long", "1"]), hash_not_int);
    assert_eq!(c.call(&["HSET", &k, "long", "41"]), int(0));
    assert_eq!(c.call(&["HINCRBY", &k, "long", "1"]), int(42));
}

#[test]
fn hincrbyfloat() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("float");
    assert_eq!(c.call(&["HINCRBYFLOAT", &k, "f", "10.5"]), bulk("10.5"));
    assert_eq!(c.call(&["HINCRBYFLOAT", &k, "f", "0.1"]), bulk("10.6"));
    // long double digits: 10.6 + 5000 is not exactly 5010.6.
    assert_eq!(c.call(&["HINCRBYFLOAT", &k, "f", "5.0e3"]), bulk("5010.60000000000000009"));
    assert_eq!(c.call(&["HGET", &k, "f"]), bulk("5010.60000000000000009"));
    assert_eq!(c.call(&["HINCRBYFLOAT", &k, "f", "-5010.6"]), bulk("0"));
    assert_eq!(c.call(&["HINCRBYFLOAT", &k, "g", "0.1"]), bulk("0.1"));
    assert_eq!(c.call(&["HINCRBYFLOAT", &k, "g", "0.2"]), bulk("0.3"));
    for (inc, want) in [
        ("3.0", "3"),
        ("-0.0", "0"),
        ("+1.5", "1.5"),
        (".5", "0.5"),
        ("5.", "5"),
        ("0x10", "16"),
        ("1e-4940", "0"),
        ("1.23456789012345678901", "1.23456789012345679"),
        ("123456789012345678901234567890", "123456789012345678899921813504"),
    ] {
        let f = key("fresh");
        assert_eq!(c.call(&["HINCRBYFLOAT", &f, "x", inc]), bulk(want), "{inc}");
    }
    // An integer value past i64 is a float here.
    assert_eq!(c.call(&["HSET", &k, "big", "9223372036854775807"]), int(1));
    assert_eq!(c.call(&["HINCRBYFLOAT", &k, "big", "1"]), bulk("9223372036854775808"));
    assert_eq!(c.call(&["HINCRBY", &k, "big", "1"]), error("ERR hash value is not an integer"));
    // Errors: the increment first, then the stored value, then the sum.
    let not_float = error("ERR value is not a valid float");
    for bad in ["abc", "", " 1", "1 ", "nan", "1e", "1e5000", "1,5", "1\0", "\0"] {
        assert_eq!(c.call(&["HINCRBYFLOAT", &k, "f", bad]), not_float, "increment {bad:?}");
    }
    assert_eq!(c.call(&["HINCRBYFLOAT", &k, "f", "inf"]), error("ERR value is NaN or Infinity"));
    assert_eq!(c.call(&["HINCRBYFLOAT", &k, "f", "-Infinity"]), error("ERR value is NaN or Infinity"));
    for bad in ["abc", " 1", "1 ", "nan", "1\0", "\0"] {
        assert_eq!(c.call(&["HSET", &k, "s", bad]), int(i64::from(bad == "abc")), "{bad:?}");
        assert_eq!(c.call(&["HINCRBYFLOAT", &k, "s", "1"]), error("ERR hash value is not a float"), "{bad:?}");
    }
    assert_eq!(c.call(&["HSET", &k, "i", "inf"]), int(1));
    assert_eq!(c.call(&["HINCRBYFLOAT", &k, "i", "1"]), error("ERR increment would produce NaN or Infinity"));
    assert_eq!(c.call(&["HSET", &k, "m", "1.18973149535723176502e+4932"]), int(1));
    assert_eq!(
        c.call(&["HINCRBYFLOAT", &k, "m", "1.18973149535723176502e+4932"]),
        error("ERR increment would produce NaN or Infinity")
    );
    assert_eq!(c.call(&["HGET", &k, "i"]), bulk("inf"), "a failed increment stores nothing");
    assert_eq!(
        c.call(&["HINCRBYFLOAT", &k, "f", "x", "y"]),
        error("ERR wrong number of arguments for 'hincrbyfloat' command")
    );
}

#[test]
fn hrandfield_counts() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let none = key("none");
    assert_eq!(c.call(&["HRANDFIELD", &none]), NULL2);
    for count in ["0", "5", "-5", "-9223372036854775807"] {
        assert_eq!(c.call(&["HRANDFIELD", &none, count]), "*0\r\n", "{count}");
    }
    assert_eq!(c.call(&["HRANDFIELD", &none, "5", "WITHVALUES"]), "*0\r\n");
    // Small (compact) and large hashes follow the same count rules.
    for n in [5usize, LARGE_FIELDS] {
        let k = key("rand");
        fill(&mut c, &k, n);
        let every = all_fields(n);
        let one = parse(&c.call(&["HRANDFIELD", &k])).bulk().to_string();
        assert!(every.contains(&one), "{one}");
        assert_eq!(c.call(&["HRANDFIELD", &k, "0"]), "*0\r\n");
        assert_eq!(c.call(&["HRANDFIELD", &k, "0", "WITHVALUES"]), "*0\r\n");
        // Positive: distinct fields, at most the hash's size.
        for count in [1, 3, n - 1, n, n + 10] {
            let got = parse(&c.call(&["HRANDFIELD", &k, &count.to_string()])).strings();
            let set: BTreeSet<String> = got.iter().cloned().collect();
            assert_eq!(got.len(), count.min(n), "n {n} count {count}");
            assert_eq!(set.len(), got.len(), "distinct: n {n} count {count}");
            assert!(set.is_subset(&every));
        }
        // Negative: exactly |count| picks, repeats allowed.
        let picks = 3 * n;
        let got = parse(&c.call(&["HRANDFIELD", &k, &format!("-{picks}")])).strings();
        assert_eq!(got.len(), picks);
        let set: BTreeSet<String> = got.iter().cloned().collect();
        assert!(set.len() < picks, "{picks} picks from {n} fields repeat");
        assert!(set.is_subset(&every));
        // WITHVALUES: field, value pairs (flat in RESP2).
        let got = parse(&c.call(&["HRANDFIELD", &k, "-7", "WITHVALUES"])).strings();
        assert_eq!(got.len(), 14);
        for p in got.chunks(2) {
            assert_eq!(p[1], p[0].replacen('f', "v", 1));
        }
        let got = parse(&c.call(&["HRANDFIELD", &k, "3", "withvalues"])).strings();
        assert_eq!(got.len(), 2 * 3.min(n));
    }
}

#[test]
fn hrandfield_errors() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("randerr");
    assert_eq!(c.call(&["HSET", &k, "a", "1"]), int(1));
    let none = key("none");
    let not_int = error("ERR value is not an integer or out of range");
    let syntax = error("ERR syntax error");
    let range = error("ERR value is out of range");
    let long_min = error("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807");
    // Redis checks the count, then the syntax, then WITHVALUES's range,
    // then the key.
    for key in [&k, &none] {
        for (args, want) in [
            (&["x"][..], &not_int),
            (&["1.5"], &not_int),
            (&["99999999999999999999"], &not_int),
            (&["x", "foo"], &not_int),
            (&["x", "WITHVALUES", "extra"], &not_int),
            (&["-9223372036854775808"], &long_min),
            (&["-9223372036854775808", "foo"], &long_min),
            (&["1", "foo"], &syntax),
            (&["1", "WITHVALUES", "extra"], &syntax),
            (&["-4611686018427387904", "WITHVALUES"], &range),
            (&["4611686018427387904", "WITHVALUES"], &range),
        ] {
            let mut v = vec!["HRANDFIELD", key.as_str()];
            v.extend_from_slice(args);
            assert_eq!(&c.call(&v), want, "{v:?}");
        }
    }
    assert_eq!(c.call(&["HRANDFIELD", &none, "4611686018427387903", "WITHVALUES"]), "*0\r\n");
    assert_eq!(c.call(&["HRANDFIELD", &k, "9223372036854775807"]), arr(&["a"]));
    assert_eq!(c.call(&["HRANDFIELD", &k, "4611686018427387903", "WITHVALUES"]), arr(&["a", "1"]));
}

#[test]
fn hscan_compact_and_errors() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("scan");
    assert_eq!(c.call(&["HSET", &k, "a", "1", "b", "2", "ab", "3"]), int(3));
    let everything = format!("*2\r\n{}{}", bulk("0"), arr(&["a", "1", "b", "2", "ab", "3"]));
    // A compact hash answers everything at once, cursor 0, whatever the
    // COUNT or the cursor given.
    assert_eq!(c.call(&["HSCAN", &k, "0"]), everything);
    assert_eq!(c.call(&["HSCAN", &k, "0", "COUNT", "1"]), everything);
    assert_eq!(c.call(&["HSCAN", &k, "7"]), everything);
    assert_eq!(
        c.call(&["HSCAN", &k, "0", "MATCH", "a*"]),
        format!("*2\r\n{}{}", bulk("0"), arr(&["a", "1", "ab", "3"]))
    );
    assert_eq!(c.call(&["HSCAN", &k, "0", "MATCH", "z*", "COUNT", "100"]), format!("*2\r\n{}*0\r\n", bulk("0")));
    assert_eq!(
        c.call(&["HSCAN", &k, "0", "match", "?", "count", "5"]),
        format!("*2\r\n{}{}", bulk("0"), arr(&["a", "1", "b", "2"]))
    );
    // The last MATCH wins.
    assert_eq!(
        c.call(&["HSCAN", &k, "0", "MATCH", "b", "MATCH", "ab"]),
        format!("*2\r\n{}{}", bulk("0"), arr(&["ab", "3"]))
    );
    // The cursor is strtoul's: a sign and the empty string pass; a
    // leading space, a trailing byte or an overflow do not.
    for cursor in ["", "+1", "-1", "007", "18446744073709551615"] {
        assert_eq!(c.call(&["HSCAN", &k, cursor]), everything, "cursor {cursor:?}");
    }
    let invalid = error("ERR invalid cursor");
    for cursor in [" 1", "1 ", "x", "-", "1.5", "0x1", "18446744073709551616"] {
        assert_eq!(c.call(&["HSCAN", &k, cursor]), invalid, "cursor {cursor:?}");
    }
    let syntax = error("ERR syntax error");
    assert_eq!(c.call(&["HSCAN", &k, "0", "COUNT", "0"]), syntax);
    assert_eq!(c.call(&["HSCAN", &k, "0", "COUNT", "-1"]), syntax);
    assert_eq!(c.call(&["HSCAN", &k, "0", "COUNT"]), syntax);
    assert_eq!(c.call(&["HSCAN", &k, "0", "MATCH"]), syntax);
    assert_eq!(c.call(&["HSCAN", &k, "0", "TYPE", "hash"]), syntax);
    assert_eq!(c.call(&["HSCAN", &k, "0", "bogus", "1"]), syntax);
    assert_eq!(c.call(&["HSCAN", &k, "0", "COUNT", "x"]), error("ERR value is not an integer or out of range"));
    // A missing key answers an empty scan before the options are read;
    // the cursor is read first.
    let none = key("none");
    let empty = format!("*2\r\n{}*0\r\n", bulk("0"));
    assert_eq!(c.call(&["HSCAN", &none, "0"]), empty);
    assert_eq!(c.call(&["HSCAN", &none, "0", "COUNT", "0"]), empty);
    assert_eq!(c.call(&["HSCAN", &none, "0", "bogus"]), empty);
    assert_eq!(c.call(&["HSCAN", &none, "x"]), invalid);
}

#[test]
fn large_hash_keeps_every_field_and_scans_them_all() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    // Up to the field-count threshold and one past it, one field at a time.
    let k = key("large");
    for i in 0..COMPACT_FIELDS_MAX + 2 {
        assert_eq!(c.call(&["HSET", &k, &format!("f{i}"), &format!("v{i}")]), int(1), "field {i}");
        if i + 1 >= COMPACT_FIELDS_MAX - 1 {
            assert_eq!(c.call(&["HLEN", &k]), int(i as i64 + 1));
        }
    }
    let n = COMPACT_FIELDS_MAX + 2;
    let all = getall(&mut c, &k);
    assert_eq!(all.len(), n);
    for i in 0..n {
        assert_eq!(all.get(&format!("f{i}")).map(String::as_str), Some(format!("v{i}").as_str()), "f{i}");
    }
    let keys: BTreeSet<String> = parse(&c.call(&["HKEYS", &k])).strings().into_iter().collect();
    assert_eq!(keys, all_fields(n));
    let vals: BTreeSet<String> = parse(&c.call(&["HVALS", &k])).strings().into_iter().collect();
    assert_eq!(vals, (0..n).map(|i| format!("v{i}")).collect());
    assert_eq!(c.call(&["HGET", &k, "f0"]), bulk("v0"));
    assert_eq!(c.call(&["HGET", &k, &format!("f{}", n - 1)]), bulk(&format!("v{}", n - 1)));
    assert_eq!(c.call(&["HMGET", &k, "f1", "nope", "f513"]), format!("*3\r\n{}{NULL2}{}", bulk("v1"), bulk("v513")));
    assert_eq!(c.call(&["HEXISTS", &k, "f100"]), int(1));
    assert_eq!(c.call(&["HSTRLEN", &k, "f100"]), int(4));
    assert_eq!(c.call(&["HSET", &k, "f5", "w5"]), int(0));
    assert_eq!(c.call(&["HGET", &k, "f5"]), bulk("w5"));
    assert_eq!(c.call(&["HSETNX", &k, "f5", "x"]), int(0));
    assert_eq!(c.call(&["HSET", &k, "f5", "v5"]), int(0));
    assert_eq!(c.call(&["HINCRBY", &k, "count", "2"]), int(2));
    assert_eq!(c.call(&["HINCRBYFLOAT", &k, "count", "0.5"]), bulk("2.5"));
    assert_eq!(c.call(&["HDEL", &k, "count", "nope"]), int(1));
    assert_eq!(c.call(&["HLEN", &k]), int(n as i64));
    // HSCAN over a large hash is incremental; iterating from 0 back to 0
    // returns every field at least once.
    let first = parse(&c.call(&["HSCAN", &k, "0"]));
    assert_ne!(first.array()[0].bulk(), "0", "a large hash scans in steps");
    let (seen, calls) = scan_all(&mut c, &k, &[]);
    assert_eq!(seen, all_fields(n));
    assert!(calls > 1);
    let (seen, _) = scan_all(&mut c, &k, &["COUNT", "100"]);
    assert_eq!(seen, all_fields(n));
    let (seen, _) = scan_all(&mut c, &k, &["MATCH", "f1?", "COUNT", "7"]);
    assert_eq!(seen, (10..20).map(|i| format!("f{i}")).collect());

    // A value one byte past the value threshold, and a field one past.
    let v = key("longval");
    let at_max = "x".repeat(COMPACT_VALUE_BYTES_MAX);
    let past = "y".repeat(COMPACT_VALUE_BYTES_MAX + 1);
    assert_eq!(c.call(&["HSET", &v, "a", &at_max, "b", "1"]), int(2));
    assert_eq!(c.call(&["HSET", &v, "c", &past]), int(1));
    assert_eq!(c.call(&["HGET", &v, "a"]), bulk(&at_max));
    assert_eq!(c.call(&["HGET", &v, "c"]), bulk(&past));
    assert_eq!(c.call(&["HLEN", &v]), int(3));
    let all = getall(&mut c, &v);
    assert_eq!(all.len(), 3);
    assert_eq!(all["a"], at_max);
    assert_eq!(all["b"], "1");
    assert_eq!(all["c"], past);
    let f = key("longfield");
    let long_field = "f".repeat(COMPACT_VALUE_BYTES_MAX + 1);
    assert_eq!(c.call(&["HSET", &f, "a", "1"]), int(1));
    assert_eq!(c.call(&["HSET", &f, &long_field, "2"]), int(1));
    assert_eq!(c.call(&["HGET", &f, &long_field]), bulk("2"));
    assert_eq!(c.call(&["HGET", &f, "a"]), bulk("1"));
    let keys: BTreeSet<String> = parse(&c.call(&["HKEYS", &f])).strings().into_iter().collect();
    assert_eq!(keys, ["a".to_string(), long_field].into_iter().collect());
}

#[test]
fn wrongtype() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let s = key("str");
    assert_eq!(c.call(&["SET", &s, "v"]), OK);
    let wrong = error("WRONGTYPE Operation against a key holding the wrong kind of value");
    for args in [
        &["HSET", "f", "v"][..],
        &["HSETNX", "f", "v"],
        &["HMSET", "f", "v"],
        &["HGET", "f"],
        &["HMGET", "f", "g"],
        &["HDEL", "f"],
        &["HLEN"],
        &["HSTRLEN", "f"],
        &["HEXISTS", "f"],
        &["HKEYS"],
        &["HVALS"],
        &["HGETALL"],
        &["HINCRBY", "f", "1"],
        &["HINCRBYFLOAT", "f", "1"],
        &["HRANDFIELD"],
        &["HRANDFIELD", "1"],
        &["HRANDFIELD", "-9223372036854775807"],
        &["HRANDFIELD", "-1", "WITHVALUES"],
        &["HSCAN", "0"],
        &["HSCAN", "0", "COUNT", "0"],
    ] {
        let mut v = vec![args[0], s.as_str()];
        v.extend_from_slice(&args[1..]);
        assert_eq!(c.call(&v), wrong, "{v:?}");
    }
    // Argument errors come before the key is looked at.
    assert_eq!(c.call(&["HINCRBY", &s, "f", "x"]), error("ERR value is not an integer or out of range"));
    assert_eq!(c.call(&["HSCAN", &s, "x"]), error("ERR invalid cursor"));
    assert_eq!(c.call(&["HRANDFIELD", &s, "x"]), error("ERR value is not an integer or out of range"));
    assert_eq!(c.call(&["HRANDFIELD", &s, "1", "bogus"]), error("ERR syntax error"));
    assert_eq!(c.call(&["HSET", &s, "f"]), error("ERR wrong number of arguments for 'hset' command"));
    // The string is untouched.
    assert_eq!(c.call(&["TYPE", &s]), "+string\r\n");
    assert_eq!(c.call(&["GET", &s]), bulk("v"));
}

#[test]
fn expiry_type_and_scan_type() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("ttl");
    assert_eq!(c.call(&["HSET", &k, "a", "1"]), int(1));
    assert_eq!(c.call(&["TTL", &k]), int(-1));
    assert_eq!(c.call(&["EXPIRE", &k, "100"]), int(1));
    // Hash writes keep the key's TTL, in the compact form and across the
    // conversion to the large one.
    assert_eq!(c.call(&["HSET", &k, "b", "2"]), int(1));
    assert_eq!(c.call(&["HINCRBY", &k, "n", "1"]), int(1));
    assert_eq!(c.call(&["HINCRBYFLOAT", &k, "n", "1"]), bulk("2"));
    assert_eq!(c.call(&["HDEL", &k, "n"]), int(1));
    assert_eq!(c.call(&["HSETNX", &k, "c", "3"]), int(1));
    let ttl = as_int(&c.call(&["TTL", &k]));
    assert!((99..=100).contains(&ttl), "TTL {ttl}");
    fill(&mut c, &k, LARGE_FIELDS);
    assert_eq!(c.call(&["HLEN", &k]), int(LARGE_FIELDS as i64 + 3));
    let ttl = as_int(&c.call(&["TTL", &k]));
    assert!((99..=100).contains(&ttl), "TTL {ttl} after the conversion");
    assert_eq!(c.call(&["HSET", &k, "f0", "x"]), int(0));
    let ttl = as_int(&c.call(&["TTL", &k]));
    assert!((99..=100).contains(&ttl), "TTL {ttl} after an in-place write");
    assert_eq!(c.call(&["PERSIST", &k]), int(1));
    assert_eq!(c.call(&["TTL", &k]), int(-1));
    assert_eq!(c.call(&["TYPE", &k]), "+hash\r\n");
    assert_eq!(c.call(&["EXISTS", &k]), int(1));
    assert_eq!(c.call(&["DEL", &k]), int(1));
    assert_eq!(c.call(&["EXISTS", &k]), int(0));
    assert_eq!(c.call(&["HLEN", &k]), int(0));
    // A hash whose time has come is gone, small or large. (Amalgam's
    // deadlines are whole seconds, README: 50 ms may last up to a second.)
    let e = key("expire");
    let el = key("expirelarge");
    assert_eq!(c.call(&["HSET", &e, "a", "1"]), int(1));
    fill(&mut c, &el, LARGE_FIELDS);
    assert_eq!(c.call(&["PEXPIRE", &e, "50"]), int(1));
    assert_eq!(c.call(&["PEXPIRE", &el, "50"]), int(1));
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert_eq!(c.call(&["HGET", &e, "a"]), NULL2);
    assert_eq!(c.call(&["HLEN", &e]), int(0));
    assert_eq!(c.call(&["EXISTS", &e]), int(0));
    assert_eq!(c.call(&["TTL", &e]), int(-2));
    assert_eq!(c.call(&["HGETALL", &el]), "*0\r\n");
    assert_eq!(c.call(&["HGET", &el, "f1"]), NULL2);
    assert_eq!(c.call(&["EXISTS", &el]), int(0));
    // SCAN's TYPE filter names hashes, small and large.
    let prefix = key("scantype");
    let (small, large, s) = (format!("{prefix}:small"), format!("{prefix}:large"), format!("{prefix}:str"));
    assert_eq!(c.call(&["HSET", &small, "a", "1"]), int(1));
    fill(&mut c, &large, LARGE_FIELDS);
    assert_eq!(c.call(&["SET", &s, "v"]), OK);
    let pattern = format!("{prefix}:*");
    let scan = |c: &mut Resp, t: &str| -> BTreeSet<String> {
        let mut cursor = "0".to_string();
        let mut got = BTreeSet::new();
        for _ in 0..1_000_000 {
            let r = parse(&c.call(&["SCAN", &cursor, "MATCH", &pattern, "COUNT", "1000", "TYPE", t]));
            got.extend(r.array()[1].strings());
            cursor = r.array()[0].bulk().to_string();
            if cursor == "0" {
                return got;
            }
        }
        panic!("SCAN did not come back to cursor 0");
    };
    assert_eq!(scan(&mut c, "hash"), [small.clone(), large.clone()].into_iter().collect());
    assert_eq!(scan(&mut c, "HASH"), [small.clone(), large.clone()].into_iter().collect());
    assert_eq!(scan(&mut c, "string"), [s.clone()].into_iter().collect());
    assert_eq!(scan(&mut c, "list"), BTreeSet::new());
    assert_eq!(c.call(&["TYPE", &large]), "+hash\r\n");
}

#[test]
fn resp3_replies() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    assert!(c.call(&["HELLO", "3"]).starts_with("%7\r\n"));
    let k = key("r3");
    let none = key("none");
    assert_eq!(c.call(&["HSET", &k, "a", "1", "b", "2"]), int(2));
    assert_eq!(c.call(&["HGETALL", &k]), map3(&[("a", "1"), ("b", "2")]));
    assert_eq!(c.call(&["HGETALL", &none]), "%0\r\n");
    assert_eq!(c.call(&["HKEYS", &k]), arr(&["a", "b"]));
    assert_eq!(c.call(&["HVALS", &none]), "*0\r\n");
    assert_eq!(c.call(&["HGET", &k, "zz"]), NULL3);
    assert_eq!(c.call(&["HGET", &none, "a"]), NULL3);
    assert_eq!(c.call(&["HMGET", &k, "a", "zz"]), format!("*2\r\n{}{NULL3}", bulk("1")));
    assert_eq!(c.call(&["HMGET", &none, "a"]), format!("*1\r\n{NULL3}"));
    assert_eq!(c.call(&["HRANDFIELD", &none]), NULL3);
    assert_eq!(c.call(&["HRANDFIELD", &none, "2", "WITHVALUES"]), "*0\r\n");
    assert_eq!(c.call(&["HINCRBYFLOAT", &k, "f", "1.5"]), bulk("1.5"), "a bulk string, not a RESP3 double");
    assert_eq!(c.call(&["HDEL", &k, "f"]), int(1));
    assert_eq!(c.call(&["HSCAN", &k, "0"]), format!("*2\r\n{}{}", bulk("0"), arr(&["a", "1", "b", "2"])));
    // HRANDFIELD WITHVALUES: an array of [field, value] pairs in RESP3.
    assert_eq!(
        c.call(&["HRANDFIELD", &k, "2", "WITHVALUES"]).len(),
        "*2\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n".len()
    );
    for (count, want) in [("5", 2), ("2", 2), ("1", 1), ("-5", 5)] {
        let got = parse(&c.call(&["HRANDFIELD", &k, count, "WITHVALUES"]));
        let pairs = got.array();
        assert_eq!(pairs.len(), want, "{count}");
        for p in pairs {
            let p = p.strings();
            assert!(p == ["a", "1"] || p == ["b", "2"], "{p:?}");
        }
    }
    // Without WITHVALUES a flat array.
    let got = parse(&c.call(&["HRANDFIELD", &k, "-3"])).strings();
    assert_eq!(got.len(), 3);
    // Large: the same shapes.
    let big = key("r3big");
    fill(&mut c, &big, LARGE_FIELDS);
    let all = getall(&mut c, &big);
    assert_eq!(all.len(), LARGE_FIELDS);
    assert!(c.call(&["HGETALL", &big]).starts_with(&format!("%{LARGE_FIELDS}\r\n")));
    let got = parse(&c.call(&["HRANDFIELD", &big, "-4", "WITHVALUES"]));
    assert_eq!(got.array().len(), 4);
    for p in got.array() {
        let p = p.strings();
        assert_eq!(p[1], p[0].replacen('f', "v", 1));
    }
    let (seen, _) = scan_all(&mut c, &big, &[]);
    assert_eq!(seen, all_fields(LARGE_FIELDS));
    assert!(c.call(&["HELLO", "2"]).starts_with("*14\r\n"));
    assert_eq!(c.call(&["HGETALL", &k]), arr(&["a", "1", "b", "2"]));
}
