//! Consumer groups' commands: XGROUP (CREATE CREATECONSUMER DELCONSUMER
//! DESTROY SETID HELP), XACK, XPENDING, XCLAIM, XAUTOCLAIM, with Redis
//! 7.0.15's order of checks, replies and error texts (its
//! `src/t_stream.c`); XREADGROUP's reads are [`super::Read`]'s. The state
//! is amalgam-types' `stream/group.rs`. Each change is logged as the
//! stream's groups whole ([`Op::XGroups`]): simple and exact, but a
//! record grows with the groups' pending entries (module notes of
//! `super`).

use super::{push_entry, stream_mut, strict_id, with_stream, ERR_END_ID, ERR_START_ID};
use crate::notify;
use crate::table::Cmd;
use crate::typed::{self, read, write, Access, Changed};
use crate::{help, int_arg, is, now_ms, sub, Arg, Ctx};
use amalgam_protocol::resp::{
    err, push_array, push_bulk, push_error, push_int, push_null, push_null_array, push_simple,
};
use amalgam_types::op::Op;
use amalgam_types::stream::{
    parse_id, AutoClaim, ClaimOptions, Delivered, ParseRules, Stream, StreamId, ENTRIES_READ_UNKNOWN, ERR_INVALID_ID,
};
use amalgam_types::Kind;

const ERR_KEY_REQUIRED: &str = "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.";
const ERR_BUSYGROUP: &str = "BUSYGROUP Consumer Group name already exists";
const ERR_ENTRIES_READ: &str = "ERR value for ENTRIESREAD must be positive or -1";
/// XAUTOCLAIM's COUNT at most (Redis: `LONG_MAX / max(sizeof(streamID), 10)`).
const AUTOCLAIM_COUNT_MAX: i64 = i64::MAX / 16;
/// XAUTOCLAIM's COUNT when none is given.
const AUTOCLAIM_COUNT_DEFAULT: usize = 100;

pub(crate) fn run(ctx: &mut Ctx<'_>, cmd: Cmd, args: &[Arg<'_>], out: &mut Vec<u8>) {
    match cmd {
        Cmd::Xgroup => xgroup(ctx, args, out),
        Cmd::Xack => xack(ctx, args, out),
        Cmd::Xpending => xpending(ctx, args, out),
        Cmd::Xclaim => xclaim(ctx, args, out),
        Cmd::Xautoclaim => xautoclaim(ctx, args, out),
        _ => {}
    }
}

/// Redis's `-NOGROUP No such key '…' or consumer group '…'` (with a
/// command's own suffix).
pub(crate) fn no_group(key: &[u8], group: &[u8], suffix: &str) -> Vec<u8> {
    let mut m = b"NOGROUP No such key '".to_vec();
    m.extend_from_slice(crate::db::user_key(key));
    m.extend_from_slice(b"' or consumer group '");
    m.extend_from_slice(group);
    m.extend_from_slice(b"'");
    m.extend_from_slice(suffix.as_bytes());
    m
}

/// Redis's `-NOGROUP No such consumer group '…' for key name '…'`.
pub(crate) fn no_such_group(key: &[u8], group: &[u8]) -> Vec<u8> {
    let mut m = b"NOGROUP No such consumer group '".to_vec();
    m.extend_from_slice(group);
    m.extend_from_slice(b"' for key name '");
    m.extend_from_slice(crate::db::user_key(key));
    m.extend_from_slice(b"'");
    m
}

