//! Items: header, key and value in one allocation, immutable once published.
//!
//! An update never writes into a published item: it builds a new item and
//! swaps the bucket slot's pointer (DESIGN.md § Items), so an optimistic
//! reader that holds a pointer always sees a whole item, and the old one is
//! reclaimed through the epoch scheme in `local.rs`.
//!
//! ```text
//!  byte 0   1      2        3 ....... 3+c   ...... +w    +4        +2          +4
//!  +------+------+--------+-------------+-------------+---------+-----------+---------+-----+-------+
//!  | klen | meta | layout | cas (c B)   | vlen (w B)  | flags?  | expiry_ms?| expiry? | key | value |
//!  +------+------+--------+-------------+-------------+---------+-----------+---------+-----+-------+
//!  meta:   bits 0-2  the value tag (object.rs: bytes, packed kinds, object)
//!          bit  3    MARK_FETCHED: read before (meta protocol `h`; set by
//!                    `mg` and touch; cache mode's FREQ > 0 counts too)
//!          bits 4-5  MARK_STALE, MARK_TOKEN_SENT (meta protocol: `X`, `Z`)
//!          bits 6-7  FREQ: the eviction policy's access frequency (cache mode, 0..=3)
//!  layout: bits 0-1  vlen width - 1   (w = 1..=4 bytes, little endian)
//!          bits 2-4  cas width - 1    (c = 1..=8 bytes, little endian)
//!          bit  5    HAS_FLAGS        (client flags follow, u32 LE; absent = 0)
//!          bit  6    HAS_EXPIRY       (expiry follows, u32 LE unix seconds; absent = never)
//!          bit  7    HAS_EXPIRY_MS    (only with HAS_EXPIRY: u16 LE milliseconds 1..=999
//!                                      past the expiry second, before it; absent = 0)
//! ```
//!
//! ## Expiry at millisecond resolution
//!
//! A deadline is `expiry` seconds plus `expiry_ms` milliseconds (RESP's
//! PX, PEXPIRE …). The seconds are the deadline rounded *down*, so the
//! liveness test every GET runs, `expiry == 0 || expiry > now` (seconds),
//! is exact whenever it says live; only when `expiry == now`, the one
//! second in which a deadline with a remainder falls, does the store read
//! the remainder and a millisecond clock (`Inner::expiry_live`, out of
//! line). No-TTL and whole-second items (every memcached item) carry no
//! remainder and are as small as before; an item with one is 2 bytes
//! longer. The remainder sits before the seconds, so the seconds stay at
//! `key_at - 4` and the GET path reads them as it did.
//!
//! Every length field is as wide as its value needs. The CAS unique is a
//! 64-bit counter, but a store hands out its values in order, so for the
//! first 2^32 writes it takes 4 bytes or fewer: the common memcached item
//! (flags 0, no TTL, 8 B key, 8 B value) takes 3 + 4 + 1 + 16 = 24 bytes
//! and the pool serves it from its 24-byte class; a 16 B / 32 B item takes
//! 56 bytes in a segment. The size limit (`-I`) is checked against
//! [`limit_len`], the length with the CAS at its full 8 bytes, so which
//! values fit does not depend on how many writes came before.
//!
//! All multi-byte fields are read unaligned and never change after
//! publication. The one exception is the meta byte's FREQ bits: in cache
//! mode a GET hit raises them (see [`touch_freq`]; and an `mg` sets
//! MARK_FETCHED, [`mark_fetched`]), so every access to the
//! meta byte of a published item is a relaxed atomic byte access (a plain
//! `mov` on x86-64) and the concurrent write is not a data race. The
//! immutable layout bits live in a byte of their own for that reason.

use std::sync::atomic::{AtomicU8, Ordering};

/// Longest key memcached accepts (`KEY_MAX_LENGTH` in memcached.h).
///
/// ```
/// use amalgam_engine::{Error, Expiry, Store, KEY_BYTES_MAX};
/// let store = Store::new(Default::default()).unwrap();
/// assert!(store.set(&[b'k'; KEY_BYTES_MAX], b"v", 0, Expiry::Never).is_ok());
/// assert_eq!(store.set(&[b'k'; KEY_BYTES_MAX + 1], b"v", 0, Expiry::Never), Err(Error::BadKey));
/// ```
pub const KEY_BYTES_MAX: usize = 250;

/// Bytes of the fixed part of the header: klen, meta, layout.
pub(crate) const HEADER_FIXED_BYTES: usize = 3;
/// Bytes of the CAS field at its widest; [`limit_len`] counts this many.
const CAS_BYTES_MAX: usize = 8;
/// Bytes of the CAS field at its narrowest: with the value length (1 B or
/// more) and the key (1 B or more) behind it, a 2-byte field always has 4
/// item bytes from its start, so [`read_cas`] is one 4-byte load for every
/// CAS below 2^32.
const CAS_BYTES_MIN: usize = 2;

// The meta byte: the mutable FREQ bits and the meta protocol's marks.

/// The meta protocol's per-item marks (memcached's ITEM_STALE and
/// ITEM_TOKEN_SENT), kept in the meta byte's bits 4-5.
pub const MARK_STALE: u8 = 0b0001_0000;
/// See [`MARK_STALE`].
pub const MARK_TOKEN_SENT: u8 = 0b0010_0000;
const META_MARKS_MASK: u8 = MARK_STALE | MARK_TOKEN_SENT;
/// The value tag (object.rs), bits 0-2 of the meta byte: immutable once
/// published, carried with the marks through `Meta::marks`.
const META_TAG_MASK: u8 = crate::object::TAG_MASK;
/// What `Meta::marks` carries: the marks and the value tag.
const META_KEPT_MASK: u8 = META_MARKS_MASK | META_TAG_MASK;
/// The item has been read (memcached's ITEM_FETCHED, the meta protocol's
/// `h`), bit 3 of the meta byte. Set in a published item by
/// [`mark_fetched`] (an `mg` without `u`); a write that keeps the marks
/// may carry it into the new item. A plain GET does not set it (no shared
/// write on the GET path): in cache mode its FREQ bits say the same thing,
/// and [`fetched`] reads both.
pub const MARK_FETCHED: u8 = 0b0000_1000;
/// The meta byte's bits a new item is written with.
const META_WRITTEN_MASK: u8 = META_MARKS_MASK | MARK_FETCHED | META_TAG_MASK;
/// The eviction policy's frequency, bits 6-7 of the meta byte.
const META_FREQ_SHIFT: u32 = 6;
const META_FREQ_MASK: u8 = 0b1100_0000;
/// Offset of the meta byte in an item.
const META_AT: usize = 1;
/// Largest frequency the meta byte holds.
pub(crate) const FREQ_BITS_MAX: u8 = META_FREQ_MASK >> META_FREQ_SHIFT;

