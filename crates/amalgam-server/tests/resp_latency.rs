//! LATENCY (the latency monitor) and `latency-monitor-threshold`,
//! black-box: Redis 7.0's replies for LATEST, HISTORY, RESET, DOCTOR,
//! HISTOGRAM and HELP, and its errors. Runs against amalgam and, in CI,
//! against redis-server 7.0 (`AMALGAM_TEST_RESP_ADDR`): every expectation
//! here is Redis's. The monitor is server-wide, so the tests take turns
//! ([`TURN`]) and put the threshold back to 0 when done. The engine's own
//! events are amalgam's (`amalgam_*` tests, on an amalgam of their own:
//! skipped against redis-server).
mod common;
use common::resp::*;
use common::*;
use std::sync::Mutex;

static TURN: Mutex<()> = Mutex::new(());

/// Sets the threshold back to 0 (off, the default) when dropped.
struct Off(std::net::SocketAddr);

impl Drop for Off {
    fn drop(&mut self) {
        if let Ok(s) = std::net::TcpStream::connect(self.0) {
            let _ = Resp::from_stream(s).call(&["CONFIG", "SET", "latency-monitor-threshold", "0"]);
        }
    }
}

#[test]
fn help_errors_and_the_threshold_setting() {
    let Some(server) = resp_server() else { return };
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let mut c = Resp::new(&server);
    let help = call(&mut c, &["LATENCY", "HELP"]);
    assert_eq!(help.array()[0], V::Simple("LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:".into()));
    assert!(help.array().contains(&V::Simple("HISTORY <event>".into())));
    assert_eq!(c.call(&["LATENCY", "NOSUCH"]), error("ERR unknown subcommand 'NOSUCH'. Try LATENCY HELP."));
    assert_eq!(c.call(&["LATENCY", "HISTORY"]), error("ERR wrong number of arguments for 'latency|history' command"));
    assert_eq!(
        c.call(&["LATENCY", "LATEST", "x"]),
        error("ERR wrong number of arguments for 'latency|latest' command")
    );
    assert_eq!(c.call(&["LATENCY"]), error("ERR wrong number of arguments for 'latency' command"));
    assert!(help.array().contains(&V::Simple("GRAPH <event>".into())));
    assert_eq!(c.call(&["LATENCY", "GRAPH"]), error("ERR wrong number of arguments for 'latency|graph' command"));
    assert_eq!(
        c.call(&["LATENCY", "GRAPH", "a", "b"]),
        error("ERR wrong number of arguments for 'latency|graph' command")
    );
    assert_eq!(
        c.call(&["LATENCY", "GRAPH", "no-such-event"]),
        error("ERR No samples available for event 'no-such-event'")
    );
    let _off = Off(server.resp_addr());
    assert_eq!(c.call(&["CONFIG", "SET", "latency-monitor-threshold", "5"]), "+OK\r\n");
    let got = call(&mut c, &["CONFIG", "GET", "latency-monitor-threshold"]);
    assert_eq!(got.array()[1].bulk(), "5");
    let bad = c.call(&["CONFIG", "SET", "latency-monitor-threshold", "-1"]);
    assert!(
        bad.starts_with("-ERR CONFIG SET failed (possibly related to argument 'latency-monitor-threshold')"),
        "{bad}"
    );
    assert_eq!(call(&mut c, &["LATENCY", "HISTORY", "no-such-event"]), V::Array(vec![]));
    assert_eq!(call(&mut c, &["LATENCY", "RESET", "no-such-event"]), V::Int(0));
}

#[test]
fn a_slow_command_is_sampled_and_reset() {
    let Some(server) = resp_server() else { return };
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let mut c = Resp::new(&server);
    let _off = Off(server.resp_addr());
    assert_eq!(c.call(&["CONFIG", "SET", "latency-monitor-threshold", "1"]), "+OK\r\n");
    // One SADD of 200,000 members: milliseconds on either server.
    let key = "latency:big";
    c.call(&["DEL", key]);
    let members: Vec<String> = (0..200_000).map(|i| format!("member:{i}")).collect();
    let mut args: Vec<&str> = vec!["SADD", key];
    args.extend(members.iter().map(|m| m.as_str()));
    assert_eq!(as_int(&c.call(&args)), 200_000);
    // SADD is flagged fast: Redis files it under "fast-command".
    let latest = call(&mut c, &["LATENCY", "LATEST"]);
    let row = latest
        .array()
        .iter()
        .find(|r| r.array()[0].bulk() == "fast-command")
        .unwrap_or_else(|| panic!("no fast-command event in {latest:?}"))
        .clone();
    let [_, time, last, max] = row.array() else { panic!("four fields: {row:?}") };
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    assert!((now - 60..=now + 1).contains(&time.int()), "{time:?}");
    assert!(last.int() >= 1 && max.int() >= last.int(), "{row:?}");
    let history = call(&mut c, &["LATENCY", "HISTORY", "fast-command"]);
    assert!(!history.array().is_empty());
    for s in history.array() {
        assert_eq!(s.array().len(), 2, "[time, ms]: {s:?}");
        assert!(s.array()[1].int() >= 1);
    }
    let doctor = call(&mut c, &["LATENCY", "DOCTOR"]);
    assert!(doctor.bulk().contains("fast-command"), "{doctor:?}");
    // Redis's sparkline: title, a rule of 80 dashes, four rows of bars
    // (one column per sample), a blank row, then each sample's age
    // written downwards ("0s" for this second's).
    let graph = call(&mut c, &["LATENCY", "GRAPH", "fast-command"]);
    let lines: Vec<&str> = graph.bulk().lines().collect();
    assert!(lines[0].starts_with("fast-command - high ") && lines[0].contains(" ms (all time high "), "{lines:?}");
    assert_eq!(lines[1], "-".repeat(80));
    let columns = history.array().len();
    assert!(lines[2..6].iter().all(|l| l.len() == columns), "{lines:?}");
    assert!(lines[5].chars().all(|ch| "_o#|".contains(ch)), "every sample has a bar on the bottom row: {lines:?}");
    assert_eq!(lines[6], " ".repeat(columns));
    assert!(lines[8].ends_with('s'), "the newest sample's age in seconds: {lines:?}");
    assert_eq!(call(&mut c, &["LATENCY", "RESET", "fast-command", "no-such-event"]), V::Int(1));
    c.call(&["DEL", key]);
}

