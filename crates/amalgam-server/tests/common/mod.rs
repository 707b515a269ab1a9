//! Black-box test harness: starts a real server process and talks to it
//! over TCP.
//!
//! Which server:
//! * `AMALGAM_TEST_ADDR=host:port` — an already-running server; tests that
//!   need their own flags ([`Server::with_flags`]) or a server of their own
//!   ([`Server::private`]: counters, flush_all, stats reset) are skipped
//!   with a printed note.
//! * `AMALGAM_TEST_BIN=/usr/bin/memcached` — that binary, started with the
//!   same flags (memcached's and amalgam's flags are the same; memcached
//!   also gets `-u root` when running as root). This is how CI proves the
//!   expectations are memcached's own.
//! * otherwise the `amalgam` binary built with these tests.
//!
//! A spawned server listens on a free 127.0.0.1 port with `-U 0` and is
//! killed when the [`Server`] is dropped; an amalgam also gets a free
//! `--resp-port` for Redis's protocol.
//!
//! Persistence tests ([`Server::spawn_with`], [`Server::kill9`]) start a
//! server on chosen ports with its stderr in a file, SIGKILL it, and start
//! it again on the same ports.
//!
//! RESP tests ([`resp_server`], [`resp_private`]):
//! * `AMALGAM_TEST_RESP_ADDR=host:port` — an already-running RESP server:
//!   Debian's `redis-server` in CI (proof that the expectations are Redis
//!   7's own), or an amalgam. Tests that need a server of their own or
//!   amalgam-only behaviour are skipped with a note.
//! * otherwise the amalgam the harness spawns; none when
//!   `AMALGAM_TEST_BIN` is memcached or `AMALGAM_TEST_ADDR` is set alone
//!   (RESP tests are then skipped with a note).
#![allow(dead_code)]

pub mod acked;
pub mod contents;
pub mod own;
pub mod resp;

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long a test waits for bytes it expects.
pub const READ_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a server may take to start accepting.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// A server under test; killed when dropped (unless external).
#[derive(Debug)]
pub struct Server {
    addr: SocketAddr,
    /// A `sh` that started the server and kills it when its stdin closes
    /// (on drop, or when this test process exits, even if the `Server`
    /// lives in a static and is never dropped), and the server's pid.
    child: Option<(Child, u32)>,
    /// True when the server is memcached rather than amalgam.
    pub is_memcached: bool,
    /// Where the server speaks RESP, if it does.
    resp: Option<SocketAddr>,
    /// True when the RESP server is not amalgam (Redis itself).
    pub is_redis: bool,
}

/// The binary to spawn: `AMALGAM_TEST_BIN` or this package's `amalgam`.
pub fn binary() -> String {
    std::env::var("AMALGAM_TEST_BIN")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_amalgam").to_string())
}

/// The external server's address, if `AMALGAM_TEST_ADDR` names one.
pub fn external_addr() -> Option<SocketAddr> {
    let s = std::env::var("AMALGAM_TEST_ADDR").ok().filter(|s| !s.is_empty())?;
    let mut addrs = s.to_socket_addrs().unwrap_or_else(|e| panic!("AMALGAM_TEST_ADDR={s} must be host:port: {e}"));
    Some(addrs.next().unwrap_or_else(|| panic!("AMALGAM_TEST_ADDR={s}: no address")))
}

/// The external RESP server's address, if `AMALGAM_TEST_RESP_ADDR` names one.
pub fn external_resp_addr() -> Option<SocketAddr> {
    let s = std::env::var("AMALGAM_TEST_RESP_ADDR").ok().filter(|s| !s.is_empty())?;
    let mut addrs = s.to_socket_addrs().unwrap_or_else(|e| panic!("AMALGAM_TEST_RESP_ADDR={s} must be host:port: {e}"));
    Some(addrs.next().unwrap_or_else(|| panic!("AMALGAM_TEST_RESP_ADDR={s}: no address")))
}

