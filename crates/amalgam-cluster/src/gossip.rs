//! What a node says on the bus and what it makes of what it hears
//! (Redis 7.0's `clusterSendPing`, `clusterBuildMessageHdr`,
//! `clusterProcessPacket`, `clusterProcessGossipSection`,
//! `clusterUpdateSlotsConfigWith`, `markNodeAsFailingIfNeeded`,
//! `clusterHandleConfigEpochCollision`). Pure functions of the state and
//! a message: the bus thread (`bus.rs`) does the I/O and carries out the
//! [`Effect`]s, so every rule here is unit-tested without sockets.
//!
//! The rules, in brief (the cluster specification's):
//! * **Handshake.** CLUSTER MEET adds a node under a random name, flagged
//!   HANDSHAKE and MEET; the bus connects and sends MEET; the PONG that
//!   answers carries the node's real name, which replaces the random one.
//!   A node receiving MEET from an unknown sender adds it the same way
//!   (and learns its own IP from the socket, unless one is announced).
//! * **Gossip.** Every PING/PONG/MEET names a few other nodes (a tenth of
//!   the table, at least 3). An unknown node in a known sender's gossip
//!   is added under its real name, and the cron connects to it: that is
//!   how MEET with one node joins a whole cluster.
//! * **Slots and epochs.** A header carries the slots its sender (or its
//!   primary) serves and that node's config epoch. A slot goes to the
//!   claimant when it is unassigned or the claimant's config epoch is
//!   greater than its owner's (slots being imported are left alone); a
//!   sender claiming a slot whose owner has a greater epoch gets an
//!   UPDATE. Two primaries with the same config epoch: the one with the
//!   greater name takes a new epoch. The greatest current epoch seen is
//!   adopted.
//! * **Failure detection.** A node that does not answer a PING within
//!   the node timeout is PFAIL here; a PFAIL or FAIL in a primary's
//!   gossip is a failure report (valid for twice the node timeout); a
//!   majority of primaries (this one counted if primary) turns PFAIL into
//!   FAIL, broadcast as a FAIL message, which every node applies. A FAIL
//!   replica or slotless primary is cleared once reachable; a primary
//!   with slots after twice the node timeout if no one failed it over.

use crate::msg::{self, Body, Gossip, Header, Message, Type};
use crate::node::{self, flags, Name, Node};
use crate::{now_ms, Cluster, State};

/// How long a failure report counts, in node timeouts
/// (`CLUSTER_FAIL_REPORT_VALIDITY_MULT`).
pub const FAIL_REPORT_VALIDITY_MULT: u64 = 2;
/// How long a primary with slots stays FAIL before it is cleared when it
/// answers again, in node timeouts (`CLUSTER_FAIL_UNDO_TIME_MULT`).
pub const FAIL_UNDO_TIME_MULT: u64 = 2;
/// The fewest gossip entries a PING carries (when the table has them).
pub const GOSSIP_WANTED_MIN: usize = 3;

/// What the bus must do after a message or a cron step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Send on the link the message came in on.
    Reply(Vec<u8>),
    /// Close the link the message came in on.
    Close,
    /// Close the outgoing link to this node (it reconnects).
    Reconnect(Name),
    /// Send to every node with a link (Redis's `clusterBroadcastMessage`).
    Broadcast(Vec<u8>),
    /// Send to one node, if linked.
    SendTo(Name, Vec<u8>),
    /// A node was renamed (handshake done): its link follows.
    Renamed(Name, Name),
    /// A PUBLISH to deliver to this node's subscribers.
    Publish(Vec<u8>, Vec<u8>),
    /// A PUBLISHSHARD (an SPUBLISH on another node of this shard) to
    /// deliver to this node's shard channel subscribers.
    PublishShard(Vec<u8>, Vec<u8>),
    /// Replicate the primary at (ip, client port), or stop replicating.
    Follow(Option<(String, u16)>),
    /// Hold writes (a manual failover of this primary) or let them go.
    HoldWrites(bool),
    /// Delete the keys of these slots, which this primary lost to a newer
    /// claim (Redis's `delKeysInSlot`).
    DropSlotKeys(Vec<u16>),
}

/// What the link a message came in on knows.
#[derive(Debug, Clone, Default)]
pub struct Peer {
    /// The node of an outgoing link (None on an incoming one).
    pub node: Option<Name>,
    pub inbound: bool,
    /// The remote and local addresses of the socket.
    pub peer_ip: String,
    pub local_ip: String,
}

/// A small random-number generator for the gossip's choices (xorshift;
/// no cryptography is wanted).
#[derive(Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new() -> Rng {
        let seed = now_ms() ^ (u64::from(std::process::id()) << 32) ^ 0x9e37_79b9_7f4a_7c15;
        Rng(seed | 1)
    }
    pub fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }
}

impl Default for Rng {
    fn default() -> Self {
        Rng::new()
    }
}

