//! Start-up, flags and signals, against the real process: memcached's
//! refusals (`-I` above half of `-m`, an unknown `-o`), its switches (`-A`
//! with `shutdown`, `-F`, `-C`, `-o`, `-d` with `-P`, `-u`, every other
//! flag of its `-h`: `-B`, `-e`, `-D`, `-W` …), SIGHUP, and
//! what Amalgam alone does: the RESP port's fallback and start-up errors
//! that say what to do. The memcached-shaped tests run unchanged against
//! memcached (`AMALGAM_TEST_BIN=/usr/bin/memcached`); the amalgam-only
//! ones are skipped there with a note.

mod common;

use common::*;
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long a server that should refuse to start may take to exit.
const EXIT_TIMEOUT: Duration = Duration::from_secs(20);

fn is_memcached_bin() -> bool {
    std::path::Path::new(&binary()).file_name().is_some_and(|n| n.to_string_lossy().contains("memcached"))
}

/// True (after a note) when the test is amalgam-only and the binary is not.
fn skip_unless_amalgam(what: &str) -> bool {
    if external_addr().is_some() || is_memcached_bin() {
        eprintln!("note: {what} is amalgam's own behaviour; skipping against {}", binary());
        return true;
    }
    false
}

/// Effective uid 0 (memcached then needs `-u`).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("Uid:")).map(|l| l.split_whitespace().nth(2) == Some("0")))
        .unwrap_or(false)
}

/// A port free right now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The binary with `-l 127.0.0.1 -p <free> -U 0` (and `-u root` for
/// memcached as root) and `args`.
fn command(args: &[&str]) -> Command {
    let mut cmd = Command::new(binary());
    cmd.args(["-l", "127.0.0.1", "-p", &free_port().to_string(), "-U", "0"]);
    if is_memcached_bin() && is_root() {
        cmd.args(["-u", "root"]);
    }
    cmd.args(args).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    cmd
}

/// Runs a start that must fail: its exit code and stderr. Panics (after
/// killing it) if it is still running after [`EXIT_TIMEOUT`].
fn refused_start(cmd: &mut Command) -> (i32, String) {
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {}: {e}", binary()));
    let t0 = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut err);
            }
            return (status.code().unwrap_or(-1), err);
        }
        if t0.elapsed() > EXIT_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} started instead of refusing");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn item_size_above_half_the_memory_is_refused_with_memcacheds_text() {
    let mut cmd = command(&["-m", "64", "-I", "256m"]);
    if !is_memcached_bin() {
        cmd.args(["--resp-port", "0"]);
    }
    let (code, err) = refused_start(&mut cmd);
    assert_eq!(code, 64, "stderr: {err}");
    assert!(err.contains("Cannot set item size limit higher than 1/2 of memory max."), "stderr: {err}");
}

#[test]
fn an_unknown_extended_option_is_refused_with_memcacheds_text() {
    let (code, err) = refused_start(&mut command(&["-o", "modern,foo_bar=1"]));
    assert_eq!(code, 1, "stderr: {err}");
    assert!(err.contains("Illegal suboption \"foo_bar=1\""), "stderr: {err}");
}

#[test]
fn memcacheds_tuning_options_are_accepted() {
    let opts =
        "modern,maxconns_fast,hashpower=20,no_lru_crawler,lru_crawler_sleep=100,slab_reassign,hash_algorithm=murmur3";
    let Some(s) = Server::with_flags(&["-o", opts, "-u", "root"]) else { return };
    let mut c = s.connect();
    exchange(&mut c, b"version\r\n", b"VERSION ");
}

#[test]
fn disable_flush_all() {
    let Some(s) = Server::with_flags(&["-F"]) else { return };
    let mut c = s.connect();
    exchange(&mut c, b"set k 0 0 1\r\nx\r\n", b"STORED\r\n");
    exchange(&mut c, b"flush_all\r\n", b"CLIENT_ERROR flush_all not allowed\r\n");
    exchange(&mut c, b"flush_all 10\r\n", b"CLIENT_ERROR flush_all not allowed\r\n");
    // noreply silences the refusal too.
    exchange(&mut c, b"flush_all noreply\r\nmn\r\n", b"MN\r\n");
    exchange(&mut c, b"get k\r\n", b"VALUE k 0 1\r\nx\r\nEND\r\n");
    let settings = stats_map(&mut c, "settings");
    assert_eq!(settings.get("flush_enabled").map(String::as_str), Some("no"));
    assert_eq!(stat(&mut c, "cmd_flush"), 3, "memcached counts refused flushes");
}

