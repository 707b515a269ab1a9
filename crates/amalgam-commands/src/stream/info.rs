//! XINFO STREAM [FULL [COUNT n]], XINFO GROUPS, XINFO CONSUMERS, XINFO
//! HELP: Redis 7.0.15's fields, in its order (maps in RESP3). Two
//! figures are Amalgam's own: `radix-tree-keys` is the number of nodes
//! (Redis's too), `radix-tree-nodes` the same number again (Redis counts
//! its radix tree's inner nodes, which Amalgam has not).

use super::group::{no_such_group, subcommand_syntax};
use super::{push_entry, reply_range, with_stream};
use crate::table::Cmd;
use crate::typed::{self, read, Access};
use crate::{help, int_arg, is, now_ms, sub, Arg, Ctx};
use amalgam_protocol::resp::{err, push_array, push_bulk, push_error, push_int, push_map, push_null, Proto};
use amalgam_types::stream::{Group, Stream, StreamId, ENTRIES_READ_UNKNOWN};

const ERR_NO_SUCH_KEY: &str = "ERR no such key";
/// XINFO STREAM FULL's entries and PEL entries when COUNT is not given.
const FULL_COUNT_DEFAULT: usize = 10;

pub(crate) fn run(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let Some(name) = sub(Cmd::Xinfo, args, out) else { return };
    if name == "help" {
        return help(
            &[
                "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "CONSUMERS <key> <groupname>",
                "    Show consumers of <groupname>.",
                "GROUPS <key>",
                "    Show the stream consumer groups.",
                "STREAM <key> [FULL [COUNT <count>]",
                "    Show information about the stream.",
                "HELP",
                "    Prints this help.",
            ],
            out,
        );
    }
    let key = &args[2];
    let proto = ctx.proto();
    let now = now_ms();
    let r = read(ctx, key, Kind::Stream, |f| {
        with_stream(f, |s| match name {
            "consumers" => consumers(s, key, &args[3], proto, now, out),
            "groups" => groups(s, proto, out),
            _ => stream(s, args, proto, out),
        })
    });
    match r {
        Access::Absent => push_error(out, ERR_NO_SUCH_KEY.as_bytes()),
        Access::WrongType => push_error(out, typed::WRONGTYPE.as_bytes()),
        Access::Done(Err(Bad::Syntax)) => subcommand_syntax(args, "XINFO", out),
        Access::Done(Err(Bad::Reply(e))) => push_error(out, &e),
        Access::Done(Ok(())) => {}
    }
}

use amalgam_types::Kind;

/// Why XINFO answers an error after finding its stream.
enum Bad {
    Syntax,
    Reply(Vec<u8>),
}

fn id(out: &mut Vec<u8>, id: StreamId) {
    push_bulk(out, id.to_string().as_bytes());
}

fn field(out: &mut Vec<u8>, name: &str) {
    push_bulk(out, name.as_bytes());
}

fn entries_read(out: &mut Vec<u8>, g: &Group, proto: Proto) {
    if g.entries_read == ENTRIES_READ_UNKNOWN {
        push_null(out, proto);
    } else {
        push_int(out, g.entries_read);
    }
}

fn lag(out: &mut Vec<u8>, s: &Stream, g: &Group, proto: Proto) {
    match s.lag(g) {
        Some(n) => push_int(out, n),
        None => push_null(out, proto),
    }
}

fn consumers(s: &Stream, key: &[u8], group: &[u8], proto: Proto, now: i64, out: &mut Vec<u8>) -> Result<(), Bad> {
    let Some(g) = s.group(group) else { return Err(Bad::Reply(no_such_group(key, group))) };
    push_array(out, g.consumers.len());
    for (name, c) in &g.consumers {
        push_map(out, 3, proto);
        field(out, "name");
        push_bulk(out, name);
        field(out, "pending");
        push_int(out, c.pending.len() as i64);
        field(out, "idle");
        push_int(out, now.wrapping_sub(c.seen_ms as i64).max(0));
    }
    Ok(())
}

