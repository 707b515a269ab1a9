//! Authentication on the RESP port, black-box: `--requirepass`, AUTH,
//! HELLO AUTH, NOAUTH before authenticating (batched GET/SET pipelines
//! and MULTI included), WRONGPASS, CONFIG SET requirepass, and Redis's
//! protected mode. Runs against amalgam and, in CI, against redis-server 7
//! (`AMALGAM_TEST_RESP_ADDR`, and `AMALGAM_TEST_RESP_AUTH_ADDR` for the
//! redis-server started with `--requirepass amalgam-test-pass`).
mod common;
use common::resp::*;
use common::*;
use std::io::Read;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const NOAUTH: &str = "NOAUTH Authentication required.";
const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";
const NO_PASSWORD: &str = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?";

#[test]
fn every_command_but_auth_hello_quit_needs_authentication() {
    let Some(server) = resp_with_password() else { return };
    let mut c = Resp::new(&server);
    let k = key("auth-k");
    assert_eq!(c.call(&["GET", &k]), error(NOAUTH));
    assert_eq!(c.call(&["SET", &k, "v"]), error(NOAUTH));
    assert_eq!(c.call(&["PING"]), error(NOAUTH));
    assert_eq!(c.call(&["ACL", "WHOAMI"]), error(NOAUTH));
    assert_eq!(c.call(&["CONFIG", "GET", "requirepass"]), error(NOAUTH));
    // An unknown command and a wrong argument count are answered first.
    assert_eq!(c.call(&["NOSUCHCMD"]), error("ERR unknown command 'NOSUCHCMD', with args beginning with: "));
    assert_eq!(c.call(&["GET"]), error("ERR wrong number of arguments for 'get' command"));
    // A pipeline of GETs and SETs (the batched path) is refused as a whole.
    c.send(&["SET", &k, "v"]);
    c.send(&["GET", &k]);
    c.send(&["MGET", &k, &k]);
    c.send(&["SET", &k, "w"]);
    for _ in 0..4 {
        assert_eq!(c.reply(), error(NOAUTH));
    }
    // MULTI is refused, so are its commands, and EXEC aborts.
    assert_eq!(c.call(&["MULTI"]), error(NOAUTH));
    assert_eq!(c.call(&["GET", &k]), error(NOAUTH));
    assert_eq!(c.call(&["EXEC"]), error(&format!("EXECABORT Transaction discarded because of: {NOAUTH}")));
    // HELLO without AUTH, and a wrong password.
    assert_eq!(
        c.call(&["HELLO", "2"]),
        error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
    );
    assert_eq!(c.call(&["AUTH", "wrong"]), error(WRONGPASS));
    assert_eq!(c.call(&["AUTH", "default", "wrong"]), error(WRONGPASS));
    assert_eq!(c.call(&["AUTH", "nosuchuser", TEST_REQUIREPASS]), error(WRONGPASS));
    assert_eq!(c.call(&["AUTH", "a", "b", "c"]), error("ERR syntax error"));
    assert_eq!(c.call(&["HELLO", "3", "AUTH", "default", "wrong"]), error(WRONGPASS));
    assert_eq!(c.call(&["GET", &k]), error(NOAUTH), "still unauthenticated");
    // The right password: everything runs, pipelines batch again.
    assert_eq!(c.call(&["AUTH", TEST_REQUIREPASS]), OK);
    assert_eq!(c.call(&["SET", &k, "v"]), OK);
    c.send(&["GET", &k]);
    c.send(&["SET", &k, "w"]);
    c.send(&["GET", &k]);
    c.send(&["MGET", &k, &k]);
    assert_eq!(c.reply(), bulk("v"));
    assert_eq!(c.reply(), OK);
    assert_eq!(c.reply(), bulk("w"));
    assert_eq!(c.reply(), format!("*2\r\n{}{}", bulk("w"), bulk("w")));
    assert_eq!(c.call(&["ACL", "WHOAMI"]), bulk("default"));
    // QUIT needs no authentication.
    let mut q = Resp::new(&server);
    assert_eq!(q.call(&["QUIT"]), OK);
    assert!(q.closed());
}

