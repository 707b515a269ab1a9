//! One client thread: a mio event loop over its nonblocking connections,
//! each keeping `depth` requests outstanding (closed loop), or sending each
//! request when its [`Schedule`] says it is due (open loop, `--rate`).
//!
//! Per connection, requests go out in batches, one `write` per batch; the
//! replies are read until the socket would block and parsed incrementally
//! (`proto.rs`), each completing the oldest outstanding request. A request's
//! latency runs from the clock read just before its batch was written (open
//! loop: from its due time) to the clock read just after the read that
//! completed its reply.
//!
//! Open loop: epoll waits in whole milliseconds (mio rounds up), too coarse
//! for requests due tens of microseconds apart. When the next request is
//! due within [`POLL_RESOLUTION`], the loop polls without waiting and, if
//! nothing arrived, sleeps at most [`OPEN_LOOP_NAP`] (nanosleep: the
//! kernel's timer slack, 50 µs by default, adds to it). A request may so
//! be written up to about 100 µs after it was due, and a reply read as much
//! after it arrived; both count in its latency (the client's own lateness
//! is part of what it measures, never hidden). Every reply
//! that is not the one the front request expects is counted in [`Errors`];
//! a reply that puts the connection out of step (a malformed one, or one no
//! request can have asked for) also closes that connection.

use super::command::{self, Command, Expect, Outcome};
use super::proto::{self, get_ends_with_end, push_get, push_set, Event, Protocol};
use super::schedule::{self, Schedule};
use crate::workload::{value_of, Op};
use hdrhistogram::Histogram;
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A thread gives up when none of its connections has received a reply
/// for this long while requests were outstanding.
pub const STALL: Duration = Duration::from_secs(10);
/// Initial read buffer per connection; grown if one reply needs more.
const READ_BUF_BYTES: usize = 32 << 10;
/// Latency histogram range, in nanoseconds (1 ns .. 100 s, 3 digits).
const HIST_MAX_NS: u64 = 100_000_000_000;
/// Prebuilt values a run's SETs choose from (by key id).
pub const SET_VALUES: usize = 16;
/// epoll's timeout granularity: a wait shorter than this is not left to
/// `poll` (open loop).
const POLL_RESOLUTION: Duration = Duration::from_millis(1);
/// Longest sleep of an open-loop thread waiting for a request due within
/// [`POLL_RESOLUTION`] (it does not see replies while it sleeps).
const OPEN_LOOP_NAP: Duration = Duration::from_micros(50);

/// What every connection of a run shares.
#[derive(Clone, Debug)]
pub struct Config {
    /// Wire protocol.
    pub proto: Protocol,
    /// Key bytes (fixed-width hex, `workload::key_into`).
    pub key_bytes: usize,
    /// Value bytes of every SET, and of every GET hit.
    pub value_bytes: usize,
    /// Requests outstanding per connection (closed loop), or at most
    /// (open loop: `schedule::OUTSTANDING_MAX` unless a test says otherwise).
    pub depth: usize,
    /// Keys per GET request.
    pub multiget: usize,
    /// What the timed phase sends (`command.rs`), and what the preload
    /// fills: strings for [`Command::Getset`], else collections.
    pub command: Command,
    /// Members per collection (collection commands only).
    pub members: usize,
    /// Every timed request names key id 0.
    pub hot_key: bool,
}

/// Where a connection's requests come from.
#[derive(Debug)]
pub enum Source {
    /// SET keys `next..end` once each, to `value_of(id, 0, value_bytes)`
    /// (collection commands: units `next..end`, unit `u` the
    /// `u % fill_requests`-th request filling key `u / fill_requests`).
    Preload {
        /// Next key id.
        next: u64,
        /// One past the last key id.
        end: u64,
    },
    /// Requests cut from an op stream `multiget` ops at a time, cycled: a
    /// chunk whose first op is a GET is a GET of the chunk's keys, else it
    /// is a SET of its first key. The stream's length is a multiple of
    /// `multiget`.
    Ops {
        /// The stream, generated before the run.
        ops: Vec<Op>,
        /// Start of the next chunk.
        pos: usize,
        /// Open loop: when each request is due (`None`: closed loop).
        schedule: Option<Schedule>,
    },
}

