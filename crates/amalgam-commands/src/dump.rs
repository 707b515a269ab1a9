//! DUMP and RESTORE: a key's value in Redis's serialization, so the
//! migration tools that move keys out of Redis with them (redis-shake's
//! scan mode, RIOT, MIGRATE's payloads) move them into Amalgam, and back.
//!
//! The payload's format is amalgam-persist's `rdb.rs` (pure bytes ↔
//! `Payload`: which of Redis 7.0's encodings it reads and writes, and how
//! it refuses a hostile payload); this file adapts it to the keyspace.
//!
//! ## DUMP key
//! The value read as GET or COPY reads it (a compact collection from the
//! item's bytes, a large one under its object's read lock) and written
//! in the plainest forms Redis 7.0 loads: a raw string, `LIST`, `SET`,
//! `HASH`, `ZSET_2`, RDB version 10 (Redis 7.0's), CRC-64. A missing
//! key answers nil. The TTL is not in the payload (it never is).
//!
//! ## RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f]
//! Redis 7.0.15's `restoreCommand`, step for step, replies and errors
//! included: the options (IDLETIME and FREQ exclude each other: the
//! second is a syntax error), then BUSYKEY for an existing key without
//! REPLACE, then the TTL (an integer, not negative), then the payload's
//! version and CRC, then its decoding (`ERR Bad data format`). A TTL of
//! 0 is none; otherwise milliseconds from now, or a unix time in
//! milliseconds with ABSTTL. A deadline already past creates nothing and
//! answers OK (with REPLACE the old key is deleted), as Redis does; a
//! relative TTL that overflows wraps as Redis's `ttl += mstime()` does,
//! into the past.
//!
//! The new value is built through the same types calls SADD, RPUSH,
//! HSET and ZADD make (so it takes the compact or large form their
//! thresholds choose) and published as COPY publishes its copy, in one
//! `Store::update` that checks the key again under its bucket lock: a
//! key created meanwhile still answers BUSYKEY. A list or sorted set
//! restored to a key a client is blocked on serves that client.
//!
//! IDLETIME and FREQ are parsed and checked as Redis checks them, then
//! ignored: Amalgam keeps no per-key LRU clock or LFU counter to set
//! (its eviction is CLOCK with a recency bit, engine `evict/`).

use super::strings::engine_error;
use super::table::Cmd;
use super::typed::{publish, Refused};
use super::{int_arg, is, now_ms, null, Arg, Ctx};
use amalgam_engine::{Expiry, NewValue, Update, TAG_BYTES, TAG_OBJECT};
use amalgam_persist::rdb::{self, DumpError, Payload, Writer};
use amalgam_protocol::resp::{err, push_bulk, push_error, push_simple};
use amalgam_types::hash::Hash;
use amalgam_types::list::List;
use amalgam_types::set::Set;
use amalgam_types::value::{kind_of_tag, tag_of, Value};
use amalgam_types::zset::{AddFlags, ZSet};
use amalgam_types::{Kind, Thresholds};

/// Redis's `shared.busykeyerr`.
const BUSYKEY: &str = "BUSYKEY Target key name already exists.";
const BAD_TTL: &str = "ERR Invalid TTL value, must be >= 0";
const BAD_IDLETIME: &str = "ERR Invalid IDLETIME value, must be >= 0";
const BAD_FREQ: &str = "ERR Invalid FREQ value, must be >= 0 and <= 255";
const BAD_PAYLOAD: &str = "ERR DUMP payload version or checksum are wrong";
const BAD_FORMAT: &str = "ERR Bad data format";
/// FREQ's range: an LFU counter is one byte.
const FREQ_MAX: i64 = 255;

pub fn run(ctx: &mut Ctx<'_>, cmd: Cmd, args: &[Arg<'_>], out: &mut Vec<u8>) {
    match cmd {
        Cmd::Dump => dump(ctx, &args[1], out),
        _ => restore(ctx, args, out),
    }
}

fn dump(ctx: &Ctx<'_>, key: &[u8], out: &mut Vec<u8>) {
    match payload(ctx, key) {
        Some((p, _)) => push_bulk(out, &p),
        None => null(ctx, out),
    }
}

