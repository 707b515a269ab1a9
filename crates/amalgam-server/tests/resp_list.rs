//! Redis's list commands over RESP, black-box, byte for byte: replies,
//! reply types (RESP2 and RESP3 nulls), error texts and their order, the
//! compact → large crossing, and the blocking commands (wake-up by a push
//! from another connection, FIFO order, timeouts, disconnects). Runs
//! against amalgam by default; CI also runs it against Debian's
//! redis-server 7 (`AMALGAM_TEST_RESP_ADDR`, see `common/mod.rs`), which
//! proves every expectation here is Redis's own.
mod common;
use common::resp::*;
use common::*;
use std::time::Duration;

const WRONGTYPE: &str = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
const NOT_INT: &str = "-ERR value is not an integer or out of range\r\n";
const SYNTAX: &str = "-ERR syntax error\r\n";
const NULL_ARRAY2: &str = "*-1\r\n";
const EMPTY: &str = "*0\r\n";

/// An array reply of bulk strings.
fn bulks(items: &[&str]) -> String {
    let mut s = format!("*{}\r\n", items.len());
    for i in items {
        s.push_str(&bulk(i));
    }
    s
}

/// LRANGE 0 -1 of `k`.
fn all(c: &mut Resp, k: &str) -> String {
    c.call(&["LRANGE", k, "0", "-1"])
}

/// A server whose connections land on two workers when it is amalgam
/// (connections are dealt round-robin, so consecutive ones are on
/// different workers): wake-ups cross threads. Redis when one is named.
fn two_workers() -> Option<Server> {
    resp_private(&["-t", "2"]).or_else(resp_server)
}

/// Time for a command sent on another connection to reach the server and
/// block (a wait, not an assertion on speed).
fn settle() {
    std::thread::sleep(Duration::from_millis(200));
}

/// The server's INFO `blocked_clients` count.
fn blocked_count(c: &mut Resp) -> usize {
    let info = c.call(&["INFO", "clients"]);
    let line = info.lines().find_map(|l| l.strip_prefix("blocked_clients:"));
    line.and_then(|n| n.trim().parse().ok()).unwrap_or_else(|| panic!("no blocked_clients in {info:?}"))
}

/// Waits until exactly `n` clients are blocked on a server of this test's
/// own (a spawned amalgam: the count is exact, so clients block in the
/// order the test sends them however loaded the machine is); on an
/// external server (shared with other tests) waits [`settle`]'s time.
fn await_blocked(server: &Server, n: usize) {
    /// Polls before giving up (20 ms apart: 10 s).
    const POLLS_MAX: usize = 500;
    if !server.is_own() {
        return settle();
    }
    let mut admin = Resp::new(server);
    for _ in 0..POLLS_MAX {
        if blocked_count(&mut admin) == n {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("blocked_clients never reached {n}");
}

#[test]
fn push_pop_len_and_null_rules() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("l");
    assert_eq!(c.call(&["RPUSH", &k, "a", "b", "c"]), int(3));
    assert_eq!(c.call(&["LPUSH", &k, "z", "y"]), int(5));
    assert_eq!(all(&mut c, &k), bulks(&["y", "z", "a", "b", "c"]));
    assert_eq!(c.call(&["LLEN", &k]), int(5));
    assert_eq!(c.call(&["TYPE", &k]), "+list\r\n");
    assert_eq!(c.call(&["LPUSHX", &k, "x"]), int(6));
    assert_eq!(c.call(&["RPUSHX", &k, "d", "e"]), int(8));
    let none = key("none");
    assert_eq!(c.call(&["LPUSHX", &none, "x"]), int(0));
    assert_eq!(c.call(&["RPUSHX", &none, "x"]), int(0));
    assert_eq!(c.call(&["EXISTS", &none]), int(0));
    assert_eq!(c.call(&["LLEN", &none]), int(0));
    assert_eq!(c.call(&["LPOP", &k]), bulk("x"));
    assert_eq!(c.call(&["RPOP", &k]), bulk("e"));
    assert_eq!(c.call(&["LPOP", &k, "2"]), bulks(&["y", "z"]));
    assert_eq!(c.call(&["RPOP", &k, "2"]), bulks(&["d", "c"]));
    // Count 0 on an existing list: an empty array; on a missing key, with
    // any count: the null array; without a count: the null bulk.
    assert_eq!(c.call(&["LPOP", &k, "0"]), EMPTY);
    assert_eq!(c.call(&["LPOP", &none, "0"]), NULL_ARRAY2);
    assert_eq!(c.call(&["RPOP", &none, "2"]), NULL_ARRAY2);
    assert_eq!(c.call(&["LPOP", &none]), NULL2);
    assert_eq!(c.call(&["LPOP", &k, "-1"]), error("ERR value is out of range, must be positive"));
    assert_eq!(c.call(&["LPOP", &k, "x"]), error("ERR value is out of range, must be positive"));
    assert_eq!(c.call(&["LPOP", &k, "1", "2"]), error("ERR wrong number of arguments for 'lpop' command"));
    assert_eq!(c.call(&["LPUSH", &k]), error("ERR wrong number of arguments for 'lpush' command"));
    // A count past the length pops everything, and the key goes.
    assert_eq!(c.call(&["LPOP", &k, "100"]), bulks(&["a", "b"]));
    assert_eq!(c.call(&["EXISTS", &k]), int(0));
    // RESP3 nulls.
    assert!(c.call(&["HELLO", "3"]).starts_with('%'));
    assert_eq!(c.call(&["LPOP", &none]), NULL3);
    assert_eq!(c.call(&["LPOP", &none, "2"]), NULL3);
    assert_eq!(c.call(&["LINDEX", &none, "0"]), NULL3);
    assert_eq!(c.call(&["LPOS", &none, "a"]), NULL3);
    assert_eq!(c.call(&["LMPOP", "1", &none, "LEFT"]), NULL3);
    assert_eq!(c.call(&["RPUSH", &k, "a"]), int(1));
    assert_eq!(c.call(&["LPOP", &k, "0"]), EMPTY);
    assert_eq!(c.call(&["LINDEX", &k, "5"]), NULL3);
}

#[test]
fn range_index_set_insert() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("l");
    let none = key("none");
    assert_eq!(c.call(&["RPUSH", &k, "a", "b", "c", "d"]), int(4));
    assert_eq!(c.call(&["LRANGE", &k, "1", "2"]), bulks(&["b", "c"]));
    assert_eq!(c.call(&["LRANGE", &k, "-2", "100"]), bulks(&["c", "d"]));
    assert_eq!(c.call(&["LRANGE", &k, "-100", "0"]), bulks(&["a"]));
    assert_eq!(c.call(&["LRANGE", &k, "3", "1"]), EMPTY);
    assert_eq!(c.call(&["LRANGE", &k, "5", "10"]), EMPTY);
    assert_eq!(c.call(&["LRANGE", &none, "0", "-1"]), EMPTY);
    // Arguments are parsed before the key is looked up.
    assert_eq!(c.call(&["LRANGE", &none, "x", "1"]), NOT_INT);
    assert_eq!(c.call(&["LINDEX", &k, "0"]), bulk("a"));
    assert_eq!(c.call(&["LINDEX", &k, "-1"]), bulk("d"));
    assert_eq!(c.call(&["LINDEX", &k, "4"]), NULL2);
    assert_eq!(c.call(&["LINDEX", &k, "x"]), NOT_INT);
    // ... but LINDEX looks the key up first.
    assert_eq!(c.call(&["LINDEX", &none, "x"]), NULL2);
    assert_eq!(c.call(&["LSET", &k, "1", "B"]), OK);
    assert_eq!(c.call(&["LSET", &k, "-1", "D"]), OK);
    assert_eq!(c.call(&["LSET", &k, "4", "x"]), error("ERR index out of range"));
    assert_eq!(c.call(&["LSET", &k, "-5", "x"]), error("ERR index out of range"));
    assert_eq!(c.call(&["LSET", &k, "x", "x"]), NOT_INT);
    assert_eq!(c.call(&["LSET", &none, "0", "x"]), error("ERR no such key"));
    assert_eq!(c.call(&["LSET", &none, "x", "x"]), error("ERR no such key"));
    assert_eq!(all(&mut c, &k), bulks(&["a", "B", "c", "D"]));
    assert_eq!(c.call(&["LINSERT", &k, "BEFORE", "c", "x"]), int(5));
    assert_eq!(c.call(&["LINSERT", &k, "after", "D", "y"]), int(6));
    assert_eq!(c.call(&["LINSERT", &k, "before", "zz", "y"]), int(-1));
    assert_eq!(c.call(&["LINSERT", &k, "middle", "c", "y"]), SYNTAX);
    assert_eq!(c.call(&["LINSERT", &none, "before", "a", "b"]), int(0));
    assert_eq!(c.call(&["LINSERT", &none, "middle", "a", "b"]), SYNTAX);
    assert_eq!(c.call(&["EXISTS", &none]), int(0));
    assert_eq!(all(&mut c, &k), bulks(&["a", "B", "x", "c", "D", "y"]));
}

