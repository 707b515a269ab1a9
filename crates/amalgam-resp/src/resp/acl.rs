//! Authentication and access control on the RESP port: `--requirepass`,
//! AUTH, HELLO's AUTH option, ACL users (ACL SETUSER GETUSER DELUSER LIST
//! USERS WHOAMI CAT GENPASS SAVE LOAD LOG DRYRUN), Redis 7.0's NOAUTH,
//! WRONGPASS and NOPERM replies, and `--aclfile`.
//!
//! Files: this one holds the check a request goes through, protected
//! mode, AUTH and the ACL command; `acl/users.rs` the users and their
//! rules (the bitmap, selectors, key patterns, parsing, the set of users);
//! `acl_log.rs` ACL LOG.
//!
//! ## Users
//! The server's users live in one [`Acl`] (a `RwLock`ed map, written only
//! by ACL SETUSER/DELUSER/LOAD and CONFIG SET requirepass). A user is
//! immutable once published: a change builds a new [`User`] and swaps the
//! map's `Arc`, then bumps [`Acl::epoch`]. The user `default` always
//! exists: on, `nopass`, `~* &* +@all`, unless `--requirepass` (or CONFIG
//! SET requirepass) gives it a password, as Redis's does. Passwords are
//! kept only as their SHA-256 (what ACL LIST and GETUSER show as `#<hex>`,
//! as Redis does); AUTH hashes the password it is given and compares the
//! hashes in constant time ([`same_hash`]); no password is ever logged.
//!
//! ## The per-request cost
//! A connection caches what it needs in [`Auth`]: its user (an `Arc`), whether it
//! must still authenticate, and `open`, true when neither authentication
//! nor any rule can refuse it (authenticated, every command, every key) —
//! the default user's case. `resp::process` compares the connection's
//! epoch with [`Acl::epoch`] once per read (one relaxed load) and refreshes
//! the cache when a user changed; an open connection then pays one byte
//! test per command, folded into the condition the batched GET/SET path
//! already tests, and `dispatch` calls [`refused`] only when it is not open.
//! A connection with rules keeps the batched path for what they permit:
//! [`permits`] checks a GET, MGET, SET or prefetched single-key command as
//! it joins the run (the bitmap test and its keys' patterns), and a
//! refused one runs alone through `dispatch`, where [`refused`] answers
//! and logs it (docs/bench-log/2026-11-26-authentication.md § Restricted
//! users keep the batched path).
//! Difference from Redis: a rule changed by another connection takes
//! effect for a client from its next read, not in the middle of a
//! pipeline it already sent.
//!
//! ## The check (Redis's `processCommand` order)
//! An unknown command and a wrong argument count are answered first (by
//! dispatch and MULTI's queueing, as before); then NOAUTH for any command
//! without the `no_auth` flag (AUTH, HELLO, QUIT) on a connection that
//! must authenticate; then NOPERM when the user may not run the command
//! (the subcommand, for a container: `config|get`) or a key its key
//! specifications name (`table::keys_of`) matches none of the user's
//! patterns (`glob.rs`). A refused command inside MULTI makes EXEC abort;
//! a refused EXEC answers EXECABORT and discards the transaction, as
//! Redis's `rejectCommand` does. EXEC's queued commands are checked again
//! when they run.
//!
//! ## Rules
//! Commands are numbered (`Catalog`: the table's rows, then each
//! container's subcommands) and a user's permissions are a bitmap over
//! those numbers, so the check is a bit test. A user keeps its command
//! rules as given (`+@all`/`-@all` as the base, then `+cmd`, `-cmd`,
//! `+@cat`, `-@cat` in order; a rule replaces an earlier one on the same
//! command or category, and a category rule absorbs earlier rules on the
//! commands in it); the bitmap is the rules replayed, and ACL LIST shows
//! the rules that change it, which is what Redis 7.0 prints.
//! Key patterns grant reading, writing or both (`%R~`, `%W~`, `~` or
//! `%RW~`): a key is allowed when a pattern granting everything its key
//! specification does to it matches (`access` reads; `insert`, `delete`,
//! `update` write; SET's and BITFIELD's `variable_flags` read from their
//! arguments as Redis's getkeys procedures do), as Redis 7.0's
//! `ACLSelectorCheckKey`. `%~p` (granting nothing) is refused, where
//! Redis 7.0 accepts it and then cannot describe the user.
//! Channel rules (`&pattern`, `allchannels`, `resetchannels`) apply to
//! PUBLISH, SUBSCRIBE, SPUBLISH and SSUBSCRIBE (each channel matched against the user's
//! patterns) and PSUBSCRIBE (each pattern equal to one of them), as Redis
//! 7.0's `ACLCheckChannelAgainstList`.
//!
//! ## Selectors
//! A user's rules outside parentheses are its root [`Selector`]; each
//! `(...)` modifier adds one more (Redis 7.0's selectors; a selector
//! spread over several arguments is joined first, [`merge_selectors`],
//! and its words split as Redis's `sdssplitargs`, [`split_selector`]). A
//! command is allowed when the root or any selector allows it whole
//! (command, keys, channels); refused, the reason reported is Redis's
//! `ACLCheckAllUserCommandPerm`'s (channel over key over command, then
//! the latest argument). `clearselectors` (and `reset`) drop them; ACL
//! LIST shows each as ` (keys channels commands)`, ACL GETUSER as a map
//! under `selectors`. A user with a selector refusing nothing is `open`.
//! Difference: a selector word holding a quote or a parenthesis (after
//! unquoting) is refused, where Redis accepts it and then writes an ACL
//! file it cannot load.
//!
//! Not served: first-argument rules (`+select|0`).
//!
//! ## ACL LOG and ACL DRYRUN
//! Every refusal `refused` answers (command, key, channel; context
//! `multi` inside MULTI and EXEC) and every failed AUTH / HELLO AUTH
//! (reason `auth`) is logged (`acl_log.rs`: Redis's grouping, its
//! `acllog-max-len`); the log is touched only on those paths, never by an
//! open connection. ACL DRYRUN runs the same [`User::check`] for a named
//! user. A command whose rules changed between MULTI and EXEC is answered
//! with Redis's EXEC-time NOPERM text.
//!
//! ## Closing clients when rules change
//! As Redis 7.0: ACL SETUSER that takes channels from a user closes each
//! of its clients holding a subscription the new channels refuse
//! (`kill_refused_subscribers`, Redis's `ACLKillPubsubClientsIfNeeded`:
//! nothing is walked when the user keeps every channel it had); ACL
//! DELUSER closes the deleted users' clients and ACL LOAD every client of
//! a user other than `default` (Redis 7.0.15 frees and rebuilds those
//! users, kept ones included), at once, through each client's worker
//! (`clients::Registry::kill`), not at their next command. A client is
//! its user's by CLIENT LIST's user name. These walks (the client
//! registry, the subscriptions) run in the ACL command, never on the
//! request path.

