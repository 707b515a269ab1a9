//! SLOWLOG, INFO commandstats and INFO latencystats, black-box: Redis 7's
//! entry layout and truncation rules, its counting of calls, rejected and
//! failed calls (a pipelined run of GETs included), CONFIG RESETSTAT, and
//! the slow log's two parameters. Runs against amalgam and, in CI, against
//! redis-server 7.0 (`AMALGAM_TEST_RESP_ADDR`): every expectation here is
//! Redis's own. The tests change server-wide settings and counters, so
//! they take turns ([`TURN`]) and put the settings back when done.
mod common;
use common::resp::*;
use common::*;
use std::sync::Mutex;

/// One test at a time: they reset and read the same server's counters.
static TURN: Mutex<()> = Mutex::new(());

/// Puts the slow log's settings back as they were when made.
struct Restore {
    server: Option<Server>,
    slower_than: String,
    max_len: String,
}

impl Restore {
    fn new(server: Server) -> Restore {
        let mut c = Resp::new(&server);
        let slower_than = c.config_get("slowlog-log-slower-than");
        let max_len = c.config_get("slowlog-max-len");
        Restore { server: Some(server), slower_than, max_len }
    }

    fn server(&self) -> &Server {
        self.server.as_ref().unwrap()
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        let mut c = Resp::new(self.server());
        c.call(&["CONFIG", "SET", "slowlog-log-slower-than", &self.slower_than, "slowlog-max-len", &self.max_len]);
        c.call(&["SLOWLOG", "RESET"]);
    }
}

fn now_unix() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64
}

