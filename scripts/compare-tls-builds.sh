#!/usr/bin/env bash
# Two builds of amalgam over TLS, side by side in one run: RUNS rounds,
# each running every test against BASE then NEW (alternating), with
# redis-benchmark --tls (-c CLIENTS --threads 2), one test per
# redis-benchmark call; prints the medians of req/s and of the server's
# CPU time per request (user + system from /proc, the same figure as
# scripts/compare-tls.sh's "server CPU" column) and the load average
# before and after. For a change to the TLS path, where a before/after
# of compare-tls.sh would run minutes apart on a shared machine.
# Certificates: scripts/tls-test-certs.sh (test-only, temporary).
# Usage: scripts/compare-tls-builds.sh BASE_BIN NEW_BIN
#        (env: RUNS=3 N1=200000 N16=2000000 CLIENTS=50)
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:?usage: $0 BASE_BIN NEW_BIN} new=${2:?usage: $0 BASE_BIN NEW_BIN}
RUNS=${RUNS:-3} N1=${N1:-200000} N16=${N16:-2000000} CLIENTS=${CLIENTS:-50}
dir=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$dir"; }
trap cleanup EXIT
bash scripts/tls-test-certs.sh "$dir/certs" >/dev/null
c=$dir/certs
# Ports below 32768 (the ephemeral range starts there).
declare -A port=([base]=21921 [new]=21922) pid_of=()
for b in base new; do
  bin=$base
  [ "$b" = new ] && bin=$new
  "$bin" -l 127.0.0.1 -p "$((port[$b] + 10))" -U 0 --resp-port "$((port[$b] + 20))" --tls-port "${port[$b]}" \
    --tls-cert-file "$c/server.crt" --tls-key-file "$c/server.key" -m 1024 >/dev/null 2>&1 &
  pids+=($!)
  pid_of[$b]=$!
done
sleep 1
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
out=$dir/runs.csv
for run in $(seq 1 "$RUNS"); do
  for p in 1 16; do
    n=$N1
    [ "$p" = 1 ] || n=$N16
    for test in set get; do
      for b in base new; do
        before=$(cpu_ticks "${pid_of[$b]}")
        rps=$(redis-benchmark -p "${port[$b]}" --tls --cacert "$c/ca.crt" -c "$CLIENTS" -n "$n" -t "$test" -P "$p" \
          --threads 2 --csv 2>/dev/null | tail -n 1 | tr -d '"' | cut -d, -f2)
        cpu=$(awk -v a="$before" -v b="$(cpu_ticks "${pid_of[$b]}")" -v hz="$hz" -v n="$n" \
          'BEGIN { printf "%.3f", (b - a) * 1e6 / hz / n }')
        echo "$b,$p,$test,$run,$rps,$cpu" >>"$out"
      done
    done
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$out" <<'PY'
import csv, statistics, sys
rows = list(csv.reader(open(sys.argv[1])))
def med(b, p, t, i):
    return statistics.median(float(r[i]) for r in rows if r[0] == b and r[1] == p and r[2] == t)
print("| test | pipeline | base req/s | new req/s | base server CPU us/req | new server CPU us/req | CPU change |")
print("|---|---:|---:|---:|---:|---:|---:|")
for p in ("1", "16"):
    for t in ("set", "get"):
        cb, cn = med("base", p, t, 5), med("new", p, t, 5)
        print(f"| {t.upper()} | {p} | {med('base', p, t, 4):,.0f} | {med('new', p, t, 4):,.0f} | {cb:.3f} | {cn:.3f} | {100 * (cn / cb - 1):+.1f}% |")
PY
