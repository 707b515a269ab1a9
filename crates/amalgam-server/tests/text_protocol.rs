//! memcached's text protocol, black-box, byte for byte: every command,
//! `noreply`, every error line. Runs against amalgam by default and against
//! any server named by AMALGAM_TEST_BIN / AMALGAM_TEST_ADDR (see
//! `common/mod.rs`); CI also runs it against Debian's memcached 1.6.
mod common;
use common::*;
use std::io::Write;

/// Keys unique to one test, so tests can share an external server.
fn k(test: &str, name: &str) -> String {
    format!("{test}:{name}")
}

#[test]
fn set_get_gets() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    let a = k("sgg", "a");
    exchange(&mut c, format!("set {a} 5 0 3\r\nabc\r\n").as_bytes(), b"STORED\r\n");
    exchange(&mut c, format!("get {a}\r\n").as_bytes(), format!("VALUE {a} 5 3\r\nabc\r\nEND\r\n").as_bytes());
    let out = String::from_utf8(request(&mut c, format!("gets {a}\r\n").as_bytes(), b"END\r\n")).unwrap();
    let head = out.lines().next().unwrap();
    let prefix = format!("VALUE {a} 5 3 ");
    assert!(head.starts_with(&prefix), "{out:?}");
    let cas: u64 = head[prefix.len()..].parse().unwrap();
    assert!(out.ends_with("\r\nabc\r\nEND\r\n"), "{out:?}");
    // A miss is just END; an empty value is a valid value.
    exchange(&mut c, format!("get {a}:missing\r\n").as_bytes(), b"END\r\n");
    exchange(&mut c, format!("set {a} 0 0 0\r\n\r\n").as_bytes(), b"STORED\r\n");
    exchange(&mut c, format!("get {a}\r\n").as_bytes(), format!("VALUE {a} 0 0\r\n\r\nEND\r\n").as_bytes());
    // Flags are 32-bit unsigned.
    exchange(&mut c, format!("set {a} 4294967295 0 1\r\nx\r\n").as_bytes(), b"STORED\r\n");
    exchange(&mut c, format!("get {a}\r\n").as_bytes(), format!("VALUE {a} 4294967295 1\r\nx\r\nEND\r\n").as_bytes());
    let out = String::from_utf8(request(&mut c, format!("gets {a}\r\n").as_bytes(), b"END\r\n")).unwrap();
    let cas2: u64 = out.lines().next().unwrap().rsplit(' ').next().unwrap().parse().unwrap();
    assert_ne!(cas, cas2, "every store gives a new CAS unique");
}

#[test]
fn multi_get_and_pipelining() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    let mut req = Vec::new();
    for i in 0..100 {
        req.extend_from_slice(
            format!("set {} {i} 0 {}\r\nv{i}\r\n", k("mg", &i.to_string()), format!("v{i}").len()).as_bytes(),
        );
    }
    exchange(&mut c, &req, "STORED\r\n".repeat(100).as_bytes());
    // One multi-get of 100 keys with misses interleaved.
    let mut line = String::from("get");
    let mut want = String::new();
    for i in 0..100 {
        line.push_str(&format!(" {} {}", k("mg", &i.to_string()), k("mg", &format!("none{i}"))));
        want.push_str(&format!("VALUE {} {i} {}\r\nv{i}\r\n", k("mg", &i.to_string()), format!("v{i}").len()));
    }
    line.push_str("\r\n");
    want.push_str("END\r\n");
    exchange(&mut c, line.as_bytes(), want.as_bytes());
    // Many pipelined commands of different kinds in one write, answered in order.
    let x = k("mg", "x");
    let req =
        format!("get {x}\r\nset {x} 0 0 1\r\n1\r\nincr {x} 5\r\nget {x}\r\ndelete {x}\r\ndelete {x}\r\nversion\r\n");
    c.write_all(req.as_bytes()).unwrap();
    let out = String::from_utf8(read_until(&mut c, b"\r\n").into_iter().collect()).unwrap();
    let mut all = out;
    while !all.contains("VERSION ") || !all.ends_with("\r\n") {
        all.push_str(&String::from_utf8(read_until(&mut c, b"\r\n")).unwrap());
    }
    let want = format!("END\r\nSTORED\r\n6\r\nVALUE {x} 0 1\r\n6\r\nEND\r\nDELETED\r\nNOT_FOUND\r\nVERSION ");
    assert!(all.starts_with(&want), "{all:?}");
}

