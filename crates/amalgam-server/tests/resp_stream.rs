//! Streams, black-box: XADD XRANGE XREVRANGE XLEN XDEL XTRIM XSETID
//! XREAD (and XREAD BLOCK across connections), and a stream as a key
//! (TYPE, OBJECT ENCODING, DEL, EXISTS, RENAME, COPY, EXPIRE, SCAN TYPE,
//! WRONGTYPE). Every expectation is Redis 7.0.15's (run this file against
//! redis-server too: AMALGAM_TEST_RESP_ADDR=127.0.0.1:PORT).
mod common;
use common::resp::*;
use common::*;
use std::sync::RwLock;
use std::time::{Duration, Instant};

/// The test that changes `stream-node-max-entries` holds this for
/// writing, the tests whose trims depend on it for reading.
static NODE_LIMITS: RwLock<()> = RwLock::new(());

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const INVALID_ID: &str = "ERR Invalid stream ID specified as stream command argument";
const TOO_SMALL: &str = "ERR The ID specified in XADD is equal or smaller than the target stream top item";
/// RESP2's null array (XRANGE … COUNT 0, XREAD with nothing to read).
const NULL_ARRAY: &str = "*-1\r\n";

/// `[id, [f, v, …]]` as the test's parser gives it.
fn entry(id: &str, pairs: &[&str]) -> V {
    V::Array(vec![V::Bulk(id.into()), V::Array(pairs.iter().map(|p| V::Bulk(p.to_string())).collect())])
}

fn ids(v: &V) -> Vec<String> {
    v.array().iter().map(|e| e.array()[0].bulk().to_string()).collect()
}

#[test]
fn xadd_ids_and_their_errors() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let s = key("s");
    assert_eq!(c.call(&["XADD", &s, "1-1", "a", "1", "b", "2"]), bulk("1-1"));
    assert_eq!(c.call(&["XADD", &s, "1-1", "a", "1"]), error(TOO_SMALL));
    assert_eq!(c.call(&["XADD", &s, "1-0", "a", "1"]), error(TOO_SMALL));
    assert_eq!(c.call(&["XADD", &s, "0-0", "a", "1"]), error("ERR The ID specified in XADD must be greater than 0-0"));
    assert_eq!(c.call(&["XADD", &s, "1-*", "a", "1"]), bulk("1-2"));
    assert_eq!(c.call(&["XADD", &s, "0-*", "a", "1"]), error(TOO_SMALL));
    assert_eq!(c.call(&["XADD", &s, "5", "c", "3"]), bulk("5-0"));
    assert_eq!(c.call(&["XADD", &s, "5-*", "a", "1"]), bulk("5-1"));
    assert_eq!(c.call(&["XADD", &s, "x-1", "a", "1"]), error(INVALID_ID));
    assert_eq!(c.call(&["XADD", &s, "-", "a", "1"]), error(INVALID_ID));
    assert_eq!(c.call(&["XADD", &s, "*", "a"]), error("ERR wrong number of arguments for 'xadd' command"));
    assert_eq!(c.call(&["XADD", &s, "MAXLEN", "-1", "*", "a", "1"]), error("ERR The MAXLEN argument must be >= 0."));
    assert_eq!(
        c.call(&["XADD", &s, "MAXLEN", "1", "MINID", "1", "*", "a", "1"]),
        error("ERR syntax error, MAXLEN and MINID options at the same time are not compatible")
    );
    assert_eq!(
        c.call(&["XADD", &s, "LIMIT", "5", "*", "a", "1"]),
        error("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy")
    );
    assert_eq!(
        c.call(&["XADD", &s, "MAXLEN", "5", "LIMIT", "5", "*", "a", "1"]),
        error("ERR syntax error, LIMIT cannot be used without the special ~ option")
    );
    // `*`: the clock, past the last ID.
    let auto = call(&mut c, &["XADD", &s, "*", "a", "1"]).bulk().to_string();
    let ms: u64 = auto.split('-').next().unwrap().parse().unwrap();
    assert!(ms > 1_600_000_000_000, "{auto}");
    assert_eq!(c.call(&["XLEN", &s]), int(5));
    // NOMKSTREAM: a missing key stays missing, a null bulk.
    let missing = key("missing");
    assert_eq!(c.call(&["XADD", &missing, "NOMKSTREAM", "*", "a", "1"]), "$-1\r\n");
    assert_eq!(c.call(&["EXISTS", &missing]), int(0));
    // The last possible ID, then nothing more.
    let top = key("top");
    let max = "18446744073709551615-18446744073709551615";
    assert_eq!(c.call(&["XADD", &top, max, "a", "1"]), bulk(max));
    assert_eq!(
        c.call(&["XADD", &top, "*", "a", "1"]),
        error("ERR The stream has exhausted the last possible ID, unable to add more items")
    );
    // A string is WRONGTYPE.
    let st = key("str");
    assert_eq!(c.call(&["SET", &st, "x"]), OK);
    assert_eq!(c.call(&["XADD", &st, "*", "a", "1"]), error(WRONGTYPE));
    assert_eq!(c.call(&["XLEN", &st]), error(WRONGTYPE));
    assert_eq!(c.call(&["XRANGE", &st, "-", "+"]), error(WRONGTYPE));
}

