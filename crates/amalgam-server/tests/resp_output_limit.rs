//! Redis's `client-output-buffer-limit` for normal clients, black-box:
//! CONFIG SET/GET of the value (one class, several, Redis's errors), a
//! client that pipelines large GETs without reading is closed past the
//! hard limit (and past the soft limit after its seconds) while another
//! client keeps being served and nothing it wrote is lost, and a KEYS
//! reply bigger than the hard limit closes its client (and is never
//! built whole: the server's peak memory does not grow by it). Runs against
//! amalgam and, in CI, against Debian's redis-server
//! (`AMALGAM_TEST_RESP_ADDR`), which behaves the same; the tests change
//! the server's limits, so against a shared server they run one at a time
//! and put the value back.
mod common;
use common::resp::*;
use common::*;
use std::io::{ErrorKind, Read};
use std::sync::Mutex;
use std::time::Duration;

/// Tests sharing one external server must not change its limits at once.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Size of each value the slow reader asks for.
const VALUE_BYTES: usize = 100_000;
/// GETs the slow reader pipelines: 30 MB of replies, far past what the
/// kernel's socket buffers take on loopback (a few MB), so the rest must
/// wait in the server's output buffer.
const GETS: usize = 300;

/// Puts the server's `client-output-buffer-limit` back when dropped (even
/// when the test fails), as it was when made.
struct Restore {
    c: Resp,
    value: String,
}

impl Restore {
    fn new(server: &Server) -> Restore {
        let mut c = Resp::new(server);
        let value = c.config_get("client-output-buffer-limit");
        Restore { c, value }
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        let value = self.value.clone();
        let _ = self.c.call(&["CONFIG", "SET", "client-output-buffer-limit", &value]);
    }
}

/// Reads until the server closes (EOF or reset) or nothing comes for
/// [`READ_TIMEOUT`]: (closed, bytes received).
fn drain(c: &mut Resp) -> (bool, usize) {
    let mut b = vec![0u8; 1 << 20];
    let mut got = 0;
    loop {
        match c.s.read(&mut b) {
            Ok(0) => return (true, got),
            Ok(n) => got += n,
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return (true, got),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return (false, got),
        }
    }
}

/// The pipelined GETs of `key`, `n` of them, as one write.
fn gets(key: &str, n: usize) -> Vec<u8> {
    encode(&[b"GET", key.as_bytes()]).repeat(n)
}

#[test]
fn config_set_and_get_as_redis() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(server) = resp_server() else { return };
    let _restore = Restore::new(&server);
    let mut c = Resp::new(&server);
    assert_eq!(c.call(&["CONFIG", "SET", "client-output-buffer-limit", "normal 64mb 32mb 60"]), "+OK\r\n");
    // Both servers' defaults for the other classes.
    assert_eq!(
        c.config_get("client-output-buffer-limit"),
        "normal 67108864 33554432 60 slave 268435456 67108864 60 pubsub 33554432 8388608 60"
    );
    // Several classes at once; `replica` is `slave`; k is 1000.
    assert_eq!(
        c.call(&["CONFIG", "SET", "client-output-buffer-limit", "replica 1mb 2mb 3 PUBSUB 1k 2kb 4"]),
        "+OK\r\n"
    );
    assert_eq!(
        c.config_get("client-output-buffer-limit"),
        "normal 67108864 33554432 60 slave 1048576 2097152 3 pubsub 1000 2048 4"
    );
    let refused = |why: &str| {
        format!("-ERR CONFIG SET failed (possibly related to argument 'client-output-buffer-limit') - {why}\r\n")
    };
    for (bad, why) in [
        ("normal 1 2", "Wrong number of arguments in buffer limit configuration."),
        ("normal 1 2 3 pubsub 1", "Wrong number of arguments in buffer limit configuration."),
        ("master 1 2 3", "Invalid client class specified in buffer limit configuration."),
        ("normal 1 2 3 nobody 1 2 3", "Invalid client class specified in buffer limit configuration."),
        ("normal x 2 3", "Error in hard, soft or soft_seconds setting in buffer limit configuration."),
        ("normal -1 2 3", "Error in hard, soft or soft_seconds setting in buffer limit configuration."),
        ("normal 1 2 1kb", "Error in hard, soft or soft_seconds setting in buffer limit configuration."),
    ] {
        assert_eq!(c.call(&["CONFIG", "SET", "client-output-buffer-limit", bad]), refused(why), "{bad}");
    }
    // A refused value changed nothing, not even its valid groups.
    assert_eq!(
        c.config_get("client-output-buffer-limit"),
        "normal 67108864 33554432 60 slave 1048576 2097152 3 pubsub 1000 2048 4"
    );
    // Nothing named: nothing changes.
    assert_eq!(c.call(&["CONFIG", "SET", "client-output-buffer-limit", ""]), "+OK\r\n");
    assert_eq!(
        c.config_get("client-output-buffer-limit"),
        "normal 67108864 33554432 60 slave 1048576 2097152 3 pubsub 1000 2048 4"
    );
}

