#!/usr/bin/env bash
# Items held under an overwrite-heavy load: memcached vs amalgam (merging
# mostly-dead segments, the default) vs amalgam --merge-segments=false
# (eviction alone) (docs/cache-mode.md § "Dead space under overwrites").
#
# For each of RUNS rounds, each server is started fresh with -m MEMORY_MB
# -t 2 and driven for DURATION seconds by `amalgam-bench net --workload
# memc3 --keys KEYS --get-fraction 0.5 --pipeline 8` (Zipf 0.99, 16 B keys,
# 32 B values, 2 client threads x 25 connections, no preload: a GET miss is
# just a miss), then its stats are read. Prints one line per server and
# round: requests/s, hit %, curr_items, bytes (live item bytes), evictions
# and VmRSS. The window is the same time for every server, not the same
# number of operations: a slower server has seen fewer overwrites.
#
# Usage: [RUNS=2] [DURATION=15] [KEYS=4194304] [MEMORY_MB=64] [PORT=41940]
#        [CARGO_TARGET_DIR=target] scripts/cache-overwrite.sh   (release binaries must be built)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-2}
DURATION=${DURATION:-15}
KEYS=${KEYS:-4194304}
MEMORY_MB=${MEMORY_MB:-64}
PORT=${PORT:-41940}
B=${CARGO_TARGET_DIR:-target}/release
[ -x "$B/amalgam" ] && [ -x "$B/amalgam-bench" ] || { echo "build first: cargo build --release -p amalgam-server -p amalgam-bench" >&2; exit 1; }
command -v memcached >/dev/null || { echo "memcached not found (apt-get install memcached)" >&2; exit 1; }
user=(); [ "$(id -u)" -ne 0 ] || user=(-u nobody)
pid=""
trap '[ -z "$pid" ] || kill "$pid" 2>/dev/null || true' EXIT
for r in $(seq 1 "$RUNS"); do
  for s in memcached amalgam amalgam-no-merge; do
    case $s in
      memcached) memcached "${user[@]}" -l 127.0.0.1 -p "$PORT" -t 2 -m "$MEMORY_MB" -c 4096 -U 0 >/dev/null 2>&1 & ;;
      amalgam) "$B/amalgam" -l 127.0.0.1 -p "$PORT" --resp-port 0 -t 2 -m "$MEMORY_MB" -c 4096 >/dev/null 2>&1 & ;;
      amalgam-no-merge) "$B/amalgam" -l 127.0.0.1 -p "$PORT" --resp-port 0 -t 2 -m "$MEMORY_MB" -c 4096 --merge-segments=false >/dev/null 2>&1 & ;;
    esac
    pid=$!
    sleep 1
    line=$("$B/amalgam-bench" net --server "127.0.0.1:$PORT" --server-pid "$pid" --workload memc3 --keys "$KEYS" \
      --get-fraction 0.5 --no-preload --threads 2 --conns-per-thread 25 --pipeline 8 --duration "$DURATION" --warmup 0 2>&1 | tail -n 1)
    stats=$(printf 'stats\r\nquit\r\n' | nc -q1 127.0.0.1 "$PORT" | tr -d '\r')
    stat() { echo "$stats" | awk -v k="$1" '$2 == k { print $3 }'; }
    echo "run $r $s: req/s $(echo "$line" | awk '{print $1}') hit% $(echo "$line" | awk '{print $3}')" \
      "curr_items $(stat curr_items) bytes $(stat bytes) evictions $(stat evictions)" \
      "VmRSS_kB $(awk '/VmRSS/ {print $2}' "/proc/$pid/status")"
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    pid=""
    sleep 0.5
  done
done
