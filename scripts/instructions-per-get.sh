#!/usr/bin/env bash
# User-space instructions an amalgam executes per RESP GET, counted by
# valgrind's callgrind (hardware counters are not available here): a
# figure that, unlike throughput on a shared machine, does not move with
# the load, so two builds can be compared to a few instructions.
#
# For each binary given: starts it under callgrind (-t 1, RESP on a free
# port), SETs KEYS keys with redis-benchmark, then for pipeline 1 and 16
# zeroes the counters (callgrind_control -z), sends GETS GETs from one
# connection (redis-benchmark -t get -c 1 -P p -r KEYS) and dumps the
# counters. Prints instructions per GET (the whole process: parse,
# execute, reply, the event loop and the syscalls' user side; not the
# kernel). redis-benchmark's keys are random but seeded the same each run,
# so both builds see the same stream; how many GETs one read brings at
# pipeline 16 still varies a little from run to run (a few instructions
# per GET: run each binary twice to see it).
#
# OP=set counts SETs instead (redis-benchmark -t set, the same way).
#
# Usage: [OP=get|set] [GETS=40000] [KEYS=1000] scripts/instructions-per-get.sh BIN [BIN ...]
set -euo pipefail
OP=${OP:-get}
GETS=${GETS:-40000}
KEYS=${KEYS:-1000}
[ $# -gt 0 ] || { echo "usage: $0 path/to/amalgam [more ...]" >&2; exit 1; }
for tool in valgrind callgrind_control redis-benchmark; do
  command -v "$tool" >/dev/null || { echo "$tool not found (apt-get install valgrind redis-tools)" >&2; exit 1; }
done
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

for bin in "$@"; do
  dir=$(mktemp -d)
  port=$(free_port)
  valgrind --tool=callgrind --callgrind-out-file="$dir/cg.%p" "$bin" -l 127.0.0.1 -U 0 -t 1 -m 64 \
    -p "$(free_port)" --resp-port "$port" >"$dir/log" 2>&1 &
  vpid=$!
  # Bounded: valgrind starts in seconds; 60 s at most.
  for _ in $(seq 600); do listening "$port" && break; sleep 0.1; done
  redis-benchmark -p "$port" -t set -n "$KEYS" -r "$KEYS" -c 1 -q >/dev/null 2>&1
  row="$bin:"
  for p in 1 16; do
    callgrind_control -z "$vpid" >/dev/null 2>&1
    redis-benchmark -p "$port" -t "$OP" -n "$GETS" -r "$KEYS" -c 1 -P "$p" -q >/dev/null 2>&1
    callgrind_control -d "p$p" "$vpid" >/dev/null 2>&1
    f=$(grep -l "Trigger: dump p$p" "$dir"/cg.* | head -1)
    ir=$(awk '/^summary:/ { print $2 }' "$f")
    row="$row p$p $(awk -v i="$ir" -v n="$GETS" 'BEGIN { printf "%.0f", i / n }') instructions/${OP^^};"
  done
  kill "$vpid" 2>/dev/null || true
  wait "$vpid" 2>/dev/null || true
  rm -rf "$dir"
  echo "$row"
done
