//! The acceptor and the worker event loops.
//!
//! Both protocols share them: the acceptor watches memcached's listener
//! and, unless `--resp-port 0`, the RESP listener, and tags each accepted
//! connection with its listener's [`Protocol`]; a worker's turn is the
//! same for both up to parsing and executing, where a RESP connection goes
//! to [`crate::resp::process`].

use crate::resp::blocking::DEADLINES_SLACK;
use crate::stats::bump;
use crate::Shared;
use amalgam_net::turn::{READ_BUFFER_BYTES_INITIAL, READ_BYTES_PER_ROUND_MAX, ROUNDS_PER_TURN_MAX};
use amalgam_protocol::text::Limits;
use amalgam_protocol::{GET_LINE_BYTES_MAX, LINE_BYTES_MAX};
use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token, Waker};
use slab::Slab;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{ErrorKind, Write};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Token of each poll's waker.
const WAKER: Token = Token(usize::MAX);
/// Events taken from epoll per wait.
const EVENTS_PER_POLL: usize = 1024;
/// A write buffer larger than this is released after it drains.
const WRITE_BUFFER_KEEP_BYTES: usize = 256 * 1024;
/// A request (a value) whose end lies at least this far past the front of
/// the read buffer gets a buffer of exactly its size (`Conn::fill`).
const EXACT_READ_BUFFER_BYTES_MIN: usize = 64 * 1024;
const _: () = assert!(READ_BUFFER_BYTES_INITIAL <= EXACT_READ_BUFFER_BYTES_MIN);
/// Connections accepted per listener event before the acceptor looks at
/// its other events.
const ACCEPTS_PER_EVENT_MAX: usize = 256;
/// memcached's answer to a connection over `-c`.
const TOO_MANY_CONNECTIONS: &[u8] = b"ERROR Too many open connections\r\n";
/// Redis's answer to a connection over `maxclients`.
const RESP_TOO_MANY_CONNECTIONS: &[u8] = b"-ERR max number of clients reached\r\n";

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

pub use amalgam_net::socket::Protocol;

/// A listener: its socket, its protocol, and whether it speaks TLS (tls.rs).
pub type Listener = (TcpListener, Protocol, bool);

/// New connections handed from the acceptor to one worker, with their
/// protocol and whether they speak TLS.
pub type Inbox = Arc<Mutex<Vec<(TcpStream, Protocol, bool)>>>;

/// A worker as the acceptor sees it: where to hand new connections.
#[derive(Debug)]
pub struct WorkerHandle {
    inbox: Inbox,
    waker: Arc<Waker>,
}

impl WorkerHandle {
    pub fn wake(&self) {
        let _ = self.waker.wake();
    }

    /// The worker's waker, for the signal thread.
    pub fn waker_clone(&self) -> Arc<Waker> {
        Arc::clone(&self.waker)
    }
}

/// Creates a worker's poll and its handle.
pub fn worker_poll() -> std::io::Result<(Poll, WorkerHandle, Inbox)> {
    let poll = Poll::new()?;
    let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
    let inbox = Arc::new(Mutex::new(Vec::new()));
    Ok((poll, WorkerHandle { inbox: Arc::clone(&inbox), waker }, inbox))
}

/// A failing accept (EMFILE) is logged at most once per
/// `LOG_RATE_LIMIT_PERIOD`.
static ACCEPT_ERROR_LOG: amalgam_persist::ratelimit::RateLimit = amalgam_persist::ratelimit::RateLimit::new();

