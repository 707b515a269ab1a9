#!/usr/bin/env bash
# What replication costs, Amalgam vs Debian's redis-server 7, side by side
# in one run (issue 22 §5).
#
# Builds amalgam and amalgam-bench (release). Every server has a fresh
# directory under a temporary directory in DATA_BASE (removed on exit, as
# is every process this script starts). Setups, as a user after speed
# would run them:
#   amalgam -l 127.0.0.1 -U 0 -t SERVER_THREADS -m MEMORY_MB --eviction none
#     (store mode: nothing is evicted, as in a Redis without maxmemory;
#     persistence off: no --dir)
#   redis-server --save '' --appendonly no --repl-diskless-sync-delay 0
#     (Redis 7.0's defaults otherwise: repl-diskless-sync yes, so its full
#     sync forks a child that writes the RDB into a pipe; the delay is
#     Redis's 5 s wait for more replicas before a full sync starts, idle
#     time, not work, so it is set to 0; repl-diskless-load is left at its
#     default, REDIS_DISKLESS_LOAD=disabled: the replica stores the RDB in
#     its dir and loads it from there)
# Replicas add `--replicaof 127.0.0.1 PRIMARY` (or get REPLICAOF at run
# time). Keys 16 B, values 32 B, every load by amalgam-bench net --protocol
# resp (the same client for both). Sections (SECTIONS picks some):
#
# 1 fullsync: a primary per server, KEYS keys preloaded (amalgam-bench
#   --preload-only, pipelined). For each case in SYNC_CASES:
#     idle  no client load
#     get   a closed-loop GET load on the primary (uniform over the keys,
#           THREADS x CONNS connections, pipeline 1)
#     set   the same with SETs (overwrites of the preloaded keys: the
#           primary's key count stays KEYS)
#   scripts/replication-probe.py sync samples the primary for 3 s (memory,
#   INFO stats total_commands_processed), starts an empty replica and polls
#   it every 50 ms until master_link_status:up and DBSIZE = KEYS, sampling
#   the primary's memory meanwhile: VmRSS of the primary and summed with its
#   children (Redis's fork child) every 50 ms, and PSS summed over them as
#   often as the walk of their page tables costs at most 20% of a CPU (it
#   takes ~100 ms for a 1.5 GB Redis and its child: sampled every 50 ms it
#   would take a CPU from the server being measured).
#   Reported: sync seconds (replica exec to converged), peak / before of
#   each memory figure, the primary's commands/s during / before. The
#   replica is killed after each case; RUNS rounds, alternating servers.
# 2 throughput: a primary per server with LOAD_KEYS keys and two replica
#   processes; each run attaches 0, 1 or 2 of them (REPLICAOF / REPLICAOF
#   NO ONE, then waits until the primary counts them online at its offset)
#   and runs a SET-only load (uniform, THREADS x CONNS, each pipeline
#   depth in PIPELINES) for DURATION s after WARMUP s. RUNS rounds; odd
#   rounds go 0, 1, 2 replicas, even rounds 2, 1, 0; servers alternate.
#   Reported: median SET/s and its ratio to 0 replicas, the primary's CPU
#   per SET (amalgam-bench --server-pid), the attached replicas' CPU in
#   cores, and the primary's CPU by thread name (/proc/PID/task/*/stat:
#   where replication's cost goes). Every process shares the machine's
#   cores: a replica's apply work is CPU the primary and the client do not
#   get, for both servers alike.
# 3 lag: section 2's servers with one replica attached. For each rate in
#   LAG_RATES: an open-loop SET load at that rate (amalgam-bench --rate,
#   pipeline 1, THREADS x CONNS; 0: no load) and, after WARMUP + 1 s, the
#   probe (replication-probe.py lag) for LAG_SECS: one connection,
#   alternately SET + WAIT 1 0 and SET + PING, each pair sent at once and
#   timed to its second reply. The SET + WAIT time bounds from above the
#   time until a replica applied and acknowledged the write; SET + PING is
#   the same round trip without it. RUNS rounds, servers alternating.
#   Reported: medians over rounds of p50 / p99 / p999, the load's achieved
#   rate and its own p99, the cores the primary and the replica used. At
#   100k SET/s unpipelined the client, the primary and the replica together
#   need most of a 2-core machine: read the SET + PING column beside it.
# 4 failover: tests/python/test_replication.py's Sentinel test (3
#   redis-sentinel, quorum 2, down-after-milliseconds 1000, failover-timeout
#   10000; a primary and two replicas; a writer doing SET + WAIT 1 1000
#   through redis-py's Sentinel client; the primary is SIGKILLed) run
#   FAILOVER_RUNS times per server, alternating; its printed line gives the
#   time from the kill to the send (and to the reply) of the first write
#   that succeeded on the new primary. Reported: medians. The test starts
#   its nodes its own way (amalgam: default -m and threads; redis-server
#   with a config file, --repl-diskless-sync-delay 0).
#
# Every measured run's JSON goes to OUT, one line each with "section",
# "label" and "run"; the runs' own reports go to stderr; the tables to
# stdout. The client, the replicas and the servers share the machine.
#
# Usage: [SECTIONS="fullsync throughput lag failover"] [KEYS=10000000]
#        [SYNC_CASES="idle get set"] [LOAD_KEYS=1048576] [DURATION=10]
#        [WARMUP=2] [RUNS=3] [PIPELINES="1 16"] [THREADS=2] [CONNS=25]
#        [SERVER_THREADS=2] [MEMORY_MB=8192] [LAG_RATES="0 50000 100000"]
#        [LAG_SECS=15] [FAILOVER_RUNS=5] [REDIS_DISKLESS_LOAD=disabled]
#        [PORT_BASE=27600] [DATA_BASE=target] [KEEP_DATA=1]
#        [OUT=target/compare-replication.jsonl] [NO_BUILD=1] [TABLES_ONLY=1]
#        scripts/compare-replication.sh
# TABLES_ONLY=1 prints the tables of the SECTIONS in an existing OUT.
# NO_BUILD=1 uses the release binaries already in $CARGO_TARGET_DIR (or
# target/).
set -euo pipefail
cd "$(dirname "$0")/.."

