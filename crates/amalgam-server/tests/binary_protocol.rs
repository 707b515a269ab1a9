//! memcached's binary protocol, black-box, packet by packet: every opcode,
//! the quiet variants, every status and error body, the malformed headers
//! that close a connection. Runs against amalgam by default and against any
//! server named by AMALGAM_TEST_BIN / AMALGAM_TEST_ADDR (see
//! `common/mod.rs`); CI also runs it against Debian's memcached 1.6.18, so
//! every expectation here is memcached's own.
mod common;
use amalgam_protocol::binary::{opcode as op, request, status};
use common::{closed, exchange, key, read_n, read_to_close, send, show, silent, Server};
use std::net::TcpStream;

/// One response packet.
#[derive(Debug, PartialEq, Eq)]
struct Packet {
    magic: u8,
    opcode: u8,
    status: u16,
    opaque: u32,
    cas: u64,
    extras: Vec<u8>,
    key: Vec<u8>,
    value: Vec<u8>,
}

/// Reads one response packet; panics if the server closes or stalls.
#[track_caller]
fn read_packet(c: &mut TcpStream) -> Packet {
    let h = read_n(c, 24);
    assert_eq!(h.len(), 24, "a response header, got {}", show(&h));
    let key_len = u16::from_be_bytes([h[2], h[3]]) as usize;
    let extras_len = h[4] as usize;
    let body_len = u32::from_be_bytes([h[8], h[9], h[10], h[11]]) as usize;
    let body = read_n(c, body_len);
    assert_eq!(body.len(), body_len, "a body of {body_len} bytes");
    assert_eq!(h[5], 0, "data type is raw bytes");
    Packet {
        magic: h[0],
        opcode: h[1],
        status: u16::from_be_bytes([h[6], h[7]]),
        opaque: u32::from_be_bytes([h[12], h[13], h[14], h[15]]),
        cas: u64::from_be_bytes(h[16..24].try_into().unwrap()),
        extras: body[..extras_len].to_vec(),
        key: body[extras_len..extras_len + key_len].to_vec(),
        value: body[extras_len + key_len..].to_vec(),
    }
}

/// Sends one request and reads one response.
#[track_caller]
fn call(c: &mut TcpStream, packet: &[u8]) -> Packet {
    send(c, packet);
    read_packet(c)
}

/// The extras of set/add/replace.
fn store_extras(flags: u32, exptime: u32) -> Vec<u8> {
    [flags.to_be_bytes(), exptime.to_be_bytes()].concat()
}

/// The extras of incr/decr.
fn arith_extras(delta: u64, initial: u64, exptime: u32) -> Vec<u8> {
    [&delta.to_be_bytes()[..], &initial.to_be_bytes(), &exptime.to_be_bytes()].concat()
}

fn set(c: &mut TcpStream, key: &[u8], value: &[u8], flags: u32) -> u64 {
    let p = call(c, &request(op::SET, key, &store_extras(flags, 0), value, 1, 0));
    assert_eq!((p.status, p.value.as_slice()), (status::SUCCESS, &b""[..]));
    assert_ne!(p.cas, 0, "a store answers its CAS");
    p.cas
}

/// Asserts an error response: status, memcached's text, CAS 0, the opcode
/// and opaque echoed.
#[track_caller]
fn assert_error(p: &Packet, opcode: u8, opaque: u32, st: u16, text: &str) {
    assert_eq!(p.magic, 0x81);
    assert_eq!((p.opcode, p.opaque, p.status), (opcode, opaque, st), "{p:?}");
    assert_eq!(String::from_utf8_lossy(&p.value), text);
    assert_eq!((p.cas, p.extras.len(), p.key.len()), (0, 0, 0));
}

/// A success without body, extras or key.
#[track_caller]
fn assert_ok(p: &Packet, opcode: u8, opaque: u32) {
    assert_eq!((p.magic, p.opcode, p.opaque, p.status), (0x81, opcode, opaque, status::SUCCESS), "{p:?}");
    assert!(p.extras.is_empty() && p.key.is_empty() && p.value.is_empty(), "{p:?}");
}

fn noop(opaque: u32) -> Vec<u8> {
    request(op::NOOP, b"", &[], b"", opaque, 0)
}

