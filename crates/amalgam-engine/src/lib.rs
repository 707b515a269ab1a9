//! # amalgam-engine
//!
//! The storage engine of Amalgam: an embeddable, concurrent, in-memory
//! key-value store with memcached's item semantics, built as the papers in
//! `shared/papers/` describe it.
//!
//! ## Goals
//! * GETs and SETs that scale with cores on read-heavy and write-heavy mixes
//!   (Mercury, SYSTOR '13): a chained hash table whose buckets are single
//!   cache lines carrying their own lock, kept short by aggressive,
//!   incremental expansion on a dedicated thread.
//! * GETs that take no lock and write nothing shared (MemC3, NSDI '13):
//!   16-bit tags in the bucket line so only a matching item is fetched, and
//!   version-checked optimistic reads. A hit costs two cache lines (bucket,
//!   item), a miss one.
//! * A GET hit short in instructions, because its length is its speed: its
//!   two misses depend on each other, so one GET's misses can overlap only
//!   with the next GET's, and the CPU reaches the next GET's loads only if
//!   the instructions between fit its reorder window (about 100–150 on
//!   this machine's Zen 3; `docs/bench-log/2026-11-25-engine.md` § Why a
//!   GET is short). The
//!   common case (table quiet or one doubling in progress, key in its
//!   bucket's own line) is one inlined path (`Table::probe_quiet`); the
//!   item's fields are decoded only as they are read (`item.rs`, "Single
//!   fields"); the key hash is foldhash.
//! * Batched lookups with software prefetch of buckets then items (MICA,
//!   ISCA '15 §5.3) for multi-gets and pipelines; for a pipeline's
//!   collection commands further down, through an object item's cell and
//!   object to what [`Object::hint_addrs`] names (`Store::prefetch_updates`).
//! * Small items: a 7–8-byte header for the common item (every field as
//!   wide as its value: `item.rs`), so an 8 B / 8 B item takes a 24-byte
//!   block; item memory from per-thread pools of 2 MiB chunks (Mercury
//!   §3), reclaimed by epochs.
//!
//! * Cache mode (`Config::eviction`, issue 4, `docs/cache-mode.md`): a hard
//!   memory budget divided into segments (Segcache, NSDI '21), items
//!   appended to per-thread open segments, whole segments reclaimed oldest
//!   first with the eviction policy deciding per live item (CLOCK, MemC3
//!   §4; S3-FIFO, SOSP '23). GETs still take no lock; a hit raises the
//!   item's 2-bit frequency only while it is below the policy's cap. The
//!   budget covers the index too (the memory account: segments may be
//!   resident only up to the budget less the index, `segment.rs`), and
//!   the table stays dense (7 items per bucket, doubling only when that
//!   makes room for more items). An item larger than a segment is
//!   *outsized* (`outsized.rs`): a block of its own, charged to the same
//!   budget and evicted by the same policy.
//! * Large values (issue 18): store mode allocates items past
//!   [`SMALL_ITEM_BYTES_MAX`] one by one beside the pools; the item size
//!   limit is `Config::item_size_max_bytes` (memcached's `-I`, the whole
//!   item) unless the caller runs under [`Store::with_value_bytes_max`]
//!   (the server's RESP commands: Redis limits a string's length). A
//!   large value can be received straight into its item
//!   ([`Store::prepare`], `prepared.rs`) and published whole, so the
//!   server neither copies it nor holds a worker for it.
//!
//! * Persistence hooks (issue 5, `journal.rs`): every change reaches a
//!   [`Journal`] under its bucket lock; [`Store::snapshot`] writes a
//!   point-in-time image without fork or copy (a writer serializes a
//!   bucket the cursor has not reached before changing it).
//!
//! ## Non-goals (here)
//! No I/O, no protocol, no files: `amalgam-persist` and the server wrap
//! this crate.
//!
//! ## Threads and ownership
//! * Any number of worker threads share one [`Store`]. Each gets a
//!   per-store `Local` (epoch mark, memory pool, CAS block, counters).
//! * One maintenance thread per store ("amalgam-expand") doubles the table
//!   when the mean load passes [`LOAD_PER_BUCKET_MAX`] ([`CACHE_LOAD_PER_BUCKET_MAX`] in cache mode), runs delayed
//!   flushes and sweeps flushed items; in cache mode it also reclaims
//!   segments to keep [`EVICT_RESERVE_SEGMENTS`] free, and every round
//!   sets the segments' resident limit from the index's size.
//! * Items are immutable once published; writers replace slot pointers
//!   under their bucket's lock; unlinked items and old tables are freed
//!   after an epoch grace period (`local.rs`).
//!
//! ## Files
//! | file | what |
//! |---|---|
//! | `table.rs` | bucket layout, optimistic probe, bucket lock, migration |
//! | `item.rs`  | item layout |
//! | `pool.rs`  | chunks, size classes, per-thread pools (store mode) |
//! | `segment.rs` | cache mode's segment log: segments, queues, bump allocation |
//! | `outsized.rs` | cache mode's items larger than a segment: own blocks, same budget, same policy |
//! | `prepared.rs` | large values received in place: the item allocated when the length is known, published when whole |
//! | `local.rs` | per-thread state and epoch reclamation |
//! | `barrier.rs` | the epoch pin's asymmetric fences: a compiler fence per pin, membarrier(2) on the rare reclaimer |
//! | `store/` | the public API and the expand thread, one file per concern (`store/mod.rs` says which holds what) |
//! | `object.rs` | value tags; objects: values that live outside their item (large collections) |
//! | `journal.rs` | persistence hooks: the journal of changes, fork-less snapshots, restore |
//! | `namespace.rs` | key namespaces (Redis's databases) in one store: the key encoding, items per namespace |
//! | `scan.rs`  | key iteration by cursor (Redis's SCAN guarantee); a random live item (RANDOMKEY) |
//! | `key_classes.rs` | an optional count of the index's items per class of key (the server's hash slots), kept by the write path |
//! | `stall.rs` | the engine's bounded steps timed for a watcher (the server's LATENCY), no protocol names |
//! | `txn.rs`   | multi-key atomicity: a transaction holds its keys' buckets (MULTI/EXEC, multi-key commands) |
//! | `evict/`   | cache mode's eviction policies (CLOCK, S3-FIFO), the scope of Redis's `volatile-*` (`Scope`) and their model; design in `docs/cache-mode.md` |
//!
//! ```
//! use amalgam_engine::{Config, Expiry, Store};
//! let store = Store::new(Config::default()).unwrap();
//! store.set(b"greeting", b"hello", 0, Expiry::Never).unwrap();
//! let v = store.get(b"greeting", |item| item.value().to_vec());
//! assert_eq!(v.as_deref(), Some(&b"hello"[..]));
//! ```

