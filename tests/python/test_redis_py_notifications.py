"""Keyspace notifications (issue 35 §2) through redis-py's Pub/Sub, as
Redis 7.0 publishes them: `notify-keyspace-events` (CONFIG SET/GET, its
letters and its error), `__keyevent@<db>__:<event>` with the key and
`__keyspace@<db>__:<key>` with the event, the event each write publishes
and in which order (`new` first, `del` after a collection is emptied, a
move's destination before its source), `keymiss` for reads, `expired`
from the background sweep, events in MULTI/EXEC and from scripts, and the
database number after SELECT; and, Amalgam's own, the memcached port's
writes and a cache's evictions.

Read as test_redis_py.py is: the server is AMALGAM_TEST_RESP_ADDR=host:port
(scripts/test.sh runs this against amalgam and against Debian's
redis-server 7.0.15, proving the expectations are Redis's own). Every
test sets notify-keyspace-events and sets it back to "" when it ends (the
server is shared); events are read for this test's own keys only.
"""

import os
import shlex
import socket
import subprocess
import time

import pytest
import redis

from test_redis_py import _addr, k  # noqa: F401

# How long a test waits for an event that must come (the expiry sweep's).
EXPIRED_WAIT_S = 10


@pytest.fixture
def client():
    host, port = _addr()
    c = redis.Redis(host=host, port=port, socket_timeout=5, decode_responses=True)
    yield c
    c.config_set("notify-keyspace-events", "")
    c.close()


class Events:
    """A subscriber to every keyevent channel, reading events of the keys
    whose names start with `prefix`."""

    def __init__(self, c, prefix, pattern="__keyevent@*__:*"):
        self.prefix = prefix
        self.ps = c.pubsub()
        self.ps.psubscribe(pattern)
        # The subscription's confirmation.
        assert self.ps.get_message(timeout=5)["type"] == "psubscribe"

    def read(self, settle=0.1):
        """Every event published so far, as (event, key) pairs (keyspace
        channels: (key, event)), after a quiet `settle` seconds."""
        out = []
        while True:
            m = self.ps.get_message(timeout=settle)
            if m is None:
                return out
            if m["type"] != "pmessage":
                continue
            head, tail = m["channel"].split(":", 1)
            if tail.startswith(self.prefix) or m["data"].startswith(self.prefix):
                out.append((head, tail, m["data"]))

    def close(self):
        self.ps.close()


def _events(c, prefix, commands, flags="KEA"):
    """Runs `commands` (strings, `{x}` a key of this test) and answers the
    keyevent events they published, one list per command, as (event, key
    without the prefix)."""
    c.config_set("notify-keyspace-events", flags)
    ev = Events(c, prefix)
    try:
        out = []
        for cmd in commands:
            args = [a.format(x=prefix + "x", y=prefix + "y", z=prefix + "z") for a in shlex.split(cmd)]
            try:
                c.execute_command(*args)
            except redis.ResponseError:
                pass
            out.append([(tail, data[len(prefix) :]) for head, tail, data in ev.read() if head.startswith("__keyevent")])
        return out
    finally:
        ev.close()


