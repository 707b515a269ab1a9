//! EVAL EVALSHA EVAL_RO EVALSHA_RO SCRIPT: Lua scripts (issue 34) run on
//! the calling worker, atomically. The interpreter, the sandbox and the
//! reply conversions are crate `amalgam-script`; this file runs a script
//! with its keys held and runs the commands it calls.
//!
//! ## Atomic without stopping the world
//! A script runs inside `Store::atomically` over the keys it declared
//! (KEYS): their buckets are held, in the fixed order transactions use
//! (engine `txn.rs`: the deadlock argument), for the whole run, so no
//! client on any worker sees the script half done, and every worker goes
//! on serving every other key. Every command the script calls has its
//! keys (by the table's key specifications, as EXEC's) checked against
//! the held set before it runs:
//! * a held key runs at once (a multi-key command inside finds its keys
//!   already held: `atomically` nests);
//! * a key the script did not declare is added to the held set while
//!   the script runs (`Store::extend_transaction`, engine `txn.rs`
//!   § Growing the held set): a key ranked after every held bucket in the
//!   lock order is waited for, one ranked before is only tried. This is
//!   what lets a script name keys it learns as it goes, after it wrote:
//!   BullMQ's scripts INCR a job counter and then write the job's keys
//!   named by the new id (issue 34 §3), as Redis's standalone mode allows;
//! * when the engine cannot add the key (ranked before a held bucket that
//!   another thread holds) and the script has not changed anything (no
//!   write, no PUBLISH), the run stops: the buckets are released, the key
//!   is added to the declared set, and the script runs again from the
//!   start with it held ([`Stop::Again`], at most
//!   [`UNDECLARED_RERUNS_MAX`] times). What the abandoned run did was
//!   read, so running it again is invisible: its reply is dropped before
//!   it leaves;
//! * when it cannot be added and the script already wrote, the writes
//!   cannot be taken back and the key cannot be waited for out of order
//!   (it could deadlock against another script or transaction): the
//!   script ends with an error naming the key, and its writes so far
//!   stay, as a Redis script's do when it fails half way. Declaring the
//!   key in KEYS avoids it. It needs another client holding that very
//!   key's bucket at that moment; an undo record of the held buckets (so
//!   such a run could be rolled back and run again) would remove it.
//!
//! Inside MULTI/EXEC a script runs under EXEC's held keys (its declared
//! keys are among them); there it cannot run again, so an undeclared key
//! ends it as in the third case.
//!
//! ## Long scripts (amalgam-script's busy.rs)
//! Past `busy-reply-threshold` (5 s; `lua-time-limit` is its alias) a
//! script is busy: a command that would touch one of its keys is answered
//! `-BUSY Redis is busy running a script. You can only call SCRIPT KILL or
//! SHUTDOWN NOSAVE.` (`refused_busy`, from `dispatch`; the batched GET/SET
//! paths step aside while any script is busy, one relaxed load), commands
//! on other keys go on, SCRIPT KILL ends a busy script that has not
//! written and answers UNKILLABLE for one that has, and shutdown (SHUTDOWN
//! NOSAVE, SIGTERM) ends every script so its worker can stop. Two limits,
//! stated and tested (tests/resp_scripting_busy.rs): a worker runs one
//! script at a time and serves nothing else meanwhile, so the other
//! connections of the script's own worker wait for it (Redis answers them
//! BUSY from inside the script, `processEventsWhileBlocked`; here that
//! would need the event loop to serve its other connections from the
//! script's hook); and a command that reached one of the script's keys
//! before the script turned busy waits for the key, with its worker. The
//! memcached port does not answer BUSY: its commands on a busy script's
//! keys wait.
//!
//! ## What a called command gets
//! The script's protocol (`redis.setresp`), EXEC's treatment of blocking
//! commands (they do not block), Redis's refusals with Redis's words
//! (unknown command, wrong arity, `noscript` commands, writes from EVAL_RO,
//! ACL, a read-only replica's writes), and a count in commandstats.
//!
//! ## Persistence and replication
//! Each write a script makes is logged and streamed to replicas as it
//! happens, as EXEC's are (resp/multi.rs): replicas and recovery apply
//! the script's effects, never the script; the script cache is not
//! persisted (Redis 7.0). The log has no transaction framing yet, so a
//! crash during a script can recover part of it.

