//! The RESP wire protocol, black-box: multibulk and inline requests,
//! Redis's protocol errors (answered, then the connection closed),
//! pipelining, requests split into many reads, and hostile input — random
//! bytes, truncated arrays, huge declared lengths, a client that never
//! reads. Through all of it another client keeps getting answers and the
//! server stays up. Runs against amalgam and, in CI, against redis-server
//! 7 (`AMALGAM_TEST_RESP_ADDR`); amalgam's own limits are in tests marked
//! so.
mod common;
use common::acked::Witness;
use common::resp::*;
use common::*;
use std::io::{Read, Write};
use std::time::Duration;

/// A control client's round trip on a fresh key.
#[track_caller]
fn still_serving(server: &mut Server, ctl: &mut Resp) {
    assert!(server.alive(), "the server process died");
    let k = key("ctl");
    assert_eq!(ctl.call(&["SET", &k, "ok"]), OK);
    assert_eq!(ctl.call(&["GET", &k]), bulk("ok"));
}

/// Sends `bytes` on a new connection; expects `reply` and then a close.
#[track_caller]
fn refused(server: &Server, bytes: &[u8], reply: &str) {
    let mut c = Resp::new(server);
    c.send_raw(bytes);
    let got = c.reply();
    assert_eq!(got, reply, "input {}", show(&bytes[..bytes.len().min(100)]));
    assert!(c.closed(), "not closed after {}", show(&bytes[..bytes.len().min(100)]));
}

#[test]
fn protocol_errors_answer_and_close() {
    let Some(mut server) = resp_server() else { return };
    let mut ctl = Resp::new(&server);
    let p = |m: &str| error(&format!("ERR Protocol error: {m}"));
    refused(&server, b"*999999999999\r\n", &p("invalid multibulk length"));
    refused(&server, b"*-2x\r\n", &p("invalid multibulk length"));
    refused(&server, b"*01\r\n", &p("invalid multibulk length"));
    refused(&server, b"* 1\r\n", &p("invalid multibulk length"));
    refused(&server, b"*2\r\n$2147483648\r\n", &p("invalid bulk length"));
    refused(&server, b"*2\r\n$-1\r\n", &p("invalid bulk length"));
    refused(&server, b"*2\r\n$x\r\n", &p("invalid bulk length"));
    refused(&server, b"*2\r\n$3\r\nGET\r\n:1\r\n", &p("expected '$', got ':'"));
    refused(&server, b"*1\r\nPING\r\n", &p("expected '$', got 'P'"));
    refused(&server, b"SET k \"abc\r\n", &p("unbalanced quotes in request"));
    refused(&server, b"SET k \"a\"b\r\n", &p("unbalanced quotes in request"));
    refused(&server, b"SET k 'a\r\n", &p("unbalanced quotes in request"));
    refused(&server, &vec![b'x'; 64 * 1024 + 1], &p("too big inline request"));
    let mut count = b"*".to_vec();
    count.extend(vec![b'1'; 64 * 1024 + 1]);
    refused(&server, &count, &p("too big mbulk count string"));
    let mut head = b"*1\r\n$".to_vec();
    head.extend(vec![b'1'; 64 * 1024 + 1]);
    refused(&server, &head, &p("too big bulk count string"));
    // Commands before the bad one are answered first.
    let mut c = Resp::new(&server);
    c.send_raw(b"PING\r\n*1\r\n$4\r\nPING\r\n*x\r\n");
    assert_eq!(c.reply(), "+PONG\r\n");
    assert_eq!(c.reply(), "+PONG\r\n");
    assert_eq!(c.reply(), p("invalid multibulk length"));
    assert!(c.closed());
    still_serving(&mut server, &mut ctl);
}

#[test]
fn inline_commands() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("inline");
    assert_eq!(c.call_raw(format!("SET {k} \"a b\\x41\\n\"\r\n").as_bytes()), OK);
    assert_eq!(c.call_raw(format!("GET {k}\n").as_bytes()), bulk("a bA\n"));
    assert_eq!(c.call_raw(format!("set {k} 'it\\'s'\r\n").as_bytes()), OK);
    assert_eq!(c.call_raw(format!("  get\t{k}  \r\n").as_bytes()), bulk("it's"));
    // Blank lines and empty arrays are skipped without a reply.
    assert_eq!(c.call_raw(b"\r\n\n   \r\n*0\r\n*-1\r\nPING\r\n"), "+PONG\r\n");
    assert_eq!(c.call_raw(b"ECHO \"\"\r\n"), bulk(""));
}