/// The key's DUMP payload and its deadline, if it exists (DUMP, and
/// MIGRATE in the server, which sends it to RESTORE elsewhere).
pub fn payload(ctx: &Ctx<'_>, key: &[u8]) -> Option<(Vec<u8>, Expiry)> {
    payload_in(ctx.ks.store, &ctx.ks.thresholds.load(), key)
}

/// [`payload`] from a store (an RDB file written by SAVE: the server's
/// `rdbfile.rs`).
pub fn payload_in(store: &amalgam_engine::Store, t: &Thresholds, key: &[u8]) -> Option<(Vec<u8>, Expiry)> {
    store.get(key, |it| payload_of(&it, t).map(|p| (p, it.expiry()))).flatten()
}

/// An item's DUMP payload (None for a value DUMP cannot carry); callable
/// under the item's bucket lock, as a snapshot sink is (it takes the
/// object's read lock, as the native snapshot's encoding does).
pub fn payload_of(it: &amalgam_engine::ItemRef<'_>, t: &Thresholds) -> Option<Vec<u8>> {
    match it.tag() {
        TAG_BYTES => Some(Writer::string(it.value())),
        TAG_OBJECT => {
            let cell = it.object()?;
            let guard = cell.read();
            guard.as_any().downcast_ref::<Value>().and_then(serialize)
        }
        tag => kind_of_tag(tag).and_then(|kind| serialize(&Value::from_packed_trusted(kind, it.value(), t))),
    }
}

/// A collection's DUMP payload (a stream in Redis 7.0's
/// `RDB_TYPE_STREAM_LISTPACKS_2`, amalgam-persist `rdb/stream.rs`).
fn serialize(v: &Value) -> Option<Vec<u8>> {
    Some(match v {
        Value::List(l) => {
            let mut w = Writer::list(l.len());
            // Bounded by the list's length.
            for e in l.iter() {
                w.element(e);
            }
            w.finish()
        }
        Value::Set(s) => {
            let mut w = Writer::set(s.len());
            for m in s.iter() {
                m.with_bytes(|b| w.element(b));
            }
            w.finish()
        }
        Value::Hash(h) => {
            let mut w = Writer::hash(h.len());
            for (f, val) in h.iter() {
                w.element(f);
                w.element(val);
            }
            w.finish()
        }
        Value::ZSet(z) => {
            let mut w = Writer::zset(z.len());
            for (m, score) in z.iter() {
                w.scored(m, score);
            }
            w.finish()
        }
        Value::Stream(s) => rdb::stream::dump(s),
    })
}

/// RESTORE's options.
#[derive(Default)]
struct Options {
    replace: bool,
    absttl: bool,
    idletime: Option<i64>,
    freq: Option<i64>,
}

