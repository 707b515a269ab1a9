//! Command-line configuration: memcached's flags and defaults, so Amalgam
//! drops in where memcached runs.

use clap::Parser;

/// memcached's default TCP port.
pub const PORT_DEFAULT: u16 = 11211;
/// Redis's default TCP port, where the RESP listener goes by default.
pub const RESP_PORT_DEFAULT: u16 = 6379;
/// memcached's default connection limit (`-c`).
pub const CONNECTIONS_MAX_DEFAULT: usize = 1024;
/// memcached's default memory limit in megabytes (`-m`).
pub const MEMORY_LIMIT_MB_DEFAULT: usize = 64;
/// Smallest and largest `-I` memcached accepts.
pub const ITEM_SIZE_MAX_BYTES_MIN: usize = 1024;
pub const ITEM_SIZE_MAX_BYTES_MAX: usize = 1 << 30;
/// `--snapshot-every` default: Redis's `save 300 10` interval.
pub const SNAPSHOT_EVERY_SECONDS_DEFAULT: u64 = 300;
/// `--snapshot-after-writes` default: enough that a snapshot costs little
/// next to the writes, few enough that the log stays about that long.
pub const SNAPSHOT_AFTER_WRITES_DEFAULT: u64 = 1_000_000;
/// Most worker threads accepted.
pub const THREADS_MAX: usize = 256;

/// Amalgam: an in-memory key-value store and cache speaking memcached's
/// protocol (Mercury's hash table, MemC3's optimistic reads, MICA's
/// batching).
#[derive(Parser, Debug, Clone)]
#[command(name = "amalgam", version, about, long_about = None, disable_help_flag = true)]
pub struct Args {
    /// TCP port to listen on (memcached's -p).
    #[arg(short = 'p', long = "port", default_value_t = PORT_DEFAULT)]
    pub port: u16,

    /// TCP port for Redis's protocol (RESP2/RESP3) on the same address and
    /// workers, over the same keys; 0 turns it off.
    #[arg(long = "resp-port", default_value_t = RESP_PORT_DEFAULT)]
    pub resp_port: u16,

    /// Interface to listen on (memcached's -l). The default serves this
    /// machine only; give 0.0.0.0 to serve the network.
    #[arg(short = 'l', long = "listen", default_value = "127.0.0.1")]
    pub listen: String,

    /// Worker threads, each with its own event loop (memcached's -t).
    /// Default: the number of cores.
    #[arg(short = 't', long = "threads")]
    pub threads: Option<usize>,

    /// Memory in megabytes (memcached's -m). In cache mode it covers the
    /// items and the index (S3-FIFO's ghost, 1/32 of it, comes on top);
    /// with --eviction none it bounds item memory and the index is extra.
    #[arg(short = 'm', long = "memory-limit", default_value_t = MEMORY_LIMIT_MB_DEFAULT)]
    pub memory_limit_mb: usize,

    /// Simultaneous connections (memcached's -c); more are answered
    /// "ERROR Too many open connections" and closed.
    #[arg(short = 'c', long = "conn-limit", default_value_t = CONNECTIONS_MAX_DEFAULT)]
    pub conn_limit: usize,

    /// What a full cache does: evict with s3fifo (S3-FIFO, SOSP '23; the
    /// default) or clock (MemC3's CLOCK), or none: refuse with
    /// "SERVER_ERROR out of memory storing object" (memcached's -M).
    #[arg(long = "eviction", default_value = "s3fifo")]
    pub eviction: amalgam_engine::evict::Eviction,

    /// Cache mode: before evicting, free dead space by merging runs of
    /// mostly-dead segments (dead versions of overwritten keys) into one
    /// segment in their place, keeping their order. Holds more live items
    /// under overwrite-heavy loads. On by default; --merge-segments=false
    /// evicts only.
    #[arg(
        long = "merge-segments",
        action = clap::ArgAction::Set,
        num_args = 0..=1,
        default_value_t = true,
        default_missing_value = "true",
        value_name = "true|false"
    )]
    pub merge_segments: bool,

    /// Largest item: key, value and header (memcached's -I), in bytes or
    /// with a k or m suffix: 1m, 512k.
    #[arg(short = 'I', long = "max-item-size", default_value = "1m", value_parser = parse_size)]
    pub max_item_size: usize,

    /// UDP port (memcached's -U). Only 0 (UDP off) is supported.
    #[arg(short = 'U', long = "udp-port", default_value_t = 0)]
    pub udp_port: u16,

    /// Persistence: keep an append-only log and snapshots in this
    /// directory and recover from it at start-up (off when not given).
    #[arg(long = "dir")]
    pub dir: Option<std::path::PathBuf>,

    /// With --dir: when the log reaches the disk. always: before a write is
    /// acknowledged (one fsync covers every write that arrived meanwhile);
    /// everysec: written before the reply, fsynced every second; no: written
    /// before the reply, fsynced by the OS.
    #[arg(long = "fsync", default_value = "everysec")]
    pub fsync: amalgam_persist::Fsync,

    /// With --dir: write a snapshot this many seconds after the last if
    /// anything changed (0: never by time). Snapshots bound the log.
    #[arg(long = "snapshot-every", default_value_t = SNAPSHOT_EVERY_SECONDS_DEFAULT)]
    pub snapshot_every: u64,

    /// With --dir: write a snapshot after this many changes (0: never by
    /// count).
    #[arg(long = "snapshot-after-writes", default_value_t = SNAPSHOT_AFTER_WRITES_DEFAULT)]
    pub snapshot_after_writes: u64,

    /// With --dir: the share of one core (1-100 percent) a background
    /// snapshot may use; it sleeps between steps to stay under it, so
    /// serving goes on at nearly full speed. 100: as fast as it can. SAVE
    /// always runs at full speed.
    #[arg(long = "snapshot-cpu-percent", default_value_t = amalgam_persist::SNAPSHOT_CPU_PERCENT_DEFAULT,
          value_parser = clap::value_parser!(u32).range(1..=100))]
    pub snapshot_cpu_percent: u32,

    /// Verbose logging to stderr; repeat for more (memcached's -v, -vv).
    #[arg(short = 'v', action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// Print this help.
    #[arg(short = 'h', long = "help", action = clap::ArgAction::Help)]
    pub help: Option<bool>,
}

