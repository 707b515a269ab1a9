//! String commands: SET and its variants, GETSET GETDEL GETEX, MSET
//! MSETNX, the counters, APPEND STRLEN GETRANGE SETRANGE. (GET and MGET
//! run batched, in `resp.rs`.)
//!
//! Each command that reads and writes a key does both under the key's
//! bucket lock through `Store::update`, so it is atomic per key as in
//! Redis. Commands over many keys (MSET, MSETNX) run with all their keys
//! held (`resp/multi.rs`): no client sees some of an MSET's keys written
//! and not the rest.

use super::typed::WRONGTYPE;
use super::{int_arg, is, null, Arg, Ctx};
use crate::notify;
use crate::received::Receiving;
use amalgam_engine::{Error, Expiry, ItemRef, NewValue, Update};
use amalgam_protocol::resp::{err, push_bulk, push_error, push_int, push_null, push_simple, string2ll};

use super::table::Cmd;

/// The error for a key the engine cannot hold (Redis allows any key up to
/// 512 MB, the empty one included; memcached's limit applies here).
pub(crate) const KEY_INVALID: &str = "ERR invalid key: Amalgam keys are 1 to 250 bytes";

/// Runs a string command. `prepared`: a large value received straight
/// into its item for the SET at the front of the read buffer (the
/// server's `inplace.rs`), which that SET takes.
pub fn run(ctx: &mut Ctx<'_>, cmd: Cmd, args: &[Arg<'_>], prepared: &mut Option<Receiving>, out: &mut Vec<u8>) {
    match cmd {
        Cmd::Set => set(ctx, args, prepared, out),
        Cmd::Setnx => match ctx.ks.store.add(&args[1], &args[2], 0, Expiry::Never) {
            Ok(_) => {
                ctx.notify(notify::STRING, "set", &args[1]);
                push_int(out, 1)
            }
            Err(Error::NotStored) => push_int(out, 0),
            Err(e) => engine_error(e, out),
        },
        Cmd::Setex | Cmd::Psetex => {
            let (unit, name) = if cmd == Cmd::Setex { (Unit::Ex, "setex") } else { (Unit::Px, "psetex") };
            match expire_at_ms(&args[2], unit, name) {
                Ok(at) => match ctx.ks.store.set(&args[1], &args[3], 0, deadline(at)) {
                    Ok(_) => {
                        ctx.notify(notify::STRING, "set", &args[1]);
                        ctx.notify(notify::GENERIC, "expire", &args[1]);
                        push_simple(out, "OK")
                    }
                    Err(e) => engine_error(e, out),
                },
                Err(e) => push_error(out, e.as_bytes()),
            }
        }
        Cmd::Getset => getset(ctx, args, out),
        Cmd::Getdel => getdel(ctx, args, out),
        Cmd::Getex => getex(ctx, args, out),
        Cmd::Mset => mset(ctx, args, out),
        Cmd::Msetnx => msetnx(ctx, args, out),
        Cmd::Incr => incr_by(ctx, &args[1], 1, out),
        Cmd::Decr => incr_by(ctx, &args[1], -1, out),
        Cmd::Incrby | Cmd::Decrby => match int_arg(&args[2]) {
            None => push_error(out, err::NOT_INTEGER.as_bytes()),
            Some(i64::MIN) if cmd == Cmd::Decrby => push_error(out, err::DECR_OVERFLOW.as_bytes()),
            Some(d) => incr_by(ctx, &args[1], if cmd == Cmd::Decrby { -d } else { d }, out),
        },
        Cmd::Incrbyfloat => incrbyfloat(ctx, args, out),
        Cmd::Append => append(ctx, args, out),
        Cmd::Strlen => match ctx.ks.store.get(&args[1], |it| is_string(&it).then(|| it.value().len())) {
            Some(None) => push_error(out, WRONGTYPE.as_bytes()),
            n => push_int(out, n.flatten().unwrap_or(0) as i64),
        },
        // SUBSTR: GETRANGE's old name, still served by Redis 7.
        Cmd::Getrange | Cmd::Substr => getrange(ctx, args, out),
        Cmd::Setrange => setrange(ctx, args, out),
        _ => {}
    }
    if matches!(cmd, Cmd::Set | Cmd::Setnx | Cmd::Setex | Cmd::Psetex | Cmd::Getset | Cmd::Mset | Cmd::Msetnx) {
        crate::counters::bump(&ctx.ks.counters.cmd_set, 1);
    }
}

