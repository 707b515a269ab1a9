//! The nodes a cluster node knows and the cluster's configuration as it
//! sees it (Redis's `clusterNode` and `clusterState`, cluster.h), and
//! their text form: CLUSTER NODES' lines, which are also `nodes.conf`'s
//! (Redis's `clusterGenNodeDescription` and `clusterLoadConfig`).

use crate::slot::{SlotSet, SLOTS};
use std::collections::BTreeMap;

/// A node's name: 40 hex digits (Redis's `CLUSTER_NAMELEN`).
pub const NAME_LEN: usize = 40;

/// Redis's node flags (cluster.h `CLUSTER_NODE_*`), the bits the bus
/// carries in a header's and a gossip entry's `flags`.
pub mod flags {
    pub const MASTER: u16 = 1;
    pub const SLAVE: u16 = 2;
    pub const PFAIL: u16 = 4;
    pub const FAIL: u16 = 8;
    pub const MYSELF: u16 = 16;
    pub const HANDSHAKE: u16 = 32;
    pub const NOADDR: u16 = 64;
    pub const MEET: u16 = 128;
    pub const MIGRATE_TO: u16 = 256;
    pub const NOFAILOVER: u16 = 512;
}

/// A node name, as ASCII hex.
pub type Name = [u8; NAME_LEN];

/// A new random node name (Redis's `getRandomHexChars`): from
/// /dev/urandom, or std's per-process random hasher keys and the clock
/// where that cannot be read.
pub fn random_name() -> Name {
    use std::io::Read;
    let mut raw = [0u8; NAME_LEN / 2];
    let read = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut raw));
    if read.is_err() {
        use std::hash::BuildHasher;
        let s = std::collections::hash_map::RandomState::new();
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        for (i, chunk) in raw.chunks_mut(8).enumerate() {
            let w = s.hash_one((t, i, std::process::id())).to_le_bytes();
            chunk.copy_from_slice(&w[..chunk.len()]);
        }
    }
    let mut name = [0u8; NAME_LEN];
    for (i, b) in raw.iter().enumerate() {
        name[2 * i] = b"0123456789abcdef"[(b >> 4) as usize];
        name[2 * i + 1] = b"0123456789abcdef"[(b & 15) as usize];
    }
    name
}

/// True if `s` is a node name: 40 lowercase or uppercase hex digits
/// (Redis's `verifyClusterNodeId` takes any hex digit).
pub fn is_name(s: &[u8]) -> bool {
    s.len() == NAME_LEN && s.iter().all(u8::is_ascii_hexdigit)
}

/// The text of a name.
pub fn text(n: &Name) -> &str {
    std::str::from_utf8(n).unwrap_or("")
}

/// One node of the cluster, as this node knows it.
#[derive(Debug, Clone)]
pub struct Node {
    pub name: Name,
    pub flags: u16,
    /// Its primary's name, for a replica.
    pub primary: Option<Name>,
    pub config_epoch: u64,
    pub slots: SlotSet,
    /// The address clients reach it at (empty while unknown).
    pub ip: String,
    pub hostname: String,
    pub port: u16,
    /// The plaintext port when `port` is TLS (0: none).
    pub pport: u16,
    /// The cluster bus port.
    pub cport: u16,
    /// Milliseconds since the Unix epoch: the last PING sent and not yet
    /// answered (0: none), the last PONG received.
    pub ping_sent: u64,
    pub pong_received: u64,
    /// When anything was last received from it, when it was marked FAIL.
    pub data_received: u64,
    pub fail_time: u64,
    /// The replication offset it last announced.
    pub repl_offset: u64,
    /// Nodes that said it failed, and when (Redis's fail reports).
    pub fail_reports: Vec<(Name, u64)>,
    /// When this node object was made (a handshake node is dropped
    /// after the handshake timeout).
    pub created: u64,
    /// Whether an outgoing link to it is connected.
    pub linked: bool,
    /// When this node last voted for a replica of it (a primary).
    pub voted_time: u64,
    /// Since when it has been seen orphaned (a primary with slots and no
    /// working replica; 0: not orphaned), by `migration.rs`.
    pub orphaned_time: u64,
}

