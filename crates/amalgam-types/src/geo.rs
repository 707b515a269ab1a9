//! Geospatial indexing as Redis 7.0 does it (GEOADD … GEOSEARCH): a
//! point is a sorted-set member whose score is a 52-bit geohash, so the
//! geo commands are sorted-set reads and writes (amalgam-commands
//! `geo.rs`) and this module is the pure geometry beneath them: hash
//! encode and decode, neighbour cells, the search area, distances, the
//! box test and the reply texts. `geo/search.rs` scans a [`ZView`] with it.
//! No I/O, no protocol, no engine.
//!
//! Every number here is computed as Redis 7.0.15 computes it (Redis
//! `src/geohash.c`, `src/geohash_helper.c`, `src/geo.c`), operation for
//! operation in the same order, with the same libm (`sin`, `cos`, `asin`,
//! `sqrt` are glibc's for both), so scores, coordinates, distances and
//! the members a search finds are bit-for-bit Redis's. The golden tests
//! (`geo/tests.rs`) were read from redis-server 7.0.15.
//!
//! ## The 52-bit hash (Redis `geohash.c`)
//! Longitude spans [-180, 180] and latitude [-85.05112878, 85.05112878]
//! (Web Mercator's limits: no pole). At `step` bits per axis, each axis
//! is cut into 2^step equal slices; a point's slice numbers (the offset
//! into the span times 2^step, truncated) are interleaved bit by bit,
//! latitude in the even bit positions and longitude in the odd ones, so
//! that a prefix of the hash is a coarser cell that contains the finer
//! ones. GEOADD stores the 26-step hash (52 bits, exact in a double) as
//! the score. A hash decodes to its cell, and a score to the cell's
//! centre, clamped to the spans; so GEOPOS answers the centre of a cell
//! about 0.6 m wide at the equator, not the coordinates given.
//!
//! A point on a span's upper limit (longitude 180, latitude
//! 85.05112878) has the slice number 2^26, one past the last: Redis's
//! interleave keeps that bit (bit 52 for latitude, 53 for longitude), so
//! such a score is 2^52 or more and decodes, clamped, to the limit
//! itself. Kept: the scores must be Redis's.
//!
//! ## Where the bits of a strange score go
//! A sorted set filled by ZADD may hold any score. Redis casts it to a
//! 64-bit unsigned integer as x86-64 code does ([`score_bits`]: negative
//! scores wrap, NaN and out-of-range values become 2^63 or 0), decodes
//! all 64 bits (slice numbers up to 2^32, past the span) and clamps the
//! centre; Amalgam does the same, so GEOPOS of a non-geo score answers
//! what Redis answers.
//!
//! ## Searching (Redis `geohash_helper.c`, `geohashCalculateAreasByShapeWGS84`)
//! A search is a centre and a radius or a box ([`Shape`]). The hash's
//! prefix order makes a cell one contiguous range of scores, so the
//! search reads at most nine score ranges of the sorted set: the cell
//! holding the centre, at a step chosen so that the cell is about as
//! large as the search ([`estimate_step`]: halve the Mercator half-width
//! until it is under the radius, then two steps coarser, and one or two
//! more past latitude 66 and 80 where meridians converge), and its eight
//! neighbours ([`neighbours`]; at the longitude edge they wrap around
//! the antimeridian, at the latitude edge they wrap too and are useless).
//! Then:
//! * the *decrease step* check: if the search's bounding box
//!   ([`bounding_box`]) reaches past the far side of a north, south,
//!   east or west neighbour, the nine cells would not cover it; one step
//!   coarser (cells twice as large) is taken;
//! * the *exclusion*: a row or column of neighbours whose side the
//!   bounding box does not reach past the centre cell is dropped.
//!
//! Each remaining cell is scanned in Redis's order (centre, N, S, E, W,
//! NE, NW, SE, SW), skipping a cell equal to the one scanned just before
//! it (with huge radii neighbours coincide), and every member found is
//! kept only if the exact test passes ([`Shape::contains`]): the
//! haversine distance for a radius, or the east-west and north-south
//! distances for a box.
//!
//! ### Limitations (Redis's own, kept)
//! The nine cells are a heuristic, and Redis 7.0.15 misses members a
//! brute-force filter would find in three cases, which Amalgam
//! reproduces (`tests/geo_golden.rs` holds Redis's replies for them;
//! `geo/tests.rs` checks that the search equals the brute-force filter
//! everywhere else, from 1 m to 16,000 km):
//! * a point on longitude 180 or latitude 85.05112878 has a score past
//!   every cell (module notes, "The 52-bit hash"): no search finds it;
//! * a centre there takes cells one slice past the far side: from
//!   longitude 180 the west of the antimeridian is not searched;
//! * an area whose bounding box reaches past a pole: the box's width is
//!   computed on the far side of the pole, and the columns dropped or the
//!   step kept can leave members out.
//!
//! ## Distances (Redis 7.0's `geohashGetDistance`)
//! Haversine on a sphere of radius [`EARTH_RADIUS_M`] (6372797.560856 m,
//! Redis's). Redis 7.2 later special-cased equal longitudes; 7.0 does
//! not, and neither does this (the two differ in the last bits).

