//! libFuzzer target for the RDB file reader (amalgam-persist
//! `rdb/file.rs`, what an Amalgam started on a `dump.rdb` reads, and
//! later a replication full sync): reading arbitrary bytes item by item
//! never panics, stays within its bounds (a 1 MB value bound and a 4 MB
//! file bound here, so libFuzzer's `-rss_limit_mb` catches a claim taken
//! on trust), and ends; every key it accepts, written again with
//! `FileWriter`, reads back to the same items. The checksum makes random
//! mutations fail at the end only, and the CRC of a mutated file is
//! wrong: so the input is also read with its trailer zeroed (not
//! checked), which is what reaches the decoders. Seeds in
//! `corpus/rdb_file/`: redis-server 7.0.15's `dump.rdb` (every encoding
//! it writes, a stream, a library, an expiry, two databases) and
//! valkey-server 8.0.1's (RDB version 11: a listpack set, a v3 stream).
#![no_main]

use amalgam_persist::rdb::encode;
use amalgam_persist::rdb::file::{FileReader, FileWriter, Item, Limits};
use libfuzzer_sys::fuzz_target;

const LIMITS: Limits = Limits { value_bytes_max: 1 << 20, file_bytes_max: 4 << 20 };
const AGAIN: Limits = Limits { value_bytes_max: 64 << 20, file_bytes_max: 256 << 20 };
/// Items read at most (each takes at least one byte, so never reached
/// on a fuzzer's input: the bound says the loop ends).
const ITEMS_MAX: usize = 1 << 20;

fn read(data: &[u8], limits: Limits) -> Option<Vec<Item>> {
    let mut r = FileReader::new(data, limits).ok()?;
    let mut out = Vec::new();
    for _ in 0..ITEMS_MAX {
        match r.next_item() {
            Ok(Some(i)) => out.push(i),
            Ok(None) => return Some(out),
            Err(_) => return None,
        }
    }
    panic!("more items than bytes");
}

fn check(data: &[u8]) {
    let Some(items) = read(data, LIMITS) else { return };
    let mut w = FileWriter::new(Vec::new(), []).unwrap();
    let mut db = None;
    let mut kept = Vec::new();
    for i in items {
        match &i {
            Item::Function(code) if db.is_none() => w.function(code).unwrap(),
            Item::Key { db: d, key, expire_ms, value } => {
                if db != Some(*d) {
                    w.select_db(*d, 0, 0).unwrap();
                    db = Some(*d);
                }
                w.key(key, *expire_ms, &encode(value)).unwrap();
            }
            _ => continue,
        }
        kept.push(format!("{i:?}"));
    }
    // The plain forms written may take more bytes than the compact ones
    // read (an intset's members as text): a looser bound to read back.
    let again = read(&w.finish().unwrap(), AGAIN).expect("a written file reads back");
    let again: Vec<String> =
        again.iter().filter(|i| !matches!(i, Item::Aux { .. })).map(|i| format!("{i:?}")).collect();
    assert_eq!(again, kept, "writing changed the file's items");
}

fuzz_target!(|data: &[u8]| {
    check(data);
    if data.len() >= 8 + 9 {
        let mut z = data.to_vec();
        let n = z.len();
        z[n - 8..].fill(0);
        check(&z);
    }
});
