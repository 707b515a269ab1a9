//! The CLUSTER command (Redis 7.0's `clusterCommand`): every subcommand's
//! arguments, replies and error texts, written as RESP.

use crate::node::{self, flags, Name, Node};
use crate::slot::{ranges_text, slot_of, SLOTS};
use crate::{Cluster, Host, State, GETKEYSINSLOT_MAX};
use amalgam_protocol::resp::{
    push_array, push_bulk, push_error, push_int, push_map, push_simple, push_verbatim, Proto,
};

/// CLUSTER HELP's lines, as Redis 7.0 writes them.
const HELP: &[&str] = &[
    "CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ADDSLOTS <slot> [<slot> ...]",
    "    Assign slots to current node.",
    "ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Assign slots which are between <start-slot> and <end-slot> to current node.",
    "BUMPEPOCH",
    "    Advance the cluster config epoch.",
    "COUNT-FAILURE-REPORTS <node-id>",
    "    Return number of failure reports for <node-id>.",
    "COUNTKEYSINSLOT <slot>",
    "    Return the number of keys in <slot>.",
    "DELSLOTS <slot> [<slot> ...]",
    "    Delete slots information from current node.",
    "DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Delete slots information which are between <start-slot> and <end-slot> from current node.",
    "FAILOVER [FORCE|TAKEOVER]",
    "    Promote current replica node to being a master.",
    "FORGET <node-id>",
    "    Remove a node from the cluster.",
    "GETKEYSINSLOT <slot> <count>",
    "    Return key names stored by current node in a slot.",
    "FLUSHSLOTS",
    "    Delete current node own slots information.",
    "INFO",
    "    Return information about the cluster.",
    "KEYSLOT <key>",
    "    Return the hash slot for <key>.",
    "MEET <ip> <port> [<bus-port>]",
    "    Connect nodes into a working cluster.",
    "MYID",
    "    Return the node id.",
    "NODES",
    "    Return cluster configuration seen by node. Output format:",
    "    <id> <ip:port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
    "REPLICATE <node-id>",
    "    Configure current node as replica to <node-id>.",
    "RESET [HARD|SOFT]",
    "    Reset current node (default: soft).",
    "SET-CONFIG-EPOCH <epoch>",
    "    Set config epoch of current node.",
    "SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)",
    "    Set slot state.",
    "REPLICAS <node-id>",
    "    Return <node-id> replicas.",
    "SAVECONFIG",
    "    Force saving cluster configuration on disk.",
    "SLOTS",
    "    Return information about slots range mappings. Each range is made of:",
    "    start, end, master and replicas IP addresses, ports and ids",
    "SHARDS",
    "    Return information about slot range mappings and the nodes associated with them.",
    "LINKS",
    "    Return information about all network links between this node and its peers.",
    "    Output format is an array where each array element is a map containing attributes of a link",
    "HELP",
    "    Prints this help.",
];

const ERR_SYNTAX: &[u8] = b"ERR syntax error";
const ERR_NOT_INTEGER: &[u8] = b"ERR value is not an integer or out of range";
const ERR_INVALID_SLOT: &[u8] = b"ERR Invalid or out of range slot";

fn is(a: &[u8], word: &str) -> bool {
    a.eq_ignore_ascii_case(word.as_bytes())
}

fn int(a: &[u8]) -> Option<i64> {
    std::str::from_utf8(a).ok()?.parse().ok()
}

fn error(out: &mut Vec<u8>, text: &str) {
    push_error(out, text.as_bytes());
}

/// A slot argument (Redis's `getSlotOrReply`).
fn slot_arg(a: &[u8], out: &mut Vec<u8>) -> Option<usize> {
    match int(a) {
        Some(s) if (0..SLOTS as i64).contains(&s) => Some(s as usize),
        _ => {
            push_error(out, ERR_INVALID_SLOT);
            None
        }
    }
}

fn lookup(s: &State, name: &[u8]) -> Option<Name> {
    if !node::is_name(name) {
        return None;
    }
    let mut n = [0u8; node::NAME_LEN];
    n.copy_from_slice(name);
    s.nodes.contains_key(&n).then_some(n)
}

