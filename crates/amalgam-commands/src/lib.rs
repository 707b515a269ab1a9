//! # amalgam-commands
//!
//! The command table and the data commands, by family: what a Redis
//! command *is* (its row: arity, flags, key specifications, ACL
//! categories, docs) and what the commands that read and write the
//! keyspace *do*, as thin adapters from RESP arguments to the engine
//! (`amalgam-engine`) and the collections (`amalgam-types`). No socket,
//! no session, no connection state: a family gets a [`Ctx`] and the
//! command's arguments and appends its reply to an output buffer.
//!
//! ## Where it stands (docs/architecture.md)
//! ```text
//!   amalgam-server   networking, the memcached and RESP front ends, sessions,
//!        │           MULTI, blocking, Pub/Sub, ACL, replication, config, metrics
//!        ▼
//!   amalgam-commands the command table; strings keys bits hash list set zset …
//!        │
//!        ▼
//!   amalgam-engine · amalgam-types · amalgam-persist · amalgam-protocol
//! ```
//! Everything that asks "what is this command?" reads its row here
//! ([`table`]): the RESP front end's dispatch and arity check, COMMAND,
//! ACL, MULTI's key locking, replication, the per-command statistics. A
//! family never reaches up: what it needs from the server is in [`Ctx`]:
//! the worker's [`Keyspace`] (the store, the collection thresholds, the
//! worker's counters, whether writes are journaled, and behind [`Host`]
//! waking blocked clients) and the round's reply protocol and bounds.
//!
//! ## Files (one noun each)
//! | file | what |
//! |---|---|
//! | `table.rs`, `table/rows/*.rs`, `table/docs.rs` | the command table: its row type and lookup, the rows by family, COMMAND DOCS (generated) |
//! | `strings.rs` | GET SET … INCR APPEND GETRANGE SETRANGE |
//! | `keys.rs` | DEL EXISTS EXPIRE TTL PERSIST TYPE SCAN KEYS DBSIZE FLUSH* RENAME |
//! | `bits.rs` | SETBIT GETBIT BITCOUNT BITPOS BITOP BITFIELD BITFIELD_RO |
//! | `stream.rs`, `stream/` | XADD XRANGE XREVRANGE XLEN XDEL XTRIM XSETID, XREAD's and XREADGROUP's reads; consumer groups (`group.rs`: XGROUP XACK XPENDING XCLAIM XAUTOCLAIM); XINFO (`info.rs`) (the type: amalgam-types `stream`) |
//! | `object.rs` | TIME TOUCH OBJECT |
//! | `lcs.rs` | LCS |
//! | `keyspace.rs` | RANDOMKEY COPY |
//! | `db.rs` | the numbered databases: database → engine namespace, key arguments encoded, MOVE SWAPDB |
//! | `dump.rs` | DUMP RESTORE (the payload codec: amalgam-persist `rdb.rs`) |
//! | `rdbfile.rs` | a Redis `dump.rdb` loaded into the store at start and written by SAVE (the file format: amalgam-persist `rdb/file.rs`) |
//! | `memory.rs` | MEMORY |
//! | `typed.rs` | collections on the engine: reads, writes, WRONGTYPE, the live thresholds |
//! | `hash.rs` | HSET … HSCAN |
//! | `list.rs` | LPUSH … LPOS LMOVE LMPOP (and the pops BLPOP … retry) |
//! | `set.rs` | SADD … SMOVE SINTER SUNION SDIFF (and *STORE) SINTERCARD SSCAN |
//! | `zset.rs`, `zset/algebra.rs` | ZADD … ZSCAN; ZUNION ZINTER ZDIFF (+STORE) ZINTERCARD |
//! | `glob.rs` | Redis's `stringmatchlen` (KEYS, SCAN MATCH, CONFIG GET, ACL key patterns) |
//! | `counters.rs` | the per-worker operation counters (memcached's stat names) |
//! | `notify.rs` | keyspace notifications: the classes, and what a family calls after a change |
//!
//! A new data family (streams …) is a new file here, its
//! rows in `table/rows/`, its `Cmd` variants, and one arm in the RESP
//! front end's `execute`. The commands that work over other types'
//! values — geo, HyperLogLog, SORT — are in `amalgam-derived`, above this
//! crate (their rows stay in the table here).

#![forbid(unsafe_code)]

pub mod bits;
pub mod counters;
pub mod db;
pub mod dump;
pub mod glob;
pub mod hash;
pub mod keys;
pub mod keyspace;
pub mod lcs;
pub mod list;
pub mod memory;
pub mod notify;
pub mod object;
pub mod rdbfile;
/// A large SET value received straight into its item: amalgam-persist's
/// (the event loop below the families reads into it).
pub use amalgam_persist::received;
pub mod set;
pub mod stream;
pub mod strings;
pub mod table;
pub mod typed;
pub mod zset;

use amalgam_engine::Store;
use amalgam_protocol::resp::{push_array, push_error, push_null, push_simple, Limits, Proto};
use counters::Counters;
use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use table::{Cmd, Spec, COMMANDS};
use typed::LiveThresholds;

/// One argument of a command, borrowed from the read buffer (or owned,
/// for an inline command's escaped quotes).
pub type Arg<'a> = Cow<'a, [u8]>;

/// What a data command asks of the server around it: the server
/// implements it (its `Shared`), so a family reaches no server state but
/// through these calls.
pub trait Host: Sync {
    /// A push made `key` a list or sorted set with elements: the clients
    /// blocked on it (BLPOP, BZPOPMIN …) may now be served.
    fn signal(&self, key: &[u8]);

