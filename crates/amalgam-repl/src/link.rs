//! A replica's side: REPLICAOF, the link thread, the handshake, the
//! full sync's load and the stream applied record by record.

use crate::sync_in::{self, Input, PsyncReply};
use crate::{lock, unix_now, Host, Link, Role, ACK_EVERY, CONNECT_TIMEOUT, PAUSED_POLL, RETRY_EVERY, SYNC_RETRY_MAX};
use amalgam_persist::format;
use amalgam_persist::repl::Applier;
use std::io::Write;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// REPLICAOF / SLAVEOF: `host port` or `NO ONE`. The reply.
pub fn replicaof<H: Host>(shared: &H, host: &[u8], port: &[u8]) -> Result<&'static str, String> {
    let r = shared.repl();
    if host.eq_ignore_ascii_case(b"no") && port.eq_ignore_ascii_case(b"one") {
        let mut role = lock(&r.role);
        if let Role::Replica(link) = &*role {
            link.retire();
            r.attach_journal(shared.store());
            // A redis-server primary's stream is not continued (its
            // bytes are RESP, not Amalgam's records).
            r.backlog.promote(!r.redis_primary.swap(false, Ordering::Relaxed));
            *role = Role::Primary;
            r.set_read_only(false);
            drop(role);
            r.refresh_stale();
            // Its replicas learn the new id by reconnecting (PSYNC2: they
            // continue under the old one).
            r.kill_peers();
            log::warn!("MASTER MODE enabled (user request)");
        }
        return Ok("OK");
    }
    let host = std::str::from_utf8(host).map_err(|_| "ERR Invalid master host".to_string())?.to_string();
    let port = std::str::from_utf8(port)
        .ok()
        .and_then(|p| p.parse::<i64>().ok())
        .filter(|p| (0..=65535).contains(p))
        .ok_or_else(|| "ERR Invalid master port".to_string())? as u16;
    let mut role = lock(&r.role);
    if let Role::Replica(link) = &*role {
        if link.host.eq_ignore_ascii_case(&host) && link.port == port {
            return Ok("OK Already connected to specified master");
        }
        link.retire();
    }
    let link = Arc::new(Link {
        host: host.clone(),
        port,
        stop: AtomicBool::new(false),
        up: AtomicBool::new(false),
        state: Mutex::new("connect"),
        last_io: AtomicU64::new(0),
        down_since: AtomicU64::new(unix_now()),
        sock: Mutex::new(None),
        applying: Mutex::new(()),
    });
    r.attach_journal(shared.store());
    r.backlog.pause_feeding();
    *role = Role::Replica(Arc::clone(&link));
    r.set_read_only(r.replica_read_only.load(Ordering::Relaxed));
    drop(role);
    r.refresh_stale();
    r.kill_peers();
    let Some(me) = shared.arc() else { return Err("ERR the server is shutting down".into()) };
    log::warn!("Connecting to MASTER {host}:{port}");
    std::thread::Builder::new()
        .name("amalgam-repl-link".into())
        .spawn(move || link_loop(&me, &link))
        .map_err(|e| format!("ERR cannot start the replication thread: {e}"))?;
    Ok("OK")
}

