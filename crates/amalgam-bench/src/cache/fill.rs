//! `amalgam-bench fill`: how many distinct items a server's memory budget
//! holds (issue 4 §4; MemC3 Table 3, "# items stored").
//!
//! # Method
//! 1. The server must be empty (`curr_items` 0): a fresh process, so that
//!    nothing but this run's items shares the budget.
//! 2. Keys `0, 1, 2, …` (`workload::key_of`, `--key-bytes` of hex) are SET
//!    in that order to `value_of(id, 0, --value-bytes)`, with flags 0 and no
//!    expiry, [`FILL_BATCH`] SETs per write over one connection, every reply
//!    read and checked (`STORED`; anything else stops the run).
//! 3. Every [`STATS_EVERY`] SETs (on the same connection, so after the
//!    server has executed every SET before it) `stats` is read. The fill
//!    stops at the first poll that shows `evictions` > 0: the budget is
//!    full. It also stops at a `SERVER_ERROR` reply to a SET: a server in
//!    store mode (Amalgam today, memcached `-M`) refuses instead of evicting,
//!    and is reported as "store mode: full at N items".
//! 4. Then every key written is read back with multi-gets of
//!    [`SWEEP_BATCH`] keys and each value compared byte for byte: the number
//!    found is the true count of items held, whatever the server's
//!    `curr_items` says (a server may count items it cannot return, or
//!    evict lazily).
//! 5. After `--settle-secs` ([`SETTLE_SECS_DEFAULT`]) the server's `stats`
//!    and resident set (`VmRSS`, and the peak `VmHWM`) are read again: what
//!    the budget costs in memory once background work (a hash table grown
//!    in the background) is done.
//!
//! The items held when evictions begin lie between `curr_items` at the
//! last poll without evictions and at the first poll with them; both are
//! reported, [`STATS_EVERY`] SETs apart.

use crate::net::{self, proto, Client, Protocol, ServerStats};
use crate::workload::{key_space, value_of};
use serde_json::{json, Value};
use std::time::Instant;

/// SETs written per `write` (and replies read before the next write).
pub const FILL_BATCH: usize = 256;
/// SETs between two `stats` polls: the precision of "when evictions begin".
pub const STATS_EVERY: u64 = 1024;
/// Keys per `get` of the read-back sweep.
pub const SWEEP_BATCH: usize = 100;
/// Default cap on the SETs of one fill: a server that neither evicts nor
/// refuses after this many items is reported as an error, not filled forever.
pub const MAX_SETS_DEFAULT: u64 = 1 << 28;
/// Default pause between the sweep and the last `stats` and resident-set
/// reading, for the server's background work to finish (memcached 1.6
/// grows its hash table in a background thread, seconds after the items
/// that asked for it: at -m 64 it reaches 2^19 buckets about then).
pub const SETTLE_SECS_DEFAULT: f64 = 2.0;

/// Flags of `amalgam-bench fill`.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Server, item sizes, output.
    #[command(flatten)]
    pub target: super::Target,
    /// Give up (an error) after this many SETs without evictions or a refusal.
    #[arg(long, default_value_t = MAX_SETS_DEFAULT)]
    pub max_sets: u64,
    /// Seconds to wait after the read-back before the last stats and
    /// resident-set reading.
    #[arg(long, default_value_t = SETTLE_SECS_DEFAULT)]
    pub settle_secs: f64,
}

/// Runs `fill`: prints the report and writes the JSON.
pub fn run(args: &Args) -> Result<(), String> {
    args.target.report(&measure(args)?, human)
}

/// Why the fill stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Stop {
    /// A `stats` poll showed evictions.
    Evicting,
    /// A SET was refused with this `SERVER_ERROR` line.
    Refused(String),
}

