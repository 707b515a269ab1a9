//! # amalgam-repl: replication (issue 22): roles, the handshake, the threads
//!
//! The subsystem below the RESP front end: a primary's senders, a
//! replica's link, the backlog's readers, WAIT's acks. It knows the
//! server only through [`Host`] (the store, the log, the client
//! registry, and the few calls back up: FUNCTION's libraries, FAILOVER's
//! outcome, CLIENT PAUSE), so what replication may touch is visible in
//! one trait. The commands (REPLICAOF, PSYNC, REPLCONF, WAIT, ROLE,
//! FAILOVER) are the RESP front end's; they call in here.
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
//! records (Redis sends RESP commands). So between Amalgam nodes the
//! format is Amalgam's.
//!
//! ## Following a redis-server (issue 37 §1)
//! A replica tells its primary's kind by what follows `+FULLRESYNC`:
//! Redis's RDB (`$EOF:<mark>` or `$<len>`, `sync_in.rs`) is read through the
//! server's loader ([`Host::load_rdb`]), then the RESP command stream is
//! run by the server's own command path as Redis's master client
//! ([`Host::command_feed`], [`CommandFeed`]); its bytes feed the backlog,
//! so every offset (acks, INFO, the next PSYNC) is Redis's and a dropped
//! link continues with a partial resync. Such a replica serves no
//! replicas of its own (its backlog holds RESP) and keeps no state file.
//!
//! ## Redis's replicas and tools (issue 37 §2)
//! Amalgam's replicas say `REPLCONF capa amalgam`. A peer that does not
//! and wants an RDB only (`redis-cli --rdb`) is served one from the
//! store (`redis_out.rs` `send_rdb`, [`Host::write_rdb`]); a redis-server replica gets
//! the RDB and then Redis's command stream made from the backlog's
//! records (`redis_out.rs`, whose notes say how and what it costs).

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
//! lines at most [`HANDSHAKE_LINE_BYTES_MAX`]; what a primary sends
//! after PSYNC is read by `sync_in.rs` (its bounds there), the same code
//! the `repl_sync_in` fuzz target drives from bytes. A primary with a password
//! (`requirepass`, ACL users) is followed with `masterauth` and
//! `masteruser`: the replica says `AUTH [user] password` after its PING,
//! as Redis's does. `replica-serve-stale-data no`: while a replica's
//! link is not streaming, commands without Redis's `stale` flag are
//! refused with `MASTERDOWN` (`Replication::refuses_stale`). Not
//! supported: replication over TLS, diskless-load options.

mod link;
mod redis_out;
mod report;
mod send;
pub mod sync_in;
pub use link::replicaof;
pub use report::{info, role};
pub use send::serve_replica;

use amalgam_engine::Store;
use amalgam_persist::repl::{self as stream, Backlog};
use amalgam_persist::Persistence;
use std::io::Write;
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// The share of one core a full sync's snapshot cursor may use (the
/// workers serve on meanwhile; 100 is unpaced).
pub const FULL_SYNC_CPU_PERCENT: u32 = 50;
/// Redis's `repl-timeout` default: a link silent this long is dropped.
pub const REPL_TIMEOUT_SECS_DEFAULT: u64 = 60;
/// How long connecting to a primary may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// A dropped link is retried this often.
const RETRY_EVERY: Duration = Duration::from_secs(1);
/// A full sync that failed after it began (the primary's RDB or snapshot
/// did not load: the store is full in store mode, a key does not load, a
/// hostile primary) is retried after RETRY_EVERY, then twice as long
/// after each further failure in a row, up to this: each attempt costs
/// the primary a whole RDB (a fork, for a disk-based one), so a sync that
/// cannot succeed must not ask for one every second. Redis's replica
/// retries each second (its `replicationCron`); it has no such failure
/// in store mode, since it loads past `maxmemory`.
const SYNC_RETRY_MAX: Duration = Duration::from_secs(64);
const _: () = assert!(SYNC_RETRY_MAX.as_secs() >= RETRY_EVERY.as_secs());
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

/// Redis's answer to a write when `min-replicas-to-write` is not met.
pub const ERR_NOREPLICAS: &str = "NOREPLICAS Not enough good replicas to write.";
/// How often a paused replica looks whether its pause ended.
const PAUSED_POLL: Duration = Duration::from_millis(10);
/// Redis's answer to a write on a read-only replica.
pub const ERR_READONLY: &str = "READONLY You can't write against a read only replica.";
/// Redis's answer to a command a replica whose link is down refuses
/// under `replica-serve-stale-data no`.
pub const ERR_MASTERDOWN: &str = "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.";

