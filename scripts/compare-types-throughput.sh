#!/usr/bin/env bash
# Collection commands' throughput: Amalgam's RESP port vs Debian's
# redis-server 7, side by side, with Redis's own redis-benchmark (issue 19
# §6).
#
# Starts redis-server (no persistence) and amalgam (-t SERVER_THREADS,
# -m MEMORY_MB), then RUNS times, alternating (redis, amalgam, redis, …),
# runs `redis-benchmark -t TESTS -c CONNS -n REQUESTS -r KEYSPACE -P P
# --csv` for each pipeline depth P in PIPELINES. Prints a markdown table:
# per test and depth, each server's median requests/s and p99 (ms, from
# redis-benchmark's CSV) and the ratio amalgam / redis of the medians.
# redis-benchmark's many-keys cases use `-r KEYSPACE` random keys; its
# list tests (lpush, lpop, rpop, lrange_100) all use one list, `mylist`:
# the hot-key case.
#
# MANY_KEYS=1 runs the issue's many-keys case instead: one redis-benchmark
# run per command of MANY_CMDS, in order on one keyspace (flushed at the
# start of each run, so HGET, LPOP, SISMEMBER, ZRANGE and ZSCORE read what
# the writes before them made), each key `__rand_int__` of `-r KEYSPACE`
# (redis-benchmark draws every placeholder of a command separately).
#
# Usage: [RUNS=3] [REQUESTS=200000] [KEYSPACE=100000] [CONNS=50] [MANY_KEYS=1]
#        [PIPELINES="1 16"] [SERVER_THREADS=2] [MEMORY_MB=1024]
#        [TESTS=lpush,rpush,lpop,rpop,sadd,hset,spop,zadd,zpopmin,lrange_100,mset]
#        [REDIS_PORT=21579] [AMALGAM_PORT=21580] [NO_BUILD=1]
#        scripts/compare-types-throughput.sh
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-3}
REQUESTS=${REQUESTS:-200000}
KEYSPACE=${KEYSPACE:-100000}
CONNS=${CONNS:-50}
PIPELINES=${PIPELINES:-1 16}
SERVER_THREADS=${SERVER_THREADS:-2}
MEMORY_MB=${MEMORY_MB:-1024}
TESTS=${TESTS:-lpush,rpush,lpop,rpop,sadd,hset,spop,zadd,zpopmin,lrange_100,mset}
REDIS_PORT=${REDIS_PORT:-21579}
AMALGAM_PORT=${AMALGAM_PORT:-21580}
AMALGAM_MC_PORT=${AMALGAM_MC_PORT:-21413}
REDIS=${REDIS:-$(command -v redis-server || true)}
BENCH=${BENCH:-$(command -v redis-benchmark || true)}
[ -n "$REDIS" ] && [ -n "$BENCH" ] || { echo "needs redis-server and redis-benchmark (apt-get install redis-server redis-tools)" >&2; exit 1; }

