//! Persistence of hashes, lists, sets and sorted sets (issue 19 item 4),
//! black box: the real `amalgam` with `--dir`, killed with SIGKILL and
//! started again on its directory. Every test compares what the clients
//! see before and after the restart — HGETALL, LRANGE, SMEMBERS, ZRANGE
//! WITHSCORES, TYPE, OBJECT ENCODING and PEXPIRETIME of every key — for
//! recovery from the log alone, from a snapshot alone, and from both;
//! for compact (packed) and large collections; and for expiry on them.
//! A damaged log (torn or flipped inside a collection's op record) comes
//! back as the state after the last whole record before the damage.
//!
//! Amalgam-only (`--dir` is Amalgam's): skipped with a note when the
//! harness names another server (AMALGAM_TEST_BIN, AMALGAM_TEST_ADDR,
//! AMALGAM_TEST_RESP_ADDR).

mod common;

use common::resp::{as_int, Resp};
use common::*;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Elements that make a collection large under Redis's default
/// thresholds (512 hash fields, 128 zset and string-set members, a list
/// over 8 KiB).
const LARGE_ELEMENTS: usize = 700;

/// A server of our own on a directory of our own, restartable on it.
struct Node {
    root: PathBuf,
    server: Option<Server>,
    ports: Option<(u16, Option<u16>)>,
    starts: usize,
}

