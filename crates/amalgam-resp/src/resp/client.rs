//! CLIENT: ID GETNAME SETNAME SETINFO INFO LIST KILL UNBLOCK REPLY
//! NO-EVICT NO-TOUCH HELP, over the client registry (`amalgam_net::clients`);
//! TRACKING CACHING GETREDIR TRACKINGINFO in `tracking.rs` (the lines show
//! tracking's `t`, `R`, `B` flags and `redir=`).
//!
//! CLIENT LIST and INFO print Redis 7.0's line, then 7.2's `lib-name` and
//! `lib-ver`. Fields Amalgam does not keep per connection get the value of
//! an idle connection: `db=0 sub=0 psub=0 ssub=0 multi=-1 qbuf=0
//! qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0
//! tot-mem=0 events=r user=default`. Only RESP connections are
//! listed (memcached's have no client id). A replica's connection
//! (`flags=S`, TYPE replica) and a replica's link to its primary
//! (`flags=M`, `user=(superuser)`, TYPE master) are listed while their
//! replication threads serve them, and CLIENT KILL drops them through
//! those threads; a replica's `cmd=` is `psync` (Redis shows the
//! `replconf` of its last ack).
//!
//! CLIENT NO-EVICT is accepted and shown (`e`), and true: Amalgam never
//! evicts clients. CLIENT NO-TOUCH (Redis 7.2) is accepted and shown
//! (`T`), but reads still count as use for the eviction policy.

use super::table::{Cmd, COMMANDS};
use super::{help, int_arg, is, null, sub, Arg, Ctx, Reply};
use amalgam_net::clients::{flag, tracking_flag, Client};
use amalgam_protocol::resp::{err, push_bulk, push_error, push_int, push_simple, Proto};
use std::fmt::Write as _;
use std::sync::atomic::Ordering;

/// Redis's `validateClientAttr`: printable ASCII without spaces.
pub(crate) fn valid_attribute(v: &[u8]) -> bool {
    v.iter().all(|&b| (b'!'..=b'~').contains(&b))
}

/// An argument as Redis prints it with `%s` (up to a NUL).
fn c_str(a: &[u8]) -> &[u8] {
    a.split(|&b| b == 0).next().unwrap_or(b"")
}

/// `ERR <before>'<arg>'`.
fn quoted_error(before: &str, arg: &[u8], out: &mut Vec<u8>) {
    let mut m = before.as_bytes().to_vec();
    m.push(b'\'');
    m.extend_from_slice(c_str(arg));
    m.push(b'\'');
    push_error(out, &m);
}

/// One client's CLIENT LIST line, `\n` included.
pub(crate) fn line(c: &Client, line: &mut String) {
    let attrs = c.attrs();
    let text = |v: &Option<Vec<u8>>| String::from_utf8_lossy(v.as_deref().unwrap_or(b"")).into_owned();
    let mut flags = String::new();
    if c.has(flag::REPLICA) {
        flags.push('S');
    }
    if c.has(flag::MASTER) {
        flags.push('M');
    }
    if c.has(flag::MONITOR) {
        flags.push('O');
    }
    if c.has(flag::PUBSUB) {
        flags.push('P');
    }
    if c.has(flag::BLOCKED) {
        flags.push('b');
    }
    let tracking = c.tracking.load(Ordering::Relaxed);
    for (bit, letter) in [(tracking_flag::ON, 't'), (tracking_flag::BROKEN_REDIR, 'R'), (tracking_flag::BCAST, 'B')] {
        if tracking & bit != 0 {
            flags.push(letter);
        }
    }
    if c.has(flag::NO_EVICT) {
        flags.push('e');
    }
    if c.has(flag::NO_TOUCH) {
        flags.push('T');
    }
    if flags.is_empty() {
        flags.push('N');
    }
    let cmd = match c.last_cmd() {
        None => "NULL".to_string(),
        Some((i, sub)) => {
            let spec = &COMMANDS[i];
            sub.and_then(|s| spec.subcommands.get(s)).unwrap_or(spec).name.to_string()
        }
    };
    let _ = writeln!(
        line,
        "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={flags} db={} sub={} psub={} ssub={} multi=-1 qbuf=0 \
         qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd={cmd} user={} \
         redir={} resp={} lib-name={} lib-ver={}",
        c.id,
        c.addr,
        c.laddr,
        c.fd,
        text(&attrs.name),
        c.age_secs(),
        c.idle_secs(),
        c.db.load(Ordering::Relaxed),
        c.sub.load(Ordering::Relaxed),
        c.psub.load(Ordering::Relaxed),
        c.ssub.load(Ordering::Relaxed),
        attrs.user.as_deref().map_or("default".into(), String::from_utf8_lossy),
        c.redir.load(Ordering::Relaxed),
        c.resp.load(Ordering::Relaxed),
        text(&attrs.lib_name),
        text(&attrs.lib_ver),
    );
}