#[test]
fn slowlog_entries_are_redis_7s() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let Some(server) = resp_server() else { return };
    let restore = Restore::new(server);
    let mut c = Resp::new(restore.server());
    let addr = c.s.local_addr().unwrap().to_string();
    assert_eq!(c.config_get("slowlog-max-len"), "128");
    assert_eq!(c.call(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]), OK);
    assert_eq!(c.call(&["SLOWLOG", "RESET"]), OK);
    assert_eq!(c.call(&["CLIENT", "SETNAME", "slowlog-test"]), OK);
    let long = "k".repeat(200);
    assert_eq!(c.call(&["SET", &long, "v"]), OK);
    let keys: Vec<String> = (1..=40).map(|i| format!("slowlog:{i}")).collect();
    let mut del = vec!["DEL"];
    del.extend(keys.iter().map(|k| k.as_str()));
    assert_eq!(c.call(&del), int(0));
    assert!(c.call(&["AUTH", "secret"]).starts_with("-ERR AUTH"), "no password is set");
    assert_eq!(c.call(&["DEL", &long]), int(1));

    let got = call(&mut c, &["SLOWLOG", "GET", "5"]);
    let entries = got.array();
    assert_eq!(entries.len(), 5);
    let argv = |e: &V| -> Vec<String> { e.array()[3].array().iter().map(|a| a.bulk().to_string()).collect() };
    // Newest first.
    assert_eq!(argv(&entries[0]), ["DEL".to_string(), format!("{}... (72 more bytes)", "k".repeat(128))]);
    assert_eq!(argv(&entries[1]), ["AUTH", "(redacted)"]);
    let mut want: Vec<String> = vec!["DEL".into()];
    want.extend(keys[..30].iter().cloned());
    want.push("... (10 more arguments)".into());
    assert_eq!(argv(&entries[2]), want, "32 kept, the last saying how many more");
    assert_eq!(argv(&entries[3])[0], "SET");
    assert_eq!(argv(&entries[4]), ["CLIENT", "SETNAME", "slowlog-test"]);
    let first_id = entries[4].array()[0].int();
    for (i, e) in entries.iter().enumerate() {
        let f = e.array();
        assert_eq!(f.len(), 6, "id, time, duration, argv, address, name: {e:?}");
        assert_eq!(f[0].int(), first_id + 4 - i as i64, "ids count up, newest first");
        assert!((f[1].int() - now_unix()).abs() <= 5, "unix time: {e:?}");
        assert!(f[2].int() >= 0);
        assert_eq!(f[4].bulk(), addr);
        // The name as it is when the entry is made: set by CLIENT SETNAME
        // itself, so its own entry has it too.
        assert_eq!(f[5].bulk(), "slowlog-test");
    }
    // SLOWLOG RESET and the six commands since, SLOWLOG GET included.
    assert_eq!(c.call(&["SLOWLOG", "LEN"]), int(7));
    assert_eq!(call(&mut c, &["SLOWLOG", "GET"]).array().len(), 8, "10 by default, 8 there");
    assert_eq!(call(&mut c, &["SLOWLOG", "GET", "-1"]).array().len(), 9, "all");
    assert_eq!(c.call(&["SLOWLOG", "GET", "0"]), "*0\r\n");
    let count_err = error("ERR count should be greater than or equal to -1");
    assert_eq!(c.call(&["SLOWLOG", "GET", "-2"]), count_err);
    assert_eq!(c.call(&["SLOWLOG", "GET", "many"]), count_err);
    assert_eq!(c.call(&["SLOWLOG", "LEN", "x"]), error("ERR wrong number of arguments for 'slowlog|len' command"));
    assert_eq!(c.call(&["SLOWLOG"]), error("ERR wrong number of arguments for 'slowlog' command"));
    assert_eq!(c.call(&["SLOWLOG", "nosuch"]), error("ERR unknown subcommand 'nosuch'. Try SLOWLOG HELP."));
    let help: Vec<String> = call(&mut c, &["SLOWLOG", "HELP"])
        .array()
        .iter()
        .map(|l| match l {
            V::Simple(s) => s.clone(),
            v => panic!("{v:?}"),
        })
        .collect();
    assert_eq!(help[0], "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
    assert_eq!(help[1], "GET [<count>]");
    assert_eq!(help.len(), 12);
    assert_eq!(help[11], "    Prints this help.");

    // The length is kept at slowlog-max-len, trimmed when an entry comes.
    assert_eq!(c.call(&["CONFIG", "SET", "slowlog-max-len", "2"]), OK);
    assert_eq!(c.call(&["PING"]), "+PONG\r\n");
    assert_eq!(c.call(&["SLOWLOG", "LEN"]), int(2));
    // -1 logs nothing.
    assert_eq!(c.call(&["CONFIG", "SET", "slowlog-log-slower-than", "-1"]), OK);
    assert_eq!(c.call(&["SLOWLOG", "RESET"]), OK);
    assert_eq!(c.call(&["PING"]), "+PONG\r\n");
    assert_eq!(c.call(&["SLOWLOG", "LEN"]), int(0));
    assert_eq!(c.config_get("slowlog-log-slower-than"), "-1");
    // A threshold no command reaches logs nothing either.
    assert_eq!(c.call(&["CONFIG", "SET", "slowlog-log-slower-than", "1000000000"]), OK);
    assert_eq!(c.call(&["PING"]), "+PONG\r\n");
    assert_eq!(c.call(&["SLOWLOG", "LEN"]), int(0));
    let failed = |name: &str, why: &str| {
        error(&format!("ERR CONFIG SET failed (possibly related to argument '{name}') - {why}"))
    };
    assert_eq!(
        c.call(&["CONFIG", "SET", "slowlog-log-slower-than", "-2"]),
        failed("slowlog-log-slower-than", "argument must be between -1 and 9223372036854775807 inclusive")
    );
    assert_eq!(
        c.call(&["CONFIG", "SET", "slowlog-max-len", "-1"]),
        failed("slowlog-max-len", "argument must be between 0 and 9223372036854775807 inclusive")
    );
    assert_eq!(
        c.call(&["CONFIG", "SET", "slowlog-max-len", "x"]),
        failed("slowlog-max-len", "argument couldn't be parsed into an integer")
    );
}

