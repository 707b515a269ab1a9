//! The heart of every write: `Inner::mutate` locks the key's bucket
//! (following an expansion), hands the key's live item to the write's
//! decision and applies it (publish a new item, remove the key, or keep
//! an object changed in place), journaling and counting under the lock;
//! and what a write needs first: a CAS unique (`Inner::next_cas`) and its
//! new item built (`Inner::build`).

use super::{count_change, local_add, Error, Expiry, Inner, ItemRef, Pinned};
use crate::item::{self, Meta};
use crate::journal::Change;
use crate::key_events;
use crate::local::Local;
use crate::object::{ObjectCell, TAG_BYTES};
use crate::pool::Block;
use crate::table::split_hash;
use std::sync::atomic::Ordering;

/// CAS values a thread reserves at once, so writers on different cores do
/// not all increment one shared counter.
const CAS_BLOCK: u64 = 1024;

/// What a write operation decided to do with the key's item.
pub(crate) enum Decision<R> {
    Keep(R),
    Put(Block, R),
    Remove(R),
    /// The live item's object was changed in place (`Update::InPlace`):
    /// re-measure it and journal the record.
    InPlace(R, Vec<u8>),
    /// [`Decision::Put`] of an item that holds another key's object, which
    /// the same transaction unlinks with [`Decision::RemoveMoved`]
    /// (`Store::rename`): the object is counted already.
    PutMoved(Block, R),
    /// [`Decision::Remove`] of an item whose object another key's item now
    /// holds: the object is neither retired nor uncounted.
    RemoveMoved(R),
}

/// The size and fields of the item a write will build.
pub(super) struct NewItem<'k> {
    pub(super) key: &'k [u8],
    pub(super) vlen: usize,
    pub(super) flags: u32,
    pub(super) expiry: Expiry,
    /// Meta-protocol marks (item::MARK_*).
    pub(super) marks: u8,
}

impl Inner {
    /// Later CAS uniques are at least `floor` (recovery). Threads drop
    /// their CAS blocks, which may lie below it.
    pub(crate) fn raise_cas_counter(&self, floor: u64) {
        if self.cas_counter.fetch_max(floor, Ordering::AcqRel) < floor {
            self.flush_generation.fetch_add(1, Ordering::SeqCst);
        }
    }

    pub(crate) fn cas_floor(&self) -> u64 {
        self.cas_counter.load(Ordering::Acquire)
    }

    pub(crate) fn next_cas(&self, local: &Local) -> u64 {
        // A write after a delayed flush's time must not be flushed by it.
        self.flush_if_due();
        // SAFETY: local is the calling thread's own Local; no other
        // reference to its owned part is live here.
        let owned = unsafe { local.owned() };
        let generation = self.flush_generation.load(Ordering::Acquire);
        if owned.cas_next == owned.cas_end || owned.cas_generation != generation {
            owned.cas_next = self.cas_counter.fetch_add(CAS_BLOCK, Ordering::AcqRel);
            owned.cas_end = owned.cas_next + CAS_BLOCK;
            owned.cas_generation = generation;
        }
        let cas = owned.cas_next;
        owned.cas_next += 1;
        cas
    }

    /// Allocates and fills the header and key of a new item; the caller
    /// writes `vlen` value bytes at the returned offset.
    pub(super) fn build(&self, local: &Local, n: &NewItem<'_>, cas: u64) -> Result<(Block, usize), Error> {
        self.build_limited(local, n, cas, self.item_size_max)
    }

    /// [`Inner::build`] with an explicit size limit (touch: see there).
    pub(super) fn build_limited(
        &self,
        local: &Local,
        n: &NewItem<'_>,
        cas: u64,
        limit: usize,
    ) -> Result<(Block, usize), Error> {
        let (expiry, expiry_ms) = n.expiry.raw();
        let meta = Meta { cas, flags: n.flags, expiry, expiry_ms, marks: n.marks };
        // Written once per store (a read first, so the line stays shared).
        if meta.expiry != 0 && !self.ttl_seen.load(Ordering::Relaxed) {
            self.ttl_seen.store(true, Ordering::Relaxed);
        }
        // SAFETY: our own Local; the reference ends with this statement.
        let too_large = match unsafe { local.owned() }.value_bytes_max {
            Some(value_max) => n.vlen > value_max,
            None => item::limit_len(n.key.len(), n.vlen, &meta) > limit,
        };
        if too_large {
            return Err(Error::TooLarge);
        }
        let len = item::encoded_len(n.key.len(), n.vlen, &meta);
        let block = match (&self.cache, &self.shared.segments) {
            (Some(_), Some(segs)) if len > segs.segment_bytes() => self.alloc_outsized(local, n.key, len)?,
            (Some(c), _) => self.alloc_in_segment(local, c, self.hash(n.key), len)?,
            (None, _) => self.alloc(local, len)?,
        };
        // SAFETY: the block is fresh, at least `len` bytes, and ours.
        let dst = unsafe { std::slice::from_raw_parts_mut(block.ptr, len) };
        let at = item::write_header_and_key(dst, n.key, n.vlen, &meta);
        Ok((block, at))
    }