/// An engine refusal as a Redis error.
pub fn engine_error(e: Error, out: &mut Vec<u8>) {
    let m: &str = match e {
        Error::BadKey => KEY_INVALID,
        Error::TooLarge => err::STRING_TOO_LONG,
        Error::OutOfMemory => err::OOM,
        // Not produced by the operations used here.
        Error::NotStored | Error::Exists | Error::NotFound | Error::NonNumeric => "ERR operation failed",
    };
    push_error(out, m.as_bytes());
}

/// How an expiry argument counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unit {
    /// Relative seconds (EX, EXPIRE).
    Ex,
    /// Relative milliseconds (PX, PEXPIRE).
    Px,
    /// Unix seconds (EXAT, EXPIREAT).
    Exat,
    /// Unix milliseconds (PXAT, PEXPIREAT).
    Pxat,
}

impl Unit {
    pub(crate) fn seconds(self) -> bool {
        matches!(self, Unit::Ex | Unit::Exat)
    }

    pub(crate) fn relative(self) -> bool {
        matches!(self, Unit::Ex | Unit::Px)
    }
}

/// Redis's `getExpireMillisecondsOrReply` for SET, SETEX, PSETEX, GETEX:
/// a positive number, converted to a unix time in milliseconds without
/// overflow; the error names the command.
pub(crate) fn expire_at_ms(arg: &[u8], unit: Unit, command: &str) -> Result<i64, String> {
    let Some(mut ms) = int_arg(arg) else { return Err(err::NOT_INTEGER.to_string()) };
    let invalid = || format!("ERR invalid expire time in '{command}' command");
    if ms <= 0 || (unit.seconds() && ms > i64::MAX / 1000) {
        return Err(invalid());
    }
    if unit.seconds() {
        ms *= 1000;
    }
    if unit.relative() {
        let now = super::now_ms();
        if ms > i64::MAX - now {
            return Err(invalid());
        }
        ms += now;
    }
    Ok(ms)
}

/// The engine's expiry for a deadline in unix milliseconds, exact to the
/// millisecond (clamped at u32::MAX seconds, 2106-02-07); a deadline
/// already past is an expiry the engine treats as gone.
pub(crate) fn deadline(at_ms: i64) -> Expiry {
    if at_ms <= super::now_ms() {
        return Expiry::At(1);
    }
    Expiry::at_millis(u64::try_from(at_ms).unwrap_or(0))
}

/// SET's and GETEX's options, as Redis's
/// `parseExtendedStringArgumentsOrReply` accepts them.
#[derive(Default)]
struct Options<'a> {
    nx: bool,
    xx: bool,
    get: bool,
    keepttl: bool,
    persist: bool,
    expire: Option<(Unit, &'a [u8])>,
}

