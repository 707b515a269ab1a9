"""Redis Cluster with real cluster tooling (issue 38): redis-py's
RedisCluster client and Debian's `redis-cli --cluster create/check`
against cluster nodes of the test's own, a node joining a cluster of
redis-server nodes over Redis's cluster bus, and failure detection.

The node binary comes from AMALGAM_TEST_REPL_BIN, as test_replication.py's:
the amalgam under test, or Debian's redis-server in CI's Redis pass (proof
that what is asserted here is what Redis does).
"""

import os
import shutil
import time
import subprocess

import pytest
import redis
from redis.cluster import RedisCluster

from test_replication import NODE_BIN, Node, free_port, start_node, wait_until

pytestmark = pytest.mark.skipif(
    not NODE_BIN, reason="AMALGAM_TEST_REPL_BIN is not set (scripts/test.sh sets it)"
)

KEYS = 2000
# The node timeout of the multi-node tests: failures are detected after it.
NODE_TIMEOUT_MS = 2000
# Failure detection and rejoining: several node timeouts and cron rounds.
FAILURE_WAIT_S = 30
REDIS_SERVER = shutil.which("redis-server")
REDIS_CLI = shutil.which("redis-cli")


def node_in_cluster_mode(tmp_path, binary=None, timeout_ms=NODE_TIMEOUT_MS):
    """A node in cluster mode with its nodes.conf under tmp_path; `binary`
    (default: the node under test) started as test_replication starts it."""
    port = free_port()
    extra = [
        "--cluster-enabled", "yes",
        "--cluster-config-file", str(tmp_path / f"nodes-{port}.conf"),
        "--cluster-port", str(free_port()),
        "--cluster-node-timeout", str(timeout_ms),
    ]
    if binary is None:
        return start_node(port, extra=extra, conf_dir=str(tmp_path))
    d = tmp_path / f"node-{port}"
    d.mkdir()
    argv = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
            "--dir", str(d)] + extra
    return Node(argv, port, str(d / "node.log"))


def restart(node):
    """The same node again, on its ports and with its nodes.conf."""
    node.kill()
    return Node(node.argv, node.port, node.log_path)


def state(node):
    return node.c.cluster("INFO")["cluster_state"]


def create(nodes):
    """`redis-cli --cluster create` of these nodes as primaries, then waits
    until every one says the cluster is ok."""
    out = subprocess.run(
        [REDIS_CLI, "--cluster", "create"] + [f"127.0.0.1:{n.port}" for n in nodes] + ["--cluster-yes"],
        capture_output=True, text=True, timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "[OK] All 16384 slots covered." in out.stdout, out.stdout
    for n in nodes:
        wait_until(lambda: state(n) == "ok", f"cluster_state:ok on {n.port}")


def flags_of(node, port):
    """The flags another node's CLUSTER NODES line shows for the node on `port`."""
    for line in node.c.execute_command("CLUSTER", "NODES").decode().splitlines():
        f = line.split(" ")
        if f[1].startswith(f"127.0.0.1:{port}@"):
            return f[2].split(",")
    return None


def cluster_node(tmp_path):
    """One node in cluster mode owning all 16384 slots, its state ok."""
    node = node_in_cluster_mode(tmp_path, timeout_ms=15000)
    assert node.c.execute_command("CLUSTER", "ADDSLOTSRANGE", "0", "16383") in (b"OK", "OK", True)
    # redis-server turns the state ok in its cron, after its first 2 s.
    wait_until(lambda: node.c.cluster("INFO")["cluster_state"] == "ok", "cluster_state:ok")
    return node


def test_redis_py_cluster_client_routes_every_command(tmp_path):
    node = cluster_node(tmp_path)
    try:
        rc = RedisCluster(host="127.0.0.1", port=node.port)
        for i in range(KEYS):
            rc.set(f"key:{i}", i)
        assert rc.get("key:7") == b"7"
        values = rc.mget_nonatomic([f"key:{i}" for i in range(KEYS)])
        assert values == [str(i).encode() for i in range(KEYS)]
        # Keys of one hash tag go together, even in one MSET.
        rc.mset({"{user:1}:name": "a", "{user:1}:mail": "b"})
        assert rc.mget("{user:1}:name", "{user:1}:mail") == [b"a", b"b"]
        # A pipeline is split by slot by the client.
        p = rc.pipeline()
        for i in range(100):
            p.incr(f"counter:{i}")
        assert sum(p.execute()) == 100
        # A cross-slot command sent as is: Redis's error, which redis-py
        # raises as it reads it.
        with pytest.raises(redis.ResponseError, match="hash to the same slot"):
            node.c.execute_command("MSET", "a", "1", "b", "2")
        slots = rc.cluster_slots()
        assert list(slots.keys()) == [(0, 16383)]
        rc.close()
    finally:
        node.kill()


@pytest.mark.skipif(shutil.which("redis-cli") is None, reason="redis-cli is not installed")
def test_redis_cli_cluster_check_finds_every_slot_covered(tmp_path):
    node = cluster_node(tmp_path)
    try:
        node.c.set("{a}x", "1")
        out = subprocess.run(
            ["redis-cli", "--cluster", "check", f"127.0.0.1:{node.port}"],
            capture_output=True, text=True, timeout=60,
        )
        assert out.returncode == 0, out.stdout + out.stderr
        assert "[OK] All nodes agree about slots configuration." in out.stdout
        assert "[OK] All 16384 slots covered." in out.stdout
        assert "1 keys | 16384 slots | 0 slaves." in out.stdout
    finally:
        node.kill()


@pytest.mark.skipif(REDIS_CLI is None, reason="redis-cli is not installed")
def test_redis_cli_cluster_create_joins_three_primaries_over_the_bus(tmp_path):
    nodes = [node_in_cluster_mode(tmp_path) for _ in range(3)]
    try:
        create(nodes)
        for n in nodes:
            info = n.c.cluster("INFO")
            assert int(info["cluster_known_nodes"]) == 3 and int(info["cluster_size"]) == 3, info
            assert int(info["cluster_stats_messages_pong_received"]) > 0, info
        rc = RedisCluster(host="127.0.0.1", port=nodes[0].port)
        for i in range(KEYS):
            rc.set(f"key:{i}", i)
        assert rc.mget_nonatomic([f"key:{i}" for i in range(KEYS)]) == [str(i).encode() for i in range(KEYS)]
        # Every primary holds a share; a key asked of the wrong node is
        # redirected with MOVED to the right one.
        sizes = [n.c.dbsize() for n in nodes]
        assert sum(sizes) == KEYS and min(sizes) > 0, sizes
        slot = nodes[0].c.execute_command("CLUSTER", "KEYSLOT", "key:1")
        owner = next(n for n in nodes if n.c.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) > 0)
        other = next(n for n in nodes if n is not owner)
        with pytest.raises(redis.ResponseError, match=f"{slot} 127.0.0.1:{owner.port}"):
            other.c.get("key:1")
        rc.close()
    finally:
        for n in nodes:
            n.kill()


