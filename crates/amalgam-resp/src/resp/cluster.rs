//! Redis Cluster in the RESP front end (issue 38; the cluster itself is
//! crate amalgam-cluster): the options at start, CLUSTER, ASKING,
//! READONLY and READWRITE, and the routing check `dispatch` makes before
//! a command runs or MULTI queues it (Redis's `processCommand` calls
//! `getNodeByQuery` at the same point: after ACL, before the replication
//! guards and the queue).
//!
//! What a cluster node refuses that a standalone one serves: SELECT of a
//! database other than 0 and SWAPDB (Redis's texts), and every command
//! on a key of a slot this node does not serve (the redirections).
//! A GET, MGET or SET joins the batch of its round only if its keys are
//! in a slot this node serves with the cluster up (`resp.rs`, `local`:
//! the same bit `Cluster::route` reads); any other command goes through
//! `dispatch` and this check.

use super::table::{self, Cmd, Spec};
use super::{multi, push_error, Ctx};
use crate::Shared;
use amalgam_cluster::{Cluster, Config, Query};
use amalgam_protocol::resp::push_simple;
use std::sync::Arc;

/// The session's cluster flags (Redis's `CLIENT_ASKING`, `CLIENT_READONLY`).
pub(crate) const ASKING: u8 = 1;
pub(crate) const READONLY: u8 = 2;

const ERR_DISABLED: &[u8] = b"ERR This instance has cluster support disabled";

/// The cluster the options ask for: disabled, or opened from its config
/// file (in --dir when given, as Redis reads it from its `dir`).
pub(crate) fn from_args(args: &crate::config::Args) -> Result<Arc<Cluster>, String> {
    if !args.cluster_enabled {
        return Ok(Arc::new(Cluster::disabled()));
    }
    let mut file = args.cluster_config_file.clone();
    if file.is_relative() {
        if let Some(dir) = &args.dir {
            file = dir.join(file);
        }
    }
    Cluster::open(Config {
        enabled: true,
        config_file: file,
        node_timeout_ms: args.cluster_node_timeout,
        port: args.resp_port,
        cport: args.cluster_port,
        announce_ip: args.cluster_announce_ip.clone(),
        announce_port: args.cluster_announce_port,
        announce_bus_port: args.cluster_announce_bus_port,
        announce_hostname: args.cluster_announce_hostname.clone(),
        require_full_coverage: args.cluster_require_full_coverage,
        allow_reads_when_down: args.cluster_allow_reads_when_down,
        replica_validity_factor: args.cluster_replica_validity_factor,
        migration_barrier: args.cluster_migration_barrier,
        allow_replica_migration: args.cluster_allow_replica_migration,
        replica_no_failover: args.cluster_replica_no_failover,
    })
    .map(Arc::new)
}

/// Starts the cluster bus on `listener` (bound by `main.rs` to the bus
/// port), with what it asks of the server.
pub fn start_bus(shared: &Arc<Shared>, listener: mio::net::TcpListener) -> Result<(), String> {
    let host = Arc::new(BusHost(Arc::downgrade(shared)));
    let weak = Arc::downgrade(shared);
    shared.cluster.on_slots_lost(Box::new(move |lost| {
        // Under the cluster's lock: only the Pub/Sub registry is touched.
        let Some(s) = weak.upgrade() else { return };
        let mut wake = Vec::new();
        s.pubsub.revoke_slots(|c| lost.has(amalgam_cluster::slot::slot_of(c) as usize), &mut wake);
        for w in wake {
            s.blocking.wake(w);
        }
    }));
    amalgam_cluster::bus::start(Arc::clone(&shared.cluster), host, listener)
}

/// The server as the bus sees it (a weak handle: the bus thread does not
/// keep the server alive).
struct BusHost(std::sync::Weak<Shared>);

impl amalgam_cluster::bus::BusHost for BusHost {
    fn repl_offset(&self) -> u64 {
        self.0.upgrade().map_or(0, |s| s.repl.backlog.offset())
    }

