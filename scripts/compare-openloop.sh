#!/usr/bin/env bash
# Tail latency at fixed request rates (open loop, issue 21 §4): Amalgam vs
# Debian's memcached (PEER=memcached, text protocol) or redis-server
# (PEER=redis, RESP to both), GET-only, latency timed from each request's
# due time (coordinated omission corrected; see
# crates/amalgam-bench/src/net/schedule.rs).
#
# Starts both servers as scripts/compare-memcached.sh (compare-redis.sh)
# does, preloads KEYS
# keys (16 B keys, 32 B values) into each, measures each server's
# closed-loop maximum (pipeline 1, THREADS x CONNS connections), then runs
# `amalgam-bench net --rates` at PERCENTS of the LOWER of the two maxima
# (so both servers get the same rates; RATES=A,B,... fixes them instead),
# RUNS rounds alternating peer, amalgam, peer, ... Every run's JSON goes to OUT (one line
# per run and rate, with "run" added); prints the median p50/p99 per server
# and rate as a markdown table, and draws the plots into PLOTS
# (`amalgam-bench plot`: latency.svg, rate.svg).
#
# Usage: [PEER=memcached|redis] [DURATION=5] [WARMUP=1] [RUNS=3]
#        [PERCENTS=30,60] [RATES=] [KEYS=1048576]
#        [THREADS=2] [CONNS=25] [SERVER_THREADS=2] [MEMORY_MB=1024]
#        [PEER_PORT=21311] [AMALGAM_PORT=21312]
#        [OUT=target/compare-openloop.jsonl] [PLOTS=target/plots-openloop]
#        [NO_BUILD=1] scripts/compare-openloop.sh
set -euo pipefail
cd "$(dirname "$0")/.."

PEER=${PEER:-memcached}
DURATION=${DURATION:-5}
WARMUP=${WARMUP:-1}
RUNS=${RUNS:-3}
PERCENTS=${PERCENTS:-30,60}
RATES=${RATES:-}
KEYS=${KEYS:-1048576}
THREADS=${THREADS:-2}
CONNS=${CONNS:-25}
SERVER_THREADS=${SERVER_THREADS:-2}
MEMORY_MB=${MEMORY_MB:-1024}
PEER_PORT=${PEER_PORT:-21311}
AMALGAM_PORT=${AMALGAM_PORT:-21312}
OUT=${OUT:-target/compare-openloop.jsonl}
PLOTS=${PLOTS:-target/plots-openloop}
case $PEER in
  memcached) peer_bin=$(command -v memcached || true) protocol=text ;;
  redis) peer_bin=$(command -v redis-server || true) protocol=resp ;;
  *) echo "PEER must be memcached or redis" >&2; exit 1 ;;
esac
[ -n "$peer_bin" ] || { echo "$PEER not found (apt-get install ${PEER/redis/redis-server})" >&2; exit 1; }
command -v jq >/dev/null || { echo "jq not found (apt-get install jq)" >&2; exit 1; }

# shellcheck source=scripts/compare-common.sh
. scripts/compare-common.sh
build_release
free_ports "PEER_PORT / AMALGAM_PORT" "$PEER_PORT" "$AMALGAM_PORT"

if [ "$PEER" = memcached ]; then
  "$peer_bin" -u root -l 127.0.0.1 -U 0 -t "$SERVER_THREADS" -m "$MEMORY_MB" -c 4096 -p "$PEER_PORT" &
  peer_pid=$!
  amalgam_ports=(-p "$AMALGAM_PORT" --resp-port 0)
else
  "$peer_bin" --bind 127.0.0.1 --port "$PEER_PORT" --save '' --appendonly no --maxclients 4096 \
    --maxmemory "${MEMORY_MB}mb" >/dev/null &
  peer_pid=$!
  # The memcached port on the next port up, unused by the runs.
  amalgam_ports=(-p "$((AMALGAM_PORT + 1))" --resp-port "$AMALGAM_PORT")
