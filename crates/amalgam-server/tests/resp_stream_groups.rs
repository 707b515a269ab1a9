//! Stream consumer groups, black-box: XGROUP, XREADGROUP (new entries,
//! history, NOACK, BLOCK across connections), XACK, XPENDING, XCLAIM,
//! XAUTOCLAIM, XINFO STREAM/GROUPS/CONSUMERS with Redis 7.0's
//! entries-read and lag. Every expectation is Redis 7.0.15's (run this
//! file against redis-server too: AMALGAM_TEST_RESP_ADDR=127.0.0.1:PORT).
mod common;
use common::resp::*;
use common::*;
use std::time::Duration;

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

fn entry(id: &str, pairs: &[&str]) -> V {
    V::Array(vec![V::Bulk(id.into()), V::Array(pairs.iter().map(|p| V::Bulk(p.to_string())).collect())])
}

/// `[[key, entries]]`, one stream's read.
fn read_of(key: &str, entries: Vec<V>) -> V {
    V::Array(vec![V::Array(vec![V::Bulk(key.into()), V::Array(entries)])])
}

/// A map reply (RESP2: a flat array) as (field, value) pairs.
fn fields(v: &V) -> Vec<(String, V)> {
    v.array().chunks(2).map(|p| (p[0].bulk().to_string(), p[1].clone())).collect()
}

fn field(v: &V, name: &str) -> V {
    fields(v).into_iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("no {name} in {v:?}")).1
}

/// A stream `k` with entries 1-1 … 1-n (`f` = i) and a group `g` at 0.
fn stream_with_group(c: &mut Resp, k: &str, n: usize) {
    for i in 1..=n {
        assert_eq!(c.call(&["XADD", k, &format!("1-{i}"), "f", &i.to_string()]), bulk(&format!("1-{i}")));
    }
    assert_eq!(c.call(&["XGROUP", "CREATE", k, "g", "0"]), OK);
}

#[test]
fn xgroup_subcommands_and_their_errors() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (k, none) = (key("s"), key("none"));
    let need_key = "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.";
    assert_eq!(c.call(&["XGROUP", "CREATE", &none, "g", "$"]), error(need_key));
    assert_eq!(c.call(&["XGROUP", "CREATE", &k, "g", "$", "MKSTREAM"]), OK);
    assert_eq!(c.call(&["TYPE", &k]), "+stream\r\n");
    assert_eq!(c.call(&["XLEN", &k]), int(0));
    assert_eq!(c.call(&["XGROUP", "CREATE", &k, "g", "$"]), error("BUSYGROUP Consumer Group name already exists"));
    assert_eq!(
        c.call(&["XGROUP", "CREATE", &k, "g2", "x"]),
        error("ERR Invalid stream ID specified as stream command argument")
    );
    assert_eq!(
        c.call(&["XGROUP", "CREATE", &k, "g2", "0", "ENTRIESREAD", "-5"]),
        error("ERR value for ENTRIESREAD must be positive or -1")
    );
    assert_eq!(
        c.call(&["XGROUP", "CREATE", &k, "g2", "0", "FOO"]),
        error("ERR unknown subcommand or wrong number of arguments for 'CREATE'. Try XGROUP HELP.")
    );
    assert_eq!(
        c.call(&["XGROUP", "CREATE", &k, "g2", "0", "MKSTREAM", "MKSTREAM", "MKSTREAM", "MKSTREAM"]),
        error("ERR unknown subcommand or wrong number of arguments for 'CREATE'. Try XGROUP HELP.")
    );
    assert_eq!(c.call(&["XGROUP", "FOO", &k, "g"]), error("ERR unknown subcommand 'FOO'. Try XGROUP HELP."));
    let user_key = &k;
    assert_eq!(
        c.call(&["XGROUP", "SETID", &k, "nog", "0"]),
        error(&format!("NOGROUP No such consumer group 'nog' for key name '{user_key}'"))
    );
    assert_eq!(c.call(&["XGROUP", "CREATECONSUMER", &k, "g", "alice"]), int(1));
    assert_eq!(c.call(&["XGROUP", "CREATECONSUMER", &k, "g", "alice"]), int(0));
    assert_eq!(c.call(&["XGROUP", "DELCONSUMER", &k, "g", "bob"]), int(0));
    assert_eq!(c.call(&["XGROUP", "DELCONSUMER", &k, "g", "alice"]), int(0));
    assert_eq!(c.call(&["XGROUP", "SETID", &k, "g", "5-5", "ENTRIESREAD", "3"]), OK);
    let groups = call(&mut c, &["XINFO", "GROUPS", &k]);
    assert_eq!(field(&groups.array()[0], "last-delivered-id"), V::Bulk("5-5".into()));
    assert_eq!(field(&groups.array()[0], "entries-read"), V::Int(3));
    assert_eq!(c.call(&["XGROUP", "DESTROY", &k, "g"]), int(1));
    assert_eq!(c.call(&["XGROUP", "DESTROY", &k, "g"]), int(0));
    assert_eq!(c.call(&["XINFO", "GROUPS", &k]), "*0\r\n");
    let st = key("str");
    c.call(&["SET", &st, "x"]);
    assert_eq!(c.call(&["XGROUP", "CREATE", &st, "g", "$", "MKSTREAM"]), error(WRONGTYPE));
    let help = call(&mut c, &["XGROUP", "HELP"]);
    assert_eq!(help.array().len(), 17);
}

