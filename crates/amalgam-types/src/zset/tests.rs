//! Structural checks of the large form (the tree's counts, separators
//! and links, the table, the arena) through mixed operations, with the
//! arena compacting underneath.

use super::*;

fn t(entries: usize) -> Thresholds {
    Thresholds { zset_max_listpack_entries: entries, ..Thresholds::default() }
}

#[test]
fn tree_stays_consistent_through_churn() {
    let mut z = ZSet::new(&t(4));
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    // Bounded: a fixed number of operations.
    for step in 0..40_000u64 {
        let m = format!("m{}", rnd() % 3000);
        match rnd() % 7 {
            0..=2 => {
                let s = (rnd() % 100) as f64 / 4.0;
                z.add(m.as_bytes(), s, AddFlags::default()).unwrap();
            }
            3 => {
                z.remove(m.as_bytes());
            }
            4 => {
                // By rank: the front, the back, or a run in the middle.
                let n = (rnd() % 3) as usize;
                let before = z.len();
                let removed = match rnd() % 3 {
                    0 => z.pop_min(n).len(),
                    1 => z.pop_max(n).len(),
                    _ => {
                        let a = (rnd() % (before as u64 + 1)) as i64;
                        z.remove_range_by_rank(a, a + n as i64)
                    }
                };
                assert_eq!(z.len(), before - removed);
                assert!(removed <= n + 1);
            }
            _ => {
                let lo = (rnd() % 100) as f64 / 4.0;
                let r = ScoreRange { min: lo, min_exclusive: false, max: lo + 0.3, max_exclusive: true };
                z.remove_range_by_score(&r);
            }
        }
        if step % 997 == 0 {
            z.check();
        }
    }
    z.check();
    let all: Vec<(Vec<u8>, f64)> = own(z.iter());
    for w in all.windows(2) {
        assert!(cmp_pair(w[0].1, &w[0].0, w[1].1, &w[1].0).is_lt());
    }
    // Drain: every removal path, ending empty.
    let n = z.len();
    assert_eq!(z.pop_min(n / 2).len(), n / 2);
    z.check();
    assert_eq!(z.pop_max(usize::MAX).len(), n - n / 2);
    z.check();
    assert!(z.is_empty());
}

#[test]
fn ascending_inserts_fill_leaves() {
    let mut z = ZSet::new(&t(0));
    for i in 0..10_000u32 {
        z.add(format!("member:{i:010}").as_bytes(), f64::from(i) / 2.0, AddFlags::default()).unwrap();
    }
    z.check();
    assert_eq!(z.encoding(), "skiplist");
    assert_eq!(z.rank(b"member:0000005000", false), Some(5000));
    assert_eq!(z.rank(b"member:0000005000", true), Some(4999));
}

#[test]
fn removals_compact_the_arena_and_repoint_handles() {
    let mut z = ZSet::new(&t(0));
    /// Members: several arena pages of ~30-byte elements.
    const MEMBERS: u32 = 20_000;
    for i in 0..MEMBERS {
        z.add(format!("member:{i:012}").as_bytes(), f64::from(i % 97), AddFlags::default()).unwrap();
    }
    let Repr::Large(l) = &z.repr else { panic!("large") };
    let full = l.arena.mem_bytes();
    // Remove three in four, scattered: every page goes mostly dead, so
    // compaction must move survivors (and re-point them) to free pages.
    for i in 0..MEMBERS {
        if i % 4 != 0 {
            assert!(z.remove(format!("member:{i:012}").as_bytes()).is_some());
        }
    }
    z.check();
    let Repr::Large(l) = &z.repr else { panic!("large") };
    let after = l.arena.mem_bytes();
    assert!(after * 2 < full, "arena kept {after} of {full} bytes");
    for i in (0..MEMBERS).step_by(4) {
        assert_eq!(z.score(format!("member:{i:012}").as_bytes()), Some(f64::from(i % 97)));
    }
}

#[test]
fn algebra_matches_redis_replies() {
    // Replies of redis-server 7.0.15 for
    //   ZADD a 1 x inf y 2 z ; ZADD b 2 x -inf y 3 w 5 v
    let d = Thresholds::default();
    let a = ZSet::from_pairs([(&b"x"[..], 1.0), (b"y", f64::INFINITY), (b"z", 2.0)], &d);
    let b = ZSet::from_pairs([(&b"x"[..], 2.0), (b"y", f64::NEG_INFINITY), (b"w", 3.0), (b"v", 5.0)], &d);
    let inputs: [&dyn Scored; 2] = [&a, &b];
    let show = |z: ZSet| -> String {
        let mut out = Vec::new();
        for (m, s) in z.iter() {
            out.extend_from_slice(m);
            out.push(b' ');
            format_score(s, &mut out);
            out.push(b' ');
        }
        String::from_utf8(out).unwrap().trim_end().to_string()
    };
    assert_eq!(show(union(&inputs, &[], Aggregate::Sum, &d)), "y 0 z 2 w 3 x 3 v 5");
    assert_eq!(show(union(&inputs, &[0.0, 1.0], Aggregate::Sum, &d)), "y -inf z 0 x 2 w 3 v 5");
    assert_eq!(show(inter(&inputs, &[], Aggregate::Max, &d)), "x 2 y inf");
    assert_eq!(show(inter(&inputs, &[2.0, 0.0], Aggregate::Sum, &d)), "y 0 x 2");
    assert_eq!(show(diff(&inputs, &d)), "z 2");
    assert_eq!(show(union(&inputs, &[-1.0, 1.0], Aggregate::Min, &d)), "y -inf z -2 x -1 w 3 v 5");
}

