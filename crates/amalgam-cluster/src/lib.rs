//! # amalgam-cluster: Redis Cluster (issue 38)
//!
//! Many Amalgam nodes run as Redis Cluster runs redis-server nodes, so
//! Redis's tools (`redis-cli --cluster`) and every cluster-aware client
//! work unchanged. Nothing here is a distributed system of Amalgam's own:
//! the key space, the node table, the text forms and the redirections are
//! Redis 7.0's (the cluster specification; `cluster.h`, `cluster.c`).
//!
//! * **Keys to slots** (`slot.rs`): CRC16/XMODEM of the key, or of its
//!   hash tag, mod 16,384.
//! * **The node table** (`node.rs`): each node by its 40-hex-digit name,
//!   with its flags, primary, config epoch, slots and addresses; written
//!   as CLUSTER NODES' lines, which are also `nodes.conf`'s. The file is
//!   rewritten whole after changes to the configuration, through a
//!   temporary file and rename (Redis 7.2's atomic save; 7.0 truncated in
//!   place), so a crash leaves the old or the new file: once per
//!   iteration of the bus thread's loop for what Redis marks
//!   `CLUSTER_TODO_SAVE_CONFIG` (SETSLOT, ADDSLOTS, gossip), at once and
//!   synced for what Redis fsyncs (an epoch changed; [`Cluster::commit`],
//!   [`Cluster::commit_durable`]).
//! * **Routing** ([`Cluster::route`], Redis's `getNodeByQuery`): the RESP
//!   front end gives each command's keys before it runs (and EXEC's whole
//!   queue); the answer is to serve it here or one of Redis's
//!   redirections: `-MOVED slot ip:port`, `-ASK` during a migration,
//!   `-CROSSSLOT`, `-TRYAGAIN`, `-CLUSTERDOWN …`. The common case — every
//!   key in one slot this node serves, the cluster up — reads one bit of
//!   an atomic bitmap ([`Cluster::route`]'s fast path) and takes no lock;
//!   everything else (a slot being migrated, another node's slot, the
//!   cluster down) takes the state's lock.
//! * **The CLUSTER command** (`command.rs`), every subcommand of Redis
//!   7.0 with its replies and error texts, writing RESP through
//!   amalgam-protocol. It knows the store only through [`Host`] (the keys
//!   of a slot, whether this node holds any key).
//! * **Failover** (`failover.rs`): a replica's election and the votes,
//!   manual failover; effects carried out by the bus. **Replica
//!   migration** (`migration.rs`): a replica moves to an orphaned
//!   primary. The options CONFIG SET changes (`options.rs`).
//! * **Sharded Pub/Sub** (`shard.rs`): SPUBLISH's PUBLISHSHARD to the
//!   shard's other nodes, and the slots the shard stops serving.
//! * **CLUSTER LINKS** (`links.rs`): the bus's links as the bus last
//!   listed them.
//! * **The bus** (`msg.rs`, `gossip.rs`, `bus.rs`): Redis 7.0's
//!   `clusterMsg` byte for byte over the bus port, one thread with a mio
//!   poll and a 100 ms cron; the rules (handshake, gossip, slot claims by
//!   config epoch, failure detection) are pure functions of the state
//!   and a message in `gossip.rs`, the I/O in `bus.rs`.
//!
//! ## Where this stands
//! Cluster mode, the bus, CLUSTER's subcommands (CLUSTER LINKS from the
//! bus's real links), the redirections and failover (`failover.rs`:
//! elections, CLUSTER FAILOVER, `cluster-replica-no-failover` and
//! `cluster-replica-validity-factor`), replica migration to orphaned
//! primaries (`migration.rs`, with `cluster-migration-barrier` and
//! `cluster-allow-replica-migration`): Amalgam nodes form a cluster with
//! `redis-cli --cluster create`, alone or beside redis-server 7.0 nodes,
//! detect failures, elect a failed primary's replica, move a replica to
//! an orphaned primary and rejoin; PUBLISH reaches every node's
//! subscribers, SPUBLISH every node of its shard (`shard.rs`, with the
//! shard channels routed as keys and dropped when their slot leaves the
//! shard). The engine counts each slot's keys as it writes (the server
//! asks it to in cluster mode: amalgam-engine's `key_classes.rs`), so
//! COUNTKEYSINSLOT is exact and O(1), GETKEYSINSLOT answers an empty slot
//! without a walk ([`Cluster::keys_in_slot`]), and a primary that loses a
//! slot to a newer claim deletes its keys (`gossip.rs`, Redis's
//! `delKeysInSlot`). Not yet: the bus on TLS (docs/cluster.md keeps the
//! list).
//!
//! ## Cost to a standalone server
//! None: the RESP front end tests one `bool` ([`Cluster::enabled`])
//! before anything here runs.

