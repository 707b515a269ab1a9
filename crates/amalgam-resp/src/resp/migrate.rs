//! MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE]
//! [AUTH password | AUTH2 username password] [KEYS key …]: keys moved
//! (or copied) into another server's database, Redis's or Amalgam's, as
//! Redis 7.0's `migrateCommand` does it: each key's DUMP payload and
//! remaining time to live sent as `RESTORE key ttl payload [REPLACE]`
//! after `AUTH`/`AUTH2` if given and `SELECT destination-db`, in one
//! write; the replies read in order; every key the target restored
//! deleted here unless COPY; the first error the target gave answered as
//! `ERR Target instance replied with error: …`, an I/O failure as
//! `IOERR error or timeout … target instance`, no existing key as
//! `NOKEY`.
//!
//! Differences from Redis (issue 35 §1):
//! * The connection is opened per MIGRATE and closed after (Redis keeps a
//!   socket per target for 10 s): one connect more per command.
//! * It blocks its worker for the connect and each read and write, each
//!   bounded by `timeout` (Redis blocks the whole server the same way);
//!   the worker's other clients wait meanwhile, the other workers go on.
//! * No key is held while it waits on the target (a multi-key command
//!   otherwise runs with its keys' buckets held, `multi.rs`): the keys
//!   are read one by one, not at one instant (inside MULTI/EXEC they are
//!   held, as every queued command's are), and a key written
//!   here between its DUMP and its DEL keeps the write's value here too
//!   (the DEL removes it): as in Redis, MIGRATE is meant for keys no one
//!   else writes.

use super::{int_arg, is, Arg, Ctx};
use amalgam_engine::{namespace, Expiry};
use amalgam_protocol::resp::{err, push_error, push_simple};
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// Redis's default when the timeout given is 0 or less (milliseconds).
const TIMEOUT_MS_DEFAULT: i64 = 1000;
/// The most bytes of replies read from the target per key (its replies
/// are `+OK` or an error line): bounds what a misbehaving target can
/// make this worker buffer.
const REPLY_BYTES_PER_KEY_MAX: usize = 64 << 10;

const ERR_KEYS_NEEDS_EMPTY: &str =
    "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string";
const ERR_CONNECT: &str = "IOERR error or timeout connecting to the client";
const ERR_WRITE: &str = "IOERR error or timeout writing to target instance";
const ERR_READ: &str = "IOERR error or timeout reading to target instance";

/// What the command line asked for.
struct Options<'a> {
    copy: bool,
    replace: bool,
    /// AUTH password, or AUTH2 username password.
    auth: Option<(Option<&'a [u8]>, &'a [u8])>,
    /// Where the keys start (args[3], or after KEYS).
    keys_at: usize,
}

fn options<'a>(args: &'a [Arg<'_>]) -> Result<Options<'a>, &'static str> {
    let mut o = Options { copy: false, replace: false, auth: None, keys_at: 3 };
    let mut j = 6;
    // Bounded: j advances at least once a round.
    while j < args.len() {
        let more = args.len() - j - 1;
        if is(&args[j], "copy") {
            o.copy = true;
        } else if is(&args[j], "replace") {
            o.replace = true;
        } else if is(&args[j], "auth") && more >= 1 {
            o.auth = Some((None, &args[j + 1]));
            j += 1;
        } else if is(&args[j], "auth2") && more >= 2 {
            o.auth = Some((Some(&args[j + 1]), &args[j + 2]));
            j += 2;
        } else if is(&args[j], "keys") {
            // The key argument is empty ("" in its database's stored form).
            if !namespace::split(&args[3]).1.is_empty() {
                return Err(ERR_KEYS_NEEDS_EMPTY);
            }
            o.keys_at = j + 1;
            break;
        } else {
            return Err(err::SYNTAX);
        }
        j += 1;
    }
    Ok(o)
}

