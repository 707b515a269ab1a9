//! The normal class of `client-output-buffer-limit` on memcached's port
//! (amalgam only: memcached never closes a client for its unsent output —
//! its replies point into the items — while Amalgam copies replies into
//! the connection's buffer and bounds it as Redis does; `obuf.rs`), and
//! the setting from a config file. Skipped against memcached.
mod common;
use amalgam_protocol::binary;
use common::*;
use std::io::{ErrorKind, Read, Write};
use std::time::Duration;

/// Size of each value the slow reader asks for.
const VALUE_BYTES: usize = 100_000;

/// An amalgam with `args`; None (with a note) against memcached or an
/// external server.
fn amalgam(args: &[&str]) -> Option<Server> {
    if binary().contains("memcached") {
        eprintln!("note: memcached has no output buffer limit; skipping an amalgam-only test");
        return None;
    }
    Server::with_flags(args)
}

/// Reads until the server closes (EOF or reset) or nothing comes for
/// [`READ_TIMEOUT`]: (closed, bytes received).
fn drain(s: &mut std::net::TcpStream) -> (bool, usize) {
    let mut b = vec![0u8; 1 << 20];
    let mut got = 0;
    loop {
        match s.read(&mut b) {
            Ok(0) => return (true, got),
            Ok(n) => got += n,
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return (true, got),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return (false, got),
        }
    }
}

#[test]
fn a_memcached_client_that_does_not_read_is_closed_past_the_hard_limit() {
    let Some(server) = amalgam(&["--client-output-buffer-limit", "normal 1mb 0 0"]) else { return };
    let mut other = server.connect();
    let value = "v".repeat(VALUE_BYTES);
    exchange(&mut other, format!("set big 0 0 {VALUE_BYTES}\r\n{value}\r\n").as_bytes(), b"STORED\r\n");
    let want = format!("VALUE big 0 {VALUE_BYTES}\r\n{value}\r\nEND\r\n");

    // Pipelined gets (30 MB of replies), then a multi-get alone (1.5 MB):
    // each closes its client.
    let mut slow = server.connect();
    slow.write_all(b"set written 0 0 4\r\nkept\r\n").unwrap();
    slow.write_all(&b"get big\r\n".repeat(300)).unwrap();
    let mut multi = server.connect();
    multi.write_all(format!("get{}\r\n", " big".repeat(15)).as_bytes()).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    for _ in 0..20 {
        assert_eq!(request(&mut other, b"get big\r\n", b"END\r\n"), want.as_bytes(), "another client is served");
    }
    assert_eq!(request(&mut other, b"get written\r\n", b"END\r\n"), b"VALUE written 0 4\r\nkept\r\nEND\r\n");
    let (closed, got) = drain(&mut slow);
    assert!(closed && got < 300 * VALUE_BYTES, "the slow reader was closed ({got} bytes came)");
    let (closed, got) = drain(&mut multi);
    assert!(closed && got < 15 * VALUE_BYTES, "the multi-get was closed ({got} bytes came)");

    // Under the limit, the same multi-get is answered whole.
    let mut small = server.connect();
    let reply = request(&mut small, format!("get{}\r\n", " big".repeat(5)).as_bytes(), b"END\r\n");
    assert_eq!(reply.len(), 5 * (want.len() - 5) + 5);
}

#[test]
fn a_pipeline_after_the_hard_limit_is_not_executed() {
    let Some(server) = amalgam(&["--client-output-buffer-limit", "normal 200kb 0 0"]) else { return };
    let mut other = server.connect();
    let value = "v".repeat(VALUE_BYTES);
    exchange(&mut other, format!("set big 0 0 {VALUE_BYTES}\r\n{value}\r\n").as_bytes(), b"STORED\r\n");

    // One write (it arrives in one read, so one round runs it): a `set`
    // before the gets, ten gets of 100 KB (1 MB of replies, past the
    // 200 KB limit and below the 1 MiB high-water mark), then a `set`
    // after them, on the text protocol and (the same batch) the binary
    // one. What comes before the limit runs; nothing after it does, and
    // the client is closed.
    let mut text = b"set before 0 0 1\r\nb\r\n".to_vec();
    text.extend(b"get big\r\n".repeat(10));
    text.extend(b"set marker 0 0 1\r\nm\r\n");
    let mut slow = server.connect();
    slow.write_all(&text).unwrap();
    let mut bin = binary_set(b"bbefore", b"b");
    bin.extend(binary_get(b"big").repeat(10));
    bin.extend(binary_set(b"bmarker", b"m"));
    let mut slow_bin = server.connect();
    slow_bin.write_all(&bin).unwrap();
    std::thread::sleep(Duration::from_millis(300));

    // Other clients are served meanwhile.
    let want = format!("VALUE big 0 {VALUE_BYTES}\r\n{value}\r\nEND\r\n");
    for _ in 0..5 {
        assert_eq!(request(&mut other, b"get big\r\n", b"END\r\n"), want.as_bytes(), "another client is served");
    }
    let (closed, got) = drain(&mut slow);
    assert!(closed && got < 10 * VALUE_BYTES, "the pipelining client was closed ({got} bytes came)");
    let (closed, got) = drain(&mut slow_bin);
    assert!(closed && got < 10 * VALUE_BYTES, "the binary client was closed ({got} bytes came)");
    assert_eq!(request(&mut other, b"get before\r\n", b"END\r\n"), b"VALUE before 0 1\r\nb\r\nEND\r\n");
    assert_eq!(request(&mut other, b"get bbefore\r\n", b"END\r\n"), b"VALUE bbefore 0 1\r\nb\r\nEND\r\n");
    assert_eq!(request(&mut other, b"get marker\r\n", b"END\r\n"), b"END\r\n", "the set after the limit ran");
    assert_eq!(request(&mut other, b"get bmarker\r\n", b"END\r\n"), b"END\r\n", "the binary set after the limit ran");
}

/// A binary SET (flags 0, no expiry).
fn binary_set(key: &[u8], value: &[u8]) -> Vec<u8> {
    binary::request(binary::opcode::SET, key, &[0; 8], value, 0, 0)
}

/// A binary GET.
fn binary_get(key: &[u8]) -> Vec<u8> {
    binary::request(binary::opcode::GET, key, &[], &[], 0, 0)
}

#[test]
fn the_limit_from_a_config_file() {
    let dir = std::env::temp_dir().join(format!("amalgam-obuf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("amalgam.conf");
    // Redis's file form: one line per class, words unquoted.
    std::fs::write(&file, "client-output-buffer-limit normal 2mb 1mb 5\nclient-output-buffer-limit pubsub 1mb 0 0\n")
        .unwrap();
    let Some(server) = amalgam(&["--config", file.to_str().unwrap()]) else { return };
    let mut c = server.resp_connect();
    let got = request(&mut c, b"CONFIG GET client-output-buffer-limit\r\n", b" 0 0\r\n");
    let text = String::from_utf8_lossy(&got);
    assert!(text.ends_with("normal 2097152 1048576 5 slave 268435456 67108864 60 pubsub 1048576 0 0\r\n"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}
