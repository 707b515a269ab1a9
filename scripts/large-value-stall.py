#!/usr/bin/env python3
"""How long another connection waits while one RESP SET of a SIZE-byte
value arrives (docs/bench-log/2026-11-26-large-values.md, issue 18): one thread
sends the SET (the whole value at once, as large-value-time.py does)
while a second connection sends PING after PING, one at a time, until
the SET is answered. Prints the SET's time, the PINGs answered meanwhile
and their round trips (median, 99th percentile, longest); with PID, the
server's peak resident memory (VmHWM: start a fresh server per run).
Run the server with one worker (-t 1) so both connections share it.

With --get, the SET is made first without PINGs, and the PINGs run
during a GET of the value instead (the reply read as fast as the client
can); with PID the peak is reset before the GET (/proc/PID/clear_refs),
so it is the GET's own peak, and the resident memory before the GET is
printed beside it.

With --append, the SET is made first without PINGs, and the PINGs run
during an APPEND of SIZE more bytes to it (a large value that does not
arrive in place; the peak is not reset).

With --nx, the probe is `SET big x NX` instead of PING: a write of the
same key that stores nothing (the key exists) but takes its bucket lock
in Amalgam; run with two workers (-t 2) to see how long a writer of the
bucket on the other worker waits.

usage: large-value-stall.py PORT SIZE [PID] [--get | --append] [--nx]
"""
import socket, sys, threading, time

args = [a for a in sys.argv[1:] if a not in ('--get', '--append', '--nx')]
nx_mode = '--nx' in sys.argv[1:]
probe, want = ((b'*4\r\n$3\r\nSET\r\n$3\r\nbig\r\n$1\r\nx\r\n$2\r\nNX\r\n', b'$-1\r\n') if nx_mode
               else (b'*1\r\n$4\r\nPING\r\n', b'+PONG\r\n'))
get_mode = '--get' in sys.argv[1:]
append_mode = '--append' in sys.argv[1:]
port = int(args[0]); size = int(args[1])
pid = args[2] if len(args) > 2 else None

def status(field):
    for l in open('/proc/%s/status' % pid):
        if l.startswith(field):
            return int(l.split()[1]) // 1024
    return 0

pinger = socket.create_connection(('127.0.0.1', port))
pinger.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
setter = socket.create_connection(('127.0.0.1', port))
v = bytearray(b'abcdefgh' * (size // 8))
done = threading.Event()
op_time = [0.0]

def send_big(command, reply):
    """Sends `command big <v>` on the setter connection, timing it until
    its reply, which must be `reply`."""
    t = time.time()
    setter.sendall(b'*3\r\n$%d\r\n%s\r\n$3\r\nbig\r\n$%d\r\n' % (len(command), command, len(v)))
    setter.sendall(v)
    setter.sendall(b'\r\n')
    r = setter.recv(100)
    op_time[0] = time.time() - t
    assert r == reply, r
    done.set()

def do_set():
    send_big(b'SET', b'+OK\r\n')

def do_append():
    send_big(b'APPEND', b':%d\r\n' % (2 * len(v)))

def do_get():
    head = b'$%d\r\n' % len(v)
    want = len(head) + len(v) + 2
    buf = bytearray(want)
    view = memoryview(buf)
    t = time.time()
    setter.sendall(b'*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n')
    got = 0
    while got < want:
        n = setter.recv_into(view[got:], want - got)
        assert n > 0, 'connection closed'
        got += n
    op_time[0] = time.time() - t
    assert buf[:len(head)] == head and buf[-2:] == b'\r\n', bytes(buf[:40])
    done.set()

before = ''
if get_mode:
    do_set()
    done.clear()
    if pid:
        before = ' (resident before: %d MB)' % status('VmRSS')
        # 5: reset the peak resident size to the current one.
        with open('/proc/%s/clear_refs' % pid, 'w') as f:
            f.write('5')

if append_mode:
    do_set()
    done.clear()

th = threading.Thread(target=do_get if get_mode else do_append if append_mode else do_set)
th.start()
rtts = []
# Bounded: a PING at most every round trip until the command is answered
# (a 512 MB SET or GET takes seconds; 10 minutes is far past any run).
deadline = time.time() + 600
while not done.is_set() and time.time() < deadline:
    t = time.time()
    pinger.sendall(probe)
    r = pinger.recv(100)
    assert r == want, r
    rtts.append(time.time() - t)
th.join()
rtts.sort()
def q(p):
    return rtts[min(len(rtts) - 1, int(p * len(rtts)))] * 1000 if rtts else float('nan')
peak = ' peak RSS %d MB%s' % (status('VmHWM'), before) if pid else ''
print('%s %.2fs; %d %s meanwhile: median %.2f ms, p99 %.2f ms, max %.2f ms%s'
      % ('GET' if get_mode else 'APPEND' if append_mode else 'SET', op_time[0], len(rtts),
         'SET NXs' if nx_mode else 'PINGs', q(0.5), q(0.99),
         (rtts[-1] * 1000 if rtts else float('nan')), peak))
