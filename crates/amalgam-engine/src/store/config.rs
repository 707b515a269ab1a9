//! Configuration: [`Config`] with its defaults and limits, [`ConfigError`],
//! and `Store::new`, which builds a store from a configuration (its
//! table, its pools or segment log, its maintenance thread).

use super::cache::{active_bit, wake_slack_for};
use super::expiry::now_unix_seconds;
use super::maintenance::{CACHE_LOAD_PER_BUCKET_MAX, LOAD_PER_BUCKET_MAX};
use super::{Cache, Inner, Store};
use crate::evict::Eviction;
use crate::item;
use crate::local::Epochs;
use crate::pool::SharedPool;
use crate::segment::{Segments, SEGMENT_BYTES};
use crate::table::{Table, TABLE_LOG2_MAX};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicPtr, AtomicU64, AtomicUsize};
use std::sync::Arc;

/// memcached's default maximum item size (`-I 1m`).
///
/// ```
/// assert_eq!(amalgam_engine::Config::default().item_size_max_bytes, amalgam_engine::ITEM_SIZE_MAX_BYTES_DEFAULT);
/// ```
pub const ITEM_SIZE_MAX_BYTES_DEFAULT: usize = 1 << 20;
/// memcached's default memory limit (`-m 64`).
///
/// ```
/// assert_eq!(amalgam_engine::Config::default().memory_limit_bytes, 64 << 20);
/// ```
pub const MEMORY_LIMIT_BYTES_DEFAULT: usize = 64 << 20;
/// Largest `-I` accepted: a value's length must fit the item header.
///
/// ```
/// use amalgam_engine::{Config, Store, ITEM_SIZE_MAX_BYTES_LIMIT};
/// let too_big = Config { item_size_max_bytes: ITEM_SIZE_MAX_BYTES_LIMIT + 1, ..Config::default() };
/// assert!(Store::new(too_big).is_err());
/// ```
pub const ITEM_SIZE_MAX_BYTES_LIMIT: usize = 1 << 30;
const _: () = assert!(ITEM_SIZE_MAX_BYTES_LIMIT <= item::VALUE_BYTES_LIMIT);

/// Buckets of a new store's table, as a power of two.
///
/// ```
/// use amalgam_engine::{Store, INITIAL_BUCKETS_LOG2_DEFAULT};
/// let store = Store::new(Default::default()).unwrap();
/// assert_eq!(store.stats().buckets, 1 << INITIAL_BUCKETS_LOG2_DEFAULT);
/// ```
pub const INITIAL_BUCKETS_LOG2_DEFAULT: u32 = 10;

/// Cache mode: budget bytes per S3-FIFO ghost entry, i.e. the ghost
/// remembers about as many evicted keys as a budget of 64-byte items holds
/// (the paper sizes the ghost like the main queue, in objects).
const GHOST_BYTES_PER_ENTRY: usize = 64;

/// Construction parameters of a [`Store`].
///
/// ```
/// use amalgam_engine::{Config, Store};
/// let store = Store::new(Config { memory_limit_bytes: 1 << 30, ..Config::default() }).unwrap();
/// assert_eq!(store.stats().memory_limit_bytes, 1 << 30);
/// ```
#[derive(Clone, Debug)]
pub struct Config {
    /// Bytes of item memory (memcached's `-m`); the index is extra.
    pub memory_limit_bytes: usize,
    /// Largest item, header + key + value (memcached's `-I`).
    pub item_size_max_bytes: usize,
    /// Buckets of the initial table, as a power of two.
    pub initial_buckets_log2: u32,
    /// Hash seed; None draws one from the OS's randomness.
    pub hash_seed: Option<u64>,
    /// Cache mode's eviction policy; [`Eviction::None`] is store mode (a
    /// full store refuses writes). In cache mode item memory is a log of
    /// segments of [`SEGMENT_BYTES`] (smaller for budgets under 64 of
    /// them), and the budget must hold [`SEGMENTS_MIN`](crate::SEGMENTS_MIN)
    /// of them; an item larger than a segment is stored on its own and
    /// charged to the same budget (`outsized.rs`).
    pub eviction: Eviction,
    /// Segment size in cache mode; 0 (the default) chooses as described
    /// under `eviction`. Tests set it small so the engine's eviction order
    /// equals the item-granularity model's; items above it are outsized
    /// (`outsized.rs`).
    #[doc(hidden)]
    pub segment_bytes: usize,
    /// Cache mode: whether the maintenance thread reclaims segments ahead
    /// of writers. Tests turn it off so only writers reclaim, synchronously
    /// and deterministically.
    #[doc(hidden)]
    pub background_eviction: bool,
    /// Cache mode: whether the index is charged to the budget (the memory
    /// account, `Inner::account_memory`). Tests of the policies' exact
    /// eviction order on budgets of a few hundred bytes turn it off: there
    /// the index alone is larger than the budget.
    #[doc(hidden)]
    pub index_in_budget: bool,
    /// Cache mode: before evicting, free dead space by merging a run of
    /// consecutive mostly-dead segments into one segment in the run's
    /// place in its queue (`reclaim.rs`, step 0). Under overwrite-heavy
    /// loads most of the log is dead versions; merging keeps more live
    /// items in the same budget. Off in `Config::default()`, so the
    /// policies' exact eviction order holds for embedders and tests; the
    /// server turns it on (`--merge-segments`, default true).
    pub merge_segments: bool,
    /// Cache mode: the most [`Store::set_memory_limit`] may raise the
    /// budget to. The segment log's address space is reserved for it at
    /// start (`MAP_NORESERVE`: no page and no commit charge until the
    /// memory account lets a segment be used), with 64 bytes of side table
    /// per segment. 0 (the default) is `memory_limit_bytes`: the budget
    /// may be lowered and raised back, not past where it started. Store
    /// mode ignores it: its chunks are mapped one by one as needed, so any
    /// limit can be set.
    pub memory_limit_max_bytes: usize,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            memory_limit_bytes: MEMORY_LIMIT_BYTES_DEFAULT,
            item_size_max_bytes: ITEM_SIZE_MAX_BYTES_DEFAULT,
            initial_buckets_log2: INITIAL_BUCKETS_LOG2_DEFAULT,
            hash_seed: None,
            eviction: Eviction::None,
            segment_bytes: 0,
            background_eviction: true,
            index_in_budget: true,
            merge_segments: false,
            memory_limit_max_bytes: 0,
        }
    }
}

