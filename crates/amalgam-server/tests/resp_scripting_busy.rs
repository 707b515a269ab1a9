//! Long scripts, black-box: `busy-reply-threshold` (and its alias
//! `lua-time-limit`), the BUSY reply to a command on a busy script's key,
//! SCRIPT KILL of a script that has not written (OK, then the script's
//! caller gets "Script killed by user with SCRIPT KILL..."), UNKILLABLE
//! for one that wrote, and SHUTDOWN NOSAVE as the way out of it.
//!
//! Each test stops a server's world for a while (Redis answers BUSY to
//! every client while a script is busy) or shuts it down, so it runs on a
//! server of its own: a spawned amalgam, or, when the suite runs against
//! Redis (`AMALGAM_TEST_RESP_ADDR`, CI's second pass), a redis-server of
//! its own started from `PATH`. Every expectation is Redis 7.0.15's,
//! except the one marked Amalgam's: commands on other keys go on.
mod common;
use common::own::{own_server, Own};
use common::resp::*;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// How long a test waits for a script to turn busy.
const BUSY_WAIT: Duration = Duration::from_secs(10);

/// The threshold the tests set (ms): a script is busy this soon.
const THRESHOLD_MS: &str = "200";

fn connect(addr: SocketAddr) -> Resp {
    Resp::from_stream(TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}")))
}

/// How many connections a test opens before its script's: with N ≤ 3
/// workers taking connections in turn, at least one is on another worker
/// than the script.
const PROBES: usize = 3;

