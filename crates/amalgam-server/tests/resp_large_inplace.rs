//! Large SET values received in place (issue 18 item 5, server
//! `inplace.rs`): a value of a megabyte or more goes straight from the
//! socket into its item and is published only when whole, while the
//! worker serves its other connections. The replies are Redis's: these
//! pass against redis-server too (AMALGAM_TEST_RESP_ADDR), except the
//! memory accounting, which reads amalgam's memcached-port `stats`.

mod common;

use common::resp::*;
use common::*;
use std::io::Write;
use std::time::Duration;

/// A value of `len` bytes that is not one byte repeated.
fn value(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3] ^ seed).collect()
}

/// Long enough to be received in place (`IN_PLACE_VALUE_BYTES_MIN` is
/// 1 MiB), small enough for the harness's budget.
const LEN: usize = 3 << 20;

/// A SET of `v` with `options`, split where the value is half in: the
/// first part and the rest.
fn split_set(key: &str, v: &[u8], options: &[&str]) -> (Vec<u8>, Vec<u8>) {
    let mut args: Vec<&[u8]> = vec![b"SET", key.as_bytes(), v];
    args.extend(options.iter().map(|o| o.as_bytes()));
    let mut req = encode(&args);
    let head = format!("*{}\r\n$3\r\nSET\r\n${}\r\n{key}\r\n${}\r\n", args.len(), key.len(), v.len());
    assert!(req.starts_with(head.as_bytes()));
    let rest = req.split_off(head.len() + v.len() / 2);
    (req, rest)
}

fn strlen(c: &mut Resp, key: &str) -> String {
    c.call(&["STRLEN", key])
}

#[test]
fn a_large_set_arriving_in_pieces_is_published_whole_while_others_are_served() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("inplace-pieces");
    assert_eq!(c.call(&["SET", &k, "old"]), "+OK\r\n");
    let v = value(LEN, 1);
    let (first, rest) = split_set(&k, &v, &["GET"]);
    let mut slow = Resp::new(&server);
    slow.s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    slow.send_raw(&first);
    // Half the value is in: the other connection is served, and sees the
    // key as it was (nothing is published before the value is whole).
    for _ in 0..3 {
        assert_eq!(c.call(&["PING"]), "+PONG\r\n");
        assert_eq!(c.call(&["GET", &k]), bulk("old"));
    }
    // The rest, in two writes (the value's end, then its CRLF and GET).
    let (end, tail) = rest.split_at(rest.len() - b"\r\n$3\r\nGET\r\n".len());
    slow.s.write_all(end).unwrap();
    assert_eq!(c.call(&["GET", &k]), bulk("old"));
    slow.s.write_all(tail).unwrap();
    assert_eq!(slow.reply(), bulk("old"), "SET … GET answers the old value");
    assert_eq!(strlen(&mut c, &k), int(LEN as i64));
    c.s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    c.send_raw(&encode(&[b"GET", k.as_bytes()]));
    let got = c.reply_bytes();
    let head = format!("${LEN}\r\n");
    assert!(got.starts_with(head.as_bytes()) && got[head.len()..head.len() + LEN] == v[..], "the value, byte for byte");
    assert_eq!(c.call(&["TTL", &k]), int(-1));
    assert_eq!(c.call(&["DEL", &k]), int(1));
}

#[test]
fn a_large_set_keeps_every_option_of_set() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    c.s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let k = key("inplace-options");
    let set = |c: &mut Resp, seed: u8, options: &[&str]| {
        let v = value(LEN, seed);
        let (first, rest) = split_set(&k, &v, options);
        c.send_raw(&first);
        c.send_raw(&rest);
        c.reply()
    };
    // NX on an absent key stores; again, it does not.
    assert_eq!(set(&mut c, 1, &["NX"]), "+OK\r\n");
    assert_eq!(set(&mut c, 2, &["NX"]), nil());
    let (got, want) = first_bytes(&mut c, &k, &value(LEN, 1));
    assert_eq!(got, want);
    // XX with an expiry.
    assert_eq!(set(&mut c, 3, &["XX", "EX", "100"]), "+OK\r\n");
    let ttl: i64 = c.call(&["TTL", &k])[1..].trim().parse().unwrap();
    assert!((99..=100).contains(&ttl), "TTL {ttl}");
    // KEEPTTL keeps it.
    assert_eq!(set(&mut c, 4, &["KEEPTTL"]), "+OK\r\n");
    let ttl: i64 = c.call(&["TTL", &k])[1..].trim().parse().unwrap();
    assert!((98..=100).contains(&ttl), "TTL after KEEPTTL {ttl}");
    let (got, want) = first_bytes(&mut c, &k, &value(LEN, 4));
    assert_eq!(got, want);
    // A syntax error stores nothing.
    assert_eq!(set(&mut c, 5, &["BOGUS"]), error("ERR syntax error"));
    let (got, want) = first_bytes(&mut c, &k, &value(LEN, 4));
    assert_eq!(got, want);
    // An expiry already past removes the key (Redis: OK, then gone).
    assert_eq!(set(&mut c, 6, &["PXAT", "1"]), "+OK\r\n");
    assert_eq!(c.call(&["EXISTS", &k]), int(0));
    // Pipelined behind another command and followed by one.
    let v = value(LEN, 7);
    let before = key("inplace-before");
    let mut req = encode(&[b"SET", before.as_bytes(), b"x"]);
    req.extend_from_slice(&encode(&[b"SET", k.as_bytes(), &v]));
    req.extend_from_slice(&encode(&[b"STRLEN", k.as_bytes()]));
    c.send_raw(&req);
    assert_eq!(c.reply(), "+OK\r\n");
    assert_eq!(c.reply(), "+OK\r\n");
    assert_eq!(c.reply(), int(LEN as i64));
    assert_eq!(c.call(&["DEL", &k, &before]), int(2));
}

