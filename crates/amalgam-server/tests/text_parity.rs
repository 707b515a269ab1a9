//! Corners where amalgam once answered differently from memcached 1.6,
//! found by running the same bytes at both (see `common/mod.rs`; this file
//! passes unchanged with `AMALGAM_TEST_BIN=/usr/bin/memcached`).

mod common;

use common::*;
use std::net::TcpStream;

/// Sends `req` (with `K` replaced by a fresh key) and asserts the exact
/// reply (with the same replacement).
#[track_caller]
fn check(c: &mut TcpStream, req: &str, want: &str) {
    let k = key("p");
    let req = req.replace('K', &k);
    let want = want.replace('K', &k);
    send(c, req.as_bytes());
    let got = read_n(c, want.len());
    assert_reply(&got, want.as_bytes());
}

/// memcached parses numbers with strtol/strtoul/strtoull (64-bit `long`):
/// a sign is allowed, and the 32-bit fields are truncated, not range-checked.
#[test]
fn numbers_are_parsed_like_memcached_safe_strtol() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    // flags: strtoul, truncated to 32 bits; a minus sign only where the
    // result looks negative.
    check(&mut c, "set K 4294967296 0 1\r\nx\r\nget K\r\n", "STORED\r\nVALUE K 0 1\r\nx\r\nEND\r\n");
    check(&mut c, "set K +7 0 1\r\nx\r\nget K\r\n", "STORED\r\nVALUE K 7 1\r\nx\r\nEND\r\n");
    check(&mut c, "set K -1 0 1\r\nx\r\n", "CLIENT_ERROR bad command line format\r\nERROR\r\n");
    check(&mut c, "set K 18446744073709551616 0 1\r\nx\r\n", "CLIENT_ERROR bad command line format\r\nERROR\r\n");
    // length: strtol truncated to int32; negative after truncation is refused.
    check(&mut c, "set K 0 0 4294967297\r\nx\r\nget K\r\n", "STORED\r\nVALUE K 0 1\r\nx\r\nEND\r\n");
    check(&mut c, "set K -0 -0 -0\r\n\r\nget K\r\n", "STORED\r\nVALUE K 0 0\r\n\r\nEND\r\n");
    check(&mut c, "set K 0 0 2147483648\r\n", "CLIENT_ERROR bad command line format\r\n");
    check(&mut c, "set K 0 0 4294967295\r\n", "CLIENT_ERROR bad command line format\r\n");
    // No room for the CRLF in an int: a format error, not "too large".
    check(&mut c, "set K 0 0 2147483646\r\n", "CLIENT_ERROR bad command line format\r\n");
    check(&mut c, "set K 0 0 2147483647 noreply\r\nget K\r\n", "END\r\n");
    check(&mut c, "set K 0 0 1x\r\n", "CLIENT_ERROR bad command line format\r\n");
    // exptime: 2147483648 wraps to a negative time (expired at once);
    // 4294967396 wraps to 100 seconds.
    check(&mut c, "set K 0 2147483648 1\r\nx\r\nget K\r\n", "STORED\r\nEND\r\n");
    check(&mut c, "set K 0 4294967396 1\r\nx\r\nget K\r\n", "STORED\r\nVALUE K 0 1\r\nx\r\nEND\r\n");
    check(&mut c, "set K 0 99999999999999999999 1\r\nx\r\n", "CLIENT_ERROR bad command line format\r\nERROR\r\n");
    check(&mut c, "set K 0 0 1\r\nx\r\ntouch K 2147483648\r\nget K\r\n", "STORED\r\nTOUCHED\r\nEND\r\n");
    check(&mut c, "set K 0 0 1\r\nx\r\ngat 2147483648 K\r\nget K\r\n", "STORED\r\nVALUE K 0 1\r\nx\r\nEND\r\nEND\r\n");
    // delta and cas unique: strtoull.
    check(&mut c, "set K 0 0 1\r\n5\r\nincr K +2\r\ndecr K -0\r\n", "STORED\r\n7\r\n7\r\n");
    check(&mut c, "incr K -1\r\n", "CLIENT_ERROR invalid numeric delta argument\r\n");
    check(&mut c, "incr K 18446744073709551616\r\n", "CLIENT_ERROR invalid numeric delta argument\r\n");
    check(&mut c, "set K 0 0 1\r\nx\r\ncas K 0 0 1 +1\r\ny\r\n", "STORED\r\nEXISTS\r\n");
    check(&mut c, "cas K 0 0 1 -1\r\ny\r\n", "CLIENT_ERROR bad command line format\r\nERROR\r\n");
}