@pytest.mark.skipif(REDIS_CLI is None, reason="redis-cli is not installed")
def test_a_stopped_primary_is_marked_failing_and_rejoins(tmp_path):
    nodes = [node_in_cluster_mode(tmp_path) for _ in range(3)]
    try:
        create(nodes)
        gone = nodes[2]
        gone.kill()
        # PFAIL on each survivor after the node timeout, FAIL once both
        # primaries' reports meet; the cluster is down (a third of the
        # slots is unserved).
        for n in nodes[:2]:
            wait_until(lambda: "fail" in (flags_of(n, gone.port) or []), "fail flag", FAILURE_WAIT_S)
            wait_until(lambda: state(n) == "fail", "cluster_state:fail", FAILURE_WAIT_S)
        nodes[2] = restart(gone)
        for n in nodes:
            wait_until(lambda: state(n) == "ok", f"cluster_state:ok on {n.port}", FAILURE_WAIT_S)
        for n in nodes[:2]:
            wait_until(lambda: "fail" not in (flags_of(n, gone.port) or ["fail"]), "fail cleared", FAILURE_WAIT_S)
    finally:
        for n in nodes:
            n.kill()


@pytest.mark.skipif(REDIS_SERVER is None or REDIS_CLI is None, reason="redis-server or redis-cli is not installed")
def test_a_node_joins_a_cluster_of_redis_servers(tmp_path):
    """Two redis-server 7.0 primaries and the node under test, created as
    one cluster by redis-cli: the bus is Redis's."""
    nodes = [node_in_cluster_mode(tmp_path, REDIS_SERVER) for _ in range(2)]
    nodes.append(node_in_cluster_mode(tmp_path))
    try:
        create(nodes)
        rc = RedisCluster(host="127.0.0.1", port=nodes[0].port)
        for i in range(KEYS):
            rc.set(f"mixed:{i}", i)
        assert rc.mget_nonatomic([f"mixed:{i}" for i in range(KEYS)]) == [str(i).encode() for i in range(KEYS)]
        assert nodes[2].c.dbsize() > 0
        # The redis-servers see the node as a connected primary.
        for n in nodes[:2]:
            assert flags_of(n, nodes[2].port) == ["master"]
        rc.close()
    finally:
        for n in nodes:
            n.kill()


@pytest.mark.skipif(REDIS_CLI is None, reason="redis-cli is not installed")
def test_a_primary_that_loses_a_slot_to_a_newer_claim_deletes_its_keys(tmp_path):
    """Another primary takes a slot (SETSLOT NODE to itself, then BUMPEPOCH:
    its claim has the greater config epoch); the primary that served it,
    still serving others, deletes the slot's keys (Redis's
    clusterUpdateSlotsConfigWith and delKeysInSlot) and keeps the rest."""
    nodes = [node_in_cluster_mode(tmp_path) for _ in range(3)]
    try:
        create(nodes)
        a, b = nodes[0], nodes[1]
        mine = a.c.execute_command("CLUSTER", "NODES").decode()
        assert " 0-5460" in next(l for l in mine.splitlines() if "myself" in l), mine
        tags = [t for t in (f"t{i}" for i in range(100))
                if int(a.c.execute_command("CLUSTER", "KEYSLOT", "{%s}" % t)) <= 5460]
        lost, kept = tags[0], tags[1]
        slot = int(a.c.execute_command("CLUSTER", "KEYSLOT", "{%s}" % lost))
        for i in range(5):
            a.c.set("{%s}:%d" % (lost, i), i)
        a.c.set("{%s}:x" % kept, "stays")
        assert a.c.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == 5
        b_id = b.c.execute_command("CLUSTER", "MYID")
        b_id = b_id.decode() if isinstance(b_id, bytes) else b_id
        assert b.c.execute_command("CLUSTER", "SETSLOT", slot, "NODE", b_id) in (b"OK", "OK", True)
        assert b.c.execute_command("CLUSTER", "BUMPEPOCH").split()[0] in (b"BUMPED", "BUMPED")
        wait_until(lambda: a.c.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == 0,
                   "the lost slot's keys deleted")
        assert a.c.get("{%s}:x" % kept) == b"stays"
        assert a.c.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 10) == []
    finally:
        for n in nodes:
            n.kill()


