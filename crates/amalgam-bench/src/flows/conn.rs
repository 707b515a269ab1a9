//! One client thread of a flow: a mio event loop over its nonblocking
//! connections, each playing one [`Role`].
//!
//! A connection keeps up to `depth` requests outstanding; replies complete
//! them in order. Frames nobody asked for (a RESP3 `invalidate` push, a
//! subscriber's `pmessage`) complete nothing and are counted apart. A
//! consumer-group worker's next request depends on a reply: each
//! XREADGROUP reply is answered at once with the XACK of the id it
//! delivered (parsed from the reply), and each XACK reply with the next
//! XREADGROUP, so a worker always has `depth` requests outstanding, reads
//! and acks mixed.
//!
//! Counting: events read within `[measure_from, end)` count in the
//! window; the verification totals (entries read, acks that acknowledged)
//! count over the whole run. At `end` no new request is written (but the
//! ack of a read still is), and the thread returns once every request
//! has been answered, or after [`DRAIN_MAX`].

use super::frame::{self, first_entry_id, invalidated_keys, is_pmessage, Frame, Read};
use crate::workload::{key_into, SplitMix64};
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};
use std::collections::VecDeque;
use std::io::{ErrorKind, Read as _, Write};
use std::time::{Duration, Instant};

/// A connection is abandoned when it has had requests outstanding and no
/// frame for this long.
pub const STALL: Duration = Duration::from_secs(10);
/// Longest wait for the requests outstanding at the end of the run.
pub const DRAIN_MAX: Duration = Duration::from_secs(10);
/// Read buffer per connection at the start.
const READ_BUF_BYTES: usize = 64 << 10;
/// Largest read buffer: one frame longer than this is out of step.
const READ_BUF_BYTES_MAX: usize = 16 << 20;
/// Longest poll wait (the loop checks the clock at least this often).
const POLL_WAIT_MAX: Duration = Duration::from_millis(50);
/// Name of the consumer group the flows read streams with.
pub const GROUP: &[u8] = b"g";
/// First byte of a stream's key (the rest is the stream number's hex).
pub const STREAM_KEY_LETTER: u8 = b'x';

/// What a connection does.
#[derive(Debug)]
pub enum Role {
    /// Consumer-group worker: XREADGROUP COUNT 1 of its streams in turn
    /// (consumer name `consumer`), each answered by the XACK of the id read.
    Group {
        /// Stream numbers, read in turn.
        streams: Vec<u64>,
        /// Index of the next stream to read.
        next: usize,
        /// Consumer name.
        consumer: Vec<u8>,
    },
    /// GET of random keys (tracking on or off: set up before).
    Reader,
    /// SET of random keys.
    Writer,
    /// PSUBSCRIBEd (set up before): only reads.
    Subscriber,
}

/// What every connection of the run shares.
#[derive(Clone, Debug)]
pub struct Shared {
    /// Requests outstanding per reader, writer or worker.
    pub depth: usize,
    /// Requests outstanding per writer in the tracking flow (readers use
    /// `depth`).
    pub writer_depth: usize,
    /// Keys of the string keyspace (GET and SET pick uniformly).
    pub keys: u64,
    /// Key bytes (strings and streams).
    pub key_bytes: usize,
    /// The value every SET writes.
    pub value: Vec<u8>,
    /// Start of the counted window.
    pub measure_from: Instant,
    /// End of the run.
    pub end: Instant,
}

/// Counts of one thread (then of the run).
#[derive(Clone, Debug, Default)]
pub struct Tally {
    /// XREADGROUP replies that delivered an entry (window).
    pub reads: u64,
    /// XACK replies `:1` (window).
    pub acks: u64,
    /// GET replies (window).
    pub gets: u64,
    /// GET replies that were a value (window).
    pub hits: u64,
    /// SET replies `+OK` (window).
    pub sets: u64,
    /// `invalidate` pushes (window).
    pub invalidations: u64,
    /// Keys those pushes named (window; the null form counts none).
    pub invalidated_keys: u64,
    /// `pmessage`s received (window).
    pub messages: u64,
    /// Entries delivered over the whole run.
    pub reads_total: u64,
    /// XACKs answered `:1` over the whole run.
    pub acks_total: u64,
    /// XREADGROUPs answered null (the run's streams ran dry), whole run.
    pub dry_reads: u64,
    /// XACKs answered `:0` (acknowledged nothing), whole run.
    pub acks_zero: u64,
    /// Error replies, malformed or unexpected frames, closed or stalled
    /// connections, whole run.
    pub errors: u64,
    /// The first error, described.
    pub first_error: Option<String>,
}