    /// The heart of every write: locks the key's bucket (following
    /// expansion), gives `decide` the key's live item if any, and applies
    /// its decision. Expired or flushed items are treated as absent and
    /// reclaimed on the way.
    pub(crate) fn mutate<R: IndexFull>(
        &self,
        key: &[u8],
        decide: impl FnOnce(&Local, Option<ItemRef<'_>>) -> Decision<R>,
    ) -> R {
        let pin = Pinned::new(self);
        let hash = self.hash(key);
        let tag = split_hash(hash).1;
        let mut guard = pin.current().lock_routed(hash);
        self.snapshot_before_write(&guard, hash);
        let t = guard.table();
        let found = guard.find(tag, key);
        let mut now = None;
        let live = found.and_then(|(_, p)| {
            // SAFETY: p is in a slot of the bucket we hold locked.
            let it = unsafe { ItemRef::new(p) };
            self.is_live(&it, &mut now).then_some(it)
        });
        let old_bytes = |p: *const u8| {
            // SAFETY: p is in a slot of the locked bucket (or the block
            // about to be published).
            unsafe { counted_bytes(p) }
        };
        let decision = decide(pin.local, live);
        let moved_object = matches!(decision, Decision::PutMoved(..) | Decision::RemoveMoved(..));
        // Key events (key_events.rs): one load and a test while no one
        // watches; the events themselves are worked out out of line.
        let events = if self.key_events.load(Ordering::Relaxed) != 0 {
            // SAFETY: a found item is in a slot of the bucket we hold locked.
            unsafe { self.write_events(found.map(|(_, p)| p), live.is_some(), &decision) }
        } else {
            0
        };
        let local = pin.local;
        // The item this write published, if any.
        let mut result_block = None;
        // Its record is framed once the bucket is unlocked
        // (`Journal::record_large`).
        let mut fill_later = false;
        let (result, removed) = match decision {
            Decision::Keep(r) => {
                // A dead item the decision did not replace is reclaimed now.
                match (found, live) {
                    (Some((slot, p)), None) => {
                        guard.remove(slot);
                        self.count_class(key, -1);
                        (r, Some(p))
                    }
                    _ => (r, None),
                }
            }
            Decision::Put(block, r) | Decision::PutMoved(block, r) => {
                let new_bytes = old_bytes(block.ptr);
                let replaced = match found {
                    Some((slot, p)) => {
                        guard.replace(slot, tag, block.ptr);
                        Some(p)
                    }
                    None => {
                        if guard.insert(tag, block.ptr).is_err() {
                            // The block is ours to free (IndexFull), and
                            // so is a new object it holds (no old item
                            // here could have held it).
                            drop(guard);
                            // SAFETY: the block is unpublished and ours.
                            unsafe { drop_unpublished_object(block.ptr) };
                            self.free_unpublished(local, block);
                            return R::index_full();
                        }
                        self.note_insert(local, t);
                        self.count_class(key, 1);
                        None
                    }
                };
                // Published: journaled and counted (still under the lock,
                // so one key's records keep its order).
                if let Some(j) = self.journal.get() {
                    // SAFETY: the block is the item just published under
                    // the lock we hold; nothing can unlink it before we
                    // release the lock.
                    let it = unsafe { ItemRef::new(block.ptr) };
                    // A rewrite that kept an object (NewValue::Same: the
                    // EXPIRE family) changed only the item's fields: a
                    // Meta, so the log does not copy a large collection
                    // for a TTL.
                    if replaced.is_some_and(|p| same_object(p, block.ptr)) {
                        j.record(Change::Meta(it));
                    } else if it.tag() == TAG_BYTES && it.value().len() >= crate::JOURNAL_LARGE_VALUE_BYTES_MIN {
                        fill_later = j.record_large(it);
                    } else {
                        j.record(Change::Put(it));
                    }
                }
                if let Some(segs) = self.shared.segments.as_ref().filter(|s| s.contains(block.ptr)) {
                    segs.add_live(block.ptr, block.bytes as i64);
                }
                local_add(&local.bytes, new_bytes);
                local_add(&local.items, 1);
                // SAFETY: the block just published; we hold its bucket lock.
                let ttl = unsafe { item::has_expiry(block.ptr) };
                count_change(local, key, 1, i64::from(ttl));
                // A new object starts counting (one the old item held is
                // counted already, and stays if the new item keeps it; a
                // moved one is counted already).
                if !moved_object && !replaced.is_some_and(|p| same_object(p, block.ptr)) {
                    // SAFETY: the block is the item just published; we
                    // hold its bucket lock.
                    if let Some(cell) = unsafe { ItemRef::new(block.ptr) }.object() {
                        local_add(&local.object_bytes, cell.charged() as i64);
                    }
                }
                result_block = Some(block);
                (r, replaced)
            }
            Decision::Remove(r) | Decision::RemoveMoved(r) => match found {
                Some((slot, p)) => {
                    if let (Some(j), Some(_)) = (self.journal.get(), live) {
                        j.record(Change::Delete(key));
                    }
                    guard.remove(slot);
                    self.count_class(key, -1);
                    (r, Some(p))
                }
                None => (r, None),
            },
            Decision::InPlace(r, record) => {
                // update() answers InPlace only for a live object item.
                let it = live.expect("InPlace needs the live item");
                let cell = it.object().expect("InPlace needs an object item");
                let delta = cell.recharge();
                local_add(&local.bytes, delta);
                local_add(&local.object_bytes, delta);
                // Under the bucket lock, like the write: the record below
                // carries the version this write made (object.rs).
                cell.bump_version();
                if let Some(j) = self.journal.get() {
                    j.record(Change::Op { item: it, record: &record });
                }
                (r, None)
            }
        };
        // The object of a replaced item goes with it, unless the new item
        // holds the same cell (a rewrite that kept the value).
        let kept_cell = match (removed, &result_block) {
            (Some(p), Some(b)) => same_object(p, b.ptr),
            // The object moved to another key (`Store::rename`).
            (Some(_), None) => moved_object,
            _ => false,
        };
        drop(guard);
        if events != 0 {
            self.tell_write(events, key);
        }
        if fill_later {
            if let Some(b) = &result_block {
                self.fill_unlocked(b.ptr, &pin);
            }
        }
        if let Some(p) = removed {
            local_add(&local.bytes, -old_bytes(p));
            local_add(&local.items, -1);
            // SAFETY: p was unlinked under the lock and is retired below,
            // after this (our pin keeps it).
            let ttl = unsafe { item::has_expiry(p) };
            count_change(local, key, -1, -i64::from(ttl));
            if !kept_cell {
                self.retire_object(local, p);
            }
            self.retire_item(local, p);
        }
        result
    }

    /// `Journal::fill` of the item at `p`, which this thread published and
    /// whose bucket it has released (`Journal::record_large`); inside a
    /// transaction, queued until the transaction releases its buckets.
    /// Kept out of line: the write path pays one flag test for it.
    #[cold]
    #[inline(never)]
    fn fill_unlocked(&self, p: *const u8, _pin: &Pinned<'_>) {
        let Some(j) = self.journal.get() else { return };
        if crate::txn::active() {
            // The transaction's buckets are still held: filled when it
            // releases them (`Store::atomically`), under its pin.
            crate::txn::fill_later(p);
        } else {
            // SAFETY: the item this thread published; its bucket is
            // unlocked, so another writer may have replaced it, but `_pin`
            // (the writer's, held until after this call) keeps its memory
            // until we unpin, and a plain item's bytes are never changed
            // once published.
            j.fill(unsafe { ItemRef::new(p) });
        }
    }
}

/// A write's result type, as far as memory goes.
///
/// `index_full` is what a write answers when its key's chain is at
/// CHAIN_NODES_MAX or the overflow arena is exhausted: out of memory,
/// never a panic (`mutate` frees the block it was handed, and nothing is
/// journaled). Unreachable in practice (the load factor keeps chains at
/// about one node, and 1024 nodes hold 7168 items), but a snapshot holds
/// expansion off, so a huge insert burst during a long snapshot is bounded
/// by this, not by luck.
///
/// `is_out_of_memory` is what `Inner::with_room` retries on (index_full's
/// answer included: retrying it is useless but bounded, and it does not
/// happen in practice).
pub(crate) trait IndexFull {
    fn index_full() -> Self;
    fn is_out_of_memory(&self) -> bool;
}

impl<T> IndexFull for Result<T, Error> {
    fn index_full() -> Self {
        Err(Error::OutOfMemory)
    }
    fn is_out_of_memory(&self) -> bool {
        matches!(self, Err(Error::OutOfMemory))
    }
}

impl<T> IndexFull for Option<Result<T, Error>> {
    fn index_full() -> Self {
        Some(Err(Error::OutOfMemory))
    }
    fn is_out_of_memory(&self) -> bool {
        self.as_ref().is_some_and(IndexFull::is_out_of_memory)
    }
}

/// Writes `parts` one after another at `at` in a fresh block.
pub(super) fn fill(block: Block, at: usize, parts: &[&[u8]]) {
    let mut at = at;
    for part in parts {
        // SAFETY: the block was sized by encoded_len for exactly these
        // parts, and it is ours (unpublished): no other reference to
        // these bytes exists.
        let dst = unsafe { std::slice::from_raw_parts_mut(block.ptr.add(at), part.len()) };
        item::copy_short(dst, part);
        at += part.len();
    }
}

/// Bytes an item counts for in the `bytes` statistic: its key and value,
/// and for an object item its object's charge (object.rs, MEMORY).
///
/// # Safety
/// `p` is an item still allocated (locked, pinned, or ours unpublished).
pub(super) unsafe fn counted_bytes(p: *const u8) -> i64 {
    // SAFETY: forwarded from the caller.
    let it = unsafe { ItemRef::new(p) };
    let object = it.object().map_or(0, |c| c.charged());
    (it.key().len() + it.value().len() + object) as i64
}

/// True if `old` and `new` are object items holding the same cell (a
/// rewrite that kept the value: the cell moves, it is not retired).
fn same_object(old: *const u8, new: *const u8) -> bool {
    // SAFETY: both are items the caller holds under the bucket lock.
    let (old, new) = unsafe { (ItemRef::new(old), ItemRef::new(new)) };
    match (old.object(), new.object()) {
        (Some(a), Some(b)) => std::ptr::eq(a, b),
        _ => false,
    }
}

/// Frees the new object an unpublished item holds, if it is an object
/// item.
///
/// # Safety
/// `p` is an unpublished item built by this write, whose cell (if any)
/// was created by this write, or the store is being dropped and `p` is
/// in its index: either way nothing else owns or reads the cell.
pub(super) unsafe fn drop_unpublished_object(p: *const u8) {
    // SAFETY: forwarded from the caller.
    let it = unsafe { ItemRef::new(p) };
    if let Some(cell) = it.object() {
        // SAFETY: the cell came from Box::into_raw in this write and was
        // never published.
        drop(unsafe { Box::from_raw(cell as *const ObjectCell as *mut ObjectCell) });
    }
}

impl Inner {
    /// The key events of a write that decided `decision` over the item
    /// `found` (`live` if it was): [`key_events::EXPIRED`] if a dead item
    /// it unlinks had expired, [`key_events::CREATED`] if it publishes
    /// where nothing lived, or is a rename's destination (created even
    /// over a live key: Redis's RENAME deletes it, then adds). Only the
    /// events watched now.
    ///
    /// # Safety
    /// `found` is in a slot of the bucket the caller holds locked.
    #[cold]
    #[inline(never)]
    unsafe fn write_events<R>(&self, found: Option<*const u8>, live: bool, decision: &Decision<R>) -> u8 {
        let mut events = 0;
        if let Some(p) = found.filter(|_| !live && self.watching(key_events::EXPIRED)) {
            // SAFETY: forwarded from the caller.
            if unsafe { self.dead_by_expiry(p) } {
                events |= key_events::EXPIRED;
            }
        }
        let created = matches!(decision, Decision::PutMoved(..)) || (!live && matches!(decision, Decision::Put(..)));
        if created && self.watching(key_events::CREATED) {
            events |= key_events::CREATED;
        }
        events
    }
}
