//! The write clock: when an item was stored, from its CAS unique alone.
//!
//! memcached keeps a store time in every item (`it->time`, answered by
//! `mg`'s `l` flag and `me`'s `la=`). Amalgam's items have no field for it
//! (the header's size is a headline number, item.rs), but every write takes
//! a fresh CAS unique from one counter, in order. So the store records, once
//! per second, the counter's value: the checkpoint `(second, cas)` says
//! every CAS handed out from `cas` on was handed out at `second` or later.
//! An item's store time is the second of the last checkpoint at or below
//! its CAS.
//!
//! ## How it stays exact to about a second
//! Threads take CAS uniques in blocks (store/mutate.rs, `CAS_BLOCK`), and a block
//! taken in one second could be used for minutes by a thread that writes
//! rarely. While someone asks for store times, each checkpoint therefore
//! also bumps the generation every thread compares before it uses its
//! block (`flush_generation`, already loaded by every write), so each
//! thread's next write takes a fresh block. The checkpoint is taken on the
//! maintenance thread's wake (every `MAINTENANCE_PERIOD`, 250 ms), so a
//! write in the first quarter second of a second may count to the second
//! before: memcached's own clock ticks once a second too.
//!
//! Dropping a block wastes the rest of it (up to 1023 CAS values per
//! writing thread per second), and CAS uniques above 2^32 make every
//! header a byte longer (item.rs). So blocks are dropped only while store
//! times are *wanted*: for [`WANTED_SECONDS`] after the store starts and
//! after each [`WriteClock::stored_at`] (an `mg … l` or an `me`). A
//! server whose clients never ask stops paying after its first hour; an
//! item written after that and before the next ask may read older than it
//! is (by the age of its thread's block then).
//!
//! ## Limits
//! * [`CHECKPOINTS_MAX`] seconds *in which something was written* are
//!   kept (a second with no write replaces its predecessor's checkpoint,
//!   which then covers no CAS). An item older than the oldest is reported
//!   as stored then: its age is a lower bound.
//! * Recovery restores items with their old CAS uniques, below the
//!   counter at the store's start: they read as stored at the start (the
//!   restart). A CAS the client chose (meta `E`) maps to whatever second
//!   the counter passed that value (the newest, for one above it): a
//!   wrong age for that item, never a panic.
//! * While the maintenance thread expands a large table, no checkpoint is
//!   taken: writes in that time count to the second the expansion began.
//! * A fetch does not move the time (memcached bumps it on an item's
//!   second fetch, or when older than `ITEM_UPDATE_INTERVAL`, 60 s): there
//!   is nowhere to write it without a shared write on the GET path.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

/// How long after the last ask for a store time threads keep dropping
/// their CAS blocks every second (see the module doc).
pub(crate) const WANTED_SECONDS: u32 = 3600;

/// Checkpoints kept: at one per second of writes, over an hour of them.
pub(crate) const CHECKPOINTS_MAX: usize = 4096;

/// The checkpoints, oldest first; cas values strictly increasing.
#[derive(Debug)]
pub(crate) struct WriteClock {
    /// `(unix second, first CAS of that second)`. A mutex: written once
    /// a second by the maintenance thread, read only by `mg l` and `me`.
    checkpoints: Mutex<VecDeque<(u32, u64)>>,
    /// The newest checkpoint's second, read without the lock by the
    /// maintenance thread's every wake.
    last_second: AtomicU32,
    /// Store times are wanted until this unix second.
    wanted_until: AtomicU32,
}

impl WriteClock {
    pub(crate) fn new(now: u32, cas: u64) -> WriteClock {
        let mut checkpoints = VecDeque::with_capacity(CHECKPOINTS_MAX);
        checkpoints.push_back((now, cas));
        WriteClock {
            checkpoints: Mutex::new(checkpoints),
            last_second: AtomicU32::new(now),
            wanted_until: AtomicU32::new(now.saturating_add(WANTED_SECONDS)),
        }
    }

