//! Large values received in place (issue 18): a SET whose value is at
//! least [`IN_PLACE_VALUE_BYTES_MIN`] long is received straight into its
//! item, over as many of its connection's turns as the bytes take, and
//! stored without a copy.
//!
//! # Why
//! Before, a 512 MB value was read into the connection's read buffer
//! (sized to the request: `worker.rs`, `Conn::fill`) and then copied into
//! its item in one memcpy: some 100 ms or more in which the worker served
//! none of its other connections, and a second 512 MB of memory until the
//! buffer was freed.
//!
//! # How it works
//! * **When.** The worker's read finds the request at the front of the
//!   read buffer inside a value at least [`IN_PLACE_VALUE_BYTES_MIN`] long
//!   (RESP: `Parser::pending_bulk`; memcached: the command line), and the
//!   request is one that stores that value whole as the key's item: RESP's
//!   `SET key value [options]` (the value is its third element) on a
//!   connection where the SET will run at once and alone
//!   (`resp::may_receive_in_place`), memcached's `set`, `add`, `replace`
//!   and `cas`. Anything else (APPEND, MULTI, a SET with the value
//!   elsewhere, memcached's `ms`, append and prepend) reads the value into
//!   the buffer as before.
//! * **Storage.** The engine allocates the item ([`Store::prepare`]):
//!   charged to the memory budget from that moment (cache mode evicts for
//!   it as for any write). The value's bytes already in the read buffer
//!   are copied into it (at most the buffer's size), and the read buffer
//!   keeps only the request's front, the value *rewritten as empty*: RESP
//!   `$0\r\n` in place of the value's header, memcached the command line
//!   with its length word `0`.
//! * **Receiving.** Each read of the connection (`Conn::fill`) then goes
//!   into the item's next [`READ_BYTES_PER_ROUND_MAX`] bytes instead of
//!   the buffer: a turn of the connection receives at most
//!   [`IN_PLACE_BYTES_PER_TURN_MAX`] and the worker serves its other
//!   connections between turns. Nothing is
//!   published meanwhile: other clients see the key as it was.
//! * **Storing.** With the last byte in, the bytes that follow the value
//!   (its CRLF, RESP's options) arrive in the read buffer after the
//!   rewritten front, and the request parses as one with an empty value.
//!   RESP: the value waits in the session (`Session::prepared`) and the
//!   SET handler, which runs that request alone, publishes it
//!   (`Store::put_prepared`) with the options' decision (NX, XX, GET,
//!   KEEPTTL, the expiry); memcached: [`crate::exec::run_prepared`]. The
//!   command's checks, replies and statistics are the usual ones.
//! * **Ending early.** A client that disconnects mid-value, or a command
//!   refused before it stores (a syntax error in the options, NOAUTH …),
//!   drops the value: its memory and its charge go at once, and the key
//!   was never touched.
//!
//! # Limits
//! * A value still has one copy made of it: the one the kernel makes
//!   from the socket (`read`). The engine zeroes each stretch before it is
//!   read into (`Prepared::unfilled`: a write, no copy).
//! * With persistence, or while replicas are fed (the stream shares the
//!   staged value: persist `repl.rs`, "Large records in the backlog"),
//!   each read's bytes are copied into the value's log
//!   record too (`amalgam_commands::received`, persist `staged.rs`), a read's worth at a
//!   time between the worker's other connections, so that storing the
//!   value does not copy all of it into the log at once under its bucket
//!   lock; the record's write is the committer thread's (persist `log.rs`
//!   § Large records). A GET still copies the value into the reply
//!   buffer, as Redis does (docs/bench-log/2026-11-26-large-values.md §
//!   Persistence and GET of a large value).
//! * The RESP value argument shows as empty where a command's arguments
//!   are shown (SLOWLOG); MONITOR turns the path off while attached.

use crate::Shared;
use amalgam_engine::{Expiry, Store};
pub use amalgam_net::turn::{IN_PLACE_BYTES_PER_TURN_MAX, IN_PLACE_VALUE_BYTES_MIN};
pub use amalgam_persist::received::{Receiving, Started};
use amalgam_protocol::resp::Parser;
use amalgam_protocol::text::{self, Parse, Request, StoreOp};
use amalgam_protocol::LINE_BYTES_MAX;

/// Words of a memcached storage line (`cas key flags exptime bytes unique
/// noreply`).
const STORE_LINE_WORDS_MAX: usize = 7;

