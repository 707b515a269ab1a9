//! Crate-level tests of persistence over real files: round trips, the
//! snapshot cut under concurrent writers, and every kind of damage
//! recovery must survive (torn tails, flipped bytes, empty files, corrupt
//! snapshots). The server's black-box crash harness is in
//! amalgam-server's tests/persist.rs.

#[allow(dead_code)] // only its dump is used here
mod recover_invariants;

use recover_invariants::dump;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use amalgam_engine::{Config, Expiry, NewValue, Store, Update};
use amalgam_persist::{Fsync, Persistence};
use amalgam_types::op::Op;
use amalgam_types::value::Value;
use amalgam_types::{Kind, Thresholds};

mod files;
use files::{logs, TempDir};

fn cfg(dir: &Path, fsync: Fsync) -> amalgam_persist::Config {
    amalgam_persist::Config {
        dir: dir.to_path_buf(),
        fsync,
        snapshot_every: None,
        snapshot_after_writes: None,
        snapshot_cpu_percent: amalgam_persist::SNAPSHOT_CPU_PERCENT_DEFAULT,
        thresholds: Default::default(),
    }
}

fn open(dir: &Path, fsync: Fsync) -> (Arc<Store>, Arc<Persistence>, amalgam_persist::Recovered) {
    let store = Arc::new(Store::new(Config::default()).unwrap());
    let (p, rec) = Persistence::open(cfg(dir, fsync), Arc::clone(&store)).unwrap();
    (store, p, rec)
}

#[test]
fn every_operation_survives_a_restart_with_its_cas_flags_and_expiry() {
    let d = TempDir::new("roundtrip");
    let before = {
        let (store, p, _) = open(&d.0, Fsync::Always);
        store.set(b"a", b"1", 3, Expiry::Never).unwrap();
        store.set(b"gone", b"x", 0, Expiry::Never).unwrap();
        store.delete(b"gone").unwrap();
        store.set(b"n", b"10", 0, Expiry::Never).unwrap();
        store.incr(b"n", 5).unwrap();
        store.append(b"a", b"23").unwrap();
        store.set(b"ttl", b"t", 0, Expiry::At(store.now() + 1000)).unwrap();
        store.set(b"past", b"t", 0, Expiry::At(store.now() + 1)).unwrap();
        assert!(p.needs_commit());
        p.commit();
        assert!(!p.needs_commit());
        let d = dump(&store);
        p.shutdown();
        d
    };
    let (store, p, rec) = open(&d.0, Fsync::Always);
    assert!(rec.warnings.is_empty(), "{:?}", rec.warnings);
    let mut after = dump(&store);
    // "past" may have expired in between; everything else is identical.
    let mut before = before;
    before.remove(&b"past"[..]);
    after.remove(&b"past"[..]);
    assert_eq!(after, before);
    assert_eq!(store.get(b"a", |it| it.value().to_vec()), Some(b"123".to_vec()));
    assert_eq!(store.get(b"n", |it| it.value().to_vec()), Some(b"15".to_vec()));
    assert!(store.get(b"ttl", |it| it.expiry()).is_some_and(|e| matches!(e, Expiry::At(_))));
    // New writes get CAS uniques above every restored one.
    let max = after.values().map(|v| v.2).max().unwrap();
    assert!(store.set(b"new", b"v", 0, Expiry::Never).unwrap() > max);
    p.shutdown();
}

#[test]
fn flush_all_survives_a_restart() {
    let d = TempDir::new("flush");
    {
        let (store, p, _) = open(&d.0, Fsync::No);
        store.set(b"old", b"1", 0, Expiry::Never).unwrap();
        store.flush_all();
        store.set(b"new", b"2", 0, Expiry::Never).unwrap();
        p.commit();
        p.shutdown();
    }
    let (store, p, _) = open(&d.0, Fsync::No);
    assert!(store.get(b"old", |_| ()).is_none());
    assert!(store.get(b"new", |_| ()).is_some());
    p.shutdown();
}

