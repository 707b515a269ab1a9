//! A stream's consumer groups (Redis 7.0's `streamCG`): each a name, the
//! last ID delivered to the group, its entries-read counter (-1:
//! unknown), its pending entries list (PEL: ID → consumer, delivery time,
//! delivery count) and its consumers (name → seen time, its own PEL).
//! Groups and consumers are kept in name order, as Redis's radix trees
//! list them.
//!
//! ```text
//! groups    varint n | n × group
//! group     bytes name | 16 last_id | varint entries_read + 1 (0: -1)
//!           varint consumers | consumers × (bytes name | varint seen_ms)
//!           varint pending | pending × (16 id | varint consumer index |
//!                                       varint delivery_ms | varint count)
//! ```

use std::collections::{BTreeMap, BTreeSet};

use super::{Reader, StreamId};
use crate::{varint, Corrupt};

/// Bytes a pending entry costs (its map slot, and its ID in its
/// consumer's set), roughly.
const PENDING_BYTES: usize = 96;
/// Bytes a consumer or group costs beside its name, roughly.
const CONSUMER_BYTES: usize = 96;

/// One entry delivered and not yet acknowledged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingEntry {
    pub consumer: Vec<u8>,
    /// When it was last delivered (unix ms).
    pub delivery_ms: u64,
    pub delivery_count: u64,
}

/// A consumer of a group.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Consumer {
    /// Last time it read or claimed (unix ms).
    pub seen_ms: u64,
    /// The IDs pending for it.
    pub pending: BTreeSet<StreamId>,
}

/// A consumer group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    pub name: Vec<u8>,
    pub last_id: StreamId,
    /// Entries the group has read (-1: unknown).
    pub entries_read: i64,
    pub pending: BTreeMap<StreamId, PendingEntry>,
    pub consumers: BTreeMap<Vec<u8>, Consumer>,
}

impl Group {
    pub fn new(name: &[u8], last_id: StreamId, entries_read: i64) -> Group {
        Group { name: name.to_vec(), last_id, entries_read, pending: BTreeMap::new(), consumers: BTreeMap::new() }
    }

    pub(crate) fn mem_bytes(&self) -> usize {
        CONSUMER_BYTES
            + self.name.len()
            + self.pending.len() * PENDING_BYTES
            + self.consumers.keys().map(|k| k.len() + CONSUMER_BYTES).sum::<usize>()
    }
}

/// Appends the groups' encoding (module notes).
pub(crate) fn encode(groups: &[Group], out: &mut Vec<u8>) {
    varint::put(out, groups.len() as u64);
    for g in groups {
        varint::put_bytes(out, &g.name);
        out.extend_from_slice(&g.last_id.to_bytes());
        varint::put(out, (g.entries_read + 1) as u64);
        varint::put(out, g.consumers.len() as u64);
        let index: BTreeMap<&[u8], usize> = g.consumers.keys().enumerate().map(|(i, k)| (k.as_slice(), i)).collect();
        for (name, c) in &g.consumers {
            varint::put_bytes(out, name);
            varint::put(out, c.seen_ms);
        }
        varint::put(out, g.pending.len() as u64);
        for (id, p) in &g.pending {
            out.extend_from_slice(&id.to_bytes());
            varint::put(out, index.get(p.consumer.as_slice()).copied().unwrap_or(0) as u64);
            varint::put(out, p.delivery_ms);
            varint::put(out, p.delivery_count);
        }
    }
}

/// Reads [`encode`]'s bytes; never panics.
pub(crate) fn decode(r: &mut Reader<'_>) -> Result<Vec<Group>, Corrupt> {
    let n = r.count(18)?;
    let mut groups: Vec<Group> = Vec::with_capacity(n);
    // Bounded by n, itself bounded by the bytes (and the inner loops alike).
    for _ in 0..n {
        let name = r.bytes()?.to_vec();
        if groups.last().is_some_and(|g| g.name >= name) {
            return Err(Corrupt);
        }
        let last_id = r.id()?;
        let entries_read = i64::try_from(r.varint()?).map_err(|_| Corrupt)? - 1;
        let mut g = Group::new(&name, last_id, entries_read);
        let nc = r.count(2)?;
        let mut names = Vec::with_capacity(nc);
        for _ in 0..nc {
            let cname = r.bytes()?.to_vec();
            let seen_ms = r.varint()?;
            if names.last().is_some_and(|l: &Vec<u8>| *l >= cname) {
                return Err(Corrupt);
            }
            names.push(cname.clone());
            g.consumers.insert(cname, Consumer { seen_ms, pending: BTreeSet::new() });
        }
        let np = r.count(19)?;
        for _ in 0..np {
            let id = r.id()?;
            let ci = usize::try_from(r.varint()?).map_err(|_| Corrupt)?;
            let consumer = names.get(ci).ok_or(Corrupt)?.clone();
            let delivery_ms = r.varint()?;
            let delivery_count = r.varint()?;
            g.consumers.get_mut(&consumer).ok_or(Corrupt)?.pending.insert(id);
            if g.pending.insert(id, PendingEntry { consumer, delivery_ms, delivery_count }).is_some() {
                return Err(Corrupt);
            }
        }
        groups.push(g);
    }
    Ok(groups)
}

