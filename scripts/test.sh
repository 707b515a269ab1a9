#!/usr/bin/env bash
# The whole test suite: the README's test command, and what CI runs.
#
# Installs what the tests need beyond the Rust toolchain, then runs
# formatting and lint checks, every crate's unit, integration and doc tests,
# and the loom models of the concurrency core. Ends with one summary line
# "tests: N passed, N failed".
set -euo pipefail
cd "$(dirname "$0")/.."

log=$(mktemp)
trap 'rm -f "$log"' EXIT

step() { printf '\n== %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (all targets, warnings are errors)"
cargo clippy --workspace --all-targets --quiet -- -D warnings

step "cargo test (workspace: unit, integration, doc tests)"
cargo test --workspace 2>&1 | tee -a "$log"

step "loom models of the bucket protocol and the expansion hand-off"
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
  cargo test -p amalgam-engine --release --test loom 2>&1 | tee -a "$log"

passed=$(grep -Eo 'test result: [a-zA-Z]+\. [0-9]+ passed' "$log" | awk '{s+=$4} END {print s+0}')
failed=$(grep -Eo '[0-9]+ failed' "$log" | awk '{s+=$1} END {print s+0}')
echo
echo "tests: ${passed} passed, ${failed} failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
