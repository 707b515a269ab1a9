//! Stream commands: XADD XRANGE XREVRANGE XLEN XDEL XTRIM XSETID, the
//! reading half of XREAD and XREADGROUP (their blocking half is the RESP
//! front end's `resp/blocking.rs`, which calls [`Read::parse`] and
//! [`Read::serve`]), the consumer groups' commands (`stream/group.rs`:
//! XGROUP XACK XPENDING XCLAIM XAUTOCLAIM) and XINFO (`stream/info.rs`),
//! with Redis 7.0.15's argument order, replies and error texts (its
//! `src/t_stream.c`), as thin adapters over `amalgam_types::stream`
//! through `typed.rs`. A stream is always an object (the types crate's
//! module notes), so every write here changes it in place and logs its
//! effect as one [`Op`]: XADD as the entry with its ID and the trim's
//! effect, XDEL as the IDs removed, XTRIM as the first ID kept, XSETID as
//! its values, a group command (XREADGROUP included) as the groups whole.
//!
//! Every XADD tells the blocking registry (`Host::signal`), so a client
//! blocked in XREAD on that key is woken.

mod group;
mod info;

use super::table::Cmd;
use super::typed::{self, read, write, Access, Changed, Found};
use super::{int_arg, is, now_ms, Arg, Ctx};
use crate::notify;
use amalgam_protocol::resp::Proto;
use amalgam_protocol::resp::{
    err, push_array, push_bulk, push_error, push_int, push_map, push_null_array, push_simple,
};
use amalgam_types::op::Op;
use amalgam_types::stream::{
    parse_id, AddId, ParseRules, Stream, StreamId, Trim, TrimStrategy, ERR_ID_TOO_SMALL, ERR_ID_ZERO, ERR_INVALID_ID,
    STRICT, TRIM_LIMIT_DEFAULT,
};
use amalgam_types::value::Value;
use amalgam_types::Kind;
use std::time::Duration;

/// XSETID on a missing key (Redis's `shared.nokeyerr`).
const ERR_NO_SUCH_KEY: &str = "ERR no such key";
const ERR_MAXLEN_MINID: &str = "ERR syntax error, MAXLEN and MINID options at the same time are not compatible";
const ERR_MAXLEN_NEGATIVE: &str = "ERR The MAXLEN argument must be >= 0.";
const ERR_LIMIT_NEGATIVE: &str = "ERR The LIMIT argument must be >= 0.";
const ERR_LIMIT_NO_STRATEGY: &str = "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy";
const ERR_XTRIM_NO_STRATEGY: &str = "ERR syntax error, XTRIM must be called with a trimming strategy";
const ERR_LIMIT_NO_TILDE: &str = "ERR syntax error, LIMIT cannot be used without the special ~ option";
pub(crate) const ERR_START_ID: &str = "ERR invalid start ID for the interval";
pub(crate) const ERR_END_ID: &str = "ERR invalid end ID for the interval";
const ERR_UNBALANCED: &str =
    "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.";
const ERR_GROUP_ON_XREAD: &str = "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.";
const ERR_NOACK_ON_XREAD: &str = "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.";
const ERR_GT_ON_XREAD: &str =
    "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.";
const ERR_MISSING_GROUP: &str = "ERR Missing GROUP option for XREADGROUP";
const ERR_DOLLAR_ON_XREADGROUP: &str = "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.";
/// A client blocked in XREADGROUP whose key was deleted (DEL, UNLINK).
const ERR_KEY_GONE: &str = "UNBLOCKED the stream key no longer exists";
/// A client blocked in XREADGROUP whose group was destroyed.
const ERR_GROUP_GONE: &str = "NOGROUP the consumer group this client was blocked on no longer exists";
const ERR_TIMEOUT_NOT_INTEGER: &str = "ERR timeout is not an integer or out of range";
const ERR_TIMEOUT_NEGATIVE: &str = "ERR timeout is negative";
const ERR_ENTRIES_ADDED: &str = "ERR entries_added must be positive";
const ERR_SETID_BELOW_MAXDEL: &str = "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id";