# name|command, for MANY_KEYS=1 (the issue's list: HSET HGET LPUSH LPOP
# SADD SISMEMBER ZADD ZRANGE 0 9 ZSCORE).
MANY_CMDS=${MANY_CMDS:-"hset|HSET h:__rand_int__ f vvvvvvvvvvvvvvvv
hget|HGET h:__rand_int__ f
lpush|LPUSH l:__rand_int__ vvvvvvvvvvvvvvvv
lpop|LPOP l:__rand_int__
sadd|SADD s:__rand_int__ m:__rand_int__
sismember|SISMEMBER s:__rand_int__ m:__rand_int__
zadd|ZADD z:__rand_int__ __rand_int__ m:__rand_int__
zrange_10|ZRANGE z:__rand_int__ 0 9
zscore|ZSCORE z:__rand_int__ m:__rand_int__"}

[ -n "${NO_BUILD:-}" ] || cargo build --release -q -p amalgam-server
amalgam=${CARGO_TARGET_DIR:-target}/release/amalgam
work=$(mktemp -d)
pids=()
# The servers are reaped, not only signalled: a redis-server still freeing
# a large keyspace holds its port, and the next invocation's server on
# the same port would fail to start.
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

wait_up() {
  for _ in $(seq 100); do
    redis-cli -p "$1" PING >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "server on $1 did not start" >&2
  return 1
}

for port in "$REDIS_PORT" "$AMALGAM_PORT" "$AMALGAM_MC_PORT"; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    echo "port $port is already in use: set REDIS_PORT / AMALGAM_PORT / AMALGAM_MC_PORT" >&2
    exit 1
  fi
done
"$REDIS" --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no >/dev/null 2>&1 &
pids+=($!)
"$amalgam" -p "$AMALGAM_MC_PORT" --resp-port "$AMALGAM_PORT" -l 127.0.0.1 -U 0 -t "$SERVER_THREADS" -m "$MEMORY_MB" \
  >/dev/null 2>&1 &
pids+=($!)
wait_up "$REDIS_PORT"
wait_up "$AMALGAM_PORT"

# One redis-benchmark run; its CSV rows go to $work/<server>-<P>-<run>.csv.
run() {
  local server=$1 port=$2 p=$3 r=$4
  redis-cli -p "$port" FLUSHALL >/dev/null
  "$BENCH" -p "$port" -t "$TESTS" -c "$CONNS" -n "$REQUESTS" -r "$KEYSPACE" -P "$p" --csv -q \
    >"$work/$server-$p-$r.csv" 2>"$work/$server-$p-$r.err" || { cat "$work/$server-$p-$r.err" >&2; return 1; }
  if grep -qi 'error' "$work/$server-$p-$r.err"; then
    echo "$server reported errors (P=$p run $r):" >&2
    head -5 "$work/$server-$p-$r.err" >&2
    return 1
  fi
}

# The many-keys case: each command of MANY_CMDS in turn, its one CSV row
# renamed to the command's name.
run_many() {
  local server=$1 port=$2 p=$3 r=$4 name cmd
  redis-cli -p "$port" FLUSHALL >/dev/null
  echo '"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"' \
    >"$work/$server-$p-$r.csv"
  while IFS='|' read -r name cmd; do
    [ -n "$name" ] || continue
    # shellcheck disable=SC2086 # the command's words are separate arguments
    "$BENCH" -p "$port" -c "$CONNS" -n "$REQUESTS" -r "$KEYSPACE" -P "$p" --csv -q $cmd \
      >"$work/one.csv" 2>"$work/$server-$p-$r.err" || { cat "$work/$server-$p-$r.err" >&2; return 1; }
    if grep -qi 'error' "$work/$server-$p-$r.err"; then
      echo "$server reported errors ($name, P=$p run $r):" >&2
      head -5 "$work/$server-$p-$r.err" >&2
      return 1
    fi
    tail -n 1 "$work/one.csv" | sed "s/^\"[^\"]*\"/\"$name\"/" >>"$work/$server-$p-$r.csv"
  done <<<"$MANY_CMDS"
}
each=run
[ -z "${MANY_KEYS:-}" ] || each=run_many

for p in $PIPELINES; do
  for r in $(seq "$RUNS"); do
    $each redis "$REDIS_PORT" "$p" "$r"
    $each amalgam "$AMALGAM_PORT" "$p" "$r"
  done
done

python3 - "$work" "$RUNS" "$PIPELINES" <<'EOF'
import csv, statistics, sys, glob
work, runs, pipelines = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
def rows(server, p):
    out = {}
    for path in sorted(glob.glob(f"{work}/{server}-{p}-*.csv")):
        for row in csv.DictReader(open(path)):
            test = row["test"].split(" ")[0]
            out.setdefault(test, []).append((float(row["rps"]), float(row["p99_latency_ms"])))
    return out
print("| test | P | redis req/s (median) | redis p99 ms | amalgam req/s (median) | amalgam p99 ms | amalgam / redis |")
print("|---|---:|---:|---:|---:|---:|---:|")
for p in pipelines:
    red, ama = rows("redis", p), rows("amalgam", p)
    for test in red:
        if test not in ama:
            continue
        rr = statistics.median(x[0] for x in red[test]); ar = statistics.median(x[0] for x in ama[test])
        rp = statistics.median(x[1] for x in red[test]); ap = statistics.median(x[1] for x in ama[test])
        print(f"| {test} | {p} | {rr:,.0f} | {rp:.3f} | {ar:,.0f} | {ap:.3f} | {ar / rr:.2f}x |")
EOF
