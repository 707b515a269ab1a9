"""The Prometheus endpoint (`--metrics-port`), scraped over HTTP by
Python's urllib, parsed by prometheus_client's own parser, and checked by
`promtool check metrics` (Debian's prometheus package; scripts/test.sh
puts promtool on the PATH).

The test starts an amalgam of its own (exact counters need a server no
other test touches): the binary named by AMALGAM_BIN, else the debug build
in target/. It sends known commands over both protocols with clients not
written here (pymemcache, redis-py) and checks what the scrape says
against them, exactly: the difference between a scrape before and one
after, so connection handshakes do not count. Skipped when the suite runs
against memcached (AMALGAM_TEST_ADDR without AMALGAM_TEST_RESP_ADDR).
"""

import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
START_TIMEOUT_S = 20


def _binary():
    if os.environ.get("AMALGAM_TEST_ADDR") and not os.environ.get("AMALGAM_TEST_RESP_ADDR"):
        pytest.skip("the suite runs against memcached: the metrics endpoint is amalgam's")
    exe = os.environ.get("AMALGAM_BIN") or os.path.join(
        os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "debug", "amalgam"
    )
    if not os.path.exists(exe):
        pytest.skip(f"{exe} is not built (cargo build -p amalgam-server)")
    return exe


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port):
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listens on {port}")