/// Runs `CLUSTER …` (`args[0]` is CLUSTER). The caller checked the
/// subcommand's arity against the command table and that cluster mode
/// is on.
pub fn run(c: &Cluster, host: &dyn Host, proto: Proto, args: &[&[u8]], out: &mut Vec<u8>) {
    let sub = args[1];
    let argc = args.len();
    // This node's replication offset, for SLOTS and SHARDS: read before
    // the state's lock is taken.
    let mine = if is(sub, "slots") || is(sub, "shards") { host.repl_offset() } else { 0 };
    let mut s = c.lock();
    if is(sub, "help") {
        push_array(out, HELP.len());
        for l in HELP {
            push_simple(out, l);
        }
    } else if is(sub, "info") {
        let text = info_text(&s);
        push_verbatim(out, proto, b"txt", text.as_bytes());
    } else if is(sub, "myid") {
        push_bulk(out, &s.myself);
    } else if is(sub, "nodes") {
        let text = nodes_text(&s, false);
        push_verbatim(out, proto, b"txt", text.as_bytes());
    } else if is(sub, "slots") {
        slots_reply(&s, mine, out);
    } else if is(sub, "shards") {
        shards_reply(&s, proto, mine, out);
    } else if is(sub, "links") {
        // From the bus's last list (links.rs), without the state's lock.
        drop(s);
        crate::links::reply(c, proto, out);
    } else if is(sub, "keyslot") {
        push_int(out, slot_of(args[2]) as i64);
    } else if is(sub, "countkeysinslot") {
        match int(args[2]) {
            None => push_error(out, ERR_NOT_INTEGER),
            Some(v) if !(0..SLOTS as i64).contains(&v) => error(out, "ERR Invalid slot"),
            Some(v) => {
                drop(s);
                push_int(out, host.count_keys_in_slot(v as u16) as i64);
            }
        }
    } else if is(sub, "getkeysinslot") {
        let (Some(slot), Some(max)) = (int(args[2]), int(args[3])) else {
            return push_error(out, ERR_NOT_INTEGER);
        };
        if !(0..SLOTS as i64).contains(&slot) || max < 0 {
            return error(out, "ERR Invalid slot or number of keys");
        }
        drop(s);
        let keys = c.keys_in_slot(host, slot as u16, (max as usize).min(GETKEYSINSLOT_MAX));
        push_array(out, keys.len());
        for k in &keys {
            push_bulk(out, k);
        }
    } else if is(sub, "addslots") || is(sub, "delslots") {
        let del = is(sub, "delslots");
        let mut slots = Vec::with_capacity(argc - 2);
        for a in &args[2..] {
            let Some(slot) = slot_arg(a, out) else { return };
            slots.push((slot, slot));
        }
        assign(c, &mut s, &slots, del, out);
    } else if is(sub, "addslotsrange") || is(sub, "delslotsrange") {
        let del = is(sub, "delslotsrange");
        if argc % 2 == 1 {
            let name = if del { "delslotsrange" } else { "addslotsrange" };
            return error(out, &format!("ERR wrong number of arguments for 'cluster|{name}' command"));
        }
        let mut ranges = Vec::new();
        for pair in args[2..].chunks(2) {
            let Some(a) = slot_arg(pair[0], out) else { return };
            let Some(b) = slot_arg(pair[1], out) else { return };
            if a > b {
                return error(out, &format!("ERR start slot number {a} is greater than end slot number {b}"));
            }
            ranges.push((a, b));
        }
        assign(c, &mut s, &ranges, del, out);
    } else if is(sub, "flushslots") {
        if host.holds_keys() {
            return error(out, "ERR DB must be empty to perform CLUSTER FLUSHSLOTS.");
        }
        let me = s.myself;
        for slot in 0..SLOTS {
            if s.owner[slot] == Some(me) {
                s.assign(slot, None);
            }
        }
        c.commit(&mut s);
        push_simple(out, "OK");
    } else if is(sub, "setslot") && argc >= 4 {
        setslot(c, host, &mut s, args, out);
    } else if is(sub, "set-config-epoch") {
        let Some(epoch) = int(args[2]) else { return push_error(out, ERR_NOT_INTEGER) };
        if epoch < 0 {
            error(out, &format!("ERR Invalid config epoch specified: {epoch}"));
        } else if s.nodes.len() > 1 {
            error(out, "ERR The user can assign a config epoch only when the node does not know any other node.");
        } else if s.me().config_epoch != 0 {
            error(out, "ERR Node config epoch is already non-zero");
        } else {
            s.me_mut().config_epoch = epoch as u64;
            log::info!("configEpoch set to {epoch} via CLUSTER SET-CONFIG-EPOCH");
            s.current_epoch = s.current_epoch.max(epoch as u64);
            c.commit_durable(&mut s);
            push_simple(out, "OK");
        }
    } else if is(sub, "bumpepoch") {
        let bumped = bump_epoch(&mut s);
        let epoch = s.me().config_epoch;
        c.commit_durable(&mut s);
        push_simple(out, &format!("{} {epoch}", if bumped { "BUMPED" } else { "STILL" }));
    } else if is(sub, "saveconfig") {
        match c.save(&s) {
            Ok(()) => push_simple(out, "OK"),
            Err(e) => error(out, &format!("ERR error saving the cluster node config: {e}")),
        }
    } else if is(sub, "count-failure-reports") {
        match lookup(&s, args[2]) {
            None => unknown_node(out, args[2]),
            Some(n) => push_int(out, s.nodes[&n].fail_reports.len() as i64),
        }
    } else if is(sub, "forget") {
        match lookup(&s, args[2]) {
            None => unknown_node(out, args[2]),
            Some(n) if n == s.myself => error(out, "ERR I tried hard but I can't forget myself..."),
            Some(n) if s.me().primary == Some(n) => error(out, "ERR Can't forget my master!"),
            Some(n) => {
                for slot in 0..SLOTS {
                    if s.owner[slot] == Some(n) {
                        s.assign(slot, None);
                    }
                }
                s.nodes.remove(&n);
                c.commit(&mut s);
                push_simple(out, "OK");
            }
        }
    } else if is(sub, "replicas") || is(sub, "slaves") {
        match lookup(&s, args[2]) {
            None => unknown_node(out, args[2]),
            Some(n) if s.nodes[&n].is(flags::SLAVE) => error(out, "ERR The specified node is not a master"),
            Some(n) => {
                let lines: Vec<String> =
                    s.nodes.values().filter(|r| r.primary == Some(n)).map(|r| node_line(&s, r)).collect();
                push_array(out, lines.len());
                for l in &lines {
                    push_bulk(out, l.as_bytes());
                }
            }
        }
    } else if is(sub, "reset") {
        let hard = match args.get(2) {
            None => false,
            Some(a) if is(a, "soft") && argc == 3 => false,
            Some(a) if is(a, "hard") && argc == 3 => true,
            Some(_) => return push_error(out, ERR_SYNTAX),
        };
        if s.me().is_primary() && host.holds_keys() {
            return error(out, "ERR CLUSTER RESET can't be called with master nodes containing keys");
        }
        if s.me().is(flags::SLAVE) {
            host.follow(None);
        }
        reset(&mut s, hard);
        c.commit(&mut s);
        push_simple(out, "OK");
    } else if is(sub, "replicate") {
        match lookup(&s, args[2]) {
            None => unknown_node(out, args[2]),
            Some(n) if n == s.myself => error(out, "ERR Can't replicate myself"),
            Some(n) if s.nodes[&n].is(flags::SLAVE) => error(out, "ERR I can only replicate a master, not a replica."),
            Some(_) if s.me().is_primary() && (!s.me().slots.is_empty() || host.holds_keys()) => {
                error(out, "ERR To set a master the node must be empty and without assigned slots.")
            }
            Some(n) => {
                set_my_primary(&mut s, n);
                let p = &s.nodes[&n];
                host.follow(Some((p.ip.clone(), p.port)));
                c.commit(&mut s);
                push_simple(out, "OK");
            }
        }
    } else if is(sub, "failover") {
        let mode = match args.get(2) {
            None => crate::failover::Mode::Default,
            Some(a) if is(a, "force") && argc == 3 => crate::failover::Mode::Force,
            Some(a) if is(a, "takeover") && argc == 3 => crate::failover::Mode::Takeover,
            Some(_) => return push_error(out, ERR_SYNTAX),
        };
        match crate::failover::start_manual(c, &mut s, mode, crate::now_ms(), host.repl_offset()) {
            Err(e) => error(out, e),
            Ok(fx) => {
                s.outbox.extend(fx);
                c.commit_durable(&mut s);
                drop(s);
                c.wake();
                push_simple(out, "OK");
            }
        }
    } else if is(sub, "meet") && (argc == 4 || argc == 5) {
        let port = int(args[3]).filter(|p| (0..=65535).contains(p));
        let Some(port) = port else {
            return error(out, &format!("ERR Invalid TCP base port specified: {}", String::from_utf8_lossy(args[3])));
        };
        let cport = if argc == 5 {
            let Some(cp) = int(args[4]).filter(|p| (0..=65535).contains(p)) else {
                return error(
                    out,
                    &format!("ERR Invalid TCP bus port specified: {}", String::from_utf8_lossy(args[4])),
                );
            };
            cp
        } else {
            port + i64::from(crate::PORT_INCR)
        };
        let ip = std::str::from_utf8(args[2]).ok().and_then(|t| t.parse::<std::net::IpAddr>().ok());
        match ip {
            Some(ip) if port > 0 && (1..=65535).contains(&cport) => {
                meet(&mut s, &ip.to_string(), port as u16, cport as u16);
                push_simple(out, "OK");
            }
            _ => error(
                out,
                &format!(
                    "ERR Invalid node address specified: {}:{}",
                    String::from_utf8_lossy(args[2]),
                    String::from_utf8_lossy(args[3])
                ),
            ),
        }
    } else {
        let name = String::from_utf8_lossy(sub);
        error(out, &format!("ERR unknown subcommand or wrong number of arguments for '{name}'. Try CLUSTER HELP."));
    }
}