/// Fills the server, reads everything back, returns the result as JSON.
pub fn measure(args: &Args) -> Result<Value, String> {
    args.target.check()?;
    if !(args.settle_secs >= 0.0 && args.settle_secs.is_finite()) {
        return Err("--settle-secs must be a number of seconds, not negative".into());
    }
    let max_sets = args.max_sets.min(key_space(args.target.key_bytes));
    let addr = net::resolve(&args.target.server)?;
    let mut c = Client::connect(addr, net::IO_TIMEOUT)?;
    let start_stats = c.stats()?;
    let items_before = start_stats.require("curr_items")?;
    if items_before != 0 || start_stats.u64("evictions").unwrap_or(0) != 0 {
        return Err(format!(
            "the server at {addr} is not empty (curr_items {items_before}): fill measures a fresh server"
        ));
    }
    let t = Instant::now();
    let mut out = Vec::with_capacity(FILL_BATCH * (args.target.key_bytes + args.target.value_bytes + 32));
    let mut scratch = Vec::new();
    let mut issued: u64 = 0;
    let mut stored: u64 = 0;
    let mut next_poll = STATS_EVERY;
    let mut last_quiet: Option<ServerStats> = None;
    let stop = loop {
        if issued >= max_sets {
            return Err(format!("{issued} SETs stored without an eviction or a refusal (--max-sets)"));
        }
        let n = (FILL_BATCH as u64).min(max_sets - issued);
        out.clear();
        for id in issued..issued + n {
            let value = value_of(id, 0, args.target.value_bytes);
            proto::push_set(Protocol::Text, &mut out, id, args.target.key_bytes, &value, &mut scratch);
        }
        c.send(&out)?;
        issued += n;
        let mut refused = None;
        for _ in 0..n {
            match c.next(Protocol::Text)? {
                (proto::Event::Stored, _) => stored += 1,
                (proto::Event::ServerError, line) => {
                    let line = String::from_utf8_lossy(line).trim_end().to_string();
                    refused.get_or_insert(line);
                }
                (e, line) => return Err(format!("SET answered {e:?}: {:?}", String::from_utf8_lossy(line).trim_end())),
            }
        }
        if let Some(line) = refused {
            break Stop::Refused(line);
        }
        if issued >= next_poll {
            next_poll = issued + STATS_EVERY;
            let s = c.stats()?;
            if s.require("evictions")? > 0 {
                break Stop::Evicting;
            }
            last_quiet = Some(s);
        }
    };
    let first_stop_stats = c.stats()?;
    let fill_secs = t.elapsed().as_secs_f64();
    let rss = args.target.pid.map(super::rss_of).transpose()?;
    let (held, lowest_held) = sweep(&mut c, args, issued)?;
    std::thread::sleep(std::time::Duration::from_secs_f64(args.settle_secs));
    let end_stats = c.stats()?;
    let rss_end = args.target.pid.map(super::rss_of).transpose()?;

    let items_at_stop = first_stop_stats.require("curr_items")?;
    let (mode, note) = match &stop {
        Stop::Evicting => ("evicting", format!("evictions began at {items_at_stop} items")),
        Stop::Refused(line) => ("store", format!("store mode: full at {stored} items ({line})")),
    };
    Ok(json!({
        "label": args.target.label,
        "server": args.target.server,
        "version": start_stats.0.get("version"),
        "key_bytes": args.target.key_bytes,
        "value_bytes": args.target.value_bytes,
        "stop": mode,
        "note": note,
        "refusal": match &stop { Stop::Refused(l) => Some(l.as_str()), Stop::Evicting => None },
        "sets_issued": issued,
        "sets_stored": stored,
        "curr_items_last_poll_without_evictions": last_quiet.as_ref().and_then(|s| s.u64("curr_items")),
        "curr_items_at_stop": items_at_stop,
        "evictions_at_stop": first_stop_stats.u64("evictions"),
        "curr_items_end": end_stats.u64("curr_items"),
        "evictions_end": end_stats.u64("evictions"),
        "items_held": held,
        "lowest_held_id": lowest_held,
        "bytes": first_stop_stats.u64("bytes"),
        "limit_maxbytes": first_stop_stats.u64("limit_maxbytes"),
        "pid": args.target.pid,
        "rss_at_stop_bytes": rss.map(|r| r.0),
        "rss_end_bytes": rss_end.map(|r| r.0),
        "rss_peak_bytes": rss_end.map(|r| r.1),
        "settle_secs": args.settle_secs,
        "stats_end": end_stats.to_json(),
        "fill_seconds": fill_secs,
        "stats_at_stop": first_stop_stats.to_json(),
        "machine": net::machine(),
    }))
}

