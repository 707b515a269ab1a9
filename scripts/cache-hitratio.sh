#!/usr/bin/env bash
# Miss ratio of a self-filling Zipf stream at several cache sizes:
# memcached vs Amalgam (issue 4 §5, MemC3 §5.3 / Table 3).
#
# The working set is KEYS keys of KEY_BYTES / VALUE_BYTES items. Its size
# is counted in memcached's own footprint, ITEM_BYTES per item (120 for
# 16 B / 32 B items in memcached 1.6: a 48 B header, the key with its NUL,
# the value with its \r\n and an 8 B CAS, 107 B, in the 120 B slab class;
# scripts/cache-fill.sh shows 64 MiB holding 559,232 = 64 x 8738 of them).
# For each PERCENTS p, the cache size is -m = round(KEYS x ITEM_BYTES x p%)
# in MiB, at least 2 (memcached refuses -m 1: its largest item, 1 MiB, may
# be at most half the memory). The actual percentage is printed next to it.
#
# For each size, fresh servers (memcached, then amalgam if it was built)
# with that -m and -t SERVER_THREADS each get `amalgam-bench replay`: the
# same stream for both, WARMUP_OPS Zipf ops (θ = 0.99, 95% GET / 5% SET,
# every GET miss followed by a SET of its key) to warm up, then OPS counted.
# Then the scan-resistance case at SCAN_PERCENT: the same, with a scan of
# SCAN_LEN never-reused cold keys after every SCAN_EVERY Zipf ops; its miss
# ratio is the Zipf keys' only. Prints the runs' reports, then a markdown
# table of the miss ratios side by side; JSON lines go to OUT.
#
# Only counts are reported: a busy machine changes how long it takes, not
# the numbers. Servers are killed on exit.
#
# Usage: [KEYS=2097152] [OPS=3000000] [WARMUP_OPS=3000000] [PERCENTS="1 5 10 25"]
#        [ITEM_BYTES=120] [KEY_BYTES=16] [VALUE_BYTES=32] [SERVER_THREADS=2]
#        [SCAN_PERCENT=10] [SCAN_EVERY=200000] [SCAN_LEN=50000] [BATCH=64] [SEED=1]
#        [MEMCACHED_PORT=41321] [AMALGAM_PORT=41322] [OUT=target/cache-hitratio.jsonl]
#        [MEMCACHED=/usr/bin/memcached] [AMALGAM=target/release/amalgam ("" skips it)]
#        [NO_BUILD=1] scripts/cache-hitratio.sh
set -euo pipefail
cd "$(dirname "$0")/.."

KEYS=${KEYS:-2097152}
OPS=${OPS:-3000000}
WARMUP_OPS=${WARMUP_OPS:-3000000}
PERCENTS=${PERCENTS:-1 5 10 25}
ITEM_BYTES=${ITEM_BYTES:-120}
KEY_BYTES=${KEY_BYTES:-16}
VALUE_BYTES=${VALUE_BYTES:-32}
SERVER_THREADS=${SERVER_THREADS:-2}
SCAN_PERCENT=${SCAN_PERCENT:-10}
SCAN_EVERY=${SCAN_EVERY:-200000}
SCAN_LEN=${SCAN_LEN:-50000}
BATCH=${BATCH:-64}
SEED=${SEED:-1}
MEMCACHED_PORT=${MEMCACHED_PORT:-41321}
AMALGAM_PORT=${AMALGAM_PORT:-41322}
OUT=${OUT:-target/cache-hitratio.jsonl}
# memcached's smallest -m with its default 1 MiB item size limit.
MIN_MB=2

# shellcheck source=scripts/cache-common.sh
. scripts/cache-common.sh

mkdir -p "$(dirname "$OUT")"
: >"$OUT"
tmp=$(mktemp)
trap 'rm -f "$tmp"; stop_servers' EXIT

megabytes_for() { # percent -> -m
  awk -v k="$KEYS" -v b="$ITEM_BYTES" -v p="$1" -v min="$MIN_MB" \
    'BEGIN { m = int(k * b * p / 100 / 1048576 + 0.5); print (m < min ? min : m) }'
}

# run CASE PERCENT [replay flags...]: one fresh server of each kind.
run() {
  local case=$1 percent=$2 mb s port
  shift 2
  mb=$(megabytes_for "$percent")
  for s in $(servers); do
    port=$MEMCACHED_PORT
    [ "$s" = memcached ] || port=$AMALGAM_PORT
    start_server "$s" "$port" "$mb" "$SERVER_THREADS"
    "$bench" replay --server "127.0.0.1:$port" --keys "$KEYS" --ops "$OPS" --warmup-ops "$WARMUP_OPS" \
      --key-bytes "$KEY_BYTES" --value-bytes "$VALUE_BYTES" --batch "$BATCH" --seed "$SEED" \
      --pid "$server_pid" --label "$s" --json "$tmp" "$@" >&2
    jq -c --arg case "$case" --argjson p "$percent" --argjson mb "$mb" --argjson ib "$ITEM_BYTES" \
      '. + {case: $case, percent: $p, memory_mb: $mb, actual_percent: ($mb * 1048576 * 100 / (.keys * $ib))}' \
      "$tmp" >>"$OUT"
    stop_servers
  done
}

for p in $PERCENTS; do
  run "zipf" "$p"
done
run "zipf+scans" "$SCAN_PERCENT" --scan-every "$SCAN_EVERY" --scan-len "$SCAN_LEN"

echo "replay: memcached $memcached_version vs amalgam (${amalgam_bin:-not built}), -t $SERVER_THREADS;" \
  "$KEYS keys of $KEY_BYTES B / $VALUE_BYTES B (working set counted at $ITEM_BYTES B per item);" \
  "Zipf 0.99, 95% GET / 5% SET, each miss refilled; $WARMUP_OPS warm-up + $OPS counted ops; batch $BATCH, seed $SEED;" \
  "scan case: $SCAN_LEN cold keys every $SCAN_EVERY ops"
echo
jq -rs '
  def pct: if . == null then "-" else (. * 10000 | round / 100 | tostring) + "%" end;
  def miss(rows; s): [rows[] | select(.label == s) | .miss_ratio][0];
  "| case | target size | -m MiB | size of working set | memcached miss ratio | amalgam miss ratio | amalgam SETs refused |",
  "|---|---:|---:|---:|---:|---:|---:|",
  (group_by([.case, .percent]) | sort_by(.[0].case, .[0].percent)[] | . as $rows | $rows[0] as $r
   | "| \($r.case) | \($r.percent)% | \($r.memory_mb) | \($r.actual_percent * 100 | round / 100)%"
     + " | \(miss($rows; "memcached") | pct) | \(miss($rows; "amalgam") | pct)"
     + " | \([$rows[] | select(.label == "amalgam") | .sets_refused][0] // "-") |")
' "$OUT"
echo
echo "Per-run JSON lines: $OUT"
