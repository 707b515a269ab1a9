//! Persistence of streams (issue 36 §1), black box: the real `amalgam`
//! with `--dir`, killed with SIGKILL and started again on its directory.
//! A stream is always an object: its creation journals the whole value,
//! every later write one op record (XADD with its ID and the trim's
//! effect, XDEL, XTRIM, XSETID), and a snapshot the value. What a client
//! sees before and after — XRANGE of every stream, XLEN, and the IDs
//! XADD refuses — must agree, from the log alone, a snapshot alone, and
//! both. Amalgam-only (`--dir` is Amalgam's): skipped with a note when the
//! harness names another server.

mod common;
#[path = "common/persist.rs"]
mod persist;

use common::external_resp_addr;
use common::resp::Resp;
use persist::Node;

/// An amalgam of our own persisting with `--fsync always`; None (with a
/// note) when the harness names another server.
fn start(name: &str) -> Option<Node> {
    if external_resp_addr().is_some() {
        eprintln!("note: an external server is named; persistence tests need an amalgam of their own: skipped");
        return None;
    }
    Node::start(&format!("stream-{name}"), &["--fsync", "always"])
}

const KEYS: [&str; 4] = ["s1", "s2", "s3", "s4"];

/// What a client sees of the streams: contents, length, and the last ID
/// (the ID XADD refuses as too small is the smallest above it; probed at
/// the last ID itself, which must be refused, and one past it, which a
/// MULTI … DISCARD does not apply).
fn dump(c: &mut Resp) -> Vec<String> {
    KEYS.iter()
        .map(|k| {
            let range = c.call(&["XRANGE", k, "-", "+"]);
            let len = c.call(&["XLEN", k]);
            let ty = c.call(&["TYPE", k]);
            let at = c.call(&["PEXPIRETIME", k]);
            format!("{k}: {} {} {} {}", ty.trim_end(), len.trim_end(), at.trim_end(), range)
        })
        .collect()
}

fn writes(c: &mut Resp, round: u64) {
    let base = 1000 * (round + 1);
    for i in 0..300u64 {
        let id = format!("{}-{}", base + i / 3, i % 3);
        let f = if i % 7 == 0 { "other" } else { "f" };
        c.call(&["XADD", "s1", &id, f, &i.to_string(), "g", "x"]);
        if i % 2 == 0 {
            c.call(&["XADD", "s2", "MAXLEN", "~", "120", &id, "f", &i.to_string()]);
        }
    }
    c.call(&["XADD", "s3", "MAXLEN", "=", "5", &format!("{base}-0"), "a", "1"]);
    c.call(&["XADD", "s3", "MINID", "=", &format!("{base}-0"), &format!("{base}-1"), "a", "2"]);
    for i in (0..300u64).step_by(5) {
        c.call(&["XDEL", "s1", &format!("{}-{}", base + i / 3, i % 3)]);
    }
    c.call(&["XTRIM", "s1", "MINID", &format!("{}", base + 10)]);
    c.call(&["XTRIM", "s1", "MAXLEN", "~", "150"]);
    c.call(&["XTRIM", "s2", "MAXLEN", "=", "77"]);
    c.call(&["XADD", "s4", &format!("{base}-5"), "only", "one"]);
    c.call(&["XDEL", "s4", &format!("{base}-5")]);
    assert_eq!(
        c.call(&[
            "XSETID",
            "s4",
            &format!("{}-9", base + 1),
            "ENTRIESADDED",
            "50",
            "MAXDELETEDID",
            &format!("{base}-5")
        ]),
        "+OK\r\n"
    );
    c.call(&["PEXPIRE", "s3", "100000000"]);
}

/// The last IDs hold: an XADD at each stream's last ID is refused.
fn last_ids_hold(c: &mut Resp, round: u64) {
    let base = 1000 * (round + 1);
    let too_small = "-ERR The ID specified in XADD is equal or smaller than the target stream top item\r\n";
    assert_eq!(c.call(&["XADD", "s4", &format!("{}-9", base + 1), "a", "1"]), too_small);
    assert_eq!(c.call(&["XADD", "s1", &format!("{}-2", base + 99), "a", "1"]), too_small);
}

#[test]
fn streams_survive_a_kill_from_the_log() {
    let Some(mut node) = start("log") else { return };
    let mut c = node.resp();
    writes(&mut c, 0);
    let before = dump(&mut c);
    // The writes did what they say (else this tests less).
    assert!(before[1].starts_with("s2: +stream :77 "), "{:.80}", before[1]);
    assert!(before[2].starts_with("s3: +stream :2 "), "{:.80}", before[2]);
    assert!(before[3].starts_with("s4: +stream :0 "), "{:.80}", before[3]);
    node.crash_and_restart();
    let mut c = node.resp();
    assert_eq!(before, dump(&mut c), "log recovery");
    assert!(!node.stderr().contains("warning"), "{}", node.stderr());
    last_ids_hold(&mut c, 0);
}