/// Storage commands and gets of one key interleaved in one write, with a
/// refused data block among them: every reply in order, and every get sees
/// the stores before it (amalgam runs a pipeline's storage commands as a
/// prefetched run and its gets as a batch; a run must end where the other
/// kind starts).
#[test]
fn pipelined_stores_and_gets_of_one_key_answer_in_order() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    let a = k("psg", "a");
    let b = k("psg", "b");
    let req = format!(
        "set {a} 1 0 2\r\nv1\r\nget {a}\r\nset {a} 2 0 2\r\nv2\r\nset {a} 3 0 2\r\nv3\r\nget {a} {b}\r\n\
         add {a} 0 0 2\r\nv4\r\nreplace {a} 4 0 2\r\nv5\r\nappend {a} 0 0 1\r\nx\r\nprepend {a} 0 0 1\r\ny\r\n\
         set {b} 0 0 1\r\nb\r\nget {b} {a}\r\nset {a} 0 0 2\r\ntoolong\r\nget {a}\r\nset {a} 5 0 2\r\nv6\r\n\
         delete {b}\r\nreplace {b} 0 0 1\r\nz\r\nget {a} {b}\r\n"
    );
    let want = format!(
        "STORED\r\nVALUE {a} 1 2\r\nv1\r\nEND\r\nSTORED\r\nSTORED\r\nVALUE {a} 3 2\r\nv3\r\nEND\r\n\
         NOT_STORED\r\nSTORED\r\nSTORED\r\nSTORED\r\n\
         STORED\r\nVALUE {b} 0 1\r\nb\r\nVALUE {a} 4 4\r\nyv5x\r\nEND\r\nCLIENT_ERROR bad data chunk\r\n\
         ERROR\r\nVALUE {a} 4 4\r\nyv5x\r\nEND\r\nSTORED\r\n\
         DELETED\r\nNOT_STORED\r\nVALUE {a} 5 2\r\nv6\r\nEND\r\n"
    );
    exchange(&mut c, req.as_bytes(), want.as_bytes());
}

#[test]
fn add_replace_append_prepend() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    let a = k("arp", "a");
    exchange(&mut c, format!("add {a} 1 0 1\r\nx\r\n").as_bytes(), b"STORED\r\n");
    exchange(&mut c, format!("add {a} 1 0 1\r\ny\r\n").as_bytes(), b"NOT_STORED\r\n");
    exchange(&mut c, format!("replace {a}:no 1 0 1\r\ny\r\n").as_bytes(), b"NOT_STORED\r\n");
    exchange(&mut c, format!("replace {a} 2 0 2\r\nyy\r\n").as_bytes(), b"STORED\r\n");
    exchange(&mut c, format!("append {a} 9 0 3\r\nEND\r\n").as_bytes(), b"STORED\r\n");
    exchange(&mut c, format!("prepend {a} 9 0 1\r\n<\r\n").as_bytes(), b"STORED\r\n");
    // append/prepend keep the item's flags and ignore theirs.
    exchange(&mut c, format!("get {a}\r\n").as_bytes(), format!("VALUE {a} 2 6\r\n<yyEND\r\nEND\r\n").as_bytes());
    exchange(&mut c, format!("append {a}:no 0 0 1\r\nz\r\n").as_bytes(), b"NOT_STORED\r\n");
    exchange(&mut c, format!("prepend {a}:no 0 0 1\r\nz\r\n").as_bytes(), b"NOT_STORED\r\n");
}

