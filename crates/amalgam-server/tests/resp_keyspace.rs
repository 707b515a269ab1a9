//! RANDOMKEY, COPY and MEMORY over RESP, black-box, on strings and every
//! collection type, small (compact) and large. Runs against amalgam and,
//! in CI, against redis-server 7 (`AMALGAM_TEST_RESP_ADDR`); where the two
//! differ by design (one database; MEMORY USAGE's figure) the test says
//! so and checks each one's answer.
mod common;
use common::resp::*;
use common::*;
use std::collections::HashSet;

/// The elements of a flat array of bulk strings (RESP2), in order.
fn elements(reply: &str) -> Vec<String> {
    let mut lines = reply.split("\r\n");
    let head = lines.next().unwrap_or("");
    assert!(head.starts_with('*'), "not an array: {reply:?}");
    let mut out = Vec::new();
    // Bounded by the reply's lines.
    while let Some(l) = lines.next() {
        if l.starts_with('$') {
            out.push(lines.next().unwrap_or("").to_string());
        }
    }
    out
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

/// Fills `k` with a collection of `kind` and `n` elements, in a few
/// commands (each at most 100 elements).
fn fill(c: &mut Resp, kind: &str, k: &str, n: usize) {
    for start in (0..n).step_by(100) {
        let end = (start + 100).min(n);
        let mut args: Vec<String> = match kind {
            "hash" => vec!["HSET".into(), k.into()],
            "list" => vec!["RPUSH".into(), k.into()],
            "set" => vec!["SADD".into(), k.into()],
            _ => vec!["ZADD".into(), k.into()],
        };
        for i in start..end {
            match kind {
                "hash" => args.extend([format!("field:{i:06}"), format!("value-{i}")]),
                "list" | "set" => args.push(format!("member:{i:06}")),
                _ => args.extend([format!("{}", i as f64 / 2.0), format!("member:{i:06}")]),
            }
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let r = c.call(&refs);
        assert!(r.starts_with(':'), "{kind} fill: {r}");
    }
}

/// The whole content of a collection, comparable across keys.
fn content(c: &mut Resp, kind: &str, k: &str) -> Vec<String> {
    match kind {
        "hash" => sorted(elements(&c.call(&["HGETALL", k]))),
        "list" => elements(&c.call(&["LRANGE", k, "0", "-1"])),
        "set" => sorted(elements(&c.call(&["SMEMBERS", k]))),
        _ => elements(&c.call(&["ZRANGE", k, "0", "-1", "WITHSCORES"])),
    }
}

#[test]
fn randomkey_empty_expired_and_spread() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    if server.is_redis {
        // Redis has 16 databases: an empty one of this test's own.
        assert_eq!(c.call(&["SELECT", "9"]), OK);
        assert_eq!(c.call(&["FLUSHDB"]), OK);
    } else if !server.is_own() {
        eprintln!("note: an external amalgam is shared; RANDOMKEY needs an empty keyspace");
        return;
    }
    assert_eq!(c.call(&["RANDOMKEY"]), NULL2, "an empty keyspace");
    assert_eq!(c.call(&["RANDOMKEY", "x"]), error("ERR wrong number of arguments for 'randomkey' command"));
    // An expired key is never drawn (Redis deletes it and draws again).
    assert_eq!(c.call(&["SET", "gone", "v", "PX", "30"]), OK);
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert_eq!(c.call(&["RANDOMKEY"]), NULL2, "only an expired key");
    // Twenty keys of every type: each draw is one of them, and the draws
    // spread over them.
    let mut keys = HashSet::new();
    for i in 0..20 {
        let k = format!("rk{i}");
        let r = match i % 5 {
            0 => c.call(&["SET", &k, "v"]),
            1 => c.call(&["HSET", &k, "f", "v"]),
            2 => c.call(&["RPUSH", &k, "a"]),
            3 => c.call(&["SADD", &k, "a"]),
            _ => c.call(&["ZADD", &k, "1", "a"]),
        };
        assert!(r == OK || r == int(1), "{r}");
        keys.insert(k);
    }
    let mut seen = HashSet::new();
    for _ in 0..500 {
        let r = c.call(&["RANDOMKEY"]);
        let k = r.split("\r\n").nth(1).unwrap_or("").to_string();
        assert!(keys.contains(&k), "RANDOMKEY gave {r:?}");
        seen.insert(k);
    }
    assert!(seen.len() >= 15, "500 draws reached only {} of 20 keys", seen.len());
    if server.is_redis {
        assert_eq!(c.call(&["FLUSHDB"]), OK);
    }
}

#[test]
fn copy_options_and_errors() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (a, b, n) = (key("cp_a"), key("cp_b"), key("cp_none"));
    assert_eq!(c.call(&["SET", &a, "1"]), OK);
    assert_eq!(c.call(&["COPY", &a]), error("ERR wrong number of arguments for 'copy' command"));
    assert_eq!(c.call(&["COPY", &a, &a]), error("ERR source and destination objects are the same"));
    assert_eq!(c.call(&["COPY", &a, &a, "DB", "0"]), error("ERR source and destination objects are the same"));
    assert_eq!(c.call(&["COPY", &a, &b, "DB", "16"]), error("ERR DB index is out of range"));
    assert_eq!(c.call(&["COPY", &a, &b, "DB", "x"]), error("ERR value is not an integer or out of range"));
    assert_eq!(
        c.call(&["COPY", &a, &b, "DB", "99999999999"]),
        error("ERR value is out of range, value must between -2147483648 and 2147483647")
    );
    assert_eq!(c.call(&["COPY", &a, &b, "DB"]), error("ERR syntax error"));
    assert_eq!(c.call(&["COPY", &a, &b, "NOSUCH"]), error("ERR syntax error"));
    // Options are checked before the keys: a missing source still gets
    // the error.
    assert_eq!(c.call(&["COPY", &n, &b, "DB", "x"]), error("ERR value is not an integer or out of range"));
    assert_eq!(c.call(&["COPY", &n, &b]), int(0), "no source");
    assert_eq!(c.call(&["EXISTS", &b]), int(0));
    // Database 1 (16 databases, as Redis): the copy lands there, not here.
    assert_eq!(c.call(&["COPY", &a, &b, "DB", "1"]), int(1));
    assert_eq!(c.call(&["EXISTS", &b]), int(0), "in database 1, not here");
    assert_eq!(c.call(&["SELECT", "1"]), OK);
    assert_eq!(c.call(&["GET", &b]), bulk("1"), "the copy in database 1");
    assert_eq!(c.call(&["DEL", &b]), int(1));
    assert_eq!(c.call(&["SELECT", "0"]), OK);
    assert_eq!(c.call(&["COPY", &a, &b, "db", "0"]), int(1));
    assert_eq!(c.call(&["GET", &b]), bulk("1"));
    // An existing destination: 0 and untouched without REPLACE.
    assert_eq!(c.call(&["SET", &a, "2"]), OK);
    assert_eq!(c.call(&["COPY", &a, &b]), int(0));
    assert_eq!(c.call(&["GET", &b]), bulk("1"));
    assert_eq!(c.call(&["COPY", &a, &b, "REPLACE"]), int(1));
    assert_eq!(c.call(&["GET", &b]), bulk("2"));
    // The copy is its own: a write to it leaves the source.
    assert_eq!(c.call(&["APPEND", &b, "x"]), int(2));
    assert_eq!(c.call(&["GET", &a]), bulk("2"));
    // REPLACE over another type, and a collection over a string.
    let h = key("cp_h");
    assert_eq!(c.call(&["HSET", &h, "f", "v"]), int(1));
    assert_eq!(c.call(&["COPY", &a, &h]), int(0));
    assert_eq!(c.call(&["TYPE", &h]), "+hash\r\n");
    assert_eq!(c.call(&["COPY", &a, &h, "REPLACE"]), int(1));
    assert_eq!(c.call(&["TYPE", &h]), "+string\r\n");
    assert_eq!(c.call(&["SADD", &n, "m"]), int(1));
    assert_eq!(c.call(&["COPY", &n, &a, "REPLACE", "DB", "0"]), int(1));
    assert_eq!(c.call(&["TYPE", &a]), "+set\r\n");
    assert_eq!(c.call(&["SMEMBERS", &a]), "*1\r\n$1\r\nm\r\n");
}

