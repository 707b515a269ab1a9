//! Millisecond expiry over RESP (issue 18), black-box: PEXPIRE, SET PX,
//! PSETEX, PEXPIREAT, GETEX PX keep their milliseconds; PTTL answers the
//! milliseconds left and never more than was set; TTL and EXPIRETIME
//! round as Redis's `(ms + 500) / 1000`; GT and LT compare milliseconds. Runs against
//! amalgam and, in CI, against redis-server 7 (`AMALGAM_TEST_RESP_ADDR`).
//!
//! The sleeps let a deadline pass; no assertion is about speed. A key set
//! to expire in 200–300 ms is checked gone after at least 100 ms more than
//! that, which Redis's active and lazy expiry both meet (a read of an
//! expired key never returns it).
mod common;
use common::resp::*;
use common::*;
use std::time::Duration;

fn sleep_ms(ms: u64) {
    std::thread::sleep(Duration::from_millis(ms));
}

/// PTTL in (0, `set_ms`].
fn assert_pttl_within(c: &mut Resp, k: &str, set_ms: i64) {
    let pttl = as_int(&c.call(&["PTTL", k]));
    assert!(pttl > 0 && pttl <= set_ms, "PTTL {pttl} after setting {set_ms} ms");
}

#[test]
fn pexpire_keeps_its_milliseconds() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("pexpire");
    assert_eq!(c.call(&["SET", &k, "v"]), OK);
    assert_eq!(c.call(&["PEXPIRE", &k, "200"]), int(1));
    assert_pttl_within(&mut c, &k, 200);
    assert_eq!(c.call(&["TTL", &k]), int(0), "(ms + 500) / 1000 of at most 200 ms");
    assert_eq!(c.call(&["GET", &k]), bulk("v"));
    sleep_ms(300);
    assert_eq!(c.call(&["GET", &k]), NULL2, "gone 100 ms after its deadline");
    assert_eq!(c.call(&["PTTL", &k]), int(-2));
    assert_eq!(c.call(&["EXISTS", &k]), int(0));

    // A millisecond: gone at once, not at the end of the second.
    assert_eq!(c.call(&["SET", &k, "v"]), OK);
    assert_eq!(c.call(&["PEXPIRE", &k, "1"]), int(1));
    sleep_ms(20);
    assert_eq!(c.call(&["GET", &k]), NULL2);
}

#[test]
fn set_px_and_psetex_expire_on_time() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (a, b) = (key("px"), key("psetex"));
    assert_eq!(c.call(&["SET", &a, "v", "PX", "300"]), OK);
    assert_eq!(c.call(&["PSETEX", &b, "300", "w"]), OK);
    assert_pttl_within(&mut c, &a, 300);
    assert_pttl_within(&mut c, &b, 300);
    assert_eq!(c.call(&["GET", &a]), bulk("v"));
    assert_eq!(c.call(&["GET", &b]), bulk("w"));
    sleep_ms(500);
    assert_eq!(c.call(&["GET", &a]), NULL2, "SET PX 300, 0.5 s later");
    assert_eq!(c.call(&["GET", &b]), NULL2, "PSETEX 300, 0.5 s later");
    assert_eq!(c.call(&["MGET", &a, &b]), "*2\r\n$-1\r\n$-1\r\n");
}

#[test]
fn pexpireat_is_exact() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("pexpireat");
    assert_eq!(c.call(&["SET", &k, "v"]), OK);
    // The server's clock, not ours: PEXPIRETIME - PTTL of a long deadline.
    assert_eq!(c.call(&["PEXPIRE", &k, "100000"]), int(1));
    let now_ms = as_int(&c.call(&["PEXPIRETIME", &k])) - 100_000;
    let at = now_ms + 250;
    assert_eq!(c.call(&["PEXPIREAT", &k, &at.to_string()]), int(1));
    assert_eq!(c.call(&["PEXPIRETIME", &k]), int(at), "exact to the millisecond");
    assert_eq!(c.call(&["EXPIRETIME", &k]), int((at + 500) / 1000), "rounded to the nearest second");
    assert_pttl_within(&mut c, &k, 250);
    sleep_ms(400);
    assert_eq!(c.call(&["GET", &k]), NULL2);
    assert_eq!(c.call(&["PEXPIRETIME", &k]), int(-2));
}

#[test]
fn getex_px_sets_milliseconds() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("getex");
    assert_eq!(c.call(&["SET", &k, "v"]), OK);
    assert_eq!(c.call(&["GETEX", &k, "PX", "300"]), bulk("v"));
    assert_pttl_within(&mut c, &k, 300);
    sleep_ms(450);
    assert_eq!(c.call(&["GETEX", &k]), NULL2);
    assert_eq!(c.call(&["GET", &k]), NULL2);
}

/// `SET foo bar EX 10` then PTTL answered 10087 when the deadline was
/// rounded up to a whole second: never more than what was set.
#[test]
fn pttl_never_exceeds_what_was_set() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("ex10");
    for _ in 0..5 {
        assert_eq!(c.call(&["SET", &k, "bar", "EX", "10"]), OK);
        let pttl = as_int(&c.call(&["PTTL", &k]));
        assert!(pttl > 9000 && pttl <= 10_000, "PTTL {pttl} after EX 10");
        assert_eq!(c.call(&["TTL", &k]), int(10));
        let pexpiretime = as_int(&c.call(&["PEXPIRETIME", &k]));
        let expiretime = as_int(&c.call(&["EXPIRETIME", &k]));
        assert_eq!(expiretime, (pexpiretime + 500) / 1000, "EXPIRETIME rounds, as TTL does");
        sleep_ms(37);
    }
}

/// GT and LT compare milliseconds: deadlines 200 ms apart in the same
/// second are told apart.
#[test]
fn gt_and_lt_compare_milliseconds() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("gtlt");
    assert_eq!(c.call(&["SET", &k, "v", "PX", "10500"]), OK);
    let at = as_int(&c.call(&["PEXPIRETIME", &k]));
    assert_eq!(c.call(&["PEXPIREAT", &k, &(at - 200).to_string(), "GT"]), int(0));
    assert_eq!(c.call(&["PEXPIRETIME", &k]), int(at));
    assert_eq!(c.call(&["PEXPIREAT", &k, &(at - 200).to_string(), "LT"]), int(1));
    assert_eq!(c.call(&["PEXPIRETIME", &k]), int(at - 200));
    assert_eq!(c.call(&["PEXPIREAT", &k, &(at - 100).to_string(), "LT"]), int(0));
    assert_eq!(c.call(&["PEXPIREAT", &k, &(at - 100).to_string(), "GT"]), int(1));
    assert_eq!(c.call(&["PEXPIRETIME", &k]), int(at - 100));
    assert_eq!(c.call(&["PEXPIREAT", &k, &(at - 100).to_string(), "GT"]), int(0), "equal is not greater");
}