#[test]
fn disable_cas_reads_zero_and_never_matches() {
    let Some(s) = Server::with_flags(&["-C"]) else { return };
    let mut c = s.connect();
    exchange(&mut c, b"set a 0 0 1\r\nx\r\n", b"STORED\r\n");
    exchange(&mut c, b"gets a\r\n", b"VALUE a 0 1 0\r\nx\r\nEND\r\n");
    exchange(&mut c, b"gats 0 a\r\n", b"VALUE a 0 1 0\r\nx\r\nEND\r\n");
    exchange(&mut c, b"cas a 0 0 1 1\r\ny\r\n", b"EXISTS\r\n");
    exchange(&mut c, b"cas a 0 0 1 0\r\nz\r\n", b"EXISTS\r\n");
    exchange(&mut c, b"cas nope 0 0 1 0\r\nz\r\n", b"NOT_FOUND\r\n");
    exchange(&mut c, b"mg a c v\r\n", b"VA 1 c0\r\nx\r\n");
    exchange(&mut c, b"ms m 1 C0\r\nx\r\n", b"NF\r\n");
    exchange(&mut c, b"ms m 1\r\nx\r\n", b"HD\r\n");
    exchange(&mut c, b"ms m 1 C0\r\ny\r\n", b"EX\r\n");
    exchange(&mut c, b"ms m 1 c\r\nw\r\n", b"HD c0\r\n");
    // md and ma compare with the item's CAS, 0.
    exchange(&mut c, b"md m C7\r\n", b"EX\r\n");
    exchange(&mut c, b"md m C0\r\n", b"HD\r\n");
    exchange(&mut c, b"ms n 1\r\n1\r\n", b"HD\r\n");
    exchange(&mut c, b"ma n C3\r\n", b"EX\r\n");
    exchange(&mut c, b"ma n C0 v c\r\n", b"VA 1 c0\r\n2\r\n");
    let settings = stats_map(&mut c, "settings");
    assert_eq!(settings.get("cas_enabled").map(String::as_str), Some("no"));
}

#[test]
fn shutdown_needs_dash_a() {
    let Some(s) = Server::with_flags(&[]) else { return };
    let mut c = s.connect();
    exchange(&mut c, b"shutdown\r\n", b"ERROR: shutdown not enabled\r\n");
    exchange(&mut c, b"shutdown graceful\r\n", b"ERROR: shutdown not enabled\r\n");
    exchange(&mut c, b"version\r\n", b"VERSION ");
}

