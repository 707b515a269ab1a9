//! Key namespaces: many keyspaces in one store (Redis's numbered
//! databases), with the first one's keys stored as they are.
//!
//! ## The encoding
//!
//! A stored key that begins with [`NS_ESCAPE`] (0xFF) carries its
//! namespace in its second byte; its name is the rest. Every other stored
//! key is in namespace 0 under its own name:
//!
//! ```text
//!   namespace 0, name not starting with 0xFF:   name               (stored as is)
//!   namespace 0, name starting with 0xFF:       0xFF 0x00 name     (escaped)
//!   namespace n ≥ 1:                            0xFF n    name
//! ```
//!
//! The encoding is injective (two different (namespace, name) pairs never
//! store the same key), so namespaces share one index, one memory budget,
//! one eviction policy, one log and one snapshot, and the engine needs no
//! field in the item for them: a key is still bytes. Namespace 0's names
//! almost never begin with 0xFF (it is not UTF-8's first byte of
//! anything), so its GETs and SETs pay one compare of the key's first
//! byte in the front end that encodes ([`needs_encoding`]) and nothing in
//! the engine's lookup. The cost is two bytes per key outside namespace
//! 0, and names there are two bytes shorter at most
//! ([`NAME_BYTES_MAX_OUTSIDE_ZERO`]).
//!
//! Why not one table per namespace: the memory budget, the eviction
//! policy, the snapshot, the log and the multi-key transactions
//! (`txn.rs`: MOVE, and MULTI/EXEC across SELECT) would each have to span
//! tables, and cache mode's eviction finds an item's bucket from its key
//! alone. Why not a field in the item: the header has no spare bit (see
//! `item.rs`), and a lookup in namespace 0 would test it on every probe.
//! The engine's only part beyond the encoding is counting items per
//! namespace ([`Store::namespace_len`]), kept per thread like the item
//! count, at the same five places, with one test of the key's first byte.

use crate::store::Store;
use std::sync::atomic::Ordering;

/// The first byte of a stored key that carries a namespace.
pub const NS_ESCAPE: u8 = 0xFF;
/// How many namespaces the encoding holds (the second byte).
pub const NAMESPACES: usize = 256;
/// Bytes the encoding adds to a name outside namespace 0 (or escaped).
pub const NS_PREFIX_BYTES: usize = 2;
/// The longest name a namespace other than 0 holds (the engine's
/// [`crate::KEY_BYTES_MAX`] less the prefix); also the longest escaped
/// name of namespace 0.
pub const NAME_BYTES_MAX_OUTSIDE_ZERO: usize = crate::KEY_BYTES_MAX - NS_PREFIX_BYTES;

/// True if `name` in namespace `ns` is not stored as it is.
#[inline(always)]
pub fn needs_encoding(ns: u8, name: &[u8]) -> bool {
    ns != 0 || name.first() == Some(&NS_ESCAPE)
}

/// Appends the stored form of `name` in namespace `ns` to `out`.
///
/// ```
/// use amalgam_engine::namespace::{encode_into, split};
/// let mut k = Vec::new();
/// encode_into(3, b"user:1", &mut k);
/// assert_eq!(k, b"\xff\x03user:1");
/// assert_eq!(split(&k), (3, &b"user:1"[..]));
/// k.clear();
/// encode_into(0, b"plain", &mut k);
/// assert_eq!(k, b"plain");
/// ```
pub fn encode_into(ns: u8, name: &[u8], out: &mut Vec<u8>) {
    if needs_encoding(ns, name) {
        out.reserve(NS_PREFIX_BYTES + name.len());
        out.push(NS_ESCAPE);
        out.push(ns);
    }
    out.extend_from_slice(name);
}

/// The stored form of `name` in namespace `ns`, as a new vector.
pub fn encode(ns: u8, name: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(name.len() + NS_PREFIX_BYTES);
    encode_into(ns, name, &mut out);
    out
}

/// A stored key's namespace and name. A key of one byte 0xFF (which no
/// encoding makes) is read as namespace 0's.
///
/// ```
/// use amalgam_engine::namespace::split;
/// assert_eq!(split(b"k"), (0, &b"k"[..]));
/// assert_eq!(split(b"\xff\x00\xffk"), (0, &b"\xffk"[..]));
/// assert_eq!(split(b"\xff\x0ak"), (10, &b"k"[..]));
/// ```
#[inline]
pub fn split(stored: &[u8]) -> (u8, &[u8]) {
    match stored {
        [NS_ESCAPE, ns, name @ ..] => (*ns, name),
        _ => (0, stored),
    }
}

