//! # Replication (issue 22): roles, the handshake, the threads
//!
//! Redis's model, so Redis Sentinel and Redis's tools drive it unchanged:
//! a replica connects to its primary's RESP port and says `PING`,
//! `REPLCONF listening-port <port>`, `REPLCONF capa eof capa psync2` and
//! `PSYNC <replid> <offset>`; the primary answers `+CONTINUE` (the
//! replica's offset is still in the backlog) or `+FULLRESYNC <replid>
//! <offset>` and a full sync, then streams its changes; the replica acks
//! its offset with `REPLCONF ACK <offset>`. `ROLE`, `INFO replication`,
//! `WAIT`, `REPLICAOF`, `-READONLY` are Redis's.
//!
//! What differs is below the handshake (amalgam-persist `repl.rs`): the
//! full sync is the engine's fork-less snapshot streamed straight into the
//! socket (Redis forks and sends an RDB), and the stream is the log's own
//! records (Redis sends RESP commands). So an Amalgam replica follows an
//! Amalgam primary only; a Redis replica cannot follow Amalgam, nor the
//! other way round.
//!
//! ## Threads
//! * The primary hands a connection that said PSYNC (or SYNC) out of its
//!   worker's event loop (`worker.rs`, `Turn::Detach`) to a sender thread
//!   of its own: it writes the full sync (the snapshot's cursor runs on
//!   it, paced by [`FULL_SYNC_CPU_PERCENT`]) and then the backlog, with
//!   blocking writes, so a slow replica holds no worker. While the stream
//!   is busy the sender polls the backlog ([`SENDER_POLL_WINDOW`]) rather
//!   than waiting to be woken, so a write never pays a futex wake-up and
//!   each send carries what accumulated. A second thread per replica
//!   reads its acks (and notices it leaving). Replicas are few; two
//!   threads each is Redis's own cost in a fork.
//! * A replica runs one link thread: connect, handshake, load, then apply
//!   the stream record by record (each under its key's bucket lock, like
//!   any write: readers on every worker see each change whole), feed the
//!   same bytes to its own backlog (so, promoted, it can continue its
//!   peers' streams: PSYNC2), and ack once a second and whenever a
//!   GETACK record asks. A lost link is retried once a second with a
//!   partial resync.
//!
//! ## What replicates
//! Every change the engine journals: the memcached port's writes (set,
//! cas, incr, touch, flush_all …) and every RESP write, every data type.
//! Expiry: the primary's deadlines travel with the items (absolute unix
//! times), so a replica hides an expired key exactly when its primary
//! does; its own sweeps remove only what is already expired.
//!
//! ## Limits
//! `repl-backlog-size` (Redis's 1 MiB default), a replica at most
//! [`amalgam_persist::repl::REPLICA_LAG_BYTES_MAX_DEFAULT`] behind (then
//! dropped; it resyncs), `repl-timeout` for a silent primary, handshake
//! lines at most [`HANDSHAKE_LINE_BYTES_MAX`]. A primary with a password
//! (`requirepass`, ACL users) is followed with `masterauth` and
//! `masteruser`: the replica says `AUTH [user] password` after its PING,
//! as Redis's does. `replica-serve-stale-data no`: while a replica's
//! link is not streaming, commands without Redis's `stale` flag are
//! refused with `MASTERDOWN` (`Replication::refuses_stale`). Not
//! supported: replication over TLS, diskless-load options.

mod report;
pub use report::{info, role};