/// The link thread of a replica: sessions until REPLICAOF changes.
fn link_loop<H: Host>(shared: &Arc<H>, link: &Arc<Link>) {
    // Kept across sessions: a reconnect continues with it (partial
    // resync); None until the first full sync of this link.
    let r = shared.repl();
    let mut applier: Option<Applier> = r.resume.swap(false, Ordering::Relaxed).then(|| {
        Applier::continuing(Arc::clone(shared.store()), shared.thresholds(), r.cas_shift.load(Ordering::Relaxed))
    });
    // Full syncs that failed in a row (SYNC_RETRY_MAX's notes).
    let mut failed_syncs: u32 = 0;
    while !link.stop.load(Ordering::Relaxed) && !shared.shutting_down() {
        let mut retry = RETRY_EVERY;
        match session(shared, link, &mut applier) {
            Ok(()) => {}
            Err(e) => {
                if !link.stop.load(Ordering::Relaxed) {
                    log::warn!("replication: link to {}:{} lost: {e}", link.host, link.port);
                }
                if *lock(&link.state) == "sync" {
                    failed_syncs = failed_syncs.saturating_add(1);
                    retry = RETRY_EVERY.saturating_mul(1 << (failed_syncs - 1).min(6)).min(SYNC_RETRY_MAX);
                    log::warn!(
                        "replication: the full sync failed ({failed_syncs} in a row); the next attempt in {} s",
                        retry.as_secs()
                    );
                }
                // A failover's target that cannot be reached: this node
                // is a primary again (failover.rs).
                if shared.failing_over() {
                    shared.failover_rejected(&format!("Failover target unreachable: {e}"));
                }
            }
        }
        if link.up.swap(false, Ordering::Relaxed) {
            // It streamed: the sync before it succeeded.
            failed_syncs = 0;
            link.down_since.store(unix_now(), Ordering::Relaxed);
            shared.repl().refresh_stale();
        }
        link.set_state("connect");
        *lock(&link.sock) = None;
        let until = Instant::now() + retry;
        while Instant::now() < until && !link.stop.load(Ordering::Relaxed) && !shared.shutting_down() {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Takes a CLIENT LIST entry out when dropped.
struct Unlist<'a>(&'a amalgam_net::clients::Registry, u64);

impl Drop for Unlist<'_> {
    fn drop(&mut self) {
        self.0.remove(self.1);
    }
}

/// The errors a primary may answer PING with before the replica
/// authenticates (Redis's `syncWithMaster` lets exactly these through).
fn ping_error_allowed(reply: &str) -> bool {
    reply.starts_with("-NOAUTH") || reply.starts_with("-NOPERM") || reply.starts_with("-ERR operation not permitted")
}

/// Sends one command as a RESP array.
fn send_command(sock: &mut TcpStream, args: &[&str]) -> std::io::Result<()> {
    let mut out = Vec::new();
    amalgam_protocol::resp::push_array(&mut out, args.len());
    for a in args {
        amalgam_protocol::resp::push_bulk(&mut out, a.as_bytes());
    }
    sock.write_all(&out)
}

/// One connection to the primary: handshake, sync, stream.
fn session<H: Host>(shared: &Arc<H>, link: &Arc<Link>, applier: &mut Option<Applier>) -> std::io::Result<()> {
    let r = shared.repl();
    link.set_state("connecting");
    let addr: SocketAddr = (link.host.as_str(), link.port)
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| std::io::Error::other("the primary's address does not resolve"))?;
    let sock = TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT)?;
    sock.set_nodelay(true)?;
    // Reads wake at least every ACK_EVERY (the periodic ack); silence
    // longer than repl-timeout drops the link (`Input::fill_waiting`).
    sock.set_read_timeout(Some(ACK_EVERY))?;
    *lock(&link.sock) = Some(sock.try_clone()?);
    if link.stop.load(Ordering::Relaxed) {
        return Ok(());
    }
    // Listed in CLIENT LIST while the session lasts (`flags=M`, Redis's
    // `user=(superuser)`); CLIENT KILL drops the link as TYPE master does.
    let client = amalgam_net::clients::Registry::unowned(shared.next_client_id(), &sock);
    let _listed = {
        client.attrs().user = Some(b"(superuser)".to_vec());
        let l = Arc::clone(link);
        shared.clients().add_replication(Arc::clone(&client), amalgam_net::clients::flag::MASTER, move || l.close());
        Unlist(shared.clients(), client.id)
    };
    let mut w = sock.try_clone()?;
    let timeout_secs = r.timeout_secs.load(Ordering::Relaxed);
    let mut input = Input::new(sock, timeout_secs);
    send_command(&mut w, &["PING"])?;
    let pong = input.line(link)?;
    // A primary that wants a password answers PING with NOAUTH (or NOPERM
    // for an ACL user without +ping): Redis's replica goes on to AUTH.
    if pong.starts_with('-') && !ping_error_allowed(&pong) {
        return Err(std::io::Error::other(format!("the primary answered PING with {pong}")));
    }
    let auth = lock(&r.masterauth).clone();
    if !auth.is_empty() {
        let user = lock(&r.masteruser).clone();
        if user.is_empty() {
            send_command(&mut w, &["AUTH", &auth])?;
        } else {
            send_command(&mut w, &["AUTH", &user, &auth])?;
        }
        let reply = input.line(link)?;
        if reply.starts_with('-') {
            // Redis's log line; the reply names no password.
            return Err(std::io::Error::other(format!("Unable to AUTH to MASTER: {reply}")));
        }
    }
    let port = shared.resp_port().to_string();
    send_command(&mut w, &["REPLCONF", "listening-port", &port])?;
    let _ = input.line(link)?;
    // `capa amalgam`: the native format, please (a redis-server ignores
    // capabilities it does not know).
    send_command(&mut w, &["REPLCONF", "capa", "eof", "capa", "psync2", "capa", "amalgam"])?;
    let _ = input.line(link)?;
    let (replid, _, offset, _) = r.backlog.ids();
    // A node that holds a stream (synced before, or a former primary)
    // asks to continue it: PSYNC2 lets a promoted replica continue its
    // old primary's id, so a failover needs no full sync.
    let (id, next) = if applier.is_some() || r.backlog.active() {
        (replid, (offset + 1).to_string())
    } else {
        ("?".into(), "-1".into())
    };
    // A primary handing over (failover.rs) asks its target to take over.
    let failing_over = shared.failing_over();
    if failing_over {
        send_command(&mut w, &["PSYNC", &id, &next, "FAILOVER"])?;
    } else {
        send_command(&mut w, &["PSYNC", &id, &next])?;
    }
    let reply = input.psync_line(link)?;
    if failing_over {
        if reply.starts_with("+CONTINUE") || reply.starts_with("+FULLRESYNC") {
            shared.failover_succeeded();
        } else {
            shared.failover_rejected("Failover target rejected psync request");
            return Err(std::io::Error::other(format!("the failover's target answered PSYNC with {reply}")));
        }
    }
    match sync_in::psync_reply(&reply) {
        PsyncReply::FullResync { replid, offset, malformed } => {
            if malformed {
                // Redis's words; the id is blanked, so the next PSYNC
                // cannot continue this one.
                log::warn!("replication: Master replied with wrong +FULLRESYNC syntax: {reply}");
            }
            link.set_state("sync");
            r.consistent.store(false, Ordering::Relaxed);
            *applier = None;
            if input.redis_rdb_follows(link)? {
                // A redis-server primary: its RDB, then its commands.
                r.redis_primary.store(true, Ordering::Relaxed);
                let t = Instant::now();
                let keys = sync_in::load_redis(&mut input, link, |rdb| shared.load_rdb(rdb))?;
                r.backlog.follow(&replid, offset);
                log::warn!(
                    "MASTER <-> REPLICA sync: loaded the primary's RDB ({keys} keys in {:.3} s)",
                    t.elapsed().as_secs_f64()
                );
                return follow_redis(input, w, link, &**shared, client);
            }
            r.redis_primary.store(false, Ordering::Relaxed);
            let mut a = Applier::begin_full_sync(Arc::clone(shared.store()), shared.thresholds());
            let t = Instant::now();
            sync_in::load_native(&mut input, link, |rec| {
                if let format::Record::Functions { payload } = rec {
                    shared.install_functions(payload);
                    return false;
                }
                a.apply(rec)
            })?;
            r.backlog.follow(&replid, offset);
            r.cas_shift.store(a.cas_shift(), Ordering::Relaxed);
            r.consistent.store(true, Ordering::Relaxed);
            r.log_position(shared.persist());
            log::warn!(
                "MASTER <-> REPLICA sync: finished with success ({} records in {:.3} s)",
                a.applied,
                t.elapsed().as_secs_f64()
            );
            *applier = Some(a);
        }
        PsyncReply::Continue { new_id } => {
            if let Some(new_id) = new_id {
                r.backlog.adopt_id(&new_id);
            }
            if r.follows_redis() {
                log::warn!("MASTER <-> REPLICA sync: Master accepted a Partial Resynchronization.");
                return follow_redis(input, w, link, &**shared, client);
            }
            if applier.is_none() {
                // A former primary: its own CAS uniques.
                r.cas_shift.store(0, Ordering::Relaxed);
                *applier = Some(Applier::continuing(Arc::clone(shared.store()), shared.thresholds(), 0));
            }
            log::warn!("MASTER <-> REPLICA sync: Master accepted a Partial Resynchronization.");
        }
        PsyncReply::Other => return Err(std::io::Error::other(format!("the primary answered PSYNC with {reply}"))),
    }
    let Some(a) = applier.as_mut() else { return Err(std::io::Error::other("no sync")) };
    // Amalgam's records, each applied under its key's bucket lock; the
    // stream's place goes to the log after each batch.
    stream_in(input, w, link, &**shared, true, |buf| {
        sync_in::native_batch(buf, |rec| {
            if let format::Record::Functions { payload } = rec {
                shared.install_functions(payload);
            } else {
                a.apply(rec);
            }
        })
    })
}