pub mod bus;
pub mod command;
pub mod failover;
pub mod gossip;
pub mod links;
pub mod migration;
pub mod msg;
pub mod node;
pub mod options;
pub mod shard;
pub mod slot;

use node::{flags, Name, Node};
use slot::{slot_of, SLOTS};
use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// Redis's default `cluster-node-timeout`, milliseconds.
pub const NODE_TIMEOUT_MS_DEFAULT: u64 = 15_000;
/// The bus port is the client port plus this, unless `cluster-port` says
/// otherwise (Redis's `CLUSTER_PORT_INCR`).
pub const PORT_INCR: u16 = 10_000;
/// A primary's state stays down this long after its first computation
/// (Redis's `CLUSTER_WRITABLE_DELAY`).
pub const WRITABLE_DELAY_MS: u64 = 2000;
/// After being in a minority, a primary waits the node timeout, within
/// these bounds, before its state turns ok (`CLUSTER_MIN/MAX_REJOIN_DELAY`).
pub const REJOIN_DELAY_MIN_MS: u64 = 500;
pub const REJOIN_DELAY_MAX_MS: u64 = 5000;
/// Redis's default `cluster-config-file`.
pub const CONFIG_FILE_DEFAULT: &str = "nodes.conf";
/// The most keys CLUSTER GETKEYSINSLOT returns per call (Redis bounds it
/// only by the count given; this bounds the reply's memory).
pub const GETKEYSINSLOT_MAX: usize = 1 << 20;
/// The slot index GETKEYSINSLOT builds is made only for stores of at most
/// this many keys (a copy of each key: a resharding's burst of calls on a
/// larger store walks the table for each call instead).
pub const SLOT_INDEX_KEYS_MAX: usize = 4 << 20;
/// The slot index is dropped once no GETKEYSINSLOT used it for this long.
pub const SLOT_INDEX_IDLE_MS: u64 = 30_000;

/// What the server's options say (redis-server's names).
#[derive(Debug, Clone)]
pub struct Config {
    /// `cluster-enabled`.
    pub enabled: bool,
    /// `cluster-config-file`, resolved against the data directory.
    pub config_file: PathBuf,
    /// `cluster-node-timeout`.
    pub node_timeout_ms: u64,
    /// The RESP port clients use, and the bus port (`cluster-port`, 0:
    /// the RESP port + 10000).
    pub port: u16,
    pub cport: u16,
    /// `cluster-announce-ip`, `-port`, `-bus-port`, `-hostname`.
    pub announce_ip: String,
    pub announce_port: u16,
    pub announce_bus_port: u16,
    pub announce_hostname: String,
    /// `cluster-require-full-coverage` (default yes).
    pub require_full_coverage: bool,
    /// `cluster-allow-reads-when-down` (default no).
    pub allow_reads_when_down: bool,
    /// `cluster-replica-validity-factor`, `cluster-migration-barrier`,
    /// `cluster-allow-replica-migration`, `cluster-replica-no-failover`
    /// at start; CONFIG SET changes them in [`options::Live`].
    pub replica_validity_factor: u64,
    pub migration_barrier: u64,
    pub allow_replica_migration: bool,
    pub replica_no_failover: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            enabled: false,
            config_file: PathBuf::from(CONFIG_FILE_DEFAULT),
            node_timeout_ms: NODE_TIMEOUT_MS_DEFAULT,
            port: 6379,
            cport: 0,
            announce_ip: String::new(),
            announce_port: 0,
            announce_bus_port: 0,
            announce_hostname: String::new(),
            require_full_coverage: true,
            allow_reads_when_down: false,
            replica_validity_factor: options::VALIDITY_FACTOR_DEFAULT,
            migration_barrier: options::MIGRATION_BARRIER_DEFAULT,
            allow_replica_migration: options::ALLOW_REPLICA_MIGRATION_DEFAULT,
            replica_no_failover: options::REPLICA_NO_FAILOVER_DEFAULT,
        }
    }
}

