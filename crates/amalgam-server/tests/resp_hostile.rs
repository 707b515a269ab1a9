//! Hostile input against the RESP port, black-box (issue 20): noise made
//! of RESP tokens, frames cut mid-bulk, mid-array and mid-inline, huge
//! declared lengths, a reader that never reads, a client that sends one
//! byte per second, 2,000 connections at once. Through each one a
//! control client keeps being served, a witness
//! ([`common::acked::Witness`]: SETs and RPUSHes) finds every write the
//! server acknowledged, and the server stays up.
//!
//! Runs against amalgam and, in CI, against redis-server 7.0.15
//! (`AMALGAM_TEST_RESP_ADDR`): every expectation not marked amalgam-only
//! is Redis's. The memcached port's campaign is hostile.rs, TLS's
//! tls_hostile.rs. No assertion is about time: waits are bounded, and
//! only outcomes are checked.
mod common;
use common::acked::Witness;
use common::resp::*;
use common::*;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A control client's round trip on a fresh key.
#[track_caller]
fn still_serving(server: &mut Server, ctl: &mut Resp) {
    assert!(server.alive(), "the server process died");
    let k = key("ctl");
    assert_eq!(ctl.call(&["SET", &k, "ok"]), OK);
    assert_eq!(ctl.call(&["GET", &k]), bulk("ok"));
    assert_eq!(ctl.call(&["DEL", &k]), int(1));
}

/// The RESP server under test, started with `args` when it is an amalgam
/// of our own (the external one is used as it is).
fn server_with(args: &[&str]) -> Option<Server> {
    if external_resp_addr().is_some() {
        resp_server()
    } else {
        resp_private(args)
    }
}

/// Sends `bytes` on a new connection, reads whatever comes for a moment,
/// and closes it.
fn fire_and_close(server: &Server, bytes: &[u8]) {
    let mut c = server.resp_connect();
    let _ = c.write_all(bytes);
    c.set_read_timeout(Some(Duration::from_millis(10))).unwrap();
    let _ = c.read(&mut [0u8; 4096]);
}

/// Sends `bytes` on a new connection; expects `reply` and then a close.
#[track_caller]
fn refused(server: &Server, bytes: &[u8], reply: &str) {
    let mut c = Resp::new(server);
    c.send_raw(bytes);
    assert_eq!(c.reply(), reply, "input {}", show(bytes));
    assert!(c.closed(), "not closed after {}", show(bytes));
}

/// Rounds of noise, each on its own connection.
const NOISE_ROUNDS: usize = 150;
/// Longest noise sent in one round.
const NOISE_BYTES_MAX: u64 = 3000;
/// Noise connections left open until the end (half-read frames held).
const NOISE_HELD: usize = 20;

#[test]
fn noise_from_resp_tokens() {
    let Some(mut server) = resp_server() else { return };
    let mut ctl = Resp::new(&server);
    let witness = Witness::resp(&server);
    let mut rng = Rng(0x51_7cc1_b727_220a);
    // Tokens of RESP and of the commands the witness uses, among bytes;
    // none that could change what another client stored (no FLUSHALL,
    // DEL, CONFIG …).
    let tokens: [&[u8]; 26] = [
        b"*",
        b"$",
        b"*1\r\n",
        b"*2\r\n",
        b"*3\r\n",
        b"$3\r\n",
        b"$4\r\n",
        b"$-1\r\n",
        b"*-1\r\n",
        b"*0\r\n",
        b"$99999\r\n",
        b"*999\r\n",
        b"$2147483648\r\n",
        b"*1048577\r\n",
        b"SET\r\n",
        b"GET\r\n",
        b"RPUSH\r\n",
        b"PING\r\n",
        b"+OK\r\n",
        b":1\r\n",
        b"\r\n",
        b"\n",
        b"\"",
        b"'",
        b" ",
        b"\0",
    ];
    let mut held = Vec::new();
    for round in 0..NOISE_ROUNDS {
        let mut buf = Vec::new();
        let len = rng.next() % NOISE_BYTES_MAX;
        while (buf.len() as u64) < len {
            let r = rng.next();
            if r % 2 == 0 {
                buf.extend_from_slice(tokens[(r >> 8) as usize % tokens.len()]);
            } else {
                buf.push((r >> 16) as u8);
            }
        }
        if round % (NOISE_ROUNDS / NOISE_HELD) == 0 {
            let mut c = server.resp_connect();
            let _ = c.write_all(&buf);
            held.push(c);
        } else {
            fire_and_close(&server, &buf);
        }
        if round % 25 == 0 {
            still_serving(&mut server, &mut ctl);
        }
    }
    still_serving(&mut server, &mut ctl);
    drop(held);
    still_serving(&mut server, &mut ctl);
    witness.check();
}

