//! Command-line configuration: memcached's flags and defaults, so Amalgam
//! drops in where memcached runs.

use clap::{CommandFactory, FromArgMatches, Parser};

/// What `--version` (`-V`, memcached's) prints after the program's name.
pub const VERSION_LONG: &str = concat!(env!("CARGO_PKG_VERSION"), " (git ", env!("AMALGAM_GIT_SHA1"), ")");

/// Redis's `databases` default, and the most (one engine namespace each).
pub use amalgam_commands::db::{DATABASES_DEFAULT, DATABASES_MAX};

/// `--dbfilename`: a file name, as Redis's `dbfilename` (no path).
pub fn parse_dbfilename(s: &str) -> Result<String, String> {
    if s.is_empty() || s.contains('/') || s == "." || s == ".." {
        return Err("dbfilename can't be a path, just a filename".into());
    }
    Ok(s.to_string())
}

/// `--databases`: 1 to [`DATABASES_MAX`].
fn parse_databases(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=DATABASES_MAX).contains(&n) => Ok(n),
        _ => Err(format!("--databases: {s:?} is not a number of databases (1 to {DATABASES_MAX})")),
    }
}

/// memcached's default TCP port.
pub const PORT_DEFAULT: u16 = 11211;
/// Redis's default TCP port, where the RESP listener goes by default.
pub const RESP_PORT_DEFAULT: u16 = 6379;
/// memcached's default connection limit (`-c`).
pub const CONNECTIONS_MAX_DEFAULT: usize = 1024;
/// memcached's default memory limit in megabytes (`-m`).
pub const MEMORY_LIMIT_MB_DEFAULT: usize = 64;
/// Largest `-m`: 2^44 bytes (16 TiB) in megabytes, above any machine's
/// memory and below what the address arithmetic could overflow.
pub const MEMORY_LIMIT_MB_MAX: usize = 1 << 24;
/// `--memory-limit-max`'s default, as a multiple of `-m`: room to raise
/// CONFIG SET maxmemory fourfold, for 4 × 80 bytes of side tables per
/// MiB of `-m` (segment headers and lists, `amalgam_engine::Segments`).
pub const MEMORY_LIMIT_MAX_FACTOR_DEFAULT: usize = 4;
/// Smallest and largest `-I` memcached accepts.
pub const ITEM_SIZE_MAX_BYTES_MIN: usize = 1024;
pub const ITEM_SIZE_MAX_BYTES_MAX: usize = 1 << 30;
/// Redis's default `proto-max-bulk-len`: the longest RESP bulk string
/// (a string value) accepted, 512 MB.
pub const PROTO_MAX_BULK_LEN_DEFAULT: u64 = 512 << 20;
/// Smallest `proto-max-bulk-len` Redis 7.0 accepts (1 MB).
pub const PROTO_MAX_BULK_LEN_MIN: u64 = 1 << 20;
/// Largest `proto-max-bulk-len` Redis 7.0 accepts (`LONG_MAX`).
pub const PROTO_MAX_BULK_LEN_MAX: u64 = i64::MAX as u64;
/// The longest bulk string Amalgam reads whatever `proto-max-bulk-len`
/// says: the engine's largest value (its value length is 32 bits, and
/// Redis's own `client-query-buffer-limit`, 1 GiB, stops a larger one).
pub const RESP_BULK_BYTES_LIMIT: usize = amalgam_engine::ITEM_SIZE_MAX_BYTES_LIMIT;
const _: () = assert!(PROTO_MAX_BULK_LEN_DEFAULT as usize <= RESP_BULK_BYTES_LIMIT);
/// `--snapshot-every` default: Redis's `save 300 10` interval.
pub const SNAPSHOT_EVERY_SECONDS_DEFAULT: u64 = 300;
/// `--snapshot-after-writes` default: enough that a snapshot costs little
/// next to the writes, few enough that the log stays about that long.
pub const SNAPSHOT_AFTER_WRITES_DEFAULT: u64 = 1_000_000;
/// Most worker threads accepted.
pub const THREADS_MAX: usize = 256;

/// Amalgam: an in-memory key-value store and cache speaking memcached's
/// protocol (Mercury's hash table, MemC3's optimistic reads, MICA's
/// batching).
#[derive(Parser, Debug, Clone)]
// args_override_self: a repeated flag takes its last value, as memcached's
// getopt loop does (wrappers append to a base command line).
#[command(name = "amalgam", version = VERSION_LONG, about, long_about = None, disable_help_flag = true, args_override_self = true)]
pub struct Args {
    /// TCP port to listen on (memcached's -p).
    #[arg(short = 'p', long = "port", alias = "memcached-port", default_value_t = PORT_DEFAULT)]
    pub port: u16,

    /// TCP port for Redis's protocol (RESP2/RESP3) on the same address and
    /// workers, over the same keys; 0 turns it off. Default 6379; when it
    /// is left at the default and 6379 is taken (a Redis, another
    /// Amalgam), a warning says so and memcached's protocol is served
    /// alone. A port given here that cannot be bound stops the start.
    #[arg(long = "resp-port", default_value_t = RESP_PORT_DEFAULT)]
    pub resp_port: u16,

    /// True if `--resp-port` was on the command line (set by [`Args::parse_all`]).
    #[arg(skip)]
    pub resp_port_explicit: bool,

    /// TCP port for Prometheus's scrapes (`GET /metrics`, the text
    /// exposition format) on the same address (`-l`); 0, the default,
    /// turns it off. Served by a thread of its own, never by a worker.
    #[arg(long = "metrics-port", default_value_t = 0)]
    pub metrics_port: u16,

    /// Interface to listen on (memcached's -l). The default serves this
    /// machine only; give 0.0.0.0 to serve the network.
    #[arg(short = 'l', long = "listen", default_value = "127.0.0.1")]
    pub listen: String,

    /// Worker threads, each with its own event loop (memcached's -t).
    /// Default: the number of cores.
    #[arg(short = 't', long = "threads")]
    pub threads: Option<usize>,

