//! Blocking list and sorted-set commands: BLPOP BRPOP BLMOVE BRPOPLPUSH
//! BLMPOP, BZPOPMIN BZPOPMAX BZMPOP; XREAD BLOCK (a read: it heads no
//! queue it must wait its turn in, and a woken client that finds nothing
//! after its IDs stays blocked at its queue's head).
//!
//! ## What Redis promises, and what we keep
//! A blocking pop on empty lists parks the client until one of its keys
//! gets an element or its timeout passes (then it answers a null array,
//! `*-1` in RESP2, `_` in RESP3 — BLMOVE too). Clients blocked on a key
//! are served in the order they blocked (first blocked, first served). A
//! blocked connection costs no CPU and executes nothing else: the commands
//! it pipelined behind the blocking one wait, as in Redis. A BLMOVE client
//! woken while its destination holds another kind is answered WRONGTYPE
//! and unblocked, nothing popped (Redis 7.0 does the same).
//!
//! Redis is one thread, so it serves blocked clients synchronously at the
//! end of the command that pushed. Here the pusher and the blocked client
//! may be on different workers, so the pusher only *wakes* the client's
//! worker, and the client pops for itself, on its own worker, in its own
//! event loop. Nothing is ever popped on behalf of a client that may be
//! gone: if the client disconnected, its worker has already withdrawn it,
//! and the element stays in the list for the next one.
//!
//! ## The pieces
//! * [`Registry`] (in `Shared`): for each key with blocked clients, the
//!   FIFO of their [`Ticket`]s (worker, connection token, a sequence
//!   number unique to this blocking episode), in [`REGISTRY_SHARDS`]
//!   mutex-protected shards by key hash; plus one mailbox per worker:
//!   `(token, seq)` wake-ups and the worker's `mio::Waker`.
//! * A push ([`Registry::signal`], from every write that can create a list
//!   or add to a sorted set: the pushes, LMOVE's destination, a ZADD or
//!   ZINCRBY that added a member, a *STORE that stored a sorted set, the
//!   destination of COPY, RENAME and RENAMENX) wakes the *head* of the key's
//!   queue: sets its ticket's `notified` flag and, if it was clear, posts
//!   to its worker's mailbox and wakes that worker. With nobody blocked
//!   anywhere (an atomic count) a push pays one relaxed load, no lock.
//! * The woken worker ([`woken`]) clears `notified`, and retries the pop on
//!   the keys where the client is (still) at the head of the queue, the
//!   key whose signal woke it first (`Ticket::ready`: Redis serves a
//!   client from the first of its keys to become ready). Served:
//!   it leaves every queue, its reply goes out and its connection resumes
//!   its pipeline. Not served (another client — a plain LPOP, say — took
//!   the element first): it stays blocked, in place.
//! * Passing on: a client that leaves a queue (served, timed out, or
//!   disconnected) wakes the new head of each of its keys that still holds
//!   elements. So `LPUSH k a b c` with three clients blocked on `k` wakes
//!   the first, which pops `a` and wakes the second, and so on: FIFO, and
//!   no wake-up is lost with a client that left.
//! * A new blocking command does not jump the queue: it pops at once only
//!   from keys with nobody blocked on them; otherwise it queues behind.
//!
//! ## No lost wake-up
//! A client that finds its keys empty registers, *then* tries once more.
//! Both the pop attempt and every push take the key's bucket lock, and the
//! client registered (and counted itself in `blocked`) before its attempt;
//! so either the push came first and the attempt sees the element, or the
//! attempt came first and the pusher, after its push, sees the ticket and
//! wakes it.
//!
//! ## Timeouts, disconnects
//! Redis's timeout: seconds as a `long double`, times 1000, rounded up to
//! whole milliseconds ([`parse_timeout`]); 0 waits forever. Each worker
//! keeps a min-heap of its blocked clients' deadlines and sleeps in
//! `epoll_wait` no longer than the nearest (`worker.rs`). A connection
//! that closes while blocked withdraws its ticket ([`abandon`]) before its
//! slot is freed; a stale mailbox entry or heap entry is recognised by its
//! sequence number and ignored. CLIENT UNBLOCK (from any worker) sees the
//! client's `b` flag (`clients::flag::BLOCKED`, set while a command waits)
//! and posts to the owning worker, which ends the wait as its timeout
//! would or with Redis's UNBLOCKED error ([`unblocked`]).
//!
//! ## Bounds
//! Blocked clients ≤ connections (`-c`): one ticket each, in one queue per
//! distinct key of its command (the command's size bounds those). A
//! mailbox holds at most one entry per ticket (`notified`). A worker's
//! deadline heap is pruned of stale entries once it passes twice its
//! connections plus [`DEADLINES_SLACK`].
//!
//! ## Differences from Redis
//! * Between a push and the woken client's pop, another client's plain
//!   LPOP (or a BLPOP on a key nobody waited on) can take the element; the
//!   blocked client then stays blocked. In Redis the blocked client always
//!   wins (it is served before any other command runs).
//! * BLMOVE's two keys are not one atomic step (see `list.rs`, LMOVE).
//! * CLIENT UNBLOCK answers 1 for a client it saw blocked; if a push
//!   serves that client before its worker takes the request, the request
//!   is dropped, or ends the client's next wait if it has blocked again by
//!   then (Redis, on one thread, has no such window).

