#!/usr/bin/env bash
# Items held under the same memory budget: memcached vs Amalgam (issue 4 §4).
#
# Starts Debian's memcached (installed with apt if missing) and, if it was
# built (target/release/amalgam), amalgam, each fresh, with the same
# `-m MEMORY_MB -t SERVER_THREADS`, and runs `amalgam-bench fill` against
# each: distinct KEY_BYTES / VALUE_BYTES items (the same keys, values and
# order for both) until the server's stats show evictions (or a store-mode
# server refuses a SET), then every key written is read back. Prints each
# server's report, then a side-by-side markdown table: items held (read
# back), curr_items when evictions began, the ratio to memcached, bytes,
# limit_maxbytes and the server's VmRSS at the end (after the read-back and
# fill's --settle-secs) and its peak. JSON lines go to OUT.
#
# Only counts and sizes are reported, never times: a busy machine does not
# change them. Servers are killed on exit.
#
# Usage: [MEMORY_MB=64] [SERVER_THREADS=2] [KEY_BYTES=16] [VALUE_BYTES=32]
#        [MEMCACHED_PORT=41311] [AMALGAM_PORT=41312] [OUT=target/cache-fill.jsonl]
#        [MEMCACHED=/usr/bin/memcached] [AMALGAM=target/release/amalgam ("" skips it)]
#        [NO_BUILD=1] scripts/cache-fill.sh
set -euo pipefail
cd "$(dirname "$0")/.."

MEMORY_MB=${MEMORY_MB:-64}
SERVER_THREADS=${SERVER_THREADS:-2}
KEY_BYTES=${KEY_BYTES:-16}
VALUE_BYTES=${VALUE_BYTES:-32}
MEMCACHED_PORT=${MEMCACHED_PORT:-41311}
AMALGAM_PORT=${AMALGAM_PORT:-41312}
OUT=${OUT:-target/cache-fill.jsonl}

# shellcheck source=scripts/cache-common.sh
. scripts/cache-common.sh

mkdir -p "$(dirname "$OUT")"
: >"$OUT"
tmp=$(mktemp)
trap 'rm -f "$tmp"; stop_servers' EXIT

for s in $(servers); do
  port=$MEMCACHED_PORT
  [ "$s" = memcached ] || port=$AMALGAM_PORT
  start_server "$s" "$port" "$MEMORY_MB" "$SERVER_THREADS"
  "$bench" fill --server "127.0.0.1:$port" --key-bytes "$KEY_BYTES" --value-bytes "$VALUE_BYTES" \
    --pid "$server_pid" --label "$s" --json "$tmp" >&2
  jq -c --arg m "$MEMORY_MB" --arg t "$SERVER_THREADS" '. + {memory_mb: ($m | tonumber), server_threads: ($t | tonumber)}' \
    "$tmp" >>"$OUT"
  stop_servers
done

echo "fill: memcached $memcached_version vs amalgam (${amalgam_bin:-not built})," \
  "-m $MEMORY_MB -t $SERVER_THREADS, $KEY_BYTES B keys / $VALUE_BYTES B values"
echo
jq -rs '
  def mib: if . == null then "-" else (. / 1048576 * 10 | round / 10 | tostring) + " MiB" end;
  (map(select(.label == "memcached"))[0].items_held) as $base
  | "| server | stop | items held (read back) | curr_items when stopped | x memcached | bytes | limit_maxbytes | VmRSS | VmHWM (peak) |",
    "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    (.[] | "| \(.label) | \(.note) | \(.items_held) | \(.curr_items_at_stop)"
      + " | \(if $base > 0 then (.items_held / $base * 1000 | round / 1000 | tostring) else "-" end)"
      + " | \(.bytes | mib) | \(.limit_maxbytes | mib) | \(.rss_end_bytes | mib) | \(.rss_peak_bytes | mib) |")
' "$OUT"
echo
echo "Per-server JSON lines: $OUT"
