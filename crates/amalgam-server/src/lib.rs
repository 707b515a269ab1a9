//! # amalgam-server
//!
//! The `amalgam` binary: memcached's text protocol served from the Amalgam
//! engine, a drop-in for memcached (same flags, same defaults, same replies),
//! and Redis's RESP on a second port over the same keyspace. memcached's
//! binary protocol shares the memcached port: a connection whose first byte
//! is `0x80` is served by `amalgam_memcache::binary` for its life.
//!
//! ## What is here, and what is below (docs/architecture.md)
//! This crate is the wiring: `main.rs` (the listeners, the threads, the
//! signals), the event loop's front end over both ports (`worker.rs`:
//! `Reach`, the handles each worker builds once, implementing amalgam-net's
//! `FrontEnd`), memcached's operator commands that read the whole server
//! (`admin.rs`: the `stats` groups, `lru_crawler metadump`, `shutdown`,
//! `verbosity`, `watch`, reached through [`Memcached`], the
//! `amalgam_memcache::Host` this crate implements) and the Prometheus
//! endpoint (`metrics.rs`). Below it:
//! `amalgam-resp` (the Redis server: the state both ports share,
//! [`Shared`]; RESP's sessions, dispatch and its own commands; CONFIG's
//! table; replication's commands), `amalgam-memcache` (memcached's front
//! end), `amalgam-net` (the acceptor, the worker loops, a connection's turn,
//! TLS, the output limits, the client registry), and the data commands
//! (`amalgam-commands`) under them. Each is handed narrow handles built
//! once per worker: the families an `amalgam_commands::Keyspace`, the
//! memcached front end an `amalgam_memcache::Worker`.
//!
//! ## Threads
//! ```text
//!   main ── acceptor (mio Poll: memcached and RESP listeners + shutdown waker)
//!             │  round-robin hand-off: inbox + Waker per worker
//!             ▼
//!   worker 0..t-1 (mio Poll each: its connections + waker)   ──►  Store (shared, lock-free reads)
//!   signals (SIGINT/SIGTERM, `shutdown` with -A) ── sets `shutdown`, wakes everyone
//!           (SIGHUP: logged with -v, never stops the server)
//! ```
//! One epoll loop per worker thread (`-t`, default: one per core); a
//! connection lives on one worker for its whole life. No lock is taken on
//! the request path except the engine's per-bucket writer locks.
//!
//! ## A connection's turn (`worker.rs`)
//! Read everything the socket has (bounded per turn), parse as many
//! requests as the buffer holds, execute them as a batch — consecutive
//! GETs, whether one multi-get or many pipelined gets, become one engine
//! batch with prefetching (MICA §5.3), and consecutive storage commands
//! have their index lines prefetched before they run one by one
//! (`exec::run_stores`, `Store::prefetch_writes`) — and send every reply
//! with one write. memcached 1.6 issues a `sendmsg` per GET reply; that is where a
//! pipelined load loses most. After each round over its ready connections
//! a worker yields its CPU (`worker.rs`, the end of `run_worker`'s loop): a loaded worker
//! never sleeps in `epoll_wait`, and without the yield the scheduler would
//! switch only at timer ticks, leaving every connection of a runnable but
//! descheduled worker waiting milliseconds.
//!
//! ## TLS (`amalgam_net::tls`)
//! A connection from a TLS listener (memcached's port with `-Z`, RESP's
//! `--tls-port`) carries a rustls session: its turn reads and writes
//! through it, non-blocking, and is otherwise the same turn, so a stalled
//! handshake waits for readiness holding no worker. The certificate files
//! reload (SIGHUP, `refresh_certs`, CONFIG SET) for new connections. A
//! connection is generic over its socket (`worker::Socket`), so that
//! `worker::Driven` can run its turns over a fake one: the TLS fuzz
//! target (`fuzz-server/`) feeds it records that way.
//!
//! ## Bounds (every one named in `worker.rs` or the protocol crate)
//! A command line without `\n` past 2048 bytes (1 MiB for multi-gets), a
//! data block larger than `-I`, and more than `-c` connections are each
//! answered with memcached's error and the connection closed; a client that
//! does not read its replies stops being read from once its pending output
//! passes a high-water mark; each connection gets a bounded amount of work
//! per turn so no client can starve the others on its worker. With an
//! idle timeout (`--timeout`, `-o idle_timeout`) each worker closes, once a
//! second, the connections idle that long (not blocked clients or
//! subscribers). A panic in a command's handler is caught at the
//! connection's turn: that connection is closed and the worker goes on.
//!
//! ## Operator commands (`admin.rs`)
//! The `stats` groups (one composing function each), `lru_crawler
//! metadump` (streamed by the worker a bucket at a time under the output
//! high-water mark), `shutdown` and `verbosity`. Amalgam has no slabs: the
//! groups report the slab classes memcached would put the same items in
//! (admin.rs's notes; docs/memcached-ops.md). Start-up flags and their
//! checks are in `amalgam-config` (`config.rs`) and `main.rs`.
//!
//! ## Metrics (`metrics.rs`, `resp/cmdstats.rs`)
//! `--metrics-port` serves Prometheus's `GET /metrics` from a thread of its
//! own (tiny_http), with memcached_exporter's and redis_exporter's names so
//! their dashboards read it unchanged. Every figure is counted per worker
//! and summed when read (stats, INFO, a scrape): RESP commands are counted
//! once at dispatch, timed with one TSC read each (`amalgam_net::ticks`), into a
//! per-worker table of plain counters only its worker writes (no lock);
//! the slow log and the latency monitor (`resp/latency.rs`) are shared but
//! taken only by a command slower than their thresholds.
//!
//! ## Authentication (`amalgam_memcache::authfile`, `resp/acl.rs`, `amalgam-acl`)
//! memcached's port: with `-Y FILE` a connection is served by
//! `authfile::process` until its authentication `set` succeeds (a bool on
//! the connection; the binary protocol is off, as in memcached). RESP: the
//! users live in `Shared::acl`; each session caches its user and an `open`
//! flag (authenticated, every command, every key), compared with the
//! users' epoch once per read; an open session pays one byte test per
//! command, folded into the batch condition, and `resp::dispatch` checks
//! NOAUTH/NOPERM only for the others. Protected mode is checked by the
//! acceptor, once per RESP connection. A non-loopback `-l` without `-Y`
//! prints a warning at start-up (`main.rs`).
//!

