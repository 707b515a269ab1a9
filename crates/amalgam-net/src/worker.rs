//! A worker: an epoll event loop over its connections, each given a
//! bounded turn when its socket is ready (`conn.rs`).
//!
//! The acceptor (`accept.rs`) hands it new connections through its
//! inbox and rings its waker; other threads ring the same waker for what
//! they queued for its connections (a blocked client woken, a message
//! published, CLIENT KILL), which the front end serves
//! ([`FrontEnd::woken`]). Around the turns the loop keeps the blocked
//! clients' deadlines, parks replies that wait for the log's commit, and
//! sweeps idle connections and those over their output limits.
//!
//! ## Order
//! Each round turns every ready connection once: first those left with
//! work from the round before, then the rest in epoll's readiness order,
//! which is the order their bytes arrived. So on one worker commands run
//! in arrival order, as Redis and memcached serve their events; across
//! workers there is none (docs/architecture.md § Order). That holds
//! because a connection is registered for input only: it asks for
//! writability only while output it could not send is pending
//! (`watch_writable`), as Redis installs its write handler only then. A
//! writable registration puts a new connection on the ready list at once
//! (a new socket is writable); its first request, arriving before the
//! loop took that event, kept that earlier place, ahead of another's sent
//! before it (issue 39 §1).

use crate::conn::{Conn, Turn};
use crate::front::{Conns, Env, FrontEnd};
use crate::socket::Protocol;
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token, Waker};
use slab::Slab;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::ErrorKind;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Token of each poll's waker.
const WAKER: Token = Token(usize::MAX);
/// Events taken from epoll per wait.
const EVENTS_PER_POLL: usize = 1024;
/// Rounds of a worker's loop between two looks at the clock for the
/// output sweep (`obuf.rs`).
const OUTPUT_SWEEP_ROUNDS: usize = 16;
/// How often a worker looks for connections idle past the timeout.
const IDLE_SWEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(1);
/// Stale blocking deadlines the heap may hold beyond two per connection
/// before it is pruned.
pub const DEADLINES_SLACK: usize = 64;

/// New connections handed from the acceptor to one worker, with their
/// protocol and whether they speak TLS.
pub type Inbox = Arc<Mutex<Vec<(TcpStream, Protocol, bool)>>>;