pub fn run(ctx: &mut Ctx<'_>, cmd: Cmd, args: &[Arg<'_>], out: &mut Vec<u8>) {
    match cmd {
        Cmd::Xadd => xadd(ctx, args, out),
        Cmd::Xrange | Cmd::Xrevrange => xrange(ctx, args, cmd == Cmd::Xrevrange, out),
        Cmd::Xlen => {
            let r = read(ctx, &args[1], Kind::Stream, |f| with_stream(f, |s| s.len()));
            if let Some(n) = typed::or_reply(r, out, |out| push_int(out, 0)) {
                push_int(out, n as i64);
            }
        }
        Cmd::Xdel => xdel(ctx, args, out),
        Cmd::Xtrim => xtrim(ctx, args, out),
        Cmd::Xsetid => xsetid(ctx, args, out),
        Cmd::Xgroup | Cmd::Xack | Cmd::Xpending | Cmd::Xclaim | Cmd::Xautoclaim => group::run(ctx, cmd, args, out),
        Cmd::Xinfo => info::run(ctx, args, out),
        _ => {}
    }
}

/// Runs `f` on the stream a read found.
pub(crate) fn with_stream<R>(found: Found<'_>, f: impl FnOnce(&Stream) -> R) -> R {
    match found {
        Found::Large(Value::Stream(s)) => f(s),
        // A stream is never packed (amalgam-types `value.rs`).
        _ => f(&Stream::new()),
    }
}

/// The stream a write was given (always one: `write` checks the kind).
pub(crate) fn stream_mut(v: &mut Value) -> &mut Stream {
    match v {
        Value::Stream(s) => s,
        _ => unreachable!("typed::write hands a stream write a stream"),
    }
}

/// Parses a strict ID argument (Redis's `streamParseStrictIDOrReply`).
pub(crate) fn strict_id(a: &[u8]) -> Result<StreamId, &'static str> {
    parse_id(a, STRICT).map(|p| p.id).ok_or(ERR_INVALID_ID)
}

/// Appends one entry: `[id, [field, value, …]]`.
pub(crate) fn push_entry(out: &mut Vec<u8>, id: StreamId, pairs: &[(&[u8], &[u8])]) {
    push_array(out, 2);
    push_bulk(out, id.to_string().as_bytes());
    push_array(out, pairs.len() * 2);
    for (f, v) in pairs {
        push_bulk(out, f);
        push_bulk(out, v);
    }
}

/// XADD's and XTRIM's trimming options (Redis's
/// `streamParseAddOrTrimArgsOrReply`).
#[derive(Debug, Default)]
struct AddArgs {
    trim: Option<Trim>,
    nomkstream: bool,
    /// XADD: the ID argument's position.
    id_at: usize,
    id: Option<AddId>,
}

/// A `~` trim's work bound without LIMIT, Redis's: 100 nodes of
/// `stream-node-max-entries`, at most (and when that is 0)
/// [`TRIM_LIMIT_DEFAULT`].
fn trim_limit_default(node_max_entries: usize) -> u64 {
    match (node_max_entries as u64).saturating_mul(100) {
        0 => TRIM_LIMIT_DEFAULT,
        n => n.min(TRIM_LIMIT_DEFAULT),
    }
}

