//! RDB version 11 (Redis 7.2, Valkey 7.2-8.x): each encoding it added,
//! in bytes written out by hand from the format (`rdb.h`, `rdb.c`,
//! `listpack.c`), not by Amalgam's writer, as a DUMP payload and in a
//! whole file.

use super::file::{FileError, FileReader, Item, Limits};
use super::*;

/// `body` (type byte and object) with a DUMP footer of `version`.
fn with_footer(body: &[u8], version: u16) -> Vec<u8> {
    let mut p = body.to_vec();
    p.extend_from_slice(&version.to_le_bytes());
    let crc = crc64(&p);
    p.extend_from_slice(&crc.to_le_bytes());
    p
}

fn s(v: &[&str]) -> Vec<Vec<u8>> {
    v.iter().map(|e| e.as_bytes().to_vec()).collect()
}

/// A listpack of five entries, one of each kind a set's members take
/// (`listpack.c` `lpEncodeString` / `lpEncodeIntegerGetType`, each entry
/// followed by its backlen):
/// "a" (6-bit string), "bb", 7 (7-bit uint), -2 (13-bit int), 70000
/// (24-bit int).
const SET_LISTPACK: [u8; 24] = [
    24, 0, 0, 0, // total bytes, u32 LE
    5, 0, // entries, u16 LE
    0x81, b'a', 0x02, // 10|000001 "a", backlen 2
    0x82, b'b', b'b', 0x03, // 10|000010 "bb", backlen 3
    0x07, 0x01, // 0|0000111: 7, backlen 1
    0xDF, 0xFE, 0x02, // 110|11111 0xFE: 13-bit 0x1FFE = -2, backlen 2
    0xF2, 0x70, 0x11, 0x01, 0x04, // 24-bit LE 0x011170 = 70000, backlen 4
    0xFF, // end
];

/// `RDB_TYPE_SET_LISTPACK` (20), the listpack as a raw string.
fn set_listpack_object(lp: &[u8]) -> Vec<u8> {
    let mut o = vec![types::SET_LISTPACK, lp.len() as u8];
    assert!(lp.len() < 64, "a 6-bit length");
    o.extend_from_slice(lp);
    o
}

#[test]
fn a_set_listpack_restores_from_a_version_11_payload() {
    let p = with_footer(&set_listpack_object(&SET_LISTPACK), 11);
    assert_eq!(decode(&p), Ok(Payload::Set(s(&["a", "bb", "7", "-2", "70000"]))));
    // Redis 7.4's version (12) is refused at the footer.
    let p12 = with_footer(&set_listpack_object(&SET_LISTPACK), 12);
    assert_eq!(decode(&p12), Err(DumpError::VersionOrChecksum));
}

#[test]
fn a_set_listpack_with_a_duplicate_or_no_member_is_refused() {
    // "7" as a string beside 7 as an integer: one member twice, as
    // `lpValidateIntegrityAndDups` compares their values.
    let dup = [12, 0, 0, 0, 2, 0, 0x07, 0x01, 0x81, b'7', 0x02, 0xFF];
    assert_eq!(decode(&with_footer(&set_listpack_object(&dup), 11)), Err(DumpError::BadFormat));
    // Empty: Redis's RDB_LOAD_ERR_EMPTY_KEY.
    let empty = [7, 0, 0, 0, 0, 0, 0xFF];
    assert_eq!(decode(&with_footer(&set_listpack_object(&empty), 11)), Err(DumpError::BadFormat));
    // A wrong backlen, a count that disagrees, a total that disagrees.
    for (at, to) in [(8, 0x05), (4, 4), (0, 23)] {
        let mut bad = SET_LISTPACK;
        bad[at] = to;
        assert_eq!(decode(&with_footer(&set_listpack_object(&bad), 11)), Err(DumpError::BadFormat), "byte {at}");
    }
}

/// A stream of one entry 5-0 {f: v} and a group "g" whose consumer
/// "alice" has 5-0 pending, as `rdbSaveObject` writes it for
/// `RDB_TYPE_STREAM_LISTPACKS_3` (`v3`) or `_2`: the same but for the
/// consumer's active time.
fn stream_object(v3: bool) -> Vec<u8> {
    let id_be = |ms: u8| {
        let mut id = [0u8; 16];
        id[7] = ms;
        id
    };
    // The node's listpack (`t_stream.c`): master entry count 1, deleted 0,
    // 1 field "f", terminator 0; then the entry: flags SAMEFIELDS (2),
    // ms - master.ms 0, seq - master.seq 0, the value "v", lp-count 4.
    let lp: [u8; 29] = [
        29, 0, 0, 0, 10, 0, // header: 29 bytes, 10 entries
        0x01, 0x01, 0x00, 0x01, 0x01, 0x01, 0x81, b'f', 0x02, 0x00, 0x01, // master entry
        0x02, 0x01, 0x00, 0x01, 0x00, 0x01, 0x81, b'v', 0x02, 0x04, 0x01, // the entry
        0xFF,
    ];
    let mut o = vec![if v3 { types::STREAM_LISTPACKS_3 } else { types::STREAM_LISTPACKS_2 }];
    o.push(1); // one node
    o.push(16);
    o.extend_from_slice(&id_be(5)); // its master ID, 5-0
    o.push(lp.len() as u8);
    o.extend_from_slice(&lp);
    o.push(1); // length
    o.extend_from_slice(&[5, 0]); // last id
    o.extend_from_slice(&[5, 0]); // first id
    o.extend_from_slice(&[0, 0]); // max deleted id
    o.push(1); // entries added
    o.push(1); // one group
    o.extend_from_slice(&[1, b'g']);
    o.extend_from_slice(&[5, 0]); // its last id
    o.push(1); // entries read
    o.push(1); // global PEL: one entry
    o.extend_from_slice(&id_be(5));
    o.extend_from_slice(&1_000u64.to_le_bytes()); // delivery time
    o.push(1); // delivery count
    o.push(1); // one consumer
    o.extend_from_slice(&[5, b'a', b'l', b'i', b'c', b'e']);
    o.extend_from_slice(&2_000u64.to_le_bytes()); // seen time
    if v3 {
        o.extend_from_slice(&3_000u64.to_le_bytes()); // active time
    }
    o.push(1); // its PEL
    o.extend_from_slice(&id_be(5));
    o
}