/// Timing of a thread's loop.
#[derive(Clone, Copy, Debug)]
pub enum Phase {
    /// Run the sources dry, record everything.
    Preload,
    /// Run until `end`; record requests completed in `[measure_from, end)`.
    Timed {
        /// Start of the measured window (after the warm-up).
        measure_from: Instant,
        /// End of the run.
        end: Instant,
    },
}

/// Unexpected replies and failures, by kind. None is ever ignored.
#[derive(Clone, Debug, Default)]
pub struct Errors {
    /// `ERROR` replies.
    pub error: u64,
    /// `CLIENT_ERROR` replies.
    pub client_error: u64,
    /// `SERVER_ERROR` replies.
    pub server_error: u64,
    /// A SET answered `NOT_STORED`/`EXISTS`/`NOT_FOUND` (`NS`/`EX`/`NF`).
    pub not_stored: u64,
    /// A hit for a key that was not (or no longer) expected by the request.
    pub wrong_key: u64,
    /// A hit whose value is not `value_bytes` long.
    pub wrong_size: u64,
    /// A malformed reply, or one that does not fit the outstanding request
    /// (the connection is closed: it is out of step).
    pub unexpected: u64,
    /// Connections closed by the server or failed with an I/O error.
    pub closed: u64,
    /// Connections abandoned with requests outstanding and no reply for
    /// [`STALL`].
    pub timeout: u64,
    /// The first error seen, described.
    pub first: Option<String>,
}

impl Errors {
    /// All errors.
    pub fn total(&self) -> u64 {
        self.error
            + self.client_error
            + self.server_error
            + self.not_stored
            + self.wrong_key
            + self.wrong_size
            + self.unexpected
            + self.closed
            + self.timeout
    }

    fn note(&mut self, what: impl FnOnce() -> String) {
        if self.first.is_none() {
            self.first = Some(what());
        }
    }

    fn merge(&mut self, o: &Errors) {
        self.error += o.error;
        self.client_error += o.client_error;
        self.server_error += o.server_error;
        self.not_stored += o.not_stored;
        self.wrong_key += o.wrong_key;
        self.wrong_size += o.wrong_size;
        self.unexpected += o.unexpected;
        self.closed += o.closed;
        self.timeout += o.timeout;
        if self.first.is_none() {
            self.first.clone_from(&o.first);
        }
    }

    /// The counts as a JSON object.
    pub fn to_json(&self) -> Value {
        json!({
            "total": self.total(),
            "error": self.error,
            "client_error": self.client_error,
            "server_error": self.server_error,
            "not_stored": self.not_stored,
            "wrong_key": self.wrong_key,
            "wrong_size": self.wrong_size,
            "unexpected": self.unexpected,
            "closed": self.closed,
            "timeout": self.timeout,
            "first": self.first,
        })
    }
}

/// What a thread measured.
#[derive(Clone, Debug)]
pub struct Stats {
    /// Latency of every recorded request, in nanoseconds.
    pub hist: Histogram<u64>,
    /// Requests completed (GETs and SETs), not counting those answered with
    /// an error.
    pub requests: u64,
    /// GET requests completed.
    pub gets: u64,
    /// Keys looked up by those GETs.
    pub get_keys: u64,
    /// Hits among them.
    pub hits: u64,
    /// SET requests completed.
    pub sets: u64,
    /// SETs answered `STORED` / `HD`.
    pub stored: u64,
    /// Errors over the whole thread run (warm-up included).
    pub errors: Errors,
    /// Replies that completed a request over the whole run, warm-up and
    /// errors included (progress only).
    pub answered: u64,
}

impl Default for Stats {
    fn default() -> Stats {
        Stats {
            hist: Histogram::new_with_bounds(1, HIST_MAX_NS, 3).expect("valid histogram bounds"),
            requests: 0,
            gets: 0,
            get_keys: 0,
            hits: 0,
            sets: 0,
            stored: 0,
            errors: Errors::default(),
            answered: 0,
        }
    }
}

