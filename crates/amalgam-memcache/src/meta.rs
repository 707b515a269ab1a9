//! Executes memcached's meta commands (`mn mg ms md ma me`) on the engine
//! and composes memcached 1.6's answers byte for byte.
//!
//! Every command that changes an item runs as one [`Store::update`] under
//! the key's bucket lock, so `C` (compare CAS), `I` (invalidate), `N`
//! (vivify) and the recache win token are as atomic as memcached's.
//! Stale-while-revalidate state lives in the item's marks
//! ([`MARK_STALE`] → `X`, [`MARK_TOKEN_SENT`] → `Z`; a win answers `W`).
//!
//! ## What differs from memcached 1.6.18 (per-item state the engine lacks)
//!
//! Checked against memcached 1.6.18 (`proto_text.c`, and the same bytes sent
//! to both servers). Each needs state that memcached writes into its items
//! and Amalgam's immutable items do not have; the engine change each would
//! take is named.
//!
//! * **`mg` flags `h` and `l`** (issue 18). `h` is memcached's
//!   `ITEM_FETCHED`: the state before this fetch, so `h0` on the first
//!   fetch after a store and `h1` after it; `u` reads without marking (and
//!   without raising the eviction frequency); touch, gat and a vivifying
//!   `mg` count as fetches; an `ms`, `incr` or `append` leaves a new item,
//!   `h0` again. The mark is the item's `MARK_FETCHED` bit (meta byte bit
//!   3), set by `mg`; a plain `get`/`gets` writes nothing to the item, so
//!   only in cache mode (the default), whose GET hits raise the eviction
//!   frequency, does a plain `get` count for a later `h`; in store mode
//!   (`--eviction none`) it does not. `l` is `current_time - it->time`:
//!   here the seconds since the store, read from the item's CAS unique by
//!   the engine's write clock (engine `clock.rs`; exact to about a second
//!   for items stored in the last hour of writes). memcached also moves
//!   `it->time` when a fetch bumps the item (its segmented LRU does so on
//!   the second fetch, and again after the LRU maintainer moved it);
//!   Amalgam does not (no shared write on the read path), so an item read
//!   long after its store keeps counting from the store.
//! * **`me`** answers `ME <key> exp=<e> la=<l> cas=<c> fetch=<yes|no> cls=1
//!   size=<s>` in memcached's field order, without bumping the item. `exp`
//!   (memcached's sign: now minus the expiry, so -100 for an item 100 s
//!   from expiring; -1 for never), `la` and `fetch` (as `l` and `h` above)
//!   and `cas` are the item's own; `size` is the bytes the item takes in
//!   Amalgam (`ItemRef::size`: header, key and value; memcached's
//!   `ITEM_ntotal` counts its own 48-byte header, the CAS, the key, its
//!   NUL, the value and its CRLF, so the numbers differ by design). `cls`
//!   (the pool's size classes are private to the engine) is a constant.
//! * **base64 keys.** A key stored with `b` is the same key as its decoded
//!   bytes sent plain, so values, flags and every status match memcached
//!   whichever way a key is named. Only the key memcached echoes can
//!   differ: it marks an item stored by `ms ... b` (`ITEM_KEY_BINARY`) and
//!   encodes the key by that mark in an `mg` hit's `k` flag and in `me`'s
//!   answer; Amalgam keeps no such mark and encodes by the request's `b`.
//!   So `mg <raw> k` on a key stored with `b` answers `k<raw>` here and
//!   `k<base64> b` in memcached, and `mg <base64> b k` on a key stored
//!   plain answers `k<base64> b` here and `k<raw>` in memcached. `ms`, `md`,
//!   `ma` and every miss encode by the request in memcached too. One
//!   memcached quirk is not copied: an item that `mg ... b N` or
//!   `ma ... b N` creates is not marked, so memcached echoes its key raw
//!   even to that request (`mg dml2Yg== b N30 k` answers `HD kvivb W`),
//!   which for a binary key can put a space or CRLF in the line; Amalgam echoes
//!   base64 as the request asked. The fix is a key-binary mark kept
//!   through `Update::Put`; the meta byte has no free bit for it (bits
//!   6-7 are reserved for cache mode).

