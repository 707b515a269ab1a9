#!/usr/bin/env bash
# Regenerates valkey-8.0.1.rdb, the RDB version 11 golden file of
# rdb/file_tests.rs: a valkey-server 8.0.1 (Debian bookworm-backports'
# valkey-server package; VALKEY_SERVER names its binary) filled with one
# key of each encoding it writes, among them version 11's listpack set
# (type 20) and a stream whose consumer has an active time (type 21), an
# expiry, a second database, a FUNCTION library, then SAVEd.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
server=${VALKEY_SERVER:-valkey-server}
d=$(mktemp -d)
port=${PORT:-$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")}
"$server" --port "$port" --save '' --appendonly no --dir "$d" --bind 127.0.0.1 --daemonize yes --pidfile "$d/p.pid" >/dev/null
sleep 0.5
c() { redis-cli -p "$port" "$@" >/dev/null; }
c set s hello; c set i 12345; c set big "$(python3 -c 'print("ab"*300)')"
c rpush l a b 3; c sadd si 1 2 3; c sadd ss x y 7; c hset h f v g w; c zadd z 1.5 a 2 b
c sadd sbig $(seq 1 200 | sed 's/^/m/')
c pexpireat s 4102444800000
c -n 2 set other v
c xadd st 1-1 f v; c xgroup create st g 0; c xreadgroup group g c count 1 streams st '>'
c function load "#!lua name=mylib
redis.register_function('f', function() return 1 end)"
c save; c shutdown nosave || true
cp "$d/dump.rdb" "$here/valkey-8.0.1.rdb"; rm -rf "$d"