use super::glob::matches;
use super::table::{self, Cmd, Spec, ACL_CATEGORIES};
use super::After;
use super::{help, sub};
use super::{is, multi, Arg, Ctx};
use amalgam_acl::log as acl_log;
pub use amalgam_acl::*;
use amalgam_protocol::resp::{
    push_array, push_bulk, push_error, push_int, push_map, push_null, push_set, push_simple, Proto,
};
use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Redis 7.0's reply to a non-loopback client in protected mode.
pub const DENIED: &str = "-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n";

/// Redis's protected mode (`clientAcceptHandlerCommon`): on, the default
/// user without a password, and a client not on the loopback interface.
/// Asked once per accepted RESP connection, by the acceptor.
pub fn protected(shared: &crate::Shared, peer: std::net::SocketAddr) -> bool {
    let acl = &shared.acl;
    let ip = match peer.ip() {
        std::net::IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(std::net::IpAddr::V6(v6), std::net::IpAddr::V4),
        v4 => v4,
    };
    acl.protected_mode.load(Ordering::Relaxed) && !ip.is_loopback() && acl.default_user().nopass
}

/// A connection's authentication state (see the module's notes).
#[derive(Debug)]
pub struct Auth {
    user: Arc<User>,
    /// AUTH or HELLO AUTH succeeded, or the connection began while the
    /// default user needed no password (Redis's `c->authenticated`).
    authenticated: bool,
    /// Commands other than AUTH/HELLO/QUIT answer NOAUTH.
    required: bool,
    /// Neither authentication nor any rule can refuse a command.
    pub open: bool,
    epoch: u64,
}

