//! INFO errorstats, INFO stats' total_error_replies, and how INFO
//! commandstats counts refused, failed and queued commands, black-box.
//! Runs against amalgam and, in CI, against redis-server 7.0
//! (`AMALGAM_TEST_RESP_ADDR`), whose counts these are (Redis's
//! tests/unit/info.tcl has the same cases). One test: CONFIG RESETSTAT
//! resets the server's counters for every client.
mod common;
use common::resp::*;
use common::*;

/// The `errorstat_CODE` line's count, if there is one.
fn errorstat(c: &mut Resp, code: &str) -> Option<u64> {
    c.info_field("errorstats", &format!("errorstat_{code}"))
        .map(|v| v.strip_prefix("count=").unwrap_or_else(|| panic!("{code}: {v}")).parse().unwrap())
}

fn total(c: &mut Resp) -> u64 {
    c.info_field("stats", "total_error_replies").expect("total_error_replies").parse().unwrap()
}

/// `calls,rejected_calls,failed_calls` of one command's commandstats line.
fn cmdstat(c: &mut Resp, cmd: &str) -> (u64, u64, u64) {
    let Some(line) = c.info_field("commandstats", &format!("cmdstat_{cmd}")) else { return (0, 0, 0) };
    let field = |name: &str| -> u64 {
        line.split(',')
            .find_map(|kv| kv.strip_prefix(name).and_then(|v| v.strip_prefix('=')))
            .unwrap_or_else(|| panic!("{cmd}: {line}"))
            .parse()
            .unwrap()
    };
    (field("calls"), field("rejected_calls"), field("failed_calls"))
}

