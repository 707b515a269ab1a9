//! Writing a snapshot (the engine's `Store::snapshot` does the cut and the
//! traversal; this is the file side) and retiring files it makes obsolete.
//!
//! The file is written as `snap-inprogress.ams.tmp`: the header (with the
//! log position the engine's `before_cut` gets from [`Log::rotate`]), the
//! items, an END record with their count; then fsync, rename to
//! `snap-<log_seq>.ams`, fsync of the directory. A crash at any point
//! leaves either the previous state or the new complete snapshot.
//!
//! Items reach the sink under bucket locks, from the snapshot thread and
//! from writers serializing a bucket ahead of the cursor; the sink encodes
//! them into a buffer and whoever fills it past SNAP_WRITE_BYTES writes it
//! out, so the extra memory is one buffer, not a copy of the store.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use amalgam_engine::{ItemRef, SnapshotSink, Store};

use crate::format;
use crate::log::{sync_dir, Log};
use crate::recover;

/// The sink's buffer is written out when it reaches this.
const SNAP_WRITE_BYTES: usize = 1 << 20;
/// Completed snapshots kept: the newest and one to fall back to.
pub const SNAPSHOTS_KEPT: usize = 2;
/// The default share of one core a background snapshot may use
/// (`Config::snapshot_cpu_percent`, the server's --snapshot-cpu-percent):
/// after each step of the cursor it sleeps (100 - p) / p times the step's
/// duration. The store is served meanwhile by every core; a snapshot
/// taking 5x longer costs little (its image is still the cut's), while a
/// snapshot at full speed takes a whole core from the workers (the issue's
/// target: throughput during a snapshot ≥ 0.9x of without; measured at 25:
/// 0.891 on 2 vCPUs). SAVE is not paced.
pub const SNAPSHOT_CPU_PERCENT_DEFAULT: u32 = 20;
/// The temporary name of the snapshot being written.
const TMP_NAME: &str = "snap-inprogress.ams.tmp";

/// What one snapshot wrote.
#[derive(Clone, Debug)]
pub struct SnapshotReport {
    /// Items in it.
    pub items: u64,
    /// Bytes of the file.
    pub bytes: u64,
    /// Buckets that writers serialized ahead of the cursor.
    pub buckets_by_writers: u64,
    /// The first log record after its cut.
    pub log_seq: u64,
    /// Wall time.
    pub elapsed: Duration,
}

struct SinkState {
    buf: Vec<u8>,
    file: File,
    bytes: u64,
    items: u64,
    error: Option<std::io::Error>,
}

struct Sink(Mutex<SinkState>);

impl SinkState {
    fn write_out(&mut self) {
        if self.error.is_none() && !self.buf.is_empty() {
            match self.file.write_all(&self.buf) {
                Ok(()) => self.bytes += self.buf.len() as u64,
                Err(e) => self.error = Some(e),
            }
        }
        self.buf.clear();
    }
}

impl SnapshotSink for Sink {
    fn item(&self, it: ItemRef<'_>) {
        let mut s = self.0.lock().unwrap_or_else(|e| e.into_inner());
        format::put(&mut s.buf, &it);
        s.items += 1;
        if s.buf.len() >= SNAP_WRITE_BYTES {
            s.write_out();
        }
    }
}

/// Writes one snapshot of `store` into `dir`, rotating `log` at the cut,
/// then deletes snapshots and log segments no longer needed.
/// `cpu_percent`: the pacing (100 or more: none).
pub(crate) fn write_snapshot(
    dir: &Path,
    store: &Store,
    log: &Log,
    cpu_percent: u32,
    repl_pos: &Mutex<Option<(String, u64, u64)>>,
    functions: &Mutex<Option<Vec<u8>>>,
) -> std::io::Result<SnapshotReport> {
    let start = Instant::now();
    let tmp = dir.join(TMP_NAME);
    let file = OpenOptions::new().create(true).write(true).truncate(true).open(&tmp)?;
    let sink = Arc::new(Sink(Mutex::new(SinkState {
        buf: Vec::with_capacity(SNAP_WRITE_BYTES + 4096),
        file,
        bytes: 0,
        items: 0,
        error: None,
    })));
    let mut cut: std::io::Result<u64> = Err(std::io::Error::other("the cut did not run"));
    let mut step_start = Instant::now();
    let watcher = log.watcher();
    let mut pace = || {
        let worked = step_start.elapsed();
        if let Some(w) = watcher.filter(|w| w.watching()) {
            w.stalled(crate::stall::Stall::SnapshotSlice, worked);
        }
        if (1..100).contains(&cpu_percent) {
            std::thread::sleep(worked.mul_f64(f64::from(100 - cpu_percent) / f64::from(cpu_percent)));
        }
        step_start = Instant::now();
    };
    let stats = store.snapshot_paced(
        sink.clone(),
        || {
            cut = log.rotate();
            // A replica's place, again at the head of the new segment: the
            // snapshot holds at least what it names (a record applied
            // twice on a resync from there is harmless: repl.rs).
            if let Some((id, offset, shift)) = repl_pos.lock().unwrap_or_else(|e| e.into_inner()).clone() {
                log.append(|b| format::repl_pos(b, &id, offset, shift));
            }
            // The FUNCTION libraries, too: the segments before this one
            // (which held them) go once the snapshot is complete.
            if let Some(payload) = functions.lock().unwrap_or_else(|e| e.into_inner()).as_deref() {
                log.append(|b| format::functions(b, payload));
            }
            if let Ok(seq) = &cut {
                let created = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .unwrap_or(0);
                let mut s = sink.0.lock().unwrap_or_else(|e| e.into_inner());
                s.buf.extend_from_slice(&format::snap_header(*seq, created));
            }
        },
        &mut pace,
    );
    let result = (|| {
        let log_seq = cut?;
        let mut s = sink.0.lock().unwrap_or_else(|e| e.into_inner());
        debug_assert_eq!(s.items, stats.items);
        let items = s.items;
        format::end(&mut s.buf, items);
        s.write_out();
        if let Some(e) = s.error.take() {
            return Err(e);
        }
        s.file.sync_all()?;
        let bytes = s.bytes;
        drop(s);
        std::fs::rename(&tmp, dir.join(format::snap_name(log_seq)))?;
        sync_dir(dir)?;
        Ok(SnapshotReport {
            items,
            bytes,
            buckets_by_writers: stats.buckets_by_writers,
            log_seq,
            elapsed: start.elapsed(),
        })
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
        return result;
    }
    retire_old_files(dir)?;
    result
}

/// Keeps the newest SNAPSHOTS_KEPT snapshots and the log segments from the
/// oldest kept one's cut on; deletes the rest.
fn retire_old_files(dir: &Path) -> std::io::Result<()> {
    let (segs, snaps) = recover::list(dir)?;
    if snaps.len() < SNAPSHOTS_KEPT {
        return Ok(());
    }
    let keep_from = snaps.len() - SNAPSHOTS_KEPT;
    let oldest_kept_seq = snaps[keep_from].0;
    for (_, p) in &snaps[..keep_from] {
        std::fs::remove_file(p)?;
    }
    // Segment i holds records [first_i, first_{i+1}); it is obsolete when
    // the next segment starts at or before the oldest kept cut.
    for w in segs.windows(2) {
        if w[1].0 <= oldest_kept_seq {
            std::fs::remove_file(&w[0].1)?;
        }
    }
    sync_dir(dir)
}
