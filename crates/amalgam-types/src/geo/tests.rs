//! Unit tests of the geometry: golden values read from redis-server
//! 7.0.15 (GEOADD then ZSCORE, GEOHASH, GEOPOS, GEODIST; the bulk of them
//! is `tests/geo_golden.rs`), the bit tricks, neighbours across the
//! edges, the step estimate, the reply texts, and the search against a
//! brute-force filter.

use super::*;
use crate::zset::ZSet;
use crate::Thresholds;

fn coord(v: f64) -> String {
    let mut out = Vec::new();
    format_coord(v, &mut out);
    String::from_utf8(out).unwrap()
}

fn dist(v: f64) -> String {
    let mut out = Vec::new();
    format_distance(v, &mut out);
    String::from_utf8(out).unwrap()
}

/// (lon, lat, ZSCORE, GEOHASH, GEOPOS) from redis-server 7.0.15.
const GOLDEN: &[(f64, f64, f64, &str, &str, &str)] = &[
    (13.361389, 38.115556, 3479099956230698.0, "sqc8b49rny0", "13.36138933897018433", "38.11555639549629859"),
    (15.087269, 37.502669, 3479447370796909.0, "sqdtr74hyu0", "15.08726745843887329", "37.50266842333162032"),
    // The upper limits keep their 2^26 slice: bits 52 and 53.
    (180.0, 85.05112878, 13510798882111488.0, "bp05b5048p0", "180", "85.0511287799999991"),
    (-180.0, -85.05112878, 0.0, "00bh0hbj200", "-179.99999731779098511", "-85.05112751263942528"),
    (180.0, -85.05112878, 9007199254740992.0, "00bh0hbj200", "180", "-85.05112751263942528"),
    (180.0, 0.0, 10133099161583616.0, "80000000000", "180", "0.00000126736058093"),
];

#[test]
fn golden_points() {
    for &(lon, lat, score, hash, x, y) in GOLDEN {
        assert_eq!(encode_score(lon, lat), Some(score), "{lon},{lat}");
        assert_eq!(std::str::from_utf8(&geohash_text(score)).unwrap(), hash);
        let (dx, dy) = decode_score(score);
        assert_eq!((coord(dx), coord(dy)), (x.to_string(), y.to_string()));
    }
    // GEODIST Palermo Catania (m, km, mi, ft).
    let (a, b) = (decode_score(GOLDEN[0].2), decode_score(GOLDEN[1].2));
    let d = distance_m(a.0, a.1, b.0, b.1);
    assert_eq!(dist(d), "166274.1516");
    assert_eq!(dist(d / unit_meters(b"KM").unwrap()), "166.2742");
    assert_eq!(dist(d / unit_meters(b"mi").unwrap()), "103.3182");
    assert_eq!(dist(d / unit_meters(b"Ft").unwrap()), "545518.8700");
    assert_eq!(unit_meters(b"kx"), None);
    assert_eq!(encode_score(180.000001, 0.0), None);
    assert_eq!(encode_score(0.0, 85.05112879), None);
    assert!(valid_point(-180.0, -85.05112878) && !valid_point(f64::INFINITY, 0.0));
}

#[test]
fn strange_scores_decode_as_on_x86_64() {
    // GEOPOS of ZADD's -5, 1e300, -inf, 1.5 (redis-server 7.0.15).
    assert_eq!(score_bits(-5.0), (-5i64) as u64);
    assert_eq!(score_bits(1e300), 0);
    assert_eq!(score_bits(f64::INFINITY), 0);
    assert_eq!(score_bits(f64::NEG_INFINITY), 1 << 63);
    assert_eq!(score_bits(f64::NAN), 1 << 63);
    assert_eq!(score_bits(9.3e18), (9.3e18 - 9_223_372_036_854_775_808.0) as u64 ^ (1 << 63));
    let (x, y) = decode_score(-5.0);
    assert_eq!((coord(x), coord(y)), ("180".to_string(), "85.0511287799999991".to_string()));
    let (x, y) = decode_score(f64::NEG_INFINITY);
    assert_eq!((coord(x), coord(y)), ("180".to_string(), "-85.05112751263942528".to_string()));
    let (x, y) = decode_score(1.5);
    assert_eq!((coord(x), coord(y)), ("-179.99999731779098511".to_string(), "-85.05112497791824921".to_string()));
    assert_eq!((score_integer(1.5), score_integer(-2.5), score_integer(f64::NAN)), (1, -2, i64::MIN));
}

