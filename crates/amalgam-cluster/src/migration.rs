//! Replica migration (Redis 7.0's `clusterHandleSlaveMigration` and the
//! census before it in `clusterCron`): a replica moves to a primary that
//! has lost all its working replicas, so that one more failure does not
//! take that primary's slots down with it.
//!
//! **When.** Every cron round a replica counts, over the primaries it
//! knows (not itself, not a node without an address or in handshake),
//! the working replicas of each (not FAIL): a primary serving slots,
//! itself not FAIL, that had replicas (Redis's MIGRATE_TO flag, set
//! when a replica attaches, when a replica was promoted, or when the
//! primary got its first slot while other primaries had replicas) and
//! has no working one is *orphaned*. If there is an orphaned primary, the most
//! working replicas any primary has is at least
//! [`MIGRATION_REPLICAS_MIN`], this replica's primary has that most,
//! and `cluster-allow-replica-migration` is yes, it looks closer:
//! * the cluster's state is ok;
//! * its primary keeps more than `cluster-migration-barrier` replicas
//!   neither FAIL nor PFAIL, counting this one (so after it leaves, the
//!   barrier's number remain);
//! * among the replicas of every primary with that most working
//!   replicas, this one has the smallest name — one replica in the
//!   whole cluster decides to go, without any message;
//! * the first orphaned primary with slots (in name order) has been
//!   seen orphaned for more than [`MIGRATION_DELAY_MS`]: during a
//!   failover the promoted replica's own replicas need that long to
//!   announce that they follow it.
//!
//! Then it replicates the orphaned primary (CLUSTER REPLICATE's path:
//! `command::set_my_primary`, and the server follows it).
//!
//! One difference from Redis: a primary's orphaned time is cleared in a
//! round that finds no orphan, so the delay counts from each time it is
//! orphaned (Redis clears it only in a round that looks closer).
//!
//! **Races.** Two replicas may both think they are the candidate while
//! their views differ (a FAIL not yet everywhere); both migrate, which
//! is harmless, and Redis accepts the same. Every replica that comes
//! back has its FAIL cleared, so a candidate exists in the end.
//!
//! **Cost.** One walk of the node table counts every primary's
//! replicas; the census and, only when it finds an orphan, the closer
//! look walk the table once more each: O(nodes · log nodes) per cron
//! round, on the bus thread, for a replica only.

use crate::gossip::Effect;
use crate::node::{self, flags, Name};
use crate::State;
use std::collections::BTreeMap;

/// How long a primary must stay orphaned before a replica migrates to
/// it (Redis's `CLUSTER_SLAVE_MIGRATION_DELAY`).
pub const MIGRATION_DELAY_MS: u64 = 5000;
/// No migration unless some primary has at least this many working
/// replicas (Redis's cron: migrating from a primary with one would
/// orphan it).
pub const MIGRATION_REPLICAS_MIN: usize = 2;

/// What a primary's replicas are, counted in one walk of the table
/// (Redis keeps `node->slaves`; Amalgam finds replicas by their
/// `primary`).
#[derive(Debug, Default, Clone, Copy)]
struct Replicas {
    /// In the table, whatever their state.
    all: usize,
    /// Not FAIL (`clusterCountNonFailingSlaves`).
    working: usize,
    /// Neither FAIL nor PFAIL (the barrier's count).
    healthy: usize,
    /// The smallest name among them.
    least: Option<Name>,
}

/// Each primary's replicas, by the primary's name: one walk.
fn census(s: &State) -> BTreeMap<Name, Replicas> {
    let mut by_primary: BTreeMap<Name, Replicas> = BTreeMap::new();
    for r in s.nodes.values().filter(|r| r.is(flags::SLAVE)) {
        let Some(p) = r.primary else { continue };
        let e = by_primary.entry(p).or_default();
        e.all += 1;
        e.working += usize::from(!r.is(flags::FAIL));
        e.healthy += usize::from(!r.is(flags::FAIL | flags::PFAIL));
        e.least = Some(e.least.map_or(r.name, |l| l.min(r.name)));
    }
    by_primary
}