    /// Memory in megabytes (memcached's -m). In cache mode it covers the
    /// items and the index (S3-FIFO's ghost, 1/32 of it, comes on top);
    /// with --eviction none it bounds item memory and the index is extra.
    #[arg(short = 'm', long = "memory-limit", default_value_t = MEMORY_LIMIT_MB_DEFAULT,
          allow_hyphen_values = true, value_parser = parse_megabytes)]
    pub memory_limit_mb: usize,

    /// Cache mode: the most CONFIG SET maxmemory may raise -m to, in
    /// megabytes (address space reserved at start, no memory used until
    /// the limit lets it be). Default: four times -m, capped at the
    /// machine's memory (and never below -m). Store mode (--eviction none)
    /// takes any maxmemory and ignores this.
    #[arg(long = "memory-limit-max", value_parser = parse_megabytes)]
    pub memory_limit_max_mb: Option<usize>,

    /// Simultaneous connections (memcached's -c); more are answered
    /// "ERROR Too many open connections" and closed.
    #[arg(short = 'c', long = "conn-limit", default_value_t = CONNECTIONS_MAX_DEFAULT)]
    pub conn_limit: usize,

    /// What a full cache does: evict with s3fifo (S3-FIFO, SOSP '23; the
    /// default) or clock (MemC3's CLOCK), or none: refuse with
    /// "SERVER_ERROR out of memory storing object" (memcached's -M).
    #[arg(long = "eviction", default_value = "s3fifo")]
    pub eviction: amalgam_engine::evict::Eviction,

    /// Redis's maxmemory-policy: which keys a full cache evicts (allkeys-*:
    /// any; volatile-*: only keys with a TTL, volatile-ttl the soonest to
    /// expire first), ranked by --eviction's policy; noeviction is store
    /// mode (as --eviction none). Default: noeviction with --eviction
    /// none, else allkeys-lru. Changed at run time by CONFIG SET
    /// maxmemory-policy, except to or from noeviction.
    #[arg(long = "maxmemory-policy")]
    pub maxmemory_policy: Option<amalgam_commands::object::MaxmemoryPolicy>,

    /// Cache mode: before evicting, free dead space by merging runs of
    /// mostly-dead segments (dead versions of overwritten keys) into one
    /// segment in their place, keeping their order. Holds more live items
    /// under overwrite-heavy loads. On by default; --merge-segments=false
    /// evicts only.
    #[arg(
        long = "merge-segments",
        action = clap::ArgAction::Set,
        num_args = 0..=1,
        default_value_t = true,
        default_missing_value = "true",
        value_name = "true|false"
    )]
    pub merge_segments: bool,

    /// Largest item: key, value and header (memcached's -I), in bytes or
    /// with a k or m suffix: 1m, 512k.
    #[arg(short = 'I', long = "max-item-size", default_value = "1m", value_parser = parse_size)]
    pub max_item_size: usize,

    /// Longest RESP bulk string, so longest string value, over the RESP
    /// port (Redis's proto-max-bulk-len; bytes or a memory value: 512mb,
    /// 1gb). Also settable with CONFIG SET. Values past 1 GiB are refused
    /// whatever this says. memcached's port keeps -I.
    #[arg(long = "proto-max-bulk-len", default_value = "536870912", value_parser = parse_proto_max_bulk_len)]
    pub proto_max_bulk_len: u64,

    /// Redis's numbered databases (SELECT 0 to this less one): Redis's
    /// `databases`, 1 to 256 (one engine namespace each). The memcached
    /// port serves database 0.
    #[arg(long = "databases", default_value_t = DATABASES_DEFAULT, value_parser = parse_databases)]
    pub databases: usize,

    /// A pub/sub subscriber whose unsent messages pass this many bytes is
    /// disconnected (Redis's `client-output-buffer-limit pubsub` hard
    /// limit, 32mb; bytes or with a k or m suffix; 0: no limit).
    #[arg(long = "client-output-buffer-limit-pubsub", default_value = "32m", value_parser = parse_size)]
    pub client_output_buffer_limit_pubsub: usize,

    /// Follow the primary at HOST PORT (its RESP port) as a read-only
    /// replica (Redis's `replicaof`; REPLICAOF changes it at run time).
    #[arg(long = "replicaof", alias = "slaveof", num_args = 2, value_names = ["HOST", "PORT"], value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub replicaof_parts: Vec<String>,

    /// The replication backlog: stream bytes kept for replicas that
    /// reconnect (Redis's `repl-backlog-size`: a Redis memory value, e.g.
    /// 1048576, 512kb, 10mb; at least 16kb).
    #[arg(long = "repl-backlog-size", default_value = "1mb", value_parser = parse_memory)]
    pub repl_backlog_size: usize,

    /// Redis Cluster mode (`cluster-enabled`, issue 38: amalgam-cluster).
    #[arg(long = "cluster-enabled", default_value = "no", value_parser = parse_yes_no, action = clap::ArgAction::Set, value_name = "yes|no")]
    pub cluster_enabled: bool,

    /// The cluster's node table, written by the node (Redis's
    /// `cluster-config-file`; in --dir when given).
    #[arg(long = "cluster-config-file", default_value = "nodes.conf")]
    pub cluster_config_file: std::path::PathBuf,

    /// Milliseconds a node may be unreachable before it is failing
    /// (Redis's `cluster-node-timeout`).
    #[arg(long = "cluster-node-timeout", default_value_t = 15000)]
    pub cluster_node_timeout: u64,

    /// The cluster bus port (Redis's `cluster-port`; 0: the RESP port +
    /// 10000).
    #[arg(long = "cluster-port", default_value_t = 0)]
    pub cluster_port: u16,

    /// The address, client port, bus port and hostname this node
    /// announces to clients and other nodes (Redis's
    /// `cluster-announce-*`; empty or 0: its own).
    #[arg(long = "cluster-announce-ip", default_value = "")]
    pub cluster_announce_ip: String,
    #[arg(long = "cluster-announce-port", default_value_t = 0)]
    pub cluster_announce_port: u16,
    #[arg(long = "cluster-announce-bus-port", default_value_t = 0)]
    pub cluster_announce_bus_port: u16,
    #[arg(long = "cluster-announce-hostname", default_value = "")]
    pub cluster_announce_hostname: String,

    /// Whether the cluster stops serving while any slot is unserved
    /// (Redis's `cluster-require-full-coverage`).
    #[arg(long = "cluster-require-full-coverage", default_value = "yes", value_parser = parse_yes_no, action = clap::ArgAction::Set, value_name = "yes|no")]
    pub cluster_require_full_coverage: bool,

    /// Whether a node of a cluster that is down still serves reads
    /// (Redis's `cluster-allow-reads-when-down`).
    #[arg(long = "cluster-allow-reads-when-down", default_value = "no", value_parser = parse_yes_no, action = clap::ArgAction::Set, value_name = "yes|no")]
    pub cluster_allow_reads_when_down: bool,

    /// How old a replica's data may be, in node timeouts (plus the
    /// replication ping period), for it to stand in a failover election;
    /// 0: any age (Redis's `cluster-replica-validity-factor`, alias
    /// `cluster-slave-validity-factor`).
    #[arg(long = "cluster-replica-validity-factor", alias = "cluster-slave-validity-factor", default_value_t = 10, value_parser = clap::value_parser!(u64).range(0..=i32::MAX as u64))]
    pub cluster_replica_validity_factor: u64,

    /// A replica migrates to an orphaned primary only if its own keeps
    /// more working replicas than this (Redis's
    /// `cluster-migration-barrier`).
    #[arg(long = "cluster-migration-barrier", default_value_t = 1, value_parser = clap::value_parser!(u64).range(0..=i32::MAX as u64))]
    pub cluster_migration_barrier: u64,

    /// Whether replicas migrate to orphaned primaries, and a primary left
    /// without slots replicates the node that took them (Redis's
    /// `cluster-allow-replica-migration`).
    #[arg(long = "cluster-allow-replica-migration", default_value = "yes", value_parser = parse_yes_no, action = clap::ArgAction::Set, value_name = "yes|no")]
    pub cluster_allow_replica_migration: bool,

    /// A replica that never starts a failover election of its own
    /// (CLUSTER FAILOVER still works; Redis's
    /// `cluster-replica-no-failover`, alias `cluster-slave-no-failover`).
    #[arg(long = "cluster-replica-no-failover", alias = "cluster-slave-no-failover", default_value = "no", value_parser = parse_yes_no, action = clap::ArgAction::Set, value_name = "yes|no")]
    pub cluster_replica_no_failover: bool,

    /// UDP port (memcached's -U). Only 0 (UDP off) is supported.
    #[arg(short = 'U', long = "udp-port", default_value_t = 0)]
    pub udp_port: u16,

    /// Persistence: keep an append-only log and snapshots in this
    /// directory and recover from it at start-up (off when not given).
    #[arg(long = "dir")]
    pub dir: Option<std::path::PathBuf>,

    /// Redis's dbfilename: a Redis RDB file in --dir. At start, when --dir
    /// holds no Amalgam state (no snapshot, no log records), dump.rdb (or
    /// this name) is loaded if it exists; given (here, in the config file
    /// or by CONFIG SET), SAVE and BGSAVE also write it as an RDB file
    /// that redis-server loads. A file name, not a path.
    #[arg(long = "dbfilename", value_name = "NAME", value_parser = parse_dbfilename)]
    pub dbfilename: Option<String>,

    /// What a key of the RDB file loaded at start that Amalgam cannot load
    /// does: stop (the start fails naming the key and its type, as Redis
    /// would) or skip (it is left out, with a log line).
    #[arg(long = "rdb-unloadable", default_value = "stop", value_parser = ["stop", "skip"])]
    pub rdb_unloadable: String,

    /// With --dir: when the log reaches the disk. always: before a write is
    /// acknowledged (one fsync covers every write that arrived meanwhile);
    /// everysec: written before the reply, fsynced every second; no: written
    /// before the reply, fsynced by the OS.
    #[arg(long = "fsync", default_value = "everysec")]
    pub fsync: amalgam_persist::Fsync,

    /// With --dir: write a snapshot this many seconds after the last if
    /// anything changed (0: never by time). Snapshots bound the log.
    #[arg(long = "snapshot-every", default_value_t = SNAPSHOT_EVERY_SECONDS_DEFAULT)]
    pub snapshot_every: u64,

    /// With --dir: write a snapshot after this many changes (0: never by
    /// count).
    #[arg(long = "snapshot-after-writes", default_value_t = SNAPSHOT_AFTER_WRITES_DEFAULT)]
    pub snapshot_after_writes: u64,

    /// With --dir: the share of one core (1-100 percent) a background
    /// snapshot may use; it sleeps between steps to stay under it, so
    /// serving goes on at nearly full speed. 100: as fast as it can. SAVE
    /// always runs at full speed.
    #[arg(long = "snapshot-cpu-percent", default_value_t = amalgam_persist::SNAPSHOT_CPU_PERCENT_DEFAULT,
          value_parser = clap::value_parser!(u32).range(1..=100))]
    pub snapshot_cpu_percent: u32,

    /// Verbose logging to stderr; repeat for more (memcached's -v: Redis's
    /// loglevel verbose; -vv, -vvv: debug).
    #[arg(short = 'v', action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// Redis's loglevel: warning, notice (the default), verbose or debug.
    /// With -v too, the more verbose of the two. Also CONFIG SET loglevel.
    #[arg(long = "loglevel", value_parser = crate::logging::parse_level_arg, value_name = "LEVEL")]
    pub loglevel: Option<String>,

    /// Allow the `shutdown` command (memcached's -A); without it
    /// `shutdown` answers "ERROR: shutdown not enabled".
    #[arg(short = 'A', long = "enable-shutdown")]
    pub enable_shutdown: bool,

    /// Refuse flush_all with "CLIENT_ERROR flush_all not allowed"
    /// (memcached's -F).
    #[arg(short = 'F', long = "disable-flush-all")]
    pub disable_flush_all: bool,

    /// No CAS (memcached's -C): every item's CAS reads 0 (gets, gats, mg
    /// c, me), so `cas` and `ms ... C` answer EXISTS when the key exists,
    /// and `ms ... E` is refused. Items still carry their CAS internally.
    #[arg(short = 'C', long = "disable-cas")]
    pub disable_cas: bool,

    /// memcached's extended options, comma-separated and repeatable
    /// (`-o modern,track_sizes`). See `ExtendedOption` for which are
    /// honoured, accepted and ignored, or refused.
    #[arg(short = 'o', long = "extended", value_name = "opt[,opt...]")]
    pub extended: Vec<String>,

    /// Refuse `lru_crawler metadump` with "ERROR metadump not allowed"
    /// (memcached's -X).
    #[arg(short = 'X', long = "disable-dumping")]
    pub disable_dumping: bool,

    /// Refuse to evict when full (memcached's -M): the same as
    /// `--eviction none`.
    #[arg(short = 'M', long = "disable-evictions")]
    pub disable_evictions: bool,

    /// memcached's -k (lock all memory with mlockall): accepted with a
    /// warning; Amalgam does not lock its memory.
    #[arg(short = 'k', long = "lock-memory")]
    pub lock_memory: bool,

    /// memcached's tuning flags with no counterpart in Amalgam, accepted
    /// and ignored so its command lines start unchanged: -r (core file
    /// limit), -L (large pages: the engine puts large budgets on
    /// hugepages by itself), -R (requests per event: a connection's turn
    /// is bounded by ROUNDS_PER_TURN_MAX), -b (listen backlog: 1024, as
    /// memcached's default), -f and -n (slab growth factor and minimum
    /// size: there are no slabs).
    #[arg(short = 'r', long = "enable-coredumps", hide = true)]
    pub ignored_coredumps: bool,
    #[arg(short = 'L', long = "enable-largepages", hide = true)]
    pub ignored_largepages: bool,
    #[arg(short = 'R', long = "max-reqs-per-event", hide = true)]
    pub ignored_reqs_per_event: Option<u32>,
    #[arg(short = 'b', long = "listen-backlog", hide = true)]
    pub ignored_backlog: Option<u32>,
    #[arg(short = 'f', long = "slab-growth-factor", hide = true)]
    pub ignored_growth_factor: Option<f64>,
    #[arg(short = 'n', long = "slab-min-size", hide = true)]
    pub ignored_slab_min_size: Option<u32>,

    /// memcached's -B: which protocol the memcached port speaks: `auto`
    /// (the default: a connection's first byte decides, 0x80 binary),
    /// `ascii` (binary requests are read as text, as memcached reads
    /// them) or `binary` (text is read as binary: refused and closed).
    /// Checked with memcached's text and exit status
    /// (validate_memcached).
    #[arg(short = 'B', long = "protocol", value_name = "ascii|binary|auto")]
    pub protocol: Option<String>,

    /// memcached's -D: the delimiter between a key's prefix and the rest
    /// for `stats detail` (its first character; default ':'). Given,
    /// it turns `stats detail` on at start, as in memcached.
    #[arg(short = 'D', value_name = "char")]
    pub prefix_delimiter: Option<String>,

    /// memcached's -W: `watch` answers "CLIENT_ERROR watch commands not
    /// allowed".
    #[arg(short = 'W', long = "disable-watch")]
    pub disable_watch: bool,

    /// memcached's -s: a unix socket to listen on instead of TCP. Not
    /// served yet: the start fails with a message saying so.
    #[arg(short = 's', long = "unix-socket", value_name = "file")]
    pub unix_socket: Option<std::path::PathBuf>,

    /// memcached's -a: the unix socket's access mask, in octal (default
    /// 700); shown in `stats settings` (`umask`).
    #[arg(short = 'a', long = "unix-mask", value_name = "mask", default_value = "700")]
    pub unix_mask: String,

    /// memcached's -S (SASL, binary protocol only): not supported; the
    /// start fails with a message that names -Y, memcached's ASCII
    /// authentication, instead (serving without the authentication the
    /// operator asked for would be worse than not starting).
    #[arg(short = 'S', long = "enable-sasl")]
    pub enable_sasl: bool,

    /// memcached's -e (a memory file that makes the cache restartable):
    /// a file that cannot be opened stops the start with memcached's text;
    /// otherwise accepted with a warning: Amalgam keeps its items in
    /// anonymous memory, so a restart starts empty (--dir keeps them).
    #[arg(short = 'e', long = "memory-file", value_name = "file")]
    pub memory_file: Option<std::path::PathBuf>,

    /// memcached's -i: prints the license and exits.
    #[arg(short = 'i', long = "license")]
    pub license: bool,

    /// memcached's -N (NAPI ids for receive-queue steering): accepted and
    /// ignored with a warning; the acceptor spreads connections itself.
    #[arg(short = 'N', long = "napi_ids", value_name = "num", hide = true)]
    pub napi_ids: Option<u32>,

    /// Run in the background (memcached's -d): the command returns once
    /// the server listens, or fails with the reason if it could not start.
    #[arg(short = 'd', long = "daemon")]
    pub daemon: bool,

    /// Write the server's pid to this file (memcached's -P); with -d it
    /// is removed again at a clean exit.
    #[arg(short = 'P', long = "pidfile")]
    pub pidfile: Option<std::path::PathBuf>,

    /// memcached's -u (the user to run as when started as root). Accepted
    /// so memcached's command lines run; Amalgam does not switch users
    /// (start it as the user it should run as).
    #[arg(short = 'u', long = "user")]
    pub user: Option<String>,

    /// Redis's requirepass: the RESP port's `default` user needs this
    /// password (AUTH, HELLO AUTH); every other command answers NOAUTH
    /// until then. Also CONFIG SET requirepass.
    #[arg(long = "requirepass", value_name = "PASSWORD")]
    pub requirepass: Option<String>,

    /// Redis's protected-mode: while the `default` user has no password,
    /// RESP clients from other machines are answered -DENIED and closed.
    /// On by default, as in Redis; `--protected-mode no` turns it off.
    #[arg(long = "protected-mode", default_value = "yes", value_parser = parse_yes_no, action = clap::ArgAction::Set, value_name = "yes|no")]
    pub protected_mode: bool,

    /// Redis's `timeout`: a client idle this many seconds is closed (0,
    /// the default: never); blocked clients and subscribers are not, as in
    /// Redis. memcached's `-o idle_timeout=N` sets the same. CONFIG SET
    /// timeout changes it at run time.
    #[arg(long = "timeout", value_name = "SECONDS")]
    pub timeout: Option<u64>,

    /// Redis's enable-debug-command: who may run DEBUG (`resp/debug.rs`):
    /// `no` (the default, as in Redis), `yes`, or `local` (loopback
    /// clients only).
    #[arg(long = "enable-debug-command", default_value = "no", value_parser = ["no", "yes", "local"], value_name = "no|yes|local")]
    pub enable_debug_command: String,

    /// Redis's aclfile: ACL users are loaded from it at start-up (lines
    /// `user <name> <rules>`), and ACL SAVE and ACL LOAD use it.
    #[arg(long = "aclfile", value_name = "FILE")]
    pub aclfile: Option<std::path::PathBuf>,

    /// memcached's -Y: an auth file of `user:password` lines. Each
    /// memcached-port connection must first send
    /// `set <any> 0 0 <len>` with `user password` as its data; every other
    /// command answers "CLIENT_ERROR unauthenticated" until then, and the
    /// binary protocol is off, as in memcached.
    #[arg(short = 'Y', long = "auth-file", value_name = "FILE")]
    pub auth_file: Option<std::path::PathBuf>,

    // TLS (tls.rs): memcached's flags, then Redis's. One certificate, key
    // and CA serve both ports; each port has its own client policy.
    /// memcached's -Z: the memcached port (-p) speaks TLS only. Needs a
    /// certificate: `-o ssl_chain_cert=FILE,ssl_key=FILE` (or the long
    /// flags below, or --tls-cert-file/--tls-key-file).
    #[arg(short = 'Z', long = "enable-ssl")]
    pub enable_ssl: bool,
    /// memcached's `-o ssl_chain_cert`: the certificate chain (PEM).
    #[arg(long = "ssl-chain-cert", value_name = "FILE")]
    pub ssl_chain_cert: Option<std::path::PathBuf>,
    /// memcached's `-o ssl_key`: the private key (PEM); defaults to the
    /// chain file.
    #[arg(long = "ssl-key", value_name = "FILE")]
    pub ssl_key: Option<std::path::PathBuf>,
    /// memcached's `-o ssl_ca_cert`: CA certificates (PEM) for client
    /// certificates.
    #[arg(long = "ssl-ca-cert", value_name = "FILE")]
    pub ssl_ca_cert: Option<std::path::PathBuf>,
    /// memcached's `-o ssl_verify_mode`: client certificates on the
    /// memcached port: 0 none (default), 1 request, 2 require, 3 once.
    #[arg(long = "ssl-verify-mode", value_name = "0-3")]
    pub ssl_verify_mode: Option<String>,
    /// Redis's tls-port: a TLS RESP listener on this port (0, the
    /// default: none); --resp-port still serves plain RESP (0 turns it off).
    #[arg(long = "tls-port", default_value_t = 0)]
    pub tls_port: u16,
    /// Redis's tls-cert-file (the same as ssl_chain_cert).
    #[arg(long = "tls-cert-file", value_name = "FILE")]
    pub tls_cert_file: Option<std::path::PathBuf>,
    /// Redis's tls-key-file (the same as ssl_key).
    #[arg(long = "tls-key-file", value_name = "FILE")]
    pub tls_key_file: Option<std::path::PathBuf>,
    /// Redis's tls-ca-cert-file (the same as ssl_ca_cert).
    #[arg(long = "tls-ca-cert-file", value_name = "FILE")]
    pub tls_ca_cert_file: Option<std::path::PathBuf>,
    /// Redis's tls-auth-clients for the TLS RESP port: yes (require a
    /// client certificate), optional, no. Default: yes when a CA is given,
    /// else no.
    #[arg(long = "tls-auth-clients", value_name = "yes|no|optional")]
    pub tls_auth_clients: Option<String>,
    /// A config file in Redis's format (`name value` lines; Redis's names
    /// such as `port` (the RESP port), `maxmemory 100mb`, `bind`,
    /// `requirepass`, `dir`, `loglevel`, and Amalgam's long flags such as
    /// `threads 4`). Flags given here override it; CONFIG REWRITE writes
    /// run-time changes back into it. See docs/operations.md.
    #[arg(long = "config", value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,

    /// The config file's absolute path (set by [`Args::parse_all`]).
    #[arg(skip)]
    pub config_file: Option<std::path::PathBuf>,

    /// Redis-style settings with no flag of their own (`--slowlog-max-len
    /// 64`, the collection thresholds), from the config file and then the
    /// command line, applied once the server is built (`settings.rs`).
    #[arg(skip)]
    pub runtime_settings: Vec<(String, String)>,

    /// Print this help.
    #[arg(short = 'h', long = "help", action = clap::ArgAction::Help)]
    pub help: Option<bool>,
}

