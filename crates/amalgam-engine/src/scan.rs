//! Key iteration by cursor (Redis's SCAN guarantee, for RESP's SCAN/KEYS).
//!
//! # The cursor
//!
//! A bucket's index is the low bits of the key's hash, and a doubling
//! splits bucket `i` of `2^b` into `i` and `i + 2^b` of `2^(b+1)`. Redis
//! iterates its dict under the same rule by incrementing the cursor's bits
//! *reversed* (Pieter Noordhuis's reverse-binary iteration, `dictScan` in
//! Redis's dict.c): the buckets visited so far are then always a set of
//! whole subtrees, so after the table doubles, the children of a visited
//! bucket are all skipped and those of an unvisited one all visited.
//! Hence Redis's guarantee, kept here: a key present from the start to the
//! end of a full iteration is returned at least once; a key may be returned
//! more than once (it can be visited before and after a doubling moved
//! it); keys added or removed meanwhile may or may not be returned. The
//! table never shrinks, so no cursor ever skips.
//!
//! # One step
//!
//! [`Store::scan`] visits the cursor's bucket in the current table — or,
//! if the expand thread has already moved that bucket, the buckets of the
//! successor it split into — under their locks (one at a time; a chain
//! holds a handful of items), collects the item pointers, unlocks, and then
//! calls `f` for each live item while the epoch pin keeps them valid. So
//! `f` may call back into the store, and a writer waits at most for one
//! chain's copy.
//!
//! # A random key
//!
//! [`Store::random_item`] (RANDOMKEY) samples as Redis's
//! `dictGetFairRandomKey` does — several items, then one of them picked
//! uniformly — but from independent random buckets rather than
//! consecutive ones: it probes random buckets (each visited as a scan
//! step visits it) until it holds [`RANDOM_SAMPLE_ITEMS`] live items or
//! has made [`RANDOM_STEPS_PER_ITEM`] probes per item wanted. An item's
//! chance is then about the same wherever it lies (consecutive buckets
//! favour an item after an empty stretch). Only when the probes find
//! nothing — a table left sparse by deletions (it never shrinks) or full
//! of expired items — does it walk from a random bucket to the first live
//! item, visiting each bucket at most once.

use crate::store::{ItemRef, Store};
use crate::table::Table;

/// Items collected from one bucket chain before the lock is released;
/// a bound on the step's buffer, far above a chain's length.
const SCAN_STEP_ITEMS_MAX: usize = 4096;
/// Live items a random pick draws from (Redis's `GETFAIR_NUM_ENTRIES`).
const RANDOM_SAMPLE_ITEMS: usize = 15;
/// Random buckets probed per sample item wanted before a random pick
/// settles for what it found (Redis's `dictGetSomeKeys`: `maxsteps =
/// count * 10`).
const RANDOM_STEPS_PER_ITEM: usize = 10;

