//! Values past memcached's default item size over memcached's protocol
//! (issue 18 item 5): up to `-I`, which memcached allows up to 1 GiB.
//! Every test here passes against memcached 1.6.18 too
//! (AMALGAM_TEST_BIN=/usr/bin/memcached).

mod common;

use common::*;
use std::io::Write;
use std::time::Duration;

/// A value of `len` bytes that is not one byte repeated.
fn value(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3] ^ seed).collect()
}

/// `get k` of a `len`-byte value: the whole reply, compared byte for byte.
fn get_back(s: &mut std::net::TcpStream, k: &str, want: &[u8]) {
    send(s, format!("get {k}\r\n").as_bytes());
    let head = format!("VALUE {k} 0 {}\r\n", want.len());
    let got = read_n(s, head.len() + want.len() + 7);
    assert_eq!(show(&got[..head.len()]), show(head.as_bytes()));
    assert!(got[head.len()..head.len() + want.len()] == *want, "value of {} bytes", want.len());
    assert_eq!(&got[head.len() + want.len()..], b"\r\nEND\r\n");
}

#[test]
fn values_up_to_minus_i_are_stored_and_larger_ones_refused() {
    let Some(server) = Server::with_flags(&["-I", "2m", "-m", "64"]) else { return };
    let mut s = server.connect();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let k = key("large-1m5");
    let v = value(3 << 19, 1);
    send(&mut s, format!("set {k} 0 0 {}\r\n", v.len()).as_bytes());
    send(&mut s, &v);
    assert_eq!(line(&mut s, b"\r\n"), "STORED\r\n");
    get_back(&mut s, &k, &v);
    // Over -I: refused, its data swallowed, the connection goes on.
    let over = value((2 << 20) + 1, 2);
    send(&mut s, format!("set {k}x 0 0 {}\r\n", over.len()).as_bytes());
    send(&mut s, &over);
    assert_eq!(line(&mut s, b"\r\n"), "SERVER_ERROR object too large for cache\r\n");
    // At -I exactly: the item's header and key do not fit either.
    let at = value(2 << 20, 3);
    send(&mut s, format!("set {k}y 0 0 {}\r\n", at.len()).as_bytes());
    send(&mut s, &at);
    assert_eq!(line(&mut s, b"\r\n"), "SERVER_ERROR object too large for cache\r\n");
    get_back(&mut s, &k, &v);
    send(&mut s, format!("delete {k}\r\n").as_bytes());
    assert_eq!(line(&mut s, b""), "DELETED\r\n");
}

#[test]
fn a_large_value_arriving_slowly_does_not_hold_up_other_clients() {
    let Some(server) = Server::with_flags(&["-I", "16m", "-m", "128", "-t", "1"]) else { return };
    let mut slow = server.connect();
    slow.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let k = key("large-slow");
    let v = value(12 << 20, 4);
    send(&mut slow, format!("set {k} 0 0 {}\r\n", v.len()).as_bytes());
    slow.write_all(&v[..8 << 20]).unwrap();
    // One worker: the other client is served on it meanwhile.
    let mut other = server.connect();
    let k2 = key("large-other");
    assert_eq!(line(&mut other, format!("set {k2} 0 0 1\r\nx\r\n").as_bytes()), "STORED\r\n");
    slow.write_all(&v[8 << 20..]).unwrap();
    assert_eq!(line(&mut slow, b"\r\n"), "STORED\r\n");
    get_back(&mut other, &k, &v);
}
