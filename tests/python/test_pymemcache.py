"""pymemcache, a client not written here, against a running server.

The server is named by AMALGAM_TEST_ADDR=host:port (scripts/test.sh starts
amalgam, and memcached, for this); every test passes against both.
Tests that flush or count assume nobody else uses the server meanwhile.
"""

import os
import socket
import uuid

import pytest
from pymemcache.client.base import Client
from pymemcache.exceptions import (
    MemcacheClientError,
    MemcacheIllegalInputError,
    MemcacheServerError,
)


def _addr():
    addr = os.environ.get("AMALGAM_TEST_ADDR")
    if not addr:
        pytest.skip("AMALGAM_TEST_ADDR is not set (scripts/test.sh sets it)")
    host, port = addr.rsplit(":", 1)
    return host, int(port)


@pytest.fixture
def client():
    c = Client(_addr(), connect_timeout=5, timeout=5, default_noreply=False)
    yield c
    c.close()


def k(name):
    """A key no other test (or run) uses."""
    return f"py_{uuid.uuid4().hex[:12]}_{name}"


def test_set_get_delete(client):
    a = k("a")
    assert client.set(a, b"hello") is True
    assert client.get(a) == b"hello"
    assert client.get(k("missing")) is None
    assert client.delete(a) is True
    assert client.delete(a) is False
    assert client.get(a) is None


def _raw(request, terminator):
    """Sends raw bytes on a fresh connection; returns the reply up to terminator."""
    with socket.create_connection(_addr(), timeout=5) as s:
        s.sendall(request)
        got = b""
        while not got.endswith(terminator):
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
        return got


def test_binary_values_and_flags(client):
    a = k("bin")
    value = bytes(range(256)) * 40
    assert client.set(a, value, flags=4242)
    assert client.get(a) == value
    raw = _raw(f"get {a}\r\n".encode(), b"END\r\n")
    assert raw == f"VALUE {a} 4242 {len(value)}\r\n".encode() + value + b"\r\nEND\r\n"
    assert client.set(a, b"")
    assert client.get(a) == b""


def test_add_replace_append_prepend(client):
    a = k("arap")
    assert client.add(a, b"1") is True
    assert client.add(a, b"2") is False
    assert client.replace(a, b"3") is True
    assert client.replace(k("missing"), b"x") is False
    assert client.append(a, b">") is True
    assert client.prepend(a, b"<") is True
    assert client.append(k("missing"), b"x") is False
    assert client.get(a) == b"<3>"


def test_gets_cas(client):
    a = k("cas")
    client.set(a, b"v1")
    value, unique = client.gets(a)
    assert value == b"v1" and unique
    assert client.cas(a, b"v2", unique) is True
    assert client.cas(a, b"v3", unique) is False  # EXISTS
    assert client.cas(k("missing"), b"x", unique) is None  # NOT_FOUND
    assert client.get(a) == b"v2"
    many = client.gets_many([a, k("missing")])
    assert list(many) == [a] and many[a][0] == b"v2"


def test_incr_decr(client):
    n = k("n")
    client.set(n, b"10")
    assert client.incr(n, 5) == 15
    assert client.decr(n, 100) == 0
    client.set(n, b"18446744073709551615")
    assert client.incr(n, 1) == 0
    assert client.incr(k("missing"), 1) is None
    client.set(n, b"abc")
    with pytest.raises(MemcacheClientError, match="non-numeric"):
        client.incr(n, 1)


def test_touch_and_expiry(client):
    a = k("touch")
    client.set(a, b"x")
    assert client.touch(a, 1000) is True
    assert client.touch(k("missing"), 1000) is False
    # A negative exptime means "already expired".
    client.set(a, b"x", expire=-1)
    assert client.get(a) is None
    client.set(a, b"x")
    client.touch(a, -1)
    assert client.get(a) is None


def test_get_many_100_keys(client):
    keys = [k(f"m{i}") for i in range(100)]
    assert client.set_many({key: str(i).encode() for i, key in enumerate(keys)}) == []
    got = client.get_many(keys + [k("missing")])
    assert got == {key: str(i).encode() for i, key in enumerate(keys)}
    client.delete_many(keys)
    assert client.get_many(keys) == {}


def test_noreply(client):
    a = k("noreply")
    assert client.set(a, b"1", noreply=True) is True
    assert client.add(a, b"2", noreply=True) is True  # noreply: no answer to look at
    assert client.incr(a, 4, noreply=True) is None
    assert client.get(a) == b"5"
    client.delete(a, noreply=True)
    assert client.get(a) is None


def test_large_values(client):
    a = k("large")
    value = b"v" * (900 << 10)
    assert client.set(a, value)
    assert client.get(a) == value
    with pytest.raises(MemcacheServerError, match="object too large for cache"):
        client.set(a, b"v" * (2 << 20))
    # memcached drops the old value of a refused set.
    assert client.get(a) is None


def test_bad_keys_are_refused(client):
    with pytest.raises(MemcacheIllegalInputError):
        client.set("k" * 251, b"x")
    with pytest.raises(MemcacheIllegalInputError):
        client.set("has space", b"x")
    # The server itself refuses a 251-byte key the client did not check.
    assert _raw(b"get " + b"k" * 251 + b"\r\n", b"\r\n") == b"CLIENT_ERROR bad command line format\r\n"


def test_version_and_stats(client):
    assert client.version().startswith(b"1.")
    stats = client.stats()
    for name in (b"pid", b"uptime", b"curr_items", b"cmd_get", b"get_hits", b"limit_maxbytes", b"threads"):
        assert name in stats, name
    settings = client.stats("settings")
    assert b"maxbytes" in settings and b"item_size_max" in settings
    a = k("count")
    before = client.stats()[b"get_hits"]
    client.set(a, b"x")
    client.get(a)
    assert client.stats()[b"get_hits"] >= before + 1


def test_flush_all(client):
    a = k("flush")
    client.set(a, b"x")
    assert client.flush_all(delay=100) is True
    assert client.get(a) == b"x"
    assert client.flush_all() is True
    assert client.get(a) is None


def test_pipelined_raw_bytes():
    """Several requests in one write are answered in order."""
    a = k("pipe")
    request = f"set {a} 0 0 1\r\n1\r\nincr {a} 41\r\nget {a}\r\nbogus\r\ndelete {a}\r\nget {a}\r\n"
    want = f"STORED\r\n42\r\nVALUE {a} 0 2\r\n42\r\nEND\r\nERROR\r\nDELETED\r\nEND\r\n".encode()
    assert _raw(request.encode(), want[-12:]) == want
