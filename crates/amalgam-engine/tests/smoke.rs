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