impl Auth {
    /// True while the connection must authenticate before anything but
    /// AUTH, HELLO and the other no-auth commands runs.
    #[inline]
    pub(crate) fn required(&self) -> bool {
        self.required
    }

    /// A new connection's state: the default user.
    pub fn new(acl: &Acl) -> Auth {
        let epoch = acl.epoch.load(Ordering::Acquire);
        let user = acl.default_user();
        let authenticated = user.nopass && user.on;
        let mut a = Auth { user, authenticated, required: false, open: false, epoch };
        a.settle(authenticated);
        a
    }

    /// Redis's master client's state: a user no rule refuses,
    /// authenticated, and never refreshed from the ACL ([`fresh`] finds
    /// its epoch current: [`Auth::renew`]).
    pub fn superuser(acl: &Acl) -> Auth {
        let epoch = acl.epoch.load(Ordering::Acquire);
        let user = Arc::new(User::default_user());
        Auth { user, authenticated: true, required: false, open: true, epoch }
    }

    /// Keeps a [`Auth::superuser`] current (ACL changes are not its).
    pub fn renew(&mut self, acl: &Acl) {
        self.epoch = acl.epoch.load(Ordering::Acquire);
    }

    /// Recomputes `required` and `open`; `default_nopass` is the default
    /// user's state now.
    fn settle(&mut self, default_nopass: bool) {
        self.required = !self.authenticated && !default_nopass;
        self.open = !self.required && self.user.unrestricted();
    }

    pub fn user_name(&self) -> &[u8] {
        &self.user.name
    }
}

/// Brings the connection's cached user up to date with the server's
/// (one relaxed load when nothing changed). False when its user was
/// deleted: Redis closes such connections.
#[inline]
pub fn fresh(acl: &Acl, auth: &mut Auth) -> bool {
    // The common case inline: one load and a compare per read (out of
    // line, the function's prologue and epilogue cost ~50 instructions a
    // read: callgrind, unpipelined GET).
    acl.epoch.load(Ordering::Relaxed) == auth.epoch || refresh(acl, auth)
}

/// [`fresh`]'s slow path: a user changed; re-reads this connection's.
#[cold]
#[inline(never)]
fn refresh(acl: &Acl, auth: &mut Auth) -> bool {
    auth.epoch = acl.epoch.load(Ordering::Acquire);
    let users = acl.read();
    let Some(u) = users.get(&auth.user.name) else { return false };
    auth.user = Arc::clone(u);
    let nopass = users.get(&b"default"[..]).is_some_and(|d| d.nopass && d.on);
    drop(users);
    auth.settle(nopass);
    true
}

/// Authenticates the connection as `user` (Redis's
/// `ACLAuthenticateUser`): true on success; a failure is logged (ACL
/// LOG's reason `auth`, its object `command` as the client typed it).
fn authenticate(ctx: &mut Ctx<'_>, command: &[u8], user: &[u8], password: &[u8]) -> bool {
    let acl = &ctx.shared.acl;
    let Some(u) = acl.user(user).filter(|u| u.on && u.check_password(password)) else {
        let info = client_info(ctx);
        acl.log.add(acl_log::Reason::Auth, log_context(ctx), command, user, info);
        return false;
    };
    // CLIENT LIST's user= field.
    ctx.session.client.attrs().user = (u.name != b"default").then(|| u.name.clone());
    let auth = &mut ctx.session.auth;
    auth.user = u;
    auth.authenticated = true;
    auth.epoch = acl.epoch.load(Ordering::Acquire);
    auth.settle(acl.default_nopass());
    true
}

