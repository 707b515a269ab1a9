//! An item-granularity model of the segment log: each item is its own
//! segment, so a policy's decisions come out in the exact order the
//! algorithm defines. Used by the exact-order tests and to replay key
//! traces (miss ratios of the policies, no server needed).
//!
//! The model keeps the log's accounting: an overwritten or deleted item
//! still occupies its queue's bytes until the head reaches it (as a dead
//! item occupies its segment), and a kept item is copied to the tail of
//! its new queue.

use super::{Policy, Queue, Verdict};
use std::collections::{HashMap, VecDeque};

/// One log entry: key, generation, bytes.
#[derive(Clone, Copy, Debug)]
struct Entry {
    key: u64,
    gen: u64,
    bytes: usize,
}

/// The live item of a key.
#[derive(Clone, Copy, Debug)]
struct Live {
    gen: u64,
    queue: Queue,
    freq: u8,
}

/// A byte-bounded cache driven by a [`Policy`].
///
/// ```
/// use amalgam_engine::evict::{Clock, Model, Queue};
/// let mut m = Model::new(Box::new(Clock::new()), 3);
/// for k in [1, 2, 3] {
///     m.set(k, 1);
/// }
/// assert!(m.get(1));          // 1's bit is set
/// m.set(4, 1);                // the hand passes 1 (clears it) and evicts 2
/// assert_eq!(m.evicted(), &[2]);
/// assert_eq!(m.dump(Queue::Main), vec![(3, 0), (1, 0), (4, 0)]);
/// ```
#[derive(Debug)]
pub struct Model {
    policy: Box<dyn Policy>,
    capacity: usize,
    queues: [VecDeque<Entry>; 2],
    bytes: [usize; 2],
    live: HashMap<u64, Live>,
    next_gen: u64,
    evicted: Vec<u64>,
    hits: u64,
    misses: u64,
    /// The key hash the policy sees (see [`Model::with_key_hash`]).
    key_hash: fn(u64) -> u64,
}

