"""redis-py against a running RESP server's numbered databases (0-15):
a client URL's database (`redis://host:port/3`), SELECT and its range and
integer errors, one key name living apart in two databases, DBSIZE and
FLUSHDB (SYNC and ASYNC) per database, KEYS / SCAN / RANDOMKEY per
database, MOVE, SWAPDB (seen by a client already selected on a swapped
database), COPY ... DB, SELECT inside MULTI, WATCH per database, BLPOP
per database, INFO keyspace, and SELECT inside a Lua script.

Read as test_redis_py.py is: the server is AMALGAM_TEST_RESP_ADDR=host:port
(scripts/test.sh runs this against amalgam and against Debian's
redis-server 7.0.15, proving the expectations are Redis's own); each test
runs with RESP2 and RESP3. Skipped when the variable is unset.

The server is shared with the other test files, which use database 0
only: nothing here flushes or swaps database 0 (nor runs FLUSHALL). What
flushes or swaps uses databases 9-15, flushed when a test takes them and
again when it ends, so they are left empty; what this file writes into
database 0 (or 3) has a unique name and is deleted.
"""

import threading
import time

import pytest
import redis

# The server's address, the RESP2/RESP3 client fixture and unique key
# names, as test_redis_py.py defines them (pytest puts this folder on
# sys.path).
from test_redis_py import _addr, k, r  # noqa: F401


def _protocol(r):
    return r.connection_pool.connection_kwargs.get("protocol", 2)


def _error(fn, *args, **kwargs):
    """The text of the error reply fn gets (redis-py drops the "ERR ")."""
    with pytest.raises(redis.ResponseError) as e:
        fn(*args, **kwargs)
    return str(e.value)


def _raw(c, *args):
    """The reply to one command on a single_connection_client's connection,
    as the server sent it (no redis-py response callback: "QUEUED" stays
    "QUEUED")."""
    c.connection.send_command(*args)
    return c.connection.read_response()


@pytest.fixture
def db(r):
    """db(n): a client of r's protocol on database n, closed after the
    test (keyword arguments go to redis.Redis)."""
    host, port = _addr()
    opened = []

    def open_(n, **kwargs):
        kwargs = {"socket_timeout": 5, **kwargs}
        c = redis.Redis(host=host, port=port, db=n, protocol=_protocol(r), decode_responses=True, **kwargs)
        opened.append(c)
        return c

    yield open_
    for c in opened:
        c.close()


@pytest.fixture
def scratch(db):
    """scratch(n): a client on database n (one of 9-15), flushed now and
    again when the test ends."""
    host, port = _addr()
    taken = []

    def take(n, **kwargs):
        assert 9 <= n <= 15, "only databases 9-15 are flushed here"
        c = db(n, **kwargs)
        assert c.flushdb() is True
        taken.append(n)
        return c

    yield take
    for n in taken:
        c = redis.Redis(host=host, port=port, db=n, socket_timeout=5)
        c.flushdb()
        c.close()


def test_url_database(r, db):
    host, port = _addr()
    c = redis.Redis.from_url(f"redis://{host}:{port}/3", protocol=_protocol(r), socket_timeout=5,
                             decode_responses=True)
    a = k("url")
    try:
        assert c.set(a, "in3") is True
        assert c.get(a) == "in3"
        assert r.get(a) is None, "database 0 does not see database 3's key"
        assert r.exists(a) == 0
        assert db(3).get(a) == "in3"
        assert int(c.client_info()["db"]) == 3
        assert int(r.client_info()["db"]) == 0
    finally:
        c.delete(a)
        c.close()


def test_select_range_and_errors(r, db):
    c = db(0, single_connection_client=True)
    assert c.execute_command("SELECT", 15) is True
    assert int(c.client_info()["db"]) == 15
    assert _error(c.execute_command, "SELECT", 16) == "DB index is out of range"
    assert _error(c.execute_command, "SELECT", -1) == "DB index is out of range"
    assert _error(c.execute_command, "SELECT", "x") == "value is not an integer or out of range"
    # A refused SELECT leaves the connection where it was.
    assert int(c.client_info()["db"]) == 15
    assert c.execute_command("SELECT", 0) is True
    assert int(c.client_info()["db"]) == 0


def test_same_key_name_in_two_databases(scratch):
    c10, c11 = scratch(10), scratch(11)
    a = k("same")
    assert c10.set(a, "ten") is True
    assert c11.rpush(a, "x", "y") == 2
    assert c10.type(a) == "string"
    assert c11.type(a) == "list"
    assert c10.get(a) == "ten"
    assert c11.lrange(a, 0, -1) == ["x", "y"]
    assert _error(c11.get, a) == "WRONGTYPE Operation against a key holding the wrong kind of value"
    assert c10.exists(a) == 1 and c11.exists(a) == 1
    assert c10.delete(a) == 1
    assert c10.exists(a) == 0
    assert c10.type(a) == "none"
    assert c11.exists(a) == 1
    assert c11.type(a) == "list"
    assert c11.lrange(a, 0, -1) == ["x", "y"]
    assert c10.delete(a) == 0


