//! Sorted set: Redis's ZADD … ZSCAN over two forms.
//!
//! * **Compact** (Redis's listpack): one [`pack`] of `member, score`
//!   entry pairs sorted by (score, member), the score as 8 bytes of f64
//!   LE, while the set has at most `zset-max-listpack-entries` members
//!   and none longer than `zset-max-listpack-value`. The server keeps it
//!   as an item's value and reads it in place through [`ZView::packed`].
//! * **Large** (Redis's "skiplist" encoding, named so for OBJECT
//!   ENCODING): arena elements `[score][member]`, a member table of 4-byte
//!   handles and an order-statistic B+tree of the same handles
//!   (`zset/large.rs`, `zset/tree.rs`): ZSCORE O(1), ZADD/ZREM/ZRANK and
//!   every range bound O(log n), a range of k members O(log n + k).
//!
//! Measured (tests/mem_zset_list.rs, counting allocator): 41.0 B per
//! member for 10^6 members `member:%010d` added in order, 43.3 B in a
//! shuffled order (Redis 7.0.15: 125 B). Removals free arena space by
//! compaction once a page is more than half dead, so a set that lost half
//! its members evenly may hold up to twice its live bytes.
//!
//! Scores are f64: NaN is refused, ±inf allowed, -0 stored as +0 (Redis's
//! listpack does that; its skiplist keeps -0 and prints "-0" — a
//! difference only visible after `zset-max-listpack-entries 0`). Equal
//! scores order by member bytes (memcmp). A set converts compact → large
//! once (on an add past the thresholds), never back, except that stored
//! results (ZUNIONSTORE…, ZRANGESTORE) pick their form from their size,
//! as Redis's `zsetConvertToListpackIfNeeded` does.
//!
//! Lex ranges assume equal scores, as Redis documents; with mixed scores
//! the answer is deterministic but not Redis's (which differs between its
//! own two encodings too).

mod algebra;
mod large;
mod parse;
mod tree;

use std::collections::HashSet;

pub use algebra::{diff, inter, union, Aggregate, Scored};
pub use parse::{
    format_score, format_score_to, normalize, parse_float, parse_score, strtod, LexBound, LexRange, ScoreRange,
    ERR_LEX_RANGE, ERR_NOT_FLOAT, ERR_RANGE_NOT_FLOAT, SCORE_TEXT_MAX,
};

use large::Large;
use tree::Cursor;

use crate::{pack, varint, Corrupt, Thresholds};

/// First byte of [`ZSet::encode`]'s output (format version 1).
pub const ENCODING_TAG: u8 = 0x5A;

/// Bytes of a score in the compact form and in snapshots (f64 LE).
pub const SCORE_BYTES: usize = 8;

/// ZADD's option errors (Redis 7.0's texts).
pub const ERR_XX_NX: &str = "ERR XX and NX options at the same time are not compatible";
pub const ERR_GT_LT_NX: &str = "ERR GT, LT, and/or NX options at the same time are not compatible";
pub const ERR_INCR_PAIRS: &str = "ERR INCR option supports a single increment-element pair";
/// ZADD INCR / ZINCRBY producing NaN (inf + -inf).
pub const ERR_NAN: &str = "ERR resulting score is not a number (NaN)";

/// ZADD's options (CH only changes which outcomes the server counts).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AddFlags {
    pub nx: bool,
    pub xx: bool,
    pub gt: bool,
    pub lt: bool,
    pub incr: bool,
}

impl AddFlags {
    /// Redis's checks, in its order, for a ZADD with `pairs` score-member
    /// pairs.
    pub fn check(&self, pairs: usize) -> Result<(), &'static str> {
        if self.nx && self.xx {
            return Err(ERR_XX_NX);
        }
        if (self.nx && (self.gt || self.lt)) || (self.gt && self.lt) {
            return Err(ERR_GT_LT_NX);
        }
        if self.incr && pairs > 1 {
            return Err(ERR_INCR_PAIRS);
        }
        Ok(())
    }
}

/// What an add did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AddOutcome {
    /// New member, with this score.
    Added(f64),
    /// Existing member moved to this score (CH counts it).
    Updated(f64),
    /// Existing member, score unchanged (INCR's reply is this score).
    Unchanged(f64),
    /// NX, XX, GT or LT refused it (ZADD INCR replies nil).
    Skipped,
}

