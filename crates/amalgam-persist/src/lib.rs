//! # amalgam-persist
//!
//! Durability for Amalgam (issue 5): Redis's choices — an append-only log
//! with `always` / `everysec` / `no` fsync, and point-in-time snapshots —
//! without what the Redis/memcached study measured them to cost
//! (`shared/papers/redis-memcached-study.txt` §4.2–4.3: the log's rewrite
//! and the fork behind BGSAVE, with up to +209% memory from copy-on-write).
//!
//! ## Design
//!
//! * **The log** (`log.rs`). The engine hands every change to a
//!   [`amalgam_engine::Journal`] under the key's bucket lock; here that is
//!   a memcpy into a shared buffer. The server calls
//!   [`Persistence::commit`] after each batch of requests and before their
//!   replies: a group write (and, with `always`, a group fdatasync) covers
//!   every thread's records that arrived meanwhile. Records carry length,
//!   type and CRC32C (`format.rs`).
//! * **Snapshots without fork** (`snapshot.rs` here, `journal.rs` in the
//!   engine). A cursor serializes the table bucket by bucket; a writer that
//!   is about to change a bucket the cursor has not reached serializes that
//!   bucket first. The image is the store at the cut, and the extra memory
//!   is a bitmap of one bit per bucket plus a write buffer.
//! * **Snapshot + rotation instead of a log rewrite.** At the cut the log
//!   rotates to a new segment; the snapshot's header names that segment's
//!   first record. Once a snapshot is complete, segments older than the
//!   previous snapshot are deleted (two snapshots are kept, so a corrupt
//!   newest one falls back to the one before and its log). The log never
//!   grows without bound and is never rewritten.
//! * **Recovery** (`recover.rs`): the newest sound snapshot, then the log
//!   from its cut; a torn tail is truncated with a warning.
//! * **Collections** (format version 4): an item holding a packed
//!   collection or an object (engine `object.rs`) is a PUT_TYPED record
//!   with its value tag (an object as its kind and `Object::encode`'s
//!   bytes, made under the bucket lock); an in-place write to a large
//!   collection is one OP record, the command's effect as amalgam-types'
//!   `Op` (never a copy of the collection); EXPIRE on one is a META record
//!   (its fields only). Recovery decodes and applies them with
//!   amalgam-types, which is why this crate depends on it (the crates stay
//!   in one line: engine → types → persist → server; a callback from the
//!   server would split recovery across two crates and leave its tests
//!   here unable to check a collection).
//!   `docs/persistence.md` § Collections has the details.
//!
//! * **Replication** (`repl.rs`): the log's records are also the
//!   replication stream ([`repl::StreamJournal`] feeds both from one
//!   encoding), a full sync is the same fork-less snapshot written into a
//!   socket, and a replica applies records with recovery's code.
//!
//! ## Failure handling
//!
//! A write error in `always` mode cannot be hidden (the reply would claim a
//! durability that does not exist), so, like Redis with
//! `appendfsync always`, the process exits with a message. In `everysec`
//! and `no` the records stay buffered, the error is reported (once per
//! RETRY_REPORT_PERIOD), and the next commit retries.
//!
//! ## Files
//! | file | what |
//! |---|---|
//! | `format.rs` | names, headers, records (the on-disk format) |
//! | `log.rs` | the log buffer, group commit, rotation |
//! | `snapshot.rs` | writing a snapshot and retiring old files |
//! | `recover.rs` | start-up: snapshot + log replay, damage handling |
//! | `repl.rs` | the replication stream: backlog, full sync, applying (issue 22) |
//! | `staged.rs` | a large value's log record, built while the value arrives |
//! | `received.rs` | a large value being received into its item, with its staged record |
//! | `stall.rs` | the log's and snapshots' steps, timed for a watcher (the server's LATENCY) |
//! | `rdb.rs`, `rdb/*.rs` | Redis's DUMP payload (RDB object encoding, listpack, intset, LZF, CRC-64): DUMP and RESTORE; `rdb/file.rs`: the `dump.rdb` file around it (a streaming reader, a writer) |

