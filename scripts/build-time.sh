#!/usr/bin/env bash
# How long `cargo test --workspace --no-run` takes for two commits: cold
# (a clean clone each, its own empty target directory, one after the
# other) and incremental after touching one command family's file (a
# function appended, then its body changed), ROUNDS rounds alternating
# the two clones. Issue 33 §4's measurement (docs/bench-log/2026-12-06-
# crate-split.md). Run it on a quiet machine; the crates.io registry
# should already be downloaded (a first `cargo fetch`).
#
# Usage: [ROUNDS=3] scripts/build-time.sh REV_A FILE_A REV_B FILE_B
#   e.g. scripts/build-time.sh 43b3ade crates/amalgam-server/src/resp/hash.rs \
#                              HEAD crates/amalgam-commands/src/hash.rs
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 4 ] || { echo "usage: $0 REV_A FILE_A REV_B FILE_B" >&2; exit 1; }
ROUNDS=${ROUNDS:-3}
repo=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
secs() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N); echo "$t1 - $t0" | bc; }
for side in a b; do
  if [ $side = a ]; then rev=$1; else rev=$3; fi
  git clone -q "$repo" "$work/$side"
  git -C "$work/$side" checkout -q "$rev"
  echo "cold $rev: $(cd "$work/$side" && secs cargo test --workspace --no-run) s"
done
touch_family() { # clone file
  local d=$1 f=$2
  git -C "$d" checkout -q -- "$f"
  printf '%s\n' '#[allow(dead_code)]' 'pub fn build_time_probe(v: &[u8]) -> usize {' \
    "    v.iter().filter(|&&b| b == b'x').count()" '}' >>"$d/$f"
  local add body
  add=$(cd "$d" && secs cargo test --workspace --no-run)
  sed -i "s/b == b'x'/b == b'y'/" "$d/$f"
  body=$(cd "$d" && secs cargo test --workspace --no-run)
  git -C "$d" checkout -q -- "$f"
  (cd "$d" && cargo test --workspace --no-run >/dev/null 2>&1)
  echo "incremental $(git -C "$d" rev-parse --short HEAD) $f: function added $add s, body changed $body s"
}
for _ in $(seq 1 "$ROUNDS"); do
  touch_family "$work/a" "$2"
  touch_family "$work/b" "$4"
done
