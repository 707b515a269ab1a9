# Sourced by scripts/cache-fill.sh and scripts/cache-hitratio.sh: finds or
# installs the binaries, starts servers on a port and kills them on exit.
#
# Reads: NO_BUILD, MEMCACHED (path), AMALGAM (path), CARGO_TARGET_DIR.
# Sets: bench, memcached_bin, amalgam_bin ("" if not built), memcached_version.

target_dir=${CARGO_TARGET_DIR:-target}
bench=$target_dir/release/amalgam-bench

command -v jq >/dev/null || { echo "jq not found (apt-get install jq)" >&2; exit 1; }
if [ -z "${MEMCACHED:-}" ] && ! command -v memcached >/dev/null 2>&1; then
  sudo_=""
  if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then sudo_="sudo -n"; fi
  echo "installing memcached (apt)" >&2
  { DEBIAN_FRONTEND=noninteractive $sudo_ apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq memcached; } >/dev/null 2>&1 ||
    { echo "could not install memcached: set MEMCACHED=/path/to/memcached" >&2; exit 1; }
fi
memcached_bin=${MEMCACHED:-$(command -v memcached)}
memcached_version=$("$memcached_bin" -V | cut -d' ' -f2)
amalgam_bin=${AMALGAM-$target_dir/release/amalgam}
[ -x "$amalgam_bin" ] || amalgam_bin=""

[ -n "${NO_BUILD:-}" ] || nice -n 19 cargo build --release -q -p amalgam-bench -p amalgam-server
[ -x "$bench" ] || { echo "$bench not built" >&2; exit 1; }

server_pids=()
stop_servers() {
  for p in "${server_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${server_pids[@]}"; do wait "$p" 2>/dev/null || true; done
  server_pids=()
}
trap stop_servers EXIT
trap 'exit 130' INT TERM

listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# start_server NAME PORT MEGABYTES THREADS: starts memcached or amalgam with
# memcached's flags, waits until it listens; sets $server_pid.
start_server() {
  local name=$1 port=$2 mb=$3 threads=$4
  ! listening "$port" || { echo "port $port is already in use: set the *_PORT variables" >&2; exit 1; }
  if [ "$name" = memcached ]; then
    # -u is only used (and required) when running as root.
    "$memcached_bin" -u nobody -l 127.0.0.1 -U 0 -m "$mb" -t "$threads" -p "$port" &
  else
    "$amalgam_bin" -l 127.0.0.1 -U 0 -m "$mb" -t "$threads" -p "$port" &
  fi
  server_pid=$!
  server_pids+=("$server_pid")
  for _ in $(seq 1 200); do
    kill -0 "$server_pid" 2>/dev/null || { echo "$name on port $port exited" >&2; exit 1; }
    listening "$port" && return 0
    sleep 0.05
  done
  echo "$name: nothing listening on port $port" >&2
  exit 1
}

# The servers to measure: memcached, and amalgam if it was built.
servers() { echo memcached; [ -z "$amalgam_bin" ] || echo amalgam; }
