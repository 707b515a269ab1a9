//! memcached's meta protocol (`mn mg ms md ma me`): parse and compose.
//!
//! The text parser ([`crate::text::parse`]) hands a line whose command is
//! `m` plus one letter to [`parse`] here, which validates it exactly as
//! memcached 1.6's `process_m*_command` and `_meta_flag_preparse` do and
//! answers memcached's error strings. A valid request comes back as
//! [`crate::text::Request::Meta`], which borrows the line; the server turns
//! it into a [`MetaRequest`] with [`MetaRequest::from_line`] (cannot fail
//! on a line [`parse`] accepted) and composes the answer with the helpers
//! at the end of this module.
//!
//! Return flags are written in the order the request named them, as
//! memcached does.

use crate::text::{parse_i32, parse_strtoull, parse_u32, reply, Failure, Limits, Parse, Request, Unlink};
use crate::KEY_BYTES_MAX;

/// memcached's `MFLAG_MAX_OPT_LENGTH`: a meta command line may hold fewer
/// than this many tokens, counting the command, the key, every flag and
/// the tokenizer's terminal token.
pub const META_TOKENS_MAX: usize = 20;

/// Flag tokens a meta request can carry: [`META_TOKENS_MAX`] less the
/// command, the key and the terminal token.
pub const META_FLAGS_MAX: usize = META_TOKENS_MAX - 3;

/// memcached's `MFLAG_MAX_OPAQUE_LENGTH`: longest `O` token (with its `O`).
pub const OPAQUE_BYTES_MAX: usize = 32;

/// Longest base64 key accepted: memcached checks the key token's length
/// before decoding it.
pub const KEY_TOKEN_BYTES_MAX: usize = KEY_BYTES_MAX;

/// memcached's meta reply strings (without CRLF).
pub mod meta_reply {
    pub const DUPLICATE_FLAG: &str = "CLIENT_ERROR duplicate flag";
    pub const INVALID_FLAG: &str = "CLIENT_ERROR invalid flag";
    pub const INVALID_OR_DUPLICATE: &str = "CLIENT_ERROR invalid or duplicate flag";
    pub const BAD_TOKEN: &str = "CLIENT_ERROR bad token in command line format";
    pub const DECODE_KEY: &str = "CLIENT_ERROR error decoding key";
    pub const M_LENGTH: &str = "CLIENT_ERROR incorrect length for M token";
    pub const BAD_INITIAL: &str = "CLIENT_ERROR invalid numeric initial value";
    pub const BAD_DELTA: &str = "CLIENT_ERROR invalid numeric delta value";
    pub const OPAQUE_TOO_LONG: &str = "CLIENT_ERROR opaque token too long";
    pub const MG_FLAGS_TOO_LONG: &str = "CLIENT_ERROR options flags are too long";
    pub const FLAGS_TOO_LONG: &str = "CLIENT_ERROR options flags too long";
    pub const MS_BAD_MODE: &str = "CLIENT_ERROR invalid mode for ms M token";
    pub const MA_BAD_MODE: &str = "CLIENT_ERROR invalid mode for ma M token";
}

/// Which meta command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetaCmd {
    /// `mn`: no-op, answers `MN`.
    Noop,
    /// `mg`.
    Get,
    /// `ms`.
    Set,
    /// `md`.
    Delete,
    /// `ma`.
    Arith,
    /// `me`.
    Debug,
}

/// `ms`'s `M` mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetMode {
    Set,
    Add,
    Replace,
    Append,
    Prepend,
}

/// The flags of a meta request, as memcached's `_meta_flag_preparse`
/// reads them (every command accepts every known flag).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MetaFlags {
    /// `b`: the key token is base64.
    pub base64: bool,
    /// `q`: quiet (suppress the nominal answer).
    pub quiet: bool,
    /// `v`: return the value.
    pub value: bool,
    /// `u`: do not bump the item (no effect here: no LRU).
    pub no_update: bool,
    /// `T<ttl>`.
    pub ttl: Option<i64>,
    /// `N<ttl>`: vivify on miss with this TTL.
    pub vivify: Option<i64>,
    /// `R<ttl>`: win a recache token if the TTL remaining is below this.
    pub recache: Option<i64>,
    /// `F<flags>`.
    pub client_flags: u32,
    /// `C<cas>`.
    pub cas: Option<u64>,
    /// `M<mode>`: the mode character.
    pub mode: Option<u8>,
    /// `D<delta>` (default 1).
    pub delta: u64,
    /// `J<initial>` (default 0).
    pub initial: u64,
    /// `I`: invalidate (mark stale) instead of delete / allow a stale set.
    pub invalidate: bool,
}

