//! Sorted-set commands: ZADD ZINCRBY ZREM ZCARD ZSCORE ZMSCORE ZRANK
//! ZREVRANK ZCOUNT ZLEXCOUNT ZRANGE ZRANGEBYSCORE ZREVRANGEBYSCORE
//! ZRANGEBYLEX ZREVRANGEBYLEX ZREVRANGE ZRANGESTORE ZPOPMIN ZPOPMAX ZMPOP
//! ZRANDMEMBER ZREMRANGEBYRANK ZREMRANGEBYSCORE ZREMRANGEBYLEX ZSCAN, and
//! (in `zset/algebra.rs`) ZUNION ZINTER ZDIFF ZUNIONSTORE ZINTERSTORE
//! ZDIFFSTORE ZINTERCARD, with Redis 7.0's replies, argument-check order
//! and error texts, as thin adapters from RESP arguments to
//! `amalgam_types::zset` through `typed.rs` (where the value lives and how
//! reads and writes reach it).
//!
//! ## Scores on the wire
//! Redis 7.0 prints a score with `%.17g` (`format_score`): a bulk string
//! in RESP2, a double (`,1.5`) in RESP3. Where a reply holds member-score
//! pairs (ZRANGE … WITHSCORES, ZPOPMIN with a count, ZRANDMEMBER
//! WITHSCORES, ZUNION … WITHSCORES) RESP3 nests each pair as a
//! two-element array and RESP2 flattens them, as Redis 7.0 does; ZMPOP
//! nests in both, ZPOPMIN without a count is flat in both, and ZSCAN's
//! scores are bulk strings in both.
//!
//! ## Two keys (ZRANGESTORE, the *STORE forms)
//! No multi-key transactions yet (issue 19, item 2): the sources are read
//! (each under its own lookup), then the result is stored under the
//! destination's bucket lock. A write to a source in between is not seen,
//! and a reader may see the destination before or after, never half
//! written; Redis, single-threaded, makes the whole command one step.

mod algebra;

use super::table::Cmd;
use super::typed::{self, read, write, Access, Changed, Found, Refused};
use super::{int_arg, is, null, Arg, Ctx};
use crate::notify;
use amalgam_protocol::resp::{err, push_array, push_bulk, push_error, push_int, push_null, push_null_array, Proto};
use amalgam_types::op::Op;
use amalgam_types::value::Value;
use amalgam_types::zset::{
    self, format_score, format_score_to, parse_score, AddFlags, AddOutcome, LexRange, ScoreRange, ZSet, ZView,
    ERR_LEX_RANGE, ERR_RANGE_NOT_FLOAT, SCORE_TEXT_MAX,
};
use amalgam_types::{Kind, Thresholds};

/// ZPOPMIN/ZPOPMAX's count error (Redis's `getPositiveLongFromObjectOrReply`
/// message, for a non-integer too).
const ERR_COUNT_POSITIVE: &str = "ERR value is out of range, must be positive";
/// ZMPOP's argument errors (Redis 7.0's texts, as LMPOP's).
const ERR_NUMKEYS: &str = super::list::ERR_NUMKEYS;
const ERR_MPOP_COUNT: &str = super::list::ERR_MPOP_COUNT;
/// ZRANGE's option conflicts.
const ERR_LIMIT_RANK: &str = "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX";
const ERR_WITHSCORES_LEX: &str = "ERR syntax error, WITHSCORES not supported in combination with BYLEX";

