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
//!   the preload runs on `--load-threads` threads and gives the load rate.
//! * For each thread count, each run first generates every thread's op
//!   stream (YCSB scrambled Zipf 0.99 or uniform, per the workload), then
//!   starts the threads at a barrier and times them to the last one's end:
//!   Mops/s = operations / wall time. Runs are repeated and the median kept.
//! * SETs update preloaded keys with one of a few prebuilt values.
//!
//! Experiments beside the workloads (`--experiment`):
//! * `batch`: one thread, uniform GET hits, single `get` vs `get_batch` in
//!   windows of 16 and 32 keys (MICA §5.3's prefetching).
//! * `expansion`: reader threads' GET throughput while the table doubles
//!   (a writer inserts new keys past the load threshold) vs. the same
//!   readers and writer (overwriting) when it does not (Mercury §4: −9%).
//! * `llc`: preload, then `--gets` uniform GET hits and exit, for
//!   `scripts/llc-per-get.sh` to count last-level-cache misses under
//!   cachegrind by difference between two runs.

use crate::peers::{self, Amalgam, Contender, CONTENDERS};
use crate::workload::{self, op_stream, Op, SplitMix64, Workload};
use serde_json::{json, Value};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// Prebuilt values a SET picks from.
const SET_VALUES: usize = 16;
/// Default key count (4 Mi, the default preload).
pub const KEYS_DEFAULT: usize = 4 << 20;
/// Bytes written to push the key stream out of the simulated LL cache
/// (more than twice Mercury's 12 MiB L3).
const LLC_EVICT_BYTES: usize = 32 << 20;
/// How often the expansion experiment samples the store's state.
const SAMPLE_PERIOD: Duration = Duration::from_millis(1);
/// Longest the expansion experiment waits for an expansion to start or end.
const EXPANSION_WAIT_MAX: Duration = Duration::from_secs(120);

/// Flags of `amalgam-bench embedded`.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Workloads, comma-separated (names from DESIGN.md § Benchmarks).
    #[arg(long, value_delimiter = ',', default_value = "mercury-micro,mercury-ycsb-95,mercury-ycsb-50,memc3")]
    pub workload: Vec<String>,
    /// Contenders, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "amalgam,dashmap,scc,papaya,moka,quick_cache,mutex-hashmap")]
    pub contenders: Vec<String>,
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
    print!("{}", report(&results, &args.threads));
    let out = json!({ "machine": machine(), "args": format!("{args:?}"), "results": results });
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

/// Resident bytes of this process (`/proc/self/statm`, field 2 × page size).
pub fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    pages * page.max(4096) as u64
}

/// Loads keys `0..keys.len()` on `threads` threads; returns Mops/s.
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
    n as f64 / t0.elapsed().as_secs_f64() / 1e6
}

