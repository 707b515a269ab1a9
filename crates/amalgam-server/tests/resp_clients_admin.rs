//! CLIENT INFO LIST KILL UNBLOCK REPLY NO-EVICT NO-TOUCH and MONITOR, black-box.
//! Runs against amalgam and, in CI, against redis-server 7.0
//! (`AMALGAM_TEST_RESP_ADDR`); what only amalgam does is in tests that
//! start an amalgam of their own.
mod common;
use common::resp::*;
use common::*;

/// The text of a bulk (RESP2) reply.
fn text(reply: &str) -> String {
    let (head, rest) = reply.split_once("\r\n").unwrap_or_else(|| panic!("not a bulk reply: {reply:?}"));
    let n: usize = head.strip_prefix('$').and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("{reply:?}"));
    rest[..n].to_string()
}

/// `name=value` of a CLIENT LIST line.
fn field<'a>(line: &'a str, name: &str) -> &'a str {
    line.split(' ')
        .find_map(|f| f.strip_prefix(name).and_then(|r| r.strip_prefix('=')))
        .unwrap_or_else(|| panic!("no {name}= in {line:?}"))
}

#[test]
fn client_info_is_redis_line() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let id = as_int(&c.call(&["CLIENT", "ID"]));
    assert_eq!(c.call(&["CLIENT", "SETNAME", "infotest"]), OK);
    let line = text(&c.call(&["CLIENT", "INFO"]));
    assert!(line.ends_with('\n') && line.matches('\n').count() == 1, "{line:?}");
    let line = line.trim_end();
    assert!(line.starts_with(&format!("id={id} addr=")), "{line}");
    assert_eq!(field(line, "addr"), c.s.local_addr().unwrap().to_string());
    assert_eq!(field(line, "laddr"), server.resp_addr().to_string());
    assert!(field(line, "fd").parse::<i32>().unwrap() > 0);
    assert_eq!(field(line, "name"), "infotest");
    assert_eq!(field(line, "flags"), "N");
    assert_eq!(field(line, "db"), "0");
    assert_eq!(field(line, "multi"), "-1");
    assert_eq!(field(line, "cmd"), "client|info");
    assert_eq!(field(line, "user"), "default");
    assert_eq!(field(line, "resp"), "2");
    // Redis 7.0's field order, up to resp=.
    let names: Vec<&str> = line.split(' ').map(|f| f.split('=').next().unwrap()).collect();
    let want = [
        "id",
        "addr",
        "laddr",
        "fd",
        "name",
        "age",
        "idle",
        "flags",
        "db",
        "sub",
        "psub",
        "ssub",
        "multi",
        "qbuf",
        "qbuf-free",
        "argv-mem",
        "multi-mem",
        "rbs",
        "rbp",
        "obl",
        "oll",
        "omem",
        "tot-mem",
        "events",
        "cmd",
        "user",
        "redir",
        "resp",
    ];
    assert_eq!(&names[..want.len()], &want[..], "{line}");
    assert_eq!(c.call(&["CLIENT", "NO-EVICT", "on"]), OK);
    assert_eq!(field(&text(&c.call(&["CLIENT", "INFO"])), "flags"), "e");
    assert_eq!(c.call(&["CLIENT", "NO-EVICT", "OFF"]), OK);
    assert_eq!(field(&text(&c.call(&["CLIENT", "INFO"])), "flags"), "N");
    assert_eq!(c.call(&["CLIENT", "NO-EVICT", "maybe"]), error("ERR syntax error"));
    assert_eq!(c.call(&["CLIENT", "NO-EVICT"]), error("ERR wrong number of arguments for 'client|no-evict' command"));
    assert_eq!(c.call(&["CLIENT", "INFO", "x"]), error("ERR wrong number of arguments for 'client|info' command"));
    assert!(c.call(&["HELLO", "3"]).starts_with('%'));
    let r3 = c.call(&["CLIENT", "INFO"]);
    assert!(r3.starts_with('=') && r3.contains("\r\ntxt:id=") && r3.contains(" resp=3"), "RESP3: verbatim: {r3}");
}

