"""The `limits` rate-limiting library (what Flask-Limiter builds on) over
redis-py against a running RESP server.

`limits.storage.RedisStorage` keeps its counters with Lua scripts run by
redis-py's `register_script` (EVALSHA, then EVAL on NOSCRIPT): the fixed
window with INCRBY and EXPIRE, the moving window with a list (LINDEX,
LPUSH of `unpack`ed entries, LTRIM, EXPIRE, and a binary search that
returns `tostring` of a Lua number), the sliding window counter with
PTTL, RENAME and SET PX, and `reset()` with KEYS and DEL. The scripts
return `true`/`false`, which the server must turn into 1 and nil.

Read as test_redis_py.py is: the server is AMALGAM_TEST_RESP_ADDR=host:port
(scripts/test.sh runs this against amalgam and against Debian's
redis-server 7, proving the expectations are Redis's own); the tests of
one window run with RESP2 and RESP3. Skipped when the variable is unset
or `limits` is not installed. Every test keeps its keys under a key
prefix of its own (a uuid), so `reset()` deletes only them.
"""

import asyncio
import time
import uuid

import pytest

pytest.importorskip("limits")

from limits import RateLimitItemPerMinute, RateLimitItemPerSecond, parse  # noqa: E402
from limits.storage import RedisStorage, storage_from_string  # noqa: E402
from limits.strategies import (  # noqa: E402
    FixedWindowRateLimiter,
    MovingWindowRateLimiter,
)

try:
    from limits.strategies import SlidingWindowCounterRateLimiter
except ImportError:  # limits < 4.1
    SlidingWindowCounterRateLimiter = None

# The server's address, as test_redis_py.py reads it (skips when unset;
# pytest puts this folder on sys.path).
from test_redis_py import _addr  # noqa: E402

needs_sliding = pytest.mark.skipif(
    SlidingWindowCounterRateLimiter is None, reason="this limits has no SlidingWindowCounterRateLimiter"
)


def _uri():
    host, port = _addr()
    return f"redis://{host}:{port}"


def _prefix():
    return f"limits_{uuid.uuid4().hex[:12]}"


def _ident(name):
    """An identifier no other test (or run) uses."""
    return f"{name}-{uuid.uuid4().hex[:8]}"


def _storage(protocol=2, prefix=None):
    return storage_from_string(_uri(), key_prefix=prefix or _prefix(), protocol=protocol, socket_timeout=5)


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def storage(request):
    s = _storage(request.param)
    yield s
    s.reset()
    s.get_connection().close()


@pytest.fixture
def storage2():
    """RESP2 only: for the tests that wait for a window to pass (their
    replies are the same kinds as the other tests', under both protocols)."""
    s = _storage(2)
    yield s
    s.reset()
    s.get_connection().close()


def _raw(storage, item, ident):
    """The storage's key for the limit `item` of `ident`."""
    return storage.prefixed_key(item.key_for(ident))


def test_storage_from_string_and_check():
    s = _storage()
    assert isinstance(s, RedisStorage)
    assert s.check() is True
    direct = RedisStorage(_uri(), key_prefix=_prefix())
    assert direct.check() is True
    s.get_connection().close()
    direct.get_connection().close()


def test_fixed_window(storage):
    limiter = FixedWindowRateLimiter(storage)
    item = parse("3/minute")
    a, b = _ident("a"), _ident("b")
    assert limiter.test(item, a) is True
    assert limiter.get_window_stats(item, a).remaining == 3
    assert [limiter.hit(item, a) for _ in range(3)] == [True, True, True]
    assert limiter.hit(item, a) is False, "the 4th hit in the minute is refused"
    assert limiter.test(item, a) is False
    stats = limiter.get_window_stats(item, a)
    assert stats.remaining == 0
    now = time.time()
    assert now + 55 <= stats.reset_time <= now + 61
    # One counter, INCRBY'd by every hit (the refused one too), that
    # expires with the window.
    conn = storage.get_connection()
    assert int(conn.get(_raw(storage, item, a))) == 4
    assert 55 <= conn.ttl(_raw(storage, item, a)) <= 60
    # Another identifier has a counter of its own.
    assert limiter.test(item, b) is True
    assert limiter.hit(item, b) is True
    assert limiter.get_window_stats(item, b).remaining == 2
    # A cost spends several at once.
    assert limiter.test(item, b, cost=2) is True
    assert limiter.test(item, b, cost=3) is False
    assert limiter.hit(item, b, cost=2) is True
    assert limiter.hit(item, b) is False
    # clear() forgets one identifier only.
    limiter.clear(item, a)
    assert conn.exists(_raw(storage, item, a)) == 0
    assert limiter.test(item, a) is True
    assert limiter.get_window_stats(item, a).remaining == 3
    assert limiter.hit(item, a) is True
    assert limiter.get_window_stats(item, a).remaining == 2
    assert limiter.test(item, b) is False