/// The name of `stored` if it is in namespace `ns`.
#[inline]
pub fn name_in(ns: u8, stored: &[u8]) -> Option<&[u8]> {
    let (n, name) = split(stored);
    (n == ns).then_some(name)
}

/// The namespace counted for a stored key: None for namespace 0 stored as
/// is (counted as the store's total less the others).
#[inline(always)]
pub(crate) fn counted(stored: &[u8]) -> Option<usize> {
    match stored {
        [NS_ESCAPE, ns, ..] => Some(*ns as usize),
        _ => None,
    }
}

impl Store {
    /// Items in namespace `ns` (expired but unreclaimed ones included, as
    /// [`Store::len`]).
    ///
    /// ```
    /// use amalgam_engine::{namespace::encode, Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// store.set(b"a", b"1", 0, Expiry::Never).unwrap();
    /// store.set(&encode(2, b"a"), b"2", 0, Expiry::Never).unwrap();
    /// store.set(&encode(0, b"\xffa"), b"3", 0, Expiry::Never).unwrap();
    /// assert_eq!((store.namespace_len(0), store.namespace_len(2), store.namespace_len(3)), (2, 1, 0));
    /// ```
    pub fn namespace_len(&self, ns: u8) -> u64 {
        let counts = self.namespace_counts();
        if ns != 0 {
            return counts[ns as usize];
        }
        let others: u64 = counts[1..].iter().sum();
        (self.len() as u64).saturating_sub(others)
    }

    /// Items with a deadline in namespace `ns` (INFO keyspace's
    /// `expires=`; expired but unreclaimed ones included).
    ///
    /// ```
    /// use amalgam_engine::{namespace::encode, Expiry, Store};
    /// let store = Store::new(Default::default()).unwrap();
    /// store.set(b"a", b"1", 0, Expiry::Never).unwrap();
    /// store.set(b"b", b"1", 0, Expiry::At(u32::MAX - 1)).unwrap();
    /// store.set(&encode(2, b"b"), b"2", 0, Expiry::At(u32::MAX - 1)).unwrap();
    /// assert_eq!((store.namespace_ttl_len(0), store.namespace_ttl_len(2)), (1, 1));
    /// store.set(b"b", b"1", 0, Expiry::Never).unwrap();
    /// assert_eq!(store.namespace_ttl_len(0), 0);
    /// ```
    pub fn namespace_ttl_len(&self, ns: u8) -> u64 {
        let mut total = 0i64;
        let mut mine = 0i64;
        let mut others = 0i64;
        for l in self.inner.epochs.all() {
            total += l.ttl_items.load(Ordering::Relaxed);
            for (n, c) in l.ns_ttl_items.iter().enumerate().skip(1) {
                let c = c.load(Ordering::Relaxed);
                others += c;
                if n == ns as usize {
                    mine += c;
                }
            }
        }
        if ns == 0 {
            (total - others).max(0) as u64
        } else {
            mine.max(0) as u64
        }
    }

    /// Items per namespace other than 0, indexed by namespace (index 0:
    /// namespace 0's escaped names only; [`Store::namespace_len`] gives
    /// its whole count).
    pub fn namespace_counts(&self) -> Box<[u64; NAMESPACES]> {
        let mut sums = Box::new([0i64; NAMESPACES]);
        for l in self.inner.epochs.all() {
            for (s, c) in sums.iter_mut().zip(l.ns_items.iter()) {
                *s += c.load(Ordering::Relaxed);
            }
        }
        Box::new(sums.map(|s| s.max(0) as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_encoding_is_injective_over_small_names() {
        let mut seen = std::collections::HashMap::new();
        let names: Vec<Vec<u8>> =
            vec![vec![], vec![0], vec![0xFF], vec![0xFF, 0], vec![0xFF, 1], vec![0xFF, 0xFF, 2], b"k".to_vec()];
        for ns in [0u8, 1, 2, 255] {
            for n in &names {
                let k = encode(ns, n);
                assert_eq!(split(&k), (ns, &n[..]), "{ns} {n:?}");
                if let Some(prev) = seen.insert(k.clone(), (ns, n.clone())) {
                    panic!("{prev:?} and {:?} both store {k:?}", (ns, n));
                }
            }
        }
    }
}
