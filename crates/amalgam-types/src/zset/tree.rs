//! An order-statistic B+tree of arena handles: the sorted set's order.
//!
//! ```text
//! inner:  kids[i]   counts[i] (elements under kid i)   mins[i] (its first handle + score)
//! leaf:   items: [Handle; <= LEAF_MAX]   prev/next leaf links
//! ```
//! Leaves store no keys: comparisons read the element an arena handle
//! addresses, through a caller's predicate. Separators carry their
//! element's score too, so a descent reads the arena only at ties and in
//! the leaf (inner nodes are ~1% of the handles: 12 bytes a child more). Each inner node keeps, per
//! child, the subtree's element count (rank in O(height × INNER_MAX)) and
//! its first handle (the separator). A separator is always a live element:
//! removing a subtree's first element returns the new first one up the
//! path, and arena compaction re-points moved handles ([`Tree::repoint`]).
//!
//! * Insert: descend to the last child whose first element is before the
//!   key; a full leaf splits in halves, except at either end of the leaf,
//!   where the new element starts a leaf of its own (so ascending or
//!   descending inserts leave full leaves: 4 bytes per element).
//! * Remove: a node under a quarter full merges with a neighbour when
//!   both fit one node, so any two neighbours hold more than a quarter of
//!   a node between them. The descent goes by key (ZREM: comparisons
//!   read the arena in inner nodes only at ties; in the leaf a scan finds
//!   the handle itself) or by rank ([`Tree::remove_rank`]: the counts alone,
//!   so ZPOPMIN reads no element on its way to the front leaf).
//! * Height: log_{INNER_MAX/4..INNER_MAX}(n / leaf fill): 4 levels for
//!   10^6 elements. Every loop below is bounded by the height or a node's
//!   size.

use std::cmp::Ordering;

use crate::arena::Handle;

/// Handles per leaf (512 bytes).
pub(crate) const LEAF_MAX: usize = 128;
/// Children per inner node.
pub(crate) const INNER_MAX: usize = 64;
/// A node with fewer entries than this tries to merge with a neighbour.
const LEAF_MIN: usize = LEAF_MAX / 4;
const INNER_MIN: usize = INNER_MAX / 4;

const _: () = assert!(LEAF_MIN >= 1 && INNER_MIN >= 2);

/// No leaf (end of the leaf chain).
const NIL: u32 = u32::MAX;

#[derive(Clone, Debug, Default)]
struct Leaf {
    /// Sorted; capacity exactly LEAF_MAX while the leaf is in use.
    items: Vec<Handle>,
    prev: u32,
    next: u32,
}

#[derive(Clone, Debug, Default)]
struct Inner {
    kids: Vec<u32>,
    counts: Vec<u32>,
    mins: Vec<Sep>,
}

/// A separator: the first handle under a child, and its score.
#[derive(Clone, Copy, Debug)]
struct Sep {
    h: Handle,
    score: f64,
}

/// Orders an element (handle, and its score when the tree knows it)
/// against the key being looked for. The tree's writes are generic over
/// it, so each caller's comparison is compiled into the descent's binary
/// searches (no call through a pointer per comparison).
pub(crate) trait Cmp: FnMut(Handle, Option<f64>) -> Ordering {}
impl<F: FnMut(Handle, Option<f64>) -> Ordering> Cmp for F {}

/// [`Target`]'s comparison type when it descends by rank (never called).
type NoCmp = fn(Handle, Option<f64>) -> Ordering;
/// An element's score (read from the arena).
pub(crate) type ScoreOf<'a> = &'a dyn Fn(Handle) -> f64;

/// What a removal descends to: an element by its key, or a rank
/// (counted down to the rank inside the node the descent is at).
enum Target<'a, C: Cmp> {
    Key(Handle, &'a mut C),
    Rank(usize),
}

/// A position: leaf and index in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Cursor {
    leaf: u32,
    idx: u32,
}