#[test]
fn shutdown_with_dash_a_stops_the_server() {
    for mode in ["shutdown\r\n", "shutdown graceful\r\n"] {
        let Some(mut s) = Server::with_flags(&["-A"]) else { return };
        let mut c = s.connect();
        exchange(&mut c, b"shutdown foo\r\n", b"CLIENT_ERROR invalid shutdown mode\r\n");
        exchange(&mut c, b"shutdown graceful now\r\n", b"CLIENT_ERROR invalid shutdown mode\r\n");
        send(&mut c, mode.as_bytes());
        assert_eq!(read_to_close(&mut c).as_deref(), Some(&b""[..]), "{mode:?} closes without a reply");
        let t0 = Instant::now();
        while s.alive() {
            assert!(t0.elapsed() < EXIT_TIMEOUT, "{mode:?} did not stop the server");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

#[test]
fn sighup_does_not_stop_the_server() {
    let Some(mut s) = Server::with_flags(&[]) else { return };
    let mut c = s.connect();
    exchange(&mut c, b"set k 0 0 1\r\nx\r\n", b"STORED\r\n");
    let pid = s.pid().expect("a server of our own").to_string();
    for _ in 0..2 {
        assert!(Command::new("kill").args(["-HUP", &pid]).status().unwrap().success());
        std::thread::sleep(Duration::from_millis(200));
        assert!(s.alive(), "SIGHUP stopped the server");
    }
    exchange(&mut c, b"get k\r\n", b"VALUE k 0 1\r\nx\r\nEND\r\n");
    let mut fresh = s.connect();
    exchange(&mut fresh, b"get k\r\n", b"VALUE k 0 1\r\nx\r\nEND\r\n");
}

#[test]
fn verbosity_shows_in_settings() {
    let Some(s) = Server::with_flags(&[]) else { return };
    let mut c = s.connect();
    let verbosity = |c: &mut std::net::TcpStream| stats_map(c, "settings").get("verbosity").cloned();
    assert_eq!(verbosity(&mut c).as_deref(), Some("0"));
    exchange(&mut c, b"verbosity 1\r\n", b"OK\r\n");
    assert_eq!(verbosity(&mut c).as_deref(), Some("1"));
    // memcached caps the level at 2.
    exchange(&mut c, b"verbosity 5\r\n", b"OK\r\n");
    assert_eq!(verbosity(&mut c).as_deref(), Some("2"));
    exchange(&mut c, b"verbosity 0 noreply\r\nmn\r\n", b"MN\r\n");
    assert_eq!(verbosity(&mut c).as_deref(), Some("0"));
}

/// Kills a daemonized server by pid when dropped.
struct Daemon(u32);
impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg(self.0.to_string()).status();
    }
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| s.rsplit_once(") ").is_some_and(|(_, r)| !r.starts_with('Z')))
}