#[test]
fn a_client_that_does_not_read_is_closed_past_the_hard_limit() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(server) = resp_server() else { return };
    let _restore = Restore::new(&server);
    let mut other = Resp::new(&server);
    let key = format!("obuf:hard:{}", std::process::id());
    let value = "v".repeat(VALUE_BYTES);
    assert_eq!(other.call(&["SET", &key, &value]), "+OK\r\n");
    assert_eq!(other.call(&["CONFIG", "SET", "client-output-buffer-limit", "normal 1mb 0 0"]), "+OK\r\n");
    let before = disconnections(&mut other);

    // The slow reader writes a key, then asks for 30 MB and reads nothing.
    let written = format!("{key}:written");
    let mut slow = Resp::new(&server);
    let mut batch = encode(&[b"SET", written.as_bytes(), b"kept"]);
    batch.extend(gets(&key, GETS));
    slow.send_raw(&batch);
    std::thread::sleep(Duration::from_millis(500));

    // Meanwhile another client is served, and finds every write.
    for _ in 0..20 {
        assert_eq!(other.call(&["GET", &key]), bulk(&value));
    }
    assert_eq!(other.call(&["GET", &written]), bulk("kept"));

    let (closed, got) = drain(&mut slow);
    assert!(closed, "the slow reader was closed");
    assert!(got < GETS * VALUE_BYTES, "closed before its replies were all out ({got} bytes came)");
    if let Some(before) = before {
        assert!(disconnections(&mut other).unwrap() > before, "counted in INFO stats");
    }
    assert_eq!(other.call(&["DEL", &key, &written]), int(2));
}

#[test]
fn a_pipeline_after_the_hard_limit_is_not_executed() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(server) = resp_server() else { return };
    let _restore = Restore::new(&server);
    let mut other = Resp::new(&server);
    let key = format!("obuf:cut:{}", std::process::id());
    let value = "v".repeat(VALUE_BYTES);
    assert_eq!(other.call(&["SET", &key, &value]), "+OK\r\n");
    assert_eq!(other.call(&["CONFIG", "SET", "client-output-buffer-limit", "normal 200kb 0 0"]), "+OK\r\n");

    // One write (one read, one round): a SET, ten GETs of 100 KB (1 MB of
    // replies: past the 200 KB limit, below the 1 MiB high-water mark),
    // then a SET. Redis runs nothing more for a client past its hard
    // limit (CLIENT_CLOSE_ASAP), and neither does amalgam.
    let (before, marker) = (format!("{key}:before"), format!("{key}:marker"));
    let mut batch = encode(&[b"SET", before.as_bytes(), b"b"]);
    batch.extend(gets(&key, 10));
    batch.extend(encode(&[b"SET", marker.as_bytes(), b"m"]));
    let mut slow = Resp::new(&server);
    slow.send_raw(&batch);
    std::thread::sleep(Duration::from_millis(300));

    for _ in 0..5 {
        assert_eq!(other.call(&["GET", &key]), bulk(&value), "another client is served");
    }
    let (closed, got) = drain(&mut slow);
    assert!(closed && got < 10 * VALUE_BYTES, "the pipelining client was closed ({got} bytes came)");
    assert_eq!(other.call(&["GET", &before]), bulk("b"));
    assert_eq!(other.call(&["EXISTS", &marker]), int(0), "the SET after the limit ran");
    assert_eq!(other.call(&["DEL", &key, &before]), int(2));
}

