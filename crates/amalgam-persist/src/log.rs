//! The append-only log and its group commit.
//!
//! # Appending
//!
//! The engine calls [`Log::append`] (through the `Journal` impl in
//! `lib.rs`) under the changed key's bucket lock, so one key's records
//! enter the buffer in the order its changes were made. The record is
//! framed and checksummed in a per-thread scratch buffer first; appending
//! is then one memcpy into a shared buffer under a short mutex (`buf`),
//! which assigns the record its sequence number. No I/O happens under a
//! bucket lock.
//!
//! # Large records
//!
//! A record of [`LARGE_RECORD_BYTES_MIN`] or more (a large value's PUT) is
//! not copied into the shared buffer: the scratch buffer it was framed in
//! becomes a chunk of its own, queued after the small records buffered
//! before it (`Buf::sealed`), and the commit writes the chunks in order.
//! So the value is copied once on its way to the disk (item → record,
//! under its bucket lock, with the CRC, as Redis copies the command into
//! its AOF buffer), never under the mutex every writer takes; and for a
//! value received in place not even that: its record was built while it
//! arrived, a read at a time (`staged.rs`, [`Log::append_staged`]).
//! A chunk is a [`SharedChunk`]: with replicas attached the replication
//! backlog holds the same bytes (`repl.rs`, "Large records in the
//! backlog"), so neither copies the record from the other.
//!
//! Writing a 512 MB record takes seconds on a loaded machine (the page
//! cache's dirty-page throttling makes write(2) wait for the disk), so a
//! commit that would write one is not made on a worker: while
//! [`LARGE_RECORD_BYTES_MIN`] or more is unwritten ([`Log::large_unwritten`]),
//! [`Log::commit`] answers [`Commit::Deferred`] and the worker hands the
//! commit to the committer thread under every policy, parking the replies
//! that wait for it exactly as `always` parks them (`lib.rs`,
//! `Persistence::commit`). A reply is still sent only once its records are
//! written, so a crash of the process loses nothing acknowledged under
//! `everysec` and `no` either. Records stay in sequence order in the file
//! whoever writes them (one writer at a time, under `io`, and chunks in
//! append order), so one key's records stay in order; writes journaled
//! after a large record are acknowledged once it is written too (their
//! records follow it), while replies that wait for no record (reads,
//! PING) go out at once.
//!
//! One race is left open: a worker that found the log small and then waits
//! for `io` while the committer writes a large record that was appended in
//! between waits for that write (a window of microseconds per commit).
//!
//! # Group commit
//!
//! A server worker, after executing a batch of requests and before
//! sending their replies, calls [`Log::commit`] with the highest sequence
//! number its thread appended. I/O is serialized by a second mutex (`io`):
//! the thread that holds it takes *everything* buffered so far, writes it
//! with one write(2) and, under `--fsync always`, one fdatasync(2). Threads
//! that arrive meanwhile wait on `io`; when they get it, the previous
//! holder's fsync usually covered them already and they return at once,
//! otherwise they write and sync everything that accumulated while they
//! waited. So one fsync covers every write that arrived during the
//! previous one, across connections and workers: the classic group commit
//! (and what Redis's always-fsync does once per event-loop iteration).
//!
//! Under `everysec` and `no`, commit writes without syncing, so a crash of
//! the process loses nothing acknowledged (the bytes are in the kernel);
//! a background thread fsyncs once a second (`everysec`, on a duplicate of
//! the file so writers never wait for it), and only a crash of the machine
//! can lose up to about two seconds, as with Redis's appendfsync everysec.
//!
//! # Rotation
//!
//! [`Log::rotate`] (at a snapshot's cut) writes out the buffer, syncs the
//! old segment, and starts a new one whose first record is the next
//! sequence number; that number is the snapshot's `log_seq`. Records
//! appended while it runs stay in the buffer and go to the new segment.

use std::cell::{Cell, RefCell};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::format;
use crate::stall::{Stall, StallWatcher, Timing};

