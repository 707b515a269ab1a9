//! Replication of the FUNCTION libraries (issue 34 §5): a library loaded
//! before a replica attaches reaches it with the full sync; one loaded,
//! replaced or deleted afterwards reaches it in the stream (the log's
//! FUNCTIONS record); the replica's offset stays its primary's (the
//! record is counted once), a partial resync after a cut link goes on
//! from there, and the replica refuses FUNCTION LOAD of its own
//! (READONLY). Amalgam-only (its own stream format; Redis's replication
//! is tests/python/test_replication.py): skipped against memcached or an
//! external server.

mod common;

use common::resp::*;
use common::*;
use std::time::Duration;

/// How long a condition may take to become true (generous: nothing here
/// measures time).
const DEADLINE: Duration = Duration::from_secs(60);

#[test]
fn function_libraries_replicate() {
    if external_addr().is_some() || external_resp_addr().is_some() || binary().contains("memcached") {
        eprintln!("note: amalgam-only (its own replication stream); skipped");
        return;
    }
    let Some(primary) = resp_private(&["-t", "2"]) else { return };
    let mut p = Resp::new(&primary);
    let lib1 = "#!lua name=rlib1\nredis.register_function('rfn1', function() return 'one' end)";
    assert_eq!(p.call(&["FUNCTION", "LOAD", lib1]), bulk("rlib1"));
    let port = primary.resp_addr().port().to_string();
    let Some(replica) = resp_private(&["--replicaof", "127.0.0.1", &port]) else { return };
    let mut r = Resp::new(&replica);
    eventually("the replica's link is up", DEADLINE, || {
        r.info_field("replication", "master_link_status").as_deref() == Some("up")
    });
    eventually("the full sync's libraries", DEADLINE, || r.call(&["FCALL", "rfn1", "0"]) == bulk("one"));
    // Loaded, replaced and deleted on the primary while the replica is
    // attached: the stream carries each change.
    let lib2 =
        "#!lua name=rlib2\nredis.register_function('rfn2', function(keys) return redis.call('incr', keys[1]) end)";
    assert_eq!(p.call(&["FUNCTION", "LOAD", lib2]), bulk("rlib2"));
    eventually("a library loaded after the sync", DEADLINE, || {
        r.call(&["FUNCTION", "LIST", "LIBRARYNAME", "rlib2"]) != "*0\r\n"
    });
    // A function's writes replicate as their effects.
    assert_eq!(p.call(&["FCALL", "rfn2", "1", "rcount"]), int(1));
    eventually("the function's write", DEADLINE, || r.call(&["GET", "rcount"]) == bulk("1"));
    let lib1b = "#!lua name=rlib1\nredis.register_function('rfn1', function() return 'two' end)";
    assert_eq!(p.call(&["FUNCTION", "LOAD", "REPLACE", lib1b]), bulk("rlib1"));
    eventually("a replaced library", DEADLINE, || r.call(&["FCALL", "rfn1", "0"]) == bulk("two"));
    assert_eq!(p.call(&["FUNCTION", "DELETE", "rlib2"]), OK);
    eventually("a deleted library", DEADLINE, || {
        r.call(&["FCALL", "rfn2", "1", "x"]) == error("ERR Function not found")
    });
    // The replica's offset is its primary's: the record counts once.
    let offset = p.info_field("replication", "master_repl_offset");
    eventually("the replica's offset reaches the primary's", DEADLINE, || {
        r.info_field("replication", "master_repl_offset") == offset
    });
    assert_eq!(
        r.call(&["FUNCTION", "LOAD", "#!lua name=mine\nredis.register_function('mine', function() return 1 end)"]),
        error("READONLY You can't write against a read only replica.")
    );
    // A cut link: the replica continues from its offset (no full sync),
    // and the libraries it has stay.
    let full_syncs = p.info_field("stats", "sync_full");
    assert_eq!(r.call(&["CLIENT", "KILL", "TYPE", "master"]), ":1\r\n");
    assert_eq!(p.call(&["FUNCTION", "FLUSH"]), OK);
    eventually("the FLUSH after the partial resync", DEADLINE, || r.call(&["FUNCTION", "LIST"]) == "*0\r\n");
    assert_eq!(p.info_field("stats", "sync_full"), full_syncs, "a full sync after the cut");
}

/// Redis's numbered databases reach a replica each in its own database
/// (issue 35 §1): in the full sync and in the stream, which carry stored
/// keys (the database is in a key's stored form).
#[test]
fn databases_replicate() {
    if external_addr().is_some() || external_resp_addr().is_some() || binary().contains("memcached") {
        eprintln!("note: amalgam-only (its own replication stream); skipped");
        return;
    }
    let Some(primary) = resp_private(&["-t", "2"]) else { return };
    let mut p = Resp::new(&primary);
    assert_eq!(p.call(&["SELECT", "5"]), OK);
    assert_eq!(p.call(&["SET", "dk", "before"]), OK);
    let port = primary.resp_addr().port().to_string();
    let Some(replica) = resp_private(&["--replicaof", "127.0.0.1", &port]) else { return };
    let mut r = Resp::new(&replica);
    assert_eq!(r.call(&["SELECT", "5"]), OK);
    eventually("the full sync's key in database 5", DEADLINE, || r.call(&["GET", "dk"]) == bulk("before"));
    assert_eq!(p.call(&["SET", "dk", "after"]), OK);
    assert_eq!(p.call(&["MOVE", "dk", "6"]), int(1));
    assert_eq!(p.call(&["SELECT", "0"]), OK);
    assert_eq!(p.call(&["SET", "dk", "zero"]), OK);
    eventually("the streamed write in database 0", DEADLINE, || {
        r.call(&["SELECT", "0"]);
        r.call(&["GET", "dk"]) == bulk("zero")
    });
    assert_eq!(r.call(&["SELECT", "6"]), OK);
    eventually("the moved key in database 6", DEADLINE, || r.call(&["GET", "dk"]) == bulk("after"));
    assert_eq!(r.call(&["SELECT", "5"]), OK);
    assert_eq!(r.call(&["EXISTS", "dk"]), int(0), "moved out of database 5");
}
