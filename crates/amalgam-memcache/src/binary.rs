//! Executes memcached's binary protocol (`amalgam_protocol::binary`) on the
//! engine: a connection whose first byte is `0x80` is served here for its
//! whole life (`worker.rs`, `Conn::process`).
//!
//! Replies are memcached 1.6.18's: statuses, CAS values (the stored item's
//! on success, 0 on every error), extras (the flags of a hit), keys (getk,
//! gatk and their misses) and error bodies. Runs of get/getq/getk/getkq —
//! a client's multi-get is getq/getkq … noop — go through the engine's
//! batched lookup as the text protocol's gets do (MICA §5.3).
//!
//! ## Where Amalgam differs from memcached
//! * No SASL: the SASL opcodes answer `Unknown command`, as memcached
//!   started without `-S` does.
//! * `stat` answers the groups the text protocol's `stats` answers
//!   (`exec.rs`); a group the text protocol refuses answers `Not found`,
//!   as memcached does for a group it does not know. memcached matches
//!   `reset` and `settings` by prefix (`stat resetx` resets); Amalgam
//!   wants the exact word, as its text `stats` does.
//! * The value-size limit is the text protocol's (`-I` bytes of value);
//!   memcached's counts its own item header too, so a value a few dozen
//!   bytes under `-I` is `Too large.` there and stored here.

use crate::exec::{After, VERSION_LINE};
use crate::operator::DetailOp;
use crate::Ctx;
use amalgam_commands::counters::bump;
use amalgam_commands::counters::Counters;
use amalgam_commands::notify;
use amalgam_engine::{Error, Expiry, ItemRef, NewValue, Store, Update};
use amalgam_net::turn::{GETS_RUN_REQUESTS_MAX, REQUESTS_PER_ROUND_MAX};
use amalgam_protocol::binary::{
    parse, push_error, push_error_text, push_response, status, Command, ErrorReply, Parse, Request, StoreOp,
    ARITH_NO_CREATE,
};
use amalgam_protocol::text::Keys;

/// memcached's ENOMEM texts (its `out_of_memory` strings without the
/// `SERVER_ERROR ` prefix, which it strips for binary clients).
const OOM_ALLOCATING: &str = "Out of memory allocating item";
const OOM_INCREMENTING: &str = "Out of memory incrementing value";

/// Parses and executes what the read buffer holds for a binary
/// connection, as one batch: the counterpart of the text protocol's loop
/// in `worker.rs` (same bounds: at most [`REQUESTS_PER_ROUND_MAX`]
/// requests, stop at `WRITE_BUFFER_HIGH_BYTES` of pending output, and
/// nothing more runs once the output reaches the hard limit: `stop`,
/// `obuf::RoundStop`).
#[allow(clippy::too_many_arguments)]
pub fn process(
    ctx: &Ctx<'_>,
    buf: &[u8],
    rstart: &mut usize,
    rend: &mut usize,
    wbuf: &mut Vec<u8>,
    swallow: &mut usize,
    close_after_write: &mut bool,
) {
    let (limits, stop) = (ctx.w.limits, ctx.stop);
    let mut pos = *rstart;
    let mut gets: Vec<Request<'_>> = Vec::new();
    for _ in 0..REQUESTS_PER_ROUND_MAX {
        if crate::swallowing(buf, &mut pos, swallow) {
            break;
        }
        if !stop.parses(wbuf.len()) || pos == buf.len() {
            break;
        }
        let parsed = parse(&buf[pos..], limits);
        if ctx.w.routed {
            if let Parse::Done(req, n) = &parsed {
                if let Some(why) = misrouted(ctx, req) {
                    // Refused in cluster mode (route.rs), after the gets
                    // before it; quiet or not, as any error.
                    run_gets(ctx, &mut gets, wbuf);
                    pos += n;
                    push_response(wbuf, req.opcode, status::NOT_MY_VBUCKET, req.opaque, 0, &[], &[], why.as_bytes());
                    continue;
                }
            }
        }
        match parsed {
            Parse::Done(req @ Request { command: Command::Get { .. }, .. }, n) => {
                gets.push(req);
                pos += n;
                if gets.len() >= GETS_RUN_REQUESTS_MAX {
                    run_gets(ctx, &mut gets, wbuf);
                }
            }
            Parse::Done(req, n) => {
                run_gets(ctx, &mut gets, wbuf);
                if stop.crossed(wbuf.len()) {
                    break;
                }
                pos += n;
                if run_one(ctx, req, wbuf) == After::Close {
                    *close_after_write = true;
                    break;
                }
            }
            Parse::Incomplete => break,
            Parse::Fail(f) => {
                run_gets(ctx, &mut gets, wbuf);
                if stop.crossed(wbuf.len()) {
                    break;
                }
                if let Some(unlink) = f.unlink {
                    let mut scratch = [0; amalgam_protocol::KEY_BYTES_MAX];
                    if let Some(key) = unlink.key(&buf[pos..], &mut scratch) {
                        let _ = ctx.w.store.delete(crate::stored(key, &mut Vec::new()));
                    }
                }
                pos += f.consumed.min(buf.len() - pos);
                if let Some(reply) = f.reply {
                    push_error(wbuf, reply);
                }
                *swallow = f.swallow;
                if f.close {
                    *close_after_write = true;
                    break;
                }
            }
        }
    }
    run_gets(ctx, &mut gets, wbuf);
    *rstart = pos;
    if *swallow > 0 && *rstart == *rend {
        *rstart = 0;
        *rend = 0;
    }
}

