#!/usr/bin/env python3
"""Consumer groups, client tracking and keyspace notifications against
Redis (issue 36 §7, issue 35 §7), with `amalgam-bench flows`.

Each case runs on a fresh release amalgam (`-t 2 -m 4096 --eviction
none`, RESP on a free port) and a fresh Debian redis-server 7 (`--save ''
--appendonly no`), alternating, redis first, RUNS rounds; the median of
each side and every round's ratio are printed, every run's JSON is
appended to OUT.

Cases (amalgam-bench flows, 2 client threads, DURATION s after WARMUP s):
* groups-p16 / groups-p1: 50 workers, XREADGROUP COUNT 1 + XACK of the id
  read, 16 (1) outstanding each, over STREAMS streams of ENTRIES entries
  (10 M by default: at 355 k XREADGROUP/s a 12-second run reads 4.3 M; a
  run that drains a stream is reported NOT CLEAN).
* tracking-on / tracking-off: 8 RESP3 readers GET at pipeline 16 (with and
  without CLIENT TRACKING ON), 1 writer SETs at pipeline 16, KEYS keys.
* notify-kea / notify-off: 4 writers SET at pipeline 16 with
  notify-keyspace-events KEA (or none), 1 subscriber on __key*__:*.

Usage: [RUNS=3] [DURATION=10] [WARMUP=2] [STREAMS=10000] [ENTRIES=1000]
       [KEYS=100000] [CASES=groups-p16,...] [OUT=groups.jsonl]
       [AMALGAM=$CARGO_TARGET_DIR/release/amalgam] [BENCH=...amalgam-bench]
       [NO_BUILD=1] scripts/compare-groups.py
"""
import json, os, socket, statistics, subprocess, sys, time

RUNS = int(os.environ.get("RUNS", 3))
DURATION = os.environ.get("DURATION", "10")
WARMUP = os.environ.get("WARMUP", "2")
STREAMS = os.environ.get("STREAMS", "10000")
ENTRIES = os.environ.get("ENTRIES", "1000")
KEYS = os.environ.get("KEYS", "100000")
OUT = os.environ.get("OUT", "groups.jsonl")
TARGET = os.environ.get("CARGO_TARGET_DIR", "target")
AMALGAM = os.environ.get("AMALGAM", f"{TARGET}/release/amalgam")
BENCH = os.environ.get("BENCH", f"{TARGET}/release/amalgam-bench")
# Seconds a server has to open its port.
START_SECONDS = 30

GROUPS = ["--flow", "groups", "--conns", "50", "--streams", STREAMS, "--entries", ENTRIES]
TRACKING = ["--flow", "tracking", "--conns", "8", "--pipeline", "16", "--writers", "1",
            "--writer-pipeline", "16", "--keys", KEYS]
NOTIFY = ["--flow", "notify", "--conns", "4", "--pipeline", "16", "--subscribers", "1", "--keys", KEYS]
# name -> (flags, the figures printed: JSON field, heading)
CASES = {
    "groups-p16": (GROUPS + ["--pipeline", "16"], [("requests_per_s", "req/s"), ("reads_per_s", "XREADGROUP/s")]),
    "groups-p1": (GROUPS + ["--pipeline", "1"], [("requests_per_s", "req/s"), ("reads_per_s", "XREADGROUP/s")]),
    "tracking-on": (TRACKING, [("gets_per_s", "GET/s"), ("invalidations_per_s", "invalidations/s"),
                               ("sets_per_s", "SET/s")]),
    "tracking-off": (TRACKING + ["--no-tracking"], [("gets_per_s", "GET/s"), ("sets_per_s", "SET/s")]),
    "notify-kea": (NOTIFY + ["--notify-events", "KEA"], [("sets_per_s", "SET/s"), ("messages_per_s", "messages/s")]),
    "notify-off": (NOTIFY + ["--notify-events", ""], [("sets_per_s", "SET/s")]),
}
SELECTED = os.environ.get("CASES", ",".join(CASES)).split(",")


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


def one(kind, case, rnd):
    proc, port = start(kind)
    try:
        flags, _ = CASES[case]
        cmd = [BENCH, "flows", *flags, "--server", f"127.0.0.1:{port}", "--server-pid", str(proc.pid),
               "--duration", DURATION, "--warmup", WARMUP, "--label", kind, "--json", "-"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        sys.stderr.write(r.stderr)
        lines = [l for l in r.stdout.splitlines() if l.startswith("{")]
        if not lines:
            sys.exit(f"{kind} {case}: no result (exit {r.returncode})\n{r.stdout}")
        res = json.loads(lines[-1])
        res.update(case=case, run=rnd, clean=r.returncode == 0)
        print(f"  {case} round {rnd} {kind}: " + "; ".join(f"{h} {res[k]:.0f}" for k, h in CASES[case][1])
              + f"; client {res['client_cores']:.2f} cores, server {res['server_cores']:.2f} cores"
              + ("" if res["clean"] else "  NOT CLEAN: " + r.stderr.strip().splitlines()[-1]), flush=True)
        return res
    finally:
        proc.kill()
        proc.wait()


def main():
    if not os.environ.get("NO_BUILD"):
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "amalgam-server", "-p", "amalgam-bench"],
                       check=True)
    results = []
    with open(OUT, "w") as out:
        for case in SELECTED:
            for rnd in range(1, RUNS + 1):
                for kind in ("redis", "amalgam"):
                    res = one(kind, case, rnd)
                    results.append(res)
                    out.write(json.dumps(res) + "\n")
                    out.flush()
    print(f"\nmedians of {RUNS} rounds (ratio = amalgam / redis; per round in brackets)")
    for case in SELECTED:
        for key, heading in CASES[case][1]:
            side = {k: [r[key] for r in results if r["case"] == case and r["label"] == k] for k in ("redis", "amalgam")}
            med = {k: statistics.median(v) for k, v in side.items()}
            rounds = ", ".join(f"{a / r:.2f}" if r else "-" for r, a in zip(side["redis"], side["amalgam"]))
            ratio = f"{med['amalgam'] / med['redis']:.2f}" if med["redis"] else "-"
            print(f"{case:13} {heading:16} redis {med['redis']:>10.0f}  amalgam {med['amalgam']:>10.0f}"
                  f"  ratio {ratio} [{rounds}]")
    unclean = [f"{r['case']} {r['run']} {r['label']}" for r in results if not r["clean"]]
    if unclean:
        print("runs not clean (errors, dry reads or unacknowledged entries): " + ", ".join(unclean))
        sys.exit(1)


if __name__ == "__main__":
    main()