/// The server RESP tests run against: the external one
/// (`AMALGAM_TEST_RESP_ADDR`), else a spawned amalgam; None, with a note,
/// when the environment names a server without RESP.
pub fn resp_server() -> Option<Server> {
    if let Some(addr) = external_resp_addr() {
        let mut server = Server { addr, child: None, is_memcached: false, resp: Some(addr), is_redis: false };
        let mut s = server.resp_connect();
        let info = request(&mut s, b"INFO server\r\n", b"\r\n\r\n");
        server.is_redis = !String::from_utf8_lossy(&info).contains("amalgam_version");
        return Some(server);
    }
    resp_private(&[])
}

/// An amalgam of this test's own, started with `args`, for RESP tests
/// that need flags, exact counters, FLUSHALL or amalgam-only behaviour;
/// None, with a note, when the environment names an external server.
pub fn resp_private(args: &[&str]) -> Option<Server> {
    if external_resp_addr().is_some() || external_addr().is_some() {
        eprintln!("note: an external server is named; skipping a RESP test that needs an amalgam of its own");
        return None;
    }
    if binary().contains("memcached") {
        eprintln!("note: {} does not speak RESP; skipping a RESP test", binary());
        return None;
    }
    let server = Server::spawn(args);
    if server.resp.is_none() {
        eprintln!("note: {} does not speak RESP; skipping a RESP test", binary());
        return None;
    }
    Some(server)
}

/// The password of the password-protected RESP server tests share:
/// `AMALGAM_TEST_RESP_AUTH_ADDR` names a redis-server started with
/// `--requirepass` this (scripts/test.sh), and [`resp_with_password`]
/// starts an amalgam with it.
pub const TEST_REQUIREPASS: &str = "amalgam-test-pass";

/// A RESP server whose `default` user needs [`TEST_REQUIREPASS`]: with an
/// external RESP server named, the one `AMALGAM_TEST_RESP_AUTH_ADDR` names
/// (None, with a note, if none is); else an amalgam of this test's own
/// started with `--requirepass`. Tests must leave its password as found.
pub fn resp_with_password() -> Option<Server> {
    if external_resp_addr().is_some() || external_addr().is_some() {
        let Some(s) = std::env::var("AMALGAM_TEST_RESP_AUTH_ADDR").ok().filter(|s| !s.is_empty()) else {
            eprintln!("note: no AMALGAM_TEST_RESP_AUTH_ADDR; skipping a test that needs a password-protected server");
            return None;
        };
        let addr = s.to_socket_addrs().ok().and_then(|mut a| a.next()).unwrap_or_else(|| panic!("{s}: no address"));
        let mut server = Server { addr, child: None, is_memcached: false, resp: Some(addr), is_redis: false };
        let mut c = server.resp_connect();
        let auth = format!("AUTH {TEST_REQUIREPASS}\r\nINFO server\r\n");
        let info = request(&mut c, auth.as_bytes(), b"\r\n\r\n");
        server.is_redis = !String::from_utf8_lossy(&info).contains("amalgam_version");
        return Some(server);
    }
    resp_private(&["--requirepass", TEST_REQUIREPASS])
}

/// Effective uid 0, read from /proc (no libc dependency).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("Uid:")).and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

/// A port free right now and never handed out before in this process
/// (so two tests starting servers at once cannot pick the same one).
fn fresh_port() -> u16 {
    static USED: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut used = USED.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        if !used.contains(&port) {
            used.push(port);
            return port;
        }
    }
}

/// True while process `pid` runs (exists and is not a zombie).
fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rsplit_once(") ").is_some_and(|(_, rest)| !rest.starts_with('Z')),
        Err(_) => false,
    }
}

/// The user and password a test's `-Y` auth file must hold (as a
/// `user:password` line) for the harness to see the server start: it
/// authenticates with them before asking `stats` for the pid.
pub const TEST_AUTHFILE_USER: &str = "harness";
pub const TEST_AUTHFILE_PASSWORD: &str = "harness-pw";

