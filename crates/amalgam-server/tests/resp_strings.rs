//! Redis's string commands over RESP, black-box, byte for byte: replies,
//! reply types and error texts. Runs against amalgam by default; CI also
//! runs it against Debian's redis-server 7 (`AMALGAM_TEST_RESP_ADDR`, see
//! `common/mod.rs`), which proves every expectation here is Redis's own.
mod common;
use common::resp::*;
use common::*;

/// TTL right after setting 100 s: Redis rounds the time left to the
/// nearest second, Amalgam's whole-second deadline may read a second less
/// if a millisecond boundary passed in between; both are within 99..=100.
fn assert_ttl_100(c: &mut Resp, k: &str) {
    let ttl = as_int(&c.call(&["TTL", k]));
    assert!((99..=100).contains(&ttl), "TTL {ttl}");
}

#[test]
fn get_set_and_options() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("set");
    assert_eq!(c.call(&["GET", &k]), NULL2);
    assert_eq!(c.call(&["SET", &k, "v"]), OK);
    assert_eq!(c.call(&["get", &k]), bulk("v"));
    assert_eq!(c.call(&["SET", &k, ""]), OK);
    assert_eq!(c.call(&["GET", &k]), bulk(""));
    // NX / XX, and their null reply when they do not store.
    assert_eq!(c.call(&["SET", &k, "x", "NX"]), NULL2);
    assert_eq!(c.call(&["SET", &k, "x", "xx"]), OK);
    assert_eq!(c.call(&["SET", &format!("{k}:new"), "y", "XX"]), NULL2);
    assert_eq!(c.call(&["GET", &format!("{k}:new")]), NULL2);
    assert_eq!(c.call(&["SET", &format!("{k}:new"), "y", "NX"]), OK);
    // GET returns the old value, whether or not NX/XX let the write happen.
    assert_eq!(c.call(&["SET", &k, "z", "GET"]), bulk("x"));
    assert_eq!(c.call(&["SET", &k, "w", "NX", "GET"]), bulk("z"));
    assert_eq!(c.call(&["GET", &k]), bulk("z"));
    assert_eq!(c.call(&["SET", &format!("{k}:none"), "w", "XX", "GET"]), NULL2);
    assert_eq!(c.call(&["SET", &format!("{k}:none2"), "w", "GET"]), NULL2);
    assert_eq!(c.call(&["GET", &format!("{k}:none2")]), bulk("w"));
    // Expiry options.
    assert_eq!(c.call(&["SET", &k, "v", "EX", "100"]), OK);
    assert_ttl_100(&mut c, &k);
    assert_eq!(c.call(&["SET", &k, "v2", "KEEPTTL"]), OK);
    assert_ttl_100(&mut c, &k);
    assert_eq!(c.call(&["SET", &k, "v3"]), OK);
    assert_eq!(c.call(&["TTL", &k]), int(-1), "a plain SET clears the TTL");
    assert_eq!(c.call(&["SET", &k, "v", "PX", "100000"]), OK);
    let ttl = as_int(&c.call(&["TTL", &k]));
    assert!((99..=100).contains(&ttl), "{ttl}");
    assert_eq!(c.call(&["SET", &k, "v", "EXAT", "4000000000"]), OK);
    assert_eq!(c.call(&["EXPIRETIME", &k]), int(4_000_000_000));
    assert_eq!(c.call(&["SET", &k, "v", "PXAT", "4000000000000"]), OK);
    assert_eq!(c.call(&["PEXPIRETIME", &k]), int(4_000_000_000_000));
    // A deadline already past stores nothing and removes the old value.
    assert_eq!(c.call(&["SET", &k, "v", "PXAT", "1"]), OK);
    assert_eq!(c.call(&["GET", &k]), NULL2);
    assert_eq!(c.call(&["SET", &k, "v", "EXAT", "1", "GET"]), NULL2);
    assert_eq!(c.call(&["EXISTS", &k]), int(0));
}

