#!/usr/bin/env bash
# Regenerates redis-7.0.15.rdb, the golden file of rdb/file_tests.rs:
# a redis-server 7.0.15 filled with one key of each encoding it writes,
# an expiry, a second database, a stream with a group and a pending
# entry, and a FUNCTION library, then SAVEd.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
d=$(mktemp -d); port=${PORT:-16391}
redis-server --port "$port" --save '' --appendonly no --dir "$d" --daemonize yes --pidfile "$d/p.pid" >/dev/null
sleep 0.5
c() { redis-cli -p "$port" "$@" >/dev/null; }
c set s hello; c set i 12345; c set big "$(python3 -c 'print("ab"*300)')"
c rpush l a b 3; c sadd si 1 2 3; c sadd ss x y; c hset h f v g w; c zadd z 1.5 a 2 b
c pexpireat s 4102444800000
c -n 2 set other v
c xadd st 1-1 f v; c xgroup create st g 0; c xreadgroup group g c count 1 streams st '>'
c function load "#!lua name=mylib
redis.register_function('f', function() return 1 end)"
c save; c shutdown nosave || true
cp "$d/dump.rdb" "$here/redis-7.0.15.rdb"; rm -rf "$d"
