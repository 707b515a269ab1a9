//! Failover (Redis 7.0's `clusterHandleSlaveFailover`,
//! `clusterSendFailoverAuthIfNeeded`, `clusterFailoverReplaceYourMaster`,
//! the manual failover's `clusterHandleManualFailover`): a replica takes
//! its failed primary's slots once a majority of the primaries voted for
//! it, so the cluster goes on without an operator.
//!
//! **The election.** When its primary is FAIL (or a manual failover may
//! start) a replica schedules an election 500–1000 ms ahead, plus one
//! second per replica of the same primary with a greater replication
//! offset (its rank: the most up-to-date replica goes first), and tells
//! the other replicas its offset. At that time it increments the
//! current epoch and asks every node for a vote (FAILOVER_AUTH_REQUEST,
//! carrying its primary's slots and config epoch). A primary serving
//! slots votes (FAILOVER_AUTH_ACK) at most once per epoch, only for a
//! replica whose primary is FAIL (or with FORCEACK, a manual failover),
//! not twice for the same primary within two node timeouts, and not if
//! one of the claimed slots has an owner with a greater config epoch.
//! With a majority of the primaries' votes before the election expires
//! (twice the node timeout, at least 2 s) the replica takes the
//! election's epoch as its config epoch, becomes a primary, claims its
//! old primary's slots and tells everyone with a PONG; the epoch rule of
//! the gossip (`gossip.rs`) makes every other node, and the old primary
//! when it returns, agree. An election that fails is retried after twice
//! its timeout.
//!
//! **Manual failover** (CLUSTER FAILOVER): the replica sends MFSTART;
//! its primary holds writes (CLIENT PAUSE WRITE's hold) and pings the
//! replica with its offset, flagged PAUSED; once the replica has
//! processed up to that offset the election starts at once, its request
//! flagged FORCEACK so the primaries vote though the primary is up. FORCE
//! skips the offset agreement; TAKEOVER skips the vote (a new config
//! epoch without consensus). Either gives up after [`MF_TIMEOUT_MS`].

use crate::gossip::{self, Dirty, Effect, Rng};
use crate::msg::{self, Header, Type};
use crate::node::{self, flags, Name};
use crate::{Cluster, State};

/// A manual failover's time limit (Redis's `CLUSTER_MF_TIMEOUT`).
pub const MF_TIMEOUT_MS: u64 = 5000;
/// An election's time limit is twice the node timeout, at least this.
pub const AUTH_TIMEOUT_MIN_MS: u64 = 2000;
/// The fixed and random parts of an election's delay.
const ELECTION_DELAY_MS: u64 = 500;
const ELECTION_JITTER_MS: usize = 500;
/// The delay added per better replica.
const RANK_DELAY_MS: u64 = 1000;
/// Redis's `repl-ping-replica-period` (10 s), part of the data age a
/// replica may have and still fail over.
const REPL_PING_PERIOD_MS: u64 = 10_000;

/// A replica's election.
#[derive(Debug, Default, Clone)]
pub struct Election {
    /// When it starts (or started); 0: none scheduled.
    pub auth_time: u64,
    pub count: usize,
    pub sent: bool,
    pub rank: usize,
    pub epoch: u64,
}

/// A manual failover in progress.
#[derive(Debug, Default, Clone)]
pub struct Manual {
    /// When it gives up; 0: none.
    pub end: u64,
    /// The replica may start its election.
    pub can_start: bool,
    /// The primary's offset when it paused (the replica's side).
    pub primary_offset: Option<u64>,
    /// The replica asking (the primary's side).
    pub replica: Option<Name>,
}

/// CLUSTER FAILOVER's mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Default,
    Force,
    Takeover,
}

fn timeouts(c: &Cluster) -> (u64, u64) {
    let auth_timeout = (c.config().node_timeout_ms * 2).max(AUTH_TIMEOUT_MIN_MS);
    (auth_timeout, auth_timeout * 2)
}

