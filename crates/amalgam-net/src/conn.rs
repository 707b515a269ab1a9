//! One client connection and its turn: flush, parse and execute (the
//! front end's), read; repeat, within the turn's bounds (`turn.rs`).
//!
//! Generic over its socket only so that a connection can be driven
//! outside the event loop over a fake one (the server's `worker::Driven`,
//! which the TLS fuzz target uses); the loop's is `Conn<TcpStream, _>`.
//! Generic over the front end's per-connection state, which the turn
//! hands its buffers to ([`FrontEnd::process`]).

use crate::front::{Env, FrontEnd, Io};
use crate::socket::Socket;
use crate::turn::{
    IN_PLACE_BYTES_PER_TURN_MAX, IN_PLACE_VALUE_BYTES_MIN, READ_BUFFER_BYTES_INITIAL, READ_BYTES_PER_ROUND_MAX,
    ROUNDS_PER_TURN_MAX,
};
use amalgam_persist::received::Receiving;
use std::io::ErrorKind;
use std::sync::atomic::{AtomicU64, Ordering};

/// A write buffer larger than this is released after it drains.
const WRITE_BUFFER_KEEP_BYTES: usize = 256 * 1024;
/// A request (a value) whose end lies at least this far past the front of
/// the read buffer gets a buffer of exactly its size (`Conn::fill`).
const EXACT_READ_BUFFER_BYTES_MIN: usize = 64 * 1024;
const _: () = assert!(READ_BUFFER_BYTES_INITIAL <= EXACT_READ_BUFFER_BYTES_MIN);

/// Adds `n` to a counter that only the calling worker writes.
#[inline]
pub(crate) fn bump(c: &AtomicU64, n: u64) {
    c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}

/// One client connection.
pub struct Conn<S, St> {
    sock: S,
    /// Read buffer; bytes rstart..rend are received and not yet parsed.
    rbuf: Vec<u8>,
    rstart: usize,
    rend: usize,
    /// Replies not yet sent: wbuf[wpos..].
    wbuf: Vec<u8>,
    wpos: usize,
    close_after_write: bool,
    eof: bool,
    /// The last read returned less than it asked for: the receive queue was
    /// empty then, and data arriving later raises a new edge-triggered
    /// event, so the read that would only say EAGAIN is skipped (epoll(7):
    /// a short read on a stream socket means its input is exhausted). One
    /// syscall less per unpipelined request. Cleared by every event.
    drained: bool,
    /// An event said the peer closed its side: read on to EOF, never trust
    /// `drained` (the FIN may already be queued behind the data).
    hup: bool,
    /// The front end's state of this connection (RESP's session, or
    /// memcached's refused block being swallowed, `-Y`, the binary
    /// protocol).
    state: St,
    /// With persistence: the log position the pending replies depend on
    /// (the last record this connection journaled); they are sent once
    /// the log has secured it (the server's lib.rs § Persistence).
    commit_target: u64,
    /// The TLS session of a connection from a TLS listener (tls.rs); its
    /// reads and writes go through it. None for plaintext: one test per
    /// read, write and round, never per command.
    tls: Option<Box<rustls::ServerConnection>>,
    /// When the connection last had a turn (a `ticks` reading), kept only
    /// while an idle timeout is set (`timeout`, `-o idle_timeout`).
    pub(crate) active: u64,
    /// When its pending output was first found at or above its class's
    /// soft limit (a `ticks` reading; 0: it was not), `obuf.rs`.
    pub(crate) soft_since: u64,
    /// The loop's round that last queued it for a turn (each connection
    /// is turned once per round, in the order it became ready).
    queued: u64,
    /// Its poll registration asks for writability too: from a turn whose
    /// output the socket would not take to the next idle turn that found
    /// nothing left to send (`Conn::rewatch`).
    watching_writable: bool,
    /// A large value being received straight into its item (the server's
    /// `inplace.rs`); memcached's stays here once complete, until its
    /// request is parsed (a RESP one moves to its session then).
    inplace: Option<Box<Receiving>>,
}