impl Tally {
    fn error(&mut self, what: impl FnOnce() -> String) {
        self.errors += 1;
        if self.first_error.is_none() {
            self.first_error = Some(what());
        }
    }

    /// Adds `o` into `self`.
    pub fn merge(&mut self, o: &Tally) {
        self.reads += o.reads;
        self.acks += o.acks;
        self.gets += o.gets;
        self.hits += o.hits;
        self.sets += o.sets;
        self.invalidations += o.invalidations;
        self.invalidated_keys += o.invalidated_keys;
        self.messages += o.messages;
        self.reads_total += o.reads_total;
        self.acks_total += o.acks_total;
        self.dry_reads += o.dry_reads;
        self.acks_zero += o.acks_zero;
        self.errors += o.errors;
        if self.first_error.is_none() {
            self.first_error.clone_from(&o.first_error);
        }
    }
}

/// An outstanding request.
#[derive(Debug)]
enum Req {
    Get,
    Set,
    /// XREADGROUP of stream `.0`.
    Read(u64),
    /// XACK of the entry a read delivered.
    Ack,
}

struct Conn {
    sock: TcpStream,
    rbuf: Vec<u8>,
    rhead: usize,
    rtail: usize,
    wbuf: Vec<u8>,
    whead: usize,
    want_writable: bool,
    pending: VecDeque<Req>,
    role: Role,
    depth: usize,
    rng: SplitMix64,
    alive: bool,
    last_frame: Instant,
    key: Vec<u8>,
}

