//! COMMAND: (all), COUNT, LIST [FILTERBY MODULE|ACLCAT|PATTERN], INFO,
//! DOCS, GETKEYS, GETKEYSANDFLAGS, HELP — every answer read from the
//! command table (`table.rs`), with Redis 7.0's reply shapes: COMMAND INFO's
//! ten fields (flags, ACL categories, tips, key specifications,
//! subcommands), COUNT of top-level commands, LIST of commands and
//! subcommands.
//!
//! DOCS gives what Redis 7.0.15's does: summary, since and group from the
//! row, complexity, `doc_flags`, `deprecated_since`, `replaced_by`,
//! `history` and the `arguments` tree from `table/docs.rs` (generated from
//! a running Redis by `scripts/command-docs.py`), and a container's
//! subcommands.

use super::glob::matches;
use super::table::{self, acl_categories, keys_of, ArgType, Begin, DocArg, Find, KeySpec, Spec, ARG_FLAGS, COMMANDS};
use super::{help, sub};
use super::{is, null, Arg, Ctx};
use amalgam_protocol::resp::{
    err, push_array, push_bulk, push_error, push_int, push_map, push_set, push_simple, Proto,
};

use super::table::Cmd;

/// One key specification as Redis's `addReplyCommandKeySpecs` writes it.
fn key_spec(ks: &KeySpec, proto: Proto, out: &mut Vec<u8>) {
    push_map(out, if ks.notes.is_empty() { 3 } else { 4 }, proto);
    if !ks.notes.is_empty() {
        push_bulk(out, b"notes");
        push_bulk(out, ks.notes.as_bytes());
    }
    push_bulk(out, b"flags");
    push_set(out, ks.flags.len(), proto);
    for f in ks.flags {
        push_simple(out, f);
    }
    push_bulk(out, b"begin_search");
    push_map(out, 2, proto);
    push_bulk(out, b"type");
    match ks.begin {
        Begin::Index(i) => {
            push_bulk(out, b"index");
            push_bulk(out, b"spec");
            push_map(out, 1, proto);
            push_bulk(out, b"index");
            push_int(out, i);
        }
        Begin::Keyword(k, from) => {
            push_bulk(out, b"keyword");
            push_bulk(out, b"spec");
            push_map(out, 2, proto);
            push_bulk(out, b"keyword");
            push_bulk(out, k.as_bytes());
            push_bulk(out, b"startfrom");
            push_int(out, from);
        }
        Begin::Unknown => {
            push_bulk(out, b"unknown");
            push_bulk(out, b"spec");
            push_map(out, 0, proto);
        }
    }
    push_bulk(out, b"find_keys");
    push_map(out, 2, proto);
    push_bulk(out, b"type");
    let fields: &[(&str, i64)] = match ks.find {
        Find::Range { lastkey, keystep, limit } => {
            push_bulk(out, b"range");
            &[("lastkey", lastkey), ("keystep", keystep), ("limit", limit)]
        }
        Find::Keynum { keynumidx, firstkey, keystep } => {
            push_bulk(out, b"keynum");
            &[("keynumidx", keynumidx), ("firstkey", firstkey), ("keystep", keystep)]
        }
        Find::Unknown => {
            push_bulk(out, b"unknown");
            &[]
        }
    };
    push_bulk(out, b"spec");
    push_map(out, fields.len(), proto);
    for &(k, v) in fields {
        push_bulk(out, k.as_bytes());
        push_int(out, v);
    }
}

/// One command's COMMAND INFO entry (Redis 7's ten fields).
fn command_info(spec: &Spec, proto: Proto, out: &mut Vec<u8>) {
    push_array(out, 10);
    push_bulk(out, spec.name.as_bytes());
    push_int(out, spec.arity.into());
    push_set(out, spec.flags.len(), proto);
    for f in spec.flags {
        push_simple(out, f);
    }
    push_int(out, spec.first_key);
    push_int(out, spec.last_key);
    push_int(out, spec.key_step);
    let cats = acl_categories(spec);
    push_set(out, cats.len(), proto);
    for c in &cats {
        push_simple(out, c);
    }
    push_set(out, spec.tips.len(), proto);
    for t in spec.tips {
        push_bulk(out, t.as_bytes());
    }
    // Sets in RESP3, as Redis 7.0 answers: the key specs always, the
    // subcommands only when there are none (an array otherwise).
    push_set(out, spec.keys.len(), proto);
    for ks in spec.keys {
        key_spec(ks, proto, out);
    }
    if spec.subcommands.is_empty() {
        push_set(out, 0, proto);
    } else {
        push_array(out, spec.subcommands.len());
    }
    for s in spec.subcommands {
        command_info(s, proto, out);
    }
}