/// Redis's `clusterStartHandshake`: a node under a random name, flagged
/// HANDSHAKE and MEET, that the bus's cron connects to; none if a
/// handshake with that address is already under way.
fn meet(s: &mut State, ip: &str, port: u16, cport: u16) {
    let busy = s.nodes.values().any(|n| n.is(flags::HANDSHAKE) && n.ip == ip && n.port == port && n.cport == cport);
    if busy {
        return;
    }
    let mut n = Node::new(node::random_name(), flags::HANDSHAKE | flags::MEET, crate::now_ms());
    n.ip = ip.to_string();
    n.port = port;
    n.cport = cport;
    s.nodes.insert(n.name, n);
}

/// Redis's `clusterSetMaster`: this node becomes a replica of `p`,
/// giving up its slots and closing its open ones.
pub(crate) fn set_my_primary(s: &mut State, p: Name) {
    let me = s.myself;
    if s.me().is_primary() {
        for slot in 0..SLOTS {
            if s.owner[slot] == Some(me) {
                s.assign(slot, None);
            }
        }
        s.migrating.clear();
        s.importing.clear();
    }
    let m = s.me_mut();
    m.flags = (m.flags & !(flags::MASTER | flags::MIGRATE_TO)) | flags::SLAVE;
    m.primary = Some(p);
    // A primary that has (had) a replica is one a replica may migrate to
    // once orphaned (Redis's `clusterNodeAddSlave`).
    if let Some(pn) = s.nodes.get_mut(&p) {
        pn.flags |= flags::MIGRATE_TO;
    }
}

