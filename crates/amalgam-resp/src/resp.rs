//! # RESP front end: Redis's string commands on the same store
//!
//! A second listener (`--resp-port`, default 6379 on `--listen`; 0 turns it
//! off) whose connections live on the same workers and event loops as
//! memcached's: a connection knows its protocol from the listener that
//! accepted it, and the worker's turn (read, parse, execute, one write,
//! back-pressure, fairness bounds) is the same; only [`process`] differs.
//!
//! ## A batch
//! Every command parsed from the bytes one read brought executes in
//! order, and all replies leave in one write. Runs of consecutive GETs and
//! MGETs — pipelined or not — go through the engine's batched lookup
//! (`Store::get_batch`, MICA §5.3) as one batch, as memcached's gets do;
//! runs of consecutive SETs have their index lines prefetched
//! (`Store::prefetch_writes`) and then run one by one (`run_sets`).
//! Single-key collection commands (`prefetched`: HSET, LPUSH, ZSCORE …)
//! join those runs, and a run holding one is prefetched down to its
//! large collections' objects and chunks (`Store::prefetch_updates`).
//! A connection under CLIENT REPLY OFF or SKIP, and every connection while
//! a MONITOR is attached, runs each command alone through `run_command`,
//! which drops the replies the client asked not to get and feeds the
//! monitors; without either, the batch pays one relaxed load for them.
//! Inside MULTI nothing is batched: every command is queued
//! (`resp/multi.rs`, which also makes multi-key commands atomic).
//! Nor is anything batched for a connection that must authenticate: its
//! commands go one by one through `dispatch`, whose first step,
//! `acl::refused`, answers NOAUTH or NOPERM (before MULTI queues, as Redis's
//! `processCommand`). A connection whose user has ACL rules
//! (`Session::auth.open` false, `resp/acl.rs`) batches what its rules
//! permit (`acl::permits`, checked as the command joins the run) and runs
//! a refused command alone, so `refused` answers and logs it. An open
//! connection pays one byte test for this in the batch condition and one
//! at the top of `dispatch`.
//!
//! ## One keyspace, sixteen databases
//! Redis's numbered databases are engine namespaces of the one store
//! (`amalgam_commands::db`, docs/databases.md): `dispatch` resolves the
//! session's database ([`in_database`]) and hands the families the keys
//! in their stored forms; the batched GET/SET path runs only on database
//! 0 ([`plain_db`]). RESP's database 0 and memcached share keys: a key
//! written here is read by memcached's `get` and the other way round,
//! values byte for byte, expiry shared. What RESP cannot show:
//! * memcached's client flags: RESP writes that replace a value (SET and
//!   its variants, MSET, MSETNX, GETSET) store flags 0; writes that change
//!   a value in place (APPEND, SETRANGE, INCR and friends, INCRBYFLOAT, the
//!   EXPIRE family, PERSIST, GETEX) keep the item's flags, and give a key
//!   they create flags 0.
//! * CAS uniques: every RESP write gives the item a new one (as memcached's
//!   writes do), except the EXPIRE family, PERSIST and GETEX, which keep it
//!   like memcached's `touch`.
//!
//! ## Expiry granularity
//! Redis's: every deadline is a unix millisecond (`Expiry::AtMillis` in
//! the engine, `Expiry::At` when it falls on a whole second), so PX, PXAT,
//! PEXPIRE, PEXPIREAT and relative times in seconds (`EX 10` is 10 000 ms
//! from now) expire to the millisecond, on every worker and after a
//! restart (the log's PUT_MS record). PTTL answers the milliseconds left,
//! PEXPIRETIME the exact deadline, TTL and EXPIRETIME Redis's rounding to
//! the nearest second (`(ms + 500) / 1000`); GT and LT compare
//! milliseconds. The engine reads the milliseconds only in a deadline's
//! last second (engine item.rs, "Expiry at millisecond resolution").
//! memcached's commands keep whole seconds; they see a millisecond
//! deadline rounded up to its second. Deadlines past 2106-02-07 (u32
//! seconds) are clamped there.
//!
//! ## Files
//! This module is crate `amalgam-resp`'s front end (the crate's `lib.rs`
//! holds the state both ports share). The data commands and the command
//! table are crate `amalgam-commands`
//! (strings, keys, bits, hash, list, set, zset, …, `table.rs` and the rows
//! by family): this module runs them (`execute`) with their `Ctx`.
//!
//! | file | what |
//! |---|---|
//! | `resp.rs` | a connection's session, the batch loop, dispatch |
//! | `resp/families.rs` | a command's family by its row (what dispatch runs once its checks pass) |
//! | `resp/server.rs` | PING ECHO QUIT SELECT INFO CONFIG SLOWLOG COMMAND HELLO AUTH SAVE |
//! | `resp/command.rs` | COMMAND (COUNT, LIST, INFO, DOCS, GETKEYS) over the table |
//! | `resp/cmdstats.rs` | per-command counts and latency (INFO commandstats, latencystats), the slow log |
//! | `resp/errorstats.rs` | error replies by code (INFO errorstats, total_error_replies) |
//! | `resp/latency.rs` | LATENCY and its events |
//! | `resp/debug.rs` | DEBUG |
//! | `resp/client.rs` | CLIENT (over `amalgam_net::clients`, the registry of connections) |
//! | `resp/monitor.rs` | MONITOR |
//! | `resp/blocking.rs` | BLPOP BRPOP BLMOVE BRPOPLPUSH BLMPOP BZPOPMIN BZPOPMAX BZMPOP: blocked clients, wake-ups |
//! | `resp/pubsub.rs` | SUBSCRIBE UNSUBSCRIBE PSUBSCRIBE PUNSUBSCRIBE PUBLISH PUBSUB SSUBSCRIBE SUNSUBSCRIBE SPUBLISH, across workers |
//! | `resp/multi.rs` | MULTI EXEC DISCARD WATCH UNWATCH; multi-key commands run with their keys held |
//! | `resp/script.rs` (the interpreter: crate `amalgam-script`) | EVAL EVALSHA EVAL_RO EVALSHA_RO SCRIPT FCALL FCALL_RO: scripts and functions run with their keys held |
//! | `resp/function.rs` | FUNCTION (LOAD DELETE FLUSH LIST STATS KILL HELP) |
//! | `resp/tracking.rs` | CLIENT TRACKING CACHING GETREDIR TRACKINGINFO: client-side caching's table and invalidations |
//! | `resp/acl.rs` (the users, rules and ACL LOG: crate `amalgam-acl`) | AUTH, HELLO AUTH, requirepass, ACL users, rules and selectors, NOAUTH/NOPERM, protected mode, ACL LOG |

