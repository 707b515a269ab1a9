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
    #[inline]
    pub(crate) fn start(watcher: Option<&dyn StallWatcher>) -> Timing {
        Timing(watcher.filter(|w| w.watching()).map(|_| Instant::now()))
    }

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
