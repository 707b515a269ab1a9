//! # A redis-server replica of Amalgam (issue 37 §2)
//!
//! Redis's full sync and command stream, made from Amalgam's.
//!
//! **Full sync.** `+FULLRESYNC <replid> <offset>`, then the store as an
//! RDB from the fork-less snapshot ([`send_rdb`]): streamed as
//! `$EOF:<mark>` (the snapshot's sink writes into a buffer under bucket
//! locks; the sender moves it to the socket between the snapshot's
//! steps, holding no lock, so a slow replica stalls no writer), or for a
//! peer without `capa eof` through an unlinked file as `$<len>`.
//! `<offset>` is the backlog's at the snapshot's cut, where the stream
//! below begins; after a streamed RDB it begins at the replica's first
//! ack (it finds the mark as the last bytes it read).
//!
//! **Stream: state, not changes.** Each record of the backlog from the
//! cut on becomes Redis commands that set the state the record names,
//! read when the record is sent ([`Host::redis_key_state`]): a key's
//! record (PUT, PUT_TYPED, META, OP, DELETE) becomes `RESTORE key <unix
//! ms> <its DUMP> REPLACE ABSTTL`, or `DEL key` once it is gone, after a
//! `SELECT` when the database changes; a FLUSH that happened (not a snapshot's
//! re-statement of the fence it found) becomes `FLUSHALL`; the
//! FUNCTION libraries `FUNCTION RESTORE <payload> FLUSH`; GETACK
//! `REPLCONF GETACK *`. Why state: the snapshot is fuzzy at its cut (a
//! write racing it is both in the image and after it: harmless for a
//! command that sets state, not for a replayed LPUSH), and Amalgam's OP
//! records describe changes to its own encodings. Reading the key when
//! its record is sent converges: a key's last record is sent after its
//! last change, so what is read then is its final value; in between the
//! replica may see a key ahead of the keys before it in the stream (it
//! is asynchronous, as any Redis replica). The cost: a change to a large
//! collection sends the whole collection (a ZADD into 100,000 members
//! sends them all): this stream is for moving off Amalgam and for keeping
//! a Redis replica as a safety net, not for write-heavy large
//! collections. A memcached item's flags, and `flush_all` with a delay,
//! have no Redis form and are not sent.
//!
//! **Offsets.** The replica counts the bytes of the RESP stream it is
//! sent, from `<offset>` on; its acks are mapped back to backlog offsets
//! through [`Peer`]'s `offsets` (the pairs at each send's end and before
//! each GETACK), so WAIT and INFO count it as any replica.
//!
//! **Continuing after a drop** ([`resume`]). The two offsets share no
//! space a PSYNC could continue in by arithmetic, but each replica's map
//! of them can: when its link ends, its pairs are kept (by its address,
//! [`RESUME_PEERS_MAX`] replicas). A replica that comes back with
//! `PSYNC <replid> <R+1>` (it processed the stream up to its offset `R`,
//! always at a command's end) is continued from the latest pair `(s, b,
//! fence)` with `s <= R`: every record after backlog offset `b` is
//! translated again and sent, counted from `R` on, after `+CONTINUE`.
//! Sending again what it already applied is harmless because the stream
//! sets state (above): each key's command restates the key as it is now,
//! so the replica converges whatever it had applied between `s` and `R`;
//! a FLUSHALL sent again is followed by every key written after it. The
//! pair's flush fence comes with it, so a snapshot's re-statement of a
//! fence already sent is still not a FLUSHALL. When `b` has left the
//! backlog, the replid is not the backlog's, or no pair is kept, the
//! answer is a full sync, as Redis's.

