//! `amalgam-bench replay`: the miss ratio of a server used as a look-aside
//! cache (issue 4 §5; MemC3 §5.3, Table 3 "cache miss ratio").
//!
//! # The stream
//! `--keys` key ids drawn from YCSB's scrambled Zipfian (θ = 0.99,
//! `workload::ScrambledZipf`, through `workload::op_stream` in chunks of
//! [`STREAM_CHUNK`] ops, each chunk with the next seed of a SplitMix64
//! started at `--seed`), each op a GET with probability `--get-ratio`
//! (0.95), else a SET. Every GET that misses is followed by a SET of its
//! key, as an application refills its cache from the backing store. The
//! server starts empty; the first `--warmup-ops` Zipf ops warm it up and
//! are not counted; the miss ratio is missed GETs / GETs over the next
//! `--ops` Zipf ops. Every value is `value_of(id, 0, --value-bytes)`, so
//! every hit is checked byte for byte.
//!
//! # Scans (scan resistance)
//! With `--scan-every K --scan-len S`, after every K Zipf ops comes a scan:
//! S keys never used before or after (ids `--keys`, `--keys + 1`, … in
//! order), each a GET (a miss) followed by its refill SET, as a batch job
//! reading cold data through the cache. The Zipf miss ratio then shows
//! how much the one-time keys displaced the hot ones; scan GETs are counted
//! apart.
//!
//! # Pipelining, and what it changes
//! One connection; requests go out in batches of up to `--batch` stream
//! ops, one write each, each batch preceded by the refill SETs of the
//! previous batch's misses. A batch never holds two ops of one key (it is
//! cut before a repeated key), so the refill SET of a miss always reaches
//! the server before the next GET of that key, as in a strictly
//! sequential client. What pipelining changes is only when a refill lands
//! relative to the other (distinct) keys of its batch: at most
//! `--batch - 1` ops later. The batches are cut by the stream alone, never
//! by replies, so every server sees the same requests in the same order up
//! to the refills its own misses cause. `--batch 1` is the strictly
//! sequential client.

use crate::net::{self, proto, Client, Protocol};
use crate::workload::{key_space, op_stream, value_of, Distribution, Op, SplitMix64, Workload};
use serde_json::{json, Value};
use std::collections::HashSet;
use std::time::Instant;

/// Zipf ops generated per `op_stream` call (with its own seed).
pub const STREAM_CHUNK: usize = 1 << 16;
/// Default stream ops per batch (one write).
pub const BATCH_DEFAULT: usize = 64;
/// MemC3 §5.3's mix: 95% GET, 5% SET.
pub const GET_RATIO_DEFAULT: f64 = 0.95;

/// Flags of `amalgam-bench replay`.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Server, item sizes, output.
    #[command(flatten)]
    pub target: super::Target,
    /// Wire protocol: text `get`/`set`, or meta `mg k v`/`ms`.
    #[arg(long, value_enum, default_value_t = Protocol::Text)]
    pub protocol: Protocol,
    /// Key ids of the Zipf stream (the working set).
    #[arg(long, default_value_t = 1 << 20)]
    pub keys: u64,
    /// Zipf ops counted, after the warm-up.
    #[arg(long, default_value_t = 4 << 20)]
    pub ops: u64,
    /// Zipf ops before counting (default: as many as --ops).
    #[arg(long)]
    pub warmup_ops: Option<u64>,
    /// Fraction of the stream's ops that are GETs (the rest SETs).
    #[arg(long, default_value_t = GET_RATIO_DEFAULT)]
    pub get_ratio: f64,
    /// Key popularity: YCSB's scrambled Zipfian (θ = 0.99) or uniform.
    #[arg(long, value_enum, default_value_t = Distribution::Zipf)]
    pub distribution: Distribution,
    /// Stream ops per batch (one write); 1 is a strictly sequential client.
    #[arg(long, default_value_t = BATCH_DEFAULT)]
    pub batch: usize,
    /// A scan of cold keys after every this many Zipf ops (0: no scans).
    #[arg(long, default_value_t = 0)]
    pub scan_every: u64,
    /// Cold keys per scan.
    #[arg(long, default_value_t = 0)]
    pub scan_len: u64,
    /// Seed of the stream.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Every key whose id is a multiple of this is written with a TTL of
    /// TTL_SECONDS (0: none): a cache of keys with and without one, for
    /// Redis's volatile-* policies (issue 35 §7). Ids are scrambled over
    /// the Zipf ranks, so the keys with a TTL are as hot as the others.
    #[arg(long, default_value_t = 0)]
    pub ttl_every: u64,
}