use crate::exec::After;
use crate::Ctx;
use amalgam_commands::counters::bump;
use amalgam_commands::counters::Counters;
use amalgam_engine::{
    Error, Expiry, ItemRef, NewValue, Store, Update, MARK_FETCHED, MARK_STALE, MARK_TOKEN_SENT, TAG_BYTES,
};
use amalgam_protocol::compose::{push_line, push_u64};
use amalgam_protocol::meta::{push_key_flag, push_opaque_and_key, MetaCmd, MetaRequest, SetMode};
use amalgam_protocol::text::reply;

/// memcached's error when an internal allocation fails on a meta path.
const OOM_STORING: &str = "SERVER_ERROR out of memory storing object";
const OOM: &str = "SERVER_ERROR out of memory";

/// Executes one validated meta request.
pub fn run(ctx: &Ctx<'_>, cmd: MetaCmd, line: &[u8], data: &[u8], out: &mut Vec<u8>) -> After {
    let Some(req) = MetaRequest::from_line(cmd, line) else {
        // Cannot happen: the parser accepted this line.
        push_line(out, reply::BAD_FORMAT);
        return After::Continue;
    };
    let store = ctx.w.store;
    let cas_on = ctx.w.cas_enabled;
    if cmd == MetaCmd::Debug {
        // memcached 1.6.18 counts `me` alone in `cmd_meta`.
        amalgam_commands::counters::bump(&ctx.w.counters.cmd_meta, 1);
    }
    if ctx.read_only() && matches!(cmd, MetaCmd::Set | MetaCmd::Delete | MetaCmd::Arith) {
        // A read-only replica (crate::repl), as on the text protocol; the
        // `q` flag hides it like any other failure reply it hides not.
        push_line(out, crate::exec::READONLY_REPLY);
        return After::Continue;
    }
    match cmd {
        MetaCmd::Noop => push_line(out, "MN"),
        MetaCmd::Get => meta_get(store, ctx.w.counters, &req, out, cas_on),
        MetaCmd::Set => meta_set(ctx.w, &req, data, out, cas_on),
        MetaCmd::Delete => meta_delete(ctx.w, &req, out, cas_on),
        MetaCmd::Arith => meta_arith(ctx.w, &req, out, cas_on),
        MetaCmd::Debug => meta_debug(store, &req, out, cas_on),
    }
    After::Continue
}

fn expiry(store: &Store, ttl: i64) -> Expiry {
    Expiry::from_memcached(ttl, store.now())
}

/// memcached's ` t<remaining>`: -1 for never, else the unsigned
/// difference to now. A millisecond deadline (set over RESP) counts as
/// the whole second it falls in, rounded up, so a live key never reads 0.
fn push_ttl(out: &mut Vec<u8>, e: Expiry, now: u32) {
    out.extend_from_slice(b" t");
    match e.unix_secs_ceil() {
        None => out.extend_from_slice(b"-1"),
        Some(t) => push_u64(out, u64::from(t.wrapping_sub(now))),
    }
}

/// The fields of an item an `mg` answer reports.
struct Hit<'v> {
    value: &'v [u8],
    flags: u32,
    cas: u64,
    expiry: Expiry,
    marks: u8,
    /// Read before this request (memcached's ITEM_FETCHED: `h`).
    fetched: bool,
    created: bool,
}