/// What the server gives the cluster of itself.
pub trait Host {
    /// Up to `max` keys of database 0 in `slot`.
    fn keys_in_slot(&self, slot: u16, max: usize) -> Vec<Vec<u8>>;
    /// Every key of database 0, each given to `f`, up to `max` (false:
    /// there were more; nothing is promised about them).
    fn each_key(&self, max: usize, f: &mut dyn FnMut(&[u8])) -> bool;
    /// Whether database 0 holds `key` now.
    fn exists(&self, key: &[u8]) -> bool;
    /// How many keys of database 0 are in `slot`.
    fn count_keys_in_slot(&self, slot: u16) -> u64;
    /// The count of `slot`'s keys if the host keeps one and knows it now
    /// (expired keys not yet deleted included, as Redis's
    /// `countKeysInSlot`): lets GETKEYSINSLOT answer an empty slot without
    /// a walk. None: unknown, walk.
    fn slot_key_count(&self, _slot: u16) -> Option<u64> {
        None
    }
    /// Whether database 0 holds any key (CLUSTER RESET refuses a primary
    /// that does, as Redis).
    fn holds_keys(&self) -> bool;
    /// Replicate the primary at (ip, client port), or stop replicating
    /// and serve as a primary (None): CLUSTER REPLICATE, CLUSTER RESET,
    /// a failover.
    fn follow(&self, primary: Option<(String, u16)>);
    /// The replication offset this node announces.
    fn repl_offset(&self) -> u64;
}

/// The cluster's configuration as this node sees it (Redis's
/// `clusterState`).
#[derive(Debug)]
pub struct State {
    pub myself: Name,
    pub nodes: BTreeMap<Name, Node>,
    pub current_epoch: u64,
    pub last_vote_epoch: u64,
    /// Each slot's owner (Redis's `slots[]`).
    pub owner: Vec<Option<Name>>,
    pub migrating: BTreeMap<u16, Name>,
    pub importing: BTreeMap<u16, Name>,
    /// `cluster_state:ok`.
    pub ok: bool,
    /// Primaries serving at least one slot.
    pub size: usize,
    /// Bus messages sent and received, by type (Redis's 11 types).
    pub sent: [u64; 11],
    pub received: [u64; 11],
    /// When the state was first computed, and when this node last found
    /// itself in a minority (the writable and rejoin delays).
    pub(crate) first_update: u64,
    pub(crate) minority_since: u64,
    /// This replica's election, and a manual failover in progress.
    pub election: failover::Election,
    pub manual: failover::Manual,
    /// What a command asks the bus to send or do (CLUSTER FAILOVER),
    /// taken by the bus thread, which the command wakes.
    pub outbox: Vec<gossip::Effect>,
}

impl State {
    fn fresh(myself: Name) -> State {
        let mut nodes = BTreeMap::new();
        nodes.insert(myself, Node::new(myself, flags::MYSELF | flags::MASTER, now_ms()));
        State {
            myself,
            nodes,
            current_epoch: 0,
            last_vote_epoch: 0,
            owner: vec![None; SLOTS],
            migrating: BTreeMap::new(),
            importing: BTreeMap::new(),
            ok: false,
            // Redis starts at 1 and recomputes it with the state.
            size: 1,
            sent: [0; 11],
            received: [0; 11],
            first_update: 0,
            minority_since: 0,
            election: failover::Election::default(),
            manual: failover::Manual::default(),
            outbox: Vec::new(),
        }
    }

    pub fn me(&self) -> &Node {
        &self.nodes[&self.myself]
    }

    pub fn me_mut(&mut self) -> &mut Node {
        self.nodes.get_mut(&self.myself).expect("myself is always in the table")
    }

    /// Gives `slot` to `to` (Redis's `clusterAddSlot`/`clusterDelSlot`).
    pub fn assign(&mut self, slot: usize, to: Option<Name>) {
        if let Some(old) = self.owner[slot].take() {
            if let Some(n) = self.nodes.get_mut(&old) {
                n.slots.set(slot, false);
            }
        }
        if let Some(new) = to {
            // A primary given its first slot while some primary has a
            // replica is a target for replica migration even without a
            // replica of its own (Redis's `clusterNodeSetSlotBit`, issue
            // 3043: MIGRATE_TO, `migration.rs`).
            let first = self.nodes.get(&new).is_some_and(|n| n.slots.is_empty());
            let replicas_exist = first
                && self.nodes.values().any(|r| {
                    r.is(flags::SLAVE) && r.primary.and_then(|p| self.nodes.get(&p)).is_some_and(Node::is_primary)
                });
            if let Some(n) = self.nodes.get_mut(&new) {
                n.slots.set(slot, true);
                if replicas_exist {
                    n.flags |= flags::MIGRATE_TO;
                }
            }
        }
        self.owner[slot] = to;
    }

