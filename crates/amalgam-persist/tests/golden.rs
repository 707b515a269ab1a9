//! Pins the on-disk format (format.rs): the bytes below were produced by
//! an independent encoder (Python's struct module and a bitwise CRC32C,
//! checked against the standard "123456789" vector 0xE3069283), not by
//! this crate. A change that breaks one of these is a format change: bump
//! `format::VERSION` and keep reading the old one.

use amalgam_engine::{Config, Expiry, Store};
use amalgam_persist::format::{self, Record};
use amalgam_types::op::Op;
use amalgam_types::value::{tag_of, Value};
use amalgam_types::{Kind, Thresholds};

const PUT: &str = "1e0000001ff8c2d9010700000000d2496b2a0000000000000003050000006b657976616c7565";
/// Version 3: PUT_MS, the same item expiring at unix ms 1,800,000,000,250.
const PUT_MS: &str = "220000001c2683700507000000fa505c18a30100002a0000000000000003050000006b657976616c7565";
const DELETE: &str = "0500000043f6b27702036b6579";
const FLUSH: &str = "09000000484d0e6e036300000000000000";
const FLUSH_AT: &str = "05000000fb68ec9404d2040000";
const END: &str = "09000000e5a414c37f0100000000000000";
/// Version 4: PUT_TYPED of key `h`, tag 1 (a packed hash; the value
/// bytes are opaque here), flags 0, expiry unix ms 1,800,000,000,250,
/// CAS 42, value "packed".
const PUT_TYPED: &str = "2200000047d24231060100000000fa505c18a30100002a000000000000000106000000687061636b6564";
/// Version 4: META of key `h`: flags 3, expiry unix ms 1,900,000,000,000
/// (a whole second), CAS 45.
const META: &str = "1700000078f4468f07030000000038d360ba0100002d000000000000000168";
/// Version 4: OP on key `h`, object version 1, carrying [`OP_HSET`].
const OP: &str = "11000000532ea5af0801680100000000000000010101660177";
/// amalgam-types op.rs: HSET of one pair (`f`, `w`): code 1, count 1,
/// then each string as varint length and bytes.
const OP_HSET: &str = "010101660177";
/// Version 5: REPL_POS of replication id
/// "0123456789abcdef0123456789abcdef01234567", offset 1000, CAS shift 7.
const REPL_POS: &str = "39000000a93e4dc00930313233343536373839616263646566303132333435363738396162636465663031323334353637e8030000000000000700000000000000";
/// Version 5: GETACK (the replication stream only).
const GETACK: &str = "01000000697b9f390a";
/// Version 6 headers: log first_seq 17; snapshot log_seq 5, created
/// 1,700,000,000; each with the CRC32C of its other bytes at 12..16.
const LOG_HEADER: &str = "414d414c474c4f4706000000bf602cc81100000000000000";
const SNAP_HEADER: &str = "414d414c47534e50060000008588e09a050000000000000000f1536500000000";
/// Version 5 headers (still read).
const LOG_HEADER_V5: &str = "414d414c474c4f4705000000ef1cbe9b1100000000000000";
const SNAP_HEADER_V5: &str = "414d414c47534e5005000000429024c3050000000000000000f1536500000000";
/// Version 6: FUNCTIONS carrying the FUNCTION DUMP payload of no library
/// (redis-server 7.0.15's: the footer alone, `0a00` then its CRC-64).
const FUNCTIONS: &str = "0b0000002edb8a810b0a005d9b5c400f7fa2da";
const FUNCTIONS_PAYLOAD: &str = "0a005d9b5c400f7fa2da";
/// The same headers in version 4 (no REPL_POS), still read.
const LOG_HEADER_V4: &str = "414d414c474c4f4704000000dfc8cfaa1100000000000000";
const SNAP_HEADER_V4: &str = "414d414c47534e5004000000ff6767f4050000000000000000f1536500000000";
/// The same headers in version 3 (no collections), still read.
const LOG_HEADER_V3: &str = "414d414c474c4f47030000004fe49a3c1100000000000000";
const SNAP_HEADER_V3: &str = "414d414c47534e5003000000cca1ac70050000000000000000f1536500000000";
/// The same headers in version 2 (no PUT_MS records), still read.
const LOG_HEADER_V2: &str = "414d414c474c4f47020000007f30eb0d1100000000000000";
const SNAP_HEADER_V2: &str = "414d414c47534e50020000007156ef47050000000000000000f1536500000000";
/// The same headers in version 1 (flags 0, no checksum), still read.
const LOG_HEADER_V1: &str = "414d414c474c4f4701000000000000001100000000000000";
const SNAP_HEADER_V1: &str = "414d414c47534e500100000000000000050000000000000000f1536500000000";