/// `--ttl-every`'s TTL: a day, so nothing expires during a replay and
/// only eviction decides what is held.
pub const TTL_SECONDS: u32 = 86_400;

/// One op of the replayed stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// A GET of a Zipf key (refilled if it misses).
    Get(u64),
    /// A SET of a Zipf key.
    Set(u64),
    /// A GET of a cold key of a scan (refilled if it misses).
    Scan(u64),
}

impl Step {
    /// The key id.
    pub fn key(self) -> u64 {
        match self {
            Step::Get(k) | Step::Set(k) | Step::Scan(k) => k,
        }
    }
}

/// The stream: Zipf ops with scans mixed in, generated as it is consumed.
/// It ends when `limit` Zipf ops have been produced (and any scan they
/// triggered); raising `limit` continues it.
#[derive(Clone, Debug)]
pub struct Stream {
    workload: Workload,
    keys: u64,
    seeds: SplitMix64,
    chunk: Vec<Op>,
    pos: usize,
    /// Zipf ops produced so far.
    pub zipf_done: u64,
    /// Zipf ops to produce before ending.
    pub limit: u64,
    scan_every: u64,
    scan_len: u64,
    scan_left: u64,
    next_cold: u64,
}

impl Stream {
    /// A stream over `keys` Zipf ids, scans (if `scan_every` > 0) of
    /// `scan_len` cold ids from `keys` upward, ending after `limit` Zipf ops.
    pub fn new(args: &Args, limit: u64) -> Stream {
        Stream {
            workload: Workload {
                name: "replay",
                key_bytes: args.target.key_bytes,
                value_bytes: args.target.value_bytes,
                get_fraction: args.get_ratio,
                distribution: args.distribution,
            },
            keys: args.keys,
            seeds: SplitMix64::new(args.seed),
            chunk: Vec::new(),
            pos: 0,
            zipf_done: 0,
            limit,
            scan_every: args.scan_every,
            scan_len: args.scan_len,
            scan_left: 0,
            next_cold: args.keys,
        }
    }
}

impl Iterator for Stream {
    type Item = Step;

    fn next(&mut self) -> Option<Step> {
        if self.scan_left > 0 {
            self.scan_left -= 1;
            self.next_cold += 1;
            return Some(Step::Scan(self.next_cold - 1));
        }
        if self.zipf_done >= self.limit {
            return None;
        }
        if self.pos == self.chunk.len() {
            self.chunk = op_stream(&self.workload, self.keys, STREAM_CHUNK, self.seeds.next_u64());
            self.pos = 0;
        }
        let op = self.chunk[self.pos];
        self.pos += 1;
        self.zipf_done += 1;
        if self.scan_every > 0 && self.zipf_done % self.scan_every == 0 {
            self.scan_left = self.scan_len;
        }
        let key = u64::from(op.key);
        Some(if op.get { Step::Get(key) } else { Step::Set(key) })
    }
}

/// A request to the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Req {
    /// GET of a key id.
    Get(u64),
    /// SET of a key id to `value_of(id, 0, value_bytes)`.
    Set(u64),
}

