//! Transactions: MULTI EXEC DISCARD WATCH UNWATCH, and the atomicity of
//! every multi-key command.
//!
//! Both run on the engine's `Store::atomically` (engine `txn.rs`: the
//! design, why it needs no global lock and no change to the single-key
//! paths, and its deadlock argument). The server's part is to name the
//! keys: each command's keys come from its key specifications
//! (`table::keys_of`, the same that answer COMMAND GETKEYS), so a command
//! runs with exactly its keys' buckets held.
//!
//! * A multi-key command (SMOVE, LMOVE, MSET, DEL a b, SINTERSTORE,
//!   ZUNIONSTORE, RENAME, BLPOP a b …) that names two or more distinct keys
//!   runs inside `atomically` over them. A single-key command, and GET and
//!   MGET batched by the pipeline path (`resp.rs`), take no extra step;
//!   MGET therefore reads each key atomically but not all of them at one
//!   instant (Redis, with one thread, gives one instant; Amalgam does
//!   inside MULTI/EXEC).
//! * MULTI queues commands (owned copies of their arguments) and answers
//!   +QUEUED; an unknown command or a wrong argument count answers its
//!   error and makes EXEC answer EXECABORT, as in Redis. EXEC takes the
//!   keys of every queued command and every watched key, holds them all,
//!   checks the watched keys, and runs the queue; its replies leave as one
//!   array. Blocking commands inside EXEC do not block (Redis: "as if the
//!   timeout expired").
//! * WATCH records each key's stamp (`ItemRef::stamp`: CAS unique,
//!   deadline, and an object's in-place write count; absent for a missing
//!   or expired key). EXEC, holding the keys, compares: any difference
//!   aborts (a nil reply). So a watched key written by anyone, expired,
//!   deleted or flushed aborts, as in Redis. Difference: a key that was
//!   absent at WATCH, then created and deleted again, reads as unchanged
//!   (Redis counts the writes). The transaction still runs on the state
//!   its WATCH saw, so its outcome is one Redis could also have produced.
//!
//! Persistence: each command of an EXEC is journaled as it runs (one
//! record per change, as outside a transaction); the log has no
//! transaction framing, so a crash in the middle of an EXEC can recover
//! part of it (Redis's AOF wraps it in MULTI … EXEC and discards an
//! unfinished one at load).
//!
//! Limits: a connection's queue holds at most [`MULTI_QUEUED_BYTES_MAX`]
//! bytes of arguments and its watch list [`WATCHED_KEYS_MAX`] keys (Redis
//! bounds neither but by client memory); past either, the command answers
//! an error and, inside MULTI, EXEC aborts.

use super::table::{self, Cmd, Spec};
use super::After;
use super::{arity_ok, run_command, unknown_command, wrong_arity, Arg, Ctx};
use amalgam_protocol::resp::{push_array, push_error, push_null_array, push_simple};

/// Bytes of queued arguments one connection's MULTI may hold (Redis's
/// `proto-max-bulk-len` default: a transaction is at most one large
/// request's worth).
pub const MULTI_QUEUED_BYTES_MAX: usize = 512 << 20;
/// Per-argument overhead counted against [`MULTI_QUEUED_BYTES_MAX`] (the
/// vector header of the owned copy).
const ARG_OVERHEAD_BYTES: usize = 24;
/// Keys one connection may WATCH at once.
pub const WATCHED_KEYS_MAX: usize = 1 << 20;

const ERR_NESTED: &str = "ERR MULTI calls can not be nested";
const ERR_EXEC_WITHOUT: &str = "ERR EXEC without MULTI";
const ERR_DISCARD_WITHOUT: &str = "ERR DISCARD without MULTI";
const ERR_WATCH_INSIDE: &str = "ERR WATCH inside MULTI is not allowed";
const ERR_EXECABORT: &str = "EXECABORT Transaction discarded because of previous errors.";
const ERR_NOT_IN_MULTI: &str = "ERR Command not allowed inside a transaction";
const ERR_QUEUE_FULL: &str = "ERR MULTI queue full: a transaction may queue at most 512 MiB of arguments";
const ERR_WATCH_FULL: &str = "ERR too many watched keys";

