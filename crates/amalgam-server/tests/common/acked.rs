//! "Nothing acknowledged is lost" (issue 20): a witness connection that
//! keeps writing fresh keys while a hostile test attacks the server,
//! records every write the server acknowledged, and afterwards reads each
//! one back.
//!
//! HOW IT WORKS. [`Witness::start`] opens its connection, makes one write
//! before it returns (so every witness has at least one acknowledged write
//! that happened before the attack), then writes on in a thread of its
//! own, one write every [`WRITE_PAUSE`], until [`Witness::check`] stops it
//! or [`WRITES_MAX`] is reached. memcached's protocol: `set` of a fresh key
//! (its flags vary too), `STORED` expected. RESP: SET of a fresh key
//! (`+OK`) alternating with RPUSH to one list of its own, whose reply must
//! be the list's exact length so far. Any other reply, a closed
//! connection or a reply that does not come within the socket's timeout is
//! a failure: the witness is also the "every other client keeps being
//! served" check. [`Witness::check`] then reads every acknowledged key back
//! on the same connection (a fresh one could meet a full `-c`; multi-gets of [`READ_BATCH`] keys, and LRANGE of
//! the list) and compares the replies byte for byte; on RESP it deletes
//! what it wrote (the server may be shared).
//!
//! The connection is anything `Read + Write` ([`Wire`]): a TcpStream or a
//! TLS stream over one, so the same witness serves the plaintext and the
//! TLS tests; its reads must time out ([`super::READ_TIMEOUT`] on the
//! socket), which bounds every wait here.
//!
//! LIMITS. Assertions are about outcomes, never durations: a slow machine
//! makes fewer writes, not a failure.

use super::{key, show, Server, READ_TIMEOUT};
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Pause between two writes: a few hundred writes a second, enough to
/// overlap any attack, little enough not to be an attack itself on two
/// cores.
pub const WRITE_PAUSE: Duration = Duration::from_millis(3);
/// Most writes one witness makes (bounds its loop and the read-back).
pub const WRITES_MAX: usize = 20_000;
/// Keys per multi-get while reading back.
const READ_BATCH: usize = 100;

/// Which protocol the witness speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    /// memcached's text protocol.
    Memcached,
    /// Redis's RESP.
    Resp,
}

/// A byte stream the witness can use: a TcpStream, or TLS over one.
pub trait Stream: Read + Write + Send {}
impl<T: Read + Write + Send> Stream for T {}

/// A connection and what has been read from it but not consumed.
pub struct Wire {
    s: Box<dyn Stream>,
    buf: Vec<u8>,
}

impl Wire {
    pub fn new(s: Box<dyn Stream>) -> Wire {
        Wire { s, buf: Vec::new() }
    }

    pub fn send(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.s.write_all(bytes).and_then(|()| self.s.flush()).map_err(|e| format!("write: {e}"))
    }

    /// Reads more; an error at EOF or timeout.
    fn fill(&mut self) -> Result<(), String> {
        let mut chunk = [0u8; 65536];
        loop {
            match self.s.read(&mut chunk) {
                Ok(0) => return Err(format!("closed by the server after {}", show(&self.buf))),
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    return Ok(());
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("read: {e} after {}", show(&self.buf))),
            }
        }
    }

    /// Exactly `n` bytes.
    pub fn exactly(&mut self, n: usize) -> Result<Vec<u8>, String> {
        while self.buf.len() < n {
            self.fill()?;
        }
        Ok(self.buf.drain(..n).collect())
    }

    /// Bytes up to and including the first `terminator`.
    pub fn until(&mut self, terminator: &[u8]) -> Result<Vec<u8>, String> {
        loop {
            if let Some(at) = self.buf.windows(terminator.len()).position(|w| w == terminator) {
                return Ok(self.buf.drain(..at + terminator.len()).collect());
            }
            self.fill()?;
        }
    }

    /// One reply of `proto`'s: a line (memcached), a whole RESP reply.
    pub fn reply(&mut self, proto: Proto) -> Result<Vec<u8>, String> {
        match proto {
            Proto::Memcached => self.until(b"\r\n"),
            Proto::Resp => self.resp_reply(),
        }
    }

    /// One RESP reply, whole.
    pub fn resp_reply(&mut self) -> Result<Vec<u8>, String> {
        loop {
            if let Some(n) = super::resp::reply_len(&self.buf) {
                return Ok(self.buf.drain(..n).collect());
            }
            self.fill()?;
        }
    }
}