/// A cache the replay talks to: the network client, or a test's map.
pub trait Backend {
    /// Executes `reqs` in order; appends to `hits`, for each `Get`, whether
    /// it hit.
    fn exchange(&mut self, reqs: &[Req], hits: &mut Vec<bool>) -> Result<(), String>;
}

/// What a phase of the replay did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// GETs of Zipf keys.
    pub gets: u64,
    /// Those that missed.
    pub misses: u64,
    /// GETs of scan keys.
    pub scan_gets: u64,
    /// Those that missed.
    pub scan_misses: u64,
    /// SETs of the stream.
    pub sets: u64,
    /// Refill SETs after misses.
    pub refills: u64,
    /// Batches (writes).
    pub batches: u64,
}

impl Counts {
    /// Missed Zipf GETs / Zipf GETs.
    pub fn miss_ratio(&self) -> Option<f64> {
        (self.gets > 0).then(|| self.misses as f64 / self.gets as f64)
    }
}

/// Runs `stream` dry against `backend` in batches of at most `batch` ops
/// (see the module docs), adding to `counts`. The refills of the last
/// batch are sent before it returns.
pub fn run_phase(
    backend: &mut impl Backend,
    stream: &mut impl Iterator<Item = Step>,
    batch: usize,
    counts: &mut Counts,
) -> Result<(), String> {
    assert!(batch > 0);
    let mut steps: Vec<Step> = Vec::with_capacity(batch);
    let mut in_batch: HashSet<u64> = HashSet::with_capacity(batch);
    let mut reqs: Vec<Req> = Vec::with_capacity(2 * batch);
    let mut hits: Vec<bool> = Vec::with_capacity(batch);
    let mut refills: Vec<u64> = Vec::with_capacity(batch);
    let mut carry: Option<Step> = None;
    loop {
        reqs.clear();
        reqs.extend(refills.drain(..).map(Req::Set));
        counts.refills += reqs.len() as u64;
        steps.clear();
        in_batch.clear();
        while steps.len() < batch {
            let Some(step) = carry.take().or_else(|| stream.next()) else { break };
            if !in_batch.insert(step.key()) {
                carry = Some(step);
                break;
            }
            steps.push(step);
        }
        if reqs.is_empty() && steps.is_empty() {
            return Ok(());
        }
        reqs.extend(steps.iter().map(|s| match *s {
            Step::Get(k) | Step::Scan(k) => Req::Get(k),
            Step::Set(k) => Req::Set(k),
        }));
        hits.clear();
        backend.exchange(&reqs, &mut hits)?;
        counts.batches += 1;
        let mut hit = hits.iter();
        for &step in &steps {
            let (gets, misses) = match step {
                Step::Set(_) => {
                    counts.sets += 1;
                    continue;
                }
                Step::Get(_) => (&mut counts.gets, &mut counts.misses),
                Step::Scan(_) => (&mut counts.scan_gets, &mut counts.scan_misses),
            };
            *gets += 1;
            if !*hit.next().ok_or("the backend answered fewer GETs than asked")? {
                *misses += 1;
                refills.push(step.key());
            }
        }
        if hit.next().is_some() {
            return Err("the backend answered more GETs than asked".into());
        }
    }
}

/// The network backend: one connection, one write per batch.
#[derive(Debug)]
struct Net {
    client: Client,
    proto: Protocol,
    key_bytes: usize,
    value_bytes: usize,
    out: Vec<u8>,
    scratch: Vec<u8>,
    /// SETs refused (`SERVER_ERROR`, e.g. a full store-mode server), and the
    /// first refusal's line.
    refused: u64,
    first_refusal: Option<String>,
    /// `--ttl-every`.
    ttl_every: u64,
}