#[test]
fn cas_command() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    let a = k("cas", "a");
    exchange(&mut c, format!("cas {a} 0 0 1 1\r\nx\r\n").as_bytes(), b"NOT_FOUND\r\n");
    exchange(&mut c, format!("set {a} 0 0 1\r\nx\r\n").as_bytes(), b"STORED\r\n");
    let out = String::from_utf8(request(&mut c, format!("gets {a}\r\n").as_bytes(), b"END\r\n")).unwrap();
    let cas: u64 = out.lines().next().unwrap().rsplit(' ').next().unwrap().parse().unwrap();
    exchange(&mut c, format!("cas {a} 0 0 1 {}\r\ny\r\n", cas + 1).as_bytes(), b"EXISTS\r\n");
    exchange(&mut c, format!("cas {a} 7 0 1 {cas}\r\ny\r\n").as_bytes(), b"STORED\r\n");
    exchange(&mut c, format!("cas {a} 7 0 1 {cas}\r\nz\r\n").as_bytes(), b"EXISTS\r\n");
    exchange(&mut c, format!("get {a}\r\n").as_bytes(), format!("VALUE {a} 7 1\r\ny\r\nEND\r\n").as_bytes());
    exchange(&mut c, format!("cas {a} 0 0 1\r\n").as_bytes(), b"ERROR\r\n");
    exchange(&mut c, format!("cas {a} 0 0 1 abc\r\n").as_bytes(), b"CLIENT_ERROR bad command line format\r\n");
}

#[test]
fn incr_decr() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    let n = k("arith", "n");
    exchange(&mut c, format!("incr {n} 1\r\n").as_bytes(), b"NOT_FOUND\r\n");
    exchange(&mut c, format!("decr {n} 1\r\n").as_bytes(), b"NOT_FOUND\r\n");
    exchange(&mut c, format!("set {n} 3 0 2\r\n10\r\n").as_bytes(), b"STORED\r\n");
    exchange(&mut c, format!("incr {n} 5\r\n").as_bytes(), b"15\r\n");
    exchange(&mut c, format!("decr {n} 6\r\n").as_bytes(), b"9\r\n");
    // memcached keeps the length when the number shrinks, padding with a space.
    exchange(&mut c, format!("get {n}\r\n").as_bytes(), format!("VALUE {n} 3 2\r\n9 \r\nEND\r\n").as_bytes());
    exchange(&mut c, format!("decr {n} 100\r\n").as_bytes(), b"0\r\n");
    exchange(&mut c, format!("set {n} 0 0 20\r\n18446744073709551615\r\n").as_bytes(), b"STORED\r\n");
    exchange(&mut c, format!("incr {n} 2\r\n").as_bytes(), b"1\r\n");
    exchange(&mut c, format!("incr {n} 18446744073709551615\r\n").as_bytes(), b"0\r\n");
    exchange(
        &mut c,
        format!("incr {n} 18446744073709551616\r\n").as_bytes(),
        b"CLIENT_ERROR invalid numeric delta argument\r\n",
    );
    exchange(&mut c, format!("incr {n} -1\r\n").as_bytes(), b"CLIENT_ERROR invalid numeric delta argument\r\n");
    exchange(&mut c, format!("incr {n} abc\r\n").as_bytes(), b"CLIENT_ERROR invalid numeric delta argument\r\n");
    exchange(&mut c, format!("set {n} 0 0 3\r\nabc\r\n").as_bytes(), b"STORED\r\n");
    exchange(
        &mut c,
        format!("incr {n} 1\r\n").as_bytes(),
        b"CLIENT_ERROR cannot increment or decrement non-numeric value\r\n",
    );
    exchange(
        &mut c,
        format!("incr {n} 1 noreply\r\nget {n}\r\n").as_bytes(),
        format!("VALUE {n} 0 3\r\nabc\r\nEND\r\n").as_bytes(),
    );
    exchange(&mut c, format!("incr {n}\r\n").as_bytes(), b"ERROR\r\n");
}

#[test]
fn touch_gat_gats() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    let a = k("touch", "a");
    exchange(&mut c, format!("touch {a} 10\r\n").as_bytes(), b"NOT_FOUND\r\n");
    exchange(&mut c, format!("set {a} 4 0 2\r\nhi\r\n").as_bytes(), b"STORED\r\n");
    exchange(&mut c, format!("touch {a} 100\r\n").as_bytes(), b"TOUCHED\r\n");
    exchange(
        &mut c,
        format!("gat 100 {a} {a}:no\r\n").as_bytes(),
        format!("VALUE {a} 4 2\r\nhi\r\nEND\r\n").as_bytes(),
    );
    let out = String::from_utf8(request(&mut c, format!("gats 100 {a}\r\n").as_bytes(), b"END\r\n")).unwrap();
    assert!(out.starts_with(&format!("VALUE {a} 4 2 ")) && out.ends_with("\r\nhi\r\nEND\r\n"), "{out:?}");
    // Touching with a negative time expires the item now.
    exchange(&mut c, format!("touch {a} -1\r\n").as_bytes(), b"TOUCHED\r\n");
    exchange(&mut c, format!("get {a}\r\n").as_bytes(), b"END\r\n");
    exchange(&mut c, format!("touch {a} abc\r\n").as_bytes(), b"CLIENT_ERROR invalid exptime argument\r\n");
    // The key where the exptime belongs is a bad exptime.
    exchange(&mut c, format!("gat {a}\r\n").as_bytes(), b"CLIENT_ERROR invalid exptime argument\r\n");
}

