//! A keyed table over an [`Arena`]: the large form shared by hash and set
//! (and usable by the sorted set's member index). Each element is one
//! arena element; its key is a prefix or the whole of its bytes, as the
//! owner's `key_of` says. The index is a SwissTable of 4-byte
//! [`Handle`]s (one control byte + 4 bytes a slot), hashed with foldhash
//! seeded per table; on growth the table rehashes by reading each key
//! back from the arena.
//!
//! Removal frees the element and runs one bounded
//! [`Arena::compact_step`], re-pointing the slots of moved elements
//! (found by their key's hash and old handle), so memory tracks the live
//! bytes; the index shrinks when it is at most 1/[`SHRINK_FILL_RATIO`]
//! full (as Redis's dict does at 10%).

use super::{Arena, Handle};
use core::hash::BuildHasher;
use foldhash::fast::RandomState;
use hashbrown::hash_table::Entry;
use hashbrown::HashTable;

/// The index shrinks (to the smallest table that holds its elements) when
/// it has this many slots per element or more, and more than
/// [`SHRINK_SLOTS_MIN`] slots.
pub const SHRINK_FILL_RATIO: usize = 8;
/// Below this capacity the index is not shrunk.
pub const SHRINK_SLOTS_MIN: usize = 64;

/// Extracts the key from an element's bytes.
pub type KeyOf = fn(&[u8]) -> &[u8];

/// Arena elements indexed by key. See the module documentation.
pub struct Table {
    arena: Arena,
    slots: HashTable<Handle>,
    state: RandomState,
    key_of: KeyOf,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table").field("len", &self.slots.len()).field("mem_bytes", &self.mem_bytes()).finish()
    }
}

impl Table {
    /// An empty table whose elements' keys `key_of` extracts, sized for
    /// `capacity` elements.
    pub fn with_capacity(key_of: KeyOf, capacity: usize) -> Table {
        Table { arena: Arena::new(), slots: HashTable::with_capacity(capacity), state: RandomState::default(), key_of }
    }

    /// Elements.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Heap bytes held: the arena's pages and bookkeeping plus the index's
    /// allocation. O(1).
    pub fn mem_bytes(&self) -> usize {
        self.arena.mem_bytes() + self.slots.allocation_size()
    }

    fn hash(&self, key: &[u8]) -> u64 {
        self.state.hash_one(key)
    }

    /// The handle of the element with `key`.
    pub fn find(&self, key: &[u8]) -> Option<Handle> {
        let (arena, key_of) = (&self.arena, self.key_of);
        self.slots.find(self.hash(key), |&h| key_of(arena.get(h)) == key).copied()
    }

    /// The bytes of the element with `key`.
    pub fn get(&self, key: &[u8]) -> Option<&[u8]> {
        self.find(key).map(|h| self.arena.get(h))
    }

    /// An element's bytes.
    pub fn element(&self, h: Handle) -> &[u8] {
        self.arena.get(h)
    }

    /// Stores the element `parts` (concatenated; its key must be `key`),
    /// replacing the element with that key if any. True if it was new.
    pub fn upsert(&mut self, key: &[u8], parts: &[&[u8]]) -> bool {
        let hash = self.hash(key);
        let Table { arena, slots, state, key_of } = self;
        let key_of = *key_of;
        // One probe: the entry either holds the old handle or is the slot
        // to fill (space reserved, rehashing from the arena if needed).
        let entry = {
            let a: &Arena = arena;
            slots.entry(hash, |&h| key_of(a.get(h)) == key, |&x| state.hash_one(key_of(a.get(x))))
        };
        match entry {
            Entry::Occupied(mut o) => {
                let old = *o.get();
                if arena.overwrite(old, parts) {
                    return false;
                }
                let new = arena.alloc(parts);
                debug_assert_eq!(key_of(arena.get(new)), key);
                *o.get_mut() = new;
                arena.free(old);
                self.compact();
                false
            }
            Entry::Vacant(v) => {
                let h = arena.alloc(parts);
                debug_assert_eq!(key_of(arena.get(h)), key);
                v.insert(h);
                true
            }
        }
    }

