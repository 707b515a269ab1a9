//! MONITOR: every command any worker runs, as Redis prints it
//! (`replicationFeedMonitors`): `+<unix seconds>.<micros> [<db> <ip:port>]
//! "arg" "arg"…`, each argument quoted as `sdscatrepr` does. The fan-out,
//! its bound and the cost when nobody monitors are in `amalgam_net::clients`.
//! Commands with the `admin` flag are not shown, as in Redis; unknown
//! commands and arity errors are not either. Secrets (AUTH's and HELLO
//! AUTH's arguments) show as `"(redacted)"`, as in Redis.

use super::{Arg, Ctx};
use amalgam_protocol::resp::push_simple;
use std::io::Write as _;

/// Formats the command in `args` and queues it for every monitor.
pub(crate) fn feed(ctx: &Ctx<'_>, args: &[Arg<'_>]) {
    feed_as(ctx, args, &ctx.session.client.addr.to_string());
}

/// [`feed`] of a command a script called: Redis shows `lua` for the
/// client (`[0 lua]`).
pub(crate) fn feed_scripted(ctx: &Ctx<'_>, args: &[Arg<'_>]) {
    feed_as(ctx, args, "lua");
}

/// The line: the time, the session's database and who ran it, then the
/// arguments as they were written.
fn feed_as(ctx: &Ctx<'_>, args: &[Arg<'_>], who: &str) {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let mut line = Vec::with_capacity(64 + args.iter().map(|a| a.len() + 3).sum::<usize>());
    let _ = write!(line, "+{}.{:06} [{} {who}]", now.as_secs(), now.subsec_micros(), ctx.session.db);
    for (j, a) in args.iter().enumerate() {
        line.push(b' ');
        // Passwords never reach a monitor (Redis shows them so too).
        let shown: &[u8] = if super::cmdstats::is_secret(args, j) { super::cmdstats::REDACTED } else { a };
        repr(shown, &mut line);
    }
    line.extend_from_slice(b"\r\n");
    ctx.shared.clients.feed(&line);
}

/// Redis's `sdscatrepr`: a quoted string with C escapes.
fn repr(a: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &b in a {
        match b {
            b'\\' | b'"' => out.extend_from_slice(&[b'\\', b]),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            7 => out.extend_from_slice(b"\\a"),
            8 => out.extend_from_slice(b"\\b"),
            b' '..=b'~' => out.push(b),
            _ => {
                let _ = write!(out, "\\x{b:02x}");
            }
        }
    }
    out.push(b'"');
}

/// MONITOR: this connection starts receiving every command.
pub(crate) fn monitor(ctx: &mut Ctx<'_>, out: &mut Vec<u8>) {
    if ctx.session.monitor.is_none() {
        ctx.session.monitor = Some(ctx.shared.clients.monitor(&ctx.session.client));
    }
    push_simple(out, "OK");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_like_sdscatrepr() {
        let mut v = Vec::new();
        repr(b"a \"b\"\\\n\x01\xff", &mut v);
        assert_eq!(v, b"\"a \\\"b\\\"\\\\\\n\\x01\\xff\"");
    }
}