pub fn run(ctx: &mut Ctx<'_>, cmd: Cmd, args: &[Arg<'_>], out: &mut Vec<u8>) {
    match cmd {
        Cmd::Zadd => zadd(ctx, args, out),
        Cmd::Zincrby => {
            let incr = match parse_score(&args[2]) {
                Ok(v) => v,
                Err(e) => return push_error(out, e.as_bytes()),
            };
            let flags = AddFlags { incr: true, ..AddFlags::default() };
            add_pairs(ctx, &args[1], flags, false, &[(incr, &args[3])], out);
        }
        Cmd::Zrem => {
            let members = &args[2..];
            let r = write(ctx, &args[1], Kind::ZSet, false, Some((notify::ZSET, "zrem")), |v, _, log| {
                let z = zset_mut(v);
                let n = members.iter().filter(|m| z.remove(m).is_some()).count();
                log.log(|| Op::ZRem(members.iter().map(|m| m.to_vec()).collect()));
                (if n > 0 { Changed::Yes } else { Changed::No }, n)
            });
            reply_count(r, out);
        }
        Cmd::Zcard => {
            let r = read(ctx, &args[1], Kind::ZSet, |z| match z {
                Found::Packed(b) => zset::packed_len(b),
                Found::Large(v) => large(v).len(),
            });
            if let Some(n) = typed::or_reply(r, out, |out| push_int(out, 0)) {
                push_int(out, n as i64);
            }
        }
        Cmd::Zscore => {
            let proto = ctx.proto();
            let r = read(ctx, &args[1], Kind::ZSet, |z| view(z, |v| v.score(&args[2])));
            match r {
                Access::Done(Some(s)) => push_score(out, proto, s),
                Access::Done(None) | Access::Absent => null(ctx, out),
                Access::WrongType => push_error(out, typed::WRONGTYPE.as_bytes()),
            }
        }
        Cmd::Zmscore => {
            let members = &args[2..];
            let proto = ctx.proto();
            let r = read(ctx, &args[1], Kind::ZSet, |z| {
                view(z, |v| members.iter().map(|m| v.score(m)).collect::<Vec<_>>())
            });
            let scores = match r {
                Access::Done(s) => s,
                // Every score of a missing key is nil.
                Access::Absent => vec![None; members.len()],
                Access::WrongType => return push_error(out, typed::WRONGTYPE.as_bytes()),
            };
            push_array(out, scores.len());
            for s in scores {
                match s {
                    Some(s) => push_score(out, proto, s),
                    None => push_null(out, proto),
                }
            }
        }
        Cmd::Zrank | Cmd::Zrevrank => {
            let rev = cmd == Cmd::Zrevrank;
            let r = read(ctx, &args[1], Kind::ZSet, |z| view(z, |v| v.rank(&args[2], rev)));
            match r {
                Access::Done(Some(n)) => push_int(out, n as i64),
                Access::Done(None) | Access::Absent => null(ctx, out),
                Access::WrongType => push_error(out, typed::WRONGTYPE.as_bytes()),
            }
        }
        Cmd::Zcount => {
            let range = match ScoreRange::parse(&args[2], &args[3]) {
                Ok(r) => r,
                Err(_) => return push_error(out, ERR_RANGE_NOT_FLOAT.as_bytes()),
            };
            let r = read(ctx, &args[1], Kind::ZSet, |z| view(z, |v| v.count_in(&range)));
            if let Some(n) = typed::or_reply(r, out, |out| push_int(out, 0)) {
                push_int(out, n as i64);
            }
        }
        Cmd::Zlexcount => {
            let range = match LexRange::parse(&args[2], &args[3]) {
                Ok(r) => r,
                Err(_) => return push_error(out, ERR_LEX_RANGE.as_bytes()),
            };
            let r = read(ctx, &args[1], Kind::ZSet, |z| view(z, |v| v.lex_count(&range)));
            if let Some(n) = typed::or_reply(r, out, |out| push_int(out, 0)) {
                push_int(out, n as i64);
            }
        }
        Cmd::Zrange
        | Cmd::Zrangebyscore
        | Cmd::Zrevrangebyscore
        | Cmd::Zrangebylex
        | Cmd::Zrevrangebylex
        | Cmd::Zrevrange
        | Cmd::Zrangestore => zrange(ctx, cmd, args, out),
        Cmd::Zpopmin | Cmd::Zpopmax => zpop(ctx, cmd, args, out),
        Cmd::Zmpop => zmpop(ctx, args, out),
        Cmd::Zrandmember => zrandmember(ctx, args, out),
        Cmd::Zremrangebyrank | Cmd::Zremrangebyscore | Cmd::Zremrangebylex => zremrange(ctx, cmd, args, out),
        Cmd::Zscan => zscan(ctx, args, out),
        Cmd::Zunion
        | Cmd::Zinter
        | Cmd::Zdiff
        | Cmd::Zunionstore
        | Cmd::Zinterstore
        | Cmd::Zdiffstore
        | Cmd::Zintercard => algebra::run(ctx, cmd, args, out),
        _ => unreachable!("not a sorted-set command: {cmd:?}"),
    }
}