/// What an add does to a member, decided from its current score alone.
enum Plan {
    /// Absent: insert with this score.
    Insert(f64),
    /// Present: move to this (different) score.
    Move(f64),
    /// Nothing to change.
    Done(AddOutcome),
}

/// Redis's `zsetAdd` rules: what ZADD (or ZINCRBY, `flags.incr`, with
/// `score` the increment) does to a member whose current score is `cur`
/// (None: absent). `score` is normalized.
fn plan(cur: Option<f64>, score: f64, flags: AddFlags) -> Result<Plan, &'static str> {
    let Some(cur) = cur else {
        return Ok(if flags.xx { Plan::Done(AddOutcome::Skipped) } else { Plan::Insert(score) });
    };
    if flags.nx {
        return Ok(Plan::Done(AddOutcome::Skipped));
    }
    let new = if flags.incr {
        let v = cur + score;
        if v.is_nan() {
            return Err(ERR_NAN);
        }
        normalize(v)
    } else {
        score
    };
    if (flags.lt && new >= cur) || (flags.gt && new <= cur) {
        return Ok(Plan::Done(AddOutcome::Skipped));
    }
    if new == cur {
        return Ok(Plan::Done(AddOutcome::Unchanged(cur)));
    }
    Ok(Plan::Move(new))
}

/// A sorted set.
pub struct ZSet {
    max_entries: usize,
    max_value: usize,
    repr: Repr,
}

enum Repr {
    /// A pack of `member, score` pairs.
    Compact(Vec<u8>),
    Large(Box<Large>),
}

impl std::fmt::Debug for ZSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZSet").field("encoding", &self.encoding()).field("len", &self.len()).finish()
    }
}

#[inline]
fn score_from(e: &[u8]) -> Option<f64> {
    let b: [u8; SCORE_BYTES] = e.try_into().ok()?;
    Some(f64::from_le_bytes(b))
}

/// Orders (s1, m1) against (s2, m2).
#[inline]
fn cmp_pair(s1: f64, m1: &[u8], s2: f64, m2: &[u8]) -> std::cmp::Ordering {
    s1.partial_cmp(&s2).unwrap_or(std::cmp::Ordering::Equal).then_with(|| m1.cmp(m2))
}

/// The pairs of a compact set with each pair's offset; stops (never
/// panics) at bytes that are not pairs.
fn packed_pairs(p: &[u8]) -> impl Iterator<Item = (usize, &[u8], f64)> + '_ {
    let mut it = pack::iter(p);
    std::iter::from_fn(move || {
        let off = it.pos().offset;
        let m = it.next()?;
        let s = score_from(it.next()?)?;
        Some((off, m, s))
    })
}

/// ZCARD of a compact set's bytes, read in place (garbage: a wrong count,
/// never a panic). Every other query: [`ZView::packed`].
pub fn packed_len(bytes: &[u8]) -> usize {
    ZView::packed(bytes).len()
}

/// ZSCORE on a compact set's bytes, read in place.
pub fn packed_score(bytes: &[u8], member: &[u8]) -> Option<f64> {
    ZView::packed(bytes).score(member)
}

/// ZRANGE by rank on a compact set's bytes, read in place.
pub fn packed_range(bytes: &[u8], start: i64, stop: i64, rev: bool) -> ZRange<'_> {
    ZView::packed(bytes).range_by_rank(start, stop, rev)
}

/// A borrowed, read-only sorted set: a compact form's bytes (lock-free
/// reads from an item) or a large set. Every ZSet read goes through it.
#[derive(Clone, Copy, Debug)]
pub struct ZView<'a>(View<'a>);

