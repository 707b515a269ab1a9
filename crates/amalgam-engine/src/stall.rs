//! Stalls: the engine's bounded steps of background or slow-path work,
//! timed for whoever watches (the server's latency monitor, Redis's
//! `LATENCY`), without the engine knowing who that is or what a protocol
//! calls them.
//!
//! A [`StallWatcher`] is installed once ([`Store::set_stall_watcher`](crate::Store::set_stall_watcher)).
//! Each step asks [`StallWatcher::watching`] first and reads the clock only
//! if it says yes, so with no watcher, or one that is off, a step costs a
//! load of the `OnceLock` (and the watcher's own check): no clock read and
//! no shared write, on the request path (a writer's own eviction) or
//! anywhere else.

use std::time::{Duration, Instant};

/// A kind of step the engine times.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stall {
    /// One stride of a table doubling: the expand thread migrating
    /// `PROGRESS_STRIDE_BUCKETS` buckets, each under its own lock (a
    /// worker writing to one of them waits for it).
    ExpansionStep,
    /// One step of the background expiry sweep (a bounded number of
    /// buckets per maintenance wake-up).
    ExpireCycle,
    /// Cache mode: one eviction pass, by the maintenance thread ahead of
    /// writers, or by a writer that found no free segment (its request
    /// waits for it).
    EvictionCycle,
    /// Cache mode: merging one run of sparse segments into one.
    SegmentMerge,
}

/// Receives the engine's timed steps. Both methods are called on the
/// thread doing the work, so they must be cheap and must not block.
pub trait StallWatcher: Send + Sync {
    /// Whether steps are being timed now (called before each step: keep it
    /// to a relaxed load).
    fn watching(&self) -> bool;
    /// A step of `kind` took `took`.
    fn stalled(&self, kind: Stall, took: Duration);
    /// How long to hold the thread at the end of a step of `kind` being
    /// timed, before the step is measured: zero (the default) but where a
    /// test injects a stall of known length into one named step (the
    /// server's amalgam-only `DEBUG STALL`), so that a real stall happens
    /// where it would, on the thread that does the step.
    fn hold(&self, _kind: Stall) -> Duration {
        Duration::ZERO
    }
}

/// The clock reading of a step being timed (None: nobody watching).
pub(crate) struct Timing(Option<Instant>);

impl Timing {
    /// Starts timing if `watcher` is installed and watching.
    #[inline]
    pub(crate) fn start(watcher: Option<&dyn StallWatcher>) -> Timing {
        Timing(watcher.filter(|w| w.watching()).map(|_| Instant::now()))
    }

    /// Reports the step to `watcher` (if it was timed).
    #[inline]
    pub(crate) fn end(self, watcher: Option<&dyn StallWatcher>, kind: Stall) {
        if let (Some(at), Some(w)) = (self.0, watcher) {
            let hold = w.hold(kind);
            if !hold.is_zero() {
                std::thread::sleep(hold);
            }
            w.stalled(kind, at.elapsed());
        }
    }
}
