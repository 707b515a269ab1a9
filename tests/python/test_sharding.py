"""Sharding across three servers with engines Amalgam does not own: twemproxy
(Debian's nutcracker 0.5.0) in front of three instances, for a memcached
pool (`redis: false`, 0.5.0's only way to say it: it has no `memcache:`
key) over the memcached port and a `redis: true` pool over the RESP port,
and pylibmc (libmemcached) sharding by ketama itself, text and binary
protocol. docs/scale-out.md shows the same configurations to users.

Every process is real and on loopback: each test starts its own three
backends and, for the proxy tests, a nutcracker with a generated YAML
config, and kills them after. The proxy tests run against Amalgam and, as
proof that their expectations are the peers', against Debian's memcached
(memcache pool) and redis-server (redis pool); the pylibmc tests against
Amalgam and memcached.

Runs when AMALGAM_TEST_SHARD_BIN names the amalgam binary (scripts/test.sh
sets it in its amalgam pass only, so the file runs once per suite):
    AMALGAM_TEST_SHARD_BIN=target/debug/amalgam \
        python3 -m pytest -q tests/python/test_sharding.py
A peer, nutcracker or pylibmc that is not installed skips its tests.
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest
import pymemcache
import redis

try:
    import pylibmc
except ImportError:
    # Debian's python3-pylibmc, when the python3 running pytest is not
    # Debian's own (as in tests/python/test_pylibmc_binary.py).
    sys.path.append("/usr/lib/python3/dist-packages")
    try:
        import pylibmc
    except ImportError:
        pylibmc = None
    finally:
        sys.path.remove("/usr/lib/python3/dist-packages")

AMALGAM_BIN = os.environ.get("AMALGAM_TEST_SHARD_BIN")
NUTCRACKER_BIN = shutil.which("nutcracker") or (
    "/usr/sbin/nutcracker" if os.access("/usr/sbin/nutcracker", os.X_OK) else None
)

pytestmark = pytest.mark.skipif(
    not AMALGAM_BIN, reason="AMALGAM_TEST_SHARD_BIN is not set (scripts/test.sh sets it)"
)

# Instances behind the proxy or the client.
SHARDS = 3
# Keys written to measure the spread; each instance should hold a third.
SPREAD_KEYS = 3000
# twemproxy's ring: ketama points hashed from the servers' names (fixed
# below), the keys fixed too, so its spread is the same on every run. The
# keys are hashed with md5: fnv1a_64 (twemproxy's default and its
# README's example) spreads keys that differ only in their last bytes
# badly (these 3,000 keys "spread:N": 1440/980/580; md5: 965/1024/1011;
# docs/scale-out.md has more).
PROXY_SPREAD_TOLERANCE = 0.15
# pylibmc's ring is hashed from "host:port", and the ports are free ports
# that change from run to run: with 3 servers a share strayed past 15% in
# 3 of 20 trials (worst 21%; memcached backends), past 40% practically never.
CLIENT_SPREAD_TOLERANCE = 0.40
# Keys per multi-key request (memcached `get k1 k2 ...`, MGET, MSET).
BATCH_KEYS = 500
# Keys written before and after an instance dies in the ejection tests.
EJECT_KEYS = 300
# Single-key writes right after an instance dies: at most the first that
# maps to it fails (server_failure_limit 1 ejects it then); usually none
# does, since twemproxy sees its connection to the instance close and
# ejects it before any request.
EJECT_PROBES = 100
# Seconds a started process has to accept connections.
START_TIMEOUT_S = 10.0
# Client timeouts in seconds: a hung proxy fails the test, not CI.
CLIENT_TIMEOUT_S = 5.0

# The pool as docs/scale-out.md gives it: ketama over md5, hosts
# ejected after one failure and retried after 30 s (longer than any test,
# so an ejected host stays out while the test looks).
POOL_TEMPLATE = """\
shards:
  listen: 127.0.0.1:{port}
  redis: {redis}
  hash: md5
  distribution: ketama
  timeout: 2000
  backlog: 1024
  preconnect: false
  auto_eject_hosts: true
  server_retry_timeout: 30000
  server_failure_limit: 1
  servers:
{servers}
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc):
    deadline = time.monotonic() + START_TIMEOUT_S
    # Bounded by the deadline.
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited with {proc.returncode} before listening")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"{proc.args[0]} did not listen on {port}")


