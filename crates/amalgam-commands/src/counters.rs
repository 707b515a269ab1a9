//! The per-worker counters behind memcached's `stats` and Redis's INFO
//! (memcached's stat names): one block per worker, written only by its
//! worker (relaxed load + store, no shared read-modify-write on the
//! request path), summed when a client asks. Both front ends and the data
//! commands count into the block of the worker they run on.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

macro_rules! counters {
    ($($name:ident),* $(,)?) => {
        /// One worker's counters; field names are memcached's stat names.
        #[derive(Debug, Default)]
        pub struct Counters {
            $(pub $name: AtomicU64,)*
            /// memcached's `stats detail on`: the memcached front end
            /// counts keys by prefix (`amalgam_memcache::operator`). Not a
            /// counter (`stats reset` leaves it); here because the request
            /// path reads this worker's block anyway.
            pub stats_detail: AtomicBool,
        }

        /// A sum over workers.
        #[derive(Debug, Default, Clone, Copy)]
        pub struct Totals {
            $(pub $name: u64,)*
        }

        impl Counters {
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
    cmd_meta,
    store_too_large,
    store_no_memory,
);

/// Adds `n` to a counter that only the calling worker writes.
#[inline]
pub fn bump(c: &AtomicU64, n: u64) {
    c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}
