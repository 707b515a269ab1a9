#!/usr/bin/env bash
# What persistence costs, Amalgam (RESP port) vs Debian's redis-server 7,
# side by side in one run (issue 5 §5).
#
# Builds amalgam and amalgam-bench (release). Every server gets a fresh,
# empty data directory under a temporary directory in DATA_BASE (removed on
# exit, like every server this script starts). Amalgam runs with
# -t SERVER_THREADS -m MEMORY_MB; Redis executes commands on one thread.
# The load is `amalgam-bench net --protocol resp --workload mercury-ycsb-50`
# (24 B keys, 10 B values, 50% GET / 50% SET of preloaded keys, Zipf 0.99),
# closed loop, THREADS client threads x CONNS connections, one key per
# request. Sections (SECTIONS picks some):
#
# 1 throughput: one server per (server, mode), all started at once, KEYS
#   keys preloaded into each; modes (MODES):
#     off       redis --appendonly no            amalgam without --dir
#     no        redis --appendonly yes --appendfsync no        amalgam --fsync no
#     everysec  redis ... --appendfsync everysec   amalgam --fsync everysec
#     always    redis ... --appendfsync always     amalgam --fsync always
#   Redis always has --save '' and --auto-aof-rewrite-percentage 0 (its AOF
#   rewrite forks; Amalgam's log is never rewritten, and its snapshots are
#   off here: --snapshot-every 0 --snapshot-after-writes 0), so both pay for
#   the log alone. For each pipeline depth in PIPELINES, RUNS rounds; a
#   round runs every mode on both servers (redis-off, amalgam-off,
#   redis-no, ...; even rounds in reverse order), so slow drift and what
#   one run leaves behind hit every mode alike. Table: median
#   req/s, each server's ratio to its own "off" (issue 5's target: Amalgam
#   everysec >= 0.9), amalgam / redis, and Amalgam's log records per
#   write(2) and per fdatasync over the run (INFO persistence deltas:
#   amalgam_log_records / amalgam_log_writes / amalgam_log_fsyncs).
# 2 fsync: "one fsync per write" vs group commit, on section 1's servers:
#   SET only (--get-fraction 0) at pipeline 1 with 1 connection on the
#   `always` servers (every write waits for its own fdatasync: records per
#   fsync = 1), with THREADS x CONNS connections on them, and with 1
#   connection on the `off` servers (the round trip alone, to see how much
#   of the 1-connection time is the fsync); RUNS alternating rounds. Table:
#   req/s and the ratio many / one connection under `always` (issue 5's
#   target for Amalgam: >= 10; it is bounded by the connection count).
# 3 snapshot: both servers with the log (everysec, SNAP_FSYNC) and SNAP_KEYS
#   keys of the ycsb-50 shape (default 4 Mi: ~270 MB RSS in Amalgam,
#   ~450 MB in Redis; the ycsb-50 shape is kept rather than bigger values so
#   the load is the same as in section 1). (a) the ycsb-50 load without
#   snapshots and (b) the same while snapshots are taken back to back: a
#   loop on one connection polls INFO persistence every 50 ms and in (b)
#   sends BGSAVE whenever rdb_bgsave_in_progress is 0 (in (a) it only
#   polls, so its own cost is in both). Amalgam snapshots in a thread,
#   Redis forks. After (b) the script waits for the last snapshot to end.
#   RUNS alternating rounds (redis-none, amalgam-none, redis-snap,
#   amalgam-snap). Table: req/s, snapshots completed per run (rdb_saves
#   delta), ratio with / without (target for Amalgam: >= 0.9).
#   (c) memory during one BGSAVE under a write-heavy load (100% SET,
#   MEM_DISTRIBUTION, THREADS x CONNS): PSS and RSS from
#   /proc/PID/smaps_rollup every ~20 ms, the server plus its children
#   (Redis's fork child, found in /proc/PID/task/*/children); "before" is
#   the last sample before BGSAVE (2 s into the load), "peak" the largest sum while it runs.
#   PSS splits pages shared between parent and child, so the sum is the
#   memory the pair really uses; the RSS sum counts shared pages twice
#   (an upper bound). Redis's own count of copied pages (INFO
#   rdb_last_cow_size) is shown too. The load runs MEM_LOAD_SECS; the
#   table says whether it outlasted the snapshot. Targets: Amalgam <= 1.1x
#   (Redis: up to ~3x).
# 4 recovery: RECOVERY_KEYS items (ycsb-50 shape) written over RESP with
#   pipelining (amalgam-bench net --preload-only) into amalgam --dir D
#   --fsync everysec (no snapshots); kill -9; restart on D: the whole log is
#   replayed ("log only"); then SAVE, SIGTERM, restart: the snapshot is
#   loaded ("snapshot"). Reported: the server's own time (amalgam's stderr
#   "recovered from ... in X s"), the wall time from exec to the first PONG,
#   items/s. Unless REDIS_RECOVERY=0, the same for Redis: appendonly yes
#   everysec, fill, kill -9, restart (AOF replay, its log's "DB loaded from
#   append only file: X seconds"), SAVE, SIGTERM, restart with appendonly no
#   (RDB load, "DB loaded from disk").
#
# Every measured run's JSON goes to OUT, one line each, with "section",
# "case"/"mode", "run" (and INFO deltas, memory samples, recovery times)
# added; the runs' own reports go to stderr; the tables to stdout. The
# client shares the machine with the servers: on few cores the numbers are
# noisy, and absolute req/s are the client's as much as the server's.
#
# Servers take consecutive free ports from PORT_BASE (about 20 in all).
# Defaults take about 10 minutes on 2 cores (+ the build); the fills,
# snapshots and loads of sections 3-4 take longer on a busy machine.
# Usage: [SECTIONS="throughput fsync snapshot recovery"] [DURATION=4]
#        [WARMUP=1] [RUNS=3] [KEYS=1048576] [MODES="off no everysec always"]
#        [PIPELINES="1 16"] [THREADS=2] [CONNS=25] [SERVER_THREADS=2]
#        [MEMORY_MB=4096] [SNAP_KEYS=4194304] [SNAP_FSYNC=everysec]
#        [MEM_DISTRIBUTION=uniform] [MEM_LOAD_SECS=15]
#        [RECOVERY_KEYS=10485760] [REDIS_RECOVERY=1] [PORT_BASE=27400]
#        [DATA_BASE=target] [KEEP_DATA=1] [OUT=target/compare-persist.jsonl]
#        [NO_BUILD=1] scripts/compare-persist.sh
# NO_BUILD=1 uses the release binaries already in $CARGO_TARGET_DIR (or
# target/). DATA_BASE is where the data directories go: its file system is
# what the fsyncs measure. KEEP_DATA=1 keeps the temporary directory.
set -euo pipefail
cd "$(dirname "$0")/.."