/// Composes an `mg` hit the way `process_mget_command` does: flags in
/// request order (`T`/`N` change the TTL that a later `t` reports), then
/// `Z`, `X` and `W`. Returns the item's final expiry and whether the
/// request won the recache token.
fn compose_mg_hit(out: &mut Vec<u8>, req: &MetaRequest<'_>, hit: &Hit<'_>, store: &Store) -> (Expiry, bool) {
    let now = store.now();
    let f = &req.flags;
    if f.value {
        out.extend_from_slice(b"VA ");
        push_u64(out, hit.value.len() as u64);
    } else {
        out.extend_from_slice(b"HD");
    }
    let mut exp = hit.expiry;
    let mut won = false;
    for t in req.tokens() {
        match t[0] {
            b'T' => exp = expiry(store, f.ttl.unwrap_or(0)),
            b'N' if hit.created => {
                exp = expiry(store, f.vivify.unwrap_or(0));
                won = true;
            }
            b'R' => {
                let recache = expiry(store, f.recache.unwrap_or(0));
                if let (Some(e), Some(r)) = (exp.unix_secs_ceil(), recache.unix_secs_ceil()) {
                    if hit.marks & MARK_TOKEN_SENT == 0 && !hit.created && e < r {
                        won = true;
                    }
                }
            }
            b's' => {
                out.extend_from_slice(b" s");
                push_u64(out, hit.value.len() as u64);
            }
            b't' => push_ttl(out, exp, now),
            b'c' => {
                out.extend_from_slice(b" c");
                push_u64(out, hit.cas);
            }
            b'f' => {
                out.extend_from_slice(b" f");
                push_u64(out, u64::from(hit.flags));
            }
            // The state before this fetch (memcached reports, then bumps).
            b'l' => {
                out.extend_from_slice(b" l");
                push_u64(out, u64::from(now.saturating_sub(store.stored_at(hit.cas))));
            }
            b'h' => out.extend_from_slice(if hit.fetched { b" h1" } else { b" h0" }),
            b'O' => {
                out.push(b' ');
                out.extend_from_slice(t);
            }
            b'k' => push_key_flag(out, req.key(), f.base64),
            _ => {}
        }
    }
    if hit.marks & MARK_TOKEN_SENT != 0 {
        out.extend_from_slice(b" Z");
    }
    if hit.marks & MARK_STALE != 0 {
        out.extend_from_slice(b" X");
        if hit.marks & MARK_TOKEN_SENT == 0 {
            won = true;
        }
    }
    if won {
        out.extend_from_slice(b" W");
    }
    out.extend_from_slice(b"\r\n");
    if f.value {
        out.extend_from_slice(hit.value);
        out.extend_from_slice(b"\r\n");
    }
    (exp, won)
}

/// The CAS a client sees: the item's, or 0 with `-C` (memcached keeps none).
fn visible(it: &ItemRef<'_>, cas_on: bool) -> u64 {
    if cas_on {
        it.cas()
    } else {
        0
    }
}

fn hit_of<'v>(it: &ItemRef<'v>, cas_on: bool) -> Hit<'v> {
    Hit {
        value: it.value(),
        flags: it.flags(),
        cas: visible(it, cas_on),
        expiry: it.expiry(),
        marks: it.marks(),
        fetched: it.fetched(),
        created: false,
    }
}

fn mg_miss(out: &mut Vec<u8>, req: &MetaRequest<'_>) {
    if req.flags.quiet {
        return;
    }
    out.extend_from_slice(b"EN");
    push_opaque_and_key(out, req);
    out.extend_from_slice(b"\r\n");
}

fn count_get(stats: &Counters, req: &MetaRequest<'_>, hit: bool) {
    if req.flags.ttl.is_some() {
        bump(&stats.cmd_touch, 1);
        bump(if hit { &stats.touch_hits } else { &stats.touch_misses }, 1);
    } else {
        bump(&stats.cmd_get, 1);
        bump(if hit { &stats.get_hits } else { &stats.get_misses }, 1);
    }
}

