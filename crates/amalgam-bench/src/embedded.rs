//! The embedded driver: the papers' workloads through direct calls into
//! Amalgam's engine and, in the same run, the peer maps (`peers.rs`).
//!
//! # Method
//! * Each (workload, contender) pair runs in a child process (the same
//!   binary re-executed with `--child`), so one contender's memory cannot
//!   flatter or burden the next, and resident bytes per item are the child's
//!   `/proc/self/statm` resident delta across the preload divided by the
//!   keys loaded (the index, the items and every allocator's slack).
//! * Keys (fixed-width hex, `workload.rs`) are built before the preload;
//!   the preload runs on `--load-threads` threads and gives the load rate,
//!   timed until the map has settled (`Contender::settle`: Amalgam's
//!   background expansions, with the default initial table, count in it).
//! * The peers are built fair by default: foldhash (Amalgam's hasher) for
//!   every peer that takes a hasher, presized for `--keys` where it can be
//!   (`peers.rs`); `--peer-defaults` builds them as their crates' `new()`
//!   does. The printed table and every JSON line say which ran.
//! * Amalgam's store gets a memory limit of keys × (item bytes + 64) × 2
//!   (so no SET fails) and the default initial buckets; the report adds its
//!   index shape after the preload (buckets, overflow nodes per bucket,
//!   items per bucket, expansions).
//! * For each thread count, each run first generates every thread's op
//!   stream (`workload::op_stream`, a different seed per thread and run;
//!   YCSB scrambled Zipf 0.99 or uniform, per the workload), then starts
//!   the threads at a barrier and times them to the last one's end:
//!   Mops/s = operations / wall time. Runs are repeated (`--runs`) and the
//!   median kept.
//! * Every operation does equal work across contenders: a GET reads the
//!   value's length and first byte into a `black_box`, a SET copies key
//!   and value in (peers.rs). SETs overwrite preloaded keys with one of a
//!   few prebuilt values, so every GET must hit: a miss (a cache that
//!   evicted) fails the run, as does an item count that changed.
//! * The parent prints a throughput table (rows workload × threads,
//!   columns contenders, plus Amalgam / best peer), a load-rate and
//!   bytes-per-item table, and with `--json` writes every child's line.
//!
//! Experiments beside the workloads (`--experiment`):
//! * `batch`: one thread, uniform GET hits, single `get` vs `get_batch` in
//!   windows of 16 and 32 keys (MICA §5.3's prefetching).
//! * `expansion`: reader threads' GET throughput (uniform hits) while the
//!   table doubles — keys preloaded to exactly the growth threshold, then a
//!   writer inserts new keys, and the window is the time
//!   `stats().expanding` is true — vs. the same readers and writer on a
//!   table pre-sized to the doubled size, measured for as long (Mercury §4
//!   reports −9% during expansion).
//! * `llc`: one contender (`--contenders amalgam|mutex-hashmap|...`),
//!   preload `--keys` 8 B / 8 B items, then `--gets` uniform GET hits
//!   (0 allowed) and exit, for `scripts/llc-per-get.sh` to count
//!   last-level-cache misses per GET under valgrind's cache simulator by
//!   difference between two runs (`--llc-baseline` or `--gets 0`).

use crate::peers::{self, Amalgam, Contender, Peers, CONTENDERS};
use crate::workload::{self, op_stream, Op, SplitMix64, Workload};
use serde_json::{json, Value};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// Prebuilt values a SET picks from.
const SET_VALUES: usize = 16;
/// Default key count (4 Mi, the issue's default preload).
pub const KEYS_DEFAULT: usize = 4 << 20;
/// Bytes written to push the key stream out of the simulated LL cache
/// (more than twice Mercury's 12 MiB L3).
const LLC_EVICT_BYTES: usize = 32 << 20;
/// How often the expansion experiment samples `stats().expanding`.
const SAMPLE_PERIOD: Duration = Duration::from_micros(200);
/// Longest the expansion experiment waits for an expansion to start or end.
const EXPANSION_WAIT_MAX: Duration = Duration::from_secs(120);
/// New keys the writer inserts with `--writer-burst`: enough to push the
/// preloaded table past its load limit (the engine checks every 256 inserts).
const EXPANSION_BURST_KEYS: usize = 4096;