pub mod account;
pub mod acl;
pub use amalgam_acl::log as acl_log;
pub mod blocking;
mod client;
pub mod cluster;
pub use amalgam_metrics::cmdstats;
mod command;
mod debug;
pub use amalgam_metrics::errorstats;
mod families;
mod function;
pub mod latency;
mod migrate;
mod monitor;
pub mod multi;
pub mod pause;
pub mod pubsub;
mod script;
mod server;
pub mod tracking;

// The data commands and the command table (crate `amalgam-commands`),
// under the names the front end's files use.
pub(crate) use amalgam_commands::{
    arity_ok, bits, dump, glob, hash, help, int_arg, is, keys, keyspace, lcs, list, memory, object, set, strings, sub,
    table, typed, wrong_arity, zset,
};
pub(crate) use amalgam_derived::{geo, sort};

use crate::stats::{bump, WorkerStats};
use crate::Shared;
use amalgam_engine::TAG_BYTES;
use amalgam_net::clients::Client;
use amalgam_net::obuf::RoundStop;
use amalgam_net::turn::{GETS_RUN_REQUESTS_MAX, REQUESTS_PER_ROUND_MAX, WRITE_BUFFER_HIGH_BYTES};
use amalgam_protocol::resp::{push_array, push_bulk, push_error, push_null, Limits, Parse, Parser, Proto};
use families::execute;
use std::sync::Arc;
use table::{Cmd, Spec};

pub use amalgam_commands::Arg;

/// What the connection does after a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum After {
    Continue,
    /// QUIT, a refused handshake …: the replies go out, then it closes.
    Close,
    /// CLIENT PAUSE holds the command (resp/pause.rs): it is left
    /// unconsumed and the connection waits.
    Postpone,
}

/// CLIENT REPLY's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reply {
    On,
    Off,
    /// CLIENT REPLY SKIP is running: the next command's reply is dropped.
    SkipNext,
    /// This command's reply is dropped.
    Skip,
}

/// The RESP state of one connection.
#[derive(Debug)]
pub struct Session {
    pub(crate) parser: Parser,
    proto: Proto,
    /// CLIENT ID: unique among this server's RESP connections.
    id: u64,
    /// What CLIENT LIST and KILL see of this connection (clients.rs); the
    /// name and library attributes live there.
    client: Arc<Client>,
    /// CLIENT REPLY.
    reply: Reply,
    /// MONITOR attached this connection.
    monitor: Option<Arc<amalgam_net::clients::Monitor>>,
    /// The run of GETs and MGETs of the batch in progress (kept to reuse
    /// its allocation; empty between batches).
    gets: Vec<PendingGet>,
    /// The batch's arguments and its run of SETs, kept the same way: a
    /// batch that allocated them costs a malloc, a grow and a free (about
    /// 400 instructions, more than a GET's lookup) when it is one command.
    args: Vec<Arg<'static>>,
    sets: Vec<PendingSet>,
    /// The run of SETs holds collection commands too ([`prefetched`]):
    /// it is prefetched down to their objects.
    sets_deep: bool,
    /// Where the connection lives: (worker, slab token), for the blocking
    /// commands' wake-ups (`blocking.rs`); set by the worker.
    home: Option<(usize, usize)>,
    /// The blocking command this connection waits in, if any: nothing
    /// else of its pipeline runs meanwhile.
    blocked: Option<Box<blocking::Blocked>>,
    /// MULTI's queue and WATCH's keys (`multi.rs`).
    multi: multi::Multi,
    /// The selected database (SELECT; `amalgam_commands::db`).
    pub(crate) db: usize,
    /// The connection's user and whether it must authenticate (`acl.rs`).
    pub(crate) auth: acl::Auth,
    /// Its channels and patterns, while it holds any (`pubsub.rs`).
    pubsub: Option<Box<pubsub::State>>,
    /// CLIENT TRACKING's state, while on (`tracking.rs`).
    tracking: Option<Box<tracking::State>>,
    /// REPLCONF listening-port and ip-address (a replica's handshake).
    pub(crate) repl_port: u16,
    pub(crate) repl_ip: Option<String>,
    /// REPLCONF capa amalgam (an Amalgam replica), capa eof (takes a
    /// streamed RDB) and rdb-only 1.
    pub(crate) repl_amalgam: bool,
    pub(crate) repl_eof: bool,
    pub(crate) repl_rdb_only: bool,
    /// Cluster mode's ASKING and READONLY (`resp/cluster.rs`).
    pub(crate) cluster: u8,
    /// PSYNC or SYNC was said: the worker hands the connection to a
    /// replication sender (`crate::repl`) once its replies are out.
    pub(crate) handoff: Option<Box<crate::repl::Psync>>,
    /// The stream offset of this connection's last write (WAIT waits for
    /// it), and the worker thread's last fed offset when its batch began
    /// (a different one after the batch means the batch wrote). Kept
    /// only while a replication journal is attached.
    pub(crate) woff: u64,
    pub(crate) fed_mark: u64,
    /// A large SET value received straight into its item (`inplace.rs`),
    /// for the request at the front of the read buffer, whose value
    /// argument reads as empty: taken by that SET, dropped (freed) after
    /// the command whatever it did.
    pub(crate) prepared: Option<crate::inplace::Receiving>,
    /// Redis's master client ([`Session::primary`]).
    pub(crate) primary: bool,
    /// A `REPLCONF GETACK` reached the master client: its link acks.
    pub(crate) getack: bool,
}

impl Session {
    /// A new connection's session: RESP2, the next client id, registered
    /// as `token` of `worker`.
    pub fn new(shared: &Shared, sock: &impl amalgam_net::socket::Socket, worker: usize, token: usize) -> Session {
        let id = shared.next_client_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Session::with_client(shared, shared.clients.add(id, sock, worker, token))
    }

    /// Redis's master client (issue 37 §1, `repl.rs`): applies a
    /// redis-server primary's stream as `client` (the link's entry), as a
    /// user no rule refuses, exempt from READONLY, MASTERDOWN, CLIENT
    /// PAUSE and BUSY (the link holds the stream during a pause itself).
    pub(crate) fn primary(shared: &Shared, client: Arc<Client>) -> Session {
        let mut s = Session::with_client(shared, client);
        s.auth = acl::Auth::superuser(&shared.acl);
        s.primary = true;
        s
    }

    fn with_client(shared: &Shared, client: Arc<Client>) -> Session {
        Session {
            parser: Parser::new(),
            proto: Proto::Resp2,
            id: client.id,
            client,
            reply: Reply::On,
            monitor: None,
            gets: Vec::new(),
            args: Vec::new(),
            sets: Vec::new(),
            sets_deep: false,
            home: None,
            blocked: None,
            multi: multi::Multi::default(),
            db: 0,
            auth: acl::Auth::new(&shared.acl),
            pubsub: None,
            tracking: None,
            repl_port: 0,
            repl_ip: None,
            repl_amalgam: false,
            repl_eof: false,
            repl_rdb_only: false,
            cluster: 0,
            handoff: None,
            woff: 0,
            fed_mark: 0,
            prepared: None,
            primary: false,
            getack: false,
        }
    }