def memcache_client(port):
    # Replies awaited: the tests check what each write answered.
    return pymemcache.Client(
        ("127.0.0.1", port), timeout=CLIENT_TIMEOUT_S, connect_timeout=CLIENT_TIMEOUT_S, default_noreply=False
    )


def redis_client(port):
    # No CLIENT SETINFO on connect (redis-py's default): twemproxy does not
    # forward CLIENT and closes the connection of a client that sends it
    # (the client then waits out its timeout).
    # RESP2: redis-py 8 would open with HELLO 3, which twemproxy does not
    # know either.
    return redis.Redis(port=port, socket_timeout=CLIENT_TIMEOUT_S, protocol=2, driver_info=None)


class Backend:
    """One server process; `port` is where the pool under test talks to it
    (the memcached port or the RESP port)."""

    def __init__(self, kind, protocol, password=None):
        self.kind, self.protocol = kind, protocol
        self.port = free_port()
        if kind == "amalgam":
            other = free_port()
            mc, resp = (self.port, other) if protocol == "memcache" else (other, self.port)
            # One worker: three servers share CI's two cores.
            argv = [AMALGAM_BIN, "-p", str(mc), "--resp-port", str(resp), "-l", "127.0.0.1", "-U", "0", "-t", "1"]
        elif kind == "memcached":
            argv = ["memcached", "-p", str(self.port), "-l", "127.0.0.1", "-U", "0", "-t", "1"]
            if os.geteuid() == 0:
                argv += ["-u", "root"]
        else:
            argv = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        if password:
            argv += ["--requirepass", password]
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(self.port, self.proc)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def direct(self):
        """A client of this instance alone, bypassing proxy and ring."""
        if self.protocol == "memcache":
            return memcache_client(self.port)
        return redis_client(self.port)

    def count(self):
        """Keys held: memcached's `stats` curr_items, Redis's DBSIZE."""
        c = self.direct()
        try:
            if self.protocol == "memcache":
                return int(c.stats()[b"curr_items"])
            return c.dbsize()
        finally:
            c.close()

    def holds(self, keys):
        """The subset of keys this instance holds."""
        c = self.direct()
        try:
            if self.protocol == "memcache":
                found = set()
                for i in range(0, len(keys), BATCH_KEYS):
                    found |= {k.decode() if isinstance(k, bytes) else k for k in c.get_many(keys[i : i + BATCH_KEYS])}
                return found
            found = set()
            for i in range(0, len(keys), BATCH_KEYS):
                chunk = keys[i : i + BATCH_KEYS]
                found |= {k for k, v in zip(chunk, c.mget(chunk)) if v is not None}
            return found
        finally:
            c.close()


def start_backends(kind, protocol, password=None):
    backends = []
    try:
        for _ in range(SHARDS):
            backends.append(Backend(kind, protocol, password))
    except Exception:
        for b in backends:
            b.kill()
        raise
    return backends


class Proxy:
    """nutcracker with one pool over the backends."""

    def __init__(self, backends, protocol, tmp, password=None):
        self.port = free_port()
        servers = "\n".join(f"   - 127.0.0.1:{b.port}:1 shard{i}" for i, b in enumerate(backends))
        conf = os.path.join(tmp, "nutcracker.yml")
        with open(conf, "w") as f:
            f.write(POOL_TEMPLATE.format(port=self.port, redis=str(protocol == "redis").lower(), servers=servers))
            if password:
                # Sent to each backend on connect; clients AUTH to the
                # proxy with the same password.
                f.write(f"  redis_auth: {password}\n")
        # -s: the stats port (default 22222, maybe taken); -o: its log.
        argv = [NUTCRACKER_BIN, "-c", conf, "-s", str(free_port()), "-o", os.path.join(tmp, "nutcracker.log")]
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(self.port, self.proc)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


PROXY_CASES = [
    ("amalgam", "memcache"),
    ("amalgam", "redis"),
    ("memcached", "memcache"),
    ("redis-server", "redis"),
]


