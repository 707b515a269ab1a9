//! `fill` and `replay` end to end: against an in-test server that evicts
//! or refuses at a fixed item count, and against Debian's `memcached` when
//! it is installed.

use super::{fill, replay, status_kib};
use clap::Parser;
use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Parser, Debug)]
enum Cli {
    Fill(fill::Args),
    Replay(replay::Args),
}

fn fill_args(server: &str, extra: &[&str]) -> fill::Args {
    let base = ["t", "fill", "--server", server, "--settle-secs", "0"];
    match Cli::try_parse_from(base.iter().chain(extra)).expect("valid flags") {
        Cli::Fill(a) => a,
        Cli::Replay(_) => unreachable!(),
    }
}

fn replay_args(server: &str, extra: &[&str]) -> replay::Args {
    match Cli::try_parse_from(["t", "replay", "--server", server].iter().chain(extra)).expect("valid flags") {
        Cli::Replay(a) => a,
        Cli::Fill(_) => unreachable!(),
    }
}

/// What the in-test server does when it holds `capacity` items.
#[derive(Clone, Copy)]
enum Full {
    /// Evicts its oldest item (FIFO) and counts an eviction.
    Evict,
    /// Refuses the SET, as a store-mode server does.
    Refuse,
}

/// A one-connection memcached subset (text `set`, `get`, `stats`).
fn fake_server(capacity: usize, full: Full) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        let mut map: HashMap<String, Vec<u8>> = HashMap::new();
        let mut order: VecDeque<String> = VecDeque::new();
        let mut evictions = 0;
        for s in listener.incoming() {
            let Ok(s) = s else { return };
            s.set_nodelay(true).unwrap();
            let mut w = s.try_clone().unwrap();
            let mut out = Vec::new();
            let mut r = BufReader::new(s);
            let mut line = String::new();
            loop {
                // Answer a pipelined batch with one write, once it is read.
                if r.buffer().is_empty() && !out.is_empty() {
                    w.write_all(&out).unwrap();
                    out.clear();
                }
                line.clear();
                if r.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                let t: Vec<&str> = line.split_whitespace().collect();
                match t[0] {
                    "set" => {
                        let mut d = vec![0; t[4].parse::<usize>().unwrap() + 2];
                        r.read_exact(&mut d).unwrap();
                        d.truncate(d.len() - 2);
                        if !map.contains_key(t[1]) && map.len() == capacity {
                            if let Full::Refuse = full {
                                out.extend_from_slice(b"SERVER_ERROR out of memory storing object\r\n");
                                continue;
                            }
                            map.remove(&order.pop_front().unwrap());
                            evictions += 1;
                        }
                        if map.insert(t[1].to_string(), d).is_none() {
                            order.push_back(t[1].to_string());
                        }
                        out.extend_from_slice(b"STORED\r\n");
                    }
                    "get" => {
                        for k in &t[1..] {
                            if let Some(v) = map.get(*k) {
                                out.extend_from_slice(format!("VALUE {k} 0 {}\r\n", v.len()).as_bytes());
                                out.extend_from_slice(v);
                                out.extend_from_slice(b"\r\n");
                            }
                        }
                        out.extend_from_slice(b"END\r\n");
                    }
                    "stats" => {
                        let stats = format!(
                            "STAT version fake\r\nSTAT curr_items {}\r\nSTAT evictions {evictions}\r\n\
                             STAT limit_maxbytes {}\r\nEND\r\n",
                            map.len(),
                            capacity.saturating_mul(100)
                        );
                        out.extend_from_slice(stats.as_bytes());
                    }
                    _ => out.extend_from_slice(b"ERROR\r\n"),
                }
            }
        }
    });
    addr
}

#[test]
fn fill_stops_at_the_first_eviction_and_counts_what_is_held() {
    let server = fake_server(5000, Full::Evict);
    let r = fill::measure(&fill_args(&server, &["--key-bytes", "10", "--value-bytes", "7"])).unwrap();
    assert_eq!(r["stop"], "evicting", "{r}");
    // Evictions are seen at the first poll after item 5000.
    let issued = r["sets_issued"].as_u64().unwrap();
    assert_eq!(issued, 5000u64.div_ceil(fill::STATS_EVERY) * fill::STATS_EVERY, "{r}");
    assert_eq!(r["items_held"], 5000, "{r}");
    assert_eq!(r["curr_items_at_stop"], 5000, "{r}");
    assert_eq!(r["lowest_held_id"], issued - 5000, "FIFO keeps the newest: {r}");
    assert_eq!(r["evictions_at_stop"], issued - 5000, "{r}");
    assert!(fill::human(&r).contains("evictions began at 5000 items"));
    // Now it holds items: a second fill refuses to measure it.
    let e = fill::measure(&fill_args(&server, &[])).unwrap_err();
    assert!(e.contains("not empty"), "{e}");
}