mod search;
#[cfg(test)]
mod tests;

pub use search::{search, sort_by_distance, Hit, Order};

/// The smallest longitude a point may have (Redis's `GEO_LONG_MIN`).
pub const LON_MIN: f64 = -180.0;
/// The largest longitude (`GEO_LONG_MAX`).
pub const LON_MAX: f64 = 180.0;
/// The smallest latitude (`GEO_LAT_MIN`: Web Mercator's limit).
pub const LAT_MIN: f64 = -85.05112878;
/// The largest latitude (`GEO_LAT_MAX`).
pub const LAT_MAX: f64 = 85.05112878;
/// Bits per axis of a stored hash (`GEO_STEP_MAX`): 52 bits in all.
pub const STEP_MAX: u8 = 26;
/// The most bits per axis a [`Cell`] can hold (two axes in a u64).
const STEP_LIMIT: u8 = 32;
/// Bits of a stored hash: a score below 2^52 (2^52 and 2^53 mark the
/// span's upper limits, module notes).
pub const HASH_BITS: u32 = 2 * STEP_MAX as u32;
/// Redis's earth radius, in meters (`EARTH_RADIUS_IN_METERS`).
pub const EARTH_RADIUS_M: f64 = 6372797.560856;
/// Half the equator in Web Mercator meters (`MERCATOR_MAX`): where
/// [`estimate_step`] starts halving.
const MERCATOR_MAX_M: f64 = 20037726.37;
/// Redis's `D_R` (`M_PI / 180.0`): degrees to radians.
const DEG_TO_RAD: f64 = std::f64::consts::PI / 180.0;
/// Doublings [`estimate_step`] may make: from the smallest positive
/// double (2^-1074) to past [`MERCATOR_MAX_M`] (< 2^25) takes 1,100.
const ESTIMATE_DOUBLINGS_MAX: u32 = 1200;
/// Latitudes past which [`estimate_step`] takes one, then two, coarser steps.
const POLAR_LAT_1: f64 = 66.0;
const POLAR_LAT_2: f64 = 80.0;
/// Characters of GEOHASH's reply (the 11th is always '0').
pub const GEOHASH_TEXT_BYTES: usize = 11;
/// The standard geohash alphabet (base 32 without a, i, l, o).
const GEOHASH_ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
/// Bits per GEOHASH character.
const GEOHASH_CHAR_BITS: u32 = 5;

/// The even bit positions of a u64 (latitude's) and the odd ones (longitude's).
const EVEN_BITS: u64 = 0x5555_5555_5555_5555;
const ODD_BITS: u64 = 0xaaaa_aaaa_aaaa_aaaa;

/// A coordinate interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Span {
    pub min: f64,
    pub max: f64,
}

/// Longitude's span.
pub const LON_SPAN: Span = Span { min: LON_MIN, max: LON_MAX };
/// Latitude's span as Redis stores points.
pub const LAT_SPAN: Span = Span { min: LAT_MIN, max: LAT_MAX };
/// Latitude's span in standard geohashes (GEOHASH's reply).
pub const STANDARD_LAT_SPAN: Span = Span { min: -90.0, max: 90.0 };

/// A geohash cell: `2 * step` interleaved bits (Redis's `GeoHashBits`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cell {
    pub bits: u64,
    pub step: u8,
}