use crate::{
    lock, unix_now_nanos, Host, Peer, SyncBuf, REPL_PING_EVERY, SENDER_POLL_SLEEP, SENDER_POLL_WINDOW, SENDER_WAIT,
};
use amalgam_persist::format::{self, Bad, Record};
use amalgam_persist::repl::{self as stream, ReaderId};
use std::io::{Seek, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// How often a sender looks whether a replica acked its streamed RDB.
const FIRST_ACK_POLL: std::time::Duration = std::time::Duration::from_millis(5);

/// The most offset pairs a replica's map keeps (older ones are dropped:
/// an ack then maps to an older, lower backlog offset, never a higher).
const OFFSET_PAIRS_MAX: usize = 4096;

/// Serves a redis-server replica: the RDB full sync, then the stream,
/// until it leaves. `sync`: it said SYNC (no `+FULLRESYNC` line); `eof`:
/// it takes a streamed RDB.
pub(crate) fn stream<H: Host>(shared: &H, w: &mut TcpStream, peer: &Peer, req: &crate::Psync) -> std::io::Result<()> {
    let out = match resume(shared, peer, req) {
        Some((reader, at, fence)) => {
            let out = w
                .write_all(format!("+CONTINUE {}\r\n", req.replid).as_bytes())
                .and_then(|()| send_stream(shared, w, peer, reader, at, fence));
            shared.repl().backlog.detach(reader);
            out
        }
        None => full(shared, w, peer, req.sync, req.eof),
    };
    if let Some(m) = &peer.offsets {
        shared.repl().redis_resumes.keep(&peer.ip, peer.port, m);
    }
    out
}

/// A PSYNC that can continue ("Continuing after a drop"): a backlog
/// reader from the kept triple's place, the stream's and the backlog's
/// offsets to go on from, and the fence sent by then. None: a full sync
/// (counted as a refused partial one when the replica asked for one).
fn resume<H: Host>(shared: &H, peer: &Peer, req: &crate::Psync) -> Option<(ReaderId, (u64, u64), u64)> {
    let r = shared.repl();
    if req.sync || req.replid == "?" || req.offset < 1 {
        return None;
    }
    let processed = req.offset as u64 - 1;
    let continued = r.redis_resumes.take(&peer.ip, peer.port, processed).and_then(|(at, fence)| {
        // The backlog's reader positions are the next byte's offset.
        match r.backlog.attach(&req.replid, at + 1) {
            stream::Attach::Continue { reader, .. } => Some((reader, (processed, at), fence)),
            stream::Attach::Full => None,
        }
    });
    if continued.is_some() {
        r.sync_partial_ok.fetch_add(1, Ordering::Relaxed);
        log::warn!(
            "Partial resynchronization request from redis-server replica {}:{} accepted, at its offset {processed}",
            peer.ip,
            peer.port
        );
    } else {
        r.sync_partial_err.fetch_add(1, Ordering::Relaxed);
    }
    continued
}

/// The RDB full sync, then the stream.
fn full<H: Host>(shared: &H, w: &mut TcpStream, peer: &Peer, sync: bool, eof: bool) -> std::io::Result<()> {
    let r = shared.repl();
    r.sync_full.fetch_add(1, Ordering::Relaxed);
    r.attach_journal(shared.store());
    let sent = send_rdb(shared, w, sync, eof)?;
    log::warn!(
        "Synchronization with redis-server replica {}:{} succeeded ({} keys, {} bytes of RDB in {:.3} s)",
        peer.ip,
        peer.port,
        sent.keys,
        sent.bytes,
        sent.took.as_secs_f64()
    );
    // A streamed RDB ends with its mark, which the replica finds as the
    // last bytes of what it read: the stream waits for its first ack
    // (sent once it has loaded), as Redis's primary does
    // (`repl_start_cmd_stream_on_ack`); meanwhile the backlog keeps it.
    let out = if eof { await_first_ack(shared, peer) } else { Ok(()) }
        .and_then(|()| send_stream(shared, w, peer, sent.reader, (sent.offset, sent.offset), sent.fence));
    r.backlog.detach(sent.reader);
    out
}

/// Waits until `peer` has acked once, for at most `repl-timeout`.
fn await_first_ack<H: Host>(shared: &H, peer: &Peer) -> std::io::Result<()> {
    let deadline = Instant::now() + std::time::Duration::from_secs(shared.repl().timeout_secs.load(Ordering::Relaxed));
    // Bounded by the deadline.
    while !peer.heard.load(Ordering::Acquire) {
        if peer.kill.load(Ordering::Relaxed) || shared.shutting_down() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(std::io::Error::other("the replica did not ack its full sync within repl-timeout"));
        }
        std::thread::sleep(FIRST_ACK_POLL);
    }
    Ok(())
}

