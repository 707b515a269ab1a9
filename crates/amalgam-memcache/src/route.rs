//! Redis Cluster on the memcached port (issue 38 §2).
//!
//! A cluster node's memcached port serves the keys of the slots the node
//! serves, as its RESP port does, and no others: memcached's clients
//! shard across servers by their own hashing (ketama), not by Redis's
//! slots, so a key that reaches the wrong node must not be read or
//! written there, where a RESP client would never find it. The request
//! is refused with the redirection RESP would have answered, as a line a
//! memcached client reports as the server's error and goes on from:
//!
//! ```text
//! SERVER_ERROR MOVED 3999 127.0.0.1:7001
//! SERVER_ERROR ASK 3999 127.0.0.1:7002        (the slot is moving there)
//! SERVER_ERROR CLUSTERDOWN The cluster is down
//! ```
//!
//! The address is the owner's RESP address (the only one the cluster
//! bus knows; Redis's nodes announce no memcached port). The binary
//! protocol answers the same text with memcached's status for "this key
//! belongs to another server", `NOT_MY_VBUCKET` (0x0007).
//!
//! A request names its keys in one slot or is refused as a whole (a
//! multi-key `get` across slots is `CROSSSLOT`, as MGET's would be): a
//! refusal is written before any of the request's values, so a reply is
//! never half a get. A `noreply` request's refusal is not written (the
//! client reads no reply to it), as memcached drops its other errors.
//!
//! Cost outside cluster mode: one test of a `bool` fixed at start
//! ([`crate::Worker::routed`]) per request.

use crate::Ctx;
use amalgam_protocol::meta::{MetaCmd, MetaRequest};
use amalgam_protocol::text::Request;

/// What a text or meta request is refused with in cluster mode: the line
/// to answer (None: answer nothing, the request said `noreply`), or
/// `Ok(())` when it runs here.
#[inline]
pub(crate) fn text(ctx: &Ctx<'_>, req: &Request<'_>) -> Result<(), Option<String>> {
    match *req {
        Request::Get { keys, touch, .. } => {
            let keys: Vec<&[u8]> = keys.iter().collect();
            refused(ctx, &keys, touch.is_some()).map_or(Ok(()), |e| Err(Some(e)))
        }
        Request::Store { key, noreply, .. }
        | Request::Delete { key, noreply }
        | Request::Arith { key, noreply, .. }
        | Request::Touch { key, noreply, .. } => one(ctx, key, noreply),
        Request::Meta { cmd, line, .. } => meta(ctx, cmd, line),
        _ => Ok(()),
    }
}

/// A meta command's key (decoded from base64 with `b`). `mn` has none.
/// The `q` flag hides a command's success and miss replies, never an
/// error: the refusal is always written.
fn meta(ctx: &Ctx<'_>, cmd: MetaCmd, line: &[u8]) -> Result<(), Option<String>> {
    if cmd == MetaCmd::Noop {
        return Ok(());
    }
    let Some(req) = MetaRequest::from_line(cmd, line) else { return Ok(()) };
    let write = matches!(cmd, MetaCmd::Set | MetaCmd::Delete | MetaCmd::Arith);
    refused(ctx, &[req.key()], write).map_or(Ok(()), |e| Err(Some(e)))
}

/// A write of one key (every text command with a `noreply`).
fn one(ctx: &Ctx<'_>, key: &[u8], noreply: bool) -> Result<(), Option<String>> {
    match refused(ctx, &[key], true) {
        None => Ok(()),
        Some(_) if noreply => Err(None),
        Some(e) => Err(Some(e)),
    }
}

/// The redirection for `keys` (the host's routing), as a text line.
fn refused(ctx: &Ctx<'_>, keys: &[&[u8]], write: bool) -> Option<String> {
    if keys.is_empty() {
        return None;
    }
    ctx.w.host.misrouted(keys, write).map(|why| format!("SERVER_ERROR {why}"))
}

/// A binary request's refusal: the redirection's text for the body of a
/// `NOT_MY_VBUCKET` answer, or None when it runs here.
#[inline]
pub(crate) fn binary(ctx: &Ctx<'_>, key: &[u8], write: bool) -> Option<String> {
    ctx.w.host.misrouted(&[key], write)
}