/// The reply to `GETRANGE key 0 3`, and the one expected if the key holds
/// `v`, as bytes.
fn first_bytes(c: &mut Resp, key: &str, v: &[u8]) -> (Vec<u8>, Vec<u8>) {
    c.send(&["GETRANGE", key, "0", "3"]);
    let mut want = b"$4\r\n".to_vec();
    want.extend_from_slice(&v[..4]);
    want.extend_from_slice(b"\r\n");
    (c.reply_bytes(), want)
}

/// RESP2's null bulk.
fn nil() -> String {
    "$-1\r\n".to_string()
}

/// A memcached-port `stats` (or `stats slabs`) number of this amalgam.
fn engine_stat(server: &Server, which: &str, name: &str) -> u64 {
    let mut m = server.connect();
    let map = stats_map(&mut m, which);
    num(&map, name)
}

/// Waits (bounded) until `stat` satisfies `ok`; returns its last reading.
fn wait_for(server: &Server, which: &str, name: &str, ok: impl Fn(u64) -> bool) -> u64 {
    let mut last = 0;
    for _ in 0..400 {
        last = engine_stat(server, which, name);
        if ok(last) {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    last
}

/// A client that leaves mid-value: no key, and the memory it was charged
/// from the value's first bytes is given back.
fn leaving_mid_value(server: &Server, which: &str, name: &str) {
    let before = engine_stat(server, which, name);
    let k = key("inplace-leaves");
    let v = value(16 << 20, 9);
    let (first, _) = split_set(&k, &v, &[]);
    let mut slow = Resp::new(server);
    slow.send_raw(&first);
    // Charged while the value arrives, before it is whole.
    let during = wait_for(server, which, name, |b| b >= before + (16 << 20));
    assert!(during >= before + (16 << 20), "{name}: {before} before, {during} with 8 of 16 MiB in");
    let mut c = Resp::new(server);
    assert_eq!(c.call(&["EXISTS", &k]), int(0));
    drop(slow);
    let after = wait_for(server, which, name, |b| b == before);
    assert_eq!(after, before, "{name} back to what it was");
    assert_eq!(c.call(&["EXISTS", &k]), int(0));
    assert_eq!(c.call(&["DBSIZE"]), int(0));
}

#[test]
fn amalgam_frees_a_value_whose_client_leaves_mid_value() {
    // Cache mode: the value is outsized from its first bytes.
    let Some(server) = resp_private(&["-t", "1", "-m", "256"]) else { return };
    leaving_mid_value(&server, "", "outsized_bytes");
    // Store mode: large blocks count in the reservation.
    let Some(server) = resp_private(&["-t", "1", "-m", "256", "--eviction", "none"]) else { return };
    leaving_mid_value(&server, "slabs", "total_malloced");
}

#[test]
fn a_client_that_leaves_mid_value_stores_nothing() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("inplace-gone");
    assert_eq!(c.call(&["SET", &k, "old"]), "+OK\r\n");
    let v = value(LEN, 3);
    let (first, _) = split_set(&k, &v, &[]);
    let mut slow = Resp::new(&server);
    slow.send_raw(&first);
    assert_eq!(c.call(&["GET", &k]), bulk("old"));
    drop(slow);
    // Whenever the server notices, the old value stays.
    for _ in 0..5 {
        assert_eq!(c.call(&["GET", &k]), bulk("old"));
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(c.call(&["DEL", &k]), int(1));
}
