//! One node of a stream: up to [`NODE_ENTRIES_MAX`] entries in one byte
//! vector (Redis's listpack per radix-tree node), their IDs delta-encoded
//! against the node's first ID (its *master* ID, the node's key in the
//! stream's map) and their field names shared with the node's master
//! fields when an entry has the same fields as the node's first entry.
//!
//! ```text
//! node    varint nfields | nfields × field | entry*
//! field   varint len | len bytes
//! entry   u8 flags | varint ms - master.ms | varint seq' | body
//!         seq' = seq - master.seq when ms == master.ms, else seq
//! body    SAME_FIELDS: nfields × value (varint len | bytes)
//!         else:        varint n | n × (field, value)
//! flags   DELETED (0x01): a tombstone (XDEL, an exact trim), skipped by
//!         reads, counted against the node's capacity as in Redis
//!         SAME_FIELDS (0x02)
//! ```
//!
//! Deletion flips the DELETED bit in place (one byte); a node whose
//! entries are all deleted is dropped from the map by the stream. Bytes
//! the stream made itself are read without checks; [`Node::check`]
//! validates bytes from a snapshot before they are trusted.

use super::StreamId;
use crate::varint;

/// Entries in a node at most, deleted ones included: Redis's
/// `stream-node-max-entries` default (the setting is `Thresholds`').
pub const NODE_ENTRIES_MAX: u32 = 100;
/// A node's bytes at most before a new one starts: Redis's
/// `stream-node-max-bytes` default (ours are denser, so a node of small
/// entries closes on the entry count first, as Redis's does).
pub const NODE_BYTES_MAX: usize = 4096;

pub(crate) const DELETED: u8 = 0x01;
pub(crate) const SAME_FIELDS: u8 = 0x02;

/// A run of entries (module notes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Node {
    pub bytes: Vec<u8>,
    /// The last entry's ID, deleted or not (a MINID trim drops the node
    /// when it is below the bound, as Redis's `lpGetEdgeStreamID`).
    pub last: StreamId,
    /// Entries not deleted.
    pub live: u32,
    /// Entries, deleted ones included.
    pub total: u32,
}

/// One entry read from a node.
#[derive(Debug)]
pub(crate) struct EntryRef<'a> {
    pub id: StreamId,
    /// Offset of its flags byte in the node.
    pub at: usize,
    pub deleted: bool,
    /// Field, value; field, value; ….
    pub pairs: Vec<(&'a [u8], &'a [u8])>,
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    varint::put(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// Reads a varint at `*pos`, advancing it; None past the end.
fn get_varint(b: &[u8], pos: &mut usize) -> Option<u64> {
    let (v, n) = varint::get(b.get(*pos..)?)?;
    *pos += n;
    Some(v)
}

fn get_bytes<'a>(b: &'a [u8], pos: &mut usize) -> Option<&'a [u8]> {
    let n = usize::try_from(get_varint(b, pos)?).ok()?;
    let s = b.get(*pos..pos.checked_add(n)?)?;
    *pos += n;
    Some(s)
}

impl Node {
    /// A node whose first entry is `id` with `pairs`.
    pub fn new(id: StreamId, pairs: &[(&[u8], &[u8])]) -> Node {
        let size: usize = pairs.iter().map(|(f, v)| f.len() + v.len() + 4).sum::<usize>() * 2 + 16;
        let mut bytes = Vec::with_capacity(size.min(NODE_BYTES_MAX));
        varint::put(&mut bytes, pairs.len() as u64);
        for (f, _) in pairs {
            put_bytes(&mut bytes, f);
        }
        let mut n = Node { bytes, last: id, live: 0, total: 0 };
        n.push(id, id, pairs);
        n
    }

    /// True if an entry of `pairs` may join this node under the limits
    /// (entries, bytes; 0: no bound), as Redis's `streamAppendItem` asks.
    pub fn has_room(&self, pairs: &[(&[u8], &[u8])], max_entries: usize, max_bytes: usize) -> bool {
        let add: usize = pairs.iter().map(|(f, v)| f.len() + v.len()).sum();
        (max_entries == 0 || (self.total as usize) < max_entries)
            && (max_bytes == 0 || self.bytes.len() + add < max_bytes)
    }

    /// The master fields (offset of the first entry, the names).
    fn master_fields(&self) -> (usize, Vec<&[u8]>) {
        let mut pos = 0;
        let n = get_varint(&self.bytes, &mut pos).unwrap_or(0);
        // Bounded by the node's bytes: each field takes one at least.
        let mut fields = Vec::with_capacity(n.min(self.bytes.len() as u64) as usize);
        for _ in 0..n {
            match get_bytes(&self.bytes, &mut pos) {
                Some(f) => fields.push(f),
                None => break,
            }
        }
        (pos, fields)
    }