mod deferred;
pub mod format;
mod log;
pub mod ratelimit;
pub mod rdb;
pub mod received;
pub mod recover;
pub mod repl;
mod snapshot;
pub mod staged;
pub mod stall;

pub use log::{Commit, Fsync, Log, SharedChunk, EVERYSEC_PERIOD, LARGE_RECORD_BYTES_MIN};
pub use recover::Recovered;

/// True if `dir` holds a log segment or a snapshot of Amalgam's (what
/// recovery would read); false for a missing or empty directory. The
/// server loads a Redis RDB file at start only when it does not.
pub fn holds_state(dir: &std::path::Path) -> std::io::Result<bool> {
    if !dir.exists() {
        return Ok(false);
    }
    let (logs, snaps) = recover::list(dir)?;
    Ok(!logs.is_empty() || !snaps.is_empty())
}
pub use snapshot::{SnapshotReport, SNAPSHOT_CPU_PERCENT_DEFAULT};
pub use staged::Staged;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use amalgam_engine::{Change, Journal, Store};

/// How often the background threads look at the clock and counters.
const TICK: Duration = Duration::from_millis(100);

/// What persistence does, from the server's flags.
#[derive(Clone, Debug)]
pub struct Config {
    /// Where the log and snapshots live (`--dir`).
    pub dir: PathBuf,
    /// `--fsync`.
    pub fsync: Fsync,
    /// `--snapshot-every`: a snapshot this often if anything changed.
    pub snapshot_every: Option<Duration>,
    /// `--snapshot-after-writes`: a snapshot after this many changes.
    pub snapshot_after_writes: Option<u64>,
    /// `--snapshot-cpu-percent`: the share of one core a background
    /// snapshot uses (1–100; 100 is unpaced). See
    /// [`SNAPSHOT_CPU_PERCENT_DEFAULT`].
    pub snapshot_cpu_percent: u32,
    /// The collections' thresholds recovery decodes them under (the
    /// server's `*-max-listpack-*` settings at start).
    pub thresholds: amalgam_types::Thresholds,
}

/// The journal the engine writes into.
struct LogJournal(Arc<Log>);

impl Journal for LogJournal {
    fn record_large(&self, it: amalgam_engine::ItemRef<'_>) -> bool {
        deferred::record_large(Some(&self.0), false, |_| {}, it, |c| self.record(c))
    }

    fn fill(&self, it: amalgam_engine::ItemRef<'_>) {
        deferred::fill(it);
    }

    fn record(&self, change: Change<'_>) {
        if let Change::Put(it) = &change {
            if let Some((value, crc)) = staged::take_for(it) {
                let mut head = Vec::new();
                format::put_head(&mut head, it, crc);
                return self.0.append_staged(&head, Arc::new(value));
            }
        }
        self.0.append(|b| encode_change(b, change));
    }
}

/// One change as its log record (the log's and the replication stream's
/// encoding: `repl.rs`).
pub(crate) fn encode_change(b: &mut Vec<u8>, change: Change<'_>) {
    match change {
        Change::Put(it) => format::put(b, &it),
        Change::Delete(key) => format::delete(b, key),
        Change::Flush { fence_cas } => format::flush(b, fence_cas),
        Change::FlushAt { at } => format::flush_at(b, at),
        Change::Meta(it) => format::meta(b, &it),
        // An in-place write made while no journal was wanted (the server
        // asks for op records only while one is attached: a write that
        // raced the attachment) is recorded as the whole item.
        Change::Op { item, record: [] } => format::put(b, &item),
        Change::Op { item, record } => {
            let version = item.object().map_or(0, |c| c.version());
            format::op(b, item.key(), version, record)
        }
    }
}