fn hex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

#[test]
fn records_encode_to_the_pinned_bytes() {
    let mut b = Vec::new();
    format::put_raw(&mut b, b"key", b"value", 7, 1_800_000_000, 42);
    assert_eq!(b, hex(PUT));
    b.clear();
    format::put_raw_ms(&mut b, b"key", b"value", 7, 1_800_000_000_250, 42);
    assert_eq!(b, hex(PUT_MS));
    b.clear();
    format::delete(&mut b, b"key");
    assert_eq!(b, hex(DELETE));
    b.clear();
    format::flush(&mut b, 99);
    assert_eq!(b, hex(FLUSH));
    b.clear();
    format::flush_at(&mut b, 1234);
    assert_eq!(b, hex(FLUSH_AT));
    b.clear();
    format::end(&mut b, 1);
    assert_eq!(b, hex(END));
    b.clear();
    format::put_typed(&mut b, b"h", 1, 0, Expiry::AtMillis(1_800_000_000_250), 42, b"packed");
    assert_eq!(b, hex(PUT_TYPED));
    b.clear();
    format::meta_raw(&mut b, b"h", 3, Expiry::At(1_900_000_000), 45);
    assert_eq!(b, hex(META));
    b.clear();
    let op = Op::HSet(vec![(b"f".to_vec(), b"w".to_vec())]);
    assert_eq!(op.to_bytes(), hex(OP_HSET));
    format::op(&mut b, b"h", 1, &op.to_bytes());
    assert_eq!(b, hex(OP));
    b.clear();
    format::repl_pos(&mut b, "0123456789abcdef0123456789abcdef01234567", 1000, 7);
    assert_eq!(b, hex(REPL_POS));
    b.clear();
    format::getack(&mut b);
    assert_eq!(b, hex(GETACK));
    b.clear();
    format::functions(&mut b, &hex(FUNCTIONS_PAYLOAD));
    assert_eq!(b, hex(FUNCTIONS));
    assert_eq!(format::log_header(17).to_vec(), hex(LOG_HEADER));
    assert_eq!(format::snap_header(5, 1_700_000_000).to_vec(), hex(SNAP_HEADER));
    assert_eq!(format::log_name(17), "log-00000000000000000017.aml");
    assert_eq!(format::snap_name(5), "snap-00000000000000000005.ams");
}