#[test]
fn set_errors() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("seterr");
    let syntax = error("ERR syntax error");
    for opts in [
        &["NX", "XX"][..],
        &["EX", "10", "PX", "10"],
        &["KEEPTTL", "EX", "10"],
        &["EX", "10", "KEEPTTL"],
        &["bogus"],
        &["EX"],
        &["PERSIST"],
    ] {
        let mut args = vec!["SET", &k, "v"];
        args.extend_from_slice(opts);
        assert_eq!(c.call(&args), syntax, "{opts:?}");
    }
    let invalid = error("ERR invalid expire time in 'set' command");
    for t in ["0", "-1"] {
        assert_eq!(c.call(&["SET", &k, "v", "EX", t]), invalid);
        assert_eq!(c.call(&["SET", &k, "v", "PX", t]), invalid);
        assert_eq!(c.call(&["SET", &k, "v", "EXAT", t]), invalid);
    }
    assert_eq!(c.call(&["SET", &k, "v", "EX", "9223372036854775807"]), invalid);
    assert_eq!(c.call(&["SET", &k, "v", "PX", "9223372036854775807"]), invalid);
    let not_int = error("ERR value is not an integer or out of range");
    for t in ["abc", "1.5", " 1", "+1", "01", "99999999999999999999"] {
        assert_eq!(c.call(&["SET", &k, "v", "EX", t]), not_int, "{t}");
    }
    // Nothing was stored by any of these.
    assert_eq!(c.call(&["GET", &k]), NULL2);
    assert_eq!(c.call(&["SET", &k]), error("ERR wrong number of arguments for 'set' command"));
}

#[test]
fn setnx_setex_psetex_getset_getdel() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("variants");
    assert_eq!(c.call(&["SETNX", &k, "a"]), int(1));
    assert_eq!(c.call(&["SETNX", &k, "b"]), int(0));
    assert_eq!(c.call(&["GET", &k]), bulk("a"));
    assert_eq!(c.call(&["SETEX", &k, "100", "b"]), OK);
    assert_ttl_100(&mut c, &k);
    assert_eq!(c.call(&["SETEX", &k, "0", "b"]), error("ERR invalid expire time in 'setex' command"));
    assert_eq!(c.call(&["PSETEX", &k, "-5", "b"]), error("ERR invalid expire time in 'psetex' command"));
    assert_eq!(c.call(&["SETEX", &k, "x", "b"]), error("ERR value is not an integer or out of range"));
    assert_eq!(c.call(&["PSETEX", &k, "100000", "c"]), OK);
    assert_eq!(c.call(&["GET", &k]), bulk("c"));
    assert_eq!(c.call(&["GETSET", &k, "d"]), bulk("c"));
    assert_eq!(c.call(&["TTL", &k]), int(-1), "GETSET clears the TTL");
    assert_eq!(c.call(&["GETSET", &format!("{k}:n"), "e"]), NULL2);
    assert_eq!(c.call(&["GETDEL", &k]), bulk("d"));
    assert_eq!(c.call(&["GETDEL", &k]), NULL2);
    assert_eq!(c.call(&["EXISTS", &k]), int(0));
    assert_eq!(c.call(&["SETNX", &k]), error("ERR wrong number of arguments for 'setnx' command"));
}

#[test]
fn getex() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("getex");
    assert_eq!(c.call(&["GETEX", &k]), NULL2);
    // A missing key answers null before the expiry is even looked at.
    assert_eq!(c.call(&["GETEX", &k, "EX", "0"]), NULL2);
    assert_eq!(c.call(&["SET", &k, "v"]), OK);
    assert_eq!(c.call(&["GETEX", &k]), bulk("v"));
    assert_eq!(c.call(&["GETEX", &k, "EX", "100"]), bulk("v"));
    assert_ttl_100(&mut c, &k);
    assert_eq!(c.call(&["GETEX", &k, "PERSIST"]), bulk("v"));
    assert_eq!(c.call(&["TTL", &k]), int(-1));
    assert_eq!(c.call(&["GETEX", &k, "EXAT", "4000000000"]), bulk("v"));
    assert_eq!(c.call(&["EXPIRETIME", &k]), int(4_000_000_000));
    assert_eq!(c.call(&["GETEX", &k, "EX", "10", "PX", "10"]), error("ERR syntax error"));
    assert_eq!(c.call(&["GETEX", &k, "KEEPTTL"]), error("ERR syntax error"));
    assert_eq!(c.call(&["GETEX", &k, "PERSIST", "EX", "1"]), error("ERR syntax error"));
    assert_eq!(c.call(&["GETEX", &k, "EX", "0"]), error("ERR invalid expire time in 'getex' command"));
    // A deadline in the past answers the value and removes the key.
    assert_eq!(c.call(&["GETEX", &k, "PXAT", "1"]), bulk("v"));
    assert_eq!(c.call(&["GET", &k]), NULL2);
}

