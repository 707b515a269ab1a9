//! FAILOVER: Redis 7.0's coordinated switch of a primary and one of its
//! replicas (issue 35 §4; Redis's `replication.c` `failoverCommand`,
//! `updateFailoverStatus`, `abortFailover`).
//!
//! ```text
//!   FAILOVER [TO host port [FORCE]] [TIMEOUT ms]     FAILOVER ABORT
//!
//!   no-failover ──FAILOVER──► waiting-for-sync ──target acked the whole stream──► failover-in-progress
//!        ▲        (writes held: pause.rs)  │  (or TIMEOUT with FORCE)               │ (this node is now a
//!        │                                 │                                         │  replica of the target,
//!        │◄──── ABORT, TIMEOUT ────────────┘                                         │  PSYNC … FAILOVER)
//!        │◄──── the target answered the PSYNC: done ◄──────────────────────────────┤
//!        └◄──── the target refused it, ABORT: primary again ◄──────────────────────┘
//! ```
//!
//! 1. The primary holds client writes (the pause's FAILOVER bit: CLIENT
//!    UNPAUSE does not lift it) so the stream stops growing, and a watcher
//!    thread asks the replicas for acks until the target (TO's, or the
//!    first replica to reach the primary's offset) has acknowledged all of
//!    it, or the TIMEOUT passes (abort, or with FORCE fail over anyway).
//! 2. The primary becomes a replica of the target; its link sends
//!    `PSYNC <its replid> <offset+1> FAILOVER` (`repl.rs`). The target,
//!    seeing its own primary's replid, promotes itself (`MASTER MODE
//!    enabled (failover request …)`) and answers the PSYNC as a primary:
//!    `+CONTINUE`, the new primary's stream.
//! 3. On that answer the failover is done and the writes held are let go
//!    (on this node, now a replica, they answer READONLY); on a refusal
//!    the failover is aborted and this node is a primary again.
//!
//! `INFO replication`'s `master_failover_state` shows the state. A replica
//! asked to sync while its primary fails over answers `NOMASTERLINK`.

use crate::Shared;
use amalgam_protocol::resp::{push_error, push_simple};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The states, as INFO names them.
const NO_FAILOVER: u8 = 0;
const WAITING_FOR_SYNC: u8 = 1;
const IN_PROGRESS: u8 = 2;

/// How often the watcher looks at the replicas' acks (and asks for new
/// ones) while it waits for the target to catch up.
const POLL_EVERY: Duration = Duration::from_millis(10);
/// Acks asked for once per this many polls (Redis's replicas ack once a
/// second on their own; a GETACK makes them answer now).
const GETACK_EVERY_POLLS: u32 = 10;

/// A failover's state (in `Shared`).
#[derive(Debug, Default)]
pub struct Failover {
    state: AtomicU8,
    plan: Mutex<Plan>,
}

/// What FAILOVER asked for.
#[derive(Debug, Default)]
struct Plan {
    /// TO host port, or the replica chosen once it caught up.
    target: Option<(String, u16)>,
    /// TIMEOUT's deadline.
    end: Option<Instant>,
    force: bool,
}

impl Failover {
    /// INFO's `master_failover_state`.
    pub fn state_name(&self) -> &'static str {
        match self.state.load(Ordering::Acquire) {
            WAITING_FOR_SYNC => "waiting-for-sync",
            IN_PROGRESS => "failover-in-progress",
            _ => "no-failover",
        }
    }

    /// True while a failover runs (a replica's PSYNC is refused then).
    pub fn running(&self) -> bool {
        self.state.load(Ordering::Acquire) != NO_FAILOVER
    }

    /// True while this node, demoted, waits for its target's answer to
    /// `PSYNC … FAILOVER` (the link sends FAILOVER only then).
    pub fn in_progress(&self) -> bool {
        self.state.load(Ordering::Acquire) == IN_PROGRESS
    }
}

