//! The network driver: closed-loop connections to any memcached-protocol
//! server (Amalgam, memcached), speaking the text or the meta protocol, or
//! to a RESP server (Amalgam's `--resp-port`, Redis) with GET and SET or,
//! with `--command`, one of Redis's collection commands (`net/command.rs`:
//! HSET, HGET, LPUSH, LPOP, SADD, SISMEMBER, ZADD, ZRANGE 0 9, ZSCORE,
//! PFADD, PFCOUNT of ten keys, GEOSEARCH BYRADIUS) over
//! the key space or, with `--hot-key`, on one key.
//!
//! # Method
//! * **Preload** (unless `--no-preload`): every key `0..keys` is SET once,
//!   with the text protocol whatever `--protocol` is, pipelined
//!   ([`PRELOAD_DEPTH`] per connection) over a few connections per thread;
//!   every `STORED` is counted and anything else fails the preload. A
//!   sample of keys spread over the key space is then read back with
//!   multi-gets and compared byte for byte (`value_of(id, 0, …)`).
//!   With a collection `--command`, each key is instead filled with
//!   `--members` members by variadic requests of up to
//!   `command::FILL_MEMBERS_PER_REQUEST` (HSET, LPUSH, SADD, ZADD, PFADD or
//!   GEOADD, whichever type the command reads or writes; every integer
//!   reply counts) and the sample's cardinalities (HLEN, LLEN, SCARD, ZCARD,
//!   PFCOUNT within its error) must be at least `--members`. With `--hot-key` only key 0 is preloaded.
//! * **Streams**: before the timed phase, each connection gets its own op
//!   stream (`workload::op_stream`, its own seed), cut into requests of
//!   `--multiget` ops: a chunk starting with a GET is a GET of the chunk's
//!   keys, else a SET of its first key, so the request mix is the
//!   workload's GET fraction. Streams are cycled; their total is about
//!   [`STREAM_KEY_OPS`] key operations (32 MiB). A collection `--command`
//!   takes only the stream's keys (its GET fraction does not apply): every
//!   request is that command (LPUSH/LPOP on a hot key alternate), member
//!   number = the connection's request count modulo `--members`; reads
//!   (HGET, LPOP, SISMEMBER, ZRANGE, ZSCORE) count as GETs with their hits
//!   (ZRANGE: a non-empty array), writes as SETs.
//! * **Closed loop** (`net/driver.rs`): `--threads` client threads, each a
//!   mio event loop over `--conns-per-thread` nonblocking connections that
//!   each keep `--pipeline` requests outstanding; a batch of requests is
//!   one `write`, replies are parsed incrementally and each completes the
//!   oldest outstanding request.
//! * **Open loop** (`--rate N`, or a sweep `--rates A,B,...`, one run per
//!   rate after one preload): N requests per second in total, spread evenly
//!   over the connections (`net/schedule.rs`), each written when due
//!   whatever the server has answered, and timed from its due time: the
//!   latency is corrected for coordinated omission. `--pipeline` does not
//!   apply (up to `schedule::OUTSTANDING_MAX` per connection are
//!   outstanding). The report gives the target and the achieved rate; a
//!   server that cannot keep up shows an achieved rate below the target and
//!   latencies that grow with the run.
//! * **Progress**: a bar with the rate and the time left on stderr when it
//!   is a terminal (indicatif), nothing otherwise.
//! * **Plots** (`--plot DIR`, `plot.rs`): the run's latency percentile
//!   curve, and with `--rates` p99 against the achieved rate, as SVG.
//! * **Measurement**: requests completed within `[warm-up end, run end)`
//!   count. Latency is per request, from the clock read before its batch's
//!   write to the clock read after the read that completed it, in an
//!   HdrHistogram per thread (merged). Throughput is reported as requests/s
//!   and keys/s (a multi-get of k keys is k key operations; a SET is one).
//!   Server CPU: `utime + stime` of `--server-pid` from `/proc/PID/stat`
//!   read at the window's start and end, divided by the requests (and keys)
//!   completed in it; the client's own CPU likewise (on a machine shared by
//!   client and server, it shows what the client takes away).
//! * **Errors**: every reply that is not what the request asked for is
//!   counted by kind and reported (`driver::Errors`).

pub mod client;
pub mod command;
mod driver;
pub mod proto;
pub mod schedule;

pub use client::{Client, ServerStats};
pub use command::Command;
pub use driver::{Config, Errors, Phase, Source, Stats};
pub use proto::Protocol;
pub use schedule::Schedule;