mod barrier;
mod clock;
pub mod evict;
mod item;
mod journal;
pub mod key_classes;
pub mod key_events;
mod local;
pub mod namespace;
mod object;
mod outsized;
mod pool;
mod prepared;
mod reclaim;
mod scan;
mod segment;
mod stall;
mod store;
mod sync;
mod table;
mod txn;
pub use txn::NotHeld;

pub use item::{KEY_BYTES_MAX, MARK_FETCHED, MARK_STALE, MARK_TOKEN_SENT};
pub use journal::{Change, Journal, SnapshotSink, SnapshotStats, JOURNAL_LARGE_VALUE_BYTES_MIN};
pub use object::{Object, ObjectCell, HINT_ADDRS, HINT_LEVELS, TAG_BYTES, TAG_OBJECT, TAG_PACKED_MAX, TAG_PACKED_MIN};
pub use pool::{disable_hugepages_for_process, CHUNK_BYTES, SMALL_ITEM_BYTES_MAX};
pub use prepared::Prepared;
pub use segment::{EVICT_RESERVE_SEGMENTS, HUGEPAGE_BUDGET_MIN, SEGMENTS_MIN, SEGMENT_BYTES, SEGMENT_BYTES_MIN};
pub use stall::{Stall, StallWatcher, Timing as StallTiming};
pub use store::{
    check_key, counter_value, Config, ConfigError, Error, Expiry, ItemRef, NewValue, Reader, Stats, Store, Update,
    BATCH_WINDOW_KEYS, CACHE_INDEX_BUDGET_SHARE, CACHE_LOAD_PER_BUCKET_MAX, INITIAL_BUCKETS_LOG2_DEFAULT,
    ITEM_SIZE_MAX_BYTES_DEFAULT, ITEM_SIZE_MAX_BYTES_LIMIT, LOAD_PER_BUCKET_MAX, MEMORY_LIMIT_BYTES_DEFAULT,
    RELATIVE_EXPIRY_SECONDS_MAX,
};

/// Low-level pieces exposed for the loom models in `tests/loom.rs` only.
#[cfg(loom)]
#[doc(hidden)]
pub mod loom_api;