    /// Removes the element with `key`. True if there was one.
    pub fn remove(&mut self, key: &[u8]) -> bool {
        let hash = self.hash(key);
        let (arena, key_of) = (&self.arena, self.key_of);
        let Ok(entry) = self.slots.find_entry(hash, |&h| key_of(arena.get(h)) == key) else {
            return false;
        };
        let (h, _) = entry.remove();
        self.arena.free(h);
        self.compact();
        self.maybe_shrink();
        true
    }

    /// One bounded compaction step, re-pointing moved elements' slots.
    fn compact(&mut self) {
        if !self.arena.needs_compaction() {
            return;
        }
        let Table { arena, slots, state, key_of } = self;
        let key_of = *key_of;
        arena.compact_step(&mut |old, new, bytes| {
            let slot = slots.find_mut(state.hash_one(key_of(bytes)), |&h| h == old);
            debug_assert!(slot.is_some(), "moved element has a slot");
            if let Some(slot) = slot {
                *slot = new;
            }
        });
    }

    fn maybe_shrink(&mut self) {
        // Slots from the allocation (a slot is a handle and a control
        // byte): `capacity()` undercounts after deletes (tombstones).
        let slots = self.slots.allocation_size() / (std::mem::size_of::<Handle>() + 1);
        if slots > SHRINK_SLOTS_MIN && self.slots.len() * SHRINK_FILL_RATIO <= slots {
            let (arena, state, key_of) = (&self.arena, &self.state, self.key_of);
            self.slots.shrink_to(self.slots.len(), |&x| state.hash_one(key_of(arena.get(x))));
        }
    }

    /// Every element (handle, bytes), in arena position order.
    pub fn iter(&self) -> impl Iterator<Item = (Handle, &[u8])> + '_ {
        self.arena.iter()
    }

    /// One SCAN step over the elements; see [`Arena::scan`] for the
    /// cursor and its guarantee.
    pub fn scan(&self, cursor: u64, count: usize, f: &mut dyn FnMut(Handle, &[u8])) -> u64 {
        self.arena.scan(cursor, count, f)
    }

    /// A uniformly random element chosen by the random word `r`.
    pub fn random(&self, r: u64) -> Option<Handle> {
        self.arena.random(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn field_of(e: &[u8]) -> &[u8] {
        &e[..1 + e[0] as usize][1..]
    }

    #[test]
    fn model_with_prefix_keys() {
        let mut t = Table::with_capacity(field_of, 0);
        let mut m: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        let mut s = 7u64;
        // Bounded: 30,000 operations.
        for i in 0..30_000u64 {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let k = format!("k{}", (s >> 33) % 2_000).into_bytes();
            if (s >> 20) % 3 == 0 {
                assert_eq!(t.remove(&k), m.remove(&k).is_some());
            } else {
                let v = format!("v{i}").into_bytes();
                let new = t.upsert(&k, &[&[k.len() as u8], &k, &v]);
                assert_eq!(new, m.insert(k.clone(), v).is_none());
            }
            if i % 997 == 0 {
                assert_eq!(t.len(), m.len());
                for (k, v) in &m {
                    assert_eq!(&t.get(k).unwrap()[1 + k.len()..], &v[..]);
                }
            }
        }
        // Shrink after removing almost all.
        let keys: Vec<Vec<u8>> = m.keys().cloned().collect();
        for k in &keys[1..] {
            assert!(t.remove(k));
        }
        assert_eq!(t.len(), 1);
        assert!(t.mem_bytes() < super::super::PAGE_BYTES + 4096, "{}", t.mem_bytes());
        assert!(t.random(12345).is_some());
    }
}