/// Entries-read of a group that cannot be known (Redis's
/// `SCG_INVALID_ENTRIES_READ`).
pub const ENTRIES_READ_UNKNOWN: i64 = -1;

/// One entry XREADGROUP or XCLAIM hands out: its fields, or None for a
/// pending entry the stream no longer holds (history reads answer it
/// with a null).
pub type Delivered = (StreamId, Option<Vec<(Vec<u8>, Vec<u8>)>>);

/// XCLAIM's options.
#[derive(Clone, Copy, Debug, Default)]
pub struct ClaimOptions {
    pub min_idle_ms: u64,
    /// The delivery time to set (IDLE or TIME, already checked), unix ms.
    pub delivery_ms: u64,
    pub retry_count: Option<u64>,
    pub force: bool,
    pub justid: bool,
    pub last_id: Option<StreamId>,
}

/// XAUTOCLAIM's arguments.
#[derive(Clone, Copy, Debug)]
pub struct AutoClaim {
    pub min_idle_ms: u64,
    /// The PEL's walk starts at this ID.
    pub start: StreamId,
    /// Results at most (entries claimed or dropped); ten times as many
    /// looked at.
    pub count: usize,
    pub justid: bool,
}

/// What XAUTOCLAIM did: the cursor, the entries claimed, the IDs it
/// dropped from the PEL because the stream no longer holds them.
#[derive(Debug, Default)]
pub struct AutoClaimed {
    pub next: StreamId,
    pub claimed: Vec<Delivered>,
    pub deleted: Vec<StreamId>,
}

fn pairs_of(e: super::Entry) -> Vec<(Vec<u8>, Vec<u8>)> {
    e.pairs
}

impl super::Stream {
    /// The groups, in name order.
    pub fn groups(&self) -> &[Group] {
        &self.groups
    }

    pub fn group(&self, name: &[u8]) -> Option<&Group> {
        self.groups.binary_search_by(|g| g.name.as_slice().cmp(name)).ok().map(|i| &self.groups[i])
    }

    fn group_mut(&mut self, name: &[u8]) -> Option<&mut Group> {
        let i = self.groups.binary_search_by(|g| g.name.as_slice().cmp(name)).ok()?;
        Some(&mut self.groups[i])
    }

    /// Sets each group's entries-read, in the groups' order (a payload
    /// of Redis 6.2 and older, which kept none).
    pub fn set_entries_read(&mut self, values: &[i64]) {
        for (g, v) in self.groups.iter_mut().zip(values) {
            g.entries_read = *v;
        }
    }

    /// XGROUP CREATE: false if the group exists.
    pub fn create_group(&mut self, name: &[u8], last_id: StreamId, entries_read: i64) -> bool {
        match self.groups.binary_search_by(|g| g.name.as_slice().cmp(name)) {
            Ok(_) => false,
            Err(i) => {
                self.groups.insert(i, Group::new(name, last_id, entries_read));
                true
            }
        }
    }

    /// XGROUP DESTROY: true if the group was there.
    pub fn destroy_group(&mut self, name: &[u8]) -> bool {
        match self.groups.binary_search_by(|g| g.name.as_slice().cmp(name)) {
            Ok(i) => {
                self.groups.remove(i);
                true
            }
            Err(_) => false,
        }
    }

    /// XGROUP SETID: false if there is no such group.
    pub fn set_group_id(&mut self, name: &[u8], last_id: StreamId, entries_read: i64) -> bool {
        let Some(g) = self.group_mut(name) else { return false };
        g.last_id = last_id;
        g.entries_read = entries_read;
        true
    }

