#!/usr/bin/env bash
# User-space instructions an amalgam executes per RESP GET, counted by
# valgrind's callgrind (hardware counters are not available here): a
# figure that, unlike throughput on a shared machine, does not move with
# the load, so two builds can be compared to a few instructions.
#
# For each binary given: starts it under callgrind (-t 1, RESP on a free
# port), SETs KEYS keys with redis-benchmark, then for pipeline 1 and 16
# zeroes the counters (callgrind_control -z), sends GETS GETs from one
# connection (redis-benchmark -t get -c 1 -P p -r KEYS) and dumps the
# counters. Prints instructions per GET (the whole process: parse,
# execute, reply, the event loop and the syscalls' user side; not the
# kernel). redis-benchmark's keys are random but seeded the same each run,
# so both builds see the same stream; how many GETs one read brings at
# pipeline 16 still varies a little from run to run (a few instructions
# per GET: run each binary twice to see it).
#
# OP=set counts SETs instead (redis-benchmark -t set, the same way).
# OP=zpopmin PRELOAD=zadd KEYS=100000: the hot sorted set (redis-benchmark's
# one key, `ZADD myzset:{tag} <rand> element:<rand>` KEYS times with
# integer scores, then GETS pops; GETS below the members ZADD made).
# PRELOAD_REQUESTS=N sends N preload requests instead of KEYS (at
# pipeline PRELOAD_PIPELINE, default 1): OP=zadd PRELOAD=zadd KEYS=100000
# PRELOAD_REQUESTS=600000 PRELOAD_PIPELINE=16 fills the one sorted set to
# ~99.8% of its 100,000 possible members, so nearly every counted ZADD
# moves an existing member to a new score.
#
# TLS=1 counts them over the TLS RESP port (--tls-port, test-only
# certificates from scripts/tls-test-certs.sh; redis-benchmark --tls, so
# what the client negotiates: TLS 1.3, AES-256-GCM). Each redis-benchmark
# run opens its connection with a handshake (about 1.5 M server
# instructions, as much as ~1,300 pipelined TLS GETs), so a run of one
# round (p requests) is counted too and taken off: the figure is the
# steady request path, (I(GETS) - I(p)) / (GETS - p).
#
# AUTH=PASSWORD starts the server with --requirepass PASSWORD and has
# redis-benchmark authenticate every connection first (-a): what a request
# costs on an authenticated connection (issue 20 §6). The one AUTH per
# run is counted with the requests (one SHA-256 over 40,000 GETs).
# ACL_RULES="~* +@all -@dangerous" (with AUTH) instead authenticates as an
# ACL user `bench` with those rules (an --aclfile), so every request goes
# through the permission check an unrestricted user skips.
#
# CLUSTER=1 starts each binary as a one-node Redis Cluster
# (--cluster-enabled yes, a nodes.conf in the run's directory, the bus on
# a free port), gives it every slot (CLUSTER ADDSLOTSRANGE 0 16383) and
# waits for cluster_state:ok (at most CLUSTER_WAIT_S, 30 s: a node turns
# ok after its 2-second writable delay) before counting: redis-benchmark
# without --cluster then hits a node that owns every key, so the figure
# is what cluster mode adds to a request (the routing check, and the bus
# thread's cron, which the whole-process count includes). EXTRA_ARGS
# adds any other server options (split on spaces).
#
# KEEP_DIR=D keeps each binary's callgrind dumps under D (for
# callgrind_annotate: which function the instructions moved to).
#
# Usage: [KEEP_DIR=D] [CLUSTER=0|1] [EXTRA_ARGS="..."] [OP=get|set|...] [PRELOAD=set|zadd|...] [PRELOAD_REQUESTS=N] [PRELOAD_PIPELINE=P] [TLS=0|1] [AUTH=PASSWORD [ACL_RULES=RULES]] [GETS=40000] [KEYS=1000] scripts/instructions-per-get.sh BIN [BIN ...]
set -euo pipefail
OP=${OP:-get}
GETS=${GETS:-40000}
KEYS=${KEYS:-1000}
PRELOAD=${PRELOAD:-set}
PRELOAD_REQUESTS=${PRELOAD_REQUESTS:-$KEYS}
PRELOAD_PIPELINE=${PRELOAD_PIPELINE:-1}
TLS=${TLS:-0}
AUTH=${AUTH:-}
ACL_RULES=${ACL_RULES:-}
CLUSTER=${CLUSTER:-0}
CLUSTER_WAIT_S=${CLUSTER_WAIT_S:-30}
EXTRA_ARGS=${EXTRA_ARGS:-}
[ $# -gt 0 ] || { echo "usage: $0 path/to/amalgam [more ...]" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
for tool in valgrind callgrind_control redis-benchmark redis-cli; do
  command -v "$tool" >/dev/null || { echo "$tool not found (apt-get install valgrind redis-tools)" >&2; exit 1; }
done
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Instructions of the server (callgrind_control -z, then a dump) over
# one redis-benchmark run: count PID DIR TAG ARGS...
count() {
  local vpid=$1 dir=$2 tag=$3 f
  shift 3
  callgrind_control -z "$vpid" >/dev/null 2>&1
  redis-benchmark "$@" -q >/dev/null 2>&1
  callgrind_control -d "$tag" "$vpid" >/dev/null 2>&1
  f=$(grep -l "Trigger: dump $tag\$" "$dir"/cg.* | head -1)
  awk '/^summary:/ { print $2 }' "$f"
}

for bin in "$@"; do
  dir=$(mktemp -d)
  port=$(free_port)
  client=(-p "$port")
  server=(--resp-port "$port")
  if [ "$TLS" = 1 ]; then
    bash "$here/tls-test-certs.sh" "$dir/certs" >/dev/null
    tls_port=$(free_port)
    server+=(--tls-port "$tls_port" --tls-cert-file "$dir/certs/server.crt" --tls-key-file "$dir/certs/server.key")
    client=(-p "$tls_port" --tls --cacert "$dir/certs/ca.crt")
  fi
  if [ -n "$AUTH" ] && [ -n "$ACL_RULES" ]; then
    printf 'user default on nopass ~* &* +@all\nuser bench on >%s %s\n' "$AUTH" "$ACL_RULES" >"$dir/users.acl"
    server+=(--aclfile "$dir/users.acl")
    client+=(--user bench -a "$AUTH")
  elif [ -n "$AUTH" ]; then
    server+=(--requirepass "$AUTH")
    client+=(-a "$AUTH")
  fi
  if [ "$CLUSTER" = 1 ]; then
    server+=(--cluster-enabled yes --cluster-config-file "$dir/nodes.conf" --cluster-port "$(free_port)")
  fi
  # shellcheck disable=SC2206 # split on spaces, as documented
  [ -z "$EXTRA_ARGS" ] || server+=($EXTRA_ARGS)
  valgrind --tool=callgrind --callgrind-out-file="$dir/cg.%p" "$bin" -l 127.0.0.1 -U 0 -t 1 -m 64 \
    -p "$(free_port)" "${server[@]}" >"$dir/log" 2>&1 &
  vpid=$!
  # Bounded: valgrind starts in seconds; 60 s at most.
  for _ in $(seq 600); do listening "$port" && break; sleep 0.1; done
  if [ "$CLUSTER" = 1 ]; then
    redis-cli -p "$port" CLUSTER ADDSLOTSRANGE 0 16383 >/dev/null
    # Bounded: CLUSTER_WAIT_S seconds at most.
    for _ in $(seq $((CLUSTER_WAIT_S * 10))); do
      redis-cli -p "$port" CLUSTER INFO | grep -q '^cluster_state:ok' && break
      sleep 0.1
    done
    redis-cli -p "$port" CLUSTER INFO | grep -q '^cluster_state:ok' ||
      { echo "$bin: cluster_state not ok after ${CLUSTER_WAIT_S} s" >&2; exit 1; }
  fi
  redis-benchmark "${client[@]}" -t "$PRELOAD" -n "$PRELOAD_REQUESTS" -r "$KEYS" -c 1 -P "$PRELOAD_PIPELINE" -q >/dev/null 2>&1
  row="$bin:"
  for p in 1 16; do
    ir=$(count "$vpid" "$dir" "p$p" "${client[@]}" -t "$OP" -n "$GETS" -r "$KEYS" -c 1 -P "$p")
    if [ "$TLS" = 1 ]; then
      one=$(count "$vpid" "$dir" "one$p" "${client[@]}" -t "$OP" -n "$p" -r "$KEYS" -c 1 -P "$p")
      per=$(awk -v i="$ir" -v o="$one" -v n="$GETS" -v p="$p" 'BEGIN { printf "%.0f", (i - o) / (n - p) }')
    else
      per=$(awk -v i="$ir" -v n="$GETS" 'BEGIN { printf "%.0f", i / n }')
    fi
    row="$row p$p $per instructions/${OP^^};"
  done
  kill "$vpid" 2>/dev/null || true
  wait "$vpid" 2>/dev/null || true
  if [ -n "${KEEP_DIR:-}" ]; then mkdir -p "$KEEP_DIR/$(basename "$bin")-$$"; cp "$dir"/cg.* "$KEEP_DIR/$(basename "$bin")-$$/" 2>/dev/null; fi
  rm -rf "$dir"
  echo "$row"
done
