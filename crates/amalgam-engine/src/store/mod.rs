//! The public store: memcached's item operations on the index, the pools
//! and the epoch scheme, plus the dedicated expand (maintenance) thread.

use crate::evict::{Eviction, Policy, Queue};
use crate::item::{self, Meta, KEY_BYTES_MAX};
use crate::journal::Change;
use crate::local::{Epochs, Garbage, Local};
use crate::object::{self, Object, ObjectCell, RetiredCell, TAG_BYTES, TAG_OBJECT};
use crate::pool::{Block, SharedPool, SMALL_ITEM_BYTES_MAX};
use crate::reclaim::Reclaim;
use crate::segment::{Segments, EVICT_RESERVE_SEGMENTS, ITEM_ALIGN_BYTES, SEGMENTS_MIN, SEGMENT_BYTES};
use crate::stall::{Stall, Timing};
use crate::table::{self, prefetch_line, split_hash, Probe, Table, OPTIMISTIC_RETRIES_MAX, TABLE_LOG2_MAX};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// memcached's boundary between relative and absolute expiry times:
/// an exptime above 30 days is a unix timestamp (protocol.txt).
///
/// ```
/// # use amalgam_engine::{Expiry, RELATIVE_EXPIRY_SECONDS_MAX};
/// let now = 1_700_000_000;
/// assert_eq!(Expiry::from_memcached(RELATIVE_EXPIRY_SECONDS_MAX, now), Expiry::At(now + 2_592_000));
/// assert_eq!(Expiry::from_memcached(RELATIVE_EXPIRY_SECONDS_MAX + 1, now), Expiry::At(2_592_001));
/// ```
pub const RELATIVE_EXPIRY_SECONDS_MAX: i64 = 60 * 60 * 24 * 30;
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
/// Mean items per bucket above which the table doubles. Seven slots per
/// line and Poisson-distributed chains: at a mean of 4, 5% of buckets need
/// an overflow line and 98% of items sit in their bucket's own line; after
/// the doubling the mean is 2 and overflow all but vanishes (0.05%).
///
/// ```
/// use amalgam_engine::{Expiry, Store, LOAD_PER_BUCKET_MAX};
/// let store = Store::new(Default::default()).unwrap();
/// for i in 0..10_000u32 {
///     store.set(&i.to_le_bytes(), b"v", 0, Expiry::Never).unwrap();
/// }
/// store.wait_for_expansion(std::time::Duration::from_secs(10));
/// let st = store.stats();
/// assert!(st.items <= st.buckets * LOAD_PER_BUCKET_MAX as u64);
/// ```
pub const LOAD_PER_BUCKET_MAX: usize = 4;
/// [`LOAD_PER_BUCKET_MAX`] in cache mode, where the index is charged to
/// the memory budget (the memory account below): every byte the index
/// takes is a byte fewer for items, so a cache keeps its table twice as
/// dense as a store. At a mean of 7 per bucket 45% of buckets need an
/// overflow line and 87% of items sit in their bucket's own line
/// (Poisson, seven slots); the index then costs 9–18 bytes per item
/// instead of 18–37 at a mean of 2–4. 16 B / 32 B items fill `-m 64`
/// at about 0.9 M items, 6.8 per bucket of a 2^17 table. The server's
/// `stats` report the overflow nodes (`hash_overflow_nodes`).
pub const CACHE_LOAD_PER_BUCKET_MAX: usize = 7;
/// Cache mode: the bucket array may take at most this fraction (1/n) of
/// the budget. Past it the table stops doubling and chains grow instead
/// (overflow lines, charged to the budget as they are handed out): a
/// cache of tiny items pays longer chains rather than an index that
/// crowds out the items.
///
/// ```
/// # use amalgam_engine::{evict::Eviction, Config, Expiry, Store, CACHE_INDEX_BUDGET_SHARE};
/// let budget = 2 << 20;
/// let store = Store::new(Config { memory_limit_bytes: budget, eviction: Eviction::S3Fifo, ..Config::default() }).unwrap();
/// for i in 0..200_000u32 {
///     store.set(&i.to_le_bytes(), b"", 0, Expiry::Never).unwrap();
/// }
/// store.wait_for_expansion(std::time::Duration::from_secs(10));
/// assert!(store.stats().buckets * 64 <= (budget / CACHE_INDEX_BUDGET_SHARE) as u64);
/// ```
pub const CACHE_INDEX_BUDGET_SHARE: usize = 4;
/// Buckets of a new store's table, as a power of two.
///
/// ```
/// use amalgam_engine::{Store, INITIAL_BUCKETS_LOG2_DEFAULT};
/// let store = Store::new(Default::default()).unwrap();
/// assert_eq!(store.stats().buckets, 1 << INITIAL_BUCKETS_LOG2_DEFAULT);
/// ```
pub const INITIAL_BUCKETS_LOG2_DEFAULT: u32 = 10;
/// CAS values a thread reserves at once, so writers on different cores do
/// not all increment one shared counter.
const CAS_BLOCK: u64 = 1024;
/// Inserts a thread makes between two checks of the table's load.
const INSERTS_PER_LOAD_CHECK: u32 = 256;
/// Batch window of [`Store::get_batch`]: keys hashed and prefetched
/// together (MICA §5.3 batches up to 32; 16 keeps 32 lines in L1).
///
/// ```
/// # use amalgam_engine::{Expiry, Store, BATCH_WINDOW_KEYS};
/// let store = Store::new(Default::default()).unwrap();
/// let keys: Vec<[u8; 2]> = (0..3 * BATCH_WINDOW_KEYS as u16).map(|i| i.to_le_bytes()).collect();
/// let mut misses = 0;
/// store.get_batch(&keys, |_, it| misses += it.is_none() as usize);
/// assert_eq!(misses, keys.len());
/// ```
pub const BATCH_WINDOW_KEYS: usize = 16;
/// Buckets the maintenance thread sweeps before checking for other work.
const SWEEP_STEP_BUCKETS: usize = 4096;
/// How often the maintenance thread wakes without being asked.
const MAINTENANCE_PERIOD: Duration = Duration::from_millis(250);
/// Buckets the background expiry sweep visits per maintenance wake (a
/// bounded step: about 16 Ki bucket lines and their items, a few ms; a
/// table of 2^24 buckets is swept in about 17 minutes). memcached's LRU
/// crawler plays this part there.
const EXPIRY_SWEEP_BUCKETS_PER_WAKE: usize = 16 * 1024;
/// Most doublings one expansion may do at once (a 16x larger table).
const EXPANSION_LOG2_STEP_MAX: u32 = 4;
/// How far ahead of its position the expand thread prefetches items.
const MIGRATE_PREFETCH_AHEAD_BUCKETS: usize = 8;
/// Epoch advances `reclaim` attempts.
const RECLAIM_ROUNDS_MAX: usize = 64;
/// Cache mode: budget bytes per S3-FIFO ghost entry, i.e. the ghost
/// remembers about as many evicted keys as a budget of 64-byte items holds
/// (the paper sizes the ghost like the main queue, in objects).
const GHOST_BYTES_PER_ENTRY: usize = 64;
/// Cache mode: free segments above the reserve at which writers start
/// waking the eviction (maintenance) thread, and to which it reclaims, so
/// it stays ahead of them: one per 2^EVICT_WAKE_SLACK_SHARE_LOG2 segments
/// of the budget (`Cache::wake_slack`), at least 1 and at most
/// EVICT_WAKE_SLACK_SEGMENTS_MAX. One segment was too little for a busy
/// large cache: under HSET at pipeline 16 over 100 k small hashes (~650
/// MB/s of new versions into a 1 GiB cache) writers found the reserve
/// reached and reclaimed themselves ~70 times a second, their replies
/// waiting for it; with 4 (1 GiB) they did so 0–7 times in 6 s, and SETs
/// on a full 1 GiB cache never (docs/bench-log/2026-11-26-collections.md
/// § Writers no longer reclaim in a busy cache). Budgets under 512 MiB keep 1: a slack of 4
/// at 256 MiB cost SET at pipeline 16 there its p99 (1.24 → 1.55–1.90 ms,
/// the reclaiming thread's share of the 2 vCPUs), and each segment is a
/// larger share of the items.
const EVICT_WAKE_SLACK_SHARE_LOG2: u32 = 8;
/// See EVICT_WAKE_SLACK_SHARE_LOG2: 16 MiB of 1 MiB segments (0.4% of a
/// 4 GiB budget and above).
const EVICT_WAKE_SLACK_SEGMENTS_MAX: usize = 16;

/// The wake slack (EVICT_WAKE_SLACK_SHARE_LOG2) for `segments` segments
/// in the budget.
fn wake_slack_for(segments: usize) -> usize {
    (segments >> EVICT_WAKE_SLACK_SHARE_LOG2).clamp(1, EVICT_WAKE_SLACK_SEGMENTS_MAX)
}
/// Cache mode: free segments (above the reserve and the wake slack) at or
/// below which the maintenance thread runs its memory account every
/// ACCOUNT_PERIOD_NEAR_FULL instead of every MAINTENANCE_PERIOD: as the
/// segments near the limit, a limit lowered late (overflow lines handed
/// out since the last account) would make the next reclamation evict
/// several segments at once.
const ACCOUNT_NEAR_FULL_SEGMENTS: usize = 4;
/// See ACCOUNT_NEAR_FULL_SEGMENTS.
const ACCOUNT_PERIOD_NEAR_FULL: Duration = Duration::from_millis(10);
/// Cache mode: segments the maintenance thread reclaims per wake-up before
/// it looks at its other work (bounds one round).
const EVICT_SEGMENTS_PER_WAKE_MAX: usize = 64;
/// Cache mode: segments a writer reclaims itself before it gives up on
/// keeping items and reclaims with forced eviction (every live item of the
/// segment evicted, which always frees a whole segment). The contract's
/// progress rule bounds honest passes by `freq_max + 1` per item; this
/// caps the writer's work regardless of the queue's length (and is large
/// enough that on the small caches of tests/cache.rs the engine never
/// forces, so its order is exactly `evict::Model`'s).
const WRITER_RECLAIMS_MAX: usize = 64;
/// Cache mode: times a writer retries its epoch collection (yielding in
/// between) waiting for a segment it reclaimed to pass its grace period;
/// only a reader pinned for this long (a stuck `Reader`) exhausts it.
const GRACE_WAIT_ROUNDS_MAX: usize = 100_000;
/// Cache mode: times a write that found no free segment makes room by
/// force and tries again (`Inner::with_room`). One normally suffices; the
/// bound only stops a writer racing others for the same freed segments.
const ROOM_RETRIES_MAX: usize = 4;

/// Why an operation did not store, find or change an item. These map one
/// to one onto memcached's replies (`NOT_STORED`, `EXISTS`, `NOT_FOUND`,
/// `CLIENT_ERROR …`, `SERVER_ERROR …`).
///
/// ```
/// use amalgam_engine::{Error, Expiry, Store};
/// let store = Store::new(Default::default()).unwrap();
/// assert_eq!(store.add(b"k", b"v", 0, Expiry::Never).map(|_| ()), Ok(()));
/// assert_eq!(store.add(b"k", b"v", 0, Expiry::Never), Err(Error::NotStored));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// add on a present key, replace/append/prepend on a missing one.
    NotStored,
    /// cas with a CAS unique that is no longer current.
    Exists,
    /// The key is not present (or has expired).
    NotFound,
    /// The key is empty or longer than [`KEY_BYTES_MAX`].
    BadKey,
    /// The item would exceed the configured maximum item size.
    TooLarge,
    /// The memory budget is exhausted.
    OutOfMemory,
    /// incr/decr on a value that is not a decimal u64.
    NonNumeric,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Error::NotStored => "not stored",
            Error::Exists => "cas unique does not match",
            Error::NotFound => "not found",
            Error::BadKey => "key must be 1 to 250 bytes",
            Error::TooLarge => "object too large for cache",
            Error::OutOfMemory => "out of memory storing object",
            Error::NonNumeric => "cannot increment or decrement non-numeric value",
        })
    }
}

impl std::error::Error for Error {}

/// When an item expires: never, at a whole unix second (memcached's
/// clock), or at a unix millisecond (Redis's PX, PEXPIRE …).
///
/// An item reports [`Expiry::At`] for a deadline on a whole second and
/// [`Expiry::AtMillis`] only for one that is not ([`Expiry::at_millis`]
/// normalizes the same way), so the two forms never name the same instant
/// in what the store hands back.
///
/// ```
/// use amalgam_engine::Expiry;
/// let now = 1_700_000_000;
/// assert_eq!(Expiry::from_memcached(0, now), Expiry::Never);
/// assert_eq!(Expiry::from_memcached(60, now), Expiry::At(now + 60));
/// assert_eq!(Expiry::from_memcached(1_800_000_000, now), Expiry::At(1_800_000_000));
/// assert!(Expiry::from_memcached(-1, now).is_expired(now));
/// assert_eq!(Expiry::at_millis(1_700_000_000_000), Expiry::At(1_700_000_000));
/// assert_eq!(Expiry::at_millis(1_700_000_000_250), Expiry::AtMillis(1_700_000_000_250));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expiry {
    /// Never expires.
    Never,
    /// Expires at this unix time (seconds); at or before `now` means the
    /// item is already expired.
    At(u32),
    /// Expires at this unix time in milliseconds (at or before the clock's
    /// millisecond means expired). Deadlines past u32::MAX seconds are
    /// clamped to `At(u32::MAX)`.
    AtMillis(u64),
}

/// Latest deadline an item can hold, in unix milliseconds.
const EXPIRY_MILLIS_MAX: u64 = u32::MAX as u64 * 1000;

impl Expiry {
    /// memcached's rule: 0 is never; up to 30 days is relative to `now`;
    /// larger is an absolute unix time; negative is already expired.
    ///
    /// ```
    /// # use amalgam_engine::Expiry;
    /// assert_eq!(Expiry::from_memcached(10, 1_000), Expiry::At(1_010));
    /// ```
    pub fn from_memcached(exptime: i64, now: u32) -> Expiry {
        if exptime == 0 {
            Expiry::Never
        } else if exptime < 0 {
            Expiry::At(1)
        } else if exptime <= RELATIVE_EXPIRY_SECONDS_MAX {
            Expiry::At(now.saturating_add(exptime as u32))
        } else {
            Expiry::At(u32::try_from(exptime).unwrap_or(u32::MAX).max(1))
        }
    }

    /// True if an item with this expiry is gone at `now`.
    ///
    /// ```
    /// # use amalgam_engine::Expiry;
    /// assert!(Expiry::At(5).is_expired(5));
    /// assert!(!Expiry::At(6).is_expired(5));
    /// assert!(!Expiry::Never.is_expired(u32::MAX));
    /// ```
    pub fn is_expired(self, now: u32) -> bool {
        self.is_expired_at_millis(u64::from(now) * 1000)
    }

    /// True if an item with this expiry is gone at unix millisecond `now_ms`.
    ///
    /// ```
    /// # use amalgam_engine::Expiry;
    /// assert!(!Expiry::AtMillis(5_300).is_expired_at_millis(5_299));
    /// assert!(Expiry::AtMillis(5_300).is_expired_at_millis(5_300));
    /// assert!(Expiry::At(5).is_expired_at_millis(5_000));
    /// ```
    pub fn is_expired_at_millis(self, now_ms: u64) -> bool {
        self.unix_millis().is_some_and(|t| t <= now_ms)
    }

    /// The expiry for a deadline in unix milliseconds: [`Expiry::At`] when
    /// it is a whole second, else [`Expiry::AtMillis`]; clamped to
    /// `At(u32::MAX)`, and a deadline in the first second of 1970 (which
    /// the item header cannot tell from "never") is `At(1)`, as expired.
    pub fn at_millis(ms: u64) -> Expiry {
        if ms >= EXPIRY_MILLIS_MAX {
            Expiry::At(u32::MAX)
        } else if ms < 1000 {
            Expiry::At(1)
        } else if ms % 1000 == 0 {
            Expiry::At((ms / 1000) as u32)
        } else {
            Expiry::AtMillis(ms)
        }
    }

    /// The deadline in unix milliseconds, None for never.
    ///
    /// ```
    /// # use amalgam_engine::Expiry;
    /// assert_eq!(Expiry::At(7).unix_millis(), Some(7_000));
    /// assert_eq!(Expiry::Never.unix_millis(), None);
    /// ```
    pub fn unix_millis(self) -> Option<u64> {
        match self {
            Expiry::Never => None,
            Expiry::At(t) => Some(u64::from(t) * 1000),
            Expiry::AtMillis(ms) => Some(ms),
        }
    }

    /// The deadline in whole unix seconds, a millisecond deadline rounded
    /// up (memcached's view of a key set over RESP: its TTL in seconds
    /// never reads 0 while the key lives). None for never.
    ///
    /// ```
    /// # use amalgam_engine::Expiry;
    /// assert_eq!(Expiry::AtMillis(7_001).unix_secs_ceil(), Some(8));
    /// assert_eq!(Expiry::At(7).unix_secs_ceil(), Some(7));
    /// ```
    pub fn unix_secs_ceil(self) -> Option<u32> {
        match self {
            Expiry::Never => None,
            Expiry::At(t) => Some(t),
            Expiry::AtMillis(ms) => Some(u32::try_from(ms.div_ceil(1000)).unwrap_or(u32::MAX)),
        }
    }

    /// The header's fields: seconds rounded down (0 = never) and the
    /// milliseconds past them (item.rs, "Expiry at millisecond resolution").
    pub(crate) fn raw(self) -> (u32, u16) {
        match self {
            Expiry::Never => (0, 0),
            Expiry::At(t) => (t.max(1), 0),
            Expiry::AtMillis(ms) => match Expiry::at_millis(ms) {
                Expiry::AtMillis(ms) => ((ms / 1000) as u32, (ms % 1000) as u16),
                normalized => normalized.raw(),
            },
        }
    }

    fn from_raw(secs: u32, ms: u16) -> Expiry {
        if secs == 0 {
            Expiry::Never
        } else if ms == 0 {
            Expiry::At(secs)
        } else {
            Expiry::AtMillis(u64::from(secs) * 1000 + u64::from(ms))
        }
    }
}

/// The system clock in unix seconds (the store's clock before any
/// `advance_clock`).
fn now_unix_seconds() -> u32 {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    u32::try_from(secs).unwrap_or(u32::MAX).max(1)
}

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

/// Counters describing a store at one moment (each read separately, so
/// mutually consistent only when the store is quiet).
///
/// ```
/// use amalgam_engine::{Expiry, Store};
/// let store = Store::new(Default::default()).unwrap();
/// store.set(b"a", b"1", 0, Expiry::Never).unwrap();
/// assert_eq!(store.stats().items, 1);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// Items in the index (expired ones not yet reclaimed included).
    pub items: u64,
    /// Bytes of those items' keys and values, and their objects' charges
    /// (object.rs).
    pub item_bytes: u64,
    /// Bytes charged for objects (object.rs), included in `item_bytes`.
    pub object_bytes: i64,
    /// Bytes of pool blocks handed out and not yet freed.
    pub block_bytes: i64,
    /// Chunk and large-item bytes reserved against the budget (store
    /// mode); bytes of segments that may be resident (cache mode).
    pub reserved_bytes: u64,
    /// Cache mode: bytes of outsized items (larger than a segment, each
    /// its own block: `outsized.rs`), charged to the budget; 0 in store
    /// mode, whose large items count in `reserved_bytes`.
    pub outsized_bytes: u64,
    /// The budget (`memory_limit_bytes`).
    pub memory_limit_bytes: u64,
    /// Buckets in the current table.
    pub buckets: u64,
    /// Overflow nodes in the current table's arena (linked into chains,
    /// or empty and kept for reuse): its size.
    pub overflow_nodes: u64,
    /// Of those, the ones linked into chains now.
    pub overflow_nodes_in_use: u64,
    /// Bytes of the current index (buckets and overflow nodes).
    pub index_bytes: u64,
    /// Completed table doublings.
    pub expansions: u64,
    /// True while an expansion is in flight.
    pub expanding: bool,
    /// Cache mode: live items evicted to make room.
    pub evictions: u64,
    /// Cache mode: evicted items that no GET had read.
    pub evicted_unfetched: u64,
    /// Cache mode: expired items reclaimed (on access, by the sweep or by
    /// segment reclamation) that no GET had read.
    pub expired_unfetched: u64,
    /// Cache mode: segments reclaimed.
    pub reclaimed_segments: u64,
    /// Cache mode: segments freed by merging sparse runs (their live items
    /// packed into one segment in the run's place, nothing evicted).
    pub merged_segments: u64,
    /// Cache mode: writes that found the free segments at the reserve and
    /// reclaimed before going on (`Inner::make_room`; their replies waited
    /// for it). Near zero while the maintenance thread keeps ahead.
    pub writer_reclaims: u64,
    /// Expired or flushed items the background sweep removed.
    pub swept_items: u64,
    /// Full passes of the background expiry sweep over the table.
    pub expiry_sweeps: u64,
    /// Cache mode: segments in the budget, and how many a writer may take
    /// now (free and paged in, or room under `segment_limit`).
    pub segments: u64,
    /// See `segments`.
    pub free_segments: u64,
    /// Cache mode: most segments that may be resident, i.e. the budget
    /// less the index (the memory account).
    pub segment_limit: u64,
    /// Cache mode: bytes the eviction policy's own structures may make
    /// resident (S3-FIFO's ghost), on top of the budget.
    pub policy_bytes: u64,
    /// Cache mode: bytes per segment (the largest item it can hold).
    pub segment_bytes: u64,
}

