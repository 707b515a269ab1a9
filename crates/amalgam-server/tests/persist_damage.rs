//! Persistence (issue 5), black box: damaged files of a real amalgam
//! (`--dir`), as a crash or a bad disk leaves them: a torn or corrupt log
//! tail, a corrupt record in the middle, a corrupt record in a segment
//! older than the newest snapshot, empty log and snapshot files, a corrupt
//! (flipped, truncated, bad magic) newest snapshot, deleted snapshots.
//! None may stop the server from starting or cost the data written before
//! the damage, and writes made after recovering must survive the next
//! crash.
//!
//! amalgam only, as the crash harness in persist.rs (whose notes say how
//! the persistence tests divide the work); their shared harness is
//! common/persist.rs. A failing test keeps its directory (data, stderr of
//! every start) and prints where it is.
//!
//! A server bug was found here (see the note of
//! `corrupt_log_before_the_newest_snapshot_costs_nothing`); it is fixed.

mod common;
#[path = "common/persist.rs"]
mod persist_common;

use persist_common::*;
use std::collections::HashMap;

// ------------------------------------------------------------- corruption

/// Asserts a model of key -> value (None: absent) against the server.
#[track_caller]
fn assert_model(c: &mut Text, model: &HashMap<String, Option<Vec<u8>>>, why: &str) {
    let names: Vec<&str> = model.keys().map(|s| s.as_str()).collect();
    let got = c.get_many(&names);
    let mut bad = Vec::new();
    for (k, want) in model {
        let now = got.get(k).map(|(_, v)| v.clone());
        if now != *want {
            // Values begin "<key>.v<version>.": show that much.
            let show = |v: &Option<Vec<u8>>| match v {
                None => "absent".to_string(),
                Some(v) => String::from_utf8_lossy(&v[..v.len().min(k.len() + 4)]).into_owned(),
            };
            bad.push(format!("{k}: {} (want {})", show(&now), show(want)));
        }
    }
    bad.sort();
    assert!(bad.is_empty(), "{why}: {} keys wrong: {bad:?}", bad.len());
}

/// True if a server's stderr carries a warning (recovery prints
/// "amalgam: recovery: warning: …" for each damaged file).
fn warned(stderr: &str) -> bool {
    stderr.to_ascii_lowercase().contains("warning")
}

/// After recovery from damage, new writes are durable too: the server
/// must not append them behind the damaged bytes (where the next recovery
/// would stop before them).
#[track_caller]
fn assert_writes_after_recovery_survive(node: &mut Node, tag: &str) {
    let mut c = node.text();
    put_keys(&mut c, tag, 20);
    drop(c);
    node.kill();
    node.boot();
    let mut c = node.text();
    assert_keys(&mut c, tag, 0..20, "writes made after recovering from damage, after another SIGKILL");
}

/// How the last log record is damaged.
#[derive(Debug, Clone, Copy)]
enum TailDamage {
    /// The file ends in the middle of the record's body.
    CutInBody,
    /// The file ends inside the record's 8-byte header.
    CutInHeader,
    /// One byte of the record's value is flipped (CRC mismatch).
    FlipInValue,
    /// The length field says far more than the file holds.
    HugeLength,
}

/// A torn or corrupt tail (the last record of the newest log segment) is
/// cut at the last good record: the server starts, serves, keeps every
/// record before, warns on stderr, and later writes survive a crash.
#[test]
fn damaged_log_tail_is_cut_at_the_last_good_record() {
    for damage in [TailDamage::CutInBody, TailDamage::CutInHeader, TailDamage::FlipInValue, TailDamage::HugeLength] {
        let Some(mut node) = Node::start("tail", LOG_ONLY) else { return };
        let mut c = node.text();
        put_keys(&mut c, "k", 100);
        drop(c);
        node.kill();
        let dir = node.dir();
        let (path, _, recs) = last_log(&dir);
        let last = recs.last().unwrap_or_else(|| panic!("no record in {}", path.display()));
        assert_eq!(last.key(), Some(&b"k99"[..]), "the last record is the last set ({damage:?})");
        let mut bytes = std::fs::read(&path).unwrap();
        let body_at = last.offset + RECORD_HEADER_BYTES;
        match damage {
            TailDamage::CutInBody => bytes.truncate(body_at + last.body.len() / 2),
            TailDamage::CutInHeader => bytes.truncate(last.offset + 3),
            TailDamage::FlipInValue => bytes[body_at + last.body.len() - 1] ^= 0x20,
            TailDamage::HugeLength => {
                bytes[last.offset..last.offset + 4].copy_from_slice(&0xFFFF_FFF0u32.to_le_bytes())
            }
        }
        std::fs::write(&path, &bytes).unwrap();
        node.boot();
        let mut c = node.text();
        assert_keys(&mut c, "k", 0..99, &format!("{damage:?}: records before the damaged one"));
        assert_eq!(c.get("k99"), None, "{damage:?}: the damaged record's key");
        let err = node.stderr();
        eprintln!("{damage:?}: stderr of the recovery:\n{err}");
        assert!(warned(&err), "{damage:?}: no warning on stderr about the damaged log tail");
        assert_writes_after_recovery_survive(&mut node, "after");
        let mut c = node.text();
        assert_keys(&mut c, "k", 0..99, &format!("{damage:?}: records before the damage, after a second recovery"));
        node.stop();
    }
}

