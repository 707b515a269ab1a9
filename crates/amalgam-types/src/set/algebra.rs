//! SINTER, SINTERCARD, SUNION, SDIFF (and their STORE forms) over any
//! mix of set forms. Results equal Redis's as sets; the order a result
//! is iterated in is the result set's own (module docs of [`super`]),
//! not Redis's. A missing key is the server's business (an empty set, or
//! an early empty reply as Redis does).

use super::{Member, Set};
use crate::Thresholds;

/// Inserts a member of another set.
fn add(out: &mut Set, m: Member<'_>, th: &Thresholds) {
    m.with_bytes(|b| out.insert(b, th));
}

/// The sets by size, smallest first (Redis's SINTER order: fewest
/// membership tests).
fn by_size<'a>(sets: &[&'a Set]) -> Vec<&'a Set> {
    let mut v = sets.to_vec();
    v.sort_by_key(|s| s.len());
    v
}

/// Members in every set (SINTER / SINTERSTORE). Cost: the smallest set's
/// members × the other sets' lookups. Empty for no sets.
pub fn inter(sets: &[&Set], th: &Thresholds) -> Set {
    let mut out = Set::new();
    let sorted = by_size(sets);
    let Some((first, rest)) = sorted.split_first() else {
        return out;
    };
    // Bounded by the smallest set's members × the sets.
    for m in first.iter() {
        if rest.iter().all(|s| s.contains_member(m)) {
            add(&mut out, m, th);
        }
    }
    out
}

/// SINTERCARD: the intersection's size, counting stops at `limit`
/// (0 = no limit), as Redis's LIMIT.
pub fn inter_card(sets: &[&Set], limit: usize) -> usize {
    let sorted = by_size(sets);
    let Some((first, rest)) = sorted.split_first() else {
        return 0;
    };
    let mut n = 0;
    // Bounded by the smallest set's members × the sets, or by limit.
    for m in first.iter() {
        if rest.iter().all(|s| s.contains_member(m)) {
            n += 1;
            if n == limit {
                break;
            }
        }
    }
    n
}

/// Members in any set (SUNION / SUNIONSTORE).
pub fn union(sets: &[&Set], th: &Thresholds) -> Set {
    let mut out = Set::new();
    // Bounded by the sets' members.
    for s in sets {
        for m in s.iter() {
            add(&mut out, m, th);
        }
    }
    out
}

/// Members of the first set in none of the others (SDIFF / SDIFFSTORE).
pub fn diff(sets: &[&Set], th: &Thresholds) -> Set {
    let mut out = Set::new();
    let Some((first, rest)) = sets.split_first() else {
        return out;
    };
    // Bounded by the first set's members × the sets.
    for m in first.iter() {
        if !rest.iter().any(|s| s.contains_member(m)) {
            add(&mut out, m, th);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn set_of(members: &[&str], th: &Thresholds) -> Set {
        let mut s = Set::new();
        for m in members {
            s.insert(m.as_bytes(), th);
        }
        s
    }

    fn strings(s: &Set) -> BTreeSet<Vec<u8>> {
        s.iter().map(|m| m.to_vec()).collect()
    }

    #[test]
    fn algebra_across_forms() {
        let th = Thresholds { set_max_intset_entries: 3, set_max_listpack_entries: 3, ..Thresholds::default() };
        let a = set_of(&["1", "2", "3"], &th); // intset
        let b = set_of(&["2", "3", "x"], &th); // listpack
        let c = set_of(&["3", "2", "5", "6", "7"], &th); // integer table
        let d = set_of(&["3", "y", "z", "w", "2"], &th); // string table
        assert_eq!(
            (a.encoding(), b.encoding(), c.encoding(), d.encoding()),
            ("intset", "listpack", "hashtable", "hashtable")
        );
        let want: BTreeSet<Vec<u8>> = [b"2".to_vec(), b"3".to_vec()].into();
        assert_eq!(strings(&inter(&[&a, &b, &c, &d], &th)), want);
        assert_eq!(inter_card(&[&a, &b, &c, &d], 0), 2);
        assert_eq!(inter_card(&[&a, &b, &c, &d], 1), 1);
        assert_eq!(strings(&diff(&[&c, &a, &b], &th)), [b"5".to_vec(), b"6".to_vec(), b"7".to_vec()].into());
        assert_eq!(union(&[&a, &b, &c, &d], &th).len(), 10);
        assert!(inter(&[], &th).is_empty() && diff(&[], &th).is_empty());
        assert_eq!(strings(&inter(&[&d], &th)), strings(&d));
    }
}