/// Parses `-I`: a byte count with an optional k/K or m/M suffix.
pub fn parse_size(s: &str) -> Result<usize, String> {
    let (digits, unit) = match s.as_bytes().last() {
        Some(b'k' | b'K') => (&s[..s.len() - 1], 1024),
        Some(b'm' | b'M') => (&s[..s.len() - 1], 1024 * 1024),
        _ => (s, 1),
    };
    let n: usize = digits.parse().map_err(|_| format!("'{s}' is not a size (examples: 1048576, 512k, 1m)"))?;
    let bytes = n.checked_mul(unit).ok_or_else(|| format!("'{s}' is too large"))?;
    if !(ITEM_SIZE_MAX_BYTES_MIN..=ITEM_SIZE_MAX_BYTES_MAX).contains(&bytes) {
        return Err(format!(
            "item size must be between {ITEM_SIZE_MAX_BYTES_MIN} bytes and {}m",
            ITEM_SIZE_MAX_BYTES_MAX >> 20
        ));
    }
    Ok(bytes)
}

impl Args {
    /// Checks what clap cannot; the error says what to change.
    pub fn validate(&self) -> Result<(), String> {
        if self.udp_port != 0 {
            return Err("UDP is not supported: run with -U 0 (the default)".into());
        }
        if self.threads == Some(0) || self.threads.is_some_and(|t| t > THREADS_MAX) {
            return Err(format!("-t must be between 1 and {THREADS_MAX}"));
        }
        if self.conn_limit == 0 {
            return Err("-c must be at least 1".into());
        }
        if self.resp_port != 0 && self.resp_port == self.port {
            return Err(format!("--resp-port {} is also the memcached port (-p): give another, or 0", self.resp_port));
        }
        if self.memory_limit_mb == 0 {
            return Err("-m must be at least 1 (megabytes)".into());
        }
        Ok(())
    }

    /// Persistence's configuration, if `--dir` was given.
    pub fn persistence(&self) -> Option<amalgam_persist::Config> {
        let dir = self.dir.clone()?;
        Some(amalgam_persist::Config {
            dir,
            fsync: self.fsync,
            snapshot_every: (self.snapshot_every > 0).then(|| std::time::Duration::from_secs(self.snapshot_every)),
            snapshot_after_writes: (self.snapshot_after_writes > 0).then_some(self.snapshot_after_writes),
            snapshot_cpu_percent: self.snapshot_cpu_percent,
        })
    }

    /// Worker threads to run.
    pub fn worker_threads(&self) -> usize {
        self.threads.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(4))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1m"), Ok(1 << 20));
        assert_eq!(parse_size("512k"), Ok(512 << 10));
        assert_eq!(parse_size("2048"), Ok(2048));
        assert!(parse_size("1").is_err());
        assert!(parse_size("2048m").is_err());
        assert!(parse_size("x").is_err());
    }

    #[test]
    fn defaults_match_memcached() {
        let a = Args::parse_from(["amalgam"]);
        assert_eq!((a.port, a.listen.as_str(), a.memory_limit_mb, a.conn_limit), (11211, "127.0.0.1", 64, 1024));
        assert_eq!(a.max_item_size, 1 << 20);
        assert_eq!(a.resp_port, 6379);
        assert!(Args::parse_from(["amalgam", "-p", "7000", "--resp-port", "7000"]).validate().is_err());
        assert!(a.validate().is_ok());
        assert!(Args::parse_from(["amalgam", "-U", "11211"]).validate().is_err());
    }

    #[test]
    fn merge_segments_is_on_unless_turned_off() {
        let merge = |argv: &[&str]| Args::parse_from(argv).merge_segments;
        assert!(merge(&["amalgam"]));
        assert!(merge(&["amalgam", "--merge-segments"]));
        assert!(merge(&["amalgam", "--merge-segments", "-p", "7000"]));
        assert!(merge(&["amalgam", "--merge-segments=true"]));
        assert!(!merge(&["amalgam", "--merge-segments=false"]));
        assert!(!merge(&["amalgam", "--merge-segments", "false"]));
        assert!(Args::try_parse_from(["amalgam", "--merge-segments=maybe"]).is_err());
    }
}
