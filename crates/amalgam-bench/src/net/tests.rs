//! The driver's loop against a tiny in-test server (which cuts its replies
//! into small pieces, so replies arrive split), and, when their binaries are
//! found, against a real `amalgam` and a real `memcached`. No timing is
//! asserted, only counts.

use super::command::Command as Cmd;
use super::*;
use clap::Parser;
use std::collections::HashMap;
use std::io::{BufRead, Read, Write};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

#[derive(Parser, Debug)]
struct Cli {
    #[command(flatten)]
    args: Args,
}

fn args(extra: &[&str]) -> Args {
    let base = [
        ("--keys", "2000"),
        ("--threads", "2"),
        ("--conns-per-thread", "3"),
        ("--duration", "0.4"),
        ("--warmup", "0.1"),
        ("--stream-key-ops", "0"),
    ];
    let defaults = base.iter().filter(|(f, _)| !extra.contains(f)).flat_map(|(f, v)| [*f, *v]);
    Cli::try_parse_from(std::iter::once("net").chain(defaults).chain(extra.iter().copied())).expect("valid flags").args
}

/// How the fake server answers.
#[derive(Clone, Copy, PartialEq)]
enum Fake {
    /// Like memcached, replies cut into 1..=7-byte writes.
    Good,
    /// Answers every command `STORED`.
    AlwaysStored,
    /// Knows no meta command (answers `ERROR`), like a text-only server.
    TextOnly,
    /// Like `Good`, but once [`STALL_AFTER`] requests have come in (over
    /// all `StallOnce` servers), holds every reply for [`STALL`].
    StallOnce,
}

/// Requests a `StallOnce` server answers before it stalls.
const STALL_AFTER: u64 = 100;
/// How long it stalls.
const STALL: Duration = Duration::from_millis(300);
/// Requests seen by `StallOnce` servers, and when their stall ends.
static STALL_SEEN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static STALL_UNTIL: Mutex<Option<Instant>> = Mutex::new(None);

/// A minimal memcached (text get/set, meta mg/ms/mn) on a free port.
fn fake_server(mode: Fake) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let map: Arc<Mutex<HashMap<Vec<u8>, Vec<u8>>>> = Arc::default();
    std::thread::spawn(move || {
        for (i, s) in listener.incoming().enumerate() {
            let Ok(s) = s else { return };
            let map = Arc::clone(&map);
            std::thread::spawn(move || serve(s, &map, mode, i as u64));
        }
    });
    addr
}

