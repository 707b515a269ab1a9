#!/usr/bin/env bash
# Last-level-cache misses per GET hit, counted by valgrind's cache simulator
# (hardware counters are not available here). The LL cache is Mercury's
# 12 MiB L3 as 12-way (cachegrind's simulator needs a power-of-two set count).
#
# For each contender, `amalgam-bench embedded --experiment llc` preloads KEYS
# 8 B / 8 B keys, waits for Amalgam's expansions to finish, builds a stream of
# GETS uniform keys in access order, then looks them all up inside one
# out-of-line function, llc_lookups. The simulator is callgrind's (the same
# one cachegrind uses), because callgrind can count inside that function only
# (--collect-atstart=no --toggle-collect), which makes the figure exact and
# repeatable: the preload and the expand thread do not enter it. A baseline
# run that only reads the stream gives the driver's own misses (one per 64 B
# of keys), subtracted from the lookup run.
#
# METHOD=cachegrind instead counts the whole process with cachegrind
# (--cachegrind-out-file=/dev/null) and subtracts a --gets 0 run: the
# issue's first recipe, kept for comparison. It also counts the preload and
# the stream's construction, so the expand thread's scheduling under
# valgrind leaks into the difference (it has come out negative).
#
# Usage: KEYS=4194304 GETS=1048576 [METHOD=callgrind|cachegrind] \
#          [BENCH=path/to/amalgam-bench (skips the build)] scripts/llc-per-get.sh [contender ...]
# Takes a few minutes per contender at the default sizes.
set -euo pipefail
cd "$(dirname "$0")/.."
KEYS=${KEYS:-4194304}
GETS=${GETS:-1048576}
LL=${LL:---LL=12582912,12,64}
METHOD=${METHOD:-callgrind}
contenders=("$@")
[ ${#contenders[@]} -gt 0 ] || contenders=(amalgam mutex-hashmap)

if [ -n "${BENCH:-}" ]; then
  bin=$BENCH
else
  cargo build --release -q -p amalgam-bench
  bin=${CARGO_TARGET_DIR:-target}/release/amalgam-bench
fi

ll_misses() { # contender [--llc-baseline] -> LL data misses (see METHOD)
  local out
  if [ "$METHOD" = cachegrind ]; then
    local gets=$GETS
    [ "${2:-}" = --llc-baseline ] && gets=0
    out=$(valgrind --tool=cachegrind --cache-sim=yes "$LL" --cachegrind-out-file=/dev/null \
      "$bin" embedded --experiment llc --contenders "$1" --keys "$KEYS" --gets "$gets" 2>&1)
  else
    out=$(valgrind --tool=callgrind --cache-sim=yes "$LL" --callgrind-out-file=/dev/null \
      --collect-atstart=no --toggle-collect='*llc_lookups*' \
      "$bin" embedded --experiment llc --contenders "$1" --keys "$KEYS" --gets "$GETS" ${2:-} 2>&1)
  fi
  local n
  n=$(awk '/LLd misses:/ { gsub(",", "", $4); print $4 }' <<<"$out")
  if [ -z "$n" ]; then
    echo "llc-per-get.sh: no 'LLd misses' in valgrind's output for $1:" >&2
    echo "$out" | tail -20 >&2
    exit 1
  fi
  echo "$n"
}

echo "LL misses per GET hit: $KEYS keys (8 B / 8 B), $GETS uniform GET hits, valgrind $METHOD cache simulator $LL"
echo
if [ "$METHOD" = cachegrind ]; then base_name="--gets 0"; else base_name="stream only"; fi
echo "| contender | LLd misses ($base_name) | LLd misses (lookups) | per GET |"
echo "|---|---|---|---|"
for c in "${contenders[@]}"; do
  base=$(ll_misses "$c" --llc-baseline)
  full=$(ll_misses "$c")
  per=$(awk -v a="$base" -v b="$full" -v n="$GETS" 'BEGIN { printf "%.2f", (b - a) / n }')
  echo "| $c | $base | $full | $per |"
done