#[test]
fn xrange_and_xrevrange() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let s = key("s");
    for (id, v) in [("1-1", "a"), ("1-2", "b"), ("2-0", "c"), ("3-5", "d")] {
        assert_eq!(c.call(&["XADD", &s, id, "f", v]), bulk(id));
    }
    assert_eq!(
        call(&mut c, &["XRANGE", &s, "-", "+"]),
        V::Array(vec![
            entry("1-1", &["f", "a"]),
            entry("1-2", &["f", "b"]),
            entry("2-0", &["f", "c"]),
            entry("3-5", &["f", "d"])
        ])
    );
    assert_eq!(ids(&call(&mut c, &["XRANGE", &s, "1", "2"])), ["1-1", "1-2", "2-0"]);
    assert_eq!(ids(&call(&mut c, &["XRANGE", &s, "(1-1", "(3-5"])), ["1-2", "2-0"]);
    assert_eq!(ids(&call(&mut c, &["XRANGE", &s, "-", "+", "COUNT", "2"])), ["1-1", "1-2"]);
    assert_eq!(ids(&call(&mut c, &["XREVRANGE", &s, "+", "-", "COUNT", "3"])), ["3-5", "2-0", "1-2"]);
    assert_eq!(ids(&call(&mut c, &["XREVRANGE", &s, "(3-5", "(1-1"])), ["2-0", "1-2"]);
    assert_eq!(ids(&call(&mut c, &["XRANGE", &s, "3", "1"])), Vec::<String>::new());
    assert_eq!(c.call(&["XRANGE", &s, "-", "+", "COUNT", "0"]), NULL_ARRAY);
    assert_eq!(c.call(&["XRANGE", &s, "-", "+", "COUNT", "-5"]), NULL_ARRAY);
    assert_eq!(c.call(&["XRANGE", &s, "(-", "+"]), error(INVALID_ID));
    assert_eq!(c.call(&["XRANGE", &s, "-", "(0-0"]), error("ERR invalid end ID for the interval"));
    assert_eq!(
        c.call(&["XRANGE", &s, "(18446744073709551615-18446744073709551615", "+"]),
        error("ERR invalid start ID for the interval")
    );
    assert_eq!(c.call(&["XRANGE", &s, "-", "+", "LIMIT", "1"]), error("ERR syntax error"));
    assert_eq!(c.call(&["XRANGE", &key("none"), "-", "+"]), "*0\r\n");
    // Fields that differ from the node's first entry's come back as given.
    assert_eq!(c.call(&["XADD", &s, "4-0", "x", "1", "y", "2"]), bulk("4-0"));
    assert_eq!(call(&mut c, &["XRANGE", &s, "4", "4"]), V::Array(vec![entry("4-0", &["x", "1", "y", "2"])]));
}

