#!/usr/bin/env bash
# Amalgam's RESP port vs Debian's redis-server 7 over the network, side by
# side (issue 6 §6).
#
# Builds amalgam and amalgam-bench (release), starts redis-server (no
# persistence: --save '' --appendonly no) and amalgam (-t SERVER_THREADS,
# RESP on AMALGAM_PORT), preloads KEYS keys (16 B keys, 32 B values) into
# each over RESP, then for each case
#   {GET-only, SET-only} x {pipeline 1, pipeline 16}
# runs `amalgam-bench net --protocol resp` RUNS times per server,
# alternating (redis, amalgam, redis, amalgam, ...), THREADS client threads
# x CONNS connections each (50 connections by default). Prints a markdown
# table: per server the median requests/s, p99 and server CPU-us per
# request, and the ratio amalgam / redis of the medians. Then, unless
# NO_REDIS_BENCHMARK=1, the same four cases with Redis's own
# redis-benchmark (-c 50, -d 32, -r KEYS random keys, -n REQUESTS) against
# both, as a second table. Every amalgam-bench run's JSON goes to OUT (one
# line each, with "case" and "run" added); the runs' reports go to stderr.
#
# Both servers are killed on exit. The client shares the machine with the
# servers: on few cores, read the client CPU column (in OUT) too. Redis
# executes commands on one thread; amalgam on SERVER_THREADS.
#
# Usage: [DURATION=10] [WARMUP=2] [RUNS=3] [KEYS=1048576] [THREADS=2]
#        [CONNS=25] [SERVER_THREADS=2] [MEMORY_MB=1024] [DISTRIBUTION=zipf]
#        [REDIS_PORT=46379] [AMALGAM_PORT=46380] [AMALGAM_MC_PORT=41213]
#        [REQUESTS=2000000] [NO_REDIS_BENCHMARK=1]
#        [OUT=target/compare-redis.jsonl] [NO_BUILD=1] scripts/compare-redis.sh
# NO_BUILD=1 uses the release binaries already in target/.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-10}
WARMUP=${WARMUP:-2}
RUNS=${RUNS:-3}
KEYS=${KEYS:-1048576}
THREADS=${THREADS:-2}
CONNS=${CONNS:-25}
SERVER_THREADS=${SERVER_THREADS:-2}
MEMORY_MB=${MEMORY_MB:-1024}
DISTRIBUTION=${DISTRIBUTION:-zipf}
REDIS_PORT=${REDIS_PORT:-46379}
AMALGAM_PORT=${AMALGAM_PORT:-46380}
AMALGAM_MC_PORT=${AMALGAM_MC_PORT:-41213}
REQUESTS=${REQUESTS:-2000000}
OUT=${OUT:-target/compare-redis.jsonl}
REDIS=${REDIS:-$(command -v redis-server || true)}
REDIS_BENCHMARK=${REDIS_BENCHMARK:-$(command -v redis-benchmark || true)}

[ -n "$REDIS" ] || { echo "redis-server not found (apt-get install redis-server)" >&2; exit 1; }
command -v jq >/dev/null || { echo "jq not found (apt-get install jq)" >&2; exit 1; }

# shellcheck source=scripts/compare-common.sh
. scripts/compare-common.sh
build_release
free_ports "REDIS_PORT / AMALGAM_PORT / AMALGAM_MC_PORT" "$REDIS_PORT" "$AMALGAM_PORT" "$AMALGAM_MC_PORT"

"$REDIS" --bind 127.0.0.1 --port "$REDIS_PORT" --save '' --appendonly no --maxclients 4096 \
  --maxmemory "${MEMORY_MB}mb" >/dev/null &
redis_pid=$!
pids+=("$redis_pid")
"$target_dir"/release/amalgam -l 127.0.0.1 -U 0 -t "$SERVER_THREADS" -m "$MEMORY_MB" -c 4096 -p "$AMALGAM_MC_PORT" \
  --resp-port "$AMALGAM_PORT" &
amalgam_pid=$!
pids+=("$amalgam_pid")
wait_port "$REDIS_PORT" "$redis_pid"
wait_port "$AMALGAM_PORT" "$amalgam_pid"

common=(--protocol resp --workload memc3 --key-bytes 16 --value-bytes 32 --distribution "$DISTRIBUTION"
  --keys "$KEYS" --threads "$THREADS" --conns-per-thread "$CONNS" --multiget 1)
port_of() { if [ "$1" = redis ]; then echo "$REDIS_PORT"; else echo "$AMALGAM_PORT"; fi; }
pid_of() { if [ "$1" = redis ]; then echo "$redis_pid"; else echo "$amalgam_pid"; fi; }

mkdir -p "$(dirname "$OUT")"
compare_runs redis "get-p1 1.0 1" "get-p16 1.0 16" "set-p1 0.0 1" "set-p16 0.0 16"

echo "Amalgam (RESP) vs Redis $("$REDIS" --version | grep -o 'v=[0-9.]*' | cut -d= -f2): 16 B keys / 32 B values," \
  "$DISTRIBUTION, $KEYS keys preloaded, $THREADS client threads x $CONNS conns, amalgam -t $SERVER_THREADS," \
  "${DURATION} s runs (+${WARMUP} s warm-up), median of $RUNS alternating runs per server (amalgam-bench net)"
echo
compare_table redis
echo
echo "Per-run JSON lines: $OUT"

if [ -z "${NO_REDIS_BENCHMARK:-}" ] && [ -n "$REDIS_BENCHMARK" ]; then
  echo
  echo "redis-benchmark (-c 50 -d 32 -r $KEYS -n $REQUESTS), requests/s and p99 ms; the same binary against both:"
  echo
  echo "| case | redis req/s | amalgam req/s | amalgam / redis | redis p99 ms | amalgam p99 ms |"
  echo "|---|---:|---:|---:|---:|---:|"
  for t in get set; do
    for pipeline in 1 16; do
      row=()
      for s in redis amalgam; do
        # --csv: "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
        line=$("$REDIS_BENCHMARK" -h 127.0.0.1 -p "$(port_of $s)" -t "$t" -c 50 -d 32 -r "$KEYS" -n "$REQUESTS" \
          -P "$pipeline" --csv | tail -n 1 | tr -d '"')
        row+=("$(cut -d, -f2 <<<"$line")" "$(cut -d, -f7 <<<"$line")")
      done
      ratio=$(awk -v r="${row[0]}" -v a="${row[2]}" 'BEGIN { if (r > 0) printf "%.3f", a / r; else print "-" }')
      echo "| $t-p$pipeline | ${row[0]} | ${row[2]} | $ratio | ${row[1]} | ${row[3]} |"
    done
  done
fi
