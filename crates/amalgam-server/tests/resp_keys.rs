//! Redis's keyspace commands over RESP, black-box: DEL UNLINK EXISTS
//! TYPE, the EXPIRE family with NX XX GT LT, TTL PTTL EXPIRETIME PERSIST,
//! KEYS SCAN DBSIZE FLUSHALL. Runs against amalgam and, in CI, against
//! redis-server 7 (`AMALGAM_TEST_RESP_ADDR`).
mod common;
use common::resp::*;
use common::*;

#[test]
fn del_unlink_exists_type() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (a, b, n) = (key("a"), key("b"), key("n"));
    assert_eq!(c.call(&["MSET", &a, "1", &b, "2"]), OK);
    assert_eq!(c.call(&["EXISTS", &a, &a, &n, &b]), int(3), "EXISTS counts repeats");
    assert_eq!(c.call(&["TYPE", &a]), "+string\r\n");
    assert_eq!(c.call(&["TYPE", &n]), "+none\r\n");
    assert_eq!(c.call(&["DEL", &a, &n, &a]), int(1));
    assert_eq!(c.call(&["UNLINK", &b, &n]), int(1));
    assert_eq!(c.call(&["EXISTS", &a, &b]), int(0));
    assert_eq!(c.call(&["DEL"]), error("ERR wrong number of arguments for 'del' command"));
    assert_eq!(c.call(&["EXISTS"]), error("ERR wrong number of arguments for 'exists' command"));
}

#[test]
fn ttl_pttl_persist_expiretime() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("ttl");
    assert_eq!(c.call(&["TTL", &k]), int(-2));
    assert_eq!(c.call(&["PTTL", &k]), int(-2));
    assert_eq!(c.call(&["EXPIRETIME", &k]), int(-2));
    assert_eq!(c.call(&["PEXPIRETIME", &k]), int(-2));
    assert_eq!(c.call(&["PERSIST", &k]), int(0));
    assert_eq!(c.call(&["SET", &k, "v"]), OK);
    assert_eq!(c.call(&["TTL", &k]), int(-1));
    assert_eq!(c.call(&["PTTL", &k]), int(-1));
    assert_eq!(c.call(&["EXPIRETIME", &k]), int(-1));
    assert_eq!(c.call(&["PERSIST", &k]), int(0));
    assert_eq!(c.call(&["EXPIRE", &k, "100"]), int(1));
    // Exactly 100 000 ms less the time since (never more: issue 18).
    let pttl = as_int(&c.call(&["PTTL", &k]));
    assert!((99_000..=100_000).contains(&pttl), "PTTL {pttl}");
    assert_eq!(c.call(&["PERSIST", &k]), int(1));
    assert_eq!(c.call(&["TTL", &k]), int(-1));
    assert_eq!(c.call(&["GET", &k]), bulk("v"), "PERSIST keeps the value");
    assert_eq!(c.call(&["EXPIREAT", &k, "4000000000"]), int(1));
    assert_eq!(c.call(&["EXPIRETIME", &k]), int(4_000_000_000));
    assert_eq!(c.call(&["PEXPIRETIME", &k]), int(4_000_000_000_000));
    assert_eq!(c.call(&["PEXPIREAT", &k, "4000000001000"]), int(1));
    assert_eq!(c.call(&["EXPIRETIME", &k]), int(4_000_000_001));
}