# (commands run in order, the events of each): every pair stated here was
# read off redis-server 7.0.15 (the same file runs against it in CI).
WRITES = [
    # Strings.
    (["SET {x} v", "SET {x} v EX 100", "SET {x} v KEEPTTL", "SET {x} v GET"],
     [[("set", "x")], [("set", "x"), ("expire", "x")], [("set", "x")], [("set", "x")]]),
    (["SETNX {x} v", "SETNX {x} v", "SETEX {y} 10 v", "PSETEX {z} 10000 v"],
     [[("set", "x")], [], [("set", "y"), ("expire", "y")], [("set", "z"), ("expire", "z")]]),
    (["SET {x} 1", "GETSET {x} 2", "GETDEL {x}", "GETDEL {x}"],
     [[("set", "x")], [("set", "x")], [("del", "x")], []]),
    (["SET {x} 1", "GETEX {x} EX 100", "GETEX {x} PERSIST", "GETEX {x} PERSIST", "GETEX {x} EXAT 1"],
     [[("set", "x")], [("expire", "x")], [("persist", "x")], [], [("del", "x")]]),
    (["MSET {x} 1 {y} 2", "MSETNX {z} 1 {x} 2", "INCR {x}", "DECRBY {x} 2", "INCRBYFLOAT {x} 1.5"],
     [[("set", "x"), ("set", "y")], [], [("incrby", "x")], [("incrby", "x")], [("incrbyfloat", "x")]]),
    (["APPEND {x} a", "SETRANGE {x} 0 b", "SETRANGE {x} 0 ''", "SETBIT {y} 7 1", "BITFIELD {y} SET u8 0 255",
      "BITFIELD {y} SET u8 0 255", "BITFIELD {y} GET u8 0", "SETBIT {y} 0 1"],
     [[("append", "x")], [("setrange", "x")], [], [("setbit", "y")], [("setbit", "y")], [], [], []]),
    (["SET {x} a", "BITOP AND {z} {x} {x}", "BITOP AND {z} {y}"],
     [[("set", "x")], [("set", "z")], [("del", "z")]]),
    # Keys.
    (["SET {x} 1", "SET {y} 1", "DEL {x} {y} {z}", "UNLINK {x}"],
     [[("set", "x")], [("set", "y")], [("del", "x"), ("del", "y")], []]),
    (["SET {x} 1", "EXPIRE {x} 100", "PERSIST {x}", "PERSIST {x}", "PEXPIRE {x} 100000", "EXPIRE {x} -1"],
     [[("set", "x")], [("expire", "x")], [("persist", "x")], [], [("expire", "x")], [("del", "x")]]),
    (["SET {x} 1", "EXPIREAT {x} 1", "SET {x} 1", "EXPIRE {x} 100 XX", "EXPIRE {x} 100 NX"],
     [[("set", "x")], [("del", "x")], [("set", "x")], [], [("expire", "x")]]),
    (["SET {x} 1", "RENAME {x} {y}", "RENAMENX {y} {z}", "COPY {z} {x}", "COPY {z} {x}"],
     [[("set", "x")], [("rename_from", "x"), ("rename_to", "y")], [("rename_from", "y"), ("rename_to", "z")],
      [("copy_to", "x")], []]),
    # Lists.
    (["RPUSH {x} a b c", "LPUSH {x} z", "LPUSHX {x} y", "RPUSHX {y} y", "LINSERT {x} BEFORE a q", "LSET {x} 0 w",
      "LREM {x} 1 q", "LTRIM {x} 0 10"],
     [[("rpush", "x")], [("lpush", "x")], [("lpush", "x")], [], [("linsert", "x")], [("lset", "x")],
      [("lrem", "x")], [("ltrim", "x")]]),
    (["RPUSH {x} a b", "LPOP {x}", "RPOP {x}", "LPOP {x}"],
     [[("rpush", "x")], [("lpop", "x")], [("rpop", "x"), ("del", "x")], []]),
    (["RPUSH {x} a b", "LMOVE {x} {y} LEFT RIGHT", "RPOPLPUSH {x} {y}", "LMOVE {y} {y} LEFT RIGHT"],
     [[("rpush", "x")], [("rpush", "y"), ("lpop", "x")], [("lpush", "y"), ("rpop", "x"), ("del", "x")],
      [("rpush", "y"), ("lpop", "y")]]),
    (["RPUSH {x} a b", "LMPOP 1 {x} LEFT COUNT 1", "BLPOP {x} 1"],
     [[("rpush", "x")], [("lpop", "x")], [("lpop", "x"), ("del", "x")]]),
    # Sets.
    (["SADD {x} a b", "SADD {x} a", "SREM {x} a", "SREM {x} a", "SPOP {x}"],
     [[("sadd", "x")], [], [("srem", "x")], [], [("spop", "x"), ("del", "x")]]),
    (["SADD {x} a b", "SMOVE {x} {y} a", "SMOVE {x} {y} b"],
     [[("sadd", "x")], [("srem", "x"), ("sadd", "y")], [("srem", "x"), ("del", "x"), ("sadd", "y")]]),
    (["SADD {x} a b", "SINTERSTORE {z} {x} {x}", "SUNIONSTORE {z} {x} {y}", "SDIFFSTORE {z} {x} {x}",
      "SDIFFSTORE {z} {x} {x}"],
     [[("sadd", "x")], [("sinterstore", "z")], [("sunionstore", "z")], [("del", "z")], []]),
    # Hashes.
    (["HSET {x} f v g w", "HSETNX {x} f v", "HSETNX {x} h v", "HMSET {x} i 1", "HINCRBY {x} i 1",
      "HINCRBYFLOAT {x} i 1.5", "HDEL {x} f", "HDEL {x} z", "HDEL {x} g h i"],
     [[("hset", "x")], [], [("hset", "x")], [("hset", "x")], [("hincrby", "x")], [("hincrbyfloat", "x")],
      [("hdel", "x")], [], [("hdel", "x"), ("del", "x")]]),
    # Sorted sets.
    (["ZADD {x} 1 a 2 b", "ZADD {x} INCR 1 a", "ZINCRBY {x} 1 a", "ZADD {x} XX 5 a", "ZADD {x} 5 a", "ZREM {x} a",
      "ZREM {x} a"],
     [[("zadd", "x")], [("zincr", "x")], [("zincr", "x")], [("zadd", "x")], [], [("zrem", "x")], []]),
    (["ZADD {x} 1 a 3 c 4 d 5 e", "ZREMRANGEBYSCORE {x} 1 1", "ZREMRANGEBYRANK {x} 0 0",
      "ZREMRANGEBYLEX {x} - +"],
     [[("zadd", "x")], [("zremrangebyscore", "x")], [("zremrangebyrank", "x")],
      [("zremrangebylex", "x"), ("del", "x")]]),
    (["ZADD {x} 1 a 2 b 3 c", "ZPOPMIN {x}", "ZPOPMAX {x}", "BZPOPMIN {x} 1"],
     [[("zadd", "x")], [("zpopmin", "x")], [("zpopmax", "x")], [("zpopmin", "x"), ("del", "x")]]),
    (["ZADD {x} 1 a", "ZUNIONSTORE {z} 1 {x}", "ZINTERSTORE {z} 1 {x}", "ZDIFFSTORE {z} 1 {x}",
      "ZRANGESTORE {z} {x} 0 -1", "ZRANGESTORE {z} {y} 0 -1", "ZMPOP 1 {x} MIN"],
     [[("zadd", "x")], [("zunionstore", "z")], [("zinterstore", "z")], [("zdiffstore", "z")], [("zrangestore", "z")],
      [("del", "z")], [("zpopmin", "x"), ("del", "x")]]),
    # SORT … STORE (list class; an empty result deletes the destination).
    (["RPUSH {x} 3 1 2", "SORT {x} STORE {z}", "SORT {x} STORE {z} LIMIT 5 5", "SORT {y} STORE {z}"],
     [[("rpush", "x")], [("sortstore", "z")], [("del", "z")], []]),
    # HyperLogLog (strings; PFMERGE's event is PFADD's, PFCOUNT's cache
    # write publishes nothing).
    (["PFADD {x} a b", "PFADD {x} a", "PFCOUNT {x}", "PFMERGE {y} {x}", "PFCOUNT {x} {y}"],
     [[("pfadd", "x")], [], [], [("pfadd", "y")], []]),
    # Geo (sorted sets: GEOADD is ZADD's event).
    (["GEOADD {x} 13.361389 38.115556 Palermo", "GEOADD {x} 15.087269 37.502669 Catania",
      "GEOADD {x} 15.087269 37.502669 Catania", "GEOSEARCHSTORE {z} {x} FROMLONLAT 15 37 BYRADIUS 200 km",
      "GEORADIUS {x} 15 37 200 km STORE {z}", "GEORADIUSBYMEMBER {x} Palermo 1 km STOREDIST {z}",
      "GEOSEARCHSTORE {z} {x} FROMLONLAT 0 0 BYRADIUS 1 km"],
     [[("zadd", "x")], [("zadd", "x")], [], [("geosearchstore", "z")], [("georadiusstore", "z")],
      [("georadiusstore", "z")], [("del", "z")]]),
]


