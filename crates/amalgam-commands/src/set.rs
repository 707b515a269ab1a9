//! Set commands: SADD SREM SMEMBERS SISMEMBER SMISMEMBER SCARD SPOP
//! SRANDMEMBER SMOVE SINTER SINTERCARD SUNION SDIFF SINTERSTORE
//! SUNIONSTORE SDIFFSTORE SSCAN, with Redis 7's replies and errors, as
//! thin adapters from RESP arguments to `amalgam_types::set` through
//! `typed.rs` (where the value lives and how reads and writes reach it).
//!
//! ## Several keys
//! There are no transactions yet (issue 19 item 2), so a command on
//! several keys takes their locks in turn, never together:
//! * SINTER, SUNION, SDIFF, SINTERCARD read each key in turn, copying
//!   each set out of its read (holding one object's read lock while
//!   taking another's could deadlock against writers), then compute. A
//!   missing key is an empty set; any key of another kind answers
//!   WRONGTYPE, as Redis checks every key. The result is each key's
//!   state at its own read, not one instant's.
//! * SINTERSTORE, SUNIONSTORE, SDIFFSTORE compute so, then replace the
//!   destination (whatever it holds, any kind; an empty result deletes
//!   it) under the destination's lock alone: not atomic across keys.
//! * SMOVE checks both keys' kinds first (Redis's order), removes the
//!   member under the source's lock, adds it under the destination's,
//!   and puts it back in the source if the add fails (as LMOVE does).
//!
//! RESP3: SMEMBERS, SINTER, SUNION, SDIFF and SPOP with a count reply
//! with a set (`~`), SRANDMEMBER with a count and SSCAN with arrays, as
//! Redis 7.0 does.

use super::hash::RANDOM_PICKS_MAX;
use super::table::Cmd;
use super::typed::{self, read, write, Access, Changed, Found, Refused};
use super::{int_arg, null, Arg, Ctx};
use crate::notify;
use amalgam_protocol::resp::{err, push_array, push_bulk, push_error, push_int, push_set, Proto};
use amalgam_types::op::Op;
use amalgam_types::set::{self, Member, Set};
use amalgam_types::value::Value;
use amalgam_types::Kind;

/// SPOP's reply to a count that is not a non-negative integer
/// (Redis's getPositiveLongFromObjectOrReply).
const SPOP_COUNT: &str = "ERR value is out of range, must be positive";
/// SRANDMEMBER's reply to a count of `LONG_MIN` (Redis's
/// getRangeLongFromObjectOrReply over -LONG_MAX..=LONG_MAX).
const COUNT_RANGE: &str = "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807";
/// SRANDMEMBER's reply to a negative count past [`RANDOM_PICKS_MAX`] on
/// an existing set (Amalgam's bound: Redis 7.0.15 tries to build such a
/// reply and runs out of memory).
const OUT_OF_RANGE: &str = "ERR value is out of range";
/// SINTERCARD's replies to a bad `numkeys` and `LIMIT`.
const NUMKEYS: &str = "ERR numkeys should be greater than 0";
const NUMKEYS_ARGS: &str = "ERR Number of keys can't be greater than number of args";
const LIMIT_NEGATIVE: &str = "ERR LIMIT can't be negative";

