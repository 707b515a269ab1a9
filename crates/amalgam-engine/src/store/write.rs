//! The write commands: memcached's set, add, replace and cas, append and
//! prepend, incr and decr, touch and gat, the general read-modify-write
//! behind the meta commands and Redis's ([`Store::update`]), `rename` and
//! `delete`. Each says what to do with the key's live item, as a
//! `Decision` that `Inner::mutate` (mutate.rs) applies under the bucket
//! lock.

use super::mutate::{fill, NewItem};
use super::{Decision, Error, Expiry, ItemRef, Pinned, Store};
use crate::item::{self, KEY_BYTES_MAX};
#[cfg(doc)]
use crate::journal::Change;
use crate::object::{self, Object, ObjectCell, TAG_BYTES, TAG_OBJECT};

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
}