    /// CLIENT ID.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The bytes the parser needs before its next request is whole, when
    /// it knows (a bulk string's announced length): the event loop's
    /// in-place receive of a large value.
    #[inline(always)]
    pub fn wanted(&self) -> Option<usize> {
        self.parser.wanted()
    }

    /// A large value received in place, handed to the command that
    /// announced it (`inplace.rs`).
    pub fn set_prepared(&mut self, value: Option<crate::inplace::Receiving>) {
        self.prepared = value;
    }

    /// Whether the connection said PSYNC and waits to leave its worker
    /// for replication's threads.
    pub fn hands_off(&self) -> bool {
        self.handoff.is_some()
    }

    /// The PSYNC hand-off, taken once by the event loop.
    pub fn take_handoff(&mut self) -> Option<Box<crate::repl::Psync>> {
        self.handoff.take()
    }

    /// Records where the connection lives (worker id, slab token).
    pub fn set_home(&mut self, worker: usize, token: usize) {
        self.home = Some((worker, token));
    }
}

/// Whether a large SET value of this connection may be received straight
/// into its item (`inplace.rs`): only where the SET will run at once and
/// alone, as the request reads (not queued by MULTI, nor refused as a
/// subscriber's, nor held by a blocking command), by a connection that
/// needs no per-command check (`acl.rs`: `open`), and with no MONITOR
/// attached (which would show the value argument as empty) nor writes
/// refused here (a read-only replica).
pub(crate) fn may_receive_in_place(shared: &Shared, session: &Session) -> bool {
    session.auth.open
        && session.db == 0
        && shared.databases.namespace(0) == 0
        && session.prepared.is_none()
        && session.blocked.is_none()
        && !session.multi.queuing()
        && !pubsub::subscribed(session)
        && !shared.clients.monitoring()
        && !shared.scripts.runs.busy()
        && !shared.repl.guards_writes()
}

/// What a command handler can reach.
pub(crate) struct Ctx<'c> {
    /// What the data commands reach (`amalgam_commands::Ctx`): the store,
    /// the thresholds, the reply's protocol and bounds (`limits`; the
    /// client's hard output limit, `out_stop`, read once per round: a
    /// reply of many elements stops being built once the output reaches
    /// it, and [`process`] then closes the client, `obuf.rs`).
    pub cx: amalgam_commands::Ctx<'c>,
    pub shared: &'c Shared,
    pub stats: &'c WorkerStats,
    pub session: &'c mut Session,
    /// Times and counts each command (`cmdstats.rs`).
    pub recorder: cmdstats::Recorder,
    /// The command about to run joined a run of SETs after
    /// `acl::permits` allowed it: `dispatch` does not check it again.
    pub permitted: bool,
    /// The command about to run joined a run of SETs on database 0 with a
    /// key stored as written ([`plain_db`], [`plain_key`]) and, in cluster
    /// mode, of a slot this node serves ([`local`]): `dispatch` does not
    /// look at its database again ([`in_database`]) nor route it again
    /// (`cluster::redirected`: ~1,400 instructions per SET, callgrind).
    pub plain: bool,
}

impl<'c> Ctx<'c> {
    /// A handler's reach for `session`'s commands on the worker of `stats`
    /// and `ks`.
    #[inline]
    pub(crate) fn new(
        shared: &'c Shared,
        stats: &'c WorkerStats,
        ks: &'c amalgam_commands::Keyspace<'c>,
        session: &'c mut Session,
        limits: Limits,
        out_stop: usize,
        now: u64,
    ) -> Ctx<'c> {
        Ctx {
            cx: amalgam_commands::Ctx {
                ks,
                proto: session.proto,
                limits,
                out_stop,
                ns: 0,
                scripted: false,
                notify: amalgam_commands::notify::in_effect(ks.notify.load(std::sync::atomic::Ordering::Relaxed)),
            },
            shared,
            stats,
            session,
            recorder: cmdstats::Recorder::new(now),
            permitted: false,
            plain: false,
        }
    }

    /// The reply's protocol (HELLO); [`Ctx::set_proto`] changes it.
    fn proto(&self) -> Proto {
        self.cx.proto
    }

    /// SELECT (and RESET, and a script's end) chose database `db`.
    pub(crate) fn select(&mut self, db: usize) {
        self.session.db = db;
        self.session.client.db.store(db as u32, std::sync::atomic::Ordering::Relaxed);
    }

    /// HELLO or RESET changed the connection's protocol: from the next
    /// reply on, and for its next rounds.
    pub(crate) fn set_proto(&mut self, p: Proto) {
        self.session.proto = p;
        self.cx.proto = p;
    }
}

/// True if the session's commands may be batched as far as databases go:
/// it is on database 0 and database 0 is namespace 0 (two loads, once
/// per round and after each command run alone, which may SELECT), no
/// `keymiss` notification is wanted (`execute` tells them) and the
/// session does not track keys (`tracking.rs`: `execute` remembers them);
/// the last two one test of the notification word while neither is on
/// anywhere. Each batched command's key must also not begin with the
/// escape byte ([`plain_key`]).
#[inline(always)]
fn plain_db(ctx: &Ctx<'_>) -> bool {
    use amalgam_commands::notify::{KEY_MISS, TRACKING};
    ctx.session.db == 0
        && ctx.shared.databases.namespace(0) == 0
        && !(ctx.cx.notifying(KEY_MISS | TRACKING) && runs_alone(ctx))
}

/// [`plain_db`]'s part while `keymiss` notifications are on or a client
/// tracks keys: this session's commands run alone if either concerns it.
#[cold]
#[inline(never)]
fn runs_alone(ctx: &Ctx<'_>) -> bool {
    ctx.cx.notifying(amalgam_commands::notify::KEY_MISS) || ctx.session.tracking.is_some()
}

