//! Redis's tools taking an RDB from Amalgam (issue 37 §2): `redis-cli
//! --rdb FILE` against the server writes a file `redis-check-rdb` accepts
//! and a redis-server loads, with every key, database and expiry. The
//! server is an amalgam of the test's own, or in CI's Redis pass (every
//! `resp_*` file) a redis-server, which proves the expectations are what
//! redis-cli gets from Redis. (A redis-server replica of Amalgam:
//! resp_repl_to_redis.rs.)
mod common;
use common::own::{own_server, redis_server, Own};
use common::resp::*;
use common::*;
use std::net::TcpStream;
use std::process::Command;

fn connect(own: &Own) -> Resp {
    Resp::from_stream(TcpStream::connect(own.addr()).expect("connect"))
}

/// The keys the test writes, in databases 0 and 3.
fn fill(c: &mut Resp) {
    for i in 0..200 {
        c.call(&["SET", &format!("s:{i}"), &format!("v{i}")]);
    }
    c.call(&["SET", "ttl", "x", "EX", "1000"]);
    c.call(&["HSET", "h", "a", "1", "b", "2"]);
    c.call(&["RPUSH", "l", "x", "y"]);
    c.call(&["SADD", "set", "m"]);
    c.call(&["XADD", "st", "1-1", "f", "v"]);
    assert_eq!(c.call(&["SELECT", "3"]), "+OK\r\n");
    c.call(&["ZADD", "z", "1.5", "a", "2", "b"]);
    assert_eq!(c.call(&["SELECT", "0"]), "+OK\r\n");
}

fn installed(tool: &str) -> bool {
    Command::new(tool).arg("--version").output().is_ok()
}

#[test]
fn redis_cli_rdb_writes_a_file_redis_loads() {
    if !installed("redis-cli") || !installed("redis-check-rdb") {
        eprintln!("note: redis-cli or redis-check-rdb not installed (scripts/test.sh installs them)");
        return;
    }
    let Some(server) = own_server(&[]) else { return };
    let mut c = connect(&server);
    fill(&mut c);
    let dir = TempDir::new("rdb-out");
    let file = dir.0.join("taken.rdb");
    let port = server.addr().port().to_string();
    let out = Command::new("redis-cli").args(["-p", &port, "--rdb"]).arg(&file).output().expect("redis-cli");
    let said = String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "redis-cli --rdb: {said}");
    assert!(said.contains("Transfer finished with success"), "{said}");
    let check = Command::new("redis-check-rdb").arg(&file).output().expect("redis-check-rdb");
    assert!(check.status.success(), "redis-check-rdb: {}", String::from_utf8_lossy(&check.stdout));
    // The server goes on serving.
    assert_eq!(c.call(&["GET", "s:7"]), bulk("v7"));
    let d = dir.0.to_str().unwrap();
    let Some(loaded) = redis_server(&["--dir", d, "--dbfilename", "taken.rdb"]) else { return };
    let mut l = connect(&loaded);
    assert_eq!(l.call(&["DBSIZE"]), int(205));
    assert_eq!(l.call(&["GET", "s:199"]), bulk("v199"));
    assert_eq!(l.call(&["HGET", "h", "b"]), bulk("2"));
    assert_eq!(l.call(&["LRANGE", "l", "0", "-1"]), "*2\r\n$1\r\nx\r\n$1\r\ny\r\n");
    assert_eq!(l.call(&["XLEN", "st"]), int(1));
    let ttl = as_int(&l.call(&["TTL", "ttl"]));
    assert!((900..=1000).contains(&ttl), "the expiry travels: TTL {ttl}");
    assert_eq!(l.call(&["SELECT", "3"]), "+OK\r\n");
    assert_eq!(l.call(&["ZSCORE", "z", "a"]), bulk("1.5"));
}
