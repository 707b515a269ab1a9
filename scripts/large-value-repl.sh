#!/usr/bin/env bash
# A large RESP SET on a primary with one replica attached (issue 18 §5,
# docs/bench-log/2026-11-26-large-values.md § Replication of a large value
# without the copy): another connection's PINGs on the
# primary's one worker during the SET (scripts/large-value-stall.py), and
# how long after the SET's reply the replica holds the whole value.
#
# usage: scripts/large-value-repl.sh SIZE RUNS LABEL=AMALGAM_BINARY... [redis]
#   Each run starts a fresh primary and replica per server, alternating
#   servers in the order given (redis: Debian's redis-server 7.0.15),
#   data directories under a temporary directory (removed on exit).
#   Primary: amalgam -t 1 -m 2048 --dir D --fsync everysec
#            redis-server --appendonly yes --appendfsync everysec --save ''
#   Replica: amalgam -t 1 -m 2048 --replicaof 127.0.0.1 PRIMARY
#            redis-server --save '' --appendonly no --replicaof 127.0.0.1 PRIMARY
#   Set PERSIST=0 for primaries without a log (amalgam without --dir,
#   redis-server --appendonly no).
set -euo pipefail
SIZE=$1; RUNS=$2; shift 2
PERSIST=${PERSIST:-1}
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d /tmp/lv-repl.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT
PRIMARY=23642; REPLICA=23652

field() { redis-cli -p "$1" info "$2" 2>/dev/null | tr -d '\r' | sed -n "s/^$3://p"; }

# Polls (bounded: 600 tries, 0.1 s apart) until "$@" succeeds.
until_true() { for _ in $(seq 600); do if "$@"; then return 0; fi; sleep 0.1; done; return 1; }
link_up() { [ "$(field $REPLICA replication master_link_status)" = up ]; }
has_value() { [ "$(redis-cli -p $REPLICA strlen big 2>/dev/null)" = "$SIZE" ]; }

run_one() {
  local label=$1 bin=$2
  rm -rf "$TMP/p" "$TMP/r"; mkdir -p "$TMP/p" "$TMP/r"
  if [ "$bin" = redis ]; then
    local aof=no; [ "$PERSIST" = 1 ] && aof=yes
    redis-server --port $PRIMARY --save '' --appendonly $aof --appendfsync everysec --dir "$TMP/p" >/dev/null & PP=$!
    sleep 0.5
    redis-server --port $REPLICA --save '' --appendonly no --dir "$TMP/r" --replicaof 127.0.0.1 $PRIMARY >/dev/null & RP=$!
  else
    local dir=(); [ "$PERSIST" = 1 ] && dir=(--dir "$TMP/p" --fsync everysec)
    "$bin" -p $((PRIMARY + 1)) --resp-port $PRIMARY -m 2048 -t 1 "${dir[@]}" 2>/dev/null & PP=$!
    sleep 0.5
    "$bin" -p $((REPLICA + 1)) --resp-port $REPLICA -m 2048 -t 1 --replicaof 127.0.0.1 $PRIMARY 2>/dev/null & RP=$!
  fi
  PIDS=("$PP" "$RP")
  until_true link_up || { echo "$label: the replica's link never came up"; return 1; }
  local out t0 t1
  out=$(python3 "$HERE/large-value-stall.py" $PRIMARY "$SIZE" "$PP")
  t0=$(date +%s.%N)
  until_true has_value || echo "$label: the replica did not get the value within 60 s"
  t1=$(date +%s.%N)
  printf '%s: %s; replica has it %.1f s after the reply; primary sync_full %s\n' \
    "$label" "$out" "$(echo "$t1 - $t0" | bc)" "$(field $PRIMARY stats sync_full)"
  kill "$PP" "$RP"; wait "$PP" "$RP" 2>/dev/null || true
  PIDS=()
}

echo "# $(date -u +%FT%TZ) SIZE=$SIZE PERSIST=$PERSIST load: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$RUNS"); do
  for spec in "$@"; do
    if [ "$spec" = redis ]; then run_one redis redis; else run_one "${spec%%=*}" "${spec#*=}"; fi
  done
  echo "# after round $r load: $(cut -d' ' -f1-3 /proc/loadavg)"
done
