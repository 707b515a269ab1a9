//! The latency monitor: Redis 7.0's `LATENCY LATEST | HISTORY | RESET |
//! DOCTOR | HISTOGRAM | HELP` and `latency-monitor-threshold` (Redis's
//! `latency.c`), over the events that can stall a worker.
//!
//! ## Events and samples
//! An event is a named kind of stall. A sample is recorded only when the
//! monitor is on (`latency-monitor-threshold` milliseconds, CONFIG SET;
//! 0, the default, is off) and the stall lasted at least that long
//! ([`Monitor::observe`]: one relaxed load and a compare when off, so the
//! request path pays nothing else). Each event keeps, as Redis does, the
//! last [`SAMPLES_MAX`] samples at most one per second (a second stall in
//! the same second raises that second's sample instead), and its all-time
//! maximum. The events:
//! * `command` and `fast-command`: a RESP command that took the threshold
//!   or longer (`fast-command` for a command flagged `fast`), timed at
//!   dispatch as INFO commandstats times it (`cmdstats.rs`) — Redis's two
//!   events of the same names;
//! * the engine's and persistence's stalls, timed where they happen and
//!   handed over through a watcher (`StallEvents`, installed on the store
//!   and the persistence at start: the engine and persistence know no
//!   LATENCY names, and with the monitor off their steps read no clock).
//!   Redis's names where Redis has the event, Amalgam's for the rest:
//!
//!   | event | what stalled | who waits |
//!   |---|---|---|
//!   | `expire-cycle` (Redis's) | one step of the background expiry sweep (16 Ki buckets) | writers to the buckets it holds, one at a time |
//!   | `eviction-cycle` (Redis's) | one eviction pass: the maintenance thread's (up to 64 segments) or a writer's that found no free segment | that writer's connections; else writers to the items it moves |
//!   | `aof-write` (Redis's) | one write(2) of the log (a group commit) | the replies of that commit |
//!   | `aof-fsync-always` (Redis's) | one fdatasync under `appendfsync always` | the replies it covers |
//!   | `aof-fsync-background` | the `everysec` thread's fdatasync | nobody (a slow disk shows here first) |
//!   | `snapshot-slice` | one slice of a snapshot between pacing pauses | writers to the buckets it serializes |
//!   | `expansion-step` | 64 buckets of a table doubling, each under its lock | writers to those buckets |
//!   | `segment-merge` | merging one run of sparse segments (cache mode) | writers to the items it moves |
//!
//!   `DEBUG STALL <event> <ms>` (Amalgam's own, `debug.rs`) holds each
//!   step of one of these events that long, on the thread doing it, while
//!   the monitor is on: how the tests make an engine stall of known length
//!   happen through the real server (the steps' natural length is
//!   microseconds, too short to test against a 1 ms threshold).
//!
//!   Redis's `eviction-del`, `fork`, `rdb-unlink-temp-file`,
//!   `aof-rewrite-*`, `aof-fstat` and `while-blocked-cron` have nothing to
//!   time here: no per-key eviction delete (segments are reclaimed whole),
//!   no fork, no log rewrite, no fstat, no blocking load.

//! ## Differences from Redis
//! `LATENCY GRAPH event` draws Redis's ASCII sparkline (`graph`), the same
//! rows, characters and age labels; an event is one Amalgam has only if it
//! has had a sample (Redis's error otherwise). `LATENCY DOCTOR`'s report lists the same figures per
//! event as Redis's (spikes, average, mean deviation, period, worst) with
//! Amalgam's advice rather than Redis's.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Redis's `LATENCY_TS_LEN`: samples kept per event.
pub const SAMPLES_MAX: usize = 160;
/// LATENCY HISTOGRAM's first bucket and growth (Redis's
/// `hdr_iter_log_init(&iter, histogram, 1024, 2)`): 1,024 ns, doubling.
pub const HISTOGRAM_FIRST_BUCKET_NS: u64 = 1024;

/// One event's samples.
#[derive(Debug, Default)]
pub struct Series {
    /// (unix seconds, milliseconds), oldest first, at most [`SAMPLES_MAX`].
    pub samples: std::collections::VecDeque<(u64, u64)>,
    /// The largest sample ever recorded (until LATENCY RESET).
    pub max: u64,
}