/// Parses options from `args[from..]`; Err is a syntax error. `set`:
/// SET's options, else GETEX's.
fn options<'a>(args: &'a [Arg<'_>], from: usize, set: bool) -> Result<Options<'a>, ()> {
    let mut o = Options::default();
    let mut j = from;
    while j < args.len() {
        let opt: &[u8] = &args[j];
        let next: Option<&'a [u8]> = args.get(j + 1).map(|a| &a[..]);
        let unit = o.expire.map(|(u, _)| u);
        let other_expiry = |u: Unit| unit.is_some_and(|v| v != u);
        if is(opt, "nx") && !o.xx && set {
            o.nx = true;
        } else if is(opt, "xx") && !o.nx && set {
            o.xx = true;
        } else if is(opt, "get") && set {
            o.get = true;
        } else if is(opt, "keepttl") && !o.persist && unit.is_none() && set {
            o.keepttl = true;
        } else if is(opt, "persist") && !set && unit.is_none() && !o.keepttl {
            o.persist = true;
        } else if let (Some(u), Some(n)) = (expiry_unit(opt), next) {
            if o.keepttl || o.persist || other_expiry(u) {
                return Err(());
            }
            o.expire = Some((u, n));
            j += 1;
        } else {
            return Err(());
        }
        j += 1;
    }
    Ok(o)
}

fn expiry_unit(opt: &[u8]) -> Option<Unit> {
    [("ex", Unit::Ex), ("px", Unit::Px), ("exat", Unit::Exat), ("pxat", Unit::Pxat)]
        .into_iter()
        .find(|(n, _)| is(opt, n))
        .map(|(_, u)| u)
}

fn set(ctx: &mut Ctx<'_>, args: &[Arg<'_>], prepared: &mut Option<Receiving>, out: &mut Vec<u8>) {
    let Ok(o) = options(args, 3, true) else { return push_error(out, err::SYNTAX.as_bytes()) };
    let expiry = match o.expire {
        Some((unit, a)) => match expire_at_ms(a, unit, "set") {
            Ok(at) => deadline(at),
            Err(e) => return push_error(out, e.as_bytes()),
        },
        None => Expiry::Never,
    };
    // A large value received straight into its item (`inplace.rs`): the
    // request's value argument was given as empty.
    if let Some(value) = prepared.take() {
        if args[2].is_empty() && value.key() == &args[1][..] {
            if set_prepared(ctx, &o, expiry, value, out) {
                notify_set(ctx, &args[1], o.expire.is_some());
            }
            return;
        }
    }
    let store = &ctx.ks.store;
    let (key, value): (&[u8], &[u8]) = (&args[1], &args[2]);
    if !o.get && !o.keepttl {
        let r = if o.nx {
            store.add(key, value, 0, expiry)
        } else if o.xx {
            store.replace(key, value, 0, expiry)
        } else {
            store.set(key, value, 0, expiry)
        };
        return match r {
            Ok(_) => {
                notify_set(ctx, key, o.expire.is_some());
                push_simple(out, "OK")
            }
            Err(Error::NotStored) => null(ctx, out),
            Err(e) => engine_error(e, out),
        };
    }
    let proto = ctx.proto();
    let mark = out.len();
    let r = store.update(key, |old| {
        // `update` may run this again (a retry after the cache found no
        // free segment): only the last run's reply stays.
        out.truncate(mark);
        if o.get {
            match old {
                // SET … GET reads the old value: a collection is refused.
                Some(it) if !is_string(&it) => {
                    push_error(out, WRONGTYPE.as_bytes());
                    return (Update::Keep, false);
                }
                Some(it) => push_bulk(out, it.value()),
                None => push_null(out, proto),
            }
        }
        let found = old.is_some();
        if (o.nx && found) || (o.xx && !found) {
            return (Update::Keep, false);
        }
        let expiry = if o.keepttl { old.map_or(Expiry::Never, |it| it.expiry()) } else { expiry };
        (Update::Put { value: NewValue::Bytes(value), flags: 0, expiry, fresh_cas: true, marks: 0 }, true)
    });
    if let Ok((true, _)) = r {
        notify_set(ctx, key, o.expire.is_some());
    }
    match r {
        Ok((_, _)) if o.get => {}
        Ok((true, _)) => push_simple(out, "OK"),
        Ok((false, _)) => push_null(out, proto),
        Err(e) => {
            out.truncate(mark);
            engine_error(e, out);
        }
    }
}

