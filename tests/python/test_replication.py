"""Replication and Sentinel failover, black box: what a primary and its
replicas answer (ROLE, INFO replication, READONLY, WAIT, REPLICAOF at run
time), that the replicas' contents equal the primary's after a concurrent
write load, that a dropped link resynchronises partially, and that Debian's
redis-sentinel fails over to a replica without losing a write that WAIT
acknowledged.

Every process is real and on loopback: each test starts its own nodes (and,
for the failover, three redis-sentinel processes with generated config
files) on free ports, waits for them to answer PING, and kills them after.

The node binary comes from AMALGAM_TEST_REPL_BIN: Debian's redis-server (the
proof that the expectations are Redis 7.0's) or the amalgam binary, told
apart by its name; `start_node` holds the one command line each is started
with. scripts/test.sh runs the file against redis-server, and in its amalgam
pass once amalgam's --help lists --replicaof:
    AMALGAM_TEST_REPL_BIN=$(which redis-server) \
        python3 -m pytest -q tests/python/test_replication.py
The failover test is skipped when redis-sentinel is not installed.
"""

import os
import random
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

import pytest
import redis
from redis.sentinel import Sentinel

NODE_BIN = os.environ.get("AMALGAM_TEST_REPL_BIN")
IS_AMALGAM = bool(NODE_BIN) and os.path.basename(NODE_BIN).startswith("amalgam")
SENTINEL_BIN = shutil.which("redis-sentinel")

pytestmark = pytest.mark.skipif(
    not NODE_BIN, reason="AMALGAM_TEST_REPL_BIN is not set (scripts/test.sh sets it)"
)

# Seconds a started process has to answer PING.
START_TIMEOUT_S = 10.0
# Seconds replicas have to connect and finish their first sync, a dropped
# link to come back, contents to converge: generous, never measured.
SYNC_TIMEOUT_S = 20.0
# Client timeouts in seconds: a hung server fails the test, not CI.
CLIENT_TIMEOUT_S = 5.0
# Milliseconds WAIT may block once the load is over.
WAIT_TIMEOUT_MS = 5000
# Seconds between two looks at a condition being waited for.
POLL_S = 0.05

# The write load: writer threads, operations each, and the keys of each
# type they share (few, so the threads' writes to one key interleave and
# the replicas must apply them in the primary's order).
WRITERS = 3
OPS_PER_WRITER = 1500
KEYS_PER_TYPE = 40
# Expiry times given by the load, in seconds: long enough that nothing
# expires while the test compares the copies.
TTL_MIN_S, TTL_MAX_S = 300, 3000
# Milliseconds two copies' deadlines (PEXPIRETIME) may differ by: none.
# They hold the same absolute deadline: Redis propagates SET EX and EXPIRE
# as absolute times, Amalgam replicates the item's deadline. (A PTTL read
# on each copy a moment apart differs by the time between the reads, which
# a dump of a few hundred keys in a debug build makes seconds.)
DEADLINE_SLACK_MS = 0
# A value this long now and then: a replication stream is more than short
# commands.
BIG_VALUE_BYTES = 20_000

# The failover: Sentinel's settings (down-after 1 s makes it fast), the
# seconds it has to fail over and the writer to write on the new primary,
# and the writes acknowledged before the primary is killed.
SENTINELS = 3
SENTINEL_QUORUM = 2
DOWN_AFTER_MS = 1000
FAILOVER_TIMEOUT_MS = 10000
FAILOVER_DEADLINE_S = 60.0
# Seconds the sentinels have to find the replicas and each other (hellos
# go out every 2 s).
DISCOVERY_TIMEOUT_S = 30.0
ACKED_BEFORE_KILL = 200
# Acknowledged writes on the new primary before the load stops: the other
# replica was moved to it and caught up.
ACKED_AFTER_FAILOVER = 20
# The writer's timeouts against the Sentinel-managed primary (seconds) and
# its pause after a failed write.
SENTINEL_SOCKET_TIMEOUT_S = 0.5
RETRY_PAUSE_S = 0.05
# WAIT's timeout (ms) after each of the failover writer's writes.
WRITER_WAIT_MS = 1000

# masterauth: the primary's requirepass, an ACL user's password, and how
# long a replica with a wrong password is watched staying down (seconds;
# it retries once a second).
PRIMARY_PASSWORD = "primary-pw"
REPL_USER_PASSWORD = "repl-user-pw"
LINK_DOWN_LOOK_S = 3.0

READONLY_TEXT = "You can't write against a read only replica."
WAIT_ON_REPLICA_TEXT = (
    "WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is "
    "configured to be writable (which is not the default) writes to replicas are just local and are not "
    "propagated."
)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(check, what, timeout=SYNC_TIMEOUT_S):
    """Polls `check` until it returns something true (returned) or the
    deadline passes (the test fails naming `what`)."""
    deadline = time.monotonic() + timeout
    last = None
    # Bounded by the deadline.
    while time.monotonic() < deadline:
        try:
            last = check()
            if last:
                return last
        except (redis.ConnectionError, redis.TimeoutError) as e:
            # A node still starting or restarting its link; Sentinel's
            # MasterNotFoundError while it fails over.
            last = e
        time.sleep(POLL_S)
    raise AssertionError(f"{what}: not within {timeout}s (last: {last!r})")


class Node:
    """One started process answering RESP on `port`; `c` is a client of it
    (redis-py's clients are thread-safe), closed when it is killed."""

    def __init__(self, argv, port, log_path, password=None):
        self.port = port
        self.argv = argv
        self.log_path = log_path
        self.password = password
        with open(log_path, "ab") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        try:
            self._wait_ping()
        except Exception:
            self.kill()
            raise
        self.c = self.client()

    def _wait_ping(self):
        deadline = time.monotonic() + START_TIMEOUT_S
        c = redis.Redis(port=self.port, password=self.password, socket_timeout=0.5, socket_connect_timeout=0.5)
        try:
            # Bounded by the deadline.
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"{self.argv} exited with {self.proc.returncode}: {self.log_tail()}")
                try:
                    if c.ping():
                        return
                except (redis.ConnectionError, redis.TimeoutError, redis.ResponseError):
                    # ResponseError: Redis answers -LOADING while it loads.
                    pass
                time.sleep(POLL_S)
        finally:
            c.close()
        raise RuntimeError(f"{self.argv} did not answer PING on {self.port}: {self.log_tail()}")

    def log_tail(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-2000:].decode(errors="replace")
        except OSError:
            return ""

    def client(self, **kw):
        kw.setdefault("password", self.password)
        return redis.Redis(port=self.port, socket_timeout=CLIENT_TIMEOUT_S, **kw)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        if getattr(self, "c", None) is not None:
            self.c.close()


