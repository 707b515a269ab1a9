//! Redis settings Amalgam accepts and keeps, but that change nothing
//! here: CONFIG GET shows Redis 7.0's default until CONFIG SET (or the
//! config file) gives another value, which it then shows. Each row says
//! why nothing changes (docs/operations.md lists them). Redis's own
//! tests, its tools and some applications set these before they start
//! (`CONFIG SET lazyfree-lazy-user-del yes`, `hz 100`); refusing them
//! would stop them for a knob Amalgam has no use for.
//!
//! A value is checked as Redis checks it (the row's [`Kind`], Redis's
//! ranges and errors), so what is refused is what Redis refuses.

use crate::settings::{Kind, Setting, Start};
use crate::Shared;
use std::collections::HashMap;
use std::sync::Mutex;

/// One accepted setting: Redis's name, its type and range, Redis 7.0's
/// default, and why Amalgam has nothing to change.
struct Row {
    name: &'static str,
    kind: Kind,
    default: &'static str,
    #[allow(dead_code)] // documentation: the reason stays with the row
    why: &'static str,
}

/// The value a threshold of Redis's `hz` is kept at (Redis clamps).
const HZ_MIN: i64 = 1;
/// The most Redis takes for `hz`.
const HZ_MAX: i64 = 500;

const ROWS: &[Row] = &[
    Row {
        name: "hz",
        kind: Kind::Int(0, i32::MAX as i64),
        default: "10",
        why: "no server cron: the engine's maintenance thread and each worker keep their own clocks",
    },
    Row { name: "dynamic-hz", kind: Kind::Bool, default: "yes", why: "no server cron" },
    Row {
        name: "active-expire-effort",
        kind: Kind::Int(1, 10),
        default: "1",
        why: "the expiry sweep is bounded by its own step (engine maintenance.rs)",
    },
    Row {
        name: "activedefrag",
        kind: Kind::Bool,
        default: "no",
        why: "items live in fixed-size segments and pool blocks; nothing to defragment",
    },
    Row {
        name: "lazyfree-lazy-eviction",
        kind: Kind::Bool,
        default: "no",
        why: "values are freed by the engine's epochs, off the request path, always",
    },
    Row { name: "lazyfree-lazy-expire", kind: Kind::Bool, default: "no", why: "as lazyfree-lazy-eviction" },
    Row { name: "lazyfree-lazy-server-del", kind: Kind::Bool, default: "no", why: "as lazyfree-lazy-eviction" },
    Row { name: "lazyfree-lazy-user-del", kind: Kind::Bool, default: "no", why: "as lazyfree-lazy-eviction" },
    Row {
        name: "lazyfree-lazy-user-flush",
        kind: Kind::Bool,
        default: "no",
        why: "FLUSHALL is a fence, constant time, whatever this says",
    },
    Row { name: "replica-lazy-flush", kind: Kind::Bool, default: "no", why: "as lazyfree-lazy-user-flush" },
    Row {
        name: "list-compress-depth",
        kind: Kind::Int(0, i32::MAX as i64),
        default: "0",
        why: "list chunks are not compressed",
    },
    Row {
        name: "maxmemory-clients",
        kind: Kind::Text,
        default: "0",
        why: "clients are bounded by client-output-buffer-limit and the request limits",
    },
    Row {
        name: "client-query-buffer-limit",
        kind: Kind::Memory,
        default: "1073741824",
        why: "a request is bounded by proto-max-bulk-len plus 64 KiB (amalgam-protocol)",
    },
    Row {
        name: "maxmemory-samples",
        kind: Kind::Int(1, i32::MAX as i64),
        default: "5",
        why: "eviction is S3-FIFO over segments, not sampled",
    },
    Row { name: "maxmemory-eviction-tenacity", kind: Kind::Int(0, 100), default: "10", why: "as maxmemory-samples" },
    Row { name: "lfu-log-factor", kind: Kind::Int(0, i32::MAX as i64), default: "10", why: "as maxmemory-samples" },
    Row { name: "lfu-decay-time", kind: Kind::Int(0, i32::MAX as i64), default: "1", why: "as maxmemory-samples" },
    Row { name: "rdbcompression", kind: Kind::Bool, default: "yes", why: "snapshots are Amalgam's own format" },
    Row {
        name: "stop-writes-on-bgsave-error",
        kind: Kind::Bool,
        default: "yes",
        why: "a failed snapshot is logged; the log keeps every write",
    },
    Row {
        name: "rdb-key-save-delay",
        kind: Kind::Int(i32::MIN as i64, i32::MAX as i64),
        default: "0",
        why: "a testing knob of Redis's RDB writer",
    },
    Row {
        name: "key-load-delay",
        kind: Kind::Int(i32::MIN as i64, i32::MAX as i64),
        default: "0",
        why: "a testing knob of Redis's RDB loader",
    },
    Row {
        name: "loading-process-events-interval-bytes",
        kind: Kind::Int(1024, i32::MAX as i64),
        default: "2097152",
        why: "recovery runs before the ports open",
    },
    Row { name: "repl-diskless-sync", kind: Kind::Bool, default: "yes", why: "a full sync always streams from memory" },
    Row {
        name: "repl-diskless-load",
        kind: Kind::Enum(&["disabled", "on-empty-db", "swapdb"]),
        default: "disabled",
        why: "a replica loads a full sync as it arrives",
    },
    Row {
        name: "oom-score-adj",
        kind: Kind::Enum(&["no", "yes", "relative", "absolute"]),
        default: "no",
        why: "Amalgam does not write /proc/self/oom_score_adj",
    },
    Row {
        name: "shutdown-timeout",
        kind: Kind::Int(0, i32::MAX as i64),
        default: "10",
        why: "SHUTDOWN does not wait for replicas",
    },
    Row {
        name: "latency-tracking",
        kind: Kind::Bool,
        default: "yes",
        why: "per-command latency is always tracked (INFO latencystats)",
    },
    Row {
        name: "latency-tracking-info-percentiles",
        kind: Kind::Text,
        default: "50 99 99.9",
        why: "INFO latencystats reports p50, p99 and p99.9",
    },
];

