//! Sharded Pub/Sub across a shard (Redis 7.0's SSUBSCRIBE, SPUBLISH,
//! SUNSUBSCRIBE in cluster mode).
//!
//! ## HOW IT WORKS
//! A shard is a primary and its replicas: the nodes that serve one set of
//! slots (Redis's `clusterGetNodesServingMySlots`). A shard channel is
//! routed like a key (its slot, `Query::pubsub_shard`), so its
//! subscribers are on the nodes of the shard that owns the slot, and a
//! replica serves SSUBSCRIBE and SPUBLISH without READONLY.
//! * SPUBLISH on a node of the shard delivers to its own subscribers and
//!   sends one PUBLISHSHARD (type 10, PUBLISH's body) to every other node
//!   of the shard over its outgoing link ([`Cluster::publish_shard`],
//!   Redis's `clusterPropagatePublishShard`); a node that receives one
//!   delivers it to its subscribers (`gossip.rs`, `Effect::PublishShard`,
//!   the bus host). PUBLISH stays a broadcast to every node.
//! * When a slot leaves the primary of this node's shard — resharding
//!   gave it to another primary, DELSLOTS, a failover moved it to a new
//!   primary — every subscriber of a shard channel of that slot is
//!   unsubscribed with a `sunsubscribe` push (Redis's
//!   `removeChannelsInSlot`, from `clusterDelSlot` when the slot's old
//!   owner's shard holds this node). The one exception is Redis's too:
//!   the replica that takes the slots over in a failover keeps its
//!   subscribers (it has left its old primary's replicas when it deletes
//!   the slots), while the old primary and its other replicas drop
//!   theirs (checked against redis-server 7.0.15,
//!   `tests/python/test_cluster.py`).
//!   [`Watch`] keeps what the shard served at the last change; after each
//!   change (`Cluster::changed`) the slots now owned by neither that
//!   primary nor this node are handed to the listener the server set
//!   ([`Cluster::on_slots_lost`]).
//!
//! ## BOUNDS AND COSTS
//! The watch visits the 16,384 slots of the previous bitmap once per
//! state change (a byte test, and a name compare for the slots it held);
//! nothing when the shard served none. The listener runs only when slots
//! were lost; it walks the server's shard channels once.
//!
//! ## LIMITATIONS
//! * The listener runs under the state's lock: it must not call back into
//!   the cluster (the server's only locks its Pub/Sub registry).
//! * CLUSTER SETSLOT … NODE naming the slot's current owner changes no
//!   owner here, so it unsubscribes nobody (Redis deletes and re-adds the
//!   slot, dropping its channels).
//! * `cluster-allow-pubsubshard-when-down` is not an option: shard
//!   channels are served while the cluster is down, Redis's default
//!   ([`ALLOW_PUBSUBSHARD_WHEN_DOWN`]).

use crate::msg::Type;
use crate::node::{flags, Name};
use crate::slot::{SlotSet, SLOTS};
use crate::{gossip, Cluster, State};
use std::sync::{Mutex, OnceLock};

/// Redis's `cluster-allow-pubsubshard-when-down` default (yes): shard
/// channels are served while the cluster is down.
pub const ALLOW_PUBSUBSHARD_WHEN_DOWN: bool = true;

/// What the server does with the slots its shard stopped serving: drops
/// their shard channels' subscribers. Called with the state's lock held.
pub type Listener = Box<dyn Fn(&SlotSet) + Send + Sync>;

/// The slots this node's shard served at the last change, and its
/// primary then.
#[derive(Debug, Default)]
pub struct Watch {
    slots: SlotSet,
    primary: Option<Name>,
}

/// The watch and the listener (a field of [`Cluster`]).
#[derive(Default)]
pub struct Shard {
    watch: Mutex<Watch>,
    listener: OnceLock<Listener>,
}

impl std::fmt::Debug for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shard").field("listener", &self.listener.get().is_some()).finish()
    }
}

/// The primary of this node's shard: itself, or the one it replicates.
pub fn primary_of_mine(s: &State) -> Option<Name> {
    let me = s.me();
    if me.is(flags::SLAVE) {
        me.primary
    } else {
        Some(s.myself)
    }
}

/// The other nodes of this node's shard: its primary and that primary's
/// replicas, less itself (Redis's `clusterGetNodesServingMySlots`).
/// Bounded by the node table.
pub fn peers(s: &State) -> Vec<Name> {
    let Some(primary) = primary_of_mine(s) else { return Vec::new() };
    s.nodes
        .values()
        .filter(|n| n.name != s.myself && (n.name == primary || (n.is(flags::SLAVE) && n.primary == Some(primary))))
        .map(|n| n.name)
        .collect()
}