/// A request frame naming the given key.
type Frame = fn(&str) -> Vec<u8>;

#[test]
fn truncated_frames_run_nothing() {
    let Some(mut server) = resp_server() else { return };
    let mut ctl = Resp::new(&server);
    let witness = Witness::resp(&server);
    let prefix = key("cut");
    // Every strict prefix of each frame, on a connection closed right
    // after it, each naming a key of its own: none of them may run (a
    // bulk string needs its body and two more bytes, an array all its
    // elements, an inline command its newline).
    let frames: [(&str, Frame); 3] = [
        ("bulk", |k| encode(&[b"SET", k.as_bytes(), b"a value cut anywhere"])),
        ("array", |k| encode(&[b"RPUSH", k.as_bytes(), b"one", b"two", b"three"])),
        ("inline", |k| format!("SET {k} inline-value\r\n").into_bytes()),
    ];
    let mut cut_keys = Vec::new();
    for (kind, frame) in frames {
        let len = frame(&format!("{prefix}:{kind}:0000")).len();
        for cut in 1..len {
            let k = format!("{prefix}:{kind}:{cut:04}");
            // Written and closed at once: nothing is waited for.
            let _ = server.resp_connect().write_all(&frame(&k)[..cut]);
            cut_keys.push(k);
        }
        still_serving(&mut server, &mut ctl);
    }
    for chunk in cut_keys.chunks(100) {
        let mut args = vec!["EXISTS"];
        args.extend(chunk.iter().map(String::as_str));
        assert_eq!(ctl.call(&args), int(0), "a truncated frame ran");
    }
    // The positive space: each whole frame runs.
    for (kind, frame) in frames {
        let k = format!("{prefix}:{kind}:whole");
        let mut c = Resp::new(&server);
        let want = if kind == "array" { int(3) } else { OK.into() };
        assert_eq!(c.call_raw(&frame(&k)), want, "{kind}");
        assert_eq!(ctl.call(&["DEL", &k]), int(1));
    }
    // A frame stopped mid-bulk waits for the rest, however long: the
    // others are served meanwhile, then it runs whole.
    let k = format!("{prefix}:later");
    let whole = encode(&[b"SET", k.as_bytes(), b"0123456789"]);
    let mut c = Resp::new(&server);
    c.send_raw(&whole[..whole.len() - 7]);
    still_serving(&mut server, &mut ctl);
    assert!(c.silent(), "a cut frame was answered");
    assert_eq!(ctl.call(&["EXISTS", &k]), int(0));
    assert_eq!(c.call_raw(&whole[whole.len() - 7..]), OK);
    assert_eq!(ctl.call(&["GET", &k]), bulk("0123456789"));
    assert_eq!(ctl.call(&["DEL", &k]), int(1));
    witness.check();
}

/// A bulk string as long as Redis's default `proto-max-bulk-len` (512 MB)
/// allows: declared, barely started, held.
const BULK_MAX_DECLARED: &str = "536870912";
/// Connections holding such a declaration at once.
const HUGE_HELD: usize = 8;

