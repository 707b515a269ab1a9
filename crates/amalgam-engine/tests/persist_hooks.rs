//! The persistence hooks of issue 5 (`journal.rs`), tested the way the
//! persistence layer uses them, through the public API only:
//!
//! * a snapshot is a point-in-time cut while writers run: each writer's
//!   keys in it are exactly the state after some prefix of that writer's
//!   program, and a write that read another writer's value is in the cut
//!   only with the write it read (`snapshot_is_a_consistent_cut_…`);
//! * a snapshot delivers every item not written meanwhile exactly once and
//!   nothing twice, with long chains (a 16-bucket table held back from
//!   expanding) and in cache mode (`snapshot_delivers_…`);
//! * the journal gets one record per successful change, as the key's new
//!   state, and none for a failed one (`each_successful_change_…`, and
//!   counted under concurrency in `journal_replay_…`); one key's records
//!   come in the order its changes were made (`journal_records_…`); and
//!   replaying the journal in order into a fresh store gives the same
//!   store: keys, values, flags, expiry, CAS, marks, and the same future
//!   (expiries and delayed flushes) (`journal_replay_…`, `replaying_…`);
//! * recovery: restoring a snapshot taken while writers ran and replaying
//!   the journal from the position `before_cut` saw gives the final store
//!   (`recovery_…`), also around a flush (`flush_…`, `write_with_…`,
//!   `delayed_flush_…`);
//! * `restore` keeps CAS uniques and keeps later ones above them,
//!   `restore_flush` kills exactly the items below its fence, and an
//!   expired restored item is not visible (`restore_…`).
//!
//! The flush tests found the bug fixed in journal.rs ("The flush state"):
//! the flush fence and a pending delayed flush were not carried across a
//! snapshot's cut, and a replayed Flush did not cancel a delayed flush.
//!
//! Nothing measures time; every wait is bounded and fails (or gives up) at
//! its bound. Sizes are for debug builds (CI runs `cargo test`).
use amalgam_engine::evict::Eviction;
use amalgam_engine::{
    Change, Config, Error, Expiry, ItemRef, Journal, NewValue, SnapshotSink, SnapshotStats, Store, Update, MARK_STALE,
};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

/// Bound of every wait for another thread (1 ms steps).
const WAIT_STEPS_MAX: usize = 60_000;
/// Bound of a full scan (steps of one bucket).
const SCAN_STEPS_MAX: usize = 1 << 24;

// ---------------------------------------------------------------------------
// Shared helpers: items, a journal and a sink that keep everything, replay.

/// An item as a journal record, a snapshot or a scan shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Item {
    key: Vec<u8>,
    value: Vec<u8>,
    flags: u32,
    expiry: Expiry,
    cas: u64,
    marks: u8,
}

impl Item {
    fn of(it: ItemRef<'_>) -> Item {
        Item {
            key: it.key().to_vec(),
            value: it.value().to_vec(),
            flags: it.flags(),
            expiry: it.expiry(),
            cas: it.cas(),
            marks: it.marks(),
        }
    }
}

/// An owned [`Change`].
#[derive(Clone, Debug, PartialEq, Eq)]
enum Rec {
    Put(Item),
    Delete(Vec<u8>),
    Flush(u64),
    FlushAt(u32),
    /// An object changed in place: key and record (tests/objects.rs).
    Op(Vec<u8>, Vec<u8>),
}

type Hook = Box<dyn Fn(&Rec) + Send + Sync>;

/// A journal that appends every change to a vector in the order `record`
/// was called. The hooks run just before and just after the append; tests
/// use them to stall a change at a chosen point (a preempted thread).
#[derive(Default)]
struct VecJournal {
    recs: Mutex<Vec<Rec>>,
    before_append: Option<Hook>,
    after_append: Option<Hook>,
}

impl Journal for VecJournal {
    fn record(&self, change: Change<'_>) {
        let rec = match change {
            Change::Put(it) | Change::Meta(it) => Rec::Put(Item::of(it)),
            Change::Delete(k) => Rec::Delete(k.to_vec()),
            Change::Flush { fence_cas } => Rec::Flush(fence_cas),
            Change::FlushAt { at } => Rec::FlushAt(at),
            Change::Op { item, record } => Rec::Op(item.key().to_vec(), record.to_vec()),
        };
        if let Some(h) = &self.before_append {
            h(&rec);
        }
        self.recs.lock().unwrap().push(rec.clone());
        if let Some(h) = &self.after_append {
            h(&rec);
        }
    }
}

impl VecJournal {
    fn len(&self) -> usize {
        self.recs.lock().unwrap().len()
    }

    fn all(&self) -> Vec<Rec> {
        self.recs.lock().unwrap().clone()
    }

    fn last(&self) -> Option<Rec> {
        self.recs.lock().unwrap().last().cloned()
    }
}

/// A snapshot sink that keeps every item it is given.
#[derive(Default)]
struct VecSink(Mutex<Vec<Item>>);

impl SnapshotSink for VecSink {
    fn item(&self, it: ItemRef<'_>) {
        self.0.lock().unwrap().push(Item::of(it));
    }
}

impl VecSink {
    fn len(&self) -> usize {
        self.0.lock().unwrap().len()
    }