/// Parses Redis's `yes`/`no`.
pub fn parse_yes_no(s: &str) -> Result<bool, String> {
    match s.to_ascii_lowercase().as_str() {
        "yes" => Ok(true),
        "no" => Ok(false),
        _ => Err(format!("'{s}' is not yes or no")),
    }
}

impl Args {
    /// Cache mode's reserve for CONFIG SET maxmemory, in bytes
    /// (`--memory-limit-max`, or MEMORY_LIMIT_MAX_FACTOR_DEFAULT × -m
    /// capped at `machine_bytes`, never below -m).
    pub fn memory_limit_max_bytes(&self, machine_bytes: Option<usize>) -> usize {
        let limit = self.memory_limit_mb.saturating_mul(1 << 20);
        match self.memory_limit_max_mb {
            Some(mb) => mb.saturating_mul(1 << 20),
            None => limit
                .saturating_mul(MEMORY_LIMIT_MAX_FACTOR_DEFAULT)
                .min(machine_bytes.unwrap_or(usize::MAX))
                .max(limit),
        }
    }
}

/// The machine's memory (`/proc/meminfo`'s MemTotal), if readable.
pub fn machine_memory_bytes() -> Option<usize> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// Parses `-m`: a whole number of megabytes, at least 1.
pub fn parse_megabytes(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("-m must be at least 1 (megabytes)".into()),
        Ok(n) if n <= MEMORY_LIMIT_MB_MAX => Ok(n),
        _ if s.starts_with('-') || s.parse::<i128>().is_ok() => {
            Err(format!("-m takes megabytes, a whole number from 1 to {MEMORY_LIMIT_MB_MAX}; '{s}' is not one"))
        }
        _ => Err(format!("-m takes megabytes as a whole number, no unit (64 for 64 MiB); '{s}' is not one")),
    }
}

