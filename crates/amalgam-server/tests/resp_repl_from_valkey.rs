//! Amalgam and RDB version 11 (issue 37), end to end against a real
//! valkey-server 8.x (a fork of Redis 7.2 writing its format: listpack
//! sets, streams whose consumers carry an active time): Amalgam follows it
//! as a primary through both sync forms with every type, then its
//! command stream and a partial resync; RESTORE takes its DUMP payloads
//! (version 11 footer, as Redis 7.2's RESTORE does); an Amalgam started
//! on its `dump.rdb` serves the same keys; and a valkey-server replica of
//! Amalgam loads the version 10 RDB Amalgam writes and follows its stream.
//!
//! Needs a valkey-server binary (`AMALGAM_TEST_VALKEY_SERVER`, else
//! `valkey-server` on PATH; Debian bookworm-backports' `valkey-server`
//! package is 8.0.1, which `scripts/fetch-valkey.sh` unpacks and
//! `scripts/test.sh` sets); each test is skipped with a note without one. In
//! the suite's Redis pass (`AMALGAM_TEST_RESP_ADDR`) the Amalgam side is
//! played by a valkey-server of the test's own, so the expectations are
//! Valkey's own (Redis 7.0, which refuses version 11, cannot play it).
mod common;
use common::contents::*;
use common::own::{valkey_server, Own};
use common::resp::*;
use common::*;
use std::net::TcpStream;

fn connect(own: &Own) -> Resp {
    Resp::from_stream(TcpStream::connect(own.addr()).expect("connect"))
}

/// The server under test with `args`: an amalgam, or in the Redis pass a
/// valkey-server (module notes).
enum Side {
    Amalgam(Server),
    Valkey(Own),
}

impl Side {
    fn start(args: &[&str]) -> Option<Side> {
        if external_resp_addr().is_some() {
            return valkey_server(args).map(Side::Valkey);
        }
        resp_private(args).map(Side::Amalgam)
    }

    fn connect(&self) -> Resp {
        let addr = match self {
            Side::Amalgam(s) => s.resp_addr(),
            Side::Valkey(o) => o.addr(),
        };
        Resp::from_stream(TcpStream::connect(addr).expect("connect"))
    }
}

/// A stream consumer group with one pending entry per stream, so the
/// sync carries groups, consumers and their PELs (type 21's part).
fn groups(c: &mut Resp, round: usize) {
    for db in DBS {
        assert_eq!(c.call(&["SELECT", db]), "+OK\r\n");
        for i in 0..5 {
            let k = format!("x:{round}:{i}");
            assert_eq!(c.call(&["XGROUP", "CREATE", &k, "g", "0"]), "+OK\r\n");
            let v = call(c, &["XREADGROUP", "GROUP", "g", "alice", "COUNT", "1", "STREAMS", &k, ">"]);
            assert_eq!(v.array().len(), 1, "{k}: {v:?}");
        }
    }
    assert_eq!(c.call(&["SELECT", "0"]), "+OK\r\n");
}

/// What the groups hold, as both servers answer it: per stream its
/// XPENDING summary and XINFO GROUPS' pending and last id.
fn pending(c: &mut Resp, round: usize) -> Vec<String> {
    let mut out = Vec::new();
    for db in DBS {
        assert_eq!(c.call(&["SELECT", db]), "+OK\r\n");
        for i in 0..5 {
            let k = format!("x:{round}:{i}");
            out.push(c.call(&["XPENDING", &k, "g"]));
            out.push(c.call(&["XPENDING", &k, "g", "-", "+", "10", "alice"]).lines().take(3).collect());
        }
    }
    assert_eq!(c.call(&["SELECT", "0"]), "+OK\r\n");
    out
}

fn follows_a_valkey_primary(primary_args: &[&str]) {
    let Some(primary) = valkey_server(primary_args) else { return };
    let mut p = connect(&primary);
    // Valkey writes version 11's encodings for these: a small set of
    // strings as a listpack (type 20), streams as type 21.
    write_round(&mut p, 0);
    groups(&mut p, 0);
    assert_eq!(call(&mut p, &["OBJECT", "ENCODING", "set:0:0"]).bulk(), "listpack");
    write_round(&mut p, 1);
    let port = primary.addr().port().to_string();
    let Some(replica) = Side::start(&["--replicaof", "127.0.0.1", &port]) else { return };
    let mut r = replica.connect();
    eventually("the replica streams", CONVERGE, || {
        r.info_field("replication", "master_link_status").as_deref() == Some("up")
    });
    converges(&mut p, &mut r, "after the full sync");
    assert_eq!(pending(&mut r, 0), pending(&mut p, 0), "the groups after the full sync");
    // The stream after it.
    write_round(&mut p, 2);
    assert_eq!(p.call(&["WAIT", "1", "20000"]), int(1));
    converges(&mut p, &mut r, "after the stream");
    assert_eq!(
        r.info_field("replication", "master_repl_offset"),
        p.info_field("replication", "master_repl_offset"),
        "the replica's offset is its primary's"
    );
    // A dropped link continues by a partial resync.
    let stat = |p: &mut Resp, name: &str| as_int(&format!(":{}\r\n", p.info_field("stats", name).unwrap()));
    let (full, partial) = (stat(&mut p, "sync_full"), stat(&mut p, "sync_partial_ok"));
    assert_eq!(r.call(&["CLIENT", "KILL", "TYPE", "master"]), int(1));
    write_round(&mut p, 3);
    eventually("the link is back", CONVERGE, || {
        r.info_field("replication", "master_link_status").as_deref() == Some("up")
    });
    assert_eq!(p.call(&["WAIT", "1", "20000"]), int(1));
    converges(&mut p, &mut r, "after the partial resync");
    assert_eq!(stat(&mut p, "sync_partial_ok"), partial + 1);
    assert_eq!(stat(&mut p, "sync_full"), full);
}

