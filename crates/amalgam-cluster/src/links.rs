//! CLUSTER LINKS (Redis 7.0): the bus's links to and from other nodes,
//! one map per link.
//!
//! The links belong to the bus thread (`bus.rs`); a command runs on a
//! worker. So the bus lists them here — after any change to the set of
//! links and at every cron round, for the buffers' sizes — and the
//! command answers from the last list: what it shows is at most one
//! cron period ([`crate::bus::CRON_MS`]) old, and never a link the bus
//! does not have or had not a moment ago.
//!
//! As Redis lists them (`clusterReplyLinks`: each node's outgoing link,
//! then its incoming one), only links bound to a node: an incoming link
//! counts once a known node has spoken on it.

use crate::node::Name;
use crate::Cluster;
use amalgam_protocol::resp::{push_array, push_bulk, push_int, push_map, Proto};
use std::sync::Mutex;

/// One link, as CLUSTER LINKS shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkInfo {
    /// The node at the other end.
    pub node: Name,
    /// This node opened it (`to`), or the other did (`from`).
    pub outgoing: bool,
    /// When it was made, milliseconds since the Unix epoch.
    pub created_ms: u64,
    /// Which events the bus waits for on it: `r` (a connected link is
    /// always read), `w` while output waits or a connect is under way.
    pub readable: bool,
    pub writable: bool,
    /// The output buffer's capacity and the bytes waiting in it.
    pub send_allocated: usize,
    pub send_used: usize,
}

/// The last list the bus made.
#[derive(Debug, Default)]
pub struct LinkTable(Mutex<Vec<LinkInfo>>);

impl Cluster {
    /// The bus's new list of its links (sorted here: by node, each
    /// node's outgoing link first, as Redis's walk of its nodes gives).
    pub fn set_links(&self, mut list: Vec<LinkInfo>) {
        list.sort_by(|a, b| a.node.cmp(&b.node).then(b.outgoing.cmp(&a.outgoing)));
        *self.links.0.lock().unwrap_or_else(|p| p.into_inner()) = list;
    }

    /// The last list.
    pub fn links(&self) -> Vec<LinkInfo> {
        self.links.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// CLUSTER LINKS's reply: an array of maps (RESP2: flat pairs) of
/// `direction`, `node`, `create-time`, `events`,
/// `send-buffer-allocated`, `send-buffer-used`, in Redis's order.
pub fn reply(c: &Cluster, proto: Proto, out: &mut Vec<u8>) {
    let list = c.links();
    push_array(out, list.len());
    for l in &list {
        push_map(out, 6, proto);
        push_bulk(out, b"direction");
        push_bulk(out, if l.outgoing { b"to" } else { b"from" });
        push_bulk(out, b"node");
        push_bulk(out, &l.node);
        push_bulk(out, b"create-time");
        push_int(out, l.created_ms as i64);
        push_bulk(out, b"events");
        let events: &[u8] = match (l.readable, l.writable) {
            (true, true) => b"rw",
            (true, false) => b"r",
            (false, true) => b"w",
            (false, false) => b"",
        };
        push_bulk(out, events);
        push_bulk(out, b"send-buffer-allocated");
        push_int(out, l.send_allocated as i64);
        push_bulk(out, b"send-buffer-used");
        push_int(out, l.send_used as i64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Config;

    #[test]
    fn links_are_listed_by_node_outgoing_first_as_maps() {
        let c = Cluster::in_memory(Config { enabled: true, ..Config::default() });
        let (a, b) = ([b'a'; 40], [b'b'; 40]);
        let link = |node, outgoing| LinkInfo {
            node,
            outgoing,
            created_ms: 7,
            readable: true,
            writable: !outgoing,
            send_allocated: 16,
            send_used: 3,
        };
        c.set_links(vec![link(b, false), link(a, false), link(a, true)]);
        let order: Vec<(Name, bool)> = c.links().iter().map(|l| (l.node, l.outgoing)).collect();
        assert_eq!(order, vec![(a, true), (a, false), (b, false)]);
        let mut out = Vec::new();
        reply(&c, Proto::Resp2, &mut out);
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("*3\r\n*12\r\n$9\r\ndirection\r\n$2\r\nto\r\n$4\r\nnode\r\n$40\r\n"), "{text}");
        assert!(text.contains("$6\r\nevents\r\n$2\r\nrw\r\n"));
        assert!(text.contains("$16\r\nsend-buffer-used\r\n:3\r\n"));
        let mut out = Vec::new();
        reply(&c, Proto::Resp3, &mut out);
        assert!(out.starts_with(b"*3\r\n%6\r\n"));
    }
}
