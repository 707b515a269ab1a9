//! The papers' named workloads, key and value encodings, and the key
//! streams both drivers replay.
//!
//! Key streams are generated before the timed loop (DESIGN.md § Benchmarks):
//! a driver thread only indexes a `Vec<u32>` of key ids while it is timed.
//!
//! Keys are printable (lower-case hex of the key id, left-padded with '0'
//! to the workload's key size) so the same key space works over memcached's
//! text protocol, which forbids spaces and control characters in keys.

/// Key-popularity distribution.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Distribution {
    /// Every key equally likely.
    Uniform,
    /// YCSB's scrambled Zipfian, θ = 0.99.
    Zipf,
}

/// One of the papers' workloads (DESIGN.md § Benchmarks).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Workload {
    /// Name used on the command line and in reports.
    pub name: &'static str,
    /// Key bytes.
    pub key_bytes: usize,
    /// Value bytes.
    pub value_bytes: usize,
    /// Fraction of operations that are GETs; the rest are SETs (updates of
    /// preloaded keys).
    pub get_fraction: f64,
    /// Key popularity.
    pub distribution: Distribution,
}

/// The named workloads. Sources: Mercury §4.1–4.2, MemC3 §5.3–5.4, MICA Table 3.
pub const WORKLOADS: &[Workload] = &[
    Workload {
        name: "mercury-micro",
        key_bytes: 8,
        value_bytes: 8,
        get_fraction: 1.0,
        distribution: Distribution::Uniform,
    },
    Workload {
        name: "mercury-ycsb-95",
        key_bytes: 24,
        value_bytes: 10,
        get_fraction: 0.95,
        distribution: Distribution::Zipf,
    },
    Workload {
        name: "mercury-ycsb-50",
        key_bytes: 24,
        value_bytes: 10,
        get_fraction: 0.50,
        distribution: Distribution::Zipf,
    },
    Workload { name: "memc3", key_bytes: 16, value_bytes: 32, get_fraction: 0.95, distribution: Distribution::Zipf },
    Workload {
        name: "mica-tiny",
        key_bytes: 8,
        value_bytes: 8,
        get_fraction: 0.95,
        distribution: Distribution::Uniform,
    },
    Workload {
        name: "mica-small",
        key_bytes: 16,
        value_bytes: 64,
        get_fraction: 0.50,
        distribution: Distribution::Zipf,
    },
];

/// Looks a workload up by name.
pub fn workload(name: &str) -> Option<Workload> {
    WORKLOADS.iter().copied().find(|w| w.name == name)
}

/// Writes key `id` into `out` (cleared first): lower-case hex, left-padded
/// with '0' to `key_bytes`. Panics if `key_bytes` cannot hold the id (a
/// benchmark configuration error, checked up front by the drivers).
pub fn key_into(id: u64, key_bytes: usize, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.clear();
    out.resize(key_bytes, b'0');
    let mut v = id;
    let mut i = key_bytes;
    while v != 0 {
        assert!(i > 0, "key id {id} does not fit in {key_bytes} hex digits");
        i -= 1;
        out[i] = HEX[(v & 15) as usize];
        v >>= 4;
    }
}

/// Key `id` as a fresh vector.
pub fn key_of(id: u64, key_bytes: usize) -> Vec<u8> {
    let mut k = Vec::with_capacity(key_bytes);
    key_into(id, key_bytes, &mut k);
    k
}

/// Largest key id `key_bytes` hex digits can hold, saturating at u64::MAX.
pub fn key_space(key_bytes: usize) -> u64 {
    if key_bytes >= 16 {
        u64::MAX
    } else {
        1u64 << (4 * key_bytes)
    }
}

/// A value of `value_bytes` printable bytes derived from `id` and `version`.
pub fn value_of(id: u64, version: u64, value_bytes: usize) -> Vec<u8> {
    let mut rng = SplitMix64::new(id ^ version.rotate_left(32));
    (0..value_bytes).map(|_| b'a' + (rng.next_u64() % 26) as u8).collect()
}

/// SplitMix64: a small, fast, well-mixed generator (Steele et al. 2014),
/// good enough for workload generation and nothing cryptographic.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator started from `seed`.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform double in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// YCSB's `ScrambledZipfianGenerator`: a Zipfian (θ = 0.99) draw over a
/// fixed space of 10^10 items, whose zeta is precomputed, hashed with
/// FNV-1a 64 and reduced modulo the key count, so popular keys are spread
/// over the key space instead of clustered at its start (YCSB,
/// `ScrambledZipfianGenerator.java`, `ZipfianGenerator.java`).
#[derive(Clone, Debug)]
pub struct ScrambledZipf {
    items: u64,
    alpha: f64,
    eta: f64,
    half_pow_theta: f64,
}

