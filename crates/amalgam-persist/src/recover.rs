//! Start-up: the newest complete snapshot, then the log after it.
//!
//! 1. `*.tmp` files (a snapshot cut off by a crash) are removed.
//! 2. Snapshots are tried newest first. A snapshot is used only if its
//!    header, every record's CRC and its END record (with the right item
//!    count) check out, which is verified in a first pass before anything
//!    is loaded, so a corrupt snapshot costs a read, not a half-loaded
//!    store; then the previous one is tried, then none (log only).
//! 3. The log segments are replayed in order from the chosen snapshot's
//!    `log_seq`. At the first bad record (torn or corrupt) the segment is
//!    truncated there with a warning, and any later segments, which can no
//!    longer be applied in order, are set aside as `*.discarded`. Recovery
//!    never refuses to start over a damaged file and never panics on one.
//! 4. Expired items are not restored (the engine drops them on restore).
//! 5. Collections (format version 4): a PUT_TYPED restores a packed
//!    collection with its tag as it was, or decodes an object's encoding
//!    under the thresholds recovery is given (`Config::thresholds`) and
//!    keeps it an object at the version it was written at (engine
//!    `ObjectCell::version`). A META record rewrites an item's fields
//!    keeping its value; an OP record applies amalgam-types' `Op` to the
//!    key's object if the object is at the version before the op's: ops
//!    are not idempotent as PUTs are, and one journaled just after a
//!    snapshot's cut may be in the snapshot already (`apply_op`). A record
//!    that cannot be read or applied (possible only if the files were
//!    damaged past their CRCs) is skipped with a warning; recovery goes on.
//!
//! Progress (items per second) is printed every RECOVERY_REPORT_PERIOD.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use amalgam_engine::{Expiry, NewValue, Store, Update, TAG_OBJECT};
use amalgam_types::op::Op;
use amalgam_types::value::{kind_of_tag, tag_of, Value};
use amalgam_types::Thresholds;

use crate::format::{self, Bad, Record};

/// How often recovery reports its progress.
const RECOVERY_REPORT_PERIOD: Duration = Duration::from_secs(1);
/// Read buffer of the record reader.
const READ_BUF_BYTES: usize = 1 << 20;

/// What recovery found and did.
#[derive(Debug, Default, Clone)]
pub struct Recovered {
    /// The sequence number the next log record gets.
    pub next_seq: u64,
    /// The snapshot loaded, if any, and its item count.
    pub snapshot: Option<(PathBuf, u64)>,
    /// Log records replayed.
    pub replayed: u64,
    /// Warnings printed (damaged files and what was done about them).
    pub warnings: Vec<String>,
    /// Wall time of the whole recovery.
    pub elapsed: Duration,
    /// The last REPL_POS record replayed: a replica's (replication id,
    /// offset, CAS shift) that the recovered data holds at least.
    pub repl_pos: Option<(String, u64, u64)>,
    /// The last FUNCTIONS record replayed: every FUNCTION library, as
    /// FUNCTION DUMP's payload (the server loads them).
    pub functions: Option<Vec<u8>>,
}

/// Reads framed records from a file, one at a time.
struct RecordReader<R> {
    r: R,
    body: Vec<u8>,
    /// Offset of the next record in the file.
    offset: u64,
    /// The file's length when opened: a length field reaching past it is
    /// a torn record, found without allocating the (maybe corrupt,
    /// up to 1 GiB) length it claims.
    file_len: u64,
}

impl<R: Read> RecordReader<R> {
    fn new(r: R, offset: u64, file_len: u64) -> Self {
        RecordReader { r, body: Vec::new(), offset, file_len }
    }

    /// The next record; Ok(None) at a clean end of the stream.
    fn next(&mut self) -> Result<Option<Record<'_>>, Bad> {
        let mut frame = [0u8; format::RECORD_FRAME_BYTES];
        match read_full(&mut self.r, &mut frame) {
            Ok(0) => return Ok(None),
            Ok(n) if n < frame.len() => return Err(Bad::Torn),
            Ok(_) => {}
            Err(_) => return Err(Bad::Corrupt("read error")),
        }
        let len = u32::from_le_bytes(frame[0..4].try_into().expect("4 bytes")) as usize;
        if len == 0 || len > format::RECORD_BODY_BYTES_MAX {
            return Err(Bad::Corrupt("impossible record length"));
        }
        if self.offset + (format::RECORD_FRAME_BYTES + len) as u64 > self.file_len {
            return Err(Bad::Torn);
        }
        self.body.clear();
        self.body.extend_from_slice(&frame);
        self.body.resize(format::RECORD_FRAME_BYTES + len, 0);
        match read_full(&mut self.r, &mut self.body[format::RECORD_FRAME_BYTES..]) {
            Ok(n) if n == len => {}
            Ok(_) => return Err(Bad::Torn),
            Err(_) => return Err(Bad::Corrupt("read error")),
        }
        let (rec, n) = format::read_record(&self.body)?;
        self.offset += n as u64;
        Ok(Some(rec))
    }
}