#[test]
fn expire_options() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("opts");
    assert_eq!(c.call(&["EXPIRE", &k, "100"]), int(0), "no key");
    assert_eq!(c.call(&["SET", &k, "v"]), OK);
    assert_eq!(c.call(&["EXPIRE", &k, "100", "XX"]), int(0), "XX: no TTL yet");
    assert_eq!(c.call(&["EXPIRE", &k, "100", "GT"]), int(0), "GT: no TTL is infinite");
    assert_eq!(c.call(&["EXPIRE", &k, "1000", "LT"]), int(1), "LT: no TTL is infinite");
    assert_eq!(c.call(&["EXPIRE", &k, "100", "NX"]), int(0), "NX: has a TTL");
    assert_eq!(c.call(&["EXPIRE", &k, "100", "xx"]), int(1));
    assert_eq!(c.call(&["EXPIRE", &k, "50", "GT"]), int(0));
    assert_eq!(c.call(&["EXPIRE", &k, "200", "gt"]), int(1));
    assert_eq!(c.call(&["EXPIRE", &k, "500", "LT"]), int(0));
    assert_eq!(c.call(&["EXPIRE", &k, "50", "LT"]), int(1));
    assert_eq!(c.call(&["EXPIRE", &k, "100", "XX", "GT"]), int(1));
    let ttl = as_int(&c.call(&["TTL", &k]));
    assert!((99..=100).contains(&ttl), "TTL {ttl}");
    let nx = error("ERR NX and XX, GT or LT options at the same time are not compatible");
    assert_eq!(c.call(&["EXPIRE", &k, "50", "NX", "XX"]), nx);
    assert_eq!(c.call(&["EXPIRE", &k, "50", "NX", "GT"]), nx);
    assert_eq!(c.call(&["PEXPIRE", &k, "50", "NX", "LT"]), nx);
    assert_eq!(
        c.call(&["EXPIRE", &k, "50", "GT", "LT"]),
        error("ERR GT and LT options at the same time are not compatible")
    );
    assert_eq!(c.call(&["EXPIRE", &k, "50", "foo"]), error("ERR Unsupported option foo"));
    // Options are checked before the number.
    assert_eq!(c.call(&["EXPIRE", &k, "x", "foo"]), error("ERR Unsupported option foo"));
    assert_eq!(c.call(&["EXPIRE", &k, "x"]), error("ERR value is not an integer or out of range"));
    assert_eq!(c.call(&["EXPIRE", &k, "9223372036854775807"]), error("ERR invalid expire time in 'expire' command"));
    assert_eq!(
        c.call(&["EXPIREAT", &k, "-9223372036854775808"]),
        error("ERR invalid expire time in 'expireat' command")
    );
    assert_eq!(c.call(&["PEXPIRE", &k, "9223372036854775807"]), error("ERR invalid expire time in 'pexpire' command"));
    assert_eq!(c.call(&["EXPIRE", &k]), error("ERR wrong number of arguments for 'expire' command"));
    assert_eq!(c.call(&["EXISTS", &k]), int(1), "no error changed the key");
}

#[test]
fn expire_in_the_past_deletes() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("past");
    for (cmd, t) in [("EXPIRE", "0"), ("EXPIRE", "-5"), ("PEXPIRE", "-1"), ("EXPIREAT", "1"), ("PEXPIREAT", "1000")] {
        assert_eq!(c.call(&["SET", &k, "v"]), OK);
        assert_eq!(c.call(&[cmd, &k, t]), int(1), "{cmd} {t}");
        assert_eq!(c.call(&["EXISTS", &k]), int(0), "{cmd} {t}");
        assert_eq!(c.call(&["TTL", &k]), int(-2));
    }
}

#[test]
fn keys_expire_for_real() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("real");
    assert_eq!(c.call(&["SET", &k, "v", "PX", "100"]), OK);
    assert_eq!(c.call(&["SET", &format!("{k}2"), "v"]), OK);
    assert_eq!(c.call(&["PEXPIRE", &format!("{k}2"), "100"]), int(1));
    // Redis: gone after 100 ms; Amalgam: after at most 1.1 s.
    std::thread::sleep(std::time::Duration::from_millis(1300));
    assert_eq!(c.call(&["GET", &k]), NULL2);
    assert_eq!(c.call(&["EXISTS", &format!("{k}2")]), int(0));
}

#[test]
fn keys_and_scan_of_one_key() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("literal");
    assert_eq!(c.call(&["KEYS", &k]), "*0\r\n");
    assert_eq!(c.call(&["SET", &k, "v"]), OK);
    assert_eq!(c.call(&["KEYS", &k]), format!("*1\r\n{}", bulk(&k)));
    assert_eq!(c.call(&["SCAN", "0", "MATCH", &k, "COUNT", "1000000"]), format!("*2\r\n$1\r\n0\r\n*1\r\n{}", bulk(&k)));
    assert_eq!(c.call(&["SCAN", "x"]), error("ERR invalid cursor"));
    // The cursor is read as C's strtoul reads it: a sign is accepted,
    // and the empty string is cursor 0; a leading space or a trailing
    // non-digit is not.
    let whole = format!("*2\r\n$1\r\n0\r\n*1\r\n{}", bulk(&k));
    assert_eq!(c.call(&["SCAN", "+0", "MATCH", &k, "COUNT", "1000000"]), whole);
    assert_eq!(c.call(&["SCAN", "", "MATCH", &k, "COUNT", "1000000"]), whole);
    assert!(c.call(&["SCAN", "-1", "MATCH", &k]).starts_with("*2\r\n$"), "-1 is a cursor (2^64-1)");
    assert_eq!(c.call(&["SCAN", " 0"]), error("ERR invalid cursor"));
    assert_eq!(c.call(&["SCAN", "0x"]), error("ERR invalid cursor"));
    assert_eq!(c.call(&["SCAN", "-"]), error("ERR invalid cursor"));
    assert_eq!(c.call(&["SCAN", "0", "COUNT", "0"]), error("ERR syntax error"));
    assert_eq!(c.call(&["SCAN", "0", "COUNT", "x"]), error("ERR value is not an integer or out of range"));
    assert_eq!(c.call(&["SCAN", "0", "bogus"]), error("ERR syntax error"));
    assert_eq!(c.call(&["SCAN", "0", "MATCH"]), error("ERR syntax error"));
}