@pytest.mark.skipif(REDIS_CLI is None, reason="redis-cli is not installed")
def test_redis_cli_reshard_under_writes_loses_no_key(tmp_path):
    """`redis-cli --cluster reshard` moves slots (SETSLOT IMPORTING and
    MIGRATING, GETKEYSINSLOT, MIGRATE … KEYS, which sends RESTORE-ASKING,
    SETSLOT NODE) while a client keeps writing; every key written is read
    back afterwards, from wherever its slot went."""
    import threading

    nodes = [node_in_cluster_mode(tmp_path) for _ in range(3)]
    try:
        create(nodes)
        rc = RedisCluster(host="127.0.0.1", port=nodes[0].port)
        for i in range(KEYS):
            rc.set(f"before:{i}", i)
        written = []
        stop = threading.Event()

        def writer():
            w = RedisCluster(host="127.0.0.1", port=nodes[1].port)
            i = 0
            # Bounded by the reshard's end.
            while not stop.is_set() and i < 100000:
                w.set(f"during:{i}", i)
                written.append(i)
                i += 1
            w.close()

        t = threading.Thread(target=writer)
        t.start()
        src = nodes[0].c.execute_command("CLUSTER", "MYID").decode()
        dst = nodes[1].c.execute_command("CLUSTER", "MYID").decode()
        out = subprocess.run(
            [REDIS_CLI, "--cluster", "reshard", f"127.0.0.1:{nodes[0].port}", "--cluster-from", src,
             "--cluster-to", dst, "--cluster-slots", "300", "--cluster-yes"],
            capture_output=True, text=True, timeout=300,
        )
        stop.set()
        t.join()
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr
        check = subprocess.run([REDIS_CLI, "--cluster", "check", f"127.0.0.1:{nodes[0].port}"],
                               capture_output=True, text=True, timeout=60)
        assert "[OK] All 16384 slots covered." in check.stdout, check.stdout
        assert "open" not in check.stdout.split("Check for open slots...")[1].split("Check slots coverage")[0]
        assert written, "the writer wrote nothing"
        got = rc.mget_nonatomic([f"before:{i}" for i in range(KEYS)])
        assert got == [str(i).encode() for i in range(KEYS)]
        got = rc.mget_nonatomic([f"during:{i}" for i in written])
        assert got == [str(i).encode() for i in written]
        info = {n.port: n.c.cluster("NODES") for n in nodes}
        assert all(len(v) == 3 for v in info.values())
        rc.close()
    finally:
        for n in nodes:
            n.kill()


def create_with_replicas(nodes):
    """`redis-cli --cluster create … --cluster-replicas 1` of six nodes:
    three primaries, each with a replica; waits for every node's ok and
    for every replica's link to be up."""
    out = subprocess.run(
        [REDIS_CLI, "--cluster", "create"] + [f"127.0.0.1:{n.port}" for n in nodes]
        + ["--cluster-replicas", "1", "--cluster-yes"],
        capture_output=True, text=True, timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    for n in nodes:
        wait_until(lambda: state(n) == "ok", f"cluster_state:ok on {n.port}")
    for n in nodes:
        def linked():
            info = n.c.info("replication")
            return info["role"] == "master" or info.get("master_link_status") == "up"
        wait_until(linked, f"replication link of {n.port}")
    wait_until(lambda: agree(nodes), "every node's view of the roles", FAILURE_WAIT_S)


def roles(node):
    """Each node's role and primary as `node` sees them."""
    out = {}
    for line in node.c.execute_command("CLUSTER", "NODES").decode().splitlines():
        f = line.split(" ")
        out[f[0]] = ("slave" in f[2], f[3])
    return out


def agree(nodes):
    """True once every node sees the same roles (a primary learns its
    replicas by gossip, after redis-cli's replication set-up)."""
    views = [roles(n) for n in nodes]
    return all(v == views[0] for v in views) and len(views[0]) == len(nodes)


def role_of(node):
    return node.c.info("replication")["role"]


def replica_of(nodes, primary):
    """The node replicating `primary`."""
    pid = primary.c.execute_command("CLUSTER", "MYID").decode()
    for n in nodes:
        for line in n.c.execute_command("CLUSTER", "NODES").decode().splitlines():
            f = line.split(" ")
            if "myself" in f[2] and f[3] == pid:
                return n
    raise AssertionError("no replica")


@pytest.mark.skipif(REDIS_CLI is None, reason="redis-cli is not installed")
def test_a_killed_primary_is_replaced_and_no_write_acknowledged_by_wait_is_lost(tmp_path):
    nodes = [node_in_cluster_mode(tmp_path) for _ in range(6)]
    try:
        create_with_replicas(nodes)
        primary = next(n for n in nodes if role_of(n) == "master")
        replica = replica_of(nodes, primary)
        slot_keys = []
        # Keys of the primary's slots, each acknowledged by WAIT 1.
        i = 0
        while len(slot_keys) < 300 and i < 100000:
            k = f"acked:{i}"
            i += 1
            slot = primary.c.execute_command("CLUSTER", "KEYSLOT", k)
            if primary.c.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) is None:
                continue
            try:
                primary.c.set(k, k)
            except redis.ResponseError:
                continue  # MOVED: another primary's slot
            assert primary.c.execute_command("WAIT", 1, 5000) == 1
            slot_keys.append(k)
        assert slot_keys
        primary.proc.kill()
        primary.proc.wait()
        # The replica is elected and takes the slots; the cluster is ok.
        wait_until(lambda: role_of(replica) == "master", "the replica promoted", FAILURE_WAIT_S)
        for n in nodes:
            if n is not primary:
                wait_until(lambda: state(n) == "ok", f"cluster_state:ok on {n.port}", FAILURE_WAIT_S)
        for k in slot_keys:
            assert replica.c.get(k) == k.encode(), k
        others = [n for n in nodes if n is not primary]
        rc = RedisCluster(host="127.0.0.1", port=others[0].port)
        assert rc.mget_nonatomic(slot_keys) == [k.encode() for k in slot_keys]
        rc.close()
        # The old primary, back, follows the new one.
        back = restart(primary)
        nodes[nodes.index(primary)] = back
        wait_until(lambda: role_of(back) == "slave", "the old primary a replica", FAILURE_WAIT_S)
    finally:
        for n in nodes:
            n.kill()


