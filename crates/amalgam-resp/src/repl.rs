//! Replication as the RESP front end serves it: the commands (REPLICAOF,
//! SLAVEOF, ROLE, REPLCONF, PSYNC, SYNC, WAIT, FAILOVER) and what the
//! subsystem below (crate `amalgam-repl`, whose design this re-exports)
//! asks of the server ([`amalgam_repl::Host`] for [`Shared`]).

pub use amalgam_repl::*;

use crate::Shared;
use std::sync::{Arc, Weak};
use std::time::Duration;

const ERR_WAIT_ON_REPLICA: &str = "ERR WAIT cannot be used with replica instances. Please also note that since Redis \
                                   4.0 if a replica is configured to be writable (which is not the default) writes \
                                   to replicas are just local and are not propagated.";

/// PSYNC to a replica of a redis-server primary.
const ERR_CHAINED_FROM_REDIS: &str =
    "NOMASTERLINK this replica follows a redis-server primary and serves no replicas of its own";

/// The RDB's read buffer is the link's own input ([`Host::load_rdb`]
/// reads through it unbuffered: a buffer here would read past the RDB
/// into the command stream).
impl amalgam_repl::Host for Shared {
    fn load_rdb(&self, r: &mut dyn std::io::Read) -> Result<u64, String> {
        use amalgam_commands::rdbfile;
        self.store.flush_all();
        let bulk = self.proto_max_bulk_len.load(std::sync::atomic::Ordering::Relaxed);
        let (limits, unloadable) = crate::rdbfile::load_rules(&self.args, bulk);
        let loaded = rdbfile::load(
            r,
            &self.store,
            &self.databases,
            &self.thresholds.load(),
            self.args.max_item_size,
            limits,
            unloadable,
            &mut |line| log::warn!("replication: the primary's RDB: {line}"),
        )
        .inspect_err(|_| {
            // What part of it loaded is not the primary's data: emptied,
            // as Redis empties a replica whose load failed
            // (`readSyncBulkPayload`: emptyData). In store mode this is
            // also what a sync larger than -m leaves (docs/replication.md).
            self.store.flush_all();
        })?;
        if !loaded.functions.is_empty() {
            let payload = rdbfile::functions_payload(&loaded.functions);
            crate::scripting::install_replicated(self, &payload);
        }
        // The load wrote past the log: a snapshot holds it (as a start's
        // RDB load, `rdbfile::after_load`).
        if let Some(p) = &self.persist {
            p.snapshot().map_err(|e| format!("the snapshot after loading the primary's RDB: {e}"))?;
        }
        Ok(loaded.keys)
    }

    fn write_rdb(
        &self,
        out: amalgam_repl::SyncBuf,
        before_cut: &mut dyn FnMut(),
        between_steps: &mut dyn FnMut(),
    ) -> std::io::Result<u64> {
        let (codes, used_mem) = crate::rdbfile::extras(self);
        let (_, keys) = amalgam_commands::rdbfile::write(
            out,
            &self.store,
            &self.databases,
            &self.thresholds.load(),
            &codes,
            used_mem,
            &[],
            before_cut,
            between_steps,
        )?;
        Ok(keys)
    }

    fn redis_key_state(&self, stored: &[u8], db: &mut Option<usize>, out: &mut Vec<u8>) {
        use amalgam_protocol::resp::{push_array, push_bulk};
        let (ns, name) = amalgam_engine::namespace::split(stored);
        let Some(d) = self.databases.database_of(ns) else { return };
        if *db != Some(d) {
            push_array(out, 2);
            push_bulk(out, b"SELECT");
            push_bulk(out, d.to_string().as_bytes());
            *db = Some(d);
        }
        // Under the key's bucket lock: a lock-free read could still see
        // the key as it was before the change whose record is being sent
        // (the writer journals under the lock, then publishes), and no
        // later record would put that right.
        let t = self.thresholds.load();
        match self.store.atomically(&[stored], || amalgam_commands::dump::payload_in(&self.store, &t, stored)) {
            Some((payload, expiry)) => {
                push_array(out, 6);
                push_bulk(out, b"RESTORE");
                push_bulk(out, name);
                push_bulk(out, expiry.unix_millis().unwrap_or(0).to_string().as_bytes());
                push_bulk(out, &payload);
                push_bulk(out, b"REPLACE");
                push_bulk(out, b"ABSTTL");
            }
            None => {
                push_array(out, 2);
                push_bulk(out, b"DEL");
                push_bulk(out, name);
            }
        }
    }