impl Node {
    /// None (with a note) unless the binary under test is an amalgam the
    /// harness may start.
    fn start(name: &str) -> Option<Node> {
        if external_addr().is_some() || external_resp_addr().is_some() {
            eprintln!("note: an external server is named; persistence tests need an amalgam of their own: skipped");
            return None;
        }
        let bin = binary();
        if !Path::new(&bin).file_name().is_some_and(|n| n.to_string_lossy().contains("amalgam")) {
            eprintln!("note: {bin} is not amalgam; persistence (--dir) is amalgam's: skipped");
            return None;
        }
        static N: AtomicUsize = AtomicUsize::new(0);
        let root = std::env::temp_dir().join(format!(
            "amalgam-persist-coll-{}-{name}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("data")).unwrap();
        let mut node = Node { root, server: None, ports: None, starts: 0 };
        node.boot();
        Some(node)
    }

    fn dir(&self) -> PathBuf {
        self.root.join("data")
    }

    fn stderr_path(&self, i: usize) -> PathBuf {
        self.root.join(format!("stderr-{i}.txt"))
    }

    /// What the last start wrote to stderr.
    fn stderr(&self) -> String {
        std::fs::read_to_string(self.stderr_path(self.starts - 1)).unwrap_or_default()
    }

    fn boot(&mut self) {
        let dir = self.dir().to_string_lossy().into_owned();
        let args = ["--dir", &dir, "--fsync", "always", "-t", "2"];
        let stderr = self.stderr_path(self.starts);
        self.starts += 1;
        let s = Server::spawn_with(&args, self.ports, Some(&stderr))
            .unwrap_or_else(|e| panic!("restart on {}: {e}\n{}", dir, self.stderr()));
        self.ports = Some(s.ports());
        self.server = Some(s);
    }

    /// SIGKILL, then a start on the same directory; asserts no panic.
    fn crash_and_restart(&mut self) {
        let mut s = self.server.take().expect("running");
        s.kill9();
        drop(s);
        self.boot();
        let err = self.stderr();
        assert!(!err.contains("panicked"), "{err}");
    }

    fn resp(&self) -> Resp {
        Resp::new(self.server.as_ref().expect("running"))
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        drop(self.server.take());
        if std::thread::panicking() {
            eprintln!("kept {} for inspection", self.root.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }
}

/// Sends every command, then reads every reply (pipelined).
fn pipeline(c: &mut Resp, cmds: &[Vec<String>]) -> Vec<String> {
    for chunk in cmds.chunks(256) {
        for cmd in chunk {
            let args: Vec<&str> = cmd.iter().map(String::as_str).collect();
            c.send(&args);
        }
    }
    // Replies arrive in order; reading them all after sending every chunk
    // is safe for these sizes (the server answers as it reads).
    cmds.iter().map(|_| c.reply()).collect()
}

fn cmd(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// The elements of an array reply in a canonical order: HGETALL's pairs
/// and SMEMBERS's members sorted (their order is unspecified in Redis,
/// and a large set that shrank comes back as an intset, sorted). The
/// elements here never hold CR LF.
fn sorted(reply: &str, group: usize) -> String {
    let lines: Vec<&str> = reply.split("\r\n").collect();
    let (head, rest) = lines.split_first().expect("a reply");
    let mut items: Vec<String> =
        rest.chunks(2 * group).filter(|c| c.len() == 2 * group).map(|c| c.join("\r\n")).collect();
    items.sort();
    format!("{head}\r\n{}", items.join("\r\n"))
}

/// What a client sees of `keys`: type, deadline and contents (hash and
/// set order-insensitive), and OBJECT ENCODING too `with_encoding` (a
/// large collection that shrank below its thresholds comes back compact,
/// as it does from Redis's RDB, so only scripted tests compare it).
fn dump_with(c: &mut Resp, keys: &[&str], with_encoding: bool) -> Vec<String> {
    let mut out = Vec::new();
    for k in keys {
        let ty = c.call(&["TYPE", k]);
        let contents = match ty.as_str() {
            "+hash\r\n" => sorted(&c.call(&["HGETALL", k]), 2),
            "+list\r\n" => c.call(&["LRANGE", k, "0", "-1"]),
            "+set\r\n" => sorted(&c.call(&["SMEMBERS", k]), 1),
            "+zset\r\n" => c.call(&["ZRANGE", k, "0", "-1", "WITHSCORES"]),
            "+string\r\n" => c.call(&["GET", k]),
            _ => String::new(),
        };
        let enc = if with_encoding { c.call(&["OBJECT", "ENCODING", k]) } else { String::new() };
        let at = c.call(&["PEXPIRETIME", k]);
        out.push(format!("{k}: {} {} {} {}", ty.trim_end(), enc.trim_end(), at.trim_end(), contents));
    }
    out
}

fn dump(c: &mut Resp, keys: &[&str]) -> Vec<String> {
    dump_with(c, keys, true)
}

/// Asserts two dumps agree, naming the first key that differs.
fn assert_same(before: &[String], after: &[String], why: &str) {
    assert_eq!(before.len(), after.len());
    for (b, a) in before.iter().zip(after) {
        // Where they part, with some context on either side.
        let at = b.bytes().zip(a.bytes()).position(|(x, y)| x != y).unwrap_or(b.len().min(a.len()));
        let from = at.saturating_sub(120);
        let (bs, as_) = (&b.as_bytes()[from..b.len().min(at + 200)], &a.as_bytes()[from..a.len().min(at + 200)]);
        assert!(
            b == a,
            "{why}: differs after the restart at byte {at} of {} / {}\nbefore: {:.80}… {}\nafter:  {:.80}… {}",
            b.len(),
            a.len(),
            b,
            String::from_utf8_lossy(bs).escape_debug(),
            a,
            String::from_utf8_lossy(as_).escape_debug()
        );
    }
}

const KEYS: [&str; 16] =
    ["h", "hbig", "l", "lbig", "l2", "s", "si", "sbig", "s2", "z", "zbig", "z2", "dst", "zdst", "gone", "str"];

/// Every collection write, on compact and large values of every kind:
/// each one journals as a new item (compact), an object's encoding (a
/// conversion or a *STORE), an in-place op (large) or a META (EXPIRE on
/// a large value).
fn every_write(c: &mut Resp) {
    // Fill: compact ones stay compact, large ones pass their thresholds.
    let mut cmds = vec![
        cmd(&["HSET", "h", "a", "1", "b", "2", "n", "10", "f", "1.5"]),
        cmd(&["RPUSH", "l", "a", "b", "c", "d", "e", "b"]),
        cmd(&["SADD", "s", "x", "y", "z", "w"]),
        cmd(&["SADD", "si", "1", "2", "3", "-7"]),
        cmd(&["ZADD", "z", "1", "a", "2", "b", "3", "c", "-0", "zero"]),
    ];
    for i in 0..LARGE_ELEMENTS {
        let (f, v) = (format!("field:{i:06}"), format!("value-{i}"));
        cmds.push(cmd(&["HSET", "hbig", &f, &v]));
        cmds.push(cmd(&["RPUSH", "lbig", &format!("item-{i:05}-{}", "x".repeat(i % 30))]));
        cmds.push(cmd(&["SADD", "sbig", &format!("member:{i}")]));
        cmds.push(cmd(&["ZADD", "zbig", &format!("{}", i as f64 / 3.0), &format!("m{i}")]));
    }
    // Hash.
    cmds.push(cmd(&["HDEL", "h", "b"]));
    cmds.push(cmd(&["HDEL", "hbig", "field:000001", "field:000002", "nope"]));
    cmds.push(cmd(&["HSETNX", "hbig", "field:000003", "no"]));
    cmds.push(cmd(&["HSETNX", "hbig", "new", "yes"]));
    cmds.push(cmd(&["HINCRBY", "h", "n", "5"]));
    cmds.push(cmd(&["HINCRBY", "hbig", "counter", "-12"]));
    cmds.push(cmd(&["HINCRBYFLOAT", "h", "f", "0.1"]));
    cmds.push(cmd(&["HINCRBYFLOAT", "hbig", "float", "3.0e-1"]));
    cmds.push(cmd(&["HINCRBYFLOAT", "hbig", "float", "1.25"]));
    cmds.push(cmd(&["HMSET", "hbig", "field:000004", "changed", "m2", "v2"]));
    // List.
    cmds.push(cmd(&["LPUSH", "lbig", "left1", "left2"]));
    cmds.push(cmd(&["RPUSHX", "lbig", "right"]));
    cmds.push(cmd(&["LPUSHX", "nolist", "x"]));
    cmds.push(cmd(&["LPOP", "lbig"]));
    cmds.push(cmd(&["RPOP", "lbig", "3"]));
    cmds.push(cmd(&["LSET", "lbig", "10", "set-at-10"]));
    cmds.push(cmd(&["LSET", "lbig", "-5", "set-at-minus-5"]));
    cmds.push(cmd(&["LINSERT", "lbig", "BEFORE", "set-at-10", "inserted"]));
    cmds.push(cmd(&["LINSERT", "l", "AFTER", "c", "c2"]));
    cmds.push(cmd(&["LREM", "l", "-1", "b"]));
    cmds.push(cmd(&["LREM", "lbig", "0", "inserted"]));
    cmds.push(cmd(&["LMOVE", "lbig", "lbig", "LEFT", "RIGHT"]));
    cmds.push(cmd(&["LMOVE", "lbig", "l2", "RIGHT", "LEFT"]));
    cmds.push(cmd(&["RPOPLPUSH", "lbig", "l2"]));
    cmds.push(cmd(&["LMPOP", "2", "nolist", "lbig", "LEFT", "COUNT", "2"]));
    cmds.push(cmd(&["BLPOP", "lbig", "1"]));
    cmds.push(cmd(&["BRPOP", "l", "1"]));
    cmds.push(cmd(&["LTRIM", "lbig", "1", "-2"]));
    // Set.
    cmds.push(cmd(&["SREM", "sbig", "member:5", "member:6", "nope"]));
    cmds.push(cmd(&["SPOP", "sbig"]));
    cmds.push(cmd(&["SPOP", "sbig", "3"]));
    cmds.push(cmd(&["SPOP", "s"]));
    cmds.push(cmd(&["SMOVE", "sbig", "s2", "member:7"]));
    cmds.push(cmd(&["SADD", "si", "12345678901"]));
    cmds.push(cmd(&["SINTERSTORE", "dst", "sbig", "sbig"]));
    cmds.push(cmd(&["SADD", "dst", "extra"]));
    // Sorted set.
    cmds.push(cmd(&["ZADD", "zbig", "NX", "100", "m1", "100", "new"]));
    cmds.push(cmd(&["ZADD", "zbig", "XX", "GT", "CH", "0", "m2", "500", "m3"]));
    cmds.push(cmd(&["ZADD", "zbig", "LT", "-1", "m4"]));
    cmds.push(cmd(&["ZINCRBY", "zbig", "0.1", "m5"]));
    cmds.push(cmd(&["ZINCRBY", "zbig", "0.2", "m5"]));
    cmds.push(cmd(&["ZADD", "zbig", "INCR", "+inf", "m6"]));
    cmds.push(cmd(&["ZINCRBY", "z", "2.5", "a"]));
    cmds.push(cmd(&["ZREM", "zbig", "m7", "m8", "nope"]));
    cmds.push(cmd(&["ZPOPMIN", "zbig", "2"]));
    cmds.push(cmd(&["ZPOPMAX", "zbig"]));
    cmds.push(cmd(&["BZPOPMIN", "zbig", "1"]));
    cmds.push(cmd(&["ZMPOP", "1", "zbig", "MAX", "COUNT", "2"]));
    cmds.push(cmd(&["ZREMRANGEBYSCORE", "zbig", "20", "(25"]));
    cmds.push(cmd(&["ZREMRANGEBYSCORE", "zbig", "1000", "2000"]));
    cmds.push(cmd(&["ZREMRANGEBYRANK", "zbig", "-3", "-2"]));
    cmds.push(cmd(&["ZREMRANGEBYLEX", "z", "[b", "[c"]));
    cmds.push(cmd(&["ZADD", "z2", "1", "same", "1", "same2"]));
    cmds.push(cmd(&["ZREMRANGEBYLEX", "z2", "[same2", "+"]));
    cmds.push(cmd(&["ZUNIONSTORE", "zdst", "2", "zbig", "z", "WEIGHTS", "2", "1"]));
    cmds.push(cmd(&["ZADD", "zdst", "7", "late"]));
    // Keys: an emptied collection is deleted; a string replaces one.
    cmds.push(cmd(&["SADD", "gone", "only"]));
    cmds.push(cmd(&["SREM", "gone", "only"]));
    cmds.push(cmd(&["RPUSH", "str", "a"]));
    cmds.push(cmd(&["SET", "str", "a string now"]));
    let replies = pipeline(c, &cmds);
    for (r, q) in replies.iter().zip(&cmds) {
        assert!(!r.starts_with('-'), "{q:?} answered {r}");
    }
}

/// Every write survives a SIGKILL from the log alone (no snapshot).
#[test]
fn every_collection_write_survives_a_kill_from_the_log() {
    let Some(mut node) = Node::start("log") else { return };
    let mut c = node.resp();
    every_write(&mut c);
    // Large ones are large, small ones compact (else this tests less).
    assert_eq!(c.call(&["OBJECT", "ENCODING", "hbig"]), "$9\r\nhashtable\r\n");
    assert_eq!(c.call(&["OBJECT", "ENCODING", "zbig"]), "$8\r\nskiplist\r\n");
    assert_eq!(c.call(&["OBJECT", "ENCODING", "lbig"]), "$9\r\nquicklist\r\n");
    assert_eq!(c.call(&["OBJECT", "ENCODING", "h"]), "$8\r\nlistpack\r\n");
    assert_eq!(c.call(&["OBJECT", "ENCODING", "si"]), "$6\r\nintset\r\n");
    let before = dump(&mut c, &KEYS);
    node.crash_and_restart();
    let mut c = node.resp();
    assert_same(&before, &dump(&mut c, &KEYS), "log recovery");
    assert!(node.stderr().contains("recovered"), "{}", node.stderr());
    assert!(!node.stderr().contains("warning"), "{}", node.stderr());
}

/// A snapshot alone (SAVE, then SIGKILL with nothing after the cut)
/// restores every kind exactly, compact ones with their encoding.
#[test]
fn every_collection_survives_from_a_snapshot_alone() {
    let Some(mut node) = Node::start("snap") else { return };
    let mut c = node.resp();
    every_write(&mut c);
    assert_eq!(c.call(&["SAVE"]), "+OK\r\n");
    let before = dump(&mut c, &KEYS);
    // Every log segment after the cut holds no key's record: recovery
    // reads the keys from the snapshot only.
    node.crash_and_restart();
    let mut c = node.resp();
    assert_same(&before, &dump(&mut c, &KEYS), "snapshot recovery");
    let err = node.stderr();
    assert!(err.contains("snapshot") && !err.contains("warning"), "{err}");
    // And the restored values take writes that survive the next restart.
    c.call(&["HSET", "hbig", "after", "restart"]);
    c.call(&["LPUSH", "lbig", "after"]);
    c.call(&["ZADD", "zbig", "0.5", "after"]);
    c.call(&["SADD", "sbig", "after"]);
    let before = dump(&mut c, &KEYS);
    node.crash_and_restart();
    let mut c = node.resp();
    assert_same(&before, &dump(&mut c, &KEYS), "snapshot plus log");
}

/// A snapshot taken in the middle of the writes, the rest from the log.
#[test]
fn collections_survive_from_a_snapshot_and_the_log_after_it() {
    let Some(mut node) = Node::start("both") else { return };
    let mut c = node.resp();
    c.call(&["HSET", "hbig", "early", "1"]);
    c.call(&["RPUSH", "lbig", "early"]);
    assert_eq!(c.call(&["SAVE"]), "+OK\r\n");
    every_write(&mut c);
    let before = dump(&mut c, &KEYS);
    node.crash_and_restart();
    let mut c = node.resp();
    assert_same(&before, &dump(&mut c, &KEYS), "snapshot + log");
}

/// A tiny seeded generator (SplitMix64): the random workload repeats.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One random collection write on one of `keys` (members from a small
/// pool, so removals hit and collections cross their thresholds).
fn random_write(r: &mut Rng, keys: &[&str; 4]) -> Vec<String> {
    let m = |r: &mut Rng| format!("m{}", r.below(900));
    let n = |r: &mut Rng| (r.below(2000) as i64 - 1000).to_string();
    let [h, l, s, z] = *keys;
    match r.below(22) {
        0 => (0..1 + r.below(40)).fold(cmd(&["HSET", h]), |mut v, _| {
            v.push(m(r));
            v.push(n(r));
            v
        }),
        1 => cmd(&["HDEL", h, &m(r), &m(r)]),
        2 => cmd(&["HINCRBYFLOAT", h, &format!("f{}", r.below(5)), "0.3"]),
        3 => cmd(&["HINCRBY", h, &format!("i{}", r.below(5)), &n(r)]),
        4 => (0..1 + r.below(60)).fold(cmd(&[if r.below(2) == 0 { "LPUSH" } else { "RPUSH" }, l]), |mut v, _| {
            v.push(m(r));
            v
        }),
        5 => cmd(&["LPOP", l, &r.below(5).to_string()]),
        6 => cmd(&["RPOP", l]),
        7 => cmd(&["LREM", l, &(r.below(5) as i64 - 2).to_string(), &m(r)]),
        8 => cmd(&["LINSERT", l, "BEFORE", &m(r), "ins"]),
        9 => cmd(&["LTRIM", l, &r.below(3).to_string(), &(-1 - r.below(3) as i64).to_string()]),
        10 => cmd(&["LMOVE", l, l, "LEFT", "RIGHT"]),
        11 => (0..1 + r.below(60)).fold(cmd(&["SADD", s]), |mut v, _| {
            v.push(if r.below(2) == 0 { r.below(600).to_string() } else { m(r) });
            v
        }),
        12 => cmd(&["SREM", s, &m(r), &r.below(600).to_string()]),
        13 => cmd(&["SPOP", s, &r.below(4).to_string()]),
        14 => (0..1 + r.below(50)).fold(cmd(&["ZADD", z]), |mut v, _| {
            v.push(format!("{}", r.below(1000) as f64 / 7.0));
            v.push(m(r));
            v
        }),
        15 => cmd(&["ZINCRBY", z, "1.1", &m(r)]),
        16 => cmd(&["ZREM", z, &m(r), &m(r)]),
        17 => cmd(&["ZPOPMIN", z, &r.below(3).to_string()]),
        18 => cmd(&["ZREMRANGEBYSCORE", z, &format!("{}", r.below(140)), &format!("{}", r.below(140))]),
        19 => cmd(&["ZADD", z, "GT", "CH", &format!("{}", r.below(200)), &m(r)]),
        20 => cmd(&["SMOVE", s, "s-other", &m(r)]),
        _ => cmd(&["LMOVE", l, "l-other", "RIGHT", "LEFT"]),
    }
}

/// The crash harness for collections: seeded random writes to keys that
/// grow past their thresholds and shrink, with snapshots (SAVE and
/// BGSAVE) at random points, SIGKILL, restart, compare; three rounds on
/// one directory. `PERSIST_SEED` repeats a run.
#[test]
fn random_collection_writes_recover_exactly_across_kills_and_snapshots() {
    let Some(mut node) = Node::start("random") else { return };
    let seed = std::env::var("PERSIST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
    });
    eprintln!("seed {seed} (PERSIST_SEED={seed} repeats it)");
    let mut r = Rng(seed);
    let sets = [["ha", "la", "sa", "za"], ["hb", "lb", "sb", "zb"]];
    let all = ["ha", "la", "sa", "za", "hb", "lb", "sb", "zb", "s-other", "l-other"];
    for round in 0..3 {
        let mut c = node.resp();
        for _ in 0..8 {
            let cmds: Vec<Vec<String>> = (0..150)
                .map(|_| {
                    let keys = &sets[r.below(2) as usize];
                    random_write(&mut r, keys)
                })
                .collect();
            let replies = pipeline(&mut c, &cmds);
            for (rep, q) in replies.iter().zip(&cmds) {
                assert!(!rep.starts_with("-ERR"), "{q:?} answered {rep}");
            }
            match r.below(4) {
                0 => assert_eq!(c.call(&["SAVE"]), "+OK\r\n"),
                1 => {
                    c.call(&["BGSAVE"]);
                }
                _ => {}
            }
        }
        let before = dump_with(&mut c, &all, false);
        node.crash_and_restart();
        let mut c = node.resp();
        assert_same(&before, &dump_with(&mut c, &all, false), &format!("round {round}, seed {seed}"));
        assert!(!node.stderr().contains("warning"), "{}", node.stderr());
    }
}

/// TTLs on collections come back (PEXPIRETIME exact, a PERSIST kept), a
/// deadline that passed while the server was down is gone, and an
/// EXPIRE on a large collection is logged as its fields (a META record),
/// not as a copy of the collection.
#[test]
fn expiry_on_collections_survives_a_restart() {
    let Some(mut node) = Node::start("ttl") else { return };
    let mut c = node.resp();
    let mut cmds = Vec::new();
    for i in 0..LARGE_ELEMENTS {
        cmds.push(cmd(&["SADD", "big", &format!("member-{i}")]));
    }
    cmds.push(cmd(&["SADD", "small", "a"]));
    cmds.push(cmd(&["ZADD", "soon", "1", "a"]));
    cmds.push(cmd(&["RPUSH", "kept", "a"]));
    pipeline(&mut c, &cmds);
    assert_eq!(c.call(&["PEXPIRE", "big", "86400123"]), ":1\r\n");
    assert_eq!(c.call(&["EXPIRE", "small", "86400"]), ":1\r\n");
    assert_eq!(c.call(&["PEXPIRE", "soon", "300"]), ":1\r\n");
    assert_eq!(c.call(&["EXPIRE", "kept", "100"]), ":1\r\n");
    assert_eq!(c.call(&["PERSIST", "kept"]), ":1\r\n");
    let log_before = log_bytes(&node.dir());
    assert_eq!(c.call(&["PEXPIRE", "big", "86400456"]), ":1\r\n");
    let grew = log_bytes(&node.dir()) - log_before;
    assert!(grew < 400, "an EXPIRE on a {LARGE_ELEMENTS}-member set wrote {grew} log bytes");
    let keys = ["big", "small", "kept"];
    let before = dump(&mut c, &keys);
    std::thread::sleep(std::time::Duration::from_millis(400));
    node.crash_and_restart();
    let mut c = node.resp();
    assert_same(&before, &dump(&mut c, &keys), "TTLs");
    assert_eq!(c.call(&["EXISTS", "soon"]), ":0\r\n");
    assert_eq!(c.call(&["TTL", "kept"]), ":-1\r\n");
    assert_eq!(c.call(&["SCARD", "big"]), format!(":{LARGE_ELEMENTS}\r\n"));
    // From a snapshot too.
    assert_eq!(c.call(&["SAVE"]), "+OK\r\n");
    node.crash_and_restart();
    let mut c = node.resp();
    assert_same(&before, &dump(&mut c, &keys), "TTLs from a snapshot");
}

/// Bytes of every log segment in `dir`.
fn log_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".aml"))
        .map(|e| e.metadata().map_or(0, |m| m.len()))
        .sum()
}

/// Bytes of a log segment's header (amalgam-persist format.rs).
const LOG_HEADER_BYTES: usize = 24;
/// Record type of an in-place collection change (format.rs: OP).
const T_OP: u8 = 8;

/// Byte offsets of the OP records in a log segment (framing: u32 len,
/// u32 crc, body of len bytes whose first byte is the type).
fn op_offsets(log: &[u8]) -> Vec<(usize, usize)> {
    let mut at = LOG_HEADER_BYTES;
    let mut out = Vec::new();
    while at + 8 <= log.len() {
        let len = u32::from_le_bytes(log[at..at + 4].try_into().unwrap()) as usize;
        if log[at + 8] == T_OP {
            out.push((at, 8 + len));
        }
        at += 8 + len;
    }
    out
}

/// A torn or flipped OP record: recovery keeps every record before it and
/// the collection is exactly as it was after the last whole one (dumps
/// taken after each write; the damaged copy of the directory is started
/// once per damage).
#[test]
fn a_damaged_op_record_recovers_to_the_writes_before_it() {
    let Some(mut node) = Node::start("damage") else { return };
    let mut c = node.resp();
    let mut cmds = Vec::new();
    for i in 0..LARGE_ELEMENTS {
        cmds.push(cmd(&["ZADD", "z", &i.to_string(), &format!("m{i}")]));
        cmds.push(cmd(&["RPUSH", "l", &format!("element-{i:05}-{}", "x".repeat(20))]));
    }
    pipeline(&mut c, &cmds);
    // The snapshot holds the large values; the segment after its cut
    // holds only the writes below, one OP record each.
    assert_eq!(c.call(&["OBJECT", "ENCODING", "l"]), "$9\r\nquicklist\r\n");
    assert_eq!(c.call(&["SAVE"]), "+OK\r\n");
    let keys = ["z", "l"];
    let mut states = vec![dump(&mut c, &keys)];
    let writes = [
        cmd(&["ZINCRBY", "z", "2.5", "m3"]),
        cmd(&["LPOP", "l", "2"]),
        cmd(&["ZPOPMAX", "z"]),
        cmd(&["LSET", "l", "5", "five"]),
        cmd(&["ZREM", "z", "m10", "m11"]),
        cmd(&["RPUSH", "l", "tail"]),
    ];
    for w in &writes {
        pipeline(&mut c, std::slice::from_ref(w));
        states.push(dump(&mut c, &keys));
    }
    let mut s = node.server.take().unwrap();
    s.kill9();
    drop(s);
    let newest = std::fs::read_dir(node.dir())
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "aml"))
        .max()
        .unwrap();
    let log = std::fs::read(&newest).unwrap();
    let ops = op_offsets(&log);
    assert_eq!(ops.len(), writes.len(), "one OP record per write");
    let pristine: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(node.dir())
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .map(|p| {
            let b = std::fs::read(&p).unwrap();
            (p, b)
        })
        .collect();
    for (i, &(at, len)) in ops.iter().enumerate() {
        for damage in ["torn", "flipped"] {
            for e in std::fs::read_dir(node.dir()).unwrap() {
                let _ = std::fs::remove_file(e.unwrap().path());
            }
            for (p, b) in &pristine {
                std::fs::write(p, b).unwrap();
            }
            let mut bad = log.clone();
            if damage == "torn" {
                bad.truncate(at + len / 2);
            } else {
                bad[at + len - 1] ^= 0x5A;
            }
            std::fs::write(&newest, &bad).unwrap();
            node.boot();
            let mut c = node.resp();
            assert_same(&states[i], &dump(&mut c, &keys), &format!("{damage} OP record {i}"));
            assert!(node.stderr().contains("warning"), "{}", node.stderr());
            let mut s = node.server.take().unwrap();
            s.kill9();
        }
    }
}

