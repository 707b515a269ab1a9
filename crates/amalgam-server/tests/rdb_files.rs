//! Redis's `dump.rdb` both ways (issue 37 §3): an Amalgam started with
//! `--dir` on a folder where redis-server 7.0 SAVEd serves the same keys
//! (types, values, TTLs, databases), and what Amalgam's SAVE / BGSAVE
//! write with `dbfilename` passes `redis-check-rdb` and loads in a
//! redis-server with the same data. Compared through views that do not
//! depend on encodings (TYPE, GET, LRANGE, sorted SMEMBERS and HGETALL,
//! ZRANGE WITHSCORES, XRANGE and XPENDING, PTTL within a tolerance,
//! DBSIZE per database). Skipped with a note when redis-server or
//! redis-check-rdb is not installed (scripts/test.sh installs both, with
//! redis-server and redis-tools).

mod common;
use amalgam_persist::rdb::file::FileWriter;
use common::own::{redis_server, Own};
use common::resp::*;
use common::*;
use std::collections::BTreeMap;
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// The databases filled.
const DBS: [&str; 3] = ["0", "1", "5"];
/// How far two PTTLs of one key may differ (the time between two reads,
/// a save and a start), in ms.
const PTTL_TOLERANCE_MS: i64 = 120_000;

fn installed(tool: &str) -> bool {
    if Command::new(tool).arg("--version").output().is_err() {
        eprintln!("note: {tool} is not on PATH; skipping an RDB file test");
        return false;
    }
    true
}

/// A redis-server of this test's own on a free port, its files in `dir`,
/// once it has loaded `dbfilename`; killed on drop.
fn start_redis(dir: &Path, dbfilename: &str) -> Own {
    let dir = dir.to_str().expect("a UTF-8 path");
    redis_server(&["--dir", dir, "--dbfilename", dbfilename]).expect("redis-server")
}

fn ok(c: &mut Resp, args: &[&str]) {
    let r = c.call(args);
    assert!(!r.starts_with('-'), "{args:?}: {r}");
}

/// Every type Amalgam serves, small and large forms, integers, an
/// LZF-compressible string, expiries in ms, in several databases.
fn fill(c: &mut Resp) {
    let big = "ab".repeat(20_000);
    for (i, db) in DBS.iter().enumerate() {
        ok(c, &["SELECT", db]);
        ok(c, &["SET", "str", &format!("hello {db}")]);
        ok(c, &["SET", "int", "123456789"]);
        ok(c, &["SET", "neg", "-42"]);
        ok(c, &["SET", "big", &big]);
        ok(c, &["SET", "ttl", "soon", "PX", "90000000"]);
        ok(c, &["RPUSH", "list", "a", "b", "3", "c"]);
        let many: Vec<String> = (0..600).map(|n| format!("element-{n}-{}", "x".repeat(n % 70))).collect();
        let mut args = vec!["RPUSH", "biglist"];
        args.extend(many.iter().map(String::as_str));
        ok(c, &args);
        ok(c, &["SADD", "intset", "1", "2", "-3", "70000", "5000000000"]);
        ok(c, &["SADD", "set", "x", "y", "z"]);
        let members: Vec<String> = (0..300).map(|n| format!("m{n}")).collect();
        let mut args = vec!["SADD", "bigset"];
        args.extend(members.iter().map(String::as_str));
        ok(c, &args);
        ok(c, &["HSET", "hash", "f", "v", "n", "17"]);
        let mut args = vec!["HSET", "bighash"];
        for m in &members {
            args.push(m);
            args.push("value-of-a-field-long-enough-to-matter");
        }
        ok(c, &args);
        ok(c, &["ZADD", "zset", "1.5", "a", "-2", "b", "inf", "c"]);
        let scores: Vec<String> = (0..300).map(|n| format!("{}", n as f64 / 7.0)).collect();
        let mut args = vec!["ZADD", "bigzset"];
        for (s, m) in scores.iter().zip(&members) {
            args.push(s);
            args.push(m);
        }
        ok(c, &args);
        ok(c, &["XADD", "stream", "1-1", "f", "v"]);
        ok(c, &["XADD", "stream", "2-0", "g", "w", "h", "z"]);
        ok(c, &["XGROUP", "CREATE", "stream", "grp", "0"]);
        ok(c, &["XREADGROUP", "GROUP", "grp", "alice", "COUNT", "1", "STREAMS", "stream", ">"]);
        ok(c, &["PEXPIRE", "hash", &format!("{}", 50_000_000 + i * 1000)]);
    }
    ok(c, &["SELECT", "0"]);
}

