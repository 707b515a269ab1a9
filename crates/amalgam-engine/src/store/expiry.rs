//! Expiry: [`Expiry`] (memcached's whole seconds, Redis's milliseconds)
//! and the store's clock, which tests may move forward
//! (`Store::advance_clock`).

use super::{Inner, Store};
use std::sync::atomic::Ordering;

/// memcached's boundary between relative and absolute expiry times:
/// an exptime above 30 days is a unix timestamp (protocol.txt).
///
/// ```
/// # use amalgam_engine::{Expiry, RELATIVE_EXPIRY_SECONDS_MAX};
/// let now = 1_700_000_000;
/// assert_eq!(Expiry::from_memcached(RELATIVE_EXPIRY_SECONDS_MAX, now), Expiry::At(now + 2_592_000));
/// assert_eq!(Expiry::from_memcached(RELATIVE_EXPIRY_SECONDS_MAX + 1, now), Expiry::At(2_592_001));
/// ```
pub const RELATIVE_EXPIRY_SECONDS_MAX: i64 = 60 * 60 * 24 * 30;

/// When an item expires: never, at a whole unix second (memcached's
/// clock), or at a unix millisecond (Redis's PX, PEXPIRE …).
///
/// An item reports [`Expiry::At`] for a deadline on a whole second and
/// [`Expiry::AtMillis`] only for one that is not ([`Expiry::at_millis`]
/// normalizes the same way), so the two forms never name the same instant
/// in what the store hands back.
///
/// ```
/// use amalgam_engine::Expiry;
/// let now = 1_700_000_000;
/// assert_eq!(Expiry::from_memcached(0, now), Expiry::Never);
/// assert_eq!(Expiry::from_memcached(60, now), Expiry::At(now + 60));
/// assert_eq!(Expiry::from_memcached(1_800_000_000, now), Expiry::At(1_800_000_000));
/// assert!(Expiry::from_memcached(-1, now).is_expired(now));
/// assert_eq!(Expiry::at_millis(1_700_000_000_000), Expiry::At(1_700_000_000));
/// assert_eq!(Expiry::at_millis(1_700_000_000_250), Expiry::AtMillis(1_700_000_000_250));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expiry {
    /// Never expires.
    Never,
    /// Expires at this unix time (seconds); at or before `now` means the
    /// item is already expired.
    At(u32),
    /// Expires at this unix time in milliseconds (at or before the clock's
    /// millisecond means expired). Deadlines past u32::MAX seconds are
    /// clamped to `At(u32::MAX)`.
    AtMillis(u64),
}

/// Latest deadline an item can hold, in unix milliseconds.
const EXPIRY_MILLIS_MAX: u64 = u32::MAX as u64 * 1000;

impl Expiry {
    /// memcached's rule: 0 is never; up to 30 days is relative to `now`;
    /// larger is an absolute unix time; negative is already expired.
    ///
    /// ```
    /// # use amalgam_engine::Expiry;
    /// assert_eq!(Expiry::from_memcached(10, 1_000), Expiry::At(1_010));
    /// ```
    pub fn from_memcached(exptime: i64, now: u32) -> Expiry {
        if exptime == 0 {
            Expiry::Never
        } else if exptime < 0 {
            Expiry::At(1)
        } else if exptime <= RELATIVE_EXPIRY_SECONDS_MAX {
            Expiry::At(now.saturating_add(exptime as u32))
        } else {
            Expiry::At(u32::try_from(exptime).unwrap_or(u32::MAX).max(1))
        }
    }

    /// True if an item with this expiry is gone at `now`.
    ///
    /// ```
    /// # use amalgam_engine::Expiry;
    /// assert!(Expiry::At(5).is_expired(5));
    /// assert!(!Expiry::At(6).is_expired(5));
    /// assert!(!Expiry::Never.is_expired(u32::MAX));
    /// ```
    pub fn is_expired(self, now: u32) -> bool {
        self.is_expired_at_millis(u64::from(now) * 1000)
    }