#[test]
fn a_version_3_stream_reads_as_its_version_2_form() {
    let Ok(Payload::Stream(v3)) = decode(&with_footer(&stream_object(true), 11)) else {
        panic!("{:?}", decode(&with_footer(&stream_object(true), 11)))
    };
    let Ok(Payload::Stream(v2)) = decode(&with_footer(&stream_object(false), 10)) else { panic!() };
    use amalgam_types::stream::StreamId;
    let entries = v3.range(StreamId::MIN, StreamId::MAX, false, 0);
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].id, StreamId::new(5, 0));
    assert_eq!(entries[0].pairs, vec![(b"f".to_vec(), b"v".to_vec())]);
    assert_eq!(entries, v2.range(StreamId::MIN, StreamId::MAX, false, 0));
    assert_eq!(v3.groups(), v2.groups());
    let g = &v3.groups()[0];
    assert_eq!(g.consumers.get(&b"alice"[..]).map(|c| c.seen_ms), Some(2_000));
    assert_eq!(g.pending.len(), 1);
    // A v2 body under the v3 type: the consumer's PEL is read as its
    // active time, and what follows does not parse.
    let mut short = stream_object(false);
    short[0] = types::STREAM_LISTPACKS_3;
    assert_eq!(decode(&with_footer(&short, 11)), Err(DumpError::BadFormat));
}

/// A version 11 file as Valkey 8.0 in cluster mode writes one: AUX
/// fields, SELECTDB, RESIZEDB, SLOT_INFO, a listpack set with an
/// expiry, a v3 stream, EOF and the CRC-64.
fn v11_file() -> Vec<u8> {
    let mut f = b"REDIS0011".to_vec();
    f.push(0xFA);
    f.extend_from_slice(&[10]);
    f.extend_from_slice(b"valkey-ver");
    f.extend_from_slice(&[5]);
    f.extend_from_slice(b"8.0.1");
    f.extend_from_slice(&[0xFE, 0]); // SELECTDB 0
    f.extend_from_slice(&[0xFB, 2, 1]); // RESIZEDB 2 keys, 1 expiring
    f.extend_from_slice(&[0xF4, 0x40 | 0x2f, 0x5a, 1, 1]); // SLOT_INFO slot 12122 (14-bit), 1 key, 1 expiring
    f.push(0xFC);
    f.extend_from_slice(&4_102_444_800_000i64.to_le_bytes());
    let set = set_listpack_object(&SET_LISTPACK);
    f.push(set[0]);
    f.extend_from_slice(&[1, b's']);
    f.extend_from_slice(&set[1..]);
    f.extend_from_slice(&[0xF4, 0x1f, 1, 0]); // SLOT_INFO slot 31
    let st = stream_object(true);
    f.push(st[0]);
    f.extend_from_slice(&[2, b's', b't']);
    f.extend_from_slice(&st[1..]);
    f.push(0xFF);
    let crc = crc64(&f);
    f.extend_from_slice(&crc.to_le_bytes());
    f
}

fn read_all(bytes: &[u8]) -> Result<Vec<Item>, FileError> {
    let mut r = FileReader::new(bytes, Limits::default())?;
    let mut out = Vec::new();
    while let Some(i) = r.next_item()? {
        out.push(i);
    }
    Ok(out)
}

#[test]
fn a_version_11_file_reads_whole() {
    let items = read_all(&v11_file()).unwrap();
    assert_eq!(items.len(), 3, "{items:?}");
    assert_eq!(items[0], Item::Aux { key: b"valkey-ver".to_vec(), value: b"8.0.1".to_vec() });
    assert_eq!(
        items[1],
        Item::Key {
            db: 0,
            key: b"s".to_vec(),
            expire_ms: Some(4_102_444_800_000),
            value: Payload::Set(s(&["a", "bb", "7", "-2", "70000"]))
        }
    );
    assert!(matches!(&items[2], Item::Key { key, expire_ms: None, value: Payload::Stream(_), .. } if key == b"st"));
}

#[test]
fn every_cut_and_flip_of_a_version_11_file_is_an_error_not_a_panic() {
    let f = v11_file();
    for n in 0..f.len() {
        assert!(read_all(&f[..n]).is_err(), "cut at {n}");
    }
    // Through a zero checksum, so each flip reaches the decoders.
    let mut base = f.clone();
    let n = base.len();
    base[n - 8..].fill(0);
    for i in 9..n - 9 {
        for bit in [0x01, 0x80] {
            let mut b = base.clone();
            b[i] ^= bit;
            let _ = read_all(&b);
        }
    }
}