#[test]
fn pinned_bytes_decode() {
    let put = hex(PUT);
    let (r, n) = format::read_record(&put).unwrap();
    assert_eq!(n, put.len());
    assert_eq!(r, Record::Put { key: b"key", value: b"value", flags: 7, expiry: Expiry::At(1_800_000_000), cas: 42 });
    let put_ms = hex(PUT_MS);
    let (r, n) = format::read_record(&put_ms).unwrap();
    assert_eq!(n, put_ms.len());
    let expiry = Expiry::AtMillis(1_800_000_000_250);
    assert_eq!(r, Record::Put { key: b"key", value: b"value", flags: 7, expiry, cas: 42 });
    assert_eq!(format::read_record(&hex(DELETE)).unwrap().0, Record::Delete { key: b"key" });
    assert_eq!(format::read_record(&hex(FLUSH)).unwrap().0, Record::Flush { fence_cas: 99 });
    assert_eq!(format::read_record(&hex(FLUSH_AT)).unwrap().0, Record::FlushAt { at: 1234 });
    assert_eq!(format::read_record(&hex(END)).unwrap().0, Record::End { items: 1 });
    let expiry = Expiry::AtMillis(1_800_000_000_250);
    let (typed, meta) = (hex(PUT_TYPED), hex(META));
    let r = format::read_record(&typed).unwrap().0;
    assert_eq!(r, Record::PutTyped { key: b"h", tag: 1, value: b"packed", flags: 0, expiry, cas: 42 });
    let r = format::read_record(&meta).unwrap().0;
    assert_eq!(r, Record::Meta { key: b"h", flags: 3, expiry: Expiry::At(1_900_000_000), cas: 45 });
    let op = hex(OP_HSET);
    assert_eq!(format::read_record(&hex(OP)).unwrap().0, Record::Op { key: b"h", version: 1, op: &op });
    assert_eq!(Op::decode(&op), Ok(Op::HSet(vec![(b"f".to_vec(), b"w".to_vec())])));
    let repl_pos = hex(REPL_POS);
    let r = format::read_record(&repl_pos).unwrap().0;
    let replid = b"0123456789abcdef0123456789abcdef01234567";
    assert_eq!(r, Record::ReplPos { replid, offset: 1000, cas_shift: 7 });
    assert_eq!(format::read_record(&hex(GETACK)).unwrap().0, Record::GetAck);
    let payload = hex(FUNCTIONS_PAYLOAD);
    assert_eq!(format::read_record(&hex(FUNCTIONS)).unwrap().0, Record::Functions { payload: &payload });
    assert_eq!(format::parse_header(&hex(LOG_HEADER_V5), format::LOG_MAGIC), Ok(17));
    assert_eq!(format::parse_header(&hex(SNAP_HEADER_V5), format::SNAP_MAGIC), Ok(5));
    assert_eq!(format::parse_header(&hex(LOG_HEADER_V4), format::LOG_MAGIC), Ok(17));
    assert_eq!(format::parse_header(&hex(SNAP_HEADER_V4), format::SNAP_MAGIC), Ok(5));
    assert_eq!(format::parse_header(&hex(LOG_HEADER_V3), format::LOG_MAGIC), Ok(17));
    assert_eq!(format::parse_header(&hex(SNAP_HEADER_V3), format::SNAP_MAGIC), Ok(5));
    assert_eq!(format::parse_header(&hex(LOG_HEADER), format::LOG_MAGIC), Ok(17));
    assert_eq!(format::parse_header(&hex(SNAP_HEADER), format::SNAP_MAGIC), Ok(5));
    assert_eq!(format::parse_header(&hex(LOG_HEADER_V2), format::LOG_MAGIC), Ok(17));
    assert_eq!(format::parse_header(&hex(SNAP_HEADER_V2), format::SNAP_MAGIC), Ok(5));
    assert_eq!(format::parse_header(&hex(LOG_HEADER_V1), format::LOG_MAGIC), Ok(17));
    assert_eq!(format::parse_header(&hex(SNAP_HEADER_V1), format::SNAP_MAGIC), Ok(5));
}

/// Every single-bit flip of a version 6, 5, 4, 3 or 2 header is refused (the checksum
/// covers the sequence number and the creation time too), and so is a
/// version 1 header with nonzero flags or an unknown version.
#[test]
fn damaged_headers_are_refused() {
    let headers = [
        (hex(LOG_HEADER), format::LOG_MAGIC),
        (hex(SNAP_HEADER), format::SNAP_MAGIC),
        (hex(LOG_HEADER_V5), format::LOG_MAGIC),
        (hex(SNAP_HEADER_V5), format::SNAP_MAGIC),
        (hex(LOG_HEADER_V4), format::LOG_MAGIC),
        (hex(SNAP_HEADER_V4), format::SNAP_MAGIC),
        (hex(LOG_HEADER_V3), format::LOG_MAGIC),
        (hex(SNAP_HEADER_V3), format::SNAP_MAGIC),
        (hex(LOG_HEADER_V2), format::LOG_MAGIC),
        (hex(SNAP_HEADER_V2), format::SNAP_MAGIC),
    ];
    for (h, magic) in headers {
        for i in 0..h.len() {
            for bit in 0..8 {
                let mut d = h.clone();
                d[i] ^= 1 << bit;
                assert!(format::parse_header(&d, magic).is_err(), "flip of byte {i} bit {bit} accepted");
            }
        }
    }
    let mut v1 = hex(LOG_HEADER_V1);
    v1[12] = 1;
    assert!(format::parse_header(&v1, format::LOG_MAGIC).is_err());
    let mut v7 = hex(LOG_HEADER);
    v7[8] = 7;
    assert!(format::parse_header(&v7, format::LOG_MAGIC).is_err());
}