/// A key's value, the same on any server that holds the same data.
fn view(c: &mut Resp, key: &str) -> String {
    let ty = call(c, &["TYPE", key]);
    let ty = match &ty {
        V::Simple(s) => s.clone(),
        v => panic!("TYPE {key}: {v:?}"),
    };
    let sorted = |v: V| {
        let mut a: Vec<String> = v.array().iter().map(|e| e.bulk().to_string()).collect();
        a.sort();
        a
    };
    let body = match ty.as_str() {
        "string" => format!("{:?}", call(c, &["GET", key])),
        "list" => format!("{:?}", call(c, &["LRANGE", key, "0", "-1"])),
        "set" => format!("{:?}", sorted(call(c, &["SMEMBERS", key]))),
        "hash" => {
            let flat = call(c, &["HGETALL", key]);
            let mut pairs: Vec<(String, String)> =
                flat.array().chunks(2).map(|p| (p[0].bulk().to_string(), p[1].bulk().to_string())).collect();
            pairs.sort();
            format!("{pairs:?}")
        }
        "zset" => format!("{:?}", call(c, &["ZRANGE", key, "0", "-1", "WITHSCORES"])),
        "stream" => format!("{:?} {:?}", call(c, &["XRANGE", key, "-", "+"]), call(c, &["XPENDING", key, "grp"])),
        t => panic!("{key}: type {t} not compared"),
    };
    format!("{ty} {body}")
}

/// Every database's keys: name → (view, PTTL).
fn snapshot(c: &mut Resp) -> BTreeMap<(String, String), (String, i64)> {
    let mut all = BTreeMap::new();
    for db in DBS {
        ok(c, &["SELECT", db]);
        let keys = call(c, &["KEYS", "*"]);
        let n = call(c, &["DBSIZE"]).int();
        assert_eq!(n as usize, keys.array().len(), "db {db}");
        for k in keys.array() {
            let k = k.bulk().to_string();
            let v = view(c, &k);
            let pttl = call(c, &["PTTL", &k]).int();
            all.insert((db.to_string(), k), (v, pttl));
        }
    }
    ok(c, &["SELECT", "0"]);
    all
}

fn assert_same(want: &BTreeMap<(String, String), (String, i64)>, got: &BTreeMap<(String, String), (String, i64)>) {
    assert_eq!(want.keys().collect::<Vec<_>>(), got.keys().collect::<Vec<_>>(), "the same keys in each database");
    for (k, (wv, wt)) in want {
        let (gv, gt) = &got[k];
        assert_eq!(wv, gv, "{k:?}");
        if *wt < 0 {
            assert_eq!(wt, gt, "{k:?}: no TTL");
        } else {
            assert!(*gt > 0 && (wt - gt).abs() <= PTTL_TOLERANCE_MS, "{k:?}: PTTL {wt} then {gt}");
        }
    }
}

#[test]
fn amalgam_serves_a_dump_rdb_redis_saved() {
    if !installed("redis-server") {
        return;
    }
    let dir = TempDir::new("rdb-from-redis");
    let want = {
        let redis = start_redis(&dir.0, "dump.rdb");
        let mut r = Resp::from_stream(TcpStream::connect(redis.addr()).unwrap());
        fill(&mut r);
        assert_eq!(r.call(&["SAVE"]), "+OK\r\n");
        snapshot(&mut r)
    };
    assert!(dir.0.join("dump.rdb").exists());
    assert_eq!(want.len(), DBS.len() * 15);
    let log = dir.0.join("amalgam.log");
    let dir_arg = dir.0.to_string_lossy().into_owned();
    let Some(server) = resp_private_logged(&["--dir", &dir_arg], &log) else { return };
    let mut a = Resp::new(&server);
    assert_same(&want, &snapshot(&mut a));
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(text.contains(&format!("{} keys in", want.len())), "one line with the key count: {text}");
    // The keys are in Amalgam's own log now: a restart recovers them and
    // does not read the RDB file again (removed here to prove it).
    drop(a);
    drop(server);
    std::fs::remove_file(dir.0.join("dump.rdb")).unwrap();
    let server = resp_private(&["--dir", &dir_arg]).unwrap();
    let mut a = Resp::new(&server);
    assert_same(&want, &snapshot(&mut a));
}