@pytest.mark.skipif(REDIS_CLI is None, reason="redis-cli is not installed")
def test_cluster_failover_default_force_and_takeover_swap_the_roles(tmp_path):
    nodes = [node_in_cluster_mode(tmp_path) for _ in range(6)]
    try:
        create_with_replicas(nodes)
        primary = next(n for n in nodes if role_of(n) == "master")
        replica = replica_of(nodes, primary)
        with pytest.raises(redis.ResponseError, match="You should send CLUSTER FAILOVER to a replica"):
            primary.c.execute_command("CLUSTER", "FAILOVER")
        with pytest.raises(redis.ResponseError, match="syntax error"):
            replica.c.execute_command("CLUSTER", "FAILOVER", "SOON")
        for mode in [None, "FORCE", "TAKEOVER"]:
            args = ["CLUSTER", "FAILOVER"] + ([mode] if mode else [])
            assert replica.c.execute_command(*args) in (b"OK", True)
            wait_until(lambda: role_of(replica) == "master", f"promoted by FAILOVER {mode}", FAILURE_WAIT_S)
            wait_until(lambda: role_of(primary) == "slave", f"demoted by FAILOVER {mode}", FAILURE_WAIT_S)
            for n in nodes:
                wait_until(lambda: state(n) == "ok", f"cluster_state:ok on {n.port}", FAILURE_WAIT_S)
            primary, replica = replica, primary
            wait_until(lambda: replica.c.info("replication").get("master_link_status") == "up",
                       "the new replica's link", FAILURE_WAIT_S)
            wait_until(lambda: agree(nodes), "every node's view of the roles", FAILURE_WAIT_S)
    finally:
        for n in nodes:
            n.kill()


@pytest.mark.skipif(REDIS_CLI is None, reason="redis-cli is not installed")
def test_publish_reaches_the_subscribers_of_every_node(tmp_path):
    nodes = [node_in_cluster_mode(tmp_path) for _ in range(3)]
    try:
        create(nodes)
        subs = []
        for n in nodes:
            p = n.client().pubsub()
            p.subscribe("news")
            assert p.get_message(timeout=5)["type"] == "subscribe"
            subs.append(p)
        # The reply counts this node's subscribers; every node's get it.
        assert nodes[0].c.publish("news", "hello") == 1
        for p in subs:
            m = None
            deadline = time.monotonic() + 10
            while m is None and time.monotonic() < deadline:
                m = p.get_message(timeout=1)
            assert m is not None and m["data"] == b"hello", m
            p.close()
    finally:
        for n in nodes:
            n.kill()


def _mc_port(node):
    return int(node.argv[node.argv.index("-p") + 1])


def _local_and_foreign(node, count):
    """`count` keys this node serves and `count` it redirects, each foreign
    one with the MOVED text RESP answers for it."""
    local, foreign = [], []
    for i in range(100000):
        if len(local) >= count and len(foreign) >= count:
            break
        k = f"mc:{i}"
        try:
            node.c.get(k)
            local.append(k)
        except redis.exceptions.MovedError as e:
            # redis-py keeps what follows MOVED: "slot ip:port".
            foreign.append((k, f"MOVED {e}"))
    return local[:count], foreign[:count]


def _raw(port, request, want):
    """Sends `request` on a fresh socket and reads until `want` bytes."""
    import socket
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(request)
        got = b""
        while len(got) < want:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
        return got


@pytest.mark.skipif(not NODE_BIN or "amalgam" not in os.path.basename(NODE_BIN),
                    reason="the memcached port is Amalgam's (redis-server has none)")
def test_memcached_port_serves_only_its_own_slots(tmp_path):
    """A cluster node's memcached port serves the keys of its own slots and
    refuses another node's with the redirection RESP answers, as memcached's
    SERVER_ERROR (text and meta) or NOT_MY_VBUCKET (binary), writing
    nothing; the connection goes on."""
    from pymemcache.client.base import Client
    from pymemcache.exceptions import MemcacheServerError
    import struct

    nodes = [node_in_cluster_mode(tmp_path) for _ in range(3)]
    try:
        create(nodes)
        n0 = nodes[0]
        local, foreign = _local_and_foreign(n0, 3)
        mc = Client(("127.0.0.1", _mc_port(n0)), timeout=5)
        # Its own slots: served, and shared with RESP's database 0.
        mc.set(local[0], b"here")
        assert mc.get(local[0]) == b"here"
        assert n0.c.get(local[0]) == b"here"
        key, moved = foreign[0]
        # Another node's slot: the redirection, and nothing written here
        # or there.
        with pytest.raises(MemcacheServerError, match=moved):
            mc.set(key, b"nowhere", noreply=False)
        with pytest.raises(MemcacheServerError, match=moved):
            mc.get(key)
        with pytest.raises(MemcacheServerError, match=moved):
            mc.delete(key, noreply=False)
        with pytest.raises(MemcacheServerError, match=moved):
            mc.incr(key, 1)
        owner = next(n for n in nodes if moved.endswith(f":{n.port}"))
        assert owner.c.get(key) is None
        # Keys of two slots in one get: CROSSSLOT, no value answered.
        with pytest.raises(MemcacheServerError, match="hash to the same slot"):
            mc.get_many([local[0], key])
        # A noreply write is refused silently: the next reply is the next
        # request's.
        mc.set(key, b"x", noreply=True)
        assert mc.get(local[0]) == b"here"
        mc.close()
        port = _mc_port(n0)
        # The meta protocol: the same line, after the request before it.
        want = f"MN\r\nSERVER_ERROR {moved}\r\nVA 4\r\nhere\r\n".encode()
        assert _raw(port, f"mn\r\nmg {key} v\r\nmg {local[0]} v\r\n".encode(), len(want)) == want
        # The binary protocol: NOT_MY_VBUCKET (0x0007) with the text.
        k = key.encode()
        get = struct.pack(">BBHBBHIIQ", 0x80, 0x00, len(k), 0, 0, 0, len(k), 0xABCD, 0) + k
        resp = _raw(port, get, 24 + len(moved))
        magic, opcode, _, _, _, status, body_len, opaque, _ = struct.unpack(">BBHBBHIIQ", resp[:24])
        assert (magic, opcode, status, opaque, resp[24:]) == (0x81, 0x00, 0x0007, 0xABCD, moved.encode())
    finally:
        for n in nodes:
            n.kill()


def bus_port(node):
    """The cluster bus port `node` was started with."""
    return int(node.argv[node.argv.index("--cluster-port") + 1])


def myid(node):
    return node.c.execute_command("CLUSTER", "MYID").decode()


def primary_of(node):
    """The primary `node` says it replicates (its own CLUSTER NODES line)."""
    for line in node.c.execute_command("CLUSTER", "NODES").decode().splitlines():
        f = line.split(" ")
        if "myself" in f[2]:
            return None if f[3] == "-" else f[3]
    return None