use crate::Shared;
use amalgam_persist::format::{self, Bad};
use amalgam_persist::repl::{self as stream, Applier, Attach, Backlog};
use std::io::{Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The share of one core a full sync's snapshot cursor may use (the
/// workers serve on meanwhile; 100 is unpaced).
pub const FULL_SYNC_CPU_PERCENT: u32 = 50;
/// Redis's `repl-timeout` default: a link silent this long is dropped.
pub const REPL_TIMEOUT_SECS_DEFAULT: u64 = 60;
/// How long connecting to a primary may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// A dropped link is retried this often.
const RETRY_EVERY: Duration = Duration::from_secs(1);
/// The longest handshake line either side accepts.
pub const HANDSHAKE_LINE_BYTES_MAX: usize = 4096;
/// A replica reads the stream in chunks of this much.
const READ_CHUNK_BYTES: usize = 256 << 10;
/// How long a sender waits for new stream bytes before it looks at its
/// replica's state again (killed, role changed, shutdown).
const SENDER_WAIT: Duration = Duration::from_millis(100);
/// A replica acknowledges its offset this often, and at once when its
/// primary asks (a GETACK record: WAIT); Redis's replicas ack once a
/// second too. (Acking after every read cost the primary an ack read and
/// a sender wake-up per batch: SET throughput with two replicas 0.47x.)
const ACK_EVERY: Duration = Duration::from_secs(1);
/// An idle primary asks its replicas for an ack this often, so a healthy
/// link never looks silent for `repl-timeout` (Redis's
/// `repl-ping-replica-period`, 10 s).
const REPL_PING_EVERY: Duration = Duration::from_secs(10);
/// A sender that sent something this recently polls the backlog (sleeping
/// SENDER_POLL_SLEEP between looks) instead of waiting on its condition
/// variable: while the stream is busy, writers then never wake it (no
/// futex wake on the request path), and each send(2) carries what
/// accumulated meanwhile, as Redis writes its replicas' output once per
/// event-loop pass. Adds at most SENDER_POLL_SLEEP to the lag.
const SENDER_POLL_WINDOW: Duration = Duration::from_millis(5);
const SENDER_POLL_SLEEP: Duration = Duration::from_micros(50);
/// Redis's `replica-priority` default.
pub const REPLICA_PRIORITY_DEFAULT: u64 = 100;

const ERR_WAIT_ON_REPLICA: &str = "ERR WAIT cannot be used with replica instances. Please also note that since Redis \
                                   4.0 if a replica is configured to be writable (which is not the default) writes \
                                   to replicas are just local and are not propagated.";
/// Redis's answer to a write when `min-replicas-to-write` is not met.
pub const ERR_NOREPLICAS: &str = "NOREPLICAS Not enough good replicas to write.";
/// Redis's answer to a write on a read-only replica.
/// How often a paused replica looks whether its pause ended.
const PAUSED_POLL: Duration = Duration::from_millis(10);
pub const ERR_READONLY: &str = "READONLY You can't write against a read only replica.";
/// Redis's answer to a command a replica whose link is down refuses
/// under `replica-serve-stale-data no`.
pub const ERR_MASTERDOWN: &str = "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.";

/// What a replica's PSYNC (or SYNC) asked for: the handshake's end, handed
/// with the connection to a sender thread.
#[derive(Debug, Clone)]
pub struct Psync {
    /// `?` for a first sync.
    pub replid: String,
    /// The next offset it wants (-1 with `?`).
    pub offset: i64,
    /// REPLCONF listening-port (0: not said).
    pub listening_port: u16,
    /// REPLCONF ip-address, if said.
    pub ip_address: Option<String>,
}

/// A replica connected to this primary.
#[derive(Debug)]
pub struct Peer {
    /// The replica's address and listening port (INFO's slaveN, ROLE).
    pub ip: String,
    pub port: u16,
    /// The offset it acknowledged.
    pub ack: AtomicU64,
    /// When it last acked (unix seconds; INFO's `lag`).
    pub last_ack: AtomicU64,
    /// Streaming (after its full sync).
    pub online: AtomicBool,
    /// CLIENT KILL TYPE replica, a role change, or the ack thread saw it
    /// leave.
    pub kill: AtomicBool,
    sock: TcpStream,
}

impl Peer {
    /// Drops the replica: its sender and ack threads see `kill` or a
    /// failed socket call and end (the caller wakes the backlog's
    /// readers, so a sender waiting for bytes looks now).
    fn kill(&self) {
        self.kill.store(true, Ordering::Relaxed);
        let _ = self.sock.shutdown(Shutdown::Both);
    }
}

/// The link to this replica's primary.
#[derive(Debug)]
pub struct Link {
    pub host: String,
    pub port: u16,
    /// REPLICAOF changed or shutdown: the link thread ends.
    stop: AtomicBool,
    /// Streaming (master_link_status:up).
    up: AtomicBool,
    /// ROLE's state: connect, connecting, sync, connected.
    state: Mutex<&'static str>,
    /// Unix seconds of the last byte from the primary.
    last_io: AtomicU64,
    /// Unix seconds since the link is down (0: up or never up).
    down_since: AtomicU64,
    /// The socket, for CLIENT KILL TYPE master and REPLICAOF.
    sock: Mutex<Option<TcpStream>>,
    /// Held while a batch of the stream is applied: a clean shutdown
    /// takes it to read an offset that matches the store.
    applying: Mutex<()>,
}

impl Link {
    fn set_state(&self, s: &'static str) {
        *lock(&self.state) = s;
    }

    fn close(&self) {
        if let Some(s) = lock(&self.sock).as_ref() {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    /// Stops the link for good: its thread applies nothing after this
    /// returns (it checks `stop` under `applying`, which this waits for:
    /// at most the batch in progress), so a new link's full sync or a
    /// promotion never races the old stream.
    fn retire(&self) {
        self.stop.store(true, Ordering::Relaxed);
        self.close();
        drop(lock(&self.applying));
    }
}

#[derive(Debug)]
enum Role {
    Primary,
    Replica(Arc<Link>),
}

/// A client blocked in WAIT.
#[derive(Debug)]
struct Waiter {
    ticket: Arc<crate::resp::blocking::Ticket>,
    offset: u64,
    replicas: u64,
}

/// Replication's state (in `Shared`).
#[derive(Debug)]
pub struct Replication {
    pub backlog: Arc<Backlog>,
    /// A stream journal is attached to the store (persistence attaches
    /// one at start; otherwise the first full sync or REPLICAOF does).
    journal: AtomicBool,
    /// Client writes are refused now (a replica with replica-read-only).
    read_only: AtomicBool,
    /// `read_only` or `min-replicas-to-write` on: writes are checked
    /// (one load on the batched SET path; `set_guards` keeps it).
    guards: AtomicBool,
    /// `replica-serve-stale-data` (Redis's default yes).
    pub serve_stale: AtomicBool,
    /// A replica whose link is not streaming, with `serve_stale` off:
    /// commands without the `stale` flag are refused (a guard too).
    stale: AtomicBool,
    /// `replica-read-only`.
    pub replica_read_only: AtomicBool,
    role: Mutex<Role>,
    peers: Mutex<Vec<Arc<Peer>>>,
    waiters: Mutex<Vec<Waiter>>,
    /// INFO stats' sync_full, sync_partial_ok, sync_partial_err.
    pub sync_full: AtomicU64,
    pub sync_partial_ok: AtomicU64,
    pub sync_partial_err: AtomicU64,
    /// `replica-priority` (Sentinel reads it in INFO).
    pub replica_priority: AtomicU64,
    /// `repl-timeout` in seconds.
    pub timeout_secs: AtomicU64,
    /// `min-replicas-to-write` and `min-replicas-max-lag`.
    pub min_replicas_to_write: AtomicU64,
    pub min_replicas_max_lag: AtomicU64,
    /// The store holds the stream up to the backlog's offset (false
    /// while a full sync loads, and before a replica's first sync): only
    /// then does a clean shutdown save the replication state.
    consistent: AtomicBool,
    /// A replica's CAS shift (`Applier`), kept for the state file.
    cas_shift: AtomicU64,
    /// A restarted replica continues with its saved state (the link's
    /// first PSYNC names it).
    resume: AtomicBool,
    /// `masterauth` and `masteruser`: what a replica says in `AUTH
    /// [user] password` after its PING (empty: nothing), read at each
    /// connection (CONFIG SET applies from the next one). Never logged.
    pub masterauth: Mutex<String>,
    pub masteruser: Mutex<String>,
}

/// The file a clean shutdown leaves in `--dir`: the replication id,
/// offset and CAS shift of the data the log holds, so a restarted
/// primary keeps its id and offset and a restarted replica continues by
/// partial resync. Read and removed at start (a crash after that start
/// leaves none: a restart after a crash resyncs in full, as the log's
/// tail may not match any offset).
pub const STATE_FILE: &str = "replication.state";

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

impl Replication {
    /// A primary's state with a backlog of `backlog_bytes`; `journaled`:
    /// persistence attached the stream journal already.
    pub fn new(backlog: Arc<Backlog>, journaled: bool) -> Replication {
        Replication {
            backlog,
            journal: AtomicBool::new(journaled),
            read_only: AtomicBool::new(false),
            guards: AtomicBool::new(false),
            replica_read_only: AtomicBool::new(true),
            serve_stale: AtomicBool::new(true),
            stale: AtomicBool::new(false),
            role: Mutex::new(Role::Primary),
            peers: Mutex::new(Vec::new()),
            waiters: Mutex::new(Vec::new()),
            sync_full: AtomicU64::new(0),
            sync_partial_ok: AtomicU64::new(0),
            sync_partial_err: AtomicU64::new(0),
            replica_priority: AtomicU64::new(REPLICA_PRIORITY_DEFAULT),
            timeout_secs: AtomicU64::new(REPL_TIMEOUT_SECS_DEFAULT),
            min_replicas_to_write: AtomicU64::new(0),
            min_replicas_max_lag: AtomicU64::new(10),
            consistent: AtomicBool::new(true),
            cas_shift: AtomicU64::new(0),
            resume: AtomicBool::new(false),
            masterauth: Mutex::new(String::new()),
            masteruser: Mutex::new(String::new()),
        }
    }

    /// With persistence, a replica logs where the data its log holds
    /// stands in the primary's stream (a REPL_POS record after the
    /// batch's own records) and writes the batch out (a replica's workers
    /// never commit: nothing else would until the next second, or ever
    /// under `appendfsync no`).
    fn log_position(&self, shared: &Shared) {
        if let Some(p) = &shared.persist {
            let (replid, _, offset, _) = self.backlog.ids();
            p.note_repl_pos(&replid, offset, self.cas_shift.load(Ordering::Relaxed));
            // A large record is the committer thread's to write (nothing
            // here waits for it).
            if p.commit() == amalgam_persist::Commit::Deferred {
                p.request_commit(amalgam_persist::Persistence::last_appended_here());
            }
        }
    }

    /// At start, after recovery from `dir`: takes the state a clean
    /// shutdown saved ([`STATE_FILE`]) and removes the file; without one
    /// (a crash), a replica continues from the last REPL_POS record
    /// recovery replayed (`recovered`), which the recovered data holds at
    /// least. `replica`: the node starts as a replica.
    pub fn load_state(&self, dir: &std::path::Path, replica: bool, recovered: Option<(String, u64, u64)>) {
        let path = dir.join(STATE_FILE);
        let Ok(text) = std::fs::read_to_string(&path) else {
            if let Some((replid, offset, shift)) =
                recovered.filter(|(id, _, _)| replica && id.len() == stream::REPLID_BYTES)
            {
                self.backlog.restore(&replid, offset, true);
                self.cas_shift.store(shift, Ordering::Relaxed);
                self.resume.store(true, Ordering::Relaxed);
                log::info!("replication: continuing {replid} at offset {offset} (from the log)");
            }
            return;
        };
        let _ = std::fs::remove_file(&path);
        let field = |name: &str| text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')).map(str::trim);
        let (Some(replid), Some(offset), Some(shift)) = (
            field("replid").filter(|id| id.len() == stream::REPLID_BYTES),
            field("offset").and_then(|o| o.parse::<u64>().ok()),
            field("cas_shift").and_then(|o| o.parse::<u64>().ok()),
        ) else {
            log::warn!("{}: not a replication state; ignored", path.display());
            return;
        };
        self.backlog.restore(replid, offset, replica);
        self.cas_shift.store(shift, Ordering::Relaxed);
        self.resume.store(true, Ordering::Relaxed);
        log::info!("replication: continuing {replid} at offset {offset}");
    }

    /// At a clean shutdown, before the log's last sync: stops the link
    /// (no record is applied after this) and saves the replication state
    /// of the data the log holds ([`STATE_FILE`]).
    pub fn save_state(&self, dir: &std::path::Path) -> std::io::Result<()> {
        let link = match &*lock(&self.role) {
            Role::Replica(l) => Some(Arc::clone(l)),
            Role::Primary => None,
        };
        if let Some(l) = &link {
            l.retire();
        }
        if !self.backlog.active() || !self.consistent.load(Ordering::Relaxed) {
            return Ok(());
        }
        let (replid, _, offset, _) = self.backlog.ids();
        let text = format!("replid {replid}\noffset {offset}\ncas_shift {}\n", self.cas_shift.load(Ordering::Relaxed));
        let tmp = dir.join(format!("{STATE_FILE}.tmp"));
        {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
        }
        std::fs::rename(&tmp, dir.join(STATE_FILE))?;
        std::fs::File::open(dir)?.sync_all()
    }

    /// The flag [`Replication::read_only`] reads, for the memcached front
    /// end, which reads it per request (`amalgam_memcache::Ctx`).
    pub fn read_only_flag(&self) -> &std::sync::atomic::AtomicBool {
        &self.read_only
    }

    /// True if client writes are refused (one relaxed load on the write
    /// paths).
    #[inline]
    pub fn read_only(&self) -> bool {
        self.read_only.load(Ordering::Relaxed)
    }

    /// True if a write may be refused (read-only, or
    /// `min-replicas-to-write` set): the batched SET path then goes
    /// through dispatch, which checks.
    #[inline]
    pub fn guards_writes(&self) -> bool {
        self.guards.load(Ordering::Relaxed)
    }

    /// Sets whether client writes are refused (a replica's
    /// replica-read-only), and the write guard with it.
    fn set_read_only(&self, on: bool) {
        self.read_only.store(on, Ordering::Relaxed);
        self.set_guards();
    }

    fn set_guards(&self) {
        let on = self.read_only.load(Ordering::Relaxed)
            || self.min_replicas_to_write.load(Ordering::Relaxed) > 0
            || self.stale.load(Ordering::Relaxed);
        self.guards.store(on, Ordering::Relaxed);
    }

    /// Whether commands without the `stale` flag are refused now
    /// (`replica-serve-stale-data no` on a replica whose link is down);
    /// read behind [`Replication::guards_writes`].
    pub fn refuses_stale(&self) -> bool {
        self.stale.load(Ordering::Relaxed)
    }

    /// Works out `refuses_stale` again: after the role, the link's state
    /// or `replica-serve-stale-data` changed.
    pub fn refresh_stale(&self) {
        let stale = !self.serve_stale.load(Ordering::Relaxed) && self.is_replica() && !self.link_up();
        self.stale.store(stale, Ordering::Relaxed);
        self.set_guards();
    }

    /// `min-replicas-to-write` (CONFIG SET).
    pub fn set_min_replicas_to_write(&self, n: u64) {
        self.min_replicas_to_write.store(n, Ordering::Relaxed);
        self.set_guards();
    }

    /// The flag [`Replication::journaled`] reads, for the data commands,
    /// which read it per collection write (`amalgam_commands::Keyspace`).
    pub fn journal_flag(&self) -> &std::sync::atomic::AtomicBool {
        &self.journal
    }

    /// True while a stream journal is attached: in-place collection
    /// writes must then produce their op records (amalgam-commands `typed.rs`).
    #[inline]
    pub fn journaled(&self) -> bool {
        self.journal.load(Ordering::Relaxed)
    }

    /// Attaches the stream journal if nothing did (no persistence).
    fn attach_journal(&self, shared: &Shared) {
        if self.journal.swap(true, Ordering::AcqRel) {
            return;
        }
        let j = stream::StreamJournal::new(None, Arc::clone(&self.backlog));
        if shared.store.set_journal(Arc::new(j)).is_err() {
            // Persistence's journal: it feeds the backlog already.
            log::debug!("replication: the store's journal was attached already");
        }
    }

    /// The primary this node follows, if it is a replica.
    pub fn primary(&self) -> Option<(String, u16)> {
        match &*lock(&self.role) {
            Role::Replica(l) => Some((l.host.clone(), l.port)),
            Role::Primary => None,
        }
    }

    /// True if this node is a replica.
    pub fn is_replica(&self) -> bool {
        matches!(*lock(&self.role), Role::Replica(_))
    }

    /// `replica-read-only` changed (CONFIG SET).
    pub fn set_replica_read_only(&self, on: bool) {
        self.replica_read_only.store(on, Ordering::Relaxed);
        self.set_read_only(on && self.is_replica());
    }

    /// Each replica's address, listening port, acked offset and whether
    /// it streams (FAILOVER's choice, failover.rs).
    pub fn replicas(&self) -> Vec<(String, u16, u64, bool)> {
        lock(&self.peers)
            .iter()
            .map(|p| (p.ip.clone(), p.port, p.ack.load(Ordering::Acquire), p.online.load(Ordering::Relaxed)))
            .collect()
    }

    /// Replicas that acknowledged `offset` or beyond.
    pub fn acked(&self, offset: u64) -> u64 {
        lock(&self.peers)
            .iter()
            .filter(|p| p.online.load(Ordering::Relaxed) && p.ack.load(Ordering::Acquire) >= offset)
            .count() as u64
    }

    /// Registers a WAIT client (`resp/blocking.rs`).
    pub fn add_waiter(&self, ticket: Arc<crate::resp::blocking::Ticket>, offset: u64, replicas: u64) {
        lock(&self.waiters).push(Waiter { ticket, offset, replicas });
    }

    /// A WAIT episode ended.
    pub fn forget_waiter(&self, seq: u64) {
        lock(&self.waiters).retain(|w| w.ticket.seq() != seq);
    }

    /// A replica acked: wakes the WAIT clients it may satisfy.
    fn wake_waiters(&self, shared: &Shared) {
        let waiters = lock(&self.waiters);
        if waiters.is_empty() {
            return;
        }
        for w in waiters.iter() {
            if self.acked(w.offset) >= w.replicas {
                crate::resp::blocking::wake_ticket(shared, &w.ticket);
            }
        }
    }

    /// Disconnects every replica (CLIENT KILL TYPE replica, a role
    /// change); returns how many.
    pub fn kill_peers(&self) -> usize {
        let peers = lock(&self.peers);
        for p in peers.iter() {
            p.kill();
        }
        self.backlog.wake_readers();
        peers.len()
    }

    /// Drops the link to the primary (CLIENT KILL TYPE master); it
    /// reconnects with a partial resync. True if there was one.
    pub fn kill_link(&self) -> bool {
        match &*lock(&self.role) {
            Role::Replica(l) => {
                l.close();
                true
            }
            Role::Primary => false,
        }
    }

    /// Good replicas for `min-replicas-to-write`: online, acked within
    /// `min-replicas-max-lag` seconds.
    pub fn good_replicas(&self) -> u64 {
        let max_lag = self.min_replicas_max_lag.load(Ordering::Relaxed);
        let now = unix_now();
        lock(&self.peers)
            .iter()
            .filter(|p| {
                p.online.load(Ordering::Relaxed) && now.saturating_sub(p.last_ack.load(Ordering::Relaxed)) <= max_lag
            })
            .count() as u64
    }

    /// True if a write must be refused for `min-replicas-to-write`.
    pub fn too_few_replicas(&self) -> bool {
        let min = self.min_replicas_to_write.load(Ordering::Relaxed);
        min > 0 && !self.is_replica() && self.good_replicas() < min
    }
}

/// REPLICAOF / SLAVEOF: `host port` or `NO ONE`. The reply.
pub fn replicaof(shared: &Shared, host: &[u8], port: &[u8]) -> Result<&'static str, String> {
    let r = &shared.repl;
    if host.eq_ignore_ascii_case(b"no") && port.eq_ignore_ascii_case(b"one") {
        let mut role = lock(&r.role);
        if let Role::Replica(link) = &*role {
            link.retire();
            r.attach_journal(shared);
            r.backlog.promote();
            *role = Role::Primary;
            r.set_read_only(false);
            drop(role);
            r.refresh_stale();
            // Its replicas learn the new id by reconnecting (PSYNC2: they
            // continue under the old one).
            r.kill_peers();
            log::warn!("MASTER MODE enabled (user request)");
        }
        return Ok("OK");
    }
    let host = std::str::from_utf8(host).map_err(|_| "ERR Invalid master host".to_string())?.to_string();
    let port = std::str::from_utf8(port)
        .ok()
        .and_then(|p| p.parse::<i64>().ok())
        .filter(|p| (0..=65535).contains(p))
        .ok_or_else(|| "ERR Invalid master port".to_string())? as u16;
    let mut role = lock(&r.role);
    if let Role::Replica(link) = &*role {
        if link.host.eq_ignore_ascii_case(&host) && link.port == port {
            return Ok("OK Already connected to specified master");
        }
        link.retire();
    }
    let link = Arc::new(Link {
        host: host.clone(),
        port,
        stop: AtomicBool::new(false),
        up: AtomicBool::new(false),
        state: Mutex::new("connect"),
        last_io: AtomicU64::new(0),
        down_since: AtomicU64::new(unix_now()),
        sock: Mutex::new(None),
        applying: Mutex::new(()),
    });
    r.attach_journal(shared);
    r.backlog.pause_feeding();
    *role = Role::Replica(Arc::clone(&link));
    r.set_read_only(r.replica_read_only.load(Ordering::Relaxed));
    drop(role);
    r.refresh_stale();
    r.kill_peers();
    let Some(me) = shared.arc() else { return Err("ERR the server is shutting down".into()) };
    log::warn!("Connecting to MASTER {host}:{port}");
    std::thread::Builder::new()
        .name("amalgam-repl-link".into())
        .spawn(move || link_loop(&me, &link))
        .map_err(|e| format!("ERR cannot start the replication thread: {e}"))?;
    Ok("OK")
}

/// The link thread of a replica: sessions until REPLICAOF changes.
fn link_loop(shared: &Arc<Shared>, link: &Arc<Link>) {
    // Kept across sessions: a reconnect continues with it (partial
    // resync); None until the first full sync of this link.
    let r = &shared.repl;
    let mut applier: Option<Applier> = r.resume.swap(false, Ordering::Relaxed).then(|| {
        Applier::continuing(Arc::clone(&shared.store), shared.thresholds.load(), r.cas_shift.load(Ordering::Relaxed))
    });
    while !link.stop.load(Ordering::Relaxed) && !shared.shutdown.load(Ordering::Relaxed) {
        match session(shared, link, &mut applier) {
            Ok(()) => {}
            Err(e) => {
                if !link.stop.load(Ordering::Relaxed) {
                    log::warn!("replication: link to {}:{} lost: {e}", link.host, link.port);
                }
                // A failover's target that cannot be reached: this node
                // is a primary again (failover.rs).
                if shared.failover.in_progress() {
                    crate::failover::rejected(shared, &format!("Failover target unreachable: {e}"));
                }
            }
        }
        if link.up.swap(false, Ordering::Relaxed) {
            link.down_since.store(unix_now(), Ordering::Relaxed);
            shared.repl.refresh_stale();
        }
        link.set_state("connect");
        *lock(&link.sock) = None;
        let until = Instant::now() + RETRY_EVERY;
        while Instant::now() < until && !link.stop.load(Ordering::Relaxed) && !shared.shutdown.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Takes a CLIENT LIST entry out when dropped.
struct Unlist<'a>(&'a amalgam_net::clients::Registry, u64);

impl Drop for Unlist<'_> {
    fn drop(&mut self) {
        self.0.remove(self.1);
    }
}

/// Bytes read from the primary, parsed from the front.
struct Input {
    sock: TcpStream,
    buf: Vec<u8>,
    pos: usize,
    /// `repl-timeout` when the link started.
    timeout_secs: u64,
}

impl Input {
    /// Reads more; Err on EOF.
    fn fill(&mut self, link: &Link) -> std::io::Result<usize> {
        if self.pos > 0 && self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
        } else if self.pos > READ_CHUNK_BYTES {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        let len = self.buf.len();
        self.buf.resize(len + READ_CHUNK_BYTES, 0);
        let n = loop {
            match self.sock.read(&mut self.buf[len..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.buf.truncate(len);
                    return Err(e);
                }
            }
        };
        self.buf.truncate(len + n);
        if n == 0 {
            return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "the primary closed the connection"));
        }
        link.last_io.store(unix_now(), Ordering::Relaxed);
        Ok(n)
    }

    /// [`Input::fill`], waiting through read timeouts (every ACK_EVERY:
    /// `tick` runs then) until the primary has been silent for
    /// `repl-timeout`, or the link stops.
    fn fill_waiting(&mut self, link: &Link, mut tick: impl FnMut() -> std::io::Result<()>) -> std::io::Result<usize> {
        let timeout_secs = self.timeout_secs;
        // Bounded by repl-timeout: each pass waits ACK_EVERY at most.
        loop {
            match self.fill(link) {
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                    if link.stop.load(Ordering::Relaxed) {
                        return Err(std::io::Error::other("the link was stopped"));
                    }
                    let last = link.last_io.load(Ordering::Relaxed);
                    if unix_now().saturating_sub(last) > timeout_secs.max(1) {
                        return Err(std::io::Error::new(
                            std::io::ErrorKind::TimedOut,
                            "the primary was silent past repl-timeout",
                        ));
                    }
                    tick()?;
                }
                r => return r,
            }
        }
    }

    /// One `\r\n`-terminated line (without it).
    fn line(&mut self, link: &Link) -> std::io::Result<String> {
        loop {
            if let Some(i) = self.buf[self.pos..].windows(2).position(|w| w == b"\r\n") {
                let line = String::from_utf8_lossy(&self.buf[self.pos..self.pos + i]).into_owned();
                self.pos += i + 2;
                return Ok(line);
            }
            if self.buf.len() - self.pos > HANDSHAKE_LINE_BYTES_MAX {
                return Err(std::io::Error::other("a handshake line past its limit"));
            }
            self.fill_waiting(link, || Ok(()))?;
        }
    }
}

