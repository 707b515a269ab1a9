//! Amalgam as a replica of redis-server (issue 37 §1): the handshake, the
//! RDB full sync in both of Redis's forms (diskless `$EOF:<mark>` and
//! disk-based `$<len>`), the command stream after it (SELECT, MULTI/EXEC,
//! expiries, every type), WAIT answered through REPLCONF GETACK, and a
//! partial resync after the link drops. The primary is always a
//! redis-server of the test's own; the replica is an amalgam, or in CI's
//! Redis pass (every `resp_*` file) a redis-server with the same options,
//! which proves the expectations are Redis's own replica's.
mod common;
use common::contents::*;
use common::own::{own_server, redis_server, Own};
use common::resp::*;
use common::*;
use std::net::TcpStream;

fn connect(own: &Own) -> Resp {
    Resp::from_stream(TcpStream::connect(own.addr()).expect("connect"))
}

/// A redis-server primary with `primary_args` holding two rounds of
/// writes, and a replica of it (an amalgam, or a redis-server in the
/// Redis pass) once streaming.
fn pair(primary_args: &[&str]) -> Option<(Own, Own)> {
    let primary = redis_server(primary_args)?;
    let mut p = connect(&primary);
    write_round(&mut p, 0);
    write_round(&mut p, 1);
    let port = primary.addr().port().to_string();
    let replica = own_server(&["--replicaof", "127.0.0.1", &port])?;
    let mut r = connect(&replica);
    eventually("the replica streams", CONVERGE, || {
        r.info_field("replication", "master_link_status").as_deref() == Some("up")
    });
    Some((primary, replica))
}

fn follows_a_redis_primary(primary_args: &[&str]) {
    let Some((primary, replica)) = pair(primary_args) else { return };
    let (mut p, mut r) = (connect(&primary), connect(&replica));
    converges(&mut p, &mut r, "after the full sync");
    assert_eq!(r.call(&["SET", "mine", "1"]), "-READONLY You can't write against a read only replica.\r\n");
    // The stream: every type, SELECT, MULTI/EXEC, expiries.
    write_round(&mut p, 2);
    // WAIT is answered through REPLCONF GETACK.
    assert_eq!(p.call(&["WAIT", "1", "20000"]), int(1));
    converges(&mut p, &mut r, "after the stream");
    assert_eq!(
        r.info_field("replication", "master_repl_offset"),
        p.info_field("replication", "master_repl_offset"),
        "the replica's offset is its primary's"
    );
    // The primary lists it, as it lists a Redis replica.
    assert_eq!(p.info_field("replication", "connected_slaves").as_deref(), Some("1"));
    // A dropped link continues where it stopped: a partial resync, no
    // full one. (Counted across the drop: a fresh redis-server replica
    // of 7.0 counts its first sync as a partial one.)
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
    // The move's last step: the replica becomes the primary, with every
    // key, and takes writes.
    let before = contents(&mut r, "0");
    assert_eq!(r.call(&["REPLICAOF", "NO", "ONE"]), "+OK\r\n");
    assert_eq!(r.call(&["SET", "mine", "1"]), "+OK\r\n");
    assert_eq!(r.call(&["DEL", "mine"]), int(1));
    assert_eq!(contents(&mut r, "0"), before);
}

#[test]
fn follows_a_redis_primary_through_a_diskless_sync() {
    follows_a_redis_primary(&["--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0"]);
}

#[test]
fn follows_a_redis_primary_through_a_disk_based_sync() {
    follows_a_redis_primary(&["--repl-diskless-sync", "no"]);
}

#[test]
fn a_redis_primary_s_function_libraries_reach_the_replica() {
    let Some(primary) = redis_server(&["--repl-diskless-sync-delay", "0"]) else { return };
    let mut p = connect(&primary);
    let lib = "#!lua name=before\nredis.register_function{function_name='one', callback=function() return 1 end, \
               flags={'no-writes'}}";
    assert_eq!(p.call(&["FUNCTION", "LOAD", lib]), bulk("before"));
    let port = primary.addr().port().to_string();
    let Some(replica) = own_server(&["--replicaof", "127.0.0.1", &port]) else { return };
    let mut r = connect(&replica);
    eventually("the RDB's library is loaded", CONVERGE, || r.call(&["FCALL_RO", "one", "0"]) == int(1));
    let lib = "#!lua name=after\nredis.register_function{function_name='two', callback=function() return 2 end, \
               flags={'no-writes'}}";
    assert_eq!(p.call(&["FUNCTION", "LOAD", lib]), bulk("after"));
    eventually("the streamed library is loaded", CONVERGE, || r.call(&["FCALL_RO", "two", "0"]) == int(2));
}