use super::list::{self, End, Moved};
use super::table::Cmd;
use super::typed::{self, Access};
use super::zset;
use super::{Arg, Ctx, Session};
use crate::stats::WorkerStats;
use crate::Shared;
use amalgam_commands::stream::Read;
use amalgam_net::clients::flag;
use amalgam_protocol::resp::{err, push_array, push_bulk, push_error, push_null, push_null_array};
use amalgam_types::Kind;
use mio::Waker;
use std::collections::hash_map::RandomState;
use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Shards of the key → waiters map (a push locks one).
pub const REGISTRY_SHARDS: usize = 64;
/// Stale deadlines a worker's heap may hold beyond twice its connections
/// (the heap is the event loop's, amalgam-net `worker.rs`).
pub use amalgam_net::worker::DEADLINES_SLACK;

const ERR_TIMEOUT_NOT_FLOAT: &str = "ERR timeout is not a float or out of range";
const ERR_TIMEOUT_NEGATIVE: &str = "ERR timeout is negative";

/// One blocking episode of one connection.
#[derive(Debug)]
pub struct Ticket {
    worker: usize,
    token: usize,
    seq: u64,
    /// A wake-up is posted and not yet taken: further pushes post none.
    notified: AtomicBool,
    /// The key whose signal posted that wake-up: the woken client tries
    /// it first, as Redis serves a client from the first of its keys that
    /// became ready (a MULTI pushing `k2` then `k1` serves `BLPOP k1 k2`
    /// from `k2`), not from the first it named.
    ready: Mutex<Option<Vec<u8>>>,
}

type Queues = HashMap<Vec<u8>, VecDeque<Arc<Ticket>>>;

/// A worker's inbox of wake-ups.
#[derive(Debug, Default)]
struct Mailbox {
    wakes: Mutex<Vec<(usize, u64)>>,
    waker: OnceLock<Arc<Waker>>,
}