#[test]
fn snapshot_plus_log_equals_the_store_under_concurrent_writers() {
    let d = TempDir::new("cut");
    for round in 0..3 {
        let expected = {
            let (store, p, _) = open(&d.0, Fsync::No);
            std::thread::scope(|s| {
                for w in 0..3u32 {
                    let (store, p) = (&store, &p);
                    s.spawn(move || {
                        for i in 0..20_000u32 {
                            let k = format!("k{}", (i * 7 + w * 13) % 5000);
                            match i % 10 {
                                0 => drop(store.delete(k.as_bytes())),
                                1 => drop(store.append(k.as_bytes(), b"+")),
                                _ => drop(store.set(
                                    k.as_bytes(),
                                    format!("{round}-{w}-{i}").as_bytes(),
                                    w,
                                    Expiry::Never,
                                )),
                            }
                            if i % 64 == 0 {
                                p.commit();
                            }
                        }
                        p.commit();
                    });
                }
                s.spawn(|| {
                    for _ in 0..3 {
                        p.snapshot().unwrap();
                    }
                });
            });
            let e = dump(&store);
            p.shutdown();
            e
        };
        let (store, p, rec) = open(&d.0, Fsync::No);
        assert!(rec.snapshot.is_some());
        assert!(rec.warnings.is_empty(), "{:?}", rec.warnings);
        assert_eq!(dump(&store), expected, "round {round}");
        p.shutdown();
    }
    // Retention: two snapshots, and no log segment wholly before the older.
    let snaps = std::fs::read_dir(&d.0)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "ams"))
        .count();
    assert_eq!(snaps, 2);
}

/// Writes `n` keys (one log record each) and returns the dir's last log.
fn write_keys(dir: &Path, n: u32) -> PathBuf {
    let (store, p, _) = open(dir, Fsync::No);
    for i in 0..n {
        store.set(format!("key{i}").as_bytes(), format!("value{i}").as_bytes(), 0, Expiry::Never).unwrap();
    }
    p.commit();
    p.shutdown();
    logs(dir).into_iter().rev().find(|p| std::fs::metadata(p).unwrap().len() > 24).unwrap()
}

fn keys_present(store: &Store, n: u32) -> u32 {
    (0..n).take_while(|i| store.get(format!("key{i}").as_bytes(), |_| ()).is_some()).count() as u32
}

#[test]
fn a_torn_tail_is_truncated_at_every_cut() {
    let d = TempDir::new("torn");
    let log = write_keys(&d.0, 20);
    let whole = std::fs::read(&log).unwrap();
    // Record boundaries: a cut there is a shorter, sound log (no warning).
    let mut boundaries = vec![24];
    while *boundaries.last().unwrap() < whole.len() {
        let at = *boundaries.last().unwrap();
        boundaries.push(at + amalgam_persist::format::read_record(&whole[at..]).unwrap().1);
    }
    let mut last_kept = 0;
    for cut in (24..whole.len()).rev().step_by(3) {
        std::fs::write(&log, &whole[..cut]).unwrap();
        for e in std::fs::read_dir(&d.0).unwrap() {
            let p = e.unwrap().path();
            if p != log {
                std::fs::remove_file(p).unwrap();
            }
        }
        let (store, p, rec) = open(&d.0, Fsync::No);
        let kept = keys_present(&store, 20);
        assert_eq!(kept as usize, store.len(), "only a prefix survives");
        assert!(kept < 20);
        assert_eq!(rec.warnings.is_empty(), boundaries.contains(&cut), "cut {cut}: {:?}", rec.warnings);
        assert!(last_kept == 0 || kept <= last_kept);
        last_kept = kept;
        // The truncated log is now clean: a second start has no warning.
        p.shutdown();
        drop(store);
        let (_, p, rec) = open(&d.0, Fsync::No);
        assert!(rec.warnings.is_empty(), "cut {cut}: {:?}", rec.warnings);
        p.shutdown();
    }
}