/// The errors a primary may answer PING with before the replica
/// authenticates (Redis's `syncWithMaster` lets exactly these through).
fn ping_error_allowed(reply: &str) -> bool {
    reply.starts_with("-NOAUTH") || reply.starts_with("-NOPERM") || reply.starts_with("-ERR operation not permitted")
}

/// Sends one command as a RESP array.
fn send_command(sock: &mut TcpStream, args: &[&str]) -> std::io::Result<()> {
    let mut out = Vec::new();
    amalgam_protocol::resp::push_array(&mut out, args.len());
    for a in args {
        amalgam_protocol::resp::push_bulk(&mut out, a.as_bytes());
    }
    sock.write_all(&out)
}

/// One connection to the primary: handshake, sync, stream.
fn session(shared: &Arc<Shared>, link: &Arc<Link>, applier: &mut Option<Applier>) -> std::io::Result<()> {
    let r = &shared.repl;
    link.set_state("connecting");
    let addr: SocketAddr = (link.host.as_str(), link.port)
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| std::io::Error::other("the primary's address does not resolve"))?;
    let sock = TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT)?;
    sock.set_nodelay(true)?;
    // Reads wake at least every ACK_EVERY (the periodic ack); silence
    // longer than repl-timeout drops the link (`Input::fill_waiting`).
    sock.set_read_timeout(Some(ACK_EVERY))?;
    *lock(&link.sock) = Some(sock.try_clone()?);
    if link.stop.load(Ordering::Relaxed) {
        return Ok(());
    }
    // Listed in CLIENT LIST while the session lasts (`flags=M`, Redis's
    // `user=(superuser)`); CLIENT KILL drops the link as TYPE master does.
    let _listed = {
        let id = shared.next_client_id.fetch_add(1, Ordering::Relaxed);
        let client = amalgam_net::clients::Registry::unowned(id, &sock);
        client.attrs().user = Some(b"(superuser)".to_vec());
        let l = Arc::clone(link);
        shared.clients.add_replication(client, amalgam_net::clients::flag::MASTER, move || l.close());
        Unlist(&shared.clients, id)
    };
    let mut w = sock.try_clone()?;
    let timeout_secs = r.timeout_secs.load(Ordering::Relaxed);
    let mut input = Input { sock, buf: Vec::new(), pos: 0, timeout_secs };
    send_command(&mut w, &["PING"])?;
    let pong = input.line(link)?;
    // A primary that wants a password answers PING with NOAUTH (or NOPERM
    // for an ACL user without +ping): Redis's replica goes on to AUTH.
    if pong.starts_with('-') && !ping_error_allowed(&pong) {
        return Err(std::io::Error::other(format!("the primary answered PING with {pong}")));
    }
    let auth = lock(&r.masterauth).clone();
    if !auth.is_empty() {
        let user = lock(&r.masteruser).clone();
        if user.is_empty() {
            send_command(&mut w, &["AUTH", &auth])?;
        } else {
            send_command(&mut w, &["AUTH", &user, &auth])?;
        }
        let reply = input.line(link)?;
        if reply.starts_with('-') {
            // Redis's log line; the reply names no password.
            return Err(std::io::Error::other(format!("Unable to AUTH to MASTER: {reply}")));
        }
    }
    let port = shared.args.resp_port.to_string();
    send_command(&mut w, &["REPLCONF", "listening-port", &port])?;
    let _ = input.line(link)?;
    send_command(&mut w, &["REPLCONF", "capa", "eof", "capa", "psync2"])?;
    let _ = input.line(link)?;
    let (replid, _, offset, _) = r.backlog.ids();
    // A node that holds a stream (synced before, or a former primary)
    // asks to continue it: PSYNC2 lets a promoted replica continue its
    // old primary's id, so a failover needs no full sync.
    let (id, next) = if applier.is_some() || r.backlog.active() {
        (replid, (offset + 1).to_string())
    } else {
        ("?".into(), "-1".into())
    };
    // A primary handing over (failover.rs) asks its target to take over.
    let failing_over = shared.failover.in_progress();
    if failing_over {
        send_command(&mut w, &["PSYNC", &id, &next, "FAILOVER"])?;
    } else {
        send_command(&mut w, &["PSYNC", &id, &next])?;
    }
    let reply = loop {
        // A primary busy preparing the sync may send bare newlines.
        let l = input.line(link)?;
        if !l.is_empty() {
            break l;
        }
    };
    if failing_over {
        if reply.starts_with("+CONTINUE") || reply.starts_with("+FULLRESYNC") {
            crate::failover::succeeded(shared);
        } else {
            crate::failover::rejected(shared, "Failover target rejected psync request");
            return Err(std::io::Error::other(format!("the failover's target answered PSYNC with {reply}")));
        }
    }
    let mut words = reply.split_whitespace();
    match words.next() {
        Some("+FULLRESYNC") => {
            let replid = words.next().unwrap_or("").to_string();
            let offset: u64 = words.next().and_then(|o| o.parse().ok()).unwrap_or(0);
            link.set_state("sync");
            r.consistent.store(false, Ordering::Relaxed);
            *applier = None;
            let mut a = Applier::begin_full_sync(Arc::clone(&shared.store), shared.thresholds.load());
            let t = Instant::now();
            load(&mut input, link, shared, &mut a)?;
            r.backlog.follow(&replid, offset);
            r.cas_shift.store(a.cas_shift(), Ordering::Relaxed);
            r.consistent.store(true, Ordering::Relaxed);
            r.log_position(shared);
            log::warn!(
                "MASTER <-> REPLICA sync: finished with success ({} records in {:.3} s)",
                a.applied,
                t.elapsed().as_secs_f64()
            );
            *applier = Some(a);
        }
        Some("+CONTINUE") => {
            if let Some(new_id) = words.next() {
                r.backlog.adopt_id(new_id);
            }
            if applier.is_none() {
                // A former primary: its own CAS uniques.
                r.cas_shift.store(0, Ordering::Relaxed);
                *applier = Some(Applier::continuing(Arc::clone(&shared.store), shared.thresholds.load(), 0));
            }
            log::warn!("MASTER <-> REPLICA sync: Master accepted a Partial Resynchronization.");
        }
        _ => return Err(std::io::Error::other(format!("the primary answered PSYNC with {reply}"))),
    }
    let Some(a) = applier.as_mut() else { return Err(std::io::Error::other("no sync")) };
    link.set_state("connected");
    link.up.store(true, Ordering::Relaxed);
    link.down_since.store(0, Ordering::Relaxed);
    r.refresh_stale();
    ack(&mut w, r.backlog.offset())?;
    stream_in(&mut input, &mut w, link, shared, a)
}