/// Counters for `stats` / INFO.
#[derive(Clone, Copy, Debug, Default)]
pub struct PersistStats {
    /// Log records appended in all (the last sequence number).
    pub log_records: u64,
    /// write(2) calls of the log.
    pub log_writes: u64,
    /// fdatasync calls of the log.
    pub log_fsyncs: u64,
    /// Changes since the last snapshot's cut.
    pub changes_since_snapshot: u64,
    /// Unix time of the last completed snapshot (0: none this run).
    pub last_snapshot_unix: u64,
    /// Snapshots completed this run.
    pub snapshots: u64,
    /// True while a snapshot is being written.
    pub snapshot_in_progress: bool,
    /// Items in the last completed snapshot.
    pub last_snapshot_items: u64,
    /// Seconds the last snapshot took.
    pub last_snapshot_secs: f64,
}

/// Persistence for one store: see the crate notes.
pub struct Persistence {
    cfg: Config,
    store: Arc<Store>,
    log: Arc<Log>,
    /// One snapshot at a time.
    snapshot_lock: Mutex<()>,
    snapshot_running: AtomicBool,
    /// A BGSAVE has been accepted and its thread not yet finished.
    bgsave_claimed: AtomicBool,
    last_snapshot_unix: AtomicU64,
    last_snapshot_items: AtomicU64,
    last_snapshot_millis: AtomicU64,
    snapshots: AtomicU64,
    stop: AtomicBool,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// `always`: the highest sequence number a worker waits for; the
    /// committer thread syncs while it is above the durable one.
    requested: Mutex<u64>,
    request_cv: std::sync::Condvar,
    /// Called after every commit of the committer thread (the workers'
    /// event-loop wakers).
    wakers: Mutex<Vec<Arc<dyn Fn() + Send + Sync>>>,
    /// A replica's last REPL_POS (replication id, offset, CAS shift):
    /// logged after each applied batch, and again after each snapshot's
    /// cut so the log from the cut always names one.
    repl_pos: Arc<Mutex<Option<(String, u64, u64)>>>,
    /// The FUNCTION libraries as last noted ([`Persistence::note_functions`]),
    /// written again at the head of each snapshot's log segment.
    functions: Arc<Mutex<Option<Vec<u8>>>>,
    /// The snapshot schedule now (`set_schedule`): seconds between
    /// snapshots if anything changed, and changes that start one; 0: off.
    snapshot_every_ms: AtomicU64,
    snapshot_after_writes: AtomicU64,
    /// A failing log write or sync is logged at most once per
    /// [`ratelimit::LOG_RATE_LIMIT_PERIOD`]; so is a failing snapshot.
    log_error_limit: ratelimit::RateLimit,
    snapshot_error_limit: ratelimit::RateLimit,
}

impl std::fmt::Debug for Persistence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Persistence").field("cfg", &self.cfg).finish()
    }
}

impl Persistence {
    /// Recovers `store` from `cfg.dir` (created if missing), attaches the
    /// log as its journal, and starts the fsync and snapshot threads.
    /// Call before the store serves anything.
    pub fn open(cfg: Config, store: Arc<Store>) -> std::io::Result<(Arc<Persistence>, Recovered)> {
        Persistence::open_with_stream(cfg, store, None)
    }