/// What the witness wrote and saw acknowledged.
#[derive(Default)]
struct Ledger {
    /// (key, flags, value) of each acknowledged SET.
    sets: Vec<(String, u32, String)>,
    /// Each acknowledged RPUSH's value, in order.
    pushes: Vec<String>,
}

/// A writer running beside an attack; [`Witness::check`] ends it.
pub struct Witness {
    proto: Proto,
    prefix: String,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<(Wire, Ledger, Option<String>)>>,
}

impl std::fmt::Debug for Witness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Witness({:?}, {})", self.proto, self.prefix)
    }
}

/// A plaintext connection to `addr` with [`READ_TIMEOUT`] both ways.
pub fn tcp(addr: std::net::SocketAddr) -> Box<dyn Stream> {
    let s = TcpStream::connect(addr).unwrap_or_else(|e| panic!("witness: connect {addr}: {e}"));
    s.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
    s.set_write_timeout(Some(READ_TIMEOUT)).unwrap();
    s.set_nodelay(true).unwrap();
    Box::new(s)
}

/// One write: its request and the exact acknowledgement it needs.
fn write_request(proto: Proto, prefix: &str, i: usize, pushes: usize) -> (Vec<u8>, Vec<u8>, Write1) {
    let value = format!("{prefix}:{i}:{}", "v".repeat(i % 13));
    match proto {
        Proto::Memcached => {
            let k = format!("{prefix}:{i}");
            let flags = (i % 65_536) as u32;
            let req = format!("set {k} {flags} 0 {}\r\n{value}\r\n", value.len()).into_bytes();
            (req, b"STORED\r\n".to_vec(), Write1::Set(k, flags, value))
        }
        Proto::Resp if i % 2 == 0 => {
            let k = format!("{prefix}:{i}");
            let req = super::resp::encode(&[b"SET", k.as_bytes(), value.as_bytes()]);
            (req, b"+OK\r\n".to_vec(), Write1::Set(k, 0, value))
        }
        Proto::Resp => {
            let list = format!("{prefix}:list");
            let req = super::resp::encode(&[b"RPUSH", list.as_bytes(), value.as_bytes()]);
            (req, format!(":{}\r\n", pushes + 1).into_bytes(), Write1::Push(value))
        }
    }
}

enum Write1 {
    Set(String, u32, String),
    Push(String),
}

impl Ledger {
    fn record(&mut self, w: Write1) {
        match w {
            Write1::Set(k, f, v) => self.sets.push((k, f, v)),
            Write1::Push(v) => self.pushes.push(v),
        }
    }
}

/// Makes write `i` on `wire`; Err says what came instead of its
/// acknowledgement.
fn write_one(wire: &mut Wire, proto: Proto, prefix: &str, i: usize, ledger: &mut Ledger) -> Result<(), String> {
    let (req, ack, w) = write_request(proto, prefix, i, ledger.pushes.len());
    wire.send(&req)?;
    let got = wire.reply(proto)?;
    if got != ack {
        // An RPUSH's length tells an earlier push lost; any other reply,
        // a write refused.
        return Err(format!("write {i}: wanted {}, got {} (lost or refused)", show(&ack), show(&got)));
    }
    ledger.record(w);
    Ok(())
}

impl Witness {
    /// A witness on memcached's plaintext port.
    pub fn memcached(server: &Server) -> Witness {
        Witness::start(Proto::Memcached, tcp(server.addr()))
    }

    /// A witness on the plaintext RESP port.
    pub fn resp(server: &Server) -> Witness {
        Witness::start(Proto::Resp, tcp(server.resp_addr()))
    }