fn meta_get(store: &Store, stats: &Counters, req: &MetaRequest<'_>, out: &mut Vec<u8>, cas_on: bool) {
    let f = &req.flags;
    // The key's stored form (database 0: lib.rs).
    let mut scratch = Vec::new();
    let key = crate::stored(req.key(), &mut scratch);
    if f.ttl.is_none() && f.vivify.is_none() && f.recache.is_none() {
        // Read-only unless the item is stale with its token still to give.
        let mark = out.len();
        let read = |it: ItemRef<'_>| {
            // A collection (a RESP hash, list, set or sorted set) is not a
            // memcached item: absent here, and the write path leaves it.
            if it.tag() != TAG_BYTES {
                return None;
            }
            if it.marks() & (MARK_STALE | MARK_TOKEN_SENT) == MARK_STALE {
                return Some(false);
            }
            compose_mg_hit(out, req, &hit_of(&it, cas_on), store);
            if !f.no_update {
                it.mark_fetched();
            }
            Some(true)
        };
        // `u`: "don't bump the item": not even the eviction policy's count.
        let r = if f.no_update { store.peek(key, read) } else { store.get(key, read) };
        match r {
            Some(Some(true)) => return count_get(stats, req, true),
            None | Some(None) => {
                count_get(stats, req, false);
                return mg_miss(out, req);
            }
            Some(Some(false)) => out.truncate(mark),
        }
    }
    // The write path: T, N, R, or a stale item whose token we may win.
    let mut answer = Vec::new();
    let r = store.update(key, |old| match old {
        // A collection is absent to memcached, and not replaced by `N`.
        Some(it) if it.tag() != TAG_BYTES => (Update::Keep, false),
        Some(it) => {
            // `update` may run this again (a retry after the cache found no
            // free segment): only the last run's answer stays.
            answer.clear();
            let (exp, won) = compose_mg_hit(&mut answer, req, &hit_of(&it, cas_on), store);
            if exp == it.expiry() && !won {
                if !f.no_update {
                    it.mark_fetched();
                }
                return (Update::Keep, true);
            }
            // `u`: no bump, but a mark already there stays.
            let fetched = if it.fetched() || !f.no_update { MARK_FETCHED } else { 0 };
            let marks = it.marks() | fetched | if won { MARK_TOKEN_SENT } else { 0 };
            let put = Update::Put { value: NewValue::Same, flags: it.flags(), expiry: exp, fresh_cas: false, marks };
            (put, true)
        }
        None => match f.vivify {
            Some(ttl) => {
                let put = Update::Put {
                    value: NewValue::Bytes(b""),
                    flags: 0,
                    expiry: expiry(store, ttl),
                    fresh_cas: true,
                    // This request fetched it (memcached: the next `mg`
                    // answers `h1`).
                    marks: MARK_TOKEN_SENT | if f.no_update { 0 } else { MARK_FETCHED },
                };
                (put, false)
            }
            None => (Update::Keep, false),
        },
    });
    match r {
        Ok((true, _)) => {
            count_get(stats, req, true);
            out.extend_from_slice(&answer);
        }
        Ok((false, Some(cas))) => {
            // Vivified: an empty item whose token this request won.
            count_get(stats, req, true);
            let hit = Hit { value: b"", flags: 0, cas, expiry: Expiry::Never, marks: 0, fetched: false, created: true };
            compose_mg_hit(out, req, &hit, store);
        }
        Ok((false, None)) => {
            count_get(stats, req, false);
            mg_miss(out, req);
        }
        Err(_) => push_line(out, OOM_STORING),
    }
}

/// The outcome of an `ms`, `md` or `ma` and its two-letter code.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Code {
    Hd,
    Ns,
    Ex,
    Nf,
}

impl Code {
    fn text(self) -> &'static [u8] {
        match self {
            Code::Hd => b"HD",
            Code::Ns => b"NS",
            Code::Ex => b"EX",
            Code::Nf => b"NF",
        }
    }
}

