//! What memcached's tools read: `stats items`, `stats slabs`, `stats
//! sizes`, `stats conns`, `lru_crawler metadump`, the byte counters of
//! `stats`, and `memcached-tool` itself (display, stats, dump) run against
//! the server. Each expectation is memcached 1.6.18's on the same input:
//! the file runs unchanged against memcached
//! (`AMALGAM_TEST_BIN=/usr/bin/memcached`).

mod common;

use common::*;
use std::collections::BTreeMap;
use std::net::TcpStream;
use std::process::Command;

/// memcached-tool as Debian's memcached package installs it.
const MEMCACHED_TOOL: &str = "/usr/share/memcached/scripts/memcached-tool";

/// Stores a (61 bytes as memcached counts it: 48 + key, NUL, value, CRLF,
/// CAS: class 1), bb (71: class 1) and c with 100 bytes (160: class 4).
fn three_items(c: &mut TcpStream) {
    let hundred = "0123456789".repeat(10);
    let req = format!("set a 0 0 1\r\nx\r\nset bb 0 0 10\r\n0123456789\r\nset c 0 0 100\r\n{hundred}\r\n");
    exchange(c, req.as_bytes(), b"STORED\r\nSTORED\r\nSTORED\r\n");
}

#[test]
fn stats_items_and_slabs_count_by_memcacheds_size_classes() {
    let Some(s) = Server::private() else { return };
    let mut c = s.connect();
    three_items(&mut c);
    let items = stats_map(&mut c, "items");
    assert_eq!(num(&items, "items:1:number"), 2);
    assert_eq!(num(&items, "items:1:mem_requested"), 61 + 71);
    assert_eq!(num(&items, "items:4:number"), 1);
    assert_eq!(num(&items, "items:4:mem_requested"), 160);
    assert!(!items.contains_key("items:2:number"), "an empty class is not listed");
    let slabs = stats_map(&mut c, "slabs");
    for (class, chunk, per_page, used) in [(1, 96, 10922, 2), (4, 192, 5461, 1)] {
        assert_eq!(num(&slabs, &format!("{class}:chunk_size")), chunk);
        assert_eq!(num(&slabs, &format!("{class}:chunks_per_page")), per_page);
        assert_eq!(num(&slabs, &format!("{class}:total_pages")), 1);
        assert_eq!(num(&slabs, &format!("{class}:total_chunks")), per_page);
        assert_eq!(num(&slabs, &format!("{class}:used_chunks")), used);
        assert_eq!(num(&slabs, &format!("{class}:free_chunks")), per_page - used);
    }
    assert_eq!(num(&slabs, "active_slabs"), 2);
    assert!(num(&slabs, "total_malloced") > 0);
}

#[test]
fn stats_sizes_is_off_unless_tracked() {
    let Some(s) = Server::private() else { return };
    let mut c = s.connect();
    exchange(&mut c, b"stats sizes\r\n", b"STAT sizes_status disabled\r\nEND\r\n");
    let Some(s) = Server::with_flags(&["-o", "track_sizes"]) else { return };
    let mut c = s.connect();
    three_items(&mut c);
    // 61 and 71 round up to the 32-byte bands 64 and 96; 160 is one.
    exchange(&mut c, b"stats sizes\r\n", b"STAT 64 1\r\nSTAT 96 1\r\nSTAT 160 1\r\nEND\r\n");
}

#[test]
fn stats_conns_lists_the_listener_and_this_connection() {
    let Some(s) = Server::with_flags(&[]) else { return };
    let mut c = s.connect();
    let here = c.local_addr().unwrap();
    let port = s.addr().port();
    let out = String::from_utf8_lossy(&request(&mut c, b"stats conns\r\n", b"END\r\n")).into_owned();
    let lines: Vec<&str> = out.lines().collect();
    let value =
        |suffix: &str, v: &str| lines.iter().any(|l| l.starts_with("STAT ") && l.ends_with(&format!("{suffix} {v}")));
    assert!(value(":addr", &format!("tcp:127.0.0.1:{port}")), "{out}");
    assert!(value(":state", "conn_listening"), "{out}");
    assert!(value(":addr", &format!("tcp:{here}")), "{out}");
    assert!(value(":listen_addr", &format!("tcp:127.0.0.1:{port}")), "{out}");
    assert_eq!(lines.last(), Some(&"END"));
}