@pytest.mark.parametrize("commands,want", WRITES, ids=[w[0][0].split()[0] + "-" + str(i) for i, w in enumerate(WRITES)])
def test_each_write_publishes_redis_events(client, commands, want):
    prefix = k("")
    assert _events(client, prefix, commands) == want
    client.delete(*[prefix + n for n in "xyz"])


def test_restore_publishes_restore_and_new(client):
    prefix = k("")
    host, port = _addr()
    raw = redis.Redis(host=host, port=port, socket_timeout=5)
    raw.set(prefix + "src", "v")
    dump = raw.dump(prefix + "src")
    client.config_set("notify-keyspace-events", "KEAn")
    ev = Events(client, prefix)
    try:
        raw.restore(prefix + "y", 0, dump)
        raw.restore(prefix + "y", 0, dump, replace=True)
        got = [(tail, data[len(prefix) :]) for head, tail, data in ev.read()]
    finally:
        ev.close()
        raw.delete(prefix + "src", prefix + "y")
        raw.close()
    assert got == [("new", "y"), ("restore", "y"), ("new", "y"), ("restore", "y")]


def test_new_and_keymiss_only_by_their_letters(client):
    prefix = k("")
    got = _events(client, prefix, ["SET {x} 1", "SET {x} 2", "GET {y}", "RPUSH {z} a", "COPY {x} {y}",
                                   "COPY {x} {y} REPLACE", "HGET {y} f"], flags="KEAnm")
    assert got == [
        [("new", "x"), ("set", "x")],
        [("set", "x")],
        [("keymiss", "y")],
        [("new", "z"), ("rpush", "z")],
        [("new", "y"), ("copy_to", "y")],
        [("new", "y"), ("copy_to", "y")],
        [],
    ]
    # A: no `new`, no `keymiss`.
    got = _events(client, prefix, ["SET {z} 1", "GET {y}"], flags="KEA")
    assert got == [[("set", "z")], []]
    client.delete(*[prefix + n for n in "xyz"])


