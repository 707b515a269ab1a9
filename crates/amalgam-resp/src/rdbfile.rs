//! Redis's `dump.rdb` in `--dir` (issue 37 §3): loaded at start when the
//! directory holds no Amalgam state, and written by SAVE, BGSAVE and
//! SHUTDOWN SAVE beside Amalgam's own snapshot when `dbfilename` was
//! given. The work is amalgam-commands' `rdbfile.rs`; this file wires it
//! to the server (its settings, its FUNCTION libraries, the log lines).
//!
//! The file is loaded before the log opens (so a failed load leaves
//! `--dir` as it was, and the next start tries again), then a snapshot
//! of Amalgam's own is written: the next start recovers from it and does
//! not read the RDB file again.

use crate::Shared;
use amalgam_commands::db::Databases;
use amalgam_commands::rdbfile::{self, Saved, Unloadable, DBFILENAME_DEFAULT};
use amalgam_engine::Store;
use amalgam_persist::rdb::file::Limits;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The RDB file's read buffer.
const READ_BUFFER_BYTES: usize = 1 << 20;

/// `dbfilename` now (None: not given, so SAVE writes no RDB file) and
/// whether a background RDB save runs.
#[derive(Debug, Default)]
pub struct RdbFile {
    pub name: Mutex<Option<String>>,
    saving: AtomicBool,
}

impl RdbFile {
    pub fn new(name: Option<String>) -> RdbFile {
        RdbFile { name: Mutex::new(name), saving: AtomicBool::new(false) }
    }

