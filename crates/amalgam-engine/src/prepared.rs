//! Large values received in place (issue 18): a value's final storage,
//! allocated when its length is known, filled over as many calls as its
//! bytes take to arrive, and published only when whole.
//!
//! # Why
//! A server that reads a 512 MB value into a connection buffer and then
//! builds the item copies it once more, and that single 512 MB memcpy
//! holds its worker (every other connection of the worker waits) for
//! 100 ms or more. With a [`Prepared`] value the socket's bytes go
//! straight into the item: the server reads a bounded amount per turn
//! into [`Prepared::unfilled`] and serves its other connections between
//! turns, and the command that stores the value publishes the block it
//! was received into ([`Store::put_prepared`]) without touching its bytes.
//!
//! # How it works
//! * **Layout.** The item is laid out as any other, with a *wide* header
//!   (`item::wide_header_len`: every optional field present, the CAS at
//!   its full width), so the value's place is known before the CAS
//!   unique, flags and expiry are: RESP's SET names its expiry after the
//!   value. The header is written at publication, under the key's bucket
//!   lock, before the item is linked; until then nothing but its
//!   [`Prepared`] knows the block.
//! * **Memory.** Store mode: a block from the pool (past
//!   [`SMALL_ITEM_BYTES_MAX`](crate::SMALL_ITEM_BYTES_MAX) one of its own,
//!   counted against the budget). Cache mode: an outsized block
//!   (`outsized.rs`) whatever the size, since a segment's items must be
//!   whole for the reclaimer to walk them; it is charged to the budget
//!   from the start (the memory account and the outsized cap see it while
//!   it fills, so the cache evicts for it as it would for a finished
//!   item), and queued for eviction once published.
//! * **Ending.** Dropping an unpublished [`Prepared`] (a client that
//!   disconnects mid-value, a command that is refused) frees the block
//!   and its charge at once: no reader ever saw it.
//! * **Initialised memory.** The system allocator's block is not
//!   initialised and `Read::read` needs an initialised slice, so
//!   [`Prepared::unfilled`] zeroes each stretch before handing it out
//!   (a write pass over memory the kernel is faulting in anyway; no copy).
//!
//! # Limits
//! The journal records the item as any other `Put`. The server, with
//! persistence, builds the value's log record while the value arrives and
//! offers it to the journal (amalgam-persist `staged.rs`), which then
//! copies nothing; any other journal copies the value into its record.

use crate::item::{self, Meta};
use crate::pool::Block;
use crate::store::{check_key, Decision, Error, Expiry, Inner, ItemRef, Store};
use crate::KEY_BYTES_MAX;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A value being received into its own item; see the module notes.
pub struct Prepared {
    inner: Arc<Inner>,
    /// The item's block; None once published (or handed to be).
    block: Option<Block>,
    klen: usize,
    vlen: usize,
    /// Value bytes received so far.
    filled: usize,
    /// Value bytes zeroed so far (see "Initialised memory").
    zeroed: usize,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("klen", &self.klen)
            .field("vlen", &self.vlen)
            .field("filled", &self.filled)
            .finish()
    }
}

impl Prepared {
    /// Offset of the key in the block.
    fn key_at(&self) -> usize {
        item::wide_header_len(self.vlen)
    }

    /// Offset of the value in the block.
    fn value_at(&self) -> usize {
        self.key_at() + self.klen
    }

    /// The key the value was prepared for.
    pub fn key(&self) -> &[u8] {
        let b = self.block.as_ref().expect("an unpublished value has its block");
        // SAFETY: the block is ours (unpublished) and holds the key at
        // key_at, written by `Store::prepare`; the slice borrows self.
        unsafe { std::slice::from_raw_parts(b.ptr.add(self.key_at()), self.klen) }
    }

    /// The value's length.
    pub fn len(&self) -> usize {
        self.vlen
    }

    /// True for an empty value.
    pub fn is_empty(&self) -> bool {
        self.vlen == 0
    }

    /// Value bytes received so far.
    pub fn filled(&self) -> usize {
        self.filled
    }

    /// True once every value byte has been received.
    pub fn is_complete(&self) -> bool {
        self.filled == self.vlen
    }

    /// The next at most `max` value bytes still to receive: read into it,
    /// then say how many arrived with [`Prepared::advance`].
    pub fn unfilled(&mut self, max: usize) -> &mut [u8] {
        let ptr = self.block.as_ref().expect("an unpublished value has its block").ptr;
        let n = max.min(self.vlen - self.filled);
        let value_at = self.value_at();
        let end = self.filled + n;
        if end > self.zeroed {
            // SAFETY: [value_at + zeroed, value_at + end) lies inside the
            // block (end <= vlen), which is ours: no other reference.
            unsafe { std::ptr::write_bytes(ptr.add(value_at + self.zeroed), 0, end - self.zeroed) };
            self.zeroed = end;
        }
        // SAFETY: the range is inside the block, initialised (zeroed just
        // now or written before), and ours; the slice borrows self
        // mutably, so no other reference to it can be made meanwhile.
        unsafe { std::slice::from_raw_parts_mut(ptr.add(value_at + self.filled), n) }
    }

