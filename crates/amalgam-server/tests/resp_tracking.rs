//! CLIENT TRACKING (client-side caching), black-box, byte for byte: the
//! options and their errors, CLIENT CACHING, GETREDIR, TRACKINGINFO,
//! CLIENT LIST's flags, RESP3 `invalidate` pushes, RESP2 through REDIRECT
//! and `__redis__:invalidate`, NOLOOP, OPTIN/OPTOUT, BCAST prefixes,
//! FLUSHALL's null, `tracking-table-max-keys`, INFO's fields. Every
//! expectation is Redis 7.0.15's: run this file against redis-server too
//! (AMALGAM_TEST_RESP_ADDR=127.0.0.1:PORT); the tests of Amalgam-only
//! things (the memcached port) skip themselves there.
//!
//! Tests share one server when run against redis-server: each uses keys
//! of its own, and those that touch every tracking client (FLUSHALL, the
//! table's bound, counting clients) hold [`GLOBAL`] for writing while the
//! others hold it for reading.
mod common;
use common::resp::*;
use common::*;
use std::io::Write;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

static GLOBAL: RwLock<()> = RwLock::new(());

fn shared() -> RwLockReadGuard<'static, ()> {
    GLOBAL.read().unwrap_or_else(|e| e.into_inner())
}

fn exclusive() -> RwLockWriteGuard<'static, ()> {
    GLOBAL.write().unwrap_or_else(|e| e.into_inner())
}

/// A RESP3 `invalidate` push of `keys`.
fn push(keys: &[&str]) -> String {
    let mut s = format!(">2\r\n$10\r\ninvalidate\r\n*{}\r\n", keys.len());
    for k in keys {
        s.push_str(&bulk(k));
    }
    s
}

/// The RESP2 `message` on `__redis__:invalidate` of `keys`.
fn message(keys: &[&str]) -> String {
    let mut s = format!("*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n*{}\r\n", keys.len());
    for k in keys {
        s.push_str(&bulk(k));
    }
    s
}

const NULL_PUSH: &str = ">2\r\n$10\r\ninvalidate\r\n_\r\n";

/// A connection switched to RESP3.
fn resp3(server: &Server) -> Resp {
    let mut c = Resp::new(server);
    let hello = c.call(&["HELLO", "3"]);
    assert!(hello.starts_with('%'), "{hello}");
    c
}

fn id_of(c: &mut Resp) -> String {
    as_int(&c.call(&["CLIENT", "ID"])).to_string()
}

/// CLIENT INFO's `flags=` and `redir=`.
fn flags_and_redir(c: &mut Resp) -> (String, String) {
    let line = c.call(&["CLIENT", "INFO"]);
    let field = |name: &str| {
        line.split_whitespace()
            .find_map(|f| f.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| panic!("no {name}= in {line}"))
            .to_string()
    };
    (field("flags"), field("redir"))
}