#[derive(Clone, Debug)]
pub(crate) struct Tree {
    leaves: Vec<Leaf>,
    free_leaves: Vec<u32>,
    inners: Vec<Inner>,
    free_inners: Vec<u32>,
    /// A leaf id when `height == 0`, else an inner id.
    root: u32,
    height: u32,
    len: usize,
    first: u32,
    last: u32,
    live_leaves: usize,
    /// Sum of live inner nodes' vector capacities in bytes.
    inner_bytes: usize,
}

/// Split point of a full node receiving an entry at `pos`: the new node
/// takes `items[at..]`.
fn split_at(pos: usize, len: usize) -> usize {
    if pos == len {
        len
    } else if pos == 0 {
        0
    } else {
        len / 2
    }
}

impl Tree {
    pub(crate) fn new() -> Tree {
        let mut t = Tree {
            leaves: Vec::new(),
            free_leaves: Vec::new(),
            inners: Vec::new(),
            free_inners: Vec::new(),
            root: 0,
            height: 0,
            len: 0,
            first: 0,
            last: 0,
            live_leaves: 0,
            inner_bytes: 0,
        };
        let root = t.new_leaf();
        t.root = root;
        t.first = root;
        t.last = root;
        t
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Heap bytes held.
    pub(crate) fn mem_bytes(&self) -> usize {
        self.live_leaves * LEAF_MAX * std::mem::size_of::<Handle>()
            + self.leaves.capacity() * std::mem::size_of::<Leaf>()
            + self.inners.capacity() * std::mem::size_of::<Inner>()
            + (self.free_leaves.capacity() + self.free_inners.capacity()) * 4
            + self.inner_bytes
    }

    fn new_leaf(&mut self) -> u32 {
        let leaf = Leaf { items: Vec::with_capacity(LEAF_MAX), prev: NIL, next: NIL };
        self.live_leaves += 1;
        match self.free_leaves.pop() {
            Some(id) => {
                self.leaves[id as usize] = leaf;
                id
            }
            None => {
                self.leaves.push(leaf);
                (self.leaves.len() - 1) as u32
            }
        }
    }

    fn free_leaf(&mut self, id: u32) {
        self.leaves[id as usize] = Leaf::default();
        self.live_leaves -= 1;
        self.free_leaves.push(id);
    }

    fn inner_cap_bytes(n: &Inner) -> usize {
        n.kids.capacity() * 4 + n.counts.capacity() * 4 + n.mins.capacity() * std::mem::size_of::<Sep>()
    }

    fn new_inner(&mut self, n: Inner) -> u32 {
        self.inner_bytes += Self::inner_cap_bytes(&n);
        match self.free_inners.pop() {
            Some(id) => {
                self.inners[id as usize] = n;
                id
            }
            None => {
                self.inners.push(n);
                (self.inners.len() - 1) as u32
            }
        }
    }

    fn free_inner(&mut self, id: u32) {
        let n = std::mem::take(&mut self.inners[id as usize]);
        self.inner_bytes -= Self::inner_cap_bytes(&n);
        self.free_inners.push(id);
    }

    /// Runs `f` on inner node `id`, keeping `inner_bytes` true.
    fn edit_inner<R>(&mut self, id: u32, f: impl FnOnce(&mut Inner) -> R) -> R {
        let n = &mut self.inners[id as usize];
        let before = Self::inner_cap_bytes(n);
        let r = f(n);
        self.inner_bytes = self.inner_bytes - before + Self::inner_cap_bytes(n);
        r
    }

    /// The number of leading elements for which `before` holds (`before`
    /// must be true on a prefix of the order, false after).
    pub(crate) fn bound(&self, before: &mut dyn FnMut(Handle, Option<f64>) -> bool) -> usize {
        let mut acc = 0;
        let mut node = self.root;
        // Bounded by the height.
        for _ in 0..self.height {
            let n = &self.inners[node as usize];
            let p = n.mins.partition_point(|m| before(m.h, Some(m.score)));
            let i = p.saturating_sub(1);
            acc += n.counts[..i].iter().map(|&c| c as usize).sum::<usize>();
            node = n.kids[i];
        }
        acc + self.leaves[node as usize].items.partition_point(|&h| before(h, None))
    }

    /// The position of rank `r` (< len).
    pub(crate) fn select(&self, mut r: usize) -> Cursor {
        let mut node = self.root;
        // Bounded by the height, then by INNER_MAX per level.
        for _ in 0..self.height {
            let n = &self.inners[node as usize];
            let mut i = 0;
            while i + 1 < n.kids.len() && r >= n.counts[i] as usize {
                r -= n.counts[i] as usize;
                i += 1;
            }
            node = n.kids[i];
        }
        Cursor { leaf: node, idx: r as u32 }
    }

    pub(crate) fn at(&self, c: Cursor) -> Handle {
        self.leaves[c.leaf as usize].items[c.idx as usize]
    }

    pub(crate) fn next(&self, c: Cursor) -> Option<Cursor> {
        let l = &self.leaves[c.leaf as usize];
        if (c.idx as usize) + 1 < l.items.len() {
            return Some(Cursor { leaf: c.leaf, idx: c.idx + 1 });
        }
        (l.next != NIL).then_some(Cursor { leaf: l.next, idx: 0 })
    }

    pub(crate) fn prev(&self, c: Cursor) -> Option<Cursor> {
        if c.idx > 0 {
            return Some(Cursor { leaf: c.leaf, idx: c.idx - 1 });
        }
        let p = self.leaves[c.leaf as usize].prev;
        (p != NIL).then(|| Cursor { leaf: p, idx: self.leaves[p as usize].items.len() as u32 - 1 })
    }

    /// Inserts `h`, whose key is not in the tree; `cmp(x)` orders element
    /// `x` against the key.
    pub(crate) fn insert<C: Cmp>(&mut self, h: Handle, cmp: &mut C, score_of: ScoreOf<'_>) {
        if let Some((right, min, count)) = self.insert_rec(self.root, self.height, h, cmp, score_of) {
            let left = self.root;
            let left_min = self.first_of(left, self.height);
            let left_count = (self.len + 1 - count as usize) as u32;
            let mut n = Inner {
                kids: Vec::with_capacity(INNER_MAX + 1),
                counts: Vec::with_capacity(INNER_MAX + 1),
                mins: Vec::with_capacity(INNER_MAX + 1),
            };
            n.kids.extend([left, right]);
            n.counts.extend([left_count, count]);
            n.mins.extend([Sep { h: left_min, score: score_of(left_min) }, Sep { h: min, score: score_of(min) }]);
            self.root = self.new_inner(n);
            self.height += 1;
        }
        self.len += 1;
    }

    /// The first handle under `node` at `level`.
    fn first_of(&self, mut node: u32, level: u32) -> Handle {
        // Bounded by the height.
        for _ in 0..level {
            node = self.inners[node as usize].kids[0];
        }
        self.leaves[node as usize].items[0]
    }

    /// Returns the new right sibling (id, first handle, count) if `node`
    /// split.
    fn insert_rec<C: Cmp>(
        &mut self,
        node: u32,
        level: u32,
        h: Handle,
        cmp: &mut C,
        score_of: ScoreOf<'_>,
    ) -> Option<(u32, Handle, u32)> {
        if level == 0 {
            let items = &mut self.leaves[node as usize].items;
            let pos = items.partition_point(|&x| cmp(x, None) == Ordering::Less);
            if items.len() < LEAF_MAX {
                items.insert(pos, h);
                return None;
            }
            let at = split_at(pos, items.len());
            let right = self.new_leaf();
            let moved: Vec<Handle> = self.leaves[node as usize].items.drain(at..).collect();
            self.leaves[right as usize].items.extend(moved);
            let len = at + self.leaves[right as usize].items.len();
            if pos == len {
                // Appending: the new element starts the right leaf alone.
                self.leaves[right as usize].items.push(h);
            } else if pos == 0 {
                // Prepending: everything moved right; the new element
                // alone stays left.
                self.leaves[node as usize].items.push(h);
            } else if pos <= at {
                self.leaves[node as usize].items.insert(pos, h);
            } else {
                self.leaves[right as usize].items.insert(pos - at, h);
            }
            // Link `right` after `node`.
            let next = self.leaves[node as usize].next;
            self.leaves[right as usize].prev = node;
            self.leaves[right as usize].next = next;
            self.leaves[node as usize].next = right;
            if next == NIL {
                self.last = right;
            } else {
                self.leaves[next as usize].prev = right;
            }
            let r = &self.leaves[right as usize].items;
            return Some((right, r[0], r.len() as u32));
        }
        let (i, kid) = {
            let n = &self.inners[node as usize];
            let p = n.mins.partition_point(|m| cmp(m.h, Some(m.score)) == Ordering::Less);
            let i = p.saturating_sub(1);
            (i, n.kids[i])
        };
        let split = self.insert_rec(kid, level - 1, h, cmp, score_of);
        let new_first = (i == 0).then(|| self.first_of(kid, level - 1));
        let full = self.edit_inner(node, |n| {
            n.counts[i] += 1;
            if let Some(f) = new_first {
                if n.mins[0].h != f {
                    n.mins[0] = Sep { h: f, score: score_of(f) };
                }
            }
            if let Some((right, min, count)) = split {
                n.counts[i] -= count;
                n.kids.insert(i + 1, right);
                n.counts.insert(i + 1, count);
                n.mins.insert(i + 1, Sep { h: min, score: score_of(min) });
            }
            n.kids.len() > INNER_MAX
        });
        if !full {
            return None;
        }
        let n = &mut self.inners[node as usize];
        let at = split_at(i + 1, n.kids.len() - 1).clamp(1, n.kids.len() - 1);
        let right = Inner { kids: n.kids.split_off(at), counts: n.counts.split_off(at), mins: n.mins.split_off(at) };
        let (min, count) = (right.mins[0].h, right.counts.iter().sum::<u32>());
        let mut right = right;
        right.kids.reserve_exact(INNER_MAX + 1 - right.kids.len());
        right.counts.reserve_exact(INNER_MAX + 1 - right.counts.len());
        right.mins.reserve_exact(INNER_MAX + 1 - right.mins.len());
        let right = self.new_inner(right);
        Some((right, min, count))
    }

    /// Removes `h`, which is in the tree; `cmp(x)` orders `x` against
    /// `h`'s key.
    pub(crate) fn remove<C: Cmp>(&mut self, h: Handle, cmp: &mut C, score_of: ScoreOf<'_>) {
        self.remove_at(&mut Target::Key(h, cmp), score_of);
    }

    /// Removes the element of rank `r` (< len) and returns its handle:
    /// the descent follows the counts, so no element is read on the way
    /// (ZPOPMIN / ZPOPMAX and rank ranges: the front or back leaf).
    pub(crate) fn remove_rank(&mut self, r: usize, score_of: ScoreOf<'_>) -> Handle {
        assert!(r < self.len, "zset tree: removing rank {r} of {}", self.len);
        let mut t = Target::<NoCmp>::Rank(r);
        self.remove_at(&mut t, score_of)
    }

    fn remove_at<C: Cmp>(&mut self, t: &mut Target<'_, C>, score_of: ScoreOf<'_>) -> Handle {
        let h = self.remove_rec(self.root, self.height, t, score_of);
        self.len -= 1;
        // Bounded by the height: collapse single-child roots.
        while self.height > 0 && self.inners[self.root as usize].kids.len() == 1 {
            let old = self.root;
            self.root = self.inners[old as usize].kids[0];
            self.free_inner(old);
            self.height -= 1;
        }
        h
    }

    fn remove_rec<C: Cmp>(&mut self, node: u32, level: u32, t: &mut Target<'_, C>, score_of: ScoreOf<'_>) -> Handle {
        if level == 0 {
            let items = &mut self.leaves[node as usize].items;
            let pos = match t {
                // The key's descent ends in the one leaf that can hold `h`;
                // there a scan for the handle (≤ LEAF_MAX words, no element
                // read) finds it cheaper than a binary search whose every
                // step reads an element at a random place in the arena.
                Target::Key(h, _) => match items.iter().position(|x| x == h) {
                    Some(pos) => pos,
                    None => panic!("zset tree: removing an element it does not hold"),
                },
                Target::Rank(r) => *r,
            };
            return items.remove(pos);
        }
        let (i, kid) = {
            let n = &self.inners[node as usize];
            let i = match t {
                Target::Key(_, cmp) => {
                    n.mins.partition_point(|m| cmp(m.h, Some(m.score)) != Ordering::Greater).saturating_sub(1)
                }
                Target::Rank(r) => {
                    // Bounded by INNER_MAX; empty children are skipped.
                    let mut i = 0;
                    while i + 1 < n.kids.len() && *r >= n.counts[i] as usize {
                        *r -= n.counts[i] as usize;
                        i += 1;
                    }
                    i
                }
            };
            (i, n.kids[i])
        };
        let h = self.remove_rec(kid, level - 1, t, score_of);
        if level > 1 && self.inners[node as usize].counts[i] == 1 {
            // The child's subtree is empty now. It can be non-empty in
            // nodes (an inner node keeps a lone child that had no
            // neighbour to merge with; append-order splits make such
            // nodes), so drop it whole here: an empty leaf must never
            // stay in the chain, nor be asked for its first element.
            if self.inners[node as usize].kids.len() > 1 {
                self.free_subtree(kid, level - 1);
                self.edit_inner(node, |n| {
                    n.kids.remove(i);
                    n.counts.remove(i);
                    n.mins.remove(i);
                });
            } else {
                // This node's subtree is empty too: its parent drops it
                // (or, at the root, the caller's collapse does).
                self.edit_inner(node, |n| n.counts[i] = 0);
            }
            return h;
        }
        let kid_size = self.size_of(kid, level - 1);
        let first = (kid_size > 0).then(|| self.first_of(kid, level - 1));
        self.edit_inner(node, |n| {
            n.counts[i] -= 1;
            if let Some(f) = first {
                if n.mins[i].h != f {
                    n.mins[i] = Sep { h: f, score: score_of(f) };
                }
            }
        });
        let min_size = if level == 1 { LEAF_MIN } else { INNER_MIN };
        if kid_size < min_size {
            self.merge_kids(node, level, i);
        }
        h
    }

    /// Frees an empty subtree: its inner nodes, and its leaves, each
    /// unlinked from the leaf chain. Bounded by the subtree's nodes.
    fn free_subtree(&mut self, node: u32, level: u32) {
        if level == 0 {
            debug_assert!(self.leaves[node as usize].items.is_empty(), "only empty subtrees are freed");
            let (prev, next) = (self.leaves[node as usize].prev, self.leaves[node as usize].next);
            if prev == NIL {
                self.first = next;
            } else {
                self.leaves[prev as usize].next = next;
            }
            if next == NIL {
                self.last = prev;
            } else {
                self.leaves[next as usize].prev = prev;
            }
            self.free_leaf(node);
            return;
        }
        let kids = self.inners[node as usize].kids.clone();
        self.free_inner(node);
        for k in kids {
            self.free_subtree(k, level - 1);
        }
    }

    /// Entries in `node` (items of a leaf, children of an inner node).
    fn size_of(&self, node: u32, level: u32) -> usize {
        if level == 0 {
            self.leaves[node as usize].items.len()
        } else {
            self.inners[node as usize].kids.len()
        }
    }

    /// Merges child `i` of `node` with a neighbour if they fit one node
    /// (an empty child always goes).
    fn merge_kids(&mut self, node: u32, level: u32, i: usize) {
        let nkids = self.inners[node as usize].kids.len();
        if nkids < 2 {
            return;
        }
        let (l, r) = if i + 1 < nkids { (i, i + 1) } else { (i - 1, i) };
        let (lid, rid) = {
            let n = &self.inners[node as usize];
            (n.kids[l], n.kids[r])
        };
        let max = if level == 1 { LEAF_MAX } else { INNER_MAX };
        if self.size_of(lid, level - 1) + self.size_of(rid, level - 1) > max {
            return;
        }
        if level == 1 {
            let moved = std::mem::take(&mut self.leaves[rid as usize].items);
            self.leaves[lid as usize].items.extend(moved);
            let next = self.leaves[rid as usize].next;
            self.leaves[lid as usize].next = next;
            if next == NIL {
                self.last = lid;
            } else {
                self.leaves[next as usize].prev = lid;
            }
            self.free_leaf(rid);
        } else {
            let moved = std::mem::take(&mut self.inners[rid as usize]);
            self.inner_bytes -= Self::inner_cap_bytes(&moved);
            self.edit_inner(lid, |n| {
                n.kids.extend(moved.kids);
                n.counts.extend(moved.counts);
                n.mins.extend(moved.mins);
            });
            self.free_inners.push(rid);
        }
        let lempty_before = self.inners[node as usize].counts[l] == 0;
        self.edit_inner(node, |n| {
            n.counts[l] += n.counts[r];
            if lempty_before {
                n.mins[l] = n.mins[r];
            }
            n.kids.remove(r);
            n.counts.remove(r);
            n.mins.remove(r);
        });
    }

    /// Replaces handle `old` (whose element moved to `new`) wherever the
    /// tree holds it: its leaf slot and any separator on its path. `cmp`
    /// orders elements against the moved element's key and must read
    /// `old`'s bytes through `new`.
    pub(crate) fn repoint<C: Cmp>(&mut self, old: Handle, new: Handle, cmp: &mut C) {
        let mut node = self.root;
        // Bounded by the height.
        for _ in 0..self.height {
            let n = &mut self.inners[node as usize];
            let p = n.mins.partition_point(|m| cmp(m.h, Some(m.score)) != Ordering::Greater);
            let i = p.saturating_sub(1);
            if n.mins[i].h == old {
                n.mins[i].h = new;
            }
            node = n.kids[i];
        }
        // As in a removal: the leaf is found by key, the handle by a scan.
        let items = &mut self.leaves[node as usize].items;
        let pos = items.iter().position(|&x| x == old).expect("zset tree: relocated element not found");
        items[pos] = new;
    }

    /// Every handle in order (for checks and encoding).
    pub(crate) fn iter(&self) -> impl Iterator<Item = Handle> + '_ {
        let mut leaf = if self.len == 0 { NIL } else { self.first };
        let mut idx = 0usize;
        std::iter::from_fn(move || {
            // Bounded: each call moves one element or one leaf forward.
            while leaf != NIL {
                let l = &self.leaves[leaf as usize];
                if idx < l.items.len() {
                    idx += 1;
                    return Some(l.items[idx - 1]);
                }
                leaf = l.next;
                idx = 0;
            }
            None
        })
    }