/// Flags of `amalgam-bench embedded`.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Workloads, comma-separated (names from DESIGN.md § Benchmarks).
    #[arg(long, value_delimiter = ',', default_value = "mercury-micro,mercury-ycsb-95,mercury-ycsb-50,memc3")]
    pub workload: Vec<String>,
    /// Contenders, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "amalgam,dashmap,scc,papaya,moka,quick_cache,mutex-hashmap,rwlock-hashbrown,flurry"
    )]
    pub contenders: Vec<String>,
    /// Build the peers with their crates' defaults (default hasher, no
    /// presizing), the comparison before issue 23; without it every peer
    /// that takes a hasher gets foldhash, Amalgam's, and is presized.
    #[arg(long)]
    pub peer_defaults: bool,
    /// Keys preloaded.
    #[arg(long, default_value_t = KEYS_DEFAULT)]
    pub keys: usize,
    /// Thread counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    pub threads: Vec<usize>,
    /// Threads of the preload.
    #[arg(long, default_value_t = 2)]
    pub load_threads: usize,
    /// Operations per thread per run.
    #[arg(long, default_value_t = 5_000_000)]
    pub ops_per_thread: usize,
    /// Runs per thread count; the median is reported.
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// Also write the results as JSON to this file.
    #[arg(long)]
    pub json: Option<std::path::PathBuf>,
    /// Run an experiment instead of the workloads: batch, expansion or llc.
    #[arg(long)]
    pub experiment: Option<String>,
    /// GETs of the llc experiment.
    #[arg(long, default_value_t = 1 << 20)]
    pub gets: usize,
    /// llc experiment: read the key stream without looking keys up.
    #[arg(long)]
    pub llc_baseline: bool,
    /// expansion experiment: the writer inserts only EXPANSION_BURST_KEYS
    /// new keys (enough to start the doubling) and then stops, so the
    /// readers share the machine with the expand thread alone; without it
    /// the writer inserts for the whole window.
    #[arg(long)]
    pub writer_burst: bool,
    /// Internal: run one (workload, contender) pair and print a JSON line.
    #[arg(long, hide = true)]
    pub child: bool,
}

/// Runs the embedded driver.
pub fn run(args: &Args) -> Result<(), String> {
    if args.keys == 0 || args.keys > u32::MAX as usize {
        return Err(format!("--keys must be 1..={}", u32::MAX));
    }
    if args.runs == 0 || args.threads.contains(&0) {
        return Err("--runs and every --threads entry must be at least 1".into());
    }
    match args.experiment.as_deref() {
        Some("batch") => return experiment_batch(args),
        Some("expansion") => return experiment_expansion(args),
        Some("llc") => return experiment_llc(args),
        Some(other) => return Err(format!("unknown experiment {other:?}: batch, expansion or llc")),
        None => {}
    }
    let workloads: Vec<Workload> = args
        .workload
        .iter()
        .map(|n| workload::workload(n).ok_or_else(|| format!("unknown workload {n:?}")))
        .collect::<Result<_, _>>()?;
    for w in &workloads {
        if (args.keys as u64) > workload::key_space(w.key_bytes) {
            return Err(format!("{} keys do not fit in {}-byte keys", args.keys, w.key_bytes));
        }
    }
    if args.child {
        let [w] = workloads[..] else { return Err("--child takes one workload".into()) };
        let [c] = &args.contenders[..] else { return Err("--child takes one contender".into()) };
        println!("{}", child(args, &w, c)?);
        return Ok(());
    }
    let mut results = Vec::new();
    for w in &workloads {
        for c in &args.contenders {
            if !CONTENDERS.contains(&c.as_str()) {
                return Err(format!("unknown contender {c:?}"));
            }
            eprintln!("amalgam-bench: {} / {c} ...", w.name);
            results.push(spawn_child(args, w.name, c)?);
        }
    }
    println!("{}\n", peers_of(args).describe());
    print!("{}", report(&results, &args.threads));
    let out = json!({
        "machine": machine(),
        "args": format!("{args:?}"),
        "peers": peers_of(args).name(),
        "results": results,
    });
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&out).unwrap()).map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn spawn_child(args: &Args, workload: &str, contender: &str) -> Result<Value, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let join = |v: &[usize]| v.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(",");
    let out = std::process::Command::new(exe)
        .args(["embedded", "--child", "--workload", workload, "--contenders", contender])
        .args(["--keys", &args.keys.to_string(), "--threads", &join(&args.threads)])
        .args(["--load-threads", &args.load_threads.to_string()])
        .args(["--ops-per-thread", &args.ops_per_thread.to_string(), "--runs", &args.runs.to_string()])
        .args(args.peer_defaults.then_some("--peer-defaults"))
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!("child for {workload}/{contender} failed: {}", out.status));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().last().ok_or("child printed nothing")?;
    serde_json::from_str(line).map_err(|e| format!("child output {line:?}: {e}"))
}

/// Every key of the run, `key_bytes` apart in one buffer.
#[derive(Debug)]
pub struct Keys {
    bytes: Vec<u8>,
    width: usize,
}