    /// XGROUP CREATECONSUMER (and every command that names a consumer):
    /// Some(true) if created, Some(false) if it was there; None without
    /// the group.
    pub fn create_consumer(&mut self, group: &[u8], consumer: &[u8], now_ms: u64) -> Option<bool> {
        let g = self.group_mut(group)?;
        if g.consumers.contains_key(consumer) {
            return Some(false);
        }
        g.consumers.insert(consumer.to_vec(), Consumer { seen_ms: now_ms, pending: BTreeSet::new() });
        Some(true)
    }

    /// A consumer reads (XREADGROUP): created if need be, its seen time
    /// now. Some(true) if created; None without the group.
    pub fn touch_consumer(&mut self, group: &[u8], consumer: &[u8], now_ms: u64) -> Option<bool> {
        let g = self.group_mut(group)?;
        let created = !g.consumers.contains_key(consumer);
        g.consumers.entry(consumer.to_vec()).or_default().seen_ms = now_ms;
        Some(created)
    }

    /// The groups' encoding (the log's record of a group command).
    pub fn groups_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        encode(&self.groups, &mut out);
        out
    }

    /// Replaces the groups with [`super::Stream::groups_bytes`]' (the log's
    /// replay); Err, and nothing changed, if they do not decode.
    pub fn set_groups_bytes(&mut self, bytes: &[u8]) -> Result<(), Corrupt> {
        let mut r = Reader { buf: bytes };
        let groups = decode(&mut r)?;
        if !r.buf.is_empty() {
            return Err(Corrupt);
        }
        self.groups = groups;
        Ok(())
    }

    /// XGROUP DELCONSUMER: the entries it had pending (dropped from the
    /// group's PEL too); None without the group, Some(None) without the
    /// consumer.
    pub fn delete_consumer(&mut self, group: &[u8], consumer: &[u8]) -> Option<Option<u64>> {
        let g = self.group_mut(group)?;
        let Some(c) = g.consumers.remove(consumer) else { return Some(None) };
        for id in &c.pending {
            g.pending.remove(id);
        }
        Some(Some(c.pending.len() as u64))
    }

    /// Whether a live entry has this ID (Redis's `streamEntryExists`).
    pub fn has_entry(&self, id: StreamId) -> bool {
        let mut found = false;
        self.scan(id, id, false, |_, _| {
            found = true;
            false
        });
        found
    }

    /// Redis's `streamRangeHasTombstones` (`end` None: to the end).
    fn range_has_tombstones(&self, start: StreamId, end: StreamId) -> bool {
        if self.is_empty() || self.max_deleted == StreamId::MIN {
            return false;
        }
        if self.first_id() > self.max_deleted {
            return false;
        }
        start <= self.max_deleted && self.max_deleted <= end
    }

    /// Redis's `streamEstimateDistanceFromFirstEverEntry`: the entries-read
    /// count of a group whose last ID is `id`, or -1 if it cannot tell.
    pub fn estimate_entries_read(&self, id: StreamId) -> i64 {
        let added = self.entries_added as i64;
        if self.entries_added == 0 {
            return 0;
        }
        if self.is_empty() && id <= self.last_id {
            return added;
        }
        match id.cmp(&self.last_id) {
            std::cmp::Ordering::Equal => return added,
            std::cmp::Ordering::Greater => return ENTRIES_READ_UNKNOWN,
            std::cmp::Ordering::Less => {}
        }
        let first = self.first_id();
        if self.max_deleted == StreamId::MIN || self.max_deleted < first {
            if id < first {
                return added.wrapping_sub(self.len as i64);
            }
            if id == first {
                return added.wrapping_sub(self.len as i64).wrapping_add(1);
            }
        }
        ENTRIES_READ_UNKNOWN
    }

    /// XINFO GROUPS' lag of a group (Redis 7.0's `streamReplyWithCGLag`):
    /// None when it cannot tell.
    pub fn lag(&self, g: &Group) -> Option<i64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if g.entries_read != ENTRIES_READ_UNKNOWN && !self.range_has_tombstones(g.last_id, StreamId::MAX) {
            // Counters from XSETID or a RESTORE can be anything: C's
            // wrapping arithmetic, as Redis's.
            return Some((self.entries_added as i64).wrapping_sub(g.entries_read));
        }
        let read = self.estimate_entries_read(g.last_id);
        (read != ENTRIES_READ_UNKNOWN).then(|| (self.entries_added as i64).wrapping_sub(read))
    }

    /// XREADGROUP `>`: up to `count` (0: all) entries after the group's
    /// last ID, delivered to `consumer` (created if need be; the caller
    /// made sure of the group): each joins the PEL unless `noack`, the
    /// group's last ID and entries-read move (Redis's
    /// `streamReplyWithRange` with a group). None without the group.
    pub fn read_new(
        &mut self,
        group: &[u8],
        consumer: &[u8],
        count: usize,
        noack: bool,
        now_ms: u64,
    ) -> Option<Vec<super::Entry>> {
        let after = self.group(group)?.last_id;
        let entries = match after.next() {
            Some(start) => self.range(start, StreamId::MAX, false, count),
            None => Vec::new(),
        };
        // The tombstone test reads the stream, not the group: computed
        // per entry before the group is borrowed.
        let counters: Vec<(bool, i64)> = entries
            .iter()
            .map(|e| (!self.range_has_tombstones(e.id, StreamId::MAX), self.estimate_entries_read(e.id)))
            .collect();
        let has_entries = self.entries_added != 0;
        let g = self.group_mut(group)?;
        for (e, (clean, estimate)) in entries.iter().zip(counters) {
            if e.id > g.last_id {
                if g.entries_read != ENTRIES_READ_UNKNOWN && clean {
                    g.entries_read = g.entries_read.wrapping_add(1);
                } else if has_entries {
                    g.entries_read = estimate;
                }
                g.last_id = e.id;
            }
            if !noack {
                deliver(g, e.id, consumer, now_ms);
            }
        }
        Some(entries)
    }

    /// XREADGROUP with an ID: the consumer's pending entries after
    /// `after`, at most `count` (0: all); each one the stream still holds
    /// counts one more delivery (Redis's
    /// `streamReplyWithRangeFromConsumerPEL`). None without the group.
    pub fn read_history(
        &mut self,
        group: &[u8],
        consumer: &[u8],
        after: StreamId,
        count: usize,
        now_ms: u64,
    ) -> Option<Vec<Delivered>> {
        let g = self.group(group)?;
        let Some(start) = after.next() else { return Some(Vec::new()) };
        let ids: Vec<StreamId> = match g.consumers.get(consumer) {
            Some(c) => c.pending.range(start..).take(if count == 0 { usize::MAX } else { count }).copied().collect(),
            None => Vec::new(),
        };
        let found: Vec<Delivered> = ids.iter().map(|&id| (id, self.get(id).map(pairs_of))).collect();
        let g = self.group_mut(group)?;
        for (id, fields) in &found {
            if fields.is_some() {
                if let Some(p) = g.pending.get_mut(id) {
                    p.delivery_ms = now_ms;
                    p.delivery_count = p.delivery_count.wrapping_add(1);
                }
            }
        }
        Some(found)
    }

    /// XACK: how many of `ids` left the PEL (None without the group).
    pub fn ack(&mut self, group: &[u8], ids: &[StreamId]) -> Option<u64> {
        let g = self.group_mut(group)?;
        let mut n = 0;
        for id in ids {
            if let Some(p) = g.pending.remove(id) {
                if let Some(c) = g.consumers.get_mut(&p.consumer) {
                    c.pending.remove(id);
                }
                n += 1;
            }
        }
        Some(n)
    }

    /// XCLAIM (Redis 7.0.15's `xclaimCommand` after its parsing): the
    /// entries claimed by `consumer` (their fields unless JUSTID). None
    /// without the group.
    pub fn claim(
        &mut self,
        group: &[u8],
        consumer: &[u8],
        ids: &[StreamId],
        o: &ClaimOptions,
        now_ms: u64,
    ) -> Option<Vec<Delivered>> {
        let exists: Vec<bool> = ids.iter().map(|&id| self.has_entry(id)).collect();
        let g = self.group_mut(group)?;
        if let Some(last) = o.last_id.filter(|l| *l > g.last_id) {
            g.last_id = last;
        }
        let mut claimed = Vec::new();
        for (&id, &exists) in ids.iter().zip(&exists) {
            if !exists {
                drop_pending(g, id);
                continue;
            }
            let fresh = !g.pending.contains_key(&id);
            if fresh && !o.force {
                continue;
            }
            if fresh {
                g.pending.insert(id, PendingEntry { consumer: Vec::new(), delivery_ms: now_ms, delivery_count: 1 });
            } else if o.min_idle_ms > 0 {
                let p = &g.pending[&id];
                if p.delivery_ms > now_ms || now_ms - p.delivery_ms < o.min_idle_ms {
                    continue;
                }
            }
            take_over(g, id, consumer, now_ms);
            let p = g.pending.get_mut(&id).expect("just ensured");
            p.delivery_ms = o.delivery_ms;
            match o.retry_count {
                Some(n) => p.delivery_count = n,
                None if !o.justid => p.delivery_count = p.delivery_count.wrapping_add(1),
                None => {}
            }
            claimed.push(id);
        }
        Some(claimed.into_iter().map(|id| (id, (!o.justid).then(|| self.get(id).map(pairs_of)).flatten())).collect())
    }

    /// XAUTOCLAIM (Redis 7.0.15's `xautoclaimCommand` after its parsing):
    /// walks the PEL from `start`, at most `count` results and `count *
    /// 10` entries looked at. None without the group.
    pub fn autoclaim(&mut self, group: &[u8], consumer: &[u8], a: &AutoClaim, now_ms: u64) -> Option<AutoClaimed> {
        let AutoClaim { min_idle_ms, start, count, justid } = *a;
        let g = self.group(group)?;
        let mut attempts = count.saturating_mul(10);
        let mut left = count;
        // The PEL's IDs from `start`, enough for every attempt.
        let candidates: Vec<(StreamId, u64)> =
            g.pending.range(start..).take(attempts).map(|(id, p)| (*id, p.delivery_ms)).collect();
        let exists: Vec<bool> = candidates.iter().map(|(id, _)| self.has_entry(*id)).collect();
        let mut out = AutoClaimed::default();
        let mut looked = 0usize;
        let g = self.group_mut(group)?;
        // Bounded by `attempts`.
        for ((id, delivered), exists) in candidates.iter().zip(exists) {
            if attempts == 0 || left == 0 {
                break;
            }
            attempts -= 1;
            looked += 1;
            if !exists {
                drop_pending(g, *id);
                out.deleted.push(*id);
                left -= 1;
                continue;
            }
            if min_idle_ms > 0 && (*delivered > now_ms || now_ms - *delivered < min_idle_ms) {
                continue;
            }
            take_over(g, *id, consumer, now_ms);
            let p = g.pending.get_mut(id).expect("pending");
            p.delivery_ms = now_ms;
            if !justid {
                p.delivery_count = p.delivery_count.wrapping_add(1);
            }
            out.claimed.push((*id, None));
            left -= 1;
        }
        // The cursor: the first pending ID after the last one looked at.
        out.next = match looked.checked_sub(1).map(|i| candidates[i].0) {
            Some(last) => last.next().and_then(|n| g.pending.range(n..).next().map(|(id, _)| *id)),
            None => g.pending.range(start..).next().map(|(id, _)| *id),
        }
        .unwrap_or(StreamId::MIN);
        if !justid {
            for c in &mut out.claimed {
                c.1 = self.get(c.0).map(pairs_of);
            }
        }
        Some(out)
    }
}