/// How often `everysec` syncs.
pub const EVERYSEC_PERIOD: std::time::Duration = std::time::Duration::from_secs(1);
/// A buffer above this after a write is shrunk back (one burst must not
/// pin its memory forever).
const BUF_KEEP_BYTES: usize = 4 << 20;
/// A thread's scratch buffer above this after a record (a large value) is
/// freed rather than kept.
const SCRATCH_KEEP_BYTES: usize = 64 << 10;
/// A record at least this long is a chunk of its own, never copied into
/// the shared buffer, and while this many bytes are unwritten a worker's
/// commit is left to the committer thread (module notes, "Large records"):
/// at a megabyte the write(2) of the chunk is about a millisecond, the
/// longest a worker should spend in one.
pub const LARGE_RECORD_BYTES_MIN: usize = 1 << 20;

/// A large record's bytes (or a staged value's, the rest of its record),
/// shared without a copy by the log's buffer, until it is written, and
/// the replication backlog, while it keeps them (module notes, "Large
/// records"). Never changed once shared.
pub type SharedChunk = Arc<Vec<u8>>;

/// A large record whose place is taken (in the log's order and the
/// backlog's offsets) before its bytes exist: the journal takes it under
/// the key's bucket lock and frames the bytes once the lock is released
/// (`repl.rs`, [`crate::repl::StreamJournal`]'s `record_large`; engine
/// `Journal::record_large`). Whoever needs the bytes first waits for them
/// ([`Pending::wait`]): the writer fills it right after unlocking, with no
/// lock of the log's or the backlog's held, so the wait is one copy long.
#[derive(Debug)]
pub struct Pending {
    len: usize,
    bytes: Mutex<Option<SharedChunk>>,
    ready: std::sync::Condvar,
}

impl Pending {
    /// A record of `len` bytes, to come.
    pub(crate) fn new(len: usize) -> Pending {
        Pending { len, bytes: Mutex::new(None), ready: std::sync::Condvar::new() }
    }

    /// The record's length (known from the start).
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The bytes, if framed yet.
    pub(crate) fn get(&self) -> Option<SharedChunk> {
        lock(&self.bytes).clone()
    }