impl Cell {
    /// A dropped neighbour (Redis's `GZERO`).
    pub const NONE: Cell = Cell { bits: 0, step: 0 };

    /// True for [`Cell::NONE`] (Redis's `HASHISZERO`).
    pub fn is_none(&self) -> bool {
        self.bits == 0 && self.step == 0
    }

    /// The cell's hash as a 52-bit score prefix (`geohashAlign52Bits`).
    fn aligned(bits: u64, step: u8) -> u64 {
        bits << (HASH_BITS - 2 * u32::from(step))
    }

    /// The scores `[min, max)` of the points inside the cell
    /// (`scoresOfGeoHashBox`): the hash, and the next hash, aligned.
    pub fn score_range(&self) -> (f64, f64) {
        let min = Self::aligned(self.bits, self.step);
        let max = Self::aligned(self.bits.wrapping_add(1), self.step);
        (min as f64, max as f64)
    }
}

/// A cell's extent (Redis's `GeoHashArea`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CellArea {
    pub lon: Span,
    pub lat: Span,
}

/// `v`'s bits spread to the even positions of a u64 (bit i → bit 2i).
fn spread(v: u32) -> u64 {
    let mut x = u64::from(v);
    x = (x | (x << 16)) & 0x0000_ffff_0000_ffff;
    x = (x | (x << 8)) & 0x00ff_00ff_00ff_00ff;
    x = (x | (x << 4)) & 0x0f0f_0f0f_0f0f_0f0f;
    x = (x | (x << 2)) & 0x3333_3333_3333_3333;
    (x | (x << 1)) & EVEN_BITS
}

/// The even bits of `v` gathered (bit 2i → bit i): [`spread`]'s inverse.
fn gather(v: u64) -> u32 {
    let mut x = v & EVEN_BITS;
    x = (x | (x >> 1)) & 0x3333_3333_3333_3333;
    x = (x | (x >> 2)) & 0x0f0f_0f0f_0f0f_0f0f;
    x = (x | (x >> 4)) & 0x00ff_00ff_00ff_00ff;
    x = (x | (x >> 8)) & 0x0000_ffff_0000_ffff;
    x = (x | (x >> 16)) & 0x0000_0000_ffff_ffff;
    x as u32
}

/// Interleaves slice numbers as Redis's `interleave64` does, from the
/// offsets it converts: latitude even, longitude odd. An offset of 2^26
/// (the span's upper limit at 26 steps) keeps its bit (module notes),
/// because the conversion is to 32 bits.
fn interleave(lat_slice: u32, lon_slice: u32) -> u64 {
    spread(lat_slice) | (spread(lon_slice) << 1)
}

/// The cell of (`lon`, `lat`) at `step` bits per axis over the spans
/// given (Redis's `geohashEncode`): None for a step outside 1..=32 or a
/// point outside the stored spans or `lon_span`/`lat_span`.
pub fn encode(lon: f64, lat: f64, step: u8, lon_span: Span, lat_span: Span) -> Option<Cell> {
    if step == 0 || step > STEP_LIMIT {
        return None;
    }
    if !valid_point(lon, lat) {
        return None;
    }
    if lat < lat_span.min || lat > lat_span.max || lon < lon_span.min || lon > lon_span.max {
        return None;
    }
    let slices = (1u64 << step) as f64;
    let lat_offset = (lat - lat_span.min) / (lat_span.max - lat_span.min) * slices;
    let lon_offset = (lon - lon_span.min) / (lon_span.max - lon_span.min) * slices;
    // C's double → uint32_t conversion: truncation (offsets are in
    // [0, 2^32); Rust's `as` agrees there).
    Some(Cell { bits: interleave(lat_offset as u32, lon_offset as u32), step })
}