/// The layout byte: field widths and presence, immutable.
const LAYOUT_AT: usize = 2;
const LAYOUT_VLEN_WIDTH_MASK: u8 = 0b0000_0011;
const LAYOUT_CAS_WIDTH_SHIFT: u32 = 2;
const LAYOUT_CAS_WIDTH_MASK: u8 = 0b0001_1100;
const LAYOUT_HAS_FLAGS: u8 = 0b0010_0000;
const LAYOUT_HAS_EXPIRY: u8 = 0b0100_0000;
const LAYOUT_HAS_EXPIRY_MS: u8 = 0b1000_0000;
/// Milliseconds in a second: the remainder field holds 1..MILLIS_PER_SECOND.
pub(crate) const MILLIS_PER_SECOND: u16 = 1000;

const _: () = assert!(FREQ_BITS_MAX == crate::evict::FREQ_LIMIT, "the policies' cap is what the header holds");
const _: () = assert!(META_FREQ_MASK & META_WRITTEN_MASK == 0, "FREQ bits are free");
const _: () = assert!(META_MARKS_MASK & MARK_FETCHED == 0, "the fetched bit is not a mark");
const _: () = assert!(META_TAG_MASK & (META_MARKS_MASK | META_FREQ_MASK | MARK_FETCHED) == 0, "tag bits are free");
const _: () = assert!(
    (LAYOUT_CAS_WIDTH_MASK >> LAYOUT_CAS_WIDTH_SHIFT) as usize + 1 == CAS_BYTES_MAX,
    "the layout byte describes every CAS width"
);
const _: () = assert!(
    LAYOUT_VLEN_WIDTH_MASK & LAYOUT_CAS_WIDTH_MASK == 0
        && (LAYOUT_VLEN_WIDTH_MASK | LAYOUT_CAS_WIDTH_MASK) & (LAYOUT_HAS_FLAGS | LAYOUT_HAS_EXPIRY) == 0
        && (LAYOUT_VLEN_WIDTH_MASK | LAYOUT_CAS_WIDTH_MASK | LAYOUT_HAS_FLAGS | LAYOUT_HAS_EXPIRY)
            & LAYOUT_HAS_EXPIRY_MS
            == 0,
    "layout fields do not overlap"
);

/// Largest value length the 4-byte vlen field can describe.
pub(crate) const VALUE_BYTES_LIMIT: usize = u32::MAX as usize;

const _: () = assert!(KEY_BYTES_MAX <= u8::MAX as usize, "klen is one byte");

/// The fields of an item other than its key, as passed to [`encoded_len`]
/// and [`write`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Meta {
    pub cas: u64,
    pub flags: u32,
    /// Absolute unix seconds, the deadline rounded down; 0 means never.
    pub expiry: u32,
    /// Milliseconds past `expiry` (0..=999); 0 when `expiry` is 0.
    pub expiry_ms: u16,
    /// [`MARK_STALE`] | [`MARK_TOKEN_SENT`] | [`MARK_FETCHED`] bits and the
    /// value tag (object.rs) in bits 0-2 (others ignored).
    pub marks: u8,
}

fn vlen_width(vlen: usize) -> usize {
    match vlen {
        0..=0xFF => 1,
        0x100..=0xFFFF => 2,
        0x1_0000..=0xFF_FFFF => 3,
        _ => 4,
    }
}

/// Bytes the CAS unique takes: as many as its highest set byte, and at
/// least [`CAS_BYTES_MIN`].
fn cas_width(cas: u64) -> usize {
    (((64 - cas.leading_zeros()) as usize).div_ceil(8)).max(CAS_BYTES_MIN)
}

/// Bytes of the header and key, and of the optional fields, but with the
/// CAS `cas_bytes` wide.
fn len_with_cas_width(klen: usize, vlen: usize, meta: &Meta, cas_bytes: usize) -> usize {
    HEADER_FIXED_BYTES
        + cas_bytes
        + vlen_width(vlen)
        + if meta.flags != 0 { 4 } else { 0 }
        + if meta.expiry != 0 { 4 } else { 0 }
        + if has_expiry_ms(meta) { 2 } else { 0 }
        + klen
        + vlen
}

/// True if the item carries the millisecond remainder field.
fn has_expiry_ms(meta: &Meta) -> bool {
    debug_assert!(meta.expiry_ms < MILLIS_PER_SECOND && (meta.expiry != 0 || meta.expiry_ms == 0));
    meta.expiry != 0 && meta.expiry_ms != 0
}

/// Bytes an item with these fields occupies (before size-class rounding).
pub(crate) fn encoded_len(klen: usize, vlen: usize, meta: &Meta) -> usize {
    len_with_cas_width(klen, vlen, meta, cas_width(meta.cas))
}

/// The length the item size limit is checked against: [`encoded_len`] with
/// the CAS at its widest, so whether a value fits does not change as the
/// CAS counter grows.
pub(crate) fn limit_len(klen: usize, vlen: usize, meta: &Meta) -> usize {
    len_with_cas_width(klen, vlen, meta, CAS_BYTES_MAX)
}

