//! The cluster bus: one thread of its own per node (Redis runs it in its
//! event loop), a listener on the bus port, an outgoing link to every
//! known node and whatever links other nodes opened to this one, all on
//! one mio poll; and the cron (`clusterCron`, every 100 ms) that
//! connects, pings, times out handshakes and marks nodes PFAIL.
//!
//! Bounds: a message is read whole before it is decoded, and at most
//! [`msg::MESSAGE_MAX`] bytes; a link whose unsent output passes
//! [`LINK_OUTPUT_MAX`] is closed (Redis's
//! `cluster-link-sendbuf-limit`, 0 by default, i.e. unbounded; a bound
//! here, since a peer that reads nothing must not take this node's
//! memory); a link still connecting after the node timeout is closed and
//! tried again by the cron. A message that fails its checks closes its
//! link with a log line; nothing a peer sends panics the thread.

use crate::gossip::{self, Effect, Peer, Rng};
use crate::links::LinkInfo;
use crate::msg::{self, Type};
use crate::node::{self, flags, Name};
use crate::{now_ms, Cluster};
use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};
use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::sync::Arc;
use std::time::Duration;

/// The cron's period (Redis's `clusterCron`: 10 times a second).
pub const CRON_MS: u64 = 100;
/// A link's unsent output past this closes it.
pub const LINK_OUTPUT_MAX: usize = 64 << 20;
/// Bytes read from a link per read call.
const READ_CHUNK: usize = 64 << 10;
/// Reads per link per event (the rest waits for the next turn).
const READS_PER_EVENT_MAX: usize = 64;
/// Connections accepted per listener event.
const ACCEPTS_PER_EVENT_MAX: usize = 256;
/// The most links open at once (incoming and outgoing): past it a new
/// incoming connection is refused.
pub const LINKS_MAX: usize = 4096;
/// Handshakes time out after the node timeout, but never sooner than this.
const HANDSHAKE_TIMEOUT_MIN_MS: u64 = 1000;
/// Random nodes sampled each second for the ping to the one heard from
/// least recently.
const PING_SAMPLES: usize = 5;

const LISTENER: Token = Token(usize::MAX);
const WAKER: Token = Token(usize::MAX - 1);

/// What the bus asks of the server.
pub trait BusHost: Send + Sync {
    /// The replication offset this node announces (a primary's, or what
    /// a replica processed).
    fn repl_offset(&self) -> u64;
    /// Delivers a message PUBLISHed on another node to this node's
    /// subscribers.
    fn publish(&self, channel: &[u8], message: &[u8]);
    /// Delivers a message SPUBLISHed on another node of this node's shard
    /// (a PUBLISHSHARD) to this node's shard channel subscribers.
    fn publish_shard(&self, channel: &[u8], message: &[u8]);
    /// Replicate the primary at (ip, client port), or stop replicating
    /// (a failover won), as Redis's `replicationSetMaster` /
    /// `replicationUnsetMaster`.
    fn follow(&self, primary: Option<(String, u16)>);
    /// The primary this node replicates now, if any.
    fn following(&self) -> Option<(String, u16)>;
    /// How long the replication link has gone without data (0 while data
    /// flows; a primary: 0).
    fn data_age_ms(&self) -> u64;
    /// Hold writes (a manual failover of this primary) or let them go.
    fn hold_writes(&self, on: bool);
    /// Delete database 0's keys in `slots` (slots this primary lost,
    /// Redis's `delKeysInSlot`), as deletions its replicas see.
    fn drop_slot_keys(&self, _slots: &[u16]) {}
}

struct Link {
    sock: TcpStream,
    /// The node of an outgoing link.
    node: Option<Name>,
    /// The node that spoke on an incoming link, once known (CLUSTER
    /// LINKS's `from`; Redis's `setClusterNodeToInboundClusterLink`).
    from: Option<Name>,
    inbound: bool,
    created: u64,
    connected: bool,
    rbuf: Vec<u8>,
    wbuf: Vec<u8>,
    peer_ip: String,
    local_ip: String,
}

