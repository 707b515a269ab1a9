//! The server's front end for the event loop, and the loop's wiring.
//!
//! The acceptor and the worker loops are amalgam-net's (`accept.rs`,
//! `worker.rs`, a connection's turn in `conn.rs`); they know no protocol.
//! Here is what they ask of a connection ([`amalgam_net::front::FrontEnd`]),
//! implemented once over both ports by [`Reach`], a worker's handles: a
//! memcached-port connection goes to `amalgam_memcache::process`, a RESP
//! one to [`crate::resp::process`]; a woken worker serves the blocked
//! clients, subscribers, CLIENT UNBLOCK/KILL and MONITOR lines other
//! threads queued for it; a connection that said PSYNC is handed to a
//! replication sender. The loop is instantiated once, with [`Reach`], so
//! each of these inlines into it as when the loop was written here.

use crate::stats::WorkerStats;
use crate::Shared;
use amalgam_net::conn::{Conn, Turn};
use amalgam_net::front::{Conns, Env, FrontEnd, Io};
use amalgam_net::obuf::Class;
use amalgam_net::turn::READ_BUFFER_BYTES_INITIAL;
use amalgam_persist::received::{Receiving, Started};
use amalgam_protocol::text::Limits;
use amalgam_protocol::{GET_LINE_BYTES_MAX, LINE_BYTES_MAX};
use mio::net::TcpStream;
use mio::{Poll, Waker};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

pub use amalgam_net::accept::Listener;
pub use amalgam_net::socket::{Protocol, Socket};
pub use amalgam_net::worker::{worker_poll, Inbox, WorkerHandle};

/// Largest read buffer a connection can need: one whole data block plus
/// its command line, or the longest multi-get line.
pub fn read_buffer_bytes_max(item_size_max: usize) -> usize {
    (item_size_max + LINE_BYTES_MAX + 2).max(GET_LINE_BYTES_MAX) + READ_BUFFER_BYTES_INITIAL
}

/// Largest read buffer a RESP connection can need: one whole request (the
/// parser closes a connection whose request outgrows its limit first).
pub fn resp_read_buffer_bytes_max(limits: amalgam_protocol::resp::Limits) -> usize {
    limits.request_bytes_max + READ_BUFFER_BYTES_INITIAL
}

/// A connection's front-end state: its RESP session, or memcached's.
struct State {
    /// The RESP session of a connection from the RESP listener; None for
    /// memcached's protocol.
    resp: Option<Box<crate::resp::Session>>,
    /// A memcached-port connection's own state (`amalgam_memcache::Conn`:
    /// a refused block being swallowed, a metadump, `-Y`, the binary
    /// protocol); unused by RESP's.
    mc: amalgam_memcache::Conn,
}

impl State {
    fn new(shared: &Shared, sock: &impl Socket, protocol: Protocol, worker: usize, token: usize) -> State {
        let resp = (protocol == Protocol::Resp).then(|| {
            let mut s = Box::new(crate::resp::Session::new(shared, sock, worker, token));
            s.set_home(worker, token);
            s
        });
        State { resp, mc: amalgam_memcache::Conn::new(shared.authfile.is_none()) }
    }

    /// The RESP client id, for a RESP connection.
    fn client_id(&self) -> Option<u64> {
        self.resp.as_ref().map(|s| s.id())
    }
}

/// What one worker's connections reach, built once per worker thread
/// (nothing of it per round): the server, the worker's counters, the data
/// commands' keyspace and the memcached front end's worker handle.
struct Reach<'w> {
    shared: &'w Shared,
    /// This worker's number.
    worker: usize,
    stats: &'w WorkerStats,
    ks: amalgam_commands::Keyspace<'w>,
    mc: amalgam_memcache::Worker<'w>,
    /// The memcached port's read buffer bound (`-I` is fixed at start).
    rbuf_max: usize,
}