def attach_replica(replica, primary, everyone):
    """`replica` (a new, empty node) joins through `primary` by CLUSTER
    MEET and replicates it by CLUSTER REPLICATE, as `redis-cli --cluster
    add-node --cluster-slave` does; waits for the replication link."""
    replica.c.execute_command("CLUSTER", "MEET", "127.0.0.1", primary.port, bus_port(primary))
    pid = myid(primary)
    wait_until(lambda: pid in replica.c.execute_command("CLUSTER", "NODES").decode(),
               f"{replica.port} learns {primary.port}", FAILURE_WAIT_S)
    assert replica.c.execute_command("CLUSTER", "REPLICATE", pid) in (b"OK", True)
    wait_until(lambda: replica.c.info("replication").get("master_link_status") == "up",
               f"the replication link of {replica.port}", FAILURE_WAIT_S)
    wait_until(lambda: agree(everyone), "every node's view of the roles", FAILURE_WAIT_S)


@pytest.mark.skipif(REDIS_CLI is None, reason="redis-cli is not installed")
def test_a_replica_migrates_to_an_orphaned_primary(tmp_path):
    """Three primaries: A with two replicas, B and C with one each.
    B's replica dies: B is orphaned, and one replica of A (the one with
    the smaller name, A keeping more than cluster-migration-barrier 1)
    replicates B instead (Redis's replica migration). C has a replica so
    that B is the only orphan: Redis also counts a primary that never
    had a replica as one, if it got its slots while others had replicas
    (its issue 3043), and would pick either."""
    nodes = [node_in_cluster_mode(tmp_path) for _ in range(7)]
    try:
        a, b, c = nodes[:3]
        create([a, b, c])
        ra1, ra2, rb, rc = nodes[3:]
        joined = [a, b, c]
        for r, p in [(ra1, a), (ra2, a), (rb, b), (rc, c)]:
            joined.append(r)
            attach_replica(r, p, joined)
        aid, bid = myid(a), myid(b)
        assert primary_of(ra1) == aid and primary_of(ra2) == aid and primary_of(rb) == bid
        rb.proc.kill()
        rb.proc.wait()
        alive = [a, b, c, ra1, ra2, rc]
        wait_until(lambda: any(primary_of(r) == bid for r in (ra1, ra2)),
                   "a replica of A migrates to B", 3 * FAILURE_WAIT_S)
        moved = ra1 if primary_of(ra1) == bid else ra2
        stayed = ra2 if moved is ra1 else ra1
        assert min(myid(ra1), myid(ra2)) == myid(moved)
        assert primary_of(stayed) == aid
        # It replicates B for real, and every node sees it there.
        wait_until(lambda: moved.c.info("replication").get("master_port") == b.port
                   and moved.c.info("replication").get("master_link_status") == "up",
                   "the migrated replica's link to B", FAILURE_WAIT_S)
        for n in alive:
            wait_until(lambda: roles(n).get(myid(moved)) == (True, bid),
                       f"{n.port} sees the migration", FAILURE_WAIT_S)
    finally:
        for n in nodes:
            n.kill()


@pytest.mark.skipif(REDIS_CLI is None, reason="redis-cli is not installed")
def test_a_no_failover_replica_is_not_elected_but_cluster_failover_force_works(tmp_path):
    """A replica with cluster-replica-no-failover yes: every node's
    CLUSTER NODES shows it `nofailover`; its primary killed, it starts no
    election (the slots stay failed, the cluster down) until CLUSTER
    FAILOVER FORCE asks it to."""
    nodes = [node_in_cluster_mode(tmp_path) for _ in range(4)]
    try:
        a, b, c, r = nodes
        create([a, b, c])
        attach_replica(r, a, nodes)
        assert r.c.config_set("cluster-replica-no-failover", "yes")
        for n in nodes:
            wait_until(lambda: "nofailover" in (flags_of(n, r.port) or []) and "slave" in flags_of(n, r.port),
                       f"{n.port} sees the replica nofailover", FAILURE_WAIT_S)
        a.proc.kill()
        a.proc.wait()
        for n in (b, c):
            wait_until(lambda: "fail" in (flags_of(n, a.port) or []), f"{n.port} marks A failed", FAILURE_WAIT_S)
            wait_until(lambda: state(n) == "fail", f"cluster_state:fail on {n.port}", FAILURE_WAIT_S)
        # Several election delays (0.5-1.5 s each) and node timeouts pass:
        # no election, the replica stays one, the cluster down.
        deadline = time.monotonic() + 4 * NODE_TIMEOUT_MS / 1000
        while time.monotonic() < deadline:
            assert role_of(r) == "slave"
            assert state(b) == "fail"
            time.sleep(0.2)
        # A manual failover still runs.
        assert r.c.execute_command("CLUSTER", "FAILOVER", "FORCE") in (b"OK", True)
        wait_until(lambda: role_of(r) == "master", "promoted by CLUSTER FAILOVER FORCE", FAILURE_WAIT_S)
        for n in (b, c, r):
            wait_until(lambda: state(n) == "ok", f"cluster_state:ok on {n.port}", FAILURE_WAIT_S)
        assert "nofailover" in flags_of(b, r.port)
    finally:
        for n in nodes:
            n.kill()


REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NODE = shutil.which("node")
IOREDIS_CLUSTER_SCRIPT = os.path.join(REPO, "tests", "node", "cluster", "ioredis_cluster.mjs")
HAS_IOREDIS = os.path.isdir(os.path.join(REPO, "tests", "node", "node_modules", "ioredis"))


@pytest.mark.skipif(REDIS_CLI is None, reason="redis-cli is not installed")
@pytest.mark.skipif(NODE is None or not HAS_IOREDIS,
                    reason="node or tests/node/node_modules/ioredis is missing (scripts/test.sh installs it)")