/// incr/decr's delta is memcached's `safe_strtoull`: `strtoull` (leading
/// white space and one sign skipped, base 10, ERANGE refused), then the
/// token must end at white space or its end, and a minus sign is refused
/// only when the result looks negative as a signed number. A fifth token
/// that is not `noreply` is ignored (the reply is still sent).
#[test]
fn delta_is_parsed_like_memcached_safe_strtoull() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    check(&mut c, "set K 0 0 2\r\n10\r\nincr K 12 abc\r\n", "STORED\r\n22\r\n");
    check(&mut c, "set K 0 0 2\r\n10\r\nincr K +5\r\ndecr K +2\r\n", "STORED\r\n15\r\n13\r\n");
    // The tokenizer splits on spaces only: a tab or a vertical tab stays in
    // the token, where strtoull skips it in front and stops at it behind.
    check(&mut c, "set K 0 0 2\r\n10\r\nincr K \t5\r\nincr K 5\tx\r\nincr K \x0b1\r\n", "STORED\r\n15\r\n20\r\n21\r\n");
    // -0 is 0; -18446744073709551615 wraps to 1 and looks positive.
    check(&mut c, "set K 0 0 2\r\n10\r\nincr K -0\r\nincr K -18446744073709551615\r\n", "STORED\r\n10\r\n11\r\n");
    check(&mut c, "set K 0 0 1\r\n0\r\nincr K 0005\r\nincr K 18446744073709551615\r\n", "STORED\r\n5\r\n4\r\n");
    for bad in ["5x", "0x10", "1e3", "+", "-", "+-5", "-5", "18446744073709551616"] {
        check(
            &mut c,
            &format!("set K 0 0 1\r\n1\r\nincr K {bad}\r\ndecr K {bad}\r\n"),
            "STORED\r\nCLIENT_ERROR invalid numeric delta argument\r\nCLIENT_ERROR invalid numeric delta argument\r\n",
        );
    }
    // The delta is checked before the key is looked up.
    check(&mut c, "incr K x\r\nincr K 1\r\n", "CLIENT_ERROR invalid numeric delta argument\r\nNOT_FOUND\r\n");
}

/// A key over 250 bytes: touch, incr, decr and delete answer the format
/// error before looking at their other arguments, and noreply silences
/// it. (Not pipelined behind other commands with `get`: memcached's get
/// with a long key discards the unsent replies before it.)
#[test]
fn long_key_in_touch_incr_decr_delete() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    let long = "k".repeat(251);
    let err = "CLIENT_ERROR bad command line format\r\n";
    for cmd in ["touch", "incr", "decr"] {
        check(&mut c, &format!("{cmd} {long} 10\r\n{cmd} {long} 10 noreply\r\n{cmd} {long} x\r\n"), &err.repeat(2));
    }
    check(&mut c, &format!("delete {long}\r\ndelete {long} noreply\r\ndelete {long} 0\r\n"), &err.repeat(2));
    check(&mut c, &format!("touch {long}\r\ntouch {long} 1 2 3\r\n"), "ERROR\r\nERROR\r\n");
    // Still serving.
    check(&mut c, "set K 0 0 1\r\nx\r\ntouch K 10\r\n", "STORED\r\nTOUCHED\r\n");
}

