#!/usr/bin/env bash
# Memory per element of Redis's collection types: Amalgam's RESP port vs
# Debian's redis-server 7, side by side (issue 19 §6, the study's §4.4).
#
# For each shape, a fresh redis-server (no persistence) and a fresh amalgam
# (store mode, -m MEMORY_MB, -t 2) are started; the shape is loaded into
# each with `redis-cli --pipe` (1,000 elements per command, as the issue
# measures Redis); then the growth of each server's resident memory (RSS,
# /proc/PID/status VmRSS) and of its INFO used_memory is divided by the
# element count. Shapes (the issue's):
#   hash      1 M fields field:%010d, 16-byte values, one key
#   set       1 M members member:%010d, one key
#   intset    1 M integers j*7919 (past the intset limit), one key
#   zset      1 M members member:%010d, scores j/2, one key
#   list      1 M 22-byte items, one key
#   smallhash 100 k keys of 10 fields f0..f9, 16-byte values (per field)
#   smalllist 100 k lists of 10 32-byte items, one LPUSH each (per item)
#   midlist   20 k lists of 60 32-byte items (~2 KB), pushed 10 per LPUSH
#             (per item; lists written again past 1 KiB go large, server
#             amalgam-commands typed.rs)
# Before the baseline each server takes one write of the shape's command
# on a scratch key, deleted again, on one connection per worker thread:
# the first write's one-time cost (code pages faulted in; Amalgam's first
# index page and, in store mode, each worker's first 2 MiB item chunk,
# transparent huge pages) is not per element. Its RSS growth is printed apart, per server,
# in KiB.
# Prints a markdown table: bytes per element for each server (RSS and
# used_memory) and the ratio amalgam/redis of the RSS figures.
#
# EVICTION: amalgam's eviction flags (default "--eviction none", store
# mode; EVICTION=" " runs cache mode).
# Usage: [SHAPES="hash set intset zset list smallhash smalllist midlist"] [MEMORY_MB=4096] [EVICTION=…]
#        [REDIS_PORT=21479] [AMALGAM_PORT=21480] [NO_BUILD=1]
#        scripts/compare-types-memory.sh
set -euo pipefail
cd "$(dirname "$0")/.."

SHAPES=${SHAPES:-hash set intset zset list smallhash smalllist midlist}
MEMORY_MB=${MEMORY_MB:-4096}
REDIS_PORT=${REDIS_PORT:-21479}
AMALGAM_PORT=${AMALGAM_PORT:-21480}
AMALGAM_MC_PORT=${AMALGAM_MC_PORT:-21313}
REDIS=${REDIS:-$(command -v redis-server || true)}
[ -n "$REDIS" ] || { echo "redis-server not found (apt-get install redis-server)" >&2; exit 1; }
command -v redis-cli >/dev/null || { echo "redis-cli not found (apt-get install redis-tools)" >&2; exit 1; }