def test_dbsize_and_flushdb(scratch):
    c12, c13 = scratch(12), scratch(13)
    assert c12.dbsize() == 0 and c13.dbsize() == 0
    assert c12.mset({k("a"): "1", k("b"): "2", k("c"): "3"}) is True
    keep = k("keep")
    assert c13.set(keep, "v") is True
    assert c12.dbsize() == 3
    assert c13.dbsize() == 1
    assert c12.flushdb() is True
    assert c12.dbsize() == 0
    assert c13.dbsize() == 1
    assert c13.get(keep) == "v"
    c12.set(k("d"), "4")
    assert c12.flushdb(asynchronous=True) is True
    assert c12.dbsize() == 0
    c12.set(k("e"), "5")
    assert c12.execute_command("FLUSHDB", "SYNC") is True
    assert c12.dbsize() == 0
    assert c13.get(keep) == "v"


def test_keys_scan_randomkey_per_database(r, scratch):
    c14, c15 = scratch(14), scratch(15)
    assert c14.randomkey() is None
    assert c14.keys("*") == []
    only = k("only")
    assert c14.set(only, "v") is True
    assert c14.randomkey() == only
    names = {only} | {k(f"s{i}") for i in range(9)}
    for n in names - {only}:
        c14.set(n, "v")
    assert c15.set(k("other"), "v") is True
    # The names as the client wrote them, nothing of database 15's.
    assert sorted(c14.keys("*")) == sorted(names)
    assert c14.keys(only) == [only]
    assert set(c14.scan_iter(count=3)) == names
    assert set(c14.scan_iter(match="*_s*", count=2)) == names - {only}
    cursor, page = c14.scan(0, match=only, count=100)
    assert (cursor, page) == (0, [only])
    assert c14.randomkey() in names
    assert c15.randomkey() is not None and c15.randomkey() not in names
    # Database 0 does not see them either.
    assert r.exists(*names) == 0


def test_move(r, scratch):
    c11 = scratch(11)
    a = k("move")
    assert r.set(a, "v", px=100000) is True
    assert r.move(a, 11) is True
    assert r.exists(a) == 0
    assert c11.get(a) == "v"
    assert 0 < c11.pttl(a) <= 100000, "the TTL moves with the key"
    # The target has the key: nothing moves.
    assert r.set(a, "again") is True
    assert r.move(a, 11) is False
    assert r.get(a) == "again"
    assert c11.get(a) == "v"
    assert r.delete(a) == 1
    # A missing key: nothing to move.
    assert r.move(k("missing"), 11) is False
    assert _error(c11.move, a, 11) == "source and destination objects are the same"
    assert c11.get(a) == "v"
    assert _error(c11.move, a, 16) == "DB index is out of range"
    assert c11.get(a) == "v"


def test_swapdb(r, scratch):
    c9 = scratch(9, single_connection_client=True)
    c10 = scratch(10)
    a, b = k("nine"), k("ten")
    assert c9.set(a, "from9") is True
    assert c10.set(b, "from10") is True
    assert c10.lpush(a, "list10") == 1
    assert c9.get(a) == "from9"  # c9's connection is open and selected on 9
    assert r.swapdb(9, 10) is True
    # c9 is still on database 9, which now holds 10's former data.
    assert int(c9.client_info()["db"]) == 9
    assert c9.get(b) == "from10"
    assert c9.type(a) == "list"
    assert c9.lrange(a, 0, -1) == ["list10"]
    assert c10.get(a) == "from9"
    assert c10.exists(b) == 0
    assert c9.dbsize() == 2 and c10.dbsize() == 1
    assert _error(r.execute_command, "SWAPDB", 9, 16) == "DB index is out of range"
    assert _error(r.execute_command, "SWAPDB", "a", 1) == "invalid first DB index"
    assert _error(r.execute_command, "SWAPDB", 1, "b") == "invalid second DB index"
    # The refused swaps changed nothing.
    assert c9.get(b) == "from10"
    assert c10.get(a) == "from9"