#[test]
fn client_list_shows_every_connection() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let mut d = Resp::new(&server);
    assert_eq!(d.call(&["CLIENT", "SETNAME", "listed-d"]), OK);
    let d_id = as_int(&d.call(&["CLIENT", "ID"]));
    let c_id = as_int(&c.call(&["CLIENT", "ID"]));
    let all = text(&c.call(&["CLIENT", "LIST"]));
    assert!(all.ends_with('\n'));
    let lines: Vec<&str> = all.lines().collect();
    let d_line = lines.iter().find(|l| field(l, "id") == d_id.to_string()).expect("d listed");
    assert_eq!(field(d_line, "name"), "listed-d");
    assert_eq!(field(d_line, "cmd"), "client|id");
    assert_eq!(field(d_line, "addr"), d.s.local_addr().unwrap().to_string());
    let c_line = lines.iter().find(|l| field(l, "id") == c_id.to_string()).expect("c listed");
    assert_eq!(field(c_line, "cmd"), "client|list");
    let ids: Vec<i64> = lines.iter().map(|l| field(l, "id").parse().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "in creation order: {ids:?}");

    let only_d = text(&c.call(&["CLIENT", "LIST", "ID", &d_id.to_string(), "999999999"]));
    assert_eq!(only_d.lines().count(), 1, "{only_d}");
    assert_eq!(field(only_d.trim_end(), "name"), "listed-d");
    assert_eq!(c.call(&["CLIENT", "LIST", "TYPE", "pubsub"]), bulk(""));
    assert!(text(&c.call(&["CLIENT", "LIST", "TYPE", "normal"])).contains("name=listed-d "));
    assert_eq!(d.call(&["GET", &key("listed")]), NULL2);
    let after_get = text(&c.call(&["CLIENT", "LIST", "ID", &d_id.to_string()]));
    assert_eq!(field(after_get.trim_end(), "cmd"), "get", "a batched GET is recorded too");
    assert_eq!(c.call(&["CLIENT", "LIST", "TYPE", "foo"]), error("ERR Unknown client type 'foo'"));
    assert_eq!(c.call(&["CLIENT", "LIST", "ID", "x"]), error("ERR Invalid client ID"));
    assert_eq!(c.call(&["CLIENT", "LIST", "ID"]), error("ERR syntax error"));
    assert_eq!(c.call(&["CLIENT", "LIST", "foo"]), error("ERR syntax error"));
}

#[test]
fn client_kill_forms_and_errors() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let mut old = Resp::new(&server);
    let mut new = Resp::new(&server);
    assert_eq!(old.call(&["PING"]), "+PONG\r\n");
    let new_id = as_int(&new.call(&["CLIENT", "ID"]));
    let old_addr = old.s.local_addr().unwrap().to_string();
    assert_eq!(c.call(&["CLIENT", "KILL", &old_addr]), OK);
    assert!(old.closed(), "killed by ADDR (old form)");
    assert_eq!(c.call(&["CLIENT", "KILL", &old_addr]), error("ERR No such client"));
    assert_eq!(c.call(&["CLIENT", "KILL", "ID", &new_id.to_string()]), int(1));
    assert!(new.closed(), "killed by ID");
    assert_eq!(c.call(&["CLIENT", "KILL", "ID", &new_id.to_string()]), int(0));
    assert_eq!(c.call(&["CLIENT", "KILL", "ID", "0"]), error("ERR client-id should be greater than 0"));
    assert_eq!(c.call(&["CLIENT", "KILL", "ID", "x"]), error("ERR client-id should be greater than 0"));
    assert_eq!(c.call(&["CLIENT", "KILL", "TYPE", "foo"]), error("ERR Unknown client type 'foo'"));
    assert_eq!(c.call(&["CLIENT", "KILL", "USER", "nobody"]), error("ERR No such user 'nobody'"));
    assert_eq!(c.call(&["CLIENT", "KILL", "ADDR", "1.2.3.4:5", "SKIPME", "maybe"]), error("ERR syntax error"));
    assert_eq!(c.call(&["CLIENT", "KILL", "foo", "bar"]), error("ERR syntax error"));
    assert_eq!(c.call(&["CLIENT", "KILL", "ID", "1", "TYPE"]), error("ERR syntax error"));
    assert_eq!(c.call(&["CLIENT", "KILL", "LADDR", "1.1.1.1:1"]), int(0));
    assert_eq!(c.call(&["CLIENT", "KILL", "TYPE", "pubsub"]), int(0));
    assert_eq!(c.call(&["CLIENT", "KILL"]), error("ERR wrong number of arguments for 'client|kill' command"));
    // SKIPME defaults to yes in the new form; no kills this connection
    // after its reply.
    let me = c.s.local_addr().unwrap().to_string();
    assert_eq!(c.call(&["CLIENT", "KILL", "ADDR", &me]), int(0));
    assert_eq!(c.call(&["CLIENT", "KILL", "ADDR", &me, "USER", "default", "SKIPME", "no"]), int(1));
    assert!(c.closed());
}