/// Reads the `width`-byte little-endian CAS field at `p` (width
/// [`CAS_BYTES_MIN`]..=8) with fixed-size loads: one 4-byte load, masked,
/// up to 4 bytes (every CAS below 2^32, so the branch is settled for the
/// first 2^32 writes), two overlapping ones above. A variable-length copy
/// or a jump table here costs the GET path (every GET reads the CAS for
/// the flush check).
///
/// # Safety
/// `p..p + 4` and `p..p + width` are readable.
#[inline(always)]
unsafe fn read_cas(p: *const u8, width: usize) -> u64 {
    debug_assert!((CAS_BYTES_MIN..=8).contains(&width));
    // SAFETY: the caller guarantees both ranges; for widths 5..=8 the
    // second load ends at p + width. The overlapping bytes of the two
    // loads land at the same bit positions, so OR-ing them is exact.
    unsafe {
        let lo = u64::from(u32::from_le(std::ptr::read_unaligned(p as *const u32)));
        if width <= 4 {
            lo & (u64::MAX >> (64 - 8 * width))
        } else {
            let hi = u64::from(u32::from_le(std::ptr::read_unaligned(p.add(width - 4) as *const u32)));
            lo | hi << (8 * (width - 4))
        }
    }
}

/// Reads the `width`-byte little-endian value length at `p` (width
/// 1..=4): one 2-byte load, masked, up to 2 bytes (values under 64 KiB).
///
/// # Safety
/// `p..p + 2` and `p..p + width` are readable.
#[inline(always)]
unsafe fn read_vlen(p: *const u8, width: usize) -> usize {
    debug_assert!((1..=4).contains(&width));
    // SAFETY: as the caller guarantees; the 3-byte case reads p..p + 3.
    // No jump table: a masked load for the common widths, one branch that
    // is settled for values under 64 KiB (the GET path's length counts).
    unsafe {
        if width <= 2 {
            let short = u32::from(u16::from_le(std::ptr::read_unaligned(p as *const u16)));
            (short & (u32::MAX >> (32 - 8 * width))) as usize
        } else if width == 3 {
            (u32::from(u16::from_le(std::ptr::read_unaligned(p as *const u16))) | u32::from(*p.add(2)) << 16) as usize
        } else {
            u32::from_le(std::ptr::read_unaligned(p as *const u32)) as usize
        }
    }
}

/// `dst.copy_from_slice(src)` without a libc call for up to 16 bytes
/// (every header field, the papers' keys and small values): two
/// overlapping fixed-size copies, which compile to plain moves. A SET
/// copied four short fields through `memcpy` calls before.
///
/// # Panics
/// If the lengths differ.
#[inline(always)]
pub(crate) fn copy_short(dst: &mut [u8], src: &[u8]) {
    let n = src.len();
    assert_eq!(dst.len(), n);
    match n {
        8..=16 => {
            dst[..8].copy_from_slice(&src[..8]);
            dst[n - 8..].copy_from_slice(&src[n - 8..]);
        }
        4..=7 => {
            dst[..4].copy_from_slice(&src[..4]);
            dst[n - 4..].copy_from_slice(&src[n - 4..]);
        }
        1..=3 => {
            dst[0] = src[0];
            dst[n / 2] = src[n / 2];
            dst[n - 1] = src[n - 1];
        }
        0 => {}
        _ => dst.copy_from_slice(src),
    }
}

/// Encodes an item into `dst` and returns the offset of its value, so the
/// caller can fill the value in place (append, prepend and incr build the
/// new value directly in the new item).
///
/// The key is written; the value bytes are left for the caller.
///
/// # Panics
/// If `dst.len() != encoded_len(key.len(), vlen, meta)` or the key is empty
/// or longer than [`KEY_BYTES_MAX`]; callers validate user input first.
pub(crate) fn write_header_and_key(dst: &mut [u8], key: &[u8], vlen: usize, meta: &Meta) -> usize {
    assert!(!key.is_empty() && key.len() <= KEY_BYTES_MAX);
    assert_eq!(dst.len(), encoded_len(key.len(), vlen, meta));
    let width = vlen_width(vlen);
    let cas_bytes = cas_width(meta.cas);
    let mut layout = (width - 1) as u8 | ((cas_bytes - 1) as u8) << LAYOUT_CAS_WIDTH_SHIFT;
    if meta.flags != 0 {
        layout |= LAYOUT_HAS_FLAGS;
    }
    if meta.expiry != 0 {
        layout |= LAYOUT_HAS_EXPIRY;
    }
    if has_expiry_ms(meta) {
        layout |= LAYOUT_HAS_EXPIRY_MS;
    }
    dst[0] = key.len() as u8;
    dst[META_AT] = meta.marks & META_WRITTEN_MASK;
    dst[LAYOUT_AT] = layout;
    let mut at = HEADER_FIXED_BYTES;
    copy_short(&mut dst[at..at + cas_bytes], &meta.cas.to_le_bytes()[..cas_bytes]);
    at += cas_bytes;
    copy_short(&mut dst[at..at + width], &(vlen as u32).to_le_bytes()[..width]);
    at += width;
    if meta.flags != 0 {
        dst[at..at + 4].copy_from_slice(&meta.flags.to_le_bytes());
        at += 4;
    }
    if has_expiry_ms(meta) {
        dst[at..at + 2].copy_from_slice(&meta.expiry_ms.to_le_bytes());
        at += 2;
    }
    if meta.expiry != 0 {
        dst[at..at + 4].copy_from_slice(&meta.expiry.to_le_bytes());
        at += 4;
    }
    copy_short(&mut dst[at..at + key.len()], key);
    at + key.len()
}

