//! libFuzzer target for the DUMP payload codec (amalgam-persist rdb.rs,
//! RESTORE's input): `rdb::decode` of arbitrary bytes never panics and
//! allocates no more than the payload justifies (libFuzzer's
//! `-rss_limit_mb` and `-malloc_limit_mb` catch a declared count or
//! length taken on trust); a payload it accepts re-encodes (`rdb::encode`,
//! DUMP's forms) to bytes that decode to the same value. The seeds in
//! `corpus/rdb_decode/` are redis-server 7.0.15's own DUMPs (every
//! encoding it writes); the footer's CRC makes random mutations fail
//! early, so the target also decodes the input with a right footer put
//! on it, which lets the fuzzer reach the object decoder. The proptest
//! counterpart is `crates/amalgam-persist/tests/rdb_fuzz.rs`. FUNCTION
//! RESTORE's payload (`rdb::decode_functions`) goes through the same two
//! forms.
#![no_main]

use amalgam_persist::rdb;
use libfuzzer_sys::fuzz_target;

fn check(payload: &[u8]) {
    check_functions(payload);
    let Ok(v) = rdb::decode(payload) else { return };
    let again = rdb::encode(&v);
    assert_eq!(rdb::decode(&again).as_ref(), Ok(&v), "re-encoding changed the value");
}

/// FUNCTION RESTORE's payload (`rdb::decode_functions`): never panics,
/// and what it accepts re-encodes (`rdb::encode_functions`, FUNCTION
/// DUMP's) to the same libraries.
fn check_functions(payload: &[u8]) {
    let Ok(codes) = rdb::decode_functions(payload) else { return };
    let again = rdb::encode_functions(codes.iter().map(|c| &c[..]));
    assert_eq!(rdb::decode_functions(&again), Ok(codes), "re-encoding changed the libraries");
}

fuzz_target!(|data: &[u8]| {
    check(data);
    // The same bytes as an object, with a footer that passes.
    if data.len() >= rdb::FOOTER_BYTES {
        let mut p = data[..data.len() - rdb::FOOTER_BYTES].to_vec();
        p.extend_from_slice(&rdb::RDB_VERSION.to_le_bytes());
        let crc = rdb::crc64(&p);
        p.extend_from_slice(&crc.to_le_bytes());
        check(&p);
    }
});