/// [`set`] of a value received in place: the same decisions, under the
/// key's bucket lock, and the block it arrived in is published as it is.
fn set_prepared(ctx: &mut Ctx<'_>, o: &Options<'_>, expiry: Expiry, value: Receiving, out: &mut Vec<u8>) -> bool {
    let proto = ctx.proto();
    let mark = out.len();
    let store = &ctx.ks.store;
    let r = value.publish(|value| {
        store.put_prepared(value, |old| {
            if o.get {
                match old {
                    // SET … GET reads the old value: a collection is refused.
                    Some(it) if !is_string(&it) => {
                        push_error(out, WRONGTYPE.as_bytes());
                        return None;
                    }
                    Some(it) => push_bulk(out, it.value()),
                    None => push_null(out, proto),
                }
            }
            let found = old.is_some();
            if (o.nx && found) || (o.xx && !found) {
                return None;
            }
            let expiry = if o.keepttl { old.map_or(Expiry::Never, |it| it.expiry()) } else { expiry };
            Some((0, expiry))
        })
    });
    let written = matches!(r, Ok(Some(_)));
    match r {
        Ok(_) if o.get => {}
        Ok(Some(_)) => push_simple(out, "OK"),
        Ok(None) => push_null(out, proto),
        Err(e) => {
            out.truncate(mark);
            engine_error(e, out);
        }
    }
    written
}

/// SET's events: `set`, and `expire` when it gave a time to live.
fn notify_set(ctx: &Ctx<'_>, key: &[u8], expire: bool) {
    ctx.notify(notify::STRING, "set", key);
    if expire {
        ctx.notify(notify::GENERIC, "expire", key);
    }
}

fn getset(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let proto = ctx.proto();
    let mark = out.len();
    let value: &[u8] = &args[2];
    let r = ctx.ks.store.update(&args[1], |old| {
        out.truncate(mark); // may run again: see `set`
        match old {
            Some(it) if !is_string(&it) => {
                push_error(out, WRONGTYPE.as_bytes());
                return (Update::Keep, false);
            }
            Some(it) => push_bulk(out, it.value()),
            None => push_null(out, proto),
        }
        (
            Update::Put { value: NewValue::Bytes(value), flags: 0, expiry: Expiry::Never, fresh_cas: true, marks: 0 },
            true,
        )
    });
    match r {
        Ok((true, _)) => ctx.notify(notify::STRING, "set", &args[1]),
        Ok(_) => {}
        Err(e) => {
            out.truncate(mark);
            engine_error(e, out);
        }
    }
}

fn getdel(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let proto = ctx.proto();
    let mark = out.len();
    let r = ctx.ks.store.update(&args[1], |old| {
        out.truncate(mark); // may run again: see `set`
        match old {
            Some(it) if !is_string(&it) => {
                push_error(out, WRONGTYPE.as_bytes());
                (Update::Keep, false)
            }
            Some(it) => {
                push_bulk(out, it.value());
                (Update::Remove, true)
            }
            None => {
                push_null(out, proto);
                (Update::Keep, false)
            }
        }
    });
    if let Ok((true, _)) = r {
        ctx.notify(notify::GENERIC, "del", &args[1]);
    }
    if r.is_err() {
        // Only a key the engine cannot hold: it is not there.
        push_null(out, proto);
    }
}

