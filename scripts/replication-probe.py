#!/usr/bin/env python3
"""The measuring parts of scripts/compare-replication.sh (issue 22 §5), for
Redis and Amalgam alike, over plain sockets (no client library: the probes
share two CPUs with the servers, so they stay cheap).

    replication-probe.py sync --primary-port P --primary-pid PID
        --replica-pidfile F --replica-log L [--before-s 3] [--every-s 0.05]
        [--timeout-s 1800] -- REPLICA COMMAND LINE...
  Full sync: samples the primary's memory and command count for --before-s
  seconds, then starts the replica (the command line after `--`; its pid
  goes to F at once, so the caller can kill it) and polls it every
  --every-s until its INFO replication says master_link_status:up and its
  DBSIZE equals the primary's (read before the start: the caller's loads
  only overwrite preloaded keys). Meanwhile it samples the primary every
  --every-s: RSS of the primary alone and summed with its children's
  (/proc/PID/status VmRSS; Redis's fork child is a child), and PSS summed
  over them (/proc/PID/smaps_rollup: PSS splits the pages they share, so
  the sum is what the pair really uses) as often as a walk of their page
  tables costs at most PSS_DUTY_MAX of a CPU. Prints one JSON line: sync seconds,
  before / peak memory, the primary's commands per second before and
  during the sync (INFO stats total_commands_processed deltas).

    replication-probe.py attach --primary-port P --replicas R1,R2 --count N
  Makes the first N of the replicas follow 127.0.0.1:P (REPLICAOF) and the
  rest stand alone (REPLICAOF NO ONE), then waits until the primary counts
  N replicas online with its own offset, and each follower's link is up.

    replication-probe.py cpu PID...
  CPU seconds (user + system) each process has used so far, in all and by
  thread name (/proc/PID/task/*/stat; threads of one name summed), as one
  JSON object keyed by pid: the caller takes differences around a run.

    replication-probe.py lag --port P [--seconds 10] [--pause-ms 0.5]
  On one connection, alternately `SET probe:lag i` + `WAIT 1 0` and
  `SET probe:lag i` + `PING`, each pair written in one send, timed
  (time.perf_counter_ns) from the send to the second reply, for --seconds.
  The SET+WAIT time bounds from above how long the write took to be applied
  and acknowledged by a replica; SET+PING is the same round trip without
  the replica. Prints one JSON line with p50/p90/p99/p999/max of both in
  microseconds.
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import time

# Seconds a reply may take before the probe gives up (a replica that never
# acks is a finding, not a hang).
REPLY_TIMEOUT_S = 30.0
# Bytes read from a socket at a time.
RECV_BYTES = 1 << 16
# Seconds `attach` waits for the replicas to settle (a full sync of a few
# million keys included).
ATTACH_TIMEOUT_S = 600.0
# Seconds between two looks while waiting.
POLL_S = 0.05
# The largest share of one CPU the memory sampler's PSS walks may take.
PSS_DUTY_MAX = 0.2


def encode(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Conn:
    """One RESP2 connection; replies as Python values, errors as RespError."""

    def __init__(self, port, timeout=REPLY_TIMEOUT_S):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def close(self):
        self.s.close()

    def _line(self):
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                line, self.buf = self.buf[:i], self.buf[i + 2 :]
                return line
            chunk = self.s.recv(RECV_BYTES)
            if not chunk:
                raise ConnectionError("connection closed")
            self.buf += chunk

    def _exact(self, n):
        while len(self.buf) < n + 2:
            chunk = self.s.recv(RECV_BYTES)
            if not chunk:
                raise ConnectionError("connection closed")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2 :]
        return data

    def reply(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t == b"+":
            return rest.decode()
        if t == b"-":
            raise RespError(rest.decode())
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [self.reply() for _ in range(n)]
        raise ValueError(f"unexpected reply line {line!r}")

    def cmd(self, *args):
        self.s.sendall(encode(*args))
        return self.reply()

    def info(self, section):
        text = self.cmd("INFO", section).decode()
        fields = {}
        for line in text.splitlines():
            if ":" in line and not line.startswith("#"):
                k, v = line.split(":", 1)
                fields[k] = v
        return fields


class RespError(Exception):
    pass


def percentiles(samples_ns):
    s = sorted(samples_ns)
    if not s:
        return None

    def at(q):
        return s[min(len(s) - 1, int(q * len(s)))] / 1000.0

    return {
        "n": len(s),
        "p50": at(0.50),
        "p90": at(0.90),
        "p99": at(0.99),
        "p999": at(0.999),
        "max": s[-1] / 1000.0,
        "mean": sum(s) / len(s) / 1000.0,
    }


# ------------------------------------------------------------------ memory


def children(pid):
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    out += [int(p) for p in f.read().split()]
            except OSError:
                pass
    except OSError:
        pass
    return out


def rollup(pid):
    """(RSS kB, PSS kB) of one process, 0s if it is gone. One read of the
    whole file: each read(2) of smaps_rollup walks the page tables."""
    rss = pss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            data = f.read()
    except OSError:
        return 0, 0
    for line in data.split(b"\n"):
        if line.startswith(b"Rss:"):
            rss = int(line.split()[1])
        elif line.startswith(b"Pss:"):
            pss = int(line.split()[1])
    return rss, pss


def vmrss(pid):
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def mem_sample(pid, pss=True):
    """The primary's VmRSS, VmRSS summed with its children's, and (if
    `pss`) their PSS summed. VmRSS is a counter (cheap); PSS walks every
    page table entry (tens of ms for a GB), so the caller rations it."""
    kids = children(pid)
    out = {"rss_kb": vmrss(pid), "sum_rss_kb": sum(vmrss(p) for p in [pid] + kids), "children": len(kids)}
    if pss:
        out["sum_pss_kb"] = sum(rollup(p)[1] for p in [pid] + kids)
    return out


class PssRation:
    """When to take the next PSS sample: no sooner than PSS_DUTY_MAX^-1
    times the last one's cost after it, so the sampler's page-table walks
    take at most that share of a CPU from the server it measures (a 1.5 GB
    Redis and its fork child cost ~100 ms a walk)."""

    def __init__(self):
        self.next = 0.0
        self.cost_s = []

    def due(self, now):
        return now >= self.next

    def took(self, start, end):
        self.cost_s.append(end - start)
        self.next = end + (end - start) / PSS_DUTY_MAX


class Peak:
    def __init__(self):
        self.peak = {}
        self.samples = 0

    def add(self, m):
        self.samples += 1
        for k, v in m.items():
            self.peak[k] = max(self.peak.get(k, 0), v)


# -------------------------------------------------------------------- sync


def cmd_sync(a):
    primary = Conn(a.primary_port)
    keys = primary.cmd("DBSIZE")
    # The window before: command rate and memory with the caller's load
    # (if any) running, no replica yet.
    c0 = int(primary.info("stats")["total_commands_processed"])
    t_b0 = time.monotonic()
    before = Peak()
    deadline = t_b0 + a.before_s
    tick = t_b0
    while time.monotonic() < deadline:
        tick += a.every_s
        before.add(mem_sample(a.primary_pid, pss=False))
        time.sleep(max(0.0, tick - time.monotonic()))
    before_mem = mem_sample(a.primary_pid)
    c1 = int(primary.info("stats")["total_commands_processed"])
    t0 = time.monotonic()
    with open(a.replica_log, "ab") as log:
        proc = subprocess.Popen(a.command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    with open(a.replica_pidfile, "w") as f:
        f.write(f"{proc.pid}\n")
    peak = Peak()
    peak.add(before_mem)
    ration = PssRation()
    replica = None
    up_at = None
    polls = 0
    synced = False
    tick = t0
    # Bounded by --timeout-s.
    while time.monotonic() - t0 < a.timeout_s:
        # On a fixed tick (not a fixed pause): sampling a large process
        # takes milliseconds of its own.
        tick += a.every_s
        now = time.monotonic()
        pss = ration.due(now)
        peak.add(mem_sample(a.primary_pid, pss))
        if pss:
            ration.took(now, time.monotonic())
        if proc.poll() is not None:
            sys.exit(f"the replica exited with {proc.returncode}; see {a.replica_log}")
        try:
            if replica is None:
                replica = Conn(a.replica_port)
            polls += 1
            if replica.info("replication").get("master_link_status") == "up":
                up_at = up_at or time.monotonic()
                if replica.cmd("DBSIZE") == keys:
                    synced = True
                    break
        except (ConnectionError, OSError):
            # Still starting.
            if replica is not None:
                replica.close()
            replica = None
        except RespError:
            # -LOADING while a Redis replica loads the RDB.
            pass
        time.sleep(max(0.0, tick - time.monotonic()))
    t1 = time.monotonic()
    c2 = int(primary.info("stats")["total_commands_processed"])
    if not synced:
        sys.exit(f"the replica on {a.replica_port} did not converge within {a.timeout_s} s; see {a.replica_log}")
    print(
        json.dumps(
            {
                "keys": keys,
                "sync_s": t1 - t0,
                "link_up_s": (up_at or t1) - t0,
                "before": before_mem,
                "before_window_peak": before.peak,
                "peak": peak.peak,
                "samples": peak.samples,
                "pss_samples": len(ration.cost_s),
                "pss_sample_ms_mean": 1000 * sum(ration.cost_s) / max(1, len(ration.cost_s)),
                "replica_polls": polls,
                "primary_cmds_per_s_before": (c1 - c0) / (t0 - t_b0),
                "primary_cmds_per_s_during": (c2 - c1) / (t1 - t0),
            }
        )
    )
    replica.close()
    primary.close()


# ------------------------------------------------------------------ attach


def cmd_attach(a):
    ports = [int(p) for p in a.replicas.split(",") if p]
    for i, port in enumerate(ports):
        c = Conn(port)
        if i < a.count:
            c.cmd("REPLICAOF", "127.0.0.1", a.primary_port)
        else:
            c.cmd("REPLICAOF", "NO", "ONE")
        c.close()
    primary = Conn(a.primary_port)
    t0 = time.monotonic()
    last = None
    # Bounded by ATTACH_TIMEOUT_S.
    while time.monotonic() - t0 < ATTACH_TIMEOUT_S:
        try:
            info = primary.info("replication")
            off = info["master_repl_offset"]
            slaves = [v for k, v in info.items() if k.startswith("slave") and k[5:].isdigit()]
            online = [s for s in slaves if "state=online" in s and f"offset={off}," in s]
            links = []
            for port in ports[: a.count]:
                c = Conn(port)
                links.append(c.info("replication").get("master_link_status"))
                c.close()
            last = (info.get("connected_slaves"), slaves, links)
            if int(info["connected_slaves"]) == a.count and len(online) == a.count and all(x == "up" for x in links):
                print(json.dumps({"replicas": a.count, "settled_s": time.monotonic() - t0}))
                return
        except (ConnectionError, OSError, RespError) as e:
            last = repr(e)
        time.sleep(POLL_S)
    sys.exit(f"replicas of {a.primary_port} did not settle at {a.count} within {ATTACH_TIMEOUT_S} s: {last}")


# --------------------------------------------------------------------- cpu


def cpu_of(pid):
    tick = os.sysconf("SC_CLK_TCK")
    total, threads = 0.0, {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return {"total": None, "threads": {}}
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue  # the thread ended meanwhile
        # "tid (comm) state ...": comm may hold spaces and parentheses.
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        secs = (int(fields[11]) + int(fields[12])) / tick  # utime, stime
        total += secs
        threads[name] = threads.get(name, 0.0) + secs
    return {"total": total, "threads": threads}


def cmd_cpu(a):
    print(json.dumps({str(p): cpu_of(p) for p in a.pids}))


# --------------------------------------------------------------------- lag


def cmd_lag(a):
    c = Conn(a.port)
    c.cmd("SET", "probe:lag", "0")
    wait_ns, ping_ns = [], []
    not_acked = 0
    pause_s = a.pause_ms / 1000.0
    t_end = time.monotonic() + a.seconds
    i = 0
    # Bounded by --seconds.
    while time.monotonic() < t_end:
        i += 1
        wait = i % 2 == 1
        second = encode("WAIT", "1", "0") if wait else encode("PING")
        req = encode("SET", "probe:lag", str(i)) + second
        t = time.perf_counter_ns()
        c.s.sendall(req)
        r1 = c.reply()
        r2 = c.reply()
        dt = time.perf_counter_ns() - t
        if r1 != "OK":
            sys.exit(f"SET answered {r1!r}")
        if wait:
            wait_ns.append(dt)
            if r2 < 1:
                not_acked += 1
        else:
            ping_ns.append(dt)
        if pause_s > 0:
            time.sleep(pause_s)
    c.close()
    print(
        json.dumps(
            {"set_wait_us": percentiles(wait_ns), "set_ping_us": percentiles(ping_ns), "wait_not_acked": not_acked}
        )
    )


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="what", required=True)
    s = sub.add_parser("sync")
    s.add_argument("--primary-port", type=int, required=True)
    s.add_argument("--primary-pid", type=int, required=True)
    s.add_argument("--replica-port", type=int, required=True)
    s.add_argument("--replica-pidfile", required=True)
    s.add_argument("--replica-log", required=True)
    s.add_argument("--before-s", type=float, default=3.0)
    s.add_argument("--every-s", type=float, default=0.05)
    s.add_argument("--timeout-s", type=float, default=1800.0)
    s.add_argument("command", nargs="+")
    s = sub.add_parser("attach")
    s.add_argument("--primary-port", type=int, required=True)
    s.add_argument("--replicas", required=True)
    s.add_argument("--count", type=int, required=True)
    s = sub.add_parser("cpu")
    s.add_argument("pids", type=int, nargs="+")
    s = sub.add_parser("lag")
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--seconds", type=float, default=10.0)
    s.add_argument("--pause-ms", type=float, default=0.5)
    a = p.parse_args()
    {"sync": cmd_sync, "attach": cmd_attach, "cpu": cmd_cpu, "lag": cmd_lag}[a.what](a)


if __name__ == "__main__":
    main()
