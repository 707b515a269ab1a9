//! memcached's operator commands: the `stats` groups, `lru_crawler
//! metadump`, `shutdown` and `verbosity`: what `memcached-tool`, cache
//! warmers and operators touch first. Each stats group's text is composed
//! by one function (`*_stats`) so another protocol front end can reuse it.
//!
//! # Slab classes on an engine without slabs
//! memcached sorts items into slab classes by size: class 1 holds items up
//! to 96 bytes, each next class 1.25 times larger (8-byte aligned), the
//! last one 512 KiB (`-f 1.25 -n 48`, its defaults). Amalgam has no slabs
//! (items live in segments or pool chunks of the engine), so `stats items`,
//! `stats slabs` and `lru_crawler metadump` report the classes memcached
//! would put the same items in: an item's class is the smallest whose chunk
//! holds its size counted as memcached counts it (`memcached_item_bytes`:
//! its 48-byte header, key and NUL, value and CRLF, the CAS unless `-C`,
//! and 4 bytes of client flags when they are not 0). What is real:
//! `number` (items in the band), `mem_requested` (their bytes); `stats
//! slabs`' `used_chunks` is `number`, and its pages and chunks are what
//! memcached's 1 MiB pages would need for them, so `free_chunks` is the
//! slack of the last page; `total_malloced` is the engine's real resident
//! item memory. What memcached counts per class and Amalgam does not
//! (hot/warm queues, evictions, reclaims, out-of-memory refusals and hits
//! per class: the engine evicts whole segments, items of every size
//! together, and counts per store) reads 0 under memcached's names, so
//! tools find every field; the store-wide totals are in `stats`.
//!
//! These groups walk the whole keyspace with the engine's scan cursor
//! (`Store::scan`): one step per bucket, a full walk per command (bounded
//! by the table's size, as memcached's own `stats sizes` walks). The worker
//! that runs one serves nothing else meanwhile: they are operator
//! commands, not something to poll every second on a large cache.
//!
//! `lru_crawler metadump` streams instead: it walks a bucket step at a
//! time while the connection's output stays under its high-water mark
//! (`worker.rs`), so a dump of any size takes bounded memory.

use crate::Shared;
use amalgam_engine::{ItemRef, Store};
use amalgam_memcache::exec::{After, VERSION_LINE};
use amalgam_memcache::slabs::{class_of, uri_encode};
use amalgam_memcache::slabs::{memcached_item_bytes, slab_chunk_sizes, SLAB_CHUNK_BYTES_MAX, SLAB_PAGE_BYTES};
use amalgam_protocol::compose::{push_line, push_stat};
use amalgam_protocol::text::{reply, Keys};
use std::fmt::Write as _;
use std::sync::atomic::Ordering;

/// `stats sizes` buckets are this wide (memcached's 32).
const SIZES_BUCKET_BYTES: usize = 32;
/// `verbosity` above this is stored as this (memcached's
/// `MAX_VERBOSITY_LEVEL`).
pub const VERBOSITY_MAX: u32 = 2;

/// One band's count and bytes.
#[derive(Clone, Copy, Default)]
struct Band {
    items: u64,
    bytes: u64,
    /// The oldest store time (unix seconds) among them.
    oldest: Option<u64>,
}

