//! # `/metrics`: Prometheus's text exposition format
//!
//! `--metrics-port` (off by default) serves `GET /metrics` on the `-l`
//! address: everything `stats` and `INFO` count, named so that the
//! dashboards built for the two exporters people already run read it
//! unchanged —
//! * `memcached_*` as prometheus/memcached_exporter names memcached's
//!   `stats` (`memcached_commands_total{command="get",status="hit"}`,
//!   `memcached_current_items`, `memcached_items_evicted_total`, …);
//! * `redis_*` as oliver006/redis_exporter names Redis's `INFO` fields
//!   (`redis_connected_clients`, `redis_keyspace_hits_total`,
//!   `redis_commands_total{cmd="get"}`,
//!   `redis_commands_duration_seconds_total{cmd}`, the
//!   `redis_latency_percentiles_usec{cmd}` summary, `redis_db_keys{db}`, …);
//! * `amalgam_*` for what only Amalgam has: per-command latency
//!   histograms, the index (load, overflow nodes, expansions), the segments
//!   and the eviction policy's memory, and persistence.
//!
//! Both protocols share one keyspace and one set of connections, so the
//! `memcached_*` and `redis_*` families describe the same server: the
//! counters behind them are the same ones `stats` and `INFO` print
//! (`stats.rs`: per worker, summed here on each scrape), and the RESP
//! command figures are `resp/cmdstats.rs`'s (per worker, merged here).
//! A scrape costs the workers nothing but the moment each one's command
//! table is locked to be read.
//!
//! ## Where Amalgam differs from the exporters
//! * An exporter asks the server over its protocol and reports
//!   `memcached_up`/`redis_up` 0 when it cannot; here the server answers
//!   for itself, so both are 1 whenever a scrape is answered at all.
//! * `redis_expired_keys_total` counts the expired items the background
//!   sweep removed (`stats`' `crawler_reclaimed`): the engine does not
//!   count an expired item dropped when a read finds it.
//! * `redis_db_keys_expiring` is not exported: the engine keeps no count
//!   of keys with a TTL (INFO's keyspace line says `expires=0` for it).
//!
//! ## The HTTP server
//! tiny_http, on a thread of its own (`amalgam-metrics`), which polls the
//! shutdown flag every [`SHUTDOWN_POLL_MS`]: a scrape never runs on a
//! worker and needs no async runtime, and HTTP parsing stays with a
//! maintained crate. Only `GET` (and `HEAD`) of `/metrics` are answered
//! with metrics; `/` points there; anything else is 404 or 405.

use crate::resp::cmdstats;
use crate::Shared;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// How often the metrics thread looks at the shutdown flag while no
/// request comes.
pub const SHUTDOWN_POLL_MS: u64 = 100;

/// Upper bounds of `amalgam_command_duration_seconds`' buckets: 1 µs to
/// 1 s (the histograms' range, `cmdstats.rs`), 1-2.5-5 per decade.
const DURATION_BUCKETS_S: [f64; 19] = [
    0.000_001,
    0.000_002_5,
    0.000_005,
    0.000_01,
    0.000_025,
    0.000_05,
    0.000_1,
    0.000_25,
    0.000_5,
    0.001,
    0.002_5,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
];

/// The exposition format's content type (text format 0.0.4).
const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The metrics listener, bound before the workers start so that a port
/// in use stops the start with the reason.
pub struct Listener(tiny_http::Server);

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Listener").field(&self.0.server_addr().to_ip()).finish()
    }
}

/// Binds `addr` for the scrapes.
pub fn bind(addr: SocketAddr) -> Result<Listener, String> {
    tiny_http::Server::http(addr).map(Listener).map_err(|e| {
        format!(
            "cannot listen on {addr} for --metrics-port: {e}; give another with --metrics-port, or 0 to turn it off"
        )
    })
}

impl Listener {
    /// Where it listens.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.0.server_addr().to_ip()
    }

    /// Serves scrapes on a thread of its own until `shared.shutdown`.
    pub fn spawn(self, shared: Arc<Shared>) -> Result<std::thread::JoinHandle<()>, String> {
        std::thread::Builder::new()
            .name("amalgam-metrics".into())
            .spawn(move || serve(&self.0, &shared))
            .map_err(|e| format!("cannot start the metrics thread: {e}"))
    }
}

