//! A replica's side: REPLICAOF, the link thread, the handshake, the
//! full sync's load and the stream applied record by record.

use crate::{
    lock, unix_now, Host, Link, Role, ACK_EVERY, CONNECT_TIMEOUT, HANDSHAKE_LINE_BYTES_MAX, PAUSED_POLL,
    READ_CHUNK_BYTES, RETRY_EVERY,
};
use amalgam_persist::format::{self, Bad};
use amalgam_persist::repl::{self as stream, Applier};
use std::io::{Read, Write};
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
    while !link.stop.load(Ordering::Relaxed) && !shared.shutting_down() {
        match session(shared, link, &mut applier) {
            Ok(()) => {}
            Err(e) => {
                if !link.stop.load(Ordering::Relaxed) {
                    log::warn!("replication: link to {}:{} lost: {e}", link.host, link.port);
                }
                // A failover's target that cannot be reached: this node
                // is a primary again (failover.rs).
                if shared.failing_over() {
                    shared.failover_rejected(&format!("Failover target unreachable: {e}"));
                }
            }
        }
        if link.up.swap(false, Ordering::Relaxed) {
            link.down_since.store(unix_now(), Ordering::Relaxed);
            shared.repl().refresh_stale();
        }
        link.set_state("connect");
        *lock(&link.sock) = None;
        let until = Instant::now() + RETRY_EVERY;
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

/// Bytes read from the primary, parsed from the front.
struct Input {
    sock: TcpStream,
    buf: Vec<u8>,
    pos: usize,
    /// `repl-timeout` when the link started.
    timeout_secs: u64,
}

impl Input {
    /// Reads more; Err on EOF.
    fn fill(&mut self, link: &Link) -> std::io::Result<usize> {
        if self.pos > 0 && self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
        } else if self.pos > READ_CHUNK_BYTES {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        let len = self.buf.len();
        self.buf.resize(len + READ_CHUNK_BYTES, 0);
        let n = loop {
            match self.sock.read(&mut self.buf[len..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.buf.truncate(len);
                    return Err(e);
                }
            }
        };
        self.buf.truncate(len + n);
        if n == 0 {
            return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "the primary closed the connection"));
        }
        link.last_io.store(unix_now(), Ordering::Relaxed);
        Ok(n)
    }

    /// [`Input::fill`], waiting through read timeouts (every ACK_EVERY:
    /// `tick` runs then) until the primary has been silent for
    /// `repl-timeout`, or the link stops.
    fn fill_waiting(&mut self, link: &Link, mut tick: impl FnMut() -> std::io::Result<()>) -> std::io::Result<usize> {
        let timeout_secs = self.timeout_secs;
        // Bounded by repl-timeout: each pass waits ACK_EVERY at most.
        loop {
            match self.fill(link) {
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                    if link.stop.load(Ordering::Relaxed) {
                        return Err(std::io::Error::other("the link was stopped"));
                    }
                    let last = link.last_io.load(Ordering::Relaxed);
                    if unix_now().saturating_sub(last) > timeout_secs.max(1) {
                        return Err(std::io::Error::new(
                            std::io::ErrorKind::TimedOut,
                            "the primary was silent past repl-timeout",
                        ));
                    }
                    tick()?;
                }
                r => return r,
            }
        }
    }

    /// After `+FULLRESYNC`: true if a redis-server's RDB follows (its
    /// `$<len>` or `$EOF:<mark>` line, after the bare newlines it sends
    /// while it prepares the sync), false for an Amalgam primary's
    /// snapshot (which begins with its magic, never `$` or a newline).
    fn redis_rdb_follows(&mut self, link: &Link) -> std::io::Result<bool> {
        // Bounded by repl-timeout: each fill reads a byte or more.
        loop {
            while self.buf.get(self.pos) == Some(&b'\n') {
                self.pos += 1;
            }
            if let Some(&b) = self.buf.get(self.pos) {
                return Ok(b == b'$');
            }
            self.fill_waiting(link, || Ok(()))?;
        }
    }

    /// One `\r\n`-terminated line (without it).
    fn line(&mut self, link: &Link) -> std::io::Result<String> {
        loop {
            if let Some(i) = self.buf[self.pos..].windows(2).position(|w| w == b"\r\n") {
                let line = String::from_utf8_lossy(&self.buf[self.pos..self.pos + i]).into_owned();
                self.pos += i + 2;
                return Ok(line);
            }
            if self.buf.len() - self.pos > HANDSHAKE_LINE_BYTES_MAX {
                return Err(std::io::Error::other("a handshake line past its limit"));
            }
            self.fill_waiting(link, || Ok(()))?;
        }
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
    let mut input = Input { sock, buf: Vec::new(), pos: 0, timeout_secs };
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
    let reply = loop {
        // A primary busy preparing the sync may send bare newlines.
        let l = input.line(link)?;
        if !l.is_empty() {
            break l;
        }
    };
    if failing_over {
        if reply.starts_with("+CONTINUE") || reply.starts_with("+FULLRESYNC") {
            shared.failover_succeeded();
        } else {
            shared.failover_rejected("Failover target rejected psync request");
            return Err(std::io::Error::other(format!("the failover's target answered PSYNC with {reply}")));
        }
    }
    let mut words = reply.split_whitespace();
    match words.next() {
        Some("+FULLRESYNC") => {
            let replid = words.next().unwrap_or("").to_string();
            let offset: u64 = words.next().and_then(|o| o.parse().ok()).unwrap_or(0);
            link.set_state("sync");
            r.consistent.store(false, Ordering::Relaxed);
            *applier = None;
            if input.redis_rdb_follows(link)? {
                // A redis-server primary: its RDB, then its commands.
                r.redis_primary.store(true, Ordering::Relaxed);
                let t = Instant::now();
                let keys = load_redis(&mut input, link, &**shared)?;
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
            load(&mut input, link, &**shared, &mut a)?;
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
        Some("+CONTINUE") => {
            if let Some(new_id) = words.next() {
                r.backlog.adopt_id(new_id);
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
        _ => return Err(std::io::Error::other(format!("the primary answered PSYNC with {reply}"))),
    }
    let Some(a) = applier.as_mut() else { return Err(std::io::Error::other("no sync")) };
    // Amalgam's records, each applied under its key's bucket lock; the
    // stream's place goes to the log after each batch.
    stream_in(input, w, link, &**shared, true, |buf| {
        let (mut pos, mut asked) = (0, false);
        // Bounded: each record takes bytes of `buf`.
        loop {
            match format::read_record(&buf[pos..]) {
                Ok((rec, n)) => {
                    asked |= matches!(rec, format::Record::GetAck);
                    if let format::Record::Functions { payload } = rec {
                        shared.install_functions(payload);
                    } else {
                        a.apply(rec);
                    }
                    pos += n;
                }
                Err(Bad::Torn) => return Ok((pos, asked)),
                Err(Bad::Corrupt(why)) => return Err(std::io::Error::other(format!("a corrupt stream record: {why}"))),
            }
        }
    })
}

/// Reads the full sync's snapshot (header, items, END) into the store.
fn load<H: Host>(input: &mut Input, link: &Link, shared: &H, a: &mut Applier) -> std::io::Result<()> {
    while input.buf.len() - input.pos < stream::SYNC_HEADER_BYTES {
        input.fill_waiting(link, || Ok(()))?;
    }
    stream::read_sync_header(&input.buf[input.pos..input.pos + stream::SYNC_HEADER_BYTES])
        .map_err(|e| std::io::Error::other(format!("not a full sync from an Amalgam primary: {e}")))?;
    input.pos += stream::SYNC_HEADER_BYTES;
    loop {
        // Under `applying`, and nothing once stopped (Link::retire).
        let held = lock(&link.applying);
        if link.stop.load(Ordering::Relaxed) {
            return Err(std::io::Error::other("the link was stopped during the full sync"));
        }
        loop {
            match format::read_record(&input.buf[input.pos..]) {
                Ok((rec, n)) => {
                    input.pos += n;
                    if let format::Record::Functions { payload } = rec {
                        shared.install_functions(payload);
                        continue;
                    }
                    if a.apply(rec) {
                        return Ok(());
                    }
                }
                Err(Bad::Torn) => break,
                Err(Bad::Corrupt(why)) => return Err(std::io::Error::other(format!("a corrupt sync record: {why}"))),
            }
        }
        drop(held);
        input.fill_waiting(link, || Ok(()))?;
    }
}

/// Applies the primary's stream until the link drops or stops: `apply`
/// takes the bytes read so far and applies the whole units at their
/// front (Amalgam's records, or a redis-server's commands), answering the
/// bytes it used and whether a GETACK was among them. Those bytes go to
/// the backlog as they came, so this node's offset is its primary's.
/// `log_position`: the stream's place goes to the log after each batch
/// (Amalgam's stream only: a restart continues it).
fn stream_in<H: Host>(
    mut input: Input,
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

/// The RDB of a redis-server primary's full sync, read through the
/// link's input: `left` bytes for `$<len>`, or as far as the RDB reader
/// goes (its EOF opcode and checksum) for `$EOF:<mark>`.
struct RdbIn<'a> {
    input: &'a mut Input,
    link: &'a Link,
    left: Option<u64>,
}

impl Read for RdbIn<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.left == Some(0) || out.is_empty() {
            return Ok(0);
        }
        if self.input.pos == self.input.buf.len() {
            self.input.fill_waiting(self.link, || Ok(()))?;
        }
        let avail = &self.input.buf[self.input.pos..];
        let mut n = avail.len().min(out.len());
        if let Some(left) = &mut self.left {
            n = n.min(usize::try_from(*left).unwrap_or(usize::MAX));
            *left -= n as u64;
        }
        out[..n].copy_from_slice(&avail[..n]);
        self.input.pos += n;
        Ok(n)
    }
}

/// Redis's diskless sync ends its RDB with this many bytes of the mark
/// its `$EOF:` line named (`RDB_EOF_MARK_SIZE`).
const RDB_EOF_MARK_BYTES: usize = 40;

/// Loads a redis-server primary's RDB (issue 37 §1): the `$<len>` or
/// `$EOF:<mark>` line, the RDB through the server's loader (which
/// empties the databases first), and for `$EOF:` the mark after it. The
/// keys loaded.
fn load_redis<H: Host>(input: &mut Input, link: &Link, shared: &H) -> std::io::Result<u64> {
    let head = input.line(link)?;
    let head = head.trim_start_matches('\n');
    let (left, mark) = match head.strip_prefix("$EOF:") {
        Some(mark) if mark.len() == RDB_EOF_MARK_BYTES => (None, Some(mark.as_bytes().to_vec())),
        Some(_) => return Err(std::io::Error::other(format!("a bad EOF mark from the primary: {head}"))),
        None => {
            let len = head.strip_prefix('$').and_then(|n| n.parse::<u64>().ok());
            (Some(len.ok_or_else(|| std::io::Error::other(format!("not an RDB length: {head}")))?), None)
        }
    };
    // Under `applying`, as the native full sync (Link::retire waits).
    let held = lock(&link.applying);
    if link.stop.load(Ordering::Relaxed) {
        return Err(std::io::Error::other("the link was stopped during the full sync"));
    }
    let mut rdb = RdbIn { input, link, left };
    let keys = shared.load_rdb(&mut rdb).map_err(|e| std::io::Error::other(format!("the primary's RDB: {e}")))?;
    if rdb.left.is_some_and(|l| l > 0) {
        return Err(std::io::Error::other("the primary's RDB ended before its announced length"));
    }
    drop(held);
    if let Some(mark) = mark {
        while input.buf.len() - input.pos < RDB_EOF_MARK_BYTES {
            input.fill_waiting(link, || Ok(()))?;
        }
        if input.buf[input.pos..input.pos + RDB_EOF_MARK_BYTES] != mark[..] {
            return Err(std::io::Error::other("the primary's RDB is not followed by its EOF mark"));
        }
        input.pos += RDB_EOF_MARK_BYTES;
    }
    Ok(keys)
}

/// Follows a redis-server primary's command stream (issue 37 §1): each
/// whole command runs through the server's command path
/// ([`Host::command_feed`]) and its bytes go to the backlog, so the
/// offset acked, shown and asked for in the next PSYNC is Redis's. A
/// `REPLCONF GETACK` is answered with an ack at once; a CLIENT PAUSE
/// holds the stream as for an Amalgam primary. No state file is kept
/// (a restart syncs in full).
fn follow_redis<H: Host>(
    input: Input,
    w: TcpStream,
    link: &Link,
    shared: &H,
    client: Arc<amalgam_net::clients::Client>,
) -> std::io::Result<()> {
    shared.repl().consistent.store(false, Ordering::Relaxed);
    let mut feed = shared.command_feed(client);
    stream_in(input, w, link, shared, false, |buf| {
        let (mut pos, mut asked) = (0, false);
        // Bounded: each pass takes bytes of `buf` or stops.
        loop {
            let (used, getack) = feed.feed(&buf[pos..]).map_err(std::io::Error::other)?;
            if used == 0 {
                return Ok((pos, asked));
            }
            pos += used;
            asked |= getack;
        }
    })
}