use crate::workload::{self, op_stream, value_of, Distribution, SplitMix64, Workload};
use serde_json::{json, Value};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Key operations in all connections' streams together (32 MiB of `Op`s).
pub const STREAM_KEY_OPS: usize = 4 << 20;
/// Fewest requests in one connection's stream.
pub const STREAM_REQUESTS_MIN: usize = 4096;
/// Requests outstanding per preload connection.
pub const PRELOAD_DEPTH: usize = 64;
/// Preload connections per client thread (at most).
pub const PRELOAD_CONNS_PER_THREAD: usize = 4;
/// Keys per multi-get of the preload verification.
const VERIFY_BATCH: usize = 32;
/// Connect and verification read timeout.
pub const IO_TIMEOUT: Duration = Duration::from_secs(10);
/// Redraws of the progress bar.
const PROGRESS_TICK: Duration = Duration::from_millis(250);
/// Points of the latency percentile curve in the JSON, per decade of
/// "nines" (90%, 99%, 99.9%, ...).
pub const CURVE_POINTS_PER_NINE: u32 = 20;
/// The curve stops at this many nines (99.999%) or where the histogram's
/// count runs out, whichever comes first.
pub const CURVE_NINES_MAX: f64 = 5.0;
/// Rates of one `--rates` sweep, at most.
pub const SWEEP_RATES_MAX: usize = 64;

/// Flags of `amalgam-bench net`.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Server address.
    #[arg(long, default_value = "127.0.0.1:11211")]
    pub server: String,
    /// Wire protocol.
    #[arg(long, value_enum, default_value_t = Protocol::Text)]
    pub protocol: Protocol,
    /// Named workload (DESIGN.md § Benchmarks); the flags below override
    /// its parts.
    #[arg(long, default_value = "memc3")]
    pub workload: String,
    /// Fraction of requests that are GETs (the rest are SETs).
    #[arg(long)]
    pub get_fraction: Option<f64>,
    /// Key bytes.
    #[arg(long)]
    pub key_bytes: Option<usize>,
    /// Value bytes.
    #[arg(long)]
    pub value_bytes: Option<usize>,
    /// Key popularity.
    #[arg(long, value_enum)]
    pub distribution: Option<Distribution>,
    /// Keys in the key space (all preloaded).
    #[arg(long, default_value_t = 1 << 20)]
    pub keys: u64,
    /// Client threads (one event loop each).
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Connections per client thread.
    #[arg(long, default_value_t = 25)]
    pub conns_per_thread: usize,
    /// Requests outstanding per connection.
    #[arg(long, default_value_t = 1)]
    pub pipeline: usize,
    /// Keys per GET request.
    #[arg(long, default_value_t = 1)]
    pub multiget: usize,
    /// Measured seconds.
    #[arg(long, default_value_t = 10.0)]
    pub duration: f64,
    /// Seconds run before the measured window.
    #[arg(long, default_value_t = 2.0)]
    pub warmup: f64,
    /// Open loop: requests per second in total, spread evenly over the
    /// connections, each timed from when it was due (not when sent).
    #[arg(long, conflicts_with = "rates")]
    pub rate: Option<f64>,
    /// Open loop at each of these rates (comma-separated requests/s), one
    /// run and one report row per rate, after one preload.
    #[arg(long, value_delimiter = ',')]
    pub rates: Vec<f64>,
    /// Write SVG plots of the run into this directory (created if missing).
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Set every key once before the run (the default).
    #[arg(long, overrides_with = "no_preload")]
    pub preload: bool,
    /// Do not preload (the server already holds the keys).
    #[arg(long, overrides_with = "preload")]
    pub no_preload: bool,
    /// Preload (and verify), then exit without a timed run.
    #[arg(long)]
    pub preload_only: bool,
    /// What the timed phase sends: the workload's GET/SET mix, or (with
    /// `--protocol resp`) one collection command on every request (see
    /// `net/command.rs` for the requests).
    #[arg(long, value_enum, default_value_t = Command::Getset)]
    pub command: Command,
    /// Members per collection (preloaded; timed requests pick member
    /// `request count % members`).
    #[arg(long, default_value_t = 10)]
    pub members: usize,
    /// Every request names one key (id 0), and only it is preloaded; with
    /// `--command lpush` or `lpop` each connection alternates LPUSH and
    /// LPOP on that one list (starting with the one named).
    #[arg(long)]
    pub hot_key: bool,
    /// Keys read back after the preload.
    #[arg(long, default_value_t = 1024)]
    pub verify_sample: u64,
    /// Server process whose CPU time per request is reported.
    #[arg(long)]
    pub server_pid: Option<u32>,
    /// Also write the result as one line of JSON to this file ("-": stdout).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Label carried into the JSON (e.g. the server's name).
    #[arg(long)]
    pub label: Option<String>,
    /// The server's worker threads, carried into the JSON (`plot` draws
    /// throughput against it when runs differ in it).
    #[arg(long)]
    pub server_threads: Option<usize>,
    /// Seed of the op streams.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Key operations in all connections' streams together (each stream
    /// holds at least STREAM_REQUESTS_MIN requests).
    #[arg(long, default_value_t = STREAM_KEY_OPS, hide = true)]
    pub stream_key_ops: usize,
    /// Open loop: requests outstanding per connection at most; later ones
    /// wait in the client (timed from their due times all the same).
    #[arg(long, default_value_t = schedule::OUTSTANDING_MAX, hide = true)]
    pub open_loop_outstanding: usize,
}

