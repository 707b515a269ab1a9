//! Connection and server commands: PING ECHO QUIT SELECT INFO CONFIG
//! COMMAND CLIENT HELLO AUTH.
//!
//! Amalgam introduces itself as what it speaks: HELLO's `version` and
//! INFO's `redis_version` are [`REDIS_VERSION`], the Redis release whose
//! commands and replies it follows (clients gate features on it), and
//! HELLO's `server` and INFO's `amalgam_version` say what it is.
//!
//! Authentication does not exist yet: AUTH and HELLO's AUTH option are
//! refused (AUTH with a password alone gets Redis's own answer for a
//! server with no password; a user and password get WRONGPASS, where
//! Redis would let its password-less `default` user in).

use super::glob::matches;
use super::table::{self, Cmd, Spec, COMMANDS};
use super::{arity_ok, int_arg, is, null, wrong_arity, Arg, Ctx};
use crate::exec::After;
use amalgam_protocol::resp::{
    err, push_array, push_bulk, push_error, push_int, push_map, push_set, push_simple, push_verbatim, Proto,
};
use std::fmt::Write as _;
use std::sync::atomic::Ordering;

/// The Redis release whose commands and replies this front end follows.
pub const REDIS_VERSION: &str = "7.0.0";

pub(crate) fn run(ctx: &mut Ctx<'_>, cmd: Cmd, args: &[Arg<'_>], out: &mut Vec<u8>) -> After {
    match cmd {
        Cmd::Ping => match args.len() {
            1 => push_simple(out, "PONG"),
            2 => push_bulk(out, &args[1]),
            _ => wrong_arity("ping", out),
        },
        Cmd::Echo => push_bulk(out, &args[1]),
        Cmd::Quit => {
            push_simple(out, "OK");
            return After::Close;
        }
        // Redis's getIntFromObjectOrReply: an i64, then the i32 range.
        Cmd::Select => match int_arg(&args[1]) {
            None => push_error(out, err::NOT_INTEGER.as_bytes()),
            Some(n) if i32::try_from(n).is_err() => push_error(out, err::INT_RANGE.as_bytes()),
            Some(0) => push_simple(out, "OK"),
            // One keyspace: database 0 is the only one.
            Some(_) => push_error(out, err::DB_INDEX.as_bytes()),
        },
        Cmd::Info => info(ctx, args, out),
        Cmd::Config => config(ctx, args, out),
        Cmd::Command => command(ctx, args, out),
        Cmd::Client => client(ctx, args, out),
        Cmd::Hello => hello(ctx, args, out),
        Cmd::Save | Cmd::Bgsave | Cmd::Lastsave => save(ctx, cmd, out),
        Cmd::Auth => match args.len() {
            2 => push_error(out, err::AUTH_NO_PASSWORD.as_bytes()),
            3 => push_error(out, err::WRONGPASS.as_bytes()),
            _ => push_error(out, err::SYNTAX.as_bytes()),
        },
        _ => {}
    }
    After::Continue
}

/// SAVE, BGSAVE (its SCHEDULE option accepted: it starts now or reports
/// the one running) and LASTSAVE, over `--dir`'s snapshots.
fn save(ctx: &Ctx<'_>, cmd: Cmd, out: &mut Vec<u8>) {
    let Some(p) = &ctx.shared.persist else {
        if cmd == Cmd::Lastsave {
            push_int(out, ctx.shared.started_unix as i64);
        } else {
            push_error(out, b"ERR persistence is off: start amalgam with --dir to save");
        }
        return;
    };
    match cmd {
        Cmd::Save => match p.snapshot() {
            Ok(_) => push_simple(out, "OK"),
            Err(e) => push_error(out, format!("ERR snapshot failed: {e}").as_bytes()),
        },
        Cmd::Bgsave => {
            if p.snapshot_in_background() {
                push_simple(out, "Background saving started");
            } else {
                push_error(out, b"ERR Background save already in progress");
            }
        }
        _ => {
            let last = p.stats().last_snapshot_unix;
            push_int(out, if last == 0 { ctx.shared.started_unix as i64 } else { last as i64 });
        }
    }
}

/// The container's subcommand in `args[1]`, arity-checked; None after
/// answering Redis's error.
fn sub<'s>(spec_cmd: Cmd, args: &[Arg<'_>], out: &mut Vec<u8>) -> Option<&'s str> {
    let spec: &Spec = COMMANDS.iter().find(|s| s.cmd == spec_cmd)?;
    let upper = spec.name.to_ascii_uppercase();
    let Some((name, arity)) = table::subcommand(spec, &args[1]) else {
        let mut m = b"ERR unknown subcommand '".to_vec();
        let a = args[1].split(|&b| b == 0).next().unwrap_or(b"");
        m.extend_from_slice(&a[..a.len().min(128)]);
        m.extend_from_slice(format!("'. Try {upper} HELP.").as_bytes());
        push_error(out, &m);
        return None;
    };
    if !arity_ok(arity, args.len()) {
        wrong_arity(&format!("{}|{name}", spec.name), out);
        return None;
    }
    Some(name)
}