impl Shard {
    /// After a change to `s`: the slots the shard served that another
    /// node (or none) owns now go to the listener; the watch takes the
    /// shard's slots now. One pass over the slots.
    pub(crate) fn check(&self, s: &State) {
        let mut w = self.watch.lock().unwrap_or_else(|p| p.into_inner());
        let mut lost = SlotSet::default();
        let mut any = false;
        if !w.slots.is_empty() {
            for slot in 0..SLOTS {
                let owner = s.owner[slot];
                if w.slots.has(slot) && owner != w.primary && owner != Some(s.myself) {
                    lost.set(slot, true);
                    any = true;
                }
            }
        }
        let primary = primary_of_mine(s);
        w.slots = primary.and_then(|p| s.nodes.get(&p)).map(|n| n.slots.clone()).unwrap_or_default();
        w.primary = primary;
        drop(w);
        if any {
            if let Some(f) = self.listener.get() {
                f(&lost);
            }
        }
    }
}

impl Cluster {
    /// SPUBLISH on this node: a PUBLISHSHARD to every other node of its
    /// shard, through the outbox (the command does not wait for the bus).
    pub fn publish_shard(&self, channel: &[u8], message: &[u8], offset: u64) {
        {
            let mut s = self.lock();
            let peers = peers(&s);
            if peers.is_empty() {
                return;
            }
            let m = gossip::publish(self, &mut s, Type::PublishShard, channel, message, offset);
            for p in peers {
                s.outbox.push(gossip::Effect::SendTo(p, m.clone()));
            }
        }
        self.wake();
    }

    /// Sets what is done with the slots this node's shard stops serving
    /// (once, at start; a second call is ignored).
    pub fn on_slots_lost(&self, f: Listener) {
        let _ = self.shard.listener.set(f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Config;
    use std::sync::{Arc, Mutex as M};

    /// A host with no keys and no replication.
    struct Empty;
    impl crate::Host for Empty {
        fn keys_in_slot(&self, _: u16, _: usize) -> Vec<Vec<u8>> {
            Vec::new()
        }
        fn each_key(&self, _: usize, _: &mut dyn FnMut(&[u8])) -> bool {
            true
        }
        fn exists(&self, _: &[u8]) -> bool {
            false
        }
        fn count_keys_in_slot(&self, _: u16) -> u64 {
            0
        }
        fn holds_keys(&self) -> bool {
            false
        }
        fn follow(&self, _: Option<(String, u16)>) {}
        fn repl_offset(&self) -> u64 {
            0
        }
    }

    #[test]
    fn a_slot_given_away_is_reported_once() {
        let c = Cluster::in_memory(Config { enabled: true, port: 7000, ..Config::default() });
        let lost: Arc<M<Vec<usize>>> = Arc::default();
        let l = Arc::clone(&lost);
        c.on_slots_lost(Box::new(move |set| l.lock().unwrap().extend((0..SLOTS).filter(|&s| set.has(s)))));
        let mut out = Vec::new();
        let proto = amalgam_protocol::resp::Proto::Resp2;
        crate::command::run(&c, &Empty, proto, &[b"CLUSTER", b"ADDSLOTSRANGE", b"0", b"99"], &mut out);
        assert!(lost.lock().unwrap().is_empty());
        crate::command::run(&c, &Empty, proto, &[b"CLUSTER", b"DELSLOTS", b"7", b"8"], &mut out);
        assert_eq!(*lost.lock().unwrap(), vec![7, 8]);
        // Nothing more: the watch took the shard's slots after the change.
        crate::command::run(&c, &Empty, proto, &[b"CLUSTER", b"ADDSLOTS", b"7"], &mut out);
        assert_eq!(*lost.lock().unwrap(), vec![7, 8]);
        // A lone primary has no shard peers: SPUBLISH sends nothing.
        assert!(peers(&c.lock()).is_empty());
    }

    #[test]
    fn publishshard_is_type_10_with_publishs_body() {
        let c = Cluster::in_memory(Config { enabled: true, port: 7000, ..Config::default() });
        let m = gossip::publish(&c, &mut c.lock(), Type::PublishShard, b"ch", b"msg", 5);
        // The header's type field (after signature, length, version, port).
        assert_eq!(u16::from_be_bytes([m[12], m[13]]), 10);
        let d = crate::msg::decode(&m).unwrap();
        assert_eq!(d.header.ty, Type::PublishShard as u16);
        let crate::msg::Body::Publish { channel, message } = d.body else { panic!("{:?}", d.body) };
        assert_eq!((&channel[..], &message[..]), (&b"ch"[..], &b"msg"[..]));
        assert_eq!(c.lock().sent[Type::PublishShard as usize], 1);
    }
}
