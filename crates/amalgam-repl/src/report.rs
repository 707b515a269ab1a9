//! What a replication node reports of itself: ROLE's reply and INFO's
//! replication section, in Redis's fields and order.

use crate::{lock, unix_now, Peer, Replication, Role};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// ROLE's reply.
pub fn role(r: &Replication, out: &mut Vec<u8>) {
    use amalgam_protocol::resp::{push_array, push_bulk, push_int};
    match &*lock(&r.role) {
        Role::Primary => {
            push_array(out, 3);
            push_bulk(out, b"master");
            push_int(out, r.backlog.offset() as i64);
            let peers = lock(&r.peers);
            let online: Vec<_> = peers.iter().filter(|p| p.online.load(Ordering::Relaxed)).collect();
            push_array(out, online.len());
            for p in online {
                push_array(out, 3);
                push_bulk(out, p.ip.as_bytes());
                push_bulk(out, p.port.to_string().as_bytes());
                push_bulk(out, p.ack.load(Ordering::Relaxed).to_string().as_bytes());
            }
        }
        Role::Replica(l) => {
            push_array(out, 5);
            push_bulk(out, b"slave");
            push_bulk(out, l.host.as_bytes());
            push_int(out, i64::from(l.port));
            push_bulk(out, lock(&l.state).as_bytes());
            let off = if l.up.load(Ordering::Relaxed) { r.backlog.offset() as i64 } else { -1 };
            push_int(out, off);
        }
    }
}

/// INFO's replication section, as `field` lines.
/// `failover_state`: FAILOVER's `master_failover_state`.
pub fn info(r: &Replication, failover_state: &str, field: &mut dyn FnMut(&str, &dyn std::fmt::Display)) {
    let (replid, replid2, offset, second) = r.backlog.ids();
    let role = lock(&r.role);
    match &*role {
        Role::Primary => field("role", &"master"),
        Role::Replica(l) => {
            let up = l.up.load(Ordering::Relaxed);
            field("role", &"slave");
            field("master_host", &l.host);
            field("master_port", &l.port);
            field("master_link_status", &if up { "up" } else { "down" });
            let last = l.last_io.load(Ordering::Relaxed);
            field("master_last_io_seconds_ago", &if last == 0 { -1 } else { unix_now().saturating_sub(last) as i64 });
            field("master_sync_in_progress", &u8::from(*lock(&l.state) == "sync"));
            field("slave_read_repl_offset", &offset);
            field("slave_repl_offset", &offset);
            if !up {
                field(
                    "master_link_down_since_seconds",
                    &unix_now().saturating_sub(l.down_since.load(Ordering::Relaxed)),
                );
            }
            field("slave_priority", &r.replica_priority.load(Ordering::Relaxed));
            field("slave_read_only", &u8::from(r.replica_read_only.load(Ordering::Relaxed)));
            field("replica_announced", &1);
        }
    }
    drop(role);
    let peers: Vec<Arc<Peer>> = lock(&r.peers).clone();
    field("connected_slaves", &peers.len());
    if r.min_replicas_to_write.load(Ordering::Relaxed) > 0 {
        field("min_slaves_good_slaves", &r.good_replicas());
    }
    let now = unix_now();
    for (i, p) in peers.iter().enumerate() {
        let state = if p.online.load(Ordering::Relaxed) { "online" } else { "wait_bgsave" };
        field(
            &format!("slave{i}"),
            &format_args!(
                "ip={},port={},state={state},offset={},lag={}",
                p.ip,
                p.port,
                p.ack.load(Ordering::Relaxed),
                now.saturating_sub(p.last_ack.load(Ordering::Relaxed))
            ),
        );
    }
    field("master_failover_state", &failover_state);
    field("master_replid", &replid);
    field("master_replid2", &replid2);
    field("master_repl_offset", &offset);
    field("second_repl_offset", &second);
    let (active, size, first, histlen) = r.backlog.backlog_info();
    field("repl_backlog_active", &u8::from(active));
    field("repl_backlog_size", &size);
    field("repl_backlog_first_byte_offset", &first);
    field("repl_backlog_histlen", &histlen);
}
