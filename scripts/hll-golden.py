#!/usr/bin/env python3
"""Writes crates/amalgam-types/tests/hll_redis_7_0_15.txt: HyperLogLogs
made by a running redis-server 7.0 (their exact bytes, as GET returns
them, and PFCOUNT's answers), which crates/amalgam-types/tests/hll_golden.rs
checks amalgam-types' hll.rs reproduces byte for byte.

Usage: scripts/hll-golden.py PORT   (a redis-server of your own: it is
FLUSHALLed and its hll-sparse-max-bytes changed, then put back to 3000)

Lines of the file (fields separated by one space, bytes in lower-case hex):
  add NAME PREFIX N SPARSE_MAX COUNT HEX_AFTER_PFADD HEADER_AFTER_PFCOUNT
      PFADD of PREFIX0 … PREFIX{N-1} in that order into a new key with
      hll-sparse-max-bytes SPARSE_MAX; PFCOUNT's answer; the value after the
      PFADDs; the 16-byte header after PFCOUNT cached the count (the
      registers do not change).
  one ELEMENT_HEX HEX
      PFADD of one binary element (lengths 0-24: every tail of MurmurHash64A).
  merge NAME DEST SOURCES COUNT HEX
      PFMERGE into NAME: DEST is "-" (a new key) or an `add` case copied to
      NAME first (then it is a source too, as in Redis); SOURCES are `add`
      cases, comma-separated.
  union COUNT NAMES
      PFCOUNT of several `add` cases (comma-separated): the union's count.

Needs redis-py.
"""
import sys

import redis

# (name, prefix, elements, hll-sparse-max-bytes)
ADDS = [
    ("empty", "e", 0, 3000),
    ("a1", "a", 1, 3000),
    ("a5", "a", 5, 3000),
    ("a20", "a", 20, 3000),
    ("b100", "b", 100, 3000),
    ("c300", "c", 300, 3000),
    ("d1000", "d", 1000, 3000),
    ("f2000", "f", 2000, 3000),
    ("g5000", "g", 5000, 3000),
    ("h100000", "h", 100000, 3000),
    ("m1000000", "m", 1000000, 3000),
    ("s500", "s", 500, 300),
    ("t3000", "t", 3000, 12000),
]
MERGES = [
    ("ma", "-", ["a5", "b100"]),
    ("mb", "-", ["b100", "g5000"]),
    ("mc", "c300", ["a20"]),
    ("md", "d1000", ["f2000", "a1"]),
    ("me", "-", ["d1000", "c300", "b100"]),
]
UNIONS = [["a1", "a5"], ["b100", "g5000", "h100000"], ["c300", "d1000", "t3000", "m1000000"]]
CHUNK = 5000


def main():
    port = int(sys.argv[1])
    r = redis.Redis(port=port)
    r.flushall()
    out = []
    try:
        for name, prefix, n, sparse_max in ADDS:
            r.config_set("hll-sparse-max-bytes", sparse_max)
            key = "g:" + name
            if n == 0:
                r.execute_command("PFADD", key)
            for start in range(0, n, CHUNK):
                r.execute_command("PFADD", key, *[f"{prefix}{i}" for i in range(start, min(n, start + CHUNK))])
            added = r.get(key)
            count = r.pfcount(key)
            counted = r.get(key)
            assert added[16:] == counted[16:], name
            out.append(f"add {name} {prefix} {n} {sparse_max} {count} {added.hex()} {counted[:16].hex()}")
        r.config_set("hll-sparse-max-bytes", 3000)
        for length in range(25):
            element = bytes((i * 7 + 3) % 256 for i in range(length))
            key = "o:" + str(length)
            r.pfadd(key, element)
            out.append(f"one {element.hex() or '-'} {r.get(key).hex()}")
        for name, dest, sources in MERGES:
            key = "m:" + name
            if dest != "-":
                r.copy("g:" + dest, key)
            r.pfmerge(key, *["g:" + s for s in sources])
            merged = r.get(key)
            out.append(f"merge {name} {dest} {','.join(sources)} {r.pfcount(key)} {merged.hex()}")
        for names in UNIONS:
            out.append(f"union {r.pfcount(*['g:' + n for n in names])} {','.join(names)}")
    finally:
        r.config_set("hll-sparse-max-bytes", 3000)
    path = "crates/amalgam-types/tests/hll_redis_7_0_15.txt"
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    print(f"wrote {len(out)} lines to {path}")


if __name__ == "__main__":
    main()
