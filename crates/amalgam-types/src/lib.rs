//! # amalgam-types
//!
//! Redis's collection types — hash, list, set, sorted set and stream — as
//! plain Rust values: their compact and large representations and every
//! operation Redis 7 defines on them. No I/O, no protocol; of the engine
//! only its `Object` trait (value.rs), so a large collection can be an
//! object an item points to. The
//! server stores these values in the engine's items and adapts RESP
//! arguments to these methods; each type is tested alone against a model
//! (`tests/`).
//!
//! ## Why: the study's trap (redis-memcached-study §4.4)
//! Redis holds 1 GB of hash data in 6.10 GB and a skiplist-backed sorted
//! set in 7.50 GB: a `dictEntry` (24 B) plus two `sds` headers plus
//! malloc's rounding per element, and a skiplist node with its level array
//! on top for sorted sets. It escapes only while a collection is small
//! (listpack, intset: one allocation, no per-element pointers). Measured
//! on Redis 7.0.15 (issue 19): 104 B per field of a large hash with 16 B
//! fields and 16 B values, 72 B per 17 B set member, 56 B per integer
//! member past the intset limit, 125 B per sorted-set member, 24 B per
//! 22 B list item. Amalgam's targets: at most half of that for the large
//! hash, sets and sorted set, no more than Redis for lists.
//!
//! ## Representations
//! Every type has two forms, Redis's thresholds decide (config names and
//! defaults in [`Thresholds`]), and a value converts from compact to large
//! once, never back (as Redis 7.0):
//!
//! | type | compact (one allocation) | large |
//! |---|---|---|
//! | hash | [`pack`]: entries `field, value` | [`arena`] entries + a SwissTable of 4-byte handles |
//! | set | intset (sorted integers) or [`pack`] | [`arena::Table`]: elements (integers as their minimal little-endian bytes) + a SwissTable of handles |
//! | sorted set | [`pack`]: `member, score` sorted by (score, member) | [`arena`] entries + member table + an order-statistic B-tree of handles |
//! | list | one [`pack`] | a deque of [`pack`] chunks (Redis's quicklist); also a small list the server finds written often (`List::to_large`) or a list past 1 KiB written again (`List::to_large_long`) |
//! | stream | — (always large) | a B-tree of nodes of up to 100 entries, IDs delta-encoded, fields shared with the node's first entry (Redis's radix tree of listpacks); consumer groups beside it |
//!
//! * **Compact forms are bytes.** A compact value is a `Vec<u8>` whose
//!   contents are the whole value, with no pointers: the server stores it
//!   as an engine item's value, readers query it in place through
//!   borrowed views (optimistic, lock-free, as for strings) and a write
//!   builds the next version (bounded: at most the threshold's entries).
//! * **Large forms are mutated in place**, O(1) or O(log n) per element,
//!   never copied whole on a single-element write. Element bytes live in
//!   an [`arena`] of fixed-size pages addressed by 4-byte handles, so an
//!   element costs its payload, a 1–2 byte length, and a table slot
//!   (5 bytes at the table's load factor), instead of Redis's
//!   24-byte entry, two headers and malloc's rounding.
//! * **True size.** `mem_bytes` methods report
//!   the bytes the value holds from the allocator (capacities, not
//!   lengths), kept incrementally so the engine can charge `-m` exactly.
//! * **Snapshots.** Every value encodes to and decodes from one
//!   self-describing byte string (`encode` / `decode`), whatever its size.
//! * **The log.** A change of a large value in place is logged as one
//!   [`op::Op`] — the command's effect (SPOP as the members it removed,
//!   HINCRBYFLOAT as the value set) — which [`op::Op::apply`] replays.
//!
//! ## Files
//! | file | what |
//! |---|---|
//! | `varint.rs` | the length prefix every encoding shares |
//! | `pack.rs` | the compact, contiguous encoding (Redis's listpack idea) |
//! | `arena.rs`, `arena/table.rs` | paged byte arena with 4-byte handles; the keyed large form hash and set share |
//! | `hash.rs`, `hash/ld.rs` | hash; HINCRBYFLOAT's `long double` arithmetic and printing in software |
//! | `set.rs`, `set/intset.rs`, `set/algebra.rs` | set: intset, pack, table; SINTER/SUNION/SDIFF |
//! | `zset.rs`, `zset/*.rs` | sorted set: pack; arena + member table + order-statistic B+tree (`tree.rs`); ranges, algebra |
//! | `geo.rs`, `geo/search.rs` | geo over sorted sets: Redis's 52-bit geohash, neighbour cells, search areas, distances; the nine-range search through a `ZView` |
//! | `list.rs`, `list/*.rs` | list: one chunk (`chunk.rs`), a deque of chunks (`quick.rs`, Redis's quicklist) |
//! | `value.rs` | a collection of any kind, as the engine stores it (tags, `Object`) |
//! | `op.rs` | one change of a collection as persistence logs it (its effect): encode, decode, apply |
//! | `stream.rs`, `stream/*.rs` | stream: nodes of delta-encoded entries sharing their fields (`node.rs`) in an ordered map; IDs (`id.rs`); consumer groups (`group.rs`). Always an object (no compact form of its own) |
//! | `hll.rs`, `hll/*.rs` | HyperLogLog: not a collection but Redis's string encoding of one (dense, sparse), its operations and Ertl's estimator, byte for byte as Redis 7.0 |
#![forbid(unsafe_code)]