/// Who waits on which key, and how to wake them (module notes).
#[derive(Debug)]
pub struct Registry {
    shards: Box<[Mutex<Queues>]>,
    hasher: RandomState,
    /// Tickets registered now (a push with none takes no lock).
    blocked: AtomicUsize,
    next_seq: AtomicU64,
    mailboxes: Box<[Mailbox]>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Registry {
    /// A registry for `workers` event loops.
    pub fn new(workers: usize) -> Registry {
        Registry {
            shards: (0..REGISTRY_SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            hasher: RandomState::new(),
            blocked: AtomicUsize::new(0),
            next_seq: AtomicU64::new(1),
            mailboxes: (0..workers).map(|_| Mailbox::default()).collect(),
        }
    }

    /// Worker `id` receives its wake-ups through `waker`.
    pub fn attach(&self, id: usize, waker: Arc<Waker>) {
        if let Some(m) = self.mailboxes.get(id) {
            let _ = m.waker.set(waker);
        }
    }

    /// Clients blocked now (INFO's `blocked_clients`).
    pub fn blocked(&self) -> usize {
        self.blocked.load(Ordering::Relaxed)
    }

    /// The wake-ups posted to worker `id`: (connection token, sequence).
    pub fn take_wakes(&self, id: usize) -> Vec<(usize, u64)> {
        self.mailboxes.get(id).map(|m| std::mem::take(&mut *lock(&m.wakes))).unwrap_or_default()
    }

    /// Wakes worker `id`'s event loop (also for `pubsub.rs`'s deliveries:
    /// one waker per worker, whatever woke it).
    pub fn wake(&self, id: usize) {
        if let Some(w) = self.mailboxes.get(id).and_then(|m| m.waker.get()) {
            let _ = w.wake();
        }
    }

    fn shard(&self, key: &[u8]) -> &Mutex<Queues> {
        &self.shards[(self.hasher.hash_one(key) % REGISTRY_SHARDS as u64) as usize]
    }

    /// For each key, true if nobody is blocked on it.
    fn vacant(&self, keys: &[Vec<u8>]) -> Vec<bool> {
        if self.blocked.load(Ordering::SeqCst) == 0 {
            return vec![true; keys.len()];
        }
        keys.iter().map(|k| lock(self.shard(k)).get(k).is_none_or(VecDeque::is_empty)).collect()
    }

    /// Queues `t` behind the clients already blocked on each key.
    fn register(&self, t: &Arc<Ticket>, keys: &[Vec<u8>]) {
        self.blocked.fetch_add(1, Ordering::SeqCst);
        for k in keys {
            lock(self.shard(k)).entry(k.clone()).or_default().push_back(Arc::clone(t));
        }
    }

    /// For each key, true if `t` heads its queue.
    fn heads(&self, t: &Ticket, keys: &[Vec<u8>]) -> Vec<bool> {
        keys.iter()
            .map(|k| lock(self.shard(k)).get(k).and_then(|q| q.front()).is_some_and(|f| f.seq == t.seq))
            .collect()
    }

    /// Takes `t` out of every queue.
    fn unregister(&self, t: &Ticket, keys: &[Vec<u8>]) {
        for k in keys {
            let mut shard = lock(self.shard(k));
            if let Some(q) = shard.get_mut(k) {
                q.retain(|x| x.seq != t.seq);
                if q.is_empty() {
                    shard.remove(k);
                }
            }
        }
        self.blocked.fetch_sub(1, Ordering::SeqCst);
    }

    /// `key` may have elements now: wakes the first client blocked on it,
    /// unless a wake-up is already on its way to it.
    pub fn signal(&self, key: &[u8]) {
        // Relaxed suffices: see "No lost wake-up" (the bucket lock orders
        // a registration before this load or the push before the pop).
        if self.blocked.load(Ordering::Relaxed) == 0 {
            return;
        }
        let head = lock(self.shard(key)).get(key).and_then(|q| q.front().cloned());
        if let Some(t) = head {
            self.post(&t, key);
        }
    }

    /// An XREAD client (`seq`) woken by `key` had nothing to read there
    /// (it asked for IDs past the new entries): wakes the client queued
    /// after it, which may have (Redis checks every reader). Each woken
    /// reader passes on once, so an XADD wakes each reader of the key at
    /// most once more than it serves.
    pub fn signal_next(&self, key: &[u8], seq: u64) {
        let next = lock(self.shard(key)).get(key).and_then(|q| {
            let i = q.iter().position(|t| t.seq == seq)?;
            q.get(i + 1).cloned()
        });
        if let Some(t) = next {
            self.post(&t, key);
        }
    }

    /// Posts a wake-up for `t` by `key`, unless one is on its way.
    fn post(&self, t: &Ticket, key: &[u8]) {
        if t.notified.swap(true, Ordering::AcqRel) {
            return;
        }
        // Before the post: the mailbox's lock orders it before the woken
        // worker's read. The first key stays: a second push that posts
        // again while the worker has cleared `notified` but not yet read
        // `ready` must not replace it (Redis serves from the first key
        // to become ready).
        lock(&t.ready).get_or_insert_with(|| key.to_vec());
        if let Some(m) = self.mailboxes.get(t.worker) {
            lock(&m.wakes).push((t.token, t.seq));
            if let Some(w) = m.waker.get() {
                let _ = w.wake();
            }
        }
    }
}

/// What a blocked client is waiting to do.
#[derive(Debug)]
enum Op {
    /// BLPOP, BRPOP (`count` None: reply `[key, element]`), BLMPOP
    /// (`count`: reply `[key, [elements]]`).
    Pop { end: End, count: Option<usize> },
    /// BLMOVE, BRPOPLPUSH.
    Move { dst: Vec<u8>, from: End, to: End },
    /// BZPOPMIN, BZPOPMAX (`count` None: reply `[key, member, score]`),
    /// BZMPOP (`count`: reply `[key, [[member, score]...]]`).
    ZPop { max: bool, count: Option<usize> },
    /// WAIT: until `replicas` replicas acknowledged the stream up to
    /// `offset` (`crate::repl`); no keys. Woken by the replicas' acks,
    /// answered with the count on its deadline.
    Wait { offset: u64, replicas: u64 },
    /// XREAD BLOCK: entries after its IDs (reads, takes nothing).
    XRead(Box<Read>),
    /// A command postponed by CLIENT PAUSE (`pause.rs`): its bytes wait
    /// unparsed; woken by UNPAUSE or a new pause, or at the pause's end,
    /// the connection parses it again. No keys, no reply of its own.
    Pause,
}

impl Op {
    /// The kind of value the command waits on.
    fn kind(&self) -> Kind {
        match self {
            Op::ZPop { .. } => Kind::ZSet,
            Op::XRead(_) => Kind::Stream,
            _ => Kind::List,
        }
    }
}

/// A connection's blocked command (in its [`Session`]).
#[derive(Debug)]
pub struct Blocked {
    op: Op,
    /// The distinct keys, in the command's order.
    keys: Vec<Vec<u8>>,
    ticket: Arc<Ticket>,
    deadline: Option<Instant>,
    /// The deadline is in the worker's heap.
    armed: bool,
}

/// Redis's `getTimeoutFromObjectOrReply` in seconds: `strtold`, times
/// 1000 in `long double`, rounded up (`ceill`), converted to a `long
/// long` (out of range: `LLONG_MIN`, x86's conversion, so "negative").
/// Ok(None): wait forever (0, or a deadline past any clock).
pub(crate) fn parse_timeout(a: &[u8]) -> Result<Option<Duration>, &'static str> {
    let v = amalgam_types::hash::ld::parse(a).ok_or(ERR_TIMEOUT_NOT_FLOAT)?;
    let ms = amalgam_types::hash::ld::times_1000_ceil(v).unwrap_or(i64::MIN);
    if ms < 0 {
        return Err(ERR_TIMEOUT_NEGATIVE);
    }
    Ok((ms > 0).then(|| Duration::from_millis(ms as u64)))
}

/// The distinct keys of `keys`, in order (a set, not a scan of the ones
/// kept: a command may name a million keys).
fn distinct(keys: &[Arg<'_>]) -> Vec<Vec<u8>> {
    let mut seen: std::collections::HashSet<&[u8]> = std::collections::HashSet::with_capacity(keys.len());
    keys.iter().filter(|k| seen.insert(&k[..])).map(|k| k.to_vec()).collect()
}

/// A parsed blocking command: what to do, on which keys, for how long
/// (None: forever).
type Parsed = (Op, Vec<Vec<u8>>, Option<Duration>);

/// Parses a blocking command.
fn parse(cmd: Cmd, args: &[Arg<'_>]) -> Result<Parsed, &'static str> {
    match cmd {
        Cmd::Blpop | Cmd::Brpop => {
            let timeout = parse_timeout(&args[args.len() - 1])?;
            let end = if cmd == Cmd::Blpop { End::Left } else { End::Right };
            Ok((Op::Pop { end, count: None }, distinct(&args[1..args.len() - 1]), timeout))
        }
        Cmd::Blmove | Cmd::Brpoplpush => {
            let (from, to, t) = if cmd == Cmd::Brpoplpush {
                (End::Right, End::Left, &args[3])
            } else {
                let from = list::end_arg(&args[3]).ok_or(err::SYNTAX)?;
                let to = list::end_arg(&args[4]).ok_or(err::SYNTAX)?;
                (from, to, &args[5])
            };
            let timeout = parse_timeout(t)?;
            Ok((Op::Move { dst: args[2].to_vec(), from, to }, vec![args[1].to_vec()], timeout))
        }
        Cmd::Blmpop => {
            // Redis parses numkeys, the keys, the end and COUNT first,
            // then the timeout.
            let m = list::mpop_args(args, 2)?;
            let timeout = parse_timeout(&args[1])?;
            Ok((Op::Pop { end: m.end, count: Some(m.count) }, distinct(&args[3..3 + m.numkeys]), timeout))
        }
        Cmd::Bzpopmin | Cmd::Bzpopmax => {
            let timeout = parse_timeout(&args[args.len() - 1])?;
            let op = Op::ZPop { max: cmd == Cmd::Bzpopmax, count: None };
            Ok((op, distinct(&args[1..args.len() - 1]), timeout))
        }
        Cmd::Bzmpop => {
            // As BLMPOP: numkeys, the keys, MIN|MAX and COUNT, then the
            // timeout.
            let m = zset::mpop_args(args, 2)?;
            let timeout = parse_timeout(&args[1])?;
            Ok((Op::ZPop { max: m.max, count: Some(m.count) }, distinct(&args[3..3 + m.numkeys]), timeout))
        }
        _ => unreachable!("not a blocking command: {cmd:?}"),
    }
}

/// Whether an attempt answered the client.
#[derive(Debug, PartialEq, Eq)]
enum Try {
    Served,
    Wait,
}

/// Tries to serve `op` from `keys[i]` where `may[i]` (the client heads
/// that key's queue). On the `first` attempt a key of another kind
/// answers WRONGTYPE, as Redis checks every key in order before blocking;
/// later, such a key is passed over (Redis does not wake a client for a
/// key that became another kind).
fn attempt(ctx: &Ctx<'_>, op: &Op, keys: &[Vec<u8>], may: &[bool], first: bool, out: &mut Vec<u8>) -> Try {
    if let Op::XRead(r) = op {
        // A read takes nothing: no queue to head. Woken, it answers the
        // stream that woke it first (`keys` starts with it), as Redis.
        let order: Vec<usize> = keys.iter().filter_map(|k| r.keys.iter().position(|x| x == k)).collect();
        return if r.serve(&ctx.cx, &order, !first, out) { Try::Served } else { Try::Wait };
    }
    for (k, &may) in keys.iter().zip(may) {
        if !may {
            if first && read_kind(ctx, k, op.kind()) == Access::WrongType {
                push_error(out, typed::WRONGTYPE.as_bytes());
                return Try::Served;
            }
            continue;
        }
        match op {
            // No keys: never reached (woken and timed_out answer WAIT);
            // a read is answered above.
            Op::Wait { .. } | Op::XRead(_) | Op::Pause => return Try::Wait,
            Op::Pop { end, count } => match list::pop(&ctx.cx, k, *end, count.unwrap_or(1)) {
                Ok(Access::Done(elems)) if !elems.is_empty() => {
                    match count {
                        Some(_) => list::reply_key_elements(k, &elems, out),
                        None => {
                            push_array(out, 2);
                            amalgam_commands::db::push_key(out, k);
                            push_bulk(out, &elems[0]);
                        }
                    }
                    return Try::Served;
                }
                Ok(Access::Done(_)) | Ok(Access::Absent) => {}
                Ok(Access::WrongType) if first => {
                    push_error(out, typed::WRONGTYPE.as_bytes());
                    return Try::Served;
                }
                Ok(Access::WrongType) => {}
                Err(e) => {
                    e.reply(out);
                    return Try::Served;
                }
            },
            Op::ZPop { max, count } => match zset::pop(&ctx.cx, k, *max, count.unwrap_or(1)) {
                Ok(Access::Done(pairs)) if !pairs.is_empty() => {
                    let proto = ctx.proto();
                    match count {
                        Some(_) => zset::reply_key_pairs(out, proto, k, &pairs),
                        None => {
                            push_array(out, 3);
                            amalgam_commands::db::push_key(out, k);
                            push_bulk(out, &pairs[0].0);
                            zset::push_score(out, proto, pairs[0].1);
                        }
                    }
                    return Try::Served;
                }
                Ok(Access::Done(_)) | Ok(Access::Absent) => {}
                Ok(Access::WrongType) if first => {
                    push_error(out, typed::WRONGTYPE.as_bytes());
                    return Try::Served;
                }
                Ok(Access::WrongType) => {}
                Err(e) => {
                    e.reply(out);
                    return Try::Served;
                }
            },
            Op::Move { dst, from, to } => {
                match read_kind(ctx, k, Kind::List) {
                    Access::Absent => return Try::Wait,
                    Access::WrongType if first => {
                        push_error(out, typed::WRONGTYPE.as_bytes());
                        return Try::Served;
                    }
                    Access::WrongType => return Try::Wait,
                    Access::Done(()) => {}
                }
                let m = list::lmove(&ctx.cx, k, dst, *from, *to);
                if matches!(m, Moved::Absent) {
                    return Try::Wait;
                }
                m.reply(out, |_| {});
                return Try::Served;
            }
        }
    }
    Try::Wait
}

/// Whether `key` holds `kind`, is missing, or holds another kind.
fn read_kind(ctx: &Ctx<'_>, key: &[u8], kind: Kind) -> Access<()> {
    typed::read(&ctx.cx, key, kind, |_| ())
}

/// Wakes the next client on each of `keys` that still holds something
/// (module notes, "passing on").
fn pass_on(shared: &Shared, keys: &[Vec<u8>]) {
    for k in keys {
        if shared.store.get(k, |_| ()).is_some() {
            shared.blocking.signal(k);
        }
    }
}

/// BLPOP BRPOP BLMOVE BRPOPLPUSH BLMPOP BZPOPMIN BZPOPMAX BZMPOP: serves
/// at once if it can,
/// else leaves the connection blocked (`Session::blocked`).
pub(crate) fn run(ctx: &mut Ctx<'_>, cmd: Cmd, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let (op, keys, timeout) = match parse(cmd, args) {
        Ok(p) => p,
        Err(e) => return push_error(out, e.as_bytes()),
    };
    let may = ctx.shared.blocking.vacant(&keys);
    if attempt(ctx, &op, &keys, &may, true, out) == Try::Served {
        return;
    }
    park(ctx, op, keys, timeout, out);
}

/// XREAD, XREADGROUP: answers at once, or blocks with BLOCK (module
/// notes; a read skips no queue).
pub(crate) fn xread(ctx: &mut Ctx<'_>, cmd: Cmd, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let Some(r) = Read::parse(&ctx.cx, args, cmd == Cmd::Xreadgroup, out) else { return };
    let all: Vec<usize> = (0..r.keys.len()).collect();
    if r.serve(&ctx.cx, &all, false, out) {
        return;
    }
    // A script's BLOCK was refused by the parse (as Redis 7.0 does);
    // this is a second guard: a script never blocks.
    let Some(timeout) = r.block.filter(|_| !ctx.cx.scripted) else {
        return push_null_array(out, ctx.proto());
    };
    let keys = distinct(&r.keys.iter().map(|k| Arg::Borrowed(&k[..])).collect::<Vec<_>>());
    park(ctx, Op::XRead(Box::new(r)), keys, timeout, out);
}

/// Blocks the connection in `op` on `keys` (its first attempt failed).
fn park(ctx: &mut Ctx<'_>, op: Op, keys: Vec<Vec<u8>>, timeout: Option<Duration>, out: &mut Vec<u8>) {
    let registry = &ctx.shared.blocking;
    // Inside EXEC nothing blocks: Redis answers as a client that may not
    // block, a null array (BLMOVE and BRPOPLPUSH: a null bulk, `$-1` in
    // RESP2). Off a worker's connection (cannot happen in the server):
    // the same.
    let home = ctx.session.home.filter(|_| !ctx.session.multi.executing);
    let Some((worker, token)) = home else {
        return match op {
            Op::Move { .. } => push_null(out, ctx.proto()),
            _ => push_null_array(out, ctx.proto()),
        };
    };
    let ticket = Ticket::new(worker, token, registry.next_seq.fetch_add(1, Ordering::Relaxed));
    registry.register(&ticket, &keys);
    // Once more, now that a push would wake us (module notes).
    let may = registry.heads(&ticket, &keys);
    if attempt(ctx, &op, &keys, &may, false, out) == Try::Served {
        registry.unregister(&ticket, &keys);
        pass_on(ctx.shared, &keys);
        return;
    }
    let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
    ctx.session.blocked = Some(Box::new(Blocked { op, keys, ticket, deadline, armed: false }));
    ctx.session.client.set_flag(flag::BLOCKED, true);
}

fn ctx<'c>(
    shared: &'c Shared,
    stats: &'c WorkerStats,
    ks: &'c amalgam_commands::Keyspace<'c>,
    session: &'c mut Session,
) -> Ctx<'c> {
    let out_stop = shared.obuf.hard_stop(super::output_class(session));
    Ctx::new(shared, stats, ks, session, shared.resp_limits(), out_stop, amalgam_net::ticks::now())
}

/// Redis 7.0's reply to a client CLIENT UNBLOCK ... ERROR ends.
pub const UNBLOCKED: &str = "UNBLOCKED client unblocked via CLIENT UNBLOCK";

/// CLIENT UNBLOCK reached the connection of `session` (on its own worker,
/// `clients::Registry::unblock`): if it still waits in a blocking command,
/// the wait ends as its timeout would end it, or with [`UNBLOCKED`] when
/// `error`, as Redis's `clientUnblock` does. True if it ended (the reply is
/// in `out`; the connection runs again).
pub fn unblocked(shared: &Shared, stats: &WorkerStats, session: &mut Session, error: bool, out: &mut Vec<u8>) -> bool {
    let Some(seq) = session.blocked.as_ref().filter(|b| !matches!(b.op, Op::Pause)).map(|b| b.ticket.seq) else {
        return false;
    };
    if !error {
        return timed_out(shared, session, seq, out);
    }
    abandon(shared, session);
    let mark = out.len();
    push_error(out, UNBLOCKED.as_bytes());
    stats.errors.note(&out[mark..]);
    true
}

/// A wake-up `(_, seq)` reached the connection of `session`: retries its
/// blocked command. True if it is served (its reply is in `out`) and the
/// connection runs again.
pub fn woken(
    shared: &Shared,
    stats: &WorkerStats,
    ks: &amalgam_commands::Keyspace<'_>,
    session: &mut Session,
    seq: u64,
    out: &mut Vec<u8>,
) -> bool {
    let Some(b) = session.blocked.take_if(|b| b.ticket.seq == seq) else { return false };
    // Cleared before the attempt: a push after this point posts again.
    b.ticket.notified.store(false, Ordering::Release);
    if matches!(b.op, Op::Pause) {
        end_pause(shared, &b);
        return true;
    }
    if let Op::Wait { offset, replicas } = b.op {
        let acked = shared.repl.acked(offset);
        if acked >= replicas {
            end_wait(shared, &b);
            session.client.set_flag(flag::BLOCKED, false);
            amalgam_protocol::resp::push_int(out, acked as i64);
            return true;
        }
        session.blocked = Some(b);
        return false;
    }
    let may = shared.blocking.heads(&b.ticket, &b.keys);
    // The key that became ready first is tried first (`Ticket::ready`).
    let (mut keys, mut may) = (b.keys.clone(), may);
    let ready = lock(&b.ticket.ready).take();
    if let Some(i) = ready.as_ref().and_then(|r| keys.iter().position(|k| k == r)) {
        keys[..=i].rotate_right(1);
        may[..=i].rotate_right(1);
    }
    let c = ctx(shared, stats, ks, session);
    // Its keys held, as a multi-key command is when it runs first
    // (resp/multi.rs): BLMOVE's pop and push happen at once.
    let mut held: Vec<&[u8]> = b.keys.iter().map(|k| &k[..]).collect();
    if let Op::Move { dst, .. } = &b.op {
        held.push(dst);
    }
    let mark = out.len();
    let served = shared.store.atomically(&held, || attempt(&c, &b.op, &keys, &may, false, out));
    if out.get(mark) == Some(&b'-') {
        stats.errors.note(&out[mark..]);
    }
    if served == Try::Served {
        shared.blocking.unregister(&b.ticket, &b.keys);
        if matches!(b.op, Op::XRead(_)) {
            // The next reader may be answered even by a key now gone
            // (XREADGROUP's UNBLOCKED): woken whatever the key holds.
            for k in &b.keys {
                shared.blocking.signal(k);
            }
        } else {
            pass_on(shared, &b.keys);
        }
        session.client.set_flag(flag::BLOCKED, false);
        return true;
    }
    if matches!(b.op, Op::XRead(_)) {
        // Module notes of `Registry::signal_next`.
        for k in b.keys.iter().filter(|k| ready.as_ref().is_none_or(|r| r == *k)) {
            shared.blocking.signal_next(k, b.ticket.seq);
        }
    }
    session.blocked = Some(b);
    false
}

/// The deadline `(_, seq)` of the connection of `session` passed: if it is
/// still blocked in that episode, answers the timeout's null and returns
/// true (the connection runs again).
pub fn timed_out(shared: &Shared, session: &mut Session, seq: u64, out: &mut Vec<u8>) -> bool {
    let Some(b) = session.blocked.take_if(|b| b.ticket.seq == seq) else { return false };
    if matches!(b.op, Op::Pause) {
        end_pause(shared, &b);
        return true;
    }
    session.client.set_flag(flag::BLOCKED, false);
    if let Op::Wait { offset, .. } = b.op {
        end_wait(shared, &b);
        amalgam_protocol::resp::push_int(out, shared.repl.acked(offset) as i64);
        return true;
    }
    shared.blocking.unregister(&b.ticket, &b.keys);
    pass_on(shared, &b.keys);
    push_null_array(out, session.proto);
    true
}

/// A WAIT episode ends (answered, timed out or its client gone).
fn end_wait(shared: &Shared, b: &Blocked) {
    shared.repl.forget_waiter(b.ticket.seq);
    shared.blocking.unregister(&b.ticket, &b.keys);
}

/// A command postponed by CLIENT PAUSE (`pause.rs`) stops waiting.
fn end_pause(shared: &Shared, b: &Blocked) {
    shared.pause.forget(b.ticket.seq);
    shared.blocking.unregister(&b.ticket, &b.keys);
}

/// CLIENT PAUSE holds the command at the front of the connection's input
/// until `until` (or until UNPAUSE, or a new pause): the connection waits
/// as a blocked client, counted in `blocked_clients` but not flagged
/// blocked (CLIENT UNBLOCK leaves it alone, as Redis's does). False off a
/// worker (the command then runs).
pub(crate) fn postpone(ctx: &mut Ctx<'_>, until: Instant) -> bool {
    let shared = ctx.shared;
    let Some((worker, token)) = ctx.session.home else { return false };
    let registry = &shared.blocking;
    let ticket = Ticket::new(worker, token, registry.next_seq.fetch_add(1, Ordering::Relaxed));
    registry.register(&ticket, &[]);
    shared.pause.wait(Arc::clone(&ticket));
    ctx.session.blocked =
        Some(Box::new(Blocked { op: Op::Pause, keys: Vec::new(), ticket, deadline: Some(until), armed: false }));
    true
}

/// WAIT that cannot answer yet: blocks the connection until `replicas`
/// replicas acknowledged `offset` or `timeout` passes (None: forever).
/// Inside EXEC (or off a worker) it answers the count now, as Redis does
/// for a client that may not block.
pub(crate) fn block_wait(ctx: &mut Ctx<'_>, offset: u64, replicas: u64, timeout: Option<Duration>, out: &mut Vec<u8>) {
    let shared = ctx.shared;
    let home = ctx.session.home.filter(|_| !ctx.session.multi.executing);
    let Some((worker, token)) = home else {
        return amalgam_protocol::resp::push_int(out, shared.repl.acked(offset) as i64);
    };
    let registry = &shared.blocking;
    let ticket = Ticket::new(worker, token, registry.next_seq.fetch_add(1, Ordering::Relaxed));
    registry.register(&ticket, &[]);
    let me = shared.arc().map(|s| Arc::downgrade(&s)).unwrap_or_default();
    shared.repl.add_waiter(
        Box::new(crate::repl::WaitTicket { ticket: Arc::clone(&ticket), shared: me }),
        offset,
        replicas,
    );
    // Once more, now that an ack would wake us (an ack between the
    // caller's count and the registration would otherwise be missed).
    let acked = shared.repl.acked(offset);
    let b = Blocked { op: Op::Wait { offset, replicas }, keys: Vec::new(), ticket, deadline: None, armed: false };
    if acked >= replicas {
        end_wait(shared, &b);
        return amalgam_protocol::resp::push_int(out, acked as i64);
    }
    // The replicas ack once a second on their own: ask them now.
    shared.repl.backlog.request_acks();
    let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
    ctx.session.blocked = Some(Box::new(Blocked { deadline, ..b }));
    ctx.session.client.set_flag(flag::BLOCKED, true);
}

/// Wakes the WAIT client of `ticket` (from a replica's ack thread),
/// unless a wake-up is already on its way.
pub fn wake_ticket(shared: &Shared, ticket: &Ticket) {
    if ticket.notified.swap(true, Ordering::AcqRel) {
        return;
    }
    if let Some(m) = shared.blocking.mailboxes.get(ticket.worker) {
        lock(&m.wakes).push((ticket.token, ticket.seq));
        if let Some(w) = m.waker.get() {
            let _ = w.wake();
        }
    }
}

impl Ticket {
    fn new(worker: usize, token: usize, seq: u64) -> Arc<Ticket> {
        Arc::new(Ticket { worker, token, seq, notified: AtomicBool::new(false), ready: Mutex::new(None) })
    }