    fn take(&self) -> Vec<Item> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

/// Takes a snapshot into a fresh sink; returns the journal length
/// `before_cut` saw (0 without a journal), the items and the stats.
fn snapshot(store: &Store, journal: Option<&VecJournal>) -> (usize, Vec<Item>, SnapshotStats) {
    let sink = Arc::new(VecSink::default());
    let mut cut = 0;
    let stats = store.snapshot(sink.clone(), || cut = journal.map_or(0, |j| j.len()));
    (cut, sink.take(), stats)
}

fn rng(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

fn show(key: &[u8]) -> String {
    String::from_utf8_lossy(key).into_owned()
}

fn wait_until(what: &str, cond: impl Fn() -> bool) {
    for _ in 0..WAIT_STEPS_MAX {
        if cond() {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    panic!("gave up waiting for {what}");
}

/// [`wait_until`] for journal hooks: runs inside the engine, so it gives
/// up quietly at the bound and lets the test's checks decide.
fn wait_quietly(cond: impl Fn() -> bool) {
    for _ in 0..WAIT_STEPS_MAX {
        if cond() {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Every live item, by key, through a full scan of a quiet store.
fn dump(store: &Store) -> BTreeMap<Vec<u8>, Item> {
    let mut items = BTreeMap::new();
    let mut cursor = 0;
    for _ in 0..SCAN_STEPS_MAX {
        cursor = store.scan(cursor, |it| {
            items.insert(it.key().to_vec(), Item::of(it));
        });
        if cursor == 0 {
            return items;
        }
    }
    panic!("the scan did not end");
}

/// Recovery's set: the item as it was, marks included (`restore` takes
/// none; a metadata-only update keeps the CAS unique).
fn restore_item(store: &Store, it: &Item) {
    store.restore(&it.key, &it.value, it.flags, it.expiry, it.cas).unwrap();
    if it.marks != 0 {
        let set_marks = |old: Option<ItemRef<'_>>| match old {
            Some(o) => {
                let put = Update::Put {
                    value: NewValue::Same,
                    flags: o.flags(),
                    expiry: o.expiry(),
                    fresh_cas: false,
                    marks: it.marks,
                };
                (put, ())
            }
            None => (Update::Keep, ()),
        };
        store.update(&it.key, set_marks).unwrap();
    }
}

/// Replays one journal record, as recovery does.
fn apply(store: &Store, rec: &Rec) {
    match rec {
        Rec::Put(it) => restore_item(store, it),
        Rec::Delete(k) => assert!(matches!(store.delete(k), Ok(()) | Err(Error::NotFound))),
        Rec::Flush(fence) => store.restore_flush(*fence),
        Rec::FlushAt(at) => store.flush_all_at(*at),
        Rec::Op(..) => unreachable!("these tests store no objects"),
    }
}

/// The recovery rule of the persistence layer: a fresh store, the
/// snapshot's items, then the journal from the cut's position on.
fn recover(config: &Config, items: &[Item], log_suffix: &[Rec]) -> Store {
    let store = Store::new(config.clone()).unwrap();
    for it in items {
        restore_item(&store, it);
    }
    for rec in log_suffix {
        apply(&store, rec);
    }
    store
}

fn assert_same(original: &Store, other: &Store, what: &str) {
    let (a, b) = (dump(original), dump(other));
    if a == b {
        return;
    }
    let only_a: Vec<String> = a.keys().filter(|k| !b.contains_key(*k)).take(5).map(|k| show(k)).collect();
    let only_b: Vec<String> = b.keys().filter(|k| !a.contains_key(*k)).take(5).map(|k| show(k)).collect();
    let differ: Vec<String> =
        a.iter().filter_map(|(k, v)| b.get(k).filter(|w| *w != v).map(|w| format!("{v:?} vs {w:?}"))).take(3).collect();
    panic!(
        "{what}: the stores differ ({} vs {} items); only in the original: {only_a:?}; only in the other: \
         {only_b:?}; different: {differ:?}",
        a.len(),
        b.len()
    );
}

/// Relative expiries the mixes give are at most this far ahead.
const MIX_EXPIRY_AHEAD_MAX: u32 = 500;
/// Delayed flushes the mixes schedule are at least this far ahead.
const MIX_FLUSH_AHEAD_MIN: u32 = 1_000;

/// Compares the stores now, after every expiry the mixes gave has passed
/// (but no delayed flush is due), and after every delayed flush is due: a
/// replayed store must also have the same future.
fn assert_same_over_time(original: &Store, others: &[(String, Store)]) {
    let steps = [0, i64::from(MIX_EXPIRY_AHEAD_MAX) + 200, i64::from(MIX_FLUSH_AHEAD_MIN) + 800];
    for (step, secs) in steps.into_iter().enumerate() {
        original.advance_clock(secs);
        for (what, other) in others {
            other.advance_clock(secs);
            assert_same(original, other, &format!("{what} (clock step {step}: +{secs} s)"));
        }
    }
}

// ---------------------------------------------------------------------------
// A mix of every kind of write, for the journal and recovery tests.

struct Mix {
    /// Keys `m0..` the operations pick from.
    keys: u64,
    /// Operations per thread at most.
    ops: u64,
    /// flush_all, and separately flush_all_at, per 10 000 operations.
    flush_per_10k: u64,
}

/// What one thread's successful operations must have journaled.
#[derive(Default)]
struct Tally {
    puts: u64,
    deletes: u64,
    flushes: u64,
    flush_ats: u64,
    /// (key, CAS unique) each successful store command returned.
    put_cas: Vec<(Vec<u8>, u64)>,
}

impl Tally {
    fn put(&mut self, key: &[u8], r: Result<u64, Error>, allowed: &[Error]) {
        match r {
            Ok(cas) => {
                self.puts += 1;
                self.put_cas.push((key.to_vec(), cas));
            }
            Err(e) => assert!(allowed.contains(&e), "{}: unexpected {e:?}", show(key)),
        }
    }

    fn changed<T>(&mut self, key: &[u8], r: Result<T, Error>, allowed: &[Error]) {
        match r {
            Ok(_) => self.puts += 1,
            Err(e) => assert!(allowed.contains(&e), "{}: unexpected {e:?}", show(key)),
        }
    }
}

fn mkey(k: u64) -> Vec<u8> {
    format!("m{k}").into_bytes()
}

fn mvalue(r: u64) -> Vec<u8> {
    match r % 10 {
        0..=4 => format!("{}", (r >> 8) % 1000).into_bytes(),
        5..=8 => format!("v{:x}", r >> 8).into_bytes(),
        _ => vec![b'x'; 1_000 + (r >> 8) as usize % 3_000],
    }
}

/// Runs up to `mix.ops` random operations (until `stop`), counting in
/// `done`; every result must be a success or an error the operation may
/// legitimately give under concurrency.
fn mixed_ops(store: &Store, mix: &Mix, seed: u64, stop: &AtomicBool, done: &AtomicU64) -> Tally {
    use Error::{Exists, NonNumeric, NotFound, NotStored};
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut t = Tally::default();
    for n in 0..mix.ops {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        // A quarter of the operations on 4 hot keys, so that threads often
        // change one key back to back (journal order = change order).
        let pick = rng(&mut state);
        let key = mkey(if pick % 4 == 0 { (pick >> 8) % 4 } else { (pick >> 8) % mix.keys });
        let k = key.as_slice();
        let now = store.now();
        let e = rng(&mut state);
        let expiry = if e % 4 == 0 { Expiry::At(now + 100 + (e >> 8) as u32 % 400) } else { Expiry::Never };
        let value = mvalue(rng(&mut state));
        let flags = (rng(&mut state) % 4) as u32;
        let r = rng(&mut state);
        if r % 10_000 < mix.flush_per_10k {
            store.flush_all();
            t.flushes += 1;
        } else if r % 10_000 < 2 * mix.flush_per_10k {
            store.flush_all_at(now + MIX_FLUSH_AHEAD_MIN + (r >> 20) as u32 % 100);
            t.flush_ats += 1;
        } else {
            match (r >> 16) % 100 {
                0..=13 => t.put(k, store.set(k, &value, flags, expiry), &[]),
                14..=21 => t.put(k, store.add(k, &value, flags, expiry), &[NotStored]),
                22..=29 => t.put(k, store.replace(k, &value, flags, expiry), &[NotStored]),
                30..=39 => match store.get(k, |it| it.cas()) {
                    // A third of the time with a wrong CAS unique.
                    Some(c) => {
                        let c = if r % 3 == 0 { c + 1 } else { c };
                        t.put(k, store.cas(k, &value, flags, expiry, c), &[Exists, NotFound])
                    }
                    None => t.put(k, store.cas(k, &value, flags, expiry, 1 + r % 1000), &[NotFound, Exists]),
                },
                40..=46 => t.put(k, store.append(k, b"+a"), &[NotStored]),
                47..=51 => t.put(k, store.prepend(k, b"p-"), &[NotStored]),
                52..=60 => t.changed(k, store.incr(k, r % 7), &[NotFound, NonNumeric]),
                61..=65 => t.changed(k, store.decr(k, r % 7), &[NotFound, NonNumeric]),
                66..=72 => t.changed(k, store.touch(k, expiry), &[NotFound]),
                73..=75 => {
                    if let Some(r) = store.touch_and_get(k, expiry, |it| it.value().len()) {
                        t.changed(k, r, &[]);
                    }
                }
                76..=79 => {
                    // The meta protocol's invalidation: mark stale, keep the CAS.
                    let r = store.update(k, |old| match old {
                        Some(o) => {
                            let put = Update::Put {
                                value: NewValue::Same,
                                flags: o.flags(),
                                expiry: o.expiry(),
                                fresh_cas: false,
                                marks: MARK_STALE,
                            };
                            (put, true)
                        }
                        None => (Update::Keep, false),
                    });
                    if r.unwrap().0 {
                        t.puts += 1;
                    }
                }
                _ => match store.delete(k) {
                    Ok(()) => t.deletes += 1,
                    Err(e) => assert_eq!(e, NotFound),
                },
            }
        }
        done.store(n + 1, Ordering::Relaxed);
    }
    t
}

// ---------------------------------------------------------------------------
// 1. Point-in-time consistency under concurrent writers.

const CUT_FILL_KEYS: u64 = 100_000;
const CUT_WRITERS: usize = 3;
const CUT_ROUNDS: u64 = 8;
/// Steps per writer per round at most (the snapshot's end stops them).
const CUT_STEPS_MAX: u64 = 6_000;
/// Steps every writer has made before the snapshot starts.
const CUT_STEPS_BEFORE: u64 = 50;

fn fill_key(i: u64) -> Vec<u8> {
    format!("f:{i}").into_bytes()
}

fn k_key(round: u64, w: usize, j: u64) -> Vec<u8> {
    format!("r{round}:k{w}:{j}").into_bytes()
}

fn c_key(round: u64, w: usize) -> Vec<u8> {
    format!("r{round}:c{w}").into_bytes()
}

fn g_key(round: u64, w: usize, j: u64) -> Vec<u8> {
    format!("r{round}:g{w}:{j}").into_bytes()
}

fn parse_u64(v: &[u8]) -> u64 {
    std::str::from_utf8(v).unwrap().parse().unwrap()
}

/// Writer `w`'s program in round `round`, step j = 0, 1, 2, …:
/// op 4j: set k_j = "j|seen" (seen: the other writers' counters, read just
/// before); op 4j+1: set c = j; op 4j+2: delete k_(j-2) (nothing for
/// j < 2); op 4j+3: set g_j (kept: the table grows under the snapshot).
/// Returns the steps done (whole steps: `stop` is checked between them).
fn cut_writer(store: &Store, round: u64, w: usize, stop: &AtomicBool, progress: &AtomicU64) -> u64 {
    for j in 0..CUT_STEPS_MAX {
        if stop.load(Ordering::Relaxed) {
            return j;
        }
        let seen: Vec<String> = (0..CUT_WRITERS)
            .map(|v| {
                let c = if v == w { None } else { store.get(&c_key(round, v), |it| parse_u64(it.value())) };
                c.map_or("-".into(), |c| c.to_string())
            })
            .collect();
        let value = format!("{j}|{}", seen.join(","));
        store.set(&k_key(round, w, j), value.as_bytes(), 0, Expiry::Never).unwrap();
        store.set(&c_key(round, w), j.to_string().as_bytes(), 0, Expiry::Never).unwrap();
        if j >= 2 {
            store.delete(&k_key(round, w, j - 2)).unwrap();
        }
        store.set(&g_key(round, w, j), format!("g{j}").as_bytes(), 0, Expiry::Never).unwrap();
        progress.store(j + 1, Ordering::Release);
    }
    CUT_STEPS_MAX
}

/// One writer's keys in a snapshot.
#[derive(Default, Debug)]
struct WriterCut {
    /// k_j: j -> the counters it saw.
    ks: BTreeMap<u64, Vec<Option<u64>>>,
    counter: Option<u64>,
    gs: BTreeSet<u64>,
}

/// True if `cut` is exactly the writer's state after its first `p` ops.
fn state_after(p: u64, cut: &WriterCut) -> bool {
    // k_j was set by op 4j and deleted by op 4(j+2)+2.
    let ks: BTreeSet<u64> = (0..=p / 4).filter(|&j| 4 * j < p && p <= 4 * j + 10).collect();
    // c = j was set by op 4j+1; g_j by op 4j+3.
    let counter = (p >= 2).then(|| (p - 2) / 4);
    cut.ks.keys().copied().collect::<BTreeSet<u64>>() == ks
        && cut.counter == counter
        && cut.gs.iter().copied().eq(0..p / 4)
}

#[test]
fn snapshot_is_a_consistent_cut_while_writers_run_and_the_table_grows() {
    // 16 buckets and no wait for the expand thread: the first snapshot
    // meets a running or due expansion, and every round's writers push the
    // load past the threshold while the snapshot holds the table.
    let store =
        Store::new(Config { memory_limit_bytes: 1 << 30, initial_buckets_log2: 4, ..Config::default() }).unwrap();
    let mut stable: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
    for i in 0..CUT_FILL_KEYS {
        let v = format!("fill{i}").into_bytes();
        store.set(&fill_key(i), &v, 0, Expiry::Never).unwrap();
        stable.insert(fill_key(i), v);
    }
    let mut by_writers = 0;
    let mut overlapped_rounds = 0;
    for round in 0..CUT_ROUNDS {
        let stop = AtomicBool::new(false);
        let progress: Vec<AtomicU64> = (0..CUT_WRITERS).map(|_| AtomicU64::new(0)).collect();
        let (steps, (_, items, stats), progress_at_end) = std::thread::scope(|s| {
            let handles: Vec<_> = (0..CUT_WRITERS)
                .map(|w| {
                    let (store, stop, progress) = (&store, &stop, &progress[w]);
                    s.spawn(move || cut_writer(store, round, w, stop, progress))
                })
                .collect();
            wait_until("the writers to start", || {
                progress.iter().all(|p| p.load(Ordering::Acquire) >= CUT_STEPS_BEFORE)
            });
            let snap = snapshot(&store, None);
            let at_end: Vec<u64> = progress.iter().map(|p| p.load(Ordering::Acquire)).collect();
            stop.store(true, Ordering::Relaxed);
            let steps: Vec<u64> = handles.into_iter().map(|h| h.join().unwrap()).collect();
            (steps, snap, at_end)
        });
        by_writers += stats.buckets_by_writers;
        overlapped_rounds += progress_at_end.iter().any(|&p| p < CUT_STEPS_MAX) as u64;

        // Each key at most once; every key no writer touched this round
        // exactly once, with its value; the rest are this round's.
        let prefix = format!("r{round}:");
        let mut keys = HashSet::with_capacity(items.len());
        let mut cuts: Vec<WriterCut> = (0..CUT_WRITERS).map(|_| WriterCut::default()).collect();
        let mut stable_seen = 0;
        for it in &items {
            assert!(keys.insert(it.key.as_slice()), "round {round}: {} delivered twice", show(&it.key));
            let key = std::str::from_utf8(&it.key).unwrap();
            let Some(rest) = key.strip_prefix(&prefix) else {
                assert_eq!(stable.get(&it.key), Some(&it.value), "round {round}: {key}");
                stable_seen += 1;
                continue;
            };
            let (kind, rest) = rest.split_at(1);
            let mut parts = rest.split(':');
            let w: usize = parts.next().unwrap().parse().unwrap();
            let value = std::str::from_utf8(&it.value).unwrap();
            match kind {
                "k" => {
                    let j: u64 = parts.next().unwrap().parse().unwrap();
                    let (vj, seen) = value.split_once('|').unwrap();
                    assert_eq!(vj.parse::<u64>().unwrap(), j, "{key}");
                    let seen = seen.split(',').map(|s| s.parse().ok()).collect();
                    cuts[w].ks.insert(j, seen);
                }
                "c" => cuts[w].counter = Some(value.parse().unwrap()),
                "g" => {
                    let j: u64 = parts.next().unwrap().parse().unwrap();
                    assert_eq!(value, format!("g{j}"));
                    cuts[w].gs.insert(j);
                }
                _ => panic!("unexpected key {key}"),
            }
        }
        assert_eq!(stable_seen, stable.len(), "round {round}: items present throughout missing from the snapshot");
        assert_eq!(stats.items as usize, items.len());

        for (w, cut) in cuts.iter().enumerate() {
            // The cut holds the state after some prefix of w's program.
            let mut candidates = match cut.counter {
                Some(c) => 4 * c + 2..=4 * c + 5,
                None => 0..=1,
            };
            let p = candidates.find(|&p| state_after(p, cut));
            assert!(
                p.is_some_and(|p| p <= 4 * steps[w]),
                "round {round}, writer {w}: no prefix of its program gives this cut: counter {:?}, k {:?}, g {} \
                 keys (max {:?}), {} steps done",
                cut.counter,
                cut.ks.keys().collect::<Vec<_>>(),
                cut.gs.len(),
                cut.gs.last(),
                steps[w]
            );
            // Causality: a k_j in the cut saw counters the cut also has.
            for (j, seen) in &cut.ks {
                for (v, s) in seen.iter().enumerate() {
                    if let Some(s) = s {
                        assert!(
                            cuts[v].counter.is_some_and(|c| c >= *s),
                            "round {round}: writer {w}'s k{j} saw writer {v}'s counter at {s}, but the cut has {:?}",
                            cuts[v].counter
                        );
                    }
                }
            }
        }

        // The round's final state is stable for the next rounds.
        for (w, &n) in steps.iter().enumerate() {
            let mut keys: Vec<Vec<u8>> = (n.saturating_sub(2)..n).map(|j| k_key(round, w, j)).collect();
            keys.extend((0..n).map(|j| g_key(round, w, j)));
            keys.extend((n > 0).then(|| c_key(round, w)));
            for k in keys {
                let v = store.get(&k, |it| it.value().to_vec()).unwrap_or_else(|| panic!("{} lost", show(&k)));
                stable.insert(k, v);
            }
        }
    }
    let st = store.stats();
    eprintln!(
        "{CUT_ROUNDS} rounds: {by_writers} buckets serialized by writers, {overlapped_rounds} rounds with writers \
         still running at the snapshot's end, {} expansions, {} buckets, {} items",
        st.expansions, st.buckets, st.items
    );
}

// ---------------------------------------------------------------------------
// 2. Exactly once per snapshot: long chains, cache mode.

/// Keys loaded while a snapshot holds the 16-bucket table: ~1900 per
/// bucket, ~270 overflow nodes per chain (CHAIN_NODES_MAX is 1024).
const CHAIN_KEYS: u64 = 30_000;
const HOT_WRITERS: u64 = 2;
/// Operations per hot writer per snapshot at most (a quarter insert new
/// keys, so the chains grow by at most ~120 items per bucket).
const HOT_OPS_MAX: u64 = 8_000;

fn s_key(i: u64) -> Vec<u8> {
    format!("s:{i}").into_bytes()
}

fn s_value(i: u64) -> Vec<u8> {
    format!("value of s:{i}").into_bytes()
}

/// Writes only keys of its own (`h{w}:…` overwritten and deleted,
/// `n{w}:…` inserted in order); returns how many `n` keys it inserted.
fn hot_writer(store: &Store, round: u64, w: u64, stop: &AtomicBool, done: &AtomicU64) -> u64 {
    let mut inserted = 0;
    for i in 0..HOT_OPS_MAX {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        match i % 4 {
            0 | 2 => {
                store.set(format!("h{w}:{}", i % 64).as_bytes(), &i.to_le_bytes(), 0, Expiry::Never).unwrap();
            }
            1 => {
                let _ = store.delete(format!("h{w}:{}", (i / 4) % 64).as_bytes());
            }
            _ => {
                store.set(format!("n{round}:{w}:{inserted}").as_bytes(), b"n", 0, Expiry::Never).unwrap();
                inserted += 1;
            }
        }
        done.store(i + 1, Ordering::Release);
    }
    inserted
}

/// Every s-key exactly once with its value and flags, no key twice, and
/// each writer's new keys of `round` a prefix of what it inserted.
fn check_exactly_once(items: &[Item], stats: &SnapshotStats, round: u64, inserted: &[u64], what: &str) {
    assert_eq!(stats.items as usize, items.len(), "{what}");
    let mut keys = HashSet::with_capacity(items.len());
    let mut s_seen = vec![false; CHAIN_KEYS as usize];
    let mut n_seen: Vec<BTreeSet<u64>> = vec![BTreeSet::new(); inserted.len()];
    for it in items {
        assert!(keys.insert(it.key.as_slice()), "{what}: {} delivered twice", show(&it.key));
        let key = std::str::from_utf8(&it.key).unwrap();
        if let Some(i) = key.strip_prefix("s:") {
            let i: u64 = i.parse().unwrap();
            assert_eq!((it.value.as_slice(), it.flags), (s_value(i).as_slice(), i as u32), "{what}: {key}");
            s_seen[i as usize] = true;
        } else if let Some(rest) = key.strip_prefix(&format!("n{round}:")) {
            let (w, j) = rest.split_once(':').unwrap();
            n_seen[w.parse::<usize>().unwrap()].insert(j.parse().unwrap());
        } else {
            assert!(key.starts_with('h') || key.starts_with('n'), "{what}: unexpected key {key}");
        }
    }
    let missing: Vec<usize> = (0..s_seen.len()).filter(|&i| !s_seen[i]).take(5).collect();
    assert!(missing.is_empty(), "{what}: s-keys missing from the snapshot, e.g. {missing:?}");
    for (w, seen) in n_seen.iter().enumerate() {
        assert!(
            seen.iter().copied().eq(0..seen.len() as u64) && seen.len() as u64 <= inserted[w],
            "{what}: writer {w}'s inserts in the snapshot are not a prefix ({} of {})",
            seen.len(),
            inserted[w]
        );
    }
}

/// Runs `snap` while hot writers run; returns its result and each writer's
/// insert count.
fn with_hot_writers<R>(store: &Store, round: u64, snap: impl FnOnce() -> R) -> (R, Vec<u64>) {
    let stop = AtomicBool::new(false);
    let done: Vec<AtomicU64> = (0..HOT_WRITERS).map(|_| AtomicU64::new(0)).collect();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..HOT_WRITERS)
            .map(|w| {
                let (stop, done) = (&stop, &done[w as usize]);
                s.spawn(move || hot_writer(store, round, w, stop, done))
            })
            .collect();
        wait_until("the hot writers to start", || done.iter().all(|d| d.load(Ordering::Acquire) >= 100));
        let r = snap();
        stop.store(true, Ordering::Relaxed);
        (r, handles.into_iter().map(|h| h.join().unwrap()).collect())
    })
}

fn snapshot_exactly_once(eviction: Eviction) {
    let memory_limit_bytes = if eviction == Eviction::None { 1 << 30 } else { 64 << 20 };
    let store =
        Store::new(Config { eviction, memory_limit_bytes, initial_buckets_log2: 4, ..Config::default() }).unwrap();

    // Round 0: a snapshot takes the expand gate; in `before_cut` (before
    // the cut, so everything written meanwhile is in it) the s-keys are
    // loaded into the 16 buckets, which cannot grow, and the hot writers
    // start. The cursor then walks ~270-node chains while the writers
    // serialize the chains they reach first.
    let in_cut = AtomicBool::new(false);
    let loaded = AtomicBool::new(false);
    let sink = Arc::new(VecSink::default());
    let (stats, inserted) = std::thread::scope(|s| {
        let snap = s.spawn(|| {
            store.snapshot(sink.clone(), || {
                in_cut.store(true, Ordering::Release);
                wait_until("the load", || loaded.load(Ordering::Acquire));
            })
        });
        wait_until("the snapshot to hold the table", || in_cut.load(Ordering::Acquire));
        for i in 0..CHAIN_KEYS {
            store.set(&s_key(i), &s_value(i), i as u32, Expiry::Never).unwrap();
        }
        with_hot_writers(&store, 0, || {
            loaded.store(true, Ordering::Release);
            snap.join().unwrap()
        })
    });
    assert_eq!(stats.buckets, 16, "the snapshot held the table at 16 buckets: chains of ~270 nodes");
    check_exactly_once(&sink.take(), &stats, 0, &inserted, &format!("{eviction:?}, chained"));
    let chained_by_writers = stats.buckets_by_writers;

    // Rounds 1-2: the expansion held back is due; the next snapshot waits
    // for it or holds it back again, with the writers running throughout.
    for round in 1..3 {
        let ((_, items, stats), inserted) = with_hot_writers(&store, round, || snapshot(&store, None));
        check_exactly_once(&items, &stats, round, &inserted, &format!("{eviction:?}, round {round}"));
    }
    let st = store.stats();
    assert_eq!(st.evictions, 0, "the budget holds everything (an eviction is not a change the snapshot keeps)");
    eprintln!(
        "{eviction:?}: {chained_by_writers} of 16 chained buckets serialized by writers; now {} buckets",
        st.buckets
    );
}

#[test]
fn snapshot_delivers_each_item_exactly_once_with_long_chains() {
    snapshot_exactly_once(Eviction::None);
}

#[test]
fn snapshot_delivers_each_item_exactly_once_in_cache_mode_clock() {
    snapshot_exactly_once(Eviction::Clock);
}

#[test]
fn snapshot_delivers_each_item_exactly_once_in_cache_mode_s3fifo() {
    snapshot_exactly_once(Eviction::S3Fifo);
}

// ---------------------------------------------------------------------------
// 3. The journal: what each operation records, and replay.

fn journaled(store: &Store) -> Arc<VecJournal> {
    let journal = Arc::new(VecJournal::default());
    assert!(store.set_journal(journal.clone()).is_ok());
    journal
}

#[test]
fn each_successful_change_is_journaled_once_as_its_new_state_and_failures_are_not() {
    let store = Store::new(Config::default()).unwrap();
    // Restores before the journal is attached are not journaled.
    store.restore(b"pre", b"1", 0, Expiry::Never, 10).unwrap();
    let journal = journaled(&store);
    assert!(store.set_journal(Arc::new(VecJournal::default())).is_err(), "one journal per store");
    assert_eq!(journal.len(), 0);
    let now = store.now();
    let item = |key: &[u8]| store.get(key, Item::of).unwrap();
    let mut expect_len = 0;
    // Checks that `op` journaled exactly `want` (or nothing).
    let mut step = |what: &str, want: Option<Rec>| {
        if let Some(want) = want {
            expect_len += 1;
            assert_eq!(journal.last(), Some(want), "{what}");
        }
        assert_eq!(journal.len(), expect_len, "{what}");
    };

    let c = store.set(b"k", b"10", 5, Expiry::Never).unwrap();
    step("set", Some(Rec::Put(item(b"k"))));
    assert_eq!(item(b"k").cas, c);
    assert_eq!(store.add(b"k", b"x", 0, Expiry::Never), Err(Error::NotStored));
    step("add on a present key", None);
    assert_eq!(store.replace(b"missing", b"x", 0, Expiry::Never), Err(Error::NotStored));
    step("replace of a missing key", None);
    assert_eq!(store.cas(b"k", b"x", 0, Expiry::Never, c + 1), Err(Error::Exists));
    step("cas mismatch", None);
    assert_eq!(store.cas(b"missing", b"x", 0, Expiry::Never, c), Err(Error::NotFound));
    step("cas of a missing key", None);
    assert_eq!(store.append(b"missing", b"x"), Err(Error::NotStored));
    assert_eq!(store.prepend(b"missing", b"x"), Err(Error::NotStored));
    step("append/prepend of a missing key", None);
    assert_eq!(store.incr(b"missing", 1), Err(Error::NotFound));
    assert_eq!(store.decr(b"missing", 1), Err(Error::NotFound));
    step("incr/decr of a missing key", None);
    assert_eq!(store.touch(b"missing", Expiry::Never), Err(Error::NotFound));
    assert!(store.touch_and_get(b"missing", Expiry::Never, |_| ()).is_none());
    step("touch of a missing key", None);
    assert_eq!(store.delete(b"missing"), Err(Error::NotFound));
    step("delete of a missing key", None);
    assert_eq!(store.update(b"missing", |_| (Update::Keep, ())), Ok(((), None)));
    step("update that keeps", None);
    assert_eq!(store.update(b"missing", |_| (Update::Remove, ())), Ok(((), None)));
    step("update that removes a missing key", None);
    // A write whose expiry is already past, on a missing key: no change.
    store.set(b"missing", b"x", 0, Expiry::At(1)).unwrap();
    step("set of a missing key with a past expiry", None);

    let c2 = store.add(b"a", b"text", 1, Expiry::At(now + 100)).unwrap();
    step("add", Some(Rec::Put(item(b"a"))));
    assert_eq!(item(b"a").cas, c2);
    assert_eq!(store.incr(b"a", 1), Err(Error::NonNumeric));
    step("incr of a non-numeric value", None);
    let c3 = store.replace(b"a", b"text2", 2, Expiry::Never).unwrap();
    step(
        "replace",
        Some(Rec::Put(Item {
            key: b"a".to_vec(),
            value: b"text2".to_vec(),
            flags: 2,
            expiry: Expiry::Never,
            cas: c3,
            marks: 0,
        })),
    );
    let c4 = store.cas(b"a", b"t3", 3, Expiry::Never, c3).unwrap();
    step(
        "cas",
        Some(Rec::Put(Item {
            key: b"a".to_vec(),
            value: b"t3".to_vec(),
            flags: 3,
            expiry: Expiry::Never,
            cas: c4,
            marks: 0,
        })),
    );
    let c5 = store.append(b"a", b"+").unwrap();
    step(
        "append",
        Some(Rec::Put(Item {
            key: b"a".to_vec(),
            value: b"t3+".to_vec(),
            flags: 3,
            expiry: Expiry::Never,
            cas: c5,
            marks: 0,
        })),
    );
    let c6 = store.prepend(b"a", b"-").unwrap();
    step(
        "prepend",
        Some(Rec::Put(Item {
            key: b"a".to_vec(),
            value: b"-t3+".to_vec(),
            flags: 3,
            expiry: Expiry::Never,
            cas: c6,
            marks: 0,
        })),
    );
    assert!(c < c2 && c2 < c3 && c3 < c4 && c4 < c5 && c5 < c6);
    assert_eq!(store.incr(b"k", 5), Ok(15));
    step("incr", Some(Rec::Put(item(b"k"))));
    assert_eq!(item(b"k").value, b"15");
    assert_eq!(store.decr(b"k", 6), Ok(9));
    step("decr", Some(Rec::Put(item(b"k"))));
    let before = item(b"k");
    store.touch(b"k", Expiry::At(now + 50)).unwrap();
    step("touch", Some(Rec::Put(Item { expiry: Expiry::At(now + 50), ..before.clone() })));
    assert_eq!(item(b"k").cas, before.cas, "touch keeps the CAS unique");
    assert_eq!(store.touch_and_get(b"k", Expiry::Never, |it| it.value().to_vec()), Some(Ok(before.value.clone())));
    step("gat", Some(Rec::Put(Item { expiry: Expiry::Never, ..before.clone() })));
    let (_, cas) = store
        .update(b"k", |old| {
            let o = old.unwrap();
            let put = Update::Put {
                value: NewValue::Same,
                flags: o.flags(),
                expiry: o.expiry(),
                fresh_cas: false,
                marks: MARK_STALE,
            };
            (put, ())
        })
        .unwrap();
    assert_eq!(cas, Some(before.cas));
    step("update (meta invalidate)", Some(Rec::Put(Item { marks: MARK_STALE, expiry: Expiry::Never, ..before })));
    store.delete(b"a").unwrap();
    step("delete", Some(Rec::Delete(b"a".to_vec())));
    store.set(b"b", b"x", 0, Expiry::Never).unwrap();
    step("set", Some(Rec::Put(item(b"b"))));
    store.set(b"b", b"x", 0, Expiry::At(1)).unwrap();
    step("set with a past expiry deletes", Some(Rec::Delete(b"b".to_vec())));
    store.set(b"b", b"x", 0, Expiry::Never).unwrap();
    step("set", Some(Rec::Put(item(b"b"))));
    store.touch(b"b", Expiry::At(1)).unwrap();
    step("touch into the past deletes", Some(Rec::Delete(b"b".to_vec())));
    store.update(b"k", |_| (Update::Remove, ())).unwrap();
    step("update that removes", Some(Rec::Delete(b"k".to_vec())));

    let old = store.set(b"k", b"v", 0, Expiry::Never).unwrap();
    step("set", Some(Rec::Put(item(b"k"))));
    store.flush_all();
    let Some(Rec::Flush(fence)) = journal.last() else { panic!("flush_all journals a Flush: {:?}", journal.last()) };
    step("flush_all", Some(Rec::Flush(fence)));
    let new = store.set(b"k2", b"v", 0, Expiry::Never).unwrap();
    step("set", Some(Rec::Put(item(b"k2"))));
    assert!(
        old < fence && fence <= new,
        "the fence lies between the CAS uniques before and after: {old} {fence} {new}"
    );
    store.flush_all_at(now + 100);
    step("flush_all_at", Some(Rec::FlushAt(now + 100)));
    store.flush_all_at(now.saturating_sub(1));
    let Some(Rec::Flush(fence2)) = journal.last() else { panic!("a flush_all_at in the past flushes now") };
    step("flush_all_at in the past", Some(Rec::Flush(fence2)));
    assert!(fence2 > new);
}

const MIX_THREADS: u64 = 3;
const MIX_OPS: u64 = 4_000;

#[test]
fn journal_replay_rebuilds_the_store_after_concurrent_mixed_operations() {
    let config = Config { memory_limit_bytes: 1 << 30, ..Config::default() };
    let store = Store::new(config.clone()).unwrap();
    let journal = journaled(&store);
    // Few keys, so operations collide; flushes of both kinds now and then.
    let mix = Mix { keys: 48, ops: MIX_OPS, flush_per_10k: 25 };
    let stop = AtomicBool::new(false);
    let done: Vec<AtomicU64> = (0..MIX_THREADS).map(|_| AtomicU64::new(0)).collect();
    let tallies: Vec<Tally> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..MIX_THREADS)
            .map(|t| {
                let (store, mix, stop, done) = (&store, &mix, &stop, &done[t as usize]);
                s.spawn(move || mixed_ops(store, mix, 0x7e57 + t, stop, done))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let recs = journal.all();

    // One record per successful change, none for a failed one.
    let sum = |f: fn(&Tally) -> u64| tallies.iter().map(f).sum::<u64>();
    let count = |f: fn(&Rec) -> bool| recs.iter().filter(|r| f(r)).count() as u64;
    assert_eq!(count(|r| matches!(r, Rec::Put(_))), sum(|t| t.puts), "Put records");
    assert_eq!(count(|r| matches!(r, Rec::Delete(_))), sum(|t| t.deletes), "Delete records");
    assert_eq!(count(|r| matches!(r, Rec::Flush(_))), sum(|t| t.flushes), "Flush records");
    assert_eq!(count(|r| matches!(r, Rec::FlushAt(_))), sum(|t| t.flush_ats), "FlushAt records");
    assert!(sum(|t| t.flushes) > 0 && sum(|t| t.flush_ats) > 0 && sum(|t| t.deletes) > 0);
    // Each CAS unique a store command returned was journaled with its key.
    let put_cas: HashSet<(&[u8], u64)> = recs
        .iter()
        .filter_map(|r| match r {
            Rec::Put(it) => Some((it.key.as_slice(), it.cas)),
            _ => None,
        })
        .collect();
    for t in &tallies {
        for (k, cas) in &t.put_cas {
            assert!(put_cas.contains(&(k.as_slice(), *cas)), "{} with CAS {cas} not journaled", show(k));
        }
    }

    let replayed = Store::new(config).unwrap();
    for r in &recs {
        apply(&replayed, r);
    }
    eprintln!("{} records replayed, {} items at the end", recs.len(), dump(&store).len());
    assert_same_over_time(&store, &[("the replayed journal".into(), replayed)]);
}

const ORDER_THREADS: u64 = 3;
const ORDER_INCRS: u64 = 2_000;
const ORDER_APPENDS: u64 = 300;

#[test]
fn journal_records_each_keys_changes_in_the_order_they_were_made() {
    // Replaying shows only each key's last record; this checks the whole
    // history of two contended keys: the counter's records must read 1, 2,
    // 3, … and each record of the log must extend the one before by one
    // tag, in journal order.
    let store = Store::new(Config::default()).unwrap();
    let journal = journaled(&store);
    store.set(b"ctr", b"0", 0, Expiry::Never).unwrap();
    store.set(b"log", b"", 0, Expiry::Never).unwrap();
    std::thread::scope(|s| {
        for t in 0..ORDER_THREADS {
            let store = &store;
            s.spawn(move || {
                for i in 0..ORDER_INCRS {
                    store.incr(b"ctr", 1).unwrap();
                    if i % (ORDER_INCRS / ORDER_APPENDS) == 0 {
                        store.append(b"log", format!("{t}.{i};").as_bytes()).unwrap();
                    }
                }
            });
        }
    });
    let recs = journal.all();
    let mut counter = 0;
    let mut log: Vec<u8> = Vec::new();
    for (n, r) in recs.iter().enumerate().skip(2) {
        let Rec::Put(it) = r else { panic!("record {n}: {r:?}") };
        if it.key == b"ctr" {
            counter += 1;
            assert_eq!(parse_u64(&it.value), counter, "record {n}: the counter's records out of order");
        } else {
            let tag = it.value.strip_prefix(log.as_slice());
            assert!(
                tag.is_some_and(|t| t.ends_with(b";") && t.iter().filter(|&&b| b == b';').count() == 1),
                "record {n}: {} does not extend {} by one tag",
                show(&it.value),
                show(&log)
            );
            log = it.value.clone();
        }
    }
    assert_eq!(counter, ORDER_THREADS * ORDER_INCRS);
    let replayed = Store::new(Config::default()).unwrap();
    for r in &recs {
        apply(&replayed, r);
    }
    assert_same(&store, &replayed, "the replayed journal");
}

#[test]
fn replaying_a_flush_all_cancels_a_delayed_flush_as_it_did() {
    // memcached: flush_all cancels a pending `flush_all <delay>`; the
    // journal's Flush must do the same when replayed.
    let store = Store::new(Config::default()).unwrap();
    let journal = journaled(&store);
    let now = store.now();
    store.set(b"a", b"1", 0, Expiry::Never).unwrap();
    store.flush_all_at(now + 100);
    store.set(b"b", b"2", 0, Expiry::Never).unwrap();
    store.flush_all();
    store.set(b"c", b"3", 0, Expiry::Never).unwrap();
    let replayed = Store::new(Config::default()).unwrap();
    for r in journal.all() {
        apply(&replayed, &r);
    }
    assert_same(&store, &replayed, "right after the replay");
    store.advance_clock(200);
    replayed.advance_clock(200);
    assert!(store.get(b"c", |_| ()).is_some(), "the delayed flush was cancelled");
    assert_same(&store, &replayed, "after the cancelled flush's time");
}

// ---------------------------------------------------------------------------
// 4. Recovery: snapshot + the journal from the cut's position.

const RECOVERY_PRELOAD: u64 = 20_000;
const RECOVERY_THREADS: u64 = 2;
const RECOVERY_SNAPSHOTS: usize = 3;

fn recovery_from_snapshots_and_the_log_suffix(config: Config) {
    let store = Store::new(config.clone()).unwrap();
    // Written before the journal is attached: only snapshots have them.
    for k in 0..RECOVERY_PRELOAD {
        store.set(&mkey(k), format!("pre{k}").as_bytes(), k as u32, Expiry::Never).unwrap();
    }
    let journal = journaled(&store);
    // The writers' keys: two thirds preloaded, one third new.
    let mix = Mix { keys: RECOVERY_PRELOAD * 3 / 2, ops: 1_000_000, flush_per_10k: 1 };
    let stop = AtomicBool::new(false);
    let done: Vec<AtomicU64> = (0..RECOVERY_THREADS).map(|_| AtomicU64::new(0)).collect();
    let snaps = std::thread::scope(|s| {
        for t in 0..RECOVERY_THREADS {
            let (store, mix, stop, done) = (&store, &mix, &stop, &done[t as usize]);
            s.spawn(move || mixed_ops(store, mix, 0x5eed + t, stop, done));
        }
        let mut snaps = Vec::new();
        for i in 0..RECOVERY_SNAPSHOTS as u64 {
            wait_until("the writers' progress", || done.iter().all(|d| d.load(Ordering::Relaxed) >= 300 * (i + 1)));
            snaps.push(snapshot(&store, Some(&journal)));
        }
        stop.store(true, Ordering::Relaxed);
        snaps
    });
    let recs = journal.all();
    let recovered: Vec<(String, Store)> = snaps
        .iter()
        .enumerate()
        .map(|(i, (cut, items, stats))| {
            assert_eq!(stats.items as usize, items.len());
            let what = format!("snapshot {i} ({} items) + journal from {cut} of {}", items.len(), recs.len());
            (what, recover(&config, items, &recs[*cut..]))
        })
        .collect();
    eprintln!("{:?}: recovering from {:?}", config.eviction, recovered.iter().map(|r| &r.0).collect::<Vec<_>>());
    assert_same_over_time(&store, &recovered);
    assert_eq!(store.stats().evictions, 0, "nothing evicted (evictions are not journaled)");
}

#[test]
fn recovery_from_a_snapshot_and_the_journal_suffix_gives_the_final_store() {
    recovery_from_snapshots_and_the_log_suffix(Config {
        memory_limit_bytes: 1 << 30,
        initial_buckets_log2: 4,
        ..Config::default()
    });
}

#[test]
fn recovery_from_a_snapshot_and_the_journal_suffix_in_cache_mode() {
    recovery_from_snapshots_and_the_log_suffix(Config {
        eviction: Eviction::Clock,
        memory_limit_bytes: 128 << 20,
        ..Config::default()
    });
}

#[test]
fn delayed_flush_scheduled_before_the_cut_survives_recovery() {
    // The pending `flush_all <delay>` lives in no bucket, and its FlushAt
    // record lies before the cut's position: recovery must still run it.
    let config = Config::default();
    let store = Store::new(config.clone()).unwrap();
    let journal = journaled(&store);
    for i in 0..100u32 {
        store.set(format!("k{i}").as_bytes(), b"v", i, Expiry::Never).unwrap();
    }
    store.flush_all_at(store.now() + 100);
    store.set(b"after", b"v", 0, Expiry::Never).unwrap();
    let (cut, items, _) = snapshot(&store, Some(&journal));
    assert_eq!(items.len(), 101);
    let recovered = recover(&config, &items, &journal.all()[cut..]);
    assert_same(&store, &recovered, "right after recovery");
    store.advance_clock(101);
    recovered.advance_clock(101);
    assert!(store.get(b"after", |_| ()).is_none(), "the delayed flush ran");
    assert_same(&store, &recovered, "after the delayed flush's time");
}

#[test]
fn flush_journaled_before_the_cut_is_not_undone_by_recovery() {
    // A flush_all whose record lands before the cut's position while its
    // effect is not yet visible to the snapshot (the flushing thread is
    // preempted between the two; the hook stalls it there until the
    // snapshot has serialized every item).
    const N: usize = 200;
    let config = Config::default();
    let store = Store::new(config.clone()).unwrap();
    let sink = Arc::new(VecSink::default());
    let in_hook = Arc::new(AtomicBool::new(false));
    let journal = {
        let (sink, in_hook) = (sink.clone(), in_hook.clone());
        Arc::new(VecJournal {
            after_append: Some(Box::new(move |r| {
                if matches!(r, Rec::Flush(_)) {
                    in_hook.store(true, Ordering::Release);
                    wait_quietly(|| sink.len() >= N);
                }
            })),
            ..VecJournal::default()
        })
    };
    assert!(store.set_journal(journal.clone()).is_ok());
    for i in 0..N {
        store.set(format!("k{i}").as_bytes(), b"v", 0, Expiry::Never).unwrap();
    }
    let (cut, stats) = std::thread::scope(|s| {
        s.spawn(|| store.flush_all());
        wait_until("the flush to be journaled", || in_hook.load(Ordering::Acquire));
        let mut cut = 0;
        let stats = store.snapshot(sink.clone(), || cut = journal.len());
        (cut, stats)
    });
    let items = sink.take();
    assert_eq!(stats.items as usize, items.len());
    assert!(dump(&store).is_empty(), "everything was flushed");
    let recovered = recover(&config, &items, &journal.all()[cut..]);
    assert_same(&store, &recovered, "after recovery");
}

#[test]
fn write_with_a_pre_flush_cas_after_the_cut_is_not_resurrected_by_recovery() {
    // A set takes its CAS unique, a flush_all passes it (fence above it),
    // and the set is journaled after the cut: the item was born flushed,
    // and recovery must keep it so though the Flush is before the cut.
    let config = Config::default();
    let store = Store::new(config.clone()).unwrap();
    let in_record = Arc::new(AtomicBool::new(false));
    let cut_taken = Arc::new(AtomicBool::new(false));
    let journal = {
        let (in_record, cut_taken) = (in_record.clone(), cut_taken.clone());
        Arc::new(VecJournal {
            before_append: Some(Box::new(move |r| {
                if matches!(r, Rec::Put(it) if it.key == b"marker") {
                    in_record.store(true, Ordering::Release);
                    wait_quietly(|| cut_taken.load(Ordering::Acquire));
                }
            })),
            ..VecJournal::default()
        })
    };
    assert!(store.set_journal(journal.clone()).is_ok());
    for i in 0..100u32 {
        store.set(format!("k{i}").as_bytes(), b"v", 0, Expiry::Never).unwrap();
    }
    let (marker_cas, (cut, items, _)) = std::thread::scope(|s| {
        let marker = s.spawn(|| store.set(b"marker", b"stale", 0, Expiry::Never).unwrap());
        wait_until("the marker to be journaled", || in_record.load(Ordering::Acquire));
        store.flush_all();
        let sink = Arc::new(VecSink::default());
        let mut cut = 0;
        let stats = store.snapshot(sink.clone(), || {
            cut = journal.len();
            cut_taken.store(true, Ordering::Release);
        });
        (marker.join().unwrap(), (cut, sink.take(), stats))
    });
    let Some(Rec::Flush(fence)) = journal.all().into_iter().find(|r| matches!(r, Rec::Flush(_))) else { panic!() };
    assert!(marker_cas < fence, "the marker's CAS unique was taken before the flush");
    store.set(b"after", b"v", 0, Expiry::Never).unwrap();
    assert!(store.get(b"marker", |_| ()).is_none(), "the marker was born flushed");
    let recovered = recover(&config, &items, &journal.all()[cut..]);
    assert_same(&store, &recovered, "after recovery");
}

// ---------------------------------------------------------------------------
// 5. restore, restore_flush, cas_floor.

#[test]
fn restore_keeps_the_cas_unique_and_later_writes_get_higher_ones() {
    const RESTORED: u64 = 1_000_000;
    let store = Store::new(Config::default()).unwrap();
    // A helper thread takes a block of CAS uniques before the restore; its
    // writes after the restore must still get uniques above the restored.
    let (to_helper, keys) = mpsc::channel::<&'static [u8]>();
    let (cas_tx, cas_rx) = mpsc::channel::<u64>();
    let mut issued = Vec::new();
    std::thread::scope(|s| {
        let store = &store;
        s.spawn(move || {
            for k in keys {
                cas_tx.send(store.set(k, b"h", 0, Expiry::Never).unwrap()).unwrap();
            }
        });
        to_helper.send(b"h1".as_slice()).unwrap();
        let h1 = cas_rx.recv().unwrap();
        let m1 = store.set(b"m1", b"m", 0, Expiry::Never).unwrap();
        assert!(h1 < RESTORED && m1 < RESTORED);
        store.restore(b"r", b"restored", 77, Expiry::At(4_000_000_000), RESTORED).unwrap();
        assert_eq!(
            store.get(b"r", Item::of),
            Some(Item {
                key: b"r".to_vec(),
                value: b"restored".to_vec(),
                flags: 77,
                expiry: Expiry::At(4_000_000_000),
                cas: RESTORED,
                marks: 0
            })
        );
        assert!(store.cas_floor() > RESTORED);
        issued.push(store.set(b"m2", b"m", 0, Expiry::Never).unwrap());
        to_helper.send(b"h2".as_slice()).unwrap();
        issued.push(cas_rx.recv().unwrap());
        to_helper.send(b"r".as_slice()).unwrap();
        issued.push(cas_rx.recv().unwrap());
        drop(to_helper);
    });
    assert!(issued.iter().all(|&c| c > RESTORED), "CAS uniques after the restore: {issued:?}");

    // A restore with a lower CAS unique replaces the item and keeps it,
    // but does not lower the floor; the restored CAS works for `cas`.
    store.restore(b"r", b"older", 1, Expiry::Never, 5).unwrap();
    assert_eq!(store.get(b"r", |it| (it.value().to_vec(), it.cas())), Some((b"older".to_vec(), 5)));
    assert!(store.cas_floor() > RESTORED);
    assert_eq!(store.cas(b"r", b"x", 0, Expiry::Never, 6), Err(Error::Exists));
    issued.push(store.cas(b"r", b"new", 0, Expiry::Never, 5).unwrap());
    issued.push(store.set(b"m3", b"m", 0, Expiry::Never).unwrap());
    assert!(issued.iter().all(|&c| c > RESTORED));
    let unique: HashSet<u64> = issued.iter().copied().collect();
    assert_eq!(unique.len(), issued.len(), "CAS uniques are unique: {issued:?}");

    // restore is journaled once a journal is attached (recovery restores
    // first, then attaches).
    let journal = journaled(&store);
    store.restore(b"j", b"v", 0, Expiry::Never, 7).unwrap();
    assert_eq!(journal.all(), vec![Rec::Put(store.get(b"j", Item::of).unwrap())]);
}

#[test]
fn restore_flush_kills_exactly_the_items_below_its_fence() {
    let store = Store::new(Config::default()).unwrap();
    for (k, cas) in [("a", 10), ("b", 19), ("c", 20), ("d", 21)] {
        store.restore(k.as_bytes(), b"v", 0, Expiry::Never, cas).unwrap();
    }
    store.restore_flush(20);
    let live = |k: &str| store.get(k.as_bytes(), |it| it.cas());
    assert_eq!((live("a"), live("b"), live("c"), live("d")), (None, None, Some(20), Some(21)));
    // Flushed whenever written: an item restored later with a CAS unique
    // below the fence is gone too; one above it is not.
    store.restore(b"e", b"v", 0, Expiry::Never, 15).unwrap();
    store.restore(b"f", b"v", 0, Expiry::Never, 25).unwrap();
    assert_eq!((live("e"), live("f")), (None, Some(25)));
    // A lower fence later revives nothing.
    store.restore_flush(5);
    assert_eq!((live("a"), live("b"), live("e")), (None, None, None));
    // Snapshots hold only the live items.
    let (_, items, _) = snapshot(&store, None);
    let mut keys: Vec<Vec<u8>> = items.into_iter().map(|it| it.key).collect();
    keys.sort();
    assert_eq!(keys, vec![b"c".to_vec(), b"d".to_vec(), b"f".to_vec()]);

    // A fence above every CAS unique issued: later writes get one at or
    // above it (and so are not flushed by it).
    let fresh = Store::new(Config::default()).unwrap();
    let before = fresh.set(b"x", b"v", 0, Expiry::Never).unwrap();
    fresh.restore_flush(1_000_000);
    assert!(fresh.get(b"x", |_| ()).is_none());
    assert!(fresh.cas_floor() >= 1_000_000);
    let after = fresh.set(b"y", b"v", 0, Expiry::Never).unwrap();
    assert!(before < 1_000_000 && after >= 1_000_000);
    assert!(fresh.get(b"y", |_| ()).is_some());
}

#[test]
fn restore_of_an_expired_item_is_not_visible() {
    let store = Store::new(Config::default()).unwrap();
    let now = store.now();
    store.restore(b"past", b"v", 0, Expiry::At(now - 10), 50).unwrap();
    assert!(store.get(b"past", |_| ()).is_none());
    store.restore(b"one", b"v", 0, Expiry::At(1), 51).unwrap();
    assert!(store.get(b"one", |_| ()).is_none());
    // Over a live key, an expired restore removes it.
    store.set(b"x", b"v", 0, Expiry::Never).unwrap();
    store.restore(b"x", b"w", 0, Expiry::At(now - 1), 52).unwrap();
    assert!(store.get(b"x", |_| ()).is_none());
    // Not yet expired: visible until its time.
    store.restore(b"soon", b"v", 0, Expiry::At(now + 10), 53).unwrap();
    assert_eq!(store.get(b"soon", |it| (it.cas(), it.expiry())), Some((53, Expiry::At(now + 10))));
    store.restore(b"never", b"v", 0, Expiry::Never, 54).unwrap();
    let (_, items, _) = snapshot(&store, None);
    assert_eq!(items.len(), 2);
    store.advance_clock(11);
    assert!(store.get(b"soon", |_| ()).is_none());
    let (_, items, _) = snapshot(&store, None);
    assert_eq!(items.iter().map(|it| it.key.as_slice()).collect::<Vec<_>>(), vec![b"never".as_slice()]);
}