/// Bytes of a *wide* header for a value of `vlen` bytes: every optional
/// field present and the CAS at its full width, so its length is known
/// before the CAS unique, flags and expiry are (`prepared.rs`: a large
/// value is received into its item before the command that stores it has
/// been read to its end). Readers decode a wide header like any other: a
/// present field holding 0 means what an absent one does.
pub(crate) fn wide_header_len(vlen: usize) -> usize {
    HEADER_FIXED_BYTES + CAS_BYTES_MAX + vlen_width(vlen) + 4 + 2 + 4
}

/// Writes a wide header ([`wide_header_len`] bytes) into `dst`; the key
/// and value that follow it are the caller's. `meta.expiry_ms` must be 0
/// when `meta.expiry` is (as [`Meta`] says).
///
/// # Panics
/// If `dst.len() != wide_header_len(vlen)` or `klen` is not a key length.
pub(crate) fn write_wide_header(dst: &mut [u8], klen: usize, vlen: usize, meta: &Meta) {
    assert!(klen != 0 && klen <= KEY_BYTES_MAX);
    assert_eq!(dst.len(), wide_header_len(vlen));
    debug_assert!(meta.expiry_ms < MILLIS_PER_SECOND && (meta.expiry != 0 || meta.expiry_ms == 0));
    let width = vlen_width(vlen);
    let layout = (width - 1) as u8
        | ((CAS_BYTES_MAX - 1) as u8) << LAYOUT_CAS_WIDTH_SHIFT
        | LAYOUT_HAS_FLAGS
        | LAYOUT_HAS_EXPIRY
        | LAYOUT_HAS_EXPIRY_MS;
    dst[0] = klen as u8;
    dst[META_AT] = meta.marks & META_WRITTEN_MASK;
    dst[LAYOUT_AT] = layout;
    let mut at = HEADER_FIXED_BYTES;
    dst[at..at + CAS_BYTES_MAX].copy_from_slice(&meta.cas.to_le_bytes());
    at += CAS_BYTES_MAX;
    dst[at..at + width].copy_from_slice(&(vlen as u32).to_le_bytes()[..width]);
    at += width;
    dst[at..at + 4].copy_from_slice(&meta.flags.to_le_bytes());
    at += 4;
    dst[at..at + 2].copy_from_slice(&meta.expiry_ms.to_le_bytes());
    at += 2;
    dst[at..at + 4].copy_from_slice(&meta.expiry.to_le_bytes());
    at += 4;
    debug_assert_eq!(at, key_at(layout));
}

/// A decoded view of an item's header, computed from its first bytes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Layout {
    pub klen: usize,
    pub vlen: usize,
    pub key_at: usize,
    pub meta: Meta,
}

impl Layout {
    pub fn value_at(&self) -> usize {
        self.key_at + self.klen
    }
    pub fn total(&self) -> usize {
        self.value_at() + self.vlen
    }
}

/// Offset of the key in an item whose layout byte is `bits`: the header's
/// length, from the layout byte alone (no field is read): one load from
/// [`HEADER_BYTES`], which stays in L1 (the GET path decodes it twice).
/// Every bit of the layout byte is used, so the byte is the index as it is.
#[inline(always)]
fn key_at(bits: u8) -> usize {
    HEADER_BYTES[bits as usize] as usize
}

/// The header's length for every layout byte, [`header_bytes`] tabulated
/// (256 bytes: the combinations with HAS_EXPIRY_MS set are rare and their
/// half of the table stays cold).
static HEADER_BYTES: [u8; u8::MAX as usize + 1] = {
    let mut t = [0u8; u8::MAX as usize + 1];
    let mut b = 0;
    while b < t.len() {
        t[b] = header_bytes(b as u8) as u8;
        b += 1;
    }
    t
};

/// The header's length for layout byte `bits`.
const fn header_bytes(bits: u8) -> usize {
    HEADER_FIXED_BYTES
        + cas_bytes(bits)
        + vlen_bytes(bits)
        + if bits & LAYOUT_HAS_FLAGS != 0 { 4 } else { 0 }
        + if bits & LAYOUT_HAS_EXPIRY != 0 { 4 } else { 0 }
        + if bits & LAYOUT_HAS_EXPIRY_MS != 0 { 2 } else { 0 }
}

/// Decodes the header of the item at `ptr`.
///
/// # Safety
/// `ptr` must point to a live item written by [`write_header_and_key`]
/// (which the epoch guard held by the caller keeps from being reused).
#[inline]
pub(crate) unsafe fn layout(ptr: *const u8) -> Layout {
    // SAFETY: the caller guarantees a whole item starts at `ptr`; every read
    // below is inside its header, whose length the layout byte describes.
    unsafe {
        let klen = *ptr as usize;
        let marks = meta_byte(ptr).load(Ordering::Relaxed) & META_KEPT_MASK;
        let bits = layout_bits(ptr);
        let cas_bytes = cas_bytes(bits);
        let width = vlen_bytes(bits);
        // The CAS field is followed by at least the 1-byte value length
        // and a 1-byte key, the value length by at least the key: the
        // reads' bounds (read_cas, read_vlen).
        let cas = read_cas(ptr.add(HEADER_FIXED_BYTES), cas_bytes);
        let mut at = HEADER_FIXED_BYTES + cas_bytes;
        let vlen = read_vlen(ptr.add(at), width);
        at += width;
        let mut flags = 0;
        if bits & LAYOUT_HAS_FLAGS != 0 {
            flags = u32::from_le(std::ptr::read_unaligned(ptr.add(at) as *const u32));
            at += 4;
        }
        let mut expiry_ms = 0;
        if bits & LAYOUT_HAS_EXPIRY_MS != 0 {
            expiry_ms = u16::from_le(std::ptr::read_unaligned(ptr.add(at) as *const u16));
            at += 2;
        }
        let mut expiry = 0;
        if bits & LAYOUT_HAS_EXPIRY != 0 {
            expiry = u32::from_le(std::ptr::read_unaligned(ptr.add(at) as *const u32));
            at += 4;
        }
        debug_assert_eq!(at, key_at(bits));
        Layout { klen, vlen, key_at: at, meta: Meta { cas, flags, expiry, expiry_ms, marks } }
    }
}

