#!/usr/bin/env bash
# TLS throughput and handshake rate, side by side in one run (issue 20 §6):
# Amalgam plaintext RESP vs Amalgam TLS RESP (the same server, two ports)
# vs Debian's redis-server with TLS, with redis-benchmark (a client not
# written here), RUNS alternating rounds, medians printed as a markdown
# table, with each server's CPU time per request over the run (user +
# system from /proc, so the TLS cost that a server-bound deployment sees:
# 1 - plain/TLS CPU per request; the throughput cost also carries the
# client's own TLS work on the same cores). Certificates:
# scripts/tls-test-certs.sh (test-only, temporary).
# Needs a release build: cargo build --release -p amalgam-server.
# Each redis-benchmark run opens CLIENTS new connections, so its figures
# include CLIENTS handshakes (callgrind: about 1.5 M server instructions
# each, as much as ~1,300 pipelined TLS GETs): the pipeline-16 runs send
# N16 requests so that the steady request path, not the handshakes,
# dominates them (the handshake rate has its own row).
# HS_N stays in the thousands: every handshake connection leaves a socket
# in TIME_WAIT, and 3 targets x RUNS x 20,000 used up the 28 k ephemeral
# ports (redis-benchmark failed in the second round).
# Usage: scripts/compare-tls.sh   (env: RUNS=3 N=200000 N16=2000000 CLIENTS=50 HS_N=5000)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3} N=${N:-200000} N16=${N16:-2000000} CLIENTS=${CLIENTS:-50} HS_N=${HS_N:-5000}
amalgam=${CARGO_TARGET_DIR:-target}/release/amalgam
[ -x "$amalgam" ] || { echo "build first: cargo build --release -p amalgam-server" >&2; exit 1; }
dir=$(mktemp -d)
out=$dir/runs.csv
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$dir"; }
trap cleanup EXIT
bash scripts/tls-test-certs.sh "$dir/certs" >/dev/null
c=$dir/certs
# Ports below 32768 (the ephemeral range starts there).
mc_port=21911 plain_port=21912 tls_port=21913 redis_port=21914
"$amalgam" -l 127.0.0.1 -p "$mc_port" -U 0 --resp-port "$plain_port" --tls-port "$tls_port" \
  --tls-cert-file "$c/server.crt" --tls-key-file "$c/server.key" -m 1024 >/dev/null 2>&1 &
pids+=($!)
redis-server --port 0 --bind 127.0.0.1 --tls-port "$redis_port" --tls-cert-file "$c/server.crt" \
  --tls-key-file "$c/server.key" --tls-ca-cert-file "$c/ca.crt" --tls-auth-clients no \
  --save '' --appendonly no >/dev/null 2>&1 &
pids+=($!)
sleep 1
for p in "${pids[@]}"; do
  kill -0 "$p" 2>/dev/null || { echo "a server did not start (ports $mc_port-$redis_port taken?)" >&2; exit 1; }
done
tls=(--tls --cacert "$c/ca.crt")
declare -A args=([amalgam-plain]="-p $plain_port" [amalgam-tls]="-p $tls_port ${tls[*]}" [redis-tls]="-p $redis_port ${tls[*]}")
declare -A pid_of=([amalgam-plain]=${pids[0]} [amalgam-tls]=${pids[0]} [redis-tls]=${pids[1]})
# Server CPU time (user + system, clock ticks) of a process, from /proc.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
echo "target,pipeline,run,test,rps,avg_ms,min_ms,p50_ms,p95_ms,p99_ms,max_ms,cpu_us_per_req" >"$out"
for run in $(seq 1 "$RUNS"); do
  for p in 1 16; do
    for test in set get; do
      for t in amalgam-plain amalgam-tls redis-tls; do
        # One test per redis-benchmark run, so the server's CPU time over
        # the run is that test's: CPU microseconds per request.
        n=$N
        [ "$p" = 1 ] || n=$N16
        before=$(cpu_ticks "${pid_of[$t]}")
        # shellcheck disable=SC2086
        line=$(redis-benchmark ${args[$t]} -c "$CLIENTS" -n "$n" -t "$test" -P "$p" --threads 2 --csv 2>/dev/null |
          tail -n 1 | tr -d '"')
        cpu=$(awk -v a="$before" -v b="$(cpu_ticks "${pid_of[$t]}")" -v hz="$hz" \
          -v n="$n" 'BEGIN { printf "%.3f", (b - a) * 1e6 / hz / n }')
        echo "$t,$p,$run,$line,$cpu" >>"$out"
      done
    done
  done
  # Handshake rate: a new connection (and TLS handshake) per request (-k 0).
  for t in amalgam-plain amalgam-tls redis-tls; do
    # shellcheck disable=SC2086
    redis-benchmark ${args[$t]} -c "$CLIENTS" -n "$HS_N" -t ping -k 0 --threads 2 --csv 2>/dev/null |
      tail -n +2 | tr -d '"' | sed "s/^/$t,handshake,$run,/; s/$/,/" >>"$out"
  done
done
cp "$out" "${TLS_RUNS_CSV:-/tmp/compare-tls-runs.csv}"
python3 - "$out" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
def med(t, p, test, f):
    v = [float(r[f]) for r in rows if r["target"] == t and r["pipeline"] == p and r["test"].startswith(test)]
    return statistics.median(v) if v else float("nan")
print("| test | pipeline | amalgam plain req/s | amalgam TLS req/s | redis TLS req/s | TLS cost | amalgam TLS / redis TLS | p99 ms plain / TLS / redis TLS | server CPU us/req plain / TLS / redis TLS | TLS cost in server CPU |")
print("|---|---:|---:|---:|---:|---:|---:|---|---|---:|")
for test in ("SET", "GET"):
    for p in ("1", "16"):
        a, t, r = (med(x, p, test, "rps") for x in ("amalgam-plain", "amalgam-tls", "redis-tls"))
        p99 = " / ".join(f"{med(x, p, test, 'p99_ms'):.3f}" for x in ("amalgam-plain", "amalgam-tls", "redis-tls"))
        ca, ct, cr = (med(x, p, test, "cpu_us_per_req") for x in ("amalgam-plain", "amalgam-tls", "redis-tls"))
        print(f"| {test} | {p} | {a:.0f} | {t:.0f} | {r:.0f} | {100 * (1 - t / a):.1f}% | {t / r:.2f}x | {p99}"
              f" | {ca:.2f} / {ct:.2f} / {cr:.2f} | {100 * (1 - ca / ct):.1f}% |")
a, t, r = (med(x, "handshake", "PING", "rps") for x in ("amalgam-plain", "amalgam-tls", "redis-tls"))
print(f"| new connection per PING (-k 0) | 1 | {a:.0f} | {t:.0f} | {r:.0f} | {100 * (1 - t / a):.1f}% | {t / r:.2f}x | |")
PY