    /// Starts a witness speaking `proto` over `stream` (whose reads must
    /// time out); its first write is acknowledged before this returns.
    pub fn start(proto: Proto, stream: Box<dyn Stream>) -> Witness {
        let prefix = key(match proto {
            Proto::Memcached => "acked",
            Proto::Resp => "acked-resp",
        });
        let mut wire = Wire::new(stream);
        let mut ledger = Ledger::default();
        if let Err(e) = write_one(&mut wire, proto, &prefix, 0, &mut ledger) {
            panic!("witness: the first write, before any attack: {e}");
        }
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (stop, prefix) = (stop.clone(), prefix.clone());
            std::thread::spawn(move || {
                for i in 1..WRITES_MAX {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    if let Err(e) = write_one(&mut wire, proto, &prefix, i, &mut ledger) {
                        return (wire, ledger, Some(e));
                    }
                    std::thread::sleep(WRITE_PAUSE);
                }
                (wire, ledger, None)
            })
        };
        Witness { proto, prefix, stop, thread: Some(thread) }
    }

    /// Stops the writer; panics if any write went unacknowledged or any
    /// acknowledged write does not read back as written. Returns how many
    /// writes were acknowledged.
    #[track_caller]
    pub fn check(mut self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        let (mut wire, ledger, failure) =
            self.thread.take().expect("checked once").join().expect("the witness thread panicked");
        if let Some(e) = failure {
            panic!(
                "the witness was not served during the attack after {} acknowledged writes: {e}",
                ledger.sets.len() + ledger.pushes.len()
            );
        }
        if let Err(e) = self.read_back(&mut wire, &ledger) {
            panic!("{e}");
        }
        ledger.sets.len() + ledger.pushes.len()
    }

    fn read_back(&self, wire: &mut Wire, ledger: &Ledger) -> Result<(), String> {
        for batch in ledger.sets.chunks(READ_BATCH) {
            let (req, want) = match self.proto {
                Proto::Memcached => {
                    let mut req = "get".to_string();
                    let mut want = String::new();
                    for (k, f, v) in batch {
                        req.push_str(&format!(" {k}"));
                        want.push_str(&format!("VALUE {k} {f} {}\r\n{v}\r\n", v.len()));
                    }
                    (req + "\r\n", want + "END\r\n")
                }
                Proto::Resp => {
                    let mut args: Vec<&[u8]> = vec![b"MGET"];
                    let mut want = format!("*{}\r\n", batch.len());
                    for (k, _, v) in batch {
                        args.push(k.as_bytes());
                        want.push_str(&format!("${}\r\n{v}\r\n", v.len()));
                    }
                    (String::from_utf8(super::resp::encode(&args)).unwrap(), want)
                }
            };
            wire.send(req.as_bytes())?;
            let got = match self.proto {
                Proto::Memcached => wire.until(b"END\r\n")?,
                Proto::Resp => wire.resp_reply()?,
            };
            if got != want.as_bytes() {
                return Err(format!(
                    "an acknowledged write is lost or changed:\n got: {}\nwant: {}",
                    show(&got),
                    show(want.as_bytes())
                ));
            }
        }
        if self.proto == Proto::Resp {
            let list = format!("{}:list", self.prefix);
            let mut want = format!("*{}\r\n", ledger.pushes.len());
            for v in &ledger.pushes {
                want.push_str(&format!("${}\r\n{v}\r\n", v.len()));
            }
            if ledger.pushes.is_empty() {
                want = "*0\r\n".into();
            }
            wire.send(&super::resp::encode(&[b"LRANGE", list.as_bytes(), b"0", b"-1"]))?;
            let got = wire.resp_reply()?;
            if got != want.as_bytes() {
                return Err(format!(
                    "an acknowledged RPUSH is lost:\n got: {}\nwant: {}",
                    show(&got),
                    show(want.as_bytes())
                ));
            }
            // Clean up (the server may be shared): every key, then the list.
            for batch in ledger.sets.chunks(READ_BATCH) {
                let mut args: Vec<&[u8]> = vec![b"DEL"];
                args.extend(batch.iter().map(|(k, _, _)| k.as_bytes()));
                wire.send(&super::resp::encode(&args))?;
                let got = wire.resp_reply()?;
                if got != format!(":{}\r\n", batch.len()).as_bytes() {
                    return Err(format!("DEL of acknowledged keys: {}", show(&got)));
                }
            }
            wire.send(&super::resp::encode(&[b"DEL", list.as_bytes()]))?;
            wire.resp_reply()?;
        }
        Ok(())
    }
}

impl Drop for Witness {
    fn drop(&mut self) {
        // A test that fails before check() still stops its writer.
        self.stop.store(true, Ordering::Relaxed);
    }
}
