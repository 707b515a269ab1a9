//! redis-server 7.0.15's own bus messages, captured from its bus port
//! (a MEET it sent when told `CLUSTER MEET` an address, and the PONG
//! another redis-server answered it with): they decode, and what this
//! crate encodes for the same header is the same bytes.

use amalgam_cluster::msg::{self, Body, Type};

const MEET: &[u8] = include_bytes!("fixtures/redis-7.0.15-meet.bin");
const PONG: &[u8] = include_bytes!("fixtures/redis-7.0.15-pong.bin");

#[test]
fn redis_s_meet_and_pong_decode() {
    for (bytes, ty) in [(MEET, Type::Meet), (PONG, Type::Pong)] {
        let m = msg::decode(bytes).expect("a valid message");
        assert_eq!(m.header.ty, ty as u16);
        assert!(amalgam_cluster::node::is_name(&m.header.sender));
        assert!(m.header.primary.is_none());
        assert!(matches!(m.body, Body::Ping { .. }));
        // Re-encoded from what was decoded: Redis's bytes exactly.
        let Body::Ping { gossip, .. } = &m.body else { unreachable!() };
        let mut out = Vec::new();
        msg::encode_header(&m.header, gossip.len() as u16, 0, &mut out);
        for g in gossip {
            msg::encode_gossip(g, &mut out);
        }
        msg::finish(&mut out, 0);
        assert_eq!(out, bytes, "{ty:?}");
    }
    let meet = msg::decode(MEET).unwrap();
    assert_eq!(meet.header.port, 7301);
    assert_eq!(meet.header.cport, 17301);
    assert_eq!(meet.header.slots.count(), 8001);
}