#[test]
fn rem_trim_and_emptied_lists_go() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("l");
    let none = key("none");
    assert_eq!(c.call(&["RPUSH", &k, "a", "b", "a", "c", "a"]), int(5));
    assert_eq!(c.call(&["LREM", &k, "-1", "a"]), int(1));
    assert_eq!(all(&mut c, &k), bulks(&["a", "b", "a", "c"]));
    assert_eq!(c.call(&["LREM", &k, "1", "a"]), int(1));
    assert_eq!(c.call(&["LREM", &k, "0", "zz"]), int(0));
    assert_eq!(c.call(&["LREM", &k, "x", "a"]), NOT_INT);
    assert_eq!(c.call(&["LREM", &none, "0", "a"]), int(0));
    assert_eq!(all(&mut c, &k), bulks(&["b", "a", "c"]));
    assert_eq!(c.call(&["LTRIM", &k, "1", "-1"]), OK);
    assert_eq!(all(&mut c, &k), bulks(&["a", "c"]));
    assert_eq!(c.call(&["LTRIM", &k, "x", "1"]), NOT_INT);
    assert_eq!(c.call(&["LTRIM", &none, "0", "1"]), OK);
    assert_eq!(c.call(&["LTRIM", &k, "5", "10"]), OK);
    assert_eq!(c.call(&["EXISTS", &k]), int(0), "an empty range empties the list: the key goes");
    // Every way of emptying a list deletes the key.
    assert_eq!(c.call(&["RPUSH", &k, "a", "a"]), int(2));
    assert_eq!(c.call(&["LREM", &k, "0", "a"]), int(2));
    assert_eq!(c.call(&["EXISTS", &k]), int(0));
    assert_eq!(c.call(&["RPUSH", &k, "a"]), int(1));
    assert_eq!(c.call(&["RPOP", &k]), bulk("a"));
    assert_eq!(c.call(&["EXISTS", &k]), int(0));
    assert_eq!(c.call(&["RPUSH", &k, "a"]), int(1));
    assert_eq!(c.call(&["LMPOP", "1", &k, "RIGHT"]), format!("*2\r\n{}{}", bulk(&k), bulks(&["a"])));
    assert_eq!(c.call(&["EXISTS", &k]), int(0));
    let d = key("d");
    assert_eq!(c.call(&["RPUSH", &k, "a"]), int(1));
    assert_eq!(c.call(&["LMOVE", &k, &d, "LEFT", "LEFT"]), bulk("a"));
    assert_eq!(c.call(&["EXISTS", &k]), int(0));
    assert_eq!(c.call(&["TYPE", &d]), "+list\r\n");
}

#[test]
fn lpos_options_and_errors() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("l");
    let none = key("none");
    assert_eq!(c.call(&["RPUSH", &k, "a", "b", "c", "1", "2", "3", "c", "c"]), int(8));
    assert_eq!(c.call(&["LPOS", &k, "c"]), int(2));
    assert_eq!(c.call(&["LPOS", &k, "c", "RANK", "2"]), int(6));
    assert_eq!(c.call(&["LPOS", &k, "c", "RANK", "-1"]), int(7));
    assert_eq!(c.call(&["LPOS", &k, "c", "COUNT", "2"]), "*2\r\n:2\r\n:6\r\n");
    assert_eq!(c.call(&["LPOS", &k, "c", "COUNT", "0"]), "*3\r\n:2\r\n:6\r\n:7\r\n");
    assert_eq!(c.call(&["LPOS", &k, "c", "RANK", "-1", "COUNT", "2"]), "*2\r\n:7\r\n:6\r\n");
    assert_eq!(c.call(&["LPOS", &k, "c", "COUNT", "0", "MAXLEN", "3"]), "*1\r\n:2\r\n");
    assert_eq!(c.call(&["LPOS", &k, "zz"]), NULL2);
    assert_eq!(c.call(&["LPOS", &k, "zz", "COUNT", "2"]), EMPTY);
    assert_eq!(c.call(&["LPOS", &none, "a"]), NULL2);
    assert_eq!(c.call(&["LPOS", &none, "a", "COUNT", "0"]), EMPTY);
    let rank0 = "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list";
    assert_eq!(c.call(&["LPOS", &k, "c", "RANK", "0"]), error(rank0));
    assert_eq!(c.call(&["LPOS", &k, "c", "RANK", "x"]), NOT_INT);
    assert_eq!(c.call(&["LPOS", &k, "c", "COUNT", "-1"]), error("ERR COUNT can't be negative"));
    assert_eq!(c.call(&["LPOS", &k, "c", "COUNT", "x"]), error("ERR COUNT can't be negative"));
    assert_eq!(c.call(&["LPOS", &k, "c", "MAXLEN", "-1"]), error("ERR MAXLEN can't be negative"));
    assert_eq!(c.call(&["LPOS", &k, "c", "MAXLEN", "x"]), error("ERR MAXLEN can't be negative"));
    // Options are checked in the order given.
    assert_eq!(c.call(&["LPOS", &k, "c", "COUNT", "-1", "RANK", "0"]), error("ERR COUNT can't be negative"));
    assert_eq!(c.call(&["LPOS", &k, "c", "RANK", "0", "COUNT", "-1"]), error(rank0));
    assert_eq!(c.call(&["LPOS", &k, "c", "FOO"]), SYNTAX);
    assert_eq!(c.call(&["LPOS", &k, "c", "RANK"]), SYNTAX);
    assert_eq!(c.call(&["LPOS", &none, "c", "RANK", "0"]), error(rank0));
}

