//! Hostile input over TLS on both ports (issue 20): memcached's port with
//! `-Z` and the RESP TLS port (`--tls-port`) of one amalgam. Garbage after
//! a completed handshake (forged record lengths, bad MACs, truncated
//! records, a second ClientHello, noise), half-open handshakes by the
//! hundred, a client dribbling its request one byte per second, a slow
//! reader, a few hundred TLS connections at once. Through each one
//! control clients on every port keep being served, a witness per TLS
//! port ([`common::acked::Witness`], over TLS) finds every write the server
//! acknowledged, and the server stays up.
//!
//! The client is rustls (a crate, not code written here) over a
//! TcpStream: rustls makes the handshake and the records, the test writes
//! hostile bytes on the socket beneath (common/tls.rs). Amalgam-only:
//! skipped when the environment points the suite at memcached or Redis,
//! or when openssl (which makes the certificates) is missing. No
//! assertion is about time.
mod common;
#[path = "common/tls.rs"]
mod tls;

use common::acked::{Proto, Stream, Wire, Witness};
use common::{dribble, key, raise_open_files, show, Rng};
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tls::*;

/// An amalgam with TLS on memcached's port and on the RESP TLS port;
/// `extra` flags beside.
fn start(extra: &[&str]) -> Option<Amalgam> {
    if !applicable(&["openssl"]) {
        return None;
    }
    Some(Amalgam::start(&[MEMCACHED_TLS, RESP_TLS, extra].concat()))
}

/// The two TLS ports of `a` and the protocol each speaks.
fn tls_ports(a: &Amalgam) -> [(u16, Proto); 2] {
    [(a.port, Proto::Memcached), (a.tls, Proto::Resp)]
}

/// A request that stores `value` under `k` and reads it back, and its
/// exact reply, in `proto`.
fn round_trip(proto: Proto, k: &str, value: &str) -> (Vec<u8>, Vec<u8>) {
    match proto {
        Proto::Memcached => (
            format!("set {k} 0 0 {n}\r\n{value}\r\nget {k}\r\n", n = value.len()).into_bytes(),
            format!("STORED\r\nVALUE {k} 0 {n}\r\n{value}\r\nEND\r\n", n = value.len()).into_bytes(),
        ),
        Proto::Resp => {
            let mut req = common::resp::encode(&[b"SET", k.as_bytes(), value.as_bytes()]);
            req.extend(common::resp::encode(&[b"GET", k.as_bytes()]));
            (req, format!("+OK\r\n${}\r\n{value}\r\n", value.len()).into_bytes())
        }
    }
}

/// Control connections on every port, opened before the attack: one per
/// TLS port and a plaintext RESP one.
struct Control {
    tls: Vec<(Proto, Wire)>,
    plain: Wire,
}

impl Control {
    fn new(a: &Amalgam) -> Control {
        let tls = tls_ports(a).map(|(port, proto)| (proto, Wire::new(Box::new(tls_connect(port))))).into();
        Control { tls, plain: Wire::new(Box::new(tcp_connect(a.resp))) }
    }

    /// A round trip on a fresh key on each connection.
    #[track_caller]
    fn still_serving(&mut self, a: &mut Amalgam) {
        assert!(a.alive(), "the server process died");
        for (proto, wire) in self.tls.iter_mut().map(|(p, w)| (*p, w)).chain([(Proto::Resp, &mut self.plain)]) {
            let k = key("ctl");
            let (req, want) = round_trip(proto, &k, "ok");
            wire.send(&req).unwrap_or_else(|e| panic!("{proto:?} control: {e}"));
            let got = wire.exactly(want.len()).unwrap_or_else(|e| panic!("{proto:?} control: {e}"));
            assert_eq!(show(&got), show(&want), "{proto:?} control");
        }
    }

    /// RESP's reply to `args` on the plaintext control connection.
    fn call(&mut self, args: &[&str]) -> String {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.plain.send(&common::resp::encode(&args)).unwrap();
        String::from_utf8_lossy(&self.plain.resp_reply().unwrap()).into_owned()
    }
}