/// The primary this replica should migrate to now, if any (see the
/// module's essay); keeps each primary's `orphaned_time` on the way.
/// `barrier`: `cluster-migration-barrier`; `allow`:
/// `cluster-allow-replica-migration`. Two walks of the table at most.
pub fn decide(s: &mut State, now: u64, barrier: u64, allow: bool) -> Option<Name> {
    let me = s.me();
    let mine = me.primary.filter(|_| me.is(flags::SLAVE))?;
    let counts = census(s);
    let of = |name: &Name| counts.get(name).copied().unwrap_or_default();
    // A primary that had replicas (MIGRATE_TO, or a replica, failed,
    // still in the table) and has no working one.
    let orphan = |n: &node::Node| {
        let r = of(&n.name);
        n.is_primary() && !n.is(flags::FAIL) && (n.is(flags::MIGRATE_TO) || r.all > 0) && r.working == 0
    };
    // clusterCron's count, over the primaries it may look at.
    let mut orphaned = 0;
    let mut max_working = 0;
    for n in s.nodes.values() {
        if n.is(flags::MYSELF | flags::NOADDR | flags::HANDSHAKE) || !n.is_primary() || n.is(flags::FAIL) {
            continue;
        }
        orphaned += usize::from(orphan(n) && !n.slots.is_empty());
        max_working = max_working.max(of(&n.name).working);
    }
    if orphaned == 0 {
        // Redis keeps a primary's orphaned time until its next closer
        // look, so a primary orphaned again long after it recovered is
        // migrated to at once; cleared here, the delay holds each time.
        for n in s.nodes.values_mut() {
            n.orphaned_time = 0;
        }
        return None;
    }
    let this_working =
        s.nodes.get(&mine).filter(|p| p.is_primary() && !p.is(flags::FAIL)).map_or(0, |_| of(&mine).working);
    if max_working < MIGRATION_REPLICAS_MIN || this_working != max_working || !allow || !s.ok {
        return None;
    }
    // This primary keeps more than the barrier's replicas, this one
    // counted.
    if of(&mine).healthy as u64 <= barrier {
        return None;
    }
    // The target (the first orphan with slots), each primary's orphaned
    // time, and the candidate: the smallest name among the replicas of
    // the primaries with the most working replicas.
    let mut target = None;
    let mut candidate = s.myself;
    for n in s.nodes.values_mut() {
        let r = counts.get(&n.name).copied().unwrap_or_default();
        if n.is_primary() && r.working == max_working {
            candidate = r.least.map_or(candidate, |l| candidate.min(l));
        }
        let is_orphan =
            n.is_primary() && !n.is(flags::FAIL) && (n.is(flags::MIGRATE_TO) || r.all > 0) && r.working == 0;
        if is_orphan {
            if target.is_none() && !n.slots.is_empty() {
                target = Some(n.name);
            }
            if n.orphaned_time == 0 {
                n.orphaned_time = now;
            }
        } else {
            n.orphaned_time = 0;
        }
    }
    let target = target?;
    let since = s.nodes[&target].orphaned_time;
    (candidate == s.myself && now.saturating_sub(since) > MIGRATION_DELAY_MS).then_some(target)
}