/// The large sorted set inside a [`Value`] that `read` found to be one.
fn large(v: &Value) -> &ZSet {
    match v {
        Value::ZSet(z) => z,
        _ => unreachable!("typed::read checked the kind"),
    }
}

fn zset_mut(v: &mut Value) -> &mut ZSet {
    match v {
        Value::ZSet(z) => z,
        _ => unreachable!("typed::write checked the kind"),
    }
}

/// Runs `f` on a read view of the sorted set found (a compact one read
/// in place).
pub fn view<R>(z: Found<'_>, f: impl FnOnce(ZView<'_>) -> R) -> R {
    match z {
        Found::Packed(b) => f(ZView::packed(b)),
        Found::Large(v) => f(large(v).view()),
    }
}

/// A score: `%.17g` as a bulk string (RESP2) or a double (RESP3).
pub fn push_score(out: &mut Vec<u8>, proto: Proto, s: f64) {
    match proto {
        Proto::Resp3 => {
            out.push(b',');
            format_score(s, out);
            out.extend_from_slice(b"\r\n");
        }
        _ => {
            let mut b = [0u8; SCORE_TEXT_MAX];
            let n = format_score_to(s, &mut b);
            push_bulk(out, &b[..n]);
        }
    }
}

/// The text of a score (ZSCAN's, always a bulk string).
fn score_text(s: f64) -> Vec<u8> {
    let mut b = Vec::with_capacity(SCORE_TEXT_MAX);
    format_score(s, &mut b);
    b
}

/// Member-score pairs as the ZRANGE family replies: members only, or
/// with their scores (RESP3: `[member, score]` arrays; RESP2: flat).
/// The reply stops, unfinished and never sent, once the output reaches
/// `stop`, the client's hard limit (`resp::process` closes the client).
pub(crate) fn push_pairs<'a>(
    out: &mut Vec<u8>,
    proto: Proto,
    stop: usize,
    n: usize,
    withscores: bool,
    pairs: impl Iterator<Item = (&'a [u8], f64)>,
) {
    let nested = withscores && proto == Proto::Resp3;
    push_array(out, if withscores && !nested { n * 2 } else { n });
    let mut sent = 0;
    for (m, s) in pairs.take(n) {
        if out.len() >= stop {
            return;
        }
        if nested {
            push_array(out, 2);
        }
        push_bulk(out, m);
        if withscores {
            push_score(out, proto, s);
        }
        sent += 1;
    }
    // A compact value that is not what its length says (never written by
    // this build): keep the reply well-formed.
    for _ in sent..n {
        if nested {
            push_array(out, 2);
        }
        push_bulk(out, b"");
        if withscores {
            push_score(out, proto, 0.0);
        }
    }
}

/// Replies with a count from a write that found an absent key (0) or a
/// wrong type.
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