fn getex(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let Ok(o) = options(args, 2, false) else { return push_error(out, err::SYNTAX.as_bytes()) };
    let proto = ctx.proto();
    let store = &ctx.ks.store;
    if o.expire.is_none() && !o.persist {
        let r = store.get(&args[1], |it| {
            if !is_string(&it) {
                return push_error(out, WRONGTYPE.as_bytes());
            }
            push_bulk(out, it.value())
        });
        if r.is_none() {
            push_null(out, proto);
        }
        return;
    }
    // Redis answers a missing key before it looks at the expiry.
    let new_expiry = match o.expire {
        Some((unit, a)) => expire_at_ms(a, unit, "getex").map(deadline),
        None => Ok(Expiry::Never),
    };
    let mark = out.len();
    let r = store.update(&args[1], |old| {
        out.truncate(mark); // may run again: see `set`
        let Some(it) = old else {
            push_null(out, proto);
            return (Update::Keep, None);
        };
        if !is_string(&it) {
            push_error(out, WRONGTYPE.as_bytes());
            return (Update::Keep, None);
        }
        match &new_expiry {
            Err(e) => {
                push_error(out, e.as_bytes());
                (Update::Keep, None)
            }
            Ok(_) if o.persist && it.expiry() == Expiry::Never => {
                push_bulk(out, it.value());
                (Update::Keep, None)
            }
            Ok(e) => {
                push_bulk(out, it.value());
                let put = Update::Put {
                    value: NewValue::Same,
                    flags: it.flags(),
                    expiry: *e,
                    fresh_cas: false,
                    marks: it.marks(),
                };
                // A deadline already past deletes the key (Redis: `del`).
                let event = match e {
                    _ if o.persist => "persist",
                    e if e.is_expired_at_millis(super::now_ms() as u64) => "del",
                    _ => "expire",
                };
                (put, Some(event))
            }
        }
    });
    if let Ok((Some(event), _)) = r {
        ctx.notify(notify::GENERIC, event, &args[1]);
    }
    if let Err(e) = r {
        out.truncate(mark);
        if e == Error::BadKey {
            push_null(out, proto);
        } else {
            engine_error(e, out);
        }
    }
}