    /// [`Persistence::open`], the journal also feeding `backlog` (the
    /// replication stream, `repl.rs`) when given.
    pub fn open_with_stream(
        cfg: Config,
        store: Arc<Store>,
        backlog: Option<Arc<repl::Backlog>>,
    ) -> std::io::Result<(Arc<Persistence>, Recovered)> {
        let recovered = recover::recover_with(&cfg.dir, &store, &cfg.thresholds)?;
        let log = Arc::new(Log::create(&cfg.dir, cfg.fsync, recovered.next_seq)?);
        let journal: Arc<dyn Journal> = match backlog {
            Some(b) => Arc::new(repl::StreamJournal::new(Some(Arc::clone(&log)), b)),
            None => Arc::new(LogJournal(Arc::clone(&log))),
        };
        if store.set_journal(journal).is_err() {
            return Err(std::io::Error::other("the store already has a journal"));
        }
        let p = Arc::new(Persistence {
            snapshot_every_ms: AtomicU64::new(cfg.snapshot_every.map_or(0, |d| (d.as_millis() as u64).max(1))),
            snapshot_after_writes: AtomicU64::new(cfg.snapshot_after_writes.unwrap_or(0)),
            cfg,
            store,
            log,
            snapshot_lock: Mutex::new(()),
            snapshot_running: AtomicBool::new(false),
            bgsave_claimed: AtomicBool::new(false),
            last_snapshot_unix: AtomicU64::new(0),
            last_snapshot_items: AtomicU64::new(0),
            last_snapshot_millis: AtomicU64::new(0),
            snapshots: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            threads: Mutex::new(Vec::new()),
            log_error_limit: ratelimit::RateLimit::new(),
            snapshot_error_limit: ratelimit::RateLimit::new(),
            requested: Mutex::new(0),
            request_cv: std::sync::Condvar::new(),
            wakers: Mutex::new(Vec::new()),
            repl_pos: Arc::new(Mutex::new(None)),
            functions: Arc::new(Mutex::new(recovered.functions.clone())),
        });
        // Both, whatever the policy, since it may change at run time
        // (`set_fsync`): the fsync thread idles but under `everysec`, the
        // committer while no worker asks it for anything (`always`).
        let mut threads = Vec::new();
        let q = Arc::clone(&p);
        threads.push(std::thread::Builder::new().name("amalgam-fsync".into()).spawn(move || q.fsync_loop())?);
        let q = Arc::clone(&p);
        threads.push(std::thread::Builder::new().name("amalgam-commit".into()).spawn(move || q.commit_loop())?);
        // Always: the schedule may be turned on at run time (CONFIG SET
        // save); with none it looks at two atomics every TICK.
        let q = Arc::clone(&p);
        threads.push(std::thread::Builder::new().name("amalgam-snapshot".into()).spawn(move || q.snapshot_loop())?);
        *p.threads.lock().unwrap_or_else(|e| e.into_inner()) = threads;
        Ok((p, recovered))
    }

    /// The configuration it started with (the schedule may have changed
    /// since: [`Persistence::schedule`]).
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The fsync policy now ([`Persistence::set_fsync`]).
    pub fn fsync(&self) -> Fsync {
        self.log.policy()
    }

    /// Switches the fsync policy at run time (Redis's CONFIG SET
    /// appendfsync), `always` included.
    ///
    /// # Why a switch to `always` is sound
    ///
    /// A reply that acknowledges a write leaves only once
    /// [`Persistence::committed`] has reached the last record its thread
    /// journaled, and `committed` reads the policy each time: *written*
    /// under `everysec` and `no`, *durable* under `always`. So from the
    /// moment the policy changes, every reply not yet sent is held until
    /// its records are fsynced, wherever it is: a worker that committed
    /// under the old policy finds its reply held at the send
    /// (`Turn::Commit`) and, seeing [`Persistence::asynchronous`] now, hands
    /// it to the committer thread, which runs (idle) whatever the policy.
    /// The switch then fsyncs everything appended so far before it
    /// returns, so every write acknowledged before the switch's OK is
    /// durable too: after CONFIG SET appendfsync always answers OK, the
    /// log is as if the server had started with `--fsync always`.
    ///
    /// # Away from `always`
    ///
    /// Replies then wait for *written* only. A reply parked for the
    /// committer is released by its next commit (which now writes without
    /// syncing) or by the worker's own, and the fsync thread takes over
    /// once a second under `everysec`. Nothing acknowledged is weakened:
    /// what was durable stays durable.
    ///
    /// An fsync failing at the switch is reported as any log error; under
    /// `always` the next commit that fails exits (crate notes, "Failure
    /// handling").
    pub fn set_fsync(&self, to: Fsync) {
        if self.fsync() == to {
            return;
        }
        self.log.set_policy(to);
        // Not while this thread has large records' places to fill (a
        // CONFIG SET inside EXEC after a large write: the sync would wait
        // for bytes only this thread frames, after the transaction,
        // `deferred.rs`); the next commit syncs them instead.
        if to == Fsync::Always && !deferred::places_here() {
            if let Err(e) = self.log.sync_now() {
                self.report_error(&e);
            }
        }
        // A committer waiting for a request re-reads `committed` (the
        // policy decides which counter it is).
        self.request_cv.notify_all();
    }