impl Stats {
    /// Key operations: every key of every GET, plus every SET.
    pub fn key_ops(&self) -> u64 {
        self.get_keys + self.sets
    }

    /// Adds `o` into `self`.
    pub fn merge(&mut self, o: &Stats) {
        self.hist.add(&o.hist).expect("histograms of equal bounds");
        self.requests += o.requests;
        self.gets += o.gets;
        self.get_keys += o.get_keys;
        self.hits += o.hits;
        self.sets += o.sets;
        self.stored += o.stored;
        self.errors.merge(&o.errors);
        self.answered += o.answered;
    }
}

/// An outstanding request.
#[derive(Debug)]
struct Pending {
    /// When it was written (closed loop) or due (open loop).
    sent: Instant,
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    /// GET of `ops[first..first + n]`'s keys; hits are matched to them in
    /// order from `next`.
    Get {
        first: usize,
        n: usize,
        next: usize,
        hits: usize,
        failed: usize,
    },
    Set,
    /// A collection command (or a preload fill) expecting `expect`;
    /// `hit` is set by its reply.
    Coll {
        expect: Expect,
        hit: bool,
    },
}

impl Kind {
    fn name(&self) -> &'static str {
        match self {
            Kind::Get { .. } => "GET",
            Kind::Set => "SET",
            Kind::Coll { .. } => "collection command",
        }
    }
}

#[derive(Debug)]
struct Conn {
    sock: TcpStream,
    token: Token,
    rbuf: Vec<u8>,
    rhead: usize,
    rtail: usize,
    wbuf: Vec<u8>,
    whead: usize,
    want_writable: bool,
    pending: VecDeque<Pending>,
    source: Source,
    alive: bool,
    /// Requests sent (collection commands: picks the member, and the
    /// LPUSH/LPOP alternation on a hot key).
    seq: u64,
}

/// Shared, read-only request material of a thread.
struct Material<'a> {
    cfg: &'a Config,
    set_values: Vec<Vec<u8>>,
    scratch: Vec<u8>,
    coll: command::Scratch,
}