/// Accepts connections on every listener until shutdown, enforcing `-c`
/// over all of them together, and deals them to the workers round-robin.
/// It also wakes every `WATCH_PERIOD` to log evictions under memory
/// pressure (`logging::EvictionWatch`).
pub fn run_acceptor(shared: &Shared, mut listeners: Vec<Listener>, mut poll: Poll, workers: &[WorkerHandle]) {
    let mut listen_addrs = Vec::with_capacity(listeners.len());
    for (i, (listener, _, _)) in listeners.iter_mut().enumerate() {
        if let Err(e) = poll.registry().register(listener, Token(i), Interest::READABLE) {
            log::error!("cannot watch the listening socket: {e}");
            return;
        }
        let addr = listener.local_addr().unwrap_or_else(|_| ([0, 0, 0, 0], 0).into());
        listen_addrs.push(addr);
        shared.conns.lock().unwrap_or_else(|e| e.into_inner()).listeners.insert(listener.as_raw_fd(), addr);
    }
    let mut events = Events::with_capacity(64);
    let mut next = 0;
    let mut evictions = crate::logging::EvictionWatch::new(&shared.store);
    while !shared.shutdown.load(Ordering::Acquire) {
        evictions.check(&shared.store);
        if let Err(e) = poll.poll(&mut events, Some(crate::logging::WATCH_PERIOD)) {
            if e.kind() == ErrorKind::Interrupted {
                continue;
            }
            log::error!("acceptor poll failed: {e}");
            return;
        }
        for ev in events.iter() {
            let Some((listener, protocol, tls)) = listeners.get(ev.token().0) else { continue };
            let listen = listen_addrs[ev.token().0];
            for _ in 0..ACCEPTS_PER_EVENT_MAX {
                match listener.accept() {
                    Ok((mut sock, peer)) => {
                        if shared.curr_connections.load(Ordering::Relaxed) >= shared.conn_limit {
                            // A TLS client could not read a plain reply:
                            // it is closed without one.
                            if !*tls {
                                let _ = sock.write(match protocol {
                                    Protocol::Memcached => TOO_MANY_CONNECTIONS,
                                    Protocol::Resp => RESP_TOO_MANY_CONNECTIONS,
                                });
                            }
                            shared.rejected_connections.fetch_add(1, Ordering::Relaxed);
                            continue;
                        }
                        if *protocol == Protocol::Resp && crate::resp::acl::protected(shared, peer) {
                            // Redis's protected mode: answered at accept
                            // (in the clear, so not to a TLS client), closed.
                            if !*tls {
                                let _ = sock.write(crate::resp::acl::DENIED.as_bytes());
                            }
                            shared.rejected_connections.fetch_add(1, Ordering::Relaxed);
                            continue;
                        }
                        let _ = sock.set_nodelay(true);
                        shared.curr_connections.fetch_add(1, Ordering::Relaxed);
                        // Listed until the worker closes it (before the fd
                        // can be reused).
                        shared
                            .conns
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .open
                            .insert(sock.as_raw_fd(), crate::OpenConn { peer, listen });
                        let w = &workers[next % workers.len()];
                        next += 1;
                        w.inbox.lock().unwrap_or_else(|e| e.into_inner()).push((sock, *protocol, *tls));
                        w.wake();
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(e) => {
                        // EMFILE and friends: say what to do, keep serving.
                        if let Some(held) = ACCEPT_ERROR_LOG.allow() {
                            log::warn!(
                                "accept failed: {e} (raise the open-file limit: ulimit -n){}",
                                amalgam_persist::ratelimit::held_back(held)
                            );
                        }
                        std::thread::sleep(std::time::Duration::from_millis(10));
                        break;
                    }
                }
            }
        }
    }
}

pub use amalgam_net::socket::Socket;

/// One client connection (generic over its socket only so that
/// [`Driven`] can run the same code over a fake one; the event loop's is
/// `Conn<TcpStream>`).
struct Conn<S = TcpStream> {
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
    /// The RESP session of a connection from the RESP listener; None for
    /// memcached's protocol.
    resp: Option<Box<crate::resp::Session>>,
    /// A memcached-port connection's own state (`amalgam_memcache::Conn`:
    /// a refused block being swallowed, a metadump, `-Y`, the binary
    /// protocol); unused by RESP's.
    mc: amalgam_memcache::Conn,
    /// With persistence: the log position the pending replies depend on
    /// (the last record this connection journaled); they are sent once
    /// the log has secured it (lib.rs § Persistence).
    commit_target: u64,
    /// The TLS session of a connection from a TLS listener (tls.rs); its
    /// reads and writes go through it. None for plaintext: one test per
    /// read, write and round, never per command.
    tls: Option<Box<rustls::ServerConnection>>,
    /// When the connection last had a turn (a `ticks` reading), kept only
    /// while an idle timeout is set (`timeout`, `-o idle_timeout`).
    active: u64,
    /// When its pending output was first found at or above its class's
    /// soft limit (a `ticks` reading; 0: it was not), `obuf.rs`.
    soft_since: u64,
    /// A large value being received straight into its item
    /// (`inplace.rs`); memcached's stays here once complete, until its
    /// request is parsed (a RESP one moves to its session then).
    inplace: Option<Box<crate::inplace::Receiving>>,
}

/// What a turn left the connection in.
#[derive(PartialEq, Eq)]
enum Turn {
    /// Waiting for the socket to become readable or writable.
    Idle,
    /// Replies wait for the log: commit, then serve again (see lib.rs).
    Commit,
    /// Out of budget with work left: serve again after the others.
    Again,
    Closed,
    /// A replica said PSYNC and its replies are out: the connection
    /// leaves the event loop for a replication sender (`crate::repl`).
    Detach,
}

/// What one worker's connections reach, built once per worker thread
/// (nothing of it per round): the data commands' keyspace and the
/// memcached front end's worker handle.
struct Reach<'w> {
    ks: amalgam_commands::Keyspace<'w>,
    mc: amalgam_memcache::Worker<'w>,
}