/// ZADD, its options parsed as Redis's `zaddGenericCommand` does: the
/// flags, the pair count, the flag conflicts, every score, then the key.
fn zadd(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let mut flags = AddFlags::default();
    let mut ch = false;
    let mut j = 2;
    // Bounded: j advances each round.
    while j < args.len() {
        let a = &args[j];
        if is(a, "nx") {
            flags.nx = true;
        } else if is(a, "xx") {
            flags.xx = true;
        } else if is(a, "gt") {
            flags.gt = true;
        } else if is(a, "lt") {
            flags.lt = true;
        } else if is(a, "ch") {
            ch = true;
        } else if is(a, "incr") {
            flags.incr = true;
        } else {
            break;
        }
        j += 1;
    }
    let rest = &args[j..];
    if rest.is_empty() || rest.len() % 2 != 0 {
        return push_error(out, err::SYNTAX.as_bytes());
    }
    if let Err(e) = flags.check(rest.len() / 2) {
        return push_error(out, e.as_bytes());
    }
    let mut pairs: Vec<(f64, &[u8])> = Vec::with_capacity(rest.len() / 2);
    for p in rest.chunks_exact(2) {
        match parse_score(&p[0]) {
            Ok(s) => pairs.push((s, &p[1])),
            Err(e) => return push_error(out, e.as_bytes()),
        }
    }
    add_pairs(ctx, &args[1], flags, ch, &pairs, out);
}

/// Adds `pairs` to the sorted set at `key` and replies as ZADD (or, with
/// INCR, as ZINCRBY: the new score, nil if a flag refused it). Tells the
/// blocking registry when members were added.
pub fn add_pairs(ctx: &Ctx<'_>, key: &[u8], flags: AddFlags, ch: bool, pairs: &[(f64, &[u8])], out: &mut Vec<u8>) {
    // XX never creates the key (Redis replies without looking further).
    let event = if flags.incr { "zincr" } else { "zadd" };
    let r = write(ctx, key, Kind::ZSet, !flags.xx, Some((notify::ZSET, event)), |v, _, log| {
        let z = zset_mut(v);
        let (mut added, mut updated) = (0usize, 0usize);
        let mut last = None;
        for &(s, m) in pairs {
            match z.add(m, s, flags) {
                Ok(o) => {
                    match o {
                        AddOutcome::Added(_) => added += 1,
                        AddOutcome::Updated(_) => updated += 1,
                        _ => {}
                    }
                    last = Some(o);
                }
                // Only INCR's single pair can fail: nothing changed.
                Err(e) => return (Changed::No, Err(e)),
            }
        }
        let changed = if added + updated > 0 { Changed::Yes } else { Changed::No };
        // Every named member at its final score (absent ones skipped):
        // whatever the flags and increments did, this replays to it.
        log.log(|| Op::ZAdd(pairs.iter().filter_map(|&(_, m)| Some((z.score(m)?, m.to_vec()))).collect()));
        (changed, Ok((added, updated, last)))
    });
    let proto = ctx.proto();
    match r {
        Ok(Access::Done(Ok((added, updated, last)))) => {
            if added > 0 {
                ctx.ks.host.signal(key);
            }
            if flags.incr {
                match last {
                    Some(AddOutcome::Added(s) | AddOutcome::Updated(s) | AddOutcome::Unchanged(s)) => {
                        push_score(out, proto, s)
                    }
                    _ => push_null(out, proto),
                }
            } else {
                push_int(out, (added + if ch { updated } else { 0 }) as i64);
            }
        }
        Ok(Access::Done(Err(e))) => push_error(out, e.as_bytes()),
        Ok(Access::Absent) if flags.incr => push_null(out, proto),
        Ok(Access::Absent) => push_int(out, 0),
        Ok(Access::WrongType) => push_error(out, typed::WRONGTYPE.as_bytes()),
        Err(e) => e.reply(out),
    }
}

/// A parsed ZRANGE-family range.
#[derive(Debug, Clone, Copy)]
enum Range<'a> {
    Rank(i64, i64),
    Score(ScoreRange),
    Lex(LexRange<'a>),
}