fn unknown_node(out: &mut Vec<u8>, name: &[u8]) {
    error(out, &format!("ERR Unknown node {}", String::from_utf8_lossy(name)));
}

/// ADDSLOTS/DELSLOTS and their RANGE forms (Redis's
/// `checkSlotAssignmentsOrReply`, then `clusterAddSlot`/`clusterDelSlot`):
/// every slot checked before any is changed.
fn assign(c: &Cluster, s: &mut State, ranges: &[(usize, usize)], del: bool, out: &mut Vec<u8>) {
    let mut seen = crate::slot::SlotSet::default();
    for &(a, b) in ranges {
        for slot in a..=b {
            if del && s.owner[slot].is_none() {
                return error(out, &format!("ERR Slot {slot} is already unassigned"));
            } else if !del && s.owner[slot].is_some() {
                return error(out, &format!("ERR Slot {slot} is already busy"));
            }
            if seen.has(slot) {
                return error(out, &format!("ERR Slot {slot} specified multiple times"));
            }
            seen.set(slot, true);
        }
    }
    let me = s.myself;
    for &(a, b) in ranges {
        for slot in a..=b {
            if del {
                s.assign(slot, None);
            } else {
                // Owning it ends an import (Redis clears
                // importing_slots_from).
                s.importing.remove(&(slot as u16));
                s.assign(slot, Some(me));
            }
        }
    }
    c.commit(s);
    push_simple(out, "OK");
}