#[test]
fn lmove_rpoplpush_lmpop() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (s, d, none, str_key) = (key("src"), key("dst"), key("none"), key("str"));
    assert_eq!(c.call(&["SET", &str_key, "v"]), OK);
    assert_eq!(c.call(&["RPUSH", &s, "a", "b", "c"]), int(3));
    assert_eq!(c.call(&["LMOVE", &s, &d, "LEFT", "RIGHT"]), bulk("a"));
    assert_eq!(c.call(&["LMOVE", &s, &d, "right", "left"]), bulk("c"));
    assert_eq!(all(&mut c, &d), bulks(&["c", "a"]));
    assert_eq!(c.call(&["RPOPLPUSH", &d, &s]), bulk("a"));
    assert_eq!(all(&mut c, &s), bulks(&["a", "b"]));
    // The same key: a rotation.
    assert_eq!(c.call(&["LMOVE", &s, &s, "LEFT", "RIGHT"]), bulk("a"));
    assert_eq!(all(&mut c, &s), bulks(&["b", "a"]));
    assert_eq!(c.call(&["RPOPLPUSH", &s, &s]), bulk("a"));
    assert_eq!(all(&mut c, &s), bulks(&["a", "b"]));
    // Errors, in Redis's order: the ends first, then a missing source
    // answers null whatever the destination, then WRONGTYPE before any pop.
    assert_eq!(c.call(&["LMOVE", &s, &d, "MIDDLE", "LEFT"]), SYNTAX);
    assert_eq!(c.call(&["LMOVE", &s, &d, "LEFT", "MIDDLE"]), SYNTAX);
    assert_eq!(c.call(&["LMOVE", &none, &str_key, "LEFT", "LEFT"]), NULL2);
    assert_eq!(c.call(&["RPOPLPUSH", &none, &d]), NULL2);
    assert_eq!(c.call(&["LMOVE", &s, &str_key, "LEFT", "LEFT"]), WRONGTYPE);
    assert_eq!(c.call(&["RPOPLPUSH", &s, &str_key]), WRONGTYPE);
    assert_eq!(c.call(&["LMOVE", &str_key, &d, "LEFT", "LEFT"]), WRONGTYPE);
    assert_eq!(all(&mut c, &s), bulks(&["a", "b"]), "nothing popped on WRONGTYPE");
    assert_eq!(c.call(&["GET", &str_key]), bulk("v"));
    // LMPOP.
    assert_eq!(c.call(&["RPUSH", &d, "x", "y", "z"]), int(4));
    assert_eq!(c.call(&["LMPOP", "2", &none, &s, "LEFT"]), format!("*2\r\n{}{}", bulk(&s), bulks(&["a"])));
    assert_eq!(c.call(&["LMPOP", "2", &s, &d, "RIGHT", "COUNT", "5"]), format!("*2\r\n{}{}", bulk(&s), bulks(&["b"])));
    assert_eq!(c.call(&["LMPOP", "1", &d, "left", "count", "2"]), format!("*2\r\n{}{}", bulk(&d), bulks(&["c", "x"])));
    assert_eq!(c.call(&["LMPOP", "1", &none, "LEFT"]), NULL_ARRAY2);
    assert_eq!(c.call(&["LMPOP", "2", &none, &str_key, "LEFT"]), WRONGTYPE);
    assert_eq!(c.call(&["LMPOP", "2", &str_key, &d, "LEFT"]), WRONGTYPE);
    let numkeys = error("ERR numkeys should be greater than 0");
    assert_eq!(c.call(&["LMPOP", "0", &d, "LEFT"]), numkeys);
    assert_eq!(c.call(&["LMPOP", "-1", &d, "LEFT"]), numkeys);
    assert_eq!(c.call(&["LMPOP", "x", &d, "LEFT"]), numkeys);
    assert_eq!(c.call(&["LMPOP", "2", &d, "LEFT"]), SYNTAX);
    assert_eq!(c.call(&["LMPOP", "99999999999", &d, "LEFT"]), SYNTAX);
    assert_eq!(c.call(&["LMPOP", "1", &d, "MIDDLE"]), SYNTAX);
    assert_eq!(c.call(&["LMPOP", "1", &d, "LEFT", "COUNT"]), SYNTAX);
    assert_eq!(c.call(&["LMPOP", "1", &d, "LEFT", "FOO", "1"]), SYNTAX);
    assert_eq!(c.call(&["LMPOP", "1", &d, "LEFT", "COUNT", "1", "COUNT", "1"]), SYNTAX);
    let count = error("ERR count should be greater than 0");
    assert_eq!(c.call(&["LMPOP", "1", &d, "LEFT", "COUNT", "0"]), count);
    assert_eq!(c.call(&["LMPOP", "1", &d, "LEFT", "COUNT", "x"]), count);
    assert_eq!(c.call(&["LMPOP", "1", &d]), error("ERR wrong number of arguments for 'lmpop' command"));
    assert_eq!(all(&mut c, &d), bulks(&["y", "z"]));
}