/// `lru_crawler metadump all`'s lines as key -> fields.
fn metadump(c: &mut TcpStream) -> BTreeMap<String, BTreeMap<String, String>> {
    let out = request(c, b"lru_crawler metadump all\r\n", b"END\r\n");
    // memcached ends an item's line with `\n` alone; only END has `\r\n`.
    assert!(!out[..out.len() - b"END\r\n".len()].contains(&b'\r'), "{:?}", String::from_utf8_lossy(&out));
    let text = String::from_utf8_lossy(&out);
    let mut dump = BTreeMap::new();
    for line in text.lines().filter(|l| *l != "END") {
        let fields: BTreeMap<String, String> = line
            .split(' ')
            .map(|f| f.split_once('=').unwrap_or_else(|| panic!("field {f:?} in {line:?}")))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let key = fields.get("key").unwrap_or_else(|| panic!("no key in {line:?}")).clone();
        assert!(dump.insert(key, fields).is_none(), "a key twice in {text}");
    }
    dump
}

#[test]
fn metadump_lists_every_item_with_memcacheds_fields() {
    let Some(s) = Server::private() else { return };
    let mut c = s.connect();
    three_items(&mut c);
    exchange(&mut c, b"set odd:key/1 5 0 1\r\ny\r\n", b"STORED\r\n");
    exchange(&mut c, b"set soon 0 1000 1\r\nz\r\n", b"STORED\r\n");
    let now: i64 = stats_map(&mut c, "")["time"].parse().unwrap();
    let cas_of_a = {
        let v = request(&mut c, b"gets a\r\n", b"END\r\n");
        let text = String::from_utf8_lossy(&v).into_owned();
        text.lines().next().unwrap().rsplit(' ').next().unwrap().to_string()
    };
    let dump = metadump(&mut c);
    let keys: Vec<&str> = dump.keys().map(String::as_str).collect();
    // memcached uri-encodes keys.
    assert_eq!(keys, ["a", "bb", "c", "odd%3Akey%2F1", "soon"]);
    let field = |k: &str, f: &str| dump[k][f].clone();
    assert_eq!((field("a", "exp"), field("a", "cls"), field("a", "size")), ("-1".into(), "1".into(), "61".into()));
    assert_eq!(field("a", "cas"), cas_of_a);
    assert_eq!((field("c", "cls"), field("c", "size")), ("4".into(), "160".into()));
    // Client flags take 4 more bytes in memcached's count.
    assert_eq!(field("odd%3Akey%2F1", "size"), "73");
    // The expiry is a unix time.
    let exp: i64 = field("soon", "exp").parse().unwrap();
    assert!((now + 1000 - 2..=now + 1000 + 2).contains(&exp), "exp {exp}, now {now}");
    for fields in dump.values() {
        assert!(fields.contains_key("la") && fields.contains_key("fetch"), "{fields:?}");
    }
    // Other subcommands than metadump and an empty one are errors.
    exchange(&mut c, b"lru_crawler metadump\r\n", b"ERROR\r\n");
    exchange(&mut c, b"version\r\n", b"VERSION ");
}

#[test]
fn metadump_streams_a_dump_larger_than_the_output_buffer() {
    let Some(s) = Server::private() else { return };
    let mut c = s.connect();
    const ITEMS: usize = 20_000;
    let mut batch = String::new();
    for i in 0..ITEMS {
        batch.push_str(&format!("set key_number_{i:06} 0 0 1 noreply\r\nv\r\n"));
    }
    batch.push_str("mn\r\n");
    exchange(&mut c, batch.as_bytes(), b"MN\r\n");
    let dump = metadump(&mut c);
    assert_eq!(dump.len(), ITEMS);
    assert!(dump.contains_key("key_number_000000") && dump.contains_key(&format!("key_number_{:06}", ITEMS - 1)));
    // The connection serves on after the dump.
    exchange(&mut c, b"get key_number_000007\r\n", b"VALUE key_number_000007 0 1\r\nv\r\nEND\r\n");
}