/// A read-only view of a stored item, valid while the callback that
/// received it runs. Reading it copies nothing.
///
/// ```
/// use amalgam_engine::{Expiry, Store};
/// let store = Store::new(Default::default()).unwrap();
/// store.set(b"k", b"value", 42, Expiry::Never).unwrap();
/// let flags = store.get(b"k", |item| {
///     assert_eq!(item.key(), b"k");
///     assert_eq!(item.value(), b"value");
///     item.flags()
/// });
/// assert_eq!(flags, Some(42));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct ItemRef<'a> {
    /// The item; each accessor decodes its own field (a GET reads only the
    /// fields it uses: item.rs, "Single fields").
    ptr: *const u8,
    _guard: PhantomData<&'a [u8]>,
}

impl<'a> ItemRef<'a> {
    /// # Safety
    /// `ptr` is a live item protected for 'a by an epoch guard.
    pub(crate) unsafe fn new(ptr: *const u8) -> ItemRef<'a> {
        ItemRef { ptr, _guard: PhantomData }
    }

    /// The key.
    ///
    /// ```
    /// # let store = amalgam_engine::Store::new(Default::default()).unwrap();
    /// store.set(b"k", b"v", 0, amalgam_engine::Expiry::Never).unwrap();
    /// assert_eq!(store.get(b"k", |it| it.key().to_vec()).unwrap(), b"k");
    /// ```
    pub fn key(&self) -> &'a [u8] {
        // SAFETY: the item is live for 'a (every accessor below relies on
        // this); its header describes where the key is.
        unsafe { item::key(self.ptr) }
    }

    /// The value bytes.
    ///
    /// ```
    /// # let store = amalgam_engine::Store::new(Default::default()).unwrap();
    /// store.set(b"k", b"value", 0, amalgam_engine::Expiry::Never).unwrap();
    /// assert_eq!(store.get(b"k", |it| it.value().len()), Some(5));
    /// ```
    pub fn value(&self) -> &'a [u8] {
        // SAFETY: as for key.
        unsafe { std::slice::from_raw_parts(self.ptr.add(item::value_at_of(self.ptr)), item::vlen_of(self.ptr)) }
    }

    /// The 32-bit client flags.
    ///
    /// ```
    /// # let store = amalgam_engine::Store::new(Default::default()).unwrap();
    /// store.set(b"k", b"v", 0xDEAD, amalgam_engine::Expiry::Never).unwrap();
    /// assert_eq!(store.get(b"k", |it| it.flags()), Some(0xDEAD));
    /// ```
    pub fn flags(&self) -> u32 {
        // SAFETY: as for key.
        unsafe { item::flags_of(self.ptr) }
    }

    /// The CAS unique of this version of the item.
    ///
    /// ```
    /// # let store = amalgam_engine::Store::new(Default::default()).unwrap();
    /// let cas = store.set(b"k", b"v", 0, amalgam_engine::Expiry::Never).unwrap();
    /// assert_eq!(store.get(b"k", |it| it.cas()), Some(cas));
    /// ```
    pub fn cas(&self) -> u64 {
        // SAFETY: as for key.
        unsafe { item::cas_of(self.ptr) }
    }

    /// When the item expires.
    ///
    /// ```
    /// use amalgam_engine::{Expiry, Store};
    /// # let store = Store::new(Default::default()).unwrap();
    /// store.set(b"k", b"v", 0, Expiry::At(4_000_000_000)).unwrap();
    /// assert_eq!(store.get(b"k", |it| it.expiry()), Some(Expiry::At(4_000_000_000)));
    /// ```
    pub fn expiry(&self) -> Expiry {
        Expiry::from_raw(self.expiry_raw(), self.expiry_ms_raw())
    }

    /// True if the item has been read before: an `mg` (through
    /// [`ItemRef::mark_fetched`]) or a touch marked it, or, in cache mode,
    /// a GET raised its frequency. memcached's ITEM_FETCHED, the meta
    /// protocol's `h`.
    ///
    /// ```
    /// # let store = amalgam_engine::Store::new(Default::default()).unwrap();
    /// store.set(b"k", b"v", 0, amalgam_engine::Expiry::Never).unwrap();
    /// assert_eq!(store.get(b"k", |it| it.fetched()), Some(false));
    /// store.get(b"k", |it| it.mark_fetched());
    /// assert_eq!(store.get(b"k", |it| it.fetched()), Some(true));
    /// ```
    pub fn fetched(&self) -> bool {
        // SAFETY: as for key.
        unsafe { item::fetched(self.ptr) }
    }

    /// Marks the item as read ([`ItemRef::fetched`]). Writes the item's
    /// own meta byte once (nothing if already marked); for the meta
    /// protocol's `mg`, not for the plain GET path.
    pub fn mark_fetched(&self) {
        // SAFETY: as for key.
        unsafe { item::mark_fetched(self.ptr) }
    }

    /// The meta protocol's marks: [`MARK_STALE`](crate::MARK_STALE) and [`MARK_TOKEN_SENT`](crate::MARK_TOKEN_SENT)
    /// bits, set only through [`Store::update`].
    ///
    /// ```
    /// # let store = amalgam_engine::Store::new(Default::default()).unwrap();
    /// store.set(b"k", b"v", 0, amalgam_engine::Expiry::Never).unwrap();
    /// assert_eq!(store.get(b"k", |it| it.marks()), Some(0));
    /// ```
    pub fn marks(&self) -> u8 {
        // SAFETY: as for key.
        unsafe { item::marks_of(self.ptr) }
    }

    /// The item's value tag (`object.rs`): [`TAG_BYTES`] for plain bytes
    /// (every memcached item, every Redis string), a packed kind, or
    /// [`TAG_OBJECT`]. [`ItemRef::marks`] carries it too, so a rewrite
    /// that passes the marks back keeps the kind.
    ///
    /// ```
    /// use amalgam_engine::{Expiry, Store, TAG_BYTES};
    /// let store = Store::new(Default::default()).unwrap();
    /// store.set(b"k", b"v", 0, Expiry::Never).unwrap();
    /// assert_eq!(store.get(b"k", |it| it.tag()), Some(TAG_BYTES));
    /// ```
    #[inline(always)]
    pub fn tag(&self) -> u8 {
        // SAFETY: as for key.
        unsafe { item::tag_of(self.ptr) }
    }

    /// The object an object item ([`TAG_OBJECT`]) holds, valid as long as
    /// this reference (the lookup's epoch pin keeps a retired cell alive);
    /// None for any other item. Read it with [`ObjectCell::read`]; write
    /// it only inside [`Store::update`]'s closure, answering
    /// [`Update::InPlace`].
    pub fn object(&self) -> Option<&'a ObjectCell> {
        if self.tag() != TAG_OBJECT {
            return None;
        }
        let cell = object::cell_addr(self.value());
        // SAFETY: an object item's value is the address of a live cell it
        // owns (object.rs, WHO OWNS AN OBJECT); a cell is retired through
        // the epoch scheme when its item leaves the index, and this
        // reference lives inside the pin that found the item.
        Some(unsafe { &*cell })
    }

    /// Bytes the item occupies in the engine: header, key and value, before
    /// the pool's size-class rounding (memcached's `me` reports this as
    /// `size=`). The header's width depends on the fields (flags and an
    /// expiry take 4 bytes each when set; lengths and the CAS take only the
    /// bytes their values need), so two items with the same key and value
    /// may differ by a few bytes.
    ///
    /// ```
    /// # let store = amalgam_engine::Store::new(Default::default()).unwrap();
    /// store.set(b"key", b"value", 0, amalgam_engine::Expiry::Never).unwrap();
    /// let size = store.get(b"key", |it| it.size()).unwrap();
    /// assert!(size > 8 && size <= 8 + 3 + 8 + 1);
    /// ```
    pub fn size(&self) -> usize {
        // SAFETY: as for key.
        unsafe { item::value_at_of(self.ptr) + item::vlen_of(self.ptr) }
    }

    /// What changes whenever the key's value or deadline does: the CAS
    /// unique (every write that replaces the item takes a new one), the
    /// deadline (EXPIRE and friends keep the CAS unique) and an object's
    /// version (its count of in-place writes, `ObjectCell::version`). Redis's WATCH compares these: equal
    /// stamps mean the key was not written in between, except that a key
    /// written and then deleted again reads as unchanged (absent both
    /// times), where Redis would call it modified.
    pub fn stamp(&self) -> [u64; 3] {
        let deadline = (u64::from(self.expiry_raw()) << 16) | u64::from(self.expiry_ms_raw());
        [self.cas(), deadline, self.object().map_or(0, |c| c.version())]
    }

    /// The expiry as stored: unix seconds rounded down, 0 for never.
    #[inline(always)]
    pub(crate) fn expiry_raw(&self) -> u32 {
        // SAFETY: as for key.
        unsafe { item::expiry_of(self.ptr) }
    }

    /// The milliseconds past [`ItemRef::expiry_raw`] (0 if none).
    pub(crate) fn expiry_ms_raw(&self) -> u16 {
        // SAFETY: as for key.
        unsafe { item::expiry_ms_of(self.ptr) }
    }
}

/// The value a [`Store::update`] publishes.
#[derive(Debug)]
pub enum NewValue<'v> {
    /// The current item's value, unchanged.
    Same,
    /// These bytes.
    Bytes(&'v [u8]),
    /// The current value with these bytes appended (true) or prepended.
    Concat(&'v [u8], bool),
    /// A value computed by the caller (a counter's digits).
    Owned(Vec<u8>),
    /// A value that lives outside the item (object.rs): the item holds
    /// its address and the tag [`TAG_OBJECT`] whatever `marks` says.
    Object(Box<dyn Object>),
}

/// What [`Store::update`] does with the key, decided from its live item.
#[derive(Debug)]
pub enum Update<'v> {
    /// Leave the key as it is.
    Keep,
    /// Remove the key.
    Remove,
    /// Publish a new version of the item.
    Put {
        value: NewValue<'v>,
        flags: u32,
        expiry: Expiry,
        /// True: a fresh CAS unique; false: keep the current item's (a
        /// metadata-only change, like touch).
        fresh_cas: bool,
        /// [`MARK_STALE`](crate::MARK_STALE) | [`MARK_TOKEN_SENT`](crate::MARK_TOKEN_SENT),
        /// and the value tag in bits 0-2 (object.rs; [`ItemRef::marks`]
        /// carries both).
        marks: u8,
    },
    /// The closure changed the live item's object in place (it holds
    /// the bucket lock; [`ObjectCell::write`]); the item stays. The
    /// engine re-measures the object for the memory account and hands
    /// `record` (the change, in the caller's encoding) to the journal as
    /// [`Change::Op`]. Answered for anything but an object item, it is
    /// [`Update::Keep`].
    InPlace {
        /// The change as the journal records it.
        record: Vec<u8>,
    },
}

/// An embeddable, concurrent key-value store with memcached's item
/// semantics: Mercury's chained hash table with MemC3's optimistic reads.
///
/// `Store` is `Send + Sync`; share it with `Arc<Store>` or `&Store` across
/// any number of threads. Dropping it stops its expand thread and frees all
/// memory.
///
/// ```
/// use amalgam_engine::{Expiry, Store};
/// use std::sync::Arc;
/// let store = Arc::new(Store::new(Default::default()).unwrap());
/// let s2 = Arc::clone(&store);
/// std::thread::spawn(move || s2.set(b"from-thread", b"1", 0, Expiry::Never).unwrap()).join().unwrap();
/// assert!(store.get(b"from-thread", |_| ()).is_some());
/// ```
pub struct Store {
    pub(crate) inner: Arc<Inner>,
    maintenance: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("stats", &self.stats()).finish()
    }
}

pub(crate) struct Inner {
    /// The table that owns keys not yet routed elsewhere; during an
    /// expansion its successor takes over bucket by bucket.
    current: AtomicPtr<Table>,
    /// The key hash, seeded per store (Config::hash_seed or random).
    hasher: foldhash::quality::FixedState,
    pub(crate) item_size_max: usize,
    /// The mean load above which the table doubles: LOAD_PER_BUCKET_MAX,
    /// or CACHE_LOAD_PER_BUCKET_MAX in cache mode.
    load_max: u64,
    pub(crate) shared: SharedPool,
    pub(crate) epochs: Epochs,
    /// Next unreserved CAS value (CAS uniques start at 1).
    cas_counter: AtomicU64,
    /// Items with a CAS below this were flushed.
    pub(crate) flush_cas: AtomicU64,
    /// Bumped by every flush so threads drop CAS blocks from before it,
    /// and by the write clock's ticks while store times are wanted
    /// (clock.rs).
    flush_generation: AtomicU64,
    /// Store times from CAS uniques (clock.rs): `mg l`, `me la=`.
    write_clock: crate::clock::WriteClock,
    /// Unix time of a delayed flush_all, 0 if none.
    flush_at: AtomicU64,
    /// Held while the flush state (`flush_cas`, `flush_at`) changes and
    /// the change is journaled, and while a snapshot journals that state
    /// (journal.rs, "The flush state"). Lock order: a bucket lock, then
    /// this (a liveness check under a bucket lock may run a due delayed
    /// flush); its holder takes no bucket lock and calls only the journal.
    flush_lock: std::sync::Mutex<()>,
    /// Set when the maintenance thread should sweep flushed items.
    sweep_requested: AtomicBool,
    /// Set by the first write of an item with an expiry: until then the
    /// background expiry sweep has nothing to find and does not run.
    pub(crate) ttl_seen: AtomicBool,
    /// Items removed by the sweeps, and full expiry-sweep passes.
    swept_items: AtomicU64,
    expiry_sweeps: AtomicU64,
    expansions: AtomicU64,
    /// Seconds added to the system clock (tests of expiry).
    clock_offset: AtomicI64,
    shutdown: AtomicBool,
    /// Set by the maintenance thread when it has nothing left to do: no
    /// expansion due and everything it retired (old tables) freed.
    quiet: AtomicBool,
    maintenance_thread: std::sync::OnceLock<std::thread::Thread>,
    /// Cache mode's state; None in store mode.
    pub(crate) cache: Option<Cache>,
    /// Persistence's journal, if attached (journal.rs).
    pub(crate) journal: std::sync::OnceLock<Arc<dyn crate::journal::Journal>>,
    /// Who times the engine's steps (stall.rs), if anyone.
    pub(crate) stall_watcher: std::sync::OnceLock<Arc<dyn crate::stall::StallWatcher>>,
    /// The running snapshot's state, null if none (journal.rs).
    pub(crate) snapshot: AtomicPtr<crate::journal::SnapState>,
    /// Held by the expand thread while it expands and by a snapshot while
    /// it runs: the two exclude each other (journal.rs).
    pub(crate) expand_gate: std::sync::Mutex<()>,
    /// The policy's `freq_max` in cache mode, 0 in store mode: a GET hit
    /// raises an item's frequency while it is below this (so 0 writes
    /// nothing, with one load of a field read on every GET anyway).
    freq_max: std::sync::atomic::AtomicU8,
}

/// Cache mode's shared state (the segments themselves are in
/// `SharedPool::segments`, where the epoch scheme frees into them).
pub(crate) struct Cache {
    /// Both policies, built at start so the policy can change at run time
    /// (`Store::set_eviction`); `active` names the one in force. Concrete
    /// types rather than `dyn Policy`: a writer's `admit` is inlined.
    clock: crate::evict::Clock,
    pub(crate) s3fifo: crate::evict::S3Fifo,
    /// `switches << 1 | policy`, policy [`ACTIVE_S3FIFO`] or
    /// [`ACTIVE_CLOCK`], switches counting `Store::set_eviction`'s changes.
    /// Relaxed: a writer or the reclaimer that reads the old policy for a
    /// moment after a switch makes one more decision by it, which the
    /// contract allows (`Store::set_eviction`). Each writer remembers the
    /// value its last write saw (`Owned::policy_seen`): a write that sees
    /// another one seals that thread's open segments first
    /// (`Inner::alloc_in_segment`), so no segment stays open in a queue
    /// the new policy never writes to.
    active: std::sync::atomic::AtomicU32,
    /// Held while `Store::set_eviction` changes `active` and the frequency
    /// cap with it.
    switching: std::sync::Mutex<()>,
    /// Serializes the policy's decisions (the Policy contract: `reclaim`
    /// never runs concurrently with itself) and owns the reclaimer's open
    /// segments, into which kept items are copied. A victim's reclamation
    /// holds it throughout; a merge per window (reclaim.rs, `Copies`).
    pub(crate) reclaimer: std::sync::Mutex<crate::segment::OpenSegments>,
    /// Whether the maintenance thread reclaims ahead of writers.
    pub(crate) background: bool,
    /// Free segments above the reserve the maintenance thread keeps
    /// (`wake_slack_for` of the budget's segments; set again by each
    /// memory account, as the budget may change).
    pub(crate) wake_slack: AtomicUsize,
    /// [`Config::index_in_budget`].
    pub(crate) index_in_budget: bool,
    /// [`Config::merge_segments`].
    pub(crate) merge: bool,
    /// Unit tests: the next this many segment allocations fail as if the
    /// free list were empty (`Inner::alloc_in_segment`).
    #[cfg(test)]
    alloc_failures: std::sync::atomic::AtomicU32,
    pub(crate) evictions: AtomicU64,
    pub(crate) evicted_unfetched: AtomicU64,
    pub(crate) expired_unfetched: AtomicU64,
    pub(crate) reclaimed_segments: AtomicU64,
    pub(crate) merged_segments: AtomicU64,
    /// See `Stats::writer_reclaims`.
    pub(crate) writer_reclaims: AtomicU64,
    /// Outsized items in the order they were written (outsized.rs).
    pub(crate) outsized: std::sync::Mutex<std::collections::VecDeque<crate::outsized::Outsized>>,
}

/// RAII pin of the calling thread's epoch.
pub(crate) struct Pinned<'s> {
    inner: &'s Inner,
    pub(crate) local: &'s Local,
}

impl<'s> Pinned<'s> {
    pub(crate) fn new(inner: &'s Inner) -> Pinned<'s> {
        let local = inner.epochs.local(&inner.shared);
        inner.epochs.pin(local);
        Pinned { inner, local }
    }

    pub(crate) fn current(&self) -> &'s Table {
        // SAFETY: `current` always holds a live table; a replaced one is
        // retired through the epoch scheme, which we are pinned in.
        unsafe { &*self.inner.current.load(Ordering::Acquire) }
    }
}

impl Drop for Pinned<'_> {
    fn drop(&mut self) {
        self.inner.epochs.unpin(self.local, &self.inner.shared);
    }
}

/// A read session on a [`Store`]: see [`Store::reader`]. Not `Send`: the
/// pin belongs to the thread that took it.
///
/// ```compile_fail
/// fn needs_send<T: Send>(_: T) {}
/// let store = amalgam_engine::Store::new(Default::default()).unwrap();
/// needs_send(store.reader());
/// ```
pub struct Reader<'s> {
    inner: &'s Inner,
    pin: Pinned<'s>,
    _not_send: PhantomData<*const ()>,
}

impl Reader<'_> {
    /// [`Store::get`] under this session's pin.
    ///
    /// ```
    /// # use amalgam_engine::{Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// store.set(b"k", b"v", 3, Expiry::Never).unwrap();
    /// let reader = store.reader();
    /// for _ in 0..3 {
    ///     assert_eq!(reader.get(b"k", |it| it.flags()), Some(3));
    /// }
    /// ```
    #[inline]
    pub fn get<R>(&self, key: &[u8], f: impl FnOnce(ItemRef<'_>) -> R) -> Option<R> {
        if check_key(key).is_err() {
            return None;
        }
        self.inner.get_pinned::<true, R>(&self.pin, key, f)
    }
}

impl std::fmt::Debug for Reader<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Reader")
    }
}