@pytest.fixture(params=PROXY_CASES, ids=lambda c: f"{c[0]}-{c[1]}")
def cluster(request, tmp_path):
    kind, protocol = request.param
    if NUTCRACKER_BIN is None:
        pytest.skip("nutcracker is not installed (apt install nutcracker)")
    if kind != "amalgam" and shutil.which(kind) is None:
        pytest.skip(f"{kind} is not installed")
    backends = start_backends(kind, protocol)
    proxy = None
    try:
        proxy = Proxy(backends, protocol, str(tmp_path))
        yield Cluster(backends, proxy, protocol)
    finally:
        if proxy:
            proxy.kill()
        for b in backends:
            b.kill()


class Cluster:
    def __init__(self, backends, proxy, protocol):
        self.backends, self.proxy, self.protocol = backends, proxy, protocol

    def client(self):
        if self.protocol == "memcache":
            return memcache_client(self.proxy.port)
        return redis_client(self.proxy.port)

    def write_many(self, c, items):
        """Multi-key writes through the proxy: pymemcache pipelines its
        sets; MSET is split by twemproxy across the shards."""
        keys = list(items)
        for i in range(0, len(keys), BATCH_KEYS):
            chunk = {k: items[k] for k in keys[i : i + BATCH_KEYS]}
            if self.protocol == "memcache":
                assert c.set_many(chunk) == []
            else:
                assert c.mset(chunk) is True

    def read_many(self, c, keys):
        """Multi-gets through the proxy (`get k1 k2 ...` / MGET), which
        twemproxy splits by shard and reassembles in order."""
        got = {}
        for i in range(0, len(keys), BATCH_KEYS):
            chunk = keys[i : i + BATCH_KEYS]
            if self.protocol == "memcache":
                got.update({k.decode() if isinstance(k, bytes) else k: v for k, v in c.get_many(chunk).items()})
            else:
                got.update({k: v for k, v in zip(chunk, c.mget(chunk)) if v is not None})
        return got


def values(prefix, n):
    return {f"{prefix}:{i}": f"value-{prefix}-{i}".encode() for i in range(n)}


def test_proxy_spreads_keys_and_reads_back_across_shards(cluster):
    c = cluster.client()
    items = values("spread", SPREAD_KEYS)
    cluster.write_many(c, items)
    counts = [b.count() for b in cluster.backends]
    assert sum(counts) == SPREAD_KEYS, counts
    share = SPREAD_KEYS / SHARDS
    for n in counts:
        assert abs(n - share) <= PROXY_SPREAD_TOLERANCE * share, counts
    # Every key is read back through the proxy, in multi-gets that span
    # all three shards.
    assert cluster.read_many(c, list(items)) == items
    # A multi-get with misses among hits on every shard.
    keys = [f"spread:{i}" for i in range(0, 30)] + [f"absent:{i}" for i in range(30)]
    got = cluster.read_many(c, keys)
    assert got == {k: items[k] for k in keys if k in items}
    c.close()