/// Parses `-I`: a byte count with an optional k/K or m/M suffix.
pub fn parse_size(s: &str) -> Result<usize, String> {
    let (digits, unit) = match s.as_bytes().last() {
        Some(b'k' | b'K') => (&s[..s.len() - 1], 1024),
        Some(b'm' | b'M') => (&s[..s.len() - 1], 1024 * 1024),
        _ => (s, 1),
    };
    let n: usize = digits.parse().map_err(|_| format!("'{s}' is not a size (examples: 1048576, 512k, 1m)"))?;
    // The range is checked with memcached's texts (validate_memcached).
    n.checked_mul(unit).ok_or_else(|| format!("'{s}' is too large"))
}

/// A flag that takes a Redis memory value ([`memory_value`]).
pub fn parse_memory(s: &str) -> Result<usize, String> {
    memory_value(s.as_bytes())
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| format!("'{s}' is not a memory value (examples: 1048576, 512kb, 10mb, 1gb)"))
}

pub use amalgam_net::obuf::memory_value;

/// Checks a `proto-max-bulk-len` as Redis 7.0's CONFIG SET does (a
/// negative number is not a memory value there); the error is the part
/// Redis puts after "- " in its reply.
pub fn check_proto_max_bulk_len(v: &[u8]) -> Result<u64, String> {
    let n = memory_value(v).ok_or("argument must be a memory value")?;
    if !(PROTO_MAX_BULK_LEN_MIN..=PROTO_MAX_BULK_LEN_MAX).contains(&n) {
        return Err(format!(
            "argument must be between {PROTO_MAX_BULK_LEN_MIN} and {PROTO_MAX_BULK_LEN_MAX} inclusive"
        ));
    }
    Ok(n)
}