#[test]
fn wrongtype_against_a_string() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let s = key("str");
    let l = key("list");
    assert_eq!(c.call(&["SET", &s, "v"]), OK);
    assert_eq!(c.call(&["RPUSH", &l, "a"]), int(1));
    let calls: Vec<Vec<&str>> = vec![
        vec!["LPUSH", &s, "a"],
        vec!["RPUSH", &s, "a"],
        vec!["LPUSHX", &s, "a"],
        vec!["RPUSHX", &s, "a"],
        vec!["LPOP", &s],
        vec!["RPOP", &s, "2"],
        vec!["LLEN", &s],
        vec!["LRANGE", &s, "0", "-1"],
        vec!["LINDEX", &s, "0"],
        vec!["LSET", &s, "0", "x"],
        vec!["LINSERT", &s, "BEFORE", "a", "b"],
        vec!["LREM", &s, "0", "a"],
        vec!["LTRIM", &s, "0", "1"],
        vec!["LPOS", &s, "a"],
        vec!["LMOVE", &s, &l, "LEFT", "LEFT"],
        vec!["RPOPLPUSH", &l, &s],
        vec!["LMPOP", "1", &s, "LEFT"],
        vec!["BLPOP", &s, "0"],
        vec!["BRPOP", &s, "0"],
        vec!["BLMOVE", &s, &l, "LEFT", "LEFT", "0"],
        vec!["BRPOPLPUSH", &l, &s, "0"],
        vec!["BLMPOP", "0", "1", &s, "LEFT"],
    ];
    for args in &calls {
        assert_eq!(c.call(args), WRONGTYPE, "{args:?}");
    }
    assert_eq!(c.call(&["GET", &s]), bulk("v"));
    assert_eq!(all(&mut c, &l), bulks(&["a"]));
}

/// A large list whose one chunk was rebuilt to its exact size by LREM
/// (11 bytes: `ab` and four 1-byte items), popped at the front (3 dead
/// bytes) and pushed at the back: the chunk's growth once came out below
/// its length and the handler panicked (the connection was closed). The
/// count-bounded chunks of `list-max-listpack-size 8` make it small.
#[test]
fn a_rebuilt_chunk_takes_a_push_after_a_pop() {
    let Some(server) = resp_private(&[]).or_else(resp_server) else { return };
    let mut c = Resp::new(&server);
    let k = key("rebuilt");
    assert_eq!(c.call(&["CONFIG", "SET", "list-max-listpack-size", "8"]), OK);
    let mut push = vec!["RPUSH".to_string(), k.clone()];
    push.extend((1..=16).map(|i| format!("x{i}")));
    push.extend(["ab", "c", "d", "e", "f", "z", "z", "z"].map(String::from));
    let push: Vec<&str> = push.iter().map(String::as_str).collect();
    assert_eq!(c.call(&push), int(24));
    assert_eq!(c.call(&["OBJECT", "ENCODING", &k]), bulk("quicklist"));
    assert_eq!(c.call(&["LREM", &k, "0", "z"]), int(3));
    assert_eq!(c.call(&["LPOP", &k, "16"]).lines().count(), 1 + 2 * 16);
    assert_eq!(c.call(&["LPOP", &k]), bulk("ab"));
    assert_eq!(c.call(&["RPUSH", &k, "g"]), int(5));
    assert_eq!(all(&mut c, &k), bulks(&["c", "d", "e", "f", "g"]));
    assert_eq!(c.call(&["CONFIG", "SET", "list-max-listpack-size", "-2"]), OK);
}

/// 200 elements of 100 bytes: 20 KB, past the 8 KiB listpack bound
/// (`list-max-listpack-size -2`), so the list is large (chunked), built
/// one push at a time (crossing once) and checked by every command.
#[test]
fn a_large_list() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("big");
    let elem = |i: usize| format!("{i:05}{}", "x".repeat(95));
    for i in 0..200 {
        assert_eq!(c.call(&["RPUSH", &k, &elem(i)]), int(i as i64 + 1));
    }
    let want: Vec<String> = (0..200).map(elem).collect();
    let refs: Vec<&str> = want.iter().map(String::as_str).collect();
    assert_eq!(all(&mut c, &k), bulks(&refs));
    assert_eq!(c.call(&["LLEN", &k]), int(200));
    assert_eq!(c.call(&["LINDEX", &k, "150"]), bulk(&elem(150)));
    assert_eq!(c.call(&["LINDEX", &k, "-1"]), bulk(&elem(199)));
    assert_eq!(c.call(&["LRANGE", &k, "98", "101"]), bulks(&refs[98..102]));
    assert_eq!(c.call(&["LPOS", &k, &elem(120)]), int(120));
    assert_eq!(c.call(&["LPOS", &k, &elem(120), "RANK", "-1"]), int(120));
    assert_eq!(c.call(&["LSET", &k, "100", "mid"]), OK);
    assert_eq!(c.call(&["LINSERT", &k, "AFTER", "mid", "after"]), int(201));
    assert_eq!(c.call(&["LRANGE", &k, "99", "102"]), bulks(&[refs[99], "mid", "after", refs[101]]));
    assert_eq!(c.call(&["LREM", &k, "0", "after"]), int(1));
    assert_eq!(c.call(&["LPUSH", &k, "head"]), int(201));
    assert_eq!(c.call(&["LPOP", &k]), bulk("head"));
    assert_eq!(c.call(&["RPOP", &k, "2"]), bulks(&[refs[199], refs[198]]));
    assert_eq!(c.call(&["LMOVE", &k, &k, "RIGHT", "LEFT"]), bulk(&elem(197)));
    assert_eq!(c.call(&["LINDEX", &k, "0"]), bulk(&elem(197)));
    assert_eq!(c.call(&["LTRIM", &k, "1", "50"]), OK);
    assert_eq!(c.call(&["LLEN", &k]), int(50));
    assert_eq!(all(&mut c, &k), bulks(&refs[0..50]));
    // Emptied, it goes like a small one.
    let r = c.call(&["LPOP", &k, "50"]);
    assert_eq!(r, bulks(&refs[0..50]));
    assert_eq!(c.call(&["EXISTS", &k]), int(0));
    // One big push (a large list at once), moved element by element.
    let d = key("bigdst");
    let mut args = vec!["RPUSH", &k];
    args.extend(refs.iter().copied());
    assert_eq!(c.call(&args), int(200));
    for i in 0..200 {
        assert_eq!(c.call(&["RPOPLPUSH", &k, &d]), bulk(&elem(199 - i)));
    }
    assert_eq!(c.call(&["EXISTS", &k]), int(0));
    assert_eq!(all(&mut c, &d), bulks(&refs));
}