    /// Its blocking episode's number.
    pub fn seq(&self) -> u64 {
        self.seq
    }
}

/// The connection of `session` is closing: withdraws its blocked command,
/// if any (nothing is popped for it).
pub fn abandon(shared: &Shared, session: &mut Session) {
    if let Some(b) = session.blocked.take() {
        session.client.set_flag(flag::BLOCKED, false);
        if matches!(b.op, Op::Wait { .. }) {
            return end_wait(shared, &b);
        }
        if matches!(b.op, Op::Pause) {
            return end_pause(shared, &b);
        }
        shared.blocking.unregister(&b.ticket, &b.keys);
        pass_on(shared, &b.keys);
    }
}

/// A deadline the worker must watch, once per blocking episode:
/// `(deadline, seq)`.
pub fn new_deadline(session: &mut Session) -> Option<(Instant, u64)> {
    let b = session.blocked.as_deref_mut().filter(|b| !b.armed)?;
    b.armed = true;
    Some((b.deadline?, b.ticket.seq))
}

/// True while the connection of `session` waits in a blocking command.
pub fn is_blocked(session: &Session) -> bool {
    session.blocked.is_some()
}

/// True while the connection of `session` waits in blocking episode `seq`.
pub fn is_waiting(session: &Session, seq: u64) -> bool {
    session.blocked.as_ref().is_some_and(|b| b.ticket.seq == seq)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ticket(r: &Registry, worker: usize, token: usize) -> Arc<Ticket> {
        let seq = r.next_seq.fetch_add(1, Ordering::Relaxed);
        Ticket::new(worker, token, seq)
    }

    #[test]
    fn queues_are_fifo_and_a_signal_wakes_the_head_once() {
        let r = Registry::new(2);
        let (k, j) = (b"k".to_vec(), b"j".to_vec());
        let only_k = vec![k.clone()];
        assert_eq!(r.vacant(&only_k), [true]);
        let t1 = ticket(&r, 0, 5);
        let t2 = ticket(&r, 1, 7);
        r.register(&t1, &only_k);
        r.register(&t2, &[j.clone(), k.clone()]);
        assert_eq!(r.blocked(), 2);
        assert_eq!(r.vacant(&[k.clone(), j.clone(), b"x".to_vec()]), [false, false, true]);
        assert_eq!(r.heads(&t1, &only_k), [true]);
        assert_eq!(r.heads(&t2, &[j.clone(), k.clone()]), [true, false]);
        // Two pushes before the worker looks: one wake-up.
        r.signal(&k);
        r.signal(&k);
        assert_eq!(r.take_wakes(0), [(5, t1.seq)]);
        assert!(r.take_wakes(1).is_empty());
        // Cleared by the woken client, a new push posts again.
        t1.notified.store(false, Ordering::Release);
        r.signal(&k);
        assert_eq!(r.take_wakes(0), [(5, t1.seq)]);
        // The head leaves: the next one heads and is woken.
        r.unregister(&t1, &only_k);
        assert_eq!(r.heads(&t2, &[j.clone(), k.clone()]), [true, true]);
        r.signal(&k);
        assert_eq!(r.take_wakes(1), [(7, t2.seq)]);
        r.unregister(&t2, &[j.clone(), k.clone()]);
        assert_eq!(r.blocked(), 0);
        assert!(r.shards.iter().all(|s| lock(s).is_empty()), "no queue left behind");
        r.signal(&k);
        assert!(r.take_wakes(0).is_empty() && r.take_wakes(1).is_empty());
    }

    #[test]
    fn timeouts_parse_as_redis() {
        assert_eq!(parse_timeout(b"0"), Ok(None));
        assert_eq!(parse_timeout(b"-0.0001"), Ok(None), "rounds up to 0: forever");
        assert_eq!(parse_timeout(b"1.5"), Ok(Some(Duration::from_millis(1500))));
        assert_eq!(parse_timeout(b"0.0009"), Ok(Some(Duration::from_millis(1))));
        assert_eq!(parse_timeout(b"x"), Err(ERR_TIMEOUT_NOT_FLOAT));
        assert_eq!(parse_timeout(b" 1"), Err(ERR_TIMEOUT_NOT_FLOAT));
        assert_eq!(parse_timeout(b"nan"), Err(ERR_TIMEOUT_NOT_FLOAT));
        assert_eq!(parse_timeout(b"-1"), Err(ERR_TIMEOUT_NEGATIVE));
        assert_eq!(parse_timeout(b"inf"), Err(ERR_TIMEOUT_NEGATIVE));
    }
}
