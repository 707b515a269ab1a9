//! Connection and server commands: PING ECHO QUIT SELECT INFO CONFIG
//! COMMAND CLIENT HELLO AUTH.
//!
//! Amalgam introduces itself as what it speaks: HELLO's `version` and
//! INFO's `redis_version` are [`REDIS_VERSION`], the Redis release whose
//! commands and replies it follows (clients gate features on it), and
//! HELLO's `server` and INFO's `amalgam_version` say what it is.
//!
//! AUTH and HELLO's AUTH option authenticate through `acl.rs`.

use super::client::valid_attribute;
use super::glob::matches;
use super::table::Cmd;
use super::After;
use super::{help, int_arg, is, sub, wrong_arity, Arg, Ctx};
use crate::settings::{self, Kind, Setting};
use amalgam_protocol::resp::{
    err, push_array, push_bulk, push_error, push_int, push_map, push_simple, push_verbatim, Proto,
};
use std::fmt::Write as _;
use std::sync::atomic::Ordering;

/// The Redis release whose commands and replies this front end follows.
pub use crate::REDIS_VERSION;

pub(crate) fn run(ctx: &mut Ctx<'_>, cmd: Cmd, args: &[Arg<'_>], out: &mut Vec<u8>) -> After {
    match cmd {
        // RESP2 subscriber mode: `[pong, arg or ""]` (Redis's pingCommand).
        Cmd::Ping if super::pubsub::subscribed(ctx.session) && ctx.proto() == Proto::Resp2 && args.len() <= 2 => {
            push_array(out, 2);
            push_bulk(out, b"pong");
            push_bulk(out, args.get(1).map_or(&b""[..], |a| &a[..]));
        }
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
        Cmd::Reset => reset(ctx, out),
        // Redis's getIntFromObjectOrReply: an i64, then the i32 range.
        Cmd::Select => match ctx.shared.databases.parse(&args[1]) {
            Ok(db) if db != 0 && ctx.shared.cluster.enabled() => {
                push_error(out, b"ERR SELECT is not allowed in cluster mode")
            }
            Ok(db) => {
                ctx.select(db);
                push_simple(out, "OK")
            }
            Err(e) => push_error(out, e.as_bytes()),
        },
        Cmd::Info => info(ctx, args, out),
        Cmd::Config => {
            config(ctx, args, out);
            // CONFIG SET notify-keyspace-events: the next command sees it.
            ctx.cx.refresh_notify();
        }
        Cmd::Slowlog => super::account::slowlog(ctx, args, out),
        Cmd::Latency => super::latency::latency(ctx, args, out),
        Cmd::Debug => super::debug::debug(ctx, args, out),
        Cmd::Module => module(args, out),
        Cmd::Command => super::command::command(ctx, args, out),
        Cmd::Client if super::client::client(ctx, args, out) => return After::Close,
        Cmd::Client => {}
        Cmd::Hello => hello(ctx, args, out),
        Cmd::Save | Cmd::Bgsave | Cmd::Lastsave => save(ctx, cmd, out),
        Cmd::Auth => super::acl::auth(ctx, args, out),
        Cmd::Shutdown => return shutdown(ctx, args, out),
        _ => {}
    }
    After::Continue
}