impl<'w> Reach<'w> {
    fn new(shared: &'w Shared, host: &'w crate::Memcached<'w>, id: usize) -> Reach<'w> {
        let stats = &shared.workers[id];
        Reach {
            shared,
            worker: id,
            stats,
            ks: shared.keyspace(&stats.ops),
            mc: amalgam_memcache::Worker {
                store: &shared.store,
                counters: &stats.ops,
                host,
                authfile: shared.authfile.as_ref(),
                read_only: shared.repl.read_only_flag(),
                cas_enabled: shared.cas_enabled(),
                flush_all_disabled: shared.args.disable_flush_all,
                limits: Limits { value_bytes_max: shared.args.max_item_size },
                notify: &shared.notify,
                watchers: &shared.mc_operator.watchers,
                routed: shared.cluster.enabled(),
            },
            rbuf_max: read_buffer_bytes_max(shared.args.max_item_size),
        }
    }

    /// After making output for a connection outside its turn: its replies
    /// wait for what this thread journaled meanwhile.
    #[inline]
    fn journaled(&self, c: &mut Conn<TcpStream, State>) {
        if self.shared.persist.is_some() {
            c.set_commit_target(amalgam_persist::Persistence::last_appended_here());
        }
    }
}

/// What of the server worker `id`'s loop touches itself.
fn env(shared: &Shared, id: usize) -> Env<'_> {
    let ops = &shared.workers[id].ops;
    Env {
        worker: id,
        shutdown: &shared.shutdown,
        idle_timeout_secs: &shared.idle_timeout_secs,
        persist: shared.persist.as_deref(),
        obuf: &shared.obuf,
        tls: shared.tls.as_ref(),
        curr_connections: &shared.curr_connections,
        listing: &shared.conns,
        bytes_read: &ops.bytes_read,
        bytes_written: &ops.bytes_written,
        total_connections: &ops.total_connections,
    }
}