/// Runs one client thread over `conns` (connected, nonblocking) until the
/// phase ends, and returns what it measured. Replies are added to `answered`
/// as they come (for a progress bar). Connections are closed on return.
pub fn run_thread(
    cfg: &Config,
    conns: Vec<(std::net::TcpStream, Source)>,
    phase: Phase,
    answered: &AtomicU64,
) -> Stats {
    let mut stats = Stats::default();
    let mut poll = match Poll::new() {
        Ok(p) => p,
        Err(e) => {
            stats.errors.closed += conns.len() as u64;
            stats.errors.note(|| format!("cannot create poll: {e}"));
            return stats;
        }
    };
    let mut mat = Material {
        cfg,
        set_values: (0..SET_VALUES as u64).map(|i| value_of(i, 1, cfg.value_bytes)).collect(),
        scratch: Vec::with_capacity(cfg.key_bytes),
        coll: command::Scratch::default(),
    };
    let mut conns: Vec<Conn> = conns
        .into_iter()
        .enumerate()
        .map(|(i, (s, source))| Conn {
            sock: TcpStream::from_std(s),
            token: Token(i),
            rbuf: vec![0; READ_BUF_BYTES],
            rhead: 0,
            rtail: 0,
            wbuf: Vec::with_capacity(4096),
            whead: 0,
            want_writable: false,
            pending: VecDeque::with_capacity(cfg.depth),
            source,
            alive: true,
            seq: 0,
        })
        .collect();
    let window = match phase {
        Phase::Preload => None,
        Phase::Timed { measure_from, end } => Some((measure_from, end)),
    };
    for c in &mut conns {
        if let Err(e) = poll.registry().register(&mut c.sock, c.token, Interest::READABLE) {
            c.fail(&mut stats.errors, &poll, &format!("cannot register connection: {e}"));
            continue;
        }
        c.refill(&mut mat, Instant::now());
        c.flush(&poll, &mut stats.errors);
    }
    let open_loop = conns.iter().any(|c| c.schedule().is_some());
    let mut events = Events::with_capacity(1024);
    let mut last_progress = Instant::now();
    let mut published = 0;
    loop {
        if stats.answered != published {
            answered.fetch_add(stats.answered - published, Ordering::Relaxed);
            published = stats.answered;
        }
        let now = Instant::now();
        let mut timeout = match window {
            Some((_, end)) if now >= end => break,
            Some((_, end)) => (end - now).min(Duration::from_millis(100)),
            None if conns.iter().all(|c| !c.alive || (c.pending.is_empty() && c.exhausted())) => break,
            None => Duration::from_millis(100),
        };
        if conns.iter().all(|c| !c.alive) {
            break;
        }
        if now - last_progress > STALL {
            for c in conns.iter_mut().filter(|c| c.alive && !c.pending.is_empty()) {
                stats.errors.timeout += 1;
                stats.errors.note(|| format!("no reply for {} s with requests outstanding", STALL.as_secs()));
                c.close(&poll);
            }
            last_progress = now;
            continue;
        }
        if open_loop {
            let next_due = conns.iter().filter(|c| c.alive).filter_map(|c| c.next_due(cfg.depth)).min();
            if let Some(due) = next_due {
                timeout = timeout.min(due.saturating_duration_since(now));
            }
        }
        // Open loop: a wait below epoll's resolution is a poll that does
        // not block, then a short nap if nothing arrived (module comment).
        let nap = open_loop && timeout < POLL_RESOLUTION;
        let wait = if nap {
            Duration::ZERO
        } else if open_loop {
            timeout - POLL_RESOLUTION / 2
        } else {
            timeout
        };
        if let Err(e) = poll.poll(&mut events, Some(wait)) {
            if e.kind() == ErrorKind::Interrupted {
                continue;
            }
            stats.errors.closed += conns.iter().filter(|c| c.alive).count() as u64;
            stats.errors.note(|| format!("poll failed: {e}"));
            break;
        }
        for ev in &events {
            let c = &mut conns[ev.token().0];
            if !c.alive {
                continue;
            }
            if ev.is_writable() {
                c.flush(&poll, &mut stats.errors);
            }
            if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                if c.read(&mut stats, &mat, &poll, window) {
                    last_progress = Instant::now();
                }
                if c.alive {
                    c.refill(&mut mat, Instant::now());
                    c.flush(&poll, &mut stats.errors);
                }
            }
        }
        if open_loop {
            let now = Instant::now();
            for c in conns.iter_mut().filter(|c| c.alive && c.next_due(cfg.depth).is_some_and(|d| d <= now)) {
                c.refill(&mut mat, now);
                c.flush(&poll, &mut stats.errors);
            }
            if nap && events.is_empty() {
                std::thread::sleep(timeout.min(OPEN_LOOP_NAP));
            }
        }
    }
    answered.fetch_add(stats.answered - published, Ordering::Relaxed);
    stats
}

impl Conn {
    fn exhausted(&self) -> bool {
        matches!(self.source, Source::Preload { next, end } if next >= end)
    }

    fn schedule(&self) -> Option<&Schedule> {
        match &self.source {
            Source::Ops { schedule, .. } => schedule.as_ref(),
            Source::Preload { .. } => None,
        }
    }

    /// Open loop: when the next request is due, unless the connection has
    /// `depth` outstanding (then a reply must come first).
    fn next_due(&self, depth: usize) -> Option<Instant> {
        self.schedule().filter(|_| self.pending.len() < depth).map(Schedule::next_due)
    }

