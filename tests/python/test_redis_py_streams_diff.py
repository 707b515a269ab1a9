"""Streams and consumer groups, differential: the same random command
sequences (XADD with every ID form and trim, XDEL, XTRIM, XRANGE,
XREVRANGE, XLEN, XSETID, XREAD, XGROUP, XREADGROUP, XACK, XCLAIM,
XAUTOCLAIM, DEL) sent to the server under test and to a redis-server
7.0.15 peer of this file's own must get the same replies, and leave the
same state (XINFO STREAM but for its radix-tree figures, XINFO GROUPS,
every PEL entry's owner and delivery count, the consumers), in RESP2 and
RESP3. No `*` IDs:
those are the clock's, which two servers read at different moments.

The server under test is AMALGAM_TEST_RESP_ADDR=host:port (scripts/test.sh
runs this against amalgam and against redis-server itself); the peer is
test_redis_py_hll.py's `peer_port` fixture (skipped without redis-server).
"""

import random

import pytest
import redis

from test_redis_py import _addr, k
from test_redis_py_hll import peer_port  # noqa: F401

SEEDS = range(1, 9)
COMMANDS_PER_SEED = 300


def run(conn, *args):
    """The raw reply (no client-side parsing: redis-py's callbacks do not
    take every shape these commands answer)."""
    conn.send_command(*args)
    try:
        return conn.read_response()
    except redis.ResponseError as e:
        return "ERR:" + str(e)


def state(c, keys):
    out = []
    for key in keys:
        if c.exists(key) == 0:
            out.append(None)
            continue
        d = c.xinfo_stream(key)
        d.pop("radix-tree-nodes")
        d.pop("radix-tree-keys")
        out.append(d)
        gs = c.xinfo_groups(key)
        out.append(gs)
        for g in gs:
            out.append([(p["message_id"], p["consumer"], p["times_delivered"])
                        for p in c.xpending_range(key, g["name"], "-", "+", 1000)])
            out.append([x["name"] for x in c.xinfo_consumers(key, g["name"])])
    return out


GROUPS = ["g1", "g2"]
CONSUMERS = ["c1", "c2", "c3"]
LAST_ID = "18446744073709551615-18446744073709551615"


def id_arg(rnd):
    """An ID argument of any form, invalid ones included."""
    ms = rnd.randint(0, 30)
    x = rnd.random()
    if x < 0.5:
        return f"{ms}-{rnd.randint(0, 3)}"
    if x < 0.7:
        return str(ms)
    if x < 0.8:
        return f"{ms}-*"
    return rnd.choice(["-", "+", "0-0", "(5-1", f"({ms}", "x", LAST_ID])


def maybe(rnd, p, args):
    return args if rnd.random() < p else []


def xadd(rnd, key):
    fields = [rnd.choice(["a", "b", "c"]), str(rnd.randint(0, 99))] + maybe(rnd, 0.3, ["z", "q"])
    opts = maybe(rnd, 0.2, ["NOMKSTREAM"])
    if rnd.random() < 0.3:
        bound = str(rnd.randint(0, 20)) if rnd.random() < 0.7 else id_arg(rnd)
        opts += [rnd.choice(["MAXLEN", "MINID"])] + maybe(rnd, 0.7, [rnd.choice(["=", "~"])]) + [bound]
    opts += maybe(rnd, 0.1, ["LIMIT", str(rnd.randint(0, 5))])
    return ["XADD", key] + opts + [id_arg(rnd)] + fields