/// The bus thread's state.
struct Bus {
    c: Arc<Cluster>,
    host: Arc<dyn BusHost>,
    poll: Poll,
    listener: TcpListener,
    links: HashMap<usize, Link>,
    /// Each node's outgoing link.
    outgoing: HashMap<Name, usize>,
    next_token: usize,
    iteration: u64,
    rng: Rng,
    /// A link came, went or learned its node since CLUSTER LINKS's list
    /// was last made.
    links_changed: bool,
}

/// Starts the bus on `listener` (bound by the server to the bus port).
pub fn start(c: Arc<Cluster>, host: Arc<dyn BusHost>, mut listener: TcpListener) -> Result<(), String> {
    let poll = Poll::new().map_err(|e| e.to_string())?;
    poll.registry().register(&mut listener, LISTENER, Interest::READABLE).map_err(|e| e.to_string())?;
    c.set_waker(mio::Waker::new(poll.registry(), WAKER).map_err(|e| e.to_string())?);
    let mut bus = Bus {
        c,
        host,
        poll,
        listener,
        links: HashMap::new(),
        outgoing: HashMap::new(),
        next_token: 0,
        iteration: 0,
        rng: Rng::new(),
        links_changed: false,
    };
    std::thread::Builder::new()
        .name("amalgam-cluster-bus".into())
        .spawn(move || bus.run())
        .map_err(|e| format!("cannot start the cluster bus thread: {e}"))?;
    Ok(())
}

fn ip_of(a: std::io::Result<std::net::SocketAddr>) -> String {
    a.map(|a| a.ip().to_string()).unwrap_or_default()
}