#[test]
fn set_get_getk_and_misses() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    let a = key("bin_get").into_bytes();
    let cas = set(&mut c, &a, b"hello", 0xdead_beef);

    let p = call(&mut c, &request(op::GET, &a, &[], b"", 42, 0));
    assert_eq!((p.opcode, p.status, p.opaque, p.cas), (op::GET, status::SUCCESS, 42, cas));
    assert_eq!(p.extras, 0xdead_beefu32.to_be_bytes());
    assert_eq!((p.key.as_slice(), p.value.as_slice()), (&b""[..], &b"hello"[..]));

    let p = call(&mut c, &request(op::GETK, &a, &[], b"", 43, 0));
    assert_eq!((p.opcode, p.status, p.cas), (op::GETK, status::SUCCESS, cas));
    assert_eq!((p.key.as_slice(), p.value.as_slice()), (a.as_slice(), &b"hello"[..]));

    let missing = key("bin_get_missing").into_bytes();
    let p = call(&mut c, &request(op::GET, &missing, &[], b"", 44, 0));
    assert_error(&p, op::GET, 44, status::KEY_ENOENT, "Not found");
    // getk's miss carries the key, and no text.
    let p = call(&mut c, &request(op::GETK, &missing, &[], b"", 45, 0));
    assert_eq!((p.opcode, p.status, p.opaque, p.cas), (op::GETK, status::KEY_ENOENT, 45, 0));
    assert_eq!((p.key.as_slice(), p.value.as_slice()), (missing.as_slice(), &b""[..]));

    // An empty value is a value; flags are 32 bits.
    set(&mut c, &a, b"", u32::MAX);
    let p = call(&mut c, &request(op::GET, &a, &[], b"", 46, 0));
    assert_eq!((p.status, p.extras.as_slice(), p.value.as_slice()), (status::SUCCESS, &[0xff; 4][..], &b""[..]));
}

#[test]
fn quiet_gets_batch_until_noop() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    let keys: Vec<Vec<u8>> = (0..50).map(|i| key(&format!("bin_mget{i}")).into_bytes()).collect();
    for (i, k) in keys.iter().enumerate().filter(|(i, _)| i % 2 == 0) {
        set(&mut c, k, format!("v{i}").as_bytes(), i as u32);
    }
    // A multi-get as clients send it: getkq/getq for every key, then noop.
    let mut req = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        let opc = if i % 4 < 2 { op::GETKQ } else { op::GETQ };
        req.extend_from_slice(&request(opc, k, &[], b"", i as u32, 0));
    }
    req.extend_from_slice(&noop(999));
    send(&mut c, &req);
    for (i, k) in keys.iter().enumerate().filter(|(i, _)| i % 2 == 0) {
        let p = read_packet(&mut c);
        let opc = if i % 4 < 2 { op::GETKQ } else { op::GETQ };
        assert_eq!((p.opcode, p.status, p.opaque), (opc, status::SUCCESS, i as u32));
        assert_eq!(p.extras, (i as u32).to_be_bytes());
        let want_key: &[u8] = if opc == op::GETKQ { k } else { b"" };
        assert_eq!((p.key.as_slice(), p.value.as_slice()), (want_key, format!("v{i}").as_bytes()));
    }
    // Misses were silent: the noop is next.
    assert_ok(&read_packet(&mut c), op::NOOP, 999);
    assert!(silent(&mut c));
}

#[test]
fn add_replace_and_cas() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    let a = key("bin_cas").into_bytes();
    let ex = store_extras(3, 0);

    let p = call(&mut c, &request(op::REPLACE, &a, &ex, b"r", 1, 0));
    assert_error(&p, op::REPLACE, 1, status::KEY_ENOENT, "Not found");
    let p = call(&mut c, &request(op::ADD, &a, &ex, b"first", 2, 0));
    assert_eq!(p.status, status::SUCCESS);
    let cas = p.cas;
    assert_ne!(cas, 0);
    let p = call(&mut c, &request(op::ADD, &a, &ex, b"again", 3, 0));
    assert_error(&p, op::ADD, 3, status::KEY_EEXISTS, "Data exists for key.");
    // A set with a CAS is a compare-and-swap.
    let p = call(&mut c, &request(op::SET, &a, &ex, b"stale", 4, cas + 1000));
    assert_error(&p, op::SET, 4, status::KEY_EEXISTS, "Data exists for key.");
    let p = call(&mut c, &request(op::SET, &a, &ex, b"swapped", 5, cas));
    assert_eq!((p.status, p.opaque), (status::SUCCESS, 5));
    assert!(p.cas != 0 && p.cas != cas);
    let p = call(&mut c, &request(op::REPLACE, &a, &ex, b"replaced", 6, 0));
    assert_eq!(p.status, status::SUCCESS);
    let p = call(&mut c, &request(op::GET, &a, &[], b"", 7, 0));
    assert_eq!(p.value, b"replaced");
    // A CAS on a missing key: Not found, for set and add alike.
    let missing = key("bin_cas_missing").into_bytes();
    let p = call(&mut c, &request(op::SET, &missing, &ex, b"x", 8, 5));
    assert_error(&p, op::SET, 8, status::KEY_ENOENT, "Not found");
    let p = call(&mut c, &request(op::ADD, &missing, &ex, b"x", 9, 5));
    assert_error(&p, op::ADD, 9, status::KEY_ENOENT, "Not found");
}

