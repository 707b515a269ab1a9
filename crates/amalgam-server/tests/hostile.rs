//! Hostile input against a running server on memcached's port: random
//! bytes, truncated commands, oversized lines and declared lengths, 2,000
//! connections at once, a client that never reads, a client that sends
//! one byte per second. Through all of it
//! another client keeps getting correct answers, a witness
//! ([`common::acked::Witness`]) keeps writing and finds every
//! acknowledged write afterwards, and the server stays up. Runs unchanged
//! against memcached (`AMALGAM_TEST_BIN=/usr/bin/memcached`). The RESP
//! port's campaign is resp_hostile.rs, TLS's tls_hostile.rs.

mod common;

use common::acked::Witness;
use common::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A control client's round trip: a fresh key set and read back.
#[track_caller]
fn still_serving(s: &mut Server, c: &mut TcpStream) {
    assert!(s.alive(), "the server process died");
    let k = key("ctl");
    let got = request(c, format!("set {k} 3 0 2\r\nok\r\nget {k}\r\n").as_bytes(), b"END\r\n");
    assert_reply(&got, format!("STORED\r\nVALUE {k} 3 2\r\nok\r\nEND\r\n").as_bytes());
}

/// Sends `bytes` on a new connection and closes it without waiting for
/// (or reading) all replies. Write errors (the server closed first) are
/// expected for some inputs.
fn fire_and_close(s: &Server, bytes: &[u8]) {
    let mut c = s.connect();
    let _ = c.write_all(bytes);
    // Read a little, so replies and closes happen while we still listen.
    c.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
    let mut sink = [0u8; 4096];
    let _ = c.read(&mut sink);
}

#[test]
fn random_bytes() {
    let mut s = Server::start(&[]);
    let mut ctl = s.connect();
    let witness = Witness::memcached(&s);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let words: [&[u8]; 16] = [
        b"get ", b"set ", b"gets ", b"cas ", b"incr ", b"delete ", b"k ", b"0 ", b"1 ", b"99999 ", b"-1 ", b"noreply",
        b"\r\n", b"\n", b" ", b"\0",
    ];
    for round in 0..200 {
        let mut buf = Vec::new();
        let len = rng.next() % 3000;
        while (buf.len() as u64) < len {
            let r = rng.next();
            if r % 3 == 0 {
                buf.extend_from_slice(words[(r >> 8) as usize % words.len()]);
            } else {
                buf.push((r >> 16) as u8);
            }
        }
        fire_and_close(&s, &buf);
        if round % 20 == 0 {
            still_serving(&mut s, &mut ctl);
        }
    }
    still_serving(&mut s, &mut ctl);
    witness.check();
}

#[test]
fn truncated_commands() {
    let mut s = Server::start(&[]);
    let mut ctl = s.connect();
    let witness = Witness::memcached(&s);
    let k = key("trunc");
    let whole = format!(
        "set {k} 0 0 10\r\n0123456789\r\ncas {k} 0 0 1 1\r\nx\r\nget {k} {k}\r\nincr {k} 1\r\ngat 10 {k}\r\ndelete {k}\r\n"
    );
    // Every prefix, each on a connection closed right after it.
    for cut in 0..whole.len() {
        fire_and_close(&s, &whole.as_bytes()[..cut]);
    }
    still_serving(&mut s, &mut ctl);
    // A half-sent data block, then the rest much later on the same
    // connection: the server waits for it.
    let mut c = s.connect();
    send(&mut c, format!("set {k} 0 0 10\r\n01234").as_bytes());
    still_serving(&mut s, &mut ctl);
    let got = request(&mut c, format!("56789\r\nget {k}\r\n").as_bytes(), b"END\r\n");
    assert_reply(&got, format!("STORED\r\nVALUE {k} 0 10\r\n0123456789\r\nEND\r\n").as_bytes());
    witness.check();
}

#[test]
fn oversized_lines_close_the_connection() {
    let mut s = Server::start(&[]);
    let mut ctl = s.connect();
    let witness = Witness::memcached(&s);
    // A megabyte with no newline: memcached gives up after 2048 bytes and
    // closes (it does not wait for the rest).
    let mut c = s.connect();
    let junk = vec![b'x'; 1 << 20];
    let writer = {
        let mut c = c.try_clone().unwrap();
        std::thread::spawn(move || {
            let _ = c.write_all(&junk);
        })
    };
    let before_close = read_to_close(&mut c).expect("the server kept a 1 MiB line open");
    assert!(!before_close.contains(&b'V'), "{}", show(&before_close));
    writer.join().unwrap();
    still_serving(&mut s, &mut ctl);
    // The same for a storage command padded with spaces.
    let mut c = s.connect();
    let _ = c.write_all(format!("set k 0 0 1{}", " ".repeat(4000)).as_bytes());
    assert!(read_to_close(&mut c).is_some(), "the server kept a 4000-byte set line open");
    still_serving(&mut s, &mut ctl);
    // A long multi-get line is not a long line: answered when it ends.
    let mut c = s.connect();
    let k = key("mg");
    send(&mut c, format!("set {k} 0 0 1\r\nv\r\n").as_bytes());
    assert_eq!(line(&mut c, b""), "STORED\r\n");
    let mut req = b"get".to_vec();
    for _ in 0..20_000 {
        req.extend_from_slice(b" miss");
    }
    send(&mut c, &req);
    send(&mut c, format!(" {k}\r\n").as_bytes());
    assert_reply(&read_until(&mut c, b"END\r\n"), format!("VALUE {k} 0 1\r\nv\r\nEND\r\n").as_bytes());
    still_serving(&mut s, &mut ctl);
    witness.check();
}