fn serve(s: TcpStream, map: &Mutex<HashMap<Vec<u8>, Vec<u8>>>, mode: Fake, seed: u64) {
    s.set_nodelay(true).unwrap();
    let mut w = s.try_clone().unwrap();
    let mut r = std::io::BufReader::new(s);
    let mut rng = SplitMix64::new(seed);
    let mut line = Vec::new();
    loop {
        line.clear();
        if r.read_until(b'\n', &mut line).unwrap_or(0) == 0 {
            return;
        }
        let text = String::from_utf8_lossy(&line).trim_end().to_string();
        let t: Vec<&str> = text.split(' ').collect();
        let mut out = Vec::new();
        let mut read_data = |n: usize| {
            let mut d = vec![0; n + 2];
            r.read_exact(&mut d).map(|()| d[..n].to_vec())
        };
        match t[0] {
            _ if mode == Fake::AlwaysStored => {
                if t[0] == "set" || t[0] == "ms" {
                    let Ok(_) = read_data(t[t.len() - 1].parse().unwrap()) else { return };
                }
                out.extend_from_slice(b"STORED\r\n");
            }
            "get" => {
                let m = map.lock().unwrap();
                for k in &t[1..] {
                    if let Some(v) = m.get(k.as_bytes()) {
                        out.extend_from_slice(format!("VALUE {k} 0 {}\r\n", v.len()).as_bytes());
                        out.extend_from_slice(v);
                        out.extend_from_slice(b"\r\n");
                    }
                }
                out.extend_from_slice(b"END\r\n");
            }
            "mg" | "ms" | "mn" if mode == Fake::TextOnly => out.extend_from_slice(b"ERROR\r\n"),
            "set" | "ms" => {
                let Ok(d) = read_data(t[t.len() - 1].parse().unwrap()) else { return };
                map.lock().unwrap().insert(t[1].as_bytes().to_vec(), d);
                out.extend_from_slice(if t[0] == "set" { b"STORED\r\n" } else { b"HD\r\n" });
            }
            "mg" => match map.lock().unwrap().get(t[1].as_bytes()) {
                Some(v) => {
                    out.extend_from_slice(format!("VA {}", v.len()).as_bytes());
                    if t[2..].contains(&"k") {
                        out.extend_from_slice(format!(" k{}", t[1]).as_bytes());
                    }
                    out.extend_from_slice(b"\r\n");
                    out.extend_from_slice(v);
                    out.extend_from_slice(b"\r\n");
                }
                None if t[2..].contains(&"q") => {}
                None => out.extend_from_slice(b"EN\r\n"),
            },
            "mn" => out.extend_from_slice(b"MN\r\n"),
            _ => out.extend_from_slice(b"ERROR\r\n"),
        }
        if mode == Fake::StallOnce {
            if STALL_SEEN.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1 == STALL_AFTER {
                *STALL_UNTIL.lock().unwrap() = Some(Instant::now() + STALL);
            }
            let until = *STALL_UNTIL.lock().unwrap();
            if let Some(wait) = until.map(|u| u.saturating_duration_since(Instant::now())) {
                std::thread::sleep(wait);
            }
        }
        // Cut the reply into small writes so the client sees partial units.
        let mut rest = &out[..];
        while !rest.is_empty() {
            let n = (1 + rng.next_u64() % 7).min(rest.len() as u64) as usize;
            if w.write_all(&rest[..n]).is_err() {
                return;
            }
            rest = &rest[n..];
        }
    }
}

#[test]
fn closed_loop_against_fake_server_text_and_meta() {
    let addr = fake_server(Fake::Good);
    for proto in ["text", "meta"] {
        for (pipeline, multiget) in [("1", "1"), ("4", "3")] {
            let a = args(&[
                "--server",
                &addr.to_string(),
                "--protocol",
                proto,
                "--pipeline",
                pipeline,
                "--multiget",
                multiget,
                "--get-fraction",
                "0.8",
                "--value-bytes",
                "40",
            ]);
            let r = measure(&a).unwrap_or_else(|e| panic!("{proto} p{pipeline} m{multiget}: {e}"));
            let what = format!("{proto} p{pipeline} m{multiget}: {r}");
            assert_eq!(r["errors"]["total"], 0, "{what}");
            assert_eq!(r["preload"]["stored"], 2000, "{what}");
            assert!(r["requests"].as_u64().unwrap() > 0, "{what}");
            assert!(r["gets"].as_u64().unwrap() > 0 && r["sets"].as_u64().unwrap() > 0, "{what}");
            assert_eq!(r["hit_ratio"], 1.0, "{what}");
            assert_eq!(r["stored"], r["sets"], "{what}");
            let m: u64 = multiget.parse().unwrap();
            assert_eq!(r["get_keys"].as_u64().unwrap(), r["gets"].as_u64().unwrap() * m, "{what}");
            assert!(r["latency_us"]["p50"].as_f64().unwrap() > 0.0, "{what}");
            assert!(human(&r).contains("requests/s"));
        }
    }
}

#[test]
fn misses_are_counted_without_preload() {
    let addr = fake_server(Fake::Good);
    for proto in ["text", "meta"] {
        for multiget in ["1", "5"] {
            let a = args(&[
                "--server",
                &addr.to_string(),
                "--protocol",
                proto,
                "--no-preload",
                "--get-fraction",
                "1",
                "--keys",
                "100000",
                "--multiget",
                multiget,
                "--pipeline",
                "2",
            ]);
            let r = measure(&a).unwrap();
            assert_eq!(r["errors"]["total"], 0, "{r}");
            assert_eq!(r["hit_ratio"], 0.0, "{r}");
            assert!(r["preload"].is_null());
        }
    }
}