#[test]
fn quiet_stores_answer_only_errors() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    let a = key("bin_q").into_bytes();
    let b = key("bin_q_missing").into_bytes();
    let ex = store_extras(0, 0);
    let mut req = request(op::SETQ, &a, &ex, b"1", 1, 0);
    req.extend_from_slice(&request(op::ADDQ, &a, &ex, b"2", 2, 0));
    req.extend_from_slice(&request(op::REPLACEQ, &b, &ex, b"3", 3, 0));
    req.extend_from_slice(&request(op::APPENDQ, &a, &[], b"4", 4, 0));
    req.extend_from_slice(&request(op::PREPENDQ, &b, &[], b"5", 5, 0));
    req.extend_from_slice(&request(op::DELETEQ, &b, &[], b"", 6, 0));
    req.extend_from_slice(&request(op::INCREMENTQ, &a, &arith_extras(10, 0, 0), b"", 7, 0));
    req.extend_from_slice(&noop(8));
    send(&mut c, &req);
    assert_error(&read_packet(&mut c), op::ADDQ, 2, status::KEY_EEXISTS, "Data exists for key.");
    assert_error(&read_packet(&mut c), op::REPLACEQ, 3, status::KEY_ENOENT, "Not found");
    assert_error(&read_packet(&mut c), op::PREPENDQ, 5, status::NOT_STORED, "Not stored.");
    assert_error(&read_packet(&mut c), op::DELETEQ, 6, status::KEY_ENOENT, "Not found");
    assert_ok(&read_packet(&mut c), op::NOOP, 8);
    // "1" appended "4" is 14; plus 10 is 24.
    let p = call(&mut c, &request(op::GET, &a, &[], b"", 9, 0));
    assert_eq!(p.value, b"24");
    let mut req = request(op::DELETEQ, &a, &[], b"", 10, 0);
    req.extend_from_slice(&noop(11));
    send(&mut c, &req);
    assert_ok(&read_packet(&mut c), op::NOOP, 11);
    let p = call(&mut c, &request(op::GET, &a, &[], b"", 12, 0));
    assert_error(&p, op::GET, 12, status::KEY_ENOENT, "Not found");
}

#[test]
fn delete_with_and_without_cas() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    let a = key("bin_del").into_bytes();
    let cas = set(&mut c, &a, b"v", 0);
    let p = call(&mut c, &request(op::DELETE, &a, &[], b"", 1, cas + 1000));
    assert_error(&p, op::DELETE, 1, status::KEY_EEXISTS, "Data exists for key.");
    let p = call(&mut c, &request(op::DELETE, &a, &[], b"", 2, cas));
    assert_ok(&p, op::DELETE, 2);
    assert_eq!(p.cas, 0);
    let p = call(&mut c, &request(op::DELETE, &a, &[], b"", 3, 0));
    assert_error(&p, op::DELETE, 3, status::KEY_ENOENT, "Not found");
    set(&mut c, &a, b"v", 0);
    assert_ok(&call(&mut c, &request(op::DELETE, &a, &[], b"", 4, 0)), op::DELETE, 4);
}

