//! CLOCK (MemC3 §4 "Cache Eviction"): one reference bit per item; the hand
//! evicts the first item whose bit is clear and clears the bits it passes.
//!
//! On the segment log the hand is the log's head: reclaiming a segment
//! visits its items in insertion order, and "clear the bit and move on" is
//! "copy the item to the head of the log with the bit cleared". An item is
//! therefore evicted after one full pass without a hit, as with MemC3's
//! circular array of bits.

use super::{Policy, Queue, Verdict};

/// CLOCK with one reference bit.
///
/// ```
/// use amalgam_engine::evict::{Clock, Policy, Queue};
/// let p = Clock::new();
/// assert_eq!(p.freq_max(), 1);
/// assert_eq!(p.victim([0, 4096]), Queue::Main);
/// ```
#[derive(Debug, Default)]
pub struct Clock;

impl Clock {
    /// The policy (it has no state of its own: the bits live in the items).
    ///
    /// ```
    /// let _ = amalgam_engine::evict::Clock::new();
    /// ```
    pub fn new() -> Clock {
        Clock
    }
}

impl Policy for Clock {
    fn name(&self) -> &'static str {
        "clock"
    }

    fn freq_max(&self) -> u8 {
        1
    }

    fn admit(&self, _key_hash: u64) -> Queue {
        Queue::Main
    }

    fn reclaim(&self, _queue: Queue, freq: u8, _key_hash: u64) -> Verdict {
        if freq > 0 {
            Verdict::Keep { queue: Queue::Main, freq: 0 }
        } else {
            Verdict::Evict
        }
    }

    /// Main, CLOCK's one queue; but first whatever S3-FIFO left in Small
    /// when the policy was switched at run time (`Store::set_eviction`),
    /// which nothing would reclaim otherwise (never the case in a cache
    /// that started with CLOCK: Small stays empty).
    fn victim(&self, bytes: [usize; 2]) -> Queue {
        if bytes[Queue::Small.index()] > 0 {
            Queue::Small
        } else {
            Queue::Main
        }
    }
}