#[test]
fn keys_and_scan_iterate() {
    // Keys under a prefix of this test's own, so it holds against a shared
    // redis-server too.
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let prefix = key("it");
    let mut want: Vec<String> = (0..300).map(|i| format!("{prefix}:{i}")).collect();
    for k in &want {
        assert_eq!(c.call(&["SET", k, "v"]), OK);
    }
    let other = format!("{prefix}-other");
    assert_eq!(c.call(&["SET", &other, "v"]), OK);
    want.sort();
    let pattern = format!("{prefix}:*");
    // KEYS with a pattern: every match once, nothing else.
    let mut got = bulks(&c.call(&["KEYS", &pattern]));
    got.sort();
    assert_eq!(got, want);
    assert_eq!(bulks(&c.call(&["KEYS", &format!("{prefix}-oth?r")])), vec![other.clone()]);
    assert_eq!(c.call(&["KEYS", &format!("{prefix}:none:*")]), "*0\r\n");
    // SCAN: a full iteration returns every key at least once.
    let mut seen = std::collections::BTreeSet::new();
    let mut cursor = "0".to_string();
    for _ in 0..1_000_000 {
        let (next, keys) = scan_reply(&c.call(&["SCAN", &cursor, "MATCH", &pattern, "COUNT", "7"]));
        seen.extend(keys);
        cursor = next;
        if cursor == "0" {
            break;
        }
    }
    assert_eq!(cursor, "0", "the iteration ended");
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), want);
    // TYPE filters: every key here is a string.
    let (_, none) = scan_reply(&c.call(&["SCAN", "0", "MATCH", &pattern, "TYPE", "hash", "COUNT", "1000"]));
    assert!(none.is_empty());
}

/// The bulk strings of a flat array reply.
fn bulks(r: &str) -> Vec<String> {
    let mut lines = r.split("\r\n");
    let n: usize = lines.next().and_then(|h| h.strip_prefix('*')).and_then(|n| n.parse().ok()).expect("array");
    (0..n)
        .map(|_| {
            let _len = lines.next().expect("bulk header");
            lines.next().expect("bulk").to_string()
        })
        .collect()
}

/// SCAN's reply: the next cursor and the keys.
fn scan_reply(r: &str) -> (String, Vec<String>) {
    let rest = r.strip_prefix("*2\r\n").expect("a two-element reply");
    let mut lines = rest.splitn(3, "\r\n");
    let _ = lines.next();
    let cursor = lines.next().expect("cursor").to_string();
    (cursor, bulks(lines.next().expect("keys")))
}

#[test]
fn dbsize_and_flushes() {
    let Some(server) = resp_private(&[]) else { return };
    let mut c = Resp::new(&server);
    assert_eq!(c.call(&["DBSIZE"]), int(0));
    assert_eq!(c.call(&["MSET", "a", "1", "b", "2", "c", "3"]), OK);
    assert_eq!(c.call(&["DBSIZE"]), int(3));
    assert_eq!(c.call(&["FLUSHDB"]), OK);
    assert_eq!(c.call(&["MGET", "a", "b"]), format!("*2\r\n{NULL2}{NULL2}"));
    assert_eq!(c.call(&["SET", "a", "1"]), OK);
    assert_eq!(c.call(&["FLUSHALL", "ASYNC"]), OK);
    assert_eq!(c.call(&["EXISTS", "a"]), int(0));
    assert_eq!(c.call(&["FLUSHALL", "sync"]), OK);
    assert_eq!(c.call(&["FLUSHALL", "foo"]), error("ERR syntax error"));
    assert_eq!(c.call(&["FLUSHDB", "sync", "async"]), error("ERR syntax error"));
}