/// Reads the full sync's snapshot (header, items, END) into the store.
fn load(input: &mut Input, link: &Link, shared: &Shared, a: &mut Applier) -> std::io::Result<()> {
    while input.buf.len() - input.pos < stream::SYNC_HEADER_BYTES {
        input.fill_waiting(link, || Ok(()))?;
    }
    stream::read_sync_header(&input.buf[input.pos..input.pos + stream::SYNC_HEADER_BYTES])
        .map_err(|e| std::io::Error::other(format!("not a full sync from an Amalgam primary: {e}")))?;
    input.pos += stream::SYNC_HEADER_BYTES;
    loop {
        // Under `applying`, and nothing once stopped (Link::retire).
        let held = lock(&link.applying);
        if link.stop.load(Ordering::Relaxed) {
            return Err(std::io::Error::other("the link was stopped during the full sync"));
        }
        loop {
            match format::read_record(&input.buf[input.pos..]) {
                Ok((rec, n)) => {
                    input.pos += n;
                    if let format::Record::Functions { payload } = rec {
                        crate::scripting::install_replicated(shared, payload);
                        continue;
                    }
                    if a.apply(rec) {
                        return Ok(());
                    }
                }
                Err(Bad::Torn) => break,
                Err(Bad::Corrupt(why)) => return Err(std::io::Error::other(format!("a corrupt sync record: {why}"))),
            }
        }
        drop(held);
        input.fill_waiting(link, || Ok(()))?;
    }
}

