"""redis-py's Pub/Sub (`Redis.pubsub()`) against a running RESP server.

Read as test_redis_py.py is: the server is AMALGAM_TEST_RESP_ADDR=host:port
(scripts/test.sh runs this against amalgam and against Debian's
redis-server 7, proving the expectations are Redis's own); each test runs
with RESP2 and RESP3. Skipped when the variable is unset.
"""

import time
import uuid


# The server's address and the RESP2/RESP3 client fixture, as
# test_redis_py.py defines them (pytest puts this folder on sys.path).
from test_redis_py import r  # noqa: F401


def ch(name):
    """A channel no other test (or run) uses."""
    return f"rpy_{uuid.uuid4().hex[:12]}_{name}"


def next_message(p, timeout=5.0):
    """The next message (not a subscription reply), waiting up to timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = p.get_message(ignore_subscribe_messages=True, timeout=0.1)
        if m is not None:
            return m
    return None


def test_subscribe_get_message(r):
    a, b = ch("a"), ch("b")
    p = r.pubsub()
    p.subscribe(a, b)
    # The subscription replies, with their running counts.
    got = [p.get_message(timeout=5) for _ in range(2)]
    assert [(m["type"], m["channel"], m["data"]) for m in got] == [("subscribe", a, 1), ("subscribe", b, 2)]
    assert r.publish(a, "hello") == 1
    assert r.pubsub_numsub(a, b) == [(a, 1), (b, 1)]
    m = next_message(p)
    assert (m["type"], m["channel"], m["data"]) == ("message", a, "hello")
    p.unsubscribe(a)
    assert p.get_message(timeout=5)["type"] == "unsubscribe"
    assert r.publish(a, "gone") == 0
    assert r.publish(b, "still") == 1
    assert next_message(p)["data"] == "still"
    p.close()


def test_psubscribe_and_listen(r):
    prefix = ch("p")
    p = r.pubsub(ignore_subscribe_messages=True)
    p.psubscribe(prefix + ".*")
    assert p.get_message(timeout=5) is None  # the psubscribe reply, ignored
    assert r.publish(prefix + ".x", "1") == 1
    assert r.publish(prefix + "-no", "0") == 0
    assert r.publish(prefix + ".y", "2") == 1
    got = []
    for m in p.listen():
        if m["type"] == "pmessage":
            got.append((m["pattern"], m["channel"], m["data"]))
        if len(got) == 2:
            break
    assert got == [(prefix + ".*", prefix + ".x", "1"), (prefix + ".*", prefix + ".y", "2")]
    assert prefix + ".x" not in r.pubsub_channels(prefix + "*")
    p.close()


def test_handler_thread(r):
    c = ch("t")
    seen = []
    p = r.pubsub()
    p.subscribe(**{c: lambda m: seen.append(m["data"])})
    t = p.run_in_thread(sleep_time=0.01)
    try:
        deadline = time.monotonic() + 5
        while r.pubsub_numsub(c) != [(c, 1)] and time.monotonic() < deadline:
            time.sleep(0.01)
        for i in range(5):
            assert r.publish(c, str(i)) == 1
        while len(seen) < 5 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert seen == ["0", "1", "2", "3", "4"]
    finally:
        t.stop()
        t.join(timeout=5)
        p.close()