/// The extent of `cell` over the spans given (Redis's `geohashDecode`):
/// None for [`Cell::NONE`]. All 64 bits are read, whatever the step
/// (module notes, "Where the bits of a strange score go").
pub fn decode(cell: Cell, lon_span: Span, lat_span: Span) -> Option<CellArea> {
    if cell.is_none() || cell.step > STEP_LIMIT {
        return None;
    }
    let lat_slice = gather(cell.bits);
    let lon_slice = gather(cell.bits >> 1);
    let slices = (1u64 << cell.step) as f64;
    let lat_scale = lat_span.max - lat_span.min;
    let lon_scale = lon_span.max - lon_span.min;
    // `(slice + 1)` is 32-bit arithmetic in Redis: it wraps at 2^32.
    let at = |slice: u32, span: Span, scale: f64| Span {
        min: span.min + (f64::from(slice) * 1.0 / slices) * scale,
        max: span.min + (f64::from(slice.wrapping_add(1)) * 1.0 / slices) * scale,
    };
    Some(CellArea { lon: at(lon_slice, lon_span, lon_scale), lat: at(lat_slice, lat_span, lat_scale) })
}

/// The centre of `area`, clamped to the stored spans
/// (`geohashDecodeAreaToLongLat`): (longitude, latitude).
pub fn centre(area: &CellArea) -> (f64, f64) {
    let clamp = |v: f64, lo: f64, hi: f64| {
        // Redis's two ifs (a NaN passes through both).
        let v = if v > hi { hi } else { v };
        if v < lo {
            lo
        } else {
            v
        }
    };
    let lon = clamp((area.lon.min + area.lon.max) / 2.0, LON_MIN, LON_MAX);
    let lat = clamp((area.lat.min + area.lat.max) / 2.0, LAT_MIN, LAT_MAX);
    (lon, lat)
}

/// A score's bits as Redis reads them, `(uint64_t)score` compiled for
/// x86-64: truncation below 2^63 through a signed conversion (so a
/// negative score wraps, and NaN or one below -2^63 is 2^63), and from
/// 2^63 on through the conversion of `score - 2^63` with bit 63 flipped
/// (so 2^64 and more, and +inf, are 0).
pub fn score_bits(score: f64) -> u64 {
    const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;
    /// `cvttsd2si`: truncation, or the "integer indefinite" 2^63.
    fn signed(x: f64) -> u64 {
        if x.is_nan() || !(-TWO_POW_63..TWO_POW_63).contains(&x) {
            1u64 << 63
        } else {
            (x as i64) as u64
        }
    }
    if score >= TWO_POW_63 {
        signed(score - TWO_POW_63) ^ (1u64 << 63)
    } else {
        signed(score)
    }
}

/// A score as WITHHASH replies it, `(long long)score` on x86-64.
pub fn score_integer(score: f64) -> i64 {
    const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;
    if score.is_nan() || !(-TWO_POW_63..TWO_POW_63).contains(&score) {
        i64::MIN
    } else {
        score as i64
    }
}

/// The point a score stands for, (longitude, latitude): the centre of
/// its 26-step cell (Redis's `decodeGeohash`). Every score decodes.
pub fn decode_score(score: f64) -> (f64, f64) {
    let cell = Cell { bits: score_bits(score), step: STEP_MAX };
    match decode(cell, LON_SPAN, LAT_SPAN) {
        Some(area) => centre(&area),
        None => unreachable!("a 26-step cell is never NONE"),
    }
}

/// The score GEOADD stores for (`lon`, `lat`), or None outside the
/// spans: the 26-step hash, an integer below 2^54 (exact as a double).
pub fn encode_score(lon: f64, lat: f64) -> Option<f64> {
    let cell = encode(lon, lat, STEP_MAX, LON_SPAN, LAT_SPAN)?;
    Some(Cell::aligned(cell.bits, cell.step) as f64)
}

/// True if (`lon`, `lat`) may be stored (Redis's check in
/// `extractLongLatOrReply`).
pub fn valid_point(lon: f64, lat: f64) -> bool {
    // (Arguments are never NaN: the float parser refuses it.)
    (LON_MIN..=LON_MAX).contains(&lon) && (LAT_MIN..=LAT_MAX).contains(&lat)
}