#[test]
fn timeouts_and_their_errors() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (none, d) = (key("none"), key("d"));
    assert_eq!(c.call(&["BLPOP", &none, "0.1"]), NULL_ARRAY2);
    assert_eq!(c.call(&["BRPOP", &none, &d, "0.1"]), NULL_ARRAY2);
    // Redis 7.0 answers a null *array* for BLMOVE's timeout too.
    assert_eq!(c.call(&["BLMOVE", &none, &d, "LEFT", "LEFT", "0.1"]), NULL_ARRAY2);
    assert_eq!(c.call(&["BRPOPLPUSH", &none, &d, "0.1"]), NULL_ARRAY2);
    assert_eq!(c.call(&["BLMPOP", "0.1", "1", &none, "LEFT"]), NULL_ARRAY2);
    // 0.0009 s rounds up to 1 ms (not 0, which would wait forever).
    assert_eq!(c.call(&["BLPOP", &none, "0.0009"]), NULL_ARRAY2);
    assert_eq!(c.call(&["BLPOP", &none, "0x1p-4"]), NULL_ARRAY2);
    let not_float = error("ERR timeout is not a float or out of range");
    let negative = error("ERR timeout is negative");
    assert_eq!(c.call(&["BLPOP", &none, "x"]), not_float);
    assert_eq!(c.call(&["BLPOP", &none, "0.1x"]), not_float);
    assert_eq!(c.call(&["BLPOP", &none, "nan"]), not_float);
    assert_eq!(c.call(&["BLPOP", &none, "1e5000"]), not_float);
    assert_eq!(c.call(&["BLPOP", &none, "-1"]), negative);
    assert_eq!(c.call(&["BLPOP", &none, "inf"]), negative);
    assert_eq!(c.call(&["BLPOP", &none, "1e300"]), negative);
    assert_eq!(c.call(&["BLPOP", &none, "9223372036854775.808"]), negative);
    assert_eq!(c.call(&["BLMOVE", &none, &d, "MIDDLE", "LEFT", "x"]), SYNTAX);
    assert_eq!(c.call(&["BLMOVE", &none, &d, "LEFT", "LEFT", "x"]), not_float);
    assert_eq!(c.call(&["BRPOPLPUSH", &none, &d, "-1"]), negative);
    // BLMPOP: numkeys, the end and COUNT come before the timeout.
    assert_eq!(c.call(&["BLMPOP", "x", "0", &none, "LEFT"]), error("ERR numkeys should be greater than 0"));
    assert_eq!(c.call(&["BLMPOP", "x", "1", &none, "MIDDLE"]), SYNTAX);
    assert_eq!(
        c.call(&["BLMPOP", "-1", "1", &none, "LEFT", "COUNT", "0"]),
        error("ERR count should be greater than 0")
    );
    assert_eq!(c.call(&["BLMPOP", "x", "1", &none, "LEFT"]), not_float);
    assert_eq!(c.call(&["BLMPOP", "-1", "1", &none, "LEFT"]), negative);
    // Elements present: served at once, like the non-blocking commands.
    assert_eq!(c.call(&["RPUSH", &d, "a", "b", "c", "e"]), int(4));
    assert_eq!(c.call(&["BLPOP", &none, &d, "0"]), bulks(&[&d, "a"]));
    assert_eq!(c.call(&["BRPOP", &d, "0"]), bulks(&[&d, "e"]));
    assert_eq!(
        c.call(&["BLMPOP", "0", "2", &none, &d, "RIGHT", "COUNT", "5"]),
        format!("*2\r\n{}{}", bulk(&d), bulks(&["c", "b"]))
    );
    assert_eq!(c.call(&["EXISTS", &d]), int(0));
    // RESP3: the timeout's null is `_`.
    assert!(c.call(&["HELLO", "3"]).starts_with('%'));
    assert_eq!(c.call(&["BLPOP", &none, "0.1"]), NULL3);
    assert_eq!(c.call(&["BLMOVE", &none, &d, "LEFT", "LEFT", "0.1"]), NULL3);
}

#[test]
fn blpop_is_woken_by_a_push_from_another_connection() {
    let Some(server) = two_workers() else { return };
    let k = key("q");
    let mut waiter = Resp::new(&server);
    let mut pusher = Resp::new(&server);
    waiter.send(&["BLPOP", &k, "0"]);
    await_blocked(&server, 1);
    assert!(waiter.silent(), "blocked until a push");
    assert_eq!(pusher.call(&["RPUSH", &k, "v"]), int(1));
    assert_eq!(waiter.reply(), bulks(&[&k, "v"]));
    assert_eq!(pusher.call(&["EXISTS", &k]), int(0), "the element went to the blocked client");
    // BRPOP on several keys, woken by the second.
    let k2 = key("q2");
    waiter.send(&["BRPOP", &k, &k2, "0"]);
    await_blocked(&server, 1);
    assert_eq!(pusher.call(&["LPUSH", &k2, "a", "b"]), int(2));
    assert_eq!(waiter.reply(), bulks(&[&k2, "a"]));
    assert_eq!(all(&mut pusher, &k2), bulks(&["b"]));
    // BLMOVE, woken, moves the element and answers it.
    let d = key("d");
    waiter.send(&["BLMOVE", &k, &d, "RIGHT", "LEFT", "0"]);
    await_blocked(&server, 1);
    assert_eq!(pusher.call(&["RPUSH", &k, "m"]), int(1));
    assert_eq!(waiter.reply(), bulk("m"));
    assert_eq!(all(&mut pusher, &d), bulks(&["m"]));
    assert_eq!(pusher.call(&["EXISTS", &k]), int(0));
    // BRPOPLPUSH likewise; BLMPOP with a count takes what is there.
    waiter.send(&["BRPOPLPUSH", &k, &d, "0"]);
    await_blocked(&server, 1);
    assert_eq!(pusher.call(&["RPUSH", &k, "n"]), int(1));
    assert_eq!(waiter.reply(), bulk("n"));
    assert_eq!(all(&mut pusher, &d), bulks(&["n", "m"]));
    waiter.send(&["BLMPOP", "0", "2", &k, &k2, "LEFT", "COUNT", "10"]);
    // k2 still holds "b": served at once.
    assert_eq!(waiter.reply(), format!("*2\r\n{}{}", bulk(&k2), bulks(&["b"])));
    waiter.send(&["BLMPOP", "0", "2", &k, &k2, "LEFT", "COUNT", "10"]);
    await_blocked(&server, 1);
    assert_eq!(pusher.call(&["RPUSH", &k, "1", "2", "3"]), int(3));
    assert_eq!(waiter.reply(), format!("*2\r\n{}{}", bulk(&k), bulks(&["1", "2", "3"])));
    // A push that LMOVE makes wakes too.
    waiter.send(&["BLPOP", &k, "0"]);
    await_blocked(&server, 1);
    assert_eq!(pusher.call(&["LMOVE", &d, &k, "LEFT", "LEFT"]), bulk("n"));
    assert_eq!(waiter.reply(), bulks(&[&k, "n"]));
}

