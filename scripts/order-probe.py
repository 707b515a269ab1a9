#!/usr/bin/env python3
"""Redis's "BRPOPLPUSH with multiple blocked clients" against a running
server, RUNS times, counting the runs served out of arrival order
(docs/architecture.md § Order). Two fresh clients send BRPOPLPUSH on one
empty list, the first into a string key, then a third client pushes one
element: in arrival order the first client's move fails with WRONGTYPE and
the second gets the element; out of order the second takes it and the
first waits (counted after a TIMEOUT-second wait).

Usage: scripts/order-probe.py PORT [RUNS=50]
"""
import socket
import sys

import redis

# Seconds a deferred client's reply may take before the run counts as out
# of order (the first client then waits for ever).
TIMEOUT = 1.0


def brpoplpush(src, dst):
    args = [b"BRPOPLPUSH", src, dst, b"0"]
    return b"*4\r\n" + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


def main():
    port = int(sys.argv[1])
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    r = redis.Redis(port=port)
    bad = 0
    for _ in range(runs):
        r.delete("probe:blist", "probe:t1", "probe:t2")
        r.set("probe:t1", "nolist")
        a = socket.create_connection(("127.0.0.1", port))
        b = socket.create_connection(("127.0.0.1", port))
        a.settimeout(TIMEOUT)
        b.settimeout(TIMEOUT)
        a.sendall(brpoplpush(b"probe:blist", b"probe:t1"))
        b.sendall(brpoplpush(b"probe:blist", b"probe:t2"))
        r.lpush("probe:blist", "foo")
        try:
            first, second = a.recv(100), b.recv(100)
            if not first.startswith(b"-WRONGTYPE") or second != b"$3\r\nfoo\r\n":
                bad += 1
        except socket.timeout:
            bad += 1
        a.close()
        b.close()
    print(f"{bad} of {runs} runs out of order")


if __name__ == "__main__":
    main()
