//! Multi-key atomicity: [`Store::atomically`] runs a closure while the
//! buckets of a set of keys are held, so that no other thread, writer or
//! reader, on any worker, sees some of those keys changed and others not.
//! Redis's MULTI/EXEC and its multi-key commands (SMOVE, LMOVE, RENAME,
//! MSET, SINTERSTORE …) are built on it in the server.
//!
//! # Why bucket locks, and not a lock of its own
//!
//! Redis gets atomicity from one thread. Dragonfly runs transactions
//! through VLL (Ren, Thomson, Abadi, VLDB 2012): each shard queues the
//! transaction's key locks in arrival order so no lock manager is needed.
//! Here every key already has a lock, its bucket's (`table.rs`), which every
//! writer takes, so a transaction needs nothing beside it: it takes the
//! buckets of all its keys, runs, and releases them. The single-key paths
//! are unchanged: a writer still takes one bucket lock; a reader still
//! takes none and writes nothing. What a transaction adds to them is one
//! bit of the lock word, HELD, which the readers' existing lock-word test
//! looks at too (`Table::probe_line` tests `MOVED | HELD` where it tested
//! `MOVED`: the same instruction). A reader that finds HELD falls to the
//! general lookup, which retries and then waits on the lock like a
//! writer; so a reader arriving while a transaction runs sees all of its
//! changes or none.
//!
//! A reader that read the lock word before the transaction took the
//! bucket may still return a slot it loads after the transaction wrote it
//! (hits are not version-checked, `table.rs`). That is linearizable: the
//! transaction locks every bucket before it changes any, so anything that
//! read one of its new values ran after all the buckets were taken, and
//! every later read of its keys waits for it to finish.
//!
//! # No deadlock
//!
//! A transaction locks its buckets in one global order and holds each
//! until the end. The order is the key's bucket bits (`hash >> 16`, the
//! index in a table of any size is their low bits) read bit-reversed: keys
//! that share a bucket in a table of 2^n buckets share their low n bits,
//! so in this order every bucket of every table generation is one
//! contiguous interval, and the two buckets an expansion splits a bucket
//! into are the two halves of its interval. The buckets that can be
//! locked at one moment are disjoint intervals (a successor's bucket is
//! locked only after its predecessor is MOVED, and a MOVED bucket is
//! never locked again), so locking in key order is locking in interval
//! order, whatever the expansion is doing, and two transactions cannot
//! wait for each other in a cycle. The other lockers hold one bucket and
//! wait for nothing while they hold it: a writer (its critical section is
//! one chain), the expand thread (migrates one bucket; it never locks the
//! successor's buckets), the snapshot cursor and the sweeps. A bucket the
//! transaction holds cannot migrate under it (the migrator must lock it),
//! so routing a later key of the same bucket finds the same bucket.
//!
//! Inside the closure the thread works through the ordinary API: a write
//! to a held bucket finds LOCKED, sees in its thread-local held set that
//! the bucket is its own, and proceeds without locking ("borrowed" guard,
//! released by the transaction); a read of a held bucket reads it
//! directly. The closure must touch only the keys it declared (a key
//! outside them is locked out of order: the server declares every key a
//! command's key specifications name). It may block on nothing that waits
//! for a bucket: an object's lock is only ever waited for by holders of
//! its bucket or by single-key readers that wait for nothing else.
//!
//! Memory: a transaction is pinned for its whole run, and a pinned thread
//! cannot wait for a grace period, so in cache mode it makes room first
//! (`Inner::make_room`) and then takes from the reserve like any pinned
//! writer; past the reserve a write in it fails with OutOfMemory. Nor
//! does it evict outsized items (`outsized.rs`) as a writer outside a
//! transaction does: that takes the reclaimer's mutex and then other
//! buckets, which the maintenance thread takes in that order too, so a
//! transaction doing it could wait in a cycle (`Inner::make_room_now`).
//!
//! Memory of the held set: one word per bucket, in a thread-local vector
//! reused across transactions.
//!
//! # Growing the held set
//!
//! A Redis script may name a key it did not declare, after it wrote
//! (BullMQ's scripts INCR a job counter, then write the job's keys named
//! by the new id). The writes cannot be taken back, and waiting for the
//! new key's bucket at any moment would break the order above. So
//! [`Store::extend_transaction`] keeps the order's one invariant instead:
//! a transaction waits only for a bucket ranked after every bucket it
//! holds. The held keys' highest rank is kept (`RANK_MAX`); a key ranked
//! above it has its bucket waited for as the first locking does (its
//! bucket's interval lies wholly after every held one: the intervals are
//! disjoint and the key's rank is past every held key's), and the rank
//! rises to it. A key ranked below is only tried ([`Table::try_lock_held`],
//! a few rounds of backoff, never a wait on the holder): held by another
//! thread, the extension fails and the caller decides (the script ends
//! with an error, as before). No cycle can form: each transaction in a
//! cycle of waits would wait for a bucket ranked after every bucket it
//! holds, including the one the previous transaction waits for, so the
//! ranks would rise all around the cycle back to where they started.
//! The buckets taken this way are held in a second thread-local list
//! (`EXTRA`) and released with the others when the transaction ends.