/// GEOHASH's reply for a score: the point re-encoded over the standard
/// latitude span [-90, 90], as 11 base-32 characters; 52 bits fill ten
/// of them, the eleventh is '0' (Redis's `geohashCommand`).
pub fn geohash_text(score: f64) -> [u8; GEOHASH_TEXT_BYTES] {
    let (lon, lat) = decode_score(score);
    // Every decoded point is inside both spans, so this encodes.
    let bits = encode(lon, lat, STEP_MAX, LON_SPAN, STANDARD_LAT_SPAN).map_or(0, |c| c.bits);
    let mut text = [GEOHASH_ALPHABET[0]; GEOHASH_TEXT_BYTES];
    for (i, c) in text.iter_mut().enumerate().take(GEOHASH_TEXT_BYTES - 1) {
        let shift = HASH_BITS - (i as u32 + 1) * GEOHASH_CHAR_BITS;
        *c = GEOHASH_ALPHABET[((bits >> shift) & 0x1f) as usize];
    }
    text
}

/// Degrees to radians, as Redis's `deg_rad`.
fn rad(deg: f64) -> f64 {
    deg * DEG_TO_RAD
}

/// Radians to degrees, as Redis's `rad_deg`.
fn deg(rad: f64) -> f64 {
    rad / DEG_TO_RAD
}

/// The great-circle distance in meters between two points, by Redis
/// 7.0's haversine (`geohashGetDistance`), term for term.
pub fn distance_m(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let lat1r = rad(lat1);
    let lon1r = rad(lon1);
    let lat2r = rad(lat2);
    let lon2r = rad(lon2);
    let u = ((lat2r - lat1r) / 2.0).sin();
    let v = ((lon2r - lon1r) / 2.0).sin();
    2.0 * EARTH_RADIUS_M * (u * u + lat1r.cos() * lat2r.cos() * v * v).sqrt().asin()
}

/// A unit's meters (Redis's `extractUnitOrReply`: m, km, ft, mi in any
/// case); None for another word.
pub fn unit_meters(unit: &[u8]) -> Option<f64> {
    const UNITS: [(&[u8], f64); 4] = [(b"m", 1.0), (b"km", 1000.0), (b"ft", 0.3048), (b"mi", 1609.34)];
    UNITS.iter().find(|(name, _)| unit.eq_ignore_ascii_case(name)).map(|&(_, m)| m)
}

/// The extent of a search, in its unit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Extent {
    /// BYRADIUS (GEORADIUS's radius).
    Radius(f64),
    /// BYBOX: the whole width (east-west) and height (north-south).
    Box { width: f64, height: f64 },
}

/// A search area (Redis's `GeoShape`): a centre, an extent in a unit,
/// and the unit's meters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shape {
    pub lon: f64,
    pub lat: f64,
    pub extent: Extent,
    /// Meters per unit (1 for m, 1000 for km …).
    pub unit_m: f64,
}

/// The bounding box of a search in degrees (Redis's `bounds`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bounds {
    pub lon: Span,
    pub lat: Span,
}

/// The bounding box of `shape` (Redis's `geohashBoundingBox`): the
/// half-height as degrees of latitude; the half-width as degrees of
/// longitude at the box's edge nearer a pole (the top edge north of the
/// equator, the bottom edge south of it), where meridians are closest.
pub fn bounding_box(shape: &Shape) -> Bounds {
    let (half_height, half_width) = match shape.extent {
        Extent::Radius(r) => (shape.unit_m * r, shape.unit_m * r),
        Extent::Box { width, height } => (shape.unit_m * (height / 2.0), shape.unit_m * (width / 2.0)),
    };
    let (lon, lat) = (shape.lon, shape.lat);
    let lat_delta = deg(half_height / EARTH_RADIUS_M);
    let lon_delta_top = deg(half_width / EARTH_RADIUS_M / rad(lat + lat_delta).cos());
    let lon_delta_bottom = deg(half_width / EARTH_RADIUS_M / rad(lat - lat_delta).cos());
    let lon_delta = if lat < 0.0 { lon_delta_bottom } else { lon_delta_top };
    Bounds {
        lon: Span { min: lon - lon_delta, max: lon + lon_delta },
        lat: Span { min: lat - lat_delta, max: lat + lat_delta },
    }
}

