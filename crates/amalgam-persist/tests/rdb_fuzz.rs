//! Stable-Rust fuzzing of the DUMP payload codec (`rdb.rs`): proptest
//! mutates redis-server 7.0.15's own DUMPs (`tests/dump/*.bin`: byte
//! flips, cuts, insertions) and re-seals them with a right footer, so the
//! object decoder, not the CRC, meets the damage; and it encodes random
//! values. Invariants: decode never panics; what decodes re-encodes and
//! decodes to the same value; a value written by `rdb::encode` decodes to
//! itself. The cargo-fuzz target `fuzz/fuzz_targets/rdb_decode.rs` checks
//! the same with coverage guidance.

use amalgam_persist::rdb::{self, Payload};
use proptest::prelude::*;

const SEEDS: &[&[u8]] = &[
    include_bytes!("dump/str_raw.bin"),
    include_bytes!("dump/str_int.bin"),
    include_bytes!("dump/str_lzf.bin"),
    include_bytes!("dump/list_small.bin"),
    include_bytes!("dump/list_plain.bin"),
    include_bytes!("dump/list_large.bin"),
    include_bytes!("dump/list_comp.bin"),
    include_bytes!("dump/set_int.bin"),
    include_bytes!("dump/set_str.bin"),
    include_bytes!("dump/hash_small.bin"),
    include_bytes!("dump/hash_longval.bin"),
    include_bytes!("dump/zset_small.bin"),
    include_bytes!("dump/zset_big.bin"),
];

/// `body` sealed with RDB version 10 and a right CRC.
fn seal(body: &[u8]) -> Vec<u8> {
    let mut p = body.to_vec();
    p.extend_from_slice(&rdb::RDB_VERSION.to_le_bytes());
    let crc = rdb::crc64(&p);
    p.extend_from_slice(&crc.to_le_bytes());
    p
}

fn check(p: &[u8]) {
    if let Ok(v) = rdb::decode(p) {
        assert_eq!(rdb::decode(&rdb::encode(&v)), Ok(v));
    }
}

/// One mutation: (kind, position, byte).
fn mutation() -> impl Strategy<Value = (u8, u32, u8)> {
    (0u8..4, any::<u32>(), any::<u8>())
}

fn bytes() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..40)
}

fn payload() -> impl Strategy<Value = Payload> {
    prop_oneof![
        bytes().prop_map(Payload::String),
        prop::collection::vec(bytes(), 1..20).prop_map(Payload::List),
        prop::collection::btree_set(bytes(), 1..20).prop_map(|s| Payload::Set(s.into_iter().collect())),
        prop::collection::btree_map(bytes(), bytes(), 1..20).prop_map(|m| Payload::Hash(m.into_iter().collect())),
        prop::collection::btree_map(bytes(), any::<f64>().prop_filter("not NaN", |s| !s.is_nan()), 1..20)
            .prop_map(|m| Payload::ZSet(m.into_iter().collect())),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, .. ProptestConfig::default() })]

    #[test]
    fn mutated_redis_payloads(seed in 0..SEEDS.len(), muts in prop::collection::vec(mutation(), 1..6)) {
        let p = SEEDS[seed];
        let mut body = p[..p.len() - rdb::FOOTER_BYTES].to_vec();
        for (kind, at, b) in muts {
            let at = at as usize % (body.len() + 1);
            match kind {
                0 if at < body.len() => body[at] ^= b | 1,
                1 => body.truncate(at),
                2 => body.insert(at, b),
                _ if at < body.len() => body[at] = b,
                _ => {}
            }
        }
        check(&body);
        check(&seal(&body));
    }

    #[test]
    fn random_values_round_trip(v in payload()) {
        prop_assert_eq!(rdb::decode(&rdb::encode(&v)), Ok(v));
    }
}