#[test]
fn a_flipped_byte_keeps_the_records_before_it() {
    let d = TempDir::new("flip");
    let log = write_keys(&d.0, 50);
    let mut bytes = std::fs::read(&log).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x40;
    std::fs::write(&log, &bytes).unwrap();
    let (store, p, rec) = open(&d.0, Fsync::No);
    let kept = keys_present(&store, 50);
    assert!(kept > 10 && kept < 50, "kept {kept}");
    assert_eq!(kept as usize, store.len());
    assert_eq!(rec.warnings.len(), 1, "{:?}", rec.warnings);
    p.shutdown();
}

#[test]
fn empty_files_do_not_stop_a_start() {
    let d = TempDir::new("empty");
    write_keys(&d.0, 5);
    std::fs::write(d.0.join("log-00000000000000099999.aml"), b"").unwrap();
    std::fs::write(d.0.join("snap-00000000000000099999.ams"), b"").unwrap();
    let (store, p, rec) = open(&d.0, Fsync::No);
    assert_eq!(keys_present(&store, 5), 5);
    assert_eq!(rec.warnings.len(), 1, "the empty snapshot is set aside: {:?}", rec.warnings);
    p.shutdown();
}

#[test]
fn a_corrupt_newest_snapshot_falls_back_to_the_previous_one_and_its_log() {
    let d = TempDir::new("fallback");
    let (store, p, _) = open(&d.0, Fsync::No);
    for i in 0..100u32 {
        store.set(format!("key{i}").as_bytes(), b"first", 0, Expiry::Never).unwrap();
    }
    p.commit();
    p.snapshot().unwrap();
    for i in 0..100u32 {
        store.set(format!("key{i}").as_bytes(), b"second", 0, Expiry::Never).unwrap();
    }
    p.commit();
    let newest = p.snapshot().unwrap();
    store.set(b"key0", b"third", 0, Expiry::Never).unwrap();
    p.commit();
    let expected = dump(&store);
    p.shutdown();
    drop(store);
    let snap = d.0.join(amalgam_persist::format::snap_name(newest.log_seq));
    let mut bytes = std::fs::read(&snap).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 1;
    std::fs::write(&snap, &bytes).unwrap();
    let (store, p, rec) = open(&d.0, Fsync::No);
    assert_eq!(rec.warnings.len(), 1, "{:?}", rec.warnings);
    assert!(rec.snapshot.as_ref().is_some_and(|s| s.0 != snap));
    assert_eq!(dump(&store), expected);
    p.shutdown();
}

#[test]
fn a_missing_snapshot_recovers_from_the_whole_log() {
    let d = TempDir::new("nosnap");
    write_keys(&d.0, 30);
    // No snapshot was ever taken: the log is the whole history.
    let (store, p, rec) = open(&d.0, Fsync::No);
    assert!(rec.snapshot.is_none());
    assert_eq!(keys_present(&store, 30), 30);
    p.shutdown();
}

#[test]
fn damage_in_a_segment_before_the_newest_cut_costs_nothing() {
    let d = TempDir::new("oldseg");
    let (store, p, _) = open(&d.0, Fsync::No);
    for i in 0..50u32 {
        store.set(format!("key{i}").as_bytes(), b"first", 0, Expiry::Never).unwrap();
    }
    p.commit();
    let older = p.snapshot().unwrap();
    for i in 0..50u32 {
        store.set(format!("key{i}").as_bytes(), b"second", 0, Expiry::Never).unwrap();
    }
    p.commit();
    let newest = p.snapshot().unwrap();
    store.set(b"after", b"cut", 0, Expiry::Never).unwrap();
    p.commit();
    let expected = dump(&store);
    p.shutdown();
    drop(store);
    // The segment holding records [older.log_seq, newest.log_seq) is kept
    // for a fallback only; damage it.
    let seg = d.0.join(amalgam_persist::format::log_name(older.log_seq));
    let mut bytes = std::fs::read(&seg).unwrap();
    assert!(bytes.len() > 200);
    let at = bytes.len() / 2;
    bytes[at] ^= 0x10;
    std::fs::write(&seg, &bytes).unwrap();
    let (store, p, rec) = open(&d.0, Fsync::No);
    assert!(rec.warnings.is_empty(), "{:?}", rec.warnings);
    assert!(rec.snapshot.as_ref().is_some_and(|s| s.0.ends_with(amalgam_persist::format::snap_name(newest.log_seq))));
    assert_eq!(dump(&store), expected);
    p.shutdown();
}

