//! List commands: LPUSH RPUSH LPUSHX RPUSHX LPOP RPOP LLEN LRANGE LINDEX
//! LSET LINSERT LREM LTRIM LPOS LMOVE RPOPLPUSH LMPOP, with Redis 7.0's
//! replies, argument order and error texts, as thin adapters from RESP
//! arguments to `amalgam_types::list` through `typed.rs` (where the value
//! lives and how reads and writes reach it). The blocking variants
//! (BLPOP …) are in `blocking.rs`; they reuse [`pop`] and [`lmove`].
//!
//! Every write that can turn a missing key into a list (the pushes, and
//! LMOVE's destination) tells the blocking registry
//! (`Registry::signal`), so a client blocked on that key is woken.
//!
//! ## Two keys (LMOVE, RPOPLPUSH, LMPOP)
//! There are no multi-key transactions yet (issue 19, item 2), so LMOVE
//! takes two bucket locks one after the other, never both: the element is
//! popped from the source under the source's lock, then pushed to the
//! destination under the destination's. Between the two, a reader may see
//! the element in neither list (Redis, single-threaded, never shows
//! that); that is the only difference, and it goes away with the
//! transactions. Nothing is lost or duplicated: the destination's type is
//! checked before the pop (Redis answers WRONGTYPE before popping), and if
//! a concurrent write changed it in between, the element is pushed back
//! to the end of the source it came from. The same key as source and
//! destination is one rotation under one lock.

use super::table::Cmd;
use super::typed::{self, read, write, Access, Changed, Found, Refused};
use super::{int_arg, is, null, wrong_arity, Arg, Ctx};
use crate::notify;
use amalgam_protocol::resp::{
    err, push_array, push_bulk, push_error, push_int, push_null, push_null_array, push_simple,
};
use amalgam_types::list::{self, List};
use amalgam_types::op::Op;
use amalgam_types::value::Value;
use amalgam_types::Kind;

/// LPOP/RPOP's count error (Redis's `getPositiveLongFromObjectOrReply`
/// with its own message, for a non-integer too).
const ERR_COUNT_POSITIVE: &str = "ERR value is out of range, must be positive";
/// LMPOP/BLMPOP's argument errors (Redis 7.0's texts).
pub(crate) const ERR_NUMKEYS: &str = "ERR numkeys should be greater than 0";
pub(crate) const ERR_MPOP_COUNT: &str = "ERR count should be greater than 0";
/// LSET on a missing key.
const ERR_NO_SUCH_KEY: &str = "ERR no such key";

/// Which end of a list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    Left,
    Right,
}

/// Redis's `getListPositionFromObjectOrReply`: LEFT or RIGHT, any case.
pub fn end_arg(a: &[u8]) -> Option<End> {
    if is(a, "left") {
        Some(End::Left)
    } else if is(a, "right") {
        Some(End::Right)
    } else {
        None
    }
}

