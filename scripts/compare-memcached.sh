#!/usr/bin/env bash
# Amalgam vs Debian's memcached over the network, side by side (issue 3 §6).
#
# Builds amalgam and amalgam-bench (release), starts memcached and amalgam
# with the same threads and memory on two ports, preloads KEYS keys
# (16 B keys, 32 B values) into each, then for each case
#   {GET-only, 90% GET / 10% SET} x {pipeline 1, pipeline 16}
# runs `amalgam-bench net` RUNS times per server, alternating
# (memcached, amalgam, memcached, amalgam, ...), THREADS client threads x
# CONNS connections each. Prints a markdown table to stdout: per server the
# median requests/s, p99 and server CPU-us per request, and the ratio
# amalgam / memcached of the medians. Every run's JSON goes to OUT (one line
# each, with "case" and "run" added); the runs' own reports go to stderr.
#
# Both servers are killed on exit. The client shares the machine with the
# servers: on few cores, read the client CPU column (in OUT) too.
#
# Reading pipeline 16: memcached 1.6.18 answers pipelined text `get`s with
# one sendmsg per command (strace: 16 `get`s in one read, 16 sendmsg), so
# its CPU per request barely drops with depth; MULTIGET=16 (one `get` of 16
# keys) shows both servers batching.
#
# Usage: [DURATION=10] [WARMUP=2] [RUNS=3] [KEYS=1048576] [THREADS=2]
#        [CONNS=25] [SERVER_THREADS=2] [MEMORY_MB=1024] [PROTOCOL=text] [MULTIGET=1]
#        [DISTRIBUTION=zipf] [MEMCACHED_PORT=41211] [AMALGAM_PORT=41212]
#        [OUT=target/compare-memcached.jsonl] [NO_BUILD=1] scripts/compare-memcached.sh
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
PROTOCOL=${PROTOCOL:-text}
MULTIGET=${MULTIGET:-1}
DISTRIBUTION=${DISTRIBUTION:-zipf}
MEMCACHED_PORT=${MEMCACHED_PORT:-41211}
AMALGAM_PORT=${AMALGAM_PORT:-41212}
OUT=${OUT:-target/compare-memcached.jsonl}
MEMCACHED=${MEMCACHED:-$(command -v memcached || true)}

[ -n "$MEMCACHED" ] || { echo "memcached not found (apt-get install memcached)" >&2; exit 1; }
command -v jq >/dev/null || { echo "jq not found (apt-get install jq)" >&2; exit 1; }

# shellcheck source=scripts/compare-common.sh
. scripts/compare-common.sh
build_release
free_ports "MEMCACHED_PORT / AMALGAM_PORT" "$MEMCACHED_PORT" "$AMALGAM_PORT"

user=()
[ "$(id -u)" -ne 0 ] || user=(-u root)
"$MEMCACHED" "${user[@]}" -l 127.0.0.1 -U 0 -t "$SERVER_THREADS" -m "$MEMORY_MB" -c 4096 -p "$MEMCACHED_PORT" &
memcached_pid=$!
pids+=("$memcached_pid")
"$target_dir"/release/amalgam -l 127.0.0.1 -U 0 -t "$SERVER_THREADS" -m "$MEMORY_MB" -c 4096 -p "$AMALGAM_PORT" --resp-port 0 &
amalgam_pid=$!
pids+=("$amalgam_pid")
wait_port "$MEMCACHED_PORT" "$memcached_pid"
wait_port "$AMALGAM_PORT" "$amalgam_pid"

common=(--protocol "$PROTOCOL" --workload memc3 --key-bytes 16 --value-bytes 32 --distribution "$DISTRIBUTION"
  --keys "$KEYS" --threads "$THREADS" --conns-per-thread "$CONNS" --multiget "$MULTIGET")
port_of() { if [ "$1" = memcached ]; then echo "$MEMCACHED_PORT"; else echo "$AMALGAM_PORT"; fi; }
pid_of() { if [ "$1" = memcached ]; then echo "$memcached_pid"; else echo "$amalgam_pid"; fi; }

mkdir -p "$(dirname "$OUT")"
compare_runs memcached "get100-p1 1.0 1" "get100-p16 1.0 16" "get90-p1 0.9 1" "get90-p16 0.9 16"

echo "Amalgam vs memcached $("$MEMCACHED" -V | cut -d' ' -f2): $PROTOCOL protocol, multiget $MULTIGET, 16 B keys / 32 B values," \
  "$DISTRIBUTION, $KEYS keys preloaded, $THREADS client threads x $CONNS conns, $SERVER_THREADS server threads," \
  "${DURATION} s runs (+${WARMUP} s warm-up), median of $RUNS alternating runs per server"
echo
compare_table memcached
echo
echo "Per-run JSON lines: $OUT"
