"""redis-py's `sort()` and `sort_ro()` helpers against a running RESP
server: numbers and `alpha`, `desc`, `start`/`num` (LIMIT), `by` (string
weights, hash fields, `nosort`), `get` (one pattern or several, `#`),
`groups` (the values of several GETs as tuples), `store`, and the errors.

Read as test_redis_py.py is: the server is AMALGAM_TEST_RESP_ADDR=host:port
(scripts/test.sh runs this against amalgam and against Debian's
redis-server 7, proving the expectations are Redis's own); each test runs
with RESP2 and RESP3. Skipped when the variable is unset.
"""

import pytest
import redis

# The server's address, the RESP2/RESP3 client fixture and unique key
# names, as test_redis_py.py defines them (pytest puts this folder on
# sys.path).
from test_redis_py import k, r  # noqa: F401


def test_sort_numbers_alpha_desc_and_limit(r):
    lst = k("l")
    r.rpush(lst, 3, 1, 2, 10, 1.5)
    assert r.sort(lst) == ["1", "1.5", "2", "3", "10"]
    assert r.sort(lst, desc=True) == ["10", "3", "2", "1.5", "1"]
    assert r.sort(lst, alpha=True) == ["1", "1.5", "10", "2", "3"]
    assert r.sort(lst, start=1, num=2) == ["1.5", "2"]
    assert r.sort(lst, start=4, num=10) == ["10"]
    assert r.sort(lst, start=10, num=2) == []
    assert r.sort_ro(lst, start=0, num=2, desc=True) == ["10", "3"]
    with pytest.raises(redis.DataError):
        r.sort(lst, start=1)  # redis-py wants both or neither
    s = k("s")
    r.sadd(s, "b", "c", "a")
    assert r.sort(s, alpha=True) == ["a", "b", "c"]
    z = k("z")
    r.zadd(z, {"c": 1, "a": 3, "b": 2})
    assert r.sort(z, by="nosort") == ["c", "b", "a"]
    assert r.sort(z, by="nosort", desc=True, start=0, num=2) == ["a", "b"]
    assert r.sort(k("missing")) == []


def test_sort_by_and_get_patterns_and_groups(r):
    p = k("p")
    users = f"{p}:users"
    r.rpush(users, "1", "2", "3")
    for uid, name, age in [("1", "carol", 31), ("2", "alice", 25), ("3", "bob", 40)]:
        r.hset(f"{p}:user:{uid}", mapping={"name": name, "age": age})
        r.set(f"{p}:rank:{uid}", 4 - int(uid))
    assert r.sort(users, by=f"{p}:rank:*") == ["3", "2", "1"]
    assert r.sort(users, by=f"{p}:user:*->age") == ["2", "1", "3"]
    assert r.sort(users, by=f"{p}:user:*->name", alpha=True) == ["2", "3", "1"]
    assert r.sort(users, by=f"{p}:user:*->name", alpha=True, get=f"{p}:user:*->name") == ["alice", "bob", "carol"]
    got = r.sort(users, by=f"{p}:user:*->age", get=["#", f"{p}:user:*->name", f"{p}:user:*->age"], groups=True)
    assert got == [("2", "alice", "25"), ("1", "carol", "31"), ("3", "bob", "40")]
    got = r.sort(users, by="nosort", get=["#", f"{p}:nokey:*"], groups=True, desc=True)
    assert got == [("3", None), ("2", None), ("1", None)]
    assert r.sort_ro(users, by=f"{p}:rank:*", get=f"{p}:rank:*") == ["1", "2", "3"]
    with pytest.raises(redis.DataError):
        r.sort(users, get="#", groups=True)  # groups needs two GETs or more


def test_sort_store(r):
    src, dst = k("src"), k("dst")
    r.rpush(src, "b", "c", "a")
    r.set(dst, "replaced", ex=100)
    assert r.sort(src, alpha=True, store=dst) == 3
    assert r.lrange(dst, 0, -1) == ["a", "b", "c"]
    assert r.ttl(dst) == -1
    assert r.sort(src, alpha=True, desc=True, start=0, num=1, store=dst) == 1
    assert r.lrange(dst, 0, -1) == ["c"]
    assert r.sort(src, alpha=True, start=5, num=1, store=dst) == 0
    assert r.exists(dst) == 0


def test_sort_errors(r):
    lst, s = k("l"), k("str")
    r.rpush(lst, "1", "x")
    with pytest.raises(redis.ResponseError, match="One or more scores can't be converted into double"):
        r.sort(lst)
    r.set(s, "v")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        r.sort(s)
    with pytest.raises(redis.ResponseError, match="syntax error"):
        r.execute_command("SORT_RO", lst, "STORE", k("d"))
    with pytest.raises(redis.ResponseError, match="value is not an integer or out of range"):
        r.execute_command("SORT", lst, "LIMIT", "a", "1")
