//! Redis's hash: field → value, Redis 7 semantics.
//!
//! ## Forms
//! * **Compact** (`encoding() == "listpack"`): a [`pack`] of
//!   `field, value, field, value, …` in insertion order, while the hash
//!   has at most `hash_max_listpack_entries` fields and every field and
//!   value is at most `hash_max_listpack_value` bytes. These bytes are
//!   what the server stores as the item's value ([`Hash::packed`]); reads
//!   go through the borrowed [`packed_get`], [`packed_len`],
//!   [`packed_iter`] without building a `Hash`.
//! * **Large** (`"hashtable"`): converted once, never back (Redis 7.0):
//!   each pair is one arena element `[varint field_len][field][value]`
//!   indexed by an [`arena::Table`] (4-byte handles in a SwissTable).
//!
//! ## Commands → methods
//! HSET/HMSET: [`Hash::insert`] per pair; HSETNX: [`Hash::contains`] then
//! insert; HGET/HMGET/HSTRLEN/HEXISTS: [`Hash::get`]; HDEL:
//! [`Hash::remove`]; HLEN: [`Hash::len`]; HKEYS/HVALS/HGETALL:
//! [`Hash::iter`]; HINCRBY: [`Hash::incr_by`]; HINCRBYFLOAT:
//! [`Hash::incr_by_float`] (takes the increment's bytes: Redis's
//! `long double` semantics, see [`ld`]); HRANDFIELD:
//! [`Hash::random_fields`]; HSCAN: [`Hash::scan`] (the server applies
//! MATCH inside the visitor; COUNT counts visited fields, as Redis).
//! Output order of HGETALL etc. is insertion order while compact and
//! arena order when large (Redis's is its dict's order: clients must not
//! rely on either).

pub mod ld;

use crate::arena::{self, Table};
use crate::{pack, varint, Corrupt, Thresholds};

/// Snapshot tag: the pairs follow as a pack, compact form.
const TAG_COMPACT: u8 = 0;
/// Snapshot tag: the pairs follow as a pack, large form.
const TAG_LARGE: u8 = 1;
/// Above this many pairs, duplicate checks on untrusted bytes use a
/// hash set rather than pairwise comparison.
const DUP_CHECK_LINEAR_MAX: usize = 16;
/// A negative HRANDFIELD count at least 1/this of the hash's size
/// collects all handles once instead of walking the arena per pick.
const RANDOM_COLLECT_RATIO: usize = 16;
/// A positive HRANDFIELD count above 1/this of the size is served by
/// one selection-sampling pass instead of repeated random picks.
const RANDOM_PASS_RATIO: usize = 64;

/// HINCRBY / HINCRBYFLOAT failures, with Redis 7's reply texts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HashError {
    /// The field's value is not a canonical integer.
    NotAnInteger,
    /// The sum leaves the i64 range.
    Overflow,
    /// The field's value is not a `long double` (string2ld).
    NotAFloat,
    /// The sum is NaN or infinite.
    NanOrInfinity,
    /// HINCRBYFLOAT's increment is not a valid float.
    IncrNotAFloat,
    /// HINCRBYFLOAT's increment is infinite.
    IncrNanOrInfinity,
}

/// HINCRBYFLOAT's increment, checked as Redis checks it before it looks
/// at the key (so a bad increment on a key of another kind answers this
/// error, not WRONGTYPE).
pub fn float_incr(incr: &[u8]) -> Result<ld::Ld, HashError> {
    let incr = ld::parse(incr).ok_or(HashError::IncrNotAFloat)?;
    if incr.is_infinite() {
        return Err(HashError::IncrNanOrInfinity);
    }
    Ok(incr)
}

impl HashError {
    /// The error reply's text (after the `-`).
    pub fn message(self) -> &'static str {
        match self {
            HashError::NotAnInteger => "ERR hash value is not an integer",
            HashError::Overflow => "ERR increment or decrement would overflow",
            HashError::NotAFloat => "ERR hash value is not a float",
            HashError::NanOrInfinity => "ERR increment would produce NaN or Infinity",
            HashError::IncrNotAFloat => "ERR value is not a valid float",
            HashError::IncrNanOrInfinity => "ERR value is NaN or Infinity",
        }
    }
}