/// A flipped byte in a record in the middle of the log: the server starts,
/// serves, keeps every record before the damaged one (what follows it is
/// cut with it), and later writes survive a crash.
#[test]
fn corrupt_record_in_the_middle_of_the_log_keeps_the_records_before() {
    let Some(mut node) = Node::start("middle", LOG_ONLY) else { return };
    let mut c = node.text();
    put_keys(&mut c, "k", 100);
    drop(c);
    node.kill();
    let (path, _, recs) = last_log(&node.dir());
    let rec = recs.iter().find(|r| r.key() == Some(&b"k50"[..])).expect("a record of k50 in the newest log");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[rec.offset + RECORD_HEADER_BYTES + rec.body.len() / 2] ^= 0x01;
    std::fs::write(&path, &bytes).unwrap();
    node.boot();
    let mut c = node.text();
    assert_keys(&mut c, "k", 0..50, "records before the corrupt one");
    eprintln!("stderr of the recovery:\n{}", node.stderr());
    assert!(warned(&node.stderr()), "no warning on stderr about the corrupt record");
    assert_writes_after_recovery_survive(&mut node, "after");
    let mut c = node.text();
    assert_keys(&mut c, "k", 0..50, "records before the corrupt one, after a second recovery");
    node.stop();
}

/// Empty (0-byte) files, as a crash right after creating them leaves:
/// a log segment after the last one, a snapshot newer than every record,
/// a half-written snapshot's temporary file. The server starts, keeps its
/// data, and later writes survive a crash.
#[test]
fn empty_log_and_snapshot_files_are_survived() {
    let Some(mut node) = Node::start("empty", LOG_ONLY) else { return };
    let mut c = node.text();
    put_keys(&mut c, "k", 50);
    drop(c);
    node.kill();
    let dir = node.dir();
    let (_, first_seq, recs) = last_log(&dir);
    let next = first_seq + recs.len() as u64;
    std::fs::write(dir.join(format!("log-{next:020}.aml")), b"").unwrap();
    node.boot();
    let mut c = node.text();
    assert_keys(&mut c, "k", 0..50, "after an empty log segment");
    assert_writes_after_recovery_survive(&mut node, "a");
    node.kill();

    let (_, first_seq, recs) = last_log(&dir);
    let next = first_seq + recs.len() as u64;
    std::fs::write(dir.join(format!("snap-{next:020}.ams")), b"").unwrap();
    std::fs::write(dir.join(format!("snap-{:020}.ams.tmp", next + 1)), b"AMALGSNP half-written").unwrap();
    node.boot();
    let mut c = node.text();
    assert_keys(&mut c, "k", 0..50, "after an empty snapshot");
    assert_keys(&mut c, "a", 0..20, "after an empty snapshot");
    eprintln!("stderr with an empty snapshot:\n{}", node.stderr());
    assert_writes_after_recovery_survive(&mut node, "b");
    node.stop();
}

