//! Collections on the engine: how a RESP command reads and writes a key
//! that holds a hash, list, set or sorted set (issue 19).
//!
//! ## Where a collection lives
//! A small collection is an item whose value is its compact bytes, with
//! its kind's value tag (`amalgam_types::value::tag_of`); a large one is
//! an item holding an engine object, an [`amalgam_types::value::Value`]
//! (engine `object.rs`). A plain string is tag 0. So every command finds
//! the kind in the item it already looked up, and a key of another kind
//! answers Redis's `WRONGTYPE`.
//!
//! ## Reads ([`read`])
//! A lookup as GET does it — optimistic, no lock. A compact value is read
//! in place from the item's bytes; a large one under its object's read
//! lock, inside the lookup's epoch pin, so a reader never waits for
//! another reader and never sees a half-done write.
//!
//! ## Writes ([`write`])
//! One `Store::update`: under the key's bucket lock, the command's
//! operation runs on the live value. A compact value is decoded, changed
//! and published as a new item (at most the threshold's entries: the
//! bounded copy Redis's listpack makes too) — or, past a threshold, as a
//! new object; a large value is changed in place under the object's write
//! lock (`Update::InPlace`). A write that empties a collection deletes the
//! key, as Redis does. `Store::update` may run the closure a second time
//! when a cache-mode write had to make room (the engine's `with_room`):
//! each run starts again from the unchanged old value, and replies are
//! composed only from the result of the run that took effect.
//!
//! ## A hot list goes large ([`Hot`])
//! A compact value is rewritten whole into a new item on every write,
//! and in cache mode every version is appended to the log, which the
//! reclaimer walks again later; a large value is changed in place. One
//! list written by everyone (a queue) is the worst case: measured with
//! amalgam-bench's hot key (docs/bench-log/2026-11-26-collections.md §
//! After (39bb7ef, 2026-11-26), issue 19 §6), its
//! in-place form serves ~2.9× the requests at a lower p99 and below
//! Redis's CPU per request. Moving every small list to the large form
//! would double their memory (1,173 against 367 bytes for 10 items), so
//! only a list written often moves: each worker counts compact list
//! writes per key in a small direct-mapped table, and a key that reaches
//! [`HOT_WRITES_MIN`] writes in a row in its slot is published as an
//! object. Over many keys a slot is taken over long before one key comes
//! back, so cold lists stay compact. Redis 7.0's OBJECT ENCODING says
//! `quicklist` for every list; Amalgam's says it for a hot one too.
//!
//! ## A long list goes large ([`LONG_LIST_BYTES_MIN`])
//! A compact write costs a copy of the whole value into the log (and the
//! reclaimer's later walk over the dead version), so its cost grows with
//! the list, where Redis edits its listpack in place (a memmove of it).
//! Measured over 100,000 lists growing under LPUSH (amalgam-bench,
//! docs/bench-log/2026-11-26-collections.md § After the hot list goes
//! large, issue 19 §6), the compact form's copy of a 1–3 KiB
//! list per push kept LPUSH at 0.9–1.3× Redis. So a compact list of more
//! than [`LONG_LIST_BYTES_MIN`] bytes that is written again is published
//! as a large list of one chunk sized to its entries (room for a quarter
//! more; the chunk then grows by quarters, as jemalloc's size classes
//! do for Redis's listpack: amalgam-types
//! `List::to_large_long`, `list/chunk.rs`), changed in place from then
//! on. Below the threshold (a 10-item list of 32-byte items is ~340
//! bytes) a list stays compact: the large form's fixed cost (the object,
//! its cell, the chunk deque) is then too large a share of the list; a
//! list created long and never written again stays compact too.
//! Redis 7.0's OBJECT ENCODING says `quicklist` for every list.
//!
//! ## Persistence (issue 19 item 4)
//! With `--dir`, every write reaches the log as one record (engine
//! journal.rs, amalgam-persist format.rs): a write that publishes a new
//! item (a compact value, or a new object past a threshold) as that item,
//! tag and all; an in-place write to a large value as the one
//! [`amalgam_types::op::Op`] the command hands its [`OpLog`]: the
//! command's *effect*, as Redis's AOF logs it (SPOP as the members it
//! removed, HINCRBYFLOAT as the value it set, ZADD and ZINCRBY as final
//! scores, a pop as the pop that happened). Recovery applies it to the
//! value as it was. An op is built only when it is needed: persistence
//! on and a large value changed in place.
//!
//! ## Replacing a key ([`replace`])
//! SINTERSTORE and its kin overwrite their destination whatever it holds
//! (Redis's `setKey`): one `Store::update` that puts the new value, or
//! removes the key for an empty one, with no kind check and no expiry.