    /// The node a client should be sent to for `slot` (`-MOVED`, `-ASK`):
    /// its announced address as Redis writes it (`ip:port`).
    pub fn address(&self, name: &Name) -> String {
        self.nodes.get(name).map_or_else(String::new, |n| format!("{}:{}", n.ip, n.port))
    }

    /// Recomputes `ok` and `size` (Redis's `clusterUpdateState`): the
    /// cluster is down when a slot is unassigned or its owner failed
    /// (under `require_full_coverage`), or when fewer than a majority of
    /// the primaries serving slots are reachable. A primary stays down for
    /// its first [`WRITABLE_DELAY_MS`] (a restarted primary gives the
    /// cluster a chance to reconfigure it first) and, after finding itself
    /// in a minority, for the node timeout clamped to
    /// [`REJOIN_DELAY_MIN_MS`]..[`REJOIN_DELAY_MAX_MS`].
    fn update(&mut self, cfg: &Config, now: u64) {
        if self.first_update == 0 {
            self.first_update = now;
        }
        let primary = self.me().is_primary();
        if primary && !self.ok && now.saturating_sub(self.first_update) < WRITABLE_DELAY_MS {
            return;
        }
        let mut ok = true;
        if cfg.require_full_coverage {
            // Every slot assigned, and no owner failed: the failed nodes'
            // bitmaps, not a lookup per slot.
            ok = self.owner.iter().all(Option::is_some)
                && self.nodes.values().all(|n| !n.is(flags::FAIL) || n.slots.is_empty());
        }
        let serving: Vec<&Node> = self.nodes.values().filter(|n| n.is_primary() && !n.slots.is_empty()).collect();
        self.size = serving.len();
        let reachable = serving.iter().filter(|n| !n.is(flags::FAIL | flags::PFAIL)).count();
        if reachable < self.size / 2 + 1 {
            ok = false;
            self.minority_since = now;
        }
        if ok != self.ok {
            let rejoin = cfg.node_timeout_ms.clamp(REJOIN_DELAY_MIN_MS, REJOIN_DELAY_MAX_MS);
            if ok && primary && now.saturating_sub(self.minority_since) < rejoin {
                return;
            }
            log::warn!("Cluster state changed: {}", if ok { "ok" } else { "fail" });
            self.ok = ok;
        }
    }
}

/// GETKEYSINSLOT's index: each slot's keys when it was built (or last
/// walked), and when it was last used.
#[derive(Debug)]
struct SlotIndex {
    by_slot: std::collections::HashMap<u16, VecDeque<Vec<u8>>>,
    used: u64,
}

impl SlotIndex {
    /// Every key of database 0 under its slot, by one walk; None if the
    /// store holds more than [`SLOT_INDEX_KEYS_MAX`] keys.
    fn build(host: &dyn Host, now: u64) -> Option<SlotIndex> {
        let mut by_slot: std::collections::HashMap<u16, VecDeque<Vec<u8>>> = std::collections::HashMap::new();
        let whole =
            host.each_key(SLOT_INDEX_KEYS_MAX, &mut |k| by_slot.entry(slot_of(k)).or_default().push_back(k.to_vec()));
        whole.then_some(SlotIndex { by_slot, used: now })
    }

    /// Up to `max` of `slot`'s keys still in the store.
    fn take(&mut self, host: &dyn Host, slot: u16, max: usize, now: u64) -> Vec<Vec<u8>> {
        self.used = now;
        let mut out = Vec::new();
        if let Some(list) = self.by_slot.get_mut(&slot) {
            // The front holds what earlier calls returned, which a
            // MIGRATE has usually deleted since: gone keys leave as
            // they are met, so a call costs what it returns plus what
            // it drops, not the slot's length. Bounded by the list.
            let mut i = 0;
            while i < list.len() && out.len() < max {
                if host.exists(&list[i]) {
                    out.push(list[i].clone());
                    i += 1;
                } else {
                    list.remove(i);
                }
            }
        }
        out
    }
}

/// What routing says of a command (Redis's `CLUSTER_REDIR_*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Redirect {
    CrossSlot,
    TryAgain,
    Ask { slot: u16, to: String },
    Moved { slot: u16, to: String },
    Down,
    DownReadOnly,
    Unbound,
}

