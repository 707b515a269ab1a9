//! Redis's `dump.rdb` in and out of the store: what `--dir D
//! --dbfilename F` loads at start and what SAVE / BGSAVE write beside
//! Amalgam's own snapshot (issue 37 §3).
//!
//! The file format is amalgam-persist's `rdb/file.rs` (a streaming
//! reader and a writer, their bounds and what they refuse); each value
//! becomes a key exactly as RESTORE … REPLACE ABSTTL makes it
//! (`dump::load`), and is written as DUMP writes it (`dump::payload_of`).
//!
//! ## Loading ([`load`])
//! Every key of every database, with its expiry; a key whose deadline
//! has passed is not stored (Redis's loader drops them on a primary). A
//! database past `--databases` stops the load, naming the key. A value
//! the reader refuses ([`Item::Refused`]: it does not decode) stops the
//! load naming the key and its type, or with `skip` is logged and left
//! out; a type the reader cannot walk (modules) always stops it, as
//! nothing after it can be found. A store too small (store mode, `-m`)
//! stops it with the key it could not store; in cache mode the engine
//! evicts as it does for any write. FUNCTION libraries are handed back
//! for the server to load.
//!
//! ## Writing ([`save`])
//! A point-in-time image: the engine's fork-less snapshot
//! (`Store::snapshot`) hands every live item, under its bucket lock, to
//! a sink that serializes it as DUMP does and appends it through a
//! buffer, as Amalgam's own snapshot sink does, so a writer waits no
//! longer than it does for that snapshot. Keys come in bucket order, not
//! grouped by database: SELECTDB is written whenever the database
//! changes (Redis's loader takes SELECTDB anywhere), and no RESIZEDB
//! (a hint). Into `F.tmp-<pid>` then fsync and rename, as Redis does. A
//! memcached item's flags are not in the file (RDB has no place for
//! them).

use crate::db::Databases;
use crate::dump::{self, LoadError};
use amalgam_engine::namespace;
use amalgam_engine::{ItemRef, SnapshotSink, Store};
use amalgam_persist::rdb::file::{self, FileReader, FileWriter, Item, Limits};
use amalgam_persist::rdb::{self, DumpError};
use amalgam_types::Thresholds;
use std::io::{self, BufWriter, Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Redis's `dbfilename` default.
pub const DBFILENAME_DEFAULT: &str = "dump.rdb";
/// The writer's buffer: bytes appended under a bucket lock reach the
/// file in writes of this size (as the native snapshot's buffer).
const WRITE_BUFFER_BYTES: usize = 1 << 20;
/// The most unloadable keys named one by one in the log when skipping
/// (then a count).
pub const SKIPPED_NAMED_MAX: u64 = 100;

/// What [`load`] does with a key it cannot load (`--rdb-unloadable`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unloadable {
    /// Stop the load with an error naming the key (Redis fails to start).
    Stop,
    /// Leave the key out, with a log line.
    Skip,
}

/// What a load did.
#[derive(Debug, Default)]
pub struct Loaded {
    /// Keys stored.
    pub keys: u64,
    /// Keys whose deadline had passed (not stored).
    pub expired: u64,
    /// Keys left out (with [`Unloadable::Skip`]).
    pub skipped: u64,
    /// FUNCTION libraries' code, in the file's order.
    pub functions: Vec<Vec<u8>>,
    /// The file's aux fields.
    pub aux: Vec<(Vec<u8>, Vec<u8>)>,
    /// Wall time.
    pub elapsed: Duration,
}

/// The name a key is given in errors: its database and its bytes.
fn named(db: u64, key: &[u8]) -> String {
    format!("key '{}' (db {db})", String::from_utf8_lossy(key))
}