#[test]
fn mget_mset_msetnx() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (a, b, n) = (key("ma"), key("mb"), key("mn"));
    assert_eq!(c.call(&["MSET", &a, "1", &b, "2"]), OK);
    assert_eq!(c.call(&["MGET", &a, &n, &b, &a]), format!("*4\r\n{}{NULL2}{}{}", bulk("1"), bulk("2"), bulk("1")));
    assert_eq!(c.call(&["MSET", &a, "1", &b]), error("ERR wrong number of arguments for 'mset' command"));
    assert_eq!(c.call(&["MSET"]), error("ERR wrong number of arguments for 'mset' command"));
    assert_eq!(c.call(&["MGET"]), error("ERR wrong number of arguments for 'mget' command"));
    assert_eq!(c.call(&["MSETNX", &a, "x", &n, "y"]), int(0));
    assert_eq!(c.call(&["GET", &n]), NULL2, "MSETNX sets nothing if any key exists");
    assert_eq!(c.call(&["MSETNX", &n, "y", &format!("{n}2"), "z"]), int(1));
    assert_eq!(c.call(&["MGET", &n, &format!("{n}2")]), format!("*2\r\n{}{}", bulk("y"), bulk("z")));
    // A key named twice takes its last value.
    let d = key("mdup");
    assert_eq!(c.call(&["MSETNX", &d, "1", &format!("{d}2"), "x", &d, "2"]), int(1));
    assert_eq!(c.call(&["GET", &d]), bulk("2"));
    assert_eq!(c.call(&["MSET", &d, "3", &d, "4"]), OK);
    assert_eq!(c.call(&["GET", &d]), bulk("4"));
    assert_eq!(c.call(&["MSETNX", &n, "y", &b]), error("ERR wrong number of arguments for 'msetnx' command"));
}

#[test]
fn counters() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("n");
    assert_eq!(c.call(&["INCR", &k]), int(1));
    assert_eq!(c.call(&["INCRBY", &k, "10"]), int(11));
    assert_eq!(c.call(&["DECR", &k]), int(10));
    assert_eq!(c.call(&["DECRBY", &k, "20"]), int(-10));
    assert_eq!(c.call(&["INCRBY", &k, "-5"]), int(-15));
    assert_eq!(c.call(&["GET", &k]), bulk("-15"));
    let not_int = error("ERR value is not an integer or out of range");
    assert_eq!(c.call(&["INCRBY", &k, "x"]), not_int);
    assert_eq!(c.call(&["INCRBY", &k, "1.0"]), not_int);
    for bad in ["abc", " 1", "1 ", "01", "1.5", "", "99999999999999999999"] {
        assert_eq!(c.call(&["SET", &k, bad]), OK);
        assert_eq!(c.call(&["INCR", &k]), not_int, "{bad:?}");
    }
    assert_eq!(c.call(&["SET", &k, "9223372036854775807"]), OK);
    assert_eq!(c.call(&["INCR", &k]), error("ERR increment or decrement would overflow"));
    assert_eq!(c.call(&["SET", &k, "-9223372036854775808"]), OK);
    assert_eq!(c.call(&["DECR", &k]), error("ERR increment or decrement would overflow"));
    assert_eq!(c.call(&["DECRBY", &k, "-9223372036854775808"]), error("ERR decrement would overflow"));
    assert_eq!(c.call(&["GET", &k]), bulk("-9223372036854775808"));
    // A counter keeps its TTL.
    assert_eq!(c.call(&["SET", &k, "5", "EX", "100"]), OK);
    assert_eq!(c.call(&["INCR", &k]), int(6));
    assert_ttl_100(&mut c, &k);
    assert_eq!(c.call(&["INCR", &k, "1"]), error("ERR wrong number of arguments for 'incr' command"));
}