/// The replicas of this node's primary with a greater offset than this
/// one's (`clusterGetSlaveRank`).
fn rank(s: &State, my_offset: u64) -> usize {
    let Some(p) = s.me().primary else { return 0 };
    s.nodes
        .values()
        .filter(|n| n.name != s.myself && n.primary == Some(p) && !n.is(flags::NOFAILOVER) && n.repl_offset > my_offset)
        .count()
}

/// An AUTH_REQUEST (FORCEACK during a manual failover) or AUTH_ACK, or
/// MFSTART: a header alone.
fn bare(c: &Cluster, s: &mut State, ty: Type, offset: u64, forceack: bool) -> Vec<u8> {
    let mut h: Header = gossip::header(c, s, ty, offset);
    if forceack {
        h.mflags[0] |= msg::FLAG0_FORCEACK;
    }
    let mut out = Vec::with_capacity(msg::HEADER_LEN);
    msg::encode_header(&h, 0, 0, &mut out);
    msg::finish(&mut out, 0);
    s.sent[ty as usize] += 1;
    out
}

/// CLUSTER FAILOVER on this (replica) node: Err with Redis's text.
pub fn start_manual(
    c: &Cluster,
    s: &mut State,
    mode: Mode,
    now: u64,
    offset: u64,
) -> Result<Vec<Effect>, &'static str> {
    let me = s.me();
    if me.is_primary() {
        return Err("ERR You should send CLUSTER FAILOVER to a replica");
    }
    let Some(p) = me.primary.filter(|p| s.nodes.contains_key(p)) else {
        return Err("ERR I'm a replica but my master is unknown to me");
    };
    let pn = &s.nodes[&p];
    if mode == Mode::Default && (pn.is(flags::FAIL) || !pn.linked) {
        return Err("ERR Master is down or failed, please use CLUSTER FAILOVER FORCE");
    }
    s.manual = Manual { end: now + MF_TIMEOUT_MS, ..Manual::default() };
    let mut fx = Vec::new();
    match mode {
        Mode::Takeover => {
            log::warn!("Taking over the master (user request).");
            crate::command::bump_epoch(s);
            replace_primary(c, s, now, offset, &mut Rng::new(), &mut fx);
        }
        Mode::Force => {
            log::warn!("Forced failover user request accepted.");
            s.manual.can_start = true;
        }
        Mode::Default => {
            log::warn!("Manual failover user request accepted.");
            let m = bare(c, s, Type::MfStart, offset, false);
            fx.push(Effect::SendTo(p, m));
        }
    }
    Ok(fx)
}

/// `clusterFailoverReplaceYourMaster`: this replica becomes a primary
/// with its old primary's slots, and says so to every node.
pub fn replace_primary(c: &Cluster, s: &mut State, now: u64, offset: u64, rng: &mut Rng, fx: &mut Vec<Effect>) {
    let me = s.myself;
    let Some(old) = s.me().primary.filter(|_| s.me().is(flags::SLAVE)) else { return };
    {
        let m = s.me_mut();
        m.flags = (m.flags & !flags::SLAVE) | flags::MASTER;
        m.primary = None;
    }
    let slots: Vec<usize> = s
        .nodes
        .get(&old)
        .map_or_else(Vec::new, |o| o.slots.ranges().iter().flat_map(|&(a, b)| a as usize..=b as usize).collect());
    for slot in slots {
        s.assign(slot, Some(me));
    }
    s.manual = Manual::default();
    fx.push(Effect::Follow(None));
    let pong = gossip::ping(c, s, Type::Pong, None, now, offset, rng);
    fx.push(Effect::Broadcast(pong));
}

