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