/// An absolute exptime in the past (after the 30-day relative window)
/// expires at once; one far in the future does not.
#[test]
fn absolute_exptimes() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    check(&mut c, "set K 0 2592001 1\r\nx\r\nget K\r\n", "STORED\r\nEND\r\n");
    check(&mut c, &format!("set K 0 {} 1\r\nx\r\nget K\r\n", now - 10), "STORED\r\nEND\r\n");
    check(&mut c, &format!("set K 0 {} 1\r\nx\r\nget K\r\n", now + 3600), "STORED\r\nVALUE K 0 1\r\nx\r\nEND\r\n");
    // 99999999999 truncates to 1215752191 (2008): in the past.
    check(&mut c, "set K 0 99999999999 1\r\nx\r\nget K\r\n", "STORED\r\nEND\r\n");
}

/// memcached reads a command line as a C string: a NUL ends it.
#[test]
fn nul_ends_the_command_line() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    // "set K\0b 0 0 1" is "set K": too few tokens; the data line is then
    // a command of its own.
    check(&mut c, "set K\0b 0 0 1\r\nx\r\n", "ERROR\r\nERROR\r\n");
    check(&mut c, "set K 0 0 1\r\nx\r\nget K\0junk\r\n", "STORED\r\nVALUE K 0 1\r\nx\r\nEND\r\n");
    check(&mut c, "\0\r\n", "ERROR\r\n");
}

/// Keys are any bytes but space, CR/LF and NUL in the text protocol,
/// control characters included.
#[test]
fn control_characters_in_keys() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    check(
        &mut c,
        "set K\x01\x7f\t 0 0 1\r\nx\r\nget K\x01\x7f\t\r\n",
        "STORED\r\nVALUE K\x01\x7f\t 0 1\r\nx\r\nEND\r\n",
    );
    // \r inside a line is part of the key.
    check(&mut c, "set K\rb 0 0 1\r\nx\r\nget K\rb K\r\n", "STORED\r\nVALUE K\rb 0 1\r\nx\r\nEND\r\n");
}

/// A SET refused as too large drops the old value (memcached unlinks it,
/// noreply or not); add/replace/append/prepend/cas leave it.
#[test]
fn too_large_set_unlinks_the_old_value() {
    let Some(s) = Server::with_flags(&["-I", "512k"]) else { return };
    let mut c = s.connect();
    let big = "v".repeat(600 << 10);
    let too_large = "SERVER_ERROR object too large for cache\r\n";
    check(
        &mut c,
        &format!("set K 0 0 1\r\nx\r\nset K 0 0 614400\r\n{big}\r\nget K\r\n"),
        &format!("STORED\r\n{too_large}END\r\n"),
    );
    check(&mut c, &format!("set K 0 0 1\r\nx\r\nset K 0 0 614400 noreply\r\n{big}\r\nget K\r\n"), "STORED\r\nEND\r\n");
    for cmd in [
        "add K 0 0 614400",
        "replace K 0 0 614400",
        "append K 0 0 614400",
        "prepend K 0 0 614400",
        "cas K 0 0 614400 1",
    ] {
        check(
            &mut c,
            &format!("set K 0 0 1\r\nx\r\n{cmd}\r\n{big}\r\nget K\r\n"),
            &format!("STORED\r\n{too_large}VALUE K 0 1\r\nx\r\nEND\r\n"),
        );
    }
}