/// The key hash a policy sees for a model key (SplitMix64's finalizer, so
/// small integer keys spread over the ghost).
fn hash(key: u64) -> u64 {
    let mut z = key.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Model {
    /// An empty cache of `capacity` bytes.
    ///
    /// ```
    /// use amalgam_engine::evict::{Model, S3Fifo};
    /// let m = Model::new(Box::new(S3Fifo::new(100)), 100);
    /// assert_eq!(m.len(), 0);
    /// ```
    pub fn new(policy: Box<dyn Policy>, capacity: usize) -> Model {
        Model {
            policy,
            capacity,
            queues: [VecDeque::new(), VecDeque::new()],
            bytes: [0; 2],
            live: HashMap::new(),
            next_gen: 0,
            evicted: Vec::new(),
            hits: 0,
            misses: 0,
            key_hash: hash,
        }
    }

    /// The same model with another key hash, so a test can give the policy
    /// the hashes a real store computes for the same keys (S3-FIFO's ghost
    /// then collides exactly where the store's does).
    ///
    /// ```
    /// use amalgam_engine::evict::{Model, S3Fifo};
    /// let m = Model::new(Box::new(S3Fifo::new(100)), 100).with_key_hash(|k| k * 7);
    /// assert!(m.is_empty());
    /// ```
    pub fn with_key_hash(mut self, key_hash: fn(u64) -> u64) -> Model {
        self.key_hash = key_hash;
        self
    }

    /// A read: true on a hit, which raises the item's frequency.
    ///
    /// ```
    /// # use amalgam_engine::evict::{Clock, Model};
    /// let mut m = Model::new(Box::new(Clock::new()), 10);
    /// assert!(!m.get(1));
    /// m.set(1, 1);
    /// assert!(m.get(1));
    /// ```
    pub fn get(&mut self, key: u64) -> bool {
        let max = self.policy.freq_max();
        match self.live.get_mut(&key) {
            Some(l) => {
                l.freq = (l.freq + 1).min(max);
                self.hits += 1;
                true
            }
            None => {
                self.misses += 1;
                false
            }
        }
    }

    /// A write of `bytes` (at most the capacity): reclaims from the heads
    /// until it fits, then appends to the queue the policy admits it to.
    ///
    /// ```
    /// # use amalgam_engine::evict::{Clock, Model};
    /// let mut m = Model::new(Box::new(Clock::new()), 2);
    /// m.set(1, 1);
    /// m.set(1, 1); // the old copy is dead but still occupies its byte
    /// m.set(2, 1); // reclaiming it makes room without evicting anything live
    /// assert_eq!(m.evicted(), &[] as &[u64]);
    /// ```
    pub fn set(&mut self, key: u64, bytes: usize) {
        assert!(bytes <= self.capacity, "an item larger than the cache");
        self.live.remove(&key);
        // Bounded: each step frees a dead entry, evicts, or lowers a
        // frequency / moves Small to Main (the contract's progress rule).
        let entries: usize = self.queues.iter().map(VecDeque::len).sum();
        let mut steps = (entries + 1) * (usize::from(super::FREQ_LIMIT) + 3);
        while self.bytes[0] + self.bytes[1] + bytes > self.capacity {
            assert!(steps > 0, "the policy does not make progress");
            steps -= 1;
            self.reclaim_one();
        }
        let queue = self.policy.admit((self.key_hash)(key));
        self.push(queue, key, bytes, 0);
    }

    /// Removes a key (its bytes stay in the log until reclaimed).
    ///
    /// ```
    /// # use amalgam_engine::evict::{Clock, Model};
    /// let mut m = Model::new(Box::new(Clock::new()), 10);
    /// m.set(1, 1);
    /// m.delete(1);
    /// assert!(!m.get(1));
    /// ```
    pub fn delete(&mut self, key: u64) {
        self.live.remove(&key);
    }

    fn push(&mut self, queue: Queue, key: u64, bytes: usize, freq: u8) {
        let gen = self.next_gen;
        self.next_gen += 1;
        self.queues[queue.index()].push_back(Entry { key, gen, bytes });
        self.bytes[queue.index()] += bytes;
        self.live.insert(key, Live { gen, queue, freq });
    }

    /// Reclaims the head entry of the victim queue.
    fn reclaim_one(&mut self) {
        let queue = self.policy.victim(self.bytes);
        let Some(e) = self.queues[queue.index()].pop_front() else { return };
        self.bytes[queue.index()] -= e.bytes;
        let Some(l) = self.live.get(&e.key).copied().filter(|l| l.gen == e.gen) else { return };
        debug_assert_eq!(l.queue, queue);
        match self.policy.reclaim(queue, l.freq, (self.key_hash)(e.key)) {
            Verdict::Evict => {
                self.live.remove(&e.key);
                self.evicted.push(e.key);
            }
            Verdict::Keep { queue: to, freq } => {
                assert!(to != queue || freq < l.freq, "Keep without progress breaks the contract");
                self.push(to, e.key, e.bytes, freq);
            }
        }
    }

    /// Live items of a queue, head (next to reclaim) first, with their
    /// frequencies.
    ///
    /// ```
    /// # use amalgam_engine::evict::{Model, Queue, S3Fifo};
    /// let mut m = Model::new(Box::new(S3Fifo::new(0)), 10);
    /// m.set(5, 1);
    /// assert_eq!(m.dump(Queue::Small), vec![(5, 0)]);
    /// ```
    pub fn dump(&self, queue: Queue) -> Vec<(u64, u8)> {
        self.queues[queue.index()]
            .iter()
            .filter_map(|e| self.live.get(&e.key).filter(|l| l.gen == e.gen).map(|l| (e.key, l.freq)))
            .collect()
    }

    /// Keys evicted so far, in order.
    ///
    /// ```
    /// # use amalgam_engine::evict::{Clock, Model};
    /// let m = Model::new(Box::new(Clock::new()), 1);
    /// assert!(m.evicted().is_empty());
    /// ```
    pub fn evicted(&self) -> &[u64] {
        &self.evicted
    }

    /// Live items.
    ///
    /// ```
    /// # use amalgam_engine::evict::{Clock, Model};
    /// let m = Model::new(Box::new(Clock::new()), 1);
    /// assert!(m.is_empty());
    /// ```
    pub fn len(&self) -> usize {
        self.live.len()
    }

    /// True if no item is live.
    ///
    /// ```
    /// # use amalgam_engine::evict::{Clock, Model};
    /// assert!(Model::new(Box::new(Clock::new()), 1).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    /// (hits, misses) of [`Model::get`] so far.
    ///
    /// ```
    /// # use amalgam_engine::evict::{Clock, Model};
    /// let mut m = Model::new(Box::new(Clock::new()), 1);
    /// m.get(1);
    /// assert_eq!(m.hits_misses(), (0, 1));
    /// ```
    pub fn hits_misses(&self) -> (u64, u64) {
        (self.hits, self.misses)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evict::{Clock, S3Fifo};

    fn keys(d: &[(u64, u8)]) -> Vec<u64> {
        d.iter().map(|&(k, _)| k).collect()
    }

    /// MemC3 §4's example in spirit: the hand clears set bits and evicts
    /// the first clear one, wrapping around the log.
    #[test]
    fn clock_exact_order() {
        let mut m = Model::new(Box::new(Clock::new()), 4);
        for k in 1..=4 {
            m.set(k, 1);
        }
        assert!(m.get(1) && m.get(3));
        m.set(5, 1); // 1 kept (bit cleared), 2 evicted
        assert_eq!(m.evicted(), &[2]);
        assert_eq!(m.dump(Queue::Main), vec![(3, 1), (4, 0), (1, 0), (5, 0)]);
        m.set(6, 1); // 3 kept, 4 evicted
        assert_eq!(m.evicted(), &[2, 4]);
        assert!(m.get(5));
        m.set(7, 1); // 1 evicted (its bit was cleared and not set again)
        assert_eq!(m.dump(Queue::Main), vec![(5, 1), (3, 0), (6, 0), (7, 0)]);
        m.set(8, 1); // 5 kept (cleared), 3 evicted
        assert_eq!(m.evicted(), &[2, 4, 1, 3]);
        assert_eq!(m.dump(Queue::Main), vec![(6, 0), (7, 0), (5, 0), (8, 0)]);
        assert!(m.get(6));
        m.set(9, 1); // 6 kept, 7 evicted
        assert_eq!(m.evicted(), &[2, 4, 1, 3, 7]);
        assert_eq!(keys(&m.dump(Queue::Main)), vec![5, 8, 6, 9]);
    }

    #[test]
    fn s3fifo_exact_order_and_ghost() {
        // 10 bytes: Small is reclaimed while it holds >= 10% (1 byte).
        let mut m = Model::new(Box::new(S3Fifo::new(0)), 10);
        for k in 1..=10 {
            m.set(k, 1);
        }
        assert_eq!(keys(&m.dump(Queue::Small)), (1..=10).collect::<Vec<_>>());
        assert!(m.get(2) && m.get(2) && m.get(4));
        m.set(11, 1); // Small head 1: not accessed -> evicted (ghost)
        assert_eq!(m.evicted(), &[1]);
        m.set(12, 1); // 2 accessed -> Main (freq reset); 3 evicted
        assert_eq!(m.evicted(), &[1, 3]);
        assert_eq!(m.dump(Queue::Main), vec![(2, 0)]);
        m.set(1, 1); // 1 is in the ghost: admitted to Main; 4 -> Main, 5 evicted
        assert_eq!(m.evicted(), &[1, 3, 5]);
        assert_eq!(m.dump(Queue::Main), vec![(2, 0), (4, 0), (1, 0)]);
        assert_eq!(keys(&m.dump(Queue::Small)), vec![6, 7, 8, 9, 10, 11, 12]);
    }

    /// One-time scans of cold keys: S3-FIFO keeps the hot set, CLOCK lets
    /// the scan flush it.
    #[test]
    fn s3fifo_resists_a_scan_that_flushes_clock() {
        let run = |policy: Box<dyn Policy>| {
            let mut m = Model::new(policy, 100);
            let hot: Vec<u64> = (0..50).collect();
            for _ in 0..4 {
                for &k in &hot {
                    if !m.get(k) {
                        m.set(k, 1);
                    }
                }
            }
            for cold in 1000..1200 {
                m.set(cold, 1);
            }
            hot.iter().filter(|&&k| m.get(k)).count()
        };
        let clock = run(Box::new(Clock::new()));
        let s3 = run(Box::new(S3Fifo::new(100)));
        assert_eq!(s3, 50, "S3-FIFO keeps every hot key through the scan");
        assert!(clock < 50, "CLOCK loses hot keys to the scan ({clock} kept)");
    }

    #[test]
    fn dead_entries_free_their_bytes_without_evicting() {
        let mut m = Model::new(Box::new(S3Fifo::new(0)), 3);
        m.set(1, 1);
        m.set(2, 1);
        m.delete(1);
        m.set(3, 1);
        m.set(4, 1); // reclaims the dead 1, evicts nothing
        assert_eq!(m.evicted(), &[] as &[u64]);
        assert_eq!(m.len(), 3);
    }
}