    /// True if an item with this expiry is gone at unix millisecond `now_ms`.
    ///
    /// ```
    /// # use amalgam_engine::Expiry;
    /// assert!(!Expiry::AtMillis(5_300).is_expired_at_millis(5_299));
    /// assert!(Expiry::AtMillis(5_300).is_expired_at_millis(5_300));
    /// assert!(Expiry::At(5).is_expired_at_millis(5_000));
    /// ```
    pub fn is_expired_at_millis(self, now_ms: u64) -> bool {
        self.unix_millis().is_some_and(|t| t <= now_ms)
    }

    /// The expiry for a deadline in unix milliseconds: [`Expiry::At`] when
    /// it is a whole second, else [`Expiry::AtMillis`]; clamped to
    /// `At(u32::MAX)`, and a deadline in the first second of 1970 (which
    /// the item header cannot tell from "never") is `At(1)`, as expired.
    pub fn at_millis(ms: u64) -> Expiry {
        if ms >= EXPIRY_MILLIS_MAX {
            Expiry::At(u32::MAX)
        } else if ms < 1000 {
            Expiry::At(1)
        } else if ms % 1000 == 0 {
            Expiry::At((ms / 1000) as u32)
        } else {
            Expiry::AtMillis(ms)
        }
    }

    /// The deadline in unix milliseconds, None for never.
    ///
    /// ```
    /// # use amalgam_engine::Expiry;
    /// assert_eq!(Expiry::At(7).unix_millis(), Some(7_000));
    /// assert_eq!(Expiry::Never.unix_millis(), None);
    /// ```
    pub fn unix_millis(self) -> Option<u64> {
        match self {
            Expiry::Never => None,
            Expiry::At(t) => Some(u64::from(t) * 1000),
            Expiry::AtMillis(ms) => Some(ms),
        }
    }

    /// The deadline in whole unix seconds, a millisecond deadline rounded
    /// up (memcached's view of a key set over RESP: its TTL in seconds
    /// never reads 0 while the key lives). None for never.
    ///
    /// ```
    /// # use amalgam_engine::Expiry;
    /// assert_eq!(Expiry::AtMillis(7_001).unix_secs_ceil(), Some(8));
    /// assert_eq!(Expiry::At(7).unix_secs_ceil(), Some(7));
    /// ```
    pub fn unix_secs_ceil(self) -> Option<u32> {
        match self {
            Expiry::Never => None,
            Expiry::At(t) => Some(t),
            Expiry::AtMillis(ms) => Some(u32::try_from(ms.div_ceil(1000)).unwrap_or(u32::MAX)),
        }
    }

    /// The header's fields: seconds rounded down (0 = never) and the
    /// milliseconds past them (item.rs, "Expiry at millisecond resolution").
    pub(crate) fn raw(self) -> (u32, u16) {
        match self {
            Expiry::Never => (0, 0),
            Expiry::At(t) => (t.max(1), 0),
            Expiry::AtMillis(ms) => match Expiry::at_millis(ms) {
                Expiry::AtMillis(ms) => ((ms / 1000) as u32, (ms % 1000) as u16),
                normalized => normalized.raw(),
            },
        }
    }

    pub(super) fn from_raw(secs: u32, ms: u16) -> Expiry {
        if secs == 0 {
            Expiry::Never
        } else if ms == 0 {
            Expiry::At(secs)
        } else {
            Expiry::AtMillis(u64::from(secs) * 1000 + u64::from(ms))
        }
    }
}

/// The system clock in unix seconds (the store's clock before any
/// `advance_clock`).
pub(super) fn now_unix_seconds() -> u32 {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    u32::try_from(secs).unwrap_or(u32::MAX).max(1)
}