[ -n "${NO_BUILD:-}" ] || cargo build --release -q -p amalgam-server
amalgam=${CARGO_TARGET_DIR:-target}/release/amalgam
work=$(mktemp -d)
pid=""
cleanup() {
  [ -z "$pid" ] || kill "$pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# The RESP commands of a shape, for redis-cli --pipe; prints N (elements).
gen() {
  python3 - "$1" "$work/$1.resp" <<'EOF'
import sys
shape, path = sys.argv[1], sys.argv[2]
N = 1_000_000
BATCH = 1000
def cmd(args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)
v16 = b"v" * 16
with open(path, "wb") as f:
    if shape == "smallhash":
        keys = 100_000
        for k in range(keys):
            args = ["HSET", "h:%08d" % k]
            for j in range(10):
                args += ["f%d" % j, v16]
            f.write(cmd(args))
        print(keys * 10)
        sys.exit()
    if shape in ("smalllist", "midlist"):
        keys, rounds = (100_000, 1) if shape == "smalllist" else (20_000, 6)
        for r in range(rounds):
            for k in range(keys):
                f.write(cmd(["LPUSH", "l:%08d" % k] + [b"i" * 22 + b"%010d" % (r * 10 + j) for j in range(10)]))
        print(keys * rounds * 10)
        sys.exit()
    for start in range(0, N, BATCH):
        r = range(start, start + BATCH)
        if shape == "hash":
            args = ["HSET", "big"] + [x for j in r for x in ("field:%010d" % j, v16)]
        elif shape == "set":
            args = ["SADD", "big"] + ["member:%010d" % j for j in r]
        elif shape == "intset":
            args = ["SADD", "big"] + [str(j * 7919) for j in r]
        elif shape == "zset":
            args = ["ZADD", "big"] + [x for j in r for x in (repr(j / 2), "member:%010d" % j)]
        elif shape == "list":
            args = ["RPUSH", "big"] + [b"i" * 12 + b"%010d" % j for j in r]
        else:
            raise SystemExit("unknown shape " + shape)
        f.write(cmd(args))
    print(N)
EOF
}

rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
used_memory() { redis-cli -p "$1" INFO memory | tr -d '\r' | awk -F: '/^used_memory:/ {print $2}'; }
wait_up() {
  for _ in $(seq 100); do
    redis-cli -p "$1" PING >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "server on $1 did not start" >&2
  return 1
}

# measure SERVER PORT SHAPE N: sets $per_rss and $per_used (bytes per
# element), or both to "n/a" if the server refused a command of the shape.
# Runs in this shell (not a subshell), so the exit trap kills the server.
# The shape's command on one element of a scratch key (see the header).
warm_cmd() {
  case "$1" in
    hash | smallhash) echo "HSET warm f v" ;;
    set) echo "SADD warm m" ;;
    intset) echo "SADD warm 7919" ;;
    zset) echo "ZADD warm 0.5 m" ;;
    list) echo "RPUSH warm i" ;;
    smalllist | midlist) echo "LPUSH warm i" ;;
    *) echo "unknown shape $1" >&2; return 1 ;;
  esac
}

measure() {
  local server=$1 port=$2 shape=$3 n=$4
  if [ "$server" = redis ]; then
    "$REDIS" --port "$port" --bind 127.0.0.1 --save '' --appendonly no >/dev/null 2>&1 &
  else
    "$amalgam" -p "$AMALGAM_MC_PORT" --resp-port "$port" -l 127.0.0.1 -U 0 -t 2 -m "$MEMORY_MB" ${EVICTION:---eviction none} \
      >/dev/null 2>&1 &
  fi
  pid=$!
  wait_up "$port"
  sleep 0.5
  local rss0 used0 rss1 used1 rss_start
  rss_start=$(rss_kib "$pid")
  # One connection per worker thread (connections go to the workers in
  # turn): each worker's first write takes its own 2 MiB item chunk.
  for _ in 1 2; do
    printf '%s\nDEL warm\n' "$(warm_cmd "$shape")" | redis-cli -p "$port" >/dev/null
  done
  rss0=$(rss_kib "$pid")
  first_kib=$((rss0 - rss_start))
  used0=$(used_memory "$port")
  per_rss=n/a per_used=n/a
  if redis-cli -p "$port" --pipe <"$work/$shape.resp" >"$work/pipe.log" 2>&1 && grep -q 'errors: 0' "$work/pipe.log"; then
    sleep 1
    rss1=$(rss_kib "$pid")
    used1=$(used_memory "$port")
    per_rss=$(awk -v a="$rss0" -v b="$rss1" -v n="$n" 'BEGIN { printf "%.1f", (b - a) * 1024 / n }')
    per_used=$(awk -v a="$used0" -v b="$used1" -v n="$n" 'BEGIN { printf "%.1f", (b - a) / n }')
  else
    echo "$server refused $shape: $(grep -m1 ERR "$work/pipe.log" || tail -1 "$work/pipe.log")" >&2
  fi
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  pid=""
}

echo "| shape | elements | redis RSS B/elem | redis used_memory B/elem | amalgam RSS B/elem | amalgam used_memory B/elem | amalgam/redis (RSS) | first write's RSS KiB (redis / amalgam) |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for shape in $SHAPES; do
  n=$(gen "$shape")
  measure redis "$REDIS_PORT" "$shape" "$n"
  r_rss=$per_rss r_used=$per_used r_first=$first_kib
  measure amalgam "$AMALGAM_PORT" "$shape" "$n"
  ratio=$(awk -v a="$per_rss" -v r="$r_rss" 'BEGIN { if (a + 0 > 0 && r + 0 > 0) printf "%.2f", a / r; else print "n/a" }')
  echo "| $shape | $n | $r_rss | $r_used | $per_rss | $per_used | $ratio | $r_first / $first_kib |"
done