@pytest.fixture(scope="module")
def server():
    exe = _binary()
    ports = {"mc": _free_port(), "resp": _free_port(), "metrics": _free_port()}
    proc = subprocess.Popen(
        [exe, "-p", str(ports["mc"]), "-l", "127.0.0.1", "-U", "0", "-t", "2",
         "--resp-port", str(ports["resp"]), "--metrics-port", str(ports["metrics"])],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        for p in ports.values():
            _wait_port(p)
        yield ports
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def scrape(ports):
    """The body of GET /metrics, checked for status and content type."""
    with urllib.request.urlopen(f"http://127.0.0.1:{ports['metrics']}/metrics", timeout=5) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        return r.read().decode()


def samples(text):
    """{(name, frozenset(labels)): value}, through prometheus_client's parser."""
    parser = pytest.importorskip("prometheus_client.parser")
    out = {}
    for family in parser.text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def value(m, name, **labels):
    return m[(name, frozenset(labels.items()))]


def test_counters_match_the_commands_sent(server):
    import pymemcache.client.base
    import redis

    mc = pymemcache.client.base.Client(("127.0.0.1", server["mc"]), timeout=5)
    r = redis.Redis(host="127.0.0.1", port=server["resp"], socket_timeout=5)
    r.ping()
    mc.version()
    before = samples(scrape(server))

    # RESP: 3 SETs, 4 GETs (2 hits, 1 miss, 1 WRONGTYPE that Redis counts
    # as a hit and a failed call), 1 GET refused for its arity, 1 LPUSH.
    for i in range(3):
        assert r.set("a", str(i)) is True
    assert r.get("a") == b"2" and r.get("a") == b"2"
    assert r.get("missing") is None
    assert r.lpush("l", "x") == 1
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        r.get("l")
    with pytest.raises(redis.ResponseError, match="wrong number of arguments"):
        r.execute_command("GET")
    # memcached: 2 sets, a hit and a miss, a delete hit and miss, a touch miss.
    assert mc.set("m", b"v", noreply=False) and mc.set("m", b"w", noreply=False)
    assert mc.get("m") == b"w" and mc.get("nope") is None
    assert mc.delete("m", noreply=False) is True
    assert mc.delete("m", noreply=False) is False
    assert mc.touch("nope", 10, noreply=False) is False

    after = samples(scrape(server))

    def delta(name, **labels):
        return value(after, name, **labels) - before.get((name, frozenset(labels.items())), 0)

    assert delta("redis_commands_total", cmd="set") == 3
    assert delta("redis_commands_total", cmd="get") == 4
    assert delta("redis_commands_failed_calls_total", cmd="get") == 1
    assert delta("redis_commands_rejected_calls_total", cmd="get") == 1
    assert delta("redis_commands_total", cmd="lpush") == 1
    # INFO errorstats' counts: the WRONGTYPE and the arity error (ERR).
    assert delta("redis_errors_total", err="WRONGTYPE") == 1
    assert delta("redis_errors_total", err="ERR") == 1
    assert delta("redis_commands_duration_seconds_total", cmd="get") > 0
    # Both protocols' reads count in the same hits and misses, as stats and
    # INFO report them.
    assert delta("memcached_commands_total", command="get", status="hit") == 1 + 3
    assert delta("memcached_commands_total", command="get", status="miss") == 1 + 1
    assert delta("redis_keyspace_hits_total") == 4 and delta("redis_keyspace_misses_total") == 2
    assert delta("memcached_commands_total", command="set", status="hit") == 2 + 3
    assert delta("memcached_commands_total", command="delete", status="hit") == 1
    assert delta("memcached_commands_total", command="delete", status="miss") == 1
    assert delta("memcached_commands_total", command="touch", status="miss") == 1
    assert delta("memcached_read_bytes_total") > 0 and delta("memcached_written_bytes_total") > 0
    # Keys a and l remain.
    assert value(after, "memcached_current_items") == 2
    assert value(after, "redis_db_keys", db="db0") == 2
    assert value(after, "memcached_current_connections") == value(after, "redis_connected_clients") == 2
    assert value(after, "memcached_up") == 1 and value(after, "redis_up") == 1
    assert value(after, "memcached_limit_bytes") == 64 << 20
    # The latency families count the same calls (a fresh server: absolute).
    gets = value(after, "redis_commands_total", cmd="get")
    assert value(after, "redis_latency_percentiles_usec_count", cmd="get") == gets
    assert value(after, "amalgam_command_duration_seconds_count", cmd="get") == gets
    assert value(after, "amalgam_command_duration_seconds_bucket", cmd="get", le="+Inf") == gets
    p50 = value(after, "redis_latency_percentiles_usec", cmd="get", quantile="0.5")
    p999 = value(after, "redis_latency_percentiles_usec", cmd="get", quantile="0.999")
    assert 0 < p50 <= p999
    mc.close()
    r.close()


def test_promtool_accepts_the_output(server, tmp_path):
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (scripts/test.sh installs it)")
    import redis

    r = redis.Redis(host="127.0.0.1", port=server["resp"], socket_timeout=5)
    r.set("p", "1")
    r.get("p")
    r.close()
    body = scrape(server)
    done = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def test_only_get_of_metrics_is_served(server):
    base = f"http://127.0.0.1:{server['metrics']}"
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(base + "/nothing", timeout=5)
    assert e.value.code == 404
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(urllib.request.Request(base + "/metrics", data=b"x", method="POST"), timeout=5)
    assert e.value.code == 405


def test_scripting_section(server):
    import redis

    r = redis.Redis(host="127.0.0.1", port=server["resp"], socket_timeout=5)
    before = samples(scrape(server))
    sha = r.script_load("return redis.call('incr', KEYS[1])")
    assert r.evalsha(sha, 1, "metrics:script") >= 1
    lib = "#!lua name=metricslib\nredis.register_function('metrics_fn', function(keys) return 1 end)"
    assert r.function_load(lib, replace=True) in (b"metricslib", "metricslib")
    assert r.fcall("metrics_fn", 0) == 1
    after = samples(scrape(server))
    assert value(after, "amalgam_scripts_cached") >= 1
    assert value(after, "amalgam_scripts_cached_bytes") > 0
    assert value(after, "amalgam_lua_memory_bytes") > 0
    assert value(after, "amalgam_function_libraries") >= 1
    assert value(after, "amalgam_functions") >= 1
    assert value(after, "amalgam_scripts_busy") == 0
    # The script's INCR counts as a command of its own, as in Redis.
    incr_before = before.get(("redis_commands_total", frozenset({("cmd", "incr")})), 0)
    assert value(after, "redis_commands_total", cmd="incr") - incr_before == 1
    assert value(after, "redis_commands_total", cmd="evalsha") >= 1
    r.function_delete("metricslib")
    r.close()
