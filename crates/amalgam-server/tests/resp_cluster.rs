//! Redis Cluster on one node (issue 38, first increment): cluster mode's
//! options, CLUSTER's subcommands that need no other node, the node
//! table and nodes.conf, and the redirections a cluster client follows
//! (`-CROSSSLOT`, `-CLUSTERDOWN`, `-ASK`), with Redis 7.0's texts. Each
//! test starts a node of its own: an amalgam, or in CI's Redis pass a
//! redis-server with the same options, which proves these are Redis's
//! answers.
mod common;
use common::own::{own_server, Own};
use common::resp::*;
use std::net::{TcpListener, TcpStream};

const DOWN_UNBOUND: &str = "-CLUSTERDOWN Hash slot not served\r\n";
const CROSSSLOT: &str = "-CROSSSLOT Keys in request don't hash to the same slot\r\n";

/// A cluster node of the test's own, its nodes.conf in a directory of
/// the test's own (kept in `_dir` until the node is dropped).
struct Node {
    own: Own,
    conf: std::path::PathBuf,
    /// Its cluster bus port.
    bus: u16,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

fn node(name: &str, extra: &[&str]) -> Option<Node> {
    let dir = std::env::temp_dir().join(format!("amalgam-cluster-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let conf = dir.join("nodes.conf");
    let conf_s = conf.to_str().expect("path").to_string();
    let bus = free_port();
    let bus_s = bus.to_string();
    let mut args = vec!["--cluster-enabled", "yes", "--cluster-config-file", &conf_s, "--cluster-port", &bus_s];
    args.extend_from_slice(extra);
    let own = own_server(&args)?;
    Some(Node { own, conf, bus })
}

impl Node {
    fn client(&self) -> Resp {
        Resp::from_stream(TcpStream::connect(self.own.addr()).expect("connect"))
    }
}

/// Waits for `cluster_state:ok`: redis-server turns a primary's state ok
/// in its cron, and not in its first two seconds (`CLUSTER_WRITABLE_DELAY`).
fn await_ok(c: &mut Resp) {
    common::eventually("cluster_state:ok", std::time::Duration::from_secs(10), || {
        info_field(c, "cluster_state") == "ok"
    });
}

/// nodes.conf once it contains `what` (a change marked for a save is
/// saved by the bus thread right after the command answers).
fn saved_conf(conf: &std::path::Path, what: &str) -> String {
    let mut text = String::new();
    common::eventually("nodes.conf saved", std::time::Duration::from_secs(10), || {
        text = std::fs::read_to_string(conf).unwrap_or_default();
        text.contains(what)
    });
    text
}

fn info_field(c: &mut Resp, field: &str) -> String {
    let info = c.call(&["CLUSTER", "INFO"]);
    let line = info.lines().find_map(|l| l.strip_prefix(&format!("{field}:")));
    line.unwrap_or_else(|| panic!("no {field} in {info:?}")).trim().to_string()
}

#[test]
fn a_new_node_serves_nothing_until_it_owns_every_slot() {
    let Some(n) = node("new", &[]) else { return };
    let mut c = n.client();
    assert_eq!(info_field(&mut c, "cluster_state"), "fail");
    assert_eq!(info_field(&mut c, "cluster_known_nodes"), "1");
    assert_eq!(info_field(&mut c, "cluster_slots_assigned"), "0");
    assert_eq!(c.call(&["SET", "foo", "1"]), DOWN_UNBOUND);
    assert_eq!(c.call(&["GET", "foo"]), DOWN_UNBOUND);
    // A command without keys runs.
    assert_eq!(c.call(&["PING"]), "+PONG\r\n");
    // Half the slots: the cluster is still down; a key of an unowned slot
    // is not served, one of an owned slot finds the cluster down.
    assert_eq!(c.call(&["CLUSTER", "ADDSLOTSRANGE", "0", "8191"]), "+OK\r\n");
    assert_eq!(info_field(&mut c, "cluster_slots_assigned"), "8192");
    assert_eq!(c.call(&["CLUSTER", "KEYSLOT", "foo"]), ":12182\r\n");
    assert_eq!(c.call(&["CLUSTER", "KEYSLOT", "bar"]), ":5061\r\n");
    assert_eq!(c.call(&["GET", "foo"]), DOWN_UNBOUND);
    assert_eq!(c.call(&["GET", "bar"]), "-CLUSTERDOWN The cluster is down\r\n");
    assert_eq!(c.call(&["CLUSTER", "ADDSLOTSRANGE", "8192", "16383"]), "+OK\r\n");
    await_ok(&mut c);
    assert_eq!(info_field(&mut c, "cluster_size"), "1");
    assert_eq!(c.call(&["SET", "foo", "1"]), "+OK\r\n");
    assert_eq!(c.call(&["GET", "foo"]), bulk("1"));
    assert_eq!(c.call(&["CLUSTER", "COUNTKEYSINSLOT", "12182"]), ":1\r\n");
    assert_eq!(c.call(&["CLUSTER", "GETKEYSINSLOT", "12182", "10"]), format!("*1\r\n{}", bulk("foo")));
    assert_eq!(c.call(&["CLUSTER", "GETKEYSINSLOT", "12182", "0"]), "*0\r\n");
}

#[test]
fn keys_of_several_slots_are_refused_and_hash_tags_join_them() {
    let Some(n) = node("cross", &[]) else { return };
    let mut c = n.client();
    assert_eq!(c.call(&["CLUSTER", "ADDSLOTSRANGE", "0", "16383"]), "+OK\r\n");
    await_ok(&mut c);
    assert_eq!(c.call(&["MSET", "a", "1", "b", "2"]), CROSSSLOT);
    assert_eq!(c.call(&["MSET", "{u1}a", "1", "{u1}b", "2"]), "+OK\r\n");
    assert_eq!(c.call(&["MGET", "{u1}a", "{u1}b"]), format!("*2\r\n{}{}", bulk("1"), bulk("2")));
    assert_eq!(c.call(&["MGET", "a", "a"]), "*2\r\n$-1\r\n$-1\r\n");
    assert_eq!(c.call(&["SUNIONSTORE", "{x}d", "{x}s", "y"]), CROSSSLOT);
    // EVAL's declared keys are routed too.
    assert_eq!(c.call(&["EVAL", "return 1", "2", "a", "b"]), CROSSSLOT);
    assert_eq!(c.call(&["EVAL", "return 1", "2", "{t}a", "{t}b"]), ":1\r\n");
    // A transaction that queued a refused command aborts.
    assert_eq!(c.call(&["MULTI"]), "+OK\r\n");
    assert_eq!(c.call(&["SET", "{u1}a", "3"]), "+QUEUED\r\n");
    assert_eq!(c.call(&["MSET", "a", "1", "b", "2"]), CROSSSLOT);
    assert_eq!(c.call(&["EXEC"]), "-EXECABORT Transaction discarded because of previous errors.\r\n");
    assert_eq!(c.call(&["GET", "{u1}a"]), bulk("1"));
    // Queued commands on keys of different slots: EXEC is refused and the
    // transaction discarded.
    assert_eq!(c.call(&["MULTI"]), "+OK\r\n");
    assert_eq!(c.call(&["SET", "a", "1"]), "+QUEUED\r\n");
    assert_eq!(c.call(&["SET", "b", "1"]), "+QUEUED\r\n");
    assert_eq!(c.call(&["EXEC"]), CROSSSLOT);
    assert_eq!(c.call(&["EXEC"]), "-ERR EXEC without MULTI\r\n");
    assert_eq!(c.call(&["GET", "a"]), "$-1\r\n");
}

#[test]
fn one_database_in_cluster_mode() {
    let Some(n) = node("db", &[]) else { return };
    let mut c = n.client();
    assert_eq!(c.call(&["SELECT", "1"]), "-ERR SELECT is not allowed in cluster mode\r\n");
    assert_eq!(c.call(&["SELECT", "0"]), "+OK\r\n");
    assert_eq!(c.call(&["SWAPDB", "0", "1"]), "-ERR SWAPDB is not allowed in cluster mode\r\n");
    assert!(c.call(&["INFO", "cluster"]).contains("cluster_enabled:1"));
    assert!(c.call(&["INFO", "server"]).contains("redis_mode:cluster"));
    assert_eq!(c.call(&["READONLY"]), "+OK\r\n");
    assert_eq!(c.call(&["READWRITE"]), "+OK\r\n");
    assert_eq!(c.call(&["ASKING"]), "+OK\r\n");
}

#[test]
fn slot_assignment_errors_are_redis_s() {
    let Some(n) = node("errors", &[]) else { return };
    let mut c = n.client();
    let err = |s: &str| format!("-{s}\r\n");
    assert_eq!(c.call(&["CLUSTER", "ADDSLOTS", "5", "5"]), err("ERR Slot 5 specified multiple times"));
    assert_eq!(c.call(&["CLUSTER", "ADDSLOTS", "16384"]), err("ERR Invalid or out of range slot"));
    assert_eq!(c.call(&["CLUSTER", "ADDSLOTS", "x"]), err("ERR Invalid or out of range slot"));
    assert_eq!(
        c.call(&["CLUSTER", "ADDSLOTSRANGE", "5", "3"]),
        err("ERR start slot number 5 is greater than end slot number 3")
    );
    assert_eq!(
        c.call(&["CLUSTER", "ADDSLOTSRANGE", "1", "2", "3"]),
        err("ERR wrong number of arguments for 'cluster|addslotsrange' command")
    );
    assert_eq!(c.call(&["CLUSTER", "ADDSLOTS", "7"]), "+OK\r\n");
    assert_eq!(c.call(&["CLUSTER", "ADDSLOTS", "7"]), err("ERR Slot 7 is already busy"));
    // Nothing is assigned when one slot of many is refused.
    assert_eq!(c.call(&["CLUSTER", "ADDSLOTS", "8", "7"]), err("ERR Slot 7 is already busy"));
    assert_eq!(c.call(&["CLUSTER", "DELSLOTS", "8"]), err("ERR Slot 8 is already unassigned"));
    assert_eq!(c.call(&["CLUSTER", "DELSLOTSRANGE", "7", "7"]), "+OK\r\n");
    assert_eq!(c.call(&["CLUSTER", "COUNTKEYSINSLOT", "16384"]), err("ERR Invalid slot"));
    assert_eq!(c.call(&["CLUSTER", "COUNTKEYSINSLOT", "x"]), err("ERR value is not an integer or out of range"));
    assert_eq!(c.call(&["CLUSTER", "GETKEYSINSLOT", "1", "-1"]), err("ERR Invalid slot or number of keys"));
    assert_eq!(c.call(&["CLUSTER", "KEYSLOT"]), err("ERR wrong number of arguments for 'cluster|keyslot' command"));
    assert_eq!(c.call(&["CLUSTER", "NOSUCH"]), err("ERR unknown subcommand 'NOSUCH'. Try CLUSTER HELP."));
    assert_eq!(
        c.call(&["CLUSTER", "SETSLOT", "1", "foo"]),
        err("ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP")
    );
    assert_eq!(c.call(&["CLUSTER", "SETSLOT", "1", "MIGRATING", "x"]), err("ERR I'm not the owner of hash slot 1"));
    let me = c.call(&["CLUSTER", "MYID"]);
    let me = me.lines().nth(1).expect("myid").to_string();
    assert_eq!(me.len(), 40);
    assert_eq!(c.call(&["CLUSTER", "FORGET", &me]), err("ERR I tried hard but I can't forget myself..."));
    assert_eq!(c.call(&["CLUSTER", "REPLICATE", &me]), err("ERR Can't replicate myself"));
    assert_eq!(c.call(&["CLUSTER", "FORGET", "abc"]), err("ERR Unknown node abc"));
    assert_eq!(c.call(&["CLUSTER", "COUNT-FAILURE-REPORTS", &me]), ":0\r\n");
    assert_eq!(c.call(&["CLUSTER", "REPLICAS", &me]), "*0\r\n");
    assert_eq!(c.call(&["CLUSTER", "FAILOVER"]), err("ERR You should send CLUSTER FAILOVER to a replica"));
    assert_eq!(c.call(&["CLUSTER", "FAILOVER", "x"]), err("ERR syntax error"));
    assert_eq!(c.call(&["CLUSTER", "RESET", "x"]), err("ERR syntax error"));
    assert_eq!(c.call(&["CLUSTER", "MEET", "127.0.0.1", "x"]), err("ERR Invalid TCP base port specified: x"));
    assert_eq!(c.call(&["CLUSTER", "LINKS"]), "*0\r\n");
}

#[test]
fn epochs_and_a_hard_reset() {
    let Some(n) = node("epochs", &[]) else { return };
    let mut c = n.client();
    assert_eq!(c.call(&["CLUSTER", "SET-CONFIG-EPOCH", "-1"]), "-ERR Invalid config epoch specified: -1\r\n");
    assert_eq!(c.call(&["CLUSTER", "SET-CONFIG-EPOCH", "5"]), "+OK\r\n");
    assert_eq!(c.call(&["CLUSTER", "SET-CONFIG-EPOCH", "6"]), "-ERR Node config epoch is already non-zero\r\n");
    assert_eq!(info_field(&mut c, "cluster_current_epoch"), "5");
    assert_eq!(info_field(&mut c, "cluster_my_epoch"), "5");
    assert_eq!(c.call(&["CLUSTER", "BUMPEPOCH"]), "+STILL 5\r\n");
    let before = c.call(&["CLUSTER", "MYID"]);
    assert_eq!(c.call(&["CLUSTER", "ADDSLOTS", "1"]), "+OK\r\n");
    assert_eq!(c.call(&["CLUSTER", "RESET", "HARD"]), "+OK\r\n");
    assert_ne!(c.call(&["CLUSTER", "MYID"]), before);
    assert_eq!(info_field(&mut c, "cluster_current_epoch"), "0");
    assert_eq!(info_field(&mut c, "cluster_slots_assigned"), "0");
    assert_eq!(c.call(&["CLUSTER", "BUMPEPOCH"]), "+BUMPED 1\r\n");
    // A primary holding keys cannot be reset.
    assert_eq!(c.call(&["CLUSTER", "ADDSLOTSRANGE", "0", "16383"]), "+OK\r\n");
    await_ok(&mut c);
    assert_eq!(c.call(&["SET", "k", "v"]), "+OK\r\n");
    assert_eq!(
        c.call(&["CLUSTER", "RESET"]),
        "-ERR CLUSTER RESET can't be called with master nodes containing keys\r\n"
    );
    assert_eq!(c.call(&["CLUSTER", "FLUSHSLOTS"]), "-ERR DB must be empty to perform CLUSTER FLUSHSLOTS.\r\n");
}

#[test]
fn a_migrating_slot_refuses_keys_split_across_nodes() {
    let Some(n) = node("ask", &[]) else { return };
    let mut c = n.client();
    assert_eq!(c.call(&["CLUSTER", "ADDSLOTSRANGE", "0", "16383"]), "+OK\r\n");
    await_ok(&mut c);
    let me = c.call(&["CLUSTER", "MYID"]);
    let me = me.lines().nth(1).expect("myid").to_string();
    // bar: slot 5061; "{bar}x" shares it.
    assert_eq!(c.call(&["SET", "bar", "1"]), "+OK\r\n");
    assert_eq!(c.call(&["CLUSTER", "SETSLOT", "5061", "MIGRATING", &me]), "+OK\r\n");
    // A key still here is served; a missing one would be asked of the
    // target, which is this node (the only one it knows: the ASK to
    // another node needs a second one, with the bus), so it is served
    // too; a mix of both must be tried again whatever the target.
    assert_eq!(c.call(&["GET", "bar"]), bulk("1"));
    assert_eq!(c.call(&["GET", "{bar}x"]), "$-1\r\n");
    assert_eq!(c.call(&["MGET", "bar", "{bar}x"]), "-TRYAGAIN Multiple keys request during rehashing of slot\r\n");
    let nodes = c.call(&["CLUSTER", "NODES"]);
    assert!(nodes.contains(&format!("[5061->-{me}]")), "{nodes}");
    assert_eq!(c.call(&["CLUSTER", "SETSLOT", "5061", "STABLE"]), "+OK\r\n");
    assert_eq!(c.call(&["GET", "{bar}x"]), "$-1\r\n");
    assert_eq!(
        c.call(&["CLUSTER", "SETSLOT", "5061", "IMPORTING", &me]),
        "-ERR I'm already the owner of hash slot 5061\r\n"
    );
}

#[test]
fn the_node_table_is_saved_in_redis_s_format() {
    let Some(n) = node("conf", &[]) else { return };
    let mut c = n.client();
    assert_eq!(c.call(&["CLUSTER", "SET-CONFIG-EPOCH", "3"]), "+OK\r\n");
    assert_eq!(c.call(&["CLUSTER", "ADDSLOTSRANGE", "0", "99", "200", "200"]), "+OK\r\n");
    let me = c.call(&["CLUSTER", "MYID"]);
    let me = me.lines().nth(1).expect("myid").to_string();
    let nodes = c.call(&["CLUSTER", "NODES"]);
    let line = nodes.lines().find(|l| l.starts_with(&me)).expect("own line").to_string();
    let f: Vec<&str> = line.split(' ').collect();
    assert!(f[1].ends_with(&format!(":{}@{}", n.own.addr().port(), f[1].rsplit('@').next().unwrap())), "{line}");
    assert_eq!(&f[2..], ["myself,master", "-", "0", "0", "3", "connected", "0-99", "200"], "{line}");
    // The file says the same, and the epochs (once saved: Redis saves
    // before it answers, Amalgam's bus thread just after).
    let conf = saved_conf(&n.conf, " myself,master - 0 0 3 connected 0-99 200");
    assert!(conf.contains(&format!("{me} ")), "{conf}");
    assert!(conf.contains(" myself,master - 0 0 3 connected 0-99 200"), "{conf}");
    assert!(conf.contains("vars currentEpoch 3 lastVoteEpoch 0"), "{conf}");
    let slots = c.call(&["CLUSTER", "SLOTS"]);
    assert!(slots.starts_with("*2\r\n*3\r\n:0\r\n:99\r\n*4\r\n"), "{slots}");
    let shards = c.call(&["CLUSTER", "SHARDS"]);
    assert!(
        shards.starts_with("*1\r\n*4\r\n$5\r\nslots\r\n*4\r\n:0\r\n:99\r\n:200\r\n:200\r\n$5\r\nnodes\r\n"),
        "{shards}"
    );
    assert!(shards.contains("$4\r\nrole\r\n$6\r\nmaster\r\n"), "{shards}");
}

/// The replica options Redis 7.0 lets CONFIG SET change, with their
/// `slave` aliases, defaults, ranges and texts; a node started with them.
#[test]
fn the_replica_options_are_redis_s() {
    let Some(n) = node("options", &[]) else { return };
    let mut c = n.client();
    for (name, default) in [
        ("cluster-replica-validity-factor", "10"),
        ("cluster-slave-validity-factor", "10"),
        ("cluster-migration-barrier", "1"),
        ("cluster-allow-replica-migration", "yes"),
        ("cluster-replica-no-failover", "no"),
        ("cluster-slave-no-failover", "no"),
    ] {
        assert_eq!(c.config_get(name), default, "{name}");
    }
    // Redis 7.0 has no `slave` alias for the barrier.
    assert_eq!(c.call(&["CONFIG", "GET", "cluster-slave-migration-barrier"]), "*0\r\n");
    let refused =
        |name: &str, why: &str| format!("-ERR CONFIG SET failed (possibly related to argument '{name}') - {why}\r\n");
    let range = "argument must be between 0 and 2147483647 inclusive";
    for name in ["cluster-replica-validity-factor", "cluster-migration-barrier"] {
        assert_eq!(c.call(&["CONFIG", "SET", name, "-1"]), refused(name, range));
        assert_eq!(c.call(&["CONFIG", "SET", name, "2147483648"]), refused(name, range));
    }
    for name in ["cluster-allow-replica-migration", "cluster-replica-no-failover"] {
        assert_eq!(c.call(&["CONFIG", "SET", name, "maybe"]), refused(name, "argument must be 'yes' or 'no'"));
    }
    // An alias and its name are one setting.
    assert_eq!(c.call(&["CONFIG", "SET", "cluster-slave-validity-factor", "0"]), "+OK\r\n");
    assert_eq!(c.config_get("cluster-replica-validity-factor"), "0");
    assert_eq!(c.call(&["CONFIG", "SET", "cluster-migration-barrier", "3"]), "+OK\r\n");
    assert_eq!(c.config_get("cluster-migration-barrier"), "3");
    assert_eq!(c.call(&["CONFIG", "SET", "cluster-allow-replica-migration", "no"]), "+OK\r\n");
    assert_eq!(c.config_get("cluster-allow-replica-migration"), "no");
    // No failover: this node's flags say `nofailover`, primary or not.
    let my_flags = |c: &mut Resp| {
        let nodes = c.call(&["CLUSTER", "NODES"]);
        let line = nodes.lines().find(|l| l.contains("myself")).expect("own line").to_string();
        line.split(' ').nth(2).expect("flags").to_string()
    };
    assert_eq!(my_flags(&mut c), "myself,master");
    assert_eq!(c.call(&["CONFIG", "SET", "cluster-replica-no-failover", "yes"]), "+OK\r\n");
    assert_eq!(c.config_get("cluster-slave-no-failover"), "yes");
    assert_eq!(my_flags(&mut c), "myself,master,nofailover");
    assert_eq!(c.call(&["CONFIG", "SET", "cluster-slave-no-failover", "no"]), "+OK\r\n");
    assert_eq!(my_flags(&mut c), "myself,master");
    // At start, by the names and the aliases.
    let args = [
        "--cluster-slave-validity-factor",
        "7",
        "--cluster-migration-barrier",
        "2",
        "--cluster-allow-replica-migration",
        "no",
        "--cluster-replica-no-failover",
        "yes",
    ];
    let Some(started) = node("options-start", &args) else { return };
    let mut c = started.client();
    assert_eq!(c.config_get("cluster-replica-validity-factor"), "7");
    assert_eq!(c.config_get("cluster-migration-barrier"), "2");
    assert_eq!(c.config_get("cluster-allow-replica-migration"), "no");
    assert_eq!(c.config_get("cluster-replica-no-failover"), "yes");
    assert_eq!(my_flags(&mut c), "myself,master,nofailover");
}

/// CLUSTER LINKS between two nodes that met: each lists its link to the
/// other and the other's to it, one map of Redis 7.0's six fields each
/// (RESP2: flat pairs; RESP3: maps).
#[test]
fn cluster_links_lists_the_bus_links_both_ways() {
    let Some(a) = node("links-a", &[]) else { return };
    let Some(b) = node("links-b", &[]) else { return };
    let (mut ca, mut cb) = (a.client(), b.client());
    let id = |c: &mut Resp| call(c, &["CLUSTER", "MYID"]).bulk().to_string();
    let (ida, idb) = (id(&mut ca), id(&mut cb));
    let port = b.own.addr().port().to_string();
    assert_eq!(ca.call(&["CLUSTER", "MEET", "127.0.0.1", &port, &b.bus.to_string()]), "+OK\r\n");
    for (c, other) in [(&mut ca, &idb), (&mut cb, &ida)] {
        let mut last = V::Nil;
        common::eventually("a link each way", std::time::Duration::from_secs(10), || {
            last = call(c, &["CLUSTER", "LINKS"]);
            let dirs: Vec<String> = last
                .array()
                .iter()
                .filter(|l| l.array()[3].bulk() == other.as_str())
                .map(|l| l.array()[1].bulk().to_string())
                .collect();
            dirs.contains(&"to".to_string()) && dirs.contains(&"from".to_string())
        });
        for link in last.array() {
            let f = link.array();
            let keys: Vec<&str> = f.iter().step_by(2).map(|k| k.bulk()).collect();
            assert_eq!(
                keys,
                ["direction", "node", "create-time", "events", "send-buffer-allocated", "send-buffer-used"],
                "{last:?}"
            );
            assert!(["to", "from"].contains(&f[1].bulk()), "{last:?}");
            assert_eq!(f[3].bulk().len(), 40);
            assert!(f[5].int() > 0);
            assert!(["r", "w", "rw", ""].contains(&f[7].bulk()), "{last:?}");
            assert!(f[9].int() >= f[11].int() && f[11].int() >= 0, "{last:?}");
        }
    }
    // RESP3: an array of maps.
    assert!(ca.call(&["HELLO", "3"]).starts_with('%'));
    let r3 = ca.call(&["CLUSTER", "LINKS"]);
    assert!(r3.starts_with('*') && r3.contains("\r\n%6\r\n"), "{r3}");
}

/// A SETSLOT NODE is in nodes.conf, and a node started again on that file
/// serves the slot (the save is batched, not skipped).
#[test]
fn a_setslot_node_survives_a_restart() {
    let Some(n) = node("restart", &[]) else { return };
    let mut c = n.client();
    let me = c.call(&["CLUSTER", "MYID"]);
    let me = me.lines().nth(1).expect("myid").to_string();
    assert_eq!(c.call(&["CLUSTER", "ADDSLOTS", "10"]), "+OK\r\n");
    assert_eq!(c.call(&["CLUSTER", "SETSLOT", "20", "NODE", &me]), "+OK\r\n");
    saved_conf(&n.conf, " connected 10 20\n");
    let conf = n.conf.clone();
    let conf_s = conf.to_str().expect("path").to_string();
    let Node { own, .. } = n;
    drop(own);
    let bus = free_port().to_string();
    let Some(again) =
        own_server(&["--cluster-enabled", "yes", "--cluster-config-file", &conf_s, "--cluster-port", &bus])
    else {
        return;
    };
    let mut c = Resp::from_stream(TcpStream::connect(again.addr()).expect("connect"));
    let nodes = c.call(&["CLUSTER", "NODES"]);
    let line = nodes.lines().find(|l| l.starts_with(&me)).unwrap_or_else(|| panic!("{nodes}")).to_string();
    assert!(line.ends_with(" connected 10 20"), "{line}");
    assert_eq!(c.call(&["CLUSTER", "COUNTKEYSINSLOT", "20"]), ":0\r\n");
    drop(again);
    let _ = std::fs::remove_dir_all(conf.parent().expect("dir"));
}

/// COUNTKEYSINSLOT and GETKEYSINSLOT follow every way a key comes and
/// goes: SET, a collection's first push and last pop, DEL, RENAME,
/// expiry, FLUSHALL (Amalgam answers from the engine's per-slot count).
#[test]
fn slot_counts_follow_every_write() {
    let Some(n) = node("counts", &[]) else { return };
    let mut c = n.client();
    assert_eq!(c.call(&["CLUSTER", "ADDSLOTSRANGE", "0", "16383"]), "+OK\r\n");
    await_ok(&mut c);
    let count = |c: &mut Resp| c.call(&["CLUSTER", "COUNTKEYSINSLOT", "15495"]);
    assert_eq!(c.call(&["CLUSTER", "KEYSLOT", "{a}"]), ":15495\r\n");
    assert_eq!(count(&mut c), ":0\r\n");
    assert_eq!(c.call(&["CLUSTER", "GETKEYSINSLOT", "15495", "10"]), "*0\r\n");
    for i in 0..20 {
        assert_eq!(c.call(&["SET", &format!("{{a}}{i}"), "v"]), "+OK\r\n");
    }
    assert_eq!(c.call(&["SET", "{a}0", "again"]), "+OK\r\n");
    assert_eq!(c.call(&["RPUSH", "{a}list", "x"]), ":1\r\n");
    assert_eq!(c.call(&["HSET", "{a}hash", "f", "v"]), ":1\r\n");
    assert_eq!(count(&mut c), ":22\r\n");
    assert_eq!(c.call(&["DEL", "{a}0", "{a}1"]), ":2\r\n");
    assert_eq!(c.call(&["LPOP", "{a}list"]), "$1\r\nx\r\n");
    assert_eq!(c.call(&["RENAME", "{a}2", "{a}renamed"]), "+OK\r\n");
    assert_eq!(count(&mut c), ":19\r\n");
    let keys = c.call(&["CLUSTER", "GETKEYSINSLOT", "15495", "100"]);
    assert!(keys.starts_with("*19\r\n") && keys.contains("{a}renamed") && !keys.contains("{a}2\r\n"), "{keys}");
    assert_eq!(c.call(&["CLUSTER", "GETKEYSINSLOT", "0", "10"]), "*0\r\n");
    // A key written after GETKEYSINSLOT's index was built is found.
    assert_eq!(c.call(&["SET", "{b}late", "v"]), "+OK\r\n");
    let slot_b = c.call(&["CLUSTER", "KEYSLOT", "{b}"]);
    let slot_b = slot_b.trim_start_matches(':').trim().to_string();
    assert_eq!(c.call(&["CLUSTER", "GETKEYSINSLOT", &slot_b, "10"]), "*1\r\n$7\r\n{b}late\r\n");
    // Expired keys count until deleted (Redis's count is its dictionary's).
    assert_eq!(c.call(&["SET", "{a}px", "v", "PX", "20"]), "+OK\r\n");
    common::eventually("the expired key deleted", std::time::Duration::from_secs(10), || count(&mut c) == ":19\r\n");
    assert_eq!(c.call(&["FLUSHALL"]), "+OK\r\n");
    common::eventually("FLUSHALL seen by the count", std::time::Duration::from_secs(10), || count(&mut c) == ":0\r\n");
    assert_eq!(c.call(&["CLUSTER", "GETKEYSINSLOT", "15495", "10"]), "*0\r\n");
}

/// Sharded Pub/Sub on one node: shard channels are routed as keys (an
/// unowned slot is not served, several slots are refused), are served
/// while the cluster is down (`cluster-allow-pubsubshard-when-down`'s
/// default), and a slot this node stops serving unsubscribes its
/// channels' subscribers with a `sunsubscribe` push.
#[test]
fn shard_channels_route_as_keys_and_a_dropped_slot_unsubscribes() {
    let Some(n) = node("spublish", &[]) else { return };
    let mut c = n.client();
    // foo: slot 12182; bar: slot 5061; {bar}x: the same slot as bar.
    assert_eq!(c.call(&["SPUBLISH", "foo", "x"]), DOWN_UNBOUND);
    assert_eq!(c.call(&["CLUSTER", "ADDSLOTSRANGE", "0", "8191"]), "+OK\r\n");
    assert_eq!(c.call(&["SPUBLISH", "foo", "x"]), DOWN_UNBOUND);
    // The cluster is down, and the channel served.
    assert_eq!(info_field(&mut c, "cluster_state"), "fail");
    assert_eq!(c.call(&["SPUBLISH", "bar", "x"]), ":0\r\n");
    assert_eq!(c.call(&["GET", "bar"]), "-CLUSTERDOWN The cluster is down\r\n");
    assert_eq!(c.call(&["CLUSTER", "ADDSLOTSRANGE", "8192", "16383"]), "+OK\r\n");
    await_ok(&mut c);
    let mut s = n.client();
    assert_eq!(s.call(&["SSUBSCRIBE", "bar", "foo"]), CROSSSLOT);
    assert_eq!(s.call(&["SUNSUBSCRIBE", "bar", "foo"]), CROSSSLOT);
    // A transaction's SPUBLISHes are routed with it.
    assert_eq!(c.call(&["MULTI"]), "+OK\r\n");
    assert_eq!(c.call(&["SPUBLISH", "bar", "x"]), "+QUEUED\r\n");
    assert_eq!(c.call(&["SPUBLISH", "foo", "x"]), "+QUEUED\r\n");
    assert_eq!(c.call(&["EXEC"]), CROSSSLOT);
    s.send(&["SSUBSCRIBE", "bar", "{bar}x"]);
    assert_eq!(s.reply(), format!("*3\r\n{}{}:1\r\n", bulk("ssubscribe"), bulk("bar")));
    assert_eq!(s.reply(), format!("*3\r\n{}{}:2\r\n", bulk("ssubscribe"), bulk("{bar}x")));
    assert_eq!(c.call(&["SPUBLISH", "bar", "hello"]), ":1\r\n");
    assert_eq!(s.reply(), format!("*3\r\n{}{}{}", bulk("smessage"), bulk("bar"), bulk("hello")));
    // Its slot goes: both channels leave, each with a push.
    assert_eq!(c.call(&["CLUSTER", "DELSLOTS", "5061"]), "+OK\r\n");
    // In some order of the two names; the counts go down one by one.
    let pushes = [s.reply(), s.reply()];
    for (p, left) in pushes.iter().zip(["1", "0"]) {
        assert!(p.starts_with(&format!("*3\r\n{}", bulk("sunsubscribe"))), "{p:?}");
        assert!(p.ends_with(&format!(":{left}\r\n")), "{pushes:?}");
    }
    assert_eq!(c.call(&["PUBSUB", "SHARDCHANNELS"]), "*0\r\n");
    assert_eq!(c.call(&["PUBSUB", "SHARDNUMSUB", "bar"]), format!("*2\r\n{}:0\r\n", bulk("bar")));
    // Out of subscriber mode: any command runs.
    assert_eq!(s.call(&["CLUSTER", "KEYSLOT", "bar"]), ":5061\r\n");
}
