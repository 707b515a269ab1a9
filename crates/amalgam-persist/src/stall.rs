//! Stalls of persistence, timed for whoever watches (the server's latency
//! monitor, Redis's `LATENCY`): the same contract as the engine's
//! (`amalgam_engine::StallWatcher`), over the log's and the snapshots'
//! steps. A step asks [`StallWatcher::watching`] first and reads the clock
//! only if it says yes: with the monitor off a commit gains no clock read
//! and no shared write.

use std::time::{Duration, Instant};

/// A kind of step persistence times.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stall {
    /// One write(2) of the log's buffer (a commit; under `everysec` and
    /// `no` on the worker whose replies wait for it).
    LogWrite,
    /// One fdatasync of the log under `always` (replies wait for it).
    LogFsyncAlways,
    /// One fdatasync of the log by the `everysec` thread (no reply waits;
    /// a long one shows a slow disk before `always` would).
    LogFsyncBackground,
    /// One slice of a snapshot: the cursor's step between two pacing
    /// pauses, which holds each bucket it serializes locked in turn.
    SnapshotSlice,
}

/// Receives persistence's timed steps (see the engine's trait of the same
/// name: cheap, non-blocking, called on the working thread).
pub trait StallWatcher: Send + Sync {
    /// Whether steps are being timed now (a relaxed load).
    fn watching(&self) -> bool;
    /// A step of `kind` took `took`.
    fn stalled(&self, kind: Stall, took: Duration);
}

/// The clock reading of a step being timed (None: nobody watching).
pub(crate) struct Timing(Option<Instant>);

impl Timing {
    #[inline]
    pub(crate) fn start(watcher: Option<&dyn StallWatcher>) -> Timing {
        Timing(watcher.filter(|w| w.watching()).map(|_| Instant::now()))
    }

    #[inline]
    pub(crate) fn end(self, watcher: Option<&dyn StallWatcher>, kind: Stall) {
        if let (Some(at), Some(w)) = (self.0, watcher) {
            w.stalled(kind, at.elapsed());
        }
    }
}
