//! The large sorted set (Redis's "skiplist" encoding): elements
//! `[score f64 LE][member]` in an [`Arena`], a SwissTable of their 4-byte
//! handles keyed by member (foldhash, seeded per set), and the
//! order-statistic [`Tree`] of the same handles ordered by
//! (score, member bytes).
//!
//! Per member: its bytes + 8 (score) + 1–2 (arena header), 5 bytes of
//! table slot at 7/8 load (up to twice that just after the table
//! doubles), 4–5 bytes of tree leaf. Redis: a 24-byte dict entry, an sds,
//! a skiplist node with its level array, malloc's rounding (125 B for a
//! 17-byte member).
//!
//! An update (ZADD of a new score, ZINCRBY) rewrites the score in place:
//! the element keeps its length, so its handle, table slot and arena
//! position stay, and only the tree moves it ([`Large::rescore`]).
//!
//! Removal frees the element and runs one bounded arena compaction step;
//! the handles it moves are re-pointed in the table (by member hash and
//! old handle, no reads) and in the tree (descending by the moved key; a
//! comparison that meets another moved handle reads it at its new
//! place, since the old page is gone by then).

use std::cmp::Ordering;
use std::hash::BuildHasher;

use foldhash::fast::RandomState;
use hashbrown::HashTable;

use super::tree::{Cursor, Tree};
use crate::arena::{Arena, Handle};

/// The index shrinks (to twice its members) at this many slots per member.
const SHRINK_FILL_RATIO: usize = 8;
/// Below this many slots the index is not shrunk.
const SHRINK_SLOTS_MIN: usize = 64;

/// Bytes of the score in front of an element's member.
pub(crate) const SCORE_BYTES: usize = 8;

#[inline]
pub(crate) fn elem_score(e: &[u8]) -> f64 {
    match e.first_chunk::<SCORE_BYTES>() {
        Some(b) => f64::from_le_bytes(*b),
        None => unreachable!("zset element shorter than its score"),
    }
}

#[inline]
pub(crate) fn elem_member(e: &[u8]) -> &[u8] {
    &e[SCORE_BYTES..]
}

/// Orders element `e` against the key (score, member). Scores are never
/// NaN, and -0 is stored as +0, so `partial_cmp` is total here.
#[inline]
pub(crate) fn cmp_key(e: &[u8], score: f64, member: &[u8]) -> Ordering {
    elem_score(e).partial_cmp(&score).unwrap_or(Ordering::Equal).then_with(|| elem_member(e).cmp(member))
}

/// Orders the element at `h` against (score, member), using the score the
/// tree already knows when it differs from the key's (no arena read).
#[inline]
fn cmp_hinted(arena: &Arena, h: Handle, hint: Option<f64>, score: f64, member: &[u8]) -> Ordering {
    match hint {
        Some(s) if s != score => s.partial_cmp(&score).unwrap_or(Ordering::Equal),
        _ => cmp_key(arena.get(h), score, member),
    }
}

pub(crate) struct Large {
    pub(crate) arena: Arena,
    index: HashTable<Handle>,
    state: RandomState,
    pub(crate) tree: Tree,
}

impl std::fmt::Debug for Large {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Large").field("len", &self.len()).finish()
    }
}

impl Large {
    pub(crate) fn new() -> Large {
        Large { arena: Arena::new(), index: HashTable::new(), state: RandomState::default(), tree: Tree::new() }
    }

    /// A copy built member by member (O(n log n)).
    pub(crate) fn rebuild(&self) -> Large {
        let mut l = Large::new();
        for h in self.tree.iter() {
            let e = self.arena.get(h);
            l.insert_new(elem_member(e), elem_score(e));
        }
        l
    }

    pub(crate) fn len(&self) -> usize {
        self.tree.len()
    }

    /// Heap bytes held (O(1)).
    pub(crate) fn mem_bytes(&self) -> usize {
        self.arena.mem_bytes() + self.index.allocation_size() + self.tree.mem_bytes()
    }

    #[inline]
    pub(crate) fn get(&self, h: Handle) -> (&[u8], f64) {
        let e = self.arena.get(h);
        (elem_member(e), elem_score(e))
    }