use crate::store::{Pinned, Store};
use crate::table::{split_hash, Bucket, BucketGuard, TABLE_LOG2_MAX};
use std::cell::RefCell;

#[cfg(not(loom))]
thread_local! {
    /// The buckets this thread's transaction holds (their addresses).
    static HELD: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
    /// The highest lock rank of the keys the transaction holds.
    static RANK_MAX: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// The buckets [`Store::extend_transaction`] added, released with
    /// the transaction's own (module notes, "Growing the held set").
    static EXTRA: RefCell<Vec<BucketGuard<'static>>> = const { RefCell::new(Vec::new()) };
    /// Items the transaction published whose records the journal frames
    /// once the buckets are released (`Journal::record_large`), in order.
    static FILL: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}
#[cfg(loom)]
loom::thread_local! {
    static HELD: RefCell<Vec<usize>> = RefCell::new(Vec::new());
    static RANK_MAX: std::cell::Cell<u64> = std::cell::Cell::new(0);
    static EXTRA: RefCell<Vec<BucketGuard<'static>>> = RefCell::new(Vec::new());
    static FILL: RefCell<Vec<usize>> = RefCell::new(Vec::new());
}

/// Queues the item at `p`, which this thread's transaction published, for
/// `Journal::fill` when the transaction ends.
pub(crate) fn fill_later(p: *const u8) {
    FILL.with(|f| f.borrow_mut().push(p as usize));
}

/// True if the calling thread's transaction holds `b`. Only called on
/// slow paths (a HELD bucket), never on an uncontended lookup or write.
pub(crate) fn holds(b: &Bucket) -> bool {
    let a = b as *const Bucket as usize;
    HELD.with(|h| h.borrow().contains(&a))
}

/// Calls `Journal::fill` for the items the transaction queued
/// ([`fill_later`]) when dropped: after its buckets are released, while its
/// pin is held.
struct Fills<'a> {
    inner: &'a crate::store::Inner,
    _pin: &'a Pinned<'a>,
}

impl Drop for Fills<'_> {
    fn drop(&mut self) {
        let fill = FILL.with(|f| std::mem::take(&mut *f.borrow_mut()));
        let Some(j) = self.inner.journal.get() else { return };
        // Bounded: the items the transaction published.
        for p in fill {
            // SAFETY: an item this transaction published (`Inner::mutate`
            // queued it); its buckets are released, but the transaction's
            // pin (`_pin`, dropped after this) keeps its memory, and a
            // plain item's bytes never change once published.
            j.fill(unsafe { crate::store::ItemRef::new(p as *const u8) });
        }
    }
}

/// True if the calling thread is inside [`Store::atomically`].
pub(crate) fn active() -> bool {
    HELD.with(|h| !h.borrow().is_empty())
}

/// A key's place in the lock order (module notes): its bucket bits,
/// bit-reversed, so each bucket of any table size is an interval.
pub(crate) fn lock_rank(hash: u64) -> u64 {
    split_hash(hash).0.reverse_bits()
}

/// The buckets a transaction holds; dropping it releases them all.
struct Held<'t> {
    guards: Vec<BucketGuard<'t>>,
}

impl<'t> Held<'t> {
    fn push(&mut self, g: BucketGuard<'t>) {
        let a = g.bucket_addr();
        HELD.with(|h| h.borrow_mut().push(a));
        self.guards.push(g);
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        // Forget the buckets first: an unlocked bucket is no longer ours.
        HELD.with(|h| h.borrow_mut().clear());
        // Each guard's drop unlocks its bucket (a release store of the
        // next version, clearing LOCKED and HELD): those the transaction
        // grew by, then its own. Taken out of the thread-local before they
        // drop (a guard's drop reads no thread-local, but keep it simple).
        let extra = EXTRA.with(|e| std::mem::take(&mut *e.borrow_mut()));
        drop(extra);
        self.guards.clear();
    }
}