def test_fixed_window_ends(storage2):
    limiter = FixedWindowRateLimiter(storage2)
    item = RateLimitItemPerSecond(2)
    a = _ident("a")
    assert [limiter.hit(item, a) for _ in range(3)] == [True, True, False]
    time.sleep(1.2)
    assert limiter.test(item, a) is True, "the window's counter expired"
    assert limiter.hit(item, a) is True


def test_moving_window(storage):
    limiter = MovingWindowRateLimiter(storage)
    item = RateLimitItemPerMinute(3)
    a, b = _ident("a"), _ident("b")
    # No entries: the window script returns nothing (nil).
    stats = limiter.get_window_stats(item, a)
    assert stats.remaining == 3
    first = time.time()
    assert [limiter.hit(item, a) for _ in range(3)] == [True, True, True]
    assert limiter.hit(item, a) is False, "the 4th hit in the minute is refused"
    assert limiter.test(item, a) is False
    # The window resets a minute after its oldest entry: the script
    # returns that entry's timestamp as `tostring` of a Lua number.
    stats = limiter.get_window_stats(item, a)
    assert stats.remaining == 0
    assert first - 1 <= stats.reset_time - 60 <= first + 1
    window_start, count = storage.get_moving_window(item.key_for(a), 3, 60)
    assert count == 3
    assert first - 1 <= window_start <= first + 1
    # The entries: a list trimmed to the limit, that expires with the window.
    conn = storage.get_connection()
    assert conn.llen(_raw(storage, item, a)) == 3
    assert 55 <= conn.ttl(_raw(storage, item, a)) <= 60
    # Another identifier has a window of its own; costs.
    assert limiter.test(item, b, cost=3) is True
    assert limiter.test(item, b, cost=4) is False
    assert limiter.hit(item, b, cost=4) is False, "a cost over the limit never fits"
    assert limiter.hit(item, b, cost=2) is True
    assert limiter.get_window_stats(item, b).remaining == 1
    assert limiter.hit(item, b, cost=2) is False
    assert limiter.hit(item, b) is True
    assert limiter.hit(item, b) is False
    # clear() forgets one identifier only.
    limiter.clear(item, a)
    assert limiter.test(item, a) is True
    assert limiter.get_window_stats(item, a).remaining == 3
    assert limiter.hit(item, a) is True
    assert limiter.get_window_stats(item, a).remaining == 2
    assert limiter.test(item, b) is False


def test_moving_window_slides(storage2):
    limiter = MovingWindowRateLimiter(storage2)
    item = RateLimitItemPerSecond(2)
    a = _ident("a")
    assert limiter.hit(item, a) is True
    time.sleep(0.5)
    second = time.time()
    assert limiter.hit(item, a) is True
    assert limiter.hit(item, a) is False
    time.sleep(0.7)
    # The first entry left the window (1.2 s old), the second has not
    # (0.7 s): room for one.
    assert limiter.test(item, a) is True
    assert limiter.hit(item, a) is True
    assert limiter.hit(item, a) is False
    stats = limiter.get_window_stats(item, a)
    assert stats.remaining == 0
    assert second - 0.2 <= stats.reset_time - 1 <= second + 0.2