#[test]
fn hello_auth_authenticates_and_switches_protocol() {
    let Some(server) = resp_with_password() else { return };
    let mut c = Resp::new(&server);
    let k = key("hello-auth");
    let hello = c.call(&["HELLO", "3", "AUTH", "default", TEST_REQUIREPASS, "SETNAME", "authed"]);
    assert!(hello.starts_with("%7\r\n"), "a RESP3 map: {hello:?}");
    assert!(hello.contains("$5\r\nproto\r\n:3\r\n"), "{hello:?}");
    assert_eq!(c.call(&["CLIENT", "GETNAME"]), bulk("authed"));
    assert_eq!(c.call(&["GET", &k]), "_\r\n", "RESP3's null: authenticated");
    // AUTH user password as the default user.
    let mut d = Resp::new(&server);
    assert_eq!(d.call(&["AUTH", "default", TEST_REQUIREPASS]), OK);
    assert_eq!(d.call(&["PING"]), "+PONG\r\n");
}

#[test]
fn auth_without_a_configured_password() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    assert_eq!(c.call(&["AUTH", "whatever"]), error(NO_PASSWORD));
    // The nopass default user takes any password given with its name.
    assert_eq!(c.call(&["AUTH", "default", "whatever"]), OK);
    assert_eq!(c.call(&["AUTH", "nosuchuser", "whatever"]), error(WRONGPASS));
    assert_eq!(c.call(&["HELLO", "3", "AUTH", "nosuchuser", "x"]), error(WRONGPASS));
    assert_eq!(c.call(&["PING"]), "+PONG\r\n", "a failed AUTH leaves the connection as it was");
}

#[test]
fn config_set_requirepass_applies_to_new_connections() {
    // Changes the server's password: a server of this test's own.
    let Some(server) = resp_private(&[]) else { return };
    let mut admin = Resp::new(&server);
    assert_eq!(admin.call(&["CONFIG", "GET", "requirepass"]), "*2\r\n$11\r\nrequirepass\r\n$0\r\n\r\n");
    assert_eq!(admin.call(&["CONFIG", "SET", "requirepass", "s3cret"]), OK);
    assert_eq!(admin.call(&["CONFIG", "GET", "requirepass"]), "*2\r\n$11\r\nrequirepass\r\n$6\r\ns3cret\r\n");
    assert_eq!(admin.call(&["PING"]), "+PONG\r\n", "a connection made before stays authenticated");
    let mut c = Resp::new(&server);
    assert_eq!(c.call(&["PING"]), error(NOAUTH));
    assert_eq!(c.call(&["AUTH", "s3cret"]), OK);
    assert_eq!(c.call(&["PING"]), "+PONG\r\n");
    let getuser = admin.call(&["ACL", "GETUSER", "default"]);
    // SHA-256("s3cret"), as Redis shows the stored password.
    assert!(getuser.contains("1ec1c26b50d5d3c58d9583181af8076655fe00756bf7285940ba3670f99fcba0"), "{getuser}");
    assert!(!getuser.contains("s3cret"), "the password itself is never shown: {getuser}");
    // An empty password removes it.
    assert_eq!(admin.call(&["CONFIG", "SET", "requirepass", ""]), OK);
    let mut d = Resp::new(&server);
    assert_eq!(d.call(&["PING"]), "+PONG\r\n");
    assert_eq!(d.call(&["AUTH", "x"]), error(NO_PASSWORD));
}

#[test]
fn password_from_the_command_line_is_stored_hashed() {
    let Some(server) = resp_with_password() else { return };
    let mut c = Resp::new(&server);
    assert_eq!(c.call(&["AUTH", TEST_REQUIREPASS]), OK);
    let list = c.call(&["ACL", "LIST"]);
    let line = list.lines().find(|l| l.starts_with("user default ")).unwrap_or_else(|| panic!("{list}"));
    let hash = line.split(' ').find(|w| w.starts_with('#')).unwrap_or_else(|| panic!("{line}"));
    assert_eq!(hash.len(), 65, "#<SHA-256 in hex>: {line}");
    assert!(!list.contains(TEST_REQUIREPASS));
}