impl Backend for Net {
    fn exchange(&mut self, reqs: &[Req], hits: &mut Vec<bool>) -> Result<(), String> {
        self.out.clear();
        for r in reqs {
            match *r {
                Req::Get(k) => {
                    proto::push_get(self.proto, &mut self.out, [k].into_iter(), self.key_bytes, &mut self.scratch)
                }
                Req::Set(k) => {
                    let v = value_of(k, 0, self.value_bytes);
                    if self.ttl_every > 0 && k % self.ttl_every == 0 {
                        let (out, scratch) = (&mut self.out, &mut self.scratch);
                        proto::push_set_ex(self.proto, out, k, self.key_bytes, &v, TTL_SECONDS, scratch);
                    } else {
                        proto::push_set(self.proto, &mut self.out, k, self.key_bytes, &v, &mut self.scratch);
                    }
                }
            }
        }
        self.client.send(&self.out)?;
        for r in reqs {
            match *r {
                Req::Get(k) => hits.push(self.read_get(k)?),
                Req::Set(k) => match self.client.next(self.proto)? {
                    (proto::Event::Stored, _) => {}
                    (proto::Event::ServerError, line) => {
                        self.refused += 1;
                        if self.first_refusal.is_none() {
                            self.first_refusal = Some(String::from_utf8_lossy(line).trim_end().to_string());
                        }
                    }
                    (e, line) => {
                        let line = String::from_utf8_lossy(line);
                        return Err(format!("SET of key {k} answered {e:?}: {:?}", line.trim_end()));
                    }
                },
            }
        }
        Ok(())
    }
}

impl Net {
    /// The reply to a one-key GET of `k`: whether it hit (with its value).
    fn read_get(&mut self, k: u64) -> Result<bool, String> {
        let ends_with_end = proto::get_ends_with_end(self.proto, 1);
        let mut hit = false;
        loop {
            let (event, unit) = self.client.next(self.proto)?;
            match event {
                proto::Event::Value { key, len } if !hit && key.is_none_or(|id| id == k) => {
                    if proto::value_data(unit, unit.len(), len) != value_of(k, 0, self.value_bytes).as_slice() {
                        return Err(format!("GET of key {k} returned another value"));
                    }
                    hit = true;
                    if !ends_with_end {
                        return Ok(true);
                    }
                }
                proto::Event::End if ends_with_end => return Ok(hit),
                proto::Event::Miss if !ends_with_end => return Ok(false),
                e => {
                    let line = String::from_utf8_lossy(unit);
                    return Err(format!("GET of key {k} answered {e:?}: {:?}", line.trim_end()));
                }
            }
        }
    }
}

/// Checks the flags.
fn check(args: &Args) -> Result<(), String> {
    args.target.check()?;
    if !(0.0..=1.0).contains(&args.get_ratio) {
        return Err("--get-ratio must be within 0..=1".into());
    }
    if args.keys == 0 || args.keys > u64::from(u32::MAX) + 1 {
        return Err(format!("--keys must be 1..={}", u64::from(u32::MAX) + 1));
    }
    let scans = (args.ops + warmup(args)).checked_div(args.scan_every).unwrap_or(0).saturating_mul(args.scan_len);
    if args.keys.saturating_add(scans) > key_space(args.target.key_bytes) {
        return Err(format!(
            "{} keys (with scans) do not fit in {}-byte hex keys",
            args.keys + scans,
            args.target.key_bytes
        ));
    }
    if args.batch == 0 || args.ops == 0 {
        return Err("--batch and --ops must be at least 1".into());
    }
    if (args.scan_every == 0) != (args.scan_len == 0) {
        return Err("--scan-every and --scan-len go together".into());
    }
    Ok(())
}

fn warmup(args: &Args) -> u64 {
    args.warmup_ops.unwrap_or(args.ops)
}

/// Runs `replay`: prints the report and writes the JSON.
pub fn run(args: &Args) -> Result<(), String> {
    args.target.report(&measure(args)?, human)
}