/// True outside cluster mode; in it, true if every key is in one slot
/// this node serves with the cluster up (`Cluster::route`'s fast path),
/// so the command may join a batch without dispatch's routing check.
#[inline(always)]
fn local(shared: &Shared, cluster: bool, keys: &[Arg<'_>]) -> bool {
    !cluster || local_keys(shared, keys)
}

#[inline(never)]
fn local_keys(shared: &Shared, keys: &[Arg<'_>]) -> bool {
    shared.cluster.serves_keys(keys)
}

/// True if a key of database 0 is stored as written (it does not begin
/// with the escape byte: `amalgam_engine::namespace`).
#[inline(always)]
fn plain_key(k: &[u8]) -> bool {
    k.first() != Some(&amalgam_engine::namespace::NS_ESCAPE)
}

/// SETs of a run prefetched at once (`Store::prefetch_writes`): the
/// engine's batch window.
const PREFETCH_SETS_MAX: usize = amalgam_engine::BATCH_WINDOW_KEYS;

/// A GET or MGET waiting in the current run: the index of its first key
/// in the batch's argument vector and its key count (None: a GET).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PendingGet {
    pub first: usize,
    pub mget: Option<usize>,
}

/// A SET or a one-key collection write waiting in the current run of
/// sets: its arguments `args[start..end]`, and its row of the command
/// table, looked up once when the batch classified it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PendingSet {
    pub start: usize,
    pub end: usize,
    pub spec: Option<&'static Spec>,
}

/// Parses and executes what `buf[*pos..]` holds, as one batch; advances
/// `*pos` past what it used. Bounded by [`REQUESTS_PER_ROUND_MAX`]
/// commands and by the write buffer's high-water mark. Inlined into both
/// callers (the worker's turn and the master client of a redis-server
/// primary, `repl.rs`): with two callers rustc stopped inlining it into
/// the worker, +70 instructions per unpipelined GET (callgrind).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn process(
    shared: &Shared,
    stats: &WorkerStats,
    ks: &amalgam_commands::Keyspace<'_>,
    session: &mut Session,
    buf: &[u8],
    pos: &mut usize,
    out: &mut Vec<u8>,
    close: &mut bool,
) {
    // Messages published (on any worker) for this subscriber, before the
    // replies of what it sends next, and while it is blocked (RESP3);
    // past its output limit it is closed (`pubsub.rs`).
    if pubsub::drain(session, out) {
        *close = true;
        return;
    }
    if session.blocked.is_some() {
        // Pipelined commands wait until the blocking one is answered.
        return;
    }
    // A user changed since this connection's last read (one relaxed
    // load otherwise); its user deleted closes it, as in Redis.
    if !acl::fresh(&shared.acl, &mut session.auth) {
        *close = true;
        return;
    }
    if *pos == buf.len() && session.monitor.is_none() {
        // Nothing to parse: the worker's turn runs a round after each
        // flush and before each read (worker.rs), two of the three rounds
        // a request-reply client gets. They touch the client (as Redis's
        // write does) and set up nothing more. A monitor's round drains
        // its queued lines (`process_round`).
        session.client.touch_at(amalgam_net::ticks::now());
        return;
    }
    let limits = shared.resp_limits();
    let class = output_class(session);
    let stop = shared.obuf.round_stop(class);
    // A RESP string is limited by its length (`proto-max-bulk-len`), not
    // by memcached's `-I`, which counts the whole item.
    shared.store.with_value_bytes_max(limits.bulk_bytes_max, || {
        process_round(shared, stats, ks, session, buf, pos, out, close, limits, stop)
    });
    if stop.crossed(out.len()) {
        over_hard_limit(shared, session, class, out, close);
    }
}

/// The client class whose output limits apply to `session` (`obuf.rs`).
pub(crate) fn output_class(session: &Session) -> amalgam_net::obuf::Class {
    if pubsub::subscribed(session) {
        amalgam_net::obuf::Class::Pubsub
    } else {
        amalgam_net::obuf::Class::Normal
    }
}

/// The round's output reached the client's hard limit, and a reply may
/// have stopped there unfinished: nothing of the round is sent and the
/// client is closed, counted and logged as the worker's own check does
/// (`obuf.rs`). Closed here rather than left to that check, which reads
/// the limit again: a CONFIG SET raising it meanwhile must not let an
/// unfinished reply out.
#[cold]
#[inline(never)]
fn over_hard_limit(
    shared: &Shared,
    session: &Session,
    class: amalgam_net::obuf::Class,
    out: &mut Vec<u8>,
    close: &mut bool,
) {
    shared.obuf.closed(&format!("id={} addr={}", session.id, session.client.addr), class, out.len());
    *out = Vec::new();
    *close = true;
}