pub fn run(ctx: &mut Ctx<'_>, cmd: Cmd, args: &[Arg<'_>], out: &mut Vec<u8>) {
    match cmd {
        Cmd::Lpush | Cmd::Rpush | Cmd::Lpushx | Cmd::Rpushx => push(ctx, cmd, args, out),
        Cmd::Lpop | Cmd::Rpop => lpop(ctx, cmd, args, out),
        Cmd::Llen => {
            let r = read(ctx, &args[1], Kind::List, |l| match l {
                Found::Packed(b) => list::packed_len(b).unwrap_or(0),
                Found::Large(v) => large(v).len(),
            });
            if let Some(n) = typed::or_reply(r, out, |out| push_int(out, 0)) {
                push_int(out, n as i64);
            }
        }
        Cmd::Lrange => lrange(ctx, args, out),
        Cmd::Lindex => {
            // Redis looks the key up before it parses the index.
            let index = int_arg(&args[2]);
            let r = read(ctx, &args[1], Kind::List, |l| {
                let Some(i) = index else { return Err(()) };
                let e = match l {
                    Found::Packed(b) => list::packed_index(b, i),
                    Found::Large(v) => large(v).index(i),
                };
                match e {
                    Some(e) => push_bulk(out, e),
                    None => push_null(out, ctx.proto()),
                }
                Ok(())
            });
            match r {
                Access::Done(Ok(())) => {}
                Access::Done(Err(())) => push_error(out, err::NOT_INTEGER.as_bytes()),
                Access::Absent => null(ctx, out),
                Access::WrongType => push_error(out, typed::WRONGTYPE.as_bytes()),
            }
        }
        Cmd::Lset => {
            let index = int_arg(&args[2]);
            let value: &[u8] = &args[3];
            let r = write(ctx, &args[1], Kind::List, false, Some((notify::LIST, "lset")), |v, _, log| {
                let Some(i) = index else { return (Changed::No, Err(err::NOT_INTEGER)) };
                match list_mut(v).set(i, value) {
                    Ok(()) => {
                        log.log(|| Op::LSet { index: i, item: value.to_vec() });
                        (Changed::Yes, Ok(()))
                    }
                    Err(e) => (Changed::No, Err(e)),
                }
            });
            match r {
                Ok(Access::Done(Ok(()))) => push_simple(out, "OK"),
                Ok(Access::Done(Err(e))) => push_error(out, e.as_bytes()),
                Ok(a) => {
                    typed::or_reply(a, out, |out| push_error(out, ERR_NO_SUCH_KEY.as_bytes()));
                }
                Err(e) => e.reply(out),
            }
        }
        Cmd::Linsert => {
            let before = if is(&args[2], "before") {
                true
            } else if is(&args[2], "after") {
                false
            } else {
                return push_error(out, err::SYNTAX.as_bytes());
            };
            let (pivot, value): (&[u8], &[u8]) = (&args[3], &args[4]);
            let r =
                write(ctx, &args[1], Kind::List, false, Some((notify::LIST, "linsert")), |v, _, log| {
                    match list_mut(v).insert(before, pivot, value) {
                        Some(n) => {
                            log.log(|| Op::LInsert { before, pivot: pivot.to_vec(), item: value.to_vec() });
                            (Changed::Yes, n as i64)
                        }
                        None => (Changed::No, -1),
                    }
                });
            reply_int(r, out);
        }
        Cmd::Lrem => {
            let Some(count) = int_arg(&args[2]) else { return push_error(out, err::NOT_INTEGER.as_bytes()) };
            let value: &[u8] = &args[3];
            let r = write(ctx, &args[1], Kind::List, false, Some((notify::LIST, "lrem")), |v, _, log| {
                let n = list_mut(v).remove(count, value);
                // Deterministic: LREM replays to the same removals.
                log.log(|| Op::LRem { count, item: value.to_vec() });
                (if n > 0 { Changed::Yes } else { Changed::No }, n as i64)
            });
            reply_int(r, out);
        }
        Cmd::Ltrim => {
            let (Some(start), Some(stop)) = (int_arg(&args[2]), int_arg(&args[3])) else {
                return push_error(out, err::NOT_INTEGER.as_bytes());
            };
            // A write even when it removes nothing: Redis's LTRIM signals
            // the key modified regardless, so it aborts a WATCH on it.
            let r = write(ctx, &args[1], Kind::List, false, Some((notify::LIST, "ltrim")), |v, _, log| {
                list_mut(v).trim(start, stop);
                log.log(|| Op::LTrim { start, stop });
                (Changed::Yes, ())
            });
            match r {
                Ok(Access::WrongType) => push_error(out, typed::WRONGTYPE.as_bytes()),
                Ok(_) => push_simple(out, "OK"),
                Err(e) => e.reply(out),
            }
        }
        Cmd::Lpos => lpos(ctx, args, out),
        Cmd::Lmove | Cmd::Rpoplpush => {
            let (from, to) = if cmd == Cmd::Rpoplpush {
                (End::Right, End::Left)
            } else {
                match (end_arg(&args[3]), end_arg(&args[4])) {
                    (Some(f), Some(t)) => (f, t),
                    _ => return push_error(out, err::SYNTAX.as_bytes()),
                }
            };
            let proto = ctx.proto();
            lmove(ctx, &args[1], &args[2], from, to).reply(out, |out| push_null(out, proto));
        }
        Cmd::Lmpop => {
            let m = match mpop_args(args, 1) {
                Ok(m) => m,
                Err(e) => return push_error(out, e.as_bytes()),
            };
            let keys = &args[2..2 + m.numkeys];
            for k in keys {
                match pop(ctx, k, m.end, m.count) {
                    Ok(Access::Absent) => continue,
                    Ok(Access::WrongType) => return push_error(out, typed::WRONGTYPE.as_bytes()),
                    Ok(Access::Done(elems)) => return reply_key_elements(k, &elems, out),
                    Err(e) => return e.reply(out),
                }
            }
            push_null_array(out, ctx.proto());
        }
        _ => unreachable!("not a list command: {cmd:?}"),
    }
}

