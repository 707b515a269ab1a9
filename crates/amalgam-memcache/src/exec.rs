//! Executes parsed text-protocol requests on the engine and composes the
//! replies: the one small adapter between protocol and storage (Pelikan's
//! shape). Runs of GETs — the keys of a multi-get and of pipelined gets —
//! go through the engine's batched lookup (MICA §5.3).

use crate::operator::DetailOp;
use crate::Ctx;
use amalgam_commands::counters::bump;
use amalgam_commands::notify;
use amalgam_engine::{Error, Expiry, Store, TAG_BYTES};
use amalgam_protocol::compose::{push_line, push_u64, push_value};
use amalgam_protocol::text::{reply, Keys, Request, StoreOp};

/// What the connection does after a request.
#[derive(Debug, PartialEq, Eq)]
pub enum After {
    Continue,
    Close,
    /// `lru_crawler metadump`: stream the dump (admin.rs) before parsing
    /// further requests.
    MetaDump,
    /// `watch` of these classes (watch.rs): the connection becomes a
    /// watcher if the event loop placed it (`Conn::place`).
    Watch(u32),
}

/// The server's version line. memcached clients parse the leading
/// `major.minor.patch`; the suffix names what they talk to.
pub const VERSION_LINE: &str = concat!("VERSION 1.6.0-amalgam-", env!("CARGO_PKG_VERSION"));

/// Executes a run of plain get/gets requests as one engine batch,
/// appending each request's VALUE lines and END in order. Every request
/// has at least one key (the parser answers `ERROR` otherwise).
pub fn run_gets(ctx: &Ctx<'_>, gets: &[(Keys<'_>, bool)], out: &mut Vec<u8>) {
    let store = ctx.w.store;
    let mut keys: Vec<&[u8]> = Vec::new();
    let mut owner: Vec<usize> = Vec::new();
    for (r, (k, _)) in gets.iter().enumerate() {
        for key in k.iter() {
            keys.push(key);
            owner.push(r);
        }
    }
    let mut escaped = Vec::new();
    let any_escaped = crate::stored_all(&mut keys, &mut escaped);
    let mut ended = 0;
    let mut hits = 0u64;
    // A multi-get of many large values (`get k k k …`, a 1 MiB line of
    // one key repeated) could otherwise build gigabytes: past the hard
    // output limit (memcached's connections are all of the `normal`
    // class) the reply stops, unfinished; the worker's check after the
    // round closes the client before any of it is sent (`obuf.rs`).
    let stop = ctx.stop.hard;
    // `stats detail on` (operator.rs): one load per batch and a branch
    // per key while off.
    let detail = ctx.w.detail_on();
    // `watch fetchers` (watch.rs): one more load per batch; both share
    // the branch per key.
    let watch = ctx.w.watched(crate::watch::class::FETCHERS);
    store.get_batch(&keys, |i, item| {
        if detail || watch {
            let key = if any_escaped { crate::name(keys[i]) } else { keys[i] };
            let found = item.filter(|it| it.tag() == TAG_BYTES);
            if detail {
                ctx.w.record_detail(DetailOp::Get(found.is_some()), key);
            }
            if watch {
                ctx.w.watch_get(ctx.cfd, key, found.map(|it| it.value().len()));
            }
        }
        if out.len() >= stop {
            return;
        }
        let r = owner[i];
        while ended < r {
            out.extend_from_slice(b"END\r\n");
            ended += 1;
        }
        // A collection (a RESP hash, list, set or sorted set: engine
        // object.rs) is not a memcached item: absent here.
        if let Some(it) = item.filter(|it| it.tag() == TAG_BYTES) {
            hits += 1;
            let key = if any_escaped { crate::name(it.key()) } else { it.key() };
            push_value(out, key, it.flags(), it.value(), gets[r].1.then(|| ctx.visible_cas(it.cas())));
        }
    });
    while ended < gets.len() && out.len() < stop {
        out.extend_from_slice(b"END\r\n");
        ended += 1;
    }
    let n = keys.len() as u64;
    bump(&ctx.w.counters.cmd_get, n);
    bump(&ctx.w.counters.get_hits, hits);
    bump(&ctx.w.counters.get_misses, n - hits);
}

/// Storage commands of a run prefetched at once: the engine's batch
/// window.
const PREFETCH_STORES_MAX: usize = amalgam_engine::BATCH_WINDOW_KEYS;