/// Digits of the longest length memcached accepts (`INT_MAX - 2`).
const LENGTH_DIGITS_MAX: usize = 10;

/// RESP: the request at the front of `pending` (its parser stopped
/// inside a bulk string) as a SET value to receive in place, if it is one.
pub fn start_resp(shared: &Shared, session: &mut crate::resp::Session, pending: &[u8]) -> Option<Started> {
    let b = session.parser.pending_bulk()?;
    if b.index != 2 || b.len < IN_PLACE_VALUE_BYTES_MIN {
        return None;
    }
    let name = session.parser.element(pending, 0)?;
    let is_set = crate::resp::table::lookup(name).is_some_and(|s| matches!(s.cmd, crate::resp::table::Cmd::Set));
    if !is_set || !crate::resp::may_receive_in_place(shared, session) {
        return None;
    }
    let key = session.parser.element(pending, 1)?;
    // A key not stored as written (another database, or a name beginning
    // with the escape byte) takes the ordinary path, which encodes it.
    if key.first() == Some(&amalgam_engine::namespace::NS_ESCAPE) {
        return None;
    }
    let store: &Store = &shared.store;
    let limits = shared.resp_limits();
    let value =
        store.with_value_bytes_max(limits.bulk_bytes_max, || store.prepare(key, b.len, 0, Expiry::Never)).ok()?;
    let mut value = Receiving::new(value, journaled(shared));
    let body = pending.get(b.body_at..)?;
    let took = value.extend_from(body);
    let mut front = Vec::with_capacity(b.header_at + 4 + body.len() - took);
    front.extend_from_slice(&pending[..b.header_at]);
    front.extend_from_slice(b"$0\r\n");
    front.extend_from_slice(&body[took..]);
    // The front is parsed again from its start.
    session.parser = Parser::new();
    Some(Started { value, front })
}

/// memcached: the request at the front of `pending` (a storage command
/// whose data block has not all arrived) as a value to receive in place,
/// if it is a set, add, replace or cas whose line is valid.
pub fn start_memcached(shared: &Shared, limits: text::Limits, pending: &[u8]) -> Option<Started> {
    let head = &pending[..pending.len().min(LINE_BYTES_MAX)];
    let nl = head.iter().position(|&b| b == b'\n')?;
    let line = head[..nl].strip_suffix(b"\r").unwrap_or(&head[..nl]);
    let (words, n) = text::words::<STORE_LINE_WORDS_MAX>(line)?;
    if n < 5 || !matches!(words[0], b"set" | b"add" | b"replace" | b"cas") {
        return None;
    }
    // Plain digits only, so the length read here is the one memcached's
    // parser reads (anything else goes the usual way).
    let len = words[4];
    if len.is_empty() || len.len() > LENGTH_DIGITS_MAX || !len.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let vlen: usize = std::str::from_utf8(len).ok()?.parse().ok()?;
    if vlen < IN_PLACE_VALUE_BYTES_MIN || vlen > i32::MAX as usize - 2 {
        return None;
    }
    let mut front = Vec::with_capacity(line.len() + 2);
    for (i, w) in words[..n].iter().enumerate() {
        if i > 0 {
            front.push(b' ');
        }
        front.extend_from_slice(if i == 4 { b"0" } else { w });
    }
    front.extend_from_slice(b"\r\n");
    // The rewritten line must be the same request with an empty block.
    let mut probe = front.clone();
    probe.extend_from_slice(b"\r\n");
    let Parse::Done(Request::Store { op, key, flags, exptime, .. }, _) = text::parse(&probe, limits) else {
        return None;
    };
    if matches!(op, StoreOp::Append | StoreOp::Prepend) || key.first() == Some(&amalgam_engine::namespace::NS_ESCAPE) {
        return None;
    }
    let store: &Store = &shared.store;
    let expiry = Expiry::from_memcached(exptime, store.now());
    let mut value = Receiving::new(store.prepare(key, vlen, flags, expiry).ok()?, journaled(shared));
    let body = &pending[nl + 1..];
    let took = value.extend_from(body);
    front.extend_from_slice(&body[took..]);
    Some(Started { value, front })
}

/// Whether a value received here is staged for the log, or for the
/// replication stream while it is fed (no log: the backlog then shares
/// the staged value).
fn journaled(shared: &Shared) -> bool {
    shared.persist.is_some() || shared.repl.backlog.journal_feeds()
}