#[test]
fn interleave_round_trips_and_places_latitude_even() {
    for v in [0u32, 1, 2, 0x3ff_ffff, 0x400_0000, 0xdead_beef, u32::MAX] {
        assert_eq!(gather(spread(v)), v);
        assert_eq!(spread(v) & ODD_BITS, 0);
    }
    assert_eq!(interleave(1, 0), 1);
    assert_eq!(interleave(0, 1), 2);
    assert_eq!(interleave(1 << 26, 1 << 26), 3 << 52);
}

#[test]
fn neighbours_move_one_cell_and_wrap() {
    let c = encode(0.0, 0.0, 4, LON_SPAN, LAT_SPAN).unwrap();
    let area = decode(c, LON_SPAN, LAT_SPAN).unwrap();
    let [n, s, e, w, ne, nw, se, sw] = neighbours(c).map(|x| decode(x, LON_SPAN, LAT_SPAN).unwrap());
    assert_eq!((n.lat.min, n.lon), (area.lat.max, area.lon));
    assert_eq!((s.lat.max, s.lon), (area.lat.min, area.lon));
    assert_eq!((e.lon.min, e.lat), (area.lon.max, area.lat));
    assert_eq!((w.lon.max, w.lat), (area.lon.min, area.lat));
    assert_eq!((ne.lon, ne.lat), (e.lon, n.lat));
    assert_eq!((nw.lon, nw.lat), (w.lon, n.lat));
    assert_eq!((se.lon, se.lat), (e.lon, s.lat));
    assert_eq!((sw.lon, sw.lat), (w.lon, s.lat));
    // East of the last column is the first (the antimeridian); north of
    // the top row wraps to the bottom row.
    let corner = encode(179.9, 85.0, 5, LON_SPAN, LAT_SPAN).unwrap();
    let [n, _, e, ..] = neighbours(corner).map(|x| decode(x, LON_SPAN, LAT_SPAN).unwrap());
    assert_eq!(e.lon.min, LON_MIN);
    assert_eq!(n.lat.min, LAT_MIN);
    // A move and its opposite cancel, at every step.
    for step in 1..=STEP_MAX {
        let c = encode(-73.98, 40.75, step, LON_SPAN, LAT_SPAN).unwrap();
        assert_eq!(move_lon(move_lon(c, true), false), c);
        assert_eq!(move_lat(move_lat(c, false), true), c);
    }
}

#[test]
fn cells_are_score_ranges() {
    let c = encode(13.361389, 38.115556, 10, LON_SPAN, LAT_SPAN).unwrap();
    let (min, max) = c.score_range();
    assert_eq!(max - min, (1u64 << 32) as f64);
    let s = encode_score(13.361389, 38.115556).unwrap();
    assert!(min <= s && s < max);
    assert!(Cell::NONE.is_none() && !Cell { bits: 0, step: 1 }.is_none());
}

#[test]
fn step_estimates() {
    assert_eq!(estimate_step(0.0, 0.0), STEP_MAX);
    // 1 m doubles 25 times past 20037726.37 m: 26, less two.
    assert_eq!(estimate_step(1.0, 0.0), 24);
    assert_eq!(estimate_step(1000.0, 0.0), 14);
    assert_eq!(estimate_step(1000.0, 70.0), 13);
    assert_eq!(estimate_step(1000.0, -81.0), 12);
    assert_eq!(estimate_step(5e6, 0.0), 2);
    assert_eq!(estimate_step(1e7, 0.0), 1);
    assert_eq!(estimate_step(f64::INFINITY, 0.0), 1);
    assert_eq!(estimate_step(f64::MIN_POSITIVE / 1e10, 0.0), STEP_MAX);
}