/// Applies the stream until the link drops or stops.
fn stream_in(
    input: &mut Input,
    w: &mut TcpStream,
    link: &Link,
    shared: &Shared,
    a: &mut Applier,
) -> std::io::Result<()> {
    let r = &shared.repl;
    let mut last_ack = Instant::now();
    loop {
        // A CLIENT PAUSE on this replica holds its primary's stream too
        // (Redis: a paused replica's offset does not grow): nothing more
        // is read or applied until it ends; the acks go on.
        while shared.pause.holds_writes() && !link.stop.load(Ordering::Relaxed) {
            if last_ack.elapsed() >= ACK_EVERY {
                ack(w, r.backlog.offset())?;
                last_ack = Instant::now();
            }
            std::thread::sleep(PAUSED_POLL);
        }
        let mut applied = false;
        let mut asked = false;
        let held = lock(&link.applying);
        if link.stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        loop {
            match format::read_record(&input.buf[input.pos..]) {
                Ok((rec, n)) => {
                    let bytes = &input.buf[input.pos..input.pos + n];
                    asked |= matches!(rec, format::Record::GetAck);
                    if let format::Record::Functions { payload } = rec {
                        crate::scripting::install_replicated(shared, payload);
                    } else {
                        a.apply(rec);
                    }
                    r.backlog.feed(bytes);
                    input.pos += n;
                    applied = true;
                }
                Err(Bad::Torn) => break,
                Err(Bad::Corrupt(why)) => return Err(std::io::Error::other(format!("a corrupt stream record: {why}"))),
            }
        }
        if applied {
            r.log_position(shared);
        }
        drop(held);
        if asked || last_ack.elapsed() >= ACK_EVERY {
            ack(w, r.backlog.offset())?;
            last_ack = Instant::now();
        }
        if link.stop.load(Ordering::Relaxed) || shared.shutdown.load(Ordering::Relaxed) {
            return Ok(());
        }
        input.fill_waiting(link, || {
            // The periodic ack, while the primary is quiet.
            ack(w, r.backlog.offset())?;
            last_ack = Instant::now();
            Ok(())
        })?;
    }
}

