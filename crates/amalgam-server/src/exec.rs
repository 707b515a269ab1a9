//! Executes parsed text-protocol requests on the engine and composes the
//! replies: the one small adapter between protocol and storage (Pelikan's
//! shape). Runs of GETs — the keys of a multi-get and of pipelined gets —
//! go through the engine's batched lookup (MICA §5.3).

use crate::stats::{bump, WorkerStats};
use crate::Shared;
use amalgam_engine::{Error, Expiry, Store};
use amalgam_protocol::compose::{push_line, push_stat, push_u64, push_value};
use amalgam_protocol::text::{reply, Keys, Request, StoreOp};
use std::sync::atomic::Ordering;

/// What the connection does after a request.
#[derive(Debug, PartialEq, Eq)]
pub enum After {
    Continue,
    Close,
}

/// The server's version line. memcached clients parse the leading
/// `major.minor.patch`; the suffix names what they talk to.
pub const VERSION_LINE: &str = concat!("VERSION 1.6.0-amalgam-", env!("CARGO_PKG_VERSION"));

/// Executes a run of plain get/gets requests as one engine batch,
/// appending each request's VALUE lines and END in order. Every request
/// has at least one key (the parser answers `ERROR` otherwise).
pub fn run_gets(store: &Store, stats: &WorkerStats, gets: &[(Keys<'_>, bool)], out: &mut Vec<u8>) {
    let mut keys: Vec<&[u8]> = Vec::new();
    let mut owner: Vec<usize> = Vec::new();
    for (r, (k, _)) in gets.iter().enumerate() {
        for key in k.iter() {
            keys.push(key);
            owner.push(r);
        }
    }
    let mut ended = 0;
    let mut hits = 0u64;
    store.get_batch(&keys, |i, item| {
        let r = owner[i];
        while ended < r {
            out.extend_from_slice(b"END\r\n");
            ended += 1;
        }
        if let Some(it) = item {
            hits += 1;
            push_value(out, it.key(), it.flags(), it.value(), gets[r].1.then(|| it.cas()));
        }
    });
    while ended < gets.len() {
        out.extend_from_slice(b"END\r\n");
        ended += 1;
    }
    let n = keys.len() as u64;
    bump(&stats.cmd_get, n);
    bump(&stats.get_hits, hits);
    bump(&stats.get_misses, n - hits);
}

/// Storage commands of a run prefetched at once: the engine's batch
/// window.
const PREFETCH_STORES_MAX: usize = amalgam_engine::BATCH_WINDOW_KEYS;

/// Executes a run of pipelined storage commands (set, add, replace,
/// append, prepend, cas) in order, after prefetching the index lines
/// their writes will touch (`Store::prefetch_writes`, MICA §5.3 on the
/// write path), and empties the run. None of them closes the connection.
pub fn run_stores(shared: &Shared, stats: &WorkerStats, stores: &mut Vec<Request<'_>>, out: &mut Vec<u8>) {
    let mut keys = [&[][..]; PREFETCH_STORES_MAX];
    for chunk in stores.chunks(PREFETCH_STORES_MAX) {
        if stores.len() > 1 {
            for (k, req) in keys.iter_mut().zip(chunk) {
                if let Request::Store { key, .. } = req {
                    *k = key;
                }
            }
            shared.store.prefetch_writes(&keys[..chunk.len()]);
        }
        for &req in chunk {
            let after = run_one(shared, stats, req, out);
            debug_assert!(after == After::Continue, "a storage command does not close the connection");
        }
    }
    stores.clear();
}

/// memcached's `realtime()` for a relative-or-absolute exptime.
fn expiry(store: &Store, exptime: i64) -> Expiry {
    Expiry::from_memcached(exptime, store.now())
}

/// Executes one request that is not a plain get.
pub fn run_one(shared: &Shared, stats: &WorkerStats, req: Request<'_>, out: &mut Vec<u8>) -> After {
    let store = &shared.store;
    let mut reply_line = |line: &str, noreply: bool| {
        if !noreply {
            push_line(out, line);
        }
    };
    match req {
        Request::Get { keys, cas, touch: Some(exptime) } => {
            let e = expiry(store, exptime);
            // memcached counts gat/gats keys as touches only, not as gets.
            for key in keys.iter() {
                bump(&stats.cmd_touch, 1);
                let hit = store.touch_and_get(key, e, |it| {
                    push_value(out, it.key(), it.flags(), it.value(), cas.then(|| it.cas()))
                });
                match hit {
                    Some(Ok(())) => bump(&stats.touch_hits, 1),
                    _ => bump(&stats.touch_misses, 1),
                }
            }
            out.extend_from_slice(b"END\r\n");
        }
        Request::Get { keys, cas, touch: None } => {
            run_gets(store, stats, &[(keys, cas)], out);
        }
        Request::Store { op, key, flags, exptime, cas_unique, data, noreply } => {
            bump(&stats.cmd_set, 1);
            let e = expiry(store, exptime);
            let r = match op {
                StoreOp::Set => store.set(key, data, flags, e),
                StoreOp::Add => store.add(key, data, flags, e),
                StoreOp::Replace => store.replace(key, data, flags, e),
                StoreOp::Append => store.append(key, data),
                StoreOp::Prepend => store.prepend(key, data),
                StoreOp::Cas => store.cas(key, data, flags, e, cas_unique),
            };
            if op == StoreOp::Cas {
                match r {
                    Ok(_) => bump(&stats.cas_hits, 1),
                    Err(Error::NotFound) => bump(&stats.cas_misses, 1),
                    Err(Error::Exists) => bump(&stats.cas_badval, 1),
                    Err(_) => {}
                }
            }
            let line = match r {
                Ok(_) => {
                    bump(&stats.total_items, 1);
                    "STORED"
                }
                Err(Error::NotStored) => "NOT_STORED",
                Err(Error::Exists) => "EXISTS",
                Err(Error::NotFound) => "NOT_FOUND",
                // A too-large append/prepend result is refused as memcached
                // refuses it: its allocation fails inside the store step.
                Err(Error::TooLarge) if matches!(op, StoreOp::Append | StoreOp::Prepend) => "NOT_STORED",
                Err(e @ (Error::TooLarge | Error::OutOfMemory)) => {
                    // memcached drops the old value of a SET it could not
                    // store, so no stale data outlives a failed update.
                    if op == StoreOp::Set {
                        let _ = store.delete(key);
                    }
                    if e == Error::TooLarge {
                        reply::TOO_LARGE
                    } else {
                        reply::OUT_OF_MEMORY
                    }
                }
                Err(Error::BadKey) => reply::BAD_FORMAT,
                Err(Error::NonNumeric) => reply::NON_NUMERIC,
            };
            reply_line(line, noreply);
        }
        Request::Delete { key, noreply } => match store.delete(key) {
            Ok(()) => {
                bump(&stats.delete_hits, 1);
                reply_line("DELETED", noreply);
            }
            Err(_) => {
                bump(&stats.delete_misses, 1);
                reply_line("NOT_FOUND", noreply);
            }
        },
        Request::Arith { incr, key, delta, noreply } => {
            let r = if incr { store.incr(key, delta) } else { store.decr(key, delta) };
            let (hits, misses) =
                if incr { (&stats.incr_hits, &stats.incr_misses) } else { (&stats.decr_hits, &stats.decr_misses) };
            match r {
                Ok(v) => {
                    bump(hits, 1);
                    if !noreply {
                        push_u64(out, v);
                        out.extend_from_slice(b"\r\n");
                    }
                }
                Err(Error::NotFound) => {
                    bump(misses, 1);
                    reply_line("NOT_FOUND", noreply);
                }
                Err(Error::NonNumeric) => reply_line(reply::NON_NUMERIC, noreply),
                Err(_) => reply_line("SERVER_ERROR out of memory", noreply),
            }
        }
        Request::Touch { key, exptime, noreply } => {
            bump(&stats.cmd_touch, 1);
            match store.touch(key, expiry(store, exptime)) {
                Ok(()) => {
                    bump(&stats.touch_hits, 1);
                    reply_line("TOUCHED", noreply);
                }
                Err(_) => {
                    bump(&stats.touch_misses, 1);
                    reply_line("NOT_FOUND", noreply);
                }
            }
        }
        Request::FlushAll { delay, noreply } => {
            bump(&stats.cmd_flush, 1);
            // memcached sets oldest_live = realtime(delay) - 1: a delayed
            // flush takes effect a second before its delay is up, so
            // `flush_all 1` is immediate.
            match expiry(store, delay) {
                Expiry::At(t) if delay > 0 => store.flush_all_at(t - 1),
                _ => store.flush_all(),
            }
            reply_line("OK", noreply);
        }
        Request::Version => push_line(out, VERSION_LINE),
        Request::Verbosity { noreply } => reply_line("OK", noreply),
        Request::Quit => return After::Close,
        Request::Stats { args } => stats_command(shared, args, out),
        Request::Meta { cmd, line, data } => return crate::meta::run(shared, stats, cmd, line, data, out),
    }
    After::Continue
}

pub(crate) fn stats_command(shared: &Shared, args: Keys<'_>, out: &mut Vec<u8>) {
    let mut it = args.iter();
    match it.next() {
        None => general_stats(shared, out),
        Some(b"settings") => settings_stats(shared, out),
        Some(b"reset") => {
            for w in shared.workers.iter() {
                w.reset();
            }
            shared.rejected_connections.store(0, Ordering::Relaxed);
            push_line(out, "RESET");
            return;
        }
        Some(_) => {
            push_line(out, reply::ERROR);
            return;
        }
    }
    out.extend_from_slice(b"END\r\n");
}

fn general_stats(shared: &Shared, out: &mut Vec<u8>) {
    let mut t = crate::stats::Totals::default();
    for w in shared.workers.iter() {
        w.add_to(&mut t);
    }
    let engine = shared.store.stats();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let (user, system) = rusage();
    push_stat(out, "pid", std::process::id());
    push_stat(out, "uptime", shared.started.elapsed().as_secs());
    push_stat(out, "time", now);
    push_stat(out, "version", &VERSION_LINE["VERSION ".len()..]);
    push_stat(out, "pointer_size", usize::BITS);
    push_stat(out, "rusage_user", format_args!("{:.6}", user));
    push_stat(out, "rusage_system", format_args!("{:.6}", system));
    push_stat(out, "max_connections", shared.conn_limit);
    push_stat(out, "curr_connections", shared.curr_connections.load(Ordering::Relaxed));
    push_stat(out, "total_connections", t.total_connections);
    push_stat(out, "rejected_connections", shared.rejected_connections.load(Ordering::Relaxed));
    push_stat(out, "cmd_get", t.cmd_get);
    push_stat(out, "cmd_set", t.cmd_set);
    push_stat(out, "cmd_flush", t.cmd_flush);
    push_stat(out, "cmd_touch", t.cmd_touch);
    push_stat(out, "get_hits", t.get_hits);
    push_stat(out, "get_misses", t.get_misses);
    push_stat(out, "get_expired", t.get_expired);
    push_stat(out, "get_flushed", t.get_flushed);
    push_stat(out, "delete_misses", t.delete_misses);
    push_stat(out, "delete_hits", t.delete_hits);
    push_stat(out, "incr_misses", t.incr_misses);
    push_stat(out, "incr_hits", t.incr_hits);
    push_stat(out, "decr_misses", t.decr_misses);
    push_stat(out, "decr_hits", t.decr_hits);
    push_stat(out, "cas_misses", t.cas_misses);
    push_stat(out, "cas_hits", t.cas_hits);
    push_stat(out, "cas_badval", t.cas_badval);
    push_stat(out, "touch_hits", t.touch_hits);
    push_stat(out, "touch_misses", t.touch_misses);
    push_stat(out, "bytes_read", t.bytes_read);
    push_stat(out, "bytes_written", t.bytes_written);
    push_stat(out, "limit_maxbytes", engine.memory_limit_bytes);
    push_stat(out, "threads", shared.workers.len());
    push_stat(out, "bytes", engine.item_bytes);
    push_stat(out, "curr_items", engine.items);
    push_stat(out, "total_items", t.total_items);
    push_stat(out, "expired_unfetched", engine.expired_unfetched);
    push_stat(out, "evicted_unfetched", engine.evicted_unfetched);
    push_stat(out, "evictions", engine.evictions);
    // memcached's LRU crawler counts what it reclaims here; the engine's
    // background expiry sweep is the crawler's counterpart.
    push_stat(out, "crawler_reclaimed", engine.swept_items);
    push_stat(out, "hash_buckets", engine.buckets);
    push_stat(out, "hash_overflow_nodes", engine.overflow_nodes);
    push_stat(out, "hash_bytes", engine.index_bytes);
    push_stat(out, "hash_is_expanding", u8::from(engine.expanding));
    push_stat(out, "hash_expansions", engine.expansions);
    if engine.segments > 0 {
        // Cache mode's memory account (engine `segment.rs`): the budget
        // less the index is what segments may use; S3-FIFO's ghost comes
        // on top of the budget (eviction_policy_bytes).
        push_stat(out, "segment_size", engine.segment_bytes);
        push_stat(out, "segments_total", engine.segments);
        push_stat(out, "segments_limit", engine.segment_limit);
        push_stat(out, "segments_free", engine.free_segments);
        push_stat(out, "segments_resident_bytes", engine.reserved_bytes);
        push_stat(out, "eviction_policy_bytes", engine.policy_bytes);
    }
}

fn settings_stats(shared: &Shared, out: &mut Vec<u8>) {
    let a = &shared.args;
    push_stat(out, "maxbytes", a.memory_limit_mb << 20);
    push_stat(out, "maxconns", a.conn_limit);
    push_stat(out, "tcpport", a.port);
    push_stat(out, "udpport", a.udp_port);
    push_stat(out, "inter", &a.listen);
    push_stat(out, "verbosity", a.verbose);
    push_stat(out, "num_threads", shared.workers.len());
    push_stat(out, "cas_enabled", "yes");
    push_stat(out, "item_size_max", a.max_item_size);
    push_stat(out, "evictions", if a.eviction == amalgam_engine::evict::Eviction::None { "off" } else { "on" });
    push_stat(out, "eviction_policy", a.eviction);
    let merging = a.merge_segments && a.eviction != amalgam_engine::evict::Eviction::None;
    push_stat(out, "merge_segments", if merging { "yes" } else { "no" });
    push_stat(out, "flush_enabled", "yes");
}

/// User and system CPU seconds of this process.
fn rusage() -> (f64, f64) {
    // /proc/self/stat fields 14 and 15 are utime and stime in clock ticks.
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = 100.0; // USER_HZ on Linux
    let get = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) / ticks;
    (get(11), get(12))
}