/// Reads until `buf` is full or the stream ends; the bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut at = 0;
    while at < buf.len() {
        match r.read(&mut buf[at..]) {
            Ok(0) => break,
            Ok(n) => at += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(at)
}

/// Files of one kind by number (first_seq or log_seq), ascending.
type Numbered = Vec<(u64, PathBuf)>;

/// The dir's log segments and snapshots, by number, ascending.
pub(crate) fn list(dir: &Path) -> std::io::Result<(Numbered, Numbered)> {
    let mut logs = Vec::new();
    let mut snaps = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        match format::parse_name(name) {
            Some((true, n)) => logs.push((n, e.path())),
            Some((false, n)) => snaps.push((n, e.path())),
            None => {}
        }
    }
    logs.sort();
    snaps.sort();
    Ok((logs, snaps))
}

struct Progress {
    start: Instant,
    last: Instant,
    items: u64,
}

impl Progress {
    fn tick(&mut self, what: &str) {
        self.items += 1;
        if self.items % 4096 == 0 && self.last.elapsed() >= RECOVERY_REPORT_PERIOD {
            self.last = Instant::now();
            let secs = self.start.elapsed().as_secs_f64();
            log::info!("recovery: {} {what} so far, {:.0} per second", self.items, self.items as f64 / secs.max(1e-9));
        }
    }
}

/// Opens a snapshot and checks its header: (reader, log_seq).
fn open_snapshot(path: &Path) -> Result<(RecordReader<BufReader<File>>, u64), String> {
    let file = File::open(path).map_err(|e| e.to_string())?;
    let file_len = file.metadata().map_err(|e| e.to_string())?.len();
    let mut f = BufReader::with_capacity(READ_BUF_BYTES, file);
    let mut h = [0u8; format::SNAP_HEADER_BYTES];
    if read_full(&mut f, &mut h).map_err(|e| e.to_string())? < h.len() {
        return Err("shorter than its header".into());
    }
    let log_seq = format::parse_header(&h, format::SNAP_MAGIC)?;
    Ok((RecordReader::new(f, h.len() as u64, file_len), log_seq))
}

/// First pass over a snapshot: every record sound, END present and
/// agreeing. Returns its log_seq.
fn verify_snapshot(path: &Path) -> Result<u64, String> {
    let (mut rr, log_seq) = open_snapshot(path)?;
    let mut items = 0u64;
    loop {
        let at = rr.offset;
        match rr.next() {
            Ok(Some(Record::Put { .. } | Record::PutTyped { .. })) => items += 1,
            Ok(Some(Record::End { items: n })) if n == items => {
                return match rr.next() {
                    Ok(None) => Ok(log_seq),
                    _ => Err("data after its END record".into()),
                };
            }
            Ok(Some(Record::End { items: n })) => return Err(format!("END says {n} items, found {items}")),
            Ok(Some(_)) => return Err(format!("a non-item record at byte {at}")),
            Ok(None) => return Err("no END record (incomplete)".into()),
            Err(Bad::Torn) => return Err(format!("torn at byte {at}")),
            Err(Bad::Corrupt(why)) => return Err(format!("{why} at byte {at}")),
        }
    }
}

fn load_snapshot(
    store: &Store,
    path: &Path,
    progress: &mut Progress,
    t: &Thresholds,
    warnings: &mut Vec<String>,
) -> Result<u64, String> {
    let (mut rr, _) = open_snapshot(path)?;
    let mut n = 0;
    while let Some(rec) = rr.next().map_err(|e| format!("{e:?} while loading (changed under us?)"))? {
        match rec {
            Record::Put { key, value, flags, expiry, cas } => restore(store, key, value, flags, expiry, cas),
            Record::PutTyped { key, tag, value, flags, expiry, cas } => {
                if let Err(e) = restore_typed(store, key, tag, value, flags, expiry, cas, t) {
                    warn(warnings, &e);
                }
            }
            _ => continue,
        }
        n += 1;
        progress.tick("items");
    }
    Ok(n)
}

/// Prints and keeps a warning about one record recovery skipped.
fn warn(warnings: &mut Vec<String>, w: &str) {
    log::warn!("recovery: warning: {w}");
    warnings.push(w.to_string());
}