#[test]
fn xreadgroup_new_entries_history_and_noack() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("s");
    stream_with_group(&mut c, &k, 4);
    let nogroup = format!("NOGROUP No such key '{k}' or consumer group 'nog' in XREADGROUP with GROUP option");
    assert_eq!(c.call(&["XREADGROUP", "GROUP", "nog", "c", "STREAMS", &k, ">"]), error(&nogroup));
    assert_eq!(
        c.call(&["XREADGROUP", "COUNT", "1", "NOACK", "STREAMS", &k, ">"]),
        error("ERR Missing GROUP option for XREADGROUP")
    );
    assert_eq!(
        c.call(&["XREADGROUP", "GROUP", "g", "c", "STREAMS", &k, "$"]),
        error("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.")
    );
    assert_eq!(
        call(&mut c, &["XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", &k, ">"]),
        read_of(&k, vec![entry("1-1", &["f", "1"]), entry("1-2", &["f", "2"])])
    );
    assert_eq!(
        call(&mut c, &["XREADGROUP", "GROUP", "g", "bob", "NOACK", "COUNT", "1", "STREAMS", &k, ">"]),
        read_of(&k, vec![entry("1-3", &["f", "3"])])
    );
    assert_eq!(
        // The largest ID written out is Redis's mark for `>`: new entries.
        call(&mut c, &["XREADGROUP", "GROUP", "g", "bob", "STREAMS", &k, "18446744073709551615-18446744073709551615"]),
        read_of(&k, vec![entry("1-4", &["f", "4"])])
    );
    // Nothing new: a null array, and no consumer made.
    assert_eq!(c.call(&["XREADGROUP", "GROUP", "g", "carol", "STREAMS", &k, ">"]), "*-1\r\n");
    // History: the consumer's own pending entries; a deleted one as [id, null].
    assert_eq!(c.call(&["XDEL", &k, "1-2"]), int(1));
    assert_eq!(
        c.call(&["XREADGROUP", "GROUP", "g", "alice", "STREAMS", &k, "0"]),
        format!(
            "*1\r\n*2\r\n${}\r\n{k}\r\n*2\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\nf\r\n$1\r\n1\r\n*2\r\n$3\r\n1-2\r\n*-1\r\n",
            k.len()
        )
    );
    assert_eq!(
        call(&mut c, &["XREADGROUP", "GROUP", "g", "bob", "STREAMS", &k, "1-3"]),
        read_of(&k, vec![entry("1-4", &["f", "4"])])
    );
    // History of a consumer with none: an empty list, and the consumer exists.
    assert_eq!(call(&mut c, &["XREADGROUP", "GROUP", "g", "dave", "STREAMS", &k, "0"]), read_of(&k, vec![]));
    let consumers = call(&mut c, &["XINFO", "CONSUMERS", &k, "g"]);
    let names: Vec<V> = consumers.array().iter().map(|m| field(m, "name")).collect();
    assert_eq!(names, ["alice", "bob", "dave"].map(|n| V::Bulk(n.into())));
    let pending: Vec<V> = consumers.array().iter().map(|m| field(m, "pending")).collect();
    assert_eq!(pending, [V::Int(2), V::Int(1), V::Int(0)]);
    // The history read counted deliveries.
    let p = call(&mut c, &["XPENDING", &k, "g", "-", "+", "10", "alice"]);
    assert_eq!(p.array()[0].array()[3], V::Int(2), "1-1 delivered twice: {p:?}");
}