/// The large list inside a [`Value`] that `read` found to be a list.
fn large(v: &Value) -> &List {
    match v {
        Value::List(l) => l,
        _ => unreachable!("typed::read checked the kind"),
    }
}

fn list_mut(v: &mut Value) -> &mut List {
    match v {
        Value::List(l) => l,
        _ => unreachable!("typed::write checked the kind"),
    }
}

/// Replies with an integer from a write that found an absent key (0) or
/// a wrong type.
fn reply_int(r: Result<Access<i64>, Refused>, out: &mut Vec<u8>) {
    match r {
        Ok(a) => {
            if let Some(n) = typed::or_reply(a, out, |out| push_int(out, 0)) {
                push_int(out, n);
            }
        }
        Err(e) => e.reply(out),
    }
}

/// LMPOP's and BLMPOP's reply: `[key, [elements]]`.
pub fn reply_key_elements(key: &[u8], elems: &[Vec<u8>], out: &mut Vec<u8>) {
    push_array(out, 2);
    crate::db::push_key(out, key);
    push_array(out, elems.len());
    for e in elems {
        push_bulk(out, e);
    }
}

/// Pushes `elems` at `end` of the list at `key` (creating it unless
/// `only_existing`): its new length, and the registry is told.
pub(crate) fn push_elements(
    ctx: &Ctx<'_>,
    key: &[u8],
    end: End,
    only_existing: bool,
    elems: &[&[u8]],
) -> Result<Access<usize>, Refused> {
    let event = if end == End::Left { "lpush" } else { "rpush" };
    let r = write(ctx, key, Kind::List, !only_existing, Some((notify::LIST, event)), |v, _, log| {
        let l = list_mut(v);
        for e in elems {
            match end {
                End::Left => l.push_front(e),
                End::Right => l.push_back(e),
            }
        }
        log.log(|| Op::Push { left: end == End::Left, items: elems.iter().map(|e| e.to_vec()).collect() });
        (Changed::Yes, l.len())
    });
    if let Ok(Access::Done(_)) = r {
        ctx.ks.host.signal(key);
    }
    r
}

fn push(ctx: &mut Ctx<'_>, cmd: Cmd, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let end = if matches!(cmd, Cmd::Lpush | Cmd::Lpushx) { End::Left } else { End::Right };
    // One element (the common LPUSH) needs no vector of its slices.
    let one: [&[u8]; 1];
    let many: Vec<&[u8]>;
    let elems: &[&[u8]] = if args.len() == 3 {
        one = [&args[2][..]];
        &one
    } else {
        many = args[2..].iter().map(|a| &a[..]).collect();
        &many
    };
    let r = push_elements(ctx, &args[1], end, matches!(cmd, Cmd::Lpushx | Cmd::Rpushx), elems);
    match r {
        Ok(a) => {
            if let Some(n) = typed::or_reply(a, out, |out| push_int(out, 0)) {
                push_int(out, n as i64);
            }
        }
        Err(e) => e.reply(out),
    }
}

