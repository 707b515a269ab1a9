//! Redis's volatile policies on the segment log (`evict::Scope`,
//! reclaim.rs "Volatile scopes"): under a volatile scope an item without a
//! TTL is never evicted, a cache holding only such items answers out of
//! memory rather than walking the log for ever, volatile-ttl evicts the
//! soonest-expiring first, and a budget under the fewest segments
//! (CONFIG SET maxmemory 1) keeps nothing evictable and refuses writes.
//!
//! Background eviction is off: the writer reclaims, synchronously, so what
//! each write did is known when it returns.

use amalgam_engine::evict::{Eviction, Scope};
use amalgam_engine::{Config, Error, Expiry, Store};

/// Segments of 4 KiB, 64 of them: about 50 items of 80 bytes each.
const SEGMENT_BYTES: usize = 4096;
const BUDGET_BYTES: usize = 64 * SEGMENT_BYTES;
/// Values of this many bytes: an item is about 80 bytes.
const VALUE_BYTES: usize = 60;
/// Keys written past the budget: four budgets' worth.
const KEYS_OVER: usize = 4 * BUDGET_BYTES / 80;

fn cache(scope: Scope) -> Store {
    let store = Store::new(Config {
        eviction: Eviction::S3Fifo,
        memory_limit_bytes: BUDGET_BYTES,
        segment_bytes: SEGMENT_BYTES,
        background_eviction: false,
        index_in_budget: false,
        ..Config::default()
    })
    .unwrap();
    store.set_scope(scope).unwrap();
    store
}

fn value() -> Vec<u8> {
    vec![b'v'; VALUE_BYTES]
}

fn present(store: &Store, key: &str) -> bool {
    store.get(key.as_bytes(), |_| ()).is_some()
}

/// Volatile: writes of keys with a TTL far past the budget evict only
/// keys with a TTL; every key without one is still there.
#[test]
fn volatile_never_evicts_a_key_without_a_ttl() {
    for scope in [Scope::Volatile, Scope::VolatileTtl] {
        let store = cache(scope);
        let later = Expiry::At(store.now() + 100_000);
        for i in 0..500 {
            store.set(format!("keep:{i}").as_bytes(), &value(), 0, Expiry::Never).unwrap();
        }
        for i in 0..KEYS_OVER {
            store.set(format!("ttl:{i}").as_bytes(), &value(), 0, later).unwrap();
        }
        let st = store.stats();
        assert!(st.evictions as usize > KEYS_OVER / 2, "{scope:?}: the writes had to evict ({})", st.evictions);
        for i in 0..500 {
            assert!(present(&store, &format!("keep:{i}")), "{scope:?}: keep:{i} was evicted");
        }
    }
}

/// All keys (the default scope) evicts keys without a TTL as well: the
/// negative of the test above, so it can tell the scopes apart.
#[test]
fn allkeys_evicts_keys_without_a_ttl() {
    let store = cache(Scope::AllKeys);
    let later = Expiry::At(store.now() + 100_000);
    for i in 0..500 {
        store.set(format!("keep:{i}").as_bytes(), &value(), 0, Expiry::Never).unwrap();
    }
    for i in 0..KEYS_OVER {
        store.set(format!("ttl:{i}").as_bytes(), &value(), 0, later).unwrap();
    }
    let left = (0..500).filter(|i| present(&store, &format!("keep:{i}"))).count();
    assert!(left < 500, "allkeys kept every key without a TTL");
}

/// Volatile with nothing evictable: a cache full of keys without a TTL
/// refuses the write that does not fit (out of memory, which the server
/// answers with Redis's `-OOM`), keeps every key it accepted, and takes
/// writes again once a key is given a TTL it can evict... here, once the
/// scope is all keys again.
#[test]
fn volatile_with_only_keys_without_a_ttl_answers_out_of_memory() {
    let store = cache(Scope::Volatile);
    let mut accepted = 0;
    let mut refused = None;
    for i in 0..KEYS_OVER {
        match store.set(format!("k:{i}").as_bytes(), &value(), 0, Expiry::Never) {
            Ok(_) => accepted += 1,
            Err(Error::OutOfMemory) => {
                refused = Some(i);
                break;
            }
            Err(e) => panic!("write {i}: {e:?}"),
        }
    }
    assert!(refused.is_some(), "{accepted} writes of keys without a TTL never filled {BUDGET_BYTES} bytes");
    assert_eq!(store.stats().evictions, 0);
    for i in 0..accepted {
        assert!(present(&store, &format!("k:{i}")), "k:{i} was accepted and then evicted");
    }
    store.set_scope(Scope::AllKeys).unwrap();
    store.set(b"after", &value(), 0, Expiry::Never).unwrap();
    assert!(store.stats().evictions > 0);
}