#[test]
fn delete_command() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    let a = k("del", "a");
    exchange(&mut c, format!("delete {a}\r\n").as_bytes(), b"NOT_FOUND\r\n");
    exchange(&mut c, format!("set {a} 0 0 1\r\nx\r\n").as_bytes(), b"STORED\r\n");
    exchange(
        &mut c,
        format!("delete {a} 5\r\n").as_bytes(),
        b"CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n",
    );
    exchange(&mut c, format!("delete {a} 0\r\n").as_bytes(), b"DELETED\r\n");
    exchange(&mut c, format!("set {a} 0 0 1\r\nx\r\n").as_bytes(), b"STORED\r\n");
    exchange(&mut c, format!("delete {a} noreply\r\nget {a}\r\n").as_bytes(), b"END\r\n");
}

#[test]
fn expiry() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    let a = k("exp", "a");
    exchange(&mut c, format!("set {a} 0 -1 1\r\nx\r\n").as_bytes(), b"STORED\r\n");
    exchange(&mut c, format!("get {a}\r\n").as_bytes(), b"END\r\n");
    exchange(&mut c, format!("set {a} 0 1 1\r\nx\r\n").as_bytes(), b"STORED\r\n");
    exchange(&mut c, format!("set {a}:long 0 1000 1\r\ny\r\n").as_bytes(), b"STORED\r\n");
    // An absolute time in the past (but after 30 days) is already expired.
    exchange(&mut c, format!("set {a}:abs 0 2592001 1\r\nz\r\n").as_bytes(), b"STORED\r\n");
    exchange(&mut c, format!("get {a}:abs\r\n").as_bytes(), b"END\r\n");
    // The refused set's data line is then read as a command.
    exchange(
        &mut c,
        format!("set {a} 0 abc 1\r\nx\r\n").as_bytes(),
        b"CLIENT_ERROR bad command line format\r\nERROR\r\n",
    );
    // The one unavoidable wait: a 1-second TTL seen to pass.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    exchange(
        &mut c,
        format!("get {a} {a}:long\r\n").as_bytes(),
        format!("VALUE {a}:long 0 1\r\ny\r\nEND\r\n").as_bytes(),
    );
}

#[test]
fn flush_all_command() {
    let s = Server::with_flags(&[]);
    let Some(s) = s else { return };
    let mut c = s.connect();
    exchange(&mut c, b"set fa 0 0 1\r\nx\r\n", b"STORED\r\n");
    exchange(&mut c, b"flush_all\r\n", b"OK\r\n");
    exchange(&mut c, b"get fa\r\n", b"END\r\n");
    exchange(&mut c, b"set fa 0 0 1\r\nx\r\n", b"STORED\r\n");
    exchange(&mut c, b"flush_all 0\r\n", b"OK\r\n");
    exchange(&mut c, b"get fa\r\n", b"END\r\n");
    exchange(&mut c, b"set fa 0 0 1\r\nx\r\nflush_all noreply\r\nget fa\r\n", b"STORED\r\nEND\r\n");
    // A delayed flush leaves items alone until its time.
    exchange(
        &mut c,
        b"set fa 0 0 1\r\nx\r\nflush_all 100\r\nget fa\r\n",
        b"STORED\r\nOK\r\nVALUE fa 0 1\r\nx\r\nEND\r\n",
    );
    exchange(&mut c, b"flush_all abc\r\n", b"CLIENT_ERROR invalid exptime argument\r\n");
}

