//! Redis's Pub/Sub over RESP, black-box, byte for byte: SUBSCRIBE
//! UNSUBSCRIBE PSUBSCRIBE PUNSUBSCRIBE PUBLISH PUBSUB, their reply shapes
//! and counts, RESP2 subscriber mode (its error, PING's reply), RESP3
//! pushes, MULTI, CLIENT LIST and INFO fields, cleanup on disconnect, and
//! delivery across workers (amalgam with `-t 2` deals consecutive
//! connections to different workers). Runs against amalgam by default;
//! CI also runs it against Debian's redis-server 7
//! (`AMALGAM_TEST_RESP_ADDR`), which proves every expectation here is
//! Redis's own — except the output-limit disconnect, which needs a private
//! amalgam started with a small limit.
//!
//! Channel names are unique per test (`key`), so tests sharing a server
//! (and running in parallel) do not see each other's messages; only one
//! test subscribes to patterns, since NUMPAT counts every client's.
mod common;
use common::resp::*;
use common::*;
use std::collections::BTreeSet;
use std::time::Duration;

/// Redis 7.0's refusal in RESP2 subscriber mode.
fn refused(name: &str) -> String {
    error(&format!(
        "ERR Can't execute '{name}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
    ))
}

/// A subscription reply (`*3` under RESP2, `>3` under RESP3).
fn sub_reply(head: char, kind: &str, name: Option<&str>, count: i64) -> String {
    let name = match (name, head) {
        (Some(n), _) => bulk(n),
        (None, '>') => NULL3.to_string(),
        (None, _) => NULL2.to_string(),
    };
    format!("{head}3\r\n{}{name}{}", bulk(kind), int(count))
}

/// A `message` (`*3`/`>3`).
fn message(head: char, ch: &str, payload: &str) -> String {
    format!("{head}3\r\n{}{}{}", bulk("message"), bulk(ch), bulk(payload))
}

/// A `pmessage`.
fn pmessage(head: char, pattern: &str, ch: &str, payload: &str) -> String {
    format!("{head}4\r\n{}{}{}{}", bulk("pmessage"), bulk(pattern), bulk(ch), bulk(payload))
}

/// An amalgam with two workers (connections alternate between them, so
/// publisher and subscribers sit on different threads), or the named
/// external server.
fn two_workers() -> Option<Server> {
    resp_private(&["-t", "2"]).or_else(resp_server)
}

/// `PUBSUB NUMSUB ch`'s count.
fn numsub(c: &mut Resp, ch: &str) -> i64 {
    let r = c.call(&["PUBSUB", "NUMSUB", ch]);
    let want_head = format!("*2\r\n{}", bulk(ch));
    assert!(r.starts_with(&want_head), "NUMSUB reply {r:?}");
    as_int(&r[want_head.len()..])
}

#[test]
fn subscribe_publish_and_receive_across_workers() {
    let Some(server) = two_workers() else { return };
    let (a, b) = (key("ps_a"), key("ps_b"));
    let mut sub = Resp::new(&server);
    let mut publisher = Resp::new(&server);
    // One reply per name, each with the running count; a repeated name
    // counts once.
    sub.send(&["SUBSCRIBE", &a, &b, &a]);
    assert_eq!(sub.reply(), sub_reply('*', "subscribe", Some(&a), 1));
    assert_eq!(sub.reply(), sub_reply('*', "subscribe", Some(&b), 2));
    assert_eq!(sub.reply(), sub_reply('*', "subscribe", Some(&a), 2));
    assert_eq!(publisher.call(&["PUBLISH", &a, "hello"]), int(1));
    assert_eq!(sub.reply(), message('*', &a, "hello"));
    assert_eq!(publisher.call(&["PUBLISH", &b, "bin\r\n\0x"]), int(1));
    assert_eq!(sub.reply(), message('*', &b, "bin\r\n\0x"));
    assert_eq!(publisher.call(&["PUBLISH", &key("ps_nobody"), "x"]), int(0));
    assert!(sub.silent(), "nothing for a channel it does not hold");

    // Several subscribers (on both workers) of one channel: each gets
    // every message, in publishing order.
    let c = key("ps_many");
    let mut subs: Vec<Resp> = (0..4).map(|_| Resp::new(&server)).collect();
    for s in &mut subs {
        assert_eq!(s.call(&["SUBSCRIBE", &c]), sub_reply('*', "subscribe", Some(&c), 1));
    }
    for i in 0..10 {
        assert_eq!(publisher.call(&["PUBLISH", &c, &format!("m{i}")]), int(4));
    }
    for s in &mut subs {
        for i in 0..10 {
            assert_eq!(s.reply(), message('*', &c, &format!("m{i}")));
        }
    }
    assert_eq!(numsub(&mut publisher, &c), 4);
    assert_eq!(numsub(&mut publisher, &a), 1);
}