def start_node(port, replicaof=None, extra=(), conf_dir=None, password=None):
    """Starts the node under test with its RESP port `port`, a replica of
    127.0.0.1:`replicaof` if given, `extra` arguments appended; with
    `password`, it is the node's requirepass and its clients' password. With
    `conf_dir` the node's config file, log and `dir` go in a directory of
    its own under it (Sentinel's CONFIG REWRITE rewrites the file on a
    failover); without, under a scratch directory removed after the module.

    The one place that knows how each binary is started."""
    # A directory of its own: a Redis replica stores the RDB of its full
    # sync in its `dir` as dump.rdb, and a node started in the same
    # directory would load it and resync partially from the offset in it.
    node_dir = os.path.join(conf_dir or _scratch_dir(), f"node-{port}")
    os.makedirs(node_dir)
    log = os.path.join(node_dir, "node.log")
    conf = os.path.join(node_dir, "node.conf")
    with open(conf, "w") as f:
        f.write(f'port {port}\nbind 127.0.0.1\nsave ""\nappendonly no\ndir {node_dir}\n')
    if IS_AMALGAM:
        argv = [NODE_BIN, "--config", conf, "-p", str(free_port()), "-l", "127.0.0.1", "-U", "0", "--resp-port", str(port)]
    else:
        # repl-diskless-sync-delay 0: Redis 7.0 otherwise waits 5 s for
        # more replicas before it starts a full sync (a Redis tuning, not an
        # expectation of these tests).
        argv = [NODE_BIN, conf, "--repl-diskless-sync-delay", "0"]
    if replicaof is not None:
        argv += ["--replicaof", "127.0.0.1", str(replicaof)]
    if password is not None:
        argv += ["--requirepass", password]
    argv += list(extra)
    return Node(argv, port, log, password=password)


_scratch = []


def _scratch_dir():
    d = tempfile.mkdtemp(prefix="amalgam-repl-")
    _scratch.append(d)
    return d


@pytest.fixture(autouse=True, scope="module")
def _remove_scratch():
    yield
    for d in _scratch:
        shutil.rmtree(d, ignore_errors=True)


def raw(client, *args):
    """A command's reply exactly as sent (redis-py's reply callbacks
    unapplied): INFO's text, ROLE's array, REPLICAOF's status."""
    conn = client.connection_pool.get_connection()
    try:
        conn.send_command(*args)
        return conn.read_response()
    finally:
        client.connection_pool.release(conn)


def info_fields(client, section):
    """INFO `section` as {name: value}, from its raw text."""
    text = raw(client, "INFO", section).decode()
    fields = {}
    for line in text.split("\r\n"):
        if line and not line.startswith("#"):
            name, _, value = line.partition(":")
            fields[name] = value
    return fields


def wait_replicas(client, replicas, timeout_ms=WAIT_TIMEOUT_MS):
    """WAIT `replicas` after every write answered so far, on any connection.

    WAIT waits for the replicas to acknowledge the last write of ITS OWN
    connection: on a connection that wrote nothing Redis answers at once
    with the number of replicas (acknowledged offset >= 0), however far
    behind they are. So a write and its undoing go first, on the same
    connection (one pipeline), after the writes to wait for."""
    pipe = client.pipeline(transaction=False)
    pipe.set("wait:fence", "1")
    pipe.delete("wait:fence")
    pipe.execute_command("WAIT", replicas, timeout_ms)
    return pipe.execute()[2]


def link_up(node):
    return info_fields(node.c, "replication").get("master_link_status") == "up"


def connected_replicas(primary):
    return int(info_fields(primary.c, "replication").get("connected_slaves", -1))


def dump(client):
    """Every key: (TYPE, value, PEXPIRETIME: the absolute deadline in unix
    ms, -1 for none). Sets sorted; sorted sets with their scores in
    ZRANGE's order."""
    out = {}
    for k in client.scan_iter(count=1000):
        t = client.type(k)
        if t == b"string":
            v = client.get(k)
        elif t == b"hash":
            v = client.hgetall(k)
        elif t == b"list":
            v = client.lrange(k, 0, -1)
        elif t == b"set":
            v = sorted(client.smembers(k))
        elif t == b"zset":
            v = client.zrange(k, 0, -1, withscores=True)
        else:
            v = None
        out[k] = (t, v, client.execute_command("PEXPIRETIME", k))
    return out


def same_contents(a, b):
    """Two dumps hold the same keys, types and values, and the same expiry
    (both none, or both the same deadline). Returns the first
    difference, or None."""
    if set(a) != set(b):
        return f"keys differ: only in first {sorted(set(a) - set(b))[:5]}, only in second {sorted(set(b) - set(a))[:5]}"
    for k in a:
        (ta, va, pa), (tb, vb, pb) = a[k], b[k]
        if (ta, va) != (tb, vb):
            return f"{k!r}: {ta} {va!r} != {tb} {vb!r}"
        if ((pa < 0 or pb < 0) and pa != pb) or abs(pa - pb) > DEADLINE_SLACK_MS:
            return f"{k!r}: PEXPIRETIME {pa} != {pb}"
    return None


