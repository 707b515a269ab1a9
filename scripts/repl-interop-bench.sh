#!/usr/bin/env bash
# Full-sync time between Amalgam and redis-server in each direction,
# beside Redis to Redis (issue 37 §6), and the primary's RSS before and
# at its peak while it serves the sync.
#
# For each pair (primary -> replica): starts the primary, fills it with
# KEYS string keys of VALUE bytes (redis-benchmark SET, pipelined), then
# starts the replica with --replicaof and times from its start until its
# INFO says master_link_status:up and DBSIZE equals the primary's
# (polled every 50 ms), sampling the primary's RSS meanwhile. Every run
# is a fresh pair; ROUNDS rounds alternate the pairs; medians printed.
#
# PAIRS="redis:redis amalgam:redis" picks the pairs (default: all four).
#
# Usage: [KEYS=1000000] [VALUE=32] [ROUNDS=3] [PAIRS=...] AMALGAM=target/release/amalgam scripts/repl-interop-bench.sh
set -euo pipefail
KEYS=${KEYS:-1000000}
VALUE=${VALUE:-32}
ROUNDS=${ROUNDS:-3}
AMALGAM=${AMALGAM:-target/release/amalgam}
MEM_MB=${MEM_MB:-8192}
work=$(mktemp -d)
trap 'pkill -P $$ 2>/dev/null || true; rm -rf "$work"' EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 300); do redis-cli -p "$1" ping >/dev/null 2>&1 && return 0; sleep 0.1; done; return 1; }
rss_kb() { awk '/VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }

# start KIND PORT [replicaof-port] -> pid
start() {
  local kind=$1 port=$2 of=${3:-} dir="$work/$1-$2"
  mkdir -p "$dir"
  local args=()
  if [ "$kind" = amalgam ]; then
    args=("$AMALGAM" -p 0 -l 127.0.0.1 -U 0 -t 2 -m "$MEM_MB" --eviction none --resp-port "$port")
    [ -n "$of" ] && args+=(--replicaof 127.0.0.1 "$of")
  else
    args=(redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir"
      --repl-diskless-sync-delay 0)
    [ -n "$of" ] && args+=(--replicaof 127.0.0.1 "$of")
  fi
  "${args[@]}" >"$dir/log" 2>&1 &
  echo $!
}

# one PRIMARY_KIND REPLICA_KIND -> "seconds peak_rss_mb base_rss_mb"
one() {
  local pport rport ppid rpid
  pport=$(free_port)
  ppid=$(start "$1" "$pport")
  wait_port "$pport"
  redis-benchmark -p "$pport" -t set -n "$KEYS" -r "$KEYS" -d "$VALUE" -P 64 -c 4 -q >/dev/null 2>&1
  # Every key of the keyspace once (redis-benchmark's random keys repeat).
  local want
  want=$(redis-cli -p "$pport" dbsize)
  local base peak
  base=$(rss_kb "$ppid")
  peak=$base
  rport=$(free_port)
  local t0 t1
  t0=$(date +%s.%N)
  rpid=$(start "$2" "$rport" "$pport")
  # Bounded: 600 s.
  for _ in $(seq 12000); do
    local r
    r=$(rss_kb "$ppid"); [ "$r" -gt "$peak" ] && peak=$r
    if redis-cli -p "$rport" info replication 2>/dev/null | grep -q 'master_link_status:up' &&
      [ "$(redis-cli -p "$rport" dbsize 2>/dev/null)" = "$want" ]; then
      break
    fi
    sleep 0.05
  done
  t1=$(date +%s.%N)
  kill "$rpid" "$ppid" 2>/dev/null || true
  wait "$rpid" "$ppid" 2>/dev/null || true
  awk -v a="$t0" -v b="$t1" -v p="$peak" -v s="$base" -v k="$want" \
    'BEGIN { printf "%.3f %.0f %.0f %d\n", b - a, p / 1024, s / 1024, k }'
}

declare -A results
read -r -a pairs <<<"${PAIRS:-redis:redis redis:amalgam amalgam:redis amalgam:amalgam}"
pairs=("${pairs[@]//:/ }")
for round in $(seq "$ROUNDS"); do
  for pair in "${pairs[@]}"; do
    set -- $pair
    r=$(one "$1" "$2")
    echo "round $round: $1 -> $2: $r (seconds, primary peak RSS MB, primary RSS before MB, keys)"
    results["$pair"]+="$r;"
  done
done
echo "medians over $ROUNDS rounds, $KEYS keys of $VALUE bytes:"
for pair in "${pairs[@]}"; do
  echo "${results[$pair]}" | tr ';' '\n' | sed '/^$/d' | sort -n | awk -v p="$pair" '
    { t[NR] = $1; pk[NR] = $2; b[NR] = $3; k = $4 }
    END { m = int((NR + 1) / 2); printf "%-18s sync %.3f s   primary RSS %d MB before, %d MB peak (%.2fx), %d keys\n",
          p, t[m], b[m], pk[m], pk[m] / b[m], k }'
done
