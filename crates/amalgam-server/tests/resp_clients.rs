//! Real Redis clients not written here, over RESP: the `redis` crate
//! (RESP2 and RESP3), `redis-cli` (commands on standard input, and
//! `--pipe` mass insertion) and `redis-benchmark` (`-t set,get,incr,mset
//! -P 16`, which must finish without errors). The tools come from Debian's
//! `redis-tools` (scripts/test.sh installs it); a test whose tool is
//! missing is skipped with a note. Runs against amalgam and, in CI,
//! against redis-server 7 (`AMALGAM_TEST_RESP_ADDR`).
mod common;
use common::*;
use std::io::Write;
use std::process::{Command, Stdio};

fn connect(server: &Server, resp3: bool) -> redis::Connection {
    let proto = if resp3 { "?protocol=resp3" } else { "" };
    let client = redis::Client::open(format!("redis://{}/{proto}", server.resp_addr())).unwrap();
    client.get_connection().unwrap_or_else(|e| panic!("connect: {e}"))
}

fn redis_crate(resp3: bool) {
    let Some(server) = resp_server() else { return };
    let mut con = connect(&server, resp3);
    let (a, b, n) = (key("rs_a"), key("rs_b"), key("rs_n"));
    let () = redis::cmd("SET").arg(&a).arg("1").query(&mut con).unwrap();
    let v: Option<String> = redis::cmd("GET").arg(&a).query(&mut con).unwrap();
    assert_eq!(v.as_deref(), Some("1"));
    let v: Option<String> = redis::cmd("GET").arg(&b).query(&mut con).unwrap();
    assert_eq!(v, None);
    let () = redis::cmd("MSET").arg(&b).arg("2").arg(&n).arg("10").query(&mut con).unwrap();
    let vs: Vec<Option<String>> = redis::cmd("MGET").arg(&a).arg(&b).arg(key("rs_none")).query(&mut con).unwrap();
    assert_eq!(vs, [Some("1".to_string()), Some("2".to_string()), None]);
    let i: i64 = redis::cmd("INCRBY").arg(&n).arg(5).query(&mut con).unwrap();
    assert_eq!(i, 15);
    let f: f64 = redis::cmd("INCRBYFLOAT").arg(&n).arg(0.5).query(&mut con).unwrap();
    assert_eq!(f, 15.5);
    let ok: bool = redis::cmd("EXPIRE").arg(&a).arg(100).query(&mut con).unwrap();
    assert!(ok);
    let ttl: i64 = redis::cmd("TTL").arg(&a).query(&mut con).unwrap();
    assert!((99..=100).contains(&ttl), "{ttl}");
    let e = redis::cmd("INCR").arg(&b).arg("x").query::<i64>(&mut con).unwrap_err();
    assert!(e.to_string().contains("wrong number of arguments for 'incr' command"), "{e}");
    // A pipeline: one write, replies in order.
    let mut p = redis::pipe();
    for i in 0..200 {
        p.cmd("SET").arg(format!("{a}:{i}")).arg(i).ignore();
    }
    for i in 0..200 {
        p.cmd("GET").arg(format!("{a}:{i}"));
    }
    let got: Vec<i64> = p.query(&mut con).unwrap();
    assert_eq!(got, (0..200).collect::<Vec<i64>>());
    let deleted: i64 = redis::cmd("DEL").arg(&a).arg(&b).arg(&n).query(&mut con).unwrap();
    assert_eq!(deleted, 3);
    let pong: String = redis::cmd("PING").query(&mut con).unwrap();
    assert_eq!(pong, "PONG");
}

#[test]
fn redis_crate_resp2() {
    redis_crate(false);
}

#[test]
fn redis_crate_resp3() {
    redis_crate(true);
}

/// The path of a tool from `redis-tools`, or None with a note.
fn tool(name: &str) -> Option<String> {
    let found = std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| format!("{d}/{name}"))
        .find(|p| std::path::Path::new(p).is_file());
    if found.is_none() {
        eprintln!("note: {name} not installed (Debian: redis-tools); skipping");
    }
    found
}

/// Runs `bin args`, feeding `input` on standard input; returns its status
/// and standard output.
fn run(bin: &str, args: &[&str], input: &[u8]) -> (bool, String) {
    let mut child = Command::new(bin)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{bin}: {e}"));
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

#[test]
fn redis_cli_commands() {
    let Some(server) = resp_server() else { return };
    let Some(cli) = tool("redis-cli") else { return };
    let (host, port) = (server.resp_addr().ip().to_string(), server.resp_addr().port().to_string());
    let k = key("cli");
    let script = format!(
        "SET {k} hello\nGET {k}\nAPPEND {k} \" world\"\nGET {k}\nINCR {k}:n\nINCRBY {k}:n 41\nMGET {k} {k}:n {k}:none\n\
         EXPIRE {k} 100\nTYPE {k}\nDEL {k} {k}:n\nEXISTS {k}\nNOSUCHCOMMAND a\nPING\n"
    );
    let (ok, out) = run(&cli, &["-h", &host, "-p", &port], script.as_bytes());
    assert!(ok, "{out}");
    // Not on a terminal, redis-cli prints replies raw, one per line.
    let want = "OK\nhello\n11\nhello world\n1\n42\nhello world\n42\n\n1\nstring\n2\n0\n\
         ERR unknown command 'NOSUCHCOMMAND', with args beginning with: 'a' \n\nPONG\n";
    assert_eq!(out, want);
}

#[test]
fn redis_cli_pipe_mass_insert() {
    let Some(server) = resp_server() else { return };
    let Some(cli) = tool("redis-cli") else { return };
    let (host, port) = (server.resp_addr().ip().to_string(), server.resp_addr().port().to_string());
    let prefix = key("mass");
    let n = 20_000;
    let mut proto = Vec::new();
    for i in 0..n {
        let (k, v) = (format!("{prefix}:{i}"), format!("value-{i}"));
        proto
            .extend_from_slice(format!("*3\r\n$3\r\nSET\r\n${}\r\n{k}\r\n${}\r\n{v}\r\n", k.len(), v.len()).as_bytes());
    }
    let (ok, out) = run(&cli, &["-h", &host, "-p", &port, "--pipe"], &proto);
    assert!(ok, "{out}");
    assert!(out.contains(&format!("errors: 0, replies: {n}")), "{out}");
    let mut c = common::resp::Resp::new(&server);
    for i in [0, 1, n / 2, n - 1] {
        assert_eq!(c.call(&["GET", &format!("{prefix}:{i}")]), common::resp::bulk(&format!("value-{i}")));
    }
}

#[test]
fn redis_benchmark_completes_without_errors() {
    let Some(server) = resp_server() else { return };
    let Some(bench) = tool("redis-benchmark") else { return };
    let (host, port) = (server.resp_addr().ip().to_string(), server.resp_addr().port().to_string());
    let (ok, out) =
        run(&bench, &["-h", &host, "-p", &port, "-t", "set,get,incr,mset", "-P", "16", "-n", "20000", "-q"], b"");
    assert!(ok, "{out}");
    for t in ["SET", "GET", "INCR", "MSET (10 keys)"] {
        // Progress lines end in CR; the summary of each test ends in LF.
        let done = out
            .split(['\r', '\n'])
            .any(|l| l.trim_start().starts_with(&format!("{t}: ")) && l.contains("requests per second"));
        assert!(done, "{t}: {out}");
    }
    assert!(!out.contains("ERR") && !out.to_lowercase().contains("error"), "{out}");
}