/// CLUSTER SETSLOT slot IMPORTING|MIGRATING|NODE id, STABLE.
fn setslot(c: &Cluster, host: &dyn Host, s: &mut State, args: &[&[u8]], out: &mut Vec<u8>) {
    if s.me().is(flags::SLAVE) {
        return error(out, "ERR Please use SETSLOT only with masters.");
    }
    let Some(slot) = slot_arg(args[2], out) else { return };
    let action = args[3];
    let argc = args.len();
    let target = |s: &State, out: &mut Vec<u8>, unknown: &str| -> Option<Name> {
        match lookup(s, args[4]) {
            None => {
                error(out, &format!("ERR {unknown} {}", String::from_utf8_lossy(args[4])));
                None
            }
            Some(n) if s.nodes[&n].is(flags::SLAVE) => {
                error(out, "ERR Target node is not a master");
                None
            }
            n => n,
        }
    };
    let me = s.myself;
    let key = slot as u16;
    if is(action, "migrating") && argc == 5 {
        if s.owner[slot] != Some(me) {
            return error(out, &format!("ERR I'm not the owner of hash slot {slot}"));
        }
        let Some(n) = target(s, out, "I don't know about node") else { return };
        s.migrating.insert(key, n);
    } else if is(action, "importing") && argc == 5 {
        if s.owner[slot] == Some(me) {
            return error(out, &format!("ERR I'm already the owner of hash slot {slot}"));
        }
        let Some(n) = target(s, out, "I don't know about node") else { return };
        s.importing.insert(key, n);
    } else if is(action, "stable") && argc == 4 {
        s.migrating.remove(&key);
        s.importing.remove(&key);
    } else if is(action, "node") && argc == 5 {
        let Some(n) = target(s, out, "Unknown node") else { return };
        let keys = host.count_keys_in_slot(key);
        if s.owner[slot] == Some(me) && n != me && keys != 0 {
            return error(
                out,
                &format!(
                    "ERR Can't assign hashslot {slot} to a different node while I still hold keys for this hash slot."
                ),
            );
        }
        if keys == 0 {
            s.migrating.remove(&key);
        }
        s.assign(slot, Some(n));
        if n == me && s.importing.remove(&key).is_some() && bump_epoch(s) {
            log::warn!("configEpoch updated after importing slot {slot}");
        }
    } else {
        return error(out, "ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP");
    }
    c.commit(s);
    push_simple(out, "OK");
}

/// Redis's `clusterBumpConfigEpochWithoutConsensus`: a new config epoch
/// for this node unless it already has the greatest.
pub(crate) fn bump_epoch(s: &mut State) -> bool {
    let max = s.nodes.values().map(|n| n.config_epoch).max().unwrap_or(0).max(s.current_epoch);
    let mine = s.me().config_epoch;
    if mine == 0 || mine != max {
        s.current_epoch += 1;
        let e = s.current_epoch;
        s.me_mut().config_epoch = e;
        true
    } else {
        false
    }
}

/// Redis's `clusterReset`: this node alone again, without slots; a hard
/// reset also zeroes the epochs and takes a new name.
fn reset(s: &mut State, hard: bool) {
    s.migrating.clear();
    s.importing.clear();
    for slot in 0..SLOTS {
        s.assign(slot, None);
    }
    let me = s.myself;
    s.nodes.retain(|n, _| *n == me);
    {
        let m = s.me_mut();
        m.flags = (m.flags & !flags::SLAVE) | flags::MASTER;
        m.primary = None;
    }
    if hard {
        s.current_epoch = 0;
        s.last_vote_epoch = 0;
        let mut m = s.nodes.remove(&me).expect("myself");
        m.config_epoch = 0;
        m.name = node::random_name();
        s.myself = m.name;
        s.nodes.insert(m.name, m);
        log::info!("Node hard reset, now I'm {}", node::text(&s.myself));
    }
}

