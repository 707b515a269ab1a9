//! Stream: Redis 7.0's append-only log of entries (XADD … XSETID), and
//! its consumer groups (`stream/group.rs`).
//!
//! ## Representation
//! Redis keeps a stream in a radix tree keyed by each node's first ID,
//! every node a listpack of up to 100 entries / 4 KiB whose IDs are
//! deltas from that first (*master*) ID and whose field names are left
//! out when an entry has the node's first entry's fields. Amalgam does
//! the same in spirit with an ordered map: a `BTreeMap<StreamId, Node>`
//! (`stream/node.rs`: the byte layout), so a range read or a trim is
//! O(log n + k), an append O(1) amortized into the last node, a
//! deletion one flag byte (a tombstone, as Redis's) and a node whose
//! entries are all deleted leaves the map. A stream has no compact form
//! of its own: it is always an object, its nodes are the compact part.
//!
//! Beside the entries a stream keeps what Redis 7.0 keeps: the last ID
//! handed out (which may be above every entry's, after XDEL or XSETID),
//! the largest deleted ID, and the count of entries ever added (the
//! consumer groups' lag is computed from them).
//!
//! ## Snapshots
//! ```text
//! u8 ENCODING_TAG | 16 last_id | 16 max_deleted | varint entries_added
//! varint nodes | nodes × (16 master | varint len | len bytes)
//! groups (stream/group.rs)
//! ```
//! IDs as 16 big-endian bytes. [`Stream::decode`] checks every node.

mod group;
mod id;
mod node;

use std::collections::BTreeMap;

pub use group::{AutoClaim, AutoClaimed, ClaimOptions, Consumer, Delivered, Group, PendingEntry, ENTRIES_READ_UNKNOWN};
pub use id::{parse as parse_id, ParseRules, ParsedId, StreamId, ERR_INVALID_ID, STRICT};
use node::Node;
pub use node::{NODE_BYTES_MAX, NODE_ENTRIES_MAX};

use crate::{varint, Corrupt};

/// First byte of [`Stream::encode`]'s output (format version 1).
pub const ENCODING_TAG: u8 = 0x53;

/// XADD's errors (Redis 7.0's texts).
pub const ERR_ID_TOO_SMALL: &str = "ERR The ID specified in XADD is equal or smaller than the target stream top item";
pub const ERR_ID_ZERO: &str = "ERR The ID specified in XADD must be greater than 0-0";
pub const ERR_EXHAUSTED: &str = "ERR The stream has exhausted the last possible ID, unable to add more items";

/// Bytes a node costs beside its byte vector: its share of the map's
/// B-tree (key, value and the tree's slack).
const NODE_OVERHEAD_BYTES: usize = 96;

/// A trim's work bound when `~` is given without LIMIT (Redis:
/// `100 * stream-node-max-entries`, at most 10,000).
pub const TRIM_LIMIT_DEFAULT: u64 = 100 * NODE_ENTRIES_MAX as u64;

/// The ID XADD asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddId {
    /// `*`: the time, or the last ID's next.
    Auto,
    /// `<ms>-*`.
    Partial(u64),
    /// `<ms>-<seq>`.
    Explicit(StreamId),
}

/// What a trim keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrimStrategy {
    /// MAXLEN: at most this many entries.
    MaxLen(u64),
    /// MINID: no entry below this ID.
    MinId(StreamId),
}

/// A trim's arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trim {
    pub strategy: TrimStrategy,
    /// `~`: whole nodes only.
    pub approx: bool,
    /// Entries removed at most (0: no bound), whole nodes only.
    pub limit: u64,
}

/// A trim's effect, as the log records it: every entry below an ID, or
/// every entry, removed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrimTo {
    Below(StreamId),
    All,
}

/// One entry, copied out of a stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub id: StreamId,
    pub pairs: Vec<(Vec<u8>, Vec<u8>)>,
}

/// A Redis stream (module notes).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stream {
    nodes: BTreeMap<StreamId, Node>,
    /// Entries not deleted.
    len: u64,
    /// The last ID handed out (XADD) or set (XSETID); 0-0 for a new stream.
    last_id: StreamId,
    /// The largest ID XDEL removed (or XSETID set).
    max_deleted: StreamId,
    /// Entries ever added (XADD; XSETID may set it).
    entries_added: u64,
    /// Capacity of every node's bytes (for [`Stream::mem_bytes`]).
    node_bytes: usize,
    pub(crate) groups: Vec<Group>,
}