// Single fields of a published item, each decoded from the layout byte
// alone: a GET hit reads only the fields it uses (its liveness check and
// its value), not the whole header as `layout` does. The GET path's length
// in instructions is its speed (store/read.rs, `Inner::lookup`).

/// The layout byte.
///
/// # Safety
/// As for [`layout`].
#[inline(always)]
unsafe fn layout_bits(ptr: *const u8) -> u8 {
    // SAFETY: forwarded from the caller: byte LAYOUT_AT is in the header.
    unsafe { *ptr.add(LAYOUT_AT) }
}

/// The CAS field's width for layout byte `bits`.
#[inline(always)]
const fn cas_bytes(bits: u8) -> usize {
    ((bits & LAYOUT_CAS_WIDTH_MASK) >> LAYOUT_CAS_WIDTH_SHIFT) as usize + 1
}

/// The value length field's width for layout byte `bits`.
#[inline(always)]
const fn vlen_bytes(bits: u8) -> usize {
    (bits & LAYOUT_VLEN_WIDTH_MASK) as usize + 1
}

/// The item's CAS unique.
///
/// # Safety
/// As for [`layout`].
#[inline(always)]
pub(crate) unsafe fn cas_of(ptr: *const u8) -> u64 {
    // SAFETY: as in `layout`.
    unsafe { read_cas(ptr.add(HEADER_FIXED_BYTES), cas_bytes(layout_bits(ptr))) }
}

/// The item's value length.
///
/// # Safety
/// As for [`layout`].
#[inline(always)]
pub(crate) unsafe fn vlen_of(ptr: *const u8) -> usize {
    // SAFETY: as in `layout`.
    unsafe {
        let bits = layout_bits(ptr);
        read_vlen(ptr.add(HEADER_FIXED_BYTES + cas_bytes(bits)), vlen_bytes(bits))
    }
}

/// The item's client flags (0 when absent).
///
/// # Safety
/// As for [`layout`].
#[inline(always)]
pub(crate) unsafe fn flags_of(ptr: *const u8) -> u32 {
    // SAFETY: as in `layout`: the flags field is present when its bit says.
    unsafe {
        let bits = layout_bits(ptr);
        if bits & LAYOUT_HAS_FLAGS == 0 {
            return 0;
        }
        let at = HEADER_FIXED_BYTES + cas_bytes(bits) + vlen_bytes(bits);
        u32::from_le(std::ptr::read_unaligned(ptr.add(at) as *const u32))
    }
}

/// The item's expiry in unix seconds (0 = never).
///
/// # Safety
/// As for [`layout`].
#[inline(always)]
pub(crate) unsafe fn expiry_of(ptr: *const u8) -> u32 {
    // SAFETY: as in `layout`: the expiry field is present when its bit
    // says, after the flags when they are present.
    unsafe {
        let bits = layout_bits(ptr);
        if bits & LAYOUT_HAS_EXPIRY == 0 {
            return 0;
        }
        let at = key_at(bits) - 4;
        u32::from_le(std::ptr::read_unaligned(ptr.add(at) as *const u32))
    }
}

/// The milliseconds past the item's expiry second (0 when absent).
///
/// # Safety
/// As for [`layout`].
#[inline]
pub(crate) unsafe fn expiry_ms_of(ptr: *const u8) -> u16 {
    // SAFETY: as in `layout`: the field is present when its bit says,
    // just before the 4-byte expiry.
    unsafe {
        let bits = layout_bits(ptr);
        if bits & LAYOUT_HAS_EXPIRY_MS == 0 {
            return 0;
        }
        let at = key_at(bits) - 4 - 2;
        u16::from_le(std::ptr::read_unaligned(ptr.add(at) as *const u16))
    }
}

/// True if the item has a deadline (the layout's HAS_EXPIRY bit).
///
/// # Safety
/// As for [`layout`].
#[inline(always)]
pub(crate) unsafe fn has_expiry(ptr: *const u8) -> bool {
    // SAFETY: forwarded from the caller.
    (unsafe { layout_bits(ptr) } & LAYOUT_HAS_EXPIRY) != 0
}

/// The offset of the item's value (header and key lengths).
///
/// # Safety
/// As for [`layout`].
#[inline(always)]
pub(crate) unsafe fn value_at_of(ptr: *const u8) -> usize {
    // SAFETY: forwarded from the caller: byte 0 is the key length.
    unsafe { key_at(layout_bits(ptr)) + *ptr as usize }
}

/// The item's meta-protocol marks and its value tag (bits 0-2).
///
/// # Safety
/// As for [`layout`].
#[inline(always)]
pub(crate) unsafe fn marks_of(ptr: *const u8) -> u8 {
    // SAFETY: forwarded from the caller.
    unsafe { meta_byte(ptr) }.load(Ordering::Relaxed) & META_KEPT_MASK
}

/// The item's value tag (object.rs).
///
/// # Safety
/// As for [`layout`].
#[inline(always)]
pub(crate) unsafe fn tag_of(ptr: *const u8) -> u8 {
    // SAFETY: forwarded from the caller.
    unsafe { meta_byte(ptr) }.load(Ordering::Relaxed) & META_TAG_MASK
}

/// True if the item has been read: [`MARK_FETCHED`], or a FREQ above 0
/// (cache mode's GET hits).
///
/// # Safety
/// As for [`layout`].
#[inline]
pub(crate) unsafe fn fetched(ptr: *const u8) -> bool {
    // SAFETY: forwarded from the caller.
    unsafe { meta_byte(ptr) }.load(Ordering::Relaxed) & (MARK_FETCHED | META_FREQ_MASK) != 0
}

