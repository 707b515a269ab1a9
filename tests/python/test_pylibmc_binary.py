"""pylibmc (libmemcached) with binary=True, a binary-protocol client not
written here, against a running server named by AMALGAM_TEST_ADDR=host:port.
Every test passes against amalgam and against memcached 1.6.18.

pylibmc comes from Debian's python3-pylibmc (pip's needs a compiler and
libmemcached-dev); when the python3 running pytest is not Debian's own,
Debian's dist-packages directory is tried too (the module is built for the
same CPython minor version there), else the tests are skipped.
"""

import os
import sys
import uuid

import pytest

try:
    import pylibmc
except ImportError:
    sys.path.append("/usr/lib/python3/dist-packages")
    try:
        import pylibmc
    except ImportError:
        pylibmc = None
    finally:
        sys.path.remove("/usr/lib/python3/dist-packages")


def _addr():
    addr = os.environ.get("AMALGAM_TEST_ADDR")
    if not addr:
        pytest.skip("AMALGAM_TEST_ADDR is not set (scripts/test.sh sets it)")
    return addr


@pytest.fixture
def client():
    if pylibmc is None:
        pytest.skip("pylibmc is not installed (apt install python3-pylibmc)")
    c = pylibmc.Client([_addr()], binary=True, behaviors={"cas": True})
    yield c
    c.disconnect_all()


def k(name):
    """A key no other test (or run) uses."""
    return f"plm_{uuid.uuid4().hex[:12]}_{name}"


def test_client_speaks_binary(client):
    assert client.binary
    assert client.set(k("probe"), b"v") is True


def test_set_get_delete(client):
    a = k("a")
    assert client.set(a, b"hello") is True
    assert client.get(a) == b"hello"
    assert client.get(k("missing")) is None
    assert client.delete(a) is True
    assert client.delete(a) is False
    assert client.get(a) is None


def test_python_values_round_trip(client):
    # pylibmc keeps the Python type in the item's flags.
    values = {k("int"): 42, k("str"): "text", k("bytes"): b"\x00\x80\xff", k("list"): [1, "two", 3.0]}
    for key, value in values.items():
        assert client.set(key, value)
    for key, value in values.items():
        assert client.get(key) == value


def test_add_replace_append_prepend(client):
    a = k("a")
    # A binary replace of a missing key is status "Not found", which
    # pylibmc raises (the text protocol's NOT_STORED returns False).
    with pytest.raises(pylibmc.NotFound):
        client.replace(a, b"x")
    assert client.add(a, b"mid") is True
    assert client.add(a, b"again") is False
    assert client.append(a, b">") is True
    assert client.prepend(a, b"<") is True
    assert client.get(a) == b"<mid>"
    assert client.replace(a, b"new") is True
    assert client.get(a) == b"new"
    # A binary append to a missing key is "Not stored.".
    assert client.append(k("missing"), b"x") is False


def test_incr_decr(client):
    n = k("n")
    with pytest.raises(pylibmc.NotFound):
        client.incr(n)
    client.set(n, 10)
    assert client.incr(n) == 11
    assert client.incr(n, 5) == 16
    assert client.decr(n, 100) == 0
    client.set(n, b"abc")
    with pytest.raises(pylibmc.Error):
        client.incr(n)


def test_gets_cas(client):
    a = k("a")
    client.set(a, b"v1")
    value, cas = client.gets(a)
    assert value == b"v1" and cas
    assert client.cas(a, b"v2", cas) is True
    assert client.cas(a, b"v3", cas) is False
    assert client.get(a) == b"v2"


def test_get_multi_set_multi_delete_multi(client):
    # get_multi is getkq per key and a noop in the binary protocol.
    keys = [k(f"m{i}") for i in range(100)]
    assert client.set_multi({key: f"v{i}".encode() for i, key in enumerate(keys[::2])}) == []
    got = client.get_multi(keys)
    assert got == {key: f"v{i}".encode() for i, key in enumerate(keys[::2])}
    assert client.delete_multi(keys[::2]) is True
    assert client.get_multi(keys) == {}


def test_touch_and_expiry(client):
    a = k("a")
    client.set(a, b"v")
    assert client.touch(a, 100) is True
    assert client.touch(k("missing"), 100) is False
    assert client.get(a) == b"v"


def test_large_values(client):
    a = k("big")
    big = b"x" * (512 * 1024)
    assert client.set(a, big) is True
    assert client.get(a) == big
    with pytest.raises(pylibmc.TooBig):
        client.set(a, b"y" * (2 * 1024 * 1024))


def test_stats(client):
    (server, stats), = client.get_stats()
    for name in ("pid", "uptime", "curr_items", "get_hits", "cmd_get"):
        assert name in stats, name
    assert int(stats["limit_maxbytes"]) > 0