/// A directory holding nothing but empty files (a crash at the very first
/// start): the server starts empty and works.
#[test]
fn directory_of_only_empty_files_starts_empty() {
    let Some(mut node) = Node::start("onlyempty", LOG_ONLY) else { return };
    node.kill();
    let dir = node.dir();
    for (_, p) in log_files(&dir).into_iter().chain(snap_files(&dir)) {
        std::fs::remove_file(p).unwrap();
    }
    std::fs::write(dir.join(format!("log-{:020}.aml", 0)), b"").unwrap();
    std::fs::write(dir.join(format!("snap-{:020}.ams", 0)), b"").unwrap();
    node.boot();
    let mut c = node.text();
    assert_eq!(c.get("k0"), None);
    put_keys(&mut c, "k", 10);
    drop(c);
    node.kill();
    node.boot();
    let mut c = node.text();
    assert_keys(&mut c, "k", 0..10, "written after starting on empty files");
    node.stop();
}

/// Three phases with overwrites and deletes, with a SAVE after the first
/// when `saves` >= 1 and after the second when `saves` >= 2; returns the
/// model of the final state.
fn three_phases(node: &Node, saves: usize) -> HashMap<String, Option<Vec<u8>>> {
    let mut model = HashMap::new();
    let mut c = node.text();
    let set = |c: &mut Text, k: String, v: u64, model: &mut HashMap<String, Option<Vec<u8>>>| {
        let value = val(&k, v);
        c.set(&k, 0, 0, &value);
        model.insert(k, Some(value));
    };
    let del = |c: &mut Text, k: String, model: &mut HashMap<String, Option<Vec<u8>>>| {
        assert_eq!(c.call(&format!("delete {k}\r\n")), "DELETED", "delete {k}");
        model.insert(k, None);
    };
    for i in 0..60 {
        set(&mut c, format!("a{i}"), 1, &mut model);
    }
    if saves >= 1 {
        resp_save(node);
    }
    for i in 0..60 {
        set(&mut c, format!("b{i}"), 1, &mut model);
    }
    for i in 0..20 {
        set(&mut c, format!("a{i}"), 2, &mut model);
    }
    for i in 20..30 {
        del(&mut c, format!("a{i}"), &mut model);
    }
    if saves >= 2 {
        resp_save(node);
    }
    for i in 0..60 {
        set(&mut c, format!("c{i}"), 1, &mut model);
    }
    for i in 0..10 {
        set(&mut c, format!("a{i}"), 3, &mut model);
    }
    for i in 0..10 {
        del(&mut c, format!("b{i}"), &mut model);
    }
    for i in 30..35 {
        set(&mut c, format!("a{i}"), 4, &mut model);
    }
    model
}

/// How the newest snapshot is damaged.
#[derive(Debug, Clone, Copy)]
enum SnapDamage {
    /// A byte in the middle flipped.
    Flip,
    /// Cut in half: no SNAP_END, so incomplete.
    Truncate,
    /// The header's magic overwritten.
    BadMagic,
}

/// A corrupt newest snapshot falls back to the previous snapshot plus the
/// log after it: every phase's writes, overwrites and deletes are as they
/// were before the crash.
#[test]
fn corrupt_newest_snapshot_falls_back_to_the_previous_one() {
    for damage in [SnapDamage::Flip, SnapDamage::Truncate, SnapDamage::BadMagic] {
        let Some(mut node) = Node::start("snapfallback", LOG_ONLY) else { return };
        let model = three_phases(&node, 2);
        node.kill();
        let dir = node.dir();
        let snaps = snap_files(&dir);
        assert!(snaps.len() >= 2, "two SAVEs left fewer than two snapshots: {}", listing(&dir));
        let (_, newest) = snaps.last().unwrap();
        let mut bytes = std::fs::read(newest).unwrap();
        assert_eq!(&bytes[..8], SNAP_MAGIC, "snapshot magic of {}", newest.display());
        let (recs, clean) = records(&bytes, SNAP_HEADER_BYTES);
        assert!(clean, "{}: an undamaged snapshot ends at a record boundary", newest.display());
        let end = recs.last().expect("records in the snapshot");
        assert_eq!(end.body[0], REC_SNAP_END, "the snapshot's last record is SNAP_END");
        match damage {
            SnapDamage::Flip => {
                let mid = bytes.len() / 2;
                bytes[mid] ^= 0x10;
            }
            SnapDamage::Truncate => bytes.truncate(bytes.len() / 2),
            SnapDamage::BadMagic => bytes[..8].copy_from_slice(b"XXXXXXXX"),
        }
        std::fs::write(newest, &bytes).unwrap();
        let files = listing(&dir);
        node.boot();
        let mut c = node.text();
        let why = format!("{damage:?} newest snapshot; files {files}; stderr:\n{}", node.stderr());
        assert_model(&mut c, &model, &why);
        eprintln!("{damage:?}: stderr of the recovery:\n{}", node.stderr());
        assert!(warned(&node.stderr()), "{damage:?}: no warning on stderr about the corrupt snapshot");
        assert_writes_after_recovery_survive(&mut node, "after");
        let mut c = node.text();
        assert_model(&mut c, &model, &format!("{damage:?}: after a second recovery"));
        node.stop();
    }
}

