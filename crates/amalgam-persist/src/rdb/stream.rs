//! A stream in a DUMP payload: Redis 7.0's `RDB_TYPE_STREAM_LISTPACKS_2`
//! (written and read), 5.0–6.2's `RDB_TYPE_STREAM_LISTPACKS` and 7.2's
//! `RDB_TYPE_STREAM_LISTPACKS_3` (read), as `rdb.c`'s `rdbSaveObject` /
//! `rdbLoadObject` lay them out (v3: each consumer's seen time is
//! followed by its active time, 8 bytes LE, which Amalgam reads and drops:
//! its XINFO CONSUMERS is 7.0's, without `active-time`):
//!
//! ```text
//! len nodes | nodes × (string 16-byte master ID, big-endian | string listpack)
//! len length | len last.ms | len last.seq
//! v2: len first.ms | len first.seq | len max_deleted.ms | len max_deleted.seq | len entries_added
//! len groups | groups × (string name | len last.ms | len last.seq | v2: len entries_read
//!                        | len pel | pel × (16-byte ID | 8-byte LE delivery ms | len count)
//!                        | len consumers | consumers × (string name | 8-byte LE seen ms
//!                                                      | len pel | pel × 16-byte ID))
//! ```
//!
//! A node's listpack (`t_stream.c`'s `streamAppendItem`): the master
//! entry `count, deleted, nfields, field…, 0`, then each entry `flags,
//! ms - master.ms, seq - master.seq, [nfields, field, value… | value…
//! when SAMEFIELDS], lp-count`, integers as listpack integers. Written
//! nodes hold live entries only (up to [`NODE_ENTRIES_MAX`], so a node
//! stays under Redis's `stream-node-max-entries`); read nodes may hold
//! tombstones, which are dropped. Every read is checked and bounded by
//! the payload, as the other types' (`rdb.rs`, "Hostile payloads").

use super::listpack::{self, Entry};
use super::{charge, crc64, types, Reader, PREALLOC_ELEMENTS_MAX, RDB_VERSION};
use amalgam_types::stream::{Consumer, Group, PendingEntry, Stream, StreamId, NODE_ENTRIES_MAX};
use std::collections::{BTreeMap, BTreeSet};

/// A stream entry's flags (`STREAM_ITEM_FLAG_*`).
const FLAG_DELETED: i64 = 1;
const FLAG_SAMEFIELDS: i64 = 2;
/// A written node's listpack bytes, about at most (Redis's default
/// `stream-node-max-bytes`).
const NODE_BYTES_MAX: usize = 4096;

