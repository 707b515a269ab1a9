//! Eviction policies for cache mode (issue 4), behind one trait.
//!
//! # Where a policy sits
//!
//! Cache mode stores items in a log of segments (`docs/cache-mode.md`):
//! a writer appends each new item to a segment of the queue the policy
//! names ([`Policy::admit`]); when memory runs short, the oldest segment of
//! the queue the policy names ([`Policy::victim`]) is reclaimed whole, and
//! for every item still live in it the policy answers [`Policy::reclaim`]:
//! evict it, or keep it by copying it to the head of a queue with a new
//! frequency. FIFO with reinsertion is CLOCK with the log's head as the
//! hand, so per-item policies run on a log that frees memory a segment at a
//! time, whatever the item sizes (no size classes, so no calcification).
//!
//! # The contract
//!
//! * **Frequency** is a small counter per item, `0..=freq_max()`, kept in
//!   the item header (2 bits). A GET hit raises it by one while it is below
//!   `freq_max()` and otherwise writes nothing, so a hot item's header is
//!   written at most `freq_max()` times per pass of the log and the GET path
//!   takes no lock and writes no line shared with other items. The policy
//!   only chooses `freq_max()`; the engine does the increment.
//! * **`admit`** is called by any writer thread, concurrently, once per new
//!   item (insert or overwrite). It must be cheap and lock-free.
//! * **`reclaim`** is called by the reclaiming thread for each live item of
//!   the victim segment, in log order (oldest first), never concurrently
//!   with itself. `Keep` must make progress: a policy keeps an item only
//!   with a lower frequency than it had, or moves it to another queue, so
//!   every item is evicted after at most `freq_max() + 1` passes without a
//!   hit. (The engine may still evict a kept item when it has no free
//!   segment to copy it to.)
//! * **`victim`** picks the queue whose oldest segment goes next from the
//!   bytes each queue holds; it must name a non-empty queue when any is.
//! * Dead items (overwritten, deleted, expired, flushed) are skipped by the
//!   engine and never reach the policy.
//!
//! # The policies (one file each)
//!
//! | `--eviction` | file | queues | freq_max | source |
//! |---|---|---|---|---|
//! | `clock` | `clock.rs` | Main | 1 | MemC3 §4 (CLOCK, one bit per item) |
//! | `s3fifo` | `s3fifo.rs` | Small (10%, settable at run time) + Main + ghost | 3 | Yang et al., SOSP '23 |
//! | `none` | — | — | — | store mode: a full store answers out of memory |
//!
//! A cache switches between `clock` and `s3fifo` at run time
//! (`Store::set_eviction`): both are built at start and one word names
//! the one in force, so every policy must accept the state another leaves
//! (frequencies up to [`FREQ_LIMIT`], segments in either queue: CLOCK's
//! `victim` names Small while anything is left there).
//!
//! [`Model`] runs a policy over an item-granularity log (each item its own
//! segment): the exact order the algorithm evicts in, for tests that dump
//! the queues and compare, and for replaying key traces to compare miss
//! ratios without a server.

mod clock;
mod model;
mod s3fifo;

pub use clock::Clock;
pub use model::Model;
pub use s3fifo::{S3Fifo, GHOST_ENTRIES_MIN, SMALL_QUEUE_PERCENT, SMALL_QUEUE_PERCENT_MAX, SMALL_QUEUE_PERCENT_MIN};

use std::fmt;
use std::str::FromStr;

/// Largest item frequency any policy may use: the item header keeps 2 bits.
///
/// ```
/// assert_eq!(amalgam_engine::evict::FREQ_LIMIT, 3);
/// ```
pub const FREQ_LIMIT: u8 = 3;

/// A FIFO queue of segments. Policies with one queue use [`Queue::Main`].
///
/// ```
/// use amalgam_engine::evict::Queue;
/// assert_eq!(Queue::ALL, [Queue::Small, Queue::Main]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Queue {
    /// S3-FIFO's probationary queue for new items.
    Small,
    /// The main queue.
    Main,
}

impl Queue {
    /// Every queue, in index order.
    pub const ALL: [Queue; 2] = [Queue::Small, Queue::Main];

    /// Position in [`Queue::ALL`].
    ///
    /// ```
    /// assert_eq!(amalgam_engine::evict::Queue::Main.index(), 1);
    /// ```
    pub fn index(self) -> usize {
        self as usize
    }
}

/// What happens to a live item whose segment is reclaimed.
///
/// ```
/// use amalgam_engine::evict::{Queue, Verdict};
/// let v = Verdict::Keep { queue: Queue::Main, freq: 0 };
/// assert_ne!(v, Verdict::Evict);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Unlink the item; its memory goes with the segment.
    Evict,
    /// Copy the item to the head of `queue` with frequency `freq`.
    Keep {
        /// Queue the copy joins.
        queue: Queue,
        /// The copy's frequency.
        freq: u8,
    },
}

