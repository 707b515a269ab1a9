//! Counters behind `stats`: one block per worker, written only by its
//! worker, summed when a client asks: the operation counters
//! (`amalgam_commands::counters`, memcached's stat names) and RESP's
//! per-command figures (`resp/cmdstats.rs`, `resp/errorstats.rs`).

pub use amalgam_commands::counters::{bump, Counters, Totals};

/// One worker's counters.
#[derive(Debug, Default)]
pub struct WorkerStats {
    /// memcached's operation counters (cmd_get, get_hits …).
    pub ops: Counters,
    /// RESP's per-command calls and latency (INFO commandstats).
    pub commands: crate::cmdstats::CommandStats,
    /// RESP's error replies by code (INFO errorstats).
    pub errors: crate::errorstats::ErrorStats,
}

impl WorkerStats {
    /// Adds this worker's operation counters into `t`.
    pub fn add_to(&self, t: &mut Totals) {
        self.ops.add_to(t);
    }

    /// Zeroes every operation counter (`stats reset`).
    pub fn reset(&self) {
        self.ops.reset();
    }
}