#[test]
fn incr_decr_initial_and_expiration() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    let n = key("bin_incr").into_bytes();
    // 0xffffffff: a missing counter is not created.
    let p = call(&mut c, &request(op::INCREMENT, &n, &arith_extras(1, 5, 0xffff_ffff), b"", 1, 0));
    assert_error(&p, op::INCREMENT, 1, status::KEY_ENOENT, "Not found");
    // Otherwise it is created with the initial value (the delta unused).
    let p = call(&mut c, &request(op::INCREMENT, &n, &arith_extras(1, 5, 0), b"", 2, 0));
    assert_eq!((p.opcode, p.status, p.opaque), (op::INCREMENT, status::SUCCESS, 2));
    assert_eq!((p.extras.len(), p.key.len(), p.value.as_slice()), (0, 0, &5u64.to_be_bytes()[..]));
    let created = p.cas;
    assert_ne!(created, 0);
    let p = call(&mut c, &request(op::GET, &n, &[], b"", 3, 0));
    assert_eq!((p.value.as_slice(), p.extras.as_slice(), p.cas), (&b"5"[..], &[0u8; 4][..], created));
    let p = call(&mut c, &request(op::INCREMENT, &n, &arith_extras(10, 0, 0), b"", 4, 0));
    assert_eq!(p.value, 15u64.to_be_bytes());
    assert!(p.cas != 0 && p.cas != created);
    // decr stops at 0 and leaves the number padded to its old length.
    let p = call(&mut c, &request(op::DECREMENT, &n, &arith_extras(100, 0, 0), b"", 5, 0));
    assert_eq!((p.opcode, p.status, p.value.as_slice()), (op::DECREMENT, status::SUCCESS, &0u64.to_be_bytes()[..]));
    let p = call(&mut c, &request(op::GET, &n, &[], b"", 6, 0));
    assert_eq!(p.value, b"0 ");
    // incr wraps at 2^64.
    set(&mut c, &n, b"18446744073709551615", 0);
    let p = call(&mut c, &request(op::INCREMENT, &n, &arith_extras(2, 0, 0), b"", 7, 0));
    assert_eq!(p.value, 1u64.to_be_bytes());
    // A CAS that does not match.
    let p = call(&mut c, &request(op::INCREMENT, &n, &arith_extras(1, 0, 0), b"", 8, p.cas + 1000));
    assert_error(&p, op::INCREMENT, 8, status::KEY_EEXISTS, "Data exists for key.");
    // A value that is not a number.
    set(&mut c, &n, b"abc", 0);
    let p = call(&mut c, &request(op::DECREMENT, &n, &arith_extras(1, 0, 0), b"", 9, 0));
    assert_error(&p, op::DECREMENT, 9, status::DELTA_BADVAL, "Non-numeric server-side value for incr or decr");
    // A created counter takes the request's expiration: an absolute time
    // in the past (over 30 days is absolute) is gone at once.
    let e = key("bin_incr_exp").into_bytes();
    let p = call(&mut c, &request(op::INCREMENT, &e, &arith_extras(1, 7, 30 * 86400 + 1), b"", 10, 0));
    assert_eq!((p.status, p.value.as_slice()), (status::SUCCESS, &7u64.to_be_bytes()[..]));
    let p = call(&mut c, &request(op::GET, &e, &[], b"", 11, 0));
    assert_error(&p, op::GET, 11, status::KEY_ENOENT, "Not found");
}

#[test]
fn append_prepend() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    let a = key("bin_cat").into_bytes();
    let p = call(&mut c, &request(op::APPEND, &a, &[], b"x", 1, 0));
    assert_error(&p, op::APPEND, 1, status::NOT_STORED, "Not stored.");
    set(&mut c, &a, b"mid", 9);
    let p = call(&mut c, &request(op::APPEND, &a, &[], b">", 2, 0));
    assert_eq!((p.status, p.opaque), (status::SUCCESS, 2));
    let cas = p.cas;
    assert_ne!(cas, 0);
    let p = call(&mut c, &request(op::PREPEND, &a, &[], b"<", 3, cas + 1000));
    assert_error(&p, op::PREPEND, 3, status::KEY_EEXISTS, "Data exists for key.");
    let p = call(&mut c, &request(op::PREPEND, &a, &[], b"<", 4, cas));
    assert_eq!(p.status, status::SUCCESS);
    let p = call(&mut c, &request(op::GET, &a, &[], b"", 5, 0));
    assert_eq!((p.value.as_slice(), p.extras.as_slice()), (&b"<mid>"[..], &9u32.to_be_bytes()[..]));
}

