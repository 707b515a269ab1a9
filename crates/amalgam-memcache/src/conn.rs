//! A memcached-port connection's round: what the event loop hands the
//! front end each time the connection's read buffer has new bytes. The
//! text protocol's batch loop is here (runs of GETs as one engine batch,
//! MICA §5.3; runs of storage commands prefetched, `exec::run_stores`);
//! the binary protocol's is `binary.rs`, decided by the connection's
//! first byte as memcached's `try_read_command_negotiate` does; `-Y`
//! authentication comes first (`authfile.rs`).

use crate::exec::{run_gets, run_one, run_stores, After};
use crate::Ctx;
use amalgam_commands::received::Receiving;
use amalgam_net::turn::{GETS_RUN_REQUESTS_MAX, REQUESTS_PER_ROUND_MAX, WRITE_BUFFER_HIGH_BYTES};
use amalgam_protocol::compose::push_line;
use amalgam_protocol::text::{parse, Keys, Parse, Request};

/// What a memcached-port connection keeps between its rounds (its socket,
/// buffers and TLS session are the event loop's).
#[derive(Debug)]
pub struct Conn {
    /// Bytes of a refused data block still to discard.
    pub swallow: usize,
    /// An `lru_crawler metadump` in progress: the scan cursor it goes on
    /// from once the output drains (the server's `admin.rs`).
    pub dump: Option<u64>,
    /// memcached's `-Y`: false until the connection's authentication
    /// `set` succeeded (`authfile.rs`); true from the start without `-Y`.
    pub authed: bool,
    /// memcached's binary protocol: decided by the first byte a
    /// connection sends (`0x80`), as memcached's
    /// `try_read_command_negotiate` does, and kept for the connection's
    /// life; None until a byte came.
    pub binary: Option<bool>,
    /// Where the event loop keeps it: its worker and token
    /// ([`Conn::place`]); a watcher's lines are delivered there.
    pub at: Option<(usize, usize)>,
    /// `watch`: the watcher this connection is; it reads no more requests
    /// and its turns write the lines queued for it (watch.rs).
    pub watching: Option<std::sync::Arc<crate::watch::Watcher>>,
    /// Its file descriptor and peer (`watch` lines' `cfd`, `rip`, `rport`),
    /// from [`Conn::place`]; -1 and None until then.
    pub cfd: i64,
    pub peer: Option<std::net::SocketAddr>,
}

impl Conn {
    /// A connection as accepted; `authed` unless `-Y` asks for a login.
    pub fn new(authed: bool) -> Conn {
        Conn { swallow: 0, dump: None, authed, binary: None, at: None, watching: None, cfd: -1, peer: None }
    }

    /// The event loop tells the connection where it lives (worker,
    /// token): what `watch` needs to have lines delivered (watch.rs §
    /// Where the lines come from; without it `watch` answers
    /// `WATCHER_FAILED`), with its file descriptor and peer, of which a
    /// `watch connevents` line tells (`wake(worker)` wakes a watcher's
    /// worker).
    pub fn place(
        &mut self,
        worker: usize,
        token: usize,
        fd: i32,
        peer: Option<std::net::SocketAddr>,
        watchers: &crate::watch::Watchers,
        wake: impl FnMut(usize),
    ) {
        self.at = Some((worker, token));
        self.cfd = i64::from(fd);
        self.peer = peer;
        if let Some(p) = peer.filter(|_| watchers.wants(crate::watch::class::CONNEVENTS)) {
            watchers.log(crate::watch::class::CONNEVENTS, |o| crate::watch::conn_new(o, p, self.cfd), wake);
        }
    }

    /// The connection leaves the loop: out of the watchers, if it was one,
    /// and a `watch connevents` line tells of it.
    pub fn leave(&mut self, watchers: &crate::watch::Watchers, wake: impl FnMut(usize)) {
        if let Some(w) = self.watching.take() {
            watchers.remove(&w);
        }
        if let Some(p) = self.peer.filter(|_| watchers.wants(crate::watch::class::CONNEVENTS)) {
            watchers.log(crate::watch::class::CONNEVENTS, |o| crate::watch::conn_close(o, p, "normal", self.cfd), wake);
        }
    }