#[test]
fn xack_and_xpending() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("s");
    stream_with_group(&mut c, &k, 5);
    assert_eq!(c.call(&["XPENDING", &k, "g"]), "*4\r\n:0\r\n$-1\r\n$-1\r\n*-1\r\n");
    c.call(&["XREADGROUP", "GROUP", "g", "bob", "COUNT", "2", "STREAMS", &k, ">"]);
    c.call(&["XREADGROUP", "GROUP", "g", "alice", "STREAMS", &k, ">"]);
    assert_eq!(
        call(&mut c, &["XPENDING", &k, "g"]),
        V::Array(vec![
            V::Int(5),
            V::Bulk("1-1".into()),
            V::Bulk("1-5".into()),
            V::Array(vec![
                V::Array(vec![V::Bulk("alice".into()), V::Bulk("3".into())]),
                V::Array(vec![V::Bulk("bob".into()), V::Bulk("2".into())]),
            ]),
        ])
    );
    let ext = call(&mut c, &["XPENDING", &k, "g", "(1-1", "+", "3"]);
    let rows: Vec<(String, String, i64)> = ext
        .array()
        .iter()
        .map(|r| (r.array()[0].bulk().into(), r.array()[1].bulk().into(), r.array()[3].int()))
        .collect();
    assert_eq!(
        rows,
        [("1-2".into(), "bob".into(), 1), ("1-3".into(), "alice".into(), 1), ("1-4".into(), "alice".into(), 1)]
    );
    assert_eq!(call(&mut c, &["XPENDING", &k, "g", "-", "+", "10", "bob"]).array().len(), 2);
    assert_eq!(c.call(&["XPENDING", &k, "g", "-", "+", "10", "nobody"]), "*0\r\n");
    assert_eq!(c.call(&["XPENDING", &k, "g", "IDLE", "100000", "-", "+", "10"]), "*0\r\n");
    assert_eq!(call(&mut c, &["XPENDING", &k, "g", "IDLE", "0", "-", "+", "10"]).array().len(), 5);
    assert_eq!(c.call(&["XPENDING", &k, "g", "-", "+"]), error("ERR syntax error"));
    assert_eq!(c.call(&["XPENDING", &k, "g", "IDLE", "5", "-", "+"]), error("ERR syntax error"));
    assert_eq!(
        c.call(&["XPENDING", &k, "g", "x", "+", "1"]),
        error("ERR Invalid stream ID specified as stream command argument")
    );
    assert_eq!(c.call(&["XPENDING", &k, "g", "-", "+", "x"]), error("ERR value is not an integer or out of range"));
    assert_eq!(c.call(&["XPENDING", &k, "nog"]), error(&format!("NOGROUP No such key '{k}' or consumer group 'nog'")));
    assert_eq!(c.call(&["XACK", &k, "g", "1-1", "1-1", "9-9"]), int(1));
    assert_eq!(c.call(&["XACK", &k, "nog", "1-2"]), int(0));
    assert_eq!(c.call(&["XACK", &key("none"), "g", "1-2"]), int(0));
    assert_eq!(c.call(&["XACK", &k, "g", "x"]), error("ERR Invalid stream ID specified as stream command argument"));
    // The key and the group are looked up before the IDs are checked.
    assert_eq!(c.call(&["XACK", &k, "nog", "x"]), int(0));
    assert_eq!(c.call(&["XACK", &key("none"), "g", "x"]), int(0));
    assert_eq!(c.call(&["XACK", &k, "g", "1-2", "1-3", "1-4", "1-5"]), int(4));
    assert_eq!(c.call(&["XPENDING", &k, "g"]), "*4\r\n:0\r\n$-1\r\n$-1\r\n*-1\r\n");
}

