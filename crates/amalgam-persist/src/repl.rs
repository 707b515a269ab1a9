//! The replication stream (issue 22): what a primary sends its replicas
//! and what a replica applies. The network, the handshake and the RESP
//! commands are the server's (`amalgam-server` `repl.rs`); this module
//! knows bytes and records only.
//!
//! # The stream is the log
//!
//! A replica receives exactly the records the log holds (`format.rs`:
//! length, type, CRC32C, body), made once by the engine's journal under
//! the changed key's bucket lock ([`StreamJournal`], which feeds both the
//! log, when persistence is on, and the [`Backlog`]). So one encoding
//! serves the disk and the network, every data type replicates the way it
//! is logged (a PUT of the whole item, an OP record for an in-place change
//! of a large collection, META for EXPIRE, FLUSH), and the stream is
//! checksummed record by record. The replication offset
//! (`master_repl_offset`) counts the stream's bytes, as Redis's does.
//!
//! # Full sync without fork (Redis forks for it)
//!
//! [`full_sync`] runs the engine's fork-less snapshot (`Store::snapshot`;
//! engine `journal.rs`) into the replica's socket: at the cut it takes the
//! backlog's offset (the stream continues from there), writes the
//! preamble (the server's `+FULLRESYNC <replid> <offset>`) and the
//! snapshot header; the items follow, then an END record; then the
//! backlog from the cut on. A writer that changes a bucket the cursor has
//! not reached serializes it first (into the sink's buffer, under the
//! bucket lock), so the image is the store at the cut; the snapshot thread
//! writes that buffer to the socket between steps, outside every lock. The
//! primary's extra memory is that buffer plus the backlog the replica has
//! not yet read — no copy of the store, no copy-on-write. A record can be
//! both in the image and in the stream after the cut (a write that raced
//! the cut); applying it twice is harmless (PUT, DELETE, META and FLUSH
//! set state; an OP applies only to the object version before it).
//!
//! # The backlog (Redis's PSYNC)
//!
//! A ring of the stream's last bytes, `repl-backlog-size` of them, and
//! more while a connected replica still needs them (up to
//! `replica_lag_bytes_max`, Redis's `client-output-buffer-limit replica`;
//! a replica further behind is dropped and resyncs in full). A replica
//! that reconnects names the replication id and the next offset it wants;
//! if that id is this primary's (or the one it had as a replica before a
//! promotion, Redis's PSYNC2 `replid2`) and the bytes are still here, it
//! continues from there (`+CONTINUE`) with no full sync.
//!
//! # Large records in the backlog (issue 18 §5)
//!
//! The backlog is a queue of pieces, not one buffer. Small records are
//! copied into pieces of about [`OWN_PIECE_BYTES`]; a record of
//! [`LARGE_RECORD_BYTES_MIN`] or more is not copied at all: it is the
//! log's own chunk ([`SharedChunk`], persist `log.rs` § Large records), or
//! for a value received in place the staged value (`staged.rs`) after a
//! copied head, kept by reference. Before, the journal copied each such
//! record into the ring under the ring's mutex on the worker: 1.6 s for a
//! 512 MB SET with a replica attached, every other connection of the
//! worker waiting (docs/bench-log/2026-11-26-large-values.md § Persistence
//! and GET of a large value; the change: § Replication of a large value
//! without the copy). A sender writes a
//! shared record's bytes to its socket from the chunk itself
//! ([`Backlog::read_next`]): the stream copies the value nowhere.
//!
//! Accounting: a shared record counts its whole length in the backlog
//! (`repl_backlog_histlen`, the limits), as if copied in — the memory it
//! holds is real, shared with the log only until the log has written it.
//! Trimming drops whole pieces from the front, and the front bytes of a
//! small-records piece (at most one piece of dead bytes stays allocated,
//! under 1.1 MiB).
//! A shared record is kept or dropped whole: when the line `repl-backlog-size`
//! (or a lagging reader's need, up to the lag limit) draws falls inside
//! one, it is kept whole while a reader within the limits is reading it
//! (the backlog then holds more than the line, by less than that record),
//! and dropped whole otherwise, so the backlog may hold less history than
//! `repl-backlog-size` after a large record, where Redis would keep the
//! record's tail: a replica that reconnects wanting an offset inside it
//! gets a full sync. Never does a shared record pin memory the backlog
//! does not count. A record larger than the lag limit still drops a
//! replica that must read it whole (as Redis drops one whose output
//! buffer passes `client-output-buffer-limit replica`).
//!
//! # Applying ([`Applier`])
//!
//! The replica applies each record with recovery's code (`recover.rs`).
//! CAS uniques keep the primary's order: a replica that held data
//! (a flush fence of its own) shifts every CAS by the fence it had when
//! the full sync began, so the primary's FLUSH fences stay meaningful.

use std::collections::VecDeque;
use std::hash::BuildHasher;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use amalgam_engine::{Change, ItemRef, Journal, SnapshotSink, SnapshotStats, Store};

use crate::format::{self, Record};
use crate::log::{Framed, Log, Pending, SharedChunk, LARGE_RECORD_BYTES_MIN};
use crate::recover;