/// Redis's `addReplySubcommandSyntaxError`.
pub(crate) fn subcommand_syntax(args: &[Arg<'_>], container: &str, out: &mut Vec<u8>) {
    let mut m = b"ERR unknown subcommand or wrong number of arguments for '".to_vec();
    let a = &args[1];
    m.extend_from_slice(&a[..a.len().min(128)]);
    m.extend_from_slice(format!("'. Try {container} HELP.").as_bytes());
    push_error(out, &m);
}

/// The log's record of a group change: the groups whole.
fn log_groups(s: &Stream) -> Op {
    Op::XGroups(s.groups_bytes())
}

fn now() -> u64 {
    now_ms().max(0) as u64
}

fn xgroup(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let Some(name) = sub(Cmd::Xgroup, args, out) else { return };
    if name == "help" {
        return help(
            &[
                "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "CREATE <key> <groupname> <id|$> [option]",
                "    Create a new consumer group. Options are:",
                "    * MKSTREAM",
                "      Create the empty stream if it does not exist.",
                "    * ENTRIESREAD entries_read",
                "      Set the group's entries_read counter (internal use).",
                "CREATECONSUMER <key> <groupname> <consumer>",
                "    Create a new consumer in the specified group.",
                "DELCONSUMER <key> <groupname> <consumer>",
                "    Remove the specified consumer.",
                "DESTROY <key> <groupname>",
                "    Remove the specified group.",
                "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
                "    Set the current group ID and entries_read counter.",
                "HELP",
                "    Prints this help.",
            ],
            out,
        );
    }
    let mut mkstream = false;
    let mut entries_read = ENTRIES_READ_UNKNOWN;
    if name == "create" || name == "setid" {
        let mut i = 5;
        // Bounded: i advances every round.
        while i < args.len() {
            if name == "create" && is(&args[i], "mkstream") {
                mkstream = true;
                i += 1;
            } else if is(&args[i], "entriesread") && i + 1 < args.len() {
                match int_arg(&args[i + 1]) {
                    None => return push_error(out, err::NOT_INTEGER.as_bytes()),
                    Some(n) if n < 0 && n != ENTRIES_READ_UNKNOWN => {
                        return push_error(out, ERR_ENTRIES_READ.as_bytes())
                    }
                    Some(n) => entries_read = n,
                }
                i += 2;
            } else {
                return subcommand_syntax(args, "XGROUP", out);
            }
        }
    }
    let (key, group) = (&args[2], &args[3][..]);
    let argc = args.len();
    let shape_ok = match name {
        "create" => argc <= 8,
        "setid" => argc == 5 || argc == 7,
        _ => true,
    };
    let event = match name {
        "create" => "xgroup-create",
        "setid" => "xgroup-setid",
        "destroy" => "xgroup-destroy",
        "createconsumer" => "xgroup-createconsumer",
        _ => "xgroup-delconsumer",
    };
    let now = now();
    let r = write(ctx, key, Kind::Stream, mkstream, Some((notify::STREAM, event)), |v, _, log| {
        let s = stream_mut(v);
        let exists = s.group(group).is_some();
        if !mkstream && !exists && matches!(name, "setid" | "createconsumer" | "delconsumer") {
            return (Changed::No, Err(no_such_group(key, group)));
        }
        if !shape_ok {
            return (Changed::No, Err(Vec::new()));
        }
        let reply = match name {
            "create" => {
                let id = if &args[4][..] == b"$" {
                    s.last_id()
                } else {
                    match strict_id(&args[4]) {
                        Ok(id) => id,
                        Err(e) => return (Changed::No, Err(e.as_bytes().to_vec())),
                    }
                };
                if !s.create_group(group, id, entries_read) {
                    return (Changed::No, Err(ERR_BUSYGROUP.as_bytes().to_vec()));
                }
                Reply::Ok
            }
            "setid" => {
                let id = if &args[4][..] == b"$" {
                    s.last_id()
                } else {
                    let rules = ParseRules { strict: false, partial_seq: false, missing_seq: 0 };
                    match parse_id(&args[4], rules) {
                        Some(p) => p.id,
                        None => return (Changed::No, Err(ERR_INVALID_ID.as_bytes().to_vec())),
                    }
                };
                s.set_group_id(group, id, entries_read);
                Reply::Ok
            }
            "destroy" => {
                if !s.destroy_group(group) {
                    return (Changed::No, Ok(Reply::Int(0)));
                }
                Reply::Int(1)
            }
            "createconsumer" => {
                if s.create_consumer(group, &args[4], now) != Some(true) {
                    return (Changed::No, Ok(Reply::Int(0)));
                }
                Reply::Int(1)
            }
            _ => match s.delete_consumer(group, &args[4]) {
                Some(Some(n)) => Reply::Int(n as i64),
                _ => return (Changed::No, Ok(Reply::Int(0))),
            },
        };
        log.log(|| log_groups(s));
        (Changed::Yes, Ok(reply))
    });
    match r {
        Err(e) => e.reply(out),
        Ok(Access::Absent) => push_error(out, ERR_KEY_REQUIRED.as_bytes()),
        Ok(Access::WrongType) => push_error(out, typed::WRONGTYPE.as_bytes()),
        Ok(Access::Done(Err(e))) if e.is_empty() => subcommand_syntax(args, "XGROUP", out),
        Ok(Access::Done(Err(e))) => push_error(out, &e),
        Ok(Access::Done(Ok(r))) => {
            r.push(out);
            if name == "destroy" && matches!(r, Reply::Int(1)) {
                // Clients blocked in XREADGROUP on the group answer now.
                ctx.ks.host.signal(key);
            }
        }
    }
}

/// A group command's reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reply {
    Ok,
    Int(i64),
}