    /// True if `pairs` has the master fields, in order (read in place:
    /// no allocation on XADD's path).
    fn same_fields(&self, pairs: &[(&[u8], &[u8])]) -> bool {
        let b = &self.bytes;
        let mut pos = 0;
        if get_varint(b, &mut pos) != Some(pairs.len() as u64) {
            return false;
        }
        // Bounded by the entry's fields.
        pairs.iter().all(|(f, _)| get_bytes(b, &mut pos) == Some(*f))
    }

    /// Appends an entry (`id` above every ID in the node; `master` the
    /// node's key).
    pub fn push(&mut self, master: StreamId, id: StreamId, pairs: &[(&[u8], &[u8])]) {
        let same = self.same_fields(pairs);
        let mut e = Vec::with_capacity(24 + pairs.iter().map(|(f, v)| f.len() + v.len() + 4).sum::<usize>());
        e.push(if same { SAME_FIELDS } else { 0 });
        let dms = id.ms - master.ms;
        varint::put(&mut e, dms);
        varint::put(&mut e, if dms == 0 { id.seq - master.seq } else { id.seq });
        if same {
            for (_, v) in pairs {
                put_bytes(&mut e, v);
            }
        } else {
            varint::put(&mut e, pairs.len() as u64);
            for (f, v) in pairs {
                put_bytes(&mut e, f);
                put_bytes(&mut e, v);
            }
        }
        self.bytes.extend_from_slice(&e);
        self.last = id;
        self.live += 1;
        self.total += 1;
    }

    /// Every entry in order, deleted ones included (at most
    /// [`NODE_ENTRIES_MAX`], or what a checked node holds).
    pub fn entries(&self, master: StreamId) -> Vec<EntryRef<'_>> {
        self.try_entries(master).unwrap_or_default()
    }

    /// [`Node::entries`], None if the bytes do not decode.
    fn try_entries(&self, master: StreamId) -> Option<Vec<EntryRef<'_>>> {
        let (mut pos, fields) = self.master_fields();
        let b = &self.bytes;
        let mut out = Vec::with_capacity(self.total as usize);
        // Bounded by the node's bytes: each entry takes three at least.
        while pos < b.len() {
            let at = pos;
            let flags = *b.get(pos)?;
            if flags & !(DELETED | SAME_FIELDS) != 0 {
                return None;
            }
            pos += 1;
            let dms = get_varint(b, &mut pos)?;
            let s = get_varint(b, &mut pos)?;
            let ms = master.ms.checked_add(dms)?;
            let seq = if dms == 0 { master.seq.checked_add(s)? } else { s };
            let mut pairs = Vec::new();
            if flags & SAME_FIELDS != 0 {
                for f in &fields {
                    pairs.push((*f, get_bytes(b, &mut pos)?));
                }
            } else {
                let n = get_varint(b, &mut pos)?;
                if n > (b.len() - pos) as u64 {
                    return None;
                }
                for _ in 0..n {
                    let f = get_bytes(b, &mut pos)?;
                    pairs.push((f, get_bytes(b, &mut pos)?));
                }
            }
            out.push(EntryRef { id: StreamId { ms, seq }, at, deleted: flags & DELETED != 0, pairs });
        }
        Some(out)
    }

    /// Marks the entry at `at` deleted (its flags byte).
    pub fn mark_deleted(&mut self, at: usize) {
        self.bytes[at] |= DELETED;
        self.live -= 1;
    }

    /// Checks bytes from a snapshot for the node keyed `master`: they
    /// decode, the IDs rise from `master`, and the counts agree. Returns
    /// the checked node.
    pub fn check(master: StreamId, bytes: Vec<u8>) -> Option<Node> {
        let probe = Node { bytes, last: master, live: 0, total: 0 };
        let entries = probe.try_entries(master)?;
        let first = entries.first()?;
        if first.id != master {
            return None;
        }
        let mut prev: Option<StreamId> = None;
        let mut live = 0u32;
        for e in &entries {
            if prev.is_some_and(|p| p >= e.id) {
                return None;
            }
            prev = Some(e.id);
            live += u32::from(!e.deleted);
        }
        let total = u32::try_from(entries.len()).ok()?;
        let last = entries.last()?.id;
        if live == 0 {
            return None;
        }
        let Node { bytes, .. } = probe;
        Some(Node { bytes, last, live, total })
    }
}