#[test]
fn client_kill_reaches_every_worker() {
    // Connections are dealt round-robin over 4 workers: killing each from
    // one connection crosses workers (amalgam's cross-worker kill).
    let Some(server) = resp_private(&["-t", "4"]) else { return };
    let mut c = Resp::new(&server);
    let mut victims: Vec<(Resp, i64)> = (0..8)
        .map(|_| {
            let mut v = Resp::new(&server);
            let id = as_int(&v.call(&["CLIENT", "ID"]));
            (v, id)
        })
        .collect();
    for (v, id) in victims.iter_mut() {
        assert_eq!(c.call(&["CLIENT", "KILL", "ID", &id.to_string()]), int(1));
        assert!(v.closed(), "client {id} closed");
    }
    let list = text(&c.call(&["CLIENT", "LIST"]));
    assert_eq!(list.lines().count(), 1, "only the killer is left: {list}");
    let info = c.call(&["INFO", "clients"]);
    assert!(info.contains("connected_clients:1\r\n"), "{info}");
}

#[test]
fn client_reply_off_skip_on() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("reply");
    // Pipelined, so that a reply that should not come would show.
    let mut bytes = Vec::new();
    for cmd in [
        &["CLIENT", "REPLY", "OFF"][..],
        &["SET", &k, "1"],
        &["GET", &k],
        &["CLIENT", "REPLY", "ON"],
        &["INCR", &k],
        &["CLIENT", "REPLY", "SKIP"],
        &["INCR", &k],
        &["INCR", &k],
        &["CLIENT", "REPLY", "SKIP"],
        &["CLIENT", "REPLY", "ON"],
        &["GET", &k],
    ] {
        let a: Vec<&[u8]> = cmd.iter().map(|s| s.as_bytes()).collect();
        bytes.extend_from_slice(&encode(&a));
    }
    c.send_raw(&bytes);
    assert_eq!(c.reply(), OK, "REPLY ON answers");
    assert_eq!(c.reply(), int(2));
    assert_eq!(c.reply(), int(4), "SKIP drops one reply");
    assert_eq!(c.reply(), OK, "REPLY ON answers even after SKIP");
    assert_eq!(c.reply(), bulk("4"));
    assert!(c.silent());
    assert_eq!(c.call(&["CLIENT", "REPLY", "maybe"]), error("ERR syntax error"));
    assert_eq!(c.call(&["CLIENT", "REPLY"]), error("ERR wrong number of arguments for 'client|reply' command"));
}

#[test]
fn client_no_touch() {
    // Redis 7.2's CLIENT NO-TOUCH (Debian's 7.0 lacks it).
    let Some(server) = resp_private(&[]) else { return };
    let mut c = Resp::new(&server);
    assert_eq!(c.call(&["CLIENT", "NO-TOUCH", "on"]), OK);
    assert_eq!(field(&text(&c.call(&["CLIENT", "INFO"])), "flags"), "T");
    assert_eq!(c.call(&["CLIENT", "NO-TOUCH", "off"]), OK);
    assert_eq!(c.call(&["CLIENT", "NO-TOUCH", "x"]), error("ERR syntax error"));
    assert_eq!(c.call(&["CLIENT", "SETINFO", "lib-name", "mylib"]), OK);
    assert_eq!(field(&text(&c.call(&["CLIENT", "INFO"])), "lib-name"), "mylib");
}