def test_proxy_forwards_the_ordinary_commands(cluster):
    """The commands twemproxy forwards, and their replies, which it parses
    strictly (a reply it cannot parse closes the connection)."""
    c = cluster.client()
    if cluster.protocol == "memcache":
        assert c.set("fw:a", b"1") is True
        assert c.add("fw:a", b"2", noreply=False) is False
        assert c.add("fw:b", b"2", noreply=False) is True
        assert c.replace("fw:b", b"3", noreply=False) is True
        assert c.append("fw:b", b"4", noreply=False) is True
        assert c.prepend("fw:b", b"2", noreply=False) is True
        assert c.get("fw:b") == b"234"
        value, cas = c.gets("fw:b")
        assert value == b"234"
        assert c.cas("fw:b", b"5", cas, noreply=False) is True
        assert c.cas("fw:b", b"6", cas, noreply=False) is False
        assert c.incr("fw:a", 41) == 42
        assert c.decr("fw:a", 2) == 40
        assert c.incr("fw:missing", 1) is None
        assert c.touch("fw:a", 100, noreply=False) is True
        assert c.delete("fw:a", noreply=False) is True
        assert c.delete("fw:a", noreply=False) is False
        assert c.get_many(["fw:a", "fw:b"]) == {"fw:b": b"5"}
        assert c.version()
    else:
        assert c.ping() is True  # answered by the proxy itself
        assert c.set("fw:a", "1", ex=100) is True
        assert 0 < c.ttl("fw:a") <= 100
        assert c.incrby("fw:a", 41) == 42
        assert c.set("fw:a", "x", nx=True) is None
        assert c.hset("fw:h", mapping={"f": "1", "g": "2"}) == 2
        assert c.hgetall("fw:h") == {b"f": b"1", b"g": b"2"}
        assert c.rpush("fw:l", "a", "b", "c") == 3
        assert c.lrange("fw:l", 0, -1) == [b"a", b"b", b"c"]
        assert c.sadd("fw:s", "m") == 1
        assert c.smembers("fw:s") == {b"m"}
        assert c.zadd("fw:z", {"m": 1.5}) == 1
        assert c.zscore("fw:z", "m") == 1.5
        # One key each: twemproxy 0.5.0 sends a multi-key EXISTS whole to
        # its first key's shard (only MGET, MSET and DEL are split).
        assert [c.exists(k) for k in ("fw:a", "fw:h", "fw:l", "fw:nope")] == [1, 1, 1, 0]
        assert c.delete("fw:a", "fw:h", "fw:l", "fw:s", "fw:z", "fw:nope") == 5
        assert c.mget(["fw:a", "fw:h"]) == [None, None]
        # Not forwarded by twemproxy: a command it does not know closes
        # the client's connection, whatever the backends are.
        for words in (["GET", "fw:l"], ["MULTI"], ["KEYS", "*"], ["DBSIZE"], ["SUBSCRIBE", "ch"], ["BLPOP", "fw:l", "1"]):
            with socket.create_connection(("127.0.0.1", cluster.proxy.port), timeout=CLIENT_TIMEOUT_S) as raw:
                raw.sendall(f"*{len(words)}\r\n".encode() + b"".join(f"${len(w)}\r\n{w}\r\n".encode() for w in words))
                reply = raw.recv(1024)
                # GET, the control: a reply (nil: fw:l was deleted).
                assert reply == (b"$-1\r\n" if words[0] == "GET" else b""), words
    c.close()


def test_proxy_ejects_a_dead_instance_and_serves_on(cluster):
    c = cluster.client()
    old = values("old", EJECT_KEYS)
    cluster.write_many(c, old)
    survivors = cluster.backends[1:]
    on_survivors = set()
    for b in survivors:
        on_survivors |= b.holds(list(old))
    assert 0 < len(on_survivors) < EJECT_KEYS

    cluster.backends[0].kill()
    failed = 0
    for i in range(EJECT_PROBES):
        try:
            c.set(f"probe:{i}", b"p")
        except Exception:
            failed += 1
            c.close()
            c = cluster.client()
    assert failed <= 1

    # After ejection: new keys are written and read back on the remaining
    # two, every one of them, in multi-key requests.
    new = values("new", EJECT_KEYS)
    cluster.write_many(c, new)
    assert cluster.read_many(c, list(new)) == new
    held = set()
    for b in survivors:
        held |= b.holds(list(new))
    assert held == set(new)
    # Consistent hashing: keys that lived on a survivor still map there
    # and are found; only the dead instance's keys are gone (misses, not
    # errors).
    got = cluster.read_many(c, list(old))
    assert set(got) == on_survivors
    assert all(got[k] == old[k] for k in got)
    c.close()