/// In cluster mode: why `req`'s key is not served here (route.rs).
fn misrouted(ctx: &Ctx<'_>, req: &Request<'_>) -> Option<String> {
    let (key, write) = match req.command {
        Command::Get { key, .. } => (key, false),
        Command::Touch { key, .. }
        | Command::Gat { key, .. }
        | Command::Store { key, .. }
        | Command::Delete { key, .. }
        | Command::Arith { key, .. } => (key, true),
        _ => return None,
    };
    crate::route::binary(ctx, key, write)
}

/// The 4-byte extras of a hit: the item's client flags.
fn flags_extras(it: &ItemRef<'_>) -> [u8; 4] {
    it.flags().to_be_bytes()
}

/// Answers a get-family or gat-family miss: silent when quiet; the key
/// (as key and body, no text) for getk/gatk; `Not found` otherwise.
fn push_miss(out: &mut Vec<u8>, req: &Request<'_>, key: &[u8], quiet: bool, with_key: bool) {
    if quiet {
        return;
    }
    if with_key {
        push_response(out, req.opcode, status::KEY_ENOENT, req.opaque, 0, &[], key, &[]);
    } else {
        push_error(out, ErrorReply { opcode: req.opcode, status: status::KEY_ENOENT, opaque: req.opaque });
    }
}

/// Executes a run of get/getq/getk/getkq as one engine batch, answering
/// in order, and empties the run.
fn run_gets(ctx: &Ctx<'_>, gets: &mut Vec<Request<'_>>, out: &mut Vec<u8>) {
    if gets.is_empty() {
        return;
    }
    let (store, stats) = (ctx.w.store, ctx.w.counters);
    let mut keys: Vec<&[u8]> = gets
        .iter()
        .map(|r| match r.command {
            Command::Get { key, .. } => key,
            _ => &[][..],
        })
        .collect();
    let mut escaped = Vec::new();
    let _ = crate::stored_all(&mut keys, &mut escaped);
    let mut hits = 0u64;
    // `stats detail` (operator.rs): one load per batch, a branch per key.
    let detail = ctx.w.detail_on();
    store.get_batch(&keys, |i, item| {
        let req = &gets[i];
        let Command::Get { key, quiet, with_key } = req.command else { return };
        if detail {
            ctx.w.record_detail(DetailOp::Get(item.is_some_and(|it| it.tag() == amalgam_engine::TAG_BYTES)), key);
        }
        // A collection (engine object.rs) is not a memcached item.
        match item.filter(|it| it.tag() == amalgam_engine::TAG_BYTES) {
            Some(it) => {
                hits += 1;
                let k = if with_key { key } else { &[][..] };
                push_response(
                    out,
                    req.opcode,
                    status::SUCCESS,
                    req.opaque,
                    it.cas(),
                    &flags_extras(&it),
                    k,
                    it.value(),
                );
            }
            None => push_miss(out, req, key, quiet, with_key),
        }
    });
    let n = keys.len() as u64;
    bump(&stats.cmd_get, n);
    bump(&stats.get_hits, hits);
    bump(&stats.get_misses, n - hits);
    gets.clear();
}

/// memcached's `realtime()` of a binary expiration (unsigned seconds).
fn expiry(store: &Store, exptime: u32) -> Expiry {
    Expiry::from_memcached(i64::from(exptime), store.now())
}