/// Subscription confirmations are pushes, which Redis sends under CLIENT
/// REPLY OFF too (RESP2 and RESP3); a PING's reply it drops.
#[test]
fn reply_off_still_confirms_subscriptions() {
    let Some(server) = resp_server() else { return };
    for proto in ["2", "3"] {
        let mut c = Resp::new(&server);
        c.call(&["HELLO", proto]);
        let ch = key("reply-off-ch");
        c.send(&["CLIENT", "REPLY", "OFF"]);
        assert!(c.silent(), "RESP{proto}: REPLY OFF answers nothing");
        let head = if proto == "3" { ">" } else { "*" };
        let confirm = |kind: &str, n: i64| format!("{head}3\r\n{}{}{}", bulk(kind), bulk(&ch), int(n));
        assert_eq!(c.call(&["SUBSCRIBE", &ch]), confirm("subscribe", 1), "RESP{proto}");
        c.send(&["PING"]);
        assert!(c.silent(), "RESP{proto}: PING's reply is dropped");
        assert_eq!(c.call(&["UNSUBSCRIBE", &ch]), confirm("unsubscribe", 0), "RESP{proto}");
        assert_eq!(c.call(&["CLIENT", "REPLY", "ON"]), OK);
    }
}

/// Checks a MONITOR line: `+<secs>.<6 digits> [0 <addr>] <quoted args>`.
fn assert_monitor_line(line: &str, addr: &str, args: &str) {
    let rest = line.strip_prefix('+').unwrap_or_else(|| panic!("{line:?}"));
    let (time, rest) = rest.split_once(' ').unwrap();
    let (secs, micros) = time.split_once('.').unwrap();
    assert!(secs.parse::<u64>().unwrap() > 1_600_000_000 && micros.len() == 6, "{line:?}");
    assert_eq!(rest, format!("[0 {addr}] {args}\r\n"));
}

#[test]
fn monitor_sees_every_client() {
    let Some(server) = resp_server() else { return };
    let mut m = Resp::new(&server);
    assert_eq!(m.call(&["MONITOR"]), OK);
    let mut a = Resp::new(&server);
    let mut b = Resp::new(&server);
    let k = key("mon");
    assert_eq!(a.call(&["SET", &k, "v \"q\"\n"]), OK);
    assert_eq!(b.call(&["get", &k]), bulk("v \"q\"\n"));
    let (aa, ba) = (a.s.local_addr().unwrap().to_string(), b.s.local_addr().unwrap().to_string());
    // Against a shared Redis other tests' commands interleave: skip them.
    let mut mine = || loop {
        let l = m.reply();
        if l.contains(&format!(" [0 {aa}] ")) || l.contains(&format!(" [0 {ba}] ")) || !l.starts_with('+') {
            return l;
        }
    };
    assert_monitor_line(&mine(), &aa, &format!("\"SET\" \"{k}\" \"v \\\"q\\\"\\n\""));
    assert_monitor_line(&mine(), &ba, &format!("\"get\" \"{k}\""));
    let mut c = Resp::new(&server);
    assert_eq!(c.call(&["MONITOR", "x"]), error("ERR wrong number of arguments for 'monitor' command"));
    let ma = m.s.local_addr().unwrap().to_string();
    let all = text(&c.call(&["CLIENT", "LIST"]));
    let line = all.lines().find(|l| field(l, "addr") == ma).expect("the monitor is listed");
    assert_eq!((field(line, "flags"), field(line, "cmd")), ("O", "monitor"));
}