/// A witness on each TLS port, writing over TLS.
fn witnesses(a: &Amalgam) -> Vec<Witness> {
    tls_ports(a).iter().map(|&(port, proto)| Witness::start(proto, Box::new(tls_connect(port)))).collect()
}

/// Checks every witness (see [`Witness::check`]).
#[track_caller]
fn check(witnesses: Vec<Witness>) {
    for w in witnesses {
        w.check();
    }
}

/// True if the server closes `sock` (after any bytes in flight: an alert,
/// session tickets) within its read timeout.
fn server_closes(sock: &mut TcpStream) -> bool {
    let mut b = [0u8; 4096];
    // Bounded: each read either returns bytes, or ends the loop; a server
    // could send at most a few records here.
    for _ in 0..1000 {
        match sock.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return true,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return false,
        }
    }
    false
}

/// True if `sock` stays open with nothing more from the server for a
/// moment (bytes already in flight, session tickets, are read first).
fn server_waits(sock: &mut TcpStream) -> bool {
    sock.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    let mut b = [0u8; 4096];
    let mut waits = false;
    for _ in 0..100 {
        match sock.read(&mut b) {
            Ok(0) => break,
            Ok(_) => continue,
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::TimedOut => {
                waits = true;
                break;
            }
            Err(_) => break,
        }
    }
    sock.set_read_timeout(Some(TLS_READ_TIMEOUT)).unwrap();
    waits
}

/// True if the server has not closed `sock` (as far as has arrived by
/// now: bytes already sent are read first, without waiting).
fn open_now(sock: &mut TcpStream) -> bool {
    sock.set_nonblocking(true).unwrap();
    let mut b = [0u8; 4096];
    let mut open = false;
    for _ in 0..100 {
        match sock.read(&mut b) {
            Ok(0) => break,
            Ok(_) => continue,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                open = true;
                break;
            }
            Err(_) => break,
        }
    }
    sock.set_nonblocking(false).unwrap();
    open
}

/// A TLS 1.3 application-data record header declaring `len` bytes.
fn record_header(len: u16) -> Vec<u8> {
    let [hi, lo] = len.to_be_bytes();
    vec![0x17, 0x03, 0x03, hi, lo]
}

/// The largest record a TLS 1.3 peer may send: 2^14 bytes plus 256 of
/// expansion (RFC 8446 §5.2).
const RECORD_BYTES_MAX: u16 = (1 << 14) + 256;
/// The shortest record length refused from its header alone: TLS 1.2's
/// bound, 2^14 + 2048 (RFC 5246 §6.2.3), which rustls applies to both
/// versions; a TLS 1.3 record between the two is read whole and then
/// fails to decrypt.
const RECORD_WIRE_BYTES_MAX: u16 = (1 << 14) + 2048;
/// Connections of noise after a handshake, per port.
const NOISE_CONNECTIONS: usize = 10;