/// Opens the probe connections (before the script's connection).
fn probes(addr: SocketAddr) -> Vec<TcpStream> {
    (0..PROBES).map(|_| TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"))).collect()
}

/// Waits until a probe's `GET key` answers BUSY (the script holding the
/// key is busy) and returns that connection with the reply. A probe on the
/// script's own worker gets no answer while the script runs (Amalgam's
/// limit: a worker runs one script at a time and serves nothing else
/// meanwhile; docs in resp/script.rs) and is left aside; Redis answers on
/// every one.
fn busy_conn(probes: Vec<TcpStream>, key: &str) -> (Resp, String) {
    // Past the threshold first: a command that reaches the key before the
    // script is busy waits for the script to end (the key is held), in
    // Amalgam as in Redis, where it waits for the script's thread.
    std::thread::sleep(Duration::from_millis(THRESHOLD_MS.parse::<u64>().expect("a number") * 4));
    let start = Instant::now();
    let req = format!("*2\r\n$3\r\nGET\r\n${}\r\n{key}\r\n", key.len());
    let mut live: Vec<TcpStream> = probes;
    // Bounded: BUSY_WAIT.
    while start.elapsed() < BUSY_WAIT {
        let mut next = Vec::new();
        for mut s in live {
            s.set_read_timeout(Some(Duration::from_millis(1500))).expect("a timeout");
            s.write_all(req.as_bytes()).expect("send GET");
            let mut got = Vec::new();
            let mut b = [0u8; 256];
            // Bounded by the read timeout: one line.
            while !got.ends_with(b"\r\n") {
                match s.read(&mut b) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => got.extend_from_slice(&b[..n]),
                }
            }
            let reply = String::from_utf8_lossy(&got).into_owned();
            if reply.starts_with("-BUSY") {
                return (Resp::from_stream(s), reply);
            }
            if !got.is_empty() {
                // Answered, not busy yet: ask again.
                next.push(s);
            }
            // Silent: on the script's worker; dropped.
        }
        assert!(!next.is_empty(), "every probe is on the script's worker");
        live = next;
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("no probe saw the script turn busy");
}

const BUSY: &str = "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n";

#[test]
fn a_busy_script_answers_busy_and_script_kill_ends_it() {
    let Some(own) = own_server(&[]) else { return };
    let addr = own.addr();
    let mut c = connect(addr);
    assert_eq!(c.call(&["CONFIG", "SET", "busy-reply-threshold", THRESHOLD_MS]), OK);
    assert_eq!(
        c.call(&["CONFIG", "GET", "lua-time-limit"]),
        format!("*2\r\n$14\r\nlua-time-limit\r\n$3\r\n{THRESHOLD_MS}\r\n")
    );
    assert_eq!(c.call(&["SCRIPT", "KILL"]), "-NOTBUSY No scripts in execution right now.\r\n");
    let body = "local i = 0 while true do i = i + 1 end";
    let sha = {
        let r = c.call(&["SCRIPT", "LOAD", body]);
        parse(&r).0.bulk().to_string()
    };
    let p = probes(addr);
    let looping = std::thread::spawn(move || connect(addr).call(&["EVAL", body, "1", "busy:k"]));
    let (mut c, reply) = busy_conn(p, "busy:k");
    assert_eq!(reply, BUSY, "a command on the busy script's key");
    if !own.is_redis() {
        // Amalgam's: the other keys go on, on every worker.
        assert_eq!(c.call(&["SET", "busy:other", "v"]), OK);
        assert_eq!(c.call(&["GET", "busy:other"]), bulk("v"));
    }
    assert_eq!(c.call(&["SCRIPT", "KILL"]), OK);
    let reply = looping.join().expect("the looping client");
    assert_eq!(reply, format!("-ERR Script killed by user with SCRIPT KILL... script: {sha}, on @user_script:1.\r\n"));
    assert_eq!(c.call(&["SCRIPT", "KILL"]), "-NOTBUSY No scripts in execution right now.\r\n");
    assert_eq!(c.call(&["GET", "busy:k"]), NULL2);
}

#[test]
fn pcall_cannot_hold_a_kill() {
    let Some(own) = own_server(&[]) else { return };
    let addr = own.addr();
    let mut c = connect(addr);
    assert_eq!(c.call(&["CONFIG", "SET", "lua-time-limit", THRESHOLD_MS]), OK);
    let body = "while true do pcall(function() local i = 0 while true do i = i + 1 end end) end";
    let p = probes(addr);
    let looping = std::thread::spawn(move || connect(addr).call(&["EVAL", body, "1", "busy:p"]));
    let (mut c, reply) = busy_conn(p, "busy:p");
    assert_eq!(reply, BUSY);
    assert_eq!(c.call(&["SCRIPT", "KILL"]), OK);
    let reply = looping.join().expect("the looping client");
    assert!(reply.starts_with("-ERR Script killed by user with SCRIPT KILL... script: "), "{reply:?}");
}

#[test]
fn a_script_that_wrote_is_unkillable_until_shutdown_nosave() {
    let Some(own) = own_server(&[]) else { return };
    let addr = own.addr();
    let mut c = connect(addr);
    assert_eq!(c.call(&["CONFIG", "SET", "busy-reply-threshold", THRESHOLD_MS]), OK);
    let body = "redis.call('set', KEYS[1], 'x') local i = 0 while true do i = i + 1 end";
    let p = probes(addr);
    let looping = std::thread::spawn(move || {
        let mut l = connect(addr);
        l.call(&["EVAL", body, "1", "busy:w"])
    });
    let (mut c, reply) = busy_conn(p, "busy:w");
    assert_eq!(reply, BUSY);
    assert_eq!(
        c.call(&["SCRIPT", "KILL"]),
        "-UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait \
         the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.\r\n"
    );
    // The way out: the server goes, and with it the script's client.
    assert_eq!(c.call(&["SHUTDOWN", "NOSAVE"]), "");
    let reply = looping.join().expect("the looping client");
    assert!(!reply.starts_with('+') && !reply.starts_with(':'), "the script never finished: {reply:?}");
    let mut own = own;
    match &mut own {
        Own::Amalgam(s) => {
            let start = Instant::now();
            // Bounded: the server exits within 10 s.
            while s.alive() {
                assert!(start.elapsed() < Duration::from_secs(10), "amalgam did not exit after SHUTDOWN NOSAVE");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Own::Redis(..) => {}
    }
}