/// Pops up to `count` elements from `end` of the list at `key` (an
/// emptied list is deleted by `typed::write`). `Done` holds at least one
/// element unless `count` is 0.
pub fn pop(ctx: &Ctx<'_>, key: &[u8], end: End, count: usize) -> Result<Access<Vec<Vec<u8>>>, Refused> {
    write(ctx, key, Kind::List, false, Some((notify::LIST, pop_event(end))), |v, _, log| {
        let l = list_mut(v);
        let elems = match end {
            End::Left => l.pop_front(count),
            End::Right => l.pop_back(count),
        };
        // The pop that happened (a blocking pop's too): how many it took.
        log.log(|| Op::Pop { left: end == End::Left, count: elems.len() as u64 });
        (if elems.is_empty() { Changed::No } else { Changed::Yes }, elems)
    })
}

/// A pop's keyspace event.
fn pop_event(end: End) -> &'static str {
    if end == End::Left {
        "lpop"
    } else {
        "rpop"
    }
}

/// LPOP and RPOP, with or without a count.
fn lpop(ctx: &mut Ctx<'_>, cmd: Cmd, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let end = if cmd == Cmd::Lpop { End::Left } else { End::Right };
    if args.len() > 3 {
        // Arity -2 in the table, but at most one count (Redis checks here).
        return wrong_arity(if cmd == Cmd::Lpop { "lpop" } else { "rpop" }, out);
    }
    let count = match args.get(2) {
        None => None,
        Some(a) => match int_arg(a) {
            Some(n) if n >= 0 => Some(usize::try_from(n).unwrap_or(usize::MAX)),
            _ => return push_error(out, ERR_COUNT_POSITIVE.as_bytes()),
        },
    };
    let proto = ctx.proto();
    match pop(ctx, &args[1], end, count.unwrap_or(1)) {
        Ok(Access::Absent) if count.is_some() => push_null_array(out, proto),
        Ok(Access::Absent) => push_null(out, proto),
        Ok(Access::WrongType) => push_error(out, typed::WRONGTYPE.as_bytes()),
        Ok(Access::Done(elems)) => match count {
            None => match elems.first() {
                Some(e) => push_bulk(out, e),
                None => push_null(out, proto),
            },
            Some(_) => {
                push_array(out, elems.len());
                for e in &elems {
                    push_bulk(out, e);
                }
            }
        },
        Err(e) => e.reply(out),
    }
}

fn lrange(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let (Some(start), Some(stop)) = (int_arg(&args[2]), int_arg(&args[3])) else {
        return push_error(out, err::NOT_INTEGER.as_bytes());
    };
    let out_stop = ctx.out_stop;
    let emit = |out: &mut Vec<u8>, len: usize, range: &mut dyn Iterator<Item = &[u8]>| {
        let n = list::normalize_range(len, start, stop).map_or(0, |(s, e)| e - s + 1);
        push_array(out, n);
        let mut sent = 0;
        for e in range.take(n) {
            if out.len() >= out_stop {
                // Past the client's hard limit: unfinished, never sent
                // (`resp::process` closes the client).
                return;
            }
            push_bulk(out, e);
            sent += 1;
        }
        // A compact value that is not what its header says (never written
        // by this build): keep the reply well-formed.
        for _ in sent..n {
            push_bulk(out, b"");
        }
    };
    let r = read(ctx, &args[1], Kind::List, |l| match l {
        Found::Packed(b) => emit(out, list::packed_len(b).unwrap_or(0), &mut list::packed_range(b, start, stop)),
        Found::Large(v) => emit(out, large(v).len(), &mut large(v).range(start, stop)),
    });
    typed::or_reply(r, out, |out| push_array(out, 0));
}

