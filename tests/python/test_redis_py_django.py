"""Django's two Redis cache backends on a database other than 0 (issue 35
§1, §6): Django's built-in `django.core.cache.backends.redis.RedisCache`
and the `django-redis` package's `RedisCache`, each with `LOCATION`
`redis://host:port/2`, as a Django project configures them. Each must
keep its entries in database 2 (not in database 0, where another
application's data would mix with them), and the cache API must work:
set/get with a timeout, add, get_many/set_many, incr, delete, touch,
has_key, and `clear()` (FLUSHDB) emptying database 2 only.

Read as test_redis_py.py is: the server is AMALGAM_TEST_RESP_ADDR=host:port
(scripts/test.sh runs this against amalgam and against Debian's
redis-server 7, proving the expectations are Redis's own). Skipped when
the variable is unset or Django is not installed.
"""

import os
import uuid

import pytest
import redis

django = pytest.importorskip("django")
pytest.importorskip("django_redis")

from django.conf import settings  # noqa: E402

ADDR = os.environ.get("AMALGAM_TEST_RESP_ADDR")
pytestmark = pytest.mark.skipif(not ADDR, reason="AMALGAM_TEST_RESP_ADDR is not set")

DB = 2
BACKENDS = {
    "builtin": "django.core.cache.backends.redis.RedisCache",
    "django_redis": "django_redis.cache.RedisCache",
}

if ADDR and not settings.configured:
    settings.configure(
        CACHES={
            name: {"BACKEND": backend, "LOCATION": f"redis://{ADDR}/{DB}", "KEY_PREFIX": f"t{uuid.uuid4().hex[:8]}"}
            for name, backend in BACKENDS.items()
        }
        | {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}},
    )
    django.setup()


def client(db):
    host, port = ADDR.rsplit(":", 1)
    return redis.Redis(host=host, port=int(port), db=db)


@pytest.fixture(params=sorted(BACKENDS))
def cache(request):
    from django.core.cache import caches

    c = caches[request.param]
    yield c
    c.clear()
    c.close()


def test_entries_live_in_the_configured_database(cache):
    zero, two = client(0), client(DB)
    try:
        two.flushdb()
        key = f"entry-{uuid.uuid4().hex}"
        cache.set(key, {"answer": 42}, timeout=60)
        assert cache.get(key) == {"answer": 42}
        stored = [k for k in two.scan_iter(match=f"*{key}")]
        assert len(stored) == 1, "one Redis key in database 2"
        assert 0 < two.ttl(stored[0]) <= 60
        assert list(zero.scan_iter(match=f"*{key}")) == [], "nothing in database 0"
    finally:
        zero.close()
        two.close()


def test_the_cache_api(cache):
    key = f"api-{uuid.uuid4().hex}"
    assert cache.get(key) is None
    assert cache.get(key, "fallback") == "fallback"
    assert cache.add(key, 1) is True
    assert cache.add(key, 2) is False
    assert cache.get(key) == 1
    assert cache.incr(key, 10) == 11
    assert cache.has_key(key) is True
    assert cache.touch(key, 30) is True
    cache.set_many({f"{key}-a": "a", f"{key}-b": b"\x00\xffb"})
    assert cache.get_many([f"{key}-a", f"{key}-b", f"{key}-none"]) == {f"{key}-a": "a", f"{key}-b": b"\x00\xffb"}
    assert cache.delete(key) is True
    assert cache.delete(key) is False
    assert cache.get(key) is None


def test_clear_empties_database_2_only(cache):
    zero = client(0)
    marker = f"survives-{uuid.uuid4().hex}"
    try:
        zero.set(marker, "db0")
        cache.set(f"doomed-{uuid.uuid4().hex}", "x")
        cache.clear()
        two = client(DB)
        try:
            assert two.dbsize() == 0
        finally:
            two.close()
        assert zero.get(marker) == b"db0"
    finally:
        zero.delete(marker)
        zero.close()
