//! One keyspace, two protocols: a key written over RESP is read over
//! memcached's protocol and the other way round, values byte for byte,
//! expiry shared; RESP writes leave memcached's flags 0, in-place RESP
//! changes keep them. Amalgam only (it needs both ports of one server).
mod common;
use common::resp::*;
use common::*;

#[test]
fn values_cross_both_ways() {
    let Some(server) = resp_private(&[]) else { return };
    let mut mc = server.connect();
    let mut r = Resp::new(&server);
    exchange(&mut mc, b"set from_mc 7 0 5\r\nhello\r\n", b"STORED\r\n");
    assert_eq!(r.call(&["GET", "from_mc"]), bulk("hello"));
    assert_eq!(r.call(&["STRLEN", "from_mc"]), int(5));
    // A binary value, CRLF and NUL included, is the same bytes on both.
    let v = b"a\r\nb\0c\xff";
    r.send_raw(&encode(&[b"SET", b"from_resp", v]));
    assert_eq!(r.reply(), OK);
    let mut want = b"VALUE from_resp 0 7\r\n".to_vec();
    want.extend_from_slice(v);
    want.extend_from_slice(b"\r\nEND\r\n");
    exchange(&mut mc, b"get from_resp\r\n", &want);
    // RESP's in-place changes keep memcached's flags; replacing writes zero them.
    assert_eq!(r.call(&["APPEND", "from_mc", "!"]), int(6));
    exchange(&mut mc, b"get from_mc\r\n", b"VALUE from_mc 7 6\r\nhello!\r\nEND\r\n");
    assert_eq!(r.call(&["SETRANGE", "from_mc", "0", "J"]), int(6));
    exchange(&mut mc, b"get from_mc\r\n", b"VALUE from_mc 7 6\r\nJello!\r\nEND\r\n");
    assert_eq!(r.call(&["SET", "from_mc", "x"]), OK);
    exchange(&mut mc, b"get from_mc\r\n", b"VALUE from_mc 0 1\r\nx\r\nEND\r\n");
    // Deletes and flushes are shared.
    assert_eq!(r.call(&["DEL", "from_resp"]), int(1));
    exchange(&mut mc, b"get from_resp\r\n", b"END\r\n");
    exchange(&mut mc, b"delete from_mc\r\n", b"DELETED\r\n");
    assert_eq!(r.call(&["GET", "from_mc"]), NULL2);
    assert_eq!(r.call(&["SET", "f", "1"]), OK);
    exchange(&mut mc, b"flush_all\r\n", b"OK\r\n");
    assert_eq!(r.call(&["EXISTS", "f"]), int(0));
}

#[test]
fn counters_cross_both_ways() {
    let Some(server) = resp_private(&[]) else { return };
    let mut mc = server.connect();
    let mut r = Resp::new(&server);
    exchange(&mut mc, b"set n 3 0 1\r\n5\r\n", b"STORED\r\n");
    assert_eq!(r.call(&["INCRBY", "n", "10"]), int(15));
    exchange(&mut mc, b"incr n 1\r\n", b"16\r\n");
    assert_eq!(r.call(&["GET", "n"]), bulk("16"));
    exchange(&mut mc, b"get n\r\n", b"VALUE n 3 2\r\n16\r\nEND\r\n");
    assert_eq!(r.call(&["INCR", "new"]), int(1));
    exchange(&mut mc, b"get new\r\n", b"VALUE new 0 1\r\n1\r\nEND\r\n");
}