/// The step whose cells are about as large as a search of `range_m`
/// meters at latitude `lat` (Redis's `geohashEstimateStepsByRadius`),
/// 1..=26. Bounded: at most [`ESTIMATE_DOUBLINGS_MAX`] doublings.
pub fn estimate_step(range_m: f64, lat: f64) -> u8 {
    if range_m == 0.0 {
        return STEP_MAX;
    }
    let mut range = range_m;
    let mut step: i32 = 1;
    let mut doublings = 0;
    while range < MERCATOR_MAX_M && doublings < ESTIMATE_DOUBLINGS_MAX {
        range *= 2.0;
        step += 1;
        doublings += 1;
    }
    // Two coarser: the range then falls inside most nine-cell areas.
    step -= 2;
    if !(-POLAR_LAT_1..=POLAR_LAT_1).contains(&lat) {
        step -= 1;
        if !(-POLAR_LAT_2..=POLAR_LAT_2).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, i32::from(STEP_MAX)) as u8
}

/// `cell` moved one cell along longitude (the odd bits; `east` or
/// west), wrapping around the antimeridian (Redis's `geohash_move_x`).
fn move_lon(cell: Cell, east: bool) -> Cell {
    move_axis(cell, east, ODD_BITS)
}

/// `cell` moved one cell along latitude (the even bits; `north` or
/// south), wrapping at the span's ends (`geohash_move_y`).
fn move_lat(cell: Cell, north: bool) -> Cell {
    move_axis(cell, north, EVEN_BITS)
}

/// Adds ±1 to the axis in `axis_bits` of `cell`: the other axis's bits
/// are filled with ones (for +1 they carry the addition across; for -1
/// they let the borrow through), then masked off.
fn move_axis(cell: Cell, up: bool, axis_bits: u64) -> Cell {
    let width = 64 - 2 * u32::from(cell.step);
    let this = cell.bits & axis_bits;
    let other = cell.bits & !axis_bits;
    let filler = (!axis_bits) >> width;
    let moved = if up { this.wrapping_add(filler + 1) } else { (this | filler).wrapping_sub(filler + 1) };
    Cell { bits: (moved & (axis_bits >> width)) | other, step: cell.step }
}

/// The eight neighbours of `cell` in Redis's scan order: N, S, E, W,
/// NE, NW, SE, SW (`geohashNeighbors`, read by `membersOfAllNeighbors`).
pub fn neighbours(cell: Cell) -> [Cell; 8] {
    let (n, s) = (move_lat(cell, true), move_lat(cell, false));
    [
        n,
        s,
        move_lon(cell, true),
        move_lon(cell, false),
        move_lon(n, true),
        move_lon(n, false),
        move_lon(s, true),
        move_lon(s, false),
    ]
}

/// Indexes into [`Areas::cells`].
const CENTRE: usize = 0;
const NORTH: usize = 1;
const SOUTH: usize = 2;
const EAST: usize = 3;
const WEST: usize = 4;
const NORTH_EAST: usize = 5;
const NORTH_WEST: usize = 6;
const SOUTH_EAST: usize = 7;
const SOUTH_WEST: usize = 8;
/// Cells a search reads at most.
pub const AREA_CELLS: usize = 9;

/// The cells a search reads (Redis's `GeoHashRadius`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Areas {
    /// The centre cell, then its neighbours N, S, E, W, NE, NW, SE, SW;
    /// a dropped one is [`Cell::NONE`].
    pub cells: [Cell; AREA_CELLS],
    /// The centre cell's extent.
    pub centre: CellArea,
    /// The search's bounding box.
    pub bounds: Bounds,
}