/// resp_private with the server's stderr appended to `log`.
fn resp_private_logged(args: &[&str], log: &Path) -> Option<Server> {
    if !own_server() {
        return None;
    }
    Some(
        Server::spawn_with(args, None, Some(log))
            .unwrap_or_else(|e| panic!("{e}: {}", std::fs::read_to_string(log).unwrap_or_default())),
    )
}

/// False, with a note, when the environment names an external server
/// (these tests start their own with files of their own).
fn own_server() -> bool {
    if external_resp_addr().is_some() || external_addr().is_some() || binary().contains("memcached") {
        eprintln!("note: an external server or memcached is named; skipping an RDB file test");
        return false;
    }
    true
}

/// Waits for BGSAVE's RDB file: INFO's rdb_bgsave_in_progress back to 0.
fn wait_bgsave(c: &mut Resp) {
    eventually("BGSAVE to finish", Duration::from_secs(60), || {
        c.info_field("persistence", "rdb_bgsave_in_progress").as_deref() == Some("0")
    });
}

#[test]
fn redis_loads_the_rdb_file_amalgam_saves() {
    if !installed("redis-server") || !installed("redis-check-rdb") {
        return;
    }
    let dir = TempDir::new("rdb-to-redis");
    let dir_arg = dir.0.to_string_lossy().into_owned();
    let Some(server) = resp_private(&["--dir", &dir_arg, "--dbfilename", "out.rdb"]) else { return };
    let mut a = Resp::new(&server);
    fill(&mut a);
    ok(&mut a, &["FUNCTION", "LOAD", "#!lua name=lib1\nredis.register_function('f1', function() return 7 end)"]);
    let want = snapshot(&mut a);
    for how in ["SAVE", "BGSAVE"] {
        let _ = std::fs::remove_file(dir.0.join("out.rdb"));
        let r = a.call(&[how]);
        assert!(!r.starts_with('-'), "{how}: {r}");
        wait_bgsave(&mut a);
        let file = dir.0.join("out.rdb");
        assert!(file.exists(), "{how} wrote out.rdb");
        let check = Command::new("redis-check-rdb").arg(&file).output().unwrap();
        let text = String::from_utf8_lossy(&check.stdout);
        assert!(check.status.success(), "redis-check-rdb: {text}");
        assert!(text.contains(&format!("{} keys read", want.len())), "{text}");
        let redis = start_redis(&dir.0, "out.rdb");
        let mut r = Resp::from_stream(TcpStream::connect(redis.addr()).unwrap());
        assert_same(&want, &snapshot(&mut r));
        assert_eq!(call(&mut r, &["FCALL", "f1", "0"]).int(), 7, "{how}: the library came along");
        drop(redis);
    }
}