impl FrontEnd for Reach<'_> {
    type State = State;
    type Handoff = Option<Arc<amalgam_net::clients::Client>>;

    #[inline]
    fn open(&self, sock: &TcpStream, protocol: Protocol, token: usize) -> State {
        let mut st = State::new(self.shared, sock, protocol, self.worker, token);
        if protocol == Protocol::Memcached {
            // Where `watch` delivers this connection's lines, and its
            // `connevents` line.
            let shared = self.shared;
            let fd = Socket::fd(sock);
            st.mc.place(self.worker, token, fd, sock.peer_addr().ok(), &shared.mc_operator.watchers, |w| {
                shared.blocking.wake(w)
            });
        }
        st
    }

    #[inline(always)]
    fn process(&self, st: &mut State, io: Io<'_>) -> bool {
        let Io { buf, rstart, rend, wbuf, close_after_write, inplace } = io;
        if let Some(session) = st.resp.as_deref_mut() {
            crate::resp::process(self.shared, self.stats, &self.ks, session, buf, rstart, wbuf, close_after_write);
            return false;
        }
        // Every memcached-port connection is of the `normal` class.
        let ctx =
            amalgam_memcache::Ctx { w: &self.mc, stop: self.shared.obuf.round_stop(Class::Normal), cfd: st.mc.cfd };
        amalgam_memcache::process(&ctx, &mut st.mc, buf, rstart, rend, wbuf, close_after_write, inplace)
    }

    #[inline(always)]
    fn wanted(&self, st: &State, pending: &[u8]) -> Option<usize> {
        match st.resp.as_deref() {
            Some(s) => s.wanted(),
            None if !pending.is_empty() && st.mc.swallow == 0 && st.mc.binary != Some(true) => {
                amalgam_protocol::text::block_end(pending)
            }
            None => None,
        }
    }

    fn start_in_place(&self, st: &mut State, pending: &[u8]) -> Option<Started> {
        match st.resp.as_deref_mut() {
            Some(s) => crate::inplace::start_resp(self.shared, s, pending),
            None if st.mc.may_receive_in_place() => {
                crate::inplace::start_memcached(self.shared, self.mc.limits, pending)
            }
            None => None,
        }
    }

    fn value_received(&self, st: &mut State, inplace: &mut Option<Box<Receiving>>) {
        if let Some(s) = st.resp.as_deref_mut() {
            s.set_prepared(inplace.take().map(|v| *v));
        }
    }

    #[inline(always)]
    fn read_buffer_bytes_max(&self, st: &State) -> usize {
        if st.resp.is_some() {
            resp_read_buffer_bytes_max(self.shared.resp_limits())
        } else {
            self.rbuf_max
        }
    }

    #[inline(always)]
    fn blocked(&self, st: &State) -> bool {
        st.resp.as_deref().is_some_and(crate::resp::blocking::is_blocked)
    }

    fn idle_exempt(&self, st: &State) -> bool {
        st.resp.as_deref().is_some_and(|s| crate::resp::blocking::is_blocked(s) || crate::resp::pubsub::subscribed(s))
    }

    /// A RESP subscriber is `pubsub`, every other connection of either
    /// port `normal`.
    #[inline(always)]
    fn output_class(&self, st: &State) -> Class {
        match st.resp.as_deref() {
            Some(s) if crate::resp::pubsub::subscribed(s) => Class::Pubsub,
            _ => Class::Normal,
        }
    }

    fn client_id(&self, st: &State) -> Option<u64> {
        st.client_id()
    }

    fn detaches(&self, st: &State) -> bool {
        st.resp.as_deref().is_some_and(|s| s.hands_off())
    }

    #[inline(always)]
    fn new_deadline(&self, st: &mut State) -> Option<(Instant, u64)> {
        st.resp.as_deref_mut().and_then(crate::resp::blocking::new_deadline)
    }

    fn timed_out(&self, st: &mut State, seq: u64, wbuf: &mut Vec<u8>) -> bool {
        st.resp.as_deref_mut().is_some_and(|s| crate::resp::blocking::timed_out(self.shared, s, seq, wbuf))
    }

    fn still_waiting(&self, st: &State, seq: u64) -> bool {
        st.resp.as_deref().is_some_and(|s| crate::resp::blocking::is_waiting(s, seq))
    }

    fn woken(&self, conns: &mut Conns<State>, ready: &mut Vec<usize>, close: &mut Vec<usize>) {
        let shared = self.shared;
        let id = self.worker;
        // CONFIG SET eviction wakes every worker: this one's open
        // segments are sealed if the policy changed (a load and a
        // compare otherwise), so none waits in a queue the new
        // policy no longer writes to for a write from here.
        shared.store.follow_eviction();
        // Blocked clients a push (on any worker) may serve: each
        // retries its pop here, on its own worker.
        for (key, seq) in shared.blocking.take_wakes(id) {
            let Some(c) = conns.get_mut(key) else { continue };
            let (st, wbuf) = c.parts();
            let Some(s) = st.resp.as_deref_mut() else { continue };
            if crate::resp::blocking::woken(shared, self.stats, &self.ks, s, seq, wbuf) {
                self.journaled(c);
                ready.push(key);
            }
        }
        // Subscribers with messages (any worker published them)
        // run their turn; one past its output limit is closed
        // (resp/pubsub.rs). CLIENT TRACKING's invalidations
        // (resp/tracking.rs) move to the write buffer here.
        for (key, client, dropped) in shared.pubsub.take_ready(id) {
            let Some(c) = conns.get_mut(key) else { continue };
            if c.state().client_id() != Some(client) {
                continue;
            }
            if dropped {
                close.push(key);
            } else {
                drain_tracking(shared, c, client);
                ready.push(key);
            }
        }
        // CLIENT UNBLOCK from any worker: the client still
        // waiting, with the id it was asked for, is answered now.
        for (client, key, error) in shared.clients.take_unblocks(id) {
            let Some(c) = conns.get_mut(key) else { continue };
            if c.state().client_id() != Some(client) {
                continue;
            }
            let (st, wbuf) = c.parts();
            let Some(s) = st.resp.as_deref_mut() else { continue };
            if crate::resp::blocking::unblocked(shared, self.stats, s, error, wbuf) {
                ready.push(key);
            }
        }
        // CLIENT KILL from any worker, and MONITOR lines queued
        // for this worker's monitors (clients.rs).
        for (client, key) in shared.clients.take_kills(id) {
            if conns.get(key).is_some_and(|c| c.state().client_id() == Some(client)) {
                close.push(key);
            }
        }
        // memcached `watch` connections of this worker with lines queued
        // (amalgam_memcache::watch): their turn writes them.
        if shared.mc_operator.watchers.classes() != 0 {
            for key in shared.mc_operator.watchers.ready_of(id) {
                if conns.get(key).is_some_and(|c| c.state().mc.watching.is_some()) {
                    ready.push(key);
                }
            }
        }
        if shared.clients.monitoring() {
            for m in shared.clients.monitors_of(id) {
                let key = m.client.token;
                if conns.get(key).is_none_or(|c| c.state().client_id() != Some(m.client.id)) {
                    continue;
                }
                if m.dropped.load(Ordering::Relaxed) {
                    close.push(key);
                } else {
                    // Its turn moves the queued lines to its socket.
                    ready.push(key);
                }
            }
        }
    }

    fn leave(&self, st: &mut State) {
        if let Some(s) = st.resp.as_deref_mut() {
            // A blocked client leaves its queues: nothing may be popped for a
            // client that is gone, and the next waiter must be woken.
            crate::resp::blocking::abandon(self.shared, s);
            // And leaves its channels and patterns, and its tracking.
            crate::resp::pubsub::leave(self.shared, s);
            crate::resp::tracking::leave(self.shared, s);
        } else {
            let shared = self.shared;
            st.mc.leave(&shared.mc_operator.watchers, |w| shared.blocking.wake(w));
        }
        self.forget(st);
    }

    fn forget(&self, st: &State) {
        if let Some(id) = st.client_id() {
            self.shared.clients.remove(id);
        }
    }

    /// Its CLIENT LIST entry stays, as a replica's (`flags=S`).
    fn handoff_start(&self, st: &State) -> Self::Handoff {
        st.client_id().and_then(|id| self.shared.clients.get(id))
    }

    /// The connection said PSYNC: a replication sender thread takes it,
    /// with the bytes it sent after PSYNC (it is a replica now, listed in
    /// INFO replication). Replication runs in the clear only: a TLS
    /// connection is closed.
    fn hand_off(&self, client: Self::Handoff, c: Conn<TcpStream, State>) {
        let tls = c.is_tls();
        let (sock, mut st, pending) = c.into_parts();
        let Some(req) = st.resp.as_deref_mut().and_then(|s| s.take_handoff()) else { return };
        if tls {
            log::warn!("replication: a replica connected over TLS; replication runs in the clear only, closed");
            return;
        }
        let (Some(me), Ok(peer)) = (self.shared.arc(), sock.peer_addr()) else { return };
        log::debug!("replication: {peer} becomes a replica");
        crate::repl::serve_replica(me, std::net::TcpStream::from(sock), *req, pending, client);
    }
}