    /// `n` more value bytes were written into [`Prepared::unfilled`].
    ///
    /// # Panics
    /// Past the value's end or past what was zeroed (handed out).
    pub fn advance(&mut self, n: usize) {
        assert!(self.filled + n <= self.zeroed, "advance past the bytes handed out");
        self.filled += n;
    }

    /// Copies the start of `bytes` (received elsewhere: what a read
    /// buffer held when the value was prepared) into the value; returns
    /// how many bytes it took (at most what the value still lacks).
    pub fn extend_from(&mut self, bytes: &[u8]) -> usize {
        let dst = self.unfilled(bytes.len());
        let n = dst.len();
        dst.copy_from_slice(&bytes[..n]);
        self.advance(n);
        n
    }
}

impl Drop for Prepared {
    fn drop(&mut self) {
        if let Some(block) = self.block.take() {
            let local = self.inner.epochs.local(&self.inner.shared);
            self.inner.free_unpublished(local, block);
        }
    }
}

impl Store {
    /// Allocates the item that will hold a value of `vlen` bytes for
    /// `key`, to receive the value into ([`Prepared::unfilled`]) and then
    /// publish it with [`Store::put_prepared`]. `flags` and `expiry` are
    /// those the item will most likely carry: the size limit counts them
    /// (memcached's `-I` limits the whole item, as for [`Store::set`];
    /// under [`Store::with_value_bytes_max`] the value's length alone is
    /// limited). Errors: BadKey, TooLarge, OutOfMemory (cache mode evicts
    /// first, as a write does).
    ///
    /// ```
    /// use amalgam_engine::{Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// let mut p = store.prepare(b"big", 5, 0, Expiry::Never).unwrap();
    /// p.extend_from(b"he");
    /// p.unfilled(16).copy_from_slice(b"llo");
    /// p.advance(3);
    /// assert!(p.is_complete());
    /// assert!(store.get(b"big", |_| ()).is_none(), "nothing is published before put_prepared");
    /// let cas = store.put_prepared(p, |_| Some((7, Expiry::Never))).unwrap();
    /// assert!(cas.is_some());
    /// assert_eq!(store.get(b"big", |it| (it.value().to_vec(), it.flags())), Some((b"hello".to_vec(), 7)));
    /// ```
    pub fn prepare(&self, key: &[u8], vlen: usize, flags: u32, expiry: Expiry) -> Result<Prepared, Error> {
        check_key(key)?;
        let inner = &*self.inner;
        let local = inner.epochs.local(&inner.shared);
        let (secs, ms) = expiry.raw();
        let meta = Meta { cas: 0, flags, expiry: secs, expiry_ms: ms, marks: 0 };
        // SAFETY: our own Local; the reference ends with this statement.
        let too_large = match unsafe { local.owned() }.value_bytes_max {
            Some(value_max) => vlen > value_max,
            None => item::limit_len(key.len(), vlen, &meta) > inner.item_size_max,
        };
        if too_large || vlen > item::VALUE_BYTES_LIMIT {
            return Err(Error::TooLarge);
        }
        let len = item::wide_header_len(vlen) + key.len() + vlen;
        let block = if inner.cache.is_some() {
            inner.with_room(local, || inner.reserve_outsized(local, len))?
        } else {
            inner.alloc(local, len)?
        };
        let p = Prepared {
            inner: Arc::clone(&self.inner),
            block: Some(block),
            klen: key.len(),
            vlen,
            filled: 0,
            zeroed: 0,
        };
        // SAFETY: the block is fresh, at least `len` bytes, and ours; the
        // key's range lies inside it.
        unsafe { std::ptr::copy_nonoverlapping(key.as_ptr(), block.ptr.add(p.key_at()), key.len()) };
        Ok(p)
    }