fn ack(w: &mut TcpStream, offset: u64) -> std::io::Result<()> {
    send_command(w, &["REPLCONF", "ACK", &offset.to_string()])
}

/// The primary side: `sock` said PSYNC (`req`); serves it on threads of
/// its own until it leaves. `pending`: bytes it sent after PSYNC.
/// `client`: the connection's CLIENT LIST entry, listed as a replica's
/// while it is served.
pub fn serve_replica(
    shared: Arc<Shared>,
    sock: TcpStream,
    req: Psync,
    pending: Vec<u8>,
    client: Option<Arc<amalgam_net::clients::Client>>,
) {
    let started = std::thread::Builder::new().name("amalgam-repl-send".into()).spawn(move || {
        if let Err(e) = serve(&shared, sock, &req, pending, client) {
            log::warn!("replication: a replica's stream ended: {e}");
        }
    });
    if let Err(e) = started {
        log::warn!("replication: cannot start a sender thread: {e}");
    }
}

fn serve(
    shared: &Arc<Shared>,
    sock: TcpStream,
    req: &Psync,
    pending: Vec<u8>,
    client: Option<Arc<amalgam_net::clients::Client>>,
) -> std::io::Result<()> {
    let r = &shared.repl;
    sock.set_nonblocking(false)?;
    sock.set_nodelay(true)?;
    let peer_ip = match sock.peer_addr()?.ip() {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or_else(|| v6.to_string(), |v4| v4.to_string()),
        ip => ip.to_string(),
    };
    let peer = Arc::new(Peer {
        ip: req.ip_address.clone().unwrap_or(peer_ip),
        port: req.listening_port,
        ack: AtomicU64::new(0),
        last_ack: AtomicU64::new(unix_now()),
        online: AtomicBool::new(false),
        kill: AtomicBool::new(false),
        sock: sock.try_clone()?,
    });
    lock(&r.peers).push(Arc::clone(&peer));
    let listed = client.map(|c| {
        let (id, killed, backlog) = (c.id, Arc::clone(&peer), Arc::clone(&r.backlog));
        shared.clients.add_replication(c, amalgam_net::clients::flag::REPLICA, move || {
            killed.kill();
            backlog.wake_readers();
        });
        id
    });
    let result = (|| {
        let reader = {
            let (shared, peer, rd) = (Arc::clone(shared), Arc::clone(&peer), sock.try_clone()?);
            std::thread::Builder::new()
                .name("amalgam-repl-ack".into())
                .spawn(move || read_acks(&shared, &peer, rd, pending))?
        };
        let mut w = sock;
        let attach = match req.offset {
            o if o >= 0 && req.replid != "?" => r.backlog.attach(&req.replid, o as u64),
            _ => Attach::Full,
        };
        let reader_id = match attach {
            Attach::Continue { reader, replid } => {
                r.sync_partial_ok.fetch_add(1, Ordering::Relaxed);
                w.write_all(format!("+CONTINUE {replid}\r\n").as_bytes())?;
                log::warn!("Partial resynchronization request from {}:{} accepted", peer.ip, peer.port);
                reader
            }
            Attach::Full => {
                if req.replid != "?" {
                    r.sync_partial_err.fetch_add(1, Ordering::Relaxed);
                }
                r.sync_full.fetch_add(1, Ordering::Relaxed);
                r.attach_journal(shared);
                log::warn!(
                    "Replica {}:{} asks for synchronization; full sync from a fork-less snapshot",
                    peer.ip,
                    peer.port
                );
                let preamble = |id: &str, off: u64| format!("+FULLRESYNC {id} {off}\r\n").into_bytes();
                let sync = stream::full_sync(&shared.store, &r.backlog, &mut w, &preamble, FULL_SYNC_CPU_PERCENT)?;
                // The FUNCTION libraries follow in the stream (every
                // replica installs the set again: harmless).
                crate::scripting::feed_replicas(shared);
                log::warn!(
                    "Synchronization with replica {}:{} succeeded ({} items, {} bytes)",
                    peer.ip,
                    peer.port,
                    sync.stats.items,
                    sync.bytes
                );
                sync.reader
            }
        };
        peer.online.store(true, Ordering::Relaxed);
        // Asked at once, so the replica's first ack (and INFO's offset)
        // does not wait for its periodic one.
        r.backlog.request_acks();
        let mut buf = Vec::with_capacity(stream::SEND_CHUNK_BYTES);
        let mut last_sent = Instant::now();
        let out = loop {
            if peer.kill.load(Ordering::Relaxed) || shared.shutdown.load(Ordering::Relaxed) {
                break Ok(());
            }
            buf.clear();
            let polling = last_sent.elapsed() < SENDER_POLL_WINDOW;
            let wait = if polling { Duration::ZERO } else { SENDER_WAIT };
            match r.backlog.read_next(reader_id, &mut buf, stream::SEND_CHUNK_BYTES, wait) {
                Ok(stream::Read::Copied(0)) => {
                    if polling {
                        std::thread::sleep(SENDER_POLL_SLEEP);
                        continue;
                    }
                    if last_sent.elapsed() >= REPL_PING_EVERY {
                        // An idle primary's ping: the replica acks it.
                        r.backlog.request_acks();
                        last_sent = Instant::now();
                    }
                    continue;
                }
                Ok(stream::Read::Copied(_)) => {
                    last_sent = Instant::now();
                    if let Err(e) = w.write_all(&buf) {
                        break Err(e);
                    }
                }
                // A large record's bytes, written from the chunk the
                // backlog shares with the log (no copy).
                Ok(stream::Read::Shared(chunk, range)) => {
                    last_sent = Instant::now();
                    if let Err(e) = w.write_all(&chunk[range]) {
                        break Err(e);
                    }
                }
                Err(stream::Gone) => {
                    break Err(std::io::Error::other("the replica fell further behind than the backlog keeps"))
                }
            }
        };
        r.backlog.detach(reader_id);
        let _ = w.shutdown(Shutdown::Both);
        let _ = reader.join();
        out
    })();
    let _ = peer.sock.shutdown(Shutdown::Both);
    if let Some(id) = listed {
        shared.clients.remove(id);
    }
    lock(&r.peers).retain(|p| !Arc::ptr_eq(p, &peer));
    r.wake_waiters(shared);
    result
}