#[test]
fn copy_carries_the_ttl() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (a, b, h, h2) = (key("ttl_a"), key("ttl_b"), key("ttl_h"), key("ttl_h2"));
    assert_eq!(c.call(&["SET", &a, "v", "PX", "100000"]), OK);
    assert_eq!(c.call(&["COPY", &a, &b]), int(1));
    let pttl = as_int(&c.call(&["PTTL", &b]));
    assert!((95_000..=100_000).contains(&pttl), "PTTL {pttl}");
    assert_eq!(c.call(&["PEXPIRETIME", &b]), c.call(&["PEXPIRETIME", &a]), "the same deadline");
    // No TTL on the source: none on the copy, even over a key that had one.
    assert_eq!(c.call(&["HSET", &h, "f", "v"]), int(1));
    assert_eq!(c.call(&["COPY", &h, &b, "REPLACE"]), int(1));
    assert_eq!(c.call(&["TTL", &b]), int(-1));
    assert_eq!(c.call(&["PEXPIRE", &h, "300"]), int(1));
    assert_eq!(c.call(&["COPY", &h, &h2]), int(1));
    assert!(as_int(&c.call(&["PTTL", &h2])) > 0);
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(c.call(&["EXISTS", &h, &h2]), int(0), "both expire");
    assert_eq!(c.call(&["COPY", &h, &h2]), int(0), "an expired source is missing");
}