fn help(lines: &[&str], out: &mut Vec<u8>) {
    push_array(out, lines.len());
    for l in lines {
        push_simple(out, l);
    }
}

fn hello(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let mut proto = None;
    let mut next = 1;
    if args.len() >= 2 {
        match int_arg(&args[1]) {
            None => return push_error(out, err::PROTO_NOT_INTEGER.as_bytes()),
            Some(2) => proto = Some(Proto::Resp2),
            Some(3) => proto = Some(Proto::Resp3),
            Some(_) => return push_error(out, err::NOPROTO.as_bytes()),
        }
        next = 2;
    }
    let mut auth = false;
    let mut name: Option<&[u8]> = None;
    let mut j = next;
    while j < args.len() {
        let more = args.len() - 1 - j;
        if is(&args[j], "auth") && more >= 2 {
            auth = true;
            j += 3;
        } else if is(&args[j], "setname") && more >= 1 {
            name = Some(&args[j + 1]);
            j += 2;
        } else {
            let mut m = b"ERR Syntax error in HELLO option '".to_vec();
            m.extend_from_slice(args[j].split(|&b| b == 0).next().unwrap_or(b""));
            m.push(b'\'');
            return push_error(out, &m);
        }
    }
    if auth {
        return push_error(out, err::WRONGPASS.as_bytes());
    }
    if let Some(n) = name {
        if !valid_attribute(n) {
            return push_error(out, err::CLIENT_NAME.as_bytes());
        }
        ctx.session.name = (!n.is_empty()).then(|| n.to_vec());
    }
    if let Some(p) = proto {
        ctx.session.proto = p;
    }
    let p = ctx.proto();
    push_map(out, 7, p);
    push_bulk(out, b"server");
    push_bulk(out, b"amalgam");
    push_bulk(out, b"version");
    push_bulk(out, REDIS_VERSION.as_bytes());
    push_bulk(out, b"proto");
    push_int(out, if p == Proto::Resp3 { 3 } else { 2 });
    push_bulk(out, b"id");
    push_int(out, ctx.session.id as i64);
    push_bulk(out, b"mode");
    push_bulk(out, b"standalone");
    push_bulk(out, b"role");
    push_bulk(out, b"master");
    push_bulk(out, b"modules");
    push_array(out, 0);
}

/// Redis's `validateClientAttr`: printable ASCII without spaces.
fn valid_attribute(v: &[u8]) -> bool {
    v.iter().all(|&b| (b'!'..=b'~').contains(&b))
}

fn client(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let Some(name) = sub(Cmd::Client, args, out) else { return };
    let s = &mut *ctx.session;
    match name {
        "id" => push_int(out, s.id as i64),
        "getname" => match &s.name {
            Some(n) => push_bulk(out, n),
            None => null(ctx, out),
        },
        "setname" => {
            if !valid_attribute(&args[2]) {
                return push_error(out, err::CLIENT_NAME.as_bytes());
            }
            s.name = (!args[2].is_empty()).then(|| args[2].to_vec());
            push_simple(out, "OK");
        }
        "setinfo" => {
            let attr: &[u8] = &args[2];
            let slot = if is(attr, "lib-name") {
                &mut s.lib_name
            } else if is(attr, "lib-ver") {
                &mut s.lib_ver
            } else {
                let mut m = b"ERR Unrecognized option '".to_vec();
                m.extend_from_slice(attr.split(|&b| b == 0).next().unwrap_or(b""));
                m.push(b'\'');
                return push_error(out, &m);
            };
            if !valid_attribute(&args[3]) {
                let mut m = attr.to_vec();
                m.extend_from_slice(b" cannot contain spaces, newlines or special characters.");
                let mut e = b"ERR ".to_vec();
                e.extend_from_slice(&m);
                return push_error(out, &e);
            }
            *slot = (!args[3].is_empty()).then(|| args[3].to_vec());
            push_simple(out, "OK");
        }
        _ => help(
            &[
                "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "ID",
                "    Return the ID of the current connection.",
                "GETNAME",
                "    Return the name of the current connection.",
                "SETNAME <name>",
                "    Assign the name <name> to the current connection.",
                "SETINFO <option> <value>",
                "    Set client meta attr. Options are: LIB-NAME, LIB-VER.",
                "HELP",
                "    Print this help.",
            ],
            out,
        ),
    }
}

