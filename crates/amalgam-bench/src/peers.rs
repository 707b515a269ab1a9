//! The contenders of the embedded driver behind one trait: Amalgam's
//! engine and the peer maps of issue 2 §6, plus hashbrown behind a sharded
//! `RwLock` (issue 23: the fast baseline a Rust user writes first) and
//! flurry (a port of Java's ConcurrentHashMap).
//!
//! Equal work per operation: `get` reads the value in place (or through the
//! cheap clone the map hands out) and returns its length plus its first
//! byte, which the driver folds into a `black_box`; `set` copies key and
//! value into the map.
//!
//! Two ways to build the peers ([`Peers`]):
//! * **fair** (the default, issue 23): every peer that takes a hasher gets
//!   foldhash's quality hasher, the one Amalgam's engine hashes keys with,
//!   and every peer that can be presized is sized for the key count, as a
//!   user who cares about speed would build them. quick_cache's default
//!   hasher is foldhash already and it is sized either way.
//! * **defaults** (`--peer-defaults`, the table before issue 23): each
//!   crate's default hasher (SipHash for dashmap, scc, papaya and moka,
//!   ahash for flurry)
//!   and no presizing, which is what `::new()` gives its users; the sharded
//!   `Mutex<HashMap>` keeps foldhash (fast) there too, as it always had.
//!
//! Peers that are caches (moka, quick_cache) get a capacity of twice the
//! key count in both, so nothing is evicted.

use amalgam_engine::{Config, Expiry, Store};
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex, RwLock};

/// Shards of the `Mutex<HashMap>` and `RwLock<hashbrown::HashMap>` peers
/// (a power of two, several per core).
pub const MUTEX_SHARDS: usize = 256;

/// Names accepted by `--contenders`.
pub const CONTENDERS: &[&str] =
    &["amalgam", "dashmap", "scc", "papaya", "moka", "quick_cache", "mutex-hashmap", "rwlock-hashbrown", "flurry"];

/// How the peers are built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peers {
    /// foldhash (quality, Amalgam's) and presized for the key count.
    Fair,
    /// Each crate's defaults: its default hasher, no presizing.
    Defaults,
}

impl Peers {
    /// The name the report and the JSON give the variant.
    pub fn name(self) -> &'static str {
        match self {
            Peers::Fair => "fair",
            Peers::Defaults => "defaults",
        }
    }

    /// One line for the report saying how the peers were built.
    pub fn describe(self) -> &'static str {
        match self {
            Peers::Fair => {
                "Peers: fair (foldhash quality, Amalgam's hasher, for every peer that takes a hasher; \
                 presized for the key count where the map can be)"
            }
            Peers::Defaults => {
                "Peers: crate defaults (--peer-defaults: each crate's default hasher, SipHash for dashmap, \
                 scc, papaya and moka, ahash for flurry; no presizing)"
            }
        }
    }
}

/// The hasher the fair peers get: foldhash's quality variant, as Amalgam's
/// engine uses (seeded at random per map here; Amalgam seeds per store).
pub type FairHasher = foldhash::quality::RandomState;

type Bytes = Box<[u8]>;

