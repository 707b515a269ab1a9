"""Redis Cluster with real cluster tooling (issue 38): redis-py's
RedisCluster client and Debian's `redis-cli --cluster check` against a
cluster node of the test's own.

The node binary comes from AMALGAM_TEST_REPL_BIN, as test_replication.py's:
the amalgam under test, or Debian's redis-server in CI's Redis pass (proof
that what is asserted here is what Redis does). Until the cluster bus
lands (docs/cluster.md) a cluster is one node owning every slot.
"""

import os
import shutil
import subprocess

import pytest
import redis
from redis.cluster import RedisCluster

from test_replication import NODE_BIN, free_port, start_node, wait_until

pytestmark = pytest.mark.skipif(
    not NODE_BIN, reason="AMALGAM_TEST_REPL_BIN is not set (scripts/test.sh sets it)"
)

KEYS = 2000


def cluster_node(tmp_path):
    """One node in cluster mode owning all 16384 slots, its state ok."""
    port = free_port()
    extra = [
        "--cluster-enabled", "yes",
        "--cluster-config-file", str(tmp_path / f"nodes-{port}.conf"),
        "--cluster-port", str(free_port()),
    ]
    node = start_node(port, extra=extra, conf_dir=str(tmp_path))
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