/// Reads a replica's `REPLCONF ACK <offset>` commands; anything else
/// drops the replica.
fn read_acks(shared: &Shared, peer: &Peer, mut sock: TcpStream, mut buf: Vec<u8>) {
    let mut chunk = [0u8; 4096];
    loop {
        let mut pos = 0;
        loop {
            match next_ack(&buf[pos..]) {
                Ok(Some((used, off))) => {
                    pos += used;
                    peer.ack.fetch_max(off, Ordering::AcqRel);
                    peer.last_ack.store(unix_now(), Ordering::Relaxed);
                }
                Ok(None) => break,
                Err(why) => {
                    log::warn!("replication: replica {}:{} sent {why}; dropped", peer.ip, peer.port);
                    peer.kill.store(true, Ordering::Relaxed);
                    let _ = sock.shutdown(Shutdown::Both);
                    shared.repl.backlog.wake_readers();
                    return;
                }
            }
        }
        buf.drain(..pos);
        shared.repl.wake_waiters(shared);
        match sock.read(&mut chunk) {
            Ok(0) | Err(_) => {
                peer.kill.store(true, Ordering::Relaxed);
                let _ = sock.shutdown(Shutdown::Both);
                shared.repl.backlog.wake_readers();
                return;
            }
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// The line at `*pos` (without its `\r\n`), if whole; advances `pos`.
fn take_line<'b>(buf: &'b [u8], pos: &mut usize) -> Option<&'b [u8]> {
    let rest = &buf[*pos..];
    let i = rest.windows(2).position(|w| w == b"\r\n")?;
    *pos += i + 2;
    Some(&rest[..i])
}

/// The `REPLCONF ACK <offset>` at the front of `buf` (a RESP array, as a
/// replica sends it): Some((bytes, offset)), None if incomplete, Err for
/// anything else. A primary's ack reader needs no more than this; the
/// general RESP parser stays with the workers (a second caller made the
/// optimizer stop inlining it into their batch loop: 47 instructions per
/// unpipelined GET, measured with callgrind).
fn next_ack(buf: &[u8]) -> Result<Option<(usize, u64)>, &'static str> {
    const NOT_AN_ACK: &str = "something other than REPLCONF ACK";
    let mut pos = 0;
    let Some(head) = take_line(buf, &mut pos) else {
        return if buf.len() > HANDSHAKE_LINE_BYTES_MAX { Err(NOT_AN_ACK) } else { Ok(None) };
    };
    if head != b"*3" {
        return Err(NOT_AN_ACK);
    }
    let mut words: [&[u8]; 3] = [&[]; 3];
    for w in &mut words {
        let Some(len) = take_line(buf, &mut pos) else { return Ok(None) };
        let n = len
            .strip_prefix(b"$")
            .and_then(|d| std::str::from_utf8(d).ok())
            .and_then(|d| d.parse::<usize>().ok())
            .filter(|&n| n <= 20)
            .ok_or(NOT_AN_ACK)?;
        if buf.len() < pos + n + 2 {
            return Ok(None);
        }
        if &buf[pos + n..pos + n + 2] != b"\r\n" {
            return Err(NOT_AN_ACK);
        }
        *w = &buf[pos..pos + n];
        pos += n + 2;
    }
    if !words[0].eq_ignore_ascii_case(b"replconf") || !words[1].eq_ignore_ascii_case(b"ack") {
        return Err(NOT_AN_ACK);
    }
    let off = std::str::from_utf8(words[2]).ok().and_then(|d| d.parse::<u64>().ok()).ok_or(NOT_AN_ACK)?;
    Ok(Some((pos, off)))
}

/// Updates the connection's last write offset (`Session::woff`) from its
/// worker thread's, if the thread fed the stream since the batch began
/// (one thread-local read).
#[cold]
#[inline(never)]
pub(crate) fn note_writes(session: &mut crate::resp::Session) {
    let now = amalgam_persist::repl::last_fed_here();
    if now != session.fed_mark {
        session.woff = now;
        session.fed_mark = now;
    }
}