#[test]
fn incrbyfloat() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("f");
    assert_eq!(c.call(&["INCRBYFLOAT", &k, "3"]), bulk("3"));
    assert_eq!(c.call(&["INCRBYFLOAT", &k, "0.5"]), bulk("3.5"));
    assert_eq!(c.call(&["SET", &k, "10.50"]), OK);
    assert_eq!(c.call(&["INCRBYFLOAT", &k, "0.1"]), bulk("10.6"));
    assert_eq!(c.call(&["INCRBYFLOAT", &k, "-5.6"]), bulk("5"));
    assert_eq!(c.call(&["INCRBYFLOAT", &k, "2.0e2"]), bulk("205"));
    assert_eq!(c.call(&["GET", &k]), bulk("205"));
    assert_eq!(c.call(&["INCRBYFLOAT", &k, "abc"]), error("ERR value is not a valid float"));
    assert_eq!(c.call(&["INCRBYFLOAT", &k, "inf"]), error("ERR increment would produce NaN or Infinity"));
    assert_eq!(c.call(&["SET", &k, "x"]), OK);
    assert_eq!(c.call(&["INCRBYFLOAT", &k, "1"]), error("ERR value is not a valid float"));
    // Redis's long double to the last digit: a counter near 10^15 moves
    // by 0.4 (it stayed put in f64 at 15 digits), the shortest decimal
    // of an f64 sum is not what Redis prints, hex is a float.
    assert_eq!(c.call(&["SET", &k, "1000000000000000"]), OK);
    assert_eq!(c.call(&["INCRBYFLOAT", &k, "0.4"]), bulk("1000000000000000.4000244140625"));
    assert_eq!(c.call(&["INCRBYFLOAT", &k, "0.4"]), bulk("1000000000000000.800048828125"));
    assert_eq!(c.call(&["SET", &k, "0.1"]), OK);
    assert_eq!(c.call(&["INCRBYFLOAT", &k, "0.2"]), bulk("0.3"));
    assert_eq!(c.call(&["SET", &k, "3"]), OK);
    assert_eq!(c.call(&["INCRBYFLOAT", &k, "1e-15"]), bulk("3.000000000000001"));
    assert_eq!(c.call(&["SET", &k, "123456.7890123456"]), OK);
    assert_eq!(
        c.call(&["INCRBYFLOAT", &k, "0"]),
        bulk("123456.78901234559999978"),
        "%.17Lf of the nearest long double"
    );
    assert_eq!(c.call(&["SET", &k, "0x10"]), OK);
    assert_eq!(c.call(&["INCRBYFLOAT", &k, "0x1p3"]), bulk("24"));
    // Past f64's range: the long double nearest 1e400, every digit
    // printed (read from Redis 7.0.15).
    let near_1e400 =
        "10000000000000000000281880683947586514586453433629052038625910693539685534008629862039363994848324\
                      160522094053927317616200295822777259255734023828976593340661017797447434546173917862448116674971\
                      723778943824391593338047470675026246684401359237513603830343735485505244955964979021825038280091\
                      068414947402456898653040951017512658092615827588920183472511643316591362664138176309734806343732\
                      497430221946880";
    assert_eq!(c.call(&["INCRBYFLOAT", &k, "1e400"]), bulk(near_1e400));
    // The key's kind is checked first, then its value, then the increment.
    let l = key("f-list");
    assert_eq!(c.call(&["RPUSH", &l, "a"]), int(1));
    assert_eq!(
        c.call(&["INCRBYFLOAT", &l, "abc"]),
        error("WRONGTYPE Operation against a key holding the wrong kind of value")
    );
    assert_eq!(c.call(&["SET", &k, "x"]), OK);
    assert_eq!(c.call(&["INCRBYFLOAT", &k, "abc"]), error("ERR value is not a valid float"));
    assert_eq!(c.call(&["GET", &k]), bulk("x"));
}

#[test]
fn append_strlen_ranges() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("s");
    assert_eq!(c.call(&["APPEND", &k, "abc"]), int(3));
    assert_eq!(c.call(&["APPEND", &k, "def"]), int(6));
    assert_eq!(c.call(&["STRLEN", &k]), int(6));
    assert_eq!(c.call(&["STRLEN", &format!("{k}:none")]), int(0));
    for (s, e, want) in [
        ("0", "-1", "abcdef"),
        ("1", "2", "bc"),
        ("-2", "-1", "ef"),
        ("5", "2", ""),
        ("100", "200", ""),
        ("-100", "1", "ab"),
        ("-1", "-2", ""),
        ("0", "100", "abcdef"),
    ] {
        assert_eq!(c.call(&["GETRANGE", &k, s, e]), bulk(want), "{s} {e}");
    }
    assert_eq!(c.call(&["GETRANGE", &format!("{k}:none"), "0", "1"]), bulk(""));
    assert_eq!(c.call(&["GETRANGE", &k, "a", "1"]), error("ERR value is not an integer or out of range"));
    assert_eq!(c.call(&["SETRANGE", &k, "1", "ZZ"]), int(6));
    assert_eq!(c.call(&["GET", &k]), bulk("aZZdef"));
    assert_eq!(c.call(&["SETRANGE", &k, "8", "Q"]), int(9));
    assert_eq!(c.call(&["GET", &k]), bulk("aZZdef\0\0Q"));
    assert_eq!(c.call(&["SETRANGE", &k, "0", ""]), int(9));
    let n = format!("{k}:new");
    assert_eq!(c.call(&["SETRANGE", &n, "0", ""]), int(0));
    assert_eq!(c.call(&["EXISTS", &n]), int(0), "an empty SETRANGE creates nothing");
    assert_eq!(c.call(&["SETRANGE", &n, "2", "ab"]), int(4));
    assert_eq!(c.call(&["GET", &n]), bulk("\0\0ab"));
    assert_eq!(c.call(&["SETRANGE", &k, "-1", "x"]), error("ERR offset is out of range"));
    assert_eq!(
        c.call(&["SETRANGE", &k, "536870912", "x"]),
        error("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
    );
    assert_eq!(c.call(&["SETRANGE", &k, "x", "x"]), error("ERR value is not an integer or out of range"));
}

