//! Typed values: what an item's value is, and values that live outside
//! the item.
//!
//! # HOW IT WORKS
//!
//! Every item carries a 3-bit *value tag* in its meta byte (item.rs):
//!
//! * [`TAG_BYTES`] (0): the value is plain bytes — every memcached item
//!   and every Redis string. Nothing about strings changes.
//! * [`TAG_PACKED_MIN`]..=[`TAG_PACKED_MAX`] (1..=6): the value is bytes
//!   in an encoding the engine does not interpret (the server stores
//!   Redis's small collections this way, each kind its own tag). Such an
//!   item is immutable like any other: readers read it optimistically
//!   and lock-free, and a write builds the next version under the bucket
//!   lock (`Store::update`). A packed value is bounded by the item size.
//! * [`TAG_OBJECT`] (7): the value is 8 bytes, the address of an
//!   [`ObjectCell`] on the heap: a value too large to copy on every
//!   write (a large hash, list, set or sorted set). A writer changes it
//!   *in place*, holding the key's bucket lock and then the cell's write
//!   lock ([`Update::InPlace`](crate::Update)); a reader, inside the
//!   epoch pin of its lookup, takes the cell's read lock
//!   ([`ItemRef::object`](crate::ItemRef::object)). Readers of one object
//!   run in parallel; readers of other keys never wait.
//!
//! # WHO OWNS AN OBJECT
//!
//! The item that holds its address, exactly one at a time. When that
//! item leaves the index — replaced by a value of another kind, deleted,
//! expired, flushed or evicted — the engine retires the cell through the
//! epoch scheme (`local.rs`, `Garbage::Object`), so a reader still pinned
//! in a lookup that found the old item keeps a valid cell. Two paths move
//! the address to a new item instead, and the cell is not retired:
//!
//! * a rewrite of the item that keeps its value (`NewValue::Same`: the
//!   EXPIRE family, PERSIST, a touch): the new item holds the same
//!   address, which `Inner::mutate` checks before retiring anything;
//! * cache mode's reclaimer copying a live item to another segment
//!   (`reclaim.rs`): the old copy becomes dead bytes, never looked at.
//!
//! A store dropped with objects in it drops them (`Drop for Inner`).
//!
//! # MEMORY
//!
//! An object's bytes ([`Object::mem_bytes`], the allocator's bytes it
//! holds, plus its cell) count in the store's `bytes` statistic with the
//! item's own (`Stats::object_bytes` alone), and against the memory
//! budget: in cache mode the maintenance thread charges them with the
//! index (`Inner::account_memory`), so segments shrink and the reclaimer
//! evicts until items and objects fit together; in store mode a caller
//! asks `Store::objects_over_budget` before a write that grows an object
//! and refuses it, as Redis's `noeviction` refuses `denyoom` commands.
//! The cell remembers what it was charged, so an in-place write charges
//! only the difference.
//!
//! # LIMITATIONS
//!
//! * A writer holds the bucket lock while it changes an object, so a
//!   write to one large collection delays writers of the other keys of
//!   its bucket (a handful) for that write's length; reads are not
//!   delayed except by a writer of the same object.
//! * Cache mode's eviction picks victims by segment order; an object's
//!   item is a small entry in its segment, so a large object is evicted
//!   when its item's segment is reclaimed, like any item, not earlier
//!   for being large.

use std::any::Any;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Plain bytes: memcached items and Redis strings.
pub const TAG_BYTES: u8 = 0;
/// The first tag of values in a caller's packed encoding.
pub const TAG_PACKED_MIN: u8 = 1;
/// The last tag of values in a caller's packed encoding.
pub const TAG_PACKED_MAX: u8 = 6;
/// The value is the address of an [`ObjectCell`].
pub const TAG_OBJECT: u8 = 7;
/// The meta-byte bits that hold the tag (bits 0-2).
pub(crate) const TAG_MASK: u8 = 0b0000_0111;

const _: () = assert!(TAG_OBJECT == TAG_MASK && TAG_PACKED_MAX < TAG_OBJECT && TAG_BYTES < TAG_PACKED_MIN);

/// Bytes of an object item's value: the cell's address.
pub(crate) const OBJECT_VALUE_BYTES: usize = 8;

/// A value that lives outside its item (see the module notes).
///
/// Implementations are plain data: the engine calls these methods under
/// the cell's lock, from any thread.
pub trait Object: Any + Send + Sync {
    /// Bytes the value holds from the allocator (capacities, not
    /// lengths), so `-m` is charged what the value really costs.
    fn mem_bytes(&self) -> usize;
    /// The caller's kind number for this value (persistence writes it
    /// next to [`Object::encode`]'s bytes to decode it again).
    fn kind(&self) -> u8;
    /// Appends the value's snapshot encoding to `out`.
    fn encode(&self, out: &mut Vec<u8>);
    /// `self` as `Any`, to downcast to the concrete type.
    fn as_any(&self) -> &dyn Any;
    /// `self` as `Any`, to downcast to the concrete type.
    fn as_any_mut(&mut self) -> &mut dyn Any;
    /// Addresses of the memory a change of the value is about to touch,
    /// `level` pointers away from the value (0: addresses its own fields
    /// give; 1: addresses read from what level 0 named), at most
    /// [`HINT_ADDRS`]; 0 for none. Only prefetch hints
    /// ([`Store::prefetch_updates`](crate::Store::prefetch_updates)):
    /// never dereferenced by the engine. None by default.
    fn hint_addrs(&self, level: usize) -> [usize; HINT_ADDRS] {
        let _ = level;
        [0; HINT_ADDRS]
    }
}