#[test]
fn xdel_keeps_the_length_and_the_ids() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let s = key("s");
    for i in 1..=5 {
        c.call(&["XADD", &s, &format!("{i}-0"), "f", "v"]);
    }
    assert_eq!(c.call(&["XDEL", &s, "2-0", "4-0", "9-9", "2-0"]), int(2));
    assert_eq!(c.call(&["XLEN", &s]), int(3));
    assert_eq!(ids(&call(&mut c, &["XRANGE", &s, "-", "+"])), ["1-0", "3-0", "5-0"]);
    assert_eq!(c.call(&["XDEL", &s, "x"]), error(INVALID_ID));
    assert_eq!(c.call(&["XDEL", &key("none"), "1-0"]), int(0));
    // The key is looked up before the IDs are checked.
    assert_eq!(c.call(&["XDEL", &key("none"), "x"]), int(0));
    // Deleting the top entry leaves the last ID: XADD must still go above.
    assert_eq!(c.call(&["XDEL", &s, "5-0"]), int(1));
    assert_eq!(c.call(&["XADD", &s, "5-0", "f", "v"]), error(TOO_SMALL));
    // A stream emptied by XDEL is still a key.
    assert_eq!(c.call(&["XDEL", &s, "1-0", "3-0"]), int(2));
    assert_eq!(c.call(&["XLEN", &s]), int(0));
    assert_eq!(c.call(&["EXISTS", &s]), int(1));
    assert_eq!(c.call(&["TYPE", &s]), "+stream\r\n");
}

#[test]
fn xtrim_exact_and_approximate() {
    let _limits = NODE_LIMITS.read().unwrap_or_else(|e| e.into_inner());
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let s = key("s");
    // 250 small entries: nodes of 100 (stream-node-max-entries).
    let mut pipe = Vec::new();
    for i in 1..=250 {
        pipe.extend_from_slice(&encode(&[b"XADD", s.as_bytes(), format!("{i}-0").as_bytes(), b"f", b"v"]));
    }
    c.send_raw(&pipe);
    for _ in 0..250 {
        c.reply();
    }
    assert_eq!(c.call(&["XTRIM", &s, "MAXLEN", "~", "180"]), int(0));
    assert_eq!(c.call(&["XTRIM", &s, "MAXLEN", "~", "150"]), int(100));
    assert_eq!(c.call(&["XTRIM", &s, "MAXLEN", "~", "0", "LIMIT", "50"]), int(0));
    assert_eq!(c.call(&["XTRIM", &s, "MINID", "~", "220"]), int(100));
    assert_eq!(c.call(&["XLEN", &s]), int(50));
    assert_eq!(c.call(&["XTRIM", &s, "MINID", "=", "220"]), int(19));
    assert_eq!(ids(&call(&mut c, &["XRANGE", &s, "-", "+", "COUNT", "1"])), ["220-0"]);
    assert_eq!(c.call(&["XTRIM", &s, "MAXLEN", "10"]), int(21));
    assert_eq!(c.call(&["XLEN", &s]), int(10));
    assert_eq!(ids(&call(&mut c, &["XRANGE", &s, "-", "+", "COUNT", "1"])), ["241-0"]);
    assert_eq!(c.call(&["XTRIM", &s, "MAXLEN", "10"]), int(0));
    assert_eq!(c.call(&["XTRIM", &s]), error("ERR wrong number of arguments for 'xtrim' command"));
    assert_eq!(c.call(&["XTRIM", &s, "LIMIT", "1", "X"]), error("ERR syntax error"));
    assert_eq!(c.call(&["XTRIM", &s, "FOO", "1"]), error("ERR syntax error"));
    assert_eq!(c.call(&["XTRIM", &s, "MAXLEN", "x"]), error("ERR value is not an integer or out of range"));
    assert_eq!(c.call(&["XTRIM", &s, "MINID", "x"]), error(INVALID_ID));
    assert_eq!(c.call(&["XTRIM", &key("none"), "MAXLEN", "0"]), int(0));
    // XADD trims after adding.
    assert_eq!(c.call(&["XADD", &s, "MAXLEN", "2", "300-0", "f", "v"]), bulk("300-0"));
    assert_eq!(ids(&call(&mut c, &["XRANGE", &s, "-", "+"])), ["250-0", "300-0"]);
    assert_eq!(c.call(&["XADD", &s, "MAXLEN", "=", "0", "301-0", "f", "v"]), bulk("301-0"));
    assert_eq!(c.call(&["XLEN", &s]), int(0));
    assert_eq!(c.call(&["EXISTS", &s]), int(1));
}

