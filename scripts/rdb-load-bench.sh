#!/usr/bin/env bash
# RDB load time at start: Amalgam (--dir D, D holding only dump.rdb)
# against redis-server on the same file, from a cold start (page cache
# dropped before each start when this user may; the log says if not),
# alternating, RUNS rounds; prints each start and the medians.
#
#   [KEYS=1000000] [RUNS=3] [AMALGAM=target/release/amalgam] \
#     bash scripts/rdb-load-bench.sh
#
# The file: a redis-server 7.0.15 filled with `DEBUG POPULATE $KEYS`
# (keys key:N, values value:N) and SAVEd. Each start is timed twice: the
# server's own load line (Amalgam's "loaded … keys in S s", Redis's "DB
# loaded from disk: S seconds") and the wall time from exec until it
# answers DBSIZE with every key (Amalgam's includes the snapshot of its
# own it writes after the load, so the next start does not read the RDB
# file again). Amalgam runs with -m 2048 (the keys fit, no eviction).
set -euo pipefail
cd "$(dirname "$0")/.."
keys=${KEYS:-1000000}
runs=${RUNS:-3}
amalgam=${AMALGAM:-${CARGO_TARGET_DIR:-target}/release/amalgam}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
port=$((20000 + RANDOM % 20000))

echo "== making the file: DEBUG POPULATE $keys, SAVE ($(redis-server --version | cut -d' ' -f3))"
mkdir -p "$work/src"
redis-server --port "$port" --save '' --appendonly no --dir "$work/src" --daemonize yes \
  --enable-debug-command yes --logfile "$work/src/log" >/dev/null
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.1; done
redis-cli -p "$port" debug populate "$keys" >/dev/null
redis-cli -p "$port" save >/dev/null
redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
sleep 0.5
ls -l "$work/src/dump.rdb"

cold() {
  sync
  if ! echo 3 >/proc/sys/vm/drop_caches 2>/dev/null; then
    echo "   (page cache not dropped: not permitted)"
  fi
}

# Waits until the server on $1 answers DBSIZE $keys; prints the seconds since $2 (ns).
ready() {
  local p=$1 t0=$2 n
  while :; do
    n=$(redis-cli -p "$p" dbsize 2>/dev/null || true)
    [ "$n" = "$keys" ] && break
    sleep 0.01
  done
  echo "scale=3; ($(date +%s%N) - $t0) / 1000000000" | bc
}

am_load=(); am_ready=(); rs_load=(); rs_ready=()
for r in $(seq "$runs"); do
  # Amalgam.
  rm -rf "$work/a"; mkdir -p "$work/a"; cp "$work/src/dump.rdb" "$work/a/"
  cold
  t0=$(date +%s%N)
  "$amalgam" -p 0 --resp-port "$port" --dir "$work/a" -m 2048 2>"$work/a/log" &
  pid=$!
  w=$(ready "$port" "$t0")
  l=$(grep -o 'keys in [0-9.]* s' "$work/a/log" | grep -o '[0-9.]*' | head -1)
  kill "$pid"; wait "$pid" 2>/dev/null || true
  echo "round $r amalgam: load ${l} s, ready ${w} s"
  am_load+=("$l"); am_ready+=("$w")
  # redis-server.
  rm -rf "$work/r"; mkdir -p "$work/r"; cp "$work/src/dump.rdb" "$work/r/"
  cold
  t0=$(date +%s%N)
  redis-server --port "$port" --save '' --appendonly no --dir "$work/r" --dbfilename dump.rdb \
    --logfile "$work/r/log" &
  pid=$!
  w=$(ready "$port" "$t0")
  l=$(grep -o 'DB loaded from disk: [0-9.]* seconds' "$work/r/log" | grep -o '[0-9.]*' | head -1)
  kill "$pid"; wait "$pid" 2>/dev/null || true
  echo "round $r redis:   load ${l} s, ready ${w} s"
  rs_load+=("$l"); rs_ready+=("$w")
done

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "median amalgam: load $(median "${am_load[@]}") s, ready $(median "${am_ready[@]}") s"
echo "median redis:   load $(median "${rs_load[@]}") s, ready $(median "${rs_ready[@]}") s"