/// LPOS, its options parsed as Redis does: in order, each error as soon
/// as its option is read.
fn lpos(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let (mut rank, mut count, mut maxlen) = (1i64, None::<i64>, 0i64);
    let mut j = 3;
    // Bounded: j advances by 2 each round.
    while j < args.len() {
        let more = j + 1 < args.len();
        if is(&args[j], "rank") && more {
            match int_arg(&args[j + 1]) {
                None => return push_error(out, err::NOT_INTEGER.as_bytes()),
                Some(0) => return push_error(out, list::ERR_LPOS_RANK_ZERO.as_bytes()),
                Some(r) => rank = r,
            }
        } else if is(&args[j], "count") && more {
            match int_arg(&args[j + 1]) {
                Some(c) if c >= 0 => count = Some(c),
                _ => return push_error(out, list::ERR_LPOS_COUNT_NEGATIVE.as_bytes()),
            }
        } else if is(&args[j], "maxlen") && more {
            match int_arg(&args[j + 1]) {
                Some(m) if m >= 0 => maxlen = m,
                _ => return push_error(out, list::ERR_LPOS_MAXLEN_NEGATIVE.as_bytes()),
            }
        } else {
            return push_error(out, err::SYNTAX.as_bytes());
        }
        j += 2;
    }
    let value: &[u8] = &args[2];
    // Without COUNT, one match is enough.
    let want = count.map_or(1, |c| usize::try_from(c).unwrap_or(usize::MAX));
    let maxlen = usize::try_from(maxlen).unwrap_or(usize::MAX);
    let r = read(ctx, &args[1], Kind::List, |l| match l {
        Found::Packed(b) => list::packed_position(b, value, rank, want, maxlen),
        Found::Large(v) => large(v).position(value, rank, want, maxlen),
    });
    let proto = ctx.proto();
    let Some(found) = typed::or_reply(r, out, |out| match count {
        Some(_) => push_array(out, 0),
        None => push_null(out, proto),
    }) else {
        return;
    };
    match count {
        Some(_) => {
            push_array(out, found.len());
            for i in found {
                push_int(out, i as i64);
            }
        }
        None => match found.first() {
            Some(&i) => push_int(out, i as i64),
            None => push_null(out, proto),
        },
    }
}

/// What LMOVE did.
#[derive(Debug)]
pub enum Moved {
    Element(Vec<u8>),
    /// The source is missing (or emptied meanwhile).
    Absent,
    /// The source or the destination holds another kind.
    WrongType,
    /// The engine refused a write (out of memory, too large).
    Engine(Refused),
}

impl Moved {
    /// Replies as LMOVE does; `absent` answers a missing source.
    pub fn reply(self, out: &mut Vec<u8>, absent: impl FnOnce(&mut Vec<u8>)) {
        match self {
            Moved::Element(e) => push_bulk(out, &e),
            Moved::Absent => absent(out),
            Moved::WrongType => push_error(out, typed::WRONGTYPE.as_bytes()),
            Moved::Engine(e) => e.reply(out),
        }
    }
}

