"""redis-py's scripting helpers against a running RESP server: `Lock`
(whose acquire, extend, reacquire and release are Lua scripts run with
EVALSHA), `register_script` (EVALSHA, falling back to SCRIPT LOAD on
NOSCRIPT), `eval`, `evalsha`, `script_load`, `script_exists`,
`script_flush`.

Read as test_redis_py.py is: the server is AMALGAM_TEST_RESP_ADDR=host:port
(scripts/test.sh runs this against amalgam and against Debian's
redis-server 7, proving the expectations are Redis's own); each test runs
with RESP2 and RESP3. Skipped when the variable is unset.

Some tests flush the script cache: redis-py reloads what it needs, and
the tests in this file run one at a time, so none of them relies on a
script surviving another test.
"""

import time

import pytest
import redis
from redis.exceptions import LockError, LockNotOwnedError, NoScriptError

# The server's address, the RESP2/RESP3 client fixture and unique key
# names, as test_redis_py.py defines them (pytest puts this folder on
# sys.path).
from test_redis_py import k, r  # noqa: F401

UNKNOWN_SHA = "0" * 40


def test_lock_acquire_extend_reacquire_release(r):
    name = k("lock")
    lock = r.lock(name, timeout=10)
    assert lock.acquire(blocking=False) is True
    assert lock.locked() is True
    assert lock.owned() is True
    assert 9000 <= r.pttl(name) <= 10000
    # extend adds to the remaining time; replace_ttl sets it.
    assert lock.extend(20) is True
    assert 29000 <= r.pttl(name) <= 30000
    assert lock.extend(5, replace_ttl=True) is True
    assert 4000 <= r.pttl(name) <= 5000
    # reacquire resets the time to the lock's timeout.
    assert lock.reacquire() is True
    assert 9000 <= r.pttl(name) <= 10000
    lock.release()
    assert lock.locked() is False
    assert r.exists(name) == 0
    # Released, it can be taken again; as a context manager too.
    assert lock.acquire(blocking=False) is True
    lock.release()
    with r.lock(name, timeout=10) as held:
        assert held.owned() is True
        assert r.lock(name).acquire(blocking=False) is False
    assert r.exists(name) == 0


def test_lock_release_by_a_non_owner_raises(r):
    name = k("lock")
    first = r.lock(name, timeout=0.2)
    assert first.acquire(blocking=False) is True
    time.sleep(0.4)
    assert r.exists(name) == 0, "the lock expired"
    second = r.lock(name, timeout=10)
    assert second.acquire(blocking=False) is True
    # first's token no longer holds the lock: its scripts say so.
    assert first.owned() is False
    with pytest.raises(LockNotOwnedError):
        first.extend(10)
    with pytest.raises(LockNotOwnedError):
        first.reacquire()
    with pytest.raises(LockNotOwnedError):
        first.release()
    assert second.owned() is True, "a non-owner's release leaves the lock alone"
    # A client with another token cannot release it either.
    other = r.lock(name, timeout=10)
    other.local.token = b"not-the-owners-token"
    with pytest.raises(LockNotOwnedError):
        other.release()
    assert second.owned() is True
    second.release()
    # Releasing a lock never acquired fails before any script runs.
    with pytest.raises(LockError):
        r.lock(name).release()


def test_lock_blocking_acquire_times_out_while_held(r):
    name = k("lock")
    holder = r.lock(name, timeout=10)
    assert holder.acquire(blocking=False) is True
    waiter = r.lock(name, timeout=10, sleep=0.05)
    start = time.monotonic()
    assert waiter.acquire(blocking=True, blocking_timeout=0.3) is False
    assert time.monotonic() - start >= 0.25
    assert holder.owned() is True
    holder.release()
    assert waiter.acquire(blocking=True, blocking_timeout=1) is True
    waiter.release()


