//! Counting each command as it finishes (`resp/cmdstats.rs` keeps the
//! figures and says how they are counted): its call or rejection in the
//! worker's commandstats, its error code in errorstats, the slow log and
//! the latency monitor; and the SLOWLOG command that reads the log.

use super::cmdstats::{classify, get_slot, mget_slot};
use super::table::{self, Spec};
use super::{help, int_arg, sub, Arg, Ctx, PendingGet};

/// Counts one command run alone that has just finished: `args` as sent,
/// `replied` what it wrote (its reply, before CLIENT REPLY drops it).
pub(crate) fn account(ctx: &mut Ctx<'_>, spec: Option<&'static Spec>, args: &[Arg<'_>], replied: &[u8]) {
    let ns = ctx.recorder.lap();
    let Some((slot, rejected)) = spec.and_then(|s| classify(s, args)) else {
        // An unknown command or subcommand: only its error counts.
        if replied.first() == Some(&b'-') {
            ctx.stats.errors.note(replied);
        }
        return;
    };
    let error = match replied.first() {
        Some(b'-') => {
            ctx.stats.errors.note(replied);
            if rejected || refused_before_running(replied) {
                return ctx.stats.commands.reject(slot);
            }
            true
        }
        // Queued by MULTI: counted when EXEC runs it, as in Redis.
        Some(b'+') if replied.len() == QUEUED.len() && replied == QUEUED => return,
        _ => false,
    };
    ctx.stats.commands.record(slot, 1, ns, u64::from(error));
    let log = &ctx.shared.slowlog;
    if log.wants(ns / 1000) {
        log.push(args, ns / 1000, &ctx.session.client);
    }
    // Redis's `call()`: "fast-command" for a command flagged fast. The
    // flags are searched only for a command the monitor records.
    if ctx.shared.latency.wants(ns) {
        let fast = spec.is_some_and(|s| s.flags.contains(&"fast"));
        ctx.shared.latency.observe(if fast { "fast-command" } else { "command" }, ns);
    }
}

/// Error replies Redis gives from `processCommand`, before the command
/// runs (its `rejectCommand`): counted as `rejected_calls`, not as calls.
/// A wrong argument count is known from the arguments (`classify`); these
/// by the reply, which costs nothing unless the reply is an error.
const REFUSED_BEFORE_RUNNING: [&[u8]; 9] = [
    b"-BUSY ",
    b"-NOAUTH ",
    b"-NOPERM ",
    b"-OOM ",
    b"-READONLY ",
    b"-MISCONF ",
    b"-NOREPLICAS ",
    b"-ERR Can't execute '",
    b"-ERR Command not allowed inside a transaction",
];

/// MULTI's reply to a command it queued.
const QUEUED: &[u8] = b"+QUEUED\r\n";

fn refused_before_running(reply: &[u8]) -> bool {
    REFUSED_BEFORE_RUNNING.iter().any(|p| reply.starts_with(p))
}

/// Counts a run of batched GETs and MGETs that has just been answered: one
/// span of the clock shared equally by its commands (module notes), of
/// which `failed` GETs answered WRONGTYPE.
pub(crate) fn account_gets(ctx: &mut Ctx<'_>, args: &[Arg<'_>], gets: &[PendingGet], failed: u64) {
    if failed > 0 {
        ctx.stats.errors.count(b"WRONGTYPE", failed);
    }
    if let [PendingGet { first, mget: None }] = gets {
        // One GET, the unpipelined case: nothing to share.
        let ns = ctx.recorder.lap();
        ctx.stats.commands.record(get_slot(), 1, ns, failed);
        let log = &ctx.shared.slowlog;
        if log.wants(ns / 1000) {
            log.push(&args[first - 1..first + 1], ns / 1000, &ctx.session.client);
        }
        ctx.shared.latency.observe("fast-command", ns);
        return;
    }
    let ns = ctx.recorder.lap() / gets.len() as u64;
    let mgets = gets.iter().filter(|g| g.mget.is_some()).count() as u64;
    let plain = gets.len() as u64 - mgets;
    if plain > 0 {
        ctx.stats.commands.record(get_slot(), plain, ns, failed);
    }
    if mgets > 0 {
        ctx.stats.commands.record(mget_slot(), mgets, ns, 0);
    }
    let log = &ctx.shared.slowlog;
    if log.wants(ns / 1000) {
        for g in gets {
            log.push(&args[g.first - 1..g.first + g.mget.unwrap_or(1)], ns / 1000, &ctx.session.client);
        }
    }
    ctx.shared.latency.observe("fast-command", ns);
}

/// SLOWLOG GET [count] | LEN | RESET | HELP, Redis 7's replies.
pub(crate) fn slowlog(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    use amalgam_protocol::resp::{push_array, push_bulk, push_error, push_int, push_simple};
    /// SLOWLOG GET's default count (Redis's).
    const GET_COUNT_DEFAULT: usize = 10;
    let Some(sub) = sub(table::Cmd::Slowlog, args, out) else { return };
    let log = &ctx.shared.slowlog;
    match sub {
        "get" => {
            let count = match args.get(2) {
                None => Some(GET_COUNT_DEFAULT),
                // Redis's getRangeLongFromObjectOrReply(-1, LONG_MAX) with
                // its own message for a non-number too.
                Some(a) => match int_arg(a) {
                    Some(-1) => None,
                    Some(n) if n >= 0 => Some(usize::try_from(n).unwrap_or(usize::MAX)),
                    _ => return push_error(out, b"ERR count should be greater than or equal to -1"),
                },
            };
            let entries = log.newest(count);
            push_array(out, entries.len());
            for e in &entries {
                push_array(out, 6);
                push_int(out, e.id as i64);
                push_int(out, e.unix_secs as i64);
                push_int(out, e.micros as i64);
                push_array(out, e.args.len());
                for a in &e.args {
                    push_bulk(out, a);
                }
                push_bulk(out, e.addr.as_bytes());
                push_bulk(out, &e.name);
            }
        }
        "len" => push_int(out, log.len() as i64),
        "reset" => {
            log.reset();
            push_simple(out, "OK");
        }
        _ => help(
            &[
                "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "GET [<count>]",
                "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
                "    Entries are made of:",
                "    id, timestamp, time in microseconds, arguments array, client IP and port,",
                "    client name",
                "LEN",
                "    Return the length of the slowlog.",
                "RESET",
                "    Reset the slowlog.",
                "HELP",
                "    Prints this help.",
            ],
            out,
        ),
    }
}