#[test]
fn error_replies_are_counted_by_code() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = format!("errorstats:{}", std::process::id());
    let (l, s) = (format!("{k}:l"), format!("{k}:s"));
    assert_eq!(c.call(&["DEL", &l, &s]).chars().next(), Some(':'));
    assert_eq!(c.call(&["RPUSH", &l, "a"]), int(1));
    assert_eq!(c.call(&["SET", &s, "1"]), "+OK\r\n");

    // Reset: nothing counted.
    assert_eq!(c.call(&["CONFIG", "RESETSTAT"]), "+OK\r\n");
    assert_eq!(total(&mut c), 0);
    assert_eq!(errorstat(&mut c, "ERR"), None);

    // An unknown command: ERR, and no commandstats row.
    assert!(c.call(&["NOSUCHCOMMAND", "x"]).starts_with("-ERR unknown command"));
    assert_eq!(errorstat(&mut c, "ERR"), Some(1));
    assert_eq!(total(&mut c), 1);

    // A wrong argument count: ERR, a rejected call.
    assert!(c.call(&["GET"]).starts_with("-ERR wrong number of arguments"));
    assert_eq!(errorstat(&mut c, "ERR"), Some(2));
    assert_eq!(cmdstat(&mut c, "get"), (0, 1, 0));

    // A command that fails while it runs: its code, a failed call.
    assert!(c.call(&["INCR", &l]).starts_with("-WRONGTYPE "));
    assert_eq!(errorstat(&mut c, "WRONGTYPE"), Some(1));
    assert_eq!(cmdstat(&mut c, "incr"), (1, 0, 1));

    // GETs pipelined, one of them on a list (amalgam batches them).
    let mut pipeline = Vec::new();
    for key in [&s, &l, &s, &l] {
        pipeline.extend(encode(&[b"GET", key.as_bytes()]));
    }
    c.send_raw(&pipeline);
    let replies: Vec<String> = (0..4).map(|_| c.reply()).collect();
    assert_eq!(replies[0], bulk("1"));
    assert!(replies[1].starts_with("-WRONGTYPE ") && replies[3].starts_with("-WRONGTYPE "), "{replies:?}");
    assert_eq!(errorstat(&mut c, "WRONGTYPE"), Some(3));
    assert_eq!(cmdstat(&mut c, "get"), (4, 1, 2));

    // Inside MULTI: a command refused while queuing is a rejected call
    // and its ERR counts, EXEC's abort counts as EXECABORT; a queued
    // command counts as a call when EXEC runs it, not when it is queued.
    assert_eq!(c.call(&["MULTI"]), "+OK\r\n");
    assert_eq!(c.call(&["INCR", &l]), "+QUEUED\r\n");
    assert!(c.call(&["SET", &s]).starts_with("-ERR wrong number of arguments"));
    assert!(c.call(&["EXEC"]).starts_with("-EXECABORT "));
    assert_eq!(errorstat(&mut c, "ERR"), Some(3));
    assert_eq!(errorstat(&mut c, "EXECABORT"), Some(1));
    assert_eq!(cmdstat(&mut c, "set"), (0, 1, 0));
    assert_eq!(cmdstat(&mut c, "incr"), (1, 0, 1));
    assert_eq!(cmdstat(&mut c, "exec"), (1, 0, 1));
    assert_eq!(c.call(&["MULTI"]), "+OK\r\n");
    assert_eq!(c.call(&["INCR", &l]), "+QUEUED\r\n");
    assert_eq!(c.call(&["GET", &s]), "+QUEUED\r\n");
    let exec = c.call(&["EXEC"]);
    assert!(exec.starts_with("*2\r\n-WRONGTYPE ") && exec.ends_with(&bulk("1")), "{exec}");
    assert_eq!(errorstat(&mut c, "WRONGTYPE"), Some(4));
    assert_eq!(cmdstat(&mut c, "incr"), (2, 0, 2));
    assert_eq!(cmdstat(&mut c, "get"), (5, 1, 2));
    assert_eq!(cmdstat(&mut c, "exec"), (2, 0, 1));
    assert_eq!(cmdstat(&mut c, "multi"), (2, 0, 0));

    // A wrong password: WRONGPASS, a failed call of AUTH.
    assert!(c.call(&["AUTH", "nosuchuser", "pw"]).starts_with("-WRONGPASS "));
    assert_eq!(errorstat(&mut c, "WRONGPASS"), Some(1));
    assert_eq!(cmdstat(&mut c, "auth"), (1, 0, 1));

    // Refused by ACL: NOPERM, a rejected call.
    let user = format!("errorstats-{}", std::process::id());
    assert_eq!(c.call(&["ACL", "SETUSER", &user, "on", ">pw", "~cached:*", "+get", "+info"]), "+OK\r\n");
    let mut d = Resp::new(&server);
    assert_eq!(d.call(&["AUTH", &user, "pw"]), "+OK\r\n");
    assert!(d.call(&["SET", "a", "b"]).starts_with("-NOPERM "));
    assert!(d.call(&["GET", "notcached"]).starts_with("-NOPERM "));
    assert_eq!(errorstat(&mut c, "NOPERM"), Some(2));
    assert_eq!(cmdstat(&mut c, "set"), (0, 2, 0));
    assert_eq!(cmdstat(&mut c, "get"), (5, 2, 2));
    drop(d);
    assert_eq!(c.call(&["ACL", "DELUSER", &user]), int(1));

    // A protocol error, then the connection is closed.
    let mut e = Resp::new(&server);
    assert_eq!(e.call_raw(b"*1\r\n$abc\r\n"), "-ERR Protocol error: invalid bulk length\r\n");
    assert!(e.closed());
    assert_eq!(errorstat(&mut c, "ERR"), Some(4));

    // The total is every error reply; the codes are listed in byte order.
    assert_eq!(total(&mut c), 4 + 1 + 4 + 1 + 2);
    let section = c.call(&["INFO", "errorstats"]);
    let codes: Vec<&str> =
        section.lines().filter_map(|l| l.strip_prefix("errorstat_").and_then(|l| l.split(':').next())).collect();
    assert_eq!(codes, ["ERR", "EXECABORT", "NOPERM", "WRONGPASS", "WRONGTYPE"], "{section}");
    // Errorstats is one of INFO's default sections; commandstats is not.
    let default = c.call(&["INFO"]);
    assert!(default.contains("# Errorstats\r\nerrorstat_ERR:count=4\r\n"), "{default}");
    assert!(!default.contains("# Commandstats"));

    // CONFIG RESETSTAT forgets them.
    assert_eq!(c.call(&["CONFIG", "RESETSTAT"]), "+OK\r\n");
    assert_eq!(total(&mut c), 0);
    assert_eq!(errorstat(&mut c, "ERR"), None);
    assert_eq!(c.call(&["DEL", &l, &s]), int(2));
}