fn meta_set(w: &crate::Worker<'_>, req: &MetaRequest<'_>, data: &[u8], out: &mut Vec<u8>, cas_on: bool) {
    let (store, stats) = (w.store, w.counters);
    bump(&stats.cmd_set, 1);
    let f = &req.flags;
    let mode = req.set_mode();
    // memcached upgrades set and replace with a CAS value to a CAS store.
    let cas_mode = f.cas.is_some() && matches!(mode, SetMode::Set | SetMode::Replace);
    let exp = expiry(store, f.ttl.unwrap_or(0));
    let put = |marks| Update::Put {
        value: NewValue::Bytes(data),
        flags: f.client_flags,
        expiry: exp,
        fresh_cas: true,
        marks,
    };
    let r = store.update(crate::stored(req.key(), &mut Vec::new()), |old| {
        // A collection is absent to memcached: only a plain set replaces
        // it (as the text protocol's `set` does).
        if old.is_some_and(|it| it.tag() != TAG_BYTES) && (cas_mode || mode != SetMode::Set) {
            return (Update::Keep, if cas_mode { Code::Nf } else { Code::Ns });
        }
        if cas_mode {
            let want = f.cas.unwrap_or(0);
            return match old {
                None => (Update::Keep, Code::Nf),
                // -C: memcached drops the request's CAS, and a CAS store
                // without one never matches.
                Some(_) if !cas_on => (Update::Keep, Code::Ex),
                Some(it) if it.cas() == want => (put(0), Code::Hd),
                // I: a CAS older than the item's stores a stale value that
                // keeps the item's TTL and token.
                Some(it) if f.invalidate && want < it.cas() => {
                    let marks = MARK_STALE | (it.marks() & MARK_TOKEN_SENT);
                    let p = Update::Put {
                        value: NewValue::Bytes(data),
                        flags: f.client_flags,
                        expiry: it.expiry(),
                        fresh_cas: true,
                        marks,
                    };
                    (p, Code::Hd)
                }
                Some(_) => (Update::Keep, Code::Ex),
            };
        }
        match (mode, old) {
            (SetMode::Set, _) | (SetMode::Add, None) | (SetMode::Replace, Some(_)) => (put(0), Code::Hd),
            (SetMode::Add, Some(_)) | (SetMode::Replace, None) => (Update::Keep, Code::Ns),
            (SetMode::Append | SetMode::Prepend, None) => (Update::Keep, Code::Ns),
            (SetMode::Append | SetMode::Prepend, Some(it)) => {
                // memcached's simplified CAS check for append/prepend.
                if matches!(f.cas, Some(c) if c != 0 && c != visible(&it, cas_on)) {
                    return (Update::Keep, Code::Ex);
                }
                let p = Update::Put {
                    value: NewValue::Concat(data, mode == SetMode::Append),
                    flags: it.flags(),
                    expiry: it.expiry(),
                    fresh_cas: true,
                    marks: 0,
                };
                (p, Code::Hd)
            }
        }
    });
    let (code, cas) = match r {
        Ok((code, cas)) => (code, if cas_on { cas.unwrap_or(0) } else { 0 }),
        Err(Error::TooLarge) if matches!(mode, SetMode::Append | SetMode::Prepend) => (Code::Ns, 0),
        Err(Error::TooLarge) => {
            let _ = store.delete(crate::stored(req.key(), &mut Vec::new()));
            return push_line(out, reply::TOO_LARGE);
        }
        Err(_) => {
            if mode == SetMode::Set {
                let _ = store.delete(crate::stored(req.key(), &mut Vec::new()));
            }
            return push_line(out, OOM_STORING);
        }
    };
    if code == Code::Hd {
        let concat = matches!(mode, SetMode::Append | SetMode::Prepend);
        w.notify_store(concat, exp != Expiry::Never, crate::stored(req.key(), &mut Vec::new()));
        bump(&stats.total_items, 1);
        if f.quiet {
            return;
        }
    }
    if cas_mode {
        match code {
            Code::Hd => bump(&stats.cas_hits, 1),
            Code::Nf => bump(&stats.cas_misses, 1),
            Code::Ex => bump(&stats.cas_badval, 1),
            Code::Ns => {}
        }
    }
    out.extend_from_slice(code.text());
    for t in req.tokens() {
        match t[0] {
            b'O' => {
                out.push(b' ');
                out.extend_from_slice(t);
            }
            b'k' => push_key_flag(out, req.key(), f.base64),
            b'c' => {
                out.extend_from_slice(b" c");
                push_u64(out, if code == Code::Hd { cas } else { 0 });
            }
            _ => {}
        }
    }
    out.extend_from_slice(b"\r\n");
}