/// Executes a run of pipelined storage commands (set, add, replace,
/// append, prepend, cas) in order, after prefetching the index lines
/// their writes will touch (`Store::prefetch_writes`, MICA §5.3 on the
/// write path), and empties the run. None of them closes the connection.
/// Once the output reaches the hard limit the rest of the run does not
/// run (`obuf::RoundStop`: the client is closed after the round).
pub fn run_stores(ctx: &Ctx<'_>, stores: &mut Vec<Request<'_>>, out: &mut Vec<u8>) {
    let stop = ctx.stop;
    let mut keys = [&[][..]; PREFETCH_STORES_MAX];
    for chunk in stores.chunks(PREFETCH_STORES_MAX) {
        if stores.len() > 1 {
            for (k, req) in keys.iter_mut().zip(chunk) {
                if let Request::Store { key, .. } = req {
                    *k = key;
                }
            }
            ctx.w.store.prefetch_writes(&keys[..chunk.len()]);
        }
        for &req in chunk {
            if stop.crossed(out.len()) {
                break;
            }
            let after = run_one(ctx, req, out);
            debug_assert!(after == After::Continue, "a storage command does not close the connection");
        }
    }
    stores.clear();
}

/// Counts and answers a storage command's result (memcached's replies).
fn store_reply(ctx: &Ctx<'_>, op: StoreOp, key: &[u8], r: Result<u64, Error>, noreply: bool, out: &mut Vec<u8>) {
    let store = ctx.w.store;
    if op == StoreOp::Cas {
        match r {
            Ok(_) => bump(&ctx.w.counters.cas_hits, 1),
            Err(Error::NotFound) => bump(&ctx.w.counters.cas_misses, 1),
            Err(Error::Exists) => bump(&ctx.w.counters.cas_badval, 1),
            Err(_) => {}
        }
    }
    let line = match r {
        Ok(_) => {
            bump(&ctx.w.counters.total_items, 1);
            "STORED"
        }
        Err(Error::NotStored) => "NOT_STORED",
        Err(Error::Exists) => "EXISTS",
        Err(Error::NotFound) => "NOT_FOUND",
        // A too-large append/prepend result is refused as memcached
        // refuses it: its allocation fails inside the store step.
        Err(Error::TooLarge) if matches!(op, StoreOp::Append | StoreOp::Prepend) => "NOT_STORED",
        Err(e @ (Error::TooLarge | Error::OutOfMemory)) => {
            let c = &ctx.w.counters;
            bump(if e == Error::TooLarge { &c.store_too_large } else { &c.store_no_memory }, 1);
            // memcached drops the old value of a SET it could not
            // store, so no stale data outlives a failed update.
            if op == StoreOp::Set {
                let _ = store.delete(key);
            }
            if e == Error::TooLarge {
                reply::TOO_LARGE
            } else {
                reply::OUT_OF_MEMORY
            }
        }
        Err(Error::BadKey) => reply::BAD_FORMAT,
        Err(Error::NonNumeric) => reply::NON_NUMERIC,
    };
    if !noreply {
        push_line(out, line);
    }
}

/// memcached's name of a storage command (a `watch` line's `cmd`).
fn store_cmd(op: StoreOp) -> &'static str {
    match op {
        StoreOp::Set => "set",
        StoreOp::Add => "add",
        StoreOp::Replace => "replace",
        StoreOp::Append => "append",
        StoreOp::Prepend => "prepend",
        StoreOp::Cas => "cas",
    }
}

/// A storage command (set, add, replace, cas) whose data block was
/// received straight into its item (`inplace.rs`): decided as
/// [`run_one`] decides it, under the key's bucket lock, and the block is
/// published as it is. `req`'s data is empty (the request was rewritten).
pub fn run_prepared(ctx: &Ctx<'_>, req: Request<'_>, value: amalgam_commands::received::Receiving, out: &mut Vec<u8>) {
    let Request::Store { op, key, flags, exptime, cas_unique, noreply, .. } = req else { return };
    if ctx.w.routed {
        if let Err(refusal) = crate::route::text(ctx, &req) {
            if let Some(line) = refusal {
                push_line(out, &line);
            }
            return;
        }
    }
    if ctx.read_only() {
        if !noreply {
            push_line(out, READONLY_REPLY);
        }
        return;
    }
    bump(&ctx.w.counters.cmd_set, 1);
    if ctx.w.detail_on() {
        ctx.w.record_detail(DetailOp::Set, key);
    }
    let store = ctx.w.store;
    let e = expiry(store, exptime);
    let wanted = ctx.visible_cas(cas_unique);
    let mut refusal = Error::NotStored;
    let r = value.publish(|value| {
        store.put_prepared(value, |old| {
            let ok = match (op, old) {
                (StoreOp::Add, Some(_)) | (StoreOp::Replace, None) => false,
                (StoreOp::Cas, None) => {
                    refusal = Error::NotFound;
                    false
                }
                (StoreOp::Cas, Some(it)) if it.cas() != wanted => {
                    refusal = Error::Exists;
                    false
                }
                _ => true,
            };
            ok.then_some((flags, e))
        })
    });
    let r = match r {
        Ok(Some(cas)) => Ok(cas),
        Ok(None) => Err(refusal),
        Err(e) => Err(e),
    };
    store_reply(ctx, op, key, r, noreply, out);
}