def test_register_script_loads_once_and_reloads_after_flush(r):
    key, counter = k("rs"), k("rs-counter")
    script = r.register_script("redis.call('incr', KEYS[2]); return {KEYS[1], ARGV[1]}")
    assert r.script_flush() is True
    assert r.script_exists(script.sha) == [False]
    assert script(keys=[key, counter], args=["v1"]) == [key, "v1"], "NOSCRIPT, then SCRIPT LOAD and EVALSHA"
    assert r.script_exists(script.sha) == [True]
    assert script(keys=[key, counter], args=["v2"]) == [key, "v2"], "EVALSHA"
    assert r.get(counter) == "2", "each call ran the script once"
    assert r.script_flush() is True
    assert r.script_exists(script.sha) == [False]
    assert script(keys=[key, counter], args=["v3"]) == [key, "v3"], "reloaded transparently"
    assert r.script_exists(script.sha) == [True]
    assert r.get(counter) == "3"
    assert r.script_flush("SYNC") is True
    assert r.script_flush("ASYNC") is True
    assert r.script_exists(script.sha) == [False]
    # In a transaction, the pipeline loads the script before MULTI.
    with r.pipeline() as pipe:
        script(keys=[key, counter], args=["v4"], client=pipe)
        pipe.get(counter)
        assert pipe.execute() == [[key, "v4"], "4"]
    assert r.script_exists(script.sha) == [True]


def test_eval(r):
    key, h = k("eval"), k("eval-h")
    assert r.eval("return 42", 0) == 42
    assert r.eval("return {KEYS[1], ARGV[1], ARGV[2]}", 1, key, "a", "b") == [key, "a", "b"]
    assert r.eval("return redis.call('set', KEYS[1], ARGV[1])", 1, key, "7") == "OK"
    assert r.eval("return redis.call('incr', KEYS[1])", 1, key) == 8
    assert r.eval("return redis.call('get', KEYS[1])", 1, key) == "8"
    assert r.eval("return nil", 0) is None
    assert r.eval("return {1, 2, nil, 4}", 0) == [1, 2]
    r.set(key, "abc")
    with pytest.raises(redis.ResponseError, match="value is not an integer or out of range"):
        r.eval("return redis.call('incr', KEYS[1])", 1, key)
    with pytest.raises(redis.ResponseError, match="My Error"):
        r.eval("return redis.error_reply('My Error')", 0)
    with pytest.raises(redis.ResponseError, match="Number of keys can't be negative"):
        r.eval("return 1", -1)
    r.hset(h, mapping={"f": "v"})
    reply = r.eval("redis.setresp(3); return redis.call('hgetall', KEYS[1])", 1, h)
    if r.get_connection_kwargs().get("protocol") == 3:
        assert reply == {"f": "v"}, "a map under RESP3"
    else:
        assert reply == ["f", "v"], "a flat array under RESP2"
    assert r.eval_ro("return redis.call('hget', KEYS[1], 'f')", 1, h) == "v"
    with pytest.raises(redis.ResponseError, match="Write commands are not allowed from read-only scripts"):
        r.eval_ro("return redis.call('del', KEYS[1])", 1, h)


def test_script_load_exists_evalsha(r):
    key = k("sha")
    body = "return {'loaded', KEYS[1], ARGV[1]}"
    sha = r.script_load(body)
    assert len(sha) == 40 and sha == sha.lower()
    assert r.script_load(body) == sha
    assert r.script_exists(sha, UNKNOWN_SHA, sha.upper()) == [True, False, True]
    assert r.evalsha(sha, 1, key, "x") == ["loaded", key, "x"]
    assert r.evalsha(sha.upper(), 1, key, "y") == ["loaded", key, "y"]
    assert r.evalsha_ro(sha, 1, key, "z") == ["loaded", key, "z"]
    with pytest.raises(NoScriptError, match="No matching script"):
        r.evalsha(UNKNOWN_SHA, 0)
    with pytest.raises(NoScriptError):
        r.evalsha_ro(UNKNOWN_SHA, 0)
    with pytest.raises(redis.ResponseError, match="Error compiling script"):
        r.script_load("x x")
    assert r.script_exists(UNKNOWN_SHA) == [False]