/// The engine's and persistence's steps, by their LATENCY names: the
/// events `DEBUG STALL` can hold (`debug.rs`), in [`Monitor::holds_ms`]'s
/// order.
pub const STALL_EVENTS: [&str; 8] = [
    "expansion-step",
    "expire-cycle",
    "eviction-cycle",
    "segment-merge",
    "aof-write",
    "aof-fsync-always",
    "aof-fsync-background",
    "snapshot-slice",
];

/// The server's latency monitor (module notes).
#[derive(Debug, Default)]
pub struct Monitor {
    /// `latency-monitor-threshold`, milliseconds; 0 off.
    pub threshold_ms: AtomicU64,
    /// Events by name (sorted: LATENCY LATEST's order; Redis's is its
    /// dictionary's).
    pub events: Mutex<BTreeMap<&'static str, Series>>,
    /// Per [`STALL_EVENTS`] entry, milliseconds each step of it is held
    /// before it is measured (amalgam-only `DEBUG STALL`, for tests; 0 by
    /// default). Read only for a step being timed, so only while the
    /// monitor is on: with it off nothing is held.
    holds_ms: [AtomicU64; STALL_EVENTS.len()],
}

impl Monitor {
    /// Records that `event` stalled for `nanos`, if the monitor is on and
    /// the stall reaches its threshold.
    #[inline]
    pub fn observe(&self, event: &'static str, nanos: u64) {
        if self.wants(nanos) {
            self.add(event, nanos / 1_000_000, unix_secs());
        }
    }

    /// True if a stall of `nanos` is recorded (the monitor is on and it
    /// reaches the threshold): lets a caller name the event only then.
    #[inline]
    pub fn wants(&self, nanos: u64) -> bool {
        let t = self.threshold_ms.load(Ordering::Relaxed);
        t != 0 && nanos / 1_000_000 >= t
    }

    /// Holds every step of `event` (one of [`STALL_EVENTS`]) for `ms`
    /// milliseconds while the monitor is on (0: no more); false for
    /// another name.
    pub fn set_hold(&self, event: &[u8], ms: u64) -> bool {
        let Some(i) = STALL_EVENTS.iter().position(|e| e.as_bytes().eq_ignore_ascii_case(event)) else {
            return false;
        };
        self.holds_ms[i].store(ms, Ordering::Relaxed);
        true
    }

    /// How long steps of `event` are held (zero unless DEBUG STALL set it).
    fn hold(&self, event: &str) -> std::time::Duration {
        let ms = STALL_EVENTS.iter().position(|e| *e == event).map_or(0, |i| self.holds_ms[i].load(Ordering::Relaxed));
        std::time::Duration::from_millis(ms)
    }

    /// Redis's `latencyAddSample`: at most one sample per second.
    fn add(&self, event: &'static str, ms: u64, now: u64) {
        let mut events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        let s = events.entry(event).or_default();
        s.max = s.max.max(ms);
        if let Some(last) = s.samples.back_mut() {
            if last.0 == now {
                last.1 = last.1.max(ms);
                return;
            }
        }
        if s.samples.len() == SAMPLES_MAX {
            s.samples.pop_front();
        }
        s.samples.push_back((now, ms));
    }

    /// LATENCY RESET: forgets `names` (all events with none); answers how
    /// many of them had samples.
    pub fn reset(&self, names: &[amalgam_commands::Arg<'_>]) -> usize {
        let mut events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        if names.is_empty() {
            let n = events.len();
            events.clear();
            return n;
        }
        let mut n = 0;
        for name in names {
            let key = events.keys().copied().find(|k| k.as_bytes() == &name[..]);
            if let Some(k) = key {
                events.remove(k);
                n += 1;
            }
        }
        n
    }
}

/// The engine's and persistence's timed steps (`amalgam_engine::Stall`,
/// `amalgam_persist::stall::Stall`) as LATENCY events, under Redis's
/// names where Redis has the event (module notes). Watching only while
/// the monitor is on: otherwise the steps read no clock.
#[derive(Debug)]
pub struct StallEvents(pub std::sync::Arc<Monitor>);

/// LATENCY's name for an engine step.
pub fn engine_event(kind: amalgam_engine::Stall) -> &'static str {
    match kind {
        amalgam_engine::Stall::ExpansionStep => "expansion-step",
        amalgam_engine::Stall::ExpireCycle => "expire-cycle",
        amalgam_engine::Stall::EvictionCycle => "eviction-cycle",
        amalgam_engine::Stall::SegmentMerge => "segment-merge",
    }
}

