#!/usr/bin/env bash
# An A/B of two amalgam builds on the string path, each beside Redis 7 and
# memcached in the same runs (the "no regressions" rule: quote ratios to
# peers measured side by side, medians of alternating runs).
#
# A and B are target directories holding release/amalgam and
# release/amalgam-bench (build each commit with `cargo build --release -p
# amalgam-server -p amalgam-bench` in its own clone or CARGO_TARGET_DIR,
# or copy the binaries in; the same amalgam-bench for both is fine). For
# ROUNDS rounds, the order swapped each round (A B, B A, A B, …), each
# variant runs RUNS=1 DURATION=$DURATION scripts/compare-redis.sh
# (NO_REDIS_BENCHMARK=1) and scripts/compare-memcached.sh with NO_BUILD=1
# and its CARGO_TARGET_DIR; their JSON lines go to A/ and B/
# (redis-R.jsonl, mc-R.jsonl). Then prints, per case, each variant's
# median requests/s and its median ratio to the peer, with every round's
# ratio.
#
# Usage: [ROUNDS=3] [DURATION=4] scripts/compare-ab.sh A_TARGET_DIR B_TARGET_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 2 ] || { echo "usage: $0 A_TARGET_DIR B_TARGET_DIR" >&2; exit 1; }
A=$(cd "$1" && pwd)
B=$(cd "$2" && pwd)
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-4}
for d in "$A" "$B"; do
  for bin in amalgam amalgam-bench; do
    [ -x "$d/release/$bin" ] || { echo "$d/release/$bin missing" >&2; exit 1; }
  done
done
for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) -eq 1 ]; then order="$A $B"; else order="$B $A"; fi
  for d in $order; do
    echo "=== round $r: $d ($(date +%T), load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
    CARGO_TARGET_DIR=$d NO_BUILD=1 RUNS=1 DURATION=$DURATION NO_REDIS_BENCHMARK=1 OUT="$d/redis-$r.jsonl" \
      bash scripts/compare-redis.sh >&2 2>/dev/null
    CARGO_TARGET_DIR=$d NO_BUILD=1 RUNS=1 DURATION=$DURATION OUT="$d/mc-$r.jsonl" \
      bash scripts/compare-memcached.sh >&2 2>/dev/null
  done
done
python3 - "$A" "$B" <<'PY'
import glob, json, statistics, sys
a_dir, b_dir = sys.argv[1], sys.argv[2]
def load(d, kind):
    rows = {}
    for f in sorted(glob.glob(f"{d}/{kind}-*.jsonl")):
        r = f.rsplit("-", 1)[1].split(".")[0]
        for line in open(f):
            j = json.loads(line)
            rows.setdefault((j["case"], r), {})[j["label"]] = j["requests_per_s"]
    return rows
print(f"| case | A req/s | B req/s | A / peer (rounds) | B / peer (rounds) |")
print("|---|---:|---:|---:|---:|")
for kind, peer in [("redis", "redis"), ("mc", "memcached")]:
    A, B = load(a_dir, kind), load(b_dir, kind)
    for c in sorted({c for c, _ in A}):
        def col(rows):
            runs = [v for (cc, _), v in sorted(rows.items()) if cc == c and "amalgam" in v and peer in v]
            rate = statistics.median(v["amalgam"] for v in runs)
            ratios = [v["amalgam"] / v[peer] for v in runs]
            return rate, statistics.median(ratios), ratios
        ra, qa, la = col(A)
        rb, qb, lb = col(B)
        fmt = lambda l: ", ".join(f"{x:.2f}" for x in l)
        print(f"| {peer} {c} | {ra:,.0f} | {rb:,.0f} | {qa:.2f}× ({fmt(la)}) | {qb:.2f}× ({fmt(lb)}) |")
PY