    /// True if `now` is past the newest checkpoint (a tick is due).
    pub(crate) fn due(&self, now: u32) -> bool {
        now > self.last_second.load(Ordering::Relaxed)
    }

    /// True if threads should drop their CAS blocks at the ticks.
    pub(crate) fn wanted(&self, now: u32) -> bool {
        now < self.wanted_until.load(Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<(u32, u64)>> {
        self.checkpoints.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records that CAS uniques from `cas` on are handed out at `now` or
    /// later. Returns false if `now` is the newest checkpoint's second
    /// (nothing to do; the caller need not make threads drop their blocks).
    pub(crate) fn tick(&self, now: u32, cas: u64) -> bool {
        let mut c = self.lock();
        let &(last_s, last_cas) = c.back().expect("never empty");
        if now <= last_s {
            return false;
        }
        self.last_second.store(now, Ordering::Relaxed);
        if cas <= last_cas {
            // No CAS handed out since: the last checkpoint covers nothing,
            // so it moves to this second.
            *c.back_mut().expect("never empty") = (now, last_cas);
        } else {
            if c.len() == CHECKPOINTS_MAX {
                c.pop_front();
            }
            c.push_back((now, cas));
        }
        true
    }

    /// The unix second at which the CAS unique `cas` was handed out (the
    /// oldest checkpoint's second for anything older). Bounded: a binary
    /// search over at most [`CHECKPOINTS_MAX`] entries.
    pub(crate) fn stored_at(&self, cas: u64, now: u32) -> u32 {
        let until = now.saturating_add(WANTED_SECONDS);
        // Written at most once a second (a read first keeps the line shared).
        if self.wanted_until.load(Ordering::Relaxed) < until - 1 {
            self.wanted_until.store(until, Ordering::Relaxed);
        }
        let c = self.lock();
        // The first checkpoint above `cas`; the one before it holds it.
        let above = c.partition_point(|&(_, first)| first <= cas);
        c[above.saturating_sub(1)].0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl WriteClock {
        fn stored_at_(&self, cas: u64) -> u32 {
            self.stored_at(cas, 0)
        }
    }

    #[test]
    fn a_cas_maps_to_the_second_it_was_handed_out_in() {
        let w = WriteClock::new(100, 1);
        assert!(w.wanted(100 + WANTED_SECONDS - 1) && !w.wanted(100 + WANTED_SECONDS), "the first hour");
        w.stored_at(1, 200);
        assert!(w.wanted(200 + WANTED_SECONDS - 1) && !w.wanted(200 + WANTED_SECONDS), "an hour after an ask");
        assert_eq!(w.stored_at_(1), 100);
        assert!(w.tick(101, 50));
        assert!(!w.tick(101, 60), "one checkpoint a second");
        assert!(w.tick(103, 80));
        assert_eq!(w.stored_at_(49), 100);
        assert_eq!(w.stored_at_(50), 101);
        assert_eq!(w.stored_at_(79), 101);
        assert_eq!(w.stored_at_(80), 103);
        assert_eq!(w.stored_at_(u64::MAX), 103);
        assert_eq!(w.stored_at_(0), 100, "older than the oldest: the oldest");
        // Seconds without writes move the newest checkpoint along.
        assert!(w.tick(104, 80));
        assert!(w.tick(110, 80));
        assert_eq!(w.stored_at_(80), 110, "an empty range's checkpoint moved");
        assert_eq!(w.stored_at_(79), 101);
    }

    #[test]
    fn the_oldest_checkpoints_go_first() {
        let w = WriteClock::new(0, 0);
        for s in 1..=(CHECKPOINTS_MAX as u32 + 10) {
            w.tick(s, u64::from(s) * 10);
        }
        assert_eq!(w.lock().len(), CHECKPOINTS_MAX);
        assert_eq!(w.stored_at_(0), 11, "older than the oldest kept");
        assert_eq!(w.stored_at_(12_345), 1234);
    }
}