/// A client's type as Redis's `getClientType` tells them apart: a
/// connection holding a subscription is `pubsub`, every other Amalgam
/// client `normal` (no replicas or masters yet).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Type {
    Normal,
    Pubsub,
    /// `slave`, `replica`: the replicas of this primary, which leave the
    /// registry for a sender thread (`crate::repl`).
    Replica,
    /// `master`: a replica's link to its primary (`crate::repl`).
    Master,
}

fn type_of(c: &Client) -> Type {
    if c.has(flag::REPLICA) {
        Type::Replica
    } else if c.has(flag::MASTER) {
        Type::Master
    } else if c.has(flag::PUBSUB) {
        Type::Pubsub
    } else {
        Type::Normal
    }
}

/// A client type name as Redis's `getClientTypeByName` knows it.
fn client_type(a: &[u8]) -> Option<Type> {
    if is(a, "normal") {
        Some(Type::Normal)
    } else if is(a, "pubsub") {
        Some(Type::Pubsub)
    } else if is(a, "slave") || is(a, "replica") {
        Some(Type::Replica)
    } else if is(a, "master") {
        Some(Type::Master)
    } else {
        None
    }
}

pub(crate) fn client(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) -> bool {
    let Some(name) = sub(Cmd::Client, args, out) else { return false };
    let me = &ctx.session.client;
    match name {
        "id" => push_int(out, ctx.session.id as i64),
        "getname" => match &me.attrs().name {
            Some(n) => push_bulk(out, n),
            None => null(ctx, out),
        },
        "setname" => {
            if !valid_attribute(&args[2]) {
                push_error(out, err::CLIENT_NAME.as_bytes());
                return false;
            }
            me.attrs().name = (!args[2].is_empty()).then(|| args[2].to_vec());
            push_simple(out, "OK");
        }
        "setinfo" => setinfo(me, args, out),
        "info" => {
            let mut l = String::new();
            line(me, &mut l);
            push_verbatim_or_bulk(ctx.proto(), &l, out);
        }
        "list" => list(ctx, args, out),
        "kill" => return kill(ctx, args, out),
        "unblock" => unblock(ctx, args, out),
        "pause" => super::pause::pause(ctx, args, out),
        "unpause" => super::pause::unpause(ctx, out),
        "tracking" => super::tracking::tracking(ctx, args, out),
        "caching" => super::tracking::caching(ctx, args, out),
        "getredir" => super::tracking::getredir(ctx, out),
        "trackinginfo" => super::tracking::trackinginfo(ctx, out),
        "reply" => {
            if is(&args[2], "on") {
                ctx.session.reply = Reply::On;
                push_simple(out, "OK");
            } else if is(&args[2], "off") {
                ctx.session.reply = Reply::Off;
            } else if is(&args[2], "skip") {
                if ctx.session.reply == Reply::On {
                    ctx.session.reply = Reply::SkipNext;
                }
            } else {
                push_error(out, err::SYNTAX.as_bytes());
            }
        }
        "no-evict" | "no-touch" => {
            let f = if name == "no-evict" { flag::NO_EVICT } else { flag::NO_TOUCH };
            if is(&args[2], "on") {
                me.set_flag(f, true);
                push_simple(out, "OK");
            } else if is(&args[2], "off") {
                me.set_flag(f, false);
                push_simple(out, "OK");
            } else {
                push_error(out, err::SYNTAX.as_bytes());
            }
        }
        _ => help(
            &[
                "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "CACHING (YES|NO)",
                "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
                "GETREDIR",
                "    Return the client ID we are redirecting to when tracking is enabled.",
                "GETNAME",
                "    Return the name of the current connection.",
                "ID",
                "    Return the ID of the current connection.",
                "INFO",
                "    Return information about the current client connection.",
                "KILL <ip:port>",
                "    Kill connection made from <ip:port>.",
                "KILL <option> <value> [<option> <value> [...]]",
                "    Kill connections. Options are:",
                "    * ADDR (<ip:port>|<unixsocket>:0)",
                "      Kill connections made from the specified address",
                "    * LADDR (<ip:port>|<unixsocket>:0)",
                "      Kill connections made to specified local address",
                "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
                "      Kill connections by type.",
                "    * USER <username>",
                "      Kill connections authenticated by <username>.",
                "    * SKIPME (YES|NO)",
                "      Skip killing current connection (default: yes).",
                "LIST [options ...]",
                "    Return information about client connections. Options:",
                "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
                "      Return clients of specified type.",
                "UNPAUSE",
                "    Stop the current client pause, resuming traffic.",
                "PAUSE <timeout> [WRITE|ALL]",
                "    Suspend all, or just write, clients for <timeout> milliseconds.",
                "REPLY (ON|OFF|SKIP)",
                "    Control the replies sent to the current connection.",
                "SETNAME <name>",
                "    Assign the name <name> to the current connection.",
                "SETINFO <option> <value>",
                "    Set client meta attr. Options are: LIB-NAME, LIB-VER.",
                "UNBLOCK <clientid> [TIMEOUT|ERROR]",
                "    Unblock the specified blocked client.",
                "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
                "         [OPTIN] [OPTOUT] [NOLOOP]",
                "    Control server assisted client side caching.",
                "TRACKINGINFO",
                "    Report tracking status for the current connection.",
                "NO-EVICT (ON|OFF)",
                "    Protect current client connection from eviction.",
                "NO-TOUCH (ON|OFF)",
                "    Will not touch LRU/LFU stats when this mode is on.",
                "HELP",
                "    Prints this help.",
            ],
            out,
        ),
    }
    false
}

