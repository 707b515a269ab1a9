//! # amalgam-resp: the Redis server
//!
//! What a Redis client talks to, and the state both ports share:
//! [`Shared`] (the store, the persistence, the registries of clients,
//! blocked clients, subscribers, tracking, pauses, users, scripts,
//! replication and cluster), RESP's sessions and dispatch (`resp.rs`), the
//! commands that are the server's rather than a data family's
//! (`resp/`: CONFIG, INFO, CLIENT, ACL, MULTI, blocking, Pub/Sub, tracking,
//! scripts, MIGRATE, CLUSTER's glue), replication's commands and its
//! `Host` (`repl.rs`, `failover.rs`), FUNCTION's persistence
//! (`scripting.rs`), Redis's `dump.rdb` (`rdbfile.rs`), CONFIG's table
//! (`settings.rs`, `accepted.rs`) and the config file (`conffile.rs`).
//!
//! ## Where it stands (docs/architecture.md)
//! Above: only `amalgam-server` (the binary, the event loop's front end
//! over both ports, memcached's operator commands, the metrics endpoint),
//! which reaches this crate through [`Shared`]'s fields and
//! `resp::process`. Below: the data commands (`amalgam-commands`,
//! `amalgam-derived`) reached through `Shared::keyspace` and the
//! `amalgam_commands::Host` trait; replication (`amalgam-repl`) and Redis
//! Cluster (`amalgam-cluster`) through the `Host` traits this crate
//! implements (`repl.rs`, `resp/cluster.rs`); users and rules
//! (`amalgam-acl`); Lua (`amalgam-script`); the figures
//! (`amalgam-metrics`); the network layer's registries (`amalgam-net`).
//! Nothing here reads a socket: a connection's bytes arrive through
//! `resp::process`, called by the server's worker loop.
//!
//! ## Blocked RESP clients (`resp/blocking.rs`)
//! A client in BLPOP and friends stays on its worker, costing nothing: its
//! connection waits in the event loop, its pipelined commands unparsed. A push
//! on any worker wakes the first client blocked on the key through that
//! client's worker's mailbox and `Waker` (the same waker as the acceptor's
//! hand-off); the client pops for itself there. Deadlines live in a per-worker
//! min-heap that bounds `epoll_wait`'s timeout.
//!
//! ## Pub/Sub (`resp/pubsub.rs`)
//! A subscriber stays on its worker too. PUBLISH, on any worker, appends the
//! message to each receiver's own queue (channel → subscribers in sharded
//! maps, no global lock), posts the receiver to its worker's ready list and
//! wakes that worker through the same waker; the receiver's worker moves the
//! queue to the socket. A queue past the pubsub output limit closes its
//! connection.
//!
//! ## Replication (crate amalgam-repl, amalgam-persist `repl.rs`)
//! Redis's handshake, roles and commands over Amalgam's own stream: the
//! log's records, a full sync from the fork-less snapshot. A connection
//! that says PSYNC leaves its worker (`Turn::Detach`) for a sender thread
//! and an ack thread of its own; a replica runs one link thread that
//! applies the stream under bucket locks like any writer. The request
//! path pays one relaxed load per write for read-only replicas and
//! `min-replicas-to-write` (folded into the batched SET's condition),
//! and, while a replication journal is attached, one thread-local read
//! per batch for WAIT's per-connection offset. docs/replication.md.
//!
//! ## Transactions and multi-key commands (`resp/multi.rs`)
//! MULTI queues a connection's commands; EXEC names every key they touch
//! (their key specifications, as COMMAND GETKEYS) plus the WATCHed ones and
//! runs the queue inside the engine's `Store::atomically`, which holds
//! those keys' buckets so no other worker sees part of it (the engine's
//! `txn.rs`: lock order, why readers wait, the deadlock argument). Every
//! command naming two or more keys (SMOVE, LMOVE, MSET, RENAME, COPY,
//! *STORE …) runs the same way; single-key commands and the batched GET/SET
//! path are untouched.
//!
//! ## Operations (`amalgam_config::logging`, `settings.rs`, `conffile.rs`)
//! Log lines go through the `log` facade to a logger writing Redis's line
//! format to stderr, at Redis's `loglevel` (changed by CONFIG SET, `-v`,
//! memcached's `verbosity`). Every CONFIG parameter is one row of
//! `settings.rs`: its checks, how to read it, how to change it at run time,
//! what a config-file line becomes; `conffile.rs` reads `--config` (Redis's
//! format) into command-line arguments before clap parses, and CONFIG
//! REWRITE writes run-time changes back. docs/operations.md.
//! `rdbfile.rs`: Redis's `dump.rdb` in `--dir`, loaded at start when the
//! directory holds no Amalgam state, written by SAVE / BGSAVE once
//! `dbfilename` is given (amalgam-commands `rdbfile.rs` does the work).
//!
//! ## RESP clients (`amalgam_net::clients`)
//! Each RESP connection registers what other threads may see of it (address,
//! age, last command, name) in `Shared::clients`; CLIENT LIST reads that,
//! CLIENT KILL asks the owning worker to close a connection through its kill
//! inbox and waker (a worker never touches another's connections), and
//! MONITOR's lines reach each monitor through a bounded queue its own worker
//! drains. The request path writes only its own client's atomics and, with no
//! monitor attached, pays one relaxed load for MONITOR.
//!
//! ## Persistence (`--dir`, crate `amalgam-persist`)
//! The engine journals each change under its bucket lock. Replies carry
//! the log position they depend on (the last record their connection
//! journaled, `Conn::commit_target`: a PING or a GET waits for no other
//! connection's write) and are not written
//! before the log has secured it: the connection is parked until the
//! worker has served every ready connection. Under `everysec` and `no`
//! the worker then commits once (one write(2) for the iteration) and sends
//! the parked replies. Under `always` it asks the committer thread for an
//! fdatasync up to the highest target and serves on; the committer wakes
//! the workers after each fsync, and the parked replies whose targets it
//! covered go out. A large record (1 MiB or more unwritten: a large
//! value) is the committer's to write under every policy, the replies
//! parked as under `always`, so one 512 MB SET does not hold its worker
//! for the seconds its write(2) takes (persist `log.rs` § Large records). So a reply never acknowledges a write the policy has
//! not secured, and one fsync covers everything every worker executed
//! while the previous one ran. The policy is read per commit and per
//! reply (`CONFIG SET appendfsync` may change it, `always` included), and
//! every worker registers its waker with the committer whatever the policy.
//!
//! On the RESP port the same bounds hold, with Redis's limits and errors
//! (`amalgam_protocol::resp`): a bulk string over `-I`, an array of more
//! than 1 Mi elements, or 64 KiB without a line end answers
//! `-ERR Protocol error: …` and closes; a request past 8 MiB (or `-I` +
//! 64 KiB) closes without a reply; a connection over `-c` (counted over
//! both ports) gets `-ERR max number of clients reached`.