/// The values set so far, by name (a setting absent shows its default).
#[derive(Debug, Default)]
pub struct Accepted(Mutex<HashMap<&'static str, String>>);

fn default_of(name: &str) -> &'static str {
    ROWS.iter().find(|r| r.name == name).map_or("", |r| r.default)
}

fn get(s: &Shared, name: &'static str) -> String {
    let held = s.accepted.0.lock().unwrap_or_else(|e| e.into_inner());
    held.get(name).cloned().unwrap_or_else(|| default_of(name).to_string())
}

fn set(s: &Shared, name: &'static str, v: &[u8]) {
    let mut v = String::from_utf8_lossy(v).into_owned();
    if name == "hz" {
        // Redis keeps hz within [1, 500].
        v = v.trim().parse::<i64>().map_or(v, |n| n.clamp(HZ_MIN, HZ_MAX).to_string());
    } else if matches!(ROWS.iter().find(|r| r.name == name).map(|r| r.kind), Some(Kind::Bool | Kind::Enum(_))) {
        v.make_ascii_lowercase();
    } else if name == "client-query-buffer-limit" || (name == "maxmemory-clients" && !v.ends_with('%')) {
        // CONFIG GET shows a memory value in bytes ("" is 0).
        v = crate::config::memory_value(v.as_bytes()).unwrap_or(0).to_string();
    }
    s.accepted.0.lock().unwrap_or_else(|e| e.into_inner()).insert(name, v);
}

/// Redis's `maxmemory-clients`: a memory value, or a percentage of
/// maxmemory from 0% to 100%.
fn refuse_maxmemory_clients(_: &Shared, v: &[u8]) -> Option<String> {
    const BAD: &str = "argument must be a memory or percent value";
    match v.strip_suffix(b"%") {
        Some(p) => match std::str::from_utf8(p).ok().and_then(|p| p.parse::<u64>().ok()) {
            None => Some(BAD.into()),
            Some(p) if p > 100 => Some("percentage argument must be less or equal to 100".into()),
            Some(_) => None,
        },
        None if v.is_empty() => None,
        None => crate::config::memory_value(v).is_none().then(|| BAD.into()),
    }
}

/// The rows for settings.rs's table.
pub fn rows() -> impl Iterator<Item = Setting> {
    ROWS.iter().map(|r| Setting {
        name: r.name,
        kind: r.kind,
        get,
        set: Some(set),
        start: Start::RunTime,
        refuse: (r.name == "maxmemory-clients").then_some(refuse_maxmemory_clients as crate::settings::Refuse),
        default: |name| default_of(name).to_string(),
    })
}
