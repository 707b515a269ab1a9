//! memcached's ASCII authentication (`-Y FILE`, memcached 1.6's
//! `authfile.c` and `try_read_command_asciiauth`).
//!
//! The file holds `user:password` lines. A memcached-port connection
//! starts unauthenticated and may send only the authentication `set`:
//! `set <any key> <flags> <exptime> <bytes> [noreply]\r\n` followed by
//! `user password\r\n` as the data block (key, flags, exptime and
//! noreply are ignored; the reply is always sent). A right pair answers
//! `STORED` and the connection is served as usual from then on; a wrong
//! one `CLIENT_ERROR authentication failure`; a data block without a
//! space `CLIENT_ERROR bad authentication token format`, one not ending
//! in `\r\n` `CLIENT_ERROR bad command line termination`; and every other
//! line — any command, meta commands included —
//! `CLIENT_ERROR unauthenticated`. The connection stays open after each.
//! As in memcached, `-Y` turns the binary protocol off (its bytes are read
//! as text lines, so they answer `CLIENT_ERROR unauthenticated`), and
//! `stats` counts `auth_cmds` and `auth_errors`.
//!
//! Passwords are compared in constant time for a given length
//! ([`AuthFile::check`] compares every entry, never stopping early), and
//! never logged.
//!
//! Differences from memcached: memcached answers one unauthenticated line
//! per read and leaves the rest of a pipeline unread until more bytes
//! arrive; Amalgam answers each line. A data block declared larger than
//! [`AUTH_DATA_BYTES_MAX`] closes the connection (memcached waits for it).

use crate::Ctx;
use amalgam_commands::counters::bump;
use std::path::Path;

/// A line without `\n` past this closes the connection (memcached's 2048).
pub const AUTH_LINE_BYTES_MAX: usize = 2048;
/// The largest authentication data block: far above any `user password`
/// pair, far below the read buffer.
pub const AUTH_DATA_BYTES_MAX: usize = 64 << 10;
/// The largest auth file read at start-up (memcached reads any size; a
/// bound keeps a wrong path from filling memory).
pub const AUTH_FILE_BYTES_MAX: u64 = 16 << 20;

const UNAUTHENTICATED: &[u8] = b"CLIENT_ERROR unauthenticated\r\n";

/// The users of `-Y`.
#[derive(Debug)]
pub struct AuthFile {
    entries: Vec<(Vec<u8>, Vec<u8>)>,
}

impl AuthFile {
    /// Reads `user:password` lines; blank lines are skipped. Err says
    /// what to fix.
    pub fn load(path: &Path) -> Result<AuthFile, String> {
        let shown = path.display();
        let meta = std::fs::metadata(path).map_err(|e| format!("cannot read the auth file {shown} (-Y): {e}"))?;
        if meta.len() > AUTH_FILE_BYTES_MAX {
            return Err(format!("the auth file {shown} (-Y) is larger than {AUTH_FILE_BYTES_MAX} bytes"));
        }
        let text = std::fs::read(path).map_err(|e| format!("cannot read the auth file {shown} (-Y): {e}"))?;
        AuthFile::parse(&text, &shown.to_string())
    }

    /// Parses the file's text (`shown` names it in errors): `user:password`
    /// lines (the first `:` splits), `\r\n` or `\n`, blank lines skipped.
    /// Bounded by the text's lines. Fuzzed (`fuzz-server/fuzz_targets/authfile.rs`).
    pub fn parse(text: &[u8], shown: &str) -> Result<AuthFile, String> {
        let mut entries = Vec::new();
        for (n, line) in text.split(|&b| b == b'\n').enumerate() {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.is_empty() {
                continue;
            }
            let Some(colon) = line.iter().position(|&b| b == b':') else {
                return Err(format!("the auth file {shown} (-Y), line {}: expected user:password", n + 1));
            };
            entries.push((line[..colon].to_vec(), line[colon + 1..].to_vec()));
        }
        if entries.is_empty() {
            return Err(format!("the auth file {shown} (-Y) has no user:password line"));
        }
        Ok(AuthFile { entries })
    }

    /// True if `user` and `password` are one of the file's pairs.
    pub fn check(&self, user: &[u8], password: &[u8]) -> bool {
        self.entries.iter().fold(false, |ok, (u, p)| same(u, user) & same(p, password) | ok)
    }
}

/// Equality in time independent of where the bytes differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y));
    std::hint::black_box(diff) == 0
}