impl Redirect {
    /// The error line, as Redis's `clusterRedirectClient` writes it.
    pub fn text(&self) -> String {
        match self {
            Redirect::CrossSlot => "CROSSSLOT Keys in request don't hash to the same slot".into(),
            Redirect::TryAgain => "TRYAGAIN Multiple keys request during rehashing of slot".into(),
            Redirect::Down => "CLUSTERDOWN The cluster is down".into(),
            Redirect::DownReadOnly => "CLUSTERDOWN The cluster is down and only accepts read commands".into(),
            Redirect::Unbound => "CLUSTERDOWN Hash slot not served".into(),
            Redirect::Ask { slot, to } => format!("ASK {slot} {to}"),
            Redirect::Moved { slot, to } => format!("MOVED {slot} {to}"),
        }
    }
}

/// What the front end knows of the command being routed.
#[derive(Debug, Clone, Copy, Default)]
pub struct Query {
    /// The command (or, for EXEC, one it queued) writes.
    pub write: bool,
    /// The client said ASKING before it (or the command is RESTORE-ASKING).
    pub asking: bool,
    /// The client said READONLY.
    pub readonly: bool,
    /// MIGRATE: always served here while its slot is open.
    pub migrate: bool,
    /// SSUBSCRIBE, SUNSUBSCRIBE, SPUBLISH: the keys are shard channels
    /// (served while their slot migrates, by a replica of their owner
    /// without READONLY, and while the cluster is down: `shard.rs`).
    pub pubsub_shard: bool,
}

/// The cluster: its options, its state, and the routing bitmap.
#[derive(Debug)]
pub struct Cluster {
    cfg: Config,
    state: Mutex<State>,
    /// GETKEYSINSLOT's index of the keys by slot (`keys_in_slot`).
    index: Mutex<Option<SlotIndex>>,
    /// A change to the configuration not saved yet (Redis's
    /// `CLUSTER_TODO_SAVE_CONFIG`): the bus thread saves it once per
    /// iteration of its loop ([`Cluster::commit`]).
    save_pending: AtomicBool,
    /// Wakes the bus thread (set when it starts): a command put something
    /// in the state's outbox.
    waker: std::sync::OnceLock<mio::Waker>,
    /// Slots this node serves without a question (owned here, not being
    /// migrated): one bit each, rebuilt under the state's lock after
    /// every change and read without it.
    served: Box<[AtomicU64]>,
    /// The cluster's state is ok.
    up: AtomicBool,
    /// The options CONFIG SET changes (`options.rs`).
    live: options::Live,
    /// The bus's links as the bus last listed them (CLUSTER LINKS).
    links: links::LinkTable,
    /// Sharded Pub/Sub: the slots this node's shard served, and what to
    /// do with those it stops serving (`shard.rs`).
    shard: shard::Shard,
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

impl Cluster {
    /// A cluster in memory only (tests, the fuzz target): `cfg` with no
    /// config file, so nothing is saved.
    pub fn in_memory(mut cfg: Config) -> Cluster {
        cfg.config_file = PathBuf::new();
        Cluster::with_state(cfg, State::fresh(node::random_name()))
    }

    /// A disabled cluster (`cluster-enabled no`): nothing is routed.
    pub fn disabled() -> Cluster {
        Cluster::with_state(Config::default(), State::fresh(node::random_name()))
    }

    fn with_state(cfg: Config, state: State) -> Cluster {
        let live = options::Live::new(&cfg);
        let c = Cluster {
            cfg,
            state: Mutex::new(state),
            waker: std::sync::OnceLock::new(),
            index: Mutex::new(None),
            save_pending: AtomicBool::new(false),
            served: (0..SLOTS / 64).map(|_| AtomicU64::new(0)).collect(),
            up: AtomicBool::new(false),
            live,
            links: links::LinkTable::default(),
            shard: shard::Shard::default(),
        };
        {
            let mut s = c.lock();
            c.changed(&mut s);
        }
        c
    }

