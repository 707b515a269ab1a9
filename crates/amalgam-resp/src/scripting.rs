//! The server's side of scripting that is not a command: each worker's
//! Lua state (crate amalgam-script's `Vm`, one per worker thread), and
//! FUNCTION's libraries going to the log, to the replicas and back in at
//! start (the FUNCTIONS record, amalgam-persist). The commands are the
//! RESP front end's `resp/script.rs` (EVAL, FCALL, SCRIPT) and
//! `resp/function.rs` (FUNCTION); this module knows neither, so that
//! `repl.rs` and the start reach it without the front end.

use amalgam_script::functions::{library_name, Library};
use amalgam_script::Vm;
use std::cell::RefCell;
use std::sync::Arc;

thread_local! {
    /// This worker's Lua state, made on its first script.
    static VM: RefCell<Option<Vm>> = const { RefCell::new(None) };
}

/// This worker's Lua state, in step with the cache's flushes.
pub(crate) fn with_vm<R>(generation: u64, f: impl FnOnce(&mut Vm) -> R) -> Result<R, String> {
    VM.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Some(Vm::new(crate::REDIS_VERSION)?);
        }
        let vm = slot.as_mut().expect("made above");
        vm.sync(generation);
        Ok(f(vm))
    })
}

/// Reports this worker's Lua memory to INFO's sum (after a run).
pub(crate) fn report_memory(scripts: &amalgam_script::Scripts) {
    VM.with(|cell| {
        if let Some(vm) = cell.borrow_mut().as_mut() {
            scripts.note_lua_bytes(vm.memory_delta());
        }
    })
}

/// FUNCTION's libraries changed: with `--dir`, every library goes to the log
/// (amalgam-persist's FUNCTIONS record), so a restart finds them; and to
/// the replicas, in the replication stream.
pub(crate) fn libraries_changed(shared: &crate::Shared) {
    let payload = dump(shared);
    if let Some(p) = &shared.persist {
        p.note_functions(&payload);
    }
    feed(shared, &payload);
}

/// FUNCTION DUMP's payload of every library.
fn dump(shared: &crate::Shared) -> Vec<u8> {
    let libs = shared.scripts.functions.list();
    amalgam_persist::rdb::encode_functions(libs.iter().map(|l| &l.code[..]))
}

/// Puts a FUNCTIONS record in the replication stream, if a replica is
/// (or was) attached.
fn feed(shared: &crate::Shared, payload: &[u8]) {
    let backlog = &shared.repl.backlog;
    if backlog.journal_feeds() {
        let mut rec = Vec::with_capacity(payload.len() + 16);
        amalgam_persist::format::functions(&mut rec, payload);
        backlog.feed(&rec);
    }
}

/// A replica's full sync: the libraries follow the snapshot in the
/// stream (`repl.rs`).
pub(crate) fn feed_replicas(shared: &crate::Shared) {
    feed(shared, &dump(shared));
}

/// A replica received its primary's libraries (the stream's FUNCTIONS
/// record): they replace its own, and its log keeps them. One that does
/// not load is reported and the replica keeps what it had.
pub(crate) fn install_replicated(shared: &crate::Shared, payload: &[u8]) {
    match restore_payload(shared, payload) {
        Ok(n) => {
            log::info!("replication: {n} FUNCTION libraries from the primary");
            // Its own replicas get the record from the stream as it came
            // (`repl.rs`'s stream_in feeds every record on): fed here
            // again it would move this replica's offset off its primary's.
            if let Some(p) = &shared.persist {
                p.note_functions(payload);
            }
        }
        Err(e) => log::warn!("replication: the primary's FUNCTION libraries were not loaded: {e}"),
    }
}

/// At start: the libraries recovery found (`Recovered::functions`), each
/// loaded as FUNCTION LOAD loads it; an error stops the start, as a
/// damaged library in Redis's RDB does.
pub(crate) fn restore_recovered(shared: &crate::Shared, payload: &[u8]) -> Result<(), String> {
    let n = restore_payload(shared, payload)?;
    log::info!("loaded {n} FUNCTION libraries from the log");
    Ok(())
}

/// Every library of `payload` loaded (as FUNCTION LOAD checks one), then
/// put in place of the current set; how many there were.
fn restore_payload(shared: &crate::Shared, payload: &[u8]) -> Result<usize, String> {
    let codes = amalgam_persist::rdb::decode_functions(payload)
        .map_err(|e| format!("the FUNCTION libraries do not decode: {e:?}"))?;
    let mut libs = Vec::with_capacity(codes.len());
    for code in codes {
        let name = library_name(&code).map_err(|e| format!("a FUNCTION library: {e}"))?;
        let functions = with_vm(shared.scripts.generation(), |vm| vm.load_library(&code))
            .and_then(|r| r)
            .map_err(|e| format!("the FUNCTION library {name}: {e}"))?;
        libs.push(Library { name, code: Arc::from(code), functions });
    }
    let n = libs.len();
    shared.scripts.functions.restore(libs, amalgam_script::functions::Policy::Flush)?;
    Ok(n)
}
