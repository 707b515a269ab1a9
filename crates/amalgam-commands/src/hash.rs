//! Hash commands: HSET HSETNX HGET HMGET HMSET HDEL HLEN HSTRLEN HEXISTS
//! HKEYS HVALS HGETALL HINCRBY HINCRBYFLOAT HRANDFIELD HSCAN, with Redis
//! 7's replies and errors, as thin adapters from RESP arguments to
//! `amalgam_types::hash` through `typed.rs` (where the value lives and
//! how reads and writes reach it).

use super::table::Cmd;
use super::typed::{self, read, write, Access, Changed, Found, Refused};
use super::{int_arg, null, wrong_arity, Arg, Ctx};
use crate::notify;
use amalgam_protocol::resp::{err, push_array, push_bulk, push_error, push_int, push_map, push_simple, Proto};
use amalgam_types::hash::{self, Hash};
use amalgam_types::op::Op;
use amalgam_types::value::Value;
use amalgam_types::Kind;

/// Bound on HRANDFIELD's negative count (picks with repetition): each
/// pick is a reply element, so an unbounded count would let one command
/// build an unbounded reply. Redis bounds it only by `LONG_MAX / 2`;
/// past this Amalgam answers Redis's out-of-range error.
pub(crate) const RANDOM_PICKS_MAX: u64 = 1 << 24;

pub fn run(ctx: &mut Ctx<'_>, cmd: Cmd, args: &[Arg<'_>], out: &mut Vec<u8>) {
    match cmd {
        Cmd::Hset | Cmd::Hmset => hset(ctx, cmd, args, out),
        Cmd::Hsetnx => hsetnx(ctx, args, out),
        Cmd::Hget => {
            let r = read(ctx, &args[1], Kind::Hash, |h| match h {
                Found::Packed(b) => hash::packed_get(b, &args[2]).map(|v| push_bulk(out, v)).is_some(),
                Found::Large(v) => large(v).get(&args[2]).map(|v| push_bulk(out, v)).is_some(),
            });
            match r {
                Access::Done(true) => {}
                Access::Done(false) | Access::Absent => null(ctx, out),
                Access::WrongType => push_error(out, typed::WRONGTYPE.as_bytes()),
            }
        }
        Cmd::Hmget => {
            let fields = &args[2..];
            let proto = ctx.proto();
            let r = read(ctx, &args[1], Kind::Hash, |h| {
                push_array(out, fields.len());
                for f in fields {
                    let v = match &h {
                        Found::Packed(b) => hash::packed_get(b, f),
                        Found::Large(v) => large(v).get(f),
                    };
                    match v {
                        Some(v) => push_bulk(out, v),
                        None => amalgam_protocol::resp::push_null(out, proto),
                    }
                }
            });
            typed::or_reply(r, out, |out| {
                push_array(out, fields.len());
                for _ in fields {
                    amalgam_protocol::resp::push_null(out, proto);
                }
            });
        }
        Cmd::Hdel => {
            let fields = &args[2..];
            let r = write(ctx, &args[1], Kind::Hash, false, Some((notify::HASH, "hdel")), |v, _, log| {
                let h = hash_mut(v);
                let n = fields.iter().filter(|f| h.remove(f)).count();
                log.log(|| Op::HDel(fields.iter().map(|f| f.to_vec()).collect()));
                (if n > 0 { Changed::Yes } else { Changed::No }, n)
            });
            reply_count(r, out);
        }
        Cmd::Hlen => {
            let r = read(ctx, &args[1], Kind::Hash, |h| match h {
                Found::Packed(b) => hash::packed_len(b),
                Found::Large(v) => large(v).len(),
            });
            if let Some(n) = typed::or_reply(r, out, |out| push_int(out, 0)) {
                push_int(out, n as i64);
            }
        }
        Cmd::Hstrlen => {
            let r = read(ctx, &args[1], Kind::Hash, |h| match h {
                Found::Packed(b) => hash::packed_get(b, &args[2]).map_or(0, <[u8]>::len),
                Found::Large(v) => large(v).get(&args[2]).map_or(0, <[u8]>::len),
            });
            if let Some(n) = typed::or_reply(r, out, |out| push_int(out, 0)) {
                push_int(out, n as i64);
            }
        }
        Cmd::Hexists => {
            let r = read(ctx, &args[1], Kind::Hash, |h| match h {
                Found::Packed(b) => hash::packed_get(b, &args[2]).is_some(),
                Found::Large(v) => large(v).get(&args[2]).is_some(),
            });
            if let Some(found) = typed::or_reply(r, out, |out| push_int(out, 0)) {
                push_int(out, found as i64);
            }
        }
        Cmd::Hkeys | Cmd::Hvals | Cmd::Hgetall => all(ctx, cmd, &args[1], out),
        Cmd::Hincrby => {
            let Some(incr) = int_arg(&args[3]) else { return push_error(out, err::NOT_INTEGER.as_bytes()) };
            let field: &[u8] = &args[2];
            let r = write(ctx, &args[1], Kind::Hash, true, Some((notify::HASH, "hincrby")), |v, t, log| {
                match hash_mut(v).incr_by(field, incr, t) {
                    Ok(n) => {
                        // The result, not the increment (module notes of typed.rs).
                        log.log(|| Op::HSet(vec![(field.to_vec(), n.to_string().into_bytes())]));
                        (Changed::Yes, Ok(n))
                    }
                    Err(e) => (Changed::No, Err(e)),
                }
            });
            match r {
                Ok(Access::Done(Ok(n))) => push_int(out, n),
                Ok(Access::Done(Err(e))) => push_error(out, e.message().as_bytes()),
                Ok(a) => {
                    typed::or_reply(a, out, |_| {});
                }
                Err(e) => e.reply(out),
            }
        }
        Cmd::Hincrbyfloat => {
            let field: &[u8] = &args[2];
            let incr: &[u8] = &args[3];
            // Redis parses the increment before it looks up the key.
            if let Err(e) = hash::float_incr(incr) {
                return push_error(out, e.message().as_bytes());
            }
            let r =
                write(
                    ctx,
                    &args[1],
                    Kind::Hash,
                    true,
                    Some((notify::HASH, "hincrbyfloat")),
                    |v, t, log| match hash_mut(v).incr_by_float(field, incr, t) {
                        Ok(s) => {
                            // The value it set, as Redis's AOF logs HINCRBYFLOAT.
                            log.log(|| Op::HSet(vec![(field.to_vec(), s.clone())]));
                            (Changed::Yes, Ok(s))
                        }
                        Err(e) => (Changed::No, Err(e)),
                    },
                );
            match r {
                Ok(Access::Done(Ok(s))) => push_bulk(out, &s),
                Ok(Access::Done(Err(e))) => push_error(out, e.message().as_bytes()),
                Ok(a) => {
                    typed::or_reply(a, out, |_| {});
                }
                Err(e) => e.reply(out),
            }
        }
        Cmd::Hrandfield => hrandfield(ctx, args, out),
        Cmd::Hscan => hscan(ctx, args, out),
        _ => unreachable!("not a hash command: {cmd:?}"),
    }
}