    fn publish(&self, channel: &[u8], message: &[u8]) {
        let Some(s) = self.0.upgrade() else { return };
        let mut wake = Vec::new();
        s.pubsub.publish(channel, message, &mut wake);
        wake.sort_unstable();
        wake.dedup();
        for w in wake {
            s.blocking.wake(w);
        }
    }

    fn publish_shard(&self, channel: &[u8], message: &[u8]) {
        let Some(s) = self.0.upgrade() else { return };
        let mut wake = Vec::new();
        s.pubsub.publish_shard(channel, message, &mut wake);
        for w in wake {
            s.blocking.wake(w);
        }
    }

    fn follow(&self, primary: Option<(String, u16)>) {
        if let Some(s) = self.0.upgrade() {
            follow(&s, primary);
        }
    }

    fn following(&self) -> Option<(String, u16)> {
        self.0.upgrade().and_then(|s| s.repl.primary())
    }

    fn data_age_ms(&self) -> u64 {
        self.0.upgrade().map_or(0, |s| s.repl.link_data_age_ms())
    }

    fn hold_writes(&self, on: bool) {
        if let Some(s) = self.0.upgrade() {
            s.pause.hold_for_failover(&s, on);
        }
    }

    fn drop_slot_keys(&self, slots: &[u16]) {
        if let Some(s) = self.0.upgrade() {
            let n = drop_slot_keys(&s.store, slots);
            if n > 0 {
                log::warn!("Deleted {n} keys of {} lost slots", slots.len());
            }
        }
    }
}

/// Has the engine count database 0's keys per hash slot (cluster mode
/// only; `key_classes.rs` in amalgam-engine): COUNTKEYSINSLOT and an
/// empty GETKEYSINSLOT answer from the count.
pub(crate) fn count_slots(enabled: bool, store: &amalgam_engine::Store) -> Result<(), String> {
    if !enabled {
        return Ok(());
    }
    store.count_key_classes(amalgam_cluster::slot::slot_of, amalgam_cluster::slot::SLOTS)
}

/// Deletes database 0's keys in `slots` (Redis's `delKeysInSlot`, for
/// slots this primary lost): slots the count says are empty are skipped;
/// the rest are found by one walk. Deletions reach the replicas as every
/// write does (the journal). Returns how many keys went.
fn drop_slot_keys(store: &amalgam_engine::Store, slots: &[u16]) -> u64 {
    let mut doomed_slots = vec![false; amalgam_cluster::slot::SLOTS];
    let mut any = false;
    for &s in slots {
        if store.key_class_len(s as usize) != Some(0) {
            doomed_slots[s as usize % amalgam_cluster::slot::SLOTS] = true;
            any = true;
        }
    }
    if !any {
        return 0;
    }
    let mut doomed = Vec::new();
    walk(store, |k| {
        if doomed_slots[amalgam_cluster::slot::slot_of(k) as usize] {
            doomed.push(amalgam_engine::namespace::encode(0, k));
        }
        true
    });
    doomed.iter().filter(|k| store.delete(k).is_ok()).count() as u64
}

/// REPLICAOF for the cluster: `ip port`, or NO ONE.
fn follow(shared: &Shared, primary: Option<(String, u16)>) {
    let r = match &primary {
        Some((ip, port)) => amalgam_repl::replicaof(shared, ip.as_bytes(), port.to_string().as_bytes()),
        None => amalgam_repl::replicaof(shared, b"no", b"one"),
    };
    if let Err(e) = r {
        log::warn!("Cluster: cannot follow {primary:?}: {e}");
    }
}

/// The memcached port's routing in cluster mode (`amalgam_memcache`'s
/// `route.rs`): the redirection RESP would answer for a request on
/// `keys`, without its `-`, or None when it runs here. memcached has no
/// ASKING or READONLY: its requests route as a RESP client's that said
/// neither.
pub fn memcached_route(shared: &Shared, keys: &[&[u8]], write: bool) -> Option<String> {
    let store = &shared.store;
    let q = Query { write, ..Query::default() };
    shared.cluster.route(keys, q, |k| in_database_0(store, k)).err().map(|r| r.text())
}

