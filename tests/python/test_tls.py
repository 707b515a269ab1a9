"""TLS with clients not written here: redis-py (ssl=True) and pymemcache
(tls_context), against an amalgam this module starts itself with -Z and
--tls-port (certificates made by scripts/tls-test-certs.sh: test-only keys
in a temporary directory).

Amalgam-only: runs in scripts/test.sh's amalgam pass (AMALGAM_TEST_RESP_ADDR
set, the amalgam binary built at target/debug/amalgam, or AMALGAM_BIN);
skipped in the memcached pass and wherever the binary or openssl is missing.
"""

import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import uuid

import pytest
import redis
from pymemcache.client.base import Client
from redis.backoff import NoBackoff
from redis.retry import Retry

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
START_TIMEOUT_SECONDS = 20


def _binary():
    if not os.environ.get("AMALGAM_TEST_RESP_ADDR"):
        pytest.skip("not the amalgam pass (AMALGAM_TEST_RESP_ADDR unset): TLS tests are amalgam-only")
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    path = os.environ.get("AMALGAM_BIN", os.path.join(target, "debug", "amalgam"))
    if not os.path.exists(path) or shutil.which("openssl") is None:
        pytest.skip(f"no amalgam binary at {path}, or no openssl")
    return path


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def certs():
    _binary()
    d = tempfile.mkdtemp(prefix="amalgam-tls-py-")
    subprocess.run(["bash", os.path.join(ROOT, "scripts", "tls-test-certs.sh"), d], check=True)
    live = os.path.join(d, "live")
    os.mkdir(live)
    shutil.copy(os.path.join(d, "server.crt"), os.path.join(live, "server.crt"))
    shutil.copy(os.path.join(d, "server.key"), os.path.join(live, "server.key"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


class Amalgam:
    def __init__(self, certs, extra):
        live = os.path.join(certs, "live")
        self.port, self.resp, self.tls = _free_port(), _free_port(), _free_port()
        cmd = [
            _binary(), "-l", "127.0.0.1", "-U", "0", "-p", str(self.port),
            "--resp-port", str(self.resp), "--tls-port", str(self.tls),
            "-Z", "-o", f"ssl_chain_cert={live}/server.crt,ssl_key={live}/server.key",
            "--tls-ca-cert-file", os.path.join(certs, "ca.crt"),
        ] + extra
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + START_TIMEOUT_SECONDS
        while True:
            assert self.proc.poll() is None, f"amalgam exited at start: {cmd}"
            try:
                socket.create_connection(("127.0.0.1", self.tls), timeout=1).close()
                break
            except OSError:
                assert time.time() < deadline, "amalgam did not start"
                time.sleep(0.02)

    def stop(self):
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def optional(certs):
    a = Amalgam(certs, ["--tls-auth-clients", "optional", "-o", "ssl_ca_cert=" + os.path.join(certs, "ca.crt")])
    yield a
    a.stop()


@pytest.fixture
def required(certs):
    # Redis's default with a CA: client certificates required on RESP;
    # memcached's ssl_verify_mode=2 on the memcached port.
    a = Amalgam(certs, ["-o", "ssl_verify_mode=2"])
    yield a
    a.stop()


def _redis(a, certs, client=None, **kw):
    args = dict(host="127.0.0.1", port=a.tls, ssl=True, ssl_ca_certs=os.path.join(certs, "ca.crt"),
                socket_timeout=5, decode_responses=True)
    if client:
        args.update(ssl_certfile=os.path.join(certs, f"{client}.crt"), ssl_keyfile=os.path.join(certs, f"{client}.key"))
    args.update(kw)
    return redis.Redis(**args)


def _tls_context(certs, client=None):
    ctx = ssl.create_default_context(cafile=os.path.join(certs, "ca.crt"))
    if client:
        ctx.load_cert_chain(os.path.join(certs, f"{client}.crt"), os.path.join(certs, f"{client}.key"))
    return ctx


@pytest.mark.parametrize("protocol", [2, 3])
def test_redis_py_over_tls(optional, certs, protocol):
    r = _redis(optional, certs, protocol=protocol)
    k = f"tls-{uuid.uuid4().hex}"
    assert r.set(k, "v") is True
    assert r.get(k) == "v"
    # The same key over the plain RESP port.
    plain = redis.Redis(host="127.0.0.1", port=optional.resp, socket_timeout=5, decode_responses=True)
    assert plain.get(k) == "v"
    r.close()
    plain.close()


def test_redis_py_client_certificate_required(required, certs):
    r = _redis(required, certs, client="client")
    assert r.ping() is True
    r.close()
    for bad in (None, "expired", "rogue"):
        # No retries: redis-py retries a failed connection with backoff.
        r = _redis(required, certs, client=bad, retry=Retry(NoBackoff(), 0))
        with pytest.raises((redis.ConnectionError, ssl.SSLError, OSError)):
            r.ping()
        r.close()


def test_pymemcache_over_tls(optional, certs):
    c = Client(("127.0.0.1", optional.port), tls_context=_tls_context(certs), timeout=5)
    k = f"tls-{uuid.uuid4().hex}"
    assert c.set(k, b"hello", noreply=False) is True
    assert c.get(k) == b"hello"
    c.close()


def test_pymemcache_client_certificate_required(required, certs):
    c = Client(("127.0.0.1", required.port), tls_context=_tls_context(certs, "client"), timeout=5)
    assert c.version()
    c.close()
    c = Client(("127.0.0.1", required.port), tls_context=_tls_context(certs, "rogue"), timeout=5)
    with pytest.raises((ssl.SSLError, OSError, Exception)):
        c.version()
    c.close()


def _served_cn(port, certs):
    ctx = _tls_context(certs)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        with ctx.wrap_socket(s, server_hostname="127.0.0.1") as t:
            subject = dict(x[0] for x in t.getpeercert()["subject"])
            return subject["commonName"]


def test_reload_by_sighup_then_config_set(optional, certs):
    live = os.path.join(certs, "live")
    assert _served_cn(optional.tls, certs) == "127.0.0.1"
    try:
        shutil.copy(os.path.join(certs, "server2.crt"), os.path.join(live, "server.crt"))
        shutil.copy(os.path.join(certs, "server2.key"), os.path.join(live, "server.key"))
        assert _served_cn(optional.port, certs) == "127.0.0.1"
        optional.proc.send_signal(signal.SIGHUP)
        deadline = time.time() + 10
        while _served_cn(optional.port, certs) != "amalgam-reloaded":
            assert time.time() < deadline, "SIGHUP did not reload"
            time.sleep(0.05)
        assert _served_cn(optional.tls, certs) == "amalgam-reloaded"
        r = _redis(optional, certs)
        crt, key = os.path.join(certs, "server.crt"), os.path.join(certs, "server.key")
        assert r.execute_command("CONFIG", "SET", "tls-cert-file", crt, "tls-key-file", key) in (True, "OK")
        assert r.config_get("tls-cert-file") == {"tls-cert-file": crt}
        r.close()
        assert _served_cn(optional.tls, certs) == "127.0.0.1"
        assert _served_cn(optional.port, certs) == "127.0.0.1"
    finally:
        shutil.copy(os.path.join(certs, "server.crt"), os.path.join(live, "server.crt"))
        shutil.copy(os.path.join(certs, "server.key"), os.path.join(live, "server.key"))