#![forbid(unsafe_code)]

pub mod admin;
pub mod metrics;
pub mod worker;

// The Redis server and the state both ports share (crate amalgam-resp),
// under the paths the binary, the tests and the fuzz targets use.
pub use amalgam_resp::{
    accepted, conffile, config, failover, inplace, logging, obuf, rdbfile, repl, resp, scripting, settings, stats, tls,
    ConnRegistry, OpenConn, Shared, GIT_SHA1, REDIS_VERSION, VERSION_LONG,
};

/// What memcached's front end asks of the server (its operator commands,
/// which read the whole server: `admin.rs`), over the shared state. A
/// worker builds one and hands it to its `amalgam_memcache::Worker`.
#[derive(Debug, Clone, Copy)]
pub struct Memcached<'s>(pub &'s Shared);

impl amalgam_memcache::Host for Memcached<'_> {
    fn stats(&self, args: amalgam_protocol::text::Keys<'_>, out: &mut Vec<u8>) {
        admin::stats_command(self.0, args, out);
    }

    fn lru_crawler(&self, args: amalgam_protocol::text::Keys<'_>, out: &mut Vec<u8>) -> amalgam_memcache::After {
        admin::lru_crawler(self.0, args, out)
    }

    fn metadump_step(&self, cursor: u64, out: &mut Vec<u8>, high_bytes: usize) -> Option<u64> {
        admin::metadump_step(self.0, cursor, out, high_bytes)
    }

    fn shutdown(&self, args: amalgam_protocol::text::Keys<'_>, out: &mut Vec<u8>) -> amalgam_memcache::After {
        admin::shutdown(self.0, args, out)
    }

    fn verbosity(&self, level: u32) {
        admin::verbosity(self.0, level);
    }

    fn refresh_certs(&self) -> Option<Result<(), String>> {
        self.0.tls.as_ref().map(|t| t.reload(|_| {}).map_err(|e| e.to_string()))
    }

    fn notify(&self, class: u32, event: &str, key: &[u8]) {
        self.0.keyspace_event(class, event, key);
    }

    fn operator(&self) -> &amalgam_memcache::operator::State {
        &self.0.mc_operator
    }

    fn watch(&self, args: amalgam_protocol::text::Keys<'_>, out: &mut Vec<u8>) -> amalgam_memcache::After {
        admin::watch(self.0, args, out)
    }

    fn wake_worker(&self, worker: usize) {
        self.0.blocking.wake(worker);
    }

    fn binding(&self) -> amalgam_memcache::Binding {
        use amalgam_config::config::Protocol;
        match self.0.args.binding_protocol() {
            Ok(Protocol::Ascii) => amalgam_memcache::Binding::Ascii,
            Ok(Protocol::Binary) => amalgam_memcache::Binding::Binary,
            _ => amalgam_memcache::Binding::Auto,
        }
    }

    fn flushed(&self) {
        self.0.tracking.flushed(self.0);
    }

    fn misrouted(&self, keys: &[&[u8]], write: bool) -> Option<String> {
        resp::cluster::memcached_route(self.0, keys, write)
    }
}
