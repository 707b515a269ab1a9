//! The contenders of the embedded driver behind one trait: Amalgam's
//! engine and the peer maps of issue 2 §6.
//!
//! Equal work per operation: `get` reads the value in place (or through the
//! cheap clone the map hands out) and returns its length plus its first
//! byte, which the driver folds into a `black_box`; `set` copies key and
//! value into the map. Each peer uses its crate's default hasher, which is
//! what its users get, except the sharded `Mutex<HashMap>`, which uses
//! foldhash (hashbrown's default) rather than std's SipHash. Peers that are
//! caches (moka, quick_cache) get a capacity of twice the key count so
//! nothing is evicted.

use amalgam_engine::{Config, Expiry, Store};
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex};

/// Shards of the `Mutex<HashMap>` peer (a power of two, several per core).
pub const MUTEX_SHARDS: usize = 256;

/// Names accepted by `--contenders`.
pub const CONTENDERS: &[&str] = &["amalgam", "dashmap", "scc", "papaya", "moka", "quick_cache", "mutex-hashmap"];

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

/// Builds a contender by name, sized for `keys` items of `item_bytes`.
pub fn build(name: &str, keys: usize, item_bytes: usize) -> Result<Box<dyn Contender>, String> {
    Ok(match name {
        "amalgam" => Box::new(Amalgam::new(keys, item_bytes, None)?),
        "dashmap" => Box::new(dashmap::DashMap::<Box<[u8]>, Box<[u8]>>::new()),
        "scc" => Box::new(scc::HashMap::<Box<[u8]>, Box<[u8]>>::new()),
        "papaya" => Box::new(papaya::HashMap::<Box<[u8]>, Box<[u8]>>::new()),
        "moka" => Box::new(moka::sync::Cache::<Box<[u8]>, Arc<[u8]>>::new(2 * keys as u64)),
        "quick_cache" => Box::new(quick_cache::sync::Cache::<Box<[u8]>, Arc<[u8]>>::new(2 * keys)),
        "mutex-hashmap" => Box::new(MutexMap::new()),
        other => return Err(format!("unknown contender {other:?}; known: {}", CONTENDERS.join(", "))),
    })
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

impl Contender for dashmap::DashMap<Box<[u8]>, Box<[u8]>> {
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

impl Contender for scc::HashMap<Box<[u8]>, Box<[u8]>> {
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

impl Contender for papaya::HashMap<Box<[u8]>, Box<[u8]>> {
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

impl Contender for moka::sync::Cache<Box<[u8]>, Arc<[u8]>> {
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

type Shard = Mutex<HashMap<Box<[u8]>, Box<[u8]>, foldhash::fast::RandomState>>;

/// A sharded `Mutex<HashMap>`: the shard is picked by the key's hash.
#[derive(Debug)]
pub struct MutexMap {
    hasher: foldhash::fast::RandomState,
    shards: Vec<Shard>,
}

impl MutexMap {
    /// An empty map of [`MUTEX_SHARDS`] shards.
    pub fn new() -> MutexMap {
        let hasher = foldhash::fast::RandomState::default();
        let shards = (0..MUTEX_SHARDS).map(|_| Mutex::new(HashMap::with_hasher(hasher.clone()))).collect();
        MutexMap { hasher, shards }
    }

    fn shard(&self, key: &[u8]) -> &Shard {
        // High bits pick the shard; the map uses the low bits.
        &self.shards[(self.hasher.hash_one(key) >> 56) as usize % MUTEX_SHARDS]
    }
}

impl Default for MutexMap {
    fn default() -> MutexMap {
        MutexMap::new()
    }
}

impl Contender for MutexMap {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_contender_stores_and_reads() {
        for name in CONTENDERS {
            let c = build(name, 1000, 16).unwrap();
            for i in 0..1000u32 {
                c.set(&i.to_le_bytes(), &[i as u8; 8]);
            }
            assert_eq!(c.items(), 1000, "{name}");
            assert_eq!(c.get(&7u32.to_le_bytes()), Some(8 + 7), "{name}");
            assert_eq!(c.get(b"absent"), None, "{name}");
            let keys: Vec<[u8; 4]> = (0..10u32).map(|i| i.to_le_bytes()).collect();
            let refs: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
            let mut sink = 0;
            assert_eq!(c.get_many(&refs, &mut sink), 10, "{name}");
        }
        assert!(build("nope", 1, 1).is_err());
    }
}