    /// Keyspace event `event` of class `class` happened to `key` (its
    /// stored form): published on the channels `notify-keyspace-events`
    /// names, and tracked keys invalidated ([`notify`]; called only when
    /// its class is in effect).
    fn notify(&self, class: u32, event: &str, key: &[u8]);

    /// Redis's `maxmemory-policy` in force (OBJECT FREQ and IDLETIME
    /// follow its LFU rule).
    fn maxmemory_policy(&self) -> object::MaxmemoryPolicy;
}

/// What the data commands reach on one worker, the same for all its
/// connections: built once per worker thread by the server, so a round
/// builds nothing of it.
pub struct Keyspace<'w> {
    pub store: &'w Store,
    /// When collections change form (CONFIG SET hash-max-listpack-entries …).
    pub thresholds: &'w LiveThresholds,
    pub host: &'w dyn Host,
    /// The worker's counters.
    pub counters: &'w Counters,
    /// memcached's `-I`: the largest item a collection may grow to.
    pub item_size_max: usize,
    /// Writes go to the log (`--dir`): fixed at start.
    pub logged: bool,
    /// A replication stream is fed (it may start at run time, REPLICAOF
    /// or a replica's PSYNC): read per collection write.
    pub streamed: &'w AtomicBool,
    /// The numbered databases (`db.rs`).
    pub databases: &'w db::Databases,
    /// `notify-keyspace-events`' classes ([`notify`]; CONFIG SET).
    pub notify: &'w AtomicU32,
}

impl Keyspace<'_> {
    /// Whether writes are journaled (the log, or a replication stream
    /// fed): a collection write then records its operations.
    #[inline]
    pub fn journaled(&self) -> bool {
        self.logged || self.streamed.load(Ordering::Relaxed)
    }
}

impl std::fmt::Debug for Keyspace<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keyspace").field("item_size_max", &self.item_size_max).finish_non_exhaustive()
    }
}

/// What a data command can reach: the worker's [`Keyspace`] and what the
/// running connection's round decides (built once per round by the front
/// end that runs it).
pub struct Ctx<'c> {
    pub ks: &'c Keyspace<'c>,
    /// The reply's protocol (HELLO).
    pub proto: Proto,
    /// The RESP parser's bounds now (`proto-max-bulk-len`).
    pub limits: Limits,
    /// The client's hard output limit (`usize::MAX`: none): a reply of
    /// many elements stops being built once the output reaches it (the
    /// front end then closes the client).
    pub out_stop: usize,
    /// The engine namespace of the command's database (`db.rs`); its key
    /// arguments are already in their stored forms.
    pub ns: u8,
    /// `notify-keyspace-events` as the round began, as
    /// [`notify::in_effect`] (zero unless `K` or `E` is on): read
    /// once a round, so a write's check is a test of a word in hand (the
    /// front end reads it again after a CONFIG SET it runs).
    pub notify: u32,
    /// A script called the command (`redis.call`, Redis's `CLIENT_SCRIPT`):
    /// SORT then orders a set it would return unordered (amalgam-derived
    /// `sort.rs`).
    pub scripted: bool,
}

impl Ctx<'_> {
    /// The reply's protocol.
    pub fn proto(&self) -> Proto {
        self.proto
    }
}

impl std::fmt::Debug for Ctx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ctx").field("proto", &self.proto).field("out_stop", &self.out_stop).finish_non_exhaustive()
    }
}

/// Milliseconds since the unix epoch (Redis's `commandTimeSnapshot`).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

/// The value of an integer argument (Redis's `getLongLongFromObject`).
pub fn int_arg(a: &[u8]) -> Option<i64> {
    amalgam_protocol::resp::string2ll(a)
}

/// True if two arguments are equal ignoring ASCII case (option names).
pub fn is(a: &[u8], name: &str) -> bool {
    a.eq_ignore_ascii_case(name.as_bytes())
}

/// Answers a missing value (`$-1` or `_`).
pub fn null(ctx: &Ctx<'_>, out: &mut Vec<u8>) {
    push_null(out, ctx.proto());
}

/// Redis's arity error, with the command's full name (`client|setname`).
pub fn wrong_arity(name: &str, out: &mut Vec<u8>) {
    push_error(out, format!("ERR wrong number of arguments for '{name}' command").as_bytes());
}

/// True if the argument count satisfies Redis's arity convention:
/// `n > 0` exactly n (the name included), `n < 0` at least -n.
pub fn arity_ok(arity: i32, argc: usize) -> bool {
    if arity >= 0 {
        argc == arity as usize
    } else {
        argc >= arity.unsigned_abs() as usize
    }
}

/// The container's subcommand in `args[1]`, arity-checked; None after
/// answering Redis's error.
pub fn sub(spec_cmd: Cmd, args: &[Arg<'_>], out: &mut Vec<u8>) -> Option<&'static str> {
    let spec: &'static Spec = COMMANDS.iter().find(|s| s.cmd == spec_cmd)?;
    let upper = spec.name.to_ascii_uppercase();
    let Some(sub) = table::subcommand(spec, &args[1]) else {
        let mut m = b"ERR unknown subcommand '".to_vec();
        let a = args[1].split(|&b| b == 0).next().unwrap_or(b"");
        m.extend_from_slice(&a[..a.len().min(128)]);
        m.extend_from_slice(format!("'. Try {upper} HELP.").as_bytes());
        push_error(out, &m);
        return None;
    };
    if !arity_ok(sub.arity, args.len()) {
        wrong_arity(sub.name, out);
        return None;
    }
    Some(table::short_name(sub))
}

/// A container's HELP reply: one simple string per line.
pub fn help(lines: &[&str], out: &mut Vec<u8>) {
    push_array(out, lines.len());
    for l in lines {
        push_simple(out, l);
    }
}