use super::table::{self, Begin, Cmd, Find, KeySpec, Spec};
use super::{acl, arity_ok, cmdstats, execute, help, int_arg, is, multi, sub, After, Arg, Ctx};
use crate::scripting::{report_memory, with_vm};
use amalgam_protocol::resp::{push_array, push_bulk, push_error, push_int, push_simple, Proto};
use amalgam_script::busy::{Kill, Registry, Running, ERR_BUSY};
use amalgam_script::cache::parse_sha;
use amalgam_script::{sha1_hex, Caller, Stop, Target, Vm, Watch};
use std::sync::Arc;

/// How many times one EVAL runs its script again after it met a key it
/// had not declared (module notes); past it, such a key ends the script
/// with an error. Bounds the work one EVAL can cause.
pub const UNDECLARED_RERUNS_MAX: usize = 16;

/// Undeclared keys one run of a script may add to its held set as it
/// goes (`Calls::stop_for`); past it, a key is handled as one the engine
/// could not add. Each is a bucket held until the script ends.
pub const EXTENDED_KEYS_MAX: usize = 1 << 16;

/// SCRIPT KILL's answer when the busy script wrote.
const ERR_UNKILLABLE: &str = "UNKILLABLE Sorry the script already executed write commands against the dataset. You \
                              can either wait the script termination or kill the server in a hard way using the \
                              SHUTDOWN NOSAVE command.";

/// Redis's reply to EVALSHA of a script it does not have.
const ERR_NOSCRIPT: &str = "NOSCRIPT No matching script. Please use EVAL.";

/// Runs a scripting command whose arity `dispatch` checked.
pub(crate) fn run(ctx: &mut Ctx<'_>, cmd: Cmd, args: &[Arg<'_>], out: &mut Vec<u8>) -> After {
    match cmd {
        Cmd::Eval | Cmd::EvalRo | Cmd::Evalsha | Cmd::EvalshaRo => eval(ctx, cmd, args, out),
        Cmd::Fcall | Cmd::FcallRo => fcall(ctx, cmd == Cmd::FcallRo, args, out),
        Cmd::Function => return super::function::run(ctx, args, out),
        _ => script(ctx, args, out),
    }
    After::Continue
}

fn caller_registry(ctx: &Ctx<'_>) -> Arc<Registry> {
    Arc::clone(&ctx.shared.scripts.runs)
}