#[test]
fn patterns_pubsub_introspection_and_numpat() {
    let Some(server) = two_workers() else { return };
    let prefix = key("ps_pat");
    let (pattern, ch, other) = (format!("{prefix}.*"), format!("{prefix}.x"), format!("{prefix}-y"));
    let mut sub = Resp::new(&server);
    let mut publisher = Resp::new(&server);
    let numpat = as_int(&publisher.call(&["PUBSUB", "NUMPAT"]));
    sub.send(&["PSUBSCRIBE", &pattern, &pattern]);
    assert_eq!(sub.reply(), sub_reply('*', "psubscribe", Some(&pattern), 1));
    assert_eq!(sub.reply(), sub_reply('*', "psubscribe", Some(&pattern), 1));
    assert_eq!(as_int(&publisher.call(&["PUBSUB", "NUMPAT"])), numpat + 1);
    // A pattern match: one receiver, a pmessage.
    assert_eq!(publisher.call(&["PUBLISH", &ch, "p1"]), int(1));
    assert_eq!(sub.reply(), pmessage('*', &pattern, &ch, "p1"));
    assert_eq!(publisher.call(&["PUBLISH", &other, "no"]), int(0));
    // The channel too: two receivers, the channel's message first.
    assert_eq!(sub.call(&["SUBSCRIBE", &ch]), sub_reply('*', "subscribe", Some(&ch), 2));
    assert_eq!(publisher.call(&["PUBLISH", &ch, "p2"]), int(2));
    assert_eq!(sub.reply(), message('*', &ch, "p2"));
    assert_eq!(sub.reply(), pmessage('*', &pattern, &ch, "p2"));

    // PUBSUB: channels (patterns are not channels), counts.
    let mut b = Resp::new(&server);
    assert_eq!(b.call(&["SUBSCRIBE", &other]), sub_reply('*', "subscribe", Some(&other), 1));
    let listed = publisher.call(&["PUBSUB", "CHANNELS", &format!("{prefix}*")]);
    let mut got: Vec<&str> = listed.split("\r\n").filter(|l| l.starts_with(&prefix)).collect();
    got.sort_unstable();
    let mut want = vec![ch.as_str(), other.as_str()];
    want.sort_unstable();
    assert_eq!(got, want, "{listed:?}");
    assert!(listed.starts_with("*2\r\n"), "{listed:?}");
    assert_eq!(publisher.call(&["PUBSUB", "CHANNELS", &format!("{prefix}.?")]), format!("*1\r\n{}", bulk(&ch)));
    assert_eq!(
        publisher.call(&["PUBSUB", "NUMSUB", &ch, &pattern, &other]),
        format!("*6\r\n{}{}{}{}{}{}", bulk(&ch), int(1), bulk(&pattern), int(0), bulk(&other), int(1))
    );
    assert_eq!(publisher.call(&["PUBSUB", "NUMSUB"]), "*0\r\n");
    assert_eq!(
        publisher.call(&["PUBSUB", "NUMPAT", "x"]),
        error("ERR wrong number of arguments for 'pubsub|numpat' command")
    );
    assert_eq!(
        publisher.call(&["PUBSUB", "ChAnnels", "a", "b"]),
        error("ERR unknown subcommand or wrong number of arguments for 'ChAnnels'. Try PUBSUB HELP.")
    );
    assert_eq!(publisher.call(&["PUBSUB", "FOO"]), error("ERR unknown subcommand 'FOO'. Try PUBSUB HELP."));

    // PUNSUBSCRIBE without names leaves every pattern (in order), then
    // the pattern is gone from NUMPAT.
    assert_eq!(sub.call(&["PUNSUBSCRIBE"]), sub_reply('*', "punsubscribe", Some(&pattern), 1));
    assert_eq!(as_int(&publisher.call(&["PUBSUB", "NUMPAT"])), numpat);
    assert_eq!(publisher.call(&["PUBLISH", &ch, "p3"]), int(1));
    assert_eq!(sub.reply(), message('*', &ch, "p3"));
    assert_eq!(sub.call(&["PUNSUBSCRIBE"]), sub_reply('*', "punsubscribe", None, 1));
}