impl std::fmt::Display for HashError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for HashError {}

/// A hash of any size. See the module documentation.
#[derive(Debug)]
pub struct Hash {
    repr: Repr,
}

#[derive(Debug)]
enum Repr {
    /// A pack of field, value pairs.
    Packed(Vec<u8>),
    /// Arena elements `[varint flen][field][value]` keyed by field.
    Table(Table),
}

/// The field of a large-form element.
fn field_of(e: &[u8]) -> &[u8] {
    split(e).0
}

/// (field, value) of a large-form element.
fn split(e: &[u8]) -> (&[u8], &[u8]) {
    let (flen, n) = varint::get(e).unwrap_or((0, 0));
    let end = n.saturating_add(flen as usize).min(e.len());
    (&e[n.min(end)..end], &e[end..])
}

/// The value of `field` in compact bytes (borrowed, no allocation).
pub fn packed_get<'a>(bytes: &'a [u8], field: &[u8]) -> Option<&'a [u8]> {
    let pos = pack::find(bytes, 2, field)?;
    let (_, next) = pack::entry_at(bytes, pos.offset)?;
    pack::entry_at(bytes, next).map(|(v, _)| v)
}

/// Fields in compact bytes. O(1).
pub fn packed_len(bytes: &[u8]) -> usize {
    pack::count(bytes) / 2
}

/// The (field, value) pairs of compact bytes, in order.
pub fn packed_iter(bytes: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
    let mut it = pack::iter(bytes);
    std::iter::from_fn(move || Some((it.next()?, it.next()?)))
}

/// Checks untrusted pair bytes: a valid pack, an even count, no field twice.
fn validate_pairs(bytes: &[u8]) -> Result<usize, Corrupt> {
    let n = pack::validate(bytes)?;
    if n % 2 != 0 {
        return Err(Corrupt);
    }
    let pairs = n / 2;
    if pairs <= DUP_CHECK_LINEAR_MAX {
        let fields: Vec<&[u8]> = packed_iter(bytes).map(|(f, _)| f).collect();
        // Bounded: ≤ DUP_CHECK_LINEAR_MAX² comparisons.
        for (i, f) in fields.iter().enumerate() {
            if fields[..i].contains(f) {
                return Err(Corrupt);
            }
        }
    } else {
        let mut seen = std::collections::HashSet::with_capacity(pairs);
        // Bounded by the pairs.
        for (f, _) in packed_iter(bytes) {
            if !seen.insert(f) {
                return Err(Corrupt);
            }
        }
    }
    Ok(pairs)
}

/// Redis's HRANDFIELD / SRANDMEMBER count rules over `n` items reached
/// by index: `count` ≥ n visits all once; 0 < count < n a uniformly
/// random distinct subset (partial Fisher–Yates); count < 0 |count|
/// independent uniform picks. For compact forms (n ≤ a threshold).
pub(crate) fn sample_indices(n: usize, count: i64, rng: &mut dyn FnMut() -> u64, f: &mut dyn FnMut(usize)) {
    if n == 0 || count == 0 {
        return;
    }
    if count < 0 {
        // Bounded by |count| (the server bounds the reply).
        for _ in 0..count.unsigned_abs() {
            f((rng() % n as u64) as usize);
        }
        return;
    }
    let k = usize::try_from(count).unwrap_or(usize::MAX);
    if k >= n {
        (0..n).for_each(f);
        return;
    }
    let mut idx: Vec<usize> = (0..n).collect();
    // Bounded: k < n swaps.
    for i in 0..k {
        let j = i + (rng() % (n - i) as u64) as usize;
        idx.swap(i, j);
        f(idx[i]);
    }
}