#[test]
fn wrong_replies_are_counted() {
    let addr = fake_server(Fake::AlwaysStored);
    let a = args(&["--server", &addr.to_string(), "--no-preload", "--get-fraction", "1", "--pipeline", "2"]);
    // Every connection is closed at its first reply: no request completes.
    let e = measure(&a).unwrap_err();
    assert!(e.contains("6 errors") && e.contains("does not fit"), "{e}");
    // The preload's replies are right; the verification's are not.
    let a = args(&["--server", &addr.to_string(), "--preload"]);
    let e = measure(&a).unwrap_err();
    assert!(e.contains("verify"), "{e}");
}

#[test]
fn error_replies_are_not_completed_requests() {
    let addr = fake_server(Fake::TextOnly);
    for multiget in ["1", "3"] {
        let a = args(&[
            "--server",
            &addr.to_string(),
            "--protocol",
            "meta",
            "--get-fraction",
            "1",
            "--multiget",
            multiget,
            "--pipeline",
            "2",
        ]);
        // The (text) preload works; every meta GET is answered ERROR.
        let e = measure(&a).unwrap_err();
        assert!(e.contains("no request completed") && e.contains("Error reply to a GET"), "{e}");
    }
}

#[test]
fn a_closed_server_is_an_error() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in listener.incoming() {
            drop(s);
        }
    });
    let e = measure(&args(&["--server", &addr.to_string(), "--no-preload"])).unwrap_err();
    assert!(e.contains("closed"), "{e}");
}

#[test]
fn proc_stat_cpu_fields() {
    let stat = "1234 (a (b) c) S 1 2 3 4 5 6 7 8 9 10 111 222 13 14 15";
    assert_eq!(parse_cpu_ticks(stat), Some(333));
    assert!(cpu_ticks("self").is_some());
    assert!(clock_ticks_per_second() >= 1.0);
}

#[test]
fn flags_are_checked() {
    assert!(effective_workload(&args(&["--workload", "nope"])).is_err());
    assert!(effective_workload(&args(&["--get-fraction", "1.5"])).is_err());
    assert!(effective_workload(&args(&["--key-bytes", "2", "--keys", "1000"])).is_err());
    let w = effective_workload(&args(&["--workload", "mica-tiny", "--value-bytes", "3", "--distribution", "zipf"]))
        .unwrap();
    assert_eq!((w.key_bytes, w.value_bytes, w.distribution), (8, 3, Distribution::Zipf));
    let a = args(&["--no-preload", "--preload"]);
    assert!(!a.no_preload);
    let a = args(&["--preload", "--no-preload"]);
    assert!(a.no_preload);
}

/// A server process on a free port, killed when dropped.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn start(program: &std::path::Path, args: &[String], port: u16) -> Option<Server> {
    let child = Command::new(program).args(args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().ok()?;
    let server = Server(child);
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Some(server);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

fn real_run(server: &Server, port: u16, proto: &str) -> Value {
    let a = args(&[
        "--server",
        &format!("127.0.0.1:{port}"),
        "--protocol",
        proto,
        "--server-pid",
        &server.0.id().to_string(),
        "--pipeline",
        "4",
        "--multiget",
        "2",
        "--duration",
        "0.8",
        "--warmup",
        "0.2",
    ]);
    measure(&a).unwrap()
}

/// Against `target/{release,debug}/amalgam` if it was built (cargo does
/// not build another package's binary for this crate's tests).
#[test]
fn against_amalgam_if_built() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target");
    let Some(bin) = ["release", "debug"].iter().map(|p| root.join(p).join("amalgam")).find(|p| p.exists()) else {
        eprintln!("skipped: no target/{{release,debug}}/amalgam (cargo build -p amalgam-server)");
        return;
    };
    let port = free_port();
    let flags: Vec<String> = ["-p", &port.to_string(), "-t", "2", "-m", "64", "-U", "0"].map(String::from).to_vec();
    let Some(server) = start(&bin, &flags, port) else { panic!("{} did not start", bin.display()) };
    let r = real_run(&server, port, "text");
    assert_eq!(r["errors"]["total"], 0, "{r}");
    assert_eq!(r["hit_ratio"], 1.0, "{r}");
    assert!(r["server_cpu_us_per_request"].is_number(), "{r}");
}

