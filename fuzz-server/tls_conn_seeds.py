#!/usr/bin/env python3
"""Writes the seeds of the tls_conn fuzz target (fuzz-server/corpus/tls_conn):
ClientHellos recorded from a real client (`openssl s_client`, TLS 1.3 and
1.2) sent raw, garbage and truncated records, and client-mode inputs whose
plaintext is RESP or memcached commands (the input format:
crates/amalgam-server/tests/fuzz_checks/tls_conn.rs). The rustls
ClientHellos come from `cargo test -p amalgam-server --test fuzz_smoke --
--ignored write_rustls_hello_seeds`.

    python3 fuzz-server/tls_conn_seeds.py
"""
import os
import socket
import struct
import subprocess
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "tls_conn")


def flags(resp=False, client=False, tls12=False, read_max=0, room=0, arrival=0, end=0):
    f0 = int(resp) | int(client) << 1 | int(tls12) << 2 | read_max << 3 | room << 5
    f1 = arrival | end << 2
    return bytes([f0, f1])


def openssl_hello(version_flag):
    """The first bytes `openssl s_client` sends (its ClientHello)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    got = {}

    def accept():
        c, _ = srv.accept()
        c.settimeout(3)
        data = b""
        try:
            while True:
                chunk = c.recv(65536)
                if not chunk:
                    break
                data += chunk
                if len(data) >= 5 and len(data) >= 5 + struct.unpack(">H", data[3:5])[0]:
                    break
        except socket.timeout:
            pass
        got["hello"] = data
        c.close()

    t = threading.Thread(target=accept)
    t.start()
    subprocess.run(
        ["openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-servername", "localhost", version_flag],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10,
    )
    t.join()
    srv.close()
    return got["hello"]


def client(plain, raw=b""):
    return struct.pack("<H", len(plain)) + plain + raw


def resp(*cmds):
    out = b""
    for c in cmds:
        out += b"*%d\r\n" % len(c) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in c)
    return out


def main():
    os.makedirs(OUT, exist_ok=True)
    h13 = openssl_hello("-tls1_3")
    h12 = openssl_hello("-tls1_2")
    # A record of application data no session can decrypt.
    forged = b"\x17\x03\x03\x00\x20" + bytes(range(32))
    seeds = {
        "seed-raw-openssl13-memcached": flags(end=1) + h13,
        "seed-raw-openssl12-resp-bytewise": flags(resp=True, arrival=1, end=1) + h12,
        "seed-raw-openssl13-slow-socket": flags(resp=True, read_max=2, room=1, arrival=2) + h13,
        "seed-raw-truncated-hello": flags(end=1) + h13[:40],
        "seed-raw-hello-then-forged": flags(resp=True, end=1) + h13 + forged,
        "seed-raw-plaintext": flags(end=1) + b"GET / HTTP/1.1\r\nHost: x\r\n\r\nversion\r\n",
        "seed-raw-huge-length": flags(end=1) + b"\x16\x03\x01\xff\xff" + h13[5:],
        "seed-client-memcached": flags(client=True, end=2)
        + client(b"set a 0 0 5\r\nhello\r\nget a\r\ngets a b c\r\nversion\r\nmg a v t\r\nms b 2 T0\r\nhi\r\nmn\r\n"),
        "seed-client-memcached-binary": flags(client=True, tls12=True, end=1)
        + client(b"\x80\x00\x00\x01" + b"\x00" * 4 + b"\x00\x00\x00\x01" + b"\x00" * 12 + b"a"),
        "seed-client-memcached-slow": flags(client=True, read_max=2, room=2, arrival=2)
        + client(b"set big 0 0 100\r\n" + b"x" * 100 + b"\r\nget big big big\r\nstats\r\n"),
        "seed-client-resp": flags(resp=True, client=True, end=2)
        + client(resp([b"SET", b"k", b"v"], [b"GET", b"k"], [b"PING"]) + b"PING inline\r\n"),
        "seed-client-resp-tls12": flags(resp=True, client=True, tls12=True, read_max=3, room=3, end=1)
        + client(resp([b"RPUSH", b"l", b"a", b"b", b"c"], [b"LRANGE", b"l", b"0", b"-1"],
                      [b"HSET", b"h", b"f", b"v"], [b"HGETALL", b"h"], [b"SADD", b"s", b"m"],
                      [b"SMEMBERS", b"s"], [b"KEYS", b"*"], [b"HELLO", b"3"], [b"INFO"])),
        "seed-client-resp-multi": flags(resp=True, client=True, arrival=3, end=3)
        + client(resp([b"MULTI"], [b"INCR", b"n"], [b"ZADD", b"z", b"1", b"a"], [b"EXEC"],
                      [b"SUBSCRIBE", b"ch"], [b"PUBLISH", b"ch", b"m"], [b"UNSUBSCRIBE"], [b"QUIT"])),
        "seed-client-resp-then-garbage": flags(resp=True, client=True, end=1)
        + client(resp([b"PING"]), forged + b"\x15\x03\x03\x00\x02\x02\x28"),
        "seed-client-resp-truncated-record": flags(resp=True, client=True, arrival=2)
        + client(resp([b"ECHO", b"x" * 50]), forged[:9]),
    }
    for name, data in seeds.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print(f"{len(seeds)} seeds in {OUT}")


if __name__ == "__main__":
    main()