/// A worker as the acceptor sees it: where to hand new connections.
#[derive(Debug)]
pub struct WorkerHandle {
    pub(crate) inbox: Inbox,
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

/// A worker's event loop over its connections, until shutdown.
pub fn run_worker<F: FrontEnd>(fe: &F, env: &Env<'_>, mut poll: Poll, inbox: Inbox, waker: Arc<Waker>) {
    let id = env.worker;
    let mut conns: Conns<F::State> = Slab::new();
    let mut events = Events::with_capacity(EVENTS_PER_POLL);
    let mut again: Vec<usize> = Vec::new();

    // `--fsync always`: connections whose replies wait for the committer
    // thread; it wakes this loop after each fsync. Registered whatever
    // the policy: CONFIG SET appendfsync always may make it asynchronous
    // later.
    let mut waiting: Vec<usize> = Vec::new();
    if let Some(p) = env.persist {
        let waker = waker.clone();
        p.register_waker(Arc::new(move || {
            let _ = waker.wake();
        }));
    }
    // Blocked clients' deadlines: (when, slab token, blocking episode);
    // stale entries are skipped, and pruned past a bound.
    let mut deadlines: BinaryHeap<Reverse<(Instant, usize, u64)>> = BinaryHeap::new();
    let mut ready: Vec<usize> = Vec::new();
    let mut close: Vec<usize> = Vec::new();
    let mut last_sweep = crate::ticks::now();
    let mut last_output_sweep = last_sweep;
    // Rounds since the output sweep's clock was last read.
    let mut output_rounds = 0usize;
    // Whether the idle timeout was on at the last round.
    let mut sweeping = false;
    // This round's number (`Conn::queue`).
    let mut round: u64 = 0;
    while !env.shutdown.load(Ordering::Acquire) {
        let idle_secs = env.idle_timeout_secs.load(Ordering::Relaxed);
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
                    let (st, wbuf) = c.parts();
                    if fe.timed_out(st, seq, wbuf) {
                        ready.push(key);
                    }
                }
            }
        }
        if !waiting.is_empty() {
            let committed = env.persist.map_or(u64::MAX, |p| p.committed());
            waiting.retain(|&key| match conns.get(key) {
                Some(c) if c.commit_target() > committed => true,
                Some(_) => {
                    ready.push(key);
                    false
                }
                None => false,
            });
        }
        for ev in events.iter() {
            if ev.token() == WAKER {
                fe.woken(&mut conns, &mut ready, &mut close);
                for key in close.drain(..) {
                    close_conn(fe, env, &poll, &mut conns, key);
                }
                let fresh = std::mem::take(&mut *inbox.lock().unwrap_or_else(|e| e.into_inner()));
                // A new connection's first turn comes with its own
                // readiness event (registering it queues one if its bytes
                // are already there; else they raise one as they arrive),
                // so its bytes are served after those of connections that
                // became ready before: turned here, a client
                // accepted in this round could run before one whose
                // request arrived earlier but whose event follows the
                // waker's in this poll (issue 39 §1).
                for (sock, protocol, tls) in fresh {
                    admit(fe, env, &poll, &mut conns, sock, protocol, tls);
                }
            } else {
                let key = ev.token().0;
                if let Some(c) = conns.get_mut(key) {
                    c.readied(ev.is_read_closed() || ev.is_error());
                }
                ready.push(key);
            }
        }
        // Each connection once, in the order it became ready: the ones
        // left with work from the last round, then epoll's readiness
        // order, which is the order their bytes arrived, as Redis and
        // memcached serve their events (issue 39 §1; sorting by token
        // served a connection accepted later first when it had the lower
        // token, as a reused slab slot has).
        round = round.wrapping_add(1);
        ready.retain(|&key| conns.get_mut(key).is_some_and(|c| c.queue(round)));
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
                if let Some(p) = env.persist {
                    if p.asynchronous() || p.commit() == amalgam_persist::Commit::Deferred {
                        let target = parked.iter().filter_map(|&k| conns.get(k)).map(|c| c.commit_target()).max();
                        p.request_commit(target.unwrap_or(0));
                        waiting.append(&mut parked);
                        waiting.sort_unstable();
                        waiting.dedup();
                        break;
                    }
                }
                ready = std::mem::take(&mut parked);
            }
            for &key in &ready {
                let Some(conn) = conns.get_mut(key) else { continue };
                // Read per pass: `proto-max-bulk-len` may change (CONFIG SET).
                let max = fe.read_buffer_bytes_max(conn.state());
                if idle_secs != 0 {
                    conn.active = crate::ticks::now();
                }
                // A panic in a handler (a bug, or DEBUG PANIC) costs its
                // connection, not the worker: caught here, the connection
                // is closed below and the worker serves on. Unwinding
                // released whatever the handler held (bucket guards and
                // mutex guards drop; a poisoned mutex is read through, as
                // everywhere in the server). The default hook has printed
                // the panic's message and place.
                let watch = |sock: &mut TcpStream, writable: bool| watch_writable(&poll, sock, key, writable);
                let turn =
                    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| conn.turn(fe, env, max, watch))) {
                        Ok(turn) => turn,
                        Err(_) => {
                            log::error!("worker {id}: a command's handler panicked; its connection is closed");
                            Turn::Closed
                        }
                    };
                if let Some((when, seq)) = fe.new_deadline(conn.parts().0) {
                    deadlines.push(Reverse((when, key, seq)));
                    if deadlines.len() > 2 * conns.len() + DEADLINES_SLACK {
                        deadlines.retain(|Reverse((_, k, seq))| {
                            conns.get(*k).is_some_and(|c| fe.still_waiting(c.state(), *seq))
                        });
                    }
                }
                match turn {
                    Turn::Idle => {}
                    Turn::Commit if pass == 0 => parked.push(key),
                    Turn::Again | Turn::Commit => again.push(key),
                    Turn::Closed => close_conn(fe, env, &poll, &mut conns, key),
                    Turn::Detach => detach(fe, env, &poll, &mut conns, key),
                }
            }
        }
        if idle_secs != 0 {
            let now = crate::ticks::now();
            if !sweeping {
                // Turned on (CONFIG SET timeout): turns were not timed
                // while it was off, so every connection's clock starts now.
                sweeping = true;
                for (_, c) in conns.iter_mut() {
                    c.active = now;
                }
            }
            if crate::ticks::nanos_between(last_sweep, now) >= IDLE_SWEEP_EVERY.as_nanos() as u64 {
                last_sweep = now;
                sweep_idle(fe, env, &poll, &mut conns, idle_secs, now);
            }
        }
        sweeping &= idle_secs != 0;
        // The clock is read every OUTPUT_SWEEP_ROUNDS rounds, or after a
        // poll that found nothing (at least once a second then): reading
        // it every round cost ~25 instructions per unpipelined GET
        // (callgrind). A worker that gets events at most once a second
        // sweeps at least every OUTPUT_SWEEP_ROUNDS seconds.
        output_rounds += 1;
        if (output_rounds >= OUTPUT_SWEEP_ROUNDS || events.is_empty()) && env.obuf.soft_on() {
            output_rounds = 0;
            let now = crate::ticks::now();
            if crate::ticks::nanos_between(last_output_sweep, now) >= crate::obuf::SWEEP_EVERY.as_nanos() as u64 {
                last_output_sweep = now;
                sweep_output(fe, env, &poll, &mut conns, now);
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
        unlist(env, c.socket());
    }
    env.curr_connections.fetch_sub(conns.len(), Ordering::Relaxed);
    for (_, c) in conns.iter() {
        fe.forget(c.state());
    }
}