/// Runs one thread over `conns` (connected, set up, nonblocking) until the
/// run's end and the drain after it.
pub fn run_thread(shared: &Shared, conns: Vec<(std::net::TcpStream, Role)>, seed: u64) -> Tally {
    let mut tally = Tally::default();
    let mut poll = match Poll::new() {
        Ok(p) => p,
        Err(e) => {
            tally.error(|| format!("cannot create poll: {e}"));
            return tally;
        }
    };
    let now = Instant::now();
    let mut conns: Vec<Conn> = conns
        .into_iter()
        .enumerate()
        .map(|(i, (s, role))| Conn {
            sock: TcpStream::from_std(s),
            rbuf: vec![0; READ_BUF_BYTES],
            rhead: 0,
            rtail: 0,
            wbuf: Vec::with_capacity(4096),
            whead: 0,
            want_writable: false,
            pending: VecDeque::new(),
            depth: if matches!(role, Role::Writer) { shared.writer_depth } else { shared.depth },
            role,
            rng: SplitMix64::new(seed.wrapping_add(i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
            alive: true,
            last_frame: now,
            key: Vec::with_capacity(shared.key_bytes),
        })
        .collect();
    for (i, c) in conns.iter_mut().enumerate() {
        if let Err(e) = poll.registry().register(&mut c.sock, Token(i), Interest::READABLE) {
            tally.error(|| format!("cannot register a connection: {e}"));
            c.alive = false;
            continue;
        }
        c.refill(shared);
        c.flush(&poll, i, &mut tally);
    }
    let mut events = Events::with_capacity(1024);
    loop {
        let now = Instant::now();
        let stopping = now >= shared.end;
        let busy = conns.iter().any(|c| c.alive && !c.pending.is_empty());
        if stopping && (!busy || now >= shared.end + DRAIN_MAX) {
            break;
        }
        let wait = if stopping { POLL_WAIT_MAX } else { (shared.end - now).min(POLL_WAIT_MAX) };
        if let Err(e) = poll.poll(&mut events, Some(wait)) {
            if e.kind() == ErrorKind::Interrupted {
                continue;
            }
            tally.error(|| format!("poll failed: {e}"));
            break;
        }
        for ev in &events {
            let i = ev.token().0;
            let c = &mut conns[i];
            if !c.alive {
                continue;
            }
            if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                c.read(shared, &mut tally);
            }
            if c.alive {
                if !stopping {
                    c.refill(shared);
                }
                c.flush(&poll, i, &mut tally);
            }
        }
        let now = Instant::now();
        for c in conns.iter_mut().filter(|c| c.alive && !c.pending.is_empty()) {
            if now - c.last_frame > STALL {
                tally.error(|| format!("no reply for {} s with requests outstanding", STALL.as_secs()));
                c.alive = false;
            }
        }
    }
    tally
}

impl Conn {
    /// Writes new requests until `depth` are outstanding (workers: reads;
    /// their acks are written when the reads are answered).
    fn refill(&mut self, shared: &Shared) {
        while self.pending.len() < self.depth {
            match &mut self.role {
                Role::Subscriber => return,
                Role::Reader => {
                    key_into(self.rng.next_u64() % shared.keys, shared.key_bytes, &mut self.key);
                    push_command(&mut self.wbuf, &[b"GET", &self.key]);
                    self.pending.push_back(Req::Get);
                }
                Role::Writer => {
                    key_into(self.rng.next_u64() % shared.keys, shared.key_bytes, &mut self.key);
                    push_command(&mut self.wbuf, &[b"SET", &self.key, &shared.value]);
                    self.pending.push_back(Req::Set);
                }
                Role::Group { streams, next, consumer } => {
                    let s = streams[*next];
                    *next = (*next + 1) % streams.len();
                    stream_key_into(s, shared.key_bytes, &mut self.key);
                    push_command(
                        &mut self.wbuf,
                        &[b"XREADGROUP", b"GROUP", GROUP, consumer, b"COUNT", b"1", b"STREAMS", &self.key, b">"],
                    );
                    self.pending.push_back(Req::Read(s));
                }
            }
        }
    }

    /// Reads until the socket would block, handling every complete frame.
    fn read(&mut self, shared: &Shared, tally: &mut Tally) {
        loop {
            if self.rtail == self.rbuf.len() {
                if self.rhead > 0 {
                    self.rbuf.copy_within(self.rhead..self.rtail, 0);
                    self.rtail -= self.rhead;
                    self.rhead = 0;
                } else if self.rbuf.len() < READ_BUF_BYTES_MAX {
                    let len = self.rbuf.len() * 2;
                    self.rbuf.resize(len, 0);
                } else {
                    tally.error(|| "a frame longer than READ_BUF_BYTES_MAX".to_string());
                    self.alive = false;
                    return;
                }
            }
            match self.sock.read(&mut self.rbuf[self.rtail..]) {
                Ok(0) => {
                    tally.error(|| "the server closed a connection".to_string());
                    self.alive = false;
                    return;
                }
                Ok(n) => {
                    self.rtail += n;
                    let now = Instant::now();
                    self.last_frame = now;
                    let counted = now >= shared.measure_from && now < shared.end;
                    if !self.frames(shared, counted, tally) {
                        self.alive = false;
                        return;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    tally.error(|| format!("read failed: {e}"));
                    self.alive = false;
                    return;
                }
            }
        }
    }

    /// Handles the complete frames in the read buffer; `false` if the
    /// connection is out of step.
    fn frames(&mut self, shared: &Shared, counted: bool, tally: &mut Tally) -> bool {
        let win = u64::from(counted);
        loop {
            let buf = &self.rbuf[self.rhead..self.rtail];
            let (frame, used) = match frame::parse(buf) {
                Ok(Some(x)) => x,
                Ok(None) => return true,
                Err(e) => {
                    tally.error(|| format!("malformed frame: {}", e.0));
                    return false;
                }
            };
            if let Some(keys) = invalidated_keys(frame) {
                tally.invalidations += win;
                tally.invalidated_keys += win * keys as u64;
            } else if matches!(self.role, Role::Subscriber) {
                if !is_pmessage(frame) {
                    tally.error(|| format!("a subscriber got {frame:?}"));
                    return false;
                }
                tally.messages += win;
            } else {
                let Some(req) = self.pending.pop_front() else {
                    tally.error(|| format!("a frame with no request outstanding: {frame:?}"));
                    return false;
                };
                match (req, frame) {
                    (_, Frame::Error(e)) => tally.error(|| format!("error reply: {}", String::from_utf8_lossy(e))),
                    (Req::Get, Frame::Bulk(_)) => {
                        tally.gets += win;
                        tally.hits += win;
                    }
                    (Req::Get, Frame::Null) => tally.gets += win,
                    (Req::Set, Frame::Simple(b"OK")) => tally.sets += win,
                    (Req::Read(s), f) => match first_entry_id(f) {
                        Some(Read::Entry(id)) => {
                            tally.reads += win;
                            tally.reads_total += 1;
                            stream_key_into(s, shared.key_bytes, &mut self.key);
                            push_command(&mut self.wbuf, &[b"XACK", &self.key, GROUP, id]);
                            self.pending.push_back(Req::Ack);
                        }
                        Some(Read::Empty) => tally.dry_reads += 1,
                        None => {
                            tally.error(|| format!("XREADGROUP answered {f:?}"));
                            return false;
                        }
                    },
                    (Req::Ack, Frame::Integer(1)) => {
                        tally.acks += win;
                        tally.acks_total += 1;
                    }
                    (Req::Ack, Frame::Integer(0)) => tally.acks_zero += 1,
                    (req, f) => {
                        tally.error(|| format!("{req:?} answered {f:?}"));
                        return false;
                    }
                }
            }
            self.rhead += used;
            if self.rhead == self.rtail {
                self.rhead = 0;
                self.rtail = 0;
            }
        }
    }

    /// Writes what is buffered; asks for writability if the socket is full.
    fn flush(&mut self, poll: &Poll, i: usize, tally: &mut Tally) {
        while self.whead < self.wbuf.len() {
            match self.sock.write(&self.wbuf[self.whead..]) {
                Ok(0) => {
                    tally.error(|| "write returned 0".to_string());
                    self.alive = false;
                    return;
                }
                Ok(n) => self.whead += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    tally.error(|| format!("write failed: {e}"));
                    self.alive = false;
                    return;
                }
            }
        }
        if self.whead == self.wbuf.len() {
            self.wbuf.clear();
            self.whead = 0;
        }
        let want = self.whead < self.wbuf.len();
        if want != self.want_writable {
            let interest = if want { Interest::READABLE | Interest::WRITABLE } else { Interest::READABLE };
            if let Err(e) = poll.registry().reregister(&mut self.sock, Token(i), interest) {
                tally.error(|| format!("cannot reregister: {e}"));
                self.alive = false;
            }
            self.want_writable = want;
        }
    }
}

/// Writes stream `s`'s key: `key_into`'s hex with its first byte
/// [`STREAM_KEY_LETTER`] (never a string key of the other flows).
pub fn stream_key_into(s: u64, key_bytes: usize, out: &mut Vec<u8>) {
    key_into(s, key_bytes, out);
    out[0] = STREAM_KEY_LETTER;
}

/// Appends a RESP command of `args` (a multibulk array).
pub fn push_command(out: &mut Vec<u8>, args: &[&[u8]]) {
    use std::io::Write as _;
    let _ = write!(out, "*{}\r\n", args.len());
    for a in args {
        let _ = write!(out, "${}\r\n", a.len());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// Entry ids, in the order seen.
    type Ids = Vec<Vec<u8>>;

    /// A fake server on one connection: XREADGROUP delivers entries `1-1`,
    /// `2-1`, … (recorded), XACK answers `:1` for a delivered, not yet
    /// acked id and `:0` otherwise, GET answers an invalidate push then a
    /// bulk. Returns (ids delivered, ids acked) when the client leaves.
    fn fake_server(listener: TcpListener) -> std::thread::JoinHandle<(Ids, Ids)> {
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let (mut delivered, mut acked) = (Vec::new(), Vec::new());
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            loop {
                let n = std::io::Read::read(&mut s, &mut chunk).unwrap_or(0);
                if n == 0 {
                    return (delivered, acked);
                }
                buf.extend_from_slice(&chunk[..n]);
                let mut out = Vec::new();
                while let Some((f, used)) = frame::parse(&buf).unwrap() {
                    let Frame::Aggregate { len, body, .. } = f else { panic!("not a command: {f:?}") };
                    let args: Vec<&[u8]> = frame::elements(len, body)
                        .map(|a| match a {
                            Frame::Bulk(b) => b,
                            _ => panic!("not a bulk"),
                        })
                        .collect();
                    match args[0] {
                        b"XREADGROUP" => {
                            let id = format!("{}-1", delivered.len() + 1).into_bytes();
                            let k = args[7];
                            let reply = format!("*1\r\n*2\r\n${}\r\n", k.len());
                            out.extend_from_slice(reply.as_bytes());
                            out.extend_from_slice(k);
                            let entry = format!("\r\n*1\r\n*2\r\n${}\r\n", id.len());
                            out.extend_from_slice(entry.as_bytes());
                            out.extend_from_slice(&id);
                            out.extend_from_slice(b"\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n");
                            delivered.push(id);
                        }
                        b"XACK" => {
                            let id = args[3].to_vec();
                            let fresh = delivered.contains(&id) && !acked.contains(&id);
                            out.extend_from_slice(if fresh { b":1\r\n" } else { b":0\r\n" });
                            acked.push(id);
                        }
                        b"GET" => out.extend_from_slice(b">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n$1\r\nv\r\n"),
                        other => panic!("unexpected {:?}", String::from_utf8_lossy(other)),
                    }
                    buf.drain(..used);
                }
                std::io::Write::write_all(&mut s, &out).unwrap();
            }
        })
    }

    /// One connection of `role` against the fake server for a short run
    /// (every frame counted).
    fn run_against_fake(role: Role) -> (Tally, Ids, Ids) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = fake_server(listener);
        let sock = std::net::TcpStream::connect(addr).unwrap();
        sock.set_nonblocking(true).unwrap();
        let now = Instant::now();
        let shared = Shared {
            depth: 4,
            writer_depth: 4,
            keys: 10,
            key_bytes: 4,
            value: b"v".to_vec(),
            measure_from: now,
            end: now + Duration::from_millis(100),
        };
        let tally = run_thread(&shared, vec![(sock, role)], 1);
        let (delivered, acked) = server.join().unwrap();
        (tally, delivered, acked)
    }

    #[test]
    fn workers_ack_the_ids_they_read() {
        let role = Role::Group { streams: vec![0, 1, 2, 3, 4], next: 0, consumer: b"c0".to_vec() };
        let (tally, delivered, acked) = run_against_fake(role);
        assert_eq!(tally.errors, 0, "{:?}", tally.first_error);
        assert!(tally.reads_total > 0);
        // Every entry read was acked, by its own id, once; the drain left
        // nothing unacknowledged.
        assert_eq!(tally.reads_total, delivered.len() as u64);
        assert_eq!(tally.acks_total, tally.reads_total);
        assert_eq!(tally.acks_zero, 0);
        let mut sorted = acked.clone();
        sorted.sort();
        let mut want = delivered.clone();
        want.sort();
        assert_eq!(sorted, want);
    }

    #[test]
    fn readers_count_pushes_apart_from_replies() {
        let (tally, _, _) = run_against_fake(Role::Reader);
        assert_eq!(tally.errors, 0, "{:?}", tally.first_error);
        assert!(tally.gets > 0);
        // One push before every reply: none taken for a reply (every GET
        // hit), as many as GETs (give or take the one whose push and reply
        // were read either side of the window's end).
        assert_eq!(tally.hits, tally.gets);
        assert!(tally.invalidations.abs_diff(tally.gets) <= 1, "{tally:?}");
        assert_eq!(tally.invalidated_keys, tally.invalidations);
    }

    #[test]
    fn commands_are_encoded() {
        let mut out = Vec::new();
        let mut key = Vec::new();
        stream_key_into(0x2a, 4, &mut key);
        assert_eq!(key, b"x02a");
        push_command(&mut out, &[b"XACK", &key, GROUP, b"3-1"]);
        assert_eq!(out, b"*4\r\n$4\r\nXACK\r\n$4\r\nx02a\r\n$1\r\ng\r\n$3\r\n3-1\r\n");
    }
}
