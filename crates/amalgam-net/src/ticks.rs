//! The request path's clock: what per-command timing (`resp/cmdstats.rs`)
//! and CLIENT LIST's idle time read, once or twice per batch.
//!
//! `std::time::Instant` costs about 250 user instructions per timed
//! command here (callgrind, docs/bench-log/2026-11-25-string-path.md §
//! The request path's cost taken back): `clock_gettime` through the vDSO, then
//! `Timespec`'s checked subtraction and a `Duration` to turn two readings
//! into nanoseconds. quanta reads the TSC instead (`rdtsc`, calibrated
//! against the monotonic clock once at start-up) and turns a difference of
//! two raw readings into nanoseconds with one multiply and shift — the
//! cycle-counter clock Dragonfly (absl's CycleClock) and Redis built with
//! `USE_PROCESSOR_CLOCK` time their commands with. Where the TSC is not
//! invariant (or under valgrind's emulated CPUID) quanta falls back to the
//! monotonic clock, still without the `Duration` arithmetic.
//!
//! A reading is a raw `u64` tick; only differences mean anything, and a
//! difference that went backwards (two cores' counters a few ticks apart)
//! counts as zero.

use std::sync::OnceLock;

static CLOCK: OnceLock<quanta::Clock> = OnceLock::new();

fn clock() -> &'static quanta::Clock {
    CLOCK.get_or_init(quanta::Clock::new)
}

/// Calibrates the clock (up to ~200 ms the first time), so that no worker
/// pays for it on its first command. Called once at start-up.
pub fn init() {
    clock();
}

/// A raw reading.
#[inline]
pub fn now() -> u64 {
    clock().raw()
}

/// Nanoseconds from reading `start` to reading `end` (0 if `end` is not
/// after `start`).
#[inline]
pub fn nanos_between(start: u64, end: u64) -> u64 {
    clock().delta_as_nanos(start, end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sleep_is_measured_in_nanoseconds() {
        let a = now();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let b = now();
        let ns = nanos_between(a, b);
        // The sleep lasts at least 20 ms; an hour would mean a wrong scale.
        assert!((20_000_000..3_600_000_000_000).contains(&ns), "{ns} ns");
        assert_eq!(nanos_between(b, a), 0, "backwards is zero");
    }
}