/// Runs the network driver: prints the human report, writes the JSON (one
/// line per run; a `--rates` sweep writes one per rate) and the plots.
pub fn run(args: &Args) -> Result<(), String> {
    let results = if args.rates.is_empty() {
        let result = measure(args)?;
        print!("{}", human(&result));
        vec![result]
    } else {
        sweep(args)?
    };
    if let Some(path) = &args.json {
        write_json_lines(path, &results)?;
    }
    if let Some(dir) = &args.plot {
        for file in crate::plot::write_all(dir, &results)? {
            eprintln!("amalgam-bench net: wrote {}", file.display());
        }
    }
    Ok(())
}

/// One open-loop run per `--rates` rate, the first after the preload, the
/// others on the preloaded server; prints one table with a row per rate.
fn sweep(args: &Args) -> Result<Vec<Value>, String> {
    if args.rates.len() > SWEEP_RATES_MAX {
        return Err(format!("--rates takes at most {SWEEP_RATES_MAX} rates"));
    }
    let mut results = Vec::new();
    for (i, &rate) in args.rates.iter().enumerate() {
        let mut one = args.clone();
        one.rate = Some(rate);
        one.rates.clear();
        if i > 0 {
            one.no_preload = true;
            one.preload = false;
        }
        let r = measure(&one)?;
        if i == 0 {
            print!("{}", human_head(&r));
            print!("{}", table_header());
        }
        print!("{}", table_row(&r));
        results.push(r);
    }
    Ok(results)
}

/// Writes `value` as one line of JSON to `path` ("-": stdout).
pub fn write_json(path: &std::path::Path, value: &Value) -> Result<(), String> {
    write_json_lines(path, std::slice::from_ref(value))
}

/// Writes each of `values` as one line of JSON to `path` ("-": stdout).
pub fn write_json_lines(path: &std::path::Path, values: &[Value]) -> Result<(), String> {
    let mut text = String::new();
    for v in values {
        text += &serde_json::to_string(v).map_err(|e| e.to_string())?;
        text.push('\n');
    }
    if path.as_os_str() == "-" {
        print!("{text}");
        Ok(())
    } else {
        std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
    }
}

/// The workload after the command line's overrides.
fn effective_workload(args: &Args) -> Result<Workload, String> {
    let mut w = workload::workload(&args.workload).ok_or_else(|| {
        let names: Vec<&str> = workload::WORKLOADS.iter().map(|w| w.name).collect();
        format!("unknown workload {:?}: one of {}", args.workload, names.join(", "))
    })?;
    if let Some(f) = args.get_fraction {
        if !(0.0..=1.0).contains(&f) {
            return Err("--get-fraction must be within 0..=1".into());
        }
        w.get_fraction = f;
    }
    if let Some(k) = args.key_bytes {
        w.key_bytes = k;
    }
    if let Some(v) = args.value_bytes {
        w.value_bytes = v;
    }
    if let Some(d) = args.distribution {
        w.distribution = d;
    }
    if !(1..=proto::KEY_BYTES_MAX).contains(&w.key_bytes) {
        return Err(format!("key bytes must be 1..={}", proto::KEY_BYTES_MAX));
    }
    if args.keys == 0 || args.keys > u64::from(u32::MAX) + 1 {
        return Err(format!("--keys must be 1..={}", u64::from(u32::MAX) + 1));
    }
    if args.keys > workload::key_space(w.key_bytes) {
        return Err(format!("{} keys do not fit in {}-byte hex keys", args.keys, w.key_bytes));
    }
    Ok(w)
}