    fn sync_dir(&self) -> std::path::PathBuf {
        self.args.dir.clone().unwrap_or_else(std::env::temp_dir)
    }

    fn command_feed(&self, client: Arc<amalgam_net::clients::Client>) -> Box<dyn amalgam_repl::CommandFeed> {
        let shared = self.arc().expect("a link runs while the server is up");
        let session = crate::resp::Session::primary(self, client);
        Box::new(PrimaryClient { shared, stats: Box::default(), session, out: Vec::new() })
    }

    fn repl(&self) -> &Replication {
        &self.repl
    }
    fn store(&self) -> &Arc<amalgam_engine::Store> {
        &self.store
    }
    fn persist(&self) -> Option<&Arc<amalgam_persist::Persistence>> {
        self.persist.as_ref()
    }
    fn clients(&self) -> &amalgam_net::clients::Registry {
        &self.clients
    }
    fn next_client_id(&self) -> u64 {
        self.next_client_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }
    fn shutting_down(&self) -> bool {
        self.shutdown.load(std::sync::atomic::Ordering::Relaxed)
    }
    fn thresholds(&self) -> amalgam_types::Thresholds {
        self.thresholds.load()
    }
    fn resp_port(&self) -> u16 {
        self.args.resp_port
    }
    fn writes_held(&self) -> bool {
        self.pause.holds_writes()
    }
    fn arc(&self) -> Option<Arc<Shared>> {
        Shared::arc(self)
    }
    fn install_functions(&self, payload: &[u8]) {
        crate::scripting::install_replicated(self, payload);
    }
    fn feed_functions(&self) {
        crate::scripting::feed_replicas(self);
    }
    fn failing_over(&self) -> bool {
        self.failover.in_progress()
    }
    fn failover_succeeded(&self) {
        crate::failover::succeeded(self);
    }
    fn failover_rejected(&self, why: &str) {
        crate::failover::rejected(self, why);
    }
}

/// Redis's master client (issue 37 §1): applies a redis-server
/// primary's stream on the link's thread through the RESP front end's
/// own path ([`crate::resp::process`]), with counters of its own (each
/// worker's have one writer), its replies dropped.
struct PrimaryClient {
    shared: Arc<Shared>,
    stats: Box<crate::stats::WorkerStats>,
    session: crate::resp::Session,
    out: Vec<u8>,
}

impl amalgam_repl::CommandFeed for PrimaryClient {
    fn feed(&mut self, buf: &[u8]) -> Result<(usize, bool), String> {
        let shared = &*self.shared;
        let ks = shared.keyspace(&self.stats.ops);
        self.session.auth.renew(&shared.acl);
        let (mut pos, mut close) = (0, false);
        crate::resp::process(shared, &self.stats, &ks, &mut self.session, buf, &mut pos, &mut self.out, &mut close);
        if close {
            return Err(format!("the primary's stream: {}", String::from_utf8_lossy(&self.out).trim_end()));
        }
        self.out.clear();
        Ok((pos, std::mem::take(&mut self.session.getack)))
    }
}

/// A WAIT client's ticket, as the ack threads wake it.
#[derive(Debug)]
pub(crate) struct WaitTicket {
    pub ticket: Arc<crate::resp::blocking::Ticket>,
    pub shared: Weak<Shared>,
}