use super::glob::matches;
use super::{int_arg, is, Arg, Ctx};
use amalgam_engine::{ItemRef, NewValue, Update, TAG_BYTES, TAG_OBJECT};
use amalgam_protocol::resp::err;
use amalgam_protocol::resp::{push_array, push_bulk, push_error};
use amalgam_types::op::Op;
use amalgam_types::value::{kind_of_tag, tag_of, Value};
use amalgam_types::{Kind, Thresholds};
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};

/// Redis's reply to a command on a key of another kind.
pub const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

/// Redis's reply to a `denyoom` command past `maxmemory` under
/// `noeviction`.
pub(crate) const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";

/// What a key holds, as TYPE names it.
pub(crate) fn type_name(it: &ItemRef<'_>) -> &'static str {
    match it.tag() {
        TAG_BYTES => "string",
        TAG_OBJECT => match it.object() {
            Some(cell) => match cell.read().as_any().downcast_ref::<Value>() {
                Some(v) => v.kind().type_name(),
                None => "none",
            },
            None => "none",
        },
        t => kind_of_tag(t).map_or("none", Kind::type_name),
    }
}

/// OBJECT ENCODING of a collection item, by Redis 7.2's names (a small
/// list is a `listpack`, as in 7.2; 7.0 says `quicklist` for every list);
/// None for a string.
pub(crate) fn encoding(it: &ItemRef<'_>) -> Option<&'static str> {
    match it.tag() {
        TAG_BYTES => None,
        TAG_OBJECT => it.object().and_then(|c| c.read().as_any().downcast_ref::<Value>().map(Value::encoding)),
        t => kind_of_tag(t).map(|k| match k {
            // A packed set starts with its form: 0 a pack, else an intset's
            // integer width (amalgam-types set.rs).
            Kind::Set if it.value().first().is_some_and(|&b| b != 0) => "intset",
            _ => "listpack",
        }),
    }
}

/// A collection found by a read.
#[derive(Debug)]
pub enum Found<'a> {
    /// Compact: the item's bytes, in the kind's packed encoding.
    Packed(&'a [u8]),
    /// Large: the object, read-locked for the duration of the call.
    Large(&'a Value),
}

/// The outcome of a read or write on a key that should hold `kind`.
#[derive(Debug, PartialEq, Eq)]
pub enum Access<R> {
    /// No such key (or it expired).
    Absent,
    /// The key holds another kind.
    WrongType,
    Done(R),
}

/// Why a collection write did not run.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// The engine's error (an item it cannot hold).
    Engine(amalgam_engine::Error),
    /// A write that may grow a collection: store mode, and items and
    /// objects fill the budget (`Store::objects_over_budget`).
    OutOfMemory,
}

impl Refused {
    /// The error reply.
    pub fn reply(&self, out: &mut Vec<u8>) {
        match self {
            Refused::Engine(e) => super::strings::engine_error(*e, out),
            Refused::OutOfMemory => push_error(out, OOM.as_bytes()),
        }
    }
}

/// Reads the `kind` collection at `key` with `f`, lock-free for a compact
/// value, under the object's read lock for a large one.
pub fn read<R>(ctx: &Ctx<'_>, key: &[u8], kind: Kind, f: impl FnOnce(Found<'_>) -> R) -> Access<R> {
    let r = ctx.ks.store.get(key, |it| {
        let tag = it.tag();
        if tag == tag_of(kind) {
            return Access::Done(f(Found::Packed(it.value())));
        }
        if tag != TAG_OBJECT {
            return Access::WrongType;
        }
        let Some(cell) = it.object() else { return Access::WrongType };
        let guard = cell.read();
        match guard.as_any().downcast_ref::<Value>() {
            Some(v) if v.kind() == kind => Access::Done(f(Found::Large(v))),
            _ => Access::WrongType,
        }
    });
    r.unwrap_or(Access::Absent)
}

/// Reads whatever collection `key` holds with `f`, told its kind (SORT
/// takes a list, a set or a sorted set): [`read`] for any kind. A string
/// is [`Access::WrongType`].
pub fn read_any<R>(ctx: &Ctx<'_>, key: &[u8], f: impl FnOnce(Kind, Found<'_>) -> R) -> Access<R> {
    let r = ctx.ks.store.get(key, |it| {
        let tag = it.tag();
        if let Some(kind) = kind_of_tag(tag) {
            return Access::Done(f(kind, Found::Packed(it.value())));
        }
        let Some(cell) = it.object().filter(|_| tag == TAG_OBJECT) else { return Access::WrongType };
        let guard = cell.read();
        match guard.as_any().downcast_ref::<Value>() {
            Some(v) => Access::Done(f(v.kind(), Found::Large(v))),
            None => Access::WrongType,
        }
    });
    r.unwrap_or(Access::Absent)
}

