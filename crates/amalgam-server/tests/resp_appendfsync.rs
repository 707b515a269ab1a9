//! CONFIG SET appendfsync at run time, `always` included (amalgam-persist
//! `Persistence::set_fsync`). Amalgam's own: it needs a server with
//! `--dir` that it kills and starts again, so it skips against an
//! external server (redis-server's own switch is not in question).
//!
//! What can fail: under `always` every acknowledged write on one
//! connection is its own fdatasync (a sequential client's writes cannot
//! share one), so INFO's `amalgam_log_fsyncs` grows by at least one per
//! write; under `no` (snapshots off) nothing syncs the log, so it does not
//! grow at all. SIGKILL alone could not tell the two apart (written bytes
//! survive a process's death); the counter does.
mod common;
use common::resp::*;
use common::*;

/// Writes per phase.
const WRITES: usize = 50;

fn info_field(c: &mut Resp, name: &str) -> u64 {
    let info = c.call(&["INFO", "persistence"]);
    let line = info.lines().find(|l| l.starts_with(&format!("{name}:"))).unwrap_or_else(|| panic!("{info}"));
    line.split_once(':').unwrap().1.trim().parse().unwrap()
}

fn fsyncs(c: &mut Resp) -> u64 {
    info_field(c, "amalgam_log_fsyncs")
}

/// CONFIG GET appendfsync's value.
fn policy(c: &mut Resp) -> String {
    let r = c.call(&["CONFIG", "GET", "appendfsync"]);
    r.rsplit("\r\n").nth(1).unwrap().to_string()
}

/// WRITES sequential SETs `prefix:i`, each acknowledged before the next.
fn writes(c: &mut Resp, prefix: &str) {
    for i in 0..WRITES {
        assert_eq!(c.call(&["SET", &format!("{prefix}:{i}"), &format!("v{i}")]), OK);
    }
}

fn all_there(c: &mut Resp, prefix: &str) {
    for i in 0..WRITES {
        assert_eq!(c.call(&["GET", &format!("{prefix}:{i}")]), bulk(&format!("v{i}")), "{prefix}:{i} survived");
    }
}

/// Started with `no`, switched to `always`: each write is fsynced before
/// its reply; switched back to `no`: none is; then `always` again and
/// SIGKILL: every acknowledged write is there after the restart.
#[test]
fn appendfsync_switches_to_and_from_always() {
    let dir = std::env::temp_dir().join(format!("amalgam-appendfsync-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let dir_arg = dir.to_string_lossy().into_owned();
    let args = [
        "--dir",
        dir_arg.as_str(),
        "--fsync",
        "no",
        "--snapshot-every",
        "0",
        "--snapshot-after-writes",
        "0",
        "-t",
        "2",
    ];
    let Some(mut server) = resp_private(&args) else { return };
    let mut c = Resp::new(&server);
    assert_eq!(policy(&mut c), "no");

    let before = fsyncs(&mut c);
    writes(&mut c, "no0");
    assert_eq!(fsyncs(&mut c), before, "under `no` nothing syncs the log");

    assert_eq!(c.call(&["CONFIG", "SET", "appendfsync", "always"]), OK);
    assert_eq!(policy(&mut c), "always");
    let before = fsyncs(&mut c);
    writes(&mut c, "always1");
    let after = fsyncs(&mut c);
    assert!(after - before >= WRITES as u64, "an fsync per acknowledged write: {before} -> {after}");

    assert_eq!(c.call(&["CONFIG", "SET", "appendfsync", "no"]), OK);
    let before = fsyncs(&mut c);
    writes(&mut c, "no2");
    assert_eq!(fsyncs(&mut c), before, "back to `no`: no fsync");

    assert_eq!(c.call(&["CONFIG", "SET", "appendfsync", "always"]), OK);
    let before = fsyncs(&mut c);
    writes(&mut c, "always3");
    assert!(fsyncs(&mut c) - before >= WRITES as u64);

    let ports = server.ports();
    server.kill9();
    drop(server);
    let server = Server::spawn_with(&args, Some(ports), None).expect("restart on the same directory");
    let mut c = Resp::new(&server);
    for prefix in ["no0", "always1", "no2", "always3"] {
        all_there(&mut c, prefix);
    }
    assert_eq!(policy(&mut c), "no", "a restart takes --fsync again (CONFIG REWRITE would keep it)");
    drop(c);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Started with `always`, switched to `everysec`: writes are acknowledged
/// without one fsync each (the fsync thread syncs about once a second:
/// at most one per second elapsed, plus one in flight).
#[test]
fn appendfsync_leaves_always_for_everysec() {
    let dir = std::env::temp_dir().join(format!("amalgam-appendfsync-es-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let dir_arg = dir.to_string_lossy().into_owned();
    let args =
        ["--dir", dir_arg.as_str(), "--fsync", "always", "--snapshot-every", "0", "--snapshot-after-writes", "0"];
    let Some(server) = resp_private(&args) else { return };
    let mut c = Resp::new(&server);
    let before = fsyncs(&mut c);
    writes(&mut c, "a");
    assert!(fsyncs(&mut c) - before >= WRITES as u64, "started with always");
    assert_eq!(c.call(&["CONFIG", "SET", "appendfsync", "everysec"]), OK);
    let start = std::time::Instant::now();
    let before = fsyncs(&mut c);
    writes(&mut c, "b");
    let synced = fsyncs(&mut c) - before;
    let bound = start.elapsed().as_secs() + 2;
    assert!(synced <= bound, "everysec: {synced} fsyncs in {:?}", start.elapsed());
    all_there(&mut c, "b");
    drop(c);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