impl<'w> Reach<'w> {
    fn new(shared: &'w Shared, id: usize) -> Reach<'w> {
        let stats = &shared.workers[id];
        Reach {
            ks: amalgam_commands::Keyspace {
                store: &shared.store,
                thresholds: &shared.thresholds,
                host: shared,
                counters: &stats.ops,
                item_size_max: shared.args.max_item_size,
                logged: shared.persist.is_some(),
                streamed: shared.repl.journal_flag(),
                databases: &shared.databases,
                notify: &shared.notify,
            },
            mc: amalgam_memcache::Worker {
                store: &shared.store,
                counters: &stats.ops,
                host: shared,
                authfile: shared.authfile.as_ref(),
                read_only: shared.repl.read_only_flag(),
                cas_enabled: shared.cas_enabled(),
                flush_all_disabled: shared.args.disable_flush_all,
                limits: Limits { value_bytes_max: shared.args.max_item_size },
                notify: &shared.notify,
            },
        }
    }
}

/// A worker: an event loop over its connections.
pub fn run_worker(shared: &Shared, id: usize, mut poll: Poll, inbox: Inbox, waker: Arc<Waker>) {
    let stats = &shared.workers[id];
    let mut conns: Slab<Conn> = Slab::new();
    let mut events = Events::with_capacity(EVENTS_PER_POLL);
    let mut again: Vec<usize> = Vec::new();
    // What this worker's connections reach, built once (the families'
    // keyspace and the memcached front end's worker).
    let reach = Reach::new(shared, id);
    let rbuf_max = read_buffer_bytes_max(shared.args.max_item_size);

    // `--fsync always`: connections whose replies wait for the committer
    // thread; it wakes this loop after each fsync (lib.rs § Persistence).
    let mut waiting: Vec<usize> = Vec::new();
    // Blocked RESP clients' deadlines: (when, slab token, blocking
    // episode); stale entries are skipped, and pruned past a bound.
    let mut deadlines: BinaryHeap<Reverse<(Instant, usize, u64)>> = BinaryHeap::new();
    shared.blocking.attach(id, Arc::clone(&waker));
    // Registered whatever the policy: CONFIG SET appendfsync always may
    // make it asynchronous later.
    if let Some(p) = shared.persist.as_ref() {
        let waker = waker.clone();
        p.register_waker(Arc::new(move || {
            let _ = waker.wake();
        }));
    }
    let mut ready: Vec<usize> = Vec::new();
    let mut last_sweep = amalgam_net::ticks::now();
    let mut last_output_sweep = last_sweep;
    // Rounds since the output sweep's clock was last read.
    let mut output_rounds = 0usize;
    // Whether the idle timeout was on at the last round.
    let mut sweeping = false;
    while !shared.shutdown.load(Ordering::Acquire) {
        let idle_secs = shared.idle_timeout_secs.load(Ordering::Relaxed);
        let timeout = if !again.is_empty() {
            Some(std::time::Duration::ZERO)
        } else {
            // Sleep no longer than the nearest blocked client's deadline,
            // nor past the next idle sweep: at most a second even with no
            // timeout set, so that one CONFIG SET timeout turns on (on
            // another worker) reaches a worker asleep here.
            let blocked = deadlines.peek().map(|Reverse((when, _, _))| when.saturating_duration_since(Instant::now()));
            Some(blocked.map_or(IDLE_SWEEP_EVERY, |t| t.min(IDLE_SWEEP_EVERY)))
        };
        if let Err(e) = poll.poll(&mut events, timeout) {
            if e.kind() == ErrorKind::Interrupted {
                continue;
            }
            log::error!("worker {id} poll failed: {e}");
            break;
        }
        // `ready` keeps its allocation from round to round (a fresh vector
        // cost a malloc, a grow and a free per round: ~200 instructions,
        // per request at pipeline 1), and so does `again`.
        ready.clear();
        ready.append(&mut again);
        if !deadlines.is_empty() {
            let now = Instant::now();
            // Bounded: each entry is popped once.
            while let Some(&Reverse((when, key, seq))) = deadlines.peek() {
                if when > now {
                    break;
                }
                deadlines.pop();
                if let Some(c) = conns.get_mut(key) {
                    if let Some(s) = c.resp.as_deref_mut() {
                        if crate::resp::blocking::timed_out(shared, s, seq, &mut c.wbuf) {
                            ready.push(key);
                        }
                    }
                }
            }
        }
        if !waiting.is_empty() {
            let committed = shared.persist.as_ref().map_or(u64::MAX, |p| p.committed());
            waiting.retain(|&key| match conns.get(key) {
                Some(c) if c.commit_target > committed => true,
                Some(_) => {
                    ready.push(key);
                    false
                }
                None => false,
            });
        }
        for ev in events.iter() {
            if ev.token() == WAKER {
                // CONFIG SET eviction wakes every worker: this one's open
                // segments are sealed if the policy changed (a load and a
                // compare otherwise), so none waits in a queue the new
                // policy no longer writes to for a write from here.
                shared.store.follow_eviction();
                // Blocked clients a push (on any worker) may serve: each
                // retries its pop here, on its own worker.
                for (key, seq) in shared.blocking.take_wakes(id) {
                    let Some(c) = conns.get_mut(key) else { continue };
                    let Some(s) = c.resp.as_deref_mut() else { continue };
                    if crate::resp::blocking::woken(shared, stats, &reach.ks, s, seq, &mut c.wbuf) {
                        if shared.persist.is_some() {
                            c.commit_target = amalgam_persist::Persistence::last_appended_here();
                        }
                        ready.push(key);
                    }
                }
                let fresh = std::mem::take(&mut *inbox.lock().unwrap_or_else(|e| e.into_inner()));
                for (mut sock, protocol, tls) in fresh {
                    let tls = match (tls, shared.tls.as_ref()) {
                        (false, _) => None,
                        (true, Some(t)) => match t.accept(protocol) {
                            Ok(session) => Some(Box::new(session)),
                            Err(e) => {
                                eprintln!("amalgam: cannot start a TLS session: {e}");
                                unlist(shared, &sock);
                                shared.curr_connections.fetch_sub(1, Ordering::Relaxed);
                                continue;
                            }
                        },
                        (true, None) => {
                            unlist(shared, &sock);
                            shared.curr_connections.fetch_sub(1, Ordering::Relaxed);
                            continue;
                        }
                    };
                    let entry = conns.vacant_entry();
                    let token = Token(entry.key());
                    if poll.registry().register(&mut sock, token, Interest::READABLE | Interest::WRITABLE).is_err() {
                        unlist(shared, &sock);
                        shared.curr_connections.fetch_sub(1, Ordering::Relaxed);
                        continue;
                    }
                    bump(&stats.ops.total_connections, 1);
                    let resp = (protocol == Protocol::Resp).then(|| {
                        let mut s = Box::new(crate::resp::Session::new(shared, &sock, id, token.0));
                        s.set_home(id, token.0);
                        s
                    });
                    entry.insert(Conn::new(sock, resp, tls, shared.authfile.is_none()));
                    ready.push(token.0);
                }
                // Subscribers with messages (any worker published them)
                // run their turn; one past its output limit is closed
                // (resp/pubsub.rs). CLIENT TRACKING's invalidations
                // (resp/tracking.rs) move to the write buffer here.
                for (key, client, dropped) in shared.pubsub.take_ready(id) {
                    if conns.get(key).is_some_and(|c| c.client_id() == Some(client)) {
                        if dropped {
                            close_conn(shared, &poll, &mut conns, key);
                        } else {
                            drain_tracking(shared, &mut conns, key, client);
                            ready.push(key);
                        }
                    }
                }
                // CLIENT UNBLOCK from any worker: the client still
                // waiting, with the id it was asked for, is answered now.
                for (client, key, error) in shared.clients.take_unblocks(id) {
                    let Some(c) = conns.get_mut(key) else { continue };
                    if c.client_id() != Some(client) {
                        continue;
                    }
                    let Some(s) = c.resp.as_deref_mut() else { continue };
                    if crate::resp::blocking::unblocked(shared, stats, s, error, &mut c.wbuf) {
                        ready.push(key);
                    }
                }
                // CLIENT KILL from any worker, and MONITOR lines queued
                // for this worker's monitors (clients.rs).
                for (client, key) in shared.clients.take_kills(id) {
                    if conns.get(key).is_some_and(|c| c.client_id() == Some(client)) {
                        close_conn(shared, &poll, &mut conns, key);
                    }
                }
                if shared.clients.monitoring() {
                    for m in shared.clients.monitors_of(id) {
                        let key = m.client.token;
                        if conns.get(key).is_none_or(|c| c.client_id() != Some(m.client.id)) {
                            continue;
                        }
                        if m.dropped.load(Ordering::Relaxed) {
                            close_conn(shared, &poll, &mut conns, key);
                        } else {
                            // Its turn moves the queued lines to its socket.
                            ready.push(key);
                        }
                    }
                }
            } else {
                let key = ev.token().0;
                if let Some(c) = conns.get_mut(key) {
                    c.drained = false;
                    c.hup |= ev.is_read_closed() || ev.is_error();
                }
                ready.push(key);
            }
        }
        ready.sort_unstable();
        ready.dedup();
        let mut parked: Vec<usize> = Vec::new();
        for pass in 0..2 {
            if pass == 1 {
                if parked.is_empty() {
                    break;
                }
                // One commit for every parked reply of this iteration:
                // here (write(2), no fsync), or by the committer thread
                // while this loop serves on (`always`, and under every
                // policy a large record's write: persist `log.rs` § Large
                // records).
                if let Some(p) = &shared.persist {
                    if p.asynchronous() || p.commit() == amalgam_persist::Commit::Deferred {
                        let target = parked.iter().filter_map(|&k| conns.get(k)).map(|c| c.commit_target).max();
                        p.request_commit(target.unwrap_or(0));
                        waiting.append(&mut parked);
                        waiting.sort_unstable();
                        waiting.dedup();
                        break;
                    }
                }
                ready = std::mem::take(&mut parked);
            }
            // `proto-max-bulk-len` may change (CONFIG SET): read per pass.
            let resp_rbuf_max = resp_read_buffer_bytes_max(shared.resp_limits());
            for &key in &ready {
                let Some(conn) = conns.get_mut(key) else { continue };
                let max = if conn.resp.is_some() { resp_rbuf_max } else { rbuf_max };
                // A panic in a handler (a bug, or DEBUG PANIC) costs its
                // connection, not the worker: caught here, the connection
                // is closed below and the worker serves on. Unwinding
                // released whatever the handler held (bucket guards and
                // mutex guards drop; a poisoned mutex is read through, as
                // everywhere in the server). The default hook has printed
                // the panic's message and place.
                if idle_secs != 0 {
                    conn.active = amalgam_net::ticks::now();
                }
                let turn =
                    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| conn.turn(shared, id, &reach, max)))
                    {
                        Ok(turn) => turn,
                        Err(_) => {
                            log::error!("worker {id}: a command's handler panicked; its connection is closed");
                            Turn::Closed
                        }
                    };
                if let Some((when, seq)) = conn.resp.as_deref_mut().and_then(crate::resp::blocking::new_deadline) {
                    deadlines.push(Reverse((when, key, seq)));
                    if deadlines.len() > 2 * conns.len() + DEADLINES_SLACK {
                        deadlines.retain(|Reverse((_, k, seq))| {
                            conns
                                .get(*k)
                                .and_then(|c| c.resp.as_deref())
                                .is_some_and(|s| crate::resp::blocking::is_waiting(s, *seq))
                        });
                    }
                }
                match turn {
                    Turn::Idle => {}
                    Turn::Commit if pass == 0 => parked.push(key),
                    Turn::Again | Turn::Commit => again.push(key),
                    Turn::Closed => close_conn(shared, &poll, &mut conns, key),
                    Turn::Detach => detach_replica(shared, &poll, &mut conns, key),
                }
            }
        }
        if idle_secs != 0 {
            let now = amalgam_net::ticks::now();
            if !sweeping {
                // Turned on (CONFIG SET timeout): turns were not timed
                // while it was off, so every connection's clock starts now.
                sweeping = true;
                for (_, c) in conns.iter_mut() {
                    c.active = now;
                }
            }
            if amalgam_net::ticks::nanos_between(last_sweep, now) >= IDLE_SWEEP_EVERY.as_nanos() as u64 {
                last_sweep = now;
                sweep_idle(shared, &poll, &mut conns, idle_secs, now);
            }
        }
        sweeping &= idle_secs != 0;
        // The clock is read every OUTPUT_SWEEP_ROUNDS rounds, or after a
        // poll that found nothing (at least once a second then): reading
        // it every round cost ~25 instructions per unpipelined GET
        // (callgrind). A worker that gets events at most once a second
        // sweeps at least every OUTPUT_SWEEP_ROUNDS seconds.
        output_rounds += 1;
        if (output_rounds >= OUTPUT_SWEEP_ROUNDS || events.is_empty()) && shared.obuf.soft_on() {
            output_rounds = 0;
            let now = amalgam_net::ticks::now();
            if amalgam_net::ticks::nanos_between(last_output_sweep, now)
                >= amalgam_net::obuf::SWEEP_EVERY.as_nanos() as u64
            {
                last_output_sweep = now;
                sweep_output(shared, &poll, &mut conns, now);
            }
        }
        // Yield the CPU after each round that served a connection. A worker
        // under load always finds a ready connection, so it never sleeps in
        // `epoll_wait`, and neither do the clients it keeps busy. With every
        // thread runnable and fewer CPUs than threads, the scheduler switches
        // only when a slice ends at a timer tick (4 ms on a `CONFIG_HZ=250`
        // kernel), and every connection of a worker that is runnable but not
        // running waits one or two ticks: measured on this project's 2-vCPU
        // machine at pipeline 1, p50 84–108 µs but p99 ≈ 8 ms in about half
        // the runs (docs/bench-log/2026-11-24-server-vs-memcached.md § Why
        // pipeline 1 falls short).
        // Yielding lets whichever thread waits on this CPU run next, so the
        // interleaving follows the requests instead of the tick (no bimodal
        // run since). One syscall per round (a round serves every ready
        // connection); it returns at once when nothing else is runnable.
        if !ready.is_empty() {
            std::thread::yield_now();
        }
    }
    for (_, c) in conns.iter() {
        unlist(shared, &c.sock);
    }
    shared.curr_connections.fetch_sub(conns.len(), Ordering::Relaxed);
    for (_, c) in conns.iter() {
        if let Some(id) = c.client_id() {
            shared.clients.remove(id);
        }
    }
}