/// The header this node sends (`clusterBuildMessageHdr`).
pub fn header(c: &Cluster, s: &State, ty: Type, offset: u64) -> Header {
    let me = s.me();
    let primary = me.primary.and_then(|p| s.nodes.get(&p)).filter(|_| me.is(flags::SLAVE));
    let owner = primary.unwrap_or(me);
    let cfg = c.config();
    Header {
        ty: ty as u16,
        port: cfg.announce_port_or_port(),
        pport: 0,
        cport: cfg.bus_port(),
        current_epoch: s.current_epoch,
        config_epoch: owner.config_epoch,
        offset,
        sender: s.myself,
        slots: owner.slots.clone(),
        primary: me.primary,
        ip: cfg.announce_ip.clone(),
        flags: me.flags,
        state: u8::from(!s.ok),
        mflags: [0; 3],
    }
}

/// A PING, PONG or MEET with gossip about a few other nodes
/// (`clusterSendPing`); a PING marks `to`'s ping as sent.
pub fn ping(c: &Cluster, s: &mut State, ty: Type, to: Option<Name>, now: u64, offset: u64, rng: &mut Rng) -> Vec<u8> {
    let names: Vec<Name> = s.nodes.keys().copied().collect();
    let fresh = names.len().saturating_sub(2);
    let wanted = (names.len() / 10).max(GOSSIP_WANTED_MIN).min(fresh);
    let mut chosen: Vec<Name> = Vec::new();
    // Bounded as Redis bounds it: three times the wanted entries.
    for _ in 0..wanted * 3 {
        if chosen.len() >= wanted {
            break;
        }
        let n = &s.nodes[&names[rng.below(names.len())]];
        if n.is(flags::MYSELF | flags::PFAIL | flags::HANDSHAKE | flags::NOADDR)
            || (!n.linked && n.slots.is_empty())
            || chosen.contains(&n.name)
        {
            continue;
        }
        chosen.push(n.name);
    }
    // PFAIL nodes go at the end, all of them (so failure reports spread).
    chosen.extend(
        s.nodes.values().filter(|n| n.is(flags::PFAIL) && !n.is(flags::HANDSHAKE | flags::NOADDR)).map(|n| n.name),
    );
    let mut h = header(c, s, ty, offset);
    let hostname = &c.config().announce_hostname;
    let ext = u16::from(!hostname.is_empty());
    if ext > 0 {
        // Redis 7.0 flags extension data only when it sends some.
        h.mflags[0] |= msg::FLAG0_EXT_DATA;
    }
    let mut out = Vec::with_capacity(msg::HEADER_LEN + chosen.len() * msg::GOSSIP_LEN + 64);
    msg::encode_header(&h, chosen.len() as u16, ext, &mut out);
    for name in &chosen {
        let n = &s.nodes[name];
        msg::encode_gossip(
            &Gossip {
                name: n.name,
                ping_sent: (n.ping_sent / 1000) as u32,
                pong_received: (n.pong_received / 1000) as u32,
                ip: n.ip.clone(),
                port: n.port,
                cport: n.cport,
                flags: n.flags,
                pport: n.pport,
            },
            &mut out,
        );
    }
    if ext == 1 {
        msg::encode_hostname(hostname, &mut out);
    }
    msg::finish(&mut out, 0);
    if ty == Type::Ping {
        if let Some(n) = to.and_then(|t| s.nodes.get_mut(&t)) {
            n.ping_sent = now;
        }
    }
    s.sent[ty as usize] += 1;
    out
}

/// A FAIL about `about`.
pub fn fail(c: &Cluster, s: &mut State, about: Name, offset: u64) -> Vec<u8> {
    let h = header(c, s, Type::Fail, offset);
    let mut out = Vec::with_capacity(msg::HEADER_LEN + node::NAME_LEN);
    msg::encode_header(&h, 0, 0, &mut out);
    out.extend_from_slice(&about);
    msg::finish(&mut out, 0);
    s.sent[Type::Fail as usize] += 1;
    out
}

/// An UPDATE telling of `about`'s slots and config epoch.
pub fn update(c: &Cluster, s: &mut State, about: Name, offset: u64) -> Vec<u8> {
    let h = header(c, s, Type::Update, offset);
    let n = &s.nodes[&about];
    let mut out = Vec::with_capacity(msg::HEADER_LEN + 8 + node::NAME_LEN + 2048);
    msg::encode_header(&h, 0, 0, &mut out);
    out.extend_from_slice(&n.config_epoch.to_be_bytes());
    out.extend_from_slice(&n.name);
    out.extend_from_slice(&n.slots.0[..]);
    msg::finish(&mut out, 0);
    s.sent[Type::Update as usize] += 1;
    out
}

/// A PUBLISH (or, `ty` PublishShard, a PUBLISHSHARD: the same body) of
/// `message` on `channel` (`clusterSendPublish`).
pub fn publish(c: &Cluster, s: &mut State, ty: Type, channel: &[u8], message: &[u8], offset: u64) -> Vec<u8> {
    debug_assert!(matches!(ty, Type::Publish | Type::PublishShard));
    let h = header(c, s, ty, offset);
    let mut out = Vec::with_capacity(msg::HEADER_LEN + 8 + channel.len() + message.len());
    msg::encode_header(&h, 0, 0, &mut out);
    out.extend_from_slice(&(channel.len() as u32).to_be_bytes());
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(channel);
    out.extend_from_slice(message);
    msg::finish(&mut out, 0);
    s.sent[ty as usize] += 1;
    out
}