/// Replays the stream against the server; returns the result as JSON.
pub fn measure(args: &Args) -> Result<Value, String> {
    check(args)?;
    let addr = net::resolve(&args.target.server)?;
    let mut backend = Net {
        client: Client::connect(addr, net::IO_TIMEOUT)?,
        proto: args.protocol,
        key_bytes: args.target.key_bytes,
        value_bytes: args.target.value_bytes,
        out: Vec::new(),
        scratch: Vec::new(),
        refused: 0,
        first_refusal: None,
        ttl_every: args.ttl_every,
    };
    let resp = args.protocol == Protocol::Resp;
    let stats = |c: &mut Client| if resp { c.info_stats() } else { c.stats() };
    let s0 = stats(&mut backend.client)?;
    if s0.require("curr_items")? != 0 {
        return Err(format!("the server at {addr} is not empty: replay measures a fresh server"));
    }
    let t = Instant::now();
    let mut stream = Stream::new(args, warmup(args));
    let mut warm = Counts::default();
    run_phase(&mut backend, &mut stream, args.batch, &mut warm)?;
    let s1 = stats(&mut backend.client)?;
    let t1 = Instant::now();
    stream.limit += args.ops;
    let mut counted = Counts::default();
    run_phase(&mut backend, &mut stream, args.batch, &mut counted)?;
    let s2 = stats(&mut backend.client)?;
    let secs = t1.elapsed().as_secs_f64();
    let rss = args.target.pid.map(super::rss_of).transpose()?;
    let delta = |name: &str| Some(s2.u64(name)?.saturating_sub(s1.u64(name)?));
    let (srv_hits, srv_misses) = (delta("get_hits"), delta("get_misses"));
    let all_misses = counted.misses + counted.scan_misses;
    let counts_json = |c: &Counts| {
        json!({
            "gets": c.gets, "misses": c.misses, "miss_ratio": c.miss_ratio(),
            "scan_gets": c.scan_gets, "scan_misses": c.scan_misses,
            "sets": c.sets, "refills": c.refills, "batches": c.batches,
        })
    };
    Ok(json!({
        "label": args.target.label,
        "server": args.target.server,
        "version": s0.0.get("version"),
        "protocol": args.protocol.name(),
        "keys": args.keys,
        "ops": args.ops,
        "warmup_ops": warmup(args),
        "get_ratio": args.get_ratio,
        "distribution": format!("{:?}", args.distribution).to_lowercase(),
        "key_bytes": args.target.key_bytes,
        "value_bytes": args.target.value_bytes,
        "batch": args.batch,
        "scan_every": args.scan_every,
        "scan_len": args.scan_len,
        "seed": args.seed,
        "ttl_every": args.ttl_every,
        "miss_ratio": counted.miss_ratio(),
        "measured": counts_json(&counted),
        "warmup": counts_json(&warm),
        "sets_refused": backend.refused,
        "first_refusal": backend.first_refusal,
        "server_get_hits": srv_hits,
        "server_get_misses": srv_misses,
        "server_agrees": srv_misses.map(|m| m == all_misses),
        "evictions_measured": delta("evictions"),
        "curr_items_end": s2.u64("curr_items"),
        "limit_maxbytes": s2.u64("limit_maxbytes"),
        "rss_bytes": rss.map(|r| r.0),
        "seconds": t.elapsed().as_secs_f64(),
        "measured_ops_per_s": (counted.gets + counted.scan_gets + counted.sets) as f64 / secs,
        "stats_end": s2.to_json(),
        "machine": net::machine(),
    }))
}