pub fn run(ctx: &mut Ctx<'_>, cmd: Cmd, args: &[Arg<'_>], out: &mut Vec<u8>) {
    match cmd {
        Cmd::Sadd => {
            let members = &args[2..];
            let r = write(ctx, &args[1], Kind::Set, true, Some((notify::SET, "sadd")), |v, t, log| {
                let s = set_mut(v);
                let n = members.iter().filter(|m| s.insert(m, t)).count();
                log.log(|| Op::SAdd(members.iter().map(|m| m.to_vec()).collect()));
                (if n > 0 { Changed::Yes } else { Changed::No }, n)
            });
            reply_count(r, out);
        }
        Cmd::Srem => {
            let members = &args[2..];
            let r = write(ctx, &args[1], Kind::Set, false, Some((notify::SET, "srem")), |v, _, log| {
                let s = set_mut(v);
                let n = members.iter().filter(|m| s.remove(m)).count();
                log.log(|| Op::SRem(members.iter().map(|m| m.to_vec()).collect()));
                (if n > 0 { Changed::Yes } else { Changed::No }, n)
            });
            reply_count(r, out);
        }
        Cmd::Smembers => {
            let (proto, stop) = (ctx.proto(), ctx.out_stop);
            let r = read(ctx, &args[1], Kind::Set, |s| match s {
                Found::Packed(b) => push_members(out, proto, stop, set::packed_len(b), set::packed_iter(b)),
                Found::Large(v) => push_members(out, proto, stop, large(v).len(), large(v).iter()),
            });
            typed::or_reply(r, out, |out| push_set(out, 0, proto));
        }
        Cmd::Sismember => {
            let r = read(ctx, &args[1], Kind::Set, |s| contains(&s, &args[2]));
            if let Some(found) = typed::or_reply(r, out, |out| push_int(out, 0)) {
                push_int(out, i64::from(found));
            }
        }
        Cmd::Smismember => {
            let members = &args[2..];
            let r = read(ctx, &args[1], Kind::Set, |s| {
                push_array(out, members.len());
                for m in members {
                    push_int(out, i64::from(contains(&s, m)));
                }
            });
            typed::or_reply(r, out, |out| {
                push_array(out, members.len());
                for _ in members {
                    push_int(out, 0);
                }
            });
        }
        Cmd::Scard => {
            let r = read(ctx, &args[1], Kind::Set, |s| match s {
                Found::Packed(b) => set::packed_len(b),
                Found::Large(v) => large(v).len(),
            });
            if let Some(n) = typed::or_reply(r, out, |out| push_int(out, 0)) {
                push_int(out, n as i64);
            }
        }
        Cmd::Spop => spop(ctx, args, out),
        Cmd::Srandmember => srandmember(ctx, args, out),
        Cmd::Smove => smove(ctx, args, out),
        Cmd::Sinter | Cmd::Sunion | Cmd::Sdiff => {
            let (proto, stop) = (ctx.proto(), ctx.out_stop);
            let Some(result) = compute(ctx, cmd, &args[1..], out) else { return };
            push_members(out, proto, stop, result.len(), result.iter());
        }
        Cmd::Sinterstore | Cmd::Sunionstore | Cmd::Sdiffstore => {
            let op = match cmd {
                Cmd::Sinterstore => Cmd::Sinter,
                Cmd::Sunionstore => Cmd::Sunion,
                _ => Cmd::Sdiff,
            };
            let Some(result) = compute(ctx, op, &args[2..], out) else { return };
            let n = result.len();
            let t = ctx.ks.thresholds.load();
            // Not atomic with the reads above (module notes; transactions
            // are issue 19 item 2). Each run of the write gets its own
            // copy (the engine may rerun it: typed::replace).
            let r = typed::replace(ctx, &args[1], || Value::Set(copy_of(&result, &t)));
            match r {
                Ok(had) => {
                    let event = match cmd {
                        Cmd::Sinterstore => "sinterstore",
                        Cmd::Sunionstore => "sunionstore",
                        _ => "sdiffstore",
                    };
                    typed::notify_stored(ctx, &args[1], notify::SET, event, n > 0, had);
                    push_int(out, n as i64)
                }
                Err(e) => e.reply(out),
            }
        }
        Cmd::Sintercard => sintercard(ctx, args, out),
        Cmd::Sscan => sscan(ctx, args, out),
        _ => unreachable!("not a set command: {cmd:?}"),
    }
}

/// The large set inside a [`Value`] that `read` found to be a set.
fn large(v: &Value) -> &Set {
    match v {
        Value::Set(s) => s,
        _ => unreachable!("typed::read checked the kind"),
    }
}

fn set_mut(v: &mut Value) -> &mut Set {
    match v {
        Value::Set(s) => s,
        _ => unreachable!("typed::write checked the kind"),
    }
}

fn contains(s: &Found<'_>, member: &[u8]) -> bool {
    match s {
        Found::Packed(b) => set::packed_contains(b, member),
        Found::Large(v) => large(v).contains(member),
    }
}

