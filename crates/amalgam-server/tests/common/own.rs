//! A RESP server of a test's own, for tests that change the whole server
//! (a busy script, a replica's role) and so cannot share the suite's: a
//! spawned amalgam, or, when the suite runs against Redis
//! (`AMALGAM_TEST_RESP_ADDR`, CI's second pass), a redis-server of the
//! test's own started from `PATH` with the same options.

use super::{external_resp_addr, resp_private, Server};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a redis-server of a test's own has to listen.
const START_WAIT: Duration = Duration::from_secs(10);

/// A RESP server of the test's own.
pub enum Own {
    Amalgam(Server),
    Redis(Child, SocketAddr),
}

impl Own {
    pub fn addr(&self) -> SocketAddr {
        match self {
            Own::Amalgam(s) => s.resp_addr(),
            Own::Redis(_, a) => *a,
        }
    }

    pub fn is_redis(&self) -> bool {
        matches!(self, Own::Redis(..))
    }
}

/// The directory of the redis-server of the test's own on `port`.
fn redis_dir(port: u16) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("amalgam-test-redis-{port}"))
}

impl Drop for Own {
    fn drop(&mut self) {
        if let Own::Redis(child, addr) = self {
            let _ = child.kill();
            let _ = child.wait();
            let _ = std::fs::remove_dir_all(redis_dir(addr.port()));
        }
    }
}

/// A spawned amalgam started with `args`, or a redis-server of the test's
/// own with the same `args` when the suite runs against Redis; None (with
/// a note) when neither can be had.
pub fn own_server(args: &[&str]) -> Option<Own> {
    if external_resp_addr().is_none() {
        return resp_private(args).map(Own::Amalgam);
    }
    redis_server(args)
}

/// A redis-server of the test's own started from `PATH` with `args`,
/// whichever server the suite runs against (a test of interop with
/// Redis: issue 37); None (with a note) when there is none.
pub fn redis_server(args: &[&str]) -> Option<Own> {
    spawn("redis-server", args)
}

/// Where a test finds a valkey-server 8.x: the binary this names, else
/// `valkey-server` on `PATH`. Debian bookworm has none; its backports'
/// `valkey-server` package (8.0.1) does, as does Debian trixie.
pub const VALKEY_SERVER_ENV: &str = "AMALGAM_TEST_VALKEY_SERVER";

/// A valkey-server of the test's own with `args` (RDB version 11, as
/// Redis 7.2 writes it: issue 37); None (with a note naming
/// [`VALKEY_SERVER_ENV`]) when there is none.
pub fn valkey_server(args: &[&str]) -> Option<Own> {
    let bin = std::env::var(VALKEY_SERVER_ENV).ok().filter(|s| !s.is_empty());
    spawn(bin.as_deref().unwrap_or("valkey-server"), args)
}

/// `bin` (redis-server or a server started as it is) on a free port.
fn spawn(bin: &str, args: &[&str]) -> Option<Own> {
    let port = TcpListener::bind("127.0.0.1:0").ok()?.local_addr().ok()?.port();
    // A directory of its own: a replica of a disk-based sync writes the
    // RDB it receives there (never into the source tree, nor another's).
    let dir = redis_dir(port);
    std::fs::create_dir_all(&dir).ok()?;
    let child = Command::new(bin)
        .args(["--port", &port.to_string(), "--save", "", "--appendonly", "no", "--bind", "127.0.0.1"])
        .args(["--dir", dir.to_str()?])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let Ok(child) = child else {
        let _ = std::fs::remove_dir_all(&dir);
        if bin == "redis-server" {
            eprintln!("note: no redis-server on PATH; skipping a test that needs a Redis of its own");
        } else {
            eprintln!(
                "note: no {bin} (set {VALKEY_SERVER_ENV} to a valkey-server 8.x binary, or put valkey-server on \
                 PATH); skipping a test that needs one"
            );
        }
        return None;
    };
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().ok()?;
    let start = Instant::now();
    let own = Own::Redis(child, addr);
    // Bounded: until it answers PING with anything but LOADING (it has
    // loaded any file it was given), at most START_WAIT.
    while !serving(addr) {
        assert!(start.elapsed() < START_WAIT, "{bin} on {port} did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    Some(own)
}

/// True if a RESP server at `addr` answers PING with anything but
/// `-LOADING` (a replica under `replica-serve-stale-data no` answers
/// MASTERDOWN, and is serving).
fn serving(addr: SocketAddr) -> bool {
    use std::io::{Read, Write};
    let Ok(mut s) = TcpStream::connect(addr) else { return false };
    let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
    let mut b = [0u8; 64];
    if s.write_all(b"PING\r\n").is_err() {
        return false;
    }
    // One reply line, whole in one read on loopback.
    matches!(s.read(&mut b), Ok(n) if n > 0 && !b[..n].starts_with(b"-LOADING"))
}