/// Gives `node` a new name (the handshake's end): the table, the slots,
/// the open slots and the replicas' primary follow.
fn rename(s: &mut State, old: Name, new: Name) {
    let Some(mut n) = s.nodes.remove(&old) else { return };
    n.name = new;
    s.nodes.insert(new, n);
    for o in s.owner.iter_mut().filter(|o| **o == Some(old)) {
        *o = Some(new);
    }
    for v in s.migrating.values_mut().chain(s.importing.values_mut()) {
        if *v == old {
            *v = new;
        }
    }
    for n in s.nodes.values_mut() {
        if n.primary == Some(old) {
            n.primary = Some(new);
        }
    }
}

/// Removes `name` from the table, its slots unassigned and the failure
/// reports it made dropped (`clusterDelNode`).
pub fn delete(s: &mut State, name: Name) {
    for slot in 0..s.owner.len() {
        if s.owner[slot] == Some(name) {
            s.owner[slot] = None;
        }
    }
    s.migrating.retain(|_, v| *v != name);
    s.importing.retain(|_, v| *v != name);
    for n in s.nodes.values_mut() {
        n.fail_reports.retain(|(r, _)| *r != name);
        if n.primary == Some(name) {
            n.primary = None;
        }
    }
    s.nodes.remove(&name);
}

/// Makes `name` a primary (`clusterSetNodeAsMaster`).
fn set_primary(s: &mut State, name: Name) {
    if let Some(n) = s.nodes.get_mut(&name) {
        if n.is(flags::MASTER) {
            return;
        }
        // A replica promoted took over a primary that had replicas: one
        // a replica may migrate to once orphaned.
        if n.primary.is_some() && !n.is(flags::MYSELF) {
            n.flags |= flags::MIGRATE_TO;
        }
        n.flags = (n.flags & !flags::SLAVE) | flags::MASTER;
        n.primary = None;
    }
}

/// `clusterUpdateSlotsConfigWith`: `sender` (a primary) claims `slots`
/// with `epoch`. If that leaves this node's primary (or this node, if a
/// primary) without slots, this node follows the sender: a failed-over
/// primary that returns, and its other replicas, replicate the new one.
/// With `allow_migration` off (`cluster-allow-replica-migration no`) it
/// follows only if every slot the sender claims was taken from its
/// primary (a failover, not a resharding that emptied it).
fn claim_slots(
    s: &mut State,
    sender: Name,
    epoch: u64,
    slots: &crate::slot::SlotSet,
    allow_migration: bool,
    fx: &mut Vec<Effect>,
) {
    if sender == s.myself {
        log::info!("Discarding UPDATE message about myself.");
        return;
    }
    let me = s.myself;
    let cur = if s.me().is_primary() { Some(me) } else { s.me().primary };
    let mut took_ours = 0usize;
    let mut claimed = 0usize;
    let mut dirty_slots = Vec::new();
    for slot in 0..crate::slot::SLOTS {
        if !slots.has(slot) {
            continue;
        }
        claimed += 1;
        if s.owner[slot] == Some(sender) || s.importing.contains_key(&(slot as u16)) {
            continue;
        }
        let newer = match s.owner[slot] {
            None => true,
            Some(o) => s.nodes.get(&o).is_none_or(|o| o.config_epoch < epoch),
        };
        if newer {
            if s.owner[slot] == Some(me) {
                dirty_slots.push(slot);
            }
            took_ours += usize::from(cur.is_some() && s.owner[slot] == cur);
            s.assign(slot, Some(sender));
        }
    }
    let cur_empty = cur.and_then(|c| s.nodes.get(&c)).is_some_and(|c| c.slots.is_empty());
    if took_ours > 0 && cur_empty && (allow_migration || claimed == took_ours) {
        log::warn!("Configuration change detected. Reconfiguring myself as a replica of {}", node::text(&sender));
        if s.me().is_primary() && s.manual.replica.is_some() {
            fx.push(Effect::HoldWrites(false));
        }
        s.manual = crate::failover::Manual::default();
        crate::command::set_my_primary(s, sender);
        let n = &s.nodes[&sender];
        fx.push(Effect::Follow(Some((n.ip.clone(), n.port))));
    } else if !dirty_slots.is_empty() {
        // Slots this primary lost while it still serves others: their
        // keys are stale, and go (Redis's delKeysInSlot; the host skips a
        // slot with no keys from its count, as Redis's countKeysInSlot).
        log::warn!("Lost {} slots to {}: deleting their keys", dirty_slots.len(), node::text(&sender));
        fx.push(Effect::DropSlotKeys(dirty_slots.iter().map(|&s| s as u16).collect()));
    }
}