/// Walks every live item once (the engine's scan cursor: one bucket per
/// step, the whole table bounds the walk).
fn walk(store: &Store, mut f: impl FnMut(ItemRef<'_>)) {
    let mut cursor = 0;
    loop {
        cursor = store.scan(cursor, &mut f);
        if cursor == 0 {
            break;
        }
    }
}

/// The per-class bands of the whole keyspace.
fn bands(shared: &Shared, chunks: &[usize]) -> Vec<Band> {
    let cas = shared.cas_enabled();
    let mut bands = vec![Band::default(); chunks.len()];
    walk(&shared.store, |it| {
        let bytes = memcached_item_bytes(it.key().len(), it.value().len(), it.flags(), cas);
        let b = &mut bands[class_of(chunks, bytes) - 1];
        b.items += 1;
        b.bytes += bytes as u64;
        let la = u64::from(shared.store.stored_at(it.cas()));
        b.oldest = Some(b.oldest.map_or(la, |o| o.min(la)));
    });
    bands
}

/// `stats <group>`: answers the group, `RESET` for `reset`, `ERROR` for
/// an unknown group.
pub fn stats_command(shared: &Shared, args: Keys<'_>, out: &mut Vec<u8>) {
    let mut it = args.iter();
    match it.next() {
        None => general_stats(shared, out),
        Some(b"settings") => settings_stats(shared, out),
        Some(b"items") => items_stats(shared, out),
        Some(b"slabs") => slabs_stats(shared, out),
        Some(b"sizes") => sizes_stats(shared, out),
        Some(b"conns") => conns_stats(shared, out),
        Some(b"detail") => {
            // Its replies are whole (OK, the usage line, or the dump and END).
            shared.mc_operator.detail_command(it.next(), out, |on| shared.set_stats_detail(on));
            return;
        }
        Some(b"reset") => {
            for w in shared.workers.iter() {
                w.reset();
            }
            shared.rejected_connections.store(0, Ordering::Relaxed);
            shared.mc_operator.clear();
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

/// `stats`' `version`.
pub(crate) fn version() -> &'static str {
    &VERSION_LINE["VERSION ".len()..]
}

/// `stats`' `bytes`: memcached counts each item at ITEM_ntotal (header,
/// key and NUL, value and CRLF, CAS): the engine's key and value bytes
/// plus the rest per item. memcached's 4 bytes of non-zero client flags
/// are not counted (the engine keeps no count of such items).
pub(crate) fn bytes_stat(shared: &Shared, engine: &amalgam_engine::Stats) -> u64 {
    let per_item = memcached_item_bytes(0, 0, 0, shared.cas_enabled()) as u64;
    engine.item_bytes.saturating_add(engine.items.saturating_mul(per_item))
}

/// `stats`: the general group (without its END): memcached 1.6.18's 83
/// fields in its order, then Amalgam's own (the index and the segments).
/// A field for machinery Amalgam does not have (libevent, response
/// objects, read buffers, the listen-disable dance, slab rebalancing, the
/// LRU maintainer and its queues, the logger's worker buffers, NAPI ids)
/// reads 0; docs/memcached-ops.md § stats lists which.
pub fn general_stats(shared: &Shared, out: &mut Vec<u8>) {
    let mut t = crate::stats::Totals::default();
    for w in shared.workers.iter() {
        w.add_to(&mut t);
    }
    let engine = shared.store.stats();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let (user, system) = rusage();
    let curr_connections = shared.curr_connections.load(Ordering::Relaxed);
    let watch = shared.mc_operator.watchers.stats();
    push_stat(out, "pid", std::process::id());
    push_stat(out, "uptime", shared.started.elapsed().as_secs());
    push_stat(out, "time", now);
    push_stat(out, "version", version());
    push_stat(out, "libevent", 0);
    push_stat(out, "pointer_size", usize::BITS);
    push_stat(out, "rusage_user", format_args!("{:.6}", user));
    push_stat(out, "rusage_system", format_args!("{:.6}", system));
    push_stat(out, "max_connections", shared.conn_limit);
    push_stat(out, "curr_connections", curr_connections);
    push_stat(out, "total_connections", t.total_connections);
    push_stat(out, "rejected_connections", shared.rejected_connections.load(Ordering::Relaxed));
    // memcached's connection structures: one per open connection here.
    push_stat(out, "connection_structures", curr_connections);
    for zero in [
        "response_obj_oom",
        "response_obj_count",
        "response_obj_bytes",
        "read_buf_count",
        "read_buf_bytes",
        "read_buf_bytes_free",
        "read_buf_oom",
        "reserved_fds",
    ] {
        push_stat(out, zero, 0);
    }
    push_stat(out, "cmd_get", t.cmd_get);
    push_stat(out, "cmd_set", t.cmd_set);
    push_stat(out, "cmd_flush", t.cmd_flush);
    push_stat(out, "cmd_touch", t.cmd_touch);
    push_stat(out, "cmd_meta", t.cmd_meta);
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
    push_stat(out, "store_too_large", t.store_too_large);
    push_stat(out, "store_no_memory", t.store_no_memory);
    // memcached's -Y authentication `set`s, and those refused (authfile.rs).
    push_stat(out, "auth_cmds", t.auth_cmds);
    push_stat(out, "auth_errors", t.auth_errors);
    // Network bytes, as memcached: what the sockets read and wrote.
    push_stat(out, "bytes_read", t.bytes_read);
    push_stat(out, "bytes_written", t.bytes_written);
    push_stat(out, "limit_maxbytes", engine.memory_limit_bytes);
    push_stat(out, "accepting_conns", 1);
    push_stat(out, "listen_disabled_num", 0);
    push_stat(out, "time_in_listen_disabled_us", 0);
    push_stat(out, "threads", shared.workers.len());
    push_stat(out, "conn_yields", 0);
    push_stat(out, "hash_power_level", engine.buckets.max(1).ilog2());
    push_stat(out, "hash_bytes", engine.index_bytes);
    push_stat(out, "hash_is_expanding", u8::from(engine.expanding));
    for zero in [
        "slab_reassign_rescues",
        "slab_reassign_chunk_rescues",
        "slab_reassign_evictions_nomem",
        "slab_reassign_inline_reclaim",
        "slab_reassign_busy_items",
        "slab_reassign_busy_deletes",
        "slab_reassign_running",
        "slabs_moved",
        "lru_crawler_running",
        "lru_crawler_starts",
        "lru_maintainer_juggles",
        "malloc_fails",
        "log_worker_dropped",
    ] {
        push_stat(out, zero, 0);
    }
    push_stat(out, "log_worker_written", watch.written);
    push_stat(out, "log_watcher_skipped", watch.skipped);
    push_stat(out, "log_watcher_sent", watch.sent);
    push_stat(out, "log_watchers", watch.watchers);
    push_stat(out, "unexpected_napi_ids", 0);
    push_stat(out, "round_robin_fallback", 0);
    push_stat(out, "bytes", bytes_stat(shared, &engine));
    push_stat(out, "curr_items", engine.items);
    push_stat(out, "total_items", t.total_items);
    push_stat(out, "slab_global_page_pool", 0);
    push_stat(out, "expired_unfetched", engine.expired_unfetched);
    push_stat(out, "evicted_unfetched", engine.evicted_unfetched);
    push_stat(out, "evicted_active", 0);
    push_stat(out, "evictions", engine.evictions);
    push_stat(out, "reclaimed", 0);
    // memcached's LRU crawler counts what it reclaims here; the engine's
    // background expiry sweep is the crawler's counterpart.
    push_stat(out, "crawler_reclaimed", engine.swept_items);
    for zero in [
        "crawler_items_checked",
        "lrutail_reflocked",
        "moves_to_cold",
        "moves_to_warm",
        "moves_within_lru",
        "direct_reclaims",
        "lru_bumps_dropped",
    ] {
        push_stat(out, zero, 0);
    }
    // Amalgam's own, after memcached's.
    push_stat(out, "hash_buckets", engine.buckets);
    push_stat(out, "hash_overflow_nodes", engine.overflow_nodes);
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
        // Items larger than a segment, and large values being received
        // (engine `outsized.rs`, `prepared.rs`): charged to -m.
        push_stat(out, "outsized_bytes", engine.outsized_bytes);
    }
}

/// `stats settings` (without its END): memcached 1.6.18's names in its
/// order (its extstore and TLS tuning included: what Amalgam has no knob
/// for shows memcached's default), then Amalgam's own.
pub fn settings_stats(shared: &Shared, out: &mut Vec<u8>) {
    let a = &shared.args;
    let yes_no = |b: bool| if b { "yes" } else { "no" };
    let lru = shared.mc_operator.tunables();
    let tls = a.tls_settings().ok().flatten().filter(|s| s.memcached.is_some());
    let path = |p: Option<&std::path::Path>| p.map_or("NULL".to_string(), |p| p.display().to_string());
    push_stat(out, "maxbytes", a.memory_limit_mb << 20);
    push_stat(out, "maxconns", a.conn_limit);
    push_stat(out, "tcpport", a.port);
    push_stat(out, "udpport", a.udp_port);
    push_stat(out, "inter", &a.listen);
    push_stat(out, "verbosity", shared.verbosity.load(Ordering::Relaxed));
    push_stat(out, "oldest", 0);
    push_stat(out, "evictions", if a.eviction == amalgam_engine::evict::Eviction::None { "off" } else { "on" });
    push_stat(out, "domain_socket", path(a.unix_socket.as_deref()));
    push_stat(out, "umask", &a.unix_mask);
    push_stat(out, "shutdown_command", yes_no(a.enable_shutdown));
    push_stat(out, "growth_factor", format_args!("{:.2}", a.ignored_growth_factor.unwrap_or(1.25)));
    push_stat(out, "chunk_size", a.ignored_slab_min_size.unwrap_or(48));
    push_stat(out, "num_threads", shared.workers.len());
    push_stat(out, "num_threads_per_udp", shared.workers.len());
    push_stat(out, "stat_key_prefix", char::from(shared.mc_operator.delimiter));
    push_stat(
        out,
        "detail_enabled",
        yes_no(shared.workers.first().is_some_and(|w| w.ops.stats_detail.load(Ordering::Relaxed))),
    );
    push_stat(out, "reqs_per_event", a.ignored_reqs_per_event.unwrap_or(20));
    push_stat(out, "cas_enabled", yes_no(shared.cas_enabled()));
    push_stat(out, "tcp_backlog", a.ignored_backlog.unwrap_or(1024));
    push_stat(out, "binding_protocol", a.binding_protocol().unwrap_or_default().name());
    push_stat(out, "auth_enabled_sasl", "no");
    push_stat(out, "auth_enabled_ascii", a.auth_file.as_deref().map_or("no".to_string(), |p| p.display().to_string()));
    push_stat(out, "item_size_max", a.max_item_size);
    push_stat(out, "maxconns_fast", "yes");
    push_stat(out, "hashpower_init", 0);
    push_stat(out, "slab_reassign", "yes");
    push_stat(out, "slab_automove", lru.slab_automove);
    push_stat(out, "slab_automove_ratio", format_args!("{:.2}", lru.slab_automove_ratio));
    push_stat(out, "slab_automove_window", 30);
    push_stat(out, "slab_chunk_max", SLAB_CHUNK_BYTES_MAX);
    push_stat(out, "lru_crawler", "yes");
    push_stat(out, "lru_crawler_sleep", 100);
    push_stat(out, "lru_crawler_tocrawl", 0);
    push_stat(out, "tail_repair_time", 0);
    push_stat(out, "flush_enabled", yes_no(!a.disable_flush_all));
    push_stat(out, "dump_enabled", yes_no(!a.disable_dumping));
    // The engine's hash (foldhash), where memcached names its own.
    push_stat(out, "hash_algorithm", "foldhash");
    push_stat(out, "lru_maintainer_thread", "yes");
    push_stat(out, "lru_segmented", yes_no(lru.lru_segmented));
    push_stat(out, "hot_lru_pct", lru.hot_lru_pct);
    push_stat(out, "warm_lru_pct", lru.warm_lru_pct);
    push_stat(out, "hot_max_factor", format_args!("{:.2}", lru.hot_max_factor));
    push_stat(out, "warm_max_factor", format_args!("{:.2}", lru.warm_max_factor));
    push_stat(out, "temp_lru", yes_no(lru.temp_lru));
    push_stat(out, "temporary_ttl", lru.temporary_ttl);
    push_stat(out, "idle_timeout", a.idle_timeout_secs().unwrap_or(0));
    push_stat(out, "watcher_logbuf_size", amalgam_memcache::watch::WATCHER_QUEUE_BYTES_MAX);
    push_stat(out, "worker_logbuf_size", 65536);
    push_stat(out, "read_buf_mem_limit", 0);
    push_stat(out, "track_sizes", yes_no(a.track_sizes()));
    push_stat(out, "inline_ascii_response", "no");
    for (name, value) in [
        ("ext_item_size", "512"),
        ("ext_item_age", "4294967295"),
        ("ext_low_ttl", "0"),
        ("ext_recache_rate", "2000"),
        ("ext_wbuf_size", "4194304"),
        ("ext_compact_under", "0"),
        ("ext_drop_under", "0"),
        ("ext_max_sleep", "1000000"),
        ("ext_max_frag", "0.80"),
        ("slab_automove_freeratio", "0.010"),
        ("ext_drop_unread", "no"),
    ] {
        push_stat(out, name, value);
    }
    push_stat(out, "ssl_enabled", yes_no(tls.is_some()));
    let file = |p: Option<&std::path::Path>| p.map_or("(null)".to_string(), |p| p.display().to_string());
    push_stat(out, "ssl_chain_cert", file(tls.as_ref().map(|t| t.files.cert.as_path())));
    push_stat(out, "ssl_key", file(tls.as_ref().map(|t| t.files.key.as_path())));
    push_stat(out, "ssl_verify_mode", a.ssl_verify_mode.as_deref().unwrap_or("0"));
    push_stat(out, "ssl_keyformat", 1);
    push_stat(out, "ssl_ciphers", "NULL");
    push_stat(out, "ssl_ca_cert", path(tls.as_ref().and_then(|t| t.files.ca.as_deref())));
    push_stat(out, "ssl_wbuf_size", 16384);
    push_stat(out, "ssl_session_cache", "no");
    push_stat(out, "ssl_kernel_tls", "no");
    push_stat(out, "ssl_min_version", "tlsv1.2");
    push_stat(out, "num_napi_ids", a.napi_ids.map_or("(null)".to_string(), |n| n.to_string()));
    push_stat(out, "memory_file", file(a.memory_file.as_deref()));
    // Amalgam's own. The policy in force: CONFIG SET eviction changes it.
    push_stat(out, "eviction_policy", shared.store.eviction());
    let merging = a.merge_segments && a.eviction != amalgam_engine::evict::Eviction::None;
    push_stat(out, "merge_segments", yes_no(merging));
}

/// `stats items` (without its END): per class with items, memcached's
/// fields in its order. Real: `number` (and `number_cold`: one queue),
/// `age` (seconds since the oldest item's store), `mem_requested`. The
/// engine evicts, reclaims and refuses by segment, for items of every
/// size together, and counts that per store (`stats`' `evictions`,
/// `evicted_unfetched`, `expired_unfetched`, `crawler_reclaimed`), not
/// per class: the per-class counters read 0 (module notes).
pub fn items_stats(shared: &Shared, out: &mut Vec<u8>) {
    let chunks = slab_chunk_sizes();
    let now = u64::from(shared.store.now());
    for (i, b) in bands(shared, &chunks).iter().enumerate().filter(|(_, b)| b.items > 0) {
        let class = i + 1;
        let stat = |out: &mut Vec<u8>, name: &str, v: u64| push_stat(out, &format!("items:{class}:{name}"), v);
        stat(out, "number", b.items);
        stat(out, "number_hot", 0);
        stat(out, "number_warm", 0);
        stat(out, "number_cold", b.items);
        stat(out, "age_hot", 0);
        stat(out, "age_warm", 0);
        stat(out, "age", b.oldest.map_or(0, |o| now.saturating_sub(o)));
        stat(out, "mem_requested", b.bytes);
        for zero in ITEMS_CLASS_COUNTERS {
            stat(out, zero, 0);
        }
    }
}

/// memcached's per-class counters after `mem_requested`, in its order
/// (read 0: see [`items_stats`]).
const ITEMS_CLASS_COUNTERS: [&str; 20] = [
    "evicted",
    "evicted_nonzero",
    "evicted_time",
    "outofmemory",
    "tailrepairs",
    "reclaimed",
    "expired_unfetched",
    "evicted_unfetched",
    "evicted_active",
    "crawler_reclaimed",
    "crawler_items_checked",
    "lrutail_reflocked",
    "moves_to_cold",
    "moves_to_warm",
    "moves_within_lru",
    "direct_reclaims",
    "hits_to_hot",
    "hits_to_warm",
    "hits_to_cold",
    "hits_to_temp",
];

/// memcached's per-class command counters in `stats slabs` (Amalgam
/// counts commands per worker, not per class: they read 0).
const SLABS_CLASS_COUNTERS: [&str; 8] =
    ["get_hits", "cmd_set", "delete_hits", "incr_hits", "decr_hits", "cas_hits", "cas_badval", "touch_hits"];

/// `stats slabs` (without its END): per class with items, memcached's
/// page and chunk arithmetic for them (module notes).
pub fn slabs_stats(shared: &Shared, out: &mut Vec<u8>) {
    let chunks = slab_chunk_sizes();
    let mut active = 0;
    for (i, b) in bands(shared, &chunks).iter().enumerate().filter(|(_, b)| b.items > 0) {
        let class = i + 1;
        let per_page = (SLAB_PAGE_BYTES / chunks[i]) as u64;
        let pages = b.items.div_ceil(per_page);
        let total = pages * per_page;
        push_stat(out, &format!("{class}:chunk_size"), chunks[i]);
        push_stat(out, &format!("{class}:chunks_per_page"), per_page);
        push_stat(out, &format!("{class}:total_pages"), pages);
        push_stat(out, &format!("{class}:total_chunks"), total);
        push_stat(out, &format!("{class}:used_chunks"), b.items);
        push_stat(out, &format!("{class}:free_chunks"), total - b.items);
        push_stat(out, &format!("{class}:free_chunks_end"), 0);
        for zero in SLABS_CLASS_COUNTERS {
            push_stat(out, &format!("{class}:{zero}"), 0);
        }
        active += 1;
    }
    push_stat(out, "active_slabs", active);
    push_stat(out, "total_malloced", shared.store.stats().reserved_bytes);
}

/// `stats sizes` (without its END): with `-o track_sizes`, items per
/// 32-byte band of their memcached size, as memcached; otherwise
/// memcached's `sizes_status disabled`.
pub fn sizes_stats(shared: &Shared, out: &mut Vec<u8>) {
    if !shared.args.track_sizes() {
        push_stat(out, "sizes_status", "disabled");
        return;
    }
    let cas = shared.cas_enabled();
    let mut sizes = std::collections::BTreeMap::<usize, u64>::new();
    walk(&shared.store, |it| {
        let bytes = memcached_item_bytes(it.key().len(), it.value().len(), it.flags(), cas);
        *sizes.entry(bytes.div_ceil(SIZES_BUCKET_BYTES) * SIZES_BUCKET_BYTES).or_default() += 1;
    });
    for (size, n) in sizes {
        push_stat(out, &size.to_string(), n);
    }
}

/// `stats conns` (without its END): the listeners, then each open
/// connection, by file descriptor as memcached numbers them. Amalgam keeps
/// no per-connection state name or last-command time (that would be a
/// shared write per request), so only addresses are listed.
pub fn conns_stats(shared: &Shared, out: &mut Vec<u8>) {
    let reg = shared.conns.lock().unwrap_or_else(|e| e.into_inner());
    for (fd, addr) in &reg.listeners {
        push_stat(out, &format!("{fd}:addr"), format_args!("tcp:{addr}"));
        push_stat(out, &format!("{fd}:state"), "conn_listening");
    }
    for (fd, c) in &reg.open {
        push_stat(out, &format!("{fd}:addr"), format_args!("tcp:{}", c.peer));
        push_stat(out, &format!("{fd}:listen_addr"), format_args!("tcp:{}", c.listen));
    }
}

/// `lru_crawler <args>`: `metadump all` (or class numbers, or `hash`:
/// every item either way, since there is one keyspace) starts a dump the
/// worker streams ([`metadump_step`]); anything else is `ERROR` (the
/// crawler's tuning has no counterpart; the background expiry sweep runs
/// on its own).
pub fn lru_crawler(shared: &Shared, args: Keys<'_>, out: &mut Vec<u8>) -> After {
    let mut it = args.iter();
    match (it.next(), it.next()) {
        (Some(b"metadump"), Some(_)) if shared.args.disable_dumping => {
            push_line(out, "ERROR metadump not allowed");
            After::Continue
        }
        (Some(b"metadump"), Some(_)) => After::MetaDump,
        _ => {
            push_line(out, reply::ERROR);
            After::Continue
        }
    }
}

/// Appends a dump's lines from `cursor` until `out` reaches `high_bytes`
/// or the walk ends; returns the next cursor, or None after the final
/// `END`. Each line is memcached's: `key=<uri-encoded> exp=<unix time, -1
/// for never> la=<store time> cas=<cas> fetch=<yes|no> cls=<class>
/// size=<memcached bytes>`, ended by `\n` alone as memcached's crawler
/// ends them (the closing `END` has its `\r\n`).
pub fn metadump_step(shared: &Shared, mut cursor: u64, out: &mut Vec<u8>, high_bytes: usize) -> Option<u64> {
    let chunks = slab_chunk_sizes();
    let cas_enabled = shared.cas_enabled();
    loop {
        cursor = shared.store.scan(cursor, |it| {
            // Collections (engine object.rs) are not memcached items.
            if it.tag() != amalgam_engine::TAG_BYTES {
                return;
            }
            out.extend_from_slice(b"key=");
            uri_encode(it.key(), out);
            // memcached's whole seconds: a RESP millisecond deadline shows
            // as the second it falls in, rounded up (as `mg t` shows it).
            let exp = it.expiry().unix_secs_ceil().map_or(-1, i64::from);
            let bytes = memcached_item_bytes(it.key().len(), it.value().len(), it.flags(), cas_enabled);
            let cas = if cas_enabled { it.cas() } else { 0 };
            // Last access: the item's store time (the engine's write clock,
            // clock.rs; fetches do not move it), and whether it was read.
            let la = shared.store.stored_at(it.cas());
            let fetch = if it.fetched() { "yes" } else { "no" };
            let mut line = String::new();
            let _ = writeln!(
                line,
                " exp={exp} la={la} cas={cas} fetch={fetch} cls={} size={bytes}",
                class_of(&chunks, bytes)
            );
            out.extend_from_slice(line.as_bytes());
        });
        if cursor == 0 {
            out.extend_from_slice(b"END\r\n");
            return None;
        }
        if out.len() >= high_bytes {
            return Some(cursor);
        }
    }
}

/// `shutdown [graceful]`: memcached's replies; with `-A` it closes the
/// connection without a reply and the server stops (both modes stop the
/// way SIGTERM does: every connection closed, the log flushed).
pub fn shutdown(shared: &Shared, args: Keys<'_>, out: &mut Vec<u8>) -> After {
    if !shared.args.enable_shutdown {
        push_line(out, "ERROR: shutdown not enabled");
        return After::Continue;
    }
    let mut it = args.iter();
    match (it.next(), it.next()) {
        (None, _) | (Some(b"graceful"), None) => {
            // The signal thread runs the one shutdown path (main.rs).
            if let Err(e) = signal_hook::low_level::raise(signal_hook::consts::SIGTERM) {
                log::error!("shutdown: cannot signal myself: {e}");
            }
            After::Close
        }
        _ => {
            push_line(out, "CLIENT_ERROR invalid shutdown mode");
            After::Continue
        }
    }
}

/// `watch [classes]`: with `-W` memcached's refusal, an unknown class
/// `ERROR`; otherwise the connection becomes a watcher if the event loop
/// placed it (every connection it serves), else it answers memcached's
/// `WATCHER_FAILED failed to add log watcher` (`amalgam_memcache::watch`).
pub fn watch(shared: &Shared, args: Keys<'_>, out: &mut Vec<u8>) -> After {
    if shared.mc_operator.watch_disabled {
        push_line(out, "CLIENT_ERROR watch commands not allowed");
        return After::Continue;
    }
    match amalgam_memcache::watch::parse_classes(args) {
        None => {
            push_line(out, reply::ERROR);
            After::Continue
        }
        Some(classes) => After::Watch(classes),
    }
}

/// `verbosity <level>`: stored (capped at memcached's 2) for `stats
/// settings`, and made the log level (logging.rs: 1 verbose, 2 debug).
pub fn verbosity(shared: &Shared, level: u32) {
    shared.verbosity.store(level.min(VERBOSITY_MAX), Ordering::Relaxed);
    // And the log level, as -v at start: 0 is Redis's default (notice).
    let name = crate::logging::level_for_verbose(level.min(u32::from(u8::MAX)) as u8);
    crate::logging::set_level(name.and_then(crate::logging::parse_level).unwrap_or(log::LevelFilter::Info));
}

/// User and system CPU seconds of this process.
pub(crate) fn rusage() -> (f64, f64) {
    // /proc/self/stat fields 14 and 15 are utime and stime in clock ticks.
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = 100.0; // USER_HZ on Linux
    let get = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) / ticks;
    (get(11), get(12))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_sizes_are_memcacheds() {
        let c = slab_chunk_sizes();
        assert_eq!(&c[..8], &[96, 120, 152, 192, 240, 304, 384, 480]);
        assert_eq!(c[c.len() - 2..], [394840, 524288]);
        assert_eq!(c.len(), 39);
        // memcached's `me` sizes on the same items: a 1-byte key with a
        // 1-byte value is 61 bytes, class 1; with flags 65.
        assert_eq!(memcached_item_bytes(1, 1, 0, true), 61);
        assert_eq!(memcached_item_bytes(1, 1, 5, true), 65);
        assert_eq!(memcached_item_bytes(1, 1, 0, false), 53);
        assert_eq!(class_of(&c, 61), 1);
        assert_eq!(class_of(&c, 96), 1);
        assert_eq!(class_of(&c, 97), 2);
        assert_eq!(class_of(&c, 160), 4);
        assert_eq!(class_of(&c, 2 << 20), 39);
    }

    #[test]
    fn keys_are_uri_encoded() {
        let mut out = Vec::new();
        uri_encode(b"a b%c~_.-Z9\xff", &mut out);
        assert_eq!(out, b"a%20b%25c~_.-Z9%FF");
    }
}