/// Preloads (unless told not to), runs the timed phase and returns the
/// result as JSON.
pub fn measure(args: &Args) -> Result<Value, String> {
    let w = effective_workload(args)?;
    if args.threads == 0 || args.conns_per_thread == 0 || args.pipeline == 0 || args.multiget == 0 {
        return Err("--threads, --conns-per-thread, --pipeline and --multiget must be at least 1".into());
    }
    if args.protocol == Protocol::Resp && args.multiget != 1 {
        return Err("--protocol resp sends one key per request: use --multiget 1".into());
    }
    if args.command != Command::Getset {
        if args.protocol != Protocol::Resp {
            return Err(format!("--command {} needs --protocol resp", args.command.name()));
        }
        if !(1..=command::MEMBERS_MAX).contains(&args.members) {
            return Err(format!("--members must be 1..={}", command::MEMBERS_MAX));
        }
        // The key's first character carries the type (command.rs).
        if w.key_bytes < 2 || args.keys > workload::key_space(w.key_bytes - 1) {
            return Err(format!(
                "{} keys do not fit in {}-byte collection keys (one character is the type)",
                args.keys, w.key_bytes
            ));
        }
    }
    if let Some(rate) = args.rate {
        if !(rate > 0.0 && rate.is_finite()) {
            return Err("--rate must be positive".into());
        }
        if args.pipeline != 1 {
            return Err("--rate sends each request when due: --pipeline does not apply (leave it at 1)".into());
        }
    }
    if args.rates.iter().any(|r| !(*r > 0.0 && r.is_finite())) {
        return Err("--rates must all be positive".into());
    }
    let times_ok = args.duration > 0.0 && args.duration.is_finite() && args.warmup >= 0.0 && args.warmup.is_finite();
    if !times_ok {
        return Err("--duration must be positive and --warmup not negative".into());
    }
    let addr = resolve(&args.server)?;
    let preload = if args.no_preload && !args.preload_only {
        Value::Null
    } else {
        eprintln!("amalgam-bench net: preloading {} keys into {addr} ...", preload_keys(args));
        preload(args, &w, addr)?
    };
    let mut result = json!({
        "label": args.label,
        "server": args.server,
        "protocol": args.protocol.name(),
        "workload": {
            "name": w.name,
            "key_bytes": w.key_bytes,
            "value_bytes": w.value_bytes,
            "get_fraction": w.get_fraction,
            "distribution": format!("{:?}", w.distribution).to_lowercase(),
        },
        "keys": args.keys,
        "threads": args.threads,
        "conns_per_thread": args.conns_per_thread,
        "pipeline": args.pipeline,
        "multiget": args.multiget,
        "command": args.command.name(),
        "members": if args.command == Command::Getset { None } else { Some(args.members) },
        "hot_key": args.hot_key,
        "duration_s": args.duration,
        "warmup_s": args.warmup,
        "mode": if args.rate.is_some() { "open" } else { "closed" },
        "target_rate": args.rate,
        "server_pid": args.server_pid,
        "server_threads": args.server_threads,
        "preload": preload,
        "machine": machine(),
    });
    if args.preload_only {
        return Ok(result);
    }

    let cfg = Config {
        proto: args.protocol,
        key_bytes: w.key_bytes,
        value_bytes: w.value_bytes,
        depth: if args.rate.is_some() { args.open_loop_outstanding.max(1) } else { args.pipeline },
        multiget: args.multiget,
        command: args.command,
        members: args.members,
        hot_key: args.hot_key,
    };
    let conns_total = args.threads * args.conns_per_thread;
    let requests_per_conn = (args.stream_key_ops / (conns_total * args.multiget)).max(STREAM_REQUESTS_MIN);
    let ops_per_conn = requests_per_conn * args.multiget;
    let mut seeds = SplitMix64::new(args.seed);
    let seeds: Vec<Vec<u64>> =
        (0..args.threads).map(|_| (0..args.conns_per_thread).map(|_| seeds.next_u64()).collect()).collect();
    let keys = args.keys;
    // Streams, generated in parallel, then connections, all before timing.
    let per_thread: Vec<Vec<(TcpStream, Source)>> = std::thread::scope(|s| {
        let handles: Vec<_> = seeds
            .iter()
            .map(|seeds| {
                s.spawn(move || -> Result<Vec<(TcpStream, Source)>, String> {
                    seeds
                        .iter()
                        .map(|&seed| {
                            let ops = op_stream(&w, keys, ops_per_conn, seed);
                            Ok((connect(addr)?, Source::Ops { ops, pos: 0, schedule: None }))
                        })
                        .collect()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("stream thread panicked")).collect::<Result<_, _>>()
    })?;

    let clk_tck = clock_ticks_per_second();
    let start = Instant::now();
    let measure_from = start + Duration::from_secs_f64(args.warmup);
    let end = measure_from + Duration::from_secs_f64(args.duration);
    let phase = Phase::Timed { measure_from, end };
    let mut per_thread = per_thread;
    if let Some(rate) = args.rate {
        let n = args.threads * args.conns_per_thread;
        for (i, (_, source)) in per_thread.iter_mut().flatten().enumerate() {
            if let Source::Ops { schedule, .. } = source {
                *schedule = Some(Schedule::new(start, rate, i, n));
            }
        }
    }
    let answered = AtomicU64::new(0);
    let bar = progress_bar(args);
    let (stats, cpu) = std::thread::scope(|s| {
        let cfg = &cfg;
        let answered = &answered;
        let handles: Vec<_> = per_thread
            .into_iter()
            .enumerate()
            .map(|(i, conns)| {
                std::thread::Builder::new()
                    .name(format!("net-client-{i}"))
                    .spawn_scoped(s, move || driver::run_thread(cfg, conns, phase, answered))
                    .expect("cannot start a client thread")
            })
            .collect();
        let mut ticker = Ticker { bar: &bar, answered, start, last: (start, 0) };
        ticker.sleep_until(measure_from);
        let cpu0 = (args.server_pid.and_then(|p| cpu_ticks(&p.to_string())), cpu_ticks("self"));
        ticker.sleep_until(end);
        let cpu1 = (args.server_pid.and_then(|p| cpu_ticks(&p.to_string())), cpu_ticks("self"));
        bar.finish_and_clear();
        let mut total = Stats::default();
        for h in handles {
            total.merge(&h.join().expect("client thread panicked"));
        }
        (total, (cpu0, cpu1))
    });

    let secs = args.duration;
    let ((server0, client0), (server1, client1)) = cpu;
    let per_request_us = |a: Option<u64>, b: Option<u64>, n: u64| match (a, b) {
        (Some(a), Some(b)) if n > 0 => Some(b.saturating_sub(a) as f64 * 1e6 / clk_tck / n as f64),
        _ => None,
    };
    if args.server_pid.is_some() && server0.is_none() {
        return Err(format!("cannot read /proc/{}/stat", args.server_pid.unwrap_or(0)));
    }
    let q = |p: f64| stats.hist.value_at_quantile(p) as f64 / 1e3;
    let curve: Vec<[f64; 2]> = percentile_curve(&stats.hist);
    let hit_ratio = if stats.get_keys > 0 { Some(stats.hits as f64 / stats.get_keys as f64) } else { None };
    let extra = json!({
        "requests": stats.requests,
        "key_ops": stats.key_ops(),
        "gets": stats.gets,
        "get_keys": stats.get_keys,
        "hits": stats.hits,
        "sets": stats.sets,
        "stored": stats.stored,
        "requests_per_s": stats.requests as f64 / secs,
        "keys_per_s": stats.key_ops() as f64 / secs,
        "hit_ratio": hit_ratio,
        "latency_us": {
            "p50": q(0.5), "p90": q(0.9), "p99": q(0.99), "p999": q(0.999),
            "max": stats.hist.max() as f64 / 1e3, "mean": stats.hist.mean() / 1e3,
        },
        "latency_curve": curve,
        "errors": stats.errors.to_json(),
        "server_cpu_us_per_request": per_request_us(server0, server1, stats.requests),
        "server_cpu_us_per_key": per_request_us(server0, server1, stats.key_ops()),
        "client_cpu_us_per_request": per_request_us(client0, client1, stats.requests),
    });
    if let (Value::Object(r), Value::Object(e)) = (&mut result, extra) {
        r.extend(e);
    }
    if stats.requests == 0 {
        print!("{}", human(&result));
        return Err(format!(
            "no request completed in the measured window ({} errors; first: {})",
            stats.errors.total(),
            stats.errors.first.as_deref().unwrap_or("none")
        ));
    }
    Ok(result)
}

/// The latency distribution as `[percentile, µs]` points, evenly spaced
/// in "nines" (x = -log10(1 - p): 0 at 0%, 1 at 90%, 2 at 99%, ...), the
/// HdrHistogram percentile plot's axis, up to [`CURVE_NINES_MAX`] or
/// the last percentile the count resolves. Empty for an empty histogram.
pub fn percentile_curve(hist: &hdrhistogram::Histogram<u64>) -> Vec<[f64; 2]> {
    if hist.is_empty() {
        return Vec::new();
    }
    let nines_max = (hist.len() as f64).log10().min(CURVE_NINES_MAX);
    let steps = (nines_max * f64::from(CURVE_POINTS_PER_NINE)).ceil() as u32;
    (0..=steps)
        .map(|i| {
            let nines = (f64::from(i) / f64::from(CURVE_POINTS_PER_NINE)).min(nines_max);
            let p = 1.0 - 10f64.powf(-nines);
            [p * 100.0, hist.value_at_quantile(p) as f64 / 1e3]
        })
        .collect()
}

/// A progress bar on stderr over the run (warm-up and measured window), or
/// a hidden one when stderr is not a terminal.
fn progress_bar(args: &Args) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let total_ms = ((args.warmup + args.duration) * 1e3) as u64;
    let bar = indicatif::ProgressBar::with_draw_target(Some(total_ms), indicatif::ProgressDrawTarget::stderr());
    let style = indicatif::ProgressStyle::with_template("{prefix} [{bar:30}] {msg}")
        .expect("valid progress template")
        .progress_chars("=> ");
    bar.set_style(style);
    let label = args.label.as_deref().unwrap_or("");
    bar.set_prefix(match args.rate {
        Some(r) => format!("net {label} at {r:.0}/s"),
        None => format!("net {label}"),
    });
    bar
}

/// Redraws the progress bar while the main thread waits for the run.
struct Ticker<'a> {
    bar: &'a indicatif::ProgressBar,
    answered: &'a AtomicU64,
    start: Instant,
    /// The previous tick: its time and the replies counted then.
    last: (Instant, u64),
}

impl Ticker<'_> {
    /// Sleeps until `t`, redrawing every [`PROGRESS_TICK`] (if the bar is
    /// shown) with the rate since the previous tick and the time left.
    fn sleep_until(&mut self, t: Instant) {
        let end = self.start + Duration::from_millis(self.bar.length().unwrap_or(0));
        loop {
            let now = Instant::now();
            if now >= t {
                return;
            }
            if self.bar.is_hidden() {
                std::thread::sleep(t - now);
                continue;
            }
            std::thread::sleep((t - now).min(PROGRESS_TICK));
            let now = Instant::now();
            let n = self.answered.load(Ordering::Relaxed);
            let secs = (now - self.last.0).as_secs_f64();
            let rate = if secs > 0.0 { n.saturating_sub(self.last.1) as f64 / secs } else { 0.0 };
            self.last = (now, n);
            self.bar.set_position((now - self.start).as_millis() as u64);
            let left = end.saturating_duration_since(now).as_secs_f64();
            self.bar.set_message(format!("{rate:>10.0} req/s  {left:>5.1} s left"));
        }
    }
}