/// Applies one message from the bus (`clusterProcessPacket`). The bus
/// calls [`Cluster::changed`]/[`Cluster::commit`] after, as `dirty` says.
#[allow(clippy::too_many_arguments)]
pub fn process(
    c: &Cluster,
    s: &mut State,
    m: &Message,
    peer: &mut Peer,
    now: u64,
    offset: u64,
    rng: &mut Rng,
    fx: &mut Vec<Effect>,
) -> Dirty {
    let mut dirty = Dirty::default();
    let h = &m.header;
    let Some(ty) = Type::from_u16(h.ty) else { return dirty };
    s.received[ty as usize] += 1;
    let sender_name = h.sender;
    let known = s.nodes.get(&sender_name).filter(|n| !n.is(flags::HANDSHAKE)).map(|n| n.name);
    if let Some(name) = known {
        let n = s.nodes.get_mut(&name).expect("known");
        n.data_received = now;
        if h.current_epoch > s.current_epoch {
            s.current_epoch = h.current_epoch;
            dirty.save = true;
        }
        let n = s.nodes.get_mut(&name).expect("known");
        if h.config_epoch > n.config_epoch && h.primary.is_none() {
            n.config_epoch = h.config_epoch;
            dirty.save = true;
        }
        n.repl_offset = h.offset;
    }
    if matches!(ty, Type::Ping | Type::Meet) {
        // This node's own address, learned from the socket the MEET
        // came in on, unless announced.
        if (ty == Type::Meet || s.me().ip.is_empty())
            && c.config().announce_ip.is_empty()
            && !peer.local_ip.is_empty()
            && s.me().ip != peer.local_ip
        {
            s.me_mut().ip = peer.local_ip.clone();
            log::info!("IP address for this node updated to {}", peer.local_ip);
            dirty.save = true;
        }
        if known.is_none() && ty == Type::Meet && !s.nodes.contains_key(&sender_name) {
            let mut n = Node::new(node::random_name(), flags::HANDSHAKE, now);
            n.ip = if h.ip.is_empty() { peer.peer_ip.clone() } else { h.ip.clone() };
            n.port = h.port;
            n.pport = h.pport;
            n.cport = h.cport;
            s.nodes.insert(n.name, n);
            dirty.save = true;
            if let Body::Ping { gossip, .. } = &m.body {
                gossip_section(c, s, None, gossip, now, &mut dirty);
            }
        }
        let pong = ping(c, s, Type::Pong, None, now, offset, rng);
        fx.push(Effect::Reply(pong));
    }
    if matches!(ty, Type::Ping | Type::Pong | Type::Meet) {
        if let Some(linked) = peer.node.filter(|_| !peer.inbound) {
            let in_handshake = s.nodes.get(&linked).is_some_and(|n| n.is(flags::HANDSHAKE));
            if in_handshake {
                if known.is_some() {
                    // A node we know under its real name, met again at a
                    // new address: drop the handshake node.
                    delete(s, linked);
                    fx.push(Effect::Close);
                    dirty.save = true;
                    return dirty;
                }
                log::info!("Handshake with node {} completed.", node::text(&sender_name));
                rename(s, linked, sender_name);
                fx.push(Effect::Renamed(linked, sender_name));
                peer.node = Some(sender_name);
                let n = s.nodes.get_mut(&sender_name).expect("renamed");
                n.flags &= !flags::HANDSHAKE;
                n.flags |= h.flags & (flags::MASTER | flags::SLAVE);
                dirty.save = true;
            } else if linked != sender_name {
                // Another node answers at this address now.
                if let Some(n) = s.nodes.get_mut(&linked) {
                    n.flags |= flags::NOADDR;
                    n.ip.clear();
                    n.port = 0;
                    n.cport = 0;
                }
                fx.push(Effect::Close);
                dirty.save = true;
                return dirty;
            }
        }
        let sender = s.nodes.get(&sender_name).filter(|n| !n.is(flags::HANDSHAKE)).map(|n| n.name);
        if ty == Type::Pong && !peer.inbound {
            if let Some(n) = peer.node.and_then(|l| s.nodes.get_mut(&l)) {
                n.pong_received = now;
                n.ping_sent = 0;
                if n.is(flags::PFAIL) {
                    n.flags &= !flags::PFAIL;
                    dirty.state = true;
                } else if n.is(flags::FAIL) {
                    let undo = c.config().node_timeout_ms * FAIL_UNDO_TIME_MULT;
                    if !n.is_primary() || n.slots.is_empty() || now.saturating_sub(n.fail_time) > undo {
                        log::info!("Clear FAIL state for node {}: is reachable again.", node::text(&n.name));
                        n.flags &= !flags::FAIL;
                        dirty.state = true;
                        dirty.save = true;
                    }
                }
            }
        }
        let Some(sender) = sender else { return dirty };
        // NOFAILOVER is the sender's to say: the latest header is trusted
        // (the election's rank counts only replicas that compete).
        {
            let n = s.nodes.get_mut(&sender).expect("sender");
            let nofailover = h.flags & flags::NOFAILOVER;
            if n.flags & flags::NOFAILOVER != nofailover && !n.is(flags::MYSELF) {
                n.flags = (n.flags & !flags::NOFAILOVER) | nofailover;
                dirty.save = true;
            }
        }
        // A manual failover: the primary paused and says its offset.
        if s.me().primary == Some(sender)
            && s.me().is(flags::SLAVE)
            && h.mflags[0] & msg::FLAG0_PAUSED != 0
            && s.manual.end != 0
            && s.manual.primary_offset.is_none()
        {
            s.manual.primary_offset = Some(h.offset);
        }
        // The sender's address, if a PING says it moved.
        if ty == Type::Ping {
            let ip = if h.ip.is_empty() { peer.peer_ip.clone() } else { h.ip.clone() };
            let n = s.nodes.get_mut(&sender).expect("sender");
            if !ip.is_empty() && (n.ip != ip || n.port != h.port || n.cport != h.cport) && !n.is(flags::MYSELF) {
                log::info!("Address updated for node {}, now {ip}:{}", node::text(&sender), h.port);
                n.ip = ip;
                n.port = h.port;
                n.cport = h.cport;
                n.flags &= !flags::NOADDR;
                fx.push(Effect::Reconnect(sender));
                dirty.save = true;
            }
        }
        // Role: a primary, or a replica of the primary named.
        match h.primary {
            None => {
                if !s.nodes[&sender].is(flags::MASTER) {
                    set_primary(s, sender);
                    dirty.save = true;
                }
            }
            Some(p) => {
                let n = s.nodes.get_mut(&sender).expect("sender");
                if n.is(flags::MASTER) {
                    n.flags = (n.flags & !(flags::MASTER | flags::MIGRATE_TO)) | flags::SLAVE;
                    for slot in 0..crate::slot::SLOTS {
                        if s.owner[slot] == Some(sender) {
                            s.assign(slot, None);
                        }
                    }
                    dirty.save = true;
                    dirty.state = true;
                }
                let n = s.nodes.get_mut(&sender).expect("sender");
                if n.primary != Some(p) && s.nodes.contains_key(&p) {
                    let n = s.nodes.get_mut(&sender).expect("sender");
                    n.primary = Some(p);
                    // Redis's `clusterNodeAddSlave`.
                    s.nodes.get_mut(&p).expect("known").flags |= flags::MIGRATE_TO;
                    dirty.save = true;
                }
            }
        }
        // Slots: the sender's (or its primary's) claim against this view.
        let sender_primary = if s.nodes[&sender].is_primary() { Some(sender) } else { s.nodes[&sender].primary };
        let differs = sender_primary.and_then(|p| s.nodes.get(&p)).is_some_and(|p| p.slots != h.slots);
        if differs && s.nodes[&sender].is_primary() {
            claim_slots(s, sender, h.config_epoch, &h.slots, c.allow_replica_migration(), fx);
            dirty.save = true;
            dirty.state = true;
        }
        if differs {
            // The sender claims a slot whose owner has a greater epoch:
            // tell it (once per message, as Redis).
            for slot in 0..crate::slot::SLOTS {
                if !h.slots.has(slot) {
                    continue;
                }
                let Some(o) = s.owner[slot] else { continue };
                if o != sender && s.nodes.get(&o).is_some_and(|o| o.config_epoch > h.config_epoch) {
                    let up = update(c, s, o, offset);
                    fx.push(Effect::SendTo(sender, up));
                    break;
                }
            }
        }
        // Config epoch collision between two primaries.
        let me = s.me();
        if me.is_primary() && s.nodes[&sender].is_primary() && h.config_epoch == me.config_epoch && sender > s.myself {
            s.current_epoch += 1;
            let e = s.current_epoch;
            s.me_mut().config_epoch = e;
            log::warn!("WARNING: configEpoch collision with node {}. configEpoch set to {e}", node::text(&sender));
            dirty.save = true;
            dirty.durable = true;
        }
        if let Body::Ping { gossip, hostname } = &m.body {
            gossip_section(c, s, Some(sender), gossip, now, &mut dirty);
            if let Some(hn) = hostname {
                let n = s.nodes.get_mut(&sender).expect("sender");
                if n.hostname != *hn {
                    n.hostname = hn.clone();
                    dirty.save = true;
                }
            }
        }
        return dirty;
    }
    let Some(sender) = known else { return dirty };
    match &m.body {
        Body::Fail { about } => {
            if let Some(n) = s.nodes.get_mut(about) {
                if !n.is(flags::FAIL | flags::MYSELF) {
                    log::info!("FAIL message received from {} about {}", node::text(&sender), node::text(about));
                    n.flags = (n.flags | flags::FAIL) & !flags::PFAIL;
                    n.fail_time = now;
                    dirty.state = true;
                    dirty.save = true;
                }
            }
        }
        Body::Update { config_epoch, name, slots } => {
            let Some(n) = s.nodes.get(name) else { return dirty };
            if n.config_epoch >= *config_epoch {
                return dirty;
            }
            set_primary(s, *name);
            s.nodes.get_mut(name).expect("known").config_epoch = *config_epoch;
            claim_slots(s, *name, *config_epoch, slots, c.allow_replica_migration(), fx);
            dirty.save = true;
            dirty.state = true;
        }
        Body::Publish { channel, message } if ty == Type::PublishShard => {
            fx.push(Effect::PublishShard(channel.clone(), message.clone()))
        }
        Body::Publish { channel, message } => fx.push(Effect::Publish(channel.clone(), message.clone())),
        Body::Empty => match ty {
            Type::AuthRequest => {
                let (d, more) = crate::failover::on_auth_request(c, s, sender, h, now, offset);
                fx.extend(more);
                dirty.save |= d.save;
                dirty.durable |= d.durable;
            }
            Type::AuthAck => crate::failover::on_auth_ack(s, sender, h),
            Type::MfStart => fx.extend(crate::failover::on_mfstart(c, s, sender, now, offset, rng)),
            _ => {}
        },
        _ => {}
    }
    dirty
}