SECTIONS=${SECTIONS:-fullsync throughput lag failover}
KEYS=${KEYS:-10000000}
SYNC_CASES=${SYNC_CASES:-idle get set}
LOAD_KEYS=${LOAD_KEYS:-1048576}
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-2}
RUNS=${RUNS:-3}
PIPELINES=${PIPELINES:-1 16}
THREADS=${THREADS:-2}
CONNS=${CONNS:-25}
SERVER_THREADS=${SERVER_THREADS:-2}
MEMORY_MB=${MEMORY_MB:-8192}
LAG_RATES=${LAG_RATES:-0 50000 100000}
LAG_SECS=${LAG_SECS:-15}
FAILOVER_RUNS=${FAILOVER_RUNS:-5}
REDIS_DISKLESS_LOAD=${REDIS_DISKLESS_LOAD:-disabled}
# Below Linux's ephemeral range (32768-60999), as compare-persist.sh.
PORT_BASE=${PORT_BASE:-27600}
DATA_BASE=${DATA_BASE:-target}
OUT=${OUT:-target/compare-replication.jsonl}
REDIS=${REDIS:-$(command -v redis-server || true)}

[ -n "$REDIS" ] || { echo "redis-server not found (apt-get install redis-server)" >&2; exit 1; }
command -v redis-cli >/dev/null || { echo "redis-cli not found (apt-get install redis-tools)" >&2; exit 1; }
command -v jq >/dev/null || { echo "jq not found (apt-get install jq)" >&2; exit 1; }
for c in $SYNC_CASES; do
  case $c in idle | get | set) ;; *) echo "SYNC_CASES: unknown case $c" >&2; exit 1 ;; esac
done
has() { [[ " $SECTIONS " == *" $1 "* ]]; }
if has failover; then
  command -v redis-sentinel >/dev/null || { echo "redis-sentinel not found (apt-get install redis-sentinel)" >&2; exit 1; }
  python3 -c 'import redis, pytest' 2>/dev/null || { echo "python3 needs redis and pytest (pip)" >&2; exit 1; }
fi

# TABLES_ONLY=1: print the tables of an existing OUT, run nothing.
RUN_SECTIONS=$SECTIONS
[ -z "${TABLES_ONLY:-}" ] || { RUN_SECTIONS="" NO_BUILD=1; }
runs() { [[ " $RUN_SECTIONS " == *" $1 "* ]]; }