#[test]
fn huge_declared_lengths() {
    let Some(mut server) = resp_server() else { return };
    let mut ctl = Resp::new(&server);
    let witness = Witness::resp(&server);
    let p = |m: &str| error(&format!("ERR Protocol error: {m}"));
    // Past Redis's bounds (INT_MAX elements, proto-max-bulk-len bytes) or
    // past any integer: Redis's error, then closed.
    for count in ["2147483648", "4294967296", "9223372036854775807", "99999999999999999999"] {
        refused(&server, format!("*{count}\r\n").as_bytes(), &p("invalid multibulk length"));
    }
    for len in ["536870913", "2147483648", "9223372036854775807", "99999999999999999999"] {
        refused(&server, format!("*1\r\n${len}\r\n").as_bytes(), &p("invalid bulk length"));
        refused(&server, format!("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n${len}\r\n").as_bytes(), &p("invalid bulk length"));
    }
    still_serving(&mut server, &mut ctl);
    // At the bounds: accepted, waited for. Several clients declare 512 MB
    // values and send a few bytes of each; the others are served, and
    // when they go nothing of theirs was stored.
    let pid = server_pid(&mut ctl);
    let rss_before = pid.map(|pid| proc_status_kb(pid, "VmRSS:"));
    let k = key("huge");
    let mut held = Vec::new();
    for _ in 0..HUGE_HELD {
        let mut c = Resp::new(&server);
        c.send_raw(format!("*3\r\n$3\r\nSET\r\n${}\r\n{k}\r\n${BULK_MAX_DECLARED}\r\n", k.len()).as_bytes());
        c.send_raw(&[b'x'; 1000]);
        held.push(c);
    }
    let mut many = Resp::new(&server);
    many.send_raw(b"*1048576\r\n$4\r\nPING\r\n");
    still_serving(&mut server, &mut ctl);
    for c in &mut held {
        assert!(c.silent(), "an unfinished 512 MB value was answered");
    }
    assert!(many.silent(), "an unfinished array was answered");
    if let (Some(pid), Some(before), false) = (pid, rss_before, server.is_redis) {
        // Amalgam-only: a declared length allocates nothing it has not
        // received (Redis reserves the declared size up front).
        let grown_kb = proc_status_kb(pid, "VmRSS:").saturating_sub(before);
        eprintln!("{HUGE_HELD} declared 512 MB values held: the server's RSS grew by {grown_kb} KiB");
        assert!(grown_kb < 64 << 10, "{HUGE_HELD} declared 512 MB values grew the server's RSS by {grown_kb} KiB");
    }
    drop(held);
    drop(many);
    still_serving(&mut server, &mut ctl);
    assert_eq!(ctl.call(&["EXISTS", &k]), int(0));
    witness.check();
}

#[test]
fn amalgam_huge_declared_lengths() {
    // Amalgam's own bound, tighter than Redis's (resp_protocol.rs's
    // amalgam_bounds_bulk_strings_arrays_and_requests has the rest).
    let Some(mut server) = resp_private(&[]) else { return };
    let mut ctl = Resp::new(&server);
    let witness = Witness::resp(&server);
    let p = |m: &str| error(&format!("ERR Protocol error: {m}"));
    refused(&server, b"*1048577\r\n", &p("invalid multibulk length"));
    refused(&server, b"*1048577\r\n$3\r\nSET\r\n", &p("invalid multibulk length"));
    still_serving(&mut server, &mut ctl);
    witness.check();
}

/// The server's pid (INFO server's process_id) when it runs on this
/// machine (its /proc entry is readable).
fn server_pid(c: &mut Resp) -> Option<u32> {
    let pid: u32 = c.info_field("server", "process_id")?.trim().parse().ok()?;
    std::fs::metadata(format!("/proc/{pid}/status")).is_ok().then_some(pid)
}

/// A `/proc/PID/status` line's value in KiB (`VmRSS:`).
fn proc_status_kb(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the server's /proc status");
    let line = status.lines().find_map(|l| l.strip_prefix(field)).unwrap_or_else(|| panic!("{field} in {status}"));
    line.trim().trim_end_matches("kB").trim().parse().unwrap()
}