#[test]
fn xclaim_and_xautoclaim() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("s");
    stream_with_group(&mut c, &k, 5);
    c.call(&["XREADGROUP", "GROUP", "g", "alice", "COUNT", "3", "STREAMS", &k, ">"]);
    let nogroup = format!("NOGROUP No such key '{k}' or consumer group 'nog'");
    assert_eq!(c.call(&["XCLAIM", &k, "nog", "bob", "0", "1-1"]), error(&nogroup));
    assert_eq!(c.call(&["XCLAIM", &k, "g", "bob", "x", "1-1"]), error("ERR Invalid min-idle-time argument for XCLAIM"));
    assert_eq!(c.call(&["XCLAIM", &k, "g", "bob", "0", "1-1", "foo"]), error("ERR Unrecognized XCLAIM option 'foo'"));
    assert_eq!(
        c.call(&["XCLAIM", &k, "g", "bob", "0", "1-1", "RETRYCOUNT", "x"]),
        error("ERR Invalid RETRYCOUNT option argument for XCLAIM")
    );
    assert_eq!(
        c.call(&["XCLAIM", &k, "g", "bob", "0", "1-1", "IDLE", "x"]),
        error("ERR Invalid IDLE option argument for XCLAIM")
    );
    // Too recent for a minimum idle time: nothing moves.
    assert_eq!(c.call(&["XCLAIM", &k, "g", "bob", "100000", "1-1"]), "*0\r\n");
    assert_eq!(call(&mut c, &["XCLAIM", &k, "g", "bob", "0", "1-1"]), V::Array(vec![entry("1-1", &["f", "1"])]));
    // JUSTID does not count a delivery; RETRYCOUNT sets it.
    assert_eq!(c.call(&["XCLAIM", &k, "g", "bob", "0", "1-2", "JUSTID"]), format!("*1\r\n{}", bulk("1-2")));
    assert_eq!(
        c.call(&["XCLAIM", &k, "g", "bob", "0", "1-3", "RETRYCOUNT", "9", "JUSTID"]),
        format!("*1\r\n{}", bulk("1-3"))
    );
    let counts: Vec<(String, i64)> = call(&mut c, &["XPENDING", &k, "g", "-", "+", "10"])
        .array()
        .iter()
        .map(|r| (r.array()[1].bulk().to_string(), r.array()[3].int()))
        .collect();
    assert_eq!(counts, [("bob".into(), 2), ("bob".into(), 1), ("bob".into(), 9)]);
    // FORCE puts an entry never delivered into the PEL; LASTID moves the group.
    assert_eq!(c.call(&["XCLAIM", &k, "g", "carol", "0", "1-5", "JUSTID"]), "*0\r\n");
    assert_eq!(
        c.call(&["XCLAIM", &k, "g", "carol", "0", "1-5", "FORCE", "JUSTID", "LASTID", "1-5"]),
        format!("*1\r\n{}", bulk("1-5"))
    );
    let g = call(&mut c, &["XINFO", "GROUPS", &k]);
    assert_eq!(field(&g.array()[0], "last-delivered-id"), V::Bulk("1-5".into()));
    assert_eq!(field(&g.array()[0], "pending"), V::Int(4));
    // A deleted entry leaves the PEL when claimed.
    assert_eq!(c.call(&["XDEL", &k, "1-2"]), int(1));
    assert_eq!(c.call(&["XCLAIM", &k, "g", "carol", "0", "1-2"]), "*0\r\n");
    assert_eq!(call(&mut c, &["XPENDING", &k, "g"]).array()[0], V::Int(3));
    // XAUTOCLAIM: a cursor, the entries, the deleted IDs.
    assert_eq!(c.call(&["XDEL", &k, "1-3"]), int(1));
    assert_eq!(
        call(&mut c, &["XAUTOCLAIM", &k, "g", "dave", "0", "0", "COUNT", "1"]),
        V::Array(vec![V::Bulk("1-3".into()), V::Array(vec![entry("1-1", &["f", "1"])]), V::Array(vec![])])
    );
    assert_eq!(
        call(&mut c, &["XAUTOCLAIM", &k, "g", "dave", "0", "1-3", "JUSTID"]),
        V::Array(vec![
            V::Bulk("0-0".into()),
            V::Array(vec![V::Bulk("1-5".into())]),
            V::Array(vec![V::Bulk("1-3".into())])
        ])
    );
    assert_eq!(c.call(&["XAUTOCLAIM", &k, "g", "dave", "0", "0", "COUNT", "0"]), error("ERR COUNT must be > 0"));
    assert_eq!(
        c.call(&["XAUTOCLAIM", &k, "g", "dave", "x", "0"]),
        error("ERR Invalid min-idle-time argument for XAUTOCLAIM")
    );
    assert_eq!(c.call(&["XAUTOCLAIM", &k, "g", "dave", "0", "0", "FOO"]), error("ERR syntax error"));
    assert_eq!(c.call(&["XAUTOCLAIM", &k, "nog", "dave", "0", "0"]), error(&nogroup));
    let owners = call(&mut c, &["XPENDING", &k, "g"]);
    assert_eq!(owners.array()[3], V::Array(vec![V::Array(vec![V::Bulk("dave".into()), V::Bulk("2".into())])]));
}

