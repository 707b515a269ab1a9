# Shared by the compare-*.sh scripts (compare-memcached, compare-redis,
# compare-metrics, compare-openloop): the set-up every one of them needs
# (release build, the processes it started killed on exit, port checks)
# and, for compare-memcached and compare-redis, the alternating runs and
# the table of medians. Source it after `cd` to the repository; the
# scripts that call compare_runs define port_of and pid_of (server label
# -> port, pid) and the variables common (amalgam-bench net flags), OUT,
# RUNS, DURATION and WARMUP.

# build_release: amalgam and amalgam-bench, release (unless NO_BUILD);
# sets target_dir and bench.
build_release() {
  [ -n "${NO_BUILD:-}" ] || cargo build --release -q -p amalgam-server -p amalgam-bench
  target_dir=${CARGO_TARGET_DIR:-target}
  bench=$target_dir/release/amalgam-bench
}

# Every server or load a script starts goes into pids; all are killed and
# reaped on exit.
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# free_ports HINT PORT... : exits, naming HINT (the variables to set), if
# any PORT is taken.
free_ports() {
  local hint=$1 p
  shift
  for p in "$@"; do
    ! listening "$p" || { echo "port $p is already in use: set $hint" >&2; exit 1; }
  done
}

wait_port() { # port pid
  for _ in $(seq 1 200); do
    kill -0 "$2" 2>/dev/null || { echo "server on port $1 exited" >&2; return 1; }
    listening "$1" && return 0
    sleep 0.05
  done
  echo "nothing listening on port $1" >&2
  return 1
}

# compare_runs PEER CASE... : preloads both servers, then for each case
# ("name get-fraction pipeline") runs RUNS alternating runs, PEER first,
# appending every run's JSON (with "case" and "run") to OUT.
compare_runs() {
  local peer=$1
  shift
  local tmp
  tmp=$(mktemp)
  : >"$OUT"
  for s in "$peer" amalgam; do
    "$bench" net "${common[@]}" --server "127.0.0.1:$(port_of "$s")" --preload-only --label "$s" >&2
  done
  for c in "$@"; do
    read -r name frac pipeline <<<"$c"
    for run in $(seq 1 "$RUNS"); do
      for s in "$peer" amalgam; do
        kill -0 "$(pid_of "$s")" 2>/dev/null || { echo "$s died" >&2; rm -f "$tmp"; exit 1; }
        "$bench" net "${common[@]}" --server "127.0.0.1:$(port_of "$s")" --no-preload --get-fraction "$frac" \
          --pipeline "$pipeline" --duration "$DURATION" --warmup "$WARMUP" --server-pid "$(pid_of "$s")" \
          --label "$s" --json "$tmp" >&2
        jq -c --arg case "$name" --argjson run "$run" '. + {case: $case, run: $run}' "$tmp" >>"$OUT"
      done
    done
  done
  rm -f "$tmp"
}

# compare_table PEER : the markdown table of medians per case from OUT.
compare_table() {
  jq -rs --arg peer "$1" '
    def median: sort | if length == 0 then null elif length % 2 == 1 then .[length / 2 | floor]
      else (.[length / 2 - 1] + .[length / 2]) / 2 end;
    def f(d): if . == null then "-" else (. * pow(10; d) | round) / pow(10; d) | tostring end;
    def stat(rows; s; p): [rows[] | select(.label == s) | p] | median;
    "| case | \($peer) req/s | amalgam req/s | amalgam / \($peer) | \($peer) p99 us | amalgam p99 us"
    + " | \($peer) CPU us/req | amalgam CPU us/req | errors |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    (group_by(.case) | sort_by(.[0].case)[] | . as $rows
     | stat($rows; $peer; .requests_per_s) as $p | stat($rows; "amalgam"; .requests_per_s) as $a
     | "| \($rows[0].case) | \($p | f(0)) | \($a | f(0)) | \(if $p > 0 then $a / $p | f(3) else "-" end)"
       + " | \(stat($rows; $peer; .latency_us.p99) | f(1)) | \(stat($rows; "amalgam"; .latency_us.p99) | f(1))"
       + " | \(stat($rows; $peer; .server_cpu_us_per_request) | f(2))"
       + " | \(stat($rows; "amalgam"; .server_cpu_us_per_request) | f(2))"
       + " | \([$rows[] | .errors.total] | add) |")
  ' "$OUT"
}