impl Store {
    /// Visits one bucket's worth of live items from `cursor` and returns
    /// the next cursor; 0 starts an iteration and a returned 0 ends it.
    /// Repeat until 0 comes back to see every key that stayed in the store
    /// throughout at least once (see the module notes for the guarantee).
    ///
    /// ```
    /// use amalgam_engine::{Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// for i in 0..100 {
    ///     store.set(format!("k{i}").as_bytes(), b"v", 0, Expiry::Never).unwrap();
    /// }
    /// let mut seen = std::collections::HashSet::new();
    /// let mut cursor = 0;
    /// loop {
    ///     cursor = store.scan(cursor, |it| {
    ///         seen.insert(it.key().to_vec());
    ///     });
    ///     if cursor == 0 {
    ///         break;
    ///     }
    /// }
    /// assert_eq!(seen.len(), 100);
    /// ```
    pub fn scan(&self, cursor: u64, mut f: impl FnMut(ItemRef<'_>)) -> u64 {
        let pin = self.pin();
        let t = pin.current();
        let mask = (t.bucket_count() - 1) as u64;
        let i = (cursor & mask) as usize;
        let mut found = Vec::new();
        collect_bucket(t, i, &mut found);
        let mut now = None;
        for p in found {
            // SAFETY: p was in a chain while we held its lock and we are
            // still pinned, so it is not freed before the pin drops.
            let it = unsafe { ItemRef::new(p) };
            if self.item_is_live(&it, &mut now) {
                f(it);
            }
        }
        next_cursor(cursor, mask)
    }

    /// Calls `f` with one live item drawn at random (see the module notes)
    /// and returns its result; None if the store holds no live item.
    /// `random` is the caller's random word (the engine keeps no random
    /// state), the seed of the probes and of the pick.
    ///
    /// ```
    /// use amalgam_engine::{Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// assert_eq!(store.random_item(12345, |it| it.key().to_vec()), None);
    /// for i in 0..100 {
    ///     store.set(format!("k{i}").as_bytes(), b"v", 0, Expiry::Never).unwrap();
    /// }
    /// let mut seen = std::collections::HashSet::new();
    /// for r in 0..1000u64 {
    ///     let r = r.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    ///     seen.insert(store.random_item(r, |it| it.key().to_vec()).unwrap());
    /// }
    /// assert!(seen.len() > 50, "{} distinct keys of 100", seen.len());
    /// ```
    pub fn random_item<R>(&self, random: u64, f: impl FnOnce(ItemRef<'_>) -> R) -> Option<R> {
        self.random_item_where(random, |_| true, f)
    }

    /// [`Store::random_item`] among the live items whose key `keep`
    /// accepts (a namespace's: `namespace.rs`). The probes and the walk
    /// are the same, so an item's chance is as fair; a key set that is a
    /// small share of the store is found by the walk.
    ///
    /// ```
    /// use amalgam_engine::{namespace, Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// for i in 0..100 {
    ///     store.set(format!("k{i}").as_bytes(), b"v", 0, Expiry::Never).unwrap();
    /// }
    /// store.set(&namespace::encode(4, b"only"), b"v", 0, Expiry::Never).unwrap();
    /// let in4 = |k: &[u8]| namespace::split(k).0 == 4;
    /// assert_eq!(store.random_item_where(7, in4, |it| it.key().to_vec()), Some(b"\xff\x04only".to_vec()));
    /// assert_eq!(store.random_item_where(7, |k| namespace::split(k).0 == 5, |it| it.key().len()), None);
    /// ```
    pub fn random_item_where<R>(
        &self,
        random: u64,
        keep: impl Fn(&[u8]) -> bool,
        f: impl FnOnce(ItemRef<'_>) -> R,
    ) -> Option<R> {
        if self.is_empty() {
            // Nothing indexed (not even expired items): no walk at all.
            return None;
        }
        let pin = self.pin();
        let t = pin.current();
        let mask = t.bucket_count() - 1;
        let mut words = Words(random);
        let mut found = Vec::new();
        let mut live: Vec<*const u8> = Vec::new();
        let mut now = None;
        let mut visit = |i: usize, live: &mut Vec<*const u8>| {
            found.clear();
            collect_bucket(t, i, &mut found);
            for &p in &found {
                // SAFETY: p was in a chain while we held its lock and we
                // are still pinned, so it is not freed before the pin drops.
                let it = unsafe { ItemRef::new(p) };
                if keep(it.key()) && self.item_is_live(&it, &mut now) {
                    live.push(p);
                }
            }
        };
        // Independent random buckets: an item's chance does not depend on
        // how crowded its neighbourhood is.
        for _ in 0..RANDOM_SAMPLE_ITEMS * RANDOM_STEPS_PER_ITEM {
            visit(words.next() as usize & mask, &mut live);
            if live.len() >= RANDOM_SAMPLE_ITEMS {
                break;
            }
        }
        if live.is_empty() {
            // Too sparse for probes (or only expired items): walk from a
            // random bucket to the first live item, each bucket at most once.
            let start = words.next() as usize;
            for step in 0..=mask {
                visit(start.wrapping_add(step) & mask, &mut live);
                if !live.is_empty() {
                    break;
                }
            }
        }
        if live.is_empty() {
            return None;
        }
        let pick = (words.next() % live.len() as u64) as usize;
        // SAFETY: as above: collected under its bucket's lock, and the pin
        // is still held.
        Some(f(unsafe { ItemRef::new(live[pick]) }))
    }
}

/// A stream of well-mixed words from one seed (SplitMix64): the random
/// pick's bucket choices, so the engine keeps no random state.
struct Words(u64);

impl Words {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Appends the item pointers of bucket `i` of `t` — or, if the expand
/// thread has moved it, of the successor's buckets it split into (the
/// successor exists: MOVED is set only during an expansion, and the
/// successor is current only after all moved). A scan pinned on an old
/// table can fall behind by more than one doubling: the successor may
/// itself have become current and be expanding into its own successor, so
/// a moved successor bucket is followed the same way, one level down.
/// Bucket `i` of `2^b` holds the hashes `≡ i (mod 2^b)`; in the table `d`
/// doublings later those are the buckets `i + k·2^b`, `k < 2^d`, so the
/// union visited is the same set of keys at every depth.
fn collect_bucket(t: &Table, i: usize, found: &mut Vec<*const u8>) {
    collect_split(t, i, found, 0);
}

/// Doublings a scan step follows from the table it is pinned on: as many
/// as the index can ever make (so reaching it is a broken invariant).
const SCAN_DOUBLINGS_MAX: u32 = crate::table::TABLE_LOG2_MAX;

/// [`collect_bucket`]'s step: bucket `i` of `t`, or, if it has moved, the
/// buckets `i, i + |t|, …` of the successor, each followed again.
fn collect_split(t: &Table, i: usize, found: &mut Vec<*const u8>, depth: u32) {
    if collect(t, i, found) {
        return;
    }
    assert!(depth < SCAN_DOUBLINGS_MAX, "a bucket moved through more doublings than the index can make");
    let next = t.successor().expect("a MOVED bucket has a successor");
    let mut j = i;
    while j < next.bucket_count() {
        collect_split(next, j, found, depth + 1);
        j += t.bucket_count();
    }
}

/// Appends bucket `i`'s item pointers; false if the bucket has moved.
fn collect(t: &Table, i: usize, out: &mut Vec<*const u8>) -> bool {
    let Some(mut g) = t.lock(i) else { return false };
    g.retain(|p| {
        if out.len() < SCAN_STEP_ITEMS_MAX {
            out.push(p);
        }
        true
    });
    true
}

/// Redis's reverse-binary increment of the cursor's bits under `mask`.
fn next_cursor(cursor: u64, mask: u64) -> u64 {
    let v = (cursor | !mask).reverse_bits().wrapping_add(1);
    v.reverse_bits()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scan pinned on a table two doublings behind finds the keys of its
    /// bucket even where the successor's buckets have moved on again (CI
    /// once caught a scan step there while a writer doubled the table
    /// twice; the step used to skip those buckets).
    #[test]
    fn a_step_follows_a_bucket_through_two_doublings() {
        // Fake items: addresses in one array; an item's bucket bits are
        // its index.
        let items = [0u64; 64];
        let ptr = |k: usize| &items[k] as *const u64 as *const u8;
        let bits = |p: *const u8| ((p as usize - ptr(0) as usize) / 8) as u64;
        let hash = |p: *const u8| bits(p) << crate::table::INDEX_SHIFT;
        let t = Table::new(2).expect("a small table maps");
        for k in 0..64 {
            t.lock(k % 4).expect("not moved").insert(1, ptr(k)).expect("room");
        }
        let n1 = Box::into_raw(Box::new(Table::new(3).expect("maps")));
        let n2 = Box::into_raw(Box::new(Table::new(4).expect("maps")));
        t.set_successor(n1);
        for i in 0..4 {
            t.migrate_bucket(i, &hash).expect("room");
        }
        // SAFETY: n1 stays alive until the end of the test.
        let r1 = unsafe { &*n1 };
        r1.set_successor(n2);
        // Bucket 1 of 4 split into 1 and 5 of 8; 5 moves on, 1 stays.
        r1.migrate_bucket(5, &hash).expect("room");
        let mut found = Vec::new();
        collect_bucket(&t, 1, &mut found);
        let mut got: Vec<u64> = found.iter().map(|&p| bits(p)).collect();
        got.sort_unstable();
        let want: Vec<u64> = (0..64).filter(|k| k % 4 == 1).collect();
        assert_eq!(got, want);
        // SAFETY: nothing refers to them any more.
        unsafe {
            drop(Box::from_raw(n2));
            drop(Box::from_raw(n1));
        }
    }

    #[test]
    fn random_item_finds_a_lone_key_and_skips_expired_ones() {
        use crate::{Expiry, Store};
        let store = Store::new(Default::default()).unwrap();
        for i in 0..5000 {
            store.set(format!("k{i}").as_bytes(), b"v", 0, Expiry::Never).unwrap();
        }
        // Sparse: the table keeps its size after the deletes.
        for i in 1..5000 {
            store.delete(format!("k{i}").as_bytes()).unwrap();
        }
        for r in [0u64, 1, 0xFFFF_FFFF_FFFF_FFFF, 0x1234_5678_9ABC_DEF0] {
            assert_eq!(store.random_item(r, |it| it.key().to_vec()).as_deref(), Some(&b"k0"[..]));
        }
        // Only expired items left: none, though the index still holds them.
        let now = store.now();
        store.set(b"k0", b"v", 0, Expiry::At(now + 10)).unwrap();
        store.set(b"k1", b"v", 0, Expiry::At(now + 10)).unwrap();
        store.advance_clock(20);
        assert!(!store.is_empty());
        assert_eq!(store.random_item(7, |it| it.key().to_vec()), None);
        store.set(b"live", b"v", 0, Expiry::Never).unwrap();
        assert_eq!(store.random_item(7, |it| it.key().to_vec()).as_deref(), Some(&b"live"[..]));
    }

    #[test]
    fn random_item_reaches_every_key() {
        use crate::{Expiry, Store};
        let store = Store::new(Default::default()).unwrap();
        let n = 300;
        for i in 0..n {
            store.set(format!("k{i}").as_bytes(), b"v", 0, Expiry::Never).unwrap();
        }
        let mut seen = std::collections::HashSet::new();
        let mut x = 0x243F_6A88_85A3_08D3u64;
        for _ in 0..50 * n {
            // SplitMix64's step and mix: well-spread words.
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            seen.insert(store.random_item(z ^ (z >> 31), |it| it.key().to_vec()).unwrap());
        }
        assert_eq!(seen.len(), n, "50 draws per key reach each of them");
    }

    #[test]
    fn random_item_is_near_uniform_in_a_sparse_table() {
        // 40 keys in 1024 buckets: a walk over consecutive buckets would
        // favour keys after empty stretches several times over (measured:
        // 0.3x to 4x the mean); independent probes stay within noise.
        use crate::{Expiry, Store};
        let store = Store::new(Default::default()).unwrap();
        let n = 40;
        for i in 0..n {
            store.set(format!("k{i}").as_bytes(), b"v", 0, Expiry::Never).unwrap();
        }
        let mut counts = std::collections::HashMap::new();
        let mut words = Words(0x1234_5678);
        let mean = 400;
        for _ in 0..mean * n {
            *counts.entry(store.random_item(words.next(), |it| it.key().to_vec()).unwrap()).or_insert(0usize) += 1;
        }
        assert_eq!(counts.len(), n);
        for (k, c) in &counts {
            // Poisson noise: sigma 20; half or twice the mean is 10 sigma.
            assert!((mean / 2..=mean * 2).contains(c), "{} drawn {c} times, mean {mean}", String::from_utf8_lossy(k));
        }
    }

    #[test]
    fn cursor_visits_every_bucket_once_then_returns_zero() {
        for log2 in 0..6 {
            let mask = (1u64 << log2) - 1;
            let mut seen = std::collections::HashSet::new();
            let mut c = 0;
            loop {
                assert!(seen.insert(c & mask), "bucket {} twice", c & mask);
                c = next_cursor(c, mask);
                if c == 0 {
                    break;
                }
            }
            assert_eq!(seen.len(), 1 << log2);
        }
    }

    #[test]
    fn a_cursor_survives_a_doubling() {
        // Visit half of a 2^3 table, then continue on 2^4: every bucket of
        // the larger table is covered by a visited parent or visited itself.
        let small = 7u64;
        let mut c = 0;
        let mut parents = Vec::new();
        for _ in 0..4 {
            parents.push(c & small);
            c = next_cursor(c, small);
        }
        let big = 15u64;
        let mut children = Vec::new();
        while c != 0 {
            children.push(c & big);
            c = next_cursor(c, big);
        }
        for b in 0..16u64 {
            assert!(
                parents.contains(&(b & small)) || children.contains(&b),
                "bucket {b} of the doubled table is never visited"
            );
        }
    }
}