/// One connection's transaction state.
#[derive(Debug, Default)]
pub struct Multi {
    /// Inside MULTI: the queued commands (owned argument vectors).
    pub(crate) queue: Option<Vec<Vec<Vec<u8>>>>,
    /// Bytes the queue holds (arguments plus their overhead).
    queued_bytes: usize,
    /// A command failed to queue: EXEC answers EXECABORT.
    dirty: bool,
    /// WATCHed keys and their stamps when watched (None: absent).
    watched: Vec<(Vec<u8>, Option<[u64; 3]>)>,
    /// SWAPDBs run before the first WATCH (`Databases::generation`): one
    /// since aborts the EXEC.
    watch_generation: u64,
    /// EXEC is running the queue: blocking commands do not block.
    pub(crate) executing: bool,
}

impl Multi {
    /// Inside MULTI (commands are queued).
    pub fn queuing(&self) -> bool {
        self.queue.is_some()
    }

    /// Whether a queued command writes or may replicate: CLIENT PAUSE
    /// WRITE holds such an EXEC (`pause.rs`).
    pub(crate) fn queue_writes(&self) -> bool {
        !self.queued_all(|c| table::lookup(&c[0]).is_none_or(|s| !super::pause::writes(s, c)))
    }

    /// False if a queued command fails `ok` (its arguments, owned);
    /// true for an empty queue or none.
    pub(crate) fn queued_all(&self, mut ok: impl FnMut(&[super::Arg<'_>]) -> bool) -> bool {
        !self.queue.iter().flatten().any(|c| {
            let args: Vec<super::Arg<'_>> = c.iter().map(|a| super::Arg::from(&a[..])).collect();
            !ok(&args)
        })
    }

    /// A command was refused before queueing (READONLY, NOREPLICAS):
    /// EXEC answers EXECABORT, as Redis's `flagTransaction`.
    pub(crate) fn refused_one(&mut self) {
        if self.queuing() {
            self.dirty = true;
        }
    }
}

/// Commands that run at once even inside MULTI (Redis's `processCommand`).
fn runs_inside_multi(cmd: Cmd) -> bool {
    matches!(cmd, Cmd::Exec | Cmd::Discard | Cmd::Multi | Cmd::Watch | Cmd::Quit | Cmd::Reset)
}

/// Inside MULTI, before dispatch: queues the command and answers +QUEUED,
/// or answers the error that makes EXEC abort. Returns false when the
/// command is to run now (not inside MULTI, or one of those that run).
pub(crate) fn queued(ctx: &mut Ctx<'_>, spec: Option<&'static Spec>, args: &[Arg<'_>], out: &mut Vec<u8>) -> bool {
    if !ctx.session.multi.queuing() {
        return false;
    }
    let m = &mut ctx.session.multi;
    let Some(spec) = spec else {
        m.dirty = true;
        unknown_command(args, out);
        return true;
    };
    if runs_inside_multi(spec.cmd) {
        return false;
    }
    if !arity_ok(spec.arity, args.len()) {
        m.dirty = true;
        wrong_arity(spec.name, out);
        return true;
    }
    if spec.flags.contains(&"no_multi") {
        m.dirty = true;
        push_error(out, ERR_NOT_IN_MULTI.as_bytes());
        return true;
    }
    // Redis 7.0's processCommand: past maxmemory with nothing left to
    // evict (performEvictions' EVICT_FAIL), every command but EXEC,
    // DISCARD, QUIT and RESET is refused inside MULTI ("queuing may
    // consume an unlimited amount of memory"), and EXEC then aborts.
    if ctx.shared.store.out_of_memory() {
        m.dirty = true;
        push_error(out, amalgam_protocol::resp::err::OOM.as_bytes());
        return true;
    }
    let bytes: usize = args.iter().map(|a| a.len() + ARG_OVERHEAD_BYTES).sum();
    if m.queued_bytes + bytes > MULTI_QUEUED_BYTES_MAX {
        m.dirty = true;
        push_error(out, ERR_QUEUE_FULL.as_bytes());
        return true;
    }
    m.queued_bytes += bytes;
    m.queue.get_or_insert_with(Vec::new).push(args.iter().map(|a| a.to_vec()).collect());
    push_simple(out, "QUEUED");
    true
}

pub(crate) fn run(ctx: &mut Ctx<'_>, cmd: Cmd, args: &[Arg<'_>], out: &mut Vec<u8>) -> After {
    match cmd {
        Cmd::Multi => {
            if ctx.session.multi.queuing() {
                return error(out, ERR_NESTED);
            }
            ctx.session.multi.queue = Some(Vec::new());
            push_simple(out, "OK");
        }
        Cmd::Discard => {
            if !ctx.session.multi.queuing() {
                return error(out, ERR_DISCARD_WITHOUT);
            }
            reset(&mut ctx.session.multi);
            push_simple(out, "OK");
        }
        Cmd::Watch => {
            if ctx.session.multi.queuing() {
                return error(out, ERR_WATCH_INSIDE);
            }
            if ctx.session.multi.watched.len() + args.len() - 1 > WATCHED_KEYS_MAX {
                return error(out, ERR_WATCH_FULL);
            }
            if ctx.session.multi.watched.is_empty() {
                ctx.session.multi.watch_generation = ctx.shared.databases.generation();
            }
            for k in &args[1..] {
                if ctx.session.multi.watched.iter().any(|(w, _)| w[..] == k[..]) {
                    continue;
                }
                let stamp = stamp_of(ctx, k);
                ctx.session.multi.watched.push((k.to_vec(), stamp));
            }
            push_simple(out, "OK");
        }
        Cmd::Unwatch => {
            ctx.session.multi.watched.clear();
            push_simple(out, "OK");
        }
        Cmd::Exec => return exec(ctx, out),
        _ => unreachable!("multi::run called for {cmd:?}"),
    }
    After::Continue
}

fn error(out: &mut Vec<u8>, e: &str) -> After {
    push_error(out, e.as_bytes());
    After::Continue
}

/// A command refused before queuing (NOAUTH, NOPERM) makes EXEC abort,
/// as Redis's `flagTransaction` does; outside MULTI nothing changes.
pub(crate) fn flag(m: &mut Multi) {
    if m.queuing() {
        m.dirty = true;
    }
}

/// Leaves MULTI and forgets the watched keys (EXEC, DISCARD).
pub(crate) fn reset(m: &mut Multi) {
    m.queue = None;
    m.queued_bytes = 0;
    m.dirty = false;
    m.watched.clear();
}

/// The key's WATCH stamp now (None: absent or expired).
fn stamp_of(ctx: &Ctx<'_>, key: &[u8]) -> Option<[u64; 3]> {
    ctx.shared.store.peek(key, |it| it.stamp())
}

/// The row that speaks for `args`: a container's subcommand row, if any
/// (its keys, its flags).
pub(crate) fn key_spec_of(spec: &'static Spec, args: &[impl AsRef<[u8]>]) -> &'static Spec {
    if spec.subcommands.is_empty() || args.len() < 2 {
        spec
    } else {
        table::subcommand(spec, args[1].as_ref()).unwrap_or(spec)
    }
}

/// Appends the keys of one command (by its key specifications).
pub(crate) fn push_keys<'a>(spec: &'static Spec, args: &'a [impl AsRef<[u8]>], keys: &mut Vec<&'a [u8]>) {
    let own = key_spec_of(spec, args);
    for (i, _) in table::keys_of(own, args) {
        keys.push(args[i].as_ref());
    }
}

fn exec(ctx: &mut Ctx<'_>, out: &mut Vec<u8>) -> After {
    let Some(queue) = ctx.session.multi.queue.take() else {
        return error(out, ERR_EXEC_WITHOUT);
    };
    let dirty = ctx.session.multi.dirty;
    let swapped = ctx.session.multi.watch_generation != ctx.shared.databases.generation();
    let watched = std::mem::take(&mut ctx.session.multi.watched);
    reset(&mut ctx.session.multi);
    if dirty {
        return error(out, ERR_EXECABORT);
    }
    let specs: Vec<&'static Spec> =
        queue.iter().map(|c| table::lookup(&c[0]).expect("only known commands are queued")).collect();
    let stored = stored_keys(ctx, &specs, &queue);
    let mut keys: Vec<&[u8]> = watched.iter().map(|(k, _)| &k[..]).collect();
    keys.extend(stored.iter().map(|k| &k[..]));
    let shared = ctx.shared;
    let mut after = After::Continue;
    shared.store.atomically(&keys, || {
        // Holding every key: the watched ones cannot change between this
        // check and the commands.
        if (swapped && !watched.is_empty()) || watched.iter().any(|(k, stamp)| stamp_of(ctx, k) != *stamp) {
            return push_null_array(out, ctx.session.proto);
        }
        push_array(out, queue.len());
        ctx.session.multi.executing = true;
        for (spec, c) in specs.iter().zip(&queue) {
            let args: Vec<Arg<'_>> = c.iter().map(|a| Arg::Borrowed(&a[..])).collect();
            if run_command(ctx, Some(spec), &args, out) == After::Close {
                after = After::Close;
            }
        }
        ctx.session.multi.executing = false;
    });
    after
}

/// The keys of the queued commands in their stored forms, each for the
/// database it will run in: the session's, then whatever a queued SELECT
/// chose (`amalgam_commands::db`).
fn stored_keys(ctx: &Ctx<'_>, specs: &[&'static Spec], queue: &[Vec<Vec<u8>>]) -> Vec<Vec<u8>> {
    let dbs = &ctx.shared.databases;
    let mut db = ctx.session.db;
    let mut keys: Vec<&[u8]> = Vec::new();
    let mut stored = Vec::new();
    for (spec, c) in specs.iter().zip(queue) {
        if spec.cmd == Cmd::Select {
            db = dbs.parse(&c[1]).unwrap_or(db);
            continue;
        }
        keys.clear();
        push_keys(spec, c, &mut keys);
        let ns = dbs.namespace(db);
        stored.extend(keys.iter().map(|k| amalgam_engine::namespace::encode(ns, k)));
        if matches!(spec.cmd, Cmd::Sort | Cmd::SortRo) {
            // The keys its patterns name now (sort.rs).
            stored.extend(super::sort::pattern_keys(&ctx.cx, ns, c));
        }
    }
    stored
}

/// True if `spec` can name more than one key (several key
/// specifications, or one that spans a range or a count of keys). Cheap:
/// looks at the static row only.
#[inline]
pub(crate) fn may_name_several_keys(spec: &Spec) -> bool {
    match spec.keys {
        [] => false,
        [one] => !matches!(one.find, table::Find::Range { lastkey: 0, .. }),
        _ => true,
    }
}

/// Runs a command that may name several keys with all of them held
/// (`Store::atomically`), when it names two or more distinct keys.
pub(crate) fn with_keys_held(
    ctx: &mut Ctx<'_>,
    spec: &'static Spec,
    args: &[Arg<'_>],
    run: impl FnOnce(&mut Ctx<'_>) -> After,
) -> After {
    let mut keys: Vec<&[u8]> = Vec::new();
    push_keys(spec, args, &mut keys);
    keys.sort_unstable();
    keys.dedup();
    if keys.len() < 2 {
        return run(ctx);
    }
    let shared = ctx.shared;
    shared.store.atomically(&keys, || run(ctx))
}