impl Inner {
    /// The store's clock in unix seconds. Out of line: GETs of items with
    /// an expiry call it, and inlined it would lengthen every GET's code
    /// (the clock read and its arithmetic) for the items without one.
    #[inline(never)]
    pub(super) fn now(&self) -> u32 {
        let secs =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0);
        (secs + self.clock_offset.load(Ordering::Relaxed)).clamp(1, u32::MAX as i64) as u32
    }

    /// The store's clock in unix milliseconds (the same clock as
    /// [`Inner::now`], whose seconds are this rounded down).
    #[inline(never)]
    pub(super) fn now_millis(&self) -> u64 {
        let ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        (ms + self.clock_offset.load(Ordering::Relaxed) * 1000).clamp(1000, EXPIRY_MILLIS_MAX as i64 + 999) as u64
    }

    /// True if an item stored with `e` would already be expired (reads the
    /// clock only for items that have an expiry).
    pub(crate) fn expired_now(&self, e: Expiry) -> bool {
        match e {
            Expiry::Never => false,
            Expiry::At(t) => t <= self.now(),
            Expiry::AtMillis(_) => e.is_expired_at_millis(self.now_millis()),
        }
    }

    /// True if an item whose stored expiry is `secs` (rounded down, 0 =
    /// never) is live when the seconds clock reads `now`; `ms` gives its
    /// millisecond remainder, read only in the one second where it matters
    /// (item.rs, "Expiry at millisecond resolution"). Inlined: the two
    /// comparisons are the GET path's; the rest is out of line.
    #[inline(always)]
    pub(crate) fn expiry_live(&self, secs: u32, now: u32, ms: impl FnOnce() -> u16) -> bool {
        secs == 0 || secs > now || (secs == now && self.live_this_second(secs, ms()))
    }

    /// [`Inner::expiry_live`]'s last second: a deadline with a remainder
    /// is compared with the millisecond clock.
    #[cold]
    #[inline(never)]
    fn live_this_second(&self, secs: u32, ms: u16) -> bool {
        ms != 0 && self.now_millis() < u64::from(secs) * 1000 + u64::from(ms)
    }
}

impl Store {
    /// Holds the background expiry sweep until `until` (None: releases
    /// it), as Redis's CLIENT PAUSE holds active expiry so that the data
    /// set stays as it was while clients are switched over. Expired items
    /// still read as absent; they are removed (and counted as swept) once
    /// the hold ends.
    pub fn hold_expiry(&self, until: Option<std::time::Instant>) {
        *self.inner.expiry_held_until.lock().unwrap_or_else(|e| e.into_inner()) = until;
    }

    /// The store's clock: unix seconds, as used for expiry.
    ///
    /// ```
    /// let store = amalgam_engine::Store::new(Default::default()).unwrap();
    /// assert!(store.now() > 1_600_000_000);
    /// ```
    pub fn now(&self) -> u32 {
        self.inner.now()
    }

    /// The unix second at which the item with CAS unique `cas` was stored
    /// (memcached's `it->time`; clock.rs): exact to about a second for
    /// items written in the last hour of writes while store times are
    /// asked for; older items read as the oldest second kept.
    ///
    /// ```
    /// # use amalgam_engine::{Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// let cas = store.set(b"k", b"v", 0, Expiry::Never).unwrap();
    /// assert!(store.now() - store.stored_at(cas) <= 1);
    /// ```
    pub fn stored_at(&self, cas: u64) -> u32 {
        let now = self.inner.now();
        self.inner.write_clock.stored_at(cas, now).min(now)
    }

    /// The store's clock in unix milliseconds, as used for millisecond
    /// expiry ([`Expiry::AtMillis`]); [`Store::now`] is its seconds.
    ///
    /// ```
    /// let store = amalgam_engine::Store::new(Default::default()).unwrap();
    /// assert!(store.now_millis() / 1000 >= u64::from(store.now()) - 1);
    /// ```
    pub fn now_millis(&self) -> u64 {
        self.inner.now_millis()
    }

