//! RANDOMKEY and COPY: keyspace commands over keys of every type.
//!
//! ## RANDOMKEY
//! The engine's `Store::random_item` (engine scan.rs, "A random key"),
//! sampling as Redis's `dictGetFairRandomKey` does: up to 15 live items
//! from random buckets, one of them picked uniformly (measured: each key
//! drawn within noise of its fair share). Never the whole keyspace,
//! except in a table left sparse by deletions or full of expired items
//! (the table never shrinks), where a walk may reach every bucket once. Expired items
//! are skipped, as Redis 7 skips (and deletes) them; an empty keyspace
//! answers nil. It does not count as a use of the key.
//!
//! ## COPY source destination [DB n] [REPLACE]
//! Redis 7's `copyCommand`: the options first (DB as SELECT reads it:
//! Amalgam has database 0 only, so any other index answers Redis's `DB
//! index is out of range`, as SELECT does), then the same-key error, then
//! 0 for a missing source or an existing destination without REPLACE, 1
//! for a copy. The copy is deep: a string or a compact collection is its
//! bytes with its value tag; a large collection is encoded under its
//! object's read lock and decoded again into a new object (its snapshot
//! encoding), so the two keys share nothing. The destination takes the
//! source's expiry, as Redis copies the TTL, and its memcached flags. A
//! list or sorted set copied to a key a client is blocked on (BLPOP,
//! BZPOPMIN …) serves that client, as Redis's `dbAdd` signals the key.
//!
//! Both keys are held for the whole command (`resp/multi.rs` runs every
//! command naming two keys inside `Store::atomically`), so the read of the
//! source and the write of the destination are one step for every other
//! client.

use super::strings::engine_error;
use super::typed::{self, publish, Refused};
use super::{is, null, Arg, Ctx};
use amalgam_engine::{namespace, Expiry, NewValue, Update, TAG_OBJECT};
use amalgam_protocol::resp::{err, push_bulk, push_error, push_int};
use amalgam_types::value::{kind_of_tag, Value};
use amalgam_types::Kind;

use super::table::Cmd;

use crate::db::SAME_OBJECT;

pub fn run(ctx: &mut Ctx<'_>, cmd: Cmd, args: &[Arg<'_>], out: &mut Vec<u8>) {
    match cmd {
        Cmd::Randomkey => {
            let ns = ctx.ns;
            let in_db = |k: &[u8]| namespace::split(k).0 == ns;
            let found = if ctx.ks.store.namespace_len(ns) == 0 {
                None
            } else {
                ctx.ks
                    .store
                    .random_item_where(typed::random(), in_db, |it| push_bulk(out, namespace::split(it.key()).1))
            };
            if found.is_none() {
                null(ctx, out);
            }
        }
        Cmd::Move => crate::db::move_key(ctx, args, out),
        Cmd::Swapdb => crate::db::swapdb(ctx, args, out),
        _ => copy(ctx, args, out),
    }
}

/// What COPY read from the source.
enum Body {
    /// A string's or a compact collection's bytes, and the value tag.
    Bytes(u8, Vec<u8>),
    /// A large collection: its kind and snapshot encoding.
    Object(Kind, Vec<u8>),
}

fn copy(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let mut replace = false;
    let mut target: Option<u8> = None;
    let mut j = 3;
    // Bounded: j advances at least once a round.
    while j < args.len() {
        let more = args.len() - j - 1;
        if is(&args[j], "replace") {
            replace = true;
        } else if is(&args[j], "db") && more >= 1 {
            // Redis's getIntFromObjectOrReply, then selectDb.
            match ctx.ks.databases.parse(&args[j + 1]) {
                Ok(db) => target = Some(ctx.ks.databases.namespace(db)),
                Err(e) => return push_error(out, e.as_bytes()),
            }
            j += 1;
        } else {
            return push_error(out, err::SYNTAX.as_bytes());
        }
        j += 1;
    }
    // The destination in another database (its name re-encoded for that
    // namespace): not among the keys the front end holds, so the read of
    // the source and the write of the destination are two steps there.
    let dst: std::borrow::Cow<'_, [u8]> = match target {
        Some(ns) if ns != ctx.ns => namespace::encode(ns, namespace::split(&args[2]).1).into(),
        _ => std::borrow::Cow::Borrowed(&args[2][..]),
    };
    if args[1][..] == dst[..] {
        return push_error(out, SAME_OBJECT.as_bytes());
    }
    let store = &ctx.ks.store;
    let read = store.get(&args[1], |it| {
        let body = if it.tag() == TAG_OBJECT {
            let cell = it.object()?;
            let guard = cell.read();
            let v = guard.as_any().downcast_ref::<Value>()?;
            let mut bytes = Vec::new();
            v.encode(&mut bytes);
            Body::Object(v.kind(), bytes)
        } else {
            Body::Bytes(it.tag(), it.value().to_vec())
        };
        Some((body, it.flags(), it.expiry()))
    });
    let Some((body, flags, expiry)) = read.flatten() else { return push_int(out, 0) };
    let kind = match &body {
        Body::Bytes(tag, _) => kind_of_tag(*tag),
        Body::Object(kind, _) => Some(*kind),
    };
    let collection = kind.is_some();
    if collection {
        // As every collection write (typed.rs): refused past the
        // store-mode budget. (Persisted: the copy is a new value, journaled
        // whole as a typed Put.)
        if store.objects_over_budget() {
            return Refused::OutOfMemory.reply(out);
        }
    }
    let t = ctx.ks.thresholds.load();
    let item_max = ctx.ks.item_size_max;
    // The closure may run twice (typed.rs, module notes): a large value is
    // decoded again for a second run.
    // Whether the copy replaced a key (Redis deletes it, then adds: `new`).
    let mut replaced = false;
    let r = store.update(&dst, |old| {
        replaced = old.is_some();
        if old.is_some() && !replace {
            return (Update::Keep, false);
        }
        let put = match &body {
            Body::Bytes(tag, bytes) => {
                Update::Put { value: NewValue::Bytes(bytes), flags, expiry, fresh_cas: true, marks: *tag }
            }
            Body::Object(kind, bytes) => match Value::decode(*kind, bytes, &t) {
                Ok(v) => with_expiry(publish(v, None, item_max), flags, expiry),
                // Encoded by this build a moment ago: cannot fail; keep
                // the destination rather than guess.
                Err(_) => return (Update::Keep, false),
            },
        };
        (put, true)
    });
    match r {
        Ok((copied, _)) => {
            if copied && matches!(kind, Some(Kind::List | Kind::ZSet | Kind::Stream)) {
                // A client blocked on the destination (BLPOP, BZPOPMIN …)
                // is served, as Redis's dbAdd signals the key ready.
                ctx.ks.host.signal(&dst);
            }
            if copied {
                if replaced {
                    ctx.notify(crate::notify::NEW, "new", &dst);
                }
                ctx.notify(crate::notify::GENERIC, "copy_to", &dst);
            }
            push_int(out, i64::from(copied))
        }
        Err(e) => engine_error(e, out),
    }
}

/// `put` (a new collection value) with the source's flags and expiry.
fn with_expiry(put: Update<'static>, flags: u32, expiry: Expiry) -> Update<'static> {
    match put {
        Update::Put { value, fresh_cas, marks, .. } => Update::Put { value, flags, expiry, fresh_cas, marks },
        other => other,
    }
}