/// The parameters CONFIG GET knows, with their values.
fn config_params(ctx: &Ctx<'_>) -> Vec<(&'static str, String)> {
    let a = &ctx.shared.args;
    let engine = ctx.shared.store.stats();
    vec![
        ("save", String::new()),
        ("appendonly", "no".into()),
        ("maxmemory", engine.memory_limit_bytes.to_string()),
        ("maxmemory-policy", "noeviction".into()),
        ("maxclients", a.conn_limit.to_string()),
        ("databases", "1".into()),
        ("port", a.resp_port.to_string()),
        ("bind", a.listen.clone()),
        ("proto-max-bulk-len", a.max_item_size.to_string()),
        ("timeout", "0".into()),
        ("io-threads", ctx.shared.workers.len().to_string()),
    ]
}

fn config(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let Some(name) = sub(Cmd::Config, args, out) else { return };
    match name {
        "get" => {
            let params = config_params(ctx);
            let hits: Vec<&(&str, String)> =
                params.iter().filter(|(n, _)| args[2..].iter().any(|p| matches(p, n.as_bytes(), true))).collect();
            push_map(out, hits.len(), ctx.proto());
            for (n, v) in hits {
                push_bulk(out, n.as_bytes());
                push_bulk(out, v.as_bytes());
            }
        }
        "set" => {
            // Nothing is settable at run time (yet).
            let mut m = b"ERR Unknown option or number of arguments for CONFIG SET - '".to_vec();
            m.extend_from_slice(args[2].split(|&b| b == 0).next().unwrap_or(b""));
            m.push(b'\'');
            push_error(out, &m);
        }
        "resetstat" => {
            for w in ctx.shared.workers.iter() {
                w.reset();
            }
            push_simple(out, "OK");
        }
        _ => help(
            &[
                "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "GET <pattern>",
                "    Return parameters matching the glob-like <pattern> and their values.",
                "RESETSTAT",
                "    Reset statistics reported by the INFO command.",
                "HELP",
                "    Print this help.",
            ],
            out,
        ),
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
    // In Redis's order of ACL categories.
    let mut cats: Vec<&str> = Vec::new();
    if spec.group == "generic" {
        cats.push("@keyspace");
    }
    if spec.flags.contains(&"readonly") {
        cats.push("@read");
    }
    if spec.flags.contains(&"write") {
        cats.push("@write");
    }
    if spec.group == "list" {
        cats.push("@list");
    }
    if spec.group == "string" {
        cats.push("@string");
    }
    cats.push(if spec.flags.contains(&"fast") { "@fast" } else { "@slow" });
    if spec.flags.contains(&"blocking") {
        cats.push("@blocking");
    }
    if spec.group == "connection" {
        cats.push("@connection");
    }
    push_set(out, cats.len(), proto);
    for c in &cats {
        push_simple(out, c);
    }
    push_set(out, 0, proto);
    push_array(out, 0);
    push_array(out, 0);
}

/// One command's COMMAND DOCS entry: summary, since, group, complexity,
/// arguments (left empty).
fn command_docs(spec: &Spec, proto: Proto, out: &mut Vec<u8>) {
    push_bulk(out, spec.name.as_bytes());
    push_map(out, 5, proto);
    for (k, v) in [("summary", spec.summary), ("since", spec.since), ("group", spec.group)] {
        push_bulk(out, k.as_bytes());
        push_bulk(out, v.as_bytes());
    }
    push_bulk(out, b"complexity");
    push_bulk(out, if spec.last_key == -1 { b"O(N)" } else { b"O(1)" });
    push_bulk(out, b"arguments");
    push_array(out, 0);
}

fn command(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
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
                args[2..].iter().map(|a| table::lookup(a)).collect()
            };
            push_array(out, wanted.len());
            for w in wanted {
                match w {
                    Some(s) => command_info(s, proto, out),
                    None => super::null(ctx, out),
                }
            }
        }
        "docs" => {
            let wanted: Vec<&Spec> = if args.len() == 2 {
                COMMANDS.iter().collect()
            } else {
                args[2..].iter().filter_map(|a| table::lookup(a)).collect()
            };
            push_map(out, wanted.len(), proto);
            for s in wanted {
                command_docs(s, proto, out);
            }
        }
        "list" => {
            push_array(out, COMMANDS.len());
            for s in COMMANDS.iter() {
                push_bulk(out, s.name.as_bytes());
            }
        }
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
                "DOCS [<command-name> ...]",
                "    Return documentation details about multiple Redis commands.",
                "HELP",
                "    Print this help.",
            ],
            out,
        ),
    }
}

/// `12345` as Redis's `bytesToHuman`: `12.06K`.
fn human(bytes: u64) -> String {
    let b = bytes as f64;
    match bytes {
        0..1024 => format!("{bytes}B"),
        1024..1_048_576 => format!("{:.2}K", b / 1024.0),
        1_048_576..1_073_741_824 => format!("{:.2}M", b / 1_048_576.0),
        _ => format!("{:.2}G", b / 1_073_741_824.0),
    }
}