#[test]
fn copy_collections_small_and_large() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    // Sizes on both sides of Redis's default thresholds (hash 512 entries,
    // set 128 strings, zset 128, list 8 KB a node).
    for (kind, small, large) in [("hash", 3, 600), ("list", 3, 2000), ("set", 3, 600), ("zset", 3, 300)] {
        for n in [small, large] {
            let (src, dst) = (key(&format!("{kind}{n}_src")), key(&format!("{kind}{n}_dst")));
            fill(&mut c, kind, &src, n);
            assert_eq!(c.call(&["PEXPIRE", &src, "100000"]), int(1));
            assert_eq!(c.call(&["COPY", &src, &dst]), int(1), "{kind} of {n}");
            let want = content(&mut c, kind, &src);
            assert_eq!(content(&mut c, kind, &dst), want, "{kind} of {n}");
            assert_eq!(c.call(&["TYPE", &dst]), format!("+{kind}\r\n"));
            assert_eq!(
                c.call(&["OBJECT", "ENCODING", &dst]),
                c.call(&["OBJECT", "ENCODING", &src]),
                "{kind} of {n}: the copy's encoding"
            );
            assert!(as_int(&c.call(&["PTTL", &dst])) > 90_000, "{kind} of {n}: the TTL");
            // A deep copy: changing the copy leaves the source as it was.
            let r = match kind {
                "hash" => c.call(&["HSET", &dst, "field:000000", "changed", "new", "x"]),
                "list" => c.call(&["LSET", &dst, "0", "changed"]),
                "set" => c.call(&["SREM", &dst, "member:000000"]),
                _ => c.call(&["ZADD", &dst, "-1", "member:000000"]),
            };
            assert!(r == OK || r.starts_with(':'), "{kind}: {r}");
            assert_ne!(content(&mut c, kind, &dst), want, "{kind} of {n}: the write changed the copy");
            assert_eq!(content(&mut c, kind, &src), want, "{kind} of {n}: the source is unchanged");
            assert_eq!(c.call(&["DEL", &src]), int(1));
            assert!(!content(&mut c, kind, &dst).is_empty(), "{kind} of {n}: the copy outlives its source");
        }
    }
}