#[test]
fn xsetid_moves_the_last_id() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let s = key("s");
    assert_eq!(c.call(&["XSETID", &s, "1-1"]), error("ERR no such key"));
    c.call(&["XADD", &s, "1-1", "a", "1"]);
    c.call(&["XADD", &s, "2-0", "a", "1"]);
    assert_eq!(
        c.call(&["XSETID", &s, "1-0"]),
        error("ERR The ID specified in XSETID is smaller than the target stream top item")
    );
    assert_eq!(c.call(&["XSETID", &s, "x"]), error(INVALID_ID));
    assert_eq!(c.call(&["XSETID", &s, "5-0", "ENTRIESADDED", "-1"]), error("ERR entries_added must be positive"));
    assert_eq!(
        c.call(&["XSETID", &s, "5-0", "ENTRIESADDED", "1"]),
        error("ERR The entries_added specified in XSETID is smaller than the target stream length")
    );
    assert_eq!(
        c.call(&["XSETID", &s, "5-0", "MAXDELETEDID", "6-0"]),
        error("ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id")
    );
    assert_eq!(c.call(&["XSETID", &s, "5-0", "FOO", "1"]), error("ERR syntax error"));
    assert_eq!(c.call(&["XSETID", &s, "5-0", "ENTRIESADDED", "9", "MAXDELETEDID", "3-0"]), OK);
    assert_eq!(c.call(&["XADD", &s, "4-0", "a", "1"]), error(TOO_SMALL));
    assert_eq!(c.call(&["XADD", &s, "5-*", "a", "1"]), bulk("5-1"));
    // Redis 7.0.15: below the largest deleted ID is taken.
    assert_eq!(c.call(&["XDEL", &s, "5-1"]), int(1));
    assert_eq!(c.call(&["XSETID", &s, "2-5"]), OK);
    assert_eq!(c.call(&["XADD", &s, "2-6", "b", "2"]), bulk("2-6"));
    assert_eq!(ids(&call(&mut c, &["XRANGE", &s, "-", "+"])), ["1-1", "2-0", "2-6"]);
    assert_eq!(ids(&call(&mut c, &["XREVRANGE", &s, "+", "-"])), ["2-6", "2-0", "1-1"]);
}

#[test]
fn xread_without_blocking() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (a, b, none) = (key("a"), key("b"), key("none"));
    for i in 1..=3 {
        c.call(&["XADD", &a, &format!("{i}-0"), "f", &i.to_string()]);
    }
    c.call(&["XADD", &b, "5-0", "g", "x"]);
    assert_eq!(
        call(&mut c, &["XREAD", "COUNT", "2", "STREAMS", &a, &none, &b, "1-0", "0", "0"]),
        V::Array(vec![
            V::Array(vec![V::Bulk(a.clone()), V::Array(vec![entry("2-0", &["f", "2"]), entry("3-0", &["f", "3"])])]),
            V::Array(vec![V::Bulk(b.clone()), V::Array(vec![entry("5-0", &["g", "x"])])]),
        ])
    );
    assert_eq!(c.call(&["XREAD", "STREAMS", &a, "$"]), NULL_ARRAY);
    assert_eq!(c.call(&["XREAD", "STREAMS", &a, "3-0"]), NULL_ARRAY);
    assert_eq!(c.call(&["XREAD", "STREAMS", &none, "0"]), NULL_ARRAY);
    assert_eq!(
        c.call(&["XREAD", "STREAMS", &a, &b, "0"]),
        error("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.")
    );
    assert_eq!(c.call(&["XREAD", "COUNT", "1", &a, "0"]), error("ERR syntax error"));
    assert_eq!(c.call(&["XREAD", "STREAMS", &a, "-"]), error(INVALID_ID));
    assert_eq!(
        c.call(&["XREAD", "STREAMS", &a, ">"]),
        error("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.")
    );
    assert_eq!(
        c.call(&["XREAD", "GROUP", "g", "c", "STREAMS", &a, "0"]),
        error("ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.")
    );
    assert_eq!(
        c.call(&["XREAD", "BLOCK", "x", "STREAMS", &a, "0"]),
        error("ERR timeout is not an integer or out of range")
    );
    assert_eq!(c.call(&["XREAD", "BLOCK", "-1", "STREAMS", &a, "0"]), error("ERR timeout is negative"));
    let st = key("str");
    c.call(&["SET", &st, "x"]);
    assert_eq!(c.call(&["XREAD", "STREAMS", &a, &st, "0", "0"]), error(WRONGTYPE));
    // A script may not BLOCK (Redis 5.0 on).
    let script = "return redis.pcall('XREAD','BLOCK','0','STREAMS',KEYS[1],'$')['err']";
    assert_eq!(
        c.call(&["EVAL", script, "1", &a]),
        bulk("ERR XREAD command is not allowed with BLOCK option from scripts")
    );
    let script = "return #redis.call('XREAD','STREAMS',KEYS[1],'0')[1][2]";
    assert_eq!(c.call(&["EVAL", script, "1", &a]), int(3));
    // Inside MULTI a BLOCK does not block: a null array at once.
    assert_eq!(c.call(&["MULTI"]), OK);
    assert_eq!(c.call(&["XREAD", "BLOCK", "0", "STREAMS", &a, "$"]), "+QUEUED\r\n");
    assert_eq!(c.call(&["EXEC"]), format!("*1\r\n{NULL_ARRAY}"));
}