/// What a monitor sees of EXEC, a script and SELECT, in Redis 7.0's
/// order: EXEC after the commands it ran, a script's calls as `lua` lines
/// after its EVAL, SELECT in the database it chose, an unknown subcommand
/// not at all.
#[test]
fn monitor_order_of_exec_scripts_and_select() {
    let Some(server) = resp_server() else { return };
    let mut m = Resp::new(&server);
    assert_eq!(m.call(&["MONITOR"]), OK);
    let mut a = Resp::new(&server);
    let aa = a.s.local_addr().unwrap().to_string();
    let k = key("mon-order");
    assert_eq!(a.call(&["MULTI"]), OK);
    assert_eq!(a.call(&["SET", &k, "1"]), "+QUEUED\r\n");
    a.call(&["EXEC"]);
    a.call(&["CLIENT", "NOSUCHSUB"]);
    a.call(&["EVAL", "return redis.call('get', KEYS[1])", "1", &k]);
    assert_eq!(a.call(&["SELECT", "3"]), OK);
    assert_eq!(a.call(&["SELECT", "0"]), OK);
    assert_eq!(a.call(&["ECHO", "end"]), bulk("end"));
    // Against a shared Redis other tests' commands interleave: keep ours.
    let mut seen = Vec::new();
    for _ in 0..10_000 {
        let l = m.reply();
        let (_, rest) = l.split_once(' ').unwrap_or_else(|| panic!("{l:?}"));
        if rest.contains(&format!(" {aa}] ")) || rest.contains(" lua] ") && rest.contains(&k) {
            seen.push(rest.trim_end().to_string());
        }
        if rest.ends_with("\"ECHO\" \"end\"\r\n") && rest.contains(&aa) {
            break;
        }
    }
    let want = [
        format!("[0 {aa}] \"MULTI\""),
        format!("[0 {aa}] \"SET\" \"{k}\" \"1\""),
        format!("[0 {aa}] \"EXEC\""),
        format!("[0 {aa}] \"EVAL\" \"return redis.call('get', KEYS[1])\" \"1\" \"{k}\""),
        format!("[0 lua] \"get\" \"{k}\""),
        format!("[3 {aa}] \"SELECT\" \"3\""),
        format!("[0 {aa}] \"SELECT\" \"0\""),
        format!("[0 {aa}] \"ECHO\" \"end\""),
    ];
    assert_eq!(seen, want);
}

#[test]
fn monitor_never_shows_a_password() {
    let Some(server) = resp_server() else { return };
    let mut m = Resp::new(&server);
    assert_eq!(m.call(&["MONITOR"]), OK);
    let mut a = Resp::new(&server);
    // Wrong either way (no such user): refused, and still shown redacted.
    assert!(a.call(&["AUTH", "nosuchuser", "pw1"]).starts_with("-WRONGPASS"));
    assert!(a.call(&["HELLO", "3", "AUTH", "nosuchuser", "pw2", "SETNAME", "mon"]).starts_with("-WRONGPASS"));
    let k = key("mon-secret");
    assert_eq!(a.call(&["SET", &k, "v"]), OK);
    let aa = a.s.local_addr().unwrap().to_string();
    let mut mine = || loop {
        let l = m.reply();
        if l.contains(&format!(" [0 {aa}] ")) || !l.starts_with('+') {
            return l;
        }
    };
    assert_monitor_line(&mine(), &aa, "\"AUTH\" \"(redacted)\" \"(redacted)\"");
    assert_monitor_line(&mine(), &aa, "\"HELLO\" \"3\" \"AUTH\" \"(redacted)\" \"(redacted)\" \"SETNAME\" \"mon\"");
    assert_monitor_line(&mine(), &aa, &format!("\"SET\" \"{k}\" \"v\""));
}

#[test]
fn a_monitor_that_does_not_read_is_dropped() {
    // Amalgam bounds what a monitor may have queued (32 MiB) and drops a
    // monitor past it, so a slow monitor never holds a worker.
    let Some(server) = resp_private(&[]) else { return };
    let mut m = Resp::new(&server);
    assert_eq!(m.call(&["MONITOR"]), OK);
    let mut c = Resp::new(&server);
    let value = "x".repeat(256 * 1024);
    let k = key("flood");
    for _ in 0..200 {
        assert_eq!(c.call(&["SET", &k, &value]), OK);
    }
    assert_eq!(c.call(&["PING"]), "+PONG\r\n", "the writer is served on");
    assert!(m.closed(), "the monitor was dropped");
}

