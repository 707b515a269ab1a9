//! Redis's set, Redis 7.2's representations and Redis 7 semantics.
//!
//! ## Forms
//! * **intset** (compact): while every member is an integer — exactly
//!   the strings Redis's `string2ll` accepts ([`parse_i64`]: canonical
//!   decimal, no `+`, no leading zeros, no `-0`) — and there are at most
//!   `set_max_intset_entries`: sorted integers in the narrowest width
//!   ([`intset`]).
//! * **listpack** (compact): a [`pack`] of members, while at most
//!   `set_max_listpack_entries` members of at most `set_max_listpack_value`
//!   bytes. An intset that gets a non-integer member becomes a listpack
//!   if it would fit one (Redis 7.2's check: fewer members than the entry
//!   limit, the new member and the intset's widest integer within the
//!   value limit), else goes straight to the string table. An intset
//!   with too many integers goes to the integer table.
//! * **hashtable** (large): integers: an [`arena::Table`] whose elements
//!   are the integers' minimal little-endian two's-complement bytes
//!   (1–8 bytes: 1 + 5 bytes an element for values below 2^39); strings:
//!   an [`arena::Table`] of the members. Both go through the arena (not a
//!   `HashTable<i64>`) so SSCAN has the arena's cursor guarantee and
//!   SRANDMEMBER its uniform picks; it is also smaller (≈ 16.5 B per
//!   integer against 18.9 B for a table of i64). An integer table that
//!   gets a string member is rebuilt once as a string table.
//!
//! The compact bytes ([`Set::packed`]) start with a tag: 2, 4 or 8 for
//! an intset (its width), [`TAG_PACK`] for a listpack; the borrowed
//! [`packed_contains`], [`packed_len`], [`packed_iter`] read either.
//!
//! ## Commands → methods
//! SADD [`Set::insert`]; SREM [`Set::remove`]; SISMEMBER/SMISMEMBER
//! [`Set::contains`]; SCARD [`Set::len`]; SMEMBERS [`Set::iter`]; SPOP
//! [`Set::pop_random`]; SRANDMEMBER [`Set::random_members`]; SMOVE
//! remove + insert; SSCAN [`Set::scan`]; SINTER/SINTERSTORE [`inter`],
//! SINTERCARD [`inter_card`], SUNION/SUNIONSTORE [`union`],
//! SDIFF/SDIFFSTORE [`diff`] (in [`algebra`]). Members come back as
//! [`Member`]s (an integer form is formatted by the server); output
//! order is the form's order (ascending for intsets, insertion order for
//! listpacks, arena order for tables), which may differ from Redis's.

pub mod algebra;
pub(crate) mod intset;

pub use algebra::{diff, inter, inter_card, union};

use crate::arena::Table;
use crate::hash::{sample_indices, sample_table};
use crate::{pack, Corrupt, Thresholds};

/// Compact-bytes tag of a listpack (intsets use their width, 2/4/8).
pub const TAG_PACK: u8 = 0;
/// Snapshot tag: compact bytes follow.
const TAG_COMPACT: u8 = 0;
/// Snapshot tag: a pack of the members' strings follows (large form).
const TAG_LARGE: u8 = 1;
/// Decimal bytes of the longest i64 (`-9223372036854775808`).
pub const INT_STR_BYTES_MAX: usize = 20;

/// Redis's `string2ll`: `s` as an i64 iff it is the integer's canonical
/// decimal form (no sign but `-`, no leading zeros, no `-0`, at most 20
/// bytes, in range). This decides intset membership and HINCRBY's and
/// INCR's "is an integer".
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > INT_STR_BYTES_MAX {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (neg, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, s),
    };
    match digits.first() {
        Some(b'1'..=b'9') => {}
        _ => return None,
    }
    let mut v: u64 = 0;
    // Bounded: ≤ 20 digits.
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    if neg {
        // -(2^63) is i64::MIN, which wrapping_neg maps to itself.
        (v <= 1 << 63).then(|| (v as i64).wrapping_neg())
    } else {
        i64::try_from(v).ok()
    }
}