#[test]
fn xread_block_is_woken_by_xadd_on_another_connection() {
    let Some(server) = resp_server() else { return };
    let (a, b) = (key("a"), key("b"));
    let mut writer = Resp::new(&server);
    writer.call(&["XADD", &a, "1-0", "f", "old"]);
    // Several readers (the server spreads connections over its workers).
    let mut readers: Vec<Resp> = (0..4).map(|_| Resp::new(&server)).collect();
    for r in &mut readers {
        r.send(&["XREAD", "BLOCK", "0", "STREAMS", &b, &a, "$", "$"]);
    }
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(writer.call(&["XADD", &a, "2-0", "f", "new"]), bulk("2-0"));
    for r in &mut readers {
        let (v, _) = parse(&r.reply());
        assert_eq!(v, V::Array(vec![V::Array(vec![V::Bulk(a.clone()), V::Array(vec![entry("2-0", &["f", "new"])])])]));
    }
    // A reader blocked first, for IDs past the next entry, does not hold
    // up the readers behind it (Redis checks every reader).
    let later = key("later");
    writer.call(&["XADD", &later, "1-0", "f", "v"]);
    let mut first = Resp::new(&server);
    first.send(&["XREAD", "BLOCK", "0", "STREAMS", &later, "100-0"]);
    std::thread::sleep(Duration::from_millis(100));
    let mut second = Resp::new(&server);
    second.send(&["XREAD", "BLOCK", "0", "STREAMS", &later, "$"]);
    std::thread::sleep(Duration::from_millis(100));
    writer.call(&["XADD", &later, "50-0", "f", "mid"]);
    let (v, _) = parse(&second.reply());
    assert_eq!(v, V::Array(vec![V::Array(vec![V::Bulk(later.clone()), V::Array(vec![entry("50-0", &["f", "mid"])])])]));
    writer.call(&["XADD", &later, "101-0", "f", "end"]);
    let (v, _) = parse(&first.reply());
    assert_eq!(
        v,
        V::Array(vec![V::Array(vec![V::Bulk(later.clone()), V::Array(vec![entry("101-0", &["f", "end"])])])])
    );
    // A timeout answers a null array.
    let mut r = Resp::new(&server);
    let t0 = Instant::now();
    assert_eq!(r.call(&["XREAD", "BLOCK", "150", "STREAMS", &a, "$"]), NULL_ARRAY);
    assert!(t0.elapsed() >= Duration::from_millis(140));
    // An explicit ID served at once when the stream has more.
    assert_eq!(ids(&call(&mut r, &["XREAD", "BLOCK", "0", "STREAMS", &a, "1-0"]).array()[0].array()[1]), ["2-0"]);
    // A stream created by the XADD wakes a reader of a missing key.
    let fresh = key("fresh");
    r.send(&["XREAD", "BLOCK", "5000", "COUNT", "1", "STREAMS", &fresh, "0-0"]);
    std::thread::sleep(Duration::from_millis(100));
    writer.call(&["XADD", &fresh, "7-7", "k", "v"]);
    writer.call(&["XADD", &fresh, "7-8", "k", "v"]);
    let (v, _) = parse(&r.reply());
    assert_eq!(v, V::Array(vec![V::Array(vec![V::Bulk(fresh.clone()), V::Array(vec![entry("7-7", &["k", "v"])])])]));
}

