//! Large records framed after the bucket lock (issue 18 §5).
//!
//! # Why
//! The journal frames a record under the changed key's bucket lock (engine
//! `journal.rs`), so one key's records keep the order of its changes. For
//! a large value that does not arrive in place (APPEND, SETRANGE, a SET
//! queued in MULTI/EXEC or given to MSET, memcached's append) that meant
//! copying the whole value, and computing its CRC32C, while every other
//! writer of the bucket (and, inside a transaction, of all its buckets)
//! waited: about a second for 512 MB on this machine.
//!
//! # How it works
//! The engine gives such a Put to `Journal::record_large` (a plain item,
//! value of `JOURNAL_LARGE_VALUE_BYTES_MIN` or more). Unless the value was
//! staged as it arrived (`staged.rs`: that record is made at once, without
//! a copy), [`record_large`] takes the record's *place* under the lock: a
//! [`Pending`] of the record's exact length, appended to the log (its
//! sequence number, between the records before and after it) and fed to
//! the replication backlog (its offsets), and queued on this thread. Once
//! the writer has released the bucket lock (a transaction, all its
//! buckets) the engine calls `Journal::fill` with the same item, in the
//! same order, and [`fill`] frames the record from the item into the
//! pending's buffer: the one copy, outside every lock.
//!
//! # Why the order is right
//! A key's next change needs its bucket lock, so its record's place is
//! taken after this one's: the log's sequence and the stream's offsets
//! keep the key's order, whenever the bytes arrive. The bytes are the item
//! as published: the writer is still pinned in the engine's epoch, so the
//! item's memory is not reused even if another writer has replaced it, and
//! a plain item's bytes (value, flags, expiry, CAS) never change once
//! published. Nothing reads a pending record before it is filled: a log
//! write that reaches it waits for it (`Pending::wait`; the committer and
//! the everysec thread hold the log's I/O lock meanwhile, which the filler
//! never takes), and a replica's sender sends nothing past it until it is
//! filled. Every place taken is filled: the engine fills a transaction's
//! in a guard that runs also when the transaction's closure panics (the
//! server catches a handler's panic and serves on; an unfilled place
//! would hold every later log write). Recovery and replicas therefore
//! read byte for byte the record
//! the journal made under the lock before. The reply waits, as before,
//! for the record's write (its sequence number is the connection's).
//!
//! # Limits
//! The copy is still the worker's (after the unlock): a worker's other
//! connections wait for it as before; other workers' writers of the
//! bucket do not. Moving it off the worker would need the item kept alive
//! past the writer's epoch pin (a reference the log holds on the item).
//! Nothing may wait for the log's writes between taking a place and
//! filling it on the same thread: SAVE is refused inside MULTI (Redis's
//! `no-multi`), a log write on a worker happens only after its commands,
//! and `CONFIG SET appendfsync always` inside EXEC skips its own sync
//! while the thread has places to fill ([`places_here`]).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::Arc;

use amalgam_engine::{Change, ItemRef};

use crate::format;
use crate::log::{Log, Pending};

thread_local! {
    /// Places this thread took and has not filled yet, in order.
    static PLACES: RefCell<VecDeque<Arc<Pending>>> = const { RefCell::new(VecDeque::new()) };
}

/// A journal's `record_large` (module notes): `record` makes the record
/// at once (a staged value; nothing journals); else the place is taken in
/// `log` and by `place` (the backlog) and true answered.
pub(crate) fn record_large(
    log: Option<&Log>,
    stream: bool,
    place: impl FnOnce(&Arc<Pending>),
    it: ItemRef<'_>,
    record: impl FnOnce(Change<'_>),
) -> bool {
    if (log.is_none() && !stream) || crate::staged::is_staged_for(&it) {
        record(Change::Put(it));
        return false;
    }
    let p = Arc::new(Pending::new(format::put_len(&it)));
    place(&p);
    if let Some(log) = log {
        log.append_pending(&p);
    }
    PLACES.with_borrow_mut(|q| q.push_back(p));
    true
}

/// True while the calling thread has taken places it has not filled.
pub(crate) fn places_here() -> bool {
    PLACES.with_borrow(|q| !q.is_empty())
}

/// A journal's `fill`: frames the record of `it` into the place taken for
/// it (the oldest one this thread has not filled).
pub(crate) fn fill(it: ItemRef<'_>) {
    let Some(p) = PLACES.with_borrow_mut(|q| q.pop_front()) else {
        debug_assert!(false, "fill without a place taken");
        return;
    };
    let mut b = Vec::with_capacity(p.len());
    format::put(&mut b, &it);
    p.fill(Arc::new(b));
}