impl ScrambledZipf {
    /// YCSB's zipfian constant θ.
    pub const THETA: f64 = 0.99;
    /// YCSB's item space for the scrambled generator.
    const SPACE: u64 = 10_000_000_000;
    /// zeta(10^10, 0.99), precomputed in YCSB.
    const ZETAN: f64 = 26.469_028_201_783_02;

    /// A generator over key ids `0..items`.
    pub fn new(items: u64) -> ScrambledZipf {
        assert!(items > 0);
        let theta = Self::THETA;
        let zeta2 = 1.0 + 0.5f64.powf(theta);
        let n = Self::SPACE as f64;
        ScrambledZipf {
            items,
            alpha: 1.0 / (1.0 - theta),
            eta: (1.0 - (2.0 / n).powf(1.0 - theta)) / (1.0 - zeta2 / Self::ZETAN),
            half_pow_theta: 0.5f64.powf(theta),
        }
    }

    /// The next key id.
    pub fn next(&mut self, rng: &mut SplitMix64) -> u64 {
        let u = rng.next_f64();
        let uz = u * Self::ZETAN;
        let rank = if uz < 1.0 {
            0
        } else if uz < 1.0 + self.half_pow_theta {
            1
        } else {
            ((Self::SPACE as f64) * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64
        };
        fnv1a64(rank) % self.items
    }
}

/// FNV-1a over the 8 little-endian bytes of `v` (YCSB's `Utils.fnvhash64`).
pub fn fnv1a64(v: u64) -> u64 {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    for b in v.to_le_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01B3);
    }
    h
}

/// One operation of a stream: the key id, and whether it is a GET (else SET).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Op {
    /// Key id in `0..keys`.
    pub key: u32,
    /// GET if true, SET otherwise.
    pub get: bool,
}

/// `len` operations of workload `w` over `keys` preloaded key ids, drawn
/// from `seed` (one stream per driver thread, each with its own seed).
pub fn op_stream(w: &Workload, keys: u64, len: usize, seed: u64) -> Vec<Op> {
    assert!(keys <= u64::from(u32::MAX) + 1);
    let mut rng = SplitMix64::new(seed);
    let mut zipf = ScrambledZipf::new(keys);
    (0..len)
        .map(|_| {
            let key = match w.distribution {
                Distribution::Uniform => rng.next_u64() % keys,
                Distribution::Zipf => zipf.next(&mut rng),
            } as u32;
            let get = w.get_fraction >= 1.0 || rng.next_f64() < w.get_fraction;
            Op { key, get }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_fixed_width_hex() {
        assert_eq!(key_of(0, 8), b"00000000");
        assert_eq!(key_of(0xabc, 8), b"00000abc");
        assert_eq!(key_of(u64::from(u32::MAX), 8), b"ffffffff");
        assert_eq!(key_of(7, 24).len(), 24);
        assert_eq!(key_space(8), 1 << 32);
    }

    #[test]
    fn zipf_is_skewed_and_in_range() {
        let keys = 1 << 20;
        let mut rng = SplitMix64::new(1);
        let mut z = ScrambledZipf::new(keys);
        let mut counts = std::collections::HashMap::new();
        for _ in 0..200_000 {
            let k = z.next(&mut rng);
            assert!(k < keys);
            *counts.entry(k).or_insert(0u32) += 1;
        }
        let mut c: Vec<u32> = counts.into_values().collect();
        c.sort_unstable_by(|a, b| b.cmp(a));
        // The hottest key of a θ=0.99 Zipfian over 10^10 items draws about
        // 1/zeta ≈ 3.8% of requests; uniform would give ~0.0001%.
        assert!(c[0] > 200_000 / 50, "hottest key drew {}", c[0]);
    }

    #[test]
    fn streams_follow_the_mix() {
        let w = workload("mercury-ycsb-50").unwrap();
        let s = op_stream(&w, 1000, 100_000, 7);
        let gets = s.iter().filter(|o| o.get).count();
        assert!((45_000..55_000).contains(&gets), "{gets}");
        assert!(op_stream(&workload("mercury-micro").unwrap(), 10, 1000, 1).iter().all(|o| o.get));
    }
}