    /// Installs the watcher of the log's writes and fsyncs and the
    /// snapshots' slices (`stall.rs`); a second call changes nothing.
    pub fn set_stall_watcher(&self, w: Arc<dyn stall::StallWatcher<stall::Stall>>) {
        let _ = self.log.set_stall_watcher(w);
    }

    /// The snapshot schedule now: (seconds between snapshots if anything
    /// changed, changes that start one), 0 meaning off.
    pub fn schedule(&self) -> (u64, u64) {
        let ms = self.snapshot_every_ms.load(Ordering::Relaxed);
        (ms.div_ceil(1000), self.snapshot_after_writes.load(Ordering::Relaxed))
    }

    /// Changes the snapshot schedule at run time (Redis's CONFIG SET
    /// save); the snapshot thread reads it at its next tick.
    pub fn set_schedule(&self, every_secs: u64, after_writes: u64) {
        self.snapshot_every_ms.store(every_secs.saturating_mul(1000), Ordering::Relaxed);
        self.snapshot_after_writes.store(after_writes, Ordering::Relaxed);
    }

    /// True if the calling thread journaled changes that the policy has
    /// not yet secured (its replies must wait for [`Persistence::commit`]).
    #[inline]
    pub fn needs_commit(&self) -> bool {
        self.log.needs_commit()
    }

    /// The last sequence number the calling thread journaled: replies it
    /// composes from now on wait until [`Persistence::committed`] reaches
    /// it.
    #[inline]
    pub fn last_appended_here() -> u64 {
        Log::last_appended_here()
    }

    /// Records secured as the policy promises (durable under `always`,
    /// written otherwise).
    #[inline]
    pub fn committed(&self) -> u64 {
        self.log.committed()
    }

    /// True under `--fsync always`: workers hand commits to the committer
    /// thread ([`Persistence::request_commit`]) and serve on while it
    /// syncs, instead of calling [`Persistence::commit`].
    pub fn asynchronous(&self) -> bool {
        self.fsync() == Fsync::Always
    }

    /// Registers a function the committer thread calls after each commit
    /// (a worker's event-loop waker).
    pub fn register_waker(&self, wake: Arc<dyn Fn() + Send + Sync>) {
        self.wakers.lock().unwrap_or_else(|e| e.into_inner()).push(wake);
    }

    /// `always` (or a [`Commit::Deferred`] commit under any policy): asks
    /// the committer thread to secure records up to `target` (durable
    /// under `always`, written otherwise); the registered wakers run when
    /// it has (group commit: one fdatasync covers every request that
    /// arrived while the last ran, and workers keep serving meanwhile).
    pub fn request_commit(&self, target: u64) {
        let mut r = self.requested.lock().unwrap_or_else(|e| e.into_inner());
        if *r < target {
            *r = target;
            self.request_cv.notify_one();
        }
    }

    /// The committer thread: waits for a request above the secured
    /// position (`always`, or a deferred large commit), writes (and under
    /// `always` syncs) everything buffered, wakes the workers.
    fn commit_loop(&self) {
        while !self.stop.load(Ordering::Acquire) {
            {
                let mut r = self.requested.lock().unwrap_or_else(|e| e.into_inner());
                while *r <= self.log.committed() && !self.stop.load(Ordering::Acquire) {
                    r = self.request_cv.wait_timeout(r, TICK).unwrap_or_else(|e| e.into_inner()).0;
                }
            }
            if self.stop.load(Ordering::Acquire) {
                break;
            }
            if let Err(e) = self.log.commit_all() {
                if self.fsync() == Fsync::Always {
                    self.exit_not_durable(&e);
                }
                // A deferred large commit under `everysec` or `no`: the
                // records stay buffered and the replies held; retried
                // after a pause (a full disk fails every attempt).
                self.report_error(&e);
                std::thread::park_timeout(TICK);
            }
            for w in self.wakers.lock().unwrap_or_else(|e| e.into_inner()).iter() {
                w();
            }
        }
    }

