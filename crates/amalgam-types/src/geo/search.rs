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

/// Orders `hits` by distance as Redis does before it replies with the
/// first `keep` of them (`georadiusGeneric`):
/// * `keep` ≥ all: a full sort with glibc's `qsort` — on Debian's glibc
///   2.36 a merge sort, so stable: members at equal distances keep the
///   scan order, in either direction;
/// * fewer (COUNT): Redis's own partial quicksort, `pqsort`
///   ([`partial_quicksort`]), which only sorts the partitions that hold
///   ranks `0..keep`; its order of equal distances is the algorithm's,
///   reproduced step for step.
pub fn sort_by_distance(hits: &mut [Hit<'_>], order: Order, keep: usize) {
    if keep >= hits.len() {
        // A total order (a NaN distance, from rounding at antipodes, sorts
        // last ascending) that agrees with Redis's comparator elsewhere.
        let asc = |a: &Hit<'_>, b: &Hit<'_>| {
            a.dist_m.partial_cmp(&b.dist_m).unwrap_or_else(|| a.dist_m.is_nan().cmp(&b.dist_m.is_nan()))
        };
        match order {
            Order::Asc => hits.sort_by(asc),
            Order::Desc => hits.sort_by(|a, b| asc(b, a)),
        }
    } else if keep > 0 {
        let cmp = |a: &Hit<'_>, b: &Hit<'_>| redis_compare(a.dist_m, b.dist_m, order);
        partial_quicksort(hits, keep - 1, &cmp);
    }
}

/// Redis's `sort_gp_asc` (and `sort_gp_desc`, its negation): 1 if `a`
/// is farther, 0 if equal, else -1.
fn redis_compare(a: f64, b: f64, order: Order) -> i8 {
    let asc = if a > b {
        1
    } else if a == b {
        0
    } else {
        -1
    };
    match order {
        Order::Asc => asc,
        Order::Desc => -asc,
    }
}

/// Partitions below this many elements are insertion-sorted.
const INSERTION_BELOW: usize = 7;
/// Partitions above this many elements take the ninther as pivot.
const NINTHER_ABOVE: usize = 40;

/// Sorts `v` enough that ranks `0..=last` hold the right elements in
/// order: the Bentley–McIlroy quicksort of NetBSD's `qsort` as Redis's
/// `pqsort.c` adapts it (Redis src/pqsort.c), which skips every
/// partition that holds none of the ranks wanted.
///
/// HOW IT WORKS. A pivot (the middle element; the median of first,
/// middle and last past 7 elements; the median of three such medians
/// past 40) is swapped to the front; a three-way partition gathers
/// elements equal to it at both ends, less ones after the left run,
/// greater ones before the right run, and the equal runs are swapped to
/// the middle. A partition with no swap at all is finished by insertion
/// sort (NetBSD's `swap_cnt` shortcut), as is any partition under 7
/// elements. Equal elements move, so the order among equal distances is
/// this algorithm's, not the scan's: reproduced here step for step,
/// with the same comparator, so that COUNT's ties come out as Redis's.
///
/// BOUND. Redis recurses into the left part and loops on the right one;
/// the parts are disjoint, so the order in which they are sorted does
/// not matter and an explicit stack does the same work without deep
/// recursion. Every partition places its pivot run for good, so there
/// are fewer than `2 * v.len()` sub-arrays.
fn partial_quicksort<T>(v: &mut [T], last: usize, cmp: &dyn Fn(&T, &T) -> i8) {
    // Sub-arrays still to sort: (start, length).
    let mut todo = vec![(0usize, v.len())];
    let wanted = |start: usize, n: usize| start <= last && n > 0;
    let mut rounds = 0;
    // Bounded: each round places a pivot run (module notes, BOUND).
    while let Some((start, n)) = todo.pop() {
        rounds += 1;
        debug_assert!(rounds <= 2 * v.len() + 1);
        let a = &mut v[start..start + n];
        if n < INSERTION_BELOW {
            insertion_sort(a, cmp);
            continue;
        }
        let mut pm = n / 2;
        if n > INSERTION_BELOW {
            let (mut pl, mut pn) = (0, n - 1);
            if n > NINTHER_ABOVE {
                let d = n / 8;
                pl = median3(a, pl, pl + d, pl + 2 * d, cmp);
                pm = median3(a, pm - d, pm, pm + d, cmp);
                pn = median3(a, pn - 2 * d, pn - d, pn, cmp);
            }
            pm = median3(a, pl, pm, pn, cmp);
        }
        a.swap(0, pm);
        let (mut pa, mut pb, mut pc, mut pd) = (1, 1, n - 1, n - 1);
        let mut swapped = false;
        // Bounded: pb rises and pc falls until they cross.
        loop {
            while pb <= pc {
                let c = cmp(&a[pb], &a[0]);
                if c > 0 {
                    break;
                }
                if c == 0 {
                    swapped = true;
                    a.swap(pa, pb);
                    pa += 1;
                }
                pb += 1;
            }
            while pb <= pc {
                let c = cmp(&a[pc], &a[0]);
                if c < 0 {
                    break;
                }
                if c == 0 {
                    swapped = true;
                    a.swap(pc, pd);
                    pd -= 1;
                }
                pc -= 1;
            }
            if pb > pc {
                break;
            }
            a.swap(pb, pc);
            swapped = true;
            pb += 1;
            pc -= 1;
        }
        if !swapped {
            insertion_sort(a, cmp);
            continue;
        }
        let r = pa.min(pb - pa);
        swap_runs(a, 0, pb - r, r);
        let r = (pd - pc).min(n - pd - 1);
        swap_runs(a, pb, n - r, r);
        // The less part, then the greater part (Redis: recursion, then
        // the loop), each only if it holds a wanted rank.
        let less = pb - pa;
        let greater = pd - pc;
        if greater > 1 && wanted(start + n - greater, greater) {
            todo.push((start + n - greater, greater));
        }
        if less > 1 && wanted(start, less) {
            todo.push((start, less));
        }
    }
}

/// Insertion sort by swaps, as `pqsort`'s small case.
fn insertion_sort<T>(a: &mut [T], cmp: &dyn Fn(&T, &T) -> i8) {
    for m in 1..a.len() {
        let mut l = m;
        while l > 0 && cmp(&a[l - 1], &a[l]) > 0 {
            a.swap(l, l - 1);
            l -= 1;
        }
    }
}

/// The index of the median of three (`med3`, its tie rules).
fn median3<T>(a: &[T], i: usize, j: usize, k: usize, cmp: &dyn Fn(&T, &T) -> i8) -> usize {
    if cmp(&a[i], &a[j]) < 0 {
        if cmp(&a[j], &a[k]) < 0 {
            j
        } else if cmp(&a[i], &a[k]) < 0 {
            k
        } else {
            i
        }
    } else if cmp(&a[j], &a[k]) > 0 {
        j
    } else if cmp(&a[i], &a[k]) < 0 {
        i
    } else {
        k
    }
}

/// Swaps the `n` elements from `i` with the `n` from `j` (`vecswap`; the
/// runs never overlap).
fn swap_runs<T>(a: &mut [T], i: usize, j: usize, n: usize) {
    for t in 0..n {
        a.swap(i + t, j + t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The partial sort puts the right elements, in order, at the front
    /// (what COUNT returns), for every keep and many inputs with ties.
    #[test]
    fn partial_quicksort_sorts_the_front() {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for n in [1usize, 2, 6, 7, 8, 39, 40, 41, 100, 333] {
            for keep in [1, 2, 5, n / 2 + 1, n] {
                if keep > n {
                    continue;
                }
                let mut v: Vec<(u64, usize)> = (0..n)
                    .map(|i| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        (x % 17, i)
                    })
                    .collect();
                let mut want: Vec<u64> = v.iter().map(|e| e.0).collect();
                want.sort_unstable();
                let cmp = |a: &(u64, usize), b: &(u64, usize)| redis_compare(a.0 as f64, b.0 as f64, Order::Asc);
                partial_quicksort(&mut v, keep - 1, &cmp);
                let got: Vec<u64> = v[..keep].iter().map(|e| e.0).collect();
                assert_eq!(got, want[..keep], "n {n} keep {keep}");
                let mut all: Vec<usize> = v.iter().map(|e| e.1).collect();
                all.sort_unstable();
                assert!(all.iter().enumerate().all(|(i, &e)| i == e), "a permutation");
            }
        }
    }
}