#[test]
fn byte_counters_mean_what_memcacheds_do() {
    let Some(s) = Server::private() else { return };
    let mut c = s.connect();
    // The harness's start-up probe (another connection) may still be
    // counting the reply it has already received: let it finish.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let first = request(&mut c, b"stats\r\n", b"END\r\n");
    let parse = |out: &[u8]| -> BTreeMap<String, u64> {
        String::from_utf8_lossy(out)
            .lines()
            .filter_map(|l| {
                let mut t = l.splitn(3, ' ');
                if t.next() != Some("STAT") {
                    return None;
                }
                let name = t.next()?.to_string();
                Some((name, t.next()?.parse().ok()?))
            })
            .collect()
    };
    let before = parse(&first);
    exchange(&mut c, b"set a 0 0 1\r\nx\r\n", b"STORED\r\n");
    exchange(&mut c, b"get a\r\n", b"VALUE a 0 1\r\nx\r\nEND\r\n");
    let after = parse(&request(&mut c, b"stats\r\n", b"END\r\n"));
    // Network bytes: the set and get (16 + 7), the second "stats\r\n" (7).
    assert_eq!(after["bytes_read"] - before["bytes_read"], 16 + 7 + 7);
    // The first stats reply and the set's and get's replies (8 + 21).
    assert_eq!(after["bytes_written"] - before["bytes_written"], first.len() as u64 + 29);
    // Item memory as memcached counts it: 48 + 1 + 1 + 1 + 2 + 8.
    assert_eq!(after["bytes"], 61);
    let Some(s) = Server::with_flags(&["-C"]) else { return };
    let mut c = s.connect();
    exchange(&mut c, b"set a 0 0 1\r\nx\r\n", b"STORED\r\n");
    assert_eq!(stat(&mut c, "bytes"), 53, "no CAS field with -C");
}