    /// The member table's hash of `member` (for the `*_hashed` calls, so
    /// a ZADD hashes its member once).
    #[inline]
    pub(crate) fn hash(&self, member: &[u8]) -> u64 {
        self.state.hash_one(member)
    }

    pub(crate) fn find(&self, member: &[u8]) -> Option<Handle> {
        self.find_hashed(self.hash(member), member)
    }

    /// [`Large::find`] with the member's [`Large::hash`].
    pub(crate) fn find_hashed(&self, hash: u64, member: &[u8]) -> Option<Handle> {
        let arena = &self.arena;
        self.index.find(hash, |&h| elem_member(arena.get(h)) == member).copied()
    }

    pub(crate) fn score(&self, member: &[u8]) -> Option<f64> {
        self.find(member).map(|h| self.score_at(h))
    }

    /// The score of the member at `h`.
    #[inline]
    pub(crate) fn score_at(&self, h: Handle) -> f64 {
        elem_score(self.arena.get(h))
    }

    /// Adds a member that is not in the set.
    pub(crate) fn insert_new(&mut self, member: &[u8], score: f64) {
        self.insert_new_hashed(self.hash(member), member, score);
    }

    /// [`Large::insert_new`] with the member's [`Large::hash`].
    pub(crate) fn insert_new_hashed(&mut self, hash: u64, member: &[u8], score: f64) {
        let h = self.arena.alloc(&[&score.to_le_bytes(), member]);
        let Large { arena, index, state, tree } = self;
        tree.insert(h, &mut |x, hint| cmp_hinted(arena, x, hint, score, member), &|x| elem_score(arena.get(x)));
        index.insert_unique(hash, h, |&x| state.hash_one(elem_member(arena.get(x))));
    }