/// INFO commandstats as (name, [calls, usec, rejected, failed], usec_per_call).
fn commandstats(c: &mut Resp) -> Vec<(String, [u64; 4], String)> {
    let info = call(c, &["INFO", "commandstats"]);
    let text = info.bulk();
    let mut lines = text.split("\r\n").filter(|l| !l.is_empty());
    assert_eq!(lines.next(), Some("# Commandstats"));
    lines
        .map(|l| {
            let (name, fields) = l.strip_prefix("cmdstat_").and_then(|l| l.split_once(':')).unwrap();
            let f: Vec<(&str, &str)> = fields.split(',').map(|kv| kv.split_once('=').unwrap()).collect();
            let keys: Vec<&str> = f.iter().map(|(k, _)| *k).collect();
            assert_eq!(keys, ["calls", "usec", "usec_per_call", "rejected_calls", "failed_calls"], "{l}");
            let n = |i: usize| f[i].1.parse::<u64>().unwrap_or_else(|_| panic!("{l}"));
            (name.to_string(), [n(0), n(1), n(3), n(4)], f[2].1.to_string())
        })
        .collect()
}

#[test]
fn commandstats_count_calls_rejections_and_failures() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (k, l) = ("cmdstats:k", "cmdstats:l");
    c.call(&["DEL", k, l]);
    assert_eq!(c.call(&["CONFIG", "RESETSTAT"]), OK);
    assert_eq!(c.call(&["SET", k, "v"]), OK);
    assert_eq!(c.call(&["SET", k, "v"]), OK);
    assert_eq!(c.call(&["GET", k]), bulk("v"));
    assert_eq!(c.call(&["GET"]), error("ERR wrong number of arguments for 'get' command"));
    assert_eq!(c.call(&["LPUSH", l, "x"]), int(1));
    assert!(c.call(&["GET", l]).starts_with("-WRONGTYPE"));
    // A pipelined run of GETs and an MGET, in one write.
    let mut pipeline = encode(&[b"GET", k.as_bytes()]);
    pipeline.extend(encode(&[b"GET", k.as_bytes()]));
    pipeline.extend(encode(&[b"MGET", k.as_bytes(), l.as_bytes()]));
    c.send_raw(&pipeline);
    assert_eq!(c.reply(), bulk("v"));
    assert_eq!(c.reply(), bulk("v"));
    assert_eq!(c.reply(), format!("*2\r\n{}$-1\r\n", bulk("v")));
    // Unknown subcommands count nowhere; a container without one is
    // rejected under its own name.
    assert!(c.call(&["CONFIG", "NOSUCH"]).starts_with("-ERR unknown subcommand"));
    assert!(c.call(&["CONFIG"]).starts_with("-ERR wrong number of arguments"));
    assert!(c.call(&["NOSUCHCOMMAND"]).starts_with("-ERR unknown command"));

    let stats = commandstats(&mut c);
    let row = |name: &str| stats.iter().find(|(n, _, _)| n == name).map(|(_, f, _)| *f);
    let calls = |name: &str| row(name).map(|[calls, _, rejected, failed]| [calls, rejected, failed]);
    assert_eq!(calls("set"), Some([2, 0, 0]));
    assert_eq!(calls("get"), Some([4, 1, 1]), "1 + WRONGTYPE + 2 pipelined; 1 rejected; 1 failed");
    assert_eq!(calls("mget"), Some([1, 0, 0]));
    assert_eq!(calls("lpush"), Some([1, 0, 0]));
    assert_eq!(calls("config"), Some([0, 1, 0]));
    assert_eq!(calls("config|resetstat"), Some([1, 0, 0]));
    let mut names: Vec<&str> = stats.iter().map(|(n, _, _)| n.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["config", "config|resetstat", "get", "lpush", "mget", "set"], "INFO counts after it runs");
    for (name, [calls, usec, _, _], per_call) in &stats {
        let (whole, frac) = per_call.split_once('.').unwrap_or_else(|| panic!("{name}: {per_call}"));
        assert_eq!(frac.len(), 2, "{name}: usec_per_call with two decimals: {per_call}");
        assert!(whole.parse::<u64>().is_ok());
        let want = if *calls == 0 { 0.0 } else { *usec as f64 / *calls as f64 };
        assert!((per_call.parse::<f64>().unwrap() - want).abs() <= 0.005, "{name}: {per_call} is usec/calls");
    }

    // latencystats: the commands that ran (INFO commandstats now too).
    let info = call(&mut c, &["INFO", "latencystats"]);
    let text = info.bulk();
    let mut lines = text.split("\r\n").filter(|l| !l.is_empty());
    assert_eq!(lines.next(), Some("# Latencystats"));
    let mut seen: Vec<String> = Vec::new();
    for l in lines {
        let (name, fields) = l.strip_prefix("latency_percentiles_usec_").and_then(|l| l.split_once(':')).unwrap();
        let f: Vec<(&str, f64)> = fields
            .split(',')
            .map(|kv| {
                let (k, v) = kv.split_once('=').unwrap();
                let (_, frac) = v.split_once('.').unwrap_or_else(|| panic!("{l}"));
                assert_eq!(frac.len(), 3, "three decimals: {l}");
                (k, v.parse().unwrap())
            })
            .collect();
        let keys: Vec<&str> = f.iter().map(|(k, _)| *k).collect();
        assert_eq!(keys, ["p50", "p99", "p99.9"], "{l}");
        assert!(f[0].1 > 0.0 && f[0].1 <= f[1].1 && f[1].1 <= f[2].1, "{l}");
        seen.push(name.to_string());
    }
    seen.sort_unstable();
    assert_eq!(seen, ["config|resetstat", "get", "info", "lpush", "mget", "set"], "rejected calls have no latency");

    // INFO's default leaves both out; all has them, in Redis's order.
    let default = call(&mut c, &["INFO"]);
    assert!(!default.bulk().contains("# Commandstats") && !default.bulk().contains("# Latencystats"));
    let all = call(&mut c, &["INFO", "all"]);
    let at = |s: &str| all.bulk().find(s).unwrap_or_else(|| panic!("INFO all lacks {s}"));
    assert!(at("# CPU") < at("# Commandstats") && at("# Commandstats") < at("# Latencystats"));
    assert!(at("# Latencystats") < at("# Keyspace"));

    // RESETSTAT forgets them all; its own call is counted after.
    assert_eq!(c.call(&["CONFIG", "RESETSTAT"]), OK);
    let stats = commandstats(&mut c);
    assert_eq!(stats.len(), 1, "{stats:?}");
    assert_eq!((stats[0].0.as_str(), [stats[0].1[0], stats[0].1[2], stats[0].1[3]]), ("config|resetstat", [1, 0, 0]));
    c.call(&["DEL", k, l]);
}