/// LATENCY's name for a persistence step.
pub fn persist_event(kind: amalgam_persist::stall::Stall) -> &'static str {
    use amalgam_persist::stall::Stall;
    match kind {
        Stall::LogWrite => "aof-write",
        Stall::LogFsyncAlways => "aof-fsync-always",
        Stall::LogFsyncBackground => "aof-fsync-background",
        Stall::SnapshotSlice => "snapshot-slice",
    }
}

/// A kind of timed step with a LATENCY event name: the engine's and
/// persistence's, so one watcher serves both.
pub trait Event: Copy {
    /// LATENCY's name for it.
    fn name(self) -> &'static str;
}

impl Event for amalgam_engine::Stall {
    fn name(self) -> &'static str {
        engine_event(self)
    }
}

impl Event for amalgam_persist::stall::Stall {
    fn name(self) -> &'static str {
        persist_event(self)
    }
}

impl<K: Event> amalgam_engine::StallWatcher<K> for StallEvents {
    #[inline]
    fn watching(&self) -> bool {
        self.0.threshold_ms.load(Ordering::Relaxed) != 0
    }
    fn stalled(&self, kind: K, took: std::time::Duration) {
        self.0.observe(kind.name(), took.as_nanos().min(u64::MAX as u128) as u64);
    }
    fn hold(&self, kind: K) -> std::time::Duration {
        self.0.hold(kind.name())
    }
}