/// A parsed meta request. The key is decoded (base64 with `b`).
#[derive(Clone, Copy, Debug)]
pub struct MetaRequest<'a> {
    pub cmd: MetaCmd,
    key_buf: [u8; KEY_BYTES_MAX],
    key_len: usize,
    tokens: [&'a [u8]; META_FLAGS_MAX],
    ntokens: usize,
    pub flags: MetaFlags,
}

impl<'a> MetaRequest<'a> {
    /// The (decoded) key.
    pub fn key(&self) -> &[u8] {
        &self.key_buf[..self.key_len]
    }

    /// The flag tokens in request order (for return flags).
    pub fn tokens(&self) -> &[&'a [u8]] {
        &self.tokens[..self.ntokens]
    }

    /// Rebuilds the request from a line [`parse`] accepted (as carried by
    /// [`Request::Meta`]). Returns None only for a line it did not accept.
    pub fn from_line(cmd: MetaCmd, line: &'a [u8]) -> Option<MetaRequest<'a>> {
        analyze(cmd, line).ok()
    }
}

/// An error found while analyzing a line, and whether the `ms` data block
/// must be swallowed.
#[derive(Debug)]
struct Refusal {
    reply: &'static str,
    /// Length of the data block to swallow (ms only, after vlen parsed).
    swallow: Option<usize>,
}

fn refuse(reply: &'static str) -> Refusal {
    Refusal { reply, swallow: None }
}

/// Splits on spaces like memcached's tokenizer; returns None if there are
/// more than `N` words.
fn words<const N: usize>(line: &[u8]) -> (usize, [&[u8]; N], bool) {
    let mut out = [&line[..0]; N];
    let mut n = 0;
    for w in line.split(|&b| b == b' ').filter(|w| !w.is_empty()) {
        if n == N {
            return (n, out, true);
        }
        out[n] = w;
        n += 1;
    }
    (n, out, false)
}

/// Words kept per line: enough to tell "too many" from "just right".
const WORDS_MAX: usize = META_TOKENS_MAX + 1;

/// Validates a meta command line (`line` starts with the command word).
fn analyze(cmd: MetaCmd, line: &[u8]) -> Result<MetaRequest<'_>, Refusal> {
    let (n, w, more) = words::<WORDS_MAX>(line);
    // memcached's ntokens counts the terminal token too.
    let ntokens = if more { usize::MAX } else { n + 1 };
    let empty = MetaRequest {
        cmd,
        key_buf: [0; KEY_BYTES_MAX],
        key_len: 0,
        tokens: [&line[..0]; META_FLAGS_MAX],
        ntokens: 0,
        flags: MetaFlags { delta: 1, ..MetaFlags::default() },
    };
    if cmd == MetaCmd::Noop {
        return Ok(empty);
    }
    if ntokens < 3 {
        return Err(refuse(if cmd == MetaCmd::Debug { reply::BAD_FORMAT } else { reply::ERROR }));
    }
    let key = w[1];
    if key.len() > KEY_TOKEN_BYTES_MAX {
        return Err(refuse(reply::BAD_FORMAT));
    }
    let mut r = empty;
    if cmd == MetaCmd::Debug {
        // `me <key> [b]`: only an exact `b` third token decodes.
        r.key_len = key.len();
        r.key_buf[..key.len()].copy_from_slice(key);
        if n >= 3 && w[2] == b"b" {
            r.key_len = base64_decode(key, &mut r.key_buf).ok_or(refuse(reply::BAD_FORMAT))?;
            r.flags.base64 = true;
        }
        return Ok(r);
    }
    let mut first_flag = 2;
    let mut swallow = None;
    if cmd == MetaCmd::Set {
        if ntokens == 3 {
            return Err(refuse(reply::BAD_FORMAT));
        }
        if ntokens > META_TOKENS_MAX {
            return Err(refuse(meta_reply::FLAGS_TOO_LONG));
        }
        let vlen = parse_i32(w[2]).ok_or(refuse(reply::BAD_FORMAT))?;
        if vlen < 0 || vlen > i64::from(i32::MAX) - 2 {
            return Err(refuse(reply::BAD_FORMAT));
        }
        swallow = Some(vlen as usize);
        first_flag = 3;
    } else if ntokens > META_TOKENS_MAX {
        let msg = if cmd == MetaCmd::Get { meta_reply::MG_FLAGS_TOO_LONG } else { meta_reply::FLAGS_TOO_LONG };
        return Err(refuse(msg));
    }
    let flag_words = &w[first_flag..n];
    let bad = |reply: &'static str| Refusal { reply, swallow };
    // md and ma answer one string for every preparse failure.
    let preparse_err = |reply: &'static str| match cmd {
        MetaCmd::Delete | MetaCmd::Arith => bad(meta_reply::INVALID_OR_DUPLICATE),
        _ => bad(reply),
    };
    let mut seen = [false; 128];
    let mut err: Option<&'static str> = None;
    r.key_len = key.len();
    r.key_buf[..key.len()].copy_from_slice(key);
    for t in flag_words {
        let o = t[0];
        if o >= 127 || seen[usize::from(o)] {
            return Err(preparse_err(meta_reply::DUPLICATE_FLAG));
        }
        seen[usize::from(o)] = true;
        let arg = &t[1..];
        let f = &mut r.flags;
        match o {
            b'b' => {
                f.base64 = true;
                match base64_decode(key, &mut r.key_buf) {
                    Some(len) => r.key_len = len,
                    None => {
                        r.key_len = 0;
                        err = Some(meta_reply::DECODE_KEY);
                    }
                }
            }
            b'N' | b'T' | b'R' => match parse_i32(arg) {
                Some(v) => match o {
                    b'N' => f.vivify = Some(v),
                    b'T' => f.ttl = Some(v),
                    _ => f.recache = Some(v),
                },
                None => err = Some(meta_reply::BAD_TOKEN),
            },
            b'l' | b'h' | b'O' | b'P' | b'L' | b'k' | b's' | b't' | b'c' | b'f' => {}
            b'v' => f.value = true,
            b'u' => f.no_update = true,
            b'q' => f.quiet = true,
            b'F' => match parse_u32(arg) {
                Some(v) => f.client_flags = v,
                None => err = Some(err.unwrap_or(reply::BAD_FORMAT)),
            },
            b'C' => match parse_strtoull(arg) {
                Some(v) => f.cas = Some(v),
                None => err = Some(meta_reply::BAD_TOKEN),
            },
            b'M' => {
                if t.len() != 2 {
                    err = Some(meta_reply::M_LENGTH);
                } else {
                    f.mode = Some(t[1]);
                }
            }
            b'J' => match parse_strtoull(arg) {
                Some(v) => f.initial = v,
                None => err = Some(meta_reply::BAD_INITIAL),
            },
            b'D' => match parse_strtoull(arg) {
                Some(v) => f.delta = v,
                None => err = Some(meta_reply::BAD_DELTA),
            },
            b'I' => f.invalidate = true,
            _ => return Err(preparse_err(meta_reply::INVALID_FLAG)),
        }
    }
    if let Some(e) = err {
        return Err(preparse_err(e));
    }
    let opaque_too_long = flag_words.iter().any(|t| t[0] == b'O' && t.len() > OPAQUE_BYTES_MAX);
    match cmd {
        MetaCmd::Set if !matches!(r.flags.mode, None | Some(b'E' | b'A' | b'P' | b'R' | b'S')) => {
            return Err(bad(meta_reply::MS_BAD_MODE));
        }
        MetaCmd::Arith if !matches!(r.flags.mode, None | Some(b'I' | b'+' | b'D' | b'-')) => {
            return Err(bad(meta_reply::MA_BAD_MODE));
        }
        _ => {}
    }
    if opaque_too_long {
        return Err(bad(meta_reply::OPAQUE_TOO_LONG));
    }
    r.ntokens = flag_words.len();
    r.tokens[..flag_words.len()].copy_from_slice(flag_words);
    Ok(r)
}

