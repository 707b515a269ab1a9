"""meta-memcache (PyPI), a meta-protocol client not written here, against a
running server named by AMALGAM_TEST_ADDR=host:port. Every test passes
against amalgam and against memcached 1.6.18.
"""

import os
import uuid

import pytest
from meta_memcache import (
    CacheClient,
    LeasePolicy,
    RecachePolicy,
    ServerAddress,
    SetMode,
    StalePolicy,
    connection_pool_factory_builder,
)


def _addr():
    addr = os.environ.get("AMALGAM_TEST_ADDR")
    if not addr:
        pytest.skip("AMALGAM_TEST_ADDR is not set (scripts/test.sh sets it)")
    host, port = addr.rsplit(":", 1)
    return host, int(port)


@pytest.fixture
def cache():
    host, port = _addr()
    return CacheClient.cache_client_from_servers(
        servers=[ServerAddress(host=host, port=port)],
        connection_pool_factory_fn=connection_pool_factory_builder(connection_timeout=5, recv_timeout=5),
    )


def k(name):
    """A key no other test (or run) uses."""
    return f"mm_{uuid.uuid4().hex[:12]}_{name}"


def test_set_get_delete(cache):
    key = k("basic")
    assert cache.get(key) is None
    assert cache.set(key, "hello", ttl=60)
    assert cache.get(key) == "hello"
    assert cache.set(key, {"a": [1, 2]}, ttl=60)
    assert cache.get(key) == {"a": [1, 2]}
    assert cache.set(key, b"\x00\xffbytes", ttl=60)
    assert cache.get(key) == b"\x00\xffbytes"
    assert cache.delete(key)
    assert cache.get(key) is None
    # deleting a missing key answers NF: False
    assert not cache.delete(key)


def test_set_modes(cache):
    key = k("modes")
    assert not cache.set(key, "x", ttl=60, set_mode=SetMode.REPLACE)
    assert cache.set(key, "x", ttl=60, set_mode=SetMode.ADD)
    assert not cache.set(key, "y", ttl=60, set_mode=SetMode.ADD)
    assert cache.set(key, "z", ttl=60, set_mode=SetMode.REPLACE)
    assert cache.get(key) == "z"


def test_multi_get_and_no_reply(cache):
    keys = [k(f"m{i}") for i in range(5)]
    for i, key in enumerate(keys[:3]):
        assert cache.set(key, i, ttl=60, no_reply=True)
    got = cache.multi_get(keys)
    assert {key.key: v for key, v in got.items()} == {keys[0]: 0, keys[1]: 1, keys[2]: 2, keys[3]: None, keys[4]: None}


def test_touch(cache):
    key = k("touch")
    assert not cache.touch(key, ttl=60)
    assert cache.set(key, "v", ttl=60)
    assert cache.touch(key, ttl=1000)
    assert cache.get(key, touch_ttl=100) == "v"


def test_cas(cache):
    key = k("cas")
    assert cache.get_cas(key) == (None, None)
    assert cache.set(key, "v1", ttl=60)
    value, token = cache.get_cas(key)
    assert value == "v1" and token
    assert not cache.set(key, "bad", ttl=60, cas_token=token + 1)
    assert cache.set(key, "v2", ttl=60, cas_token=token)
    assert cache.get(key) == "v2"
    # the old token no longer matches
    assert not cache.set(key, "v3", ttl=60, cas_token=token)
    new_token = cache.set_cas(key, "v4", ttl=60)
    assert new_token and new_token != token
    assert cache.get_cas(key) == ("v4", new_token)
    assert not cache.delete(key, cas_token=token)
    assert cache.delete(key, cas_token=new_token)
    assert cache.get(key) is None


def test_incr_decr(cache):
    key = k("counter")
    assert not cache.delta(key, 1)
    assert cache.delta_and_get(key, 1) is None
    assert cache.delta_initialize(key, 5, initial_value=10, initial_ttl=60)
    assert cache.delta_and_get(key, 5) == 15
    assert cache.delta_and_get(key, -20) == 0
    assert cache.delta(key, 7)
    assert cache.delta_and_get(key, 0) == 7


def test_invalidate_and_stale_while_revalidate(cache):
    key = k("stale")
    policy = StalePolicy(mark_stale_on_deletion_ttl=30)
    assert cache.set(key, "fresh", ttl=60)
    assert cache.invalidate(key, stale_policy=policy)
    # the first reader wins the recache token (X W): a miss, go refill
    assert cache.get(key) is None
    # later readers are served the stale value meanwhile (X Z)
    assert cache.get(key) == "fresh"
    assert cache.set(key, "new", ttl=60)
    assert cache.get(key) == "new"


def test_lease(cache):
    key = k("lease")
    lease = LeasePolicy(ttl=30, miss_retries=1, miss_retry_wait=0.01, wait_backoff_factor=1, miss_max_retry_wait=0.01)
    # a miss vivifies the key and hands this client the lease (None = go fill it)
    assert cache.get_or_lease(key, lease_policy=lease) is None
    assert cache.set(key, "filled", ttl=60)
    assert cache.get_or_lease(key, lease_policy=lease) == "filled"


def test_recache_policy(cache):
    key = k("recache")
    assert cache.set(key, "v", ttl=100)
    assert cache.get(key, recache_policy=RecachePolicy(ttl=30)) == "v"