fn parse_proto_max_bulk_len(s: &str) -> Result<u64, String> {
    check_proto_max_bulk_len(s.as_bytes()).map_err(|e| format!("--proto-max-bulk-len: {e}"))
}

impl Args {
    /// Checks what clap cannot; the error says what to change.
    pub fn validate(&self) -> Result<(), String> {
        if self.udp_port != 0 {
            return Err("UDP is not supported: run with -U 0 (the default)".into());
        }
        if self.threads == Some(0) || self.threads.is_some_and(|t| t > THREADS_MAX) {
            return Err(format!("-t must be between 1 and {THREADS_MAX}"));
        }
        if self.conn_limit == 0 {
            return Err("-c must be at least 1".into());
        }
        if self.metrics_port != 0 && (self.metrics_port == self.port || self.metrics_port == self.resp_port) {
            return Err(format!(
                "--metrics-port {} is also the memcached (-p) or RESP (--resp-port) port: give another",
                self.metrics_port
            ));
        }
        if self.resp_port != 0 && self.resp_port == self.port {
            return Err(format!("--resp-port {} is also the memcached port (-p): give another, or 0", self.resp_port));
        }
        if self.memory_limit_mb == 0 {
            return Err("-m must be at least 1 (megabytes)".into());
        }
        if let Some(max) = self.memory_limit_max_mb.filter(|&max| max < self.memory_limit_mb) {
            return Err(format!("--memory-limit-max {max} is below -m {}: give at least -m", self.memory_limit_mb));
        }
        if let Some(dir) = &self.dir {
            if dir.exists() && !dir.is_dir() {
                return Err(format!(
                    "--dir {} is a file, not a directory: give a directory for the log and snapshots (it is \
                     created if missing)",
                    dir.display()
                ));
            }
        }
        for o in self.extended_options() {
            o?;
        }
        if self.tls_port != 0 && (self.tls_port == self.port || self.tls_port == self.resp_port) {
            return Err(format!("--tls-port {} is also the memcached or RESP port: give another", self.tls_port));
        }
        self.tls_settings()?;
        Ok(())
    }

    /// memcached's own refusals, with its texts; the caller exits with
    /// [`EXIT_USAGE`] as memcached does.
    pub fn validate_memcached(&self) -> Result<(), String> {
        // memcached's checks of -I, in its order (lower bound, half of
        // -m, 1 GiB) and with its texts.
        if self.max_item_size < ITEM_SIZE_MAX_BYTES_MIN {
            return Err("Item max size cannot be less than 1024 bytes.".into());
        }
        // memcached: settings.item_size_max > settings.maxbytes / 2.
        if self.max_item_size > self.memory_limit_mb.saturating_mul(1 << 20) / 2 {
            return Err("Cannot set item size limit higher than 1/2 of memory max.".into());
        }
        if self.max_item_size > ITEM_SIZE_MAX_BYTES_MAX {
            return Err("Cannot set item size limit higher than a gigabyte.".into());
        }
        let protocol = self.binding_protocol()?;
        // memcached: -Y forces ascii, and refuses a binary -B.
        if self.auth_file.is_some() && self.protocol.is_some() && protocol != Protocol::Ascii {
            return Err("ERROR: You cannot allow the BINARY protocol while using ascii authentication tokens.".into());
        }
        Ok(())
    }

    /// `-B`'s protocol (Err: memcached's refusal of another value).
    pub fn binding_protocol(&self) -> Result<Protocol, String> {
        match self.protocol.as_deref() {
            None | Some("auto") => Ok(Protocol::Auto),
            Some("ascii") => Ok(Protocol::Ascii),
            Some("binary") => Ok(Protocol::Binary),
            Some(p) => {
                Err(format!("Invalid value for binding protocol: {p}\n -- should be one of auto, binary, or ascii"))
            }
        }
    }

    /// `-D`'s delimiter: its first byte, ':' by default.
    pub fn stats_prefix_delimiter(&self) -> u8 {
        self.prefix_delimiter.as_deref().and_then(|d| d.bytes().next()).unwrap_or(b':')
    }