pub fn unix_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Columns of LATENCY GRAPH (Redis's `LATENCY_GRAPH_COLS`): samples per
/// band of the graph; more samples start another band below.
const GRAPH_COLUMNS: usize = 80;
/// Rows of LATENCY GRAPH's bars (Redis renders with 4).
const GRAPH_ROWS: usize = 4;
/// Sparkline characters, lowest first, within a row (Redis's
/// `charset_fill`); a row wholly below a sample's top is `|`.
const GRAPH_FILL: [u8; 3] = [b'_', b'o', b'#'];
/// Blank rows between the bars and the labels (Redis's
/// `label_margin_top`).
const GRAPH_LABEL_MARGIN_ROWS: usize = 1;

/// LATENCY GRAPH's text for one event: Redis 7's
/// `latencyCommandGenSparkline` and `sparkline.c` (`sparklineRender` with
/// SPARKLINE_FILL), so the picture is the one Redis users know. A title
/// line (`<event> - high H ms, low L ms (all time high M ms)`), a rule of
/// 80 dashes, then per band of up to 80 samples (oldest first) four rows
/// of bars, each sample's height scaled between the series' low and high
/// into 12 steps drawn with `_ o #`
/// and `|` below the top, a blank row, and each sample's age written
/// downwards (`5s`, `3m`, `2h`, `1d`). Bounded: SAMPLES_MAX samples.
pub fn graph(name: &str, s: &Series, now: u64) -> String {
    let values: Vec<u64> = s.samples.iter().map(|x| x.1).collect();
    let (low, high) = (values.iter().copied().min().unwrap_or(0), values.iter().copied().max().unwrap_or(0));
    let labels: Vec<String> = s
        .samples
        .iter()
        .map(|&(t, _)| {
            let ago = now.saturating_sub(t);
            match ago {
                0..60 => format!("{ago}s"),
                60..3600 => format!("{}m", ago / 60),
                3600..86_400 => format!("{}h", ago / 3600),
                _ => format!("{}d", ago / 86_400),
            }
        })
        .collect();
    let mut g = format!("{name} - high {high} ms, low {low} ms (all time high {} ms)\n", s.max);
    g.push_str(&"-".repeat(GRAPH_COLUMNS));
    g.push('\n');
    let steps = GRAPH_FILL.len() * GRAPH_ROWS;
    let range = if high == low { 1.0 } else { (high - low) as f64 };
    // sparkline.c's `(int) (relval*steps)/relmax`: the product truncated
    // to an int, then divided as a double and truncated again.
    let step_of = |v: u64| ((((v - low) as f64 * steps as f64) as i64 as f64 / range) as usize).min(steps - 1);
    for (band, start) in (0..values.len()).step_by(GRAPH_COLUMNS).enumerate() {
        if band > 0 {
            g.push('\n');
        }
        let end = (start + GRAPH_COLUMNS).min(values.len());
        for row in 0..GRAPH_ROWS {
            let floor = (GRAPH_ROWS - row - 1) * GRAPH_FILL.len();
            let line: String = values[start..end]
                .iter()
                .map(|&v| {
                    let step = step_of(v);
                    match step.checked_sub(floor) {
                        Some(i) if i < GRAPH_FILL.len() => GRAPH_FILL[i] as char,
                        Some(_) => '|',
                        None => ' ',
                    }
                })
                .collect();
            g.push_str(&line);
            g.push('\n');
        }
        for _ in 0..GRAPH_LABEL_MARGIN_ROWS {
            g.push_str(&" ".repeat(end - start));
            g.push('\n');
        }
        let tallest = labels[start..end].iter().map(String::len).max().unwrap_or(0);
        for at in 0..tallest {
            let line: String =
                labels[start..end].iter().map(|l| l.as_bytes().get(at).map_or(' ', |&b| b as char)).collect();
            g.push_str(&line);
            g.push('\n');
        }
    }
    g
}

/// LATENCY DOCTOR's report (module notes).
pub fn doctor(monitor: &Monitor) -> String {
    use std::fmt::Write;
    let events = monitor.events.lock().unwrap_or_else(|e| e.into_inner());
    if events.values().all(|s| s.samples.is_empty()) {
        return "Dave, no latency spike was observed during the lifetime of this Redis instance, not in the \
                slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think \
                things over.\n"
            .into();
    }
    let mut r = String::from(
        "Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you \
         Dave?\n\n",
    );
    for (i, (name, s)) in events.iter().filter(|(_, s)| !s.samples.is_empty()).enumerate() {
        let n = s.samples.len() as f64;
        let avg = s.samples.iter().map(|x| x.1 as f64).sum::<f64>() / n;
        let mad = s.samples.iter().map(|x| (x.1 as f64 - avg).abs()).sum::<f64>() / n;
        let (first, last) = (s.samples.front().map_or(0, |x| x.0), s.samples.back().map_or(0, |x| x.0));
        let period = if s.samples.len() > 1 { (last - first) as f64 / (n - 1.0) } else { 0.0 };
        let _ = writeln!(
            r,
            "{}. {name}: {} latency spikes (average {:.0}ms, mean deviation {:.0}ms, period {:.2} sec). Worst all \
             time event {}ms.",
            i + 1,
            s.samples.len(),
            avg,
            mad,
            period,
            s.max
        );
    }
    r.push_str(
        "\nI have a few advices for you:\n\n- Check your Slow Log (SLOWLOG GET) to see which commands are too slow \
         to execute: a command over a large collection (KEYS, SMEMBERS, LRANGE 0 -1, ZUNIONSTORE ...) holds its \
         worker and the keys it names while it runs.\n- INFO latencystats and LATENCY HISTOGRAM show each \
         command's latency distribution.\n",
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_sample_per_second_and_at_most_the_ring() {
        let m = Monitor::default();
        m.add("command", 5, 100);
        m.add("command", 9, 100);
        m.add("command", 2, 100);
        {
            let e = m.events.lock().unwrap();
            assert_eq!(e["command"].samples, [(100, 9)], "the second's largest");
            assert_eq!(e["command"].max, 9);
        }
        for t in 0..(SAMPLES_MAX as u64 + 5) {
            m.add("command", 1, 200 + t);
        }
        let e = m.events.lock().unwrap();
        assert_eq!(e["command"].samples.len(), SAMPLES_MAX);
        assert_eq!(e["command"].samples.back(), Some(&(200 + SAMPLES_MAX as u64 + 4, 1)));
        assert_eq!(e["command"].max, 9, "the all-time max outlives its sample");
    }

    /// The engine's and persistence's steps reach LATENCY under their
    /// names, only while the monitor is on and at its threshold.
    #[test]
    fn stalls_become_events_by_name() {
        use amalgam_engine::StallWatcher;
        type Engine = dyn StallWatcher<amalgam_engine::Stall>;
        type Persist = dyn StallWatcher<amalgam_persist::stall::Stall>;
        let m = std::sync::Arc::new(Monitor::default());
        let events = StallEvents(std::sync::Arc::clone(&m));
        assert!(!Engine::watching(&events), "off: the engine reads no clock");
        assert!(!Persist::watching(&events));
        m.threshold_ms.store(2, Ordering::Relaxed);
        assert!(Engine::watching(&events) && Persist::watching(&events));
        let ms = std::time::Duration::from_millis;
        Engine::stalled(&events, amalgam_engine::Stall::EvictionCycle, ms(5));
        Engine::stalled(&events, amalgam_engine::Stall::ExpireCycle, ms(1));
        Persist::stalled(&events, amalgam_persist::stall::Stall::LogFsyncAlways, ms(7));
        Persist::stalled(&events, amalgam_persist::stall::Stall::SnapshotSlice, ms(2));
        let e = m.events.lock().unwrap();
        assert_eq!(e.keys().copied().collect::<Vec<_>>(), ["aof-fsync-always", "eviction-cycle", "snapshot-slice"]);
        assert_eq!(e["aof-fsync-always"].max, 7);
        assert_eq!(e["eviction-cycle"].max, 5);
    }

    /// The graph Redis 7.0.15 drew for `command` samples of 5, 50 and
    /// 22 ms taken 2, 1 and 0 seconds before (DEBUG SLEEP 0.005, 0.05,
    /// 0.02 a second apart; `redis-cli LATENCY GRAPH command`).
    #[test]
    fn graph_matches_redis() {
        let s = Series { samples: [(100, 5), (101, 50), (102, 22)].into_iter().collect(), max: 50 };
        assert_eq!(
            graph("command", &s, 102),
            format!(
                "command - high 50 ms, low 5 ms (all time high 50 ms)\n{}\n # \n | \n |o\n_||\n   \n210\nsss\n",
                "-".repeat(80)
            )
        );
        // Ages in minutes, hours, days; a flat series sits on the floor;
        // more than 80 samples make a second band.
        let s = Series { samples: (0..81).map(|i| (i, 7)).collect(), max: 9 };
        let g = graph("e", &s, 80 + 90_000);
        let lines: Vec<&str> = g.lines().collect();
        assert_eq!(lines[0], "e - high 7 ms, low 7 ms (all time high 9 ms)");
        assert_eq!(lines[5], "_".repeat(80));
        assert_eq!(&lines[7][..1], "1", "a day ago");
        assert!(lines.contains(&"_"), "the 81st sample, in a band of its own");
    }

    /// DEBUG STALL's holds: by event name, for the engine's and
    /// persistence's steps alike; other names are refused.
    #[test]
    fn holds_by_event_name() {
        use amalgam_engine::StallWatcher;
        type Engine = dyn StallWatcher<amalgam_engine::Stall>;
        type Persist = dyn StallWatcher<amalgam_persist::stall::Stall>;
        let m = std::sync::Arc::new(Monitor::default());
        let events = StallEvents(std::sync::Arc::clone(&m));
        assert_eq!(Engine::hold(&events, amalgam_engine::Stall::ExpireCycle), std::time::Duration::ZERO);
        assert!(m.set_hold(b"EXPIRE-cycle", 30));
        assert!(m.set_hold(b"snapshot-slice", 7));
        assert!(!m.set_hold(b"command", 5), "not a step of the engine's or persistence's");
        assert_eq!(Engine::hold(&events, amalgam_engine::Stall::ExpireCycle), std::time::Duration::from_millis(30));
        assert_eq!(Engine::hold(&events, amalgam_engine::Stall::EvictionCycle), std::time::Duration::ZERO);
        let slice = Persist::hold(&events, amalgam_persist::stall::Stall::SnapshotSlice);
        assert_eq!(slice, std::time::Duration::from_millis(7));
        assert!(m.set_hold(b"expire-cycle", 0));
        assert_eq!(Engine::hold(&events, amalgam_engine::Stall::ExpireCycle), std::time::Duration::ZERO);
    }

    #[test]
    fn off_records_nothing_and_on_records_at_the_threshold() {
        let m = Monitor::default();
        m.observe("command", 50_000_000);
        assert!(m.events.lock().unwrap().is_empty());
        m.threshold_ms.store(10, Ordering::Relaxed);
        m.observe("command", 9_999_999);
        assert!(m.events.lock().unwrap().is_empty());
        m.observe("command", 10_000_000);
        assert_eq!(m.events.lock().unwrap()["command"].max, 10);
        assert_eq!(m.reset(&[]), 1);
        assert!(m.events.lock().unwrap().is_empty());
    }
}