#[test]
fn past_the_soft_limit_for_its_seconds_a_client_is_closed() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(server) = resp_server() else { return };
    let _restore = Restore::new(&server);
    let mut other = Resp::new(&server);
    let key = format!("obuf:soft:{}", std::process::id());
    let value = "v".repeat(VALUE_BYTES);
    assert_eq!(other.call(&["SET", &key, &value]), "+OK\r\n");
    assert_eq!(other.call(&["CONFIG", "SET", "client-output-buffer-limit", "normal 0 512kb 1"]), "+OK\r\n");
    let mut slow = Resp::new(&server);
    slow.send_raw(&gets(&key, GETS));
    // Over the soft limit, and still there past its second (Redis looks
    // again when more output is appended: one more GET).
    std::thread::sleep(Duration::from_millis(2500));
    let _ = std::io::Write::write_all(&mut slow.s, &gets(&key, 1));
    assert_eq!(other.call(&["GET", &key]), bulk(&value));
    let (closed, got) = drain(&mut slow);
    assert!(closed, "the slow reader was closed");
    assert!(got < GETS * VALUE_BYTES, "closed before its replies were all out ({got} bytes came)");
    assert_eq!(other.call(&["DEL", &key]), int(1));
}

#[test]
fn a_reply_bigger_than_the_hard_limit_closes_its_client() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(server) = resp_server() else { return };
    let _restore = Restore::new(&server);
    let mut c = Resp::new(&server);
    let prefix = format!("obuf:keys:{}:", std::process::id());
    // 5,000 keys of ~30 bytes: a KEYS reply of ~190 KB.
    let names: Vec<String> = (0..5000).map(|i| format!("{prefix}{i:06}")).collect();
    for chunk in names.chunks(500) {
        let mut args: Vec<&str> = vec!["MSET"];
        for n in chunk {
            args.extend([n.as_str(), "x"]);
        }
        assert_eq!(c.call(&args), "+OK\r\n");
    }
    let pattern = format!("{prefix}*");
    // Under the limit the reply comes whole.
    let all = call(&mut c, &["KEYS", &pattern]);
    assert_eq!(all.array().len(), names.len());
    assert_eq!(c.call(&["CONFIG", "SET", "client-output-buffer-limit", "normal 64kb 0 0"]), "+OK\r\n");
    let mut big = Resp::new(&server);
    big.send(&["KEYS", &pattern]);
    let (closed, got) = drain(&mut big);
    assert!(closed, "KEYS past the hard limit closes its client");
    assert!(got < 64 * 1024, "the reply was not sent ({got} bytes came)");
    // Small replies are still served.
    assert_eq!(c.call(&["EXISTS", &names[0]]), int(1));
    assert_eq!(c.call(&["CONFIG", "SET", "client-output-buffer-limit", "normal 0 0 0"]), "+OK\r\n");
    for chunk in names.chunks(500) {
        let mut args: Vec<&str> = vec!["DEL"];
        args.extend(chunk.iter().map(String::as_str));
        assert_eq!(c.call(&args), int(chunk.len() as i64));
    }
}

/// Keys of the huge-reply test: a KEYS reply of ~25 MB.
const HUGE_KEYS: usize = 800_000;
/// Keys per MSET or DEL while filling and emptying the keyspace.
const KEYS_PER_CALL: usize = 1000;