    /// Publishes a complete prepared value as its key's item: under the
    /// key's bucket lock, `decide` sees the live item (if any) and answers
    /// the flags and expiry to publish with, or None to leave the key as
    /// it is. Returns Ok(Some(CAS unique)) when published (or when the
    /// expiry is already past: the key is removed then, as [`Store::set`]
    /// does), Ok(None) when `decide` declined, OutOfMemory when the index
    /// had no room. The value's bytes are not copied; an unpublished
    /// value is freed.
    ///
    /// # Panics
    /// If the value is not complete, or was prepared by another store.
    pub fn put_prepared(
        &self,
        mut value: Prepared,
        decide: impl FnOnce(Option<ItemRef<'_>>) -> Option<(u32, Expiry)>,
    ) -> Result<Option<u64>, Error> {
        assert!(Arc::ptr_eq(&value.inner, &self.inner), "a prepared value is published by its own store");
        assert!(value.is_complete(), "a prepared value is published whole");
        let inner = &*self.inner;
        let mut key_buf = [0u8; KEY_BYTES_MAX];
        let key = &mut key_buf[..value.klen];
        key.copy_from_slice(value.key());
        let key = &*key;
        let block = value.block.take().expect("an unpublished value has its block");
        let (klen, vlen) = (value.klen, value.vlen);
        // Once handed to `mutate` in a Put the block is its to publish or
        // (index full) to free; otherwise it is still ours.
        let mut handed = false;
        let r = inner.mutate(key, |local, old| {
            let Some((flags, expiry)) = decide(old) else { return Decision::Keep(Ok(None)) };
            let cas = inner.next_cas(local);
            if inner.expired_now(expiry) {
                return Decision::Remove(Ok(Some(cas)));
            }
            let (secs, ms) = expiry.raw();
            if secs != 0 && !inner.ttl_seen.load(Ordering::Relaxed) {
                inner.ttl_seen.store(true, Ordering::Relaxed);
            }
            let meta = Meta { cas, flags, expiry: secs, expiry_ms: ms, marks: 0 };
            let h = item::wide_header_len(vlen);
            // SAFETY: the block is ours (not yet linked: we hold the
            // bucket lock and link it after this returns) and its first
            // h bytes are the header's.
            let dst = unsafe { std::slice::from_raw_parts_mut(block.ptr, h) };
            item::write_wide_header(dst, klen, vlen, &meta);
            handed = true;
            Decision::Put(block, Ok(Some(cas)))
        });
        let local = inner.epochs.local(&inner.shared);
        if !handed {
            inner.free_unpublished(local, block);
        } else if inner.cache.is_some() && r.is_ok() {
            // Published: from now on the policy may evict it.
            inner.queue_outsized(inner.hash(key), block.ptr);
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use crate::evict::Eviction;
    use crate::{Config, Expiry, Store};

    fn cache(budget: usize) -> Store {
        Store::new(Config {
            memory_limit_bytes: budget,
            item_size_max_bytes: 16 << 20,
            eviction: Eviction::S3Fifo,
            ..Config::default()
        })
        .unwrap()
    }

    fn store_mode() -> Store {
        Store::new(Config { item_size_max_bytes: 16 << 20, ..Config::default() }).unwrap()
    }

    /// Receives `v` in pieces of 1000 bytes.
    fn receive(p: &mut super::Prepared, v: &[u8]) {
        for _ in 0..v.len().div_ceil(1000) + 1 {
            let at = p.filled();
            let dst = p.unfilled(1000);
            let n = dst.len();
            dst.copy_from_slice(&v[at..at + n]);
            p.advance(n);
        }
        assert!(p.is_complete());
    }

    #[test]
    fn an_unpublished_value_is_charged_and_given_back() {
        let store = cache(64 << 20);
        let p = store.prepare(b"k", 4 << 20, 0, Expiry::Never).unwrap();
        assert!(store.stats().outsized_bytes >= 4 << 20, "charged before it is whole");
        drop(p);
        assert_eq!(store.stats().outsized_bytes, 0);
        let store = store_mode();
        let before = store.stats().reserved_bytes;
        let p = store.prepare(b"k", 4 << 20, 0, Expiry::Never).unwrap();
        assert!(store.stats().reserved_bytes >= before + (4 << 20));
        drop(p);
        assert_eq!(store.stats().reserved_bytes, before);
        assert!(store.get(b"k", |_| ()).is_none());
    }

    #[test]
    fn a_published_value_reads_back_and_is_evicted_like_any_outsized_item() {
        let store = cache(64 << 20);
        let v: Vec<u8> = (0..(3 << 20) + 17).map(|i| (i * 7 % 251) as u8).collect();
        let mut p = store.prepare(b"big", v.len(), 0, Expiry::Never).unwrap();
        assert_eq!(p.key(), b"big");
        receive(&mut p, &v);
        // Declined: nothing published, the block freed.
        assert_eq!(store.put_prepared(p, |_| None), Ok(None));
        assert!(store.get(b"big", |_| ()).is_none());
        assert_eq!(store.stats().outsized_bytes, 0);
        let mut p = store.prepare(b"big", v.len(), 0, Expiry::Never).unwrap();
        receive(&mut p, &v);
        let at = Expiry::At(store.now() + 100);
        let cas = store.put_prepared(p, |old| old.is_none().then_some((5, at))).unwrap().unwrap();
        let got = store.get(b"big", |it| (it.value() == &v[..], it.flags(), it.expiry(), it.cas()));
        assert_eq!(got, Some((true, 5, at, cas)));
        // Many more outsized writes than the budget holds: it is evicted
        // (queued once published), and the budget holds.
        for i in 0..40u32 {
            store.set(format!("other{i}").as_bytes(), &v, 0, Expiry::Never).unwrap();
        }
        assert!(store.get(b"big", |_| ()).is_none(), "evicted");
        assert!(store.stats().outsized_bytes <= 64 << 20);
    }

    #[test]
    fn a_past_expiry_removes_the_key_and_publishes_nothing() {
        let store = store_mode();
        store.set(b"k", b"old", 0, Expiry::Never).unwrap();
        let mut p = store.prepare(b"k", 2 << 20, 0, Expiry::Never).unwrap();
        receive(&mut p, &vec![1u8; 2 << 20]);
        assert!(store.put_prepared(p, |_| Some((0, Expiry::At(1)))).unwrap().is_some());
        assert!(store.get(b"k", |_| ()).is_none());
    }
}