/// [`process`] under the RESP value limit.
#[allow(clippy::too_many_arguments)]
fn process_round(
    shared: &Shared,
    stats: &WorkerStats,
    ks: &amalgam_commands::Keyspace<'_>,
    session: &mut Session,
    buf: &[u8],
    pos: &mut usize,
    out: &mut Vec<u8>,
    close: &mut bool,
    limits: Limits,
    stop: RoundStop,
) {
    let mut args: Vec<Arg<'_>> = recycle(std::mem::take(&mut session.args));
    let mut gets = std::mem::take(&mut session.gets);
    // The run of SETs in progress: each one's argument range.
    let mut sets = std::mem::take(&mut session.sets);
    let now = amalgam_net::ticks::now();
    session.client.touch_at(now);
    if let Some(m) = &session.monitor {
        // Lines other workers queued for this monitor, while the socket
        // keeps up; past the queue's bound the monitor is dropped.
        if m.dropped.load(std::sync::atomic::Ordering::Relaxed) {
            *close = true;
            return;
        }
        if out.len() < WRITE_BUFFER_HIGH_BYTES {
            m.drain_into(out);
        }
    }
    let journaled = shared.repl.journaled();
    if journaled {
        crate::repl::mark_batch(session);
    }
    let mut ctx = Ctx::new(shared, stats, ks, session, limits, stop.hard, now);
    // Redis's bounds before authentication (`Parser::parse_unauthenticated`),
    // chosen here and again after each command run alone: a connection
    // that must authenticate has none batched, so an AUTH earlier in this
    // read has run, and lifted them, before the next request is parsed.
    let mut unauthenticated = ctx.session.auth.required();
    let mut plain = plain_db(&ctx);
    // A CLIENT PAUSE may be on (resp/pause.rs), or a replica refuses
    // stale reads (`replica-serve-stale-data no`): every command runs
    // alone, through `dispatch`'s checks. Two relaxed loads per round.
    let mut unbatched = shared.pause.on() || shared.repl.refuses_stale();
    // Cluster mode: a batched command's keys must be in a slot this node
    // serves with the cluster up (`local`); any other runs alone, through
    // dispatch's routing check.
    let cluster = shared.cluster.enabled();
    // Past the hard limit the client is closed after the round (as Redis
    // runs nothing more for a client it is closing): no more parsing, and
    // nothing parsed runs once a run before it crossed it (`RoundStop`).
    for _ in 0..REQUESTS_PER_ROUND_MAX {
        if !stop.parses(out.len()) || *pos == buf.len() {
            break;
        }
        let start = args.len();
        let parsed = if unauthenticated {
            ctx.session.parser.parse_unauthenticated(&buf[*pos..], limits, &mut args)
        } else {
            ctx.session.parser.parse(&buf[*pos..], limits, &mut args)
        };
        match parsed {
            Parse::Incomplete => break,
            Parse::Empty { consumed } => *pos += consumed,
            Parse::Error(e) => {
                run_gets(&mut ctx, &args, &mut gets, out);
                run_sets(&mut ctx, &args, &mut sets, out);
                if let Some(m) = e.message() {
                    let mark = out.len();
                    push_error(out, &m);
                    ctx.stats.errors.note(&out[mark..]);
                }
                *close = true;
                break;
            }
            Parse::Command { consumed } => {
                *pos += consumed;
                bump(&stats.ops.resp_commands, 1);
                let cmd = &args[start..];
                let spec = table::lookup(&cmd[0]);
                // GET and MGET join the run of gets, SET the run of sets;
                // anything else ends both. The runs never mix: a GET ends
                // a run of sets and a SET a run of gets, so replies keep
                // the commands' order. A connection under CLIENT REPLY OFF
                // or SKIP, and every connection while a MONITOR is
                // attached, runs each command alone (`run_command` drops
                // replies and feeds monitors). So does a connection that
                // must authenticate. A user with rules (`acl.rs`: `open`
                // is false) batches a command its rules permit
                // (`acl::permits`); one they refuse runs alone, so its
                // check in `dispatch` answers it.
                // The SET of a value received in place runs alone too
                // (it is the first command here, and the only one that
                // may take the value: dropped right after it).
                // Database 0 stored as written (`in_database`): keys
                // beginning with the escape byte run alone, so do all
                // commands of another database.
                let batch = (ctx.session.auth.open || may_join_run(&ctx.session.auth, spec, cmd))
                    && plain
                    && !unbatched
                    && ctx.session.prepared.is_none()
                    && ctx.session.reply == Reply::On
                    && !shared.clients.monitoring()
                    && !shared.scripts.runs.busy()
                    && !ctx.session.multi.queuing()
                    && !pubsub::subscribed(ctx.session);
                if let (Some(s), true) = (spec, batch) {
                    // CLIENT LIST's cmd= for a batched command (the
                    // others are recorded at dispatch).
                    ctx.session.client.set_last_cmd(table::index_of(s), None);
                }
                match spec.map(|s| s.cmd).filter(|_| batch) {
                    Some(Cmd::Get) if cmd.len() == 2 && plain_key(&cmd[1]) && local(shared, cluster, &cmd[1..]) => {
                        run_sets(&mut ctx, &args, &mut sets, out);
                        if stop.crossed(out.len()) {
                            break;
                        }
                        gets.push(PendingGet { first: start + 1, mget: None });
                        end_long_run(&mut ctx, &args, &mut gets, out);
                        continue;
                    }
                    Some(Cmd::Mget)
                        if cmd.len() >= 2
                            && cmd[1..].iter().all(|k| plain_key(k))
                            && local(shared, cluster, &cmd[1..]) =>
                    {
                        run_sets(&mut ctx, &args, &mut sets, out);
                        if stop.crossed(out.len()) {
                            break;
                        }
                        gets.push(PendingGet { first: start + 1, mget: Some(cmd.len() - 1) });
                        end_long_run(&mut ctx, &args, &mut gets, out);
                        continue;
                    }
                    Some(Cmd::Set)
                        if cmd.len() >= 3
                            && plain_key(&cmd[1])
                            && !shared.repl.guards_writes()
                            && local(shared, cluster, &cmd[1..2]) =>
                    {
                        run_gets(&mut ctx, &args[..start], &mut gets, out);
                        if stop.crossed(out.len()) {
                            break;
                        }
                        sets.push(PendingSet { start, end: args.len(), spec });
                        continue;
                    }
                    Some(c)
                        if prefetched(c)
                            && cmd.len() >= 2
                            && plain_key(&cmd[1])
                            && !shared.repl.guards_writes()
                            && local(shared, cluster, &cmd[1..2]) =>
                    {
                        // One key, never blocks nor closes: joins the run
                        // of SETs (run_sets), prefetched with it.
                        run_gets(&mut ctx, &args[..start], &mut gets, out);
                        if stop.crossed(out.len()) {
                            break;
                        }
                        sets.push(PendingSet { start, end: args.len(), spec });
                        ctx.session.sets_deep = true;
                        continue;
                    }
                    _ => {}
                }
                run_gets(&mut ctx, &args[..start], &mut gets, out);
                run_sets(&mut ctx, &args, &mut sets, out);
                if stop.crossed(out.len()) {
                    break;
                }
                let after = run_command(&mut ctx, spec, &args[start..], out);
                if after == After::Postpone {
                    // Parsed again once the pause lets it run (its value,
                    // if received in place, stays with the session), and
                    // counted then.
                    *pos -= consumed;
                    bump(&stats.ops.resp_commands, u64::MAX);
                    args.clear();
                    break;
                }
                unauthenticated = ctx.session.auth.required();
                plain = plain_db(&ctx);
                unbatched = shared.pause.on() || shared.repl.refuses_stale();
                ctx.session.prepared = None;
                args.clear();
                if after == After::Close {
                    *close = true;
                    break;
                }
                if ctx.session.blocked.is_some() {
                    break;
                }
            }
        }
    }
    run_gets(&mut ctx, &args, &mut gets, out);
    run_sets(&mut ctx, &args, &mut sets, out);
    if journaled {
        crate::repl::note_writes(ctx.session);
    }
    // Kept only while small: a batch of huge MGETs or long commands does
    // not pin its vectors to the connection.
    if gets.capacity() <= REQUESTS_PER_ROUND_MAX {
        ctx.session.gets = gets;
    }
    if sets.capacity() <= REQUESTS_PER_ROUND_MAX {
        ctx.session.sets = sets;
    }
    if args.capacity() <= ARGS_KEPT_MAX {
        ctx.session.args = recycle(args);
    }
}

/// The most arguments whose vector a connection keeps between batches
/// (24 bytes each: 96 KiB at most).
const ARGS_KEPT_MAX: usize = 4096;

/// `v`'s allocation, emptied, as a vector of arguments of another
/// lifetime: nothing crosses (it is cleared first), and std's in-place
/// `collect` of a `vec::IntoIter` keeps the buffer when the element type
/// has the same size and alignment (it does: only the lifetime differs),
/// so no allocation is made. If a std release stopped doing that the
/// result would still be correct, only a new allocation; the unit test
/// `recycle_keeps_the_allocation` would say so.
fn recycle<'b>(mut v: Vec<Arg<'_>>) -> Vec<Arg<'b>> {
    v.clear();
    v.into_iter().map(|_| -> Arg<'b> { unreachable!("the vector was cleared") }).collect()
}