/// Redis's default `repl-backlog-size` (1 MiB).
pub const REPL_BACKLOG_BYTES_DEFAULT: usize = 1 << 20;
/// Redis's smallest `repl-backlog-size` (16 KiB).
pub const REPL_BACKLOG_BYTES_MIN: usize = 16 << 10;
/// How far a connected replica may fall behind before it is dropped: the
/// stream bytes kept for it beyond the backlog (Redis's default
/// `client-output-buffer-limit replica 256mb`).
pub const REPLICA_LAG_BYTES_MAX_DEFAULT: usize = 256 << 20;
/// Small records are copied into pieces of the backlog of about this
/// many bytes (a piece is filled past it by at most one record): what
/// trimming leaves allocated in front of the backlog's first byte is at
/// most one such piece, and a piece is freed whole once behind the
/// backlog.
/// (A record of 64 KiB to 1 MiB makes a piece of its own size: dead bytes
/// in front stay under [`LARGE_RECORD_BYTES_MIN`].)
const OWN_PIECE_BYTES: usize = 64 << 10;
/// The most stream bytes a sender copies out of the backlog per write.
pub const SEND_CHUNK_BYTES: usize = 1 << 20;
/// The full sync's snapshot buffer is written to the socket once it
/// reaches this, between the cursor's steps.
const SYNC_WRITE_BYTES: usize = 1 << 20;
/// Length of a replication id (40 hex digits, as Redis's).
pub const REPLID_BYTES: usize = 40;

/// A new random replication id.
pub fn new_replid() -> String {
    let s = std::collections::hash_map::RandomState::new();
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let words = [s.hash_one((t, 1u8)), s.hash_one((t, 2u8)), s.hash_one((t, 3u8, std::process::id()))];
    let mut id = String::with_capacity(REPLID_BYTES + 8);
    for w in words {
        id.push_str(&format!("{w:016x}"));
    }
    id.truncate(REPLID_BYTES);
    id
}

/// A connected replica's place in the stream (see [`Backlog::read`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReaderId(u64);

/// The reader fell further behind than the backlog keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gone;

/// A piece of the backlog: small records copied in, or a large record
/// shared with the log (module notes, "Large records in the backlog").
#[derive(Debug)]
enum Piece {
    /// Small records' bytes, copied in (up to about
    /// [`OWN_PIECE_BYTES`] per piece).
    Own(Vec<u8>),
    /// A large record, or a staged value (the rest of its record), held
    /// by reference: the log's chunk, or the journal's own.
    Shared(SharedChunk),
    /// A large record whose bytes the writer frames once its bucket lock
    /// is released (`log.rs`, [`Pending`]); then as `Shared`.
    Pending(Arc<Pending>),
}

impl Piece {
    fn len(&self) -> usize {
        match self {
            Piece::Own(v) => v.len(),
            Piece::Shared(c) => c.len(),
            Piece::Pending(p) => p.len(),
        }
    }
}

