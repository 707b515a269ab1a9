"""redis-py: HyperLogLogs moving between the server under test and a
redis-server of this file's own (issue 36 §2).

A HyperLogLog is a plain string in Redis, with Redis's exact bytes, so a
value made by one server counts the same in the other: sparse and dense
values are made in the peer redis-server, carried by DUMP/RESTORE (and by
GET/SET) into the server under test, and counted there; then the other
way round; then PFMERGE of values from both, in both, must agree to the
byte.

The server under test is AMALGAM_TEST_RESP_ADDR=host:port, as in
test_redis_py.py (scripts/test.sh runs this against amalgam and against
Debian's redis-server 7.0.15); each test runs with RESP2 and RESP3. The
peer is a redis-server started on a free port for this file, in a
scratch directory, and stopped at its end; the tests skip when
`redis-server` is not on PATH. Keys have unique names and are deleted.
"""

import os
import shutil
import socket
import subprocess
import tempfile
import time

import pytest
import redis

from test_redis_py import _addr, k  # noqa: F401

REDIS_BIN = shutil.which("redis-server")
START_TIMEOUT_S = 10.0
POLL_S = 0.05
# Elements of a sparse and of a dense HyperLogLog (sparse up to about
# 2,000 elements at Redis's default hll-sparse-max-bytes of 3000).
SPARSE_ELEMENTS = 300
DENSE_ELEMENTS = 20000


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def peer_port():
    """A redis-server of this module's own: its port."""
    if not REDIS_BIN:
        pytest.skip("redis-server is not installed")
    folder = tempfile.mkdtemp(prefix="amalgam-hll-")
    port = _free_port()
    argv = [REDIS_BIN, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
            "--dir", folder]
    with open(os.path.join(folder, "redis.log"), "wb") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    try:
        c = redis.Redis(port=port, socket_timeout=0.5, socket_connect_timeout=0.5)
        deadline = time.monotonic() + START_TIMEOUT_S
        # Bounded by the deadline.
        while True:
            try:
                if c.ping():
                    break
            except redis.ConnectionError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
            time.sleep(POLL_S)
        c.close()
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def pair(request, peer_port):
    """(server under test, peer redis-server): bytes clients of the test's
    protocol; every key named through `name` is deleted from both after."""
    host, port = _addr()
    ours = redis.Redis(host=host, port=port, protocol=request.param, socket_timeout=10)
    peer = redis.Redis(port=peer_port, protocol=request.param, socket_timeout=10)
    used = []

    def name(tag):
        n = k(tag)
        used.append(n)
        return n

    yield ours, peer, name
    if used:
        ours.delete(*used)
        peer.delete(*used)
    ours.close()
    peer.close()


def _elements(prefix, n):
    return [f"{prefix}{i}" for i in range(n)]


def _fill(c, key, prefix, n):
    """PFADD of n elements, in order, in a few commands."""
    for start in range(0, n, 5000):
        c.pfadd(key, *_elements(prefix, n)[start:start + 5000])


def _encoding(c, key):
    e = c.execute_command("PFDEBUG", "ENCODING", key)
    return e.decode() if isinstance(e, bytes) else e


@pytest.mark.parametrize("n,encoding", [(SPARSE_ELEMENTS, "sparse"), (DENSE_ELEMENTS, "dense")])
def test_made_by_redis_counted_here(pair, n, encoding):
    ours, peer, name = pair
    key = name("from-redis")
    _fill(peer, key, "r", n)
    assert _encoding(peer, key) == encoding
    made = peer.get(key)
    ours.restore(key, 0, peer.dump(key))
    assert ours.get(key) == made, "RESTORE keeps Redis's bytes"
    assert _encoding(ours, key) == encoding
    assert ours.pfcount(key) == peer.pfcount(key)
    # Carried as a plain string too.
    copy = name("from-redis-set")
    ours.set(copy, peer.get(key))
    assert ours.pfcount(copy) == peer.pfcount(key)
    # Going on here gives what going on there gives.
    more = _elements("more", 50)
    assert ours.pfadd(key, *more) == peer.pfadd(key, *more)
    assert ours.get(key) == peer.get(key)
    assert ours.pfcount(key) == peer.pfcount(key)


@pytest.mark.parametrize("n,encoding", [(SPARSE_ELEMENTS, "sparse"), (DENSE_ELEMENTS, "dense")])
def test_made_here_counted_by_redis(pair, n, encoding):
    ours, peer, name = pair
    key = name("from-here")
    _fill(ours, key, "h", n)
    assert _encoding(ours, key) == encoding
    made = ours.get(key)
    peer.restore(key, 0, ours.dump(key))
    assert peer.get(key) == made
    assert _encoding(peer, key) == encoding
    count = ours.pfcount(key)
    assert peer.pfcount(key) == count
    # The same elements added in Redis make the same bytes.
    again = name("again")
    _fill(peer, again, "h", n)
    assert peer.get(again)[16:] == made[16:]
    assert peer.pfcount(again) == count
    # The cached count written by PFCOUNT here is Redis's header.
    assert ours.get(key)[:16] == peer.get(again)[:16]


def test_pfmerge_of_values_from_both(pair):
    ours, peer, name = pair
    sparse_r, dense_r, sparse_h, dense_h = (name("sr"), name("dr"), name("sh"), name("dh"))
    _fill(peer, sparse_r, "a", SPARSE_ELEMENTS)
    _fill(peer, dense_r, "b", DENSE_ELEMENTS)
    _fill(ours, sparse_h, "c", SPARSE_ELEMENTS)
    _fill(ours, dense_h, "d", DENSE_ELEMENTS)
    # Each side gets the other's two values.
    for key in (sparse_r, dense_r):
        ours.restore(key, 0, peer.dump(key))
    for key in (sparse_h, dense_h):
        peer.restore(key, 0, ours.dump(key))
    merged_all, merged_sparse = name("all"), name("sparse")
    for c in (ours, peer):
        assert c.pfmerge(merged_all, sparse_r, dense_r, sparse_h, dense_h) is True
        assert c.pfmerge(merged_sparse, sparse_r, sparse_h) is True
    assert ours.get(merged_all) == peer.get(merged_all)
    assert ours.get(merged_sparse) == peer.get(merged_sparse)
    assert _encoding(ours, merged_all) == _encoding(peer, merged_all) == "dense"
    assert _encoding(ours, merged_sparse) == _encoding(peer, merged_sparse) == "sparse"
    total = peer.pfcount(merged_all)
    assert ours.pfcount(merged_all) == total
    assert abs(total - (2 * SPARSE_ELEMENTS + 2 * DENSE_ELEMENTS)) < 0.02 * total
    # The union counted without a merge agrees.
    assert ours.pfcount(sparse_r, dense_r, sparse_h, dense_h) == total
    assert peer.pfcount(sparse_r, dense_r, sparse_h, dense_h) == total