    /// Starts cluster mode: loads `cfg.config_file` if it exists (a
    /// broken file is an error, as Redis refuses to start), else makes a
    /// new node and writes the file. Redis refuses a config file it
    /// cannot lock or write; so does this.
    pub fn open(cfg: Config) -> Result<Cluster, String> {
        let now = now_ms();
        let state = match std::fs::read_to_string(&cfg.config_file) {
            Ok(text) if !text.trim().is_empty() => {
                let l = node::parse_config(&text, now)?;
                let myself = l.myself.ok_or("Unrecoverable error: corrupted cluster config file: no myself")?;
                let mut s = State::fresh(myself);
                s.nodes.clear();
                s.current_epoch = l.current_epoch;
                s.last_vote_epoch = l.last_vote_epoch;
                for n in l.nodes {
                    s.nodes.insert(n.name, n);
                }
                let names: Vec<Name> = s.nodes.keys().copied().collect();
                for name in names {
                    let owned: Vec<usize> = (0..SLOTS).filter(|&i| s.nodes[&name].slots.has(i)).collect();
                    for i in owned {
                        s.owner[i] = Some(name);
                    }
                }
                s.migrating = l.migrating;
                s.importing = l.importing;
                s
            }
            Ok(_) => State::fresh(node::random_name()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => State::fresh(node::random_name()),
            Err(e) => return Err(format!("Can't open the cluster config file {}: {e}", cfg.config_file.display())),
        };
        let c = Cluster::with_state(cfg, state);
        {
            let mut s = c.lock();
            let me = s.me_mut();
            me.port = c.cfg.announce_port_or_port();
            me.cport = c.cfg.bus_port();
            if !c.cfg.announce_ip.is_empty() {
                me.ip = c.cfg.announce_ip.clone();
            }
            me.hostname = c.cfg.announce_hostname.clone();
            options::sync_myself_flags(&c, &mut s);
            c.save(&s)
                .map_err(|e| format!("Can't write the cluster config file {}: {e}", c.cfg.config_file.display()))?;
        }
        log::info!("Cluster mode: node {} ({})", node::text(&c.lock().myself), c.cfg.config_file.display());
        Ok(c)
    }

    /// Up to `max` keys of `slot` (CLUSTER GETKEYSINSLOT). Redis keeps a
    /// list of keys per slot in cluster mode; Amalgam's table has none, and
    /// a resharding asks for a slot's keys ten at a time, slot after slot,
    /// most of them empty. So:
    /// * the host's count of the slot's keys ([`Host::slot_key_count`],
    ///   the engine's per-slot count kept by its write path) answers an
    ///   empty slot at once;
    /// * otherwise the first call walks the table once and keeps each key
    ///   under its slot ([`SlotIndex`], for stores up to
    ///   [`SLOT_INDEX_KEYS_MAX`] keys); later calls answer from it,
    ///   dropping keys gone since (a MIGRATE deletes what it moved);
    /// * when the index has no live key left for a slot whose count says
    ///   it holds some (keys written into it after the index was built),
    ///   the index is rebuilt by one walk and answers.
    ///
    /// Without a count (the host keeps none, or a FLUSHALL's sweep is
    /// under way) "none left" is never answered from the index: an empty
    /// answer comes from a walk of the table for that slot, as before the
    /// count. The index is dropped after [`SLOT_INDEX_IDLE_MS`] unused.
    pub fn keys_in_slot(&self, host: &dyn Host, slot: u16, max: usize) -> Vec<Vec<u8>> {
        if max == 0 {
            return Vec::new();
        }
        let count = host.slot_key_count(slot);
        if count == Some(0) {
            return Vec::new();
        }
        let now = now_ms();
        let mut guard = self.index.lock().unwrap_or_else(|p| p.into_inner());
        if guard.as_ref().is_some_and(|i| now.saturating_sub(i.used) > SLOT_INDEX_IDLE_MS) {
            *guard = None;
        }
        let mut fresh = false;
        if guard.is_none() {
            *guard = SlotIndex::build(host, now);
            fresh = true;
        }
        let mut out = guard.as_mut().map_or_else(Vec::new, |idx| idx.take(host, slot, max, now));
        if out.is_empty() && count.is_some() && guard.is_some() {
            // The count says keys are there and the index has none: they
            // came after it. One walk rebuilds it for every slot; a fresh
            // index is the walk's answer already.
            if !fresh {
                *guard = SlotIndex::build(host, now);
                out = guard.as_mut().map_or_else(Vec::new, |idx| idx.take(host, slot, max, now));
            }
            if guard.is_some() {
                return out;
            }
        }
        if out.is_empty() {
            out = host.keys_in_slot(slot, max);
            if let Some(idx) = guard.as_mut() {
                if out.len() == max {
                    // More may follow: the walk's keys stand for the slot.
                    idx.by_slot.insert(slot, out.iter().cloned().collect());
                }
            }
        }
        out
    }

    /// Sets the bus thread's waker (once).
    pub fn set_waker(&self, w: mio::Waker) {
        let _ = self.waker.set(w);
    }

    /// Wakes the bus thread to take the outbox.
    pub fn wake(&self) {
        if let Some(w) = self.waker.get() {
            let _ = w.wake();
        }
    }

    /// Sends a PUBLISH to every node the bus links to (PUBLISH on this
    /// node, Redis's `clusterPropagatePublish`): through the outbox, so
    /// the command does not wait for the bus.
    pub fn publish(&self, channel: &[u8], message: &[u8], offset: u64) {
        {
            let mut s = self.lock();
            let m = gossip::publish(self, &mut s, msg::Type::Publish, channel, message, offset);
            s.outbox.push(gossip::Effect::Broadcast(m));
        }
        self.wake();
    }

    /// `cluster-enabled`.
    #[inline(always)]
    pub fn enabled(&self) -> bool {
        self.cfg.enabled
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The state, locked (commands, the bus).
    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// After any change to `s`: recompute the state and the routing
    /// bitmap.
    pub fn changed(&self, s: &mut State) {
        s.update(&self.cfg, now_ms());
        // This node's own bitmap, less the slots it is migrating: 256
        // words, not 16,384 lookups (this runs after every bus message
        // that changes anything).
        // Each word whole before it is stored, so a reader never sees a
        // migrating slot as served.
        let mine = &s.me().slots.0;
        let mut words = [0u64; SLOTS / 64];
        for (w, word) in words.iter_mut().enumerate() {
            *word = u64::from_le_bytes(mine[w * 8..w * 8 + 8].try_into().expect("8 bytes"));
        }
        for &slot in s.migrating.keys() {
            words[slot as usize / 64] &= !(1 << (slot as usize % 64));
        }
        for (word, bits) in self.served.iter().zip(words) {
            word.store(bits, Ordering::Release);
        }
        self.up.store(s.ok, Ordering::Release);
        self.shard.check(s);
    }

    /// Writes nodes.conf: the whole file to a temporary beside it, then
    /// renamed over the old one, so a crash of this process leaves one
    /// or the other; with `fsync`, the file and its directory are synced
    /// first (Redis's `clusterSaveConfig(do_fsync)`).
    pub fn save_with(&self, s: &State, fsync: bool) -> std::io::Result<()> {
        use std::io::Write;
        if self.cfg.config_file.as_os_str().is_empty() {
            return Ok(());
        }
        let mut text = command::nodes_text(s, true);
        text.push_str(&format!("vars currentEpoch {} lastVoteEpoch {}\n", s.current_epoch, s.last_vote_epoch));
        let path = &self.cfg.config_file;
        let tmp = path.with_extension("tmp-amalgam");
        {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(text.as_bytes())?;
            if fsync {
                f.sync_all()?;
            }
        }
        std::fs::rename(&tmp, path)?;
        if fsync {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                if let Ok(d) = std::fs::File::open(dir) {
                    let _ = d.sync_all();
                }
            }
        }
        Ok(())
    }

    /// [`Cluster::save_with`], synced: CLUSTER SAVECONFIG, the start.
    pub fn save(&self, s: &State) -> std::io::Result<()> {
        self.save_with(s, true)
    }

    /// [`Cluster::changed`], and the change marked for a save without
    /// fsync, as Redis marks ADDSLOTS, SETSLOT, MEET or gossip
    /// (`CLUSTER_TODO_SAVE_CONFIG`) and saves once before its event loop
    /// sleeps (`clusterBeforeSleep`). Here the bus thread is that loop: a
    /// commit wakes it, and it saves once per iteration
    /// ([`Cluster::save_if_pending`]), so a burst of changes (a
    /// resharding's SETSLOTs, a round of gossip) costs one save, off the
    /// command's path. Without a bus (tests, before it starts) the save is
    /// made at once. A failed save is logged (Redis exits on a failed
    /// `clusterSaveConfigOrDie`; the configuration in memory stays right,
    /// and the next change retries).
    pub fn commit(&self, s: &mut State) {
        self.changed(s);
        if self.waker.get().is_some() {
            if !self.save_pending.swap(true, Ordering::AcqRel) {
                self.wake();
            }
        } else {
            self.save_logged(s, false);
        }
    }

    /// [`Cluster::commit`] with fsync, at once, before the command answers:
    /// what an epoch changed (a config epoch set or bumped, a collision, a
    /// vote), which Redis syncs (`CLUSTER_TODO_FSYNC_CONFIG`) before its
    /// replies go out. It carries any change still pending.
    pub fn commit_durable(&self, s: &mut State) {
        self.changed(s);
        self.save_pending.store(false, Ordering::Release);
        self.save_logged(s, true);
    }

    /// Saves a pending change, if any (the bus thread, once per iteration
    /// of its loop; also before a shutdown).
    pub fn save_if_pending(&self) {
        if self.save_pending.swap(false, Ordering::AcqRel) {
            let s = self.lock();
            self.save_logged(&s, false);
        }
    }

    fn save_logged(&self, s: &State, fsync: bool) {
        if let Err(e) = self.save_with(s, fsync) {
            log::warn!("Could not save the cluster config file {}: {e}", self.cfg.config_file.display());
        }
    }

    /// Where a command on `keys` runs (Redis's `getNodeByQuery`): Ok to
    /// run it here, or the redirection to answer. `exists` tells whether
    /// a key is here (the `-ASK`/`-TRYAGAIN` decisions while a slot
    /// moves). A command without keys always runs here.
    #[inline]
    pub fn route(&self, keys: &[&[u8]], q: Query, exists: impl Fn(&[u8]) -> bool) -> Result<(), Redirect> {
        if keys.is_empty() || self.serves_keys(keys) {
            return Ok(());
        }
        self.route_slow(keys, q, exists)
    }

    /// The common case, without a lock: the cluster is up and every key
    /// is in one slot this node serves (also the RESP front end's test
    /// for batching a command in cluster mode). `keys` is not empty.
    #[inline]
    pub fn serves_keys<K: AsRef<[u8]>>(&self, keys: &[K]) -> bool {
        let slot = slot_of(keys[0].as_ref());
        self.is_up() && self.serves(slot) && keys[1..].iter().all(|k| slot_of(k.as_ref()) == slot)
    }

    /// Whether the cluster's state is ok.
    #[inline(always)]
    pub fn is_up(&self) -> bool {
        self.up.load(Ordering::Acquire)
    }

    /// Whether this node serves `slot` without a question.
    #[inline(always)]
    pub fn serves(&self, slot: u16) -> bool {
        let s = slot as usize;
        self.served[s / 64].load(Ordering::Acquire) & (1 << (s % 64)) != 0
    }

    #[cold]
    #[inline(never)]
    fn route_slow(&self, keys: &[&[u8]], q: Query, exists: impl Fn(&[u8]) -> bool) -> Result<(), Redirect> {
        let s = self.lock();
        let slot = slot_of(keys[0]);
        let mut several = false;
        for k in &keys[1..] {
            if *k != keys[0] {
                if slot_of(k) != slot {
                    return Err(Redirect::CrossSlot);
                }
                several = true;
            }
        }
        let Some(owner) = s.owner[slot as usize] else { return Err(Redirect::Unbound) };
        let migrating = owner == s.myself && s.migrating.contains_key(&slot);
        let importing = !migrating && s.importing.contains_key(&slot);
        let (mut missing, mut present) = (0, 0);
        // A shard channel is served by the source until the migration
        // ends (Redis does not look it up).
        if (migrating || importing) && !q.pubsub_shard {
            for k in keys {
                if exists(k) {
                    present += 1;
                } else {
                    missing += 1;
                }
            }
        }
        let served_when_down = q.pubsub_shard && shard::ALLOW_PUBSUBSHARD_WHEN_DOWN;
        if !s.ok && !served_when_down {
            if !self.cfg.allow_reads_when_down {
                return Err(Redirect::Down);
            } else if q.write {
                return Err(Redirect::DownReadOnly);
            }
        }
        if (migrating || importing) && q.migrate {
            return Ok(());
        }
        if migrating && missing > 0 {
            if present > 0 {
                return Err(Redirect::TryAgain);
            }
            // Sent to the target, unless that is this node (Redis's
            // processCommand serves what getNodeByQuery names as myself).
            let to = s.migrating[&slot];
            if to == s.myself {
                return Ok(());
            }
            return Err(Redirect::Ask { slot, to: s.address(&to) });
        }
        if importing && q.asking {
            if several && missing > 0 {
                return Err(Redirect::TryAgain);
            }
            return Ok(());
        }
        let me = s.me();
        if (q.readonly || q.pubsub_shard) && !q.write && me.is(flags::SLAVE) && me.primary == Some(owner) {
            return Ok(());
        }
        if owner != s.myself {
            return Err(Redirect::Moved { slot, to: s.address(&owner) });
        }
        Ok(())
    }
}

impl Config {
    /// The client port this node announces.
    pub fn announce_port_or_port(&self) -> u16 {
        if self.announce_port != 0 {
            self.announce_port
        } else {
            self.port
        }
    }

    /// The bus port this node listens on.
    pub fn listen_bus_port(&self) -> u16 {
        if self.cport != 0 {
            self.cport
        } else {
            self.port.wrapping_add(PORT_INCR)
        }
    }

    /// The bus port it announces.
    pub fn bus_port(&self) -> u16 {
        if self.announce_bus_port != 0 {
            self.announce_bus_port
        } else {
            self.listen_bus_port()
        }
    }
}