impl Keys {
    /// Keys `0..n` of `width` bytes.
    pub fn new(n: usize, width: usize) -> Keys {
        let mut bytes = Vec::with_capacity(n * width);
        let mut k = Vec::with_capacity(width);
        for id in 0..n as u64 {
            workload::key_into(id, width, &mut k);
            bytes.extend_from_slice(&k);
        }
        Keys { bytes, width }
    }

    /// Key `id`.
    #[inline]
    pub fn get(&self, id: u32) -> &[u8] {
        let at = id as usize * self.width;
        &self.bytes[at..at + self.width]
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.bytes.len() / self.width
    }

    /// True if there are none.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

/// Resident bytes of this process: `VmRSS` of `/proc/self/status` (the
/// same counter as `/proc/self/statm`'s second field, already in kB, so no
/// page size is needed).
pub fn resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Loads keys `0..keys.len()` on `threads` threads, then lets the map
/// settle (Amalgam's last background expansion counts in the load);
/// returns Mops/s.
fn preload(c: &dyn Contender, keys: &Keys, value_bytes: usize, threads: usize) -> f64 {
    let n = keys.len();
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for t in 0..threads.max(1) {
            s.spawn(move || {
                let value = workload::value_of(t as u64, 0, value_bytes);
                for id in (t..n).step_by(threads.max(1)) {
                    c.set(keys.get(id as u32), &value);
                }
            });
        }
    });
    c.settle();
    n as f64 / t0.elapsed().as_secs_f64() / 1e6
}

/// CPU time the calling thread has run, in ns: the first field of
/// `/proc/thread-self/schedstat` (the scheduler's own account, ns
/// resolution). None where the file is missing.
fn thread_cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat").ok()?.split_whitespace().next()?.parse().ok()
}

/// One timed run: wall-clock Mops/s, CPU-normalized Mops/s (the sum over
/// threads of each thread's operations per second of CPU it actually got,
/// so time the machine gave to other processes does not count), and the
/// GETs that missed (every key is preloaded, so any miss is an eviction or
/// a bug).
struct Timed {
    mops: f64,
    mops_cpu: f64,
    misses: usize,
}

/// Runs every thread's stream at once.
fn timed(c: &dyn Contender, keys: &Keys, values: &[Vec<u8>], streams: &[Vec<Op>]) -> Timed {
    let barrier = Barrier::new(streams.len() + 1);
    let mut start = Instant::now();
    let misses = AtomicU64::new(0);
    // Sum over threads of ops per CPU-second.
    let cpu_rate = std::sync::Mutex::new(0.0f64);
    std::thread::scope(|s| {
        for ops in streams {
            let (barrier, misses, cpu_rate) = (&barrier, &misses, &cpu_rate);
            s.spawn(move || {
                barrier.wait();
                let cpu0 = thread_cpu_ns();
                let mut sink = 0usize;
                let mut missed = 0u64;
                for (i, op) in ops.iter().enumerate() {
                    let k = keys.get(op.key);
                    if op.get {
                        match c.get(k) {
                            Some(d) => sink = sink.wrapping_add(d),
                            None => missed += 1,
                        }
                    } else {
                        c.set(k, &values[i % values.len()]);
                    }
                }
                let cpu1 = thread_cpu_ns();
                black_box(sink);
                misses.fetch_add(missed, Ordering::Relaxed);
                let rate = match (cpu0, cpu1) {
                    (Some(a), Some(b)) if b > a => ops.len() as f64 / ((b - a) as f64 / 1e9),
                    _ => f64::NAN,
                };
                *cpu_rate.lock().unwrap_or_else(|e| e.into_inner()) += rate;
            });
        }
        barrier.wait();
        start = Instant::now();
    });
    let secs = start.elapsed().as_secs_f64();
    Timed {
        mops: streams.iter().map(Vec::len).sum::<usize>() as f64 / secs / 1e6,
        mops_cpu: cpu_rate.into_inner().unwrap_or_else(|e| e.into_inner()) / 1e6,
        misses: misses.into_inner() as usize,
    }
}

/// The median of `v` (mean of the middle two for an even count).
pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