def run_load(port, seed, ops, stop=None, pause_s=0.0, big=True):
    """One writer: `ops` random writes (or until `stop` is set) over the
    shared keys, every data type, with and without expiry."""
    c = redis.Redis(port=port, socket_timeout=CLIENT_TIMEOUT_S)
    rnd = random.Random(seed)
    n = KEYS_PER_TYPE

    def ttl():
        return rnd.randint(TTL_MIN_S, TTL_MAX_S)

    def value():
        r = rnd.random()
        if big and r < 0.01:
            return rnd.randbytes(BIG_VALUE_BYTES)
        if r < 0.2:
            # Bytes a text protocol would trip on: CR LF, NUL, high bytes.
            return rnd.randbytes(rnd.randint(0, 40))
        return f"v{rnd.randint(0, 10**6)}"

    try:
        # Bounded by `ops`.
        for _ in range(ops):
            if stop is not None and stop.is_set():
                break
            op = rnd.randrange(16)
            i = rnd.randrange(n)
            if op == 0:
                c.set(f"str:{i}", value())
            elif op == 1:
                c.set(f"str:{i}", value(), ex=ttl())
            elif op == 2:
                c.set(f"str:{i}", value(), px=ttl() * 1000 + rnd.randrange(1000))
            elif op == 3:
                c.append(f"str:{i}", value())
            elif op == 4:
                c.incr(f"cnt:{i}", rnd.randint(1, 5) if rnd.random() < 0.5 else 1)
            elif op == 5:
                c.delete(f"{rnd.choice(['str', 'cnt', 'h', 'l', 's', 'z'])}:{i}")
            elif op == 6:
                c.expire(f"{rnd.choice(['str', 'cnt', 'h', 'l', 's', 'z'])}:{i}", ttl())
            elif op == 7:
                c.hset(f"h:{i}", f"f{rnd.randrange(8)}", value())
            elif op in (8, 9):
                c.lpush(f"l:{i}", value())
            elif op == 10:
                c.rpop(f"l:{i}")
            elif op == 11:
                c.sadd(f"s:{i}", f"m{rnd.randrange(12)}")
            elif op == 12:
                c.srem(f"s:{i}", f"m{rnd.randrange(12)}")
            elif op == 13:
                c.zadd(f"z:{i}", {f"m{rnd.randrange(12)}": rnd.randint(-100, 100) / 4})
            elif op == 14:
                c.zincrby(f"z:{i}", rnd.randint(-8, 8) / 2, f"m{rnd.randrange(12)}")
            else:
                c.set(f"cnt:{i}", rnd.randint(0, 1000))
            if pause_s:
                time.sleep(pause_s)
    finally:
        c.close()


def concurrent_load(port, seed, ops=OPS_PER_WRITER):
    errors = []

    def writer(s):
        try:
            run_load(port, s, ops)
        except Exception as e:  # reported by the test, not lost in a thread
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(seed * 100 + w,)) for w in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def start_replicated(tmp, replicas=2):
    """A primary and `replicas` replicas started with --replicaof, once the
    primary counts them all connected and each says its link is up."""
    nodes = []
    try:
        primary = start_node(free_port(), conf_dir=tmp)
        nodes.append(primary)
        for _ in range(replicas):
            nodes.append(start_node(free_port(), replicaof=primary.port, conf_dir=tmp))
        wait_until(lambda: connected_replicas(primary) == replicas, f"connected_slaves:{replicas} on the primary")
        for r in nodes[1:]:
            wait_until(lambda: link_up(r), f"master_link_status:up on the replica on {r.port}")
    except Exception:
        for n in nodes:
            n.kill()
        raise
    return nodes


@pytest.fixture
def trio(tmp_path):
    nodes = start_replicated(str(tmp_path))
    try:
        yield nodes[0], nodes[1:]
    finally:
        for n in nodes:
            n.kill()


@pytest.fixture
def pair(tmp_path):
    nodes = start_replicated(str(tmp_path), replicas=1)
    try:
        yield nodes[0], nodes[1]
    finally:
        for n in nodes:
            n.kill()


# ------------------------------------------------------------ replication


def test_replicas_hold_the_primarys_contents_after_a_concurrent_load(trio):
    primary, replicas = trio
    concurrent_load(primary.port, seed=1)
    p = primary.c
    # Both replicas acknowledged everything written so far.
    assert wait_replicas(p, 2) == 2
    want = dump(p)
    # The load left every type behind, some keys with expiry, some without.
    types = {t for t, _, _ in want.values()}
    assert types == {b"string", b"hash", b"list", b"set", b"zset"}, types
    assert any(deadline > 0 for _, _, deadline in want.values())
    assert any(deadline == -1 for _, _, deadline in want.values())
    for r in replicas:
        got = dump(r.c)
        assert same_contents(want, got) is None, same_contents(want, got)


def test_replicas_refuse_writes_and_serve_reads(trio):
    primary, replicas = trio
    p = primary.c
    assert p.set("ro:k", "v") is True
    assert p.rpush("ro:l", "a", "b") == 2
    assert wait_replicas(p, 2) == 2
    for node in replicas:
        r = node.c
        # Reads answer from the replica's copy.
        assert r.get("ro:k") == b"v"
        assert r.lrange("ro:l", 0, -1) == [b"a", b"b"]
        assert r.exists("ro:k", "ro:l", "ro:none") == 2
        assert r.dbsize() == 2
        # Every write answers "-READONLY You can't write against a read
        # only replica." (redis-py: ReadOnlyError with the text after the
        # code), whether or not the key exists.
        writes = [
            ("SET", "ro:k", "w"),
            ("SET", "ro:new", "w"),
            ("DEL", "ro:k"),
            ("INCR", "ro:n"),
            ("EXPIRE", "ro:k", "100"),
            ("HSET", "ro:h", "f", "v"),
            ("LPUSH", "ro:l", "x"),
            ("SADD", "ro:s", "m"),
            ("ZADD", "ro:z", "1", "m"),
            ("FLUSHALL",),
        ]
        for cmd in writes:
            with pytest.raises(redis.ReadOnlyError) as e:
                r.execute_command(*cmd)
            assert str(e.value) == READONLY_TEXT, cmd
        # Nothing changed.
        assert r.get("ro:k") == b"v" and r.dbsize() == 2
        # WAIT is a primary's command.
        with pytest.raises(redis.ResponseError) as e:
            r.execute_command("WAIT", 1, 0)
        assert str(e.value) == WAIT_ON_REPLICA_TEXT


def test_role_on_primary_and_replicas(trio):
    primary, replicas = trio
    p = primary.c
    concurrent_load(primary.port, seed=3, ops=200)
    assert wait_replicas(p, 2) == 2

    # The replicas report the primary's offset once they have applied
    # everything (WAIT's own GETACK moves it on); the primary learns their
    # offsets from their acknowledgements (sent every second).
    def settled():
        role = raw(p, "ROLE")
        offset = role[1]
        listed = {int(port): int(off) for _, port, off in role[2]}
        replica_offsets = [raw(r.c, "ROLE")[4] for r in replicas]
        if all(o == offset for o in replica_offsets) and all(o == offset for o in listed.values()):
            return role
        return None

    role = wait_until(settled, "replica offsets equal to the primary's in ROLE")
    # ['master', offset, [[ip, port, offset], ...]]: the replicas' port and
    # offset as bulk strings, the primary's offset an integer.
    assert len(role) == 3
    assert role[0] == b"master"
    assert isinstance(role[1], int) and role[1] > 0
    assert sorted(role[2]) == sorted([[b"127.0.0.1", str(r.port).encode(), str(role[1]).encode()] for r in replicas])
    for r in replicas:
        # ['slave', ip, port, state, offset]: port and offset integers.
        rr = raw(r.c, "ROLE")
        assert rr == [b"slave", b"127.0.0.1", primary.port, b"connected", role[1]]