#[test]
fn memory_usage_of_every_type() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (s, n) = (key("mu_s"), key("mu_none"));
    assert_eq!(c.call(&["SET", &s, "value"]), OK);
    assert_eq!(c.call(&["MEMORY", "USAGE", &n]), NULL2);
    assert_eq!(c.call(&["MEMORY", "USAGE"]), error("ERR wrong number of arguments for 'memory|usage' command"));
    assert_eq!(c.call(&["MEMORY", "USAGE", &s, "SAMPLES"]), error("ERR syntax error"));
    assert_eq!(c.call(&["MEMORY", "USAGE", &s, "SAMPLES", "x"]), error("ERR value is not an integer or out of range"));
    assert_eq!(c.call(&["MEMORY", "USAGE", &s, "SAMPLES", "-1"]), error("ERR syntax error"));
    assert_eq!(c.call(&["MEMORY", "USAGE", &s, "NOSUCH", "1"]), error("ERR syntax error"));
    // Options first: a missing key with a bad option is an error.
    assert_eq!(c.call(&["MEMORY", "USAGE", &n, "SAMPLES", "-1"]), error("ERR syntax error"));
    let string = as_int(&c.call(&["MEMORY", "USAGE", &s]));
    assert_eq!(as_int(&c.call(&["MEMORY", "USAGE", &s, "SAMPLES", "0"])), string);
    if !server.is_redis {
        // Amalgam: the item's block, key and value in it; the header and
        // the size class add less than 64 bytes.
        let payload = (s.len() + "value".len()) as i64;
        assert!(string >= payload && string < payload + 64, "{string} for {payload} bytes of key and value");
    }
    // Every type, small and large: a number, and a large collection
    // reports more than a small one of the same kind.
    for (kind, small, large) in [("hash", 2, 2000), ("list", 2, 5000), ("set", 2, 2000), ("zset", 2, 1000)] {
        let (k1, k2) = (key(&format!("mu_{kind}_s")), key(&format!("mu_{kind}_l")));
        fill(&mut c, kind, &k1, small);
        fill(&mut c, kind, &k2, large);
        let a = as_int(&c.call(&["MEMORY", "USAGE", &k1]));
        let b = as_int(&c.call(&["MEMORY", "USAGE", &k2, "SAMPLES", "0"]));
        assert!(a > 0 && b > a, "{kind}: {a} for {small} elements, {b} for {large}");
        // At least the elements' own bytes (measured, not sampled).
        assert!(b >= (large * "member:000000".len()) as i64, "{kind}: {b} for {large} elements");
        assert!(b < (large * 200) as i64, "{kind}: {b} for {large} elements is more than 200 bytes each");
    }
}

#[test]
fn memory_other_subcommands() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let help = c.call(&["MEMORY", "HELP"]);
    assert!(help.starts_with("*14\r\n+MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n"), "{help}");
    assert!(help.contains("+USAGE <key> [SAMPLES <count>]\r\n"), "{help}");
    assert_eq!(c.call(&["MEMORY", "PURGE"]), OK);
    // Redis's report depends on its memory's history ("Hi Sam, ..." when
    // nothing stands out, "Sam, I detected a few issues ..." after a peak,
    // as a shared server has after the hostile tests' slow readers).
    let doctor = c.call(&["MEMORY", "DOCTOR"]);
    assert!(doctor.starts_with('$') && (doctor.contains("Hi Sam, ") || doctor.contains("Sam, I detected")), "{doctor}");
    let stats = c.call(&["MEMORY", "STATS"]);
    for f in ["total.allocated", "db.0", "overhead.hashtable.main", "keys.count", "dataset.bytes"] {
        assert!(stats.contains(&format!("\r\n{f}\r\n")), "MEMORY STATS lacks {f}: {stats}");
    }
    assert!(c.call(&["MEMORY", "MALLOC-STATS"]).starts_with('$'));
    assert_eq!(c.call(&["MEMORY", "NOSUCH"]), error("ERR unknown subcommand 'NOSUCH'. Try MEMORY HELP."));
    assert_eq!(c.call(&["MEMORY", "DOCTOR", "x"]), error("ERR wrong number of arguments for 'memory|doctor' command"));
    assert_eq!(c.call(&["MEMORY"]), error("ERR wrong number of arguments for 'memory' command"));
}