SECTIONS=${SECTIONS:-throughput fsync snapshot recovery}
DURATION=${DURATION:-4}
WARMUP=${WARMUP:-1}
RUNS=${RUNS:-3}
KEYS=${KEYS:-1048576}
MODES=${MODES:-off no everysec always}
PIPELINES=${PIPELINES:-1 16}
THREADS=${THREADS:-2}
CONNS=${CONNS:-25}
SERVER_THREADS=${SERVER_THREADS:-2}
MEMORY_MB=${MEMORY_MB:-4096}
SNAP_KEYS=${SNAP_KEYS:-4194304}
SNAP_FSYNC=${SNAP_FSYNC:-everysec}
MEM_DISTRIBUTION=${MEM_DISTRIBUTION:-uniform}
MEM_LOAD_SECS=${MEM_LOAD_SECS:-15}
RECOVERY_KEYS=${RECOVERY_KEYS:-10485760}
REDIS_RECOVERY=${REDIS_RECOVERY:-1}
# Below Linux's ephemeral range (32768-60999): a client socket there, even
# in TIME_WAIT, makes a server's bind fail with "Address already in use".
PORT_BASE=${PORT_BASE:-27400}
DATA_BASE=${DATA_BASE:-target}
OUT=${OUT:-target/compare-persist.jsonl}
REDIS=${REDIS:-$(command -v redis-server || true)}
REDIS_CLI=${REDIS_CLI:-$(command -v redis-cli || true)}

[ -n "$REDIS" ] || { echo "redis-server not found (apt-get install redis-server)" >&2; exit 1; }
[ -n "$REDIS_CLI" ] || { echo "redis-cli not found (apt-get install redis-tools)" >&2; exit 1; }
command -v jq >/dev/null || { echo "jq not found (apt-get install jq)" >&2; exit 1; }
[ -n "${EPOCHREALTIME:-}" ] || { echo "needs bash 5 (EPOCHREALTIME)" >&2; exit 1; }
for m in $MODES; do
  case $m in off | no | everysec | always) ;; *) echo "MODES: unknown mode $m" >&2; exit 1 ;; esac
done
has() { [[ " $SECTIONS " == *" $1 "* ]]; }

[ -n "${NO_BUILD:-}" ] || cargo build --release -q -p amalgam-server -p amalgam-bench
target_dir=${CARGO_TARGET_DIR:-target}
bench=$target_dir/release/amalgam-bench
amalgam=$target_dir/release/amalgam

mkdir -p "$DATA_BASE" "$(dirname "$OUT")"
work=$(mktemp -d "$DATA_BASE/compare-persist.XXXXXX")
work=$(cd "$work" && pwd)

# --- servers, cleanup -------------------------------------------------------

