#!/usr/bin/env python3
"""Times one RESP SET and GET of a SIZE-byte value on 127.0.0.1:PORT (the
whole value sent at once, the reply read into one buffer) and checks the
value came back. Used for docs/bench-log/2026-11-25-small-cache-and-large-values.md
§ Large values and docs/bench-log/2026-11-26-large-values.md.

usage: large-value-time.py PORT SIZE
"""
import socket, sys, time
port=int(sys.argv[1]); size=int(sys.argv[2])
s=socket.create_connection(('127.0.0.1',port))
v=bytearray(b'abcdefgh'*(size//8))
t=time.time()
s.sendall(b'*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$%d\r\n'%len(v)); s.sendall(v); s.sendall(b'\r\n')
r=s.recv(100); t1=time.time()-t
s.sendall(b'*2\r\n$6\r\nSTRLEN\r\n$3\r\nbig\r\n'); r2=s.recv(100)
t=time.time()
s.sendall(b'*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n')
want=len(b'$%d\r\n'%len(v))+len(v)+2
buf=bytearray(want); mv=memoryview(buf); got=0
while got<want:
    n=s.recv_into(mv[got:])
    if not n: break
    got+=n
t2=time.time()-t
print(r, r2, 'SET %.2fs GET %.2fs'%(t1,t2), got==want and buf[-10:-2]==v[-8:])