impl MetaRequest<'_> {
    /// `ms`'s mode.
    pub fn set_mode(&self) -> SetMode {
        match self.flags.mode {
            Some(b'E') => SetMode::Add,
            Some(b'A') => SetMode::Append,
            Some(b'P') => SetMode::Prepend,
            Some(b'R') => SetMode::Replace,
            _ => SetMode::Set,
        }
    }

    /// `ma`'s mode: true for increment.
    pub fn incr(&self) -> bool {
        !matches!(self.flags.mode, Some(b'D' | b'-'))
    }
}

/// Parses the meta command at the front of `buf`: `cmd` is the command
/// word's second letter, `line` the command line (without CRLF, from the
/// command word on), `consumed` the bytes through the line's newline.
pub fn parse<'a>(letter: u8, line: &'a [u8], buf: &'a [u8], consumed: usize, limits: Limits) -> Parse<'a> {
    let cmd = match letter {
        b'n' => MetaCmd::Noop,
        b'g' => MetaCmd::Get,
        b's' => MetaCmd::Set,
        b'd' => MetaCmd::Delete,
        b'a' => MetaCmd::Arith,
        b'e' => MetaCmd::Debug,
        _ => return fail(reply::ERROR, consumed, 0),
    };
    match analyze(cmd, line) {
        Err(r) => fail(r.reply, consumed, r.swallow.map_or(0, |v| v + 2)),
        Ok(req) => {
            if cmd != MetaCmd::Set {
                return Parse::Done(Request::Meta { cmd, line, data: &buf[..0] }, consumed);
            }
            let (_, w, _) = words::<3>(line);
            // analyze accepted the length.
            let vlen = parse_i32(w[2]).unwrap_or(0).max(0) as usize;
            if vlen > limits.value_bytes_max {
                // memcached unlinks the key whatever the mode; a base64 key
                // is unlinked decoded, as memcached decodes it in place.
                let start = w[1].as_ptr() as usize - buf.as_ptr() as usize;
                let unlink = Unlink { start, end: start + w[1].len(), base64: req.flags.base64 };
                return Parse::Fail(Failure {
                    reply: Some(reply::TOO_LARGE),
                    noreply: false,
                    consumed,
                    swallow: vlen + 2,
                    close: false,
                    unlink: Some(unlink),
                });
            }
            let end = consumed + vlen + 2;
            if buf.len() < end {
                return Parse::Incomplete;
            }
            if &buf[end - 2..end] != b"\r\n" {
                return fail(reply::BAD_CHUNK, end, 0);
            }
            Parse::Done(Request::Meta { cmd, line, data: &buf[consumed..end - 2] }, end)
        }
    }
}