#[test]
fn expiry_is_shared() {
    let Some(server) = resp_private(&[]) else { return };
    let mut mc = server.connect();
    let mut r = Resp::new(&server);
    assert_eq!(r.call(&["SET", "e", "v", "EX", "100"]), OK);
    // memcached's meta get shows the seconds left (whole seconds there;
    // here the millisecond deadline rounded up to its second: 99 to 101).
    let got = String::from_utf8(request(&mut mc, b"mg e t\r\n", b"\r\n")).unwrap();
    let t: i64 = got.trim_end().strip_prefix("HD t").and_then(|t| t.parse().ok()).unwrap_or_else(|| panic!("{got:?}"));
    assert!((99..=101).contains(&t), "{got:?}");
    exchange(&mut mc, b"touch e 0\r\n", b"TOUCHED\r\n");
    assert_eq!(r.call(&["TTL", "e"]), int(-1));
    exchange(&mut mc, b"touch e 1000\r\n", b"TOUCHED\r\n");
    let ttl = as_int(&r.call(&["TTL", "e"]));
    assert!((999..=1000).contains(&ttl), "{ttl}");
    assert_eq!(r.call(&["PERSIST", "e"]), int(1));
    exchange(&mut mc, b"mg e t\r\n", b"HD t-1\r\n");
    assert_eq!(r.call(&["EXPIREAT", "e", "1"]), int(1));
    exchange(&mut mc, b"get e\r\n", b"END\r\n");
}

#[test]
fn stats_count_both_protocols() {
    let Some(server) = resp_private(&[]) else { return };
    let mut mc = server.connect();
    let mut r = Resp::new(&server);
    assert_eq!(r.call(&["SET", "a", "1"]), OK);
    assert_eq!(r.call(&["MGET", "a", "b"]), format!("*2\r\n{}{NULL2}", bulk("1")));
    let s = stats_map(&mut mc, "");
    assert_eq!((num(&s, "cmd_set"), num(&s, "cmd_get"), num(&s, "get_hits"), num(&s, "get_misses")), (1, 2, 1, 1));
    let info = r.call(&["INFO", "stats"]);
    assert!(info.contains("\r\nkeyspace_hits:1\r\nkeyspace_misses:1\r\n"), "{info}");
}

/// The memcached port serves database 0 (issue 35 §1): a key written in
/// another database is not seen there, and a memcached key beginning
/// with byte 0xFF (the engine's namespace escape) stays database 0's
/// own (text and meta protocols here; the binary protocol escapes its keys
/// the same way, binary.rs): it never reads or
/// writes another database's key.
#[test]
fn memcached_serves_database_0_only() {
    let Some(server) = resp_private(&[]) else { return };
    let mut mc = server.connect();
    let mut r = Resp::new(&server);
    assert_eq!(r.call(&["SELECT", "3"]), OK);
    assert_eq!(r.call(&["SET", "a", "in3"]), OK);
    exchange(&mut mc, b"get a\r\n", b"END\r\n");
    // \xff\x03a is what database 3's `a` is stored as: to memcached it is
    // a key of its own.
    exchange(&mut mc, b"get \xff\x03a\r\n", b"END\r\n");
    exchange(&mut mc, b"set \xff\x03a 0 0 4\r\nmine\r\n", b"STORED\r\n");
    exchange(&mut mc, b"get \xff\x03a\r\n", b"VALUE \xff\x03a 0 4\r\nmine\r\nEND\r\n");
    exchange(&mut mc, b"mg \xff\x03a v k\r\n", b"VA 4 k\xff\x03a\r\nmine\r\n");
    exchange(&mut mc, b"incr \xff\x03a 1\r\n", b"CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
    assert_eq!(r.call(&["GET", "a"]), bulk("in3"), "database 3's key untouched");
    assert_eq!(r.call(&["DBSIZE"]), int(1));
    // Database 0 over RESP sees the memcached key under its own name.
    assert_eq!(r.call(&["SELECT", "0"]), OK);
    r.send_raw(&encode(&[&b"GET"[..], b"\xff\x03a"]));
    assert_eq!(r.reply_bytes(), b"$4\r\nmine\r\n");
    r.send(&["KEYS", "*"]);
    assert_eq!(r.reply_bytes(), b"*1\r\n$3\r\n\xff\x03a\r\n");
    exchange(&mut mc, b"delete \xff\x03a\r\n", b"DELETED\r\n");
    assert_eq!(r.call(&["DBSIZE"]), int(0));
    assert_eq!(r.call(&["SELECT", "3"]), OK);
    assert_eq!(r.call(&["GET", "a"]), bulk("in3"));
}