#[test]
fn touch_and_gat() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    let a = key("bin_touch").into_bytes();
    let missing = key("bin_touch_missing").into_bytes();
    let cas = set(&mut c, &a, b"val", 17);
    let exp = 1000u32.to_be_bytes();
    // touch: the flags, no value, the item's CAS.
    let p = call(&mut c, &request(op::TOUCH, &a, &exp, b"", 1, 0));
    assert_eq!((p.opcode, p.status, p.opaque, p.cas), (op::TOUCH, status::SUCCESS, 1, cas));
    assert_eq!((p.extras.as_slice(), p.key.len(), p.value.len()), (&17u32.to_be_bytes()[..], 0, 0));
    let p = call(&mut c, &request(op::TOUCH, &missing, &exp, b"", 2, 0));
    assert_error(&p, op::TOUCH, 2, status::KEY_ENOENT, "Not found");
    let p = call(&mut c, &request(op::GAT, &a, &exp, b"", 3, 0));
    assert_eq!((p.status, p.cas, p.key.len(), p.value.as_slice()), (status::SUCCESS, cas, 0, &b"val"[..]));
    let p = call(&mut c, &request(op::GATK, &a, &exp, b"", 4, 0));
    assert_eq!((p.status, p.key.as_slice(), p.value.as_slice()), (status::SUCCESS, a.as_slice(), &b"val"[..]));
    let p = call(&mut c, &request(op::GAT, &missing, &exp, b"", 5, 0));
    assert_error(&p, op::GAT, 5, status::KEY_ENOENT, "Not found");
    let p = call(&mut c, &request(op::GATK, &missing, &exp, b"", 6, 0));
    assert_eq!((p.status, p.key.as_slice(), p.value.len()), (status::KEY_ENOENT, missing.as_slice(), 0));
    // Quiet: hits answer, misses do not.
    let mut req = request(op::GATQ, &missing, &exp, b"", 7, 0);
    req.extend_from_slice(&request(op::GATKQ, &a, &exp, b"", 8, 0));
    req.extend_from_slice(&request(op::GATKQ, &missing, &exp, b"", 9, 0));
    req.extend_from_slice(&request(op::GATQ, &a, &exp, b"", 10, 0));
    req.extend_from_slice(&noop(11));
    send(&mut c, &req);
    let p = read_packet(&mut c);
    assert_eq!((p.opcode, p.opaque, p.key.as_slice(), p.value.as_slice()), (op::GATKQ, 8, a.as_slice(), &b"val"[..]));
    let p = read_packet(&mut c);
    assert_eq!((p.opcode, p.opaque, p.key.len(), p.value.as_slice()), (op::GATQ, 10, 0, &b"val"[..]));
    assert_ok(&read_packet(&mut c), op::NOOP, 11);
    // A gat to an absolute time in the past expires the item.
    let p = call(&mut c, &request(op::GAT, &a, &(30 * 86400 + 1u32).to_be_bytes(), b"", 12, 0));
    assert_eq!(p.status, status::SUCCESS);
    let p = call(&mut c, &request(op::GET, &a, &[], b"", 13, 0));
    assert_error(&p, op::GET, 13, status::KEY_ENOENT, "Not found");
}

#[test]
fn expiration_of_set() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    let a = key("bin_exp").into_bytes();
    let p = call(&mut c, &request(op::SET, &a, &store_extras(0, 1), b"v", 1, 0));
    assert_eq!(p.status, status::SUCCESS);
    assert_eq!(call(&mut c, &request(op::GET, &a, &[], b"", 2, 0)).status, status::SUCCESS);
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let p = call(&mut c, &request(op::GET, &a, &[], b"", 3, 0));
    assert_error(&p, op::GET, 3, status::KEY_ENOENT, "Not found");
}

#[test]
fn flush_now_quietly_and_with_delay() {
    let Some(s) = Server::private() else { return };
    let mut c = s.connect();
    let a = key("bin_flush").into_bytes();
    set(&mut c, &a, b"v", 0);
    assert_ok(&call(&mut c, &request(op::FLUSH, b"", &[], b"", 1, 0)), op::FLUSH, 1);
    assert_eq!(call(&mut c, &request(op::GET, &a, &[], b"", 2, 0)).status, status::KEY_ENOENT);
    set(&mut c, &a, b"v", 0);
    let mut req = request(op::FLUSHQ, b"", &[], b"", 3, 0);
    req.extend_from_slice(&noop(4));
    send(&mut c, &req);
    assert_ok(&read_packet(&mut c), op::NOOP, 4);
    assert_eq!(call(&mut c, &request(op::GET, &a, &[], b"", 5, 0)).status, status::KEY_ENOENT);
    // A delay: still there now, gone once it has passed.
    set(&mut c, &a, b"v", 0);
    assert_ok(&call(&mut c, &request(op::FLUSH, b"", &3u32.to_be_bytes(), b"", 6, 0)), op::FLUSH, 6);
    assert_eq!(call(&mut c, &request(op::GET, &a, &[], b"", 7, 0)).status, status::SUCCESS);
    std::thread::sleep(std::time::Duration::from_millis(3500));
    assert_eq!(call(&mut c, &request(op::GET, &a, &[], b"", 8, 0)).status, status::KEY_ENOENT);
}

