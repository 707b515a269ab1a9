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
    /// Offset of the last entry's flags byte: whether it is deleted is
    /// one byte away ([`Node::last_live`]).
    pub last_at: usize,
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
            varint::put_bytes(&mut bytes, f);
        }
        let mut n = Node { bytes, last: id, last_at: 0, live: 0, total: 0 };
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
        // Written in place at the end of the node (a temporary vector per
        // entry was a malloc and a free per XADD).
        self.last_at = self.bytes.len();
        let e = &mut self.bytes;
        e.push(if same { SAME_FIELDS } else { 0 });
        let dms = id.ms - master.ms;
        varint::put(e, dms);
        varint::put(e, if dms == 0 { id.seq - master.seq } else { id.seq });
        if same {
            for (_, v) in pairs {
                varint::put_bytes(e, v);
            }
        } else {
            varint::put(e, pairs.len() as u64);
            for (f, v) in pairs {
                varint::put_bytes(e, f);
                varint::put_bytes(e, v);
            }
        }
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
        let mut out = Vec::with_capacity(self.total as usize);
        self.walk(master, false, |e| {
            out.push(EntryRef { id: e.id, at: e.at, deleted: e.deleted, pairs: e.pairs.clone() });
            true
        })?;
        Some(out)
    }

    /// Hands every entry, deleted ones included, in order (`rev`: the
    /// last first) to `f` until it answers false: `Some(false)` if it
    /// did, `Some(true)` if it saw them all, None if the bytes do not
    /// decode (the entries before the bad one were handed over). One
    /// [`EntryRef`] serves every entry, its pairs refilled in place: no
    /// allocation per entry, and a forward walk stops where `f` does
    /// (a read of COUNT 1 decodes up to its entry, not the whole node).
    /// Backwards, the entries' offsets are gathered first (IDs are
    /// delta-encoded forwards). Bounded by the node's bytes: an entry
    /// takes three at least.
    pub fn walk<'a>(&'a self, master: StreamId, rev: bool, mut f: impl FnMut(&EntryRef<'a>) -> bool) -> Option<bool> {
        let (mut pos, fields) = self.master_fields();
        let mut e = EntryRef { id: master, at: pos, deleted: false, pairs: Vec::with_capacity(fields.len()) };
        if !rev {
            while pos < self.bytes.len() {
                pos = self.entry_at(master, &fields, pos, &mut e)?;
                if !f(&e) {
                    return Some(false);
                }
            }
            return Some(true);
        }
        let mut offsets = Vec::with_capacity(self.total as usize);
        while pos < self.bytes.len() {
            offsets.push(pos);
            pos = self.entry_at(master, &fields, pos, &mut e)?;
        }
        for &at in offsets.iter().rev() {
            self.entry_at(master, &fields, at, &mut e)?;
            if !f(&e) {
                return Some(false);
            }
        }
        Some(true)
    }

    /// Decodes the entry whose flags byte is at `pos` into `e` (its pairs
    /// replaced; `fields` are the master fields) and returns the offset
    /// after it; None if it does not decode.
    fn entry_at<'a>(
        &'a self,
        master: StreamId,
        fields: &[&'a [u8]],
        mut pos: usize,
        e: &mut EntryRef<'a>,
    ) -> Option<usize> {
        let b = &self.bytes;
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
        e.pairs.clear();
        if flags & SAME_FIELDS != 0 {
            for f in fields {
                e.pairs.push((*f, get_bytes(b, &mut pos)?));
            }
        } else {
            let n = get_varint(b, &mut pos)?;
            if n > (b.len() - pos) as u64 {
                return None;
            }
            for _ in 0..n {
                let f = get_bytes(b, &mut pos)?;
                e.pairs.push((f, get_bytes(b, &mut pos)?));
            }
        }
        e.id = StreamId { ms, seq };
        e.at = at;
        e.deleted = flags & DELETED != 0;
        Some(pos)
    }

    /// The last entry's ID if it is not deleted (without decoding).
    pub fn last_live(&self) -> Option<StreamId> {
        (self.bytes.get(self.last_at)? & DELETED == 0).then_some(self.last)
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
        let probe = Node { bytes, last: master, last_at: 0, live: 0, total: 0 };
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
        let (last, last_at) = entries.last().map(|e| (e.id, e.at))?;
        if live == 0 {
            return None;
        }
        let Node { bytes, .. } = probe;
        Some(Node { bytes, last, last_at, live, total })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A node of five entries 7-0, 7-1, 8-0, 9-0, 9-1: the third with
    /// other fields, the second deleted.
    fn node() -> (StreamId, Node) {
        let master = StreamId { ms: 7, seq: 0 };
        let mut n = Node::new(master, &[(b"f", b"a")]);
        n.push(master, StreamId { ms: 7, seq: 1 }, &[(b"f", b"b")]);
        n.push(master, StreamId { ms: 8, seq: 0 }, &[(b"g", b"c"), (b"h", b"d")]);
        n.push(master, StreamId { ms: 9, seq: 0 }, &[(b"f", b"e")]);
        n.push(master, StreamId { ms: 9, seq: 1 }, &[(b"f", b"f")]);
        let at = n.entries(master)[1].at;
        n.mark_deleted(at);
        (master, n)
    }

    /// Entries as seen: (id, deleted, each field's and value's first byte).
    type Seen = Vec<(StreamId, bool, Vec<u8>)>;

    /// What a walk hands over, stopping after `stop`.
    fn walked(n: &Node, master: StreamId, rev: bool, stop: usize) -> (Option<bool>, Seen) {
        let mut seen = Vec::new();
        let r = n.walk(master, rev, |e| {
            seen.push((e.id, e.deleted, e.pairs.iter().flat_map(|(f, v)| [f[0], v[0]]).collect()));
            seen.len() < stop
        });
        (r, seen)
    }

    #[test]
    fn walks_match_the_entries_both_ways_and_stop_early() {
        let (master, n) = node();
        let all: Seen = n
            .entries(master)
            .iter()
            .map(|e| (e.id, e.deleted, e.pairs.iter().flat_map(|(f, v)| [f[0], v[0]]).collect()))
            .collect();
        assert_eq!(all.len(), 5);
        assert_eq!(all[1], (StreamId { ms: 7, seq: 1 }, true, b"fb".to_vec()));
        assert_eq!(all[2], (StreamId { ms: 8, seq: 0 }, false, b"gchd".to_vec()));
        assert_eq!(walked(&n, master, false, usize::MAX), (Some(true), all.clone()));
        let rev: Vec<_> = all.iter().rev().cloned().collect();
        assert_eq!(walked(&n, master, true, usize::MAX), (Some(true), rev.clone()));
        assert_eq!(walked(&n, master, false, 2), (Some(false), all[..2].to_vec()));
        assert_eq!(walked(&n, master, true, 3), (Some(false), rev[..3].to_vec()));
        // Bytes that stop decoding mid-entry: None, after the good ones.
        let mut bad = n.clone();
        bad.bytes.truncate(bad.bytes.len() - 1);
        // The last entry's ID without a walk, until it is deleted.
        assert_eq!(n.last_live(), Some(StreamId { ms: 9, seq: 1 }));
        let mut gone = n.clone();
        gone.mark_deleted(gone.last_at);
        assert_eq!(gone.last_live(), None);
        assert_eq!(walked(&gone, master, true, 1).1[0], (StreamId { ms: 9, seq: 1 }, true, b"ff".to_vec()));
        let (r, seen) = walked(&bad, master, false, usize::MAX);
        assert_eq!((r, seen.len()), (None, 4));
        assert_eq!(walked(&bad, master, true, usize::MAX), (None, Vec::new()));
    }
}
