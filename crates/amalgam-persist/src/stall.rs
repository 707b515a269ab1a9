//! Stalls of persistence, timed for whoever watches (the server's latency
//! monitor, Redis's `LATENCY`): the engine's contract and code
//! ([`StallWatcher`], generic over the kind of step, and its timing)
//! over the log's and the snapshots' steps. A step asks
//! [`StallWatcher::watching`] first and reads the clock only if it says
//! yes: with the monitor off a commit gains no clock read and no shared
//! write.

pub(crate) use amalgam_engine::StallTiming as Timing;
/// Receives persistence's timed steps: `StallWatcher<Stall>` (this
/// module's [`Stall`]).
pub use amalgam_engine::StallWatcher;

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