/// Loads an RDB file's keys into `store` (module notes). `warn` gets
/// each line worth logging (keys skipped).
#[allow(clippy::too_many_arguments)]
pub fn load(
    r: impl Read,
    store: &Store,
    dbs: &Databases,
    t: &Thresholds,
    item_max: usize,
    limits: Limits,
    unloadable: Unloadable,
    warn: &mut dyn FnMut(&str),
) -> Result<Loaded, String> {
    let start = Instant::now();
    let mut out = Loaded::default();
    let mut reader = FileReader::new(r, limits).map_err(|e| e.to_string())?;
    // Bounded: each item consumes bytes of the file, which ends.
    loop {
        let item = match reader.next_item() {
            Ok(Some(i)) => i,
            Ok(None) => break,
            Err(e) => return Err(e.to_string()),
        };
        match item {
            Item::Aux { key, value } => out.aux.push((key, value)),
            Item::Function(code) => out.functions.push(code),
            Item::Refused { db, key, type_byte, why } => {
                let what = match why {
                    DumpError::TooLarge => "is larger than the value bound",
                    _ => "does not decode",
                };
                let line = format!(
                    "{}: its {} value (RDB type {type_byte}) {what}",
                    named(db, &key),
                    file::type_name(type_byte)
                );
                match unloadable {
                    Unloadable::Stop => {
                        return Err(format!("{line} (start with --rdb-unloadable skip to leave such keys out)"))
                    }
                    Unloadable::Skip => {
                        out.skipped += 1;
                        if out.skipped <= SKIPPED_NAMED_MAX {
                            warn(&format!("{line}: skipped"));
                        }
                    }
                }
            }
            Item::Key { db, key, expire_ms, value } => {
                let ns =
                    usize::try_from(db).ok().filter(|&d| d < dbs.count()).map(|d| dbs.namespace(d)).ok_or_else(
                        || format!("{} is in a database past --databases {}", named(db, &key), dbs.count()),
                    )?;
                let stored = namespace::encode(ns, &key);
                match dump::load(store, t, item_max, &stored, &value, expire_ms) {
                    Ok(true) => out.keys += 1,
                    Ok(false) => out.expired += 1,
                    Err(LoadError::OutOfMemory) => {
                        return Err(format!(
                            "{}: the store is full (-m is smaller than the file's data); give a larger -m",
                            named(db, &key)
                        ))
                    }
                    Err(LoadError::Refused(e)) => {
                        let line = format!("{}: the store refused it ({e})", named(db, &key));
                        match unloadable {
                            Unloadable::Stop => return Err(line),
                            Unloadable::Skip => {
                                out.skipped += 1;
                                if out.skipped <= SKIPPED_NAMED_MAX {
                                    warn(&format!("{line}: skipped"));
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    out.elapsed = start.elapsed();
    Ok(out)
}

/// The sink's state: the file being written and where it is.
struct SinkState<W: Write> {
    w: Option<FileWriter<W>>,
    /// The database of the last key written.
    db: Option<u64>,
    keys: u64,
    error: Option<io::Error>,
}

struct Sink<W: Write> {
    state: Mutex<SinkState<W>>,
    /// Namespace → database (at the start of the save).
    db_of: Vec<Option<u64>>,
    t: Thresholds,
}

impl<W: Write + Send> SnapshotSink for Sink<W> {
    fn item(&self, it: ItemRef<'_>) {
        let (ns, name) = namespace::split(it.key());
        let Some(db) = self.db_of.get(usize::from(ns)).copied().flatten() else { return };
        let Some(payload) = dump::payload_of(&it, &self.t) else { return };
        let at = it.expiry().unix_millis().map(|ms| ms as i64);
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if s.error.is_some() {
            return;
        }
        let switch = s.db != Some(db);
        s.db = Some(db);
        let Some(w) = s.w.as_mut() else { return };
        let r = if switch { w.switch_db(db) } else { Ok(()) }.and_then(|()| w.key(name, at, &payload));
        match r {
            Ok(()) => s.keys += 1,
            Err(e) => s.error = Some(e),
        }
    }
}

/// What a save wrote.
#[derive(Clone, Copy, Debug)]
pub struct Saved {
    pub keys: u64,
    pub bytes: u64,
    pub elapsed: Duration,
}

/// Writes every live key of `store` to `path` as an RDB file (module
/// notes), with `functions` (each library's code) before the keys.
pub fn save(
    path: &Path,
    store: &Store,
    dbs: &Databases,
    t: &Thresholds,
    functions: &[Vec<u8>],
    used_mem: u64,
) -> io::Result<Saved> {
    let start = Instant::now();
    let tmp = path.with_file_name(format!(
        "{}.tmp-{}",
        path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        std::process::id()
    ));
    let file = std::fs::File::create(&tmp)?;
    let result = write(
        BufWriter::with_capacity(WRITE_BUFFER_BYTES, file),
        store,
        dbs,
        t,
        functions,
        used_mem,
        &[],
        || (),
        &mut || (),
    )
    .and_then(|(b, keys)| {
        let f = b.into_inner().map_err(|e| e.into_error())?;
        f.sync_all()?;
        let bytes = f.metadata()?.len();
        std::fs::rename(&tmp, path)?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::File::open(dir)?.sync_all()?;
        }
        Ok((bytes, keys))
    });
    match result {
        Ok((bytes, keys)) => Ok(Saved { keys, bytes, elapsed: start.elapsed() }),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Writes every live key of `store` into `w` as an RDB (module notes),
/// with `functions` before the keys and `aux` after the usual aux fields
/// (a replication sync's `repl-id`, `repl-offset`): `w` back, and the
/// keys written. Writes happen in the snapshot's callbacks, under bucket
/// locks: give a buffered file, never a socket a slow peer could stall.
/// `before_cut` runs at the snapshot's cut (a replication sync takes its
/// stream position there), `between_steps` after each step of the
/// snapshot, holding no lock (a sync moves what `w` buffered to its
/// socket there).
#[allow(clippy::too_many_arguments)]
pub fn write<W: io::Write + Send + 'static>(
    w: W,
    store: &Store,
    dbs: &Databases,
    t: &Thresholds,
    functions: &[Vec<u8>],
    used_mem: u64,
    aux: &[(&str, &[u8])],
    before_cut: impl FnOnce(),
    between_steps: &mut dyn FnMut(),
) -> io::Result<(W, u64)> {
    let now_s = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let base = file::save_aux(now_s, used_mem);
    let all = base.iter().map(|(k, v)| (*k, &v[..])).chain(aux.iter().copied());
    let mut w = FileWriter::new(w, all)?;
    for code in functions {
        w.function(code)?;
    }
    let db_of = (0..namespace::NAMESPACES)
        .map(|ns| u8::try_from(ns).ok().and_then(|ns| dbs.database_of(ns)).map(|d| d as u64))
        .collect();
    let sink =
        Arc::new(Sink { state: Mutex::new(SinkState { w: Some(w), db: None, keys: 0, error: None }), db_of, t: *t });
    store.snapshot_paced(sink.clone(), before_cut, between_steps);
    let mut s = sink.state.lock().unwrap_or_else(|e| e.into_inner());
    let keys = s.keys;
    match (s.error.take(), s.w.take()) {
        (Some(e), _) => Err(e),
        (None, Some(w)) => Ok((w.finish()?, keys)),
        (None, None) => Err(io::Error::other("the RDB writer is gone")),
    }
}

/// FUNCTION DUMP's payload of a file's libraries (for the server's
/// FUNCTION RESTORE path).
pub fn functions_payload(codes: &[Vec<u8>]) -> Vec<u8> {
    rdb::encode_functions(codes.iter().map(|c| &c[..]))
}
