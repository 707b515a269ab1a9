//! Cache mode (issue 4), black box: a server with a small `-m` filled far
//! beyond it keeps storing, stays within its memory, keeps the recent
//! keys, and says so in `stats`.

mod common;

use common::*;

/// Resident set of a process, from /proc (Linux).
fn rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc/<pid>/status");
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS");
    kb * 1024
}

/// `-m 8`, 40 MB of 1 KB values: every SET is STORED, the last keys are
/// readable, evictions are counted, and RSS grows by at most the budget,
/// the index and a fixed allowance.
#[test]
fn small_cache_filled_far_beyond_its_budget_keeps_storing() {
    let memcached = binary().contains("memcached");
    for policy in ["s3fifo", "clock"] {
        let flags: Vec<&str> =
            if memcached { vec!["-m", "8", "-t", "2"] } else { vec!["-m", "8", "-t", "2", "--eviction", policy] };
        let Some(s) = Server::with_flags(&flags) else { return };
        let mut c = s.connect();
        let rss_start = s.pid().map(rss_bytes);
        let value = "v".repeat(1000);
        const SETS: usize = 40_000;
        for i in 0..SETS {
            let got = line(&mut c, format!("set evict{i} 0 0 {}\r\n{value}\r\n", value.len()).as_bytes());
            assert_eq!(got, "STORED\r\n", "set {i} with {policy}");
        }
        for i in SETS - 100..SETS {
            let got = request(&mut c, format!("get evict{i}\r\n").as_bytes(), b"END\r\n");
            assert_reply(&got, format!("VALUE evict{i} 0 {}\r\n{value}\r\nEND\r\n", value.len()).as_bytes());
        }
        let st = stats_map(&mut c, "");
        assert!(num(&st, "evictions") > 0, "{policy}: no evictions counted");
        assert!(num(&st, "evicted_unfetched") > 0);
        assert!(num(&st, "curr_items") < SETS as u64);
        if let (Some(pid), Some(start), false) = (s.pid(), rss_start, memcached) {
            let grown = rss_bytes(pid).saturating_sub(start);
            let allowance = (8 << 20) + num(&st, "hash_bytes") + (8 << 20);
            assert!(grown <= allowance, "{policy}: RSS grew {grown} bytes (allowed {allowance})");
        }
    }
}

/// `-m` covers the index too (engine `segment.rs`, the memory account):
/// `-m 16` filled with 800 k tiny items (a 2-byte value each), whose index
/// alone would take about half the budget, keeps storing, and RSS grows by
/// at most the budget, S3-FIFO's ghost (1/32 of it) and a fixed allowance
/// for the process, not by the budget plus the index. `stats` shows the
/// segments' limit below the budget by at least the index.
#[test]
fn tiny_items_do_not_take_the_index_past_the_budget() {
    if binary().contains("memcached") {
        return;
    }
    const MB: u64 = 1 << 20;
    let Some(s) = Server::with_flags(&["-m", "16", "-t", "2"]) else { return };
    let mut c = s.connect();
    let rss_start = s.pid().map(rss_bytes);
    const SETS: usize = 800_000;
    const BATCH: usize = 4096;
    for first in (0..SETS).step_by(BATCH) {
        let mut buf = Vec::with_capacity(BATCH * 32);
        for i in first..(first + BATCH).min(SETS) {
            buf.extend_from_slice(format!("set t{i} 0 0 2 noreply\r\nvv\r\n").as_bytes());
        }
        send(&mut c, &buf);
        // A round trip per batch keeps the pipeline bounded.
        assert_eq!(line(&mut c, b"mn\r\n"), "MN\r\n");
    }
    let got = request(&mut c, format!("get t{}\r\n", SETS - 1).as_bytes(), b"END\r\n");
    assert_reply(&got, format!("VALUE t{} 0 2\r\nvv\r\nEND\r\n", SETS - 1).as_bytes());
    // Let the maintenance thread finish its account and reclamation.
    std::thread::sleep(std::time::Duration::from_millis(500));
    let st = stats_map(&mut c, "");
    assert!(num(&st, "evictions") > 0, "the fill went past the budget: {st:?}");
    let index = num(&st, "hash_bytes");
    let limit = num(&st, "segments_limit") * num(&st, "segment_size");
    assert!(index > 4 * MB, "the index is a large part of this budget: {st:?}");
    assert!(limit + index <= 16 * MB, "segments limited to the budget less the index: {st:?}");
    assert_eq!(num(&st, "eviction_policy_bytes"), 16 * MB / 32, "S3-FIFO's ghost: 2 bytes per 64 of budget");
    if let (Some(pid), Some(start)) = (s.pid(), rss_start) {
        let grown = rss_bytes(pid).saturating_sub(start);
        let allowance = 16 * MB + 16 * MB / 32 + 4 * MB;
        assert!(grown <= allowance, "RSS grew {grown} bytes (allowed {allowance}; index {index}): {st:?}");
    }
}

/// `--eviction` picks the policy, and `stats settings` reports it.
#[test]
fn eviction_flag_is_reported() {
    if binary().contains("memcached") {
        return;
    }
    let Some(s) = Server::with_flags(&["--eviction", "clock"]) else { return };
    let mut c = s.connect();
    let m = stats_map(&mut c, "settings");
    assert_eq!(m["evictions"], "on");
    assert_eq!(m["eviction_policy"], "clock");
    assert_eq!(m["merge_segments"], "yes", "merging is on by default");
    for (flags, evictions, merging) in [
        (&["--merge-segments=false"][..], "on", "no"),
        (&["--eviction", "none"][..], "off", "no"),
        (&["--merge-segments"][..], "on", "yes"),
    ] {
        let Some(s) = Server::with_flags(flags) else { return };
        let m = stats_map(&mut s.connect(), "settings");
        assert_eq!((m["evictions"].as_str(), m["merge_segments"].as_str()), (evictions, merging), "{flags:?}");
    }
}