/// The large hash inside a [`Value`] that `read` found to be a hash.
fn large(v: &Value) -> &Hash {
    match v {
        Value::Hash(h) => h,
        _ => unreachable!("typed::read checked the kind"),
    }
}

fn hash_mut(v: &mut Value) -> &mut Hash {
    match v {
        Value::Hash(h) => h,
        _ => unreachable!("typed::write checked the kind"),
    }
}

/// Replies with a count from a write that found nothing to do on an
/// absent key (0) or a wrong type.
fn reply_count(r: Result<Access<usize>, Refused>, out: &mut Vec<u8>) {
    match r {
        Ok(a) => {
            if let Some(n) = typed::or_reply(a, out, |out| push_int(out, 0)) {
                push_int(out, n as i64);
            }
        }
        Err(e) => e.reply(out),
    }
}

fn hset(ctx: &mut Ctx<'_>, cmd: Cmd, args: &[Arg<'_>], out: &mut Vec<u8>) {
    if args.len() % 2 != 0 {
        return wrong_arity(if cmd == Cmd::Hset { "hset" } else { "hmset" }, out);
    }
    let pairs = &args[2..];
    let r = write(ctx, &args[1], Kind::Hash, true, Some((notify::HASH, "hset")), |v, t, log| {
        let h = hash_mut(v);
        let added = pairs.chunks_exact(2).filter(|p| h.insert(&p[0], &p[1], t)).count();
        log.log(|| Op::HSet(pairs.chunks_exact(2).map(|p| (p[0].to_vec(), p[1].to_vec())).collect()));
        (Changed::Yes, added)
    });
    match r {
        Ok(Access::Done(n)) if cmd == Cmd::Hset => push_int(out, n as i64),
        Ok(Access::Done(_)) => push_simple(out, "OK"),
        Ok(a) => {
            typed::or_reply(a, out, |_| {});
        }
        Err(e) => e.reply(out),
    }
}

fn hsetnx(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let (field, value): (&[u8], &[u8]) = (&args[2], &args[3]);
    let r = write(ctx, &args[1], Kind::Hash, true, Some((notify::HASH, "hset")), |v, t, log| {
        let h = hash_mut(v);
        if h.contains(field) {
            (Changed::No, 0)
        } else {
            h.insert(field, value, t);
            log.log(|| Op::HSet(vec![(field.to_vec(), value.to_vec())]));
            (Changed::Yes, 1)
        }
    });
    reply_count(r, out);
}

