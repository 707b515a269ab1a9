#!/usr/bin/env python3
"""Redis Cluster side by side (issue 38 §6): a cluster of Amalgam nodes
against a cluster of redis-server 7.0 nodes, built and measured the same
way, alternating rounds, medians printed.

Each round and each kind: six nodes (three primaries, three replicas,
`redis-cli --cluster create --cluster-replicas 1`), the same
cluster-node-timeout, then
  * throughput: redis-benchmark --cluster -t set,get at pipeline 16
    (a cluster-aware client: it reads CLUSTER SLOTS and sends each key to
    its node), requests per second;
  * resharding: KEYS keys loaded, `redis-cli --cluster reshard` of
    SLOTS slots from one primary to another, keys moved per second;
  * failover: a primary SIGKILLed; the time from the kill to the first
    SET on a key of its slots that its replica accepts (polled every
    POLL_MS from a client of the replica).

Usage: AMALGAM=target/release/amalgam [ROUNDS=3] [NODE_TIMEOUT=2000]
       [KEYS=200000] [SLOTS=1000] [REQUESTS=1000000] [THREADS=1]
       python3 scripts/cluster-bench.py
Amalgam nodes run with -t THREADS (default 1: six nodes share the
machine's cores, as six redis-servers do).
"""
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import redis

AMALGAM = os.environ.get("AMALGAM", "target/release/amalgam")
REDIS = shutil.which("redis-server")
ROUNDS = int(os.environ.get("ROUNDS", "3"))
NODE_TIMEOUT = int(os.environ.get("NODE_TIMEOUT", "2000"))
KEYS = int(os.environ.get("KEYS", "200000"))
SLOTS = int(os.environ.get("SLOTS", "1000"))
REQUESTS = int(os.environ.get("REQUESTS", "1000000"))
THREADS = os.environ.get("THREADS", "1")
POLL_MS = 20
START_S = 20


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(kind, d):
    port, bus = free_port(), free_port()
    nd = os.path.join(d, f"n{port}")
    os.makedirs(nd)
    common = ["--cluster-enabled", "yes", "--cluster-config-file", os.path.join(nd, "nodes.conf"),
              "--cluster-port", str(bus), "--cluster-node-timeout", str(NODE_TIMEOUT)]
    if kind == "amalgam":
        argv = [AMALGAM, "-p", str(free_port()), "-l", "127.0.0.1", "-U", "0", "-t", THREADS, "--resp-port", str(port),
                "-m", "1024", "--dir", nd] + common
    else:
        argv = [REDIS, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", nd,
                "--repl-diskless-sync-delay", "0"] + common
    log = open(os.path.join(nd, "log"), "wb")
    p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    c = redis.Redis(port=port, socket_timeout=5)
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        try:
            c.ping()
            return p, port, c
        except redis.RedisError:
            time.sleep(0.05)
    raise RuntimeError(f"{kind} on {port} did not start")


def wait(check, what, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except redis.RedisError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"timed out: {what}")


def build(kind, d):
    nodes = [start(kind, d) for _ in range(6)]
    out = subprocess.run(["redis-cli", "--cluster", "create"] + [f"127.0.0.1:{n[1]}" for n in nodes]
                         + ["--cluster-replicas", "1", "--cluster-yes"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    for _, _, c in nodes:
        wait(lambda: c.cluster("INFO")["cluster_state"] == "ok", "cluster ok")
    for _, _, c in nodes:
        wait(lambda: c.info("replication")["role"] == "master" or c.info("replication").get("master_link_status") == "up",
             "links up")
    return nodes


def throughput(port):
    out = subprocess.run(["redis-benchmark", "--cluster", "-h", "127.0.0.1", "-p", str(port), "-t", "set,get",
                          "-n", str(REQUESTS), "-P", "16", "-c", "50", "--threads", "2", "-r", "100000", "-q"],
                         capture_output=True, text=True, timeout=600)
    rates = dict(re.findall(r"^(SET|GET): ([\d.]+) requests per second", out.stdout.replace("\r", "\n"), re.M))
    return float(rates["SET"]), float(rates["GET"])


def reshard(nodes):
    port = nodes[0][1]
    subprocess.run(["redis-benchmark", "--cluster", "-h", "127.0.0.1", "-p", str(port), "-t", "set", "-n", str(KEYS),
                    "-r", str(KEYS * 10), "-d", "16", "-P", "16", "-c", "20", "-q"], capture_output=True, timeout=600)
    prim = [n for n in nodes if n[2].info("replication")["role"] == "master"]
    src, dst = prim[0], prim[1]
    before = dst[2].dbsize()
    sid, did = src[2].cluster("MYID"), dst[2].cluster("MYID")
    t = time.monotonic()
    out = subprocess.run(["redis-cli", "--cluster", "reshard", f"127.0.0.1:{src[1]}", "--cluster-from", sid,
                          "--cluster-to", did, "--cluster-slots", str(SLOTS), "--cluster-yes",
                          "--cluster-pipeline", "100"], capture_output=True, text=True, timeout=1800)
    secs = time.monotonic() - t
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr
    moved = dst[2].dbsize() - before
    return moved, secs


def failover(nodes):
    prim = [n for n in nodes if n[2].info("replication")["role"] == "master"]
    victim = prim[-1]
    vid = victim[2].cluster("MYID")
    vid = vid.decode() if isinstance(vid, bytes) else vid
    replica = None
    for n in nodes:
        for line in n[2].execute_command("CLUSTER", "NODES").decode().splitlines():
            f = line.split(" ")
            if "myself" in f[2] and f[3] == vid:
                replica = n
    key = None
    for i in range(100000):
        k = f"fo:{i}"
        slot = victim[2].execute_command("CLUSTER", "KEYSLOT", k)
        try:
            victim[2].set(k, "0")
            key = k
            break
        except redis.ResponseError:
            continue
    assert key and replica
    c = redis.Redis(port=replica[1], socket_timeout=2)
    t = time.monotonic()
    victim[0].send_signal(signal.SIGKILL)
    victim[0].wait()
    deadline = t + 120
    while time.monotonic() < deadline:
        try:
            if c.set(key, "1"):
                return time.monotonic() - t
        except redis.RedisError:
            pass
        time.sleep(POLL_MS / 1000)
    raise RuntimeError("no failover within 120 s")


def one(kind):
    d = tempfile.mkdtemp(prefix=f"cluster-bench-{kind}-")
    nodes = []
    try:
        nodes = build(kind, d)
        s, g = throughput(nodes[0][1])
        moved, secs = reshard(nodes)
        fo = failover(nodes)
        return {"set": s, "get": g, "reshard_keys_s": moved / secs, "moved": moved, "reshard_s": secs, "failover_s": fo}
    finally:
        for p, _, _ in nodes:
            if p.poll() is None:
                p.kill()
            p.wait()
        shutil.rmtree(d, ignore_errors=True)


def main():
    results = {"amalgam": [], "redis": []}
    for r in range(ROUNDS):
        for kind in (["amalgam", "redis"] if r % 2 == 0 else ["redis", "amalgam"]):
            x = one(kind)
            results[kind].append(x)
            print(f"round {r + 1} {kind}: " + " ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}"
                                                     for k, v in x.items()), flush=True)
    print("\nmedians (amalgam / redis-server, ratio):")
    for k in ["set", "get", "reshard_keys_s", "failover_s"]:
        a = statistics.median(x[k] for x in results["amalgam"])
        b = statistics.median(x[k] for x in results["redis"])
        print(f"  {k}: {a:.1f} / {b:.1f}  ({a / b:.2f}x)")


if __name__ == "__main__":
    sys.exit(main())