impl Range<'_> {
    /// The members of `v` in range, in the reply's order.
    fn of<'v>(&self, v: &ZView<'v>, rev: bool, offset: i64, limit: i64) -> zset::ZRange<'v> {
        match self {
            Range::Rank(start, stop) => v.range_by_rank(*start, *stop, rev),
            Range::Score(r) => v.range_by_score(r, rev, offset, limit),
            Range::Lex(r) => v.range_by_lex(r, rev, offset, limit),
        }
    }
}

/// Which range a ZRANGE-family command reads, before its options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum By {
    Auto,
    Rank,
    Score,
    Lex,
}

/// ZRANGE and its older forms, and ZRANGESTORE: Redis 7.0's
/// `zrangeGenericCommand` (the options, their conflicts, the range, then
/// the key).
fn zrange(ctx: &mut Ctx<'_>, cmd: Cmd, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let store = cmd == Cmd::Zrangestore;
    let (mut by, mut rev) = match cmd {
        Cmd::Zrangebyscore => (By::Score, Some(false)),
        Cmd::Zrevrangebyscore => (By::Score, Some(true)),
        Cmd::Zrangebylex => (By::Lex, Some(false)),
        Cmd::Zrevrangebylex => (By::Lex, Some(true)),
        Cmd::Zrevrange => (By::Rank, Some(true)),
        _ => (By::Auto, None),
    };
    let first = if store { 2 } else { 1 };
    let (mut withscores, mut offset, mut limit) = (false, 0i64, -1i64);
    let mut j = first + 3;
    // Bounded: j advances each round.
    while j < args.len() {
        let left = args.len() - j - 1;
        let a = &args[j];
        if !store && is(a, "withscores") {
            withscores = true;
        } else if is(a, "limit") && left >= 2 {
            match (int_arg(&args[j + 1]), int_arg(&args[j + 2])) {
                (Some(o), Some(l)) => (offset, limit) = (o, l),
                _ => return push_error(out, err::NOT_INTEGER.as_bytes()),
            }
            j += 2;
        } else if rev.is_none() && is(a, "rev") {
            rev = Some(true);
        } else if by == By::Auto && is(a, "bylex") {
            by = By::Lex;
        } else if by == By::Auto && is(a, "byscore") {
            by = By::Score;
        } else {
            return push_error(out, err::SYNTAX.as_bytes());
        }
        j += 1;
    }
    let rev = rev.unwrap_or(false);
    if by == By::Auto {
        by = By::Rank;
    }
    if limit != -1 && by == By::Rank {
        return push_error(out, ERR_LIMIT_RANK.as_bytes());
    }
    if withscores && by == By::Lex {
        return push_error(out, ERR_WITHSCORES_LEX.as_bytes());
    }
    // A reversed score or lex range is given max first.
    let (lo, hi) =
        if rev && by != By::Rank { (&args[first + 2], &args[first + 1]) } else { (&args[first + 1], &args[first + 2]) };
    let range = match by {
        By::Score => match ScoreRange::parse(lo, hi) {
            Ok(r) => Range::Score(r),
            Err(_) => return push_error(out, ERR_RANGE_NOT_FLOAT.as_bytes()),
        },
        By::Lex => match LexRange::parse(lo, hi) {
            Ok(r) => Range::Lex(r),
            Err(_) => return push_error(out, ERR_LEX_RANGE.as_bytes()),
        },
        _ => match (int_arg(lo), int_arg(hi)) {
            (Some(s), Some(e)) => Range::Rank(s, e),
            _ => return push_error(out, err::NOT_INTEGER.as_bytes()),
        },
    };
    let src = &args[first];
    if store {
        let ctx: &Ctx<'_> = ctx;
        let t = ctx.ks.thresholds.load();
        let range_of =
            || read(ctx, src, Kind::ZSet, |z| view(z, |v| ZSet::from_pairs(range.of(&v, rev, offset, limit), &t)));
        let mut first = match range_of() {
            Access::Done(z) => Some(z),
            Access::Absent => Some(ZSet::new(&t)),
            Access::WrongType => return push_error(out, typed::WRONGTYPE.as_bytes()),
        };
        // A rerun (the engine made room) reads the source again; if it
        // changed kind meanwhile, the result is empty.
        let make = || {
            first.take().unwrap_or_else(|| match range_of() {
                Access::Done(z) => z,
                _ => ZSet::new(&t),
            })
        };
        return store_result(ctx, &args[1], "zrangestore", make, out);
    }
    let (proto, stop) = (ctx.proto(), ctx.out_stop);
    let r = read(ctx, src, Kind::ZSet, |z| {
        view(z, |v| {
            let it = range.of(&v, rev, offset, limit);
            let n = it.size_hint().0;
            push_pairs(out, proto, stop, n, withscores, it);
        })
    });
    typed::or_reply(r, out, |out| push_array(out, 0));
}

