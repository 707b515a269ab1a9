//! Every setting CONFIG GET shows, CONFIG SET changes, the config file
//! (`--config`, `conffile.rs`) sets and CONFIG REWRITE writes back: one
//! table, one row per setting, so a new setting is one row here.
//!
//! A row says, under Redis's name:
//! * its type ([`Kind`]: how a value is checked, with Redis 7.0's errors);
//! * how to read it now (`get`, CONFIG GET's text);
//! * whether it changes at run time (`set`: CONFIG SET, and a config-file
//!   line for a setting no flag starts) or is fixed at start (`None`:
//!   CONFIG SET accepts its current value only, as before);
//! * what a config-file line (or a Redis-style `--name value` on the
//!   command line) becomes at start ([`Start`]): a flag of `config.rs`
//!   (so the command line, which comes after the file, overrides it, as in
//!   Redis), a value applied once the server is built, or nothing;
//! * its default (CONFIG REWRITE appends a run-time setting missing from
//!   the file only when it differs).
//!
//! Settings with no row (memcached's flags such as `-t` or `-o`) are
//! set in the config file by their long flag names (`threads 4`), which
//! `conffile.rs` passes to clap as they are.

use crate::resp::typed::LiveThresholds;
use crate::Shared;
use amalgam_commands::object::MaxmemoryPolicy;
use std::sync::atomic::Ordering;
use std::sync::OnceLock;

/// How a value is checked (Redis's config types).
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// An integer in [min, max].
    Int(i64, i64),
    /// A memory value (`10mb`, `1gb`, bytes).
    Memory,
    /// `proto-max-bulk-len`: a memory value in Redis's range for it.
    BulkLen,
    /// `yes` or `no`.
    Bool,
    /// One of the names.
    Enum(&'static [&'static str]),
    /// Redis's `save`: `""` or `<seconds> <changes>` pairs.
    Save,
    /// Redis's `client-output-buffer-limit`: `<class> <hard> <soft>
    /// <seconds>` groups (`obuf.rs`).
    OutputLimits,
    /// Any text.
    Text,
    /// Immutable in Redis too: CONFIG SET refuses even the current value.
    Immutable,
}