/// While a script is busy (busy.rs): true, with `-BUSY` answered, if the
/// command would touch one of its keys (a command flagged `allow_busy`,
/// SCRIPT KILL and SHUTDOWN, always runs). `dispatch` calls it only while
/// `Registry::busy` says some script is.
pub(crate) fn refused_busy(ctx: &Ctx<'_>, spec: &'static Spec, args: &[Arg<'_>], out: &mut Vec<u8>) -> bool {
    if ctx.session.primary {
        // Redis's master client waits for the script (its replies go
        // nowhere: a BUSY would lose the write).
        return false;
    }
    let own = multi::key_spec_of(spec, args);
    if own.flags.contains(&"allow_busy") || spec.flags.contains(&"allow_busy") {
        return false;
    }
    let mut keys: Vec<&[u8]> = Vec::new();
    multi::push_keys(own, args, &mut keys);
    let registry = &ctx.shared.scripts.runs;
    if keys.iter().any(|k| registry.blocks(k)) {
        push_error(out, ERR_BUSY.as_bytes());
        return true;
    }
    false
}

/// EVAL's and FCALL's numkeys (`args[2]`), checked as Redis checks it.
fn numkeys(args: &[Arg<'_>], out: &mut Vec<u8>) -> Option<usize> {
    match int_arg(&args[2]) {
        None => push_error(out, b"ERR value is not an integer or out of range"),
        Some(n) if n < 0 => push_error(out, b"ERR Number of keys can't be negative"),
        Some(n) if n as u64 > (args.len() - 3) as u64 => {
            push_error(out, b"ERR Number of keys can't be greater than number of args")
        }
        Some(n) => return Some(n as usize),
    }
    None
}

/// Redis's refusal of a script or function that may write under a `_RO`
/// command.
const ERR_RO_WRITE_FLAG: &str = "ERR Can not execute a script with write flag using *_ro command.";

/// FCALL / FCALL_RO: a library function, loaded into this worker's state
/// on its first call since the libraries last changed (functions.rs).
fn fcall(ctx: &mut Ctx<'_>, ro_command: bool, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let Some(numkeys) = numkeys(args, out) else { return };
    let name = String::from_utf8_lossy(&args[1]).into_owned();
    let keys: Vec<&[u8]> = args[3..3 + numkeys].iter().map(|a| &a[..]).collect();
    let argv: Vec<&[u8]> = args[3 + numkeys..].iter().map(|a| &a[..]).collect();
    let shared = ctx.shared;
    let libraries = &shared.scripts.functions;
    let ran = with_vm(shared.scripts.generation(), |vm| {
        vm.sync_functions(libraries.generation());
        if vm.function_no_writes(&name).is_none() {
            let Some((lib, _)) = libraries.find(&name) else {
                return push_error(out, b"ERR Function not found");
            };
            if let Err(e) = vm.load_library(&lib.code) {
                return push_error(out, e.as_bytes());
            }
        }
        let Some(no_writes) = vm.function_no_writes(&name) else {
            return push_error(out, b"ERR Function not found");
        };
        if ro_command && !no_writes {
            return push_error(out, ERR_RO_WRITE_FLAG.as_bytes());
        }
        run_held(ctx, vm, Target::Function(&name), &keys, &argv, ro_command || no_writes, out);
    });
    if let Err(e) = ran {
        push_error(out, format!("ERR Lua could not start: {e}").as_bytes());
    }
    report_memory(&shared.scripts);
}

fn eval(ctx: &mut Ctx<'_>, cmd: Cmd, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let ro_command = matches!(cmd, Cmd::EvalRo | Cmd::EvalshaRo);
    let Some(numkeys) = numkeys(args, out) else { return };
    let by_body = matches!(cmd, Cmd::Eval | Cmd::EvalRo);
    let sha = if by_body {
        sha1_hex(&args[1])
    } else {
        match parse_sha(&args[1]) {
            Some(s) => s,
            None => return push_error(out, ERR_NOSCRIPT.as_bytes()),
        }
    };
    let keys: Vec<&[u8]> = args[3..3 + numkeys].iter().map(|a| &a[..]).collect();
    let argv: Vec<&[u8]> = args[3 + numkeys..].iter().map(|a| &a[..]).collect();
    let shared = ctx.shared;
    let ran = with_vm(shared.scripts.generation(), |vm| {
        if !vm.has(&sha) {
            let body: Arc<[u8]> = if by_body {
                Arc::from(&args[1][..])
            } else {
                match shared.scripts.get(&sha) {
                    Some(b) => b,
                    None => return push_error(out, ERR_NOSCRIPT.as_bytes()),
                }
            };
            if let Err(e) = vm.compile(&sha, &body) {
                return push_error(out, e.as_bytes());
            }
            if by_body {
                shared.scripts.insert(sha, &body);
            }
        }
        // A shebang's flags (`#!lua flags=no-writes`): without them the
        // script is taken to write, and EVAL_RO refuses it outright.
        let read_only = match vm.script_no_writes(&sha) {
            None => ro_command,
            Some(true) => true,
            Some(false) if ro_command => return push_error(out, ERR_RO_WRITE_FLAG.as_bytes()),
            Some(false) => false,
        };
        run_held(ctx, vm, Target::Script(&sha), &keys, &argv, read_only, out);
    });
    if let Err(e) = ran {
        push_error(out, format!("ERR Lua could not start: {e}").as_bytes());
    }
    report_memory(&shared.scripts);
}

/// Runs the compiled script `sha` with its keys held (module notes).
fn run_held(
    ctx: &mut Ctx<'_>,
    vm: &mut Vm,
    target: Target<'_>,
    keys: &[&[u8]],
    argv: &[&[u8]],
    ro: bool,
    out: &mut Vec<u8>,
) {
    let client = ctx.session.proto;
    let in_exec = ctx.session.multi.executing;
    // The keys held in their stored forms for the caller's database; the
    // Lua code sees them as written. A SELECT inside the script lasts
    // until it ends (Redis 7: the caller's database is restored).
    let db = ctx.session.db;
    let ns = ctx.shared.databases.namespace(db);
    let mut held: Vec<Vec<u8>> = keys.iter().map(|k| amalgam_engine::namespace::encode(ns, k)).collect();
    // Bounded: one more key per round, at most UNDECLARED_RERUNS_MAX.
    for round in 0..=UNDECLARED_RERUNS_MAX {
        held.sort_unstable();
        held.dedup();
        let mark = out.len();
        let registry = &caller_registry(ctx);
        let running = registry.start(held.clone());
        let watch = Watch { run: Arc::clone(&running), registry: Arc::clone(registry) };
        let mut caller = Calls {
            ctx: &mut *ctx,
            held: &held,
            read_only: ro,
            changed: false,
            may_rerun: !in_exec && round < UNDECLARED_RERUNS_MAX,
            undeclared: Vec::new(),
            extended: std::collections::HashSet::new(),
            running: &running,
        };
        let store = &caller.ctx.shared.store;
        let r = store.atomically(&held, || vm.run(target, keys, argv, client, &mut caller, Some(watch), out));
        registry.end(&running);
        if caller.ctx.session.db != db {
            caller.ctx.select(db);
        }
        let undeclared = std::mem::take(&mut caller.undeclared);
        match r {
            Ok(()) => return,
            Err(Stop::Again) => {
                out.truncate(mark);
                debug_assert!(!undeclared.is_empty(), "Again is asked with the keys");
                held.extend(undeclared);
            }
            Err(Stop::Fail(e)) => {
                out.truncate(mark);
                return push_error(out, e.as_bytes());
            }
        }
    }
}

/// The commands one run of a script calls ([`Caller`]).
struct Calls<'a, 'c> {
    ctx: &'a mut Ctx<'c>,
    /// The keys held, sorted.
    held: &'a [Vec<u8>],
    /// EVAL_RO, EVALSHA_RO.
    read_only: bool,
    /// The script wrote or published: it can no longer run again.
    changed: bool,
    /// It may still be run again with more keys (module notes).
    may_rerun: bool,
    /// The keys that asked for the new run.
    undeclared: Vec<Vec<u8>>,
    /// Undeclared keys the engine added to the held set during this run
    /// (`Store::extend_transaction`): held too, until the run ends.
    extended: std::collections::HashSet<Vec<u8>>,
    /// The run as SCRIPT KILL sees it.
    running: &'a Arc<Running>,
}

impl Calls<'_, '_> {
    /// Checks `spec`'s keys in `args` against the held set.
    fn check_keys(&mut self, spec: &'static Spec, args: &[Arg<'_>]) -> Result<(), Stop> {
        let held = |k: &[u8]| self.holds(k);
        // The common shape first: one key at a fixed place (GET, INCR,
        // HSET …), read off the row without collecting.
        let undeclared: Option<&[u8]> = match spec.keys {
            [KeySpec { begin: Begin::Index(i), find: Find::Range { lastkey: 0, .. }, flags, .. }]
                if !flags.contains(&"not_key") =>
            {
                args.get(*i as usize).map(|a| &a[..]).filter(|k| !held(k))
            }
            _ => {
                let mut keys: Vec<&[u8]> = Vec::new();
                multi::push_keys(spec, args, &mut keys);
                keys.into_iter().find(|k| !held(k))
            }
        };
        match undeclared {
            Some(k) => self.stop_for(vec![k.to_vec()]),
            None => Ok(()),
        }
    }

    /// The keys SORT's BY and GET patterns name (`sort::pattern_keys`,
    /// read from its collection, which `check_keys` found held): those not
    /// held are undeclared keys too.
    fn check_pattern_keys(&mut self, raw: &[&[u8]]) -> Result<(), Stop> {
        let keys = super::sort::pattern_keys(&self.ctx.cx, self.ctx.cx.ns, raw);
        let missing: Vec<Vec<u8>> = keys.into_iter().filter(|k| !self.holds(k)).collect();
        if missing.is_empty() || self.held.len() + missing.len() > super::sort::HELD_KEYS_MAX {
            // Past the bound SORT answers for the keys it cannot read.
            return Ok(());
        }
        self.stop_for(missing)
    }

    /// Whether this run holds `key` (declared, or added as it ran).
    fn holds(&self, key: &[u8]) -> bool {
        self.held.binary_search_by(|h| h[..].cmp(key)).is_ok() || self.extended.contains(key)
    }

    /// Undeclared `keys` met: added to the held set if the engine can
    /// (module notes); else the script runs again with them held, or,
    /// once it changed something, fails.
    fn stop_for(&mut self, keys: Vec<Vec<u8>>) -> Result<(), Stop> {
        let store = &self.ctx.shared.store;
        // Bounded by the command's keys.
        let grown = keys.iter().all(|k| store.extend_transaction(k).is_ok());
        if grown && self.extended.len() + keys.len() <= EXTENDED_KEYS_MAX {
            for k in keys {
                // Held now: a command on it answers BUSY while the script
                // is busy, as on its declared keys.
                self.running.grew(k.clone());
                self.extended.insert(k);
            }
            return Ok(());
        }
        if self.may_rerun && !self.changed {
            self.undeclared = keys;
            return Err(Stop::Again);
        }
        let k = &keys[0];
        Err(Stop::Fail(format!(
            "ERR Script attempted to access key '{}' it did not declare in KEYS after it wrote (Amalgam runs a \
             script with its declared keys held: declare every key the script touches)",
            String::from_utf8_lossy(&k[..k.len().min(128)])
        )))
    }
}

impl Caller for Calls<'_, '_> {
    fn call(&mut self, raw: &[&[u8]], proto: Proto, out: &mut Vec<u8>) -> Result<(), Stop> {
        let Some(spec) = table::lookup(raw[0]) else {
            push_error(out, b"ERR Unknown Redis command called from script");
            return Ok(());
        };
        if !arity_ok(spec.arity, raw.len()) {
            push_error(out, b"ERR Wrong number of args calling Redis command from script");
            return Ok(());
        }
        let written: Vec<Arg<'_>> = raw.iter().map(|a| Arg::Borrowed(a)).collect();
        let own = multi::key_spec_of(spec, &written);
        // Its keys in their stored forms for the database selected now.
        let encoded = super::in_database(self.ctx, own, &written);
        let args = encoded.unwrap_or(written);
        let flagged = |f: &str| spec.flags.contains(&f) || own.flags.contains(&f);
        if flagged("noscript") {
            push_error(out, b"ERR This Redis command is not allowed from script");
            return Ok(());
        }
        let writes = flagged("write");
        // Redis's read-only scripts refuse `may-replicate` commands too.
        if (writes || table::may_replicate(spec.cmd)) && self.read_only {
            push_error(out, b"ERR Write commands are not allowed from read-only scripts.");
            return Ok(());
        }
        if let Some(e) = acl::script_denial(self.ctx, spec, &args) {
            push_error(out, e.as_bytes());
            return Ok(());
        }
        if writes && self.ctx.shared.repl.read_only() {
            push_error(out, crate::repl::ERR_READONLY.as_bytes());
            return Ok(());
        }
        self.check_keys(own, &args)?;
        if matches!(spec.cmd, Cmd::Sort | Cmd::SortRo) {
            self.check_pattern_keys(raw)?;
        }
        let ctx = &mut *self.ctx;
        // Monitors see the commands a script calls, as written (Redis's
        // `[0 lua]` lines), after the script's own EVAL line.
        if ctx.shared.clients.monitoring() && !flagged("admin") {
            super::monitor::feed_scripted(ctx, &raw.iter().map(|a| Arg::Borrowed(a)).collect::<Vec<_>>());
        }
        let (proto_was, executing_was) = (ctx.cx.proto, ctx.session.multi.executing);
        ctx.cx.proto = proto;
        ctx.cx.scripted = true;
        ctx.session.multi.executing = true;
        let mark = out.len();
        let start = amalgam_net::ticks::now();
        execute(ctx, spec, &args, out);
        let ns = amalgam_net::ticks::nanos_between(start, amalgam_net::ticks::now());
        ctx.cx.proto = proto_was;
        ctx.cx.scripted = false;
        ctx.session.multi.executing = executing_was;
        let failed = out.get(mark) == Some(&b'-');
        if failed {
            ctx.stats.errors.note(&out[mark..]);
        }
        if let Some((slot, _)) = cmdstats::classify(spec, &args) {
            ctx.stats.commands.record(slot, 1, ns, u64::from(failed));
        }
        if (writes && !failed) || matches!(spec.cmd, Cmd::Publish | Cmd::Spublish) {
            self.changed = true;
            self.running.wrote();
        }
        Ok(())
    }

    fn acl_check(&mut self, raw: &[&[u8]]) -> Option<bool> {
        let spec = table::lookup(raw[0])?;
        let args: Vec<Arg<'_>> = raw.iter().map(|a| Arg::Borrowed(a)).collect();
        Some(acl::permits_quietly(self.ctx, spec, &args))
    }
}

/// SCRIPT LOAD | EXISTS | FLUSH | KILL | DEBUG | HELP, Redis 7.0's replies.
fn script(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let Some(name) = sub(Cmd::Script, args, out) else { return };
    let scripts = &ctx.shared.scripts;
    match name {
        "load" => {
            let sha = sha1_hex(&args[2]);
            let compiled =
                with_vm(scripts.generation(), |vm| if vm.has(&sha) { Ok(()) } else { vm.compile(&sha, &args[2]) });
            match compiled {
                Ok(Ok(())) => {
                    scripts.insert(sha, &args[2]);
                    push_bulk(out, &sha);
                }
                Ok(Err(e)) => push_error(out, e.as_bytes()),
                Err(e) => push_error(out, format!("ERR Lua could not start: {e}").as_bytes()),
            }
        }
        "exists" => {
            push_array(out, args.len() - 2);
            for a in &args[2..] {
                push_int(out, i64::from(parse_sha(a).is_some_and(|s| scripts.contains(&s))));
            }
        }
        "flush" => {
            if args.len() > 3 || (args.len() == 3 && !is_any(&args[2], &["sync", "async"])) {
                return push_error(out, b"ERR SCRIPT FLUSH only support SYNC|ASYNC option");
            }
            scripts.flush();
            push_simple(out, "OK");
        }
        "kill" => kill(scripts, out),
        "debug" => {
            if !is_any(&args[2], &["yes", "sync", "no"]) {
                return push_error(out, b"ERR Use SCRIPT DEBUG YES/SYNC/NO");
            }
            // No debugger: every mode runs scripts as NO does.
            push_simple(out, "OK");
        }
        _ => help(
            &[
                "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "DEBUG (YES|SYNC|NO)",
                "    Set the debug mode for subsequent scripts executed.",
                "EXISTS <sha1> [<sha1> ...]",
                "    Return information about the existence of the scripts in the script cache.",
                "FLUSH [ASYNC|SYNC]",
                "    Flush the Lua scripts cache. Very dangerous on replicas.",
                "    When called without the optional mode argument, the behavior is determined by the",
                "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
                "    * ASYNC: Asynchronously flush the scripts cache.",
                "    * SYNC: Synchronously flush the scripts cache.",
                "KILL",
                "    Kill the currently executing Lua script.",
                "LOAD <script>",
                "    Load a script into the scripts cache without executing it.",
                "HELP",
                "    Prints this help.",
            ],
            out,
        ),
    }
}

/// SCRIPT KILL and FUNCTION KILL.
pub(crate) fn kill(scripts: &amalgam_script::Scripts, out: &mut Vec<u8>) {
    match scripts.runs.kill() {
        Kill::NotBusy => push_error(out, b"NOTBUSY No scripts in execution right now."),
        Kill::Unkillable => push_error(out, ERR_UNKILLABLE.as_bytes()),
        Kill::Killed => push_simple(out, "OK"),
    }
}

/// `a` is one of `names` (ASCII case aside).
pub(crate) fn is_any(a: &[u8], names: &[&str]) -> bool {
    names.iter().any(|n| is(a, n))
}