/// The collection commands that join a run of SETs ([`run_sets`]): one
/// key, the first argument, and run by `run_command` like any other
/// command, never blocking nor closing the connection. A pipeline of
/// them over many keys chases the same pointers one command after the
/// other (bucket, item, and for a large collection its cell, value and
/// chunks: six dependent cache misses for an LPUSH onto a large list,
/// measured with perf in docs/bench-log/2026-11-26-collections.md § Long
/// lists go large, collection runs prefetched); prefetched as a run their
/// misses overlap.
/// For a connection whose user has rules (not `open`): true if this is a
/// command that may join a run (GET, MGET, SET, a prefetched single-key
/// command) and the rules permit it (`acl::permits`). Out of line: an
/// open connection never calls it.
#[cold]
#[inline(never)]
fn may_join_run(auth: &acl::Auth, spec: Option<&'static Spec>, args: &[Arg<'_>]) -> bool {
    spec.is_some_and(|s| matches!(s.cmd, Cmd::Get | Cmd::Mget | Cmd::Set) || prefetched(s.cmd))
        && acl::permits(auth, spec, args)
}

fn prefetched(c: Cmd) -> bool {
    matches!(
        c,
        Cmd::Hset
            | Cmd::Hsetnx
            | Cmd::Hget
            | Cmd::Hmget
            | Cmd::Hdel
            | Cmd::Hlen
            | Cmd::Hexists
            | Cmd::Hincrby
            | Cmd::Lpush
            | Cmd::Rpush
            | Cmd::Lpushx
            | Cmd::Rpushx
            | Cmd::Lpop
            | Cmd::Rpop
            | Cmd::Llen
            | Cmd::Lindex
            | Cmd::Lrange
            | Cmd::Sadd
            | Cmd::Srem
            | Cmd::Sismember
            | Cmd::Smismember
            | Cmd::Scard
            | Cmd::Zadd
            | Cmd::Zincrby
            | Cmd::Zrem
            | Cmd::Zcard
            | Cmd::Zscore
            | Cmd::Zmscore
            | Cmd::Zrank
            | Cmd::Zrange
    )
}

/// Executes the pending run of SETs (each `args[start..end]`) in order,
/// after prefetching the index lines their writes will touch
/// (`Store::prefetch_writes`, MICA §5.3 on the write path): a pipeline's
/// SETs then overlap their cache misses instead of taking them one by one.
/// A run with collection commands in it ([`prefetched`]) is prefetched
/// down to its objects (`Store::prefetch_updates`).
#[inline(always)]
fn run_sets(ctx: &mut Ctx<'_>, args: &[Arg<'_>], sets: &mut Vec<PendingSet>, out: &mut Vec<u8>) {
    // Called at every turn of the batch loop, mostly with no run: the test
    // inline, the run out of line (callgrind: the empty call's prologue
    // and epilogue were 72-80 instructions per unpipelined GET).
    if !sets.is_empty() {
        run_pending_sets(ctx, args, sets, out);
    }
}

#[inline(never)]
fn run_pending_sets(ctx: &mut Ctx<'_>, args: &[Arg<'_>], sets: &mut Vec<PendingSet>, out: &mut Vec<u8>) {
    let deep = std::mem::take(&mut ctx.session.sets_deep);
    if sets.len() > 1 {
        let mut keys = [&[][..]; PREFETCH_SETS_MAX];
        for chunk in sets.chunks(PREFETCH_SETS_MAX) {
            for (k, p) in keys.iter_mut().zip(chunk) {
                *k = &args[p.start + 1];
            }
            if deep {
                ctx.shared.store.prefetch_updates(&keys[..chunk.len()]);
            } else {
                ctx.shared.store.prefetch_writes(&keys[..chunk.len()]);
            }
            for p in chunk {
                // Past the hard limit the rest of the run does not run
                // (`RoundStop`; a SET's reply is small, but the limit may
                // be just above the output).
                if RoundStop::new(ctx.cx.out_stop).crossed(out.len()) {
                    break;
                }
                run_set(ctx, p, &args[p.start..p.end], out);
            }
        }
    } else {
        let p = &sets[0];
        run_set(ctx, p, &args[p.start..p.end], out);
    }
    sets.clear();
}

/// One SET of a run (a SET never closes the connection).
fn run_set(ctx: &mut Ctx<'_>, p: &PendingSet, args: &[Arg<'_>], out: &mut Vec<u8>) {
    // Its database was checked as it joined the run (`plain_db`).
    ctx.plain = true;
    if !ctx.session.auth.open {
        // Checked as it joined the run (`acl::permits`).
        ctx.permitted = true;
        let after = run_command(ctx, p.spec, args, out);
        ctx.permitted = false;
        ctx.plain = false;
        debug_assert!(after == After::Continue, "SET does not close the connection");
        return;
    }
    let after = run_command(ctx, p.spec, args, out);
    ctx.plain = false;
    debug_assert!(after == After::Continue, "SET does not close the connection");
}

/// Runs the pending GETs once they are [`GETS_RUN_REQUESTS_MAX`], so
/// that the round's high-water check sees their replies (`worker.rs`).
#[inline]
fn end_long_run(ctx: &mut Ctx<'_>, args: &[Arg<'_>], gets: &mut Vec<PendingGet>, out: &mut Vec<u8>) {
    if gets.len() >= GETS_RUN_REQUESTS_MAX {
        run_gets(ctx, args, gets, out);
    }
}

/// Executes the pending run of GETs and MGETs as one engine batch,
/// composing each one's reply in order, and counts them (`cmdstats.rs`).
fn run_gets(ctx: &mut Ctx<'_>, args: &[Arg<'_>], gets: &mut Vec<PendingGet>, out: &mut Vec<u8>) {
    if gets.is_empty() {
        return;
    }
    let failed = lookup_gets(ctx, args, gets, out);
    account::account_gets(ctx, args, gets, failed);
    gets.clear();
}