pub mod arena;
pub mod geo;
pub mod hash;
pub mod hll;
pub mod list;
pub mod op;
pub mod pack;
pub mod set;
pub mod stream;
pub mod value;
pub mod varint;
pub mod zset;

/// Spare bytes a copy of a compact value gets for the write about to
/// change it: one more small entry (an LPUSH or HSET of a short member)
/// then fits without a second allocation and copy of the whole value.
pub const WRITE_SLACK_BYTES: usize = 64;

/// A compact value's bytes copied for a write ([`WRITE_SLACK_BYTES`]).
pub(crate) fn writable_copy(bytes: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(bytes.len() + WRITE_SLACK_BYTES);
    v.extend_from_slice(bytes);
    v
}

/// The collection kinds, as Redis's TYPE names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Hash,
    List,
    Set,
    ZSet,
    Stream,
}

impl Kind {
    /// TYPE's reply.
    pub fn type_name(self) -> &'static str {
        match self {
            Kind::Hash => "hash",
            Kind::List => "list",
            Kind::Set => "set",
            Kind::ZSet => "zset",
            Kind::Stream => "stream",
        }
    }
}

/// When a compact value converts to its large form: Redis 7's config
/// parameters, under their names (legacy `*-ziplist-*` aliases are the
/// server's business), with Debian redis-server 7.0's defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Thresholds {
    /// `hash-max-listpack-entries`: more fields than this → large.
    pub hash_max_listpack_entries: usize,
    /// `hash-max-listpack-value`: a field or value longer → large.
    pub hash_max_listpack_value: usize,
    /// `set-max-intset-entries`: an all-integer set with more members → large.
    pub set_max_intset_entries: usize,
    /// `set-max-listpack-entries` (Redis 7.2): a string set with more
    /// members than this → large.
    pub set_max_listpack_entries: usize,
    /// `set-max-listpack-value` (Redis 7.2).
    pub set_max_listpack_value: usize,
    /// `zset-max-listpack-entries`.
    pub zset_max_listpack_entries: usize,
    /// `zset-max-listpack-value`.
    pub zset_max_listpack_value: usize,
    /// `list-max-listpack-size`: positive, entries per chunk; -1..=-5, a
    /// chunk's bytes at most 4, 8, 16, 32, 64 KiB. A list that fits one
    /// chunk is compact.
    pub list_max_listpack_size: i64,
    /// `hll-sparse-max-bytes`: a sparse HyperLogLog that would grow past
    /// this many bytes (its header included) turns dense ([`hll`]).
    pub hll_sparse_max_bytes: usize,
    /// `stream-node-max-entries`: a stream node takes no more entries
    /// (deleted ones included) than this; 0: no bound ([`stream`]).
    pub stream_node_max_entries: usize,
    /// `stream-node-max-bytes`: a stream node takes no entry once its
    /// bytes would reach this; 0: no bound.
    pub stream_node_max_bytes: usize,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            hash_max_listpack_entries: 512,
            hash_max_listpack_value: 64,
            set_max_intset_entries: 512,
            set_max_listpack_entries: 128,
            set_max_listpack_value: 64,
            zset_max_listpack_entries: 128,
            zset_max_listpack_value: 64,
            list_max_listpack_size: -2,
            hll_sparse_max_bytes: hll::SPARSE_MAX_BYTES_DEFAULT,
            stream_node_max_entries: stream::NODE_ENTRIES_MAX as usize,
            stream_node_max_bytes: stream::NODE_BYTES_MAX,
        }
    }
}

/// A byte string that does not decode as the value it claims to be
/// (a damaged snapshot or log record).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Corrupt;

impl std::fmt::Display for Corrupt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("corrupt collection encoding")
    }
}

impl std::error::Error for Corrupt {}