pub(crate) fn resolve(server: &str) -> Result<SocketAddr, String> {
    server
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve --server {server}: {e}"))?
        .next()
        .ok_or_else(|| format!("no address for --server {server}"))
}

/// A connected, nonblocking, no-delay socket.
fn connect(addr: SocketAddr) -> Result<TcpStream, String> {
    let s = TcpStream::connect_timeout(&addr, IO_TIMEOUT).map_err(|e| format!("cannot connect to {addr}: {e}"))?;
    s.set_nodelay(true).map_err(|e| e.to_string())?;
    s.set_nonblocking(true).map_err(|e| e.to_string())?;
    Ok(s)
}

/// SETs every key once, checks every reply, then reads a sample back.
fn preload(args: &Args, w: &Workload, addr: SocketAddr) -> Result<Value, String> {
    let conns_per_thread = args.conns_per_thread.min(PRELOAD_CONNS_PER_THREAD);
    let n = (args.threads * conns_per_thread) as u64;
    let cfg = Config {
        proto: if args.protocol == Protocol::Resp { Protocol::Resp } else { Protocol::Text },
        key_bytes: w.key_bytes,
        value_bytes: w.value_bytes,
        depth: PRELOAD_DEPTH,
        multiget: 1,
        command: args.command,
        members: args.members,
        hot_key: args.hot_key,
    };
    let keys = preload_keys(args);
    // A collection is filled by `fill_requests` requests (a million-member
    // geo key by 256), each its own unit.
    let units = keys * if args.command.ty().is_some() { command::fill_requests(args.members) } else { 1 };
    let mut per_thread: Vec<Vec<(TcpStream, Source)>> = Vec::new();
    for t in 0..args.threads {
        let mut conns = Vec::new();
        for c in 0..conns_per_thread {
            let i = (t * conns_per_thread + c) as u64;
            let source = Source::Preload { next: units * i / n, end: units * (i + 1) / n };
            conns.push((connect(addr)?, source));
        }
        per_thread.push(conns);
    }
    let t = Instant::now();
    let answered = AtomicU64::new(0);
    let stats = std::thread::scope(|s| {
        let cfg = &cfg;
        let answered = &answered;
        let handles: Vec<_> = per_thread
            .into_iter()
            .map(|conns| s.spawn(move || driver::run_thread(cfg, conns, Phase::Preload, answered)))
            .collect();
        let mut total = Stats::default();
        for h in handles {
            total.merge(&h.join().expect("preload thread panicked"));
        }
        total
    });
    let secs = t.elapsed().as_secs_f64();
    if stats.stored != units || stats.errors.total() > 0 {
        return Err(format!(
            "preload: {} of {} requests stored ({} keys), {} errors (first: {})",
            stats.stored,
            units,
            keys,
            stats.errors.total(),
            stats.errors.first.as_deref().unwrap_or("none")
        ));
    }
    let verified = match args.command.ty() {
        None => verify(addr, w, keys, args.verify_sample, cfg.proto)?,
        Some(ty) => verify_collections(addr, w, ty, keys, args.verify_sample, args.members)?,
    };
    Ok(json!({
        "keys": keys,
        // Every key stored (checked above); a collection's took several
        // requests (sets_per_s counts requests).
        "stored": keys,
        "requests": stats.stored,
        "seconds": secs,
        "sets_per_s": stats.stored as f64 / secs,
        "verified": verified,
    }))
}