/// The same rules over a large table's elements (see [`sample_indices`]).
pub(crate) fn sample_table(t: &Table, count: i64, rng: &mut dyn FnMut() -> u64, f: &mut dyn FnMut(&[u8])) {
    let n = t.len();
    if n == 0 || count == 0 {
        return;
    }
    if count < 0 {
        let picks = count.unsigned_abs();
        if picks.saturating_mul(RANDOM_COLLECT_RATIO as u64) >= n as u64 {
            let all: Vec<arena::Handle> = t.iter().map(|(h, _)| h).collect();
            // Bounded by |count|.
            for _ in 0..picks {
                f(t.element(all[(rng() % n as u64) as usize]));
            }
        } else {
            // Bounded by |count| < n / RANDOM_COLLECT_RATIO.
            for _ in 0..picks {
                if let Some(h) = t.random(rng()) {
                    f(t.element(h));
                }
            }
        }
        return;
    }
    let k = usize::try_from(count).unwrap_or(usize::MAX);
    if k >= n {
        t.iter().for_each(|(_, e)| f(e));
        return;
    }
    if k.saturating_mul(RANDOM_PASS_RATIO) > n {
        // Selection sampling (Knuth's Algorithm S): one pass, exactly k.
        let (mut left, mut need) = (n as u64, k as u64);
        // Bounded by n.
        for (_, e) in t.iter() {
            if need == 0 {
                break;
            }
            if rng() % left < need {
                f(e);
                need -= 1;
            }
            left -= 1;
        }
        return;
    }
    // k ≤ n / RANDOM_PASS_RATIO: repeated picks rarely repeat (< 2% of
    // them); bounded by RANDOM_PASS_RATIO · k attempts, after which the
    // remaining are taken in order (never reached in practice).
    let mut seen = std::collections::HashSet::with_capacity(k);
    let mut attempts = 0usize;
    while seen.len() < k && attempts < k * RANDOM_PASS_RATIO {
        attempts += 1;
        if let Some(h) = t.random(rng()) {
            if seen.insert(h) {
                f(t.element(h));
            }
        }
    }
    for (h, e) in t.iter() {
        if seen.len() >= k {
            break;
        }
        if seen.insert(h) {
            f(e);
        }
    }
}

impl Default for Hash {
    fn default() -> Self {
        Hash::new()
    }
}

impl Hash {
    /// An empty compact hash.
    pub fn new() -> Hash {
        Hash { repr: Repr::Packed(pack::new()) }
    }