/// Moves CLIENT TRACKING's invalidations queued for client `client` to its
/// write buffer (resp/tracking.rs). Out of line: the loop inlines only
/// the call.
#[inline(never)]
fn drain_tracking(shared: &Shared, c: &mut Conn<TcpStream, State>, client: u64) {
    shared.tracking.drain(client, c.parts().1);
}

/// A worker: the event loop over its connections (amalgam-net), with this
/// server's front end.
pub fn run_worker(shared: &Shared, id: usize, poll: Poll, inbox: Inbox, waker: Arc<Waker>) {
    shared.blocking.attach(id, Arc::clone(&waker));
    let host = crate::Memcached(shared);
    let reach = Reach::new(shared, &host, id);
    amalgam_net::worker::run_worker(&reach, &env(shared, id), poll, inbox, waker);
}

/// Accepts connections on every listener until shutdown (amalgam-net's
/// acceptor), refusing RESP clients as Redis's protected mode does, and
/// logging evictions under memory pressure (`logging::EvictionWatch`)
/// every `WATCH_PERIOD`.
pub fn run_acceptor(shared: &Shared, listeners: Vec<Listener>, poll: Poll, workers: &[WorkerHandle]) {
    let env = amalgam_net::accept::AcceptEnv {
        shutdown: &shared.shutdown,
        curr_connections: &shared.curr_connections,
        conn_limit: shared.conn_limit,
        rejected: &shared.rejected_connections,
        listing: &shared.conns,
    };
    let mut evictions = crate::logging::EvictionWatch::new(&shared.store);
    let refuse = |protocol, peer| {
        // Redis's protected mode: answered at accept (in the clear, so
        // not to a TLS client), closed.
        (protocol == Protocol::Resp && crate::resp::acl::protected(shared, peer))
            .then_some(crate::resp::acl::DENIED.as_bytes())
    };
    amalgam_net::accept::run_acceptor(&env, listeners, poll, workers, refuse, crate::logging::WATCH_PERIOD, || {
        evictions.check(&shared.store)
    });
}

/// The worker a [`Driven`] connection says it lives on (its wake-ups,
/// kills and deliveries are posted to this worker's mailboxes, which
/// [`Driven::turn`] reads).
const DRIVEN_WORKER: usize = 0;
/// Its slab token there.
const DRIVEN_TOKEN: usize = 0;

/// What a [`Driven`] turn left the connection in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Waiting for its socket: more bytes to read, or room to write.
    Idle,
    /// Out of this turn's budget with work left: turn again.
    Again,
    /// Closed (by the peer, an error, a limit or QUIT); never turned again.
    Closed,
}

