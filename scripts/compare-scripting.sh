#!/usr/bin/env bash
# EVALSHA beside redis-server (issue 34 §7): a one-key rate limiter
# (INCR + PEXPIRE + a comparison) and redis-py Lock's release script, over
# 100 k keys (redis-benchmark -r), at pipeline 1 and 16, ROUNDS rounds
# alternating Redis and Amalgam; prints each round's rates and the medians.
#
# Usage: scripts/compare-scripting.sh            (needs target/release/amalgam,
#        redis-server and redis-benchmark on PATH)
# Variables: ROUNDS (3), REQUESTS (100000), CLIENTS (50), AMALGAM
# (target/release/amalgam), REDIS_PORT (6392), AMALGAM_PORT (6393).
set -euo pipefail
ROUNDS=${ROUNDS:-3}
REQUESTS=${REQUESTS:-100000}
CLIENTS=${CLIENTS:-50}
AMALGAM=${AMALGAM:-target/release/amalgam}
REDIS_PORT=${REDIS_PORT:-6392}
AMALGAM_PORT=${AMALGAM_PORT:-6393}

RL="local c = redis.call('incr', KEYS[1]) redis.call('pexpire', KEYS[1], ARGV[1]) if c > tonumber(ARGV[2]) then return 0 end return 1"
LK="if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"

redis-server --port "$REDIS_PORT" --save '' --appendonly no --daemonize yes >/dev/null
"$AMALGAM" --port 0 --resp-port "$AMALGAM_PORT" -m 1024 >/dev/null 2>&1 &
amalgam_pid=$!
trap 'redis-cli -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true; kill "$amalgam_pid" 2>/dev/null || true' EXIT
sleep 1

rate() { # port pipeline sha key-prefix args...
  local port=$1 p=$2 sha=$3 prefix=$4; shift 4
  redis-benchmark -p "$port" -n "$REQUESTS" -c "$CLIENTS" -P "$p" -r 100000 -q \
    evalsha "$sha" 1 "$prefix:__rand_int__" "$@" 2>/dev/null | tr '\r' '\n' | grep -o '[0-9.]* requests per second' | tail -1 | cut -d' ' -f1
}

declare -A all
for round in $(seq 1 "$ROUNDS"); do
  for server in redis amalgam; do
    port=$REDIS_PORT; [ "$server" = amalgam ] && port=$AMALGAM_PORT
    s1=$(redis-cli -p "$port" script load "$RL"); s2=$(redis-cli -p "$port" script load "$LK")
    for p in 1 16; do
      a=$(rate "$port" "$p" "$s1" rl 60000 1000000)
      b=$(rate "$port" "$p" "$s2" lock token)
      echo "round=$round server=$server pipeline=$p ratelimit=$a lockrelease=$b"
      all[$server,$p,rl]+="$a "; all[$server,$p,lk]+="$b "
    done
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for p in 1 16; do
  for w in rl lk; do
    r=$(echo "${all[redis,$p,$w]}" | median); m=$(echo "${all[amalgam,$p,$w]}" | median)
    echo "median pipeline=$p workload=$w redis=$r amalgam=$m ratio=$(awk -v a="$m" -v b="$r" 'BEGIN {printf "%.2f", a/b}')"
  done
done