/// What a full sync's RDB left: the stream's place at the snapshot's cut
/// (a backlog reader from there: the caller detaches it), the flush
/// fence then, the keys and bytes sent, the time taken.
pub(crate) struct RdbSent {
    pub reader: ReaderId,
    pub offset: u64,
    fence: u64,
    pub keys: u64,
    pub bytes: u64,
    pub took: std::time::Duration,
}

/// Sends the store as a redis-server's full sync on `w`: `+FULLRESYNC
/// <id> <offset>` (not for SYNC), then the RDB. With `eof` (the peer said
/// `capa eof`, as every Redis replica since 4.0 and redis-cli do) it is
/// streamed, `$EOF:<mark>`, the bytes, `<mark>`: the snapshot writes into
/// a [`SyncBuf`] under its bucket locks and the bytes go to the socket
/// between its steps, holding no lock (as the native full sync), so no
/// file is written and the memory is one step's worth. Without, it goes
/// to an unlinked file in [`Host::sync_dir`] first, then `$<len>`.
pub(crate) fn send_rdb<H: Host>(shared: &H, w: &mut TcpStream, sync: bool, eof: bool) -> std::io::Result<RdbSent> {
    w.set_nonblocking(false)?;
    let r = shared.repl();
    let t = Instant::now();
    let buf = SyncBuf::default();
    let mark = stream::new_replid();
    // Set at the snapshot's cut: the stream's id, offset and reader there,
    // and the flush fence then.
    let cut: std::cell::RefCell<Option<(String, u64, ReaderId, u64)>> = std::cell::RefCell::new(None);
    let mut file = if eof {
        None
    } else {
        let path = shared.sync_dir().join(format!("amalgam-sync-{}-{}.rdb", std::process::id(), unix_now_nanos()));
        let f = std::fs::OpenOptions::new().read(true).write(true).create_new(true).open(&path)?;
        // Unlinked at once: the descriptor keeps the bytes, no crash
        // leaves the file behind.
        let _ = std::fs::remove_file(&path);
        Some(f)
    };
    let header = std::cell::Cell::new(false);
    let error: std::cell::Cell<Option<std::io::Error>> = std::cell::Cell::new(None);
    let bytes = std::cell::Cell::new(0u64);
    // Moves what the snapshot buffered to the socket (or the file); the
    // first time, after the cut, the header before it.
    let drain = |w: &mut TcpStream, file: &mut Option<std::fs::File>| {
        let failed = error.take();
        if failed.is_some() {
            error.set(failed);
            return;
        }
        let chunk = std::mem::take(&mut *lock(&buf.0));
        let res = (|| {
            if eof && !header.get() {
                let Some((replid, offset, ..)) = &*cut.borrow() else { return Ok(()) };
                let mut h = String::new();
                if !sync {
                    h.push_str(&format!("+FULLRESYNC {replid} {offset}\r\n"));
                }
                h.push_str(&format!("$EOF:{mark}\r\n"));
                w.write_all(h.as_bytes())?;
                header.set(true);
            }
            match file {
                Some(f) => f.write_all(&chunk),
                None => w.write_all(&chunk),
            }
        })();
        match res {
            Ok(()) => bytes.set(bytes.get() + chunk.len() as u64),
            Err(e) => error.set(Some(e)),
        }
    };
    let written = {
        let w2: &mut TcpStream = &mut *w;
        let file2 = &mut file;
        shared.write_rdb(
            buf.clone(),
            &mut || {
                let (replid, offset, reader) = r.backlog.cut();
                *cut.borrow_mut() = Some((replid, offset, reader, shared.store().flush_fence()));
            },
            &mut || drain(w2, file2),
        )
    };
    let Some((replid, offset, reader, fence)) = cut.borrow().clone() else {
        return Err(written.err().unwrap_or_else(|| std::io::Error::other("the snapshot's cut did not run")));
    };
    let done = (|| {
        let keys = written?;
        // The end of the RDB (EOF, checksum), after the last step.
        drain(w, &mut file);
        if let Some(e) = error.take() {
            return Err(e);
        }
        match file.as_mut() {
            None => w.write_all(mark.as_bytes())?,
            Some(f) => {
                let len = f.stream_position()?;
                f.rewind()?;
                if !sync {
                    w.write_all(format!("+FULLRESYNC {replid} {offset}\r\n").as_bytes())?;
                }
                w.write_all(format!("${len}\r\n").as_bytes())?;
                std::io::copy(&mut std::io::Read::take(f, len), w)?;
            }
        }
        Ok(keys)
    })();
    match done {
        Ok(keys) => Ok(RdbSent { reader, offset, fence, keys, bytes: bytes.get(), took: t.elapsed() }),
        Err(e) => {
            r.backlog.detach(reader);
            Err(e)
        }
    }
}