/// Reads back `sample` keys spread over `0..keys` with text multi-gets (or
/// pipelined RESP GETs, whose replies carry no key and come in order) and
/// checks each value byte for byte. Returns the number checked.
fn verify(addr: SocketAddr, w: &Workload, keys: u64, sample: u64, proto: Protocol) -> Result<u64, String> {
    let sample = sample.min(keys);
    if sample == 0 {
        return Ok(0);
    }
    let mut client = Client::connect(addr, IO_TIMEOUT)?;
    let ids: Vec<u64> = (0..sample).map(|i| (u128::from(i) * u128::from(keys) / u128::from(sample)) as u64).collect();
    let mut out = Vec::new();
    let mut scratch = Vec::new();
    for chunk in ids.chunks(VERIFY_BATCH) {
        out.clear();
        proto::push_get(proto, &mut out, chunk.iter().copied(), w.key_bytes, &mut scratch);
        client.send(&out).map_err(|e| format!("verify: {e}"))?;
        let mut got = 0;
        loop {
            if proto == Protocol::Resp && got == chunk.len() {
                break;
            }
            match client.next(proto).map_err(|e| format!("verify: {e}"))? {
                (proto::Event::Value { key, len }, unit) => {
                    let want = chunk.get(got).copied();
                    let key = if proto == Protocol::Resp { want } else { key };
                    if key != want {
                        return Err(format!(
                            "verify: expected key {want:?} next, got {key:?} (missing after preload?)"
                        ));
                    }
                    let id = want.unwrap_or(0);
                    if proto::value_data(unit, unit.len(), len) != value_of(id, 0, w.value_bytes).as_slice() {
                        return Err(format!("verify: key {id} holds a different value than preloaded"));
                    }
                    got += 1;
                }
                (proto::Event::End, _) => break,
                (e, _) => return Err(format!("verify: unexpected reply {e:?}")),
            }
        }
        if got != chunk.len() {
            return Err(format!("verify: key {} missing after preload", chunk[got]));
        }
    }
    Ok(sample)
}