impl Node {
    pub fn new(name: Name, flags: u16, now: u64) -> Node {
        Node {
            name,
            flags,
            primary: None,
            config_epoch: 0,
            slots: SlotSet::default(),
            ip: String::new(),
            hostname: String::new(),
            port: 0,
            pport: 0,
            cport: 0,
            ping_sent: 0,
            pong_received: 0,
            data_received: 0,
            fail_time: 0,
            repl_offset: 0,
            fail_reports: Vec::new(),
            created: now,
            linked: false,
            voted_time: 0,
            orphaned_time: 0,
        }
    }

    pub fn is(&self, flag: u16) -> bool {
        self.flags & flag != 0
    }

    pub fn is_primary(&self) -> bool {
        self.is(flags::MASTER)
    }

    /// The flags' words, as CLUSTER NODES writes them
    /// (`representClusterNodeFlags`).
    pub fn flags_text(&self) -> String {
        const WORDS: &[(u16, &str)] = &[
            (flags::MYSELF, "myself"),
            (flags::MASTER, "master"),
            (flags::SLAVE, "slave"),
            (flags::PFAIL, "fail?"),
            (flags::FAIL, "fail"),
            (flags::HANDSHAKE, "handshake"),
            (flags::NOADDR, "noaddr"),
            (flags::NOFAILOVER, "nofailover"),
        ];
        let words: Vec<&str> = WORDS.iter().filter(|(f, _)| self.is(*f)).map(|(_, w)| *w).collect();
        if words.is_empty() {
            "noflags".into()
        } else {
            words.join(",")
        }
    }
}

/// What the `vars` line of nodes.conf and the rest of the file hold.
#[derive(Debug, Default)]
pub struct Loaded {
    pub nodes: Vec<Node>,
    pub myself: Option<Name>,
    pub current_epoch: u64,
    pub last_vote_epoch: u64,
    /// Slots this node migrates to / imports from another (by name).
    pub migrating: BTreeMap<u16, Name>,
    pub importing: BTreeMap<u16, Name>,
}