/// A replica's failover step, from the cron (Redis's
/// `clusterHandleManualFailover`, `clusterHandleSlaveFailover` and
/// `manualFailoverCheckTimeout`). `data_age_ms`: how long the
/// replication link has been without data.
#[allow(clippy::too_many_arguments)]
pub fn cron(
    c: &Cluster,
    s: &mut State,
    now: u64,
    offset: u64,
    data_age_ms: u64,
    rng: &mut Rng,
    fx: &mut Vec<Effect>,
) -> Dirty {
    let mut dirty = Dirty::default();
    // A manual failover that ran out of time (both sides).
    if s.manual.end != 0 && s.manual.end < now {
        log::warn!("Manual failover timed out.");
        if s.me().is_primary() {
            fx.push(Effect::HoldWrites(false));
        }
        s.manual = Manual::default();
    }
    if s.me().is_primary() {
        // A primary pings the replica failing it over, with its offset.
        if let Some(r) = s.manual.replica.filter(|_| s.manual.end != 0) {
            let mut p = gossip::ping(c, s, Type::Ping, Some(r), now, offset, rng);
            p[msg::HEADER_LEN - 3] |= msg::FLAG0_PAUSED;
            fx.push(Effect::SendTo(r, p));
        }
        return dirty;
    }
    if s.manual.end != 0 && !s.manual.can_start && s.manual.primary_offset == Some(offset) {
        s.manual.can_start = true;
        log::warn!("All master replication stream processed, manual failover can start.");
    }
    let manual = s.manual.end != 0 && s.manual.can_start;
    let Some(p) = s.me().primary else { return dirty };
    let Some(primary) = s.nodes.get(&p) else { return dirty };
    // `cluster-replica-no-failover`: no election of its own; a manual
    // failover still runs.
    if (!primary.is(flags::FAIL) && !manual) || primary.slots.is_empty() || (c.replica_no_failover() && !manual) {
        return dirty;
    }
    let (auth_timeout, auth_retry) = timeouts(c);
    let timeout = c.config().node_timeout_ms;
    // The data-age check (`cluster-replica-validity-factor`, 0: none):
    // a replica cut off from its primary for longer than the factor's
    // node timeouts, plus the replication ping period, has data too old
    // to stand (the node timeout itself is not counted against it).
    let data_age = data_age_ms.saturating_sub(timeout);
    let factor = c.validity_factor();
    let validity = REPL_PING_PERIOD_MS.saturating_add(timeout.saturating_mul(factor));
    if factor != 0 && data_age > validity && !manual {
        return dirty;
    }
    let auth_age = now.saturating_sub(s.election.auth_time);
    if s.election.auth_time == 0 || (now >= s.election.auth_time && auth_age > auth_retry) {
        let rank = rank(s, offset);
        let mut at = now + ELECTION_DELAY_MS + rng.below(ELECTION_JITTER_MS) as u64 + rank as u64 * RANK_DELAY_MS;
        let mut r = rank;
        if s.manual.end != 0 {
            at = now;
            r = 0;
        }
        s.election = Election { auth_time: at, count: 0, sent: false, rank: r, epoch: 0 };
        log::warn!(
            "Start of election delayed for {} milliseconds (rank #{r}, offset {offset}).",
            at.saturating_sub(now)
        );
        // The other replicas of the same primary learn this offset.
        let pong = gossip::ping(c, s, Type::Pong, None, now, offset, rng);
        for n in s.nodes.values().filter(|n| n.primary == Some(p) && n.name != s.myself) {
            fx.push(Effect::SendTo(n.name, pong.clone()));
        }
        if s.manual.end == 0 {
            return dirty;
        }
    }
    if !s.election.sent && s.manual.end == 0 {
        let newrank = rank(s, offset);
        if newrank > s.election.rank {
            let added = (newrank - s.election.rank) as u64 * RANK_DELAY_MS;
            s.election.auth_time += added;
            s.election.rank = newrank;
            log::warn!("Replica rank updated to #{newrank}, added {added} milliseconds of delay.");
        }
    }
    if now < s.election.auth_time {
        return dirty;
    }
    if now - s.election.auth_time > auth_timeout {
        return dirty;
    }
    if !s.election.sent {
        s.current_epoch += 1;
        s.election.epoch = s.current_epoch;
        s.election.sent = true;
        log::warn!("Starting a failover election for epoch {}.", s.current_epoch);
        let req = bare(c, s, Type::AuthRequest, offset, s.manual.end != 0);
        fx.push(Effect::Broadcast(req));
        dirty.save = true;
        dirty.durable = true;
        dirty.state = true;
        return dirty;
    }
    let quorum = s.size / 2 + 1;
    if s.election.count >= quorum {
        log::warn!("Failover election won: I'm the new master.");
        if s.me().config_epoch < s.election.epoch {
            let e = s.election.epoch;
            s.me_mut().config_epoch = e;
            log::warn!("configEpoch set to {e} after successful failover");
        }
        replace_primary(c, s, now, offset, rng, fx);
        s.election = Election::default();
        dirty.save = true;
        dirty.durable = true;
        dirty.state = true;
    }
    dirty
}

