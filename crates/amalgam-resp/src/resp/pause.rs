//! CLIENT PAUSE and CLIENT UNPAUSE, as Redis 7.0 runs them (issue 35 §4).
//!
//! `CLIENT PAUSE ms [WRITE|ALL]` postpones, until the pause ends, every
//! command (ALL) or every command that writes or may replicate (WRITE:
//! the rows flagged `write`, and EVAL, EVALSHA, FCALL, PUBLISH, SPUBLISH,
//! PFCOUNT and FUNCTION's writing subcommands, Redis's `may-replicate`),
//! and an EXEC whose queue holds one. A postponed command is not consumed:
//! its bytes stay in the connection's read buffer and the connection
//! waits as a blocked client does (counted in `blocked_clients`, not
//! unblockable by CLIENT UNBLOCK), until the pause ends, is lifted by
//! CLIENT UNPAUSE, or changes (a new CLIENT PAUSE); then it parses the
//! command again and it runs, or waits again if the pause still applies.
//! Commands are checked as Redis's `processCommand` does: after the
//! argument count (a wrong-arity command is answered at once) and ACL,
//! before MULTI queues them; the commands EXEC runs are not checked (a
//! pause starts at the end of a transaction).
//!
//! A new pause while one is on keeps the stricter mode and the later end
//! (Redis 7.0's `pauseClients`: `PAUSE 1000 ALL` then `PAUSE 10 WRITE`
//! still holds reads for the second; `PAUSE 1000 WRITE` then `PAUSE 10
//! WRITE` still holds writes).
//!
//! ## Cost while no pause is on
//! [`Pause::on`] is one relaxed load, read once per round of a connection
//! and after each command run alone (`resp.rs`), and the batched GET/SET
//! path is skipped while it is set.
//!
//! ## Expiry and eviction
//! As Redis does, a pause holds the background expiry sweep until its end
//! (`Store::hold_expiry`): an expired key reads as absent but is not
//! removed, and `expired_keys` does not move, until the pause ends.
//! Eviction needs no hold here: it runs only to make room for a write,
//! and the pause holds client writes. A replica under a pause stops
//! applying its primary's stream until it ends, as Redis's does
//! (`Pause::holds_writes`, repl.rs).

use crate::resp::{Arg, Ctx};
use amalgam_commands::table::{self, Cmd, Spec};
use amalgam_protocol::resp::{push_error, push_simple};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// No pause.
const OFF: u8 = 0;
/// Writes (and may-replicate commands) wait.
const WRITE: u8 = 1;
/// Every command waits.
const ALL: u8 = 2;
/// The bits of `mode` CLIENT PAUSE sets (OFF, WRITE or ALL).
const CLIENT_BITS: u8 = 3;
/// The bit a FAILOVER sets (`failover.rs`): writes wait until it clears,
/// whatever CLIENT PAUSE and UNPAUSE do (Redis's PAUSE_DURING_FAILOVER).
const FAILOVER: u8 = 4;

/// Longest pause, so that its end stays a valid `Instant` (Redis accepts
/// any `long long` and its end saturates likewise).
const PAUSE_MAX: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

const ERR_TIMEOUT_NOT_INTEGER: &str = "ERR timeout is not an integer or out of range";
const ERR_TIMEOUT_NEGATIVE: &str = "ERR timeout is negative";
const ERR_MODE: &str = "ERR CLIENT PAUSE mode must be WRITE or ALL";

/// The server's pause (in `Shared`).
#[derive(Debug)]
pub struct Pause {
    /// CLIENT PAUSE's OFF, WRITE or ALL (`CLIENT_BITS`: set while a pause
    /// is on, cleared by UNPAUSE or by the first look after its end) and
    /// FAILOVER's bit.
    mode: AtomicU8,
    /// Its end, in nanoseconds after `base`.
    until_ns: AtomicU64,
    base: Instant,
    /// The postponed clients' tickets, woken when the pause is lifted or
    /// changes (stale ones, of clients gone or resumed, are skipped by
    /// their sequence number).
    waiters: Mutex<Vec<Arc<super::blocking::Ticket>>>,
}