/// Stores the sorted set `make` builds at `dst` (replacing whatever it
/// held, its TTL too; an empty result deletes `dst`) and replies with its
/// size, as the *STORE forms. `make` runs again only if the engine reruns
/// the write (`typed::replace`).
/// `event` names the keyspace event of a stored result.
pub fn store_result(ctx: &Ctx<'_>, dst: &[u8], event: &'static str, mut make: impl FnMut() -> ZSet, out: &mut Vec<u8>) {
    let mut n = 0;
    let r = typed::replace(ctx, dst, || {
        let z = make();
        n = z.len();
        Value::ZSet(z)
    });
    match r {
        Ok(had) => {
            if n > 0 {
                ctx.ks.host.signal(dst);
            }
            typed::notify_stored(ctx, dst, notify::ZSET, event, n > 0, had);
            push_int(out, n as i64)
        }
        Err(e) => e.reply(out),
    }
}

/// Pops up to `count` members from the lowest (`max` false) or highest
/// end of the sorted set at `key` (an emptied set is deleted).
pub fn pop(ctx: &Ctx<'_>, key: &[u8], max: bool, count: usize) -> Result<Access<zset::Pairs>, Refused> {
    let event = if max { "zpopmax" } else { "zpopmin" };
    write(ctx, key, Kind::ZSet, false, Some((notify::ZSET, event)), |v, _, log| {
        let z = zset_mut(v);
        let popped = if max { z.pop_max(count) } else { z.pop_min(count) };
        log.log(|| Op::ZRem(popped.iter().map(|(m, _)| m.clone()).collect()));
        (if popped.is_empty() { Changed::No } else { Changed::Yes }, popped)
    })
}

/// ZPOPMIN and ZPOPMAX, with or without a count.
fn zpop(ctx: &mut Ctx<'_>, cmd: Cmd, args: &[Arg<'_>], out: &mut Vec<u8>) {
    if args.len() > 3 {
        return push_error(out, err::SYNTAX.as_bytes());
    }
    let count = match args.get(2) {
        None => None,
        Some(a) => match int_arg(a) {
            Some(n) if n >= 0 => Some(usize::try_from(n).unwrap_or(usize::MAX)),
            _ => return push_error(out, ERR_COUNT_POSITIVE.as_bytes()),
        },
    };
    let proto = ctx.proto();
    let popped = match pop(ctx, &args[1], cmd == Cmd::Zpopmax, count.unwrap_or(1)) {
        Ok(Access::Done(p)) => p,
        Ok(Access::Absent) => Vec::new(),
        Ok(Access::WrongType) => return push_error(out, typed::WRONGTYPE.as_bytes()),
        Err(e) => return e.reply(out),
    };
    // Without a count the pair is flat in RESP3 too (Redis 7.0).
    let p = if count.is_some() { proto } else { Proto::Resp2 };
    let pairs = popped.iter().map(|(m, s)| (m.as_slice(), *s));
    match p {
        Proto::Resp3 => push_pairs(out, proto, ctx.out_stop, popped.len(), true, pairs),
        _ => {
            push_array(out, popped.len() * 2);
            for (m, s) in pairs {
                push_bulk(out, m);
                push_score(out, proto, s);
            }
        }
    }
}

