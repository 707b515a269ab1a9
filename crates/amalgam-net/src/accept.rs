//! The acceptor: one thread watching every listener (memcached's, RESP's,
//! their TLS twins), enforcing the connection limit over all of them
//! together, and dealing connections to the workers round-robin, each
//! tagged with its listener's protocol and whether it speaks TLS.

use crate::front::{Listing, OpenConn};
use crate::socket::Protocol;
use crate::worker::WorkerHandle;
use mio::net::TcpListener;
use mio::{Events, Interest, Poll, Token};
use std::io::{ErrorKind, Write};
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Connections accepted per listener event before the acceptor looks at
/// its other events.
const ACCEPTS_PER_EVENT_MAX: usize = 256;
/// Events taken from epoll per wait.
const EVENTS_PER_POLL: usize = 64;
/// How long the acceptor sleeps after a failing accept (EMFILE), so that
/// it does not spin on it.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(10);
/// memcached's answer to a connection over `-c`.
const TOO_MANY_CONNECTIONS: &[u8] = b"ERROR Too many open connections\r\n";
/// Redis's answer to a connection over `maxclients`.
const RESP_TOO_MANY_CONNECTIONS: &[u8] = b"-ERR max number of clients reached\r\n";

/// A listener: its socket, its protocol, and whether it speaks TLS.
pub type Listener = (TcpListener, Protocol, bool);

/// What of the server the acceptor touches.
#[derive(Clone, Copy, Debug)]
pub struct AcceptEnv<'a> {
    pub shutdown: &'a AtomicBool,
    /// Open connections over both ports, and their limit (`-c`,
    /// `maxclients`).
    pub curr_connections: &'a AtomicUsize,
    pub conn_limit: usize,
    /// Connections refused (over the limit, or by the refusal hook).
    pub rejected: &'a AtomicU64,
    /// `stats conns`' list.
    pub listing: &'a Mutex<Listing>,
}

/// A failing accept (EMFILE) is logged at most once per
/// `LOG_RATE_LIMIT_PERIOD`.
static ACCEPT_ERROR_LOG: amalgam_persist::ratelimit::RateLimit = amalgam_persist::ratelimit::RateLimit::new();

/// Accepts connections on every listener until shutdown and deals them to
/// the workers round-robin. `refuse` answers a connection the server
/// turns away at accept (Redis's protected mode), with the bytes to send
/// it in the clear; `tick` runs at least every `period` (the server's
/// eviction watch).
pub fn run_acceptor(
    env: &AcceptEnv<'_>,
    mut listeners: Vec<Listener>,
    mut poll: Poll,
    workers: &[WorkerHandle],
    refuse: impl Fn(Protocol, SocketAddr) -> Option<&'static [u8]>,
    period: Duration,
    mut tick: impl FnMut(),
) {
    let mut listen_addrs = Vec::with_capacity(listeners.len());
    for (i, (listener, _, _)) in listeners.iter_mut().enumerate() {
        if let Err(e) = poll.registry().register(listener, Token(i), Interest::READABLE) {
            log::error!("cannot watch the listening socket: {e}");
            return;
        }
        let addr = listener.local_addr().unwrap_or_else(|_| ([0, 0, 0, 0], 0).into());
        listen_addrs.push(addr);
        env.listing.lock().unwrap_or_else(|e| e.into_inner()).listeners.insert(listener.as_raw_fd(), addr);
    }
    let mut events = Events::with_capacity(EVENTS_PER_POLL);
    let mut next = 0;
    while !env.shutdown.load(Ordering::Acquire) {
        tick();
        if let Err(e) = poll.poll(&mut events, Some(period)) {
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
                        let refused = if env.curr_connections.load(Ordering::Relaxed) >= env.conn_limit {
                            Some(match protocol {
                                Protocol::Memcached => TOO_MANY_CONNECTIONS,
                                Protocol::Resp => RESP_TOO_MANY_CONNECTIONS,
                            })
                        } else {
                            refuse(*protocol, peer)
                        };
                        if let Some(answer) = refused {
                            // A TLS client could not read a plain reply:
                            // it is closed without one.
                            if !*tls {
                                let _ = sock.write(answer);
                            }
                            env.rejected.fetch_add(1, Ordering::Relaxed);
                            continue;
                        }
                        let _ = sock.set_nodelay(true);
                        env.curr_connections.fetch_add(1, Ordering::Relaxed);
                        // Listed until the worker closes it (before the fd
                        // can be reused).
                        env.listing
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .open
                            .insert(sock.as_raw_fd(), OpenConn { peer, listen });
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
                        std::thread::sleep(ACCEPT_ERROR_PAUSE);
                        break;
                    }
                }
            }
        }
    }
}
