#!/usr/bin/env python3
"""Writes the geo golden files of crates/amalgam-types/tests/ from a running
redis-server 7.0 (Debian's 7.0.15 made the committed ones), so the
geometry of amalgam-types `geo.rs` is checked against Redis's own answers:

  geo_points_redis_7_0_15.txt   "P lon lat score geohash poslon poslat" (GEOADD,
                                ZSCORE, GEOHASH, GEOPOS of points, edges too),
                                "S score poslon poslat geohash" (scores ZADD put
                                there: negative, fractional, huge, infinite),
                                "D score1 score2 unit reply" (GEODIST)
  geo_search_redis_7_0_15.txt   "Z name" then "M member score" lines (a set),
                                then "Q args... => member/dist/hash ..." (GEOSEARCH
                                without ASC/DESC: Redis's scan order)

Usage: scripts/geo-golden.py PORT   (deterministic: a fixed seed)

Needs redis-py (pip install redis). Uses keys under "geogold:" and deletes them.
"""
import math
import os
import random
import sys

import redis

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OUT = os.path.join(ROOT, "crates/amalgam-types/tests")
LAT = 85.05112878


def s(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def coord_texts(rng, n):
    """(lon, lat) texts: the spans' edges and corners, then random points,
    some near the poles' limits and the antimeridian."""
    edges = ["180", "-180", "0", "-0", "179.99999999", "-179.99999999", "0.000001", "1e-300"]
    lats = ["85.05112878", "-85.05112878", "0", "85.0511287", "-85.0511287", "45", "-45.5", "1e-300"]
    out = [(a, b) for a in edges for b in lats]
    for _ in range(n):
        kind = rng.random()
        if kind < 0.2:
            lon = rng.choice([-1, 1]) * (180 - rng.random() * 0.5)
            lat = rng.uniform(-LAT, LAT)
        elif kind < 0.4:
            lon = rng.uniform(-180, 180)
            lat = rng.choice([-1, 1]) * (LAT - rng.random() * 5)
        else:
            lon = rng.uniform(-180, 180)
            lat = rng.uniform(-LAT, LAT)
        digits = rng.choice([2, 6, 9, 15])
        out.append(("%.*f" % (digits, lon), "%.*f" % (digits, lat)))
    return out


def points(r, rng, f):
    key = "geogold:p"
    r.delete(key)
    scores = []
    for i, (lon, lat) in enumerate(coord_texts(rng, 400)):
        m = "m%d" % i
        assert r.execute_command("GEOADD", key, lon, lat, m) == 1
        score = s(r.execute_command("ZSCORE", key, m))
        gh = s(r.execute_command("GEOHASH", key, m)[0])
        pos = r.execute_command("GEOPOS", key, m)[0]
        f.write("P %s %s %s %s %s %s\n" % (lon, lat, score, gh, s(pos[0]), s(pos[1])))
        scores.append((m, score))
    odd = ["-5", "-1", "-0.5", "0.5", "1.5", "1e300", "-1e300", "inf", "-inf", "4503599627370496",
           "4503599627370495", "9007199254740992", "13510798882111488", "18014398509481984",
           "9223372036854775807", "9.3e18", "-1e19", "1e19", "18446744073709551615", "123456789.75"]
    for i, sc in enumerate(odd):
        m = "odd%d" % i
        r.execute_command("ZADD", key, sc, m)
        pos = r.execute_command("GEOPOS", key, m)[0]
        gh = s(r.execute_command("GEOHASH", key, m)[0])
        f.write("S %s %s %s %s\n" % (sc, s(pos[0]), s(pos[1]), gh))
    for i in range(len(scores)):
        a = scores[i]
        b = scores[rng.randrange(len(scores))] if i % 3 else scores[(i + 1) % len(scores)]
        unit = ["m", "km", "ft", "mi"][i % 4]
        d = s(r.execute_command("GEODIST", key, a[0], b[0], unit))
        f.write("D %s %s %s %s\n" % (a[1], b[1], unit, d))
    r.delete(key)


def cluster(rng, n, lon0, lat0, spread):
    pts = []
    for _ in range(n):
        lon = lon0 + rng.uniform(-spread, spread)
        if lon > 180:
            lon -= 360
        if lon < -180:
            lon += 360
        lat = max(-LAT, min(LAT, lat0 + rng.uniform(-spread, spread) / 2))
        pts.append((lon, lat))
    return pts


def searches(r, rng, f):
    sets = {
        "world": [(rng.uniform(-180, 180), rng.uniform(-LAT, LAT)) for _ in range(200)],
        "antimeridian": cluster(rng, 150, 180, 10, 8),
        "north": cluster(rng, 150, 30, 84, 6),
        "south": cluster(rng, 150, -120, -83, 6),
        "city": cluster(rng, 150, 2.35, 48.85, 0.05),
    }
    for name, pts in sets.items():
        key = "geogold:" + name
        r.delete(key)
        for i, (lon, lat) in enumerate(pts):
            r.execute_command("GEOADD", key, "%.9f" % lon, "%.9f" % lat, "%s%d" % (name[0], i))
        f.write("Z %s\n" % name)
        flat = r.execute_command("ZRANGE", key, 0, -1, "WITHSCORES")
        for i in range(0, len(flat), 2):
            f.write("M %s %s\n" % (s(flat[i]), s(flat[i + 1])))
        lon0, lat0 = pts[0]
        for q in range(60):
            if q % 4 == 0:
                lon, lat = pts[rng.randrange(len(pts))]
            else:
                lon = max(-180, min(180, lon0 + rng.uniform(-20, 20)))
                lat = max(-LAT, min(LAT, lat0 + rng.uniform(-10, 10)))
                if name == "world":
                    lon, lat = rng.uniform(-180, 180), rng.uniform(-LAT, LAT)
            unit = rng.choice(["m", "km", "ft", "mi"])
            per = {"m": 1, "km": 1000, "ft": 0.3048, "mi": 1609.34}[unit]
            size_m = 10 ** rng.uniform(1, 7) if name != "city" else 10 ** rng.uniform(0, 4)
            size = "%.3f" % (size_m / per)
            # Six decimals never round past the span.
            lat = max(-85.051128, min(85.051128, lat))
            args = ["FROMLONLAT", "%.6f" % lon, "%.6f" % lat]
            if q % 2:
                args += ["BYRADIUS", size, unit]
            else:
                args += ["BYBOX", size, "%.3f" % (float(size) * rng.uniform(0.2, 3)), unit]
            if q % 7 == 3:
                args += ["COUNT", str(1 + rng.randrange(5)), "ANY"]
            query(r, f, key, args)
        # Centres on the spans' limits, areas past a pole: where Redis's
        # nine cells miss members (amalgam-types geo.rs, "Limitations").
        for lon, lat in [(lon0, LAT), (lon0, -LAT), (180, lat0), (-180, lat0), (lon0, lat0)]:
            for km in ["50", "300", "611.1087", "1500", "4000"]:
                query(r, f, key, ["FROMLONLAT", str(lon), str(lat), "BYRADIUS", km, "km"])
                query(r, f, key, ["FROMLONLAT", str(lon), str(lat), "BYBOX", km, km, "km"])
        r.delete(key)


def query(r, f, key, args):
    reply = r.execute_command("GEOSEARCH", key, *args, "WITHDIST", "WITHHASH")
    hits = " ".join("%s/%s/%s" % (s(h[0]), s(h[1]), s(h[2])) for h in reply)
    f.write("Q %s => %s\n" % (" ".join(args), hits))


def main():
    port = int(sys.argv[1])
    conn = redis.Connection(port=port, protocol=2)

    class Raw:
        """The connection, not the client: no response callbacks reshape
        replies (ZSCORE, GEOPOS stay the server's text)."""

        def execute_command(self, *args):
            conn.send_command(*args)
            return conn.read_response()

        def delete(self, key):
            return self.execute_command("DEL", key)

    r = Raw()
    rng = random.Random(20261207)
    with open(os.path.join(OUT, "geo_points_redis_7_0_15.txt"), "w") as f:
        points(r, rng, f)
    with open(os.path.join(OUT, "geo_search_redis_7_0_15.txt"), "w") as f:
        searches(r, rng, f)


if __name__ == "__main__":
    main()