/// A FAILOVER_AUTH_REQUEST from `sender` (`clusterSendFailoverAuthIfNeeded`).
pub fn on_auth_request(
    c: &Cluster,
    s: &mut State,
    sender: Name,
    h: &Header,
    now: u64,
    offset: u64,
) -> (Dirty, Vec<Effect>) {
    let mut dirty = Dirty::default();
    let mut fx = Vec::new();
    let me = s.me();
    if !me.is_primary() || me.slots.is_empty() {
        return (dirty, fx);
    }
    let who = node::text(&sender).to_string();
    if h.current_epoch < s.current_epoch {
        log::warn!("Failover auth denied to {who}: reqEpoch ({}) < curEpoch({})", h.current_epoch, s.current_epoch);
        return (dirty, fx);
    }
    if s.last_vote_epoch == s.current_epoch {
        log::warn!("Failover auth denied to {who}: already voted for epoch {}", s.current_epoch);
        return (dirty, fx);
    }
    let n = &s.nodes[&sender];
    let force = h.mflags[0] & msg::FLAG0_FORCEACK != 0;
    let primary = n.primary.and_then(|p| s.nodes.get(&p));
    match primary {
        _ if n.is_primary() => {
            log::warn!("Failover auth denied to {who}: it is a master node");
            return (dirty, fx);
        }
        None => {
            log::warn!("Failover auth denied to {who}: I don't know its master");
            return (dirty, fx);
        }
        Some(p) if !p.is(flags::FAIL) && !force => {
            log::warn!("Failover auth denied to {who}: its master is up");
            return (dirty, fx);
        }
        Some(p) if now.saturating_sub(p.voted_time) < c.config().node_timeout_ms * 2 => {
            log::warn!("Failover auth denied to {who}: can't vote about this master yet");
            return (dirty, fx);
        }
        Some(_) => {}
    }
    for slot in 0..crate::slot::SLOTS {
        if !h.slots.has(slot) {
            continue;
        }
        if let Some(o) = s.owner[slot].and_then(|o| s.nodes.get(&o)) {
            if o.config_epoch > h.config_epoch {
                log::warn!(
                    "Failover auth denied to {who}: slot {slot} epoch ({}) > reqEpoch ({})",
                    o.config_epoch,
                    h.config_epoch
                );
                return (dirty, fx);
            }
        }
    }
    s.last_vote_epoch = s.current_epoch;
    let p = s.nodes[&sender].primary.expect("checked");
    if let Some(pn) = s.nodes.get_mut(&p) {
        pn.voted_time = now;
    }
    dirty.save = true;
    dirty.durable = true;
    let ack = bare(c, s, Type::AuthAck, offset, false);
    fx.push(Effect::SendTo(sender, ack));
    log::warn!("Failover auth granted to {who} for epoch {}", s.current_epoch);
    (dirty, fx)
}

/// A FAILOVER_AUTH_ACK: a vote, counted if from a primary serving slots
/// in this election's epoch.
pub fn on_auth_ack(s: &mut State, sender: Name, h: &Header) {
    let n = &s.nodes[&sender];
    if n.is_primary() && !n.slots.is_empty() && h.current_epoch >= s.election.epoch && s.election.sent {
        s.election.count += 1;
    }
}