/// A part of what is fed to the backlog ([`Backlog::feed_parts`]).
#[derive(Debug, Clone, Copy)]
pub enum Part<'a> {
    /// Bytes to copy in.
    Bytes(&'a [u8]),
    /// A large record's bytes, kept by reference (no copy).
    Shared(&'a SharedChunk),
    /// A large record's place, its bytes to come ([`Pending`]).
    Pending(&'a Arc<Pending>),
}

/// What [`Backlog::read_next`] gave a sender.
#[derive(Debug)]
pub enum Read {
    /// This many bytes were copied into the caller's buffer (0: none
    /// yet).
    Copied(usize),
    /// The next bytes are these of a shared large record: the sender
    /// writes them from the chunk itself, no copy.
    Shared(SharedChunk, std::ops::Range<usize>),
}

#[derive(Debug)]
struct Ring {
    /// The stream's last bytes, offsets `end - len + 1 ..= end`, as pieces
    /// in order, each with the offset of its own first byte.
    pieces: VecDeque<(u64, Piece)>,
    /// Bytes of the front piece already dropped (only ever an own piece's:
    /// a shared piece is kept or dropped whole).
    skip: usize,
    /// Bytes kept (`repl_backlog_histlen`): the pieces' bytes less `skip`.
    len: usize,
    /// Bytes streamed in all (`master_repl_offset`).
    end: u64,
    /// `repl-backlog-size`.
    size: usize,
    /// How much more than `size` is kept for a lagging reader.
    lag_max: usize,
    /// Connected replicas: (id, the next offset each will read).
    readers: Vec<(u64, u64)>,
    next_reader: u64,
    /// Readers waiting for bytes (a notify is sent only then).
    sleeping: usize,
    /// Whether anything is kept (off until the first replica: a primary
    /// without replicas keeps no backlog, as Redis).
    active: bool,
    /// A replica: its link feeds the backlog, not its journal.
    following: bool,
    replid: String,
    /// The previous replication id (a promoted replica's primary's) and
    /// the first offset it is *not* valid for (Redis's
    /// `second_replid_offset`).
    replid2: String,
    replid2_end: u64,
}

impl Ring {
    fn first(&self) -> u64 {
        self.end + 1 - self.len as u64
    }

    /// Empties the backlog (its offsets go on from `end`).
    fn clear(&mut self) {
        self.pieces.clear();
        self.skip = 0;
        self.len = 0;
    }

    /// Copies `bytes` in at the end: into the last own piece while it is
    /// under [`OWN_PIECE_BYTES`], else into a new one; a large record (a
    /// replica's link feeds whole records) as a piece kept or dropped
    /// whole, as the journal's shared ones are.
    fn push_bytes(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        if bytes.len() >= LARGE_RECORD_BYTES_MIN {
            return self.push_shared(&Arc::new(bytes.to_vec()));
        }
        match self.pieces.back_mut() {
            Some((_, Piece::Own(v))) if v.len() < OWN_PIECE_BYTES => v.extend_from_slice(bytes),
            _ => {
                let mut v = Vec::with_capacity(bytes.len().max(OWN_PIECE_BYTES));
                v.extend_from_slice(bytes);
                self.pieces.push_back((self.end + 1, Piece::Own(v)));
            }
        }
        self.len += bytes.len();
        self.end += bytes.len() as u64;
    }

    /// Keeps `chunk` at the end by reference.
    fn push_shared(&mut self, chunk: &SharedChunk) {
        if chunk.is_empty() {
            return;
        }
        self.pieces.push_back((self.end + 1, Piece::Shared(Arc::clone(chunk))));
        self.len += chunk.len();
        self.end += chunk.len() as u64;
    }

    /// Keeps a pending record's place at the end.
    fn push_pending(&mut self, record: &Arc<Pending>) {
        self.pieces.push_back((self.end + 1, Piece::Pending(Arc::clone(record))));
        self.len += record.len();
        self.end += record.len() as u64;
    }

    /// Drops what neither the backlog size nor a reader needs: whole
    /// pieces from the front, and the front of an own piece. A shared
    /// piece that straddles the line is kept whole while a reader within
    /// the limits still reads it, and dropped whole otherwise (module
    /// notes, "Large records in the backlog").
    fn trim(&mut self) {
        let needed = self.readers.iter().map(|&(_, next)| self.end + 1 - next.min(self.end + 1)).max().unwrap_or(0);
        let keep = (needed as usize).min(self.size.max(self.lag_max)).max(self.size);
        // Bounded: each round but the last drops a piece.
        while self.len > keep {
            let Some((at, front)) = self.pieces.front() else { break };
            let here = front.len() - self.skip;
            if self.len - here >= keep {
                self.pieces.pop_front();
                self.len -= here;
                self.skip = 0;
                continue;
            }
            match front {
                Piece::Own(_) => {
                    let drop = self.len - keep;
                    self.skip += drop;
                    self.len -= drop;
                }
                Piece::Shared(_) | Piece::Pending(_) => {
                    let (start, stop) = (*at, *at + front.len() as u64);
                    let read_now = self
                        .readers
                        .iter()
                        .any(|&(_, next)| (start..stop).contains(&next) && (self.end + 1 - next) as usize <= keep);
                    if !read_now {
                        self.pieces.pop_front();
                        self.len -= here;
                        self.skip = 0;
                    }
                }
            }
            break;
        }
    }

    /// The index of the piece holding offset `at` (`first() <= at <= end`)
    /// and where in its bytes `at` is.
    fn find(&self, at: u64) -> (usize, usize) {
        let i = self.pieces.partition_point(|(start, p)| start + p.len() as u64 <= at);
        (i, (at - self.pieces[i].0) as usize)
    }

    /// Bytes the backlog's pieces hold allocated (the kept ones, what
    /// trimming left in front of them, and spare capacity).
    #[cfg(test)]
    fn allocated(&self) -> usize {
        self.pieces
            .iter()
            .map(|(_, p)| match p {
                Piece::Own(v) => v.capacity(),
                Piece::Shared(c) => c.capacity(),
                Piece::Pending(p) => p.len(),
            })
            .sum()
    }
}

/// The stream's recent bytes and its readers: see the module notes.
#[derive(Debug)]
pub struct Backlog {
    ring: Mutex<Ring>,
    more: Condvar,
    /// The journal feeds the backlog (a primary with it active); a
    /// replica's link feeds it instead ([`Backlog::feed`]). Read on every
    /// journaled change, outside the mutex.
    journal_feeds: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What a replica's PSYNC gets ([`Backlog::attach`]).
#[derive(Debug, PartialEq, Eq)]
pub enum Attach {
    /// Continue from the offset it asked for, under this id.
    Continue { reader: ReaderId, replid: String },
    /// A full sync is needed.
    Full,
}

impl Backlog {
    /// An inactive backlog of `size` bytes under a new replication id.
    pub fn new(size: usize) -> Backlog {
        Backlog {
            ring: Mutex::new(Ring {
                pieces: VecDeque::new(),
                skip: 0,
                len: 0,
                end: 0,
                size: size.max(REPL_BACKLOG_BYTES_MIN),
                lag_max: REPLICA_LAG_BYTES_MAX_DEFAULT,
                readers: Vec::new(),
                next_reader: 1,
                sleeping: 0,
                active: false,
                following: false,
                replid: new_replid(),
                replid2: "0".repeat(REPLID_BYTES),
                replid2_end: 0,
            }),
            more: Condvar::new(),
            journal_feeds: AtomicBool::new(false),
        }
    }

    /// `master_replid`, `master_replid2`, `master_repl_offset`,
    /// `second_repl_offset` (Redis's INFO; -1 when there is no second id).
    pub fn ids(&self) -> (String, String, u64, i64) {
        let r = lock(&self.ring);
        let second = if r.replid2_end == 0 { -1 } else { r.replid2_end as i64 };
        (r.replid.clone(), r.replid2.clone(), r.end, second)
    }

    /// True once the backlog keeps the stream (a primary that had a
    /// replica, or any replica that synced).
    pub fn active(&self) -> bool {
        lock(&self.ring).active
    }

    /// `master_repl_offset`.
    pub fn offset(&self) -> u64 {
        lock(&self.ring).end
    }

    /// (`repl_backlog_active`, `repl_backlog_size`,
    /// `repl_backlog_first_byte_offset`, `repl_backlog_histlen`).
    pub fn backlog_info(&self) -> (bool, usize, u64, usize) {
        let r = lock(&self.ring);
        (r.active, r.size, r.first(), r.len)
    }

    /// `repl-backlog-size` (CONFIG SET): at least
    /// [`REPL_BACKLOG_BYTES_MIN`].
    pub fn set_size(&self, size: usize) {
        let mut r = lock(&self.ring);
        r.size = size.max(REPL_BACKLOG_BYTES_MIN);
        r.trim();
    }

    /// How far a connected replica may lag (bytes beyond the backlog).
    pub fn set_lag_max(&self, bytes: usize) {
        lock(&self.ring).lag_max = bytes;
    }

    /// True if journaled changes go into the backlog.
    #[inline]
    pub fn journal_feeds(&self) -> bool {
        self.journal_feeds.load(Ordering::Relaxed)
    }

    /// Appends stream bytes (from the journal on a primary, from the link
    /// on a replica); kept only while active.
    pub fn feed(&self, bytes: &[u8]) {
        self.feed_parts(&[Part::Bytes(bytes)]);
    }

    /// [`Backlog::feed`] of `parts` one after the other, as one piece (no
    /// other thread's bytes between them: one record given in parts); a
    /// shared part is kept by reference, not copied.
    pub fn feed_parts(&self, parts: &[Part<'_>]) {
        let mut r = lock(&self.ring);
        if !r.active {
            return;
        }
        for part in parts {
            match part {
                Part::Bytes(b) => r.push_bytes(b),
                Part::Shared(c) => r.push_shared(c),
                Part::Pending(p) => r.push_pending(p),
            }
        }
        LAST_FED.with(|c| c.set(r.end));
        r.trim();
        if r.sleeping > 0 {
            self.more.notify_all();
        }
    }

    /// A replica asks to continue `replid` from offset `want` (the next
    /// byte it needs): Redis's `masterTryPartialResynchronization`.
    pub fn attach(&self, replid: &str, want: u64) -> Attach {
        let mut r = lock(&self.ring);
        let ours = replid == r.replid || (replid == r.replid2 && want <= r.replid2_end);
        if !ours || !r.active || want < r.first() || want > r.end + 1 {
            return Attach::Full;
        }
        let id = r.next_reader;
        r.next_reader += 1;
        r.readers.push((id, want));
        Attach::Continue { reader: ReaderId(id), replid: r.replid.clone() }
    }

    /// The cut of a full sync: activates the backlog (a primary's journal
    /// feeds it from now on) and registers a reader from the next byte.
    /// Returns the replication id and offset the replica starts at.
    pub fn cut(&self) -> (String, u64, ReaderId) {
        let mut r = lock(&self.ring);
        r.active = true;
        if !r.following {
            self.journal_feeds.store(true, Ordering::Relaxed);
        }
        let id = r.next_reader;
        r.next_reader += 1;
        let next = r.end + 1;
        r.readers.push((id, next));
        (r.replid.clone(), r.end, ReaderId(id))
    }

    /// Copies the stream from `reader`'s place into `out` (at most `max`
    /// bytes), waiting up to `wait` for some; advances the reader. Err if
    /// the bytes it needs were dropped (it lagged past the limit).
    pub fn read(&self, reader: ReaderId, out: &mut Vec<u8>, max: usize, wait: Duration) -> Result<usize, Gone> {
        match self.read_next(reader, out, max, wait)? {
            Read::Copied(n) => Ok(n),
            Read::Shared(c, range) => {
                out.extend_from_slice(&c[range.clone()]);
                Ok(range.len())
            }
        }
    }

    /// The stream from `reader`'s place (at most `max` bytes), waiting up
    /// to `wait` for some; advances the reader. Small records are copied
    /// into `out`; a shared large record's bytes come back by reference
    /// (alone), for the sender to write without a copy. Err if the bytes
    /// the reader needs were dropped (it lagged past the limit).
    pub fn read_next(&self, reader: ReaderId, out: &mut Vec<u8>, max: usize, wait: Duration) -> Result<Read, Gone> {
        let mut r = lock(&self.ring);
        let Some(i) = r.readers.iter().position(|&(id, _)| id == reader.0) else { return Err(Gone) };
        if r.readers[i].1 > r.end && !wait.is_zero() {
            r.sleeping += 1;
            r = self.more.wait_timeout(r, wait).unwrap_or_else(|e| e.into_inner()).0;
            r.sleeping -= 1;
        }
        let Some(i) = r.readers.iter().position(|&(id, _)| id == reader.0) else { return Err(Gone) };
        let next = r.readers[i].1;
        if next < r.first() {
            r.readers.swap_remove(i);
            return Err(Gone);
        }
        if next > r.end || max == 0 {
            return Ok(Read::Copied(0));
        }
        let (mut p, mut within) = r.find(next);
        let shared = match &r.pieces[p].1 {
            Piece::Own(_) => None,
            Piece::Shared(c) => Some(Arc::clone(c)),
            Piece::Pending(pending) => match pending.get() {
                Some(c) => Some(c),
                None => {
                    // Its writer is framing it (`Backlog::filled` wakes
                    // us): nothing to send yet.
                    if !wait.is_zero() {
                        r.sleeping += 1;
                        r = self.more.wait_timeout(r, wait).unwrap_or_else(|e| e.into_inner()).0;
                        r.sleeping -= 1;
                    }
                    return Ok(Read::Copied(0));
                }
            },
        };
        if let Some(c) = shared {
            let n = (c.len() - within).min(max);
            r.readers[i].1 = next + n as u64;
            return Ok(Read::Shared(c, within..within + n));
        }
        // Own pieces up to `max` bytes or the next shared one. Bounded by
        // the pieces.
        let mut n = 0;
        while n < max && p < r.pieces.len() {
            let Piece::Own(v) = &r.pieces[p].1 else { break };
            let k = (v.len() - within).min(max - n);
            out.extend_from_slice(&v[within..within + k]);
            n += k;
            p += 1;
            within = 0;
        }
        r.readers[i].1 = next + n as u64;
        Ok(Read::Copied(n))
    }

    /// Asks every replica for an acknowledgement now (a GETACK record in
    /// the stream: WAIT, and an idle primary's ping). Only a primary's
    /// own stream takes one (a replica's mirrors its primary's bytes).
    pub fn request_acks(&self) {
        if self.journal_feeds() {
            let mut b = Vec::with_capacity(16);
            format::getack(&mut b);
            self.feed(&b);
        }
    }

    /// A pending record fed to the backlog was framed: wakes the readers
    /// waiting for it.
    pub(crate) fn filled(&self) {
        let r = lock(&self.ring);
        if r.sleeping > 0 {
            self.more.notify_all();
        }
    }

    /// The reader's replica disconnected.
    pub fn detach(&self, reader: ReaderId) {
        let mut r = lock(&self.ring);
        r.readers.retain(|&(id, _)| id != reader.0);
        r.trim();
        self.more.notify_all();
    }

    /// Wakes every reader (a role change, shutdown).
    pub fn wake_readers(&self) {
        let _r = lock(&self.ring);
        self.more.notify_all();
    }

    /// This node became a replica of a primary with `replid`, its stream
    /// at `offset` (after a full sync): the backlog restarts there, fed by
    /// the link, so that after a promotion this node can continue its own
    /// replicas from the same offsets (PSYNC2).
    pub fn follow(&self, replid: &str, offset: u64) {
        let mut r = lock(&self.ring);
        self.journal_feeds.store(false, Ordering::Relaxed);
        r.following = true;
        r.replid = replid.to_string();
        r.end = offset;
        r.clear();
        r.active = true;
        r.readers.clear();
        self.more.notify_all();
    }

    /// The primary continued this replica under a new id (`+CONTINUE
    /// <id>` after the primary's promotion): same offsets, new id.
    pub fn adopt_id(&self, replid: &str) {
        let mut r = lock(&self.ring);
        if r.replid != replid {
            r.replid2 = std::mem::replace(&mut r.replid, replid.to_string());
            r.replid2_end = r.end + 1;
        }
    }

    /// Restart (a state a clean shutdown saved, with the data it
    /// describes): the stream continues at `offset` under `replid`, so a
    /// replica that has everything up to there continues by PSYNC; the
    /// backlog itself starts empty. `following`: this node restarts as a
    /// replica (its link feeds the backlog).
    pub fn restore(&self, replid: &str, offset: u64, following: bool) {
        let mut r = lock(&self.ring);
        r.replid = replid.to_string();
        r.end = offset;
        r.clear();
        r.active = true;
        r.following = following;
        self.journal_feeds.store(!following, Ordering::Relaxed);
    }

    /// A replica stops following (its link is down or REPLICAOF changed)
    /// but keeps its id and offset for a partial resync.
    pub fn pause_feeding(&self) {
        let mut r = lock(&self.ring);
        r.following = true;
        self.journal_feeds.store(false, Ordering::Relaxed);
    }

    /// REPLICAOF NO ONE: this node's own changes continue the stream
    /// under a new id; the old one stays valid up to here (PSYNC2) when
    /// `continuable` (not when the stream so far was a redis-server
    /// primary's, which no replica of this node can continue).
    pub fn promote(&self, continuable: bool) {
        let mut r = lock(&self.ring);
        let old = std::mem::replace(&mut r.replid, new_replid());
        if continuable {
            r.replid2 = old;
            r.replid2_end = r.end + 1;
        }
        r.following = false;
        if r.active {
            self.journal_feeds.store(true, Ordering::Relaxed);
        }
    }
}

/// The journal that feeds the log (with persistence) and the backlog
/// (while a replica is or was attached) from one encoding of each change.
#[derive(Debug)]
pub struct StreamJournal {
    log: Option<Arc<Log>>,
    backlog: Arc<Backlog>,
}

impl StreamJournal {
    /// A journal for `log` (if any) and `backlog`.
    pub fn new(log: Option<Arc<Log>>, backlog: Arc<Backlog>) -> StreamJournal {
        StreamJournal { log, backlog }
    }
}

/// The stream offset just past the last record the calling thread fed
/// (WAIT waits for its connection's last write: the server compares this
/// before and after a connection's commands).
pub fn last_fed_here() -> u64 {
    LAST_FED.with(|c| c.get())
}

thread_local! {
    /// See [`last_fed_here`].
    static LAST_FED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Where a change is encoded when only the backlog takes it.
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The scratch buffer is freed rather than kept past this (a large
/// value).
const SCRATCH_KEEP_BYTES: usize = 64 << 10;

impl Journal for StreamJournal {
    fn record_large(&self, it: ItemRef<'_>) -> bool {
        let stream = self.backlog.journal_feeds();
        let place = |p: &Arc<Pending>| {
            if stream {
                self.backlog.feed_parts(&[Part::Pending(p)]);
            }
        };
        crate::deferred::record_large(self.log.as_deref(), stream, place, it, |c| self.record(c))
    }

    fn fill(&self, it: ItemRef<'_>) {
        crate::deferred::fill(it);
        self.backlog.filled();
    }

    fn record(&self, change: Change<'_>) {
        let stream = self.backlog.journal_feeds();
        if self.log.is_none() && !stream {
            return;
        }
        if let Change::Put(it) = &change {
            if let Some((value, crc)) = crate::staged::take_for(it) {
                // The record as its head and its value (`staged.rs`): the
                // stream takes both, byte for byte the one record, the
                // value by reference, shared with the log's chunk.
                let mut head = Vec::new();
                format::put_head(&mut head, it, crc);
                let value = Arc::new(value);
                if stream {
                    self.backlog.feed_parts(&[Part::Bytes(&head), Part::Shared(&value)]);
                }
                if let Some(log) = &self.log {
                    log.append_staged(&head, value);
                }
                return;
            }
        }
        match &self.log {
            Some(log) => log.append_then(
                |b| crate::encode_change(b, change),
                |framed| {
                    if stream {
                        match framed {
                            Framed::Small(b) => self.backlog.feed(b),
                            // The log's own chunk: no second copy.
                            Framed::Large(c) => self.backlog.feed_parts(&[Part::Shared(c)]),
                        }
                    }
                },
            ),
            None => SCRATCH.with_borrow_mut(|b| {
                b.clear();
                crate::encode_change(b, change);
                if b.len() >= LARGE_RECORD_BYTES_MIN {
                    // Framed once, then kept by reference.
                    let record = Arc::new(std::mem::take(b));
                    self.backlog.feed_parts(&[Part::Shared(&record)]);
                } else {
                    self.backlog.feed(b);
                }
                if b.capacity() > SCRATCH_KEEP_BYTES {
                    *b = Vec::new();
                }
            }),
        }
    }
}

/// The full sync's snapshot sink: a buffer the snapshot thread writes out
/// between steps (writers append to it under their bucket lock).
struct SyncSink(Mutex<Vec<u8>>);

impl SnapshotSink for SyncSink {
    fn item(&self, it: ItemRef<'_>) {
        format::put(&mut lock(&self.0), &it);
    }
}

/// What a full sync sent.
#[derive(Debug, Clone)]
pub struct FullSync {
    /// The replication id and offset the replica starts from.
    pub replid: String,
    pub offset: u64,
    /// Its reader in the backlog (the stream from `offset + 1`).
    pub reader: ReaderId,
    /// Items and buckets of the snapshot.
    pub stats: SnapshotStats,
    /// Bytes written.
    pub bytes: u64,
}

/// Streams a full sync of `store` into `out` (module notes): at the cut,
/// `preamble(replid, offset)`'s bytes, then the snapshot header, the
/// items and an END record. `cpu_percent` paces the cursor as a
/// background snapshot is (100: unpaced). On a write error the snapshot
/// still finishes (the engine's cursor cannot stop halfway) and the error
/// is returned, the reader detached.
pub fn full_sync(
    store: &Store,
    backlog: &Backlog,
    out: &mut dyn Write,
    preamble: &dyn Fn(&str, u64) -> Vec<u8>,
    cpu_percent: u32,
) -> std::io::Result<FullSync> {
    let sink = Arc::new(SyncSink(Mutex::new(Vec::with_capacity(SYNC_WRITE_BYTES + 4096))));
    let mut cut: Option<(String, u64, ReaderId)> = None;
    let mut error: Option<std::io::Error> = None;
    let mut bytes = 0u64;
    let mut send = |force: bool, error: &mut Option<std::io::Error>, bytes: &mut u64| {
        let chunk = {
            let mut b = lock(&sink.0);
            if b.is_empty() || (!force && b.len() < SYNC_WRITE_BYTES) {
                return;
            }
            std::mem::take(&mut *b)
        };
        if error.is_none() {
            match out.write_all(&chunk) {
                Ok(()) => *bytes += chunk.len() as u64,
                Err(e) => *error = Some(e),
            }
        }
    };
    let mut step_start = std::time::Instant::now();
    let stats = {
        let sink_dyn: Arc<dyn SnapshotSink> = sink.clone();
        store.snapshot_paced(
            sink_dyn,
            || {
                let (replid, offset, reader) = backlog.cut();
                let created = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .unwrap_or(0);
                let mut b = lock(&sink.0);
                b.extend_from_slice(&preamble(&replid, offset));
                b.extend_from_slice(&format::snap_header(0, created));
                cut = Some((replid, offset, reader));
            },
            &mut || {
                send(true, &mut error, &mut bytes);
                if (1..100).contains(&cpu_percent) {
                    let worked = step_start.elapsed();
                    std::thread::sleep(worked.mul_f64(f64::from(100 - cpu_percent) / f64::from(cpu_percent)));
                }
                step_start = std::time::Instant::now();
            },
        )
    };
    let Some((replid, offset, reader)) = cut else {
        return Err(std::io::Error::other("the snapshot's cut did not run"));
    };
    format::end(&mut lock(&sink.0), stats.items);
    send(true, &mut error, &mut bytes);
    if let Some(e) = error {
        backlog.detach(reader);
        return Err(e);
    }
    out.flush()?;
    Ok(FullSync { replid, offset, reader, stats, bytes })
}

/// Applies a primary's full sync and stream to a replica's store (module
/// notes).
#[derive(Debug)]
pub struct Applier {
    store: Arc<Store>,
    thresholds: amalgam_types::Thresholds,
    /// Added to every CAS unique and fence from the primary.
    cas_shift: u64,
    /// Records applied.
    pub applied: u64,
    /// Records skipped with a warning (logged).
    pub skipped: u64,
}

impl Applier {
    /// Before a full sync: empties the store (a flush, journaled like any
    /// other, if it holds anything) and fixes the CAS shift at its flush
    /// fence (0 for a store never flushed: the primary's CAS uniques as
    /// they are).
    pub fn begin_full_sync(store: Arc<Store>, thresholds: amalgam_types::Thresholds) -> Applier {
        if !store.is_empty() {
            store.flush_all();
        }
        let cas_shift = store.flush_fence();
        Applier { store, thresholds, cas_shift, applied: 0, skipped: 0 }
    }

    /// Continuing a stream this store already holds (a former primary,
    /// or a replica that loaded it before): no flush, no CAS shift.
    /// `cas_shift`: the one the stream's first full sync chose (0 for a
    /// former primary).
    pub fn continuing(store: Arc<Store>, thresholds: amalgam_types::Thresholds, cas_shift: u64) -> Applier {
        Applier { store, thresholds, cas_shift, applied: 0, skipped: 0 }
    }

    /// The CAS shift (saved with the replication state at shutdown).
    pub fn cas_shift(&self) -> u64 {
        self.cas_shift
    }

    /// One record of the full sync or the stream. True at the snapshot's
    /// END record (the stream follows).
    pub fn apply(&mut self, rec: Record<'_>) -> bool {
        let s = self.cas_shift;
        let shifted = match rec {
            Record::End { .. } => return true,
            Record::Put { key, value, flags, expiry, cas } => {
                Record::Put { key, value, flags, expiry, cas: cas.saturating_add(s) }
            }
            Record::PutTyped { key, tag, value, flags, expiry, cas } => {
                Record::PutTyped { key, tag, value, flags, expiry, cas: cas.saturating_add(s) }
            }
            Record::Meta { key, flags, expiry, cas } => Record::Meta { key, flags, expiry, cas: cas.saturating_add(s) },
            Record::Flush { fence_cas } => Record::Flush { fence_cas: fence_cas.saturating_add(s) },
            r => r,
        };
        if matches!(shifted, Record::GetAck) {
            return false;
        }
        match recover::apply_record(&self.store, shifted, &self.thresholds) {
            Ok(()) => self.applied += 1,
            Err(w) => {
                log::warn!("replication: {w}");
                self.skipped += 1;
            }
        }
        false
    }
}

/// Parses a full sync's snapshot header (after the preamble): Err if it
/// is not one.
pub fn read_sync_header(h: &[u8]) -> Result<(), String> {
    format::parse_header(h, format::SNAP_MAGIC).map(|_| ())
}

/// Bytes of a full sync's snapshot header.
pub const SYNC_HEADER_BYTES: usize = format::SNAP_HEADER_BYTES;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_gets_every_byte_after_its_place_and_a_late_one_is_gone() {
        let b = Backlog::new(REPL_BACKLOG_BYTES_MIN);
        b.set_lag_max(0);
        b.feed(b"ignored while inactive");
        assert_eq!(b.offset(), 0);
        let (id, offset, reader) = b.cut();
        assert_eq!((id.len(), offset), (REPLID_BYTES, 0));
        b.feed(b"hello ");
        b.feed(b"world");
        let mut out = Vec::new();
        assert_eq!(b.read(reader, &mut out, 3, Duration::ZERO), Ok(3));
        assert_eq!(b.read(reader, &mut out, 100, Duration::ZERO), Ok(8));
        assert_eq!(out, b"hello world");
        assert_eq!(b.read(reader, &mut out, 100, Duration::ZERO), Ok(0));
        // A partial resync from inside the backlog, or from just past its
        // end (caught up), continues; past that, or under another id, not.
        assert!(matches!(b.attach(&id, 7), Attach::Continue { .. }));
        assert!(matches!(b.attach(&id, 12), Attach::Continue { .. }));
        assert_eq!(b.attach(&id, 13), Attach::Full);
        assert_eq!(b.attach(&new_replid(), 7), Attach::Full);
        // Past the backlog (and no lag allowance), the start is gone, and
        // so is a reader that did not keep up.
        let (_, _, slow) = b.cut();
        let big = vec![b'x'; 2 * REPL_BACKLOG_BYTES_MIN];
        b.feed(&big);
        assert_eq!(b.attach(&id, 1), Attach::Full);
        assert_eq!(b.read(slow, &mut out, 1, Duration::ZERO), Err(Gone));
    }

    #[test]
    fn the_backlog_gives_back_what_a_lagging_reader_made_it_grow_to() {
        let b = Backlog::new(REPL_BACKLOG_BYTES_MIN);
        let (_, _, reader) = b.cut();
        let chunk = vec![b'x'; 256 << 10];
        for _ in 0..64 {
            b.feed(&chunk);
        }
        // The reader lags: 16 MiB are kept for it.
        assert!(lock(&b.ring).allocated() >= 16 << 20);
        let mut out = Vec::new();
        while b.read(reader, &mut out, SEND_CHUNK_BYTES, Duration::ZERO) != Ok(0) {
            out.clear();
        }
        b.feed(b"one more");
        let r = lock(&b.ring);
        assert_eq!(r.len, REPL_BACKLOG_BYTES_MIN, "the backlog's own size is kept");
        assert!(
            r.allocated() <= chunk.len() + OWN_PIECE_BYTES,
            "{} bytes allocated after the reader caught up",
            r.allocated()
        );
    }

    /// A chunk of `len` bytes, not one byte repeated.
    fn chunk(len: usize, seed: u8) -> SharedChunk {
        Arc::new((0..len).map(|i| (i as u8).wrapping_mul(31) ^ seed).collect())
    }

    #[test]
    fn a_shared_record_is_streamed_by_reference_and_counted_whole() {
        let b = Backlog::new(REPL_BACKLOG_BYTES_MIN);
        let (_, start, reader) = b.cut();
        let big = chunk(3 * REPL_BACKLOG_BYTES_MIN, 7);
        b.feed(b"head:");
        b.feed_parts(&[Part::Bytes(b"[")]);
        b.feed_parts(&[Part::Shared(&big), Part::Bytes(b"]")]);
        assert_eq!(b.offset(), start + 6 + big.len() as u64 + 1);
        // Counted whole: the histlen and offsets say every byte is here
        // (the reader needs them all), and nothing was copied.
        let (_, _, first, histlen) = b.backlog_info();
        assert_eq!((first, histlen), (start + 1, 6 + big.len() + 1));
        assert_eq!(Arc::strong_count(&big), 2, "held by reference");
        // The sender gets the small bytes copied, then the record's
        // bytes from the chunk itself, then the rest.
        let mut out = Vec::new();
        assert!(matches!(b.read_next(reader, &mut out, 1 << 20, Duration::ZERO), Ok(Read::Copied(6))));
        assert_eq!(out, b"head:[");
        let mut got = out.clone();
        // Bounded: the record is 48 KiB, read 10 KiB at a time.
        for _ in 0..big.len() {
            out.clear();
            match b.read_next(reader, &mut out, 10_000, Duration::ZERO).unwrap() {
                Read::Shared(c, range) => {
                    assert!(Arc::ptr_eq(&c, &big));
                    got.extend_from_slice(&c[range]);
                }
                Read::Copied(0) => break,
                Read::Copied(_) => got.extend_from_slice(&out),
            }
        }
        let mut want = b"head:[".to_vec();
        want.extend_from_slice(&big);
        want.push(b']');
        assert_eq!(got, want);
        // Read: the line (16 KiB) falls inside the record, which nobody
        // reads any more: dropped whole, history shorter than the size.
        b.feed(b"!");
        let (_, _, first, histlen) = b.backlog_info();
        assert_eq!((first, histlen), (b.offset() - 1, 2), "only what follows the record is kept");
        assert_eq!(Arc::strong_count(&big), 1, "released");
    }

    #[test]
    fn a_shared_record_being_read_is_kept_whole_and_one_past_the_limit_drops_its_reader() {
        let b = Backlog::new(REPL_BACKLOG_BYTES_MIN);
        b.set_lag_max(4 * REPL_BACKLOG_BYTES_MIN);
        let (_, _, reader) = b.cut();
        let big = chunk(3 * REPL_BACKLOG_BYTES_MIN, 1);
        b.feed_parts(&[Part::Shared(&big)]);
        let mut out = Vec::new();
        let Ok(Read::Shared(_, r)) = b.read_next(reader, &mut out, 2 * REPL_BACKLOG_BYTES_MIN, Duration::ZERO) else {
            panic!("not shared")
        };
        assert_eq!(r, 0..2 * REPL_BACKLOG_BYTES_MIN);
        // The reader is inside the record: past the backlog's size, the
        // record stays whole (the reader is within the lag limit).
        b.feed(&[b'x'; REPL_BACKLOG_BYTES_MIN]);
        let (_, _, _, histlen) = b.backlog_info();
        assert_eq!(histlen, 4 * REPL_BACKLOG_BYTES_MIN);
        assert!(matches!(b.read_next(reader, &mut out, usize::MAX, Duration::ZERO), Ok(Read::Shared(..))));
        // A record longer than the lag limit drops a reader that must
        // read it, as Redis drops a replica past its output buffer limit.
        let huge = chunk(5 * REPL_BACKLOG_BYTES_MIN, 2);
        b.feed_parts(&[Part::Shared(&huge)]);
        assert_eq!(b.read_next(reader, &mut out, 1, Duration::ZERO).err(), Some(Gone));
        assert_eq!(Arc::strong_count(&big), 1, "dropped whole");
    }

    #[test]
    fn a_pending_record_is_sent_once_filled_and_nothing_after_it_before() {
        let b = Backlog::new(REPL_BACKLOG_BYTES_MIN);
        let (_, start, reader) = b.cut();
        let p = Arc::new(Pending::new(2 * REPL_BACKLOG_BYTES_MIN));
        b.feed(b"a");
        b.feed_parts(&[Part::Pending(&p)]);
        b.feed(b"z");
        // Offsets are taken at once.
        assert_eq!(b.offset(), start + 2 + p.len() as u64);
        let mut out = Vec::new();
        assert!(matches!(b.read_next(reader, &mut out, 100, Duration::ZERO), Ok(Read::Copied(1))));
        // Unfilled: nothing more, not even the byte after it.
        assert!(matches!(b.read_next(reader, &mut out, 100, Duration::ZERO), Ok(Read::Copied(0))));
        assert_eq!(out, b"a");
        let bytes = chunk(p.len(), 3);
        p.fill(Arc::clone(&bytes));
        b.filled();
        let Ok(Read::Shared(c, range)) = b.read_next(reader, &mut out, usize::MAX, Duration::ZERO) else {
            panic!("not shared once filled")
        };
        assert!(Arc::ptr_eq(&c, &bytes) && range == (0..bytes.len()));
        out.clear();
        assert!(matches!(b.read_next(reader, &mut out, 100, Duration::ZERO), Ok(Read::Copied(1))));
        assert_eq!(out, b"z");
    }

    #[test]
    fn a_promoted_replica_continues_its_old_primarys_id() {
        let b = Backlog::new(REPL_BACKLOG_BYTES_MIN);
        let old = new_replid();
        b.follow(&old, 1000);
        b.feed(b"abc");
        assert_eq!(b.offset(), 1003);
        b.promote(true);
        let (id, id2, off, second) = b.ids();
        assert_ne!(id, old);
        assert_eq!((id2.as_str(), off, second), (old.as_str(), 1003, 1004));
        assert!(b.journal_feeds());
        assert!(matches!(b.attach(&old, 1002), Attach::Continue { .. }));
        assert!(matches!(b.attach(&id, 1004), Attach::Continue { .. }));
    }
}