fn child(args: &Args, w: &Workload, name: &str) -> Result<Value, String> {
    let keys = Keys::new(args.keys, w.key_bytes);
    let values: Vec<Vec<u8>> = (0..SET_VALUES as u64).map(|v| workload::value_of(v, 1, w.value_bytes)).collect();
    let before = resident_bytes();
    let c = peers::build(name, args.keys, w.key_bytes + w.value_bytes, peers_of(args))?;
    let load_mops = preload(&*c, &keys, w.value_bytes, args.load_threads);
    let after = resident_bytes();
    let stored = c.items();
    if stored != args.keys {
        return Err(format!("{name} holds {stored} of {} keys after the preload", args.keys));
    }
    let bytes_per_item = after.saturating_sub(before) as f64 / args.keys as f64;
    let mut per_threads = Vec::new();
    for &t in &args.threads {
        let mut mops = Vec::new();
        let mut mops_cpu = Vec::new();
        for run in 0..args.runs {
            let streams: Vec<Vec<Op>> = (0..t)
                .map(|i| op_stream(w, args.keys as u64, args.ops_per_thread, ((run * 64 + i) as u64 + 1) * 0x5851_F42D))
                .collect();
            let r = timed(&*c, &keys, &values, &streams);
            if r.misses != 0 {
                return Err(format!("{name}: {} GETs of preloaded keys missed (evictions?)", r.misses));
            }
            mops.push(r.mops);
            mops_cpu.push(r.mops_cpu);
        }
        per_threads.push(json!({
            "threads": t,
            "mops_runs": mops,
            "mops": median(&mops),
            "mops_cpu_runs": mops_cpu,
            "mops_cpu": median(&mops_cpu),
        }));
    }
    // SETs only overwrite preloaded keys: a cache that lost any evicted.
    c.settle();
    let stored = c.items();
    if stored != args.keys {
        return Err(format!("{name} holds {stored} of {} keys after the timed runs (evictions?)", args.keys));
    }
    Ok(json!({
        "workload": w.name,
        "contender": name,
        "peers": peers_of(args).name(),
        "keys": args.keys,
        "load_threads": args.load_threads,
        "load_mops": load_mops,
        "bytes_per_item": bytes_per_item,
        "results": per_threads,
        "facts": c.facts(),
    }))
}

/// How the peers are built, from `--peer-defaults`.
fn peers_of(args: &Args) -> Peers {
    if args.peer_defaults {
        Peers::Defaults
    } else {
        Peers::Fair
    }
}

