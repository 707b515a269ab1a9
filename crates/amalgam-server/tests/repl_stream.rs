//! Replication of streams (issue 36 §1): a stream written before a
//! replica attaches reaches it with the full sync (the value whole), one
//! written afterwards in the stream of records (XADD, XDEL, XTRIM, XSETID
//! as their effects; group commands as the groups' state), and the
//! replica answers every read as its primary. Amalgam-only (its own
//! replication stream): skipped against memcached or an external server.

mod common;

use common::resp::*;
use common::*;
use std::time::Duration;

/// How long a condition may take to become true (generous: nothing here
/// measures time).
const DEADLINE: Duration = Duration::from_secs(60);

/// What a client sees of the stream `k` and its group `g` (no times).
fn view(c: &mut Resp, k: &str) -> Vec<String> {
    let mut v = vec![c.call(&["XRANGE", k, "-", "+"]), c.call(&["XLEN", k]), c.call(&["XPENDING", k, "g"])];
    let info = call(c, &["XINFO", "STREAM", k]);
    // last-generated-id, max-deleted-entry-id, entries-added.
    v.extend([7, 9, 11].iter().map(|&i| format!("{:?}", info.array()[i])));
    let groups = call(c, &["XINFO", "GROUPS", k]);
    v.push(format!("{groups:?}"));
    let ext = call(c, &["XPENDING", k, "g", "-", "+", "100"]);
    v.extend(ext.array().iter().map(|r| format!("{:?} {:?} {:?}", r.array()[0], r.array()[1], r.array()[3])));
    v
}

#[test]
fn streams_replicate() {
    if external_addr().is_some() || external_resp_addr().is_some() || binary().contains("memcached") {
        eprintln!("note: amalgam-only (its own replication stream); skipped");
        return;
    }
    let Some(primary) = resp_private(&["-t", "2"]) else { return };
    let mut p = Resp::new(&primary);
    for i in 1..=150 {
        p.call(&["XADD", "rs", &format!("1-{i}"), "f", &i.to_string()]);
    }
    assert_eq!(p.call(&["XGROUP", "CREATE", "rs", "g", "0"]), OK);
    p.call(&["XREADGROUP", "GROUP", "g", "alice", "COUNT", "10", "STREAMS", "rs", ">"]);
    let port = primary.resp_addr().port().to_string();
    let Some(replica) = resp_private(&["--replicaof", "127.0.0.1", &port]) else { return };
    let mut r = Resp::new(&replica);
    eventually("the replica's link is up", DEADLINE, || {
        r.info_field("replication", "master_link_status").as_deref() == Some("up")
    });
    let want = view(&mut p, "rs");
    eventually("the full sync's stream", DEADLINE, || view(&mut r, "rs") == want);
    // Writes after the sync: each one's record.
    p.call(&["XADD", "rs", "MAXLEN", "~", "100", "2-0", "g", "x"]);
    p.call(&["XDEL", "rs", "1-120", "1-121"]);
    p.call(&["XTRIM", "rs", "MINID", "1-60"]);
    p.call(&["XREADGROUP", "GROUP", "g", "bob", "COUNT", "5", "STREAMS", "rs", ">"]);
    p.call(&["XACK", "rs", "g", "1-3", "1-4"]);
    p.call(&["XCLAIM", "rs", "g", "carol", "0", "1-5"]);
    p.call(&["XSETID", "rs", "3-0", "ENTRIESADDED", "500"]);
    p.call(&["XADD", "rs2", "*", "a", "b"]);
    let want = view(&mut p, "rs");
    assert!(want[0].contains("2-0") && !want[0].contains("1-120") && want[2].starts_with("*4\r\n:12\r\n"), "{want:?}");
    eventually("the stream's writes", DEADLINE, || view(&mut r, "rs") == want);
    eventually("a stream created after the sync", DEADLINE, || r.call(&["XLEN", "rs2"]) == int(1));
    assert_eq!(
        r.call(&["XADD", "rs", "*", "no", "way"]),
        error("READONLY You can't write against a read only replica.")
    );
}