#[test]
fn command_rows_of_the_keyspace_commands() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    // Read from Redis 7.0.15's COMMAND INFO.
    let want = "*3\r\n*10\r\n$4\r\ncopy\r\n:-3\r\n*2\r\n+write\r\n+denyoom\r\n:1\r\n:2\r\n:1\r\n*3\r\n+@keyspace\r\n+@write\r\n+@slow\r\n*0\r\n*2\r\n*6\r\n$5\r\nflags\r\n*2\r\n+RO\r\n+access\r\n$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n:1\r\n$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n*6\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n*6\r\n$5\r\nflags\r\n*2\r\n+OW\r\n+update\r\n$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n:2\r\n$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n*6\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n*0\r\n*10\r\n$9\r\nrandomkey\r\n:1\r\n*1\r\n+readonly\r\n:0\r\n:0\r\n:0\r\n*3\r\n+@keyspace\r\n+@read\r\n+@slow\r\n*2\r\n$25\r\nrequest_policy:all_shards\r\n$23\r\nnondeterministic_output\r\n*0\r\n*0\r\n*10\r\n$12\r\nmemory|usage\r\n:-3\r\n*1\r\n+readonly\r\n:2\r\n:2\r\n:1\r\n*2\r\n+@read\r\n+@slow\r\n*0\r\n*1\r\n*6\r\n$5\r\nflags\r\n*1\r\n+RO\r\n$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n:2\r\n$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n*6\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n*0\r\n";
    assert_eq!(c.call(&["COMMAND", "INFO", "copy", "randomkey", "memory|usage"]), want);
    assert_eq!(c.call(&["COMMAND", "GETKEYS", "COPY", "a", "b", "DB", "0", "REPLACE"]), "*2\r\n$1\r\na\r\n$1\r\nb\r\n");
    // The collections' deprecated commands say so in COMMAND DOCS.
    for (name, since, by) in [
        ("hmset", "4.0.0", "`HSET` with multiple field-value pairs"),
        ("brpoplpush", "6.2.0", "`BLMOVE` with the `RIGHT` and `LEFT` arguments"),
        ("zrevrangebyscore", "6.2.0", "`ZRANGE` with the `REV` and `BYSCORE` arguments"),
    ] {
        let docs = c.call(&["COMMAND", "DOCS", name]);
        let want = format!(
            "$9\r\ndoc_flags\r\n*1\r\n+deprecated\r\n$16\r\ndeprecated_since\r\n$5\r\n{since}\r\n$11\r\nreplaced_by\r\n{}",
            bulk(by)
        );
        assert!(docs.contains(&want), "{name}: {docs}");
    }
    let docs = c.call(&["COMMAND", "DOCS", "zrange"]);
    assert!(docs.starts_with("*2\r\n$6\r\nzrange\r\n") && !docs.contains("deprecated"), "{docs}");
}

/// redis-cli's `--memkeys` (SCAN, TYPE, MEMORY USAGE per key) and
/// `--bigkeys` (SCAN, TYPE, then STRLEN/HLEN/LLEN/SCARD/ZCARD) over a
/// keyspace of every type: both finish and name the biggest hash.
#[test]
fn redis_cli_memkeys_and_bigkeys() {
    let Some(server) = resp_server() else { return };
    let Some(cli) = std::env::var_os("PATH").and_then(|p| {
        p.to_str()?.split(':').map(|d| format!("{d}/redis-cli")).find(|p| std::path::Path::new(p).is_file())
    }) else {
        eprintln!("note: redis-cli not installed (Debian: redis-tools); skipping");
        return;
    };
    let mut c = Resp::new(&server);
    // An empty keyspace of this test's own: database 10 on Redis (the
    // RANDOMKEY test has 9).
    let db = if server.is_redis {
        assert_eq!(c.call(&["SELECT", "10"]), OK);
        assert_eq!(c.call(&["FLUSHDB"]), OK);
        "10"
    } else if server.is_own() {
        "0"
    } else {
        eprintln!("note: an external amalgam is shared; the biggest keys would be anyone's");
        return;
    };
    for i in 0..10 {
        assert_eq!(c.call(&["SET", &format!("s{i}"), "v"]), OK);
        assert_eq!(c.call(&["RPUSH", &format!("l{i}"), "a", "b"]), int(2));
        assert_eq!(c.call(&["SADD", &format!("st{i}"), "m"]), int(1));
        assert_eq!(c.call(&["ZADD", &format!("z{i}"), "1", "m"]), int(1));
        assert_eq!(c.call(&["HSET", &format!("h{i}"), "f", "v"]), int(1));
    }
    fill(&mut c, "hash", "bighash", 700);
    let (host, port) = (server.resp_addr().ip().to_string(), server.resp_addr().port().to_string());
    for (mode, want) in
        [("--memkeys", "Biggest   hash found '\"bighash\"' has "), ("--bigkeys", "'\"bighash\"' has 700 fields")]
    {
        let out = std::process::Command::new(&cli)
            .args(["-h", &host, "-p", &port, "-n", db, mode])
            .output()
            .unwrap_or_else(|e| panic!("{cli}: {e}"));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{mode}: {text}{}", String::from_utf8_lossy(&out.stderr));
        assert!(text.contains(want), "{mode}: {text}");
        assert!(text.contains("10 zsets with ") && text.contains("10 lists with "), "{mode}: {text}");
    }
    if server.is_redis {
        assert_eq!(c.call(&["FLUSHDB"]), OK);
    }
}