#[derive(Clone, Copy, Debug)]
enum View<'a> {
    Packed(&'a [u8]),
    Large(&'a Large),
}

impl<'a> ZView<'a> {
    /// Reads compact bytes in place (garbage reads as fewer or no members,
    /// never a panic).
    pub fn packed(bytes: &'a [u8]) -> ZView<'a> {
        ZView(View::Packed(bytes))
    }

    /// ZCARD.
    pub fn len(&self) -> usize {
        match self.0 {
            View::Packed(p) => pack::count(p) / 2,
            View::Large(l) => l.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// ZSCORE.
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        match self.0 {
            View::Packed(p) => {
                let pos = pack::find(p, 2, member)?;
                let (_, next) = pack::entry_at(p, pos.offset)?;
                score_from(pack::entry_at(p, next)?.0)
            }
            View::Large(l) => l.score(member),
        }
    }

    /// The member at rank `r`, if `r < len`.
    pub fn at(&self, r: usize) -> Option<(&'a [u8], f64)> {
        match self.0 {
            View::Packed(p) => packed_pairs(p).nth(r).map(|(_, m, s)| (m, s)),
            View::Large(l) => (r < l.len()).then(|| l.at_rank(r)),
        }
    }

    /// How many leading members satisfy `before` (true on a prefix).
    fn bound(&self, before: &mut dyn FnMut(&[u8], f64) -> bool) -> usize {
        match self.0 {
            View::Packed(p) => packed_pairs(p).take_while(|&(_, m, s)| before(m, s)).count(),
            View::Large(l) => l.bound(before),
        }
    }

    /// How many leading members have a score satisfying `before`.
    fn bound_score(&self, before: &mut dyn FnMut(f64) -> bool) -> usize {
        match self.0 {
            View::Packed(p) => packed_pairs(p).take_while(|&(_, _, s)| before(s)).count(),
            View::Large(l) => l.bound_score(before),
        }
    }

    /// ZRANK / ZREVRANK.
    pub fn rank(&self, member: &[u8], rev: bool) -> Option<usize> {
        let s = self.score(member)?;
        let r = match self.0 {
            View::Packed(_) => self.bound(&mut |m, x| cmp_pair(x, m, s, member).is_lt()),
            View::Large(l) => l.rank_of(s, member),
        };
        Some(if rev { self.len() - 1 - r } else { r })
    }

    /// Ranks `[lo, hi)` of the members within `range`.
    pub fn score_ranks(&self, range: &ScoreRange) -> (usize, usize) {
        let lo = self.bound_score(&mut |s| !range.above_min(s));
        let hi = self.bound_score(&mut |s| range.below_max(s));
        (lo, hi.max(lo))
    }

    /// Ranks `[lo, hi)` of the members within the lex `range`.
    pub fn lex_ranks(&self, range: &LexRange<'_>) -> (usize, usize) {
        let lo = self.bound(&mut |m, _| !range.above_min(m));
        let hi = self.bound(&mut |m, _| range.below_max(m));
        (lo, hi.max(lo))
    }

    /// ZCOUNT.
    pub fn count_in(&self, range: &ScoreRange) -> usize {
        let (lo, hi) = self.score_ranks(range);
        hi - lo
    }

    /// ZLEXCOUNT.
    pub fn lex_count(&self, range: &LexRange<'_>) -> usize {
        let (lo, hi) = self.lex_ranks(range);
        hi - lo
    }

    /// Members of ranks `[lo, hi)`, ascending, or descending from `hi - 1`
    /// if `rev`.
    fn ranks(&self, lo: usize, hi: usize, rev: bool) -> ZRange<'a> {
        let hi = hi.min(self.len());
        if lo >= hi {
            return ZRange(RangeState::Packed(Vec::new().into_iter()));
        }
        match self.0 {
            View::Packed(p) => {
                let mut v: Vec<(&[u8], f64)> = packed_pairs(p).skip(lo).take(hi - lo).map(|(_, m, s)| (m, s)).collect();
                if rev {
                    v.reverse();
                }
                ZRange(RangeState::Packed(v.into_iter()))
            }
            View::Large(l) => ZRange(RangeState::Tree {
                large: l,
                cur: Some(l.cursor(if rev { hi - 1 } else { lo })),
                left: hi - lo,
                rev,
            }),
        }
    }

    /// ZRANGE by rank (Redis's start/stop rules; `rev` counts ranks from
    /// the highest score, as ZREVRANGE).
    pub fn range_by_rank(&self, start: i64, stop: i64, rev: bool) -> ZRange<'a> {
        let len = self.len();
        match crate::list::normalize_range(len, start, stop) {
            None => self.ranks(0, 0, false),
            Some((s, e)) if rev => self.ranks(len - 1 - e, len - s, true),
            Some((s, e)) => self.ranks(s, e + 1, false),
        }
    }

    /// Applies LIMIT to ranks `[lo, hi)`: `offset < 0` is empty, `count <
    /// 0` is all.
    fn limited(&self, lo: usize, hi: usize, rev: bool, offset: i64, count: i64) -> ZRange<'a> {
        if offset < 0 {
            return self.ranks(0, 0, false);
        }
        let off = usize::try_from(offset).unwrap_or(usize::MAX);
        let n = if count < 0 { usize::MAX } else { count as usize };
        if rev {
            let top = hi.saturating_sub(off);
            let bottom = top.saturating_sub(n).max(lo);
            self.ranks(bottom, top.max(bottom), true)
        } else {
            let start = lo.saturating_add(off).min(hi);
            self.ranks(start, start.saturating_add(n).min(hi), false)
        }
    }

    /// ZRANGEBYSCORE / ZREVRANGEBYSCORE / ZRANGE BYSCORE [REV] [LIMIT]
    /// (`offset` 0 and `count` -1 without LIMIT).
    pub fn range_by_score(&self, range: &ScoreRange, rev: bool, offset: i64, count: i64) -> ZRange<'a> {
        let (lo, hi) = self.score_ranks(range);
        self.limited(lo, hi, rev, offset, count)
    }

    /// ZRANGEBYLEX / ZREVRANGEBYLEX / ZRANGE BYLEX [REV] [LIMIT].
    pub fn range_by_lex(&self, range: &LexRange<'_>, rev: bool, offset: i64, count: i64) -> ZRange<'a> {
        let (lo, hi) = self.lex_ranks(range);
        self.limited(lo, hi, rev, offset, count)
    }

    /// Every member, ascending.
    pub fn iter(&self) -> ZRange<'a> {
        self.ranks(0, self.len(), false)
    }
}

