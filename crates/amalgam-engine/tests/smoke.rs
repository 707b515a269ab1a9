//! Quick end-to-end check of the engine through expansions.
use amalgam_engine::{Config, Expiry, Store};

#[test]
fn many_keys_survive_expansions() {
    let store =
        Store::new(Config { memory_limit_bytes: 1 << 30, initial_buckets_log2: 4, ..Config::default() }).unwrap();
    let n = 200_000u32;
    std::thread::scope(|s| {
        for t in 0..2u32 {
            let store = &store;
            s.spawn(move || {
                for i in (t..n).step_by(2) {
                    store.set(&i.to_le_bytes(), &i.to_be_bytes(), i, Expiry::Never).unwrap();
                }
            });
        }
    });
    assert_eq!(store.len(), n as usize);
    for i in 0..n {
        let v = store.get(&i.to_le_bytes(), |it| (it.value().to_vec(), it.flags()));
        assert_eq!(v, Some((i.to_be_bytes().to_vec(), i)), "key {i}");
    }
    assert!(store.wait_for_expansion(std::time::Duration::from_secs(30)));
    let st = store.stats();
    assert!(st.expansions > 0, "{st:?}");
    assert!(st.items as usize <= st.buckets as usize * amalgam_engine::LOAD_PER_BUCKET_MAX, "{st:?}");
}

/// Issue 4 §3: expired items nobody reads again are removed by the
/// bounded background sweep (no access needed) and counted.
#[test]
fn the_background_sweep_removes_expired_items_nobody_reads() {
    for eviction in [amalgam_engine::evict::Eviction::None, amalgam_engine::evict::Eviction::S3Fifo] {
        let store = Store::new(Config { eviction, ..Config::default() }).unwrap();
        let at = store.now() + 10;
        for i in 0..1000 {
            store.set(format!("ttl{i}").as_bytes(), b"v", 0, Expiry::At(at)).unwrap();
        }
        store.set(b"forever", b"v", 0, Expiry::Never).unwrap();
        store.advance_clock(20);
        // Bounded wait: the sweep takes a step every 250 ms.
        for _ in 0..400 {
            if store.len() == 1 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
        assert_eq!(store.len(), 1, "{eviction}: the sweep did not remove the expired items");
        let s = store.stats();
        assert_eq!(s.swept_items, 1000);
        assert!(s.expiry_sweeps >= 1);
        assert!(store.get(b"forever", |_| ()).is_some());
    }
}

/// A chain at its bound answers out of memory, never panics: a snapshot
/// holds expansion off (journal.rs), so a one-bucket table takes every
/// insert made while the snapshot waits between its steps.
#[test]
fn a_full_chain_refuses_writes_instead_of_panicking() {
    use amalgam_engine::{ItemRef, SnapshotSink};
    use std::sync::Arc;
    struct Nothing;
    impl SnapshotSink for Nothing {
        fn item(&self, _: ItemRef<'_>) {}
    }
    let store = Store::new(Config { initial_buckets_log2: 0, ..Config::default() }).unwrap();
    let mut refused_at = None;
    store.snapshot_paced(Arc::new(Nothing), || (), &mut || {
        if refused_at.is_some() {
            return;
        }
        // Inside the snapshot: the expand thread cannot double the table.
        for i in 0..20_000u32 {
            match store.set(&i.to_le_bytes(), b"v", 0, Expiry::Never) {
                Ok(_) => {}
                Err(amalgam_engine::Error::OutOfMemory) => {
                    refused_at = Some(i);
                    break;
                }
                Err(e) => panic!("{e}"),
            }
        }
    });
    let n = refused_at.expect("a one-bucket table cannot hold 20,000 items in one chain");
    assert!(n > 1000, "refused after only {n} items");
    // Nothing half-done: every accepted item is there, the refused one not.
    assert_eq!(store.len(), n as usize);
    assert!(store.get(&n.to_le_bytes(), |_| ()).is_none());
    // After the snapshot the table grows and writes succeed again.
    assert!(store.wait_for_expansion(std::time::Duration::from_secs(30)));
    store.set(&n.to_le_bytes(), b"v", 0, Expiry::Never).unwrap();
}

/// `ItemRef::size` is what the item really takes: for items small enough
/// for the pool's 8-byte classes, the block a set takes is that size
/// rounded up to 8. And the 8 B / 8 B item of the papers' micro-benchmark
/// fits a 24-byte block (item.rs: a variable-width CAS).
#[test]
fn item_size_is_the_block_the_pool_hands_out() {
    let cases: [(&[u8], &[u8], u32, i64); 7] = [
        (b"k", b"", 0, 0),
        (b"k", b"v", 0, 0),
        (b"key", b"value", 7, 0),
        (b"key", b"value", 0, 100),
        (b"key", b"value", 7, 100),
        (&[b'k'; 40], &[b'v'; 60], 1, 1000),
        (b"8bytekey", b"8bytval!", 0, 0),
    ];
    for (key, value, flags, ttl) in cases {
        let store = Store::new(Config::default()).unwrap();
        let exp = Expiry::from_memcached(ttl, store.now());
        let before = store.stats().block_bytes;
        store.set(key, value, flags, exp).unwrap();
        let block = store.stats().block_bytes - before;
        let size = store.get(key, |it| it.size()).unwrap();
        assert!(size <= 128, "case too large for the 8-byte classes");
        assert_eq!(block as usize, size.next_multiple_of(8), "{key:?} {value:?} {flags} {ttl}");
        if key.len() == 8 && value.len() == 8 {
            assert_eq!(block, 24, "the 8 B / 8 B item takes a 24-byte block");
        }
    }
    // Wider value lengths take more header bytes.
    let store = Store::new(Config::default()).unwrap();
    store.set(b"a", &[0; 255], 0, Expiry::Never).unwrap();
    store.set(b"b", &[0; 256], 0, Expiry::Never).unwrap();
    let (a, b) = (store.get(b"a", |it| it.size()).unwrap(), store.get(b"b", |it| it.size()).unwrap());
    assert_eq!(b, a + 2);
}