/// memcached's `realtime()` for a relative-or-absolute exptime.
fn expiry(store: &Store, exptime: i64) -> Expiry {
    Expiry::from_memcached(exptime, store.now())
}

/// A write on a read-only replica, on memcached's port.
pub const READONLY_REPLY: &str = "SERVER_ERROR READONLY You can't write against a read only replica.";

/// Executes one request that is not a plain get.
pub fn run_one(ctx: &Ctx<'_>, req: Request<'_>, out: &mut Vec<u8>) -> After {
    let store = ctx.w.store;
    if ctx.read_only() {
        // A read-only replica (crate::repl): memcached has no replicas, so
        // the refusal is Redis's text in memcached's SERVER_ERROR form.
        let noreply = match req {
            Request::Store { noreply, .. }
            | Request::Delete { noreply, .. }
            | Request::Arith { noreply, .. }
            | Request::Touch { noreply, .. }
            | Request::FlushAll { noreply, .. } => Some(noreply),
            Request::Get { touch: Some(_), .. } => Some(false),
            _ => None,
        };
        if let Some(noreply) = noreply {
            if !noreply {
                push_line(out, READONLY_REPLY);
            }
            return After::Continue;
        }
    }
    let mut reply_line = |line: &str, noreply: bool| {
        if !noreply {
            push_line(out, line);
        }
    };
    // Each key in its stored form (database 0: lib.rs).
    let mut scratch = Vec::new();
    match req {
        Request::Get { keys, cas, touch: Some(exptime) } => {
            let e = expiry(store, exptime);
            // memcached counts gat/gats keys as touches only, not as gets.
            for key in keys.iter() {
                bump(&ctx.w.counters.cmd_touch, 1);
                let detail = ctx.w.detail_on();
                let hit = store.touch_and_get(crate::stored(key, &mut scratch), e, |it| {
                    push_value(out, key, it.flags(), it.value(), cas.then(|| ctx.visible_cas(it.cas())))
                });
                if detail {
                    ctx.w.record_detail(DetailOp::Get(matches!(hit, Some(Ok(())))), key);
                }
                match hit {
                    Some(Ok(())) => {
                        ctx.w.notify(notify::GENERIC, "expire", crate::stored(key, &mut scratch));
                        bump(&ctx.w.counters.touch_hits, 1)
                    }
                    _ => bump(&ctx.w.counters.touch_misses, 1),
                }
            }
            out.extend_from_slice(b"END\r\n");
        }
        Request::Get { keys, cas, touch: None } => {
            run_gets(ctx, &[(keys, cas)], out);
        }
        Request::Store { op, key, flags, exptime, cas_unique, data, noreply } => {
            bump(&ctx.w.counters.cmd_set, 1);
            if ctx.w.detail_on() {
                ctx.w.record_detail(DetailOp::Set, key);
            }
            let e = expiry(store, exptime);
            let key = crate::stored(key, &mut scratch);
            let r = match op {
                StoreOp::Set => store.set(key, data, flags, e),
                StoreOp::Add => store.add(key, data, flags, e),
                StoreOp::Replace => store.replace(key, data, flags, e),
                StoreOp::Append => store.append(key, data),
                StoreOp::Prepend => store.prepend(key, data),
                // -C: memcached ignores the given unique (the item keeps
                // none), and a unique of 0 never matches: EXISTS if the key
                // is there, NOT_FOUND if not.
                StoreOp::Cas => store.cas(key, data, flags, e, ctx.visible_cas(cas_unique)),
            };
            if r.is_ok() {
                let concat = matches!(op, StoreOp::Append | StoreOp::Prepend);
                ctx.w.notify_store(concat, e != Expiry::Never, key);
            }
            if ctx.w.watched(crate::watch::class::MUTATIONS) {
                let status = match &r {
                    Ok(_) => "stored",
                    Err(Error::Exists) => "exists",
                    Err(Error::NotFound) => "not_found",
                    Err(Error::TooLarge) => "too_large",
                    Err(Error::OutOfMemory) => "no_memory",
                    Err(_) => "not_stored",
                };
                let ttl = e.unix_secs_ceil().map_or(0, |at| at.saturating_sub(store.now()));
                ctx.w.watch_store(ctx.cfd, crate::name(key), status, store_cmd(op), ttl, data.len());
            }
            store_reply(ctx, op, key, r, noreply, out);
        }
        Request::Delete { key, noreply } => {
            if ctx.w.detail_on() {
                ctx.w.record_detail(DetailOp::Del, key);
            }
            delete(ctx, key, noreply, out)
        }
        Request::Arith { incr, key, delta, noreply } => {
            let key = crate::stored(key, &mut scratch);
            let r = if incr { store.incr(key, delta) } else { store.decr(key, delta) };
            let (hits, misses) = if incr {
                (&ctx.w.counters.incr_hits, &ctx.w.counters.incr_misses)
            } else {
                (&ctx.w.counters.decr_hits, &ctx.w.counters.decr_misses)
            };
            match r {
                Ok(v) => {
                    ctx.w.notify(notify::STRING, "incrby", key);
                    bump(hits, 1);
                    if !noreply {
                        push_u64(out, v);
                        out.extend_from_slice(b"\r\n");
                    }
                }
                Err(Error::NotFound) => {
                    bump(misses, 1);
                    reply_line("NOT_FOUND", noreply);
                }
                Err(Error::NonNumeric) => reply_line(reply::NON_NUMERIC, noreply),
                Err(_) => reply_line("SERVER_ERROR out of memory", noreply),
            }
        }
        Request::Touch { key, exptime, noreply } => {
            bump(&ctx.w.counters.cmd_touch, 1);
            match store.touch(crate::stored(key, &mut scratch), expiry(store, exptime)) {
                Ok(()) => {
                    ctx.w.notify(notify::GENERIC, "expire", crate::stored(key, &mut scratch));
                    bump(&ctx.w.counters.touch_hits, 1);
                    reply_line("TOUCHED", noreply);
                }
                Err(_) => {
                    bump(&ctx.w.counters.touch_misses, 1);
                    reply_line("NOT_FOUND", noreply);
                }
            }
        }
        Request::FlushAll { noreply, .. } if ctx.w.flush_all_disabled => {
            // -F: memcached counts the refused flush, and noreply silences
            // the refusal too.
            bump(&ctx.w.counters.cmd_flush, 1);
            reply_line("CLIENT_ERROR flush_all not allowed", noreply);
        }
        Request::FlushAll { delay, noreply } => {
            bump(&ctx.w.counters.cmd_flush, 1);
            // memcached sets oldest_live = realtime(delay) - 1: a delayed
            // flush takes effect a second before its delay is up, so
            // `flush_all 1` is immediate.
            match expiry(store, delay) {
                Expiry::At(t) if delay > 0 => store.flush_all_at(t - 1),
                _ => store.flush_all(),
            }
            ctx.w.host.flushed();
            reply_line("OK", noreply);
        }
        Request::Version => push_line(out, VERSION_LINE),
        Request::Verbosity { level, noreply } => {
            ctx.w.host.verbosity(level);
            reply_line("OK", noreply)
        }
        Request::Quit => return After::Close,
        Request::Stats { args } => ctx.w.host.stats(args, out),
        Request::Shutdown { args } => return ctx.w.host.shutdown(args, out),
        Request::RefreshCerts { noreply } => match ctx.w.host.refresh_certs() {
            // memcached's texts: without -Z, then a file that will not load.
            None => push_line(out, "Error TLS not enabled"),
            Some(Ok(())) => reply_line("OK", noreply),
            Some(Err(e)) => push_line(out, &format!("Error loading the certificate chain: {e}")),
        },
        Request::LruCrawler { args } => return ctx.w.host.lru_crawler(args, out),
        Request::Slabs { args } => ctx.w.host.operator().slabs(args, out),
        Request::Lru { args } => ctx.w.host.operator().lru(args, out),
        Request::Watch { args } => return ctx.w.host.watch(args, out),
        Request::Meta { cmd, line, data } => return crate::meta::run(ctx, cmd, line, data, out),
    }
    After::Continue
}

/// `delete <key>`: memcached's replies and counters.
fn delete(ctx: &Ctx<'_>, key: &[u8], noreply: bool, out: &mut Vec<u8>) {
    let mut scratch = Vec::new();
    let stored = crate::stored(key, &mut scratch);
    let (counter, line) = match ctx.w.store.delete(stored) {
        Ok(()) => {
            ctx.w.notify(notify::GENERIC, "del", stored);
            (&ctx.w.counters.delete_hits, "DELETED")
        }
        Err(_) => (&ctx.w.counters.delete_misses, "NOT_FOUND"),
    };
    bump(counter, 1);
    if !noreply {
        push_line(out, line);
    }
}