/// CLIENT UNBLOCK id [TIMEOUT|ERROR]: 1 if the client waits in a blocking
/// command (BLPOP and the others, WAIT) and is now told to stop, else 0.
/// Its own worker ends the wait (`clients::Registry::unblock`,
/// `blocking::unblocked`); one served between this answer and that is
/// left as it is (Redis, on one thread, has no such window).
fn unblock(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    // Redis's order: the argument count, the reason, then the id.
    if args.len() > 4 {
        let mut m = b"ERR unknown subcommand or wrong number of arguments for '".to_vec();
        m.extend_from_slice(c_str(&args[1]));
        m.extend_from_slice(b"'. Try CLIENT HELP.");
        return push_error(out, &m);
    }
    let error = match args.get(3) {
        None => false,
        Some(a) if is(a, "timeout") => false,
        Some(a) if is(a, "error") => true,
        Some(_) => return push_error(out, b"ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR"),
    };
    let Some(id) = int_arg(&args[2]) else { return push_error(out, err::NOT_INTEGER.as_bytes()) };
    let target = u64::try_from(id).ok().and_then(|id| ctx.shared.clients.get(id));
    match target {
        Some(c) if c.has(flag::BLOCKED) => {
            ctx.shared.clients.unblock(&c, error);
            push_int(out, 1);
        }
        _ => push_int(out, 0),
    }
}

/// CLIENT INFO and LIST answer a bulk string in RESP2 and a verbatim
/// string in RESP3 (Redis's `addReplyVerbatim`).
fn push_verbatim_or_bulk(proto: Proto, text: &str, out: &mut Vec<u8>) {
    amalgam_protocol::resp::push_verbatim(out, proto, b"txt", text.as_bytes());
}

fn setinfo(me: &Client, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let attr: &[u8] = &args[2];
    let lib_name = if is(attr, "lib-name") {
        true
    } else if is(attr, "lib-ver") {
        false
    } else {
        return quoted_error("ERR Unrecognized option ", attr, out);
    };
    if !valid_attribute(&args[3]) {
        let mut e = b"ERR ".to_vec();
        e.extend_from_slice(attr);
        e.extend_from_slice(b" cannot contain spaces, newlines or special characters.");
        return push_error(out, &e);
    }
    let v = (!args[3].is_empty()).then(|| args[3].to_vec());
    let mut a = me.attrs();
    if lib_name {
        a.lib_name = v;
    } else {
        a.lib_ver = v;
    }
    push_simple(out, "OK");
}