fn meta_delete(w: &crate::Worker<'_>, req: &MetaRequest<'_>, out: &mut Vec<u8>, cas_on: bool) {
    let (store, stats) = (w.store, w.counters);
    let f = &req.flags;
    let new_ttl = f.ttl.map(|t| expiry(store, t));
    let r = store.update(crate::stored(req.key(), &mut Vec::new()), |old| match old {
        None => (Update::Keep, Code::Nf),
        Some(it) if matches!(f.cas, Some(c) if c != visible(&it, cas_on)) => (Update::Keep, Code::Ex),
        // A collection can be deleted from memcached's port, not marked
        // stale (it is not a memcached item).
        Some(it) if f.invalidate && it.tag() != TAG_BYTES => (Update::Remove, Code::Hd),
        Some(it) if f.invalidate => {
            // Mark stale, bump the CAS, clear the token so the next
            // client can win it; a T sets a new TTL.
            let p = Update::Put {
                value: NewValue::Same,
                flags: it.flags(),
                expiry: new_ttl.unwrap_or(it.expiry()),
                fresh_cas: true,
                marks: (it.marks() | MARK_STALE) & !MARK_TOKEN_SENT,
            };
            (p, Code::Hd)
        }
        Some(_) => (Update::Remove, Code::Hd),
    });
    let code = match r {
        Ok((code, _)) => code,
        Err(_) => return push_line(out, OOM),
    };
    if code == Code::Hd && !f.invalidate {
        w.notify(amalgam_commands::notify::GENERIC, "del", crate::stored(req.key(), &mut Vec::new()));
    }
    match code {
        Code::Hd if !f.invalidate => bump(&stats.delete_hits, 1),
        Code::Hd => {}
        _ => bump(&stats.delete_misses, 1),
    }
    if code == Code::Hd && f.quiet {
        return;
    }
    out.extend_from_slice(code.text());
    push_opaque_and_key(out, req);
    out.extend_from_slice(b"\r\n");
}

/// memcached's incr/decr parse of a stored value: digits, optionally
/// A counter's new value as memcached stores it: a number shorter than
/// the old value is rewritten in place, padded with spaces to its length.
pub(crate) fn counter_digits(number: u64, old_len: usize) -> Vec<u8> {
    let mut digits = number.to_string().into_bytes();
    if digits.len() < old_len {
        digits.resize(old_len, b' ');
    }
    digits
}

enum ArithOutcome {
    Done { number: u64, exp: Expiry, created: bool },
    Miss,
    CasMismatch,
    NonNumeric,
}

