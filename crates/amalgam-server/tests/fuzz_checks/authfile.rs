//! The invariants of memcached's ASCII authentication (`-Y`,
//! amalgam-server's authfile.rs): the input is an auth file's text, a NUL,
//! then what an unauthenticated client sends. The file's parser never
//! panics; with a file it accepts, the connection's bytes are served as
//! the worker serves them — whole, and again as they might arrive in
//! reads — and:
//! * the read position only moves forward and stays within the buffer;
//! * every reply is one of memcached's lines for this state;
//! * authentication succeeds only with a `user password` pair of the
//!   file, and then the last reply is `STORED`;
//! * unless a bound closed the connection, reads split anywhere give the
//!   same replies and the same outcome as the whole stream.
//!
//! Shared by the libFuzzer target (fuzz-server/fuzz_targets/authfile.rs)
//! and the fuzz smoke test (tests/fuzz_smoke.rs).
use amalgam_memcache::authfile::{serve, AuthFile};

/// The replies an unauthenticated connection may get.
const REPLIES: [&[u8]; 5] = [
    b"STORED\r\n",
    b"CLIENT_ERROR unauthenticated\r\n",
    b"CLIENT_ERROR authentication failure\r\n",
    b"CLIENT_ERROR bad authentication token format\r\n",
    b"CLIENT_ERROR bad command line termination\r\n",
];

/// Serves `stream` as reads ending at `cuts` (then the rest): (replies,
/// authenticated, closed).
fn run(file: &AuthFile, stream: &[u8], cuts: &[usize]) -> (Vec<u8>, bool, bool) {
    let (mut out, mut pos, mut close, mut authed) = (Vec::new(), 0, false, false);
    for &end in cuts.iter().chain(std::iter::once(&stream.len())) {
        let buf = &stream[..end.min(stream.len())];
        if pos > buf.len() {
            continue;
        }
        let before = pos;
        serve(file, buf, &mut pos, &mut out, &mut close, &mut authed);
        assert!(pos >= before && pos <= buf.len(), "position {before} -> {pos} of {}", buf.len());
        if close || authed {
            break;
        }
    }
    (out, authed, close)
}

/// Checks one input (module notes).
pub fn check(data: &[u8]) {
    let split = data.iter().position(|&b| b == 0).unwrap_or(data.len());
    let Ok(file) = AuthFile::parse(&data[..split], "fuzz") else { return };
    let stream = data.get(split + 1..).unwrap_or(&[]);
    let (whole, authed, closed) = run(&file, stream, &[]);
    let mut rest = &whole[..];
    let mut last: &[u8] = b"";
    while !rest.is_empty() {
        let r = REPLIES.iter().find(|r| rest.starts_with(r)).unwrap_or_else(|| panic!("unknown reply {rest:?}"));
        last = r;
        rest = &rest[r.len()..];
    }
    assert_eq!(authed, last == b"STORED\r\n", "authenticated iff the last reply is STORED");
    let cuts: Vec<usize> = (1..stream.len()).step_by(1 + stream.len() / 7).collect();
    let (split_out, split_authed, split_closed) = run(&file, stream, &cuts);
    if !closed && !split_closed {
        assert_eq!(split_out, whole, "reads split at {cuts:?}");
        assert_eq!(split_authed, authed);
    }
}