/// What a message changed: the state to recompute, the file to save,
/// the nodes this node just marked FAIL (the bus broadcasts a FAIL for
/// each).
#[derive(Debug, Default, Clone)]
pub struct Dirty {
    pub state: bool,
    pub save: bool,
    /// The save must be synced (an epoch changed or a vote was cast).
    pub durable: bool,
    pub failed: Vec<Name>,
}

/// `clusterProcessGossipSection`.
fn gossip_section(c: &Cluster, s: &mut State, sender: Option<Name>, gossip: &[Gossip], now: u64, dirty: &mut Dirty) {
    let sender_is_primary = sender.and_then(|n| s.nodes.get(&n)).is_some_and(|n| n.is_primary());
    let validity = c.config().node_timeout_ms * FAIL_REPORT_VALIDITY_MULT;
    for g in gossip {
        if !node::is_name(&g.name) {
            continue;
        }
        if s.nodes.contains_key(&g.name) {
            let name = g.name;
            if let Some(reporter) = sender.filter(|_| sender_is_primary && name != s.myself) {
                let n = s.nodes.get_mut(&name).expect("known");
                if g.flags & (flags::FAIL | flags::PFAIL) != 0 {
                    match n.fail_reports.iter_mut().find(|(r, _)| *r == reporter) {
                        Some(r) => r.1 = now,
                        None => {
                            n.fail_reports.push((reporter, now));
                            log::info!(
                                "Node {} reported node {} as not reachable.",
                                node::text(&reporter),
                                node::text(&name)
                            );
                        }
                    }
                    mark_failing_if_needed(c, s, name, now, dirty);
                } else {
                    n.fail_reports.retain(|(r, _)| *r != reporter);
                }
            }
            let n = s.nodes.get_mut(&name).expect("known");
            n.fail_reports.retain(|(_, t)| now.saturating_sub(*t) <= validity);
            if g.flags & (flags::FAIL | flags::PFAIL) == 0 && n.ping_sent == 0 && n.fail_reports.is_empty() {
                let pong = u64::from(g.pong_received) * 1000;
                if pong <= now + 500 && pong > n.pong_received {
                    n.pong_received = pong;
                }
            }
        } else if sender.is_some() && g.flags & flags::NOADDR == 0 && g.name != s.myself {
            let mut n = Node::new(g.name, g.flags & !(flags::MYSELF | flags::PFAIL | flags::FAIL), now);
            n.ip = g.ip.clone();
            n.port = g.port;
            n.pport = g.pport;
            n.cport = g.cport;
            s.nodes.insert(n.name, n);
            dirty.save = true;
        }
    }
}