/// Executes one request that is not a get.
fn run_one(ctx: &Ctx<'_>, req: Request<'_>, out: &mut Vec<u8>) -> After {
    let store = ctx.w.store;
    let error = |status| ErrorReply { opcode: req.opcode, status, opaque: req.opaque };
    // A success without a body: silent when quiet.
    let ok = |out: &mut Vec<u8>, cas: u64, quiet: bool| {
        if !quiet {
            push_response(out, req.opcode, status::SUCCESS, req.opaque, cas, &[], &[], &[]);
        }
    };
    let writes = matches!(
        req.command,
        Command::Touch { .. }
            | Command::Gat { .. }
            | Command::Store { .. }
            | Command::Delete { .. }
            | Command::Arith { .. }
            | Command::Flush { .. }
    );
    if writes && ctx.read_only() {
        // A read-only replica (crate::repl): memcached's binary protocol
        // has no such status; NOT_STORED with Redis's text says why.
        push_response(
            out,
            req.opcode,
            status::NOT_STORED,
            req.opaque,
            0,
            &[],
            &[],
            crate::exec::READONLY_REPLY.trim_start_matches("SERVER_ERROR ").as_bytes(),
        );
        return After::Continue;
    }
    // Each key in its stored form (database 0: lib.rs).
    let mut scratch = Vec::new();
    match req.command {
        Command::Get { .. } => {
            let mut one = vec![req];
            run_gets(ctx, &mut one, out);
        }
        Command::Touch { key, exptime } | Command::Gat { key, exptime, .. } => {
            let (quiet, with_key, value) = match req.command {
                Command::Gat { quiet, with_key, .. } => (quiet, with_key, true),
                _ => (false, false, false),
            };
            bump(&ctx.w.counters.cmd_touch, 1);
            let hit = store.touch_and_get(crate::stored(key, &mut scratch), expiry(store, exptime), |it| {
                let k = if with_key { key } else { &[][..] };
                let v = if value { it.value() } else { &[][..] };
                push_response(out, req.opcode, status::SUCCESS, req.opaque, it.cas(), &flags_extras(&it), k, v);
            });
            if ctx.w.detail_on() {
                ctx.w.record_detail(DetailOp::Get(matches!(hit, Some(Ok(())))), key);
            }
            if let Some(Ok(())) = hit {
                ctx.w.notify(notify::GENERIC, "expire", crate::stored(key, &mut scratch));
                bump(&ctx.w.counters.touch_hits, 1);
            } else {
                bump(&ctx.w.counters.touch_misses, 1);
                push_miss(out, &req, key, quiet, with_key);
            }
        }
        Command::Store { op, key, flags, exptime, value, quiet } => {
            bump(&ctx.w.counters.cmd_set, 1);
            if ctx.w.detail_on() {
                ctx.w.record_detail(DetailOp::Set, key);
            }
            let key = crate::stored(key, &mut scratch);
            let e = expiry(store, exptime);
            match run_store(store, ctx.w.counters, req.cas, op, key, flags, e, value) {
                Ok(cas) => {
                    let concat = matches!(op, StoreOp::Append | StoreOp::Prepend);
                    ctx.w.notify_store(concat, e != Expiry::Never, key);
                    bump(&ctx.w.counters.total_items, 1);
                    ok(out, cas, quiet);
                }
                Err(status::ENOMEM) => push_error_text(out, error(status::ENOMEM), OOM_ALLOCATING),
                Err(s) => push_error(out, error(s)),
            }
        }
        Command::Delete { key, quiet } => {
            if ctx.w.detail_on() {
                ctx.w.record_detail(DetailOp::Del, key);
            }
            let key = crate::stored(key, &mut scratch);
            let r = if req.cas == 0 {
                store.delete(key).map(|()| status::SUCCESS)
            } else {
                store
                    .update(key, |old| match old {
                        None => (Update::Keep, status::KEY_ENOENT),
                        Some(it) if it.cas() != req.cas => (Update::Keep, status::KEY_EEXISTS),
                        Some(_) => (Update::Remove, status::SUCCESS),
                    })
                    .map(|(s, _)| s)
            };
            match r {
                Ok(status::SUCCESS) => {
                    ctx.w.notify(notify::GENERIC, "del", key);
                    bump(&ctx.w.counters.delete_hits, 1);
                    ok(out, 0, quiet);
                }
                Ok(status::KEY_EEXISTS) => push_error(out, error(status::KEY_EEXISTS)),
                _ => {
                    bump(&ctx.w.counters.delete_misses, 1);
                    push_error(out, error(status::KEY_ENOENT));
                }
            }
        }
        Command::Arith { incr, key, delta, initial, exptime, quiet } => {
            let key = crate::stored(key, &mut scratch);
            if run_arith(store, ctx.w.counters, &req, incr, key, delta, initial, exptime, quiet, out) {
                ctx.w.notify(notify::STRING, "incrby", key);
            }
        }
        Command::Quit { quiet } => {
            ok(out, 0, quiet);
            return After::Close;
        }
        Command::Flush { exptime, quiet } => {
            bump(&ctx.w.counters.cmd_flush, 1);
            // As the text protocol's flush_all: memcached sets oldest_live
            // to realtime(delay) - 1.
            match expiry(store, exptime) {
                Expiry::At(t) if exptime > 0 => store.flush_all_at(t - 1),
                _ => store.flush_all(),
            }
            ctx.w.host.flushed();
            ok(out, 0, quiet);
        }
        Command::Noop => ok(out, 0, false),
        Command::Version => {
            let version = &VERSION_LINE["VERSION ".len()..];
            push_response(out, req.opcode, status::SUCCESS, req.opaque, 0, &[], &[], version.as_bytes());
        }
        Command::Stat { group } => run_stat(ctx, &req, group, out),
    }
    After::Continue
}