#[test]
fn dbfilename_is_redis_s_setting() {
    let dir = TempDir::new("rdb-config");
    let dir_arg = dir.0.to_string_lossy().into_owned();
    let Some(server) = resp_private(&["--dir", &dir_arg]) else { return };
    let mut a = Resp::new(&server);
    assert_eq!(a.config_get("dbfilename"), "dump.rdb");
    ok(&mut a, &["SET", "k", "v"]);
    // Not given: SAVE writes Amalgam's snapshot only.
    ok(&mut a, &["SAVE"]);
    assert!(!dir.0.join("dump.rdb").exists());
    assert!(a.call(&["CONFIG", "SET", "dbfilename", "a/b.rdb"]).starts_with("-ERR"));
    ok(&mut a, &["CONFIG", "SET", "dbfilename", "set.rdb"]);
    assert_eq!(a.config_get("dbfilename"), "set.rdb");
    ok(&mut a, &["SAVE"]);
    assert!(dir.0.join("set.rdb").exists());
    assert!(!dir.0.join("dump.rdb").exists());
    // SHUTDOWN SAVE writes it too.
    std::fs::remove_file(dir.0.join("set.rdb")).unwrap();
    a.send(&["SHUTDOWN", "SAVE"]);
    assert!(a.closed(), "SHUTDOWN closes the connection");
    eventually("SHUTDOWN SAVE's RDB file", Duration::from_secs(20), || dir.0.join("set.rdb").exists());
    // The config file's form.
    let dir2 = TempDir::new("rdb-config-file");
    let conf = dir2.file("amalgam.conf", &format!("dir {}\ndbfilename fromconf.rdb\n", dir2.0.display()));
    let server = resp_private(&["--config", &conf.to_string_lossy()]).unwrap();
    let mut a = Resp::new(&server);
    assert_eq!(a.config_get("dbfilename"), "fromconf.rdb");
    ok(&mut a, &["SET", "k", "v"]);
    ok(&mut a, &["SAVE"]);
    assert!(dir2.0.join("fromconf.rdb").exists());
}

/// A file with a key Amalgam cannot load (an empty list, which Redis
/// refuses too) between two good ones.
fn write_unloadable(path: &Path) {
    let mut w = FileWriter::new(Vec::new(), []).unwrap();
    w.select_db(0, 3, 0).unwrap();
    w.key(b"good1", None, &amalgam_persist::rdb::Writer::string(b"one")).unwrap();
    // An empty LIST: type 1, count 0, then a footer (dropped by the writer).
    w.key(b"badkey", None, &[1, 0, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0]).unwrap();
    w.key(b"good2", None, &amalgam_persist::rdb::Writer::string(b"two")).unwrap();
    std::fs::write(path, w.finish().unwrap()).unwrap();
}

#[test]
fn a_key_that_cannot_load_stops_the_start_or_is_skipped() {
    if !own_server() {
        return;
    }
    let dir = TempDir::new("rdb-unloadable");
    write_unloadable(&dir.0.join("dump.rdb"));
    let dir_arg = dir.0.to_string_lossy().into_owned();
    let log = dir.0.join("stop.log");
    let e = Server::spawn_with(&["--dir", &dir_arg], None, Some(&log)).map(|_| ()).unwrap_err();
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("'badkey'") && text.contains("list"), "names the key and its type: {e}: {text}");
    // Skipped with a log line, the rest served.
    let log = dir.0.join("skip.log");
    let server = resp_private_logged(&["--dir", &dir_arg, "--rdb-unloadable", "skip"], &log).unwrap();
    let mut a = Resp::new(&server);
    assert_eq!(a.call(&["GET", "good1"]), bulk("one"));
    assert_eq!(a.call(&["GET", "good2"]), bulk("two"));
    assert_eq!(a.call(&["EXISTS", "badkey"]), int(0));
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("'badkey'") && text.contains("skipped"), "{text}");
}

#[test]
fn a_store_smaller_than_the_file_is_a_clear_error() {
    if !own_server() {
        return;
    }
    let dir = TempDir::new("rdb-too-big");
    let mut w = FileWriter::new(Vec::new(), []).unwrap();
    let value = vec![b'v'; 100_000];
    let payload = amalgam_persist::rdb::Writer::string(&value);
    // 40 MB of values against a store of -m 8.
    for n in 0..400 {
        w.key(format!("k{n}").as_bytes(), None, &payload).unwrap();
    }
    std::fs::write(dir.0.join("dump.rdb"), w.finish().unwrap()).unwrap();
    let dir_arg = dir.0.to_string_lossy().into_owned();
    let log = dir.0.join("full.log");
    assert!(Server::spawn_with(&["--dir", &dir_arg, "-m", "8", "-M"], None, Some(&log)).is_err());
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("the store is full") && text.contains("larger -m"), "{text}");
}