    /// Closed loop: appends requests until `depth` are outstanding, all
    /// sent at `now`. Open loop: appends every request due by `now` (up to
    /// `depth` outstanding), each timed from its due time; those beyond
    /// wait in the client, still timed from their due times.
    fn refill(&mut self, mat: &mut Material<'_>, now: Instant) {
        let cfg = mat.cfg;
        while self.pending.len() < cfg.depth {
            let sent = match &mut self.source {
                Source::Ops { schedule: Some(s), .. } => match s.take_due(now) {
                    Some(due) => due,
                    None => break,
                },
                _ => now,
            };
            let kind = match &mut self.source {
                Source::Preload { next, end } => {
                    if *next >= *end {
                        break;
                    }
                    let unit = *next;
                    *next += 1;
                    if let Some(ty) = cfg.command.ty() {
                        // A collection's preload is `fill_requests` units.
                        let chunks = command::fill_requests(cfg.members);
                        let (key, chunk) = (unit / chunks, unit % chunks);
                        let values = &mat.set_values;
                        let value = |j: u64| values[((key + j) % SET_VALUES as u64) as usize].as_slice();
                        let js = command::fill_chunk(chunk, cfg.members);
                        command::push_fill(ty, &mut self.wbuf, key, js, cfg.key_bytes, value, &mut mat.coll);
                        Kind::Coll { expect: Expect::Write, hit: false }
                    } else {
                        let key = unit;
                        let v = value_of(key, 0, cfg.value_bytes);
                        let proto = if cfg.proto == Protocol::Resp { Protocol::Resp } else { Protocol::Text };
                        push_set(proto, &mut self.wbuf, key, cfg.key_bytes, &v, &mut mat.scratch);
                        Kind::Set
                    }
                }
                Source::Ops { ops, pos, .. } => {
                    let first = *pos;
                    let n = cfg.multiget;
                    let chunk = &ops[first..first + n];
                    *pos = if first + n >= ops.len() { 0 } else { first + n };
                    let hot = cfg.hot_key;
                    let key_of = |o: &crate::workload::Op| if hot { 0 } else { u64::from(o.key) };
                    if cfg.command != Command::Getset {
                        let t = command::Target {
                            key: key_of(&chunk[0]),
                            member: self.seq % cfg.members as u64,
                            score_key: u64::from(chunk[0].key),
                        };
                        let cmd = cfg.command.at(self.seq, hot);
                        let v = &mat.set_values[((t.key + t.member) % SET_VALUES as u64) as usize];
                        command::push_request(cmd, &mut self.wbuf, t, cfg.key_bytes, v, &mut mat.coll);
                        Kind::Coll { expect: cmd.expect(), hit: false }
                    } else if chunk[0].get {
                        let keys = chunk.iter().map(key_of);
                        push_get(cfg.proto, &mut self.wbuf, keys, cfg.key_bytes, &mut mat.scratch);
                        Kind::Get { first, n, next: 0, hits: 0, failed: 0 }
                    } else {
                        let key = key_of(&chunk[0]);
                        let v = &mat.set_values[key as usize % SET_VALUES];
                        push_set(cfg.proto, &mut self.wbuf, key, cfg.key_bytes, v, &mut mat.scratch);
                        Kind::Set
                    }
                }
            };
            self.seq += 1;
            self.pending.push_back(Pending { sent, kind });
        }
    }