fn serve(server: &tiny_http::Server, shared: &Shared) {
    while !shared.shutdown.load(Ordering::Acquire) {
        let req = match server.recv_timeout(Duration::from_millis(SHUTDOWN_POLL_MS)) {
            Ok(Some(r)) => r,
            Ok(None) => continue,
            Err(_) => break,
        };
        let path = req.url().split('?').next().unwrap_or("");
        let method = req.method().clone();
        let header = |name: &str, value: &str| {
            tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("constant header is valid")
        };
        let response = match (&method, path) {
            (tiny_http::Method::Get | tiny_http::Method::Head, "/metrics") => {
                tiny_http::Response::from_string(render(shared)).with_header(header("Content-Type", CONTENT_TYPE))
            }
            (tiny_http::Method::Get | tiny_http::Method::Head, "/") => {
                tiny_http::Response::from_string("amalgam: metrics are at /metrics\n")
                    .with_header(header("Content-Type", "text/plain; charset=utf-8"))
            }
            (tiny_http::Method::Get | tiny_http::Method::Head, _) => {
                tiny_http::Response::from_string("not found: metrics are at /metrics\n").with_status_code(404)
            }
            _ => tiny_http::Response::from_string("only GET /metrics is served\n")
                .with_status_code(405)
                .with_header(header("Allow", "GET, HEAD")),
        };
        // A scraper that went away is its own problem.
        let _ = req.respond(response);
    }
}

/// The text a scrape gets: each family's HELP and TYPE, then its samples.
struct Exposition {
    text: String,
}

impl Exposition {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = write!(self.text, "# HELP {name} {help}\n# TYPE {name} {kind}\n");
    }

    /// One sample of the family just declared.
    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: impl std::fmt::Display) {
        self.text.push_str(name);
        if !labels.is_empty() {
            self.text.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.text.push(',');
                }
                let _ = write!(self.text, "{k}=\"{}\"", escape(v));
            }
            self.text.push('}');
        }
        let _ = writeln!(self.text, " {value}");
    }

    /// A family of one unlabelled sample.
    fn one(&mut self, name: &str, kind: &str, help: &str, value: impl std::fmt::Display) {
        self.family(name, kind, help);
        self.sample(name, &[], value);
    }
}