/// What a turn left the connection in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Turn {
    /// Waiting for the socket to become readable, or also writable while
    /// output is pending that it would not take (`Conn::rewatch`).
    Idle,
    /// Replies wait for the log: commit, then serve again.
    Commit,
    /// Out of budget with work left: serve again after the others.
    Again,
    Closed,
    /// Its replies are out and it leaves the event loop for another
    /// thread ([`FrontEnd::detaches`]: a replica said PSYNC).
    Detach,
}

impl<S, St> std::fmt::Debug for Conn<S, St> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn")
            .field("read_buffer_bytes", &self.rbuf.len())
            .field("pending_output_bytes", &(self.wbuf.len() - self.wpos))
            .finish_non_exhaustive()
    }
}

impl<S: Socket, St> Conn<S, St> {
    /// A connection as accepted: empty buffers, nothing read yet.
    pub fn new(sock: S, state: St, tls: Option<Box<rustls::ServerConnection>>) -> Conn<S, St> {
        Conn {
            sock,
            rbuf: vec![0; READ_BUFFER_BYTES_INITIAL],
            rstart: 0,
            rend: 0,
            wbuf: Vec::new(),
            wpos: 0,
            close_after_write: false,
            eof: false,
            drained: false,
            hup: false,
            state,
            commit_target: 0,
            tls,
            active: crate::ticks::now(),
            soft_since: 0,
            queued: 0,
            watching_writable: false,
            inplace: None,
        }
    }

    /// The front end's state of this connection.
    #[inline]
    pub fn state(&self) -> &St {
        &self.state
    }

    /// The front end's state and the reply buffer, for output made
    /// outside a turn (a blocked client woken, a subscriber's messages).
    #[inline]
    pub fn parts(&mut self) -> (&mut St, &mut Vec<u8>) {
        (&mut self.state, &mut self.wbuf)
    }

    /// The replies now pending wait for the log up to `target` (what this
    /// thread journaled while making them).
    #[inline]
    pub fn set_commit_target(&mut self, target: u64) {
        self.commit_target = target;
    }

    /// The log position its pending replies wait for.
    #[inline]
    pub fn commit_target(&self) -> u64 {
        self.commit_target
    }

    /// A readiness event: the next read may find more, and a hang-up or
    /// an error means read on to the end.
    #[inline]
    pub fn readied(&mut self, hup: bool) {
        self.drained = false;
        self.hup |= hup;
    }

    /// Output is pending (replies, or records rustls holds: a
    /// handshake's, the end of a reply). At an idle turn's end that means
    /// the socket would not take it: the replies go before anything else,
    /// and a turn that sent them all reads on.
    fn wants_writable(&self) -> bool {
        self.wpos < self.wbuf.len() || self.tls.as_deref().is_some_and(|t| t.wants_write())
    }

    /// Queues it for round `round`'s turns: false if it already is.
    #[inline]
    pub(crate) fn queue(&mut self, round: u64) -> bool {
        let fresh = self.queued != round;
        self.queued = round;
        fresh
    }

    /// The socket.
    pub fn socket(&self) -> &S {
        &self.sock
    }

    /// The socket, mutably (to register it, or for a fake socket's feed).
    pub fn socket_mut(&mut self) -> &mut S {
        &mut self.sock
    }

    /// Whether it speaks TLS.
    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// The read buffer's size now.
    pub fn read_buffer_bytes(&self) -> usize {
        self.rbuf.len()
    }

    /// Replies made and not yet taken by the socket.
    pub fn pending_output_bytes(&self) -> usize {
        self.wbuf.len() - self.wpos
    }

    /// Its socket, its state and the bytes received and not parsed, for a
    /// connection leaving the loop for another thread.
    pub fn into_parts(self) -> (S, St, Vec<u8>) {
        let pending = self.rbuf[self.rstart..self.rend].to_vec();
        (self.sock, self.state, pending)
    }

