#!/usr/bin/env bash
# Collection commands' throughput with amalgam-bench (multi-threaded
# client): Amalgam's RESP port vs Debian's redis-server 7, side by side
# (issue 19 §6). compare-types-throughput.sh does the same with
# redis-benchmark, whose one client thread tops out near 450 k requests/s
# here at pipeline 16, so its pipelined ratios are a floor; this script's
# client (THREADS mio event loops) is not the first to saturate.
#
# For each command of COMMANDS: both servers are flushed, preloaded with
# KEYS collections of MEMBERS members each (one variadic HSET/LPUSH/SADD/
# ZADD per key, verified), then for each pipeline depth of PIPELINES RUNS
# alternating runs (redis, amalgam, redis, …) of `amalgam-bench net
# --protocol resp --command CMD`. HOT=1 adds the hot-key case: every
# connection alternates LPUSH and LPOP on one list (`--hot-key`).
# AMALGAM_FLAGS are added to amalgam's command line: `--eviction none`
# runs it as a store, as redis-server runs here (no maxmemory), instead
# of a cache of MEMORY_MB that reclaims the versions compact collections
# leave behind.
# Prints compare-common's table (median req/s, p99, server CPU-us per
# request, ratio) and keeps every run's JSON in OUT.
#
# Usage: [RUNS=3] [DURATION=6] [WARMUP=1] [KEYS=100000] [MEMBERS=10]
#        [THREADS=2] [CONNS=25] [PIPELINES="1 16"] [DISTRIBUTION=uniform]
#        [COMMANDS="hset hget lpush lpop sadd sismember zadd zrange zscore"]
#        [HOT=1] [SERVER_THREADS=2] [MEMORY_MB=1024] [AMALGAM_FLAGS="--eviction none"]
#        [REDIS_PORT=21679] [AMALGAM_PORT=21680] [AMALGAM_MC_PORT=21681]
#        [OUT=target/compare-types-net.jsonl] [NO_BUILD=1]
#        scripts/compare-types-net.sh
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-3}
DURATION=${DURATION:-6}
WARMUP=${WARMUP:-1}
KEYS=${KEYS:-100000}
MEMBERS=${MEMBERS:-10}
THREADS=${THREADS:-2}
CONNS=${CONNS:-25}
PIPELINES=${PIPELINES:-1 16}
DISTRIBUTION=${DISTRIBUTION:-uniform}
COMMANDS=${COMMANDS:-hset hget lpush lpop sadd sismember zadd zrange zscore}
HOT=${HOT:-1}
SERVER_THREADS=${SERVER_THREADS:-2}
MEMORY_MB=${MEMORY_MB:-1024}
REDIS_PORT=${REDIS_PORT:-21679}
AMALGAM_PORT=${AMALGAM_PORT:-21680}
AMALGAM_MC_PORT=${AMALGAM_MC_PORT:-21681}
OUT=${OUT:-target/compare-types-net.jsonl}
REDIS=${REDIS:-$(command -v redis-server || true)}
CLI=${CLI:-$(command -v redis-cli || true)}
[ -n "$REDIS" ] && [ -n "$CLI" ] || { echo "needs redis-server and redis-cli (apt-get install redis-server)" >&2; exit 1; }
command -v jq >/dev/null || { echo "jq not found (apt-get install jq)" >&2; exit 1; }

# shellcheck source=scripts/compare-common.sh
. scripts/compare-common.sh
build_release
free_ports "REDIS_PORT / AMALGAM_PORT / AMALGAM_MC_PORT" "$REDIS_PORT" "$AMALGAM_PORT" "$AMALGAM_MC_PORT"

"$REDIS" --bind 127.0.0.1 --port "$REDIS_PORT" --save '' --appendonly no --maxclients 4096 >/dev/null &
redis_pid=$!
pids+=("$redis_pid")
# shellcheck disable=SC2086 # AMALGAM_FLAGS is a list of flags
"$target_dir"/release/amalgam -l 127.0.0.1 -U 0 -t "$SERVER_THREADS" -m "$MEMORY_MB" -c 4096 -p "$AMALGAM_MC_PORT" \
  --resp-port "$AMALGAM_PORT" ${AMALGAM_FLAGS:-} >/dev/null &
amalgam_pid=$!
pids+=("$amalgam_pid")
wait_port "$REDIS_PORT" "$redis_pid"
wait_port "$AMALGAM_PORT" "$amalgam_pid"
port_of() { if [ "$1" = redis ]; then echo "$REDIS_PORT"; else echo "$AMALGAM_PORT"; fi; }
pid_of() { if [ "$1" = redis ]; then echo "$redis_pid"; else echo "$amalgam_pid"; fi; }

mkdir -p "$(dirname "$OUT")"
all=$(mktemp)
trap 'cleanup; rm -f "$all"' EXIT
base=(--protocol resp --key-bytes 16 --distribution "$DISTRIBUTION" --threads "$THREADS"
  --conns-per-thread "$CONNS" --members "$MEMBERS")
cases=()
for cmd in $COMMANDS; do cases+=("$cmd|--keys $KEYS"); done
[ "$HOT" != 1 ] || cases+=("lpush|--keys 1 --hot-key")
for c in "${cases[@]}"; do
  cmd=${c%%|*}
  read -ra extra <<<"${c#*|}"
  label=$cmd
  [[ "${c#*|}" != *--hot-key* ]] || label="$cmd-hot"
  for s in redis amalgam; do "$CLI" -p "$(port_of "$s")" FLUSHALL >/dev/null; done
  common=("${base[@]}" "${extra[@]}" --command "$cmd")
  cases_of=()
  for p in $PIPELINES; do cases_of+=("$label-p$p 1.0 $p"); done
  OUT=$all.one compare_runs redis "${cases_of[@]}"
  cat "$all.one" >>"$all"
done
rm -f "$all.one"
cp "$all" "$OUT"
echo "Amalgam (RESP) vs Redis $("$REDIS" --version | grep -o 'v=[0-9.]*' | cut -d= -f2): collection commands," \
  "$KEYS keys x $MEMBERS members ($DISTRIBUTION), $THREADS client threads x $CONNS conns, amalgam -t $SERVER_THREADS," \
  "${DURATION} s runs (+${WARMUP} s warm-up), median of $RUNS alternating runs per server (amalgam-bench net --command)"
echo
compare_table redis
echo
echo "Per-run JSON lines: $OUT"