#[test]
fn reply_texts_round_as_glibc() {
    assert_eq!(coord(-0.0), "0");
    assert_eq!(coord(12.5), "12.5");
    assert_eq!(coord(180.0), "180");
    // Ties at the 17th decimal go to even, as glibc's printf rounds.
    assert_eq!(coord(2f64.powi(-18)), "0.00000381469726562");
    assert_eq!(dist(0.03125), "0.0312");
    assert_eq!(dist(0.09375), "0.0938");
    assert_eq!(dist(0.0), "0.0000");
    assert_eq!(dist(f64::INFINITY), "inf");
    assert_eq!(dist(-f64::NAN), "-nan");
}

/// xorshift64: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in [lo, hi].
    fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (self.next() >> 11) as f64 / (1u64 << 53) as f64 * (hi - lo)
    }
}

/// Members of `z` inside `shape`, by brute force: every member tested.
fn brute_force(z: &ZSet, shape: &Shape) -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = z.iter().filter(|(_, s)| shape.contains(*s).is_some()).map(|(m, _)| m.to_vec()).collect();
    v.sort();
    v
}

/// A latitude just inside the upper limit: a point on the limit itself
/// (like one on longitude 180) has a score past every cell and is never
/// found, a centre there misses the far side
/// ([`upper_limits_fall_outside_the_cells`]).
const LAT_INSIDE_MAX: f64 = LAT_MAX - 1e-7;

/// A longitude wrapped into [-180, 180).
fn wrap(x: f64) -> f64 {
    if x >= LON_MAX {
        x - 360.0
    } else if x < LON_MIN {
        x + 360.0
    } else {
        x
    }
}

/// A set of `n` random points around (`lon`, `lat`), `spread` degrees
/// wide, wrapped across the antimeridian and clamped to the poles' limits.
fn cluster(rng: &mut Rng, n: usize, lon: f64, lat: f64, spread: f64) -> ZSet {
    let t = Thresholds::default();
    let mut z = ZSet::new(&t);
    for i in 0..n {
        let x = wrap(lon + rng.range(-spread, spread));
        let y = (lat + rng.range(-spread, spread) / 2.0).clamp(LAT_MIN, LAT_INSIDE_MAX);
        z.add(format!("p{i}").as_bytes(), encode_score(x, y).unwrap(), Default::default()).unwrap();
    }
    z
}