/// Rounds of a worker's loop between two looks at the clock for the
/// output sweep (`obuf.rs`).
const OUTPUT_SWEEP_ROUNDS: usize = 16;

/// How often a worker looks for connections idle past the timeout.
const IDLE_SWEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// Closes the connections idle for `idle_secs` or more, as Redis's
/// `clientsCronHandleTimeout` does, but neither a client blocked in a
/// blocking command nor a subscriber (Redis spares both), and memcached's
/// `idle_timeout` (the same rule; its port has neither kind). Bounded by
/// the connections.
fn sweep_idle(shared: &Shared, poll: &Poll, conns: &mut Slab<Conn>, idle_secs: u64, now: u64) {
    let limit_ns = idle_secs.saturating_mul(1_000_000_000);
    let idle: Vec<usize> = conns
        .iter()
        .filter(|(_, c)| amalgam_net::ticks::nanos_between(c.active, now) >= limit_ns)
        .filter(|(_, c)| {
            c.resp
                .as_deref()
                .is_none_or(|s| !crate::resp::blocking::is_blocked(s) && !crate::resp::pubsub::subscribed(s))
        })
        .map(|(k, _)| k)
        .collect();
    for key in idle {
        close_conn(shared, poll, conns, key);
    }
}

/// Closes the connections whose pending output is at or above their
/// class's hard limit, or has stayed at or above its soft limit longer
/// than the soft seconds (`obuf.rs`; Redis's `client-output-buffer-limit`).
/// Once per [`amalgam_net::obuf::SWEEP_EVERY`] while a soft limit is set;
/// bounded by the connections.
fn sweep_output(shared: &Shared, poll: &Poll, conns: &mut Slab<Conn>, now: u64) {
    let mut over: Vec<usize> = Vec::new();
    for (key, c) in conns.iter_mut() {
        let pending = c.wbuf.len() - c.wpos;
        if pending == 0 && c.soft_since == 0 {
            continue;
        }
        let class = c.output_class();
        if shared.obuf.over_hard(class, pending) || shared.obuf.soft_expired(class, pending, &mut c.soft_since, now) {
            shared.obuf.closed(&c.describe(), class, pending);
            over.push(key);
        }
    }
    for key in over {
        close_conn(shared, poll, conns, key);
    }
}