impl Stream {
    pub fn new() -> Stream {
        Stream::default()
    }

    /// Entries (deleted ones not counted): XLEN.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn last_id(&self) -> StreamId {
        self.last_id
    }

    pub fn max_deleted(&self) -> StreamId {
        self.max_deleted
    }

    pub fn entries_added(&self) -> u64 {
        self.entries_added
    }

    /// The first entry's ID, 0-0 when empty.
    pub fn first_id(&self) -> StreamId {
        self.first_entry().map_or(StreamId::MIN, |e| e.id)
    }

    /// The last entry's ID, 0-0 when empty (Redis's `streamLastValidID`).
    pub fn last_valid_id(&self) -> StreamId {
        // Every node in the map holds a live entry, so the last node's
        // last entry, unless deleted, is the answer (XREADGROUP asks on
        // every read: no walk of the node then).
        if let Some(id) = self.nodes.values().next_back().and_then(Node::last_live) {
            return id;
        }
        self.last_entry().map_or(StreamId::MIN, |e| e.id)
    }

    pub fn first_entry(&self) -> Option<Entry> {
        self.range(StreamId::MIN, StreamId::MAX, false, 1).pop()
    }

    pub fn last_entry(&self) -> Option<Entry> {
        self.range(StreamId::MIN, StreamId::MAX, true, 1).pop()
    }

    /// Nodes in the map (XINFO STREAM's `radix-tree-keys`).
    pub fn nodes(&self) -> usize {
        self.nodes.len()
    }

    /// Bytes the stream holds from the allocator.
    pub fn mem_bytes(&self) -> usize {
        std::mem::size_of::<Stream>()
            + self.nodes.len() * (NODE_OVERHEAD_BYTES + std::mem::size_of::<Node>())
            + self.node_bytes
            + self.groups.iter().map(Group::mem_bytes).sum::<usize>()
    }

    /// The ID XADD would give an entry (Redis's `streamAppendItem`
    /// rules); Err holds Redis's text.
    pub fn next_id(&self, want: AddId, now_ms: u64) -> Result<StreamId, &'static str> {
        if self.last_id == StreamId::MAX {
            return Err(ERR_EXHAUSTED);
        }
        let id = match want {
            AddId::Auto => {
                if self.last_id.ms < now_ms {
                    StreamId::new(now_ms, 0)
                } else {
                    self.last_id.next().ok_or(ERR_EXHAUSTED)?
                }
            }
            AddId::Partial(ms) if ms == self.last_id.ms => {
                if self.last_id.seq == u64::MAX {
                    return Err(ERR_ID_TOO_SMALL);
                }
                StreamId::new(ms, self.last_id.seq + 1)
            }
            AddId::Partial(ms) => StreamId::new(ms, 0),
            AddId::Explicit(id) => id,
        };
        if id <= self.last_id {
            return Err(ERR_ID_TOO_SMALL);
        }
        Ok(id)
    }

    /// Appends an entry of ID `id`, above [`Stream::last_id`] (checked by
    /// [`Stream::next_id`]; a lower one is refused, false). An ID below a
    /// deleted entry of the last node (Redis 7.0.15's XSETID may set the
    /// last ID below a tombstone) starts a node of its own, so a node's
    /// IDs always rise.
    pub fn append(&mut self, id: StreamId, pairs: &[(&[u8], &[u8])]) -> bool {
        self.append_within(id, pairs, NODE_ENTRIES_MAX as usize, NODE_BYTES_MAX)
    }

    /// [`Stream::append`] under the node limits `stream-node-max-entries`
    /// and `stream-node-max-bytes` (`Thresholds`; 0: no bound). A node
    /// keeps at most `u32::MAX` entries whatever the setting.
    pub fn append_within(
        &mut self,
        id: StreamId,
        pairs: &[(&[u8], &[u8])],
        max_entries: usize,
        max_bytes: usize,
    ) -> bool {
        let max_entries = if max_entries == 0 { u32::MAX as usize } else { max_entries.min(u32::MAX as usize) };
        if id <= self.last_id {
            return false;
        }
        let below_tombstone = self.nodes.values().next_back().is_some_and(|n| id <= n.last);
        if below_tombstone && (id <= self.last_valid_id() || self.nodes.contains_key(&id)) {
            // A log that disagrees with itself: never two nodes' live
            // entries out of order.
            return false;
        }
        let last = self.nodes.iter_mut().next_back();
        match last {
            Some((&master, node)) if !below_tombstone && node.has_room(pairs, max_entries, max_bytes) => {
                let before = node.bytes.capacity();
                node.push(master, id, pairs);
                self.node_bytes = self.node_bytes + node.bytes.capacity() - before;
            }
            last => {
                if let Some((_, node)) = last {
                    // The node is closed: give back its slack.
                    let before = node.bytes.capacity();
                    node.bytes.shrink_to_fit();
                    self.node_bytes = self.node_bytes + node.bytes.capacity() - before;
                }
                let node = Node::new(id, pairs);
                self.node_bytes += node.bytes.capacity();
                self.nodes.insert(id, node);
            }
        }
        self.len += 1;
        self.last_id = id;
        self.entries_added = self.entries_added.wrapping_add(1);
        true
    }

    /// Visits the entries with `start <= id <= end` in order (`rev`:
    /// from the end), until `f` answers false. Bounded by the entries in
    /// range plus one node's deleted entries at each end.
    pub fn scan(
        &self,
        start: StreamId,
        end: StreamId,
        rev: bool,
        mut f: impl FnMut(StreamId, &[(&[u8], &[u8])]) -> bool,
    ) {
        if start > end {
            return;
        }
        // The node holding `start` begins at or before it.
        let from = self.nodes.range(..=start).next_back().map_or(start, |(k, _)| *k);
        let mut visit = |master: &StreamId, node: &Node| -> bool {
            // True: go on.
            let each = |e: &node::EntryRef<'_>| -> bool {
                // A tombstone may sit above later IDs (see `append`): it
                // never ends the walk.
                if e.deleted {
                    return true;
                }
                if (!rev && e.id > end) || (rev && e.id < start) {
                    return false;
                }
                if e.id < start || e.id > end {
                    return true;
                }
                f(e.id, &e.pairs)
            };
            // Entries decode one at a time and the walk stops with `f`
            // (`Node::walk`); a node that does not decode (never one the
            // stream made) is passed over, as `Node::entries` does.
            node.walk(*master, rev, each).unwrap_or(true)
        };
        if rev {
            // Bounded by the nodes in range.
            for (m, n) in self.nodes.range(from..=end).rev() {
                if !visit(m, n) {
                    return;
                }
            }
        } else {
            for (m, n) in self.nodes.range(from..=end) {
                if !visit(m, n) {
                    return;
                }
            }
        }
    }

    /// The entries with `start <= id <= end`, at most `count` (0: all).
    pub fn range(&self, start: StreamId, end: StreamId, rev: bool, count: usize) -> Vec<Entry> {
        let mut out = Vec::new();
        self.scan(start, end, rev, |id, pairs| {
            out.push(Entry { id, pairs: pairs.iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect() });
            count == 0 || out.len() < count
        });
        out
    }

    /// The entry of ID `id`, if there is one.
    pub fn get(&self, id: StreamId) -> Option<Entry> {
        self.range(id, id, false, 1).pop()
    }

    /// XDEL of one ID: true if an entry went.
    pub fn delete(&mut self, id: StreamId) -> bool {
        let Some((&master, node)) = self.nodes.range_mut(..=id).next_back() else { return false };
        let Some(at) = node.entries(master).iter().find(|e| e.id == id && !e.deleted).map(|e| e.at) else {
            return false;
        };
        node.mark_deleted(at);
        if node.live == 0 {
            if let Some(n) = self.nodes.remove(&master) {
                self.node_bytes -= n.bytes.capacity();
            }
        }
        self.len -= 1;
        if id > self.max_deleted {
            self.max_deleted = id;
        }
        true
    }

    /// Trims as Redis's `streamTrim`: whole nodes from the front while
    /// the strategy allows (and the limit: `limit` entries at most, 0 no
    /// bound), then, unless `approx`, single entries of the next node.
    /// Returns the entries removed. Bounded by the nodes removed plus one
    /// node's entries.
    pub fn trim(&mut self, t: Trim) -> u64 {
        let mut deleted = 0u64;
        // Bounded: each round removes a node or ends.
        loop {
            if let TrimStrategy::MaxLen(max) = t.strategy {
                if self.len <= max {
                    break;
                }
            }
            let Some((&master, node)) = self.nodes.iter().next() else { break };
            let live = u64::from(node.live);
            if t.limit != 0 && deleted + live > t.limit {
                break;
            }
            let whole = match t.strategy {
                TrimStrategy::MaxLen(max) => self.len - live >= max,
                TrimStrategy::MinId(min) => node.last < min,
            };
            if whole {
                if let Some(n) = self.nodes.remove(&master) {
                    self.node_bytes -= n.bytes.capacity();
                }
                self.len -= live;
                deleted += live;
                continue;
            }
            if t.approx {
                break;
            }
            let node = self.nodes.get_mut(&master).expect("the first node");
            let marks: Vec<(usize, StreamId)> =
                node.entries(master).iter().filter(|e| !e.deleted).map(|e| (e.at, e.id)).collect();
            for (at, id) in marks {
                let done = match t.strategy {
                    TrimStrategy::MaxLen(max) => self.len <= max,
                    TrimStrategy::MinId(min) => id >= min,
                };
                if done {
                    break;
                }
                node.mark_deleted(at);
                self.len -= 1;
                deleted += 1;
            }
            break;
        }
        deleted
    }

    /// What the stream's last trim left, as its log record says it
    /// ([`TrimTo`]): every entry below the first kept one removed.
    pub fn trim_effect(&self) -> TrimTo {
        match self.first_entry() {
            Some(e) => TrimTo::Below(e.id),
            None => TrimTo::All,
        }
    }

    /// Replays a [`TrimTo`]: returns the entries removed.
    pub fn trim_to(&mut self, to: TrimTo) -> u64 {
        match to {
            TrimTo::Below(id) => self.trim(Trim { strategy: TrimStrategy::MinId(id), approx: false, limit: 0 }),
            TrimTo::All => self.trim(Trim { strategy: TrimStrategy::MaxLen(0), approx: false, limit: 0 }),
        }
    }

    /// XSETID's checks and change (Redis 7.0.15's order of checks after
    /// the arguments'); Err holds Redis's text. (Redis 7.0.15 does not
    /// compare the ID with the largest deleted one; later versions do.)
    pub fn set_id(
        &mut self,
        id: StreamId,
        entries_added: Option<u64>,
        max_deleted: Option<StreamId>,
    ) -> Result<(), &'static str> {
        if self.len > 0 {
            if id < self.last_valid_id() {
                return Err("ERR The ID specified in XSETID is smaller than the target stream top item");
            }
            if entries_added.is_some_and(|n| self.len > n) {
                return Err("ERR The entries_added specified in XSETID is smaller than the target stream length");
            }
        }
        self.last_id = id;
        if let Some(n) = entries_added {
            self.entries_added = n;
        }
        if let Some(m) = max_deleted.filter(|m| *m != StreamId::MIN) {
            self.max_deleted = m;
        }
        Ok(())
    }

    /// Sets the IDs (the log's replay of XSETID); false, and nothing
    /// changed, if `id` is below the last entry (a log that disagrees
    /// with itself: XSETID refuses that).
    pub fn force_ids(&mut self, id: StreamId, entries_added: Option<u64>, max_deleted: Option<StreamId>) -> bool {
        if self.len > 0 && id < self.last_valid_id() {
            return false;
        }
        self.last_id = id;
        if let Some(n) = entries_added {
            self.entries_added = n;
        }
        if let Some(m) = max_deleted.filter(|m| *m != StreamId::MIN) {
            self.max_deleted = m;
        }
        true
    }

    /// A stream of `entries` (in rising ID order, none above `last_id`)
    /// and the rest of its state, as a DUMP payload carries it (amalgam-
    /// persist `rdb/stream.rs`); None if the parts disagree. Bounded by
    /// the entries.
    pub fn from_parts(
        entries: &[Entry],
        last_id: StreamId,
        max_deleted: StreamId,
        entries_added: u64,
        mut groups: Vec<Group>,
    ) -> Option<Stream> {
        let mut s = Stream::new();
        for e in entries {
            let pairs: Vec<(&[u8], &[u8])> = e.pairs.iter().map(|(f, v)| (&f[..], &v[..])).collect();
            if !s.append(e.id, &pairs) {
                return None;
            }
        }
        if s.last_id > last_id {
            return None;
        }
        groups.sort_by(|a, b| a.name.cmp(&b.name));
        if groups.windows(2).any(|w| w[0].name == w[1].name) {
            return None;
        }
        s.last_id = last_id;
        s.max_deleted = max_deleted;
        s.entries_added = entries_added;
        s.groups = groups;
        Some(s)
    }

    /// The snapshot encoding (module notes).
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.push(ENCODING_TAG);
        out.extend_from_slice(&self.last_id.to_bytes());
        out.extend_from_slice(&self.max_deleted.to_bytes());
        varint::put(out, self.entries_added);
        varint::put(out, self.nodes.len() as u64);
        for (m, n) in &self.nodes {
            out.extend_from_slice(&m.to_bytes());
            varint::put(out, n.bytes.len() as u64);
            out.extend_from_slice(&n.bytes);
        }
        group::encode(&self.groups, out);
    }

    /// Reads [`Stream::encode`]'s bytes; never panics.
    pub fn decode(bytes: &[u8]) -> Result<Stream, Corrupt> {
        let mut r = Reader { buf: bytes };
        if r.u8()? != ENCODING_TAG {
            return Err(Corrupt);
        }
        let mut s = Stream { last_id: r.id()?, max_deleted: r.id()?, entries_added: r.varint()?, ..Stream::default() };
        let n = r.count(17)?;
        let mut prev_last: Option<StreamId> = None;
        // Bounded by n, itself bounded by the bytes.
        for _ in 0..n {
            let master = r.id()?;
            let len = r.count(1)?;
            let body = r.take(len)?.to_vec();
            let node = Node::check(master, body).ok_or(Corrupt)?;
            // Live entries rise across nodes (a tombstone may not: see
            // `append`).
            if prev_last.is_some_and(|p| p >= master) || s.nodes.contains_key(&master) {
                return Err(Corrupt);
            }
            prev_last = node.entries(master).iter().rev().find(|e| !e.deleted).map(|e| e.id);
            s.len += u64::from(node.live);
            s.node_bytes += node.bytes.capacity();
            s.nodes.insert(master, node);
        }
        s.groups = group::decode(&mut r)?;
        if !r.buf.is_empty() || (s.len > 0 && s.last_valid_id() > s.last_id) {
            return Err(Corrupt);
        }
        Ok(s)
    }
}