#[test]
fn noreply_everywhere_memcached_takes_it() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    let a = k("nr", "a");
    let req = format!(
        "set {a} 0 0 1 noreply\r\n1\r\nadd {a} 0 0 1 noreply\r\n2\r\nreplace {a} 0 0 1 noreply\r\n3\r\n\
         append {a} 0 0 1 noreply\r\n4\r\nprepend {a} 0 0 1 noreply\r\n5\r\nincr {a} 1 noreply\r\n\
         decr {a} 2 noreply\r\ntouch {a} 0 noreply\r\nverbosity 1 noreply\r\ncas {a} 0 0 1 1 noreply\r\n9\r\nget {a}\r\n"
    );
    // 534 + 1 - 2 = 533
    exchange(&mut c, req.as_bytes(), format!("VALUE {a} 0 3\r\n533\r\nEND\r\n").as_bytes());
    assert!(silent(&mut c));
}

#[test]
fn misc_commands() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    let v = String::from_utf8(request(&mut c, b"version\r\n", b"\r\n")).unwrap();
    assert!(v.starts_with("VERSION 1.6"), "{v:?}");
    exchange(&mut c, b"verbosity 1\r\n", b"OK\r\n");
    exchange(&mut c, b"verbosity\r\n", b"ERROR\r\n");
    exchange(&mut c, b"bogus\r\n", b"ERROR\r\n");
    exchange(&mut c, b"GET x\r\n", b"ERROR\r\n");
    exchange(&mut c, b"\r\n", b"ERROR\r\n");
    exchange(&mut c, b"get\r\n", b"ERROR\r\n");
    // A bare \n ends a line too.
    exchange(&mut c, b"set nl 0 0 1\nx\r\nget nl\n", b"STORED\r\nVALUE nl 0 1\r\nx\r\nEND\r\n");
    c.write_all(b"quit\r\n").unwrap();
    assert!(closed(&mut c));
}

#[test]
fn bad_command_lines() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    let long = "k".repeat(251);
    let ok = "k".repeat(250);
    exchange(&mut c, format!("set {ok} 0 0 1\r\nx\r\n").as_bytes(), b"STORED\r\n");
    exchange(&mut c, format!("get {ok}\r\n").as_bytes(), format!("VALUE {ok} 0 1\r\nx\r\nEND\r\n").as_bytes());
    exchange(&mut c, format!("get {long}\r\n").as_bytes(), b"CLIENT_ERROR bad command line format\r\n");
    // A refused set's data line is then read as a command, as memcached does.
    exchange(
        &mut c,
        format!("set {long} 0 0 1\r\nx\r\n").as_bytes(),
        b"CLIENT_ERROR bad command line format\r\nERROR\r\n",
    );
    exchange(&mut c, b"set k 0 0\r\n", b"ERROR\r\n");
    exchange(&mut c, b"set k abc 0 1\r\nx\r\n", b"CLIENT_ERROR bad command line format\r\nERROR\r\n");
    exchange(&mut c, b"set k 0 0 -1\r\n", b"CLIENT_ERROR bad command line format\r\n");
    // Flags are parsed with strtoul and truncated to 32 bits (memcached).
    exchange(&mut c, b"set k 4294967296 0 1\r\nx\r\nget k\r\n", b"STORED\r\nVALUE k 0 1\r\nx\r\nEND\r\n");
    exchange(&mut c, b"incr\r\n", b"ERROR\r\n");
    exchange(&mut c, b"touch k\r\n", b"ERROR\r\n");
    // Still serving.
    exchange(&mut c, b"set k 0 0 1\r\ny\r\nget k\r\n", b"STORED\r\nVALUE k 0 1\r\ny\r\nEND\r\n");
}

#[test]
fn bad_data_chunk() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    exchange(&mut c, b"set bd 0 0 3\r\nabcd\r\n", b"CLIENT_ERROR bad data chunk\r\nERROR\r\n");
    exchange(&mut c, b"get bd\r\n", b"END\r\n");
    exchange(&mut c, b"set bd 0 0 1\r\ny\r\nget bd\r\n", b"STORED\r\nVALUE bd 0 1\r\ny\r\nEND\r\n");
}

