//! CONFIG SET of one or many pairs: Redis 7.0's checks, order and error
//! texts, all or nothing. Runs against amalgam and, in CI, against
//! redis-server 7.0 (`AMALGAM_TEST_RESP_ADDR`); what only amalgam does is
//! in the test that starts an amalgam of its own.
mod common;
use common::resp::*;
use common::*;

fn failed(name: &str, why: &str) -> String {
    error(&format!("ERR CONFIG SET failed (possibly related to argument '{name}') - {why}"))
}

#[test]
fn config_set_checks_every_pair_first() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let maxmemory = c.config_get("maxmemory");
    let timeout = c.config_get("timeout");
    // The current values are accepted, one or several at once.
    assert_eq!(c.call(&["CONFIG", "SET", "save", ""]), OK);
    assert_eq!(c.call(&["CONFIG", "SET", "Maxmemory", &maxmemory, "timeout", &timeout, "appendonly", "no"]), OK);
    assert_eq!(c.call(&["CONFIG", "SET", "maxmemory", "10mb", "foo"]), error("ERR syntax error"));
    assert_eq!(
        c.call(&["CONFIG", "SET", "maxmemory", &maxmemory, "foo", "bar"]),
        error("ERR Unknown option or number of arguments for CONFIG SET - 'foo'")
    );
    assert_eq!(
        c.call(&["CONFIG", "SET", "maxmemory", &maxmemory, "MAXMEMORY", &maxmemory]),
        failed("MAXMEMORY", "duplicate parameter")
    );
    assert_eq!(c.call(&["CONFIG", "SET", "save", "", "save", ""]), failed("save", "duplicate parameter"));
    assert_eq!(c.call(&["CONFIG", "SET", "maxmemory", "abc"]), failed("maxmemory", "argument must be a memory value"));
    assert_eq!(
        c.call(&["CONFIG", "SET", "timeout", "5", "maxmemory", "abc"]),
        failed("maxmemory", "argument must be a memory value")
    );
    assert_eq!(c.config_get("timeout"), timeout, "all or nothing: timeout is unchanged");
    assert_eq!(
        c.call(&["CONFIG", "SET", "maxmemory-policy", "foo"]),
        failed(
            "maxmemory-policy",
            "argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, \
             allkeys-lru, allkeys-lfu, allkeys-random, noeviction"
        )
    );
    assert_eq!(
        c.call(&["CONFIG", "SET", "maxclients", "abc"]),
        failed("maxclients", "argument couldn't be parsed into an integer")
    );
    assert_eq!(
        c.call(&["CONFIG", "SET", "maxclients", "0"]),
        failed("maxclients", "argument must be between 1 and 4294967295 inclusive")
    );
    assert_eq!(
        c.call(&["CONFIG", "SET", "timeout", "-1"]),
        failed("timeout", "argument must be between 0 and 2147483647 inclusive")
    );
    assert_eq!(
        c.call(&["CONFIG", "SET", "appendonly", "maybe"]),
        failed("appendonly", "argument must be 'yes' or 'no'")
    );
    assert_eq!(c.call(&["CONFIG", "SET", "databases", "16"]), failed("databases", "can't set immutable config"));
    assert_eq!(
        c.call(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru", "noeviction", "x"]),
        error("ERR Unknown option or number of arguments for CONFIG SET - 'noeviction'")
    );
    assert_eq!(c.call(&["CONFIG", "SET", "a"]), error("ERR wrong number of arguments for 'config|set' command"));
    assert_eq!(c.call(&["CONFIG", "RESETSTAT"]), OK);
}

#[test]
fn amalgam_changes_nothing_at_run_time() {
    // Amalgam's parameters are its command-line flags: a different value
    // is refused (restart with the flag), the current one accepted.
    let Some(server) = resp_private(&[]) else { return };
    let mut c = Resp::new(&server);
    assert_eq!(c.call(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]), OK);
    assert_eq!(
        c.call(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru", "databases", "5"]),
        failed("databases", "can't set immutable config")
    );
    assert_eq!(c.call(&["CONFIG", "SET", "maxmemory", "64mb"]), OK, "-m 64 is 64mb");
    assert_eq!(c.call(&["CONFIG", "SET", "appendonly", "yes"]), failed("appendonly", "can't set immutable config"));
}

