//! The invariants of a TLS connection through the worker's state machine
//! (amalgam-server's `worker::Driven`: the event loop's own turns — TLS
//! records, reads, parsing, commands, replies, output limits — over a fake
//! socket), fed bytes as if they arrived from the network, with a fixed
//! test certificate (`tls/cert.pem`, `tls/key.pem`: self-signed for
//! `localhost`, P-256, valid until 2126; test-only, never used by the
//! server otherwise).
//!
//! The input: two flag bytes (below), then
//! * raw mode: bytes sent to the server as they are — ClientHellos,
//!   other handshake records, garbage, truncated records;
//! * client mode: a rustls client completes a real handshake with the
//!   server first (TLS 1.3, or 1.2), then sends a plaintext (a u16
//!   little-endian length, then that many bytes: RESP or memcached
//!   commands) as application data, then the rest of the input raw (after
//!   the handshake: garbage, truncated or forged records).
//!
//! Flag byte 0: bit 0 the port (memcached's, RESP's), bit 1 client mode,
//! bit 2 TLS 1.2 only, bits 3–4 the most bytes one socket read returns
//! ([`READ_MAX`]), bits 5–6 the bytes the socket takes before it is full
//! until the peer reads ([`ROOM`]). Flag byte 1: bits 0–1 how the bytes
//! arrive, in pieces of [`ARRIVAL`] with the connection's turns between,
//! bits 2–3 the end ([`End`]).
//!
//! Invariants, after every turn:
//! * nothing panics;
//! * the read buffer stays within the connection's bound, and the replies
//!   not taken by the socket below the output limit set here
//!   ([`OUTPUT_HARD_BYTES`]) — or the connection is closed;
//! * the connection progresses or is closed: within [`STILL_TURNS_MAX`]
//!   turns in a row that neither read nor wrote a byte it waits for its
//!   socket with nothing it could still do, or is closed; at the end of
//!   the stream (FIN) it is closed. (Turns that move bytes are not
//!   counted: a socket taking 5 bytes a turn needs a thousand turns for
//!   one INFO reply, and a long input of INFOs some 10⁵ in all — the
//!   first bound, on all of an input's turns, stopped a long run on
//!   exactly that.)
//! * without a handshake, the server sends at most its first flight and
//!   an alert ([`RAW_OUTPUT_BYTES_MAX`]: no amplification);
//! * with the client: the handshake completes, and until raw bytes are
//!   injected everything the server sends is valid TLS to the client.
//!
//! Commands that reach past the connection (DEBUG, SHUTDOWN, REPLICAOF,
//! CONFIG, SAVE, MONITOR, CLIENT PAUSE, ACL …: [`LEFT_OUT`]) are left out
//! of the plaintext: they change the whole server (or panic on purpose,
//! DEBUG PANIC, which the worker catches), not this connection.
//!
//! Shared by the libFuzzer target (fuzz-server/fuzz_targets/tls_conn.rs)
//! and the fuzz smoke test (tests/fuzz_smoke.rs).
use amalgam_server::worker::{Driven, Protocol, Socket, Step};
use amalgam_server::Shared;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, SignatureScheme};
use std::io::{ErrorKind, Read, Write};
use std::sync::{Arc, OnceLock};

/// The test certificate and its key.
const CERT_PEM: &[u8] = include_bytes!("tls/cert.pem");
const KEY_PEM: &[u8] = include_bytes!("tls/key.pem");
/// The most bytes one read of the fake socket returns, by flag.
const READ_MAX: [usize; 4] = [usize::MAX, 1, 7, 512];
/// Bytes the fake socket takes before it is full, by flag.
const ROOM: [usize; 4] = [usize::MAX, 5, 300, 4096];
/// Pieces the input arrives in, by flag (turns run between them).
const ARRIVAL: [usize; 4] = [usize::MAX, 1, 13, 200];
/// The hard output limit of the `normal` class set on the server here.
pub const OUTPUT_HARD_BYTES: usize = 4 << 20;
/// Turns in a row that read and write nothing, after which the
/// connection must be waiting or closed (a spin: far above the few turns
/// a connection takes between its socket's bytes).
const STILL_TURNS_MAX: usize = 50_000;
/// What a server may send a peer that never completes a handshake: its
/// first flight (ServerHello, certificate, key exchange …) and an alert.
const RAW_OUTPUT_BYTES_MAX: usize = 16 * 1024;
/// Handshake round trips the client gets.
const HANDSHAKE_ROUNDS_MAX: usize = 8;
/// Plaintext words (any case) that leave an input out (module notes).
const LEFT_OUT: [&[u8]; 13] = [
    b"debug",
    b"shutdown",
    b"replicaof",
    b"slaveof",
    b"sync",
    b"monitor",
    b"config",
    b"save",
    b"aof",
    b"failover",
    b"pause",
    b"acl",
    b"memlimit",
];