    /// Removes `member`; its score if it was there.
    pub(crate) fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let hash = self.state.hash_one(member);
        let Large { arena, index, tree, .. } = self;
        let a = arena;
        let entry = index.find_entry(hash, |&h| elem_member(a.get(h)) == member).ok()?;
        let (h, _) = entry.remove();
        let score = elem_score(a.get(h));
        tree.remove(h, &mut |x, hint| cmp_hinted(a, x, hint, score, member), &|x| elem_score(a.get(x)));
        self.arena.free(h);
        self.compact();
        self.maybe_shrink();
        Some(score)
    }

    /// Removes the member of rank `r` (< len) and returns it with its
    /// score: the tree descends by its counts and the index finds the
    /// slot by hash and handle, so the only element read is the one
    /// removed (ZPOPMIN, ZPOPMAX, ZREMRANGEBYRANK).
    pub(crate) fn remove_rank(&mut self, r: usize) -> (Vec<u8>, f64) {
        let Large { arena, index, state, tree } = self;
        let a = &*arena;
        let h = tree.remove_rank(r, &|x| elem_score(a.get(x)));
        let e = a.get(h);
        let (member, score) = (elem_member(e).to_vec(), elem_score(e));
        match index.find_entry(state.hash_one(&member), |&x| x == h) {
            Ok(slot) => {
                slot.remove();
            }
            Err(_) => unreachable!("zset: a member in the tree is in the index"),
        }
        self.arena.free(h);
        self.compact();
        self.maybe_shrink();
        (member, score)
    }

    /// Moves the member at `h`, whose score is `old`, to `score`.
    ///
    /// The element `[score][member]` keeps its length, so its score is
    /// rewritten in place: the handle, the member table's slot and the
    /// arena position (ZSCAN's order) all stay, nothing is freed, and no
    /// compaction follows. Only the tree moves the handle: out by the old
    /// key (while the arena still holds the old score), in by the new one.
    /// No separator names `h` in between (a removal replaces every
    /// separator that named the removed element), so none keeps the old
    /// score.
    pub(crate) fn rescore(&mut self, h: Handle, old: f64, score: f64) {
        let Large { arena, tree, .. } = self;
        {
            let a = &*arena;
            let member = elem_member(a.get(h));
            tree.remove(h, &mut |x, hint| cmp_hinted(a, x, hint, old, member), &|x| elem_score(a.get(x)));
        }
        arena.get_mut(h)[..SCORE_BYTES].copy_from_slice(&score.to_le_bytes());
        let a = &*arena;
        let member = elem_member(a.get(h));
        tree.insert(h, &mut |x, hint| cmp_hinted(a, x, hint, score, member), &|x| elem_score(a.get(x)));
    }

    /// The member at rank `r` (< len).
    pub(crate) fn at_rank(&self, r: usize) -> (&[u8], f64) {
        self.get(self.tree.at(self.tree.select(r)))
    }

    pub(crate) fn cursor(&self, r: usize) -> Cursor {
        self.tree.select(r)
    }

    /// Members before the first for which `before` is false.
    pub(crate) fn bound(&self, before: &mut dyn FnMut(&[u8], f64) -> bool) -> usize {
        let arena = &self.arena;
        self.tree.bound(&mut |h, _| {
            let e = arena.get(h);
            before(elem_member(e), elem_score(e))
        })
    }

    /// Members before the first whose score fails `before` (a score-only
    /// bound: inner nodes need no arena read).
    pub(crate) fn bound_score(&self, before: &mut dyn FnMut(f64) -> bool) -> usize {
        let arena = &self.arena;
        self.tree.bound(&mut |h, hint| before(hint.unwrap_or_else(|| elem_score(arena.get(h)))))
    }

    /// Members ordered before (score, member).
    pub(crate) fn rank_of(&self, score: f64, member: &[u8]) -> usize {
        let arena = &self.arena;
        self.tree.bound(&mut |h, hint| cmp_hinted(arena, h, hint, score, member).is_lt())
    }

    /// One bounded arena compaction step, re-pointing moved handles.
    fn compact(&mut self) {
        if !self.arena.needs_compaction() {
            return;
        }
        let mut moved: Vec<(Handle, Handle)> = Vec::new();
        // compact_step walks its page in offset order: `moved` comes sorted
        // by old handle, as the binary search below needs.
        self.arena.compact_step(&mut |old, new, _| moved.push((old, new)));
        debug_assert!(moved.windows(2).all(|w| w[0].0 < w[1].0));
        // Every moved element came from one page (compact_step's bound):
        // a handle elsewhere needs no lookup, and most comparisons of a
        // re-pointing descent meet such handles.
        let Some(victim) = moved.first().map(|m| m.0.page()) else { return };
        let resolve = |h: Handle| {
            if h.page() != victim {
                return h;
            }
            match moved.binary_search_by_key(&h, |m| m.0) {
                Ok(i) => moved[i].1,
                Err(_) => h,
            }
        };
        let Large { arena, index, state, tree } = self;
        // Bounded: COMPACT_MOVES_MAX elements (arena::compact_step's bound).
        for &(old, new) in &moved {
            let e = arena.get(new);
            let (member, score) = (elem_member(e), elem_score(e));
            if let Some(slot) = index.find_mut(state.hash_one(member), |&h| h == old) {
                *slot = new;
            }
            tree.repoint(old, new, &mut |x, hint| cmp_hinted(arena, resolve(x), hint, score, member));
        }
    }

    fn maybe_shrink(&mut self) {
        let cap = self.index.capacity();
        if cap > SHRINK_SLOTS_MIN && self.index.len() * SHRINK_FILL_RATIO <= cap {
            let (arena, state) = (&self.arena, &self.state);
            self.index.shrink_to(self.index.len() * 2, |&x| state.hash_one(elem_member(arena.get(x))));
        }
    }

    /// One ZSCAN step over arena positions (see `Arena::scan`).
    pub(crate) fn scan(&self, cursor: u64, count: usize, f: &mut dyn FnMut(&[u8], f64)) -> u64 {
        self.arena.scan(cursor, count, &mut |_, e| f(elem_member(e), elem_score(e)))
    }

    #[cfg(test)]
    pub(crate) fn check(&self) {
        let arena = &self.arena;
        self.tree.check(
            &mut |a, b| {
                let (ea, eb) = (arena.get(a), arena.get(b));
                cmp_key(ea, elem_score(eb), elem_member(eb))
            },
            &|h| elem_score(arena.get(h)),
        );
        assert_eq!(self.index.len(), self.tree.len());
        assert_eq!(arena.len(), self.tree.len());
        for h in self.tree.iter() {
            assert_eq!(self.find(elem_member(arena.get(h))), Some(h));
        }
    }
}