/// Reads keys `0..written` back with multi-gets; returns how many came back
/// with their value, and the lowest such id.
fn sweep(c: &mut Client, args: &Args, written: u64) -> Result<(u64, Option<u64>), String> {
    let mut out = Vec::new();
    let mut scratch = Vec::new();
    let mut held = 0;
    let mut lowest = None;
    let mut from = 0;
    while from < written {
        let to = (from + SWEEP_BATCH as u64).min(written);
        let ids: Vec<u64> = (from..to).collect();
        out.clear();
        proto::push_get(Protocol::Text, &mut out, ids.into_iter(), args.target.key_bytes, &mut scratch);
        c.send(&out)?;
        // The server answers the keys it holds, in request order.
        let mut after = from;
        loop {
            match c.next(Protocol::Text)? {
                (proto::Event::Value { key: Some(id), len }, unit) if (after..to).contains(&id) => {
                    if proto::value_data(unit, unit.len(), len) != value_of(id, 0, args.target.value_bytes).as_slice() {
                        return Err(format!("sweep: key {id} came back with another value"));
                    }
                    held += 1;
                    lowest.get_or_insert(id);
                    after = id + 1;
                }
                (proto::Event::End, _) => break,
                (e, unit) => {
                    return Err(format!("sweep: unexpected {e:?}: {:?}", String::from_utf8_lossy(unit).trim_end()))
                }
            }
        }
        from = to;
    }
    Ok((held, lowest))
}

/// The human report of a result.
pub fn human(r: &Value) -> String {
    let mib = |v: &Value| v.as_u64().map_or("-".to_string(), |b| format!("{:.1} MiB", b as f64 / (1 << 20) as f64));
    let mut out = format!(
        "fill {} {} ({} B keys, {} B values): {}\n",
        r["label"].as_str().unwrap_or(""),
        r["server"].as_str().unwrap_or("?"),
        r["key_bytes"],
        r["value_bytes"],
        r["note"].as_str().unwrap_or("?"),
    );
    let rows = [
        ("sets issued", r["sets_issued"].to_string()),
        ("sets stored", r["sets_stored"].to_string()),
        ("curr_items, last poll without evictions", r["curr_items_last_poll_without_evictions"].to_string()),
        ("curr_items when stopped", r["curr_items_at_stop"].to_string()),
        ("evictions when stopped", r["evictions_at_stop"].to_string()),
        ("items held (read back)", r["items_held"].to_string()),
        ("lowest key id held", r["lowest_held_id"].to_string()),
        ("curr_items / evictions at end", format!("{} / {}", r["curr_items_end"], r["evictions_end"])),
        ("bytes", format!("{} ({})", r["bytes"], mib(&r["bytes"]))),
        ("limit_maxbytes", format!("{} ({})", r["limit_maxbytes"], mib(&r["limit_maxbytes"]))),
        ("VmRSS when stopped", mib(&r["rss_at_stop_bytes"])),
        ("VmRSS at the end / VmHWM (peak)", format!("{} / {}", mib(&r["rss_end_bytes"]), mib(&r["rss_peak_bytes"]))),
    ];
    for (name, value) in rows {
        out += &format!("  {name:<42} {value}\n");
    }
    out
}