/// Borrowed members with scores, in a range's order.
#[derive(Debug)]
pub struct ZRange<'a>(RangeState<'a>);

#[derive(Debug)]
enum RangeState<'a> {
    Packed(std::vec::IntoIter<(&'a [u8], f64)>),
    Tree { large: &'a Large, cur: Option<Cursor>, left: usize, rev: bool },
}

impl<'a> Iterator for ZRange<'a> {
    type Item = (&'a [u8], f64);
    fn next(&mut self) -> Option<(&'a [u8], f64)> {
        match &mut self.0 {
            RangeState::Packed(it) => it.next(),
            RangeState::Tree { large, cur, left, rev } => {
                if *left == 0 {
                    return None;
                }
                let c = (*cur)?;
                *left -= 1;
                *cur = if *rev { large.tree.prev(c) } else { large.tree.next(c) };
                Some(large.get(large.tree.at(c)))
            }
        }
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            RangeState::Packed(it) => it.size_hint(),
            RangeState::Tree { left, .. } => (*left, Some(*left)),
        }
    }
}

/// Owned members with scores (pops, removals, random picks).
pub type Pairs = Vec<(Vec<u8>, f64)>;

fn own<'a>(it: impl Iterator<Item = (&'a [u8], f64)>) -> Pairs {
    it.map(|(m, s)| (m.to_vec(), s)).collect()
}

impl ZSet {
    /// An empty set with `t`'s zset thresholds (kept for its life).
    pub fn new(t: &Thresholds) -> ZSet {
        ZSet {
            max_entries: t.zset_max_listpack_entries,
            max_value: t.zset_max_listpack_value,
            repr: Repr::Compact(pack::new()),
        }
    }

