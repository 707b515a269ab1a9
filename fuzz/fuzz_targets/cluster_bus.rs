//! libFuzzer target for the cluster bus (amalgam-cluster): what a hostile
//! peer can send on a bus link. The input is cut into messages as the bus
//! cuts its link's bytes (`msg::frame_len`, then the announced length);
//! each whole one is decoded (`msg::decode`, Redis's
//! `clusterIsValidPacket` checks) and, if accepted, applied to one
//! node's state (`gossip::process`) as from an incoming link and, by the
//! input's first byte, as from an outgoing one in handshake. Invariants:
//! nothing panics; a refused message stops the link (as the bus closes
//! it); after every message the state is whole — this node is in its
//! table, every slot's owner is a known node whose bitmap has the slot,
//! every open slot names a known node. Seeds (`corpus/cluster_bus/`):
//! redis-server 7.0.15's own MEET and PONG, captured from its bus port,
//! and one message of each other type.
#![no_main]

use amalgam_cluster::gossip::{self, Peer, Rng};
use amalgam_cluster::msg;
use amalgam_cluster::{Cluster, Config};
use libfuzzer_sys::fuzz_target;

/// Messages applied per input at most.
const MESSAGES_MAX: usize = 64;

fuzz_target!(|data: &[u8]| {
    let c = Cluster::in_memory(Config { enabled: true, node_timeout_ms: 1000, port: 7000, ..Config::default() });
    let handshake = data.first().is_some_and(|b| b & 1 == 1);
    let mut peer =
        Peer { inbound: !handshake, peer_ip: "127.0.0.1".into(), local_ip: "127.0.0.2".into(), ..Peer::default() };
    if handshake {
        // An outgoing link to a node met but not yet answered.
        let mut s = c.lock();
        let name = amalgam_cluster::node::random_name();
        let n = amalgam_cluster::node::Node::new(name, amalgam_cluster::node::flags::HANDSHAKE, 0);
        s.nodes.insert(name, n);
        peer.node = Some(name);
    }
    let mut rng = Rng::new();
    let mut rest = data;
    for i in 0..MESSAGES_MAX {
        if rest.len() < 8 {
            break;
        }
        let Ok(len) = msg::frame_len(&rest[..8]) else { break };
        if rest.len() < len {
            break;
        }
        let (one, tail) = rest.split_at(len);
        rest = tail;
        let m = match msg::decode(one) {
            Ok(m) => m,
            Err(msg::Refused::Version(_)) => continue,
            Err(_) => break,
        };
        let mut fx = Vec::new();
        let mut s = c.lock();
        let d = gossip::process(&c, &mut s, &m, &mut peer, 1_000 + i as u64 * 100, 0, &mut rng, &mut fx);
        for f in &d.failed {
            let bytes = gossip::fail(&c, &mut s, *f, 0);
            assert!(msg::decode(&bytes).is_ok(), "a FAIL this node wrote does not decode");
        }
        for e in &fx {
            if let gossip::Effect::Reply(b) | gossip::Effect::SendTo(_, b) | gossip::Effect::Broadcast(b) = e {
                assert!(msg::decode(b).is_ok(), "a message this node wrote does not decode");
            }
        }
        c.commit(&mut s);
        whole(&s);
    }
});

fn whole(s: &amalgam_cluster::State) {
    assert!(s.nodes.contains_key(&s.myself), "myself left the table");
    for (slot, o) in s.owner.iter().enumerate() {
        if let Some(o) = o {
            let n = s.nodes.get(o).expect("a slot owned by an unknown node");
            assert!(n.slots.has(slot), "owner's bitmap lacks its slot {slot}");
        }
    }
    for n in s.nodes.values() {
        for slot in n.slots.ranges().iter().flat_map(|&(a, b)| a..=b) {
            assert_eq!(s.owner[slot as usize], Some(n.name), "a bitmap claims slot {slot} it does not own");
        }
    }
    for v in s.migrating.values().chain(s.importing.values()) {
        assert!(s.nodes.contains_key(v), "an open slot names an unknown node");
    }
}