    /// What memcached's flags with no counterpart in Amalgam warrant at
    /// start: Err stops it (the text to print), each Ok line a warning.
    /// See docs/memcached-ops.md § Flags.
    pub fn memcached_flag_warnings(&self) -> Result<Vec<String>, String> {
        if let Some(p) = &self.unix_socket {
            return Err(format!("-s {}: unix sockets are not served yet: listen on TCP (-l, -p) instead", p.display()));
        }
        if self.enable_sasl {
            return Err("-S: SASL authentication is not supported: use -Y FILE (memcached's ASCII \
                        authentication, user:password lines) instead"
                .into());
        }
        if u32::from_str_radix(&self.unix_mask, 8).is_err() {
            return Err(format!("-a {}: not an octal mask (700, 755)", self.unix_mask));
        }
        let mut w = Vec::new();
        if let Some(file) = &self.memory_file {
            // memcached opens (creating) the file first and stops if it
            // cannot, with this text.
            if let Err(e) = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(file) {
                let why = e.to_string();
                let why = why.split(" (os error").next().unwrap_or(&why);
                return Err(format!("failed to open file for mmap: {why}"));
            }
            w.push(format!(
                "warning: -e {} is accepted but the cache is not restartable: items live in anonymous memory and \
                 a restart starts empty (--dir keeps them across restarts)",
                file.display()
            ));
        }
        let ignored = [
            (self.ignored_largepages, "-L", "the engine puts large budgets on hugepages by itself"),
            (self.ignored_reqs_per_event.is_some(), "-R", "a connection's turn has its own bound"),
            (self.ignored_backlog.is_some(), "-b", "the listen backlog is 1024, memcached's default"),
            (self.ignored_growth_factor.is_some(), "-f", "there are no slab classes"),
            (self.ignored_slab_min_size.is_some(), "-n", "there are no slab classes"),
            (self.napi_ids.is_some(), "-N", "connections are spread by the acceptor, not by NAPI id"),
        ];
        for (given, flag, why) in ignored {
            if given {
                w.push(format!("warning: {flag} is accepted and ignored: {why}"));
            }
        }
        Ok(w)
    }

    /// As [`Args::parse_all`], from `argv`.
    pub fn try_parse_all<I, T>(argv: I) -> Result<Args, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        Ok(Args::from_matches(Args::command().try_get_matches_from(argv)?))
    }

    pub fn from_matches(m: clap::ArgMatches) -> Args {
        let mut a = Args::from_arg_matches(&m).unwrap_or_else(|e| e.exit());
        if a.disable_evictions || a.maxmemory_policy == Some(amalgam_commands::object::MaxmemoryPolicy::Noeviction) {
            a.eviction = amalgam_engine::evict::Eviction::None;
        }
        a.resp_port_explicit = m.value_source("resp_port") == Some(clap::parser::ValueSource::CommandLine);
        a
    }

    /// `-o` options, each parsed (Err: memcached's refusal text).
    pub fn extended_options(&self) -> impl Iterator<Item = Result<ExtendedOption, String>> + '_ {
        self.extended.iter().flat_map(|o| o.split(',')).filter(|o| !o.is_empty()).map(ExtendedOption::parse)
    }

    /// True if `-o track_sizes` was given (`stats sizes` answers).
    pub fn track_sizes(&self) -> bool {
        self.extended_options().any(|o| matches!(o, Ok(ExtendedOption::Honoured("track_sizes", _))))
    }

    /// Persistence's configuration, if `--dir` was given.
    pub fn persistence(&self) -> Option<amalgam_persist::Config> {
        let dir = self.dir.clone()?;
        Some(amalgam_persist::Config {
            dir,
            fsync: self.fsync,
            snapshot_every: (self.snapshot_every > 0).then(|| std::time::Duration::from_secs(self.snapshot_every)),
            snapshot_after_writes: (self.snapshot_after_writes > 0).then_some(self.snapshot_after_writes),
            snapshot_cpu_percent: self.snapshot_cpu_percent,
            // The server starts with Redis's defaults (CONFIG SET changes
            // them later, and is not persisted, as in Redis without a
            // config file rewrite).
            thresholds: amalgam_types::Thresholds::default(),
        })
    }

    /// The idle timeout in seconds (0: none): Redis's `--timeout`, else
    /// memcached's `-o idle_timeout=N` (Err: not a whole number).
    pub fn idle_timeout_secs(&self) -> Result<u64, String> {
        if let Some(t) = self.timeout {
            return Ok(t);
        }
        match self.extended_value("idle_timeout") {
            None => Ok(0),
            Some(v) => v.parse().map_err(|_| format!("idle_timeout must be a whole number of seconds: {v}")),
        }
    }

    /// The last `-o NAME=value` given, if any.
    fn extended_value(&self, name: &str) -> Option<String> {
        self.extended_options()
            .filter_map(|o| match o {
                Ok(ExtendedOption::Honoured(n, v)) if n == name => v,
                _ => None,
            })
            .last()
    }

    /// The TLS configuration asked for (-Z, --tls-port), if any: the long
    /// flags win over `-o`, Redis's names over memcached's.
    pub fn tls_settings(&self) -> Result<Option<amalgam_net::tls::Settings>, String> {
        use amalgam_net::tls::{ClientAuth, Files, Settings};
        let path = |flag: &Option<std::path::PathBuf>, redis: &Option<std::path::PathBuf>, o: &str| {
            redis.clone().or_else(|| flag.clone()).or_else(|| self.extended_value(o).map(Into::into))
        };
        let cert = path(&self.ssl_chain_cert, &self.tls_cert_file, "ssl_chain_cert");
        let key = path(&self.ssl_key, &self.tls_key_file, "ssl_key");
        let ca = path(&self.ssl_ca_cert, &self.tls_ca_cert_file, "ssl_ca_cert");
        let verify = self.ssl_verify_mode.clone().or_else(|| self.extended_value("ssl_verify_mode"));
        let memcached = match (self.enable_ssl, verify) {
            (false, _) => None,
            (true, None) => Some(ClientAuth::None),
            (true, Some(v)) => Some(ClientAuth::from_verify_mode(&v)?),
        };
        if memcached.is_none() && self.tls_port == 0 {
            return Ok(None);
        }
        let Some(cert) = cert else {
            return Err("TLS (-Z or --tls-port) needs a certificate: give -o ssl_chain_cert=FILE,ssl_key=FILE or \
                        --tls-cert-file FILE --tls-key-file FILE"
                .into());
        };
        let resp = match &self.tls_auth_clients {
            Some(v) => ClientAuth::from_auth_clients(v)?,
            None if ca.is_some() => ClientAuth::Required,
            None => ClientAuth::None,
        };
        let key = key.unwrap_or_else(|| cert.clone());
        Ok(Some(Settings { files: Files { cert, key, ca }, memcached, resp }))
    }

    /// The log level to start with: `--loglevel`, `-v`, the more verbose
    /// of the two, else Redis's default (notice).
    pub fn log_level(&self) -> log::LevelFilter {
        let named = self.loglevel.as_deref().and_then(crate::logging::parse_level);
        let verbose = crate::logging::level_for_verbose(self.verbose).and_then(crate::logging::parse_level);
        named.max(verbose).unwrap_or(log::LevelFilter::Info)
    }

    /// Worker threads to run.
    pub fn worker_threads(&self) -> usize {
        self.threads.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(4))
    }
}

/// memcached's -B: the protocols the memcached port speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Protocol {
    /// A connection's first byte decides (0x80: binary).
    #[default]
    Auto,
    /// Text only: a binary request is read as text.
    Ascii,
    /// Binary only: text is read as binary (and refused).
    Binary,
}