/// A label value as the format wants it: `\`, `"` and newlines escaped.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// Everything a scrape shows, as text.
pub fn render(shared: &Shared) -> String {
    let mut t = crate::stats::Totals::default();
    for w in shared.workers.iter() {
        w.add_to(&mut t);
    }
    let engine = shared.store.stats();
    let rows = cmdstats::merged(&shared.workers);
    let mut x = Exposition { text: String::with_capacity(16 << 10) };
    let up = shared.started.elapsed().as_secs();
    let connections = shared.curr_connections.load(Ordering::Relaxed);
    let rejected_connections = shared.rejected_connections.load(Ordering::Relaxed);
    let (user, system) = crate::admin::rusage();

    // ---- memcached_exporter's names (its exporter.go).
    x.one("memcached_up", "gauge", "Could the memcached server be reached.", 1);
    x.one("memcached_uptime_seconds", "gauge", "Number of seconds since the server started.", up);
    x.one(
        "memcached_time_seconds",
        "gauge",
        "current UNIX time according to the server.",
        amalgam_commands::now_ms() / 1000,
    );
    x.family("memcached_version", "gauge", "The version of this memcached server.");
    x.sample("memcached_version", &[("version", crate::admin::version())], 1);
    x.one("memcached_process_user_cpu_seconds_total", "counter", "Accumulated user time for this process.", user);
    x.one("memcached_process_system_cpu_seconds_total", "counter", "Accumulated system time for this process.", system);
    x.one(
        "memcached_read_bytes_total",
        "counter",
        "Total number of bytes read by this server from network.",
        t.bytes_read,
    );
    x.one(
        "memcached_written_bytes_total",
        "counter",
        "Total number of bytes sent by this server to network.",
        t.bytes_written,
    );
    x.one("memcached_current_connections", "gauge", "Current number of open connections.", connections);
    x.one("memcached_max_connections", "gauge", "Maximum number of clients allowed.", shared.conn_limit);
    x.one(
        "memcached_connections_total",
        "counter",
        "Total number of connections opened since the server started running.",
        t.total_connections,
    );
    x.one(
        "memcached_connections_rejected_total",
        "counter",
        "Total number of connections rejected due to hitting the -c limit.",
        rejected_connections,
    );
    x.one(
        "memcached_current_bytes",
        "gauge",
        "Current number of bytes used to store items.",
        crate::admin::bytes_stat(shared, &engine),
    );
    x.one(
        "memcached_limit_bytes",
        "gauge",
        "Number of bytes this server is allowed to use for storage.",
        engine.memory_limit_bytes,
    );
    x.family(
        "memcached_commands_total",
        "counter",
        "Total number of all requests broken down by command (get, set, etc.) and status.",
    );
    let cmds = [
        ("get", "hit", t.get_hits),
        ("get", "miss", t.get_misses),
        ("delete", "hit", t.delete_hits),
        ("delete", "miss", t.delete_misses),
        ("incr", "hit", t.incr_hits),
        ("incr", "miss", t.incr_misses),
        ("decr", "hit", t.decr_hits),
        ("decr", "miss", t.decr_misses),
        ("cas", "hit", t.cas_hits),
        ("cas", "miss", t.cas_misses),
        ("cas", "badval", t.cas_badval),
        ("touch", "hit", t.touch_hits),
        ("touch", "miss", t.touch_misses),
        ("flush", "hit", t.cmd_flush),
        // memcached counts CAS commands in cmd_set too; the exporter
        // subtracts them, and so does this.
        ("set", "hit", t.cmd_set.saturating_sub(t.cas_hits + t.cas_misses + t.cas_badval)),
    ];
    for (command, status, n) in cmds {
        x.sample("memcached_commands_total", &[("command", command), ("status", status)], n);
    }
    x.one("memcached_current_items", "gauge", "Current number of items stored by this instance.", engine.items);
    x.one(
        "memcached_items_total",
        "counter",
        "Total number of items stored during the life of this instance.",
        t.total_items,
    );
    x.one(
        "memcached_items_evicted_total",
        "counter",
        "Total number of valid items removed from cache to free memory for new items.",
        engine.evictions,
    );
    x.one("memcached_lru_crawler_reclaimed_total", "counter", "Total items freed by LRU Crawler.", engine.swept_items);

    // ---- redis_exporter's names (its metrics.go and info.go).
    x.one("redis_up", "gauge", "Information about the Redis instance", 1);
    x.one("redis_uptime_in_seconds", "gauge", "uptime_in_seconds metric", up);
    x.one("redis_connected_clients", "gauge", "connected_clients metric", connections);
    x.one("redis_max_clients", "gauge", "maxclients metric", shared.conn_limit);
    x.one("redis_blocked_clients", "gauge", "blocked_clients metric", shared.blocking.blocked());
    x.one("redis_memory_used_bytes", "gauge", "used_memory metric", engine.item_bytes + engine.index_bytes);
    x.one("redis_memory_max_bytes", "gauge", "maxmemory metric", engine.memory_limit_bytes);
    x.one("redis_connections_received_total", "counter", "total_connections_received metric", t.total_connections);
    x.one("redis_rejected_connections_total", "counter", "rejected_connections metric", rejected_connections);
    x.one("redis_commands_processed_total", "counter", "total_commands_processed metric", t.resp_commands);
    x.one("redis_net_input_bytes_total", "counter", "total_net_input_bytes metric", t.bytes_read);
    x.one("redis_net_output_bytes_total", "counter", "total_net_output_bytes metric", t.bytes_written);
    x.one("redis_keyspace_hits_total", "counter", "keyspace_hits metric", t.get_hits);
    x.one("redis_keyspace_misses_total", "counter", "keyspace_misses metric", t.get_misses);
    x.one("redis_evicted_keys_total", "counter", "evicted_keys metric", engine.evictions);
    x.one("redis_expired_keys_total", "counter", "expired_keys metric", engine.swept_items);
    x.one("redis_slowlog_length", "gauge", "Total slowlog", shared.slowlog.len());
    x.one("redis_last_slow_execution_duration_seconds", "gauge", "Last slow execution duration", {
        let last = shared.slowlog.newest(Some(1));
        last.first().map_or(0.0, |e| e.micros as f64 / 1e6)
    });
    // redis_exporter's, from INFO errorstats (their sum is INFO stats'
    // total_error_replies).
    let (_, error_codes) = crate::resp::errorstats::merged(&shared.workers);
    x.family("redis_errors_total", "counter", "Total number of errors per error type");
    for (code, n) in &error_codes {
        x.sample("redis_errors_total", &[("err", &String::from_utf8_lossy(code))], *n);
    }
    x.family("redis_db_keys", "gauge", "Total number of keys by DB");
    x.sample("redis_db_keys", &[("db", "db0")], engine.items);
    let ran: Vec<(usize, &cmdstats::Row)> = rows.iter().enumerate().filter(|(_, r)| r.calls + r.rejected > 0).collect();
    type Family = (&'static str, &'static str, fn(&cmdstats::Row) -> f64);
    let families: [Family; 4] = [
        ("redis_commands_total", "Total number of calls per command", |r| r.calls as f64),
        ("redis_commands_duration_seconds_total", "Total amount of time in seconds spent per command", |r| {
            (r.nanos / 1000) as f64 / 1e6
        }),
        ("redis_commands_rejected_calls_total", "Total number of errors prior command execution per command", |r| {
            r.rejected as f64
        }),
        ("redis_commands_failed_calls_total", "Total number of errors within command execution per command", |r| {
            r.failed as f64
        }),
    ];
    for (name, help, value) in families {
        x.family(name, "counter", help);
        for (slot, r) in &ran {
            x.sample(name, &[("cmd", cmdstats::slot_name(*slot))], value(r));
        }
    }
    // redis_exporter builds this summary from INFO latencystats'
    // percentiles and commandstats' calls and usec.
    x.family("redis_latency_percentiles_usec", "summary", "A summary of latency percentile distribution per command");
    for (slot, r) in ran.iter().filter(|(_, r)| r.hist.is_some()) {
        let cmd = cmdstats::slot_name(*slot);
        for p in cmdstats::INFO_PERCENTILES {
            let q = format!("{:.6}", p / 100.0).trim_end_matches('0').to_string();
            x.sample(
                "redis_latency_percentiles_usec",
                &[("cmd", cmd), ("quantile", &q)],
                r.percentile_ns(p) as f64 / 1000.0,
            );
        }
        x.sample("redis_latency_percentiles_usec_sum", &[("cmd", cmd)], (r.nanos / 1000) as f64);
        x.sample("redis_latency_percentiles_usec_count", &[("cmd", cmd)], r.calls);
    }

    // ---- Amalgam's own.
    x.family(
        "amalgam_command_duration_seconds",
        "histogram",
        "Time per RESP command, from the end of the previous one in its batch (resp/cmdstats.rs).",
    );
    for (slot, r) in ran.iter().filter(|(_, r)| r.hist.is_some()) {
        let cmd = cmdstats::slot_name(*slot);
        let h = r.hist.as_ref().expect("filtered");
        // One pass over the recorded values (not a count_between per
        // bucket, each of which walks the counts from zero).
        let mut counts = [0u64; DURATION_BUCKETS_S.len()];
        for v in h.iter_recorded() {
            let secs = h.highest_equivalent(v.value_iterated_to()) as f64 / 1e9;
            if let Some(i) = DURATION_BUCKETS_S.iter().position(|&le| secs <= le) {
                counts[i] += v.count_at_value();
            }
        }
        let mut upto = 0u64;
        for (le, n) in DURATION_BUCKETS_S.iter().zip(counts) {
            upto += n;
            x.sample("amalgam_command_duration_seconds_bucket", &[("cmd", cmd), ("le", &format!("{le}"))], upto);
        }
        x.sample("amalgam_command_duration_seconds_bucket", &[("cmd", cmd), ("le", "+Inf")], h.len());
        x.sample("amalgam_command_duration_seconds_sum", &[("cmd", cmd)], r.nanos as f64 / 1e9);
        x.sample("amalgam_command_duration_seconds_count", &[("cmd", cmd)], h.len());
    }
    x.one("amalgam_index_buckets", "gauge", "Buckets in the index's current table.", engine.buckets);
    x.one(
        "amalgam_index_load_ratio",
        "gauge",
        "Items per bucket of the current table.",
        if engine.buckets == 0 { 0.0 } else { engine.items as f64 / engine.buckets as f64 },
    );
    x.one("amalgam_index_overflow_nodes", "gauge", "Overflow nodes of the current table.", engine.overflow_nodes);
    x.one(
        "amalgam_index_overflow_nodes_in_use",
        "gauge",
        "Overflow nodes linked into chains.",
        engine.overflow_nodes_in_use,
    );
    x.one("amalgam_index_bytes", "gauge", "Bytes of the current index.", engine.index_bytes);
    x.one("amalgam_index_expansions_total", "counter", "Completed table doublings.", engine.expansions);
    x.one("amalgam_index_expanding", "gauge", "1 while an expansion is in flight.", u8::from(engine.expanding));
    x.one(
        "amalgam_item_bytes",
        "gauge",
        "Bytes of items' keys and values, and collections' charges.",
        engine.item_bytes,
    );
    x.one("amalgam_segment_bytes", "gauge", "Bytes per segment (cache mode).", engine.segment_bytes);
    x.one("amalgam_segments", "gauge", "Segments in the budget (cache mode).", engine.segments);
    x.one("amalgam_segments_free", "gauge", "Segments a writer may take now (cache mode).", engine.free_segments);
    x.one("amalgam_segments_limit", "gauge", "Most segments that may be resident (cache mode).", engine.segment_limit);
    x.one(
        "amalgam_segments_resident_bytes",
        "gauge",
        "Bytes of segments that may be resident (cache mode); reserved bytes (store mode).",
        engine.reserved_bytes,
    );
    x.one("amalgam_segments_reclaimed_total", "counter", "Segments reclaimed.", engine.reclaimed_segments);
    x.one("amalgam_segments_merged_total", "counter", "Segments freed by merging sparse runs.", engine.merged_segments);
    x.one(
        "amalgam_writer_reclaims_total",
        "counter",
        "Writes that found no free segment above the reserve and reclaimed one themselves (cache mode).",
        engine.writer_reclaims,
    );
    x.one(
        "amalgam_eviction_policy_bytes",
        "gauge",
        "Bytes the eviction policy's own structures may make resident (S3-FIFO's ghost).",
        engine.policy_bytes,
    );
    x.one(
        "amalgam_evicted_unfetched_total",
        "counter",
        "Evicted items that no GET had read.",
        engine.evicted_unfetched,
    );
    x.one(
        "amalgam_expired_unfetched_total",
        "counter",
        "Expired items reclaimed that no GET had read.",
        engine.expired_unfetched,
    );
    x.one(
        "amalgam_expiry_sweeps_total",
        "counter",
        "Full passes of the expiry sweep over the table.",
        engine.expiry_sweeps,
    );
    // Scripting (resp/script.rs, crate amalgam-script).
    let scripts = &shared.scripts;
    let (libraries, functions) = scripts.functions.counts();
    x.one("amalgam_scripts_cached", "gauge", "Lua scripts in the script cache (EVAL, SCRIPT LOAD).", scripts.len());
    x.one("amalgam_scripts_cached_bytes", "gauge", "Bytes of the cached scripts' bodies.", scripts.body_bytes());
    x.one("amalgam_lua_memory_bytes", "gauge", "Bytes the workers' Lua states hold.", scripts.lua_bytes());
    x.one("amalgam_function_libraries", "gauge", "FUNCTION libraries loaded.", libraries);
    x.one("amalgam_functions", "gauge", "Functions the loaded libraries registered.", functions);
    x.one(
        "amalgam_scripts_busy",
        "gauge",
        "1 while some script runs past busy-reply-threshold.",
        u8::from(scripts.runs.busy()),
    );
    let persist = shared.persist.as_ref().map(|p| p.stats());
    x.one("amalgam_persistence_enabled", "gauge", "1 with --dir.", u8::from(persist.is_some()));
    if let Some(p) = persist {
        x.one("amalgam_log_records_total", "counter", "Log records appended.", p.log_records);
        x.one("amalgam_log_writes_total", "counter", "write(2) calls of the log.", p.log_writes);
        x.one("amalgam_log_fsyncs_total", "counter", "fdatasync calls of the log.", p.log_fsyncs);
        x.one(
            "amalgam_changes_since_snapshot",
            "gauge",
            "Changes since the last snapshot's cut.",
            p.changes_since_snapshot,
        );
        x.one("amalgam_snapshots_total", "counter", "Snapshots completed.", p.snapshots);
        x.one(
            "amalgam_snapshot_in_progress",
            "gauge",
            "1 while a snapshot is written.",
            u8::from(p.snapshot_in_progress),
        );
        x.one(
            "amalgam_last_snapshot_timestamp_seconds",
            "gauge",
            "Unix time of the last completed snapshot (0: none yet).",
            p.last_snapshot_unix,
        );
        x.one(
            "amalgam_last_snapshot_duration_seconds",
            "gauge",
            "Seconds the last snapshot took.",
            p.last_snapshot_secs,
        );
        x.one("amalgam_last_snapshot_items", "gauge", "Items in the last snapshot.", p.last_snapshot_items);
    }
    x.text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }

    #[test]
    fn buckets_rise() {
        assert!(DURATION_BUCKETS_S.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(DURATION_BUCKETS_S[DURATION_BUCKETS_S.len() - 1] * 1e9, cmdstats::HISTOGRAM_HIGH_NS as f64);
    }
}