/// What a write operation decided to do with the key's item.
pub(crate) enum Decision<R> {
    Keep(R),
    Put(Block, R),
    Remove(R),
    /// The live item's object was changed in place (`Update::InPlace`):
    /// re-measure it and journal the record.
    InPlace(R, Vec<u8>),
    /// [`Decision::Put`] of an item that holds another key's object, which
    /// the same transaction unlinks with [`Decision::RemoveMoved`]
    /// (`Store::rename`): the object is counted already.
    PutMoved(Block, R),
    /// [`Decision::Remove`] of an item whose object another key's item now
    /// holds: the object is neither retired nor uncounted.
    RemoveMoved(R),
}

/// The size and fields of the item a write will build.
struct NewItem<'k> {
    key: &'k [u8],
    vlen: usize,
    flags: u32,
    expiry: Expiry,
    /// Meta-protocol marks (item::MARK_*).
    marks: u8,
}

impl Inner {
    pub(crate) fn hash(&self, key: &[u8]) -> u64 {
        use std::hash::{BuildHasher, Hasher};
        // `write` alone, not `hash_one`: a slice's Hash impl would also
        // hash its length, a second round of mixing that a key of known
        // bytes does not need (foldhash's `write` folds the length in).
        let mut h = self.hasher.build_hasher();
        h.write(key);
        h.finish()
    }