#[test]
fn fill_reports_a_store_mode_server_full() {
    let server = fake_server(3000, Full::Refuse);
    let r = fill::measure(&fill_args(&server, &[])).unwrap();
    assert_eq!(r["stop"], "store", "{r}");
    assert_eq!((r["sets_stored"].as_u64(), r["items_held"].as_u64()), (Some(3000), Some(3000)), "{r}");
    assert!(fill::human(&r).contains("store mode: full at 3000 items"), "{}", fill::human(&r));
    let server = fake_server(usize::MAX, Full::Refuse);
    let e = fill::measure(&fill_args(&server, &["--max-sets", "2048"])).unwrap_err();
    assert!(e.contains("--max-sets"), "{e}");
}

#[test]
fn replay_against_the_fake_server_checks_its_counters() {
    let server = fake_server(400, Full::Evict);
    let flags =
        ["--keys", "4000", "--ops", "20000", "--warmup-ops", "20000", "--scan-every", "5000", "--scan-len", "100"];
    let r = replay::measure(&replay_args(&server, &flags)).unwrap();
    let m = &r["measured"];
    let ratio = r["miss_ratio"].as_f64().unwrap();
    assert!(ratio > 0.05 && ratio < 0.95, "{r}");
    assert_eq!(m["scan_gets"], 400, "{r}");
    assert_eq!(m["scan_misses"], 400, "{r}");
    assert_eq!(r["sets_refused"], 0, "{r}");
    // The fake has no get_misses: there is nothing to agree with.
    assert!(r["server_agrees"].is_null(), "{r}");
    assert!(replay::human(&r).contains("miss ratio"));
}

#[test]
fn proc_status_fields() {
    let status = "Name:\tmemcached\nVmHWM:\t   75000 kB\nVmRSS:\t   74592 kB\nThreads:\t10\n";
    assert_eq!(status_kib(status, "VmRSS"), Some(74592));
    assert_eq!(status_kib(status, "VmHWM"), Some(75000));
    assert_eq!(status_kib(status, "Threads"), None);
    assert_eq!(status_kib(status, "VmSwap"), None);
    let (rss, peak) = super::rss_of(std::process::id()).unwrap();
    assert!(rss > 0 && peak >= rss);
}

/// Debian's memcached on a free port, killed when dropped.
struct Memcached(Child, String);

impl Drop for Memcached {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `memcached -m <mb> -t 2`, or `None` (with a notice) if it is not
/// installed.
fn memcached(mb: u32) -> Option<Memcached> {
    let Some(bin) =
        ["/usr/bin/memcached", "/usr/local/bin/memcached"].into_iter().find(|p| std::path::Path::new(p).exists())
    else {
        eprintln!("skipped: memcached not installed (scripts/test.sh installs it)");
        return None;
    };
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut flags: Vec<String> = ["-l", "127.0.0.1", "-U", "0", "-t", "2"].map(String::from).to_vec();
    flags.extend(["-m".into(), mb.to_string(), "-p".into(), port.to_string()]);
    // memcached refuses to run as root without -u; /proc/self is owned by
    // the process's effective user.
    if std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap()) == 0 {
        flags.extend(["-u".to_string(), "nobody".to_string()]);
    }
    let child = Command::new(bin).args(&flags).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let server = Memcached(child, format!("127.0.0.1:{port}"));
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(&server.1).is_err() {
        assert!(Instant::now() < deadline, "memcached did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    Some(server)
}

#[test]
fn fill_and_replay_against_memcached_if_installed() {
    let Some(m) = memcached(2) else { return };
    let pid = m.0.id().to_string();
    let r = fill::measure(&fill_args(&m.1, &["--pid", &pid])).unwrap();
    assert_eq!(r["stop"], "evicting", "{r}");
    assert_eq!(r["limit_maxbytes"], 2 << 20, "{r}");
    // -m 2 is two 1 MiB slab pages of one chunk size: every item fits in
    // them, and the sweep finds exactly what curr_items counts.
    let held = r["items_held"].as_u64().unwrap();
    assert!(held > 10_000, "{r}");
    assert_eq!(r["items_held"], r["curr_items_end"], "{r}");
    assert!(r["rss_end_bytes"].as_u64().unwrap() > 2 << 20, "{r}");
    assert!(r["rss_peak_bytes"].as_u64() >= r["rss_end_bytes"].as_u64(), "{r}");
    drop(m);

    for proto in ["text", "meta"] {
        let Some(m) = memcached(2) else { return };
        let flags = ["--keys", "100000", "--ops", "40000", "--protocol", proto, "--seed", "9"];
        let r = replay::measure(&replay_args(&m.1, &flags)).unwrap();
        assert_eq!(r["server_agrees"], true, "{proto}: {r}");
        assert_eq!(r["sets_refused"], 0, "{proto}: {r}");
        assert!(r["evictions_measured"].as_u64().unwrap() > 0, "{proto}: {r}");
        let ratio = r["miss_ratio"].as_f64().unwrap();
        assert!(ratio > 0.0 && ratio < 1.0, "{proto}: {r}");
        // The server is not empty any more.
        let e = replay::measure(&replay_args(&m.1, &flags)).unwrap_err();
        assert!(e.contains("not empty"), "{e}");
    }
}