#[test]
fn noop_version_quit() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    assert_ok(&call(&mut c, &noop(7)), op::NOOP, 7);
    let p = call(&mut c, &request(op::VERSION, b"", &[], b"", 8, 0));
    assert_eq!((p.opcode, p.status, p.opaque, p.cas), (op::VERSION, status::SUCCESS, 8, 0));
    assert!(p.value.starts_with(b"1.6."), "{}", show(&p.value));
    assert_ok(&call(&mut c, &request(op::QUIT, b"", &[], b"", 9, 0)), op::QUIT, 9);
    assert!(closed(&mut c));
    let mut c = s.connect();
    send(&mut c, &request(op::QUITQ, b"", &[], b"", 10, 0));
    assert_eq!(read_to_close(&mut c), Some(Vec::new()), "quitq closes without a reply");
}

/// Reads stat packets up to the empty one that ends them.
fn read_stats(c: &mut TcpStream, opaque: u32) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for _ in 0..10_000 {
        let p = read_packet(c);
        assert_eq!((p.opcode, p.status, p.opaque, p.cas), (op::STAT, status::SUCCESS, opaque, 0));
        if p.key.is_empty() {
            assert!(p.value.is_empty());
            return out;
        }
        out.push((String::from_utf8(p.key).unwrap(), String::from_utf8(p.value).unwrap()));
    }
    panic!("no end to the stats");
}

#[test]
fn stat_groups() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    send(&mut c, &request(op::STAT, b"", &[], b"", 5, 0));
    let all = read_stats(&mut c, 5);
    let names: Vec<&str> = all.iter().map(|(n, _)| n.as_str()).collect();
    for want in ["pid", "uptime", "version", "curr_connections", "cmd_get", "get_hits", "curr_items"] {
        assert!(names.contains(&want), "no {want} in {names:?}");
    }
    send(&mut c, &request(op::STAT, b"settings", &[], b"", 6, 0));
    let settings = read_stats(&mut c, 6);
    assert!(settings.iter().any(|(n, v)| n == "item_size_max" && v == "1048576"), "{settings:?}");
    let p = call(&mut c, &request(op::STAT, b"no_such_group", &[], b"", 7, 0));
    assert_error(&p, op::STAT, 7, status::KEY_ENOENT, "Not found");
    assert_ok(&call(&mut c, &noop(8)), op::NOOP, 8);
}

#[test]
fn stat_reset_answers_only_the_end() {
    let Some(s) = Server::private() else { return };
    let mut c = s.connect();
    send(&mut c, &request(op::STAT, b"reset", &[], b"", 3, 0));
    assert!(read_stats(&mut c, 3).is_empty());
}

#[test]
fn unknown_opcodes_verbosity_and_sasl() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    for (i, opc) in [0x50u8, 0xff, op::SASL_LIST_MECHS].into_iter().enumerate() {
        let p = call(&mut c, &request(opc, b"", &[], b"", i as u32, 0));
        assert_error(&p, opc, i as u32, status::UNKNOWN_COMMAND, "Unknown command");
    }
    // An unknown command's body is swallowed; the connection goes on.
    let mut req = request(0x50, b"", &[], b"body bytes", 20, 0);
    req.extend_from_slice(&noop(21));
    send(&mut c, &req);
    assert_error(&read_packet(&mut c), 0x50, 20, status::UNKNOWN_COMMAND, "Unknown command");
    assert_ok(&read_packet(&mut c), op::NOOP, 21);
    // memcached swallows the body length counted from after the key (a
    // quirk: with a key, that is more than the packet); three bytes here.
    let mut req = request(0x50, b"abc", &[], b"", 26, 0);
    req.extend_from_slice(b"XYZ");
    req.extend_from_slice(&noop(27));
    send(&mut c, &req);
    assert_error(&read_packet(&mut c), 0x50, 26, status::UNKNOWN_COMMAND, "Unknown command");
    assert_ok(&read_packet(&mut c), op::NOOP, 27);
    // memcached 1.6 no longer dispatches verbosity.
    let mut req = request(op::VERBOSITY, b"", &[], b"", 22, 0);
    req.extend_from_slice(&noop(23));
    send(&mut c, &req);
    assert_error(&read_packet(&mut c), op::VERBOSITY, 22, status::UNKNOWN_COMMAND, "Unknown command");
    assert_ok(&read_packet(&mut c), op::NOOP, 23);
    // Without SASL, an auth request's data is swallowed too.
    let mut req = request(op::SASL_AUTH, b"PLAIN", &[], b"\0user\0pass", 24, 0);
    req.extend_from_slice(&noop(25));
    send(&mut c, &req);
    assert_error(&read_packet(&mut c), op::SASL_AUTH, 24, status::UNKNOWN_COMMAND, "Unknown command");
    assert_ok(&read_packet(&mut c), op::NOOP, 25);
}