/// The memory the slow reader's output takes, in KiB: Redis's
/// `used_memory` (its allocator's count, client buffers included), and
/// for amalgam the process's RSS (its INFO counts the keyspace only).
fn server_memory_kb(server: &Server, c: &mut Resp, pid: u32) -> u64 {
    if server.is_redis {
        c.info_field("memory", "used_memory").unwrap().trim().parse::<u64>().unwrap() / 1024
    } else {
        proc_status_kb(pid, "VmRSS:")
    }
}

/// The slow reader's values.
const SLOW_VALUE_BYTES: usize = 100_000;
/// GETs it pipelines: 30 MB of replies, far past loopback's socket
/// buffers (a few MB).
const SLOW_GETS: usize = 300;
/// How much of that may stay with the server after the reader closes.
const SLOW_MEMORY_SLACK_KB: u64 = 8 << 10;

#[test]
fn a_slow_reader_is_contained_and_its_memory_comes_back() {
    let Some(mut server) = resp_server() else { return };
    let mut ctl = Resp::new(&server);
    let Some(pid) = server_pid(&mut ctl) else {
        eprintln!("note: the server's /proc is not readable here; skipping");
        return;
    };
    let witness = Witness::resp(&server);
    let k = key("slow");
    let value = "s".repeat(SLOW_VALUE_BYTES);
    assert_eq!(ctl.call(&["SET", &k, &value]), OK);
    let before_kb = server_memory_kb(&server, &mut ctl, pid);
    // The reader writes a key, then asks for 30 MB and reads nothing.
    let written = format!("{k}:written");
    let mut batch = encode(&[b"SET", written.as_bytes(), b"kept"]);
    batch.extend(encode(&[b"GET", k.as_bytes()]).repeat(SLOW_GETS));
    let slow = server.resp_connect();
    slow.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
    let writer = {
        let mut slow = slow.try_clone().unwrap();
        std::thread::spawn(move || slow.write_all(&batch).is_ok())
    };
    // The others are served meanwhile, and see its write.
    for _ in 0..20 {
        assert_eq!(ctl.call(&["GET", &k]), bulk(&value));
    }
    eventually("the slow reader's SET ran", READ_TIMEOUT, || ctl.call(&["EXISTS", &written]) == int(1));
    let during_kb = server_memory_kb(&server, &mut ctl, pid);
    still_serving(&mut server, &mut ctl);
    assert!(writer.join().unwrap(), "the slow reader's requests were not all taken");
    drop(slow);
    // Its memory comes back once it is gone.
    let mut after_kb = 0;
    eventually("the slow reader's memory came back", Duration::from_secs(20), || {
        after_kb = server_memory_kb(&server, &mut ctl, pid);
        after_kb <= before_kb + SLOW_MEMORY_SLACK_KB
    });
    eprintln!("server memory: {before_kb} KiB before, {during_kb} KiB with the slow reader, {after_kb} KiB after");
    assert_eq!(ctl.call(&["GET", &written]), bulk("kept"));
    assert_eq!(ctl.call(&["DEL", &k, &written]), int(2));
    still_serving(&mut server, &mut ctl);
    witness.check();
}