    fn name(&self) -> Option<String> {
        self.name.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// At start, before the log opens: when `--dir` holds no Amalgam state
/// (no snapshot, no log segment) and the RDB file exists, loads its keys
/// into `store`. An error stops the start, and leaves `--dir` as it was.
pub(crate) fn load_at_start(
    args: &crate::config::Args,
    store: &Store,
    dbs: &Databases,
    proto_max_bulk_len: u64,
) -> Result<Option<rdbfile::Loaded>, String> {
    let Some(dir) = &args.dir else { return Ok(None) };
    let name = args.dbfilename.clone().unwrap_or_else(|| DBFILENAME_DEFAULT.to_string());
    let path = dir.join(&name);
    if !path.exists() {
        return Ok(None);
    }
    if amalgam_persist::holds_state(dir).map_err(|e| format!("cannot read --dir {}: {e}", dir.display()))? {
        log::info!(
            "{} not loaded: {} holds Amalgam's own snapshot or log, recovered instead",
            path.display(),
            dir.display()
        );
        return Ok(None);
    }
    let file = std::fs::File::open(&path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let (limits, unloadable) = load_rules(args, proto_max_bulk_len);
    let loaded = rdbfile::load(
        std::io::BufReader::with_capacity(READ_BUFFER_BYTES, file),
        store,
        dbs,
        // Before the config file's run-time settings apply: Redis's
        // default thresholds choose each collection's form (the values
        // are the same either way, only their compact or large form).
        &amalgam_types::Thresholds::default(),
        args.max_item_size,
        limits,
        unloadable,
        &mut |line| log::warn!("{}: {line}", path.display()),
    )
    .map_err(|e| format!("cannot load {}: {e}", path.display()))?;
    let ver = loaded.aux.iter().find(|(k, _)| k == b"redis-ver").map(|(_, v)| String::from_utf8_lossy(v).into_owned());
    log::info!(
        "loaded {}: {} keys in {:.3} s ({} already expired, {} skipped; written by redis {})",
        path.display(),
        loaded.keys,
        loaded.elapsed.as_secs_f64(),
        loaded.expired,
        loaded.skipped,
        ver.as_deref().unwrap_or("?")
    );
    Ok(Some(loaded))
}

/// How an RDB is read, at start or from a redis-server primary
/// (`repl.rs`): each value within proto-max-bulk-len (what RESTORE
/// allows), the whole bounded by the store, which refuses (store mode) or
/// evicts (cache mode) past -m and holds one decoded value at a time; a
/// key that cannot load stops the load or is skipped (`--rdb-unloadable`).
pub(crate) fn load_rules(args: &crate::config::Args, proto_max_bulk_len: u64) -> (Limits, Unloadable) {
    let unloadable = if args.rdb_unloadable == "skip" { Unloadable::Skip } else { Unloadable::Stop };
    let value_bytes_max = usize::try_from(proto_max_bulk_len).unwrap_or(usize::MAX);
    (Limits { value_bytes_max, file_bytes_max: u64::MAX }, unloadable)
}

/// What an RDB of the store carries besides its keys: every FUNCTION
/// library's code, and the `used-mem` aux field (SAVE's file, a Redis
/// peer's sync in `repl.rs`).
pub(crate) fn extras(shared: &Shared) -> (Vec<Vec<u8>>, u64) {
    let codes = shared.scripts.functions.list().iter().map(|l| l.code.to_vec()).collect();
    let st = shared.store.stats();
    (codes, st.item_bytes + st.index_bytes)
}

/// Once the server is built: the file's FUNCTION libraries loaded, and a
/// snapshot of Amalgam's own written, so the keys outlive a restart (the
/// next start recovers them and does not read the RDB file again).
pub(crate) fn after_load(shared: &Shared, loaded: rdbfile::Loaded) -> Result<(), String> {
    if !loaded.functions.is_empty() {
        let payload = rdbfile::functions_payload(&loaded.functions);
        crate::scripting::restore_recovered(shared, &payload)?;
        if let Some(p) = &shared.persist {
            p.note_functions(&payload);
        }
    }
    if let Some(p) = &shared.persist {
        let r = p.snapshot().map_err(|e| format!("the snapshot after loading the RDB file: {e}"))?;
        log::info!("the RDB file's keys are in Amalgam's snapshot ({} items)", r.items);
    }
    Ok(())
}

/// Where SAVE writes the RDB file, if `dbfilename` was given (and `--dir`).
fn target(shared: &Shared) -> Option<PathBuf> {
    Some(shared.args.dir.as_ref()?.join(shared.rdb.name()?))
}

/// Writes the RDB file now (SAVE, SHUTDOWN SAVE), if `dbfilename` was
/// given; `Ok(None)` if not.
pub(crate) fn save(shared: &Shared) -> std::io::Result<Option<Saved>> {
    let Some(path) = target(shared) else { return Ok(None) };
    let (codes, used_mem) = extras(shared);
    let saved = rdbfile::save(&path, &shared.store, &shared.databases, &shared.thresholds.load(), &codes, used_mem)?;
    log::info!(
        "RDB file {} written: {} keys, {} bytes, in {:.3} s",
        path.display(),
        saved.keys,
        saved.bytes,
        saved.elapsed.as_secs_f64()
    );
    Ok(Some(saved))
}

/// BGSAVE: writes the RDB file on a thread of its own, if `dbfilename`
/// was given and no such save runs (false: one runs).
pub(crate) fn bgsave(shared: &Arc<Shared>) -> bool {
    if target(shared).is_none() {
        return true;
    }
    if shared.rdb.saving.swap(true, Ordering::AcqRel) {
        return false;
    }
    let s = Arc::clone(shared);
    let spawned = std::thread::Builder::new().name("amalgam-rdb-save".into()).spawn(move || {
        if let Err(e) = save(&s) {
            log::warn!("background RDB save failed: {e}");
        }
        s.rdb.saving.store(false, Ordering::Release);
    });
    if let Err(e) = spawned {
        log::warn!("cannot start the background RDB save: {e}");
        shared.rdb.saving.store(false, Ordering::Release);
    }
    true
}

/// True while a background RDB save runs.
pub fn saving(shared: &Shared) -> bool {
    shared.rdb.saving.load(Ordering::Acquire)
}