#[test]
fn follows_a_valkey_8_primary_through_a_diskless_sync() {
    follows_a_valkey_primary(&["--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0"]);
}

#[test]
fn follows_a_valkey_8_primary_through_a_disk_based_sync() {
    follows_a_valkey_primary(&["--repl-diskless-sync", "no"]);
}

/// A key's DUMP payload (binary, so read as bytes).
fn dump(c: &mut Resp, k: &str) -> Vec<u8> {
    c.send(&["DUMP", k]);
    let reply = c.reply_bytes();
    let at = reply.iter().position(|&b| b == b'\r').expect("a bulk");
    let n: usize = std::str::from_utf8(&reply[1..at]).expect("a length").parse().expect("a length");
    reply[at + 2..at + 2 + n].to_vec()
}

#[test]
fn restore_takes_valkey_8_dump_payloads() {
    let Some(source) = valkey_server(&[]) else { return };
    let Some(target) = Side::start(&[]) else { return };
    let (mut s, mut t) = (connect(&source), target.connect());
    write_round(&mut s, 0);
    groups(&mut s, 0);
    let want = contents(&mut s, "0");
    assert!(want.len() > 300, "{}", want.len());
    let mut footers = std::collections::BTreeSet::new();
    for k in want.keys() {
        let payload = dump(&mut s, k);
        let n = payload.len();
        footers.insert(u16::from_le_bytes([payload[n - 10], payload[n - 9]]));
        let pttl = s.call(&["PTTL", k]);
        let ttl = if pttl.starts_with(":-") { "0".to_string() } else { pttl[1..pttl.len() - 2].to_string() };
        let mut cmd =
            format!("*4\r\n$7\r\nRESTORE\r\n${}\r\n{k}\r\n${}\r\n{ttl}\r\n${}\r\n", k.len(), ttl.len(), n).into_bytes();
        cmd.extend_from_slice(&payload);
        cmd.extend_from_slice(b"\r\n");
        assert_eq!(t.call_raw(&cmd), "+OK\r\n", "RESTORE {k}");
    }
    assert_eq!(footers.into_iter().collect::<Vec<_>>(), vec![11], "Valkey 8's DUMP writes RDB version 11");
    let got = contents(&mut t, "0");
    // TTLs moved by the time between two reads: compare without them.
    let strip = |m: &std::collections::BTreeMap<String, String>| -> Vec<(String, String)> {
        m.iter().map(|(k, v)| (k.clone(), v.rsplit_once(' ').map_or(v.clone(), |(a, _)| a.to_string()))).collect()
    };
    assert_eq!(strip(&got), strip(&want));
    assert_eq!(pending(&mut t, 0)[..10], pending(&mut s, 0)[..10]);
}

#[test]
fn amalgam_serves_a_dump_rdb_valkey_8_saved() {
    let dir = TempDir::new("rdb-from-valkey");
    let dir_arg = dir.0.to_string_lossy().into_owned();
    let Some(source) = valkey_server(&["--dir", &dir_arg]) else { return };
    let mut s = connect(&source);
    write_round(&mut s, 0);
    groups(&mut s, 0);
    write_round(&mut s, 1);
    assert_eq!(s.call(&["SAVE"]), "+OK\r\n");
    let want: Vec<_> = DBS.iter().map(|db| contents(&mut s, db)).collect();
    let want_pending = pending(&mut s, 0);
    drop(s);
    drop(source);
    let head = std::fs::read(dir.0.join("dump.rdb")).expect("valkey saved dump.rdb");
    assert_eq!(&head[..9], b"REDIS0011");
    let Some(server) = Side::start(&["--dir", &dir_arg]) else { return };
    let mut a = server.connect();
    let got: Vec<_> = DBS.iter().map(|db| contents(&mut a, db)).collect();
    assert_eq!(got, want);
    assert_eq!(pending(&mut a, 0), want_pending);
}

/// The other way: a valkey-server 8 replica of Amalgam loads what
/// Amalgam writes (RDB version 10, Redis 7.0's: the version every peer
/// reads) and follows its command stream.
#[test]
fn a_valkey_8_replica_follows_amalgam() {
    let Some(primary) = Side::start(&[]) else { return };
    let mut p = primary.connect();
    write_round(&mut p, 0);
    groups(&mut p, 0);
    write_round(&mut p, 1);
    let port = match &primary {
        Side::Amalgam(s) => s.resp_addr().port(),
        Side::Valkey(o) => o.addr().port(),
    }
    .to_string();
    let Some(replica) = valkey_server(&["--replicaof", "127.0.0.1", &port]) else { return };
    let mut r = connect(&replica);
    eventually("the replica streams", CONVERGE, || {
        r.info_field("replication", "master_link_status").as_deref() == Some("up")
    });
    converges(&mut p, &mut r, "after the full sync");
    assert_eq!(pending(&mut r, 0), pending(&mut p, 0), "the groups after the full sync");
    write_round(&mut p, 2);
    assert_eq!(p.call(&["WAIT", "1", "20000"]), int(1));
    converges(&mut p, &mut r, "after the stream");
}