/// Every counter amalgam keeps moves exactly as memcached's does for the
/// same commands (gat/gats count as touches, not gets); `stats reset`
/// zeroes them.
#[test]
fn counters_move_like_memcached() {
    let Some(s) = Server::private() else { return };
    let mut c = s.connect();
    let seq = "set a 0 0 1\r\n1\r\nget a b\r\ngets a\r\ngat 0 a b\r\ngats 0 a\r\ntouch a 0\r\ntouch b 0\r\n\
               incr a 1\r\nincr b 1\r\ndecr a 1\r\ndecr b 1\r\ncas a 0 0 1 1\r\nx\r\ncas b 0 0 1 1\r\nx\r\n\
               add a 0 0 1\r\nx\r\nreplace b 0 0 1\r\nx\r\nappend a 0 0 1\r\nx\r\nprepend b 0 0 1\r\nx\r\n\
               delete a\r\ndelete a\r\nset e 0 -1 1\r\nx\r\nget e\r\nset f 0 0 1\r\nx\r\nflush_all\r\nget f\r\n\
               flush_all 0\r\nincr zz 1 noreply\r\nversion\r\n";
    send(&mut c, seq.as_bytes());
    let mut out = Vec::new();
    while !out.windows(8).any(|w| w == b"VERSION ") {
        let more = read_until(&mut c, b"\r\n");
        assert!(!more.is_empty(), "{}", show(&out));
        out.extend_from_slice(&more);
    }
    let m = stats_map(&mut c, "");
    let want = [
        ("cmd_get", 5),
        ("get_hits", 2),
        ("get_misses", 3),
        ("cmd_set", 9),
        ("cmd_flush", 2),
        ("cmd_touch", 5),
        ("touch_hits", 3),
        ("touch_misses", 2),
        ("delete_hits", 1),
        ("delete_misses", 1),
        ("incr_hits", 1),
        ("incr_misses", 2),
        ("decr_hits", 1),
        ("decr_misses", 1),
        ("cas_hits", 0),
        ("cas_misses", 1),
        ("cas_badval", 1),
        ("rejected_connections", 0),
        // Ours and the harness's readiness probe's "stats\r\n" too.
        ("bytes_read", (seq.len() + 2 * "stats\r\n".len()) as u64),
    ];
    for (name, v) in want {
        assert_eq!(num(&m, name), v, "stat {name}");
    }
    // The harness's readiness probe may not have been closed yet.
    assert!((1..=2).contains(&num(&m, "curr_connections")), "curr_connections {}", num(&m, "curr_connections"));
    // memcached links a new item for an incr/decr when the old one is
    // momentarily referenced elsewhere (its LRU threads), so total_items
    // (4 stores here) may count those too.
    assert!((4..=6).contains(&num(&m, "total_items")), "total_items {}", num(&m, "total_items"));
    assert_eq!(m["version"].split('.').next(), Some("1"), "{:?}", m["version"]);
    assert_eq!(num(&m, "pointer_size"), 64);
    assert!(num(&m, "bytes_written") >= out.len() as u64);
    // A hit on a live item, then the cas that matches.
    let v = String::from_utf8(request(&mut c, b"set h 0 0 1\r\n5\r\ngets h\r\n", b"END\r\n")).unwrap();
    let v = v.strip_prefix("STORED\r\n").unwrap_or_else(|| panic!("{v:?}"));
    let unique = v.lines().next().unwrap().rsplit(' ').next().unwrap().to_string();
    assert_eq!(line(&mut c, format!("cas h 0 0 1 {unique}\r\n6\r\n").as_bytes()), "STORED\r\n");
    let m = stats_map(&mut c, "");
    assert_eq!((num(&m, "cas_hits"), num(&m, "get_hits")), (1, 3));
    // (memcached counts flushed and expired items until its LRU threads or
    // a lookup reclaim them: curr_items is exact only for amalgam.)
    assert!(num(&m, "curr_items") >= 1);
    assert!(num(&m, "bytes") > 0);

    assert_eq!(line(&mut c, b"stats reset\r\n"), "RESET\r\n");
    let m = stats_map(&mut c, "");
    for name in ["cmd_get", "cmd_set", "get_hits", "get_misses", "cmd_touch", "cas_hits", "incr_misses", "total_items"]
    {
        assert_eq!(num(&m, name), 0, "{name} after stats reset");
    }
    // Gauges survive a reset.
    assert!(num(&m, "curr_items") >= 1);
    assert_eq!(line(&mut c, b"stats nonsense\r\n"), "ERROR\r\n");
}