/// Pipelined writes to writer `w`'s own list, set, hash and sorted set
/// (element `i` in round `i`) until the connection fails; returns how
/// many rounds were acknowledged (every reply of rounds `0..n` read and
/// right). Its own client: the harness's panics on a failed write.
fn writer(addr: std::net::SocketAddr, w: usize, progress: &AtomicUsize) -> usize {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(addr) else { return 0 };
    let _ = s.set_read_timeout(Some(READ_TIMEOUT));
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 65536];
    let mut acked = 0;
    // Bounded: the server is killed long before this many rounds.
    for batch in 0..10_000usize {
        let mut req = Vec::new();
        for i in batch * 16..batch * 16 + 16 {
            let e = format!("{w}-{i:07}-{}", "e".repeat(30));
            let n = i.to_string();
            for q in [
                [&b"RPUSH"[..], format!("l{w}").as_bytes(), e.as_bytes()].to_vec(),
                [&b"SADD"[..], format!("s{w}").as_bytes(), e.as_bytes()].to_vec(),
                [&b"HSET"[..], format!("h{w}").as_bytes(), e.as_bytes(), n.as_bytes()].to_vec(),
                [&b"ZADD"[..], format!("z{w}").as_bytes(), n.as_bytes(), e.as_bytes()].to_vec(),
            ] {
                req.extend(common::resp::encode(&q));
            }
        }
        if s.write_all(&req).is_err() {
            return acked;
        }
        for j in 0..64 {
            let len = loop {
                if let Some(n) = common::resp::reply_len(&buf) {
                    break n;
                }
                match s.read(&mut chunk) {
                    Ok(0) | Err(_) => return acked,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            };
            let ok = buf.first() == Some(&b':');
            buf.drain(..len);
            if !ok {
                return acked;
            }
            if j % 4 == 3 {
                acked = batch * 16 + j / 4 + 1;
            }
        }
        progress.store(acked, Ordering::Relaxed);
    }
    acked
}