/// What replication asks of the server it runs in (implemented by the
/// server's `Shared`). Threads it starts hold the host by `Arc`.
pub trait Host: Send + Sync + Sized + 'static {
    /// Replication's own state.
    fn repl(&self) -> &Replication;
    /// The store a replica applies to and a primary's full sync reads.
    fn store(&self) -> &Arc<Store>;
    /// The log and snapshots, if on (a replica logs its position).
    fn persist(&self) -> Option<&Arc<Persistence>>;
    /// CLIENT LIST's registry: the links and replicas are listed there.
    fn clients(&self) -> &amalgam_net::clients::Registry;
    /// The next CLIENT ID (a link's entry).
    fn next_client_id(&self) -> u64;
    /// The server is shutting down: threads end.
    fn shutting_down(&self) -> bool;
    /// When collections change form (the applier builds them).
    fn thresholds(&self) -> amalgam_types::Thresholds;
    /// This node's RESP port (REPLCONF listening-port).
    fn resp_port(&self) -> u16;
    /// CLIENT PAUSE holds writes: a replica holds its primary's stream.
    fn writes_held(&self) -> bool;
    /// The host itself, for the threads a command starts (None while it
    /// shuts down).
    fn arc(&self) -> Option<Arc<Self>>;
    /// FUNCTION's libraries arrived in the stream: install them.
    fn install_functions(&self, payload: &[u8]);
    /// A full sync was sent: feed the FUNCTION libraries after it.
    fn feed_functions(&self);
    /// A FAILOVER is handing this primary over (its link says FAILOVER).
    fn failing_over(&self) -> bool;
    /// The failover's target accepted the PSYNC.
    fn failover_succeeded(&self);
    /// The failover's target refused or cannot be reached.
    fn failover_rejected(&self, why: &str);
    /// A Redis primary's full sync: empties every database and loads the
    /// RDB read from `r` (keys, expiries, FUNCTION's libraries). The keys
    /// loaded, or why the load stopped (the link then drops and retries).
    fn load_rdb(&self, r: &mut dyn std::io::Read) -> Result<u64, String>;
    /// Writes an RDB of the store as it is now into `out` (a full sync
    /// for a redis-server replica or a Redis tool): the keys written.
    /// `before_cut` runs at the snapshot's cut, `between_steps` after
    /// each of its steps, holding no lock (the sender moves `out`'s bytes
    /// on there).
    fn write_rdb(
        &self,
        out: SyncBuf,
        before_cut: &mut dyn FnMut(),
        between_steps: &mut dyn FnMut(),
    ) -> std::io::Result<u64>;
    /// Appends to `out` the Redis commands that give a redis-server
    /// replica the key `stored` (its stored form, database included) as
    /// it is now (`redis_out.rs`): `SELECT` when its database is not
    /// `db`'s (then `db` is it), and `RESTORE … REPLACE ABSTTL` or `DEL`.
    fn redis_key_state(&self, stored: &[u8], db: &mut Option<usize>, out: &mut Vec<u8>);
    /// Where an RDB for a peer that cannot take a streamed one (no `capa
    /// eof`) is written before it is sent (`--dir`, else the system's
    /// temporary directory).
    fn sync_dir(&self) -> std::path::PathBuf;
    /// A Redis primary's command stream, applied by the server's own
    /// command path ([`CommandFeed`]), as `client` (the link's CLIENT
    /// LIST entry, flagged as the master's).
    fn command_feed(&self, client: Arc<amalgam_net::clients::Client>) -> Box<dyn CommandFeed>;
}

/// The buffer an RDB for a Redis peer is written into by the snapshot
/// (under bucket locks) and taken from by its sender between the
/// snapshot's steps (`redis_out.rs`): bounded by what one step writes.
#[derive(Debug, Clone, Default)]
pub struct SyncBuf(pub Arc<Mutex<Vec<u8>>>);