def test_copy_to_another_database(r, scratch):
    c12 = scratch(12)
    src, dst = k("src"), k("dst")
    assert r.set(src, "one") is True
    try:
        assert r.copy(src, dst, destination_db=12) is True
        assert c12.get(dst) == "one"
        assert r.get(src) == "one", "the source stays"
        assert r.exists(dst) == 0
        assert r.set(src, "two") is True
        assert r.copy(src, dst, destination_db=12) is False, "the target exists: no REPLACE, no copy"
        assert c12.get(dst) == "one"
        assert r.copy(src, dst, destination_db=12, replace=True) is True
        assert c12.get(dst) == "two"
        assert r.get(src) == "two"
        # The same name into the other database.
        assert r.copy(src, src, destination_db=12) is True
        assert c12.get(src) == "two"
    finally:
        r.delete(src)


def test_select_inside_multi(scratch, db):
    c = scratch(10, single_connection_client=True)
    c11 = scratch(11)
    a = k("multi")
    assert _raw(c, "MULTI") == "OK"
    assert _raw(c, "SET", a, "a") == "QUEUED"
    assert _raw(c, "SELECT", 11) == "QUEUED"
    assert _raw(c, "SET", a, "b") == "QUEUED"
    assert _raw(c, "EXEC") == ["OK", "OK", "OK"]
    assert db(10).get(a) == "a"
    assert c11.get(a) == "b"
    # The connection stays on database 11.
    assert int(c.client_info()["db"]) == 11
    assert c.get(a) == "b"


def test_watch_is_per_database(scratch, db):
    c = scratch(10, single_connection_client=True)
    c11 = scratch(11)
    other10 = db(10)
    a = k("watch")
    assert _raw(c, "WATCH", a) == "OK"
    assert c11.set(a, "elsewhere") is True
    assert _raw(c, "MULTI") == "OK"
    assert _raw(c, "SET", a, "mine") == "QUEUED"
    assert _raw(c, "EXEC") == ["OK"], "a write in database 11 does not touch a key watched in 10"
    assert c.get(a) == "mine"
    assert _raw(c, "WATCH", a) == "OK"
    assert other10.set(a, "theirs") is True
    assert _raw(c, "MULTI") == "OK"
    assert _raw(c, "SET", a, "mine2") == "QUEUED"
    assert _raw(c, "EXEC") is None
    assert c.get(a) == "theirs"
    assert c11.get(a) == "elsewhere"


def test_blpop_is_per_database(r, scratch, db):
    c13 = scratch(13)
    blocker = db(13, socket_timeout=10)
    a = k("blpop")
    name = k("blocker")
    assert blocker.client_setname(name) is True
    got = []
    t = threading.Thread(target=lambda: got.append(blocker.blpop([a], timeout=5)))
    t.start()
    try:
        # Until the server shows the client blocked in BLPOP.
        for _ in range(1000):
            mine = [c for c in r.client_list() if c["name"] == name]
            if mine and mine[0]["cmd"] == "blpop" and "b" in mine[0]["flags"]:
                break
            time.sleep(0.002)
        else:
            pytest.fail("the BLPOP client never showed as blocked")
        assert int(mine[0]["db"]) == 13
        assert r.lpush(a, "in0") == 1
        # Database 0's push did not serve it: the value stays, the client
        # is still blocked.
        assert r.lrange(a, 0, -1) == ["in0"]
        mine = [c for c in r.client_list() if c["name"] == name]
        assert mine[0]["cmd"] == "blpop" and "b" in mine[0]["flags"]
        assert got == []
        assert c13.lpush(a, "in13") == 1
        t.join(10)
        assert not t.is_alive()
        # (redis-py gives a tuple in RESP2, a list in RESP3.)
        assert [list(x) for x in got] == [[a, "in13"]]
        assert c13.exists(a) == 0
        assert r.lrange(a, 0, -1) == ["in0"]
    finally:
        t.join(10)
        r.delete(a)


def test_info_keyspace(scratch):
    c14 = scratch(14)
    c15 = scratch(15)
    assert "db14" not in c14.info("keyspace")
    a, b = k("a"), k("b")
    assert c14.set(a, "1") is True
    assert c14.set(b, "2") is True
    assert c14.expire(b, 100) is True
    info = c14.info("keyspace")
    assert info["db14"]["keys"] == 2
    assert info["db14"]["expires"] == 1
    assert "db15" not in info, "an empty database has no line"
    assert c15.dbsize() == 0


def test_lua_select(scratch):
    c = scratch(12, single_connection_client=True)
    c13 = scratch(13)
    a = k("lua")
    assert c.set(a, "twelve") is True
    assert c.eval("return redis.call('get', KEYS[1])", 1, a) == "twelve"
    assert c.eval("redis.call('select', 13); return redis.call('set', KEYS[1], 'x')", 1, a) == "OK"
    assert c13.get(a) == "x"
    # Redis 7 puts the caller back on its database after the script.
    assert int(c.client_info()["db"]) == 12
    assert c.get(a) == "twelve"
    assert c.eval("return redis.call('get', KEYS[1])", 1, a) == "twelve"