    /// Moves the store's clock forward by `seconds` (for tests of expiry).
    ///
    /// ```
    /// # use amalgam_engine::{Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// store.set(b"k", b"v", 0, Expiry::from_memcached(10, store.now())).unwrap();
    /// store.advance_clock(11);
    /// assert!(store.get(b"k", |_| ()).is_none());
    /// ```
    pub fn advance_clock(&self, seconds: i64) {
        self.inner.clock_offset.fetch_add(seconds, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evict::Eviction;
    use crate::store::Config;
    use std::time::Duration;

    /// The liveness test's three cases: a deadline second after now is
    /// live without reading the remainder, one before now is dead without
    /// it, and only the second itself reads it (and a whole second, with
    /// no remainder, is over as soon as it begins).
    #[test]
    fn only_the_deadline_second_reads_the_milliseconds() {
        let store = Store::new(Config::default()).unwrap();
        let inner = &store.inner;
        let unread = || -> u16 { panic!("the remainder is read only in the deadline's second") };
        assert!(inner.expiry_live(0, 100, unread));
        assert!(inner.expiry_live(101, 100, unread));
        assert!(!inner.expiry_live(99, 100, unread));
        assert!(!inner.expiry_live(100, 100, || 0), "a whole-second deadline is over when its second begins");
        let now = store.now();
        let live = inner.expiry_live(now, now, || 999);
        assert!(live || store.now_millis() >= u64::from(now) * 1000 + 999, "999 ms into this second is still ahead");
        assert!(!inner.expiry_live(1, 1, || 999), "second 1 of 1970 is long past");
    }

    /// A millisecond deadline: never returned at or after it, always
    /// before it, read against the clock on both sides of each GET (a
    /// bounded loop of 20 ms steps over its 300 ms).
    #[test]
    fn millisecond_deadlines_hold_to_the_millisecond() {
        for eviction in [Eviction::None, Eviction::S3Fifo] {
            let store = Store::new(Config { eviction, ..Config::default() }).unwrap();
            let deadline = store.now_millis() + 300;
            store.set(b"k", b"v", 0, Expiry::at_millis(deadline)).unwrap();
            assert_eq!(store.get(b"k", |it| it.expiry()), Some(Expiry::at_millis(deadline)));
            let (mut seen_live, mut seen_gone) = (false, false);
            for _ in 0..40 {
                let before = store.now_millis();
                let hit = store.get(b"k", |it| it.value().to_vec()).is_some();
                let after = store.now_millis();
                if after < deadline {
                    assert!(hit, "{eviction:?}: gone {} ms early", deadline - after);
                    seen_live = true;
                }
                if before >= deadline {
                    assert!(!hit, "{eviction:?}: returned {} ms late", before - deadline);
                    seen_gone = true;
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            assert!(seen_live && seen_gone, "{eviction:?}: the loop saw both sides");
            // Writing a deadline already past removes the key, as for seconds.
            store.set(b"k", b"v", 0, Expiry::Never).unwrap();
            store.touch(b"k", Expiry::at_millis(store.now_millis() - 1)).unwrap();
            assert!(store.get(b"k", |_| ()).is_none());
            assert_eq!(store.set(b"p", b"v", 0, Expiry::at_millis(store.now_millis() - 1)).map(|_| ()), Ok(()));
            assert!(store.get(b"p", |_| ()).is_none());
        }
    }

    /// Whole-second deadlines keep their size; a remainder costs 2 bytes,
    /// survives append (which keeps the expiry) and a metadata update.
    #[test]
    fn a_millisecond_remainder_is_two_bytes_and_survives_rewrites() {
        let store = Store::new(Config::default()).unwrap();
        let secs = store.now() + 3600;
        store.set(b"s", b"v", 0, Expiry::At(secs)).unwrap();
        let at = u64::from(secs) * 1000 + 7;
        store.set(b"m", b"v", 0, Expiry::AtMillis(at)).unwrap();
        let size = |k: &[u8]| store.get(k, |it| it.size()).unwrap();
        assert_eq!(size(b"m"), size(b"s") + 2);
        store.append(b"m", b"w").unwrap();
        assert_eq!(
            store.get(b"m", |it| (it.value().to_vec(), it.expiry())),
            Some((b"vw".to_vec(), Expiry::AtMillis(at)))
        );
        store.touch(b"m", Expiry::AtMillis(u64::from(secs) * 1000)).unwrap();
        assert_eq!(store.get(b"m", |it| it.expiry()), Some(Expiry::At(secs)), "a whole second is reported as At");
        assert_eq!(size(b"m"), size(b"s") + 1, "and drops the field (one more value byte)");
        assert_eq!(Expiry::AtMillis(999).raw(), (1, 0), "the first second of 1970 is expired, not never");
        assert_eq!(Expiry::AtMillis(u64::MAX).raw(), (u32::MAX, 0));
    }
}
