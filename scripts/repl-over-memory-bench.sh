#!/usr/bin/env bash
# A full sync from a redis-server primary holding more than the replica's
# memory limit (issue 37 §4; tests/resp_repl_over_memory.rs is the test):
# the primary gets KEYS keys of VALUE_BYTES bytes (DEBUG POPULATE), then
# each replica, one at a time, follows it with a limit of LIMIT_MB:
#
#   redis      redis-server --maxmemory LIMIT_MB --maxmemory-policy allkeys-lru
#   cache      amalgam -m LIMIT_MB                       (cache mode, s3fifo)
#   store      amalgam -m LIMIT_MB --eviction none        (store mode)
#   idle       amalgam -m LIMIT_MB, no primary            (the baseline RSS)
#
# and prints per replica: seconds until its link is up (or "-" when it
# never is: store mode, measured after its third failed attempt), keys
# held, used_memory, and peak RSS (VmHWM of /proc/PID/status).
#
#   [KEYS=100000] [VALUE_BYTES=1000] [LIMIT_MB=16] \
#     AMALGAM=target/release/amalgam bash scripts/repl-over-memory-bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."

keys=${KEYS:-100000}
value_bytes=${VALUE_BYTES:-1000}
limit_mb=${LIMIT_MB:-16}
amalgam=${AMALGAM:-target/release/amalgam}
[ -x "$amalgam" ] || { echo "no $amalgam: cargo build --release -p amalgam-server" >&2; exit 1; }
dir=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
field() { redis-cli -p "$1" info "$2" | tr -d '\r' | sed -n "s/^$3://p"; }
hwm_mb() { awk '/^VmHWM:/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }
# Waits (at most 600 s) until the replica on $1 streams; prints the seconds.
wait_up() {
  local start; start=$(date +%s.%N)
  for _ in $(seq 1 6000); do
    if [ "$(field "$1" replication master_link_status)" = up ]; then
      awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'
      return
    fi
    sleep 0.05
  done
  echo "-"
}

pport=$(free_port)
redis-server --port "$pport" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" --daemonize yes \
  --pidfile "$dir/primary.pid" --enable-debug-command yes --repl-diskless-sync-delay 0 >/dev/null
sleep 0.5
pids+=("$(cat "$dir/primary.pid")")
redis-cli -p "$pport" debug populate "$keys" key "$value_bytes" >/dev/null
echo "primary: redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'), $(redis-cli -p "$pport" dbsize) keys of $value_bytes B, used_memory $(field "$pport" memory used_memory_human)"
printf '%-7s %8s %9s %14s %12s\n' replica "up (s)" keys used_memory "peak RSS MB"

# redis-server replica.
port=$(free_port)
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" --dbfilename r.rdb \
  --daemonize yes --pidfile "$dir/replica.pid" --replicaof 127.0.0.1 "$pport" \
  --maxmemory "${limit_mb}mb" --maxmemory-policy allkeys-lru >/dev/null
sleep 0.3
rpid=$(cat "$dir/replica.pid"); pids+=("$rpid")
up=$(wait_up "$port")
printf '%-7s %8s %9s %14s %12s\n' redis "$up" "$(redis-cli -p "$port" dbsize)" "$(field "$port" memory used_memory)" "$(hwm_mb "$rpid")"
kill "$rpid"

run_amalgam() { # name, extra args...
  local name=$1; shift
  local port; port=$(free_port)
  "$amalgam" -p 0 -l 127.0.0.1 --resp-port "$port" -m "$limit_mb" "$@" >"$dir/$name.log" 2>&1 &
  local apid=$!; pids+=("$apid")
  for _ in $(seq 1 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  local up="-"
  if [ "$name" = cache ]; then
    up=$(wait_up "$port")
  elif [ "$name" = store ]; then
    for _ in $(seq 1 3000); do grep -q "(3 in a row)" "$dir/$name.log" && break; sleep 0.1; done
  fi
  printf '%-7s %8s %9s %14s %12s\n' "$name" "$up" "$(redis-cli -p "$port" dbsize)" "$(field "$port" memory used_memory)" "$(hwm_mb "$apid")"
  kill "$apid"
}
run_amalgam cache --replicaof 127.0.0.1 "$pport"
run_amalgam store --eviction none --replicaof 127.0.0.1 "$pport"
run_amalgam idle
