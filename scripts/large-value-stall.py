#!/usr/bin/env python3
"""How long another connection waits while one RESP SET of a SIZE-byte
value arrives (docs/benchmarks.md § Large values, issue 18): one thread
sends the SET (the whole value at once, as large-value-time.py does)
while a second connection sends PING after PING, one at a time, until
the SET is answered. Prints the SET's time, the PINGs answered meanwhile
and their round trips (median, 99th percentile, longest); with PID, the
server's peak resident memory (VmHWM: start a fresh server per run).
Run the server with one worker (-t 1) so both connections share it.

usage: large-value-stall.py PORT SIZE [PID]
"""
import socket, sys, threading, time

port = int(sys.argv[1]); size = int(sys.argv[2])
pid = sys.argv[3] if len(sys.argv) > 3 else None

pinger = socket.create_connection(('127.0.0.1', port))
pinger.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
setter = socket.create_connection(('127.0.0.1', port))
v = bytearray(b'abcdefgh' * (size // 8))
done = threading.Event()
set_time = [0.0]

def do_set():
    t = time.time()
    setter.sendall(b'*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$%d\r\n' % len(v))
    setter.sendall(v)
    setter.sendall(b'\r\n')
    r = setter.recv(100)
    set_time[0] = time.time() - t
    assert r == b'+OK\r\n', r
    done.set()

th = threading.Thread(target=do_set)
th.start()
rtts = []
# Bounded: a PING at most every round trip until the SET is answered
# (a 512 MB SET takes seconds; 10 minutes is far past any run).
deadline = time.time() + 600
while not done.is_set() and time.time() < deadline:
    t = time.time()
    pinger.sendall(b'*1\r\n$4\r\nPING\r\n')
    r = pinger.recv(100)
    assert r == b'+PONG\r\n', r
    rtts.append(time.time() - t)
th.join()
rtts.sort()
def q(p):
    return rtts[min(len(rtts) - 1, int(p * len(rtts)))] * 1000 if rtts else float('nan')
peak = ''
if pid:
    for l in open('/proc/%s/status' % pid):
        if l.startswith('VmHWM'):
            peak = ' peak RSS %d MB' % (int(l.split()[1]) // 1024)
print('SET %.2fs; %d PINGs meanwhile: median %.2f ms, p99 %.2f ms, max %.2f ms%s'
      % (set_time[0], len(rtts), q(0.5), q(0.99), (rtts[-1] * 1000 if rtts else float('nan')), peak))