/// Runs memcached-tool against the server; None (with a note) if it or
/// perl is missing.
fn memcached_tool(s: &Server, args: &[&str]) -> Option<(String, String)> {
    if !std::path::Path::new(MEMCACHED_TOOL).exists() {
        eprintln!("note: {MEMCACHED_TOOL} is missing (apt-get install memcached); skipping");
        return None;
    }
    let out = Command::new("perl")
        .arg(MEMCACHED_TOOL)
        .arg(s.addr().to_string())
        .args(args)
        .output()
        .map_err(|e| eprintln!("note: cannot run perl: {e}; skipping"))
        .ok()?;
    assert!(out.status.success(), "memcached-tool {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    Some((String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned()))
}

#[test]
fn memcached_tool_display_stats_and_dump_work() {
    let Some(s) = Server::private() else { return };
    let mut c = s.connect();
    three_items(&mut c);
    exchange(&mut c, b"set flagged 7 0 3\r\nabc\r\n", b"STORED\r\n");
    let Some((display, _)) = memcached_tool(&s, &["display"]) else { return };
    let rows: Vec<Vec<&str>> = display.lines().skip(1).map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(display.lines().next().map(str::split_whitespace).map(Iterator::count), Some(9), "{display}");
    // Class 1 (96B) holds a, bb and flagged; class 4 (192B) holds c.
    assert!(rows.iter().any(|r| r[..2] == ["1", "96B"] && r[3] == "1" && r[4] == "3"), "{display}");
    assert!(rows.iter().any(|r| r[..2] == ["4", "192B"] && r[4] == "1"), "{display}");
    let (stats, _) = memcached_tool(&s, &["stats"]).unwrap();
    let curr_items = stats.lines().find_map(|l| l.trim().strip_prefix("curr_items")).map(str::trim);
    assert_eq!(curr_items, Some("4"), "{stats}");
    let (dump, _) = memcached_tool(&s, &["dump"]).unwrap();
    // One add per item, in the order the server dumped them.
    let mut adds: Vec<&str> = dump.split("add ").filter(|a| !a.is_empty()).collect();
    adds.sort_unstable();
    let hundred = "0123456789".repeat(10);
    assert_eq!(
        adds,
        [
            "a 0 0 1\r\nx\r\n".to_string(),
            "bb 0 0 10\r\n0123456789\r\n".into(),
            format!("c 0 0 100\r\n{hundred}\r\n"),
            "flagged 7 0 3\r\nabc\r\n".into()
        ]
    );
    // The dump loads into an empty server as it was.
    let Some(t) = Server::private() else { return };
    let mut d = t.connect();
    send(&mut d, dump.as_bytes());
    let stored = read_n(&mut d, "STORED\r\n".len() * 4);
    assert_eq!(show(&stored), show(&b"STORED\r\n".repeat(4)));
    exchange(
        &mut d,
        b"get flagged c\r\n",
        format!("VALUE flagged 7 3\r\nabc\r\nVALUE c 0 100\r\n{hundred}\r\nEND\r\n").as_bytes(),
    );
}

#[test]
fn dumping_can_be_disabled() {
    let Some(s) = Server::with_flags(&["-X"]) else { return };
    let mut c = s.connect();
    exchange(&mut c, b"set a 0 0 1\r\nx\r\n", b"STORED\r\n");
    exchange(&mut c, b"lru_crawler metadump all\r\n", b"ERROR metadump not allowed\r\n");
    assert_eq!(stats_map(&mut c, "settings").get("dump_enabled").map(String::as_str), Some("no"));
}

/// memcached 1.6.18's `stats` fields, in its order.
const GENERAL: [&str; 92] = [
    "pid",
    "uptime",
    "time",
    "version",
    "libevent",
    "pointer_size",
    "rusage_user",
    "rusage_system",
    "max_connections",
    "curr_connections",
    "total_connections",
    "rejected_connections",
    "connection_structures",
    "response_obj_oom",
    "response_obj_count",
    "response_obj_bytes",
    "read_buf_count",
    "read_buf_bytes",
    "read_buf_bytes_free",
    "read_buf_oom",
    "reserved_fds",
    "cmd_get",
    "cmd_set",
    "cmd_flush",
    "cmd_touch",
    "cmd_meta",
    "get_hits",
    "get_misses",
    "get_expired",
    "get_flushed",
    "delete_misses",
    "delete_hits",
    "incr_misses",
    "incr_hits",
    "decr_misses",
    "decr_hits",
    "cas_misses",
    "cas_hits",
    "cas_badval",
    "touch_hits",
    "touch_misses",
    "store_too_large",
    "store_no_memory",
    "auth_cmds",
    "auth_errors",
    "bytes_read",
    "bytes_written",
    "limit_maxbytes",
    "accepting_conns",
    "listen_disabled_num",
    "time_in_listen_disabled_us",
    "threads",
    "conn_yields",
    "hash_power_level",
    "hash_bytes",
    "hash_is_expanding",
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
    "log_worker_written",
    "log_watcher_skipped",
    "log_watcher_sent",
    "log_watchers",
    "unexpected_napi_ids",
    "round_robin_fallback",
    "bytes",
    "curr_items",
    "total_items",
    "slab_global_page_pool",
    "expired_unfetched",
    "evicted_unfetched",
    "evicted_active",
    "evictions",
    "reclaimed",
    "crawler_reclaimed",
    "crawler_items_checked",
    "lrutail_reflocked",
    "moves_to_cold",
    "moves_to_warm",
    "moves_within_lru",
    "direct_reclaims",
    "lru_bumps_dropped",
];

/// memcached 1.6.18's `stats settings` names, in its order.
const SETTINGS: [&str; 76] = [
    "maxbytes",
    "maxconns",
    "tcpport",
    "udpport",
    "inter",
    "verbosity",
    "oldest",
    "evictions",
    "domain_socket",
    "umask",
    "shutdown_command",
    "growth_factor",
    "chunk_size",
    "num_threads",
    "num_threads_per_udp",
    "stat_key_prefix",
    "detail_enabled",
    "reqs_per_event",
    "cas_enabled",
    "tcp_backlog",
    "binding_protocol",
    "auth_enabled_sasl",
    "auth_enabled_ascii",
    "item_size_max",
    "maxconns_fast",
    "hashpower_init",
    "slab_reassign",
    "slab_automove",
    "slab_automove_ratio",
    "slab_automove_window",
    "slab_chunk_max",
    "lru_crawler",
    "lru_crawler_sleep",
    "lru_crawler_tocrawl",
    "tail_repair_time",
    "flush_enabled",
    "dump_enabled",
    "hash_algorithm",
    "lru_maintainer_thread",
    "lru_segmented",
    "hot_lru_pct",
    "warm_lru_pct",
    "hot_max_factor",
    "warm_max_factor",
    "temp_lru",
    "temporary_ttl",
    "idle_timeout",
    "watcher_logbuf_size",
    "worker_logbuf_size",
    "read_buf_mem_limit",
    "track_sizes",
    "inline_ascii_response",
    "ext_item_size",
    "ext_item_age",
    "ext_low_ttl",
    "ext_recache_rate",
    "ext_wbuf_size",
    "ext_compact_under",
    "ext_drop_under",
    "ext_max_sleep",
    "ext_max_frag",
    "slab_automove_freeratio",
    "ext_drop_unread",
    "ssl_enabled",
    "ssl_chain_cert",
    "ssl_key",
    "ssl_verify_mode",
    "ssl_keyformat",
    "ssl_ciphers",
    "ssl_ca_cert",
    "ssl_wbuf_size",
    "ssl_session_cache",
    "ssl_kernel_tls",
    "ssl_min_version",
    "num_napi_ids",
    "memory_file",
];

/// The names of `stats [which]` that are in `known`, in the server's
/// order (Amalgam adds its own after memcached's).
fn names_among(c: &mut TcpStream, which: &str, known: &[&str]) -> Vec<String> {
    stats(c, which).into_iter().map(|(n, _)| n).filter(|n| known.contains(&n.as_str())).collect()
}

/// Every field of memcached's `stats` and `stats settings`, in its order
/// (compared by name; Amalgam's own come after them). Values compared
/// exactly: the ones that state configuration or this test's traffic
/// (`pointer_size`, `max_connections`, `cmd_meta`, `store_too_large`,
/// `store_no_memory`, `accepting_conns`, the settings below); the rest,
/// internals that legitimately differ (uptime, rusage, buffers, hash
/// sizes, LRU queues), only for presence.
#[test]
fn stats_and_settings_have_every_memcached_field_in_order() {
    let Some(s) = Server::private() else { return };
    let mut c = s.connect();
    assert_eq!(names_among(&mut c, "", &GENERAL), GENERAL, "stats");
    let first: Vec<String> = stats(&mut c, "").into_iter().take(GENERAL.len()).map(|(n, _)| n).collect();
    assert_eq!(first, GENERAL, "memcached's fields come first");
    assert_eq!(names_among(&mut c, "settings", &SETTINGS), SETTINGS, "stats settings");
    // `me` alone counts in cmd_meta (1.6.18); a too-large set in store_too_large.
    exchange(&mut c, b"me nokey\r\n", b"EN\r\n");
    exchange(&mut c, b"mg nokey v\r\n", b"EN\r\n");
    let big = "x".repeat(2 << 20);
    let set = format!("set big 0 0 {}\r\n{big}\r\n", big.len());
    exchange(&mut c, set.as_bytes(), b"SERVER_ERROR object too large for cache\r\n");
    let g = stats_map(&mut c, "");
    for (name, want) in [
        ("pointer_size", 64),
        ("max_connections", 1024),
        ("cmd_meta", 1),
        ("store_too_large", 1),
        ("store_no_memory", 0),
        ("accepting_conns", 1),
    ] {
        assert_eq!(num(&g, name), want, "{name}");
    }
    let st = stats_map(&mut c, "settings");
    for (name, want) in [
        ("maxconns", "1024"),
        ("umask", "700"),
        ("growth_factor", "1.25"),
        ("chunk_size", "48"),
        ("stat_key_prefix", ":"),
        ("detail_enabled", "no"),
        ("reqs_per_event", "20"),
        ("cas_enabled", "yes"),
        ("tcp_backlog", "1024"),
        ("binding_protocol", "auto-negotiate"),
        ("auth_enabled_sasl", "no"),
        ("item_size_max", "1048576"),
        ("slab_automove", "1"),
        ("slab_automove_ratio", "0.80"),
        ("lru_segmented", "yes"),
        ("hot_lru_pct", "20"),
        ("warm_lru_pct", "40"),
        ("hot_max_factor", "0.20"),
        ("warm_max_factor", "2.00"),
        ("temp_lru", "no"),
        ("temporary_ttl", "61"),
        ("watcher_logbuf_size", "262144"),
        ("memory_file", "(null)"),
    ] {
        assert_eq!(st.get(name).map(String::as_str), Some(want), "stats settings {name}");
    }
}

#[test]
fn settings_show_memcacheds_flags() {
    let flags = ["-D", "#", "-B", "ascii", "-R", "10", "-b", "512", "-f", "1.5", "-n", "64", "-a", "755"];
    let Some(s) = Server::with_flags(&flags) else { return };
    let mut c = s.connect();
    let st = stats_map(&mut c, "settings");
    for (name, want) in [
        ("stat_key_prefix", "#"),
        // -D turns stats detail on, as in memcached.
        ("detail_enabled", "yes"),
        ("binding_protocol", "ascii"),
        ("reqs_per_event", "10"),
        ("tcp_backlog", "512"),
        ("growth_factor", "1.50"),
        ("chunk_size", "64"),
        ("umask", "755"),
    ] {
        assert_eq!(st.get(name).map(String::as_str), Some(want), "stats settings {name}");
    }
}

/// memcached's per-class fields of `stats items` and `stats slabs` for a
/// class with items, in its order. Exact: `number`, `mem_requested`
/// (which queue holds a fresh item depends on memcached's LRU maintainer's
/// timing), and the slab arithmetic the older test checks; the
/// rest (ages, queue moves, evictions, per-class hits) only for presence.
#[test]
fn items_and_slabs_have_memcacheds_per_class_fields() {
    let Some(s) = Server::private() else { return };
    let mut c = s.connect();
    exchange(&mut c, b"set a 0 0 1\r\nx\r\n", b"STORED\r\n");
    let items: Vec<(String, String)> = stats(&mut c, "items");
    let names: Vec<&str> = items.iter().map(|(n, _)| n.strip_prefix("items:1:").unwrap_or(n)).collect();
    assert_eq!(names, ITEMS_CLASS_FIELDS);
    let items: std::collections::HashMap<_, _> = items.into_iter().collect();
    for (name, want) in [("number", 1), ("mem_requested", 61)] {
        assert_eq!(num(&items, &format!("items:1:{name}")), want, "{name}");
    }
    let slabs: Vec<(String, String)> = stats(&mut c, "slabs");
    let names: Vec<&str> = slabs.iter().map(|(n, _)| n.strip_prefix("1:").unwrap_or(n)).collect();
    assert_eq!(names, SLABS_CLASS_FIELDS);
}

/// memcached's `stats items` fields of one class.
const ITEMS_CLASS_FIELDS: [&str; 28] = [
    "number",
    "number_hot",
    "number_warm",
    "number_cold",
    "age_hot",
    "age_warm",
    "age",
    "mem_requested",
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

/// memcached's `stats slabs` with one class.
const SLABS_CLASS_FIELDS: [&str; 17] = [
    "chunk_size",
    "chunks_per_page",
    "total_pages",
    "total_chunks",
    "used_chunks",
    "free_chunks",
    "free_chunks_end",
    "get_hits",
    "cmd_set",
    "delete_hits",
    "incr_hits",
    "decr_hits",
    "cas_hits",
    "cas_badval",
    "touch_hits",
    "active_slabs",
    "total_malloced",
];

/// `stats detail`: memcached's replies, and per-prefix counts as its
/// `prefix.c` keeps them (get per key of get/gets/gat with hits, set per
/// storage command stored or not, del per delete found or not; keys
/// without the delimiter and meta commands not counted; `off` stops
/// counting but keeps the table; `stats reset` empties it). Every figure
/// compared exactly.
#[test]
fn stats_detail_counts_by_prefix() {
    let Some(s) = Server::private() else { return };
    let mut c = s.connect();
    let usage = b"CLIENT_ERROR usage: stats detail on|off|dump\r\n";
    exchange(&mut c, b"stats detail\r\n", usage);
    exchange(&mut c, b"stats detail foo\r\n", usage);
    exchange(&mut c, b"stats detail dump\r\n", b"END\r\n");
    exchange(&mut c, b"get b:0\r\n", b"END\r\n");
    exchange(&mut c, b"stats detail dump\r\n", b"END\r\n");
    exchange(&mut c, b"stats detail on\r\n", b"OK\r\n");
    exchange(&mut c, b"mg a:1 v\r\n", b"EN\r\n");
    exchange(&mut c, b"get b:1 b:2 nodelim\r\n", b"END\r\n");
    exchange(&mut c, b"set b:2 0 0 1\r\nx\r\n", b"STORED\r\n");
    exchange(&mut c, b"add b:2 0 0 1\r\nx\r\n", b"NOT_STORED\r\n");
    exchange(&mut c, b"delete b:3\r\n", b"NOT_FOUND\r\n");
    exchange(&mut c, b"gat 0 b:2\r\n", b"VALUE b:2 0 1\r\nx\r\nEND\r\n");
    exchange(&mut c, b"touch b:2 0\r\n", b"TOUCHED\r\n");
    exchange(&mut c, b"get c:1:2 :x\r\n", b"END\r\n");
    let dump = b"PREFIX  get 1 hit 0 set 0 del 0\r\nPREFIX b get 3 hit 1 set 2 del 1\r\n\
                 PREFIX c get 1 hit 0 set 0 del 0\r\nEND\r\n";
    exchange(&mut c, b"stats detail dump\r\n", dump);
    let settings = stats_map(&mut c, "settings");
    assert_eq!(settings.get("detail_enabled").map(String::as_str), Some("yes"));
    exchange(&mut c, b"stats detail off\r\n", b"OK\r\n");
    exchange(&mut c, b"get b:1\r\n", b"END\r\n");
    exchange(&mut c, b"stats detail dump\r\n", dump);
    exchange(&mut c, b"stats reset\r\n", b"RESET\r\n");
    exchange(&mut c, b"stats detail dump\r\n", b"END\r\n");
}

#[test]
fn dash_d_sets_the_delimiter_and_turns_detail_on() {
    let Some(s) = Server::with_flags(&["-D", "#"]) else { return };
    let mut c = s.connect();
    exchange(&mut c, b"set a#b:c 0 0 1\r\nx\r\nget a#b:c\r\n", b"STORED\r\nVALUE a#b:c 0 1\r\nx\r\nEND\r\n");
    exchange(&mut c, b"stats detail dump\r\n", b"PREFIX a get 1 hit 1 set 1 del 0\r\nEND\r\n");
}

/// `slabs` and `lru`, answered as memcached 1.6.18 answers them; `lru`'s
/// changes show in `stats settings`.
#[test]
fn slabs_and_lru_answer_as_memcached() {
    let Some(s) = Server::private() else { return };
    let mut c = s.connect();
    for (req, want) in [
        ("slabs", "ERROR"),
        ("slabs automove", "ERROR"),
        ("slabs automove 3", "ERROR"),
        ("slabs automove x", "CLIENT_ERROR bad command line format"),
        ("slabs automove 0", "OK"),
        ("slabs reassign", "ERROR"),
        ("slabs reassign 1 2", "NOSPARE source class has no spare pages"),
        ("slabs reassign 2 2", "SAME src and dst class are identical"),
        ("slabs reassign 1 99", "BADCLASS invalid src or dst class id"),
        ("slabs reassign a 2", "CLIENT_ERROR bad command line format"),
        ("lru", "ERROR"),
        ("lru foo", "ERROR"),
        ("lru mode other", "ERROR"),
        ("lru tune 50 40 0.1 2", "ERROR hot and warm pcts must not exceed 80"),
        ("lru tune 10 20 0 2", "ERROR hot/warm age factors must be greater than 0"),
        ("lru tune 10 25 0.1 2", "OK"),
        ("lru mode flat", "OK"),
        ("lru temp_ttl 10", "OK"),
    ] {
        assert_eq!(line(&mut c, format!("{req}\r\n").as_bytes()), format!("{want}\r\n"), "{req}");
    }
    let st = stats_map(&mut c, "settings");
    for (name, want) in [
        ("slab_automove", "0"),
        ("hot_lru_pct", "10"),
        ("warm_lru_pct", "25"),
        ("hot_max_factor", "0.10"),
        ("lru_segmented", "no"),
        ("temp_lru", "yes"),
        ("temporary_ttl", "10"),
    ] {
        assert_eq!(st.get(name).map(String::as_str), Some(want), "stats settings {name}");
    }
}

/// `watch`'s refusals, as memcached's: an unknown class (1.6.18 has no
/// `deletions`) answers ERROR, `-W` refuses every watch.
#[test]
fn watch_refusals_are_memcacheds() {
    let Some(s) = Server::private() else { return };
    let mut c = s.connect();
    exchange(&mut c, b"watch foo\r\n", b"ERROR\r\n");
    exchange(&mut c, b"watch fetchers deletions\r\n", b"ERROR\r\n");
    let Some(s) = Server::with_flags(&["-W"]) else { return };
    let mut c = s.connect();
    exchange(&mut c, b"watch\r\n", b"CLIENT_ERROR watch commands not allowed\r\n");
}

/// `watch fetchers mutations connevents`: the watcher gets memcached's
/// log lines for another connection's requests, in order (memcached 1.6.18
/// also logs a fetch before each store, which this does not: the lines
/// compared are those both write, as a subsequence).
#[test]
fn watch_streams_fetchers_mutations_and_connevents() {
    let Some(s) = Server::private() else { return };
    let mut w = s.connect();
    exchange(&mut w, b"watch fetchers mutations connevents\r\n", b"OK\r\n");
    let mut c = s.connect();
    let port = c.local_addr().unwrap().port();
    exchange(&mut c, b"set w:foo 0 0 3\r\nbar\r\n", b"STORED\r\n");
    exchange(&mut c, b"add w:foo 0 60 3\r\nbaz\r\n", b"NOT_STORED\r\n");
    exchange(&mut c, b"get w:foo w:no%pe\r\n", b"VALUE w:foo 0 3\r\nbar\r\nEND\r\n");
    drop(c);
    let want = [
        format!("type=conn_new rip=127.0.0.1 rport={port} transport=tcp cfd=N"),
        "type=item_store key=w%3Afoo status=stored cmd=set ttl=0 clsid=1 cfd=N size=3".to_string(),
        "type=item_store key=w%3Afoo status=not_stored cmd=add ttl=60 clsid=1 cfd=N size=3".to_string(),
        "type=item_get key=w%3Afoo status=found clsid=1 cfd=N size=3".to_string(),
        "type=item_get key=w%3Ano%25pe status=not_found clsid=0 cfd=N size=0".to_string(),
        format!("type=conn_close rip=127.0.0.1 rport={port} transport=tcp reason=normal cfd=N"),
    ];
    // Each line: `ts=<s>.<us> gid=<n> ` then the body; cfd's number
    // differs between servers.
    let mut got: Vec<String> = Vec::new();
    let mut buf = Vec::new();
    eventually("the watcher's lines", std::time::Duration::from_secs(10), || {
        let mut chunk = [0u8; 4096];
        if let Ok(n) = std::io::Read::read(&mut w, &mut chunk) {
            buf.extend_from_slice(&chunk[..n]);
        }
        got = String::from_utf8_lossy(&buf)
            .lines()
            .map(|l| {
                let body = l.splitn(3, ' ').nth(2).unwrap_or("");
                assert!(l.starts_with("ts=") && l.split(' ').nth(1).is_some_and(|g| g.starts_with("gid=")), "{l}");
                match body.find("cfd=") {
                    Some(i) => {
                        let end = body[i..].find(' ').map_or(body.len(), |e| i + e);
                        format!("{}cfd=N{}", &body[..i], &body[end..])
                    }
                    None => body.to_string(),
                }
            })
            .collect();
        let mut it = got.iter();
        want.iter().all(|w| it.any(|g| g == w))
    });
}