impl Reply {
    fn push(self, out: &mut Vec<u8>) {
        match self {
            Reply::Ok => push_simple(out, "OK"),
            Reply::Int(n) => push_int(out, n),
        }
    }
}

fn xack(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    // Redis 7.0.15 looks the key and the group up first (none: 0), then
    // checks the IDs.
    let ids: Result<Vec<StreamId>, _> = args[3..].iter().map(|a| strict_id(a)).collect();
    let group = &args[2][..];
    let r = write(ctx, &args[1], Kind::Stream, false, None, |v, _, log| {
        let s = stream_mut(v);
        if s.group(group).is_none() {
            return (Changed::No, Ok(0));
        }
        let ids = match &ids {
            Ok(ids) => ids,
            Err(e) => return (Changed::No, Err(*e)),
        };
        match s.ack(group, ids) {
            Some(n) if n > 0 => {
                log.log(|| log_groups(s));
                (Changed::Yes, Ok(n))
            }
            _ => (Changed::No, Ok(0)),
        }
    });
    match r {
        Err(e) => e.reply(out),
        Ok(Access::WrongType) => push_error(out, typed::WRONGTYPE.as_bytes()),
        Ok(Access::Absent) => push_int(out, 0),
        Ok(Access::Done(Ok(n))) => push_int(out, n as i64),
        Ok(Access::Done(Err(e))) => push_error(out, e.as_bytes()),
    }
}

/// An interval bound (`(` exclusive), as XRANGE's.
fn bounds(start: &[u8], end: &[u8]) -> Result<(StreamId, StreamId), &'static str> {
    let (mut s, ex) = super::interval(start, 0)?;
    if ex {
        s = s.next().ok_or(ERR_START_ID)?;
    }
    let (mut e, ex) = super::interval(end, u64::MAX)?;
    if ex {
        e = e.prev().ok_or(ERR_END_ID)?;
    }
    Ok((s, e))
}

/// XPENDING's extended form.
struct PendingRange<'a> {
    min_idle_ms: i64,
    start: StreamId,
    end: StreamId,
    count: usize,
    consumer: Option<&'a [u8]>,
}

fn xpending(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let argc = args.len();
    if argc != 3 && !(6..=9).contains(&argc) {
        return push_error(out, err::SYNTAX.as_bytes());
    }
    let mut range: Option<PendingRange<'_>> = None;
    if argc >= 6 {
        let mut at = 3;
        let mut min_idle_ms = 0;
        if is(&args[3], "idle") {
            match int_arg(&args[4]) {
                None => return push_error(out, err::NOT_INTEGER.as_bytes()),
                Some(n) => min_idle_ms = n,
            }
            if argc < 8 {
                return push_error(out, err::SYNTAX.as_bytes());
            }
            at += 2;
        }
        let count = match int_arg(&args[at + 2]) {
            None => return push_error(out, err::NOT_INTEGER.as_bytes()),
            Some(n) => usize::try_from(n.max(0)).unwrap_or(usize::MAX),
        };
        let (start, end) = match bounds(&args[at], &args[at + 1]) {
            Ok(b) => b,
            Err(e) => return push_error(out, e.as_bytes()),
        };
        let consumer = args.get(at + 3).map(|c| &c[..]);
        range = Some(PendingRange { min_idle_ms, start, end, count, consumer });
    }
    let (key, group) = (&args[1], &args[2][..]);
    let proto = ctx.proto();
    let now = now_ms();
    let r = read(ctx, key, Kind::Stream, |f| {
        with_stream(f, |s| {
            let Some(g) = s.group(group) else { return false };
            match &range {
                None => {
                    push_array(out, 4);
                    push_int(out, g.pending.len() as i64);
                    match (g.pending.keys().next(), g.pending.keys().next_back()) {
                        (Some(a), Some(b)) => {
                            push_bulk(out, a.to_string().as_bytes());
                            push_bulk(out, b.to_string().as_bytes());
                            let owners: Vec<_> = g.consumers.iter().filter(|(_, c)| !c.pending.is_empty()).collect();
                            push_array(out, owners.len());
                            for (name, c) in owners {
                                push_array(out, 2);
                                push_bulk(out, name);
                                push_bulk(out, c.pending.len().to_string().as_bytes());
                            }
                        }
                        _ => {
                            push_null(out, proto);
                            push_null(out, proto);
                            push_null_array(out, proto);
                        }
                    }
                }
                Some(r) => {
                    let ids: Vec<StreamId> = match r.consumer {
                        None => g.pending.range(r.start..).map(|(id, _)| *id).take_while(|id| *id <= r.end).collect(),
                        Some(c) => match g.consumers.get(c) {
                            None => Vec::new(),
                            Some(c) => c.pending.range(r.start..).copied().take_while(|id| *id <= r.end).collect(),
                        },
                    };
                    let mut body = Vec::new();
                    let mut n = 0usize;
                    // Bounded by the PEL's IDs in range.
                    for id in ids {
                        if n >= r.count {
                            break;
                        }
                        let p = &g.pending[&id];
                        // Times from a RESTORE can be anything: C's wrapping arithmetic.
                        let idle = now.wrapping_sub(p.delivery_ms as i64).max(0);
                        if r.min_idle_ms != 0 && now.wrapping_sub(p.delivery_ms as i64) < r.min_idle_ms {
                            continue;
                        }
                        n += 1;
                        push_array(&mut body, 4);
                        push_bulk(&mut body, id.to_string().as_bytes());
                        push_bulk(&mut body, &p.consumer);
                        push_int(&mut body, idle);
                        push_int(&mut body, p.delivery_count as i64);
                    }
                    push_array(out, n);
                    out.extend_from_slice(&body);
                }
            }
            true
        })
    });
    match r {
        Access::WrongType => push_error(out, typed::WRONGTYPE.as_bytes()),
        Access::Done(true) => {}
        _ => push_error(out, &no_group(key, group, "")),
    }
}