#[test]
fn redis_skips_the_bytes_after_a_bulk_unread() {
    // Redis does not check the CRLF after a bulk string's body or after a
    // header's CR: it skips two bytes. Amalgam does the same.
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    assert_eq!(c.call_raw(b"*1\r\n$4\r\nPINGxx"), "+PONG\r\n");
    assert_eq!(c.call_raw(b"*1\rx$4\r\nPING\r\n"), "+PONG\r\n");
}

#[test]
fn pipelined_commands_answer_in_order() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let prefix = key("pipe");
    let n = 1000;
    let mut req = Vec::new();
    let mut want = String::new();
    for i in 0..n {
        let k = format!("{prefix}:{i}");
        req.extend_from_slice(&encode(&[b"SET", k.as_bytes(), i.to_string().as_bytes()]));
        want.push_str(OK);
    }
    for i in 0..n {
        let k = format!("{prefix}:{i}");
        req.extend_from_slice(&encode(&[b"GET", k.as_bytes()]));
        want.push_str(&bulk(&i.to_string()));
        if i % 100 == 0 {
            req.extend_from_slice(&encode(&[b"MGET", k.as_bytes(), b"nosuch:key", k.as_bytes()]));
            want.push_str(&format!("*3\r\n{}{NULL2}{}", bulk(&i.to_string()), bulk(&i.to_string())));
            req.extend_from_slice(&encode(&[b"INCR", k.as_bytes()]));
            want.push_str(&int(i + 1));
        }
    }
    c.send_raw(&req);
    let mut got = String::new();
    while got.len() < want.len() {
        let r = c.reply();
        assert!(!r.is_empty(), "no more replies after {} bytes", got.len());
        got.push_str(&r);
    }
    assert!(got == want, "pipelined replies differ");
}

/// SETs and GETs of one key interleaved in one write, with SET's options
/// and its errors among them: every reply in order, and every GET sees
/// the SETs before it (amalgam runs a pipeline's SETs as a prefetched run
/// and its GETs as a batch; a run must end where the other kind starts).
#[test]
fn pipelined_sets_and_gets_of_one_key_answer_in_order() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("setget");
    let other = key("setget-other");
    let steps: Vec<(Vec<&str>, String)> = vec![
        (vec!["SET", &k, "v1"], OK.into()),
        (vec!["GET", &k], bulk("v1")),
        (vec!["SET", &k, "v2"], OK.into()),
        (vec!["SET", &k, "v3"], OK.into()),
        (vec!["GET", &k], bulk("v3")),
        (vec!["SET", &k, "v4", "NX"], NULL2.into()),
        (vec!["SET", &k, "v5", "XX", "GET"], bulk("v3")),
        (vec!["SET", &other, "o1"], OK.into()),
        (vec!["MGET", &k, &other], format!("*2\r\n{}{}", bulk("v5"), bulk("o1"))),
        (vec!["SET", &k], error("ERR wrong number of arguments for 'set' command")),
        (vec!["SET", &k, "v6", "EX", "0"], error("ERR invalid expire time in 'set' command")),
        (vec!["SET", &k, "v7", "BOGUS"], error("ERR syntax error")),
        (vec!["GET", &k], bulk("v5")),
        (vec!["SET", &k, "v8"], OK.into()),
        (vec!["DEL", &other], int(1)),
        (vec!["SET", &other, "o2"], OK.into()),
        (vec!["SET", &k, "v9", "GET"], bulk("v8")),
        (vec!["MGET", &other, &k], format!("*2\r\n{}{}", bulk("o2"), bulk("v9"))),
    ];
    let mut req = Vec::new();
    let mut want = String::new();
    for (args, reply) in &steps {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        req.extend_from_slice(&encode(&args));
        want.push_str(reply);
    }
    c.send_raw(&req);
    let mut got = String::new();
    while got.len() < want.len() {
        let r = c.reply();
        assert!(!r.is_empty(), "no more replies after {got:?}");
        got.push_str(&r);
    }
    assert_eq!(got, want);
}