def test_keymiss_of_reads_not_of_writes(client):
    prefix = k("")
    got = _events(client, prefix, ["MGET {x} {y}", "EXISTS {x}", "TYPE {x}", "TTL {x}", "LRANGE {x} 0 1",
                                   "SINTERSTORE {z} {x}", "OBJECT ENCODING {x}", "LPOP {x}", "DEL {x}",
                                   "EXPIRE {x} 10", "INCR {z}", "GETDEL {y}", "SET {y} v GET"], flags="Em")
    assert got == [
        [("keymiss", "x"), ("keymiss", "y")],
        [("keymiss", "x")],
        [("keymiss", "x")],
        [("keymiss", "x")],
        [("keymiss", "x")],
        [("keymiss", "x")],
        [],
        [],
        [],
        [],
        [],
        [("keymiss", "y")],
        [("keymiss", "y")],
    ]
    client.delete(*[prefix + n for n in "xyz"])


def test_config_letters_as_redis_prints_them(client):
    for given, shown in [("KEA", "AKE"), ("Kg$n", "g$nK"), ("KEAnm", "AKEm"), ("Elz", "lzE"), ("", "")]:
        client.config_set("notify-keyspace-events", given)
        assert client.config_get("notify-keyspace-events") == {"notify-keyspace-events": shown}
    with pytest.raises(redis.ResponseError) as e:
        client.config_set("notify-keyspace-events", "KEq")
    assert "Invalid event class character. Use 'Ag$lshzxeKEtmdn'." in str(e.value)
    assert client.config_get("notify-keyspace-events") == {"notify-keyspace-events": ""}


def test_keyspace_channel_carries_the_event_and_the_database(client):
    prefix = k("")
    client.config_set("notify-keyspace-events", "K$")
    host, port = _addr()
    c3 = redis.Redis(host=host, port=port, db=3, socket_timeout=5, decode_responses=True)
    ev = Events(client, prefix, pattern="__keyspace@*__:*")
    try:
        client.set(prefix + "x", "1")
        c3.set(prefix + "x", "1")
        c3.incr(prefix + "x")
        # `g` is off: DEL tells nothing.
        c3.delete(prefix + "x")
        got = ev.read()
    finally:
        ev.close()
        c3.delete(prefix + "x")
        c3.close()
        client.delete(prefix + "x")
    x = prefix + "x"
    assert got == [("__keyspace@0__", x, "set"), ("__keyspace@3__", x, "set"), ("__keyspace@3__", x, "incrby")]


