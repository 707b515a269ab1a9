//! Amalgam's operations that touch files and restarts (issue 21 §3):
//! `--version`, the config file (good and bad files, flags overriding it),
//! CONFIG SET/REWRITE round trips through a restart, log levels changed at
//! run time, SHUTDOWN SAVE/NOSAVE with `--dir`. Amalgam-only (skipped with
//! a note against memcached or an external server); what Redis shares is
//! in `resp_ops.rs`.
mod common;
use common::resp::*;
use common::*;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// True if the binary under test is amalgam and we start our own servers.
fn amalgam_only() -> bool {
    let own = external_addr().is_none() && external_resp_addr().is_none();
    if !own || !binary().contains("amalgam") {
        eprintln!("note: config files, --version and SHUTDOWN with --dir are amalgam's; skipped");
        return false;
    }
    true
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn version_names_the_build() {
    if !amalgam_only() {
        return;
    }
    for flag in ["--version", "-V"] {
        let out = Command::new(binary()).arg(flag).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{flag}: {out:?}");
        let sha = text.trim().strip_prefix("amalgam ").and_then(|r| r.split_once(" (git ")).map(|(_, r)| r);
        let sha = sha.and_then(|r| r.strip_suffix(')')).unwrap_or_else(|| panic!("{flag}: {text:?}"));
        assert!(sha.len() == 8 && sha.bytes().all(|b| b.is_ascii_hexdigit()), "{text:?}");
    }
}

#[test]
fn a_bad_config_file_stops_the_start_with_the_line() {
    if !amalgam_only() {
        return;
    }
    let dir = TempDir::new("bad");
    let cases = [
        ("# fine\nport 7000\nfoo bar\n", 3, "foo bar", "Bad directive or wrong number of arguments"),
        ("maxmemory 10zz\n", 1, "maxmemory 10zz", "argument must be a memory value"),
        ("port \"7000\n", 1, "port \"7000", "Unbalanced quotes in configuration line"),
        (
            "\nloglevel loud\n",
            2,
            "loglevel loud",
            "argument(s) must be one of the following: debug, verbose, notice, warning",
        ),
        ("slowlog-max-len 1 2\n", 1, "slowlog-max-len 1 2", "wrong number of arguments"),
    ];
    for (text, line, shown, why) in cases {
        let f = dir.file("bad.conf", text);
        let out = Command::new(binary()).args(["--config", s(&f), "-p", "0"]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{text:?}: {err}");
        let want = format!("Reading the configuration file, at line {line}\n>>> '{shown}'\n{why}\n");
        assert!(err.contains("*** FATAL CONFIG FILE ERROR") && err.contains(&want), "{text:?}: {err}");
    }
    let out = Command::new(binary()).args(["--config", s(&dir.0.join("missing.conf"))]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("can't open config file"), "{out:?}");
}

/// The file sets Redis's names and Amalgam's flags; the command line
/// overrides it (the harness's own `--resp-port` overrides the file's
/// `port`); CONFIG SET then REWRITE keeps the comments and puts the
/// changes in, and a restart on the rewritten file has the same settings.
#[test]
fn config_file_flags_override_and_rewrite_survives_a_restart() {
    if !amalgam_only() {
        return;
    }
    let dir = TempDir::new("rewrite");
    let text = "# Amalgam's test config\nport 1\nmaxmemory 100mb\n\n# the slow log\nslowlog-max-len 7\n\
                slowlog-log-slower-than 5000\nloglevel warning\nthreads 2\nhash-max-ziplist-entries 64\n";
    let conf = dir.file("amalgam.conf", text);
    let server = Server::spawn_with(&["--config", s(&conf), "--slowlog-max-len", "9"], None, None).unwrap();
    let mut c = Resp::new(&server);
    assert_ne!(c.config_get("port"), "1", "the command line's --resp-port wins");
    assert_eq!(c.config_get("slowlog-max-len"), "9", "the command line wins");
    assert_eq!(c.config_get("slowlog-log-slower-than"), "5000");
    assert_eq!(c.config_get("maxmemory"), (100u64 << 20).to_string());
    assert_eq!(c.config_get("loglevel"), "warning");
    assert_eq!(c.config_get("io-threads"), "2");
    assert_eq!(c.config_get("hash-max-listpack-entries"), "64");
    let info = c.call(&["INFO", "server"]);
    assert!(info.contains(&format!("config_file:{}\r\n", conf.display())), "{info}");

    for (name, value) in [
        ("slowlog-log-slower-than", "1234"),
        ("loglevel", "verbose"),
        ("hash-max-listpack-entries", "33"),
        ("slowlog-max-len", "11"),
        ("proto-max-bulk-len", "2097152"),
    ] {
        assert_eq!(c.call(&["CONFIG", "SET", name, value]), OK, "{name}");
    }
    assert_eq!(c.call(&["CONFIG", "REWRITE"]), OK);
    let new = std::fs::read_to_string(&conf).unwrap();
    for kept in ["# Amalgam's test config\nport 1\nmaxmemory 100mb\n\n# the slow log\n", "threads 2\n"] {
        assert!(new.contains(kept), "{kept:?} kept in:\n{new}");
    }
    for changed in [
        "slowlog-max-len 11\n",
        "slowlog-log-slower-than 1234\n",
        "loglevel verbose\n",
        "hash-max-ziplist-entries 33\n",
        "# Generated by CONFIG REWRITE\nproto-max-bulk-len 2097152\n",
    ] {
        assert!(new.contains(changed), "{changed:?} in:\n{new}");
    }
    drop(c);
    drop(server);

    let server = Server::spawn_with(&["--config", s(&conf)], None, None).unwrap();
    let mut c = Resp::new(&server);
    for (name, value) in [
        ("slowlog-log-slower-than", "1234"),
        ("loglevel", "verbose"),
        ("hash-max-listpack-entries", "33"),
        ("slowlog-max-len", "11"),
        ("proto-max-bulk-len", "2097152"),
        ("io-threads", "2"),
    ] {
        assert_eq!(c.config_get(name), value, "{name} after the restart");
    }
    // Nothing changed since: a second rewrite leaves the file as it was.
    assert_eq!(c.call(&["CONFIG", "REWRITE"]), OK);
    assert_eq!(std::fs::read_to_string(&conf).unwrap(), new);
}

/// The log level changes at run time: SIGHUP is logged at `verbose`, so
/// it shows in stderr only after CONFIG SET loglevel verbose.
#[test]
fn loglevel_changes_what_is_logged() {
    if !amalgam_only() {
        return;
    }
    let dir = TempDir::new("loglevel");
    let err = dir.0.join("stderr.txt");
    let mut server = Server::spawn_with(&["--loglevel", "warning"], None, Some(&err)).unwrap();
    let pid = server.pid().unwrap().to_string();
    let mut c = Resp::new(&server);
    let hup = || assert!(Command::new("kill").args(["-HUP", &pid]).status().unwrap().success());
    let log = || std::fs::read_to_string(&err).unwrap_or_default();
    hup();
    // The server answers after handling the signal or not: wait for a
    // round trip, then a moment for the signal thread.
    assert_eq!(c.call(&["PING"]), "+PONG\r\n");
    std::thread::sleep(Duration::from_millis(200));
    assert!(!log().contains("SIGHUP"), "logged at warning:\n{}", log());
    assert!(!log().contains("Ready to accept connections"), "notices are off at warning:\n{}", log());
    assert_eq!(c.call(&["CONFIG", "SET", "loglevel", "verbose"]), OK);
    hup();
    eventually("the SIGHUP line at verbose", READ_TIMEOUT, || log().contains(" - SIGHUP"));
    assert!(server.alive(), "SIGHUP never stops the server");
}

fn snapshots(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|d| d.filter_map(Result::ok).filter(|e| e.file_name().to_string_lossy().starts_with("snap-")).count())
        .unwrap_or(0)
}

/// SHUTDOWN SAVE writes a final snapshot, NOSAVE does not; either way the
/// server exits cleanly and every acknowledged write is there after a
/// restart (the log has them).
#[test]
fn shutdown_save_and_nosave_with_a_data_dir() {
    if !amalgam_only() {
        return;
    }
    let dir = TempDir::new("shutdown");
    let data = dir.0.join("data");
    let flags = ["--dir", s(&data), "--snapshot-every", "0", "--snapshot-after-writes", "0"];
    for (how, snapshot) in [("NOSAVE", false), ("SAVE", true)] {
        let before = snapshots(&data);
        let mut server = Server::spawn_with(&flags, None, None).unwrap();
        let mut c = Resp::new(&server);
        assert_eq!(c.call(&["SET", &format!("k-{how}"), how]), OK);
        c.send(&["SHUTDOWN", how]);
        assert!(c.closed(), "SHUTDOWN {how} closes the connection without a reply");
        eventually("the server to exit", READ_TIMEOUT, || !server.alive());
        assert_eq!(snapshots(&data) > before, snapshot, "SHUTDOWN {how}: a snapshot written?");
    }
    let server = Server::spawn_with(&flags, None, None).unwrap();
    let mut c = Resp::new(&server);
    assert_eq!(c.call(&["GET", "k-NOSAVE"]), bulk("NOSAVE"));
    assert_eq!(c.call(&["GET", "k-SAVE"]), bulk("SAVE"));
    // Without --dir there is nowhere to save: refused, the server serves on.
    let server = Server::spawn_with(&[], None, None).unwrap();
    let mut c = Resp::new(&server);
    assert_eq!(c.call(&["SHUTDOWN", "SAVE"]), error("ERR Errors trying to SHUTDOWN. Check logs."));
    assert_eq!(c.call(&["PING"]), "+PONG\r\n");
}

/// CONFIG SET save changes the snapshot schedule of a running server.
#[test]
fn snapshot_schedule_changes_at_run_time() {
    if !amalgam_only() {
        return;
    }
    let dir = TempDir::new("save");
    let data = dir.0.join("data");
    let flags = ["--dir", s(&data), "--snapshot-every", "0", "--snapshot-after-writes", "0"];
    let server = Server::spawn_with(&flags, None, None).unwrap();
    let mut c = Resp::new(&server);
    assert_eq!(c.config_get("save"), "");
    assert_eq!(c.call(&["SET", "k", "v"]), OK);
    assert_eq!(snapshots(&data), 0, "no schedule, no snapshot");
    assert_eq!(c.call(&["CONFIG", "SET", "save", "1 1"]), OK);
    assert_eq!(c.config_get("save"), "1 1");
    eventually("a snapshot on the new schedule", READ_TIMEOUT, || snapshots(&data) > 0);
    assert_eq!(
        c.call(&["CONFIG", "SET", "save", "0 1"]),
        error("ERR CONFIG SET failed (possibly related to argument 'save') - Invalid save parameters")
    );
    assert_eq!(c.call(&["CONFIG", "SET", "save", "3600 1 300 100 60 10000"]), OK);
    assert_eq!(c.config_get("save"), "3600 1 1 100", "Amalgam's timer and counter in Redis's syntax");
}

/// contrib/amalgam.service passes `systemd-analyze verify` (its ExecStart
/// pointed at the binary under test, which must exist for verify), and
/// its config file starts the server (contrib/amalgam.conf, with the
/// harness's ports and a scratch `dir`).
#[test]
fn the_systemd_unit_verifies_and_its_config_starts() {
    if !amalgam_only() {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = TempDir::new("systemd");
    let conf = root.join("contrib/amalgam.conf");
    let server = Server::spawn_with(&["--config", s(&conf), "--dir", s(&dir.0.join("data"))], None, None).unwrap();
    let mut c = Resp::new(&server);
    assert_eq!(c.config_get("save"), "300 1 1 1000000");
    assert_eq!(c.config_get("slowlog-max-len"), "128");
    drop(server);

    let Ok(analyze) = Command::new("systemd-analyze").arg("--version").output() else {
        eprintln!("note: systemd-analyze not installed; the unit is not verified");
        return;
    };
    assert!(analyze.status.success());
    let unit = std::fs::read_to_string(root.join("contrib/amalgam.service")).unwrap();
    let bin = std::fs::canonicalize(binary()).unwrap();
    let unit_path = dir.file("amalgam.service", &unit.replace("/usr/local/bin/amalgam", s(&bin)));
    let out = Command::new("systemd-analyze").args(["verify", s(&unit_path)]).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && !text.contains("amalgam.service:"), "systemd-analyze verify:\n{text}");
}

/// CONFIG SET appendfsync switches between everysec and no at run time,
/// and to and from `always` (whose fsyncs `resp_appendfsync.rs` counts).
#[test]
fn appendfsync_switches_between_everysec_and_no() {
    if !amalgam_only() {
        return;
    }
    let dir = TempDir::new("fsync");
    let data = dir.0.join("data");
    let server = Server::spawn_with(&["--dir", s(&data), "--fsync", "everysec"], None, None).unwrap();
    let mut c = Resp::new(&server);
    assert_eq!(c.call(&["CONFIG", "SET", "appendfsync", "no"]), OK);
    assert_eq!(c.config_get("appendfsync"), "no");
    assert!(c.call(&["INFO", "persistence"]).contains("amalgam_fsync:no\r\n"));
    assert_eq!(c.call(&["SET", "k", "v"]), OK);
    assert_eq!(c.call(&["CONFIG", "SET", "appendfsync", "always"]), OK);
    assert!(c.call(&["INFO", "persistence"]).contains("amalgam_fsync:always\r\n"));
    assert_eq!(c.call(&["SET", "k", "v"]), OK);
    assert_eq!(c.call(&["CONFIG", "SET", "appendfsync", "everysec"]), OK);
    assert_eq!(c.config_get("appendfsync"), "everysec");
    assert_eq!(c.call(&["GET", "k"]), bulk("v"));
    // Without --dir there is no log: only the current value is taken.
    let server = Server::spawn_with(&[], None, None).unwrap();
    let mut c = Resp::new(&server);
    assert_eq!(c.call(&["CONFIG", "SET", "appendfsync", "everysec"]), OK);
    assert_eq!(
        c.call(&["CONFIG", "SET", "appendfsync", "no"]),
        error("ERR CONFIG SET failed (possibly related to argument 'appendfsync') - can't set immutable config")
    );
}

/// Evictions under memory pressure are logged (a warning), and
/// rate-limited: one line per 10 s however many items go.
#[test]
fn evictions_are_logged_once_per_period() {
    if !amalgam_only() {
        return;
    }
    let dir = TempDir::new("evict");
    let err = dir.0.join("stderr.txt");
    let server = Server::spawn_with(&["-m", "8"], None, Some(&err)).unwrap();
    let mut c = Resp::new(&server);
    let value = "x".repeat(1000);
    let lines =
        || std::fs::read_to_string(&err).unwrap_or_default().matches("# evicting under memory pressure").count();
    let mut fill = |from: usize| {
        // Pipelined in runs of 100: 8 MB of 1 KB values is a few
        // thousand SETs; 12 MB is surely past it.
        for run in 0..120 {
            for i in 0..100 {
                c.send(&["SET", &format!("k{}", from + run * 100 + i), &value]);
            }
            for _ in 0..100 {
                assert_eq!(c.reply(), OK);
            }
        }
    };
    fill(0);
    eventually("the eviction warning", READ_TIMEOUT, || lines() == 1);
    fill(1_000_000);
    // The watcher looks once a second: give it two looks.
    std::thread::sleep(Duration::from_millis(2200));
    assert_eq!(lines(), 1, "rate-limited:\n{}", std::fs::read_to_string(&err).unwrap_or_default());
}