#[test]
fn blocked_clients_are_served_first_come_first_served() {
    let Some(server) = two_workers() else { return };
    let k = key("fifo");
    let mut first = Resp::new(&server);
    let mut second = Resp::new(&server);
    let mut third = Resp::new(&server);
    let mut pusher = Resp::new(&server);
    first.send(&["BLPOP", &k, "0"]);
    await_blocked(&server, 1);
    second.send(&["BLPOP", &k, "0"]);
    await_blocked(&server, 2);
    third.send(&["BRPOP", &k, "0"]);
    await_blocked(&server, 3);
    // One element: the first blocked gets it, the others stay blocked.
    assert_eq!(pusher.call(&["RPUSH", &k, "1"]), int(1));
    assert_eq!(first.reply(), bulks(&[&k, "1"]));
    assert!(second.silent() && third.silent());
    // Two at once: one each, in order.
    assert_eq!(pusher.call(&["RPUSH", &k, "2", "3"]), int(2));
    assert_eq!(second.reply(), bulks(&[&k, "2"]));
    assert_eq!(third.reply(), bulks(&[&k, "3"]));
    assert_eq!(pusher.call(&["EXISTS", &k]), int(0));
    // Several elements for several blocked clients: one each, in order,
    // the rest stays.
    first.send(&["BLPOP", &k, "0"]);
    await_blocked(&server, 1);
    second.send(&["BLPOP", &k, "0"]);
    await_blocked(&server, 2);
    assert_eq!(pusher.call(&["RPUSH", &k, "a", "b", "c"]), int(3));
    assert_eq!(first.reply(), bulks(&[&k, "a"]));
    assert_eq!(second.reply(), bulks(&[&k, "b"]));
    assert_eq!(all(&mut pusher, &k), bulks(&["c"]));
}

#[test]
fn a_blocked_client_that_disconnects_takes_nothing() {
    let Some(server) = two_workers() else { return };
    let k = key("gone");
    let mut pusher = Resp::new(&server);
    {
        let mut waiter = Resp::new(&server);
        waiter.send(&["BLPOP", &k, "0"]);
        await_blocked(&server, 1);
        waiter.s.shutdown(std::net::Shutdown::Both).unwrap();
    }
    await_blocked(&server, 0);
    assert_eq!(pusher.call(&["RPUSH", &k, "kept"]), int(1));
    settle();
    assert_eq!(all(&mut pusher, &k), bulks(&["kept"]));
    // A client blocked behind a departed one is still served.
    let mut later = Resp::new(&server);
    let mut gone = Resp::new(&server);
    assert_eq!(pusher.call(&["DEL", &k]), int(1));
    gone.send(&["BLPOP", &k, "0"]);
    await_blocked(&server, 1);
    later.send(&["BLPOP", &k, "0"]);
    await_blocked(&server, 2);
    gone.s.shutdown(std::net::Shutdown::Both).unwrap();
    drop(gone);
    await_blocked(&server, 1);
    assert_eq!(pusher.call(&["RPUSH", &k, "x"]), int(1));
    assert_eq!(later.reply(), bulks(&[&k, "x"]));
}

#[test]
fn commands_pipelined_behind_a_blocked_one_wait() {
    let Some(server) = two_workers() else { return };
    let k = key("pipe");
    let mut c = Resp::new(&server);
    let mut pusher = Resp::new(&server);
    let mut bytes = encode(&[b"BLPOP", k.as_bytes(), b"0"]);
    bytes.extend_from_slice(&encode(&[b"PING"]));
    bytes.extend_from_slice(&encode(&[b"LLEN", k.as_bytes()]));
    c.send_raw(&bytes);
    await_blocked(&server, 1);
    assert!(c.silent(), "nothing answered while blocked, not even PING");
    assert_eq!(pusher.call(&["RPUSH", &k, "a", "b"]), int(2));
    assert_eq!(c.reply(), bulks(&[&k, "a"]));
    assert_eq!(c.reply(), "+PONG\r\n");
    assert_eq!(c.reply(), int(1));
}

/// Amalgam only (the counter is server-wide, and Redis's may count other
/// tests' clients): INFO's blocked_clients follows blocking, timeouts and
/// disconnects, so no client is left registered.
#[test]
fn blocked_clients_are_counted_and_released() {
    let Some(server) = resp_private(&["-t", "2"]) else { return };
    let mut admin = Resp::new(&server);
    let k = key("count");
    let mut a = Resp::new(&server);
    let mut b = Resp::new(&server);
    a.send(&["BLPOP", &k, "0"]);
    b.send(&["BLPOP", &k, "0.3"]);
    await_blocked(&server, 2);
    assert_eq!(b.reply(), NULL_ARRAY2);
    assert_eq!(blocked_count(&mut admin), 1);
    a.s.shutdown(std::net::Shutdown::Both).unwrap();
    drop(a);
    await_blocked(&server, 0);
    assert_eq!(admin.call(&["RPUSH", &k, "v"]), int(1));
    assert_eq!(admin.call(&["LLEN", &k]), int(1));
}

/// Many blocked clients and two pushers on different connections (on
/// amalgam: different workers), racing: every element pushed is received
/// by exactly one client (none lost — a lost wake-up would leave a client
/// blocked and its read timing out — and none duplicated), and what the
/// BRPOPLPUSH clients received is exactly what their destination holds.
#[test]
fn racing_pushers_and_blocked_clients_lose_and_duplicate_nothing() {
    const WAITERS: usize = 6;
    const POPS_EACH: usize = 40;
    const PUSHERS: usize = 2;
    let Some(server) = two_workers() else { return };
    let server = std::sync::Arc::new(server);
    let (k, d) = (key("race"), key("race_dst"));
    let waiters: Vec<_> = (0..WAITERS)
        .map(|w| {
            let (server, k, d) = (std::sync::Arc::clone(&server), k.clone(), d.clone());
            std::thread::spawn(move || {
                let mut c = Resp::new(&server);
                let mut got = Vec::new();
                for _ in 0..POPS_EACH {
                    if w % 2 == 0 {
                        let r = c.call(&["BLPOP", &k, "0"]);
                        let want = format!("*2\r\n{}", bulk(&k));
                        let v = r.strip_prefix(&want).unwrap_or_else(|| panic!("BLPOP: {r:?}"));
                        got.push((false, v.to_string()));
                    } else {
                        let r = c.call(&["BRPOPLPUSH", &k, &d, "0"]);
                        assert!(r.starts_with('$') && r != NULL2, "BRPOPLPUSH: {r:?}");
                        got.push((true, r));
                    }
                }
                got
            })
        })
        .collect();
    let per_pusher = WAITERS * POPS_EACH / PUSHERS;
    let pushers: Vec<_> = (0..PUSHERS)
        .map(|p| {
            let (server, k) = (std::sync::Arc::clone(&server), k.clone());
            std::thread::spawn(move || {
                let mut c = Resp::new(&server);
                let mut i = 0;
                // One, two or three elements per push.
                while i < per_pusher {
                    let n = (1 + i % 3).min(per_pusher - i);
                    let elems: Vec<String> = (i..i + n).map(|j| format!("p{p}-{j}")).collect();
                    let mut args = vec!["RPUSH", k.as_str()];
                    args.extend(elems.iter().map(String::as_str));
                    let r = c.call(&args);
                    assert!(r.starts_with(':'), "RPUSH: {r:?}");
                    i += n;
                }
            })
        })
        .collect();
    for p in pushers {
        p.join().unwrap();
    }
    let mut received = Vec::new();
    let mut moved = Vec::new();
    for w in waiters {
        for (to_dst, v) in w.join().unwrap() {
            if to_dst {
                moved.push(v.clone());
            }
            received.push(v);
        }
    }
    let mut want: Vec<String> =
        (0..PUSHERS).flat_map(|p| (0..per_pusher).map(move |j| bulk(&format!("p{p}-{j}")))).collect();
    want.sort();
    received.sort();
    assert_eq!(received, want);
    let mut c = Resp::new(&server);
    assert_eq!(c.call(&["EXISTS", &k]), int(0));
    assert_eq!(c.call(&["LLEN", &d]), int(moved.len() as i64));
    let dst = all(&mut c, &d);
    for v in &moved {
        assert!(dst.contains(v.as_str()), "{v:?} not in the destination");
    }
}

