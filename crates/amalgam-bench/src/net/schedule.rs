//! The open-loop schedule (`--rate`): when each request of a connection is
//! due, whatever the server has answered so far.
//!
//! A closed-loop client sends a request only when an earlier one is
//! answered, so a server that stalls also stops the client from sending:
//! the requests that would have arrived during the stall are never issued
//! and never timed, and the measured tail hides the stall ("coordinated
//! omission", Gil Tene). An open-loop client sends at fixed times, as
//! memtier's `--rate-limiting` and YCSB's `-target` do. Here every request
//! is timed from when it was *due*, not from when it was written, so
//! lateness of any kind (the server's backlog, a full socket buffer, the
//! client thread itself running late) counts in its latency, as a user
//! waiting for it would see it.
//!
//! The total rate is spread evenly: each of `n` connections sends every
//! `n / rate` seconds, connection `i` offset by `i / rate`, so the merged
//! stream of all connections is one request every `1 / rate` seconds.

use std::time::{Duration, Instant};

/// Requests one connection may have outstanding in an open-loop run. When
/// a server falls this far behind, later requests wait in the client (and
/// are still timed from their due times) instead of growing buffers
/// without bound.
pub const OUTSTANDING_MAX: usize = 4096;

/// One connection's due times: `first + k * interval` for its `k`-th request.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Schedule {
    first: Instant,
    /// Seconds between two requests of this connection.
    interval_s: f64,
    /// Index of the next request not yet taken.
    next: u64,
}

impl Schedule {
    /// Connection `i` of `n` sharing `rate` requests per second, from `start`.
    ///
    /// # Panics
    /// If `rate` is not positive and finite, `n` is 0 or `i >= n`.
    pub fn new(start: Instant, rate: f64, i: usize, n: usize) -> Schedule {
        assert!(rate > 0.0 && rate.is_finite() && i < n, "rate {rate}, connection {i} of {n}");
        let interval_s = n as f64 / rate;
        let first = start + Duration::from_secs_f64(i as f64 / rate);
        Schedule { first, interval_s, next: 0 }
    }

    /// When request `k` is due. Computed from `first` each time (never by
    /// adding up intervals), so rounding never drifts.
    pub fn due(&self, k: u64) -> Instant {
        self.first + Duration::from_secs_f64(k as f64 * self.interval_s)
    }

    /// When the next request not yet taken is due.
    pub fn next_due(&self) -> Instant {
        self.due(self.next)
    }

    /// The due time of the next request if it is due at `now`, and takes it.
    /// Requests that fell behind are taken one by one, each with its own
    /// (past) due time: none is skipped.
    pub fn take_due(&mut self, now: Instant) -> Option<Instant> {
        let due = self.next_due();
        if due > now {
            return None;
        }
        self.next += 1;
        Some(due)
    }

    /// Requests taken so far.
    pub fn taken(&self) -> u64 {
        self.next
    }
}

/// A request's latency as a user feels it: from when it was due (open
/// loop) or sent (closed loop) to when its reply was read, at least 1 ns
/// (the histogram's lowest value).
pub fn latency_ns(due: Instant, done: Instant) -> u64 {
    u64::try_from(done.saturating_duration_since(due).as_nanos()).unwrap_or(u64::MAX).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn connections_interleave_into_one_even_stream() {
        let start = Instant::now();
        // 1000 requests/s over 4 connections: each sends every 4 ms,
        // connection i from i ms on; merged, one request per ms.
        let mut all: Vec<Instant> = (0..4)
            .flat_map(|i| {
                let s = Schedule::new(start, 1000.0, i, 4);
                (0..5).map(move |k| s.due(k))
            })
            .collect();
        all.sort();
        for (k, t) in all.iter().enumerate() {
            let want = start + MS * k as u32;
            let off = if *t > want { *t - want } else { want - *t };
            assert!(off < Duration::from_micros(1), "request {k} due {off:?} off");
        }
        assert_eq!(all.len(), 20);
    }

    #[test]
    fn due_times_are_taken_in_order_and_none_is_skipped() {
        let start = Instant::now();
        let mut s = Schedule::new(start, 100.0, 0, 1); // every 10 ms
        assert_eq!(s.take_due(start), Some(start));
        assert_eq!(s.take_due(start), None, "the next one is 10 ms away");
        assert_eq!(s.next_due(), start + 10 * MS);
        // The client wakes 35 ms late: three requests are due, each keeps
        // its own due time.
        let late = start + 45 * MS;
        let taken: Vec<Instant> = std::iter::from_fn(|| s.take_due(late)).collect();
        assert_eq!(taken.len(), 4);
        for (k, t) in taken.iter().enumerate() {
            let want = start + MS * (10 * (k as u32 + 1));
            assert!((*t).max(want) - (*t).min(want) < Duration::from_micros(1));
        }
        assert_eq!(s.taken(), 5);
        assert_eq!(s.take_due(late), None);
    }

    #[test]
    fn a_stall_grows_the_latency_of_the_requests_due_during_it() {
        // A server answering in 1 ms, except that it stalls from 100 to
        // 300 ms: a request due at t is answered at max(t, 300 ms) + 1 ms
        // if t falls in the stall. Timed from its due time, the request due
        // at 100 ms waits 201 ms, the one due at 290 ms 11 ms; a closed-loop
        // client would have sent neither before 300 ms and timed both at
        // 1 ms.
        let start = Instant::now();
        let mut s = Schedule::new(start, 1000.0, 0, 1);
        let stall = (start + 100 * MS, start + 300 * MS);
        let mut lat = Vec::new();
        let end = start + 400 * MS;
        while let Some(due) = s.take_due(end) {
            let served = if due >= stall.0 && due < stall.1 { stall.1 } else { due };
            lat.push(latency_ns(due, served + MS));
        }
        assert_eq!(lat.len(), 401);
        assert_eq!(lat[0], 1_000_000);
        let at = |ms: usize| Duration::from_nanos(lat[ms]).as_secs_f64() * 1e3;
        assert!((at(100) - 201.0).abs() < 0.01, "{}", at(100));
        assert!((at(290) - 11.0).abs() < 0.01, "{}", at(290));
        assert!((at(300) - 1.0).abs() < 0.01, "{}", at(300));
        // Latency falls by the interval from one request to the next
        // through the stall.
        assert!(lat[100..300].windows(2).all(|w| w[0] > w[1]));
        assert_eq!(latency_ns(start + MS, start), 1, "a reply before its due time counts as 1 ns");
    }
}
