//! What recovery must do with any files it finds (issue 5 §3: never a
//! panic, never a refusal to start, a torn or corrupt tail cut at the last
//! good record, a corrupt snapshot set aside). Shared by the proptest suite
//! (`tests/recover_fuzz.rs`, in `cargo test`) and the libFuzzer target
//! (`fuzz/fuzz_targets/recover_files.rs`), which feed [`check`] bytes.
//!
//! The bytes are read as a small program, so that most inputs reach the
//! replay of well-formed records (random bytes almost never carry a valid
//! CRC32C):
//!
//! ```text
//! byte 0        mode: bit 0 = raw (the rest is one log segment's bytes,
//!               after a valid header if bit 1; nothing more is checked
//!               than that recovery survives and is idempotent)
//!               otherwise bit 1 = write a snapshot too
//! byte 1        where the snapshot cuts the operations (a fraction of them)
//! then          operations until a 0xFF byte or the end: op byte o, then
//!               o & 3: 0, 1 = PUT key (o >> 2) & 7 with a value of the next
//!               byte % 24 bytes (taken from the input); 2 = DELETE; 3 = FLUSH
//! after 0xFF    damage, 3 bytes each: kind % 4 (0 cut the log, 1 flip a log
//!               byte, 2 flip a snapshot byte, 3 cut the snapshot) and a
//!               little-endian u16 position (modulo the file's length)
//! ```
//!
//! The model: operation i gets CAS i + 1 and sequence number i + 1; the
//! snapshot holds the state after the first m operations and names m + 1
//! as its log position; the log segment starts at m + 1 with the rest.
//! Checked: recovery returns Ok, and the store is exactly what the damage
//! leaves: the snapshot's state (if it is undamaged; any change to it sets
//! it aside) plus every log record before the first damaged byte of the
//! log (none if its header is damaged); without warnings if nothing was
//! damaged. And a second recovery of the same directory (after the first
//! cut and set aside what it had to) finds the same store and cuts
//! nothing.

use std::collections::BTreeMap;
use std::path::Path;

use amalgam_engine::{Config, Store};
use amalgam_persist::format;

/// Operations read from one input at most (bounds the work per input).
pub const OPS_MAX: usize = 256;
/// Damage entries applied at most.
pub const DAMAGE_MAX: usize = 8;

/// key -> (value, flags, cas)
pub type State = BTreeMap<Vec<u8>, (Vec<u8>, u32, u64)>;

enum Op {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
    Flush,
}

/// Every live item of `store`.
pub fn dump(store: &Store) -> State {
    let mut out = BTreeMap::new();
    let mut cursor = 0;
    for _ in 0..10_000_000 {
        cursor = store.scan(cursor, |it| {
            out.insert(it.key().to_vec(), (it.value().to_vec(), it.flags(), it.cas()));
        });
        if cursor == 0 {
            break;
        }
    }
    out
}

fn apply(state: &mut State, i: usize, op: &Op) {
    let cas = i as u64 + 1;
    match op {
        Op::Put(k, v) => {
            state.insert(k.clone(), (v.clone(), i as u32, cas));
        }
        Op::Delete(k) => {
            state.remove(k);
        }
        Op::Flush => state.clear(),
    }
}

fn encode(out: &mut Vec<u8>, i: usize, op: &Op) {
    match op {
        Op::Put(k, v) => format::put_raw(out, k, v, i as u32, 0, i as u64 + 1),
        Op::Delete(k) => format::delete(out, k),
        Op::Flush => format::flush(out, i as u64 + 1),
    }
}

fn recover_fresh(dir: &Path) -> (State, amalgam_persist::Recovered) {
    let store = Store::new(Config::default()).expect("default store");
    let rec = match amalgam_persist::recover::recover(dir, &store) {
        Ok(r) => r,
        Err(e) => panic!("recovery refused to start: {e}"),
    };
    (dump(&store), rec)
}

fn damage(bytes: &mut Vec<u8>, cut: bool, pos: usize) {
    if bytes.is_empty() {
        return;
    }
    let at = pos % bytes.len();
    if cut {
        bytes.truncate(at);
    } else {
        bytes[at] ^= 1 << (pos % 8);
    }
}