def command(rnd, keys):
    """One random stream command on one of `keys`."""
    key = rnd.choice([keys[0], keys[0], keys[1]])
    group, consumer = rnd.choice(GROUPS), rnd.choice(CONSUMERS)
    x = rnd.random()
    if x < 0.35:
        return xadd(rnd, key)
    if x < 0.45:
        return ["XDEL", key] + [id_arg(rnd) for _ in range(rnd.randint(1, 3))]
    if x < 0.55:
        bound = str(rnd.randint(0, 10)) if rnd.random() < 0.6 else id_arg(rnd)
        return (["XTRIM", key, rnd.choice(["MAXLEN", "MINID"]), rnd.choice(["=", "~", "="]), bound]
                + maybe(rnd, 0.2, ["LIMIT", str(rnd.randint(0, 200))]))
    if x < 0.65:
        return ([rnd.choice(["XRANGE", "XREVRANGE"]), key, id_arg(rnd), id_arg(rnd)]
                + maybe(rnd, 0.4, ["COUNT", str(rnd.randint(-1, 4))]))
    if x < 0.68:
        return ["XLEN", key]
    if x < 0.72:
        return (["XSETID", key, id_arg(rnd)] + maybe(rnd, 0.3, ["ENTRIESADDED", str(rnd.randint(-1, 40))])
                + maybe(rnd, 0.3, ["MAXDELETEDID", id_arg(rnd)]))
    if x < 0.76:
        return (["XGROUP", "CREATE", key, group, rnd.choice(["$", "0", id_arg(rnd)])] + maybe(rnd, 0.3, ["MKSTREAM"])
                + maybe(rnd, 0.2, ["ENTRIESREAD", str(rnd.randint(-1, 10))]))
    if x < 0.78:
        return (["XGROUP", "SETID", key, group, rnd.choice(["$", "0", id_arg(rnd)])]
                + maybe(rnd, 0.3, ["ENTRIESREAD", str(rnd.randint(-1, 10))]))
    if x < 0.86:
        return (["XREADGROUP", "GROUP", group, consumer] + maybe(rnd, 0.6, ["COUNT", str(rnd.randint(0, 3))])
                + maybe(rnd, 0.1, ["NOACK"]) + ["STREAMS", key, rnd.choice([">", ">", "0", id_arg(rnd)])])
    if x < 0.89:
        return ["XACK", key, group] + [id_arg(rnd) for _ in range(rnd.randint(1, 3))]
    if x < 0.91:
        options = rnd.choice([[], ["JUSTID"], ["FORCE"], ["RETRYCOUNT", "3"], ["LASTID", id_arg(rnd)], ["FORCE", "JUSTID"]])
        return ["XCLAIM", key, group, rnd.choice(["c1", "c4"]), "0", id_arg(rnd)] + options
    if x < 0.93:
        return (["XAUTOCLAIM", key, group, rnd.choice(["c1", "c5"]), "0", id_arg(rnd)]
                + maybe(rnd, 0.5, ["COUNT", str(rnd.randint(1, 3))]) + maybe(rnd, 0.3, ["JUSTID"]))
    if x < 0.95:
        return ["XGROUP", rnd.choice(["DELCONSUMER", "CREATECONSUMER"]), key, group, consumer]
    if x < 0.96:
        return ["XGROUP", "DESTROY", key, group]
    if x < 0.98:
        return ["XREAD"] + maybe(rnd, 0.5, ["COUNT", str(rnd.randint(0, 3))]) + ["STREAMS", key,
                                                                                rnd.choice(["$", "0", id_arg(rnd)])]
    return ["DEL", key]


@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
def test_random_stream_commands_answer_as_redis(peer_port, protocol):  # noqa: F811
    host, port = _addr()
    ours = redis.Redis(host=host, port=port, socket_timeout=10)
    peer = redis.Redis(port=peer_port, socket_timeout=10)
    ours_raw = redis.Connection(host=host, port=port, socket_timeout=10, protocol=protocol)
    peer_raw = redis.Connection(port=peer_port, socket_timeout=10, protocol=protocol)
    keys = (k("d1"), k("d2"))
    try:
        for seed in SEEDS:
            rnd = random.Random(seed)
            for c in (ours, peer):
                c.delete(*keys)
            # Bounded: COMMANDS_PER_SEED commands.
            for i in range(COMMANDS_PER_SEED):
                cm = command(rnd, keys)
                a, b = run(ours_raw, *cm), run(peer_raw, *cm)
                assert a == b, (seed, i, cm, a, b)
                assert state(ours, keys) == state(peer, keys), (seed, i, cm)
    finally:
        for c in (ours, peer):
            c.delete(*keys)
            c.close()
        ours_raw.disconnect()
        peer_raw.disconnect()