    /// Called by a worker after a batch of requests, before their replies
    /// are sent: with [`Commit::Done`] the calling thread's changes are
    /// written (and with `always`, durable) when this returns, or an error
    /// was reported (see the crate notes; the replies stay held and the
    /// next commit retries). [`Commit::Deferred`]: a large record is
    /// unwritten (`log.rs` § Large records), nothing was done, and the
    /// worker hands the commit to the committer thread
    /// ([`Persistence::request_commit`]) as under `always`, so that its
    /// other connections are served while the record is written.
    pub fn commit(&self) -> Commit {
        match self.log.commit() {
            Ok(c) => c,
            Err(e) => {
                if self.fsync() == Fsync::Always {
                    self.exit_not_durable(&e);
                }
                self.report_error(&e);
                Commit::Done
            }
        }
    }

    /// A log write failed under `always`: exit rather than acknowledge
    /// writes that are not durable (crate notes, "Failure handling").
    fn exit_not_durable(&self, e: &std::io::Error) -> ! {
        ::log::error!(
            "cannot write the log in {} ({e}) with --fsync always; exiting rather than acknowledge writes that \
             are not durable",
            self.cfg.dir.display()
        );
        std::process::exit(1);
    }

    fn report_error(&self, e: &std::io::Error) {
        if let Some(held) = self.log_error_limit.allow() {
            ::log::warn!(
                "writing the log in {} failed ({e}); retrying{}",
                self.cfg.dir.display(),
                ratelimit::held_back(held)
            );
        }
    }

    /// A replica applied its primary's stream up to `offset` (the records
    /// this thread journaled before this call): logs a REPL_POS record
    /// after them, so recovery knows where the data it restores stands
    /// (`Recovered::repl_pos`; a replica restarted after a crash then
    /// continues by partial resync from there).
    pub fn note_repl_pos(&self, replid: &str, offset: u64, cas_shift: u64) {
        *self.repl_pos.lock().unwrap_or_else(|e| e.into_inner()) = Some((replid.to_string(), offset, cas_shift));
        self.log.append(|b| format::repl_pos(b, replid, offset, cas_shift));
    }

    /// The FUNCTION libraries changed: logs them all (FUNCTION DUMP's
    /// payload, `format::T_FUNCTIONS`), so recovery restores the set the
    /// last change left (`Recovered::functions`).
    pub fn note_functions(&self, payload: &[u8]) {
        *self.functions.lock().unwrap_or_else(|e| e.into_inner()) = Some(payload.to_vec());
        self.log.append(|b| format::functions(b, payload));
    }

    /// Writes a snapshot now (Redis's SAVE), waiting for one already
    /// running to finish first.
    pub fn snapshot(&self) -> std::io::Result<SnapshotReport> {
        self.snapshot_paced(false)
    }

    /// A snapshot; `paced`: in the background, yielding the CPU between
    /// steps (`Config::snapshot_cpu_percent`) so serving goes on at
    /// nearly full speed; SAVE runs unpaced, as fast as it can.
    fn snapshot_paced(&self, paced: bool) -> std::io::Result<SnapshotReport> {
        let _one = self.snapshot_lock.lock().unwrap_or_else(|e| e.into_inner());
        self.snapshot_running.store(true, Ordering::Release);
        let pct = if paced { self.cfg.snapshot_cpu_percent } else { 100 };
        let r = snapshot::write_snapshot(&self.cfg.dir, &self.store, &self.log, pct, &self.repl_pos, &self.functions);
        self.snapshot_running.store(false, Ordering::Release);
        if let Ok(rep) = &r {
            self.last_snapshot_unix.store(unix_now(), Ordering::Relaxed);
            self.last_snapshot_items.store(rep.items, Ordering::Relaxed);
            self.last_snapshot_millis.store(rep.elapsed.as_millis() as u64, Ordering::Relaxed);
            self.snapshots.fetch_add(1, Ordering::Relaxed);
        }
        r
    }