#[test]
fn a_request_split_into_single_bytes() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("split");
    let mut req = encode(&[b"SET", k.as_bytes(), b"value"]);
    req.extend_from_slice(&encode(&[b"GET", k.as_bytes()]));
    req.extend_from_slice(format!("GET {k}\r\n").as_bytes());
    for b in &req {
        c.send_raw(&[*b]);
        std::thread::sleep(Duration::from_micros(200));
    }
    assert_eq!(c.reply(), OK);
    assert_eq!(c.reply(), bulk("value"));
    assert_eq!(c.reply(), bulk("value"));
}

#[test]
fn random_bytes_and_truncated_arrays() {
    let Some(mut server) = resp_server() else { return };
    let mut ctl = Resp::new(&server);
    let witness = Witness::resp(&server);
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let words: [&[u8]; 14] = [
        b"*",
        b"*2\r\n",
        b"$3\r\n",
        b"$-1\r\n",
        b"GET\r\n",
        b"SET\r\n",
        b"\r\n",
        b"\n",
        b"\"",
        b"'",
        b" ",
        b"\0",
        b"$99999\r\n",
        b"*999\r\n",
    ];
    for round in 0..150 {
        let mut buf = Vec::new();
        let len = rng.next() % 2000;
        while (buf.len() as u64) < len {
            let r = rng.next();
            if r % 3 == 0 {
                buf.extend_from_slice(words[(r >> 8) as usize % words.len()]);
            } else {
                buf.push((r >> 16) as u8);
            }
        }
        let mut c = server.resp_connect();
        let _ = c.write_all(&buf);
        c.set_read_timeout(Some(Duration::from_millis(10))).unwrap();
        let _ = c.read(&mut [0u8; 4096]);
        drop(c);
        if round % 25 == 0 {
            still_serving(&mut server, &mut ctl);
        }
    }
    // Arrays cut anywhere, then the client goes away.
    let whole = encode(&[b"SET", b"k", b"some value"]);
    for cut in 1..whole.len() {
        let mut c = server.resp_connect();
        let _ = c.write_all(&whole[..cut]);
    }
    still_serving(&mut server, &mut ctl);
    witness.check();
}

#[test]
fn a_client_that_never_reads() {
    let Some(mut server) = resp_server() else { return };
    let mut ctl = Resp::new(&server);
    let witness = Witness::resp(&server);
    let k = key("big");
    assert_eq!(ctl.call(&["SET", &k, &"b".repeat(256 << 10)]), OK);
    let hog = server.resp_connect();
    hog.set_write_timeout(Some(Duration::from_millis(500))).unwrap();
    let writer = {
        let mut hog = hog.try_clone().unwrap();
        let req = encode(&[b"GET", k.as_bytes()]).repeat(10_000);
        std::thread::spawn(move || {
            let mut sent = 0usize;
            for _ in 0..200 {
                match hog.write_all(&req) {
                    Ok(()) => sent += req.len(),
                    Err(_) => break,
                }
            }
            sent
        })
    };
    for _ in 0..10 {
        still_serving(&mut server, &mut ctl);
        std::thread::sleep(Duration::from_millis(50));
    }
    let sent = writer.join().unwrap();
    let total = encode(&[b"GET", k.as_bytes()]).len() * 10_000 * 200;
    assert!(sent < total, "the server read all {sent} bytes of a client that never reads");
    drop(hog);
    still_serving(&mut server, &mut ctl);
    witness.check();
}