#[test]
fn streams_survive_from_a_snapshot_then_the_log() {
    let Some(mut node) = start("snap") else { return };
    let mut c = node.resp();
    writes(&mut c, 0);
    assert_eq!(c.call(&["SAVE"]), "+OK\r\n");
    let before = dump(&mut c);
    node.crash_and_restart();
    let mut c = node.resp();
    assert_eq!(before, dump(&mut c), "snapshot recovery");
    last_ids_hold(&mut c, 0);
    // Writes after the snapshot replay on the snapshot's values.
    writes(&mut c, 1);
    let before = dump(&mut c);
    node.crash_and_restart();
    let mut c = node.resp();
    assert_eq!(before, dump(&mut c), "snapshot + log");
    assert!(!node.stderr().contains("warning"), "{}", node.stderr());
    last_ids_hold(&mut c, 1);
}

/// What a client sees of `s1`'s groups: XINFO GROUPS and every pending
/// entry's ID, owner and delivery count (not its idle time).
fn groups(c: &mut Resp) -> Vec<String> {
    let mut out = vec![c.call(&["XINFO", "GROUPS", "s1"])];
    for g in ["g1", "g2"] {
        out.push(c.call(&["XPENDING", "s1", g]));
        let ext = common::resp::call(c, &["XPENDING", "s1", g, "-", "+", "1000"]);
        for row in ext.array() {
            let r = row.array();
            out.push(format!("{} {} {}", r[0].bulk(), r[1].bulk(), r[3].int()));
        }
        let consumers = common::resp::call(c, &["XINFO", "CONSUMERS", "s1", g]);
        for m in consumers.array() {
            let m = m.array();
            out.push(format!("{} {}", m[1].bulk(), m[3].int()));
        }
    }
    out
}

#[test]
fn consumer_groups_survive_the_log_and_a_snapshot() {
    let Some(mut node) = start("groups") else { return };
    let mut c = node.resp();
    writes(&mut c, 0);
    assert_eq!(c.call(&["XGROUP", "CREATE", "s1", "g1", "0"]), "+OK\r\n");
    assert_eq!(c.call(&["XGROUP", "CREATE", "s1", "g2", "$", "ENTRIESREAD", "3"]), "+OK\r\n");
    c.call(&["XREADGROUP", "GROUP", "g1", "alice", "COUNT", "20", "STREAMS", "s1", ">"]);
    c.call(&["XREADGROUP", "GROUP", "g1", "bob", "COUNT", "7", "STREAMS", "s1", ">"]);
    c.call(&["XREADGROUP", "GROUP", "g1", "carol", "NOACK", "COUNT", "3", "STREAMS", "s1", ">"]);
    c.call(&["XREADGROUP", "GROUP", "g1", "alice", "COUNT", "5", "STREAMS", "s1", "0"]);
    let pending = common::resp::call(&mut c, &["XPENDING", "s1", "g1", "-", "+", "5"]);
    let first = pending.array()[0].array()[0].bulk().to_string();
    let third = pending.array()[2].array()[0].bulk().to_string();
    c.call(&["XACK", "s1", "g1", &first]);
    c.call(&["XCLAIM", "s1", "g1", "dave", "0", &third, "RETRYCOUNT", "4"]);
    c.call(&["XAUTOCLAIM", "s1", "g1", "erin", "0", "0", "COUNT", "3"]);
    c.call(&["XGROUP", "CREATECONSUMER", "s1", "g2", "zed"]);
    c.call(&["XGROUP", "DELCONSUMER", "s1", "g1", "bob"]);
    let before = groups(&mut c);
    assert!(before.len() > 20, "{before:?}");
    node.crash_and_restart();
    let mut c = node.resp();
    assert_eq!(before, groups(&mut c), "log recovery");
    assert_eq!(c.call(&["SAVE"]), "+OK\r\n");
    c.call(&["XREADGROUP", "GROUP", "g2", "zed", "STREAMS", "s1", ">"]);
    c.call(&["XADD", "s1", "*", "new", "entry"]);
    c.call(&["XREADGROUP", "GROUP", "g2", "zed", "STREAMS", "s1", ">"]);
    let before = groups(&mut c);
    node.crash_and_restart();
    let mut c = node.resp();
    assert_eq!(before, groups(&mut c), "snapshot + log recovery");
    assert!(!node.stderr().contains("warning"), "{}", node.stderr());
}