HEX40 = re.compile(r"^[0-9a-f]{40}$")


def test_info_replication_and_sync_stats(trio):
    primary, replicas = trio
    p = primary.c
    assert p.set("info:k", "v") is True
    assert wait_replicas(p, 2) == 2
    pi = info_fields(p, "replication")
    assert pi["role"] == "master"
    assert pi["connected_slaves"] == "2"
    assert HEX40.match(pi["master_replid"]), pi["master_replid"]
    assert int(pi["master_repl_offset"]) > 0
    ports = set()
    for i in range(2):
        # lag: seconds since the replica's last acknowledgement, which
        # Redis 7.0.15 showed as -1 in one run of ten (it subtracts the
        # ack's stamp, from its cached clock, from time(NULL), a coarser
        # clock that can still be in the second before).
        m = re.match(r"^ip=127\.0\.0\.1,port=(\d+),state=online,offset=(\d+),lag=(-1|\d+)$", pi[f"slave{i}"])
        assert m, pi[f"slave{i}"]
        ports.add(int(m.group(1)))
    assert ports == {r.port for r in replicas}
    assert "slave2" not in pi
    for r in replicas:
        ri = info_fields(r.c, "replication")
        assert ri["role"] == "slave"
        assert ri["master_host"] == "127.0.0.1"
        assert ri["master_port"] == str(primary.port)
        assert ri["master_link_status"] == "up"
        assert int(ri["slave_repl_offset"]) > 0
        assert ri["slave_read_only"] == "1"
        # The replica took on the primary's replication id.
        assert ri["master_replid"] == pi["master_replid"]
    # Each replica's first sync was a full one; none was partial or refused.
    ps = info_fields(p, "stats")
    assert (ps["sync_full"], ps["sync_partial_ok"], ps["sync_partial_err"]) == ("2", "0", "0")
    for r in replicas:
        rs = info_fields(r.c, "stats")
        assert {"sync_full", "sync_partial_ok", "sync_partial_err"} <= set(rs)


def test_replicaof_at_run_time_and_no_one(tmp_path):
    tmp = str(tmp_path)
    primary = start_node(free_port(), conf_dir=tmp)
    node = None
    try:
        node = start_node(free_port(), conf_dir=tmp)
        p, n = primary.c, node.c
        concurrent_load(primary.port, seed=5, ops=300)
        # The standalone node's own keys, gone once it follows the primary.
        n.mset({f"old:{i}": i for i in range(50)})
        assert raw(n, "ROLE")[0] == b"master"

        assert raw(n, "REPLICAOF", "127.0.0.1", str(primary.port)) == b"OK"
        wait_until(lambda: link_up(node), "master_link_status:up after REPLICAOF")
        assert wait_replicas(p, 1) == 1
        want = dump(p)
        assert same_contents(want, dump(n)) is None, same_contents(want, dump(n))
        assert n.exists("old:0", "old:49") == 0
        assert raw(n, "ROLE")[0] == b"slave"

        # Promoted: a primary again, writable, its data kept; the old
        # primary no longer counts it.
        assert raw(n, "REPLICAOF", "NO", "ONE") == b"OK"
        assert raw(n, "ROLE")[0] == b"master"
        assert info_fields(n, "replication")["role"] == "master"
        assert same_contents(want, dump(n)) is None, same_contents(want, dump(n))
        assert n.set("after:promotion", "1") is True
        assert n.get("after:promotion") == b"1"
        wait_until(lambda: connected_replicas(primary) == 0, "connected_slaves:0 after REPLICAOF NO ONE")
    finally:
        primary.kill()
        if node:
            node.kill()


def test_a_replica_authenticates_with_masterauth_and_masteruser(tmp_path):
    """A primary with requirepass: a replica whose masterauth is wrong
    stays down (Redis logs `Unable to AUTH to MASTER`) and retries; CONFIG
    SET masterauth brings the link up and the contents over. With
    masteruser the replica says `AUTH user password`: an ACL user with
    just what replication needs, while the default user's password has
    changed, keeps the link up across a dropped connection."""
    tmp = str(tmp_path)
    primary = start_node(free_port(), conf_dir=tmp, password=PRIMARY_PASSWORD)
    node = None
    try:
        p = primary.c
        p.mset({f"auth:{i}": i for i in range(100)})
        node = start_node(free_port(), replicaof=primary.port, conf_dir=tmp, extra=["--masterauth", "wrong"])
        n = node.c
        assert raw(n, "CONFIG", "GET", "masterauth") == {b"masterauth": b"wrong"}
        # Down, and staying down through several retries (once a second).
        deadline = time.monotonic() + LINK_DOWN_LOOK_S
        while time.monotonic() < deadline:
            assert not link_up(node), "a wrong masterauth must not sync"
            time.sleep(POLL_S * 4)
        assert n.dbsize() == 0

        assert n.config_set("masterauth", PRIMARY_PASSWORD)
        wait_until(lambda: link_up(node), "master_link_status:up after CONFIG SET masterauth")
        wait_until(lambda: same_contents(dump(p), dump(n)) is None, "the replica holds the primary's keys")

        # An ACL user for replication, then the default user's password
        # changed: only `AUTH repl <its password>` can reconnect.
        assert raw(p, "ACL", "SETUSER", "repl", "on", ">" + REPL_USER_PASSWORD, "+psync", "+replconf", "+ping") == b"OK"
        assert n.config_set("masteruser", "repl")
        assert n.config_set("masterauth", REPL_USER_PASSWORD)
        assert p.config_set("requirepass", "changed-" + PRIMARY_PASSWORD)
        assert raw(n, "CLIENT", "KILL", "TYPE", "master") >= 1
        p.set("auth:after", "1")
        wait_until(lambda: link_up(node) and n.get("auth:after") == b"1", "the link back up as user repl")
        assert raw(n, "CONFIG", "GET", "masteruser") == {b"masteruser": b"repl"}
    finally:
        primary.kill()
        if node:
            node.kill()