/// The collection thresholds are settable at run time, under Redis 7's
/// names and their legacy ziplist aliases (which existing configs and
/// test suites set first thing), and a hash past the entry limit changes
/// form as Redis's does.
#[test]
fn collection_thresholds_are_settable() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let h = key("thresholds");
    assert_eq!(c.call(&["CONFIG", "SET", "hash-max-ziplist-entries", "4"]), OK);
    assert_eq!(
        c.call(&["CONFIG", "GET", "hash-max-listpack-entries"]),
        "*2\r\n$25\r\nhash-max-listpack-entries\r\n$1\r\n4\r\n"
    );
    for i in 0..4 {
        c.call(&["HSET", &h, &format!("f{i}"), "v"]);
    }
    assert_eq!(c.call(&["OBJECT", "ENCODING", &h]), bulk("listpack"));
    c.call(&["HSET", &h, "f4", "v"]);
    assert_eq!(c.call(&["OBJECT", "ENCODING", &h]), bulk("hashtable"));
    assert_eq!(c.call(&["HLEN", &h]), int(5));
    // Out of range: refused, nothing changed.
    assert_eq!(
        c.call(&["CONFIG", "SET", "hash-max-listpack-value", "-1"]),
        error(
            "ERR CONFIG SET failed (possibly related to argument 'hash-max-listpack-value') - argument must be a \
             memory value"
        )
    );
    assert_eq!(
        c.call(&["CONFIG", "SET", "hash-max-listpack-entries", "-1"]),
        error(
            "ERR CONFIG SET failed (possibly related to argument 'hash-max-listpack-entries') - argument must be \
             between 0 and 9223372036854775807 inclusive"
        )
    );
    assert_eq!(c.call(&["CONFIG", "SET", "hash-max-listpack-entries", "512"]), OK);
    assert_eq!(
        c.call(&["CONFIG", "GET", "hash-max-ziplist-entries"]),
        "*2\r\n$24\r\nhash-max-ziplist-entries\r\n$3\r\n512\r\n"
    );
    assert_eq!(c.call(&["DEL", &h]), int(1));
}

/// CONFIG GET answers a name asked for without a glob character as it was
/// typed (the first spelling when asked twice), and a glob's matches by
/// their own names; an empty memory value is 0, as Redis's `memtoull`
/// reads it.
#[test]
fn config_get_echoes_a_literal_name_and_an_empty_memory_value_is_zero() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    assert_eq!(
        c.call(&["CONFIG", "GET", "Hash-Max-Ziplist-Value"]),
        "*2\r\n$22\r\nHash-Max-Ziplist-Value\r\n$2\r\n64\r\n"
    );
    assert_eq!(
        c.call(&["CONFIG", "GET", "HASH-MAX-LISTPACK-VALUE", "hash-max-listpack-value"]),
        "*2\r\n$23\r\nHASH-MAX-LISTPACK-VALUE\r\n$2\r\n64\r\n"
    );
    assert_eq!(
        c.call(&["CONFIG", "GET", "HASH-MAX-LISTPACK-VAL*"]),
        "*2\r\n$23\r\nhash-max-listpack-value\r\n$2\r\n64\r\n"
    );
    // zset's: this file's other tests set hash thresholds at the same
    // time (tests run in parallel on one server).
    assert_eq!(c.call(&["CONFIG", "SET", "zset-max-listpack-value", ""]), OK);
    assert_eq!(
        c.call(&["CONFIG", "GET", "zset-max-listpack-value"]),
        "*2\r\n$23\r\nzset-max-listpack-value\r\n$1\r\n0\r\n"
    );
    assert_eq!(c.call(&["CONFIG", "SET", "zset-max-listpack-value", "7"]), OK);
    assert_eq!(c.call(&["CONFIG", "SET", "zset-max-listpack-value", "kb"]), OK);
    assert_eq!(
        c.call(&["CONFIG", "GET", "zset-max-listpack-value"]),
        "*2\r\n$23\r\nzset-max-listpack-value\r\n$1\r\n0\r\n"
    );
    assert_eq!(
        c.call(&["CONFIG", "SET", "hash-max-listpack-entries", ""]),
        error(
            "ERR CONFIG SET failed (possibly related to argument 'hash-max-listpack-entries') - argument couldn't be \
             parsed into an integer"
        )
    );
    assert_eq!(c.call(&["CONFIG", "SET", "zset-max-listpack-value", "64"]), OK);
}