/// The crash harness with collections: SIGKILL while two clients pipeline
/// writes to large lists, sets, hashes and sorted sets; after the restart
/// every acknowledged write is there, nothing is doubled (an element past
/// the acknowledged ones may be, as a write the server made but whose
/// reply was lost), and a list holds exactly the rounds `0..n` in order.
/// `--fsync always`: acknowledged means on disk. Three kills.
#[test]
fn acknowledged_collection_writes_survive_a_kill_in_flight() {
    let Some(mut node) = Node::start("inflight") else { return };
    for kill in 0..3 {
        let addr = node.server.as_ref().unwrap().resp_addr();
        let progress: Vec<std::sync::Arc<AtomicUsize>> = (0..2).map(|_| Default::default()).collect();
        let writers: Vec<_> = (0..2)
            .map(|w| {
                let p = std::sync::Arc::clone(&progress[w]);
                std::thread::spawn(move || writer(addr, w + 10 * kill, &p))
            })
            .collect();
        // Killed once every collection is large (past 300 rounds), at a
        // moment that differs per kill; the wait is bounded.
        for _ in 0..3000 {
            if progress.iter().all(|p| p.load(Ordering::Relaxed) > 300) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        std::thread::sleep(std::time::Duration::from_millis(37 * kill as u64));
        let mut s = node.server.take().unwrap();
        s.kill9();
        drop(s);
        let acked: Vec<usize> = writers.into_iter().map(|h| h.join().unwrap()).collect();
        node.boot();
        assert!(!node.stderr().contains("panicked"), "{}", node.stderr());
        let mut c = node.resp();
        for (w, &n) in acked.iter().enumerate() {
            let w = w + 10 * kill;
            assert!(n > 300, "writer {w} got only {n} rounds acknowledged before the kill");
            let len = as_int(&c.call(&["LLEN", &format!("l{w}")])) as usize;
            assert!(len >= n, "kill {kill}: list of writer {w} has {len} of {n} acknowledged elements");
            let list = c.call(&["LRANGE", &format!("l{w}"), "0", "-1"]);
            let want: String = (0..len)
                .map(|i| {
                    let e = format!("{w}-{i:07}-{}", "e".repeat(30));
                    format!("${}\r\n{e}\r\n", e.len())
                })
                .collect();
            assert!(list == format!("*{len}\r\n{want}"), "kill {kill}: list of writer {w} is not rounds 0..{len}");
            for (k, cmd) in [("s", "SCARD"), ("h", "HLEN"), ("z", "ZCARD")] {
                let m = as_int(&c.call(&[cmd, &format!("{k}{w}")])) as usize;
                assert!(m >= n && m <= len + 16, "kill {kill}: {k}{w} has {m} elements, {n} acknowledged");
            }
            let e = format!("{w}-{:07}-{}", n - 1, "e".repeat(30));
            assert_eq!(
                c.call(&["ZSCORE", &format!("z{w}"), &e]),
                format!("${}\r\n{}\r\n", (n - 1).to_string().len(), n - 1)
            );
            assert_eq!(
                c.call(&["HGET", &format!("h{w}"), &e]),
                format!("${}\r\n{}\r\n", (n - 1).to_string().len(), n - 1)
            );
        }
    }
}

/// RENAME (a large collection moved without a copy: its new item holds the
/// same object), COPY and an EXEC of several writes, then more in-place
/// writes on the renamed key: all recovered exactly after a kill, from
/// the log alone and from a snapshot taken between them.
#[test]
fn renames_copies_and_transactions_survive_a_kill() {
    let Some(mut node) = Node::start("rename") else { return };
    let mut c = node.resp();
    let mut hset = vec!["HSET".to_string(), "rh".to_string()];
    for i in 0..LARGE_ELEMENTS {
        hset.push(format!("f{i}"));
        hset.push(format!("v{i}"));
    }
    let refs: Vec<&str> = hset.iter().map(|s| s.as_str()).collect();
    assert_eq!(as_int(&c.call(&refs)), LARGE_ELEMENTS as i64);
    assert_eq!(c.call(&["RPUSH", "rl", "a", "b", "c"]), ":3\r\n");
    assert_eq!(c.call(&["RENAME", "rh", "rh2"]), "+OK\r\n");
    assert_eq!(c.call(&["HSET", "rh2", "f0", "changed", "new", "1"]), ":1\r\n");
    assert_eq!(c.call(&["COPY", "rh2", "rh3"]), ":1\r\n");
    assert_eq!(c.call(&["HDEL", "rh3", "f1"]), ":1\r\n");
    assert_eq!(c.call(&["SAVE"]), "+OK\r\n");
    assert_eq!(c.call(&["RENAMENX", "rl", "rl2"]), ":1\r\n");
    assert_eq!(c.call(&["MULTI"]), "+OK\r\n");
    assert_eq!(c.call(&["LPUSH", "rl2", "z"]), "+QUEUED\r\n");
    assert_eq!(c.call(&["HSET", "rh2", "f2", "in-exec"]), "+QUEUED\r\n");
    assert_eq!(c.call(&["RENAME", "rh3", "rh4"]), "+QUEUED\r\n");
    assert_eq!(c.call(&["EXEC"]), "*3\r\n:4\r\n:0\r\n+OK\r\n");
    let keys = ["rh", "rh2", "rh3", "rh4", "rl", "rl2"];
    let before = dump(&mut c, &keys);
    node.crash_and_restart();
    let mut c = node.resp();
    assert_same(&before, &dump(&mut c, &keys), "snapshot + log recovery");
    assert_eq!(c.call(&["HGET", "rh2", "f2"]), "$7\r\nin-exec\r\n");
    assert_eq!(as_int(&c.call(&["HLEN", "rh4"])), LARGE_ELEMENTS as i64);
    // Once more from the log alone (no snapshot since the restart's).
    assert_eq!(c.call(&["RENAME", "rh2", "rh5"]), "+OK\r\n");
    assert_eq!(c.call(&["HDEL", "rh5", "f3"]), ":1\r\n");
    let keys = ["rh2", "rh4", "rh5", "rl2"];
    let before = dump(&mut c, &keys);
    node.crash_and_restart();
    let mut c = node.resp();
    assert_same(&before, &dump(&mut c, &keys), "log recovery");
}

/// The FUNCTION libraries (issue 34) survive a SIGKILL, from the log
/// alone and then from a snapshot plus the log, and a FUNCTION DELETE and
/// FLUSH after them survive too: the last FUNCTIONS record wins.
#[test]
fn function_libraries_survive_restarts() {
    let Some(mut node) = Node::start("functions") else { return };
    let lib = "#!lua name=plib\nredis.register_function('pfn', function(keys, args) return 'persisted' end)";
    let lib2 =
        "#!lua name=plib2\nredis.register_function('pfn2', function(keys) return redis.call('incr', keys[1]) end)";
    let mut c = node.resp();
    assert_eq!(c.call(&["FUNCTION", "LOAD", lib]), common::resp::bulk("plib"));
    drop(c);
    node.crash_and_restart();
    let mut c = node.resp();
    assert_eq!(c.call(&["FCALL", "pfn", "0"]), common::resp::bulk("persisted"), "from the log");
    assert_eq!(c.call(&["FUNCTION", "LOAD", lib2]), common::resp::bulk("plib2"));
    assert_eq!(c.call(&["FCALL", "pfn2", "1", "pk"]), ":1\r\n");
    assert_eq!(c.call(&["SAVE"]), common::resp::OK);
    assert_eq!(c.call(&["FUNCTION", "DELETE", "plib"]), common::resp::OK);
    drop(c);
    node.crash_and_restart();
    let mut c = node.resp();
    assert_eq!(c.call(&["FCALL", "pfn", "0"]), "-ERR Function not found\r\n", "the DELETE after the snapshot");
    assert_eq!(c.call(&["FCALL", "pfn2", "1", "pk"]), ":2\r\n", "the snapshot's library and its key");
    assert_eq!(c.call(&["FUNCTION", "FLUSH"]), common::resp::OK);
    drop(c);
    node.crash_and_restart();
    let mut c = node.resp();
    assert_eq!(c.call(&["FUNCTION", "LIST"]), "*0\r\n", "the FLUSH");
}

/// Redis's numbered databases (issue 35 §1) come back from the log and
/// from a snapshot each in its own database: a key's database is in its
/// stored form, which the log and the snapshot record as they are.
#[test]
fn databases_survive_restarts() {
    let Some(mut node) = Node::start("databases") else { return };
    let mut c = node.resp();
    assert_eq!(c.call(&["SET", "k", "zero"]), common::resp::OK);
    assert_eq!(c.call(&["SELECT", "3"]), common::resp::OK);
    assert_eq!(c.call(&["SET", "k", "three"]), common::resp::OK);
    assert_eq!(c.call(&["RPUSH", "l", "a", "b"]), ":2\r\n");
    assert_eq!(c.call(&["SELECT", "15"]), common::resp::OK);
    // A name beginning with the escape byte (stored escaped).
    c.send_raw(&common::resp::encode(&[&b"SET"[..], b"\xffk", b"fifteen"]));
    assert_eq!(c.reply(), common::resp::OK);
    drop(c);
    node.crash_and_restart();
    let check = |c: &mut common::resp::Resp, when: &str| {
        assert_eq!(c.call(&["GET", "k"]), common::resp::bulk("zero"), "{when}: database 0");
        assert_eq!(c.call(&["DBSIZE"]), ":1\r\n", "{when}");
        assert_eq!(c.call(&["SELECT", "3"]), common::resp::OK);
        assert_eq!(c.call(&["GET", "k"]), common::resp::bulk("three"), "{when}: database 3");
        assert_eq!(c.call(&["LRANGE", "l", "0", "-1"]), "*2\r\n$1\r\na\r\n$1\r\nb\r\n", "{when}");
        assert_eq!(c.call(&["DBSIZE"]), ":2\r\n", "{when}");
        assert_eq!(c.call(&["SELECT", "15"]), common::resp::OK);
        c.send(&["KEYS", "*"]);
        assert_eq!(c.reply_bytes(), b"*1\r\n$2\r\n\xffk\r\n", "{when}: database 15");
        assert_eq!(c.call(&["SELECT", "0"]), common::resp::OK);
    };
    let mut c = node.resp();
    check(&mut c, "from the log");
    assert_eq!(c.call(&["SAVE"]), common::resp::OK);
    drop(c);
    node.crash_and_restart();
    let mut c = node.resp();
    check(&mut c, "from the snapshot");
}
