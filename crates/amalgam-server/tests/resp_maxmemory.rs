//! CONFIG SET maxmemory at run time (engine `Store::set_memory_limit`).
//! What Redis does too (noeviction past maxmemory answers `-OOM`, reads
//! and deletes go on) runs against redis-server in CI; how a cache comes
//! down to a lowered limit, gives the memory back and grows into its
//! reserve is amalgam's own and runs against an amalgam of its own.
mod common;
use common::resp::*;
use common::*;
use std::time::{Duration, Instant};

/// Redis's reply to a write past maxmemory under noeviction.
const OOM: &str = "-OOM command not allowed when used memory > 'maxmemory'.\r\n";
/// How long the server may take to evict down to a lowered limit (a
/// bound on waiting, not a speed asserted).
const SETTLE_WAIT: Duration = Duration::from_secs(30);

fn failed(name: &str, why: &str) -> String {
    error(&format!("ERR CONFIG SET failed (possibly related to argument '{name}') - {why}"))
}

/// Writes `n` keys `prefix:i` of `value_bytes` each, pipelined.
fn fill(c: &mut Resp, prefix: &str, n: usize, value_bytes: usize) {
    let value = "v".repeat(value_bytes);
    for chunk in (0..n).collect::<Vec<_>>().chunks(100) {
        for i in chunk {
            c.send(&["SET", &format!("{prefix}:{i}"), &value]);
        }
        for _ in chunk {
            assert_eq!(c.reply(), OK);
        }
    }
}

/// The server's resident set size in bytes (Linux `/proc/<pid>/status`).
fn rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
}

/// Under noeviction a maxmemory below the memory in use refuses writes
/// with Redis's `-OOM`, while reads and deletes go on; the old limit
/// restored, writes succeed. Redis and amalgam alike (amalgam's
/// noeviction is store mode, `--eviction none`).
#[test]
fn noeviction_past_a_lowered_maxmemory_answers_oom() {
    let (server, restore_policy) = match external_resp_addr() {
        Some(_) => {
            let Some(server) = resp_server() else { return };
            let mut c = Resp::new(&server);
            let policy = c.config_get("maxmemory-policy");
            assert_eq!(c.call(&["CONFIG", "SET", "maxmemory-policy", "noeviction"]), OK);
            (server, Some(policy))
        }
        None => {
            let Some(server) = resp_private(&["--eviction", "none", "-m", "16"]) else { return };
            (server, None)
        }
    };
    let mut c = Resp::new(&server);
    let before = c.config_get("maxmemory");
    let prefix = key("oom");
    fill(&mut c, &prefix, 1000, 1000);
    assert_eq!(c.call(&["CONFIG", "SET", "maxmemory", "1"]), OK);
    assert_eq!(c.config_get("maxmemory"), "1");
    assert_eq!(c.call(&["SET", &format!("{prefix}:new"), "x"]), OOM);
    assert_eq!(c.call(&["SET", &format!("{prefix}:0"), "x"]), OOM, "an overwrite needs memory too");
    assert_eq!(c.call(&["GET", &format!("{prefix}:1")]), bulk(&"v".repeat(1000)), "reads go on");
    assert_eq!(c.call(&["DEL", &format!("{prefix}:1")]), int(1), "deletes go on");
    assert_eq!(c.call(&["CONFIG", "SET", "maxmemory", &before]), OK);
    assert_eq!(c.call(&["SET", &format!("{prefix}:new"), "x"]), OK);
    for i in 0..1000 {
        c.send(&["DEL", &format!("{prefix}:{i}")]);
    }
    for _ in 0..1000 {
        c.reply();
    }
    c.call(&["DEL", &format!("{prefix}:new")]);
    if let Some(policy) = restore_policy {
        assert_eq!(c.call(&["CONFIG", "SET", "maxmemory-policy", &policy]), OK);
    }
}