[ -n "${NO_BUILD:-}" ] || cargo build --release -q -p amalgam-server -p amalgam-bench
target_dir=${CARGO_TARGET_DIR:-target}
bench=$target_dir/release/amalgam-bench
amalgam=$(cd "$target_dir/release" && pwd)/amalgam
probe=scripts/replication-probe.py

mkdir -p "$DATA_BASE" "$(dirname "$OUT")"
work=$(mktemp -d "$DATA_BASE/compare-replication.XXXXXX")
work=$(cd "$work" && pwd)

# --- servers, cleanup -------------------------------------------------------

declare -A PID=() PORT=() LOG=()
bg_pids=() # background loads; replicas started by the probe (their pidfiles)
cleanup() {
  local p f
  for f in "$work"/*.pid; do
    [ -e "$f" ] && bg_pids+=("$(cat "$f")")
  done
  for p in "${bg_pids[@]}" "${PID[@]}"; do
    kill "$p" 2>/dev/null || true
  done
  for p in "${bg_pids[@]}" "${PID[@]}"; do
    wait "$p" 2>/dev/null || true
  done
  if [ -n "${KEEP_DATA:-}" ]; then
    echo "data kept in $work" >&2
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
next_port=$PORT_BASE
take_port() { # sets TAKEN to a free port
  while listening "$next_port"; do next_port=$((next_port + 1)); done
  TAKEN=$next_port
  next_port=$((next_port + 1))
}

# server_argv NAME KIND [PRIMARY_PORT]: sets ARGV to NAME's command line
# (KIND redis|amalgam), taking NAME's port (and a directory for Redis).
server_argv() {
  local name=$1 kind=$2 primary=${3:-}
  take_port
  PORT[$name]=$TAKEN
  LOG[$name]=$work/$name.log
  if [ "$kind" = redis ]; then
    local dir=$work/$name
    mkdir -p "$dir"
    ARGV=("$REDIS" --bind 127.0.0.1 --port "${PORT[$name]}" --dir "$dir" --save '' --appendonly no
      --maxclients 4096 --repl-diskless-sync-delay 0 --repl-diskless-load "$REDIS_DISKLESS_LOAD")
  else
    take_port
    ARGV=("$amalgam" -l 127.0.0.1 -U 0 -t "$SERVER_THREADS" -m "$MEMORY_MB" --eviction none -c 4096
      -p "$TAKEN" --resp-port "${PORT[$name]}")
  fi
  [ -z "$primary" ] || ARGV+=(--replicaof 127.0.0.1 "$primary")
}

# start_server NAME KIND [PRIMARY_PORT]: starts it, waits for PONG.
start_server() {
  server_argv "$@"
  "${ARGV[@]}" >>"${LOG[$1]}" 2>&1 &
  PID[$1]=$!
  local i
  for i in $(seq 1 200); do
    alive "$1"
    [ "$(redis-cli -p "${PORT[$1]}" ping 2>/dev/null)" = PONG ] && return 0
    sleep 0.05
  done
  echo "$1: no PONG on port ${PORT[$1]}" >&2
  exit 1
}

stop_server() {
  kill "${PID[$1]}" 2>/dev/null || true
  wait "${PID[$1]}" 2>/dev/null || true
  unset "PID[$1]"
}

alive() { kill -0 "${PID[$1]}" 2>/dev/null || { echo "$1 died; its log:" >&2; tail -n 30 "${LOG[$1]}" >&2; exit 1; }; }

tmp_json=$work/run.json
[ -n "${TABLES_ONLY:-}" ] || : >"$OUT"
shape=(--protocol resp --workload memc3 --key-bytes 16 --value-bytes 32 --distribution uniform)
load=(--threads "$THREADS" --conns-per-thread "$CONNS")

preload() { # NAME KEYS
  alive "$1"
  "$bench" net "${shape[@]}" --keys "$2" "${load[@]}" --pipeline 16 --server "127.0.0.1:${PORT[$1]}" \
    --preload-only --label "${1%%-*}" --json "$tmp_json" >&2
}

# servers_in_round R: the servers' order in round R (alternating).
servers_in_round() { if [ $(($1 % 2)) = 1 ]; then echo "redis amalgam"; else echo "amalgam redis"; fi; }

# record JSON_FILE EXTRA_JSON: appends the file's one line + EXTRA to OUT.
record() { jq -c --argjson x "$2" '. + $x' "$1" >>"$OUT"; }

# cpu_begin PRIMARY_PID REPLICA_PID...: starts a CPU window over these
# processes; cpu_end prints its JSON: cores each used over the window's wall
# time (the primary's by thread name too: where replication's cost goes).
cpu_begin() {
  CPU_PIDS=("$@")
  CPU_T0=$EPOCHREALTIME
  CPU0=$(python3 "$probe" cpu "${CPU_PIDS[@]}")
}
cpu_end() {
  local cpu1 t1=$EPOCHREALTIME
  cpu1=$(python3 "$probe" cpu "${CPU_PIDS[@]}")
  jq -nc --argjson a "$CPU0" --argjson b "$cpu1" --argjson w "$(awk -v a="$CPU_T0" -v b="$t1" 'BEGIN { print b - a }')" \
    --arg p "${CPU_PIDS[0]}" --argjson r "$(jq -nc '$ARGS.positional' --args "${CPU_PIDS[@]:1}")" '
    {cpu: {wall_s: $w, primary_cores: (($b[$p].total - $a[$p].total) / $w),
      primary_threads: ($b[$p].threads | to_entries
        | map({key, value: ((.value - ($a[$p].threads[.key] // 0)) / $w)}) | from_entries),
      replicas_cores: ([$r[] | $b[.].total - $a[.].total] | add // 0 | . / $w)}}'
}

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
echo "load average at the start: $(loadavg)" >&2
LOAD_START=$(loadavg)

# --- 1: full sync -------------------------------------------------------------

if runs fullsync; then
  for k in redis amalgam; do start_server "$k-primary" "$k"; done
  for k in redis amalgam; do preload "$k-primary" "$KEYS"; done
  for r in $(seq 1 "$RUNS"); do
    for c in $SYNC_CASES; do
      for k in $(servers_in_round "$r"); do
        alive "$k-primary"
        load_pid=
        if [ "$c" != idle ]; then
          if [ "$c" = get ]; then frac=1; else frac=0; fi
          # Longer than any sync; killed once the replica has converged.
          "$bench" net "${shape[@]}" --keys "$KEYS" "${load[@]}" --server "127.0.0.1:${PORT[$k-primary]}" \
            --no-preload --get-fraction "$frac" --duration 3600 --warmup 0 --label "$k" >/dev/null 2>&1 &
          load_pid=$!
          bg_pids+=("$load_pid")
          sleep 2 # connected and at speed before the probe's 3 s "before" window
        fi
        name=$k-replica-$r-$c
        server_argv "$name" "$k" "${PORT[$k-primary]}"
        echo "full sync: $name" >&2
        python3 "$probe" sync --primary-port "${PORT[$k-primary]}" --primary-pid "${PID[$k-primary]}" \
          --replica-port "${PORT[$name]}" --replica-pidfile "$work/$name.pid" --replica-log "${LOG[$name]}" \
          -- "${ARGV[@]}" >"$tmp_json"
        if [ -n "$load_pid" ]; then
          kill "$load_pid" 2>/dev/null || true
          wait "$load_pid" 2>/dev/null || true
        fi
        kill "$(cat "$work/$name.pid")" 2>/dev/null || true
        # Not our child (the probe started it): wait until it is gone.
        while kill -0 "$(cat "$work/$name.pid")" 2>/dev/null; do sleep 0.1; done
        rm -f "$work/$name.pid"
        rm -rf "${work:?}/$name"
        cat "$tmp_json" >&2
        record "$tmp_json" "{\"section\":\"fullsync\",\"label\":\"$k\",\"case\":\"$c\",\"run\":$r}"
      done
    done
  done
  for k in redis amalgam; do stop_server "$k-primary"; done
fi

# --- 2 and 3: throughput by replicas attached, replication lag ---------------

# attach KIND N: N of KIND's two replicas follow its primary, the other not.
attach() {
  python3 "$probe" attach --primary-port "${PORT[$1-p]}" --replicas "${PORT[$1-r1]},${PORT[$1-r2]}" --count "$2" >&2
}

if runs throughput || runs lag; then
  for k in redis amalgam; do
    start_server "$k-p" "$k"
    start_server "$k-r1" "$k"
    start_server "$k-r2" "$k"
  done
  for k in redis amalgam; do preload "$k-p" "$LOAD_KEYS"; done
fi

if runs throughput; then
  for r in $(seq 1 "$RUNS"); do
    if [ $((r % 2)) = 1 ]; then order="0 1 2"; else order="2 1 0"; fi
    for n in $order; do
      for k in $(servers_in_round "$r"); do
        attach "$k" "$n"
        attached=()
        [ "$n" -lt 1 ] || attached+=("${PID[$k-r1]}")
        [ "$n" -lt 2 ] || attached+=("${PID[$k-r2]}")
        for p in $PIPELINES; do
          for s in p r1 r2; do alive "$k-$s"; done
          cpu_begin "${PID[$k-p]}" "${attached[@]}"
          "$bench" net "${shape[@]}" --keys "$LOAD_KEYS" "${load[@]}" --server "127.0.0.1:${PORT[$k-p]}" \
            --no-preload --get-fraction 0 --pipeline "$p" --duration "$DURATION" --warmup "$WARMUP" \
            --server-pid "${PID[$k-p]}" --label "$k" --json "$tmp_json" >&2
          record "$tmp_json" "$(cpu_end | jq -c --argjson n "$n" --arg c "set-p$p" --argjson r "$r" \
            '. + {section: "throughput", replicas: $n, case: $c, run: $r}')"
        done
      done
    done
  done
fi

if runs lag; then
  for k in redis amalgam; do attach "$k" 1; done
  for r in $(seq 1 "$RUNS"); do
    for rate in $LAG_RATES; do
      for k in $(servers_in_round "$r"); do
        for s in p r1; do alive "$k-$s"; done
        load_pid=
        cpu_begin "${PID[$k-p]}" "${PID[$k-r1]}"
        if [ "$rate" != 0 ]; then
          "$bench" net "${shape[@]}" --keys "$LOAD_KEYS" "${load[@]}" --server "127.0.0.1:${PORT[$k-p]}" \
            --no-preload --get-fraction 0 --rate "$rate" --duration $((LAG_SECS + 2)) --warmup "$WARMUP" \
            --server-pid "${PID[$k-p]}" --label "$k" --json "$work/lag-load.json" >&2 &
          load_pid=$!
          bg_pids+=("$load_pid")
          sleep $((WARMUP + 1))
        fi
        python3 "$probe" lag --port "${PORT[$k-p]}" --seconds "$LAG_SECS" >"$tmp_json"
        if [ -n "$load_pid" ]; then
          wait "$load_pid"
          extra=$(jq -c '{load: {requests_per_s, latency_us, errors}}' "$work/lag-load.json")
        else
          extra='{"load":null}'
        fi
        extra=$(jq -c --argjson c "$(cpu_end)" '. + $c' <<<"$extra")
        cat "$tmp_json" >&2
        record "$tmp_json" "$(jq -c --arg k "$k" --argjson rate "$rate" --argjson r "$r" \
          '. + {section: "lag", label: $k, rate: $rate, run: $r}' <<<"$extra")"
      done
    done
  done
fi

if runs throughput || runs lag; then
  for k in redis amalgam; do
    for s in r1 r2 p; do stop_server "$k-$s"; done
  done
fi

# --- 4: failover under Sentinel -------------------------------------------------

if runs failover; then
  for r in $(seq 1 "$FAILOVER_RUNS"); do
    for k in $(servers_in_round "$r"); do
      if [ "$k" = redis ]; then bin=$REDIS; else bin=$amalgam; fi
      echo "failover: $k, run $r" >&2
      AMALGAM_TEST_REPL_BIN=$bin python3 -m pytest -q -s -p no:cacheprovider tests/python/test_replication.py \
        -k test_sentinel_fails_over >"$work/failover.log" 2>&1 ||
        { echo "the failover test failed against $k:" >&2; cat "$work/failover.log" >&2; exit 1; }
      line=$(grep -o 'failover: the first write .*' "$work/failover.log") ||
        { echo "no failover line from the test against $k:" >&2; cat "$work/failover.log" >&2; exit 1; }
      echo "$k: $line" >&2
      sent=$(sed -E 's/.*was sent ([0-9.]+)s after the kill.*/\1/' <<<"$line")
      answered=$(sed -E 's/.*answered \(with its WAIT\) ([0-9.]+)s after.*/\1/' <<<"$line")
      jq -nc --arg k "$k" --argjson r "$r" --argjson sent "$sent" --argjson answered "$answered" \
        '{section: "failover", label: $k, run: $r, sent_s: $sent, answered_s: $answered}' >>"$OUT"
    done
  done
fi

# --- tables -------------------------------------------------------------------

jq_defs='
  def median: sort | if length == 0 then null elif length % 2 == 1 then .[length / 2 | floor]
    else (.[length / 2 - 1] + .[length / 2]) / 2 end;
  def f(d): if . == null then "-" else (. * pow(10; d) | round) / pow(10; d) | tostring end;
  def ratio(a; b): if a == null or b == null or b == 0 then null else a / b end;
  def med(rows; s; p): [rows[] | select(.label == s) | p] | median;
'
redis_version=$("$REDIS" --version | grep -o 'v=[0-9.]*' | cut -d= -f2)
echo "Amalgam (-t $SERVER_THREADS, --eviction none -m $MEMORY_MB) vs Redis $redis_version, replication;" \
  "16 B keys, 32 B values; $THREADS client threads x $CONNS conns; medians of $RUNS alternating rounds;" \
  "load average $LOAD_START at the start, $(loadavg) at the end."

if has fullsync; then
  echo
  echo "### 1. Full sync of $KEYS keys (replica exec to link up and DBSIZE equal; primary's RSS sampled every 50 ms," \
    "PSS as often as its page-table walk takes at most 20% of a CPU)"
  echo
  jq -rs "$jq_defs"'
    def mb: . / 1024 | f(0);
    [.[] | select(.section == "fullsync")] as $all
    | "| load during the sync | server | sync s | primary RSS before MB | RSS peak / before"
      + " | PSS (primary + children) before MB | PSS peak / before | RSS (primary + children) peak / before"
      + " | PSS samples (ms each) | primary cmds/s before | cmds/s during | during / before |",
      "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
      ($all | group_by(.case) | sort_by({"idle": 0, "get": 1, "set": 2}[.[0].case])[] as $c
       | ("redis", "amalgam") as $s | [$c[] | select(.label == $s)] as $rows | select($rows | length > 0)
       | ($rows | map(.sync_s) | median) as $t
       | ($rows | map(.before.rss_kb) | median) as $rss0
       | "| \($c[0].case) | \($s) | \($t | f(2)) | \($rss0 | mb)"
         + " | \($rows | map(ratio(.peak.rss_kb; .before.rss_kb)) | median | f(3))"
         + " | \($rows | map(.before.sum_pss_kb) | median | mb)"
         + " | \($rows | map(ratio(.peak.sum_pss_kb; .before.sum_pss_kb)) | median | f(3))"
         + " | \($rows | map(ratio(.peak.sum_rss_kb; .before.sum_rss_kb)) | median | f(3))"
         + " | \($rows | map(.pss_samples) | median | f(0)) (\($rows | map(.pss_sample_ms_mean) | median | f(0)) ms)"
         + (if $c[0].case == "idle" then " | - | - | - |" else
             " | \($rows | map(.primary_cmds_per_s_before) | median | f(0))"
             + " | \($rows | map(.primary_cmds_per_s_during) | median | f(0))"
             + " | \($rows | map(ratio(.primary_cmds_per_s_during; .primary_cmds_per_s_before)) | median | f(3)) |"
           end))' "$OUT"
  echo
  echo "Sync s, amalgam / redis: $(jq -rs "$jq_defs"'[.[] | select(.section == "fullsync")] as $all
    | [$all | group_by(.case)[] | "\(.[0].case) \(ratio(med(.; "amalgam"; .sync_s); med(.; "redis"; .sync_s)) | f(3))"]
    | join(", ")' "$OUT")"
fi

if has throughput; then
  echo
  echo "### 2. Primary SET throughput with 0, 1, 2 replicas ($LOAD_KEYS keys, uniform, ${DURATION} s runs)"
  echo
  jq -rs "$jq_defs"'
    [.[] | select(.section == "throughput")] as $all
    | "| case | replicas | redis SET/s | amalgam SET/s | amalgam / redis | redis / its 0 | amalgam / its 0"
      + " | redis primary CPU us/SET | amalgam primary CPU us/SET | redis replicas cores | amalgam replicas cores"
      + " | redis p99 us | amalgam p99 us | errors |",
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
      ($all | group_by(.case)[] | . as $c | [$c[] | select(.replicas == 0)] as $zero
       | (0, 1, 2) as $n | [$c[] | select(.replicas == $n)] as $rows | select($rows | length > 0)
       | med($rows; "redis"; .requests_per_s) as $r | med($rows; "amalgam"; .requests_per_s) as $a
       | "| \($c[0].case) | \($n) | \($r | f(0)) | \($a | f(0)) | \(ratio($a; $r) | f(3))"
         + " | \(ratio($r; med($zero; "redis"; .requests_per_s)) | f(3))"
         + " | \(ratio($a; med($zero; "amalgam"; .requests_per_s)) | f(3))"
         + " | \(med($rows; "redis"; .server_cpu_us_per_request) | f(2))"
         + " | \(med($rows; "amalgam"; .server_cpu_us_per_request) | f(2))"
         + " | \(med($rows; "redis"; .cpu.replicas_cores) | f(2)) | \(med($rows; "amalgam"; .cpu.replicas_cores) | f(2))"
         + " | \(med($rows; "redis"; .latency_us.p99) | f(0)) | \(med($rows; "amalgam"; .latency_us.p99) | f(0))"
         + " | \([$rows[] | .errors.total] | add) |")' "$OUT"
  echo
  echo "The primaries' CPU by thread, cores (median over rounds; threads of one name summed):"
  echo
  jq -rs "$jq_defs"'
    [.[] | select(.section == "throughput")] as $all
    | "| case | replicas | server | threads (cores) |", "|---|---:|---|---|",
      ($all | group_by([.case, .replicas, .label])[] as $rows
       | ([$rows[] | .cpu.primary_threads | keys[]] | unique) as $names
       | "| \($rows[0].case) | \($rows[0].replicas) | \($rows[0].label) | "
         + ([$names[] as $t | {t: $t, v: ($rows | map(.cpu.primary_threads[$t] // 0) | median)} | select(.v >= 0.005)]
            | sort_by(-.v) | map("\(.t) \(.v | f(2))") | join(", ")) + " |")' "$OUT"
fi

if has lag; then
  echo
  echo "### 3. Replication lag: SET + WAIT 1 0 on one connection, one replica, ${LAG_SECS} s of probes per run"
  echo
  jq -rs "$jq_defs"'
    [.[] | select(.section == "lag")] as $all
    | "| SET load (open loop) | server | achieved SET/s | load p99 us | SET+WAIT p50 us | p99 us | p999 us"
      + " | SET+PING p50 us | p99 us | p999 us | probes per run | WAITs not acked | primary cores | replica cores |",
      "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
      ($all | group_by(.rate)[] as $g | ("redis", "amalgam") as $s
       | [$g[] | select(.label == $s)] as $rows | select($rows | length > 0)
       | def m(p): $rows | map(p) | median;
       "| \($g[0].rate) | \($s) | \(m(.load.requests_per_s) | f(0)) | \(m(.load.latency_us.p99) | f(0))"
         + " | \(m(.set_wait_us.p50) | f(0)) | \(m(.set_wait_us.p99) | f(0)) | \(m(.set_wait_us.p999) | f(0))"
         + " | \(m(.set_ping_us.p50) | f(0)) | \(m(.set_ping_us.p99) | f(0)) | \(m(.set_ping_us.p999) | f(0))"
         + " | \(m(.set_wait_us.n + .set_ping_us.n) | f(0)) | \($rows | map(.wait_not_acked) | add)"
         + " | \(m(.cpu.primary_cores) | f(2)) | \(m(.cpu.replicas_cores) | f(2)) |")' "$OUT"
fi

if has failover; then
  echo
  echo "### 4. Failover under Sentinel (down-after-milliseconds 1000), $FAILOVER_RUNS runs per server"
  echo
  jq -rs "$jq_defs"'
    [.[] | select(.section == "failover")] as $all
    | "| server | kill to first successful write sent, s (median) | runs | kill to its reply (with WAIT 1 1000), s (median) | runs |",
      "|---|---:|---|---:|---|",
      (("redis", "amalgam") as $s | [$all[] | select(.label == $s)] as $rows | select($rows | length > 0)
       | "| \($s) | \($rows | map(.sent_s) | median | f(2)) | \($rows | map(.sent_s | f(2)) | join(", "))"
         + " | \($rows | map(.answered_s) | median | f(2)) | \($rows | map(.answered_s | f(2)) | join(", ")) |")' "$OUT"
fi
echo
echo "Per-run JSON lines: $OUT"
