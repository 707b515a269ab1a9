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
