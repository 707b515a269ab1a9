//! One change of a collection, as persistence logs it (issue 19 item 4).
//!
//! A write to a large collection changes it in place (engine
//! `Update::InPlace`); the log then holds not the collection but one
//! [`Op`]: the *effect* of the command, compact and deterministic, so
//! that [`Op::apply`] to the value as it was before the write gives the
//! value after it. As in Redis's AOF, what was random or computed is
//! logged as what it did: SPOP as the removal of the members it popped,
//! HINCRBY / HINCRBYFLOAT as the field set to its result, ZINCRBY / ZADD
//! (any flags) as the members set to their final scores, a blocking pop
//! as the pop that happened, LMOVE as its two effects on its two keys
//! (one record each). Protocol-agnostic: no command names here.
//!
//! ## Encoding (persisted: never renumber a code)
//! ```text
//! op        u8 code | fields
//! bytes     varint len | len bytes
//! list      varint n | n × element
//! i64, f64  8 bytes little-endian (an f64 by its bits, so -0.0, ±inf
//!           and every rounding come back exactly)
//!  1 HSET     list of (bytes field, bytes value)
//!  2 HDEL     list of bytes field
//! 16 PUSH     u8 left | list of bytes
//! 17 POP      u8 left | varint count
//! 18 LSET     i64 index | bytes
//! 19 LINSERT  u8 before | bytes pivot | bytes element
//! 20 LREM     i64 count | bytes element
//! 21 LTRIM    i64 start | i64 stop
//! 22 LROTATE  u8 from_left | u8 to_left     (LMOVE of a list onto itself)
//! 32 SADD     list of bytes
//! 33 SREM     list of bytes
//! 48 ZADD     list of (f64 score, bytes member)   (set to this score)
//! 49 ZREM     list of bytes
//! 50 ZREMRANK i64 start | i64 stop               (ZREMRANGEBYRANK's range)
//! 64 XADD     id | trim | list of (bytes field, bytes value)
//! 65 XDEL     varint n | n × id
//! 66 XTRIM    trim
//! 67 XSETID   id last | u8 has | [varint entries_added] | u8 has | [id max_deleted]
//! 68 XGROUPS  bytes (the stream's consumer groups, amalgam-types stream/group.rs)
//! id          16 bytes: ms, seq big-endian
//! trim        u8 0 none | 1 every entry below: id | 2 every entry
//! ```
//! [`Op::decode`] reads exactly what [`Op::encode`] writes and never
//! panics on other bytes (a damaged record is [`Corrupt`]).

use crate::stream::{StreamId, TrimTo};
use crate::value::Value;
use crate::zset::AddFlags;
use crate::{varint, Corrupt, Kind, Thresholds};

const HSET: u8 = 1;
const HDEL: u8 = 2;
const PUSH: u8 = 16;
const POP: u8 = 17;
const LSET: u8 = 18;
const LINSERT: u8 = 19;
const LREM: u8 = 20;
const LTRIM: u8 = 21;
const LROTATE: u8 = 22;
const SADD: u8 = 32;
const SREM: u8 = 33;
const ZADD: u8 = 48;
const ZREM: u8 = 49;
const ZREMRANK: u8 = 50;
const XADD: u8 = 64;
const XDEL: u8 = 65;
const XTRIM: u8 = 66;
const XSETID: u8 = 67;
const XGROUPS: u8 = 68;