impl amalgam_repl::Waiting for WaitTicket {
    fn seq(&self) -> u64 {
        self.ticket.seq()
    }
    fn wake(&self) {
        if let Some(shared) = self.shared.upgrade() {
            crate::resp::blocking::wake_ticket(&shared, &self.ticket);
        }
    }
}

/// Updates the connection's last write offset (`Session::woff`) from its
/// worker thread's, if the thread fed the stream since the batch began
/// (one thread-local read).
#[cold]
#[inline(never)]
pub(crate) fn note_writes(session: &mut crate::resp::Session) {
    let now = amalgam_persist::repl::last_fed_here();
    if now != session.fed_mark {
        session.woff = now;
        session.fed_mark = now;
    }
}

/// A connection's batch begins while a replication journal is attached:
/// notes the worker thread's last fed offset (see [`note_writes`]). Out
/// of line: the batch loop stays small enough to inline its parser.
#[cold]
#[inline(never)]
pub(crate) fn mark_batch(session: &mut crate::resp::Session) {
    session.fed_mark = amalgam_persist::repl::last_fed_here();
}

/// WAIT numreplicas timeout.
pub(crate) fn wait(ctx: &mut crate::resp::Ctx<'_>, args: &[crate::resp::Arg<'_>], out: &mut Vec<u8>) {
    use amalgam_protocol::resp::{push_error, push_int};
    let shared = ctx.shared;
    if shared.repl.is_replica() {
        return push_error(out, ERR_WAIT_ON_REPLICA.as_bytes());
    }
    let Some(replicas) = crate::resp::int_arg(&args[1]) else {
        return push_error(out, b"ERR value is not an integer or out of range");
    };
    let Some(ms) = crate::resp::int_arg(&args[2]) else {
        return push_error(out, b"ERR timeout is not an integer or out of range");
    };
    if ms < 0 {
        return push_error(out, b"ERR timeout is negative");
    }
    // The connection's own last write, as Redis's WAIT (a connection that
    // wrote nothing waits for nothing).
    note_writes(ctx.session);
    let offset = ctx.session.woff;
    let acked = shared.repl.acked(offset);
    let replicas = replicas.max(0) as u64;
    if acked >= replicas {
        return push_int(out, acked as i64);
    }
    let timeout = (ms > 0).then(|| Duration::from_millis(ms as u64));
    crate::resp::blocking::block_wait(ctx, offset, replicas, timeout, out);
}