/// Why [`Store::extend_transaction`] could not add a key's bucket: the
/// caller is in no transaction, or the bucket ranks before one it holds
/// and another thread has it (module notes, "Growing the held set").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotHeld;

/// Backoff rounds [`Store::extend_transaction`] tries a bucket ranked
/// before one it holds (a single-key writer holds a bucket for one
/// chain's change: a few microseconds) before it gives up.
const EXTEND_TRIES_MAX: usize = 64;

impl Store {
    /// Runs `f` while the buckets of every key in `keys` are held: no
    /// other thread reads or writes any of these keys until `f` returns,
    /// so what `f` does to them (through this store's ordinary methods,
    /// on this thread) is seen by others all at once. See the module notes
    /// for the protocol and its deadlock argument.
    ///
    /// `f` must touch only these keys (other keys are reachable but locked
    /// out of order, which can deadlock against another transaction). A
    /// nested call runs `f` directly under the outer call's buckets.
    ///
    /// ```
    /// # use amalgam_engine::{Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// store.set(b"from", b"10", 0, Expiry::Never).unwrap();
    /// store.set(b"to", b"0", 0, Expiry::Never).unwrap();
    /// store.atomically(&[&b"from"[..], b"to"], || {
    ///     store.set(b"from", b"9", 0, Expiry::Never).unwrap();
    ///     store.set(b"to", b"1", 0, Expiry::Never).unwrap();
    /// });
    /// assert_eq!(store.get(b"to", |it| it.value().to_vec()).as_deref(), Some(&b"1"[..]));
    /// ```
    pub fn atomically<K: AsRef<[u8]>, R>(&self, keys: &[K], f: impl FnOnce() -> R) -> R {
        if active() {
            debug_assert!(keys.iter().all(|k| self.holds_key(k.as_ref())), "a nested transaction's keys are held");
            return f();
        }
        let inner = &*self.inner;
        inner.make_room(inner.epochs.local(&inner.shared));
        let pin = Pinned::new(inner);
        let mut hashes: Vec<u64> = keys.iter().map(|k| inner.hash(k.as_ref())).collect();
        hashes.sort_unstable_by_key(|&h| (lock_rank(h), h));
        hashes.dedup();
        // Declared between `pin` and `held`: dropped after the buckets are
        // released and before the pin, also when `f` panics (a place the
        // journal took must be filled, or the log would wait for it).
        let fills = Fills { inner, _pin: &pin };
        let mut held = Held { guards: Vec::with_capacity(hashes.len()) };
        RANK_MAX.with(|r| r.set(hashes.last().map_or(0, |&h| lock_rank(h))));
        for h in hashes {
            let mut t = pin.current().route(h);
            // Bounded: one step per table generation.
            for _ in 0..=TABLE_LOG2_MAX {
                let i = t.index(h);
                if holds(t.bucket(i)) {
                    // An earlier key's bucket (it cannot move while held).
                    break;
                }
                match t.lock_held(i) {
                    Some(g) => {
                        held.push(g);
                        break;
                    }
                    None => t = t.successor().expect("MOVED implies a successor"),
                }
            }
        }
        let r = f();
        drop(held);
        drop(fills);
        drop(pin);
        r
    }