/// One logged change of one collection (module notes).
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// Hash: these fields now hold these values.
    HSet(Vec<(Vec<u8>, Vec<u8>)>),
    /// Hash: these fields are gone.
    HDel(Vec<Vec<u8>>),
    /// List: these elements pushed one by one at the left (or right) end.
    Push { left: bool, items: Vec<Vec<u8>> },
    /// List: `count` elements popped from the left (or right) end.
    Pop { left: bool, count: u64 },
    /// List: LSET.
    LSet { index: i64, item: Vec<u8> },
    /// List: LINSERT (the list held `pivot`).
    LInsert { before: bool, pivot: Vec<u8>, item: Vec<u8> },
    /// List: LREM.
    LRem { count: i64, item: Vec<u8> },
    /// List: LTRIM.
    LTrim { start: i64, stop: i64 },
    /// List: one element popped from one end and pushed at `to_left`'s.
    LRotate { from_left: bool, to_left: bool },
    /// Set: these members added.
    SAdd(Vec<Vec<u8>>),
    /// Set: these members removed.
    SRem(Vec<Vec<u8>>),
    /// Sorted set: these members now have these scores (added if new).
    ZAdd(Vec<(f64, Vec<u8>)>),
    /// Sorted set: these members removed.
    ZRem(Vec<Vec<u8>>),
    /// Sorted set: the members of ranks `start..=stop` removed
    /// (ZREMRANGEBYRANK's arguments, or the ranks a ZREMRANGEBYSCORE /
    /// BYLEX removed).
    ZRemRank { start: i64, stop: i64 },
    /// Stream: this entry appended (its ID given), then the trim's effect.
    XAdd { id: StreamId, pairs: Vec<(Vec<u8>, Vec<u8>)>, trim: Option<TrimTo> },
    /// Stream: these entries deleted.
    XDel(Vec<StreamId>),
    /// Stream: a trim's effect.
    XTrim(TrimTo),
    /// Stream: XSETID's values.
    XSetId { last: StreamId, entries_added: Option<u64>, max_deleted: Option<StreamId> },
    /// Stream: its consumer groups are now these (any group command:
    /// the groups' state whole, not the command's effect).
    XGroups(Vec<u8>),
}

fn put_trim(out: &mut Vec<u8>, t: Option<TrimTo>) {
    match t {
        None => out.push(0),
        Some(TrimTo::Below(id)) => {
            out.push(1);
            out.extend_from_slice(&id.to_bytes());
        }
        Some(TrimTo::All) => out.push(2),
    }
}

fn put_list(out: &mut Vec<u8>, items: &[Vec<u8>]) {
    varint::put(out, items.len() as u64);
    for i in items {
        varint::put_bytes(out, i);
    }
}

/// A cursor over an op's bytes; every read checks the bounds.
struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn u8(&mut self) -> Result<u8, Corrupt> {
        let (&b, rest) = self.buf.split_first().ok_or(Corrupt)?;
        self.buf = rest;
        Ok(b)
    }
    fn flag(&mut self) -> Result<bool, Corrupt> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(Corrupt),
        }
    }
    fn varint(&mut self) -> Result<u64, Corrupt> {
        let (v, n) = varint::get(self.buf).ok_or(Corrupt)?;
        self.buf = &self.buf[n..];
        Ok(v)
    }
    fn word(&mut self) -> Result<[u8; 8], Corrupt> {
        let w = self.buf.get(..8).ok_or(Corrupt)?;
        self.buf = &self.buf[8..];
        Ok(w.try_into().expect("8 bytes"))
    }
    fn id(&mut self) -> Result<StreamId, Corrupt> {
        let w = self.buf.get(..16).ok_or(Corrupt)?;
        self.buf = &self.buf[16..];
        Ok(StreamId::from_bytes(w.try_into().expect("16 bytes")))
    }
    fn trim(&mut self) -> Result<Option<TrimTo>, Corrupt> {
        Ok(match self.u8()? {
            0 => None,
            1 => Some(TrimTo::Below(self.id()?)),
            2 => Some(TrimTo::All),
            _ => return Err(Corrupt),
        })
    }
    fn i64(&mut self) -> Result<i64, Corrupt> {
        self.word().map(i64::from_le_bytes)
    }
    fn bytes(&mut self) -> Result<&'a [u8], Corrupt> {
        let n = usize::try_from(self.varint()?).map_err(|_| Corrupt)?;
        let b = self.buf.get(..n).ok_or(Corrupt)?;
        self.buf = &self.buf[n..];
        Ok(b)
    }
    /// A count of elements that each take at least `min_bytes`: more
    /// than the remaining bytes can hold is corrupt (so a damaged count
    /// never makes a huge allocation).
    fn count(&mut self, min_bytes: usize) -> Result<usize, Corrupt> {
        let n = usize::try_from(self.varint()?).map_err(|_| Corrupt)?;
        if n.saturating_mul(min_bytes) > self.buf.len() {
            return Err(Corrupt);
        }
        Ok(n)
    }
    fn list(&mut self) -> Result<Vec<Vec<u8>>, Corrupt> {
        let n = self.count(1)?;
        // Bounded by n, itself bounded by the record's length.
        (0..n).map(|_| self.bytes().map(<[u8]>::to_vec)).collect()
    }
}