/// What a write's operation did to the value it was given.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Changed {
    /// Nothing: the key stays as it was (no new item, nothing journaled).
    No,
    /// The value changed.
    Yes,
}

/// Where a write's operation puts the log record of its change (module
/// notes, "Persistence").
#[derive(Debug)]
pub(crate) struct OpLog {
    /// True: the value is large, changed in place, and the server logs.
    wanted: bool,
    record: Vec<u8>,
}

impl OpLog {
    fn new(wanted: bool) -> OpLog {
        OpLog { wanted, record: Vec::new() }
    }

    /// Logs the write's change: `op` runs only if the record is wanted.
    /// Once per write that answers [`Changed::Yes`]; the op must replay,
    /// on the value as it was before, to the value as it is now.
    pub(crate) fn log(&mut self, op: impl FnOnce() -> Op) {
        if self.wanted {
            debug_assert!(self.record.is_empty(), "one op record per write");
            op().encode(&mut self.record);
        }
    }
}

/// Compact writes in a row, by one worker, to one list key (its slot of
/// [`Hot`] not taken by another key meanwhile) before it is moved to
/// its large form (module notes).
const HOT_WRITES_MIN: u32 = 64;
/// Slots of a worker's [`Hot`] table (a power of two).
const HOT_SLOTS: usize = 64;
/// A compact list longer than this (its packed bytes) that is written
/// again is published in its large form (module notes, "A long list goes
/// large").
const LONG_LIST_BYTES_MIN: usize = 1024;

/// A worker's count of recent compact list writes per key: slot = a
/// hash of the key, holding (that hash, writes in a row).
struct Hot {
    slots: [(u64, u32); HOT_SLOTS],
}

thread_local! {
    static HOT: std::cell::RefCell<Hot> = const { std::cell::RefCell::new(Hot { slots: [(0, 0); HOT_SLOTS] }) };
}