/// Shows a key in a warning (printable ASCII as is, the rest escaped).
fn show(key: &[u8]) -> String {
    key.escape_ascii().to_string()
}

/// Restores a PUT_TYPED record (module notes, 5): Err says why not.
#[allow(clippy::too_many_arguments)]
fn restore_typed(
    store: &Store,
    key: &[u8],
    tag: u8,
    value: &[u8],
    flags: u32,
    expiry: Expiry,
    cas: u64,
    t: &Thresholds,
) -> Result<(), String> {
    let bad = |what: &str| format!("key {}: {what}; not restored", show(key));
    if tag != TAG_OBJECT {
        let kind = kind_of_tag(tag).ok_or_else(|| bad("a packed value of an unknown tag"))?;
        // Decoded once to check it (CRCs catch damage to the file, not a
        // writer's bug), so no reader ever meets bytes it cannot read.
        let v = Value::from_packed(kind, value, t).map_err(|_| bad("a packed value that does not decode"))?;
        if v.is_empty() {
            return Err(bad("an empty collection"));
        }
        let r = match store.restore_typed(key, tag, flags, expiry, cas, || NewValue::Bytes(value)) {
            // Packed bytes this start's item size cannot hold: an object.
            Err(amalgam_engine::Error::TooLarge) => restore_object(store, key, kind, v, 0, flags, expiry, cas, t),
            r => r,
        };
        return r.map_err(|e| bad(&e.to_string()));
    }
    let (&k, rest) = value.split_first().ok_or_else(|| bad("an empty object record"))?;
    let kind = kind_of_tag(k).ok_or_else(|| bad("an object of an unknown kind"))?;
    let (version, enc) = rest.split_at_checked(8).ok_or_else(|| bad("an object record without its version"))?;
    let version = u64::from_le_bytes(version.try_into().expect("8 bytes"));
    let v = Value::decode(kind, enc, t).map_err(|_| bad("an object that does not decode"))?;
    if v.is_empty() {
        return Err(bad("an empty collection"));
    }
    restore_object(store, key, kind, v, version, flags, expiry, cas, t).map_err(|e| bad(&e.to_string()))
}

/// Stores `v` at `key` as an object at `version`. An object stays an
/// object, even one whose decoded value is compact: the log's OP records
/// after a snapshot apply only to the object version they follow
/// (engine `ObjectCell::version`), which a packed item has not.
#[allow(clippy::too_many_arguments)]
fn restore_object(
    store: &Store,
    key: &[u8],
    kind: amalgam_types::Kind,
    v: Value,
    version: u64,
    flags: u32,
    expiry: Expiry,
    cas: u64,
    t: &Thresholds,
) -> Result<(), amalgam_engine::Error> {
    // The value is handed over on the first run; a cache-mode retry
    // (engine `with_room`) gets a copy decoded from its encoding.
    let mut enc = Vec::new();
    v.encode(&mut enc);
    let mut ready = Some(v);
    store.restore_typed(key, tag_of(kind), flags, expiry, cas, || {
        // Our own encoding of a moment ago decodes (the empty fallback
        // is unreachable, and not a panic).
        let v = ready.take().unwrap_or_else(|| Value::decode(kind, &enc, t).unwrap_or_else(|_| Value::new(kind, t)));
        NewValue::Object(Box::new(v))
    })?;
    // Recovery runs before the store serves: no writer races this.
    store.get(key, |it| it.object().map(|c| c.set_version(version)));
    Ok(())
}

/// Applies an OP record that made `version` of the object at `key`
/// (module notes, 5). Applied only to the version before it: an op at or
/// below the object's version is in it already (a snapshot's cut can
/// fall between an op's effect and its record), and one that finds no
/// object of its kind, or a version further back, belongs to a value a
/// later record of the log replaces (ops are logged only for objects,
/// and only a PUT or DELETE ends one); both are skipped, silently.
fn apply_op(store: &Store, key: &[u8], version: u64, op: &[u8], t: &Thresholds) -> Result<(), String> {
    let bad = |what: &str| format!("key {}: {what}; an in-place change skipped", show(key));
    let op = Op::decode(op).map_err(|_| bad("an op that does not decode"))?;
    let r = store.update(key, |old| {
        let Some(cell) = old.and_then(|it| it.object()) else { return (Update::Keep, Ok(())) };
        if cell.version().checked_add(1) != Some(version) {
            return (Update::Keep, Ok(()));
        }
        let mut guard = cell.write();
        let Some(v) = guard.as_any_mut().downcast_mut::<Value>() else { return (Update::Keep, Ok(())) };
        if v.kind() != op.kind() {
            return (Update::Keep, Ok(()));
        }
        if op.apply(v, t).is_err() {
            return (Update::Keep, Err("an op that does not fit its value"));
        }
        if v.is_empty() {
            return (Update::Remove, Ok(()));
        }
        // The engine raises the version (one in-place write).
        (Update::InPlace { record: Vec::new() }, Ok(()))
    });
    match r {
        Ok((r, _)) => r.map_err(bad),
        Err(e) => Err(bad(&e.to_string())),
    }
}