#[test]
fn a_huge_reply_stops_at_the_hard_limit_and_is_never_held_whole() {
    // The server's peak memory (VmHWM, reset through /proc/PID/clear_refs)
    // while a KEYS reply 25 times the hard limit is asked for: the reply
    // stops at the limit and its client is closed, so the peak grows by
    // about the limit, not by the reply (nor by a list of the keys).
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(server) = resp_server() else { return };
    let _restore = Restore::new(&server);
    let mut c = Resp::new(&server);
    let prefix = format!("obuf:huge:{}:", std::process::id());
    let names: Vec<String> = (0..HUGE_KEYS).map(|i| format!("{prefix}{i:07}")).collect();
    for chunk in names.chunks(KEYS_PER_CALL) {
        let mut args: Vec<&str> = vec!["MSET"];
        for n in chunk {
            args.extend([n.as_str(), "x"]);
        }
        assert_eq!(c.call(&args), "+OK\r\n");
    }
    // `$<len>\r\n<name>\r\n` per key.
    let reply_bytes: usize = names.iter().map(|n| n.len() + 2 + 2 + n.len().to_string().len() + 1).sum();
    let pid: u32 = call(&mut c, &["INFO", "server"])
        .bulk()
        .lines()
        .find_map(|l| l.strip_prefix("process_id:"))
        .expect("INFO server's process_id")
        .trim()
        .parse()
        .unwrap();
    assert_eq!(c.call(&["CONFIG", "SET", "client-output-buffer-limit", "normal 1mb 0 0"]), "+OK\r\n");
    let before = disconnections(&mut c);
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").expect("reset the server's VmHWM (same user, Linux)");
    let rss = proc_status_kb(pid, "VmRSS:");
    let mut big = Resp::new(&server);
    big.send(&["KEYS", &format!("{prefix}*")]);
    let (closed, got) = drain(&mut big);
    assert!(closed, "KEYS past the hard limit closes its client");
    assert!(got < 1 << 20, "the reply was not sent ({got} bytes came)");
    // The other clients are served, and everything is still there.
    assert_eq!(c.call(&["EXISTS", &names[0], &names[HUGE_KEYS - 1]]), int(2));
    let grown_kb = proc_status_kb(pid, "VmHWM:").saturating_sub(rss);
    eprintln!("KEYS of a {reply_bytes}-byte reply cut at 1 MiB: the server's peak grew by {grown_kb} KiB");
    assert!(
        grown_kb * 1024 < reply_bytes / 4,
        "the server's peak grew by {grown_kb} KiB for a {reply_bytes}-byte reply cut at 1 MiB"
    );
    if let Some(before) = before {
        assert!(disconnections(&mut c).unwrap() > before, "counted in INFO stats");
    }
    assert_eq!(c.call(&["CONFIG", "SET", "client-output-buffer-limit", "normal 0 0 0"]), "+OK\r\n");
    for chunk in names.chunks(KEYS_PER_CALL) {
        let mut args: Vec<&str> = vec!["DEL"];
        args.extend(chunk.iter().map(String::as_str));
        assert_eq!(c.call(&args), int(chunk.len() as i64));
    }
}

/// A `/proc/PID/status` line's value in KiB (`VmRSS:`, `VmHWM:`).
fn proc_status_kb(pid: u32, field: &str) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the server's /proc status");
    let line = status.lines().find_map(|l| l.strip_prefix(field)).unwrap_or_else(|| panic!("{field} in {status}"));
    line.trim().trim_end_matches("kB").trim().parse().unwrap()
}

/// INFO stats' `client_output_buffer_limit_disconnections` (Redis 7.2's
/// field; None where the server has none, as Redis 7.0).
fn disconnections(c: &mut Resp) -> Option<u64> {
    let info = call(c, &["INFO", "stats"]);
    info.bulk()
        .lines()
        .find_map(|l| l.strip_prefix("client_output_buffer_limit_disconnections:"))
        .map(|v| v.trim().parse().unwrap())
}

#[test]
fn amalgam_default_and_start_flag() {
    // Amalgam's own default (Redis's normal class is 0 0 0) and the
    // setting from the command line.
    let Some(server) = resp_private(&[]) else { return };
    let mut c = Resp::new(&server);
    assert_eq!(
        c.config_get("client-output-buffer-limit"),
        "normal 1073741824 67108864 60 slave 268435456 67108864 60 pubsub 33554432 8388608 60"
    );
    let Some(server) = resp_private(&[
        "--client-output-buffer-limit",
        "normal 2mb 1mb 5",
        "--client-output-buffer-limit-pubsub",
        "3m",
    ]) else {
        return;
    };
    let mut c = Resp::new(&server);
    assert_eq!(
        c.config_get("client-output-buffer-limit"),
        "normal 2097152 1048576 5 slave 268435456 67108864 60 pubsub 3145728 8388608 60"
    );
}