/// Migrates this replica to `target` (Redis's `clusterSetMaster`): its
/// primary in the table, a manual failover dropped, and the server told
/// to follow the target.
pub fn migrate(s: &mut State, target: Name, fx: &mut Vec<Effect>) {
    log::warn!("Migrating to orphaned master {}", node::text(&target));
    s.manual = crate::failover::Manual::default();
    crate::command::set_my_primary(s, target);
    let t = &s.nodes[&target];
    fx.push(Effect::Follow(Some((t.ip.clone(), t.port))));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::Node;
    use crate::{Cluster, Config};

    /// Three primaries `a` (slot 0), `b` (slot 1), `c` (slot 2): `a` has
    /// this node and `r2` as replicas, `b` has `r3`, `c` none (never
    /// had). The state ok. `me_name` chosen so the candidate is known.
    struct World {
        c: Cluster,
        b: Name,
        r2: Name,
        r3: Name,
    }

    fn name(first: u8) -> Name {
        let mut n = [b'0'; 40];
        n[0] = first;
        n
    }

    fn world(me_smallest: bool) -> World {
        let c = Cluster::in_memory(Config { enabled: true, node_timeout_ms: 1000, port: 7000, ..Config::default() });
        let (a, b, cc) = (name(b'a'), name(b'b'), name(b'c'));
        let r2 = if me_smallest { name(b'f') } else { name(b'1') };
        let r3 = name(b'e');
        {
            let mut s = c.lock();
            // This node's name is random: make it the smallest or not.
            let me = s.myself;
            let mine = if me_smallest { name(b'2') } else { name(b'9') };
            let mut n = s.nodes.remove(&me).unwrap();
            n.name = mine;
            s.nodes.insert(mine, n);
            s.myself = mine;
            for (p, slot) in [(a, 0), (b, 1), (cc, 2)] {
                s.nodes.insert(p, Node::new(p, flags::MASTER, 0));
                s.assign(slot, Some(p));
            }
            for (r, p) in [(r2, a), (r3, b)] {
                let mut n = Node::new(r, flags::SLAVE, 0);
                n.primary = Some(p);
                s.nodes.insert(r, n);
                s.nodes.get_mut(&p).unwrap().flags |= flags::MIGRATE_TO;
            }
            crate::command::set_my_primary(&mut s, a);
            s.ok = true;
        }
        World { c, b, r2, r3 }
    }

    #[test]
    fn the_smallest_replica_of_the_richest_primary_migrates_after_the_delay() {
        let w = world(true);
        let mut s = w.c.lock();
        // Nobody orphaned: nothing, whatever the time.
        assert_eq!(decide(&mut s, 1_000, 1, true), None);
        // b's only replica fails: b is orphaned from now on.
        s.nodes.get_mut(&w.r3).unwrap().flags |= flags::FAIL;
        assert_eq!(decide(&mut s, 10_000, 1, true), None);
        assert_eq!(s.nodes[&w.b].orphaned_time, 10_000);
        assert_eq!(decide(&mut s, 10_000 + MIGRATION_DELAY_MS, 1, true), None);
        assert_eq!(decide(&mut s, 10_001 + MIGRATION_DELAY_MS, 1, true), Some(w.b));
        // The switch off, the barrier too high, the cluster down: none.
        assert_eq!(decide(&mut s, 20_000, 1, false), None);
        assert_eq!(decide(&mut s, 20_000, 2, true), None);
        s.ok = false;
        assert_eq!(decide(&mut s, 20_000, 1, true), None);
        s.ok = true;
        // The other replica of a, PFAIL: a keeps fewer than the barrier.
        s.nodes.get_mut(&w.r2).unwrap().flags |= flags::PFAIL;
        assert_eq!(decide(&mut s, 20_000, 1, true), None);
        s.nodes.get_mut(&w.r2).unwrap().flags &= !flags::PFAIL;
        // Migrating: this node now replicates b.
        let mut fx = Vec::new();
        migrate(&mut s, w.b, &mut fx);
        assert_eq!(s.me().primary, Some(w.b));
        assert!(matches!(fx.as_slice(), [Effect::Follow(Some(_))]));
        // b has a working replica again: not orphaned any more.
        assert_eq!(decide(&mut s, 30_000, 0, true), None);
    }

    #[test]
    fn only_the_smallest_name_goes_and_a_primary_that_never_had_replicas_is_not_orphaned() {
        let w = world(false);
        let mut s = w.c.lock();
        s.nodes.get_mut(&w.r3).unwrap().flags |= flags::FAIL;
        assert_eq!(decide(&mut s, 10_000, 1, true), None);
        // r2 has the smaller name: it, not this node, would go.
        assert_eq!(decide(&mut s, 10_000 + 2 * MIGRATION_DELAY_MS, 1, true), None);
        // c never had a replica: with b's replica back, no orphan.
        s.nodes.get_mut(&w.r3).unwrap().flags &= !flags::FAIL;
        assert_eq!(decide(&mut s, 30_000, 1, true), None);
        assert_eq!(s.nodes[&w.b].orphaned_time, 0);
        // A primary given its first slot while replicas exist is a
        // target, though it never had one (Redis's issue 3043).
        let d = name(b'd');
        s.nodes.insert(d, Node::new(d, flags::MASTER, 0));
        s.assign(3, Some(d));
        assert!(s.nodes[&d].is(flags::MIGRATE_TO));
        assert!(!s.nodes[&name(b'c')].is(flags::MIGRATE_TO));
    }
}