/// Appends claimed entries: IDs alone (JUSTID), else `[id, fields]`
/// (a pending entry the stream no longer holds: `[id, null]`).
pub(crate) fn push_delivered(out: &mut Vec<u8>, d: &[Delivered], justid: bool, proto: amalgam_protocol::resp::Proto) {
    push_array(out, d.len());
    for (id, fields) in d {
        if justid {
            push_bulk(out, id.to_string().as_bytes());
            continue;
        }
        match fields {
            Some(f) => {
                let pairs: Vec<(&[u8], &[u8])> = f.iter().map(|(a, b)| (&a[..], &b[..])).collect();
                push_entry(out, *id, &pairs);
            }
            None => {
                push_array(out, 2);
                push_bulk(out, id.to_string().as_bytes());
                push_null_array(out, proto);
            }
        }
    }
}

/// XCLAIM's arguments after the IDs (Redis's order: they are checked
/// only once the key and group are found).
fn claim_options(args: &[Arg<'_>], now: u64) -> Result<(Vec<StreamId>, ClaimOptions), Vec<u8>> {
    let min_idle = int_arg(&args[4]).ok_or(b"ERR Invalid min-idle-time argument for XCLAIM".to_vec())?;
    let mut ids = Vec::new();
    let mut j = 5;
    // Bounded: j advances every round.
    while j < args.len() {
        match parse_id(&args[j], amalgam_types::stream::STRICT) {
            Some(p) => ids.push(p.id),
            None => break,
        }
        j += 1;
    }
    let mut o = ClaimOptions { min_idle_ms: min_idle.max(0) as u64, ..ClaimOptions::default() };
    let mut delivery: Option<i64> = None;
    while j < args.len() {
        let more = args.len() - 1 - j;
        let a = &args[j];
        let int = |v: &[u8], what: &str| {
            int_arg(v).ok_or(format!("ERR Invalid {what} option argument for XCLAIM").into_bytes())
        };
        if is(a, "force") {
            o.force = true;
        } else if is(a, "justid") {
            o.justid = true;
        } else if is(a, "idle") && more >= 1 {
            j += 1;
            delivery = Some((now as i64).wrapping_sub(int(&args[j], "IDLE")?));
        } else if is(a, "time") && more >= 1 {
            j += 1;
            delivery = Some(int(&args[j], "TIME")?);
        } else if is(a, "retrycount") && more >= 1 {
            j += 1;
            let n = int(&args[j], "RETRYCOUNT")?;
            o.retry_count = (n >= 0).then_some(n as u64);
        } else if is(a, "lastid") && more >= 1 {
            j += 1;
            o.last_id = Some(strict_id(&args[j]).map_err(|e| e.as_bytes().to_vec())?);
        } else {
            let mut m = b"ERR Unrecognized XCLAIM option '".to_vec();
            m.extend_from_slice(a);
            m.push(b'\'');
            return Err(m);
        }
        j += 1;
    }
    o.delivery_ms = match delivery {
        Some(d) if d >= 0 && d <= now as i64 => d as u64,
        _ => now,
    };
    Ok((ids, o))
}

fn xclaim(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let (key, group, consumer) = (&args[1], &args[2][..], &args[3][..]);
    let now = now();
    let parsed = claim_options(args, now);
    let proto = ctx.proto();
    let r = write(ctx, key, Kind::Stream, false, None, |v, _, log| {
        let s = stream_mut(v);
        if s.group(group).is_none() {
            return (Changed::No, Err(no_group(key, group, "")));
        }
        let (ids, o) = match &parsed {
            Ok(p) => p,
            Err(e) => return (Changed::No, Err(e.clone())),
        };
        let created = s.group(group).is_some_and(|g| !g.consumers.contains_key(consumer));
        let got = s.claim(group, consumer, ids, o, now).unwrap_or_default();
        let created = created && s.group(group).is_some_and(|g| g.consumers.contains_key(consumer));
        // Logged even when nothing moved (one record of the groups).
        log.log(|| log_groups(s));
        (Changed::Yes, Ok((got, created)))
    });
    match r {
        Err(e) => e.reply(out),
        Ok(Access::WrongType) => push_error(out, typed::WRONGTYPE.as_bytes()),
        Ok(Access::Absent) => push_error(out, &no_group(key, group, "")),
        Ok(Access::Done(Err(e))) => push_error(out, &e),
        Ok(Access::Done(Ok((got, created)))) => {
            if created {
                ctx.notify(notify::STREAM, "xgroup-createconsumer", key);
            }
            let justid = parsed.as_ref().is_ok_and(|(_, o)| o.justid);
            push_delivered(out, &got, justid, proto);
        }
    }
}

fn xautoclaim(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let Some(min_idle) = int_arg(&args[4]) else {
        return push_error(out, b"ERR Invalid min-idle-time argument for XAUTOCLAIM");
    };
    let start = match super::interval(&args[5], 0) {
        Ok((id, false)) => id,
        Ok((id, true)) => match id.next() {
            Some(id) => id,
            None => return push_error(out, ERR_START_ID.as_bytes()),
        },
        Err(e) => return push_error(out, e.as_bytes()),
    };
    let mut count = AUTOCLAIM_COUNT_DEFAULT;
    let mut justid = false;
    let mut j = 6;
    // Bounded: j advances every round.
    while j < args.len() {
        let more = args.len() - 1 - j;
        if is(&args[j], "count") && more >= 1 {
            match int_arg(&args[j + 1]) {
                Some(n) if (1..=AUTOCLAIM_COUNT_MAX).contains(&n) => count = n as usize,
                _ => return push_error(out, b"ERR COUNT must be > 0"),
            }
            j += 1;
        } else if is(&args[j], "justid") {
            justid = true;
        } else {
            return push_error(out, err::SYNTAX.as_bytes());
        }
        j += 1;
    }
    let (key, group, consumer) = (&args[1], &args[2][..], &args[3][..]);
    let now = now();
    let proto = ctx.proto();
    let min_idle = min_idle.max(0) as u64;
    let r = write(ctx, key, Kind::Stream, false, None, |v, _, log| {
        let s = stream_mut(v);
        if s.group(group).is_none() {
            return (Changed::No, None);
        }
        let created = s.group(group).is_some_and(|g| !g.consumers.contains_key(consumer));
        let got = s
            .autoclaim(group, consumer, &AutoClaim { min_idle_ms: min_idle, start, count, justid }, now)
            .unwrap_or_default();
        let created = created && s.group(group).is_some_and(|g| g.consumers.contains_key(consumer));
        // Logged even when nothing moved (one record of the groups).
        log.log(|| log_groups(s));
        (Changed::Yes, Some((got, created)))
    });
    match r {
        Err(e) => e.reply(out),
        Ok(Access::WrongType) => push_error(out, typed::WRONGTYPE.as_bytes()),
        Ok(Access::Absent) | Ok(Access::Done(None)) => push_error(out, &no_group(key, group, "")),
        Ok(Access::Done(Some((got, created)))) => {
            if created {
                ctx.notify(notify::STREAM, "xgroup-createconsumer", key);
            }
            push_array(out, 3);
            push_bulk(out, got.next.to_string().as_bytes());
            push_delivered(out, &got.claimed, justid, proto);
            push_array(out, got.deleted.len());
            for id in &got.deleted {
                push_bulk(out, id.to_string().as_bytes());
            }
        }
    }
}