/// The stream from the cut (`offset`, read through `reader`) on.
fn send_stream<H: Host>(
    shared: &H,
    w: &mut TcpStream,
    peer: &Peer,
    reader: ReaderId,
    (mut sent, mut pending_at): (u64, u64),
    fence: u64,
) -> std::io::Result<()> {
    let r = shared.repl();
    peer.online.store(true, Ordering::Relaxed);
    // Asked at once, so the replica's first ack does not wait a second.
    r.backlog.request_acks();
    note(peer, sent, pending_at, fence);
    let mut pending: Vec<u8> = Vec::new();
    let mut buf = Vec::with_capacity(stream::SEND_CHUNK_BYTES);
    let mut out = Vec::new();
    let mut s = Sent { db: None, fence };
    let mut last_sent = Instant::now();
    // Bounded by the replica: each pass reads the backlog or waits.
    loop {
        if peer.kill.load(Ordering::Relaxed) || shared.shutting_down() {
            return Ok(());
        }
        buf.clear();
        let polling = last_sent.elapsed() < SENDER_POLL_WINDOW;
        let wait = if polling { std::time::Duration::ZERO } else { SENDER_WAIT };
        match r.backlog.read_next(reader, &mut buf, stream::SEND_CHUNK_BYTES, wait) {
            Ok(stream::Read::Copied(0)) => {
                if polling {
                    std::thread::sleep(SENDER_POLL_SLEEP);
                } else if last_sent.elapsed() >= REPL_PING_EVERY {
                    r.backlog.request_acks();
                    last_sent = Instant::now();
                }
                continue;
            }
            Ok(stream::Read::Copied(_)) => pending.extend_from_slice(&buf),
            Ok(stream::Read::Shared(chunk, range)) => pending.extend_from_slice(&chunk[range]),
            Err(stream::Gone) => {
                return Err(std::io::Error::other("the replica fell further behind than the backlog keeps"))
            }
        }
        let mut pos = 0;
        // Bounded: each record takes bytes of `pending`.
        loop {
            match format::read_record(&pending[pos..]) {
                Ok((rec, n)) => {
                    if matches!(rec, Record::GetAck) {
                        // The replica acks what it had before this GETACK.
                        w.write_all(&out)?;
                        sent += out.len() as u64;
                        out.clear();
                        note(peer, sent, pending_at + pos as u64, s.fence);
                    }
                    translate(shared, &rec, &mut s, &mut out);
                    pos += n;
                }
                Err(Bad::Torn) => break,
                Err(Bad::Corrupt(why)) => {
                    return Err(std::io::Error::other(format!("a corrupt record in the backlog: {why}")))
                }
            }
        }
        pending.drain(..pos);
        pending_at += pos as u64;
        if !out.is_empty() {
            w.write_all(&out)?;
            sent += out.len() as u64;
            out.clear();
            last_sent = Instant::now();
        }
        note(peer, sent, pending_at, s.fence);
    }
}