/// RESET leaves the connection as a new one (Redis 6.2+): no transaction
/// or watch, RESP2, no name, replies on, no subscription, no MONITOR; it
/// runs at once inside MULTI and in subscriber mode, and answers +RESET.
#[test]
fn reset_clears_the_connections_state() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let mut other = Resp::new(&server);
    let (k, w) = (key("reset-k"), key("reset-w"));
    assert_eq!(c.call(&["RESET"]), "+RESET\r\n");
    assert_eq!(c.call(&["RESET", "x"]), error("ERR wrong number of arguments for 'reset' command"));
    // Inside MULTI: not queued, and the transaction is gone.
    assert_eq!(c.call(&["MULTI"]), OK);
    assert_eq!(c.call(&["SET", &k, "v"]), "+QUEUED\r\n");
    assert_eq!(c.call(&["RESET"]), "+RESET\r\n");
    assert_eq!(c.call(&["EXEC"]), error("ERR EXEC without MULTI"));
    assert_eq!(c.call(&["EXISTS", &k]), int(0));
    // Watches are forgotten.
    assert_eq!(c.call(&["WATCH", &w]), OK);
    assert_eq!(c.call(&["RESET"]), "+RESET\r\n");
    assert_eq!(other.call(&["SET", &w, "1"]), OK);
    assert_eq!(c.call(&["MULTI"]), OK);
    assert_eq!(c.call(&["PING"]), "+QUEUED\r\n");
    assert_eq!(c.call(&["EXEC"]), "*1\r\n+PONG\r\n");
    // The name, RESP3, CLIENT REPLY OFF.
    assert_eq!(c.call(&["CLIENT", "SETNAME", "before-reset"]), OK);
    assert!(c.call(&["HELLO", "3"]).starts_with('%'));
    assert_eq!(c.call(&["GET", &k]), "_\r\n");
    c.send(&["CLIENT", "REPLY", "OFF"]);
    assert_eq!(c.call(&["RESET"]), "+RESET\r\n");
    assert_eq!(c.call(&["GET", &k]), "$-1\r\n");
    assert_eq!(c.call(&["CLIENT", "GETNAME"]), "$-1\r\n");
    // Subscriber mode: RESET is allowed there and leaves every channel
    // without an unsubscribe reply.
    let ch = key("reset-ch");
    assert_eq!(c.call(&["SUBSCRIBE", &ch]), format!("*3\r\n$9\r\nsubscribe\r\n{}:1\r\n", bulk(&ch)));
    assert_eq!(c.call(&["RESET"]), "+RESET\r\n");
    assert_eq!(c.call(&["PING"]), "+PONG\r\n", "no longer a subscriber");
    assert_eq!(other.call(&["PUBLISH", &ch, "m"]), int(0));
    // MONITOR: stopped.
    assert_eq!(c.call(&["MONITOR"]), OK);
    assert_eq!(c.call(&["RESET"]), "+RESET\r\n");
    assert_eq!(other.call(&["SET", &k, "after"]), OK);
    assert_eq!(c.call(&["GET", &k]), bulk("after"), "no MONITOR line before the reply");
}

/// Waits until CLIENT LIST shows client `id` blocked (`flags=b`).
fn wait_blocked(c: &mut Resp, id: i64, cmd: &str) {
    eventually(&format!("client {id} blocked in {cmd}"), std::time::Duration::from_secs(10), || {
        let list = text(&c.call(&["CLIENT", "LIST", "ID", &id.to_string()]));
        list.lines().next().is_some_and(|l| field(l, "flags") == "b" && field(l, "cmd") == cmd)
    });
}

