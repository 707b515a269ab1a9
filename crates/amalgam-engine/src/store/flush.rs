//! `flush_all`, now or at a later second: the flush fence (an item whose
//! CAS unique is below it is dead), the delayed flush, and the flush state
//! the journal records (journal.rs, "The flush state").

use super::{Inner, Store};
use crate::journal::Change;
use std::sync::atomic::Ordering;

impl Inner {
    /// Runs a delayed `flush_all` whose time has come.
    ///
    /// Fix (found by tests/model_edges.rs): the delayed flush used to run
    /// only when the maintenance thread next woke (up to
    /// MAINTENANCE_PERIOD later, or after a whole expansion), so the items
    /// it flushes stayed visible past its time, and items stored after its
    /// time were flushed with them (a lost write). memcached compares items
    /// with the flush time on every access; here every liveness check and
    /// every new CAS unique (so every write) runs a due flush first. The
    /// fast path is one load of a field that is 0 unless a flush is
    /// pending.
    #[inline]
    pub(super) fn flush_if_due(&self) {
        let due = self.flush_at.load(Ordering::Acquire);
        if due != 0 {
            self.flush_if_due_slow(due);
        }
    }

    #[cold]
    #[inline(never)]
    fn flush_if_due_slow(&self, due: u64) {
        if due <= self.now() as u64 {
            let _flush = self.lock_flush();
            self.flush_if_due_locked();
        }
    }

    /// Runs a delayed flush whose time has come; the caller holds
    /// `flush_lock` (so the check, the clearing of `flush_at` and the
    /// journaled Flush are one step for every other flush path).
    pub(super) fn flush_if_due_locked(&self) {
        let due = self.flush_at.load(Ordering::Acquire);
        if due != 0 && due <= self.now() as u64 {
            self.flush_at.store(0, Ordering::Release);
            self.flush_now();
        }
    }

    /// Takes `flush_lock` (a panic while holding it leaves nothing half
    /// done that matters: the state is two atomics).
    pub(crate) fn lock_flush(&self) -> std::sync::MutexGuard<'_, ()> {
        self.flush_lock.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Journals the flush state as it is now, for a snapshot (journal.rs,
    /// "The flush state"): the fence as a Flush, then a pending delayed
    /// flush as a FlushAt. Replayed in order they leave a store with this
    /// state (a replayed Flush cancels a delayed flush, as every Flush
    /// did). Takes `flush_lock`.
    pub(crate) fn journal_flush_state(&self, j: &dyn crate::journal::Journal) {
        let _flush = self.lock_flush();
        self.flush_if_due_locked();
        let fence_cas = self.flush_cas.load(Ordering::SeqCst);
        if fence_cas != 0 {
            j.record(Change::Flush { fence_cas });
        }
        let at = self.flush_at.load(Ordering::Acquire);
        if at != 0 {
            j.record(Change::FlushAt { at: at as u32 });
        }
    }

    /// Recovery's Flush (Store::restore_flush): the fence, and no delayed
    /// flush pending, as after every journaled Flush.
    pub(crate) fn restore_flush_state(&self, fence_cas: u64) {
        let _flush = self.lock_flush();
        self.flush_at.store(0, Ordering::Release);
        self.raise_cas_counter(fence_cas);
        self.flush_fence(fence_cas);
    }

    /// True while a flush's items may still be in the index: the fence is
    /// above the one the last whole sweep ran under (a due delayed flush
    /// is run first).
    pub(crate) fn flush_unswept(&self) -> bool {
        self.flush_if_due();
        self.flush_cas.load(Ordering::SeqCst) > self.swept_fence.load(Ordering::Acquire)
    }

    /// Flushes everything now and journals it; the caller holds
    /// `flush_lock`.
    pub(super) fn flush_now(&self) {
        let fence_cas = self.cas_counter.load(Ordering::SeqCst);
        if let Some(j) = self.journal.get() {
            j.record(Change::Flush { fence_cas });
        }
        self.flush_fence(fence_cas);
    }

    /// Items with a CAS below `fence_cas` are flushed from now on.
    pub(crate) fn flush_fence(&self, fence_cas: u64) {
        self.flush_cas.fetch_max(fence_cas, Ordering::SeqCst);
        self.flush_generation.fetch_add(1, Ordering::SeqCst);
        self.sweep_requested.store(true, Ordering::Release);
        if let Some(th) = self.maintenance_thread.get() {
            th.unpark();
        }
    }
}

impl Store {
    /// Invalidates every item now (memcached's `flush_all`); their memory
    /// is reclaimed by the background sweep.
    ///
    /// ```
    /// # use amalgam_engine::{Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// store.set(b"k", b"v", 0, Expiry::Never).unwrap();
    /// store.flush_all();
    /// assert!(store.get(b"k", |_| ()).is_none());
    /// ```
    pub fn flush_all(&self) {
        let _flush = self.inner.lock_flush();
        self.inner.flush_at.store(0, Ordering::Release);
        self.inner.flush_now();
    }

    /// Invalidates, at unix time `at`, every item stored before then
    /// (memcached's `flush_all <delay>`), with one-second precision.
    ///
    /// ```
    /// # use amalgam_engine::{Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// store.flush_all_at(store.now() + 3600);
    /// ```
    pub fn flush_all_at(&self, at: u32) {
        if at <= self.inner.now() {
            return self.flush_all();
        }
        // Under flush_lock, so that the journal's order of Flush and
        // FlushAt records is the order they took effect in (journal.rs).
        let _flush = self.inner.lock_flush();
        // A pending flush whose time has come takes effect now, before the
        // new one replaces it: memcached would let the new, later time
        // revive the items the old one already hid.
        self.inner.flush_if_due_locked();
        if let Some(j) = self.inner.journal.get() {
            j.record(Change::FlushAt { at });
        }
        self.inner.flush_at.store(at as u64, Ordering::Release);
    }
}