#[test]
fn xinfo_with_lag_and_entries_read() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("s");
    stream_with_group(&mut c, &k, 5);
    assert_eq!(c.call(&["XGROUP", "CREATE", &k, "late", "$"]), OK);
    c.call(&["XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", &k, ">"]);
    let g = call(&mut c, &["XINFO", "GROUPS", &k]);
    let first = fields(&g.array()[0]);
    assert_eq!(
        first,
        vec![
            ("name".to_string(), V::Bulk("g".into())),
            ("consumers".into(), V::Int(1)),
            ("pending".into(), V::Int(2)),
            ("last-delivered-id".into(), V::Bulk("1-2".into())),
            ("entries-read".into(), V::Int(2)),
            ("lag".into(), V::Int(3)),
        ]
    );
    assert_eq!(field(&g.array()[1], "lag"), V::Int(0));
    assert_eq!(c.call(&["XDEL", &k, "1-4"]), int(1));
    // A tombstone after the group's last ID: its lag is unknown.
    let g = call(&mut c, &["XINFO", "GROUPS", &k]);
    assert_eq!(field(&g.array()[0], "lag"), V::Nil);
    c.call(&["XREADGROUP", "GROUP", "g", "alice", "STREAMS", &k, ">"]);
    let g = call(&mut c, &["XINFO", "GROUPS", &k]);
    assert_eq!((field(&g.array()[0], "entries-read"), field(&g.array()[0], "lag")), (V::Int(5), V::Int(0)));
    // XINFO STREAM (its radix-tree-nodes is Redis's tree's own: not compared).
    let s = call(&mut c, &["XINFO", "STREAM", &k]);
    let names: Vec<String> = fields(&s).into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        [
            "length",
            "radix-tree-keys",
            "radix-tree-nodes",
            "last-generated-id",
            "max-deleted-entry-id",
            "entries-added",
            "recorded-first-entry-id",
            "groups",
            "first-entry",
            "last-entry"
        ]
    );
    assert_eq!(field(&s, "length"), V::Int(4));
    assert_eq!(field(&s, "radix-tree-keys"), V::Int(1));
    assert_eq!(field(&s, "max-deleted-entry-id"), V::Bulk("1-4".into()));
    assert_eq!(field(&s, "entries-added"), V::Int(5));
    assert_eq!(field(&s, "groups"), V::Int(2));
    assert_eq!(field(&s, "first-entry"), entry("1-1", &["f", "1"]));
    assert_eq!(field(&s, "last-entry"), entry("1-5", &["f", "5"]));
    let full = call(&mut c, &["XINFO", "STREAM", &k, "FULL", "COUNT", "2"]);
    assert_eq!(field(&full, "entries").array().len(), 2);
    let g0 = field(&full, "groups").array()[0].clone();
    let names: Vec<String> = fields(&g0).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["name", "last-delivered-id", "entries-read", "lag", "pel-count", "pending", "consumers"]);
    assert_eq!(field(&g0, "pel-count"), V::Int(4));
    assert_eq!(field(&g0, "pending").array().len(), 2);
    let alice = field(&g0, "consumers").array()[0].clone();
    let names: Vec<String> = fields(&alice).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["name", "seen-time", "pel-count", "pending"]);
    assert_eq!(c.call(&["XINFO", "STREAM", &key("none")]), error("ERR no such key"));
    assert_eq!(
        c.call(&["XINFO", "STREAM", &k, "FOO"]),
        error("ERR unknown subcommand or wrong number of arguments for 'STREAM'. Try XINFO HELP.")
    );
    assert_eq!(
        c.call(&["XINFO", "CONSUMERS", &k, "nog"]),
        error(&format!("NOGROUP No such consumer group 'nog' for key name '{k}'"))
    );
}