#[test]
fn oversized_declared_lengths() {
    let mut s = Server::start(&[]);
    let mut ctl = s.connect();
    let witness = Witness::memcached(&s);
    let mut c = s.connect();
    // Lengths that cannot fit in an int with the CRLF: a format error.
    for len in ["2147483647", "2147483646", "4294967295", "99999999999999999999"] {
        let got = line(&mut c, format!("set k 0 0 {len}\r\n").as_bytes());
        assert_eq!(got, "CLIENT_ERROR bad command line format\r\n", "length {len}");
    }
    // A length just below: refused as too large; the server swallows what
    // follows, so a client that sends a few bytes and gives up costs it
    // nothing.
    for len in ["2147483645", "1000000000", "2000000"] {
        fire_and_close(&s, format!("set k 0 0 {len}\r\nabc").as_bytes());
    }
    still_serving(&mut s, &mut ctl);
    // The whole too-large block sent: refused, swallowed, connection goes on.
    let big = vec![b'z'; 3 << 20];
    send(&mut c, b"set k 0 0 3145728\r\n");
    send(&mut c, &big);
    send(&mut c, b"\r\nget k\r\n");
    assert_reply(&read_until(&mut c, b"END\r\n"), b"SERVER_ERROR object too large for cache\r\nEND\r\n");
    still_serving(&mut s, &mut ctl);
    witness.check();
}

/// Connections the many-connections tests hold open at once (issue 20).
const CONNECTIONS: usize = 2000;
/// `-c` for them: memcached keeps a few dozen of its -c for itself
/// (with -c 30 it serves 6), and the control and witness connections
/// count too.
const CONNECTIONS_FLAG: &str = "2200";
/// Descriptors the test process needs beside its connections.
const SPARE_FDS: u64 = 200;