/// What the replica has been sent so far that the next commands depend
/// on.
struct Sent {
    /// The database it has selected.
    db: Option<usize>,
    /// The highest flush fence it has been sent (or the store's at the
    /// snapshot's cut, which its RDB holds).
    fence: u64,
}

/// The Redis commands for one record (module notes), appended to `out`.
fn translate<H: Host>(shared: &H, rec: &Record<'_>, s: &mut Sent, out: &mut Vec<u8>) {
    use amalgam_protocol::resp::{push_array, push_bulk};
    match rec {
        Record::Put { key, .. }
        | Record::PutTyped { key, .. }
        | Record::Meta { key, .. }
        | Record::Op { key, .. }
        | Record::Delete { key } => shared.redis_key_state(key, &mut s.db, out),
        // A snapshot re-states the flush fence it found (engine
        // `journal_flush_state`, for the log's replay): only a fence past
        // every one seen is a flush that happened.
        Record::Flush { fence_cas } if *fence_cas > s.fence => {
            s.fence = *fence_cas;
            push_array(out, 1);
            push_bulk(out, b"FLUSHALL");
        }
        Record::Functions { payload } => {
            push_array(out, 4);
            push_bulk(out, b"FUNCTION");
            push_bulk(out, b"RESTORE");
            push_bulk(out, payload);
            push_bulk(out, b"FLUSH");
        }
        Record::GetAck => {
            push_array(out, 3);
            push_bulk(out, b"REPLCONF");
            push_bulk(out, b"GETACK");
            push_bulk(out, b"*");
        }
        Record::FlushAt { .. } => log::debug!("replication: a delayed flush_all has no Redis form; not sent"),
        _ => {}
    }
}

/// Notes that the RESP stream's `sent` bytes carry the backlog up to
/// `backlog` (a redis-server replica's [`AckMap`]).
fn note(peer: &Peer, sent: u64, backlog: u64, fence: u64) {
    if let Some(m) = &peer.offsets {
        m.note(sent, backlog, fence);
    }
}

/// A redis-server replica's acks (offsets of the RESP stream it was
/// sent) mapped to backlog offsets: triples (stream bytes sent, backlog
/// offset they carry, the flush fence sent by then), oldest first, at
/// most [`OFFSET_PAIRS_MAX`].
#[derive(Debug, Default)]
pub(crate) struct AckMap(std::sync::Mutex<std::collections::VecDeque<(u64, u64, u64)>>);

impl AckMap {
    fn note(&self, sent: u64, backlog: u64, fence: u64) {
        let mut m = lock(&self.0);
        if m.back().is_some_and(|&(s, ..)| s == sent) {
            m.pop_back();
        }
        if m.len() >= OFFSET_PAIRS_MAX {
            m.pop_front();
        }
        m.push_back((sent, backlog, fence));
    }

    /// The backlog offset an ack of `acked` stands for: that of the
    /// latest pair it covers (0 if none; older pairs are dropped, acks
    /// only grow).
    pub(crate) fn backlog_offset(&self, acked: u64) -> u64 {
        let mut m = lock(&self.0);
        let mut found = 0;
        // Bounded by OFFSET_PAIRS_MAX.
        while let Some(&(sent, backlog, _)) = m.front() {
            if sent > acked {
                break;
            }
            found = backlog;
            if m.len() == 1 {
                break;
            }
            m.pop_front();
        }
        found
    }
}

/// How many redis-server replicas' offset maps are kept after their
/// links end, for a PSYNC that continues ([`resume`]); the oldest goes.
pub(crate) const RESUME_PEERS_MAX: usize = 16;

