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
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
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
/// A record at least this long, appended when nothing else is buffered,
/// becomes the buffer instead of being copied into it (`append`).
const HANDOVER_RECORD_BYTES_MIN: usize = 1 << 20;

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
            buf: Mutex::new(Buf { bytes: Vec::new(), last_seq: last }),
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
    /// a record of a megabyte or more into an empty buffer, not even that:
    /// the scratch buffer is swapped in).
    pub fn append(&self, encode: impl FnOnce(&mut Vec<u8>)) {
        SCRATCH.with_borrow_mut(|scratch| {
            scratch.clear();
            encode(scratch);
            let seq = {
                let mut b = lock(&self.buf);
                if b.bytes.is_empty() && scratch.len() >= HANDOVER_RECORD_BYTES_MIN {
                    // A large record (a large value) is handed over, not
                    // copied again under the mutex every writer takes.
                    std::mem::swap(&mut b.bytes, scratch);
                } else {
                    b.bytes.extend_from_slice(scratch);
                }
                b.last_seq += 1;
                b.last_seq
            };
            LAST_APPENDED.with(|c| c.set(seq));
            if scratch.capacity() > SCRATCH_KEEP_BYTES {
                *scratch = Vec::new();
            }
        });
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

    /// Makes the calling thread's appends as safe as the policy promises
    /// before their replies go out: written (`no`, `everysec`) or durable
    /// (`always`). Cheap when there is nothing to do.
    pub fn commit(&self) -> std::io::Result<()> {
        let target = Self::last_appended_here();
        if self.committed() >= target {
            return Ok(());
        }
        self.write_out(target)
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
        let (mut bytes, last) = {
            let mut b = lock(&self.buf);
            let bytes = std::mem::replace(&mut b.bytes, std::mem::take(&mut io.spare));
            (bytes, b.last_seq)
        };
        if !bytes.is_empty() {
            let timing = Timing::start(self.watcher());
            let r = (&*io.file).write_all(&bytes);
            timing.end(self.watcher(), Stall::LogWrite);
            if let Err(e) = r {
                // A partial write would leave half a record that a retry
                // then follows with whole ones: cut the segment back.
                let _ = io.file.set_len(io.len);
                // Put the records back in front of what came meanwhile:
                // nothing is dropped; the next commit retries.
                let mut b = lock(&self.buf);
                bytes.extend_from_slice(&b.bytes);
                b.bytes = bytes;
                return Err(e);
            }
            io.len += bytes.len() as u64;
            self.writes.fetch_add(1, Ordering::Relaxed);
        }
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