/// A store as memcached's `complete_update_bin` does it: a non-zero CAS
/// makes set/add/replace a compare-and-swap (missing: `Not found`;
/// changed: `Data exists for key.`) and guards append/prepend. Returns
/// the new item's CAS or the status to answer.
#[allow(clippy::too_many_arguments)]
fn run_store(
    store: &Store,
    stats: &Counters,
    cas: u64,
    op: StoreOp,
    key: &[u8],
    flags: u32,
    e: Expiry,
    value: &[u8],
) -> Result<u64, u16> {
    let concat = matches!(op, StoreOp::Append | StoreOp::Prepend);
    let r = if cas == 0 && op == StoreOp::Set {
        store.set(key, value, flags, e).map_err(Err)
    } else {
        let put = || Update::Put { value: NewValue::Bytes(value), flags, expiry: e, fresh_cas: true, marks: 0 };
        store
            .update(key, |old| match (op, old) {
                (StoreOp::Append | StoreOp::Prepend, None) => (Update::Keep, Err(status::NOT_STORED)),
                (StoreOp::Append | StoreOp::Prepend, Some(it)) if cas != 0 && cas != it.cas() => {
                    (Update::Keep, Err(status::KEY_EEXISTS))
                }
                (StoreOp::Append | StoreOp::Prepend, Some(it)) => {
                    let p = Update::Put {
                        value: NewValue::Concat(value, op == StoreOp::Append),
                        flags: it.flags(),
                        expiry: it.expiry(),
                        fresh_cas: true,
                        marks: 0,
                    };
                    (p, Ok(()))
                }
                (_, None) if cas != 0 => (Update::Keep, Err(status::KEY_ENOENT)),
                (_, Some(it)) if cas != 0 && cas != it.cas() => (Update::Keep, Err(status::KEY_EEXISTS)),
                (_, Some(_)) if cas != 0 => (put(), Ok(())),
                (StoreOp::Add, Some(_)) => (Update::Keep, Err(status::KEY_EEXISTS)),
                (StoreOp::Replace, None) => (Update::Keep, Err(status::KEY_ENOENT)),
                _ => (put(), Ok(())),
            })
            .map_err(Err)
            .and_then(|(r, new_cas)| match r {
                // An item stored already expired leaves no CAS: memcached
                // still answers the CAS it gave the item.
                Ok(()) => Ok(new_cas.unwrap_or(0)),
                Err(s) => Err(Ok(s)),
            })
    };
    if cas != 0 && !concat {
        match r {
            Ok(_) => bump(&stats.cas_hits, 1),
            Err(Ok(status::KEY_ENOENT)) => bump(&stats.cas_misses, 1),
            Err(Ok(status::KEY_EEXISTS)) => bump(&stats.cas_badval, 1),
            _ => {}
        }
    }
    match r {
        Ok(c) => Ok(c),
        Err(Ok(s)) => Err(s),
        // The engine refused: append/prepend answer `Not stored.` (their
        // allocation fails inside memcached's store step); a set drops the
        // old value so no stale data outlives a failed update.
        Err(Err(_)) if concat => Err(status::NOT_STORED),
        Err(Err(e)) => {
            if op == StoreOp::Set {
                let _ = store.delete(key);
            }
            Err(if e == Error::TooLarge { status::E2BIG } else { status::ENOMEM })
        }
    }
}