/// LMOVE: pops from `from` of `src` and pushes at `to` of `dst` (module
/// notes: two locks in turn, never both; nothing lost or duplicated).
pub fn lmove(ctx: &Ctx<'_>, src: &[u8], dst: &[u8], from: End, to: End) -> Moved {
    if src == dst {
        // One key: a rotation under its one lock.
        let r = write(ctx, src, Kind::List, false, None, |v, _, log| {
            let l = list_mut(v);
            let mut e = match from {
                End::Left => l.pop_front(1),
                End::Right => l.pop_back(1),
            };
            let Some(e) = e.pop() else { return (Changed::No, None) };
            match to {
                End::Left => l.push_front(&e),
                End::Right => l.push_back(&e),
            }
            log.log(|| Op::LRotate { from_left: from == End::Left, to_left: to == End::Left });
            (Changed::Yes, Some(e))
        });
        return match r {
            Ok(Access::Done(Some(e))) => {
                ctx.ks.host.signal(dst);
                // Redis's order: the push's event, then the pop's.
                ctx.notify(notify::LIST, if to == End::Left { "lpush" } else { "rpush" }, dst);
                ctx.notify(notify::LIST, pop_event(from), src);
                Moved::Element(e)
            }
            Ok(Access::Done(None)) | Ok(Access::Absent) => Moved::Absent,
            Ok(Access::WrongType) => Moved::WrongType,
            Err(e) => Moved::Engine(e),
        };
    }
    // Redis's order: a missing source answers null before the destination
    // is looked at; then either key of another kind answers WRONGTYPE,
    // before anything is popped.
    match read(ctx, src, Kind::List, |_| ()) {
        Access::Absent => return Moved::Absent,
        Access::WrongType => return Moved::WrongType,
        Access::Done(()) => {}
    }
    if read(ctx, dst, Kind::List, |_| ()) == Access::WrongType {
        return Moved::WrongType;
    }
    // The pop's events wait for the push's (Redis's order).
    let popped = write(ctx, src, Kind::List, false, None, |v, _, log| {
        let l = list_mut(v);
        let mut e = match from {
            End::Left => l.pop_front(1),
            End::Right => l.pop_back(1),
        };
        log.log(|| Op::Pop { left: from == End::Left, count: e.len() as u64 });
        (if e.is_empty() { Changed::No } else { Changed::Yes }, (e.pop(), l.is_empty()))
    });
    let (e, emptied) = match popped {
        Ok(Access::Done((Some(e), emptied))) => (e, emptied),
        Ok(Access::Done((None, _))) => return Moved::Absent,
        Ok(Access::Absent) => return Moved::Absent,
        Ok(Access::WrongType) => return Moved::WrongType,
        Err(e) => return Moved::Engine(e),
    };
    // The source lock is released: the element is in neither list until
    // the push below (no transactions yet; issue 19 item 2).
    let failed = match push_elements(ctx, dst, to, false, &[&e]) {
        Ok(Access::Done(_)) => {
            ctx.notify(notify::LIST, pop_event(from), src);
            if emptied {
                ctx.notify(notify::GENERIC, "del", src);
            }
            return Moved::Element(e);
        }
        Ok(_) => Moved::WrongType,
        Err(err) => Moved::Engine(err),
    };
    // The destination changed kind since the check (or the engine refused
    // the push): the element goes back where it came from, so nothing is
    // lost. Only if the source, too, changed kind meanwhile does it have
    // nowhere to go (two concurrent type changes: transactions will make
    // this impossible).
    let _ = push_elements(ctx, src, from, false, &[&e]);
    failed
}

/// LMPOP's and BLMPOP's parsed arguments.
#[derive(Debug)]
pub struct Mpop {
    pub numkeys: usize,
    pub end: End,
    pub count: usize,
}

/// Parses `numkeys key... LEFT|RIGHT [COUNT n]` starting at
/// `args[numkeys_at]`, as Redis's `lmpopGenericCommand` does.
pub fn mpop_args(args: &[Arg<'_>], numkeys_at: usize) -> Result<Mpop, &'static str> {
    let numkeys = match int_arg(&args[numkeys_at]) {
        Some(n) if n >= 1 => usize::try_from(n).unwrap_or(usize::MAX),
        _ => return Err(ERR_NUMKEYS),
    };
    let where_at = numkeys_at.checked_add(numkeys).and_then(|w| w.checked_add(1)).filter(|&w| w < args.len());
    let Some(where_at) = where_at else { return Err(err::SYNTAX) };
    let end = end_arg(&args[where_at]).ok_or(err::SYNTAX)?;
    let mut count = None;
    let mut j = where_at + 1;
    // Bounded: j advances by 2 each round.
    while j < args.len() {
        if count.is_none() && is(&args[j], "count") && j + 1 < args.len() {
            match int_arg(&args[j + 1]) {
                Some(n) if n >= 1 => count = Some(usize::try_from(n).unwrap_or(usize::MAX)),
                _ => return Err(ERR_MPOP_COUNT),
            }
            j += 2;
        } else {
            return Err(err::SYNTAX);
        }
    }
    Ok(Mpop { numkeys, end, count: count.unwrap_or(1) })
}
