//! Replication of large values (issue 18 §5): a record of 1 MiB or more
//! is kept in the primary's backlog by reference (the log's chunk, or the
//! value staged as it arrived: persist `repl.rs`, "Large records in the
//! backlog") and written to the replica from there. A large SET and a
//! large APPEND reach a replica byte for byte, with and without `--dir`
//! on the primary, while the replica is stopped (SIGSTOP) the primary's
//! one worker answers another connection, and the replica then continues
//! by partial resync after its link is cut. Amalgam-only (its own stream
//! format; Redis's replication is tests/python/test_replication.py):
//! skipped against memcached or an external server.

mod common;

use common::resp::*;
use common::*;
use std::time::Duration;

/// How long a condition may take to become true (generous: nothing here
/// measures time).
const DEADLINE: Duration = Duration::from_secs(60);

/// A value of `len` bytes that is not one byte repeated.
fn value(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3] ^ seed).collect()
}

fn bulk_of(v: &[u8]) -> Vec<u8> {
    let mut b = format!("${}\r\n", v.len()).into_bytes();
    b.extend_from_slice(v);
    b.extend_from_slice(b"\r\n");
    b
}

fn get(server: &Server, k: &str) -> Vec<u8> {
    let mut c = Resp::new(server);
    c.s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    c.send_raw(&encode(&[b"GET", k.as_bytes()]));
    c.reply_bytes()
}

/// Sends `sig` (STOP, CONT) to `pid`.
fn signal(pid: u32, sig: &str) {
    let ok = std::process::Command::new("kill").arg(format!("-{sig}")).arg(pid.to_string()).status().unwrap();
    assert!(ok.success(), "kill -{sig} {pid}");
}

#[test]
fn large_values_replicate_whole_while_the_primary_serves_on() {
    if external_addr().is_some() || external_resp_addr().is_some() || binary().contains("memcached") {
        eprintln!("note: amalgam-only (its own replication stream); skipped");
        return;
    }
    let dir = TempDir::new("primary");
    let d = dir.0.to_string_lossy().into_owned();
    for persist in [false, true] {
        let mut flags = vec!["-t", "1", "-m", "512"];
        if persist {
            flags.extend(["--dir", d.as_str()]);
        }
        let Some(primary) = resp_private(&flags) else { return };
        let port = primary.resp_addr().port().to_string();
        let Some(replica) = resp_private(&["-m", "512", "--replicaof", "127.0.0.1", &port]) else { return };
        let mut p = Resp::new(&primary);
        let mut r = Resp::new(&replica);
        eventually("the replica's link is up", DEADLINE, || {
            r.info_field("replication", "master_link_status").as_deref() == Some("up")
        });
        eventually("the primary counts its replica", DEADLINE, || {
            p.info_field("replication", "connected_slaves").as_deref() == Some("1")
        });
        let full_syncs = p.info_field("stats", "sync_full");
        // 32 MiB (received in place: staged, shared with the backlog) and
        // a 4 MiB value made by APPEND (framed by the journal, its record
        // shared with the backlog).
        let big = value(32 << 20, u8::from(persist));
        let half = value(2 << 20, 9);
        let pid = replica.pid().expect("our own replica");
        signal(pid, "STOP");
        let mut setter = Resp::new(&primary);
        setter.s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        setter.send_raw(&encode(&[b"SET", b"big", &big]));
        assert_eq!(setter.reply(), "+OK\r\n", "persist {persist}");
        for _ in 0..2 {
            setter.send_raw(&encode(&[b"APPEND", b"appended", &half]));
            setter.reply();
        }
        // The replica cannot have read any of it; the primary's one
        // worker answers all the same.
        let mut pinger = Resp::new(&primary);
        assert_eq!(pinger.call(&["PING"]), "+PONG\r\n", "persist {persist}");
        signal(pid, "CONT");
        let mut both = half.clone();
        both.extend_from_slice(&half);
        eventually("the replica has both values", DEADLINE, || r.call(&["EXISTS", "big", "appended"]) == ":2\r\n");
        assert!(get(&replica, "big") == bulk_of(&big), "persist {persist}: the SET's value on the replica");
        assert!(get(&replica, "appended") == bulk_of(&both), "persist {persist}: the APPEND's value on the replica");
        let offset = p.info_field("replication", "master_repl_offset");
        eventually("the replica's offset reaches the primary's", DEADLINE, || {
            r.info_field("replication", "master_repl_offset") == offset
        });
        // The link cut after the large records: the replica continues
        // from the backlog (its offset follows them), no full sync.
        assert_eq!(r.call(&["CLIENT", "KILL", "TYPE", "master"]), ":1\r\n");
        assert_eq!(p.call(&["SET", "after", "small"]), "+OK\r\n");
        eventually("the replica continues", DEADLINE, || get(&replica, "after") == bulk_of(b"small"));
        assert_eq!(p.info_field("stats", "sync_full"), full_syncs, "persist {persist}: a full sync");
        assert!(get(&replica, "big") == bulk_of(&big), "persist {persist}: the value after the partial resync");
        drop(replica);
        drop(primary);
        let _ = std::fs::remove_dir_all(&dir.0);
        std::fs::create_dir_all(&dir.0).unwrap();
    }
}
