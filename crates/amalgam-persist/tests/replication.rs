//! Crate-level tests of the replication stream (`repl.rs`): a full sync
//! streamed from a store while writers change it, then the backlog from
//! the cut, applied to a second store, must leave it equal to the first —
//! strings, deletes, flushes and large lists changed in place (OP
//! records). The server's black-box tests (tests/python/test_replication.py)
//! drive the same over TCP between real processes.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use amalgam_engine::{Config, Expiry, NewValue, Store, Update};
use amalgam_persist::format::{read_record, Bad};
use amalgam_persist::repl::{
    full_sync, Applier, Backlog, StreamJournal, REPL_BACKLOG_BYTES_DEFAULT, SYNC_HEADER_BYTES,
};
use amalgam_types::op::Op;
use amalgam_types::value::Value;
use amalgam_types::{Kind, Thresholds};

const KEYS: u64 = if cfg!(debug_assertions) { 3_000 } else { 30_000 };
const WRITES_PER_WRITER: u64 = if cfg!(debug_assertions) { 20_000 } else { 200_000 };

/// A primary: a store whose journal feeds `backlog`.
fn primary() -> (Arc<Store>, Arc<Backlog>) {
    let store = Arc::new(Store::new(Config { initial_buckets_log2: 6, ..Config::default() }).unwrap());
    let backlog = Arc::new(Backlog::new(REPL_BACKLOG_BYTES_DEFAULT));
    assert!(store.set_journal(Arc::new(StreamJournal::new(None, Arc::clone(&backlog)))).is_ok());
    (store, backlog)
}

/// One list push as the server makes it: in place with its OP record on
/// an object, or a new object.
fn push(store: &Store, key: &[u8], elem: &[u8], t: &Thresholds) {
    let op = Op::Push { left: false, items: vec![elem.to_vec()] };
    store
        .update(key, |old| {
            if let Some(cell) = old.and_then(|it| it.object()) {
                let mut g = cell.write();
                let v = g.as_any_mut().downcast_mut::<Value>().expect("a list");
                op.apply(v, t).unwrap();
                return (Update::InPlace { record: op.to_bytes() }, ());
            }
            let mut v = Value::new(Kind::List, t);
            op.apply(&mut v, t).unwrap();
            let value = NewValue::Object(Box::new(v));
            (Update::Put { value, flags: 0, expiry: Expiry::Never, fresh_cas: true, marks: 0 }, ())
        })
        .unwrap();
}

/// Every key: its value (a list's elements joined by commas), flags,
/// CAS and, for an object, its version.
fn dump(store: &Store) -> BTreeMap<Vec<u8>, (Vec<u8>, u32, u64, u64)> {
    let mut out = BTreeMap::new();
    let mut cursor = 0;
    for _ in 0..10_000_000 {
        cursor = store.scan(cursor, |it| {
            let (v, version) = match it.object() {
                Some(cell) => {
                    let g = cell.read();
                    let Some(Value::List(l)) = g.as_any().downcast_ref::<Value>() else { panic!("not a list") };
                    (l.iter().collect::<Vec<_>>().join(&b","[..]), cell.version())
                }
                None => (it.value().to_vec(), 0),
            };
            out.insert(it.key().to_vec(), (v, it.flags(), it.cas(), version));
        });
        if cursor == 0 {
            break;
        }
    }
    out
}

/// The keys where two dumps differ (at most a few, for the message).
fn differences(
    a: &BTreeMap<Vec<u8>, (Vec<u8>, u32, u64, u64)>,
    b: &BTreeMap<Vec<u8>, (Vec<u8>, u32, u64, u64)>,
) -> Vec<String> {
    let keys: std::collections::BTreeSet<_> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .take(5)
        .map(|k| format!("{}: {:?} vs {:?}", String::from_utf8_lossy(k), a.get(k), b.get(k)))
        .collect()
}

/// Applies `bytes` (records) to the replica; returns bytes consumed.
fn apply_all(a: &mut Applier, bytes: &[u8]) -> usize {
    let mut pos = 0;
    loop {
        match read_record(&bytes[pos..]) {
            Ok((rec, n)) => {
                a.apply(rec);
                pos += n;
            }
            Err(Bad::Torn) => return pos,
            Err(Bad::Corrupt(why)) => panic!("a corrupt record at {pos}: {why}"),
        }
    }
}