/// HKEYS, HVALS, HGETALL: every field, value or pair, in the hash's
/// order (RESP3: HGETALL is a map).
fn all(ctx: &mut Ctx<'_>, cmd: Cmd, key: &[u8], out: &mut Vec<u8>) {
    let proto = ctx.proto();
    let out_stop = ctx.out_stop;
    let emit = |out: &mut Vec<u8>, n: usize, pairs: &mut dyn Iterator<Item = (&[u8], &[u8])>| {
        match cmd {
            Cmd::Hgetall => push_map(out, n, proto),
            _ => push_array(out, n),
        }
        for (f, v) in pairs {
            if out.len() >= out_stop {
                // Past the client's hard limit: unfinished, never sent
                // (`resp::process` closes the client).
                return;
            }
            match cmd {
                Cmd::Hkeys => push_bulk(out, f),
                Cmd::Hvals => push_bulk(out, v),
                _ => {
                    push_bulk(out, f);
                    push_bulk(out, v);
                }
            }
        }
    };
    let r = read(ctx, key, Kind::Hash, |h| match h {
        Found::Packed(b) => emit(out, hash::packed_len(b), &mut hash::packed_iter(b)),
        Found::Large(v) => emit(out, large(v).len(), &mut large(v).iter()),
    });
    typed::or_reply(r, out, |out| match cmd {
        Cmd::Hgetall => push_map(out, 0, proto),
        _ => push_array(out, 0),
    });
}

fn hrandfield(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let proto = ctx.proto();
    if args.len() == 2 {
        let r = read(ctx, &args[1], Kind::Hash, |h| {
            let mut picked = None;
            with_hash(h, |h| h.random_fields(-1, &mut typed::random, &mut |f, _| picked = Some(f.to_vec())));
            picked
        });
        match r {
            Access::Done(Some(f)) => push_bulk(out, &f),
            Access::Done(None) | Access::Absent => null(ctx, out),
            Access::WrongType => push_error(out, typed::WRONGTYPE.as_bytes()),
        }
        return;
    }
    // Redis 7.0.15's order of checks: the count (getRangeLongFromObject
    // over -LONG_MAX..=LONG_MAX), then the syntax, then WITHVALUES's
    // halved range, then the key (absent: an empty array, whatever the
    // count).
    let (count, with_values) = match typed::random_count_args(args, "withvalues") {
        Ok(a) => a,
        Err(e) => return push_error(out, e.as_bytes()),
    };
    // Amalgam also bounds the picks (RANDOM_PICKS_MAX), checked once the
    // key is found to hold a hash (None: past the bound).
    let too_many = count < 0 && count.unsigned_abs() > RANDOM_PICKS_MAX;
    let r = read(ctx, &args[1], Kind::Hash, |h| {
        if too_many {
            return None;
        }
        let mut picked: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        with_hash(h, |h| h.random_fields(count, &mut typed::random, &mut |f, v| picked.push((f.to_vec(), v.to_vec()))));
        Some(picked)
    });
    let Some(picked) = typed::or_reply(r, out, |out| push_array(out, 0)) else { return };
    let Some(picked) = picked else { return push_error(out, typed::OUT_OF_RANGE.as_bytes()) };
    if with_values && proto == Proto::Resp3 {
        push_array(out, picked.len());
        for (f, v) in &picked {
            push_array(out, 2);
            push_bulk(out, f);
            push_bulk(out, v);
        }
        return;
    }
    push_array(out, if with_values { picked.len() * 2 } else { picked.len() });
    for (f, v) in &picked {
        push_bulk(out, f);
        if with_values {
            push_bulk(out, v);
        }
    }
}

/// Runs `f` on the hash `h` found, decoding a compact one (bounded by the
/// listpack threshold) so that every operation has one code path.
fn with_hash<R>(h: Found<'_>, f: impl FnOnce(&Hash) -> R) -> R {
    match h {
        Found::Packed(b) => f(&Hash::from_packed_trusted(b)),
        Found::Large(v) => f(large(v)),
    }
}

fn hscan(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let scan = |h: Found<'_>, cursor, o: &typed::ScanArgs<'_>, kept: &mut Vec<(Vec<u8>, Vec<u8>)>| {
        with_hash(h, |h| {
            h.scan(cursor, o.count, &mut |f, v| {
                if o.matches(f) {
                    kept.push((f.to_vec(), v.to_vec()));
                }
            })
        })
    };
    typed::scan_command(ctx, args, Kind::Hash, out, scan, 2, |out, (f, v)| {
        push_bulk(out, f);
        push_bulk(out, v);
    });
}
