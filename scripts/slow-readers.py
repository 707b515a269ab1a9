#!/usr/bin/env python3
"""Slow-reader attack (issue 20 §3): CONNS connections each pipeline GETS
GETs of one VALUE_BYTES value and never read; samples the server's RSS
(/proc/PID/status VmRSS, and VmHWM, its peak) every SAMPLE_S seconds for
SECONDS, then reports the peak, how many attackers the server closed, and
whether another client is still served meanwhile.

  python3 scripts/slow-readers.py --pid PID --port PORT [--proto resp|memcached]
         [--conns 500] [--gets 80] [--value-bytes 100000] [--seconds 20]

The attackers shrink their receive buffers (SO_RCVBUF 4 KiB) as a real
slow reader would; the server's send buffers still take a few MB each
(kernel memory, not the server's RSS). Not run in CI
(docs/bench-log/2026-11-25-slow-readers.md has the figures).
"""
import argparse
import socket
import time


def rss_kib(pid, field="VmRSS"):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def resp(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else a.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def read_reply(s, until):
    buf = b""
    while until not in buf:
        chunk = s.recv(1 << 20)
        if not chunk:
            raise RuntimeError("closed")
        buf += chunk
    return buf


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--proto", choices=["resp", "memcached"], default="resp")
    ap.add_argument("--conns", type=int, default=500)
    ap.add_argument("--gets", type=int, default=80)
    ap.add_argument("--value-bytes", type=int, default=100_000)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--sample-s", type=float, default=0.25)
    a = ap.parse_args()

    value = b"v" * a.value_bytes
    setup = socket.create_connection(("127.0.0.1", a.port))
    if a.proto == "resp":
        setup.sendall(resp("SET", "slow:v", value))
        read_reply(setup, b"\r\n")
        get = resp("GET", "slow:v")
        probe, probe_end = get, value + b"\r\n"
    else:
        setup.sendall(b"set slow:v 0 0 %d\r\n%s\r\n" % (a.value_bytes, value))
        read_reply(setup, b"STORED\r\n")
        get = b"get slow:v\r\n"
        probe, probe_end = get, b"END\r\n"
    base = rss_kib(a.pid)

    attackers = []
    t0 = time.time()
    for _ in range(a.conns):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(("127.0.0.1", a.port))
        s.settimeout(5)
        s.sendall(get * a.gets)
        attackers.append(s)
    sent = time.time() - t0

    peak, samples, served, probes = base, [], 0, 0
    end = time.time() + a.seconds
    while time.time() < end:
        r = rss_kib(a.pid)
        peak = max(peak, r)
        samples.append(r)
        # Another client is served meanwhile (a full GET each sample).
        probes += 1
        try:
            setup.settimeout(5)
            setup.sendall(probe)
            read_reply(setup, probe_end)
            served += 1
        except Exception:
            pass
        time.sleep(a.sample_s)

    # Attackers the server closed: a peek finds EOF or a reset once the
    # bytes already in flight are consumed; check without reading data
    # beyond what is queued (MSG_PEEK of one byte on a non-blocking socket
    # says "data" for an open one with replies waiting, so drain a little).
    closed = 0
    for s in attackers:
        s.setblocking(False)
        try:
            while True:
                d = s.recv(1 << 16)
                if not d:
                    closed += 1
                    break
        except (BlockingIOError, InterruptedError):
            pass
        except ConnectionResetError:
            closed += 1
    hwm = rss_kib(a.pid, "VmHWM")
    for s in attackers:
        s.close()
    mib = lambda k: k / 1024
    print(
        f"conns={a.conns} gets={a.gets} value={a.value_bytes} proto={a.proto} "
        f"rss_before={mib(base):.0f}MiB peak_rss_sampled={mib(peak):.0f}MiB vm_hwm={mib(hwm):.0f}MiB "
        f"rss_end={mib(samples[-1] if samples else base):.0f}MiB attackers_closed={closed}/{a.conns} "
        f"other_client_served={served}/{probes} connect_and_send={sent:.1f}s"
    )


if __name__ == "__main__":
    main()