/// Against Debian's memcached if installed, over both protocols.
#[test]
fn against_memcached_if_installed() {
    let Some(bin) = ["/usr/bin/memcached", "/usr/local/bin/memcached"]
        .map(std::path::PathBuf::from)
        .into_iter()
        .find(|p| p.exists())
    else {
        eprintln!("skipped: memcached not installed");
        return;
    };
    let port = free_port();
    let mut flags: Vec<String> =
        ["-p", &port.to_string(), "-t", "2", "-m", "64", "-U", "0", "-l", "127.0.0.1"].map(String::from).to_vec();
    // memcached refuses to run as root without -u; /proc/self is owned by
    // the process's effective user.
    if std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap()) == 0 {
        flags.extend(["-u".to_string(), "root".to_string()]);
    }
    let Some(server) = start(&bin, &flags, port) else { panic!("memcached did not start") };
    for proto in ["text", "meta"] {
        let r = real_run(&server, port, proto);
        assert_eq!(r["errors"]["total"], 0, "{proto}: {r}");
        assert_eq!(r["hit_ratio"], 1.0, "{proto}: {r}");
    }
}

/// Every collection command (and the hot-key cases) against a RESP server
/// at `addr`; `known` says which types it serves. Checks counts only.
fn collection_runs(addr: &str, known: &[command::Type]) {
    let all =
        [Cmd::Hset, Cmd::Hget, Cmd::Lpush, Cmd::Lpop, Cmd::Sadd, Cmd::Sismember, Cmd::Zadd, Cmd::Zrange, Cmd::Zscore];
    let mut ran = 0;
    for cmd in all.into_iter().filter(|c| c.ty().is_some_and(|t| known.contains(&t))) {
        for hot in [false, true] {
            let name = cmd.name();
            let mut flags = vec![
                "--server",
                addr,
                "--protocol",
                "resp",
                "--command",
                name,
                "--keys",
                "500",
                "--pipeline",
                "4",
                "--members",
                "12",
            ];
            if hot {
                flags.push("--hot-key");
            }
            let r = measure(&args(&flags)).unwrap_or_else(|e| panic!("{name} hot {hot}: {e}"));
            let what = format!("{name} hot {hot}: {r}");
            assert_eq!(r["errors"]["total"], 0, "{what}");
            assert_eq!(r["command"], name, "{what}");
            assert_eq!(r["preload"]["stored"], if hot { 1 } else { 500 }, "{what}");
            assert!(r["requests"].as_u64().unwrap() > 0, "{what}");
            let (gets, sets) = (r["gets"].as_u64().unwrap(), r["sets"].as_u64().unwrap());
            match cmd.at(0, hot).expect() {
                _ if hot && cmd.ty() == Some(command::Type::List) => assert!(gets > 0 && sets > 0, "{what}"),
                command::Expect::Write => assert!(gets == 0 && sets > 0, "{what}"),
                _ => assert!(gets > 0 && sets == 0, "{what}"),
            }
            // Reads of preloaded members all hit, except LPOP on lists
            // popped empty.
            if cmd.expect() != command::Expect::Write && cmd != Cmd::Lpop {
                assert_eq!(r["hit_ratio"], 1.0, "{what}");
            }
            ran += 1;
        }
    }
    assert_eq!(ran, 2 * all.iter().filter(|c| c.ty().is_some_and(|t| known.contains(&t))).count());
}