/// MODULE: Amalgam loads no modules. LIST answers the empty list; LOAD,
/// LOADEX and UNLOAD answer what Redis 7.0 answers with its default
/// `enable-module-command no` (tools probe for modules with LIST and take
/// the refusal as Redis's).
fn module(args: &[Arg<'_>], out: &mut Vec<u8>) {
    let Some(name) = sub(Cmd::Module, args, out) else { return };
    match name {
        "list" => push_array(out, 0),
        "load" | "loadex" | "unload" => push_error(
            out,
            b"ERR MODULE command not allowed. If the enable-module-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.",
        ),
        _ => help(
            &[
                "MODULE <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "LIST",
                "    Return a list of loaded modules.",
                "LOAD <path> [<arg> ...]",
                "    Load a module library from <path>, passing to it any optional arguments.",
                "LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
                "    Load a module library from <path>, while passing it module configurations and optional arguments.",
                "UNLOAD <name>",
                "    Unload a module.",
                "HELP",
                "    Prints this help.",
            ],
            out,
        ),
    }
}

/// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT], Redis 7.0's: a final
/// snapshot with SAVE, or by default when persistence has a snapshot
/// schedule (Redis saves by default when it has save points); none with
/// NOSAVE. Either way the log is flushed and synced as at SIGTERM, so no
/// acknowledged write is lost (Redis's NOSAVE loses what its RDB lacks).
/// NOW and FORCE are accepted: there are no replicas to wait for, and
/// FORCE stops even when the snapshot fails. ABORT answers that no
/// shutdown is in progress (one never waits). On success the connection
/// closes without a reply and the server stops the SIGTERM way.
fn shutdown(ctx: &Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) -> After {
    let (mut nosave, mut save, mut force, mut abort) = (false, false, false, false);
    for a in &args[1..] {
        if is(a, "nosave") {
            nosave = true;
        } else if is(a, "save") {
            save = true;
        } else if is(a, "now") {
        } else if is(a, "force") {
            force = true;
        } else if is(a, "abort") {
            abort = true;
        } else {
            push_error(out, err::SYNTAX.as_bytes());
            return After::Continue;
        }
    }
    if (nosave && save) || (abort && args.len() > 2) {
        push_error(out, err::SYNTAX.as_bytes());
        return After::Continue;
    }
    if abort {
        push_error(out, b"ERR No shutdown in progress.");
        return After::Continue;
    }
    let shared = ctx.shared;
    let scheduled = shared.persist.as_ref().is_some_and(|p| p.schedule() != (0, 0));
    let snapshot = save || (!nosave && scheduled);
    log::info!("User requested shutdown...");
    if snapshot {
        let saved = match &shared.persist {
            None => Err("persistence is off (no --dir): there is nowhere to save".to_string()),
            Some(p) => {
                log::info!("Saving the final snapshot before exiting.");
                p.snapshot().map(|r| r.items).map_err(|e| e.to_string()).and_then(|items| {
                    crate::rdbfile::save(shared).map(|_| items).map_err(|e| format!("the RDB file: {e}"))
                })
            }
        };
        match saved {
            Ok(items) => log::info!("final snapshot written: {items} items"),
            Err(e) if force => log::warn!("the final snapshot failed ({e}); shutting down anyway (FORCE)"),
            Err(e) => {
                log::warn!("Error trying to save the DB, can't exit: {e}");
                push_error(out, b"ERR Errors trying to SHUTDOWN. Check logs.");
                return After::Continue;
            }
        }
    }
    // The signal thread runs the one shutdown path (main.rs).
    if let Err(e) = signal_hook::low_level::raise(signal_hook::consts::SIGTERM) {
        log::error!("SHUTDOWN: cannot signal myself: {e}");
    }
    After::Close
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
            Ok(_) => match crate::rdbfile::save(ctx.shared) {
                Ok(_) => push_simple(out, "OK"),
                Err(e) => push_error(out, format!("ERR the RDB file was not written: {e}").as_bytes()),
            },
            Err(e) => push_error(out, format!("ERR snapshot failed: {e}").as_bytes()),
        },
        Cmd::Bgsave => {
            // Amalgam's snapshot and the RDB file (dbfilename), each on its
            // own thread.
            let rdb_started = ctx.shared.arc().is_none_or(|s| crate::rdbfile::bgsave(&s));
            if p.snapshot_in_background() || rdb_started && crate::rdbfile::saving(ctx.shared) {
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
    let mut auth: Option<(&[u8], &[u8])> = None;
    let mut name: Option<&[u8]> = None;
    let mut j = next;
    while j < args.len() {
        let more = args.len() - 1 - j;
        if is(&args[j], "auth") && more >= 2 {
            auth = Some((&args[j + 1], &args[j + 2]));
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
    if let Err(e) = super::acl::hello_auth(ctx, &args[0], auth) {
        return push_error(out, e.as_bytes());
    }
    if let Some(n) = name {
        if !valid_attribute(n) {
            return push_error(out, err::CLIENT_NAME.as_bytes());
        }
        ctx.session.client.attrs().name = (!n.is_empty()).then(|| n.to_vec());
    }
    if let Some(p) = proto {
        ctx.set_proto(p);
        ctx.session.client.resp.store(if p == Proto::Resp3 { 3 } else { 2 }, Ordering::Relaxed);
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
    push_bulk(out, if ctx.shared.cluster.enabled() { b"cluster" as &[u8] } else { b"standalone" });
    push_bulk(out, b"role");
    push_bulk(out, b"master");
    push_bulk(out, b"modules");
    push_array(out, 0);
}

/// CONFIG SET name value [name value ...], Redis 7.0's `configSetCommand`
/// over the settings table (`crate::settings`): every pair is looked up
/// and checked before anything is applied, and the first failure (in
/// Redis's order: unknown name, immutable, duplicate, then each value's
/// check) answers its error with nothing changed. A setting with a `set`
/// changes at run time; one fixed at start accepts its current value (so
/// `CONFIG SET save ""` and friends from tools succeed) and answers any
/// other with "can't set immutable config": restart with the flag instead.
fn config_set(ctx: &Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    if args.len() % 2 == 1 {
        return push_error(out, err::SYNTAX.as_bytes());
    }
    let shared = ctx.shared;
    let c_str = |a: &[u8]| String::from_utf8_lossy(a.split(|&b| b == 0).next().unwrap_or(b"")).into_owned();
    let mut unknown: Option<String> = None;
    let mut failed: Option<(String, String)> = None;
    let mut chosen: Vec<(&Setting, &[u8])> = Vec::new();
    for pair in args[2..].chunks_exact(2) {
        let Some(row) = settings::find(&pair[0]) else {
            if failed.is_none() && unknown.is_none() {
                unknown = Some(c_str(&pair[0]));
            }
            continue;
        };
        if failed.is_some() || unknown.is_some() {
            continue;
        }
        if matches!(row.kind, Kind::Immutable) {
            failed = Some((c_str(&pair[0]), "can't set immutable config".into()));
        } else if chosen.iter().any(|(r, _)| r.name == row.name) {
            failed = Some((c_str(&pair[0]), "duplicate parameter".into()));
        } else {
            chosen.push((row, &pair[1]));
        }
    }
    if let Some(name) = unknown {
        return push_error(
            out,
            format!("ERR Unknown option or number of arguments for CONFIG SET - '{name}'").as_bytes(),
        );
    }
    // Every value's check first (Redis sets them in order and rolls back
    // at the first it refuses), then whether Amalgam can change it.
    let mut changed: Option<&str> = None;
    for &(row, v) in &chosen {
        if failed.is_some() {
            break;
        }
        match settings::check(row.kind, v).and_then(|()| match row.refuse.and_then(|r| r(shared, v)) {
            Some(why) => Err(why),
            None => Ok(()),
        }) {
            Err(e) => failed = Some((row.name.to_string(), e)),
            Ok(()) if row.set.is_none() && !settings::same(row.kind, v, &(row.get)(shared, row.name)) => {
                changed = changed.or(Some(row.name));
            }
            Ok(()) => {}
        }
    }
    if let (None, Some(name)) = (&failed, changed) {
        failed = Some((name.to_string(), "can't set immutable config".into()));
    }
    match failed {
        Some((name, why)) => {
            push_error(out, format!("ERR CONFIG SET failed (possibly related to argument '{name}') - {why}").as_bytes())
        }
        None => {
            // TLS's files (tls.rs) reload together, before anything else
            // applies: a certificate and its key change in one CONFIG SET,
            // and a file that does not load changes nothing.
            if let Err((name, e)) = reload_tls(shared, &chosen) {
                log::warn!("CONFIG SET {name}: TLS configuration not updated: {e}");
                let why = "Unable to update TLS configuration. Check server logs.";
                return push_error(
                    out,
                    format!("ERR CONFIG SET failed (possibly related to argument '{name}') - {why}").as_bytes(),
                );
            }
            for &(row, v) in &chosen {
                if let Some(set) = row.set {
                    set(shared, row.name, v);
                }
            }
            push_simple(out, "OK")
        }
    }
}

/// Reloads TLS with the `tls-*-file` values among `chosen` (even the same
/// names: Redis reloads then too); Err: the first such name and why.
fn reload_tls(shared: &crate::Shared, chosen: &[(&Setting, &[u8])]) -> Result<(), (&'static str, String)> {
    let files: Vec<(&'static str, std::path::PathBuf)> = chosen
        .iter()
        .filter(|(row, _)| settings::TLS_FILES.contains(&row.name))
        .map(|&(row, v)| (row.name, std::path::PathBuf::from(String::from_utf8_lossy(v).into_owned())))
        .collect();
    let (Some(&(first, _)), Some(tls)) = (files.first(), &shared.tls) else { return Ok(()) };
    tls.reload(|f| {
        for (name, path) in files.iter().cloned() {
            match name {
                "tls-cert-file" => f.cert = path,
                "tls-key-file" => f.key = path,
                _ => f.ca = (!path.as_os_str().is_empty()).then_some(path),
            }
        }
    })
    .map_err(|e| (first, e))
}

fn config(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let Some(name) = sub(Cmd::Config, args, out) else { return };
    match name {
        "get" => {
            let hits: Vec<&Setting> = settings::all()
                .iter()
                .filter(|s| args[2..].iter().any(|p| matches(p, s.name.as_bytes(), true)))
                .collect();
            push_map(out, hits.len(), ctx.proto());
            for s in hits {
                // A name asked for without a glob character comes back as
                // it was typed (Redis keys its reply by the argument):
                // `CONFIG GET MAXMEMORY` answers `MAXMEMORY`.
                let literal = args[2..]
                    .iter()
                    .find(|p| !super::glob::has_wildcards(p) && p.eq_ignore_ascii_case(s.name.as_bytes()));
                push_bulk(out, literal.map_or(s.name.as_bytes(), |p| &p[..]));
                push_bulk(out, (s.get)(ctx.shared, s.name).as_bytes());
            }
        }
        "set" => config_set(ctx, args, out),
        "rewrite" => match crate::conffile::rewrite(ctx.shared) {
            Ok(()) => push_simple(out, "OK"),
            Err(e) => push_error(out, e.as_bytes()),
        },
        "resetstat" => {
            for w in ctx.shared.workers.iter() {
                w.reset();
                w.commands.reset();
                w.errors.reset();
            }
            push_simple(out, "OK");
        }
        _ => help(
            &[
                "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "GET <pattern>",
                "    Return parameters matching the glob-like <pattern> and their values.",
                "SET <directive> <value>",
                "    Set the configuration <directive> to <value>.",
                "RESETSTAT",
                "    Reset statistics reported by the INFO command.",
                "REWRITE",
                "    Rewrite the configuration file.",
                "HELP",
                "    Prints this help.",
            ],
            out,
        ),
    }
}

/// RESET: the connection as it was when it connected, as Redis 7's
/// `clearClientConnectionState` leaves it: out of MONITOR, no
/// transaction and no watched key, no subscription (left without
/// replies), RESP2, the default user (so unauthenticated where a password
/// is required), no name, CLIENT REPLY ON, NO-EVICT and NO-TOUCH off.
/// It runs at once inside MULTI and in subscriber mode, and needs no
/// authentication (its table flags). Answers `+RESET`, which CLIENT
/// REPLY OFF does not drop (`run_command` sees the reply mode it set).
fn reset(ctx: &mut Ctx<'_>, out: &mut Vec<u8>) {
    use amalgam_net::clients::flag;
    let shared = ctx.shared;
    let s = &mut *ctx.session;
    if s.monitor.take().is_some() {
        shared.clients.stop_monitor(&s.client);
    }
    super::multi::reset(&mut s.multi);
    super::pubsub::reset(shared, s);
    super::tracking::reset_session(shared, s);
    s.db = 0;
    s.client.db.store(0, Ordering::Relaxed);
    s.client.resp.store(2, Ordering::Relaxed);
    s.auth = super::acl::Auth::new(&shared.acl);
    {
        let mut attrs = s.client.attrs();
        attrs.user = None;
        attrs.name = None;
    }
    s.reply = super::Reply::On;
    s.client.set_flag(flag::NO_EVICT, false);
    s.client.set_flag(flag::NO_TOUCH, false);
    ctx.set_proto(Proto::Resp2);
    ctx.cx.refresh_notify();
    push_simple(out, "RESET");
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

/// The process's CPU time as Redis's INFO prints it (`%ld.%06ld`
/// seconds): (system, user, children's system, children's user), from
/// `/proc/self/stat` (Linux's USER_HZ of 100 ticks a second, so 10 ms
/// resolution; the server crate calls no libc, so no getrusage).
fn cpu_seconds() -> [String; 4] {
    /// `/proc/<pid>/stat` counts in USER_HZ, 100 on every Linux (proc(5)).
    const TICKS_PER_SECOND: u64 = 100;
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may hold spaces, so split at
    // its closing parenthesis): state is field 3, utime 14, stime 15,
    // cutime 16, cstime 17.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest.split_whitespace().map(|x| x.parse().unwrap_or(0)).collect();
    let at = |field: usize| f.get(field - 3).copied().unwrap_or(0);
    let secs =
        |t: u64| format!("{}.{:06}", t / TICKS_PER_SECOND, (t % TICKS_PER_SECOND) * (1_000_000 / TICKS_PER_SECOND));
    [secs(at(15)), secs(at(14)), secs(at(17)), secs(at(16))]
}

/// INFO's sections, in Redis's order.
const INFO_SECTIONS: [&str; 13] = [
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "modules",
    "commandstats",
    "errorstats",
    "latencystats",
    "cluster",
    "keyspace",
];

/// The sections `all` and `everything` add to `default` (Redis's).
const INFO_NOT_DEFAULT: [&str; 2] = ["commandstats", "latencystats"];

fn info(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    // `all` and `everything` differ in Redis by its modules' sections,
    // which Amalgam does not have.
    let all = args[1..].iter().any(|a| is(a, "all") || is(a, "everything"));
    let default = args.len() == 1 || args[1..].iter().any(|a| is(a, "default"));
    let wanted: Vec<&str> = INFO_SECTIONS
        .iter()
        .copied()
        .filter(|s| all || default && !INFO_NOT_DEFAULT.contains(s) || args[1..].iter().any(|a| is(a, s)))
        .collect();
    let commands =
        wanted.iter().any(|s| INFO_NOT_DEFAULT.contains(s)).then(|| super::cmdstats::merged(&ctx.shared.workers));
    let errors = wanted
        .iter()
        .any(|s| *s == "stats" || *s == "errorstats")
        .then(|| super::errorstats::merged(&ctx.shared.workers));
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
        if *section == "cpu" {
            title.make_ascii_uppercase();
        } else {
            title[..1].make_ascii_uppercase();
        }
        let _ = write!(text, "# {title}\r\n");
        let mut field = |name: &str, value: &dyn std::fmt::Display| {
            let _ = write!(text, "{name}:{value}\r\n");
        };
        match *section {
            "server" => {
                let up = shared.started.elapsed().as_secs();
                field("redis_version", &REDIS_VERSION);
                // The build's commit, under Redis's name (tools read it)
                // and Amalgam's (it is Amalgam's commit, not Redis's).
                field("redis_git_sha1", &crate::GIT_SHA1);
                field("redis_git_dirty", &0);
                field("amalgam_version", &env!("CARGO_PKG_VERSION"));
                field("amalgam_git_sha1", &crate::GIT_SHA1);
                field("redis_mode", &if ctx.shared.cluster.enabled() { "cluster" } else { "standalone" });
                field("os", &std::env::consts::OS);
                field("arch_bits", &usize::BITS);
                field("multiplexing_api", &"epoll");
                field("process_id", &std::process::id());
                field("tcp_port", &shared.args.resp_port);
                field("uptime_in_seconds", &up);
                field("uptime_in_days", &(up / 86400));
                field("executable", &std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_default());
                field(
                    "config_file",
                    &shared.args.config_file.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
                );
            }
            "clients" => {
                // Both protocols' connections: they share the -c limit.
                field("connected_clients", &shared.curr_connections.load(Ordering::Relaxed));
                field("maxclients", &shared.conn_limit);
                field("blocked_clients", &shared.blocking.blocked());
                field("tracking_clients", &shared.tracking.clients());
            }
            "memory" => {
                let used = engine.item_bytes + engine.index_bytes;
                field("used_memory", &used);
                field("used_memory_human", &human(used));
                let rss = amalgam_metrics::process::resident_bytes().unwrap_or(0);
                field("used_memory_rss", &rss);
                field("used_memory_rss_human", &human(rss));
                // The engine's peak of used_memory (its maintenance loop
                // looks every 250 ms at most, and every INFO).
                let peak = engine.peak_used_bytes.max(used);
                field("used_memory_peak", &peak);
                field("used_memory_peak_human", &human(peak));
                field("used_memory_peak_perc", &format!("{:.2}%", used as f64 * 100.0 / peak.max(1) as f64));
                field("maxmemory", &engine.memory_limit_bytes);
                field("maxmemory_human", &human(engine.memory_limit_bytes));
                field("maxmemory_policy", &amalgam_commands::Host::maxmemory_policy(shared).name());
                field("amalgam_eviction", &shared.store.eviction());
                // Scripting (resp/script.rs): the workers' Lua states and
                // the cached bodies; FUNCTION's libraries.
                let lua = shared.scripts.lua_bytes();
                let bodies = shared.scripts.body_bytes();
                field("used_memory_lua", &lua);
                field("used_memory_lua_human", &human(lua));
                field("used_memory_scripts_eval", &bodies);
                field("number_of_cached_scripts", &shared.scripts.len());
                let (libraries, functions) = shared.scripts.functions.counts();
                field("number_of_functions", &functions);
                field("number_of_libraries", &libraries);
                field("used_memory_vm_functions", &0);
                field("used_memory_scripts", &bodies);
                field("used_memory_scripts_human", &human(bodies as u64));
                // Redis's ratio of the resident set to used_memory (the
                // index and items; the process's other memory counts as
                // fragmentation, as an allocator's overhead does in Redis).
                field("mem_fragmentation_ratio", &format!("{:.2}", rss as f64 / used.max(1) as f64));
                field("mem_fragmentation_bytes", &(rss as i64 - used as i64));
                field("mem_allocator", &"libc");
                // A deleted value is freed once no reader can hold it
                // (the engine's epochs), not queued to a lazy-free thread.
                field("lazyfree_pending_objects", &0);
                field("lazyfreed_objects", &0);
            }
            "persistence" => {
                // Redis's names where they mean the same (the snapshot is
                // its RDB, the log its AOF), then amalgam's own counters.
                let p = shared.persist.as_ref().map(|p| (p.stats(), p.fsync()));
                let st = p.map(|p| p.0).unwrap_or_default();
                field("loading", &0);
                field("rdb_changes_since_last_save", &st.changes_since_snapshot);
                field("rdb_bgsave_in_progress", &u8::from(st.snapshot_in_progress || crate::rdbfile::saving(shared)));
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
                // Items evicted for room, and expired items the background
                // sweep removed (one dropped when a read finds it expired
                // is not counted: the engine keeps no count of those).
                field("evicted_keys", &engine.evictions);
                field("expired_keys", &engine.swept_items);
                field("pubsub_channels", &shared.pubsub.channels());
                field("pubsub_patterns", &shared.pubsub.patterns());
                field("pubsubshard_channels", &shared.pubsub.shard_channels());
                let (keys, items, prefixes) = shared.tracking.totals();
                field("tracking_total_keys", &keys);
                field("tracking_total_items", &items);
                field("tracking_total_prefixes", &prefixes);
                field("sync_full", &shared.repl.sync_full.load(Ordering::Relaxed));
                field("sync_partial_ok", &shared.repl.sync_partial_ok.load(Ordering::Relaxed));
                field("sync_partial_err", &shared.repl.sync_partial_err.load(Ordering::Relaxed));
                // Redis 7.2's field (7.0.15 has none): clients of either
                // port closed for their output (obuf.rs).
                field("client_output_buffer_limit_disconnections", &shared.obuf.disconnections.load(Ordering::Relaxed));
                // MIGRATE opens a connection per call and keeps none
                // (resp/migrate.rs).
                field("migrate_cached_sockets", &0);
                // Every error reply (resp/errorstats.rs); Redis's
                // unexpected_error_replies (from a primary or the AOF) is
                // not kept.
                field("total_error_replies", &errors.as_ref().map_or(0, |e| e.0));
            }
            "replication" => crate::repl::info(&shared.repl, shared.failover.state_name(), &mut field),
            "cpu" => {
                let [sys, user, sys_children, user_children] = cpu_seconds();
                field("used_cpu_sys", &sys);
                field("used_cpu_user", &user);
                field("used_cpu_sys_children", &sys_children);
                field("used_cpu_user_children", &user_children);
            }
            "commandstats" => super::cmdstats::info_commandstats(commands.as_deref().unwrap_or(&[]), &mut text),
            "errorstats" => {
                if let Some((_, codes)) = &errors {
                    super::errorstats::info_errorstats(codes, &mut text);
                }
            }
            "latencystats" => super::cmdstats::info_latencystats(commands.as_deref().unwrap_or(&[]), &mut text),
            "cluster" => field("cluster_enabled", &u8::from(ctx.shared.cluster.enabled())),
            // No modules: the section is its title alone, as in Redis.
            "modules" => {}
            _ => {
                // Redis lists only non-empty databases (avg_ttl, Redis's
                // estimate from its expiry sampling, is not kept: 0).
                let store = &ctx.shared.store;
                let dbs = &ctx.shared.databases;
                for db in 0..dbs.count() {
                    let ns = dbs.namespace(db);
                    let keys = store.namespace_len(ns);
                    if keys > 0 {
                        let expires = store.namespace_ttl_len(ns);
                        field(&format!("db{db}"), &format_args!("keys={keys},expires={expires},avg_ttl=0"));
                    }
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