/// CLUSTER INFO's text (Redis 7.0's fields, in its order).
fn info_text(s: &State) -> String {
    let assigned = s.owner.iter().filter(|o| o.is_some()).count();
    let (mut pfail, mut fail) = (0, 0);
    for o in s.owner.iter().flatten() {
        let n = &s.nodes[o];
        if n.is(flags::FAIL) {
            fail += 1;
        } else if n.is(flags::PFAIL) {
            pfail += 1;
        }
    }
    let me = s.me();
    let my_epoch = match me.primary.and_then(|p| s.nodes.get(&p)) {
        Some(p) if me.is(flags::SLAVE) => p.config_epoch,
        _ => me.config_epoch,
    };
    let mut t = format!(
        "cluster_state:{}\r\ncluster_slots_assigned:{assigned}\r\ncluster_slots_ok:{}\r\ncluster_slots_pfail:{pfail}\r\n\
         cluster_slots_fail:{fail}\r\ncluster_known_nodes:{}\r\ncluster_size:{}\r\ncluster_current_epoch:{}\r\n\
         cluster_my_epoch:{my_epoch}\r\n",
        if s.ok { "ok" } else { "fail" },
        assigned - pfail - fail,
        s.nodes.len(),
        s.size,
        s.current_epoch,
    );
    for (dir, counts) in [("sent", &s.sent), ("received", &s.received)] {
        for (i, n) in counts.iter().enumerate().filter(|(_, n)| **n != 0) {
            t.push_str(&format!("cluster_stats_messages_{}_{dir}:{n}\r\n", crate::msg::type_name(i as u16)));
        }
        t.push_str(&format!("cluster_stats_messages_{dir}:{}\r\n", counts.iter().sum::<u64>()));
    }
    t.push_str("total_cluster_links_buffer_limit_exceeded:0\r\n");
    t
}

/// One node's CLUSTER NODES line (Redis's `clusterGenNodeDescription`),
/// without the newline; myself's open slots follow its own (`[slot->-to]`
/// migrating, `[slot-<-from]` importing), in CLUSTER NODES and nodes.conf.
pub fn node_line(s: &State, n: &Node) -> String {
    // A replica shows its primary's config epoch, as Redis 7.0 does.
    let epoch = match n.primary.and_then(|p| s.nodes.get(&p)) {
        Some(p) if n.is(flags::SLAVE) => p.config_epoch,
        _ => n.config_epoch,
    };
    let mut l = format!("{} {}:{}@{}", node::text(&n.name), n.ip, n.port, n.cport);
    if !n.hostname.is_empty() {
        l.push(',');
        l.push_str(&n.hostname);
    }
    let primary = n.primary.map_or_else(|| "-".to_string(), |p| node::text(&p).to_string());
    let linked = n.is(flags::MYSELF) || n.linked;
    l.push_str(&format!(
        " {} {primary} {} {} {} {}",
        n.flags_text(),
        n.ping_sent,
        n.pong_received,
        epoch,
        if linked { "connected" } else { "disconnected" }
    ));
    let ranges = n.slots.ranges();
    if !ranges.is_empty() {
        l.push(' ');
        l.push_str(&ranges_text(&ranges));
    }
    if n.is(flags::MYSELF) {
        for (slot, to) in &s.migrating {
            l.push_str(&format!(" [{slot}->-{}]", node::text(to)));
        }
        for (slot, from) in &s.importing {
            l.push_str(&format!(" [{slot}-<-{}]", node::text(from)));
        }
    }
    l
}

/// CLUSTER NODES' text: one line per node (handshake nodes left out of
/// nodes.conf, as Redis filters them when saving).
pub fn nodes_text(s: &State, conf: bool) -> String {
    let mut t = String::new();
    for n in s.nodes.values() {
        if conf && n.is(flags::HANDSHAKE) {
            continue;
        }
        t.push_str(&node_line(s, n));
        t.push('\n');
    }
    t
}