/// How the stream ends.
#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    /// Left open: the server waits.
    Open,
    /// The peer's FIN.
    Fin,
    /// close_notify then FIN (client mode; raw mode: FIN).
    CloseNotifyFin,
    /// close_notify, left open.
    CloseNotify,
}

/// A socket whose reads return what the test delivered and whose writes
/// go to a buffer the test drains.
#[derive(Debug)]
pub struct Fake {
    input: Vec<u8>,
    taken: usize,
    /// Reads return Ok(0) once the input is taken (the peer's FIN).
    fin: bool,
    read_max: usize,
    output: Vec<u8>,
    room: usize,
    room_per_drain: usize,
    /// A write found the socket full since the last drain.
    write_blocked: bool,
    written: usize,
    /// Reads asked of the socket (each a `recv` on a real one).
    reads: usize,
}

impl Fake {
    fn new(read_max: usize, room: usize) -> Fake {
        Fake {
            input: Vec::new(),
            taken: 0,
            fin: false,
            read_max,
            output: Vec::new(),
            room,
            room_per_drain: room,
            write_blocked: false,
            written: 0,
            reads: 0,
        }
    }

    fn deliver(&mut self, bytes: &[u8]) {
        self.input.drain(..self.taken);
        self.taken = 0;
        self.input.extend_from_slice(bytes);
    }

    /// What the server wrote since the last drain; the socket has room
    /// again.
    fn drain(&mut self) -> Vec<u8> {
        self.room = self.room_per_drain;
        self.write_blocked = false;
        std::mem::take(&mut self.output)
    }
}

impl Read for Fake {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.reads += 1;
        let left = &self.input[self.taken..];
        if left.is_empty() {
            return if self.fin { Ok(0) } else { Err(ErrorKind::WouldBlock.into()) };
        }
        let n = left.len().min(buf.len()).min(self.read_max);
        buf[..n].copy_from_slice(&left[..n]);
        self.taken += n;
        Ok(n)
    }
}

impl Write for Fake {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.room == 0 {
            self.write_blocked = true;
            return Err(ErrorKind::WouldBlock.into());
        }
        let n = buf.len().min(self.room);
        self.output.extend_from_slice(&buf[..n]);
        self.room -= n;
        self.written += n;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Socket for Fake {
    fn peer_addr(&self) -> std::io::Result<std::net::SocketAddr> {
        Ok(([127, 0, 0, 1], 40_000).into())
    }

    fn local_addr(&self) -> std::io::Result<std::net::SocketAddr> {
        Ok(([127, 0, 0, 1], 11_211).into())
    }

    fn fd(&self) -> i32 {
        -1
    }
}

/// The server: TLS on both ports with the test certificate, 64 MB, one
/// worker, the `normal` output class's hard limit at
/// [`OUTPUT_HARD_BYTES`]. Built once per process.
pub fn shared() -> &'static Arc<Shared> {
    static SHARED: OnceLock<Arc<Shared>> = OnceLock::new();
    SHARED.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("amalgam-fuzz-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
        std::fs::write(&cert, CERT_PEM).unwrap();
        std::fs::write(&key, KEY_PEM).unwrap();
        let o = format!("ssl_chain_cert={},ssl_key={}", cert.display(), key.display());
        let args =
            amalgam_server::config::Args::try_parse_all(["amalgam", "-Z", "-o", &o, "-m", "64", "-t", "1"]).unwrap();
        let shared = Shared::new(args).unwrap();
        let normal = (amalgam_server::obuf::Class::Normal, OUTPUT_HARD_BYTES as u64, 0, 0);
        shared.set_output_limits(&[normal]);
        // The files were read; the server does not need them again.
        let _ = std::fs::remove_dir_all(&dir);
        shared
    })
}

/// Accepts any certificate: the client is here to reach the server's
/// code past the handshake, not to check who it is.
#[derive(Debug)]
struct AnyCert;

impl ServerCertVerifier for AnyCert {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn verify_tls13_signature(
        &self,
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        rustls::crypto::ring::default_provider().signature_verification_algorithms.supported_schemes()
    }
}