/// INFO's sections, in Redis's order.
const INFO_SECTIONS: [&str; 6] = ["server", "clients", "memory", "persistence", "stats", "keyspace"];

fn info(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let all = args.len() == 1 || args[1..].iter().any(|a| is(a, "all") || is(a, "everything") || is(a, "default"));
    let wanted: Vec<&str> =
        INFO_SECTIONS.iter().copied().filter(|s| all || args[1..].iter().any(|a| is(a, s))).collect();
    let shared = ctx.shared;
    let mut t = crate::stats::Totals::default();
    for w in shared.workers.iter() {
        w.add_to(&mut t);
    }
    let engine = shared.store.stats();
    let mut text = String::new();
    for (i, section) in wanted.iter().enumerate() {
        if i > 0 {
            text.push_str("\r\n");
        }
        let mut title = section.to_string();
        title[..1].make_ascii_uppercase();
        let _ = write!(text, "# {title}\r\n");
        let mut field = |name: &str, value: &dyn std::fmt::Display| {
            let _ = write!(text, "{name}:{value}\r\n");
        };
        match *section {
            "server" => {
                let up = shared.started.elapsed().as_secs();
                field("redis_version", &REDIS_VERSION);
                field("amalgam_version", &env!("CARGO_PKG_VERSION"));
                field("redis_mode", &"standalone");
                field("os", &std::env::consts::OS);
                field("arch_bits", &usize::BITS);
                field("multiplexing_api", &"epoll");
                field("process_id", &std::process::id());
                field("tcp_port", &shared.args.resp_port);
                field("uptime_in_seconds", &up);
                field("uptime_in_days", &(up / 86400));
                field("executable", &std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_default());
                field("config_file", &"");
            }
            "clients" => {
                // Both protocols' connections: they share the -c limit.
                field("connected_clients", &shared.curr_connections.load(Ordering::Relaxed));
                field("maxclients", &shared.conn_limit);
                field("blocked_clients", &shared.blocking.blocked());
            }
            "memory" => {
                let used = engine.item_bytes + engine.index_bytes;
                field("used_memory", &used);
                field("used_memory_human", &human(used));
                field("maxmemory", &engine.memory_limit_bytes);
                field("maxmemory_human", &human(engine.memory_limit_bytes));
                field("maxmemory_policy", &"noeviction");
            }
            "persistence" => {
                // Redis's names where they mean the same (the snapshot is
                // its RDB, the log its AOF), then amalgam's own counters.
                let p = shared.persist.as_ref().map(|p| (p.stats(), p.config().fsync));
                let st = p.map(|p| p.0).unwrap_or_default();
                field("loading", &0);
                field("rdb_changes_since_last_save", &st.changes_since_snapshot);
                field("rdb_bgsave_in_progress", &u8::from(st.snapshot_in_progress));
                field(
                    "rdb_last_save_time",
                    &if st.last_snapshot_unix == 0 { shared.started_unix } else { st.last_snapshot_unix },
                );
                field("rdb_last_bgsave_status", &"ok");
                field("rdb_saves", &st.snapshots);
                field("aof_enabled", &u8::from(p.is_some()));
                field("aof_rewrite_in_progress", &0);
                field("amalgam_fsync", &p.map(|p| format!("{:?}", p.1).to_lowercase()).unwrap_or_else(|| "off".into()));
                field("amalgam_log_records", &st.log_records);
                field("amalgam_log_writes", &st.log_writes);
                field("amalgam_log_fsyncs", &st.log_fsyncs);
                field("amalgam_last_snapshot_items", &st.last_snapshot_items);
                field("amalgam_last_snapshot_seconds", &st.last_snapshot_secs);
            }
            "stats" => {
                field("total_connections_received", &t.total_connections);
                field("total_commands_processed", &t.resp_commands);
                field("total_net_input_bytes", &t.bytes_read);
                field("total_net_output_bytes", &t.bytes_written);
                field("rejected_connections", &shared.rejected_connections.load(Ordering::Relaxed));
                field("keyspace_hits", &t.get_hits);
                field("keyspace_misses", &t.get_misses);
            }
            _ => {
                // Redis lists only non-empty databases; the expiry count
                // is not tracked by the engine.
                if engine.items > 0 {
                    field("db0", &format_args!("keys={},expires=0,avg_ttl=0", engine.items));
                }
            }
        }
    }
    push_verbatim(out, ctx.proto(), b"txt", text.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_sizes() {
        assert_eq!(human(512), "512B");
        assert_eq!(human(2048), "2.00K");
        assert_eq!(human(64 << 20), "64.00M");
    }
}
