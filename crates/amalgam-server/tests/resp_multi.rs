//! Transactions and multi-key atomicity over RESP, black-box: MULTI EXEC
//! DISCARD WATCH UNWATCH, RENAME RENAMENX, and a stress test that checks
//! no client ever sees a multi-key command or an EXEC half-done. Runs
//! against amalgam and, in CI, against redis-server 7
//! (`AMALGAM_TEST_RESP_ADDR`).
mod common;
use common::resp::*;
use common::*;

#[test]
fn multi_exec_queues_and_answers_in_one_array() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (a, l) = (key("mx-a"), key("mx-l"));
    assert_eq!(c.call(&["EXEC"]), error("ERR EXEC without MULTI"));
    assert_eq!(c.call(&["DISCARD"]), error("ERR DISCARD without MULTI"));
    assert_eq!(c.call(&["MULTI"]), OK);
    assert_eq!(c.call(&["MULTI"]), error("ERR MULTI calls can not be nested"), "does not abort");
    assert_eq!(c.call(&["WATCH", &a]), error("ERR WATCH inside MULTI is not allowed"), "does not abort");
    assert_eq!(c.call(&["SET", &a, "1"]), "+QUEUED\r\n");
    assert_eq!(c.call(&["INCR", &a]), "+QUEUED\r\n");
    assert_eq!(c.call(&["LPUSH", &a, "x"]), "+QUEUED\r\n");
    assert_eq!(c.call(&["GET", &a]), "+QUEUED\r\n");
    assert_eq!(
        c.call(&["EXEC"]),
        "*4\r\n+OK\r\n:2\r\n-WRONGTYPE Operation against a key holding the wrong kind of value\r\n$1\r\n2\r\n",
        "a runtime error is one element of the reply; the rest run"
    );
    assert_eq!(c.call(&["EXEC"]), error("ERR EXEC without MULTI"));
    // An empty transaction.
    assert_eq!(c.call(&["MULTI"]), OK);
    assert_eq!(c.call(&["EXEC"]), "*0\r\n");
    // DISCARD drops the queue.
    assert_eq!(c.call(&["MULTI"]), OK);
    assert_eq!(c.call(&["RPUSH", &l, "x"]), "+QUEUED\r\n");
    assert_eq!(c.call(&["DISCARD"]), OK);
    assert_eq!(c.call(&["EXISTS", &l]), int(0));
    // Pipelined: everything between MULTI and EXEC is queued, GETs too.
    c.send(&["MULTI"]);
    c.send(&["SET", &l, "v"]);
    c.send(&["GET", &l]);
    c.send(&["MGET", &l, &a]);
    c.send(&["EXEC"]);
    assert_eq!(c.reply(), OK);
    for _ in 0..3 {
        assert_eq!(c.reply(), "+QUEUED\r\n");
    }
    assert_eq!(c.reply(), "*3\r\n+OK\r\n$1\r\nv\r\n*2\r\n$1\r\nv\r\n$1\r\n2\r\n");
}

#[test]
fn errors_while_queuing_abort_exec() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("abort");
    let execabort = error("EXECABORT Transaction discarded because of previous errors.");
    assert_eq!(c.call(&["MULTI"]), OK);
    assert_eq!(c.call(&["SET", &k, "1"]), "+QUEUED\r\n");
    assert_eq!(c.call(&["GET"]), error("ERR wrong number of arguments for 'get' command"));
    assert_eq!(c.call(&["EXEC"]), execabort);
    assert_eq!(c.call(&["EXISTS", &k]), int(0), "nothing of an aborted transaction ran");
    assert_eq!(c.call(&["MULTI"]), OK);
    assert_eq!(
        c.call(&["NOSUCHCOMMAND", "x"]),
        error("ERR unknown command 'NOSUCHCOMMAND', with args beginning with: 'x' ")
    );
    assert_eq!(c.call(&["EXEC"]), execabort);
    // The connection is out of MULTI again.
    assert_eq!(c.call(&["SET", &k, "2"]), OK);
}

#[test]
fn blocking_commands_do_not_block_inside_exec() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (l, full) = (key("mb-empty"), key("mb-full"));
    assert_eq!(c.call(&["RPUSH", &full, "a"]), int(1));
    assert_eq!(c.call(&["MULTI"]), OK);
    assert_eq!(c.call(&["BLPOP", &l, "0"]), "+QUEUED\r\n");
    assert_eq!(c.call(&["BLPOP", &full, "0"]), "+QUEUED\r\n");
    assert_eq!(c.call(&["BZPOPMIN", &l, "0"]), "+QUEUED\r\n");
    let want = format!("*3\r\n*-1\r\n*2\r\n{}$1\r\na\r\n*-1\r\n", bulk(&full));
    assert_eq!(c.call(&["EXEC"]), want);
}