/// Runs recovery over the files `data` describes, written into `dir`
/// (emptied first), and checks the module's invariants; panics on a
/// violation.
pub fn check(data: &[u8], dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).expect("scratch directory");
    let mode = data.first().copied().unwrap_or(0);
    let log_path = dir.join(format::log_name(1));
    if mode & 1 == 1 {
        let mut log = Vec::new();
        if mode & 2 == 2 {
            log.extend_from_slice(&format::log_header(1));
        }
        log.extend_from_slice(&data[1..]);
        std::fs::write(&log_path, &log).expect("write log");
        let (first, _) = recover_fresh(dir);
        let (second, rec2) = recover_fresh(dir);
        assert_eq!(first, second, "a second recovery found another store");
        assert!(
            !rec2.warnings.iter().any(|w| w.contains("truncated")),
            "second recovery cut again: {:?}",
            rec2.warnings
        );
        return;
    }

    // The program.
    let cut_byte = data.get(1).copied().unwrap_or(0) as usize;
    let mut at = 2;
    let mut ops = Vec::new();
    while at < data.len() && data[at] != 0xFF && ops.len() < OPS_MAX {
        let o = data[at];
        at += 1;
        let key = format!("k{}", (o >> 2) & 7).into_bytes();
        ops.push(match o & 3 {
            0 | 1 => {
                let n = data.get(at).map_or(0, |b| *b as usize % 24);
                at += 1;
                let end = (at + n).min(data.len());
                let v = data.get(at..end).unwrap_or(&[]).to_vec();
                at = end;
                Op::Put(key, v)
            }
            2 => Op::Delete(key),
            _ => Op::Flush,
        });
    }
    at += 1; // the 0xFF
    let with_snapshot = mode & 2 == 2;
    let m = if with_snapshot { cut_byte * ops.len() / 255 } else { 0 };

    // The files, undamaged.
    let mut at_m = State::new();
    for (i, op) in ops.iter().enumerate().take(m) {
        apply(&mut at_m, i, op);
    }
    let mut log = format::log_header(m as u64 + 1).to_vec();
    // record_ends[j]: the byte offset after the record of operation m + j.
    let mut record_ends = Vec::new();
    for (i, op) in ops.iter().enumerate().skip(m) {
        encode(&mut log, i, op);
        record_ends.push(log.len());
    }
    let mut snap = Vec::new();
    if with_snapshot {
        snap.extend_from_slice(&format::snap_header(m as u64 + 1, 1_700_000_000));
        for (k, (v, flags, cas)) in &at_m {
            format::put_raw(&mut snap, k, v, *flags, 0, *cas);
        }
        format::end(&mut snap, at_m.len() as u64);
    }
    let (log_clean, snap_clean) = (log.clone(), snap.clone());

    // The damage.
    let mut n = 0;
    while at + 3 <= data.len() && n < DAMAGE_MAX {
        let pos = u16::from_le_bytes([data[at + 1], data[at + 2]]) as usize;
        match data[at] % 4 {
            0 => damage(&mut log, true, pos),
            1 => damage(&mut log, false, pos),
            2 => damage(&mut snap, false, pos),
            _ => damage(&mut snap, true, pos),
        }
        at += 3;
        n += 1;
    }
    std::fs::write(&log_path, &log).expect("write log");
    if with_snapshot {
        std::fs::write(dir.join(format::snap_name(m as u64 + 1)), &snap).expect("write snapshot");
    }

    let (first, rec) = recover_fresh(dir);
    // Every byte of both files is covered by a checksum (headers from
    // format version 2, records, the snapshot's END count), so the outcome
    // of any damage is exact: a damaged snapshot is set aside and the log
    // replayed onto an empty store; a damaged log header sets the segment
    // aside; otherwise the log is replayed up to its first damaged record.
    let snapshot_used = with_snapshot && snap == snap_clean;
    let mut expected = if snapshot_used { at_m.clone() } else { State::new() };
    let header = format::LOG_HEADER_BYTES;
    if log.len() >= header && log[..header] == log_clean[..header] {
        let first_bad = log.iter().zip(&log_clean).position(|(a, b)| a != b).unwrap_or(log.len().min(log_clean.len()));
        let intact = record_ends.iter().take_while(|&&end| end <= first_bad).count();
        for (i, op) in ops.iter().enumerate().skip(m).take(intact) {
            apply(&mut expected, i, op);
        }
    }
    assert!(
        first == expected,
        "recovered {} items, expected {} (snapshot at {m} of {} operations, used: {snapshot_used}); warnings {:?}",
        first.len(),
        expected.len(),
        ops.len(),
        rec.warnings
    );
    if log == log_clean && snap == snap_clean {
        assert!(rec.warnings.is_empty(), "undamaged files, warnings {:?}", rec.warnings);
    }
    let (second, rec2) = recover_fresh(dir);
    assert_eq!(first, second, "a second recovery found another store");
    assert!(!rec2.warnings.iter().any(|w| w.contains("truncated")), "second recovery cut again: {:?}", rec2.warnings);
}