fn restore(store: &Store, key: &[u8], value: &[u8], flags: u32, expiry: Expiry, cas: u64) {
    if let Err(e) = store.restore(key, value, flags, expiry, cas) {
        // Only possible when the store was started smaller than the data
        // (item size max or, in store mode, the memory limit).
        log::warn!("recovery: warning: could not restore a key of {} bytes: {e}", value.len());
    }
}

/// Applies one change record to `store` (recovery's log replay, and a
/// replica's stream: `repl.rs`); Err is a warning about a record skipped.
/// A delayed flush (FLUSH_AT) is set at once here; recovery holds it back
/// until the end of the log instead. An END record does nothing.
pub(crate) fn apply_record(store: &Store, rec: Record<'_>, t: &Thresholds) -> Result<(), String> {
    match rec {
        Record::Put { key, value, flags, expiry, cas } => restore(store, key, value, flags, expiry, cas),
        Record::PutTyped { key, tag, value, flags, expiry, cas } => {
            restore_typed(store, key, tag, value, flags, expiry, cas, t)?
        }
        Record::Meta { key, flags, expiry, cas } => store
            .restore_meta(key, flags, expiry, cas)
            .map_err(|e| format!("key {}: {e}; a META record skipped", show(key)))?,
        Record::Op { key, version, op } => apply_op(store, key, version, op, t)?,
        Record::Delete { key } => {
            let _ = store.delete(key);
        }
        Record::Flush { fence_cas } => store.restore_flush(fence_cas),
        Record::FlushAt { at } => store.flush_all_at(at),
        Record::End { .. } | Record::ReplPos { .. } | Record::GetAck | Record::Functions { .. } => {}
    }
    Ok(())
}

/// Sets a damaged or unusable file aside under `<name>.discarded`.
fn discard(path: &Path, warnings: &mut Vec<String>, why: &str) {
    let mut to = path.as_os_str().to_owned();
    to.push(".discarded");
    let w = format!("{}: {why}; set aside as {}", path.display(), Path::new(&to).display());
    log::warn!("recovery: warning: {w}");
    warnings.push(w);
    let _ = std::fs::rename(path, &to);
}

/// Recovers `store` from `dir` (created if missing), collections under
/// the default thresholds; see the module notes.
pub fn recover(dir: &Path, store: &Store) -> std::io::Result<Recovered> {
    recover_with(dir, store, &Thresholds::default())
}