impl std::io::Write for SyncBuf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        lock(&self.0).extend_from_slice(b);
        Ok(b.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A Redis primary's command stream (RESP), applied as Redis's replica
/// applies it: by a client of its own (Redis's master client: no
/// authentication, writes allowed on a read-only replica, SELECT and
/// MULTI/EXEC as sent, replies dropped).
pub trait CommandFeed: Send {
    /// Runs the whole commands at the front of `buf` (an incomplete one
    /// stays for the next call): the bytes they took, and whether a
    /// `REPLCONF GETACK` was among them (the link then acks at once). An
    /// error (a protocol error in the stream) drops the link.
    fn feed(&mut self, buf: &[u8]) -> Result<(usize, bool), String>;
}

/// A client blocked in WAIT, as the front end that blocked it wakes it.
pub trait Waiting: Send + Sync + std::fmt::Debug {
    /// Its blocking episode's number ([`Replication::forget_waiter`]).
    fn seq(&self) -> u64;
    /// Wakes it (from an ack thread): it counts the acks again.
    fn wake(&self);
}

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
    /// `REPLCONF capa amalgam`: an Amalgam replica, served the native
    /// snapshot and stream. Anything else is a Redis tool wanting an RDB
    /// only ([`Psync::sync`], `REPLCONF rdb-only 1`): `send.rs`.
    pub amalgam: bool,
    /// The command was SYNC (no `+FULLRESYNC` line before the payload).
    pub sync: bool,
    /// The peer wants the RDB alone (`redis-cli --rdb`): no stream.
    pub rdb_only: bool,
    /// `REPLCONF capa eof`: the peer takes an RDB streamed as `$EOF:`.
    pub eof: bool,
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
    /// It has acked at least once (a redis-server replica of a streamed
    /// RDB acks when loaded: its stream starts then, `redis_out.rs`).
    heard: AtomicBool,
    sock: TcpStream,
    /// A redis-server replica's offsets (`redis_out.rs`): it acks offsets
    /// of the RESP stream it was sent, mapped to the backlog's here.
    offsets: Option<redis_out::AckMap>,
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
    /// A link of no session (`sync_in::replay`): never stopped, no socket.
    fn detached() -> Link {
        Link {
            host: String::new(),
            port: 0,
            stop: AtomicBool::new(false),
            up: AtomicBool::new(false),
            state: Mutex::new("connect"),
            last_io: AtomicU64::new(0),
            down_since: AtomicU64::new(0),
            sock: Mutex::new(None),
            applying: Mutex::new(()),
        }
    }

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
    ticket: Box<dyn Waiting>,
    offset: u64,
    replicas: u64,
}

/// Replication's state (the server keeps one: [`Host::repl`]).
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
    /// The offset maps of redis-server replicas whose links ended, for
    /// their PSYNC to continue (`redis_out.rs`).
    redis_resumes: redis_out::Resumes,
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
    /// This replica's primary is a redis-server (issue 37 §1): the link
    /// loads its RDB and applies its RESP commands (`link.rs`).
    redis_primary: AtomicBool,
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

/// Nanoseconds since the epoch (a temporary file's unique name).
fn unix_now_nanos() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0)
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
            redis_primary: AtomicBool::new(false),
            cas_shift: AtomicU64::new(0),
            resume: AtomicBool::new(false),
            redis_resumes: Default::default(),
            masterauth: Mutex::new(String::new()),
            masteruser: Mutex::new(String::new()),
        }
    }

    /// With persistence, a replica logs where the data its log holds
    /// stands in the primary's stream (a REPL_POS record after the
    /// batch's own records) and writes the batch out (a replica's workers
    /// never commit: nothing else would until the next second, or ever
    /// under `appendfsync no`).
    fn log_position(&self, persist: Option<&Arc<Persistence>>) {
        if let Some(p) = persist {
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
    fn attach_journal(&self, store: &Store) {
        if self.journal.swap(true, Ordering::AcqRel) {
            return;
        }
        let j = stream::StreamJournal::new(None, Arc::clone(&self.backlog));
        if store.set_journal(Arc::new(j)).is_err() {
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

    /// How long a replica's link has been without data from its primary,
    /// in milliseconds (seconds' resolution, as Redis's `data_age`): since
    /// the last byte while the link is up, since it went down otherwise;
    /// 0 on a primary.
    pub fn link_data_age_ms(&self) -> u64 {
        match &*lock(&self.role) {
            Role::Primary => 0,
            Role::Replica(l) => {
                let since = if l.up.load(Ordering::Relaxed) {
                    l.last_io.load(Ordering::Relaxed)
                } else {
                    l.down_since.load(Ordering::Relaxed)
                };
                unix_now().saturating_sub(since) * 1000
            }
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
    pub fn add_waiter(&self, ticket: Box<dyn Waiting>, offset: u64, replicas: u64) {
        lock(&self.waiters).push(Waiter { ticket, offset, replicas });
    }

    /// A WAIT episode ended.
    pub fn forget_waiter(&self, seq: u64) {
        lock(&self.waiters).retain(|w| w.ticket.seq() != seq);
    }

    /// A replica acked: wakes the WAIT clients it may satisfy.
    fn wake_waiters(&self) {
        let waiters = lock(&self.waiters);
        if waiters.is_empty() {
            return;
        }
        for w in waiters.iter() {
            if self.acked(w.offset) >= w.replicas {
                w.ticket.wake();
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

impl Replication {
    /// True while this node follows a redis-server primary: its backlog
    /// holds Redis's RESP stream, which Amalgam's replicas cannot follow.
    pub fn follows_redis(&self) -> bool {
        self.redis_primary.load(Ordering::Relaxed)
    }

    /// A replica whose link is streaming.
    pub fn link_up(&self) -> bool {
        match &*lock(&self.role) {
            Role::Replica(l) => l.up.load(Ordering::Relaxed),
            Role::Primary => false,
        }
    }
}