/// Takes a connection from the acceptor into this worker: its TLS
/// session, its poll registration, its front end's state. None if it
/// could not start (it is closed and uncounted).
fn admit<F: FrontEnd>(
    fe: &F,
    env: &Env<'_>,
    poll: &Poll,
    conns: &mut Conns<F::State>,
    mut sock: TcpStream,
    protocol: Protocol,
    tls: bool,
) -> Option<usize> {
    let tls = match (tls, env.tls) {
        (false, _) => None,
        (true, Some(t)) => match t.accept(protocol) {
            Ok(session) => Some(Box::new(session)),
            Err(e) => {
                eprintln!("amalgam: cannot start a TLS session: {e}");
                unlist(env, &sock);
                env.curr_connections.fetch_sub(1, Ordering::Relaxed);
                return None;
            }
        },
        (true, None) => {
            unlist(env, &sock);
            env.curr_connections.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
    };
    let entry = conns.vacant_entry();
    let token = Token(entry.key());
    // Readable only: writability is asked for while output is pending that
    // the socket would not take (`watch_writable`). Registered writable, a
    // new connection took a place on epoll's ready list at once, and a
    // request it sent before the loop took that event kept the place,
    // ahead of another connection's sent earlier (§ Order).
    if poll.registry().register(&mut sock, token, Interest::READABLE).is_err() {
        unlist(env, &sock);
        env.curr_connections.fetch_sub(1, Ordering::Relaxed);
        return None;
    }
    crate::conn::bump(env.total_connections, 1);
    let state = fe.open(&sock, protocol, token.0);
    entry.insert(Conn::new(sock, state, tls));
    Some(token.0)
}

/// Asks epoll for writability as well as input (`writable`: output is
/// pending that the socket would not take), or for input only again (it
/// is out): called by a turn only when that changes (`Conn::rewatch`).
/// Changing the registration re-arms it (`EPOLL_CTL_MOD` polls the
/// socket), so a socket that became writable, or got bytes, since the
/// turn's last try raises its event now: no edge is lost.
#[cold]
#[inline(never)]
fn watch_writable(poll: &Poll, sock: &mut TcpStream, key: usize, writable: bool) -> std::io::Result<()> {
    let interest = if writable { Interest::READABLE | Interest::WRITABLE } else { Interest::READABLE };
    poll.registry().reregister(sock, Token(key), interest).inspect_err(|e| {
        log::warn!("worker: cannot change a connection's poll registration ({e}); it is closed");
    })
}

/// Closes the connections idle for `idle_secs` or more, as Redis's
/// `clientsCronHandleTimeout` does, but not those the front end spares
/// (a client blocked in a blocking command, a subscriber: Redis spares
/// both), and memcached's `idle_timeout` (the same rule; its port has
/// neither kind). Bounded by the connections.
fn sweep_idle<F: FrontEnd>(fe: &F, env: &Env<'_>, poll: &Poll, conns: &mut Conns<F::State>, idle_secs: u64, now: u64) {
    let limit_ns = idle_secs.saturating_mul(1_000_000_000);
    let idle: Vec<usize> = conns
        .iter()
        .filter(|(_, c)| crate::ticks::nanos_between(c.active, now) >= limit_ns)
        .filter(|(_, c)| !fe.idle_exempt(c.state()))
        .map(|(k, _)| k)
        .collect();
    for key in idle {
        close_conn(fe, env, poll, conns, key);
    }
}

/// Closes the connections whose pending output is at or above their
/// class's hard limit, or has stayed at or above its soft limit longer
/// than the soft seconds (`obuf.rs`; Redis's `client-output-buffer-limit`).
/// Once per [`crate::obuf::SWEEP_EVERY`] while a soft limit is set;
/// bounded by the connections.
fn sweep_output<F: FrontEnd>(fe: &F, env: &Env<'_>, poll: &Poll, conns: &mut Conns<F::State>, now: u64) {
    let mut over: Vec<usize> = Vec::new();
    for (key, c) in conns.iter_mut() {
        let pending = c.pending_output_bytes();
        if pending == 0 && c.soft_since == 0 {
            continue;
        }
        let class = fe.output_class(c.state());
        if env.obuf.over_hard(class, pending) || env.obuf.soft_expired(class, pending, &mut c.soft_since, now) {
            env.obuf.closed(&c.describe(fe), class, pending);
            over.push(key);
        }
    }
    for key in over {
        close_conn(fe, env, poll, conns, key);
    }
}

/// Closes connection `key` of this worker: out of the poll, `stats conns`'
/// list, the count and the front end's registries.
pub fn close_conn<F: FrontEnd>(fe: &F, env: &Env<'_>, poll: &Poll, conns: &mut Conns<F::State>, key: usize) {
    drop(take_conn(fe, env, poll, conns, key));
}

/// Takes connection `key` out of this worker (the front end's registries,
/// the poll, `stats conns`' list, the count) and returns it, its socket
/// still open.
fn take_conn<F: FrontEnd>(
    fe: &F,
    env: &Env<'_>,
    poll: &Poll,
    conns: &mut Conns<F::State>,
    key: usize,
) -> Option<Conn<TcpStream, F::State>> {
    let mut c = conns.try_remove(key)?;
    fe.leave(c.parts().0);
    let _ = poll.registry().deregister(c.socket_mut());
    unlist(env, c.socket());
    env.curr_connections.fetch_sub(1, Ordering::Relaxed);
    Some(c)
}

/// Hands connection `key`, whose front end said it leaves (PSYNC), to
/// its new thread: out of the poll and the connection lists.
fn detach<F: FrontEnd>(fe: &F, env: &Env<'_>, poll: &Poll, conns: &mut Conns<F::State>, key: usize) {
    let Some(h) = conns.get(key).map(|c| fe.handoff_start(c.state())) else { return };
    let Some(c) = take_conn(fe, env, poll, conns, key) else { return };
    fe.hand_off(h, c);
}

/// Takes a connection off `stats conns`' list; called before its socket
/// closes, so its fd cannot be listed for a newer connection meanwhile.
fn unlist(env: &Env<'_>, sock: &TcpStream) {
    env.listing.lock().unwrap_or_else(|e| e.into_inner()).open.remove(&sock.as_raw_fd());
}
