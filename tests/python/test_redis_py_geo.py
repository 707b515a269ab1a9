"""redis-py's geo helpers against a running RESP server: geoadd (nx, xx,
ch), geodist in units, geohash, geopos, geosearch (member or point, radius
or box, sort, count, any, withcoord/withdist/withhash), geosearchstore
(storedist), georadius and georadiusbymember (store, store_dist), and
their errors as redis-py raises them.

Read as test_redis_py.py is: the server is AMALGAM_TEST_RESP_ADDR=host:port
(scripts/test.sh runs this against amalgam and against Debian's
redis-server 7.0.15, proving the expectations are Redis's own); each test
runs with RESP2 and RESP3. Skipped when the variable is unset. Keys have
unique names and are deleted.
"""

import pytest
import redis

# The server's address, the RESP2/RESP3 client fixture and unique key
# names, as test_redis_py.py defines them (pytest puts this folder on
# sys.path).
from test_redis_py import _addr, k, r  # noqa: F401

SICILY = (
    13.361389, 38.115556, "Palermo",
    15.087269, 37.502669, "Catania",
    13.583333, 37.316667, "Agrigento",
    15.556, 38.193, "Messina",
    15.2866, 37.0755, "Siracusa",
    12.5139, 38.0176, "Trapani",
)


@pytest.fixture
def sicily(r):
    key = k("sicily")
    assert r.geoadd(key, SICILY) == 6
    yield key
    r.delete(key)


def test_geoadd_flags_and_scores(r):
    key = k("geo")
    assert r.geoadd(key, (13.361389, 38.115556, "Palermo")) == 1
    assert r.zscore(key, "Palermo") == 3479099956230698.0
    assert r.geoadd(key, (1, 1, "Palermo", 2, 2, "new"), nx=True) == 1
    assert r.zscore(key, "Palermo") == 3479099956230698.0
    assert r.geoadd(key, (1, 1, "Palermo", 3, 3, "other"), xx=True, ch=True) == 1
    assert r.zscore(key, "other") is None
    assert r.type(key) == "zset"
    with pytest.raises(redis.ResponseError, match="invalid longitude,latitude pair 200.000000,100.000000"):
        r.geoadd(key, (200, 100, "x"))
    with pytest.raises(redis.DataError):
        r.geoadd(key, (1, 1, "x"), nx=True, xx=True)
    r.delete(key)


def test_geodist_geohash_geopos(r, sicily):
    assert r.geodist(sicily, "Palermo", "Catania") == 166274.1516
    assert r.geodist(sicily, "Palermo", "Catania", "km") == 166.2742
    assert r.geodist(sicily, "Palermo", "Catania", "mi") == 103.3182
    assert r.geodist(sicily, "Palermo", "nope") is None
    assert r.geohash(sicily, "Palermo", "Catania", "nope") == ["sqc8b49rny0", "sqdtr74hyu0", None]
    # RESP2 gives tuples, RESP3 lists.
    pos = [tuple(p) if p else None for p in r.geopos(sicily, "Palermo", "nope")]
    assert pos == [(13.361389338970184, 38.1155563954963), None]
    with pytest.raises(redis.ResponseError, match="unsupported unit provided"):
        r.execute_command("GEODIST", sicily, "Palermo", "Catania", "yd")


def test_geosearch(r, sicily):
    assert r.geosearch(sicily, longitude=14, latitude=37.6, radius=150, unit="km") == [
        "Trapani", "Agrigento", "Palermo", "Catania", "Siracusa"]
    assert r.geosearch(sicily, member="Palermo", radius=200, unit="km", sort="ASC", count=3, withdist=True) == [
        ["Palermo", 0.0], ["Trapani", 75.0079], ["Agrigento", 90.9778]]
    assert r.geosearch(sicily, member="Palermo", width=300, height=100, unit="km", sort="ASC") == [
        "Palermo", "Trapani"]
    assert r.geosearch(sicily, longitude=15, latitude=37, radius=200, unit="km", count=2, any=True) == [
        "Siracusa", "Agrigento"]
    got = r.geosearch(sicily, longitude=15, latitude=37, radius=30, unit="km", withcoord=True, withdist=True,
                      withhash=True)
    assert got == [["Siracusa", 26.7955, 3476514830710512, (15.28659850358963, 37.07549947051171)]]
    with pytest.raises(redis.ResponseError, match="could not decode requested zset member"):
        r.geosearch(sicily, member="nope", radius=1, unit="km")
    with pytest.raises(redis.ResponseError, match="radius cannot be negative"):
        r.geosearch(sicily, member="Palermo", radius=-1, unit="km")
    assert r.geosearch(k("none"), longitude=1, latitude=1, radius=1, unit="km") == []


def test_geosearchstore(r, sicily):
    dst = k("dst")
    assert r.geosearchstore(dst, sicily, longitude=15, latitude=37, radius=60, unit="km") == 2
    assert r.zrange(dst, 0, -1) == ["Siracusa", "Catania"]
    assert r.geosearchstore(dst, sicily, longitude=15, latitude=37, radius=60, unit="km", storedist=True) == 2
    scored = [tuple(p) for p in r.zrange(dst, 0, -1, withscores=True)]
    assert scored == [("Siracusa", 26.795539305873376), ("Catania", 56.441257870158204)]
    assert r.geosearchstore(dst, k("none"), longitude=15, latitude=37, radius=60, unit="km") == 0
    assert r.exists(dst) == 0


def test_georadius_and_by_member(r, sicily):
    assert r.georadius(sicily, 15, 37, 200, unit="km", sort="DESC", count=2) == ["Palermo", "Messina"]
    assert r.georadius(sicily, 15, 37, 100, unit="mi", withdist=True, sort="ASC") == [
        ["Siracusa", 16.65], ["Catania", 35.0711], ["Agrigento", 81.0416], ["Messina", 87.8931]]
    assert r.georadiusbymember(sicily, "Catania", 100, unit="km", sort="ASC") == ["Catania", "Siracusa", "Messina"]
    dst = k("dst")
    assert r.georadius(sicily, 15, 37, 200, unit="km", store=dst) == 5
    assert r.zscore(dst, "Palermo") == 3479099956230698.0
    assert r.georadiusbymember(sicily, "Palermo", 100, unit="km", store_dist=dst) == 3
    assert r.zscore(dst, "Palermo") == 0.0
    with pytest.raises(redis.ResponseError, match="COUNT must be > 0"):
        r.execute_command("GEORADIUS", sicily, 15, 37, 200, "km", "COUNT", 0)
    r.delete(dst)
