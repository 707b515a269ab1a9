#!/usr/bin/env python3
"""Writes the seeds of the repl_sync_in fuzz target into corpus/repl_sync_in/.

Each seed is one byte of mode (bit 0: cache mode; bit 1: a +CONTINUE
continues a redis-server's stream) then what a primary sends after PSYNC:

* redis-server's disk-based sync ($<len>) of redis-server 7.0.15's golden
  dump.rdb, then a command stream (SELECT, SET, MULTI/EXEC, REPLCONF GETACK);
* its diskless form ($EOF:<mark>, the RDB, the mark) of valkey-server
  8.0.1's golden file (RDB version 11), in cache mode;
* a +CONTINUE and a command stream;
* with AMALGAM_ADDR=host:port, what a running Amalgam primary sends a
  replica that asks for its native format (REPLCONF capa amalgam): its
  full sync and the records of a few writes made while it streams.

    python3 fuzz/repl_sync_in_seeds.py [AMALGAM_ADDR]
"""
import hashlib
import os
import socket
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "..", "crates", "amalgam-persist", "tests", "rdb_files")
OUT = os.path.join(HERE, "corpus", "repl_sync_in")
REPLID = b"8f1e1b4b7a2d4f6c9e0a3b5d7c9e1f2a4b6c8d0e"
MARK = b"9" * 40


def resp(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else a.encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


STREAM = (
    resp("SELECT", "0") + resp("SET", "a", "1") + resp("MULTI") + resp("INCR", "a") + resp("SADD", "s", "x")
    + resp("EXEC") + resp("SELECT", "3") + resp("PEXPIREAT", "a", "4102444800000") + resp("REPLCONF", "GETACK", "*")
    + b"\n" + resp("DEL", "a")
)


def save(name, data):
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, hashlib.sha1(data).hexdigest())
    with open(path, "wb") as f:
        f.write(data)
    print(f"{name}: {len(data)} bytes -> {os.path.relpath(path)}")


def native(addr):
    host, port = addr.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=2)
    w = socket.create_connection((host, int(port)), timeout=2)
    for cmd in (resp("PING"), resp("REPLCONF", "listening-port", "1"), resp("REPLCONF", "capa", "eof", "capa", "psync2", "capa", "amalgam")):
        s.sendall(cmd)
        time.sleep(0.1)
        s.recv(65536)
    s.sendall(resp("PSYNC", "?", "-1"))
    got = b""
    deadline = time.time() + 2
    wrote = False
    while time.time() < deadline:
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            chunk = b""
        got += chunk
        if not wrote and len(got) > 0:
            time.sleep(0.3)
            w.sendall(resp("SET", "later", "v") + resp("RPUSH", "l", "a", "b") + resp("DEL", "k1") + resp("WAIT", "1", "100"))
            wrote = True
        if not chunk:
            break
    return got


def main():
    rdb7 = open(os.path.join(GOLDEN, "redis-7.0.15.rdb"), "rb").read()
    rdb11 = open(os.path.join(GOLDEN, "valkey-8.0.1.rdb"), "rb").read()
    head = b"\n+FULLRESYNC " + REPLID + b" 0\r\n\n\n"
    save("disk-based", b"\x00" + head + b"$%d\r\n" % len(rdb7) + rdb7 + STREAM)
    save("diskless v11", b"\x01" + head + b"$EOF:" + MARK + b"\r\n" + rdb11 + MARK + STREAM)
    save("continue", b"\x02" + b"+CONTINUE " + REPLID + b"\r\n" + STREAM)
    if len(sys.argv) > 1:
        save("native", b"\x00" + native(sys.argv[1]))


main()