/// This machine's first IPv4 address that is not loopback, if any
/// (`ip -4 -o addr`): protected mode is about clients from there.
fn non_loopback_ip() -> Option<IpAddr> {
    let out = Command::new("ip").args(["-4", "-o", "addr"]).output().ok()?;
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|w| w.split('/').next()?.parse().ok())
        .find(|ip: &IpAddr| !ip.is_loopback() && !ip.is_unspecified())
}

/// A server (amalgam, or redis-server when the RESP tests run against
/// Redis) listening on `ip`, with `extra` flags; its stderr, and a guard
/// that kills it.
struct Spawned {
    child: std::process::Child,
    resp: SocketAddr,
    stderr: std::path::PathBuf,
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.stderr);
    }
}

fn free_port(ip: IpAddr) -> u16 {
    TcpListener::bind((ip, 0)).unwrap().local_addr().unwrap().port()
}

fn spawn_on(ip: IpAddr, redis: bool, extra: &[&str]) -> Spawned {
    let stderr = std::env::temp_dir().join(format!("amalgam-auth-{}-{}.log", std::process::id(), free_port(ip)));
    let (port, resp) = (free_port(ip), free_port(ip));
    let mut cmd = if redis {
        let mut c = Command::new("redis-server");
        c.args(["--port", &resp.to_string(), "--bind", &ip.to_string(), "--save", "", "--appendonly", "no"]);
        c.args(extra);
        c
    } else {
        let mut c = Command::new(env!("CARGO_BIN_EXE_amalgam"));
        c.args(["-l", &ip.to_string(), "-p", &port.to_string(), "--resp-port", &resp.to_string(), "-U", "0"]);
        c.args(extra);
        c
    };
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn: {e}"));
    let addr = SocketAddr::new(ip, resp);
    let t0 = Instant::now();
    while TcpStream::connect(addr).is_err() {
        assert!(t0.elapsed() < Duration::from_secs(20), "the server did not listen on {addr}");
        std::thread::sleep(Duration::from_millis(50));
    }
    Spawned { child, resp: addr, stderr }
}

/// Everything the server sends until it closes (or a timeout).
fn read_to_close(s: &mut TcpStream) -> String {
    s.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
    let mut v = Vec::new();
    let _ = s.read_to_end(&mut v);
    String::from_utf8_lossy(&v).into_owned()
}

#[test]
fn protected_mode_denies_other_hosts_without_a_password() {
    let Some(ip) = non_loopback_ip() else {
        eprintln!("note: no non-loopback IPv4 address on this machine; skipping the protected-mode test");
        return;
    };
    // Against Redis when the RESP tests run against it, else amalgam.
    let redis = external_resp_addr().is_some();
    if binary().contains("memcached") {
        eprintln!("note: {} does not speak RESP; skipping a RESP test", binary());
        return;
    }
    if external_addr().is_some() && !redis {
        eprintln!("note: an external server is named; skipping a test that starts its own");
        return;
    }
    if redis && Command::new("redis-server").arg("--version").output().is_err() {
        eprintln!("note: no redis-server to compare with; skipping");
        return;
    }
    // No password: a client from `ip` (not loopback) is denied and closed.
    let server = spawn_on(ip, redis, &[]);
    let mut s = TcpStream::connect(server.resp).unwrap();
    std::io::Write::write_all(&mut s, b"PING\r\n").unwrap();
    let denied = read_to_close(&mut s);
    assert!(
        denied.starts_with("-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface.")
            && denied.ends_with("NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n"),
        "{denied:?}"
    );
    if !redis {
        let log = std::fs::read_to_string(&server.stderr).unwrap_or_default();
        assert!(log.contains("WARNING: the memcached port listens on"), "a loud warning at start-up: {log}");
    }
    drop(server);
    // --protected-mode no serves them.
    let server = spawn_on(ip, redis, &["--protected-mode", "no"]);
    let mut c = Resp::from_stream(TcpStream::connect(server.resp).unwrap());
    assert_eq!(c.call(&["PING"]), "+PONG\r\n");
    drop(server);
    // A password: served, and asked to authenticate.
    let server = spawn_on(ip, redis, &["--requirepass", "pw"]);
    let mut c = Resp::from_stream(TcpStream::connect(server.resp).unwrap());
    assert_eq!(c.call(&["PING"]), error(NOAUTH));
    assert_eq!(c.call(&["AUTH", "pw"]), OK);
    assert_eq!(c.call(&["PING"]), "+PONG\r\n");
}