impl Protocol {
    /// `stats settings`' `binding_protocol`.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Auto => "auto-negotiate",
            Protocol::Ascii => "ascii",
            Protocol::Binary => "binary",
        }
    }
}

/// memcached's exit status for a command-line error (sysexits' EX_USAGE),
/// as it exits for `-I` above half of `-m`.
pub const EXIT_USAGE: u8 = 64;

/// `-o` options Amalgam honours.
const EXTENDED_HONOURED: &[&str] = &[
    "track_sizes",
    "modern",
    "no_modern",
    "ssl_chain_cert",
    "ssl_key",
    "ssl_ca_cert",
    "ssl_verify_mode",
    "idle_timeout",
];
/// `-o` options memcached knows that tune what Amalgam does not have (its
/// slab allocator, LRU threads, hash function, logging buffers, extstore's
/// and TLS's tuning): accepted and ignored, so memcached's command lines
/// start unchanged. docs/memcached-ops.md lists them.
pub const EXTENDED_IGNORED: &[&str] = &[
    "maxconns_fast",
    "no_maxconns_fast",
    "hashpower",
    "slab_reassign",
    "no_slab_reassign",
    "slab_automove",
    "slab_automove_ratio",
    "slab_automove_window",
    "slab_automove_freeratio",
    "slab_sizes",
    "slab_chunk_max",
    "tail_repair_time",
    "hash_algorithm",
    "lru_crawler",
    "no_lru_crawler",
    "lru_crawler_sleep",
    "lru_crawler_tocrawl",
    "lru_maintainer",
    "no_lru_maintainer",
    "hot_lru_pct",
    "warm_lru_pct",
    "hot_max_factor",
    "warm_max_factor",
    "temporary_ttl",
    "watcher_logbuf_size",
    "worker_logbuf_size",
    "read_buf_mem_limit",
    "resp_obj_mem_limit",
    "no_hashexpand",
    "inline_ascii_resp",
    "no_inline_ascii_resp",
    "sock_cookie_id",
    "drop_privileges",
    "no_drop_privileges",
    "ext_page_size",
    "ext_wbuf_size",
    "ext_threads",
    "ext_io_depth",
    "ext_item_size",
    "ext_item_age",
    "ext_low_ttl",
    "ext_drop_unread",
    "ext_recache_rate",
    "ext_compact_under",
    "ext_drop_under",
    "ext_max_frag",
    "ext_max_sleep",
    "ssl_keyformat",
    "ssl_ciphers",
    "ssl_wbuf_size",
    "ssl_session_cache",
    "ssl_kernel_tls",
    "ssl_min_version",
];
/// `-o` options memcached knows that would change what the server does
/// in ways Amalgam does not implement: accepted with a warning that says
/// what is not done (refusing them would stop a drop-in start).
const EXTENDED_WARNED: &[(&str, &str)] =
    &[("ext_path", "there is no external storage (extstore): items live in memory only")];

/// One `-o` option.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExtendedOption {
    /// Done as memcached does it: the name and its value.
    Honoured(&'static str, Option<String>),
    /// Known to memcached, meaningless for Amalgam: accepted, ignored.
    Ignored(String),
    /// Known to memcached, not implemented: accepted with this warning.
    Warned(String, &'static str),
}

impl ExtendedOption {
    /// Parses `name` or `name=value`; an unknown name is refused with
    /// memcached's text.
    pub fn parse(o: &str) -> Result<ExtendedOption, String> {
        let (name, value) = match o.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (o, None),
        };
        if let Some(&n) = EXTENDED_HONOURED.iter().find(|&&n| n == name) {
            return Ok(ExtendedOption::Honoured(n, value));
        }
        if EXTENDED_IGNORED.contains(&name) {
            return Ok(ExtendedOption::Ignored(name.to_string()));
        }
        if let Some(&(n, why)) = EXTENDED_WARNED.iter().find(|(n, _)| *n == name) {
            return Ok(ExtendedOption::Warned(n.to_string(), why));
        }
        Err(format!("Illegal suboption \"{o}\""))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1m"), Ok(1 << 20));
        assert_eq!(parse_size("512k"), Ok(512 << 10));
        assert_eq!(parse_size("2048"), Ok(2048));
        // The range is memcached's refusal (validate_memcached).
        let refused = |i: &str, m: &str| Args::parse_from(["amalgam", "-I", i, "-m", m]).validate_memcached();
        assert_eq!(refused("1", "64"), Err("Item max size cannot be less than 1024 bytes.".into()));
        assert_eq!(refused("1025m", "4096"), Err("Cannot set item size limit higher than a gigabyte.".into()));
        assert_eq!(refused("1024m", "1024"), Err("Cannot set item size limit higher than 1/2 of memory max.".into()));
        assert_eq!(refused("1025m", "64"), Err("Cannot set item size limit higher than 1/2 of memory max.".into()));
        assert_eq!(refused("1024m", "2048"), Ok(()));
        assert!(parse_size("x").is_err());
    }

    #[test]
    fn defaults_match_memcached() {
        let a = Args::parse_from(["amalgam"]);
        assert_eq!((a.port, a.listen.as_str(), a.memory_limit_mb, a.conn_limit), (11211, "127.0.0.1", 64, 1024));
        assert_eq!(a.max_item_size, 1 << 20);
        assert_eq!((a.resp_port, a.resp_port_explicit), (6379, false));
        let given = |argv: &[&str]| Args::try_parse_all(argv).map(|a| (a.resp_port, a.resp_port_explicit)).unwrap();
        assert_eq!(given(&["amalgam"]), (6379, false));
        assert_eq!(given(&["amalgam", "--resp-port", "6379"]), (6379, true));
        assert_eq!(given(&["amalgam", "--resp-port=6380"]), (6380, true));
        assert!(Args::parse_from(["amalgam", "-p", "7000", "--resp-port", "7000"]).validate().is_err());
        assert!(a.validate().is_ok());
        assert!(Args::parse_from(["amalgam", "-U", "11211"]).validate().is_err());
    }

    #[test]
    fn metrics_port_is_off_by_default_and_not_another_listeners() {
        let check = |argv: &[&str]| Args::parse_from(argv).validate();
        assert_eq!(Args::parse_from(["amalgam"]).metrics_port, 0);
        assert!(check(&["amalgam", "--metrics-port", "9150"]).is_ok());
        for taken in [&["amalgam", "--metrics-port", "11211"][..], &["amalgam", "--metrics-port", "6379"]] {
            let e = check(taken).unwrap_err();
            assert!(e.starts_with("--metrics-port") && e.contains("give another"), "{e}");
        }
    }

    #[test]
    fn merge_segments_is_on_unless_turned_off() {
        let merge = |argv: &[&str]| Args::parse_from(argv).merge_segments;
        assert!(merge(&["amalgam"]));
        assert!(merge(&["amalgam", "--merge-segments"]));
        assert!(merge(&["amalgam", "--merge-segments", "-p", "7000"]));
        assert!(merge(&["amalgam", "--merge-segments=true"]));
        assert!(!merge(&["amalgam", "--merge-segments=false"]));
        assert!(!merge(&["amalgam", "--merge-segments", "false"]));
        assert!(Args::try_parse_from(["amalgam", "--merge-segments=maybe"]).is_err());
    }
}