/// One command's COMMAND DOCS entry, as Redis 7.0's `addReplyCommandDocs`:
/// summary, since and group from the row; complexity, doc flags,
/// deprecation, history and arguments from its [`Doc`] (`table/docs.rs`,
/// Redis 7.0.15's own); a container's subcommands, those served. A command
/// Redis 7.0 does not document gets a generic complexity and no arguments.
fn command_docs(spec: &Spec, proto: Proto, out: &mut Vec<u8>) {
    push_bulk(out, spec.name.as_bytes());
    let Some(doc) = table::docs_of(spec.name) else {
        push_map(out, 5, proto);
        summary_since_group(spec, out);
        push_bulk(out, b"complexity");
        push_bulk(out, if spec.last_key == -1 { b"O(N)" } else { b"O(1)" });
        push_bulk(out, b"arguments");
        push_array(out, 0);
        return;
    };
    let fields = 3
        + usize::from(doc.complexity.is_some())
        + usize::from(!doc.doc_flags.is_empty())
        + usize::from(doc.deprecated_since.is_some())
        + usize::from(doc.replaced_by.is_some())
        + usize::from(!doc.history.is_empty())
        + usize::from(!doc.arguments.is_empty())
        + usize::from(!spec.subcommands.is_empty());
    push_map(out, fields, proto);
    summary_since_group(spec, out);
    if let Some(c) = doc.complexity {
        push_bulk(out, b"complexity");
        push_bulk(out, c.as_bytes());
    }
    if !doc.doc_flags.is_empty() {
        push_bulk(out, b"doc_flags");
        push_set(out, doc.doc_flags.len(), proto);
        for f in doc.doc_flags {
            push_simple(out, f);
        }
    }
    for (k, v) in [("deprecated_since", doc.deprecated_since), ("replaced_by", doc.replaced_by)] {
        if let Some(v) = v {
            push_bulk(out, k.as_bytes());
            push_bulk(out, v.as_bytes());
        }
    }
    if !doc.history.is_empty() {
        // A set in RESP3, as Redis 7.0's `addReplyCommandHistory`.
        push_bulk(out, b"history");
        push_set(out, doc.history.len(), proto);
        for (version, text) in doc.history {
            push_array(out, 2);
            push_bulk(out, version.as_bytes());
            push_bulk(out, text.as_bytes());
        }
    }
    if !doc.arguments.is_empty() {
        push_bulk(out, b"arguments");
        doc_args(doc.arguments, proto, out);
    }
    if !spec.subcommands.is_empty() {
        push_bulk(out, b"subcommands");
        push_map(out, spec.subcommands.len(), proto);
        for s in spec.subcommands {
            command_docs(s, proto, out);
        }
    }
}

fn summary_since_group(spec: &Spec, out: &mut Vec<u8>) {
    for (k, v) in [("summary", spec.summary), ("since", spec.since), ("group", spec.group)] {
        push_bulk(out, k.as_bytes());
        push_bulk(out, v.as_bytes());
    }
}

/// An `arguments` array, as Redis 7.0's `addReplyCommandArgList`: each a
/// map of name, type and the fields it has; a oneof's or a block's own
/// arguments nested.
fn doc_args(args: &[DocArg], proto: Proto, out: &mut Vec<u8>) {
    push_array(out, args.len());
    for a in args {
        let nested = matches!(a.kind, ArgType::Oneof | ArgType::Block);
        let strs =
            [("token", a.token), ("summary", a.summary), ("since", a.since), ("deprecated_since", a.deprecated_since)];
        let fields = 2
            + usize::from(a.key_spec_index.is_some())
            + strs.iter().filter(|s| s.1.is_some()).count()
            + usize::from(a.flags != 0)
            + usize::from(nested);
        push_map(out, fields, proto);
        push_bulk(out, b"name");
        push_bulk(out, a.name.as_bytes());
        push_bulk(out, b"type");
        push_bulk(out, a.kind.as_str().as_bytes());
        if let Some(i) = a.key_spec_index {
            push_bulk(out, b"key_spec_index");
            push_int(out, i.into());
        }
        for (k, v) in strs {
            if let Some(v) = v {
                push_bulk(out, k.as_bytes());
                push_bulk(out, v.as_bytes());
            }
        }
        if a.flags != 0 {
            push_bulk(out, b"flags");
            push_set(out, a.flags.count_ones() as usize, proto);
            for (bit, f) in ARG_FLAGS {
                if a.flags & bit != 0 {
                    push_simple(out, f);
                }
            }
        }
        if nested {
            push_bulk(out, b"arguments");
            doc_args(a.arguments, proto, out);
        }
    }
}