@needs_sliding
def test_sliding_window_counter(storage):
    limiter = SlidingWindowCounterRateLimiter(storage)
    item = RateLimitItemPerMinute(3)
    a, b = _ident("a"), _ident("b")
    assert limiter.test(item, a) is True
    assert limiter.get_window_stats(item, a).remaining == 3
    assert [limiter.hit(item, a) for _ in range(3)] == [True, True, True]
    assert limiter.hit(item, a) is False, "the 4th hit in the minute is refused"
    assert limiter.test(item, a) is False
    start = time.time()
    stats = limiter.get_window_stats(item, a)
    end = time.time()
    assert stats.remaining == 0
    # now + (the counter's PTTL % the window): up to a minute away (none,
    # in the millisecond when the PTTL is still the whole 120000).
    assert start <= stats.reset_time <= end + 60
    # The current window's counter ({key}; a refused hit does not count),
    # set with PX twice the window; no previous window ({key}/-1) yet.
    conn = storage.get_connection()
    current = storage.prefixed_key(storage._current_window_key(item.key_for(a)))
    previous = storage.prefixed_key(storage._previous_window_key(item.key_for(a)))
    assert int(conn.get(current)) == 3
    assert 115000 <= conn.pttl(current) <= 120000
    assert conn.exists(previous) == 0
    # Another identifier is counted apart; costs.
    assert limiter.test(item, b) is True
    assert limiter.hit(item, b, cost=4) is False
    assert limiter.hit(item, b, cost=2) is True
    assert limiter.get_window_stats(item, b).remaining == 1
    assert limiter.test(item, b, cost=2) is False
    assert limiter.hit(item, b) is True
    assert limiter.hit(item, b) is False
    # clear() forgets one identifier only.
    limiter.clear(item, a)
    assert conn.exists(current) == 0
    assert limiter.test(item, a) is True
    assert limiter.get_window_stats(item, a).remaining == 3
    assert limiter.hit(item, a) is True
    assert limiter.test(item, b) is False


@needs_sliding
def test_sliding_window_counter_shifts(storage2):
    limiter = SlidingWindowCounterRateLimiter(storage2)
    item = RateLimitItemPerSecond(2)
    a = _ident("a")
    assert [limiter.hit(item, a) for _ in range(3)] == [True, True, False]
    time.sleep(1.15)
    # The current window (PX 2000) has less than a window left: reading it
    # RENAMEs it to the previous window and starts a new one at 0.
    prev_count, prev_expires_in, cur_count, cur_expires_in = storage2.get_sliding_window(item.key_for(a), 1)
    assert (prev_count, cur_count) == (2, 0)
    assert 0 < prev_expires_in < 1
    assert 1 < cur_expires_in <= 2
    assert limiter.hit(item, a) is True
    conn = storage2.get_connection()
    current = storage2.prefixed_key(storage2._current_window_key(item.key_for(a)))
    previous = storage2.prefixed_key(storage2._previous_window_key(item.key_for(a)))
    assert int(conn.get(previous)) == 2
    assert int(conn.get(current)) == 1


def test_reset_clears_only_its_own_prefix(storage):
    item = RateLimitItemPerMinute(1)
    a = _ident("a")
    assert FixedWindowRateLimiter(storage).hit(item, a) is True
    assert MovingWindowRateLimiter(storage).hit(item, "moving", a) is True
    expected = 2
    if SlidingWindowCounterRateLimiter is not None:
        assert SlidingWindowCounterRateLimiter(storage).hit(item, "sliding", a) is True
        expected += 1
    other = _storage()
    try:
        assert FixedWindowRateLimiter(other).hit(item, a) is True
        # A script's KEYS over the prefix, then DEL of what it found.
        assert storage.reset() == expected
        assert storage.reset() == 0
        assert FixedWindowRateLimiter(storage).test(item, a) is True
        assert MovingWindowRateLimiter(storage).test(item, "moving", a) is True
        assert FixedWindowRateLimiter(other).test(item, a) is False, "another prefix's counters stay"
    finally:
        other.reset()
        other.get_connection().close()


def test_async_storage_over_redis_asyncio():
    host, port = _addr()
    from limits.aio import strategies as aio_strategies

    async def run():
        s = storage_from_string(f"async+redis://{host}:{port}", implementation="redispy", key_prefix=_prefix())
        try:
            assert await s.check() is True
            item = RateLimitItemPerMinute(2)
            a, b = _ident("a"), _ident("b")
            for cls in (aio_strategies.FixedWindowRateLimiter, aio_strategies.MovingWindowRateLimiter):
                limiter = cls(s)
                assert [await limiter.hit(item, a) for _ in range(3)] == [True, True, False], cls.__name__
                assert await limiter.test(item, a) is False
                assert (await limiter.get_window_stats(item, a)).remaining == 0
                assert await limiter.hit(item, b) is True
                await limiter.clear(item, a)
                await limiter.clear(item, b)
                assert (await limiter.get_window_stats(item, a)).remaining == 2
            assert await s.reset() == 0
        finally:
            await s.reset()

    asyncio.run(run())