/// What a config-file line becomes at start.
#[derive(Clone, Copy, Debug)]
pub enum Start {
    /// This command-line flag with the value as it is.
    Flag(&'static str),
    /// These command-line arguments (Err: the file's error for the line);
    /// the value was checked against the row's kind first.
    Map(fn(&str) -> Result<Vec<String>, String>),
    /// No flag: applied with the row's `set` once the server is built.
    RunTime,
    /// Accepted and ignored (Amalgam has nothing it would change).
    Ignored,
}

/// Why a value cannot be set now (None: it can).
pub type Refuse = fn(&Shared, &[u8]) -> Option<String>;

/// One setting.
#[derive(Debug)]
pub struct Setting {
    /// Redis's name (CONFIG GET/SET, the config file), lower case.
    pub name: &'static str,
    pub kind: Kind,
    /// The value now, as CONFIG GET shows it.
    pub get: fn(&Shared, &'static str) -> String,
    /// Applies a value `kind` accepted; None: fixed at start.
    pub set: Option<fn(&Shared, &'static str, &[u8])>,
    pub start: Start,
    /// A run-time change this server cannot make now, with the reason
    /// CONFIG SET gives (checked after the value's type, before anything
    /// is applied); None: every value `kind` accepts can be set.
    pub refuse: Option<Refuse>,
    /// The value nothing set (CONFIG REWRITE), for run-time settings.
    pub default: fn(&'static str) -> String,
}

/// Redis's `loglevel` names, as CONFIG SET lists them.
const LOGLEVELS: &[&str] = &["debug", "verbose", "notice", "warning"];

/// Redis's eviction policies (`MaxmemoryPolicy`, what serves each).
const POLICIES: &[&str] = &MaxmemoryPolicy::NAMES;

/// A text setting kept in a mutex (masterauth, masteruser): its value.
fn read_text(m: &std::sync::Mutex<String>) -> String {
    m.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Sets a text setting kept in a mutex.
fn write_text(m: &std::sync::Mutex<String>, v: &[u8]) {
    *m.lock().unwrap_or_else(|e| e.into_inner()) = text(v);
}

fn text(s: &[u8]) -> String {
    String::from_utf8_lossy(s).into_owned()
}

fn int(v: &[u8]) -> i64 {
    crate::resp::int_arg(v).expect("checked by the row's kind")
}

fn yes_no(b: bool) -> String {
    if b { "yes" } else { "no" }.into()
}

fn empty(_: &'static str) -> String {
    String::new()
}

/// `maxmemory` from the file: `-m` in whole megabytes, rounded up (Amalgam
/// sizes its memory in megabytes, as memcached). Redis's 0 (no limit) is
/// store mode's only and the policy may come later in the file: at start
/// the default `-m` stays (CONFIG SET maxmemory 0 is no limit in store
/// mode).
fn maxmemory_flag(v: &str) -> Result<Vec<String>, String> {
    let bytes = crate::config::memory_value(v.as_bytes()).ok_or("argument must be a memory value")?;
    if bytes == 0 {
        return Ok(Vec::new());
    }
    Ok(vec!["-m".into(), bytes.div_ceil(1 << 20).to_string()])
}

/// CONFIG SET maxmemory's value as the engine's limit: Redis's 0, no
/// limit, is `usize::MAX` (store mode only: the row refuses it for a
/// cache, which must evict at some size).
fn maxmemory_bytes(v: &[u8]) -> usize {
    match crate::config::memory_value(v).expect("checked by the row's kind") {
        0 => usize::MAX,
        b => usize::try_from(b).unwrap_or(usize::MAX),
    }
}

/// The `maxmemory-policy` in force.
fn policy_now(s: &Shared) -> MaxmemoryPolicy {
    MaxmemoryPolicy::from_index(s.maxmemory_policy.load(Ordering::Relaxed))
}

/// Why CONFIG SET maxmemory-policy cannot switch to `v` now (None: it
/// can). Every evicting policy switches to every other at run time (the
/// engine's scope, `Store::set_scope`, from the next reclaimed segment
/// on). Store mode (`noeviction`) and cache mode keep items in different
/// memory, size-class pools and a segment log (engine `pool.rs`,
/// `segment.rs`), each with its own account: a switch would copy every
/// item across while writers run, so it takes a restart.
fn policy_refusal(s: &Shared, v: &[u8]) -> Option<String> {
    let to: MaxmemoryPolicy = text(v).parse().ok()?;
    let store = !s.store.is_cache();
    if store == (to == MaxmemoryPolicy::Noeviction) {
        return None;
    }
    let now = policy_now(s);
    Some(format!(
        "switching between noeviction (--eviction none: items in size-class pools) and an evicting policy \
         (items in a segment log) needs a restart with --eviction; the policy now is {now}"
    ))
}

/// CONFIG SET maxmemory-policy (checked by [`policy_refusal`]): the
/// engine's scope, then the name.
fn policy_set(s: &Shared, _: &'static str, v: &[u8]) {
    let Ok(to) = text(v).parse::<MaxmemoryPolicy>() else { return };
    if let Some(scope) = to.scope() {
        if s.store.set_scope(scope).is_err() {
            return;
        }
    }
    s.maxmemory_policy.store(to.index(), Ordering::Relaxed);
}

/// `maxmemory-policy` from the file: the flag (`noeviction` makes it
/// store mode, as `--eviction none`).
fn policy_flag(v: &str) -> Result<Vec<String>, String> {
    let p: MaxmemoryPolicy = v.parse()?;
    Ok(vec!["--maxmemory-policy".into(), p.name().into()])
}

/// `replicaof <host> <port>` from the file (`""`: a primary).
fn replicaof_flag(v: &str) -> Result<Vec<String>, String> {
    let words: Vec<&str> = v.split_whitespace().collect();
    match words[..] {
        [] => Ok(Vec::new()),
        [host, port] => Ok(vec!["--replicaof".into(), host.into(), port.into()]),
        _ => Err("wrong number of arguments".into()),
    }
}

/// `bind`: Amalgam listens on one address: the first (Redis's `-` prefix,
/// "skip if unavailable", dropped).
fn bind_flag(v: &str) -> Result<Vec<String>, String> {
    let first = v.split_whitespace().next().unwrap_or("");
    Ok(vec!["-l".into(), first.trim_start_matches('-').into()])
}

/// Redis's `save` as Amalgam's snapshot schedule, (seconds between
/// snapshots if anything changed, changes that start one; 0: off). Redis
/// saves after `<seconds>` if at least `<changes>` happened, per pair;
/// Amalgam has one timer and one counter, so a pair with `<changes>` of
/// 0 or 1 sets the timer (the smallest such seconds) and any other pair
/// the counter (the smallest such changes; its seconds are dropped).
/// `""` is no schedule. None: not Redis's syntax (Redis wants pairs of
/// integers, seconds from 1).
pub fn parse_save(v: &str) -> Option<(u64, u64)> {
    let n: Vec<u64> = v.split_whitespace().map(|x| x.parse().ok()).collect::<Option<_>>()?;
    if n.len() % 2 != 0 || n.chunks(2).any(|p| p[0] == 0) {
        return None;
    }
    let every = n.chunks(2).filter(|p| p[1] <= 1).map(|p| p[0]).min().unwrap_or(0);
    let after = n.chunks(2).filter(|p| p[1] > 1).map(|p| p[1]).min().unwrap_or(0);
    Some((every, after))
}

/// The schedule in Redis's `save` syntax, read back by [`parse_save`].
pub fn format_save((every, after): (u64, u64)) -> String {
    let mut pairs = Vec::new();
    if every > 0 {
        pairs.push(format!("{every} 1"));
    }
    if after > 0 {
        pairs.push(format!("1 {}", after.max(2)));
    }
    pairs.join(" ")
}

/// `save` from the file: the schedule's flags.
fn save_flag(v: &str) -> Result<Vec<String>, String> {
    let (every, after) = parse_save(v).ok_or("Invalid save parameters")?;
    Ok(vec!["--snapshot-every".into(), every.to_string(), "--snapshot-after-writes".into(), after.to_string()])
}

/// `timeout`: Amalgam never closes idle connections, so only 0 is taken.
fn thresholds_get(s: &Shared, name: &'static str) -> String {
    s.thresholds.get(name).unwrap_or(0).to_string()
}

fn thresholds_set(s: &Shared, name: &'static str, v: &[u8]) {
    let n = match kind_of_threshold(name) {
        Kind::Memory => crate::config::memory_value(v).and_then(|m| i64::try_from(m).ok()),
        _ => crate::resp::int_arg(v),
    };
    let _ = s.thresholds.set(name, n.expect("checked by the row's kind"));
}

fn thresholds_default(name: &'static str) -> String {
    LiveThresholds::default().get(name).unwrap_or(0).to_string()
}

/// Redis 7.0 declares the `-value` limits and `hll-sparse-max-bytes`
/// memory configs (`64`, `1kb`).
fn kind_of_threshold(name: &str) -> Kind {
    if name.starts_with("list-max-") {
        Kind::Int(i32::MIN as i64, i32::MAX as i64)
    } else if name.ends_with("-value") || name.ends_with("-bytes") {
        Kind::Memory
    } else {
        Kind::Int(0, i64::MAX)
    }
}

/// The rows, in CONFIG GET's order.
fn rows() -> Vec<Setting> {
    let mut r = vec![
        Setting {
            name: "save",
            kind: Kind::Save,
            // No persistence, no schedule (Redis always has one; Amalgam
            // without --dir has nowhere to save).
            get: |s, _| s.persist.as_ref().map(|p| format_save(p.schedule())).unwrap_or_default(),
            set: Some(|s, _, v| {
                let (every, after) = parse_save(&text(v)).expect("checked by the row's kind");
                match &s.persist {
                    Some(p) => p.set_schedule(every, after),
                    None if every > 0 || after > 0 => {
                        log::warn!("save {}: persistence is off (no --dir), nothing is saved", text(v));
                    }
                    None => {}
                }
            }),
            start: Start::Map(save_flag),
            refuse: None,
            default: empty,
        },
        Setting {
            name: "appendonly",
            kind: Kind::Bool,
            get: |s, _| yes_no(s.persist.is_some()),
            set: None,
            // Persistence is on with `dir` (--dir), whatever this says.
            start: Start::Ignored,
            refuse: None,
            default: |_| "no".into(),
        },
        Setting {
            name: "appendfsync",
            kind: Kind::Enum(&["always", "everysec", "no"]),
            get: |s, _| format!("{:?}", s.persist.as_ref().map_or(s.args.fsync, |p| p.fsync())).to_lowercase(),
            // Any policy at run time, `always` included (amalgam-persist's
            // `set_fsync` says why that is sound); without --dir there is
            // no log to change.
            set: Some(|s, _, v| {
                if let (Some(p), Ok(to)) = (&s.persist, text(v).to_ascii_lowercase().parse()) {
                    p.set_fsync(to);
                }
            }),
            start: Start::Flag("--fsync"),
            refuse: Some(|s, v| {
                let to: amalgam_persist::Fsync = text(v).to_ascii_lowercase().parse().ok()?;
                match &s.persist {
                    Some(_) => None,
                    None if s.args.fsync == to => None,
                    None => Some("can't set immutable config".into()),
                }
            }),
            default: |_| "everysec".into(),
        },
        Setting {
            name: "dir",
            kind: Kind::Text,
            get: |s, _| s.args.dir.as_ref().map(|d| d.display().to_string()).unwrap_or_default(),
            set: None,
            start: Start::Flag("--dir"),
            refuse: None,
            default: empty,
        },
        Setting {
            name: "dbfilename",
            kind: Kind::Text,
            // Redis shows its default; Amalgam loads a file of that name at
            // start, and writes one on SAVE once a name was given.
            get: |s, _| {
                s.rdb
                    .name
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone()
                    .unwrap_or_else(|| amalgam_commands::rdbfile::DBFILENAME_DEFAULT.into())
            },
            set: Some(|s, _, v| *s.rdb.name.lock().unwrap_or_else(|e| e.into_inner()) = Some(text(v))),
            start: Start::Flag("--dbfilename"),
            refuse: Some(|_, v| crate::config::parse_dbfilename(&text(v)).err()),
            default: |_| amalgam_commands::rdbfile::DBFILENAME_DEFAULT.into(),
        },
        Setting {
            name: "maxmemory",
            kind: Kind::Memory,
            get: |s, _| s.store.stats().memory_limit_bytes.to_string(),
            set: Some(|s, _, v| {
                let bytes = maxmemory_bytes(v);
                if s.store.set_memory_limit(bytes).is_ok() {
                    let st = s.store.stats();
                    let used = st.item_bytes + st.index_bytes; // INFO's used_memory
                    if (used as usize) > bytes {
                        // Redis's warning, in Amalgam's words for each mode.
                        log::warn!(
                            "the new maxmemory value set via CONFIG SET ({bytes}) is smaller than the current \
                             memory usage ({used}): {}",
                            if s.store.is_cache() {
                                "keys are evicted down to it"
                            } else {
                                "writes are refused (OOM) until deletes bring the usage below it"
                            }
                        );
                    }
                }
            }),
            start: Start::Map(maxmemory_flag),
            refuse: Some(|s, v| {
                let bytes = maxmemory_bytes(v);
                if bytes == usize::MAX && s.store.is_cache() {
                    return Some(
                        "maxmemory 0 (no limit) is for noeviction (--eviction none) only: a cache needs a limit".into(),
                    );
                }
                s.store.check_memory_limit(bytes).err().map(|e| e.to_string())
            }),
            default: |_| (crate::config::MEMORY_LIMIT_MB_DEFAULT << 20).to_string(),
        },
        Setting {
            name: "maxmemory-policy",
            kind: Kind::Enum(POLICIES),
            get: |s, _| policy_now(s).name().into(),
            set: Some(policy_set),
            start: Start::Map(policy_flag),
            refuse: Some(policy_refusal),
            default: |_| "allkeys-lru".into(),
        },
        Setting {
            // Amalgam's own (Redis has no such parameter; named after the
            // flag, so a config file's `eviction clock` is this row): the
            // cache's policy, switchable between s3fifo and clock at run
            // time (engine `Store::set_eviction` says why that is sound);
            // `none` (store mode) to or from a cache needs a restart.
            name: "eviction",
            kind: Kind::Enum(&amalgam_engine::evict::Eviction::NAMES),
            get: |s, _| s.store.eviction().to_string(),
            set: Some(|s, _, v| {
                if let Ok(to) = text(v).to_ascii_lowercase().parse() {
                    if s.store.set_eviction(to).is_ok() {
                        // Each worker seals the segments it has open
                        // (`Store::follow_eviction`, in its loop's wake-up),
                        // even one that writes nothing more.
                        for id in 0..s.workers.len() {
                            s.blocking.wake(id);
                        }
                    }
                }
            }),
            start: Start::Flag("--eviction"),
            refuse: Some(|s, v| {
                let to: amalgam_engine::evict::Eviction = text(v).to_ascii_lowercase().parse().ok()?;
                if to == s.store.eviction() {
                    return None;
                }
                // Only store <-> cache is refused, in maxmemory-policy's words.
                let store = to == amalgam_engine::evict::Eviction::None;
                let as_redis: &[u8] = if store { b"noeviction" } else { b"allkeys-lru" };
                policy_refusal(s, as_redis)
            }),
            default: |_| amalgam_engine::evict::Eviction::S3Fifo.to_string(),
        },
        Setting {
            // Amalgam's own: S3-FIFO's small (probationary) queue's share
            // of the cache in percent (the paper's 10 by default), kept
            // while CLOCK is in force for a switch back; a cache only
            // (store mode has no queues: refused, as a restart would be
            // needed). From the next reclamation on (engine
            // `S3Fifo::set_small_percent`).
            name: "s3fifo-small-queue-percent",
            kind: Kind::Int(
                amalgam_engine::evict::SMALL_QUEUE_PERCENT_MIN as i64,
                amalgam_engine::evict::SMALL_QUEUE_PERCENT_MAX as i64,
            ),
            get: |s, _| s.store.small_queue_percent().unwrap_or(amalgam_engine::evict::SMALL_QUEUE_PERCENT).to_string(),
            set: Some(|s, _, v| {
                let _ = s.store.set_small_queue_percent(int(v) as u8);
            }),
            start: Start::RunTime,
            refuse: Some(|s, _| {
                (!s.store.is_cache()).then(|| {
                    "store mode (--eviction none) has no eviction queues: restart with --eviction s3fifo".into()
                })
            }),
            default: |_| amalgam_engine::evict::SMALL_QUEUE_PERCENT.to_string(),
        },
        Setting {
            name: "maxclients",
            kind: Kind::Int(1, u32::MAX as i64),
            get: |s, _| s.args.conn_limit.to_string(),
            set: None,
            start: Start::Flag("-c"),
            refuse: None,
            default: |_| crate::config::CONNECTIONS_MAX_DEFAULT.to_string(),
        },
        Setting {
            name: "databases",
            // Immutable in Redis: fixed at start (clap checks the range).
            kind: Kind::Immutable,
            get: |s, _| s.databases.count().to_string(),
            set: None,
            start: Start::Flag("--databases"),
            refuse: None,
            default: |_| crate::config::DATABASES_DEFAULT.to_string(),
        },
        Setting {
            name: "port",
            kind: Kind::Int(0, 65535),
            get: |s, _| s.args.resp_port.to_string(),
            set: None,
            // Redis's port is the RESP port (memcached's is `memcached-port`).
            start: Start::Flag("--resp-port"),
            refuse: None,
            default: |_| crate::config::RESP_PORT_DEFAULT.to_string(),
        },
        Setting {
            name: "bind",
            kind: Kind::Text,
            get: |s, _| s.args.listen.clone(),
            set: None,
            start: Start::Map(bind_flag),
            refuse: None,
            default: |_| "127.0.0.1".into(),
        },
        Setting {
            name: "proto-max-bulk-len",
            kind: Kind::BulkLen,
            get: |s, _| s.proto_max_bulk_len.load(Ordering::Relaxed).to_string(),
            set: Some(|s, _, v| {
                let n = crate::config::check_proto_max_bulk_len(v).expect("checked by the row's kind");
                s.proto_max_bulk_len.store(n, Ordering::Relaxed);
            }),
            start: Start::Flag("--proto-max-bulk-len"),
            refuse: None,
            default: |_| crate::config::PROTO_MAX_BULK_LEN_DEFAULT.to_string(),
        },
        Setting {
            // Every class, as Redis shows them; `normal` bounds both
            // ports' clients, `pubsub` subscribers, `slave` is shown and
            // not enforced (obuf.rs). CONFIG SET and each config-file line
            // change the classes they name.
            name: "client-output-buffer-limit",
            kind: Kind::OutputLimits,
            get: |s, _| s.obuf.format(),
            set: Some(|s, _, v| s.set_output_limits(&amalgam_net::obuf::parse(v).expect("checked by the row's kind"))),
            start: Start::RunTime,
            refuse: None,
            default: |_| amalgam_net::obuf::OutputLimits::format_default(),
        },
        Setting {
            // Keyspace notifications (amalgam-commands notify.rs): the
            // class letters, shown in Redis's order.
            name: "notify-keyspace-events",
            kind: Kind::Text,
            get: |s, _| amalgam_commands::notify::format(s.notify_config.load(Ordering::Relaxed)),
            set: Some(|s, _, v| {
                s.set_notify(amalgam_commands::notify::parse(v).expect("checked by refuse"));
            }),
            start: Start::RunTime,
            refuse: Some(|_, v| {
                amalgam_commands::notify::parse(v).is_none().then(|| amalgam_commands::notify::INVALID_CLASS.into())
            }),
            default: empty,
        },
        Setting {
            // CLIENT TRACKING's table of keys (resp/tracking.rs): past it
            // the oldest keys are invalidated; 0 bounds it not.
            name: "tracking-table-max-keys",
            kind: Kind::Int(0, i64::MAX),
            get: |s, _| s.tracking.max_keys().to_string(),
            set: Some(|s, _, v| s.tracking.set_max_keys(s, int(v) as u64)),
            start: Start::RunTime,
            refuse: None,
            default: |_| crate::resp::tracking::TABLE_KEYS_MAX_DEFAULT.to_string(),
        },
        Setting {
            name: "timeout",
            kind: Kind::Int(0, i32::MAX as i64),
            get: |s, _| s.idle_timeout_secs.load(Ordering::Relaxed).to_string(),
            set: Some(|s, _, v| s.idle_timeout_secs.store(int(v) as u64, Ordering::Relaxed)),
            start: Start::Flag("--timeout"),
            refuse: None,
            default: |_| "0".into(),
        },
        Setting {
            name: "io-threads",
            kind: Kind::Immutable,
            get: |s, _| s.workers.len().to_string(),
            set: None,
            start: Start::Flag("--threads"),
            refuse: None,
            default: empty,
        },
        Setting {
            name: "slowlog-log-slower-than",
            kind: Kind::Int(-1, i64::MAX),
            get: |s, _| s.slowlog.slower_than_us.load(Ordering::Relaxed).to_string(),
            set: Some(|s, _, v| s.slowlog.slower_than_us.store(int(v), Ordering::Relaxed)),
            start: Start::RunTime,
            refuse: None,
            default: |_| crate::resp::cmdstats::SLOWLOG_SLOWER_THAN_US_DEFAULT.to_string(),
        },
        Setting {
            name: "enable-debug-command",
            kind: Kind::Enum(&["no", "yes", "local"]),
            get: |s, _| s.args.enable_debug_command.clone(),
            set: None,
            start: Start::Flag("--enable-debug-command"),
            refuse: None,
            default: |_| "no".into(),
        },
        Setting {
            name: "latency-monitor-threshold",
            kind: Kind::Int(0, i64::MAX),
            get: |s, _| s.latency.threshold_ms.load(Ordering::Relaxed).to_string(),
            set: Some(|s, _, v| s.latency.threshold_ms.store(int(v) as u64, Ordering::Relaxed)),
            start: Start::RunTime,
            refuse: None,
            default: |_| "0".into(),
        },
        Setting {
            name: "slowlog-max-len",
            kind: Kind::Int(0, i64::MAX),
            get: |s, _| s.slowlog.max_len.load(Ordering::Relaxed).to_string(),
            set: Some(|s, _, v| s.slowlog.max_len.store(int(v) as u64, Ordering::Relaxed)),
            start: Start::RunTime,
            refuse: None,
            default: |_| crate::resp::cmdstats::SLOWLOG_LEN_DEFAULT.to_string(),
        },
        Setting {
            name: "acllog-max-len",
            kind: Kind::Int(0, i64::MAX),
            get: |s, _| s.acl.log.max_len.load(Ordering::Relaxed).to_string(),
            set: Some(|s, _, v| s.acl.log.max_len.store(int(v) as u64, Ordering::Relaxed)),
            start: Start::RunTime,
            refuse: None,
            default: |_| crate::resp::acl_log::LOG_LEN_DEFAULT.to_string(),
        },
        Setting {
            name: "requirepass",
            kind: Kind::Text,
            get: |s, _| text(&s.acl.requirepass()),
            set: Some(|s, _, v| s.acl.set_requirepass(v)),
            start: Start::Flag("--requirepass"),
            refuse: None,
            default: empty,
        },
        Setting {
            name: "protected-mode",
            kind: Kind::Bool,
            get: |s, _| yes_no(s.acl.protected_mode.load(Ordering::Relaxed)),
            set: Some(|s, _, v| s.acl.protected_mode.store(v.eq_ignore_ascii_case(b"yes"), Ordering::Relaxed)),
            start: Start::Flag("--protected-mode"),
            refuse: None,
            default: |_| "yes".into(),
        },
        Setting {
            name: "aclfile",
            kind: Kind::Text,
            get: |s, _| s.args.aclfile.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
            set: None,
            start: Start::Flag("--aclfile"),
            refuse: None,
            default: empty,
        },
        Setting {
            name: "loglevel",
            kind: Kind::Enum(LOGLEVELS),
            get: |_, _| crate::logging::level_name().into(),
            set: Some(|_, _, v| {
                let level = crate::logging::parse_level(&text(v)).expect("checked by the row's kind");
                crate::logging::set_level(level);
            }),
            start: Start::Flag("--loglevel"),
            refuse: None,
            default: |_| crate::logging::LEVEL_DEFAULT.into(),
        },
    ];
    // TLS (tls.rs): the port and client policy are fixed at start; the
    // files reload at CONFIG SET (resp/server.rs `reload_tls`, all of one
    // CONFIG SET together), so their `set` has nothing left to do.
    r.push(Setting {
        name: "tls-port",
        kind: Kind::Int(0, 65535),
        get: |s, _| s.args.tls_port.to_string(),
        set: None,
        start: Start::Flag("--tls-port"),
        refuse: None,
        default: |_| "0".into(),
    });
    for (name, flag) in [("tls-cert-file", "--tls-cert-file"), ("tls-key-file", "--tls-key-file")] {
        r.push(Setting {
            name,
            kind: Kind::Text,
            get: tls_file,
            set: Some(|_, _, _| {}),
            start: Start::Flag(flag),
            refuse: Some(tls_off),
            default: empty,
        });
    }
    r.push(Setting {
        name: "tls-ca-cert-file",
        kind: Kind::Text,
        get: tls_file,
        set: Some(|_, _, _| {}),
        start: Start::Flag("--tls-ca-cert-file"),
        refuse: Some(tls_off),
        default: empty,
    });
    r.push(Setting {
        name: "tls-auth-clients",
        kind: Kind::Enum(&["no", "yes", "optional"]),
        get: |s, _| {
            s.tls.as_ref().map_or(amalgam_net::tls::ClientAuth::Required, |t| t.resp_auth()).redis_name().into()
        },
        set: None,
        start: Start::Flag("--tls-auth-clients"),
        refuse: None,
        default: |_| "yes".into(),
    });
    // Replication (repl.rs).
    r.extend([
        Setting {
            // Redis's `replicaof <host> <port>` (REPLICAOF changes it at run
            // time; CONFIG SET refuses it, as Redis's does). CONFIG REWRITE
            // writes it, so a node Sentinel reconfigured restarts as it was
            // left.
            name: "replicaof",
            kind: Kind::Text,
            get: |s, _| s.repl.primary().map(|(h, p)| format!("{h} {p}")).unwrap_or_default(),
            set: Some(|_, _, _| {}),
            start: Start::Map(replicaof_flag),
            refuse: Some(|_, _| Some("can't set immutable config".into())),
            default: empty,
        },
        Setting {
            name: "masterauth",
            kind: Kind::Text,
            get: |s, _| read_text(&s.repl.masterauth),
            set: Some(|s, _, v| write_text(&s.repl.masterauth, v)),
            start: Start::RunTime,
            refuse: None,
            default: empty,
        },
        Setting {
            name: "masteruser",
            kind: Kind::Text,
            get: |s, _| read_text(&s.repl.masteruser),
            set: Some(|s, _, v| write_text(&s.repl.masteruser, v)),
            start: Start::RunTime,
            refuse: None,
            default: empty,
        },
        Setting {
            name: "replica-read-only",
            kind: Kind::Bool,
            get: |s, _| yes_no(s.repl.replica_read_only.load(Ordering::Relaxed)),
            set: Some(|s, _, v| s.repl.set_replica_read_only(v.eq_ignore_ascii_case(b"yes"))),
            start: Start::RunTime,
            refuse: None,
            default: |_| "yes".into(),
        },
        Setting {
            name: "replica-serve-stale-data",
            kind: Kind::Bool,
            get: |s, _| yes_no(s.repl.serve_stale.load(Ordering::Relaxed)),
            set: Some(|s, _, v| {
                s.repl.serve_stale.store(v.eq_ignore_ascii_case(b"yes"), Ordering::Relaxed);
                s.repl.refresh_stale();
            }),
            start: Start::RunTime,
            refuse: None,
            default: |_| "yes".into(),
        },
        Setting {
            name: "repl-backlog-size",
            kind: Kind::Memory,
            get: |s, _| s.repl.backlog.backlog_info().1.to_string(),
            set: Some(|s, _, v| {
                let bytes = crate::config::memory_value(v).expect("checked by the row's kind");
                s.repl.backlog.set_size(usize::try_from(bytes).unwrap_or(usize::MAX));
            }),
            start: Start::Flag("--repl-backlog-size"),
            refuse: None,
            default: |_| amalgam_persist::repl::REPL_BACKLOG_BYTES_DEFAULT.to_string(),
        },
        Setting {
            name: "repl-timeout",
            kind: Kind::Int(1, i32::MAX as i64),
            get: |s, _| s.repl.timeout_secs.load(Ordering::Relaxed).to_string(),
            set: Some(|s, _, v| s.repl.timeout_secs.store(int(v) as u64, Ordering::Relaxed)),
            start: Start::RunTime,
            refuse: None,
            default: |_| crate::repl::REPL_TIMEOUT_SECS_DEFAULT.to_string(),
        },
        Setting {
            name: "replica-priority",
            kind: Kind::Int(0, i32::MAX as i64),
            get: |s, _| s.repl.replica_priority.load(Ordering::Relaxed).to_string(),
            set: Some(|s, _, v| s.repl.replica_priority.store(int(v) as u64, Ordering::Relaxed)),
            start: Start::RunTime,
            refuse: None,
            default: |_| crate::repl::REPLICA_PRIORITY_DEFAULT.to_string(),
        },
        Setting {
            name: "min-replicas-to-write",
            kind: Kind::Int(0, i32::MAX as i64),
            get: |s, _| s.repl.min_replicas_to_write.load(Ordering::Relaxed).to_string(),
            set: Some(|s, _, v| s.repl.set_min_replicas_to_write(int(v) as u64)),
            start: Start::RunTime,
            refuse: None,
            default: |_| "0".into(),
        },
        Setting {
            name: "min-replicas-max-lag",
            kind: Kind::Int(0, i32::MAX as i64),
            get: |s, _| s.repl.min_replicas_max_lag.load(Ordering::Relaxed).to_string(),
            set: Some(|s, _, v| s.repl.min_replicas_max_lag.store(int(v) as u64, Ordering::Relaxed)),
            start: Start::RunTime,
            refuse: None,
            default: |_| "10".into(),
        },
    ]);
    // Redis Cluster's options CONFIG SET changes (amalgam-cluster
    // options.rs), under Redis 7.0's names and their `slave` aliases,
    // which CONFIG GET lists too. Set on a node not in cluster mode, they
    // are kept and shown, as Redis does.
    for name in [CLUSTER_ALIASES[0].0, CLUSTER_ALIASES[0].1] {
        r.push(Setting {
            name,
            kind: Kind::Int(0, amalgam_cluster::options::INT_OPTION_MAX as i64),
            get: |s, _| s.cluster.validity_factor().to_string(),
            set: Some(|s, _, v| s.cluster.set_validity_factor(int(v) as u64)),
            start: Start::Flag("--cluster-replica-validity-factor"),
            refuse: None,
            default: |_| amalgam_cluster::options::VALIDITY_FACTOR_DEFAULT.to_string(),
        });
    }
    r.push(Setting {
        name: "cluster-migration-barrier",
        kind: Kind::Int(0, amalgam_cluster::options::INT_OPTION_MAX as i64),
        get: |s, _| s.cluster.migration_barrier().to_string(),
        set: Some(|s, _, v| s.cluster.set_migration_barrier(int(v) as u64)),
        start: Start::Flag("--cluster-migration-barrier"),
        refuse: None,
        default: |_| amalgam_cluster::options::MIGRATION_BARRIER_DEFAULT.to_string(),
    });
    r.push(Setting {
        name: "cluster-allow-replica-migration",
        kind: Kind::Bool,
        get: |s, _| yes_no(s.cluster.allow_replica_migration()),
        set: Some(|s, _, v| s.cluster.set_allow_replica_migration(v.eq_ignore_ascii_case(b"yes"))),
        start: Start::Flag("--cluster-allow-replica-migration"),
        refuse: None,
        default: |_| yes_no(amalgam_cluster::options::ALLOW_REPLICA_MIGRATION_DEFAULT),
    });
    for name in [CLUSTER_ALIASES[1].0, CLUSTER_ALIASES[1].1] {
        r.push(Setting {
            name,
            kind: Kind::Bool,
            get: |s, _| yes_no(s.cluster.replica_no_failover()),
            set: Some(|s, _, v| s.cluster.set_replica_no_failover(v.eq_ignore_ascii_case(b"yes"))),
            start: Start::Flag("--cluster-replica-no-failover"),
            refuse: None,
            default: |_| yes_no(amalgam_cluster::options::REPLICA_NO_FAILOVER_DEFAULT),
        });
    }
    // How long a script runs before it is busy (resp/script.rs,
    // amalgam-script busy.rs); lua-time-limit is Redis 7's alias.
    for name in ["busy-reply-threshold", "lua-time-limit"] {
        r.push(Setting {
            name,
            kind: Kind::Int(0, i64::MAX),
            get: |s, _| s.scripts.runs.threshold_ms().to_string(),
            set: Some(|s, _, v| s.scripts.runs.set_threshold_ms(int(v) as u64)),
            start: Start::RunTime,
            refuse: None,
            default: |_| amalgam_script::busy::BUSY_REPLY_THRESHOLD_MS_DEFAULT.to_string(),
        });
    }
    // The collection thresholds (amalgam-commands typed.rs): Redis 7's names and their
    // legacy aliases, which CONFIG GET lists too.
    for (name, alias) in LiveThresholds::NAMES {
        for n in if alias == name { vec![name] } else { vec![name, alias] } {
            r.push(Setting {
                name: n,
                kind: kind_of_threshold(n),
                get: thresholds_get,
                set: Some(thresholds_set),
                start: Start::RunTime,
                refuse: None,
                default: thresholds_default,
            });
        }
    }
    // Redis's settings that change nothing here (accepted.rs).
    r.extend(crate::accepted::rows());
    r
}

/// The cluster options with a `slave` alias (Redis 7.0's), (name,
/// alias): both rows exist; CONFIG REWRITE writes the name.
pub const CLUSTER_ALIASES: [(&str, &str); 2] = [
    ("cluster-replica-validity-factor", "cluster-slave-validity-factor"),
    ("cluster-replica-no-failover", "cluster-slave-no-failover"),
];

/// TLS's file settings, which CONFIG SET reloads together (tls.rs).
pub const TLS_FILES: [&str; 3] = ["tls-cert-file", "tls-key-file", "tls-ca-cert-file"];

/// CONFIG GET tls-cert-file and friends: the file in use ("" without TLS).
fn tls_file(s: &Shared, name: &'static str) -> String {
    let Some(files) = s.tls.as_ref().map(|t| t.files()) else { return String::new() };
    let path = match name {
        "tls-cert-file" => Some(files.cert),
        "tls-key-file" => Some(files.key),
        _ => files.ca,
    };
    path.map(|p| p.display().to_string()).unwrap_or_default()
}

/// Without TLS there is nothing to reload: a file cannot be set then.
fn tls_off(s: &Shared, v: &[u8]) -> Option<String> {
    (s.tls.is_none() && !v.is_empty()).then(|| "can't set immutable config".into())
}

/// Every setting, in CONFIG GET's order.
pub fn all() -> &'static [Setting] {
    static ROWS: OnceLock<Vec<Setting>> = OnceLock::new();
    ROWS.get_or_init(rows)
}

/// The setting named `name` (case-insensitive).
pub fn find(name: &[u8]) -> Option<&'static Setting> {
    all().iter().find(|s| name.eq_ignore_ascii_case(s.name.as_bytes()))
}

/// Checks `v` against `kind`, Err with the text Redis puts after "- " in
/// CONFIG SET's error (and under the line in the config file's).
pub fn check(kind: Kind, v: &[u8]) -> Result<(), String> {
    match kind {
        Kind::Int(min, max) => {
            let n = crate::resp::int_arg(v).ok_or("argument couldn't be parsed into an integer")?;
            if n < min || n > max {
                return Err(format!("argument must be between {min} and {max} inclusive"));
            }
        }
        Kind::Memory => {
            crate::config::memory_value(v).ok_or("argument must be a memory value")?;
        }
        Kind::BulkLen => {
            crate::config::check_proto_max_bulk_len(v)?;
        }
        Kind::Bool => {
            if !v.eq_ignore_ascii_case(b"yes") && !v.eq_ignore_ascii_case(b"no") {
                return Err("argument must be 'yes' or 'no'".into());
            }
        }
        Kind::Enum(names) => {
            if !names.iter().any(|n| v.eq_ignore_ascii_case(n.as_bytes())) {
                return Err(format!("argument(s) must be one of the following: {}", names.join(", ")));
            }
        }
        Kind::Save => {
            parse_save(&text(v)).ok_or("Invalid save parameters")?;
        }
        Kind::OutputLimits => {
            amalgam_net::obuf::parse(v)?;
        }
        Kind::Text | Kind::Immutable => {}
    }
    Ok(())
}

/// True if `v` (checked) means the value `current` (CONFIG GET's text):
/// `1mb` is 1048576, `YES` is yes.
pub fn same(kind: Kind, v: &[u8], current: &str) -> bool {
    match kind {
        Kind::Int(..) => crate::resp::int_arg(v).is_some_and(|n| current.parse() == Ok(n)),
        Kind::Memory | Kind::BulkLen => crate::config::memory_value(v).is_some_and(|n| current.parse() == Ok(n)),
        Kind::Bool | Kind::Enum(_) => v.eq_ignore_ascii_case(current.as_bytes()),
        Kind::Save => parse_save(&text(v)).is_some_and(|s| parse_save(current) == Some(s)),
        Kind::OutputLimits | Kind::Text | Kind::Immutable => v == current.as_bytes(),
    }
}

/// Applies the run-time settings the config file or the command line gave
/// (`Args::runtime_settings`, checked when they were read).
pub fn apply_start(shared: &Shared) {
    for (name, value) in &shared.args.runtime_settings {
        if let Some(s) = find(name.as_bytes()) {
            if let Some(set) = s.set {
                set(shared, s.name, value.as_bytes());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_once_and_lower_case() {
        let names: Vec<&str> = all().iter().map(|s| s.name).collect();
        for (i, n) in names.iter().enumerate() {
            assert_eq!(n.to_ascii_lowercase(), *n);
            assert!(!names[..i].contains(n), "{n} twice");
        }
        // A run-time setting started by no flag must be settable.
        for s in all() {
            if matches!(s.start, Start::RunTime) {
                assert!(s.set.is_some(), "{}", s.name);
            }
        }
    }

    #[test]
    fn file_values_become_flags() {
        assert_eq!(maxmemory_flag("100mb"), Ok(vec!["-m".into(), "100".into()]));
        assert_eq!(maxmemory_flag("1000000"), Ok(vec!["-m".into(), "1".into()]));
        assert_eq!(maxmemory_flag("0"), Ok(vec![]));
        assert_eq!(bind_flag("127.0.0.1 -::1"), Ok(vec!["-l".into(), "127.0.0.1".into()]));
        assert_eq!(save_flag("").unwrap().join(" "), "--snapshot-every 0 --snapshot-after-writes 0");
        // Redis's default: hourly if anything changed, after 100 changes.
        assert_eq!(parse_save("3600 1 300 100 60 10000"), Some((3600, 100)));
        assert_eq!(parse_save(&format_save((300, 1_000_000))), Some((300, 1_000_000)));
        assert_eq!(parse_save(&format_save((0, 1))), Some((0, 2)));
        assert_eq!(format_save((0, 0)), "");
        for bad in ["3600", "0 100", "-1 1", "abc 1"] {
            assert_eq!(parse_save(bad), None, "{bad}");
        }
    }
}