/// Moves CLIENT TRACKING's invalidations queued for connection `key`
/// (client `client`) to its write buffer (resp/tracking.rs). Out of line:
/// the event loop inlines only the call.
#[inline(never)]
fn drain_tracking(shared: &Shared, conns: &mut Slab<Conn>, key: usize, client: u64) {
    if let Some(c) = conns.get_mut(key) {
        shared.tracking.drain(client, &mut c.wbuf);
    }
}

/// Closes connection `key` of this worker: out of the poll, `stats conns`'
/// list, the count and the client registry.
fn close_conn(shared: &Shared, poll: &Poll, conns: &mut Slab<Conn>, key: usize) {
    drop(take_conn(shared, poll, conns, key));
}

/// Takes connection `key` out of this worker (its queues and channels,
/// the poll, `stats conns`' list, the count, the client registry) and
/// returns it, its socket still open.
fn take_conn(shared: &Shared, poll: &Poll, conns: &mut Slab<Conn>, key: usize) -> Option<Conn> {
    let mut c = conns.try_remove(key)?;
    if let Some(s) = c.resp.as_deref_mut() {
        // A blocked client leaves its queues: nothing may be popped for a
        // client that is gone, and the next waiter must be woken.
        crate::resp::blocking::abandon(shared, s);
        // And leaves its channels and patterns, and its tracking.
        crate::resp::pubsub::leave(shared, s);
        crate::resp::tracking::leave(shared, s);
    }
    let _ = poll.registry().deregister(&mut c.sock);
    unlist(shared, &c.sock);
    shared.curr_connections.fetch_sub(1, Ordering::Relaxed);
    if let Some(id) = c.client_id() {
        shared.clients.remove(id);
    }
    Some(c)
}