/// `markNodeAsFailingIfNeeded`: PFAIL becomes FAIL with a majority of
/// primaries' reports (this node counted if it is a primary).
fn mark_failing_if_needed(c: &Cluster, s: &mut State, name: Name, now: u64, dirty: &mut Dirty) {
    let quorum = s.size / 2 + 1;
    let me_primary = s.me().is_primary();
    let validity = c.config().node_timeout_ms * FAIL_REPORT_VALIDITY_MULT;
    let Some(n) = s.nodes.get_mut(&name) else { return };
    if !n.is(flags::PFAIL) || n.is(flags::FAIL) {
        return;
    }
    n.fail_reports.retain(|(_, t)| now.saturating_sub(*t) <= validity);
    let failures = n.fail_reports.len() + usize::from(me_primary);
    if failures < quorum {
        return;
    }
    log::info!("Marking node {} as failing (quorum reached).", node::text(&name));
    n.flags = (n.flags & !flags::PFAIL) | flags::FAIL;
    n.fail_time = now;
    dirty.state = true;
    dirty.save = true;
    dirty.failed.push(name);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::msg::decode;
    use crate::Config;

    fn cluster() -> Cluster {
        Cluster::in_memory(Config { enabled: true, node_timeout_ms: 1000, port: 7000, ..Config::default() })
    }

    fn step(c: &Cluster, bytes: &[u8], peer: &mut Peer, now: u64) -> (Vec<Effect>, Dirty) {
        let m = decode(bytes).expect("a valid message");
        let mut fx = Vec::new();
        let mut s = c.lock();
        let d = process(c, &mut s, &m, peer, now, 0, &mut Rng::new(), &mut fx);
        c.changed(&mut s);
        (fx, d)
    }

    #[test]
    fn a_meet_then_its_pong_complete_a_handshake() {
        let (a, b) = (cluster(), cluster());
        let (na, nb) = (a.lock().myself, b.lock().myself);
        // A met B: A's table holds B under a random name until B answers.
        let temp = {
            let mut s = a.lock();
            let mut n = Node::new(node::random_name(), flags::HANDSHAKE | flags::MEET, 0);
            n.ip = "127.0.0.2".into();
            n.cport = 17001;
            let t = n.name;
            s.nodes.insert(t, n);
            t
        };
        let meet = ping(&a, &mut a.lock(), Type::Meet, Some(temp), 1, 0, &mut Rng::new());
        let mut at_b =
            Peer { inbound: true, peer_ip: "127.0.0.1".into(), local_ip: "127.0.0.2".into(), ..Peer::default() };
        let (fx, _) = step(&b, &meet, &mut at_b, 1);
        // B learned its IP and added A (in handshake), and answers PONG.
        assert_eq!(b.lock().me().ip, "127.0.0.2");
        assert_eq!(b.lock().nodes.len(), 2);
        let Some(Effect::Reply(pong)) = fx.into_iter().find(|e| matches!(e, Effect::Reply(_))) else {
            panic!("no pong")
        };
        let mut at_a = Peer { node: Some(temp), peer_ip: "127.0.0.2".into(), ..Peer::default() };
        let (fx, _) = step(&a, &pong, &mut at_a, 2);
        assert!(fx.contains(&Effect::Renamed(temp, nb)));
        let s = a.lock();
        let n = &s.nodes[&nb];
        assert!(!n.is(flags::HANDSHAKE) && n.is(flags::MASTER), "{}", n.flags_text());
        assert_eq!(n.pong_received, 2);
        assert!(!s.nodes.contains_key(&temp));
        assert_ne!(na, nb);
    }

    #[test]
    fn slots_go_to_the_greater_config_epoch_and_a_stale_claim_gets_an_update() {
        let (a, b, x) = (cluster(), cluster(), cluster());
        let nb = b.lock().myself;
        let nx = x.lock().myself;
        // A knows B (epoch 1, slots 0-99) and X (epoch 5, slot 100).
        {
            let mut s = a.lock();
            for (name, epoch) in [(nb, 1), (nx, 5)] {
                let mut n = Node::new(name, flags::MASTER, 0);
                n.config_epoch = epoch;
                n.ip = "127.0.0.1".into();
                s.nodes.insert(name, n);
            }
            for slot in 0..100 {
                s.assign(slot, Some(nb));
            }
            s.assign(100, Some(nx));
        }
        // B claims 0-100 with epoch 1: 100 stays X's (epoch 5) and B is
        // told with an UPDATE about X.
        {
            let mut s = b.lock();
            s.me_mut().config_epoch = 1;
            for slot in 0..=100 {
                s.assign(slot, Some(nb));
            }
        }
        let p = ping(&b, &mut b.lock(), Type::Ping, None, 1, 0, &mut Rng::new());
        let mut peer = Peer { inbound: true, ..Peer::default() };
        let (fx, _) = step(&a, &p, &mut peer, 1);
        assert_eq!(a.lock().owner[100], Some(nx));
        let update = fx.iter().find_map(|e| match e {
            Effect::SendTo(to, bytes) if *to == nb => Some(decode(bytes).unwrap()),
            _ => None,
        });
        let Some(Message { body: Body::Update { name, config_epoch, .. }, .. }) = update else { panic!("no UPDATE") };
        assert_eq!((name, config_epoch), (nx, 5));
        // B again with epoch 6: now it wins slot 100.
        b.lock().me_mut().config_epoch = 6;
        let p = ping(&b, &mut b.lock(), Type::Ping, None, 2, 0, &mut Rng::new());
        step(&a, &p, &mut peer, 2);
        assert_eq!(a.lock().owner[100], Some(nb));
        assert_eq!(a.lock().nodes[&nb].config_epoch, 6);
    }

    /// A (a primary with slot 0, epoch 1) hears B claim `claims` with
    /// epoch 5: whether A is then a replica of B.
    fn follows_after_claim(allow: bool, claims: &[usize]) -> bool {
        let cfg = Config { enabled: true, port: 7000, allow_replica_migration: allow, ..Config::default() };
        let (a, b) = (Cluster::in_memory(cfg), cluster());
        let nb = b.lock().myself;
        {
            let mut s = a.lock();
            s.me_mut().config_epoch = 1;
            let me = s.myself;
            s.assign(0, Some(me));
            let mut n = Node::new(nb, flags::MASTER, 0);
            n.config_epoch = 1;
            n.ip = "127.0.0.1".into();
            s.nodes.insert(nb, n);
            s.assign(1, Some(nb));
        }
        {
            let mut s = b.lock();
            s.me_mut().config_epoch = 5;
            for &slot in claims {
                s.assign(slot, Some(nb));
            }
        }
        let p = ping(&b, &mut b.lock(), Type::Ping, None, 1, 0, &mut Rng::new());
        let (fx, _) = step(&a, &p, &mut Peer { inbound: true, ..Peer::default() }, 1);
        let s = a.lock();
        assert_eq!(s.owner[0], Some(nb));
        let follows = s.me().primary == Some(nb);
        assert_eq!(follows, fx.iter().any(|e| matches!(e, Effect::Follow(Some(_)))));
        follows
    }

    #[test]
    fn a_primary_emptied_by_a_claim_follows_the_claimant_unless_migration_is_off() {
        // B takes A's last slot along with its own: A follows B, unless
        // cluster-allow-replica-migration is no.
        assert!(follows_after_claim(true, &[0, 1]));
        assert!(!follows_after_claim(false, &[0, 1]));
        // B claims only what was A's (a failover of A): A follows anyway.
        assert!(follows_after_claim(false, &[0]));
    }

    #[test]
    fn the_nofailover_flag_is_the_sender_s_to_say() {
        let (a, b) = (cluster(), cluster());
        let nb = b.lock().myself;
        {
            let mut s = a.lock();
            let mut n = Node::new(nb, flags::MASTER, 0);
            n.ip = "127.0.0.1".into();
            s.nodes.insert(nb, n);
        }
        let mut peer = Peer { inbound: true, ..Peer::default() };
        for (on, now) in [(true, 1), (false, 2)] {
            b.set_replica_no_failover(on);
            let p = ping(&b, &mut b.lock(), Type::Ping, None, now, 0, &mut Rng::new());
            step(&a, &p, &mut peer, now);
            assert_eq!(a.lock().nodes[&nb].is(flags::NOFAILOVER), on);
            assert_eq!(a.lock().nodes[&nb].flags_text().contains("nofailover"), on);
        }
    }

    /// A primary that loses some of its slots to a newer claim deletes
    /// their keys (Redis's delKeysInSlot); one that loses all of them
    /// follows the claimant instead (its full sync replaces its keys).
    #[test]
    fn a_primary_that_loses_a_slot_drops_its_keys() {
        let (a, b) = (cluster(), cluster());
        let (na, nb) = (a.lock().myself, b.lock().myself);
        {
            let mut s = a.lock();
            s.me_mut().config_epoch = 1;
            let mut n = Node::new(nb, flags::MASTER, 0);
            n.config_epoch = 1;
            n.ip = "127.0.0.1".into();
            n.port = 7001;
            s.nodes.insert(nb, n);
            for slot in 0..3 {
                s.assign(slot, Some(na));
            }
        }
        let claim = |slots: std::ops::Range<usize>, epoch: u64, now: u64| {
            {
                let mut s = b.lock();
                s.me_mut().config_epoch = epoch;
                for slot in slots {
                    s.assign(slot, Some(nb));
                }
            }
            let p = ping(&b, &mut b.lock(), Type::Ping, None, now, 0, &mut Rng::new());
            step(&a, &p, &mut Peer { inbound: true, ..Peer::default() }, now).0
        };
        let fx = claim(0..2, 2, 1);
        assert!(fx.contains(&Effect::DropSlotKeys(vec![0, 1])), "{fx:?}");
        assert!(!fx.iter().any(|e| matches!(e, Effect::Follow(_))), "{fx:?}");
        assert_eq!(a.lock().owner[2], Some(na));
        let fx = claim(0..3, 3, 2);
        assert!(fx.iter().any(|e| matches!(e, Effect::Follow(_))), "{fx:?}");
        assert!(!fx.iter().any(|e| matches!(e, Effect::DropSlotKeys(_))), "{fx:?}");
    }

    #[test]
    fn a_majority_of_reports_turns_pfail_into_fail() {
        let (a, b, x) = (cluster(), cluster(), cluster());
        let (na, nb, nx) = (a.lock().myself, b.lock().myself, x.lock().myself);
        // Three primaries with slots; A and B both see X as PFAIL.
        for c in [&a, &b] {
            let mut s = c.lock();
            for (i, name) in [na, nb, nx].into_iter().enumerate() {
                s.nodes.entry(name).or_insert_with(|| {
                    let mut n = Node::new(name, flags::MASTER, 0);
                    n.ip = "127.0.0.1".into();
                    n.linked = true;
                    n
                });
                s.assign(i, Some(name));
            }
            s.nodes.get_mut(&nx).unwrap().flags |= flags::PFAIL;
            // Past the writable delay, so the state (and size) is computed.
            s.first_update = 1;
            c.changed(&mut s);
        }
        assert_eq!(a.lock().size, 3);
        // B's gossip names X as PFAIL: with A's own view, 2 of 3.
        let p = ping(&b, &mut b.lock(), Type::Ping, None, 10, 0, &mut Rng::new());
        let mut peer = Peer { inbound: true, ..Peer::default() };
        let (_, d) = step(&a, &p, &mut peer, 10);
        assert_eq!(d.failed, vec![nx]);
        assert!(a.lock().nodes[&nx].is(flags::FAIL));
        // A FAIL message makes the others agree without a quorum.
        let f = fail(&a, &mut a.lock(), nx, 0);
        let c = cluster();
        {
            let mut s = c.lock();
            for name in [na, nx] {
                s.nodes.insert(name, Node::new(name, flags::MASTER, 0));
            }
        }
        step(&c, &f, &mut peer, 11);
        assert!(c.lock().nodes[&nx].is(flags::FAIL));
    }
}
