//! What a server holds, read alike from Amalgam and redis-server, and a
//! write load of every type: the replication interop tests' (issue 37)
//! way to say "the replica holds what the primary holds".

use super::resp::*;
use std::collections::BTreeMap;
use std::time::Duration;

/// How long a sync or the stream may take to converge.
pub const CONVERGE: Duration = Duration::from_secs(30);
/// The databases the test writes (Redis's replication stream says SELECT).
pub const DBS: [&str; 2] = ["0", "2"];

fn strings(v: &V) -> Vec<String> {
    v.array().iter().map(|x| x.bulk().to_string()).collect()
}

/// Everything a database holds, read through commands both servers
/// answer alike: per key its type, its value in a form that does not
/// depend on the server's internal order, and its absolute expiry.
pub fn contents(c: &mut Resp, db: &str) -> BTreeMap<String, String> {
    assert_eq!(c.call(&["SELECT", db]), "+OK\r\n");
    let mut keys = Vec::new();
    let mut cursor = "0".to_string();
    // Bounded: SCAN ends, each pass returns a cursor.
    loop {
        let v = call(c, &["SCAN", &cursor, "COUNT", "1000"]);
        let a = v.array();
        cursor = a[0].bulk().to_string();
        keys.extend(strings(&a[1]));
        if cursor == "0" {
            break;
        }
    }
    let mut out = BTreeMap::new();
    for k in keys {
        let ty = match call(c, &["TYPE", &k]) {
            V::Simple(s) => s,
            v => panic!("TYPE {k}: {v:?}"),
        };
        let value = match ty.as_str() {
            // A HyperLogLog's bytes are each server's own encoding.
            "string" if k.starts_with("hll") => c.call(&["PFCOUNT", &k]),
            "string" => c.call(&["GET", &k]),
            "list" => c.call(&["LRANGE", &k, "0", "-1"]),
            "hash" => {
                let mut pairs: Vec<_> = strings(&call(c, &["HGETALL", &k]));
                let mut fields: Vec<String> = pairs.chunks(2).map(|p| format!("{}={}", p[0], p[1])).collect();
                fields.sort();
                pairs.clear();
                fields.join(",")
            }
            "set" => {
                let mut m = strings(&call(c, &["SMEMBERS", &k]));
                m.sort();
                m.join(",")
            }
            "zset" => c.call(&["ZRANGE", &k, "0", "-1", "WITHSCORES"]),
            "stream" => c.call(&["XRANGE", &k, "-", "+"]),
            // Expired (or deleted) between KEYS and TYPE: gone, as on the
            // other side once it is told (`converges` asks again).
            "none" => continue,
            other => panic!("{k}: unexpected type {other}"),
        };
        let expiry = c.call(&["PEXPIRETIME", &k]);
        out.insert(k, format!("{ty} {value} {expiry}"));
    }
    assert_eq!(c.call(&["SELECT", "0"]), "+OK\r\n");
    out
}

/// Writes every type into both databases; `round` names new keys and
/// changes the earlier rounds' ones.
pub fn write_round(c: &mut Resp, round: usize) {
    for db in DBS {
        assert_eq!(c.call(&["SELECT", db]), "+OK\r\n");
        let r = round.to_string();
        for i in 0..50 {
            let k = |p: &str| format!("{p}:{r}:{i}");
            let v = format!("value-{db}-{round}-{i}");
            assert_eq!(c.call(&["SET", &k("s"), &v]), "+OK\r\n");
            assert_eq!(c.call(&["SET", &k("ttl"), &v, "EX", "1000"]), "+OK\r\n");
            c.call(&["HSET", &k("h"), "f1", &v, "f2", &r]);
            c.call(&["RPUSH", &k("l"), "a", &v, "c"]);
            c.call(&["SADD", &k("set"), "x", &v, "y"]);
            c.call(&["ZADD", &k("z"), "1.5", "a", "2", &v]);
            c.call(&["XADD", &k("x"), "*", "f", &v]);
            c.call(&["PFADD", &k("hll"), "a", "b", &v]);
        }
        // The earlier round's keys change: counters, pops, deletions,
        // expiries set and removed, a transaction.
        if round > 0 {
            let p = (round - 1).to_string();
            for i in 0..50 {
                let k = |pre: &str| format!("{pre}:{p}:{i}");
                c.call(&["INCRBY", &format!("ctr:{i}"), "7"]);
                c.call(&["HINCRBY", &k("h"), "n", "3"]);
                c.call(&["LPOP", &k("l")]);
                c.call(&["SREM", &k("set"), "x"]);
                c.call(&["ZINCRBY", &k("z"), "10", "a"]);
                c.call(&["XADD", &k("x"), "*", "g", "h"]);
                if i % 5 == 0 {
                    c.call(&["DEL", &k("s")]);
                }
                if i % 7 == 0 {
                    c.call(&["PERSIST", &k("ttl")]);
                    c.call(&["PEXPIREAT", &k("s"), "4102444800000"]);
                }
            }
            assert_eq!(c.call(&["MULTI"]), "+OK\r\n");
            c.call(&["SET", &format!("tx:{r}:a"), "1"]);
            c.call(&["LPUSH", &format!("tx:{r}:b"), "1", "2"]);
            c.call(&["EXEC"]);
        }
    }
    assert_eq!(c.call(&["SELECT", "0"]), "+OK\r\n");
}

/// Waits until the replica holds what the primary holds in each database.
pub fn converges(p: &mut Resp, r: &mut Resp, what: &str) {
    let mut last = (BTreeMap::new(), BTreeMap::new());
    let same = |p: &mut Resp, r: &mut Resp, last: &mut (BTreeMap<String, String>, BTreeMap<String, String>)| {
        DBS.iter().all(|db| {
            *last = (contents(p, db), contents(r, db));
            last.0 == last.1
        })
    };
    let start = std::time::Instant::now();
    // Bounded by CONVERGE.
    while start.elapsed() < CONVERGE {
        if same(p, r, &mut last) {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let differ: Vec<_> = last.0.iter().filter(|(k, v)| last.1.get(*k) != Some(*v)).take(5).collect();
    let extra: Vec<_> = last.1.keys().filter(|k| !last.0.contains_key(*k)).take(5).collect();
    panic!("{what}: the replica differs; first keys that differ {differ:?}; keys only it holds {extra:?}");
}