def test_ioredis_cluster_client(tmp_path):
    """ioredis's `Redis.Cluster` against three primaries: keys across
    slots, hash tags, a pipeline, MULTI, and a slot moved with its keys
    behind the client's back (MOVED); tests/node/cluster/ioredis_cluster.mjs
    does the work and exits 0 when all holds."""
    nodes = [node_in_cluster_mode(tmp_path) for _ in range(3)]
    try:
        create(nodes)
        env = dict(os.environ, AMALGAM_TEST_CLUSTER_NODES=",".join(f"127.0.0.1:{n.port}" for n in nodes))
        out = subprocess.run([NODE, IOREDIS_CLUSTER_SCRIPT], capture_output=True, text=True,
                             timeout=180, env=env, cwd=os.path.dirname(IOREDIS_CLUSTER_SCRIPT))
        print(out.stdout)
        assert out.returncode == 0, out.stdout + out.stderr
        assert out.stdout.rstrip().endswith("ok"), out.stdout + out.stderr
    finally:
        for n in nodes:
            n.kill()


def cli(*args, timeout=120):
    """`redis-cli --cluster …`, its output."""
    return subprocess.run([REDIS_CLI, "--cluster"] + list(args), capture_output=True, text=True, timeout=timeout)


def cluster_check_ok(node):
    """`redis-cli --cluster check` through `node` exits 0, every node
    agreeing and every slot covered."""
    out = cli("check", f"127.0.0.1:{node.port}")
    return (out.returncode == 0 and "[OK] All nodes agree about slots configuration." in out.stdout
            and "[OK] All 16384 slots covered." in out.stdout)


def known_ids(node):
    return {line.split(" ")[0] for line in node.c.execute_command("CLUSTER", "NODES").decode().splitlines()}


def slots_of(node, node_id):
    """The slots `node`'s CLUSTER NODES gives `node_id`."""
    for line in node.c.execute_command("CLUSTER", "NODES").decode().splitlines():
        f = line.split(" ")
        if f[0] == node_id:
            out = set()
            for r in f[8:]:
                if r.startswith("["):
                    continue  # a slot being migrated or imported
                lo, _, hi = r.partition("-")
                out.update(range(int(lo), int(hi or lo) + 1))
            return out
    return None


@pytest.mark.skipif(REDIS_SERVER is None or REDIS_CLI is None, reason="redis-server or redis-cli is not installed")
def test_redis_cli_add_node_and_reshard_into_it(tmp_path):
    """The node under test added to a cluster of three redis-server 7.0
    primaries by `redis-cli --cluster add-node`, given 100 slots of one of
    them with their keys by `redis-cli --cluster reshard`, 50 of those
    resharded back from it to another redis-server (the node under test
    the migration's source), then a replica of it added by `add-node
    --cluster-slave --cluster-master-id`."""
    from redis.crc import key_slot

    nodes = [node_in_cluster_mode(tmp_path, REDIS_SERVER) for _ in range(3)]
    new = node_in_cluster_mode(tmp_path)
    replica = None
    try:
        create(nodes)
        src = myid(nodes[0])
        src_slots = sorted(slots_of(nodes[0], src))
        # Three keys in each of the source's first 100 slots (reshard takes
        # a source's slots from its lowest), and keys everywhere.
        first = set(src_slots[:100])
        want = {s: 3 for s in first}
        keys = [f"spread:{i}" for i in range(KEYS)]
        i = 0
        while want and i < 10_000_000:
            k = f"moving:{i}"
            i += 1
            s = key_slot(k.encode())
            if s in want:
                keys.append(k)
                want[s] -= 1
                if not want[s]:
                    del want[s]
        assert not want
        rc = RedisCluster(host="127.0.0.1", port=nodes[0].port)
        for k in keys:
            rc.set(k, k)
        rc.close()

        out = cli("add-node", f"127.0.0.1:{new.port}", f"127.0.0.1:{nodes[1].port}")
        assert out.returncode == 0, out.stdout + out.stderr
        assert "[OK] New node added correctly." in out.stdout, out.stdout
        new_id = myid(new)
        everyone = nodes + [new]
        ids = {myid(n) for n in everyone}
        for n in everyone:
            wait_until(lambda: known_ids(n) == ids, f"{n.port} knows every node", FAILURE_WAIT_S)
        # A primary without slots; the cluster ok on it too.
        for n in everyone:
            wait_until(lambda: "master" in flags_of(n, new.port) and slots_of(n, new_id) == set(),
                       f"{n.port} sees the new node a primary without slots", FAILURE_WAIT_S)
        wait_until(lambda: state(new) == "ok", "cluster_state:ok on the new node", FAILURE_WAIT_S)
        wait_until(lambda: cluster_check_ok(nodes[0]), "redis-cli --cluster check before the reshard",
                   FAILURE_WAIT_S)

        out = cli("reshard", f"127.0.0.1:{nodes[0].port}", "--cluster-from", src, "--cluster-to", new_id,
                  "--cluster-slots", "100", "--cluster-yes", timeout=300)
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr
        for n in everyone:
            wait_until(lambda: slots_of(n, new_id) == first, f"{n.port} sees the new node's 100 slots",
                       FAILURE_WAIT_S)
        wait_until(lambda: cluster_check_ok(new), "redis-cli --cluster check after the reshard", FAILURE_WAIT_S)
        out = cli("check", f"127.0.0.1:{new.port}")
        assert out.returncode == 0, out.stdout + out.stderr
        assert "[OK] All 16384 slots covered." in out.stdout, out.stdout

        # Every key readable through a cluster client; the moved ones on
        # the new node, and gone from the source.
        rc = RedisCluster(host="127.0.0.1", port=new.port)
        assert rc.mget_nonatomic(keys) == [k.encode() for k in keys]
        rc.close()
        moved = [k for k in keys if key_slot(k.encode()) in first]
        assert len(moved) >= 300
        assert new.c.dbsize() == len(moved)
        for k in moved:
            assert new.c.get(k) == k.encode(), k
        for s in first:
            assert nodes[0].c.execute_command("CLUSTER", "COUNTKEYSINSLOT", s) == 0
        assert sum(n.c.dbsize() for n in everyone) == len(keys)

        # Half of them back to another primary: the node under test is the
        # reshard's source (its MIGRATE, its SETSLOT MIGRATING).
        back_to = myid(nodes[1])
        out = cli("reshard", f"127.0.0.1:{new.port}", "--cluster-from", new_id, "--cluster-to", back_to,
                  "--cluster-slots", "50", "--cluster-yes", timeout=300)
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr
        returned = set(sorted(first)[:50])
        kept = first - returned
        for n in everyone:
            wait_until(lambda: slots_of(n, new_id) == kept, f"{n.port} sees the new node's 50 slots",
                       FAILURE_WAIT_S)
        wait_until(lambda: cluster_check_ok(new), "redis-cli --cluster check after the reshard back",
                   FAILURE_WAIT_S)
        rc = RedisCluster(host="127.0.0.1", port=nodes[2].port)
        assert rc.mget_nonatomic(keys) == [k.encode() for k in keys]
        rc.close()
        moved_back = [k for k in moved if key_slot(k.encode()) in returned]
        moved = [k for k in moved if key_slot(k.encode()) in kept]
        assert new.c.dbsize() == len(moved)
        for k in moved_back:
            assert nodes[1].c.get(k) == k.encode(), k
        assert sum(n.c.dbsize() for n in everyone) == len(keys)

        # A replica of the new node, by add-node --cluster-slave.
        replica = node_in_cluster_mode(tmp_path)
        everyone.append(replica)
        out = cli("add-node", f"127.0.0.1:{replica.port}", f"127.0.0.1:{nodes[2].port}",
                  "--cluster-slave", "--cluster-master-id", new_id)
        assert out.returncode == 0, out.stdout + out.stderr
        assert "[OK] New node added correctly." in out.stdout, out.stdout
        wait_until(lambda: replica.c.info("replication").get("master_link_status") == "up",
                   "the replica's link to the new node", FAILURE_WAIT_S)
        wait_until(lambda: agree(everyone), "every node's view of the roles", FAILURE_WAIT_S)
        assert primary_of(replica) == new_id
        wait_until(lambda: replica.c.dbsize() == len(moved), "the replica holds the new node's keys",
                   FAILURE_WAIT_S)
        wait_until(lambda: cluster_check_ok(nodes[0]), "redis-cli --cluster check with the replica",
                   FAILURE_WAIT_S)
        out = cli("check", f"127.0.0.1:{nodes[0].port}")
        assert f"{len(moved)} keys | 50 slots | 1 slaves." in out.stdout, out.stdout
    finally:
        for n in nodes + [new] + ([replica] if replica else []):
            n.kill()