#[test]
fn xreadgroup_block_hands_each_entry_to_one_consumer() {
    let Some(server) = resp_server() else { return };
    let k = key("s");
    let mut w = Resp::new(&server);
    assert_eq!(w.call(&["XGROUP", "CREATE", &k, "g", "$", "MKSTREAM"]), OK);
    let mut readers: Vec<Resp> = (0..3).map(|_| Resp::new(&server)).collect();
    for (i, r) in readers.iter_mut().enumerate() {
        r.send(&["XREADGROUP", "GROUP", "g", &format!("c{i}"), "BLOCK", "0", "COUNT", "1", "STREAMS", &k, ">"]);
    }
    std::thread::sleep(Duration::from_millis(200));
    for i in 1..=3 {
        w.call(&["XADD", &k, &format!("1-{i}"), "f", "v"]);
    }
    let mut got: Vec<String> = readers
        .iter_mut()
        .map(|r| {
            let (v, _) = parse(&r.reply());
            v.array()[0].array()[1].array()[0].array()[0].bulk().to_string()
        })
        .collect();
    got.sort();
    assert_eq!(got, ["1-1", "1-2", "1-3"]);
    assert_eq!(call(&mut w, &["XPENDING", &k, "g"]).array()[0], V::Int(3));
    // A group destroyed under a blocked reader answers it NOGROUP.
    let mut r = Resp::new(&server);
    r.send(&["XREADGROUP", "GROUP", "g", "c9", "BLOCK", "0", "STREAMS", &k, ">"]);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(w.call(&["XGROUP", "DESTROY", &k, "g"]), int(1));
    assert_eq!(r.reply(), error("NOGROUP the consumer group this client was blocked on no longer exists"));
    // A deleted key answers every reader blocked in XREADGROUP on it
    // (Redis 7.0.15's UNBLOCKED); a plain XREAD stays blocked.
    let gone = key("gone");
    assert_eq!(w.call(&["XGROUP", "CREATE", &gone, "g", "$", "MKSTREAM"]), OK);
    let mut plain = Resp::new(&server);
    plain.send(&["XREAD", "BLOCK", "400", "STREAMS", &gone, "$"]);
    let mut grouped: Vec<Resp> = (0..2).map(|_| Resp::new(&server)).collect();
    for (i, r) in grouped.iter_mut().enumerate() {
        r.send(&["XREADGROUP", "GROUP", "g", &format!("c{i}"), "BLOCK", "0", "STREAMS", &gone, ">"]);
    }
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(w.call(&["DEL", &gone]), int(1));
    for r in &mut grouped {
        assert_eq!(r.reply(), error("UNBLOCKED the stream key no longer exists"));
    }
    assert_eq!(plain.reply(), "*-1\r\n");
    // Inside MULTI it does not block.
    assert_eq!(w.call(&["XGROUP", "CREATE", &k, "g", "$"]), OK);
    assert_eq!(w.call(&["MULTI"]), OK);
    assert_eq!(w.call(&["XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", &k, ">"]), "+QUEUED\r\n");
    assert_eq!(w.call(&["EXEC"]), "*1\r\n*-1\r\n");
}