/// The pid the server at `addr` reports in `stats`, if one answers;
/// `authfile`: authenticate first, as [`TEST_AUTHFILE_USER`].
fn server_pid(addr: SocketAddr, authfile: bool) -> Option<u32> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(READ_TIMEOUT)).ok()?;
    if authfile {
        let token = format!("{TEST_AUTHFILE_USER} {TEST_AUTHFILE_PASSWORD}");
        s.write_all(format!("set auth 0 0 {}\r\n{token}\r\n", token.len()).as_bytes()).ok()?;
        if read_until(&mut s, b"\r\n") != b"STORED\r\n" {
            return None;
        }
    }
    s.write_all(b"stats\r\n").ok()?;
    let out = read_until(&mut s, b"END\r\n");
    let text = String::from_utf8_lossy(&out);
    text.lines().find_map(|l| l.strip_prefix("STAT pid ")).and_then(|p| p.trim().parse().ok())
}

impl Server {
    /// The server the environment names, started with `args` if we start it.
    /// Returns None (after printing why) when the test needs flags but the
    /// server is external.
    pub fn with_flags(args: &[&str]) -> Option<Server> {
        if external_addr().is_some() {
            eprintln!("note: AMALGAM_TEST_ADDR is set; skipping a test that needs flags {args:?}");
            return None;
        }
        Some(Server::spawn(args))
    }

    /// A server no other test shares (for exact counters, flush_all, stats
    /// reset); None with a note when the server is external.
    pub fn private() -> Option<Server> {
        if external_addr().is_some() {
            eprintln!("note: AMALGAM_TEST_ADDR is set; skipping a test that needs a server of its own");
            return None;
        }
        Some(Server::spawn(&[]))
    }

    /// The server the environment names; started with `args` unless
    /// external (then `args` must be empty: use [`Server::with_flags`]).
    pub fn start(args: &[&str]) -> Server {
        if let Some(addr) = external_addr() {
            assert!(args.is_empty(), "AMALGAM_TEST_ADDR is set: use Server::with_flags for flags {args:?}");
            let mut server = Server { addr, child: None, is_memcached: false, resp: None, is_redis: false };
            let mut s = server.connect();
            let v = request(&mut s, b"version\r\n", b"\r\n");
            server.is_memcached = !String::from_utf8_lossy(&v).contains("amalgam");
            return server;
        }
        Server::spawn(args)
    }