/// An owned copy of the set found: a compact one's bytes (bounded by the
/// thresholds), a large one member by member.
fn owned(s: Found<'_>, t: &amalgam_types::Thresholds) -> Set {
    match s {
        Found::Packed(b) => Set::from_packed_trusted(b),
        Found::Large(v) => copy_of(large(v), t),
    }
}

fn copy_of(s: &Set, t: &amalgam_types::Thresholds) -> Set {
    match s.packed() {
        Some(b) => Set::from_packed_trusted(b),
        None => set::union(&[s], t),
    }
}

/// Replies with members: a set (RESP3 `~`, RESP2 an array) of `n`.
/// The reply stops, unfinished and never sent, once the output reaches
/// `stop`, the client's hard limit (`resp::process` closes the client).
fn push_members<'a>(out: &mut Vec<u8>, proto: Proto, stop: usize, n: usize, members: impl Iterator<Item = Member<'a>>) {
    push_set(out, n, proto);
    for m in members {
        if out.len() >= stop {
            return;
        }
        m.with_bytes(|b| push_bulk(out, b));
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

/// Reads the sets at `keys` in turn (module notes) and computes `op`
/// (SINTER, SUNION or SDIFF) over them; None once it has replied
/// WRONGTYPE.
fn compute(ctx: &Ctx<'_>, op: Cmd, keys: &[Arg<'_>], out: &mut Vec<u8>) -> Option<Set> {
    let t = ctx.ks.thresholds.load();
    let sets = read_all(
        ctx,
        keys,
        if op == Cmd::Sinter {
            EmptyKey::Any
        } else if op == Cmd::Sdiff {
            EmptyKey::First
        } else {
            EmptyKey::Never
        },
        out,
    )?;
    let refs: Vec<&Set> = sets.iter().collect();
    Some(match op {
        Cmd::Sinter => set::inter(&refs, &t),
        Cmd::Sunion => set::union(&refs, &t),
        _ => set::diff(&refs, &t),
    })
}

/// Which empty (or missing) key makes a result empty whatever the other
/// keys hold.
#[derive(Clone, Copy, PartialEq, Eq)]
enum EmptyKey {
    /// Any: an intersection.
    Any,
    /// The first: a difference.
    First,
    /// None: a union.
    Never,
}

/// Copies the sets at `keys` (a missing key: an empty set); None once it
/// has replied WRONGTYPE. Once a key makes the result empty (`empty_at`),
/// the rest are only type-checked (Redis checks every key), not copied,
/// and the sets returned are one empty set.
fn read_all(ctx: &Ctx<'_>, keys: &[Arg<'_>], empty_at: EmptyKey, out: &mut Vec<u8>) -> Option<Vec<Set>> {
    let t = ctx.ks.thresholds.load();
    let mut sets = Vec::with_capacity(keys.len());
    let mut empty = false;
    // Bounded by the command's keys.
    for key in keys {
        if empty {
            if read(ctx, key, Kind::Set, |_| ()) == Access::WrongType {
                push_error(out, typed::WRONGTYPE.as_bytes());
                return None;
            }
            continue;
        }
        match read(ctx, key, Kind::Set, |s| owned(s, &t)) {
            Access::Done(s) => sets.push(s),
            Access::Absent => sets.push(Set::new()),
            Access::WrongType => {
                push_error(out, typed::WRONGTYPE.as_bytes());
                return None;
            }
        }
        let first = sets.len() == 1;
        let stops = empty_at == EmptyKey::Any || (empty_at == EmptyKey::First && first);
        if stops && sets.last().is_some_and(Set::is_empty) {
            empty = true;
            sets = vec![Set::new()];
        }
    }
    Some(sets)
}

