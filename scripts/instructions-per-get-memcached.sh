#!/usr/bin/env bash
# User-space instructions an amalgam executes per memcached text GET or
# SET, counted by valgrind's callgrind (hardware counters are not
# available here): the memcached port's twin of
# scripts/instructions-per-get.sh, for comparing two builds to a few
# instructions whatever the machine's load.
#
# For each binary given: starts it under callgrind (-t 1, memcached's
# port only), SETs KEYS keys (3-byte values), zeroes the counters, sends
# REQUESTS gets (or sets) of those keys from one connection PIPE at a
# time (a Python client; only the server is counted), dumps the counters
# and prints instructions per request.
#
# malloc's own instructions are in the count, and glibc's fast bins make
# them depend on the heap's layout, which any change of a long-lived
# allocation moves: TUNE=glibc.malloc.mxfast=0 (GLIBC_TUNABLES) turns the
# fast bins off in both builds to see the difference without that noise
# (docs/bench-log/2026-12-07-databases.md).
#
# Usage: [OP=get|set] [PIPE=1] [REQUESTS=40000] [KEYS=1000] [TUNE=…] scripts/instructions-per-get-memcached.sh BIN [BIN ...]
set -euo pipefail
OP=${OP:-get}
PIPE=${PIPE:-1}
REQUESTS=${REQUESTS:-40000}
KEYS=${KEYS:-1000}
TUNE=${TUNE:-}
[ $# -gt 0 ] || { echo "usage: $0 path/to/amalgam [more ...]" >&2; exit 1; }
for tool in valgrind callgrind_control python3; do
  command -v "$tool" >/dev/null || { echo "$tool not found (apt-get install valgrind)" >&2; exit 1; }
done
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# The client: OP (preload|get|set) N PIPE KEYS against PORT, waiting for
# every reply of a pipeline before the next.
client() {
  python3 - "$@" <<'PY'
import socket, sys
port, op, n, pipe, keys = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
s = socket.create_connection(("127.0.0.1", port))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
def rounds(make, end):
    for i in range(0, n, pipe):
        reqs = [make((i + j) % keys) for j in range(min(pipe, n - i))]
        s.sendall(b"".join(reqs))
        buf = b""
        while buf.count(end) < len(reqs):
            buf += s.recv(1 << 20)
if op == "preload":
    n, pipe = keys, 100
    rounds(lambda k: b"set key:%d 0 0 3\r\nabc\r\n" % k, b"STORED\r\n")
elif op == "get":
    rounds(lambda k: b"get key:%d\r\n" % k, b"END\r\n")
else:
    rounds(lambda k: b"set key:%d 0 0 3\r\nxyz\r\n" % k, b"STORED\r\n")
PY
}

for bin in "$@"; do
  dir=$(mktemp -d)
  port=$(free_port)
  GLIBC_TUNABLES=$TUNE valgrind --tool=callgrind --callgrind-out-file="$dir/cg.%p" "$bin" -p "$port" --resp-port 0 -t 1 \
    >/dev/null 2>&1 &
  vpid=$!
  for _ in $(seq 1 200); do listening "$port" && break; sleep 0.1; done
  client "$port" preload 0 1 "$KEYS"
  callgrind_control -z "$vpid" >/dev/null 2>&1
  client "$port" "$OP" "$REQUESTS" "$PIPE" "$KEYS"
  callgrind_control -d mark "$vpid" >/dev/null 2>&1
  f=$(grep -l 'Trigger: dump mark$' "$dir"/cg.* | head -1)
  total=$(awk '/^summary:/ { print $2 }' "$f")
  echo "$bin: memcached $OP p$PIPE $((total / REQUESTS)) instructions/request${TUNE:+ ($TUNE)}"
  kill "$vpid" 2>/dev/null || true
  wait "$vpid" 2>/dev/null || true
  rm -rf "$dir"
done