def slots_and_shards(node):
    """`node`'s CLUSTER SLOTS as {node id: listed}, and its CLUSTER SHARDS
    as {node id: (role, replication-offset, health)}."""
    listed = {e[2].decode() for r in node.c.execute_command("CLUSTER", "SLOTS") for e in r[2:]}
    shards = {}
    for shard in node.c.execute_command("CLUSTER", "SHARDS"):
        for n in shard[b"nodes"]:
            shards[n[b"id"].decode()] = (n[b"role"].decode(), n[b"replication-offset"], n[b"health"].decode())
    return listed, shards


@pytest.mark.skipif(REDIS_CLI is None, reason="redis-cli is not installed")
def test_cluster_slots_lists_the_replicas_cluster_shards_calls_online(tmp_path):
    """Redis 7.0 leaves out of CLUSTER SLOTS a replica whose replication
    offset is 0 (it has not finished its first sync; ioredis's scaleReads
    and other clients read replicas from there), and CLUSTER SHARDS calls
    it `loading`; a node gives its own offset from its replication, not
    from its node table. After writes every offset is above 0, every
    replica listed and online, on every node."""
    nodes = [node_in_cluster_mode(tmp_path) for _ in range(6)]
    try:
        create_with_replicas(nodes)
        for n in nodes:
            listed, shards = slots_and_shards(n)
            for nid, (role, offset, health) in shards.items():
                if role == "replica":
                    assert (nid in listed) == (offset != 0), (n.port, nid, shards)
                    assert health == ("online" if offset else "loading"), (n.port, nid, shards)
                else:
                    assert health == "online" and nid in listed, (n.port, nid, shards)
        rc = RedisCluster(host="127.0.0.1", port=nodes[0].port)
        for i in range(300):
            rc.set(f"offset:{i}", i)
        rc.close()

        def settled(n):
            listed, shards = slots_and_shards(n)
            return (len(shards) == 6 and listed == set(shards)
                    and all(o > 0 and h == "online" for _, o, h in shards.values()))
        for n in nodes:
            wait_until(lambda: settled(n), f"{n.port} lists every replica, every offset above 0", FAILURE_WAIT_S)
            mine = myid(n)
            _, shards = slots_and_shards(n)
            info = n.c.info("replication")
            assert shards[mine][1] > 0, shards[mine]
            if info["role"] == "master":
                assert shards[mine][1] <= info["master_repl_offset"], (shards[mine], info)
    finally:
        for n in nodes:
            n.kill()


def _slots_of(node):
    """The (start, end) ranges `node` serves, from its CLUSTER SLOTS."""
    out = []
    for r in node.c.execute_command("CLUSTER", "SLOTS"):
        if int(r[2][1]) == node.port:
            out.append((int(r[0]), int(r[1])))
    return out


def _channel_in(node, prefix):
    """A channel name whose slot `node` serves, and that slot."""
    ranges = _slots_of(node)
    for i in range(100000):
        ch = f"{prefix}:{i}"
        slot = node.c.execute_command("CLUSTER", "KEYSLOT", ch)
        if any(a <= slot <= b for a, b in ranges):
            return ch, slot
    raise AssertionError("no channel found")