    /// The bytes, once framed.
    pub(crate) fn wait(&self) -> SharedChunk {
        let mut b = lock(&self.bytes);
        // Bounded: the writer that took the place frames it right after
        // releasing its bucket lock (module notes of `Pending`).
        loop {
            if let Some(c) = &*b {
                return Arc::clone(c);
            }
            b = self.ready.wait(b).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Sets the bytes (once; exactly `len` of them).
    pub(crate) fn fill(&self, bytes: SharedChunk) {
        assert_eq!(bytes.len(), self.len, "a pending record filled with another length");
        *lock(&self.bytes) = Some(bytes);
        self.ready.notify_all();
    }
}

/// A chunk of the log's buffer: bytes, or a large record's place whose
/// bytes are being framed ([`Pending`]).
#[derive(Debug)]
enum Chunk {
    Ready(SharedChunk),
    Pending(Arc<Pending>),
}

impl Chunk {
    fn len(&self) -> usize {
        match self {
            Chunk::Ready(c) => c.len(),
            Chunk::Pending(p) => p.len(),
        }
    }
}

/// A record as [`Log::append_then`] gives it to its caller once appended.
#[derive(Debug)]
pub(crate) enum Framed<'a> {
    /// A small record's bytes (still in the thread's scratch buffer).
    Small(&'a [u8]),
    /// A large record: the chunk the log queued.
    Large(&'a SharedChunk),
}

/// What a worker's [`Log::commit`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Commit {
    /// The calling thread's records are secured as the policy promises.
    Done,
    /// A large record is unwritten: the commit is left to the committer
    /// thread (module notes, "Large records"); nothing was written.
    Deferred,
}

/// When the log reaches the disk (Redis's appendfsync).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Fsync {
    /// fdatasync before a write is acknowledged (group commit).
    Always,
    /// write(2) before the reply, fdatasync once a second.
    EverySec,
    /// write(2) before the reply; the OS syncs when it likes.
    No,
}

impl std::str::FromStr for Fsync {
    type Err = String;
    fn from_str(s: &str) -> Result<Fsync, String> {
        match s {
            "always" => Ok(Fsync::Always),
            "everysec" => Ok(Fsync::EverySec),
            "no" => Ok(Fsync::No),
            _ => Err(format!("fsync policy must be always, everysec or no, not {s:?}")),
        }
    }
}

thread_local! {
    /// The last sequence number this thread appended (what its commit
    /// must cover).
    static LAST_APPENDED: Cell<u64> = const { Cell::new(0) };
    /// Where this thread frames a record before copying it into the
    /// shared buffer.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

struct Buf {
    /// Records that come before `bytes`, in order: each large record as a
    /// chunk of its own, and the small ones buffered before it.
    sealed: Vec<Chunk>,
    /// Small records (after every chunk of `sealed`).
    bytes: Vec<u8>,
    /// Sequence number of the last record appended (0: none yet).
    last_seq: u64,
}

struct Io {
    file: Arc<File>,
    /// Bytes of the segment that hold whole records.
    len: u64,
    /// Records up to here are in the file (written, maybe not synced).
    written_seq: u64,
    /// A spare buffer swapped with `Buf::bytes` so appends never wait for
    /// an allocation while a write runs.
    spare: Vec<u8>,
}

/// The log: see the module notes.
pub struct Log {
    dir: PathBuf,
    /// The fsync policy ([`Fsync`] as a byte: `Log::set_policy`), read on
    /// every commit check. Release on change, acquire on read: a worker
    /// that sees `always` checks its reply against `durable`, and the
    /// switch's own sync (`Persistence::set_fsync`) follows the store.
    policy: AtomicU8,
    buf: Mutex<Buf>,
    io: Mutex<Io>,
    /// Bytes appended and not yet written (buffered or being written):
    /// large ones send a worker's commit to the committer thread.
    unwritten: AtomicUsize,
    /// Records up to here are written / durable (mirrors for fast checks).
    written: AtomicU64,
    durable: AtomicU64,
    /// The last sequence number before the last snapshot's cut (changes
    /// since = last_seq - this: the snapshot trigger). Kept out of the
    /// append path, which then touches one shared line (the buffer's).
    cut_seq: AtomicU64,
    /// Set after an I/O error, cleared by the next success.
    failing: AtomicBool,
    /// Who times the log's writes and fsyncs (`stall.rs`), once set.
    watcher: std::sync::OnceLock<Arc<dyn StallWatcher<Stall>>>,
    /// Counters for INFO / stats.
    pub(crate) fsyncs: AtomicU64,
    pub(crate) writes: AtomicU64,
}

impl std::fmt::Debug for Log {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Log").field("dir", &self.dir).field("policy", &self.policy()).finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Creates a new segment whose first record will be `first_seq`, with its
/// header, and syncs it and the directory.
fn create_segment(dir: &Path, first_seq: u64) -> std::io::Result<File> {
    let path = dir.join(format::log_name(first_seq));
    let mut f = OpenOptions::new().create(true).write(true).truncate(true).open(&path)?;
    f.write_all(&format::log_header(first_seq))?;
    // Appends from here on (see `write_locked`'s error path).
    let f = OpenOptions::new().append(true).open(&path)?;
    f.sync_all()?;
    sync_dir(dir)?;
    Ok(f)
}

/// fsync of a directory, so a created or renamed file's name is durable.
pub(crate) fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

impl Log {
    /// Starts a new segment in `dir` whose first record will be
    /// `next_seq` (recovery has read everything before it).
    pub fn create(dir: &Path, policy: Fsync, next_seq: u64) -> std::io::Result<Log> {
        let file = create_segment(dir, next_seq)?;
        let last = next_seq - 1;
        Ok(Log {
            dir: dir.to_path_buf(),
            policy: AtomicU8::new(policy as u8),
            buf: Mutex::new(Buf { sealed: Vec::new(), bytes: Vec::new(), last_seq: last }),
            unwritten: AtomicUsize::new(0),
            io: Mutex::new(Io {
                file: Arc::new(file),
                len: format::LOG_HEADER_BYTES as u64,
                written_seq: last,
                spare: Vec::new(),
            }),
            written: AtomicU64::new(last),
            durable: AtomicU64::new(last),
            cut_seq: AtomicU64::new(last),
            failing: AtomicBool::new(false),
            watcher: std::sync::OnceLock::new(),
            fsyncs: AtomicU64::new(0),
            writes: AtomicU64::new(0),
        })
    }

    /// Installs the watcher of the log's steps (`stall.rs`); Err if one
    /// is installed already.
    pub fn set_stall_watcher(&self, w: Arc<dyn StallWatcher<Stall>>) -> Result<(), Arc<dyn StallWatcher<Stall>>> {
        self.watcher.set(w)
    }

    pub(crate) fn watcher(&self) -> Option<&dyn StallWatcher<Stall>> {
        self.watcher.get().map(|w| &**w)
    }

    /// The fsync policy.
    pub fn policy(&self) -> Fsync {
        match self.policy.load(Ordering::Acquire) {
            x if x == Fsync::Always as u8 => Fsync::Always,
            x if x == Fsync::EverySec as u8 => Fsync::EverySec,
            _ => Fsync::No,
        }
    }

    /// Changes the policy at run time (`Persistence::set_fsync` says what
    /// else a switch to or from `always` needs).
    pub fn set_policy(&self, policy: Fsync) {
        self.policy.store(policy as u8, Ordering::Release);
    }

    /// Appends one record: `encode` frames it (and computes its CRC) in
    /// this thread's scratch buffer, outside any lock; the shared buffer's
    /// mutex is then held only for one memcpy and the sequence number (for
    /// a record of [`LARGE_RECORD_BYTES_MIN`] or more, not even that: the
    /// scratch buffer is queued as a chunk of its own).
    pub fn append(&self, encode: impl FnOnce(&mut Vec<u8>)) {
        self.append_then(encode, |_| {});
    }

    /// [`Log::append`], then `then` with the record as appended (the
    /// replication backlog's feed: a large record's chunk is shared with
    /// it, not copied).
    pub(crate) fn append_then(&self, encode: impl FnOnce(&mut Vec<u8>), then: impl FnOnce(Framed<'_>)) {
        SCRATCH.with_borrow_mut(|scratch| {
            scratch.clear();
            encode(scratch);
            let len = scratch.len();
            let large = (len >= LARGE_RECORD_BYTES_MIN).then(|| Arc::new(std::mem::take(scratch)));
            let seq = {
                let mut b = lock(&self.buf);
                if let Some(chunk) = &large {
                    // A large record (a large value) is handed over, not
                    // copied again under the mutex every writer takes;
                    // the small records before it go first.
                    if !b.bytes.is_empty() {
                        let small = std::mem::take(&mut b.bytes);
                        b.sealed.push(Chunk::Ready(Arc::new(small)));
                    }
                    b.sealed.push(Chunk::Ready(Arc::clone(chunk)));
                } else {
                    b.bytes.extend_from_slice(scratch);
                }
                // Under the mutex: a write takes the bytes it counts off.
                self.unwritten.fetch_add(len, Ordering::Relaxed);
                b.last_seq += 1;
                b.last_seq
            };
            LAST_APPENDED.with(|c| c.set(seq));
            match &large {
                Some(chunk) => then(Framed::Large(chunk)),
                None => then(Framed::Small(scratch)),
            }
            if scratch.capacity() > SCRATCH_KEEP_BYTES {
                *scratch = Vec::new();
            }
        });
    }

    /// Appends one record given as its head (`format::put_head`) and its
    /// value's bytes (`staged.rs`), without copying the value: the head
    /// closes the small records' buffer and the value is a chunk of its
    /// own (shared with the replication backlog, when it takes it too), so
    /// the two are written one after the other.
    pub fn append_staged(&self, head: &[u8], value: SharedChunk) {
        let len = head.len() + value.len();
        let seq = {
            let mut b = lock(&self.buf);
            let mut small = std::mem::take(&mut b.bytes);
            small.extend_from_slice(head);
            b.sealed.push(Chunk::Ready(Arc::new(small)));
            b.sealed.push(Chunk::Ready(value));
            self.unwritten.fetch_add(len, Ordering::Relaxed);
            b.last_seq += 1;
            b.last_seq
        };
        LAST_APPENDED.with(|c| c.set(seq));
    }

    /// Appends a large record whose bytes come later ([`Pending`]): its
    /// place in the log's order is taken now (the small records before it
    /// go first); a write that reaches it waits for its bytes.
    pub(crate) fn append_pending(&self, record: &Arc<Pending>) {
        let seq = {
            let mut b = lock(&self.buf);
            if !b.bytes.is_empty() {
                let small = std::mem::take(&mut b.bytes);
                b.sealed.push(Chunk::Ready(Arc::new(small)));
            }
            b.sealed.push(Chunk::Pending(Arc::clone(record)));
            self.unwritten.fetch_add(record.len(), Ordering::Relaxed);
            b.last_seq += 1;
            b.last_seq
        };
        LAST_APPENDED.with(|c| c.set(seq));
    }

    /// The last sequence number appended by the calling thread.
    pub fn last_appended_here() -> u64 {
        LAST_APPENDED.with(|c| c.get())
    }

    /// Records secured as the policy promises: durable (`always`) or
    /// written (`everysec`, `no`). A reply that follows a record with a
    /// higher sequence number must wait.
    #[inline]
    pub fn committed(&self) -> u64 {
        let done = if self.policy() == Fsync::Always { &self.durable } else { &self.written };
        done.load(Ordering::Acquire)
    }

    /// Secures everything appended so far (the committer thread's step).
    pub fn commit_all(&self) -> std::io::Result<()> {
        self.write_out(self.last_seq())
    }

    /// True if the calling thread appended records not yet written
    /// (`no`, `everysec`) or not yet durable (`always`).
    #[inline]
    pub fn needs_commit(&self) -> bool {
        self.committed() < Self::last_appended_here()
    }

    /// True while [`LARGE_RECORD_BYTES_MIN`] or more is appended and not
    /// yet written (module notes, "Large records").
    #[inline]
    pub fn large_unwritten(&self) -> bool {
        self.unwritten.load(Ordering::Relaxed) >= LARGE_RECORD_BYTES_MIN
    }

    /// Makes the calling thread's appends as safe as the policy promises
    /// before their replies go out: written (`no`, `everysec`) or durable
    /// (`always`). Cheap when there is nothing to do. A worker's call:
    /// [`Commit::Deferred`] (nothing done) while a large record is
    /// unwritten, whose write is the committer thread's.
    pub fn commit(&self) -> std::io::Result<Commit> {
        let target = Self::last_appended_here();
        if self.committed() >= target {
            return Ok(Commit::Done);
        }
        if self.large_unwritten() {
            return Ok(Commit::Deferred);
        }
        self.write_out(target).map(|()| Commit::Done)
    }

    /// Writes (and under `always` fdatasyncs) everything buffered, unless
    /// another thread's commit already covered `target`.
    fn write_out(&self, target: u64) -> std::io::Result<()> {
        let mut io = lock(&self.io);
        if self.committed() >= target {
            return Ok(());
        }
        let r = self.write_locked(&mut io, self.policy() == Fsync::Always);
        self.failing.store(r.is_err(), Ordering::Relaxed);
        r
    }

    fn write_locked(&self, io: &mut Io, sync: bool) -> std::io::Result<()> {
        let (mut sealed, mut bytes, last) = {
            let mut b = lock(&self.buf);
            let sealed = std::mem::take(&mut b.sealed);
            let bytes = std::mem::replace(&mut b.bytes, std::mem::take(&mut io.spare));
            (sealed, bytes, b.last_seq)
        };
        let total = sealed.iter().map(Chunk::len).sum::<usize>() + bytes.len();
        if total > 0 {
            let timing = Timing::start(self.watcher());
            // Bounded: one write per chunk, in append order.
            // A pending record's bytes are waited for here (its writer
            // frames them outside every lock of the log's).
            let ready: Vec<SharedChunk> = sealed
                .iter()
                .map(|c| match c {
                    Chunk::Ready(c) => Arc::clone(c),
                    Chunk::Pending(p) => p.wait(),
                })
                .collect();
            let r = ready
                .iter()
                .map(|c| c.as_slice())
                .chain(std::iter::once(bytes.as_slice()))
                .filter(|c| !c.is_empty())
                .try_for_each(|c| {
                    (&*io.file).write_all(c).map(|()| {
                        self.writes.fetch_add(1, Ordering::Relaxed);
                    })
                });
            timing.end(self.watcher(), Stall::LogWrite);
            if let Err(e) = r {
                // A partial write would leave half a record that a retry
                // then follows with whole ones: cut the segment back.
                let _ = io.file.set_len(io.len);
                // Put the records back in front of what came meanwhile:
                // nothing is dropped; the next commit retries.
                let mut b = lock(&self.buf);
                if !bytes.is_empty() {
                    sealed.push(Chunk::Ready(Arc::new(bytes)));
                }
                sealed.append(&mut b.sealed);
                b.sealed = sealed;
                return Err(e);
            }
            io.len += total as u64;
            self.unwritten.fetch_sub(total, Ordering::Relaxed);
        }
        drop(sealed);
        io.written_seq = last;
        self.written.store(last, Ordering::Release);
        bytes.clear();
        if bytes.capacity() > BUF_KEEP_BYTES {
            bytes = Vec::new();
        }
        io.spare = bytes;
        if sync && self.durable.load(Ordering::Acquire) < last {
            let timing = Timing::start(self.watcher());
            io.file.sync_data()?;
            timing.end(self.watcher(), Stall::LogFsyncAlways);
            self.fsyncs.fetch_add(1, Ordering::Relaxed);
            self.durable.fetch_max(last, Ordering::AcqRel);
        }
        Ok(())
    }

    /// `everysec`'s tick (and shutdown's last sync): writes what is
    /// buffered, then fsyncs on a handle of its own, outside the I/O lock,
    /// so commits are not held up by the sync.
    pub fn sync_now(&self) -> std::io::Result<()> {
        let (file, last) = {
            let mut io = lock(&self.io);
            self.write_locked(&mut io, false)?;
            (Arc::clone(&io.file), io.written_seq)
        };
        if self.durable.load(Ordering::Acquire) < last {
            let timing = Timing::start(self.watcher());
            file.sync_data()?;
            timing.end(self.watcher(), Stall::LogFsyncBackground);
            self.fsyncs.fetch_add(1, Ordering::Relaxed);
            self.durable.fetch_max(last, Ordering::AcqRel);
        }
        Ok(())
    }

    /// Ends the current segment and starts the next; returns the sequence
    /// number of the new segment's first record (a snapshot's `log_seq`).
    pub fn rotate(&self) -> std::io::Result<u64> {
        let mut io = lock(&self.io);
        // Everything appended so far goes to the old segment, synced.
        self.write_locked(&mut io, false)?;
        io.file.sync_data()?;
        let next = io.written_seq + 1;
        let file = create_segment(&self.dir, next)?;
        io.file = Arc::new(file);
        io.len = format::LOG_HEADER_BYTES as u64;
        self.durable.fetch_max(io.written_seq, Ordering::AcqRel);
        self.cut_seq.store(io.written_seq, Ordering::Relaxed);
        Ok(next)
    }

    /// Changes appended since the last snapshot's cut.
    pub fn changes_since_cut(&self) -> u64 {
        self.last_seq().saturating_sub(self.cut_seq.load(Ordering::Relaxed))
    }

    /// The last sequence number appended by any thread.
    pub fn last_seq(&self) -> u64 {
        lock(&self.buf).last_seq
    }

    /// Records written / durable so far.
    pub fn written_and_durable(&self) -> (u64, u64) {
        (self.written.load(Ordering::Acquire), self.durable.load(Ordering::Acquire))
    }

    /// True after an I/O error that no later write has cleared.
    pub fn is_failing(&self) -> bool {
        self.failing.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{read_record, Record};

    /// A fresh directory for one test's log.
    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("amalgam-log-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// The (key, value length) of every record in the segment starting
    /// at `first_seq`, in file order.
    fn records(d: &Path, first_seq: u64) -> Vec<(Vec<u8>, usize)> {
        let bytes = std::fs::read(d.join(format::log_name(first_seq))).unwrap();
        let mut at = format::LOG_HEADER_BYTES;
        let mut out = Vec::new();
        // Bounded by the file: each record advances `at`.
        while at < bytes.len() {
            let (rec, n) = read_record(&bytes[at..]).expect("a whole record");
            let Record::Put { key, value, .. } = rec else { panic!("not a PUT: {rec:?}") };
            out.push((key.to_vec(), value.len()));
            at += n;
        }
        out
    }

    fn put(log: &Log, key: &[u8], len: usize) {
        let value = vec![key[0]; len];
        log.append(|b| format::put_raw(b, key, &value, 0, 0, 1));
    }

    #[test]
    fn large_records_are_written_in_append_order_between_small_ones() {
        let d = dir("order");
        let log = Log::create(&d, Fsync::No, 1).unwrap();
        // small, large (after small ones: they are sealed before it),
        // small, large, large (two chunks in a row), small.
        put(&log, b"a", 10);
        put(&log, b"b", 20);
        put(&log, b"C", LARGE_RECORD_BYTES_MIN);
        put(&log, b"d", 30);
        put(&log, b"E", LARGE_RECORD_BYTES_MIN + 7);
        put(&log, b"F", 2 * LARGE_RECORD_BYTES_MIN);
        put(&log, b"g", 40);
        assert!(log.large_unwritten());
        log.commit_all().unwrap();
        assert!(!log.large_unwritten());
        assert_eq!(log.unwritten.load(Ordering::Relaxed), 0);
        assert_eq!(log.written_and_durable().0, 7);
        let want: Vec<(Vec<u8>, usize)> = [
            (b"a", 10),
            (b"b", 20),
            (b"C", LARGE_RECORD_BYTES_MIN),
            (b"d", 30),
            (b"E", LARGE_RECORD_BYTES_MIN + 7),
            (b"F", 2 * LARGE_RECORD_BYTES_MIN),
            (b"g", 40),
        ]
        .iter()
        .map(|(k, n)| (k.to_vec(), *n))
        .collect();
        assert_eq!(records(&d, 1), want);
        // One write(2) per chunk: [a b] [C] [d] [E] [F] [g].
        assert_eq!(log.writes.load(Ordering::Relaxed), 6);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_commit_with_a_large_record_unwritten_is_deferred() {
        let d = dir("defer");
        let log = Log::create(&d, Fsync::EverySec, 1).unwrap();
        put(&log, b"a", 10);
        // Small: the worker writes it itself.
        assert_eq!(log.commit().unwrap(), Commit::Done);
        assert_eq!(log.written_and_durable().0, 1);
        put(&log, b"B", LARGE_RECORD_BYTES_MIN);
        put(&log, b"c", 10);
        // Large: nothing written, left to the committer.
        assert_eq!(log.commit().unwrap(), Commit::Deferred);
        assert_eq!(log.written_and_durable().0, 1);
        assert!(log.needs_commit());
        // The committer's step secures it; the worker's next commit has
        // nothing to do.
        log.commit_all().unwrap();
        assert!(!log.needs_commit());
        assert_eq!(log.commit().unwrap(), Commit::Done);
        assert_eq!(records(&d, 1).len(), 3);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_large_record_rotates_with_the_segment() {
        let d = dir("rotate");
        let log = Log::create(&d, Fsync::No, 1).unwrap();
        put(&log, b"a", 10);
        put(&log, b"B", LARGE_RECORD_BYTES_MIN);
        // Rotation writes everything appended so far to the old segment.
        assert_eq!(log.rotate().unwrap(), 3);
        assert!(!log.large_unwritten());
        put(&log, b"C", LARGE_RECORD_BYTES_MIN);
        log.sync_now().unwrap();
        assert_eq!(records(&d, 1), vec![(b"a".to_vec(), 10), (b"B".to_vec(), LARGE_RECORD_BYTES_MIN)]);
        assert_eq!(records(&d, 3), vec![(b"C".to_vec(), LARGE_RECORD_BYTES_MIN)]);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
