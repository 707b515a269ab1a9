"""redis-py, a client not written here, against a running RESP server.

The server is named by AMALGAM_TEST_RESP_ADDR=host:port (scripts/test.sh
starts amalgam for this, and Debian's redis-server 7 to prove every
expectation is Redis's own). Each test runs twice: with RESP2 and with
RESP3 (`protocol=3`: redis-py's HELLO 3 handshake). Tests skip when the
variable is unset (as when the suite runs against memcached).
"""

import os
import uuid

import pytest
import redis


def _addr():
    addr = os.environ.get("AMALGAM_TEST_RESP_ADDR")
    if not addr:
        pytest.skip("AMALGAM_TEST_RESP_ADDR is not set (scripts/test.sh sets it)")
    host, port = addr.rsplit(":", 1)
    return host, int(port)


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def r(request):
    host, port = _addr()
    c = redis.Redis(host=host, port=port, protocol=request.param, socket_timeout=5, decode_responses=True)
    yield c
    c.close()


@pytest.fixture
def rb():
    """Bytes in, bytes out."""
    host, port = _addr()
    c = redis.Redis(host=host, port=port, socket_timeout=5)
    yield c
    c.close()


def k(name):
    """A key no other test (or run) uses."""
    return f"rpy_{uuid.uuid4().hex[:12]}_{name}"


def test_handshake_and_ping(r):
    assert r.ping() is True
    assert r.echo("hi") == "hi"
    assert isinstance(r.client_id(), int)
    assert r.client_setname("py-test") is True
    assert r.client_getname() == "py-test"


@pytest.mark.filterwarnings("ignore:Call to deprecated:DeprecationWarning")
def test_set_get_options(r):
    a = k("a")
    assert r.get(a) is None
    assert r.set(a, "1") is True
    assert r.get(a) == "1"
    assert r.set(a, "2", nx=True) is None
    assert r.set(a, "2", xx=True) is True
    assert r.set(a, "3", get=True) == "2"
    assert r.set(a, "4", ex=100) is True
    assert 99 <= r.ttl(a) <= 100
    assert r.set(a, "5", keepttl=True) is True
    assert 99 <= r.ttl(a) <= 100
    assert r.set(a, "6", px=100000) is True
    assert 99000 <= r.pttl(a) <= 101000
    assert r.setnx(a, "x") is False
    assert r.setex(a, 100, "7") is True
    assert r.psetex(a, 100000, "8") is True
    assert r.getset(a, "9") == "8"
    assert r.ttl(a) == -1
    assert r.getdel(a) == "9"
    assert r.get(a) is None
    with pytest.raises(redis.ResponseError, match="invalid expire time in 'set' command"):
        r.set(a, "v", ex=0)


def test_mget_mset(r):
    a, b, c = k("a"), k("b"), k("c")
    assert r.mset({a: "1", b: "2"}) is True
    assert r.mget([a, c, b]) == ["1", None, "2"]
    assert r.msetnx({a: "x", c: "3"}) is False
    assert r.get(c) is None
    assert r.msetnx({c: "3", k("d"): "4"}) is True


def test_counters(r):
    n = k("n")
    assert r.incr(n) == 1
    assert r.incrby(n, 41) == 42
    assert r.decr(n) == 41
    assert r.decrby(n, 50) == -9
    assert r.incrbyfloat(n, 0.5) == -8.5
    r.set(n, "abc")
    with pytest.raises(redis.ResponseError, match="value is not an integer or out of range"):
        r.incr(n)
    with pytest.raises(redis.ResponseError, match="value is not a valid float"):
        r.incrbyfloat(n, 1)