/// MIGRATE; `args`' keys are in their stored forms (`in_database`).
pub(super) fn migrate(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let o = match options(args) {
        Ok(o) => o,
        Err(e) => return push_error(out, e.as_bytes()),
    };
    let (Some(timeout), Some(db)) = (int_arg(&args[5]), int_arg(&args[4])) else {
        return push_error(out, err::NOT_INTEGER.as_bytes());
    };
    let timeout = Duration::from_millis(if timeout <= 0 { TIMEOUT_MS_DEFAULT } else { timeout } as u64);
    let keys = if o.keys_at == 3 { &args[3..4] } else { &args[o.keys_at..] };
    // Each existing key's name, payload and time to live (0: none).
    let now = amalgam_commands::now_ms();
    let found: Vec<(&[u8], Vec<u8>, i64)> = keys
        .iter()
        .filter_map(|k| {
            let (payload, expiry) = amalgam_commands::dump::payload(&ctx.cx, k)?;
            let ttl = match expiry {
                Expiry::Never => 0,
                e => e.unix_millis().map_or(0, |at| (at as i64 - now).max(1)),
            };
            Some((&k[..], payload, ttl))
        })
        .collect();
    if found.is_empty() {
        return push_simple(out, "NOKEY");
    }
    let mut request = Vec::new();
    let mut expected = 1; // SELECT's reply
    if let Some((user, password)) = o.auth {
        match user {
            Some(u) => push_command(&mut request, &[b"AUTH", u, password]),
            None => push_command(&mut request, &[b"AUTH", password]),
        }
        expected += 1;
    }
    push_command(&mut request, &[b"SELECT", db.to_string().as_bytes()]);
    // A cluster node sends RESTORE-ASKING, which the target serves while
    // it imports the slot (Redis's migrateCommand).
    let restore: &[u8] = if ctx.shared.cluster.enabled() { b"RESTORE-ASKING" } else { b"RESTORE" };
    for (k, payload, ttl) in &found {
        let name = namespace::split(k).1;
        let ttl = ttl.to_string();
        if o.replace {
            push_command(&mut request, &[restore, name, ttl.as_bytes(), payload, b"REPLACE"]);
        } else {
            push_command(&mut request, &[restore, name, ttl.as_bytes(), payload]);
        }
    }
    let host = String::from_utf8_lossy(&args[1]).into_owned();
    let port = String::from_utf8_lossy(&args[2]).into_owned();
    let replies = match exchange(&host, &port, timeout, &request, expected + found.len()) {
        Ok(r) => r,
        Err(e) => return push_error(out, e.as_bytes()),
    };
    // AUTH's and SELECT's replies first: an error there moved nothing.
    if let Some(e) = replies[..expected].iter().find_map(|r| r.as_ref().err()) {
        return push_error(out, target_error(e).as_bytes());
    }
    let mut first_error = None;
    for ((k, _, _), r) in found.iter().zip(&replies[expected..]) {
        match r {
            Ok(()) if !o.copy => {
                if ctx.shared.store.delete(k).is_ok() {
                    // Redis's MIGRATE signals the source's deletion: `del`
                    // (keyspace notifications, CLIENT TRACKING).
                    ctx.cx.notify(amalgam_commands::notify::GENERIC, "del", k);
                }
            }
            Ok(()) => {}
            Err(e) => {
                first_error.get_or_insert_with(|| target_error(e));
            }
        }
    }
    match first_error {
        Some(e) => push_error(out, e.as_bytes()),
        None => push_simple(out, "OK"),
    }
}

/// Redis's wrapping of an error line the target sent.
fn target_error(line: &str) -> String {
    format!("ERR Target instance replied with error: {line}")
}

/// One command in RESP.
fn push_command(out: &mut Vec<u8>, parts: &[&[u8]]) {
    out.extend_from_slice(format!("*{}\r\n", parts.len()).as_bytes());
    for p in parts {
        out.extend_from_slice(format!("${}\r\n", p.len()).as_bytes());
        out.extend_from_slice(p);
        out.extend_from_slice(b"\r\n");
    }
}

/// Connects, writes `request`, reads `n` replies (each a status or an
/// error line: Ok, or the error's text without its `-`), each step
/// bounded by `timeout`.
fn exchange(
    host: &str,
    port: &str,
    timeout: Duration,
    request: &[u8],
    n: usize,
) -> Result<Vec<Result<(), String>>, &'static str> {
    let addr = format!("{host}:{port}");
    let target = addr.to_socket_addrs().ok().and_then(|mut a| a.next()).ok_or(ERR_CONNECT)?;
    let mut s = match TcpStream::connect_timeout(&target, timeout) {
        Ok(s) => s,
        // Redis connects without blocking and finds a refused connection
        // when it writes.
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => return Err(ERR_WRITE),
        Err(_) => return Err(ERR_CONNECT),
    };
    let _ = s.set_nodelay(true);
    s.set_write_timeout(Some(timeout)).map_err(|_| ERR_WRITE)?;
    s.set_read_timeout(Some(timeout)).map_err(|_| ERR_READ)?;
    s.write_all(request).map_err(|_| ERR_WRITE)?;
    let mut buf = Vec::new();
    let mut replies = Vec::with_capacity(n);
    let mut at = 0;
    let cap = n.saturating_mul(REPLY_BYTES_PER_KEY_MAX);
    let mut chunk = [0u8; 4096];
    // Bounded: each round either takes a reply off the buffer or reads
    // more, and the buffer is capped.
    while replies.len() < n {
        if let Some(end) = buf[at..].windows(2).position(|w| w == b"\r\n") {
            let line = &buf[at..at + end];
            replies.push(match line.first() {
                Some(b'-') => Err(String::from_utf8_lossy(&line[1..]).into_owned()),
                Some(b'+') => Ok(()),
                _ => Err(String::from_utf8_lossy(line).into_owned()),
            });
            at += end + 2;
            continue;
        }
        if buf.len() >= cap {
            return Err(ERR_READ);
        }
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return Err(ERR_READ),
            Ok(got) => buf.extend_from_slice(&chunk[..got]),
        }
    }
    Ok(replies)
}