/// A plain set is an input of the algebra whose members score 1, in
/// both its forms (intset and strings).
#[test]
fn sets_score_one_in_the_algebra() {
    let th = Thresholds::default();
    let mut s = crate::set::Set::new();
    for m in ["7", "x", "y"] {
        s.insert(m.as_bytes(), &th);
    }
    let mut ints = crate::set::Set::new();
    ints.insert(b"7", &th);
    let z = ZSet::from_pairs([(&b"x"[..], 5.0), (&b"q"[..], 2.0)], &th);
    let u = union(&[&z, &s, &ints], &[1.0, 2.0, 3.0], Aggregate::Sum, &th);
    let got: Vec<(Vec<u8>, f64)> = u.iter().map(|(m, s)| (m.to_vec(), s)).collect();
    let want = [("q", 2.0), ("y", 2.0), ("7", 5.0), ("x", 7.0)];
    assert_eq!(got, want.map(|(m, s)| (m.as_bytes().to_vec(), s)));
    let i = inter(&[&s, &ints], &[1.0, 1.0], Aggregate::Max, &th);
    assert_eq!(i.iter().map(|(m, s)| (m.to_vec(), s)).collect::<Vec<_>>(), [(b"7".to_vec(), 1.0)]);
    assert_eq!(diff(&[&s, &z], &th).len(), 2);
}

/// An updated member is rescored in place: its element keeps its handle
/// (the member table is untouched) and its arena position (ZSCAN's order
/// does not change), the arena neither grows nor compacts, and the tree
/// (separator scores included, `check`) moves it to its new rank.
#[test]
fn updates_rescore_in_place() {
    let mut z = ZSet::new(&t(0));
    /// Members: a few arena pages and a tree of several levels' worth of
    /// leaves.
    const MEMBERS: u64 = 5_000;
    let mut model = std::collections::BTreeMap::new();
    for i in 0..MEMBERS {
        let m = format!("member:{i}");
        z.add(m.as_bytes(), (i % 50) as f64, AddFlags::default()).unwrap();
        model.insert(m.into_bytes(), (i % 50) as f64);
    }
    let scan_order = |z: &ZSet| {
        let mut v = Vec::new();
        z.scan(0, usize::MAX, &mut |m, _| v.push(m.to_vec()));
        v
    };
    let (order, Repr::Large(l)) = (scan_order(&z), &z.repr) else { panic!("large") };
    let (arena_bytes, handles) = (l.arena.mem_bytes(), l.tree.iter().collect::<std::collections::HashSet<_>>());
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    // Bounded: a fixed number of updates, every one a move (ZADD to a new
    // score, ZINCRBY, GT/LT that pass), some to a member's own
    // neighbourhood, some across the whole order, ±inf included.
    for step in 0..40_000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let m = format!("member:{}", x % MEMBERS).into_bytes();
        let cur = model[&m];
        let (s, flags, want) = match if cur.is_infinite() { 4 } else { step % 5 } {
            0 => (0.5, AddFlags { incr: true, ..AddFlags::default() }, cur + 0.5),
            1 => (cur - 3.0, AddFlags { lt: true, ..AddFlags::default() }, cur - 3.0),
            2 => (cur + 1e-9, AddFlags { gt: true, xx: true, ..AddFlags::default() }, cur + 1e-9),
            3 if step % 1000 == 3 => (f64::INFINITY, AddFlags::default(), f64::INFINITY),
            _ => {
                let s = ((x >> 20) % 200) as f64 - 100.0;
                let s = if s == cur { s + 0.25 } else { s };
                (s, AddFlags::default(), s)
            }
        };
        let want = normalize(want);
        let out = z.add(&m, s, flags).unwrap();
        if want == cur {
            assert_eq!(out, AddOutcome::Unchanged(cur));
        } else {
            assert_eq!(out, AddOutcome::Updated(want), "step {step}");
        }
        model.insert(m, want);
        if step % 4999 == 0 {
            z.check();
        }
    }
    z.check();
    assert_eq!(scan_order(&z), order, "rescoring moves no element in the arena");
    let Repr::Large(l) = &z.repr else { panic!("large") };
    assert_eq!(l.arena.mem_bytes(), arena_bytes, "rescoring allocates nothing");
    assert_eq!(l.tree.iter().collect::<std::collections::HashSet<_>>(), handles, "every handle stays");
    let mut want: Vec<(Vec<u8>, f64)> = model.into_iter().collect();
    want.sort_by(|a, b| cmp_pair(a.1, &a.0, b.1, &b.0));
    assert_eq!(own(z.iter()), want);
    for (r, (m, s)) in want.iter().enumerate().step_by(97) {
        assert_eq!(z.rank(m, false), Some(r));
        assert_eq!(z.score(m), Some(*s));
    }
}

/// A set of one member, rescored: the tree empties and refills around
/// the same handle.
#[test]
fn rescoring_a_lone_member() {
    let mut z = ZSet::new(&t(0));
    z.add(b"only", 1.0, AddFlags::default()).unwrap();
    assert_eq!(z.encoding(), "skiplist");
    for s in [2.0, -0.0, f64::NEG_INFINITY, 7.5] {
        assert_eq!(z.add(b"only", s, AddFlags::default()), Ok(AddOutcome::Updated(normalize(s))));
        z.check();
        assert_eq!(own(z.iter()), vec![(b"only".to_vec(), normalize(s))]);
    }
    assert_eq!(z.add(b"only", 7.5, AddFlags::default()), Ok(AddOutcome::Unchanged(7.5)));
    assert_eq!(
        z.add(b"only", f64::INFINITY, AddFlags { incr: true, ..AddFlags::default() }),
        Ok(AddOutcome::Updated(f64::INFINITY))
    );
    assert_eq!(z.add(b"only", f64::NEG_INFINITY, AddFlags { incr: true, ..AddFlags::default() }), Err(ERR_NAN));
    z.check();
}