    /// A background snapshot, its outcome logged (a failure rate-limited:
    /// a full disk fails every attempt).
    fn snapshot_logged(&self, paced: bool) {
        match self.snapshot_paced(paced) {
            Ok(r) => ::log::info!(
                "snapshot written in {}: {} items in {:.3} s",
                self.cfg.dir.display(),
                r.items,
                r.elapsed.as_secs_f64()
            ),
            Err(e) => {
                if let Some(held) = self.snapshot_error_limit.allow() {
                    ::log::warn!("snapshot in {} failed: {e}{}", self.cfg.dir.display(), ratelimit::held_back(held));
                }
            }
        }
    }

    /// Starts a snapshot on a thread of its own (Redis's BGSAVE); false if
    /// one is running already.
    pub fn snapshot_in_background(self: &Arc<Self>) -> bool {
        // Claimed here, before the thread starts, so a second BGSAVE right
        // behind this one is refused (and INFO says one is in progress).
        if self.bgsave_claimed.compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed).is_err()
            || self.snapshot_running.load(Ordering::Acquire)
        {
            self.bgsave_claimed.store(false, Ordering::Release);
            return false;
        }
        let p = Arc::clone(self);
        let started = std::thread::Builder::new().name("amalgam-bgsave".into()).spawn(move || {
            p.snapshot_logged(true);
            p.bgsave_claimed.store(false, Ordering::Release);
        });
        if started.is_err() {
            self.bgsave_claimed.store(false, Ordering::Release);
        }
        started.is_ok()
    }

    /// Counters for `stats` / INFO.
    pub fn stats(&self) -> PersistStats {
        PersistStats {
            log_records: self.log.last_seq(),
            log_writes: self.log.writes.load(Ordering::Relaxed),
            log_fsyncs: self.log.fsyncs.load(Ordering::Relaxed),
            changes_since_snapshot: self.log.changes_since_cut(),
            last_snapshot_unix: self.last_snapshot_unix.load(Ordering::Relaxed),
            snapshots: self.snapshots.load(Ordering::Relaxed),
            snapshot_in_progress: self.snapshot_running.load(Ordering::Relaxed)
                || self.bgsave_claimed.load(Ordering::Relaxed),
            last_snapshot_items: self.last_snapshot_items.load(Ordering::Relaxed),
            last_snapshot_secs: self.last_snapshot_millis.load(Ordering::Relaxed) as f64 / 1000.0,
        }
    }

    /// Stops the background threads and makes everything logged durable
    /// (a clean shutdown loses nothing under any policy).
    pub fn shutdown(&self) {
        self.stop.store(true, Ordering::Release);
        let threads = std::mem::take(&mut *self.threads.lock().unwrap_or_else(|e| e.into_inner()));
        for t in &threads {
            t.thread().unpark();
        }
        self.request_cv.notify_all();
        for t in threads {
            let _ = t.join();
        }
        if let Err(e) = self.log.sync_now() {
            ::log::warn!("the last log sync at shutdown failed: {e}");
        }
    }

    fn fsync_loop(&self) {
        let mut last = Instant::now();
        while !self.stop.load(Ordering::Acquire) {
            std::thread::park_timeout(TICK);
            // Under `no` (CONFIG SET appendfsync no) it idles.
            if last.elapsed() >= EVERYSEC_PERIOD && self.fsync() == Fsync::EverySec {
                last = Instant::now();
                if let Err(e) = self.log.sync_now() {
                    self.report_error(&e);
                }
            }
        }
    }

    fn snapshot_loop(&self) {
        let mut last = Instant::now();
        while !self.stop.load(Ordering::Acquire) {
            std::thread::park_timeout(TICK);
            let changes = self.log.changes_since_cut();
            let every_ms = self.snapshot_every_ms.load(Ordering::Relaxed);
            let after_writes = self.snapshot_after_writes.load(Ordering::Relaxed);
            let by_count = after_writes > 0 && changes >= after_writes;
            let by_time = every_ms > 0 && last.elapsed() >= Duration::from_millis(every_ms) && changes > 0;
            if by_count || by_time {
                last = Instant::now();
                self.snapshot_logged(true);
            }
        }
    }
}

fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}