/// Redis's option loop; the error reply if one is refused.
fn options(args: &[Arg<'_>]) -> Result<Options, &'static str> {
    let mut o = Options::default();
    let mut j = 4;
    // Bounded: j advances at least once a round.
    while j < args.len() {
        let more = args.len() - j - 1;
        if is(&args[j], "replace") {
            o.replace = true;
        } else if is(&args[j], "absttl") {
            o.absttl = true;
        } else if is(&args[j], "idletime") && more >= 1 && o.freq.is_none() {
            let n = int_arg(&args[j + 1]).ok_or(err::NOT_INTEGER)?;
            if n < 0 {
                return Err(BAD_IDLETIME);
            }
            o.idletime = Some(n);
            j += 1;
        } else if is(&args[j], "freq") && more >= 1 && o.idletime.is_none() {
            let n = int_arg(&args[j + 1]).ok_or(err::NOT_INTEGER)?;
            if !(0..=FREQ_MAX).contains(&n) {
                return Err(BAD_FREQ);
            }
            o.freq = Some(n);
            j += 1;
        } else {
            return Err(err::SYNTAX);
        }
        j += 1;
    }
    Ok(o)
}

/// What the update did.
enum Restored {
    Busy,
    Created,
    /// The deadline had passed: nothing created.
    Expired,
    /// The deadline had passed and REPLACE removed the old key.
    Deleted,
}

fn restore(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let o = match options(args) {
        Ok(o) => o,
        Err(e) => return push_error(out, e.as_bytes()),
    };
    let key: &[u8] = &args[1];
    let store = &ctx.ks.store;
    // Redis checks the key before the TTL and the payload; the update
    // below checks it again under the bucket lock.
    if !o.replace && store.get(key, |_| ()).is_some() {
        return push_error(out, BUSYKEY.as_bytes());
    }
    let Some(ttl) = int_arg(&args[2]) else { return push_error(out, err::NOT_INTEGER.as_bytes()) };
    if ttl < 0 {
        return push_error(out, BAD_TTL.as_bytes());
    }
    // What the payload decodes to is held to proto-max-bulk-len, the
    // largest argument a client may send (a compressed payload expands).
    let budget = ctx.limits.bulk_bytes_max;
    let payload = match rdb::decode_within(&args[3], budget) {
        Ok(p) => p,
        Err(DumpError::VersionOrChecksum) => return push_error(out, BAD_PAYLOAD.as_bytes()),
        Err(DumpError::BadFormat) => return push_error(out, BAD_FORMAT.as_bytes()),
        Err(DumpError::TooLarge) => {
            return push_error(
                out,
                format!("ERR DUMP payload decodes to more than proto-max-bulk-len ({budget} bytes)").as_bytes(),
            )
        }
    };
    // Redis's `if (ttl && !absttl) ttl += mstime()`, wrapping as C's
    // signed addition does in practice; then `checkAlreadyExpired`.
    let now = now_ms();
    let at_ms = match (ttl, o.absttl) {
        (0, _) => None,
        (t, true) => Some(t),
        (t, false) => Some(t.wrapping_add(now)),
    };
    let expired = at_ms.is_some_and(|at| at <= now);
    let expiry = match at_ms {
        Some(at) if !expired => super::strings::deadline(at),
        _ => Expiry::Never,
    };
    let kind = kind_of(&payload);
    if kind.is_some() && !expired && store.objects_over_budget() {
        // As every collection write (typed.rs): refused past the
        // store-mode budget.
        return Refused::OutOfMemory.reply(out);
    }
    let t = ctx.ks.thresholds.load();
    let item_max = ctx.ks.item_size_max;
    // The closure may run twice (typed.rs, module notes): the value
    // built for the first run is rebuilt for a second.
    let mut ready = if expired { None } else { build(&payload, &t) };
    // Whether it replaced a key (Redis deletes it, then adds: `new`).
    let mut replaced = false;
    let r = store.update(key, |old| {
        replaced = old.is_some();
        if old.is_some() && !o.replace {
            return (Update::Keep, Restored::Busy);
        }
        if expired {
            if old.is_some() {
                return (Update::Remove, Restored::Deleted);
            }
            return (Update::Keep, Restored::Expired);
        }
        let put = match &payload {
            Payload::String(s) => {
                Update::Put { value: NewValue::Bytes(s), flags: 0, expiry, fresh_cas: true, marks: TAG_BYTES }
            }
            _ => {
                let Some(v) = ready.take().or_else(|| build(&payload, &t)) else {
                    return (Update::Keep, Restored::Expired);
                };
                with_expiry(publish(v, None, item_max), expiry)
            }
        };
        (put, Restored::Created)
    });
    match r {
        Ok((Restored::Busy, _)) => push_error(out, BUSYKEY.as_bytes()),
        Ok((done, _)) => {
            if matches!(done, Restored::Created) && matches!(kind, Some(Kind::List | Kind::ZSet | Kind::Stream)) {
                // A client blocked on the key (BLPOP, BZPOPMIN …) is
                // served, as Redis's dbAdd signals the key ready.
                ctx.ks.host.signal(key);
            }
            match done {
                Restored::Created => {
                    if replaced {
                        ctx.notify(crate::notify::NEW, "new", key);
                    }
                    ctx.notify(crate::notify::GENERIC, "restore", key)
                }
                // REPLACE with a time already past deletes the key.
                Restored::Deleted => ctx.notify(crate::notify::GENERIC, "del", key),
                _ => {}
            }
            push_simple(out, "OK")
        }
        Err(e) => engine_error(e, out),
    }
}

/// Why [`load`] did not store a key.
#[derive(Debug, PartialEq, Eq)]
pub enum LoadError {
    /// The store is full (store mode: `-m` is smaller than the data).
    OutOfMemory,
    /// Any other engine refusal (a key or value past the item bounds).
    Refused(String),
}

/// Puts a decoded value under its stored key with its absolute expiry
/// (Unix ms), replacing any key there, as RESTORE … REPLACE ABSTTL
/// builds and publishes it (an RDB file loaded at start: the server's
/// `rdbfile.rs`). A deadline already past stores nothing (Redis's
/// loader skips such keys on a primary); answers whether it stored.
pub fn load(
    store: &amalgam_engine::Store,
    t: &Thresholds,
    item_max: usize,
    key: &[u8],
    payload: &Payload,
    at_ms: Option<i64>,
) -> Result<bool, LoadError> {
    if at_ms.is_some_and(|at| at <= now_ms()) {
        return Ok(false);
    }
    let expiry = at_ms.map_or(Expiry::Never, super::strings::deadline);
    if kind_of(payload).is_some() && store.objects_over_budget() {
        return Err(LoadError::OutOfMemory);
    }
    let mut ready = build(payload, t);
    let r = store.update(key, |_| {
        let put = match payload {
            Payload::String(s) => {
                Update::Put { value: NewValue::Bytes(s), flags: 0, expiry, fresh_cas: true, marks: TAG_BYTES }
            }
            _ => {
                let Some(v) = ready.take().or_else(|| build(payload, t)) else {
                    return (Update::Keep, ());
                };
                with_expiry(publish(v, None, item_max), expiry)
            }
        };
        (put, ())
    });
    match r {
        Ok(_) => Ok(true),
        Err(amalgam_engine::Error::OutOfMemory) => Err(LoadError::OutOfMemory),
        Err(e) => Err(LoadError::Refused(format!("{e:?}"))),
    }
}

fn kind_of(p: &Payload) -> Option<Kind> {
    match p {
        Payload::String(_) => None,
        Payload::List(_) => Some(Kind::List),
        Payload::Set(_) => Some(Kind::Set),
        Payload::Hash(_) => Some(Kind::Hash),
        Payload::ZSet(_) => Some(Kind::ZSet),
        Payload::Stream(_) => Some(Kind::Stream),
    }
}

/// The collection a payload holds, built by the calls RPUSH, SADD, HSET
/// and ZADD make (forms chosen by the thresholds); None for a string.
/// Bounded by the payload's elements.
fn build(p: &Payload, t: &Thresholds) -> Option<Value> {
    let v = match p {
        Payload::String(_) => return None,
        Payload::List(v) => {
            let mut l = List::new(t);
            for e in v {
                l.push_back(e);
            }
            Value::List(l)
        }
        Payload::Set(v) => {
            let mut s = Set::new();
            for m in v {
                s.insert(m, t);
            }
            Value::Set(s)
        }
        Payload::Hash(v) => {
            let mut h = Hash::new();
            for (f, val) in v {
                h.insert(f, val, t);
            }
            Value::Hash(h)
        }
        Payload::ZSet(v) => {
            let mut z = ZSet::new(t);
            for (m, score) in v {
                // Cannot fail: not an increment, and the codec refused NaN.
                let _ = z.add(m, *score, AddFlags::default());
            }
            Value::ZSet(z)
        }
        Payload::Stream(s) => Value::Stream(s.clone()),
    };
    debug_assert_eq!(Some(tag_of(v.kind())), kind_of(p).map(tag_of));
    Some(v)
}

/// `put` (a new collection value) with the restored expiry.
fn with_expiry(put: Update<'static>, expiry: Expiry) -> Update<'static> {
    match put {
        Update::Put { value, flags, fresh_cas, marks, .. } => Update::Put { value, flags, expiry, fresh_cas, marks },
        other => other,
    }
}