/// `stats settings` names memcached's settings with the values given.
#[test]
fn stats_settings() {
    let Some(s) = Server::with_flags(&["-m", "32", "-c", "77", "-t", "3", "-I", "2m"]) else { return };
    let mut c = s.connect();
    let m = stats_map(&mut c, "settings");
    assert_eq!(num(&m, "maxbytes"), 32 << 20);
    assert_eq!(num(&m, "maxconns"), 77);
    assert_eq!(num(&m, "num_threads"), 3);
    assert_eq!(num(&m, "item_size_max"), 2 << 20);
    assert_eq!(num(&m, "tcpport"), u64::from(s.addr().port()));
    assert_eq!(num(&m, "udpport"), 0);
    assert_eq!(m["inter"], "127.0.0.1");
    assert_eq!(m["cas_enabled"], "yes");
    assert_eq!(m["flush_enabled"], "yes");
    assert!(m.contains_key("verbosity") && m.contains_key("evictions"));
    let g = stats_map(&mut c, "");
    assert_eq!((num(&g, "limit_maxbytes"), num(&g, "threads")), (32 << 20, 3));
}

/// A command line past 2048 bytes without a newline: memcached closes the
/// connection without a reply (a get/gets line may be longer).
#[test]
fn line_too_long_closes_silently() {
    let s = Server::start(&[]);
    for junk in ["x".repeat(2049), format!("set k 0 0 1{}", " ".repeat(3000)), "delete ".repeat(400)] {
        let mut c = s.connect();
        send(&mut c, junk.as_bytes());
        let got = read_to_close(&mut c).expect("the server did not close");
        assert_reply(&got, b"");
    }
    // 2048 bytes and a newline is just a line (an unknown command).
    let mut c = s.connect();
    check(&mut c, &format!("{}\r\n", "x".repeat(2048)), "ERROR\r\n");
    // A long get line waits for its end.
    let mut c = s.connect();
    send(&mut c, format!("get {}", "k ".repeat(2000)).as_bytes());
    check(&mut c, "K\r\n", "END\r\n");
}

/// A full cache that may not evict answers a store with memcached's
/// out-of-memory error and keeps what it has. (memcached needs -M for this
/// behaviour, amalgam --eviction none.)
#[test]
fn out_of_memory() {
    let memcached = binary().contains("memcached");
    let flags: &[&str] = if memcached { &["-m", "2", "-M"] } else { &["-m", "2", "--eviction", "none"] };
    let Some(s) = Server::with_flags(flags) else { return };
    let mut c = s.connect();
    let value = "x".repeat(100_000);
    let mut stored = 0;
    let refused = loop {
        let got = line(&mut c, format!("set oom{stored} 0 0 {}\r\n{value}\r\n", value.len()).as_bytes());
        if got != "STORED\r\n" {
            break got;
        }
        stored += 1;
        assert!(stored < 1000, "2 MB held {stored} values of 100 kB");
    };
    assert_eq!(refused, "SERVER_ERROR out of memory storing object\r\n");
    assert!(stored >= 5, "only {stored} values of 100 kB fit in 2 MB");
    let got = request(&mut c, b"get oom0\r\n", b"END\r\n");
    assert_reply(&got, format!("VALUE oom0 0 {}\r\n{value}\r\nEND\r\n", value.len()).as_bytes());
    // noreply silences it; the connection goes on.
    check(&mut c, &format!("set oomx 0 0 {} noreply\r\n{value}\r\nget oomx\r\n", value.len()), "END\r\n");
}

/// Time passing (the one sleep in this file): a 1-second TTL runs out, a
/// touch or a gat extends one.
#[test]
fn ttl_runs_out_touch_and_gat_extend_it() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    let setup = "set K_short 0 1 1\r\na\r\nset K_touched 0 1 1\r\nb\r\nset K_gatted 0 1 1\r\nc\r\n\
                 set K_forever 0 0 1\r\nd\r\ntouch K_touched 100\r\ngats 100 K_gatted\r\n";
    let k = key("ttl");
    let setup = setup.replace('K', &k);
    send(&mut c, setup.as_bytes());
    let got = String::from_utf8(read_until(&mut c, b"END\r\n")).unwrap();
    let want_head = format!("STORED\r\nSTORED\r\nSTORED\r\nSTORED\r\nTOUCHED\r\nVALUE {k}_gatted 0 1 ");
    assert!(got.starts_with(&want_head) && got.ends_with("\r\nc\r\nEND\r\n"), "{got:?}");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let got = request(&mut c, format!("get {k}_short {k}_touched {k}_gatted {k}_forever\r\n").as_bytes(), b"END\r\n");
    let want =
        format!("VALUE {k}_touched 0 1\r\nb\r\nVALUE {k}_gatted 0 1\r\nc\r\nVALUE {k}_forever 0 1\r\nd\r\nEND\r\n");
    assert_reply(&got, want.as_bytes());
}