def test_a_dropped_link_resyncs_partially(pair):
    primary, replica = pair
    p, r = primary.c, replica.c
    concurrent_load(primary.port, seed=7, ops=200)
    assert wait_replicas(p, 1) == 1
    before = info_fields(p, "stats")
    assert before["sync_full"] == "1"

    stop = threading.Event()
    errors = []

    def writer():
        try:
            # Paced: the writes made while the link is down must fit the
            # primary's backlog (Redis: 1 MB) for the resync to be partial.
            run_load(primary.port, 70, 10**6, stop=stop, pause_s=0.001, big=False)
        except Exception as e:
            errors.append(e)

    t = threading.Thread(target=writer)
    t.start()
    try:
        time.sleep(0.3)
        # Dropped from the replica's side, then from the primary's: each
        # time the replica reconnects and continues from its offset.
        assert r.client_kill_filter(_type="master") == 1
        wait_until(
            lambda: int(info_fields(p, "stats")["sync_partial_ok"]) == int(before["sync_partial_ok"]) + 1,
            "sync_partial_ok +1 after CLIENT KILL TYPE master on the replica",
        )
        wait_until(lambda: link_up(replica), "master_link_status:up after the first drop")
        time.sleep(0.3)
        assert p.client_kill_filter(_type="replica") == 1
        wait_until(
            lambda: int(info_fields(p, "stats")["sync_partial_ok"]) == int(before["sync_partial_ok"]) + 2,
            "sync_partial_ok +2 after CLIENT KILL TYPE replica on the primary",
        )
        wait_until(lambda: link_up(replica), "master_link_status:up after the second drop")
        time.sleep(0.3)
    finally:
        stop.set()
        t.join()
    assert not errors, errors
    after = info_fields(p, "stats")
    assert after["sync_full"] == before["sync_full"]
    assert after["sync_partial_err"] == before["sync_partial_err"]
    assert wait_replicas(p, 1) == 1
    want = dump(p)
    assert same_contents(want, dump(r)) is None, same_contents(want, dump(r))


def client_lines(client, kind):
    """CLIENT LIST TYPE `kind`, each line as {field: value}."""
    text = raw(client, "CLIENT", "LIST", "TYPE", kind).decode()
    return [dict(f.split("=", 1) for f in line.split(" ")) for line in text.splitlines() if line]


def test_client_list_shows_replicas_and_the_link_to_the_primary(pair):
    primary, replica = pair
    p = primary.c
    assert wait_replicas(p, 1) == 1
    [s] = client_lines(p, "replica")
    [m] = client_lines(replica.c, "master")
    assert s["flags"] == "S"
    assert (m["flags"], m["user"], m["addr"]) == ("M", "(superuser)", f"127.0.0.1:{primary.port}")
    # The two ends of one connection.
    assert (s["addr"], s["laddr"]) == (m["laddr"], m["addr"])
    assert all(line["flags"] != "S" for line in client_lines(p, "normal"))
    # CLIENT KILL ID of the replica's connection: it reconnects and
    # continues from its offset, under a new id.
    before = int(info_fields(p, "stats")["sync_partial_ok"])
    assert p.client_kill_filter(_id=int(s["id"])) == 1
    wait_until(
        lambda: int(info_fields(p, "stats")["sync_partial_ok"]) == before + 1,
        "sync_partial_ok +1 after CLIENT KILL ID of the replica",
    )
    wait_until(lambda: link_up(replica), "master_link_status:up after CLIENT KILL ID")
    [again] = wait_until(lambda: client_lines(p, "replica"), "the replica listed again")
    assert again["id"] != s["id"]


def test_wait_without_replicas(tmp_path):
    node = start_node(free_port(), conf_dir=str(tmp_path))
    try:
        c = node.c
        assert c.set("w", "1") is True
        # Nobody to acknowledge: 0 once the timeout passes (or at once when
        # no replica is asked for).
        assert c.execute_command("WAIT", 1, 100) == 0
        assert c.execute_command("WAIT", 0, 0) == 0
        assert c.execute_command("WAIT", 0, 100) == 0
    finally:
        node.kill()


def test_wait_counts_acknowledgements_of_its_own_connections_writes(pair):
    """WAIT waits for the last write of the connection it is sent on, not
    for the primary's latest offset: with the replica stopped (SIGSTOP: its
    link stays up but it acknowledges nothing more), the connection that
    wrote gets 0 once the timeout passes, a connection that never wrote
    gets 1 (the replica's acknowledged offset is >= 0) all the same."""
    primary, replica = pair
    writer = primary.client(single_connection_client=True)
    idle = primary.client(single_connection_client=True)
    try:
        assert writer.set("mine", "1") is True
        assert writer.execute_command("WAIT", 1, WAIT_TIMEOUT_MS) == 1
        stop_process(replica.proc)
        try:
            assert writer.set("mine", "2") is True
            assert writer.execute_command("WAIT", 1, 100) == 0
            assert idle.execute_command("WAIT", 1, 100) == 1
        finally:
            replica.proc.send_signal(signal.SIGCONT)
        assert writer.execute_command("WAIT", 1, WAIT_TIMEOUT_MS) == 1
        assert replica.c.get("mine") == b"2"
    finally:
        writer.close()
        idle.close()


REDIS_BIN = shutil.which("redis-server")