/// A deleted snapshot, with the log still covering the whole history,
/// recovers from the log alone: with snapshots off and no SAVE (whatever
/// snapshot exists goes), and after one SAVE (the server keeps the log
/// from the start while it has only one snapshot, which is what a
/// fallback to log-only needs).
#[test]
fn missing_snapshot_recovers_from_the_log_alone() {
    for saves in [0, 1] {
        let Some(mut node) = Node::start("nosnap", LOG_ONLY) else { return };
        let model = three_phases(&node, saves);
        node.kill();
        let dir = node.dir();
        let files = listing(&dir);
        assert_eq!(snap_files(&dir).len(), saves, "snapshots after {saves} SAVEs: {files}");
        for (_, p) in snap_files(&dir) {
            std::fs::remove_file(p).unwrap();
        }
        node.boot();
        let mut c = node.text();
        assert_model(&mut c, &model, &format!("{saves} SAVEs, snapshots deleted; files before: {files}"));
        assert_writes_after_recovery_survive(&mut node, "after");
        node.stop();
    }
}

/// Both snapshots deleted after two SAVEs: the log before the older one's
/// cut is gone (retired by design), so the data cannot all come back; the
/// server still starts, warns and serves.
#[test]
fn all_snapshots_deleted_still_starts() {
    let Some(mut node) = Node::start("nosnaps", LOG_ONLY) else { return };
    let _ = three_phases(&node, 2);
    node.kill();
    let dir = node.dir();
    for (_, p) in snap_files(&dir) {
        std::fs::remove_file(p).unwrap();
    }
    node.boot();
    let mut c = node.text();
    assert!(c.call("version\r\n").starts_with("VERSION "), "serves after losing its snapshots");
    eprintln!("stderr without snapshots:\n{}", node.stderr());
    assert!(warned(&node.stderr()), "no warning about the records missing before the log");
    assert_writes_after_recovery_survive(&mut node, "after");
    node.stop();
}

/// A corrupt record in a log segment that lies wholly before the newest
/// (sound) snapshot's cut (kept only for a fallback to the older
/// snapshot) is not needed: the newest snapshot plus the log after its cut
/// still hold everything, and nothing acknowledged may be lost.
///
/// (Found a bug at 8af6596, fixed in 22dee85: recovery read every segment
/// in order, checking records before the cut too, so the damaged old
/// segment set aside the one after the cut, with every write since the
/// last SAVE: 85 acknowledged changes lost although every file they need
/// was sound.)
#[test]
fn corrupt_log_before_the_newest_snapshot_costs_nothing() {
    let Some(mut node) = Node::start("oldseg", LOG_ONLY) else { return };
    let model = three_phases(&node, 2);
    node.kill();
    let dir = node.dir();
    let snaps = snap_files(&dir);
    assert_eq!(snaps.len(), 2, "two SAVEs: {}", listing(&dir));
    let newest_cut = snaps[1].0;
    let (seq, old) = log_files(&dir)
        .into_iter()
        .find(|(seq, _)| *seq < newest_cut)
        .unwrap_or_else(|| panic!("no log segment before the newest cut {newest_cut}: {}", listing(&dir)));
    let mut bytes = std::fs::read(&old).unwrap();
    let (recs, _) = records(&bytes, LOG_HEADER_BYTES);
    assert!(seq + recs.len() as u64 <= newest_cut, "segment {seq} ends before the cut {newest_cut}");
    let mid = &recs[recs.len() / 2];
    bytes[mid.offset + RECORD_HEADER_BYTES + mid.body.len() / 2] ^= 0x04;
    std::fs::write(&old, &bytes).unwrap();
    let files = listing(&dir);
    node.boot();
    let mut c = node.text();
    let why = format!("corrupt record in {}; files {files}; stderr:\n{}", old.display(), node.stderr());
    assert_model(&mut c, &model, &why);
    node.stop();
}