#[test]
fn loopback_clients_are_served_in_protected_mode() {
    // The harness's servers listen on 127.0.0.1 with protected mode on.
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    assert_eq!(c.call(&["CONFIG", "GET", "protected-mode"]), "*2\r\n$14\r\nprotected-mode\r\n$3\r\nyes\r\n");
    assert_eq!(c.call(&["PING"]), "+PONG\r\n");
}

#[test]
fn reset_needs_no_password_and_deauthenticates() {
    // RESET runs before AUTH (a no-auth command) and returns the
    // connection to the default user: with a password required, the next
    // command needs AUTH again.
    let Some(server) = resp_with_password() else { return };
    let mut c = Resp::new(&server);
    let k = key("auth-reset");
    assert_eq!(c.call(&["RESET"]), "+RESET\r\n");
    assert_eq!(c.call(&["AUTH", TEST_REQUIREPASS]), OK);
    assert_eq!(c.call(&["GET", &k]), "$-1\r\n");
    assert_eq!(c.call(&["RESET"]), "+RESET\r\n");
    assert_eq!(c.call(&["GET", &k]), error(NOAUTH));
    assert_eq!(c.call(&["AUTH", TEST_REQUIREPASS]), OK);
    assert_eq!(c.call(&["GET", &k]), "$-1\r\n");
}

#[test]
fn requests_before_authentication_are_kept_small() {
    // Redis 7's bounds before AUTH: at most 10 arguments and bulk strings
    // of at most 16 KiB; past either, the protocol error and the
    // connection closed, so a client without the password cannot make
    // the server hold a large request. AUTH lifts them, for the very next
    // request of the same read too.
    let Some(server) = resp_with_password() else { return };
    let mut c = Resp::new(&server);
    let many: Vec<String> = (0..9).map(|i| format!("k{i}")).collect();
    let mut ten = vec!["MGET"];
    ten.extend(many.iter().map(String::as_str));
    assert_eq!(c.call(&ten), error(NOAUTH), "ten elements are allowed");
    let exact = "x".repeat(16 * 1024);
    assert_eq!(c.call(&["ECHO", &exact]), error(NOAUTH), "a 16 KiB bulk is allowed");
    c.send_raw(b"*11\r\n");
    assert_eq!(c.reply(), error("ERR Protocol error: unauthenticated multibulk length"));
    assert!(c.closed());
    let mut c = Resp::new(&server);
    c.send_raw(b"*2\r\n$4\r\nECHO\r\n$16385\r\n");
    assert_eq!(c.reply(), error("ERR Protocol error: unauthenticated bulk length"));
    assert!(c.closed());
    // AUTH and a large request in one write: the AUTH runs first.
    let mut c = Resp::new(&server);
    let k = key("auth-big");
    let big = "v".repeat(100_000);
    let mut bytes = encode(&[b"AUTH", TEST_REQUIREPASS.as_bytes()]);
    bytes.extend(encode(&[b"SET", k.as_bytes(), big.as_bytes()]));
    c.send_raw(&bytes);
    assert_eq!(c.reply(), OK);
    assert_eq!(c.reply(), OK);
    assert_eq!(c.call(&["STRLEN", &k]), int(100_000));
    let mut eleven = vec!["DEL"];
    eleven.extend(many.iter().map(String::as_str));
    eleven.push(&k);
    assert_eq!(c.call(&eleven), int(1));
}
