//! Keyspace commands: DEL UNLINK EXISTS, the EXPIRE family, TTL PTTL
//! EXPIRETIME PEXPIRETIME PERSIST TYPE, SCAN KEYS DBSIZE FLUSHDB FLUSHALL,
//! RENAME RENAMENX.
//!
//! RENAME is the engine's `Store::rename`: both keys change at once for
//! every other client (`Store::atomically`), the value keeps its type,
//! flags and deadline, and a large collection moves without a copy.
//!
//! ## Iteration
//! SCAN and KEYS run on the engine's `Store::scan`, a reverse-binary
//! bucket cursor with Redis's guarantee (a key present for a whole
//! iteration is returned at least once, across table doublings; a key may
//! come twice). SCAN works as Redis's `scanGenericCommand`: it takes
//! cursor steps until COUNT keys are collected or COUNT × 10 steps are
//! taken, then filters by MATCH and TYPE, so a reply may be empty with a
//! non-zero cursor. KEYS is one whole iteration (O(n), as in Redis). A
//! pattern without glob characters names one key and is a lookup. DBSIZE
//! is the engine's item count (memcached's `curr_items`), which includes
//! items expired but not yet reclaimed.

use super::glob::{has_wildcards, matches};
use super::strings::{deadline, engine_error, Unit};
use super::{int_arg, is, Arg, Ctx};
use crate::counters::bump;
use crate::notify;
use amalgam_engine::{namespace, Expiry, NewValue, Update};
use amalgam_protocol::resp::{err, push_array, push_bulk, push_error, push_int, push_simple};

use super::table::Cmd;

/// SCAN's COUNT when none is given (Redis's default).
const SCAN_COUNT_DEFAULT: usize = 10;
/// Cursor steps one SCAN may take per key asked for (Redis: `maxiterations
/// = count * 10`), so a sparse table cannot make one call long.
const SCAN_STEPS_PER_KEY: usize = 10;
/// Bound on the cursor steps of one KEYS: far above any table's bucket
/// count (one step per bucket of the smallest table during the iteration).
const KEYS_STEPS_MAX: u64 = 1 << 40;

pub fn run(ctx: &mut Ctx<'_>, cmd: Cmd, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let store = &ctx.ks.store;
    match cmd {
        Cmd::Del | Cmd::Unlink => {
            let mut n = 0;
            for k in &args[1..] {
                if store.delete(k).is_ok() {
                    ctx.notify(notify::GENERIC, "del", k);
                    // A client blocked in XREADGROUP on it is answered
                    // (Redis's signalDeletedKeyAsReady); nobody blocked
                    // anywhere: one relaxed load.
                    ctx.ks.host.signal(k);
                    n += 1;
                    bump(&ctx.ks.counters.delete_hits, 1);
                } else {
                    bump(&ctx.ks.counters.delete_misses, 1);
                }
            }
            push_int(out, n);
        }
        Cmd::Exists => {
            let reader = store.reader();
            let n = args[1..].iter().filter(|k| reader.get(k, |_| ()).is_some()).count();
            push_int(out, n as i64);
        }
        Cmd::Expire => expire(ctx, args, Unit::Ex, "expire", out),
        Cmd::Pexpire => expire(ctx, args, Unit::Px, "pexpire", out),
        Cmd::Expireat => expire(ctx, args, Unit::Exat, "expireat", out),
        Cmd::Pexpireat => expire(ctx, args, Unit::Pxat, "pexpireat", out),
        Cmd::Ttl | Cmd::Pttl | Cmd::Expiretime | Cmd::Pexpiretime => {
            let e = store.get(&args[1], |it| it.expiry());
            push_int(out, ttl_reply(cmd, e, super::now_ms()));
        }
        Cmd::Rename | Cmd::Renamenx => rename(ctx, args, cmd == Cmd::Renamenx, out),
        Cmd::Persist => {
            let r = store.update(&args[1], |old| match old {
                Some(it) if it.expiry() != Expiry::Never => {
                    let put = Update::Put {
                        value: NewValue::Same,
                        flags: it.flags(),
                        expiry: Expiry::Never,
                        fresh_cas: false,
                        marks: it.marks(),
                    };
                    (put, 1)
                }
                _ => (Update::Keep, 0),
            });
            match r {
                Ok((n, _)) => {
                    if n == 1 {
                        ctx.notify(notify::GENERIC, "persist", &args[1]);
                    }
                    push_int(out, n)
                }
                Err(amalgam_engine::Error::BadKey) => push_int(out, 0),
                Err(e) => engine_error(e, out),
            }
        }
        Cmd::Type => {
            let name = store.get(&args[1], |it| super::typed::type_name(&it));
            push_simple(out, name.unwrap_or("none"));
        }
        Cmd::Keys => match one_key(&args[1]) {
            Some(k) => push_keys(ctx, k, out),
            None => keys(ctx, &args[1], out),
        },
        Cmd::Scan => scan(ctx, args, out),
        Cmd::Dbsize => push_int(out, store.namespace_len(ctx.ns) as i64),
        Cmd::Flushdb | Cmd::Flushall => {
            if args.len() > 2 || (args.len() == 2 && !is(&args[1], "sync") && !is(&args[1], "async")) {
                return push_error(out, err::SYNTAX.as_bytes());
            }
            bump(&ctx.ks.counters.cmd_flush, 1);
            if cmd == Cmd::Flushdb && !only_namespace_in_use(store, ctx.ns) {
                flush_namespace(ctx);
            } else {
                store.flush_all();
            }
            push_simple(out, "OK");
        }
        _ => {}
    }
}

