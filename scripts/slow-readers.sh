#!/usr/bin/env bash
# The slow-reader attack of issue 20 §3 against amalgam (release build) and
# Debian's redis-server, each started fresh, with their default output
# limits and with `client-output-buffer-limit normal 1mb 0 0`; prints one
# line per run (scripts/slow-readers.py). Not run in CI.
#
#   bash scripts/slow-readers.sh [CONNS] [GETS] [VALUE_BYTES] [SECONDS]
#
# Defaults: 500 connections, 80 pipelined GETs of a 100,000-byte value
# each (8 MB asked per connection, 4 GB in all), 20 s of sampling. Needs
# `ulimit -n` above CONNS (raised here if allowed).
set -euo pipefail
cd "$(dirname "$0")/.."
conns=${1:-500} gets=${2:-80} value=${3:-100000} seconds=${4:-20}
ulimit -n 4096 2>/dev/null || true
bin=target/release/amalgam
[ -x "$bin" ] || cargo build --release -p amalgam-server
port=$((20000 + RANDOM % 20000))

run() { # name, protocol (resp|memcached), then the server command line
  local name=$1 proto=$2; shift 2
  "$@" >/dev/null 2>&1 &
  local pid=$!
  for _ in $(seq 50); do
    (exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null && break
    sleep 0.1
  done
  printf '%-28s ' "$name"
  python3 scripts/slow-readers.py --pid "$pid" --port "$port" --proto "$proto" --conns "$conns" --gets "$gets" \
    --value-bytes "$value" --seconds "$seconds" || echo "(failed)"
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  port=$((port + 1))
}

limit='normal 1mb 0 0'
run "amalgam default" resp "$bin" -p 0 -U 0 --resp-port "$port" -m 1024 -c 4096
run "amalgam normal 1mb 0 0" resp "$bin" -p 0 -U 0 --resp-port "$port" -m 1024 -c 4096 \
  --client-output-buffer-limit "$limit"
run "amalgam memcached port" memcached "$bin" -p "$port" -U 0 --resp-port 0 -m 1024 -c 4096
run "amalgam memcached 1mb 0 0" memcached "$bin" -p "$port" -U 0 --resp-port 0 -m 1024 -c 4096 \
  --client-output-buffer-limit "$limit"
run "redis default (0 0 0)" resp redis-server --port "$port" --save '' --appendonly no --maxclients 4096
run "redis normal 1mb 0 0" resp redis-server --port "$port" --save '' --appendonly no --maxclients 4096 \
  --client-output-buffer-limit "$limit"