/// Hands connection `key`, which said PSYNC, to a replication sender
/// thread: out of the poll and the connection lists (it is a replica now,
/// listed in INFO replication), with the bytes it sent after PSYNC.
/// Replication runs in the clear only: a TLS connection is closed.
fn detach_replica(shared: &Shared, poll: &Poll, conns: &mut Slab<Conn>, key: usize) {
    // Its CLIENT LIST entry stays, as a replica's (`flags=S`).
    let client = conns.get(key).and_then(Conn::client_id).and_then(|id| shared.clients.get(id));
    let Some(mut c) = take_conn(shared, poll, conns, key) else { return };
    let Some(req) = c.resp.as_deref_mut().and_then(|s| s.handoff.take()) else { return };
    if c.tls.is_some() {
        log::warn!("replication: a replica connected over TLS; replication runs in the clear only, closed");
        return;
    }
    let (Some(me), Ok(peer)) = (shared.arc(), c.sock.peer_addr()) else { return };
    log::debug!("replication: {peer} becomes a replica");
    let pending = c.rbuf[c.rstart..c.rend].to_vec();
    crate::repl::serve_replica(me, std::net::TcpStream::from(c.sock), *req, pending, client);
}

/// Takes a connection off `stats conns`' list; called before its socket
/// closes, so its fd cannot be listed for a newer connection meanwhile.
fn unlist(shared: &Shared, sock: &TcpStream) {
    shared.conns.lock().unwrap_or_else(|e| e.into_inner()).open.remove(&sock.as_raw_fd());
}