#[test]
fn bad_magic_closes_silently() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    let mut bad = noop(1);
    bad[0] = 0x81;
    let mut req = noop(2);
    req.extend_from_slice(&bad);
    send(&mut c, &req);
    assert_ok(&read_packet(&mut c), op::NOOP, 2);
    assert_eq!(read_to_close(&mut c), Some(Vec::new()));
}

/// Sends `req` on a fresh connection and expects one error and a close.
#[track_caller]
fn refused_and_closed(s: &Server, req: &[u8], opcode: u8, st: u16, text: &str) {
    let mut c = s.connect();
    send(&mut c, req);
    let p = read_packet(&mut c);
    assert_error(&p, opcode, 0, st, text);
    assert!(closed(&mut c), "the connection closes after {text}");
}

#[test]
fn malformed_headers_close() {
    let s = Server::start(&[]);
    // A key and extras longer than the body.
    let mut p = request(op::GET, b"abc", &[], b"", 0, 0);
    p[8..12].copy_from_slice(&2u32.to_be_bytes());
    refused_and_closed(&s, &p, op::GET, status::UNKNOWN_COMMAND, "Unknown command");
    // A key over 250 bytes.
    let long = vec![b'k'; 251];
    refused_and_closed(&s, &request(op::GET, &long, &[], b"", 0, 0), op::GET, status::EINVAL, "Invalid arguments");
    // Lengths a command does not take.
    for (opc, extras, key, value) in [
        (op::GET, &b"1234"[..], &b"k"[..], &b""[..]),
        (op::GET, b"", b"", b""),
        (op::NOOP, b"", b"", b"x"),
        (op::VERSION, b"", b"k", b""),
        (op::SET, b"1234", b"k", b"v"),
        (op::SET, b"12345678", b"", b"v"),
        (op::DELETE, b"", b"k", b"v"),
        (op::INCREMENT, b"1234", b"k", b""),
        (op::APPEND, b"12345678", b"k", b"v"),
        (op::FLUSH, b"12", b"", b""),
        (op::TOUCH, b"", b"k", b""),
        (op::QUIT, b"", b"", b"x"),
        (op::STAT, b"1234", b"", b""),
    ] {
        refused_and_closed(&s, &request(opc, key, extras, value, 0, 0), opc, status::EINVAL, "Invalid arguments");
    }
    // A key of exactly 250 bytes is fine.
    let mut c = s.connect();
    let p = call(&mut c, &request(op::GET, &vec![b'k'; 250], &[], b"", 1, 0));
    assert_error(&p, op::GET, 1, status::KEY_ENOENT, "Not found");
}

#[test]
fn too_large_values_are_refused_and_swallowed() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    let a = key("bin_big").into_bytes();
    set(&mut c, &a, b"old", 0);
    let big = vec![b'x'; (1 << 20) + 10];
    let mut req = request(op::SET, &a, &store_extras(0, 0), &big, 1, 0);
    req.extend_from_slice(&noop(2));
    send(&mut c, &req);
    assert_error(&read_packet(&mut c), op::SET, 1, status::E2BIG, "Too large.");
    assert_ok(&read_packet(&mut c), op::NOOP, 2);
    // The refused set dropped the old value.
    let p = call(&mut c, &request(op::GET, &a, &[], b"", 3, 0));
    assert_error(&p, op::GET, 3, status::KEY_ENOENT, "Not found");
    // Quiet or not, the error is answered; a refused add leaves the value.
    set(&mut c, &a, b"old", 0);
    let mut req = request(op::ADDQ, &a, &store_extras(0, 0), &big, 4, 0);
    req.extend_from_slice(&request(op::APPEND, &a, &[], &big, 5, 0));
    req.extend_from_slice(&noop(6));
    send(&mut c, &req);
    assert_error(&read_packet(&mut c), op::ADDQ, 4, status::E2BIG, "Too large.");
    assert_error(&read_packet(&mut c), op::APPEND, 5, status::E2BIG, "Too large.");
    assert_ok(&read_packet(&mut c), op::NOOP, 6);
    assert_eq!(call(&mut c, &request(op::GET, &a, &[], b"", 7, 0)).value, b"old");
    // A large value under the limit is stored whole, even split in writes.
    let v = vec![b'y'; 512 * 1024];
    let req = request(op::SET, &a, &store_extras(0, 0), &v, 8, 0);
    for part in req.chunks(100_000) {
        send(&mut c, part);
    }
    assert_eq!(read_packet(&mut c).status, status::SUCCESS);
    assert_eq!(call(&mut c, &request(op::GET, &a, &[], b"", 9, 0)).value, v);
}