#[test]
fn watch_aborts_exec_when_a_watched_key_changes() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let mut other = Resp::new(&server);
    let (w, n, out) = (key("w"), key("w-none"), key("w-out"));
    let run = |c: &mut Resp| {
        assert_eq!(c.call(&["MULTI"]), OK);
        assert_eq!(c.call(&["SET", &out, "ran"]), "+QUEUED\r\n");
        c.call(&["EXEC"])
    };
    assert_eq!(c.call(&["SET", &w, "1"]), OK);
    // Another client's write.
    assert_eq!(c.call(&["WATCH", &w]), OK);
    assert_eq!(other.call(&["SET", &w, "1"]), OK, "the same value is still a write");
    assert_eq!(run(&mut c), "*-1\r\n");
    assert_eq!(c.call(&["EXISTS", &out]), int(0));
    // Its own write.
    assert_eq!(c.call(&["WATCH", &w]), OK);
    assert_eq!(c.call(&["INCR", &w]), int(2));
    assert_eq!(run(&mut c), "*-1\r\n");
    // A new deadline.
    assert_eq!(c.call(&["WATCH", &w]), OK);
    assert_eq!(other.call(&["EXPIRE", &w, "100"]), int(1));
    assert_eq!(run(&mut c), "*-1\r\n");
    // A read changes nothing.
    assert_eq!(c.call(&["WATCH", &w, &n]), OK);
    assert_eq!(other.call(&["GET", &w]), bulk("2"));
    assert_eq!(other.call(&["EXISTS", &n]), int(0));
    assert_eq!(run(&mut c), "*1\r\n+OK\r\n");
    assert_eq!(c.call(&["GET", &out]), bulk("ran"));
    // EXEC forgets the watches: a later write does not abort the next.
    assert_eq!(other.call(&["SET", &w, "3"]), OK);
    assert_eq!(run(&mut c), "*1\r\n+OK\r\n");
    // UNWATCH and DISCARD forget them too.
    assert_eq!(c.call(&["WATCH", &w]), OK);
    assert_eq!(c.call(&["UNWATCH"]), OK);
    assert_eq!(other.call(&["SET", &w, "4"]), OK);
    assert_eq!(run(&mut c), "*1\r\n+OK\r\n");
    assert_eq!(c.call(&["WATCH", &w]), OK);
    assert_eq!(c.call(&["MULTI"]), OK);
    assert_eq!(c.call(&["DISCARD"]), OK);
    assert_eq!(other.call(&["SET", &w, "5"]), OK);
    assert_eq!(run(&mut c), "*1\r\n+OK\r\n");
    // A watched key that did not exist and was created.
    assert_eq!(c.call(&["WATCH", &n]), OK);
    assert_eq!(other.call(&["SET", &n, "x"]), OK);
    assert_eq!(run(&mut c), "*-1\r\n");
    // Deleted.
    assert_eq!(c.call(&["WATCH", &n]), OK);
    assert_eq!(other.call(&["DEL", &n]), int(1));
    assert_eq!(run(&mut c), "*-1\r\n");
}

#[test]
fn watch_sees_an_expiry_and_writes_to_large_collections() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let mut other = Resp::new(&server);
    let (e, h) = (key("we"), key("wh"));
    assert_eq!(c.call(&["SET", &e, "v", "PX", "100"]), OK);
    assert_eq!(c.call(&["WATCH", &e]), OK);
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(c.call(&["MULTI"]), OK);
    assert_eq!(c.call(&["GET", &e]), "+QUEUED\r\n");
    assert_eq!(c.call(&["EXEC"]), "*-1\r\n", "a watched key that expired aborts");
    // A hash past the listpack limit changes in place (no new item).
    let mut args: Vec<String> = vec!["HSET".into(), h.clone()];
    for i in 0..600 {
        args.push(format!("f{i}"));
        args.push("v".into());
    }
    let refs: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    assert_eq!(c.call(&refs), int(600));
    assert_eq!(c.call(&["WATCH", &h]), OK);
    assert_eq!(other.call(&["HSET", &h, "f1", "changed"]), int(0));
    assert_eq!(c.call(&["MULTI"]), OK);
    assert_eq!(c.call(&["HLEN", &h]), "+QUEUED\r\n");
    assert_eq!(c.call(&["EXEC"]), "*-1\r\n");
    assert_eq!(c.call(&["WATCH", &h]), OK);
    assert_eq!(other.call(&["HGET", &h, "f1"]), bulk("changed"));
    assert_eq!(c.call(&["MULTI"]), OK);
    assert_eq!(c.call(&["HLEN", &h]), "+QUEUED\r\n");
    assert_eq!(c.call(&["EXEC"]), "*1\r\n:600\r\n");
}