/// The client's configuration: TLS 1.3 and 1.2, or 1.2 only.
fn client_config(tls12_only: bool) -> Arc<ClientConfig> {
    static CONFIGS: OnceLock<[Arc<ClientConfig>; 2]> = OnceLock::new();
    let configs = CONFIGS.get_or_init(|| {
        let one = |versions: &[&'static rustls::SupportedProtocolVersion]| {
            let c = ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_protocol_versions(versions)
                .unwrap()
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AnyCert))
                .with_no_client_auth();
            Arc::new(c)
        };
        [one(&[&rustls::version::TLS13, &rustls::version::TLS12]), one(&[&rustls::version::TLS12])]
    });
    Arc::clone(&configs[usize::from(tls12_only)])
}

/// The connection under test and what is checked of it.
struct Run {
    conn: Driven<Fake>,
    /// Turns since one last read or wrote a byte.
    still: usize,
    closed: bool,
    arrival: usize,
}

impl Run {
    /// Turns until the connection waits with nothing it could still do,
    /// or is closed; returns what it sent meanwhile.
    fn settle(&mut self) -> Vec<u8> {
        let mut sent = Vec::new();
        while !self.closed {
            self.still += 1;
            assert!(
                self.still <= STILL_TURNS_MAX,
                "no progress: {STILL_TURNS_MAX} turns without a byte read or written, waiting or closing"
            );
            let (taken, written) = (self.conn.socket().taken, self.conn.socket().written);
            let step = self.conn.turn();
            let bound = self.conn.read_buffer_bytes_max();
            assert!(self.conn.read_buffer_bytes() <= bound, "read buffer {} > {bound}", self.conn.read_buffer_bytes());
            self.closed = step == Step::Closed;
            if !self.closed {
                let pending = self.conn.pending_output_bytes();
                assert!(pending < OUTPUT_HARD_BYTES, "{pending} bytes of replies pending past the hard limit");
            }
            let blocked = self.conn.socket().write_blocked;
            // Input left that this turn was reading: the socket is
            // readable again. A real stream socket's short read leaves
            // nothing behind (the worker goes idle on one); this one
            // hands out at most `read_max` bytes a read, as if they
            // arrived that way, each arrival an event.
            let socket = self.conn.socket();
            let arriving = socket.taken > taken && socket.taken < socket.input.len();
            if socket.taken > taken || socket.written > written {
                self.still = 0;
            }
            sent.extend(socket.drain());
            if step == Step::Idle && !blocked && !arriving {
                break;
            }
        }
        sent
    }

    /// Delivers `bytes` in the run's pieces, settling after each.
    fn deliver(&mut self, bytes: &[u8], mut seen: impl FnMut(&[u8])) {
        for piece in bytes.chunks(self.arrival) {
            if self.closed {
                return;
            }
            self.conn.socket().deliver(piece);
            let sent = self.settle();
            seen(&sent);
        }
    }
}

/// Feeds what the server sent to the client; Err if it is not valid TLS.
fn to_client(client: &mut ClientConnection, mut bytes: &[u8]) -> Result<(), String> {
    // Bounded: each round takes at least one byte (or fails).
    while !bytes.is_empty() {
        match client.read_tls(&mut bytes) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => return Err(e.to_string()),
        }
        client.process_new_packets().map_err(|e| e.to_string())?;
        // The replies themselves are not looked at; drained so that the
        // client's buffer never fills.
        let mut sink = [0u8; 4096];
        while let Ok(n) = client.reader().read(&mut sink) {
            if n == 0 {
                break;
            }
        }
    }
    Ok(())
}

/// One pipelined round over an established TLS connection: `plain` in
/// one go from a rustls client once the handshake is done, one turn of
/// the connection. Returns the reads that turn asked of the socket and
/// the plaintext the client got back. A turn that reads the round's
/// records in one short read serves it and waits for the next event
/// without another read (which on a real socket would only say EAGAIN).
#[allow(dead_code)] // The fuzz target does not call it.
pub fn one_round(protocol: Protocol, plain: &[u8]) -> (usize, Vec<u8>) {
    let conn = Driven::new(shared(), protocol, true, Fake::new(usize::MAX, usize::MAX)).expect("a TLS session");
    let mut run = Run { conn, still: 0, closed: false, arrival: usize::MAX };
    let name = ServerName::try_from("localhost").unwrap();
    let mut client = ClientConnection::new(client_config(false), name).unwrap();
    for _ in 0..HANDSHAKE_ROUNDS_MAX {
        if !client.is_handshaking() {
            break;
        }
        let hello = from_client(&mut client);
        run.deliver(&hello, |sent| to_client(&mut client, sent).unwrap());
    }
    assert!(!client.is_handshaking() && !run.closed, "the handshake did not complete");
    client.writer().write_all(plain).unwrap();
    let records = from_client(&mut client);
    run.conn.socket().deliver(&records);
    run.conn.socket().reads = 0;
    assert_eq!(run.conn.turn(), Step::Idle);
    let reads = run.conn.socket().reads;
    let sent = run.conn.socket().drain();
    client.read_tls(&mut &sent[..]).unwrap();
    client.process_new_packets().unwrap();
    let mut replies = Vec::new();
    // Bounded by what the client holds; WouldBlock once it is empty.
    let _ = client.reader().read_to_end(&mut replies);
    (reads, replies)
}