fn fail(reply: &'static str, consumed: usize, swallow: usize) -> Parse<'static> {
    Parse::Fail(Failure { reply: Some(reply), noreply: false, consumed, swallow, close: false, unlink: None })
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn b64_value(c: u8) -> Option<u32> {
    match c {
        b'A'..=b'Z' => Some(u32::from(c - b'A')),
        b'a'..=b'z' => Some(u32::from(c - b'a') + 26),
        b'0'..=b'9' => Some(u32::from(c - b'0') + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

/// Base64 into `out` as memcached 1.6 decodes it (its `base64.c`): bytes
/// outside the alphabet are skipped; the alphabet characters and `=` must
/// count a non-zero multiple of 4; `=` counts as a zero digit, and the
/// first 4-character block holding any `=` ends the decoding, dropping one
/// output byte per `=` (three or more `=` in it is malformed). None where
/// memcached's returns 0: malformed, empty, or too long for `out`.
pub fn base64_decode(src: &[u8], out: &mut [u8]) -> Option<usize> {
    let digit = |c: u8| if c == b'=' { Some(0) } else { b64_value(c) };
    let count = src.iter().filter(|&&c| digit(c).is_some()).count();
    if count == 0 || count % 4 != 0 || count / 4 * 3 > out.len() {
        return None;
    }
    let (mut n, mut block, mut filled, mut pad) = (0usize, 0u32, 0, 0);
    for &c in src {
        let Some(v) = digit(c) else { continue };
        pad += usize::from(c == b'=');
        block = block << 6 | v;
        filled += 1;
        if filled == 4 {
            out[n..n + 3].copy_from_slice(&[(block >> 16) as u8, (block >> 8) as u8, block as u8]);
            n += 3;
            (block, filled) = (0, 0);
            if pad > 0 {
                if pad > 2 {
                    return None;
                }
                n -= pad;
                break;
            }
        }
    }
    (n > 0).then_some(n)
}

/// Appends the standard base64 encoding of `src`.
pub fn base64_encode(src: &[u8], out: &mut Vec<u8>) {
    for chunk in src.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let v = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(B64[(v >> (18 - 6 * i) & 63) as usize]);
            } else {
                out.push(b'=');
            }
        }
    }
}

/// Appends ` k<key>` (base64 and ` b` when the request used `b`):
/// memcached's `META_KEY`.
pub fn push_key_flag(out: &mut Vec<u8>, key: &[u8], binary: bool) {
    out.extend_from_slice(b" k");
    if binary {
        base64_encode(key, out);
        out.extend_from_slice(b" b");
    } else {
        out.extend_from_slice(key);
    }
}

/// Appends the ` O...` and ` k...` return flags in request order: what
/// every miss / failure answer carries.
pub fn push_opaque_and_key(out: &mut Vec<u8>, req: &MetaRequest<'_>) {
    for t in req.tokens() {
        match t[0] {
            b'O' => {
                out.push(b' ');
                out.extend_from_slice(t);
            }
            b'k' => push_key_flag(out, req.key(), req.flags.base64),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::parse as text_parse;

    const L: Limits = Limits { value_bytes_max: 1 << 20 };

    fn meta(input: &[u8]) -> (MetaCmd, Vec<u8>, Vec<u8>, usize) {
        match text_parse(input, L) {
            Parse::Done(Request::Meta { cmd, line, data }, n) => (cmd, line.to_vec(), data.to_vec(), n),
            other => panic!("{:?} -> {other:?}", String::from_utf8_lossy(input)),
        }
    }

    fn err(input: &[u8]) -> Failure {
        match text_parse(input, L) {
            Parse::Fail(f) => f,
            other => panic!("{:?} -> {other:?}", String::from_utf8_lossy(input)),
        }
    }

    #[test]
    fn commands_and_flags() {
        let (cmd, line, _, n) = meta(b"mg foo v k s O123 T10\r\n");
        assert_eq!((cmd, n), (MetaCmd::Get, 23));
        let r = MetaRequest::from_line(cmd, &line).unwrap();
        assert_eq!(r.key(), b"foo");
        assert!(r.flags.value);
        assert_eq!(r.flags.ttl, Some(10));
        assert_eq!(r.tokens().len(), 5);
        assert_eq!(meta(b"mn\r\n").0, MetaCmd::Noop);
        let (cmd, line, data, n) = meta(b"ms k 2 F5 MA\r\nhi\r\nmn\r\n");
        assert_eq!((cmd, data.as_slice(), n), (MetaCmd::Set, &b"hi"[..], 18));
        let r = MetaRequest::from_line(cmd, &line).unwrap();
        assert_eq!((r.flags.client_flags, r.set_mode()), (5, SetMode::Append));
        assert_eq!(text_parse(b"ms k 2\r\nh", L), Parse::Incomplete);
        let (cmd, line, _, _) = meta(b"ma k MD D5 J2 N0\r\n");
        let r = MetaRequest::from_line(cmd, &line).unwrap();
        assert!(!r.incr());
        assert_eq!((r.flags.delta, r.flags.initial, r.flags.vivify), (5, 2, Some(0)));
    }

    #[test]
    fn errors_are_memcacheds() {
        assert_eq!(err(b"mg\r\n").reply, Some(reply::ERROR));
        assert_eq!(err(b"mx k\r\n").reply, Some(reply::ERROR));
        assert_eq!(err(b"mg foo E5\r\n").reply, Some(meta_reply::INVALID_FLAG));
        assert_eq!(err(b"md foo x\r\n").reply, Some(meta_reply::INVALID_OR_DUPLICATE));
        assert_eq!(err(b"mg foo v v\r\n").reply, Some(meta_reply::DUPLICATE_FLAG));
        assert_eq!(err(b"mg foo Tx\r\n").reply, Some(meta_reply::BAD_TOKEN));
        assert_eq!(err(b"mg Zm9v= b\r\n").reply, Some(meta_reply::DECODE_KEY));
        let long_o = [b"mg foo O".as_slice(), &[b'1'; 32], b"\r\n"].concat();
        assert_eq!(err(&long_o).reply, Some(meta_reply::OPAQUE_TOO_LONG));
        let many = [b"mg k".as_slice(), b" a b c d e f g h i j k l m n o p q r", b"\r\n"].concat();
        assert_eq!(err(&many).reply, Some(meta_reply::MG_FLAGS_TOO_LONG));
        let f = err(b"ms foo 2 MX\r\nhi\r\n");
        assert_eq!((f.reply, f.swallow), (Some(meta_reply::MS_BAD_MODE), 4));
        let f = err(b"ms foo 2 F\r\nhi\r\n");
        assert_eq!((f.reply, f.swallow), (Some(reply::BAD_FORMAT), 4));
        let f = err(b"ms foo\r\n");
        assert_eq!((f.reply, f.swallow), (Some(reply::BAD_FORMAT), 0));
        let f = err(b"ms foo 2 c\r\nhix\r\n");
        assert_eq!((f.reply, f.consumed), (Some(reply::BAD_CHUNK), 16));
        let f = err(b"ms foo 2000000\r\n");
        let unlink = Unlink { start: 3, end: 6, base64: false };
        assert_eq!((f.reply, f.swallow, f.unlink), (Some(reply::TOO_LARGE), 2_000_002, Some(unlink)));
        // A base64 key is unlinked decoded, whatever the mode.
        let req = b"ms Zm9v 2000000 b MA\r\n";
        let f = err(req);
        assert_eq!(f.unlink, Some(Unlink { start: 3, end: 7, base64: true }));
        let mut scratch = [0; KEY_BYTES_MAX];
        assert_eq!(f.unlink.and_then(|u| u.key(req, &mut scratch)), Some(&b"foo"[..]));
        assert_eq!(err(b"ma k MX\r\n").reply, Some(meta_reply::MA_BAD_MODE));
        assert_eq!(err(b"ma k Dx\r\n").reply, Some(meta_reply::INVALID_OR_DUPLICATE));
        assert_eq!(err(b"me\r\n").reply, Some(reply::BAD_FORMAT));
    }

    #[test]
    fn base64_roundtrip() {
        let mut buf = [0u8; KEY_BYTES_MAX];
        assert_eq!(base64_decode(b"Zm9v", &mut buf), Some(3));
        assert_eq!(&buf[..3], b"foo");
        assert_eq!(base64_decode(b"Zm8=", &mut buf), Some(2));
        assert_eq!(base64_decode(b"Zm9v=", &mut buf), None);
        assert_eq!(base64_decode(b"@@@@", &mut buf), None);
        assert_eq!(base64_decode(b"", &mut buf), None);
        // memcached's decoder skips bytes outside the alphabet and stops
        // after the first block with padding.
        assert_eq!(base64_decode(b"Zm_9v", &mut buf), Some(3));
        assert_eq!(&buf[..3], b"foo");
        assert_eq!(base64_decode(b"t1241_5_me", &mut buf), Some(6));
        assert_eq!(base64_decode(b"t12345_5_me", &mut buf), None);
        assert_eq!(base64_decode(b"Zm8=Zm9v", &mut buf), Some(2));
        assert_eq!(base64_decode(b"Z===", &mut buf), None);
        for n in 0..10usize {
            let src: Vec<u8> = (0..n as u8).map(|b| b.wrapping_mul(37)).collect();
            let mut enc = Vec::new();
            base64_encode(&src, &mut enc);
            if n > 0 {
                assert_eq!(base64_decode(&enc, &mut buf), Some(n));
                assert_eq!(&buf[..n], &src[..]);
            }
        }
    }

    #[test]
    fn random_meta_lines_never_panic() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            let mut buf = b"m".to_vec();
            for _ in 0..(x % 48) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let alphabet = b"gsdaneb k vqO1T-NRFCMJDI0Zm9=\r\n ";
                buf.push(alphabet[(x % alphabet.len() as u64) as usize]);
            }
            if let Parse::Done(Request::Meta { cmd, line, .. }, _) = text_parse(&buf, L) {
                assert!(MetaRequest::from_line(cmd, line).is_some());
            }
        }
    }
}
