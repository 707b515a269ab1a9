//! Reads: the key hash, lookup by optimistic probes (`Inner::lookup`),
//! liveness (`Inner::is_live`), the GET family, read sessions
//! ([`Reader`]), batched lookups, and the prefetch hints of the write
//! paths (MICA §5.3).

use super::{check_key, Inner, ItemRef, Pinned, Store};
use crate::item;
use crate::object::{self, Object, ObjectCell};
use crate::table::{prefetch_line, split_hash, Probe, Table, OPTIMISTIC_RETRIES_MAX, TABLE_LOG2_MAX};
use std::marker::PhantomData;
use std::sync::atomic::Ordering;

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
}

impl Store {
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

    /// Pins the calling thread's epoch (for `scan.rs`).
    pub(crate) fn pin(&self) -> Pinned<'_> {
        Pinned::new(&self.inner)
    }

    /// Not expired, not flushed (for `scan.rs`).
    pub(crate) fn item_is_live(&self, it: &ItemRef<'_>, now: &mut Option<u32>) -> bool {
        self.inner.is_live(it, now)
    }
}