/// Whether database 0 holds `key` (the one database of cluster mode).
fn in_database_0(store: &amalgam_engine::Store, key: &[u8]) -> bool {
    store.peek(&amalgam_engine::namespace::encode(0, key), |_| ()).is_some()
}

/// What the cluster may ask of the store: database 0's keys by slot. The
/// engine counts each slot's keys ([`count_slots`]); a slot's keys
/// themselves are found by walking the table (O(keys)), which
/// GETKEYSINSLOT's index (amalgam-cluster's `keys_in_slot`) does once for
/// a resharding's many calls.
struct Keys<'a> {
    store: &'a amalgam_engine::Store,
    shared: &'a Shared,
}

/// Buckets one walk of the table visits at most (every loop bounded: the
/// table has at most this many buckets).
const WALK_STEPS_MAX: usize = 1 << 40;

impl Keys<'_> {
    fn walk(&self, f: impl FnMut(&[u8]) -> bool) {
        walk(self.store, f)
    }
}

/// Gives database 0's keys to `f` until it answers false.
fn walk(store: &amalgam_engine::Store, mut f: impl FnMut(&[u8]) -> bool) {
    let mut cursor = 0;
    for _ in 0..WALK_STEPS_MAX {
        let mut more = true;
        cursor = store.scan(cursor, |it| {
            if more {
                if let Some(name) = amalgam_engine::namespace::name_in(0, it.key()) {
                    more = f(name);
                }
            }
        });
        if cursor == 0 || !more {
            break;
        }
    }
}

impl amalgam_cluster::Host for Keys<'_> {
    fn keys_in_slot(&self, slot: u16, max: usize) -> Vec<Vec<u8>> {
        let mut keys = Vec::new();
        if max == 0 {
            return keys;
        }
        self.walk(|k| {
            if amalgam_cluster::slot::slot_of(k) == slot {
                keys.push(k.to_vec());
            }
            keys.len() < max
        });
        keys
    }

    fn count_keys_in_slot(&self, slot: u16) -> u64 {
        if let Some(n) = self.slot_key_count(slot) {
            return n;
        }
        let mut n = 0;
        self.walk(|k| {
            n += u64::from(amalgam_cluster::slot::slot_of(k) == slot);
            true
        });
        n
    }

    fn each_key(&self, max: usize, f: &mut dyn FnMut(&[u8])) -> bool {
        let mut n = 0;
        self.walk(|k| {
            f(k);
            n += 1;
            n < max
        });
        n < max
    }

    fn slot_key_count(&self, slot: u16) -> Option<u64> {
        self.store.key_class_len(slot as usize)
    }

    fn exists(&self, key: &[u8]) -> bool {
        in_database_0(self.store, key)
    }

    fn holds_keys(&self) -> bool {
        self.store.namespace_len(0) > 0
    }

    fn follow(&self, primary: Option<(String, u16)>) {
        follow(self.shared, primary);
    }

    fn repl_offset(&self) -> u64 {
        self.shared.repl.backlog.offset()
    }
}

/// CLUSTER, ASKING, READONLY, READWRITE.
pub(crate) fn run(ctx: &mut Ctx<'_>, cmd: Cmd, args: &[super::Arg<'_>], out: &mut Vec<u8>) {
    let cluster = &ctx.shared.cluster;
    if !cluster.enabled() {
        return push_error(out, ERR_DISABLED);
    }
    match cmd {
        Cmd::Asking => ctx.session.cluster |= ASKING,
        Cmd::Readonly => ctx.session.cluster |= READONLY,
        Cmd::Readwrite => ctx.session.cluster &= !READONLY,
        _ => {
            // The subcommand and its arity, as every container checks them.
            if super::sub(Cmd::Cluster, args, out).is_none() {
                return;
            }
            let argv: Vec<&[u8]> = args.iter().map(|a| &a[..]).collect();
            let keys = Keys { store: &ctx.shared.store, shared: ctx.shared };
            return amalgam_cluster::command::run(cluster, &keys, ctx.session.proto, &argv, out);
        }
    }
    push_simple(out, "OK");
}

