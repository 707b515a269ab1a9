#!/usr/bin/env bash
# Coverage-guided fuzzing (cargo-fuzz + libFuzzer) on stable Rust of the
# protocol parsers (text_parse, meta_parse, binary_parse, resp_parse), of
# recovery from damaged files (recover_files), of the log's collection
# ops (op_decode), of RESTORE's DUMP payloads (rdb_decode), of RDB files
# (rdb_file: a dump.rdb read item by item), of what a primary sends a
# replica after PSYNC (repl_sync_in: the reply, the full sync's framing
# and RDB or records, the stream) and of strings
# read as HyperLogLogs (hll_value): the targets in fuzz/. scripts/test.sh
# runs them for 5 s each; the proptest counterparts
# (crates/amalgam-protocol/tests/ parse_fuzz.rs, meta_fuzz.rs,
# binary_fuzz.rs, resp_fuzz.rs, crates/amalgam-persist/tests/
# recover_fuzz.rs and rdb_fuzz.rs, crates/amalgam-types/tests/op_model.rs
# and hll_golden.rs) run in `cargo test` with the same invariants.
#
# FUZZ_DIR=fuzz-server: the targets of what lives in amalgam-server
# (memcached's `-Y` authfile, the ACL file / ACL SETUSER rules, and
# tls_conn: a TLS connection through the worker's state machine over a
# fake socket, fed handshake records, garbage and commands). Building
# the server under libFuzzer's instrumentation takes longer than CI's
# budget, so CI runs their invariants uninstrumented over mutated seeds
# (crates/amalgam-server/tests/fuzz_smoke.rs) and this long mode is run by
# hand (docs/security.md records its counts).
#
#   [FUZZ_DIR=fuzz|fuzz-server] [FUZZ_INSTRUMENT_ONLY=1] FUZZ_SECONDS=60 \
#     bash scripts/fuzz.sh [target...]
#   (default: every target of FUZZ_DIR, fuzz/ by default)
#
# FUZZ_INSTRUMENT_ONLY=1 builds with scripts/rustc-instrument-only.sh as
# RUSTC_WRAPPER: libFuzzer's coverage instrumentation on Amalgam's crates
# and the targets only, none on dependencies (rustls, ring, clap …), into
# target/instrument-only/ beside the default build. For fuzz-server's
# tls_conn: 99 k counters instead of 151 k and 1.4x the executions per
# CPU second (docs/security.md § Long runs).
#
# Installs cargo-fuzz if missing (`cargo install --locked`, about two
# minutes on two cores; later runs reuse the binary), builds every target,
# runs each for FUZZ_SECONDS (default 60) from the committed seeds in
# fuzz/corpus/<target> (what it finds goes to fuzz/target/corpus/<target>,
# not committed) and prints "<target>: no crash" or "<target>: CRASH".
# Exit status: 0 no crash; 1 a target panicked or broke an invariant (the
# input is then in fuzz/artifacts/<target>/ and the reproduce command is
# printed) or did not build; 2 cargo-fuzz is missing and cannot be
# installed (nothing ran).
#
# Stable Rust: `--sanitizer none`. cargo-fuzz's default (AddressSanitizer)
# passes -Zsanitizer=address, which only nightly accepts; without it the
# coverage instrumentation libFuzzer steers by (-Cpasses=sancov-module and
# -Cllvm-args=-sanitizer-coverage-*) is all stable codegen flags. The
# parsers are #![forbid(unsafe_code)], so a sanitizer would add little;
# recover_files runs the engine, whose unsafe blocks it exercises but
# cannot check for memory errors without one (it checks recovery's
# results: see its invariants module).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${FUZZ_SECONDS:-60}

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "== installing cargo-fuzz (cargo install --locked cargo-fuzz)"
  if ! cargo install --locked cargo-fuzz || ! cargo fuzz --version >/dev/null 2>&1; then
    echo "notice: cargo-fuzz is not installed and could not be installed: no fuzzing ran"
    exit 2
  fi
fi

cd "${FUZZ_DIR:-fuzz}"
# cargo-fuzz looks for the project's fuzz/ from any directory below the
# repository unless told: without --fuzz-dir, FUZZ_DIR=fuzz-server built
# and ran fuzz/'s targets.
here=(--fuzz-dir "$PWD")
build=()
if [ "${FUZZ_INSTRUMENT_ONLY:-0}" = 1 ]; then
  export RUSTC_WRAPPER="$PWD/../scripts/rustc-instrument-only.sh"
  build=(--target-dir "$PWD/target/instrument-only")
fi
if [ $# -gt 0 ]; then
  targets=("$@")
else
  mapfile -t targets < <(cargo fuzz list "${here[@]}")
fi

for t in "${targets[@]}"; do
  echo "== cargo fuzz build $t"
  if ! cargo fuzz build "${here[@]}" "${build[@]}" --sanitizer none "$t"; then
    echo "$t: BUILD FAILED"
    exit 1
  fi
done

failed=0
for t in "${targets[@]}"; do
  echo "== cargo fuzz run $t for ${seconds}s"
  mkdir -p "target/corpus/$t" "corpus/$t"
  log="target/fuzz-$t.log"
  dict=()
  [ -f "$t.dict" ] && dict=("-dict=$PWD/$t.dict")
  if cargo fuzz run "${here[@]}" "${build[@]}" --sanitizer none "$t" "target/corpus/$t" "corpus/$t" -- \
      -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 "${dict[@]}" >"$log" 2>&1; then
    grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1 || true
    echo "$t: no crash"
  else
    # The report without libFuzzer's progress lines.
    grep -Ev '^#[0-9]+[[:space:]]+(NEW|REDUCE|pulse|RELOAD|INITED)' "$log" | tail -n 80
    echo "$t: CRASH (full log: ${FUZZ_DIR:-fuzz}/$log)"
    failed=1
  fi
done
exit "$failed"