impl Default for Pause {
    fn default() -> Pause {
        Pause { mode: AtomicU8::new(OFF), until_ns: AtomicU64::new(0), base: Instant::now(), waiters: Mutex::default() }
    }
}

impl Pause {
    /// True while a pause may be on (one relaxed load): the caller then
    /// asks [`Pause::postpones`] per command.
    #[inline(always)]
    pub fn on(&self) -> bool {
        self.mode.load(Ordering::Relaxed) != OFF
    }

    /// The pause's mode and end, if one is on now (a failover's has no
    /// end: [`PAUSE_MAX`] from now).
    fn current(&self) -> Option<(u8, Instant)> {
        let m = self.mode.load(Ordering::Acquire);
        if m == OFF {
            return None;
        }
        let until = self.base + Duration::from_nanos(self.until_ns.load(Ordering::Acquire));
        let mut client = m & CLIENT_BITS;
        if client != OFF && Instant::now() >= until {
            // Ended: the first to see it turns it off (a pause set
            // meanwhile has a later end and a new mode; leave it).
            let _ = self.mode.compare_exchange(m, m & FAILOVER, Ordering::AcqRel, Ordering::Relaxed);
            client = OFF;
        }
        if m & FAILOVER != 0 {
            return Some((client.max(WRITE), Instant::now() + PAUSE_MAX));
        }
        (client != OFF).then_some((client, until))
    }

    /// Pauses for `d` in `mode`; while a pause is on, the stricter mode
    /// and the later end of the two.
    fn start(&self, mode: u8, d: Duration) {
        let end = Instant::now() + d.min(PAUSE_MAX);
        let ns = u64::try_from(end.saturating_duration_since(self.base).as_nanos()).unwrap_or(u64::MAX);
        let on = self.current().is_some_and(|_| self.mode.load(Ordering::Acquire) & CLIENT_BITS != OFF);
        if on {
            self.until_ns.fetch_max(ns, Ordering::AcqRel);
        } else {
            self.until_ns.store(ns, Ordering::Release);
        }
        // The client bits become the stricter of the two, FAILOVER's kept.
        let _ = self.mode.fetch_update(Ordering::AcqRel, Ordering::Acquire, |m| {
            let old = if on { m & CLIENT_BITS } else { OFF };
            Some((m & FAILOVER) | old.max(mode))
        });
    }

    /// True while a pause holds writes (any pause does: WRITE, ALL or a
    /// failover's); a replica then stops applying its primary's stream.
    pub(crate) fn holds_writes(&self) -> bool {
        self.on() && self.current().is_some()
    }

    /// The current pause's end, if one is on.
    pub(crate) fn end(&self) -> Option<Instant> {
        self.current().map(|(_, until)| until)
    }

    /// Lifts CLIENT PAUSE's pause (a failover's stays).
    fn stop(&self) {
        self.mode.fetch_and(FAILOVER, Ordering::AcqRel);
    }

    /// FAILOVER holds writes (`on`) until it ends or is aborted; the
    /// postponed clients are woken when it lets go.
    pub(crate) fn hold_for_failover(&self, shared: &crate::Shared, on: bool) {
        if on {
            self.mode.fetch_or(FAILOVER, Ordering::AcqRel);
        } else {
            self.mode.fetch_and(CLIENT_BITS, Ordering::AcqRel);
            for t in self.take_waiters() {
                super::blocking::wake_ticket(shared, &t);
            }
        }
        shared.store.hold_expiry(self.end());
    }

