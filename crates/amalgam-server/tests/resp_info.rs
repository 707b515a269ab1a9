//! INFO's sections and what INFO and CONFIG GET say about eviction and
//! persistence, black-box. Runs against amalgam and, in CI, against
//! redis-server 7.0 (`AMALGAM_TEST_RESP_ADDR`); amalgam's own settings are
//! checked on amalgams started with those flags.
mod common;
use common::resp::*;
use common::*;

/// The `name:value` of an INFO reply.
fn info_field(info: &str, name: &str) -> Option<String> {
    info.split("\r\n").find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix(':'))).map(str::to_string)
}

#[test]
fn cpu_section_and_several_sections() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let cpu = c.call(&["INFO", "cpu"]);
    assert!(cpu.contains("# CPU\r\nused_cpu_sys:"), "{cpu}");
    for f in ["used_cpu_sys", "used_cpu_user", "used_cpu_sys_children", "used_cpu_user_children"] {
        let v = info_field(&cpu, f).unwrap_or_else(|| panic!("no {f}: {cpu}"));
        let (secs, micros) = v.split_once('.').unwrap_or_else(|| panic!("{f}:{v}"));
        assert!(secs.parse::<u64>().is_ok() && micros.len() == 6 && micros.parse::<u64>().is_ok(), "{f}:{v}");
    }
    assert!(!cpu.contains("# Server"));
    let two = c.call(&["INFO", "clients", "server"]);
    assert!(two.contains("# Server\r\n") && two.contains("# Clients\r\n") && !two.contains("# Memory"), "{two}");
    assert!(two.find("# Server").unwrap() < two.find("# Clients").unwrap(), "Redis's order, not the asked one");
    let repl = c.call(&["INFO", "REPLICATION"]);
    assert_eq!(info_field(&repl, "role").as_deref(), Some("master"));
    assert_eq!(info_field(&repl, "connected_slaves").as_deref(), Some("0"));
    for all in ["all", "everything", "default"] {
        let r = c.call(&["INFO", all]);
        for s in
            ["# Server", "# Clients", "# Memory", "# Persistence", "# Stats", "# Replication", "# CPU", "# Keyspace"]
        {
            assert!(r.contains(s), "INFO {all} lacks {s}");
        }
    }
    let cluster = c.call(&["INFO", "cluster"]);
    assert_eq!(info_field(&cluster, "cluster_enabled").as_deref(), Some("0"));
}

#[test]
fn the_cache_reports_an_evicting_policy() {
    // Redis has no S3-FIFO: a cache that evicts any key by recency
    // reports allkeys-lru, and INFO names the real policy.
    let Some(server) = resp_private(&[]) else { return };
    let mut c = Resp::new(&server);
    let mem = c.call(&["INFO", "memory"]);
    assert_eq!(info_field(&mem, "maxmemory_policy").as_deref(), Some("allkeys-lru"), "{mem}");
    assert_eq!(info_field(&mem, "amalgam_eviction").as_deref(), Some("s3fifo"), "{mem}");
    assert_eq!(c.config_get("maxmemory-policy"), "allkeys-lru");
    let clock = resp_private(&["--eviction", "clock"]).unwrap();
    let mut c = Resp::new(&clock);
    assert_eq!(info_field(&c.call(&["INFO", "memory"]), "maxmemory_policy").as_deref(), Some("allkeys-lru"));
}

#[test]
fn store_mode_reports_noeviction() {
    let Some(server) = resp_private(&["--eviction", "none"]) else { return };
    let mut c = Resp::new(&server);
    let mem = c.call(&["INFO", "memory"]);
    assert_eq!(info_field(&mem, "maxmemory_policy").as_deref(), Some("noeviction"), "{mem}");
    assert_eq!(c.config_get("maxmemory-policy"), "noeviction");
}

#[test]
fn persistence_on_and_off_agree() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let p = c.call(&["INFO", "persistence"]);
    assert_eq!(info_field(&p, "aof_enabled").as_deref(), Some("0"), "{p}");
    assert_eq!(c.config_get("appendonly"), "no");

    let dir = std::env::temp_dir().join(format!("amalgam-resp-info-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let d = dir.to_string_lossy().into_owned();
    if let Some(server) = resp_private(&["--dir", &d, "--fsync", "always"]) {
        let mut c = Resp::new(&server);
        let p = c.call(&["INFO", "persistence"]);
        assert_eq!(info_field(&p, "aof_enabled").as_deref(), Some("1"), "{p}");
        assert_eq!(c.config_get("appendonly"), "yes");
        assert_eq!(c.config_get("appendfsync"), "always");
        assert_eq!(c.config_get("dir"), d);
        drop(server);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The memory fields Redis's own units read (issue 39 §3): the resident
/// set, the peak of used_memory and the ratio of the two, the lazy-free
/// queue; MIGRATE's cached sockets in stats.
#[test]
fn memory_rss_peak_and_fragmentation() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let num = |info: &str, f: &str| -> f64 {
        let v = info_field(info, f).unwrap_or_else(|| panic!("no {f}: {info}"));
        v.trim_end_matches('%').parse().unwrap_or_else(|_| panic!("{f}:{v}"))
    };
    let before = c.call(&["INFO", "memory"]);
    let used = num(&before, "used_memory");
    assert!(num(&before, "used_memory_rss") > 0.0, "{before}");
    // Redis raises its peak in its cron: used_memory, which counts this
    // reply's buffer, may pass it by a little (100.01%).
    assert!(num(&before, "used_memory_peak") >= used * 0.99, "{before}");
    let perc = num(&before, "used_memory_peak_perc");
    assert!(perc > 0.0 && perc <= 101.0, "{before}");
    let ratio = info_field(&before, "mem_fragmentation_ratio").expect("mem_fragmentation_ratio");
    assert!(ratio.parse::<f64>().is_ok_and(|r| r > 0.0) && ratio.split_once('.').unwrap().1.len() == 2, "{ratio}");
    assert_eq!(info_field(&before, "lazyfree_pending_objects").as_deref(), Some("0"));
    // The peak follows a fill and stays after a delete.
    let value = "v".repeat(10_000);
    for i in 0..200 {
        c.call(&["SET", &format!("info-peak:{i}"), &value]);
    }
    let full = num(&c.call(&["INFO", "memory"]), "used_memory");
    for i in 0..200 {
        c.call(&["DEL", &format!("info-peak:{i}")]);
    }
    let after = c.call(&["INFO", "memory"]);
    assert!(num(&after, "used_memory_peak") >= full, "{after}");
    assert!(num(&after, "used_memory_peak") > num(&after, "used_memory"), "{after}");
    let stats = c.call(&["INFO", "stats"]);
    assert_eq!(info_field(&stats, "migrate_cached_sockets").as_deref(), Some("0"));
}