/// True if no namespace but `ns` holds items, so FLUSHDB may flush the
/// whole store (the engine's constant-time fence).
fn only_namespace_in_use(store: &amalgam_engine::Store, ns: u8) -> bool {
    let counts = store.namespace_counts();
    let numbered: u64 = counts[1..].iter().sum();
    // Namespace 0's count is the total less the numbered ones' (one read
    // of the per-thread counters, not two).
    let zero = (store.len() as u64).saturating_sub(numbered);
    let theirs = if ns == 0 { numbered } else { numbered - counts[ns as usize] + zero };
    theirs == 0
}

/// FLUSHDB when other databases hold keys: one pass over the index,
/// deleting this namespace's keys (O(all keys), as Redis's FLUSHDB is
/// O(the database's); the pass is bounded by the index's size).
fn flush_namespace(ctx: &Ctx<'_>) {
    let store = ctx.ks.store;
    let mut cursor = 0;
    let mut doomed: Vec<Vec<u8>> = Vec::new();
    loop {
        cursor = store.scan(cursor, |it| {
            if namespace::split(it.key()).0 == ctx.ns {
                doomed.push(it.key().to_vec());
            }
        });
        for k in doomed.drain(..) {
            let _ = store.delete(&k);
        }
        if cursor == 0 {
            break;
        }
    }
}

/// TTL, PTTL, EXPIRETIME, PEXPIRETIME as Redis's `ttlGenericCommand`
/// computes them from the millisecond deadline: the seconds forms round
/// the milliseconds to the nearest second (`(ms + 500) / 1000`), the
/// deadline's too; -2 for a missing key, -1 for no expiry.
fn ttl_reply(cmd: Cmd, e: Option<Expiry>, now_ms: i64) -> i64 {
    let at_ms = match e.map(Expiry::unix_millis) {
        None => return -2,
        Some(None) => return -1,
        Some(Some(ms)) => ms as i64,
    };
    let left_ms = (at_ms - now_ms).max(0);
    match cmd {
        Cmd::Ttl => (left_ms + 500) / 1000,
        Cmd::Pttl => left_ms,
        Cmd::Expiretime => (at_ms + 500) / 1000,
        _ => at_ms,
    }
}

/// Redis's `expireGenericCommand`: options NX XX GT LT (checked first),
/// then the time; a time already past deletes the key. Replies 1 if the
/// expiry was set (or the key deleted), 0 if not.
fn expire(ctx: &mut Ctx<'_>, args: &[Arg<'_>], unit: Unit, name: &str, out: &mut Vec<u8>) {
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for opt in &args[3..] {
        if is(opt, "nx") {
            nx = true;
        } else if is(opt, "xx") {
            xx = true;
        } else if is(opt, "gt") {
            gt = true;
        } else if is(opt, "lt") {
            lt = true;
        } else {
            let mut m = b"ERR Unsupported option ".to_vec();
            m.extend_from_slice(opt.split(|&b| b == 0).next().unwrap_or(b""));
            return push_error(out, &m);
        }
    }
    if nx && (xx || gt || lt) {
        return push_error(out, err::EXPIRE_NX_XX.as_bytes());
    }
    if gt && lt {
        return push_error(out, err::EXPIRE_GT_LT.as_bytes());
    }
    let Some(mut when) = int_arg(&args[2]) else { return push_error(out, err::NOT_INTEGER.as_bytes()) };
    let invalid = || format!("ERR invalid expire time in '{name}' command");
    if unit.seconds() {
        if !(i64::MIN / 1000..=i64::MAX / 1000).contains(&when) {
            return push_error(out, invalid().as_bytes());
        }
        when *= 1000;
    }
    if unit.relative() {
        let now = super::now_ms();
        if when > i64::MAX - now {
            return push_error(out, invalid().as_bytes());
        }
        when += now;
    }
    let new = deadline(when);
    // GT and LT compare milliseconds, as Redis does; a time already past
    // compares as the time given (Redis compares before it deletes).
    let new_ms = when;
    bump(&ctx.ks.counters.cmd_touch, 1);
    let r = ctx.ks.store.update(&args[1], |old| {
        let Some(it) = old else { return (Update::Keep, 0) };
        let current = it.expiry().unix_millis().map(|ms| ms as i64);
        let refuse = (nx && current.is_some())
            || (xx && current.is_none())
            || (gt && current.is_none_or(|c| new_ms <= c))
            || (lt && current.is_some_and(|c| new_ms >= c));
        if refuse {
            return (Update::Keep, 0);
        }
        let put =
            Update::Put { value: NewValue::Same, flags: it.flags(), expiry: new, fresh_cas: false, marks: it.marks() };
        (put, 1)
    });
    match r {
        Ok((n, _)) => {
            bump(if n == 1 { &ctx.ks.counters.touch_hits } else { &ctx.ks.counters.touch_misses }, 1);
            if n == 1 {
                // A time already past deletes the key: Redis says `del`.
                let past = new.is_expired_at_millis(super::now_ms() as u64);
                ctx.notify(notify::GENERIC, if past { "del" } else { "expire" }, &args[1]);
            }
            push_int(out, n);
        }
        Err(amalgam_engine::Error::BadKey) => push_int(out, 0),
        Err(e) => engine_error(e, out),
    }
}