/// A node as CLUSTER SLOTS lists it: ip, port, name, and the map of
/// other endpoints (empty here: no hostname is announced separately).
fn slots_node(out: &mut Vec<u8>, n: &Node) {
    let extra = usize::from(!n.hostname.is_empty());
    push_array(out, 4);
    push_bulk(out, n.ip.as_bytes());
    push_int(out, n.port as i64);
    push_bulk(out, &n.name);
    // Redis 7.0 writes this map as an array in RESP2.
    push_array(out, 2 * extra);
    if extra == 1 {
        push_bulk(out, b"hostname");
        push_bulk(out, n.hostname.as_bytes());
    }
}

/// A node's replication offset as SLOTS and SHARDS show it: this node's
/// from the server (`mine`: its own entry is not updated, as Redis's),
/// another's from its last message's header.
fn offset_of(n: &Node, mine: u64) -> u64 {
    if n.is(flags::MYSELF) {
        mine
    } else {
        n.repl_offset
    }
}

/// CLUSTER SLOTS: each run of slots with one owner, in slot order, with
/// the owner then its replicas: those not failed whose replication offset
/// is not 0 (Redis 7.0's `isReplicaAvailable`: a replica that has not
/// finished its first sync is left out).
fn slots_reply(s: &State, mine: u64, out: &mut Vec<u8>) {
    let mut runs: Vec<(usize, usize, Name)> = Vec::new();
    for (slot, o) in s.owner.iter().enumerate() {
        let Some(o) = o else { continue };
        match runs.last_mut() {
            Some((_, end, owner)) if *owner == *o && *end + 1 == slot => *end = slot,
            _ => runs.push((slot, slot, *o)),
        }
    }
    push_array(out, runs.len());
    for (a, b, o) in runs {
        let replicas: Vec<&Node> = s
            .nodes
            .values()
            .filter(|r| r.primary == Some(o) && !r.is(flags::FAIL | flags::HANDSHAKE) && offset_of(r, mine) != 0)
            .collect();
        push_array(out, 3 + replicas.len());
        push_int(out, a as i64);
        push_int(out, b as i64);
        slots_node(out, &s.nodes[&o]);
        for r in replicas {
            slots_node(out, r);
        }
    }
}

/// CLUSTER SHARDS: each primary with its slots and its nodes; a node's
/// health is Redis 7.0's: `fail` with the FAIL flag, `loading` for a
/// replica whose replication offset is 0, else `online`.
fn shards_reply(s: &State, proto: Proto, mine: u64, out: &mut Vec<u8>) {
    let primaries: Vec<&Node> = s.nodes.values().filter(|n| n.is_primary() && !n.is(flags::HANDSHAKE)).collect();
    push_array(out, primaries.len());
    for p in primaries {
        push_map(out, 2, proto);
        push_bulk(out, b"slots");
        let ranges = p.slots.ranges();
        push_array(out, 2 * ranges.len());
        for (a, b) in ranges {
            push_int(out, a as i64);
            push_int(out, b as i64);
        }
        push_bulk(out, b"nodes");
        let members: Vec<&Node> =
            std::iter::once(p).chain(s.nodes.values().filter(|r| r.primary == Some(p.name))).collect();
        push_array(out, members.len());
        for n in members {
            let host = usize::from(!n.hostname.is_empty());
            push_map(out, 7 + host, proto);
            push_bulk(out, b"id");
            push_bulk(out, &n.name);
            push_bulk(out, b"port");
            push_int(out, n.port as i64);
            push_bulk(out, b"ip");
            push_bulk(out, n.ip.as_bytes());
            push_bulk(out, b"endpoint");
            push_bulk(out, n.ip.as_bytes());
            if host == 1 {
                push_bulk(out, b"hostname");
                push_bulk(out, n.hostname.as_bytes());
            }
            push_bulk(out, b"role");
            push_bulk(out, if n.is_primary() { b"master" as &[u8] } else { b"replica" });
            let offset = offset_of(n, mine);
            push_bulk(out, b"replication-offset");
            push_int(out, offset as i64);
            push_bulk(out, b"health");
            let health: &[u8] = if n.is(flags::FAIL) {
                b"fail"
            } else if !n.is_primary() && offset == 0 {
                b"loading"
            } else {
                b"online"
            };
            push_bulk(out, health);
        }
    }
}