def test_expiry(r):
    a = k("e")
    assert r.expire(a, 100) is False
    r.set(a, "v")
    assert r.ttl(a) == -1
    assert r.expire(a, 100) is True
    assert r.expire(a, 50, gt=True) is False
    assert r.expire(a, 50, lt=True) is True
    assert r.persist(a) is True
    assert r.ttl(a) == -1
    assert r.expireat(a, 4000000000) is True
    assert r.expiretime(a) == 4000000000
    assert r.getex(a, persist=True) == "v"
    assert r.ttl(a) == -1
    assert r.getex(a, ex=100) == "v"
    assert 99 <= r.ttl(a) <= 100
    assert r.pexpireat(a, 1000) is True
    assert r.exists(a) == 0
    assert r.ttl(a) == -2


def test_strings(r):
    s = k("s")
    assert r.append(s, "abc") == 3
    assert r.append(s, "def") == 6
    assert r.strlen(s) == 6
    assert r.getrange(s, 1, 2) == "bc"
    assert r.getrange(s, -2, -1) == "ef"
    assert r.setrange(s, 1, "ZZ") == 6
    assert r.get(s) == "aZZdef"
    assert r.type(s) == "string"
    assert r.type(k("none")) == "none"
    assert r.exists(s, s, k("none")) == 2
    assert r.delete(s, k("none")) == 1
    assert r.unlink(s) == 0


def test_pipeline(r):
    base = k("p")
    p = r.pipeline(transaction=False)
    for i in range(100):
        p.set(f"{base}:{i}", i)
    for i in range(100):
        p.get(f"{base}:{i}")
    got = p.execute()
    assert got[:100] == [True] * 100
    assert got[100:] == [str(i) for i in range(100)]


def test_binary_values(rb):
    a = k("bin")
    v = b"a\r\nb\x00c\xff"
    assert rb.set(a, v) is True
    assert rb.get(a) == v
    assert rb.mget([a, k("none")]) == [v, None]


def test_server_commands(r):
    a = k("i")
    r.set(a, "v")
    info = r.info()
    assert "redis_version" in info and "connected_clients" in info
    assert r.info("keyspace")["db0"]["keys"] >= 1
    assert r.config_get("appendonly") == {"appendonly": "no"}
    assert r.dbsize() >= 1
    assert r.execute_command("SELECT", 0)
    with pytest.raises(redis.ResponseError, match="unknown command 'NOSUCH'"):
        r.execute_command("NOSUCH", "x")
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'get' command"):
        r.execute_command("GET")


def test_client_list_info_kill(r):
    """redis-py parses CLIENT LIST / INFO lines into dicts."""
    host, port = _addr()
    other = redis.Redis(host=host, port=port, socket_timeout=5, decode_responses=True)
    other.client_setname("py-victim")
    victim = other.client_id()
    me = r.client_info()
    assert int(me["id"]) == r.client_id()
    assert me["cmd"] == "client|info" and int(me["db"]) == 0 and me["flags"] == "N"
    listed = {int(c["id"]): c for c in r.client_list()}
    assert listed[victim]["name"] == "py-victim"
    assert r.client_kill_filter(_id=victim) == 1
    # redis-py reconnects: the killed connection is replaced by a new one.
    assert other.client_id() != victim
    assert victim not in {int(c["id"]) for c in r.client_list()}
    other.close()


def test_monitor(r):
    """redis-py's Monitor reads the lines a MONITOR connection gets."""
    host, port = _addr()
    watcher = redis.Redis(host=host, port=port, socket_timeout=5)
    a = k("mon")
    with watcher.monitor() as m:
        r.set(a, "v 1")
        for _ in range(1000):
            ev = m.next_command()
            if a in ev["command"]:
                break
        assert ev["command"] == f"SET {a} v 1"
        assert ev["db"] == 0 and ev["client_type"] == "tcp"
    watcher.close()


def test_bits_and_lcs(r):
    a, b = k("bits"), k("bits2")
    assert r.setbit(a, 7, 1) == 0
    assert r.getbit(a, 7) == 1
    assert r.bitcount(a) == 1
    assert r.bitpos(a, 1) == 7
    assert r.bitfield(a).incrby("u8", 0, 10).get("u4", 0).execute() == [11, 0]
    assert r.set(b, "ohmytext") and r.set(a, "mynewtext")
    assert r.lcs(b, a) == "mytext"