#[test]
fn garbage_after_a_completed_handshake() {
    let Some(mut a) = start(&[]) else { return };
    let mut ctl = Control::new(&a);
    let witnesses = witnesses(&a);
    let mut rng = Rng(0x6a09_e667_f3bc_c908);
    for (port, proto) in tls_ports(&a) {
        // A record longer than any TLS version allows: closed as soon as
        // its header is in.
        for len in [RECORD_WIRE_BYTES_MAX, u16::MAX] {
            let mut t = tls_connect(port);
            let mut bytes = record_header(len);
            bytes.extend(vec![0u8; 200]);
            t.sock.write_all(&bytes).unwrap();
            assert!(server_closes(&mut t.sock), "{proto:?}: a forged record length {len} left the connection open");
        }
        // A record whose ciphertext is noise (its MAC cannot verify),
        // some longer than TLS 1.3 allows: closed once it is in.
        for len in [17u16, 64, 1000, RECORD_BYTES_MAX + 1, RECORD_WIRE_BYTES_MAX - 1] {
            let mut t = tls_connect(port);
            let mut bytes = record_header(len);
            bytes.extend((0..len).map(|_| rng.next() as u8));
            t.sock.write_all(&bytes).unwrap();
            assert!(server_closes(&mut t.sock), "{proto:?}: a record with a bad MAC left the connection open");
        }
        // A real record with one bit flipped: closed, and its request not
        // run.
        let k = key("flipped");
        let mut t = tls_connect(port);
        let mut sealed = seal(&mut t, &round_trip(proto, &k, "v").0);
        let last = sealed.len() - 1;
        sealed[last] ^= 1;
        t.sock.write_all(&sealed).unwrap();
        assert!(server_closes(&mut t.sock), "{proto:?}: a tampered record left the connection open");
        assert_eq!(ctl.call(&["EXISTS", &k]), ":0\r\n", "{proto:?}: a tampered record ran");
        // A real request and a record of noise in one write: closed; if
        // the request was acknowledged, it ran. (Amalgam fails the whole
        // read: the request neither runs nor is answered. A server that
        // decrypts a record at a time, as OpenSSL's do, runs and answers
        // it first.)
        let k = key("before-noise");
        let mut t = tls_connect(port);
        let (req, ack) = match proto {
            Proto::Memcached => (format!("set {k} 0 0 1\r\nx\r\n").into_bytes(), b"STORED\r\n".to_vec()),
            Proto::Resp => (common::resp::encode(&[b"SET", k.as_bytes(), b"x"]), b"+OK\r\n".to_vec()),
        };
        let mut bytes = seal(&mut t, &req);
        bytes.extend(record_header(40));
        bytes.extend((0..40).map(|_| rng.next() as u8));
        t.sock.write_all(&bytes).unwrap();
        let mut answered = Vec::new();
        let _ = t.read_to_end(&mut answered);
        assert!(server_closes(&mut t.sock), "{proto:?}: a record of noise after a request left it open");
        if answered.starts_with(&ack) {
            assert_eq!(ctl.call(&["EXISTS", &k]), ":1\r\n", "{proto:?}: an acknowledged write is lost");
        }
        // A second ClientHello on an established TLS 1.3 session: closed.
        let mut t = tls_connect(port);
        t.sock.write_all(&client_hello()).unwrap();
        assert!(server_closes(&mut t.sock), "{proto:?}: a ClientHello after the handshake left it open");
        // A record cut short: the server waits for the rest (holding no
        // one up), and closes when the client goes.
        let mut cut = tls_connect(port);
        let mut bytes = record_header(1 << 14);
        bytes.extend(vec![0u8; 1000]);
        cut.sock.write_all(&bytes).unwrap();
        assert!(server_waits(&mut cut.sock), "{proto:?}: a cut record was not waited for");
        ctl.still_serving(&mut a);
        cut.sock.shutdown(Shutdown::Write).unwrap();
        assert!(server_closes(&mut cut.sock), "{proto:?}: a record cut by the client's close left it open");
        // A real request's records cut in the middle, then the client
        // goes: nothing runs.
        let k = key("cut");
        let mut t = tls_connect(port);
        let sealed = seal(&mut t, &round_trip(proto, &k, "v").0);
        t.sock.write_all(&sealed[..sealed.len() / 2]).unwrap();
        t.sock.shutdown(Shutdown::Write).unwrap();
        assert!(server_closes(&mut t.sock), "{proto:?}: a cut request left the connection open");
        assert_eq!(ctl.call(&["EXISTS", &k]), ":0\r\n", "{proto:?}: a cut request ran");
        // Noise of any length after the handshake, then gone.
        for _ in 0..NOISE_CONNECTIONS {
            let mut t = tls_connect(port);
            let len = rng.next() % 3000;
            let noise: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            let _ = t.sock.write_all(&noise);
        }
        ctl.still_serving(&mut a);
    }
    ctl.still_serving(&mut a);
    check(witnesses);
}

/// Half-open handshakes of each kind, per port, all open at once.
const HALF_OPEN_PER_KIND: usize = 100;