    fn spawn(args: &[&str]) -> Server {
        Server::spawn_with(args, None, None).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Starts the binary with `args` on `ports` (memcached port, RESP
    /// port; fresh ones if None) with its stderr appended to `stderr` (else
    /// discarded). Err says why it did not start listening (it exited, or
    /// timed out). With given ports a failed start is retried on the same
    /// ports (a killed predecessor's sockets may take a moment to go).
    pub fn spawn_with(
        args: &[&str],
        ports: Option<(u16, Option<u16>)>,
        stderr: Option<&std::path::Path>,
    ) -> Result<Server, String> {
        let bin = binary();
        let is_memcached =
            std::path::Path::new(&bin).file_name().is_some_and(|n| n.to_string_lossy().contains("memcached"));
        let mut why = String::new();
        // A free port can be taken between probing and the server's bind
        // (by another test's server, or anyone's): retry with another.
        for attempt in 0..10 {
            if ports.is_some() && attempt > 0 {
                std::thread::sleep(Duration::from_millis(100));
            }
            let (port, resp_port) = match ports {
                Some(p) => p,
                None => (fresh_port(), (!is_memcached).then(fresh_port)),
            };
            let stderr_path = stderr.map_or_else(|| "/dev/null".into(), |p| p.to_string_lossy().into_owned());
            let mut cmd = Command::new("sh");
            cmd.arg("-c")
                .arg(r#""$0" "$@" </dev/null >/dev/null 2>>"$AMALGAM_HARNESS_STDERR" & echo $!; read _; kill $! 2>/dev/null; wait"#)
                .arg(&bin)
                .args(["-l", "127.0.0.1", "-p", &port.to_string(), "-U", "0"]);
            // memcached refuses to run as root without -u.
            if is_memcached && is_root() {
                cmd.args(["-u", "root"]);
            }
            if let Some(p) = resp_port {
                cmd.args(["--resp-port", &p.to_string()]);
            }
            cmd.args(args)
                .env("AMALGAM_HARNESS_STDERR", &stderr_path)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null());
            let mut child = cmd.spawn().unwrap_or_else(|e| panic!("sh for {bin}: {e}"));
            let mut pid_line = String::new();
            if let Some(out) = child.stdout.take() {
                let _ = std::io::BufRead::read_line(&mut std::io::BufReader::new(out), &mut pid_line);
            }
            let Ok(pid) = pid_line.trim().parse::<u32>() else {
                drop(child.stdin.take());
                let _ = child.wait();
                panic!("no pid from sh: {pid_line:?}");
            };
            let addr: SocketAddr = ([127, 0, 0, 1], port).into();
            let t0 = Instant::now();
            loop {
                if !process_alive(pid) {
                    why = format!("{bin} {args:?} exited at start");
                    drop(child.stdin.take());
                    let _ = child.wait();
                    break;
                }
                // Ready when the server on the port is this child: another
                // server may hold the port, and this child then exits.
                if server_pid(addr, args.contains(&"-Y")) == Some(pid) {
                    let resp = resp_port.map(|p| SocketAddr::from(([127, 0, 0, 1], p)));
                    return Ok(Server { addr, child: Some((child, pid)), is_memcached, resp, is_redis: false });
                }
                if t0.elapsed() > START_TIMEOUT {
                    drop(child.stdin.take());
                    let _ = child.wait();
                    return Err(format!("{bin} {args:?} did not start listening on {addr}"));
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        Err(format!("cannot start the server: {why}"))
    }

    /// Kills the server with SIGKILL (no shutdown code runs) and waits
    /// until it is gone; its ports are then free for a successor. No-op for
    /// an external server.
    pub fn kill9(&mut self) {
        let Some(pid) = self.pid() else { return };
        let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
        let t0 = Instant::now();
        while process_alive(pid) {
            assert!(t0.elapsed() < START_TIMEOUT, "server {pid} still runs after SIGKILL");
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// The memcached port and the RESP port (if any).
    pub fn ports(&self) -> (u16, Option<u16>) {
        (self.addr.port(), self.resp.map(|a| a.port()))
    }

    /// The server's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// True if this process started the server (nobody else uses it).
    pub fn is_own(&self) -> bool {
        self.child.is_some()
    }

    /// The server's pid, if this process started it.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|&(_, pid)| pid)
    }

    /// A new connection with [`READ_TIMEOUT`] for reads and writes.
    pub fn connect(&self) -> TcpStream {
        let s = TcpStream::connect(self.addr).unwrap_or_else(|e| panic!("connect {}: {e}", self.addr));
        s.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
        s.set_write_timeout(Some(READ_TIMEOUT)).unwrap();
        s.set_nodelay(true).unwrap();
        s
    }

    /// Where the server speaks RESP; panics if it does not.
    pub fn resp_addr(&self) -> SocketAddr {
        self.resp.unwrap_or_else(|| panic!("the server at {} does not speak RESP", self.addr))
    }

    /// A new RESP connection with [`READ_TIMEOUT`] for reads and writes.
    pub fn resp_connect(&self) -> TcpStream {
        let addr = self.resp_addr();
        let s = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
        s.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
        s.set_write_timeout(Some(READ_TIMEOUT)).unwrap();
        s.set_nodelay(true).unwrap();
        s
    }

    /// True while the process we started is still running.
    pub fn alive(&mut self) -> bool {
        match &self.child {
            Some((_, pid)) => process_alive(*pid),
            None => true,
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some((c, _)) = &mut self.child {
            // Closing sh's stdin makes it kill the server and wait for it.
            drop(c.stdin.take());
            let _ = c.wait();
        }
    }
}

/// Writes all of `bytes`.
pub fn send(s: &mut TcpStream, bytes: &[u8]) {
    s.write_all(bytes).unwrap_or_else(|e| panic!("write: {e}"));
}

/// Reads until `buf` ends with `terminator` (or the peer closes or the read
/// times out); returns what was read.
pub fn read_until(s: &mut TcpStream, terminator: &[u8]) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 65536];
    while !buf.ends_with(terminator) {
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    buf
}

/// Reads exactly `n` bytes (fewer if the peer closes or times out).
pub fn read_n(s: &mut TcpStream, n: usize) -> Vec<u8> {
    let mut buf = vec![0u8; n];
    let mut got = 0;
    while got < n {
        match s.read(&mut buf[got..]) {
            Ok(0) | Err(_) => break,
            Ok(k) => got += k,
        }
    }
    buf.truncate(got);
    buf
}

/// Sends `req` and asserts the reply is exactly `want`.
#[track_caller]
pub fn exchange(s: &mut TcpStream, req: &[u8], want: &[u8]) {
    s.write_all(req).unwrap();
    let got = read_n(s, want.len());
    assert_eq!(show(&got), show(want), "request {}", show(&req[..req.len().min(200)]));
}

/// Sends `req` and returns the reply up to and including `terminator`.
pub fn request(s: &mut TcpStream, req: &[u8], terminator: &[u8]) -> Vec<u8> {
    s.write_all(req).unwrap();
    read_until(s, terminator)
}

/// Sends `req` and returns the one-line reply (CRLF included) as text.
pub fn line(s: &mut TcpStream, req: &[u8]) -> String {
    String::from_utf8_lossy(&request(s, req, b"\r\n")).into_owned()
}

/// True if nothing more arrives within a short wait (and the peer is open).
pub fn silent(s: &mut TcpStream) -> bool {
    s.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let mut b = [0u8; 1];
    let r =
        matches!(s.read(&mut b), Err(ref e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::TimedOut);
    s.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
    r
}

/// True if the server closed the connection (reads EOF or a reset).
pub fn closed(s: &mut TcpStream) -> bool {
    let mut b = [0u8; 64];
    loop {
        match s.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

/// Reads until the server closes; returns everything that arrived, or
/// None if it did not close within [`READ_TIMEOUT`].
pub fn read_to_close(s: &mut TcpStream) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut b = [0u8; 65536];
    loop {
        match s.read(&mut b) {
            Ok(0) => return Some(out),
            Ok(n) => out.extend_from_slice(&b[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return Some(out),
            Err(_) => return None,
        }
    }
}

/// Parses `stats` output into (name, value) pairs.
pub fn stats(s: &mut TcpStream, which: &str) -> Vec<(String, String)> {
    let cmd = if which.is_empty() { "stats\r\n".to_string() } else { format!("stats {which}\r\n") };
    let out = request(s, cmd.as_bytes(), b"END\r\n");
    String::from_utf8_lossy(&out)
        .lines()
        .filter_map(|l| {
            let mut t = l.splitn(3, ' ');
            (t.next() == Some("STAT")).then(|| (t.next().unwrap_or("").to_string(), t.next().unwrap_or("").to_string()))
        })
        .collect()
}

/// `stats` (or `stats <which>`) as a map.
pub fn stats_map(s: &mut TcpStream, which: &str) -> HashMap<String, String> {
    stats(s, which).into_iter().collect()
}

/// One statistic as a number.
pub fn stat(s: &mut TcpStream, name: &str) -> u64 {
    let all = stats(s, "");
    let v = all.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("no stat {name}"));
    v.1.parse().unwrap_or_else(|_| panic!("stat {name} = {:?}", v.1))
}

/// One numeric statistic of a map from [`stats_map`].
pub fn num(map: &HashMap<String, String>, name: &str) -> u64 {
    let v = map.get(name).unwrap_or_else(|| panic!("no stat {name}"));
    v.parse().unwrap_or_else(|_| panic!("stat {name} = {v:?} is not a number"))
}

/// A key unique to this test process and call, so tests sharing a server
/// (run in parallel, or an external one) never see each other's data.
pub fn key(name: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    format!("t{}_{}_{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed), name)
}

/// Bytes with escapes, shortened, for assertion messages.
pub fn show(b: &[u8]) -> String {
    let s = b.escape_ascii().to_string();
    if s.len() > 600 {
        format!("{}… ({} bytes)", &s[..600], b.len())
    } else {
        s
    }
}

/// Asserts exact reply bytes with a readable message.
#[track_caller]
pub fn assert_reply(got: &[u8], want: &[u8]) {
    assert!(got == want, "reply mismatch\n got: {}\nwant: {}", show(got), show(want));
}

/// A directory of the test's own under the temporary directory (named for
/// this test process and `name`), created empty and removed when dropped,
/// unless the test failed (to look at what it left).
pub struct TempDir(pub std::path::PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!("amalgam-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }

    /// Writes `text` to the file `name` in it; returns its path.
    pub fn file(&self, name: &str, text: &str) -> std::path::PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// Waits until `check` holds, polling every 50 ms; panics naming `what`
/// if it does not within `within` (a deadline, not a measurement: make it
/// generous).
pub fn eventually(what: &str, within: Duration, mut check: impl FnMut() -> bool) {
    let start = Instant::now();
    while start.elapsed() < within {
        if check() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("not within {within:?}: {what}");
}

/// xorshift64: deterministic noise for the hostile-input tests.
#[derive(Debug)]
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// This process's (soft, hard) limits on open files, from /proc.
pub fn open_files_limits() -> (u64, u64) {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    let field = |i: usize| -> Option<u64> {
        let l = limits.lines().find(|l| l.starts_with("Max open files"))?;
        let v = l.split_whitespace().nth(i)?;
        Some(if v == "unlimited" { u64::MAX } else { v.parse().ok()? })
    };
    (field(3).unwrap_or(1024), field(4).unwrap_or(1024))
}

/// Raises this process's soft limit on open files to its hard limit (no
/// privilege needed), so a test can hold `needed` descriptors and a
/// server it starts afterwards inherits the limit. Done with util-linux's
/// `prlimit` on our own pid: no `unsafe` setrlimit outside the engine.
/// False, with a note, if the limit stays below `needed` (the test should
/// then skip itself).
pub fn raise_open_files(needed: u64) -> bool {
    let (soft, hard) = open_files_limits();
    if soft < needed && hard >= needed {
        let limit = if hard == u64::MAX { "unlimited".to_string() } else { hard.to_string() };
        let _ = Command::new("prlimit")
            .args(["--pid", &std::process::id().to_string(), &format!("--nofile={limit}:{limit}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
    let (soft, hard) = open_files_limits();
    if soft < needed {
        eprintln!(
            "note: skipped: the open-file limit is {soft} (hard {hard}), below {needed}; raise it with ulimit -n"
        );
        return false;
    }
    true
}

/// Bytes a dribbling client sends one a second (the rest of its request
/// goes at once): keeps such a test near four seconds.
pub const DRIBBLED_BYTES: usize = 4;
/// The pause between two dribbled bytes.
pub const DRIBBLE_PAUSE: std::time::Duration = std::time::Duration::from_secs(1);

/// Writes `bytes` to `w`, the last [`DRIBBLED_BYTES`] of them one per
/// [`DRIBBLE_PAUSE`] (issue 20's client that sends one byte per second);
/// sets `last` just before the last byte goes, so a test can tell "not
/// answered yet" from "not answered after everything came".
pub fn dribble(w: &mut impl Write, bytes: &[u8], last: &std::sync::atomic::AtomicBool) {
    let (head, tail) = bytes.split_at(bytes.len().saturating_sub(DRIBBLED_BYTES));
    w.write_all(head).unwrap_or_else(|e| panic!("dribble: {e}"));
    for (i, b) in tail.iter().enumerate() {
        std::thread::sleep(DRIBBLE_PAUSE);
        if i + 1 == tail.len() {
            last.store(true, Ordering::SeqCst);
        }
        w.write_all(&[*b]).unwrap_or_else(|e| panic!("dribble: {e}"));
    }
}
