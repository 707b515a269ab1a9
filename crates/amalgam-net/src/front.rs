//! What the event loop asks of a front end, and what it is given of the
//! server.
//!
//! The loop (`worker.rs`) and a connection's turn (`conn.rs`) know
//! sockets, buffers, TLS, the output limits, the log's commits and the
//! clock; they know no protocol and no command. Everything a connection
//! does with its bytes, and everything other threads ask of it (a blocked
//! client woken, a subscriber's messages, CLIENT KILL), goes through
//! [`FrontEnd`], which the server implements once per worker thread over
//! both ports (its `front.rs`). The loop is generic over it and the server
//! instantiates it once, so the request path is as monomorphic as the
//! loop written against the server by name was (callgrind per request,
//! docs/bench-log/2026-12-07-event-loop.md).
//!
//! [`Env`] is the narrow set of the server's state the loop itself
//! touches: the shutdown flag, the idle timeout, the log, the output
//! limits, TLS, the connection count and list, and the worker's byte
//! counters.

use crate::conn::Conn;
use crate::obuf::{Class, OutputLimits};
use crate::socket::Protocol;
use amalgam_persist::received::{Receiving, Started};
use mio::net::TcpStream;
use slab::Slab;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::Mutex;
use std::time::Instant;

/// A worker's connections, by their poll token.
pub type Conns<St> = Slab<Conn<TcpStream, St>>;

/// The listeners and the open connections by file descriptor, for
/// memcached's `stats conns` (the acceptor lists a connection, its worker
/// unlists it before its socket closes).
#[derive(Debug, Default)]
pub struct Listing {
    pub listeners: BTreeMap<i32, SocketAddr>,
    pub open: BTreeMap<i32, OpenConn>,
}

/// An open connection's addresses (`stats conns`).
#[derive(Debug, Clone, Copy)]
pub struct OpenConn {
    pub peer: SocketAddr,
    pub listen: SocketAddr,
}

/// What of the server the event loop and a connection's turn touch
/// themselves (a front end reaches the rest through its own handles).
#[derive(Clone, Copy)]
pub struct Env<'a> {
    /// This worker's number.
    pub worker: usize,
    /// Set once the server stops: the loop ends.
    pub shutdown: &'a AtomicBool,
    /// Seconds a connection may stay idle (0: no limit); `timeout`,
    /// `-o idle_timeout`, settable at run time.
    pub idle_timeout_secs: &'a AtomicU64,
    /// The log, whose commits replies of journaled writes wait for.
    pub persist: Option<&'a amalgam_persist::Persistence>,
    /// The output limits by client class.
    pub obuf: &'a OutputLimits,
    /// TLS, for connections from a TLS listener.
    pub tls: Option<&'a crate::tls::Tls>,
    /// Open connections over both ports (`-c` / `maxclients`).
    pub curr_connections: &'a AtomicUsize,
    /// `stats conns`' list.
    pub listing: &'a Mutex<Listing>,
    /// This worker's counters (memcached's `stats` and INFO's).
    pub bytes_read: &'a AtomicU64,
    pub bytes_written: &'a AtomicU64,
    pub total_connections: &'a AtomicU64,
}

impl std::fmt::Debug for Env<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Env").field("worker", &self.worker).finish_non_exhaustive()
    }
}

/// A connection's buffers, lent to its front end for one round.
#[derive(Debug)]
pub struct Io<'a> {
    /// The read buffer up to the end of what was received.
    pub buf: &'a [u8],
    /// Where the unparsed bytes begin; the front end advances it.
    pub rstart: &'a mut usize,
    /// Where the received bytes end (memcached's swallow of a refused
    /// block moves it).
    pub rend: &'a mut usize,
    /// The replies; the front end appends.
    pub wbuf: &'a mut Vec<u8>,
    /// Set to close the connection once the replies are out.
    pub close_after_write: &'a mut bool,
    /// A large value received in place, whole, for the request at the
    /// front to take (memcached's port; RESP's moved to its session).
    pub inplace: &'a mut Option<Box<Receiving>>,
}

/// What one front end (both ports' state machines, per worker thread)
/// does for the event loop. Every method is called on the worker's own
/// thread; `State` is one connection's.
pub trait FrontEnd {
    /// One connection's state (its session, its parser's position).
    type State;
    /// What a connection handed to another thread takes with it
    /// (replication's PSYNC: its registry entry).
    type Handoff;

    /// A connection accepted on `protocol`'s port, token `token` of this
    /// worker's poll.
    fn open(&self, sock: &TcpStream, protocol: Protocol, token: usize) -> Self::State;

    /// Parses and executes what `io` holds, as one batch; true if its
    /// output reached the hard limit the round read (the client is
    /// closed).
    fn process(&self, st: &mut Self::State, io: Io<'_>) -> bool;

    /// The whole length of the request at the front of `pending`, once its
    /// header says it (to size the read buffer for a large value).
    fn wanted(&self, st: &Self::State, pending: &[u8]) -> Option<usize>;

    /// Starts receiving the value of the request at the front of `pending`
    /// in place, if it is one the front end stores that way.
    fn start_in_place(&self, st: &mut Self::State, pending: &[u8]) -> Option<Started>;

    /// The value received in place is whole: the front end may take it
    /// from `inplace` (RESP moves it to its session).
    fn value_received(&self, st: &mut Self::State, inplace: &mut Option<Box<Receiving>>);

    /// Most bytes its read buffer may grow to (one whole request).
    fn read_buffer_bytes_max(&self, st: &Self::State) -> usize;

    /// The connection waits in a blocking command: its further requests
    /// wait, it is only read to see it leave.
    fn blocked(&self, st: &Self::State) -> bool;

    /// Spared by the idle timeout (a blocked client, a subscriber).
    fn idle_exempt(&self, st: &Self::State) -> bool;

    /// Its class for the output limits.
    fn output_class(&self, st: &Self::State) -> Class;

    /// Its client id, for the log's lines about it.
    fn client_id(&self, st: &Self::State) -> Option<u64>;

    /// Once its replies are out it leaves the loop for another thread
    /// (PSYNC) rather than closing.
    fn detaches(&self, st: &Self::State) -> bool;

    /// A blocking command begun this turn: its deadline and its episode.
    fn new_deadline(&self, st: &mut Self::State) -> Option<(Instant, u64)>;

    /// Its deadline passed: answers the timeout into `wbuf` if episode
    /// `seq` still waits (true: it has output).
    fn timed_out(&self, st: &mut Self::State, seq: u64, wbuf: &mut Vec<u8>) -> bool;

    /// Episode `seq` still waits (stale deadlines are pruned).
    fn still_waiting(&self, st: &Self::State, seq: u64) -> bool;

    /// The worker's waker rang: serves what other threads queued for this
    /// worker's connections (blocked clients woken, messages, kills),
    /// pushing the tokens to turn to `ready` and those to close to `close`.
    fn woken(&self, conns: &mut Conns<Self::State>, ready: &mut Vec<usize>, close: &mut Vec<usize>);

    /// The connection is leaving the loop (closed or handed off): out of
    /// every registry it joined.
    fn leave(&self, st: &mut Self::State);

    /// The loop is ending: out of the client registry only.
    fn forget(&self, st: &Self::State);

    /// Before a connection that [`detaches`](FrontEnd::detaches) leaves:
    /// what its new thread needs of the registries.
    fn handoff_start(&self, st: &Self::State) -> Self::Handoff;

    /// Hands the connection to its new thread, with the bytes it sent
    /// after its last request.
    fn hand_off(&self, h: Self::Handoff, conn: Conn<TcpStream, Self::State>);
}