/// COPY racing writers of its source: every copy is one version the
/// source held, never a mix. The source is a large hash whose every field
/// one HSET sets to the same version number; each copy must show a single
/// version across all its fields.
#[test]
fn copy_racing_writes_sees_one_version() {
    let Some(server) = resp_server() else { return };
    let (src, dst) = (key("race_src"), key("race_dst"));
    let fields = 600;
    let write = |c: &mut Resp, v: usize| {
        let mut args: Vec<String> = vec!["HSET".into(), src.clone()];
        for f in 0..fields {
            args.extend([format!("f{f}"), format!("v{v}")]);
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let r = c.call(&refs);
        assert!(r.starts_with(':'), "{r}");
    };
    let mut c = Resp::new(&server);
    write(&mut c, 0);
    let rounds = 200;
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut w = Resp::new(&server);
            for v in 1..=rounds {
                write(&mut w, v);
            }
        });
        for _ in 0..rounds {
            assert_eq!(c.call(&["COPY", &src, &dst, "REPLACE"]), int(1));
            let all = elements(&c.call(&["HGETALL", &dst]));
            assert_eq!(all.len(), 2 * fields);
            let versions: HashSet<&String> = all.iter().skip(1).step_by(2).collect();
            assert_eq!(versions.len(), 1, "a copy mixing versions: {versions:?}");
        }
    });
}

/// A list or sorted set copied to a key a client is blocked on serves
/// that client, as a push would (Redis's dbAdd signals the key ready).
#[test]
fn copy_serves_a_blocked_client() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    for (fill_cmd, pop) in [(["RPUSH", "a", "b"], "BLPOP"), (["ZADD", "1", "a"], "BZPOPMIN")] {
        let (src, dst) = (key("bsrc"), key("bdst"));
        let mut args = vec![fill_cmd[0], &src];
        args.extend(&fill_cmd[1..]);
        assert!(c.call(&args).starts_with(':'));
        let mut blocked = Resp::new(&server);
        let before = blocked_clients(&mut c);
        blocked.send(&[pop, &dst, "10"]);
        // Bounded: 5 s of 10 ms polls until the server reports it blocked.
        for _ in 0..500 {
            if blocked_clients(&mut c) > before {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(c.call(&["COPY", &src, &dst]), int(1));
        let got = blocked.reply();
        let want = if pop == "BLPOP" {
            format!("*2\r\n{}{}", bulk(&dst), bulk("a"))
        } else {
            format!("*3\r\n{}{}{}", bulk(&dst), bulk("a"), bulk("1"))
        };
        assert_eq!(got, want, "{pop} woken by COPY");
        if pop == "BLPOP" {
            assert_eq!(c.call(&["LRANGE", &dst, "0", "-1"]), "*1\r\n$1\r\nb\r\n");
        } else {
            assert_eq!(c.call(&["EXISTS", &dst]), int(0), "popped empty");
        }
    }
}

/// INFO clients' blocked_clients.
fn blocked_clients(c: &mut Resp) -> u64 {
    let info = c.call(&["INFO", "clients"]);
    info.lines().find_map(|l| l.strip_prefix("blocked_clients:")).and_then(|v| v.trim().parse().ok()).unwrap_or(0)
}