enum Arith {
    Done(u64),
    Miss,
    CasMismatch,
    NonNumeric,
}

/// incr/decr as memcached's `complete_incr_bin`: a missing counter is
/// created with `initial` (flags 0, the request's expiration) unless the
/// expiration is [`ARITH_NO_CREATE`]; the answer is the new value as 8
/// big-endian bytes with the item's new CAS.
#[allow(clippy::too_many_arguments)]
fn run_arith(
    store: &Store,
    stats: &Counters,
    req: &Request<'_>,
    incr: bool,
    key: &[u8],
    delta: u64,
    initial: u64,
    exptime: u32,
    quiet: bool,
    out: &mut Vec<u8>,
) -> bool {
    let error = |status| ErrorReply { opcode: req.opcode, status, opaque: req.opaque };
    let r = store.update(key, |old| match old {
        None if exptime == ARITH_NO_CREATE => (Update::Keep, Arith::Miss),
        None => {
            let p = Update::Put {
                value: NewValue::Owned(initial.to_string().into_bytes()),
                flags: 0,
                expiry: expiry(store, exptime),
                fresh_cas: true,
                marks: 0,
            };
            (p, Arith::Done(initial))
        }
        Some(it) if req.cas != 0 && req.cas != it.cas() => (Update::Keep, Arith::CasMismatch),
        Some(it) => {
            let Some(v) = amalgam_engine::counter_value(it.value()) else { return (Update::Keep, Arith::NonNumeric) };
            let number = if incr { v.wrapping_add(delta) } else { v.saturating_sub(delta) };
            let digits = crate::meta::counter_digits(number, it.value().len());
            let p = Update::Put {
                value: NewValue::Owned(digits),
                flags: it.flags(),
                expiry: it.expiry(),
                fresh_cas: true,
                marks: it.marks(),
            };
            (p, Arith::Done(number))
        }
    });
    let (hits, misses) =
        if incr { (&stats.incr_hits, &stats.incr_misses) } else { (&stats.decr_hits, &stats.decr_misses) };
    let done = matches!(r, Ok((Arith::Done(_), _)));
    match r {
        Ok((Arith::Done(number), cas)) => {
            bump(hits, 1);
            if !quiet {
                let body = number.to_be_bytes();
                push_response(out, req.opcode, status::SUCCESS, req.opaque, cas.unwrap_or(0), &[], &[], &body);
            }
        }
        Ok((Arith::Miss, _)) => {
            bump(misses, 1);
            push_error(out, error(status::KEY_ENOENT));
        }
        Ok((Arith::CasMismatch, _)) => push_error(out, error(status::KEY_EEXISTS)),
        Ok((Arith::NonNumeric, _)) => push_error(out, error(status::DELTA_BADVAL)),
        Err(_) => push_error_text(out, error(status::ENOMEM), OOM_INCREMENTING),
    }
    done
}

/// `stat`: the text protocol's `stats <group>` (one shared implementation,
/// the server's `admin::stats_command` through [`crate::Host::stats`]), each `STAT name value` line sent as a packet
/// with the name as key and the value as body, then the empty packet that
/// ends the list. `reset` answers only that packet; a group the text
/// protocol refuses answers `Not found`.
fn run_stat(ctx: &Ctx<'_>, req: &Request<'_>, group: &[u8], out: &mut Vec<u8>) {
    let mut text = Vec::new();
    ctx.w.host.stats(Keys::new(group), &mut text);
    let start = out.len();
    let mut ended = false;
    for line in text.split(|&b| b == b'\n').map(|l| l.strip_suffix(b"\r").unwrap_or(l)) {
        if let Some(stat) = line.strip_prefix(b"STAT ") {
            let cut = stat.iter().position(|&b| b == b' ').unwrap_or(stat.len());
            let (name, value) = (&stat[..cut], stat.get(cut + 1..).unwrap_or(&[]));
            push_response(out, req.opcode, status::SUCCESS, req.opaque, 0, &[], name, value);
        } else if line == b"END" || line == b"RESET" {
            ended = true;
            break;
        } else if !line.is_empty() {
            break;
        }
    }
    if ended {
        push_response(out, req.opcode, status::SUCCESS, req.opaque, 0, &[], &[], &[]);
    } else {
        out.truncate(start);
        push_error(out, ErrorReply { opcode: req.opcode, status: status::KEY_ENOENT, opaque: req.opaque });
    }
}