/// [`recover`], decoding collections under the thresholds `t`.
pub fn recover_with(dir: &Path, store: &Store, t: &Thresholds) -> std::io::Result<Recovered> {
    let start = Instant::now();
    std::fs::create_dir_all(dir)?;
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        if p.extension().is_some_and(|x| x == "tmp") {
            std::fs::remove_file(&p)?;
        }
    }
    let (logs, snaps) = list(dir)?;
    let mut out = Recovered::default();
    let mut progress = Progress { start, last: start, items: 0 };
    let mut log_seq = 1;
    for (_, path) in snaps.iter().rev() {
        match verify_snapshot(path) {
            Ok(seq) => match load_snapshot(store, path, &mut progress, t, &mut out.warnings) {
                Ok(n) => {
                    out.snapshot = Some((path.clone(), n));
                    log_seq = seq;
                    break;
                }
                Err(e) => {
                    // Verified a moment ago: only a concurrent change of
                    // the file gets here. What was loaded stays; the log
                    // replay below fixes up what it can.
                    discard(path, &mut out.warnings, &e);
                }
            },
            Err(e) => {
                discard(path, &mut out.warnings, &format!("corrupt snapshot ({e}), falling back to an older one"));
            }
        }
    }
    if let Some((first, _)) = logs.first() {
        if *first > log_seq {
            let w = format!(
                "the log starts at record {first} but replay should start at {log_seq}; records between are missing"
            );
            log::warn!("recovery: warning: {w}");
            out.warnings.push(w);
        }
    }
    let mut next_seq = log_seq;
    let mut pending_flush_at: Option<u32> = None;
    let mut broken = false;
    for (i, (_, path)) in logs.iter().enumerate() {
        // A segment wholly before the cut (the next one starts at or
        // before it) is kept only for a fallback to an older snapshot:
        // not read, so damage in it costs nothing now.
        if logs.get(i + 1).is_some_and(|(next_first, _)| *next_first <= log_seq) {
            continue;
        }
        if broken {
            discard(path, &mut out.warnings, "follows a damaged log segment");
            continue;
        }
        let is_last = i + 1 == logs.len();
        match replay_segment(store, path, log_seq, &mut out, &mut progress, &mut pending_flush_at, t) {
            Ok(SegmentEnd::Clean(end_seq)) => next_seq = next_seq.max(end_seq),
            Ok(SegmentEnd::Empty) => {
                if !is_last {
                    discard(path, &mut out.warnings, "an empty or headerless log segment");
                } else {
                    let _ = std::fs::remove_file(path);
                }
            }
            Ok(SegmentEnd::Damaged { end_seq, good_len, why }) => {
                let w = format!(
                    "{}: {why} at byte {good_len}; truncated to its last good record ({} records replayed in all)",
                    path.display(),
                    out.replayed
                );
                log::warn!("recovery: warning: {w}");
                out.warnings.push(w);
                std::fs::OpenOptions::new().write(true).open(path)?.set_len(good_len)?;
                next_seq = next_seq.max(end_seq);
                broken = true;
            }
            Err(e) => {
                discard(path, &mut out.warnings, &e);
                broken = true;
            }
        }
    }
    match pending_flush_at {
        Some(at) if at > store.now() => store.flush_all_at(at),
        // The delayed flush's time came while we were down (had it come
        // while up, a FLUSH record would have followed): everything
        // restored was stored before it.
        Some(_) => store.restore_flush(store.cas_floor()),
        None => {}
    }
    out.next_seq = next_seq;
    out.elapsed = start.elapsed();
    Ok(out)
}

enum SegmentEnd {
    /// Every record sound; the sequence number after the last.
    Clean(u64),
    /// No header (a crash right after creating it) or zero bytes.
    Empty,
    /// A torn or corrupt record at `good_len`.
    Damaged { end_seq: u64, good_len: u64, why: String },
}

fn replay_segment(
    store: &Store,
    path: &Path,
    from_seq: u64,
    out: &mut Recovered,
    progress: &mut Progress,
    pending_flush_at: &mut Option<u32>,
    t: &Thresholds,
) -> Result<SegmentEnd, String> {
    let file = File::open(path).map_err(|e| e.to_string())?;
    let file_len = file.metadata().map_err(|e| e.to_string())?.len();
    let mut f = BufReader::with_capacity(READ_BUF_BYTES, file);
    let mut h = [0u8; format::LOG_HEADER_BYTES];
    let got = read_full(&mut f, &mut h).map_err(|e| e.to_string())?;
    if got < h.len() {
        return Ok(SegmentEnd::Empty);
    }
    let first_seq = format::parse_header(&h, format::LOG_MAGIC).map_err(|e| format!("bad log header: {e}"))?;
    let mut rr = RecordReader::new(f, h.len() as u64, file_len);
    let mut seq = first_seq;
    loop {
        let good_len = rr.offset;
        let rec = match rr.next() {
            Ok(Some(rec)) => rec,
            Ok(None) => return Ok(SegmentEnd::Clean(seq)),
            Err(Bad::Torn) => return Ok(SegmentEnd::Damaged { end_seq: seq, good_len, why: "a torn record".into() }),
            Err(Bad::Corrupt(why)) => return Ok(SegmentEnd::Damaged { end_seq: seq, good_len, why: why.into() }),
        };
        if seq >= from_seq {
            match rec {
                Record::Flush { fence_cas } => {
                    store.restore_flush(fence_cas);
                    *pending_flush_at = None;
                }
                Record::FlushAt { at } => *pending_flush_at = Some(at),
                Record::ReplPos { replid, offset, cas_shift } => {
                    out.repl_pos = Some((String::from_utf8_lossy(replid).into_owned(), offset, cas_shift));
                }
                Record::Functions { payload } => out.functions = Some(payload.to_vec()),
                Record::End { .. } => {
                    return Ok(SegmentEnd::Damaged {
                        end_seq: seq,
                        good_len,
                        why: "a snapshot record in the log".into(),
                    })
                }
                rec => {
                    if let Err(e) = apply_record(store, rec, t) {
                        warn(&mut out.warnings, &e);
                    }
                }
            }
            out.replayed += 1;
            progress.tick("records");
        }
        seq += 1;
    }
}