/// memcached's delayed flush takes effect a second early (oldest_live is
/// realtime(delay) - 1): `flush_all 1` is immediate, `flush_all 100` is not.
#[test]
fn flush_all_delays() {
    let Some(s) = Server::private() else { return };
    let mut c = s.connect();
    let exact = |c: &mut TcpStream, req: &str, want: &str| {
        send(c, req.as_bytes());
        assert_reply(&read_n(c, want.len()), want.as_bytes());
    };
    exact(&mut c, "set a 0 0 1\r\nx\r\nflush_all 100\r\nget a\r\n", "STORED\r\nOK\r\nVALUE a 0 1\r\nx\r\nEND\r\n");
    // A later flush replaces the pending one.
    exact(&mut c, "flush_all 1\r\nget a\r\n", "OK\r\nEND\r\n");
    exact(&mut c, "set b 0 0 1\r\ny\r\nflush_all -1\r\nget b\r\n", "STORED\r\nOK\r\nEND\r\n");
    exact(&mut c, "set c 0 0 1\r\nz\r\nflush_all 0 noreply\r\nget c\r\n", "STORED\r\nEND\r\n");
}

/// incr, decr and ma read the stored value with strtoull, as memcached's
/// `safe_strtoull` does: leading whitespace and a sign are allowed, and
/// the number may be followed by whitespace or a NUL (the value is
/// rewritten in place, padded to its length, when the result is no
/// longer).
#[test]
fn counters_are_read_like_memcached_safe_strtoull() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    let nonnumeric = "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n";
    check(&mut c, "set K 0 0 3\r\n1 2\r\nincr K 1\r\nget K\r\n", "STORED\r\n2\r\nVALUE K 0 3\r\n2  \r\nEND\r\n");
    check(&mut c, "set K 0 0 2\r\n+5\r\nincr K 1\r\nget K\r\n", "STORED\r\n6\r\nVALUE K 0 2\r\n6 \r\nEND\r\n");
    check(&mut c, "set K 0 0 2\r\n\t7\r\nincr K 1\r\n", "STORED\r\n8\r\n");
    check(&mut c, "set K 0 0 2\r\n7\t\r\ndecr K 1\r\n", "STORED\r\n6\r\n");
    check(&mut c, "set K 0 0 2\r\n-0\r\nincr K 1\r\n", "STORED\r\n1\r\n");
    check(&mut c, "set K 0 0 3\r\n5\r\n\r\nincr K 1\r\n", "STORED\r\n6\r\n");
    check(&mut c, "set K 0 0 3\r\n1\x002\r\nincr K 1\r\n", "STORED\r\n2\r\n");
    check(&mut c, "set K 0 0 21\r\n-18446744073709551615\r\nincr K 1\r\n", "STORED\r\n2\r\n");
    check(&mut c, "set K 0 0 2\r\n-5\r\nincr K 1\r\n", &format!("STORED\r\n{nonnumeric}"));
    check(&mut c, "set K 0 0 20\r\n18446744073709551616\r\nincr K 1\r\n", &format!("STORED\r\n{nonnumeric}"));
    check(&mut c, "set K 0 0 3\r\n12a\r\nincr K 1\r\n", &format!("STORED\r\n{nonnumeric}"));
    check(&mut c, "set K 0 0 1\r\n \r\nincr K 1\r\n", &format!("STORED\r\n{nonnumeric}"));
    check(&mut c, "set K 0 0 2\r\n+5\r\nma K v\r\n", "STORED\r\nVA 1\r\n6\r\n");
}