    /// The store's clock in unix seconds. Out of line: GETs of items with
    /// an expiry call it, and inlined it would lengthen every GET's code
    /// (the clock read and its arithmetic) for the items without one.
    #[inline(never)]
    fn now(&self) -> u32 {
        let secs =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0);
        (secs + self.clock_offset.load(Ordering::Relaxed)).clamp(1, u32::MAX as i64) as u32
    }

    /// The store's clock in unix milliseconds (the same clock as
    /// [`Inner::now`], whose seconds are this rounded down).
    #[inline(never)]
    fn now_millis(&self) -> u64 {
        let ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        (ms + self.clock_offset.load(Ordering::Relaxed) * 1000).clamp(1000, EXPIRY_MILLIS_MAX as i64 + 999) as u64
    }

    /// True if an item stored with `e` would already be expired (reads the
    /// clock only for items that have an expiry).
    pub(crate) fn expired_now(&self, e: Expiry) -> bool {
        match e {
            Expiry::Never => false,
            Expiry::At(t) => t <= self.now(),
            Expiry::AtMillis(_) => e.is_expired_at_millis(self.now_millis()),
        }
    }

    /// True if an item whose stored expiry is `secs` (rounded down, 0 =
    /// never) is live when the seconds clock reads `now`; `ms` gives its
    /// millisecond remainder, read only in the one second where it matters
    /// (item.rs, "Expiry at millisecond resolution"). Inlined: the two
    /// comparisons are the GET path's; the rest is out of line.
    #[inline(always)]
    pub(crate) fn expiry_live(&self, secs: u32, now: u32, ms: impl FnOnce() -> u16) -> bool {
        secs == 0 || secs > now || (secs == now && self.live_this_second(secs, ms()))
    }

    /// [`Inner::expiry_live`]'s last second: a deadline with a remainder
    /// is compared with the millisecond clock.
    #[cold]
    #[inline(never)]
    fn live_this_second(&self, secs: u32, ms: u16) -> bool {
        ms != 0 && self.now_millis() < u64::from(secs) * 1000 + u64::from(ms)
    }

    /// Looks `key` up (already checked) under `pin`; calls `f` on a live
    /// hit, then (`TOUCH`) counts the hit for the eviction policy: after
    /// `f`, so `f` sees the item as it was before this read
    /// ([`ItemRef::fetched`] answers for the reads before).
    #[inline]
    fn get_pinned<const TOUCH: bool, R>(
        &self,
        pin: &Pinned<'_>,
        key: &[u8],
        f: impl FnOnce(ItemRef<'_>) -> R,
    ) -> Option<R> {
        let p = self.lookup(pin, self.hash(key), key)?;
        // SAFETY: p was found while pinned; the pin outlives `f`.
        let it = unsafe { ItemRef::new(p) };
        if !self.is_live(&it, &mut None) {
            return None;
        }
        let r = f(it);
        if TOUCH {
            self.touched(p);
        }
        Some(r)
    }

    /// A GET hit in cache mode: raise the item's frequency while it is
    /// below the policy's cap (no write at the cap; nothing in store mode).
    /// No lock, and the only line possibly written is the item's own.
    #[inline]
    fn touched(&self, p: *const u8) {
        let freq_max = self.freq_max.load(Ordering::Relaxed);
        if freq_max != 0 {
            // SAFETY: the callers found p while pinned and still are.
            unsafe { item::touch_freq(p, freq_max) };
        }
    }

    /// MICA §5.3's two prefetch stages for one window of at most
    /// BATCH_WINDOW_KEYS keys: hashes each key into `hashes` and prefetches
    /// its bucket line, then the line of the item its tag points to. `t`
    /// is the current table of the caller's pin.
    fn hash_and_prefetch<K: AsRef<[u8]>>(&self, t: &Table, window: &[K], hashes: &mut [u64; BATCH_WINDOW_KEYS]) {
        for (j, k) in window.iter().enumerate() {
            hashes[j] = self.hash(k.as_ref());
            t.route(hashes[j]).prefetch(hashes[j]);
        }
        for h in &hashes[..window.len()] {
            if let Some(p) = t.route(*h).peek_candidate(*h) {
                prefetch_line(p);
            }
        }
    }

    /// True if the item may be returned: not expired, not flushed.
    #[inline]
    pub(crate) fn is_live(&self, it: &ItemRef<'_>, now: &mut Option<u32>) -> bool {
        self.flush_if_due();
        // The CAS is read only while a flush fence is set (0 = none: every
        // CAS unique is at least 1).
        let fence = self.flush_cas.load(Ordering::Relaxed);
        if fence != 0 && it.cas() < fence {
            return false;
        }
        let exp = it.expiry_raw();
        exp == 0 || self.expiry_live(exp, *now.get_or_insert_with(|| self.now()), || it.expiry_ms_raw())
    }

    /// Runs a delayed `flush_all` whose time has come.
    ///
    /// Fix (found by tests/model_edges.rs): the delayed flush used to run
    /// only when the maintenance thread next woke (up to
    /// MAINTENANCE_PERIOD later, or after a whole expansion), so the items
    /// it flushes stayed visible past its time, and items stored after its
    /// time were flushed with them (a lost write). memcached compares items
    /// with the flush time on every access; here every liveness check and
    /// every new CAS unique (so every write) runs a due flush first. The
    /// fast path is one load of a field that is 0 unless a flush is
    /// pending.
    #[inline]
    fn flush_if_due(&self) {
        let due = self.flush_at.load(Ordering::Acquire);
        if due != 0 {
            self.flush_if_due_slow(due);
        }
    }

    #[cold]
    #[inline(never)]
    fn flush_if_due_slow(&self, due: u64) {
        if due <= self.now() as u64 {
            let _flush = self.lock_flush();
            self.flush_if_due_locked();
        }
    }

    /// Runs a delayed flush whose time has come; the caller holds
    /// `flush_lock` (so the check, the clearing of `flush_at` and the
    /// journaled Flush are one step for every other flush path).
    fn flush_if_due_locked(&self) {
        let due = self.flush_at.load(Ordering::Acquire);
        if due != 0 && due <= self.now() as u64 {
            self.flush_at.store(0, Ordering::Release);
            self.flush_now();
        }
    }

    /// Takes `flush_lock` (a panic while holding it leaves nothing half
    /// done that matters: the state is two atomics).
    pub(crate) fn lock_flush(&self) -> std::sync::MutexGuard<'_, ()> {
        self.flush_lock.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Journals the flush state as it is now, for a snapshot (journal.rs,
    /// "The flush state"): the fence as a Flush, then a pending delayed
    /// flush as a FlushAt. Replayed in order they leave a store with this
    /// state (a replayed Flush cancels a delayed flush, as every Flush
    /// did). Takes `flush_lock`.
    pub(crate) fn journal_flush_state(&self, j: &dyn crate::journal::Journal) {
        let _flush = self.lock_flush();
        self.flush_if_due_locked();
        let fence_cas = self.flush_cas.load(Ordering::SeqCst);
        if fence_cas != 0 {
            j.record(Change::Flush { fence_cas });
        }
        let at = self.flush_at.load(Ordering::Acquire);
        if at != 0 {
            j.record(Change::FlushAt { at: at as u32 });
        }
    }

    /// Recovery's Flush (Store::restore_flush): the fence, and no delayed
    /// flush pending, as after every journaled Flush.
    pub(crate) fn restore_flush_state(&self, fence_cas: u64) {
        let _flush = self.lock_flush();
        self.flush_at.store(0, Ordering::Release);
        self.raise_cas_counter(fence_cas);
        self.flush_fence(fence_cas);
    }

    /// Finds the key's item pointer (live or not) by optimistic reads.
    /// Bounded: OPTIMISTIC_RETRIES_MAX retries, one step per table
    /// generation, then one locked lookup.
    #[inline(always)]
    pub(crate) fn lookup(&self, pin: &Pinned<'_>, hash: u64, key: &[u8]) -> Option<*const u8> {
        match pin.current().probe_quiet(hash, split_hash(hash).1, key) {
            Some(Probe::Hit(p)) => Some(p),
            Some(_) => None,
            None => self.lookup_routed(pin, hash, key),
        }
    }

    /// [`Inner::lookup`]'s general path: routing while the table expands,
    /// overflow chains, and misses that raced with a writer.
    #[inline(never)]
    fn lookup_routed(&self, pin: &Pinned<'_>, hash: u64, key: &[u8]) -> Option<*const u8> {
        let tag = split_hash(hash).1;
        let mut t = pin.current().route(hash);
        let mut retries = 0;
        for _ in 0..(OPTIMISTIC_RETRIES_MAX + 2 * TABLE_LOG2_MAX as usize + 2) {
            let i = t.index(hash);
            match t.probe(i, tag, key) {
                Probe::Hit(p) => return Some(p),
                Probe::Miss => return None,
                Probe::Moved => t = t.successor().expect("MOVED implies a successor"),
                Probe::Retry if retries < OPTIMISTIC_RETRIES_MAX => {
                    retries += 1;
                    std::hint::spin_loop();
                }
                Probe::Retry => match t.lock(i) {
                    Some(g) => return g.find(tag, key).map(|(_, p)| p),
                    None => t = t.successor().expect("MOVED implies a successor"),
                },
            }
        }
        unreachable!("lookup exceeded its bound")
    }

    /// Later CAS uniques are at least `floor` (recovery). Threads drop
    /// their CAS blocks, which may lie below it.
    pub(crate) fn raise_cas_counter(&self, floor: u64) {
        if self.cas_counter.fetch_max(floor, Ordering::AcqRel) < floor {
            self.flush_generation.fetch_add(1, Ordering::SeqCst);
        }
    }

    pub(crate) fn cas_floor(&self) -> u64 {
        self.cas_counter.load(Ordering::Acquire)
    }

    pub(crate) fn next_cas(&self, local: &Local) -> u64 {
        // A write after a delayed flush's time must not be flushed by it.
        self.flush_if_due();
        // SAFETY: local is the calling thread's own Local; no other
        // reference to its owned part is live here.
        let owned = unsafe { local.owned() };
        let generation = self.flush_generation.load(Ordering::Acquire);
        if owned.cas_next == owned.cas_end || owned.cas_generation != generation {
            owned.cas_next = self.cas_counter.fetch_add(CAS_BLOCK, Ordering::AcqRel);
            owned.cas_end = owned.cas_next + CAS_BLOCK;
            owned.cas_generation = generation;
        }
        let cas = owned.cas_next;
        owned.cas_next += 1;
        cas
    }

    /// Allocates and fills the header and key of a new item; the caller
    /// writes `vlen` value bytes at the returned offset.
    fn build(&self, local: &Local, n: &NewItem<'_>, cas: u64) -> Result<(Block, usize), Error> {
        self.build_limited(local, n, cas, self.item_size_max)
    }

    /// [`Inner::build`] with an explicit size limit (touch: see there).
    fn build_limited(&self, local: &Local, n: &NewItem<'_>, cas: u64, limit: usize) -> Result<(Block, usize), Error> {
        let (expiry, expiry_ms) = n.expiry.raw();
        let meta = Meta { cas, flags: n.flags, expiry, expiry_ms, marks: n.marks };
        // Written once per store (a read first, so the line stays shared).
        if meta.expiry != 0 && !self.ttl_seen.load(Ordering::Relaxed) {
            self.ttl_seen.store(true, Ordering::Relaxed);
        }
        // SAFETY: our own Local; the reference ends with this statement.
        let too_large = match unsafe { local.owned() }.value_bytes_max {
            Some(value_max) => n.vlen > value_max,
            None => item::limit_len(n.key.len(), n.vlen, &meta) > limit,
        };
        if too_large {
            return Err(Error::TooLarge);
        }
        let len = item::encoded_len(n.key.len(), n.vlen, &meta);
        let block = match (&self.cache, &self.shared.segments) {
            (Some(_), Some(segs)) if len > segs.segment_bytes() => self.alloc_outsized(local, n.key, len)?,
            (Some(c), _) => self.alloc_in_segment(local, c, self.hash(n.key), len)?,
            (None, _) => self.alloc(local, len)?,
        };
        // SAFETY: the block is fresh, at least `len` bytes, and ours.
        let dst = unsafe { std::slice::from_raw_parts_mut(block.ptr, len) };
        let at = item::write_header_and_key(dst, n.key, n.vlen, &meta);
        Ok((block, at))
    }

    pub(crate) fn alloc(&self, local: &Local, len: usize) -> Result<Block, Error> {
        if self.shared.reserved_bytes() > self.shared.budget_bytes() && self.store_over_budget(self.object_bytes()) {
            // The budget was lowered below the chunks already reserved
            // (`Store::set_memory_limit`): Redis's noeviction refuses
            // every write that needs memory while the used memory is past
            // maxmemory, even one the free lists could serve. Free what
            // this thread retired first (deletes count once freed).
            // SAFETY: own Local; the reference ends with this statement.
            if unsafe { local.owned() }.pin_depth == 0 {
                self.epochs.reclaim(local, &self.shared, RECLAIM_ROUNDS_MAX);
            }
            if self.store_over_budget(self.object_bytes()) {
                return Err(Error::OutOfMemory);
            }
        }
        for attempt in 0..2 {
            // SAFETY: our own Local, no other owned reference live.
            let owned = unsafe { local.owned() };
            if let Some(b) = owned.pool.alloc(&self.shared, len) {
                local.block_bytes.store(owned.pool.live_bytes as i64, Ordering::Relaxed);
                return Ok(b);
            }
            // Budget exhausted: free what this thread has retired and try
            // once more (only possible when not pinned).
            if attempt == 0 && owned.pin_depth == 0 {
                self.epochs.reclaim(local, &self.shared, RECLAIM_ROUNDS_MAX);
            }
        }
        Err(Error::OutOfMemory)
    }

    /// Cache mode: `len` bytes at the end of this thread's open segment of
    /// the queue the policy in force admits the key (of hash `key_hash`)
    /// to. Never reclaims (the caller may hold a bucket lock): writers
    /// make room first, in `make_room`, before they lock anything.
    ///
    /// The first write of a thread after the policy changed
    /// (`Store::set_eviction`) first seals the thread's open segments: the
    /// new policy may never write to one of their queues again (CLOCK
    /// writes nothing to Small), and an open segment is reclaimed by no one
    /// but its owner, so it would stay, with its items, for good.
    fn alloc_in_segment(&self, local: &Local, cache: &Cache, key_hash: u64, len: usize) -> Result<Block, Error> {
        let segs = self.shared.segments.as_ref().expect("cache mode has segments");
        if len > segs.segment_bytes() {
            return Err(Error::TooLarge);
        }
        #[cfg(test)]
        if self.cache.as_ref().is_some_and(|c| {
            c.alloc_failures.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1)).is_ok()
        }) {
            return Err(Error::OutOfMemory);
        }
        // SAFETY: our own Local; no other reference to its owned part is
        // live (this one ends with the function).
        let owned = unsafe { local.owned() };
        let active = cache.active.load(Ordering::Relaxed);
        if active != owned.policy_seen {
            // Every item this thread allocated before is finished (bump's
            // own precondition), so its open segments may be sealed.
            segs.seal_open(&mut owned.open);
            owned.policy_seen = active;
        }
        let p = segs.bump(&mut owned.open, cache.admit(active, key_hash), len, 0);
        match p {
            Some(ptr) => Ok(Block { ptr, bytes: len.next_multiple_of(ITEM_ALIGN_BYTES) }),
            None => Err(Error::OutOfMemory),
        }
    }

    /// Cache mode, at the start of every write, before any lock and before
    /// the item is built: while free segments are at or below the reserve,
    /// reclaim (bounded: WRITER_RECLAIMS_MAX segments, the last ones by
    /// forced eviction, each followed by its grace period). With the
    /// maintenance thread reclaiming ahead this is normally one load.
    pub(crate) fn make_room(&self, local: &Local) {
        let (Some(cache), Some(segs)) = (&self.cache, &self.shared.segments) else { return };

        let free = segs.free_count();
        if cache.background && free <= cache.keep_free() {
            if let Some(th) = self.maintenance_thread.get() {
                th.unpark();
            }
        }
        // SAFETY: own Local; the reference ends with this statement.
        if free > EVICT_RESERVE_SEGMENTS || unsafe { local.owned() }.pin_depth != 0 {
            // A pinned writer (inside a Reader) cannot wait for a grace
            // period it is holding up; it takes from the reserve.
            return;
        }
        if free > 0 && segs.pending() > 0 {
            // Another thread (normally the maintenance thread, woken above
            // a segment earlier) has reclaimed a segment that is freed as
            // soon as its grace period ends: take from the reserve rather
            // than evict a second segment's items for the same room.
            return;
        }
        // Whatever it reaches, the write goes on: with nothing reclaimable
        // it takes from the reserve. Timed: this write's reply waits.
        cache.writer_reclaims.fetch_add(1, Ordering::Relaxed);
        let timing = Timing::start(self.watcher());
        self.reclaim_above_reserve(local, segs);
        timing.end(self.watcher(), Stall::EvictionCycle);
    }

    /// A writer's reclamation: reclaims one segment at a time (the last of
    /// WRITER_RECLAIMS_MAX rounds by forced eviction), each followed by its
    /// grace period, until more than the reserve is free. Returns whether
    /// it got there; false when nothing was left to reclaim.
    fn reclaim_above_reserve(&self, local: &Local, segs: &Segments) -> bool {
        for round in 0..WRITER_RECLAIMS_MAX {
            if segs.free_count() > EVICT_RESERVE_SEGMENTS {
                return true;
            }
            let reclaimed = self.reclaim_segment(local, Reclaim::writer(round + 1 == WRITER_RECLAIMS_MAX));
            self.wait_grace(local);
            if !reclaimed {
                return false;
            }
        }
        segs.free_count() > EVICT_RESERVE_SEGMENTS
    }

    /// Cache mode: runs the write `op`, and when it failed because no
    /// segment was free (out of memory), makes room by force and runs it
    /// again, up to ROOM_RETRIES_MAX times. `op` must have changed nothing
    /// when it reports out of memory (its decision was Keep, or it failed
    /// before locking anything).
    ///
    /// Why `make_room` alone is not enough: it leaves at least one free
    /// segment (the reserve) for the moment it looks, but every writer past
    /// it may take one, and a writer whose open segment is full takes a new
    /// one. Two writers past `make_room` at once, or one racing a reclaimer
    /// whose segment waits for its grace period, can find the free list
    /// empty when they allocate (found by tests/cache.rs's concurrent test
    /// run twice at once on 2 vCPUs: 1 run in 7 failed a SET). Allocation
    /// may happen under a bucket lock, where nothing can be reclaimed, so
    /// the write reports out of memory and is retried from the top here,
    /// where it holds no lock.
    pub(crate) fn with_room<T: IndexFull>(&self, local: &Local, mut op: impl FnMut() -> T) -> T {
        self.make_room(local);
        let mut r = op();
        for _ in 0..ROOM_RETRIES_MAX {
            if !r.is_out_of_memory() || !self.make_room_now(local) {
                break;
            }
            r = op();
        }
        r
    }

    /// [`Inner::mutate`] for a write that builds its item under the bucket
    /// lock: `decide` runs again after making room when the build found no
    /// free segment (out of memory, with the decision Keep); see
    /// `with_room`.
    fn mutate_with_room<R: IndexFull>(
        &self,
        key: &[u8],
        mut decide: impl FnMut(&Local, Option<ItemRef<'_>>) -> Decision<R>,
    ) -> R {
        self.with_room(self.epochs.local(&self.shared), || self.mutate(key, &mut decide))
    }

    /// Cache mode, after a write found no free segment: reclaims (the last
    /// round by forced eviction) until more than the reserve is free, or,
    /// when nothing is left that this thread could reclaim, waits (yielding,
    /// bounded by GRACE_WAIT_ROUNDS_MAX) for segments other threads
    /// reclaimed to pass their grace period. Returns whether a segment is
    /// free; false in store mode, for a pinned caller (it cannot wait for a
    /// grace period it holds up) and when the cache has nothing to give.
    fn make_room_now(&self, local: &Local) -> bool {
        let (Some(_), Some(segs)) = (&self.cache, &self.shared.segments) else { return false };
        // SAFETY: own Local; the reference ends with this statement.
        let wanted = std::mem::take(&mut unsafe { local.owned() }.outsized_wanted);
        if crate::txn::active() {
            // Inside `Store::atomically` the thread holds buckets out of
            // any eviction's order: evicting (which takes the reclaimer's
            // mutex, then other buckets) could wait for a transaction
            // that waits for us (txn.rs, "Memory"). The write fails with
            // out of memory instead.
            return false;
        }
        if wanted > 0 {
            // An outsized item found no room (outsized.rs): evict outsized
            // items; a pinned caller evicts too, and its retry may still
            // find the memory waiting for the grace period.
            return self.evict_outsized(local, wanted);
        }
        // SAFETY: own Local; the reference ends with this statement.
        if unsafe { local.owned() }.pin_depth != 0 {
            return false;
        }
        if self.reclaim_above_reserve(local, segs) {
            return true;
        }
        for _ in 0..GRACE_WAIT_ROUNDS_MAX {
            if segs.free_count() > 0 || segs.pending() == 0 {
                break;
            }
            std::thread::yield_now();
        }
        segs.free_count() > 0
    }

    /// [`Inner::build`] for a write that holds no lock yet: on out of
    /// memory it makes room by force and tries again (see `with_room`).
    fn build_unlocked(&self, local: &Local, n: &NewItem<'_>, cas: u64) -> Result<(Block, usize), Error> {
        self.with_room(local, || self.build(local, n, cas))
    }

    /// Frees what this thread retired (its reclaimed segments), yielding
    /// while another thread's pin holds the grace period. Bounded by
    /// GRACE_WAIT_ROUNDS_MAX rounds. The caller is not pinned.
    pub(crate) fn wait_grace(&self, local: &Local) {
        for _ in 0..GRACE_WAIT_ROUNDS_MAX {
            if self.epochs.reclaim(local, &self.shared, 4) {
                return;
            }
            std::thread::yield_now();
        }
    }

    /// Frees a block that was never published.
    pub(crate) fn free_unpublished(&self, local: &Local, block: Block) {
        if self.shared.segments.as_ref().is_some_and(|s| !s.contains(block.ptr)) {
            // An outsized item (outsized.rs): its own block, freed now.
            // SAFETY: own Local, no other owned reference live; the block
            // was never published, so no reader can hold it.
            unsafe { local.owned().pool.free_outsized(&self.shared, block) };
            return;
        }
        if self.cache.is_some() {
            // Cache mode: the bytes stay in their segment as garbage (not
            // in the index, so dead) until the segment is reclaimed.
            return;
        }
        // SAFETY: own Local, no other owned reference live.
        let owned = unsafe { local.owned() };
        // SAFETY: never published, so no reader can hold it.
        unsafe { owned.pool.free(&self.shared, block) };
        local.block_bytes.store(owned.pool.live_bytes as i64, Ordering::Relaxed);
    }

    /// An item just unlinked from the index (under its bucket lock, now
    /// released): store mode frees it after the grace period; cache mode
    /// leaves it in its segment and counts it out of the segment's live
    /// bytes (and as expired-unfetched if it expired unread).
    pub(crate) fn retire_item(&self, local: &Local, p: *const u8) {
        match &self.shared.segments {
            None => {
                let block = Block { ptr: p as *mut u8, bytes: self.block_size(p) };
                self.epochs.retire(local, &self.shared, Garbage::Item(block));
            }
            Some(segs) => {
                // SAFETY: p is unlinked but its segment cannot be reclaimed
                // (nor, outsized, freed) before our pin (or, for the
                // sweep, the epoch) ends.
                let (l, freq) = unsafe { (item::layout(p), item::freq(p)) };
                if segs.contains(p) {
                    segs.add_live(p, -(l.total().next_multiple_of(ITEM_ALIGN_BYTES) as i64));
                } else {
                    let block = Block { ptr: p as *mut u8, bytes: crate::outsized::block_bytes(l.total()) };
                    self.epochs.retire(local, &self.shared, Garbage::Outsized(block));
                }
                self.count_expired_unfetched(l.meta.expiry, l.meta.expiry_ms, freq);
            }
        }
    }

    /// Retires the object an unlinked item held, if it is an object item
    /// (object.rs, WHO OWNS AN OBJECT): freed after the grace period, as
    /// the item is. The caller has checked that no new item holds it.
    pub(crate) fn retire_object(&self, local: &Local, p: *const u8) {
        // SAFETY: p was just unlinked under our pin: still allocated.
        let it = unsafe { ItemRef::new(p) };
        if let Some(cell) = it.object() {
            local_add(&local.object_bytes, -(cell.charged() as i64));
            let owned = RetiredCell(cell as *const ObjectCell as *mut ObjectCell);
            self.epochs.retire(local, &self.shared, Garbage::Object(owned));
        }
    }

    /// Counts an unlinked item as expired-unfetched if it had expired and
    /// no GET read it (cache mode; store mode tracks no reads).
    pub(crate) fn count_expired_unfetched(&self, expiry: u32, expiry_ms: u16, freq: u8) {
        if let Some(c) = &self.cache {
            if freq == 0 && expiry != 0 && !self.expiry_live(expiry, self.now(), || expiry_ms) {
                c.expired_unfetched.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// The heart of every write: locks the key's bucket (following
    /// expansion), gives `decide` the key's live item if any, and applies
    /// its decision. Expired or flushed items are treated as absent and
    /// reclaimed on the way.
    pub(crate) fn mutate<R: IndexFull>(
        &self,
        key: &[u8],
        decide: impl FnOnce(&Local, Option<ItemRef<'_>>) -> Decision<R>,
    ) -> R {
        let pin = Pinned::new(self);
        let hash = self.hash(key);
        let tag = split_hash(hash).1;
        let mut guard = pin.current().lock_routed(hash);
        self.snapshot_before_write(&guard, hash);
        let t = guard.table();
        let found = guard.find(tag, key);
        let mut now = None;
        let live = found.and_then(|(_, p)| {
            // SAFETY: p is in a slot of the bucket we hold locked.
            let it = unsafe { ItemRef::new(p) };
            self.is_live(&it, &mut now).then_some(it)
        });
        let old_bytes = |p: *const u8| {
            // SAFETY: p is in a slot of the locked bucket (or the block
            // about to be published).
            unsafe { counted_bytes(p) }
        };
        let decision = decide(pin.local, live);
        let moved_object = matches!(decision, Decision::PutMoved(..) | Decision::RemoveMoved(..));
        let local = pin.local;
        // The item this write published, if any.
        let mut result_block = None;
        // Its record is framed once the bucket is unlocked
        // (`Journal::record_large`).
        let mut fill_later = false;
        let (result, removed) = match decision {
            Decision::Keep(r) => {
                // A dead item the decision did not replace is reclaimed now.
                match (found, live) {
                    (Some((slot, p)), None) => {
                        guard.remove(slot);
                        (r, Some(p))
                    }
                    _ => (r, None),
                }
            }
            Decision::Put(block, r) | Decision::PutMoved(block, r) => {
                let new_bytes = old_bytes(block.ptr);
                let replaced = match found {
                    Some((slot, p)) => {
                        guard.replace(slot, tag, block.ptr);
                        Some(p)
                    }
                    None => {
                        if guard.insert(tag, block.ptr).is_err() {
                            // The block is ours to free (IndexFull), and
                            // so is a new object it holds (no old item
                            // here could have held it).
                            drop(guard);
                            // SAFETY: the block is unpublished and ours.
                            unsafe { drop_unpublished_object(block.ptr) };
                            self.free_unpublished(local, block);
                            return R::index_full();
                        }
                        self.note_insert(local, t);
                        None
                    }
                };
                // Published: journaled and counted (still under the lock,
                // so one key's records keep its order).
                if let Some(j) = self.journal.get() {
                    // SAFETY: the block is the item just published under
                    // the lock we hold; nothing can unlink it before we
                    // release the lock.
                    let it = unsafe { ItemRef::new(block.ptr) };
                    // A rewrite that kept an object (NewValue::Same: the
                    // EXPIRE family) changed only the item's fields: a
                    // Meta, so the log does not copy a large collection
                    // for a TTL.
                    if replaced.is_some_and(|p| same_object(p, block.ptr)) {
                        j.record(Change::Meta(it));
                    } else if it.tag() == TAG_BYTES && it.value().len() >= crate::JOURNAL_LARGE_VALUE_BYTES_MIN {
                        fill_later = j.record_large(it);
                    } else {
                        j.record(Change::Put(it));
                    }
                }
                if let Some(segs) = self.shared.segments.as_ref().filter(|s| s.contains(block.ptr)) {
                    segs.add_live(block.ptr, block.bytes as i64);
                }
                local_add(&local.bytes, new_bytes);
                local_add(&local.items, 1);
                // A new object starts counting (one the old item held is
                // counted already, and stays if the new item keeps it; a
                // moved one is counted already).
                if !moved_object && !replaced.is_some_and(|p| same_object(p, block.ptr)) {
                    // SAFETY: the block is the item just published; we
                    // hold its bucket lock.
                    if let Some(cell) = unsafe { ItemRef::new(block.ptr) }.object() {
                        local_add(&local.object_bytes, cell.charged() as i64);
                    }
                }
                result_block = Some(block);
                (r, replaced)
            }
            Decision::Remove(r) | Decision::RemoveMoved(r) => match found {
                Some((slot, p)) => {
                    if let (Some(j), Some(_)) = (self.journal.get(), live) {
                        j.record(Change::Delete(key));
                    }
                    guard.remove(slot);
                    (r, Some(p))
                }
                None => (r, None),
            },
            Decision::InPlace(r, record) => {
                // update() answers InPlace only for a live object item.
                let it = live.expect("InPlace needs the live item");
                let cell = it.object().expect("InPlace needs an object item");
                let delta = cell.recharge();
                local_add(&local.bytes, delta);
                local_add(&local.object_bytes, delta);
                // Under the bucket lock, like the write: the record below
                // carries the version this write made (object.rs).
                cell.bump_version();
                if let Some(j) = self.journal.get() {
                    j.record(Change::Op { item: it, record: &record });
                }
                (r, None)
            }
        };
        // The object of a replaced item goes with it, unless the new item
        // holds the same cell (a rewrite that kept the value).
        let kept_cell = match (removed, &result_block) {
            (Some(p), Some(b)) => same_object(p, b.ptr),
            // The object moved to another key (`Store::rename`).
            (Some(_), None) => moved_object,
            _ => false,
        };
        drop(guard);
        if fill_later {
            if let Some(b) = &result_block {
                self.fill_unlocked(b.ptr, &pin);
            }
        }
        if let Some(p) = removed {
            local_add(&local.bytes, -old_bytes(p));
            local_add(&local.items, -1);
            if !kept_cell {
                self.retire_object(local, p);
            }
            self.retire_item(local, p);
        }
        result
    }

    /// `Journal::fill` of the item at `p`, which this thread published and
    /// whose bucket it has released (`Journal::record_large`); inside a
    /// transaction, queued until the transaction releases its buckets.
    /// Kept out of line: the write path pays one flag test for it.
    #[cold]
    #[inline(never)]
    fn fill_unlocked(&self, p: *const u8, _pin: &Pinned<'_>) {
        let Some(j) = self.journal.get() else { return };
        if crate::txn::active() {
            // The transaction's buckets are still held: filled when it
            // releases them (`Store::atomically`), under its pin.
            crate::txn::fill_later(p);
        } else {
            // SAFETY: the item this thread published; its bucket is
            // unlocked, so another writer may have replaced it, but `_pin`
            // (the writer's, held until after this call) keeps its memory
            // until we unpin, and a plain item's bytes are never changed
            // once published.
            j.fill(unsafe { ItemRef::new(p) });
        }
    }

    fn block_size(&self, p: *const u8) -> usize {
        // SAFETY: p is an item of this store still allocated.
        let total = unsafe { item::layout(p) }.total();
        match self.shared.classes.class_of(total) {
            Some(c) if total <= SMALL_ITEM_BYTES_MAX => self.shared.classes.size(c),
            _ => total.next_multiple_of(4096),
        }
    }

    /// Counts an insert and wakes the expand thread when the table's mean
    /// load passes `load_max` (Mercury's aggressive expansion).
    fn note_insert(&self, local: &Local, t: &Table) {
        // SAFETY: own Local, no other owned reference live.
        let owned = unsafe { local.owned() };
        owned.inserts_since_check += 1;
        if owned.inserts_since_check < INSERTS_PER_LOAD_CHECK {
            return;
        }
        owned.inserts_since_check = 0;
        if t.successor().is_none() && self.needs_expansion(t) {
            if let Some(th) = self.maintenance_thread.get() {
                th.unpark();
            }
        }
    }

    /// Store mode: whether the memory in use plus `extra` bytes reaches
    /// the budget. In use is the chunks reserved while they are within
    /// the budget (a full store's free lists count as used, so a new
    /// collection is not promised memory a chunk could not supply); once
    /// the budget has been lowered below the chunks
    /// (`Store::set_memory_limit`: chunks are never given back), it is the
    /// blocks handed out, summed over the threads (one relaxed load each,
    /// only in that state), so deletes bring the store back under it.
    fn store_over_budget(&self, extra: usize) -> bool {
        let budget = self.shared.budget_bytes();
        let reserved = self.shared.reserved_bytes();
        let used = if reserved > budget {
            self.epochs.all().map(|l| l.block_bytes.load(Ordering::Relaxed)).sum::<i64>().max(0) as usize
        } else {
            reserved
        };
        used.saturating_add(extra) >= budget
    }

    /// The stall watcher, if one is installed (stall.rs).
    #[inline]
    pub(crate) fn watcher(&self) -> Option<&dyn crate::stall::StallWatcher> {
        self.stall_watcher.get().map(|w| &**w)
    }

    /// Bytes charged for objects now (object.rs, MEMORY): the sum of the
    /// threads' counters (one relaxed load each).
    fn object_bytes(&self) -> usize {
        self.epochs.all().map(|l| l.object_bytes.load(Ordering::Relaxed)).sum::<i64>().max(0) as usize
    }

    fn item_count(&self) -> u64 {
        self.epochs.all().map(|l| l.items.load(Ordering::Relaxed)).sum::<i64>().max(0) as u64
    }

    /// True when `t` (the current table, held pinned or by the
    /// maintenance thread) is loaded past `load_max`.
    fn needs_expansion(&self, t: &Table) -> bool {
        if t.log2() >= self.table_log2_max() {
            return false;
        }
        let items = self.item_count();
        items > self.load_max << t.log2()
            && (self.cache.is_none() || items > (2 * self.load_max) << t.log2() || self.doubling_pays(t, items))
    }

    /// Cache mode: whether doubling `t` leaves room for more items than
    /// the cache holds now. The budget pays for the index (the memory
    /// account), so a cache at capacity that doubles evicts to make room
    /// for the bigger table: with 16 B / 32 B items at `-m 64` a 2^18
    /// table would hold ~830 k items where the 2^17 one holds ~900 k at a
    /// mean of 7 per bucket. Estimated from the segments' current items
    /// per segment and the successor's bucket array (its overflow lines
    /// all but vanish at half the load). A chain twice
    /// CACHE_LOAD_PER_BUCKET_MAX long doubles regardless (`needs_expansion`).
    fn doubling_pays(&self, t: &Table, items: u64) -> bool {
        let (Some(cache), Some(segs)) = (&self.cache, &self.shared.segments) else { return true };
        let in_use = segs.in_use().max(1) as u64;
        let index_after = Table::bucket_bytes(t.log2() + 1);
        let segments_after = (self.shared.budget_bytes().saturating_sub(index_after) / segs.segment_bytes())
            .saturating_sub(cache.keep_free()) as u64;
        segments_after * items / in_use > items
    }

    /// The largest table: TABLE_LOG2_MAX, or in cache mode the largest
    /// whose bucket array fits CACHE_INDEX_BUDGET_SHARE of the budget.
    fn table_log2_max(&self) -> u32 {
        if self.cache.is_none() {
            return TABLE_LOG2_MAX;
        }
        let share = self.shared.budget_bytes() / CACHE_INDEX_BUDGET_SHARE;
        let buckets = (share / Table::bucket_bytes(0)).max(1);
        (usize::BITS - 1 - buckets.leading_zeros()).min(TABLE_LOG2_MAX)
    }

    /// The successor's size: double (Mercury), or more when inserts have
    /// outrun the expand thread, so that the new table holds the current
    /// items at no more than `load_max` — a bulk load then pays a
    /// few large expansions instead of a chain of back-to-back doublings. Bounded by EXPANSION_LOG2_STEP_MAX.
    fn expansion_target_log2(&self, old: &Table) -> u32 {
        let items = self.item_count().max(1);
        let want = items.div_ceil(self.load_max).next_power_of_two().trailing_zeros();
        want.clamp(old.log2() + 1, old.log2() + EXPANSION_LOG2_STEP_MAX).min(self.table_log2_max())
    }

    /// Cache mode's memory account: the budget covers the segments and
    /// the index (bucket arrays and overflow lines of the current table
    /// and, while expanding, its successor; plus `extra_index_bytes` about
    /// to be mapped), the two parts that grow with the items held. The
    /// policy's own memory (S3-FIFO's ghost, `Policy::memory_bytes`) is
    /// sized from the budget when the store is made and is not charged:
    /// it is the documented fixed overhead on top of the budget (1/32 of
    /// it), like memcached's own fixed structures beside its `-m`. Sets
    /// the segments' resident limit to what is left and returns the
    /// segments resident after that and the limit, or None in store mode.
    /// Called by the maintenance thread every round (overflow lines grow
    /// between rounds by at most what a round's inserts hand out) and
    /// around every doubling.
    fn account_memory(&self, extra_index_bytes: usize) -> Option<(usize, usize)> {
        let (Some(cache), Some(segs)) = (&self.cache, &self.shared.segments) else { return None };
        let budget_segments = self.shared.budget_bytes() / segs.segment_bytes();
        cache.wake_slack.store(wake_slack_for(budget_segments), Ordering::Relaxed);
        if !cache.index_in_budget {
            return None;
        }
        let index = {
            let pin = Pinned::new(self);
            let t = pin.current();
            t.resident_bytes() + t.successor().map_or(0, |n| n.resident_bytes())
        };
        // Objects (object.rs) live outside the segments: charging them
        // here shrinks what segments may hold, so the reclaimer evicts
        // until items and objects fit the budget together.
        // Outsized items (outsized.rs) likewise: the shared reservation
        // counts only them in cache mode.
        let charged = index + extra_index_bytes + self.object_bytes() + self.shared.reserved_bytes();
        let resident = segs.set_limit_bytes(self.shared.budget_bytes().saturating_sub(charged));
        Some((resident, segs.limit()))
    }

    /// Cache mode, on the maintenance thread, before a doubling to
    /// `next_log2`: charges the successor's bucket array to the budget and
    /// evicts until the segments fit what is left, so the table's growth
    /// never takes the process past its budget. Bounded: at most one
    /// reclamation per segment, each followed by its grace period.
    fn make_room_for_table(&self, local: &Local, next_log2: u32) {
        let Some(segs) = &self.shared.segments else { return };
        for _ in 0..=segs.count() {
            let Some((resident, limit)) = self.account_memory(Table::bucket_bytes(next_log2)) else { return };
            if resident <= limit || self.shutdown.load(Ordering::Relaxed) {
                return;
            }
            let reclaimed = self.reclaim_segment(local, Reclaim::Writer);
            self.wait_grace(local);
            if !reclaimed {
                return;
            }
        }
    }

    /// Mercury §3's three phases, run by the maintenance thread.
    fn expand(&self) {
        let local = self.epochs.local(&self.shared);
        // SAFETY: only this thread replaces `current`.
        let old = unsafe { &*self.current.load(Ordering::Acquire) };
        let next_log2 = self.expansion_target_log2(old);
        self.make_room_for_table(local, next_log2);
        let Some(next) = Table::new(next_log2) else {
            return; // could not map the new table; try again later
        };
        // Initialization: publish the successor (workers start routing).
        let next = Box::into_raw(Box::new(next));
        old.set_successor(next);
        // Rehashing: one bucket at a time, under that bucket's lock only.
        let rehash = |p: *const u8| {
            // SAFETY: p is in a bucket the expand thread holds locked.
            self.hash(unsafe { item::key(p) })
        };
        let n = old.bucket_count();
        let mut timing = Timing::start(self.watcher());
        for i in 0..n {
            old.prefetch_bucket_items(i + MIGRATE_PREFETCH_AHEAD_BUCKETS);
            self.epochs.pin(local);
            let r = old.migrate_bucket(i, &rehash);
            self.epochs.unpin(local, &self.shared);
            r.expect("the successor's overflow arena holds every chain");
            if (i + 1) % table::PROGRESS_STRIDE_BUCKETS == 0 {
                old.set_migrated(i + 1);
                timing.end(self.watcher(), Stall::ExpansionStep);
                timing = Timing::start(self.watcher());
            }
        }
        old.set_migrated(n);
        // Termination: the successor becomes current; the old table is
        // freed once no pinned thread can still be routing through it.
        self.current.store(next, Ordering::Release);
        // SAFETY: `old` was the Box leaked when it became current.
        let old_box = unsafe { Box::from_raw(old as *const Table as *mut Table) };
        self.epochs.retire(local, &self.shared, Garbage::Table(old_box));
        self.expansions.fetch_add(1, Ordering::Relaxed);
        if self.cache.is_some() {
            // Free the old table now, so the account gives its bytes back
            // to the segments without counting them twice.
            self.wait_grace(local);
            self.account_memory(0);
        }
    }

    /// Flushes everything now and journals it; the caller holds
    /// `flush_lock`.
    fn flush_now(&self) {
        let fence_cas = self.cas_counter.load(Ordering::SeqCst);
        if let Some(j) = self.journal.get() {
            j.record(Change::Flush { fence_cas });
        }
        self.flush_fence(fence_cas);
    }

    /// Items with a CAS below `fence_cas` are flushed from now on.
    pub(crate) fn flush_fence(&self, fence_cas: u64) {
        self.flush_cas.fetch_max(fence_cas, Ordering::SeqCst);
        self.flush_generation.fetch_add(1, Ordering::SeqCst);
        self.sweep_requested.store(true, Ordering::Release);
        if let Some(th) = self.maintenance_thread.get() {
            th.unpark();
        }
    }

    /// Removes flushed and expired items from the current table, a step of
    /// SWEEP_STEP_BUCKETS buckets per pin. Skipped while expanding (the
    /// maintenance thread runs the expansion itself, so this cannot race).
    fn sweep(&self) {
        // SAFETY: only this thread replaces `current`.
        let t = unsafe { &*self.current.load(Ordering::Acquire) };
        let mut i = 0;
        let n = t.bucket_count();
        while i < n && !self.shutdown.load(Ordering::Relaxed) {
            let end = (i + SWEEP_STEP_BUCKETS).min(n);
            self.sweep_range(t, i, end);
            i = end;
        }
    }

    /// The background expiry sweep (issue 4 §3): one bounded step of
    /// EXPIRY_SWEEP_BUCKETS_PER_WAKE buckets from `cursor` per maintenance
    /// wake, wrapping around the table; no full-table pause, and nothing at
    /// all until some item has had an expiry. A doubling restarts it at 0
    /// (bucket i of the old table is buckets i, i + n, ... of the new).
    /// Returns whether it swept anything (false until an expiry is seen).
    fn expiry_sweep_step(&self, cursor: &mut (u32, usize)) -> bool {
        if !self.ttl_seen.load(Ordering::Relaxed) {
            return false;
        }
        // SAFETY: only this thread replaces `current`.
        let t = unsafe { &*self.current.load(Ordering::Acquire) };
        if cursor.0 != t.log2() {
            *cursor = (t.log2(), 0);
        }
        let n = t.bucket_count();
        let mut i = cursor.1;
        let end = (i + EXPIRY_SWEEP_BUCKETS_PER_WAKE).min(n);
        while i < end && !self.shutdown.load(Ordering::Relaxed) {
            let step_end = (i + SWEEP_STEP_BUCKETS).min(end);
            self.sweep_range(t, i, step_end);
            i = step_end;
        }
        if i >= n {
            self.expiry_sweeps.fetch_add(1, Ordering::Relaxed);
            i = 0;
        }
        cursor.1 = i;
        true
    }

    /// Removes flushed and expired items from buckets `from..to` of `t`
    /// (the current table, not expanding: only the maintenance thread
    /// expands, and it is the caller), under one pin.
    fn sweep_range(&self, t: &Table, from: usize, to: usize) {
        let local = self.epochs.local(&self.shared);
        {
            self.epochs.pin(local);
            let now = self.now();
            let flush_cas = self.flush_cas.load(Ordering::Relaxed);
            for b in from..to {
                let Some(mut g) = t.lock(b) else { continue };
                let mut dead = Vec::new();
                g.retain(|p| {
                    // SAFETY: p is in a slot of the bucket we hold locked.
                    let l = unsafe { item::layout(p) };
                    let live = l.meta.cas >= flush_cas && self.expiry_live(l.meta.expiry, now, || l.meta.expiry_ms);
                    if !live {
                        dead.push(p);
                    }
                    live
                });
                drop(g);
                self.swept_items.fetch_add(dead.len() as u64, Ordering::Relaxed);
                for p in dead {
                    // SAFETY: p is still allocated (just unlinked).
                    local_add(&local.bytes, -unsafe { counted_bytes(p) });
                    local_add(&local.items, -1);
                    self.retire_object(local, p);
                    self.retire_item(local, p);
                }
            }
            self.epochs.unpin(local, &self.shared);
        }
    }

    /// Cache mode, on the maintenance thread: reclaims segments until more
    /// than EVICT_RESERVE_SEGMENTS + the wake slack are free or
    /// on their way (bounded: EVICT_SEGMENTS_PER_WAKE_MAX per call), so
    /// writers find free segments without reclaiming themselves. Returns
    /// true if it reclaimed anything.
    fn evict_ahead(&self, local: &Local) -> bool {
        let (Some(cache), Some(segs)) = (&self.cache, &self.shared.segments) else { return false };
        if !cache.background {
            return false;
        }
        let mut reclaimed = false;
        let timing = Timing::start(self.watcher());
        let keep_free = cache.keep_free();
        for _ in 0..EVICT_SEGMENTS_PER_WAKE_MAX {
            if segs.free_or_pending() > keep_free || self.shutdown.load(Ordering::Relaxed) {
                break;
            }
            if !self.reclaim_segment(local, Reclaim::Background) {
                break;
            }
            reclaimed = true;
            self.epochs.reclaim(local, &self.shared, 1);
        }
        if reclaimed {
            timing.end(self.watcher(), Stall::EvictionCycle);
        }
        reclaimed
    }

    /// Once a second: a write-clock checkpoint at the CAS counter, and,
    /// while store times are wanted, a new generation so every thread's
    /// next write takes a fresh CAS block (clock.rs). The counter is read
    /// before the bump: a block taken after a thread sees the bump starts
    /// at or above it.
    fn tick_write_clock(&self) {
        let now = self.now();
        if !self.write_clock.due(now) {
            return;
        }
        let cas = self.cas_counter.load(Ordering::SeqCst);
        if self.write_clock.tick(now, cas) && self.write_clock.wanted(now) {
            self.flush_generation.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn maintenance_loop(&self) {
        let local = self.epochs.local(&self.shared);
        let mut expiry_cursor = (0u32, 0usize);
        let mut last_expiry_step = std::time::Instant::now();
        while !self.shutdown.load(Ordering::Acquire) {
            // SAFETY: only this thread replaces and frees tables.
            let current = unsafe { &*self.current.load(Ordering::Acquire) };
            if self.needs_expansion(current) {
                // A running snapshot holds the gate: expand after it.
                if let Ok(_gate) = self.expand_gate.try_lock() {
                    self.quiet.store(false, Ordering::Release);
                    self.expand();
                    continue;
                }
            }
            self.flush_if_due();
            self.tick_write_clock();
            if self.sweep_requested.swap(false, Ordering::AcqRel) {
                self.sweep();
            }
            // Time-gated: the loop wakes every millisecond while it has
            // garbage to free, and the sweep is background work.
            if last_expiry_step.elapsed() >= MAINTENANCE_PERIOD {
                last_expiry_step = std::time::Instant::now();
                let timing = Timing::start(self.watcher());
                if self.expiry_sweep_step(&mut expiry_cursor) {
                    timing.end(self.watcher(), Stall::ExpireCycle);
                }
            }
            self.account_memory(0);
            let evicting = self.evict_ahead(local);
            let clean = self.epochs.reclaim(local, &self.shared, 4) && !evicting;
            self.quiet.store(clean, Ordering::Release);
            let near_full = self
                .cache
                .as_ref()
                .zip(self.shared.segments.as_ref())
                .is_some_and(|(cache, segs)| segs.free_count() <= cache.keep_free() + ACCOUNT_NEAR_FULL_SEGMENTS);
            let period = match (clean, near_full) {
                (false, _) => Duration::from_millis(1),
                (true, true) => ACCOUNT_PERIOD_NEAR_FULL,
                (true, false) => MAINTENANCE_PERIOD,
            };
            // Wake just after the next second begins, so the write clock's
            // checkpoint lands within a millisecond or two of it (clock.rs).
            let to_next_second = Duration::from_millis(1000 - self.now_millis() % 1000 + 1);
            let period = period.min(to_next_second);
            std::thread::park_timeout(period);
        }
    }
}

/// `Cache::active`'s low bit: CLOCK in force.
const ACTIVE_CLOCK: u32 = 0;
/// `Cache::active`'s low bit: S3-FIFO in force.
const ACTIVE_S3FIFO: u32 = 1;

/// `Cache::active`'s low bit for an evicting policy (`None` has no
/// policy object and never reaches here).
fn active_bit(e: Eviction) -> u32 {
    match e {
        Eviction::S3Fifo => ACTIVE_S3FIFO,
        Eviction::Clock | Eviction::None => ACTIVE_CLOCK,
    }
}

impl Cache {
    /// Free segments the maintenance thread keeps: the writers' reserve
    /// ([`EVICT_RESERVE_SEGMENTS`]) and the wake slack above it. At or
    /// below this a writer wakes the thread and the thread reclaims.
    #[inline]
    pub(crate) fn keep_free(&self) -> usize {
        EVICT_RESERVE_SEGMENTS + self.wake_slack.load(Ordering::Relaxed)
    }

    /// The policy in force.
    #[inline]
    pub(crate) fn policy(&self) -> &dyn Policy {
        self.policy_of(self.active.load(Ordering::Relaxed))
    }

    /// The policy a value of `active` names.
    #[inline]
    fn policy_of(&self, active: u32) -> &dyn Policy {
        if active & 1 == ACTIVE_S3FIFO {
            &self.s3fifo
        } else {
            &self.clock
        }
    }

    /// The queue a new item goes to under the policy `active` names,
    /// without a virtual call (this is on every cache-mode write).
    #[inline]
    fn admit(&self, active: u32, key_hash: u64) -> Queue {
        if active & 1 == ACTIVE_S3FIFO {
            self.s3fifo.admit(key_hash)
        } else {
            self.clock.admit(key_hash)
        }
    }
}

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

/// A write's result type, as far as memory goes.
///
/// `index_full` is what a write answers when its key's chain is at
/// CHAIN_NODES_MAX or the overflow arena is exhausted: out of memory,
/// never a panic (`mutate` frees the block it was handed, and nothing is
/// journaled). Unreachable in practice (the load factor keeps chains at
/// about one node, and 1024 nodes hold 7168 items), but a snapshot holds
/// expansion off, so a huge insert burst during a long snapshot is bounded
/// by this, not by luck.
///
/// `is_out_of_memory` is what `Inner::with_room` retries on (index_full's
/// answer included: retrying it is useless but bounded, and it does not
/// happen in practice).
pub(crate) trait IndexFull {
    fn index_full() -> Self;
    fn is_out_of_memory(&self) -> bool;
}

impl<T> IndexFull for Result<T, Error> {
    fn index_full() -> Self {
        Err(Error::OutOfMemory)
    }
    fn is_out_of_memory(&self) -> bool {
        matches!(self, Err(Error::OutOfMemory))
    }
}

impl<T> IndexFull for Option<Result<T, Error>> {
    fn index_full() -> Self {
        Some(Err(Error::OutOfMemory))
    }
    fn is_out_of_memory(&self) -> bool {
        self.as_ref().is_some_and(IndexFull::is_out_of_memory)
    }
}

/// Adds to a counter only the owner thread writes (no RMW needed).
#[inline]
pub(crate) fn local_add(c: &AtomicI64, delta: i64) {
    c.store(c.load(Ordering::Relaxed) + delta, Ordering::Relaxed);
}

/// Whether the engine holds `key`: 1 to [`KEY_BYTES_MAX`] bytes
/// (`Error::BadKey` otherwise). Callers that must refuse a whole command
/// before writing any of it (MSET, RENAME's destination) ask first.
pub fn check_key(key: &[u8]) -> Result<(), Error> {
    if key.is_empty() || key.len() > KEY_BYTES_MAX {
        Err(Error::BadKey)
    } else {
        Ok(())
    }
}

/// Writes `parts` one after another at `at` in a fresh block.
fn fill(block: Block, at: usize, parts: &[&[u8]]) {
    let mut at = at;
    for part in parts {
        // SAFETY: the block was sized by encoded_len for exactly these
        // parts, and it is ours (unpublished): no other reference to
        // these bytes exists.
        let dst = unsafe { std::slice::from_raw_parts_mut(block.ptr.add(at), part.len()) };
        item::copy_short(dst, part);
        at += part.len();
    }
}

/// Bytes an item counts for in the `bytes` statistic: its key and value,
/// and for an object item its object's charge (object.rs, MEMORY).
///
/// # Safety
/// `p` is an item still allocated (locked, pinned, or ours unpublished).
unsafe fn counted_bytes(p: *const u8) -> i64 {
    // SAFETY: forwarded from the caller.
    let it = unsafe { ItemRef::new(p) };
    let object = it.object().map_or(0, |c| c.charged());
    (it.key().len() + it.value().len() + object) as i64
}

/// True if `old` and `new` are object items holding the same cell (a
/// rewrite that kept the value: the cell moves, it is not retired).
fn same_object(old: *const u8, new: *const u8) -> bool {
    // SAFETY: both are items the caller holds under the bucket lock.
    let (old, new) = unsafe { (ItemRef::new(old), ItemRef::new(new)) };
    match (old.object(), new.object()) {
        (Some(a), Some(b)) => std::ptr::eq(a, b),
        _ => false,
    }
}

/// Frees the new object an unpublished item holds, if it is an object
/// item.
///
/// # Safety
/// `p` is an unpublished item built by this write, whose cell (if any)
/// was created by this write, or the store is being dropped and `p` is
/// in its index: either way nothing else owns or reads the cell.
unsafe fn drop_unpublished_object(p: *const u8) {
    // SAFETY: forwarded from the caller.
    let it = unsafe { ItemRef::new(p) };
    if let Some(cell) = it.object() {
        // SAFETY: the cell came from Box::into_raw in this write and was
        // never published.
        drop(unsafe { Box::from_raw(cell as *const ObjectCell as *mut ObjectCell) });
    }
}

/// A value read as a counter, as memcached's incr/decr read it:
/// `safe_strtoull` over the value (which memcached stores followed by
/// `\r\n`). Leading whitespace, an optional sign, decimal digits, then
/// the value's end, a whitespace byte or a NUL (so the spaces an in-place
/// decr leaves, and `1 2`, read as their first number); past `u64::MAX`
/// refused; a `-` only where strtoull's negation stays below 2^63 (`-0`
/// is 0, `-18446744073709551615` is 1, `-5` is refused). Bounded by the
/// value's length.
///
/// ```
/// use amalgam_engine::counter_value;
/// assert_eq!(counter_value(b"42"), Some(42));
/// assert_eq!(counter_value(b"99 "), Some(99));
/// assert_eq!(counter_value(b"\t+7\r\nx"), Some(7));
/// assert_eq!(counter_value(b"1\x002"), Some(1));
/// assert_eq!(counter_value(b"-0"), Some(0));
/// assert_eq!(counter_value(b"-18446744073709551615"), Some(1));
/// assert_eq!(counter_value(b"-5"), None);
/// assert_eq!(counter_value(b"18446744073709551616"), None);
/// assert_eq!(counter_value(b"12a"), None);
/// assert_eq!(counter_value(b" "), None);
/// ```
pub fn counter_value(v: &[u8]) -> Option<u64> {
    let is_space = |b: u8| matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r');
    let mut i = v.iter().position(|&b| !is_space(b))?;
    let neg = v[i] == b'-';
    if neg || v[i] == b'+' {
        i += 1;
    }
    let start = i;
    let mut n: u64 = 0;
    while let Some(d) = v.get(i).filter(|b| b.is_ascii_digit()) {
        n = n.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
        i += 1;
    }
    if i == start || v.get(i).is_some_and(|&b| !is_space(b) && b != 0) {
        return None;
    }
    if neg {
        n = n.wrapping_neg();
        if (n as i64) < 0 {
            return None;
        }
    }
    Some(n)
}

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
            ttl_seen: AtomicBool::new(false),
            swept_items: AtomicU64::new(0),
            expiry_sweeps: AtomicU64::new(0),
            expansions: AtomicU64::new(0),
            clock_offset: AtomicI64::new(0),
            shutdown: AtomicBool::new(false),
            quiet: AtomicBool::new(false),
            maintenance_thread: std::sync::OnceLock::new(),
            cache,
            journal: std::sync::OnceLock::new(),
            stall_watcher: std::sync::OnceLock::new(),
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

    /// Looks up `key` and, if a live item is found, calls `f` with a view of
    /// it and returns `f`'s result. Takes no lock and writes nothing shared.
    ///
    /// ```
    /// # use amalgam_engine::{Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// store.set(b"k", b"v", 0, Expiry::Never).unwrap();
    /// assert_eq!(store.get(b"k", |it| it.value().to_vec()), Some(b"v".to_vec()));
    /// assert_eq!(store.get(b"missing", |it| it.value().len()), None);
    /// ```
    pub fn get<R>(&self, key: &[u8], f: impl FnOnce(ItemRef<'_>) -> R) -> Option<R> {
        if check_key(key).is_err() {
            return None;
        }
        let inner = &*self.inner;
        inner.get_pinned::<true, R>(&Pinned::new(inner), key, f)
    }

    /// [`Store::get`] that does not count as a read: the eviction policy's
    /// frequency is not raised (memcached's `me`, and `mg` with `u`, "don't
    /// bump the item"), so [`ItemRef::fetched`] stays as it was.
    ///
    /// ```
    /// # use amalgam_engine::{evict::Eviction, Config, Expiry, Store};
    /// let store = Store::new(Config { eviction: Eviction::S3Fifo, ..Config::default() }).unwrap();
    /// store.set(b"k", b"v", 0, Expiry::Never).unwrap();
    /// assert_eq!(store.peek(b"k", |it| it.fetched()), Some(false));
    /// assert_eq!(store.peek(b"k", |it| it.fetched()), Some(false));
    /// assert_eq!(store.get(b"k", |it| it.fetched()), Some(false), "f runs before the hit counts");
    /// assert_eq!(store.peek(b"k", |it| it.fetched()), Some(true));
    /// ```
    pub fn peek<R>(&self, key: &[u8], f: impl FnOnce(ItemRef<'_>) -> R) -> Option<R> {
        if check_key(key).is_err() {
            return None;
        }
        let inner = &*self.inner;
        inner.get_pinned::<false, R>(&Pinned::new(inner), key, f)
    }

    /// A read session: one epoch pin for many lookups (crossbeam-epoch's
    /// `pin()` idiom). Each [`Store::get`] pins and unpins, and on x86-64
    /// the pin is a full barrier that keeps the CPU from overlapping one
    /// lookup's cache misses with the next one's; lookups through a
    /// [`Reader`] pay it once. Memory retired while a reader is alive cannot
    /// be reused, so drop it after a bounded batch of work (a server: once
    /// per batch of requests).
    ///
    /// ```
    /// # use amalgam_engine::{Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// store.set(b"a", b"1", 0, Expiry::Never).unwrap();
    /// let reader = store.reader();
    /// assert_eq!(reader.get(b"a", |it| it.value().to_vec()), Some(b"1".to_vec()));
    /// assert_eq!(reader.get(b"b", |it| it.value().len()), None);
    /// ```
    pub fn reader(&self) -> Reader<'_> {
        Reader { inner: &self.inner, pin: Pinned::new(&self.inner), _not_send: PhantomData }
    }

    /// Looks up many keys at once, MICA-style (MICA §5.3): hashes a window
    /// of [`BATCH_WINDOW_KEYS`] keys, prefetches their buckets, then the
    /// items their tags point to, then completes each lookup, calling
    /// `f(index, item)` in key order.
    ///
    /// ```
    /// # use amalgam_engine::{Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// store.set(b"a", b"1", 0, Expiry::Never).unwrap();
    /// let mut hits = Vec::new();
    /// store.get_batch(&[b"a".as_slice(), b"b"], |i, it| hits.push((i, it.map(|it| it.value().to_vec()))));
    /// assert_eq!(hits, vec![(0, Some(b"1".to_vec())), (1, None)]);
    /// ```
    pub fn get_batch<K: AsRef<[u8]>>(&self, keys: &[K], mut f: impl FnMut(usize, Option<ItemRef<'_>>)) {
        let inner = &*self.inner;
        let pin = Pinned::new(inner);
        let mut hashes = [0u64; BATCH_WINDOW_KEYS];
        let mut now = None;
        for (w, window) in keys.chunks(BATCH_WINDOW_KEYS).enumerate() {
            let base = w * BATCH_WINDOW_KEYS;
            inner.hash_and_prefetch(pin.current(), window, &mut hashes);
            for (j, k) in window.iter().enumerate() {
                let key = k.as_ref();
                let found = if check_key(key).is_ok() { inner.lookup(&pin, hashes[j], key) } else { None };
                // SAFETY: found while pinned; the pin outlives `f`.
                let it = found.map(|p| unsafe { ItemRef::new(p) }).filter(|it| inner.is_live(it, &mut now));
                if let Some(it) = &it {
                    inner.touched(it.ptr);
                }
                f(base + j, it);
            }
        }
    }

    /// Prefetches what writes of `keys` are about to touch (MICA §5.3's
    /// two stages, as in [`Store::get_batch`], for the write path): each
    /// key's bucket line, then the line of the item its tag points to (the
    /// write compares that item's key and replaces it). A hint only: no
    /// lock is taken and nothing is changed, so a caller about to run a
    /// pipeline's SETs one by one can let their cache misses overlap.
    ///
    /// ```
    /// # use amalgam_engine::{Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// let keys: [&[u8]; 2] = [b"a", b"b"];
    /// store.prefetch_writes(&keys);
    /// for k in keys {
    ///     store.set(k, b"v", 0, Expiry::Never).unwrap();
    /// }
    /// ```
    pub fn prefetch_writes<K: AsRef<[u8]>>(&self, keys: &[K]) {
        let inner = &*self.inner;
        let pin = Pinned::new(inner);
        let mut hashes = [0u64; BATCH_WINDOW_KEYS];
        for window in keys.chunks(BATCH_WINDOW_KEYS) {
            inner.hash_and_prefetch(pin.current(), window, &mut hashes);
        }
    }

    /// [`Store::prefetch_writes`] for commands that read or change
    /// collections (MICA §5.3's stages, taken further down the pointer
    /// chain of an object item): each key's bucket line and item line,
    /// then, for an item that holds an object, its cell, then the object
    /// itself, then the [`Object::hint_addrs`] it names, level by level.
    /// Every stage issues the whole window's prefetches before the next
    /// one reads what they fetch, so a pipeline's misses overlap instead
    /// of being taken one chain at a time. A hint only: nothing changes;
    /// the objects are read-locked without waiting (one held by a writer
    /// is skipped) and unlocked before this returns.
    ///
    /// ```
    /// # use amalgam_engine::{Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// store.set(b"a", b"1", 0, Expiry::Never).unwrap();
    /// store.prefetch_updates(&[&b"a"[..], &b"b"[..]]);
    /// assert!(store.get(b"a", |_| ()).is_some());
    /// ```
    pub fn prefetch_updates<K: AsRef<[u8]>>(&self, keys: &[K]) {
        let inner = &*self.inner;
        let pin = Pinned::new(inner);
        let mut hashes = [0u64; BATCH_WINDOW_KEYS];
        for window in keys.chunks(BATCH_WINDOW_KEYS) {
            inner.hash_and_prefetch(pin.current(), window, &mut hashes);
            let mut cells: [Option<&ObjectCell>; BATCH_WINDOW_KEYS] = [None; BATCH_WINDOW_KEYS];
            for (j, k) in window.iter().enumerate() {
                if j > 0 && hashes[j] == hashes[j - 1] {
                    // The same key again (a hot key's pipeline): one look
                    // is enough, and each try_read below is a write to the
                    // cell's line, which the other workers may be using.
                    continue;
                }
                if let Some(p) = inner.lookup(&pin, hashes[j], k.as_ref()) {
                    // SAFETY: found while pinned: the item (and the cell it
                    // owns) stays allocated until the pin ends.
                    let it = unsafe { ItemRef::new(p) };
                    if let Some(c) = it.object() {
                        prefetch_line((c as *const ObjectCell).cast());
                        cells[j] = Some(c);
                    }
                }
            }
            if cells.iter().all(Option::is_none) {
                continue;
            }
            let guards: [_; BATCH_WINDOW_KEYS] = std::array::from_fn(|j| cells[j].and_then(ObjectCell::try_read));
            for g in guards.iter().flatten() {
                prefetch_line((&***g as *const dyn Object).cast());
            }
            for level in 0..object::HINT_LEVELS {
                for g in guards.iter().flatten() {
                    for a in g.hint_addrs(level) {
                        if a != 0 {
                            prefetch_line(a as *const u8);
                        }
                    }
                }
            }
        }
    }

    fn store_new(
        &self,
        key: &[u8],
        value: &[u8],
        flags: u32,
        expiry: Expiry,
        decide: impl FnOnce(Option<ItemRef<'_>>) -> Result<(), Error>,
    ) -> Result<u64, Error> {
        self.store_new_cas(key, value, flags, expiry, None, decide)
    }

    /// Recovery's set (journal.rs): the item keeps the given CAS unique.
    pub(crate) fn store_with_cas(
        &self,
        key: &[u8],
        value: &[u8],
        flags: u32,
        expiry: Expiry,
        cas: u64,
    ) -> Result<u64, Error> {
        self.store_new_cas(key, value, flags, expiry, Some(cas), |_| Ok(()))
    }

    #[allow(clippy::too_many_arguments)]
    fn store_new_cas(
        &self,
        key: &[u8],
        value: &[u8],
        flags: u32,
        expiry: Expiry,
        cas: Option<u64>,
        decide: impl FnOnce(Option<ItemRef<'_>>) -> Result<(), Error>,
    ) -> Result<u64, Error> {
        check_key(key)?;
        let inner = &*self.inner;
        let local = inner.epochs.local(&inner.shared);
        let cas = match cas {
            Some(c) => c,
            None => inner.next_cas(local),
        };
        let (block, at) =
            inner.build_unlocked(local, &NewItem { key, vlen: value.len(), flags, expiry, marks: 0 }, cas)?;
        fill(block, at, &[value]);
        // Ok(true): published; Ok(false): the expiry is already past, so
        // the store removes any old item and publishes nothing.
        // Once handed to `mutate` in a Put the block is its to publish or
        // (index full) to free; otherwise it is still ours.
        let mut handed = false;
        let r = inner.mutate(key, |_, old| match decide(old) {
            Ok(()) if inner.expired_now(expiry) => Decision::Remove(Ok(false)),
            Ok(()) => {
                handed = true;
                Decision::Put(block, Ok(true))
            }
            Err(e) => Decision::Keep(Err(e)),
        });
        if !handed {
            inner.free_unpublished(local, block);
        }
        r.map(|_| cas)
    }

    /// Stores the item unconditionally; returns its new CAS unique.
    ///
    /// ```
    /// # use amalgam_engine::{Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// let c1 = store.set(b"k", b"1", 0, Expiry::Never).unwrap();
    /// let c2 = store.set(b"k", b"2", 0, Expiry::Never).unwrap();
    /// assert_ne!(c1, c2);
    /// ```
    pub fn set(&self, key: &[u8], value: &[u8], flags: u32, expiry: Expiry) -> Result<u64, Error> {
        self.store_new(key, value, flags, expiry, |_| Ok(()))
    }

    /// Stores the item only if the key is absent.
    ///
    /// ```
    /// # use amalgam_engine::{Error, Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// assert!(store.add(b"k", b"1", 0, Expiry::Never).is_ok());
    /// assert_eq!(store.add(b"k", b"2", 0, Expiry::Never), Err(Error::NotStored));
    /// ```
    pub fn add(&self, key: &[u8], value: &[u8], flags: u32, expiry: Expiry) -> Result<u64, Error> {
        self.store_new(key, value, flags, expiry, |old| if old.is_some() { Err(Error::NotStored) } else { Ok(()) })
    }

    /// Stores the item only if the key is present.
    ///
    /// ```
    /// # use amalgam_engine::{Error, Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// assert_eq!(store.replace(b"k", b"1", 0, Expiry::Never), Err(Error::NotStored));
    /// ```
    pub fn replace(&self, key: &[u8], value: &[u8], flags: u32, expiry: Expiry) -> Result<u64, Error> {
        self.store_new(key, value, flags, expiry, |old| if old.is_none() { Err(Error::NotStored) } else { Ok(()) })
    }

    /// Stores the item only if its current CAS unique is `cas_unique`
    /// (memcached's check-and-set).
    ///
    /// ```
    /// # use amalgam_engine::{Error, Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// let c = store.set(b"k", b"1", 0, Expiry::Never).unwrap();
    /// assert_eq!(store.cas(b"k", b"x", 0, Expiry::Never, c + 1), Err(Error::Exists));
    /// assert!(store.cas(b"k", b"2", 0, Expiry::Never, c).is_ok());
    /// assert_eq!(store.cas(b"nope", b"2", 0, Expiry::Never, c), Err(Error::NotFound));
    /// ```
    pub fn cas(&self, key: &[u8], value: &[u8], flags: u32, expiry: Expiry, cas_unique: u64) -> Result<u64, Error> {
        self.store_new(key, value, flags, expiry, |old| match old {
            None => Err(Error::NotFound),
            Some(it) if it.cas() != cas_unique => Err(Error::Exists),
            Some(_) => Ok(()),
        })
    }

    fn concat(&self, key: &[u8], data: &[u8], append: bool) -> Result<u64, Error> {
        check_key(key)?;
        let inner = &*self.inner;
        inner.mutate_with_room(key, |local, old| {
            // A typed value (object.rs) is not bytes to extend: memcached
            // sees it as absent.
            let Some(old) = old.filter(|o| o.tag() == TAG_BYTES) else { return Decision::Keep(Err(Error::NotStored)) };
            let vlen = old.value().len() + data.len();
            let n = NewItem { key, vlen, flags: old.flags(), expiry: old.expiry(), marks: 0 };
            let cas = inner.next_cas(local);
            match inner.build(local, &n, cas) {
                Ok((block, at)) => {
                    let parts: [&[u8]; 2] = if append { [old.value(), data] } else { [data, old.value()] };
                    fill(block, at, &parts);
                    Decision::Put(block, Ok(cas))
                }
                Err(e) => Decision::Keep(Err(e)),
            }
        })
    }

    /// Appends `data` to the value of a present key (flags and expiry
    /// stay); returns the new CAS unique.
    ///
    /// ```
    /// # use amalgam_engine::{Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// store.set(b"k", b"ab", 0, Expiry::Never).unwrap();
    /// store.append(b"k", b"cd").unwrap();
    /// assert_eq!(store.get(b"k", |it| it.value().to_vec()).unwrap(), b"abcd");
    /// ```
    pub fn append(&self, key: &[u8], data: &[u8]) -> Result<u64, Error> {
        self.concat(key, data, true)
    }

    /// Prepends `data` to the value of a present key.
    ///
    /// ```
    /// # use amalgam_engine::{Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// store.set(b"k", b"cd", 0, Expiry::Never).unwrap();
    /// store.prepend(b"k", b"ab").unwrap();
    /// assert_eq!(store.get(b"k", |it| it.value().to_vec()).unwrap(), b"abcd");
    /// ```
    pub fn prepend(&self, key: &[u8], data: &[u8]) -> Result<u64, Error> {
        self.concat(key, data, false)
    }

    fn delta(&self, key: &[u8], delta: u64, incr: bool) -> Result<(u64, u64), Error> {
        check_key(key)?;
        let inner = &*self.inner;
        inner.mutate_with_room(key, |local, old| {
            // A typed value (object.rs) is not a counter: absent to memcached.
            let Some(old) = old.filter(|o| o.tag() == TAG_BYTES) else { return Decision::Keep(Err(Error::NotFound)) };
            let Some(v) = counter_value(old.value()) else { return Decision::Keep(Err(Error::NonNumeric)) };
            let new = if incr { v.wrapping_add(delta) } else { v.saturating_sub(delta) };
            let digits = new.to_string();
            // memcached rewrites in place when the new number is no longer
            // than the old value, padding with spaces; we keep that shape.
            let vlen = if digits.len() <= old.value().len() { old.value().len() } else { digits.len() };
            let n = NewItem { key, vlen, flags: old.flags(), expiry: old.expiry(), marks: old.marks() };
            let cas = inner.next_cas(local);
            match inner.build(local, &n, cas) {
                Ok((block, at)) => {
                    let pad = vec![b' '; vlen - digits.len()];
                    fill(block, at, &[digits.as_bytes(), &pad]);
                    Decision::Put(block, Ok((new, cas)))
                }
                Err(e) => Decision::Keep(Err(e)),
            }
        })
    }

    /// Adds `delta` to a decimal u64 value, wrapping at 2^64 as memcached
    /// does; returns the new number.
    ///
    /// ```
    /// # use amalgam_engine::{Error, Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// store.set(b"n", b"18446744073709551615", 0, Expiry::Never).unwrap();
    /// assert_eq!(store.incr(b"n", 2), Ok(1));
    /// store.set(b"s", b"abc", 0, Expiry::Never).unwrap();
    /// assert_eq!(store.incr(b"s", 1), Err(Error::NonNumeric));
    /// ```
    pub fn incr(&self, key: &[u8], delta: u64) -> Result<u64, Error> {
        self.delta(key, delta, true).map(|(v, _)| v)
    }

    /// Subtracts `delta` from a decimal u64 value, stopping at 0.
    ///
    /// ```
    /// # use amalgam_engine::{Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// store.set(b"n", b"10", 0, Expiry::Never).unwrap();
    /// assert_eq!(store.decr(b"n", 3), Ok(7));
    /// assert_eq!(store.decr(b"n", 100), Ok(0));
    /// ```
    pub fn decr(&self, key: &[u8], delta: u64) -> Result<u64, Error> {
        self.delta(key, delta, false).map(|(v, _)| v)
    }

    /// Sets a present key's expiry (its CAS unique does not change).
    ///
    /// ```
    /// # use amalgam_engine::{Error, Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// store.set(b"k", b"v", 0, Expiry::Never).unwrap();
    /// assert!(store.touch(b"k", Expiry::At(1)).is_ok()); // in the past: gone
    /// assert_eq!(store.touch(b"k", Expiry::Never), Err(Error::NotFound));
    /// ```
    pub fn touch(&self, key: &[u8], expiry: Expiry) -> Result<(), Error> {
        self.touch_and_get(key, expiry, |_| ()).ok_or(Error::NotFound).and_then(|r| r)
    }

    /// Sets a present key's expiry and calls `f` with the updated item
    /// (memcached's gat/gats). Returns None if the key is absent, or
    /// Some(Err) if the copy could not be allocated.
    ///
    /// ```
    /// # use amalgam_engine::{Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// store.set(b"k", b"v", 0, Expiry::Never).unwrap();
    /// let e = store.touch_and_get(b"k", Expiry::At(u32::MAX), |it| it.expiry());
    /// assert_eq!(e, Some(Ok(Expiry::At(u32::MAX))));
    /// ```
    pub fn touch_and_get<R>(
        &self,
        key: &[u8],
        expiry: Expiry,
        f: impl FnOnce(ItemRef<'_>) -> R,
    ) -> Option<Result<R, Error>> {
        check_key(key).ok()?;
        let inner = &*self.inner;
        // `f` runs only once the copy is built, so a retry still has it.
        let mut f = Some(f);
        inner.mutate_with_room(key, |local, old| {
            // memcached's touch and gat: a typed value (object.rs) is not
            // a memcached item, absent here (RESP's EXPIRE family uses
            // `update`, which keeps a collection's value).
            let Some(old) = old.filter(|o| o.tag() == TAG_BYTES) else { return Decision::Keep(None) };
            // A touch reads the item: it counts as a fetch (memcached's
            // touch and gat set ITEM_FETCHED too).
            let marks = old.marks() | item::MARK_FETCHED;
            let n = NewItem { key, vlen: old.value().len(), flags: old.flags(), expiry, marks };
            // Fix (found by tests/model_edges.rs): memcached's touch never
            // fails for size, but adding an expiry grows the header by 4
            // bytes, so an item at the size limit used to get TooLarge.
            // The limit applies to what clients store, not to this copy.
            match inner.build_limited(local, &n, old.cas(), inner.item_size_max + 4) {
                Ok((block, at)) => {
                    fill(block, at, &[old.value()]);
                    let f = f.take().expect("f runs at most once: only a failed build retries");
                    // SAFETY: the block holds the item just built, not yet
                    // published, so nothing can free it during `f`.
                    let r = f(unsafe { ItemRef::new(block.ptr) });
                    if inner.expired_now(expiry) {
                        inner.free_unpublished(local, block);
                        Decision::Remove(Some(Ok(r)))
                    } else {
                        Decision::Put(block, Some(Ok(r)))
                    }
                }
                Err(e) => Decision::Keep(Some(Err(e))),
            }
        })
    }

    /// Runs `f` with this thread's writes limited by value length instead
    /// of by `Config::item_size_max_bytes`: a value of up to `value_bytes`
    /// bytes (at most [`ITEM_SIZE_MAX_BYTES_LIMIT`]) is stored whatever
    /// its header and key add. The server runs RESP commands so, since
    /// Redis limits a string by its length (`proto-max-bulk-len`) while
    /// memcached's `-I` limits the whole item; recovery restores so, since
    /// what was stored once must come back. Nests; the previous limit is
    /// back when `f` returns or unwinds. The memory budget still applies.
    ///
    /// ```
    /// # use amalgam_engine::{Config, Error, Expiry, Store};
    /// let store = Store::new(Config { item_size_max_bytes: 1024, memory_limit_bytes: 8 << 20, ..Config::default() }).unwrap();
    /// let big = vec![7u8; 4096];
    /// assert_eq!(store.set(b"k", &big, 0, Expiry::Never), Err(Error::TooLarge));
    /// assert!(store.with_value_bytes_max(4096, || store.set(b"k", &big, 0, Expiry::Never)).is_ok());
    /// assert_eq!(store.with_value_bytes_max(4095, || store.set(b"k", &big, 0, Expiry::Never)), Err(Error::TooLarge));
    /// ```
    pub fn with_value_bytes_max<R>(&self, value_bytes: usize, f: impl FnOnce() -> R) -> R {
        /// Puts the thread's previous limit back, also on unwinding.
        struct Restore<'a>(&'a Local, Option<usize>);
        impl Drop for Restore<'_> {
            fn drop(&mut self) {
                // SAFETY: the calling thread's own Local; the reference
                // ends with this statement.
                unsafe { self.0.owned() }.value_bytes_max = self.1;
            }
        }
        let local = self.inner.epochs.local(&self.inner.shared);
        let limit = value_bytes.min(ITEM_SIZE_MAX_BYTES_LIMIT);
        // SAFETY: the calling thread's own Local; the reference ends with
        // this statement.
        let previous = unsafe { local.owned() }.value_bytes_max.replace(limit);
        let _restore = Restore(local, previous);
        f()
    }

    /// The general read-modify-write behind memcached's meta commands:
    /// under the key's bucket lock, `decide` sees the live item (if any)
    /// and says what to do; returns its result and, when an item was
    /// published, that item's CAS unique. In cache mode `decide` may run
    /// again, with the item as it is then, when its new item found no free
    /// segment (see `Inner::with_room`); only the last run's decision takes
    /// effect.
    ///
    /// ```
    /// use amalgam_engine::{Expiry, NewValue, Store, Update, MARK_STALE};
    /// let store = Store::new(Default::default()).unwrap();
    /// store.set(b"k", b"v", 7, Expiry::Never).unwrap();
    /// let (had, cas) = store
    ///     .update(b"k", |old| {
    ///         let Some(old) = old else { return (Update::Keep, false) };
    ///         let put = Update::Put {
    ///             value: NewValue::Same,
    ///             flags: old.flags(),
    ///             expiry: old.expiry(),
    ///             fresh_cas: true,
    ///             marks: MARK_STALE,
    ///         };
    ///         (put, true)
    ///     })
    ///     .unwrap();
    /// assert!(had && cas.is_some());
    /// assert_eq!(store.get(b"k", |it| (it.value().to_vec(), it.marks())), Some((b"v".to_vec(), MARK_STALE)));
    /// ```
    pub fn update<'v, R>(
        &self,
        key: &[u8],
        decide: impl FnMut(Option<ItemRef<'_>>) -> (Update<'v>, R),
    ) -> Result<(R, Option<u64>), Error> {
        self.update_cas(key, None, decide)
    }

    /// [`Store::update`]; `cas`: the CAS unique a Put publishes with, in
    /// place of the one `fresh_cas` chooses (recovery, journal.rs).
    pub(crate) fn update_cas<'v, R>(
        &self,
        key: &[u8],
        cas_override: Option<u64>,
        mut decide: impl FnMut(Option<ItemRef<'_>>) -> (Update<'v>, R),
    ) -> Result<(R, Option<u64>), Error> {
        check_key(key)?;
        let inner = &*self.inner;
        inner.mutate_with_room(key, |local, old| {
            let (update, r) = decide(old);
            match update {
                Update::Keep => Decision::Keep(Ok((r, None))),
                Update::Remove => Decision::Remove(Ok((r, None))),
                Update::InPlace { record } => match old.and_then(|o| o.object()) {
                    Some(_) => Decision::InPlace(Ok((r, None)), record),
                    None => Decision::Keep(Ok((r, None))),
                },
                Update::Put { value, flags, expiry, fresh_cas, mut marks } => {
                    let old_value: &[u8] = old.map(|o| o.value()).unwrap_or(b"");
                    // A new object: its cell is ours until the item that
                    // holds its address is published (freed below on
                    // every path that does not publish it).
                    let mut cell = None;
                    let addr;
                    let parts: [&[u8]; 2] = match value {
                        NewValue::Same => {
                            // The value keeps its kind, whatever `marks`
                            // says: an object's address is never bytes.
                            marks = (marks & !object::TAG_MASK) | old.map_or(TAG_BYTES, |o| o.tag());
                            [old_value, b""]
                        }
                        NewValue::Bytes(b) => [b, b""],
                        NewValue::Concat(b, true) => [old_value, b],
                        NewValue::Concat(b, false) => [b, old_value],
                        NewValue::Owned(ref v) => [v.as_slice(), b""],
                        NewValue::Object(o) => {
                            let c = Box::into_raw(ObjectCell::new(o));
                            cell = Some(c);
                            addr = object::addr_value(c);
                            marks = (marks & !object::TAG_MASK) | TAG_OBJECT;
                            [&addr[..], b""]
                        }
                    };
                    let drop_cell = |cell: Option<*mut ObjectCell>| {
                        if let Some(c) = cell {
                            // SAFETY: from Box::into_raw above, never
                            // published: we are its only owner.
                            drop(unsafe { Box::from_raw(c) });
                        }
                    };
                    let vlen = parts[0].len() + parts[1].len();
                    let cas = match (cas_override, old) {
                        (Some(c), _) => c,
                        (None, Some(o)) if !fresh_cas => o.cas(),
                        _ => inner.next_cas(local),
                    };
                    let n = NewItem { key, vlen, flags, expiry, marks };
                    match inner.build(local, &n, cas) {
                        Ok((block, at)) => {
                            fill(block, at, &parts);
                            if inner.expired_now(expiry) {
                                inner.free_unpublished(local, block);
                                drop_cell(cell);
                                Decision::Remove(Ok((r, None)))
                            } else {
                                Decision::Put(block, Ok((r, Some(cas))))
                            }
                        }
                        Err(e) => {
                            drop_cell(cell);
                            Decision::Keep(Err(e))
                        }
                    }
                }
            }
        })
    }

    /// Redis's RENAME (`only_if_absent`: RENAMENX): gives `dst` the value,
    /// flags, deadline and value tag of `src` and removes `src`, both at
    /// once for every other thread (`Store::atomically`). A large
    /// collection moves without a copy: `dst`'s new item holds `src`'s
    /// object. Returns Ok(false) when `only_if_absent` finds `dst` live,
    /// Err(NotFound) when `src` is absent. `src` and `dst` must differ.
    ///
    /// ```
    /// # use amalgam_engine::{Error, Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// store.set(b"a", b"1", 7, Expiry::Never).unwrap();
    /// assert_eq!(store.rename(b"a", b"b", false), Ok(true));
    /// assert!(store.get(b"a", |_| ()).is_none());
    /// assert_eq!(store.get(b"b", |it| (it.value().to_vec(), it.flags())), Some((b"1".to_vec(), 7)));
    /// assert_eq!(store.rename(b"a", b"b", false), Err(Error::NotFound));
    /// ```
    pub fn rename(&self, src: &[u8], dst: &[u8], only_if_absent: bool) -> Result<bool, Error> {
        check_key(src)?;
        check_key(dst)?;
        debug_assert_ne!(src, dst, "the caller answers a rename onto itself");
        let inner = &*self.inner;
        self.atomically(&[src, dst], || {
            let pin = Pinned::new(inner);
            let Some(p) = inner.lookup(&pin, inner.hash(src), src) else { return Err(Error::NotFound) };
            // SAFETY: found while pinned; we hold src's bucket, so the item
            // stays the key's until we unlink it below.
            let it = unsafe { ItemRef::new(p) };
            if !inner.is_live(&it, &mut None) {
                return Err(Error::NotFound);
            }
            let object = it.tag() == TAG_OBJECT;
            let put = inner.mutate(dst, |local, old| {
                if only_if_absent && old.is_some() {
                    return Decision::Keep(Ok(false));
                }
                let n = NewItem {
                    key: dst,
                    vlen: it.value().len(),
                    flags: it.flags(),
                    expiry: it.expiry(),
                    marks: it.marks(),
                };
                let cas = inner.next_cas(local);
                match inner.build(local, &n, cas) {
                    Ok((block, at)) => {
                        fill(block, at, &[it.value(), b""]);
                        if object {
                            Decision::PutMoved(block, Ok(true))
                        } else {
                            Decision::Put(block, Ok(true))
                        }
                    }
                    Err(e) => Decision::Keep(Err(e)),
                }
            });
            if put != Ok(true) {
                return put;
            }
            // Unlinked even if it expired since the check above: its
            // object (if any) is dst's now, and must not be retired.
            inner.mutate(src, |_, _| if object { Decision::RemoveMoved(Ok(true)) } else { Decision::Remove(Ok(true)) })
        })
    }

    /// Removes a key.
    ///
    /// ```
    /// # use amalgam_engine::{Error, Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// store.set(b"k", b"v", 0, Expiry::Never).unwrap();
    /// assert_eq!(store.delete(b"k"), Ok(()));
    /// assert_eq!(store.delete(b"k"), Err(Error::NotFound));
    /// ```
    pub fn delete(&self, key: &[u8]) -> Result<(), Error> {
        check_key(key)?;
        self.inner.mutate(key, |_, old| match old {
            Some(_) => Decision::Remove(Ok(())),
            None => Decision::Keep(Err(Error::NotFound)),
        })
    }

    /// Invalidates every item now (memcached's `flush_all`); their memory
    /// is reclaimed by the background sweep.
    ///
    /// ```
    /// # use amalgam_engine::{Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// store.set(b"k", b"v", 0, Expiry::Never).unwrap();
    /// store.flush_all();
    /// assert!(store.get(b"k", |_| ()).is_none());
    /// ```
    pub fn flush_all(&self) {
        let _flush = self.inner.lock_flush();
        self.inner.flush_at.store(0, Ordering::Release);
        self.inner.flush_now();
    }

    /// Invalidates, at unix time `at`, every item stored before then
    /// (memcached's `flush_all <delay>`), with one-second precision.
    ///
    /// ```
    /// # use amalgam_engine::{Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// store.flush_all_at(store.now() + 3600);
    /// ```
    pub fn flush_all_at(&self, at: u32) {
        if at <= self.inner.now() {
            return self.flush_all();
        }
        // Under flush_lock, so that the journal's order of Flush and
        // FlushAt records is the order they took effect in (journal.rs).
        let _flush = self.inner.lock_flush();
        // A pending flush whose time has come takes effect now, before the
        // new one replaces it: memcached would let the new, later time
        // revive the items the old one already hid.
        self.inner.flush_if_due_locked();
        if let Some(j) = self.inner.journal.get() {
            j.record(Change::FlushAt { at });
        }
        self.inner.flush_at.store(at as u64, Ordering::Release);
    }

    /// True when a write that grows a value outside the items (an object,
    /// object.rs) should be refused: store mode, with the pool's reserved
    /// memory and the objects' bytes together at or past the budget.
    /// Cache mode never refuses: its reclaimer evicts until items and
    /// objects fit (objects are charged to the budget there). Redis's
    /// `maxmemory` with `noeviction` refuses such writes the same way,
    /// before they run.
    ///
    /// ```
    /// let store = amalgam_engine::Store::new(Default::default()).unwrap();
    /// assert!(!store.objects_over_budget());
    /// ```
    pub fn objects_over_budget(&self) -> bool {
        let inner = &*self.inner;
        inner.cache.is_none() && inner.store_over_budget(inner.object_bytes())
    }

    /// The memory limit (`memory_limit_bytes`, memcached's `-m`, Redis's
    /// `maxmemory`) changed at run time, or Err saying which values are
    /// possible. Store mode takes any value (`usize::MAX`: no limit, which
    /// [`Stats::memory_limit_bytes`] shows as 0, Redis's `maxmemory 0`);
    /// cache mode takes from [`SEGMENTS_MIN`](crate::SEGMENTS_MIN) segments
    /// up to [`Store::memory_limit_max_bytes`].
    ///
    /// # How a change takes effect
    ///
    /// The limit is one number (`SharedPool::budget_bytes`) that both modes
    /// already obey everywhere memory is handed out, so a change is a
    /// store of that number and a wake-up; nothing is resized in place.
    ///
    /// * **Cache mode, lower.** The memory account (`account_memory`, run
    ///   here at once and by the maintenance thread every round) sets the
    ///   segments' resident limit to the new budget less the index. With
    ///   the limit below the segments in use, `free_count` falls to zero
    ///   (`segment.rs`, "Resident segments"): the maintenance thread, woken
    ///   here, evicts through the policy as it does for any full cache,
    ///   at most EVICT_SEGMENTS_PER_WAKE_MAX segments per round before it
    ///   looks at its other work, and a writer that finds no free segment
    ///   reclaims at most WRITER_RECLAIMS_MAX itself. So the cache comes
    ///   down in steps of whole segments, each behind its epoch grace
    ///   period, never in one stall; and a granule whose segments are all
    ///   free while more are resident than the limit is discarded at once
    ///   (`MADV_DONTNEED`), so the process's resident memory falls with
    ///   the limit rather than only its item count.
    /// * **Cache mode, raise.** The resident limit rises; cold granules
    ///   beyond the old one are paged in as writers need them. The segment
    ///   log is one mapping, so it can grow only inside the address space
    ///   reserved at start ([`Config::memory_limit_max_bytes`]); past it
    ///   the change is refused, naming the maximum.
    /// * **Store mode.** Chunks are reserved against the budget as they
    ///   are needed, so raising it simply lets more be reserved. Lowering
    ///   it below the chunks already reserved cannot give them back (their
    ///   blocks are spread over every size class's free lists): instead
    ///   every allocation refuses (out of memory, Redis's `-OOM`) while
    ///   the blocks in use plus objects reach the new budget, and succeeds
    ///   again once deletes bring them below it.
    ///
    /// # Limitations
    ///
    /// The index does not shrink: in cache mode its bytes stay charged, so
    /// a much lower budget holds fewer items than a cache started at that
    /// budget until keys are gone. The eviction policy's own structure
    /// (S3-FIFO's ghost) keeps the size it was given at start. Store
    /// mode's chunks stay mapped once reserved.
    ///
    /// ```
    /// # use amalgam_engine::{evict::Eviction, Config, Store};
    /// let store = Store::new(Config {
    ///     eviction: Eviction::S3Fifo,
    ///     memory_limit_bytes: 16 << 20,
    ///     memory_limit_max_bytes: 64 << 20,
    ///     ..Config::default()
    /// })
    /// .unwrap();
    /// store.set_memory_limit(48 << 20).unwrap();
    /// assert_eq!(store.stats().memory_limit_bytes, 48 << 20);
    /// assert!(store.set_memory_limit(65 << 20).unwrap_err().to_string().contains("67108864"));
    /// ```
    pub fn set_memory_limit(&self, bytes: usize) -> Result<(), ConfigError> {
        self.check_memory_limit(bytes)?;
        let inner = &*self.inner;
        inner.shared.set_budget_bytes(bytes);
        if let (Some(cache), Some(segs)) = (&inner.cache, &inner.shared.segments) {
            if cache.index_in_budget {
                inner.account_memory(0);
            } else {
                segs.set_limit_bytes(bytes.saturating_sub(inner.shared.reserved_bytes()));
            }
        }
        if let Some(th) = inner.maintenance_thread.get() {
            th.unpark();
        }
        Ok(())
    }

    /// Whether [`Store::set_memory_limit`] would take `bytes` (Err: why
    /// not, naming the range), changing nothing.
    pub fn check_memory_limit(&self, bytes: usize) -> Result<(), ConfigError> {
        if let Some(segs) = &self.inner.shared.segments {
            let (min, max) = (SEGMENTS_MIN * segs.segment_bytes(), self.memory_limit_max_bytes());
            if !(min..=max).contains(&bytes) {
                return Err(ConfigError(format!(
                    "cache mode's memory limit must be from {min} to {max} bytes (the most reserved at start: \
                     restart with a larger maximum to go past it); got {bytes}"
                )));
            }
        }
        Ok(())
    }

    /// The most [`Store::set_memory_limit`] accepts: in cache mode the
    /// segment log reserved at start (`Config::memory_limit_max_bytes`),
    /// in store mode `usize::MAX` (no limit).
    pub fn memory_limit_max_bytes(&self) -> usize {
        match &self.inner.shared.segments {
            Some(segs) => segs.count() * segs.segment_bytes(),
            None => usize::MAX,
        }
    }

    /// Installs the watcher of the engine's timed steps (`stall.rs`: table
    /// doubling strides, expiry sweep steps, eviction passes, segment
    /// merges); Err (the watcher back) if one is installed already.
    pub fn set_stall_watcher(
        &self,
        watcher: Arc<dyn crate::stall::StallWatcher>,
    ) -> Result<(), Arc<dyn crate::stall::StallWatcher>> {
        self.inner.stall_watcher.set(watcher)
    }

    /// The eviction policy in force ([`Eviction::None`] in store mode).
    pub fn eviction(&self) -> Eviction {
        match &self.inner.cache {
            None => Eviction::None,
            Some(c) if c.active.load(Ordering::Relaxed) & 1 == ACTIVE_S3FIFO => Eviction::S3Fifo,
            Some(_) => Eviction::Clock,
        }
    }

    /// Switches a cache's eviction policy at run time between CLOCK and
    /// S3-FIFO; Err for store mode or to [`Eviction::None`] (items live in
    /// size-class pools in store mode and in the segment log in cache mode:
    /// a switch would copy every item across). Switching to the policy in
    /// force changes nothing.
    ///
    /// # Why a switch is sound
    ///
    /// Both policies run on the same segment log and obey one contract
    /// (`evict/mod.rs`), so the state a policy leaves is one the other
    /// accepts: items carry a frequency of at most 3 (2 bits) and CLOCK
    /// keeps any nonzero one as 0 (still one pass of progress per item);
    /// S3-FIFO starts with its ghost as it was (stale entries only admit a
    /// key to Main once). The reclaimer's decisions stay serialized by its
    /// mutex, and a writer or reclaimer that read the old policy an instant
    /// before the switch makes one decision by it, which either policy's
    /// contract allows. GET hits raise frequencies up to the new cap from
    /// the next load on.
    ///
    /// # No segment is left behind
    ///
    /// Every segment the old policy's queues hold stays reclaimable:
    ///
    /// * *Sealed segments* are popped by queue, and both policies name
    ///   both queues: CLOCK's `victim` names Small while anything is left
    ///   there (it never writes there itself), and moves what it keeps to
    ///   Main; S3-FIFO reclaims CLOCK's Main as its own.
    /// * *Open segments* are reclaimed only once their owner seals them
    ///   (it may be writing into one), and an owner used to seal one only
    ///   when it wrote to that queue again. Under CLOCK no one writes to
    ///   Small again, so a writer's open Small segment stayed open, its
    ///   items never evicted, unless that writer happened to reclaim a
    ///   segment itself (it may seal its own; the maintenance thread, which
    ///   reclaims ahead of writers, may not): a race, which
    ///   `docs/cache-mode.md` tells in full. Now each switch counts in
    ///   `Cache::active`, and a thread's first write that sees a new count
    ///   seals all its open segments before it allocates
    ///   (`Inner::alloc_in_segment`); a thread that may stay idle calls
    ///   [`Store::follow_eviction`] to do the same without writing (the
    ///   server's workers do when the switch wakes them). A thread that
    ///   does neither keeps its open segments (at most one per queue)
    ///   until it writes, as an idle thread does under any one policy.
    ///
    /// ```
    /// # use amalgam_engine::{evict::Eviction, Config, Store};
    /// let store = Store::new(Config { eviction: Eviction::S3Fifo, ..Config::default() }).unwrap();
    /// store.set_eviction(Eviction::Clock).unwrap();
    /// assert_eq!(store.eviction(), Eviction::Clock);
    /// assert!(store.set_eviction(Eviction::None).is_err());
    /// ```
    pub fn set_eviction(&self, to: Eviction) -> Result<(), ConfigError> {
        let Some(cache) = &self.inner.cache else {
            return Err(ConfigError(
                "store mode (eviction none) cannot start evicting: restart with --eviction".into(),
            ));
        };
        if to == Eviction::None {
            return Err(ConfigError("a cache cannot become a store (eviction none): restart with --eviction".into()));
        }
        // Two switches at once: the frequency cap must end as the policy's.
        let _one = cache.switching.lock().unwrap_or_else(|e| e.into_inner());
        let bit = active_bit(to);
        let now = cache.active.load(Ordering::Relaxed);
        if now & 1 == bit {
            return Ok(());
        }
        let next = ((now >> 1).wrapping_add(1) << 1) | bit;
        self.inner.freq_max.store(cache.policy_of(next).freq_max().min(item::FREQ_BITS_MAX), Ordering::Relaxed);
        cache.active.store(next, Ordering::Relaxed);
        Ok(())
    }

    /// Cache mode: what the calling thread's next write would do first
    /// after a policy switch ([`Store::set_eviction`]): seals its open
    /// segments if the policy changed since its last write, so they can be
    /// reclaimed. For a thread that may stay idle after a switch (the
    /// server's workers call it when CONFIG SET eviction wakes them):
    /// without it, its open segments wait for a write that may never come.
    /// Does nothing inside a [`Reader`] session (the thread is pinned, and
    /// a write of its own may be in progress), in store mode, or when
    /// nothing changed: a load and a compare.
    ///
    /// ```
    /// # use amalgam_engine::{evict::Eviction, Config, Expiry, Store};
    /// let store = Store::new(Config { eviction: Eviction::S3Fifo, ..Config::default() }).unwrap();
    /// store.set(b"k", b"v", 0, Expiry::Never).unwrap();
    /// store.set_eviction(Eviction::Clock).unwrap();
    /// store.follow_eviction();
    /// assert!(store.get(b"k", |_| ()).is_some());
    /// ```
    pub fn follow_eviction(&self) {
        let inner = &*self.inner;
        let (Some(cache), Some(segs)) = (&inner.cache, &inner.shared.segments) else { return };
        let local = inner.epochs.local(&inner.shared);
        // SAFETY: our own Local; the reference ends with this function.
        let owned = unsafe { local.owned() };
        let active = cache.active.load(Ordering::Relaxed);
        if active == owned.policy_seen || owned.pin_depth != 0 {
            return;
        }
        // Not pinned: every item this thread allocated is finished (items
        // are allocated and published or abandoned under one pin).
        segs.seal_open(&mut owned.open);
        owned.policy_seen = active;
    }

    /// S3-FIFO's small-queue share, in percent of the cache's bytes (None
    /// in store mode). Kept while CLOCK is in force, for a switch back.
    pub fn small_queue_percent(&self) -> Option<u8> {
        self.inner.cache.as_ref().map(|c| c.s3fifo.small_percent())
    }

    /// Sets S3-FIFO's small-queue share at run time
    /// ([`S3Fifo::set_small_percent`](crate::evict::S3Fifo::set_small_percent):
    /// from 1 to 50 percent, taking effect at the next reclamation); Err
    /// saying the range, or for store mode.
    ///
    /// ```
    /// # use amalgam_engine::{evict::Eviction, Config, Store};
    /// let store = Store::new(Config { eviction: Eviction::S3Fifo, ..Config::default() }).unwrap();
    /// assert_eq!(store.small_queue_percent(), Some(10));
    /// store.set_small_queue_percent(25).unwrap();
    /// assert_eq!(store.small_queue_percent(), Some(25));
    /// assert!(store.set_small_queue_percent(51).is_err());
    /// ```
    pub fn set_small_queue_percent(&self, percent: u8) -> Result<(), ConfigError> {
        let Some(cache) = &self.inner.cache else {
            return Err(ConfigError("store mode (eviction none) has no small queue".into()));
        };
        cache.s3fifo.set_small_percent(percent).map_err(ConfigError)
    }

    /// Whether the store evicts (cache mode) or refuses writes when full
    /// (store mode, `Eviction::None`).
    pub fn is_cache(&self) -> bool {
        self.inner.cache.is_some()
    }

    /// The store's clock: unix seconds, as used for expiry.
    ///
    /// ```
    /// let store = amalgam_engine::Store::new(Default::default()).unwrap();
    /// assert!(store.now() > 1_600_000_000);
    /// ```
    pub fn now(&self) -> u32 {
        self.inner.now()
    }

    /// The unix second at which the item with CAS unique `cas` was stored
    /// (memcached's `it->time`; clock.rs): exact to about a second for
    /// items written in the last hour of writes while store times are
    /// asked for; older items read as the oldest second kept.
    ///
    /// ```
    /// # use amalgam_engine::{Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// let cas = store.set(b"k", b"v", 0, Expiry::Never).unwrap();
    /// assert!(store.now() - store.stored_at(cas) <= 1);
    /// ```
    pub fn stored_at(&self, cas: u64) -> u32 {
        let now = self.inner.now();
        self.inner.write_clock.stored_at(cas, now).min(now)
    }

    /// The store's clock in unix milliseconds, as used for millisecond
    /// expiry ([`Expiry::AtMillis`]); [`Store::now`] is its seconds.
    ///
    /// ```
    /// let store = amalgam_engine::Store::new(Default::default()).unwrap();
    /// assert!(store.now_millis() / 1000 >= u64::from(store.now()) - 1);
    /// ```
    pub fn now_millis(&self) -> u64 {
        self.inner.now_millis()
    }

    /// Moves the store's clock forward by `seconds` (for tests of expiry).
    ///
    /// ```
    /// # use amalgam_engine::{Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// store.set(b"k", b"v", 0, Expiry::from_memcached(10, store.now())).unwrap();
    /// store.advance_clock(11);
    /// assert!(store.get(b"k", |_| ()).is_none());
    /// ```
    pub fn advance_clock(&self, seconds: i64) {
        self.inner.clock_offset.fetch_add(seconds, Ordering::Relaxed);
    }

    /// Number of items in the index (expired but unreclaimed ones included).
    ///
    /// ```
    /// let store = amalgam_engine::Store::new(Default::default()).unwrap();
    /// assert_eq!(store.len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.inner.item_count() as usize
    }

    /// Bytes the item `it` (found in this store) holds from memory: its
    /// block — the pool's size class in store mode, its aligned length in
    /// a cache-mode segment — plus, for an object item, the object's
    /// charge (object.rs, MEMORY: the allocator's bytes it holds and its
    /// cell). Redis's MEMORY USAGE, as far as the engine knows it; the
    /// key's share of the index (a slot of a 64-byte bucket line) is not
    /// in it.
    ///
    /// ```
    /// # use amalgam_engine::{Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// store.set(b"key", b"value", 0, Expiry::Never).unwrap();
    /// let (size, bytes) = store.peek(b"key", |it| (it.size(), store.item_mem_bytes(&it))).unwrap();
    /// assert!(bytes >= size && bytes < size + 8, "{bytes} for an item of {size}");
    /// ```
    pub fn item_mem_bytes(&self, it: &ItemRef<'_>) -> usize {
        let inner = &*self.inner;
        let block = match &inner.shared.segments {
            None => inner.block_size(it.ptr),
            // SAFETY: `it` is live for its lifetime (ItemRef's contract).
            Some(_) => unsafe { item::layout(it.ptr) }.total().next_multiple_of(ITEM_ALIGN_BYTES),
        };
        block + it.object().map_or(0, ObjectCell::charged)
    }

    /// Pins the calling thread's epoch (for `scan.rs`).
    pub(crate) fn pin(&self) -> Pinned<'_> {
        Pinned::new(&self.inner)
    }

    /// Not expired, not flushed (for `scan.rs`).
    pub(crate) fn item_is_live(&self, it: &ItemRef<'_>, now: &mut Option<u32>) -> bool {
        self.inner.is_live(it, now)
    }

    /// True when [`len`](Self::len) is 0.
    ///
    /// ```
    /// assert!(amalgam_engine::Store::new(Default::default()).unwrap().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Frees what the calling thread has retired, as far as other threads'
    /// pins allow. Returns true when all of it was freed. Servers need not
    /// call this; tests of memory accounting do.
    ///
    /// ```
    /// # use amalgam_engine::{Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// store.set(b"k", b"v", 0, Expiry::Never).unwrap();
    /// store.delete(b"k").unwrap();
    /// assert!(store.reclaim());
    /// assert_eq!(store.stats().block_bytes, 0);
    /// ```
    pub fn reclaim(&self) -> bool {
        let inner = &*self.inner;
        let local = inner.epochs.local(&inner.shared);
        inner.epochs.reclaim(local, &inner.shared, RECLAIM_ROUNDS_MAX)
    }

    /// Waits until no expansion is running or due and the tables it
    /// replaced are freed (tests and benchmarks that want a quiet table). Bounded by `timeout`; returns false if it
    /// ran out.
    ///
    /// ```
    /// let store = amalgam_engine::Store::new(Default::default()).unwrap();
    /// assert!(store.wait_for_expansion(std::time::Duration::from_secs(5)));
    /// ```
    pub fn wait_for_expansion(&self, timeout: Duration) -> bool {
        let start = std::time::Instant::now();
        while start.elapsed() < timeout {
            let busy = {
                let pin = Pinned::new(&self.inner);
                let t = pin.current();
                t.successor().is_some() || self.inner.needs_expansion(t)
            };
            if !busy && self.inner.quiet.load(Ordering::Acquire) {
                return true;
            }
            if let Some(th) = self.inner.maintenance_thread.get() {
                th.unpark();
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        false
    }

    /// Cache mode, for tests of the eviction order: the live items of
    /// `queue`, oldest first (segments in queue order, items in log order
    /// within a segment), with their frequencies. Found through the index
    /// (a full scan), so it is safe while other threads run, but only a
    /// quiet store gives a consistent picture. Empty in store mode.
    #[doc(hidden)]
    pub fn dump_queue(&self, queue: Queue) -> Vec<(Vec<u8>, u8)> {
        let Some(segs) = &self.inner.shared.segments else { return Vec::new() };
        let order: std::collections::HashMap<u32, usize> =
            segs.queue_snapshot(queue).iter().enumerate().map(|(i, &(id, _))| (id, i)).collect();
        let mut found = Vec::new();
        let mut cursor = 0;
        loop {
            cursor = self.scan(cursor, |it| {
                if !segs.contains(it.ptr) {
                    return; // outsized (outsized.rs): in no segment's queue
                }
                let id = segs.id_of(it.ptr);
                if let Some(&pos) = order.get(&id) {
                    let off = it.ptr as usize - segs.base_of(id) as usize;
                    // SAFETY: `it` is live for this callback (scan's pin).
                    let freq = unsafe { item::freq(it.ptr) };
                    found.push((pos, off, it.key().to_vec(), freq));
                }
            });
            if cursor == 0 {
                break;
            }
        }
        found.sort();
        found.into_iter().map(|(_, _, k, f)| (k, f)).collect()
    }

    /// Cache mode, for tests: the segments of `queue` oldest first, as
    /// (fill bytes, live bytes, creation sequence number).
    #[doc(hidden)]
    pub fn dump_segments(&self, queue: Queue) -> Vec<(usize, i64, u64)> {
        let Some(segs) = &self.inner.shared.segments else { return Vec::new() };
        segs.queue_snapshot(queue)
            .into_iter()
            .map(|(id, fill)| {
                let (live, seq) = segs.live_and_seq(id);
                (fill, live, seq)
            })
            .collect()
    }

    /// A snapshot of the store's counters.
    ///
    /// ```
    /// let store = amalgam_engine::Store::new(Default::default()).unwrap();
    /// assert_eq!(store.stats().buckets, 1024);
    /// ```
    pub fn stats(&self) -> Stats {
        let inner = &*self.inner;
        let pin = Pinned::new(inner);
        let t = pin.current();
        let mut s = Stats {
            items: inner.item_count(),
            memory_limit_bytes: match inner.shared.budget_bytes() {
                usize::MAX => 0,
                b => b as u64,
            },
            reserved_bytes: inner.shared.reserved_bytes() as u64,
            buckets: t.bucket_count() as u64,
            overflow_nodes: t.overflow_nodes() as u64,
            overflow_nodes_in_use: t.overflow_nodes_in_use() as u64,
            expansions: inner.expansions.load(Ordering::Relaxed),
            expanding: t.successor().is_some(),
            ..Stats::default()
        };
        s.index_bytes = (s.buckets + s.overflow_nodes) * 64;
        if let (Some(c), Some(segs)) = (&inner.cache, &inner.shared.segments) {
            s.outsized_bytes = s.reserved_bytes;
            s.reserved_bytes = segs.resident_bytes() as u64;
            s.segment_limit = segs.limit() as u64;
            s.policy_bytes = c.policy().memory_bytes() as u64;
            s.evictions = c.evictions.load(Ordering::Relaxed);
            s.evicted_unfetched = c.evicted_unfetched.load(Ordering::Relaxed);
            s.expired_unfetched = c.expired_unfetched.load(Ordering::Relaxed);
            s.reclaimed_segments = c.reclaimed_segments.load(Ordering::Relaxed);
            s.merged_segments = c.merged_segments.load(Ordering::Relaxed);
            s.writer_reclaims = c.writer_reclaims.load(Ordering::Relaxed);
            s.segments = (segs.count().min(inner.shared.budget_bytes() / segs.segment_bytes())) as u64;
            s.free_segments = segs.free_count() as u64;
            s.segment_bytes = segs.segment_bytes() as u64;
        }
        s.swept_items = inner.swept_items.load(Ordering::Relaxed);
        s.expiry_sweeps = inner.expiry_sweeps.load(Ordering::Relaxed);
        for l in inner.epochs.all() {
            s.item_bytes = s.item_bytes.wrapping_add(l.bytes.load(Ordering::Relaxed) as u64);
            s.block_bytes += l.block_bytes.load(Ordering::Relaxed);
            s.object_bytes += l.object_bytes.load(Ordering::Relaxed);
        }
        s
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        self.inner.shutdown.store(true, Ordering::Release);
        if let Some(h) = self.maintenance.take() {
            h.thread().unpark();
            let _ = h.join();
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Only large items (store mode) and outsized items (cache mode,
        // outsized.rs) live outside the chunks the SharedPool unmaps and
        // the segment log.
        let store_mode = self.shared.segments.is_none();
        let segments = self.shared.segments.as_ref();
        let large = |p: *const u8| {
            // An object item owns its cell (object.rs): drop it with the
            // store.
            // SAFETY: every pointer in the table is a live item; we are the
            // last owner of the store, so no reader holds the cell.
            unsafe { drop_unpublished_object(p) };
            // SAFETY: as above.
            let total = unsafe { item::layout(p) }.total();
            let outside = match segments {
                None => total > SMALL_ITEM_BYTES_MAX,
                Some(s) => !s.contains(p),
            };
            if outside {
                let bytes = total.next_multiple_of(4096);
                let layout = std::alloc::Layout::from_size_align(bytes, 64).expect("layout");
                // SAFETY: large items are allocated with exactly this layout.
                unsafe { std::alloc::dealloc(p as *mut u8, layout) };
            }
        };
        let t = *self.current.get_mut();
        // SAFETY: `current` is the Box leaked when the table became current.
        let table = unsafe { Box::from_raw(t) };
        table.for_each_item_exclusive(large);
        drop(table);
        for local in self.epochs.locals_mut() {
            local.drain_garbage(|b| {
                if store_mode && b.bytes > SMALL_ITEM_BYTES_MAX {
                    let layout = std::alloc::Layout::from_size_align(b.bytes, 64).expect("layout");
                    // SAFETY: as above.
                    unsafe { std::alloc::dealloc(b.ptr, layout) };
                }
            });
        }
    }
}

fn random_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(std::process::id() as u64);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The wake slack: one segment below 512 of them (`-m 512` of 1 MiB
    /// segments), a 256th of them above, 16 at most.
    #[test]
    fn wake_slack_scales_with_the_budget() {
        assert_eq!(wake_slack_for(0), 1);
        assert_eq!(wake_slack_for(64), 1);
        assert_eq!(wake_slack_for(511), 1);
        assert_eq!(wake_slack_for(1024), 4);
        assert_eq!(wake_slack_for(4096), 16);
        assert_eq!(wake_slack_for(1 << 20), EVICT_WAKE_SLACK_SEGMENTS_MAX);
    }

    /// `Inner::with_room`, deterministically: allocations made to fail as
    /// if other writers had just taken every free segment. Each kind of
    /// write is retried after making room and succeeds, an update's
    /// decision runs again on the retry (and only the last run counts),
    /// and past ROOM_RETRIES_MAX the write answers out of memory having
    /// changed nothing.
    #[test]
    fn writes_that_find_no_free_segment_retry_after_making_room() {
        let config = Config { eviction: Eviction::S3Fifo, memory_limit_bytes: 16 * SEGMENT_BYTES, ..Config::default() };
        let store = Store::new(config).unwrap();
        let cache = store.inner.cache.as_ref().unwrap();
        let fail_next = |n: usize| cache.alloc_failures.store(n as u32, Ordering::Relaxed);
        let value = |k: &[u8]| store.get(k, |it| it.value().to_vec());
        store.set(b"n", b"1", 0, Expiry::Never).unwrap();
        store.set(b"k", b"v", 0, Expiry::Never).unwrap();

        fail_next(1);
        store.set(b"s", b"x", 0, Expiry::Never).unwrap();
        assert_eq!(value(b"s").as_deref(), Some(&b"x"[..]));
        fail_next(1);
        store.append(b"k", b"w").unwrap();
        assert_eq!(value(b"k").as_deref(), Some(&b"vw"[..]));
        fail_next(1);
        assert_eq!(store.incr(b"n", 2), Ok(3));
        fail_next(1);
        store.touch(b"k", Expiry::At(u32::MAX)).unwrap();
        assert_eq!(store.get(b"k", |it| it.expiry()), Some(Expiry::At(u32::MAX)));
        fail_next(1);
        let mut runs = 0;
        let (seen, cas) = store
            .update(b"k", |old| {
                runs += 1;
                let put = Update::Put {
                    value: NewValue::Bytes(b"u"),
                    flags: 3,
                    expiry: Expiry::Never,
                    fresh_cas: true,
                    marks: 0,
                };
                (put, (runs, old.map(|it| it.value().to_vec())))
            })
            .unwrap();
        assert_eq!(seen, (2, Some(b"vw".to_vec())), "decided again on the retry, seeing the item as it was");
        assert!(cas.is_some());
        assert_eq!(store.get(b"k", |it| (it.value().to_vec(), it.flags())), Some((b"u".to_vec(), 3)));
        assert_eq!(cache.alloc_failures.load(Ordering::Relaxed), 0);

        // One more failure than retries: out of memory, nothing changed.
        fail_next(ROOM_RETRIES_MAX + 1);
        assert_eq!(store.set(b"s", b"y", 0, Expiry::Never), Err(Error::OutOfMemory));
        assert_eq!(value(b"s").as_deref(), Some(&b"x"[..]));
        fail_next(ROOM_RETRIES_MAX + 1);
        assert_eq!(store.append(b"s", b"z"), Err(Error::OutOfMemory));
        assert_eq!(value(b"s").as_deref(), Some(&b"x"[..]));
        fail_next(0);
    }

    /// The liveness test's three cases: a deadline second after now is
    /// live without reading the remainder, one before now is dead without
    /// it, and only the second itself reads it (and a whole second, with
    /// no remainder, is over as soon as it begins).
    #[test]
    fn only_the_deadline_second_reads_the_milliseconds() {
        let store = Store::new(Config::default()).unwrap();
        let inner = &store.inner;
        let unread = || -> u16 { panic!("the remainder is read only in the deadline's second") };
        assert!(inner.expiry_live(0, 100, unread));
        assert!(inner.expiry_live(101, 100, unread));
        assert!(!inner.expiry_live(99, 100, unread));
        assert!(!inner.expiry_live(100, 100, || 0), "a whole-second deadline is over when its second begins");
        let now = store.now();
        let live = inner.expiry_live(now, now, || 999);
        assert!(live || store.now_millis() >= u64::from(now) * 1000 + 999, "999 ms into this second is still ahead");
        assert!(!inner.expiry_live(1, 1, || 999), "second 1 of 1970 is long past");
    }

    /// A millisecond deadline: never returned at or after it, always
    /// before it, read against the clock on both sides of each GET (a
    /// bounded loop of 20 ms steps over its 300 ms).
    #[test]
    fn millisecond_deadlines_hold_to_the_millisecond() {
        for eviction in [Eviction::None, Eviction::S3Fifo] {
            let store = Store::new(Config { eviction, ..Config::default() }).unwrap();
            let deadline = store.now_millis() + 300;
            store.set(b"k", b"v", 0, Expiry::at_millis(deadline)).unwrap();
            assert_eq!(store.get(b"k", |it| it.expiry()), Some(Expiry::at_millis(deadline)));
            let (mut seen_live, mut seen_gone) = (false, false);
            for _ in 0..40 {
                let before = store.now_millis();
                let hit = store.get(b"k", |it| it.value().to_vec()).is_some();
                let after = store.now_millis();
                if after < deadline {
                    assert!(hit, "{eviction:?}: gone {} ms early", deadline - after);
                    seen_live = true;
                }
                if before >= deadline {
                    assert!(!hit, "{eviction:?}: returned {} ms late", before - deadline);
                    seen_gone = true;
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            assert!(seen_live && seen_gone, "{eviction:?}: the loop saw both sides");
            // Writing a deadline already past removes the key, as for seconds.
            store.set(b"k", b"v", 0, Expiry::Never).unwrap();
            store.touch(b"k", Expiry::at_millis(store.now_millis() - 1)).unwrap();
            assert!(store.get(b"k", |_| ()).is_none());
            assert_eq!(store.set(b"p", b"v", 0, Expiry::at_millis(store.now_millis() - 1)).map(|_| ()), Ok(()));
            assert!(store.get(b"p", |_| ()).is_none());
        }
    }

    /// Whole-second deadlines keep their size; a remainder costs 2 bytes,
    /// survives append (which keeps the expiry) and a metadata update.
    #[test]
    fn a_millisecond_remainder_is_two_bytes_and_survives_rewrites() {
        let store = Store::new(Config::default()).unwrap();
        let secs = store.now() + 3600;
        store.set(b"s", b"v", 0, Expiry::At(secs)).unwrap();
        let at = u64::from(secs) * 1000 + 7;
        store.set(b"m", b"v", 0, Expiry::AtMillis(at)).unwrap();
        let size = |k: &[u8]| store.get(k, |it| it.size()).unwrap();
        assert_eq!(size(b"m"), size(b"s") + 2);
        store.append(b"m", b"w").unwrap();
        assert_eq!(
            store.get(b"m", |it| (it.value().to_vec(), it.expiry())),
            Some((b"vw".to_vec(), Expiry::AtMillis(at)))
        );
        store.touch(b"m", Expiry::AtMillis(u64::from(secs) * 1000)).unwrap();
        assert_eq!(store.get(b"m", |it| it.expiry()), Some(Expiry::At(secs)), "a whole second is reported as At");
        assert_eq!(size(b"m"), size(b"s") + 1, "and drops the field (one more value byte)");
        assert_eq!(Expiry::AtMillis(999).raw(), (1, 0), "the first second of 1970 is expired, not never");
        assert_eq!(Expiry::AtMillis(u64::MAX).raw(), (u32::MAX, 0));
    }
}