@pytest.mark.parametrize("kind", ["amalgam", "redis-server"])
def test_proxy_authenticates_to_password_protected_backends(kind, tmp_path):
    """`redis_auth`: twemproxy sends AUTH to each backend on connect
    (pipelined after a SELECT when `redis_db` is set, which the backend
    refuses with NOAUTH: leave redis_db unset) and demands AUTH from its
    own clients."""
    if NUTCRACKER_BIN is None:
        pytest.skip("nutcracker is not installed (apt install nutcracker)")
    if kind != "amalgam" and shutil.which(kind) is None:
        pytest.skip(f"{kind} is not installed")
    password = "shard-pass"
    backends = start_backends(kind, "redis", password)
    proxy = None
    try:
        proxy = Proxy(backends, "redis", str(tmp_path), password)
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=CLIENT_TIMEOUT_S) as raw:
            raw.sendall(b"*2\r\n$3\r\nGET\r\n$6\r\nauth:0\r\n")
            assert raw.recv(1024) == b"-NOAUTH Authentication required\r\n"
        c = redis.Redis(
            port=proxy.port, password=password, socket_timeout=CLIENT_TIMEOUT_S, protocol=2, driver_info=None
        )
        items = {f"auth:{i}": str(i).encode() for i in range(300)}
        assert c.mset(items) is True
        assert c.mget(list(items)) == list(items.values())
        # Every backend took a share: each connection authenticated.
        counts = []
        for b in backends:
            d = redis.Redis(port=b.port, password=password, socket_timeout=CLIENT_TIMEOUT_S)
            counts.append(d.dbsize())
            d.close()
        assert sum(counts) == len(items) and min(counts) > 0, counts
        c.close()
    finally:
        if proxy:
            proxy.kill()
        for b in backends:
            b.kill()


# ------------------------------------------------------------------ pylibmc


@pytest.fixture(
    params=[(kind, binary) for kind in ("amalgam", "memcached") for binary in (False, True)],
    ids=lambda p: f"{p[0]}-{'binary' if p[1] else 'text'}",
)
def ring(request):
    kind, binary = request.param
    if pylibmc is None:
        pytest.skip("pylibmc is not installed (apt install python3-pylibmc)")
    if kind != "amalgam" and shutil.which(kind) is None:
        pytest.skip(f"{kind} is not installed")
    backends = start_backends(kind, "memcache")
    try:
        yield backends, binary
    finally:
        for b in backends:
            b.kill()


def ketama_client(backends, binary, **behaviors):
    servers = [f"127.0.0.1:{b.port}" for b in backends]
    return pylibmc.Client(servers, binary=binary, behaviors={"ketama": True, **behaviors})


def test_pylibmc_ketama_spreads_and_is_consistent(ring):
    backends, binary = ring
    c = ketama_client(backends, binary)
    # libmemcached's ketama is "consistent ketama" with MD5.
    assert c.behaviors["distribution"] == "consistent ketama"
    items = values("plm", SPREAD_KEYS)
    for i in range(0, SPREAD_KEYS, BATCH_KEYS):
        chunk = dict(list(items.items())[i : i + BATCH_KEYS])
        assert c.set_multi(chunk) == []
    counts = [b.count() for b in backends]
    assert sum(counts) == SPREAD_KEYS, counts
    share = SPREAD_KEYS / SHARDS
    for n in counts:
        assert abs(n - share) <= CLIENT_SPREAD_TOLERANCE * share, counts
    keys = list(items)
    got = {}
    for i in range(0, SPREAD_KEYS, BATCH_KEYS):
        got.update(c.get_multi(keys[i : i + BATCH_KEYS]))
    assert got == items

    # Consistency: a client that knows only two of the three instances
    # (as after removing one) finds every key those two hold. Under
    # modula distribution about half of them would move.
    rest = backends[1:]
    held = set()
    for b in rest:
        held |= b.holds(keys)
    assert len(held) == counts[1] + counts[2]
    smaller = ketama_client(rest, binary)
    found = {}
    held_keys = sorted(held)
    for i in range(0, len(held_keys), BATCH_KEYS):
        found.update(smaller.get_multi(held_keys[i : i + BATCH_KEYS]))
    assert set(found) == held
    c.disconnect_all()
    smaller.disconnect_all()


def test_pylibmc_ketama_distribution_name_and_commands(ring):
    """The same ring asked for by name, with the commands libmemcached
    routes to one shard each."""
    backends, binary = ring
    c = pylibmc.Client(
        [f"127.0.0.1:{b.port}" for b in backends],
        binary=binary,
        behaviors={"distribution": "consistent ketama", "hash": "md5", "ketama_hash": "md5"},
    )
    for i in range(60):
        k = f"cmd:{i}"
        assert c.set(k, b"1") is True
        assert c.incr(k, 2) == 3
        assert c.add(k, b"x") is False
        assert c.append(k, b"0") is True
        assert c.get(k) == b"30"
        assert c.delete(k) is True
        assert c.get(k) is None
    c.disconnect_all()