/// A point or a centre exactly on longitude 180 or latitude
/// 85.05112878 has the slice one past the last (module notes): a point's
/// score is past 2^52, outside every cell, so no search finds it; a
/// centre's cells lie past the far side, so from 180 Redis 7.0.15 finds
/// only the east side (GEOSEARCH … FROMLONLAT ±180 12 BYRADIUS 150 km
/// and the rest, read from it).
#[test]
fn upper_limits_fall_outside_the_cells() {
    let t = Thresholds::default();
    let pts = [("west", -179.9), ("east", 179.9), ("east2", 179.99), ("west2", -179.99)];
    let z = ZSet::from_pairs(pts.iter().map(|&(m, x)| (m.as_bytes(), encode_score(x, 12.0).unwrap())), &t);
    let found = |lon: f64| {
        let shape = Shape { lon, lat: 12.0, extent: Extent::Radius(150.0), unit_m: 1000.0 };
        let hits = search(&z.view(), &shape, 0);
        hits.iter()
            .map(|h| format!("{}:{}", std::str::from_utf8(h.member).unwrap(), dist(h.dist_m / 1000.0)))
            .collect::<Vec<_>>()
    };
    assert_eq!(found(180.0), ["east:10.8797", "east2:1.0882"]);
    assert_eq!(found(-180.0), ["west2:1.0882", "west:10.8797", "east:10.8797", "east2:1.0882"]);
    assert_eq!(found(179.999), ["east:10.7709", "east2:0.9794", "west2:1.1970", "west:10.9885"]);
    assert_eq!(found(-179.999), ["west2:0.9794", "west:10.7709", "east:10.9885", "east2:1.1970"]);
    let pts = [("top", 34.43, LAT_MAX), ("below", 34.43, 85.0511), ("east180", 180.0, 0.0)];
    let z = ZSet::from_pairs(pts.iter().map(|&(m, x, y)| (m.as_bytes(), encode_score(x, y).unwrap())), &t);
    let found = |lon: f64, lat: f64, km: f64| {
        let shape = Shape { lon, lat, extent: Extent::Radius(km), unit_m: 1000.0 };
        let hits = search(&z.view(), &shape, 0);
        hits.iter()
            .map(|h| format!("{}:{}", std::str::from_utf8(h.member).unwrap(), dist(h.dist_m / 1000.0)))
            .collect::<Vec<_>>()
    };
    assert_eq!(found(34.425998620081586, 85.05112868, 1.4), ["below:0.0385"]);
    assert_eq!(found(34.43, 85.0511, 100.0), ["below:0.0000"]);
    assert!(found(179.99, 0.0, 100.0).is_empty());
    assert_eq!(found(0.0, 0.0, 50000.0), ["below:9556.5287"]);
}

/// The search finds exactly what testing every member finds, for radii
/// and boxes from 1 m to 16,000 km, centred anywhere, near the poles'
/// limits and across the antimeridian, as long as the search's bounding
/// box does not reach past a pole; when it does, the search finds a
/// subset (Redis's nine cells can miss members there: module notes,
/// "Limitations"). Points and centres are kept off the spans' upper
/// limits ([`upper_limits_fall_outside_the_cells`]).
#[test]
fn search_equals_brute_force() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let places =
        [(0.0, 0.0), (179.9, 10.0), (-179.95, -30.0), (30.0, 84.9), (-120.0, -84.9), (2.35, 48.85), (179.99, 85.0)];
    let (mut equal, mut past_pole, mut found) = (0, 0, 0);
    for &(lon, lat) in &places {
        for spread in [0.001, 0.1, 5.0, 40.0] {
            let z = cluster(&mut rng, 300, lon, lat, spread);
            for _ in 0..40 {
                let cx = wrap(lon + rng.range(-spread, spread));
                let cy = (lat + rng.range(-spread, spread) / 2.0).clamp(LAT_MIN, LAT_INSIDE_MAX);
                let size_m = 10f64.powf(rng.range(0.0, 7.2));
                let extent = if rng.next() % 2 == 0 {
                    Extent::Radius(size_m)
                } else {
                    Extent::Box { width: size_m * rng.range(0.1, 2.0), height: size_m * rng.range(0.1, 2.0) }
                };
                let shape = Shape { lon: cx, lat: cy, extent, unit_m: 1.0 };
                let mut got: Vec<Vec<u8>> = search(&z.view(), &shape, 0).iter().map(|h| h.member.to_vec()).collect();
                got.sort();
                let every = brute_force(&z, &shape);
                let b = bounding_box(&shape);
                if b.lat.min >= -90.0 && b.lat.max <= 90.0 {
                    assert_eq!(got, every, "{shape:?}");
                    equal += 1;
                } else {
                    assert!(got.iter().all(|m| every.binary_search(m).is_ok()), "{shape:?}");
                    past_pole += 1;
                }
                found += got.len();
            }
        }
    }
    assert_eq!(equal + past_pole, places.len() * 4 * 40);
    assert!(equal > 900 && past_pole > 20, "{equal} {past_pole}");
    assert!(found > 10_000, "the searches find members: {found}");
}