def test_transactions_and_scripts_publish_each_write(client):
    prefix = k("")
    client.config_set("notify-keyspace-events", "KEA")
    ev = Events(client, prefix)
    try:
        p = client.pipeline(transaction=True)
        p.set(prefix + "x", "1")
        p.incr(prefix + "x")
        p.execute()
        client.eval("redis.call('set', KEYS[1], 'x'); redis.call('del', KEYS[1])", 1, prefix + "y")
        got = [(tail, data[len(prefix) :]) for head, tail, data in ev.read()]
    finally:
        ev.close()
        client.delete(prefix + "x")
    assert got == [("set", "x"), ("incrby", "x"), ("set", "y"), ("del", "y")]


def test_expired_comes_from_the_sweep_without_a_read(client):
    prefix = k("")
    client.config_set("notify-keyspace-events", "Ex")
    ev = Events(client, prefix)
    try:
        client.set(prefix + "x", "1", px=50)
        got = []
        deadline = time.monotonic() + EXPIRED_WAIT_S
        while not got and time.monotonic() < deadline:
            got = ev.read(settle=0.2)
    finally:
        ev.close()
    assert [(tail, data[len(prefix) :]) for head, tail, data in got] == [("expired", "x")]


def test_the_memcached_port_publishes_as_resp_writes(client):
    """Amalgam's own: a write on the memcached port tells RESP's
    subscribers what the RESP command it amounts to would (redis-server
    has no memcached port: skipped there, and against memcached)."""
    mc_addr = os.environ.get("AMALGAM_TEST_ADDR")
    if not mc_addr:
        pytest.skip("AMALGAM_TEST_ADDR is not set: no memcached port beside this RESP server")
    from pymemcache.client.base import Client

    host, port = mc_addr.rsplit(":", 1)
    mc = Client((host, int(port)), default_noreply=False, timeout=5)
    prefix = k("")
    x = prefix + "x"
    client.config_set("notify-keyspace-events", "KEA")
    ev = Events(client, prefix)
    try:
        mc.set(x, b"1")
        mc.set(x, b"1", expire=100)
        mc.append(x, b"2")
        mc.incr(x, 5)
        mc.touch(x, 200)
        mc.delete(x)
        got = [(tail, data[len(prefix) :]) for head, tail, data in ev.read()]
    finally:
        ev.close()
        mc.close()
    assert got == [("set", "x"), ("set", "x"), ("expire", "x"), ("append", "x"), ("incrby", "x"),
                   ("expire", "x"), ("del", "x")]


def test_evicted_as_a_cache_drops_keys():
    """Amalgam's own cache (`-m 8`, S3-FIFO): keys it evicts are published
    as `evicted`. Runs where scripts/test.sh names the binary."""
    binary = os.environ.get("AMALGAM_TEST_SHARD_BIN")
    if not binary:
        pytest.skip("AMALGAM_TEST_SHARD_BIN is not set (scripts/test.sh sets it)")
    resp = _free_port()
    proc = subprocess.Popen([binary, "-p", str(_free_port()), "--resp-port", str(resp), "-l", "127.0.0.1",
                             "-U", "0", "-t", "1", "-m", "8", "--notify-keyspace-events", "Ee"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        c = _connect(resp, proc)
        ev = Events(c, "ev:")
        value = b"v" * 4000
        # 32 MB into an 8 MB cache.
        for i in range(0, 8000, 100):
            p = c.pipeline(transaction=False)
            for j in range(i, i + 100):
                p.set(f"ev:{j}", value)
            p.execute()
        got = ev.read(settle=0.5)
        ev.close()
        assert got, "nothing evicted"
        assert {tail for head, tail, data in got} == {"evicted"}
        evicted = {data for head, tail, data in got}
        assert len(evicted) == len(got), "each key once"
        assert c.exists(*evicted) == 0, "an evicted key is gone"
        c.close()
    finally:
        proc.kill()
        proc.wait()


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _connect(port, proc):
    """A client of the server just started on `port`, once it answers."""
    deadline = time.monotonic() + 10
    while True:
        try:
            c = redis.Redis(port=port, socket_timeout=5, decode_responses=True)
            c.ping()
            return c
        except redis.ConnectionError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
