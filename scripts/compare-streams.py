#!/usr/bin/env python3
"""Streams against Redis (issue 36 §7): memory per entry and XADD's rate.

Starts a release amalgam (`-t 2 -m 4096 --eviction none`, a store, as
redis-server runs here) and Debian's redis-server 7 (no persistence) on
free ports, each fresh for each memory case:

* memory: the growth of the server's resident set (VmRSS) while redis-py
  pipelines (1,000 commands a round trip) add entries of three small
  fields (`f1 v<i> f2 <i> f3 x`): one stream of ENTRIES entries, then
  STREAMS streams of PER_STREAM entries; bytes per entry = growth / entries.
* XADD: `redis-benchmark --threads 2 -c 50 -P 16 -n REQUESTS -r KEYS
  XADD s:__rand_int__ * f1 v f2 2 f3 x` against each server, RUNS
  alternating runs (redis first), the median of each.

Usage: [ENTRIES=1000000] [STREAMS=10000] [PER_STREAM=100] [RUNS=3]
       [REQUESTS=2000000] [KEYS=100000] [AMALGAM=target/release/amalgam]
       scripts/compare-streams.py
"""
import os, socket, statistics, subprocess, sys, time

import redis

ENTRIES = int(os.environ.get("ENTRIES", 1_000_000))
STREAMS = int(os.environ.get("STREAMS", 10_000))
PER_STREAM = int(os.environ.get("PER_STREAM", 100))
RUNS = int(os.environ.get("RUNS", 3))
REQUESTS = int(os.environ.get("REQUESTS", 2_000_000))
KEYS = int(os.environ.get("KEYS", 100_000))
AMALGAM = os.environ.get("AMALGAM", "target/release/amalgam")
# Commands per pipelined round trip in the fills.
PIPELINE = 1000
# Seconds a server has to open its port.
START_SECONDS = 30


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def start(kind):
    port = free_port()
    if kind == "redis":
        args = ["redis-server", "--port", str(port), "--save", "", "--appendonly", "no"]
    else:
        args = [AMALGAM, "-l", "127.0.0.1", "-U", "0", "-p", "0", "-t", "2", "-m", "4096",
                "--eviction", "none", "--resp-port", str(port)]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(START_SECONDS * 10):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return proc, port
        except OSError:
            time.sleep(0.1)
    proc.kill()
    sys.exit(f"{kind} did not start")


def rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def fill(port, streams, per_stream):
    r = redis.Redis(port=port)
    p = r.pipeline(transaction=False)
    n = 0
    for s in range(streams):
        for i in range(per_stream):
            p.xadd(f"stream:{s}", {"f1": f"v{i}", "f2": str(i), "f3": "x"})
            n += 1
            if n % PIPELINE == 0:
                p.execute()
    p.execute()
    assert sum(r.xlen(f"stream:{s}") for s in range(min(streams, 100))) == min(streams, 100) * per_stream


def memory(kind, streams, per_stream):
    proc, port = start(kind)
    try:
        time.sleep(0.5)
        before = rss(proc.pid)
        fill(port, streams, per_stream)
        time.sleep(1.0)
        return (rss(proc.pid) - before) / (streams * per_stream)
    finally:
        proc.kill()
        proc.wait()


def xadd_rate(port):
    out = subprocess.run(
        ["redis-benchmark", "-p", str(port), "--threads", "2", "-c", "50", "-P", "16", "-n", str(REQUESTS),
         "-r", str(KEYS), "--csv", "XADD", "s:__rand_int__", "*", "f1", "v", "f2", "2", "f3", "x"],
        capture_output=True, text=True, check=True).stdout
    row = [l for l in out.splitlines() if l.startswith('"XADD')][-1]
    return float(row.split(",")[1].strip('"'))


def main():
    print(f"memory per entry (bytes), entries of 3 small fields, RSS growth of a fresh server")
    for streams, per in ((1, ENTRIES), (STREAMS, PER_STREAM)):
        r = memory("redis", streams, per)
        a = memory("amalgam", streams, per)
        print(f"  {streams} stream(s) x {per}: redis {r:.1f}  amalgam {a:.1f}  amalgam/redis {a / r:.3f}")
    servers = {k: start(k) for k in ("redis", "amalgam")}
    try:
        rates = {"redis": [], "amalgam": []}
        for _ in range(RUNS):
            for k in ("redis", "amalgam"):
                redis.Redis(port=servers[k][1]).flushall()
                rates[k].append(xadd_rate(servers[k][1]))
        r, a = statistics.median(rates["redis"]), statistics.median(rates["amalgam"])
        print(f"XADD over {KEYS} streams, redis-benchmark --threads 2 -c 50 -P 16, median of {RUNS} alternating:")
        print(f"  redis {r:.0f}/s {rates['redis']}  amalgam {a:.0f}/s {rates['amalgam']}  amalgam/redis {a / r:.3f}")
    finally:
        for proc, _ in servers.values():
            proc.kill()


if __name__ == "__main__":
    main()