def start_redis():
    """Debian's redis-server beside the node under test, whatever that
    is (the MIGRATE tests' peer), on a free port, in a scratch directory."""
    folder = _scratch_dir()
    port = free_port()
    argv = [REDIS_BIN, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", folder]
    return Node(argv, port, os.path.join(folder, "redis.log"))


@pytest.mark.skipif(not REDIS_BIN, reason="redis-server is not installed")
def test_migrate_from_redis_into_a_numbered_database():
    """Moving keys in from a running Redis: redis-server's MIGRATE (SELECT,
    then RESTORE with the key's TTL, DUMP's payload) into database 3 of the
    node, all of a key's types, the TTL kept, BUSYKEY for an existing key
    unless REPLACE, COPY keeping the source, and nothing written into
    database 0 (issue 35 §1; issue 37 is the replication link)."""
    source = start_redis()
    node = start_node(free_port())
    try:
        s = source.c
        s.set("m:str", "hello")
        s.rpush("m:list", "a", "b", "c")
        s.hset("m:hash", mapping={"f": "1", "g": "2"})
        s.sadd("m:set", "x", "y")
        s.zadd("m:zset", {"p": 1.5, "q": 2})
        s.set("m:ttl", "v", px=60000)
        keys = ["m:str", "m:list", "m:hash", "m:set", "m:zset", "m:ttl"]
        assert raw(s, "MIGRATE", "127.0.0.1", node.port, "", 3, 5000, "KEYS", *keys) == b"OK"
        assert s.exists(*keys) == 0, "moved, not copied"
        three = node.client(db=3)
        try:
            assert three.get("m:str") == b"hello"
            assert three.lrange("m:list", 0, -1) == [b"a", b"b", b"c"]
            assert three.hgetall("m:hash") == {b"f": b"1", b"g": b"2"}
            assert three.smembers("m:set") == {b"x", b"y"}
            assert three.zrange("m:zset", 0, -1, withscores=True) == [(b"p", 1.5), (b"q", 2.0)]
            assert 0 < three.pttl("m:ttl") <= 60000
            assert three.pttl("m:str") == -1
            assert node.c.dbsize() == 0, "nothing in database 0"
            # An existing key: BUSYKEY, relayed; REPLACE with COPY keeps the source.
            s.set("m:str", "again")
            with pytest.raises(redis.ResponseError, match="BUSYKEY"):
                raw(s, "MIGRATE", "127.0.0.1", node.port, "m:str", 3, 5000)
            assert raw(s, "MIGRATE", "127.0.0.1", node.port, "m:str", 3, 5000, "COPY", "REPLACE") == b"OK"
            assert three.get("m:str") == b"again"
            assert s.get("m:str") == b"again"
        finally:
            three.close()
    finally:
        node.kill()
        source.kill()


@pytest.mark.skipif(not REDIS_BIN, reason="redis-server is not installed")
def test_migrate_from_the_node_into_redis():
    """Moving keys out to a running Redis: the node's MIGRATE (Redis 7.0's
    replies: OK, NOKEY, the target's error relayed, IOERR for a closed
    port, the KEYS form's rule) from database 5 into database 2 of
    redis-server, the TTL kept, COPY keeping the source, REPLACE."""
    target = start_redis()
    target_port = target.port
    node = start_node(free_port())
    five = node.client(db=5)
    two = target.client(db=2)
    try:
        five.set("o:str", "out")
        five.rpush("o:list", "1", "2")
        five.set("o:ttl", "t", px=60000)
        five.set("o:copy", "c")
        assert raw(five, "MIGRATE", "127.0.0.1", target_port, "o:none", 2, 5000) == b"NOKEY"
        assert raw(five, "MIGRATE", "127.0.0.1", target_port, "", 2, 5000, "KEYS", "o:str", "o:list", "o:ttl") == b"OK"
        assert five.exists("o:str", "o:list", "o:ttl") == 0
        assert two.get("o:str") == b"out"
        assert two.lrange("o:list", 0, -1) == [b"1", b"2"]
        assert 0 < two.pttl("o:ttl") <= 60000
        assert raw(five, "MIGRATE", "127.0.0.1", target_port, "o:copy", 2, 5000, "COPY") == b"OK"
        assert five.get("o:copy") == b"c" and two.get("o:copy") == b"c"
        with pytest.raises(redis.ResponseError, match="^Target instance replied with error: BUSYKEY"):
            raw(five, "MIGRATE", "127.0.0.1", target_port, "o:copy", 2, 5000, "COPY")
        five.set("o:copy", "c2")
        assert raw(five, "MIGRATE", "127.0.0.1", target_port, "o:copy", 2, 5000, "REPLACE") == b"OK"
        assert two.get("o:copy") == b"c2" and five.exists("o:copy") == 0
        five.set("o:str", "again")
        with pytest.raises(redis.ResponseError, match="^When using MIGRATE KEYS option, the key argument"):
            raw(five, "MIGRATE", "127.0.0.1", target_port, "o:str", 2, 5000, "KEYS", "o:str")
        with pytest.raises(redis.ResponseError, match="^IOERR error or timeout"):
            raw(five, "MIGRATE", "127.0.0.1", free_port(), "o:str", 2, 1000)
        assert five.get("o:str") == b"again", "nothing moved"
        assert target.c.dbsize() == 0, "nothing in the target's database 0"
    finally:
        five.close()
        two.close()
        node.kill()
        target.kill()


def stop_process(proc):
    """Sends SIGSTOP to `proc` and returns once every one of its threads is
    stopped. kill() returns before that: one thread takes the signal and
    stops the others, and until it is scheduled the others run on (on CI's
    two loaded cores a replica's link thread applied and acknowledged a
    write after kill() had returned)."""
    proc.send_signal(signal.SIGSTOP)
    task_dir = f"/proc/{proc.pid}/task"

    def all_stopped():
        for tid in os.listdir(task_dir):
            try:
                with open(f"{task_dir}/{tid}/stat") as f:
                    # The state follows the command's closing parenthesis.
                    state = f.read().rsplit(")", 1)[1].split()[0]
            except FileNotFoundError:
                continue  # a thread that exited meanwhile
            if state != "T":
                return False
        return True

    wait_until(all_stopped, f"every thread of {proc.pid} stopped")


def stop_and_restart(node):
    """Stops `node` cleanly (SIGTERM: Redis saves its RDB, Amalgam its log
    and replication state) and starts it again with the same arguments,
    directory and port."""
    node.proc.send_signal(signal.SIGTERM)
    node.proc.wait(timeout=START_TIMEOUT_S)
    node.c.close()
    return Node(node.argv, node.port, node.log_path)


def test_clean_restarts_with_persistence_continue_by_partial_resync(tmp_path):
    """With persistence (Redis: an RDB saved at shutdown; Amalgam: its log
    in `dir`), a replica restarted cleanly continues from its offset (a
    partial resync, no full one) and converges. Amalgam only: a primary
    restarted cleanly keeps its replication id and offset, so its replica
    continues too."""
    tmp = str(tmp_path)
    # Redis saves at shutdown only with a save point; Amalgam's nodes log
    # to their `dir` already (the config file's `dir`).
    extra = () if IS_AMALGAM else ("--save", "3600 1")
    nodes = []
    try:
        primary = start_node(free_port(), extra=extra, conf_dir=tmp)
        nodes.append(primary)
        replica = start_node(free_port(), replicaof=primary.port, extra=extra, conf_dir=tmp)
        nodes.append(replica)
        wait_until(lambda: link_up(replica), "master_link_status:up")
        concurrent_load(primary.port, seed=11, ops=300)
        assert wait_replicas(primary.c, 1) == 1
        before = info_fields(primary.c, "stats")

        replica = stop_and_restart(replica)
        nodes[1] = replica
        # Writes while it was down (or starting) reach it from the backlog.
        run_load(primary.port, 12, 300, big=False)
        wait_until(lambda: link_up(replica), "master_link_status:up after the replica's restart")
        assert wait_replicas(primary.c, 1) == 1
        after = info_fields(primary.c, "stats")
        assert int(after["sync_partial_ok"]) == int(before["sync_partial_ok"]) + 1, after
        assert after["sync_full"] == before["sync_full"], after
        assert same_contents(dump(primary.c), dump(replica.c)) is None

        if not IS_AMALGAM:
            # Redis 7.0.15 gives a restarted primary a new replication id
            # (measured: its replica then resyncs in full); keeping it is
            # what issue 22 asks of Amalgam, beyond Redis.
            return
        ids = info_fields(primary.c, "replication")
        primary = stop_and_restart(primary)
        nodes[0] = primary
        again = info_fields(primary.c, "replication")
        assert again["master_replid"] == ids["master_replid"], (ids, again)
        assert again["master_repl_offset"] == ids["master_repl_offset"], (ids, again)
        wait_until(lambda: link_up(replica), "master_link_status:up after the primary's restart")
        wait_until(lambda: connected_replicas(primary) == 1, "the replica back on the restarted primary")
        stats = info_fields(primary.c, "stats")
        assert (stats["sync_full"], stats["sync_partial_ok"]) == ("0", "1"), stats
        run_load(primary.port, 13, 200, big=False)
        assert wait_replicas(primary.c, 1) == 1
        assert same_contents(dump(primary.c), dump(replica.c)) is None
    finally:
        for n in nodes:
            n.kill()


def test_a_replica_killed_mid_load_and_restarted_converges(tmp_path):
    """A replica SIGKILLed while its primary takes writes, and started again
    on the same directory, continues by partial resync and converges to the
    primary's contents. Redis's replica reloads the RDB of its full sync
    (kept in its `dir`, with the stream offset in it) and continues from
    there; Amalgam's replays its log, whose REPL_POS records say where its
    data stands in the stream."""
    tmp = str(tmp_path)
    nodes = []
    try:
        primary = start_node(free_port(), conf_dir=tmp)
        nodes.append(primary)
        replica = start_node(free_port(), replicaof=primary.port, conf_dir=tmp)
        nodes.append(replica)
        wait_until(lambda: link_up(replica), "master_link_status:up")
        concurrent_load(primary.port, seed=21, ops=200)
        assert wait_replicas(primary.c, 1) == 1
        before = info_fields(primary.c, "stats")

        stop = threading.Event()
        errors = []

        def writer():
            try:
                # Paced, so the writes while the replica is down fit the
                # backlog (1 MB) for a partial resync.
                run_load(primary.port, 22, 10**6, stop=stop, pause_s=0.001, big=False)
            except Exception as e:
                errors.append(e)

        t = threading.Thread(target=writer)
        t.start()
        try:
            time.sleep(0.5)
            replica.kill()
            replica = Node(replica.argv, replica.port, replica.log_path)
            nodes[1] = replica
            wait_until(lambda: link_up(replica), "master_link_status:up after the restart")
            time.sleep(0.3)
        finally:
            stop.set()
            t.join()
        assert not errors, errors
        assert wait_replicas(primary.c, 1) == 1
        after = info_fields(primary.c, "stats")
        assert int(after["sync_partial_ok"]) == int(before["sync_partial_ok"]) + 1, after
        assert after["sync_full"] == before["sync_full"], after
        assert same_contents(dump(primary.c), dump(replica.c)) is None
    finally:
        for n in nodes:
            n.kill()


# ------------------------------------------------------------ Sentinel


class SentinelProc(Node):
    def __init__(self, tmp, primary_port):
        port = free_port()
        conf = os.path.join(tmp, f"sentinel-{port}.conf")
        with open(conf, "w") as f:
            f.write(
                f"port {port}\nbind 127.0.0.1\ndir {tmp}\n"
                f"sentinel monitor mymaster 127.0.0.1 {primary_port} {SENTINEL_QUORUM}\n"
                f"sentinel down-after-milliseconds mymaster {DOWN_AFTER_MS}\n"
                f"sentinel failover-timeout mymaster {FAILOVER_TIMEOUT_MS}\n"
                "sentinel parallel-syncs mymaster 1\n"
            )
        super().__init__([SENTINEL_BIN, conf], port, os.path.join(tmp, f"sentinel-{port}.log"))


@pytest.mark.skipif(SENTINEL_BIN is None, reason="redis-sentinel is not installed (apt install redis-sentinel)")
def test_sentinel_fails_over_without_losing_acknowledged_writes(tmp_path):
    tmp = str(tmp_path)
    nodes = start_replicated(tmp)
    primary, replicas = nodes[0], nodes[1:]
    sentinels = []
    stop = threading.Event()
    writer_thread = None
    try:
        for _ in range(SENTINELS):
            sentinels.append(SentinelProc(tmp, primary.port))

        # Each sentinel found both replicas (in the primary's INFO) and the
        # other sentinels (by their hellos on the primary): a quorum and a
        # majority can then agree to fail over.
        def ready():
            for s in sentinels:
                m = s.c.sentinel_master("mymaster")
                if m["num-slaves"] != len(replicas) or m["num-other-sentinels"] != SENTINELS - 1:
                    return False
            return True

        wait_until(ready, "every sentinel knows both replicas and the other sentinels", timeout=DISCOVERY_TIMEOUT_S)

        sentinel = Sentinel([("127.0.0.1", s.port) for s in sentinels], socket_timeout=SENTINEL_SOCKET_TIMEOUT_S)
        master = sentinel.master_for("mymaster", socket_timeout=SENTINEL_SOCKET_TIMEOUT_S)
        acked = {}
        state = {"killed_at": None, "first_write_after": None, "acked_after": 0, "errors": []}

        def writer():
            i = 0
            # Bounded by `stop`, which the test sets within its deadlines.
            while not stop.is_set():
                key, value = f"fo:{i}", str(i)
                # Read before the write: set, the old primary was dead
                # before the write was sent, so a success is the new one's.
                after_kill = state["killed_at"] is not None
                sent = time.monotonic()
                try:
                    # One pipeline, so WAIT runs on the connection of the
                    # write (redis-py retries a pipeline whole on a new
                    # connection; a WAIT retried alone on a connection that
                    # wrote nothing would count replicas at once).
                    pipe = master.pipeline(transaction=False)
                    pipe.set(key, value)
                    pipe.execute_command("WAIT", 1, WRITER_WAIT_MS)
                    _, acks = pipe.execute()
                    if after_kill and state["first_write_after"] is None:
                        state["first_write_sent"] = sent
                        state["first_write_after"] = time.monotonic()
                    if acks >= 1:
                        acked[key] = value.encode()
                        if after_kill:
                            state["acked_after"] += 1
                    i += 1
                except (redis.ConnectionError, redis.TimeoutError, redis.ReadOnlyError):
                    time.sleep(RETRY_PAUSE_S)
                except Exception as e:
                    state["errors"].append(e)
                    time.sleep(RETRY_PAUSE_S)

        writer_thread = threading.Thread(target=writer)
        writer_thread.start()
        wait_until(lambda: len(acked) >= ACKED_BEFORE_KILL, f"{ACKED_BEFORE_KILL} acknowledged writes")
        old = ("127.0.0.1", primary.port)
        primary.kill()
        state["killed_at"] = time.monotonic()

        wait_until(lambda: state["first_write_after"], "a write on a new primary", timeout=FAILOVER_DEADLINE_S)
        print(
            f"failover: the first write that succeeded was sent {state['first_write_sent'] - state['killed_at']:.2f}s"
            f" after the kill, answered (with its WAIT) {state['first_write_after'] - state['killed_at']:.2f}s after"
        )
        wait_until(
            lambda: state["acked_after"] >= ACKED_AFTER_FAILOVER,
            "writes acknowledged by a replica of the new primary",
            timeout=FAILOVER_DEADLINE_S,
        )
        stop.set()
        writer_thread.join()
        assert not state["errors"], state["errors"]

        new = sentinel.discover_master("mymaster")
        assert new != old and new[1] in {r.port for r in replicas}, new
        c = redis.Redis(host=new[0], port=new[1], socket_timeout=CLIENT_TIMEOUT_S)
        assert raw(c, "ROLE")[0] == b"master"
        keys = list(acked)
        lost = []
        for i in range(0, len(keys), 500):
            chunk = keys[i : i + 500]
            lost += [k for k, v in zip(chunk, c.mget(chunk)) if v != acked[k]]
        assert not lost, f"{len(lost)} of {len(keys)} acknowledged writes lost, e.g. {lost[:5]}"
        c.close()
        master.close()
    finally:
        stop.set()
        if writer_thread:
            writer_thread.join()
        for s in sentinels:
            s.kill()
        for n in nodes:
            n.kill()


@pytest.mark.skipif(
    SENTINEL_BIN is None or not REDIS_BIN, reason="redis-sentinel or redis-server is not installed"
)
def test_sentinel_moves_a_redis_primary_to_the_node(tmp_path):
    """The move from Redis with no downtime (docs/operations.md, issue 37
    §5): the node under test follows a running redis-server as its replica
    (the RDB, then the command stream), Sentinel watches the Redis primary
    and, told to (SENTINEL FAILOVER), promotes the node; the old Redis
    primary then follows the node (issue 37 §2 for an amalgam node) and
    every acknowledged write is on both. Against redis-server it is Redis
    to Redis: the proof that this is what Sentinel does with a Redis pair."""
    tmp = str(tmp_path)
    folder = os.path.join(tmp, "redis-primary")
    os.makedirs(folder)
    rport = free_port()
    old = Node(
        [REDIS_BIN, "--port", str(rport), "--bind", "127.0.0.1", "--save", "", "--dir", folder,
         "--repl-diskless-sync-delay", "0"],
        rport,
        os.path.join(folder, "redis.log"),
    )
    node = start_node(free_port(), replicaof=rport, conf_dir=tmp)
    sentinels = []
    try:
        run_load(old.port, seed=37, ops=OPS_PER_WRITER)
        assert wait_replicas(old.c, 1) == 1
        wait_until(lambda: same_contents(dump(old.c), dump(node.c)) is None, "the node holds Redis's keys")
        for _ in range(SENTINELS):
            sentinels.append(SentinelProc(tmp, old.port))

        def ready():
            for s in sentinels:
                m = s.c.sentinel_master("mymaster")
                if m["num-slaves"] != 1 or m["num-other-sentinels"] != SENTINELS - 1:
                    return False
            return True

        wait_until(ready, "every sentinel knows the node and the other sentinels", timeout=DISCOVERY_TIMEOUT_S)
        before = dump(old.c)
        assert sentinels[0].c.execute_command("SENTINEL", "FAILOVER", "mymaster")
        sentinel = Sentinel([("127.0.0.1", s.port) for s in sentinels], socket_timeout=SENTINEL_SOCKET_TIMEOUT_S)
        wait_until(
            lambda: sentinel.discover_master("mymaster")[1] == node.port,
            "Sentinel names the node the primary",
            timeout=FAILOVER_DEADLINE_S,
        )
        assert raw(node.c, "ROLE")[0] == b"master"
        assert same_contents(before, dump(node.c)) is None
        # The old primary follows the node, and a write on the node
        # reaches it.
        wait_until(lambda: link_up(old), "the old Redis primary follows the node", timeout=FAILOVER_DEADLINE_S)
        node.c.set("after:move", "1")
        assert wait_replicas(node.c, 1) == 1
        wait_until(lambda: old.c.get("after:move") == b"1", "the write reaches the old primary")
        assert same_contents(dump(node.c), dump(old.c)) is None
    finally:
        for s in sentinels:
            s.kill()
        node.kill()
        old.kill()