    /// Fields.
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Packed(p) => packed_len(p),
            Repr::Table(t) => t.len(),
        }
    }

    /// True with no fields (the server deletes such a key).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// OBJECT ENCODING's name for the current form.
    pub fn encoding(&self) -> &'static str {
        match self.repr {
            Repr::Packed(_) => "listpack",
            Repr::Table(_) => "hashtable",
        }
    }

    /// Heap bytes held (capacities; not the `Hash` itself). O(1).
    pub fn mem_bytes(&self) -> usize {
        match &self.repr {
            Repr::Packed(p) => p.capacity(),
            Repr::Table(t) => t.mem_bytes(),
        }
    }

    /// The compact bytes (what the server stores as the item's value), or
    /// None in the large form.
    pub fn packed(&self) -> Option<&[u8]> {
        match &self.repr {
            Repr::Packed(p) => Some(p),
            Repr::Table(_) => None,
        }
    }

    /// The compact bytes, moved out for `Value::into_packed` (the hash
    /// is left without bytes: drop it); None in the large form.
    pub(crate) fn take_packed(&mut self) -> Option<Vec<u8>> {
        match &mut self.repr {
            Repr::Packed(p) => Some(std::mem::take(p)),
            Repr::Table(_) => None,
        }
    }

    /// A compact hash from its bytes (checked: a valid pack of pairs with
    /// no duplicate field).
    pub fn from_packed(bytes: &[u8]) -> Result<Hash, Corrupt> {
        validate_pairs(bytes)?;
        Ok(Hash { repr: Repr::Packed(bytes.to_vec()) })
    }

    /// [`Hash::from_packed`] for bytes this build packed, as every item
    /// of the store holds (recovery checks a file's with
    /// [`Hash::from_packed`] before it stores them): not checked again.
    /// The check walked every entry and compared every field with every
    /// other (a third of a small hash's HSET); debug builds still run it.
    pub fn from_packed_trusted(bytes: &[u8]) -> Hash {
        debug_assert!(validate_pairs(bytes).is_ok(), "trusted bytes that are not a pack of pairs");
        Hash { repr: Repr::Packed(crate::writable_copy(bytes)) }
    }

    /// Converts a compact hash that exceeds `th` to the large form (as
    /// Redis does when it loads a snapshot under smaller limits); call
    /// after [`Hash::decode`] or [`Hash::from_packed`] if the thresholds
    /// may have changed. O(n) once, no-op otherwise.
    pub fn fit(&mut self, th: &Thresholds) {
        if let Repr::Packed(p) = &self.repr {
            let over = packed_len(p) > th.hash_max_listpack_entries
                || packed_iter(p)
                    .any(|(f, v)| f.len() > th.hash_max_listpack_value || v.len() > th.hash_max_listpack_value);
            if over {
                self.convert_to_table();
            }
        }
    }

    /// The value of `field`.
    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match &self.repr {
            Repr::Packed(p) => packed_get(p, field),
            Repr::Table(t) => t.get(field).map(|e| split(e).1),
        }
    }

    /// True if `field` exists.
    pub fn contains(&self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }

    /// Converts to the large form (once; O(n)).
    fn convert_to_table(&mut self) {
        if let Repr::Packed(p) = &self.repr {
            let mut t = Table::with_capacity(field_of, packed_len(p));
            // Bounded by the compact form's pairs.
            for (f, v) in packed_iter(p) {
                t.upsert(f, &[&varint_bytes(f.len()), f, v]);
            }
            self.repr = Repr::Table(t);
        }
    }

    /// Sets `field` to `value`; true if the field is new. Converts to the
    /// large form when the thresholds are passed.
    pub fn insert(&mut self, field: &[u8], value: &[u8], th: &Thresholds) -> bool {
        if let Repr::Packed(p) = &mut self.repr {
            let long = field.len() > th.hash_max_listpack_value || value.len() > th.hash_max_listpack_value;
            match pack::find(p, 2, field) {
                Some(pos) if !long => {
                    let (_, value_at) = pack::entry_at(p, pos.offset).expect("found entry");
                    pack::replace(p, value_at, value);
                    return false;
                }
                None if !long && packed_len(p) < th.hash_max_listpack_entries => {
                    pack::push(p, &[field, value]);
                    return true;
                }
                _ => self.convert_to_table(),
            }
        }
        let Repr::Table(t) = &mut self.repr else { unreachable!("converted above") };
        t.upsert(field, &[&varint_bytes(field.len()), field, value])
    }

    /// Removes `field`; true if it existed.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match &mut self.repr {
            Repr::Packed(p) => match pack::find(p, 2, field) {
                Some(pos) => {
                    pack::remove(p, pos.offset, 2);
                    true
                }
                None => false,
            },
            Repr::Table(t) => t.remove(field),
        }
    }

    /// Every (field, value): insertion order while compact, arena order
    /// when large.
    pub fn iter(&self) -> Box<dyn Iterator<Item = (&[u8], &[u8])> + '_> {
        match &self.repr {
            Repr::Packed(p) => Box::new(packed_iter(p)),
            Repr::Table(t) => Box::new(t.iter().map(|(_, e)| split(e))),
        }
    }

    /// HINCRBY: adds `incr` to the field's integer value (a missing field
    /// counts as 0) and returns the new value.
    pub fn incr_by(&mut self, field: &[u8], incr: i64, th: &Thresholds) -> Result<i64, HashError> {
        let cur = match self.get(field) {
            None => 0,
            Some(v) => crate::set::parse_i64(v).ok_or(HashError::NotAnInteger)?,
        };
        let new = cur.checked_add(incr).ok_or(HashError::Overflow)?;
        self.insert(field, new.to_string().as_bytes(), th);
        Ok(new)
    }

    /// HINCRBYFLOAT: adds the increment (its argument bytes, parsed as
    /// Redis's `string2ld`) to the field's value in `long double`
    /// precision, stores and returns the result as Redis prints it
    /// (`%.17Lf`, trailing zeros trimmed). Errors in Redis's order.
    pub fn incr_by_float(&mut self, field: &[u8], incr: &[u8], th: &Thresholds) -> Result<Vec<u8>, HashError> {
        let incr = float_incr(incr)?;
        let cur = match self.get(field) {
            None => ld::Ld::ZERO,
            Some(v) => ld::parse(v).ok_or(HashError::NotAFloat)?,
        };
        let sum = ld::add(cur, incr).ok_or(HashError::NanOrInfinity)?;
        let out = ld::format_human(sum);
        self.insert(field, &out, th);
        Ok(out)
    }

    /// HRANDFIELD's selection: `count` ≥ 0 visits min(count, len) distinct
    /// fields; `count` < 0 visits |count| fields picked independently
    /// (repeats possible). `rng` supplies random words (the server passes
    /// its generator; tests a seeded one). The server bounds |count| and
    /// drops values without WITHVALUES; a single HRANDFIELD without count
    /// is `count == -1`.
    pub fn random_fields(&self, count: i64, rng: &mut dyn FnMut() -> u64, f: &mut dyn FnMut(&[u8], &[u8])) {
        match &self.repr {
            Repr::Packed(p) => {
                let pairs: Vec<(&[u8], &[u8])> = packed_iter(p).collect();
                sample_indices(pairs.len(), count, rng, &mut |i| f(pairs[i].0, pairs[i].1));
            }
            Repr::Table(t) => sample_table(t, count, rng, &mut |e| {
                let (k, v) = split(e);
                f(k, v)
            }),
        }
    }

    /// One HSCAN step: visits fields from `cursor` (0 starts) and returns
    /// the next cursor, 0 when done. Compact: everything at once, cursor
    /// 0 (as Redis for listpacks). Large: about `count` fields per call
    /// ([`arena::Arena::scan`]); a field present for the whole scan is
    /// visited at least once, possibly twice.
    pub fn scan(&self, cursor: u64, count: usize, f: &mut dyn FnMut(&[u8], &[u8])) -> u64 {
        match &self.repr {
            Repr::Packed(p) => {
                packed_iter(p).for_each(|(k, v)| f(k, v));
                0
            }
            Repr::Table(t) => t.scan(cursor, count, &mut |_, e| {
                let (k, v) = split(e);
                f(k, v)
            }),
        }
    }

    /// Appends the snapshot encoding: a tag byte (compact / large) and a
    /// pack of the pairs.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match &self.repr {
            Repr::Packed(p) => {
                out.push(TAG_COMPACT);
                out.extend_from_slice(p);
            }
            Repr::Table(t) => {
                out.push(TAG_LARGE);
                varint::put(out, 2 * t.len() as u64);
                // Bounded by the elements.
                for (_, e) in t.iter() {
                    let (k, v) = split(e);
                    varint::put(out, k.len() as u64);
                    out.extend_from_slice(k);
                    varint::put(out, v.len() as u64);
                    out.extend_from_slice(v);
                }
            }
        }
    }

    /// Decodes [`Hash::encode`]'s bytes; never panics on garbage.
    pub fn decode(bytes: &[u8]) -> Result<Hash, Corrupt> {
        let (&tag, body) = bytes.split_first().ok_or(Corrupt)?;
        match tag {
            TAG_COMPACT => Hash::from_packed(body),
            TAG_LARGE => {
                let pairs = validate_pairs(body)?;
                let mut t = Table::with_capacity(field_of, pairs);
                // Bounded by the pairs.
                for (f, v) in packed_iter(body) {
                    t.upsert(f, &[&varint_bytes(f.len()), f, v]);
                }
                Ok(Hash { repr: Repr::Table(t) })
            }
            _ => Err(Corrupt),
        }
    }
}