/// `v` in decimal, into `buf`; returns the digits.
pub fn format_i64(v: i64, buf: &mut [u8; INT_STR_BYTES_MAX]) -> &[u8] {
    let mut at = INT_STR_BYTES_MAX;
    let mut u = v.unsigned_abs();
    // Bounded: ≤ 19 digits.
    loop {
        at -= 1;
        buf[at] = b'0' + (u % 10) as u8;
        u /= 10;
        if u == 0 {
            break;
        }
    }
    if v < 0 {
        at -= 1;
        buf[at] = b'-';
    }
    &buf[at..]
}

/// A member as a form holds it: an integer (intset, integer table) or
/// bytes. Its string is the integer's decimal form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Member<'a> {
    Int(i64),
    Str(&'a [u8]),
}

impl Member<'_> {
    /// Calls `f` with the member's bytes (no allocation).
    pub fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        match *self {
            Member::Int(v) => f(format_i64(v, &mut [0; INT_STR_BYTES_MAX])),
            Member::Str(s) => f(s),
        }
    }

    /// The member's bytes, owned.
    pub fn to_vec(&self) -> Vec<u8> {
        self.with_bytes(<[u8]>::to_vec)
    }

    /// The member as an integer if it is one (canonical form).
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Member::Int(v) => Some(v),
            Member::Str(s) => parse_i64(s),
        }
    }
}

/// An integer-table element: `v`'s minimal little-endian two's-complement
/// bytes (canonical, so equal integers have equal bytes).
fn int_elem(v: i64, buf: &mut [u8; 8]) -> &[u8] {
    *buf = v.to_le_bytes();
    let mut n = 8;
    // Bounded: 7 steps. Drop a top byte while the next keeps the sign.
    while n > 1 {
        let top = buf[n - 1];
        let next_sign = buf[n - 2] & 0x80 != 0;
        if (top == 0 && !next_sign) || (top == 0xFF && next_sign) {
            n -= 1;
        } else {
            break;
        }
    }
    &buf[..n]
}

fn elem_int(e: &[u8]) -> i64 {
    let fill = if e.last().is_some_and(|&b| b & 0x80 != 0) { 0xFF } else { 0 };
    let mut b = [fill; 8];
    let n = e.len().min(8);
    b[..n].copy_from_slice(&e[..n]);
    i64::from_le_bytes(b)
}

fn whole(e: &[u8]) -> &[u8] {
    e
}

/// A set of any size. See the module documentation.
#[derive(Debug)]
pub struct Set {
    repr: Repr,
}

#[derive(Debug)]
enum Repr {
    /// Tag byte (the width) + intset.
    IntSet(Vec<u8>),
    /// [`TAG_PACK`] + pack of members.
    Packed(Vec<u8>),
    /// Integers as minimal LE bytes.
    Ints(Table),
    /// Members' bytes.
    Strs(Table),
}

/// True if compact bytes contain `member` (borrowed, no allocation).
pub fn packed_contains(bytes: &[u8], member: &[u8]) -> bool {
    match bytes.split_first() {
        Some((&TAG_PACK, p)) => pack::find(p, 1, member).is_some(),
        Some((&t, _)) if intset::is_tag(t) => parse_i64(member).is_some_and(|v| intset::search(bytes, v).is_ok()),
        _ => false,
    }
}

/// Members in compact bytes. O(1).
pub fn packed_len(bytes: &[u8]) -> usize {
    match bytes.split_first() {
        Some((&TAG_PACK, p)) => pack::count(p),
        Some((&t, _)) if intset::is_tag(t) => intset::len(bytes),
        _ => 0,
    }
}

/// The members of compact bytes, in their order.
pub fn packed_iter(bytes: &[u8]) -> Box<dyn Iterator<Item = Member<'_>> + '_> {
    match bytes.split_first() {
        Some((&TAG_PACK, p)) => Box::new(pack::iter(p).map(Member::Str)),
        Some((&t, _)) if intset::is_tag(t) => Box::new(intset::iter(bytes).map(Member::Int)),
        _ => Box::new(std::iter::empty()),
    }
}

impl Default for Set {
    fn default() -> Self {
        Set::new()
    }
}

impl Set {
    /// An empty set (an empty intset).
    pub fn new() -> Set {
        Set { repr: Repr::IntSet(intset::new()) }
    }

