//! Log levels through the `log` facade, and the logger that writes them.
//!
//! Levels are Redis's `loglevel` (`--loglevel`, CONFIG SET loglevel, the
//! config file): `warning`, `notice` (the default), `verbose`, `debug`,
//! which are `log`'s Warn, Info, Debug and Trace (Error is always shown,
//! as a `warning`). memcached's `-v` is `verbose`, `-vv` and `-vvv` are
//! `debug`. A line is Redis's: `pid:M 25 Nov 2026 15:44:39.123 * text`,
//! the character after the time giving the level (`.` debug, `-`
//! verbose, `*` notice, `#` warning), so tools that read Redis's logs
//! read these, on stderr (systemd's journal, `docker logs`).
//!
//! Cost when a level is off: `log`'s macros compare the level with a
//! global atomic before they evaluate or format anything, so a disabled
//! `debug!` on the request path is one relaxed load and a branch.
//!
//! Why a logger of our own and not `env_logger`: it is 60 lines, its
//! format must be Redis's (env_logger's default is not, and its
//! formatting hooks bring `humantime` and `anstream` along), and the
//! level comes from flags and CONFIG SET, never from `RUST_LOG`.

use log::{Level, LevelFilter, Log, Metadata, Record};
use std::io::Write;

/// Redis's `loglevel` names, most verbose first, with the filter each is.
pub const LEVELS: [(&str, LevelFilter); 4] = [
    ("debug", LevelFilter::Trace),
    ("verbose", LevelFilter::Debug),
    ("notice", LevelFilter::Info),
    ("warning", LevelFilter::Warn),
];

/// Redis's default `loglevel`.
pub const LEVEL_DEFAULT: &str = "notice";

/// The filter a `loglevel` name is (case-insensitive), if it is one.
pub fn parse_level(name: &str) -> Option<LevelFilter> {
    LEVELS.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|&(_, f)| f)
}

/// clap's parser for `--loglevel`.
pub fn parse_level_arg(name: &str) -> Result<String, String> {
    parse_level(name)
        .map(|_| name.to_ascii_lowercase())
        .ok_or_else(|| format!("'{name}' is not a log level: give debug, verbose, notice or warning"))
}

/// The `loglevel` in force, by Redis's name.
pub fn level_name() -> &'static str {
    let now = log::max_level();
    LEVELS.iter().find(|&&(_, f)| f == now).map_or(LEVEL_DEFAULT, |&(n, _)| n)
}

/// The level memcached's `-v` count means: none leaves `loglevel` alone.
pub fn level_for_verbose(v: u8) -> Option<&'static str> {
    match v {
        0 => None,
        1 => Some("verbose"),
        _ => Some("debug"),
    }
}

/// Changes the level at run time (CONFIG SET loglevel).
pub fn set_level(filter: LevelFilter) {
    log::set_max_level(filter);
}

/// Installs the logger at `filter`; a second call only changes the level.
pub fn init(filter: LevelFilter) {
    static LOGGER: RedisLogger = RedisLogger;
    let _ = log::set_logger(&LOGGER);
    log::set_max_level(filter);
}

struct RedisLogger;

impl Log for RedisLogger {
    fn enabled(&self, m: &Metadata<'_>) -> bool {
        m.level() <= log::max_level()
    }

    fn log(&self, r: &Record<'_>) {
        if !self.enabled(r.metadata()) {
            return;
        }
        let mark = match r.level() {
            Level::Error | Level::Warn => '#',
            Level::Info => '*',
            Level::Debug => '-',
            Level::Trace => '.',
        };
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        let line = format!("{}:M {} {mark} {}\n", std::process::id(), timestamp(now), r.args());
        // One write per line, so lines from several threads never mix.
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }

    fn flush(&self) {}
}

/// Redis's log time, UTC: `25 Nov 2026 15:44:39.123`.
fn timestamp(since_epoch: std::time::Duration) -> String {
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let secs = since_epoch.as_secs();
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    let s = secs % 86_400;
    format!(
        "{d} {} {y} {:02}:{:02}:{:02}.{:03}",
        MONTHS[(m - 1) as usize],
        s / 3600,
        s / 60 % 60,
        s % 60,
        since_epoch.subsec_millis()
    )
}

/// Days since 1970-01-01 to (year, month 1-12, day 1-31): Howard Hinnant's
/// `civil_from_days` (proleptic Gregorian; no loop, no table).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// How often the acceptor thread looks at the eviction counter.
pub const WATCH_PERIOD: std::time::Duration = std::time::Duration::from_secs(1);

/// Logs evictions under memory pressure: a warning when a cache starts
/// evicting, then at most one line per `LOG_RATE_LIMIT_PERIOD` while it
/// goes on, with how many items went since the last line. Read by the
/// acceptor thread every [`WATCH_PERIOD`] from the engine's counter, so
/// the eviction path itself does nothing more.
#[derive(Debug)]
pub struct EvictionWatch {
    /// The counter at the last line.
    logged: u64,
    /// The counter at the last look.
    seen: u64,
    limit: amalgam_persist::ratelimit::RateLimit,
}

impl EvictionWatch {
    pub fn new(store: &amalgam_engine::Store) -> EvictionWatch {
        let n = store.stats().evictions;
        EvictionWatch { logged: n, seen: n, limit: amalgam_persist::ratelimit::RateLimit::new() }
    }

    pub fn check(&mut self, store: &amalgam_engine::Store) {
        if !log::log_enabled!(Level::Warn) {
            return;
        }
        let stats = store.stats();
        let n = stats.evictions;
        if n > self.seen && self.limit.allow().is_some() {
            log::warn!(
                "evicting under memory pressure: {} items evicted since the last report ({} in all; maxmemory {} \
                 bytes, policy {}); raise -m / maxmemory if this is not a cache",
                n - self.logged,
                n,
                stats.memory_limit_bytes,
                store.eviction()
            );
            self.logged = n;
        }
        self.seen = n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn redis_time_format() {
        assert_eq!(timestamp(Duration::from_millis(0)), "1 Jan 1970 00:00:00.000");
        // date -u -d @1795621479 → Wed Nov 25 15:44:39 UTC 2026
        assert_eq!(timestamp(Duration::from_millis(1_795_621_479_123)), "25 Nov 2026 15:44:39.123");
        // A leap day.
        assert_eq!(timestamp(Duration::from_secs(951_782_400)), "29 Feb 2000 00:00:00.000");
    }

    #[test]
    fn levels_by_redis_name() {
        assert_eq!(parse_level("NOTICE"), Some(LevelFilter::Info));
        assert_eq!(parse_level("nothing"), None);
        assert_eq!(level_for_verbose(0), None);
        assert_eq!(level_for_verbose(1), Some("verbose"));
        assert_eq!(level_for_verbose(3), Some("debug"));
    }
}
