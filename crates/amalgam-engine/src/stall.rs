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
//!
//! The trait and [`Timing`] are generic over the kind of step, so
//! persistence times its own steps (`amalgam_persist::stall::Stall`)
//! through the same contract and code, and one watcher (the server's)
//! implements both.

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

/// Receives timed steps of kind `K` (the engine's [`Stall`] unless
/// named). Its methods are called on the thread doing the work, so they
/// must be cheap and must not block.
pub trait StallWatcher<K = Stall>: Send + Sync {
    /// Whether steps are being timed now (called before each step: keep it
    /// to a relaxed load).
    fn watching(&self) -> bool;
    /// A step of `kind` took `took`.
    fn stalled(&self, kind: K, took: Duration);
    /// How long to hold the thread at the end of a step of `kind` being
    /// timed, before the step is measured: zero (the default) but where a
    /// test injects a stall of known length into one named step (the
    /// server's amalgam-only `DEBUG STALL`), so that a real stall happens
    /// where it would, on the thread that does the step.
    fn hold(&self, _kind: K) -> Duration {
        Duration::ZERO
    }
}

/// The clock reading of a step being timed (None: nobody watching).
#[derive(Debug)]
pub struct Timing(Option<Instant>);

impl Timing {
    /// Starts timing if `watcher` is installed and watching.
    #[inline]
    pub fn start<K>(watcher: Option<&dyn StallWatcher<K>>) -> Timing {
        Timing(watcher.filter(|w| w.watching()).map(|_| Instant::now()))
    }

    /// Reports the step to `watcher` (if it was timed).
    #[inline]
    pub fn end<K: Copy>(self, watcher: Option<&dyn StallWatcher<K>>, kind: K) {
        if let (Some(at), Some(w)) = (self.0, watcher) {
            let hold = w.hold(kind);
            if !hold.is_zero() {
                std::thread::sleep(hold);
            }
            w.stalled(kind, at.elapsed());
        }
    }
}