/// One map under test.
pub trait Contender: Send + Sync {
    /// Inserts or overwrites.
    fn set(&self, key: &[u8], value: &[u8]);
    /// Looks up and reads the value: `Some(len + first byte)` on a hit.
    fn get(&self, key: &[u8]) -> Option<usize>;
    /// Looks up many keys; returns the number of hits and folds digests into
    /// `sink`. Peers without a batched lookup loop over `get`.
    fn get_many(&self, keys: &[&[u8]], sink: &mut usize) -> usize {
        let mut hits = 0;
        for k in keys {
            if let Some(d) = self.get(k) {
                hits += 1;
                *sink = sink.wrapping_add(d);
            }
        }
        hits
    }
    /// Items stored (for sanity checks after a preload).
    fn items(&self) -> usize;
    /// Finishes work the map deferred during the preload (Amalgam's
    /// background expansions, moka's pending maintenance), so the load rate
    /// counts it and memory and throughput are measured on a settled map.
    fn settle(&self) {}
    /// For downcasting to a concrete contender.
    fn as_any(&self) -> &dyn std::any::Any;
    /// Extra facts to report (index shape and so on), as JSON.
    fn facts(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
}

fn digest(v: &[u8]) -> usize {
    v.len() + v.first().copied().unwrap_or(0) as usize
}

/// Builds a contender by name, sized for `keys` items of `item_bytes`,
/// its peers built as `peers` says.
pub fn build(name: &str, keys: usize, item_bytes: usize, peers: Peers) -> Result<Box<dyn Contender>, String> {
    let h = FairHasher::default;
    Ok(match (name, peers) {
        ("amalgam", _) => Box::new(Amalgam::new(keys, item_bytes, None)?),
        ("dashmap", Peers::Fair) => Box::new(dashmap::DashMap::<Bytes, Bytes, _>::with_capacity_and_hasher(keys, h())),
        ("dashmap", Peers::Defaults) => Box::new(dashmap::DashMap::<Bytes, Bytes>::new()),
        ("scc", Peers::Fair) => Box::new(scc::HashMap::<Bytes, Bytes, _>::with_capacity_and_hasher(keys, h())),
        ("scc", Peers::Defaults) => Box::new(scc::HashMap::<Bytes, Bytes>::new()),
        ("papaya", Peers::Fair) => Box::new(papaya::HashMap::<Bytes, Bytes, _>::with_capacity_and_hasher(keys, h())),
        ("papaya", Peers::Defaults) => Box::new(papaya::HashMap::<Bytes, Bytes>::new()),
        ("moka", Peers::Fair) => Box::new(
            moka::sync::Cache::<Bytes, Arc<[u8]>, _>::builder()
                .max_capacity(2 * keys as u64)
                .initial_capacity(keys)
                .build_with_hasher(h()),
        ),
        ("moka", Peers::Defaults) => Box::new(moka::sync::Cache::<Bytes, Arc<[u8]>>::new(2 * keys as u64)),
        // Its default hasher is foldhash and `new` sizes it for its
        // capacity: the same in both variants.
        ("quick_cache", _) => Box::new(quick_cache::sync::Cache::<Bytes, Arc<[u8]>>::new(2 * keys)),
        ("mutex-hashmap", Peers::Fair) => Box::new(MutexMap::with_capacity_and_hasher(keys, h())),
        ("mutex-hashmap", Peers::Defaults) => Box::new(MutexMap::new()),
        ("rwlock-hashbrown", Peers::Fair) => Box::new(RwLockMap::with_capacity_and_hasher(keys, h())),
        ("rwlock-hashbrown", Peers::Defaults) => Box::new(RwLockMap::with_capacity_and_hasher(0, h())),
        ("flurry", Peers::Fair) => Box::new(flurry::HashMap::<Bytes, Bytes, _>::with_capacity_and_hasher(keys, h())),
        ("flurry", Peers::Defaults) => Box::new(flurry::HashMap::<Bytes, Bytes>::new()),
        (other, _) => return Err(format!("unknown contender {other:?}; known: {}", CONTENDERS.join(", "))),
    })
}

/// Capacity of one of `shards` shards holding `keys` keys between them:
/// an even share and an eighth more, as hashing does not split evenly.
fn shard_capacity(keys: usize, shards: usize) -> usize {
    let share = keys.div_ceil(shards);
    if share == 0 {
        0
    } else {
        share + share / 8 + 1
    }
}

/// Amalgam's engine.
#[derive(Debug)]
pub struct Amalgam(pub Store);

impl Amalgam {
    /// A store whose budget holds `keys` items of `item_bytes` with room to
    /// spare; `initial_buckets_log2` as given or the engine's default.
    pub fn new(keys: usize, item_bytes: usize, initial_buckets_log2: Option<u32>) -> Result<Amalgam, String> {
        let mut config =
            Config { memory_limit_bytes: (keys * (item_bytes + 64) * 2).max(64 << 20), ..Config::default() };
        if let Some(b) = initial_buckets_log2 {
            config.initial_buckets_log2 = b;
        }
        Store::new(config).map(Amalgam).map_err(|e| e.to_string())
    }
}

impl Contender for Amalgam {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn set(&self, key: &[u8], value: &[u8]) {
        self.0.set(key, value, 0, Expiry::Never).expect("amalgam set");
    }
    fn get(&self, key: &[u8]) -> Option<usize> {
        self.0.get(key, |it| digest(it.value()))
    }
    fn get_many(&self, keys: &[&[u8]], sink: &mut usize) -> usize {
        let mut hits = 0;
        self.0.get_batch(keys, |_, it| {
            if let Some(it) = it {
                hits += 1;
                *sink = sink.wrapping_add(digest(it.value()));
            }
        });
        hits
    }
    fn items(&self) -> usize {
        self.0.len()
    }
    fn settle(&self) {
        // Two minutes is far beyond any expansion of 2^32 keys' table.
        self.0.wait_for_expansion(std::time::Duration::from_secs(120));
    }
    fn facts(&self) -> serde_json::Value {
        let s = self.0.stats();
        serde_json::json!({
            "buckets": s.buckets,
            "overflow_nodes": s.overflow_nodes,
            "items_per_bucket": s.items as f64 / s.buckets as f64,
            "overflow_per_bucket": s.overflow_nodes as f64 / s.buckets as f64,
            "index_bytes": s.index_bytes,
            "block_bytes": s.block_bytes,
            "expansions": s.expansions,
        })
    }
}

impl<S: BuildHasher + Clone + Send + Sync + 'static> Contender for dashmap::DashMap<Bytes, Bytes, S> {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn set(&self, key: &[u8], value: &[u8]) {
        self.insert(key.into(), value.into());
    }
    fn get(&self, key: &[u8]) -> Option<usize> {
        dashmap::DashMap::get(self, key).map(|v| digest(&v))
    }
    fn items(&self) -> usize {
        dashmap::DashMap::len(self)
    }
}