/// The nine cells that cover `shape` (Redis's
/// `geohashCalculateAreasByShapeWGS84`; module notes, "Searching"):
/// the estimated step, one coarser if a side neighbour does not reach
/// the bounding box's edge, and the rows and columns of neighbours the
/// box does not reach dropped. The centre must be a valid point.
pub fn areas(shape: &Shape) -> Areas {
    let bounds = bounding_box(shape);
    // The corner's distance for a box.
    let range = match shape.extent {
        Extent::Radius(r) => r,
        Extent::Box { width, height } => ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt(),
    } * shape.unit_m;
    let mut step = estimate_step(range, shape.lat);
    let at = |step: u8| {
        let cell = encode(shape.lon, shape.lat, step, LON_SPAN, LAT_SPAN).unwrap_or(Cell { bits: 0, step });
        let area = decode(cell, LON_SPAN, LAT_SPAN);
        (cell, neighbours(cell), area)
    };
    let (mut cell, mut near, mut area) = at(step);
    let side = |c: Cell| decode(c, LON_SPAN, LAT_SPAN);
    let (n, s, e, w) = (side(near[0]), side(near[1]), side(near[2]), side(near[3]));
    // A missing area (never: moved cells keep their step) reads as not
    // reaching, as Redis's zeroed struct would compare.
    let short = n.is_some_and(|a| a.lat.max < bounds.lat.max)
        || s.is_some_and(|a| a.lat.min > bounds.lat.min)
        || e.is_some_and(|a| a.lon.max < bounds.lon.max)
        || w.is_some_and(|a| a.lon.min > bounds.lon.min);
    if step > 1 && short {
        step -= 1;
        (cell, near, area) = at(step);
    }
    let mut cells = [Cell::NONE; AREA_CELLS];
    cells[CENTRE] = cell;
    cells[NORTH..].copy_from_slice(&near);
    let centre = area.unwrap_or(CellArea { lon: LON_SPAN, lat: LAT_SPAN });
    if step >= 2 {
        let mut drop = |which: [usize; 3]| which.iter().for_each(|&i| cells[i] = Cell::NONE);
        if centre.lat.min < bounds.lat.min {
            drop([SOUTH, SOUTH_WEST, SOUTH_EAST]);
        }
        if centre.lat.max > bounds.lat.max {
            drop([NORTH, NORTH_EAST, NORTH_WEST]);
        }
        if centre.lon.min < bounds.lon.min {
            drop([WEST, SOUTH_WEST, NORTH_WEST]);
        }
        if centre.lon.max > bounds.lon.max {
            drop([EAST, SOUTH_EAST, NORTH_EAST]);
        }
    }
    Areas { cells, centre, bounds }
}

impl Shape {
    /// The point a score stands for and its distance in meters from the
    /// centre, if it lies inside the shape (Redis's `geoWithinShape`):
    /// within the radius; or, for a box, no farther east-west (along the
    /// point's parallel) than half the width and north-south (along its
    /// meridian) than half the height. A NaN distance passes, as in
    /// Redis (`distance > radius` is false).
    pub fn contains(&self, score: f64) -> Option<(f64, f64, f64)> {
        let (lon, lat) = decode_score(score);
        let d = match self.extent {
            Extent::Radius(r) => {
                let d = distance_m(self.lon, self.lat, lon, lat);
                if d > r * self.unit_m {
                    return None;
                }
                d
            }
            Extent::Box { width, height } => {
                let (width_m, height_m) = (width * self.unit_m, height * self.unit_m);
                let lon_d = distance_m(lon, lat, self.lon, lat);
                let lat_d = distance_m(lon, lat, lon, self.lat);
                if lon_d > width_m / 2.0 || lat_d > height_m / 2.0 {
                    return None;
                }
                distance_m(self.lon, self.lat, lon, lat)
            }
        };
        Some((lon, lat, d))
    }
}

/// Appends `d` as C's `%.4f` (GEODIST, WITHDIST): four decimals, ties to
/// even on the exact binary value as glibc rounds; `inf`, `-nan` as
/// glibc spells them.
pub fn format_distance(d: f64, out: &mut Vec<u8>) {
    if !d.is_finite() {
        return special(d, out);
    }
    out.extend_from_slice(format!("{d:.4}").as_bytes());
}

/// Appends a coordinate as Redis's `addReplyHumanLongDouble` writes it
/// (`ld2string` in human mode): `%.17Lf` of the value, trailing zeros
/// and a trailing point removed, "-0" as "0".
pub fn format_coord(v: f64, out: &mut Vec<u8>) {
    if !v.is_finite() {
        return special(v, out);
    }
    let s = format!("{v:.17}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    out.extend_from_slice(if s == "-0" { b"0" } else { s.as_bytes() });
}

/// glibc's printf spelling of an infinity or a NaN (the sign of a NaN
/// kept: x86's default NaN is negative).
fn special(v: f64, out: &mut Vec<u8>) {
    let body: &[u8] = if v.is_nan() { b"nan" } else { b"inf" };
    if v.is_sign_negative() {
        out.push(b'-');
    }
    out.extend_from_slice(body);
}