/// Against Debian's redis-server if installed: all four types.
#[test]
fn collections_against_redis_if_installed() {
    let Some(bin) = ["/usr/bin/redis-server", "/usr/local/bin/redis-server"]
        .map(std::path::PathBuf::from)
        .into_iter()
        .find(|p| p.exists())
    else {
        eprintln!("skipped: redis-server not installed");
        return;
    };
    let port = free_port();
    let flags: Vec<String> = ["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        .map(String::from)
        .to_vec();
    let Some(_server) = start(&bin, &flags, port) else { panic!("redis-server did not start") };
    use command::Type::*;
    collection_runs(&format!("127.0.0.1:{port}"), &[Hash, List, Set, Zset]);
    // A collection command needs RESP, and keys that leave room for the type.
    let addr = format!("127.0.0.1:{port}");
    let e = measure(&args(&["--server", &addr, "--command", "hget"])).unwrap_err();
    assert!(e.contains("--protocol resp"), "{e}");
    let e = measure(&args(&[
        "--server",
        &addr,
        "--protocol",
        "resp",
        "--command",
        "hget",
        "--key-bytes",
        "3",
        "--keys",
        "4096",
    ]))
    .unwrap_err();
    assert!(e.contains("collection keys"), "{e}");
}

/// Against `target/{release,debug}/amalgam`'s RESP port if it was built:
/// the types it serves (a type it does not know answers `-ERR unknown
/// command` to its write, probed first).
#[test]
fn collections_against_amalgam_if_built() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target");
    let Some(bin) = ["release", "debug"].iter().map(|p| root.join(p).join("amalgam")).find(|p| p.exists()) else {
        eprintln!("skipped: no target/{{release,debug}}/amalgam (cargo build -p amalgam-server)");
        return;
    };
    let (port, resp) = (free_port(), free_port());
    let flags: Vec<String> =
        ["-p", &port.to_string(), "--resp-port", &resp.to_string(), "-t", "2", "-m", "256"].map(String::from).to_vec();
    let Some(_server) = start(&bin, &flags, resp) else { panic!("{} did not start", bin.display()) };
    let addr: SocketAddr = format!("127.0.0.1:{resp}").parse().unwrap();
    let mut known = Vec::new();
    let mut client = Client::connect(addr, IO_TIMEOUT).unwrap();
    for (ty, probe) in [
        (command::Type::Hash, "HSET probe f v"),
        (command::Type::List, "LPUSH probe2 v"),
        (command::Type::Set, "SADD probe3 m"),
        (command::Type::Zset, "ZADD probe4 1 m"),
    ] {
        let req: Vec<u8> = format!("{probe}\r\n").into_bytes();
        client.send(&req).unwrap();
        match client.next(Protocol::Resp).unwrap().0 {
            proto::Event::Integer(1) => known.push(ty),
            proto::Event::Error => eprintln!("amalgam does not serve {ty:?} yet: skipped"),
            e => panic!("{probe}: {e:?}"),
        }
    }
    assert!(known.contains(&command::Type::Hash) && known.contains(&command::Type::List), "{known:?}");
    collection_runs(&addr.to_string(), &known);
}