/// A configuration the store cannot run with.
#[derive(Clone, Debug, PartialEq, Eq)]
///
/// ```
/// use amalgam_engine::{Config, Store};
/// let err = Store::new(Config { item_size_max_bytes: 10, ..Config::default() }).unwrap_err();
/// assert!(err.to_string().contains("item size max"));
/// ```
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// Cache mode's segment size when the configuration does not choose one:
/// [`SEGMENT_BYTES`] once the budget holds SMALL_BUDGET_SEGMENTS of them;
/// a smaller budget is divided into SMALL_BUDGET_SEGMENTS segments (a power
/// of two, at least SMALL_BUDGET_SEGMENT_BYTES_MIN): `-m 8` gets 64 of
/// 128 KiB. The item size max no longer enters: an item larger than a
/// segment is an outsized item (`outsized.rs`), allocated on its own and
/// charged to the same budget. (Before, segments grew with `-I`, and small
/// budgets had a handful of 1 MiB segments, about three of them free or
/// open at any time: `-m 8` held 0.55x memcached's kilobyte items.)
///
/// ```
/// # use amalgam_engine::{Config, Store, evict::Eviction};
/// let s = Store::new(Config { memory_limit_bytes: 2 << 20, eviction: Eviction::S3Fifo, ..Config::default() }).unwrap();
/// assert_eq!(s.stats().segment_bytes, 32 << 10);
/// let s = Store::new(Config { memory_limit_bytes: 8 << 20, eviction: Eviction::S3Fifo, ..Config::default() }).unwrap();
/// assert_eq!(s.stats().segment_bytes, 128 << 10);
/// let big = Config { memory_limit_bytes: 64 << 20, item_size_max_bytes: 4 << 20, eviction: Eviction::S3Fifo, ..Config::default() };
/// assert_eq!(Store::new(big).unwrap().stats().segment_bytes, amalgam_engine::SEGMENT_BYTES as u64);
/// ```
fn default_segment_bytes(budget: usize) -> usize {
    if budget / SEGMENT_BYTES >= SMALL_BUDGET_SEGMENTS {
        return SEGMENT_BYTES;
    }
    let fitting = (budget / SMALL_BUDGET_SEGMENTS).max(1);
    let pow2 = 1usize << (usize::BITS - 1 - fitting.leading_zeros());
    pow2.max(SMALL_BUDGET_SEGMENT_BYTES_MIN)
}

/// Segments a small budget is divided into (see `default_segment_bytes`):
/// enough that the per-thread open segments and the reserve are a small
/// part of it.
const SMALL_BUDGET_SEGMENTS: usize = 64;
/// The smallest segment a small budget gets: still hundreds of small items
/// per segment.
const SMALL_BUDGET_SEGMENT_BYTES_MIN: usize = 16 << 10;