/// CLIENT LIST [TYPE type | ID id ...], Redis 7.0's forms.
fn list(ctx: &Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let mut ids: Option<Vec<i64>> = None;
    let mut kind: Option<Type> = None;
    if args.len() == 4 && is(&args[2], "type") {
        match client_type(&args[3]) {
            Some(t) => kind = Some(t),
            None => return quoted_error("ERR Unknown client type ", &args[3], out),
        }
    } else if args.len() >= 4 && is(&args[2], "id") {
        let mut v = Vec::with_capacity(args.len() - 3);
        for a in &args[3..] {
            match int_arg(a) {
                Some(n) => v.push(n),
                None => return push_error(out, b"ERR Invalid client ID"),
            }
        }
        ids = Some(v);
    } else if args.len() != 2 {
        return push_error(out, err::SYNTAX.as_bytes());
    }
    let mut text = String::new();
    for c in ctx.shared.clients.snapshot() {
        if ids.as_ref().is_some_and(|ids| !ids.contains(&(c.id as i64))) || kind.is_some_and(|k| k != type_of(&c)) {
            continue;
        }
        line(&c, &mut text);
    }
    push_verbatim_or_bulk(ctx.proto(), &text, out);
}

/// CLIENT KILL, old form (`addr`) and new (filters). Returns true if this
/// connection killed itself (it closes after the reply).
fn kill(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) -> bool {
    let mut addr: Option<&[u8]> = None;
    let mut laddr: Option<&[u8]> = None;
    let mut id: Option<u64> = None;
    let mut kind: Option<Type> = None;
    let mut skipme = true;
    if args.len() == 3 {
        addr = Some(&args[2]);
        skipme = false;
    } else if args.len() % 2 == 0 {
        for pair in args[2..].chunks_exact(2) {
            let (opt, v): (&[u8], &[u8]) = (&pair[0], &pair[1]);
            if is(opt, "id") {
                match int_arg(v) {
                    Some(n) if n >= 1 => id = Some(n as u64),
                    _ => {
                        push_error(out, b"ERR client-id should be greater than 0");
                        return false;
                    }
                }
            } else if is(opt, "type") {
                match client_type(v) {
                    Some(t) => kind = Some(t),
                    None => {
                        quoted_error("ERR Unknown client type ", v, out);
                        return false;
                    }
                }
            } else if is(opt, "addr") {
                addr = Some(v);
            } else if is(opt, "laddr") {
                laddr = Some(v);
            } else if is(opt, "user") {
                // One user exists: Redis's `default`.
                if v != b"default" {
                    quoted_error("ERR No such user ", v, out);
                    return false;
                }
            } else if is(opt, "skipme") {
                if is(v, "yes") {
                    skipme = true;
                } else if is(v, "no") {
                    skipme = false;
                } else {
                    push_error(out, err::SYNTAX.as_bytes());
                    return false;
                }
            } else {
                push_error(out, err::SYNTAX.as_bytes());
                return false;
            }
        }
    } else {
        push_error(out, err::SYNTAX.as_bytes());
        return false;
    }
    let me = ctx.session.id;
    let mut killed = 0i64;
    let mut myself = false;
    for c in ctx.shared.clients.snapshot() {
        if addr.is_some_and(|a| a != c.addr.as_bytes())
            || laddr.is_some_and(|a| a != c.laddr.as_bytes())
            || id.is_some_and(|i| i != c.id)
            || kind.is_some_and(|k| k != type_of(&c))
            || (skipme && c.id == me)
        {
            continue;
        }
        if c.id == me {
            myself = true;
        } else {
            ctx.shared.clients.kill(&c);
        }
        killed += 1;
    }
    if args.len() == 3 {
        if killed == 0 {
            push_error(out, b"ERR No such client");
        } else {
            push_simple(out, "OK");
        }
    } else {
        push_int(out, killed);
    }
    myself
}
