//! The `redis` crate (redis-rs, a Rust client not written here) as an
//! application uses it: its typed command API (`Commands`: `con.hset`,
//! `con.zrange_withscores` …) on hashes, lists, sets, sorted sets and
//! strings with EX/PX, a blocking BLPOP woken by a push from another
//! connection, COPY through its `CopyOptions`, and non-atomic pipelines
//! (`redis::pipe()`, no MULTI/EXEC). Each reply is decoded by the crate
//! into Rust types, so a reply of the wrong shape fails the call; every
//! case runs over RESP2 and RESP3. Runs
//! against amalgam and, in CI, against redis-server 7
//! (`AMALGAM_TEST_RESP_ADDR`).
mod common;
use common::*;
use redis::{Commands, CopyOptions, ValueType};
use std::collections::{HashMap, HashSet};
use std::time::Duration;

/// Polls of INFO clients, 10 ms apart, while waiting for a client to
/// block: 5 s at most.
const BLOCKED_POLLS_MAX: usize = 500;

/// A connection speaking RESP2, or RESP3 (the crate sends HELLO 3).
fn connect(server: &Server, resp3: bool) -> redis::Connection {
    let proto = if resp3 { "?protocol=resp3" } else { "" };
    let client = redis::Client::open(format!("redis://{}/{proto}", server.resp_addr())).unwrap();
    let con = client.get_connection().unwrap_or_else(|e| panic!("connect: {e}"));
    con.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    con
}

fn hashes(server: &Server, resp3: bool) {
    let mut con = connect(server, resp3);
    let h = key("rc_hash");
    let added: usize = con.hset(&h, "name", "amalgam").unwrap();
    assert_eq!(added, 1);
    let () = con.hset_multiple(&h, &[("lang", "rust"), ("port", "6379")]).unwrap();
    let name: Option<String> = con.hget(&h, "name").unwrap();
    assert_eq!(name.as_deref(), Some("amalgam"));
    let none: Option<String> = con.hget(&h, "nosuch").unwrap();
    assert_eq!(none, None);
    let port: i64 = con.hincr(&h, "port", 1).unwrap();
    assert_eq!(port, 6380);
    let all: HashMap<String, String> = con.hgetall(&h).unwrap();
    let want: HashMap<String, String> =
        [("name", "amalgam"), ("lang", "rust"), ("port", "6380")].map(|(f, v)| (f.to_string(), v.to_string())).into();
    assert_eq!(all, want);
    let n: usize = con.hlen(&h).unwrap();
    assert_eq!(n, 3);
    let there: bool = con.hexists(&h, "lang").unwrap();
    assert!(there);
    let gone: usize = con.hdel(&h, &["lang", "nosuch"]).unwrap();
    assert_eq!(gone, 1);
    let kind: ValueType = con.key_type(&h).unwrap();
    assert_eq!(kind, ValueType::Hash);
    // A hash past Redis's listpack threshold (512 fields).
    let big = key("rc_bighash");
    let fields: Vec<(String, String)> = (0..700).map(|i| (format!("f{i}"), format!("v{i}"))).collect();
    let () = con.hset_multiple(&big, &fields).unwrap();
    let n: usize = con.hlen(&big).unwrap();
    assert_eq!(n, 700);
    let v: String = con.hget(&big, "f699").unwrap();
    assert_eq!(v, "v699");
    // A string command on a hash: the crate surfaces WRONGTYPE.
    let e = con.get::<_, Option<String>>(&h).unwrap_err();
    assert_eq!(e.code(), Some("WRONGTYPE"), "{e}");
}

