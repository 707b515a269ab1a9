//! # amalgam-memcache
//!
//! memcached's front end: the text protocol (`exec.rs`), the meta
//! protocol (`meta.rs`), the binary protocol (`binary.rs`, on the same
//! port: a connection whose first byte is `0x80` speaks it for its life)
//! and `-Y` authentication (`authfile.rs`), executed on the engine with
//! memcached 1.6.18's replies, counters and limits. `conn.rs` is a
//! connection's round: what the event loop (the server's `worker.rs`)
//! hands it each time the read buffer has new bytes.
//!
//! ## What it may touch
//! A round gets a [`Ctx`]: its worker's [`Worker`] (the store, the
//! worker's counters, the server's settings that decide a reply: `-C`,
//! `-F`, `-I`, a read-only replica), built once per worker thread, and
//! where the round stops for a client past its output limit. Through the
//! [`Host`] it reaches the operator commands that read the whole server
//! (`stats`, `lru_crawler`, `shutdown`, `verbosity`, `refresh_certs`,
//! `watch`) and the port's operator state (`stats detail`, `slabs`,
//! `lru`: `operator.rs`),
//! which the server answers (its `admin.rs`). No socket, no other
//! connection, no RESP.
//!
//! ## Database 0
//! The memcached port serves Redis's database 0, engine namespace 0
//! (`amalgam_engine::namespace`): a key is stored as it is unless it
//! begins with the escape byte 0xFF, then escaped ([`stored`],
//! [`stored_all`]), so a memcached key never reads or writes another
//! database's key. A key a reply names is the request's, or a stored
//! key's name ([`name`]). memcached's `flush_all` flushes every database,
//! as FLUSHALL does.
//!
//! ## Files
//! | file | what |
//! |---|---|
//! | `conn.rs` | a connection's round: `-Y` first, the binary protocol or the text batch loop |
//! | `exec.rs` | the text protocol's requests on the engine: runs of gets, runs of stores, the rest one by one |
//! | `meta.rs` | the meta protocol (mg ms md ma mn me) |
//! | `binary.rs` | the binary protocol, memcached 1.6.18's statuses and bodies |
//! | `authfile.rs` | `-Y FILE`: the users and the authentication `set` |
//! | `watch.rs` | `watch`: the watchers' registry and memcached's log-line formats |
//! | `operator.rs` | `stats detail` (per-prefix counts), `slabs`, `lru`: memcached's replies |
//! | `route.rs` | Redis Cluster mode: a key of another node's slot is refused with the redirection |

#![forbid(unsafe_code)]

pub mod authfile;
pub mod binary;
pub mod conn;
pub mod exec;
pub mod meta;
pub mod operator;
mod route;
pub mod slabs;
pub mod watch;

pub use conn::{process, swallowing, Conn};

use amalgam_engine::namespace::{self, NS_ESCAPE};

/// A memcached key's stored form (see "Database 0"): the key itself, or
/// when it begins with the escape byte its escaped copy in `scratch`.
/// One compare for every other key.
#[inline(always)]
pub(crate) fn stored<'a>(key: &'a [u8], scratch: &'a mut Vec<u8>) -> &'a [u8] {
    if key.first() != Some(&NS_ESCAPE) {
        return key;
    }
    scratch.clear();
    namespace::encode_into(0, key, scratch);
    scratch
}

/// [`stored`] for a batch of keys: those that begin with the escape byte
/// are replaced by escaped copies kept in `scratch` (which allocates only
/// then). True if any was.
#[inline(always)]
pub(crate) fn stored_all<'a>(keys: &mut [&'a [u8]], scratch: &'a mut Vec<Vec<u8>>) -> bool {
    if keys.iter().all(|k| k.first() != Some(&NS_ESCAPE)) {
        return false;
    }
    escape_all(keys, scratch);
    true
}

/// The escaping part of [`stored_all`], out of line.
#[cold]
#[inline(never)]
fn escape_all<'a>(keys: &mut [&'a [u8]], scratch: &'a mut Vec<Vec<u8>>) {
    scratch.extend(keys.iter().filter(|k| k.first() == Some(&NS_ESCAPE)).map(|k| namespace::encode(0, k)));
    let mut escaped = scratch.iter();
    for k in keys.iter_mut().filter(|k| k.first() == Some(&NS_ESCAPE)) {
        *k = escaped.next().expect("one copy per escaped key");
    }
}

/// The name of a stored key (what a reply shows).
#[inline(always)]
pub(crate) fn name(stored: &[u8]) -> &[u8] {
    namespace::split(stored).1
}
pub use exec::After;