    /// Inside [`Store::atomically`]: adds `key`'s bucket to the buckets
    /// held until the transaction ends, so that `f` may touch `key` too.
    /// A bucket ranked after every bucket held is waited for; one ranked
    /// before is only tried, and Err if another thread holds it (module
    /// notes, "Growing the held set"). Err outside a transaction.
    ///
    /// ```
    /// # use amalgam_engine::{Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// store.atomically(&[&b"counter"[..]], || {
    ///     store.set(b"counter", b"7", 0, Expiry::Never).unwrap();
    ///     // A key learned from what the transaction wrote.
    ///     store.extend_transaction(b"job:7").unwrap();
    ///     assert!(store.may_touch(b"job:7"));
    ///     store.set(b"job:7", b"payload", 0, Expiry::Never).unwrap();
    /// });
    /// assert!(store.extend_transaction(b"job:7").is_err());
    /// ```
    pub fn extend_transaction(&self, key: &[u8]) -> Result<(), NotHeld> {
        if !active() {
            return Err(NotHeld);
        }
        let inner = &*self.inner;
        // Nested in the transaction's own pin (pins count their depth),
        // which outlives every guard taken here (`Held`'s drop releases
        // them before `atomically` drops it).
        let pin = Pinned::new(inner);
        let h = inner.hash(key);
        let rank = lock_rank(h);
        let after = rank > RANK_MAX.with(std::cell::Cell::get);
        let mut t = pin.current().route(h);
        // Bounded: one step per table generation, and for a bucket ranked
        // before a held one, EXTEND_TRIES_MAX tries of each.
        for _ in 0..=TABLE_LOG2_MAX {
            let i = t.index(h);
            if holds(t.bucket(i)) {
                return Ok(());
            }
            let got = if after {
                t.lock_held(i).ok_or(true)
            } else {
                let backoff = crossbeam_utils::Backoff::new();
                let mut r = t.try_lock_held(i);
                for _ in 0..EXTEND_TRIES_MAX {
                    if !matches!(r, Err(false)) {
                        break;
                    }
                    backoff.snooze();
                    r = t.try_lock_held(i);
                }
                r
            };
            match got {
                Ok(g) => {
                    HELD.with(|held| held.borrow_mut().push(g.bucket_addr()));
                    // SAFETY: only the lifetime is changed. The guard
                    // borrows a table the transaction's pin keeps alive
                    // (an epoch pin retires no table while it lasts), and
                    // it is dropped by `Held`'s drop, before `atomically`
                    // drops that pin, also when `f` unwinds.
                    let g: BucketGuard<'static> = unsafe { std::mem::transmute::<BucketGuard<'_>, _>(g) };
                    EXTRA.with(|e| e.borrow_mut().push(g));
                    if after {
                        RANK_MAX.with(|r| r.set(rank));
                    }
                    return Ok(());
                }
                Err(true) => t = t.successor().expect("MOVED implies a successor"),
                Err(false) => return Err(NotHeld),
            }
        }
        unreachable!("routing is bounded by the table generations")
    }

    /// True if the calling thread is inside [`Store::atomically`].
    pub fn in_transaction(&self) -> bool {
        active()
    }

    /// True if the calling thread may touch `key` now: it is not inside
    /// [`Store::atomically`], or its transaction holds `key`'s bucket.
    /// Touching any other key from inside a transaction may wait for
    /// another transaction that waits for this one (module notes, "No
    /// deadlock"). For a command that learns its keys as it runs (SORT's
    /// BY and GET patterns name keys from a collection's contents), which
    /// asks before each.
    ///
    /// ```
    /// # use amalgam_engine::Store;
    /// let store = Store::new(Default::default()).unwrap();
    /// assert!(store.may_touch(b"any") && !store.in_transaction());
    /// store.atomically(&[&b"a"[..]], || {
    ///     assert!(store.in_transaction() && store.may_touch(b"a"));
    /// });
    /// ```
    pub fn may_touch(&self, key: &[u8]) -> bool {
        !active() || self.holds_key(key)
    }

    /// True if the calling thread's transaction holds `key`'s bucket.
    fn holds_key(&self, key: &[u8]) -> bool {
        let inner = &*self.inner;
        let pin = Pinned::new(inner);
        let (t, i) = pin.current().bucket_of(inner.hash(key));
        holds(t.bucket(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Expiry;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::{Arc, Barrier};

    /// Two keys in different buckets, the first ranked lower.
    fn low_and_high(store: &Store) -> (Vec<u8>, Vec<u8>) {
        let inner = &*store.inner;
        let pin = Pinned::new(inner);
        let bucket = |k: &[u8]| pin.current().bucket_of(inner.hash(k)).1;
        let (a, b) = (
            b"key:a".to_vec(),
            (0..).map(|i| format!("key:{i}").into_bytes()).find(|k| bucket(k) != bucket(b"key:a")).unwrap(),
        );
        if lock_rank(inner.hash(&a)) < lock_rank(inner.hash(&b)) {
            (a, b)
        } else {
            (b, a)
        }
    }

    #[test]
    fn a_transaction_grows_by_a_key_and_releases_it_at_its_end() {
        let store = Store::new(Default::default()).unwrap();
        let (low, high) = low_and_high(&store);
        for (first, later) in [(&low, &high), (&high, &low)] {
            store.atomically(&[first], || {
                assert!(!store.may_touch(later));
                store.extend_transaction(later).unwrap();
                assert!(store.may_touch(later));
                store.extend_transaction(later).unwrap(); // held: nothing to do
                store.set(later, b"v", 0, Expiry::Never).unwrap();
            });
            // Released: another thread takes it at once.
            std::thread::scope(|s| {
                s.spawn(|| store.set(later, b"w", 0, Expiry::Never).unwrap());
            });
        }
        assert_eq!(store.extend_transaction(&low), Err(NotHeld), "outside a transaction");
    }

    #[test]
    fn a_lower_ranked_bucket_held_elsewhere_is_refused_a_higher_one_is_waited_for() {
        let store = Arc::new(Store::new(Default::default()).unwrap());
        let (low, high) = low_and_high(&store);
        // Another transaction holds `low`: extending into it from one that
        // holds `high` would wait against the order, so it is refused.
        let (taken, done) = (Arc::new(Barrier::new(2)), Arc::new(Barrier::new(2)));
        let other = {
            let (store, low, taken, done) = (Arc::clone(&store), low.clone(), Arc::clone(&taken), Arc::clone(&done));
            std::thread::spawn(move || {
                store.atomically(&[&low], || {
                    taken.wait();
                    done.wait();
                })
            })
        };
        taken.wait();
        store.atomically(&[&high], || assert_eq!(store.extend_transaction(&low), Err(NotHeld)));
        done.wait();
        other.join().unwrap();
        // Another holds `high`: from one that holds `low` it is waited for,
        // and got once the other ends.
        let ended = Arc::new(AtomicBool::new(false));
        let taken = Arc::new(Barrier::new(2));
        let other = {
            let (store, high, taken, ended) =
                (Arc::clone(&store), high.clone(), Arc::clone(&taken), Arc::clone(&ended));
            std::thread::spawn(move || {
                store.atomically(&[&high], || {
                    taken.wait();
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    ended.store(true, Ordering::SeqCst);
                })
            })
        };
        taken.wait();
        store.atomically(&[&low], || {
            store.extend_transaction(&high).unwrap();
            assert!(ended.load(Ordering::SeqCst), "got only after the holder ended");
        });
        other.join().unwrap();
    }

    #[test]
    fn transactions_that_grow_never_deadlock_and_stay_atomic() {
        // Threads move units between counters in transactions that declare
        // one counter and grow by the others as they go; the total stays
        // and every thread finishes (a deadlock would hang the test).
        const COUNTERS: usize = 16;
        const THREADS: usize = 4;
        const ROUNDS: usize = 2_000;
        let store = Arc::new(Store::new(Default::default()).unwrap());
        let key = |i: usize| format!("counter:{i}").into_bytes();
        for i in 0..COUNTERS {
            store.set(&key(i), b"100", 0, Expiry::Never).unwrap();
        }
        let refused = Arc::new(AtomicU64::new(0));
        let threads: Vec<_> = (0..THREADS)
            .map(|t| {
                let (store, refused) = (Arc::clone(&store), Arc::clone(&refused));
                std::thread::spawn(move || {
                    let mut x = 0x9e37_79b9_7f4a_7c15u64.wrapping_mul(t as u64 + 1);
                    let mut next = || {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        (x % COUNTERS as u64) as usize
                    };
                    let read = |s: &Store, k: &[u8]| -> i64 {
                        s.get(k, |it| std::str::from_utf8(it.value()).unwrap().parse().unwrap()).unwrap()
                    };
                    for _ in 0..ROUNDS {
                        let (from, to) = (next(), next());
                        store.atomically(&[key(from)], || {
                            let v = read(&store, &key(from));
                            store.set(&key(from), (v - 1).to_string().as_bytes(), 0, Expiry::Never).unwrap();
                            if store.extend_transaction(&key(to)).is_ok() {
                                let w = read(&store, &key(to));
                                store.set(&key(to), (w + 1).to_string().as_bytes(), 0, Expiry::Never).unwrap();
                            } else {
                                // Refused: put the unit back (still held).
                                refused.fetch_add(1, Ordering::Relaxed);
                                store.set(&key(from), v.to_string().as_bytes(), 0, Expiry::Never).unwrap();
                            }
                        });
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let total: i64 = (0..COUNTERS)
            .map(|i| store.get(&key(i), |it| std::str::from_utf8(it.value()).unwrap().parse::<i64>().unwrap()).unwrap())
            .sum();
        assert_eq!(total, 100 * COUNTERS as i64);
        assert!(refused.load(Ordering::Relaxed) < (THREADS * ROUNDS) as u64);
    }

    #[test]
    fn rank_makes_every_bucket_an_interval() {
        // Keys sorted by rank: for each table size, the keys of one bucket
        // are contiguous.
        let mut hashes: Vec<u64> = (0..4096u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).collect();
        hashes.sort_by_key(|&h| lock_rank(h));
        for log2 in 1..12 {
            let mask = (1u64 << log2) - 1;
            let mut seen = std::collections::HashSet::new();
            let mut last = None;
            for &h in &hashes {
                let b = split_hash(h).0 & mask;
                if last != Some(b) {
                    assert!(seen.insert(b), "bucket {b} of 2^{log2} split into two runs");
                    last = Some(b);
                }
            }
        }
    }
}