#[test]
fn a_full_sync_and_the_stream_under_writers_converge() {
    let t = Thresholds::default();
    let (store, backlog) = primary();
    for i in 0..KEYS {
        store.set(format!("k{i}").as_bytes(), format!("v{i}").as_bytes(), i as u32, Expiry::Never).unwrap();
    }
    for i in 0..16u64 {
        for e in 0..10u64 {
            push(&store, format!("list{i}").as_bytes(), format!("e{e}").as_bytes(), &t);
        }
    }
    let replica = Arc::new(Store::new(Config::default()).unwrap());
    // Something the replica held before: the full sync replaces it.
    replica.set(b"stale", b"x", 0, Expiry::Never).unwrap();
    let mut sync_bytes = Vec::new();
    std::thread::scope(|s| {
        for w in 0..2u64 {
            let (store, t) = (&store, &t);
            s.spawn(move || {
                let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ w;
                for n in 0..WRITES_PER_WRITER {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let k = format!("k{}", x % (KEYS + 500));
                    if w == 0 && n == WRITES_PER_WRITER / 2 {
                        // A flush mid-stream: a FLUSH record and its fence.
                        store.flush_all();
                        continue;
                    }
                    match x % 16 {
                        0 => {
                            let _ = store.delete(k.as_bytes());
                        }
                        1 => push(store, format!("list{}", x % 16).as_bytes(), format!("w{w}-{n}").as_bytes(), t),
                        _ => {
                            store.set(k.as_bytes(), format!("{w}-{n}").as_bytes(), 7, Expiry::Never).unwrap();
                        }
                    }
                }
            });
        }
        // The full sync runs while the writers write.
        let preamble = |id: &str, off: u64| format!("+FULLRESYNC {id} {off}\r\n").into_bytes();
        let sync = full_sync(&store, &backlog, &mut sync_bytes, &preamble, 100).unwrap();
        let line_end = sync_bytes.windows(2).position(|w| w == b"\r\n").unwrap() + 2;
        let line = std::str::from_utf8(&sync_bytes[..line_end]).unwrap();
        assert_eq!(line, format!("+FULLRESYNC {} {}\r\n", sync.replid, sync.offset));
        let mut a = Applier::begin_full_sync(Arc::clone(&replica), t);
        let body = &sync_bytes[line_end + SYNC_HEADER_BYTES..];
        assert_eq!(apply_all(&mut a, body), body.len(), "the sync ends with whole records");
        // Then the stream from the cut, while the writers go on and after.
        let mut pending = Vec::new();
        let mut idle_reads = 0;
        while idle_reads < 3 {
            let n = backlog.read(sync.reader, &mut pending, 1 << 20, Duration::from_millis(20)).unwrap();
            let used = apply_all(&mut a, &pending);
            pending.drain(..used);
            idle_reads = if n == 0 { idle_reads + 1 } else { 0 };
        }
    });
    assert_eq!(replica.get(b"stale", |_| ()), None, "the full sync replaced what the replica held");
    let (mut want, mut got) = (dump(&store), dump(&replica));
    assert!(!want.is_empty());
    // The replica held data before, so its CAS uniques are the primary's
    // shifted by one constant (its flush fence; `Applier`): the order,
    // and so every flush fence, is kept.
    let shifts: std::collections::BTreeSet<u64> =
        want.iter().filter_map(|(k, w)| got.get(k).map(|g| g.2.wrapping_sub(w.2))).collect();
    assert_eq!(shifts.len(), 1, "one CAS shift: {shifts:?}");
    assert!(shifts.iter().all(|&s| s > 0), "shifted above the replica's fence");
    for v in want.values_mut().chain(got.values_mut()) {
        v.2 = 0;
    }
    let diff = differences(&want, &got);
    assert!(diff.is_empty(), "the replica differs from its primary ({} vs {} keys): {diff:#?}", want.len(), got.len());
}