fn meta_arith(w: &crate::Worker<'_>, req: &MetaRequest<'_>, out: &mut Vec<u8>, cas_on: bool) {
    let (store, stats) = (w.store, w.counters);
    let f = &req.flags;
    let incr = req.incr();
    // The TTL the token loop leaves: T always, N only on a created item.
    let final_exp = |start: Expiry, created: bool| {
        let mut e = start;
        for t in req.tokens() {
            match t[0] {
                b'T' => e = expiry(store, f.ttl.unwrap_or(0)),
                b'N' if created => e = expiry(store, f.vivify.unwrap_or(0)),
                _ => {}
            }
        }
        e
    };
    let r = store.update(crate::stored(req.key(), &mut Vec::new()), |old| match old {
        None => match f.vivify {
            Some(_) => {
                let exp = final_exp(Expiry::Never, true);
                let p = Update::Put {
                    value: NewValue::Owned(f.initial.to_string().into_bytes()),
                    flags: 0,
                    expiry: exp,
                    fresh_cas: true,
                    marks: 0,
                };
                (p, ArithOutcome::Done { number: f.initial, exp: Expiry::Never, created: true })
            }
            None => (Update::Keep, ArithOutcome::Miss),
        },
        // A collection is not a counter: absent to memcached, left alone.
        Some(it) if it.tag() != TAG_BYTES => (Update::Keep, ArithOutcome::Miss),
        Some(it) if matches!(f.cas, Some(c) if c != 0 && c != visible(&it, cas_on)) => {
            (Update::Keep, ArithOutcome::CasMismatch)
        }
        Some(it) => {
            let Some(v) = amalgam_engine::counter_value(it.value()) else {
                return (Update::Keep, ArithOutcome::NonNumeric);
            };
            let number = if incr { v.wrapping_add(f.delta) } else { v.saturating_sub(f.delta) };
            let digits = counter_digits(number, it.value().len());
            let p = Update::Put {
                value: NewValue::Owned(digits),
                flags: it.flags(),
                expiry: final_exp(it.expiry(), false),
                fresh_cas: true,
                marks: it.marks(),
            };
            (p, ArithOutcome::Done { number, exp: it.expiry(), created: false })
        }
    });
    let (hits, misses) =
        if incr { (&stats.incr_hits, &stats.incr_misses) } else { (&stats.decr_hits, &stats.decr_misses) };
    let (outcome, cas) = match r {
        Ok(x) => x,
        Err(_) => return push_line(out, OOM),
    };
    match outcome {
        ArithOutcome::NonNumeric => push_line(out, reply::NON_NUMERIC),
        ArithOutcome::Miss | ArithOutcome::CasMismatch => {
            let code: &[u8] = if matches!(outcome, ArithOutcome::Miss) {
                bump(misses, 1);
                b"NF"
            } else {
                b"EX"
            };
            out.extend_from_slice(code);
            push_opaque_and_key(out, req);
            out.extend_from_slice(b"\r\n");
        }
        ArithOutcome::Done { number, exp, created } => {
            w.notify(amalgam_commands::notify::STRING, "incrby", crate::stored(req.key(), &mut Vec::new()));
            if !created {
                bump(hits, 1);
                if f.quiet {
                    return;
                }
            }
            let now = store.now();
            let mut digits = Vec::new();
            push_u64(&mut digits, number);
            if f.value {
                out.extend_from_slice(b"VA ");
                push_u64(out, digits.len() as u64);
            } else {
                out.extend_from_slice(b"HD");
            }
            let mut e = exp;
            for t in req.tokens() {
                match t[0] {
                    b'c' => {
                        out.extend_from_slice(b" c");
                        push_u64(out, if cas_on { cas.unwrap_or(0) } else { 0 });
                    }
                    b't' => push_ttl(out, e, now),
                    b'T' => e = expiry(store, f.ttl.unwrap_or(0)),
                    b'N' if created => e = expiry(store, f.vivify.unwrap_or(0)),
                    b'O' => {
                        out.push(b' ');
                        out.extend_from_slice(t);
                    }
                    b'k' => push_key_flag(out, req.key(), f.base64),
                    _ => {}
                }
            }
            if f.value {
                out.extend_from_slice(b"\r\n");
                out.extend_from_slice(&digits);
            }
            out.extend_from_slice(b"\r\n");
        }
    }
}

/// `me`: memcached's debug line. Fields the engine does not keep are
/// reported as constants (see the module doc).
fn meta_debug(store: &Store, req: &MetaRequest<'_>, out: &mut Vec<u8>, cas_on: bool) {
    let now = store.now();
    // memcached's `me` reads without bumping the item.
    let line = store.peek(crate::stored(req.key(), &mut Vec::new()), |it| {
        // A collection (a RESP hash, list, set or sorted set) is not a
        // memcached item: absent here.
        if it.tag() != TAG_BYTES {
            return None;
        }
        let mut l = b"ME ".to_vec();
        if req.flags.base64 {
            amalgam_protocol::meta::base64_encode(req.key(), &mut l);
        } else {
            l.extend_from_slice(req.key());
        }
        let exp = match it.expiry().unix_secs_ceil() {
            None => -1,
            Some(t) => i64::from(now) - i64::from(t),
        };
        let size = it.size();
        let la = now.saturating_sub(store.stored_at(it.cas()));
        let fetch = if it.fetched() { "yes" } else { "no" };
        l.extend_from_slice(
            format!(" exp={exp} la={la} cas={} fetch={fetch} cls=1 size={size}\r\n", visible(&it, cas_on)).as_bytes(),
        );
        Some(l)
    });
    match line.flatten() {
        Some(l) => out.extend_from_slice(&l),
        None => push_line(out, "EN"),
    }
}