/// The key a pattern names when it has no glob characters.
fn one_key(pattern: &[u8]) -> Option<&[u8]> {
    (!has_wildcards(pattern)).then_some(pattern)
}

/// The array of the keys among `name` (in the command's database) that
/// exist (zero or one).
fn push_keys(ctx: &Ctx<'_>, name: &[u8], out: &mut Vec<u8>) {
    let found = ctx.ks.store.get(&namespace::encode(ctx.ns, name), |_| ()).is_some();
    push_array(out, usize::from(found));
    if found {
        push_bulk(out, name);
    }
}

/// KEYS pattern: one whole iteration, each key written to the reply as
/// it is found and the array's header put in front at the end (Redis's
/// deferred length), so the keys are never held twice (a list, then the
/// reply). Once the output reaches the client's hard limit
/// (`Ctx::out_stop`) the iteration stops: the unfinished reply is never
/// sent, the client is closed (`resp::process`, `obuf.rs`).
fn keys(ctx: &Ctx<'_>, pattern: &[u8], out: &mut Vec<u8>) {
    let start = out.len();
    let stop = ctx.out_stop;
    let mut found = 0usize;
    let mut cursor = 0;
    for _ in 0..KEYS_STEPS_MAX {
        cursor = ctx.ks.store.scan(cursor, |it| {
            let Some(name) = namespace::name_in(ctx.ns, it.key()) else { return };
            if out.len() < stop && matches(pattern, name, false) {
                push_bulk(out, name);
                found += 1;
            }
        });
        if cursor == 0 || out.len() >= stop {
            break;
        }
    }
    if out.len() >= stop {
        return;
    }
    let mut header = Vec::new();
    push_array(&mut header, found);
    out.splice(start..start, header);
}

/// SCAN cursor [MATCH pattern] [COUNT n] [TYPE t], parsed as Redis's
/// `scanGenericCommand` parses it.
fn scan(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    // Redis's parseScanCursorOrReply, as HSCAN SSCAN ZSCAN read theirs
    // (`-1` and `+5` are cursors, so is the empty string).
    let Some(mut cursor) = super::typed::parse_cursor(&args[1]) else {
        return push_error(out, err::INVALID_CURSOR.as_bytes());
    };
    let mut count = SCAN_COUNT_DEFAULT;
    let mut pattern: Option<&[u8]> = None;
    let mut type_filter: Option<&[u8]> = None;
    let mut j = 2;
    while j < args.len() {
        let more = args.len() - j - 1;
        if is(&args[j], "count") && more >= 1 {
            match int_arg(&args[j + 1]) {
                None => return push_error(out, err::NOT_INTEGER.as_bytes()),
                Some(n) if n < 1 => return push_error(out, err::SYNTAX.as_bytes()),
                Some(n) => count = usize::try_from(n).unwrap_or(usize::MAX),
            }
        } else if is(&args[j], "match") && more >= 1 {
            pattern = Some(&args[j + 1]);
        } else if is(&args[j], "type") && more >= 1 {
            type_filter = Some(&args[j + 1]);
        } else {
            return push_error(out, err::SYNTAX.as_bytes());
        }
        j += 2;
    }
    if let Some(key) = pattern.and_then(one_key) {
        // One key: a lookup answers the whole iteration.
        push_array(out, 2);
        push_bulk(out, b"0");
        let kind = ctx.ks.store.get(&namespace::encode(ctx.ns, key), |it| super::typed::type_name(&it));
        if type_filter.is_some_and(|t| kind.is_some_and(|k| !is(t, k))) {
            push_array(out, 0);
        } else {
            push_keys(ctx, key, out);
        }
        return;
    }
    let mut found: Vec<Vec<u8>> = Vec::new();
    // Each key's TYPE name, when TYPE filters (after the steps, as Redis
    // does: a reply may be short of COUNT).
    let mut kinds: Vec<&'static str> = Vec::new();
    let steps = count.saturating_mul(SCAN_STEPS_PER_KEY);
    for _ in 0..steps {
        cursor = ctx.ks.store.scan(cursor, |it| {
            let Some(name) = namespace::name_in(ctx.ns, it.key()) else { return };
            found.push(name.to_vec());
            if type_filter.is_some() {
                kinds.push(super::typed::type_name(&it));
            }
        });
        if cursor == 0 || found.len() >= count {
            break;
        }
    }
    if let Some(t) = type_filter {
        let mut kind = kinds.iter();
        found.retain(|_| kind.next().is_some_and(|k| is(t, k)));
    }
    if let Some(p) = pattern {
        found.retain(|k| matches(p, k, false));
    }
    push_array(out, 2);
    push_bulk(out, cursor.to_string().as_bytes());
    push_array(out, found.len());
    for k in &found {
        push_bulk(out, k);
    }
}