    /// A set of `pairs` (a later duplicate member replaces an earlier
    /// one), compact if it fits the thresholds (ZRANGESTORE, stored set
    /// algebra).
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a [u8], f64)>, t: &Thresholds) -> ZSet {
        let mut v: Vec<(&[u8], f64)> = pairs.into_iter().map(|(m, s)| (m, normalize(s))).collect();
        // Last one wins: stable sort by member, keep the last of each run.
        v.reverse();
        v.sort_by(|a, b| a.0.cmp(b.0));
        v.dedup_by(|later, first| later.0 == first.0);
        v.sort_by(|a, b| cmp_pair(a.1, a.0, b.1, b.0));
        let mut z = ZSet::new(t);
        let small = v.len() <= z.max_entries && v.iter().all(|(m, _)| m.len() <= z.max_value);
        if small {
            let mut p = pack::new();
            let entries: Vec<[u8; SCORE_BYTES]> = v.iter().map(|(_, s)| s.to_le_bytes()).collect();
            let flat: Vec<&[u8]> = v.iter().zip(&entries).flat_map(|((m, _), s)| [*m, &s[..]]).collect();
            pack::push(&mut p, &flat);
            z.repr = Repr::Compact(p);
        } else {
            let mut l = Large::new();
            // Ascending inserts: the tree's leaves fill completely.
            for (m, s) in v {
                l.insert_new(m, s);
            }
            z.repr = Repr::Large(Box::new(l));
        }
        z
    }

    /// A read view (all queries).
    pub fn view(&self) -> ZView<'_> {
        match &self.repr {
            Repr::Compact(p) => ZView(View::Packed(p)),
            Repr::Large(l) => ZView(View::Large(l)),
        }
    }

    /// The compact form's bytes, or None once large.
    pub fn packed(&self) -> Option<&[u8]> {
        match &self.repr {
            Repr::Compact(p) => Some(p),
            Repr::Large(_) => None,
        }
    }

    /// The compact bytes, moved out (see `Hash::take_packed`).
    pub(crate) fn take_packed(&mut self) -> Option<Vec<u8>> {
        match &mut self.repr {
            Repr::Compact(p) => Some(std::mem::take(p)),
            Repr::Large(_) => None,
        }
    }

    /// Adopts compact bytes (as [`ZSet::packed`] gave them): Corrupt unless
    /// they are `member, score` pairs strictly ascending by (score,
    /// member), unique, no NaN or -0. Past `t`'s thresholds the set
    /// becomes large.
    pub fn from_packed(bytes: Vec<u8>, t: &Thresholds) -> Result<ZSet, Corrupt> {
        let n = pack::validate(&bytes)?;
        if n % 2 != 0 {
            return Err(Corrupt);
        }
        let mut seen = HashSet::with_capacity(n / 2);
        let mut prev: Option<(&[u8], f64)> = None;
        let mut pairs = 0;
        for (_, m, s) in packed_pairs(&bytes) {
            if s.is_nan() || (s == 0.0 && s.is_sign_negative()) || !seen.insert(m) {
                return Err(Corrupt);
            }
            if let Some((pm, ps)) = prev {
                if !cmp_pair(ps, pm, s, m).is_lt() {
                    return Err(Corrupt);
                }
            }
            prev = Some((m, s));
            pairs += 1;
        }
        if pairs != n / 2 {
            return Err(Corrupt);
        }
        let mut z = ZSet::new(t);
        let small = pairs <= z.max_entries && seen.iter().all(|m| m.len() <= z.max_value);
        drop(seen);
        if small {
            z.repr = Repr::Compact(bytes);
        } else {
            z = ZSet::from_pairs(packed_pairs(&bytes).map(|(_, m, s)| (m, s)), t);
        }
        Ok(z)
    }

    /// [`ZSet::from_packed`] for bytes this build packed (the store's; see
    /// `Hash::from_packed_trusted`): adopted as they are, without the
    /// walk that checked order and uniqueness through a hash set of every
    /// member (debug builds still run it). A compact set stays compact
    /// even if CONFIG SET lowered the thresholds since, as Redis's
    /// listpack does until its next insert.
    pub fn from_packed_trusted(bytes: Vec<u8>, t: &Thresholds) -> ZSet {
        debug_assert!(ZSet::from_packed(bytes.clone(), t).is_ok(), "trusted bytes that are not a packed zset");
        let mut z = ZSet::new(t);
        z.repr = Repr::Compact(bytes);
        z
    }

    /// OBJECT ENCODING: "listpack" or "skiplist".
    pub fn encoding(&self) -> &'static str {
        match self.repr {
            Repr::Compact(_) => "listpack",
            Repr::Large(_) => "skiplist",
        }
    }

    /// ZCARD.
    pub fn len(&self) -> usize {
        self.view().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes held from the allocator, struct included (O(1)).
    pub fn mem_bytes(&self) -> usize {
        std::mem::size_of::<ZSet>()
            + match &self.repr {
                Repr::Compact(p) => p.capacity(),
                Repr::Large(l) => std::mem::size_of::<Large>() + l.mem_bytes(),
            }
    }

    /// ZSCORE.
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        self.view().score(member)
    }

    /// ZRANK / ZREVRANK.
    pub fn rank(&self, member: &[u8], rev: bool) -> Option<usize> {
        self.view().rank(member, rev)
    }

    fn make_large(&mut self) -> &mut Large {
        if let Repr::Compact(p) = &self.repr {
            let mut l = Large::new();
            // Ascending inserts: full leaves.
            for (_, m, s) in packed_pairs(p) {
                l.insert_new(m, s);
            }
            self.repr = Repr::Large(Box::new(l));
        }
        match &mut self.repr {
            Repr::Large(l) => l,
            Repr::Compact(_) => unreachable!("just converted"),
        }
    }

    /// Inserts a member known absent.
    fn insert_new(&mut self, member: &[u8], score: f64) {
        if let Repr::Compact(p) = &self.repr {
            if pack::count(p) / 2 + 1 > self.max_entries || member.len() > self.max_value {
                self.make_large();
            }
        }
        match &mut self.repr {
            Repr::Compact(p) => {
                let at = packed_pairs(p)
                    .find(|&(_, m, s)| cmp_pair(s, m, score, member).is_gt())
                    .map_or(p.len(), |(off, _, _)| off);
                pack::insert(p, at, &[member, &score.to_le_bytes()]);
            }
            Repr::Large(l) => l.insert_new(member, score),
        }
    }

    /// ZREM of one member; its score if it was there.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        match &mut self.repr {
            Repr::Compact(p) => {
                let pos = pack::find(p, 2, member)?;
                let (_, next) = pack::entry_at(p, pos.offset)?;
                let s = score_from(pack::entry_at(p, next)?.0)?;
                pack::remove(p, pos.offset, 2);
                Some(s)
            }
            Repr::Large(l) => l.remove(member),
        }
    }

    /// ZADD of one pair (score already parsed: not NaN), or ZINCRBY /
    /// ZADD INCR with `flags.incr` (then `score` is the increment).
    /// Err([`ERR_NAN`]) if an increment makes NaN. Redis's `zsetAdd`.
    pub fn add(&mut self, member: &[u8], score: f64, flags: AddFlags) -> Result<AddOutcome, &'static str> {
        let score = normalize(score);
        if let Repr::Large(l) = &mut self.repr {
            // One hash and one table probe for the whole add; an updated
            // member is rescored in place (`Large::rescore`).
            let hash = l.hash(member);
            let found = l.find_hashed(hash, member);
            let cur = found.map(|h| l.score_at(h));
            return Ok(match (plan(cur, score, flags)?, found, cur) {
                (Plan::Insert(s), _, _) => {
                    l.insert_new_hashed(hash, member, s);
                    AddOutcome::Added(s)
                }
                (Plan::Move(s), Some(h), Some(old)) => {
                    l.rescore(h, old, s);
                    AddOutcome::Updated(s)
                }
                (Plan::Move(_), _, _) => unreachable!("zset: a move plans only for a present member"),
                (Plan::Done(o), _, _) => o,
            });
        }
        Ok(match plan(self.score(member), score, flags)? {
            Plan::Insert(s) => {
                self.insert_new(member, s);
                AddOutcome::Added(s)
            }
            Plan::Move(s) => {
                let owned = member.to_vec();
                self.remove(&owned);
                self.insert_new(&owned, s);
                AddOutcome::Updated(s)
            }
            Plan::Done(o) => o,
        })
    }

    /// ZCOUNT.
    pub fn count_in(&self, range: &ScoreRange) -> usize {
        self.view().count_in(range)
    }

    /// ZLEXCOUNT.
    pub fn lex_count(&self, range: &LexRange<'_>) -> usize {
        self.view().lex_count(range)
    }

    /// See [`ZView::range_by_rank`].
    pub fn range_by_rank(&self, start: i64, stop: i64, rev: bool) -> ZRange<'_> {
        self.view().range_by_rank(start, stop, rev)
    }

    /// See [`ZView::range_by_score`].
    pub fn range_by_score(&self, range: &ScoreRange, rev: bool, offset: i64, count: i64) -> ZRange<'_> {
        self.view().range_by_score(range, rev, offset, count)
    }

    /// See [`ZView::range_by_lex`].
    pub fn range_by_lex(&self, range: &LexRange<'_>, rev: bool, offset: i64, count: i64) -> ZRange<'_> {
        self.view().range_by_lex(range, rev, offset, count)
    }

    /// Every member, ascending.
    pub fn iter(&self) -> ZRange<'_> {
        self.view().iter()
    }

    /// Removes ranks `[lo, hi)`; how many.
    fn remove_ranks(&mut self, lo: usize, hi: usize) -> usize {
        let hi = hi.min(self.len());
        if lo >= hi {
            return 0;
        }
        match &mut self.repr {
            Repr::Compact(p) => {
                let off = packed_pairs(p).nth(lo).map_or(p.len(), |(o, _, _)| o);
                pack::remove(p, off, 2 * (hi - lo));
            }
            Repr::Large(l) => {
                // Bounded: hi - lo removals, O(log n) each, by rank.
                for _ in lo..hi {
                    l.remove_rank(lo);
                }
            }
        }
        hi - lo
    }

    /// ZREMRANGEBYRANK.
    pub fn remove_range_by_rank(&mut self, start: i64, stop: i64) -> usize {
        match crate::list::normalize_range(self.len(), start, stop) {
            Some((s, e)) => self.remove_ranks(s, e + 1),
            None => 0,
        }
    }

    /// ZREMRANGEBYSCORE.
    pub fn remove_range_by_score(&mut self, range: &ScoreRange) -> usize {
        let (lo, hi) = self.view().score_ranks(range);
        self.remove_ranks(lo, hi)
    }

    /// ZREMRANGEBYLEX.
    pub fn remove_range_by_lex(&mut self, range: &LexRange<'_>) -> usize {
        let (lo, hi) = self.view().lex_ranks(range);
        self.remove_ranks(lo, hi)
    }

    /// ZPOPMIN with a count: the lowest `count`, lowest first.
    pub fn pop_min(&mut self, count: usize) -> Pairs {
        if let Repr::Large(l) = &mut self.repr {
            // Bounded by count and the size: the front element each time.
            return (0..count.min(l.len())).map(|_| l.remove_rank(0)).collect();
        }
        let out = own(self.view().ranks(0, count, false));
        self.remove_ranks(0, out.len());
        out
    }

    /// ZPOPMAX with a count: the highest `count`, highest first.
    pub fn pop_max(&mut self, count: usize) -> Pairs {
        if let Repr::Large(l) = &mut self.repr {
            // Bounded by count and the size: the back element each time.
            return (0..count.min(l.len())).map(|_| l.remove_rank(l.len() - 1)).collect();
        }
        let len = self.len();
        let lo = len.saturating_sub(count);
        let out = own(self.view().ranks(lo, len, true));
        self.remove_ranks(lo, len);
        out
    }

    /// ZRANDMEMBER with a count (Redis 7.0's cases): 0 → none; negative →
    /// `|count|` picks that may repeat; at least the size → every member
    /// (ascending; Redis returns them in its table's order); otherwise
    /// `count` distinct members (Floyd's sampling: exactly `count` draws).
    /// `rng` returns uniform random words.
    pub fn random_members(&self, count: i64, rng: &mut dyn FnMut() -> u64) -> Pairs {
        let v = self.view();
        let len = v.len();
        if count == 0 || len == 0 {
            return Vec::new();
        }
        if count < 0 {
            let n = count.unsigned_abs() as usize;
            // Bounded: n picks (the server bounds n by the reply it can build).
            return (0..n).filter_map(|_| v.at((rng() % len as u64) as usize)).map(|(m, s)| (m.to_vec(), s)).collect();
        }
        let k = count as usize;
        if k >= len {
            return own(v.iter());
        }
        let mut chosen = HashSet::with_capacity(k);
        let mut order = Vec::with_capacity(k);
        // Floyd: for j in len-k .. len, pick t in 0..=j; take t, or j if
        // t was taken. Exactly k iterations.
        for j in (len - k)..len {
            let t = (rng() % (j as u64 + 1)) as usize;
            let pick = if chosen.insert(t) { t } else { j };
            if pick == j {
                chosen.insert(j);
            }
            order.push(pick);
        }
        match &self.repr {
            Repr::Compact(p) => {
                let all: Vec<(&[u8], f64)> = packed_pairs(p).map(|(_, m, s)| (m, s)).collect();
                order.into_iter().filter_map(|r| all.get(r)).map(|(m, s)| (m.to_vec(), *s)).collect()
            }
            Repr::Large(_) => order.into_iter().filter_map(|r| v.at(r)).map(|(m, s)| (m.to_vec(), s)).collect(),
        }
    }

    /// One ZSCAN step: calls `f` on members from `cursor` on (about
    /// `count`; a compact set gives all at once, as Redis does) and returns
    /// the next cursor, 0 at the end. A member present for the whole scan
    /// is reported at least once.
    pub fn scan(&self, cursor: u64, count: usize, f: &mut dyn FnMut(&[u8], f64)) -> u64 {
        match &self.repr {
            Repr::Compact(p) => {
                for (_, m, s) in packed_pairs(p) {
                    f(m, s);
                }
                0
            }
            Repr::Large(l) => l.scan(cursor, count, f),
        }
    }

    /// A deep copy (COPY, and the server's copy-on-write of a compact
    /// value is the bytes themselves).
    pub fn duplicate(&self) -> ZSet {
        ZSet {
            max_entries: self.max_entries,
            max_value: self.max_value,
            repr: match &self.repr {
                Repr::Compact(p) => Repr::Compact(p.clone()),
                Repr::Large(l) => Repr::Large(Box::new(l.rebuild())),
            },
        }
    }

    /// The snapshot form: `[ENCODING_TAG][varint n]([varint len][member][f64 LE])*`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.push(ENCODING_TAG);
        varint::put(out, self.len() as u64);
        for (m, s) in self.iter() {
            varint::put(out, m.len() as u64);
            out.extend_from_slice(m);
            out.extend_from_slice(&s.to_le_bytes());
        }
    }

    /// Reads [`ZSet::encode`]'s form; Corrupt (never a panic) on anything
    /// else, including NaN scores and repeated members.
    pub fn decode(bytes: &[u8], t: &Thresholds) -> Result<ZSet, Corrupt> {
        let (&tag, rest) = bytes.split_first().ok_or(Corrupt)?;
        if tag != ENCODING_TAG {
            return Err(Corrupt);
        }
        let (n, w) = varint::get(rest).ok_or(Corrupt)?;
        let body = &rest[w..];
        // A pair takes at least 1 + SCORE_BYTES bytes.
        if n > (body.len() / (1 + SCORE_BYTES)) as u64 {
            return Err(Corrupt);
        }
        let mut pairs = Vec::with_capacity(n as usize);
        let mut at = 0;
        // Bounded by n, itself bounded by the bytes.
        for _ in 0..n {
            let (len, w) = varint::get(&body[at..]).ok_or(Corrupt)?;
            let start = at + w;
            let end = usize::try_from(len).ok().and_then(|l| start.checked_add(l)).ok_or(Corrupt)?;
            let m = body.get(start..end).ok_or(Corrupt)?;
            let s = score_from(body.get(end..end + SCORE_BYTES).ok_or(Corrupt)?).ok_or(Corrupt)?;
            if s.is_nan() {
                return Err(Corrupt);
            }
            pairs.push((m, s));
            at = end + SCORE_BYTES;
        }
        if at != body.len() {
            return Err(Corrupt);
        }
        let distinct: HashSet<&[u8]> = pairs.iter().map(|p| p.0).collect();
        if distinct.len() != pairs.len() {
            return Err(Corrupt);
        }
        Ok(ZSet::from_pairs(pairs, t))
    }

    #[cfg(test)]
    fn check(&self) {
        if let Repr::Large(l) = &self.repr {
            l.check();
        }
    }
}

#[cfg(test)]
mod tests;