/// Keys the preload fills: all, or with `--hot-key` the one (id 0).
fn preload_keys(args: &Args) -> u64 {
    if args.hot_key {
        1
    } else {
        args.keys
    }
}

/// Asks the cardinality of `sample` collections spread over `0..keys`,
/// pipelined [`VERIFY_BATCH`] at a time; each must hold at least
/// `members`. Returns the number checked.
fn verify_collections(
    addr: SocketAddr,
    w: &Workload,
    ty: command::Type,
    keys: u64,
    sample: u64,
    members: usize,
) -> Result<u64, String> {
    let sample = sample.min(keys);
    let mut client = Client::connect(addr, IO_TIMEOUT)?;
    let ids: Vec<u64> = (0..sample).map(|i| (u128::from(i) * u128::from(keys) / u128::from(sample)) as u64).collect();
    let mut out = Vec::new();
    let mut scratch = command::Scratch::default();
    for chunk in ids.chunks(VERIFY_BATCH) {
        out.clear();
        for &id in chunk {
            command::push_card(ty, &mut out, id, w.key_bytes, &mut scratch);
        }
        client.send(&out).map_err(|e| format!("verify: {e}"))?;
        for &id in chunk {
            let (event, _) = client.next(Protocol::Resp).map_err(|e| format!("verify: {e}"))?;
            if ty.filled().judge(event, w.value_bytes, members) != command::Outcome::Hit {
                return Err(format!("verify: collection {id} answered {event:?}, expected at least {members} members"));
            }
        }
    }
    Ok(sample)
}

/// `utime + stime` of a process (`"self"` or a pid), in clock ticks.
pub(crate) fn cpu_ticks(pid: &str) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_cpu_ticks(&stat)
}