fn groups(s: &Stream, proto: Proto, out: &mut Vec<u8>) -> Result<(), Bad> {
    push_array(out, s.groups().len());
    for g in s.groups() {
        push_map(out, 6, proto);
        field(out, "name");
        push_bulk(out, &g.name);
        field(out, "consumers");
        push_int(out, g.consumers.len() as i64);
        field(out, "pending");
        push_int(out, g.pending.len() as i64);
        field(out, "last-delivered-id");
        id(out, g.last_id);
        field(out, "entries-read");
        entries_read(out, g, proto);
        field(out, "lag");
        lag(out, s, g, proto);
    }
    Ok(())
}

/// The head both forms of XINFO STREAM share.
fn head(s: &Stream, out: &mut Vec<u8>) {
    field(out, "length");
    push_int(out, s.len() as i64);
    field(out, "radix-tree-keys");
    push_int(out, s.nodes() as i64);
    field(out, "radix-tree-nodes");
    push_int(out, s.nodes() as i64);
    field(out, "last-generated-id");
    id(out, s.last_id());
    field(out, "max-deleted-entry-id");
    id(out, s.max_deleted());
    field(out, "entries-added");
    push_int(out, s.entries_added() as i64);
    field(out, "recorded-first-entry-id");
    id(out, s.first_id());
}

fn stream(s: &Stream, args: &[Arg<'_>], proto: Proto, out: &mut Vec<u8>) -> Result<(), Bad> {
    let count = match args.len() {
        3 => None,
        4 if is(&args[3], "full") => Some(FULL_COUNT_DEFAULT),
        6 if is(&args[3], "full") && is(&args[4], "count") => match int_arg(&args[5]) {
            None => return Err(Bad::Reply(err::NOT_INTEGER.as_bytes().to_vec())),
            Some(n) if n < 0 => Some(FULL_COUNT_DEFAULT),
            Some(n) => Some(usize::try_from(n).unwrap_or(usize::MAX)),
        },
        _ => return Err(Bad::Syntax),
    };
    let Some(count) = count else {
        push_map(out, 10, proto);
        head(s, out);
        field(out, "groups");
        push_int(out, s.groups().len() as i64);
        for (name, e) in [("first-entry", s.first_entry()), ("last-entry", s.last_entry())] {
            field(out, name);
            match e {
                Some(e) => {
                    let pairs: Vec<(&[u8], &[u8])> = e.pairs.iter().map(|(f, v)| (&f[..], &v[..])).collect();
                    push_entry(out, e.id, &pairs);
                }
                None => push_null(out, proto),
            }
        }
        return Ok(());
    };
    // COUNT 0: everything.
    let take = if count == 0 { usize::MAX } else { count };
    push_map(out, 9, proto);
    head(s, out);
    field(out, "entries");
    reply_range(out, s, StreamId::MIN, StreamId::MAX, false, count);
    field(out, "groups");
    push_array(out, s.groups().len());
    for g in s.groups() {
        push_map(out, 7, proto);
        field(out, "name");
        push_bulk(out, &g.name);
        field(out, "last-delivered-id");
        id(out, g.last_id);
        field(out, "entries-read");
        entries_read(out, g, proto);
        field(out, "lag");
        lag(out, s, g, proto);
        field(out, "pel-count");
        push_int(out, g.pending.len() as i64);
        field(out, "pending");
        let pel: Vec<_> = g.pending.iter().take(take).collect();
        push_array(out, pel.len());
        for (pid, p) in pel {
            push_array(out, 4);
            id(out, *pid);
            push_bulk(out, &p.consumer);
            push_int(out, p.delivery_ms as i64);
            push_int(out, p.delivery_count as i64);
        }
        field(out, "consumers");
        push_array(out, g.consumers.len());
        for (name, c) in &g.consumers {
            push_map(out, 4, proto);
            field(out, "name");
            push_bulk(out, name);
            field(out, "seen-time");
            push_int(out, c.seen_ms as i64);
            field(out, "pel-count");
            push_int(out, c.pending.len() as i64);
            field(out, "pending");
            let own: Vec<_> = c.pending.iter().take(take).collect();
            push_array(out, own.len());
            for pid in own {
                let p = &g.pending[pid];
                push_array(out, 3);
                id(out, *pid);
                push_int(out, p.delivery_ms as i64);
                push_int(out, p.delivery_count as i64);
            }
        }
    }
    Ok(())
}