/// `rdbSaveLen`.
fn put_len(out: &mut Vec<u8>, n: u64) {
    if n < 1 << 6 {
        out.push(n as u8);
    } else if n < 1 << 14 {
        out.push(0x40 | (n >> 8) as u8);
        out.push(n as u8);
    } else if n <= u64::from(u32::MAX) {
        out.push(0x80);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn put_raw(out: &mut Vec<u8>, b: &[u8]) {
    put_len(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn put_id(out: &mut Vec<u8>, id: StreamId) {
    put_len(out, id.ms);
    put_len(out, id.seq);
}

/// A listpack of `entries` (Redis's encodings for each length).
fn listpack(entries: &[Entry<'_>]) -> Vec<u8> {
    listpack::build(entries)
}

/// The whole DUMP payload of `s` (type, object, footer).
pub fn dump(s: &Stream) -> Vec<u8> {
    let mut out = vec![types::STREAM_LISTPACKS_2];
    let entries = s.range(StreamId::MIN, StreamId::MAX, false, 0);
    // Nodes: runs of up to NODE_ENTRIES_MAX entries, cut earlier past
    // NODE_BYTES_MAX.
    let mut nodes: Vec<&[amalgam_types::stream::Entry]> = Vec::new();
    let mut start = 0;
    let mut bytes = 0usize;
    for (i, e) in entries.iter().enumerate() {
        if i > start && (i - start >= NODE_ENTRIES_MAX as usize || bytes >= NODE_BYTES_MAX) {
            nodes.push(&entries[start..i]);
            start = i;
            bytes = 0;
        }
        bytes += e.pairs.iter().map(|(f, v)| f.len() + v.len() + 4).sum::<usize>() + 8;
    }
    if start < entries.len() {
        nodes.push(&entries[start..]);
    }
    put_len(&mut out, nodes.len() as u64);
    for node in &nodes {
        let master = node[0].id;
        put_raw(&mut out, &master.to_bytes());
        let fields: Vec<&[u8]> = node[0].pairs.iter().map(|(f, _)| &f[..]).collect();
        let mut lp: Vec<Entry<'_>> =
            vec![Entry::Int(node.len() as i64), Entry::Int(0), Entry::Int(fields.len() as i64)];
        lp.extend(fields.iter().map(|f| Entry::Str(f)));
        lp.push(Entry::Int(0));
        for e in node.iter() {
            let same = e.pairs.len() == fields.len() && e.pairs.iter().zip(&fields).all(|((f, _), m)| f == m);
            lp.push(Entry::Int(if same { FLAG_SAMEFIELDS } else { 0 }));
            lp.push(Entry::Int(e.id.ms.wrapping_sub(master.ms) as i64));
            lp.push(Entry::Int(e.id.seq.wrapping_sub(master.seq) as i64));
            let n = e.pairs.len() as i64;
            if same {
                lp.extend(e.pairs.iter().map(|(_, v)| Entry::Str(v)));
                lp.push(Entry::Int(n + 3));
            } else {
                lp.push(Entry::Int(n));
                for (f, v) in &e.pairs {
                    lp.push(Entry::Str(f));
                    lp.push(Entry::Str(v));
                }
                lp.push(Entry::Int(n + 3 + n + 1));
            }
        }
        put_raw(&mut out, &listpack(&lp));
    }
    put_len(&mut out, s.len());
    put_id(&mut out, s.last_id());
    put_id(&mut out, s.first_id());
    put_id(&mut out, s.max_deleted());
    put_len(&mut out, s.entries_added());
    put_len(&mut out, s.groups().len() as u64);
    for g in s.groups() {
        put_raw(&mut out, &g.name);
        put_id(&mut out, g.last_id);
        put_len(&mut out, g.entries_read as u64);
        put_len(&mut out, g.pending.len() as u64);
        for (id, p) in &g.pending {
            out.extend_from_slice(&id.to_bytes());
            out.extend_from_slice(&p.delivery_ms.to_le_bytes());
            put_len(&mut out, p.delivery_count);
        }
        put_len(&mut out, g.consumers.len() as u64);
        for (name, c) in &g.consumers {
            put_raw(&mut out, name);
            out.extend_from_slice(&c.seen_ms.to_le_bytes());
            put_len(&mut out, c.pending.len() as u64);
            for id in &c.pending {
                out.extend_from_slice(&id.to_bytes());
            }
        }
    }
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// An integer element of a stream's listpack.
fn int(e: Option<&Entry<'_>>) -> Option<i64> {
    match e? {
        Entry::Int(i) => Some(*i),
        Entry::Str(s) => std::str::from_utf8(s).ok()?.parse().ok(),
    }
}

fn bytes(e: Option<&Entry<'_>>) -> Option<Vec<u8>> {
    Some(e?.to_bytes())
}

/// The live entries of one node's listpack (`master` its key).
fn node_entries(
    lp: &[u8],
    master: StreamId,
    out: &mut Vec<amalgam_types::stream::Entry>,
    budget: &mut usize,
    over: &mut bool,
) -> Option<()> {
    let mut items: Vec<Entry<'_>> = Vec::new();
    listpack::for_each(lp, |e| {
        items.push(e);
        Some(())
    })?;
    let mut it = items.iter();
    let count = int(it.next())?;
    let deleted = int(it.next())?;
    let nfields = usize::try_from(int(it.next())?).ok()?;
    if nfields > items.len() {
        return None;
    }
    let mut fields = Vec::with_capacity(nfields);
    for _ in 0..nfields {
        fields.push(bytes(it.next())?);
    }
    if int(it.next())? != 0 {
        return None;
    }
    let (mut live, mut dead) = (0i64, 0i64);
    // Bounded by the listpack's elements: each entry takes three at least.
    while it.len() > 0 {
        let flags = int(it.next())?;
        let ms = master.ms.wrapping_add(int(it.next())? as u64);
        let seq = master.seq.wrapping_add(int(it.next())? as u64);
        let mut pairs = Vec::new();
        if flags & FLAG_SAMEFIELDS != 0 {
            for f in &fields {
                let v = bytes(it.next())?;
                charge(budget, over, f.len() + v.len())?;
                pairs.push((f.clone(), v));
            }
        } else {
            let n = usize::try_from(int(it.next())?).ok()?;
            if n > it.len() {
                return None;
            }
            for _ in 0..n {
                let f = bytes(it.next())?;
                let v = bytes(it.next())?;
                charge(budget, over, f.len() + v.len())?;
                pairs.push((f, v));
            }
        }
        // lp-count: checked only to be an integer (Redis reads it to walk back).
        int(it.next())?;
        if flags & FLAG_DELETED != 0 {
            dead += 1;
            continue;
        }
        live += 1;
        out.push(amalgam_types::stream::Entry { id: StreamId::new(ms, seq), pairs });
    }
    if live != count || dead != deleted {
        return None;
    }
    Some(())
}

/// A 16-byte raw ID (the PELs').
fn raw_id(r: &mut Reader<'_>) -> Option<StreamId> {
    Some(StreamId::from_bytes(r.bytes(16)?.try_into().ok()?))
}

fn ms(r: &mut Reader<'_>) -> Option<u64> {
    Some(u64::from_le_bytes(r.bytes(8)?.try_into().ok()?))
}

/// A count that may be 0 (the Reader's own refuses an empty collection),
/// of things that take `min_bytes` each at least.
fn count(r: &mut Reader<'_>, min_bytes: usize) -> Option<usize> {
    let n = usize::try_from(r.len()?).ok()?;
    if n > r.left() / min_bytes {
        return None;
    }
    Some(n)
}

fn id(r: &mut Reader<'_>) -> Option<StreamId> {
    Some(StreamId::new(r.len()?, r.len()?))
}

/// Reads a stream object of type `ty` (the type byte read).
pub(super) fn load(r: &mut Reader<'_>, ty: u8) -> Option<Stream> {
    // v3 is v2 with each consumer's active time.
    let v2 = ty == types::STREAM_LISTPACKS_2 || ty == types::STREAM_LISTPACKS_3;
    let v3 = ty == types::STREAM_LISTPACKS_3;
    let nodes = count(r, 2)?;
    let mut entries = Vec::new();
    // Bounded by nodes, itself bounded by the bytes left.
    for _ in 0..nodes {
        let key = r.string()?;
        let master = StreamId::from_bytes(key.as_slice().try_into().ok()?);
        let lp = r.string()?;
        node_entries(&lp, master, &mut entries, &mut r.budget, &mut r.over)?;
    }
    let length = r.len()?;
    let last_id = id(r)?;
    let (max_deleted, entries_added) = if v2 {
        let _first = id(r)?;
        (id(r)?, r.len()?)
    } else {
        (StreamId::MIN, length)
    };
    if entries.len() as u64 != length {
        return None;
    }
    let ngroups = count(r, 3)?;
    let mut groups = Vec::with_capacity(ngroups.min(PREALLOC_ELEMENTS_MAX));
    for _ in 0..ngroups {
        let name = r.string()?;
        r.charge(name.len())?;
        let last = id(r)?;
        let entries_read = if v2 { r.len()? as i64 } else { amalgam_types::stream::ENTRIES_READ_UNKNOWN };
        let mut g = Group::new(&name, last, entries_read);
        let npel = count(r, 17)?;
        let mut counts: BTreeMap<StreamId, (u64, u64)> = BTreeMap::new();
        for _ in 0..npel {
            let pid = raw_id(r)?;
            let when = ms(r)?;
            let n = r.len()?;
            r.charge(16)?;
            if counts.insert(pid, (when, n)).is_some() {
                return None;
            }
        }
        let nconsumers = count(r, 10)?;
        for _ in 0..nconsumers {
            let cname = r.string()?;
            r.charge(cname.len())?;
            let seen_ms = ms(r)?;
            if v3 {
                let _active_ms = ms(r)?;
            }
            let n = count(r, 16)?;
            let mut own = BTreeSet::new();
            for _ in 0..n {
                let pid = raw_id(r)?;
                let (when, count) = *counts.get(&pid)?;
                if g.pending
                    .insert(pid, PendingEntry { consumer: cname.clone(), delivery_ms: when, delivery_count: count })
                    .is_some()
                {
                    return None;
                }
                own.insert(pid);
            }
            if g.consumers.insert(cname, Consumer { seen_ms, pending: own }).is_some() {
                return None;
            }
        }
        // Every pending entry has its consumer.
        if g.pending.len() != counts.len() {
            return None;
        }
        groups.push(g);
    }
    let mut s = Stream::from_parts(&entries, last_id, max_deleted, entries_added, groups)?;
    if !v2 {
        // 5.0–6.2 kept no entries-read: estimated as Redis 7.0 loads them.
        let estimates: Vec<i64> = s.groups().iter().map(|g| s.estimate_entries_read(g.last_id)).collect();
        s.set_entries_read(&estimates);
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::super::{decode, Payload, FOOTER_BYTES};
    use super::*;

    fn sample() -> Stream {
        let mut s = Stream::new();
        for i in 1..=250u64 {
            let v = i.to_string();
            let pairs: Vec<(&[u8], &[u8])> =
                if i % 9 == 0 { vec![(b"other", v.as_bytes())] } else { vec![(b"f", v.as_bytes()), (b"g", b"xyz")] };
            assert!(s.append(StreamId::new(i, i % 3), &pairs));
        }
        assert!(s.delete(StreamId::new(7, 1)));
        assert!(s.create_group(b"g", StreamId::MIN, 0));
        s.touch_consumer(b"g", b"alice", 5).unwrap();
        s.read_new(b"g", b"alice", 4, false, 5).unwrap();
        assert!(s.create_group(b"h", StreamId::new(3, 0), -1));
        s
    }

    /// `body` as a whole payload, with the footer's CRC right.
    fn framed(body: &[u8]) -> Vec<u8> {
        let mut p = body.to_vec();
        p.extend_from_slice(&RDB_VERSION.to_le_bytes());
        let crc = crc64(&p);
        p.extend_from_slice(&crc.to_le_bytes());
        p
    }

    #[test]
    fn dump_decodes_to_the_same_stream() {
        let s = sample();
        let p = dump(&s);
        let Ok(Payload::Stream(back)) = decode(&p) else { panic!("{:?}", decode(&p)) };
        assert_eq!(back.range(StreamId::MIN, StreamId::MAX, false, 0), s.range(StreamId::MIN, StreamId::MAX, false, 0));
        assert_eq!(back.groups(), s.groups());
        assert_eq!(
            (back.last_id(), back.max_deleted(), back.entries_added()),
            (s.last_id(), s.max_deleted(), s.entries_added())
        );
    }

    #[test]
    fn damaged_payloads_are_refused_not_a_panic() {
        let p = dump(&sample());
        let body = &p[..p.len() - FOOTER_BYTES];
        for cut in 1..body.len() {
            let _ = decode(&framed(&body[..cut]));
        }
        for i in 1..body.len() {
            let mut b = body.to_vec();
            b[i] ^= 0x41;
            let _ = decode(&framed(&b));
        }
    }
}