    /// Who the connection is, for the log: Redis's `id=` and `addr=`.
    #[cold]
    pub(crate) fn describe<F: FrontEnd<State = St>>(&self, fe: &F) -> String {
        let addr = self.sock.peer_addr().map(|a| a.to_string()).unwrap_or_default();
        match fe.client_id(&self.state) {
            Some(id) => format!("id={id} addr={addr}"),
            None => format!("addr={addr}"),
        }
    }

    /// The round's output reached the hard limit: the connection is
    /// closed, its buffers freed with it (`obuf.rs`).
    #[cold]
    #[inline(never)]
    fn over_hard_limit<F: FrontEnd<State = St>>(&self, fe: &F, env: &Env<'_>) -> Turn {
        env.obuf.closed(&self.describe(fe), fe.output_class(&self.state), self.wbuf.len() - self.wpos);
        Turn::Closed
    }

    /// One bounded turn: flush, parse and execute, read; repeat.
    ///
    /// `watch(socket, writable)` changes what the socket's poll
    /// registration waits for: input and writability, or input only. The
    /// turn calls it only when that changes (`Conn::rewatch`): never on
    /// the hot path, whose replies go out whole.
    #[inline]
    pub fn turn<F, W>(&mut self, fe: &F, env: &Env<'_>, rbuf_max: usize, mut watch: W) -> Turn
    where
        F: FrontEnd<State = St>,
        W: FnMut(&mut S, bool) -> std::io::Result<()>,
    {
        // Bytes of a value received in place this turn.
        let mut in_place = 0;
        for _ in 0..ROUNDS_PER_TURN_MAX {
            if self.tls.is_some() {
                // Records rustls still holds (handshake messages, the end
                // of a reply the socket did not take) go first.
                match self.tls_flush() {
                    Ok(()) => {}
                    Err(e) if e.kind() == ErrorKind::WouldBlock => return self.unsent(&mut watch),
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(_) => return Turn::Closed,
                }
            }
            if self.wpos < self.wbuf.len() {
                // Replies may acknowledge writes this thread journaled: they
                // leave only after the log has them.
                if env.persist.is_some_and(|p| p.committed() < self.commit_target) {
                    return Turn::Commit;
                }
                let pending = &self.wbuf[self.wpos..];
                let sent = match self.tls.as_deref_mut() {
                    None => self.sock.write(pending),
                    Some(t) => crate::tls::send(t, &mut self.sock, pending),
                };
                match sent {
                    Ok(0) => return Turn::Closed,
                    Ok(n) => {
                        bump(env.bytes_written, n as u64);
                        self.wpos += n;
                        continue;
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => return self.unsent(&mut watch),
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(_) => return Turn::Closed,
                }
            }
            self.wbuf.clear();
            self.wpos = 0;
            if self.wbuf.capacity() > WRITE_BUFFER_KEEP_BYTES {
                self.wbuf = Vec::new();
            }
            if self.close_after_write {
                return self.closing(fe);
            }
            // The records this connection journals.
            let appended = env.persist.map(|_| amalgam_persist::Persistence::last_appended_here());
            let crossed = self.process(fe);
            if !self.wbuf.is_empty() {
                // The round's output against the hard limit: once per
                // round, not per reply (`obuf.rs`); or the limit the round
                // read was reached (a reply may have stopped unfinished
                // there, even if a CONFIG SET raised the limit since).
                if crossed || env.obuf.over_hard(fe.output_class(&self.state), self.wbuf.len()) {
                    return self.over_hard_limit(fe, env);
                }
                // Replies wait for this connection's own records: another
                // connection's 512 MB record being written holds its own
                // reply, not this one's PONG.
                if let Some(before) = appended {
                    let now = amalgam_persist::Persistence::last_appended_here();
                    if now != before {
                        self.commit_target = now;
                    }
                }
                continue;
            }
            if self.close_after_write {
                return self.closing(fe);
            }
            if self.eof {
                return Turn::Closed;
            }
            if fe.blocked(&self.state) {
                // A blocked client's further commands wait; it is still
                // read (to see it leave), as far as its buffer has room.
                // A peer that hung up leaves now, as Redis frees a client
                // whose read returns 0.
                if self.hup {
                    return Turn::Closed;
                }
                if self.rend == self.rbuf.len() && self.rstart == 0 && self.rbuf.len() >= rbuf_max {
                    return self.idle(&mut watch);
                }
            }
            if self.drained && !self.hup {
                return self.idle(&mut watch);
            }
            let receiving = self.inplace.is_some();
            match self.fill(fe, rbuf_max) {
                Ok(0) => self.eof = true,
                Ok(n) => {
                    bump(env.bytes_read, n as u64);
                    // A value received in place yields the worker after
                    // IN_PLACE_BYTES_PER_TURN_MAX.
                    if receiving {
                        in_place += n;
                        if in_place >= IN_PLACE_BYTES_PER_TURN_MAX {
                            return Turn::Again;
                        }
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return self.read_blocked(&mut watch),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return Turn::Closed,
            }
        }
        Turn::Again
    }

    /// The connection is done with its worker once its replies are out:
    /// closed, or handed to another thread if its front end says so
    /// (PSYNC, which ends its turns the way QUIT does, so the request path
    /// tests nothing more for it).
    #[cold]
    fn closing<F: FrontEnd<State = St>>(&self, fe: &F) -> Turn {
        if fe.detaches(&self.state) {
            Turn::Detach
        } else {
            Turn::Closed
        }
    }

    /// The socket would not take the output: it waits for writability
    /// (asked for once, at the first such turn).
    #[inline(always)]
    fn unsent<W: FnMut(&mut S, bool) -> std::io::Result<()>>(&mut self, watch: &mut W) -> Turn {
        if self.watching_writable {
            Turn::Idle
        } else {
            self.rewatch(watch)
        }
    }

    /// Its output is out (a turn writes before it reads): a connection
    /// that waited for writability waits for input only again. The hot
    /// path's test: one flag, no syscall.
    #[inline(always)]
    fn idle<W: FnMut(&mut S, bool) -> std::io::Result<()>>(&mut self, watch: &mut W) -> Turn {
        if self.watching_writable {
            self.rewatch(watch)
        } else {
            Turn::Idle
        }
    }

    /// The socket has no more input. A TLS read may have left records in
    /// rustls that the socket would not take (the handshake's answer:
    /// `tls::read`): those wait for writability.
    #[inline(always)]
    fn read_blocked<W: FnMut(&mut S, bool) -> std::io::Result<()>>(&mut self, watch: &mut W) -> Turn {
        if self.tls.is_some() {
            self.rewatch(watch)
        } else {
            self.idle(watch)
        }
    }

    /// At the end of an idle turn: waits for writability as well as input
    /// while output is pending that the socket would not take, for input
    /// only once it is out. Registered writable, an idle connection would
    /// take a place on epoll's ready list as soon as it is writable, and
    /// its next request would keep that earlier place, ahead of another's
    /// sent before it (docs/architecture.md § Order). `Closed` if epoll
    /// refused the change.
    #[cold]
    #[inline(never)]
    fn rewatch<W: FnMut(&mut S, bool) -> std::io::Result<()>>(&mut self, watch: &mut W) -> Turn {
        let writable = self.wants_writable();
        if writable != self.watching_writable {
            if watch(&mut self.sock, writable).is_err() {
                return Turn::Closed;
            }
            self.watching_writable = writable;
        }
        Turn::Idle
    }

    /// Sends what a TLS connection's rustls session holds (out of line:
    /// the plaintext turn carries none of it).
    #[cold]
    #[inline(never)]
    fn tls_flush(&mut self) -> std::io::Result<()> {
        match self.tls.as_deref_mut() {
            Some(t) if t.wants_write() => crate::tls::flush(t, &mut self.sock),
            _ => Ok(()),
        }
    }

    /// Reads once into the free tail of the read buffer (at most
    /// [`READ_BYTES_PER_ROUND_MAX`]), compacting or growing it (up to
    /// `rbuf_max`) first if it is full.
    ///
    /// # Large values
    /// A request whose value is at least [`EXACT_READ_BUFFER_BYTES_MIN`]
    /// long gets, as soon as its header is here, a buffer that holds the
    /// whole request ([`FrontEnd::wanted`]), with only the bytes already
    /// received (at most the old buffer) copied over. The value's bytes
    /// then arrive where the command reads them, and the only copy the
    /// worker makes of them is into the item: a buffer that doubled as it
    /// filled would copy them again at every doubling (and once more when
    /// compacted). The buffer is a fresh zeroed allocation, so the system
    /// maps it without writing it. Once the request is consumed, what is
    /// left moves to a small buffer.
    ///
    /// A value long enough is received straight into its item instead
    /// (the server's `inplace.rs`): each read then goes into the item's
    /// next bytes.
    #[inline(always)]
    fn fill<F: FrontEnd<State = St>>(&mut self, fe: &F, rbuf_max: usize) -> std::io::Result<usize> {
        if self.inplace.as_ref().is_some_and(|v| !v.is_complete()) {
            return self.fill_in_place(fe);
        }
        if self.rstart == self.rend {
            self.rstart = 0;
            self.rend = 0;
            if self.rbuf.len() > READ_BUFFER_BYTES_INITIAL {
                self.rbuf = vec![0; READ_BUFFER_BYTES_INITIAL];
            }
        }
        let pending = &self.rbuf[self.rstart..self.rend];
        let wanted = fe.wanted(&self.state, pending);
        let room = self.rbuf.len() - self.rstart;
        match wanted {
            Some(w) if w >= IN_PLACE_VALUE_BYTES_MIN && w > room && self.start_in_place(fe) => {
                return self.fill_after_start(fe, rbuf_max);
            }
            Some(w) if w >= EXACT_READ_BUFFER_BYTES_MIN && w > room => {
                // Exactly the request, plus room for the start of the next
                // (within the connection's bound; the parser refuses a
                // request past it).
                self.resize_exact((w + READ_BUFFER_BYTES_INITIAL).min(rbuf_max));
            }
            _ if self.rbuf.len() > 2 * READ_BUFFER_BYTES_INITIAL
                && self.rend - self.rstart < READ_BUFFER_BYTES_INITIAL / 2
                && wanted.is_none_or(|w| w < READ_BUFFER_BYTES_INITIAL / 2) =>
            {
                // The large request is done; the next one's first bytes
                // move to a small buffer rather than keep a large one.
                self.resize_exact(READ_BUFFER_BYTES_INITIAL);
            }
            _ => {}
        }
        if self.rend == self.rbuf.len() {
            if self.rstart > 0 {
                self.rbuf.copy_within(self.rstart..self.rend, 0);
                self.rend -= self.rstart;
                self.rstart = 0;
            } else if self.rbuf.len() < rbuf_max {
                let grown = (self.rbuf.len() * 2).min(rbuf_max);
                self.rbuf.resize(grown, 0);
            } else {
                // The parser bounds every request below rbuf_max, so a full
                // buffer it still calls incomplete cannot happen; refuse.
                return Err(ErrorKind::InvalidData.into());
            }
        }
        let end = self.rbuf.len().min(self.rend + READ_BYTES_PER_ROUND_MAX);
        let asked = end - self.rend;
        let n = match self.tls.as_deref_mut() {
            None => {
                let n = self.sock.read(&mut self.rbuf[self.rend..end])?;
                self.drained = n < asked;
                n
            }
            // A short read of decrypted bytes says nothing about the
            // socket: rustls says whether the socket's read was short.
            Some(t) => crate::tls::read(t, &mut self.sock, &mut self.rbuf[self.rend..end], &mut self.drained)?,
        };
        self.rend += n;
        Ok(n)
    }

    /// `fill` again once a value is being received in place: out of line,
    /// so that `fill` calls itself only through here and stays inlined in
    /// the event loop (a directly recursive function is never inlined; the
    /// out-of-line `fill` cost 139 instructions per unpipelined GET,
    /// callgrind). Bounded: the value is this connection's now, so `fill`
    /// does not start one again.
    #[cold]
    #[inline(never)]
    fn fill_after_start<F: FrontEnd<State = St>>(&mut self, fe: &F, rbuf_max: usize) -> std::io::Result<usize> {
        self.fill(fe, rbuf_max)
    }

    /// One read into the next bytes of the value being received in place
    /// (at most [`READ_BYTES_PER_ROUND_MAX`]); with the last one in, the
    /// front end may take the value.
    #[cold]
    #[inline(never)]
    fn fill_in_place<F: FrontEnd<State = St>>(&mut self, fe: &F) -> std::io::Result<usize> {
        let Conn { inplace, sock, tls, drained, .. } = self;
        let Some(v) = inplace.as_deref_mut() else { return Ok(0) };
        let dst = v.value.unfilled(READ_BYTES_PER_ROUND_MAX);
        let asked = dst.len();
        let n = match tls.as_deref_mut() {
            None => {
                let n = sock.read(&mut *dst)?;
                *drained = n < asked;
                n
            }
            Some(t) => crate::tls::read(t, sock, &mut *dst, drained)?,
        };
        // With persistence the bytes go into the value's log record too
        // (persist `staged.rs`): a read's worth at a time, here.
        if let Some(s) = v.staged.as_mut() {
            s.extend(&dst[..n]);
        }
        v.value.advance(n);
        self.value_received(fe);
        Ok(n)
    }

    /// Once the value being received in place is whole, its front end may
    /// take it (RESP's waits in the session for its SET; memcached's stays
    /// here).
    fn value_received<F: FrontEnd<State = St>>(&mut self, fe: &F) {
        if self.inplace.as_ref().is_some_and(|v| v.is_complete()) {
            fe.value_received(&mut self.state, &mut self.inplace);
        }
    }

    /// Starts receiving the value of the request at the front of the
    /// read buffer in place, if it is one: the buffer keeps the request's
    /// front with the value rewritten as empty.
    fn start_in_place<F: FrontEnd<State = St>>(&mut self, fe: &F) -> bool {
        if self.inplace.is_some() {
            return false;
        }
        let pending = &self.rbuf[self.rstart..self.rend];
        let Some(started) = fe.start_in_place(&mut self.state, pending) else { return false };
        let mut rbuf = started.front;
        let used = rbuf.len();
        rbuf.resize(used.max(READ_BUFFER_BYTES_INITIAL), 0);
        self.rbuf = rbuf;
        self.rstart = 0;
        self.rend = used;
        self.inplace = Some(Box::new(started.value));
        self.value_received(fe);
        true
    }

    /// Moves the unparsed bytes to a fresh buffer of `bytes` (at least
    /// their length), at its front.
    fn resize_exact(&mut self, bytes: usize) {
        let pending = self.rend - self.rstart;
        let mut fresh = vec![0; bytes.max(pending)];
        fresh[..pending].copy_from_slice(&self.rbuf[self.rstart..self.rend]);
        self.rbuf = fresh;
        self.rstart = 0;
        self.rend = pending;
    }

    /// Parses and executes what the read buffer holds, as one batch; true
    /// if its output reached the hard limit the round read.
    #[inline(always)]
    fn process<F: FrontEnd<State = St>>(&mut self, fe: &F) -> bool {
        let Conn { rbuf, rstart, rend, wbuf, close_after_write, state, inplace, .. } = self;
        let io = Io { buf: &rbuf[..*rend], rstart, rend, wbuf, close_after_write, inplace };
        fe.process(state, io)
    }
}