    /// True while the request at the front of the read buffer is a text
    /// request a value may be received in place for (not the binary
    /// protocol, nor a login, a refused block or a metadump in progress).
    pub fn may_receive_in_place(&self) -> bool {
        self.authed && self.binary != Some(true) && self.swallow == 0 && self.dump.is_none()
    }
}

/// Parses and executes what `buf[*rstart..*rend]` holds, as one batch
/// (at most [`REQUESTS_PER_ROUND_MAX`] requests, parsing no further past
/// the write buffer's high-water mark), appending the replies to `wbuf`;
/// advances `*rstart` past what it used. `inplace`: a data block received
/// straight into its item for the request at the front. True if the
/// output reached the hard limit the round read (`ctx.stop`): the event
/// loop then closes the client.
#[allow(clippy::too_many_arguments)]
pub fn process(
    ctx: &Ctx<'_>,
    conn: &mut Conn,
    buf: &[u8],
    rstart: &mut usize,
    rend: &mut usize,
    wbuf: &mut Vec<u8>,
    close_after_write: &mut bool,
    inplace: &mut Option<Box<Receiving>>,
) -> bool {
    let Conn { swallow, dump, authed, binary, at, watching, .. } = conn;
    if let Some(w) = watching {
        // memcached's conn_watch: requests are no longer read; the turn
        // writes what was logged for it.
        ctx.w.host.operator().watchers.drain(w, wbuf);
        *rstart = *rend;
        return false;
    }
    if !*authed {
        // memcached's -Y: only the authentication `set` until it
        // succeeds, and never the binary protocol.
        *binary = Some(false);
        crate::authfile::process(ctx, buf, rstart, wbuf, close_after_write, authed);
        if !*authed || *close_after_write {
            return false;
        }
    }
    if binary.is_none() && *rstart < buf.len() {
        *binary = Some(match ctx.w.host.binding() {
            crate::Binding::Auto => buf[*rstart] == amalgam_protocol::binary::MAGIC_REQUEST,
            crate::Binding::Ascii => false,
            crate::Binding::Binary => true,
        });
    }
    if *binary == Some(true) {
        crate::binary::process(ctx, buf, rstart, rend, wbuf, swallow, close_after_write);
        return ctx.stop.crossed(wbuf.len());
    }
    // A metadump streams before any later request is parsed, so
    // replies keep their order; it stops at the high-water mark and
    // goes on when this buffer has been written.
    if let Some(cursor) = *dump {
        *dump = ctx.w.host.metadump_step(cursor, wbuf, WRITE_BUFFER_HIGH_BYTES);
        if dump.is_some() {
            return false;
        }
    }
    let mut pos = *rstart;
    // A data block received in place (`inplace.rs`): its request, at
    // the front, reads with an empty block; anything but that request
    // whole drops the value (the loop below answers it as it reads).
    if let Some(v) = inplace.take_if(|v| v.is_complete()) {
        match parse(&buf[pos..], ctx.w.limits) {
            Parse::Done(req @ Request::Store { .. }, n) => {
                pos += n;
                crate::exec::run_prepared(ctx, req, *v, wbuf);
            }
            Parse::Incomplete => {
                *inplace = Some(v);
                return false;
            }
            _ => {}
        }
    }
    let mut gets: Vec<(Keys<'_>, bool)> = Vec::new();
    // The run of storage commands in progress (see exec::run_stores);
    // never both it and `gets` non-empty, so replies keep their order.
    let mut stores: Vec<Request<'_>> = Vec::new();
    // Past the hard limit nothing more of the batch runs, not even a
    // request parsed behind a run that crossed it: the client is
    // closed after the round (`obuf::RoundStop`, as RESP).
    for _ in 0..REQUESTS_PER_ROUND_MAX {
        if swallowing(buf, &mut pos, swallow) {
            break;
        }
        if !ctx.stop.parses(wbuf.len()) || pos == buf.len() {
            break;
        }
        let parsed = parse(&buf[pos..], ctx.w.limits);
        if ctx.w.routed {
            if let Parse::Done(req, n) = &parsed {
                if let Err(refusal) = crate::route::text(ctx, req) {
                    // Refused in cluster mode (route.rs): after the
                    // replies of the runs before it, in order.
                    if !gets.is_empty() {
                        run_gets(ctx, &gets, wbuf);
                        gets.clear();
                    }
                    run_stores(ctx, &mut stores, wbuf);
                    pos += n;
                    if let Some(line) = refusal {
                        push_line(wbuf, &line);
                    }
                    continue;
                }
            }
        }
        match parsed {
            Parse::Done(Request::Get { keys, cas, touch: None }, n) => {
                run_stores(ctx, &mut stores, wbuf);
                if ctx.stop.crossed(wbuf.len()) {
                    break;
                }
                gets.push((keys, cas));
                pos += n;
                if gets.len() >= GETS_RUN_REQUESTS_MAX {
                    run_gets(ctx, &gets, wbuf);
                    gets.clear();
                }
            }
            Parse::Done(req @ Request::Store { .. }, n) => {
                if !gets.is_empty() {
                    run_gets(ctx, &gets, wbuf);
                    gets.clear();
                }
                if ctx.stop.crossed(wbuf.len()) {
                    break;
                }
                stores.push(req);
                pos += n;
            }
            Parse::Done(req, n) => {
                if !gets.is_empty() {
                    run_gets(ctx, &gets, wbuf);
                    gets.clear();
                }
                run_stores(ctx, &mut stores, wbuf);
                if ctx.stop.crossed(wbuf.len()) {
                    break;
                }
                pos += n;
                match run_one(ctx, req, wbuf) {
                    After::Continue => {}
                    After::Close => {
                        *close_after_write = true;
                        break;
                    }
                    After::Watch(classes) => match ctx.w.host.operator().watchers.add(classes, *at) {
                        Ok(w) => {
                            push_line(wbuf, "OK");
                            *watching = Some(w);
                            *rstart = *rend;
                            return false;
                        }
                        Err(refusal) => push_line(wbuf, refusal),
                    },
                    After::MetaDump => {
                        *dump = ctx.w.host.metadump_step(0, wbuf, WRITE_BUFFER_HIGH_BYTES);
                        if dump.is_some() {
                            break;
                        }
                    }
                }
            }
            Parse::Incomplete => break,
            Parse::Fail(f) => {
                if !gets.is_empty() {
                    run_gets(ctx, &gets, wbuf);
                    gets.clear();
                }
                run_stores(ctx, &mut stores, wbuf);
                if ctx.stop.crossed(wbuf.len()) {
                    break;
                }
                if let Some(unlink) = f.unlink {
                    let mut scratch = [0; amalgam_protocol::KEY_BYTES_MAX];
                    if let Some(key) = unlink.key(&buf[pos..], &mut scratch) {
                        let _ = ctx.w.store.delete(crate::stored(key, &mut Vec::new()));
                    }
                }
                pos += f.consumed;
                if f.reply == Some(amalgam_protocol::text::reply::TOO_LARGE) {
                    // A data block over -I, refused before it is read.
                    amalgam_commands::counters::bump(&ctx.w.counters.store_too_large, 1);
                }
                if let (Some(line), false) = (f.reply, f.noreply) {
                    push_line(wbuf, line);
                }
                *swallow = f.swallow;
                if f.close {
                    *close_after_write = true;
                    break;
                }
            }
        }
    }
    if !gets.is_empty() {
        run_gets(ctx, &gets, wbuf);
    }
    run_stores(ctx, &mut stores, wbuf);
    *rstart = pos;
    if *swallow > 0 && *rstart == *rend {
        // Discard without keeping: the refused block never occupies
        // the buffer.
        *rstart = 0;
        *rend = 0;
    }
    ctx.stop.crossed(wbuf.len())
}

/// Skips what is left of a refused request's data (`swallow` bytes, as
/// memcached's `conn_swallow`) from `buf[*pos..]`; true while some of it
/// has not arrived yet (the turn stops and waits for more).
pub fn swallowing(buf: &[u8], pos: &mut usize, swallow: &mut usize) -> bool {
    if *swallow == 0 {
        return false;
    }
    let n = (*swallow).min(buf.len() - *pos);
    *pos += n;
    *swallow -= n;
    *swallow > 0
}