fn lists_and_a_blocking_pop(server: &Server, resp3: bool) {
    let mut con = connect(server, resp3);
    let l = key("rc_list");
    let n: usize = con.rpush(&l, &["b", "c"]).unwrap();
    assert_eq!(n, 2);
    let n: usize = con.lpush(&l, "a").unwrap();
    assert_eq!(n, 3);
    let all: Vec<String> = con.lrange(&l, 0, -1).unwrap();
    assert_eq!(all, ["a", "b", "c"]);
    let first: Option<String> = con.lpop(&l, None).unwrap();
    assert_eq!(first.as_deref(), Some("a"));
    let two: Vec<String> = con.rpop(&l, std::num::NonZeroUsize::new(2)).unwrap();
    assert_eq!(two, ["c", "b"]);
    let n: usize = con.llen(&l).unwrap();
    assert_eq!(n, 0, "emptied, so deleted");
    let exists: bool = con.exists(&l).unwrap();
    assert!(!exists);

    // BLPOP on an empty list, woken by an RPUSH from another connection
    // once the server reports the client blocked.
    let q = key("rc_queue");
    let mut pusher = connect(server, resp3);
    let q2 = q.clone();
    let push = std::thread::spawn(move || {
        let mut saw_blocked = false;
        for _ in 0..BLOCKED_POLLS_MAX {
            let info: String = redis::cmd("INFO").arg("clients").query(&mut pusher).unwrap();
            let blocked = info
                .lines()
                .find_map(|l| l.strip_prefix("blocked_clients:"))
                .and_then(|v| v.trim().parse::<u64>().ok())
                .unwrap_or(0);
            if blocked > 0 {
                saw_blocked = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let n: usize = pusher.rpush(&q2, "job-1").unwrap();
        (n, saw_blocked)
    });
    let got: Option<[String; 2]> = con.blpop(&q, 10.0).unwrap();
    assert_eq!(got, Some([q.clone(), "job-1".to_string()]));
    assert_eq!(push.join().unwrap(), (1, true), "one element pushed, to a client blocked on it");
    // A timeout with nothing pushed: nil, decoded as None.
    let none: Option<[String; 2]> = con.blpop(&q, 0.1).unwrap();
    assert_eq!(none, None);
}

fn sets(server: &Server, resp3: bool) {
    let mut con = connect(server, resp3);
    let (s, t) = (key("rc_set"), key("rc_set2"));
    let n: usize = con.sadd(&s, &["a", "b", "c", "a"]).unwrap();
    assert_eq!(n, 3);
    let n: usize = con.sadd(&t, &["b", "c", "d"]).unwrap();
    assert_eq!(n, 3);
    let members: HashSet<String> = con.smembers(&s).unwrap();
    assert_eq!(members, ["a", "b", "c"].map(String::from).into());
    let is: bool = con.sismember(&s, "b").unwrap();
    assert!(is);
    let which: Vec<bool> = con.smismember(&s, &["a", "z"]).unwrap();
    assert_eq!(which, [true, false]);
    let both: HashSet<String> = con.sinter(&[&s, &t]).unwrap();
    assert_eq!(both, ["b", "c"].map(String::from).into());
    let n: usize = con.srem(&s, "a").unwrap();
    assert_eq!(n, 1);
    let n: usize = con.scard(&s).unwrap();
    assert_eq!(n, 2);
    // Integers past the intset threshold (512).
    let ints = key("rc_ints");
    let many: Vec<i64> = (0..600).map(|i| i * 7919).collect();
    let n: usize = con.sadd(&ints, &many).unwrap();
    assert_eq!(n, 600);
    let is: bool = con.sismember(&ints, 599 * 7919).unwrap();
    assert!(is);
}

fn sorted_sets(server: &Server, resp3: bool) {
    let mut con = connect(server, resp3);
    let z = key("rc_zset");
    let n: usize = con.zadd(&z, "alice", 3).unwrap();
    assert_eq!(n, 1);
    let n: usize = con.zadd_multiple(&z, &[(1.5, "bob"), (2.0, "carol")]).unwrap();
    assert_eq!(n, 2);
    let ranked: Vec<(String, f64)> = con.zrange_withscores(&z, 0, -1).unwrap();
    assert_eq!(ranked, [("bob".to_string(), 1.5), ("carol".to_string(), 2.0), ("alice".to_string(), 3.0)]);
    let score: f64 = con.zincr(&z, "bob", 2).unwrap();
    assert_eq!(score, 3.5);
    let s: Option<f64> = con.zscore(&z, "nobody").unwrap();
    assert_eq!(s, None);
    let rank: Option<usize> = con.zrank(&z, "bob").unwrap();
    assert_eq!(rank, Some(2));
    let names: Vec<String> = con.zrange(&z, 0, 0).unwrap();
    assert_eq!(names, ["carol"]);
    // A flat array in RESP2, an array of pairs in RESP3: the same pairs.
    let popped: Vec<(String, f64)> = con.zpopmin(&z, 1).unwrap();
    assert_eq!(popped, [("carol".to_string(), 2.0)]);
    let n: usize = con.zcard(&z).unwrap();
    assert_eq!(n, 2);
    let n: usize = con.zrem(&z, &["alice", "nobody"]).unwrap();
    assert_eq!(n, 1);
    // Past the listpack threshold (128): the order holds.
    let big = key("rc_bigzset");
    let items: Vec<(f64, String)> = (0..300).rev().map(|i| (f64::from(i) / 4.0, format!("m{i:03}"))).collect();
    let n: usize = con.zadd_multiple(&big, &items).unwrap();
    assert_eq!(n, 300);
    let top: Vec<(String, f64)> = con.zrange_withscores(&big, -2, -1).unwrap();
    assert_eq!(top, [("m298".to_string(), 74.5), ("m299".to_string(), 74.75)]);
}

fn strings_with_expiry_and_copy(server: &Server, resp3: bool) {
    let mut con = connect(server, resp3);
    let (a, b, c) = (key("rc_ex"), key("rc_px"), key("rc_copy"));
    let () = con.set_ex(&a, "seconds", 100).unwrap();
    let () = con.pset_ex(&b, "millis", 200).unwrap();
    let ttl: i64 = con.ttl(&a).unwrap();
    assert!((99..=100).contains(&ttl), "TTL {ttl}");
    let pttl: i64 = con.pttl(&b).unwrap();
    assert!((1..=200).contains(&pttl), "PTTL {pttl}");
    let v: Option<String> = con.get(&b).unwrap();
    assert_eq!(v.as_deref(), Some("millis"));
    let copied: bool = con.copy(&a, &c, CopyOptions::default()).unwrap();
    assert!(copied);
    let ttl: i64 = con.ttl(&c).unwrap();
    assert!((98..=100).contains(&ttl), "the copy's TTL {ttl}");
    let again: bool = con.copy(&b, &c, CopyOptions::default()).unwrap();
    assert!(!again, "the destination exists");
    let replaced: bool = con.copy(&b, &c, CopyOptions::default().replace(true)).unwrap();
    assert!(replaced);
    std::thread::sleep(Duration::from_millis(400));
    let v: Option<String> = con.get(&b).unwrap();
    assert_eq!(v, None, "PX 200 has passed");
    let v: Option<String> = con.get(&c).unwrap();
    assert_eq!(v, None, "and so has the copy's");
    let ttl: i64 = con.ttl(&b).unwrap();
    assert_eq!(ttl, -2);
    let v: String = con.get(&a).unwrap();
    assert_eq!(v, "seconds");
}

/// The decoded replies of the mixed pipeline below, in order.
type Replies = (usize, usize, usize, usize, (), Option<String>, Vec<String>, HashSet<String>, Vec<(String, f64)>, i64);

fn pipelines_across_types(server: &Server, resp3: bool) {
    let mut con = connect(server, resp3);
    let (h, l, s, z, k) = (key("rp_h"), key("rp_l"), key("rp_s"), key("rp_z"), key("rp_k"));
    // One write, no MULTI/EXEC (redis::pipe() without .atomic()).
    let (hset, pushed, added, zadded, (), got, range, members, ranked, ttl): Replies = redis::pipe()
        .hset(&h, "f", "v")
        .rpush(&l, &["x", "y", "z"])
        .sadd(&s, &["p", "q"])
        .zadd(&z, "m", 1.25)
        .set_ex(&k, "v", 50)
        .hget(&h, "f")
        .lrange(&l, 0, -1)
        .smembers(&s)
        .zrange_withscores(&z, 0, -1)
        .ttl(&k)
        .query(&mut con)
        .unwrap();
    assert_eq!((hset, pushed, added, zadded), (1, 3, 2, 1));
    assert_eq!(got.as_deref(), Some("v"));
    assert_eq!(range, ["x", "y", "z"]);
    assert_eq!(members, ["p", "q"].map(String::from).into());
    assert_eq!(ranked, [("m".to_string(), 1.25)]);
    assert!((49..=50).contains(&ttl), "{ttl}");
    // Errors inside a pipeline fail the whole query; the commands around
    // them still ran (no transaction).
    let e = redis::pipe()
        .lpush(&h, "wrong")
        .ignore()
        .incr(&k, 1)
        .ignore()
        .hset(&h, "g", "w")
        .query::<(usize,)>(&mut con)
        .unwrap_err();
    // The crate reports every failed command of the pipeline.
    let m = e.to_string();
    assert!(m.contains("WRONGTYPE") && m.contains("value is not an integer or out of range"), "{m}");
    let g: Option<String> = con.hget(&h, "g").unwrap();
    assert_eq!(g.as_deref(), Some("w"), "the command after the error ran");
    // Many commands in one pipeline, replies in order.
    let mut p = redis::pipe();
    for i in 0..300 {
        p.zadd(&z, format!("n{i}"), i).ignore();
    }
    for i in (0..300).step_by(50) {
        p.zscore(&z, format!("n{i}"));
    }
    let scores: Vec<f64> = p.query(&mut con).unwrap();
    assert_eq!(scores, (0..300).step_by(50).map(f64::from).collect::<Vec<_>>());
}

/// Each case over RESP2 and over RESP3, where the crate decodes maps,
/// doubles and sets of the newer protocol into the same Rust types.
macro_rules! both_protocols {
    ($($name:ident),*) => {
        mod cases {
            $(
                #[test]
                fn $name() {
                    let Some(server) = super::resp_server() else { return };
                    super::$name(&server, false);
                    super::$name(&server, true);
                }
            )*
        }
    };
}

both_protocols!(
    hashes,
    lists_and_a_blocking_pop,
    sets,
    sorted_sets,
    strings_with_expiry_and_copy,
    pipelines_across_types
);