/// AUTH [user] password.
pub(crate) fn auth(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let (user, pass): (&[u8], &[u8]) = match args.len() {
        2 => {
            if ctx.shared.acl.default_nopass() {
                return push_error(out, amalgam_protocol::resp::err::AUTH_NO_PASSWORD.as_bytes());
            }
            (b"default", &args[1])
        }
        3 => (&args[1], &args[2]),
        _ => return push_error(out, amalgam_protocol::resp::err::SYNTAX.as_bytes()),
    };
    if authenticate(ctx, &args[0], user, pass) {
        push_simple(out, "OK");
    } else {
        push_error(out, amalgam_protocol::resp::err::WRONGPASS.as_bytes());
    }
}

/// HELLO's AUTH step (after its options parsed): Err is the error reply.
pub(crate) fn hello_auth(ctx: &mut Ctx<'_>, command: &[u8], creds: Option<(&[u8], &[u8])>) -> Result<(), &'static str> {
    if let Some((user, pass)) = creds {
        if !authenticate(ctx, command, user, pass) {
            return Err(amalgam_protocol::resp::err::WRONGPASS);
        }
    }
    if !ctx.session.auth.authenticated {
        return Err(HELLO_NOAUTH);
    }
    Ok(())
}

/// The check of a command a script calls (`resp/script.rs`): None if the
/// connection's user may run it, else Redis 7.0's words for the refusal
/// (`scriptCall`'s), the refusal logged in context `lua`.
pub(crate) fn script_denial(ctx: &mut Ctx<'_>, spec: &'static Spec, args: &[Arg<'_>]) -> Option<&'static str> {
    if ctx.session.auth.open {
        return None;
    }
    let sub = subcommand_of(spec, args);
    let own = sub.unwrap_or(spec);
    let denied = ctx.session.auth.user.check(own, catalog().id(spec, sub), args).err()?;
    let (reason, object, text): (_, &[u8], _) = match denied {
        Denied::Command => (
            acl_log::Reason::Command,
            own.name.as_bytes(),
            "ERR The user executing the script can't run this command or subcommand",
        ),
        Denied::Key(i) => (
            acl_log::Reason::Key,
            &args[i],
            "ERR The user executing the script can't access at least one of the keys mentioned in the command",
        ),
        Denied::Channel(i) => (
            acl_log::Reason::Channel,
            &args[i],
            "ERR The user executing the script can't publish to the channel mentioned in the command",
        ),
    };
    let info = client_info(ctx);
    ctx.shared.acl.log.add(reason, acl_log::Context::Lua, object, &ctx.session.auth.user.name, info);
    Some(text)
}

/// `redis.acl_check_cmd`: whether the connection's user may run `args`,
/// neither answered nor logged.
pub(crate) fn permits_quietly(ctx: &Ctx<'_>, spec: &'static Spec, args: &[Arg<'_>]) -> bool {
    if ctx.session.auth.open {
        return true;
    }
    let sub = subcommand_of(spec, args);
    ctx.session.auth.user.check(sub.unwrap_or(spec), catalog().id(spec, sub), args).is_ok()
}

/// Whether the connection's user may read every key with this command
/// (`User::reads_every_key`): SORT's BY and GET need it. `args` has its
/// keys in their stored forms; the rules see the names as written.
pub(crate) fn reads_every_key(ctx: &Ctx<'_>, spec: &'static Spec, args: &[Arg<'_>]) -> bool {
    if ctx.session.auth.open {
        return true;
    }
    let mut names: Vec<Arg<'_>> = args.iter().map(|a| Arg::Borrowed(&a[..])).collect();
    for (i, _) in table::keys_of(spec, args) {
        names[i] = Arg::Borrowed(amalgam_engine::namespace::split(&args[i]).1);
    }
    ctx.session.auth.user.reads_every_key(spec, catalog().id(spec, None), &names)
}

/// The subcommand row `args` name, if `spec` is a container.
fn subcommand_of(spec: &'static Spec, args: &[Arg<'_>]) -> Option<&'static Spec> {
    if spec.subcommands.is_empty() || args.len() < 2 {
        None
    } else {
        table::subcommand(spec, &args[1])
    }
}

/// Where a refusal happens, for the ACL log.
fn log_context(ctx: &Ctx<'_>) -> acl_log::Context {
    if ctx.session.multi.queuing() || ctx.session.multi.executing {
        acl_log::Context::Multi
    } else {
        acl_log::Context::Toplevel
    }
}

/// This connection's CLIENT LIST line, as the ACL log keeps it.
fn client_info(ctx: &Ctx<'_>) -> String {
    let mut line = String::new();
    super::client::line(&ctx.session.client, &mut line);
    if line.ends_with('\n') {
        line.pop();
    }
    line
}

/// The check before dispatch (see the module's notes): true when the
/// command was refused, its error answered and the refusal logged.
/// Called only when the connection is not `open`.
pub(crate) fn refused(ctx: &mut Ctx<'_>, spec: Option<&'static Spec>, args: &[Arg<'_>], out: &mut Vec<u8>) -> bool {
    // Unknown commands and wrong arities are answered by dispatch (or
    // MULTI's queueing) first, as in Redis.
    let Some(spec) = spec else { return false };
    if !super::arity_ok(spec.arity, args.len()) {
        return false;
    }
    let sub = if spec.subcommands.is_empty() || args.len() < 2 {
        None
    } else {
        match table::subcommand(spec, &args[1]) {
            Some(s) if super::arity_ok(s.arity, args.len()) => Some(s),
            // An unknown subcommand or its arity: answered by the handler.
            _ => return false,
        }
    };
    // AUTH, HELLO and QUIT: allowed before authenticating and to every
    // user, whatever its rules (Redis's ACLSelectorCheckCmd).
    if spec.flags.contains(&"no_auth") {
        return false;
    }
    let own = sub.unwrap_or(spec);
    let executing = ctx.session.multi.executing;
    let error = if ctx.session.auth.required {
        NOAUTH.to_string()
    } else {
        let denied = match ctx.session.auth.user.check(own, catalog().id(spec, sub), args) {
            Ok(()) => return false,
            Err(d) => d,
        };
        let (reason, object): (_, &[u8]) = match denied {
            Denied::Command => (acl_log::Reason::Command, own.name.as_bytes()),
            Denied::Key(i) => (acl_log::Reason::Key, &args[i]),
            Denied::Channel(i) => (acl_log::Reason::Channel, &args[i]),
        };
        if !executing {
            // Redis names the refused command in CLIENT LIST (EXEC's
            // queued commands leave `exec` there).
            let row = table::index_of(spec);
            let sub_index = sub.and_then(|s| spec.subcommands.iter().position(|x| std::ptr::eq(x, s)));
            ctx.session.client.set_last_cmd(row, sub_index);
        }
        let info = client_info(ctx);
        ctx.shared.acl.log.add(reason, log_context(ctx), object, &ctx.session.auth.user.name, info);
        match (executing, denied) {
            // Redis's execCommand: the rules changed since queueing.
            (true, d) => format!(
                "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: {}",
                match d {
                    Denied::Command => "no permission to execute the command or subcommand",
                    Denied::Key(_) => "no permission to touch the specified keys",
                    Denied::Channel(_) => "no permission to access one of the channels used as arguments",
                }
            ),
            (false, Denied::Command) => format!("NOPERM this user has no permissions to run the '{}' command", own.name),
            (false, Denied::Key(_)) => NOPERM_KEYS.to_string(),
            (false, Denied::Channel(_)) => NOPERM_CHANNELS.to_string(),
        }
    };
    if spec.cmd == Cmd::Exec {
        // Redis's execCommandAbort.
        multi::reset(&mut ctx.session.multi);
        push_error(out, format!("EXECABORT Transaction discarded because of: {error}").as_bytes());
    } else {
        multi::flag(&mut ctx.session.multi);
        push_error(out, error.as_bytes());
    }
    true
}

/// True if this connection's user may run `args` now: what lets a user
/// with rules keep the batched path (`resp.rs`: GETs, SETs and the
/// prefetched single-key commands) instead of running each command alone.
/// Only for commands without subcommands, which is what batches; a wrong
/// argument count, or a command refused here, runs alone, where
/// [`refused`] answers it (and ACL LOG records it). A connection that must
/// authenticate never batches.
pub(crate) fn permits(auth: &Auth, spec: Option<&'static Spec>, args: &[Arg<'_>]) -> bool {
    let Some(spec) = spec else { return false };
    !auth.required
        && spec.subcommands.is_empty()
        && super::arity_ok(spec.arity, args.len())
        && auth.user.check(spec, catalog().id(spec, None), args).is_ok()
}

/// ACL DRYRUN user command [arg ...]: Redis 7.0's answer to "may this
/// user run this?", the refusal as a bulk string.
fn dryrun(acl: &Acl, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let quoted = |before: &str, a: &[u8], after: &str| {
        let mut m = before.as_bytes().to_vec();
        m.extend_from_slice(a.split(|&b| b == 0).next().unwrap_or(b""));
        m.extend_from_slice(after.as_bytes());
        m
    };
    let Some(user) = acl.user(&args[2]) else {
        return push_error(out, &quoted("ERR User '", &args[2], "' not found"));
    };
    let cmd_args = &args[3..];
    // Redis's lookupCommand: a container with an argument names its
    // subcommand, and an unknown one is an unknown command.
    let spec = table::lookup(&cmd_args[0]);
    let sub = match spec {
        Some(s) if !s.subcommands.is_empty() && cmd_args.len() >= 2 => table::subcommand(s, &cmd_args[1]),
        _ => None,
    };
    let Some(spec) = spec.filter(|s| s.subcommands.is_empty() || cmd_args.len() < 2 || sub.is_some()) else {
        return push_error(out, &quoted("ERR Command '", &cmd_args[0], "' not found"));
    };
    let own = sub.unwrap_or(spec);
    if !super::arity_ok(own.arity, cmd_args.len()) {
        return push_error(out, format!("ERR wrong number of arguments for '{}' command", own.name).as_bytes());
    }
    let text = match user.check(own, catalog().id(spec, sub), cmd_args) {
        Ok(()) => return push_simple(out, "OK"),
        Err(Denied::Command) => format!("This user has no permissions to run the '{}' command", own.name).into_bytes(),
        Err(Denied::Key(i)) => quoted("This user has no permissions to access the '", &cmd_args[i], "' key"),
        Err(Denied::Channel(i)) => quoted("This user has no permissions to access the '", &cmd_args[i], "' channel"),
    };
    push_bulk(out, &text);
}

/// The ACL command.
pub(crate) fn run(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) -> After {
    let Some(name) = sub(Cmd::Acl, args, out) else { return After::Continue };
    let acl = &ctx.shared.acl;
    match name {
        "setuser" => {
            let user = &args[2];
            if user.iter().any(|&b| b == b' ' || b == 0) {
                push_error(out, b"ERR Usernames can't contain spaces or null characters");
            } else {
                let before = acl.user(user);
                match acl.setuser(user, &args[3..]) {
                    Ok(()) => {
                        if let (Some(old), Some(new)) = (before, acl.user(user)) {
                            kill_refused_subscribers(ctx.shared, &old, &new);
                        }
                        push_simple(out, "OK")
                    }
                    Err(e) => push_error(out, e.as_bytes()),
                }
            }
        }
        "getuser" => match acl.user(&args[2]) {
            None => push_null(out, ctx.proto()),
            Some(u) => getuser(&u, ctx.proto(), out),
        },
        "deluser" => {
            if args[2..].iter().any(|a| &a[..] == b"default") {
                push_error(out, b"ERR The 'default' user cannot be removed");
            } else {
                let mut users = acl.write();
                let gone: HashSet<Vec<u8>> =
                    args[2..].iter().filter(|a| users.remove(&a[..]).is_some()).map(|a| a.to_vec()).collect();
                drop(users);
                acl.changed();
                // Redis's ACLFreeUserAndKillClients: at once, not at their
                // next command (this connection: by `fresh` below).
                kill_clients(ctx, |name| name.is_some_and(|n| gone.contains(n)));
                push_int(out, gone.len() as i64);
            }
        }
        "list" => {
            let lines: Vec<String> = acl.read().values().map(|u| u.describe()).collect();
            push_array(out, lines.len());
            for l in lines {
                push_bulk(out, l.as_bytes());
            }
        }
        "users" => {
            let names: Vec<Vec<u8>> = acl.read().keys().cloned().collect();
            push_array(out, names.len());
            for n in names {
                push_bulk(out, &n);
            }
        }
        "whoami" => push_bulk(out, &ctx.session.auth.user.name),
        "cat" => cat(args, out),
        "genpass" => genpass(args, out),
        "save" => match acl.save() {
            Ok(()) => push_simple(out, "OK"),
            Err(e) => push_error(out, e.as_bytes()),
        },
        "load" => match acl.load() {
            Ok(()) => {
                // Redis 7.0 frees every user but `default` and their
                // clients with them, whether the file kept the user or
                // not (observed on 7.0.15); `default` is updated in
                // place, its clients kept.
                kill_clients(ctx, |name| name.is_some());
                push_simple(out, "OK");
                if ctx.session.auth.user.name != b"default" {
                    return After::Close;
                }
            }
            Err(e) => push_error(out, e.as_bytes()),
        },
        "log" => match args.get(2) {
            None => acl.log.reply(None, ctx.proto(), out),
            Some(_) if args.len() > 3 => {
                let mut m = b"ERR unknown subcommand or wrong number of arguments for '".to_vec();
                m.extend_from_slice(args[1].split(|&b| b == 0).next().unwrap_or(b""));
                m.extend_from_slice(b"'. Try ACL HELP.");
                push_error(out, &m);
            }
            Some(a) if is(a, "reset") => {
                acl.log.reset();
                push_simple(out, "OK");
            }
            Some(a) => match super::int_arg(a) {
                Some(n) => acl.log.reply(Some(n), ctx.proto(), out),
                None => push_error(out, amalgam_protocol::resp::err::NOT_INTEGER.as_bytes()),
            },
        },
        "dryrun" => dryrun(acl, args, out),
        _ => help(
            &[
                "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "CAT [<category>]",
                "    List all commands that belong to <category>, or all command categories",
                "    when no category is specified.",
                "DELUSER <username> [<username> ...]",
                "    Delete a list of users.",
                "DRYRUN <username> <command> [<arg> ...]",
                "    Returns whether the user can execute the given command without executing the command.",
                "GETUSER <username>",
                "    Get the user's details.",
                "GENPASS [<bits>]",
                "    Generate a secure 256-bit user password. The optional `bits` argument can",
                "    be used to specify a different size.",
                "LIST",
                "    Show users details in config file format.",
                "LOAD",
                "    Reload users from the ACL file.",
                "LOG [<count> | RESET]",
                "    Show the ACL log entries.",
                "SAVE",
                "    Save the current config to the ACL file.",
                "SETUSER <username> <attribute> [<attribute> ...]",
                "    Create or modify a user with the specified attributes.",
                "USERS",
                "    List all the registered usernames.",
                "WHOAMI",
                "    Return the current connection username.",
                "HELP",
                "    Prints this help.",
            ],
            out,
        ),
    }
    // This connection's own user may have changed (or gone).
    if !fresh(acl, &mut ctx.session.auth) {
        return After::Close;
    }
    After::Continue
}

/// Closes every other client whose user `matches` (by CLIENT LIST's
/// user name: None is `default`) through its worker's kill inbox. One
/// pass over the client registry.
fn kill_clients(ctx: &Ctx<'_>, matches: impl Fn(Option<&Vec<u8>>) -> bool) {
    let me = ctx.session.client.id;
    for c in ctx.shared.clients.snapshot() {
        if c.id != me && matches(c.attrs().user.as_ref()) {
            ctx.shared.clients.kill(&c);
        }
    }
}

/// Redis 7.0's ACLKillPubsubClientsIfNeeded: when `new` (the user after
/// ACL SETUSER) lost channels `old` had, closes each of the user's
/// clients holding a subscription the new channels refuse (a channel or
/// shard channel matching none of them, a pattern equal to none). Nothing
/// is walked when the user keeps all channels or every old pattern.
fn kill_refused_subscribers(shared: &crate::Shared, old: &User, new: &User) {
    let ((old_all, old_channels), (new_all, new_channels)) = (old.all_channels(), new.all_channels());
    if new_all || (!old_all && old_channels.iter().all(|c| new_channels.contains(c))) {
        return;
    }
    let name = (new.name != b"default").then_some(&new.name);
    let clients = shared.clients.snapshot();
    let of: HashSet<u64> = clients.iter().filter(|c| c.attrs().user.as_ref() == name).map(|c| c.id).collect();
    if of.is_empty() {
        return;
    }
    let refused = shared.pubsub.refused_subscribers(&of, |channel, is_pattern| {
        new_channels.iter().any(|p| if is_pattern { p[..] == channel[..] } else { matches(p, channel, false) })
    });
    for c in clients.iter().filter(|c| refused.contains(&c.id)) {
        shared.clients.kill(c);
    }
}

fn getuser(u: &User, proto: Proto, out: &mut Vec<u8>) {
    push_map(out, 6, proto);
    push_bulk(out, b"flags");
    let flags = u.flags();
    // A set in RESP3, as Redis's setDeferredSetLen.
    push_set(out, flags.len(), proto);
    for f in flags {
        push_bulk(out, f.as_bytes());
    }
    push_bulk(out, b"passwords");
    push_array(out, u.passwords.len());
    for h in &u.passwords {
        push_bulk(out, hex(h).as_bytes());
    }
    describe_selector(&u.root, out);
    push_bulk(out, b"selectors");
    push_array(out, u.selectors.len());
    for s in &u.selectors {
        push_map(out, 3, proto);
        describe_selector(s, out);
    }
}

/// ACL GETUSER's three fields of a selector (Redis's
/// `aclAddReplySelectorDescription`).
fn describe_selector(s: &Selector, out: &mut Vec<u8>) {
    push_bulk(out, b"commands");
    push_bulk(out, s.describe_commands().as_bytes());
    push_bulk(out, b"keys");
    push_bulk(out, s.describe_keys().as_bytes());
    push_bulk(out, b"channels");
    push_bulk(out, s.describe_channels(false).as_bytes());
}

/// ACL CAT [category].
fn cat(args: &[Arg<'_>], out: &mut Vec<u8>) {
    if args.len() == 2 {
        push_array(out, ACL_CATEGORIES.len());
        for c in ACL_CATEGORIES {
            push_bulk(out, c.as_bytes());
        }
        return;
    }
    let Some(c) = ACL_CATEGORIES.iter().position(|n| is(&args[2], n)) else {
        let mut m = b"ERR Unknown category '".to_vec();
        m.extend_from_slice(&args[2]);
        m.push(b'\'');
        return push_error(out, &m);
    };
    let cat = catalog();
    let names: Vec<&str> =
        (0..cat.specs.len()).filter(|&id| cat.cats[id] & (1 << c) != 0).map(|id| cat.specs[id].name).collect();
    push_array(out, names.len());
    for n in names {
        push_bulk(out, n.as_bytes());
    }
}

/// ACL GENPASS [bits]: random hex from the kernel's generator.
fn genpass(args: &[Arg<'_>], out: &mut Vec<u8>) {
    let bits = match args.get(2) {
        None => GENPASS_BITS_DEFAULT,
        Some(a) => match super::int_arg(a) {
            Some(n) if (1..=GENPASS_BITS_MAX).contains(&n) => n,
            _ => {
                return push_error(
                    out,
                    b"ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096",
                )
            }
        },
    };
    let chars = (bits as usize).div_ceil(4);
    let mut raw = vec![0u8; chars.div_ceil(2)];
    use std::io::Read;
    if std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut raw)).is_err() {
        return push_error(out, b"ERR cannot read /dev/urandom");
    }
    push_bulk(out, &hex(&raw).as_bytes()[..chars]);
}