/// A RESP server answering every request with `reply`, cut into 1..=3-byte
/// writes.
fn fake_resp_server(reply: &'static [u8]) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(s) = s else { return };
            std::thread::spawn(move || {
                let mut w = s.try_clone().unwrap();
                let mut r = std::io::BufReader::new(s);
                let mut line = Vec::new();
                let mut read_line = |r: &mut std::io::BufReader<TcpStream>| {
                    line.clear();
                    match r.read_until(b'\n', &mut line) {
                        Ok(n) if n > 0 => String::from_utf8_lossy(&line[1..]).trim_end().parse::<usize>().ok(),
                        _ => None,
                    }
                };
                // Bounded by the connection: each request is `*n` then n bulks.
                while let Some(n) = read_line(&mut r) {
                    for _ in 0..n {
                        let Some(len) = read_line(&mut r) else { return };
                        let mut data = vec![0; len + 2];
                        if r.read_exact(&mut data).is_err() {
                            return;
                        }
                    }
                    for piece in reply.chunks(3) {
                        if w.write_all(piece).is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    addr
}

#[test]
fn collection_replies_that_do_not_fit_are_counted() {
    // `+OK` is no reply to HSET's fill: the preload fails.
    let addr = fake_resp_server(b"+OK\r\n").to_string();
    let e = measure(&args(&["--server", &addr, "--protocol", "resp", "--command", "hset"])).unwrap_err();
    assert!(e.contains("preload: 0 of 2000") && e.contains("does not fit"), "{e}");
    // A bulk is no reply to SISMEMBER; an integer none to ZRANGE.
    for (reply, cmd) in [(&b"$1\r\nx\r\n"[..], "sismember"), (b":3\r\n", "zrange")] {
        let addr = fake_resp_server(reply).to_string();
        let a = args(&["--server", &addr, "--protocol", "resp", "--command", cmd, "--no-preload", "--pipeline", "3"]);
        let e = measure(&a).unwrap_err();
        assert!(e.contains("no request completed") && e.contains("does not fit"), "{cmd}: {e}");
    }
    // Replies that fit, split into pieces: every ZRANGE hits.
    let addr = fake_resp_server(b"*2\r\n$3\r\nabc\r\n$2\r\n\r\n\r\n").to_string();
    let a = args(&["--server", &addr, "--protocol", "resp", "--command", "zrange", "--no-preload", "--pipeline", "3"]);
    let r = measure(&a).unwrap();
    assert_eq!(r["errors"]["total"], 0, "{r}");
    assert_eq!(r["hit_ratio"], 1.0, "{r}");
}

/// Open loop against a server that stalls once for 300 ms early in the
/// run: every request due during the stall is timed from its due time, so
/// a large share of them (requests due 0.05–0.30 s into a 0.8 s run at a
/// steady rate: about 30%) wait 50 ms or more, and p90 shows it. With one
/// request outstanding per connection at most, the requests due during the
/// stall are not even written until it ends: timed from when they were
/// written (coordinated omission), all but 6 would look fast. A slower
/// machine only makes the latencies longer: nothing here asserts a speed.
#[test]
fn open_loop_times_requests_from_their_due_time() {
    let addr = fake_server(Fake::StallOnce);
    let a = args(&[
        "--server",
        &addr.to_string(),
        "--no-preload",
        "--get-fraction",
        "1",
        "--rate",
        "2000",
        "--open-loop-outstanding",
        "1",
        "--warmup",
        "0",
        "--duration",
        "0.8",
    ]);
    let r = measure(&a).unwrap();
    assert!(STALL_SEEN.load(std::sync::atomic::Ordering::SeqCst) >= STALL_AFTER, "the server never stalled: {r}");
    assert_eq!(r["errors"]["total"], 0, "{r}");
    assert_eq!((r["mode"].as_str(), r["target_rate"].as_f64()), (Some("open"), Some(2000.0)), "{r}");
    let p90 = r["latency_us"]["p90"].as_f64().unwrap();
    assert!(p90 >= 50_000.0, "p90 {p90} us: the stall is hidden: {r}");
    assert!(r["latency_us"]["max"].as_f64().unwrap() >= 250_000.0, "{r}");
    // The curve runs from 0% up, and never falls.
    let curve = r["latency_curve"].as_array().unwrap();
    assert_eq!(curve[0][0], 0.0);
    assert!(curve.windows(2).all(|w| w[0][0].as_f64() < w[1][0].as_f64() && w[0][1].as_f64() <= w[1][1].as_f64()));
    assert!(table_row(&r).contains("2000"));
    assert!(human(&r).contains("open loop"));
}

#[test]
fn open_loop_flags_are_checked() {
    let addr = fake_server(Fake::Good).to_string();
    for (bad, why) in [
        (vec!["--rate", "0"], "positive"),
        (vec!["--rate", "100", "--pipeline", "4"], "--pipeline"),
        (vec!["--rates", "100,-1"], "positive"),
    ] {
        let mut flags = vec!["--server", addr.as_str()];
        flags.extend(bad.iter().copied());
        let e = measure(&args(&flags)).unwrap_err();
        assert!(e.contains(why), "{bad:?}: {e}");
    }
    assert!(Cli::try_parse_from(["net", "--rate", "1", "--rates", "2,3"]).is_err(), "--rate and --rates conflict");
}

/// Checks that `text` is one well-formed SVG document: it opens with
/// `<svg` (after an optional XML declaration), every element opened is
/// closed in order, and it draws lines (`polyline` or `path`) and text.
fn assert_svg(text: &str) {
    let body = text.trim_start();
    let body = if body.starts_with("<?xml") { &body[body.find("?>").expect("declaration ends") + 2..] } else { body };
    assert!(body.trim_start().starts_with("<svg"), "not an SVG: {}", &text[..text.len().min(80)]);
    let mut open: Vec<&str> = Vec::new();
    let mut rest = body;
    let mut seen = Vec::new();
    while let Some(lt) = rest.find('<') {
        let gt = rest[lt..].find('>').expect("every tag ends") + lt;
        let tag = &rest[lt + 1..gt];
        rest = &rest[gt + 1..];
        assert!(!tag.contains('<'), "a tag inside a tag: {tag}");
        if tag.starts_with('!') || tag.starts_with('?') {
            continue;
        }
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(open.pop(), Some(name.trim()), "closing tag out of order");
            continue;
        }
        let name = tag.split_whitespace().next().expect("a tag has a name");
        seen.push(name);
        if !tag.ends_with('/') {
            open.push(name);
        }
    }
    assert!(open.is_empty(), "unclosed: {open:?}");
    assert!(rest.trim().is_empty(), "text after the root element");
    assert!(seen.iter().any(|n| *n == "polyline" || *n == "path"), "draws no line");
    assert!(seen.contains(&"text"), "has no text");
}

/// `--rates` with `--plot` and `--json` against the fake server, then
/// `amalgam-bench plot` over its JSON and over closed-loop and replay-like
/// results: every figure exists and is a well-formed SVG.
#[test]
fn plots_are_valid_svg() {
    let dir = std::env::temp_dir().join(format!("amalgam-bench-plots-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let addr = fake_server(Fake::Good);
    let json = dir.join("open.jsonl");
    std::fs::create_dir_all(&dir).unwrap();
    let a = args(&[
        "--server",
        &addr.to_string(),
        "--rates",
        "500,1000",
        "--duration",
        "0.3",
        "--label",
        "fake",
        "--plot",
        dir.join("net").to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    run(&a).unwrap();
    for f in ["latency.svg", "rate.svg"] {
        assert_svg(&std::fs::read_to_string(dir.join("net").join(f)).unwrap());
    }
    assert!(!dir.join("net/throughput.svg").exists(), "no pipeline sweep, no throughput figure");
    let lines = std::fs::read_to_string(&json).unwrap();
    assert_eq!(lines.lines().count(), 2, "one JSON line per rate");

    // Server threads alone differ: throughput by server threads.
    let mut by_threads: Vec<Value> = closed_template(&addr);
    by_threads[1]["server_threads"] = 4.into();
    let files = crate::plot::write_all(&dir.join("threads"), &by_threads).unwrap();
    assert!(files.iter().any(|f| f.ends_with("throughput.svg")), "{files:?}");
    assert_svg(&std::fs::read_to_string(dir.join("threads/throughput.svg")).unwrap());

    // Closed loop at two depths, and two replay-like results.
    let mut closed = Vec::new();
    for p in ["1", "4"] {
        let mut r =
            measure(&args(&["--server", &addr.to_string(), "--no-preload", "--pipeline", p, "--duration", "0.2"]))
                .unwrap();
        r["label"] = "fake".into();
        closed.push(serde_json::to_string(&r).unwrap());
    }
    for (limit, miss) in [(64u64 << 20, 0.4), (128 << 20, 0.25)] {
        closed.push(serde_json::json!({"label": "fake", "miss_ratio": miss, "limit_maxbytes": limit}).to_string());
    }
    std::fs::write(dir.join("more.jsonl"), closed.join("\n") + "\n").unwrap();
    let p = crate::plot::Args { out: dir.join("all"), files: vec![json, dir.join("more.jsonl")] };
    crate::plot::run(&p).unwrap();
    for f in ["latency.svg", "rate.svg", "throughput.svg", "miss-ratio.svg"] {
        assert_svg(&std::fs::read_to_string(dir.join("all").join(f)).unwrap());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two short closed-loop runs at pipeline 1 recorded with 2 server threads.
fn closed_template(addr: &SocketAddr) -> Vec<Value> {
    let a = args(&["--server", &addr.to_string(), "--no-preload", "--duration", "0.2", "--server-threads", "2"]);
    let r = measure(&a).unwrap();
    assert_eq!(r["server_threads"], 2);
    vec![r.clone(), r]
}