/// Counts a compact write to the list `key`; true once it is hot.
fn hot_write(key: &[u8]) -> bool {
    // FNV-1a: a few instructions a byte, keys are short.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    // Bounded by the key's length.
    for &b in key {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    HOT.with(|t| {
        let mut t = t.borrow_mut();
        let slot = &mut t.slots[(h as usize) & (HOT_SLOTS - 1)];
        if slot.0 == h {
            slot.1 = slot.1.saturating_add(1);
        } else {
            *slot = (h, 1);
        }
        slot.1 >= HOT_WRITES_MIN
    })
}

/// Runs `op` on the `kind` collection at `key` under its bucket lock.
/// With `create`, an absent key starts as an empty collection (a write
/// that leaves it empty stores nothing); without, an absent key answers
/// [`Access::Absent`] and `op` does not run. `op` may run more than once
/// (module notes); only the last run's result is returned. `op` logs
/// its change to the [`OpLog`] it is given.
///
/// A change publishes `event` (keyspace notifications, `notify.rs`),
/// and `del` after it when the change left the collection empty (Redis's
/// order); `None` leaves the events to the caller (LMOVE and SMOVE, whose
/// destination's event comes first).
pub(crate) fn write<R>(
    ctx: &Ctx<'_>,
    key: &[u8],
    kind: Kind,
    create: bool,
    event: Event,
    op: impl FnMut(&mut Value, &Thresholds, &mut OpLog) -> (Changed, R),
) -> Result<Access<R>, Refused> {
    // What the last run did (module notes: it may rerun): 1 stored a
    // change, 2 removed the emptied key.
    let mut effect = 0u8;
    let r = write_inner(ctx, key, kind, create, &mut effect, op);
    if let (Some((class, name)), true) = (event, effect != 0 && matches!(r, Ok(Access::Done(_)))) {
        ctx.notify(class, name, key);
        if effect == 2 {
            ctx.notify(crate::notify::GENERIC, "del", key);
        }
    }
    r
}

/// A collection write's keyspace event: its class and name (`None`: the
/// caller publishes).
pub(crate) type Event = Option<(u32, &'static str)>;

fn write_inner<R>(
    ctx: &Ctx<'_>,
    key: &[u8],
    kind: Kind,
    create: bool,
    effect: &mut u8,
    mut op: impl FnMut(&mut Value, &Thresholds, &mut OpLog) -> (Changed, R),
) -> Result<Access<R>, Refused> {
    let logged = ctx.ks.journaled();
    if create && ctx.ks.store.objects_over_budget() {
        // Store mode, full: Redis's noeviction refuses denyoom commands.
        return Err(Refused::OutOfMemory);
    }
    let t = ctx.ks.thresholds.load();
    let item_max = ctx.ks.item_size_max;
    let r = ctx.ks.store.update(key, |old| {
        *effect = 0;
        let Some(it) = old else {
            if !create {
                return (Update::Keep, Access::Absent);
            }
            let mut v = Value::new(kind, &t);
            // A new item carries the whole value: no op record.
            let (changed, r) = op(&mut v, &t, &mut OpLog::new(false));
            if changed == Changed::No || v.is_empty() {
                return (Update::Keep, Access::Done(r));
            }
            *effect = 1;
            return (publish(v, None, item_max), Access::Done(r));
        };
        let tag = it.tag();
        if tag == tag_of(kind) {
            // The store's own bytes: packed by this build, or checked by
            // recovery (`Value::from_packed_trusted`).
            let mut v = Value::from_packed_trusted(kind, it.value(), &t);
            // A new version of a compact value is a new item: no op record.
            let (changed, r) = op(&mut v, &t, &mut OpLog::new(false));
            if changed == Changed::No {
                return (Update::Keep, Access::Done(r));
            }
            if v.is_empty() {
                *effect = 2;
                return (Update::Remove, Access::Done(r));
            }
            *effect = 1;
            if let Value::List(l) = &mut v {
                if hot_write(key) {
                    // Module notes, "A hot list goes large".
                    l.to_large();
                } else if l.packed().is_some_and(|b| b.len() > LONG_LIST_BYTES_MIN) {
                    // Module notes, "A long list goes large".
                    l.to_large_long();
                }
            }
            return (publish(v, Some(&it), item_max), Access::Done(r));
        }
        if tag != TAG_OBJECT {
            return (Update::Keep, Access::WrongType);
        }
        let Some(cell) = it.object() else { return (Update::Keep, Access::WrongType) };
        let mut guard = cell.write();
        let Some(v) = guard.as_any_mut().downcast_mut::<Value>() else { return (Update::Keep, Access::WrongType) };
        if v.kind() != kind {
            return (Update::Keep, Access::WrongType);
        }
        let mut log = OpLog::new(logged);
        let (changed, r) = op(v, &t, &mut log);
        if changed == Changed::No {
            return (Update::Keep, Access::Done(r));
        }
        if v.is_empty() {
            // Logged as the key's deletion.
            *effect = 2;
            return (Update::Remove, Access::Done(r));
        }
        *effect = 1;
        debug_assert!(!logged || !log.record.is_empty(), "an in-place write without its op record");
        (Update::InPlace { record: log.record }, Access::Done(r))
    });
    r.map(|(access, _)| access).map_err(Refused::Engine)
}

/// Replaces whatever `key` holds — any kind, or nothing — with the
/// value `make` builds, or deletes the key if that value is empty: the
/// destination of SINTERSTORE, SUNIONSTORE and SDIFFSTORE (Redis's
/// `setKey`/`dbDelete`: another kind is overwritten, not WRONGTYPE, and
/// the old expiry goes). `make` runs once before the lock; again, under
/// the bucket lock, only if the engine reruns the update (module notes),
/// since the first value was handed over. Returns true if the key held
/// something before.
pub fn replace(ctx: &Ctx<'_>, key: &[u8], mut make: impl FnMut() -> Value) -> Result<bool, Refused> {
    let mut ready = Some(make());
    if ready.as_ref().is_some_and(|v| !v.is_empty()) && ctx.ks.store.objects_over_budget() {
        return Err(Refused::OutOfMemory);
    }
    let item_max = ctx.ks.item_size_max;
    let r = ctx.ks.store.update(key, |old| {
        let v = ready.take().unwrap_or_else(&mut make);
        let had = old.is_some();
        if v.is_empty() {
            return (if had { Update::Remove } else { Update::Keep }, had);
        }
        (publish(v, None, item_max), had)
    });
    r.map(|(had, _)| had).map_err(Refused::Engine)
}

/// The keyspace events of a STORE destination [`replace`] wrote (Redis's
/// `*STORE` commands): `event` when it holds a result, `del` when an
/// empty result removed what it held, nothing when there was nothing.
pub fn notify_stored(ctx: &Ctx<'_>, key: &[u8], class: u32, event: &'static str, stored: bool, had: bool) {
    if stored {
        ctx.notify(class, event, key);
    } else if had {
        ctx.notify(crate::notify::GENERIC, "del", key);
    }
}

/// Room an item's header and key take beside its value, at most: what a
/// packed value must leave of the item size (`-I`).
const ITEM_OVERHEAD_BYTES_MAX: usize = amalgam_engine::KEY_BYTES_MAX + 32;

/// The update that stores `v` as the key's new value: its packed bytes
/// while compact and they fit an item (`item_max`, memcached's `-I`: a
/// compact hash of 512 fields of 64 bytes takes ~67 KB, more than a small
/// `-I`), else an object. Keeps the old item's expiry and flags.
pub(crate) fn publish(v: Value, old: Option<&ItemRef<'_>>, item_max: usize) -> Update<'static> {
    let kind = v.kind();
    let fits = v.packed().is_some_and(|b| b.len() + ITEM_OVERHEAD_BYTES_MAX <= item_max);
    let value = if fits {
        match v.into_packed() {
            // Moved, not copied: the engine copies it once, into the item.
            Ok(bytes) => NewValue::Owned(bytes),
            Err(v) => NewValue::Object(v),
        }
    } else {
        NewValue::Object(Box::new(v))
    };
    Update::Put {
        value,
        flags: old.map_or(0, |o| o.flags()),
        expiry: old.map_or(amalgam_engine::Expiry::Never, |o| o.expiry()),
        fresh_cas: true,
        // The engine forces TAG_OBJECT for an object.
        marks: tag_of(kind),
    }
}

/// Answers an [`Access`] that did not reach the command's own reply:
/// WRONGTYPE, or `absent` for a missing key. Returns the result otherwise.
pub(crate) fn or_reply<R>(a: Access<R>, out: &mut Vec<u8>, absent: impl FnOnce(&mut Vec<u8>)) -> Option<R> {
    match a {
        Access::Done(r) => Some(r),
        Access::WrongType => {
            push_error(out, WRONGTYPE.as_bytes());
            None
        }
        Access::Absent => {
            absent(out);
            None
        }
    }
}

/// The collection thresholds (and `hll-sparse-max-bytes`, the sparse
/// HyperLogLog's, and `stream-node-max-entries` / `-bytes`, a stream
/// node's), settable at run time (CONFIG SET): one
/// atomic per parameter, read with relaxed loads by every write (no lock,
/// no shared write on the request path).
#[derive(Debug)]
pub struct LiveThresholds {
    hash_max_listpack_entries: AtomicUsize,
    hash_max_listpack_value: AtomicUsize,
    set_max_intset_entries: AtomicUsize,
    set_max_listpack_entries: AtomicUsize,
    set_max_listpack_value: AtomicUsize,
    zset_max_listpack_entries: AtomicUsize,
    zset_max_listpack_value: AtomicUsize,
    list_max_listpack_size: AtomicI64,
    hll_sparse_max_bytes: AtomicUsize,
    stream_node_max_entries: AtomicUsize,
    stream_node_max_bytes: AtomicUsize,
}

impl Default for LiveThresholds {
    fn default() -> Self {
        let t = Thresholds::default();
        LiveThresholds {
            hash_max_listpack_entries: AtomicUsize::new(t.hash_max_listpack_entries),
            hash_max_listpack_value: AtomicUsize::new(t.hash_max_listpack_value),
            set_max_intset_entries: AtomicUsize::new(t.set_max_intset_entries),
            set_max_listpack_entries: AtomicUsize::new(t.set_max_listpack_entries),
            set_max_listpack_value: AtomicUsize::new(t.set_max_listpack_value),
            zset_max_listpack_entries: AtomicUsize::new(t.zset_max_listpack_entries),
            zset_max_listpack_value: AtomicUsize::new(t.zset_max_listpack_value),
            list_max_listpack_size: AtomicI64::new(t.list_max_listpack_size),
            hll_sparse_max_bytes: AtomicUsize::new(t.hll_sparse_max_bytes),
            stream_node_max_entries: AtomicUsize::new(t.stream_node_max_entries),
            stream_node_max_bytes: AtomicUsize::new(t.stream_node_max_bytes),
        }
    }
}

impl LiveThresholds {
    /// The current values.
    pub fn load(&self) -> Thresholds {
        let l = |a: &AtomicUsize| a.load(Ordering::Relaxed);
        Thresholds {
            hash_max_listpack_entries: l(&self.hash_max_listpack_entries),
            hash_max_listpack_value: l(&self.hash_max_listpack_value),
            set_max_intset_entries: l(&self.set_max_intset_entries),
            set_max_listpack_entries: l(&self.set_max_listpack_entries),
            set_max_listpack_value: l(&self.set_max_listpack_value),
            zset_max_listpack_entries: l(&self.zset_max_listpack_entries),
            zset_max_listpack_value: l(&self.zset_max_listpack_value),
            list_max_listpack_size: self.list_max_listpack_size.load(Ordering::Relaxed),
            hll_sparse_max_bytes: l(&self.hll_sparse_max_bytes),
            stream_node_max_entries: l(&self.stream_node_max_entries),
            stream_node_max_bytes: l(&self.stream_node_max_bytes),
        }
    }

    /// `hll-sparse-max-bytes` alone (PFADD, PFMERGE: one load).
    pub fn hll_sparse_max_bytes(&self) -> usize {
        self.hll_sparse_max_bytes.load(Ordering::Relaxed)
    }

    /// The parameters by their Redis names (and 7.0's legacy aliases),
    /// for CONFIG GET and CONFIG SET.
    pub const NAMES: [(&'static str, &'static str); 11] = [
        ("hash-max-listpack-entries", "hash-max-ziplist-entries"),
        ("hash-max-listpack-value", "hash-max-ziplist-value"),
        ("set-max-intset-entries", "set-max-intset-entries"),
        ("set-max-listpack-entries", "set-max-listpack-entries"),
        ("set-max-listpack-value", "set-max-listpack-value"),
        ("zset-max-listpack-entries", "zset-max-ziplist-entries"),
        ("zset-max-listpack-value", "zset-max-ziplist-value"),
        ("list-max-listpack-size", "list-max-ziplist-size"),
        ("hll-sparse-max-bytes", "hll-sparse-max-bytes"),
        ("stream-node-max-entries", "stream-node-max-entries"),
        ("stream-node-max-bytes", "stream-node-max-bytes"),
    ];

    /// The current value of the parameter `name` (either of its names).
    pub fn get(&self, name: &str) -> Option<i64> {
        let i = Self::index(name)?;
        Some(match i {
            7 => self.list_max_listpack_size.load(Ordering::Relaxed),
            _ => self.usize_at(i).load(Ordering::Relaxed) as i64,
        })
    }

    /// Sets the parameter `name` (either of its names); Err with Redis's
    /// reason when the value is out of its range.
    pub fn set(&self, name: &str, value: i64) -> Result<(), &'static str> {
        let i = Self::index(name).ok_or("Unknown option or number of arguments")?;
        if i == 7 {
            // Redis 7.0: an int config, INT_MIN..=INT_MAX (-1..-5 are the
            // byte-size classes; amalgam-types clamps the others).
            if !(i32::MIN as i64..=i32::MAX as i64).contains(&value) {
                return Err("argument must be between -2147483648 and 2147483647 inclusive");
            }
            self.list_max_listpack_size.store(value, Ordering::Relaxed);
            return Ok(());
        }
        if !(0..=i64::MAX).contains(&value) {
            return Err("argument must be between 0 and 9223372036854775807 inclusive");
        }
        self.usize_at(i).store(value as usize, Ordering::Relaxed);
        Ok(())
    }

    fn index(name: &str) -> Option<usize> {
        Self::NAMES.iter().position(|(n, alias)| name.eq_ignore_ascii_case(n) || name.eq_ignore_ascii_case(alias))
    }

    fn usize_at(&self, i: usize) -> &AtomicUsize {
        match i {
            0 => &self.hash_max_listpack_entries,
            1 => &self.hash_max_listpack_value,
            2 => &self.set_max_intset_entries,
            3 => &self.set_max_listpack_entries,
            4 => &self.set_max_listpack_value,
            5 => &self.zset_max_listpack_entries,
            6 => &self.zset_max_listpack_value,
            8 => &self.hll_sparse_max_bytes,
            9 => &self.stream_node_max_entries,
            _ => &self.stream_node_max_bytes,
        }
    }
}

/// A random word for the types' random picks (HRANDFIELD, SPOP, …):
/// a per-thread SplitMix64 stream seeded from the clock and the thread,
/// so workers share nothing. Not for secrets.
pub fn random() -> u64 {
    use std::cell::Cell;
    thread_local! {
        static STATE: Cell<u64> = Cell::new({
            let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
            let here = &t as *const u64 as u64;
            t ^ here.rotate_left(32)
        });
    }
    STATE.with(|s| {
        let x = s.get().wrapping_add(0x9E37_79B9_7F4A_7C15);
        s.set(x);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    })
}

/// COUNT of HSCAN, SSCAN and ZSCAN when none is given (Redis's default).
const SCAN_COUNT_DEFAULT: usize = 10;

/// The options of HSCAN, SSCAN and ZSCAN (`[MATCH pattern] [COUNT
/// count]` after the key and cursor), parsed as Redis's
/// `scanGenericCommand` does.
#[derive(Debug)]
pub(crate) struct ScanArgs<'a> {
    pub count: usize,
    pattern: Option<&'a [u8]>,
}

impl ScanArgs<'_> {
    /// True if `element` passes MATCH (always, without one).
    pub fn matches(&self, element: &[u8]) -> bool {
        self.pattern.is_none_or(|p| matches(p, element, false))
    }
}