fn lock(m: &Mutex<Plan>) -> std::sync::MutexGuard<'_, Plan> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// FAILOVER [TO host port [FORCE]] [TIMEOUT ms] | FAILOVER ABORT.
pub(crate) fn command(shared: &Shared, args: &[crate::resp::Arg<'_>], out: &mut Vec<u8>) {
    let f = &shared.failover;
    if args.len() == 2 && args[1].eq_ignore_ascii_case(b"abort") {
        if !f.running() {
            return push_error(out, b"ERR No failover in progress.");
        }
        abort(shared, "Failover manually aborted");
        return push_simple(out, "OK");
    }
    let (mut timeout_ms, mut force, mut to): (i64, bool, Option<(String, i64)>) = (0, false, None);
    let mut j = 1;
    // Bounded: j advances by one to three each round.
    while j < args.len() {
        let a = &args[j];
        if a.eq_ignore_ascii_case(b"timeout") && j + 1 < args.len() && timeout_ms == 0 {
            let Some(ms) = crate::resp::int_arg(&args[j + 1]) else {
                return push_error(out, b"ERR value is not an integer or out of range");
            };
            if ms <= 0 {
                return push_error(out, b"ERR FAILOVER timeout must be greater than 0");
            }
            timeout_ms = ms;
            j += 2;
        } else if a.eq_ignore_ascii_case(b"to") && j + 2 < args.len() && to.is_none() {
            let Some(port) = crate::resp::int_arg(&args[j + 2]) else {
                return push_error(out, b"ERR value is not an integer or out of range");
            };
            to = Some((String::from_utf8_lossy(&args[j + 1]).into_owned(), port));
            j += 3;
        } else if a.eq_ignore_ascii_case(b"force") && !force {
            force = true;
            j += 1;
        } else {
            return push_error(out, b"ERR syntax error");
        }
    }
    if f.running() {
        return push_error(out, b"ERR FAILOVER already in progress.");
    }
    if shared.repl.is_replica() {
        return push_error(out, b"ERR FAILOVER is not valid when server is a replica.");
    }
    let replicas = shared.repl.replicas();
    if replicas.is_empty() {
        return push_error(out, b"ERR FAILOVER requires connected replicas.");
    }
    if force && (timeout_ms == 0 || to.is_none()) {
        return push_error(out, b"ERR FAILOVER with force option requires both a timeout and target HOST and IP.");
    }
    let target = match to {
        Some((host, port)) => {
            let Some(r) = replicas.iter().find(|r| r.0.eq_ignore_ascii_case(&host) && i64::from(r.1) == port) else {
                return push_error(out, b"ERR FAILOVER target HOST and PORT is not a replica.");
            };
            if !r.3 {
                return push_error(out, b"ERR FAILOVER target replica is not online.");
            }
            log::info!("FAILOVER requested to {host}:{port}.");
            Some((r.0.clone(), r.1))
        }
        None => {
            log::info!("FAILOVER requested to any replica.");
            None
        }
    };
    let end = (timeout_ms > 0).then(|| Instant::now() + Duration::from_millis(timeout_ms as u64));
    *lock(&f.plan) = Plan { target, end, force };
    f.state.store(WAITING_FOR_SYNC, Ordering::Release);
    shared.pause.hold_for_failover(shared, true);
    let Some(me) = shared.arc() else { return push_error(out, b"ERR the server is shutting down") };
    let spawned = std::thread::Builder::new().name("failover".into()).spawn(move || watch(&me));
    if spawned.is_err() {
        abort(shared, "could not start the failover's thread");
        return push_error(out, b"ERR could not start the failover");
    }
    push_simple(out, "OK");
}

/// The waiting-for-sync state's watcher (Redis's `updateFailoverStatus`,
/// run here on a thread of its own): bounded by the failover's end
/// (ABORT, its TIMEOUT, the switch) and the server's.
fn watch(shared: &Arc<Shared>) {
    let f = &shared.failover;
    let mut polls = 0u32;
    while f.state.load(Ordering::Acquire) == WAITING_FOR_SYNC && !shared.shutdown.load(Ordering::Relaxed) {
        if polls % GETACK_EVERY_POLLS == 0 {
            shared.repl.backlog.request_acks();
        }
        polls = polls.wrapping_add(1);
        let offset = shared.repl.backlog.offset();
        let mut plan = lock(&f.plan);
        if plan.end.is_some_and(|end| Instant::now() >= end) {
            if plan.force {
                let target = plan.target.clone();
                drop(plan);
                if let Some((host, port)) = target {
                    log::info!("FAILOVER to {host}:{port} time out exceeded, failing over.");
                    switch(shared, &host, port);
                }
            } else {
                drop(plan);
                abort(shared, "Replica never caught up before timeout");
            }
            return;
        }
        let replicas = shared.repl.replicas();
        let synced = match &plan.target {
            Some((host, port)) => replicas
                .iter()
                .find(|r| r.0 == *host && r.1 == *port)
                .filter(|r| r.2 == offset)
                .map(|r| (r.0.clone(), r.1)),
            None => replicas.iter().find(|r| r.2 == offset).map(|r| (r.0.clone(), r.1)),
        };
        if let Some((host, port)) = synced {
            plan.target = Some((host.clone(), port));
            drop(plan);
            log::info!("Failover target {host}:{port} is synced, failing over.");
            switch(shared, &host, port);
            return;
        }
        drop(plan);
        std::thread::sleep(POLL_EVERY);
    }
}

/// This node becomes a replica of the target; its link asks the target
/// to take over (`PSYNC … FAILOVER`, repl.rs).
fn switch(shared: &Shared, host: &str, port: u16) {
    shared.failover.state.store(IN_PROGRESS, Ordering::Release);
    if let Err(e) = crate::repl::replicaof(shared, host.as_bytes(), port.to_string().as_bytes()) {
        abort(shared, &e);
    }
}

/// The target's side of `PSYNC <replid> <offset> FAILOVER` (Redis's
/// `syncCommand`): from this replica's own primary (its replid is ours),
/// this node is promoted first and the PSYNC then served as a primary's.
/// False if refused (the error is in `out`); true for any other PSYNC.
pub(crate) fn psync_request(shared: &Shared, client: u64, args: &[crate::resp::Arg<'_>], out: &mut Vec<u8>) -> bool {
    if args.len() <= 3 || !args[3].eq_ignore_ascii_case(b"failover") {
        return true;
    }
    if !shared.repl.is_replica() {
        push_error(out, b"ERR PSYNC FAILOVER can't be sent to a master.");
        return false;
    }
    if !args[1].eq_ignore_ascii_case(shared.repl.backlog.ids().0.as_bytes()) {
        push_error(out, b"ERR PSYNC FAILOVER replid must match my replid.");
        return false;
    }
    let _ = crate::repl::replicaof(shared, b"no", b"one");
    log::warn!("MASTER MODE enabled (failover request from client id={client})");
    true
}

/// The target answered `PSYNC … FAILOVER` as a primary: done.
pub fn succeeded(shared: &Shared) {
    if shared.failover.state.swap(NO_FAILOVER, Ordering::AcqRel) == IN_PROGRESS {
        *lock(&shared.failover.plan) = Plan::default();
        shared.pause.hold_for_failover(shared, false);
    }
}

/// The target refused `PSYNC … FAILOVER` (or could not be reached).
pub fn rejected(shared: &Shared, why: &str) {
    abort(shared, why);
}

/// Ends the failover (Redis's `abortFailover`): a node already demoted
/// is a primary again; the writes held are let go.
fn abort(shared: &Shared, why: &str) {
    let f = &shared.failover;
    let was = f.state.swap(NO_FAILOVER, Ordering::AcqRel);
    if was == NO_FAILOVER {
        return;
    }
    let plan = std::mem::take(&mut *lock(&f.plan));
    match plan.target {
        Some((host, port)) => log::info!("FAILOVER to {host}:{port} aborted: {why}"),
        None => log::info!("FAILOVER to any replica aborted: {why}"),
    }
    if was == IN_PROGRESS {
        let _ = crate::repl::replicaof(shared, b"no", b"one");
    }
    shared.pause.hold_for_failover(shared, false);
}
