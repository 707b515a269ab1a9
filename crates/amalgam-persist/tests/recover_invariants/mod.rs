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
//!               o & 3: 0 = PUT key (o >> 2) & 7 with a value of the next
//!               byte % 24 bytes (taken from the input); 1 = SADD of member
//!               `m<next byte % 16>` to the key's set: an OP record (SAdd,
//!               the set's next version) if the key holds a set, else a
//!               PUT_TYPED of a new set object (version 0) replacing what
//!               it holds; 2 = DELETE; 3 = FLUSH
//! after 0xFF    damage, 3 bytes each: kind % 4 (0 cut the log, 1 flip a log
//!               byte, 2 flip a snapshot byte, 3 cut the snapshot) and a
//!               little-endian u16 position (modulo the file's length)
//! ```
//!
//! The model: operation i gets CAS i + 1 and sequence number i + 1 (an
//! SADD to an existing set keeps the set's flags and CAS, as an in-place
//! write keeps its item's); the
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

use amalgam_engine::{Config, Expiry, Store, TAG_OBJECT};
use amalgam_persist::format;
use amalgam_types::op::Op as SetOp;
use amalgam_types::value::{tag_of, Value};
use amalgam_types::{Kind, Thresholds};
use std::collections::BTreeSet;

/// Operations read from one input at most (bounds the work per input).
pub const OPS_MAX: usize = 256;
/// Damage entries applied at most.
pub const DAMAGE_MAX: usize = 8;

/// key -> (value, flags, cas); a set object's value is rendered as
/// `set@<version>:<sorted members, comma-separated>`.
pub type State = BTreeMap<Vec<u8>, (Vec<u8>, u32, u64)>;

enum Op {
    Put(Vec<u8>, Vec<u8>),
    Add(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
    Flush,
}

/// The model's value of a key: bytes, or a set object at a version.
#[derive(Clone)]
enum Val {
    Bytes(Vec<u8>),
    Set(BTreeSet<Vec<u8>>, u64),
}

/// key -> (value, flags, cas)
type Model = BTreeMap<Vec<u8>, (Val, u32, u64)>;

fn render_set<'a>(members: impl Iterator<Item = &'a [u8]>, version: u64) -> Vec<u8> {
    let sorted: BTreeSet<&[u8]> = members.collect();
    let mut out = format!("set@{version}:").into_bytes();
    out.extend(sorted.into_iter().collect::<Vec<_>>().join(&b","[..]));
    out
}

fn render(model: &Model) -> State {
    model
        .iter()
        .map(|(k, (v, flags, cas))| {
            let v = match v {
                Val::Bytes(b) => b.clone(),
                Val::Set(m, version) => render_set(m.iter().map(Vec::as_slice), *version),
            };
            (k.clone(), (v, *flags, *cas))
        })
        .collect()
}

/// Every live item of `store` (a set object rendered as in [`State`]).
pub fn dump(store: &Store) -> State {
    let mut out = BTreeMap::new();
    let mut cursor = 0;
    for _ in 0..10_000_000 {
        cursor = store.scan(cursor, |it| {
            let v = match it.object() {
                Some(cell) => {
                    let g = cell.read();
                    match g.as_any().downcast_ref::<Value>() {
                        Some(Value::Set(st)) => {
                            let members: Vec<Vec<u8>> = st.iter().map(|m| m.to_vec()).collect();
                            render_set(members.iter().map(Vec::as_slice), cell.version())
                        }
                        _ => b"another object".to_vec(),
                    }
                }
                None => it.value().to_vec(),
            };
            out.insert(it.key().to_vec(), (v, it.flags(), it.cas()));
        });
        if cursor == 0 {
            break;
        }
    }
    out
}

fn apply(state: &mut Model, i: usize, op: &Op) {
    let cas = i as u64 + 1;
    match op {
        Op::Put(k, v) => {
            state.insert(k.clone(), (Val::Bytes(v.clone()), i as u32, cas));
        }
        Op::Add(k, m) => match state.get_mut(k) {
            Some((Val::Set(members, version), _, _)) => {
                members.insert(m.clone());
                *version += 1;
            }
            _ => {
                state.insert(k.clone(), (Val::Set(BTreeSet::from([m.clone()]), 0), i as u32, cas));
            }
        },
        Op::Delete(k) => {
            state.remove(k);
        }
        Op::Flush => state.clear(),
    }
}