def test_hashes(r):
    h = k("h")
    assert r.hset(h, "a", "1") == 1
    assert r.hset(h, mapping={"a": "10", "b": "2", "c": "3"}) == 2
    assert r.hset(h, "d", "4", items=["e", "5"]) == 2
    assert r.hget(h, "a") == "10"
    assert r.hget(h, "zz") is None
    assert r.hget(k("none"), "a") is None
    assert r.hmget(h, ["a", "zz", "b"]) == ["10", None, "2"]
    assert r.hgetall(h) == {"a": "10", "b": "2", "c": "3", "d": "4", "e": "5"}
    assert r.hgetall(k("none")) == {}
    assert sorted(r.hkeys(h)) == ["a", "b", "c", "d", "e"]
    assert sorted(r.hvals(h)) == ["10", "2", "3", "4", "5"]
    assert r.hlen(h) == 5
    assert r.hlen(k("none")) == 0
    assert r.hstrlen(h, "a") == 2
    assert r.hexists(h, "a") is True
    assert r.hexists(h, "zz") is False
    assert r.hsetnx(h, "a", "x") == 0
    assert r.hsetnx(h, "f", "6") == 1
    assert r.hincrby(h, "n", 5) == 5
    assert r.hincrby(h, "n", -7) == -2
    assert r.hincrbyfloat(h, "x", 10.5) == 10.5
    assert r.hincrbyfloat(h, "x", 0.1) == 10.6
    assert r.hget(h, "x") == "10.6"
    with pytest.raises(redis.ResponseError, match="hash value is not an integer"):
        r.hincrby(h, "x", 1)
    assert r.hset(h, "s", "abc") == 1
    with pytest.raises(redis.ResponseError, match="hash value is not a float"):
        r.hincrbyfloat(h, "s", 1)
    assert r.hdel(h, "a", "zz") == 1
    assert r.hdel(h, "b", "c", "d", "e", "f", "n", "x", "s") == 8
    assert r.exists(h) == 0
    assert r.type(h) == "none"
    s = k("s")
    r.set(s, "v")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        r.hget(s, "a")
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'hset' command"):
        r.execute_command("HSET", h, "a", "1", "b")


def test_hash_random_and_types(r):
    h = k("hr")
    r.hset(h, mapping={"a": "1", "b": "2", "c": "3"})
    assert r.type(h) == "hash"
    assert r.hrandfield(h) in {"a", "b", "c"}
    assert sorted(r.hrandfield(h, 5)) == ["a", "b", "c"]
    assert len(r.hrandfield(h, -7)) == 7
    assert r.hrandfield(k("none")) is None
    assert r.hrandfield(h, 0) == []
    pairs = r.hrandfield(h, 2, withvalues=True)
    # RESP2: flat [field, value, ...]; RESP3: [[field, value], ...].
    if pairs and isinstance(pairs[0], list):
        pairs = [x for p in pairs for x in p]
    assert len(pairs) == 4
    for f, v in zip(pairs[0::2], pairs[1::2]):
        assert {"a": "1", "b": "2", "c": "3"}[f] == v
    assert h in set(r.scan_iter(match=h, _type="hash"))
    assert h not in set(r.scan_iter(match=h, _type="string"))