impl Bus {
    fn run(&mut self) {
        let mut events = Events::with_capacity(1024);
        let mut last_cron = 0;
        loop {
            let _ = self.poll.poll(&mut events, Some(Duration::from_millis(CRON_MS)));
            for ev in events.iter() {
                if ev.token() == LISTENER {
                    self.accept();
                } else if ev.token() == WAKER {
                    // The outbox, below.
                } else {
                    let t = ev.token().0;
                    if ev.is_writable() {
                        self.writable(t);
                    }
                    if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                        self.readable(t);
                    }
                }
            }
            let outbox = std::mem::take(&mut self.c.lock().outbox);
            if !outbox.is_empty() {
                self.apply(usize::MAX, outbox);
            }
            let now = now_ms();
            if now.saturating_sub(last_cron) >= CRON_MS {
                last_cron = now;
                self.cron(now);
                self.list_links();
            } else if self.links_changed {
                self.list_links();
            }
            // Once per iteration, what this iteration and the commands
            // since the last one changed (Redis's clusterBeforeSleep).
            self.c.save_if_pending();
        }
    }

    fn register(&mut self, mut link: Link) -> Option<usize> {
        let t = self.next_token;
        self.next_token = self.next_token.wrapping_add(1) % (usize::MAX - 1);
        let interest = Interest::READABLE | Interest::WRITABLE;
        if self.poll.registry().register(&mut link.sock, Token(t), interest).is_err() {
            return None;
        }
        self.links.insert(t, link);
        self.links_changed = true;
        Some(t)
    }

    fn accept(&mut self) {
        for _ in 0..ACCEPTS_PER_EVENT_MAX {
            match self.listener.accept() {
                Ok((sock, peer)) => {
                    if self.links.len() >= LINKS_MAX {
                        log::warn!("Cluster bus: refusing a connection from {peer}: {LINKS_MAX} links open");
                        continue;
                    }
                    let _ = sock.set_nodelay(true);
                    let local_ip = ip_of(sock.local_addr());
                    let link = Link {
                        sock,
                        node: None,
                        from: None,
                        inbound: true,
                        created: now_ms(),
                        connected: true,
                        rbuf: Vec::new(),
                        wbuf: Vec::new(),
                        peer_ip: peer.ip().to_string(),
                        local_ip,
                    };
                    self.register(link);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) => {
                    log::warn!("Cluster bus: accept: {e}");
                    return;
                }
            }
        }
    }

    fn close(&mut self, t: usize) {
        if let Some(mut link) = self.links.remove(&t) {
            self.links_changed = true;
            let _ = self.poll.registry().deregister(&mut link.sock);
            if let Some(n) = link.node.filter(|_| !link.inbound) {
                if self.outgoing.get(&n) == Some(&t) {
                    self.outgoing.remove(&n);
                    if let Some(node) = self.c.lock().nodes.get_mut(&n) {
                        node.linked = false;
                    }
                }
            }
        }
    }

    fn writable(&mut self, t: usize) {
        let Some(link) = self.links.get_mut(&t) else { return };
        if !link.connected {
            match link.sock.take_error() {
                Ok(None) if link.sock.peer_addr().is_ok() => {
                    link.connected = true;
                    link.local_ip = ip_of(link.sock.local_addr());
                    if let Some(n) = link.node {
                        if let Some(node) = self.c.lock().nodes.get_mut(&n) {
                            node.linked = true;
                        }
                    }
                }
                Ok(None) => return,
                _ => return self.close(t),
            }
        }
        self.flush(t);
    }

    /// Writes what the link holds until the socket would block.
    fn flush(&mut self, t: usize) {
        let Some(link) = self.links.get_mut(&t) else { return };
        if !link.connected {
            return;
        }
        let mut failed = false;
        while !link.wbuf.is_empty() {
            match link.sock.write(&link.wbuf) {
                Ok(0) => {
                    failed = true;
                    break;
                }
                Ok(n) => {
                    link.wbuf.drain(..n);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => {
                    failed = true;
                    break;
                }
            }
        }
        if failed {
            self.close(t);
        }
    }

    fn send(&mut self, t: usize, bytes: &[u8]) {
        let Some(link) = self.links.get_mut(&t) else { return };
        if link.wbuf.len() + bytes.len() > LINK_OUTPUT_MAX {
            log::warn!("Cluster bus: closing a link whose output passed {LINK_OUTPUT_MAX} bytes");
            return self.close(t);
        }
        link.wbuf.extend_from_slice(bytes);
        self.flush(t);
    }

    fn readable(&mut self, t: usize) {
        let mut closed = false;
        {
            let Some(link) = self.links.get_mut(&t) else { return };
            if !link.connected {
                return;
            }
            let mut chunk = vec![0u8; READ_CHUNK];
            for _ in 0..READS_PER_EVENT_MAX {
                match link.sock.read(&mut chunk) {
                    Ok(0) => {
                        closed = true;
                        break;
                    }
                    Ok(n) => link.rbuf.extend_from_slice(&chunk[..n]),
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(_) => {
                        closed = true;
                        break;
                    }
                }
                if link.rbuf.len() > msg::MESSAGE_MAX + READ_CHUNK {
                    break;
                }
            }
        }
        // Whole messages, one by one, bounded by what was read.
        loop {
            let Some(link) = self.links.get(&t) else { return };
            if link.rbuf.len() < 8 {
                break;
            }
            let len = match msg::frame_len(&link.rbuf[..8]) {
                Ok(len) => len,
                Err(e) => {
                    log::warn!("Cluster bus: {e}; closing the link from {}", link.peer_ip);
                    return self.close(t);
                }
            };
            if link.rbuf.len() < len {
                break;
            }
            let bytes: Vec<u8> = self.links.get_mut(&t).expect("link").rbuf.drain(..len).collect();
            match msg::decode(&bytes) {
                Ok(m) => self.process(t, &m),
                Err(msg::Refused::Version(_)) => {}
                Err(e) => {
                    let peer = self.links.get(&t).map(|l| l.peer_ip.clone()).unwrap_or_default();
                    log::warn!("Cluster bus: {e}; closing the link from {peer}");
                    return self.close(t);
                }
            }
        }
        if closed {
            self.close(t);
        }
    }

    fn process(&mut self, t: usize, m: &msg::Message) {
        let Some(link) = self.links.get(&t) else { return };
        let mut peer = Peer {
            node: link.node,
            inbound: link.inbound,
            peer_ip: link.peer_ip.clone(),
            local_ip: link.local_ip.clone(),
        };
        let now = now_ms();
        let offset = self.host.repl_offset();
        let mut fx = Vec::new();
        let c = Arc::clone(&self.c);
        let mut s = c.lock();
        let dirty = gossip::process(&c, &mut s, m, &mut peer, now, offset, &mut self.rng, &mut fx);
        let from = peer
            .inbound
            .then(|| s.nodes.get(&m.header.sender).filter(|n| !n.is(flags::HANDSHAKE | flags::MYSELF)).map(|n| n.name))
            .flatten();
        for name in &dirty.failed {
            let f = gossip::fail(&c, &mut s, *name, offset);
            fx.push(Effect::Broadcast(f));
        }
        if dirty.durable {
            c.commit_durable(&mut s);
        } else if dirty.save {
            c.commit(&mut s);
        } else if dirty.state {
            c.changed(&mut s);
        }
        drop(s);
        if let Some(link) = self.links.get_mut(&t) {
            link.node = peer.node;
            if from.is_some() && link.from != from {
                link.from = from;
                self.links_changed = true;
            }
        }
        self.apply(t, fx);
    }

    fn apply(&mut self, t: usize, fx: Vec<Effect>) {
        for e in fx {
            match e {
                Effect::Reply(b) => self.send(t, &b),
                Effect::Close => self.close(t),
                Effect::Reconnect(n) => {
                    if let Some(&lt) = self.outgoing.get(&n) {
                        self.close(lt);
                    }
                }
                Effect::Broadcast(b) => {
                    // Every node but those still in handshake
                    // (`clusterBroadcastMessage`).
                    let targets: Vec<usize> = {
                        let s = self.c.lock();
                        self.outgoing
                            .iter()
                            .filter(|(n, _)| s.nodes.get(*n).is_some_and(|n| !n.is(flags::HANDSHAKE)))
                            .map(|(_, t)| *t)
                            .collect()
                    };
                    for lt in targets {
                        self.send(lt, &b);
                    }
                }
                Effect::SendTo(n, b) => {
                    if let Some(&lt) = self.outgoing.get(&n) {
                        self.send(lt, &b);
                    }
                }
                Effect::Renamed(old, new) => {
                    if let Some(lt) = self.outgoing.remove(&old) {
                        self.outgoing.insert(new, lt);
                        if let Some(l) = self.links.get_mut(&lt) {
                            l.node = Some(new);
                        }
                    }
                }
                Effect::Publish(ch, m) => self.host.publish(&ch, &m),
                Effect::PublishShard(ch, m) => self.host.publish_shard(&ch, &m),
                Effect::Follow(p) => self.host.follow(p),
                Effect::HoldWrites(on) => self.host.hold_writes(on),
                Effect::DropSlotKeys(slots) => self.host.drop_slot_keys(&slots),
            }
        }
    }

    /// Opens the outgoing link to `name` and queues its first PING (or
    /// MEET).
    fn connect(&mut self, name: Name, now: u64) {
        let (addr, meet) = {
            let s = self.c.lock();
            let Some(n) = s.nodes.get(&name) else { return };
            let Ok(ip) = n.ip.parse::<std::net::IpAddr>() else { return };
            (std::net::SocketAddr::new(ip, n.cport), n.is(flags::MEET))
        };
        let sock = match TcpStream::connect(addr) {
            Ok(s) => s,
            Err(e) => {
                log::debug!("Cluster bus: connect to {addr}: {e}");
                return;
            }
        };
        let _ = sock.set_nodelay(true);
        let link = Link {
            sock,
            node: Some(name),
            from: None,
            inbound: false,
            created: now,
            connected: false,
            rbuf: Vec::new(),
            wbuf: Vec::new(),
            peer_ip: addr.ip().to_string(),
            local_ip: String::new(),
        };
        let Some(t) = self.register(link) else { return };
        self.outgoing.insert(name, t);
        let offset = self.host.repl_offset();
        let c = Arc::clone(&self.c);
        let bytes = {
            let mut s = c.lock();
            let old_ping = s.nodes.get(&name).map_or(0, |n| n.ping_sent);
            let ty = if meet { Type::Meet } else { Type::Ping };
            let b = gossip::ping(&c, &mut s, ty, Some(name), now, offset, &mut self.rng);
            if let Some(n) = s.nodes.get_mut(&name) {
                if old_ping != 0 {
                    n.ping_sent = old_ping;
                }
                n.flags &= !flags::MEET;
            }
            b
        };
        self.send(t, &bytes);
    }

    fn ping(&mut self, name: Name, now: u64) {
        let Some(&t) = self.outgoing.get(&name) else { return };
        let offset = self.host.repl_offset();
        let c = Arc::clone(&self.c);
        let b = gossip::ping(&c, &mut c.lock(), Type::Ping, Some(name), now, offset, &mut self.rng);
        self.send(t, &b);
    }

    /// Gives the cluster the list of links CLUSTER LINKS shows
    /// (`links.rs`): those bound to a node still in the table. Bounded
    /// by [`LINKS_MAX`].
    fn list_links(&mut self) {
        self.links_changed = false;
        let list: Vec<LinkInfo> = {
            let s = self.c.lock();
            self.links
                .values()
                .filter_map(|l| {
                    let node = if l.inbound { l.from } else { l.node }?;
                    s.nodes.contains_key(&node).then(|| LinkInfo {
                        node,
                        outgoing: !l.inbound,
                        created_ms: l.created,
                        readable: l.connected,
                        writable: !l.connected || !l.wbuf.is_empty(),
                        send_allocated: l.wbuf.capacity(),
                        send_used: l.wbuf.len(),
                    })
                })
                .collect()
        };
        self.c.set_links(list);
    }

    /// `clusterCron`.
    fn cron(&mut self, now: u64) {
        self.iteration += 1;
        let timeout = self.c.config().node_timeout_ms;
        let handshake_timeout = timeout.max(HANDSHAKE_TIMEOUT_MIN_MS);
        // Links to nodes no longer in the table (FORGET, RESET) go.
        let gone: Vec<usize> = {
            let s = self.c.lock();
            self.outgoing.iter().filter(|(n, _)| !s.nodes.contains_key(*n)).map(|(_, t)| *t).collect()
        };
        for t in gone {
            self.close(t);
        }
        // Stale connects and idle incoming links without a node.
        let stale: Vec<usize> = self
            .links
            .iter()
            .filter(|(_, l)| !l.connected && now.saturating_sub(l.created) > timeout)
            .map(|(t, _)| *t)
            .collect();
        for t in stale {
            self.close(t);
        }
        let mut to_connect = Vec::new();
        let mut dirty = false;
        {
            let mut s = self.c.lock();
            let expired: Vec<Name> = s
                .nodes
                .values()
                .filter(|n| n.is(flags::HANDSHAKE) && now.saturating_sub(n.created) > handshake_timeout)
                .map(|n| n.name)
                .collect();
            for name in expired {
                log::info!("Cluster bus: handshake with {} timed out", node::text(&name));
                gossip::delete(&mut s, name);
                dirty = true;
            }
            for n in s.nodes.values() {
                if !n.is(flags::MYSELF | flags::NOADDR) && !self.outgoing.contains_key(&n.name) {
                    to_connect.push(n.name);
                }
            }
        }
        for name in to_connect {
            self.connect(name, now);
        }
        // Once a second, ping the least recently heard of five random nodes.
        if self.iteration % 10 == 0 {
            let pick = {
                let s = self.c.lock();
                let names: Vec<&crate::node::Node> = s.nodes.values().collect();
                let mut best: Option<(u64, Name)> = None;
                for _ in 0..PING_SAMPLES.min(names.len()) {
                    let n = names[self.rng.below(names.len())];
                    if !n.linked || n.ping_sent != 0 || n.is(flags::MYSELF | flags::HANDSHAKE) {
                        continue;
                    }
                    if best.is_none_or(|(p, _)| n.pong_received < p) {
                        best = Some((n.pong_received, n.name));
                    }
                }
                best
            };
            if let Some((_, name)) = pick {
                self.ping(name, now);
            }
        }
        let mut reconnect = Vec::new();
        let mut pings = Vec::new();
        let mut state = false;
        {
            let mut s = self.c.lock();
            for n in s.nodes.values_mut() {
                if n.is(flags::MYSELF | flags::NOADDR | flags::HANDSHAKE) {
                    continue;
                }
                let link_age =
                    self.outgoing.get(&n.name).and_then(|t| self.links.get(t)).map(|l| now - l.created.min(now));
                let ping_delay = now.saturating_sub(n.ping_sent);
                let data_delay = now.saturating_sub(n.data_received);
                if let Some(age) = link_age {
                    if age > timeout && n.ping_sent != 0 && ping_delay > timeout / 2 && data_delay > timeout / 2 {
                        reconnect.push(n.name);
                    } else if n.linked && n.ping_sent == 0 && now.saturating_sub(n.pong_received) > timeout / 2 {
                        pings.push(n.name);
                        continue;
                    }
                }
                if n.ping_sent == 0 {
                    continue;
                }
                if ping_delay.min(data_delay) > timeout && !n.is(flags::PFAIL | flags::FAIL) {
                    log::debug!("*** NODE {} possibly failing", node::text(&n.name));
                    n.flags |= flags::PFAIL;
                    state = true;
                }
            }
            if dirty {
                self.c.commit(&mut s);
            } else if state || !s.ok {
                self.c.changed(&mut s);
            }
        }
        for name in reconnect {
            if let Some(&t) = self.outgoing.get(&name) {
                self.close(t);
            }
        }
        for name in pings {
            self.ping(name, now);
        }
        // Failover: a replica's election, a manual failover's steps.
        let offset = self.host.repl_offset();
        let age = self.host.data_age_ms();
        let c = Arc::clone(&self.c);
        let mut fx = Vec::new();
        let follow = {
            let mut s = c.lock();
            let d = crate::failover::cron(&c, &mut s, now, offset, age, &mut self.rng, &mut fx);
            if d.durable {
                c.commit_durable(&mut s);
            } else if d.save {
                c.commit(&mut s);
            }
            // Replica migration to an orphaned primary (`migration.rs`).
            if s.me().is(flags::SLAVE) {
                let (barrier, allow) = (c.migration_barrier(), c.allow_replica_migration());
                if let Some(target) = crate::migration::decide(&mut s, now, barrier, allow) {
                    crate::migration::migrate(&mut s, target, &mut fx);
                    c.commit(&mut s);
                }
            }
            // A replica whose replication is off (a restart from
            // nodes.conf, a primary that moved) follows its primary once
            // its address is known (Redis's cron does the same).
            let me = s.me();
            me.primary
                .filter(|_| me.is(flags::SLAVE))
                .and_then(|p| s.nodes.get(&p))
                .filter(|p| !p.ip.is_empty() && !p.is(flags::NOADDR))
                .map(|p| (p.ip.clone(), p.port))
        };
        self.apply(usize::MAX, fx);
        if let Some(p) = follow {
            if self.host.following().as_ref() != Some(&p) {
                self.host.follow(Some(p));
            }
        }
    }
}
