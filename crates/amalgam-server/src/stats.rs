//! Counters behind `stats`: one block per worker, written only by its
//! worker (relaxed load + store, no shared read-modify-write on the request
//! path), summed when a client asks. Each block also holds its worker's
//! per-command figures for RESP (`resp/cmdstats.rs`).

use std::sync::atomic::{AtomicU64, Ordering};

macro_rules! counters {
    ($($name:ident),* $(,)?) => {
        /// One worker's counters; field names are memcached's stat names.
        #[derive(Debug, Default)]
        pub struct WorkerStats {
            $(pub $name: AtomicU64,)*
            /// RESP's per-command calls and latency (INFO commandstats).
            pub commands: crate::resp::cmdstats::CommandStats,
            /// RESP's error replies by code (INFO errorstats).
            pub errors: crate::resp::errorstats::ErrorStats,
        }

        /// A sum over workers.
        #[derive(Debug, Default, Clone, Copy)]
        pub struct Totals {
            $(pub $name: u64,)*
        }

        impl WorkerStats {
            /// Adds this worker's counters into `t`.
            pub fn add_to(&self, t: &mut Totals) {
                $(t.$name += self.$name.load(Ordering::Relaxed);)*
            }

            /// Zeroes every counter (`stats reset`).
            pub fn reset(&self) {
                $(self.$name.store(0, Ordering::Relaxed);)*
            }
        }
    };
}

counters!(
    cmd_get,
    cmd_set,
    cmd_flush,
    cmd_touch,
    get_hits,
    get_misses,
    get_expired,
    get_flushed,
    delete_hits,
    delete_misses,
    incr_hits,
    incr_misses,
    decr_hits,
    decr_misses,
    cas_hits,
    cas_misses,
    cas_badval,
    touch_hits,
    touch_misses,
    total_items,
    bytes_read,
    bytes_written,
    total_connections,
    resp_commands,
    auth_cmds,
    auth_errors,
);

/// Adds `n` to a counter that only the calling worker writes.
#[inline]
pub fn bump(c: &AtomicU64, n: u64) {
    c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}