fn machine() -> Value {
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

/// Formats the results: Mops/s per workload × threads × contender, the
/// ratio of Amalgam to the best peer, then load rate and bytes per item.
pub fn report(results: &[Value], threads: &[usize]) -> String {
    let mut out = String::new();
    let mut contenders: Vec<&str> = Vec::new();
    let mut workloads: Vec<&str> = Vec::new();
    for r in results {
        let c = r["contender"].as_str().unwrap_or("?");
        let w = r["workload"].as_str().unwrap_or("?");
        if !contenders.contains(&c) {
            contenders.push(c);
        }
        if !workloads.contains(&w) {
            workloads.push(w);
        }
    }
    let find = |w: &str, c: &str| results.iter().find(|r| r["workload"] == w && r["contender"] == c);
    for (field, title) in [
        ("mops", "Throughput, Mops/s of wall-clock time (median of runs)"),
        (
            "mops_cpu",
            "Throughput per CPU-second the worker threads got, Mops/s (sum over threads of ops / thread CPU time, \
             median of runs): the machine's other load does not count",
        ),
    ] {
        out.push_str(&format!("{title}\n\n| workload | threads |"));
        for c in &contenders {
            out.push_str(&format!(" {c} |"));
        }
        out.push_str(" amalgam / best peer |\n|---|---|");
        out.push_str(&"---|".repeat(contenders.len() + 1));
        out.push('\n');
        for w in &workloads {
            for &t in threads {
                out.push_str(&format!("| {w} | {t} |"));
                let mut amalgam = f64::NAN;
                let mut best_peer: Option<(f64, &str)> = None;
                for c in &contenders {
                    let m = find(w, c)
                        .and_then(|r| r["results"].as_array()?.iter().find(|x| x["threads"] == t)?[field].as_f64())
                        .unwrap_or(f64::NAN);
                    out.push_str(&format!(" {m:.2} |"));
                    if *c == "amalgam" {
                        amalgam = m;
                    } else if best_peer.is_none_or(|(b, _)| m > b) {
                        best_peer = Some((m, c));
                    }
                }
                match best_peer {
                    Some((b, name)) if amalgam.is_finite() => {
                        out.push_str(&format!(" {:.2}× ({name}) |\n", amalgam / b))
                    }
                    _ => out.push_str(" – |\n"),
                }
            }
        }
        out.push('\n');
    }
    out.push_str("Preload: Mops/s and resident bytes per item\n\n| workload | contender | load Mops/s | bytes/item |\n|---|---|---|---|\n");
    for w in &workloads {
        for c in &contenders {
            if let Some(r) = find(w, c) {
                out.push_str(&format!(
                    "| {w} | {c} | {:.2} | {:.1} |\n",
                    r["load_mops"].as_f64().unwrap_or(f64::NAN),
                    r["bytes_per_item"].as_f64().unwrap_or(f64::NAN)
                ));
            }
        }
    }
    let amalgam: Vec<&Value> = results.iter().filter(|r| r["contender"] == "amalgam").collect();
    if !amalgam.is_empty() {
        out.push_str(
            "\nAmalgam's index after the preload\n\n| workload | buckets | items/bucket | overflow nodes/bucket \
             | index bytes/item | expansions |\n|---|---|---|---|---|---|\n",
        );
        for r in amalgam {
            let f = &r["facts"];
            let num = |k: &str| f[k].as_f64().unwrap_or(f64::NAN);
            let keys = r["keys"].as_f64().unwrap_or(f64::NAN);
            out.push_str(&format!(
                "| {} | {} | {:.2} | {:.3} | {:.1} | {} |\n",
                r["workload"].as_str().unwrap_or("?"),
                num("buckets"),
                num("items_per_bucket"),
                num("overflow_per_bucket"),
                num("index_bytes") / keys,
                num("expansions"),
            ));
        }
    }
    out
}

fn micro_keys(args: &Args) -> (Workload, Keys) {
    let w = workload::workload("mercury-micro").expect("mercury-micro is a named workload");
    (w, Keys::new(args.keys, w.key_bytes))
}

fn uniform_ids(keys: usize, n: usize, seed: u64) -> Vec<u32> {
    let mut rng = SplitMix64::new(seed);
    (0..n).map(|_| (rng.next_u64() % keys as u64) as u32).collect()
}

/// Single `get` vs `get_batch`, one thread, uniform hits.
fn experiment_batch(args: &Args) -> Result<(), String> {
    let (w, keys) = micro_keys(args);
    let a = Amalgam::new(args.keys, w.key_bytes + w.value_bytes, None)?;
    preload(&a, &keys, w.value_bytes, args.load_threads);
    let mut rows = Vec::new();
    for window in [1usize, 16, 32] {
        let mut mops = Vec::new();
        for run in 0..args.runs {
            let ids = uniform_ids(args.keys, args.ops_per_thread, run as u64 + 11);
            let t0 = Instant::now();
            let mut sink = 0usize;
            let mut hits = 0usize;
            if window == 1 {
                for &id in &ids {
                    if let Some(d) = a.get(keys.get(id)) {
                        hits += 1;
                        sink = sink.wrapping_add(d);
                    }
                }
            } else {
                let mut batch: Vec<&[u8]> = Vec::with_capacity(window);
                for chunk in ids.chunks(window) {
                    batch.clear();
                    batch.extend(chunk.iter().map(|&id| keys.get(id)));
                    hits += a.get_many(&batch, &mut sink);
                }
            }
            mops.push(ids.len() as f64 / t0.elapsed().as_secs_f64() / 1e6);
            black_box(sink);
            if hits != ids.len() {
                return Err(format!("batch experiment: {hits} hits of {}", ids.len()));
            }
        }
        rows.push((window, median(&mops), mops));
    }
    println!("Batched vs single lookups: 1 thread, {} keys (8 B / 8 B), uniform hits\n", args.keys);
    println!("| lookup | Mops/s (median) | runs | vs single |\n|---|---|---|---|");
    let single = rows[0].1;
    for (window, m, runs) in &rows {
        let name = if *window == 1 { "get".to_string() } else { format!("get_batch ×{window}") };
        println!("| {name} | {m:.2} | {runs:.2?} | {:.2}× |", m / single);
    }
    Ok(())
}

/// Reader GET throughput while the table doubles vs. with a pre-sized table.
///
/// Both cases preload the same keys (exactly the load at which the table
/// grows: 4 per bucket) and run the same readers (uniform hits on the
/// preloaded keys) and the same writer: it inserts `preloaded / 2` new keys,
/// then overwrites them round and round. With `2^b` buckets the first
/// inserts start a doubling to `2^(b+1)`, which holds everything the writer
/// adds, so exactly one expansion happens; the window is the time
/// `stats().expanding` is true. The pre-sized table starts at `2^(b+1)`
/// buckets (the doubled size, so no expansion) and is measured for the
/// median expansion window from the writer's first insert.
fn experiment_expansion(args: &Args) -> Result<(), String> {
    let readers = args.threads.iter().copied().max().unwrap_or(1);
    let (w, keys) = micro_keys(args);
    let buckets_log2 = (args.keys / amalgam_engine::LOAD_PER_BUCKET_MAX).max(2).ilog2();
    let preloaded = (1usize << buckets_log2) * amalgam_engine::LOAD_PER_BUCKET_MAX;
    if preloaded > args.keys || preloaded < 4096 {
        return Err("expansion experiment: --keys must be at least 4096".into());
    }
    // 9-byte keys: disjoint from the preloaded 8-byte ones.
    let extra = Keys::new(preloaded / 2, w.key_bytes + 1);
    let mut expanding_rows = (Vec::new(), Vec::new());
    for run in 0..args.runs {
        let (m, ms) = expansion_run(args, readers, &keys, &extra, preloaded, buckets_log2, None, run)?;
        expanding_rows.0.push(m);
        expanding_rows.1.push(ms);
    }
    let window_ms = median(&expanding_rows.1).max(5.0);
    let mut steady_rows = (Vec::new(), Vec::new());
    for run in 0..args.runs {
        let (m, ms) = expansion_run(args, readers, &keys, &extra, preloaded, buckets_log2 + 1, Some(window_ms), run)?;
        steady_rows.0.push(m);
        steady_rows.1.push(ms);
    }
    let writer = if args.writer_burst {
        format!("1 writer inserting {EXPANSION_BURST_KEYS} new keys, then idle")
    } else {
        format!("1 writer inserting {} new keys throughout", extra.len())
    };
    println!(
        "GET throughput during a table doubling: {readers} reader thread(s) + {writer}, \
         {preloaded} keys preloaded (8 B / 8 B)\n"
    );
    println!("| table | reader Mops/s (median) | runs | window ms (median) |\n|---|---|---|---|");
    let rows = [
        (format!("doubling 2^{buckets_log2} → 2^{} buckets", buckets_log2 + 1), &expanding_rows),
        (format!("pre-sized 2^{} buckets", buckets_log2 + 1), &steady_rows),
    ];
    for (name, (mops, ms)) in rows {
        println!("| {name} | {:.2} | {mops:.2?} | {:.1} |", median(mops), median(ms));
    }
    println!("\nratio doubling / pre-sized: {:.3}", median(&expanding_rows.0) / median(&steady_rows.0));
    Ok(())
}

/// One run of the expansion experiment on a table of `2^buckets_log2`
/// buckets: with `window_ms` None, measures while the table expands; else
/// for `window_ms` from the writer's first insert, and checks no expansion
/// happened. Returns reader Mops/s and the window in ms.
#[allow(clippy::too_many_arguments)]
fn expansion_run(
    args: &Args,
    readers: usize,
    keys: &Keys,
    extra: &Keys,
    preloaded: usize,
    buckets_log2: u32,
    window_ms: Option<f64>,
    run: usize,
) -> Result<(f64, f64), String> {
    let w = workload::workload("mercury-micro").expect("mercury-micro is a named workload");
    let a = Amalgam::new(args.keys * 2, w.key_bytes + w.value_bytes, Some(buckets_log2))?;
    for id in 0..preloaded {
        a.set(keys.get(id as u32), b"preload!");
    }
    a.settle();
    if a.0.stats().expansions != 0 {
        return Err("expansion experiment: the preload expanded the table".into());
    }
    let streams: Vec<Vec<u32>> =
        (0..readers).map(|r| uniform_ids(preloaded, args.ops_per_thread, (run * 8 + r) as u64 + 3)).collect();
    let counters: Vec<AtomicU64> = (0..readers).map(|_| AtomicU64::new(0)).collect();
    let writes = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let go = Barrier::new(2);
    let result = std::thread::scope(|s| {
        for (r, ids) in streams.iter().enumerate() {
            let (a, stop, counter) = (&a, &stop, &counters[r]);
            s.spawn(move || {
                let mut sink = 0usize;
                let mut n = 0u64;
                'outer: loop {
                    for chunk in ids.chunks(1024) {
                        for &id in chunk {
                            sink = sink.wrapping_add(a.get(keys.get(id)).expect("preloaded key missing"));
                        }
                        n += chunk.len() as u64;
                        counter.store(n, Ordering::Relaxed);
                        if stop.load(Ordering::Relaxed) {
                            break 'outer;
                        }
                    }
                }
                black_box(sink);
            });
        }
        let (a, stop, writes, go) = (&a, &stop, &writes, &go);
        s.spawn(move || {
            // Readers first reach full speed; then the same writer in both
            // cases: new keys, then overwrites of them.
            go.wait();
            let mut i = 0usize;
            let burst = if args.writer_burst { EXPANSION_BURST_KEYS.min(extra.len()) } else { usize::MAX };
            while !stop.load(Ordering::Relaxed) && i < burst {
                a.set(extra.get((i % extra.len()) as u32), b"written!");
                i += 1;
                writes.store(i as u64, Ordering::Relaxed);
            }
        });
        let total = || counters.iter().map(|c| c.load(Ordering::Relaxed)).sum::<u64>();
        let wait = |cond: &dyn Fn() -> bool| {
            let t0 = Instant::now();
            while !cond() && t0.elapsed() < EXPANSION_WAIT_MAX {
                // Sleep, not spin: the machine's cores belong to the readers,
                // the writer and the expand thread.
                std::thread::sleep(SAMPLE_PERIOD);
            }
            cond()
        };
        std::thread::sleep(Duration::from_millis(20));
        go.wait();
        let result = match window_ms {
            None => {
                let started = wait(&|| a.0.stats().expanding);
                let (t0, n0) = (Instant::now(), total());
                let ended = started && wait(&|| !a.0.stats().expanding);
                let (secs, n1) = (t0.elapsed().as_secs_f64(), total());
                if started && ended {
                    Ok(((n1 - n0) as f64 / secs / 1e6, secs * 1e3))
                } else {
                    Err("expansion experiment: no expansion started and ended in time".to_string())
                }
            }
            Some(ms) => {
                wait(&|| writes.load(Ordering::Relaxed) > 0);
                let (t0, n0) = (Instant::now(), total());
                std::thread::sleep(Duration::from_secs_f64(ms / 1e3));
                let (secs, n1) = (t0.elapsed().as_secs_f64(), total());
                Ok(((n1 - n0) as f64 / secs / 1e6, secs * 1e3))
            }
        };
        stop.store(true, Ordering::Relaxed);
        result
    })?;
    let s = a.0.stats();
    let want = u64::from(window_ms.is_none());
    if s.expansions != want {
        return Err(format!("expansion experiment: {} expansions, expected {want}", s.expansions));
    }
    Ok(result)
}