/// Sets [`MARK_FETCHED`] in a published item (an `mg` hit): a read first,
/// so an item already marked is not written again. An atomic OR, since a
/// GET may raise FREQ meanwhile; a GET's plain store racing with it may
/// drop the bit, but that GET raised FREQ, which [`fetched`] reads too.
///
/// # Safety
/// As for [`layout`].
#[inline]
pub(crate) unsafe fn mark_fetched(ptr: *const u8) {
    // SAFETY: forwarded from the caller.
    let m = unsafe { meta_byte(ptr) };
    if m.load(Ordering::Relaxed) & MARK_FETCHED == 0 {
        m.fetch_or(MARK_FETCHED, Ordering::Relaxed);
    }
}

/// The meta byte of the item at `ptr`, as the atomic it is once published.
///
/// # Safety
/// `ptr` points to a live item (its meta byte lives as long as the
/// returned reference is used).
#[inline(always)]
unsafe fn meta_byte<'a>(ptr: *const u8) -> &'a AtomicU8 {
    // SAFETY: byte META_AT of a live item is in bounds (HEADER_FIXED_BYTES
    // > META_AT); AtomicU8 has the size and alignment of u8. Before
    // publication the writer initializes the byte with a plain store; the
    // slot's release store (table.rs) orders it before any atomic access
    // here, so plain and atomic accesses never overlap. After publication
    // the byte is only accessed through this atomic (the FREQ writes in
    // `touch_freq`, the loads in `layout` and `freq`, and `copy_with_freq`),
    // so a GET raising the frequency while another GET or the reclaimer
    // reads it is not a data race.
    unsafe { AtomicU8::from_ptr(ptr.add(META_AT) as *mut u8) }
}

/// The eviction frequency of the item at `ptr` (0 in store mode).
///
/// # Safety
/// As for [`layout`].
#[inline]
pub(crate) unsafe fn freq(ptr: *const u8) -> u8 {
    // SAFETY: forwarded from the caller.
    (unsafe { meta_byte(ptr) }.load(Ordering::Relaxed) & META_FREQ_MASK) >> META_FREQ_SHIFT
}

/// A GET hit: raises the item's frequency by one while it is below `max`
/// (the policy's `freq_max`); at the cap it writes nothing, so a hot item's
/// line is written at most `max` times per pass of the log and is then
/// read-only (docs/cache-mode.md, "Recency without a shared write").
///
/// A plain load and store, not a read-modify-write: two GETs racing on the
/// same item may both store the same raised value, losing one increment,
/// which only makes the item look a little colder. The other bits of the
/// byte never change after publication, so the store cannot clobber them.
///
/// # Safety
/// As for [`layout`].
#[inline]
pub(crate) unsafe fn touch_freq(ptr: *const u8, max: u8) {
    // SAFETY: forwarded from the caller.
    let m = unsafe { meta_byte(ptr) };
    let bits = m.load(Ordering::Relaxed);
    if (bits & META_FREQ_MASK) >> META_FREQ_SHIFT < max {
        m.store(bits + (1 << META_FREQ_SHIFT), Ordering::Relaxed);
    }
}

/// Sets the published item's frequency to `freq` in place (the policy's
/// "keep" for an outsized item, which is kept where it is instead of being
/// copied: `outsized.rs`), keeping the fetched mark as
/// [`copy_with_freq`] does. A GET racing with it may store its raised
/// value over this one, which only leaves the item a little warmer.
///
/// # Safety
/// `ptr` is a live item, and the caller holds its bucket lock.
pub(crate) unsafe fn set_freq(ptr: *const u8, freq: u8) {
    debug_assert!(freq <= FREQ_BITS_MAX);
    // SAFETY: forwarded from the caller.
    let m = unsafe { meta_byte(ptr) };
    let bits = m.load(Ordering::Relaxed);
    let fetched = if bits & META_FREQ_MASK != 0 { MARK_FETCHED } else { 0 };
    m.store((bits & !META_FREQ_MASK) | fetched | (freq << META_FREQ_SHIFT), Ordering::Relaxed);
}

/// Copies the published item at `src` (of `total` bytes) to the
/// unpublished memory at `dst`, with frequency `freq` (the reclaimer's
/// reinsertion). The meta byte is read atomically, since GETs may raise it
/// while we copy; every other byte is immutable.
///
/// # Safety
/// `src` is a live item of `total` bytes; `dst` is writable for `total`
/// bytes, not published, and does not overlap `src`.
pub(crate) unsafe fn copy_with_freq(src: *const u8, dst: *mut u8, total: usize, freq: u8) {
    debug_assert!(freq <= FREQ_BITS_MAX && total > HEADER_FIXED_BYTES);
    // SAFETY: forwarded from the caller: both ranges are valid for `total`
    // bytes and disjoint; the meta byte of `src` is read through its atomic.
    unsafe {
        let bits = meta_byte(src).load(Ordering::Relaxed);
        *dst = *src;
        // A reinsertion may lower the frequency to 0: the fetched bit
        // keeps what the old frequency said.
        let fetched = if bits & META_FREQ_MASK != 0 { MARK_FETCHED } else { 0 };
        *dst.add(META_AT) = (bits & !META_FREQ_MASK) | fetched | (freq << META_FREQ_SHIFT);
        std::ptr::copy_nonoverlapping(src.add(META_AT + 1), dst.add(META_AT + 1), total - META_AT - 1);
    }
}

/// The key of the item at `ptr`.
///
/// # Safety
/// As for [`layout`]; the returned slice must not outlive the guard that
/// protects the item.
#[inline]
pub(crate) unsafe fn key<'a>(ptr: *const u8) -> &'a [u8] {
    // SAFETY: the caller names a live item: byte 0 is its key length, the
    // layout byte gives the header's length, and the key follows it.
    unsafe { std::slice::from_raw_parts(ptr.add(key_at(layout_bits(ptr))), *ptr as usize) }
}