/// Every command and subcommand, in table order.
fn every_name() -> impl Iterator<Item = &'static Spec> {
    COMMANDS.iter().flat_map(|s| std::iter::once(s).chain(s.subcommands.iter()))
}

pub(crate) fn command(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let proto = ctx.proto();
    if args.len() == 1 {
        push_array(out, COMMANDS.len());
        for s in COMMANDS.iter() {
            command_info(s, proto, out);
        }
        return;
    }
    let Some(name) = sub(Cmd::Command, args, out) else { return };
    match name {
        "count" => push_int(out, COMMANDS.len() as i64),
        "info" => {
            let wanted: Vec<Option<&Spec>> = if args.len() == 2 {
                COMMANDS.iter().map(Some).collect()
            } else {
                args[2..].iter().map(|a| table::lookup_full(a)).collect()
            };
            push_array(out, wanted.len());
            for w in wanted {
                match w {
                    Some(s) => command_info(s, proto, out),
                    None => null(ctx, out),
                }
            }
        }
        "docs" => {
            let wanted: Vec<&Spec> = if args.len() == 2 {
                COMMANDS.iter().collect()
            } else {
                args[2..].iter().filter_map(|a| table::lookup_full(a)).collect()
            };
            push_map(out, wanted.len(), proto);
            for s in wanted {
                command_docs(s, proto, out);
            }
        }
        "list" => list(args, out),
        "getkeys" | "getkeysandflags" => getkeys(args, name == "getkeysandflags", proto, out),
        _ => help(
            &[
                "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "(no subcommand)",
                "    Return details about all Redis commands.",
                "COUNT",
                "    Return the total number of commands in this Redis server.",
                "LIST",
                "    Return a list of all commands in this Redis server.",
                "INFO [<command-name> ...]",
                "    Return details about multiple Redis commands.",
                "    If no command names are given, documentation details for all",
                "    commands are returned.",
                "DOCS [<command-name> ...]",
                "    Return documentation details about multiple Redis commands.",
                "    If no command names are given, documentation details for all",
                "    commands are returned.",
                "GETKEYS <full-command>",
                "    Return the keys from a full Redis command.",
                "GETKEYSANDFLAGS <full-command>",
                "    Return the keys and the access flags from a full Redis command.",
                "HELP",
                "    Prints this help.",
            ],
            out,
        ),
    }
}

/// COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN glob]:
/// commands and subcommands (no modules here).
fn list(args: &[Arg<'_>], out: &mut Vec<u8>) {
    let keep: Box<dyn Fn(&Spec) -> bool + '_> = match args.len() {
        2 => Box::new(|_| true),
        5 if is(&args[2], "filterby") => {
            let v: &[u8] = &args[4];
            if is(&args[3], "module") {
                Box::new(|_| false)
            } else if is(&args[3], "aclcat") {
                Box::new(move |s| acl_categories(s).iter().any(|c| v.eq_ignore_ascii_case(&c.as_bytes()[1..])))
            } else if is(&args[3], "pattern") {
                Box::new(move |s| matches(v, s.name.as_bytes(), true))
            } else {
                return push_error(out, err::SYNTAX.as_bytes());
            }
        }
        _ => return push_error(out, err::SYNTAX.as_bytes()),
    };
    let names: Vec<&str> = every_name().filter(|s| keep(s)).map(|s| s.name).collect();
    push_array(out, names.len());
    for n in names {
        push_bulk(out, n.as_bytes());
    }
}

/// COMMAND GETKEYS / GETKEYSANDFLAGS <command> [args]: the keys by the
/// command's key specifications.
fn getkeys(args: &[Arg<'_>], with_flags: bool, proto: Proto, out: &mut Vec<u8>) {
    let cmd = &args[2..];
    let spec = table::lookup(&cmd[0]).and_then(|s| {
        if s.subcommands.is_empty() || cmd.len() < 2 {
            Some(s)
        } else {
            table::subcommand(s, &cmd[1])
        }
    });
    let Some(spec) = spec else { return push_error(out, b"ERR Invalid command specified") };
    if !super::arity_ok(spec.arity, cmd.len()) {
        return push_error(out, b"ERR Invalid number of arguments specified for command");
    }
    let keys = keys_of(spec, cmd);
    if keys.is_empty() {
        return push_error(out, b"ERR The command has no key arguments");
    }
    push_array(out, keys.len());
    for (i, ks) in keys {
        if with_flags {
            let flags = table::key_flags(spec.cmd, cmd, ks.flags);
            push_array(out, 2);
            push_bulk(out, &cmd[i]);
            push_set(out, flags.len(), proto);
            for f in flags {
                push_simple(out, f);
            }
        } else {
            push_bulk(out, &cmd[i]);
        }
    }
}