/// RENAME / RENAMENX (Redis's `renameGenericCommand`).
fn rename(ctx: &mut Ctx<'_>, args: &[Arg<'_>], nx: bool, out: &mut Vec<u8>) {
    const NO_SUCH_KEY: &str = "ERR no such key";
    let store = &ctx.ks.store;
    let (src, dst) = (&args[1][..], &args[2][..]);
    if src == dst {
        // Redis: renaming a key onto itself changes nothing.
        if store.peek(src, |_| ()).is_none() {
            return push_error(out, NO_SUCH_KEY.as_bytes());
        }
        return if nx { push_int(out, 0) } else { push_simple(out, "OK") };
    }
    if amalgam_engine::check_key(dst).is_err() {
        // A destination the engine cannot hold: Redis's "no such key" only
        // if the source is missing too, else the invalid-key error (as
        // COPY and SET answer it).
        if store.peek(src, |_| ()).is_none() {
            return push_error(out, NO_SUCH_KEY.as_bytes());
        }
        return push_error(out, super::strings::KEY_INVALID.as_bytes());
    }
    let r = store.rename(src, dst, nx);
    if let Ok(true) = r {
        // A client blocked on the destination (BLPOP, BZPOPMIN …) is
        // served, as Redis's dbAdd signals the key ready. Whatever the
        // kind: a client woken for a key of another kind stays blocked
        // (blocking.rs), as Redis signals lists and sorted sets only.
        ctx.ks.host.signal(dst);
        ctx.notify(notify::GENERIC, "rename_from", src);
        ctx.notify(notify::GENERIC, "rename_to", dst);
    }
    match r {
        Ok(true) if nx => push_int(out, 1),
        Ok(true) => push_simple(out, "OK"),
        Ok(false) => push_int(out, 0),
        Err(amalgam_engine::Error::NotFound) | Err(amalgam_engine::Error::BadKey) => {
            push_error(out, NO_SUCH_KEY.as_bytes())
        }
        Err(e) => engine_error(e, out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_replies() {
        let now = 1_700_000_000_300;
        assert_eq!(ttl_reply(Cmd::Ttl, None, now), -2);
        assert_eq!(ttl_reply(Cmd::Pttl, Some(Expiry::Never), now), -1);
        let at = Some(Expiry::At(1_700_000_101));
        assert_eq!(ttl_reply(Cmd::Ttl, at, now), 101, "100.7 s rounds to 101, as in Redis");
        assert_eq!(ttl_reply(Cmd::Pttl, at, now), 100_700);
        assert_eq!(ttl_reply(Cmd::Expiretime, at, now), 1_700_000_101);
        assert_eq!(ttl_reply(Cmd::Pexpiretime, at, now), 1_700_000_101_000);
        let at = Some(Expiry::AtMillis(1_700_000_000_499));
        assert_eq!(ttl_reply(Cmd::Pttl, at, now), 199);
        assert_eq!(ttl_reply(Cmd::Ttl, at, now), 0);
        assert_eq!(ttl_reply(Cmd::Expiretime, at, now), 1_700_000_000);
        assert_eq!(ttl_reply(Cmd::Pexpiretime, at, now), 1_700_000_000_499);
        let at = Some(Expiry::AtMillis(1_700_000_000_500));
        assert_eq!(ttl_reply(Cmd::Expiretime, at, now), 1_700_000_001, "rounded, as Redis does");
        assert_eq!(ttl_reply(Cmd::Pttl, at, now + 1_000), 0, "never negative");
    }
}