/// Parses the options from `args[2]` on; for XADD up to and with its ID.
fn parse_add_args(args: &[Arg<'_>], xadd: bool, node_max_entries: usize) -> Result<AddArgs, &'static str> {
    let mut a = AddArgs::default();
    let mut strategy: Option<TrimStrategy> = None;
    let mut approx = false;
    let mut limit: Option<u64> = None;
    let mut i = 2;
    // Bounded: i advances every round.
    while i < args.len() {
        let more = args.len() - 1 - i;
        let opt = &args[i][..];
        if xadd && opt == b"*" {
            a.id = Some(AddId::Auto);
            a.id_at = i;
            break;
        } else if (is(opt, "maxlen") || is(opt, "minid")) && more >= 1 {
            if strategy.is_some() {
                return Err(ERR_MAXLEN_MINID);
            }
            approx = false;
            if more >= 2 && (&args[i + 1][..] == b"~" || &args[i + 1][..] == b"=") {
                approx = &args[i + 1][..] == b"~";
                i += 1;
            }
            if is(opt, "maxlen") {
                let n = int_arg(&args[i + 1]).ok_or(err::NOT_INTEGER)?;
                if n < 0 {
                    return Err(ERR_MAXLEN_NEGATIVE);
                }
                strategy = Some(TrimStrategy::MaxLen(n as u64));
            } else {
                strategy = Some(TrimStrategy::MinId(strict_id(&args[i + 1])?));
            }
            i += 2;
        } else if is(opt, "limit") && more >= 1 {
            let n = int_arg(&args[i + 1]).ok_or(err::NOT_INTEGER)?;
            if n < 0 {
                return Err(ERR_LIMIT_NEGATIVE);
            }
            limit = Some(n as u64);
            i += 2;
        } else if xadd && is(opt, "nomkstream") {
            a.nomkstream = true;
            i += 1;
        } else if xadd {
            let rules = ParseRules { strict: true, partial_seq: true, missing_seq: 0 };
            let p = parse_id(opt, rules).ok_or(ERR_INVALID_ID)?;
            a.id = Some(if p.seq_given { AddId::Explicit(p.id) } else { AddId::Partial(p.id.ms) });
            a.id_at = i;
            break;
        } else {
            return Err(err::SYNTAX);
        }
    }
    if limit.is_some_and(|l| l != 0) && strategy.is_none() {
        return Err(ERR_LIMIT_NO_STRATEGY);
    }
    if !xadd && strategy.is_none() {
        return Err(ERR_XTRIM_NO_STRATEGY);
    }
    if limit.is_some() && !approx {
        return Err(ERR_LIMIT_NO_TILDE);
    }
    let limit = match limit {
        Some(l) => l,
        None if approx => trim_limit_default(node_max_entries),
        None => 0,
    };
    a.trim = strategy.map(|strategy| Trim { strategy, approx, limit });
    if xadd && a.id.is_none() {
        // Options to the end and no ID: the field/value check fails.
        a.id_at = args.len();
    }
    Ok(a)
}

fn xadd(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let t = ctx.ks.thresholds.load();
    let a = match parse_add_args(args, true, t.stream_node_max_entries) {
        Ok(a) => a,
        Err(e) => return push_error(out, e.as_bytes()),
    };
    let fields_at = a.id_at + 1;
    if args.len() < fields_at + 2 || (args.len() - fields_at) % 2 == 1 {
        return super::wrong_arity("xadd", out);
    }
    let want = a.id.unwrap_or(AddId::Auto);
    if want == AddId::Explicit(StreamId::MIN) {
        return push_error(out, ERR_ID_ZERO.as_bytes());
    }
    let pairs: Vec<(&[u8], &[u8])> = args[fields_at..].chunks_exact(2).map(|p| (&p[0][..], &p[1][..])).collect();
    let now = now_ms().max(0) as u64;
    let key = &args[1];
    let r = write(ctx, key, Kind::Stream, !a.nomkstream, Some((notify::STREAM, "xadd")), |v, t, log| {
        let s = stream_mut(v);
        let id = match s.next_id(want, now) {
            Ok(id) => id,
            Err(e) => return (Changed::No, Err(e)),
        };
        if !s.append_within(id, &pairs, t.stream_node_max_entries, t.stream_node_max_bytes) {
            return (Changed::No, Err(ERR_ID_TOO_SMALL));
        }
        let trimmed = a.trim.map_or(0, |t| s.trim(t));
        log.log(|| Op::XAdd {
            id,
            pairs: pairs.iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect(),
            trim: (trimmed > 0).then(|| s.trim_effect()),
        });
        (Changed::Yes, Ok((id, trimmed)))
    });
    match r {
        Err(e) => e.reply(out),
        // NOMKSTREAM of a missing key: a null bulk (`$-1`, RESP3 `_`).
        Ok(Access::Absent) => super::null(ctx, out),
        Ok(Access::WrongType) => push_error(out, typed::WRONGTYPE.as_bytes()),
        Ok(Access::Done(Err(e))) => push_error(out, e.as_bytes()),
        Ok(Access::Done(Ok((id, trimmed)))) => {
            push_bulk(out, id.to_string().as_bytes());
            if trimmed > 0 {
                ctx.notify(notify::STREAM, "xtrim", key);
            }
            ctx.ks.host.signal(key);
        }
    }
}

/// An interval bound of XRANGE (Redis's `streamParseIntervalIDOrReply`):
/// `(` makes it exclusive.
pub(crate) fn interval(a: &[u8], missing_seq: u64) -> Result<(StreamId, bool), &'static str> {
    if a.len() > 1 && a[0] == b'(' {
        let rules = ParseRules { strict: true, partial_seq: false, missing_seq };
        return parse_id(&a[1..], rules).map(|p| (p.id, true)).ok_or(ERR_INVALID_ID);
    }
    let rules = ParseRules { strict: false, partial_seq: false, missing_seq };
    parse_id(a, rules).map(|p| (p.id, false)).ok_or(ERR_INVALID_ID)
}

fn range_args(args: &[Arg<'_>], rev: bool) -> Result<(StreamId, StreamId, Option<usize>), &'static str> {
    let (start_arg, end_arg) = if rev { (&args[3], &args[2]) } else { (&args[2], &args[3]) };
    let (mut start, ex) = interval(start_arg, 0)?;
    if ex {
        start = start.next().ok_or(ERR_START_ID)?;
    }
    let (mut end, ex) = interval(end_arg, u64::MAX)?;
    if ex {
        end = end.prev().ok_or(ERR_END_ID)?;
    }
    let mut count: Option<usize> = None;
    let mut j = 4;
    // Bounded: j advances by 2 each round.
    while j < args.len() {
        if is(&args[j], "count") && j + 1 < args.len() {
            let n = int_arg(&args[j + 1]).ok_or(err::NOT_INTEGER)?;
            count = Some(usize::try_from(n.max(0)).unwrap_or(usize::MAX));
            j += 2;
        } else {
            return Err(err::SYNTAX);
        }
    }
    Ok((start, end, count))
}

fn xrange(ctx: &mut Ctx<'_>, args: &[Arg<'_>], rev: bool, out: &mut Vec<u8>) {
    let (start, end, count) = match range_args(args, rev) {
        Ok(a) => a,
        Err(e) => return push_error(out, e.as_bytes()),
    };
    let proto = ctx.proto();
    let r = read(ctx, &args[1], Kind::Stream, |f| {
        with_stream(f, |s| {
            if count == Some(0) {
                return push_null_array(out, proto);
            }
            reply_range(out, s, start, end, rev, count.unwrap_or(0));
        })
    });
    typed::or_reply(r, out, |out| push_array(out, 0));
}

/// Appends the entries of `s` in `start..=end` (at most `count`, 0: all)
/// as an array.
fn reply_range(out: &mut Vec<u8>, s: &Stream, start: StreamId, end: StreamId, rev: bool, count: usize) -> usize {
    let mut body = Vec::new();
    let mut n = 0usize;
    s.scan(start, end, rev, |id, pairs| {
        push_entry(&mut body, id, pairs);
        n += 1;
        count == 0 || n < count
    });
    push_array(out, n);
    out.extend_from_slice(&body);
    n
}

fn xdel(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    // Redis 7.0.15 looks the key up first: a missing key answers 0
    // whatever the IDs are, and only then are they checked.
    let ids: Result<Vec<StreamId>, _> = args[2..].iter().map(|a| strict_id(a)).collect();
    let r = write(ctx, &args[1], Kind::Stream, false, Some((notify::STREAM, "xdel")), |v, _, log| {
        let s = stream_mut(v);
        let ids = match &ids {
            Ok(ids) => ids,
            Err(e) => return (Changed::No, Err(*e)),
        };
        let gone: Vec<StreamId> = ids.iter().copied().filter(|id| s.delete(*id)).collect();
        if gone.is_empty() {
            return (Changed::No, Ok(0));
        }
        let n = gone.len();
        log.log(|| Op::XDel(gone));
        (Changed::Yes, Ok(n))
    });
    match r {
        Err(e) => e.reply(out),
        Ok(a) => match typed::or_reply(a, out, |out| push_int(out, 0)) {
            Some(Ok(n)) => push_int(out, n as i64),
            Some(Err(e)) => push_error(out, e.as_bytes()),
            None => {}
        },
    }
}

fn xtrim(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let a = match parse_add_args(args, false, ctx.ks.thresholds.load().stream_node_max_entries) {
        Ok(a) => a,
        Err(e) => return push_error(out, e.as_bytes()),
    };
    let Some(t) = a.trim else { return push_error(out, ERR_XTRIM_NO_STRATEGY.as_bytes()) };
    let r = write(ctx, &args[1], Kind::Stream, false, Some((notify::STREAM, "xtrim")), |v, _, log| {
        let s = stream_mut(v);
        let n = s.trim(t);
        if n == 0 {
            return (Changed::No, 0);
        }
        log.log(|| Op::XTrim(s.trim_effect()));
        (Changed::Yes, n)
    });
    match r {
        Err(e) => e.reply(out),
        Ok(a) => {
            if let Some(n) = typed::or_reply(a, out, |out| push_int(out, 0)) {
                push_int(out, n as i64);
            }
        }
    }
}

fn xsetid(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let id = match strict_id(&args[2]) {
        Ok(id) => id,
        Err(e) => return push_error(out, e.as_bytes()),
    };
    let mut entries_added: Option<u64> = None;
    let mut max_deleted: Option<StreamId> = None;
    let mut i = 3;
    // Bounded: i advances by 2 each round.
    while i < args.len() {
        let more = args.len() - 1 - i;
        if is(&args[i], "entriesadded") && more >= 1 {
            match int_arg(&args[i + 1]) {
                None => return push_error(out, err::NOT_INTEGER.as_bytes()),
                Some(n) if n < 0 => return push_error(out, ERR_ENTRIES_ADDED.as_bytes()),
                Some(n) => entries_added = Some(n as u64),
            }
        } else if is(&args[i], "maxdeletedid") && more >= 1 {
            match strict_id(&args[i + 1]) {
                Err(e) => return push_error(out, e.as_bytes()),
                Ok(m) if id < m => return push_error(out, ERR_SETID_BELOW_MAXDEL.as_bytes()),
                Ok(m) => max_deleted = Some(m),
            }
        } else {
            return push_error(out, err::SYNTAX.as_bytes());
        }
        i += 2;
    }
    let r = write(ctx, &args[1], Kind::Stream, false, Some((notify::STREAM, "xsetid")), |v, _, log| {
        let s = stream_mut(v);
        if let Err(e) = s.set_id(id, entries_added, max_deleted) {
            return (Changed::No, Err(e));
        }
        log.log(|| Op::XSetId { last: id, entries_added, max_deleted });
        (Changed::Yes, Ok(()))
    });
    match r {
        Err(e) => e.reply(out),
        Ok(Access::Done(Ok(()))) => push_simple(out, "OK"),
        Ok(Access::Done(Err(e))) => push_error(out, e.as_bytes()),
        Ok(Access::Absent) => push_error(out, ERR_NO_SUCH_KEY.as_bytes()),
        Ok(Access::WrongType) => push_error(out, typed::WRONGTYPE.as_bytes()),
    }
}

/// XREADGROUP's group, consumer and NOACK.
#[derive(Debug)]
struct GroupRead {
    name: Vec<u8>,
    consumer: Vec<u8>,
    noack: bool,
}

/// A parsed XREAD or XREADGROUP: its streams and the IDs to read after,
/// resolved (`$` is the stream's last ID when the command ran; None is
/// XREADGROUP's `>`), COUNT, BLOCK, the group.
#[derive(Debug)]
pub struct Read {
    /// The keys in the command's order (stored forms; may repeat).
    pub keys: Vec<Vec<u8>>,
    after: Vec<Option<StreamId>>,
    /// At most this many entries per stream (0: all).
    count: usize,
    /// BLOCK: None without it; Some(None) forever.
    pub block: Option<Option<Duration>>,
    group: Option<GroupRead>,
}

/// What serving one stream of a read did.
enum Served {
    /// Nothing to give (the caller blocks or answers null).
    Nothing,
    /// The reply's `[key, entries]` (XREADGROUP: and a consumer was made).
    Yes(Vec<u8>, bool),
    /// The group went away while the client waited.
    NoGroup,
    /// The key went away (or holds another kind now) while the client
    /// waited in XREADGROUP.
    KeyGone,
}

impl Read {
    /// Parses XREAD or XREADGROUP (`group`), as Redis 7.0.15's
    /// `xreadCommand` does up to its reads, the keys' kinds and groups
    /// checked in order; on an error, replies it and returns None.
    pub fn parse(ctx: &Ctx<'_>, args: &[Arg<'_>], xreadgroup: bool, out: &mut Vec<u8>) -> Option<Read> {
        let mut count = 0usize;
        let mut block: Option<Option<Duration>> = None;
        let mut streams_at = 0usize;
        let mut group: Option<GroupRead> = None;
        let mut noack = false;
        let mut i = 1;
        // Bounded: i advances every round.
        while i < args.len() {
            let more = args.len() - 1 - i;
            let o = &args[i];
            if is(o, "block") && more >= 1 {
                if ctx.scripted {
                    // Refused in scripts since Redis 5.0 (it cannot block there).
                    let name = if xreadgroup { "XREADGROUP" } else { "XREAD" };
                    let e = format!("ERR {name} command is not allowed with BLOCK option from scripts");
                    return error(out, &e);
                }
                i += 1;
                match int_arg(&args[i]) {
                    None => return error(out, ERR_TIMEOUT_NOT_INTEGER),
                    Some(t) if t < 0 => return error(out, ERR_TIMEOUT_NEGATIVE),
                    Some(0) => block = Some(None),
                    Some(t) => block = Some(Some(Duration::from_millis(t as u64))),
                }
            } else if is(o, "count") && more >= 1 {
                i += 1;
                match int_arg(&args[i]) {
                    None => return error(out, err::NOT_INTEGER),
                    Some(n) => count = usize::try_from(n.max(0)).unwrap_or(usize::MAX),
                }
            } else if is(o, "streams") && more >= 1 {
                streams_at = i + 1;
                if (args.len() - streams_at) % 2 != 0 {
                    return error(out, ERR_UNBALANCED);
                }
                break;
            } else if is(o, "group") && more >= 2 {
                if !xreadgroup {
                    return error(out, ERR_GROUP_ON_XREAD);
                }
                group = Some(GroupRead { name: args[i + 1].to_vec(), consumer: args[i + 2].to_vec(), noack: false });
                i += 2;
            } else if is(o, "noack") {
                if !xreadgroup {
                    return error(out, ERR_NOACK_ON_XREAD);
                }
                noack = true;
            } else {
                return error(out, err::SYNTAX);
            }
            i += 1;
        }
        if streams_at == 0 {
            return error(out, err::SYNTAX);
        }
        if xreadgroup && group.is_none() {
            return error(out, ERR_MISSING_GROUP);
        }
        if let Some(g) = &mut group {
            g.noack = noack;
        }
        let n = (args.len() - streams_at) / 2;
        let keys: Vec<Vec<u8>> = args[streams_at..streams_at + n].iter().map(|k| k.to_vec()).collect();
        let mut after = Vec::with_capacity(n);
        for (k, a) in keys.iter().zip(&args[streams_at + n..]) {
            let gname = group.as_ref().map(|g| &g.name[..]);
            let found = read(ctx, k, Kind::Stream, |f| {
                with_stream(f, |s| (s.last_id(), gname.is_some_and(|g| s.group(g).is_some())))
            });
            if found == Access::WrongType {
                return error(out, typed::WRONGTYPE);
            }
            if let Some(g) = gname {
                if !matches!(found, Access::Done((_, true))) {
                    push_error(out, &group::no_group(k, g, " in XREADGROUP with GROUP option"));
                    return None;
                }
            }
            if &a[..] == b"$" {
                if xreadgroup {
                    return error(out, ERR_DOLLAR_ON_XREADGROUP);
                }
                after.push(Some(match found {
                    Access::Done((last, _)) => last,
                    _ => StreamId::MIN,
                }));
            } else if &a[..] == b">" {
                if !xreadgroup {
                    return error(out, ERR_GT_ON_XREAD);
                }
                after.push(None);
            } else {
                match strict_id(a) {
                    // Redis marks `>` as the largest ID: XREADGROUP with
                    // that ID written out reads new entries too.
                    Ok(StreamId::MAX) if xreadgroup => after.push(None),
                    Ok(id) => after.push(Some(id)),
                    Err(e) => return error(out, e),
                }
            }
        }
        Some(Read { keys, after, count, block, group })
    }

    /// Replies the entries after each stream's ID, for the streams that
    /// have some (`first_only`: the first such stream alone, as Redis
    /// serves a woken client), as XREAD and XREADGROUP do; false, and
    /// nothing appended, if none has any (the caller blocks or answers
    /// null). `order` lists the indexes of [`Read::keys`] to try, in
    /// order. XREADGROUP's reads are writes (the PEL, the group's last
    /// ID, the consumer).
    pub fn serve(&self, ctx: &Ctx<'_>, order: &[usize], first_only: bool, out: &mut Vec<u8>) -> bool {
        let mut body = Vec::new();
        let mut served = 0usize;
        // Bounded by the command's keys.
        for &i in order {
            let (Some(key), Some(&after)) = (self.keys.get(i), self.after.get(i)) else { continue };
            let r = match &self.group {
                None => self.serve_plain(ctx, key, after.unwrap_or(StreamId::MAX)),
                Some(g) => self.serve_group(ctx, key, after, g),
            };
            match r {
                Served::Nothing => continue,
                Served::NoGroup if served == 0 => {
                    push_error(out, ERR_GROUP_GONE.as_bytes());
                    return true;
                }
                Served::NoGroup => continue,
                Served::KeyGone if first_only && served == 0 => {
                    push_error(out, ERR_KEY_GONE.as_bytes());
                    return true;
                }
                Served::KeyGone => continue,
                Served::Yes(b, created) => {
                    if created {
                        ctx.notify(notify::STREAM, "xgroup-createconsumer", key);
                    }
                    body.extend_from_slice(&b);
                }
            }
            served += 1;
            if first_only {
                break;
            }
        }
        if served == 0 {
            return false;
        }
        match ctx.proto() {
            Proto::Resp2 => push_array(out, served),
            proto => push_map(out, served, proto),
        }
        out.extend_from_slice(&body);
        true
    }

    /// `[key, entries]` opened (its second element follows).
    fn open(ctx: &Ctx<'_>, key: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        if ctx.proto() == Proto::Resp2 {
            push_array(&mut b, 2);
        }
        crate::db::push_key(&mut b, key);
        b
    }

    fn serve_plain(&self, ctx: &Ctx<'_>, key: &[u8], after: StreamId) -> Served {
        let Some(start) = after.next() else { return Served::Nothing };
        let r = read(ctx, key, Kind::Stream, |f| {
            with_stream(f, |s| {
                if s.is_empty() || s.last_valid_id() <= after {
                    return None;
                }
                let mut b = Read::open(ctx, key);
                reply_range(&mut b, s, start, StreamId::MAX, false, self.count);
                Some(b)
            })
        });
        match r {
            Access::Done(Some(b)) => Served::Yes(b, false),
            _ => Served::Nothing,
        }
    }

    fn serve_group(&self, ctx: &Ctx<'_>, key: &[u8], after: Option<StreamId>, g: &GroupRead) -> Served {
        let now = now_ms().max(0) as u64;
        let proto = ctx.proto();
        let r = write(ctx, key, Kind::Stream, false, None, |v, _, log| {
            let s = stream_mut(v);
            let Some(last) = s.group(&g.name).map(|x| x.last_id) else { return (Changed::No, Served::NoGroup) };
            if after.is_none() && (s.is_empty() || s.last_valid_id() <= last) {
                return (Changed::No, Served::Nothing);
            }
            let created = s.touch_consumer(&g.name, &g.consumer, now) == Some(true);
            let mut b = Read::open(ctx, key);
            match after {
                None => {
                    let got = s.read_new(&g.name, &g.consumer, self.count, g.noack, now).unwrap_or_default();
                    push_array(&mut b, got.len());
                    for e in &got {
                        let pairs: Vec<(&[u8], &[u8])> = e.pairs.iter().map(|(f, v)| (&f[..], &v[..])).collect();
                        push_entry(&mut b, e.id, &pairs);
                    }
                }
                Some(id) => {
                    let got = s.read_history(&g.name, &g.consumer, id, self.count, now).unwrap_or_default();
                    group::push_delivered(&mut b, &got, false, proto);
                }
            }
            log.log(|| Op::XGroups(s.groups_bytes()));
            (Changed::Yes, Served::Yes(b, created))
        });
        match r {
            Ok(Access::Done(s)) => s,
            Ok(Access::Absent | Access::WrongType) => Served::KeyGone,
            Err(_) => Served::Nothing,
        }
    }
}

fn error<T>(out: &mut Vec<u8>, e: &str) -> Option<T> {
    push_error(out, e.as_bytes());
    None
}
