#!/usr/bin/env python3
"""Memory per cached script (issue 34 §7): SCRIPT LOAD N distinct variants of
the rate limiter, run each once with EVAL, and compare the server's RSS
before and after (docs/bench-log/2026-12-07-scripting.md).

Usage: scripts/script-memory.py PORT PID N   (a freshly started server)
"""
import redis, sys, os, time
def rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for l in f:
            if l.startswith("VmRSS:"): return int(l.split()[1])*1024
port=int(sys.argv[1]); pid=int(sys.argv[2]); n=int(sys.argv[3])
r=redis.Redis(port=port)
r.script_flush()
# a typical small script (~150 bytes): the rate limiter with a distinct constant
body="local c = redis.call('incr', KEYS[1]) redis.call('pexpire', KEYS[1], ARGV[1]) if c > tonumber(ARGV[2]) + %d then return 0 end return 1"
# warm: one script and one EVALSHA so lazily made state exists
s=r.script_load(body % -1); r.evalsha(s,1,"warm",1000,10)
time.sleep(0.5); before=rss(pid)
p=r.pipeline(transaction=False)
for i in range(n):
    p.script_load(body % i)
    if i % 1000 == 999: p.execute()
p.execute()
# run each once too (compiled on the worker that runs it)
p=r.pipeline(transaction=False)
for i in range(n):
    p.eval(body % i, 1, "k%d" % (i % 100), 1000, 10)
    if i % 1000 == 999: p.execute()
p.execute()
time.sleep(0.5); after=rss(pid)
print(f"port {port}: {n} scripts, RSS +{(after-before)/n:.0f} bytes per script")