#![forbid(unsafe_code)]

pub mod conffile;
pub mod failover;
pub use amalgam_config::config;
pub mod inplace;
pub use amalgam_config::logging;
pub mod rdbfile;
pub use amalgam_net::obuf;
pub mod accepted;
pub mod repl;
pub mod resp;
pub mod scripting;
pub mod settings;
pub use amalgam_metrics::workers as stats;
pub use amalgam_net::tls;

use amalgam_engine::Store;
use config::Args;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The commit this binary was built from (`amalgam-config`'s `build.rs`).
pub use amalgam_config::GIT_SHA1;

pub use config::VERSION_LONG;

/// The Redis release whose behaviour the RESP front end implements (what
/// HELLO, INFO's `redis_version` and a script's `redis.REDIS_VERSION`
/// report).
pub const REDIS_VERSION: &str = "7.0.0";

/// State every worker shares.
#[derive(Debug)]
pub struct Shared {
    pub store: Arc<Store>,
    /// The log and snapshots (`--dir`), if on.
    pub persist: Option<Arc<amalgam_persist::Persistence>>,
    pub args: Args,
    pub conn_limit: usize,
    pub curr_connections: AtomicUsize,
    pub rejected_connections: AtomicU64,
    pub workers: Vec<stats::WorkerStats>,
    pub started: Instant,
    /// Unix time of the start (LASTSAVE before any save, as Redis).
    pub started_unix: u64,
    pub shutdown: AtomicBool,
    /// The next RESP connection's CLIENT ID: from 1, never reused.
    pub next_client_id: AtomicU64,
    /// Every RESP connection, for CLIENT LIST/KILL and MONITOR.
    pub clients: amalgam_net::clients::Registry,
    /// memcached's verbosity: `-v` at start, then the `verbosity` command.
    pub verbosity: AtomicU32,
    /// The memcached port's operator state: `stats detail`'s prefixes,
    /// `slabs` and `lru`'s tuning (`amalgam_memcache::operator`).
    pub mc_operator: amalgam_memcache::operator::State,
    /// Listeners and open connections for `stats conns` (written at
    /// accept and close only, never per request).
    pub conns: Mutex<ConnRegistry>,
    /// When collections change form (CONFIG SET hash-max-listpack-entries …).
    pub thresholds: resp::typed::LiveThresholds,
    /// Redis's numbered databases: each one's engine namespace
    /// (`amalgam_commands::db`).
    pub databases: amalgam_commands::db::Databases,
    /// Clients blocked in BLPOP and friends, by key (`resp/blocking.rs`).
    pub blocking: resp::blocking::Registry,
    /// CLIENT PAUSE's state (resp/pause.rs).
    pub pause: resp::pause::Pause,
    /// FAILOVER's state (failover.rs).
    pub failover: failover::Failover,
    /// Pub/Sub's channels, patterns and deliveries (`resp/pubsub.rs`).
    pub pubsub: resp::pubsub::Registry,
    /// The classes the write paths tell [`Host::notify`] of
    /// (`amalgam_commands::notify::in_effect`): `notify-keyspace-events`'
    /// when it names a channel, plus `TRACKING` and `TRACKED` while a
    /// client tracks keys (`resp/tracking.rs`). Zero while neither.
    ///
    /// [`Host::notify`]: amalgam_commands::Host::notify
    pub notify: AtomicU32,
    /// `notify-keyspace-events` as configured (CONFIG GET shows it).
    pub notify_config: AtomicU32,
    /// CLIENT TRACKING: the table of tracked keys, the BCAST prefixes,
    /// the invalidation inboxes (`resp/tracking.rs`).
    pub tracking: resp::tracking::Registry,
    /// `client-output-buffer-limit` and its disconnections (`amalgam_net::obuf`).
    pub obuf: obuf::OutputLimits,
    /// SLOWLOG's entries and settings (`resp/cmdstats.rs`).
    pub slowlog: resp::cmdstats::SlowLog,
    /// LATENCY's events and `latency-monitor-threshold` (`resp/latency.rs`).
    pub latency: Arc<resp::latency::Monitor>,
    /// Redis's `proto-max-bulk-len`: `--proto-max-bulk-len`, then CONFIG
    /// SET (read once per RESP round, [`Shared::resp_limits`]).
    pub proto_max_bulk_len: AtomicU64,
    /// Seconds a connection may stay idle (`timeout`, `-o idle_timeout`;
    /// 0 never): `worker.rs` closes it on its once-a-second sweep.
    pub idle_timeout_secs: AtomicU64,
    /// Redis's `dbfilename` and the background RDB save (`rdbfile.rs`).
    pub rdb: rdbfile::RdbFile,
    /// RESP's users, requirepass and protected mode (`resp/acl.rs`).
    pub acl: resp::acl::Acl,
    /// The Lua script cache (EVAL, SCRIPT LOAD; crate amalgam-script).
    pub scripts: amalgam_script::Scripts,
    /// memcached's `-Y` users (`amalgam_memcache::authfile`), if given.
    pub authfile: Option<amalgam_memcache::authfile::AuthFile>,
    /// TLS's certificates and policies (`amalgam_net::tls`), if -Z or --tls-port.
    pub tls: Option<tls::Tls>,
    /// Replication: role, backlog, replicas, the link (crate amalgam-repl).
    pub repl: repl::Replication,
    /// Redis Cluster (crate amalgam-cluster): disabled unless
    /// `--cluster-enabled yes`; the RESP front end routes through it
    /// (`resp/cluster.rs`).
    pub cluster: Arc<amalgam_cluster::Cluster>,
    /// This `Shared` itself, for threads started by a command (REPLICAOF,
    /// a replica's sender).
    me: std::sync::OnceLock<std::sync::Weak<Shared>>,
    /// The Redis settings accepted and kept that change nothing here
    /// (`accepted.rs`).
    pub accepted: accepted::Accepted,
    /// Redis's `maxmemory-policy` in force (`MaxmemoryPolicy::index`):
    /// its scope is the engine's (`Store::set_scope`), its name what
    /// CONFIG GET and INFO show and OBJECT follows (settings.rs).
    pub maxmemory_policy: std::sync::atomic::AtomicU8,
}

/// What `stats conns` lists, by file descriptor (the event loop's, in
/// amalgam-net: the acceptor lists a connection, its worker unlists it).
pub use amalgam_net::front::{Listing as ConnRegistry, OpenConn};

/// What the data commands ask of the server (`amalgam_commands::Host`).
impl amalgam_commands::Host for Shared {
    fn signal(&self, key: &[u8]) {
        self.blocking.signal(key);
    }

    fn notify(&self, class: u32, event: &str, key: &[u8]) {
        self.keyspace_event(class, event, key);
    }

    fn maxmemory_policy(&self) -> amalgam_commands::object::MaxmemoryPolicy {
        amalgam_commands::object::MaxmemoryPolicy::from_index(self.maxmemory_policy.load(Ordering::Relaxed))
    }
}

/// The engine's key events (`amalgam_engine::key_events`) as keyspace
/// notifications: `new`, `expired`, `evicted`. Holds the server weakly
/// (the store it is installed in belongs to the server).
#[derive(Debug)]
struct KeyNotifier(std::sync::Weak<Shared>);

impl amalgam_engine::key_events::KeyWatcher for KeyNotifier {
    fn key_event(&self, event: amalgam_engine::key_events::KeyEvent, key: &[u8]) {
        use amalgam_commands::notify::{EVICTED, EXPIRED, NEW};
        use amalgam_engine::key_events::KeyEvent;
        let Some(shared) = self.0.upgrade() else { return };
        let (class, name) = match event {
            KeyEvent::Created => (NEW, "new"),
            KeyEvent::Expired => (EXPIRED, "expired"),
            KeyEvent::Evicted => (EVICTED, "evicted"),
        };
        if shared.notify.load(Ordering::Relaxed) & class != 0 {
            shared.keyspace_event(class, name, key);
        }
    }
}

impl Shared {
    /// Sets `notify-keyspace-events` to `flags`, and which key events the
    /// engine reports for them (none unless a channel class is on).
    pub fn set_notify(&self, flags: u32) {
        self.notify_config.store(flags, Ordering::Relaxed);
        self.refresh_notify();
    }

    /// Computes [`Shared::notify`] and the engine's key events again from
    /// `notify-keyspace-events` and whether a client tracks keys (CONFIG
    /// SET, CLIENT TRACKING ON and OFF, a tracking client closing). A
    /// round already under way keeps the word it read.
    pub fn refresh_notify(&self) {
        use amalgam_commands::notify::{in_effect, EVICTED, EXPIRED, NEW, TRACKED, TRACKING};
        use amalgam_engine::key_events as ke;
        let _serial = self.tracking.serial();
        let mut flags = in_effect(self.notify_config.load(Ordering::Relaxed));
        if self.tracking.clients() > 0 {
            flags |= TRACKING | TRACKED;
        }
        self.notify.store(flags, Ordering::Relaxed);
        let mut mask = 0;
        for (class, bit) in [(NEW, ke::CREATED), (EXPIRED, ke::EXPIRED), (EVICTED, ke::EVICTED)] {
            if flags & class != 0 {
                mask |= bit;
            }
        }
        self.store.watch_keys(mask);
    }

    /// A write's keyspace event `event` (of `class`) on `key` (its stored
    /// form): published if `notify-keyspace-events` asks for it, and the
    /// key invalidated for the clients tracking it (Redis's
    /// `notifyKeyspaceEvent` and `trackingInvalidateKey`).
    #[cold]
    pub fn keyspace_event(&self, class: u32, event: &str, key: &[u8]) {
        use amalgam_commands::notify::{in_effect, TRACKED, TRACKING};
        if in_effect(self.notify_config.load(Ordering::Relaxed)) & class != 0 {
            self.publish_keyspace_event(event, key);
        }
        if class & TRACKED != 0 && self.notify.load(Ordering::Relaxed) & TRACKING != 0 {
            self.tracking.invalidate(self, amalgam_engine::namespace::split(key).1);
        }
    }

    /// Publishes keyspace notification `event` of `key` (its stored
    /// form) on `__keyspace@<db>__:<key>` and `__keyevent@<db>__:<event>`,
    /// as `notify-keyspace-events` asks (Redis's `notifyKeyspaceEvent`;
    /// the caller checked the event's class).
    #[cold]
    pub fn publish_keyspace_event(&self, event: &str, key: &[u8]) {
        use amalgam_commands::notify::{KEYEVENT, KEYSPACE};
        let flags = self.notify_config.load(Ordering::Relaxed);
        let (ns, name) = amalgam_engine::namespace::split(key);
        let Some(db) = self.databases.database_of(ns) else { return };
        let mut wake = Vec::new();
        let mut channel = Vec::with_capacity(24 + name.len().max(event.len()));
        if flags & KEYSPACE != 0 {
            channel.extend_from_slice(format!("__keyspace@{db}__:").as_bytes());
            channel.extend_from_slice(name);
            self.pubsub.publish(&channel, event.as_bytes(), &mut wake);
        }
        if flags & KEYEVENT != 0 {
            channel.clear();
            channel.extend_from_slice(format!("__keyevent@{db}__:{event}").as_bytes());
            self.pubsub.publish(&channel, name, &mut wake);
        }
        wake.sort_unstable();
        wake.dedup();
        for w in wake {
            self.blocking.wake(w);
        }
    }
}

/// The operator commands of memcached's port (`amalgam_memcache::Host`;
/// `admin.rs` answers them).
impl Shared {
    /// CONFIG SET client-output-buffer-limit: the classes' limits, and
    /// pubsub's hard limit to the Pub/Sub registry, which checks it as a
    /// message is queued.
    pub fn set_output_limits(&self, groups: &[obuf::Group]) {
        if let Some(hard) = self.obuf.apply(groups) {
            self.pubsub.output_limit_bytes.store(hard, Ordering::Relaxed);
        }
    }

    /// Builds the store from the arguments.
    pub fn new(args: Args) -> Result<Arc<Shared>, String> {
        amalgam_net::ticks::init();
        let threads = args.worker_threads();
        let args_verbose = args.verbose;
        let args_dbfilename = args.dbfilename.clone();
        let proto_max_bulk_len = args.proto_max_bulk_len;
        let idle_timeout_secs = args.idle_timeout_secs()?;
        let store = Store::new(amalgam_engine::Config {
            memory_limit_bytes: args.memory_limit_mb.saturating_mul(1 << 20),
            item_size_max_bytes: args.max_item_size,
            eviction: args.eviction,
            merge_segments: args.merge_segments,
            memory_limit_max_bytes: args.memory_limit_max_bytes(crate::config::machine_memory_bytes()),
            ..amalgam_engine::Config::default()
        })
        .map_err(|e| {
            let e = e.to_string();
            if e.contains("could not map") {
                // The engine's advice covers a budget too small for its
                // segments; a map refused outright means too large.
                format!(
                    "-m {} asks for more memory than this machine can reserve ({}): give a smaller -m",
                    args.memory_limit_mb,
                    e.split(" (").next().unwrap_or(&e)
                )
            } else {
                e
            }
        })?;
        let policy =
            args.maxmemory_policy.unwrap_or(amalgam_commands::object::MaxmemoryPolicy::of_eviction(args.eviction));
        match policy.scope() {
            Some(scope) => store.set_scope(scope).map_err(|_| {
                format!("maxmemory-policy {policy} evicts keys: it needs a cache (without --eviction none or -M)")
            })?,
            None if store.is_cache() => {
                return Err("maxmemory-policy noeviction is store mode: give --eviction none".into());
            }
            None => {}
        }
        let store = Arc::new(store);
        let backlog = Arc::new(amalgam_persist::repl::Backlog::new(args.repl_backlog_size));
        let mut repl_pos = None;
        let mut functions = None;
        let databases = amalgam_commands::db::Databases::new(args.databases);
        // --dir holds no Amalgam state: a Redis RDB file there is loaded,
        // before the log opens (a failed load leaves no state behind).
        let rdb_loaded = rdbfile::load_at_start(&args, &store, &databases, proto_max_bulk_len)?;
        let persist = match args.persistence() {
            None => None,
            Some(cfg) => {
                let dir = cfg.dir.display().to_string();
                let (p, rec) =
                    amalgam_persist::Persistence::open_with_stream(cfg, Arc::clone(&store), Some(Arc::clone(&backlog)))
                        .map_err(|e| format!("cannot use --dir {dir}: {e}"))?;
                let snap = match &rec.snapshot {
                    Some((path, n)) => format!("snapshot {} ({n} items)", path.display()),
                    None => "no snapshot".into(),
                };
                log::info!(
                    "recovered from {dir}: {snap}, {} log records, {} items, in {:.3} s{}",
                    rec.replayed,
                    store.len(),
                    rec.elapsed.as_secs_f64(),
                    if rec.warnings.is_empty() {
                        String::new()
                    } else {
                        format!(" ({} warnings above)", rec.warnings.len())
                    }
                );
                repl_pos = rec.repl_pos;
                functions = rec.functions;
                Some(p)
            }
        };
        let acl = resp::acl::Acl::new(args.requirepass.as_deref(), args.protected_mode, args.aclfile.as_deref())
            .map_err(|e| format!("cannot load --aclfile: {}", e.strip_prefix("ERR ").unwrap_or(&e)))?;
        let authfile = match &args.auth_file {
            None => None,
            Some(p) => Some(amalgam_memcache::authfile::AuthFile::load(p)?),
        };
        let tls = args
            .tls_settings()
            .and_then(|s| s.map(|s| tls::Tls::new(&s)).transpose())
            .map_err(|e| format!("cannot set up TLS: {e}"))?;
        let pubsub_limit = args.client_output_buffer_limit_pubsub;
        let (mc_delimiter, mc_watch_disabled) = (args.stats_prefix_delimiter(), args.disable_watch);
        let journaled = persist.is_some();
        let cluster = resp::cluster::from_args(&args)?;
        resp::cluster::count_slots(cluster.enabled(), &store)?;
        let shared = Arc::new(Shared {
            cluster,
            repl: repl::Replication::new(backlog, journaled),
            scripts: amalgam_script::Scripts::default(),
            me: std::sync::OnceLock::new(),
            tls,
            acl,
            authfile,
            store,
            persist,
            conn_limit: args.conn_limit,
            args,
            curr_connections: AtomicUsize::new(0),
            rejected_connections: AtomicU64::new(0),
            workers: (0..threads).map(|_| stats::WorkerStats::default()).collect(),
            started: Instant::now(),
            started_unix: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            shutdown: AtomicBool::new(false),
            next_client_id: AtomicU64::new(1),
            thresholds: resp::typed::LiveThresholds::default(),
            databases,
            verbosity: AtomicU32::new(u32::from(args_verbose)),
            mc_operator: amalgam_memcache::operator::State::new(mc_delimiter, mc_watch_disabled),
            conns: Mutex::new(ConnRegistry::default()),
            clients: amalgam_net::clients::Registry::new(threads),
            blocking: resp::blocking::Registry::new(threads),
            pause: resp::pause::Pause::default(),
            failover: failover::Failover::default(),
            pubsub: resp::pubsub::Registry::new(threads, pubsub_limit),
            notify: AtomicU32::new(0),
            accepted: Default::default(),
            maxmemory_policy: std::sync::atomic::AtomicU8::new(policy.index()),
            notify_config: AtomicU32::new(0),
            tracking: resp::tracking::Registry::default(),
            obuf: obuf::OutputLimits::new(pubsub_limit),
            slowlog: resp::cmdstats::SlowLog::default(),
            latency: Arc::new(resp::latency::Monitor::default()),
            proto_max_bulk_len: AtomicU64::new(proto_max_bulk_len),
            idle_timeout_secs: AtomicU64::new(idle_timeout_secs),
            rdb: rdbfile::RdbFile::new(args_dbfilename),
        });
        let _ = shared.me.set(Arc::downgrade(&shared));
        // memcached's -D turns `stats detail` on at start.
        shared.set_stats_detail(shared.args.prefix_delimiter.is_some());
        let _ = shared.store.set_key_watcher(Arc::new(KeyNotifier(Arc::downgrade(&shared))));
        // The engine's and persistence's stalls as LATENCY events.
        let events = Arc::new(resp::latency::StallEvents(Arc::clone(&shared.latency)));
        let _ = shared.store.set_stall_watcher(events.clone());
        if let Some(p) = &shared.persist {
            p.set_stall_watcher(events);
        }
        if let Some(dir) = &shared.args.dir {
            let replica = shared.args.replicaof_parts.len() == 2;
            shared.repl.load_state(dir, replica, repl_pos);
        }
        if let Some(payload) = functions {
            // The FUNCTION libraries the log held (amalgam-persist's
            // FUNCTIONS record), loaded as FUNCTION RESTORE FLUSH would.
            scripting::restore_recovered(&shared, &payload)?;
        }
        settings::apply_start(&shared);
        if let Some(loaded) = rdb_loaded {
            rdbfile::after_load(&shared, loaded)?;
        }
        if let [host, port] = &shared.args.replicaof_parts[..] {
            repl::replicaof(&*shared, host.as_bytes(), port.as_bytes()).map_err(|e| format!("--replicaof: {e}"))?;
        }
        Ok(shared)
    }

    /// What the data commands reach, counting into `counters` (a
    /// worker's, or the replication link's own).
    pub fn keyspace<'a>(
        &'a self,
        counters: &'a amalgam_commands::counters::Counters,
    ) -> amalgam_commands::Keyspace<'a> {
        amalgam_commands::Keyspace {
            store: &self.store,
            thresholds: &self.thresholds,
            host: self,
            counters,
            item_size_max: self.args.max_item_size,
            logged: self.persist.is_some(),
            streamed: self.repl.journal_flag(),
            databases: &self.databases,
            notify: &self.notify,
        }
    }

    /// This `Shared` as an `Arc` (None once it is being dropped).
    pub fn arc(&self) -> Option<Arc<Shared>> {
        self.me.get().and_then(std::sync::Weak::upgrade)
    }

    /// The RESP parser's bounds now: bulk strings up to
    /// `proto-max-bulk-len`, never past [`config::RESP_BULK_BYTES_LIMIT`].
    pub fn resp_limits(&self) -> amalgam_protocol::resp::Limits {
        let bulk = self.proto_max_bulk_len.load(Ordering::Relaxed);
        amalgam_protocol::resp::Limits::for_bulk_len(
            usize::try_from(bulk).unwrap_or(usize::MAX).min(config::RESP_BULK_BYTES_LIMIT),
        )
    }

    /// False with `-C`: every CAS reads 0 (config.rs).
    /// `stats detail on|off`: every worker's flag (operator.rs).
    pub fn set_stats_detail(&self, on: bool) {
        for w in &self.workers {
            w.ops.stats_detail.store(on, Ordering::Relaxed);
        }
    }

    pub fn cas_enabled(&self) -> bool {
        !self.args.disable_cas
    }

    /// The CAS a client sees for an item whose CAS is `cas`.
    pub fn visible_cas(&self, cas: u64) -> u64 {
        if self.cas_enabled() {
            cas
        } else {
            0
        }
    }
}
