#!/usr/bin/env bash
# ZINCRBY, ZRANGEBYSCORE (LIMIT 0 10) and ZREM on one sorted set of up to
# 100,000 members (issue 40 §2), Amalgam beside redis-server, alternating
# rounds: each round starts each server fresh, fills the set
# (redis-benchmark ZADD, 600,000 requests over 100,000 members), then
# runs the three commands at pipeline 16 with 50 clients, in that order
# (ZREM last: after ~100 k removals the set is empty and the rest are
# misses). Prints "server zincrby/s zrangebyscore/s zrem/s" per run.
#
# Usage: [ROUNDS=3] [AMALGAM=target/release/amalgam] scripts/compare-zset-ops.sh
set -u
AM=${AMALGAM:-target/release/amalgam}
ROUNDS=${ROUNDS:-3}
rate() { grep -o '[0-9.]* requests per second' | cut -d' ' -f1; }
run_one() { # kind
  local port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  if [ "$1" = amalgam ]; then "$AM" -p 0 -l 127.0.0.1 -U 0 -t 2 -m 1024 --eviction none --resp-port $port >/dev/null 2>&1 &
  else redis-server --port $port --save '' --appendonly no --daemonize no >/dev/null 2>&1 & fi
  local pid=$!
  for _ in $(seq 100); do redis-cli -p $port ping >/dev/null 2>&1 && break; sleep 0.1; done
  redis-benchmark -p $port -P 16 -n 600000 -r 100000 -c 50 -q zadd myzset __rand_int__ member:__rand_int__ >/dev/null 2>&1
  local a b c
  a=$(redis-benchmark -p $port -P 16 -n 1000000 -r 100000 -c 50 -q zincrby myzset 1 member:__rand_int__ 2>/dev/null | rate)
  b=$(redis-benchmark -p $port -P 16 -n 300000 -r 100000 -c 50 -q zrangebyscore myzset __rand_int__ +inf LIMIT 0 10 2>/dev/null | rate)
  c=$(redis-benchmark -p $port -P 16 -n 1000000 -r 100000 -c 50 -q zrem myzset member:__rand_int__ 2>/dev/null | rate)
  kill $pid; wait $pid 2>/dev/null
  echo "$1 $a $b $c"
}
for _ in $(seq "$ROUNDS"); do run_one redis; run_one amalgam; done
