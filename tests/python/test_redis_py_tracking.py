"""Client-side caching (issue 35 §3) with a real client-side cache:
redis-py's own (`protocol=3, cache_config=CacheConfig()`, redis-py >= 5.1),
which turns CLIENT TRACKING on for its connection, keeps the values of
the reads it made, and drops one when the server's `invalidate` push for
its key arrives. The cache must serve repeated reads without the server,
and a write from another connection (and, Amalgam's own, from the
memcached port) must reach it before its next read.

redis-py refuses to cache against a server whose HELLO says anything but
`server: redis` with `version` 7.4 or later, a compatibility policy of the
client, not something the protocol needs (Redis 7.0's tracking is what it
uses). The fixture relaxes that policy to what this server's HELLO says.

Read as test_redis_py.py is: the server is AMALGAM_TEST_RESP_ADDR=host:port
(also run against Debian's redis-server 7.0.15); the memcached port, for
the Amalgam-only test, AMALGAM_TEST_ADDR=host:port.
"""

import os
import socket
import time
import uuid

import pytest
import redis

from test_redis_py import _addr

cache = pytest.importorskip("redis.cache")
import redis.connection as rc  # noqa: E402

# How long a test waits for an invalidation to reach the cache.
INVALIDATION_WAIT_S = 5


def _key(name):
    return f"trk:{uuid.uuid4().hex[:8]}:{name}"


@pytest.fixture
def plain():
    host, port = _addr()
    c = redis.Redis(host=host, port=port, socket_timeout=5, decode_responses=True)
    yield c
    c.close()


@pytest.fixture
def cached(plain, monkeypatch):
    """A redis-py client with its client-side cache on."""
    hello = plain.execute_command("HELLO", "2")
    fields = dict(zip(hello[::2], hello[1::2]))
    monkeypatch.setattr(rc.CacheProxyConnection, "DEFAULT_SERVER_NAME", fields["server"])
    monkeypatch.setattr(rc.CacheProxyConnection, "MIN_ALLOWED_VERSION", fields["version"])
    host, port = _addr()
    c = redis.Redis(
        host=host,
        port=port,
        protocol=3,
        cache_config=cache.CacheConfig(),
        single_connection_client=True,
        socket_timeout=5,
        decode_responses=True,
    )
    yield c
    c.close()


def _get_calls(plain):
    """How many GETs the server has run (INFO commandstats)."""
    stats = plain.info("commandstats")
    return stats.get("cmdstat_get", {}).get("calls", 0)


def _eventually(fn, want):
    deadline = time.monotonic() + INVALIDATION_WAIT_S
    got = fn()
    while got != want and time.monotonic() < deadline:
        time.sleep(0.05)
        got = fn()
    return got


def test_the_cache_serves_repeated_reads_and_tracks(cached, plain):
    k = _key("k")
    plain.set(k, "v1")
    assert cached.get(k) == "v1"
    assert cached.get_cache().size == 1
    # Served from the cache: the server runs no GET for these.
    before = _get_calls(plain)
    for _ in range(5):
        assert cached.get(k) == "v1"
    assert _get_calls(plain) == before
    info = cached.client_trackinginfo()
    assert info["flags"] == ["on"]


def test_a_write_from_another_connection_invalidates(cached, plain):
    k = _key("k")
    plain.set(k, "v1")
    assert cached.get(k) == "v1"
    plain.set(k, "v2")
    assert _eventually(lambda: cached.get(k), "v2") == "v2"
    plain.delete(k)
    assert _eventually(lambda: cached.get(k), None) is None
    # A hash read through the cache, changed elsewhere.
    h = _key("h")
    plain.hset(h, "f", "1")
    assert cached.hget(h, "f") == "1"
    plain.hincrby(h, "f", 1)
    assert _eventually(lambda: cached.hget(h, "f"), "2") == "2"


def test_flushall_empties_the_cache(cached, plain):
    k = _key("k")
    plain.set(k, "v1")
    assert cached.get(k) == "v1"
    assert cached.get_cache().size >= 1
    plain.flushall()
    assert _eventually(lambda: cached.get(k), None) is None


def test_a_write_on_the_memcached_port_invalidates(cached, plain):
    """Amalgam's own: skipped without AMALGAM_TEST_ADDR (redis-server has
    no memcached port)."""
    mc_addr = os.environ.get("AMALGAM_TEST_ADDR")
    if not mc_addr:
        pytest.skip("AMALGAM_TEST_ADDR is not set: no memcached port beside this RESP server")
    host, port = mc_addr.rsplit(":", 1)
    k = _key("m")
    plain.set(k, "v1")
    assert cached.get(k) == "v1"
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(f"set {k} 0 0 2\r\nv2\r\n".encode())
        assert s.recv(64) == b"STORED\r\n"
        assert _eventually(lambda: cached.get(k), "v2") == "v2"
        s.sendall(f"delete {k}\r\n".encode())
        assert s.recv(64) == b"DELETED\r\n"
    assert _eventually(lambda: cached.get(k), None) is None