#[test]
fn half_open_handshakes_by_the_hundred() {
    // One worker: a handshake that held it would stall everyone.
    let Some(mut a) = start(&["-t", "1", "-c", "2000"]) else { return };
    if !raise_open_files(6 * HALF_OPEN_PER_KIND as u64 + 200) {
        return;
    }
    let mut ctl = Control::new(&a);
    let witnesses = witnesses(&a);
    let hello = client_hello();
    let mut held = Vec::new();
    for (port, _) in tls_ports(&a) {
        for _ in 0..HALF_OPEN_PER_KIND {
            // A whole ClientHello, then silence.
            let mut s = tcp_connect(port);
            s.write_all(&hello).unwrap();
            held.push(s);
            // Part of one.
            let mut s = tcp_connect(port);
            s.write_all(&hello[..hello.len() / 2]).unwrap();
            held.push(s);
            // A connection and nothing.
            held.push(tcp_connect(port));
        }
    }
    ctl.still_serving(&mut a);
    // New clients still complete their handshakes and are served.
    for (port, proto) in tls_ports(&a) {
        let mut w = Wire::new(Box::new(tls_connect(port)));
        let (req, want) = round_trip(proto, &key("new"), "v");
        w.send(&req).unwrap();
        assert_eq!(show(&w.exactly(want.len()).unwrap()), show(&want), "{proto:?}");
    }
    // Every half-open one is still waited for: none was closed.
    let open = held.iter_mut().map(open_now).filter(|&o| o).count();
    assert_eq!(open, held.len(), "half-open handshakes were closed");
    drop(held);
    ctl.still_serving(&mut a);
    check(witnesses);
}

