//! Large items (issue 18 item 5): values past the item size limit under
//! `Store::with_value_bytes_max` (how the server stores RESP strings), in
//! store mode (blocks of their own beside the pools) and cache mode
//! (outsized items: tests/cache.rs has their eviction), accounted in the
//! stats and freed through the epochs.

use amalgam_engine::evict::Eviction;
use amalgam_engine::{Config, Error, Expiry, Store, SMALL_ITEM_BYTES_MAX};

/// A value of `len` bytes that is not one byte repeated.
fn value(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3] ^ seed).collect()
}

fn store(eviction: Eviction, budget: usize) -> Store {
    Store::new(Config { memory_limit_bytes: budget, eviction, ..Config::default() }).unwrap()
}

#[test]
fn store_mode_takes_values_past_the_item_size_under_a_value_limit() {
    let s = store(Eviction::None, 64 << 20);
    let v = value(8 << 20, 1);
    assert_eq!(s.set(b"big", &v, 0, Expiry::Never), Err(Error::TooLarge), "-I (1 MiB) applies by default");
    assert_eq!(s.with_value_bytes_max((8 << 20) - 1, || s.set(b"big", &v, 0, Expiry::Never)), Err(Error::TooLarge));
    s.with_value_bytes_max(8 << 20, || s.set(b"big", &v, 0, Expiry::Never)).unwrap();
    assert_eq!(s.get(b"big", |it| it.value().to_vec()), Some(v.clone()));
    let st = s.stats();
    assert!(st.reserved_bytes >= 8 << 20 && st.block_bytes >= 8 << 20, "accounted: {st:?}");
    // The limit is back after the closure.
    assert_eq!(s.set(b"other", &v, 0, Expiry::Never), Err(Error::TooLarge));
    // APPEND past it is refused the same way, inside.
    assert_eq!(s.with_value_bytes_max(8 << 20, || s.append(b"big", b"x")), Err(Error::TooLarge));
    s.with_value_bytes_max(9 << 20, || s.append(b"big", b"x")).unwrap();
    assert_eq!(s.get(b"big", |it| it.value().len()), Some((8 << 20) + 1));
}

#[test]
fn store_mode_frees_large_items_through_the_epochs() {
    // 200 overwrites of 12 MiB in a 64 MiB budget: only possible if each
    // replaced version is freed (after its grace period).
    let s = store(Eviction::None, 64 << 20);
    let mut v = value(12 << 20, 0);
    for i in 0..200u32 {
        v[0] = i as u8;
        let r = s.with_value_bytes_max(16 << 20, || s.set(b"big", &v, 0, Expiry::Never));
        assert!(r.is_ok(), "overwrite {i}: {r:?}");
    }
    s.delete(b"big").unwrap();
    assert!(s.reclaim());
    let st = s.stats();
    assert!(st.block_bytes < SMALL_ITEM_BYTES_MAX as i64, "freed: {st:?}");
    // Larger than the budget: out of memory, not a panic.
    let huge = value(65 << 20, 9);
    assert_eq!(s.with_value_bytes_max(1 << 30, || s.set(b"huge", &huge, 0, Expiry::Never)), Err(Error::OutOfMemory));
}

#[test]
fn cache_mode_outsized_items_are_read_back_overwritten_and_freed() {
    let s = store(Eviction::S3Fifo, 64 << 20);
    let mut v = value(4 << 20, 0);
    for i in 0..100u32 {
        v[0] = i as u8;
        let r = s.with_value_bytes_max(16 << 20, || s.set(b"big", &v, 0, Expiry::Never));
        assert!(r.is_ok(), "overwrite {i}: {r:?}");
        assert_eq!(s.get(b"big", |it| it.value() == &v[..]), Some(true));
    }
    let st = s.stats();
    assert!(st.outsized_bytes >= 4 << 20 && st.outsized_bytes <= 64 << 20, "{st:?}");
    s.delete(b"big").unwrap();
    assert!(s.reclaim());
    assert_eq!(s.stats().outsized_bytes, 0, "{:?}", s.stats());
    // Larger than outsized items may take (budget less the index's share
    // and the log's minimum): too large.
    let huge = value(60 << 20, 3);
    assert_eq!(s.with_value_bytes_max(1 << 30, || s.set(b"huge", &huge, 0, Expiry::Never)), Err(Error::TooLarge));
}

#[test]
fn cache_mode_small_writes_age_outsized_items_out() {
    // Outsized items age with the log: once the reclaimer has passed the
    // segments written before them, the policy decides on them as on
    // small items, so a stream of small writes evicts unread large ones.
    let s = store(Eviction::S3Fifo, 64 << 20);
    let v = value(3 << 20, 7);
    for k in [&b"big0"[..], b"big1", b"big2"] {
        s.with_value_bytes_max(16 << 20, || s.set(k, &v, 0, Expiry::Never)).unwrap();
    }
    assert!(s.stats().outsized_bytes >= 9 << 20);
    let small = [5u8; 1000];
    for i in 0..300_000u32 {
        s.set(&i.to_le_bytes(), &small, 0, Expiry::Never).unwrap();
    }
    assert!(s.stats().evictions > 0);
    for k in [&b"big0"[..], b"big1", b"big2"] {
        assert!(s.get(k, |_| ()).is_none(), "{} still cached: {:?}", String::from_utf8_lossy(k), s.stats());
    }
    assert!(s.reclaim());
    assert_eq!(s.stats().outsized_bytes, 0, "{:?}", s.stats());
}
