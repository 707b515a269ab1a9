//! Replication under bad input (issue 22, crate::repl): a "replica" that
//! sends garbage after PSYNC is dropped and the primary serves on; a
//! "primary" that sends garbage (no snapshot, a corrupt record; in a
//! redis-server's forms, a bad RDB, mark or command stream) makes the
//! replica drop the link, keep serving reads, and retry. Amalgam-only (the
//! stream is Amalgam's own format): skipped against memcached or an
//! external server. The well-behaved paths, against Amalgam and Redis,
//! are tests/python/test_replication.py.
mod common;
use common::resp::*;
use common::*;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

/// How long a condition may take to become true (generous: nothing here
/// measures time).
const DEADLINE: Duration = Duration::from_secs(20);

#[test]
fn a_replica_that_sends_garbage_is_dropped_and_the_primary_serves_on() {
    let Some(primary) = resp_private(&[]) else { return };
    let mut c = Resp::new(&primary);
    assert_eq!(c.call(&["SET", "k", "v"]), "+OK\r\n");
    let mut r = Resp::new(&primary);
    assert_eq!(r.call(&["REPLCONF", "listening-port", "70000"]), "-ERR value is not an integer or out of range\r\n");
    assert_eq!(r.call(&["REPLCONF", "listening-port", "7001"]), "+OK\r\n");
    assert_eq!(r.call(&["REPLCONF", "nonsense", "x"]), "-ERR Unrecognized REPLCONF option: nonsense\r\n");
    // An Amalgam replica says so (a Redis one is refused: the stream it
    // would need is not served, resp_repl_rdb_out.rs).
    assert_eq!(r.call(&["REPLCONF", "capa", "eof", "capa", "psync2", "capa", "amalgam"]), "+OK\r\n");
    r.send(&["PSYNC", "?", "-1"]);
    let head = r.reply();
    assert!(head.starts_with("+FULLRESYNC "), "{head:?}");
    eventually("the primary lists its replica", DEADLINE, || {
        c.info_field("replication", "connected_slaves").as_deref() == Some("1")
    });
    // Not a RESP command: the primary's ack reader gives up on this replica.
    r.send_raw(b"*1\r\n$-7\r\n\x00\xff garbage\r\n");
    eventually("the replica is dropped", DEADLINE, || {
        c.info_field("replication", "connected_slaves").as_deref() == Some("0")
    });
    assert_eq!(c.call(&["GET", "k"]), "$1\r\nv\r\n");
    assert_eq!(c.call(&["SET", "k2", "v2"]), "+OK\r\n");
}

/// A fake primary: accepts a replica, answers its handshake, then sends
/// `after` (following `+FULLRESYNC`), and hands back the connection.
fn fake_primary_session(listener: &TcpListener, after: &[u8]) -> TcpStream {
    let (mut s, _) = listener.accept().unwrap();
    s.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
    let mut got = Vec::new();
    let mut chunk = [0u8; 4096];
    // PING, REPLCONF listening-port, REPLCONF capa, PSYNC: answer each.
    for answer in ["+PONG\r\n", "+OK\r\n", "+OK\r\n"] {
        loop {
            if let Some(n) = reply_len(&got) {
                got.drain(..n);
                break;
            }
            let n = s.read(&mut chunk).unwrap();
            assert!(n > 0, "the replica hung up during its handshake");
            got.extend_from_slice(&chunk[..n]);
        }
        s.write_all(answer.as_bytes()).unwrap();
    }
    loop {
        if let Some(n) = reply_len(&got) {
            let psync = String::from_utf8_lossy(&got[..n]).into_owned();
            assert!(psync.contains("PSYNC"), "{psync:?}");
            break;
        }
        let n = s.read(&mut chunk).unwrap();
        assert!(n > 0, "the replica hung up before PSYNC");
        got.extend_from_slice(&chunk[..n]);
    }
    s.write_all(b"+FULLRESYNC 0123456789abcdef0123456789abcdef01234567 0\r\n").unwrap();
    s.write_all(after).unwrap();
    s
}

#[test]
fn a_replica_fed_garbage_keeps_serving_and_reconnects() {
    if external_resp_addr().is_some() || external_addr().is_some() || binary().contains("memcached") {
        eprintln!("note: amalgam-only (its own replication stream); skipped");
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let Some(replica) = resp_private(&["--replicaof", "127.0.0.1", &port]) else { return };
    // Not a snapshot at all.
    let s1 = fake_primary_session(&listener, &[0x55; 64]);
    let mut c = Resp::new(&replica);
    // A well-formed header, then a record whose checksum is wrong.
    let mut bad = Vec::new();
    bad.extend_from_slice(b"AMALGSNP");
    bad.extend_from_slice(&[0u8; 24]);
    bad.extend_from_slice(&[5, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef, 2, 1, b'k']);
    // The replica retries (once a second): a second session proves it.
    let s2 = fake_primary_session(&listener, &bad);
    // A redis-server's forms (issue 37 §1), hostile: an RDB that is not
    // one, a length past what it sends, an EOF mark it never sends, a
    // bad mark line, a valid RDB whose value is garbage, and a command
    // stream that is not RESP.
    let mut rdb = b"$EOF:0123456789012345678901234567890123456789\r\nREDIS0010".to_vec();
    rdb.extend_from_slice(&[0x00, 0x01, b'k', 0xc3, 0xff, 0xff, 0xff, 0x7f]);
    // Each session is closed once sent (else a replica waiting for the
    // rest would wait for repl-timeout).
    for after in [
        &b"$20\r\nnot an rdb at all...."[..],
        b"$99999999999\r\nREDIS0010",
        b"$EOF:0123456789012345678901234567890123456789\r\nREDIS0010\xff\0\0\0\0\0\0\0\0",
        b"$EOF:short\r\n",
        &rdb,
        b"$18\r\nREDIS0010\xff\0\0\0\0\0\0\0\0*1\r\n$-7\r\n\x00garbage",
    ] {
        drop(fake_primary_session(&listener, after));
    }
    let s3 = fake_primary_session(&listener, b"");
    drop((s1, s2));
    // All along it serves reads, refuses writes, and says its link is down.
    assert_eq!(c.call(&["GET", "k"]), "$-1\r\n");
    assert_eq!(c.call(&["SET", "k", "v"]), "-READONLY You can't write against a read only replica.\r\n");
    assert_eq!(c.info_field("replication", "master_link_status").as_deref(), Some("down"));
    // Back to a primary of its own: it writes again.
    assert_eq!(c.call(&["REPLICAOF", "NO", "ONE"]), "+OK\r\n");
    assert_eq!(c.call(&["SET", "k", "v"]), "+OK\r\n");
    drop(s3);
}