/// An eviction policy: the contract is in this module's documentation.
///
/// ```
/// use amalgam_engine::evict::{Clock, Policy, Queue, Verdict};
/// let p = Clock::new();
/// assert_eq!(p.admit(42), Queue::Main);
/// assert_eq!(p.reclaim(Queue::Main, 1, 42), Verdict::Keep { queue: Queue::Main, freq: 0 });
/// assert_eq!(p.reclaim(Queue::Main, 0, 42), Verdict::Evict);
/// ```
pub trait Policy: Send + Sync + fmt::Debug {
    /// The `--eviction` name.
    fn name(&self) -> &'static str;
    /// Highest frequency a GET hit raises an item to (at most [`FREQ_LIMIT`]).
    fn freq_max(&self) -> u8;
    /// The queue a new item with this key hash is written to.
    fn admit(&self, key_hash: u64) -> Queue;
    /// The fate of a live item of frequency `freq` at the head of `queue`.
    fn reclaim(&self, queue: Queue, freq: u8, key_hash: u64) -> Verdict;
    /// The queue whose oldest segment is reclaimed next, given the bytes
    /// each queue holds (indexed by [`Queue::index`]).
    fn victim(&self, bytes: [usize; 2]) -> Queue;
    /// Bytes of memory the policy itself may make resident (S3-FIFO's
    /// ghost); 0 by default. Sized from the budget when the store is made
    /// and not charged to it: the fixed overhead on top of `-m`
    /// (`Stats::policy_bytes`, the server's `eviction_policy_bytes`).
    ///
    /// ```
    /// use amalgam_engine::evict::{Clock, Policy, S3Fifo};
    /// assert_eq!(Clock::new().memory_bytes(), 0);
    /// assert!(S3Fifo::new(1000).memory_bytes() >= 2000);
    /// ```
    fn memory_bytes(&self) -> usize {
        0
    }
}

/// Which live items a reclamation may evict, and how it ranks them when
/// that is not the policy's business: the first half of Redis's
/// `maxmemory-policy` (`allkeys-*` / `volatile-*`), the policy in force
/// ([`Eviction`]) being the ranking of the rest. Set at run time with
/// `Store::set_scope`; `docs/cache-mode.md` § "Redis's policies" maps the
/// eight names onto the pair.
///
/// * [`Scope::AllKeys`]: every live item is the policy's to decide.
/// * [`Scope::Volatile`]: only items with a TTL are; an item without one
///   is kept (copied to Main with its frequency) whatever the policy says.
/// * [`Scope::VolatileTtl`]: as `Volatile`, and of a reclaimed segment's
///   items with a TTL those expiring no later than the median of their
///   deadlines go, the rest are kept: the soonest-expiring half of each
///   segment reaching the log's head, Redis's `volatile-ttl` at the log's
///   granularity (Redis samples `maxmemory-samples` keys per eviction).
///
/// A reclamation under a volatile scope that frees nothing (every live
/// item kept, or no free segment to copy a kept one to, in which case the
/// segment goes back to its queue's tail with what it still holds) reports
/// that it reclaimed nothing, so writers answer out of memory rather than
/// walk the log again (`reclaim.rs`, "Volatile scopes").
///
/// ```
/// use amalgam_engine::evict::Scope;
/// assert!(!Scope::AllKeys.volatile());
/// assert!(Scope::VolatileTtl.volatile());
/// assert_eq!(Scope::from_index(Scope::Volatile.index()), Scope::Volatile);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Scope {
    /// Any key may be evicted (Redis's `allkeys-*`).
    #[default]
    AllKeys,
    /// Only keys with a TTL, ranked by the policy (`volatile-lru`,
    /// `volatile-lfu`, `volatile-random`).
    Volatile,
    /// Only keys with a TTL, the soonest to expire first (`volatile-ttl`).
    VolatileTtl,
}

impl Scope {
    /// Whether items without a TTL are never evicted.
    pub fn volatile(self) -> bool {
        self != Scope::AllKeys
    }

    /// The scope as one byte (`Cache::scope`).
    pub fn index(self) -> u8 {
        self as u8
    }

    /// The scope [`Scope::index`] gave (anything else: `AllKeys`).
    pub fn from_index(i: u8) -> Scope {
        match i {
            1 => Scope::Volatile,
            2 => Scope::VolatileTtl,
            _ => Scope::AllKeys,
        }
    }
}

/// The `--eviction` choice.
///
/// ```
/// use amalgam_engine::evict::Eviction;
/// assert_eq!("s3fifo".parse::<Eviction>(), Ok(Eviction::S3Fifo));
/// assert_eq!(Eviction::Clock.to_string(), "clock");
/// assert!("lru".parse::<Eviction>().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Eviction {
    /// Store mode: nothing is evicted; a full store refuses writes.
    #[default]
    None,
    /// CLOCK (MemC3 §4).
    Clock,
    /// S3-FIFO (SOSP '23).
    S3Fifo,
}

impl Eviction {
    /// Every choice, as `--eviction` spells it.
    pub const NAMES: [&'static str; 3] = ["none", "clock", "s3fifo"];

    /// The policy object, or None for store mode. `items_hint` sizes
    /// S3-FIFO's ghost (about as many entries as the cache holds items).
    ///
    /// ```
    /// use amalgam_engine::evict::Eviction;
    /// assert!(Eviction::None.policy(1000).is_none());
    /// assert_eq!(Eviction::S3Fifo.policy(1000).unwrap().name(), "s3fifo");
    /// ```
    pub fn policy(self, items_hint: usize) -> Option<Box<dyn Policy>> {
        match self {
            Eviction::None => None,
            Eviction::Clock => Some(Box::new(Clock::new())),
            Eviction::S3Fifo => Some(Box::new(S3Fifo::new(items_hint))),
        }
    }
}

impl fmt::Display for Eviction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(Eviction::NAMES[*self as usize])
    }
}

impl FromStr for Eviction {
    type Err = String;
    fn from_str(s: &str) -> Result<Eviction, String> {
        match s {
            "none" => Ok(Eviction::None),
            "clock" => Ok(Eviction::Clock),
            "s3fifo" => Ok(Eviction::S3Fifo),
            _ => Err(format!("unknown eviction policy '{s}' (one of: {})", Eviction::NAMES.join(", "))),
        }
    }
}