/// A BLMOVE client whose destination became another kind while it was
/// blocked: woken by the push, it is answered WRONGTYPE and unblocked, and
/// the element stays in the source (Redis 7.0 does the same).
#[test]
fn blmove_woken_onto_a_wrong_type_destination_takes_nothing() {
    let Some(server) = two_workers() else { return };
    let (s, d) = (key("s"), key("d"));
    let mut waiter = Resp::new(&server);
    let mut other = Resp::new(&server);
    waiter.send(&["BLMOVE", &s, &d, "LEFT", "LEFT", "0"]);
    await_blocked(&server, 1);
    assert_eq!(other.call(&["SET", &d, "str"]), OK);
    assert_eq!(other.call(&["RPUSH", &s, "x"]), int(1));
    assert_eq!(waiter.reply(), WRONGTYPE);
    assert_eq!(all(&mut other, &s), bulks(&["x"]));
    assert_eq!(other.call(&["GET", &d]), bulk("str"));
    // The connection runs again.
    assert_eq!(waiter.call(&["PING"]), "+PONG\r\n");
}

/// A list's expiry survives the writes that change it, small or large
/// (and the change from one form to the other).
#[test]
fn expiry_survives_list_writes() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("ttl");
    assert_eq!(c.call(&["RPUSH", &k, "a", "b"]), int(2));
    assert_eq!(c.call(&["EXPIRE", &k, "100"]), int(1));
    assert_eq!(c.call(&["RPUSH", &k, "c"]), int(3));
    assert_eq!(c.call(&["LPOP", &k]), bulk("a"));
    let big = "x".repeat(1000);
    for i in 0..12 {
        assert_eq!(c.call(&["LPUSH", &k, &big]), int(3 + i));
    }
    assert_eq!(c.call(&["LSET", &k, "0", "y"]), OK);
    assert_eq!(c.call(&["RPOP", &k]), bulk("c"));
    let ttl = as_int(&c.call(&["TTL", &k]));
    assert!((99..=100).contains(&ttl), "TTL {ttl}");
    assert_eq!(c.call(&["PERSIST", &k]), int(1));
    assert_eq!(c.call(&["LPUSH", &k, "z"]), int(14));
    assert_eq!(c.call(&["TTL", &k]), int(-1));
}

/// COMMAND INFO's name, arity, flags, key positions and ACL categories
/// (the fields before the tips and key specs) are Redis 7.0's.
#[test]
fn command_info_of_list_commands() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let head = |name: &str, arity: i64, flags: &[&str], keys: (i64, i64, i64), cats: &[&str]| {
        let mut s = format!("*1\r\n*10\r\n{}{}*{}\r\n", bulk(name), int(arity), flags.len());
        for f in flags {
            s.push_str(&format!("+{f}\r\n"));
        }
        s.push_str(&format!("{}{}{}*{}\r\n", int(keys.0), int(keys.1), int(keys.2), cats.len()));
        for cat in cats {
            s.push_str(&format!("+{cat}\r\n"));
        }
        s
    };
    let cases = [
        ("lpush", head("lpush", -3, &["write", "denyoom", "fast"], (1, 1, 1), &["@write", "@list", "@fast"])),
        ("lpop", head("lpop", -2, &["write", "fast"], (1, 1, 1), &["@write", "@list", "@fast"])),
        ("lrange", head("lrange", 4, &["readonly"], (1, 1, 1), &["@read", "@list", "@slow"])),
        ("rpoplpush", head("rpoplpush", 3, &["write", "denyoom"], (1, 2, 1), &["@write", "@list", "@slow"])),
        ("lmpop", head("lmpop", -4, &["write", "movablekeys"], (0, 0, 0), &["@write", "@list", "@slow"])),
        (
            "blpop",
            head(
                "blpop",
                -3,
                &["write", "noscript", "blocking"],
                (1, -2, 1),
                &["@write", "@list", "@slow", "@blocking"],
            ),
        ),
        (
            "blmove",
            head(
                "blmove",
                6,
                &["write", "denyoom", "noscript", "blocking"],
                (1, 2, 1),
                &["@write", "@list", "@slow", "@blocking"],
            ),
        ),
        (
            "blmpop",
            head(
                "blmpop",
                -5,
                &["write", "blocking", "movablekeys"],
                (0, 0, 0),
                &["@write", "@list", "@slow", "@blocking"],
            ),
        ),
    ];
    for (name, want) in cases {
        let got = c.call(&["COMMAND", "INFO", name]);
        assert!(got.starts_with(&want), "{name}:\n got: {got:?}\nwant: {want:?}…");
    }
}

/// A list written over and over (a queue every client pushes to and pops
/// from) moves to its large, in-place form (amalgam's typed.rs, "A hot
/// list goes large") without its contents or its replies changing; Redis
/// 7.0 calls every list a quicklist, so OBJECT ENCODING agrees with it
/// either way. A private server: other tests' writes on the worker could
/// take the key's slot in the count.
#[test]
fn a_list_written_often_goes_large_intact() {
    let Some(server) = resp_private(&["-t", "1"]).or_else(resp_server) else { return };
    let mut c = Resp::new(&server);
    let k = key("hotlist");
    let items: Vec<String> = (0..10).map(|i| format!("item-{i}")).collect();
    let mut args = vec!["RPUSH", k.as_str()];
    args.extend(items.iter().map(String::as_str));
    assert_eq!(c.call(&args), int(10));
    // Bounded: 200 rounds of LPUSH then RPOP (the list keeps 10 items and
    // rotates by one per round).
    let mut model: std::collections::VecDeque<String> = items.iter().cloned().collect();
    for i in 0..200 {
        let v = format!("new-{i}");
        assert_eq!(c.call(&["LPUSH", &k, &v]), int(11));
        model.push_front(v);
        let last = model.pop_back().expect("11 items");
        assert_eq!(c.call(&["RPOP", &k]), bulk(&last));
    }
    assert_eq!(c.call(&["OBJECT", "ENCODING", &k]), bulk("quicklist"));
    let want: Vec<&str> = model.iter().map(String::as_str).collect();
    assert_eq!(all(&mut c, &k), bulks(&want));
    assert_eq!(c.call(&["LLEN", &k]), int(10));
    assert_eq!(c.call(&["LINDEX", &k, "-1"]), bulk(want[9]));
}

