#!/usr/bin/env bash
# What per-command accounting and the /metrics endpoint cost (issue 21 §2,
# §5): an A/B of two amalgam builds on the RESP port, GET-only at
# pipeline 1 and 16, with amalgam-bench.
#
# BASE is an amalgam built without the change (e.g. the commit before it,
# built with CARGO_TARGET_DIR elsewhere); the other is this tree's
# target/release/amalgam. Both run at once (-t SERVER_THREADS, on their
# own ports), are preloaded with KEYS keys (16 B keys, 32 B values), and
# are measured in alternation (base, amalgam, base, …) RUNS times per case,
# as scripts/compare-redis.sh measures Redis and Amalgam (same
# amalgam-bench flags, same table: median req/s, p99, server CPU µs per
# request). With SCRAPE=1 this build also serves --metrics-port
# METRICS_PORT and is scraped with curl every SCRAPE_EVERY seconds for
# the whole run (the issue's "metrics on and scraped every second").
#
# Usage: BASE=/path/to/amalgam [SCRAPE=1] [SCRAPE_EVERY=1] [DURATION=6]
#        [WARMUP=1] [RUNS=4] [KEYS=1048576] [THREADS=2] [CONNS=25]
#        [SERVER_THREADS=2] [MEMORY_MB=1024] [BASE_PORT=46391]
#        [AMALGAM_PORT=46392] [METRICS_PORT=46393] [NO_BUILD=1]
#        [OUT=target/compare-metrics.jsonl] scripts/compare-metrics.sh
set -euo pipefail
cd "$(dirname "$0")/.."

[ -n "${BASE:-}" ] && [ -x "$BASE" ] || { echo "give BASE=/path/to/the/other/amalgam" >&2; exit 1; }
command -v jq >/dev/null || { echo "jq not found (apt-get install jq)" >&2; exit 1; }
DURATION=${DURATION:-6}
WARMUP=${WARMUP:-1}
RUNS=${RUNS:-4}
KEYS=${KEYS:-1048576}
THREADS=${THREADS:-2}
CONNS=${CONNS:-25}
SERVER_THREADS=${SERVER_THREADS:-2}
MEMORY_MB=${MEMORY_MB:-1024}
DISTRIBUTION=${DISTRIBUTION:-zipf}
BASE_PORT=${BASE_PORT:-46391}
AMALGAM_PORT=${AMALGAM_PORT:-46392}
METRICS_PORT=${METRICS_PORT:-46393}
SCRAPE_EVERY=${SCRAPE_EVERY:-1}
OUT=${OUT:-target/compare-metrics.jsonl}

# shellcheck source=scripts/compare-common.sh
. scripts/compare-common.sh
build_release
free_ports "BASE_PORT / AMALGAM_PORT / METRICS_PORT" "$BASE_PORT" "$AMALGAM_PORT" "$METRICS_PORT" $((BASE_PORT + 10)) $((AMALGAM_PORT + 10))

server_flags=(-l 127.0.0.1 -U 0 -t "$SERVER_THREADS" -m "$MEMORY_MB" -c 4096)
"$BASE" "${server_flags[@]}" -p $((BASE_PORT + 10)) --resp-port "$BASE_PORT" &
base_pid=$!
pids+=("$base_pid")
extra=()
[ -z "${SCRAPE:-}" ] || extra=(--metrics-port "$METRICS_PORT")
"$target_dir"/release/amalgam "${server_flags[@]}" -p $((AMALGAM_PORT + 10)) --resp-port "$AMALGAM_PORT" "${extra[@]}" &
amalgam_pid=$!
pids+=("$amalgam_pid")
wait_port "$BASE_PORT" "$base_pid"
wait_port "$AMALGAM_PORT" "$amalgam_pid"
if [ -n "${SCRAPE:-}" ]; then
  wait_port "$METRICS_PORT" "$amalgam_pid"
  # Bounded by the script's life: killed with the servers on exit.
  (while curl -sf -o /dev/null "http://127.0.0.1:$METRICS_PORT/metrics"; do sleep "$SCRAPE_EVERY"; done) &
  pids+=($!)
fi

common=(--protocol resp --workload memc3 --key-bytes 16 --value-bytes 32 --distribution "$DISTRIBUTION"
  --keys "$KEYS" --threads "$THREADS" --conns-per-thread "$CONNS" --multiget 1)
port_of() { if [ "$1" = base ]; then echo "$BASE_PORT"; else echo "$AMALGAM_PORT"; fi; }
pid_of() { if [ "$1" = base ]; then echo "$base_pid"; else echo "$amalgam_pid"; fi; }

mkdir -p "$(dirname "$OUT")"
compare_runs base "get-p1 1.0 1" "get-p16 1.0 16"

echo "amalgam ($target_dir/release/amalgam${SCRAPE:+, --metrics-port scraped every ${SCRAPE_EVERY} s}) vs base ($BASE):" \
  "16 B keys / 32 B values, $DISTRIBUTION, $KEYS keys, $THREADS client threads x $CONNS conns, -t $SERVER_THREADS," \
  "${DURATION} s runs (+${WARMUP} s warm-up), median of $RUNS alternating runs (amalgam-bench net)"
echo
compare_table base
echo
echo "Per-run JSON lines: $OUT"