/// One connection of the worker's state machine driven outside an event
/// loop, over any [`Socket`]: the TLS fuzz target
/// (`fuzz-server/fuzz_targets/tls_conn.rs`) and its run in `cargo test`
/// (`tests/fuzz_smoke.rs`) feed it bytes through a fake socket. Its turns
/// are the event loop's own (amalgam-net's `Conn::turn`: TLS records,
/// reads, parsing, commands, replies, the output limits); what the loop
/// does around them for one connection (blocked clients woken, CLIENT
/// KILL, dropped subscribers) is done here before each turn, and closing
/// it leaves the registries as the loop's close does. Not the loop: no
/// epoll, no blocking deadlines, no persistence commits. It claims worker
/// 0's mailboxes (`DRIVEN_WORKER`), so one `Shared` drives one at a time.
pub struct Driven<S: Socket> {
    conn: Conn<S, State>,
    shared: Arc<crate::Shared>,
    closed: bool,
}

impl<S: Socket> Driven<S> {
    /// A connection accepted on `protocol`'s port over `sock`, through
    /// `shared`'s TLS configuration if `tls` (Err: no TLS configured, or
    /// rustls refused to start a session).
    pub fn new(shared: &Arc<crate::Shared>, protocol: Protocol, tls: bool, sock: S) -> Result<Driven<S>, String> {
        let tls = match (tls, shared.tls.as_ref()) {
            (false, _) => None,
            (true, Some(t)) => Some(Box::new(t.accept(protocol).map_err(|e| e.to_string())?)),
            (true, None) => return Err("TLS is not configured (-Z or --tls-port)".into()),
        };
        let state = State::new(shared, &sock, protocol, DRIVEN_WORKER, DRIVEN_TOKEN);
        Ok(Driven { conn: Conn::new(sock, state, tls), shared: Arc::clone(shared), closed: false })
    }

    /// One turn, as the event loop gives a connection whose socket became
    /// ready.
    pub fn turn(&mut self) -> Step {
        if self.closed {
            return Step::Closed;
        }
        let shared = &*self.shared;
        let host = crate::Memcached(shared);
        let reach = Reach::new(shared, &host, DRIVEN_WORKER);
        let me = self.conn.state().client_id();
        for (key, seq) in shared.blocking.take_wakes(DRIVEN_WORKER) {
            let (st, wbuf) = self.conn.parts();
            if let (DRIVEN_TOKEN, Some(s)) = (key, st.resp.as_deref_mut()) {
                crate::resp::blocking::woken(shared, reach.stats, &reach.ks, s, seq, wbuf);
            }
        }
        let dropped =
            shared.pubsub.take_ready(DRIVEN_WORKER).iter().any(|&(_, client, dropped)| dropped && Some(client) == me);
        let killed = shared.clients.take_kills(DRIVEN_WORKER).iter().any(|&(client, _)| Some(client) == me);
        if dropped || killed {
            self.closed = true;
            return Step::Closed;
        }
        // A readiness event, as the event loop's: a read may find more.
        self.conn.readied(false);
        let rbuf_max = reach.read_buffer_bytes_max(self.conn.state());
        // No poll: its socket is driven, not registered.
        let step = match self.conn.turn(&reach, &env(shared, DRIVEN_WORKER), rbuf_max, |_, _| Ok(())) {
            Turn::Idle => Step::Idle,
            Turn::Again | Turn::Commit => Step::Again,
            Turn::Closed | Turn::Detach => Step::Closed,
        };
        self.closed = step == Step::Closed;
        step
    }

    /// The read buffer's size now.
    pub fn read_buffer_bytes(&self) -> usize {
        self.conn.read_buffer_bytes()
    }

    /// The most the read buffer may grow to (the event loop's bound).
    pub fn read_buffer_bytes_max(&self) -> usize {
        if self.conn.state().resp.is_some() {
            resp_read_buffer_bytes_max(self.shared.resp_limits())
        } else {
            read_buffer_bytes_max(self.shared.args.max_item_size)
        }
    }

    /// Replies made and not yet taken by the socket.
    pub fn pending_output_bytes(&self) -> usize {
        self.conn.pending_output_bytes()
    }

    /// The socket.
    pub fn socket(&mut self) -> &mut S {
        self.conn.socket_mut()
    }
}

impl<S: Socket> std::fmt::Debug for Driven<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driven")
            .field("read_buffer_bytes", &self.read_buffer_bytes())
            .field("pending_output_bytes", &self.pending_output_bytes())
            .field("closed", &self.closed)
            .finish_non_exhaustive()
    }
}

impl<S: Socket> Drop for Driven<S> {
    /// Leaves the registries as the event loop's close does.
    fn drop(&mut self) {
        let host = crate::Memcached(&self.shared);
        let reach = Reach::new(&self.shared, &host, DRIVEN_WORKER);
        reach.leave(self.conn.parts().0);
    }
}