#[test]
fn resp2_subscriber_mode_and_unsubscribe_all() {
    let Some(server) = resp_server() else { return };
    let (a, b, c) = (key("ps_m1"), key("ps_m2"), key("ps_m3"));
    let mut s = Resp::new(&server);
    // Holding nothing: one reply with a null name.
    assert_eq!(s.call(&["UNSUBSCRIBE"]), sub_reply('*', "unsubscribe", None, 0));
    assert_eq!(s.call(&["PUNSUBSCRIBE"]), sub_reply('*', "punsubscribe", None, 0));
    s.send(&["SUBSCRIBE", &a, &b, &c]);
    for _ in 0..3 {
        s.reply();
    }
    assert_eq!(s.call(&["GET", "x"]), refused("get"));
    assert_eq!(s.call(&["CLIENT", "ID"]), refused("client|id"));
    assert_eq!(s.call(&["MULTI"]), refused("multi"));
    // Unknown commands and arities are answered first, as usual.
    assert_eq!(s.call(&["SUBSCRIBE"]), error("ERR wrong number of arguments for 'subscribe' command"));
    assert_eq!(s.call(&["PING"]), format!("*2\r\n{}{}", bulk("pong"), bulk("")));
    assert_eq!(s.call(&["PING", "hi"]), format!("*2\r\n{}{}", bulk("pong"), bulk("hi")));
    // Names not held: count unchanged, one reply each.
    assert_eq!(s.call(&["UNSUBSCRIBE", &key("ps_none")]).lines().last(), Some(":3"));
    // Without names: every channel (in no promised order), counting down.
    s.send(&["UNSUBSCRIBE"]);
    let mut left = BTreeSet::new();
    for n in (0..3).rev() {
        let r = s.reply();
        let (head, tail) = r.rsplit_once(&int(n)).unwrap_or_else(|| panic!("{r:?}"));
        assert!(tail.is_empty() && head.starts_with(&format!("*3\r\n{}", bulk("unsubscribe"))), "{r:?}");
        left.insert(head.lines().nth(4).unwrap_or_default().to_string());
    }
    assert_eq!(left, BTreeSet::from([a.clone(), b.clone(), c.clone()]));
    // Out of subscriber mode.
    assert_eq!(s.call(&["GET", &key("ps_x")]), NULL2);
    assert_eq!(s.call(&["PING"]), "+PONG\r\n");
}

#[test]
fn resp3_pushes_and_commands_while_subscribed() {
    let Some(server) = two_workers() else { return };
    let ch = key("ps_r3");
    let mut s = Resp::new(&server);
    let mut publisher = Resp::new(&server);
    assert!(s.call(&["HELLO", "3"]).starts_with('%'));
    assert_eq!(s.call(&["UNSUBSCRIBE"]), sub_reply('>', "unsubscribe", None, 0));
    assert_eq!(s.call(&["SUBSCRIBE", &ch]), sub_reply('>', "subscribe", Some(&ch), 1));
    assert_eq!(s.call(&["GET", &key("ps_x")]), NULL3);
    assert_eq!(s.call(&["PING"]), "+PONG\r\n");
    assert_eq!(publisher.call(&["PUBLISH", &ch, "m"]), int(1));
    assert_eq!(s.reply(), message('>', &ch, "m"));
    // Publishing to itself: the message comes before PUBLISH's reply.
    s.send(&["PUBLISH", &ch, "self"]);
    assert_eq!(s.reply(), message('>', &ch, "self"));
    assert_eq!(s.reply(), int(1));
    // Messages reach a client blocked in BLPOP, and one under CLIENT
    // REPLY OFF (Redis 7.0.15 delivers them too).
    s.send(&["BLPOP", &key("ps_nokey"), "0.3"]);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(publisher.call(&["PUBLISH", &ch, "while-blocked"]), int(1));
    assert_eq!(s.reply(), message('>', &ch, "while-blocked"));
    assert_eq!(s.reply(), NULL3, "BLPOP's timeout");
    s.send(&["CLIENT", "REPLY", "OFF"]);
    assert_eq!(publisher.call(&["PUBLISH", &ch, "replies-off"]), int(1));
    assert_eq!(s.reply(), message('>', &ch, "replies-off"));
    assert_eq!(s.call(&["CLIENT", "REPLY", "ON"]), OK);
    assert_eq!(s.call(&["UNSUBSCRIBE"]), sub_reply('>', "unsubscribe", Some(&ch), 0));
    assert_eq!(publisher.call(&["PUBLISH", &ch, "gone"]), int(0));
    assert!(s.silent());
}