def test_hscan_iter_large_hash(r):
    h = k("big")
    n = 1000
    p = r.pipeline(transaction=False)
    for i in range(0, n, 100):
        p.hset(h, mapping={f"f{j}": f"v{j}" for j in range(i, i + 100)})
    assert p.execute() == [100] * (n // 100)
    assert r.hlen(h) == n
    seen = {}
    for f, v in r.hscan_iter(h, count=50):
        seen[f] = v
    assert seen == {f"f{i}": f"v{i}" for i in range(n)}
    assert dict(r.hscan_iter(h, match="f99*")) == {f"f{i}": f"v{i}" for i in [99] + list(range(990, 1000))}
    assert r.hgetall(h) == {f"f{i}": f"v{i}" for i in range(n)}
    assert r.delete(h) == 1


def test_hash_pipeline(r):
    h = k("hp")
    p = r.pipeline(transaction=False)
    p.hset(h, mapping={"a": "1", "b": "2"})
    p.hincrby(h, "a", 5)
    p.hincrbyfloat(h, "c", 1.5)
    p.hget(h, "a")
    p.hmget(h, "a", "b", "zz")
    p.hexists(h, "zz")
    p.hdel(h, "b")
    p.hlen(h)
    p.hgetall(h)
    p.hkeys(h)
    p.hvals(h)
    assert p.execute() == [
        2,
        6,
        1.5,
        "6",
        ["6", "2", None],
        False,
        1,
        2,
        {"a": "6", "c": "1.5"},
        ["a", "c"],
        ["6", "1.5"],
    ]


def test_lists(r):
    a, b, s = k("la"), k("lb"), k("ls")
    assert r.rpush(a, "x", "y", "z") == 3
    assert r.lpush(a, "w") == 4
    assert r.lrange(a, 0, -1) == ["w", "x", "y", "z"]
    assert r.llen(a) == 4
    assert r.lindex(a, -1) == "z"
    assert r.lindex(a, 9) is None
    assert r.lset(a, 1, "X") is True
    assert r.linsert(a, "before", "y", "v") == 5
    assert r.lrem(a, 0, "v") == 1
    assert r.lpos(a, "z") == 3
    assert r.lpos(a, "nope") is None
    assert r.lpos(a, "X", count=0) == [1]
    assert r.lpushx(b, "q") == 0
    assert r.lmove(a, b, "LEFT", "RIGHT") == "w"
    assert r.rpoplpush(a, b) == "z"
    assert r.lrange(b, 0, -1) == ["z", "w"]
    assert r.lmpop(2, s, a, direction="RIGHT", count=5) == [a, ["y", "X"]]
    assert r.exists(a) == 0
    assert r.lpop(b) == "z"
    assert r.rpop(b, 5) == ["w"]
    assert r.lpop(b) is None
    assert r.lpop(b, 2) is None
    assert r.ltrim(b, 0, 1) is True
    r.set(s, "str")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        r.lpush(s, "x")
    with pytest.raises(redis.ResponseError, match="no such key"):
        r.lset(b, 0, "x")


def test_blpop_woken_from_another_connection(r):
    import threading
    import time

    q = k("q")
    host, port = _addr()
    got = {}

    def waiter():
        c = redis.Redis(host=host, port=port, socket_timeout=10, decode_responses=True)
        got["v"] = c.blpop([q], timeout=0)
        c.close()

    t = threading.Thread(target=waiter)
    t.start()
    # Let it block (a wait, not a speed assertion).
    time.sleep(0.3)
    assert t.is_alive()
    assert r.rpush(q, "hello") == 1
    t.join(10)
    assert not t.is_alive()
    assert got["v"] in ([q, "hello"], (q, "hello"))
    assert r.exists(q) == 0
    assert r.blpop([q], timeout=0.1) is None
    assert r.brpoplpush(q, k("d"), timeout=0.1) is None


def test_sets(r):
    a, b, s = k("sa"), k("sb"), k("ss")
    assert r.sadd(a, "x", "y", "1", "2") == 4
    assert r.sadd(a, "x") == 0
    assert r.smembers(a) == {"x", "y", "1", "2"}
    assert r.sismember(a, "x") in (1, True)
    assert r.sismember(a, "zz") in (0, False)
    assert [bool(v) for v in r.smismember(a, ["x", "zz"])] == [True, False]
    assert r.scard(a) == 4
    assert r.sadd(b, "y", "2", "q") == 3
    assert r.sinter(a, b) == {"y", "2"}
    assert r.sunion(a, b) == {"x", "y", "1", "2", "q"}
    assert r.sdiff(a, b) == {"x", "1"}
    assert r.sintercard(2, [a, b]) == 2
    assert r.sinterstore(s, [a, b]) == 2
    assert r.smembers(s) == {"y", "2"}
    assert r.smove(a, b, "x") in (1, True)
    assert r.srem(b, "x", "q") == 2
    assert r.srandmember(a) in {"y", "1", "2"}
    assert len(r.srandmember(a, -5)) == 5
    popped = r.spop(a, 10)
    assert set(popped) == {"y", "1", "2"}
    assert r.exists(a) == 0
    assert r.spop(a) is None
    assert r.smembers(a) == set()
    r.set(s, "str")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        r.sadd(s, "x")


def test_sscan_iter_large_set(r):
    big = k("bigset")
    members = {f"m{i}" for i in range(1000)}
    assert r.sadd(big, *members) == 1000
    assert set(r.sscan_iter(big, count=50)) == members
    assert set(r.sscan_iter(big, match="m99*")) == {"m99", *(f"m99{i}" for i in range(10))}
    assert r.delete(big) == 1


def _pairs(v):
    """WITHSCORES replies as (member, score) tuples: redis-py gives tuples
    in RESP2 and two-element lists in RESP3; ZPOPMIN without a count is a
    flat [member, score] in RESP3 (as Redis 7.0 sends it)."""
    if v and not isinstance(v[0], (list, tuple)):
        v = [v]
    return [(m, float(s)) for m, s in v]


def test_sorted_sets(r):
    z = k("z")
    assert r.zadd(z, {"a": 1, "b": 2.5, "c": 3}) == 3
    assert r.zadd(z, {"a": 5, "d": 4}, nx=True) == 1
    assert r.zadd(z, {"a": 0.5}, xx=True, ch=True) == 1
    assert r.zadd(z, {"a": 2}, incr=True) == 2.5
    assert r.zscore(z, "a") == 2.5
    assert r.zscore(z, "nope") is None
    assert r.zincrby(z, 0.25, "b") == 2.75
    assert r.zincrby(z, 1, "new") == 1.0
    assert r.zcard(z) == 5
    assert r.zrange(z, 0, -1) == ["new", "a", "b", "c", "d"]
    assert _pairs(r.zrange(z, 0, 1, withscores=True)) == [("new", 1.0), ("a", 2.5)]
    assert _pairs(r.zrange(z, 0, 0, desc=True, withscores=True)) == [("d", 4.0)]
    assert r.zrangebyscore(z, 2, "(3") == ["a", "b"]
    assert _pairs(r.zrangebyscore(z, "-inf", "+inf", start=1, num=2, withscores=True)) == [("a", 2.5), ("b", 2.75)]
    assert r.zrevrangebyscore(z, "+inf", 3) == ["d", "c"]
    assert r.zrank(z, "b") == 2
    assert r.zrank(z, "nope") is None
    assert r.zcount(z, "-inf", 2.75) == 3
    assert _pairs(r.zpopmin(z)) == [("new", 1.0)]
    assert _pairs(r.zpopmin(z, 2)) == [("a", 2.5), ("b", 2.75)]
    assert _pairs(r.zpopmax(z)) == [("d", 4.0)]
    assert r.zrem(z, "c", "nope") == 1
    assert r.exists(z) == 0
    assert r.zpopmin(z) == []
    s = k("s")
    r.set(s, "str")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        r.zadd(s, {"a": 1})
    with pytest.raises(redis.ResponseError, match="not a valid float"):
        r.execute_command("ZADD", z, "x", "a")


def test_transaction_pipeline(r):
    """redis-py's pipeline() wraps its commands in MULTI/EXEC by default."""
    a, l = k("a"), k("l")
    with r.pipeline() as p:
        p.set(a, "1").incr(a).rpush(l, "x", "y").lrange(l, 0, -1).get(a)
        assert p.execute() == [True, 2, 2, ["x", "y"], "2"]
    # A runtime error is one element; the others ran.
    with r.pipeline() as p:
        p.lpush(a, "x").incr(a)
        out = p.execute(raise_on_error=False)
    assert isinstance(out[0], redis.ResponseError) and "WRONGTYPE" in str(out[0])
    assert out[1] == 3


def test_watch_retry_loop_under_contention(r):
    """The WATCH / MULTI / EXEC retry loop of redis-py's docs, run by
    several threads at once on one counter: every increment lands once."""
    import threading

    host, port = _addr()
    counter = k("counter")
    r.set(counter, "0")
    threads_n, per_thread = 4, 50
    retries = []

    def work():
        c = redis.Redis(host=host, port=port, socket_timeout=10, decode_responses=True)
        n = 0
        for _ in range(per_thread):
            with c.pipeline() as p:
                while True:
                    try:
                        p.watch(counter)
                        v = int(p.get(counter))
                        p.multi()
                        p.set(counter, str(v + 1))
                        p.execute()
                        break
                    except redis.WatchError:
                        n += 1
        retries.append(n)
        c.close()

    ts = [threading.Thread(target=work) for _ in range(threads_n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert r.get(counter) == str(threads_n * per_thread)
    # r.transaction() is the same loop as a helper.
    r.transaction(lambda p: p.multi() or p.incr(counter), counter)
    assert r.get(counter) == str(threads_n * per_thread + 1)


def test_rename(r):
    a, b = k("a"), k("b")
    r.hset(a, mapping={"f": "v"})
    assert r.rename(a, b) is True
    assert r.hgetall(b) == {"f": "v"}
    assert r.exists(a) == 0
    assert r.renamenx(b, a) is True
    with pytest.raises(redis.ResponseError, match="no such key"):
        r.rename(b, a)


# The password of the server AMALGAM_TEST_RESP_AUTH_ADDR names (started
# with --requirepass by scripts/test.sh; TEST_REQUIREPASS in the Rust tests).
TEST_REQUIREPASS = "amalgam-test-pass"


def test_password_protected_server():
    addr = os.environ.get("AMALGAM_TEST_RESP_AUTH_ADDR")
    if not addr:
        pytest.skip("AMALGAM_TEST_RESP_AUTH_ADDR is not set (scripts/test.sh sets it)")
    host, port = addr.rsplit(":", 1)
    anon = redis.Redis(host=host, port=int(port), socket_timeout=5)
    with pytest.raises(redis.exceptions.AuthenticationError):
        anon.ping()
    anon.close()
    with pytest.raises(redis.exceptions.AuthenticationError):
        redis.Redis(host=host, port=int(port), password="wrong", socket_timeout=5).ping()
    for proto in (2, 3):
        c = redis.Redis(host=host, port=int(port), password=TEST_REQUIREPASS, protocol=proto,
                        socket_timeout=5, decode_responses=True)
        key = k("auth")
        assert c.set(key, "v")
        assert c.get(key) == "v"
        assert c.acl_whoami() == "default"
        c.delete(key)
        c.close()


def test_acl_user_with_username_and_password(r):
    user = k("user")
    prefix = k("acl")
    assert r.acl_setuser(user, enabled=True, passwords=["+pw"], keys=[f"{prefix}*"],
                         commands=["+get", "+set", "+acl|whoami"])
    try:
        host, port = _addr()
        u = redis.Redis(host=host, port=port, username=user, password="pw", socket_timeout=5,
                        decode_responses=True)
        assert u.acl_whoami() == user
        assert u.set(f"{prefix}:a", "1")
        assert u.get(f"{prefix}:a") == "1"
        with pytest.raises(redis.exceptions.NoPermissionError):
            u.get(k("other"))
        with pytest.raises(redis.exceptions.NoPermissionError):
            u.delete(f"{prefix}:a")
        u.close()
        with pytest.raises(redis.exceptions.AuthenticationError):
            redis.Redis(host=host, port=port, username=user, password="wrong", socket_timeout=5).ping()
        info = r.acl_getuser(user)
        assert "on" in info["flags"]
        assert info["passwords"] == ["30c952fab122c3f9759f02a6d95c3758b246b4fee239957b2d4fee46e26170c4"]
    finally:
        r.acl_deluser(user)
        r.delete(f"{prefix}:a")