def _next(p, want_type, timeout_s=10):
    """The next message of `want_type` on pubsub `p`, or None."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        m = p.get_message(timeout=0.5)
        if m is not None and m["type"] == want_type:
            return m
    return None


def _publishshard_received(node):
    info = node.c.cluster("INFO")
    return int(info.get("cluster_stats_messages_publishshard_received", 0))


@pytest.mark.skipif(REDIS_CLI is None, reason="redis-cli is not installed")
def test_spublish_reaches_the_shard_and_a_moved_slot_unsubscribes(tmp_path):
    nodes = [node_in_cluster_mode(tmp_path) for _ in range(6)]
    subs = []
    try:
        create_with_replicas(nodes)
        primary = next(n for n in nodes if role_of(n) == "master")
        replica = replica_of(nodes, primary)
        other = next(n for n in nodes if role_of(n) == "master" and n is not primary)
        other_replica = replica_of(nodes, other)
        ch, slot = _channel_in(primary, "news")
        ch_other, _ = _channel_in(other, "news")

        # Routed as a key: several slots refused, a non-owner redirects,
        # a replica of the owner serves it without READONLY.
        with pytest.raises(redis.ResponseError, match="hash to the same slot"):
            primary.client().execute_command("SSUBSCRIBE", ch, ch_other)
        with pytest.raises(redis.ResponseError, match=f"^{slot} "):
            other.client().execute_command("SSUBSCRIBE", ch)
        with pytest.raises(redis.ResponseError, match=f"^{slot} "):
            other.c.execute_command("SPUBLISH", ch, "x")
        with pytest.raises(redis.ResponseError, match=f"^{slot} "):
            other_replica.c.execute_command("SPUBLISH", ch, "x")

        for n in (primary, replica):
            p = n.client().pubsub()
            p.ssubscribe(ch)
            assert _next(p, "ssubscribe")["channel"] == ch.encode()
            subs.append(p)
        q = other.client().pubsub()
        q.ssubscribe(ch_other)
        assert _next(q, "ssubscribe") is not None
        subs.append(q)
        assert primary.c.execute_command("PUBSUB", "SHARDCHANNELS") == [ch.encode()]
        assert primary.c.execute_command("PUBSUB", "SHARDNUMSUB", ch) == [ch.encode(), 1]
        assert other.c.execute_command("PUBSUB", "SHARDNUMSUB", ch) == [ch.encode(), 0]

        # The reply counts this node's subscribers; the shard's get it.
        assert primary.c.execute_command("SPUBLISH", ch, "hello") == 1
        for p in subs[:2]:
            m = _next(p, "smessage")
            assert m is not None and m["data"] == b"hello", m
        # A replica serves SPUBLISH too, and sends it to its shard.
        assert replica.c.execute_command("SPUBLISH", ch, "from-replica") == 1
        for p in subs[:2]:
            m = _next(p, "smessage")
            assert m is not None and m["data"] == b"from-replica", m
        # Nothing went to the other shard's nodes.
        assert _next(q, "smessage", timeout_s=1) is None
        assert _publishshard_received(replica) >= 1
        assert _publishshard_received(other) == 0
        assert _publishshard_received(other_replica) == 0

        # While the slot migrates, its channel is still served here.
        pid, oid = myid(primary), myid(other)
        assert other.c.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", pid) in (b"OK", True)
        assert primary.c.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", oid) in (b"OK", True)
        assert primary.c.execute_command("SPUBLISH", ch, "migrating") == 1
        assert _next(subs[0], "smessage")["data"] == b"migrating"

        # The slot moves away: the shard's subscribers are unsubscribed,
        # with the count of the shard channels they still hold.
        assert other.c.execute_command("CLUSTER", "SETSLOT", slot, "NODE", oid) in (b"OK", True)
        assert primary.c.execute_command("CLUSTER", "SETSLOT", slot, "NODE", oid) in (b"OK", True)
        for p in subs[:2]:
            m = _next(p, "sunsubscribe", timeout_s=FAILURE_WAIT_S)
            assert m is not None and m["channel"] == ch.encode() and m["data"] == 0, m
        assert primary.c.execute_command("PUBSUB", "SHARDCHANNELS") == []
        wait_until(lambda: replica.c.execute_command("PUBSUB", "SHARDCHANNELS") == [],
                   "the replica's channel gone", FAILURE_WAIT_S)
        with pytest.raises(redis.ResponseError, match=f"^{slot} "):
            primary.c.execute_command("SPUBLISH", ch, "x")
        # The other shard's subscriber kept its channel.
        assert other.c.execute_command("PUBSUB", "SHARDCHANNELS") == [ch_other.encode()]
    finally:
        for p in subs:
            p.close()
        for n in nodes:
            n.kill()


@pytest.mark.skipif(REDIS_CLI is None, reason="redis-cli is not installed")
def test_a_failover_unsubscribes_the_shard_channels_of_the_shard(tmp_path):
    """Redis 7.0 drops a slot's shard channels on the nodes of the shard
    whose slot changes owner, except on the replica that takes it over."""
    nodes = [node_in_cluster_mode(tmp_path) for _ in range(6)]
    subs = []
    try:
        create_with_replicas(nodes)
        primary = next(n for n in nodes if role_of(n) == "master")
        replica = replica_of(nodes, primary)
        ch, _ = _channel_in(primary, "feed")
        for n in (primary, replica):
            p = n.client().pubsub()
            p.ssubscribe(ch)
            assert _next(p, "ssubscribe") is not None
            subs.append(p)
        assert replica.c.execute_command("CLUSTER", "FAILOVER") in (b"OK", True)
        wait_until(lambda: role_of(replica) == "master", "promoted", FAILURE_WAIT_S)
        m = _next(subs[0], "sunsubscribe", timeout_s=FAILURE_WAIT_S)
        assert m is not None and m["channel"] == ch.encode() and m["data"] == 0, m
        wait_until(lambda: role_of(primary) == "slave", "demoted", FAILURE_WAIT_S)
        wait_until(lambda: agree(nodes), "every node's view of the roles", FAILURE_WAIT_S)
        assert _next(subs[1], "sunsubscribe", timeout_s=1) is None
        assert replica.c.execute_command("PUBSUB", "SHARDCHANNELS") == [ch.encode()]
        # The old primary, now a replica, subscribes again; an SPUBLISH on
        # the new primary reaches both.
        subs[0].ssubscribe(ch)
        assert _next(subs[0], "ssubscribe") is not None
        assert replica.c.execute_command("SPUBLISH", ch, "after") == 1
        for p in subs:
            m = _next(p, "smessage")
            assert m is not None and m["data"] == b"after", m
    finally:
        for p in subs:
            p.close()
        for n in nodes:
            n.kill()
