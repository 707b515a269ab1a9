#!/usr/bin/env bash
# RUSTC_WRAPPER for the long fuzz runs of fuzz-server's targets: keeps
# libFuzzer's coverage instrumentation on Amalgam's own crates and the fuzz
# targets, and drops it from every dependency (rustls, ring, clap,
# tiny_http …).
#
# Why: a tls_conn input cost ~1.5 ms of CPU, and 46 % of it was libFuzzer
# collecting features from ~151 k inline counters after every input, most
# of them in rustls and ring, which are fuzzed upstream and are not what
# tls_conn is for (our connection state machine around them). An
# uninstrumented module registers no counters, so libFuzzer steers by our
# code's coverage alone and walks far fewer counters per input.
#
# Usage (scripts/fuzz.sh sets it when FUZZ_INSTRUMENT_ONLY=1):
#   RUSTC_WRAPPER=scripts/rustc-instrument-only.sh cargo fuzz build ...
# The crates kept instrumented: INSTRUMENT_CRATES (space-separated crate
# names, default below).
set -euo pipefail

keep=${INSTRUMENT_CRATES:-"amalgam_server amalgam_protocol amalgam_engine amalgam_types amalgam_persist amalgam_fuzz_server authfile acl_rules tls_conn"}

rustc=$1
shift
crate=""
prev=""
for a in "$@"; do
  if [ "$prev" = "--crate-name" ]; then
    crate=$a
    break
  fi
  prev=$a
done

case " $keep " in
  *" $crate "*) exec "$rustc" "$@" ;;
esac

# Drop the sanitizer-coverage flags, whether given as one argument
# (-Cpasses=sancov-module) or as two (-C passes=sancov-module).
out=()
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  a=${args[i]}
  case "$a" in
    -Cpasses=sancov-module | -Cllvm-args=-sanitizer-coverage-*) continue ;;
    -C)
      n=${args[i + 1]:-}
      case "$n" in
        passes=sancov-module | llvm-args=-sanitizer-coverage-*)
          i=$((i + 1))
          continue
          ;;
      esac
      ;;
  esac
  out+=("$a")
done
exec "$rustc" "${out[@]}"
