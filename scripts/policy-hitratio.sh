#!/usr/bin/env bash
# Miss ratio of Redis's maxmemory policies beside Amalgam's (issue 35 §5
# and §7): the self-filling Zipf stream of scripts/cache-hitratio.sh
# (`amalgam-bench replay`: θ = 0.99, 95% GET / 5% SET, every miss refilled,
# WARMUP_OPS warm-up then OPS counted), over RESP, against a fresh
# redis-server and a fresh amalgam per run, both with the same maxmemory
# (MEGABYTES, each in MiB: Redis's `--maxmemory`, Amalgam's `-m`).
#
# Two cases:
# * allkeys: Redis with allkeys-lru, allkeys-lfu and allkeys-random;
#   Amalgam with allkeys-lru, which its cache serves with S3-FIFO (the
#   default --eviction): is S3-FIFO's miss ratio at or below Redis's LRU
#   and LFU (issue 35 §5's condition for serving allkeys-* with it)?
# * volatile: every other key written with a TTL (`--ttl-every 2`, a day:
#   nothing expires in a run), Redis and Amalgam both with volatile-lru:
#   only the keys with a TTL may go, so the keys without one fill the
#   memory as they come (issue 35 §7).
#
# The same maxmemory holds different numbers of keys in the two servers
# (Redis's per-key overhead against Amalgam's segments and index): the
# keys each held at the end are printed beside the miss ratio, which is
# what a user of either sees at that setting. Counts only: a busy
# machine changes how long a run takes, not its figures; ROUNDS > 1 runs
# each server that many times, alternating, and the table shows each
# run's figure.
#
# Usage: [KEYS=1048576] [OPS=1000000] [WARMUP_OPS=2000000] [MEGABYTES="12 30"]
#        [ROUNDS=1] [KEY_BYTES=16] [VALUE_BYTES=32] [BATCH=64] [SEED=1]
#        [SERVER_THREADS=2] [REDIS_PORT=41331] [AMALGAM_PORT=41332]
#        [REDIS=redis-server] [AMALGAM=target/release/amalgam]
#        [OUT=target/policy-hitratio.jsonl] [NO_BUILD=1] scripts/policy-hitratio.sh
set -euo pipefail
cd "$(dirname "$0")/.."

KEYS=${KEYS:-1048576}
OPS=${OPS:-1000000}
WARMUP_OPS=${WARMUP_OPS:-2000000}
MEGABYTES=${MEGABYTES:-12 30}
ROUNDS=${ROUNDS:-1}
KEY_BYTES=${KEY_BYTES:-16}
VALUE_BYTES=${VALUE_BYTES:-32}
BATCH=${BATCH:-64}
SEED=${SEED:-1}
SERVER_THREADS=${SERVER_THREADS:-2}
REDIS_PORT=${REDIS_PORT:-41331}
AMALGAM_PORT=${AMALGAM_PORT:-41332}
REDIS=${REDIS:-redis-server}
target_dir=${CARGO_TARGET_DIR:-target}
AMALGAM=${AMALGAM:-$target_dir/release/amalgam}
OUT=${OUT:-target/policy-hitratio.jsonl}
bench=$target_dir/release/amalgam-bench

command -v jq >/dev/null || { echo "jq not found (apt-get install jq)" >&2; exit 1; }
command -v "$REDIS" >/dev/null || { echo "$REDIS not found (apt-get install redis-server)" >&2; exit 1; }
[ -n "${NO_BUILD:-}" ] || nice -n 19 cargo build --release -q -p amalgam-bench -p amalgam-server
[ -x "$bench" ] && [ -x "$AMALGAM" ] || { echo "$bench or $AMALGAM not built" >&2; exit 1; }
mkdir -p "$(dirname "$OUT")"
: >"$OUT"
tmp=$(mktemp)
pid=""
stop() {
  [ -z "$pid" ] || { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
  pid=""
}
trap 'stop; rm -f "$tmp"' EXIT
trap 'exit 130' INT TERM

listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# serve PEER MB POLICY: starts a fresh server, waits until it listens; sets
# $pid and $port.
serve() {
  local peer=$1 mb=$2 policy=$3
  if [ "$peer" = redis ]; then
    port=$REDIS_PORT
    "$REDIS" --port "$port" --bind 127.0.0.1 --save '' --appendonly no --maxmemory "${mb}mb" \
      --maxmemory-policy "$policy" >/dev/null &
  else
    port=$AMALGAM_PORT
    "$AMALGAM" -l 127.0.0.1 -U 0 -p 0 --resp-port "$port" -m "$mb" -t "$SERVER_THREADS" \
      --maxmemory-policy "$policy" &
  fi
  pid=$!
  for _ in $(seq 1 200); do
    kill -0 "$pid" 2>/dev/null || { echo "$peer on port $port exited" >&2; exit 1; }
    listening "$port" && return 0
    sleep 0.05
  done
  echo "$peer: nothing listening on port $port" >&2
  exit 1
}

# run CASE PEER MB POLICY [replay flags...]
run() {
  local case=$1 peer=$2 mb=$3 policy=$4
  shift 4
  serve "$peer" "$mb" "$policy"
  "$bench" replay --server "127.0.0.1:$port" --protocol resp --keys "$KEYS" --ops "$OPS" \
    --warmup-ops "$WARMUP_OPS" --key-bytes "$KEY_BYTES" --value-bytes "$VALUE_BYTES" --batch "$BATCH" \
    --seed "$SEED" --pid "$pid" --label "$peer" --json "$tmp" "$@" >&2
  jq -c --arg case "$case" --arg policy "$policy" --argjson mb "$mb" \
    '. + {case: $case, policy: $policy, memory_mb: $mb}' "$tmp" >>"$OUT"
  stop
}

for mb in $MEGABYTES; do
  for round in $(seq 1 "$ROUNDS"); do
    echo "== ${mb} MiB, round $round" >&2
    run allkeys amalgam "$mb" allkeys-lru
    for p in allkeys-lru allkeys-lfu allkeys-random; do run allkeys redis "$mb" "$p"; done
    run volatile amalgam "$mb" volatile-lru --ttl-every 2
    run volatile redis "$mb" volatile-lru --ttl-every 2
  done
done

echo "replay over RESP: $("$REDIS" --version | cut -d' ' -f3) vs amalgam ($AMALGAM, -t $SERVER_THREADS);" \
  "$KEYS keys of $KEY_BYTES B / $VALUE_BYTES B; Zipf 0.99, 95% GET / 5% SET, each miss refilled;" \
  "$WARMUP_OPS warm-up + $OPS counted ops; batch $BATCH, seed $SEED; volatile case: every other key with a TTL"
echo
jq -rs '
  def pct: if . == null then "-" else (. * 10000 | round / 100 | tostring) + "%" end;
  "| case | maxmemory MiB | server | maxmemory-policy | miss ratio | keys held at the end | SETs refused |",
  "|---|---:|---|---|---:|---:|---:|",
  (.[] | "| \(.case) | \(.memory_mb) | \(.label) | \(.policy) | \(.miss_ratio | pct) | \(.curr_items_end) | \(.sets_refused) |")
' "$OUT"
echo
echo "Per-run JSON lines: $OUT"