/// Runs every thread's stream at once; returns Mops/s.
fn timed(c: &dyn Contender, keys: &Keys, values: &[Vec<u8>], streams: &[Vec<Op>]) -> f64 {
    let barrier = Barrier::new(streams.len() + 1);
    let mut start = Instant::now();
    std::thread::scope(|s| {
        for ops in streams {
            let barrier = &barrier;
            s.spawn(move || {
                barrier.wait();
                let mut sink = 0usize;
                for (i, op) in ops.iter().enumerate() {
                    let k = keys.get(op.key);
                    if op.get {
                        sink = sink.wrapping_add(c.get(k).unwrap_or(1 << 20));
                    } else {
                        c.set(k, &values[i % values.len()]);
                    }
                }
                black_box(sink);
            });
        }
        barrier.wait();
        start = Instant::now();
    });
    let secs = start.elapsed().as_secs_f64();
    streams.iter().map(Vec::len).sum::<usize>() as f64 / secs / 1e6
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
    let c = peers::build(name, args.keys, w.key_bytes + w.value_bytes)?;
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
        for run in 0..args.runs {
            let streams: Vec<Vec<Op>> = (0..t)
                .map(|i| op_stream(w, args.keys as u64, args.ops_per_thread, ((run * 64 + i) as u64 + 1) * 0x5851_F42D))
                .collect();
            mops.push(timed(&*c, &keys, &values, &streams));
        }
        per_threads.push(json!({ "threads": t, "mops_runs": mops, "mops": median(&mops) }));
    }
    Ok(json!({
        "workload": w.name,
        "contender": name,
        "keys": args.keys,
        "load_threads": args.load_threads,
        "load_mops": load_mops,
        "bytes_per_item": bytes_per_item,
        "results": per_threads,
        "facts": c.facts(),
    }))
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
    out.push_str("Throughput, Mops/s (median of runs)\n\n| workload | threads |");
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
                    .and_then(|r| r["results"].as_array()?.iter().find(|x| x["threads"] == t)?["mops"].as_f64())
                    .unwrap_or(f64::NAN);
                out.push_str(&format!(" {m:.2} |"));
                if *c == "amalgam" {
                    amalgam = m;
                } else if best_peer.is_none_or(|(b, _)| m > b) {
                    best_peer = Some((m, c));
                }
            }
            match best_peer {
                Some((b, name)) if amalgam.is_finite() => out.push_str(&format!(" {:.2}× ({name}) |\n", amalgam / b)),
                _ => out.push_str(" – |\n"),
            }
        }
    }
    out.push_str("\nPreload: Mops/s and resident bytes per item\n\n| workload | contender | load Mops/s | bytes/item |\n|---|---|---|---|\n");
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
    for r in results.iter().filter(|r| r["contender"] == "amalgam") {
        out.push_str(&format!("\namalgam index after {} preload: {}\n", r["workload"], r["facts"]));
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

/// Reader GET throughput while the table doubles vs. while it does not.
fn experiment_expansion(args: &Args) -> Result<(), String> {
    let readers = args.threads.iter().copied().max().unwrap_or(1);
    let (w, keys) = micro_keys(args);
    // A table of keys/4 buckets holds the preload at exactly the mean load
    // that triggers growth, so the writer's first new keys start a doubling.
    let buckets_log2 = (args.keys / amalgam_engine::LOAD_PER_BUCKET_MAX).max(2).ilog2();
    let preloaded = (1usize << buckets_log2) * amalgam_engine::LOAD_PER_BUCKET_MAX;
    if preloaded > args.keys {
        return Err("expansion experiment: --keys too small".into());
    }
    let extra = Keys::new(args.keys, w.key_bytes + 1);
    let mut rows = Vec::new();
    for expanding in [false, true] {
        let mut mops = Vec::new();
        let mut window_ms = Vec::new();
        for run in 0..args.runs {
            let a = Amalgam::new(args.keys * 2, w.key_bytes + w.value_bytes, Some(buckets_log2))?;
            for id in 0..preloaded {
                a.set(keys.get(id as u32), b"preload!");
            }
            if a.0.stats().expansions != 0 {
                return Err("expansion experiment: the preload expanded the table".into());
            }
            let streams: Vec<Vec<u32>> =
                (0..readers).map(|r| uniform_ids(preloaded, args.ops_per_thread, (run * 8 + r) as u64 + 3)).collect();
            let counters: Vec<AtomicU64> = (0..readers).map(|_| AtomicU64::new(0)).collect();
            let stop = AtomicBool::new(false);
            let (m, win) = std::thread::scope(|s| {
                for (r, ids) in streams.iter().enumerate() {
                    let (a, keys, stop, counter) = (&a, &keys, &stop, &counters[r]);
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
                let (a, keys, extra, stop) = (&a, &keys, &extra, &stop);
                s.spawn(move || {
                    // The writer: new keys (growth) or overwrites (none).
                    let mut i = 0u32;
                    while !stop.load(Ordering::Relaxed) {
                        if expanding {
                            a.set(extra.get(i % extra.len() as u32), b"growing!");
                        } else {
                            a.set(keys.get(i % preloaded as u32), b"overwrt!");
                        }
                        i = i.wrapping_add(1);
                    }
                });
                let total = || counters.iter().map(|c| c.load(Ordering::Relaxed)).sum::<u64>();
                let wait = |cond: &dyn Fn() -> bool| {
                    let t0 = Instant::now();
                    while !cond() && t0.elapsed() < EXPANSION_WAIT_MAX {
                        std::thread::sleep(SAMPLE_PERIOD);
                    }
                    cond()
                };
                let result = if expanding {
                    let started = wait(&|| a.0.stats().expanding);
                    let (t0, n0) = (Instant::now(), total());
                    let ended = started && wait(&|| !a.0.stats().expanding);
                    let (secs, n1) = (t0.elapsed().as_secs_f64(), total());
                    if started && ended {
                        Ok(((n1 - n0) as f64 / secs / 1e6, secs * 1e3))
                    } else {
                        Err("expansion experiment: no expansion started and ended in time".to_string())
                    }
                } else {
                    std::thread::sleep(Duration::from_millis(50));
                    let (t0, n0) = (Instant::now(), total());
                    std::thread::sleep(Duration::from_millis(500));
                    let (secs, n1) = (t0.elapsed().as_secs_f64(), total());
                    Ok(((n1 - n0) as f64 / secs / 1e6, secs * 1e3))
                };
                stop.store(true, Ordering::Relaxed);
                result
            })?;
            mops.push(m);
            window_ms.push(win);
        }
        rows.push((expanding, median(&mops), mops, median(&window_ms)));
    }
    println!(
        "GET throughput during a table doubling: {readers} reader thread(s) + 1 writer, {preloaded} keys preloaded \
         into 2^{buckets_log2} buckets\n"
    );
    println!("| table | reader Mops/s (median) | runs | window ms |\n|---|---|---|---|");
    for (expanding, m, runs, win) in &rows {
        let name = if *expanding { "doubling (writer inserts)" } else { "steady (writer overwrites)" };
        println!("| {name} | {m:.2} | {runs:.2?} | {win:.0} |");
    }
    println!("\nratio doubling / steady: {:.2}", rows[1].1 / rows[0].1);
    Ok(())
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
    let map = peers::build(c, args.keys, w.key_bytes + w.value_bytes)?;
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

    #[test]
    fn a_small_run_completes() {
        let args = Args {
            workload: vec!["memc3".into()],
            contenders: vec!["amalgam".into()],
            keys: 2000,
            threads: vec![2],
            load_threads: 2,
            ops_per_thread: 5000,
            runs: 1,
            json: None,
            experiment: None,
            gets: 0,
            llc_baseline: false,
            child: true,
        };
        let w = workload::workload("memc3").unwrap();
        let v = child(&args, &w, "amalgam").unwrap();
        assert_eq!(v["results"][0]["threads"], 2);
        assert!(v["results"][0]["mops"].as_f64().unwrap() > 0.0);
    }
}