impl<S: BuildHasher + Send + Sync + 'static> Contender for scc::HashMap<Bytes, Bytes, S> {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn set(&self, key: &[u8], value: &[u8]) {
        self.upsert_sync(key.into(), value.into());
    }
    fn get(&self, key: &[u8]) -> Option<usize> {
        self.read_sync(key, |_, v| digest(v))
    }
    fn items(&self) -> usize {
        scc::HashMap::len(self)
    }
}

impl<S: BuildHasher + Send + Sync + 'static> Contender for papaya::HashMap<Bytes, Bytes, S> {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn set(&self, key: &[u8], value: &[u8]) {
        self.pin().insert(key.into(), value.into());
    }
    fn get(&self, key: &[u8]) -> Option<usize> {
        self.pin().get(key).map(|v| digest(v))
    }
    fn items(&self) -> usize {
        papaya::HashMap::len(self)
    }
}

impl<S: BuildHasher + Clone + Send + Sync + 'static> Contender for moka::sync::Cache<Bytes, Arc<[u8]>, S> {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn set(&self, key: &[u8], value: &[u8]) {
        self.insert(key.into(), value.into());
    }
    fn get(&self, key: &[u8]) -> Option<usize> {
        moka::sync::Cache::get(self, key).map(|v| digest(&v))
    }
    fn items(&self) -> usize {
        self.run_pending_tasks();
        self.entry_count() as usize
    }
    fn settle(&self) {
        self.run_pending_tasks();
    }
}

impl Contender for quick_cache::sync::Cache<Box<[u8]>, Arc<[u8]>> {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn set(&self, key: &[u8], value: &[u8]) {
        self.insert(key.into(), value.into());
    }
    fn get(&self, key: &[u8]) -> Option<usize> {
        quick_cache::sync::Cache::get(self, key).map(|v| digest(&v))
    }
    fn items(&self) -> usize {
        quick_cache::sync::Cache::len(self)
    }
}

impl<S: BuildHasher + Send + Sync + 'static> Contender for flurry::HashMap<Bytes, Bytes, S> {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn set(&self, key: &[u8], value: &[u8]) {
        self.pin().insert(key.into(), value.into());
    }
    fn get(&self, key: &[u8]) -> Option<usize> {
        self.pin().get(key).map(|v| digest(v))
    }
    fn items(&self) -> usize {
        flurry::HashMap::len(self)
    }
}

type Shard<S> = Mutex<HashMap<Bytes, Bytes, S>>;

/// A sharded `Mutex<HashMap>`: the shard is picked by the key's hash.
#[derive(Debug)]
pub struct MutexMap<S = foldhash::fast::RandomState> {
    hasher: S,
    shards: Vec<Shard<S>>,
}

impl MutexMap {
    /// An empty map of [`MUTEX_SHARDS`] shards on foldhash (fast), not
    /// presized: the peer as it was before issue 23.
    pub fn new() -> MutexMap {
        MutexMap::with_capacity_and_hasher(0, foldhash::fast::RandomState::default())
    }
}

impl<S: BuildHasher + Clone> MutexMap<S> {
    /// [`MUTEX_SHARDS`] shards sized for `keys` keys between them.
    pub fn with_capacity_and_hasher(keys: usize, hasher: S) -> MutexMap<S> {
        let cap = shard_capacity(keys, MUTEX_SHARDS);
        let shards =
            (0..MUTEX_SHARDS).map(|_| Mutex::new(HashMap::with_capacity_and_hasher(cap, hasher.clone()))).collect();
        MutexMap { hasher, shards }
    }

    fn shard(&self, key: &[u8]) -> &Shard<S> {
        // High bits pick the shard; the map uses the low bits.
        &self.shards[(self.hasher.hash_one(key) >> 56) as usize % MUTEX_SHARDS]
    }
}

impl Default for MutexMap {
    fn default() -> MutexMap {
        MutexMap::new()
    }
}

impl<S: BuildHasher + Clone + Send + Sync + 'static> Contender for MutexMap<S> {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn set(&self, key: &[u8], value: &[u8]) {
        self.shard(key).lock().unwrap().insert(key.into(), value.into());
    }
    fn get(&self, key: &[u8]) -> Option<usize> {
        self.shard(key).lock().unwrap().get(key).map(|v| digest(v))
    }
    fn items(&self) -> usize {
        self.shards.iter().map(|s| s.lock().unwrap().len()).sum()
    }
}