impl Op {
    /// The kind of collection the op applies to.
    pub fn kind(&self) -> Kind {
        match self {
            Op::HSet(_) | Op::HDel(_) => Kind::Hash,
            Op::Push { .. }
            | Op::Pop { .. }
            | Op::LSet { .. }
            | Op::LInsert { .. }
            | Op::LRem { .. }
            | Op::LTrim { .. }
            | Op::LRotate { .. } => Kind::List,
            Op::SAdd(_) | Op::SRem(_) => Kind::Set,
            Op::ZAdd(_) | Op::ZRem(_) | Op::ZRemRank { .. } => Kind::ZSet,
            Op::XAdd { .. } | Op::XDel(_) | Op::XTrim(_) | Op::XSetId { .. } | Op::XGroups(_) => Kind::Stream,
        }
    }

    /// Appends the op's encoding (module notes) to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Op::HSet(pairs) => {
                out.push(HSET);
                varint::put(out, pairs.len() as u64);
                for (f, v) in pairs {
                    varint::put_bytes(out, f);
                    varint::put_bytes(out, v);
                }
            }
            Op::HDel(fields) => {
                out.push(HDEL);
                put_list(out, fields);
            }
            Op::Push { left, items } => {
                out.extend_from_slice(&[PUSH, u8::from(*left)]);
                put_list(out, items);
            }
            Op::Pop { left, count } => {
                out.extend_from_slice(&[POP, u8::from(*left)]);
                varint::put(out, *count);
            }
            Op::LSet { index, item } => {
                out.push(LSET);
                out.extend_from_slice(&index.to_le_bytes());
                varint::put_bytes(out, item);
            }
            Op::LInsert { before, pivot, item } => {
                out.extend_from_slice(&[LINSERT, u8::from(*before)]);
                varint::put_bytes(out, pivot);
                varint::put_bytes(out, item);
            }
            Op::LRem { count, item } => {
                out.push(LREM);
                out.extend_from_slice(&count.to_le_bytes());
                varint::put_bytes(out, item);
            }
            Op::LTrim { start, stop } => {
                out.push(LTRIM);
                out.extend_from_slice(&start.to_le_bytes());
                out.extend_from_slice(&stop.to_le_bytes());
            }
            Op::LRotate { from_left, to_left } => {
                out.extend_from_slice(&[LROTATE, u8::from(*from_left), u8::from(*to_left)]);
            }
            Op::SAdd(m) => {
                out.push(SADD);
                put_list(out, m);
            }
            Op::SRem(m) => {
                out.push(SREM);
                put_list(out, m);
            }
            Op::ZAdd(pairs) => {
                out.push(ZADD);
                varint::put(out, pairs.len() as u64);
                for (s, m) in pairs {
                    out.extend_from_slice(&s.to_bits().to_le_bytes());
                    varint::put_bytes(out, m);
                }
            }
            Op::ZRem(m) => {
                out.push(ZREM);
                put_list(out, m);
            }
            Op::ZRemRank { start, stop } => {
                out.push(ZREMRANK);
                out.extend_from_slice(&start.to_le_bytes());
                out.extend_from_slice(&stop.to_le_bytes());
            }
            Op::XAdd { id, pairs, trim } => {
                out.push(XADD);
                out.extend_from_slice(&id.to_bytes());
                put_trim(out, *trim);
                varint::put(out, pairs.len() as u64);
                for (f, v) in pairs {
                    varint::put_bytes(out, f);
                    varint::put_bytes(out, v);
                }
            }
            Op::XDel(ids) => {
                out.push(XDEL);
                varint::put(out, ids.len() as u64);
                for id in ids {
                    out.extend_from_slice(&id.to_bytes());
                }
            }
            Op::XTrim(t) => {
                out.push(XTRIM);
                put_trim(out, Some(*t));
            }
            Op::XGroups(b) => {
                out.push(XGROUPS);
                varint::put_bytes(out, b);
            }
            Op::XSetId { last, entries_added, max_deleted } => {
                out.push(XSETID);
                out.extend_from_slice(&last.to_bytes());
                out.push(u8::from(entries_added.is_some()));
                if let Some(n) = entries_added {
                    varint::put(out, *n);
                }
                out.push(u8::from(max_deleted.is_some()));
                if let Some(m) = max_deleted {
                    out.extend_from_slice(&m.to_bytes());
                }
            }
        }
    }

    /// The op's encoding as a new vector.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode(&mut out);
        out
    }

    /// Reads [`Op::encode`]'s bytes (all of them: trailing bytes are
    /// corrupt). Never panics; allocates at most a small multiple of
    /// `bytes.len()`.
    pub fn decode(bytes: &[u8]) -> Result<Op, Corrupt> {
        let mut r = Reader { buf: bytes };
        let op = match r.u8()? {
            HSET => {
                let n = r.count(2)?;
                // Bounded by n (checked against the bytes left).
                let pairs = (0..n)
                    .map(|_| Ok((r.bytes()?.to_vec(), r.bytes()?.to_vec())))
                    .collect::<Result<Vec<_>, Corrupt>>()?;
                Op::HSet(pairs)
            }
            HDEL => Op::HDel(r.list()?),
            PUSH => Op::Push { left: r.flag()?, items: r.list()? },
            POP => Op::Pop { left: r.flag()?, count: r.varint()? },
            LSET => Op::LSet { index: r.i64()?, item: r.bytes()?.to_vec() },
            LINSERT => Op::LInsert { before: r.flag()?, pivot: r.bytes()?.to_vec(), item: r.bytes()?.to_vec() },
            LREM => Op::LRem { count: r.i64()?, item: r.bytes()?.to_vec() },
            LTRIM => Op::LTrim { start: r.i64()?, stop: r.i64()? },
            LROTATE => Op::LRotate { from_left: r.flag()?, to_left: r.flag()? },
            SADD => Op::SAdd(r.list()?),
            SREM => Op::SRem(r.list()?),
            ZADD => {
                let n = r.count(9)?;
                // Bounded by n (checked against the bytes left).
                let pairs = (0..n)
                    .map(|_| {
                        let s = f64::from_bits(u64::from_le_bytes(r.word()?));
                        if s.is_nan() {
                            return Err(Corrupt);
                        }
                        Ok((s, r.bytes()?.to_vec()))
                    })
                    .collect::<Result<Vec<_>, Corrupt>>()?;
                Op::ZAdd(pairs)
            }
            ZREM => Op::ZRem(r.list()?),
            ZREMRANK => Op::ZRemRank { start: r.i64()?, stop: r.i64()? },
            XADD => {
                let id = r.id()?;
                let trim = r.trim()?;
                let n = r.count(2)?;
                // Bounded by n (checked against the bytes left).
                let pairs = (0..n)
                    .map(|_| Ok((r.bytes()?.to_vec(), r.bytes()?.to_vec())))
                    .collect::<Result<Vec<_>, Corrupt>>()?;
                Op::XAdd { id, pairs, trim }
            }
            XDEL => {
                let n = r.count(16)?;
                // Bounded by n (checked against the bytes left).
                Op::XDel((0..n).map(|_| r.id()).collect::<Result<Vec<_>, Corrupt>>()?)
            }
            XTRIM => Op::XTrim(r.trim()?.ok_or(Corrupt)?),
            XGROUPS => Op::XGroups(r.bytes()?.to_vec()),
            XSETID => {
                let last = r.id()?;
                let entries_added = if r.flag()? { Some(r.varint()?) } else { None };
                let max_deleted = if r.flag()? { Some(r.id()?) } else { None };
                Op::XSetId { last, entries_added, max_deleted }
            }
            _ => return Err(Corrupt),
        };
        if !r.buf.is_empty() {
            return Err(Corrupt);
        }
        Ok(op)
    }

    /// Applies the op to `v` (a collection of [`Op::kind`]) as the
    /// command that logged it changed it, converting to the large form
    /// past `t` as the command did. Err if `v` is another kind or the op
    /// cannot have been logged for this value (an LSET past the end, an
    /// LINSERT without its pivot): the log and the value disagree, and
    /// the value is left as it was.
    pub fn apply(&self, v: &mut Value, t: &Thresholds) -> Result<(), Corrupt> {
        match (self, v) {
            (Op::HSet(pairs), Value::Hash(h)) => {
                for (f, val) in pairs {
                    h.insert(f, val, t);
                }
            }
            (Op::HDel(fields), Value::Hash(h)) => {
                for f in fields {
                    h.remove(f);
                }
            }
            (Op::Push { left, items }, Value::List(l)) => {
                for i in items {
                    if *left {
                        l.push_front(i);
                    } else {
                        l.push_back(i);
                    }
                }
            }
            (Op::Pop { left, count }, Value::List(l)) => {
                let n = usize::try_from(*count).unwrap_or(usize::MAX);
                if *left {
                    l.pop_front(n);
                } else {
                    l.pop_back(n);
                }
            }
            (Op::LSet { index, item }, Value::List(l)) => l.set(*index, item).map_err(|_| Corrupt)?,
            (Op::LInsert { before, pivot, item }, Value::List(l)) => {
                l.insert(*before, pivot, item).ok_or(Corrupt)?;
            }
            (Op::LRem { count, item }, Value::List(l)) => {
                l.remove(*count, item);
            }
            (Op::LTrim { start, stop }, Value::List(l)) => l.trim(*start, *stop),
            (Op::LRotate { from_left, to_left }, Value::List(l)) => {
                let mut e = if *from_left { l.pop_front(1) } else { l.pop_back(1) };
                let e = e.pop().ok_or(Corrupt)?;
                if *to_left {
                    l.push_front(&e);
                } else {
                    l.push_back(&e);
                }
            }
            (Op::SAdd(m), Value::Set(s)) => {
                for x in m {
                    s.insert(x, t);
                }
            }
            (Op::SRem(m), Value::Set(s)) => {
                for x in m {
                    s.remove(x);
                }
            }
            (Op::ZAdd(pairs), Value::ZSet(z)) => {
                for (score, m) in pairs {
                    z.add(m, *score, AddFlags::default()).map_err(|_| Corrupt)?;
                }
            }
            (Op::ZRem(m), Value::ZSet(z)) => {
                for x in m {
                    z.remove(x);
                }
            }
            (Op::ZRemRank { start, stop }, Value::ZSet(z)) => {
                z.remove_range_by_rank(*start, *stop);
            }
            (Op::XAdd { id, pairs, trim }, Value::Stream(s)) => {
                let p: Vec<(&[u8], &[u8])> = pairs.iter().map(|(f, v)| (f.as_slice(), v.as_slice())).collect();
                if !s.append_within(*id, &p, t.stream_node_max_entries, t.stream_node_max_bytes) {
                    return Err(Corrupt);
                }
                if let Some(t) = trim {
                    s.trim_to(*t);
                }
            }
            (Op::XDel(ids), Value::Stream(s)) => {
                for id in ids {
                    s.delete(*id);
                }
            }
            (Op::XGroups(b), Value::Stream(s)) => s.set_groups_bytes(b)?,
            (Op::XTrim(t), Value::Stream(s)) => {
                s.trim_to(*t);
            }
            (Op::XSetId { last, entries_added, max_deleted }, Value::Stream(s)) => {
                if !s.force_ids(*last, *entries_added, *max_deleted) {
                    return Err(Corrupt);
                }
            }
            _ => return Err(Corrupt),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Vec<u8> {
        s.as_bytes().to_vec()
    }

    fn every_kind_of_op() -> Vec<Op> {
        vec![
            Op::HSet(vec![(b("f"), b("v")), (b(""), b(""))]),
            Op::HDel(vec![b("f")]),
            Op::Push { left: true, items: vec![b("a"), b("b")] },
            Op::Pop { left: false, count: 300 },
            Op::LSet { index: -1, item: b("x") },
            Op::LInsert { before: false, pivot: b("p"), item: b("i") },
            Op::LRem { count: -2, item: b("r") },
            Op::LTrim { start: 1, stop: -2 },
            Op::LRotate { from_left: true, to_left: false },
            Op::SAdd(vec![b("1"), b("m")]),
            Op::SRem(vec![]),
            Op::ZAdd(vec![(-0.0, b("z")), (f64::INFINITY, b("i")), (0.1 + 0.2, b("r"))]),
            Op::ZRem(vec![b("z")]),
            Op::ZRemRank { start: 0, stop: i64::MAX },
            Op::XAdd {
                id: StreamId::new(5, 1),
                pairs: vec![(b("f"), b("v"))],
                trim: Some(TrimTo::Below(StreamId::new(2, 0))),
            },
            Op::XAdd { id: StreamId::MAX, pairs: vec![], trim: None },
            Op::XAdd { id: StreamId::new(1, 1), pairs: vec![], trim: Some(TrimTo::All) },
            Op::XDel(vec![StreamId::new(1, 2), StreamId::new(3, 4)]),
            Op::XTrim(TrimTo::All),
            Op::XGroups(vec![0]),
            Op::XSetId { last: StreamId::new(9, 9), entries_added: Some(3), max_deleted: None },
            Op::XSetId { last: StreamId::new(9, 9), entries_added: None, max_deleted: Some(StreamId::new(1, 1)) },
        ]
    }

    #[test]
    fn every_op_round_trips_exactly() {
        for op in every_kind_of_op() {
            let bytes = op.to_bytes();
            let back = Op::decode(&bytes).unwrap();
            assert_eq!(back, op);
            // Bit-exact scores (PartialEq says -0.0 == 0.0).
            if let (Op::ZAdd(a), Op::ZAdd(b)) = (&op, &back) {
                for (x, y) in a.iter().zip(b) {
                    assert_eq!(x.0.to_bits(), y.0.to_bits());
                }
            }
        }
    }

    #[test]
    fn damaged_bytes_are_corrupt_not_a_panic() {
        for op in every_kind_of_op() {
            let bytes = op.to_bytes();
            for cut in 0..bytes.len() {
                assert_eq!(Op::decode(&bytes[..cut]), Err(Corrupt), "{op:?} cut at {cut}");
            }
            let mut longer = bytes.clone();
            longer.push(0);
            assert_eq!(Op::decode(&longer), Err(Corrupt));
            for i in 0..bytes.len() {
                let mut c = bytes.clone();
                c[i] ^= 0xFF;
                let _ = Op::decode(&c);
            }
        }
        // A count far beyond the bytes is refused before allocating.
        let mut huge = vec![SADD];
        varint::put(&mut huge, u64::MAX >> 1);
        assert_eq!(Op::decode(&huge), Err(Corrupt));
    }

    #[test]
    fn an_op_on_another_kind_is_refused_and_changes_nothing() {
        let t = Thresholds::default();
        let mut v = Value::new(Kind::Set, &t);
        Op::SAdd(vec![b("a")]).apply(&mut v, &t).unwrap();
        assert_eq!(Op::HSet(vec![(b("f"), b("v"))]).apply(&mut v, &t), Err(Corrupt));
        assert_eq!(v.len(), 1);
    }
}