#[test]
fn rename_and_renamenx() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (a, b, h, h2, x) = (key("rn-a"), key("rn-b"), key("rn-h"), key("rn-h2"), key("rn-x"));
    assert_eq!(c.call(&["RENAME", &a, &b]), error("ERR no such key"));
    assert_eq!(c.call(&["RENAMENX", &a, &b]), error("ERR no such key"));
    assert_eq!(c.call(&["RENAME", &a, &a]), error("ERR no such key"));
    assert_eq!(c.call(&["SET", &a, "v", "EX", "100"]), OK);
    assert_eq!(c.call(&["RENAME", &a, &a]), OK);
    assert_eq!(c.call(&["RENAMENX", &a, &a]), int(0));
    assert_eq!(c.call(&["RENAME", &a, &b]), OK);
    assert_eq!(c.call(&["EXISTS", &a]), int(0));
    assert_eq!(c.call(&["GET", &b]), bulk("v"));
    let ttl = as_int(&c.call(&["TTL", &b]));
    assert!((99..=100).contains(&ttl), "the deadline moves with the value: TTL {ttl}");
    // Onto an existing key of another type; a large hash moves whole.
    let mut args: Vec<String> = vec!["HSET".into(), h.clone()];
    for i in 0..600 {
        args.push(format!("f{i}"));
        args.push(format!("v{i}"));
    }
    let refs: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    assert_eq!(c.call(&refs), int(600));
    assert_eq!(c.call(&["RPUSH", &h2, "old"]), int(1));
    assert_eq!(c.call(&["RENAME", &h, &h2]), OK);
    assert_eq!(c.call(&["TYPE", &h2]), "+hash\r\n");
    assert_eq!(c.call(&["HLEN", &h2]), int(600));
    assert_eq!(c.call(&["HGET", &h2, "f599"]), bulk("v599"));
    assert_eq!(c.call(&["EXISTS", &h]), int(0));
    // The moved hash is still writable and readable in place.
    assert_eq!(c.call(&["HSET", &h2, "new", "1"]), int(1));
    assert_eq!(c.call(&["HLEN", &h2]), int(601));
    // RENAMENX onto a live key does nothing.
    assert_eq!(c.call(&["SET", &x, "keep"]), OK);
    assert_eq!(c.call(&["RENAMENX", &h2, &x]), int(0));
    assert_eq!(c.call(&["GET", &x]), bulk("keep"));
    assert_eq!(c.call(&["DEL", &x]), int(1));
    assert_eq!(c.call(&["RENAMENX", &h2, &x]), int(1));
    assert_eq!(c.call(&["HLEN", &x]), int(601));
    assert_eq!(c.call(&["RENAME", &a]), error("ERR wrong number of arguments for 'rename' command"));
}