#[test]
fn multi_exec_publish_and_subscribe() {
    let Some(server) = resp_server() else { return };
    let (ch, m) = (key("ps_tx"), key("ps_txsub"));
    let mut sub = Resp::new(&server);
    let mut c = Resp::new(&server);
    assert_eq!(sub.call(&["SUBSCRIBE", &ch]), sub_reply('*', "subscribe", Some(&ch), 1));
    assert_eq!(c.call(&["MULTI"]), OK);
    assert_eq!(c.call(&["PUBLISH", &ch, "in-exec"]), "+QUEUED\r\n");
    assert_eq!(c.call(&["EXEC"]), format!("*1\r\n{}", int(1)));
    assert_eq!(sub.reply(), message('*', &ch, "in-exec"));
    // SUBSCRIBE queues, and EXEC subscribes (its reply inside EXEC's).
    assert_eq!(c.call(&["MULTI"]), OK);
    assert_eq!(c.call(&["SUBSCRIBE", &m]), "+QUEUED\r\n");
    c.send(&["EXEC"]);
    assert_eq!(c.reply(), format!("*1\r\n{}", sub_reply('*', "subscribe", Some(&m), 1)));
    assert_eq!(c.call(&["GET", "x"]), refused("get"));
}

#[test]
fn client_list_info_and_cleanup_on_disconnect() {
    let Some(server) = two_workers() else { return };
    let prefix = key("ps_cl");
    let (a, b) = (format!("{prefix}a"), format!("{prefix}b"));
    let mut s = Resp::new(&server);
    let mut other = Resp::new(&server);
    assert_eq!(s.call(&["CLIENT", "SETNAME", &prefix]), OK);
    s.send(&["SUBSCRIBE", &a, &b]);
    s.reply();
    s.reply();
    let list = other.call(&["CLIENT", "LIST"]);
    let line = list.lines().find(|l| l.contains(&format!("name={prefix} "))).unwrap_or_else(|| panic!("{list}"));
    assert!(line.contains(" flags=P ") && line.contains(" sub=2 psub=0 "), "{line}");
    let info = other.call(&["INFO", "stats"]);
    let channels: i64 = info
        .lines()
        .find_map(|l| l.strip_prefix("pubsub_channels:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("{info}"));
    assert!(channels >= 2, "{info}");
    assert!(info.contains("pubsub_patterns:"), "{info}");
    assert_eq!(numsub(&mut other, &a), 1);
    // A subscriber is of type pubsub, not normal (Redis's getClientType).
    let id = line.split(' ').find_map(|f| f.strip_prefix("id=")).unwrap_or_default().to_string();
    let of_type = |c: &mut Resp, t: &str| c.call(&["CLIENT", "LIST", "TYPE", t]).contains(&format!("id={id} "));
    assert!(of_type(&mut other, "pubsub") && !of_type(&mut other, "normal"));
    assert_eq!(other.call(&["CLIENT", "KILL", "ID", &id, "TYPE", "normal"]), int(0));
    assert_eq!(other.call(&["CLIENT", "KILL", "ID", &id, "TYPE", "pubsub"]), int(1));
    assert!(s.closed());
    // The disconnect is seen by the server a little later: poll.
    for _ in 0..100 {
        if numsub(&mut other, &a) == 0 && numsub(&mut other, &b) == 0 {
            assert_eq!(other.call(&["PUBLISH", &a, "x"]), int(0));
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("a closed subscriber still counts");
}

/// Amalgam's hard output limit (`--client-output-buffer-limit-pubsub`):
/// a subscriber that never reads is disconnected and leaves its channel.
#[test]
fn a_subscriber_that_does_not_read_is_dropped_past_the_limit() {
    /// Messages published before giving up (64 KiB each: 256 MiB, far
    /// past the limit plus what the kernel's socket buffers hold).
    const PUBLISHES_MAX: usize = 4096;
    let Some(server) = resp_private(&["-t", "2", "--client-output-buffer-limit-pubsub", "1m"]) else { return };
    let ch = key("ps_slow");
    let mut slow = Resp::new(&server);
    let mut publisher = Resp::new(&server);
    assert_eq!(
        publisher.call(&["CONFIG", "GET", "client-output-buffer-limit"]),
        format!(
            "*2\r\n{}{}",
            bulk("client-output-buffer-limit"),
            bulk("normal 1073741824 67108864 60 slave 268435456 67108864 60 pubsub 1048576 8388608 60")
        )
    );
    assert_eq!(slow.call(&["SUBSCRIBE", &ch]), sub_reply('*', "subscribe", Some(&ch), 1));
    // A reading subscriber is not dropped by the same traffic.
    let mut fast = Resp::new(&server);
    let fast_ch = key("ps_fast");
    assert_eq!(fast.call(&["SUBSCRIBE", &fast_ch]), sub_reply('*', "subscribe", Some(&fast_ch), 1));
    let payload = "x".repeat(64 * 1024);
    let mut dropped = false;
    for i in 0..PUBLISHES_MAX {
        if as_int(&publisher.call(&["PUBLISH", &ch, &payload])) == 0 {
            dropped = true;
            break;
        }
        if i % 64 == 0 {
            assert_eq!(publisher.call(&["PUBLISH", &fast_ch, "tick"]), int(1));
            assert_eq!(fast.reply(), message('*', &fast_ch, "tick"));
        }
    }
    assert!(dropped, "the slow subscriber was never dropped");
    assert_eq!(numsub(&mut publisher, &ch), 0);
    assert!(slow.closed(), "its connection is closed");
    assert_eq!(publisher.call(&["PUBLISH", &fast_ch, "still"]), int(1));
    assert_eq!(fast.reply(), message('*', &fast_ch, "still"));
}

#[test]
fn acl_channel_rules() {
    let Some(server) = resp_server() else { return };
    let (user, prefix) = (key("ps_user"), key("ps_acl"));
    let mut admin = Resp::new(&server);
    let allowed = format!("&{prefix}*");
    let keys = format!("~{prefix}*");
    assert_eq!(admin.call(&["ACL", "SETUSER", &user, "on", "nopass", &keys, &allowed, "+@all"]), OK);
    let mut c = Resp::new(&server);
    assert_eq!(c.call(&["AUTH", &user, "x"]), OK);
    let noperm = error("NOPERM this user has no permissions to access one of the channels used as arguments");
    let (inside, outside) = (format!("{prefix}.a"), key("ps_elsewhere"));
    assert_eq!(c.call(&["PUBLISH", &outside, "m"]), noperm);
    assert_eq!(c.call(&["PUBLISH", &inside, "m"]), int(0));
    // Shard channels too, checked as channels, not keys.
    assert_eq!(c.call(&["SPUBLISH", &outside, "m"]), noperm);
    assert_eq!(c.call(&["SPUBLISH", &inside, "m"]), int(0));
    assert_eq!(c.call(&["SUBSCRIBE", &inside, &outside]), noperm);
    // A pattern must be one of the user's, not merely within one.
    assert_eq!(c.call(&["PSUBSCRIBE", &format!("{prefix}.*")]), noperm);
    assert_eq!(
        c.call(&["PSUBSCRIBE", &format!("{prefix}*")]),
        sub_reply('*', "psubscribe", Some(&format!("{prefix}*")), 1)
    );
    assert_eq!(c.call(&["PUNSUBSCRIBE"]), sub_reply('*', "punsubscribe", Some(&format!("{prefix}*")), 0));
    // Inside MULTI the refusal aborts EXEC.
    assert_eq!(c.call(&["MULTI"]), OK);
    assert_eq!(c.call(&["PUBLISH", &outside, "m"]), noperm);
    assert_eq!(c.call(&["EXEC"]), error("EXECABORT Transaction discarded because of previous errors."));
    assert_eq!(admin.call(&["ACL", "DELUSER", &user]), int(1));
}

#[test]
fn sharded_channels_are_a_namespace_of_their_own() {
    let Some(server) = two_workers() else { return };
    let prefix = key("ps_shard");
    let (a, b, c) = (format!("{prefix}a"), format!("{prefix}b"), format!("{prefix}c"));
    let mut s = Resp::new(&server);
    let mut p = Resp::new(&server);
    assert_eq!(s.call(&["SUNSUBSCRIBE"]), sub_reply('*', "sunsubscribe", None, 0));
    // Shard channels count apart from channels and patterns.
    s.send(&["SSUBSCRIBE", &a, &b, &a]);
    assert_eq!(s.reply(), sub_reply('*', "ssubscribe", Some(&a), 1));
    assert_eq!(s.reply(), sub_reply('*', "ssubscribe", Some(&b), 2));
    assert_eq!(s.reply(), sub_reply('*', "ssubscribe", Some(&a), 2));
    assert_eq!(s.call(&["SUBSCRIBE", &c]), sub_reply('*', "subscribe", Some(&c), 1));
    assert_eq!(s.call(&["GET", "x"]), refused("get"));
    assert_eq!(p.call(&["SPUBLISH", &a, "m"]), int(1));
    assert_eq!(s.reply(), format!("*3\r\n{}{}{}", bulk("smessage"), bulk(&a), bulk("m")));
    // PUBLISH and SPUBLISH do not cross.
    assert_eq!(p.call(&["PUBLISH", &a, "m"]), int(0));
    assert_eq!(p.call(&["SPUBLISH", &c, "m"]), int(0));
    assert!(s.silent());
    let listed = p.call(&["PUBSUB", "SHARDCHANNELS", &format!("{prefix}*")]);
    assert!(listed.starts_with("*2\r\n") && listed.contains(&bulk(&a)) && listed.contains(&bulk(&b)), "{listed:?}");
    assert_eq!(
        p.call(&["PUBSUB", "SHARDNUMSUB", &a, &c]),
        format!("*4\r\n{}{}{}{}", bulk(&a), int(1), bulk(&c), int(0))
    );
    assert_eq!(p.call(&["PUBSUB", "NUMSUB", &a]), format!("*2\r\n{}{}", bulk(&a), int(0)));
    let list = p.call(&["CLIENT", "LIST"]);
    assert!(list.contains(" sub=1 psub=0 ssub=2 "), "{list}");
    // SUNSUBSCRIBE without names leaves the shard channels only.
    s.send(&["SUNSUBSCRIBE"]);
    let mut left = BTreeSet::new();
    for n in (0..2).rev() {
        let r = s.reply();
        assert!(r.starts_with(&format!("*3\r\n{}", bulk("sunsubscribe"))) && r.ends_with(&int(n)), "{r:?}");
        left.insert(r.lines().nth(4).unwrap_or_default().to_string());
    }
    assert_eq!(left, BTreeSet::from([a.clone(), b.clone()]));
    assert_eq!(s.call(&["UNSUBSCRIBE"]), sub_reply('*', "unsubscribe", Some(&c), 0));
    assert_eq!(s.call(&["GET", &key("ps_x")]), NULL2);
    // Not inside EXEC (SUBSCRIBE is).
    assert_eq!(s.call(&["MULTI"]), OK);
    assert_eq!(s.call(&["SSUBSCRIBE", &a]), "+QUEUED\r\n");
    assert_eq!(
        s.call(&["EXEC"]),
        format!("*1\r\n{}", error("ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client"))
    );
    // RESP3: pushes.
    assert!(s.call(&["HELLO", "3"]).starts_with('%'));
    assert_eq!(s.call(&["SSUBSCRIBE", &a]), sub_reply('>', "ssubscribe", Some(&a), 1));
    assert_eq!(p.call(&["SPUBLISH", &a, "r3"]), int(1));
    assert_eq!(s.reply(), format!(">3\r\n{}{}{}", bulk("smessage"), bulk(&a), bulk("r3")));
    assert_eq!(p.call(&["COMMAND", "GETKEYS", "SPUBLISH", &a, "m"]), error("ERR The command has no key arguments"));
}