#[test]
fn a_tls_client_sending_one_byte_per_second() {
    let Some(mut a) = start(&[]) else { return };
    let mut ctl = Control::new(&a);
    let witnesses = witnesses(&a);
    // On both ports at once: a request whose records' last bytes come a
    // byte a second.
    let mut dribblers = Vec::new();
    for (port, proto) in tls_ports(&a) {
        let k = key("dribble");
        let (req, want) = match proto {
            Proto::Memcached => (format!("set {k} 0 0 8\r\ndribbled\r\n").into_bytes(), b"STORED\r\n".to_vec()),
            Proto::Resp => (common::resp::encode(&[b"SET", k.as_bytes(), b"dribbled"]), b"+OK\r\n".to_vec()),
        };
        let mut t = tls_connect(port);
        let records = seal(&mut t, &req);
        let last = Arc::new(AtomicBool::new(false));
        let flag = last.clone();
        let thread = std::thread::spawn(move || {
            dribble(&mut t.sock, &records, &flag);
            t
        });
        dribblers.push((k, want, last, thread));
    }
    // Meanwhile everyone else is served, and neither request has run
    // before its last byte went (the flag is read after the reply).
    // Bounded: the dribblers end after DRIBBLED_BYTES pauses, or this
    // gives up.
    for _ in 0..200 {
        if dribblers.iter().all(|(_, _, _, t)| t.is_finished()) {
            break;
        }
        ctl.still_serving(&mut a);
        for (k, _, last, _) in &dribblers {
            let exists = ctl.call(&["EXISTS", k]);
            if !last.load(Ordering::SeqCst) {
                assert_eq!(exists, ":0\r\n", "{k} ran before its last byte");
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    for (k, want, _, thread) in dribblers {
        let mut t: Box<dyn Stream> = Box::new(thread.join().unwrap());
        let mut got = vec![0u8; want.len()];
        t.read_exact(&mut got).unwrap_or_else(|e| panic!("{k}: {e}"));
        assert_eq!(show(&got), show(&want), "{k}");
        assert_eq!(ctl.call(&["GET", &k]), "$8\r\ndribbled\r\n");
    }
    check(witnesses);
}

/// The slow reader's value.
const SLOW_VALUE_BYTES: usize = 100_000;
/// GETs it pipelines on each port: 30 MB of replies.
const SLOW_GETS: usize = 300;
/// How much of that may stay with the server after the readers close.
const SLOW_MEMORY_SLACK_KB: u64 = 8 << 10;

/// The server's resident memory in KiB.
fn rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the server's /proc status");
    let line = status.lines().find_map(|l| l.strip_prefix("VmRSS:")).expect("VmRSS");
    line.trim().trim_end_matches("kB").trim().parse().unwrap()
}

#[test]
fn a_tls_slow_reader() {
    let Some(mut a) = start(&[]) else { return };
    let mut ctl = Control::new(&a);
    let witnesses = witnesses(&a);
    let k = key("slow");
    let value = "s".repeat(SLOW_VALUE_BYTES);
    assert_eq!(ctl.call(&["SET", &k, &value]), "+OK\r\n");
    let before_kb = rss_kb(a.pid());
    // On each TLS port a client pipelines GETs of it and reads nothing.
    let mut readers = Vec::new();
    for (port, proto) in tls_ports(&a) {
        let req = match proto {
            Proto::Memcached => format!("get {k}\r\n").repeat(SLOW_GETS).into_bytes(),
            Proto::Resp => common::resp::encode(&[b"GET", k.as_bytes()]).repeat(SLOW_GETS),
        };
        let mut t = tls_connect(port);
        t.sock.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
        // The writes stop when the server stops reading (the write times
        // out), or when everything is taken.
        readers.push(std::thread::spawn(move || {
            let _ = t.write_all(&req).and_then(|()| t.flush());
            t
        }));
    }
    for _ in 0..10 {
        ctl.still_serving(&mut a);
        assert_eq!(ctl.call(&["STRLEN", &k]), format!(":{SLOW_VALUE_BYTES}\r\n"));
    }
    let during_kb = rss_kb(a.pid());
    let readers: Vec<Tls> = readers.into_iter().map(|r| r.join().unwrap()).collect();
    ctl.still_serving(&mut a);
    drop(readers);
    // Their memory comes back once they are gone.
    let mut after_kb = 0;
    common::eventually("the slow readers' memory came back", Duration::from_secs(20), || {
        after_kb = rss_kb(a.pid());
        after_kb <= before_kb + SLOW_MEMORY_SLACK_KB
    });
    eprintln!("server RSS: {before_kb} KiB before, {during_kb} KiB with two TLS slow readers, {after_kb} KiB after");
    ctl.still_serving(&mut a);
    check(witnesses);
}

/// TLS connections held open at once, per port: a few hundred in all,
/// sized to what the debug build's handshakes (ring unoptimized, on both
/// sides) do in a few seconds on two cores (400 in about 1.5 s when
/// measured).
const TLS_CONNECTIONS_PER_PORT: usize = 200;

#[test]
fn hundreds_of_tls_connections_at_once() {
    let Some(mut a) = start(&["-c", "1000"]) else { return };
    if !raise_open_files(2 * TLS_CONNECTIONS_PER_PORT as u64 + 200) {
        return;
    }
    let mut ctl = Control::new(&a);
    let witnesses = witnesses(&a);
    let k = key("many");
    // Each handshakes and is served once before the next connects; then
    // all are open at once, each writes, then each reads.
    let mut conns: Vec<(Proto, Wire)> = Vec::new();
    for (port, proto) in tls_ports(&a) {
        for _ in 0..TLS_CONNECTIONS_PER_PORT {
            let mut w = Wire::new(Box::new(tls_connect(port)));
            let i = conns.len();
            let (req, want) = round_trip(proto, &format!("{k}:{i}"), "first");
            w.send(&req).unwrap();
            assert_eq!(show(&w.exactly(want.len()).unwrap()), show(&want));
            conns.push((proto, w));
        }
    }
    let connected: usize = ctl
        .call(&["INFO", "clients"])
        .lines()
        .find_map(|l| l.strip_prefix("connected_clients:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap();
    assert!(connected > TLS_CONNECTIONS_PER_PORT, "{connected} RESP clients connected");
    let wants: Vec<Vec<u8>> = conns
        .iter_mut()
        .enumerate()
        .map(|(i, (proto, w))| {
            let (req, want) = round_trip(*proto, &format!("{k}:{i}"), &format!("second{i}"));
            w.send(&req).unwrap();
            want
        })
        .collect();
    ctl.still_serving(&mut a);
    for ((proto, w), want) in conns.iter_mut().zip(&wants).rev() {
        assert_eq!(show(&w.exactly(want.len()).unwrap()), show(want), "{proto:?}");
    }
    drop(conns);
    ctl.still_serving(&mut a);
    check(witnesses);
}