impl<S: Socket> Conn<S> {
    /// A connection as accepted: empty buffers, nothing read yet.
    fn new(
        sock: S,
        resp: Option<Box<crate::resp::Session>>,
        tls: Option<Box<rustls::ServerConnection>>,
        authed: bool,
    ) -> Conn<S> {
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
            resp,
            mc: amalgam_memcache::Conn::new(authed),
            commit_target: 0,
            tls,
            active: amalgam_net::ticks::now(),
            soft_since: 0,
            inplace: None,
        }
    }

    /// The RESP client id, for a RESP connection.
    fn client_id(&self) -> Option<u64> {
        self.resp.as_ref().map(|s| s.id())
    }

    /// The client class whose output limits apply (`obuf.rs`): a RESP
    /// subscriber is `pubsub`, every other connection of either port
    /// `normal`.
    fn output_class(&self) -> amalgam_net::obuf::Class {
        match self.resp.as_deref() {
            Some(s) if crate::resp::pubsub::subscribed(s) => amalgam_net::obuf::Class::Pubsub,
            _ => amalgam_net::obuf::Class::Normal,
        }
    }

    /// Who the connection is, for the log: Redis's `id=` and `addr=`.
    #[cold]
    fn describe(&self) -> String {
        let addr = self.sock.peer_addr().map(|a| a.to_string()).unwrap_or_default();
        match self.client_id() {
            Some(id) => format!("id={id} addr={addr}"),
            None => format!("addr={addr}"),
        }
    }

    /// The round's output reached the hard limit: the connection is
    /// closed, its buffers freed with it (`obuf.rs`).
    #[cold]
    #[inline(never)]
    fn over_hard_limit(&self, shared: &Shared) -> Turn {
        shared.obuf.closed(&self.describe(), self.output_class(), self.wbuf.len() - self.wpos);
        Turn::Closed
    }

    /// One bounded turn: flush, parse and execute, read; repeat.
    fn turn(&mut self, shared: &Shared, id: usize, reach: &Reach<'_>, rbuf_max: usize) -> Turn {
        let limits = reach.mc.limits;
        let stats = &shared.workers[id];
        // Bytes of a value received in place this turn.
        let mut in_place = 0;
        for _ in 0..ROUNDS_PER_TURN_MAX {
            if self.tls.is_some() {
                // Records rustls still holds (handshake messages, the end
                // of a reply the socket did not take) go first.
                match self.tls_flush() {
                    Ok(()) => {}
                    Err(e) if e.kind() == ErrorKind::WouldBlock => return Turn::Idle,
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(_) => return Turn::Closed,
                }
            }
            if self.wpos < self.wbuf.len() {
                // Replies may acknowledge writes this thread journaled: they
                // leave only after the log has them (lib.rs § Persistence).
                if shared.persist.as_ref().is_some_and(|p| p.committed() < self.commit_target) {
                    return Turn::Commit;
                }
                let pending = &self.wbuf[self.wpos..];
                let sent = match self.tls.as_deref_mut() {
                    None => self.sock.write(pending),
                    Some(t) => amalgam_net::tls::send(t, &mut self.sock, pending),
                };
                match sent {
                    Ok(0) => return Turn::Closed,
                    Ok(n) => {
                        bump(&stats.ops.bytes_written, n as u64);
                        self.wpos += n;
                        continue;
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => return Turn::Idle,
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
                return self.closing();
            }
            // The records this connection journals (lib.rs § Persistence).
            let appended = shared.persist.as_ref().map(|_| amalgam_persist::Persistence::last_appended_here());
            let crossed = self.process(shared, id, reach);
            if !self.wbuf.is_empty() {
                // The round's output against the hard limit: once per
                // round, not per reply (`obuf.rs`); or the limit the round
                // read was reached (a reply may have stopped unfinished
                // there, even if a CONFIG SET raised the limit since).
                if crossed || shared.obuf.over_hard(self.output_class(), self.wbuf.len()) {
                    return self.over_hard_limit(shared);
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
                return self.closing();
            }
            if self.eof {
                return Turn::Closed;
            }
            if self.resp.as_deref().is_some_and(crate::resp::blocking::is_blocked) {
                // A blocked client's further commands wait; it is still
                // read (to see it leave), as far as its buffer has room.
                // A peer that hung up leaves now, as Redis frees a client
                // whose read returns 0.
                if self.hup {
                    return Turn::Closed;
                }
                if self.rend == self.rbuf.len() && self.rstart == 0 && self.rbuf.len() >= rbuf_max {
                    return Turn::Idle;
                }
            }
            if self.drained && !self.hup {
                return Turn::Idle;
            }
            let receiving = self.inplace.is_some();
            match self.fill(shared, limits, rbuf_max) {
                Ok(0) => self.eof = true,
                Ok(n) => {
                    bump(&stats.ops.bytes_read, n as u64);
                    // A value received in place yields the worker after
                    // IN_PLACE_BYTES_PER_TURN_MAX (`inplace.rs`).
                    if receiving {
                        in_place += n;
                        if in_place >= crate::inplace::IN_PLACE_BYTES_PER_TURN_MAX {
                            return Turn::Again;
                        }
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Turn::Idle,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return Turn::Closed,
            }
        }
        Turn::Again
    }

    /// The connection is done with its worker once its replies are out:
    /// closed, or handed to a replication sender if it said PSYNC (which
    /// ends its turns the way QUIT does, so the request path tests
    /// nothing more for it).
    #[cold]
    fn closing(&self) -> Turn {
        if self.resp.as_deref().is_some_and(|s| s.handoff.is_some()) {
            Turn::Detach
        } else {
            Turn::Closed
        }
    }

    /// Sends what a TLS connection's rustls session holds (out of line:
    /// the plaintext turn carries none of it).
    #[cold]
    #[inline(never)]
    fn tls_flush(&mut self) -> std::io::Result<()> {
        match self.tls.as_deref_mut() {
            Some(t) if t.wants_write() => amalgam_net::tls::flush(t, &mut self.sock),
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
    /// whole request (RESP: `Parser::wanted`; memcached: `text::block_end`),
    /// with only the bytes already received (at most the old buffer)
    /// copied over. The value's bytes then arrive where the command reads
    /// them, and the only copy the worker makes of them is into the item:
    /// a buffer that doubled as it filled would copy them again at every
    /// doubling (and once more when compacted). The buffer is a fresh
    /// zeroed allocation, so the system maps it without writing it. Once
    /// the request is consumed, what is left moves to a small buffer.
    ///
    /// A value long enough is received straight into its item instead
    /// (`inplace.rs`): each read then goes into the item's next bytes.
    #[inline(always)]
    fn fill(&mut self, shared: &Shared, limits: Limits, rbuf_max: usize) -> std::io::Result<usize> {
        if self.inplace.as_ref().is_some_and(|v| !v.is_complete()) {
            return self.fill_in_place();
        }
        if self.rstart == self.rend {
            self.rstart = 0;
            self.rend = 0;
            if self.rbuf.len() > READ_BUFFER_BYTES_INITIAL {
                self.rbuf = vec![0; READ_BUFFER_BYTES_INITIAL];
            }
        }
        let pending = &self.rbuf[self.rstart..self.rend];
        let wanted = match self.resp.as_deref() {
            Some(s) => s.parser.wanted(),
            None if !pending.is_empty() && self.mc.swallow == 0 && self.mc.binary != Some(true) => {
                amalgam_protocol::text::block_end(pending)
            }
            None => None,
        };
        let room = self.rbuf.len() - self.rstart;
        match wanted {
            Some(w)
                if w >= crate::inplace::IN_PLACE_VALUE_BYTES_MIN && w > room && self.start_in_place(shared, limits) =>
            {
                return self.fill_after_start(shared, limits, rbuf_max);
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
            Some(t) => amalgam_net::tls::read(t, &mut self.sock, &mut self.rbuf[self.rend..end], &mut self.drained)?,
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
    fn fill_after_start(&mut self, shared: &Shared, limits: Limits, rbuf_max: usize) -> std::io::Result<usize> {
        self.fill(shared, limits, rbuf_max)
    }

    /// One read into the next bytes of the value being received in place
    /// (at most [`READ_BYTES_PER_ROUND_MAX`]); with the last one in, a
    /// RESP value moves to its session for the SET to take.
    #[cold]
    #[inline(never)]
    fn fill_in_place(&mut self) -> std::io::Result<usize> {
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
            Some(t) => amalgam_net::tls::read(t, sock, &mut *dst, drained)?,
        };
        // With persistence the bytes go into the value's log record too
        // (persist `staged.rs`): a read's worth at a time, here.
        if let Some(s) = v.staged.as_mut() {
            s.extend(&dst[..n]);
        }
        v.value.advance(n);
        self.value_received();
        Ok(n)
    }

    /// Once the value being received in place is whole: a RESP one waits
    /// in the session for its SET (memcached's stays in the connection).
    fn value_received(&mut self) {
        if self.inplace.as_ref().is_some_and(|v| v.is_complete()) {
            if let Some(s) = self.resp.as_deref_mut() {
                s.prepared = self.inplace.take().map(|v| *v);
            }
        }
    }

    /// Starts receiving the value of the request at the front of the
    /// read buffer in place, if it is one (`inplace.rs`): the buffer keeps
    /// the request's front with the value rewritten as empty.
    fn start_in_place(&mut self, shared: &Shared, limits: Limits) -> bool {
        if self.inplace.is_some() {
            return false;
        }
        let pending = &self.rbuf[self.rstart..self.rend];
        let started = match self.resp.as_deref_mut() {
            Some(s) => crate::inplace::start_resp(shared, s, pending),
            None if self.mc.may_receive_in_place() => crate::inplace::start_memcached(shared, limits, pending),
            None => None,
        };
        let Some(started) = started else { return false };
        let mut rbuf = started.front;
        let used = rbuf.len();
        rbuf.resize(used.max(READ_BUFFER_BYTES_INITIAL), 0);
        self.rbuf = rbuf;
        self.rstart = 0;
        self.rend = used;
        self.inplace = Some(Box::new(started.value));
        self.value_received();
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
    /// if its output reached the hard limit the round read (memcached's
    /// port: the client is closed; RESP closes its own, `resp::process`).
    fn process(&mut self, shared: &Shared, id: usize, reach: &Reach<'_>) -> bool {
        let stats = &shared.workers[id];
        let Conn { rbuf, rstart, rend, wbuf, close_after_write, resp, mc, inplace, .. } = self;
        let buf = &rbuf[..*rend];
        if let Some(session) = resp.as_deref_mut() {
            crate::resp::process(shared, stats, &reach.ks, session, buf, rstart, wbuf, close_after_write);
            return false;
        }
        // Every memcached-port connection is of the `normal` class.
        let ctx =
            amalgam_memcache::Ctx { w: &reach.mc, stop: shared.obuf.round_stop(amalgam_net::obuf::Class::Normal) };
        amalgam_memcache::process(&ctx, mc, buf, rstart, rend, wbuf, close_after_write, inplace)
    }
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
/// are the event loop's own (`Conn::turn`: TLS records, reads,
/// parsing, commands, replies, the output limits); what the loop does
/// around them for one connection (blocked clients woken, CLIENT KILL,
/// dropped subscribers) is done here before each turn, and closing it
/// leaves the registries as the loop's close does. Not the loop: no
/// epoll, no blocking deadlines, no persistence commits. It claims worker
/// 0's mailboxes (`DRIVEN_WORKER`), so one `Shared` drives one at a time.
pub struct Driven<S: Socket> {
    conn: Conn<S>,
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
        let resp = (protocol == Protocol::Resp).then(|| {
            let mut s = Box::new(crate::resp::Session::new(shared, &sock, DRIVEN_WORKER, DRIVEN_TOKEN));
            s.set_home(DRIVEN_WORKER, DRIVEN_TOKEN);
            s
        });
        let conn = Conn::new(sock, resp, tls, shared.authfile.is_none());
        Ok(Driven { conn, shared: Arc::clone(shared), closed: false })
    }

    /// One turn, as the event loop gives a connection whose socket became
    /// ready.
    pub fn turn(&mut self) -> Step {
        if self.closed {
            return Step::Closed;
        }
        let shared = &*self.shared;
        let stats = &shared.workers[DRIVEN_WORKER];
        let reach = Reach::new(shared, DRIVEN_WORKER);
        let me = self.conn.client_id();
        for (key, seq) in shared.blocking.take_wakes(DRIVEN_WORKER) {
            if let (DRIVEN_TOKEN, Some(s)) = (key, self.conn.resp.as_deref_mut()) {
                crate::resp::blocking::woken(shared, stats, &reach.ks, s, seq, &mut self.conn.wbuf);
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
        self.conn.drained = false;
        let rbuf_max = self.read_buffer_bytes_max();
        let step = match self.conn.turn(shared, DRIVEN_WORKER, &reach, rbuf_max) {
            Turn::Idle => Step::Idle,
            Turn::Again | Turn::Commit => Step::Again,
            Turn::Closed | Turn::Detach => Step::Closed,
        };
        self.closed = step == Step::Closed;
        step
    }

    /// The read buffer's size now.
    pub fn read_buffer_bytes(&self) -> usize {
        self.conn.rbuf.len()
    }

    /// The most the read buffer may grow to (the event loop's bound).
    pub fn read_buffer_bytes_max(&self) -> usize {
        if self.conn.resp.is_some() {
            resp_read_buffer_bytes_max(self.shared.resp_limits())
        } else {
            read_buffer_bytes_max(self.shared.args.max_item_size)
        }
    }

    /// Replies made and not yet taken by the socket.
    pub fn pending_output_bytes(&self) -> usize {
        self.conn.wbuf.len() - self.conn.wpos
    }

    /// The socket.
    pub fn socket(&mut self) -> &mut S {
        &mut self.conn.sock
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
    /// Leaves the registries as the event loop's close does
    /// (`take_conn`).
    fn drop(&mut self) {
        let shared = &*self.shared;
        if let Some(s) = self.conn.resp.as_deref_mut() {
            crate::resp::blocking::abandon(shared, s);
            crate::resp::pubsub::leave(shared, s);
            crate::resp::tracking::leave(shared, s);
        }
        if let Some(id) = self.conn.client_id() {
            shared.clients.remove(id);
        }
    }
}