/// A connection's batch begins while a replication journal is attached:
/// notes the worker thread's last fed offset (see [`note_writes`]). Out
/// of line: the batch loop stays small enough to inline its parser.
#[cold]
#[inline(never)]
pub(crate) fn mark_batch(session: &mut crate::resp::Session) {
    session.fed_mark = amalgam_persist::repl::last_fed_here();
}

/// WAIT numreplicas timeout.
pub(crate) fn wait(ctx: &mut crate::resp::Ctx<'_>, args: &[crate::resp::Arg<'_>], out: &mut Vec<u8>) {
    use amalgam_protocol::resp::{push_error, push_int};
    let shared = ctx.shared;
    if shared.repl.is_replica() {
        return push_error(out, ERR_WAIT_ON_REPLICA.as_bytes());
    }
    let Some(replicas) = crate::resp::int_arg(&args[1]) else {
        return push_error(out, b"ERR value is not an integer or out of range");
    };
    let Some(ms) = crate::resp::int_arg(&args[2]) else {
        return push_error(out, b"ERR timeout is not an integer or out of range");
    };
    if ms < 0 {
        return push_error(out, b"ERR timeout is negative");
    }
    // The connection's own last write, as Redis's WAIT (a connection that
    // wrote nothing waits for nothing).
    note_writes(ctx.session);
    let offset = ctx.session.woff;
    let acked = shared.repl.acked(offset);
    let replicas = replicas.max(0) as u64;
    if acked >= replicas {
        return push_int(out, acked as i64);
    }
    let timeout = (ms > 0).then(|| Duration::from_millis(ms as u64));
    crate::resp::blocking::block_wait(ctx, offset, replicas, timeout, out);
}

/// REPLICAOF SLAVEOF ROLE REPLCONF PSYNC SYNC WAIT FAILOVER.
pub(crate) fn run(
    ctx: &mut crate::resp::Ctx<'_>,
    cmd: crate::resp::table::Cmd,
    args: &[crate::resp::Arg<'_>],
    out: &mut Vec<u8>,
) -> crate::resp::After {
    use crate::resp::table::Cmd;
    use amalgam_protocol::resp::{push_error, push_simple};
    match cmd {
        Cmd::Replicaof | Cmd::Slaveof => match replicaof(ctx.shared, &args[1], &args[2]) {
            Ok(reply) => push_simple(out, reply),
            Err(e) => push_error(out, e.as_bytes()),
        },
        Cmd::Role => role(ctx.shared, out),
        Cmd::Replconf => replconf(ctx, args, out),
        Cmd::Psync | Cmd::Sync => {
            // `PSYNC <replid> <offset> FAILOVER` (failover.rs).
            if cmd == Cmd::Psync && !crate::failover::psync_request(ctx.shared, ctx.session.id(), args, out) {
                return crate::resp::After::Continue;
            }
            if ctx.shared.failover.running() {
                push_error(out, b"NOMASTERLINK Can't SYNC while failing over");
            } else if ctx.shared.repl.is_replica() && !ctx.shared.repl.link_up() {
                push_error(out, b"NOMASTERLINK Can't SYNC while not connected with my master");
            } else {
                let (replid, offset) = match cmd {
                    Cmd::Psync => {
                        (String::from_utf8_lossy(&args[1]).into_owned(), crate::resp::int_arg(&args[2]).unwrap_or(-1))
                    }
                    _ => ("?".into(), -1),
                };
                ctx.session.handoff = Some(Box::new(Psync {
                    replid,
                    offset,
                    listening_port: ctx.session.repl_port,
                    ip_address: ctx.session.repl_ip.clone(),
                }));
                // Ends the connection's turns as QUIT does; the worker
                // then hands it over instead of closing it
                // (`worker.rs`, `Conn::closing`).
                return crate::resp::After::Close;
            }
        }
        Cmd::Wait => wait(ctx, args, out),
        Cmd::Failover => crate::failover::command(ctx.shared, args, out),
        _ => unreachable!("dispatched here only for replication commands"),
    }
    crate::resp::After::Continue
}

/// REPLCONF listening-port | ip-address | capa | ack | getack ….
fn replconf(ctx: &mut crate::resp::Ctx<'_>, args: &[crate::resp::Arg<'_>], out: &mut Vec<u8>) {
    use amalgam_protocol::resp::{push_error, push_simple};
    if args.len() % 2 == 0 {
        return push_error(out, b"ERR syntax error");
    }
    for pair in args[1..].chunks(2) {
        let (opt, val) = (&pair[0], &pair[1]);
        if opt.eq_ignore_ascii_case(b"listening-port") {
            match crate::resp::int_arg(val).filter(|p| (0..=65535).contains(p)) {
                Some(p) => ctx.session.repl_port = p as u16,
                None => return push_error(out, b"ERR value is not an integer or out of range"),
            }
        } else if opt.eq_ignore_ascii_case(b"ip-address") {
            ctx.session.repl_ip = Some(String::from_utf8_lossy(val).into_owned());
        } else if opt.eq_ignore_ascii_case(b"ack") || opt.eq_ignore_ascii_case(b"getack") {
            // From a replica on a plain connection: no reply, as Redis.
            return;
        } else if !(opt.eq_ignore_ascii_case(b"capa")
            || opt.eq_ignore_ascii_case(b"rdb-only")
            || opt.eq_ignore_ascii_case(b"rdb-filter-only"))
        {
            return push_error(
                out,
                format!("ERR Unrecognized REPLCONF option: {}", String::from_utf8_lossy(opt)).as_bytes(),
            );
        }
    }
    push_simple(out, "OK");
}

impl Replication {
    /// A replica whose link is streaming.
    pub fn link_up(&self) -> bool {
        match &*lock(&self.role) {
            Role::Replica(l) => l.up.load(Ordering::Relaxed),
            Role::Primary => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acks_parse_and_anything_else_is_refused() {
        let ack = b"*3\r\n$8\r\nREPLCONF\r\n$3\r\nACK\r\n$4\r\n1234\r\n";
        assert_eq!(next_ack(ack), Ok(Some((ack.len(), 1234))));
        for cut in 0..ack.len() {
            assert_eq!(next_ack(&ack[..cut]), Ok(None), "a prefix of {cut} bytes");
        }
        let lower = b"*3\r\n$8\r\nreplconf\r\n$3\r\nack\r\n$1\r\n0\r\n";
        assert_eq!(next_ack(lower), Ok(Some((lower.len(), 0))));
        for bad in [
            &b"*2\r\n$4\r\nPING\r\n"[..],
            b"*3\r\n$8\r\nREPLCONF\r\n$6\r\nGETACK\r\n$1\r\n*\r\n",
            b"*3\r\n$8\r\nREPLCONF\r\n$3\r\nACK\r\n$1\r\nx\r\n",
            b"*3\r\n$8\r\nREPLCONF\r\n$3\r\nACK\r\n$99\r\n1\r\n",
            b"*3\r\n$-1\r\n",
            b"*3\r\n$8\r\nREPLCONFxx",
        ] {
            assert!(next_ack(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
        assert!(next_ack(&vec![b'x'; HANDSHAKE_LINE_BYTES_MAX + 1]).is_err());
    }
}
