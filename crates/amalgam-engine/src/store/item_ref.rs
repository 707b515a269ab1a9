//! [`ItemRef`]: the read-only view of a stored item that a lookup hands
//! its callback, each field decoded as it is read.

use super::Expiry;
#[cfg(doc)]
use super::{Store, Update};
use crate::item;
#[cfg(doc)]
use crate::object::TAG_BYTES;
use crate::object::{self, ObjectCell, TAG_OBJECT};
use std::marker::PhantomData;

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
    pub(super) ptr: *const u8,
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

    /// The eviction policy's frequency of the item (0 to
    /// [`FREQ_LIMIT`](crate::evict::FREQ_LIMIT)): GET hits since it was
    /// written or last kept by a reclamation, capped at the policy's
    /// `freq_max`; always 0 in store mode, which tracks none.
    ///
    /// ```
    /// # use amalgam_engine::{evict::Eviction, Config, Expiry, Store};
    /// let store = Store::new(Config { eviction: Eviction::S3Fifo, ..Config::default() }).unwrap();
    /// store.set(b"k", b"v", 0, Expiry::Never).unwrap();
    /// store.get(b"k", |_| ());
    /// assert_eq!(store.peek(b"k", |it| it.freq()), Some(1));
    /// ```
    pub fn freq(&self) -> u8 {
        // SAFETY: as for key.
        unsafe { item::freq(self.ptr) }
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