/// A varint as a small owned buffer (for `Table::upsert`'s parts).
fn varint_bytes(v: usize) -> Vec<u8> {
    let mut b = Vec::with_capacity(varint::VARINT_BYTES_MAX);
    varint::put(&mut b, v as u64);
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> Thresholds {
        Thresholds { hash_max_listpack_entries: 4, hash_max_listpack_value: 8, ..Thresholds::default() }
    }

    #[test]
    fn converts_on_count_and_length() {
        let th = tiny();
        let mut h = Hash::new();
        for i in 0..4 {
            assert!(h.insert(format!("f{i}").as_bytes(), b"v", &th));
        }
        assert_eq!(h.encoding(), "listpack");
        assert!(!h.insert(b"f0", b"w", &th));
        assert_eq!(h.get(b"f0"), Some(&b"w"[..]));
        assert!(h.insert(b"f4", b"v", &th));
        assert_eq!(h.encoding(), "hashtable");
        assert_eq!(h.len(), 5);
        let mut h = Hash::new();
        h.insert(b"a", b"123456789", &th);
        assert_eq!(h.encoding(), "hashtable", "long value");
        assert_eq!(h.get(b"a"), Some(&b"123456789"[..]));
        let mut big = Hash::new();
        for i in 0..4 {
            big.insert(format!("f{i}").as_bytes(), b"v", &Thresholds::default());
        }
        let mut h = Hash::from_packed(big.packed().unwrap()).unwrap();
        h.fit(&Thresholds::default());
        assert_eq!(h.encoding(), "listpack");
        h.fit(&Thresholds { hash_max_listpack_entries: 3, ..th });
        assert_eq!((h.encoding(), h.len()), ("hashtable", 4));
    }

    #[test]
    fn incr_errors_match_redis() {
        let th = Thresholds::default();
        let mut h = Hash::new();
        h.insert(b"s", b"abc", &th);
        h.insert(b"z", b"01", &th);
        h.insert(b"m", b"-0", &th);
        h.insert(b"max", b"9223372036854775807", &th);
        assert_eq!(h.incr_by(b"s", 1, &th), Err(HashError::NotAnInteger));
        assert_eq!(h.incr_by(b"z", 1, &th), Err(HashError::NotAnInteger));
        assert_eq!(h.incr_by(b"m", 1, &th), Err(HashError::NotAnInteger));
        assert_eq!(h.incr_by(b"max", 1, &th), Err(HashError::Overflow));
        assert_eq!(h.incr_by(b"n", i64::MIN, &th), Ok(i64::MIN));
        assert_eq!(h.incr_by(b"n", -1, &th), Err(HashError::Overflow));
        assert_eq!(h.incr_by_float(b"s", b"1", &th), Err(HashError::NotAFloat));
        assert_eq!(h.incr_by_float(b"x", b"nan", &th), Err(HashError::IncrNotAFloat));
        assert_eq!(h.incr_by_float(b"x", b"inf", &th), Err(HashError::IncrNanOrInfinity));
        h.insert(b"i", b"inf", &th);
        assert_eq!(h.incr_by_float(b"i", b"1", &th), Err(HashError::NanOrInfinity));
        assert_eq!(h.incr_by_float(b"z", b"1", &th).unwrap(), b"2");
        h.insert(b"f", b"10.50", &th);
        assert_eq!(h.incr_by_float(b"f", b"0.1", &th).unwrap(), b"10.6");
        assert_eq!(h.get(b"f"), Some(&b"10.6"[..]));
        assert_eq!(HashError::Overflow.message(), "ERR increment or decrement would overflow");
    }

    #[test]
    fn random_fields_semantics() {
        let th = tiny();
        for n in [3usize, 50] {
            let mut h = Hash::new();
            for i in 0..n {
                h.insert(format!("f{i}").as_bytes(), b"v", &th);
            }
            let mut s = 1u64;
            let mut rng = move || {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1);
                s >> 11
            };
            for count in [0i64, 1, 2, 10, 49, 50, 100, -1, -5, -200] {
                let mut got = Vec::new();
                h.random_fields(count, &mut rng, &mut |f, v| {
                    assert_eq!(v, b"v");
                    got.push(f.to_vec());
                });
                let want = if count >= 0 { (count as usize).min(n) } else { count.unsigned_abs() as usize };
                assert_eq!(got.len(), want, "n {n} count {count}");
                if count > 0 {
                    got.sort();
                    got.dedup();
                    assert_eq!(got.len(), want, "distinct");
                }
            }
        }
    }
}