/// The ClientHello the test's rustls client sends first (for seeds).
#[allow(dead_code)] // The fuzz target does not call it.
pub fn rustls_hello(tls12_only: bool) -> Vec<u8> {
    let name = ServerName::try_from("localhost").unwrap();
    from_client(&mut ClientConnection::new(client_config(tls12_only), name).unwrap())
}

/// What the client has to send.
fn from_client(client: &mut ClientConnection) -> Vec<u8> {
    let mut out = Vec::new();
    // Bounded by what the client holds.
    while client.wants_write() {
        if client.write_tls(&mut out).is_err() {
            break;
        }
    }
    out
}

/// Checks one input (module notes).
pub fn check(data: &[u8]) {
    let (Some(&f0), Some(&f1)) = (data.first(), data.get(1)) else { return };
    let protocol = if f0 & 1 == 0 { Protocol::Memcached } else { Protocol::Resp };
    let client_mode = f0 & 2 != 0;
    let tls12_only = f0 & 4 != 0;
    let read_max = READ_MAX[usize::from((f0 >> 3) & 3)];
    let room = ROOM[usize::from((f0 >> 5) & 3)];
    let arrival = ARRIVAL[usize::from(f1 & 3)];
    let end = [End::Open, End::Fin, End::CloseNotifyFin, End::CloseNotify][usize::from((f1 >> 2) & 3)];
    let rest = &data[2..];
    let (plain, raw) = if client_mode {
        let len = rest.get(..2).map_or(0, |b| usize::from(u16::from_le_bytes([b[0], b[1]])));
        let rest = rest.get(2..).unwrap_or(&[]);
        rest.split_at(len.min(rest.len()))
    } else {
        (&[][..], rest)
    };
    let lower = plain.to_ascii_lowercase();
    if LEFT_OUT.iter().any(|w| lower.windows(w.len()).any(|x| x == *w)) {
        return;
    }
    let conn = Driven::new(shared(), protocol, true, Fake::new(read_max, room)).expect("a TLS session");
    let mut run = Run { conn, still: 0, closed: false, arrival };
    if !client_mode {
        run.deliver(raw, |_| {});
        if end != End::Open && !run.closed {
            run.conn.socket().fin = true;
            run.settle();
            assert!(run.closed, "still open after the peer's FIN");
        }
        let written = run.conn.socket().written;
        assert!(written <= RAW_OUTPUT_BYTES_MAX, "{written} bytes sent to a peer that never completed a handshake");
        return;
    }
    let name = ServerName::try_from("localhost").unwrap();
    let mut client = ClientConnection::new(client_config(tls12_only), name).unwrap();
    // Valid TLS from the server until raw bytes go in.
    let mut faults: Option<String> = None;
    for _ in 0..HANDSHAKE_ROUNDS_MAX {
        if !client.is_handshaking() || run.closed {
            break;
        }
        let hello = from_client(&mut client);
        run.deliver(&hello, |sent| {
            if let Err(e) = to_client(&mut client, sent) {
                faults.get_or_insert(e);
            }
        });
    }
    assert_eq!(faults, None, "the server's handshake records");
    assert!(!client.is_handshaking() && !run.closed, "the handshake did not complete");
    client.writer().write_all(plain).unwrap();
    let records = from_client(&mut client);
    run.deliver(&records, |sent| {
        if let Err(e) = to_client(&mut client, sent) {
            faults.get_or_insert(e);
        }
    });
    assert_eq!(faults, None, "the server's records after the handshake");
    run.deliver(raw, |_| {});
    if matches!(end, End::CloseNotify | End::CloseNotifyFin) && !run.closed {
        client.send_close_notify();
        let alert = from_client(&mut client);
        run.deliver(&alert, |_| {});
    }
    if matches!(end, End::Fin | End::CloseNotifyFin) && !run.closed {
        run.conn.socket().fin = true;
        run.settle();
        assert!(run.closed, "still open after the peer's FIN");
    }
}