#[test]
fn a_stream_is_a_key() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (s, t, u) = (key("s"), key("t"), key("u"));
    c.call(&["XADD", &s, "1-0", "f", "v"]);
    c.call(&["XADD", &s, "2-0", "f", "w"]);
    assert_eq!(c.call(&["TYPE", &s]), "+stream\r\n");
    assert_eq!(c.call(&["OBJECT", "ENCODING", &s]), bulk("stream"));
    assert_eq!(c.call(&["EXPIRE", &s, "100"]), int(1));
    assert!(as_int(&c.call(&["TTL", &s])) > 90);
    assert_eq!(c.call(&["COPY", &s, &t]), int(1));
    assert_eq!(c.call(&["XADD", &t, "3-0", "f", "x"]), bulk("3-0"));
    assert_eq!(c.call(&["XLEN", &s]), int(2), "a copy is its own stream");
    assert_eq!(c.call(&["RENAME", &t, &u]), OK);
    assert_eq!(ids(&call(&mut c, &["XRANGE", &u, "-", "+"])), ["1-0", "2-0", "3-0"]);
    assert_eq!(c.call(&["XADD", &u, "3-0", "f", "x"]), error(TOO_SMALL), "the last ID travels");
    // SCAN's TYPE filter.
    let mut cursor = "0".to_string();
    let mut seen = Vec::new();
    for _ in 0..100_000 {
        let v = call(
            &mut c,
            &["SCAN", &cursor, "MATCH", &format!("{}*", &u[..u.find('_').unwrap()]), "TYPE", "stream", "COUNT", "1000"],
        );
        cursor = v.array()[0].bulk().to_string();
        seen.extend(v.array()[1].array().iter().map(|k| k.bulk().to_string()));
        if cursor == "0" {
            break;
        }
    }
    assert!(seen.contains(&s) && seen.contains(&u), "{seen:?}");
    assert_eq!(c.call(&["DEL", &s, &u]), int(2));
    assert_eq!(c.call(&["EXISTS", &s, &u]), int(0));
}

#[test]
fn node_limits_are_settings() {
    let _limits = NODE_LIMITS.write().unwrap_or_else(|e| e.into_inner());
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    assert_eq!(c.config_get("stream-node-max-entries"), "100");
    assert_eq!(c.config_get("stream-node-max-bytes"), "4096");
    assert_eq!(c.call(&["CONFIG", "SET", "stream-node-max-entries", "10"]), OK);
    let s = key("s");
    for i in 1..=25 {
        c.call(&["XADD", &s, &format!("{i}-0"), "f", "v"]);
    }
    // Nodes of 10 now: an approximate trim takes two of them, and its
    // default LIMIT is 100 nodes' worth (1,000 entries).
    assert_eq!(c.call(&["XTRIM", &s, "MAXLEN", "~", "5"]), int(20));
    assert_eq!(c.call(&["XLEN", &s]), int(5));
    assert_eq!(c.call(&["CONFIG", "SET", "stream-node-max-entries", "100"]), OK);
    assert_eq!(c.call(&["CONFIG", "SET", "stream-node-max-bytes", "1kb"]), OK);
    assert_eq!(c.config_get("stream-node-max-bytes"), "1024");
    assert_eq!(c.call(&["CONFIG", "SET", "stream-node-max-bytes", "4096"]), OK);
    assert!(c.call(&["CONFIG", "SET", "stream-node-max-entries", "-1"]).starts_with("-ERR CONFIG SET failed"));
}
