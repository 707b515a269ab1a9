#!/usr/bin/env python3
"""Items a small cache holds: writes N distinct keys with V-byte values
(pipelined, memcached text protocol) to each server given as host:port and
prints curr_items after. Used for
docs/bench-log/2026-11-25-small-cache-and-large-values.md § Items a small
cache holds.

usage: small-budget-items.py N V host:port [host:port ...]
"""
import socket, sys

def fill(addr, n, vlen):
    host, port = addr.rsplit(':', 1)
    s = socket.create_connection((host, int(port)))
    value = b'v' * vlen
    batch = 200
    for start in range(0, n, batch):
        req = b''.join(b'set key:%d 0 0 %d noreply\r\n%s\r\n' % (i, vlen, value) for i in range(start, min(n, start + batch)))
        s.sendall(req)
    s.sendall(b'stats\r\n')
    buf = b''
    while not buf.endswith(b'END\r\n'):
        buf += s.recv(65536)
    stats = dict(l.split(' ')[1:3] for l in buf.decode().split('\r\n') if l.startswith('STAT '))
    return int(stats['curr_items']), int(stats.get('evictions', 0))

n, vlen = int(sys.argv[1]), int(sys.argv[2])
for addr in sys.argv[3:]:
    items, ev = fill(addr, n, vlen)
    print(f'{addr}: curr_items {items} evictions {ev}')