/// volatile-ttl: keys expiring soon and keys expiring late, written
/// alternately past the budget: the evicted are the soon ones (each
/// segment reaching the head gives up the soonest half of its keys with
/// a TTL), where the policy alone would take both alike.
#[test]
fn volatile_ttl_evicts_the_soonest_to_expire_first() {
    let evicted_soon_share = |scope: Scope| {
        let store = cache(scope);
        let (soon, late) = (Expiry::At(store.now() + 1_000), Expiry::At(store.now() + 100_000));
        let n = BUDGET_BYTES / 80 * 3 / 2;
        for i in 0..n {
            let (name, at) = if i % 2 == 0 { ("soon", soon) } else { ("late", late) };
            store.set(format!("{name}:{i}").as_bytes(), &value(), 0, at).unwrap();
        }
        let gone = |name: &str, parity: usize| {
            (0..n).filter(|i| i % 2 == parity && !present(&store, &format!("{name}:{i}"))).count()
        };
        let (soon_gone, late_gone) = (gone("soon", 0), gone("late", 1));
        assert!(soon_gone + late_gone > n / 4, "{scope:?}: too little was evicted to tell ({soon_gone} + {late_gone})");
        soon_gone as f64 / (soon_gone + late_gone) as f64
    };
    let ttl = evicted_soon_share(Scope::VolatileTtl);
    assert!(ttl >= 0.9, "volatile-ttl: only {:.0}% of the evicted were the soon keys", ttl * 100.0);
    let lru = evicted_soon_share(Scope::Volatile);
    assert!(lru < 0.75, "the policy alone took soon keys {:.0}% of the time: the test tells nothing", lru * 100.0);
}

/// A budget under the fewest segments (Redis's `maxmemory 1`): under all
/// keys everything goes and writes are refused; under a volatile scope
/// the keys with a TTL go, those without stay, and writes are refused.
#[test]
fn a_starved_budget_evicts_what_it_may_and_refuses_writes() {
    for scope in [Scope::AllKeys, Scope::Volatile] {
        let store = cache(scope);
        let later = Expiry::At(store.now() + 100_000);
        for i in 0..1000 {
            let at = if i % 2 == 0 { Expiry::Never } else { later };
            store.set(format!("k:{i}").as_bytes(), &value(), 0, at).unwrap();
        }
        store.set_memory_limit(1).unwrap();
        // Each refused write walks at most a few segments: the log turns
        // within a bounded number of them.
        for _ in 0..BUDGET_BYTES / SEGMENT_BYTES * 2 {
            assert_eq!(store.set(b"new", &value(), 0, Expiry::Never).unwrap_err(), Error::OutOfMemory, "{scope:?}");
        }
        let ttl_left = (1..1000).step_by(2).filter(|i| present(&store, &format!("k:{i}"))).count();
        let plain_left = (0..1000).step_by(2).filter(|i| present(&store, &format!("k:{i}"))).count();
        assert_eq!(ttl_left, 0, "{scope:?}: keys with a TTL left");
        match scope {
            Scope::AllKeys => assert_eq!(plain_left, 0, "all keys: everything goes"),
            _ => assert_eq!(plain_left, 500, "{scope:?}: a key without a TTL was evicted"),
        }
        store.set_memory_limit(BUDGET_BYTES).unwrap();
        store.set(b"new", &value(), 0, Expiry::Never).unwrap();
    }
}

/// With the maintenance thread on (the server's setting): once a volatile
/// cache full of keys without a TTL has refused a write, later writes are
/// refused without reclaiming themselves (no writer reclamation counted),
/// the store reports Redis's out of memory, and a change of scope lets
/// writes evict again.
#[test]
fn a_refusing_volatile_cache_leaves_the_search_to_the_maintenance_thread() {
    let store = Store::new(Config {
        eviction: Eviction::S3Fifo,
        memory_limit_bytes: BUDGET_BYTES,
        segment_bytes: SEGMENT_BYTES,
        index_in_budget: false,
        ..Config::default()
    })
    .unwrap();
    store.set_scope(Scope::Volatile).unwrap();
    let refused = (0..KEYS_OVER).find(|i| store.set(format!("k:{i}").as_bytes(), &value(), 0, Expiry::Never).is_err());
    let first = refused.expect("keys without a TTL never filled the cache");
    assert!(store.out_of_memory());
    let before = store.stats().writer_reclaims;
    for i in 0..100 {
        let key = format!("more:{i}");
        assert_eq!(store.set(key.as_bytes(), &value(), 0, Expiry::Never).unwrap_err(), Error::OutOfMemory);
    }
    assert_eq!(store.stats().writer_reclaims, before, "a refused write reclaimed");
    assert!(present(&store, &format!("k:{}", first - 1)));
    store.set_scope(Scope::AllKeys).unwrap();
    assert!(!store.out_of_memory());
    store.set(b"after", &value(), 0, Expiry::Never).unwrap();
}

/// Outsized items (larger than a segment, outsized.rs) follow the scope
/// too: under a volatile scope one without a TTL outlives writes of keys
/// with a TTL far past the budget; under all keys it does not.
#[test]
fn volatile_keeps_an_outsized_item_without_a_ttl() {
    for (scope, kept) in [(Scope::Volatile, true), (Scope::AllKeys, false)] {
        let store = cache(scope);
        let big = vec![b'b'; 3 * SEGMENT_BYTES];
        store.set(b"big", &big, 0, Expiry::Never).unwrap();
        let later = Expiry::At(store.now() + 100_000);
        for i in 0..KEYS_OVER {
            store.set(format!("ttl:{i}").as_bytes(), &value(), 0, later).unwrap();
        }
        assert_eq!(present(&store, "big"), kept, "{scope:?}");
    }
}
