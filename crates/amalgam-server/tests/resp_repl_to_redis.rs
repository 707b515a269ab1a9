//! redis-server as a replica of Amalgam (issue 37 §2): the RDB full sync
//! from the fork-less snapshot, then Redis's command stream (every type,
//! two databases, expiries, deletions, MULTI/EXEC, FUNCTION libraries),
//! WAIT counting the Redis replica, and a partial resync (PSYNC
//! continuing) after the link drops.
//! The replica is always a redis-server of the test's own; the primary is
//! an amalgam, or in CI's Redis pass (every `resp_*` file) a redis-server
//! with the same options, which proves the expectations are what a Redis
//! replica gets from a Redis primary.
mod common;
use common::contents::*;
use common::own::{own_server, redis_server, Own};
use common::resp::*;
use common::*;
use std::net::TcpStream;

fn connect(own: &Own) -> Resp {
    Resp::from_stream(TcpStream::connect(own.addr()).expect("connect"))
}

#[test]
fn a_redis_replica_follows_amalgam() {
    let Some(primary) = own_server(&[]) else { return };
    let mut p = connect(&primary);
    // A flush before the replica comes: the snapshot of its full sync
    // re-states the flush fence, which must not reach it as a FLUSHALL.
    p.call(&["SET", "gone", "1"]);
    assert_eq!(p.call(&["FLUSHALL"]), "+OK\r\n");
    write_round(&mut p, 0);
    write_round(&mut p, 1);
    let lib = "#!lua name=before\nredis.register_function{function_name='one', callback=function() return 1 end, \
               flags={'no-writes'}}";
    assert_eq!(p.call(&["FUNCTION", "LOAD", lib]), bulk("before"));
    let port = primary.addr().port().to_string();
    let Some(replica) = redis_server(&["--replicaof", "127.0.0.1", &port]) else { return };
    let mut r = connect(&replica);
    eventually("the replica streams", CONVERGE, || {
        r.info_field("replication", "master_link_status").as_deref() == Some("up")
    });
    converges(&mut p, &mut r, "after the full sync");
    assert_eq!(r.call(&["FCALL_RO", "one", "0"]), int(1));
    // The stream: every type, SELECT, MULTI/EXEC, expiries, deletions.
    write_round(&mut p, 2);
    // Set and deleted at once, from two connections: the replica must end
    // without them (the stream sends state read under the key's lock).
    let mut q = connect(&primary);
    for i in 0..100 {
        let k = format!("brief:{i}");
        assert_eq!(p.call(&["SET", &k, "1"]), "+OK\r\n");
        assert_eq!(q.call(&["DEL", &k]), int(1));
    }
    let lib = "#!lua name=after\nredis.register_function{function_name='two', callback=function() return 2 end, \
               flags={'no-writes'}}";
    assert_eq!(p.call(&["FUNCTION", "LOAD", lib]), bulk("after"));
    // WAIT counts the Redis replica (its acks are in its own offsets).
    assert_eq!(p.call(&["WAIT", "1", "20000"]), int(1));
    converges(&mut p, &mut r, "after the stream");
    assert_eq!(r.call(&["FCALL_RO", "two", "0"]), int(2));
    assert_eq!(p.info_field("replication", "connected_slaves").as_deref(), Some("1"));
    assert_eq!(r.call(&["SET", "mine", "1"]), "-READONLY You can't write against a read only replica.\r\n");
    // A dropped link continues where the replica was (PSYNC answered
    // +CONTINUE, no full sync), with writes made meanwhile, and the
    // stream goes on.
    let stat = |p: &mut Resp, f: &str| p.info_field("stats", f).and_then(|v| v.parse::<u64>().ok()).expect(f);
    let (full, partial) = (stat(&mut p, "sync_full"), stat(&mut p, "sync_partial_ok"));
    assert_eq!(r.call(&["CLIENT", "KILL", "TYPE", "master"]), int(1));
    write_round(&mut p, 3);
    eventually("the link is back", CONVERGE, || {
        r.info_field("replication", "master_link_status").as_deref() == Some("up")
    });
    assert_eq!(p.call(&["WAIT", "1", "20000"]), int(1));
    converges(&mut p, &mut r, "after the resync");
    assert_eq!(stat(&mut p, "sync_full"), full, "no full sync after the drop");
    assert_eq!(stat(&mut p, "sync_partial_ok"), partial + 1, "the replica continued");
    // Again, with a FLUSHALL and writes after it in what it missed.
    assert_eq!(r.call(&["CLIENT", "KILL", "TYPE", "master"]), int(1));
    assert_eq!(p.call(&["FLUSHALL"]), "+OK\r\n");
    write_round(&mut p, 4);
    eventually("the link is back", CONVERGE, || {
        r.info_field("replication", "master_link_status").as_deref() == Some("up")
    });
    assert_eq!(p.call(&["WAIT", "1", "20000"]), int(1));
    converges(&mut p, &mut r, "after a resync across a FLUSHALL");
    assert_eq!(stat(&mut p, "sync_full"), full);
    assert_eq!(stat(&mut p, "sync_partial_ok"), partial + 2);
    assert_eq!(p.call(&["FLUSHALL"]), "+OK\r\n");
    converges(&mut p, &mut r, "after FLUSHALL");
}