/// The lookups of [`run_gets`]; answers how many GETs failed (WRONGTYPE).
fn lookup_gets(ctx: &mut Ctx<'_>, args: &[Arg<'_>], gets: &[PendingGet], out: &mut Vec<u8>) -> u64 {
    let proto = ctx.proto();
    let mut hits = 0u64;
    let mut failed = 0u64;
    if let [PendingGet { first, mget: None }] = gets[..] {
        // One GET: a plain lookup, nothing to batch.
        let found = ctx.shared.store.get(&args[first], |it| {
            // A collection's bytes are not a string's (amalgam-commands typed.rs).
            if it.tag() != TAG_BYTES {
                failed = 1;
                return push_error(out, typed::WRONGTYPE.as_bytes());
            }
            push_bulk(out, it.value())
        });
        if found.is_some() {
            hits = 1;
        } else {
            push_null(out, proto);
        }
        count_gets(ctx.stats, 1, hits);
        return failed;
    }
    // Sized once: growing from empty reallocated it three times per 16
    // GETs (~67 instructions per GET at pipeline 16, callgrind).
    let mut keys: Vec<&[u8]> = Vec::with_capacity(gets.iter().map(|g| g.mget.unwrap_or(1)).sum());
    for g in gets.iter() {
        keys.extend(args[g.first..g.first + g.mget.unwrap_or(1)].iter().map(|k| &k[..]));
    }
    // Keys come back in order: (request, key within it) follows along.
    let (mut g, mut within) = (0usize, 0usize);
    let stop = ctx.cx.out_stop;
    ctx.shared.store.get_batch(&keys, |_, item| {
        if out.len() >= stop {
            // Past the client's hard limit: the reply stops (`process`
            // closes the client); the lookups left cost no memory.
            return;
        }
        if within == 0 {
            if let Some(n) = gets[g].mget {
                push_array(out, n);
            }
        }
        let is_mget = gets[g].mget.is_some();
        within += 1;
        if within == gets[g].mget.unwrap_or(1) {
            g += 1;
            within = 0;
        }
        match item {
            // A GET of a collection answers WRONGTYPE; MGET gives nil for
            // it, as Redis does.
            Some(it) if it.tag() != TAG_BYTES => {
                if is_mget {
                    push_null(out, proto)
                } else {
                    failed += 1;
                    push_error(out, typed::WRONGTYPE.as_bytes())
                }
            }
            Some(it) => {
                hits += 1;
                push_bulk(out, it.value());
            }
            None => push_null(out, proto),
        }
    });
    count_gets(ctx.stats, keys.len() as u64, hits);
    failed
}

fn count_gets(stats: &WorkerStats, keys: u64, hits: u64) {
    bump(&stats.ops.cmd_get, keys);
    bump(&stats.ops.get_hits, hits);
    bump(&stats.ops.get_misses, keys - hits);
}