/// REPLICAOF SLAVEOF ROLE REPLCONF PSYNC SYNC WAIT FAILOVER.
pub(crate) fn run(
    ctx: &mut crate::resp::Ctx<'_>,
    cmd: crate::resp::table::Cmd,
    args: &[crate::resp::Arg<'_>],
    out: &mut Vec<u8>,
) -> crate::resp::After {
    use crate::resp::table::Cmd;
    use amalgam_protocol::resp::{push_error, push_simple};
    match cmd {
        Cmd::Replicaof | Cmd::Slaveof => match replicaof(ctx.shared, &args[1], &args[2]) {
            Ok(reply) => push_simple(out, reply),
            Err(e) => push_error(out, e.as_bytes()),
        },
        Cmd::Role => role(&ctx.shared.repl, out),
        Cmd::Replconf => replconf(ctx, args, out),
        Cmd::Psync | Cmd::Sync => {
            // `PSYNC <replid> <offset> FAILOVER` (failover.rs).
            if cmd == Cmd::Psync && !crate::failover::psync_request(ctx.shared, ctx.session.id(), args, out) {
                return crate::resp::After::Continue;
            }
            if ctx.shared.failover.running() {
                push_error(out, b"NOMASTERLINK Can't SYNC while failing over");
            } else if ctx.shared.repl.follows_redis() {
                // Its backlog holds the redis-server primary's RESP
                // stream, which no Amalgam replica reads (issue 37 §2).
                push_error(out, ERR_CHAINED_FROM_REDIS.as_bytes());
            } else if ctx.shared.repl.is_replica() && !ctx.shared.repl.link_up() {
                push_error(out, b"NOMASTERLINK Can't SYNC while not connected with my master");
            } else {
                let (replid, offset) = match cmd {
                    Cmd::Psync => {
                        (String::from_utf8_lossy(&args[1]).into_owned(), crate::resp::int_arg(&args[2]).unwrap_or(-1))
                    }
                    _ => ("?".into(), -1),
                };
                // An Amalgam replica says `capa amalgam` (the native
                // sync); a redis-server replica gets an RDB and Redis's
                // command stream, a Redis tool that wants the RDB alone
                // (`redis-cli --rdb`: REPLCONF rdb-only 1, or SYNC from a
                // peer that named no port) the RDB (amalgam-repl).
                let rdb_only = ctx.session.repl_rdb_only || (cmd == Cmd::Sync && ctx.session.repl_port == 0);
                ctx.session.handoff = Some(Box::new(Psync {
                    replid,
                    offset,
                    listening_port: ctx.session.repl_port,
                    ip_address: ctx.session.repl_ip.clone(),
                    amalgam: ctx.session.repl_amalgam,
                    sync: cmd == Cmd::Sync,
                    rdb_only: rdb_only && !ctx.session.repl_amalgam,
                    eof: ctx.session.repl_eof,
                }));
                // Ends the connection's turns as QUIT does; the worker
                // then hands it over instead of closing it
                // (`worker.rs`, `Conn::closing`).
                return crate::resp::After::Close;
            }
        }
        Cmd::Wait => wait(ctx, args, out),
        Cmd::Failover => crate::failover::command(ctx.shared, args, out),
        _ => unreachable!("dispatched here only for replication commands"),
    }
    crate::resp::After::Continue
}

/// REPLCONF listening-port | ip-address | capa | ack | getack ….
fn replconf(ctx: &mut crate::resp::Ctx<'_>, args: &[crate::resp::Arg<'_>], out: &mut Vec<u8>) {
    use amalgam_protocol::resp::{push_error, push_simple};
    if args.len() % 2 == 0 {
        return push_error(out, b"ERR syntax error");
    }
    for pair in args[1..].chunks(2) {
        let (opt, val) = (&pair[0], &pair[1]);
        if opt.eq_ignore_ascii_case(b"listening-port") {
            match crate::resp::int_arg(val).filter(|p| (0..=65535).contains(p)) {
                Some(p) => ctx.session.repl_port = p as u16,
                None => return push_error(out, b"ERR value is not an integer or out of range"),
            }
        } else if opt.eq_ignore_ascii_case(b"ip-address") {
            ctx.session.repl_ip = Some(String::from_utf8_lossy(val).into_owned());
        } else if opt.eq_ignore_ascii_case(b"ack") || opt.eq_ignore_ascii_case(b"getack") {
            // From a replica on a plain connection: no reply, as Redis. A
            // redis-server primary's GETACK: the link acks (`amalgam-repl`).
            ctx.session.getack |= ctx.session.primary && opt.eq_ignore_ascii_case(b"getack");
            return;
        } else if opt.eq_ignore_ascii_case(b"capa") {
            ctx.session.repl_amalgam |= val.eq_ignore_ascii_case(b"amalgam");
            ctx.session.repl_eof |= val.eq_ignore_ascii_case(b"eof");
        } else if opt.eq_ignore_ascii_case(b"rdb-only") {
            ctx.session.repl_rdb_only = &val[..] == b"1";
        } else if !opt.eq_ignore_ascii_case(b"rdb-filter-only") {
            return push_error(
                out,
                format!("ERR Unrecognized REPLCONF option: {}", String::from_utf8_lossy(opt)).as_bytes(),
            );
        }
    }
    push_simple(out, "OK");
}