/// True if a key of MSET's or MSETNX's pairs is one the engine refuses
/// (empty or longer than `KEY_BYTES_MAX`): they answer the error before
/// writing anything, so none of the pairs before it is written either.
fn bad_key_among(pairs: &[Arg<'_>]) -> bool {
    pairs.chunks_exact(2).any(|p| amalgam_engine::check_key(&p[0]).is_err())
}

fn mset(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    if args.len() % 2 == 0 {
        return super::wrong_arity("mset", out);
    }
    if bad_key_among(&args[1..]) {
        return push_error(out, KEY_INVALID.as_bytes());
    }
    for pair in args[1..].chunks_exact(2) {
        if let Err(e) = ctx.ks.store.set(&pair[0], &pair[1], 0, Expiry::Never) {
            return engine_error(e, out);
        }
        ctx.notify(notify::STRING, "set", &pair[0]);
    }
    push_simple(out, "OK");
}

fn msetnx(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    if args.len() % 2 == 0 {
        return super::wrong_arity("msetnx", out);
    }
    if bad_key_among(&args[1..]) {
        return push_error(out, KEY_INVALID.as_bytes());
    }
    let store = &ctx.ks.store;
    let any = {
        let reader = store.reader();
        args[1..].chunks_exact(2).any(|pair| reader.get(&pair[0], |_| ()).is_some())
    };
    if any {
        return push_int(out, 0);
    }
    let mut all = true;
    // Keys this command has added: a key named twice takes its last value,
    // as in Redis (built only when a key is found present).
    let mut added: Option<std::collections::HashSet<&[u8]>> = None;
    for (i, pair) in args[1..].chunks_exact(2).enumerate() {
        let (key, value): (&[u8], &[u8]) = (&pair[0], &pair[1]);
        let r = match store.add(key, value, 0, Expiry::Never) {
            Err(Error::NotStored) => {
                let mine = added
                    .get_or_insert_with(|| args[1..1 + 2 * i].chunks_exact(2).map(|p| &p[0][..]).collect())
                    .contains(key);
                if mine {
                    store.set(key, value, 0, Expiry::Never)
                } else {
                    // Set by another client since the check.
                    all = false;
                    continue;
                }
            }
            r => r,
        };
        match r {
            Ok(_) => {
                ctx.notify(notify::STRING, "set", key);
                if let Some(a) = added.as_mut() {
                    a.insert(key);
                }
            }
            Err(e) => return engine_error(e, out),
        }
    }
    push_int(out, i64::from(all));
}

/// INCR, DECR, INCRBY, DECRBY: a signed 64-bit counter, created at 0,
/// keeping the key's TTL and flags; Redis's overflow check.
fn incr_by(ctx: &mut Ctx<'_>, key: &[u8], delta: i64, out: &mut Vec<u8>) {
    let r = ctx.ks.store.update(key, |old| {
        let (cur, flags, expiry) = match old {
            None => (0, 0, Expiry::Never),
            Some(it) if !is_string(&it) => return (Update::Keep, Err(WRONGTYPE)),
            Some(it) => match string2ll(it.value()) {
                Some(v) => (v, it.flags(), it.expiry()),
                None => return (Update::Keep, Err(err::NOT_INTEGER)),
            },
        };
        let Some(new) = cur.checked_add(delta) else { return (Update::Keep, Err(err::OVERFLOW)) };
        let value = NewValue::Owned(new.to_string().into_bytes());
        (Update::Put { value, flags, expiry, fresh_cas: true, marks: 0 }, Ok(new))
    });
    match r {
        Ok((Ok(n), _)) => {
            ctx.notify(notify::STRING, "incrby", key);
            push_int(out, n)
        }
        Ok((Err(m), _)) => push_error(out, m.as_bytes()),
        Err(e) => engine_error(e, out),
    }
}

/// INCRBYFLOAT, in Redis's `long double` to the last digit (the same
/// emulation as HINCRBYFLOAT, `amalgam_types::hash::ld`: x87 extended
/// precision, `%.17Lf` with trailing zeros trimmed). In `f64` a counter
/// near 10^15 would not move by 0.4, and 0.1 + 0.2 would print
/// 0.30000000000000004. Redis's order of checks: the key's kind, then
/// its value, then the increment; an infinite increment is refused only
/// as the infinite sum it makes.
fn incrbyfloat(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    use amalgam_types::hash::ld;
    let incr: &[u8] = &args[2];
    let r = ctx.ks.store.update(&args[1], |old| {
        let (cur, flags, expiry) = match old {
            None => (ld::Ld::ZERO, 0, Expiry::Never),
            Some(it) if !is_string(&it) => return (Update::Keep, Err(WRONGTYPE)),
            Some(it) => match ld::parse(it.value()) {
                Some(v) => (v, it.flags(), it.expiry()),
                None => return (Update::Keep, Err(err::NOT_FLOAT)),
            },
        };
        let Some(incr) = ld::parse(incr) else { return (Update::Keep, Err(err::NOT_FLOAT)) };
        let Some(sum) = ld::add(cur, incr) else { return (Update::Keep, Err(err::NAN_OR_INF)) };
        let text = ld::format_human(sum);
        let put = Update::Put { value: NewValue::Owned(text.clone()), flags, expiry, fresh_cas: true, marks: 0 };
        (put, Ok(text))
    });
    match r {
        Ok((Ok(text), _)) => {
            ctx.notify(notify::STRING, "incrbyfloat", &args[1]);
            push_bulk(out, &text)
        }
        Ok((Err(m), _)) => push_error(out, m.as_bytes()),
        Err(e) => engine_error(e, out),
    }
}

fn append(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let data: &[u8] = &args[2];
    let max = ctx.limits.bulk_bytes_max;
    let r = ctx.ks.store.update(&args[1], |old| match old {
        None => (
            Update::Put { value: NewValue::Bytes(data), flags: 0, expiry: Expiry::Never, fresh_cas: true, marks: 0 },
            Ok(data.len()),
        ),
        Some(it) if !is_string(&it) => (Update::Keep, Err(WRONGTYPE)),
        Some(it) => {
            let len = it.value().len() + data.len();
            if len > max {
                return (Update::Keep, Err(err::STRING_TOO_LONG));
            }
            let put = Update::Put {
                value: NewValue::Concat(data, true),
                flags: it.flags(),
                expiry: it.expiry(),
                fresh_cas: true,
                marks: 0,
            };
            (put, Ok(len))
        }
    });
    match r {
        Ok((Ok(n), _)) => {
            ctx.notify(notify::STRING, "append", &args[1]);
            push_int(out, n as i64)
        }
        Ok((Err(m), _)) => push_error(out, m.as_bytes()),
        Err(e) => engine_error(e, out),
    }
}

fn getrange(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let (Some(start), Some(end)) = (int_arg(&args[2]), int_arg(&args[3])) else {
        return push_error(out, err::NOT_INTEGER.as_bytes());
    };
    let hit = ctx.ks.store.get(&args[1], |it| {
        if !is_string(&it) {
            return push_error(out, WRONGTYPE.as_bytes());
        }
        let v = it.value();
        let len = v.len() as i64;
        // Redis 7.0's getrangeCommand, step by step.
        if start < 0 && end < 0 && start > end {
            return push_bulk(out, b"");
        }
        let (mut s, mut e) = (start, end);
        if s < 0 {
            s += len;
        }
        if e < 0 {
            e += len;
        }
        s = s.max(0);
        e = e.max(0);
        if e >= len {
            e = len - 1;
        }
        if s > e || len == 0 {
            push_bulk(out, b"");
        } else {
            push_bulk(out, &v[s as usize..=e as usize]);
        }
    });
    if hit.is_none() {
        push_bulk(out, b"");
    }
}

fn setrange(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let Some(offset) = int_arg(&args[2]) else { return push_error(out, err::NOT_INTEGER.as_bytes()) };
    if offset < 0 {
        return push_error(out, err::OFFSET_RANGE.as_bytes());
    }
    let value: &[u8] = &args[3];
    // Redis's checkStringLength, against the item size; checked before
    // anything is allocated.
    let fits = (offset as u64).saturating_add(value.len() as u64) <= ctx.limits.bulk_bytes_max as u64;
    let r = ctx.ks.store.update(&args[1], |old| {
        if old.is_some_and(|it| !is_string(&it)) {
            return (Update::Keep, Err(WRONGTYPE));
        }
        let current: &[u8] = old.map_or(&[][..], |it| it.value());
        if value.is_empty() {
            return (Update::Keep, Ok((current.len(), false)));
        }
        if !fits {
            return (Update::Keep, Err(err::STRING_TOO_LONG));
        }
        let at = offset as usize;
        let mut v = current.to_vec();
        if v.len() < at + value.len() {
            v.resize(at + value.len(), 0);
        }
        v[at..at + value.len()].copy_from_slice(value);
        let len = v.len();
        let (flags, expiry) = old.map_or((0, Expiry::Never), |it| (it.flags(), it.expiry()));
        (Update::Put { value: NewValue::Owned(v), flags, expiry, fresh_cas: true, marks: 0 }, Ok((len, true)))
    });
    match r {
        Ok((Ok((n, written)), _)) => {
            if written {
                ctx.notify(notify::STRING, "setrange", &args[1]);
            }
            push_int(out, n as i64)
        }
        Ok((Err(m), _)) => push_error(out, m.as_bytes()),
        Err(e) => engine_error(e, out),
    }
}

/// True if the item is a string: not a collection (`typed.rs`), which
/// string commands answer with WRONGTYPE.
pub fn is_string(it: &ItemRef<'_>) -> bool {
    it.tag() == amalgam_engine::TAG_BYTES
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines_keep_their_milliseconds() {
        let now = super::super::now_ms();
        assert_eq!(deadline(now - 1), Expiry::At(1));
        let at = now + 1500;
        assert_eq!(deadline(at).unix_millis(), Some(at as u64));
        let whole = (now / 1000 + 2) * 1000;
        assert_eq!(deadline(whole), Expiry::At((whole / 1000) as u32));
        assert_eq!(deadline(i64::MAX), Expiry::At(u32::MAX));
    }
}