    /// Checks the structure (tests): counts, separators, links, order.
    #[cfg(test)]
    pub(crate) fn check(&self, cmp: &mut dyn FnMut(Handle, Handle) -> Ordering, score_of: ScoreOf<'_>) {
        let mut all = Vec::new();
        self.check_rec(self.root, self.height, &mut all, score_of);
        assert_eq!(all.len(), self.len);
        for w in all.windows(2) {
            assert_eq!(cmp(w[0], w[1]), Ordering::Less);
        }
        assert_eq!(self.iter().collect::<Vec<_>>(), all);
    }

    #[cfg(test)]
    fn check_rec(&self, node: u32, level: u32, out: &mut Vec<Handle>, score_of: ScoreOf<'_>) -> usize {
        if level == 0 {
            out.extend(&self.leaves[node as usize].items);
            return self.leaves[node as usize].items.len();
        }
        let n = &self.inners[node as usize];
        let mut total = 0;
        for (k, &kid) in n.kids.iter().enumerate() {
            let start = out.len();
            let c = self.check_rec(kid, level - 1, out, score_of);
            assert_eq!(c, n.counts[k] as usize);
            assert!(c > 0);
            assert_eq!(out[start], n.mins[k].h);
            // A separator's score is its element's (a member rescored in
            // place must leave no stale copy).
            assert_eq!(n.mins[k].score.to_bits(), score_of(n.mins[k].h).to_bits());
            total += c;
        }
        total
    }
}