/// Reads nodes.conf's text (Redis's `clusterLoadConfig`): one node per
/// line as CLUSTER NODES writes it, and a `vars` line. Any line that
/// does not parse is an error naming it, as Redis refuses to start with
/// "Unrecoverable error: corrupted cluster config file".
pub fn parse_config(text: &str, now: u64) -> Result<Loaded, String> {
    let mut out = Loaded::default();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split(' ').filter(|w| !w.is_empty()).collect();
        let bad = || format!("Unrecoverable error: corrupted cluster config file \"{line}\" (line {}).", i + 1);
        if f[0] == "vars" {
            let mut j = 1;
            while j + 1 < f.len() {
                match f[j] {
                    "currentEpoch" => out.current_epoch = f[j + 1].parse().map_err(|_| bad())?,
                    "lastVoteEpoch" => out.last_vote_epoch = f[j + 1].parse().map_err(|_| bad())?,
                    _ => {} // Redis skips an unknown var with a log line.
                }
                j += 2;
            }
            continue;
        }
        if f.len() < 8 || !is_name(f[0].as_bytes()) {
            return Err(bad());
        }
        let mut name = [0u8; NAME_LEN];
        name.copy_from_slice(f[0].as_bytes());
        let mut n = Node::new(name, 0, now);
        // ip:port@cport[,hostname]
        let (addr, hostname) = f[1].split_once(',').unwrap_or((f[1], ""));
        let (hostport, cport) = addr.split_once('@').ok_or_else(bad)?;
        let (ip, port) = hostport.rsplit_once(':').ok_or_else(bad)?;
        n.ip = ip.into();
        n.hostname = hostname.into();
        n.port = port.parse().map_err(|_| bad())?;
        n.cport = cport.parse().map_err(|_| bad())?;
        for w in f[2].split(',') {
            n.flags |= match w {
                "myself" => flags::MYSELF,
                "master" => flags::MASTER,
                "slave" => flags::SLAVE,
                "fail?" => flags::PFAIL,
                "fail" => flags::FAIL,
                "handshake" => flags::HANDSHAKE,
                "noaddr" => flags::NOADDR,
                "nofailover" => flags::NOFAILOVER,
                "noflags" => 0,
                _ => return Err(bad()),
            };
        }
        if n.is(flags::MYSELF) {
            out.myself = Some(name);
        }
        if f[3] != "-" {
            if !is_name(f[3].as_bytes()) {
                return Err(bad());
            }
            let mut p = [0u8; NAME_LEN];
            p.copy_from_slice(f[3].as_bytes());
            n.primary = Some(p);
        }
        n.config_epoch = f[6].parse().map_err(|_| bad())?;
        for s in &f[8..] {
            if let Some(inner) = s.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
                // [slot->-name] migrating, [slot-<-name] importing.
                let (slot, dir, other) = if let Some((a, b)) = inner.split_once("->-") {
                    (a, true, b)
                } else if let Some((a, b)) = inner.split_once("-<-") {
                    (a, false, b)
                } else {
                    return Err(bad());
                };
                let slot: u16 = slot.parse().ok().filter(|&s: &u16| (s as usize) < SLOTS).ok_or_else(bad)?;
                if !is_name(other.as_bytes()) {
                    return Err(bad());
                }
                let mut o = [0u8; NAME_LEN];
                o.copy_from_slice(other.as_bytes());
                if dir {
                    out.migrating.insert(slot, o);
                } else {
                    out.importing.insert(slot, o);
                }
                continue;
            }
            let (a, b) = s.split_once('-').unwrap_or((s, s));
            let a: usize = a.parse().map_err(|_| bad())?;
            let b: usize = b.parse().map_err(|_| bad())?;
            if a > b || b >= SLOTS {
                return Err(bad());
            }
            for slot in a..=b {
                n.slots.set(slot, true);
            }
        }
        out.nodes.push(n);
    }
    if out.myself.is_none() && !out.nodes.is_empty() {
        return Err("Unrecoverable error: corrupted cluster config file: no node is myself.".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_redis_writes() {
        let conf = "\
a1b2c3d4e5f60718293a4b5c6d7e8f9012345678 127.0.0.1:30001@40001 myself,master - 0 1700000000000 1 connected 0-5460 [5461->-b1b2c3d4e5f60718293a4b5c6d7e8f9012345678]
b1b2c3d4e5f60718293a4b5c6d7e8f9012345678 127.0.0.1:30002@40002,host-b master - 0 1700000000001 2 connected 5461-10922
c1b2c3d4e5f60718293a4b5c6d7e8f9012345678 127.0.0.1:30003@40003 slave a1b2c3d4e5f60718293a4b5c6d7e8f9012345678 0 0 1 connected
vars currentEpoch 6 lastVoteEpoch 2
";
        let l = parse_config(conf, 0).unwrap();
        assert_eq!(l.nodes.len(), 3);
        assert_eq!(text(&l.myself.unwrap()), "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678");
        assert_eq!((l.current_epoch, l.last_vote_epoch), (6, 2));
        assert_eq!(l.nodes[0].slots.count(), 5461);
        assert_eq!(l.migrating.len(), 1);
        assert_eq!(l.nodes[1].hostname, "host-b");
        assert_eq!(l.nodes[1].cport, 40002);
        assert!(l.nodes[2].is(flags::SLAVE) && l.nodes[2].primary.is_some());
        assert_eq!(l.nodes[0].flags_text(), "myself,master");
    }

    #[test]
    fn refuses_a_broken_file() {
        assert!(parse_config("zz 127.0.0.1:1@2 master - 0 0 0 connected\n", 0).is_err());
        let one = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678 127.0.0.1:1@2 myself,master - 0 0 0 connected 5-3\n";
        assert!(parse_config(one, 0).is_err());
        let one = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678 127.0.0.1:1@2 myself,master - 0 0 0 connected 16384\n";
        assert!(parse_config(one, 0).is_err());
    }

    #[test]
    fn names_are_hex() {
        let n = random_name();
        assert!(is_name(&n));
        assert_ne!(n, random_name());
    }
}