#[test]
fn daemon_mode_returns_and_writes_the_pid_file() {
    if external_addr().is_some() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("amalgam-daemon-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pidfile = dir.join("server.pid");
    let port = free_port();
    let mut cmd = Command::new(binary());
    cmd.args(["-d", "-P", pidfile.to_str().unwrap(), "-l", "127.0.0.1", "-p", &port.to_string(), "-U", "0"]);
    if is_memcached_bin() {
        if is_root() {
            cmd.args(["-u", "root"]);
        }
    } else {
        cmd.args(["--resp-port", "0"]);
    }
    let status = cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).status().unwrap();
    assert!(status.success(), "-d exits 0 once the server runs: {status}");
    // memcached's parent may return before the child writes the file.
    let t0 = Instant::now();
    let pid: u32 = loop {
        if let Some(p) = std::fs::read_to_string(&pidfile).ok().and_then(|s| s.trim().parse().ok()) {
            break p;
        }
        assert!(t0.elapsed() < EXIT_TIMEOUT, "no pid in {}", pidfile.display());
        std::thread::sleep(Duration::from_millis(10));
    };
    let guard = Daemon(pid);
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut c = loop {
        if let Ok(c) = std::net::TcpStream::connect(addr) {
            break c;
        }
        assert!(t0.elapsed() < EXIT_TIMEOUT, "the daemon does not listen on {addr}");
        std::thread::sleep(Duration::from_millis(10));
    };
    c.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
    let stats = stats_map(&mut c, "");
    assert_eq!(stats.get("pid").map(String::as_str), Some(pid.to_string().as_str()), "the pid file names the server");
    drop(guard);
    let t0 = Instant::now();
    while alive(pid) {
        assert!(t0.elapsed() < EXIT_TIMEOUT, "the daemon outlived SIGTERM");
        std::thread::sleep(Duration::from_millis(10));
    }
    // Both remove the pid file at a clean exit in daemon mode.
    let t0 = Instant::now();
    while pidfile.exists() {
        assert!(t0.elapsed() < Duration::from_secs(2), "the pid file stays after the daemon's exit");
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn daemon_mode_reports_a_failed_start() {
    if skip_unless_amalgam("-d reporting the child's start-up error") {
        return;
    }
    let holder = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = holder.local_addr().unwrap().port().to_string();
    let out = Command::new(binary())
        .args(["-d", "-l", "127.0.0.1", "-p", &port, "--resp-port", "0"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "-d on a taken port must fail");
    assert!(err.contains("Address already in use") && err.contains("-p"), "stderr: {err}");
}

#[test]
fn a_taken_default_resp_port_leaves_memcached_serving() {
    if skip_unless_amalgam("the RESP port's fallback") {
        return;
    }
    // Hold 6379 unless someone (a system Redis) already does: either way
    // the default RESP port is taken when the server starts.
    let _holder = match TcpListener::bind("127.0.0.1:6379") {
        Ok(l) => Some(l),
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => None,
        Err(e) => panic!("cannot probe 127.0.0.1:6379: {e}"),
    };
    let err_file = std::env::temp_dir().join(format!("amalgam-resp-fallback-{}.err", std::process::id()));
    let _ = std::fs::remove_file(&err_file);
    // No --resp-port: the default.
    let s = Server::spawn_with(&[], Some((free_port(), None)), Some(&err_file)).expect("starts without RESP");
    let mut c = s.connect();
    exchange(&mut c, b"set k 0 0 1\r\nx\r\nget k\r\n", b"STORED\r\nVALUE k 0 1\r\nx\r\nEND\r\n");
    let err = std::fs::read_to_string(&err_file).unwrap_or_default();
    assert!(
        err.contains("warning: cannot listen for RESP on 127.0.0.1:6379")
            && err.contains("serving memcached's protocol only"),
        "stderr: {err}"
    );
    assert_eq!(err.matches("warning: cannot listen for RESP").count(), 1, "warned once: {err}");
    drop(s);
    let _ = std::fs::remove_file(&err_file);
}

#[test]
fn a_taken_explicit_resp_port_stops_the_start() {
    if skip_unless_amalgam("--resp-port") {
        return;
    }
    let holder = TcpListener::bind("127.0.0.1:0").unwrap();
    let resp = holder.local_addr().unwrap().port().to_string();
    let (code, err) = refused_start(&mut command(&["--resp-port", &resp]));
    assert_ne!(code, 0);
    assert!(
        err.contains(&format!("cannot listen for RESP on 127.0.0.1:{resp}")) && err.contains("Address already in use"),
        "stderr: {err}"
    );
    assert!(err.contains("--resp-port 0"), "says what to do: {err}");
}

#[test]
fn two_servers_side_by_side_with_the_default_resp_port() {
    if skip_unless_amalgam("the RESP port's fallback") {
        return;
    }
    // Whoever holds 6379 (the first server, a Redis, or this holder), the
    // second memcached-only start must not stop on it.
    let _holder = TcpListener::bind("127.0.0.1:6379").ok();
    let a = Server::spawn_with(&[], Some((free_port(), None)), None).expect("first starts");
    let b = Server::spawn_with(&[], Some((free_port(), None)), None).expect("second starts");
    for s in [&a, &b] {
        let mut c = s.connect();
        exchange(&mut c, b"version\r\n", b"VERSION ");
    }
}

#[test]
fn start_up_errors_say_what_to_do() {
    if skip_unless_amalgam("amalgam's start-up messages") {
        return;
    }
    let cases: &[(&[&str], &[&str])] = &[
        (&["-m", "100000000"], &["-m takes megabytes", "16777216"]),
        (&["-m", "-1"], &["-m takes megabytes"]),
        (&["-m", "1g"], &["no unit"]),
        // Not an address here: binding fails locally (nothing is sent).
        (&["-l", "10.9.9.9"], &["10.9.9.9 is not an address of this machine", "-l"]),
        (&["--dir", "/proc/self/status"], &["is a file, not a directory"]),
    ];
    for (args, wants) in cases {
        let mut cmd = Command::new(binary());
        // -l last so the case's own -l wins.
        cmd.args(["-p", &free_port().to_string(), "--resp-port", "0", "-l", "127.0.0.1"])
            .args(*args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let (code, err) = refused_start(&mut cmd);
        assert_ne!(code, 0, "{args:?}");
        for w in *wants {
            assert!(err.contains(w), "{args:?}: wanted {w:?} in: {err}");
        }
        for misleading in ["give more memory", "is another server", "File exists", "unexpected argument"] {
            assert!(!err.contains(misleading), "{args:?}: misleading {misleading:?}: {err}");
        }
    }
}

#[test]
fn disable_evictions_refuses_instead_of_evicting() {
    let Some(s) = Server::with_flags(&["-M", "-m", "4"]) else { return };
    let mut c = s.connect();
    let value = "v".repeat(100 * 1024);
    let mut refused = false;
    for i in 0..200 {
        let reply = line(&mut c, format!("set big{i} 0 0 {}\r\n{value}\r\n", value.len()).as_bytes());
        if reply == "SERVER_ERROR out of memory storing object\r\n" {
            refused = true;
            break;
        }
        assert_eq!(reply, "STORED\r\n", "set big{i}");
    }
    assert!(refused, "20 MB into -m 4 without a refusal");
    // Nothing was evicted to make room.
    let first = request(&mut c, b"get big0\r\n", b"END\r\n");
    assert!(first.starts_with(b"VALUE big0 0 102400\r\n"), "{}", show(&first));
    assert_eq!(stat(&mut c, "evictions"), 0);
}

#[test]
fn a_missing_auth_file_stops_the_start() {
    // memcached: "Could not open authfile [...] for reading", exit 1.
    let mut cmd = command(&["-Y", "/nonexistent/amalgam-authfile"]);
    if !is_memcached_bin() {
        cmd.args(["--resp-port", "0"]);
    }
    let (code, err) = refused_start(&mut cmd);
    assert_eq!(code, 1, "stderr: {err}");
    assert!(err.contains("/nonexistent/amalgam-authfile"), "names the file: {err}");
}

/// Secure defaults (issue 20): bound beyond this machine without `-Y`, the
/// memcached port says loudly at start that anyone can reach every key;
/// on loopback, or with an authfile, it says nothing; UDP is off unless
/// asked for (and amalgam refuses to turn it on).
#[test]
fn the_memcached_port_warns_when_it_listens_beyond_this_machine_without_authentication() {
    if skip_unless_amalgam("the start-up warning") {
        return;
    }
    let dir = TempDir::new("secure-defaults");
    // The harness authenticates its readiness probe with its own user.
    let authfile = dir.file("auth", &format!("{TEST_AUTHFILE_USER}:{TEST_AUTHFILE_PASSWORD}\nalice:pw1\n"));
    let authfile = authfile.to_string_lossy().into_owned();
    let warning = "WARNING: the memcached port listens on 0.0.0.0:";
    for (args, warns) in
        [(&["-l", "0.0.0.0"][..], true), (&[][..], false), (&["-l", "0.0.0.0", "-Y", &authfile][..], false)]
    {
        let err_file = dir.0.join("stderr");
        let _ = std::fs::remove_file(&err_file);
        let s = Server::spawn_with(args, Some((free_port(), Some(free_port()))), Some(&err_file)).expect("starts");
        if !args.contains(&"-Y") {
            // Served on loopback either way; UDP off by default.
            let mut c = s.connect();
            let settings = request(&mut c, b"stats settings\r\n", b"END\r\n");
            assert!(String::from_utf8_lossy(&settings).contains("STAT udpport 0\r\n"));
        }
        drop(s);
        let err = std::fs::read_to_string(&err_file).unwrap_or_default();
        assert_eq!(err.contains(warning), warns, "{args:?}: {err}");
        if warns {
            assert!(err.contains("anyone who can reach it can read, change and flush every key"), "{err}");
        }
    }
    let (code, err) = refused_start(&mut command(&["-U", "11211"]));
    assert_ne!(code, 0);
    assert!(err.contains("UDP is not supported"), "{err}");
}

/// memcached 1.6.18's `-h` flags with a value each, as command lines
/// carry them: each starts and serves (issue 39 §2). `-e` gets a file of
/// its own (memcached maps 64 MiB of it: sparse, removed after).
#[test]
fn every_memcached_flag_starts_and_serves() {
    let mem_file = std::env::temp_dir().join(format!("amalgam-startup-e-{}", std::process::id()));
    let mem_file = mem_file.to_string_lossy().into_owned();
    let lines: &[&[&str]] = &[
        &["-B", "ascii"],
        &["-B", "auto"],
        &["-b", "512"],
        &["-R", "10"],
        &["-n", "48"],
        &["-f", "1.25"],
        &["-L"],
        &["-D", "#"],
        &["-a", "755"],
        &["-W"],
        &["-N", "1"],
        &["-r", "-k", "-v"],
        &["-e", &mem_file],
    ];
    for args in lines {
        let Some(s) = Server::with_flags(args) else { return };
        let mut c = s.connect();
        exchange(&mut c, b"set k 0 0 1\r\nx\r\n", b"STORED\r\n");
        exchange(&mut c, b"get k\r\n", b"VALUE k 0 1\r\nx\r\nEND\r\n");
    }
    let _ = std::fs::remove_file(&mem_file);
    let _ = std::fs::remove_file(format!("{mem_file}.meta"));
}

/// A child killed and reaped when dropped.
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A binary no-op request (`0x80 0x0a`: its opcode byte is a newline).
const BINARY_NOOP: [u8; 24] = {
    let mut h = [0u8; 24];
    h[0] = 0x80;
    h[1] = 0x0a;
    h
};

#[test]
fn protocol_ascii_reads_binary_requests_as_text() {
    let Some(s) = Server::with_flags(&["-B", "ascii"]) else { return };
    let mut c = s.connect();
    // memcached reads the header's bytes up to its 0x0a as a line: ERROR
    // (the 22 NULs after it wait for a newline of their own).
    exchange(&mut c, &BINARY_NOOP, b"ERROR\r\n");
    exchange(&mut s.connect(), b"version\r\n", b"VERSION ");
}

#[test]
fn protocol_binary_closes_a_text_client() {
    // The harness asks `stats` in text to see a server start: here the
    // start is watched with a binary no-op instead.
    if external_addr().is_some() {
        return;
    }
    let port = free_port();
    let mut cmd = Command::new(binary());
    cmd.args(["-l", "127.0.0.1", "-p", &port.to_string(), "-U", "0", "-B", "binary"]);
    if is_memcached_bin() && is_root() {
        cmd.args(["-u", "root"]);
    }
    if !is_memcached_bin() {
        cmd.args(["--resp-port", "0"]);
    }
    let _child = Reaped(cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap());
    let t0 = Instant::now();
    let mut c = loop {
        if let Ok(c) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            break c;
        }
        assert!(t0.elapsed() < EXIT_TIMEOUT, "-B binary did not start listening");
        std::thread::sleep(Duration::from_millis(10));
    };
    c.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
    send(&mut c, &BINARY_NOOP);
    assert_eq!(&read_n(&mut c, 24)[..2], &[0x81, 0x0a], "the binary no-op is answered");
    let mut t = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    t.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
    send(&mut t, b"version\r\nversion\r\nversion\r\n");
    assert!(closed(&mut t), "a text request on a -B binary port closes the connection");
}

#[test]
fn memcacheds_refusals_of_b_and_e() {
    let (code, err) = refused_start(&mut command(&["-B", "foo"]));
    assert_eq!(code, 64, "stderr: {err}");
    assert!(
        err.contains("Invalid value for binding protocol: foo\n -- should be one of auto, binary, or ascii"),
        "stderr: {err}"
    );
    // memcached aborts after its message (status 134); amalgam exits 64.
    let (code, err) = refused_start(&mut command(&["-e", "/nonexistent/amalgam/memfile"]));
    assert_ne!(code, 0, "stderr: {err}");
    assert!(err.contains("failed to open file for mmap: No such file or directory"), "stderr: {err}");
}

#[test]
fn license_prints_and_exits() {
    let (code, _) = refused_start(&mut command(&["-i"]));
    assert_eq!(code, 0);
}

#[test]
fn unix_socket_and_sasl_stop_the_start_saying_why() {
    if skip_unless_amalgam("-s and -S refused at start") {
        return;
    }
    let (code, err) = refused_start(&mut command(&["-s", "/tmp/amalgam-test.sock"]));
    assert_eq!(code, 64, "stderr: {err}");
    assert!(err.contains("unix sockets are not served yet"), "stderr: {err}");
    let (code, err) = refused_start(&mut command(&["-S"]));
    assert_eq!(code, 64, "stderr: {err}");
    assert!(err.contains("-Y FILE"), "stderr: {err}");
    assert!(!err.contains("unexpected argument"), "stderr: {err}");
}