fn spop(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let proto = ctx.proto();
    // Redis 7.0.15's order: the syntax, the count, then the key.
    let count = match args.len() {
        2 => None,
        3 => match int_arg(&args[2]) {
            Some(n) if n >= 0 => Some(usize::try_from(n).unwrap_or(usize::MAX)),
            _ => return push_error(out, SPOP_COUNT.as_bytes()),
        },
        _ => return push_error(out, err::SYNTAX.as_bytes()),
    };
    let Some(count) = count else {
        let r = write(ctx, &args[1], Kind::Set, false, Some((notify::SET, "spop")), |v, _, log| {
            let mut popped = set_mut(v).pop_random(1, &mut typed::random);
            // The member it popped, not the random pick (Redis's AOF too).
            log.log(|| Op::SRem(popped.clone()));
            let m = popped.pop();
            (if m.is_some() { Changed::Yes } else { Changed::No }, m)
        });
        match r {
            Ok(Access::Done(Some(m))) => push_bulk(out, &m),
            Ok(Access::Done(None)) | Ok(Access::Absent) => null(ctx, out),
            Ok(Access::WrongType) => push_error(out, typed::WRONGTYPE.as_bytes()),
            Err(e) => e.reply(out),
        }
        return;
    };
    if count == 0 {
        // Redis checks the kind, then answers an empty set.
        let r = read(ctx, &args[1], Kind::Set, |_| ());
        if r == Access::WrongType {
            return push_error(out, typed::WRONGTYPE.as_bytes());
        }
        return push_set(out, 0, proto);
    }
    let r = write(ctx, &args[1], Kind::Set, false, Some((notify::SET, "spop")), |v, _, log| {
        let popped = set_mut(v).pop_random(count, &mut typed::random);
        log.log(|| Op::SRem(popped.clone()));
        (if popped.is_empty() { Changed::No } else { Changed::Yes }, popped)
    });
    match r {
        Ok(a) => {
            if let Some(popped) = typed::or_reply(a, out, |out| push_set(out, 0, proto)) {
                push_set(out, popped.len(), proto);
                for m in &popped {
                    push_bulk(out, m);
                }
            }
        }
        Err(e) => e.reply(out),
    }
}

fn srandmember(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    if args.len() == 2 {
        let r = read(ctx, &args[1], Kind::Set, |s| {
            let mut picked = None;
            with_set(s, |s| s.random_members(-1, &mut typed::random, &mut |m| picked = Some(m.to_vec())));
            picked
        });
        match r {
            Access::Done(Some(m)) => push_bulk(out, &m),
            Access::Done(None) | Access::Absent => null(ctx, out),
            Access::WrongType => push_error(out, typed::WRONGTYPE.as_bytes()),
        }
        return;
    }
    // Redis 7.0.15's order: the syntax, the count (over
    // -LONG_MAX..=LONG_MAX), then the key (absent: an empty array).
    if args.len() > 3 {
        return push_error(out, err::SYNTAX.as_bytes());
    }
    let Some(count) = int_arg(&args[2]) else { return push_error(out, err::NOT_INTEGER.as_bytes()) };
    if count == i64::MIN {
        return push_error(out, COUNT_RANGE.as_bytes());
    }
    // Amalgam bounds the picks with repetition (RANDOM_PICKS_MAX),
    // checked once the key is found to hold a set (None: past it).
    let too_many = count < 0 && count.unsigned_abs() > RANDOM_PICKS_MAX;
    let r = read(ctx, &args[1], Kind::Set, |s| {
        if too_many {
            return None;
        }
        let mut picked: Vec<Vec<u8>> = Vec::new();
        with_set(s, |s| s.random_members(count, &mut typed::random, &mut |m| picked.push(m.to_vec())));
        Some(picked)
    });
    let Some(picked) = typed::or_reply(r, out, |out| push_array(out, 0)) else { return };
    let Some(picked) = picked else { return push_error(out, OUT_OF_RANGE.as_bytes()) };
    push_array(out, picked.len());
    for m in &picked {
        push_bulk(out, m);
    }
}

/// Runs `f` on the set found, decoding a compact one (bounded by the
/// thresholds) so that every operation has one code path.
fn with_set<R>(s: Found<'_>, f: impl FnOnce(&Set) -> R) -> R {
    match s {
        Found::Packed(b) => f(&Set::from_packed_trusted(b)),
        Found::Large(v) => f(large(v)),
    }
}

