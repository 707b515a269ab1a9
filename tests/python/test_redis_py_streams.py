"""redis-py: streams and consumer groups as applications use them (issue
36 §1, §6).

The server under test is AMALGAM_TEST_RESP_ADDR=host:port, as in
test_redis_py.py (scripts/test.sh runs this against amalgam and against
Debian's redis-server 7.0.15); the client tests run with RESP2 and RESP3
(XREAD and XINFO are maps in RESP3). The worker-pool test is the one an
event pipeline relies on: a pool of consumers in one group reads with
XREADGROUP BLOCK and acknowledges with XACK; one worker process takes
messages and is killed (SIGKILL) before it acknowledges them; the others
take its pending messages over with XAUTOCLAIM; every message is then
acknowledged exactly once (XACK answers 1 once per ID, over the pool).
Keys have unique names and are deleted.
"""

import os
import signal
import subprocess
import sys
import threading
import time

import redis

from test_redis_py import _addr, k, r  # noqa: F401

MESSAGES = 300
WORKERS = 3
# A message pending longer than this is taken over by a live worker.
CLAIM_IDLE_MS = 200
DEADLINE_S = 60.0


def test_stream_commands(r):  # noqa: F811
    s = k("s")
    try:
        ids = [r.xadd(s, {"n": str(i), "kind": "click"}) for i in range(5)]
        assert r.xlen(s) == 5
        assert [e[0] for e in r.xrange(s)] == ids
        assert [e[0] for e in r.xrevrange(s, count=2)] == [ids[4], ids[3]]
        assert r.xrange(s, min="(" + ids[0], max=ids[2]) == [(ids[1], {"n": "1", "kind": "click"}),
                                                             (ids[2], {"n": "2", "kind": "click"})]
        got = r.xread({s: ids[2]})
        if isinstance(got, dict):  # RESP3: a map
            entries = got[s][0]
        else:
            assert got[0][0] == s
            entries = got[0][1]
        assert [e[0] for e in entries] == ids[3:]
        assert r.xdel(s, ids[0]) == 1
        assert r.xtrim(s, maxlen=2, approximate=False) == 2
        assert [e[0] for e in r.xrange(s)] == ids[3:]
        info = r.xinfo_stream(s)
        assert info["length"] == 2 and info["entries-added"] == 5 and info["last-generated-id"] == ids[4]
        assert info["first-entry"][0] == ids[3]
        # MAXLEN ~ on XADD, as rq keeps its results.
        for i in range(250):
            r.xadd(s, {"i": str(i)}, maxlen=100, approximate=True)
        assert 100 <= r.xlen(s) < 200
        assert r.xread({s: "$"}, block=50) in ([], None, {})
    finally:
        r.delete(s)


def test_consumer_group_commands(r):  # noqa: F811
    s = k("g")
    try:
        r.xgroup_create(s, "grp", id="$", mkstream=True)
        a = r.xadd(s, {"job": "1"})
        b = r.xadd(s, {"job": "2"})
        got = r.xreadgroup("grp", "alice", {s: ">"}, count=1)
        entries = got[s][0] if isinstance(got, dict) else got[0][1]
        assert [e[0] for e in entries] == [a]
        pending = r.xpending(s, "grp")
        assert pending["pending"] == 1 and pending["min"] == a
        assert r.xpending_range(s, "grp", "-", "+", 10)[0]["consumer"] == "alice"
        claimed = r.xclaim(s, "grp", "bob", 0, [a], justid=True)
        assert claimed == [a]
        cursor, entries, deleted = r.xautoclaim(s, "grp", "carol", 0, start_id="0-0")[:3]
        assert [e[0] for e in entries] == [a] and cursor == "0-0" and deleted == []
        assert r.xack(s, "grp", a) == 1
        assert r.xack(s, "grp", a) == 0
        groups = r.xinfo_groups(s)
        assert groups[0]["name"] == "grp" and groups[0]["pending"] == 0 and groups[0]["lag"] == 1
        names = sorted(c["name"] for c in r.xinfo_consumers(s, "grp"))
        assert names == ["alice", "bob", "carol"]
        assert r.xgroup_delconsumer(s, "grp", "bob") == 0
        assert r.xgroup_destroy(s, "grp") == 1
        assert b
    finally:
        r.delete(s)


# The worker that dies: reads up to `count` messages for `consumer` and
# never acknowledges them, then waits to be killed.
DYING_WORKER = """
import sys, time, redis
host, port, key, consumer, count = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
c = redis.Redis(host=host, port=port, decode_responses=True)
got = c.xreadgroup("pool", consumer, {key: ">"}, count=count, block=5000)
print(sum(len(e) for _, e in got), flush=True)
time.sleep(60)
"""


def test_a_worker_pool_acknowledges_each_message_once_across_a_kill():
    host, port = _addr()
    s = k("jobs")
    c = redis.Redis(host=host, port=port, decode_responses=True, socket_timeout=10)
    c.xgroup_create(s, "pool", id="0", mkstream=True)
    produced = [c.xadd(s, {"job": str(i)}) for i in range(MESSAGES)]
    # The dying worker takes some messages first, and is killed holding them.
    dying = subprocess.Popen([sys.executable, "-c", DYING_WORKER, host, str(port), s, "doomed", "40"],
                             stdout=subprocess.PIPE, text=True)
    try:
        taken = int(dying.stdout.readline())
        assert taken == 40
    finally:
        os.kill(dying.pid, signal.SIGKILL)
        dying.wait()
    acked = []
    lock = threading.Lock()
    stop = threading.Event()

    def worker(name):
        w = redis.Redis(host=host, port=port, decode_responses=True, socket_timeout=10)
        deadline = time.monotonic() + DEADLINE_S
        # Bounded by the deadline.
        while not stop.is_set() and time.monotonic() < deadline:
            got = w.xreadgroup("pool", name, {s: ">"}, count=7, block=100)
            entries = [e for _, es in got for e in es] if got else []
            if not entries:
                # Nothing new: take over what a dead worker left pending.
                _, entries, _ = w.xautoclaim(s, "pool", name, CLAIM_IDLE_MS, start_id="0-0", count=10)[:3]
            for msg_id, _fields in entries:
                if w.xack(s, "pool", msg_id) == 1:
                    with lock:
                        acked.append(msg_id)
            with lock:
                if len(acked) >= MESSAGES:
                    stop.set()
        w.close()

    threads = [threading.Thread(target=worker, args=(f"w{i}",)) for i in range(WORKERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(DEADLINE_S + 5)
    try:
        assert sorted(acked) == sorted(produced), (len(acked), len(set(acked)), len(produced))
        assert len(acked) == len(set(acked)), "a message acknowledged twice"
        assert c.xpending(s, "pool")["pending"] == 0
        consumers = {x["name"]: x["pending"] for x in c.xinfo_consumers(s, "pool")}
        assert consumers.get("doomed") == 0, consumers
    finally:
        c.delete(s)
        c.close()