/// A set object's PUT_TYPED value: kind, version, encoding.
fn set_object(members: &BTreeSet<Vec<u8>>, version: u64) -> Vec<u8> {
    let t = Thresholds::default();
    let mut v = Value::new(Kind::Set, &t);
    SetOp::SAdd(members.iter().cloned().collect()).apply(&mut v, &t).expect("a set");
    let mut out = vec![tag_of(Kind::Set)];
    out.extend_from_slice(&version.to_le_bytes());
    v.encode(&mut out);
    out
}

/// Appends operation i's record; `before` is the model before it.
/// Returns the object version an OP record made (None for other records).
fn encode(out: &mut Vec<u8>, i: usize, op: &Op, before: &Model) -> Option<u64> {
    match op {
        Op::Put(k, v) => format::put_raw(out, k, v, i as u32, 0, i as u64 + 1),
        Op::Add(k, m) => match before.get(k) {
            Some((Val::Set(_, version), _, _)) => {
                format::op(out, k, version + 1, &SetOp::SAdd(vec![m.clone()]).to_bytes());
                return Some(version + 1);
            }
            _ => {
                let value = set_object(&BTreeSet::from([m.clone()]), 0);
                format::put_typed(out, k, TAG_OBJECT, i as u32, Expiry::Never, i as u64 + 1, &value)
            }
        },
        Op::Delete(k) => format::delete(out, k),
        Op::Flush => format::flush(out, i as u64 + 1),
    }
    None
}

/// Replays operation i's record as recovery does: an OP (`op_version`
/// Some) applies only to the set at the version before it (on a store
/// without the snapshot it was logged after, it finds none: skipped).
fn replay(state: &mut Model, i: usize, op: &Op, op_version: Option<u64>) {
    match (op, op_version) {
        (Op::Add(k, m), Some(v)) => {
            if let Some((Val::Set(members, version), _, _)) = state.get_mut(k) {
                if *version + 1 == v {
                    members.insert(m.clone());
                    *version = v;
                }
            }
        }
        _ => apply(state, i, op),
    }
}

/// Buckets of the store each recovery starts from, as a power of two: a
/// program touches at most 8 keys, and the default table (1,024 buckets)
/// made zeroing and scanning it a large part of the fuzz target's time.
/// The table grows as it would for any load.
const SCRATCH_BUCKETS_LOG2: u32 = 3;

fn recover_fresh(dir: &Path) -> (State, amalgam_persist::Recovered) {
    let store =
        Store::new(Config { initial_buckets_log2: SCRATCH_BUCKETS_LOG2, ..Config::default() }).expect("scratch store");
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
            1 => {
                let m = format!("m{}", data.get(at).map_or(0, |b| b % 16)).into_bytes();
                at += 1;
                Op::Add(key, m)
            }
            0 => {
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
    let mut at_m = Model::new();
    for (i, op) in ops.iter().enumerate().take(m) {
        apply(&mut at_m, i, op);
    }
    let mut log = format::log_header(m as u64 + 1).to_vec();
    // record_ends[j]: the byte offset after the record of operation m + j.
    let mut record_ends = Vec::new();
    let mut running = at_m.clone();
    let mut op_versions = Vec::new();
    for (i, op) in ops.iter().enumerate().skip(m) {
        op_versions.push(encode(&mut log, i, op, &running));
        apply(&mut running, i, op);
        record_ends.push(log.len());
    }
    let mut snap = Vec::new();
    if with_snapshot {
        snap.extend_from_slice(&format::snap_header(m as u64 + 1, 1_700_000_000));
        for (k, (v, flags, cas)) in &at_m {
            match v {
                Val::Bytes(b) => format::put_raw(&mut snap, k, b, *flags, 0, *cas),
                Val::Set(members, version) => {
                    let value = set_object(members, *version);
                    format::put_typed(&mut snap, k, TAG_OBJECT, *flags, Expiry::Never, *cas, &value)
                }
            }
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
    let mut expected = if snapshot_used { at_m.clone() } else { Model::new() };
    let header = format::LOG_HEADER_BYTES;
    if log.len() >= header && log[..header] == log_clean[..header] {
        let first_bad = log.iter().zip(&log_clean).position(|(a, b)| a != b).unwrap_or(log.len().min(log_clean.len()));
        let intact = record_ends.iter().take_while(|&&end| end <= first_bad).count();
        for ((i, op), v) in ops.iter().enumerate().skip(m).zip(&op_versions).take(intact) {
            replay(&mut expected, i, op, *v);
        }
    }
    let expected = render(&expected);
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