/// Fields 14 and 15 of `/proc/PID/stat`, counted after the command name
/// (which may hold spaces and parentheses, hence the last `)`).
fn parse_cpu_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state): utime is field 14, stime 15.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// Linux reports /proc/PID/stat times in USER_HZ ticks, which its ABI
/// fixes at 100 per second on x86-64 and arm64 (whatever the kernel's
/// internal HZ; sysconf(_SC_CLK_TCK) returns this constant).
pub(crate) const USER_HZ: f64 = 100.0;

fn clock_ticks_per_second() -> f64 {
    USER_HZ
}

pub(crate) fn machine() -> Value {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_default();
    json!({ "cpu": cpu, "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0) })
}

/// The human report of a result: its head, the table and its errors.
pub fn human(r: &Value) -> String {
    let mut out = human_head(r);
    if r.get("requests").is_some() {
        out += &table_header();
        out += &table_row(r);
    }
    out
}

/// The run's description and its preload.
pub fn human_head(r: &Value) -> String {
    let w = &r["workload"];
    let f = |v: &Value, digits: usize| v.as_f64().map_or("-".to_string(), |x| format!("{x:.digits$}"));
    let mut out = format!(
        "net {} {}{} ({} B keys, {} B values, {}{}) over {} to {}: {} keys, {} threads x {} conns, \
         {}, multiget {}, {} s (+{} s warm-up)\n",
        r["label"].as_str().unwrap_or(""),
        w["name"].as_str().unwrap_or("?"),
        match r["command"].as_str() {
            Some(c) if c != "getset" => format!(
                " --command {c} ({} members{})",
                r["members"],
                if r["hot_key"] == true { ", hot key" } else { "" }
            ),
            _ if r["hot_key"] == true => " (hot key)".to_string(),
            _ => String::new(),
        },
        w["key_bytes"],
        w["value_bytes"],
        match r["command"].as_str() {
            Some("getset") | None => format!("{:.0}% GET, ", w["get_fraction"].as_f64().unwrap_or(0.0) * 100.0),
            Some(_) => String::new(),
        },
        w["distribution"].as_str().unwrap_or("?"),
        r["protocol"].as_str().unwrap_or("?"),
        r["server"].as_str().unwrap_or("?"),
        r["keys"],
        r["threads"],
        r["conns_per_thread"],
        match r["target_rate"].as_f64() {
            Some(_) => "open loop (latency from due times)".to_string(),
            None => format!("pipeline {}", r["pipeline"]),
        },
        r["multiget"],
        r["duration_s"],
        r["warmup_s"],
    );
    if let Some(p) = r["preload"].as_object() {
        out += &format!(
            "  preload: {} keys stored in {} s ({} sets/s), {} read back and verified\n",
            p["stored"],
            f(&p["seconds"], 2),
            f(&p["sets_per_s"], 0),
            p["verified"]
        );
    }
    out
}

/// The column heads of [`table_row`].
pub fn table_header() -> String {
    format!(
        "  {:>12} {:>12} {:>12} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>13} {:>13}\n",
        "target/s",
        "requests/s",
        "keys/s",
        "hit %",
        "p50 us",
        "p90 us",
        "p99 us",
        "p999 us",
        "max us",
        "errors",
        "srv CPU us/rq",
        "cli CPU us/rq"
    )
}

/// One result's row (target/s is "-" in closed loop), and its errors.
pub fn table_row(r: &Value) -> String {
    let f = |v: &Value, digits: usize| v.as_f64().map_or("-".to_string(), |x| format!("{x:.digits$}"));
    let l = &r["latency_us"];
    let mut out = format!(
        "  {:>12} {:>12} {:>12} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>13} {:>13}\n",
        f(&r["target_rate"], 0),
        f(&r["requests_per_s"], 0),
        f(&r["keys_per_s"], 0),
        r["hit_ratio"].as_f64().map_or("-".into(), |h| format!("{:.2}", h * 100.0)),
        f(&l["p50"], 1),
        f(&l["p90"], 1),
        f(&l["p99"], 1),
        f(&l["p999"], 1),
        f(&l["max"], 0),
        r["errors"]["total"].to_string(),
        f(&r["server_cpu_us_per_request"], 2),
        f(&r["client_cpu_us_per_request"], 2),
    );
    if r["errors"]["total"].as_u64().unwrap_or(0) > 0 {
        let e = &r["errors"];
        let kinds: Vec<String> = e
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, v)| *k != "total" && *k != "first" && v.as_u64().unwrap_or(0) > 0)
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        out += &format!("  ERRORS: {}; first: {}\n", kinds.join(", "), e["first"].as_str().unwrap_or("?"));
    }
    out
}

#[cfg(test)]
mod tests;