use amalgam_commands::counters::Counters;
use amalgam_engine::Store;
use amalgam_net::turn::RoundStop;
use amalgam_protocol::text::{Keys, Limits};
use std::sync::atomic::{AtomicBool, Ordering};

/// What the memcached front end asks of the server: the operator commands
/// that read or change the whole server. The server implements it (its
/// `Shared`); none of these is on the request path.
pub trait Host: Sync {
    /// `stats [group]`: memcached's groups (the server's `admin.rs`).
    fn stats(&self, args: Keys<'_>, out: &mut Vec<u8>);
    /// `lru_crawler …`: `metadump` answers [`After::MetaDump`].
    fn lru_crawler(&self, args: Keys<'_>, out: &mut Vec<u8>) -> After;
    /// One step of a metadump from `cursor`, stopping once `out` holds
    /// `high_bytes`; the cursor to go on from, None once it is done.
    fn metadump_step(&self, cursor: u64, out: &mut Vec<u8>, high_bytes: usize) -> Option<u64>;
    /// `shutdown [graceful]` (with `-A`).
    fn shutdown(&self, args: Keys<'_>, out: &mut Vec<u8>) -> After;
    /// `verbosity N`.
    fn verbosity(&self, level: u32);
    /// `refresh_certs`: None without TLS, else the reload's result.
    fn refresh_certs(&self) -> Option<Result<(), String>>;
    /// Keyspace event `event` of class `class` happened to `key` (its
    /// stored form), as RESP's writes tell it (`amalgam_commands::notify`):
    /// published, and tracked keys invalidated.
    fn notify(&self, class: u32, event: &str, key: &[u8]);
    /// The memcached port's operator state: `stats detail`'s prefixes,
    /// `slabs` and `lru`'s tuning (operator.rs).
    fn operator(&self) -> &operator::State;
    /// `watch [classes]`: memcached's replies (watch.rs).
    fn watch(&self, args: Keys<'_>, out: &mut Vec<u8>) -> After;
    /// memcached's `-B`: which protocols a connection may speak, asked
    /// once per connection, at its first byte.
    fn binding(&self) -> Binding {
        Binding::Auto
    }
    /// `flush_all` emptied the cache (a delayed one: was scheduled): RESP
    /// clients that track keys are told every key is invalid, as after
    /// Redis's FLUSHALL.
    fn flushed(&self) {}
    /// Wakes `worker`'s event loop: a watcher there has lines to send.
    fn wake_worker(&self, _worker: usize) {}
    /// In cluster mode (asked only when [`Worker::routed`]): why a request
    /// on `keys` (memcached's keys, database 0's) does not run on this
    /// node, as Redis's redirection (`MOVED 3999 127.0.0.1:7001`), or None
    /// when it runs here (`route.rs`).
    fn misrouted(&self, _keys: &[&[u8]], _write: bool) -> Option<String> {
        None
    }
}

/// memcached's `-B`: the protocols the port speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Binding {
    /// The first byte decides (`0x80`: binary), memcached's default.
    #[default]
    Auto,
    /// Text only: a binary request is read as a text line, as memcached
    /// reads it (so `ERROR`, or nothing until a newline comes).
    Ascii,
    /// Binary only: a text request is read as a binary header (bad
    /// magic: the connection is closed, as memcached closes it).
    Binary,
}

/// What the memcached front end reaches on one worker, the same for all
/// its connections: built once per worker thread by the server.
pub struct Worker<'w> {
    pub store: &'w Store,
    /// The worker's counters (memcached's stat names).
    pub counters: &'w Counters,
    pub host: &'w dyn Host,
    /// `-Y`'s users, if given.
    pub authfile: Option<&'w authfile::AuthFile>,
    /// A read-only replica refuses writes (read per request: REPLICAOF
    /// may change it on another connection).
    pub read_only: &'w AtomicBool,
    /// False with `-C`: every CAS reads 0.
    pub cas_enabled: bool,
    /// `-F`: `flush_all` is refused.
    pub flush_all_disabled: bool,
    /// `-I`: the largest data block.
    pub limits: Limits,
    /// RESP's `notify-keyspace-events`: this port's writes are published
    /// too (`amalgam_commands::notify`).
    pub notify: &'w std::sync::atomic::AtomicU32,
    /// The `watch` connections (the operator state's, reached without a
    /// call: the request path reads its class word).
    pub watchers: &'w watch::Watchers,
    /// Redis Cluster mode (fixed at start): every request's keys are
    /// routed by their slot first (`route.rs`, [`Host::misrouted`]).
    pub routed: bool,
}

impl Worker<'_> {
    /// True while some `watch` connection wants `class` (watch.rs): one
    /// relaxed load.
    #[inline(always)]
    pub(crate) fn watched(&self, class: u32) -> bool {
        self.watchers.wants(class)
    }

    /// Logs a fetch of `key` (found: an item of `bytes`) to the watchers
    /// of fetchers, out of line.
    #[cold]
    #[inline(never)]
    pub(crate) fn watch_get(&self, cfd: i64, key: &[u8], found: Option<usize>) {
        let clsid = found.map_or(0, slabs::size_class);
        let host = self.host;
        self.watchers.log(
            watch::class::FETCHERS,
            |o| watch::item_get(o, key, found.is_some(), clsid, cfd, found.unwrap_or(0)),
            |w| host.wake_worker(w),
        );
    }

    /// Logs a storage command's outcome to the watchers of mutations, out
    /// of line: `status` memcached's word for it, `ttl` the seconds left
    /// (0: none), `bytes` the value's.
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn watch_store(&self, cfd: i64, key: &[u8], status: &str, cmd: &str, ttl: u32, bytes: usize) {
        let clsid = slabs::size_class(bytes);
        let host = self.host;
        self.watchers.log(
            watch::class::MUTATIONS,
            |o| watch::item_store(o, key, status, cmd, ttl, clsid, cfd, bytes),
            |w| host.wake_worker(w),
        );
    }

    /// True while `stats detail` is on: one relaxed load of this worker's
    /// own counters block (operator.rs).
    #[inline(always)]
    pub(crate) fn detail_on(&self) -> bool {
        self.counters.stats_detail.load(Ordering::Relaxed)
    }

    /// Counts `op` on `key` for `stats detail`, out of line.
    #[cold]
    #[inline(never)]
    pub(crate) fn record_detail(&self, op: operator::DetailOp, key: &[u8]) {
        self.host.operator().record(op, key);
    }

    /// Tells RESP's subscribers of a write on this port, as the RESP
    /// command it amounts to would (SET, APPEND, INCRBY, DEL, EXPIRE):
    /// `event` of `class` on the stored `key`. One relaxed load and a
    /// test while off; the rest out of line.
    #[inline(always)]
    pub(crate) fn notify(&self, class: u32, event: &'static str, key: &[u8]) {
        let on = amalgam_commands::notify::in_effect(self.notify.load(std::sync::atomic::Ordering::Relaxed));
        if on & class != 0 {
            self.publish(class, event, key);
        }
    }

    /// A store's events: `set` (or `append` for append and prepend), and
    /// `expire` when it gave the item a time to live.
    #[inline(always)]
    pub(crate) fn notify_store(&self, concat: bool, expires: bool, key: &[u8]) {
        if self.notify.load(std::sync::atomic::Ordering::Relaxed) != 0 {
            self.notify_store_on(concat, expires, key);
        }
    }

    #[cold]
    #[inline(never)]
    fn notify_store_on(&self, concat: bool, expires: bool, key: &[u8]) {
        use amalgam_commands::notify::{GENERIC, STRING};
        self.notify(STRING, if concat { "append" } else { "set" }, key);
        if expires && !concat {
            self.notify(GENERIC, "expire", key);
        }
    }

    #[cold]
    #[inline(never)]
    fn publish(&self, class: u32, event: &'static str, key: &[u8]) {
        self.host.notify(class, event, key);
    }
}

impl std::fmt::Debug for Worker<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("cas_enabled", &self.cas_enabled)
            .field("flush_all_disabled", &self.flush_all_disabled)
            .finish_non_exhaustive()
    }
}

/// What a round of a memcached-port connection can reach: its worker's
/// [`Worker`] and where the round stops for the client's output limit
/// (the server's `obuf.rs`), built by the event loop once per round.
#[derive(Debug, Clone, Copy)]
pub struct Ctx<'c> {
    pub w: &'c Worker<'c>,
    pub stop: RoundStop,
    /// The connection's file descriptor (`watch` lines' `cfd`).
    pub cfd: i64,
}

impl Ctx<'_> {
    /// True while a replica refuses writes.
    #[inline]
    pub fn read_only(&self) -> bool {
        self.w.read_only.load(Ordering::Relaxed)
    }

    /// The CAS a client sees for an item whose CAS is `cas`.
    #[inline]
    pub fn visible_cas(&self, cas: u64) -> u64 {
        if self.w.cas_enabled {
            cas
        } else {
            0
        }
    }
}