#[test]
fn protocol_is_chosen_by_the_first_byte() {
    let s = Server::start(&[]);
    // A binary connection's packets may arrive a byte at a time.
    let mut c = s.connect();
    for b in request(op::VERSION, b"", &[], b"", 1, 0) {
        send(&mut c, &[b]);
    }
    assert_eq!(read_packet(&mut c).status, status::SUCCESS);
    // A text connection stays text: a binary packet there is a bad line.
    let mut t = s.connect();
    let v = common::request(&mut t, b"version\r\n", b"\r\n");
    assert!(v.starts_with(b"VERSION 1.6."), "{}", show(&v));
    exchange(&mut t, &noop(1), b"ERROR\r\n");
}

/// A full cache that may not evict answers a store with memcached's
/// out-of-memory status and keeps what it has (memcached needs -M for
/// this, amalgam --eviction none).
#[test]
fn out_of_memory() {
    let memcached = common::binary().contains("memcached");
    let flags: &[&str] = if memcached { &["-m", "2", "-M"] } else { &["-m", "2", "--eviction", "none"] };
    let Some(s) = Server::with_flags(flags) else { return };
    let mut c = s.connect();
    let value = vec![b'x'; 100_000];
    let mut stored = 0u32;
    let refused = loop {
        let p =
            call(&mut c, &request(op::SET, format!("oom{stored}").as_bytes(), &store_extras(0, 0), &value, stored, 0));
        if p.status != status::SUCCESS {
            break p;
        }
        stored += 1;
        assert!(stored < 1000, "2 MB held {stored} values of 100 kB");
    };
    assert_error(&refused, op::SET, stored, status::ENOMEM, "Out of memory allocating item");
    assert!(stored >= 5, "only {stored} values of 100 kB fit in 2 MB");
    let p = call(&mut c, &request(op::GET, b"oom0", &[], b"", 1, 0));
    assert_eq!((p.status, p.value.len()), (status::SUCCESS, value.len()));
    // Quiet or not, the error is answered; the connection goes on.
    let mut req = request(op::SETQ, b"oomq", &store_extras(0, 0), &value, 2, 0);
    req.extend_from_slice(&noop(3));
    send(&mut c, &req);
    assert_error(&read_packet(&mut c), op::SETQ, 2, status::ENOMEM, "Out of memory allocating item");
    assert_ok(&read_packet(&mut c), op::NOOP, 3);
}

/// `stats detail` counts binary requests as memcached's `proto_bin.c`
/// does: get and getq per key with hits, touch and gat as gets, every
/// store a set, delete a del. Every figure compared exactly.
#[test]
fn stats_detail_counts_binary_requests() {
    let Some(s) = Server::private() else { return };
    let mut text = s.connect();
    exchange(&mut text, b"stats detail on\r\n", b"OK\r\n");
    let mut c = s.connect();
    set(&mut c, b"a:1", b"v", 0);
    assert_eq!(call(&mut c, &request(op::GET, b"a:1", b"", b"", 2, 0)).status, status::SUCCESS);
    assert_eq!(call(&mut c, &request(op::GET, b"a:9", b"", b"", 3, 0)).status, status::KEY_ENOENT);
    assert_eq!(call(&mut c, &request(op::DELETE, b"a:2", b"", b"", 4, 0)).status, status::KEY_ENOENT);
    let exp = 0u32.to_be_bytes();
    assert_eq!(call(&mut c, &request(op::TOUCH, b"a:1", &exp, b"", 5, 0)).status, status::SUCCESS);
    assert_eq!(call(&mut c, &request(op::GAT, b"a:1", &exp, b"", 6, 0)).status, status::SUCCESS);
    assert_eq!(call(&mut c, &request(op::GET, b"nodelim", b"", b"", 7, 0)).status, status::KEY_ENOENT);
    exchange(&mut text, b"stats detail dump\r\n", b"PREFIX a get 4 hit 3 set 1 del 1\r\nEND\r\n");
}
