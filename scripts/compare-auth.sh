#!/bin/bash
# What authentication costs on the RESP port (issue 20 §6): redis-benchmark
# GET and SET at pipeline 1 and 16 against three servers in alternation —
# BASE_BIN (a build without authentication), NEW_BIN without a password,
# and NEW_BIN with --requirepass (redis-benchmark -a: every connection
# authenticated first) — printing requests per second and the server's CPU
# microseconds per request (utime+stime from /proc around the run).
# Usage: scripts/compare-auth.sh BASE_BIN NEW_BIN [ROUNDS]
# (docs/bench-log/2026-11-25-metrics-and-authentication.md § Authentication
# has a run.)
set -u
base=$1; new=$2; rounds=${3:-3}
run() {
  local label=$1 bin=$2 port=$3 p=$4; shift 4
  local sargs=() bargs=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do sargs+=("$1"); shift; done; shift
  bargs=("$@")
  "$bin" -p $((port+1)) --resp-port "$port" -t 2 -m 1024 -U 0 "${sargs[@]}" >/dev/null 2>&1 &
  local pid=$!
  for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
  local n=$((p==1 ? 200000 : 2000000))
  local t0=$(awk '{print $14+$15}' /proc/$pid/stat)
  out=$(redis-benchmark -p "$port" "${bargs[@]}" -t set,get -c 50 -d 32 -r 1048576 -n $n -P $p -q 2>/dev/null | tr "\r" "\n" | grep -oE "^(SET|GET): [0-9.]+" | tr '\n' ' ')
  local t1=$(awk '{print $14+$15}' /proc/$pid/stat)
  echo "$label P$p $out cpu_us_per_req=$(python3 -c "print(round(($t1-$t0)*10000/(2*$n),3))")"
  kill $pid; wait $pid 2>/dev/null
}
for r in $(seq $rounds); do
  for p in 1 16; do
    run base "$base" 23101 $p --
    run new "$new" 23111 $p --
    run new+auth "$new" 23121 $p --requirepass benchpw -- -a benchpw
  done
done