#[test]
fn rename_onto_a_blocked_key_serves_its_client() {
    // RENAME and RENAMENX put a value at the destination as a push does:
    // Redis's dbAdd signals the key ready, and the client blocked there
    // is served at once (not at its timeout).
    let Some(server) = two_workers() else { return };
    let (src, dst) = (key("rn-src"), key("rn-dst"));
    let mut waiter = Resp::new(&server);
    let mut writer = Resp::new(&server);
    waiter.send(&["BLPOP", &dst, "0"]);
    await_blocked(&server, 1);
    assert_eq!(writer.call(&["RPUSH", &src, "a", "b"]), int(2));
    assert_eq!(writer.call(&["RENAME", &src, &dst]), OK);
    assert_eq!(waiter.reply(), bulks(&[&dst, "a"]));
    assert_eq!(all(&mut writer, &dst), bulks(&["b"]));
    assert_eq!(writer.call(&["DEL", &dst]), int(1));
    // RENAMENX, and a sorted set for BZPOPMIN.
    waiter.send(&["BZPOPMIN", &dst, "0"]);
    await_blocked(&server, 1);
    assert_eq!(writer.call(&["ZADD", &src, "1", "m"]), int(1));
    assert_eq!(writer.call(&["RENAMENX", &src, &dst]), int(1));
    assert_eq!(waiter.reply(), format!("*3\r\n{}{}{}", bulk(&dst), bulk("m"), bulk("1")));
    assert_eq!(writer.call(&["EXISTS", &src, &dst]), int(0));
    // A string renamed there leaves a list's client blocked (Redis 7.0
    // signals lists and sorted sets only); a list renamed over it later
    // serves it.
    waiter.send(&["BLPOP", &dst, "0"]);
    await_blocked(&server, 1);
    assert_eq!(writer.call(&["SET", &src, "s"]), OK);
    assert_eq!(writer.call(&["RENAME", &src, &dst]), OK);
    assert!(waiter.silent(), "a string does not serve a BLPOP");
    assert_eq!(writer.call(&["RPUSH", &src, "z"]), int(1));
    assert_eq!(writer.call(&["RENAME", &src, &dst]), OK);
    assert_eq!(waiter.reply(), bulks(&[&dst, "z"]));
    assert_eq!(writer.call(&["EXISTS", &dst]), int(0));
}

#[test]
fn a_client_blocked_on_several_keys_is_served_from_the_first_ready() {
    // Redis serves a blocked client from the first of its keys that
    // became ready, not the first it named: a transaction that pushes
    // to its second key, then its first, serves it from the second.
    let Some(server) = two_workers() else { return };
    let (k1, k2) = (key("rd-1"), key("rd-2"));
    let mut waiter = Resp::new(&server);
    let mut writer = Resp::new(&server);
    waiter.send(&["BLPOP", &k1, &k2, "0"]);
    await_blocked(&server, 1);
    assert_eq!(writer.call(&["MULTI"]), OK);
    assert_eq!(writer.call(&["RPUSH", &k2, "x"]), "+QUEUED\r\n");
    assert_eq!(writer.call(&["RPUSH", &k1, "y"]), "+QUEUED\r\n");
    assert_eq!(writer.call(&["EXEC"]), "*2\r\n:1\r\n:1\r\n");
    assert_eq!(waiter.reply(), bulks(&[&k2, "x"]));
    assert_eq!(all(&mut writer, &k1), bulks(&["y"]));
    assert_eq!(writer.call(&["EXISTS", &k2]), int(0));
    // And the other way round.
    assert_eq!(writer.call(&["DEL", &k1]), int(1));
    waiter.send(&["BLPOP", &k1, &k2, "0"]);
    await_blocked(&server, 1);
    assert_eq!(writer.call(&["MULTI"]), OK);
    assert_eq!(writer.call(&["RPUSH", &k1, "p"]), "+QUEUED\r\n");
    assert_eq!(writer.call(&["RPUSH", &k2, "q"]), "+QUEUED\r\n");
    assert_eq!(writer.call(&["EXEC"]), "*2\r\n:1\r\n:1\r\n");
    assert_eq!(waiter.reply(), bulks(&[&k1, "p"]));
    assert_eq!(all(&mut writer, &k2), bulks(&["q"]));
    assert_eq!(writer.call(&["DEL", &k2]), int(1));
}

#[test]
fn blocking_commands_in_a_transaction_answer_their_null() {
    // Inside EXEC nothing blocks: BLPOP, BRPOP and BLMPOP answer a null
    // array; BLMOVE and BRPOPLPUSH a null bulk (`$-1` in RESP2, `_` in
    // RESP3), as Redis answers a client that may not block.
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (e, d) = (key("tx-empty"), key("tx-dst"));
    assert_eq!(c.call(&["MULTI"]), OK);
    for cmd in [
        vec!["BLPOP", &e, "0"],
        vec!["BRPOP", &e, "0"],
        vec!["BLMPOP", "0", "1", &e, "LEFT"],
        vec!["BLMOVE", &e, &d, "LEFT", "LEFT", "0"],
        vec!["BRPOPLPUSH", &e, &d, "0"],
    ] {
        assert_eq!(c.call(&cmd), "+QUEUED\r\n");
    }
    assert_eq!(c.call(&["EXEC"]), "*5\r\n*-1\r\n*-1\r\n*-1\r\n$-1\r\n$-1\r\n");
    assert!(c.call(&["HELLO", "3"]).starts_with('%'));
    assert_eq!(c.call(&["MULTI"]), OK);
    assert_eq!(c.call(&["BLPOP", &e, "0"]), "+QUEUED\r\n");
    assert_eq!(c.call(&["BLMOVE", &e, &d, "LEFT", "LEFT", "0"]), "+QUEUED\r\n");
    assert_eq!(c.call(&["EXEC"]), "*2\r\n_\r\n_\r\n");
    assert_eq!(c.call(&["EXISTS", &d]), int(0));
}