#[test]
fn options_and_their_errors() {
    let Some(server) = resp_server() else { return };
    let _g = shared();
    let mut c = Resp::new(&server);
    let t = |c: &mut Resp, args: &[&str]| {
        let mut all = vec!["CLIENT", "TRACKING"];
        all.extend_from_slice(args);
        c.call(&all)
    };
    assert_eq!(c.call(&["CLIENT", "TRACKING"]), error("ERR wrong number of arguments for 'client|tracking' command"));
    assert_eq!(t(&mut c, &["maybe"]), error("ERR syntax error"));
    assert_eq!(t(&mut c, &["on", "foo"]), error("ERR syntax error"));
    assert_eq!(t(&mut c, &["on", "redirect"]), error("ERR syntax error"));
    assert_eq!(t(&mut c, &["on", "redirect", "x"]), error("ERR value is not an integer or out of range"));
    assert_eq!(
        t(&mut c, &["on", "redirect", "999999"]),
        error("ERR The client ID you want redirect to does not exist")
    );
    let me = id_of(&mut c);
    assert_eq!(
        t(&mut c, &["on", "redirect", &me, "redirect", &me]),
        error("ERR A client can only redirect to a single other client")
    );
    assert_eq!(t(&mut c, &["on", "bcast", "optin"]), error("ERR OPTIN and OPTOUT are not compatible with BCAST"));
    assert_eq!(t(&mut c, &["on", "optin", "optout"]), error("ERR You can't specify both OPTIN mode and OPTOUT mode"));
    assert_eq!(t(&mut c, &["on", "prefix", "a"]), error("ERR PREFIX option requires BCAST mode to be enabled"));
    assert_eq!(
        t(&mut c, &["on", "bcast", "prefix", "ab", "prefix", "a"]),
        error(
            "ERR Prefix 'ab' overlaps with another provided prefix 'a'. Prefixes for a single client must not overlap."
        )
    );
    assert_eq!(
        t(&mut c, &["on", "bcast", "prefix", "a", "prefix", "a"]),
        error(
            "ERR Prefix 'a' overlaps with another provided prefix 'a'. Prefixes for a single client must not overlap."
        )
    );
    // Nothing above turned tracking on.
    assert_eq!(c.call(&["CLIENT", "GETREDIR"]), int(-1));
    assert_eq!(
        c.call(&["CLIENT", "TRACKINGINFO"]),
        "*6\r\n$5\r\nflags\r\n*1\r\n$3\r\noff\r\n$8\r\nredirect\r\n:-1\r\n$8\r\nprefixes\r\n*0\r\n"
    );
    assert_eq!(flags_and_redir(&mut c), ("N".into(), "-1".into()));

    // CLIENT CACHING outside tracking, and in the wrong mode.
    let caching_off =
        "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled";
    assert_eq!(c.call(&["CLIENT", "CACHING", "yes"]), error(caching_off));
    assert_eq!(c.call(&["CLIENT", "CACHING"]), error("ERR wrong number of arguments for 'client|caching' command"));
    assert_eq!(t(&mut c, &["on"]), OK);
    assert_eq!(flags_and_redir(&mut c), ("t".into(), "0".into()));
    assert_eq!(c.call(&["CLIENT", "GETREDIR"]), int(0));
    assert_eq!(
        c.call(&["CLIENT", "TRACKINGINFO"]),
        "*6\r\n$5\r\nflags\r\n*1\r\n$2\r\non\r\n$8\r\nredirect\r\n:0\r\n$8\r\nprefixes\r\n*0\r\n"
    );
    assert_eq!(
        c.call(&["CLIENT", "CACHING", "yes"]),
        error("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
    );
    assert_eq!(
        c.call(&["CLIENT", "CACHING", "no"]),
        error("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
    );
    assert_eq!(c.call(&["CLIENT", "CACHING", "maybe"]), error("ERR syntax error"));
    let switch_bcast = "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.";
    assert_eq!(t(&mut c, &["on", "bcast"]), error(switch_bcast));
    assert_eq!(t(&mut c, &["on", "optin"]), OK);
    assert_eq!(
        t(&mut c, &["on", "optout"]),
        error("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.")
    );
    assert_eq!(c.call(&["CLIENT", "CACHING", "yes"]), OK);
    // The flag lasts to the next command that is not CLIENT's.
    assert_eq!(
        c.call(&["CLIENT", "TRACKINGINFO"]),
        "*6\r\n$5\r\nflags\r\n*3\r\n$2\r\non\r\n$5\r\noptin\r\n$11\r\ncaching-yes\r\n$8\r\nredirect\r\n:0\r\n$8\r\nprefixes\r\n*0\r\n"
    );
    assert_eq!(c.call(&["PING"]), "+PONG\r\n");
    assert_eq!(
        c.call(&["CLIENT", "TRACKINGINFO"]),
        "*6\r\n$5\r\nflags\r\n*2\r\n$2\r\non\r\n$5\r\noptin\r\n$8\r\nredirect\r\n:0\r\n$8\r\nprefixes\r\n*0\r\n"
    );
    assert_eq!(t(&mut c, &["off"]), OK);
    assert_eq!(t(&mut c, &["on", "optout", "noloop"]), OK);
    assert_eq!(
        c.call(&["CLIENT", "TRACKINGINFO"]),
        "*6\r\n$5\r\nflags\r\n*3\r\n$2\r\non\r\n$6\r\noptout\r\n$6\r\nnoloop\r\n$8\r\nredirect\r\n:0\r\n$8\r\nprefixes\r\n*0\r\n"
    );
    assert_eq!(t(&mut c, &["off"]), OK);

    // BCAST: prefixes accumulate, sorted; overlap with those held.
    assert_eq!(t(&mut c, &["on", "bcast", "prefix", "to:b", "prefix", "to:a", "noloop"]), OK);
    assert_eq!(flags_and_redir(&mut c), ("tB".into(), "0".into()));
    assert_eq!(
        t(&mut c, &["on", "bcast", "prefix", "to:ab"]),
        error("ERR Prefix 'to:ab' overlaps with an existing prefix 'to:a'. Prefixes for a single client must not overlap.")
    );
    assert_eq!(t(&mut c, &["on", "bcast", "prefix", "to:c"]), OK);
    assert_eq!(
        c.call(&["CLIENT", "TRACKINGINFO"]),
        "*6\r\n$5\r\nflags\r\n*2\r\n$2\r\non\r\n$5\r\nbcast\r\n$8\r\nredirect\r\n:0\r\n$8\r\nprefixes\r\n*3\r\n$4\r\nto:a\r\n$4\r\nto:b\r\n$4\r\nto:c\r\n"
    );
    assert_eq!(t(&mut c, &["on"]), error(switch_bcast));
    assert_eq!(t(&mut c, &["off", "bcast"]), OK);
    assert_eq!(flags_and_redir(&mut c), ("N".into(), "-1".into()));
    assert_eq!(
        c.call(&["CLIENT", "GETREDIR", "x"]),
        error("ERR wrong number of arguments for 'client|getredir' command")
    );
    assert_eq!(
        c.call(&["CLIENT", "TRACKINGINFO", "x"]),
        error("ERR wrong number of arguments for 'client|trackinginfo' command")
    );
    // Redirecting to itself is allowed.
    assert_eq!(t(&mut c, &["on", "redirect", &me]), OK);
    assert_eq!(c.call(&["CLIENT", "GETREDIR"]), int(me.parse().unwrap()));
    assert_eq!(flags_and_redir(&mut c), ("t".into(), me.clone()));
}

#[test]
fn trackinginfo_under_resp3() {
    let Some(server) = resp_server() else { return };
    let _g = shared();
    let mut c = resp3(&server);
    assert_eq!(c.call(&["CLIENT", "TRACKING", "on", "bcast"]), OK);
    assert_eq!(
        c.call(&["CLIENT", "TRACKINGINFO"]),
        "%3\r\n$5\r\nflags\r\n~2\r\n$2\r\non\r\n$5\r\nbcast\r\n$8\r\nredirect\r\n:0\r\n$8\r\nprefixes\r\n*1\r\n$0\r\n\r\n"
    );
    assert_eq!(c.call(&["CLIENT", "TRACKING", "off"]), OK);
}

#[test]
fn default_mode_invalidates_a_read_key_once() {
    let Some(server) = resp_server() else { return };
    let _g = shared();
    let mut a = resp3(&server);
    let mut b = Resp::new(&server);
    assert_eq!(a.call(&["CLIENT", "TRACKING", "on"]), OK);
    assert_eq!(a.call(&["GET", "td:k"]), NULL3);
    assert_eq!(b.call(&["SET", "td:k", "1"]), OK);
    assert_eq!(a.reply(), push(&["td:k"]));
    // Forgotten once told.
    assert_eq!(b.call(&["SET", "td:k", "2"]), OK);
    assert!(a.silent());
    // MGET remembers each key; a write of one tells that one.
    assert_eq!(a.call(&["MGET", "td:k", "td:k2"]), "*2\r\n$1\r\n2\r\n_\r\n");
    assert_eq!(b.call(&["DEL", "td:k"]), int(1));
    assert_eq!(a.reply(), push(&["td:k"]));
    assert_eq!(b.call(&["SET", "td:k2", "x"]), OK);
    assert_eq!(a.reply(), push(&["td:k2"]));
    // The client's own write: the reply first, then the push.
    assert_eq!(a.call(&["GET", "td:k2"]), bulk("x"));
    a.send(&["SET", "td:k2", "y"]);
    assert_eq!(a.reply(), OK);
    assert_eq!(a.reply(), push(&["td:k2"]));
    // Collections, and both keys of RENAME.
    assert_eq!(a.call(&["HGET", "td:h", "f"]), NULL3);
    assert_eq!(b.call(&["HSET", "td:h", "f", "v"]), int(1));
    assert_eq!(a.reply(), push(&["td:h"]));
    assert_eq!(a.call(&["GET", "td:r1"]), NULL3);
    assert_eq!(a.call(&["GET", "td:r2"]), NULL3);
    assert_eq!(b.call(&["SET", "td:r1", "v"]), OK);
    assert_eq!(a.reply(), push(&["td:r1"]));
    assert_eq!(a.call(&["GET", "td:r1"]), bulk("v"));
    assert_eq!(b.call(&["RENAME", "td:r1", "td:r2"]), OK);
    assert_eq!(a.reply(), push(&["td:r1"]));
    assert_eq!(a.reply(), push(&["td:r2"]));
    // A write the key does not see (DEL of a missing key) tells nothing.
    assert_eq!(a.call(&["GET", "td:none"]), NULL3);
    assert_eq!(b.call(&["DEL", "td:none"]), int(0));
    assert!(a.silent());
    // Keys are names: the same name in another database is the same key.
    assert_eq!(b.call(&["SELECT", "1"]), OK);
    assert_eq!(b.call(&["SET", "td:none", "1"]), OK);
    assert_eq!(a.reply(), push(&["td:none"]));
    assert_eq!(b.call(&["DEL", "td:none"]), int(1));
    // Inside MULTI: after EXEC's reply.
    assert_eq!(a.call(&["MULTI"]), OK);
    assert_eq!(a.call(&["GET", "td:m"]), "+QUEUED\r\n");
    assert_eq!(a.call(&["SET", "td:m", "1"]), "+QUEUED\r\n");
    a.send(&["EXEC"]);
    assert_eq!(a.reply(), "*2\r\n_\r\n+OK\r\n");
    assert_eq!(a.reply(), push(&["td:m"]));
    // Off: nothing more.
    assert_eq!(a.call(&["GET", "td:off"]), NULL3);
    assert_eq!(a.call(&["CLIENT", "TRACKING", "off"]), OK);
    assert_eq!(b.call(&["SET", "td:off", "1"]), OK);
    assert!(a.silent());
    // RESET turns it off too.
    assert_eq!(a.call(&["CLIENT", "TRACKING", "on"]), OK);
    assert_eq!(a.call(&["RESET"]), "+RESET\r\n");
    assert_eq!(a.call(&["CLIENT", "GETREDIR"]), int(-1));
}

#[test]
fn noloop_optin_and_optout() {
    let Some(server) = resp_server() else { return };
    let _g = shared();
    let mut a = resp3(&server);
    let mut b = Resp::new(&server);
    assert_eq!(a.call(&["CLIENT", "TRACKING", "on", "noloop"]), OK);
    assert_eq!(a.call(&["GET", "tn:n"]), NULL3);
    assert_eq!(a.call(&["SET", "tn:n", "1"]), OK);
    assert!(a.silent());
    // Its own write made it forget the key: another's tells nothing.
    assert_eq!(b.call(&["SET", "tn:n", "2"]), OK);
    assert!(a.silent());
    assert_eq!(a.call(&["CLIENT", "TRACKING", "off"]), OK);

    assert_eq!(a.call(&["CLIENT", "TRACKING", "on", "optin"]), OK);
    assert_eq!(a.call(&["GET", "tn:o1"]), NULL3);
    assert_eq!(a.call(&["CLIENT", "CACHING", "yes"]), OK);
    assert_eq!(a.call(&["GET", "tn:o2"]), NULL3);
    assert_eq!(a.call(&["GET", "tn:o3"]), NULL3);
    assert_eq!(b.call(&["MSET", "tn:o1", "1", "tn:o2", "2", "tn:o3", "3"]), OK);
    assert_eq!(a.reply(), push(&["tn:o2"]));
    assert!(a.silent());
    assert_eq!(a.call(&["CLIENT", "TRACKING", "off"]), OK);

    assert_eq!(a.call(&["CLIENT", "TRACKING", "on", "optout"]), OK);
    assert_eq!(a.call(&["GET", "tn:o1"]), bulk("1"));
    assert_eq!(a.call(&["CLIENT", "CACHING", "no"]), OK);
    assert_eq!(a.call(&["GET", "tn:o2"]), bulk("2"));
    assert_eq!(a.call(&["GET", "tn:o3"]), bulk("3"));
    assert_eq!(b.call(&["MSET", "tn:o1", "1", "tn:o2", "2", "tn:o3", "3"]), OK);
    assert_eq!(a.reply(), push(&["tn:o1"]));
    assert_eq!(a.reply(), push(&["tn:o3"]));
    assert!(a.silent());
}

#[test]
fn resp2_redirect_to_a_subscriber() {
    let Some(server) = resp_server() else { return };
    let _g = exclusive();
    let mut a = Resp::new(&server);
    let mut b = Resp::new(&server);
    let mut r = Resp::new(&server);
    let rid = id_of(&mut r);
    assert_eq!(
        r.call(&["SUBSCRIBE", "__redis__:invalidate"]),
        "*3\r\n$9\r\nsubscribe\r\n$20\r\n__redis__:invalidate\r\n:1\r\n"
    );
    assert_eq!(a.call(&["CLIENT", "TRACKING", "on", "redirect", &rid]), OK);
    assert_eq!(a.call(&["CLIENT", "GETREDIR"]), format!(":{rid}\r\n"));
    assert_eq!(flags_and_redir(&mut a), ("t".into(), rid.clone()));
    assert_eq!(a.call(&["GET", "tr:k"]), NULL2);
    assert_eq!(b.call(&["SET", "tr:k", "1"]), OK);
    assert_eq!(r.reply(), message(&["tr:k"]));
    assert!(a.silent());
    // FLUSHALL: a null, in the tracking client's protocol.
    assert_eq!(b.call(&["FLUSHALL"]), OK);
    assert_eq!(r.reply(), "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n$-1\r\n");

    // A RESP2 target that is not subscribed gets nothing.
    let mut r2 = Resp::new(&server);
    let rid2 = id_of(&mut r2);
    assert_eq!(a.call(&["CLIENT", "TRACKING", "on", "redirect", &rid2]), OK);
    assert_eq!(a.call(&["GET", "tr:k"]), NULL2);
    assert_eq!(b.call(&["SET", "tr:k", "2"]), OK);
    assert!(r2.silent());

    // A RESP3 target gets the push.
    let mut r3 = resp3(&server);
    let rid3 = id_of(&mut r3);
    assert_eq!(a.call(&["CLIENT", "TRACKING", "on", "redirect", &rid3]), OK);
    assert_eq!(a.call(&["GET", "tr:k"]), bulk("2"));
    assert_eq!(b.call(&["SET", "tr:k", "3"]), OK);
    assert_eq!(r3.reply(), push(&["tr:k"]));

    // The target gone: flagged broken when a message would go (RESP2:
    // nothing is sent).
    assert_eq!(a.call(&["GET", "tr:k"]), bulk("3"));
    drop(r3);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(b.call(&["SET", "tr:k", "4"]), OK);
    assert!(a.silent());
    assert_eq!(
        a.call(&["CLIENT", "TRACKINGINFO"]),
        format!(
            "*6\r\n$5\r\nflags\r\n*2\r\n$2\r\non\r\n$15\r\nbroken_redirect\r\n$8\r\nredirect\r\n:{rid3}\r\n$8\r\nprefixes\r\n*0\r\n"
        )
    );
    assert_eq!(flags_and_redir(&mut a), ("tR".into(), rid3.clone()));
    assert_eq!(a.call(&["CLIENT", "TRACKING", "off"]), OK);

    // Under RESP3 the tracking client is told.
    let mut a3 = resp3(&server);
    let mut r4 = Resp::new(&server);
    let rid4 = id_of(&mut r4);
    assert_eq!(a3.call(&["CLIENT", "TRACKING", "on", "redirect", &rid4]), OK);
    assert_eq!(a3.call(&["GET", "tr:k"]), bulk("4"));
    drop(r4);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(b.call(&["SET", "tr:k", "5"]), OK);
    assert_eq!(a3.reply(), format!(">2\r\n$21\r\ntracking-redir-broken\r\n:{rid4}\r\n"));
}

#[test]
fn flush_sends_every_tracking_client_a_null() {
    let Some(server) = resp_server() else { return };
    let _g = exclusive();
    let mut a = resp3(&server);
    let mut bc = resp3(&server);
    let mut b = Resp::new(&server);
    assert_eq!(a.call(&["CLIENT", "TRACKING", "on"]), OK);
    assert_eq!(bc.call(&["CLIENT", "TRACKING", "on", "bcast", "prefix", "tf:"]), OK);
    assert_eq!(a.call(&["GET", "tf:x"]), NULL3);
    assert_eq!(b.call(&["FLUSHDB"]), OK);
    assert_eq!(a.reply(), NULL_PUSH);
    assert_eq!(bc.reply(), NULL_PUSH);
    // The table was emptied: a later write of the key tells nothing.
    assert_eq!(b.call(&["SET", "tf:x", "1"]), OK);
    assert!(a.silent());
    assert_eq!(bc.reply(), push(&["tf:x"]));
    // The flusher itself: after its reply.
    a.send(&["FLUSHALL"]);
    assert_eq!(a.reply(), OK);
    assert_eq!(a.reply(), NULL_PUSH);
    assert_eq!(bc.reply(), NULL_PUSH);
    // SWAPDB invalidates nothing in Redis 7.0.
    assert_eq!(a.call(&["GET", "tf:y"]), NULL3);
    assert_eq!(b.call(&["SWAPDB", "0", "1"]), OK);
    assert!(a.silent());
    assert_eq!(b.call(&["SWAPDB", "0", "1"]), OK);
}

#[test]
fn bcast_tells_every_write_under_a_prefix() {
    let Some(server) = resp_server() else { return };
    let _g = shared();
    let mut a = resp3(&server);
    let mut b = Resp::new(&server);
    assert_eq!(a.call(&["CLIENT", "TRACKING", "on", "bcast", "prefix", "tb:p:", "prefix", "tb:q:"]), OK);
    assert_eq!(b.call(&["SET", "tb:p:1", "x"]), OK);
    assert_eq!(a.reply(), push(&["tb:p:1"]));
    assert_eq!(b.call(&["SET", "tb:q:1", "x"]), OK);
    assert_eq!(a.reply(), push(&["tb:q:1"]));
    // Again: BCAST remembers nothing, so every write tells.
    assert_eq!(b.call(&["SET", "tb:p:1", "y"]), OK);
    assert_eq!(a.reply(), push(&["tb:p:1"]));
    assert_eq!(b.call(&["SET", "tb:r:1", "x"]), OK);
    assert!(a.silent());
    // One command's keys in one message, sorted, each once (Redis: one
    // per event-loop iteration); keys outside the prefixes left out.
    assert_eq!(b.call(&["MSET", "tb:p:9", "x", "tb:r:2", "y", "tb:p:3", "z", "tb:p:9", "w"]), OK);
    assert_eq!(a.reply(), push(&["tb:p:3", "tb:p:9"]));
    // SET … EX raises two events (set, expire): one message.
    assert_eq!(b.call(&["SET", "tb:p:1", "x", "EX", "100"]), OK);
    assert_eq!(a.reply(), push(&["tb:p:1"]));
    assert!(a.silent());
    // Its own write too, after the reply (no NOLOOP).
    a.send(&["SET", "tb:p:2", "1"]);
    assert_eq!(a.reply(), OK);
    assert_eq!(a.reply(), push(&["tb:p:2"]));
    // With NOLOOP, not its own.
    assert_eq!(a.call(&["CLIENT", "TRACKING", "off"]), OK);
    assert_eq!(a.call(&["CLIENT", "TRACKING", "on", "bcast", "noloop", "prefix", "tb:p:"]), OK);
    assert_eq!(a.call(&["SET", "tb:p:3", "1"]), OK);
    assert!(a.silent());
    assert_eq!(b.call(&["DEL", "tb:p:3"]), int(1));
    assert_eq!(a.reply(), push(&["tb:p:3"]));
}

#[test]
fn expiry_invalidates() {
    let Some(server) = resp_server() else { return };
    let _g = shared();
    let mut a = resp3(&server);
    let mut b = Resp::new(&server);
    assert_eq!(a.call(&["CLIENT", "TRACKING", "on"]), OK);
    assert_eq!(b.call(&["SET", "te:k", "v", "PX", "300"]), OK);
    assert_eq!(a.call(&["GET", "te:k"]), bulk("v"));
    // Redis's active expiry, or Amalgam's sweep, removes it within seconds.
    let start = Instant::now();
    assert_eq!(a.reply(), push(&["te:k"]));
    assert!(start.elapsed() < READ_TIMEOUT);
}

#[test]
fn a_write_on_the_memcached_port_invalidates() {
    let Some(server) = resp_server() else { return };
    if server.is_redis {
        eprintln!("note: redis-server has no memcached port; skipping");
        return;
    }
    let _g = shared();
    let mut a = resp3(&server);
    assert_eq!(a.call(&["CLIENT", "TRACKING", "on"]), OK);
    assert_eq!(a.call(&["GET", "tm:k"]), NULL3);
    let mut mc = server.connect();
    assert_eq!(request(&mut mc, b"set tm:k 0 0 1\r\nx\r\n", b"\r\n"), b"STORED\r\n");
    assert_eq!(a.reply(), push(&["tm:k"]));
    assert_eq!(a.call(&["GET", "tm:k"]), bulk("x"));
    assert_eq!(request(&mut mc, b"delete tm:k\r\n", b"\r\n"), b"DELETED\r\n");
    assert_eq!(a.reply(), push(&["tm:k"]));
    assert_eq!(a.call(&["GET", "tm:k"]), NULL3);
    assert_eq!(request(&mut mc, b"flush_all\r\n", b"\r\n"), b"OK\r\n");
    assert_eq!(a.reply(), NULL_PUSH);
}

#[test]
fn the_table_is_bounded() {
    let Some(server) = resp_server() else { return };
    let _g = exclusive();
    let mut a = resp3(&server);
    let mut x = Resp::new(&server);
    assert_eq!(x.config_get("tracking-table-max-keys"), "1000000");
    assert_eq!(
        x.call(&["CONFIG", "SET", "tracking-table-max-keys", "-1"]),
        error("ERR CONFIG SET failed (possibly related to argument 'tracking-table-max-keys') - argument must be between 0 and 9223372036854775807 inclusive")
    );
    assert_eq!(a.call(&["CLIENT", "TRACKING", "on"]), OK);
    // Other clients' keys may be in the table (against a shared server):
    // start from an empty one.
    assert_eq!(a.call(&["FLUSHALL"]), OK);
    assert_eq!(a.reply(), NULL_PUSH);
    assert_eq!(a.call(&["CONFIG", "SET", "tracking-table-max-keys", "1"]), OK);
    assert_eq!(a.call(&["GET", "tt:a"]), NULL3);
    a.send(&["GET", "tt:b"]);
    assert_eq!(a.reply(), NULL3);
    // One of the two is pushed out (Redis picks at random, Amalgam the
    // oldest) and told as invalid.
    let told = a.reply();
    assert!(told == push(&["tt:a"]) || told == push(&["tt:b"]), "{told:?}");
    assert_eq!(x.info_field("stats", "tracking_total_keys").as_deref(), Some("1"));
    assert_eq!(a.call(&["CONFIG", "SET", "tracking-table-max-keys", "1000000"]), OK);
}

#[test]
fn info_counts_clients_keys_and_prefixes() {
    let Some(server) = resp_server() else { return };
    let _g = exclusive();
    let mut x = Resp::new(&server);
    let field = |x: &mut Resp, s: &str, f: &str| -> i64 { x.info_field(s, f).unwrap().trim().parse().unwrap() };
    let clients = field(&mut x, "clients", "tracking_clients");
    let prefixes = field(&mut x, "stats", "tracking_total_prefixes");
    let (keys, items) = (field(&mut x, "stats", "tracking_total_keys"), field(&mut x, "stats", "tracking_total_items"));
    let mut a = resp3(&server);
    let mut b = resp3(&server);
    assert_eq!(a.call(&["CLIENT", "TRACKING", "on"]), OK);
    assert_eq!(b.call(&["CLIENT", "TRACKING", "on", "bcast", "prefix", "ti:1", "prefix", "ti:2"]), OK);
    assert_eq!(field(&mut x, "clients", "tracking_clients"), clients + 2);
    assert_eq!(field(&mut x, "stats", "tracking_total_prefixes"), prefixes + 2);
    assert_eq!(a.call(&["MGET", "ti:k1", "ti:k2"]), "*2\r\n_\r\n_\r\n");
    let mut c = resp3(&server);
    assert_eq!(c.call(&["CLIENT", "TRACKING", "on"]), OK);
    assert_eq!(c.call(&["GET", "ti:k1"]), NULL3);
    assert_eq!(field(&mut x, "stats", "tracking_total_keys"), keys + 2);
    assert_eq!(field(&mut x, "stats", "tracking_total_items"), items + 3);
    // Closing drops the client and its prefixes (its ids in the table
    // stay until their keys change, as Redis's).
    drop(b);
    drop(c);
    let deadline = Instant::now() + READ_TIMEOUT;
    while field(&mut x, "clients", "tracking_clients") != clients + 1 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(field(&mut x, "clients", "tracking_clients"), clients + 1);
    assert_eq!(field(&mut x, "stats", "tracking_total_prefixes"), prefixes);
    assert_eq!(x.call(&["DEL", "ti:k1", "ti:k2"]), int(0));
    // Nothing existed: DEL changed nothing, the keys stay.
    assert_eq!(field(&mut x, "stats", "tracking_total_keys"), keys + 2);
    assert_eq!(x.call(&["SET", "ti:k1", "1"]), OK);
    assert_eq!(a.reply(), push(&["ti:k1"]));
    assert_eq!(field(&mut x, "stats", "tracking_total_keys"), keys + 1);
    a.s.flush().unwrap();
}

#[test]
fn migrate_invalidates_its_source() {
    let Some(server) = resp_server() else { return };
    if server.is_redis {
        eprintln!("note: needs a second server of this test's own; skipping against redis-server");
        return;
    }
    let Some(target) = resp_private(&[]) else { return };
    let _g = shared();
    let mut a = resp3(&server);
    let mut b = Resp::new(&server);
    assert_eq!(a.call(&["CLIENT", "TRACKING", "on"]), OK);
    assert_eq!(b.call(&["SET", "tg:k", "v"]), OK);
    assert_eq!(a.call(&["GET", "tg:k"]), bulk("v"));
    let port = target.resp_addr().port().to_string();
    assert_eq!(b.call(&["MIGRATE", "127.0.0.1", &port, "tg:k", "0", "5000"]), OK);
    assert_eq!(a.reply(), push(&["tg:k"]));
}

#[test]
fn eviction_invalidates() {
    // Amalgam's own cache (`-m 8`, S3-FIFO); skipped against redis-server
    // (resp_private needs an amalgam of this test's own).
    let Some(server) = resp_private(&["-m", "8"]) else { return };
    let mut a = resp3(&server);
    let mut b = Resp::new(&server);
    let mut pending = Vec::new();
    let value = "v".repeat(4000);
    assert_eq!(a.call(&["CLIENT", "TRACKING", "on"]), OK);
    // 32 MB into an 8 MB cache, each key read once by the tracking client
    // right after it is written: every key is tracked, and most must go.
    for chunk in 0..80 {
        let keys: Vec<String> = (0..100).map(|j| format!("tw:{}", chunk * 100 + j)).collect();
        let mut batch = Vec::new();
        for k in &keys {
            batch.extend_from_slice(&encode(&[b"SET", k.as_bytes(), value.as_bytes()]));
        }
        b.send_raw(&batch);
        for _ in 0..100 {
            assert_eq!(b.reply(), OK);
        }
        let mut mget = vec!["MGET"];
        mget.extend(keys.iter().map(String::as_str));
        a.send(&mget);
        // Pushes of keys evicted meanwhile may come before the reply.
        loop {
            let r = a.reply();
            if r.starts_with("*100\r\n") {
                break;
            }
            pending.push(r);
        }
    }
    // The first comes within the read timeout (reclamation runs in the
    // background), the rest until a quiet second.
    let mut told = pending;
    told.push(a.reply());
    a.s.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
    loop {
        let r = a.reply();
        if r.is_empty() {
            break;
        }
        told.push(r);
    }
    a.s.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
    told.retain(|t| !t.is_empty());
    assert!(!told.is_empty(), "nothing evicted was told");
    let mut keys = std::collections::HashSet::new();
    for t in &told {
        let k = t.rsplit("\r\n").nth(1).unwrap().to_string();
        assert_eq!(*t, push(&[&k]), "{t:?}");
        assert!(k.starts_with("tw:"), "{k}");
        assert!(keys.insert(k), "each key once");
    }
    // Each key told is gone.
    for k in &keys {
        assert_eq!(b.call(&["EXISTS", k]), int(0));
    }
}