/// The offset maps of the redis-server replicas whose links ended, by
/// their address (module notes, "Continuing after a drop").
#[derive(Debug, Default)]
pub(crate) struct Resumes(std::sync::Mutex<std::collections::VecDeque<Kept>>);

/// One replica's kept map: its address and its triples, oldest first.
type Kept = (String, u16, Vec<(u64, u64, u64)>);

impl Resumes {
    /// Keeps the map of the replica at `ip`:`port`, whose link ended.
    fn keep(&self, ip: &str, port: u16, map: &AckMap) {
        let triples: Vec<(u64, u64, u64)> = lock(&map.0).iter().copied().collect();
        let mut kept = lock(&self.0);
        kept.retain(|(i, p, _)| !(i == ip && *p == port));
        if kept.len() >= RESUME_PEERS_MAX {
            kept.pop_front();
        }
        kept.push_back((ip.to_string(), port, triples));
    }

    /// For the replica at `ip`:`port` that processed the stream up to
    /// its offset `processed`: the backlog offset and the flush fence of
    /// the latest triple it covers, taken (a map serves one return).
    fn take(&self, ip: &str, port: u16, processed: u64) -> Option<(u64, u64)> {
        let mut kept = lock(&self.0);
        let i = kept.iter().position(|(i, p, _)| i == ip && *p == port)?;
        let (_, _, triples) = kept.remove(i)?;
        triples.iter().rev().find(|&&(sent, ..)| sent <= processed).map(|&(_, backlog, fence)| (backlog, fence))
    }
}

impl Peer {
    /// The backlog offset a replica's ack of `acked` stands for: its own
    /// for an Amalgam replica, mapped for a redis-server one.
    pub(crate) fn backlog_offset(&self, acked: u64) -> u64 {
        self.offsets.as_ref().map_or(acked, |m| m.backlog_offset(acked))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acks_map_to_the_backlog_offset_of_the_latest_send_they_cover() {
        let m = AckMap::default();
        m.note(100, 100, 0);
        m.note(150, 400, 0);
        m.note(150, 420, 0); // nothing sent: the later backlog offset wins
        m.note(180, 500, 0);
        assert_eq!(m.backlog_offset(99), 0);
        assert_eq!(m.backlog_offset(100), 100);
        assert_eq!(m.backlog_offset(170), 420);
        assert_eq!(m.backlog_offset(180), 500);
        assert_eq!(m.backlog_offset(10_000), 500, "the last pair stays");
        for i in 0..(OFFSET_PAIRS_MAX as u64 + 10) {
            m.note(1_000 + i, 2_000 + i, 0);
        }
        assert_eq!(lock(&m.0).len(), OFFSET_PAIRS_MAX);
    }

    #[test]
    fn a_replica_continues_from_the_latest_triple_its_offset_covers() {
        let kept = Resumes::default();
        let m = AckMap::default();
        m.note(100, 1_000, 1);
        m.note(150, 1_400, 2);
        m.note(180, 1_500, 2);
        kept.keep("10.0.0.1", 6379, &m);
        assert_eq!(kept.take("10.0.0.2", 6379, 170), None, "another replica's offsets are not its");
        assert_eq!(kept.take("10.0.0.1", 6379, 99), None, "before the first triple kept");
        kept.keep("10.0.0.1", 6379, &m);
        assert_eq!(kept.take("10.0.0.1", 6379, 170), Some((1_400, 2)));
        assert_eq!(kept.take("10.0.0.1", 6379, 170), None, "taken once");
        for i in 0..(RESUME_PEERS_MAX as u16 + 3) {
            kept.keep("10.0.0.9", 7000 + i, &m);
        }
        assert_eq!(lock(&kept.0).len(), RESUME_PEERS_MAX);
        assert_eq!(kept.take("10.0.0.9", 7000, 500), None, "the oldest replica's were dropped");
        assert_eq!(kept.take("10.0.0.9", 7000 + RESUME_PEERS_MAX as u16 + 2, 500), Some((1_500, 2)));
    }
}