#[test]
fn amalgam_bounds_bulk_strings_arrays_and_requests() {
    // Amalgam's limits, tighter than Redis's: more than 1 Mi elements
    // (Redis 7: 2^31), a request over 8 MiB (Redis: 1 GiB, closed without
    // a reply too). A bulk string follows proto-max-bulk-len, as Redis's
    // (resp_large.rs), not -I.
    let Some(mut server) = resp_private(&["-I", "2k", "--proto-max-bulk-len", "1mb"]) else { return };
    let mut ctl = Resp::new(&server);
    let p = |m: &str| error(&format!("ERR Protocol error: {m}"));
    refused(&server, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1048577\r\n", &p("invalid bulk length"));
    refused(&server, b"*1048577\r\n", &p("invalid multibulk length"));
    let mut c = Resp::new(&server);
    c.send_raw(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4096\r\n");
    assert!(c.silent(), "waits for the value");
    // A value over -I is a string Redis would store.
    c.send_raw(&[b'v'; 4096]);
    assert_eq!(c.call_raw(b"\r\n"), "+OK\r\n");
    let tail = (1 << 20) - 4096;
    assert_eq!(c.call(&["APPEND", "k", &"x".repeat(tail)]), int(1 << 20));
    assert_eq!(c.call(&["APPEND", "k", "x"]), error("ERR string exceeds maximum allowed size (proto-max-bulk-len)"));
    assert_eq!(
        c.call(&["SETRANGE", "k", "1048576", "x"]),
        error("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
    );
    // 9 MiB of one MSET: closed without a reply.
    let mut big = Resp::new(&server);
    let pair = encode(&[b"k", &[b'v'; 1000]]);
    let n = (9 << 20) / pair.len();
    let mut req = format!("*{}\r\n$4\r\nMSET\r\n", 2 * n + 1).into_bytes();
    for _ in 0..n {
        req.extend_from_slice(&pair[4..]);
    }
    big.s.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = big.s.write_all(&req);
    assert!(big.closed(), "a request over the limit closes the connection");
    still_serving(&mut server, &mut ctl);
}

#[test]
fn keys_past_the_engine_limit() {
    // Amalgam's keys are memcached's: 1 to 250 bytes (Redis: any bytes).
    let Some(server) = resp_private(&[]) else { return };
    let mut c = Resp::new(&server);
    let long = "k".repeat(251);
    let refused = error("ERR invalid key: Amalgam keys are 1 to 250 bytes");
    assert_eq!(c.call(&["SET", &long, "v"]), refused);
    assert_eq!(c.call(&["SET", "", "v"]), refused);
    assert_eq!(c.call(&["GET", &long]), NULL2);
    assert_eq!(c.call(&["EXISTS", &long, ""]), int(0));
    assert_eq!(c.call(&["DEL", &long]), int(0));
    assert_eq!(c.call(&["SET", &"k".repeat(250), "v"]), OK);
    // MSET and MSETNX refuse a bad key before writing any pair: none of
    // the pairs before it is written.
    assert_eq!(c.call(&["MSET", "f1", "1", "", "2", "f2", "3"]), refused);
    assert_eq!(c.call(&["MSETNX", "f1", "1", &long, "2", "f2", "3"]), refused);
    assert_eq!(c.call(&["EXISTS", "f1", "f2"]), int(0));
    // RENAME to a key the engine cannot hold: the invalid-key error when
    // the source exists (nothing moves), "no such key" when it does not.
    assert_eq!(c.call(&["SET", "src", "v"]), OK);
    assert_eq!(c.call(&["RENAME", "src", ""]), refused);
    assert_eq!(c.call(&["RENAMENX", "src", &long]), refused);
    assert_eq!(c.call(&["GET", "src"]), bulk("v"));
    assert_eq!(c.call(&["RENAME", "nosuch", ""]), error("ERR no such key"));
}

#[test]
fn connection_limit_answers_like_redis() {
    // Both protocols share -c; a RESP connection over it gets Redis's text.
    let Some(server) = resp_private(&["-c", "10"]) else { return };
    let mut open = Vec::new();
    let mut rejected = 0;
    for _ in 0..20 {
        let mut c = Resp::new(&server);
        c.send(&["PING"]);
        let got = c.reply();
        if got == error("ERR max number of clients reached") {
            rejected += 1;
            assert!(c.closed(), "a rejected connection stays open");
        } else {
            assert_eq!(got, "+PONG\r\n");
            open.push(c);
        }
    }
    assert!(rejected >= 10 && !open.is_empty(), "open {} rejected {rejected}", open.len());
    drop(open.pop());
    let mut again = false;
    for _ in 0..100 {
        let mut c = Resp::new(&server);
        if c.call(&["PING"]) == "+PONG\r\n" {
            again = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(again, "no room after a connection closed");
    assert_eq!(open[0].call(&["PING"]), "+PONG\r\n");
}
