#!/usr/bin/env python3
"""Pub/Sub delivery rate of a RESP server: messages delivered per second.

redis-benchmark has no PUBLISH test, so: N subscriber processes (one
connection each, all on one channel) and one publisher pipelining PUBLISH
in batches; the rate is N x messages over the time from the first PUBLISH
to the last subscriber holding its last message. Every process counts
bytes only (each message has the same size), so the client side stays
cheap; on a small machine the clients still share the CPUs with the
server, as they do for redis-benchmark.

    scripts/pubsub-throughput.py --port 6379 [--subscribers 8]
        [--messages 200000] [--payload 16] [--pipeline 100] [--runs 3]

Prints one line per run and the median.
"""

import argparse
import multiprocessing as mp
import socket
import statistics
import time

CHANNEL = b"pubsub-bench"
RECV_BYTES = 1 << 20


def encode(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def bulk(b):
    return b"$%d\r\n%s\r\n" % (len(b), b)


def subscriber(port, messages, payload, ready, done):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(encode(b"SUBSCRIBE", CHANNEL))
    want = b"*3\r\n" + bulk(b"subscribe") + bulk(CHANNEL) + b":1\r\n"
    got = b""
    while len(got) < len(want):
        got += s.recv(len(want) - len(got))
    assert got == want, got
    frame = len(b"*3\r\n" + bulk(b"message") + bulk(CHANNEL) + bulk(payload))
    total = frame * messages
    ready.put(1)
    n = 0
    while n < total:
        chunk = s.recv(RECV_BYTES)
        if not chunk:
            raise SystemExit("subscriber: server closed the connection")
        n += len(chunk)
    done.put(time.monotonic())
    s.close()


def run(port, subscribers, messages, payload, pipeline):
    ready, done = mp.Queue(), mp.Queue()
    procs = [
        mp.Process(target=subscriber, args=(port, messages, payload, ready, done)) for _ in range(subscribers)
    ]
    for p in procs:
        p.start()
    for _ in procs:
        ready.get(timeout=30)
    s = socket.create_connection(("127.0.0.1", port))
    batch = encode(b"PUBLISH", CHANNEL, payload) * pipeline
    reply = b":%d\r\n" % subscribers
    t0 = time.monotonic()
    sent = 0
    while sent < messages:
        k = min(pipeline, messages - sent)
        s.sendall(batch if k == pipeline else encode(b"PUBLISH", CHANNEL, payload) * k)
        want = len(reply) * k
        got = 0
        while got < want:
            chunk = s.recv(want - got)
            if not chunk:
                raise SystemExit("publisher: server closed the connection")
            got += len(chunk)
        sent += k
    published = time.monotonic()
    ends = [done.get(timeout=120) for _ in procs]
    for p in procs:
        p.join()
    s.close()
    elapsed = max(ends) - t0
    return subscribers * messages / elapsed, messages / (published - t0)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--subscribers", type=int, default=8)
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--payload", type=int, default=16)
    ap.add_argument("--pipeline", type=int, default=100)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    payload = b"x" * a.payload
    rates = []
    for i in range(a.runs):
        delivered, published = run(a.port, a.subscribers, a.messages, payload, a.pipeline)
        rates.append(delivered)
        print(f"run {i + 1}: {delivered:,.0f} messages delivered/s ({published:,.0f} PUBLISH/s)")
    print(f"median: {statistics.median(rates):,.0f} messages delivered/s")


if __name__ == "__main__":
    main()