/// The measured part of the llc experiment, kept out of line so callgrind
/// can count inside it alone (`--toggle-collect=*llc_lookups*`).
#[inline(never)]
fn llc_lookups(map: &dyn Contender, stream: &[u8], key_bytes: usize, baseline: bool) -> usize {
    let mut sink = 0usize;
    let mut hits = 0;
    for k in stream.chunks(key_bytes) {
        if baseline {
            sink = sink.wrapping_add(k[0] as usize);
        } else if let Some(d) = map.get(k) {
            hits += 1;
            sink = sink.wrapping_add(d);
        }
    }
    black_box(sink);
    hits
}

/// Preload, build a stream of `--gets` uniform keys (copied in access order,
/// so the driver's own reads are sequential), then look them all up — or,
/// with `--llc-baseline`, only read the stream. The difference of the two
/// runs' cache misses is the lookups' alone.
fn experiment_llc(args: &Args) -> Result<(), String> {
    let [c] = &args.contenders[..] else { return Err("--experiment llc takes one --contenders entry".into()) };
    let (w, keys) = micro_keys(args);
    let map = peers::build(c, args.keys, w.key_bytes + w.value_bytes, peers_of(args))?;
    preload(&*map, &keys, w.value_bytes, 1);
    let mut stream = Vec::with_capacity(args.gets * w.key_bytes);
    for id in uniform_ids(args.keys, args.gets, 5) {
        stream.extend_from_slice(keys.get(id));
    }
    drop(keys);
    if let Some(a) = map.as_any().downcast_ref::<Amalgam>() {
        a.0.wait_for_expansion(EXPANSION_WAIT_MAX);
    }
    // Evict the freshly written stream from the simulated LL cache, so both
    // runs read it from memory and its misses cancel exactly.
    let mut scratch = vec![0u8; LLC_EVICT_BYTES];
    for line in scratch.chunks_mut(64) {
        line[0] = 1;
    }
    black_box(&scratch);
    drop(scratch);
    let hits = llc_lookups(&*map, &stream, w.key_bytes, args.llc_baseline);
    if !args.llc_baseline && hits != args.gets {
        return Err(format!("llc experiment: {hits} hits of {}", args.gets));
    }
    println!("llc: {c} keys={} gets={} baseline={}", args.keys, args.gets, args.llc_baseline);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn keys_are_packed_and_distinct() {
        let k = Keys::new(300, 8);
        assert_eq!(k.len(), 300);
        assert_eq!(k.get(0), b"00000000");
        assert_eq!(k.get(255), b"000000ff");
    }

    #[test]
    fn report_names_the_best_peer() {
        let r = |c: &str, m: f64| {
            json!({"workload": "w", "contender": c, "load_mops": 1.0, "bytes_per_item": 40.0,
                   "results": [{"threads": 1, "mops": m}], "facts": null})
        };
        let text = report(&[r("amalgam", 6.0), r("dashmap", 2.0), r("scc", 3.0)], &[1]);
        assert!(text.contains("| w | 1 | 6.00 | 2.00 | 3.00 | 2.00× (scc) |"), "{text}");
    }

    #[derive(clap::Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn parse(argv: &[&str]) -> Args {
        <Cli as clap::Parser>::try_parse_from(std::iter::once("embedded").chain(argv.iter().copied()))
            .map(|c| c.args)
            .unwrap_or_else(|e| panic!("{argv:?}: {e}"))
    }

    #[test]
    fn defaults_are_the_issues() {
        let a = parse(&[]);
        assert_eq!(a.workload, ["mercury-micro", "mercury-ycsb-95", "mercury-ycsb-50", "memc3"]);
        assert_eq!(a.contenders, CONTENDERS);
        assert_eq!(a.keys, 4 << 20);
        assert_eq!(a.threads, [1, 2]);
        assert_eq!(a.runs, 3);
        assert!(a.experiment.is_none() && !a.child && a.json.is_none());
        // The fair comparison unless asked otherwise.
        assert!(!a.peer_defaults && peers_of(&a) == Peers::Fair);
        assert_eq!(peers_of(&parse(&["--peer-defaults"])), Peers::Defaults);
    }

    #[test]
    fn lists_and_experiments_parse() {
        let a = parse(&[
            "--workload",
            "memc3,mercury-micro",
            "--keys",
            "33554432",
            "--threads",
            "1,2,4",
            "--contenders",
            "amalgam,scc",
            "--ops-per-thread",
            "10",
            "--json",
            "out.json",
        ]);
        assert_eq!(a.workload, ["memc3", "mercury-micro"]);
        assert_eq!(a.keys, 32 << 20);
        assert_eq!(a.threads, [1, 2, 4]);
        assert_eq!(a.contenders, ["amalgam", "scc"]);
        assert_eq!(a.json.as_deref(), Some(std::path::Path::new("out.json")));
        let l = parse(&["--experiment", "llc", "--contenders", "mutex-hashmap", "--keys", "1024", "--gets", "0"]);
        assert_eq!((l.experiment.as_deref(), l.gets, l.keys), (Some("llc"), 0, 1024));
        assert!(<Cli as clap::Parser>::try_parse_from(["embedded", "--threads", "x"]).is_err());
    }

    #[test]
    fn bad_arguments_are_refused() {
        assert!(run(&parse(&["--keys", "0"])).is_err());
        assert!(run(&parse(&["--threads", "0"])).is_err());
        assert!(run(&parse(&["--experiment", "nope"])).is_err());
        assert!(run(&parse(&["--workload", "nope", "--keys", "16"])).is_err());
    }

    #[test]
    fn report_shows_load_memory_and_index_shape() {
        let r = json!({"workload": "w", "contender": "amalgam", "keys": 4096, "load_mops": 9.5,
                       "bytes_per_item": 85.75, "results": [{"threads": 1, "mops": 20.0}],
                       "facts": {"buckets": 1024, "items_per_bucket": 4.0, "overflow_per_bucket": 0.05,
                                 "index_bytes": 69632, "expansions": 2}});
        let text = report(&[r], &[1]);
        assert!(text.contains("| w | amalgam | 9.50 | 85.8 |"), "{text}");
        assert!(text.contains("| w | 1024 | 4.00 | 0.050 | 17.0 | 2 |"), "{text}");
        assert!(text.contains("| w | 1 | 20.00 | – |"), "{text}");
    }

    #[test]
    fn a_small_run_completes() {
        let args = Args {
            workload: vec!["memc3".into()],
            contenders: vec!["amalgam".into()],
            peer_defaults: false,
            keys: 2000,
            threads: vec![2],
            load_threads: 2,
            ops_per_thread: 5000,
            runs: 1,
            json: None,
            experiment: None,
            gets: 0,
            llc_baseline: false,
            writer_burst: false,
            child: true,
        };
        let w = workload::workload("memc3").unwrap();
        let v = child(&args, &w, "amalgam").unwrap();
        assert_eq!(v["results"][0]["threads"], 2);
        assert!(v["results"][0]["mops"].as_f64().unwrap() > 0.0);
        // Each peer variant runs too, and says which it was.
        for (peer_defaults, name) in [(false, "fair"), (true, "defaults")] {
            let args = Args { peer_defaults, ..args.clone() };
            let v = child(&args, &w, "rwlock-hashbrown").unwrap();
            assert_eq!(v["peers"], name);
            assert!(v["results"][0]["mops"].as_f64().unwrap() > 0.0);
        }
    }
}
