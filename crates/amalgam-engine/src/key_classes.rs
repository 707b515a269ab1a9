//! Key classes: a count of the index's items per class of key, kept by
//! the engine's write path only when the server asks for it. The engine
//! knows no protocol: the server gives a classifier (a plain `fn` of a
//! key's name in namespace 0 to a class below `classes`) and reads each
//! class's count. Redis Cluster is the reason (the server classifies by
//! hash slot: COUNTKEYSINSLOT from the count, GETKEYSINSLOT's "no keys
//! left" without a walk of the table), but nothing here says so.
//!
//! ## What is counted
//! Items in the index whose key is in namespace 0 (`namespace.rs`; the
//! classifier sees the name, not the stored key), expired but not yet
//! unlinked ones included, as [`Store::len`] and as Redis's
//! `countKeysInSlot` (which counts a slot's dictionary). Other
//! namespaces are not counted.
//!
//! ## Where the count changes
//! Beside the store's item count (`Local::items`), at the same four
//! places, so a path that changes one changes the other:
//! * `store/mutate.rs`, the heart of every write (SET, DEL, the
//!   collections' creation and removal, RENAME, RESTORE, replication's
//!   and recovery's loads): +1 where the write inserts into the bucket
//!   (no item was there, live or dead), −1 where it removes one and
//!   publishes none; an overwrite replaces the slot and counts nothing
//!   (so SET of an existing key pays nothing, counting on or off). Under
//!   the bucket lock, so a later unlinking of the same item on another
//!   thread counts after it;
//! * `store/maintenance.rs`, the sweeps (expired and flushed items);
//! * `reclaim.rs` and `outsized.rs`, cache mode's evictions and expired
//!   items met by a reclamation.
//!
//! ## FLUSHALL
//! A flush only raises a fence; its items leave the index with the
//! maintenance thread's sweep. Until that sweep has passed over the whole
//! table, the counts still hold the flushed items, so
//! [`Store::key_class_len`] answers None ("unknown now", the caller
//! walks) rather than a wrong number.
//!
//! ## Cost while off
//! One relaxed load (the `OnceLock`'s state) and a predictable branch at
//! each of those places, which are off the overwrite's path; the
//! classifier and the shared counters are reached only when on. When on,
//! a count changes with one relaxed `fetch_add` on a counter shared by
//! every thread: a write of a new key or a delete pays one atomic add
//! (and the CRC16 of the key), an overwrite nothing.

use crate::store::{Inner, Store};
use std::sync::atomic::{AtomicI64, Ordering};

/// The most classes a store counts (a counter of 8 bytes each).
pub const KEY_CLASSES_MAX: usize = 1 << 20;

/// The classifier and one counter per class.
pub(crate) struct KeyClasses {
    classify: fn(&[u8]) -> u16,
    counts: Box<[AtomicI64]>,
}

impl std::fmt::Debug for KeyClasses {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyClasses").field("classes", &self.counts.len()).finish()
    }
}

impl KeyClasses {
    /// Counts `delta` items of the stored key `key`, if it is in
    /// namespace 0 and its class is in range.
    #[inline(never)]
    fn add(&self, key: &[u8], delta: i64) {
        if let Some(name) = crate::namespace::name_in(0, key) {
            if let Some(c) = self.counts.get((self.classify)(name) as usize) {
                c.fetch_add(delta, Ordering::Relaxed);
            }
        }
    }
}

impl Inner {
    /// Counts a change of `delta` items of `key` in its class, if classes
    /// are counted (one relaxed load and a branch if not).
    #[inline(always)]
    pub(crate) fn count_class(&self, key: &[u8], delta: i64) {
        if let Some(k) = self.key_classes.get() {
            k.add(key, delta);
        }
    }

    /// [`Inner::count_class`] of the item at `p`, unlinked.
    ///
    /// # Safety
    /// `p` is an item (just unlinked) the caller's pin or bucket lock keeps
    /// allocated.
    #[inline(always)]
    pub(crate) unsafe fn count_class_unlinked(&self, p: *const u8) {
        if let Some(k) = self.key_classes.get() {
            // SAFETY: forwarded from the caller.
            k.add(unsafe { crate::item::key(p) }, -1);
        }
    }
}

impl Store {
    /// Starts counting the index's items per class: `classify` maps a key's
    /// name in namespace 0 to a class below `classes` (a class at or past
    /// it is not counted); keys of other namespaces are not counted (the
    /// module's doc, `key_classes.rs`). Call it once, before the store
    /// holds items (the server does, as it builds the store): items
    /// already in the index are counted by a walk, which is exact only if
    /// no write runs meanwhile. Err if classes are counted already or
    /// `classes` is 0 or above [`KEY_CLASSES_MAX`].
    ///
    /// ```
    /// use amalgam_engine::{Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// store.count_key_classes(|name| name.len() as u16 % 4, 4).unwrap();
    /// store.set(b"abc", b"1", 0, Expiry::Never).unwrap();
    /// store.set(b"abc", b"2", 0, Expiry::Never).unwrap();
    /// assert_eq!(store.key_class_len(3), Some(1));
    /// store.delete(b"abc").unwrap();
    /// assert_eq!(store.key_class_len(3), Some(0));
    /// ```
    pub fn count_key_classes(&self, classify: fn(&[u8]) -> u16, classes: usize) -> Result<(), String> {
        if classes == 0 || classes > KEY_CLASSES_MAX {
            return Err(format!("key classes: {classes} is not in 1..={KEY_CLASSES_MAX}"));
        }
        let k = KeyClasses { classify, counts: (0..classes).map(|_| AtomicI64::new(0)).collect() };
        self.inner.key_classes.set(k).map_err(|_| "key classes are counted already".to_string())?;
        if !self.is_empty() {
            let k = self.inner.key_classes.get().expect("just set");
            // Bounded: a scan's cursor comes back to 0 after one pass.
            let mut cursor = 0;
            loop {
                cursor = self.scan(cursor, |it| k.add(it.key(), 1));
                if cursor == 0 {
                    break;
                }
            }
        }
        Ok(())
    }

    /// The items of `class` in the index (expired ones not yet unlinked
    /// included): None if classes are not counted, `class` is out of
    /// range, or a FLUSHALL's sweep has not finished (the counts still
    /// hold what it flushed; ask again later or walk).
    pub fn key_class_len(&self, class: usize) -> Option<u64> {
        let k = self.inner.key_classes.get()?;
        let c = k.counts.get(class)?;
        if self.inner.flush_unswept() {
            return None;
        }
        Some(c.load(Ordering::Relaxed).max(0) as u64)
    }

    /// Whether classes are counted ([`Store::count_key_classes`]).
    pub fn counts_key_classes(&self) -> bool {
        self.inner.key_classes.get().is_some()
    }
}
