//! One log line per event kind per period, with a count of the ones left
//! out: a failing disk or a cache evicting under pressure would otherwise
//! write a line per request. Lives here because persistence is the lowest
//! crate that logs; the server uses it for its own events (evictions).

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// At most one line per event kind per this period (an operator sees the
/// problem within seconds; a disk failing for an hour writes 360 lines,
/// not millions).
pub const LOG_RATE_LIMIT_PERIOD: Duration = Duration::from_secs(10);

/// The state of one event kind's rate limit.
#[derive(Debug, Default)]
pub struct RateLimit {
    /// When a line was last let through, and how many were held back since.
    state: Mutex<(Option<Instant>, u64)>,
}

impl RateLimit {
    /// A new limit: the first event is let through.
    pub const fn new() -> RateLimit {
        RateLimit { state: Mutex::new((None, 0)) }
    }

    /// Some(held back since the last line) if this event should be logged
    /// now; None (and counted) if a line went out less than
    /// [`LOG_RATE_LIMIT_PERIOD`] ago.
    pub fn allow(&self) -> Option<u64> {
        self.allow_at(Instant::now())
    }

    fn allow_at(&self, now: Instant) -> Option<u64> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match s.0 {
            Some(t) if now.saturating_duration_since(t) < LOG_RATE_LIMIT_PERIOD => {
                s.1 += 1;
                None
            }
            _ => {
                let held = s.1;
                *s = (Some(now), 0);
                Some(held)
            }
        }
    }
}

/// ` (N more like it in the last 10 s not logged)` after a rate-limited
/// line, or nothing when none was held back.
pub fn held_back(n: u64) -> String {
    if n == 0 {
        String::new()
    } else {
        format!(" ({n} more like it not logged in the last {} s)", LOG_RATE_LIMIT_PERIOD.as_secs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_period_with_the_count_held_back() {
        let r = RateLimit::new();
        let t0 = Instant::now();
        assert_eq!(r.allow_at(t0), Some(0));
        assert_eq!(r.allow_at(t0 + Duration::from_secs(1)), None);
        assert_eq!(r.allow_at(t0 + Duration::from_secs(9)), None);
        assert_eq!(r.allow_at(t0 + LOG_RATE_LIMIT_PERIOD), Some(2));
        assert_eq!(r.allow_at(t0 + LOG_RATE_LIMIT_PERIOD * 3), Some(0));
        assert_eq!(held_back(0), "");
        assert!(held_back(2).starts_with(" (2 more"));
    }
}