declare -A PID=() PORT=() DIR=() LOG=()
bg_pids=() # snapshot loops and background loads
bg_forget() { # PID: no longer ours to kill
  local p keep=()
  for p in "${bg_pids[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
  bg_pids=("${keep[@]}")
}
cleanup() {
  local p
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

# A FIFO nobody writes: `read -t` on it sleeps without forking a process
# (the samplers below run every 20 ms next to the measured servers).
mkfifo "$work/sleep"
exec {sleep_fd}<>"$work/sleep"
snooze() { read -r -t "$1" -u "$sleep_fd" _ || true; }
now_us() { local t=$EPOCHREALTIME; echo $((10#${t/./})); }

listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
next_port=$PORT_BASE
take_port() { # sets TAKEN to a free port
  while listening "$next_port"; do next_port=$((next_port + 1)); done
  TAKEN=$next_port
  next_port=$((next_port + 1))
}

# start_server NAME KIND MODE [DIR]: KIND redis|amalgam, MODE off|no|everysec|always
# (Redis: the appendfsync policy, "off" = appendonly no; "rdb" = appendonly
# no, the data directory loaded from its dump.rdb). A fresh DIR unless one
# is given. Does not wait for it to be ready.
start_server() {
  local name=$1 kind=$2 mode=$3 dir=${4:-}
  if [ -z "$dir" ]; then
    dir=$(mktemp -d "$work/$name.XXXX")
  fi
  if [ -z "${PORT[$name]:-}" ]; then
    take_port
    PORT[$name]=$TAKEN
  fi
  DIR[$name]=$dir
  LOG[$name]=$work/$name.log
  if [ "$kind" = redis ]; then
    local args=(--bind 127.0.0.1 --port "${PORT[$name]}" --dir "$dir" --save '' --maxclients 4096)
    case $mode in
      off | rdb) args+=(--appendonly no) ;;
      *) args+=(--appendonly yes --appendfsync "$mode" --auto-aof-rewrite-percentage 0) ;;
    esac
    "$REDIS" "${args[@]}" >>"${LOG[$name]}" 2>&1 &
  else
    take_port
    local args=(-l 127.0.0.1 -U 0 -t "$SERVER_THREADS" -m "$MEMORY_MB" -c 4096 -p "$TAKEN" --resp-port "${PORT[$name]}")
    [ "$mode" = off ] || args+=(--dir "$dir" --fsync "$mode" --snapshot-every 0 --snapshot-after-writes 0)
    "$amalgam" "${args[@]}" 2>>"${LOG[$name]}" &
  fi
  PID[$name]=$!
}

# wait_ready NAME [SECONDS]: until the server answers PING with PONG (Redis
# listens while it loads and answers -LOADING; amalgam listens once
# recovered). Sets READY_US to the microseconds since START_US.
wait_ready() {
  local name=$1 limit=$((${2:-30} * 1000000)) t0
  t0=$(now_us)
  while :; do
    kill -0 "${PID[$name]}" 2>/dev/null || { echo "$name exited; its log:" >&2; cat "${LOG[$name]}" >&2; exit 1; }
    if [ "$("$REDIS_CLI" -p "${PORT[$name]}" ping 2>/dev/null)" = PONG ]; then
      READY_US=$(($(now_us) - ${START_US:-$t0}))
      return 0
    fi
    [ $(($(now_us) - t0)) -lt "$limit" ] || { echo "$name: no PONG on port ${PORT[$name]}" >&2; exit 1; }
    snooze 0.01
  done
}

# stop_server NAME [SIGNAL]: signals it (TERM by default) and waits for it.
stop_server() {
  local name=$1 sig=${2:-TERM}
  kill -"$sig" "${PID[$name]}" 2>/dev/null || true
  wait "${PID[$name]}" 2>/dev/null || true
  unset "PID[$name]"
}

alive() { kill -0 "${PID[$1]}" 2>/dev/null || { echo "$1 died; its log:" >&2; tail -n 20 "${LOG[$1]}" >&2; exit 1; }; }
kind_of() { echo "${1%%-*}"; }

# info NAME FIELD...: the fields of INFO persistence, space-separated
# ("null" for a field the server does not have).
info() {
  local name=$1
  shift
  "$REDIS_CLI" -p "${PORT[$name]}" info persistence | tr -d '\r' | awk -F: -v want="$*" '
    BEGIN { n = split(want, w, " ") }
    { v[$1] = $2 }
    END { for (i = 1; i <= n; i++) printf "%s%s", (i > 1 ? " " : ""), ((w[i] in v) ? v[w[i]] : "null"); print "" }'
}

# wait_no_bgsave NAME: until rdb_bgsave_in_progress is 0.
wait_no_bgsave() {
  local t0
  t0=$(now_us)
  until [ "$(info "$1" rdb_bgsave_in_progress)" = 0 ]; do
    [ $(($(now_us) - t0)) -lt 600000000 ] || { echo "$1: a snapshot has run for 10 minutes" >&2; exit 1; }
    snooze 0.1
  done
}

# RESP on a file descriptor, without forking (for the 20-50 ms loops).
# resp_info FD: INFO persistence; sets BGSAVE_RUNNING and SAVES.
resp_info() {
  local fd=$1 hdr line n got=0
  printf 'INFO persistence\r\n' >&"$fd"
  IFS= read -r -t 10 -u "$fd" hdr || return 1
  hdr=${hdr%$'\r'}
  [ "${hdr:0:1}" = '$' ] || return 1
  n=${hdr:1}
  while [ "$got" -lt $((n + 2)) ]; do
    IFS= read -r -t 10 -u "$fd" line || return 1
    got=$((got + ${#line} + 1))
    line=${line%$'\r'}
    case $line in
      rdb_bgsave_in_progress:*) BGSAVE_RUNNING=${line#*:} ;;
      rdb_saves:*) SAVES=${line#*:} ;;
    esac
  done
}
# resp_line FD COMMAND: sends an inline command, sets REPLY to its one-line reply.
resp_line() {
  printf '%s\r\n' "$2" >&"$1"
  IFS= read -r -t 600 -u "$1" REPLY || return 1
  REPLY=${REPLY%$'\r'}
}

# mem_sample PID: PSS_KB and RSS_KB summed over PID and its children;
# NCHILD their count.
mem_sample() {
  local p v f l all=("$1") kids lines
  PSS_KB=0 RSS_KB=0 NCHILD=0
  for f in /proc/"$1"/task/*/children; do
    kids=()
    { read -r -a kids <"$f"; } 2>/dev/null || true
    NCHILD=$((NCHILD + ${#kids[@]}))
    all+=("${kids[@]}")
  done
  for p in "${all[@]}"; do
    # One read of the whole file: a line-by-line `read` seeks back after
    # every line, and each seek makes the kernel walk the page tables again
    # (160 ms instead of 8 for a 450 MB process).
    lines=()
    { mapfile -t lines <"/proc/$p/smaps_rollup"; } 2>/dev/null || true
    for l in "${lines[@]}"; do
      v=${l//[!0-9]/} # "Rss:   455656 kB"
      case $l in
        Rss:*) RSS_KB=$((RSS_KB + v)) ;;
        Pss:*) PSS_KB=$((PSS_KB + v)) ;;
      esac
    done
  done
}

# --- amalgam-bench runs -----------------------------------------------------

tmp_json=$work/run.json
workload=(--protocol resp --workload mercury-ycsb-50)
: >"$OUT"

preload() { # NAME KEYS
  alive "$1"
  "$bench" net "${workload[@]}" --keys "$2" --threads "$THREADS" --conns-per-thread "$CONNS" \
    --server "127.0.0.1:${PORT[$1]}" --preload-only --label "$(kind_of "$1")" --json "$tmp_json" >&2
}

# run NAME EXTRA_JSON BENCH_FLAGS...: one timed run, its JSON (+ EXTRA_JSON
# + "server": NAME) appended to OUT.
run() {
  local name=$1 extra=$2
  shift 2
  alive "$name"
  "$bench" net "${workload[@]}" --server "127.0.0.1:${PORT[$name]}" --no-preload --duration "$DURATION" \
    --warmup "$WARMUP" --server-pid "${PID[$name]}" --label "$(kind_of "$name")" --json "$tmp_json" "$@" >&2
  jq -c --argjson x "$extra" --arg name "$name" '. + $x + {instance: $name}' "$tmp_json" >>"$OUT"
}

# run_logged NAME EXTRA_JSON BENCH_FLAGS...: run, plus amalgam's log counters
# (INFO deltas over warm-up and run) as "log".
run_logged() {
  local name=$1 extra=$2 r0 w0 f0 r1 w1 f1
  shift 2
  read -r r0 w0 f0 < <(info "$name" amalgam_log_records amalgam_log_writes amalgam_log_fsyncs)
  run "$name" "$extra" "$@"
  read -r r1 w1 f1 < <(info "$name" amalgam_log_records amalgam_log_writes amalgam_log_fsyncs)
  if [ "$r0" != null ]; then
    local tmp
    tmp=$(tail -n 1 "$OUT" | jq -c --argjson r $((r1 - r0)) --argjson w $((w1 - w0)) --argjson f $((f1 - f0)) \
      '. + {log: {records: $r, writes: $w, fsyncs: $f}}')
    sed -i '$d' "$OUT"
    echo "$tmp" >>"$OUT"
  fi
}

load=(--threads "$THREADS" --conns-per-thread "$CONNS")

# --- 1 and 2: the log's cost, group commit ------------------------------------

if has throughput || has fsync; then
  modes=""
  has throughput && modes=$MODES
  for m in off always; do
    has fsync && [[ " $modes " != *" $m "* ]] && modes="$m $modes"
  done
  for m in $modes; do
    for k in redis amalgam; do start_server "$k-$m" "$k" "$m"; done
  done
  for m in $modes; do
    for k in redis amalgam; do
      wait_ready "$k-$m"
      preload "$k-$m" "$KEYS"
    done
  done
  if has throughput; then
    for p in $PIPELINES; do
      for r in $(seq 1 "$RUNS"); do
        # Even rounds run the modes (and the servers) in reverse order, so
        # whatever one run leaves behind (dirty pages, a warm CPU) does not
        # always precede the same mode.
        order=$MODES servers="redis amalgam"
        if [ $((r % 2)) = 0 ]; then
          order=$(echo "$MODES" | tr ' ' '\n' | tac | tr '\n' ' ') servers="amalgam redis"
        fi
        for m in $order; do
          for k in $servers; do
            run_logged "$k-$m" "{\"section\":\"throughput\",\"mode\":\"$m\",\"case\":\"ycsb50-p$p\",\"run\":$r}" \
              --keys "$KEYS" "${load[@]}" --pipeline "$p"
          done
        done
      done
    done
  fi
  if has fsync; then
    for r in $(seq 1 "$RUNS"); do
      for c in one-off one many; do
        for k in redis amalgam; do
          if [ $c = many ]; then conns=("${load[@]}"); else conns=(--threads 1 --conns-per-thread 1); fi
          if [ $c = one-off ]; then m=off; else m=always; fi
          run_logged "$k-$m" "{\"section\":\"fsync\",\"mode\":\"$m\",\"case\":\"set-$c\",\"run\":$r}" \
            --keys "$KEYS" "${conns[@]}" --pipeline 1 --get-fraction 0
        done
      done
    done
  fi
  for m in $modes; do
    for k in redis amalgam; do stop_server "$k-$m"; done
    rm -rf "${DIR[redis-$m]}" "${DIR[amalgam-$m]}"
  done
fi

# --- 3: snapshots -------------------------------------------------------------

# snapshot_loop NAME bgsave|poll: polls INFO persistence every 50 ms and
# (bgsave) sends BGSAVE whenever none runs, until killed. The runs without
# snapshots have the same loop, polling only, so the poller's own cost is
# in both.
snapshot_loop() {
  local fd
  exec {fd}<>"/dev/tcp/127.0.0.1/${PORT[$1]}"
  while :; do
    resp_info "$fd" || { echo "snapshot loop on $1: INFO failed" >&2; exit 1; }
    if [ "$2" = bgsave ] && [ "$BGSAVE_RUNNING" = 0 ]; then
      resp_line "$fd" BGSAVE || { echo "snapshot loop on $1: BGSAVE failed" >&2; exit 1; }
    fi
    snooze 0.05
  done
}

# mem_test NAME: PSS/RSS around one BGSAVE under a SET-only load.
mem_test() {
  local name=$1 pid=${PID[$1]} fd load_pid t0 t1 now wait_us saves0 pss0 rss0 pss_peak=0 rss_peak=0 kids_peak=0 n=0
  local covered cow
  "$bench" net "${workload[@]}" --server "127.0.0.1:${PORT[$name]}" --no-preload --keys "$SNAP_KEYS" "${load[@]}" \
    --get-fraction 0 --distribution "$MEM_DISTRIBUTION" --duration "$MEM_LOAD_SECS" --warmup 1 \
    --label "$(kind_of "$name")" --json "$work/mem-load.json" >&2 &
  load_pid=$!
  bg_pids+=("$load_pid")
  exec {fd}<>"/dev/tcp/127.0.0.1/${PORT[$name]}"
  snooze 2
  resp_info "$fd"
  saves0=$SAVES
  mem_sample "$pid"
  pss0=$PSS_KB rss0=$RSS_KB
  t0=$(now_us)
  resp_line "$fd" BGSAVE
  case $REPLY in +*) ;; *) echo "$name: BGSAVE answered $REPLY" >&2; exit 1 ;; esac
  while :; do
    mem_sample "$pid"
    n=$((n + 1))
    [ "$PSS_KB" -le "$pss_peak" ] || pss_peak=$PSS_KB
    [ "$RSS_KB" -le "$rss_peak" ] || rss_peak=$RSS_KB
    [ "$NCHILD" -le "$kids_peak" ] || kids_peak=$NCHILD
    if [ $((n % 5)) = 0 ]; then # INFO costs ~3 ms of byte-at-a-time reads: every 5th sample
      resp_info "$fd"
      [ "$SAVES" -gt "$saves0" ] && [ "$BGSAVE_RUNNING" = 0 ] && [ "$NCHILD" = 0 ] && break
    fi
    now=$(now_us)
    [ $((now - t0)) -lt 600000000 ] || { echo "$name: BGSAVE has run for 10 minutes" >&2; exit 1; }
    wait_us=$((t0 + n * 20000 - now)) # the next 20 ms tick
    [ "$wait_us" -le 0 ] || snooze "$(printf '0.%06d' "$wait_us")"
  done
  t1=$(now_us)
  cow=$(info "$name" rdb_last_cow_size)
  if kill -0 "$load_pid" 2>/dev/null; then covered=true; else covered=false; fi
  exec {fd}>&-
  wait "$load_pid"
  bg_forget "$load_pid"
  jq -c --arg name "$name" --argjson pss0 "$pss0" --argjson rss0 "$rss0" --argjson pss "$pss_peak" \
    --argjson rss "$rss_peak" --argjson kids "$kids_peak" --argjson n "$n" --argjson covered "$covered" \
    --argjson secs "$(((t1 - t0) / 1000))" --argjson cow "$cow" '{section: "snapshot-memory", label: .label,
      instance: $name, pss_before_kb: $pss0, pss_peak_kb: $pss, rss_before_kb: $rss0, rss_peak_kb: $rss,
      children_peak: $kids, redis_rdb_last_cow_size: $cow,
      samples: $n, snapshot_s: ($secs / 1000), load_covered_snapshot: $covered,
      load_requests_per_s: .requests_per_s, load_errors: .errors.total, workload, keys}' "$work/mem-load.json" >>"$OUT"
}

if has snapshot; then
  for k in redis amalgam; do start_server "$k-snap" "$k" "$SNAP_FSYNC"; done
  for k in redis amalgam; do
    wait_ready "$k-snap"
    preload "$k-snap" "$SNAP_KEYS"
  done
  for r in $(seq 1 "$RUNS"); do
    for c in none back-to-back; do
      for k in redis amalgam; do
        s0=$(info "$k-snap" rdb_saves)
        if [ $c = back-to-back ]; then what=bgsave; else what=poll; fi
        snapshot_loop "$k-snap" $what &
        loop_pid=$!
        bg_pids+=("$loop_pid")
        run "$k-snap" "{\"section\":\"snapshot\",\"mode\":\"$SNAP_FSYNC\",\"case\":\"$c\",\"run\":$r}" \
          --keys "$SNAP_KEYS" "${load[@]}" --pipeline 1
        kill "$loop_pid"
        wait "$loop_pid" 2>/dev/null || true
        bg_forget "$loop_pid"
        wait_no_bgsave "$k-snap"
        s1=$(info "$k-snap" rdb_saves)
        tmp=$(tail -n 1 "$OUT" | jq -c --argjson s $((s1 - s0)) '. + {snapshots: $s}')
        sed -i '$d' "$OUT"
        echo "$tmp" >>"$OUT"
      done
    done
  done
  for k in redis amalgam; do mem_test "$k-snap"; done
  for k in redis amalgam; do stop_server "$k-snap"; done
  rm -rf "${DIR[redis-snap]}" "${DIR[amalgam-snap]}"
fi

# --- 4: recovery --------------------------------------------------------------

# restart NAME KIND MODE VARIANT: starts NAME on its directory, times it to
# the first PONG, checks the item count, appends a recovery line to OUT.
restart() {
  local name=$1 kind=$2 mode=$3 variant=$4 line secs items
  : >"${LOG[$name]}"
  START_US=$(now_us)
  start_server "$name" "$kind" "$mode" "${DIR[$name]}"
  wait_ready "$name" 1800
  unset START_US
  items=$("$REDIS_CLI" -p "${PORT[$name]}" dbsize)
  if [ "$kind" = amalgam ]; then
    line=$(grep 'amalgam: recovered from' "${LOG[$name]}" | tail -n 1)
    secs=$(sed -E 's/.* in ([0-9.]+) s.*/\1/' <<<"$line")
  else
    line=$(grep -E 'DB loaded from (disk|append only file)' "${LOG[$name]}" | tail -n 1)
    secs=$(sed -E 's/.*: ([0-9.]+) seconds.*/\1/' <<<"$line")
  fi
  [[ "$secs" =~ ^[0-9.]+$ ]] || { echo "$name: no recovery time in its log:" >&2; cat "${LOG[$name]}" >&2; exit 1; }
  [ "$items" = "$RECOVERY_KEYS" ] || echo "warning: $name recovered $items items of $RECOVERY_KEYS" >&2
  echo "$name ($variant): $line" >&2
  jq -nc --arg kind "$kind" --arg variant "$variant" --argjson items "$items" --argjson secs "$secs" \
    --argjson wall "$READY_US" --argjson fill "$FILL_RATE" --argjson save "$SAVE_S" --argjson bytes "$DIR_BYTES" \
    --arg line "$line" '{section: "recovery", label: $kind, variant: $variant, items: $items,
      server_s: $secs, ready_s: ($wall / 1e6), fill_sets_per_s: $fill, save_s: $save, dir_bytes: $bytes,
      log_line: $line}' >>"$OUT"
}

# recovery KIND: fill, kill -9, restart (log replay), SAVE, SIGTERM, restart (snapshot).
recovery() {
  local kind=$1 name=$1-recovery t0
  start_server "$name" "$kind" everysec
  wait_ready "$name"
  preload "$name" "$RECOVERY_KEYS"
  FILL_RATE=$(jq '.preload.sets_per_s' "$tmp_json")
  SAVE_S=null
  stop_server "$name" KILL
  DIR_BYTES=$(du -sb "${DIR[$name]}" | cut -f1)
  if [ "$kind" = redis ]; then restart "$name" redis everysec aof; else restart "$name" amalgam everysec log; fi
  t0=$(now_us)
  [ "$("$REDIS_CLI" -p "${PORT[$name]}" save)" = OK ] || { echo "$name: SAVE failed" >&2; exit 1; }
  SAVE_S=$(awk -v us=$(($(now_us) - t0)) 'BEGIN { printf "%.3f", us / 1e6 }')
  stop_server "$name"
  if [ "$kind" = redis ]; then
    DIR_BYTES=$(du -sb "${DIR[$name]}/dump.rdb" | cut -f1)
    restart "$name" redis rdb snapshot
  else
    DIR_BYTES=$(du -cb "${DIR[$name]}"/snap-*.ams | tail -n 1 | cut -f1)
    restart "$name" amalgam everysec snapshot
  fi
  stop_server "$name"
  rm -rf "${DIR[$name]}"
}

if has recovery; then
  recovery amalgam
  [ "$REDIS_RECOVERY" = 0 ] || recovery redis
fi

# --- tables -------------------------------------------------------------------

jq_defs='
  def median: sort | if length == 0 then null elif length % 2 == 1 then .[length / 2 | floor]
    else (.[length / 2 - 1] + .[length / 2]) / 2 end;
  def f(d): if . == null then "-" else (. * pow(10; d) | round) / pow(10; d) | tostring end;
  def ratio(a; b): if a == null or b == null or b == 0 then null else a / b end;
  def med(rows; s; p): [rows[] | select(.label == s) | p] | median;
  def rps(rows; s): med(rows; s; .requests_per_s);
  def per(rows; n; d): [rows[] | select(.label == "amalgam" and .log != null and .log[d] > 0)
    | .log[n] / .log[d]] | median;
'
redis_version=$("$REDIS" --version | grep -o 'v=[0-9.]*' | cut -d= -f2)
echo "Amalgam (RESP, -t $SERVER_THREADS) vs Redis $redis_version, persistence. Data directories in $DATA_BASE;" \
  "$THREADS client threads x $CONNS conns unless said; ${DURATION} s runs (+${WARMUP} s warm-up), median of $RUNS" \
  "alternating runs (amalgam-bench net, mercury-ycsb-50: 24 B keys, 10 B values, 50% GET, zipf)."

if has throughput; then
  echo
  echo "### 1. Throughput by fsync policy ($KEYS keys preloaded)"
  echo
  jq -rs --arg modes "$MODES" "$jq_defs"'
    ($modes | split(" ") | map(select(. != ""))) as $order
    | [.[] | select(.section == "throughput")] as $all
    | "| case | mode | redis req/s | amalgam req/s | amalgam / redis | redis / its off | amalgam / its off"
      + " | amalgam records per write | amalgam records per fsync | redis p99 us | amalgam p99 us | errors |",
      "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
      ($all | group_by(.case)[] | . as $c | [$c[] | select(.mode == "off")] as $off
       | $order[] as $m | [$c[] | select(.mode == $m)] as $rows | select($rows | length > 0)
       | rps($rows; "redis") as $r | rps($rows; "amalgam") as $a
       | "| \($rows[0].case) | \($m) | \($r | f(0)) | \($a | f(0)) | \(ratio($a; $r) | f(3))"
         + " | \(ratio($r; rps($off; "redis")) | f(3)) | \(ratio($a; rps($off; "amalgam")) | f(3))"
         + " | \(per($rows; "records"; "writes") | f(1)) | \(per($rows; "records"; "fsyncs") | f(1))"
         + " | \(med($rows; "redis"; .latency_us.p99) | f(1)) | \(med($rows; "amalgam"; .latency_us.p99) | f(1))"
         + " | \([$rows[] | .errors.total] | add) |")' "$OUT"
fi

if has fsync; then
  echo
  echo "### 2. Group commit: SET only, fsync always, 1 connection (one fsync per write) vs $((THREADS * CONNS))"
  echo
  jq -rs --arg many_conns $((THREADS * CONNS)) "$jq_defs"'
    [.[] | select(.section == "fsync")] as $all
    | [$all[] | select(.case == "set-one")] as $one | [$all[] | select(.case == "set-many")] as $many
    | "| case | redis req/s | amalgam req/s | amalgam / redis | amalgam records per fsync | redis p50 us | amalgam p50 us | errors |",
      "|---|---:|---:|---:|---:|---:|---:|---:|",
      ((["set-one-off", "1 connection, persistence off (the round trip alone)"], ["set-one", "1 connection, always"],
        ["set-many", "\($many_conns) connections, always"]) as [$case, $title]
       | [$all[] | select(.case == $case)] as $rows | select($rows | length > 0)
       | "| \($title) | \(rps($rows; "redis") | f(0)) | \(rps($rows; "amalgam") | f(0))"
         + " | \(ratio(rps($rows; "amalgam"); rps($rows; "redis")) | f(3)) | \(per($rows; "records"; "fsyncs") | f(1))"
         + " | \(med($rows; "redis"; .latency_us.p50) | f(1)) | \(med($rows; "amalgam"; .latency_us.p50) | f(1))"
         + " | \([$rows[] | .errors.total] | add) |"),
      "| \($many_conns) connections / 1, always | \(ratio(rps($many; "redis"); rps($one; "redis")) | f(1))x"
        + " | \(ratio(rps($many; "amalgam"); rps($one; "amalgam")) | f(1))x | | | | | |"' "$OUT"
fi

if has snapshot; then
  echo
  echo "### 3. Snapshots ($SNAP_KEYS keys preloaded, log $SNAP_FSYNC on both)"
  echo
  jq -rs "$jq_defs"'
    [.[] | select(.section == "snapshot")] as $all
    | [$all[] | select(.case == "none")] as $none | [$all[] | select(.case == "back-to-back")] as $snap
    | "| ycsb-50 load | redis req/s | amalgam req/s | amalgam / redis | redis snapshots per run | amalgam snapshots per run | redis p99 us | amalgam p99 us | errors |",
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
      ((["none", "no snapshot"], ["back-to-back", "snapshots back to back"]) as [$case, $title]
       | [$all[] | select(.case == $case)] as $rows | select($rows | length > 0)
       | "| \($title) | \(rps($rows; "redis") | f(0)) | \(rps($rows; "amalgam") | f(0))"
         + " | \(ratio(rps($rows; "amalgam"); rps($rows; "redis")) | f(3))"
         + " | \(med($rows; "redis"; .snapshots) | f(1)) | \(med($rows; "amalgam"; .snapshots) | f(1))"
         + " | \(med($rows; "redis"; .latency_us.p99) | f(1)) | \(med($rows; "amalgam"; .latency_us.p99) | f(1))"
         + " | \([$rows[] | .errors.total] | add) |"),
      "| with / without | \(ratio(rps($snap; "redis"); rps($none; "redis")) | f(3))"
        + " | \(ratio(rps($snap; "amalgam"); rps($none; "amalgam")) | f(3)) | | | | | | |"' "$OUT"
  echo
  echo "Memory around one BGSAVE under 100% SET ($MEM_DISTRIBUTION, $((THREADS * CONNS)) conns); server + children," \
    "sampled every ~20 ms; MB = 2^20 bytes:"
  echo
  jq -rs "$jq_defs"'
    def mb: . / 1024 | f(1);
    "| server | PSS before MB | PSS peak MB | PSS peak / before | RSS before MB | RSS peak MB | RSS peak / before"
      + " | Redis rdb_last_cow_size MB | snapshot s | ms per sample | SET req/s during the test | load ran throughout |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    (.[] | select(.section == "snapshot-memory")
     | "| \(.label) | \(.pss_before_kb | mb) | \(.pss_peak_kb | mb) | \(ratio(.pss_peak_kb; .pss_before_kb) | f(3))"
       + " | \(.rss_before_kb | mb) | \(.rss_peak_kb | mb) | \(ratio(.rss_peak_kb; .rss_before_kb) | f(3))"
       + " | \(if .redis_rdb_last_cow_size == null then "-" else .redis_rdb_last_cow_size / 1048576 | f(1) end)"
       + " | \(.snapshot_s | f(2)) | \(ratio(.snapshot_s * 1000; .samples) | f(0))"
       + " | \(.load_requests_per_s | f(0)) | \(.load_covered_snapshot) |")' "$OUT"
fi

if has recovery; then
  echo
  echo "### 4. Recovery of $RECOVERY_KEYS items (ycsb-50 shape, filled over RESP, log everysec)"
  echo
  jq -rs "$jq_defs"'
    def what: {log: "log only (kill -9 after the fill)", snapshot: "snapshot (SAVE, SIGTERM)",
      aof: "AOF only (kill -9 after the fill)"}[.variant] // .variant;
    "| server | recovers from | items | MB read | server-reported s | exec to first PONG s | items/s (server) | items/s (to PONG) | fill sets/s | SAVE s |",
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    (.[] | select(.section == "recovery")
     | "| \(.label) | \(what) | \(.items) | \(.dir_bytes / 1048576 | f(0)) | \(.server_s | f(3)) | \(.ready_s | f(3))"
       + " | \(ratio(.items; .server_s) | f(0)) | \(ratio(.items; .ready_s) | f(0)) | \(.fill_sets_per_s | f(0))"
       + " | \(.save_s | f(2)) |")' "$OUT"
fi
echo
echo "Per-run JSON lines: $OUT"