#[test]
fn client_unblock_ends_a_blocking_command() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let mut b = Resp::new(&server);
    let id = as_int(&b.call(&["CLIENT", "ID"]));
    let (l, d, z) = (key("unblock_l"), key("unblock_d"), key("unblock_z"));
    // As its timeout would: a null array.
    b.send(&["BLPOP", &l, "0"]);
    wait_blocked(&mut c, id, "blpop");
    assert_eq!(c.call(&["CLIENT", "UNBLOCK", &id.to_string()]), int(1));
    assert_eq!(b.reply(), "*-1\r\n");
    // TIMEOUT said, on a sorted set.
    b.send(&["BZPOPMIN", &z, "0"]);
    wait_blocked(&mut c, id, "bzpopmin");
    assert_eq!(c.call(&["CLIENT", "UNBLOCK", &id.to_string(), "timeout"]), int(1));
    assert_eq!(b.reply(), "*-1\r\n");
    // With the error.
    b.send(&["BLMOVE", &l, &d, "LEFT", "RIGHT", "0"]);
    wait_blocked(&mut c, id, "blmove");
    assert_eq!(c.call(&["CLIENT", "UNBLOCK", &id.to_string(), "ERROR"]), int(1));
    assert_eq!(b.reply(), error("UNBLOCKED client unblocked via CLIENT UNBLOCK"));
    // WAIT for a replica that never comes: its count of acknowledgements.
    b.send(&["WAIT", "1", "0"]);
    wait_blocked(&mut c, id, "wait");
    assert_eq!(c.call(&["CLIENT", "UNBLOCK", &id.to_string()]), int(1));
    assert_eq!(b.reply(), int(0));
    // Not blocked, or no such client: 0. The unblocked client goes on.
    assert_eq!(c.call(&["CLIENT", "UNBLOCK", &id.to_string()]), int(0));
    assert_eq!(c.call(&["CLIENT", "UNBLOCK", "999999999"]), int(0));
    assert_eq!(c.call(&["CLIENT", "UNBLOCK", "-5"]), int(0));
    assert_eq!(b.call(&["RPUSH", &l, "x"]), int(1));
    assert_eq!(b.call(&["BLPOP", &l, "0"]), format!("*2\r\n{}{}", bulk(&l), bulk("x")));
    let flags = text(&c.call(&["CLIENT", "LIST", "ID", &id.to_string()]));
    assert_eq!(field(flags.lines().next().unwrap(), "flags"), "N");
    // Redis's errors, in its order: the count, the reason, the id.
    assert_eq!(c.call(&["CLIENT", "UNBLOCK", "abc"]), error("ERR value is not an integer or out of range"));
    assert_eq!(
        c.call(&["CLIENT", "UNBLOCK", "abc", "foo"]),
        error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
    );
    assert_eq!(
        c.call(&["CLIENT", "UNBLOCK", "1", "timeout", "x"]),
        error("ERR unknown subcommand or wrong number of arguments for 'UNBLOCK'. Try CLIENT HELP.")
    );
    assert_eq!(c.call(&["CLIENT", "UNBLOCK"]), error("ERR wrong number of arguments for 'client|unblock' command"));
}

#[test]
fn client_unblock_reaches_every_worker() {
    // Clients dealt over 4 workers, each blocked, unblocked from one
    // connection (amalgam's cross-worker request).
    let Some(server) = resp_private(&["-t", "4"]) else { return };
    let mut c = Resp::new(&server);
    let mut blocked: Vec<(Resp, i64)> = (0..8)
        .map(|i| {
            let mut b = Resp::new(&server);
            let id = as_int(&b.call(&["CLIENT", "ID"]));
            b.send(&["BLPOP", &key(&format!("unblock_w{i}")), "0"]);
            (b, id)
        })
        .collect();
    for (i, (b, id)) in blocked.iter_mut().enumerate() {
        wait_blocked(&mut c, *id, "blpop");
        let reason = if i % 2 == 0 { "TIMEOUT" } else { "ERROR" };
        assert_eq!(c.call(&["CLIENT", "UNBLOCK", &id.to_string(), reason]), int(1));
        let want =
            if i % 2 == 0 { "*-1\r\n".to_string() } else { error("UNBLOCKED client unblocked via CLIENT UNBLOCK") };
        assert_eq!(b.reply(), want);
        assert_eq!(b.call(&["PING"]), "+PONG\r\n");
    }
    let info = c.call(&["INFO", "clients"]);
    assert!(info.contains("blocked_clients:0\r\n"), "{info}");
}