/// A stream DUMPed by redis-server 7.0.15 (`RDB_TYPE_STREAM_LISTPACKS_2`,
/// its node LZF-compressed): entries 1-1 … 1-7 (1-5 with other fields),
/// 1-2 deleted, trimmed to 5 (1-1 a tombstone), group `g` with 1-3 and
/// 1-4 pending for alice, consumer bob, XSETID 9-9.
const REDIS_STREAM_DUMP: &str = "13011000000000000000010000000000000001c3407f408a088a000000310005010220010a8166028176020001030100200105010181780205600c0001201c038278780340260000200b0603018378787804800e040301040184200e02780505201c0000200d0e0101856f7468657206837965730406203006000105010601862024200000078037040601070187200e400003080501ff050909010301020701016701040402000000000000000100000000000000031d478350a201000001000000000000000100000000000000041d478350a2010000010205616c6963651d478350a201000002000000000000000100000000000000030000000000000001000000000000000403626f621d478350a2010000000a00c341785e861c3c58";

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// What a client sees of the golden stream at `k` (no times).
fn golden_view(c: &mut Resp, k: &str) -> Vec<V> {
    let info = call(c, &["XINFO", "STREAM", k]);
    let mut v: Vec<V> =
        ["length", "last-generated-id", "max-deleted-entry-id", "entries-added", "recorded-first-entry-id", "groups"]
            .iter()
            .map(|f| field(&info, f))
            .collect();
    v.push(call(c, &["XRANGE", k, "-", "+"]));
    v.push(call(c, &["XPENDING", k, "g"]));
    let g = call(c, &["XINFO", "GROUPS", k]);
    v.extend(
        ["name", "consumers", "pending", "last-delivered-id", "entries-read", "lag"]
            .iter()
            .map(|f| field(&g.array()[0], f)),
    );
    v.extend(call(c, &["XINFO", "CONSUMERS", k, "g"]).array().iter().map(|m| field(m, "name")));
    v
}

#[test]
fn dump_and_restore_a_stream_in_redis_encoding() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (k, k2) = (key("gold"), key("copy"));
    let mut cmd = encode(&[b"RESTORE", k.as_bytes(), b"0", &unhex(REDIS_STREAM_DUMP)]);
    assert_eq!(c.call_raw(&cmd), OK);
    let want = vec![
        V::Int(5),
        V::Bulk("9-9".into()),
        V::Bulk("1-2".into()),
        V::Int(7),
        V::Bulk("1-3".into()),
        V::Int(1),
        V::Array(vec![
            entry("1-3", &["f", "3", "v", "xxx"]),
            entry("1-4", &["f", "4", "v", "xxxx"]),
            entry("1-5", &["other", "yes"]),
            entry("1-6", &["f", "6", "v", "xxxxxx"]),
            entry("1-7", &["f", "7", "v", "xxxxxxx"]),
        ]),
        V::Array(vec![
            V::Int(2),
            V::Bulk("1-3".into()),
            V::Bulk("1-4".into()),
            V::Array(vec![V::Array(vec![V::Bulk("alice".into()), V::Bulk("2".into())])]),
        ]),
        V::Bulk("g".into()),
        V::Int(2),
        V::Int(2),
        V::Bulk("1-4".into()),
        // Redis's estimate at the group's first read past tombstones.
        V::Int(4),
        V::Int(3),
        V::Bulk("alice".into()),
        V::Bulk("bob".into()),
    ];
    assert_eq!(golden_view(&mut c, &k), want);
    // The server's own DUMP restores to the same stream.
    c.send(&["DUMP", &k]);
    let (payload, _) = parse_bytes(&c.reply_bytes());
    cmd = encode(&[b"RESTORE", k2.as_bytes(), b"0", &payload]);
    assert_eq!(c.call_raw(&cmd), OK);
    assert_eq!(golden_view(&mut c, &k2), want);
    // A damaged payload is refused.
    let mut bad = unhex(REDIS_STREAM_DUMP);
    let n = bad.len();
    bad[n - 1] ^= 1;
    cmd = encode(&[b"RESTORE", key("bad").as_bytes(), b"0", &bad]);
    assert_eq!(c.call_raw(&cmd), error("ERR DUMP payload version or checksum are wrong"));
}

/// A bulk reply's bytes.
fn parse_bytes(r: &[u8]) -> (Vec<u8>, usize) {
    let nl = r.windows(2).position(|w| w == b"\r\n").unwrap();
    let n: usize = std::str::from_utf8(&r[1..nl]).unwrap().parse().unwrap();
    (r[nl + 2..nl + 2 + n].to_vec(), nl + 4 + n)
}