impl Store {
    /// Creates a store and starts its expand thread.
    ///
    /// ```
    /// let store = amalgam_engine::Store::new(Default::default()).unwrap();
    /// assert!(store.is_empty());
    /// ```
    pub fn new(config: Config) -> Result<Store, ConfigError> {
        if config.item_size_max_bytes < 1024 || config.item_size_max_bytes > ITEM_SIZE_MAX_BYTES_LIMIT {
            return Err(ConfigError(format!(
                "item size max must be between 1 KiB and {} bytes, got {}",
                ITEM_SIZE_MAX_BYTES_LIMIT, config.item_size_max_bytes
            )));
        }
        if config.initial_buckets_log2 > TABLE_LOG2_MAX {
            return Err(ConfigError(format!("initial buckets log2 must be at most {TABLE_LOG2_MAX}")));
        }
        let mut shared = SharedPool::new(config.memory_limit_bytes);
        let mut cache = None;
        let mut freq_max = 0;
        if config.eviction != Eviction::None {
            let segment_bytes = match config.segment_bytes {
                0 => default_segment_bytes(config.memory_limit_bytes),
                n => n,
            };
            let reserve = config.memory_limit_max_bytes.max(config.memory_limit_bytes);
            shared.segments = Some(Segments::new(config.memory_limit_bytes, reserve, segment_bytes).map_err(|e| {
                ConfigError(format!("{e} (eviction {}: give more memory, or eviction none)", config.eviction))
            })?);
            let ghost = config.memory_limit_bytes / GHOST_BYTES_PER_ENTRY;
            let c = Cache {
                clock: crate::evict::Clock::new(),
                s3fifo: crate::evict::S3Fifo::new(ghost),
                active: std::sync::atomic::AtomicU32::new(active_bit(config.eviction)),
                switching: std::sync::Mutex::new(()),
                reclaimer: std::sync::Mutex::new([None, None]),
                background: config.background_eviction,
                wake_slack: AtomicUsize::new(wake_slack_for(config.memory_limit_bytes / segment_bytes)),
                index_in_budget: config.index_in_budget,
                merge: config.merge_segments,
                scope: std::sync::atomic::AtomicU8::new(crate::evict::Scope::AllKeys.index()),
                refusing: std::sync::atomic::AtomicBool::new(false),
                probed_ms: AtomicU64::new(0),
                ttl_medians: std::sync::Mutex::new(([0; super::cache::TTL_MEDIANS_KEPT], 0)),
                #[cfg(test)]
                alloc_failures: std::sync::atomic::AtomicU32::new(0),
                evictions: AtomicU64::new(0),
                evicted_unfetched: AtomicU64::new(0),
                expired_unfetched: AtomicU64::new(0),
                reclaimed_segments: AtomicU64::new(0),
                merged_segments: AtomicU64::new(0),
                writer_reclaims: AtomicU64::new(0),
                outsized: std::sync::Mutex::new(std::collections::VecDeque::new()),
            };
            freq_max = c.policy().freq_max().min(item::FREQ_BITS_MAX);
            cache = Some(c);
        }
        let table = Table::new(config.initial_buckets_log2)
            .ok_or_else(|| ConfigError("could not map the initial hash table".into()))?;
        let seed = config.hash_seed.unwrap_or_else(random_seed);
        let inner = Arc::new(Inner {
            current: AtomicPtr::new(Box::into_raw(Box::new(table))),
            hasher: foldhash::quality::FixedState::with_seed(seed),
            item_size_max: config.item_size_max_bytes,
            load_max: if cache.is_some() { CACHE_LOAD_PER_BUCKET_MAX } else { LOAD_PER_BUCKET_MAX } as u64,
            shared,
            epochs: Epochs::new(),
            cas_counter: AtomicU64::new(1),
            write_clock: crate::clock::WriteClock::new(now_unix_seconds(), 1),
            flush_cas: AtomicU64::new(0),
            flush_generation: AtomicU64::new(0),
            flush_at: AtomicU64::new(0),
            flush_lock: std::sync::Mutex::new(()),
            sweep_requested: AtomicBool::new(false),
            expiry_held_until: std::sync::Mutex::new(None),
            ttl_seen: AtomicBool::new(false),
            swept_items: AtomicU64::new(0),
            peak_used_bytes: AtomicU64::new(0),
            expiry_sweeps: AtomicU64::new(0),
            expansions: AtomicU64::new(0),
            clock_offset: AtomicI64::new(0),
            shutdown: AtomicBool::new(false),
            quiet: AtomicBool::new(false),
            maintenance_thread: std::sync::OnceLock::new(),
            cache,
            journal: std::sync::OnceLock::new(),
            stall_watcher: std::sync::OnceLock::new(),
            key_watcher: std::sync::OnceLock::new(),
            key_events: std::sync::atomic::AtomicU8::new(0),
            key_classes: std::sync::OnceLock::new(),
            swept_fence: AtomicU64::new(0),
            snapshot: crate::journal::no_snapshot(),
            expand_gate: std::sync::Mutex::new(()),
            freq_max: std::sync::atomic::AtomicU8::new(freq_max),
        });
        let worker = Arc::clone(&inner);
        let handle = std::thread::Builder::new()
            .name("amalgam-expand".into())
            .spawn(move || worker.maintenance_loop())
            .map_err(|e| ConfigError(format!("could not start the expand thread: {e}")))?;
        let _ = inner.maintenance_thread.set(handle.thread().clone());
        Ok(Store { inner, maintenance: Some(handle) })
    }
}

fn random_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(std::process::id() as u64);
    h.finish()
}