/// The human report of a result.
pub fn human(r: &Value) -> String {
    let pct = |v: &Value| v.as_f64().map_or("-".to_string(), |x| format!("{:.2}%", x * 100.0));
    let m = &r["measured"];
    let scans = if r["scan_every"].as_u64().unwrap_or(0) > 0 {
        format!(", a scan of {} cold keys every {} ops", r["scan_len"], r["scan_every"])
    } else {
        String::new()
    };
    let mut out = format!(
        "replay {} {} over {}: {} keys, {:.0}% GET, {}{}, batch {}; {} ops counted after {} warm-up ops\n",
        r["label"].as_str().unwrap_or(""),
        r["server"].as_str().unwrap_or("?"),
        r["protocol"].as_str().unwrap_or("?"),
        r["keys"],
        r["get_ratio"].as_f64().unwrap_or(0.0) * 100.0,
        r["distribution"].as_str().unwrap_or("?"),
        scans,
        r["batch"],
        r["ops"],
        r["warmup_ops"],
    );
    out += &format!(
        "  miss ratio {} ({} of {} GETs); scan GETs {} missed {}; SETs {} + refills {}; refused {}\n",
        pct(&r["miss_ratio"]),
        m["misses"],
        m["gets"],
        m["scan_gets"],
        m["scan_misses"],
        m["sets"],
        m["refills"],
        r["sets_refused"],
    );
    out += &format!(
        "  server: get_misses {} (agrees: {}), evictions {}, curr_items {}, limit_maxbytes {}\n",
        r["server_get_misses"], r["server_agrees"], r["evictions_measured"], r["curr_items_end"], r["limit_maxbytes"],
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use std::collections::{BTreeMap, HashMap};

    #[derive(Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn args(extra: &[&str]) -> Args {
        Cli::try_parse_from(std::iter::once("replay").chain(extra.iter().copied())).expect("valid flags").args
    }

    /// An LRU cache of `capacity` items (unbounded if `None`) that also
    /// checks the replay's promise: no GET of a key that missed until a SET
    /// of it has come.
    #[derive(Default)]
    struct Lru {
        capacity: Option<usize>,
        tick: u64,
        by_key: HashMap<u64, u64>,
        by_tick: BTreeMap<u64, u64>,
        missed: HashSet<u64>,
        log: Vec<Req>,
    }

    impl Lru {
        fn touch(&mut self, k: u64) {
            if let Some(t) = self.by_key.insert(k, self.tick) {
                self.by_tick.remove(&t);
            }
            self.by_tick.insert(self.tick, k);
            self.tick += 1;
        }
    }

    impl Backend for Lru {
        fn exchange(&mut self, reqs: &[Req], hits: &mut Vec<bool>) -> Result<(), String> {
            for &r in reqs {
                self.log.push(r);
                match r {
                    Req::Get(k) => {
                        assert!(!self.missed.contains(&k), "GET of {k} before the refill of its miss");
                        let hit = self.by_key.contains_key(&k);
                        if hit {
                            self.touch(k);
                        } else {
                            self.missed.insert(k);
                        }
                        hits.push(hit);
                    }
                    Req::Set(k) => {
                        self.missed.remove(&k);
                        self.touch(k);
                        if self.capacity.is_some_and(|c| self.by_key.len() > c) {
                            let (_, old) = self.by_tick.pop_first().unwrap();
                            self.by_key.remove(&old);
                        }
                    }
                }
            }
            Ok(())
        }
    }

    #[test]
    fn streams_are_deterministic_and_scans_cold() {
        let a = args(&["--keys", "1000", "--scan-every", "100", "--scan-len", "7", "--seed", "3"]);
        let s1: Vec<Step> = Stream::new(&a, 1000).collect();
        assert_eq!(s1, Stream::new(&a, 1000).collect::<Vec<_>>());
        let zipf = s1.iter().filter(|s| !matches!(s, Step::Scan(_))).count();
        assert_eq!(zipf, 1000);
        let cold: Vec<u64> = s1.iter().filter_map(|s| if let Step::Scan(k) = s { Some(*k) } else { None }).collect();
        assert_eq!(cold, (1000..1070).collect::<Vec<_>>(), "10 scans of 7 fresh keys each, in order");
        assert!(s1.iter().all(|s| matches!(s, Step::Scan(_)) || s.key() < 1000));
        // A scan follows every 100th Zipf op.
        assert!(matches!(s1[100], Step::Scan(1000)) && !matches!(s1[99], Step::Scan(_)));
        // Raising the limit continues the same stream.
        let mut s = Stream::new(&a, 400);
        let mut two: Vec<Step> = s.by_ref().collect();
        s.limit = 1000;
        two.extend(s);
        assert_eq!(two, s1);
        let other: Vec<Step> = Stream::new(&args(&["--keys", "1000", "--seed", "4"]), 1000).collect();
        assert_ne!(other[..50], s1[..50]);
    }

    #[test]
    fn every_miss_is_refilled_before_the_next_get_of_its_key() {
        let a = args(&["--keys", "5000", "--scan-every", "500", "--scan-len", "50"]);
        for batch in [1, 7, 64] {
            let mut lru = Lru { capacity: Some(300), ..Lru::default() };
            let mut c = Counts::default();
            run_phase(&mut lru, &mut Stream::new(&a, 20_000), batch, &mut c).unwrap();
            assert_eq!(c.refills, c.misses + c.scan_misses, "batch {batch}");
            assert_eq!(c.scan_misses, c.scan_gets, "cold keys always miss");
            assert!(lru.missed.is_empty(), "the last batch's refills were sent");
            assert_eq!(c.gets + c.sets, 20_000);
            // Each refill is the SET of a key whose GET missed, sent
            // before any later request of that key.
            let mut open: HashSet<u64> = HashSet::new();
            let mut hits = Vec::new();
            let mut check = Lru { capacity: Some(300), ..Lru::default() };
            for r in &lru.log {
                hits.clear();
                check.exchange(&[*r], &mut hits).unwrap();
                match *r {
                    Req::Get(k) if hits == [false] => assert!(open.insert(k)),
                    Req::Get(k) => assert!(!open.contains(&k)),
                    Req::Set(k) => {
                        open.remove(&k);
                    }
                }
            }
        }
    }

    #[test]
    fn an_unbounded_cache_misses_each_key_once() {
        let a = args(&["--keys", "2000", "--get-ratio", "1"]);
        let steps: Vec<Step> = Stream::new(&a, 30_000).collect();
        let distinct: HashSet<u64> = steps.iter().map(|s| s.key()).collect();
        for batch in [1, 64] {
            let mut lru = Lru::default();
            let mut c = Counts::default();
            run_phase(&mut lru, &mut steps.iter().copied(), batch, &mut c).unwrap();
            assert_eq!(c.misses, distinct.len() as u64, "batch {batch}");
        }
    }

    #[test]
    fn batching_barely_moves_the_miss_ratio() {
        let a = args(&["--keys", "20000"]);
        let ratio = |batch| {
            let mut lru = Lru { capacity: Some(2000), ..Lru::default() };
            let mut s = Stream::new(&a, 100_000);
            run_phase(&mut lru, &mut s, batch, &mut Counts::default()).unwrap();
            let mut c = Counts::default();
            s.limit += 100_000;
            run_phase(&mut lru, &mut s, batch, &mut c).unwrap();
            c.miss_ratio().unwrap()
        };
        let (seq, piped) = (ratio(1), ratio(64));
        assert!(seq > 0.05 && seq < 0.9, "{seq}");
        assert!((seq - piped).abs() < 0.005, "sequential {seq} vs batch 64 {piped}");
    }

    #[test]
    fn flags_are_checked() {
        assert!(check(&args(&[])).is_ok());
        assert!(check(&args(&["--get-ratio", "2"])).is_err());
        assert!(check(&args(&["--scan-every", "10"])).is_err());
        assert!(check(&args(&["--keys", "300", "--key-bytes", "2"])).is_err());
        assert!(check(&args(&["--keys", "200", "--key-bytes", "2", "--scan-every", "1", "--scan-len", "1"])).is_err());
        assert!(check(&args(&["--batch", "0"])).is_err());
        assert_eq!(warmup(&args(&["--ops", "5"])), 5);
        assert_eq!(warmup(&args(&["--ops", "5", "--warmup-ops", "0"])), 0);
    }
}
