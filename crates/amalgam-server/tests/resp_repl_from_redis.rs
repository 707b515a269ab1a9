//! Amalgam as a replica of redis-server (issue 37 §1): the handshake, the
//! RDB full sync in both of Redis's forms (diskless `$EOF:<mark>` and
//! disk-based `$<len>`), the command stream after it (SELECT, MULTI/EXEC,
//! expiries, every type), WAIT answered through REPLCONF GETACK, and a
//! partial resync after the link drops. The primary is always a
//! redis-server of the test's own; the replica is an amalgam, or in CI's
//! Redis pass (every `resp_*` file) a redis-server with the same options,
//! which proves the expectations are Redis's own replica's.
mod common;
use common::own::{own_server, redis_server, Own};
use common::resp::*;
use common::*;
use std::collections::BTreeMap;
use std::net::TcpStream;
use std::time::Duration;

/// How long a sync or the stream may take to converge.
const CONVERGE: Duration = Duration::from_secs(30);
/// The databases the test writes (Redis's replication stream says SELECT).
const DBS: [&str; 2] = ["0", "2"];

fn connect(own: &Own) -> Resp {
    Resp::from_stream(TcpStream::connect(own.addr()).expect("connect"))
}

fn strings(v: &V) -> Vec<String> {
    v.array().iter().map(|x| x.bulk().to_string()).collect()
}

/// Everything a database holds, read through commands both servers
/// answer alike: per key its type, its value in a form that does not
/// depend on the server's internal order, and its absolute expiry.
fn contents(c: &mut Resp, db: &str) -> BTreeMap<String, String> {
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
fn write_round(c: &mut Resp, round: usize) {
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
fn converges(p: &mut Resp, r: &mut Resp, what: &str) {
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

/// A redis-server primary with `primary_args` holding two rounds of
/// writes, and a replica of it (an amalgam, or a redis-server in the
/// Redis pass) once streaming.
fn pair(primary_args: &[&str]) -> Option<(Own, Own)> {
    let primary = redis_server(primary_args)?;
    let mut p = connect(&primary);
    write_round(&mut p, 0);
    write_round(&mut p, 1);
    let port = primary.addr().port().to_string();
    let replica = own_server(&["--replicaof", "127.0.0.1", &port])?;
    let mut r = connect(&replica);
    eventually("the replica streams", CONVERGE, || {
        r.info_field("replication", "master_link_status").as_deref() == Some("up")
    });
    Some((primary, replica))
}

fn follows_a_redis_primary(primary_args: &[&str]) {
    let Some((primary, replica)) = pair(primary_args) else { return };
    let (mut p, mut r) = (connect(&primary), connect(&replica));
    converges(&mut p, &mut r, "after the full sync");
    assert_eq!(r.call(&["SET", "mine", "1"]), "-READONLY You can't write against a read only replica.\r\n");
    // The stream: every type, SELECT, MULTI/EXEC, expiries.
    write_round(&mut p, 2);
    // WAIT is answered through REPLCONF GETACK.
    assert_eq!(p.call(&["WAIT", "1", "20000"]), int(1));
    converges(&mut p, &mut r, "after the stream");
    assert_eq!(
        r.info_field("replication", "master_repl_offset"),
        p.info_field("replication", "master_repl_offset"),
        "the replica's offset is its primary's"
    );
    // The primary lists it, as it lists a Redis replica.
    assert_eq!(p.info_field("replication", "connected_slaves").as_deref(), Some("1"));
    // A dropped link continues where it stopped: a partial resync, no
    // full one. (Counted across the drop: a fresh redis-server replica
    // of 7.0 counts its first sync as a partial one.)
    let stat = |p: &mut Resp, name: &str| as_int(&format!(":{}\r\n", p.info_field("stats", name).unwrap()));
    let (full, partial) = (stat(&mut p, "sync_full"), stat(&mut p, "sync_partial_ok"));
    assert_eq!(r.call(&["CLIENT", "KILL", "TYPE", "master"]), int(1));
    write_round(&mut p, 3);
    eventually("the link is back", CONVERGE, || {
        r.info_field("replication", "master_link_status").as_deref() == Some("up")
    });
    assert_eq!(p.call(&["WAIT", "1", "20000"]), int(1));
    converges(&mut p, &mut r, "after the partial resync");
    assert_eq!(stat(&mut p, "sync_partial_ok"), partial + 1);
    assert_eq!(stat(&mut p, "sync_full"), full);
    // The move's last step: the replica becomes the primary, with every
    // key, and takes writes.
    let before = contents(&mut r, "0");
    assert_eq!(r.call(&["REPLICAOF", "NO", "ONE"]), "+OK\r\n");
    assert_eq!(r.call(&["SET", "mine", "1"]), "+OK\r\n");
    assert_eq!(r.call(&["DEL", "mine"]), int(1));
    assert_eq!(contents(&mut r, "0"), before);
}

#[test]
fn follows_a_redis_primary_through_a_diskless_sync() {
    follows_a_redis_primary(&["--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0"]);
}

#[test]
fn follows_a_redis_primary_through_a_disk_based_sync() {
    follows_a_redis_primary(&["--repl-diskless-sync", "no"]);
}

#[test]
fn a_redis_primary_s_function_libraries_reach_the_replica() {
    let Some(primary) = redis_server(&["--repl-diskless-sync-delay", "0"]) else { return };
    let mut p = connect(&primary);
    let lib = "#!lua name=before\nredis.register_function{function_name='one', callback=function() return 1 end, \
               flags={'no-writes'}}";
    assert_eq!(p.call(&["FUNCTION", "LOAD", lib]), bulk("before"));
    let port = primary.addr().port().to_string();
    let Some(replica) = own_server(&["--replicaof", "127.0.0.1", &port]) else { return };
    let mut r = connect(&replica);
    eventually("the RDB's library is loaded", CONVERGE, || r.call(&["FCALL_RO", "one", "0"]) == int(1));
    let lib = "#!lua name=after\nredis.register_function{function_name='two', callback=function() return 2 end, \
               flags={'no-writes'}}";
    assert_eq!(p.call(&["FUNCTION", "LOAD", lib]), bulk("after"));
    eventually("the streamed library is loaded", CONVERGE, || r.call(&["FCALL_RO", "two", "0"]) == int(2));
}