/// A cursor over encoded bytes; every read checks the bounds.
pub(crate) struct Reader<'a> {
    pub buf: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn u8(&mut self) -> Result<u8, Corrupt> {
        let (&b, rest) = self.buf.split_first().ok_or(Corrupt)?;
        self.buf = rest;
        Ok(b)
    }
    pub fn varint(&mut self) -> Result<u64, Corrupt> {
        let (v, n) = varint::get(self.buf).ok_or(Corrupt)?;
        self.buf = &self.buf[n..];
        Ok(v)
    }
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], Corrupt> {
        let b = self.buf.get(..n).ok_or(Corrupt)?;
        self.buf = &self.buf[n..];
        Ok(b)
    }
    pub fn id(&mut self) -> Result<StreamId, Corrupt> {
        Ok(StreamId::from_bytes(self.take(16)?.try_into().map_err(|_| Corrupt)?))
    }
    pub fn bytes(&mut self) -> Result<&'a [u8], Corrupt> {
        let n = self.count(1)?;
        self.take(n)
    }
    /// A count of things that take `min_bytes` each at least: more than
    /// the bytes left can hold is corrupt.
    pub fn count(&mut self, min_bytes: usize) -> Result<usize, Corrupt> {
        let n = usize::try_from(self.varint()?).map_err(|_| Corrupt)?;
        if n.saturating_mul(min_bytes) > self.buf.len() {
            return Err(Corrupt);
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests;