/// Compares the key of the item at `ptr` with `key` without decoding the
/// whole header when the lengths already differ.
///
/// # Safety
/// As for [`layout`].
#[inline]
pub(crate) unsafe fn key_eq(ptr: *const u8, key: &[u8]) -> bool {
    // SAFETY: byte 0 is the key length of the live item the caller names.
    if unsafe { *ptr } as usize != key.len() {
        return false;
    }
    // SAFETY: forwarded from the caller.
    short_eq(unsafe { self::key(ptr) }, key)
}

/// `a == b` for slices of equal length, without a libc call for keys of up
/// to 16 bytes (the papers' keys are 8–24 bytes): two overlapping loads
/// cover any length from 8 to 16, and from 4 to 7.
#[inline(always)]
fn short_eq(a: &[u8], b: &[u8]) -> bool {
    debug_assert_eq!(a.len(), b.len());
    let n = a.len();
    let u64_at = |s: &[u8], i: usize| u64::from_ne_bytes(s[i..i + 8].try_into().unwrap());
    let u32_at = |s: &[u8], i: usize| u32::from_ne_bytes(s[i..i + 4].try_into().unwrap());
    match n {
        8..=16 => u64_at(a, 0) == u64_at(b, 0) && u64_at(a, n - 8) == u64_at(b, n - 8),
        4..=7 => u32_at(a, 0) == u32_at(b, 0) && u32_at(a, n - 4) == u32_at(b, n - 4),
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_short_copies_every_length() {
        let src: Vec<u8> = (1..=40).collect();
        for n in 0..=40 {
            let mut dst = vec![0u8; n];
            copy_short(&mut dst, &src[..n]);
            assert_eq!(dst, &src[..n], "length {n}");
        }
    }

    #[test]
    fn short_eq_matches_slice_eq() {
        for n in 0..=40usize {
            let a: Vec<u8> = (0..n as u8).collect();
            assert!(short_eq(&a, &a.clone()));
            for i in 0..n {
                let mut b = a.clone();
                b[i] ^= 0x80;
                assert!(!short_eq(&a, &b), "len {n}, byte {i}");
            }
        }
    }

    #[test]
    fn a_wide_header_reads_as_its_fields() {
        let metas = [
            Meta { cas: 1, flags: 0, expiry: 0, expiry_ms: 0, marks: 0 },
            Meta { cas: u64::MAX - 3, flags: 7, expiry: 1_900_000_000, expiry_ms: 250, marks: MARK_STALE },
            Meta { cas: 300, flags: 0, expiry: 1_900_000_000, expiry_ms: 0, marks: 0 },
        ];
        for vlen in [0, 300, 70_000, 20 << 20] {
            for meta in metas {
                let key = b"key";
                let h = wide_header_len(vlen);
                let mut buf = vec![0u8; h + key.len() + vlen];
                write_wide_header(&mut buf[..h], key.len(), vlen, &meta);
                buf[h..h + key.len()].copy_from_slice(key);
                // SAFETY: buf holds a whole item just written.
                let (l, p) = unsafe { (layout(buf.as_ptr()), buf.as_ptr()) };
                assert_eq!(l.meta, meta);
                assert_eq!((l.klen, l.vlen, l.key_at, l.total()), (3, vlen, h, buf.len()));
                // SAFETY: as above.
                unsafe {
                    assert_eq!(expiry_of(p), meta.expiry);
                    assert_eq!(expiry_ms_of(p), meta.expiry_ms);
                    assert_eq!(flags_of(p), meta.flags);
                    assert_eq!(cas_of(p), meta.cas);
                    assert_eq!(vlen_of(p), vlen);
                    assert_eq!(value_at_of(p), h + 3);
                    assert!(key_eq(p, key));
                }
            }
        }
    }

    fn roundtrip(key: &[u8], value: &[u8], meta: Meta) {
        let n = encoded_len(key.len(), value.len(), &meta);
        let mut buf = vec![0u8; n];
        let at = write_header_and_key(&mut buf, key, value.len(), &meta);
        buf[at..].copy_from_slice(value);
        // SAFETY: buf holds a whole item just written.
        let l = unsafe { layout(buf.as_ptr()) };
        assert_eq!(l.meta, meta);
        assert_eq!(l.total(), n);
        assert_eq!(&buf[l.key_at..l.key_at + l.klen], key);
        assert_eq!(&buf[l.value_at()..], value);
        // SAFETY: as above.
        assert!(unsafe { key_eq(buf.as_ptr(), key) });
    }

    #[test]
    fn freq_rises_to_its_cap_and_survives_a_copy() {
        let meta = Meta { cas: 9, flags: 5, expiry: 0, expiry_ms: 0, marks: MARK_STALE };
        let n = encoded_len(3, 4, &meta);
        let mut buf = vec![0u8; n];
        let at = write_header_and_key(&mut buf, b"key", 4, &meta);
        buf[at..].copy_from_slice(b"vvvv");
        let p = buf.as_ptr();
        // SAFETY: buf holds a whole item; nothing else accesses it.
        unsafe {
            assert_eq!(freq(p), 0);
            for want in [1, 2, 2] {
                touch_freq(p, 2);
                assert_eq!(freq(p), want);
            }
            assert_eq!(layout(p).meta, meta, "FREQ bits are invisible to the header's fields");
            let mut copy = vec![0u8; n];
            copy_with_freq(p, copy.as_mut_ptr(), n, 1);
            assert_eq!(freq(copy.as_ptr()), 1);
            assert!(fetched(p) && fetched(copy.as_ptr()));
            assert_eq!(layout(copy.as_ptr()).meta, meta);
            assert_eq!(&copy[at..], b"vvvv");
            assert!(key_eq(copy.as_ptr(), b"key"));
        }
    }

    #[test]
    fn small_item_fits_a_24_byte_class_for_the_first_2_pow_32_cas_values() {
        for cas in [0, 7, u64::from(u32::MAX)] {
            let meta = Meta { cas, flags: 0, expiry: 0, expiry_ms: 0, marks: 0 };
            assert_eq!(encoded_len(8, 8, &meta), 3 + cas_width(cas) + 1 + 16);
            assert!(encoded_len(8, 8, &meta) <= 24, "cas {cas}");
            assert_eq!(limit_len(8, 8, &meta), 3 + 8 + 1 + 16);
        }
        let meta = Meta { cas: 1 << 32, flags: 0, expiry: 0, expiry_ms: 0, marks: 0 };
        assert_eq!(encoded_len(8, 8, &meta), 25);
    }

    #[test]
    fn cas_width_is_the_bytes_its_value_needs() {
        assert_eq!(cas_width(0), 2);
        assert_eq!(cas_width(0xFF), 2);
        assert_eq!(cas_width(0x100), 2);
        assert_eq!(cas_width(0x1_0000), 3);
        assert_eq!(cas_width(u64::MAX >> 8), 7);
        assert_eq!(cas_width(u64::MAX), 8);
        for shift in 0..64 {
            for cas in [1u64 << shift, (1u64 << shift) - 1, (1u64 << shift) | 0x5A] {
                let needed = cas.to_le_bytes().iter().rposition(|&b| b != 0).map_or(1, |i| i + 1);
                assert_eq!(cas_width(cas), needed.max(CAS_BYTES_MIN));
                roundtrip(b"key", b"v", Meta { cas, flags: 0, expiry: 0, expiry_ms: 0, marks: 0 });
            }
        }
    }

    #[test]
    fn field_reads_stay_inside_the_smallest_items() {
        // The smallest item of each CAS width and value-length width, in a
        // buffer of exactly its length: a read past the item would panic
        // in the slice indexing of `roundtrip` or be flagged by valgrind.
        for cas in [0, 0xFF_FFFF, u64::from(u32::MAX), 1 << 32, u64::MAX] {
            for vlen in [0usize, 255, 256, 0xFFFF, 0x1_0000] {
                roundtrip(b"k", &vec![7u8; vlen], Meta { cas, flags: 0, expiry: 0, expiry_ms: 0, marks: 0 });
            }
        }
    }

    #[test]
    fn roundtrips_every_vlen_width_and_optional_field() {
        for vlen in [0usize, 1, 255, 256, 65535, 65536, 0x100_0000] {
            let value = vec![0xA5u8; vlen];
            let fields = [(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 1, 1), (7, 2, 999), (u32::MAX, u32::MAX, 500)];
            for (flags, expiry, expiry_ms) in fields {
                for cas in [0, 0x1234, u64::MAX - 3] {
                    roundtrip(b"k", &value, Meta { cas, flags, expiry, expiry_ms, marks: MARK_STALE });
                }
            }
        }
        roundtrip(
            &[b'x'; KEY_BYTES_MAX],
            b"v",
            Meta { cas: 1, flags: 2, expiry: 3, expiry_ms: 0, marks: MARK_STALE | MARK_TOKEN_SENT },
        );
    }

    #[test]
    fn the_millisecond_field_is_present_only_when_needed() {
        let whole = Meta { cas: 5, flags: 0, expiry: 1_700_000_000, expiry_ms: 0, marks: 0 };
        let ms = Meta { expiry_ms: 250, ..whole };
        assert_eq!(encoded_len(8, 8, &ms), encoded_len(8, 8, &whole) + 2);
        let never = Meta { expiry: 0, ..whole };
        assert_eq!(encoded_len(8, 8, &whole), encoded_len(8, 8, &never) + 4, "whole seconds: 4 bytes, as before");
        for meta in [whole, ms, never] {
            let n = encoded_len(3, 2, &meta);
            let mut buf = vec![0u8; n];
            let at = write_header_and_key(&mut buf, b"key", 2, &meta);
            buf[at..].copy_from_slice(b"vv");
            let p = buf.as_ptr();
            // SAFETY: buf holds a whole item just written.
            unsafe {
                assert_eq!(expiry_of(p), meta.expiry);
                assert_eq!(expiry_ms_of(p), meta.expiry_ms);
                assert_eq!(cas_of(p), 5);
                assert_eq!(&buf[value_at_of(p)..], b"vv");
                assert_eq!(layout(p).meta, meta);
            }
        }
    }

    #[test]
    fn the_fetched_bit_is_set_once_and_outlives_a_frequency_reset() {
        let meta = Meta { cas: 9, flags: 0, expiry: 0, expiry_ms: 0, marks: MARK_STALE };
        let n = encoded_len(3, 1, &meta);
        let mut buf = vec![0u8; n];
        write_header_and_key(&mut buf, b"key", 1, &meta);
        let p = buf.as_ptr();
        // SAFETY: buf holds a whole item; nothing else accesses it.
        unsafe {
            assert!(!fetched(p));
            mark_fetched(p);
            mark_fetched(p);
            assert!(fetched(p));
            assert_eq!(marks_of(p), MARK_STALE, "not one of the marks");
            assert_eq!(layout(p).meta, meta);
            let mut copy = vec![0u8; n];
            copy_with_freq(p, copy.as_mut_ptr(), n, 0);
            assert!(fetched(copy.as_ptr()), "a copy keeps it");
            let mut fresh = vec![0u8; n];
            write_header_and_key(&mut fresh, b"key", 1, &meta);
            touch_freq(fresh.as_ptr(), 3);
            let mut copy = vec![0u8; n];
            copy_with_freq(fresh.as_ptr(), copy.as_mut_ptr(), n, 0);
            assert!(fetched(copy.as_ptr()), "a reinsertion at frequency 0 keeps a GET's hit");
        }
        let carried = Meta { marks: MARK_FETCHED | MARK_TOKEN_SENT, ..meta };
        let mut buf = vec![0u8; n];
        write_header_and_key(&mut buf, b"key", 1, &carried);
        // SAFETY: as above.
        unsafe { assert!(fetched(buf.as_ptr()) && marks_of(buf.as_ptr()) == MARK_TOKEN_SENT) };
    }
}