/// A sharded `RwLock<hashbrown::HashMap>` on foldhash: readers of a shard
/// share its lock. The shard is picked by the key's hash, whose high bits
/// hashbrown's own probe does not use.
#[derive(Debug)]
pub struct RwLockMap {
    hasher: FairHasher,
    shards: Vec<RwLock<hashbrown::HashMap<Bytes, Bytes, FairHasher>>>,
}

impl RwLockMap {
    /// [`MUTEX_SHARDS`] shards sized for `keys` keys between them.
    pub fn with_capacity_and_hasher(keys: usize, hasher: FairHasher) -> RwLockMap {
        let cap = shard_capacity(keys, MUTEX_SHARDS);
        let shards = (0..MUTEX_SHARDS)
            .map(|_| RwLock::new(hashbrown::HashMap::with_capacity_and_hasher(cap, hasher.clone())))
            .collect();
        RwLockMap { hasher, shards }
    }

    fn shard(&self, key: &[u8]) -> &RwLock<hashbrown::HashMap<Bytes, Bytes, FairHasher>> {
        &self.shards[(self.hasher.hash_one(key) >> 56) as usize % MUTEX_SHARDS]
    }
}

impl Contender for RwLockMap {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn set(&self, key: &[u8], value: &[u8]) {
        self.shard(key).write().unwrap().insert(key.into(), value.into());
    }
    fn get(&self, key: &[u8]) -> Option<usize> {
        self.shard(key).read().unwrap().get(key).map(|v| digest(v))
    }
    fn items(&self) -> usize {
        self.shards.iter().map(|s| s.read().unwrap().len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_contender_stores_and_reads() {
        for (name, peers) in CONTENDERS.iter().flat_map(|n| [(n, Peers::Fair), (n, Peers::Defaults)]) {
            let c = build(name, 1000, 16, peers).unwrap();
            for i in 0..1000u32 {
                c.set(&i.to_le_bytes(), &[i as u8; 8]);
            }
            assert_eq!(c.items(), 1000, "{name} {peers:?}");
            assert_eq!(c.get(&7u32.to_le_bytes()), Some(8 + 7), "{name} {peers:?}");
            assert_eq!(c.get(b"absent"), None, "{name} {peers:?}");
            let keys: Vec<[u8; 4]> = (0..10u32).map(|i| i.to_le_bytes()).collect();
            let refs: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
            let mut sink = 0;
            assert_eq!(c.get_many(&refs, &mut sink), 10, "{name} {peers:?}");
        }
        assert!(build("nope", 1, 1, Peers::Fair).is_err());
    }

    #[test]
    fn fair_peers_hash_with_foldhash_and_are_presized() {
        const KEYS: usize = 100_000;
        let any = |name| build(name, KEYS, 16, Peers::Fair).unwrap();
        let d = any("dashmap");
        let d = d.as_any().downcast_ref::<dashmap::DashMap<Bytes, Bytes, FairHasher>>().expect("dashmap on foldhash");
        assert!(d.capacity() >= KEYS, "dashmap capacity {}", d.capacity());
        let s = any("scc");
        let s = s.as_any().downcast_ref::<scc::HashMap<Bytes, Bytes, FairHasher>>().expect("scc on foldhash");
        assert!(s.capacity() >= KEYS, "scc capacity {}", s.capacity());
        assert!(any("papaya").as_any().downcast_ref::<papaya::HashMap<Bytes, Bytes, FairHasher>>().is_some());
        assert!(any("flurry").as_any().downcast_ref::<flurry::HashMap<Bytes, Bytes, FairHasher>>().is_some());
        assert!(any("moka").as_any().downcast_ref::<moka::sync::Cache<Bytes, Arc<[u8]>, FairHasher>>().is_some());
        let m = any("mutex-hashmap");
        let m = m.as_any().downcast_ref::<MutexMap<FairHasher>>().expect("mutex-hashmap on foldhash quality");
        assert!(m.shards.iter().map(|s| s.lock().unwrap().capacity()).sum::<usize>() >= KEYS);
        let r = any("rwlock-hashbrown");
        let r = r.as_any().downcast_ref::<RwLockMap>().unwrap();
        assert!(r.shards.iter().map(|s| s.read().unwrap().capacity()).sum::<usize>() >= KEYS);
        // The defaults are the crates' own.
        let d = build("dashmap", KEYS, 16, Peers::Defaults).unwrap();
        let d = d.as_any().downcast_ref::<dashmap::DashMap<Bytes, Bytes>>().expect("dashmap on SipHash");
        assert!(d.capacity() < KEYS);
    }
}