    /// Members.
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::IntSet(b) => intset::len(b),
            Repr::Packed(b) => pack::count(&b[1..]),
            Repr::Ints(t) | Repr::Strs(t) => t.len(),
        }
    }

    /// True with no members (the server deletes such a key).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// OBJECT ENCODING's name for the current form.
    pub fn encoding(&self) -> &'static str {
        match self.repr {
            Repr::IntSet(_) => "intset",
            Repr::Packed(_) => "listpack",
            Repr::Ints(_) | Repr::Strs(_) => "hashtable",
        }
    }

    /// Heap bytes held (capacities; not the `Set` itself). O(1).
    pub fn mem_bytes(&self) -> usize {
        match &self.repr {
            Repr::IntSet(b) | Repr::Packed(b) => b.capacity(),
            Repr::Ints(t) | Repr::Strs(t) => t.mem_bytes(),
        }
    }

    /// The compact bytes (tagged; what the server stores as the item's
    /// value), or None in the large form.
    pub fn packed(&self) -> Option<&[u8]> {
        match &self.repr {
            Repr::IntSet(b) | Repr::Packed(b) => Some(b),
            _ => None,
        }
    }

    /// The compact bytes, moved out (see `Hash::take_packed`).
    pub(crate) fn take_packed(&mut self) -> Option<Vec<u8>> {
        match &mut self.repr {
            Repr::IntSet(b) | Repr::Packed(b) => Some(std::mem::take(b)),
            _ => None,
        }
    }

    /// A compact set from its tagged bytes (checked).
    pub fn from_packed(bytes: &[u8]) -> Result<Set, Corrupt> {
        match bytes.split_first() {
            Some((&TAG_PACK, p)) => {
                let n = pack::validate(p)?;
                let mut seen = std::collections::HashSet::with_capacity(n);
                // Bounded by the members.
                for m in pack::iter(p) {
                    if !seen.insert(m) {
                        return Err(Corrupt);
                    }
                }
                Ok(Set { repr: Repr::Packed(bytes.to_vec()) })
            }
            Some((&t, _)) if intset::is_tag(t) => {
                intset::validate(bytes)?;
                Ok(Set { repr: Repr::IntSet(bytes.to_vec()) })
            }
            _ => Err(Corrupt),
        }
    }

    /// [`Set::from_packed`] for bytes this build packed (the store's; see
    /// `Hash::from_packed_trusted`): only the tag is read. Bytes of no
    /// known tag give an empty set (never stored: debug builds assert).
    pub fn from_packed_trusted(bytes: &[u8]) -> Set {
        debug_assert!(Set::from_packed(bytes).is_ok(), "trusted bytes that are not a packed set");
        match bytes.first() {
            Some(&TAG_PACK) => Set { repr: Repr::Packed(crate::writable_copy(bytes)) },
            Some(&t) if intset::is_tag(t) => Set { repr: Repr::IntSet(crate::writable_copy(bytes)) },
            _ => Set::default(),
        }
    }

    /// Converts a compact set that exceeds `th` to the large form (as
    /// Redis does when it loads a snapshot under smaller limits); call
    /// after [`Set::decode`] or [`Set::from_packed`] if the thresholds may
    /// have changed. O(n) once, no-op otherwise.
    pub fn fit(&mut self, th: &Thresholds) {
        match &self.repr {
            Repr::IntSet(b) if intset::len(b) > th.set_max_intset_entries => {
                let mut t = Table::with_capacity(whole, intset::len(b));
                // Bounded by the intset's members.
                for x in intset::iter(b) {
                    let e = int_elem(x, &mut [0; 8]).to_vec();
                    t.upsert(&e, &[&e]);
                }
                self.repr = Repr::Ints(t);
            }
            Repr::Packed(b)
                if pack::count(&b[1..]) > th.set_max_listpack_entries
                    || pack::iter(&b[1..]).any(|m| m.len() > th.set_max_listpack_value) =>
            {
                let mut t = Table::with_capacity(whole, pack::count(&b[1..]));
                // Bounded by the listpack's members.
                for m in pack::iter(&b[1..]) {
                    t.upsert(m, &[m]);
                }
                self.repr = Repr::Strs(t);
            }
            _ => {}
        }
    }

    /// True if `member` is in the set.
    pub fn contains(&self, member: &[u8]) -> bool {
        match &self.repr {
            Repr::IntSet(b) | Repr::Packed(b) => packed_contains(b, member),
            Repr::Ints(t) => parse_i64(member).is_some_and(|v| t.find(int_elem(v, &mut [0; 8])).is_some()),
            Repr::Strs(t) => t.find(member).is_some(),
        }
    }

    /// [`Set::contains`] for a member of another set (no formatting when
    /// both hold integers).
    pub fn contains_member(&self, m: Member<'_>) -> bool {
        match (&self.repr, m) {
            (Repr::IntSet(b), Member::Int(v)) => intset::search(b, v).is_ok(),
            (Repr::Ints(t), Member::Int(v)) => t.find(int_elem(v, &mut [0; 8])).is_some(),
            _ => m.with_bytes(|b| self.contains(b)),
        }
    }

    fn ints_to_strs(ints: impl Iterator<Item = i64>, n: usize) -> Table {
        let mut t = Table::with_capacity(whole, n);
        let mut buf = [0; INT_STR_BYTES_MAX];
        // Bounded by the members.
        for v in ints {
            let s = format_i64(v, &mut buf);
            t.upsert(s, &[s]);
        }
        t
    }

    /// Adds `member`; true if it was new. Converts forms per the
    /// thresholds (module docs).
    pub fn insert(&mut self, member: &[u8], th: &Thresholds) -> bool {
        let as_int = parse_i64(member);
        match &mut self.repr {
            Repr::IntSet(b) => {
                if let Some(v) = as_int {
                    if intset::search(b, v).is_ok() {
                        return false;
                    }
                    if intset::len(b) < th.set_max_intset_entries {
                        return intset::insert(b, v);
                    }
                    let mut t = Table::with_capacity(whole, intset::len(b) + 1);
                    // Bounded by the intset's members.
                    for x in intset::iter(b) {
                        let e = int_elem(x, &mut [0; 8]).to_vec();
                        t.upsert(&e, &[&e]);
                    }
                    self.repr = Repr::Ints(t);
                    return self.insert(member, th);
                }
                let n = intset::len(b);
                let widest = intset::min_max(b).map_or(0, |(lo, hi)| {
                    let mut buf = [0; INT_STR_BYTES_MAX];
                    let a = format_i64(lo, &mut buf).len();
                    a.max(format_i64(hi, &mut buf).len())
                });
                if n < th.set_max_listpack_entries
                    && member.len() <= th.set_max_listpack_value
                    && widest <= th.set_max_listpack_value
                {
                    let strs: Vec<Vec<u8>> = intset::iter(b).map(|v| Member::Int(v).to_vec()).collect();
                    let mut p = vec![TAG_PACK];
                    p.extend_from_slice(&pack::from_entries(strs.iter().map(Vec::as_slice)));
                    pack::push_in(&mut p, 1, &[member]);
                    self.repr = Repr::Packed(p);
                } else {
                    let mut t = Self::ints_to_strs(intset::iter(b), n + 1);
                    t.upsert(member, &[member]);
                    self.repr = Repr::Strs(t);
                }
                true
            }
            Repr::Packed(b) => {
                if pack::find(&b[1..], 1, member).is_some() {
                    return false;
                }
                if pack::count(&b[1..]) < th.set_max_listpack_entries && member.len() <= th.set_max_listpack_value {
                    pack::push_in(b, 1, &[member]);
                    return true;
                }
                let mut t = Table::with_capacity(whole, pack::count(&b[1..]) + 1);
                // Bounded by the listpack's members.
                for m in pack::iter(&b[1..]) {
                    t.upsert(m, &[m]);
                }
                t.upsert(member, &[member]);
                self.repr = Repr::Strs(t);
                true
            }
            Repr::Ints(t) => match as_int {
                Some(v) => {
                    let e = int_elem(v, &mut [0; 8]).to_vec();
                    t.upsert(&e, &[&e])
                }
                None => {
                    let mut s = Self::ints_to_strs(t.iter().map(|(_, e)| elem_int(e)), t.len() + 1);
                    s.upsert(member, &[member]);
                    self.repr = Repr::Strs(s);
                    true
                }
            },
            Repr::Strs(t) => t.upsert(member, &[member]),
        }
    }

    /// Removes `member`; true if it was there. Never converts back.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        match &mut self.repr {
            Repr::IntSet(b) => parse_i64(member).is_some_and(|v| intset::remove(b, v)),
            Repr::Packed(b) => {
                let Some(pos) = pack::find(&b[1..], 1, member) else {
                    return false;
                };
                pack::remove_in(b, 1, pos.offset, 1);
                true
            }
            Repr::Ints(t) => parse_i64(member).is_some_and(|v| t.remove(int_elem(v, &mut [0; 8]))),
            Repr::Strs(t) => t.remove(member),
        }
    }

    /// Every member, in the form's order (module docs).
    pub fn iter(&self) -> Box<dyn Iterator<Item = Member<'_>> + '_> {
        match &self.repr {
            Repr::IntSet(b) | Repr::Packed(b) => packed_iter(b),
            Repr::Ints(t) => Box::new(t.iter().map(|(_, e)| Member::Int(elem_int(e)))),
            Repr::Strs(t) => Box::new(t.iter().map(|(_, e)| Member::Str(e))),
        }
    }

    /// SRANDMEMBER's selection: `count` ≥ 0 visits min(count, len)
    /// distinct members; `count` < 0 visits |count| members picked
    /// independently (repeats possible); SRANDMEMBER without a count is
    /// `count == -1`. `rng` supplies random words.
    pub fn random_members(&self, count: i64, rng: &mut dyn FnMut() -> u64, f: &mut dyn FnMut(Member<'_>)) {
        match &self.repr {
            Repr::IntSet(b) => sample_indices(intset::len(b), count, rng, &mut |i| f(Member::Int(intset::get(b, i)))),
            Repr::Packed(b) => {
                let all: Vec<&[u8]> = pack::iter(&b[1..]).collect();
                sample_indices(all.len(), count, rng, &mut |i| f(Member::Str(all[i])));
            }
            Repr::Ints(t) => sample_table(t, count, rng, &mut |e| f(Member::Int(elem_int(e)))),
            Repr::Strs(t) => sample_table(t, count, rng, &mut |e| f(Member::Str(e))),
        }
    }

    /// SPOP: removes and returns min(count, len) distinct random members
    /// (SPOP without a count is `count == 1`; the server deletes the key
    /// when the set becomes empty).
    pub fn pop_random(&mut self, count: usize, rng: &mut dyn FnMut() -> u64) -> Vec<Vec<u8>> {
        let mut out = Vec::with_capacity(count.min(self.len()));
        let count = i64::try_from(count).unwrap_or(i64::MAX);
        self.random_members(count, rng, &mut |m| out.push(m.to_vec()));
        // Bounded by the members chosen.
        for m in &out {
            self.remove(m);
        }
        out
    }

    /// One SSCAN step: visits members from `cursor` (0 starts) and returns
    /// the next cursor, 0 when done. Compact forms: everything at once
    /// (as Redis for intsets and listpacks). Large: about `count` per call
    /// with the arena's guarantee (every member present for the whole
    /// scan is visited at least once).
    pub fn scan(&self, cursor: u64, count: usize, f: &mut dyn FnMut(Member<'_>)) -> u64 {
        match &self.repr {
            Repr::IntSet(b) | Repr::Packed(b) => {
                packed_iter(b).for_each(f);
                0
            }
            Repr::Ints(t) => t.scan(cursor, count, &mut |_, e| f(Member::Int(elem_int(e)))),
            Repr::Strs(t) => t.scan(cursor, count, &mut |_, e| f(Member::Str(e))),
        }
    }

    /// Appends the snapshot encoding: a tag, then the compact bytes, or a
    /// pack of the members' strings for the large form.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match &self.repr {
            Repr::IntSet(b) | Repr::Packed(b) => {
                out.push(TAG_COMPACT);
                out.extend_from_slice(b);
            }
            Repr::Ints(_) | Repr::Strs(_) => {
                out.push(TAG_LARGE);
                crate::varint::put(out, self.len() as u64);
                // Bounded by the members.
                for m in self.iter() {
                    m.with_bytes(|b| {
                        crate::varint::put(out, b.len() as u64);
                        out.extend_from_slice(b);
                    });
                }
            }
        }
    }

    /// Decodes [`Set::encode`]'s bytes; never panics on garbage. A large
    /// set of integers only comes back as the integer table.
    pub fn decode(bytes: &[u8]) -> Result<Set, Corrupt> {
        let (&tag, body) = bytes.split_first().ok_or(Corrupt)?;
        match tag {
            TAG_COMPACT => Set::from_packed(body),
            TAG_LARGE => {
                let n = pack::validate(body)?;
                let all_ints = pack::iter(body).all(|m| parse_i64(m).is_some());
                let mut t = Table::with_capacity(whole, n);
                // Bounded by the members.
                for m in pack::iter(body) {
                    let new = if all_ints {
                        let e = int_elem(parse_i64(m).unwrap_or(0), &mut [0; 8]).to_vec();
                        t.upsert(&e, &[&e])
                    } else {
                        t.upsert(m, &[m])
                    };
                    if !new {
                        return Err(Corrupt);
                    }
                }
                Ok(Set { repr: if all_ints { Repr::Ints(t) } else { Repr::Strs(t) } })
            }
            _ => Err(Corrupt),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string2ll_rules() {
        for (s, v) in [("0", Some(0)), ("-1", Some(-1)), ("9223372036854775807", Some(i64::MAX))] {
            assert_eq!(parse_i64(s.as_bytes()), v, "{s}");
        }
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        for s in ["", "-", "-0", "01", "+1", " 1", "1 ", "9223372036854775808", "1a", "00"] {
            assert_eq!(parse_i64(s.as_bytes()), None, "{s:?}");
        }
        let mut buf = [0; INT_STR_BYTES_MAX];
        for v in [0, 7, -7, i64::MIN, i64::MAX] {
            assert_eq!(format_i64(v, &mut buf), v.to_string().as_bytes());
        }
    }

    #[test]
    fn int_elements_are_minimal_and_round_trip() {
        for v in [0i64, 1, -1, 127, 128, -128, -129, 1 << 39, i64::MIN, i64::MAX] {
            let e = int_elem(v, &mut [0; 8]).to_vec();
            assert_eq!(elem_int(&e), v, "{v}");
        }
        assert_eq!(int_elem(127, &mut [0; 8]).len(), 1);
        assert_eq!(int_elem(128, &mut [0; 8]).len(), 2);
        assert_eq!(int_elem(7_918_992_081, &mut [0; 8]).len(), 5);
    }

    #[test]
    fn forms_follow_redis_7_2() {
        let th = Thresholds {
            set_max_intset_entries: 4,
            set_max_listpack_entries: 3,
            set_max_listpack_value: 5,
            ..Thresholds::default()
        };
        let mut s = Set::new();
        assert!(s.insert(b"1", &th) && s.insert(b"2", &th));
        assert_eq!(s.encoding(), "intset");
        assert!(s.insert(b"a", &th));
        assert_eq!(s.encoding(), "listpack", "2 ints + a string fit");
        let mut s = Set::new();
        for i in 0..4 {
            s.insert(i.to_string().as_bytes(), &th);
        }
        assert!(s.insert(b"x", &th));
        assert_eq!(s.encoding(), "hashtable", "4 ints ≥ listpack entries");
        let mut s = Set::new();
        for i in 0..5 {
            s.insert(i.to_string().as_bytes(), &th);
        }
        assert_eq!((s.encoding(), s.len()), ("hashtable", 5), "too many ints");
        assert!(s.contains(b"4") && !s.contains(b"04"));
        assert!(s.insert(b"word", &th));
        assert!(s.contains(b"4") && s.contains(b"word"));
        let mut s = Set::new();
        s.insert(b"1", &th);
        s.insert(b"123456", &th);
        assert!(s.insert(b"a", &th));
        assert_eq!(s.encoding(), "hashtable", "widest integer over the value limit");
        let mut s = Set::new();
        for m in ["1", "2", "3"] {
            s.insert(m.as_bytes(), &Thresholds::default());
        }
        let mut t = Set::from_packed(s.packed().unwrap()).unwrap();
        t.fit(&th);
        assert_eq!(t.encoding(), "intset");
        t.fit(&Thresholds { set_max_intset_entries: 2, ..th });
        assert_eq!((t.encoding(), t.len()), ("hashtable", 3));
        assert!(t.contains(b"2"));
        s.insert(b"abc", &Thresholds::default());
        let mut t = Set::from_packed(s.packed().unwrap()).unwrap();
        t.fit(&th);
        assert_eq!((t.encoding(), t.len()), ("hashtable", 4), "4 members > 3");
    }
}