/// Applies the primary's stream until the link drops or stops: `apply`
/// takes the bytes read so far and applies the whole units at their
/// front (Amalgam's records, or a redis-server's commands), answering the
/// bytes it used and whether a GETACK was among them. Those bytes go to
/// the backlog as they came, so this node's offset is its primary's.
/// `log_position`: the stream's place goes to the log after each batch
/// (Amalgam's stream only: a restart continues it).
fn stream_in<H: Host>(
    mut input: Input<TcpStream>,
    mut w: TcpStream,
    link: &Link,
    shared: &H,
    log_position: bool,
    mut apply: impl FnMut(&[u8]) -> std::io::Result<(usize, bool)>,
) -> std::io::Result<()> {
    let r = shared.repl();
    link.set_state("connected");
    link.up.store(true, Ordering::Relaxed);
    link.down_since.store(0, Ordering::Relaxed);
    r.refresh_stale();
    ack(&mut w, r.backlog.offset())?;
    let mut last_ack = Instant::now();
    // Bounded by the link: each pass reads or the link ends.
    loop {
        // A CLIENT PAUSE on this replica holds its primary's stream too
        // (Redis: a paused replica's offset does not grow): nothing more
        // is read or applied until it ends; the acks go on.
        while shared.writes_held() && !link.stop.load(Ordering::Relaxed) {
            if last_ack.elapsed() >= ACK_EVERY {
                ack(&mut w, r.backlog.offset())?;
                last_ack = Instant::now();
            }
            std::thread::sleep(PAUSED_POLL);
        }
        let held = lock(&link.applying);
        if link.stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        let (used, asked) = apply(&input.buf[input.pos..])?;
        if used > 0 {
            r.backlog.feed(&input.buf[input.pos..input.pos + used]);
            input.pos += used;
            if log_position {
                r.log_position(shared.persist());
            }
        }
        drop(held);
        if asked || last_ack.elapsed() >= ACK_EVERY {
            ack(&mut w, r.backlog.offset())?;
            last_ack = Instant::now();
        }
        if link.stop.load(Ordering::Relaxed) || shared.shutting_down() {
            return Ok(());
        }
        input.fill_waiting(link, || {
            // The periodic ack, while the primary is quiet.
            ack(&mut w, r.backlog.offset())?;
            last_ack = Instant::now();
            Ok(())
        })?;
    }
}

fn ack(w: &mut TcpStream, offset: u64) -> std::io::Result<()> {
    send_command(w, &["REPLCONF", "ACK", &offset.to_string()])
}

/// Follows a redis-server primary's command stream (issue 37 §1): each
/// whole command runs through the server's command path
/// ([`Host::command_feed`]) and its bytes go to the backlog, so the
/// offset acked, shown and asked for in the next PSYNC is Redis's. A
/// `REPLCONF GETACK` is answered with an ack at once; a CLIENT PAUSE
/// holds the stream as for an Amalgam primary. No state file is kept
/// (a restart syncs in full).
fn follow_redis<H: Host>(
    input: Input<TcpStream>,
    w: TcpStream,
    link: &Link,
    shared: &H,
    client: Arc<amalgam_net::clients::Client>,
) -> std::io::Result<()> {
    shared.repl().consistent.store(false, Ordering::Relaxed);
    let mut feed = shared.command_feed(client);
    stream_in(input, w, link, shared, false, |buf| sync_in::redis_batch(buf, &mut *feed))
}