/// One collection write as the server makes it (amalgam-server's
/// typed.rs): an in-place op on the key's object, journaled as its OP
/// record, or a new object for an absent key; an emptied list goes.
fn list_write(store: &Store, key: &[u8], op: &Op, t: &Thresholds) {
    store
        .update(key, |old| {
            if let Some(cell) = old.and_then(|it| it.object()) {
                let mut g = cell.write();
                let v = g.as_any_mut().downcast_mut::<Value>().expect("a list");
                if op.apply(v, t).is_err() {
                    return (Update::Keep, ());
                }
                if v.is_empty() {
                    return (Update::Remove, ());
                }
                return (Update::InPlace { record: op.to_bytes() }, ());
            }
            let mut v = Value::new(Kind::List, t);
            if op.apply(&mut v, t).is_err() || v.is_empty() {
                return (Update::Keep, ());
            }
            let put = Update::Put {
                value: NewValue::Object(Box::new(v)),
                flags: 0,
                expiry: Expiry::Never,
                fresh_cas: true,
                marks: 0,
            };
            (put, ())
        })
        .unwrap();
}

/// The lists at `keys`: their elements, or None.
fn lists(store: &Store, keys: &[String]) -> Vec<Option<Vec<Vec<u8>>>> {
    keys.iter()
        .map(|k| {
            store.get(k.as_bytes(), |it| {
                let cell = it.object().expect("an object");
                let g = cell.read();
                let Some(Value::List(l)) = g.as_any().downcast_ref::<Value>() else { panic!("not a list") };
                l.iter().map(<[u8]>::to_vec).collect()
            })
        })
        .collect()
}

/// Ops are not idempotent as PUTs are (a push replayed twice is two
/// pushes), and a snapshot's cut can fall between an op's effect and its
/// record (a write journaled after the log's rotation, before the
/// snapshot is published, is in both). Writers pushing, popping and
/// rotating large lists while snapshots run; the store recovered from the
/// newest snapshot and the log after it must equal the store as it was:
/// each OP applies only to the object version before it (engine
/// `ObjectCell::version`).
#[test]
fn collection_ops_under_concurrent_writers_and_snapshots_recover_exactly() {
    let d = TempDir::new("ops-cut");
    let t = Thresholds::default();
    let keys: Vec<String> = (0..12).map(|i| format!("list{i}")).collect();
    for round in 0..3u32 {
        let expected = {
            let (store, p, _) = open(&d.0, Fsync::No);
            std::thread::scope(|s| {
                for w in 0..3u32 {
                    let (store, p, keys, t) = (&store, &p, &keys, &t);
                    s.spawn(move || {
                        for i in 0..6_000u32 {
                            let k = &keys[((i * 7 + w * 5) % 12) as usize];
                            let op = match i % 5 {
                                0 | 1 => Op::Push {
                                    left: i % 2 == 0,
                                    items: vec![format!("{round}-{w}-{i}-{}", "x".repeat(40)).into_bytes()],
                                },
                                2 => Op::Pop { left: w % 2 == 0, count: 1 },
                                3 => Op::LRotate { from_left: true, to_left: false },
                                _ => Op::LRem { count: 1, item: format!("{round}-{w}-{}", i - 4).into_bytes() },
                            };
                            list_write(store, k.as_bytes(), &op, t);
                            if i % 64 == 0 {
                                p.commit();
                            }
                        }
                        p.commit();
                    });
                }
                s.spawn(|| {
                    for _ in 0..4 {
                        p.snapshot().unwrap();
                    }
                });
            });
            let e = lists(&store, &keys);
            p.shutdown();
            e
        };
        let (store, p, rec) = open(&d.0, Fsync::No);
        assert!(rec.snapshot.is_some());
        assert!(rec.warnings.is_empty(), "{:?}", rec.warnings);
        assert_eq!(lists(&store, &keys), expected, "round {round}");
        p.shutdown();
    }
}