/// Many clients move members between two sets with SMOVE and units
/// between two counters inside MULTI/EXEC, while others read both keys
/// inside MULTI/EXEC: every read must see the totals unchanged (no
/// half-done SMOVE or EXEC), and at the end nothing is lost or doubled.
#[test]
fn no_client_sees_a_multi_key_change_half_done() {
    let Some(server) = resp_server() else { return };
    const MEMBERS: usize = 50;
    const ROUNDS: usize = 300;
    const UNITS: i64 = 1_000;
    let (s1, s2, c1, c2) = (key("st-s1"), key("st-s2"), key("st-c1"), key("st-c2"));
    let mut c = Resp::new(&server);
    for k in [&s1, &s2, &c1, &c2] {
        c.call(&["DEL", k]);
    }
    let mut args: Vec<String> = vec!["SADD".into(), s1.clone()];
    args.extend((0..MEMBERS).map(|i| format!("m{i}")));
    let refs: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    assert_eq!(c.call(&refs), int(MEMBERS as i64));
    assert_eq!(c.call(&["SET", &c1, &UNITS.to_string()]), OK);
    assert_eq!(c.call(&["SET", &c2, "0"]), OK);
    std::thread::scope(|s| {
        for t in 0..4usize {
            let (server, s1, s2, c1, c2) = (&server, &s1, &s2, &c1, &c2);
            s.spawn(move || {
                let mut c = Resp::new(server);
                for r in 0..ROUNDS {
                    let m = format!("m{}", (r * 7 + t * 13) % MEMBERS);
                    let (from, to) = if (r + t) % 2 == 0 { (s1, s2) } else { (s2, s1) };
                    let moved = c.call(&["SMOVE", from, to, &m]);
                    assert!(moved == int(0) || moved == int(1), "SMOVE: {moved}");
                    let (dec, inc) = if (r + t) % 2 == 0 { (c1, c2) } else { (c2, c1) };
                    c.send(&["MULTI"]);
                    c.send(&["DECR", dec]);
                    c.send(&["INCR", inc]);
                    c.send(&["EXEC"]);
                    assert_eq!(c.reply(), OK);
                    assert_eq!(c.reply(), "+QUEUED\r\n");
                    assert_eq!(c.reply(), "+QUEUED\r\n");
                    let exec = c.reply();
                    assert!(exec.starts_with("*2\r\n:"), "EXEC: {exec}");
                }
            });
        }
        for _ in 0..2 {
            let (server, s1, s2, c1, c2) = (&server, &s1, &s2, &c1, &c2);
            s.spawn(move || {
                let mut c = Resp::new(server);
                for _ in 0..ROUNDS {
                    c.send(&["MULTI"]);
                    c.send(&["SCARD", s1]);
                    c.send(&["SCARD", s2]);
                    c.send(&["MGET", c1, c2]);
                    c.send(&["EXEC"]);
                    assert_eq!(c.reply(), OK);
                    for _ in 0..3 {
                        assert_eq!(c.reply(), "+QUEUED\r\n");
                    }
                    let exec = c.reply();
                    let nums: Vec<i64> = exec
                        .split("\r\n")
                        .filter_map(|l| l.strip_prefix(':').or_else(|| (!l.starts_with(['*', '$'])).then_some(l)))
                        .filter_map(|l| l.parse().ok())
                        .collect();
                    assert_eq!(nums.len(), 4, "EXEC: {exec}");
                    assert_eq!(nums[0] + nums[1], MEMBERS as i64, "a half-done SMOVE: {exec}");
                    assert_eq!(nums[2] + nums[3], UNITS, "a half-done EXEC: {exec}");
                }
            });
        }
    });
    let n1 = as_int(&c.call(&["SCARD", &s1]));
    let n2 = as_int(&c.call(&["SCARD", &s2]));
    assert_eq!(n1 + n2, MEMBERS as i64, "no member lost or doubled");
    let mut all: Vec<String> = Vec::new();
    for k in [&s1, &s2] {
        let r = c.call(&["SMEMBERS", k]);
        all.extend(r.split("\r\n").filter(|l| l.starts_with('m')).map(String::from));
    }
    all.sort();
    all.dedup();
    assert_eq!(all.len(), MEMBERS);
}

#[test]
fn ltrim_that_removes_nothing_still_aborts_a_watch() {
    // Redis's LTRIM signals its key modified whether or not it trimmed
    // anything (as SET of the same value does).
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let mut other = Resp::new(&server);
    let (l, big) = (key("lt-w"), key("lt-w-big"));
    assert_eq!(c.call(&["RPUSH", &l, "a", "b", "c"]), int(3));
    assert_eq!(c.call(&["WATCH", &l]), OK);
    assert_eq!(other.call(&["LTRIM", &l, "0", "100"]), OK);
    assert_eq!(c.call(&["MULTI"]), OK);
    assert_eq!(c.call(&["PING"]), "+QUEUED\r\n");
    assert_eq!(c.call(&["EXEC"]), "*-1\r\n");
    // A large list (past the compact form) likewise.
    let items: Vec<String> = (0..1000).map(|i| format!("item-{i:06}")).collect();
    let mut push = vec!["RPUSH", big.as_str()];
    push.extend(items.iter().map(String::as_str));
    assert_eq!(c.call(&push), int(1000));
    assert_eq!(c.call(&["WATCH", &big]), OK);
    assert_eq!(other.call(&["LTRIM", &big, "0", "-1"]), OK);
    assert_eq!(c.call(&["MULTI"]), OK);
    assert_eq!(c.call(&["PING"]), "+QUEUED\r\n");
    assert_eq!(c.call(&["EXEC"]), "*-1\r\n");
    assert_eq!(c.call(&["LLEN", &big]), int(1000));
    // LTRIM of a missing key changes nothing: no abort.
    let none = key("lt-w-none");
    assert_eq!(c.call(&["WATCH", &none]), OK);
    assert_eq!(other.call(&["LTRIM", &none, "0", "1"]), OK);
    assert_eq!(c.call(&["MULTI"]), OK);
    assert_eq!(c.call(&["PING"]), "+QUEUED\r\n");
    assert_eq!(c.call(&["EXEC"]), "*1\r\n+PONG\r\n");
}