    /// Writes what is buffered; on a partial write, waits for writability.
    fn flush(&mut self, poll: &Poll, errors: &mut Errors) {
        while self.whead < self.wbuf.len() {
            match self.sock.write(&self.wbuf[self.whead..]) {
                Ok(0) => {
                    self.fail(errors, poll, "write returned 0");
                    return;
                }
                Ok(n) => self.whead += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    if !self.want_writable {
                        self.want_writable = true;
                        let interest = Interest::READABLE | Interest::WRITABLE;
                        if let Err(e) = poll.registry().reregister(&mut self.sock, self.token, interest) {
                            self.fail(errors, poll, &format!("reregister: {e}"));
                        }
                    }
                    return;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    self.fail(errors, poll, &format!("write: {e}"));
                    return;
                }
            }
        }
        self.wbuf.clear();
        self.whead = 0;
        if self.want_writable {
            self.want_writable = false;
            if let Err(e) = poll.registry().reregister(&mut self.sock, self.token, Interest::READABLE) {
                self.fail(errors, poll, &format!("reregister: {e}"));
            }
        }
    }

    /// Reads until the socket is drained, completing requests; returns
    /// whether any reply arrived.
    fn read(&mut self, stats: &mut Stats, mat: &Material<'_>, poll: &Poll, window: Option<(Instant, Instant)>) -> bool {
        let mut progress = false;
        loop {
            if self.rtail == self.rbuf.len() {
                if self.rhead > 0 {
                    self.rbuf.copy_within(self.rhead..self.rtail, 0);
                    self.rtail -= self.rhead;
                    self.rhead = 0;
                } else {
                    self.rbuf.resize(self.rbuf.len() * 2, 0);
                }
            }
            let room = self.rbuf.len() - self.rtail;
            match self.sock.read(&mut self.rbuf[self.rtail..]) {
                Ok(0) => {
                    self.fail(&mut stats.errors, poll, "connection closed by the server");
                    return progress;
                }
                Ok(n) => {
                    self.rtail += n;
                    let now = Instant::now();
                    progress |= self.consume(stats, mat, poll, now, window);
                    // A short read emptied the socket's receive queue; bytes
                    // arriving after it raise a new edge-triggered event, so
                    // the read that would only say WouldBlock is skipped (as
                    // tokio does): one syscall less per reply batch, on a
                    // client that shares the machine with the server.
                    if !self.alive || n < room {
                        return progress;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return progress,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    self.fail(&mut stats.errors, poll, &format!("read: {e}"));
                    return progress;
                }
            }
        }
    }

    /// Parses and applies every complete reply in the read buffer.
    fn consume(
        &mut self,
        stats: &mut Stats,
        mat: &Material<'_>,
        poll: &Poll,
        now: Instant,
        window: Option<(Instant, Instant)>,
    ) -> bool {
        let mut progress = false;
        while self.rhead < self.rtail {
            match proto::parse(mat.cfg.proto_of(&self.source), &self.rbuf[self.rhead..self.rtail]) {
                Ok(Some((event, used))) => {
                    self.rhead += used;
                    progress = true;
                    self.apply(event, stats, mat, poll, now, window);
                    if !self.alive {
                        return progress;
                    }
                }
                Ok(None) => break,
                Err(m) => {
                    stats.errors.unexpected += 1;
                    stats.errors.note(|| format!("malformed reply: {}", m.0));
                    self.close(poll);
                    return progress;
                }
            }
        }
        if self.rhead == self.rtail {
            self.rhead = 0;
            self.rtail = 0;
        }
        progress
    }

    /// Applies one reply to the front request.
    fn apply(
        &mut self,
        event: Event,
        stats: &mut Stats,
        mat: &Material<'_>,
        poll: &Poll,
        now: Instant,
        window: Option<(Instant, Instant)>,
    ) {
        let cfg = mat.cfg;
        let proto = cfg.proto_of(&self.source);
        let Some(front) = self.pending.front_mut() else {
            stats.errors.unexpected += 1;
            stats.errors.note(|| format!("reply {event:?} with no request outstanding"));
            self.close(poll);
            return;
        };
        let errors = &mut stats.errors;
        let done = match (&mut front.kind, event) {
            (Kind::Get { first, n, next, hits, .. }, Event::Value { key, len }) => {
                if len != cfg.value_bytes {
                    errors.wrong_size += 1;
                    errors.note(|| format!("hit of {len} bytes, expected {}", cfg.value_bytes));
                }
                if get_ends_with_end(proto, *n) {
                    let Source::Ops { ops, .. } = &self.source else { unreachable!("GETs come from op streams") };
                    let keys = &ops[*first + *next..*first + *n];
                    match key.and_then(|k| keys.iter().position(|o| u64::from(o.key) == k)) {
                        Some(i) => {
                            *next += i + 1;
                            *hits += 1;
                        }
                        None => {
                            errors.wrong_key += 1;
                            errors.note(|| format!("hit for key {key:?}, not one of those requested"));
                        }
                    }
                    false
                } else {
                    *hits += 1;
                    true
                }
            }
            (Kind::Get { n, .. }, Event::End) if get_ends_with_end(proto, *n) => true,
            (Kind::Get { n, .. }, Event::Miss) if !get_ends_with_end(proto, *n) => true,
            (Kind::Coll { expect, hit }, event)
                if !matches!(event, Event::Error | Event::ClientError | Event::ServerError) =>
            {
                match expect.judge(event, cfg.value_bytes, cfg.members) {
                    Outcome::Written | Outcome::Miss => {}
                    Outcome::Hit => *hit = true,
                    Outcome::WrongSize => {
                        *hit = true;
                        errors.wrong_size += 1;
                        errors.note(|| format!("{event:?}: a value not of {} bytes", cfg.value_bytes));
                    }
                    Outcome::Unexpected => {
                        errors.unexpected += 1;
                        errors.note(|| format!("reply {event:?} does not fit a {expect:?} request"));
                        self.close(poll);
                        return;
                    }
                }
                true
            }
            (Kind::Set, Event::Stored) => true,
            (Kind::Set, Event::NotStored) => {
                errors.not_stored += 1;
                errors.note(|| "a SET was not stored".into());
                true
            }
            (kind, Event::Error | Event::ClientError | Event::ServerError) => {
                match event {
                    Event::Error => errors.error += 1,
                    Event::ClientError => errors.client_error += 1,
                    _ => errors.server_error += 1,
                }
                errors.note(|| format!("{event:?} reply to a {}", kind.name()));
                match kind {
                    // A meta multi-get answers each quiet `mg` and its `mn`
                    // separately: it is over when `mn` is answered.
                    Kind::Get { n, hits, failed, .. } if get_ends_with_end(proto, *n) && proto == Protocol::Meta => {
                        *failed += 1;
                        *hits + *failed > *n
                    }
                    _ => true,
                }
            }
            (_, event) => {
                errors.unexpected += 1;
                errors.note(|| format!("reply {event:?} does not fit the outstanding request"));
                self.close(poll);
                return;
            }
        };
        if !done {
            return;
        }
        let p = self.pending.pop_front().expect("front exists");
        stats.answered += 1;
        if let Some((from, end)) = window {
            if now < from || now >= end {
                return;
            }
        }
        // A request answered with an error (already counted) is not a
        // completed request: a server that fails fast must not look fast.
        let failed = match p.kind {
            Kind::Get { failed, .. } => failed > 0,
            Kind::Set | Kind::Coll { .. } => false,
        };
        if failed || matches!(event, Event::Error | Event::ClientError | Event::ServerError | Event::NotStored) {
            return;
        }
        stats.hist.saturating_record(schedule::latency_ns(p.sent, now));
        stats.requests += 1;
        match p.kind {
            Kind::Get { n, hits, .. } => {
                stats.gets += 1;
                stats.get_keys += n as u64;
                stats.hits += hits as u64;
            }
            Kind::Set | Kind::Coll { expect: Expect::Write, .. } => {
                stats.sets += 1;
                stats.stored += 1;
            }
            Kind::Coll { hit, .. } => {
                stats.gets += 1;
                stats.get_keys += 1;
                stats.hits += u64::from(hit);
            }
        }
    }

    fn fail(&mut self, errors: &mut Errors, poll: &Poll, what: &str) {
        errors.closed += 1;
        errors.note(|| what.to_string());
        self.close(poll);
    }

    fn close(&mut self, poll: &Poll) {
        if self.alive {
            self.alive = false;
            let _ = poll.registry().deregister(&mut self.sock);
            let _ = self.sock.shutdown(std::net::Shutdown::Both);
        }
    }
}

impl Config {
    /// Preloads speak the text protocol whatever the run's protocol is,
    /// except RESP (a Redis server has no memcached port).
    fn proto_of(&self, source: &Source) -> Protocol {
        match source {
            Source::Preload { .. } if self.proto != Protocol::Resp => Protocol::Text,
            _ => self.proto,
        }
    }
}