/// MFSTART from `sender`, one of this primary's replicas: hold writes
/// and ping it with the offset.
pub fn on_mfstart(c: &Cluster, s: &mut State, sender: Name, now: u64, offset: u64, rng: &mut Rng) -> Vec<Effect> {
    let mut fx = Vec::new();
    if s.nodes[&sender].primary != Some(s.myself) {
        return fx;
    }
    s.manual = Manual { end: now + MF_TIMEOUT_MS, replica: Some(sender), ..Manual::default() };
    fx.push(Effect::HoldWrites(true));
    let mut p = gossip::ping(c, s, Type::Ping, Some(sender), now, offset, rng);
    p[msg::HEADER_LEN - 3] |= msg::FLAG0_PAUSED;
    fx.push(Effect::Reply(p));
    fx
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::Node;
    use crate::Config;

    fn cluster() -> Cluster {
        Cluster::in_memory(Config { enabled: true, node_timeout_ms: 1000, port: 7000, ..Config::default() })
    }

    /// A primary `me` with slot 0, and a failed primary `p` (slot 1,
    /// epoch 1) with replica `r`; all known to `c`.
    fn voter() -> (Cluster, Name, Name) {
        let c = cluster();
        let (p, r) = (node::random_name(), node::random_name());
        {
            let mut s = c.lock();
            let mut pn = Node::new(p, flags::MASTER | flags::FAIL, 0);
            pn.config_epoch = 1;
            s.nodes.insert(p, pn);
            let mut rn = Node::new(r, flags::SLAVE, 0);
            rn.primary = Some(p);
            s.nodes.insert(r, rn);
            let me = s.myself;
            s.assign(0, Some(me));
            s.assign(1, Some(p));
            s.current_epoch = 5;
        }
        (c, p, r)
    }

    fn request(c: &Cluster, replica: Name, primary_epoch: u64, epoch: u64, force: bool) -> Header {
        let mut h = gossip::header(c, &c.lock(), Type::AuthRequest, 0);
        h.sender = replica;
        h.current_epoch = epoch;
        h.config_epoch = primary_epoch;
        h.slots = crate::slot::SlotSet::default();
        h.slots.set(1, true);
        if force {
            h.mflags[0] |= msg::FLAG0_FORCEACK;
        }
        h
    }

    #[test]
    fn a_primary_votes_once_per_epoch_for_a_replica_of_a_failed_primary() {
        let (c, _, r) = voter();
        let h = request(&c, r, 1, 5, false);
        let (_, fx) = on_auth_request(&c, &mut c.lock(), r, &h, 10_000, 0);
        assert!(matches!(fx.as_slice(), [Effect::SendTo(to, _)] if *to == r), "{fx:?}");
        assert_eq!(c.lock().last_vote_epoch, 5);
        // The same epoch again: no second vote.
        let (_, fx) = on_auth_request(&c, &mut c.lock(), r, &h, 10_001, 0);
        assert!(fx.is_empty());
    }

    #[test]
    fn no_vote_for_an_old_epoch_a_live_primary_or_a_stale_claim() {
        let (c, p, r) = voter();
        // An epoch behind this node's.
        let (_, fx) = {
            let h = request(&c, r, 1, 4, false);
            on_auth_request(&c, &mut c.lock(), r, &h, 10_000, 0)
        };
        assert!(fx.is_empty());
        // Its primary is up: only a manual failover (FORCEACK) gets a vote.
        c.lock().nodes.get_mut(&p).unwrap().flags &= !flags::FAIL;
        let (_, fx) = {
            let h = request(&c, r, 1, 5, false);
            on_auth_request(&c, &mut c.lock(), r, &h, 10_000, 0)
        };
        assert!(fx.is_empty());
        // A claimed slot whose owner has a greater config epoch.
        c.lock().nodes.get_mut(&p).unwrap().config_epoch = 9;
        let (_, fx) = {
            let h = request(&c, r, 1, 5, true);
            on_auth_request(&c, &mut c.lock(), r, &h, 10_000, 0)
        };
        assert!(fx.is_empty());
        c.lock().nodes.get_mut(&p).unwrap().config_epoch = 1;
        let (_, fx) = {
            let h = request(&c, r, 1, 5, true);
            on_auth_request(&c, &mut c.lock(), r, &h, 10_000, 0)
        };
        assert_eq!(fx.len(), 1);
    }

    /// Whether a replica of a failed primary, its replication link
    /// without data for `age_ms`, schedules an election under `cfg`.
    fn schedules(cfg: Config, age_ms: u64) -> bool {
        let c = Cluster::in_memory(Config { enabled: true, node_timeout_ms: 1000, port: 7000, ..cfg });
        let p = node::random_name();
        {
            let mut s = c.lock();
            let mut pn = Node::new(p, flags::MASTER | flags::FAIL, 0);
            pn.config_epoch = 1;
            s.nodes.insert(p, pn);
            s.assign(0, Some(p));
            crate::command::set_my_primary(&mut s, p);
        }
        let mut fx = Vec::new();
        cron(&c, &mut c.lock(), 100_000, 0, age_ms, &mut Rng::new(), &mut fx);
        let at = c.lock().election.auth_time;
        at != 0
    }

    #[test]
    fn the_data_age_check_and_no_failover_keep_a_replica_out_of_elections() {
        // Timeout 1 s, factor 10: data up to 1 + 10 + 10 s old stands.
        assert!(schedules(Config::default(), 20_000));
        assert!(!schedules(Config::default(), 22_000));
        assert!(schedules(Config { replica_validity_factor: 20, ..Config::default() }, 22_000));
        // 0: any age stands.
        assert!(schedules(Config { replica_validity_factor: 0, ..Config::default() }, u64::MAX / 2));
        // cluster-replica-no-failover: never an election of its own.
        assert!(!schedules(Config { replica_no_failover: true, ..Config::default() }, 0));
    }

    #[test]
    fn a_replica_wins_with_a_majority_and_takes_its_primary_s_slots() {
        let c = cluster();
        let (p, a, b) = (node::random_name(), node::random_name(), node::random_name());
        {
            let mut s = c.lock();
            for (n, slot) in [(p, 0), (a, 1), (b, 2)] {
                let mut nn = Node::new(n, flags::MASTER, 0);
                nn.config_epoch = 1;
                s.nodes.insert(n, nn);
                s.assign(slot, Some(n));
            }
            s.nodes.get_mut(&p).unwrap().flags |= flags::FAIL;
            crate::command::set_my_primary(&mut s, p);
            s.first_update = 1;
            c.changed(&mut s);
            assert_eq!(s.size, 3);
        }
        let mut rng = Rng::new();
        let mut fx = Vec::new();
        let now = 100_000;
        // Scheduled, then (past the delay) the request is broadcast.
        cron(&c, &mut c.lock(), now, 0, 0, &mut rng, &mut fx);
        let at = c.lock().election.auth_time;
        assert!(at >= now + ELECTION_DELAY_MS);
        fx.clear();
        cron(&c, &mut c.lock(), at, 0, 0, &mut rng, &mut fx);
        assert!(fx.iter().any(|e| matches!(e, Effect::Broadcast(_))));
        let epoch = c.lock().election.epoch;
        // Two of three primaries vote.
        for voter in [a, b] {
            let mut h = gossip::header(&c, &c.lock(), Type::AuthAck, 0);
            h.current_epoch = epoch;
            on_auth_ack(&mut c.lock(), voter, &h);
        }
        fx.clear();
        cron(&c, &mut c.lock(), at + 10, 0, 0, &mut rng, &mut fx);
        let s = c.lock();
        assert!(s.me().is_primary());
        assert_eq!(s.owner[0], Some(s.myself));
        assert_eq!(s.me().config_epoch, epoch);
        assert!(fx.contains(&Effect::Follow(None)));
    }
}