/// Puts `id` in the PEL for `consumer` (a new delivery), or moves it to
/// `consumer` with a first delivery's counters if it was pending.
fn deliver(g: &mut Group, id: StreamId, consumer: &[u8], now_ms: u64) {
    if let Some(p) = g.pending.get(&id) {
        let old = p.consumer.clone();
        if let Some(c) = g.consumers.get_mut(&old) {
            c.pending.remove(&id);
        }
    }
    g.pending.insert(id, PendingEntry { consumer: consumer.to_vec(), delivery_ms: now_ms, delivery_count: 1 });
    g.consumers.entry(consumer.to_vec()).or_default().pending.insert(id);
}

/// Moves the pending `id` to `consumer` (created if need be, seen now).
fn take_over(g: &mut Group, id: StreamId, consumer: &[u8], now_ms: u64) {
    let c = g.consumers.entry(consumer.to_vec()).or_default();
    c.seen_ms = now_ms;
    c.pending.insert(id);
    let Some(p) = g.pending.get_mut(&id) else { return };
    if p.consumer != consumer {
        let old = std::mem::replace(&mut p.consumer, consumer.to_vec());
        if let Some(c) = g.consumers.get_mut(&old) {
            c.pending.remove(&id);
        }
    }
}

/// Drops `id` from the PEL (the stream no longer holds it).
fn drop_pending(g: &mut Group, id: StreamId) {
    if let Some(p) = g.pending.remove(&id) {
        if let Some(c) = g.consumers.get_mut(&p.consumer) {
            c.pending.remove(&id);
        }
    }
}