/// A SCAN-family cursor as Redis 7.0.15's `parseScanCursorOrReply`
/// reads it: `strtoul(s, &end, 10)` over the argument as a C string,
/// rejected if it starts with a space, stops short of the string's end
/// or overflows. So an optional sign is accepted (`-1` wraps to 2^64-1,
/// as C's unsigned negation does), and so is the empty string (no
/// conversion: cursor 0). None: Redis's "invalid cursor".
pub(crate) fn parse_cursor(arg: &[u8]) -> Option<u64> {
    // The C string ends at the first NUL.
    let s = &arg[..arg.iter().position(|&b| b == 0).unwrap_or(arg.len())];
    let Some(&first) = s.first() else { return Some(0) };
    // isspace(): ' ', \t, \n, \v, \f, \r.
    if matches!(first, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r') {
        return None;
    }
    let (neg, digits) = match first {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    // No digit: strtoul converts nothing and `end` is the string's start,
    // not its end.
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: u64 = 0;
    // Bounded by the argument's length.
    for &d in digits {
        v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    Some(if neg { v.wrapping_neg() } else { v })
}

/// Parses HSCAN/SSCAN/ZSCAN's options (`args` after the cursor); Err
/// holds Redis's error text. Redis checks them only after the cursor
/// ([`parse_cursor`]) and the key: a missing key answers an empty scan
/// and a key of another kind WRONGTYPE whatever the options are, so a
/// command answers this Err only once it has found its collection.
pub(crate) fn scan_options<'a>(args: &'a [Arg<'_>]) -> Result<ScanArgs<'a>, &'static str> {
    let mut o = ScanArgs { count: SCAN_COUNT_DEFAULT, pattern: None };
    let mut j = 0;
    // Bounded: j advances by 2 each round.
    while j < args.len() {
        let more = args.len() - j - 1;
        if is(&args[j], "count") && more >= 1 {
            match int_arg(&args[j + 1]) {
                None => return Err(err::NOT_INTEGER),
                Some(n) if n < 1 => return Err(err::SYNTAX),
                Some(n) => o.count = usize::try_from(n).unwrap_or(usize::MAX),
            }
        } else if is(&args[j], "match") && more >= 1 {
            o.pattern = Some(&args[j + 1]);
        } else {
            return Err(err::SYNTAX);
        }
        j += 2;
    }
    Ok(o)
}

/// SSCAN, HSCAN and ZSCAN (`key cursor [MATCH pattern] [COUNT count]`):
/// Redis 7.0.15's order of checks — the cursor, then the key (absent: an
/// empty scan; another kind: WRONGTYPE), then the options — and its reply,
/// `[next cursor, elements]`. `scan` walks the collection it is given from
/// `cursor` for about `count` elements, keeping those that pass
/// [`ScanArgs::matches`], and returns the next cursor; `push` writes one
/// kept element as `width` bulk strings (a member; a field and its value).
pub(crate) fn scan_command<T>(
    ctx: &Ctx<'_>,
    args: &[Arg<'_>],
    kind: Kind,
    out: &mut Vec<u8>,
    scan: impl FnOnce(Found<'_>, u64, &ScanArgs<'_>, &mut Vec<T>) -> u64,
    width: usize,
    push: impl Fn(&mut Vec<u8>, &T),
) {
    let Some(cursor) = parse_cursor(&args[2]) else {
        return push_error(out, err::INVALID_CURSOR.as_bytes());
    };
    let opts = scan_options(&args[3..]);
    let r = read(ctx, &args[1], kind, |found| {
        let o = opts.as_ref().ok()?;
        let mut kept = Vec::new();
        let next = scan(found, cursor, o, &mut kept);
        Some((next, kept))
    });
    let Some(found) = or_reply(r, out, |out| {
        push_array(out, 2);
        push_bulk(out, b"0");
        push_array(out, 0);
    }) else {
        return;
    };
    let Some((next, kept)) = found else {
        if let Err(e) = opts {
            push_error(out, e.as_bytes());
        }
        return;
    };
    push_array(out, 2);
    push_bulk(out, next.to_string().as_bytes());
    push_array(out, kept.len() * width);
    for element in &kept {
        push(out, element);
    }
}

/// Redis 7.0's error for a random-pick count of `i64::MIN`.
const COUNT_RANGE: &str = "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807";
/// Redis's out-of-range error (a doubled count past `i64`).
pub(crate) const OUT_OF_RANGE: &str = "ERR value is out of range";

/// The `count [WITH…]` arguments of HRANDFIELD and ZRANDMEMBER (`key
/// count [with]`), checked in Redis 7.0.15's order: the count
/// (`getRangeLongFromObject` over -LONG_MAX..=LONG_MAX), the syntax, then
/// the halved range when values come along. Err holds Redis's text.
pub(crate) fn random_count_args(args: &[Arg<'_>], with: &str) -> Result<(i64, bool), &'static str> {
    let count = int_arg(&args[2]).ok_or(err::NOT_INTEGER)?;
    if count == i64::MIN {
        return Err(COUNT_RANGE);
    }
    let with_values = match args.len() {
        3 => false,
        4 if is(&args[3], with) => true,
        _ => return Err(err::SYNTAX),
    };
    if with_values && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&count) {
        return Err(OUT_OF_RANGE);
    }
    Ok((count, with_values))
}

#[cfg(test)]
mod tests {
    use super::parse_cursor;

    #[test]
    fn cursor_is_strtoul() {
        for (arg, want) in [
            (&b"0"[..], Some(0)),
            (b"123", Some(123)),
            (b"", Some(0)),
            (b"+7", Some(7)),
            (b"-1", Some(u64::MAX)),
            (b"-18446744073709551615", Some(1)),
            (b"18446744073709551615", Some(u64::MAX)),
            (b"007", Some(7)),
            (b"5\0junk", Some(5)),
            (b"18446744073709551616", None),
            (b" 1", None),
            (b"\t1", None),
            (b"1 ", None),
            (b"-", None),
            (b"+", None),
            (b"--1", None),
            (b"0x10", None),
            (b"1.5", None),
        ] {
            assert_eq!(parse_cursor(arg), want, "{:?}", arg.escape_ascii().to_string());
        }
    }
}