#[test]
fn histogram_is_cumulative_per_command() {
    let Some(server) = resp_server() else { return };
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let mut c = Resp::new(&server);
    c.call(&["SET", "latency:k", "v"]);
    c.call(&["GET", "latency:k"]);
    let h = call(&mut c, &["LATENCY", "HISTOGRAM", "get", "set", "no-such-command"]);
    let h = h.array();
    assert_eq!(h.len(), 4, "get and set, each name then its map: {h:?}");
    for pair in h.chunks(2) {
        assert!(["get", "set"].contains(&pair[0].bulk()), "{pair:?}");
        let m = pair[1].array();
        assert_eq!(m[0].bulk(), "calls");
        let calls = m[1].int();
        assert!(calls >= 1);
        assert_eq!(m[2].bulk(), "histogram_usec");
        let buckets = m[3].array();
        assert!(!buckets.is_empty() && buckets.len() % 2 == 0, "{buckets:?}");
        let mut prev = (0, 0);
        for b in buckets.chunks(2) {
            let (us, n) = (b[0].int(), b[1].int());
            assert!(us > prev.0 && n > prev.1, "bucket bounds and counts both grow: {buckets:?}");
            prev = (us, n);
        }
        assert_eq!(prev.1, calls, "the last bucket counts every call");
    }
}

/// How long the engine's event may take to show (a bound on waiting, not
/// a speed asserted: the expiry sweep steps every 250 ms).
const EVENT_WAIT: std::time::Duration = std::time::Duration::from_secs(20);

/// An engine stall through the real server: DEBUG STALL (amalgam's own)
/// holds each step of the maintenance thread's expiry sweep 30 ms, so
/// with the monitor at 10 ms LATENCY LATEST and HISTORY report
/// `expire-cycle` samples of at least 30 ms (the hold is a sleep inside
/// the timed step, so no sample can be shorter, however loaded the
/// machine). The sweep runs once some key has had a TTL. DEBUG STALL
/// refuses unknown events and bad lengths; with the hold back at 0 and
/// the monitor off, nothing more is recorded.
#[test]
fn amalgam_engine_stall_reaches_latency() {
    let Some(server) = resp_private(&["--enable-debug-command", "local"]) else { return };
    let mut c = Resp::new(&server);
    assert_eq!(
        c.call(&["DEBUG", "STALL", "no-such-event", "5"]),
        error(
            "ERR unknown event 'no-such-event': one of expansion-step, expire-cycle, eviction-cycle, \
             segment-merge, aof-write, aof-fsync-always, aof-fsync-background, snapshot-slice"
        )
    );
    let bad_ms = error("ERR milliseconds must be an integer from 0 to 10000");
    assert_eq!(c.call(&["DEBUG", "STALL", "expire-cycle", "10001"]), bad_ms);
    assert_eq!(c.call(&["DEBUG", "STALL", "expire-cycle", "-1"]), bad_ms);
    assert!(call(&mut c, &["DEBUG", "HELP"]).array().contains(&V::Simple("STALL <event> <milliseconds>".into())));

    assert_eq!(c.call(&["CONFIG", "SET", "latency-monitor-threshold", "10"]), OK);
    assert_eq!(c.call(&["DEBUG", "STALL", "expire-cycle", "30"]), OK);
    assert_eq!(c.call(&["SET", "latency:ttl", "v", "EX", "1000"]), OK);
    let start = std::time::Instant::now();
    let row = loop {
        let latest = call(&mut c, &["LATENCY", "LATEST"]);
        if let Some(row) = latest.array().iter().find(|r| r.array()[0].bulk() == "expire-cycle") {
            break row.clone();
        }
        assert!(start.elapsed() < EVENT_WAIT, "no expire-cycle event in {latest:?}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let [_, time, last, max] = row.array() else { panic!("four fields: {row:?}") };
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    assert!((now - 60..=now + 1).contains(&time.int()), "{row:?}");
    assert!(last.int() >= 30 && max.int() >= last.int(), "held 30 ms: {row:?}");
    let history = call(&mut c, &["LATENCY", "HISTORY", "expire-cycle"]);
    assert!(!history.array().is_empty());
    for s in history.array() {
        assert!(s.array()[1].int() >= 30, "every sample held 30 ms: {history:?}");
    }
    assert!(call(&mut c, &["LATENCY", "DOCTOR"]).bulk().contains("expire-cycle"));

    assert_eq!(c.call(&["DEBUG", "STALL", "expire-cycle", "0"]), OK);
    assert_eq!(c.call(&["CONFIG", "SET", "latency-monitor-threshold", "0"]), OK);
    // expire-cycle, and any command that took 10 ms on a busy machine.
    assert!(call(&mut c, &["LATENCY", "RESET"]).int() >= 1);
    std::thread::sleep(std::time::Duration::from_millis(600)); // two sweep steps
    assert_eq!(call(&mut c, &["LATENCY", "LATEST"]), V::Array(vec![]), "the monitor off records nothing");
}
