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

use crate::store::{ItemRef, Store};
use crate::table::Table;

/// Items collected from one bucket chain before the lock is released;
/// a bound on the step's buffer, far above a chain's length.
const SCAN_STEP_ITEMS_MAX: usize = 4096;

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
        if !collect(t, i, &mut found) {
            // Moved: its entries are in the successor's buckets whose low
            // bits are i (the successor exists: MOVED is set only during an
            // expansion, and the successor is current only after all moved).
            let next = t.successor().expect("a MOVED bucket has a successor");
            let stride = t.bucket_count();
            let mut j = i;
            while j < next.bucket_count() {
                let ok = collect(next, j, &mut found);
                debug_assert!(ok, "a successor's bucket moves only after it is current");
                j += stride;
            }
        }
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