/// Addresses [`Object::hint_addrs`] names per level.
pub const HINT_ADDRS: usize = 2;
/// Levels of [`Object::hint_addrs`] the engine asks for.
pub const HINT_LEVELS: usize = 2;

impl std::fmt::Debug for dyn Object {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Object {{ kind: {}, mem_bytes: {} }}", self.kind(), self.mem_bytes())
    }
}

/// An object and its lock, at a stable heap address that an item holds.
pub struct ObjectCell {
    value: RwLock<Box<dyn Object>>,
    /// The bytes this object is charged for right now (see MEMORY).
    charged: AtomicUsize,
    /// In-place writes since the object was created (or the version
    /// recovery restored it at): raised by one under the bucket lock
    /// before each `Change::Op` is journaled, which carries it. So a log
    /// replayed over a snapshot that already holds some of its ops can
    /// tell them (at or below the snapshot's version) from the ones to
    /// apply (the next one), as Put records need not (journal.rs).
    version: AtomicU64,
}

impl std::fmt::Debug for ObjectCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectCell").field("charged", &self.charged.load(Ordering::Relaxed)).finish()
    }
}

impl ObjectCell {
    pub(crate) fn new(value: Box<dyn Object>) -> Box<ObjectCell> {
        let charged = value.mem_bytes() + std::mem::size_of::<ObjectCell>();
        Box::new(ObjectCell {
            value: RwLock::new(value),
            charged: AtomicUsize::new(charged),
            version: AtomicU64::new(0),
        })
    }

    /// In-place writes since the object was created or restored (see the
    /// field). Stable while the caller holds the item's bucket lock.
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Relaxed)
    }

    /// Recovery: the version the object had when it was logged or
    /// snapshotted. Only before the store serves, or under the item's
    /// bucket lock.
    pub fn set_version(&self, version: u64) {
        self.version.store(version, Ordering::Relaxed);
    }

    /// One more in-place write; under the item's bucket lock.
    pub(crate) fn bump_version(&self) {
        self.version.fetch_add(1, Ordering::Relaxed);
    }

    /// Shared access; other readers run alongside, writers wait.
    pub fn read(&self) -> RwLockReadGuard<'_, Box<dyn Object>> {
        // A panic while a writer held the lock leaves the value as that
        // writer left it; readers carry on with it (Redis would have
        // crashed; one broken command must not take every reader down).
        self.value.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Exclusive access. Only a holder of the item's bucket lock may
    /// write (the engine passes the cell to `Store::update`'s closure).
    /// The value read-locked if no writer holds it, without waiting
    /// (prefetch hints).
    pub(crate) fn try_read(&self) -> Option<RwLockReadGuard<'_, Box<dyn Object>>> {
        self.value.try_read().ok()
    }

    pub fn write(&self) -> RwLockWriteGuard<'_, Box<dyn Object>> {
        self.value.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The bytes charged for the object now.
    pub(crate) fn charged(&self) -> usize {
        self.charged.load(Ordering::Relaxed)
    }

    /// Re-measures the object after an in-place write; returns the change
    /// in its charge. Called under the bucket lock, so charges of one
    /// cell never race.
    pub(crate) fn recharge(&self) -> i64 {
        let now = self.read().mem_bytes() + std::mem::size_of::<ObjectCell>();
        let before = self.charged.swap(now, Ordering::Relaxed);
        now as i64 - before as i64
    }
}

/// The cell address an object item's value holds.
pub(crate) fn cell_addr(value: &[u8]) -> *const ObjectCell {
    let bytes: [u8; OBJECT_VALUE_BYTES] = value.try_into().expect("an object item's value is an address");
    usize::from_le_bytes(bytes) as *const ObjectCell
}

/// The value bytes of an item that holds `cell`.
pub(crate) fn addr_value(cell: *const ObjectCell) -> [u8; OBJECT_VALUE_BYTES] {
    (cell as usize).to_le_bytes()
}

/// Ownership of a retired cell, freed by the epoch collector.
pub(crate) struct RetiredCell(pub(crate) *mut ObjectCell);

// SAFETY: the cell is Send + Sync (its Object is); the pointer is the
// unique owner once retired (no item holds it any more).
unsafe impl Send for RetiredCell {}

impl RetiredCell {
    /// The bytes charged for the object (for the epoch bag's byte bound).
    pub(crate) fn charged(&self) -> usize {
        // SAFETY: the cell is live until this RetiredCell drops it, and
        // once retired nothing else frees it (the impls above).
        unsafe { (*self.0).charged() }
    }
}

impl Drop for RetiredCell {
    fn drop(&mut self) {
        // SAFETY: the address came from Box::into_raw when the object was
        // stored, and is retired exactly once (module notes: one owner).
        drop(unsafe { Box::from_raw(self.0) });
    }
}