#[test]
fn resp3_nulls_and_binary_values() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("r3");
    assert!(c.call(&["HELLO", "3"]).starts_with("%7\r\n"));
    assert_eq!(c.call(&["GET", &k]), NULL3);
    assert_eq!(c.call(&["MGET", &k, &k]), format!("*2\r\n{NULL3}{NULL3}"));
    assert_eq!(c.call(&["SET", &k, "v", "XX"]), NULL3);
    assert_eq!(c.call(&["GETDEL", &k]), NULL3);
    // Any bytes, CRLF and NUL included, are a value.
    let v = b"a\r\nb\0c\xff";
    let mut req = encode(&[b"SET", k.as_bytes(), v]);
    req.extend_from_slice(&encode(&[b"GET", k.as_bytes()]));
    c.send_raw(&req);
    assert_eq!(c.reply(), OK);
    let got = c.reply();
    assert_eq!(got, format!("$7\r\n{}\r\n", String::from_utf8_lossy(v)));
    assert!(c.call(&["HELLO", "2"]).starts_with("*14\r\n"));
    assert_eq!(c.call(&["GET", &format!("{k}:none")]), NULL2);
}

#[test]
fn unknown_commands_and_arity() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    assert_eq!(c.call(&["NOSUCH"]), error("ERR unknown command 'NOSUCH', with args beginning with: "));
    assert_eq!(c.call(&["foo", "a", "b"]), error("ERR unknown command 'foo', with args beginning with: 'a' 'b' "));
    // At most 128 bytes of arguments are quoted.
    let long = "x".repeat(200);
    let want = format!("ERR unknown command 'foo', with args beginning with: '{}' ", &long[..128]);
    assert_eq!(c.call(&["foo", &long, "b"]), error(&want));
    // CR and LF in the echo become spaces.
    assert_eq!(c.call(&["foo", "a\r\nb"]), error("ERR unknown command 'foo', with args beginning with: 'a  b' "));
    for (cmd, args) in [
        ("get", &[][..]),
        ("get", &["a", "b"]),
        ("strlen", &[]),
        ("getrange", &["k", "1"]),
        ("echo", &[]),
        ("ping", &["a", "b"]),
        ("dbsize", &["x"]),
    ] {
        let mut v = vec![cmd];
        v.extend_from_slice(args);
        assert_eq!(c.call(&v), error(&format!("ERR wrong number of arguments for '{cmd}' command")), "{v:?}");
    }
    // The connection is still fine.
    assert_eq!(c.call(&["PING"]), "+PONG\r\n");
}

#[test]
fn substr_is_getrange() {
    // SUBSTR: GETRANGE's old name (deprecated since 2.0.0), still served
    // by Redis 7, with GETRANGE's replies and the same COMMAND INFO.
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("substr");
    assert_eq!(c.call(&["SET", &k, "Hello World"]), OK);
    assert_eq!(c.call(&["SUBSTR", &k, "0", "4"]), bulk("Hello"));
    assert_eq!(c.call(&["SUBSTR", &k, "-5", "-1"]), bulk("World"));
    assert_eq!(c.call(&["SUBSTR", &k, "5", "1"]), bulk(""));
    assert_eq!(c.call(&["SUBSTR", &key("substr-none"), "0", "4"]), bulk(""));
    assert_eq!(c.call(&["SUBSTR", &k, "x", "4"]), error("ERR value is not an integer or out of range"));
    assert_eq!(c.call(&["SUBSTR", &k, "0"]), error("ERR wrong number of arguments for 'substr' command"));
    let getrange = c.call(&["COMMAND", "INFO", "getrange"]);
    assert_eq!(c.call(&["COMMAND", "INFO", "substr"]), getrange.replace("$8\r\ngetrange", "$6\r\nsubstr"));
    let docs = c.call(&["COMMAND", "DOCS", "substr"]);
    assert!(
        docs.contains("$16\r\ndeprecated_since\r\n$5\r\n2.0.0\r\n$11\r\nreplaced_by\r\n$10\r\n`GETRANGE`\r\n"),
        "{docs}"
    );
}