#[cfg(test)]
mod memcached_flags {
    use super::*;

    #[test]
    fn item_size_above_half_the_memory_is_refused_as_memcached_does() {
        let check = |argv: &[&str]| Args::parse_from(argv).validate_memcached();
        assert!(check(&["amalgam", "-m", "64", "-I", "32m"]).is_ok());
        assert_eq!(
            check(&["amalgam", "-m", "64", "-I", "33m"]),
            Err("Cannot set item size limit higher than 1/2 of memory max.".into())
        );
        assert!(check(&["amalgam", "-m", "1", "-I", "1m"]).is_err());
    }

    #[test]
    fn negative_or_unit_memory_says_what_m_takes() {
        let e = Args::try_parse_from(["amalgam", "-m", "-1"]).unwrap_err().to_string();
        assert!(e.contains("-m takes megabytes"), "{e}");
        let e = Args::try_parse_from(["amalgam", "-m", "1g"]).unwrap_err().to_string();
        assert!(e.contains("no unit"), "{e}");
    }

    #[test]
    fn extended_options_the_memcached_way() {
        let opts = |o: &str| Args::parse_from(["amalgam", "-o", o]).validate();
        assert!(opts("modern,hashpower=20,no_lru_crawler,slab_reassign").is_ok());
        assert!(opts("idle_timeout=5").is_ok());
        assert_eq!(opts("foo_bar"), Err("Illegal suboption \"foo_bar\"".into()));
        assert_eq!(opts("modern,napi_ids=1"), Err("Illegal suboption \"napi_ids=1\"".into()));
        assert!(Args::parse_from(["amalgam", "-o", "modern", "-o", "track_sizes"]).track_sizes());
        assert!(!Args::parse_from(["amalgam", "-o", "modern"]).track_sizes());
    }

    #[test]
    fn tls_flags_the_memcached_and_redis_ways() {
        use amalgam_net::tls::ClientAuth;
        let tls = |argv: &[&str]| Args::parse_from(argv).tls_settings();
        assert_eq!(tls(&["amalgam"]), Ok(None));
        // -Z needs a certificate, as memcached does.
        assert!(tls(&["amalgam", "-Z"]).unwrap_err().contains("needs a certificate"));
        let s = tls(&["amalgam", "-Z", "-o", "modern,ssl_chain_cert=/c.pem,ssl_verify_mode=1,ssl_ca_cert=/ca.pem"])
            .unwrap()
            .unwrap();
        assert_eq!(s.files.cert, std::path::Path::new("/c.pem"));
        assert_eq!(s.files.key, s.files.cert, "the key defaults to the chain file");
        assert_eq!((s.memcached, s.resp), (Some(ClientAuth::Optional), ClientAuth::Required));
        assert!(tls(&["amalgam", "-Z", "-o", "ssl_chain_cert=/c.pem,ssl_verify_mode=7"]).is_err());
        // Redis's flags; the long flags win over -o.
        let s = tls(&["amalgam", "--tls-port", "6380", "--tls-cert-file", "/r.pem", "-o", "ssl_chain_cert=/c.pem"])
            .unwrap()
            .unwrap();
        assert_eq!((s.files.cert.to_str(), s.memcached, s.resp), (Some("/r.pem"), None, ClientAuth::None));
        assert!(tls(&["amalgam", "--tls-port", "1", "--tls-cert-file", "/r", "--tls-auth-clients", "x"]).is_err());
        assert!(Args::parse_from(["amalgam", "--tls-port", "11211", "--tls-cert-file", "/r"]).validate().is_err());
    }

    #[test]
    fn memcached_switches_parse() {
        let a = Args::parse_from(["amalgam", "-A", "-F", "-C", "-d", "-P", "/tmp/p", "-u", "memcache"]);
        assert!(a.enable_shutdown && a.disable_flush_all && a.disable_cas && a.daemon);
        assert_eq!(a.user.as_deref(), Some("memcache"));
        let argv = ["amalgam", "-M", "-k", "-r", "-L", "-R", "20", "-b", "1024", "-f", "1.25", "-n", "48"];
        let a = Args::try_parse_all(argv).unwrap();
        assert_eq!(a.eviction, amalgam_engine::evict::Eviction::None);
        assert!(a.lock_memory);
        assert_eq!(a.memcached_flag_warnings().unwrap().len(), 5, "-L -R -b -f -n each warn");
    }

    #[test]
    fn every_flag_of_memcacheds_help_parses() {
        // memcached 1.6.18's `-h`, each flag with a value where it takes one.
        let argv = [
            "amalgam",
            "-p",
            "1",
            "-U",
            "0",
            "-a",
            "755",
            "-A",
            "-l",
            "127.0.0.1",
            "-d",
            "-r",
            "-u",
            "u",
            "-m",
            "64",
            "-M",
            "-c",
            "10",
            "-k",
            "-v",
            "-P",
            "/p",
            "-f",
            "1.25",
            "-n",
            "48",
            "-L",
            "-D",
            "#",
            "-t",
            "4",
            "-R",
            "20",
            "-C",
            "-b",
            "1024",
            "-B",
            "ascii",
            "-I",
            "1m",
            "-S",
            "-F",
            "-X",
            "-W",
            "-Y",
            "/f",
            "-e",
            "/m",
            "-Z",
            "-o",
            "modern",
            "-N",
            "1",
            "-s",
            "/s",
        ];
        let a = Args::try_parse_all(argv).unwrap();
        assert_eq!((a.stats_prefix_delimiter(), a.disable_watch), (b'#', true));
        assert!(Args::try_parse_all(["amalgam", "-i"]).unwrap().license);
        let long = ["amalgam", "--protocol=binary", "--unix-mask=700", "--disable-watch", "--memory-file=/m"];
        assert_eq!(Args::try_parse_all(long).unwrap().binding_protocol(), Ok(Protocol::Binary));
    }

    #[test]
    fn protocol_and_refusals_with_memcacheds_texts() {
        let check = |argv: &[&str]| Args::parse_from(argv).validate_memcached();
        assert!(check(&["amalgam", "-B", "auto"]).is_ok());
        assert_eq!(
            check(&["amalgam", "-B", "foo"]),
            Err("Invalid value for binding protocol: foo\n -- should be one of auto, binary, or ascii".into())
        );
        let e = "ERROR: You cannot allow the BINARY protocol while using ascii authentication tokens.";
        assert_eq!(check(&["amalgam", "-Y", "/f", "-B", "binary"]), Err(e.into()));
        assert!(check(&["amalgam", "-Y", "/f", "-B", "ascii"]).is_ok());
        let flags = |argv: &[&str]| Args::parse_from(argv).memcached_flag_warnings();
        assert!(flags(&["amalgam", "-s", "/tmp/x.sock"]).unwrap_err().contains("not served yet"));
        assert!(flags(&["amalgam", "-S"]).unwrap_err().contains("-Y"));
        assert!(flags(&["amalgam", "-a", "9z"]).is_err());
        assert_eq!(
            flags(&["amalgam", "-e", "/nonexistent/dir/file"]),
            Err("failed to open file for mmap: No such file or directory".into())
        );
        let dir = std::env::temp_dir().join(format!("amalgam-e-{}", std::process::id()));
        let w = flags(&["amalgam", "-e", dir.to_str().unwrap()]).unwrap();
        let _ = std::fs::remove_file(&dir);
        assert!(w[0].contains("not restartable"), "{w:?}");
    }
}