/// Serves an unauthenticated connection's `buf[*pos..]` until it
/// authenticates (then `*authed` is set and the caller goes on with the
/// rest) or the buffer runs out. Bounded by the lines the buffer holds.
pub fn process(ctx: &Ctx<'_>, buf: &[u8], pos: &mut usize, out: &mut Vec<u8>, close: &mut bool, authed: &mut bool) {
    let Some(file) = ctx.w.authfile else {
        *authed = true;
        return;
    };
    let counts = serve(file, buf, pos, out, close, authed);
    bump(&ctx.w.counters.auth_cmds, counts.cmds);
    bump(&ctx.w.counters.auth_errors, counts.errors);
}

/// What [`serve`] counted: authentication `set`s, and those refused.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub cmds: u64,
    pub errors: u64,
}

/// [`process`]'s parser and replies, without the server (fuzzed:
/// `fuzz-server/fuzz_targets/authfile.rs`). `*pos` only moves forward, past whole
/// lines and data blocks; `*close` is set for a line without `\n` longer
/// than [`AUTH_LINE_BYTES_MAX`] or a block over [`AUTH_DATA_BYTES_MAX`].
pub fn serve(
    file: &AuthFile,
    buf: &[u8],
    pos: &mut usize,
    out: &mut Vec<u8>,
    close: &mut bool,
    authed: &mut bool,
) -> Counts {
    let mut counts = Counts::default();
    while !*authed && *pos < buf.len() {
        let rest = &buf[*pos..];
        let Some(nl) = rest.iter().position(|&b| b == b'\n') else {
            if rest.len() > AUTH_LINE_BYTES_MAX {
                *close = true;
            }
            return counts;
        };
        let line = &rest[..nl];
        let tokens: Vec<&[u8]> = line.split(|&b| b == b' ').filter(|t| !t.is_empty()).collect();
        let size = tokens.get(4).and_then(|t| strtoul(t));
        let Some(size) = size.filter(|_| tokens.len() >= 5 && tokens[0] == b"set") else {
            *pos += nl + 1;
            out.extend_from_slice(UNAUTHENTICATED);
            continue;
        };
        let need = size.saturating_add(2);
        if need > AUTH_DATA_BYTES_MAX {
            *close = true;
            return counts;
        }
        if rest.len() < nl + 1 + need {
            return counts;
        }
        let data = &rest[nl + 1..nl + 1 + need];
        *pos += nl + 1 + need;
        counts.cmds += 1;
        if !data.ends_with(b"\r\n") {
            out.extend_from_slice(b"CLIENT_ERROR bad command line termination\r\n");
            continue;
        }
        let words: Vec<&[u8]> = data[..size].split(|&b| b == b' ').filter(|t| !t.is_empty()).collect();
        if words.len() < 2 {
            out.extend_from_slice(b"CLIENT_ERROR bad authentication token format\r\n");
            continue;
        }
        if file.check(words[0], words[1]) {
            out.extend_from_slice(b"STORED\r\n");
            *authed = true;
        } else {
            counts.errors += 1;
            out.extend_from_slice(b"CLIENT_ERROR authentication failure\r\n");
        }
    }
    counts
}

/// memcached's `safe_strtoul` on a token: decimal digits, then nothing
/// or whitespace (the line's `\r`).
fn strtoul(t: &[u8]) -> Option<usize> {
    let t = t.strip_suffix(b"\r").unwrap_or(t);
    if t.is_empty() || !t.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(t).ok()?.parse::<u32>().ok().map(|n| n as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_match_exactly() {
        let f = AuthFile { entries: vec![(b"alice".to_vec(), b"pw1".to_vec()), (b"bob".to_vec(), b"".to_vec())] };
        assert!(f.check(b"alice", b"pw1"));
        assert!(!f.check(b"alice", b"pw2") && !f.check(b"alice", b"pw") && !f.check(b"alic", b"pw1"));
        assert!(f.check(b"bob", b"") && !f.check(b"bob", b"x"));
    }

    #[test]
    fn sizes_parse_as_memcached() {
        assert_eq!(strtoul(b"9"), Some(9));
        assert_eq!(strtoul(b"9\r"), Some(9));
        assert_eq!(strtoul(b"x"), None);
        assert_eq!(strtoul(b"-1"), None);
        assert_eq!(strtoul(b""), None);
    }
}
