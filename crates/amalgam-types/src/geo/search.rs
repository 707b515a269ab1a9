//! A search over a sorted set holding geohash scores (Redis `geo.c`,
//! `membersOfAllNeighbors` and `geoGetPointsInRange`): the nine cells of
//! [`super::areas`], each read as a score range `[min, max)` through a
//! [`ZView`] (the same range read ZRANGEBYSCORE makes), every member kept
//! if [`Shape::contains`] it; then the order (`sort_gp_asc`/`desc`).

use super::{areas, Shape, AREA_CELLS};
use crate::zset::{ScoreRange, ZView};

/// A member a search found.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hit<'a> {
    pub member: &'a [u8],
    /// Its score (the 52-bit hash; WITHHASH, STORE).
    pub score: f64,
    /// The point it stands for.
    pub lon: f64,
    pub lat: f64,
    /// Meters from the search's centre.
    pub dist_m: f64,
}

/// The members of `z` inside `shape`, in Redis's scan order: cell by cell
/// (centre, N, S, E, W, NE, NW, SE, SW; a cell equal to the one read just
/// before it is skipped, as Redis does), each cell by score then member.
/// With `limit` > 0 (COUNT … ANY) the scan stops once `limit` members are
/// found. Bounded: nine score ranges, each read once.
pub fn search<'a>(z: &ZView<'a>, shape: &Shape, limit: usize) -> Vec<Hit<'a>> {
    let cells = areas(shape).cells;
    let mut hits = Vec::new();
    let full = |hits: &Vec<Hit<'_>>| limit != 0 && hits.len() >= limit;
    // Redis's `last_processed`: 0 both before any cell and after the
    // centre, so the north cell is never compared with the centre.
    let mut last = 0;
    for i in 0..AREA_CELLS {
        let cell = cells[i];
        if cell.is_none() || (last != 0 && cell == cells[last]) {
            continue;
        }
        if full(&hits) {
            break;
        }
        let (min, max) = cell.score_range();
        let range = ScoreRange { min, min_exclusive: false, max, max_exclusive: true };
        for (member, score) in z.range_by_score(&range, false, 0, -1) {
            if let Some((lon, lat, dist_m)) = shape.contains(score) {
                hits.push(Hit { member, score, lon, lat, dist_m });
                if full(&hits) {
                    break;
                }
            }
        }
        last = i;
    }
    hits
}

/// ASC or DESC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    Asc,
    Desc,
}

/// Sorts `hits` by distance, stably (Debian's glibc 2.36 `qsort`, which
/// Redis calls, is a merge sort: members at equal distances keep the scan
/// order in either direction). Equal distances compare equal, as in
/// Redis's comparator; a NaN distance (antipodal points, where rounding
/// takes the haversine past 1) sorts last in ASC, first in DESC, so that
/// the order is total.
pub fn sort_by_distance(hits: &mut [Hit<'_>], order: Order) {
    let asc = |a: &Hit<'_>, b: &Hit<'_>| {
        a.dist_m.partial_cmp(&b.dist_m).unwrap_or_else(|| a.dist_m.is_nan().cmp(&b.dist_m.is_nan()))
    };
    match order {
        Order::Asc => hits.sort_by(asc),
        Order::Desc => hits.sort_by(|a, b| asc(b, a)),
    }
}