/// SMOVE (module notes: two locks in turn, never both).
fn smove(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let (src, dst, member): (&[u8], &[u8], &[u8]) = (&args[1], &args[2], &args[3]);
    // Redis's order: a missing source answers 0 before the destination
    // is looked at; then either key of another kind answers WRONGTYPE.
    let in_src = read(ctx, src, Kind::Set, |s| contains(&s, member));
    if in_src == Access::Absent {
        return push_int(out, 0);
    }
    let dst_kind = read(ctx, dst, Kind::Set, |_| ());
    if in_src == Access::WrongType || dst_kind == Access::WrongType {
        return push_error(out, typed::WRONGTYPE.as_bytes());
    }
    if src == dst || in_src != Access::Done(true) {
        return push_int(out, i64::from(in_src == Access::Done(true)));
    }
    let removed = write(ctx, src, Kind::Set, false, Some((notify::SET, "srem")), |v, _, log| {
        let gone = set_mut(v).remove(member);
        log.log(|| Op::SRem(vec![member.to_vec()]));
        (if gone { Changed::Yes } else { Changed::No }, gone)
    });
    match removed {
        Ok(Access::Done(true)) => {}
        Ok(Access::Done(false)) | Ok(Access::Absent) => return push_int(out, 0),
        Ok(Access::WrongType) => return push_error(out, typed::WRONGTYPE.as_bytes()),
        Err(e) => return e.reply(out),
    }
    // The source lock is released: the member is in neither set until
    // the add below (no transactions yet; issue 19 item 2).
    let add = |ctx: &Ctx<'_>, key: &[u8]| {
        write(ctx, key, Kind::Set, true, Some((notify::SET, "sadd")), |v, t, log| {
            // Already there: nothing changes (Redis: no event).
            if !set_mut(v).insert(member, t) {
                return (Changed::No, ());
            }
            log.log(|| Op::SAdd(vec![member.to_vec()]));
            (Changed::Yes, ())
        })
    };
    match add(ctx, dst) {
        Ok(Access::Done(())) => push_int(out, 1),
        failed => {
            // The destination changed kind since the check (or the engine
            // refused the add): the member goes back to the source, so
            // nothing is lost (unless the source, too, changed kind
            // meanwhile: transactions will make that impossible).
            let _ = add(ctx, src);
            match failed {
                Err(e) => e.reply(out),
                Ok(_) => push_error(out, typed::WRONGTYPE.as_bytes()),
            }
        }
    }
}

fn sintercard(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    // Redis 7.0.15's checks, in order: numkeys in 1..=LONG_MAX, numkeys
    // within the arguments, then LIMIT (the last one given wins).
    let numkeys = match int_arg(&args[1]) {
        Some(n) if n >= 1 => usize::try_from(n).unwrap_or(usize::MAX),
        _ => return push_error(out, NUMKEYS.as_bytes()),
    };
    if numkeys > args.len() - 2 {
        return push_error(out, NUMKEYS_ARGS.as_bytes());
    }
    let keys = &args[2..2 + numkeys];
    let rest = &args[2 + numkeys..];
    let mut limit = 0usize;
    let mut j = 0;
    // Bounded: j advances by 2 each round.
    while j < rest.len() {
        if super::is(&rest[j], "limit") && j + 1 < rest.len() {
            match int_arg(&rest[j + 1]) {
                Some(n) if n >= 0 => limit = usize::try_from(n).unwrap_or(usize::MAX),
                _ => return push_error(out, LIMIT_NEGATIVE.as_bytes()),
            }
            j += 2;
        } else {
            return push_error(out, err::SYNTAX.as_bytes());
        }
    }
    let Some(sets) = read_all(ctx, keys, EmptyKey::Any, out) else { return };
    let refs: Vec<&Set> = sets.iter().collect();
    push_int(out, set::inter_card(&refs, limit) as i64);
}

fn sscan(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let scan = |s: Found<'_>, cursor, o: &typed::ScanArgs<'_>, kept: &mut Vec<Vec<u8>>| {
        with_set(s, |s| {
            s.scan(cursor, o.count, &mut |m| {
                m.with_bytes(|b| {
                    if o.matches(b) {
                        kept.push(b.to_vec());
                    }
                })
            })
        })
    };
    typed::scan_command(ctx, args, Kind::Set, out, scan, 1, |out, m| push_bulk(out, m));
}