/// A connection, retried: a burst of connects can overflow the listen
/// backlog, which is not what these tests are about.
fn connect_retrying(s: &Server) -> TcpStream {
    for _ in 0..100 {
        match TcpStream::connect(s.addr()) {
            Ok(c) => {
                c.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
                c.set_write_timeout(Some(READ_TIMEOUT)).unwrap();
                return c;
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    panic!("cannot connect to {}", s.addr());
}

#[test]
fn two_thousand_connections() {
    if !raise_open_files(CONNECTIONS as u64 + SPARE_FDS) {
        return;
    }
    let Some(mut s) = Server::with_flags(&["-c", CONNECTIONS_FLAG]) else { return };
    let mut ctl = s.connect();
    let witness = Witness::memcached(&s);
    // Each one answers once before the next is opened (a burst of 2000
    // handshakes can overflow the accept queue, and the kernel then resets
    // connections the server never saw); then all 2000 are open at once.
    let mut conns: Vec<TcpStream> = (0..CONNECTIONS)
        .map(|_| {
            let mut c = connect_retrying(&s);
            let v = line(&mut c, b"version\r\n");
            assert!(v.starts_with("VERSION "), "{v:?}");
            c
        })
        .collect();
    let k = key("conn");
    // Every connection sends, then every one reads: all open at once.
    for (i, c) in conns.iter_mut().enumerate() {
        send(c, format!("set {k}{i} {i} 0 1\r\n{}\r\n", i % 10).as_bytes());
    }
    for c in conns.iter_mut() {
        assert_eq!(line(c, b""), "STORED\r\n");
    }
    still_serving(&mut s, &mut ctl);
    for (i, c) in conns.iter_mut().enumerate().rev() {
        let got = request(c, format!("get {k}{i}\r\n").as_bytes(), b"END\r\n");
        assert_reply(&got, format!("VALUE {k}{i} {i} 1\r\n{}\r\nEND\r\n", i % 10).as_bytes());
    }
    let m = stats_map(&mut ctl, "");
    assert!(num(&m, "curr_connections") > CONNECTIONS as u64, "{}", num(&m, "curr_connections"));
    assert_eq!(num(&m, "rejected_connections"), 0);
    drop(conns);
    still_serving(&mut s, &mut ctl);
    witness.check();
}

/// Over -c: memcached answers "ERROR Too many open connections" and closes,
/// and counts the rejection.
#[test]
fn connection_limit_rejects_and_counts() {
    let Some(mut s) = Server::with_flags(&["-c", "30"]) else { return };
    let mut ctl = s.connect();
    let witness = Witness::memcached(&s);
    let mut open = Vec::new();
    let mut rejected = 0;
    for _ in 0..60 {
        let mut c = s.connect();
        send(&mut c, b"version\r\n");
        let got = read_until(&mut c, b"\r\n");
        if got == b"ERROR Too many open connections\r\n" {
            rejected += 1;
            assert!(closed(&mut c), "a rejected connection stays open");
        } else {
            assert!(got.starts_with(b"VERSION "), "{}", show(&got));
            open.push(c);
        }
    }
    // memcached keeps some of its -c for itself (listeners, reserved fds:
    // with -c 30 it serves only 6), amalgam counts client connections.
    assert!(rejected >= 30 && !open.is_empty(), "open {} rejected {rejected}", open.len());
    assert!(stat(&mut ctl, "rejected_connections") >= rejected);
    // Closing one makes room for another.
    drop(open.pop());
    let mut again = None;
    for _ in 0..100 {
        let mut c = s.connect();
        send(&mut c, b"version\r\n");
        if read_until(&mut c, b"\r\n").starts_with(b"VERSION ") {
            again = Some(c);
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(again.is_some(), "no room after a connection closed");
    still_serving(&mut s, &mut ctl);
    witness.check();
}

/// A client that pipelines requests for big values and never reads its
/// replies: the server stops reading from it (its replies fill the socket)
/// while the control client is served; closing it frees everything.
#[test]
fn a_client_that_never_reads() {
    let mut s = Server::start(&[]);
    let mut ctl = s.connect();
    let witness = Witness::memcached(&s);
    let k = key("big");
    let value = vec![b'b'; 512 << 10];
    send(&mut ctl, format!("set {k} 0 0 {}\r\n", value.len()).as_bytes());
    send(&mut ctl, &value);
    assert_eq!(line(&mut ctl, b"\r\n"), "STORED\r\n");
    let hog = s.connect();
    hog.set_write_timeout(Some(Duration::from_millis(500))).unwrap();
    let writer = {
        let mut hog = hog.try_clone().unwrap();
        let req = format!("get {k}\r\n").repeat(10_000).into_bytes();
        std::thread::spawn(move || {
            // Stops when the server stops reading (write timeout) or the
            // connection goes away; 2.5 TB of replies would be needed.
            let mut sent = 0usize;
            for _ in 0..500 {
                match hog.write_all(&req) {
                    Ok(()) => sent += req.len(),
                    Err(_) => break,
                }
            }
            sent
        })
    };
    for _ in 0..20 {
        still_serving(&mut s, &mut ctl);
        std::thread::sleep(Duration::from_millis(50));
    }
    let sent = writer.join().unwrap();
    let total = format!("get {k}\r\n").len() * 10_000 * 500;
    assert!(sent < total, "the server read all {sent} bytes of a client that never reads");
    still_serving(&mut s, &mut ctl);
    drop(hog);
    still_serving(&mut s, &mut ctl);
    eprintln!("the hog wrote {sent} bytes of requests before the server stopped reading");
    witness.check();
}

/// A storage command whose last bytes come one a second: the server waits
/// for them holding no one up, runs nothing before the last one, and
/// answers once it is in.
#[test]
fn a_client_sending_one_byte_per_second() {
    let mut s = Server::start(&[]);
    let mut ctl = s.connect();
    let witness = Witness::memcached(&s);
    let k = key("dribble");
    let last = Arc::new(AtomicBool::new(false));
    let dribbler = {
        let (mut c, last) = (s.connect(), last.clone());
        let req = format!("set {k} 5 0 8\r\ndribbled\r\n").into_bytes();
        std::thread::spawn(move || {
            dribble(&mut c, &req, &last);
            c
        })
    };
    // Bounded: the dribbler ends after DRIBBLED_BYTES pauses, or this
    // gives up. The flag is read after the reply: a false flag means the
    // last byte went after the get ran.
    for _ in 0..200 {
        if dribbler.is_finished() {
            break;
        }
        still_serving(&mut s, &mut ctl);
        let got = request(&mut ctl, format!("get {k}\r\n").as_bytes(), b"END\r\n");
        if !last.load(Ordering::SeqCst) {
            assert_reply(&got, b"END\r\n");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut c = dribbler.join().unwrap();
    assert_eq!(line(&mut c, b""), "STORED\r\n");
    let got = request(&mut ctl, format!("get {k}\r\n").as_bytes(), b"END\r\n");
    assert_reply(&got, format!("VALUE {k} 5 8\r\ndribbled\r\nEND\r\n").as_bytes());
    witness.check();
}
