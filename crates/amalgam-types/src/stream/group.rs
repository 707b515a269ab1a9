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

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    varint::put(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// Appends the groups' encoding (module notes).
pub(crate) fn encode(groups: &[Group], out: &mut Vec<u8>) {
    varint::put(out, groups.len() as u64);
    for g in groups {
        put_bytes(out, &g.name);
        out.extend_from_slice(&g.last_id.to_bytes());
        varint::put(out, (g.entries_read + 1) as u64);
        varint::put(out, g.consumers.len() as u64);
        let index: BTreeMap<&[u8], usize> = g.consumers.keys().enumerate().map(|(i, k)| (k.as_slice(), i)).collect();
        for (name, c) in &g.consumers {
            put_bytes(out, name);
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