/// CONFIG HELP and ACL HELP end as every Redis 7 HELP does.
#[test]
fn help_ends_with_prints_this_help() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    for cmd in ["CONFIG", "ACL"] {
        let help = c.call(&[cmd, "HELP"]);
        assert!(help.ends_with("+HELP\r\n+    Prints this help.\r\n"), "{cmd} HELP: {help}");
    }
}

/// Redis settings that change nothing in Amalgam (`accepted.rs`): each
/// shows Redis 7.0's default, is checked as Redis checks it, and shows
/// what was set. Every value set here is set back to its default.
#[test]
fn redis_settings_amalgam_keeps_are_checked_and_shown_as_redis() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let defaults = [
        ("hz", "10"),
        ("dynamic-hz", "yes"),
        ("active-expire-effort", "1"),
        ("activedefrag", "no"),
        ("lazyfree-lazy-eviction", "no"),
        ("lazyfree-lazy-expire", "no"),
        ("lazyfree-lazy-server-del", "no"),
        ("lazyfree-lazy-user-del", "no"),
        ("lazyfree-lazy-user-flush", "no"),
        ("replica-lazy-flush", "no"),
        ("list-compress-depth", "0"),
        ("maxmemory-clients", "0"),
        ("client-query-buffer-limit", "1073741824"),
        ("maxmemory-samples", "5"),
        ("maxmemory-eviction-tenacity", "10"),
        ("lfu-log-factor", "10"),
        ("lfu-decay-time", "1"),
        ("rdbcompression", "yes"),
        ("stop-writes-on-bgsave-error", "yes"),
        ("rdb-key-save-delay", "0"),
        ("key-load-delay", "0"),
        ("loading-process-events-interval-bytes", "2097152"),
        ("repl-diskless-sync", "yes"),
        ("repl-diskless-load", "disabled"),
        ("oom-score-adj", "no"),
        ("shutdown-timeout", "10"),
        ("latency-tracking", "yes"),
        ("latency-tracking-info-percentiles", "50 99 99.9"),
    ];
    for (name, default) in defaults {
        assert_eq!(c.config_get(name), default, "{name}");
    }
    // Redis keeps hz within [1, 500].
    assert_eq!(c.call(&["CONFIG", "SET", "hz", "0"]), OK);
    assert_eq!(c.config_get("hz"), "1");
    assert_eq!(c.call(&["CONFIG", "SET", "hz", "100000"]), OK);
    assert_eq!(c.config_get("hz"), "500");
    assert_eq!(
        c.call(&["CONFIG", "SET", "active-expire-effort", "11"]),
        failed("active-expire-effort", "argument must be between 1 and 10 inclusive")
    );
    assert_eq!(
        c.call(&["CONFIG", "SET", "lazyfree-lazy-user-del", "maybe"]),
        failed("lazyfree-lazy-user-del", "argument must be 'yes' or 'no'")
    );
    assert_eq!(c.call(&["CONFIG", "SET", "lazyfree-lazy-user-del", "YES", "list-compress-depth", "2"]), OK);
    assert_eq!(c.config_get("lazyfree-lazy-user-del"), "yes");
    assert_eq!(c.config_get("list-compress-depth"), "2");
    assert_eq!(c.call(&["CONFIG", "SET", "maxmemory-clients", "10%"]), OK);
    assert_eq!(c.config_get("maxmemory-clients"), "10%");
    assert_eq!(
        c.call(&["CONFIG", "SET", "maxmemory-clients", "101%"]),
        failed("maxmemory-clients", "percentage argument must be less or equal to 100")
    );
    assert_eq!(
        c.call(&["CONFIG", "SET", "maxmemory-clients", "abc"]),
        failed("maxmemory-clients", "argument must be a memory or percent value")
    );
    assert_eq!(c.call(&["CONFIG", "SET", "maxmemory-clients", "1mb", "client-query-buffer-limit", "2mb"]), OK);
    assert_eq!(c.config_get("maxmemory-clients"), "1048576");
    assert_eq!(c.config_get("client-query-buffer-limit"), "2097152");
    assert_eq!(
        c.call(&["CONFIG", "SET", "oom-score-adj", "maybe"]),
        failed("oom-score-adj", "argument(s) must be one of the following: no, yes, relative, absolute")
    );
    for (name, default) in defaults {
        assert_eq!(c.call(&["CONFIG", "SET", name, default]), OK, "{name}");
    }
}