/// Files written by version 1 (same records, headers without checksum)
/// still recover.
#[test]
fn a_version_1_directory_recovers() {
    let dir = std::env::temp_dir().join(format!("amalgam-golden-v1-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut snap = hex(SNAP_HEADER_V1);
    snap.extend(hex(PUT));
    snap.extend(hex(END));
    std::fs::write(dir.join("snap-00000000000000000005.ams"), &snap).unwrap();
    // A version 1 log header with first_seq 5 (the snapshot's cut).
    let mut log = hex("414d414c474c4f4701000000000000000500000000000000");
    log.extend(hex(DELETE));
    std::fs::write(dir.join("log-00000000000000000005.aml"), &log).unwrap();
    let store = Store::new(Config::default()).unwrap();
    let rec = amalgam_persist::recover::recover(&dir, &store).unwrap();
    assert_eq!(rec.snapshot.as_ref().map(|s| s.1), Some(1));
    assert_eq!(rec.replayed, 1);
    assert!(rec.warnings.is_empty(), "{:?}", rec.warnings);
    assert!(store.get(b"key", |_| ()).is_none(), "the v1 log's DELETE was replayed");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A directory written by hand from the pinned bytes recovers: a snapshot
/// holding `key` (cut at record 5) and a log from record 5 that deletes it
/// and then stores it again.
#[test]
fn a_hand_written_directory_recovers() {
    let dir = std::env::temp_dir().join(format!("amalgam-golden-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut snap = hex(SNAP_HEADER);
    snap.extend(hex(PUT));
    snap.extend(hex(END));
    std::fs::write(dir.join("snap-00000000000000000005.ams"), &snap).unwrap();
    let mut log = format::log_header(5).to_vec();
    log.extend(hex(DELETE));
    let mut put2 = Vec::new();
    format::put_raw(&mut put2, b"key", b"again", 1, 0, 50);
    log.extend(&put2);
    std::fs::write(dir.join("log-00000000000000000005.aml"), &log).unwrap();
    let store = Store::new(Config::default()).unwrap();
    let rec = amalgam_persist::recover::recover(&dir, &store).unwrap();
    assert_eq!(rec.snapshot.as_ref().map(|s| s.1), Some(1));
    assert_eq!(rec.replayed, 2);
    assert_eq!(rec.next_seq, 7);
    assert!(rec.warnings.is_empty(), "{:?}", rec.warnings);
    assert_eq!(store.get(b"key", |it| (it.value().to_vec(), it.flags(), it.cas())), Some((b"again".to_vec(), 1, 50)));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Files written by version 2 (no PUT_MS) still recover, next to a
/// version 3 log segment that holds a PUT_MS: the millisecond deadline
/// comes back exact, and one already past is not restored.
#[test]
fn a_version_2_snapshot_and_a_version_3_log_recover() {
    let dir = std::env::temp_dir().join(format!("amalgam-golden-v2-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut snap = hex(SNAP_HEADER_V2);
    snap.extend(hex(PUT));
    snap.extend(hex(END));
    std::fs::write(dir.join("snap-00000000000000000005.ams"), &snap).unwrap();
    let store = Store::new(Config::default()).unwrap();
    let later_ms = store.now_millis() + 3_600_250;
    let mut log = format::log_header(5).to_vec();
    format::put_raw_ms(&mut log, b"ms", b"v", 0, later_ms, 60);
    format::put_raw_ms(&mut log, b"gone", b"v", 0, store.now_millis() - 1, 61);
    std::fs::write(dir.join("log-00000000000000000005.aml"), &log).unwrap();
    let rec = amalgam_persist::recover::recover(&dir, &store).unwrap();
    assert!(rec.warnings.is_empty(), "{:?}", rec.warnings);
    assert_eq!(rec.replayed, 2);
    assert_eq!(store.get(b"key", |it| it.expiry()), Some(Expiry::At(1_800_000_000)));
    assert_eq!(store.get(b"ms", |it| it.expiry()), Some(Expiry::at_millis(later_ms)));
    assert!(store.get(b"gone", |_| ()).is_none(), "an expired PUT_MS is not restored");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Files written by version 3 (no collections) still recover next to a
/// version 4 log of collections written record by record with the
/// format's own encoders: a packed hash (PUT_TYPED, tag kept), a stale
/// OP on it, a large set as an object (kind, version and encoding) with
/// OPs of the version it holds, the next and a later one, and a META
/// that gives it a TTL.
#[test]
fn a_version_3_snapshot_and_a_version_4_log_of_collections_recover() {
    let dir = std::env::temp_dir().join(format!("amalgam-golden-v4-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut snap = hex(SNAP_HEADER_V3);
    snap.extend(hex(PUT));
    snap.extend(hex(END));
    std::fs::write(dir.join("snap-00000000000000000005.ams"), &snap).unwrap();
    let t = Thresholds::default();
    let mut hash = Value::new(Kind::Hash, &t);
    Op::HSet(vec![(b"f".to_vec(), b"v".to_vec())]).apply(&mut hash, &t).unwrap();
    let packed = hash.packed().unwrap().to_vec();
    let mut set = Value::new(Kind::Set, &t);
    let members: Vec<Vec<u8>> = (0..1000).map(|i| format!("m{i}").into_bytes()).collect();
    Op::SAdd(members).apply(&mut set, &t).unwrap();
    assert!(set.packed().is_none(), "1000 members are past every threshold");
    // Kind, object version 7, encoding.
    let mut enc = vec![tag_of(Kind::Set)];
    enc.extend_from_slice(&7u64.to_le_bytes());
    set.encode(&mut enc);
    let store = Store::new(Config::default()).unwrap();
    let later_ms = store.now_millis() + 3_600_250;
    let mut log = format::log_header(5).to_vec();
    format::put_typed(&mut log, b"h", tag_of(Kind::Hash), 0, Expiry::Never, 60, &packed);
    // An OP on a packed value: no object, so it is one a later record
    // replaces (ops are logged only for objects): skipped.
    format::op(&mut log, b"h", 1, &hex(OP_HSET));
    format::put_typed(&mut log, b"s", amalgam_engine::TAG_OBJECT, 0, Expiry::Never, 61, &enc);
    // Version 7 is in the object already (a cut between an op's effect
    // and its record), 8 follows it, 10 does not (9 is missing).
    format::op(&mut log, b"s", 7, &Op::SRem(vec![b"m1".to_vec()]).to_bytes());
    format::op(&mut log, b"s", 8, &Op::SRem(vec![b"m0".to_vec()]).to_bytes());
    format::op(&mut log, b"s", 10, &Op::SRem(vec![b"m2".to_vec()]).to_bytes());
    format::meta_raw(&mut log, b"s", 0, Expiry::at_millis(later_ms), 61);
    std::fs::write(dir.join("log-00000000000000000005.aml"), &log).unwrap();
    let rec = amalgam_persist::recover::recover(&dir, &store).unwrap();
    assert!(rec.warnings.is_empty(), "{:?}", rec.warnings);
    assert_eq!(rec.replayed, 7);
    assert_eq!(store.get(b"key", |it| it.value().to_vec()), Some(b"value".to_vec()));
    let h = store.get(b"h", |it| {
        (it.tag(), Value::from_packed(Kind::Hash, it.value(), &t).unwrap().packed().map(<[u8]>::to_vec))
    });
    assert_eq!(h, Some((tag_of(Kind::Hash), Some(packed))), "the packed hash as it was");
    let s = store.get(b"s", |it| {
        let cell = it.object().expect("a large set stays an object");
        let v = cell.read();
        let Some(Value::Set(st)) = v.as_any().downcast_ref::<Value>() else { panic!("not a set") };
        (st.len(), st.contains(b"m0"), st.contains(b"m1"), st.contains(b"m2"), cell.version(), it.expiry(), it.cas())
    });
    assert_eq!(s, Some((999, false, true, true, 8, Expiry::at_millis(later_ms), 61)));
    std::fs::remove_dir_all(&dir).unwrap();
}
