//! Key events: what the engine tells a watcher about a key that only the
//! engine sees happen — a key created, a key whose deadline passed
//! unlinked, a live key evicted for memory. The server turns them into
//! Redis's keyspace notifications `new`, `expired` and `evicted`
//! (amalgam-commands `notify.rs`); the engine knows no protocol, only
//! stored keys.
//!
//! ## Cost while nobody listens
//! The watcher is installed once ([`Store::set_key_watcher`]); which
//! events it wants is a mask the server sets at run time
//! ([`Store::watch_keys`], CONFIG SET notify-keyspace-events). Every site
//! reads the mask with one relaxed load where it already holds the item,
//! and calls out only once the bucket lock is released, so a watcher's
//! work (a Pub/Sub publish) never runs under an engine lock.
//!
//! ## Where each event comes from
//! * **created**: a write that published an item where no live item was
//!   (`store/mutate.rs`): SET of a new key, the first push of a list, the
//!   destination of RENAME, MOVE and COPY. Not RESTORE into recovery or
//!   replication's loads (they write through the same path: a replica's
//!   subscribers hear its primary's new keys, as a Redis replica's do).
//! * **expired**: an item past its deadline unlinked — by a write that
//!   found it (`mutate`), by the background expiry sweep
//!   (`store/maintenance.rs`) or by a segment's reclamation
//!   (`reclaim.rs`, `outsized.rs`). A read that finds an item past its
//!   deadline answers a miss and leaves the unlinking to these (the read
//!   path takes no lock), so `expired` may come up to one sweep after the
//!   deadline, as Redis's active expiry's does.
//! * **evicted**: a live item a cache's reclamation dropped.
//!
//! Items a FLUSHALL fenced off are unlinked silently, as Redis's flush
//! tells no key.

use crate::store::{Inner, ItemRef, Store};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// [`KeyEvent::Created`]'s bit of the mask.
pub const CREATED: u8 = 1;
/// [`KeyEvent::Expired`]'s bit of the mask.
pub const EXPIRED: u8 = 2;
/// [`KeyEvent::Evicted`]'s bit of the mask.
pub const EVICTED: u8 = 4;

/// What happened to a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyEvent {
    /// A write created it.
    Created,
    /// Unlinked: its deadline had passed.
    Expired,
    /// Unlinked live, to make room.
    Evicted,
}

impl KeyEvent {
    fn bit(self) -> u8 {
        match self {
            KeyEvent::Created => CREATED,
            KeyEvent::Expired => EXPIRED,
            KeyEvent::Evicted => EVICTED,
        }
    }
}

/// Told of the key events its mask asks for, on the thread where they
/// happen (a worker's write, the maintenance thread's sweep), with no
/// engine lock held.
pub trait KeyWatcher: Send + Sync + std::fmt::Debug {
    /// `key` is the stored key (its namespace prefix included).
    fn key_event(&self, event: KeyEvent, key: &[u8]);
}

impl Store {
    /// Installs the key watcher (once; Err if one is installed). It hears
    /// nothing until [`Store::watch_keys`] asks for events.
    pub fn set_key_watcher(&self, watcher: Arc<dyn KeyWatcher>) -> Result<(), Arc<dyn KeyWatcher>> {
        self.inner.key_watcher.set(watcher)
    }

    /// Sets which events the watcher hears: a mask of [`CREATED`],
    /// [`EXPIRED`] and [`EVICTED`] (0: none).
    pub fn watch_keys(&self, mask: u8) {
        self.inner.key_events.store(mask, Ordering::Relaxed);
    }
}

impl Inner {
    /// True if the watcher wants events of `bit` now.
    #[inline(always)]
    pub(crate) fn watching(&self, bit: u8) -> bool {
        self.key_events.load(Ordering::Relaxed) & bit != 0
    }

    /// True if the dead item at `p` died of its deadline, not of a
    /// FLUSHALL's fence (a dead item is one or the other).
    ///
    /// # Safety
    /// `p` is an item the caller's bucket lock or pin keeps allocated.
    pub(crate) unsafe fn dead_by_expiry(&self, p: *const u8) -> bool {
        // SAFETY: forwarded from the caller.
        let it = unsafe { ItemRef::new(p) };
        let fence = self.flush_cas.load(Ordering::Relaxed);
        !(fence != 0 && it.cas() < fence) && it.expiry_raw() != 0
    }

    /// A write's events (mutate.rs: a mask of [`EXPIRED`] and
    /// [`CREATED`]; call with no lock held).
    #[cold]
    #[inline(never)]
    pub(crate) fn tell_write(&self, events: u8, key: &[u8]) {
        if events & EXPIRED != 0 {
            self.tell(KeyEvent::Expired, key);
        }
        if events & CREATED != 0 {
            self.tell(KeyEvent::Created, key);
        }
    }

    /// Tells the watcher of `event` if it wants it (call with no lock held).
    #[cold]
    #[inline(never)]
    pub(crate) fn tell(&self, event: KeyEvent, key: &[u8]) {
        if self.watching(event.bit()) {
            if let Some(w) = self.key_watcher.get() {
                w.key_event(event, key);
            }
        }
    }
}