#[test]
fn slowlog_hides_the_values_of_sensitive_settings() {
    // Redis's SENSITIVE_CONFIG settings (requirepass, masterauth,
    // masteruser): CONFIG SET logs their values as "(redacted)", the
    // other pairs of the same call as given.
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let Some(server) = resp_server() else { return };
    let restore = Restore::new(server);
    let mut c = Resp::new(restore.server());
    let (auth, user) = (c.config_get("masterauth"), c.config_get("masteruser"));
    assert_eq!(c.call(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]), OK);
    assert_eq!(c.call(&["SLOWLOG", "RESET"]), OK);
    let set = ["CONFIG", "SET", "masterauth", "s3cret", "slowlog-max-len", "128", "MASTERUSER", "bob"];
    assert_eq!(c.call(&set), OK);
    assert_eq!(c.config_get("masterauth"), "s3cret", "CONFIG GET still shows it, as Redis's does");
    assert_eq!(c.config_get("masteruser"), "bob");
    let got = call(&mut c, &["SLOWLOG", "GET", "3"]);
    let logged = got
        .array()
        .iter()
        .map(|e| e.array()[3].array().iter().map(|a| a.bulk().to_string()).collect::<Vec<_>>())
        .find(|a| a.len() == set.len())
        .expect("the CONFIG SET entry");
    assert_eq!(
        logged,
        ["CONFIG", "SET", "masterauth", "(redacted)", "slowlog-max-len", "128", "MASTERUSER", "(redacted)"]
    );
    assert_eq!(c.call(&["CONFIG", "SET", "masterauth", &auth, "masteruser", &user]), OK);
}