fi
pids+=("$peer_pid")
"$target_dir"/release/amalgam -l 127.0.0.1 -U 0 -t "$SERVER_THREADS" -m "$MEMORY_MB" -c 4096 "${amalgam_ports[@]}" &
amalgam_pid=$!
pids+=("$amalgam_pid")
wait_port "$PEER_PORT" "$peer_pid"
wait_port "$AMALGAM_PORT" "$amalgam_pid"
port_of() { if [ "$1" = amalgam ]; then echo "$AMALGAM_PORT"; else echo "$PEER_PORT"; fi; }
pid_of() { if [ "$1" = amalgam ]; then echo "$amalgam_pid"; else echo "$peer_pid"; fi; }

common=(--protocol "$protocol" --workload memc3 --key-bytes 16 --value-bytes 32 --distribution zipf --get-fraction 1
  --keys "$KEYS" --threads "$THREADS" --conns-per-thread "$CONNS" --server-threads "$SERVER_THREADS")
mkdir -p "$(dirname "$OUT")"
tmp=$(mktemp)
trap 'rm -f "$tmp"; cleanup' EXIT

for s in "$PEER" amalgam; do
  "$bench" net "${common[@]}" --server "127.0.0.1:$(port_of "$s")" --preload-only --label "$s" >&2
done
# Closed-loop maximum of each; the rates are PERCENTS of the lower one.
max=
for s in "$PEER" amalgam; do
  "$bench" net "${common[@]}" --server "127.0.0.1:$(port_of "$s")" --no-preload --duration "$DURATION" \
    --warmup "$WARMUP" --server-pid "$(pid_of "$s")" --label "$s" --json "$tmp" >&2
  r=$(jq '.requests_per_s | floor' "$tmp")
  echo "closed-loop maximum of $s: $r requests/s" >&2
  if [ -z "$max" ] || [ "$r" -lt "$max" ]; then max=$r; fi
done
if [ -n "$RATES" ]; then
  rates=$RATES
  echo "rates: $rates requests/s (RATES)" >&2
else
  rates=$(echo "$PERCENTS" | tr ',' '\n' | awk -v m="$max" '{ printf "%s%d", (NR > 1 ? "," : ""), m * $1 / 100 }')
  echo "rates: $rates requests/s ($PERCENTS% of $max)" >&2
fi

: >"$OUT"
for run in $(seq 1 "$RUNS"); do
  for s in "$PEER" amalgam; do
    kill -0 "$(pid_of "$s")" 2>/dev/null || { echo "$s died" >&2; exit 1; }
    "$bench" net "${common[@]}" --server "127.0.0.1:$(port_of "$s")" --no-preload --rates "$rates" \
      --duration "$DURATION" --warmup "$WARMUP" --server-pid "$(pid_of "$s")" --label "$s" --json "$tmp" >&2
    jq -c --argjson run "$run" --argjson max "$max" '. + {run: $run, closed_loop_max: $max}' "$tmp" >>"$OUT"
  done
done

echo "| server | target req/s | achieved req/s (median) | p50 µs | p99 µs | p99.9 µs | p99 per run µs |"
echo "|---|---:|---:|---:|---:|---:|---|"
jq -rs '
  def median: sort | if length % 2 == 1 then .[length / 2 | floor] else (.[length / 2 - 1] + .[length / 2]) / 2 end;
  group_by([.label, .target_rate])[]
  | [ .[0].label, (.[0].target_rate | floor),
      (map(.requests_per_s) | median | floor),
      (map(.latency_us.p50) | median | floor),
      (map(.latency_us.p99) | median | floor),
      (map(.latency_us.p999) | median | floor),
      (map(.latency_us.p99 | floor | tostring) | join(", ")) ]
  | "| " + (map(tostring) | join(" | ")) + " |"' "$OUT"
"$bench" plot --out "$PLOTS" "$OUT" >&2