/// Redis 7's reply to a command it does not know: the name and the first
/// arguments, each quoted, up to 128 bytes of them (`processCommand`).
fn unknown_command(args: &[Arg<'_>], out: &mut Vec<u8>) {
    /// Redis's `%.128s` on the command name and its 128-byte budget for
    /// the quoted arguments.
    const QUOTED_BYTES_MAX: usize = 128;
    // Each argument is printed with `%.*s`: a C string, so it ends at NUL.
    let c_str = |a: &[u8]| -> Vec<u8> { a.split(|&b| b == 0).next().unwrap_or(b"").to_vec() };
    let mut m = b"ERR unknown command '".to_vec();
    let name = c_str(&args[0]);
    m.extend_from_slice(&name[..name.len().min(QUOTED_BYTES_MAX)]);
    m.extend_from_slice(b"', with args beginning with: ");
    let mut quoted: Vec<u8> = Vec::new();
    for a in &args[1..] {
        if quoted.len() >= QUOTED_BYTES_MAX {
            break;
        }
        let a = c_str(a);
        let room = QUOTED_BYTES_MAX - quoted.len();
        quoted.push(b'\'');
        quoted.extend_from_slice(&a[..a.len().min(room)]);
        quoted.extend_from_slice(b"' ");
    }
    m.extend_from_slice(&quoted);
    push_error(out, &m);
}

/// Runs one command, then applies CLIENT REPLY: a reply the client asked
/// not to get is dropped, and SKIP lasts one command. Subscription
/// confirmations are pushes, which Redis delivers whatever CLIENT REPLY
/// says (its `CLIENT_PUSHING`), in RESP2 as in RESP3: they stay.
fn run_command(ctx: &mut Ctx<'_>, spec: Option<&'static Spec>, args: &[Arg<'_>], out: &mut Vec<u8>) -> After {
    let before = ctx.session.reply;
    let mark = out.len();
    let after = dispatch(ctx, spec, args, out);
    if after == After::Postpone {
        return after;
    }
    if ctx.session.cluster != 0 {
        cluster::after_command(ctx, spec.map(|s| s.cmd));
    }
    account::account(ctx, spec, args, &out[mark..]);
    let now = ctx.session.reply;
    if matches!(before, Reply::Off | Reply::Skip) && now != Reply::On && !subscription_pushes(spec, &out[mark..]) {
        out.truncate(mark);
    }
    ctx.session.reply = match now {
        Reply::SkipNext => Reply::Skip,
        Reply::Skip if before == Reply::Skip => Reply::On,
        r => r,
    };
    after
}

/// True if `reply` is a (un)subscribe command's confirmations, not an
/// error.
fn subscription_pushes(spec: Option<&'static Spec>, reply: &[u8]) -> bool {
    spec.is_some_and(|s| pubsub::changes_subscriptions(s.cmd)) && reply.first().is_some_and(|&b| b == b'*' || b == b'>')
}

fn dispatch(ctx: &mut Ctx<'_>, spec: Option<&'static Spec>, args: &[Arg<'_>], out: &mut Vec<u8>) -> After {
    // NOAUTH and NOPERM before MULTI queues, as Redis's processCommand;
    // skipped (one byte test) when nothing can refuse this connection.
    if !ctx.session.auth.open && !ctx.permitted && acl::refused(ctx, spec, args, out) {
        return After::Continue;
    }
    // Cluster mode routes the command by its keys first (Redis's
    // processCommand: after ACL, before the replication guards and MULTI's
    // queue); one load of a bool otherwise.
    if ctx.shared.cluster.enabled() && !ctx.plain && cluster::redirected(ctx, spec, args, out) {
        return After::Continue;
    }
    // While a script runs past busy-reply-threshold, a command on one of
    // its keys is answered BUSY rather than left waiting for the key
    // (resp/script.rs); one relaxed load otherwise.
    if let Some(s) = spec.filter(|_| ctx.shared.scripts.runs.busy()) {
        if script::refused_busy(ctx, s, args, out) {
            ctx.session.multi.refused_one();
            return After::Continue;
        }
    }
    // A read-only replica, min-replicas-to-write and a stale replica
    // refuse commands before MULTI queues them (Redis's processCommand):
    // one relaxed load when none is on, the checks out of line.
    if ctx.shared.repl.guards_writes() && replication_refused(ctx, spec, args, out) {
        ctx.session.multi.refused_one();
        return After::Continue;
    }
    // CLIENT PAUSE (resp/pause.rs): after the argument count and ACL,
    // before MULTI queues; never the commands EXEC runs, nor a batched
    // SET (`ctx.plain`: it joined its run before the pause was seen). One
    // relaxed load while no pause is on.
    if ctx.shared.pause.on() && !ctx.session.multi.executing && !ctx.plain {
        if let Some(s) = spec.filter(|s| arity_ok(s.arity, args.len())) {
            if pause::hold(ctx, s, args) {
                return After::Postpone;
            }
        }
    }
    if multi::queued(ctx, spec, args, out) {
        return After::Continue;
    }
    let Some(spec) = spec else {
        unknown_command(args, out);
        return After::Continue;
    };
    if !arity_ok(spec.arity, args.len()) {
        wrong_arity(spec.name, out);
        return After::Continue;
    }
    let sub = if spec.subcommands.is_empty() || args.len() < 2 {
        None
    } else {
        spec.subcommands.iter().position(|s| is(&args[1], table::short_name(s)))
    };
    ctx.session.client.set_last_cmd(table::index_of(spec), sub);
    // Redis does not show admin commands (CONFIG SET, CLIENT KILL …) to
    // monitors: a subcommand's own flags decide.
    let own = sub.map_or(spec, |i| &spec.subcommands[i]);
    // RESP2 subscriber mode (one test when not subscribed).
    if pubsub::refused(ctx, spec.cmd, own.name, out) {
        return After::Continue;
    }
    // Monitors see a command as Redis 7.0's `call` feeds them: not an
    // unknown subcommand (refused before it runs); EXEC after the commands
    // it ran, SELECT and RESET in the database they chose (Redis feeds
    // every command once it has run; feeding the rest first shows the
    // same).
    let feed = ctx.shared.clients.monitoring()
        && !own.flags.contains(&"admin")
        && (sub.is_some() || spec.subcommands.is_empty() || args.len() < 2);
    let feed_after = matches!(spec.cmd, Cmd::Exec | Cmd::Select | Cmd::Reset);
    if feed && !feed_after {
        monitor::feed(ctx, args);
    }
    let original = args;
    // The keys in their stored forms for the selected database.
    let encoded = if ctx.plain { None } else { in_database(ctx, own, args) };
    let args = encoded.as_deref().unwrap_or(args);
    // A script holds its keys itself (resp/script.rs: it may run again
    // with more of them); MIGRATE holds none while it waits on its target
    // (resp/migrate.rs); SORT holds its patterns' keys too (sort.rs).
    let after = if multi::may_name_several_keys(own)
        && !scripted(spec.cmd)
        && !matches!(spec.cmd, Cmd::Migrate | Cmd::Sort | Cmd::SortRo)
    {
        multi::with_keys_held(ctx, own, args, |ctx| execute(ctx, spec, args, out))
    } else {
        execute(ctx, spec, args, out)
    };
    if feed && feed_after {
        monitor::feed(ctx, original);
    }
    after
}

/// The replication guards (`Replication::guards_writes` is on): a write
/// on a read-only replica (READONLY) or without enough replicas
/// (NOREPLICAS), and on a replica whose link is down under
/// `replica-serve-stale-data no` a command without the `stale` flag
/// (MASTERDOWN). True if refused (the error is in `out`). A container's
/// subcommand carries its own flags (FUNCTION LOAD).
#[cold]
#[inline(never)]
fn replication_refused(ctx: &Ctx<'_>, spec: Option<&'static Spec>, args: &[Arg<'_>], out: &mut Vec<u8>) -> bool {
    if ctx.session.primary {
        return false;
    }
    let Some(s) = spec.filter(|s| arity_ok(s.arity, args.len())) else { return false };
    let repl = &ctx.shared.repl;
    if s.flags.contains(&"write") || multi::key_spec_of(s, args).flags.contains(&"write") {
        let refusal = if repl.read_only() {
            Some(crate::repl::ERR_READONLY)
        } else if repl.too_few_replicas() {
            Some(crate::repl::ERR_NOREPLICAS)
        } else {
            None
        };
        if let Some(e) = refusal {
            push_error(out, e.as_bytes());
            return true;
        }
    }
    if repl.refuses_stale() && denies_stale(ctx, s, args) {
        push_error(out, crate::repl::ERR_MASTERDOWN.as_bytes());
        return true;
    }
    false
}

/// Whether `replica-serve-stale-data no` refuses the command on a replica
/// whose link is down: its row (or subcommand's) lacks `stale`, or it is
/// an EXEC whose queue holds one that does (Redis's `cmd_inv_flags`).
#[cold]
#[inline(never)]
fn denies_stale(ctx: &Ctx<'_>, spec: &'static Spec, args: &[Arg<'_>]) -> bool {
    let stale = |s: &'static Spec, args: &[Arg<'_>]| multi::key_spec_of(s, args).flags.contains(&"stale");
    if spec.cmd == Cmd::Exec {
        return !ctx.session.multi.queued_all(|c| table::lookup(&c[0]).is_some_and(|s| stale(s, c)));
    }
    !stale(spec, args)
}

/// Resolves the session's database to its engine namespace for this
/// command (`ctx.cx.ns`) and, if any key is not stored as written, the
/// arguments with the keys in their stored forms (`amalgam_commands::db`).
/// Database 0 with no argument beginning with the escape byte (the common
/// case) costs a load and one compare per argument.
#[inline]
pub(crate) fn in_database<'a>(ctx: &mut Ctx<'_>, own: &'static Spec, args: &[Arg<'a>]) -> Option<Vec<Arg<'a>>> {
    let ns = ctx.shared.databases.namespace(ctx.session.db);
    ctx.cx.ns = ns;
    if ns == 0 && !args[1..].iter().any(|a| a.first() == Some(&amalgam_engine::namespace::NS_ESCAPE)) {
        return None;
    }
    // A script encodes its keys itself (`script.rs`): its Lua code sees
    // the names as written.
    if scripted(own.cmd) {
        return None;
    }
    amalgam_commands::db::encode_keys(own, args, ns)
}

/// EVAL and friends, FCALL and FCALL_RO.
#[inline(always)]
fn scripted(cmd: Cmd) -> bool {
    matches!(cmd, Cmd::Eval | Cmd::Evalsha | Cmd::EvalRo | Cmd::EvalshaRo | Cmd::Fcall | Cmd::FcallRo)
}

/// Answers a missing value (`$-1` or `_`).
pub(crate) fn null(ctx: &Ctx<'_>, out: &mut Vec<u8>) {
    push_null(out, ctx.proto());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recycle_keeps_the_allocation() {
        let buf = b"key".to_vec();
        let mut v: Vec<Arg<'_>> = Vec::with_capacity(64);
        v.push(std::borrow::Cow::Borrowed(&buf[..]));
        let p = v.as_ptr() as usize;
        let w: Vec<Arg<'static>> = recycle(v);
        assert!(w.is_empty());
        assert_eq!(w.capacity(), 64);
        assert_eq!(w.as_ptr() as usize, p, "the same buffer");
    }
}