/// ZMPOP's and BZMPOP's parsed arguments.
#[derive(Debug)]
pub struct Mpop {
    pub numkeys: usize,
    pub max: bool,
    pub count: usize,
}

/// Parses `numkeys key... MIN|MAX [COUNT n]` starting at
/// `args[numkeys_at]`, as Redis's `zmpopGenericCommand` does.
pub fn mpop_args(args: &[Arg<'_>], numkeys_at: usize) -> Result<Mpop, &'static str> {
    let numkeys = match int_arg(&args[numkeys_at]) {
        Some(n) if n >= 1 => usize::try_from(n).unwrap_or(usize::MAX),
        _ => return Err(ERR_NUMKEYS),
    };
    let where_at = numkeys_at.checked_add(numkeys).and_then(|w| w.checked_add(1)).filter(|&w| w < args.len());
    let Some(where_at) = where_at else { return Err(err::SYNTAX) };
    let max = if is(&args[where_at], "min") {
        false
    } else if is(&args[where_at], "max") {
        true
    } else {
        return Err(err::SYNTAX);
    };
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
    Ok(Mpop { numkeys, max, count: count.unwrap_or(1) })
}

/// ZMPOP's and BZMPOP's reply: `[key, [[member, score]...]]` (nested in
/// RESP2 too).
pub fn reply_key_pairs(out: &mut Vec<u8>, proto: Proto, key: &[u8], pairs: &zset::Pairs) {
    push_array(out, 2);
    crate::db::push_key(out, key);
    push_array(out, pairs.len());
    for (m, s) in pairs {
        push_array(out, 2);
        push_bulk(out, m);
        push_score(out, proto, *s);
    }
}

fn zmpop(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let m = match mpop_args(args, 1) {
        Ok(m) => m,
        Err(e) => return push_error(out, e.as_bytes()),
    };
    let proto = ctx.proto();
    for k in &args[2..2 + m.numkeys] {
        match pop(ctx, k, m.max, m.count) {
            Ok(Access::Absent) => continue,
            Ok(Access::Done(p)) if p.is_empty() => continue,
            Ok(Access::WrongType) => return push_error(out, typed::WRONGTYPE.as_bytes()),
            Ok(Access::Done(p)) => return reply_key_pairs(out, proto, k, &p),
            Err(e) => return e.reply(out),
        }
    }
    push_null_array(out, proto);
}

fn zrandmember(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let proto = ctx.proto();
    let t = ctx.ks.thresholds.load();
    if args.len() == 2 {
        let r = read(ctx, &args[1], Kind::ZSet, |z| {
            with_zset(z, &t, |z| z.random_members(-1, &mut typed::random).pop().map(|(m, _)| m))
        });
        match r {
            Access::Done(Some(m)) => push_bulk(out, &m),
            Access::Done(None) | Access::Absent => null(ctx, out),
            Access::WrongType => push_error(out, typed::WRONGTYPE.as_bytes()),
        }
        return;
    }
    // Redis 7.0.15's order (as HRANDFIELD's): the count, the syntax,
    // WITHSCORES's halved range, then the key.
    let (count, withscores) = match typed::random_count_args(args, "withscores") {
        Ok(a) => a,
        Err(e) => return push_error(out, e.as_bytes()),
    };
    // Amalgam bounds the picks with repetition (hash.rs
    // RANDOM_PICKS_MAX), checked once the key holds a sorted set.
    let too_many = count < 0 && count.unsigned_abs() > super::hash::RANDOM_PICKS_MAX;
    let r = read(ctx, &args[1], Kind::ZSet, |z| {
        if too_many {
            return None;
        }
        Some(with_zset(z, &t, |z| z.random_members(count, &mut typed::random)))
    });
    let Some(picked) = typed::or_reply(r, out, |out| push_array(out, 0)) else { return };
    let Some(picked) = picked else { return push_error(out, typed::OUT_OF_RANGE.as_bytes()) };
    push_pairs(out, proto, ctx.out_stop, picked.len(), withscores, picked.iter().map(|(m, s)| (m.as_slice(), *s)));
}

/// Runs `f` on the sorted set found, decoding a compact one (bounded by
/// the listpack threshold) so that every operation has one code path.
/// `t`: the server's thresholds (the copy keeps its compact form).
fn with_zset<R>(z: Found<'_>, t: &Thresholds, f: impl FnOnce(&ZSet) -> R) -> R {
    match z {
        Found::Packed(b) => f(&ZSet::from_packed_trusted(b.to_vec(), t)),
        Found::Large(v) => f(large(v)),
    }
}

/// ZREMRANGEBYRANK / BYSCORE / BYLEX: the range first, then the key.
fn zremrange(ctx: &mut Ctx<'_>, cmd: Cmd, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let range = match cmd {
        Cmd::Zremrangebyrank => match (int_arg(&args[2]), int_arg(&args[3])) {
            (Some(s), Some(e)) => Range::Rank(s, e),
            _ => return push_error(out, err::NOT_INTEGER.as_bytes()),
        },
        Cmd::Zremrangebyscore => match ScoreRange::parse(&args[2], &args[3]) {
            Ok(r) => Range::Score(r),
            Err(_) => return push_error(out, ERR_RANGE_NOT_FLOAT.as_bytes()),
        },
        _ => match LexRange::parse(&args[2], &args[3]) {
            Ok(r) => Range::Lex(r),
            Err(_) => return push_error(out, ERR_LEX_RANGE.as_bytes()),
        },
    };
    let event = match cmd {
        Cmd::Zremrangebyrank => "zremrangebyrank",
        Cmd::Zremrangebyscore => "zremrangebyscore",
        _ => "zremrangebylex",
    };
    let r = write(ctx, &args[1], Kind::ZSet, false, Some((notify::ZSET, event)), |v, _, log| {
        let z = zset_mut(v);
        // Logged as the ranks removed: deterministic, and as short as the
        // command whatever the range's form.
        let ranks = match &range {
            Range::Rank(s, e) => (*s, *e),
            Range::Score(r) => rank_span(z.view().score_ranks(r)),
            Range::Lex(r) => rank_span(z.view().lex_ranks(r)),
        };
        let n = match &range {
            Range::Rank(s, e) => z.remove_range_by_rank(*s, *e),
            Range::Score(r) => z.remove_range_by_score(r),
            Range::Lex(r) => z.remove_range_by_lex(r),
        };
        log.log(|| Op::ZRemRank { start: ranks.0, stop: ranks.1 });
        (if n > 0 { Changed::Yes } else { Changed::No }, n)
    });
    reply_count(r, out);
}

/// Ranks `[lo, hi)` as ZREMRANGEBYRANK's inclusive `start stop`; an
/// empty span as `1 0`, which removes nothing (not `0 -1`: everything).
fn rank_span((lo, hi): (usize, usize)) -> (i64, i64) {
    if hi <= lo {
        return (1, 0);
    }
    let lo = i64::try_from(lo).unwrap_or(i64::MAX);
    let hi = i64::try_from(hi).unwrap_or(i64::MAX);
    (lo, hi - 1)
}

fn zscan(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let t = ctx.ks.thresholds.load();
    let scan = |z: Found<'_>, cursor, o: &typed::ScanArgs<'_>, kept: &mut Vec<(Vec<u8>, f64)>| {
        with_zset(z, &t, |z| {
            z.scan(cursor, o.count, &mut |m, s| {
                if o.matches(m) {
                    kept.push((m.to_vec(), s));
                }
            })
        })
    };
    typed::scan_command(ctx, args, Kind::ZSet, out, scan, 2, |out, (m, s)| {
        push_bulk(out, m);
        push_bulk(out, &score_text(*s));
    });
}