#[test]
fn a_client_sending_one_byte_per_second() {
    let Some(mut server) = resp_server() else { return };
    let mut ctl = Resp::new(&server);
    let witness = Witness::resp(&server);
    let (km, ki) = (key("dribble-multibulk"), key("dribble-inline"));
    // Two at once: a multibulk SET and an inline one.
    let frames = [
        (km.clone(), encode(&[b"SET", km.as_bytes(), b"dribbled"])),
        (ki.clone(), format!("SET {ki} dribbled\r\n").into_bytes()),
    ];
    let last: Vec<Arc<AtomicBool>> = frames.iter().map(|_| Arc::new(AtomicBool::new(false))).collect();
    let dribblers: Vec<_> = frames
        .iter()
        .zip(&last)
        .map(|((_, frame), last)| {
            let (mut c, frame, last) = (server.resp_connect(), frame.clone(), last.clone());
            std::thread::spawn(move || {
                dribble(&mut c, &frame, &last);
                c
            })
        })
        .collect();
    // Meanwhile the others are served, and neither SET has run before its
    // last byte was sent (the flag is read after the reply, so a false
    // flag means the byte went after EXISTS ran). Bounded: the dribblers
    // end after DRIBBLED_BYTES pauses, or this gives up.
    for _ in 0..200 {
        if dribblers.iter().all(|d| d.is_finished()) {
            break;
        }
        still_serving(&mut server, &mut ctl);
        for ((k, _), last) in frames.iter().zip(&last) {
            let exists = ctl.call(&["EXISTS", k]);
            if !last.load(Ordering::SeqCst) {
                assert_eq!(exists, int(0), "{k} ran before its last byte");
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // Each gets its reply once its last byte is in.
    for ((k, _), d) in frames.iter().zip(dribblers) {
        let mut c = Resp::from_stream(d.join().unwrap());
        assert_eq!(c.reply(), OK, "{k}");
        assert_eq!(ctl.call(&["GET", k]), bulk("dribbled"));
        assert_eq!(ctl.call(&["DEL", k]), int(1));
    }
    witness.check();
}

/// Connections held open at once (issue 20).
const CONNECTIONS: usize = 2000;
/// Amalgam's `-c` for them (control and witness connections count too).
const CONNECTIONS_FLAG: &str = "2200";
/// Descriptors the test process needs beside its connections.
const SPARE_FDS: u64 = 200;

#[test]
fn two_thousand_connections() {
    if !raise_open_files(CONNECTIONS as u64 + SPARE_FDS) {
        return;
    }
    let Some(mut server) = server_with(&["-c", CONNECTIONS_FLAG]) else { return };
    let mut ctl = Resp::new(&server);
    let witness = Witness::resp(&server);
    let connected_before: usize = ctl.info_field("clients", "connected_clients").unwrap().trim().parse().unwrap();
    // Each one is served once before the next connects (a burst of
    // handshakes can overflow the accept queue: not what this is about);
    // then all are open at once.
    let mut conns: Vec<Resp> = Vec::with_capacity(CONNECTIONS);
    for _ in 0..CONNECTIONS {
        let mut c = None;
        for _attempt in 0..100 {
            match TcpStream::connect(server.resp_addr()) {
                Ok(s) => {
                    c = Some(Resp::from_stream(s));
                    break;
                }
                Err(e) if e.kind() == ErrorKind::ConnectionRefused || e.kind() == ErrorKind::ConnectionReset => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Err(e) => panic!("connect: {e}"),
            }
        }
        let mut c = c.expect("cannot connect");
        assert_eq!(c.call(&["PING"]), "+PONG\r\n");
        conns.push(c);
    }
    let k = key("conn");
    // Every connection sends, then every one reads.
    for (i, c) in conns.iter_mut().enumerate() {
        c.send(&["SET", &format!("{k}:{i}"), &i.to_string()]);
    }
    for c in conns.iter_mut() {
        assert_eq!(c.reply(), OK);
    }
    still_serving(&mut server, &mut ctl);
    let connected: usize = ctl.info_field("clients", "connected_clients").unwrap().trim().parse().unwrap();
    assert!(connected >= connected_before + CONNECTIONS, "{connected} connected, {connected_before} before");
    for (i, c) in conns.iter_mut().enumerate().rev() {
        assert_eq!(c.call(&["GET", &format!("{k}:{i}")]), bulk(&i.to_string()));
    }
    drop(conns);
    still_serving(&mut server, &mut ctl);
    for chunk in (0..CONNECTIONS).collect::<Vec<_>>().chunks(500) {
        let names: Vec<String> = chunk.iter().map(|i| format!("{k}:{i}")).collect();
        let mut args = vec!["DEL"];
        args.extend(names.iter().map(String::as_str));
        assert_eq!(ctl.call(&args), int(chunk.len() as i64));
    }
    witness.check();
}
