#!/usr/bin/env python3
"""Compares COMMAND DOCS, byte for byte, between Amalgam and a redis-server
for every name in Amalgam's COMMAND LIST, in RESP2 and RESP3.

Usage: scripts/command-docs-compare.py AMALGAM_PORT REDIS_PORT

Redis lists a container's subcommands in its dict's order, which a random
hash seed makes differ from one redis-server process to the next; a reply
equal but for that order is counted apart ("equal but for subcommand
order"), not as a difference.
"""
import socket
import sys


def encode(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a.encode() if isinstance(a, str) else a
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


class Conn:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.buf = b""

    def line(self):
        while b"\r\n" not in self.buf:
            self.more()
        i = self.buf.index(b"\r\n")
        line, self.buf = self.buf[:i], self.buf[i + 2:]
        return line

    def more(self):
        d = self.sock.recv(1 << 16)
        if not d:
            raise EOFError
        self.buf += d

    def exact(self, n):
        while len(self.buf) < n + 2:
            self.more()
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def reply(self):
        """(raw bytes, parsed): parsed is (type, value), maps as lists of pairs."""
        line = self.line()
        t, rest = line[:1], line[1:]
        raw = line + b"\r\n"
        if t in b"$=" and rest != b"-1":
            data = self.exact(int(rest))
            return raw + data + b"\r\n", (t, data)
        if t in b"*~>%|" and rest != b"-1":
            n = int(rest) * (2 if t in b"%|" else 1)
            items = []
            for _ in range(n):
                r, p = self.reply()
                raw += r
                items.append(p)
            if t in b"%|":
                items = [(items[i], items[i + 1]) for i in range(0, n, 2)]
            return raw, (t, items)
        return raw, (t, rest)

    def call(self, *args):
        self.sock.sendall(encode(*args))
        return self.reply()


def unordered_subcommands(p):
    """The parsed entry with its subcommands sorted by name (RESP2 lists
    them as a flat array of name, docs pairs; RESP3 as a map)."""
    t, v = p
    if t == b"%":
        return (t, [(k, sorted_subs(k, x)) for k, x in v])
    if t == b"*":
        return (t, [v[i] if i % 2 == 0 else sorted_subs(v[i - 1], v[i]) for i in range(len(v))])
    return p


def sorted_subs(key, value):
    if key != (b"$", b"subcommands"):
        return value
    t, v = value
    if t == b"%":
        return (t, sorted(v))
    pairs = sorted((v[i], v[i + 1]) for i in range(0, len(v), 2))
    return (t, [x for pair in pairs for x in pair])


def main():
    amalgam, redis = int(sys.argv[1]), int(sys.argv[2])
    names = [p[1].decode() for p in Conn(amalgam).call("COMMAND", "LIST")[1][1]]
    for proto in (2, 3):
        a, r = Conn(amalgam), Conn(redis)
        if proto == 3:
            a.call("HELLO", "3")
            r.call("HELLO", "3")
        same, reordered, differ = 0, [], []
        for n in sorted(names):
            ra, pa = a.call("COMMAND", "DOCS", n)
            rr, pr = r.call("COMMAND", "DOCS", n)
            if ra == rr:
                same += 1
                continue
            entry = lambda p: [(k, unordered_subcommands(v)) for k, v in p[1]] if p[0] == b"%" else \
                [unordered_subcommands(x) if i % 2 else x for i, x in enumerate(p[1])]
            if entry(pa) == entry(pr):
                reordered.append(n)
            else:
                differ.append((n, ra, rr))
        print("RESP%d: %d names; %d byte-identical, %d equal but for subcommand order %s, %d differ"
              % (proto, len(names), same, len(reordered), reordered, len(differ)))
        for n, ra, rr in differ:
            i = next((i for i in range(min(len(ra), len(rr))) if ra[i] != rr[i]), min(len(ra), len(rr)))
            print("  %s: first difference at byte %d\n    amalgam: %r\n    redis:   %r"
                  % (n, i, ra[max(0, i - 60):i + 100], rr[max(0, i - 60):i + 100]))


if __name__ == "__main__":
    main()
