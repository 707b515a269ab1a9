//! Commands from different connections run in the order their bytes
//! arrived (issue 39 §1): Redis's "BRPOPLPUSH with multiple blocked
//! clients" (tests/unit/type/list.tcl), repeated, on one worker. Two
//! deferred clients send BRPOPLPUSH on the same empty list, the first into
//! a string key, then a third client pushes one element: the first client
//! must run first (and block), so the push serves it, its move fails with
//! WRONGTYPE, and the element goes to the second. Served out of order the
//! second takes the element and the first waits for ever (the test hung 2
//! runs in 5 while the event loop served ready connections by slab token:
//! a client accepted later had the lower token whenever it reused a freed
//! slot, and each run's new clients do).
//!
//! Runs against an amalgam with one worker, whose guarantee this is
//! (docs/architecture.md § Order); CI also runs it against Debian's
//! redis-server 7 (`AMALGAM_TEST_RESP_ADDR`), which proves the
//! expectation is Redis's own.
mod common;
use common::resp::*;
use common::*;

/// Runs of the scenario (the measure: 100 runs, 0 hangs).
const RUNS: usize = 100;

const WRONGTYPE: &str = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";

/// An amalgam with one worker, or the external server when one is named.
fn one_worker() -> Option<Server> {
    resp_private(&["-t", "1"]).or_else(resp_server)
}

#[test]
fn brpoplpush_with_multiple_blocked_clients_runs_in_arrival_order() {
    let Some(server) = one_worker() else { return };
    let mut r = Resp::new(&server);
    let (list, t1, t2) = (key("order:blist{t}"), key("order:target1{t}"), key("order:target2{t}"));
    let mut failed = Vec::new();
    for run in 0..RUNS {
        assert_eq!(r.call(&["DEL", &list, &t1, &t2]).as_bytes()[0], b':');
        assert_eq!(r.call(&["SET", &t1, "nolist"]), "+OK\r\n");
        // Fresh deferred clients each run, as the Tcl test makes them.
        let mut rd1 = Resp::new(&server);
        let mut rd2 = Resp::new(&server);
        rd1.send(&["BRPOPLPUSH", &list, &t1, "0"]);
        rd2.send(&["BRPOPLPUSH", &list, &t2, "0"]);
        r.send(&["LPUSH", &list, "foo"]);
        let pushed = r.reply();
        let first = rd1.reply();
        let second = rd2.reply();
        let moved = r.call(&["LRANGE", &t2, "0", "-1"]);
        if pushed != ":1\r\n" || first != WRONGTYPE || second != bulk("foo") || moved != "*1\r\n$3\r\nfoo\r\n" {
            failed.push(format!("run {run}: LPUSH {pushed:?}, rd1 {first:?}, rd2 {second:?}, target2 {moved:?}"));
        }
    }
    assert!(failed.is_empty(), "{} of {RUNS} runs out of order:\n{}", failed.len(), failed.join("\n"));
}