    /// The postponed clients, to wake.
    fn take_waiters(&self) -> Vec<Arc<super::blocking::Ticket>> {
        std::mem::take(&mut *self.waiters.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Records a postponed client's ticket.
    pub(crate) fn wait(&self, t: Arc<super::blocking::Ticket>) {
        self.waiters.lock().unwrap_or_else(|e| e.into_inner()).push(t);
    }

    /// Forgets a postponed client's ticket (it resumed or left).
    pub(crate) fn forget(&self, seq: u64) {
        self.waiters.lock().unwrap_or_else(|e| e.into_inner()).retain(|t| t.seq() != seq);
    }

    /// The end of the pause that postpones a command of `spec` (with
    /// `args`) from a connection in `ctx`, if one does.
    pub(crate) fn postpones(&self, ctx: &Ctx<'_>, spec: &'static Spec, args: &[Arg<'_>]) -> Option<Instant> {
        let (mode, until) = self.current()?;
        (mode == ALL || writes(spec, args) || (spec.cmd == Cmd::Exec && ctx.session.multi.queue_writes()))
            .then_some(until)
    }
}

/// Holds the command if a pause applies to it (`dispatch`, once
/// [`Pause::on`] said one may be on): true if the connection now waits.
#[cold]
#[inline(never)]
pub(crate) fn hold(ctx: &mut Ctx<'_>, spec: &'static Spec, args: &[Arg<'_>]) -> bool {
    if ctx.session.primary {
        // Redis's master client: its link holds the stream instead.
        return false;
    }
    let Some(until) = ctx.shared.pause.postpones(ctx, spec, args) else { return false };
    if !super::blocking::postpone(ctx, until) {
        return false;
    }
    // Once more, now that UNPAUSE or a new pause would wake it: one
    // between the first look and the registration would be missed.
    if ctx.shared.pause.postpones(ctx, spec, args).is_none() {
        super::blocking::abandon(ctx.shared, ctx.session);
        return false;
    }
    true
}

/// Whether Redis's WRITE pause holds the command: a `write` row (a
/// container's own subcommand row: FUNCTION LOAD, DELETE, FLUSH, RESTORE
/// are), or one Redis flags `may-replicate` (PUBLISH, SPUBLISH, PFCOUNT,
/// EVAL, EVALSHA, FCALL).
pub(crate) fn writes(spec: &'static Spec, args: &[Arg<'_>]) -> bool {
    super::multi::key_spec_of(spec, args).flags.contains(&"write")
        || table::may_replicate(spec.cmd)
        || matches!(spec.cmd, Cmd::Eval | Cmd::Evalsha | Cmd::Fcall)
}

/// CLIENT PAUSE timeout [WRITE|ALL].
pub(crate) fn pause(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    if args.len() > 4 {
        let mut m = b"ERR unknown subcommand or wrong number of arguments for '".to_vec();
        m.extend_from_slice(&args[1]);
        m.extend_from_slice(b"'. Try CLIENT HELP.");
        return push_error(out, &m);
    }
    let ms = match std::str::from_utf8(&args[2]).ok().and_then(|s| s.parse::<i64>().ok()) {
        Some(ms) if ms < 0 => return push_error(out, ERR_TIMEOUT_NEGATIVE.as_bytes()),
        Some(ms) => ms as u64,
        None => return push_error(out, ERR_TIMEOUT_NOT_INTEGER.as_bytes()),
    };
    let mode = match args.get(3) {
        None => ALL,
        Some(a) if a.eq_ignore_ascii_case(b"all") => ALL,
        Some(a) if a.eq_ignore_ascii_case(b"write") => WRITE,
        Some(_) => return push_error(out, ERR_MODE.as_bytes()),
    };
    let p = &ctx.shared.pause;
    p.start(mode, Duration::from_millis(ms));
    ctx.shared.store.hold_expiry(p.end());
    // The postponed clients look again (they wait again, until the new
    // end).
    wake(ctx, p.take_waiters());
    push_simple(out, "OK");
}

/// CLIENT UNPAUSE.
pub(crate) fn unpause(ctx: &mut Ctx<'_>, out: &mut Vec<u8>) {
    let p = &ctx.shared.pause;
    p.stop();
    ctx.shared.store.hold_expiry(p.end());
    wake(ctx, p.take_waiters());
    push_simple(out, "OK");
}

fn wake(ctx: &Ctx<'_>, tickets: Vec<Arc<super::blocking::Ticket>>) {
    for t in tickets {
        super::blocking::wake_ticket(ctx.shared, &t);
    }
}