/// The routing check (cluster mode only): true if the command was
/// answered with a redirection (in `out`) instead of running. For EXEC,
/// the keys of every queued command; a refused EXEC discards the
/// transaction, a refused command inside MULTI flags it (EXECABORT), as
/// Redis's `processCommand`.
#[cold]
#[inline(never)]
pub(crate) fn redirected(
    ctx: &mut Ctx<'_>,
    spec: Option<&'static Spec>,
    args: &[super::Arg<'_>],
    out: &mut Vec<u8>,
) -> bool {
    let Some(spec) = spec.filter(|s| super::arity_ok(s.arity, args.len())) else { return false };
    // The master client is obeyed; EXEC's commands were routed with it.
    if ctx.session.primary || ctx.session.multi.executing {
        return false;
    }
    let mut keys: Vec<&[u8]> = Vec::new();
    let mut q = Query {
        asking: ctx.session.cluster & ASKING != 0 || spec.flags.contains(&"asking"),
        readonly: ctx.session.cluster & READONLY != 0,
        migrate: spec.cmd == Cmd::Migrate,
        write: false,
        pubsub_shard: false,
    };
    // EXEC: every queued command's keys, borrowed from the queue.
    let redirect = {
        if spec.cmd == Cmd::Exec {
            let Some(queue) = ctx.session.multi.queue.as_ref() else { return false };
            for c in queue {
                if let Some(s) = table::lookup(&c[0]) {
                    multi::push_keys(s, c, &mut keys);
                    q.pubsub_shard |= push_shard_channels(s, c, &mut keys);
                    q.write |= is_write(s, c);
                }
            }
        } else {
            if spec.keys.is_empty() && !matches!(spec.cmd, Cmd::Sort | Cmd::SortRo) {
                return false;
            }
            multi::push_keys(spec, args, &mut keys);
            q.pubsub_shard = push_shard_channels(spec, args, &mut keys);
            q.write = is_write(spec, args);
        }
        let store = &ctx.shared.store;
        ctx.shared.cluster.route(&keys, q, |k| in_database_0(store, k))
    };
    let Err(r) = redirect else { return false };
    if spec.cmd == Cmd::Exec {
        multi::reset(&mut ctx.session.multi);
    } else {
        ctx.session.multi.refused_one();
    }
    let mark = out.len();
    push_error(out, r.text().as_bytes());
    ctx.stats.errors.note(&out[mark..]);
    true
}

/// SSUBSCRIBE, SUNSUBSCRIBE, SPUBLISH: their shard channels are routed
/// as keys (Redis's getNodeByQuery finds them by their `not_key` key
/// specification, which COMMAND GETKEYS and the ACL's key rules skip):
/// appends them to `keys`; true for these commands.
fn push_shard_channels<'a>(spec: &'static Spec, args: &'a [impl AsRef<[u8]>], keys: &mut Vec<&'a [u8]>) -> bool {
    let channels = match spec.cmd {
        Cmd::Ssubscribe | Cmd::Sunsubscribe => args.get(1..).unwrap_or(&[]),
        Cmd::Spublish => args.get(1..2).unwrap_or(&[]),
        _ => return false,
    };
    keys.extend(channels.iter().map(|c| c.as_ref()));
    true
}

fn is_write(spec: &'static Spec, args: &[impl AsRef<[u8]>]) -> bool {
    spec.flags.contains(&"write") || multi::key_spec_of(spec, args).flags.contains(&"write")
}

/// After a command: ASKING lasts for the next command only (or, inside
/// MULTI, until EXEC), as Redis's `resetClient`.
#[inline]
pub(crate) fn after_command(ctx: &mut Ctx<'_>, cmd: Option<Cmd>) {
    let m = &ctx.session.multi;
    if ctx.session.cluster & ASKING != 0 && cmd != Some(Cmd::Asking) && !m.queuing() && !m.executing {
        ctx.session.cluster &= !ASKING;
    }
}