/// Amalgam's store mode: deletes bring the store back under a lowered
/// limit and writes succeed again; `maxmemory 0` is no limit (shown as 0,
/// as Redis shows it).
#[test]
fn amalgam_store_mode_recovers_after_deletes_and_takes_no_limit() {
    let Some(server) = resp_private(&["--eviction", "none", "-m", "16"]) else { return };
    let mut c = Resp::new(&server);
    fill(&mut c, "k", 4000, 1000); // about 4 MiB
    assert_eq!(c.call(&["CONFIG", "SET", "maxmemory", "2mb"]), OK);
    assert_eq!(c.call(&["SET", "new", "x"]), OOM);
    for i in 0..3500 {
        c.send(&["DEL", &format!("k:{i}")]);
    }
    for _ in 0..3500 {
        assert_eq!(c.reply(), int(1));
    }
    // Deleted items are freed after their grace period: bounded retries.
    let start = Instant::now();
    while c.call(&["SET", "new", "x"]) != OK {
        assert!(start.elapsed() < SETTLE_WAIT, "still refused after deletes");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(c.call(&["CONFIG", "SET", "maxmemory", "0"]), OK);
    assert_eq!(c.config_get("maxmemory"), "0");
    assert!(c.call(&["INFO", "memory"]).contains("\r\nmaxmemory:0\r\n"));
    fill(&mut c, "more", 20_000, 1000); // 20 MiB, past the -m 16 it started with
    assert_eq!(c.call(&["CONFIG", "SET", "maxmemory", "1gb"]), OK, "store mode takes any limit");
}

/// Amalgam's cache mode: lowered from 64 MiB to 16, the cache evicts
/// down to it without a write to prompt it (resident segments plus the
/// index within the limit), the server's RSS falls, and writes go on;
/// raised to the reserve (four times -m by default) it holds more again;
/// past the reserve, below the fewest segments, or 0 (no limit), the
/// change is refused with the reason.
#[test]
fn amalgam_cache_evicts_down_and_grows_into_its_reserve() {
    let Some(server) = resp_private(&["-m", "64"]) else { return };
    let mut c = Resp::new(&server);
    let mut mc = server.connect();
    fill(&mut c, "k", 80_000, 1000);
    let full = stats_map(&mut mc, "");
    assert!(num(&full, "evictions") > 0, "{full:?}");
    let rss_full = rss_bytes(server.pid().unwrap());

    assert_eq!(c.call(&["CONFIG", "SET", "maxmemory", "16mb"]), OK);
    assert_eq!(c.config_get("maxmemory"), (16u64 << 20).to_string());
    let start = Instant::now();
    let small = loop {
        let st = stats_map(&mut mc, "");
        if num(&st, "segments_resident_bytes") + num(&st, "hash_bytes") <= 16 << 20 {
            break st;
        }
        assert!(start.elapsed() < SETTLE_WAIT, "never came down to 16 MiB: {st:?}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(num(&small, "limit_maxbytes"), 16 << 20);
    assert!(num(&small, "curr_items") < num(&full, "curr_items") / 2, "{full:?} then {small:?}");
    let rss_small = rss_bytes(server.pid().unwrap());
    assert!(rss_full.saturating_sub(rss_small) >= 24 << 20, "RSS {rss_full} -> {rss_small}: memory given back");
    fill(&mut c, "after", 10_000, 1000);
    assert_eq!(c.call(&["GET", "after:9999"]), bulk(&"v".repeat(1000)), "writes go on");

    assert_eq!(c.call(&["CONFIG", "SET", "maxmemory", "256mb"]), OK, "the default reserve is 4 x -m");
    fill(&mut c, "big", 150_000, 1000);
    let big = stats_map(&mut mc, "");
    assert!(num(&big, "segments_resident_bytes") > 64 << 20, "grew past where it started: {big:?}");

    let over = c.call(&["CONFIG", "SET", "maxmemory", "257mb"]);
    assert!(over.starts_with("-ERR CONFIG SET failed (possibly related to argument 'maxmemory') - "), "{over}");
    assert!(over.contains(&(256u64 << 20).to_string()), "names the reserve: {over}");
    assert_eq!(
        c.call(&["CONFIG", "SET", "maxmemory", "1kb"]),
        OK,
        "any limit from 1 byte (Redis's tests set 1 to force out of memory)"
    );
    assert_eq!(c.call(&["CONFIG", "SET", "maxmemory", "256mb"]), OK);
    assert_eq!(
        c.call(&["CONFIG", "SET", "maxmemory", "0"]),
        failed("maxmemory", "maxmemory 0 (no limit) is for noeviction (--eviction none) only: a cache needs a limit")
    );
    assert_eq!(c.config_get("maxmemory"), (256u64 << 20).to_string(), "refusals changed nothing");
}

/// `--memory-limit-max` sets the reserve: here no room to grow.
#[test]
fn amalgam_memory_limit_max_bounds_the_raise() {
    let Some(server) = resp_private(&["-m", "32", "--memory-limit-max", "32"]) else { return };
    let mut c = Resp::new(&server);
    assert_eq!(c.call(&["CONFIG", "SET", "maxmemory", "16mb"]), OK);
    assert_eq!(c.call(&["CONFIG", "SET", "maxmemory", "32mb"]), OK);
    let r = c.call(&["CONFIG", "SET", "maxmemory", "33mb"]);
    assert!(r.contains(&(32u64 << 20).to_string()), "{r}");
}

/// CONFIG SET maxmemory-policy: noeviction <-> an evicting policy is
/// refused (store mode and cache mode keep items in different memory: a
/// restart with --eviction), with the reason; every evicting policy is
/// taken (tests/resp_maxmemory_policy.rs).
#[test]
fn amalgam_maxmemory_policy_refuses_what_needs_a_restart() {
    let Some(cache) = resp_private(&[]) else { return };
    let mut c = Resp::new(&cache);
    assert_eq!(c.call(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]), OK);
    let r = c.call(&["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
    assert!(r.starts_with("-ERR CONFIG SET failed (possibly related to argument 'maxmemory-policy') - "), "{r}");
    assert!(r.contains("needs a restart with --eviction; the policy now is allkeys-lru"), "{r}");
    assert_eq!(c.call(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"]), OK);
    assert_eq!(c.config_get("maxmemory-policy"), "allkeys-lfu");

    let Some(store) = resp_private(&["--eviction", "none"]) else { return };
    let mut c = Resp::new(&store);
    assert_eq!(c.call(&["CONFIG", "SET", "maxmemory-policy", "NoEviction"]), OK);
    let r = c.call(&["CONFIG", "SET", "maxmemory-policy", "volatile-lru"]);
    assert!(r.contains("the policy now is noeviction"), "{r}");
}

/// Amalgam's own `eviction` setting: s3fifo <-> clock at run time on a
/// full cache (writes and evictions go on; INFO names the policy in
/// force; two budgets of writes under CLOCK leave none of the keys
/// written under S3-FIFO, none of which was read: nothing of S3-FIFO's
/// queues is stranded); none (store mode) to or from a cache is refused
/// as maxmemory-policy refuses it.
#[test]
fn amalgam_eviction_policy_switches_at_run_time() {
    let Some(cache) = resp_private(&["-m", "16"]) else { return };
    let mut c = Resp::new(&cache);
    let mut mc = cache.connect();
    assert_eq!(c.config_get("eviction"), "s3fifo");
    fill(&mut c, "a", 30_000, 1000);
    let before = num(&stats_map(&mut mc, ""), "evictions");
    assert!(before > 0);
    assert_eq!(c.call(&["CONFIG", "SET", "eviction", "clock"]), OK);
    assert_eq!(c.config_get("eviction"), "clock");
    assert!(c.call(&["INFO", "memory"]).contains("\r\namalgam_eviction:clock\r\n"));
    assert_eq!(stats_map(&mut mc, "settings")["eviction_policy"], "clock", "memcached's stats settings too");
    assert_eq!(c.config_get("maxmemory-policy"), "allkeys-lru");
    fill(&mut c, "b", 30_000, 1000);
    assert!(num(&stats_map(&mut mc, ""), "evictions") > before, "CLOCK evicts");
    assert_eq!(c.call(&["GET", "b:29999"]), bulk(&"v".repeat(1000)));
    let old: Vec<String> = (0..30_000).map(|i| format!("a:{i}")).collect();
    let mut exists = vec!["EXISTS"];
    exists.extend(old.iter().map(String::as_str));
    assert_eq!(c.call(&exists), int(0), "every key written under S3-FIFO was evicted under CLOCK");
    let r = c.call(&["CONFIG", "SET", "eviction", "none"]);
    assert!(r.contains("needs a restart with --eviction; the policy now is allkeys-lru"), "{r}");
    assert_eq!(
        c.call(&["CONFIG", "SET", "eviction", "lru"]),
        failed("eviction", "argument(s) must be one of the following: none, clock, s3fifo")
    );
    assert_eq!(c.call(&["CONFIG", "SET", "eviction", "s3fifo"]), OK);

    let Some(store) = resp_private(&["--eviction", "none"]) else { return };
    let mut c = Resp::new(&store);
    assert_eq!(c.call(&["CONFIG", "SET", "eviction", "none"]), OK);
    let r = c.call(&["CONFIG", "SET", "eviction", "clock"]);
    assert!(r.contains("the policy now is noeviction"), "{r}");
}

/// Amalgam's own `s3fifo-small-queue-percent`: S3-FIFO's small queue's
/// share, set at run time within 1..=50 (Redis's range error outside it);
/// store mode, which has no queues, refuses it.
#[test]
fn amalgam_small_queue_share_is_a_run_time_setting() {
    let Some(cache) = resp_private(&["-m", "16"]) else { return };
    let mut c = Resp::new(&cache);
    assert_eq!(c.config_get("s3fifo-small-queue-percent"), "10");
    assert_eq!(c.call(&["CONFIG", "SET", "s3fifo-small-queue-percent", "25"]), OK);
    assert_eq!(c.config_get("s3fifo-small-queue-percent"), "25");
    for bad in ["0", "51"] {
        assert_eq!(
            c.call(&["CONFIG", "SET", "s3fifo-small-queue-percent", bad]),
            failed("s3fifo-small-queue-percent", "argument must be between 1 and 50 inclusive")
        );
    }
    assert_eq!(c.config_get("s3fifo-small-queue-percent"), "25", "a refused value changes nothing");
    // Writes go on with the new share.
    fill(&mut c, "s", 30_000, 1000);
    assert_eq!(c.call(&["GET", "s:29999"]), bulk(&"v".repeat(1000)));

    let Some(store) = resp_private(&["--eviction", "none"]) else { return };
    let mut c = Resp::new(&store);
    assert_eq!(
        c.call(&["CONFIG", "SET", "s3fifo-small-queue-percent", "20"]),
        failed(
            "s3fifo-small-queue-percent",
            "store mode (--eviction none) has no eviction queues: restart with --eviction s3fifo"
        )
    );
}