#[test]
fn too_large_values_are_refused_and_swallowed() {
    // memcached's smallest -I is 512k (its slab chunk size).
    let Some(s) = Server::with_flags(&["-I", "512k"]) else { return };
    let mut c = s.connect();
    let big = "v".repeat(600 << 10);
    exchange(
        &mut c,
        format!("set big 0 0 {}\r\n{big}\r\n", big.len()).as_bytes(),
        b"SERVER_ERROR object too large for cache\r\n",
    );
    // The data was swallowed, not read as commands; the connection goes on.
    exchange(&mut c, b"get big\r\n", b"END\r\n");
    exchange(
        &mut c,
        b"set big 0 0 10\r\n0123456789\r\nget big\r\n",
        b"STORED\r\nVALUE big 0 10\r\n0123456789\r\nEND\r\n",
    );
    // A too-large set removes the old value (memcached's behaviour).
    exchange(
        &mut c,
        format!("set big 0 0 {}\r\n{big}\r\n", big.len()).as_bytes(),
        b"SERVER_ERROR object too large for cache\r\n",
    );
    exchange(&mut c, b"get big\r\n", b"END\r\n");
}

#[test]
fn line_too_long_closes_without_a_reply() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    let junk = "x".repeat(4096);
    c.write_all(junk.as_bytes()).unwrap();
    // memcached gives up on a line past 2048 bytes: it closes, says nothing.
    assert_eq!(read_to_close(&mut c).map(|b| show(&b)), Some(String::new()));
    // Others are unaffected.
    let mut d = s.connect();
    exchange(&mut d, b"version\r\n", b"VERSION ");
}

// The -c connection limit is tested in hostile.rs.

#[test]
fn stats_report_what_happened() {
    let Some(s) = Server::with_flags(&["-m", "64", "-t", "2"]) else { return };
    let mut c = s.connect();
    let names = [
        "pid",
        "uptime",
        "time",
        "version",
        "pointer_size",
        "curr_connections",
        "total_connections",
        "rejected_connections",
        "cmd_get",
        "cmd_set",
        "cmd_flush",
        "cmd_touch",
        "get_hits",
        "get_misses",
        "get_expired",
        "get_flushed",
        "delete_hits",
        "delete_misses",
        "incr_hits",
        "incr_misses",
        "decr_hits",
        "decr_misses",
        "cas_hits",
        "cas_misses",
        "cas_badval",
        "touch_hits",
        "touch_misses",
        "threads",
        "bytes",
        "curr_items",
        "total_items",
        "evictions",
        "expired_unfetched",
        "evicted_unfetched",
        "limit_maxbytes",
        "bytes_read",
        "bytes_written",
    ];
    let all = stats(&mut c, "");
    for n in names {
        assert!(all.iter().any(|(name, _)| name == n), "stats lacks {n}");
    }
    assert_eq!(stat(&mut c, "limit_maxbytes"), 64 << 20);
    assert_eq!(stat(&mut c, "threads"), 2);
    let before = |c: &mut std::net::TcpStream, n: &str| stat(c, n);
    let (gets, hits, misses, sets) = (
        before(&mut c, "cmd_get"),
        before(&mut c, "get_hits"),
        before(&mut c, "get_misses"),
        before(&mut c, "cmd_set"),
    );
    exchange(&mut c, b"set st 0 0 2\r\nab\r\nget st st:no\r\n", b"STORED\r\nVALUE st 0 2\r\nab\r\nEND\r\n");
    exchange(&mut c, b"incr st:no 1\r\ndelete st:no\r\ntouch st 0\r\n", b"NOT_FOUND\r\nNOT_FOUND\r\nTOUCHED\r\n");
    assert_eq!(stat(&mut c, "cmd_get"), gets + 2);
    assert_eq!(stat(&mut c, "get_hits"), hits + 1);
    assert_eq!(stat(&mut c, "get_misses"), misses + 1);
    assert_eq!(stat(&mut c, "cmd_set"), sets + 1);
    assert!(stat(&mut c, "curr_items") >= 1);
    assert!(stat(&mut c, "incr_misses") >= 1);
    assert!(stat(&mut c, "delete_misses") >= 1);
    assert!(stat(&mut c, "touch_hits") >= 1);
    assert!(stat(&mut c, "curr_connections") >= 1);
    let settings = stats(&mut c, "settings");
    for n in ["maxbytes", "maxconns", "tcpport", "num_threads", "item_size_max"] {
        assert!(settings.iter().any(|(name, _)| name == n), "stats settings lacks {n}");
    }
    exchange(&mut c, b"stats reset\r\n", b"RESET\r\n");
    assert_eq!(stat(&mut c, "cmd_get"), 0);
    assert_eq!(stat(&mut c, "get_hits"), 0);
    exchange(&mut c, b"stats nonsense\r\n", b"ERROR\r\n");
}
