//! The codec against payloads redis-server 7.0.15 wrote with DUMP
//! (`tests/dump/*.bin`, made by `tests/dump/gen.py`), and hostile ones.

use super::listpack::build as build_listpack;
use super::listpack::Entry;
use super::*;

macro_rules! fixture {
    ($name:literal) => {
        include_bytes!(concat!("../../tests/dump/", $name, ".bin")).as_slice()
    };
}

fn b(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

fn strings(v: &[&str]) -> Vec<Vec<u8>> {
    v.iter().map(|s| b(s)).collect()
}

fn sorted<T: Ord + Clone>(v: &[T]) -> Vec<T> {
    let mut v = v.to_vec();
    v.sort();
    v
}

/// Decodes, then checks the re-encoding decodes to the same value.
fn load(p: &[u8]) -> Payload {
    let v = decode(p).expect("decodes");
    assert_eq!(decode(&encode(&v)).expect("re-encoding decodes"), v);
    v
}

#[test]
fn crc_is_redis_crc64() {
    // Redis's crc64.c test vector.
    assert_eq!(crc64(b"123456789"), 0xe9c6_d914_c4b8_d9ca);
}

#[test]
fn strings_raw_int_lzf() {
    assert_eq!(load(fixture!("str_raw")), Payload::String(b("hello world")));
    assert_eq!(load(fixture!("str_empty")), Payload::String(b("")));
    assert_eq!(load(fixture!("str_int")), Payload::String(b("12345")));
    assert_eq!(load(fixture!("str_int_neg")), Payload::String(b("-70000")));
    assert_eq!(load(fixture!("str_big_int")), Payload::String(b("9223372036854775807")));
    assert_eq!(load(fixture!("str_lzf")), Payload::String(b("abcdefghij").repeat(1000)));
}

#[test]
fn lists_quicklist_packed_plain_compressed() {
    let small = strings(&["a", "b", "1", "-5", "300", "70000", "5000000000"]);
    let mut small = small;
    small.push(vec![b'x'; 70]);
    assert_eq!(load(fixture!("list_small")), Payload::List(small));
    assert_eq!(load(fixture!("list_plain")), Payload::List(vec![b("a"), vec![b'y'; 10000], b("b")]));
    let large: Vec<Vec<u8>> = (0..2000).map(|i| format!("item{i}").into_bytes()).collect();
    assert_eq!(load(fixture!("list_large")), Payload::List(large));
    let comp: Vec<Vec<u8>> = (0..3000).map(|i| format!("item{i}").repeat(3).into_bytes()).collect();
    assert_eq!(load(fixture!("list_comp")), Payload::List(comp));
}

#[test]
fn sets_intset_hashtable() {
    let Payload::Set(v) = load(fixture!("set_int")) else { panic!() };
    assert_eq!(sorted(&v), sorted(&strings(&["1", "2", "3", "-4", "100000", "5000000000"])));
    let Payload::Set(v) = load(fixture!("set_str")) else { panic!() };
    assert_eq!(sorted(&v), strings(&["a", "b", "c"]));
    let Payload::Set(v) = load(fixture!("set_bigint")) else { panic!() };
    let want: Vec<Vec<u8>> = (0..600).map(|i: i32| i.to_string().into_bytes()).collect();
    assert_eq!(sorted(&v), sorted(&want));
}

#[test]
fn hashes_listpack_hashtable() {
    let Payload::Hash(v) = load(fixture!("hash_small")) else { panic!() };
    assert_eq!(sorted(&v), vec![(b("f1"), b("v1")), (b("f2"), b("2")), (b("n"), b("-100"))]);
    let Payload::Hash(v) = load(fixture!("hash_longval")) else { panic!() };
    assert_eq!(v, vec![(b("f"), vec![b'v'; 100])]);
    let Payload::Hash(v) = load(fixture!("hash_big")) else { panic!() };
    let want: Vec<_> = (0..600).map(|i| (format!("f{i}").into_bytes(), format!("v{i}").into_bytes())).collect();
    assert_eq!(sorted(&v), sorted(&want));
}

fn zsorted(v: Vec<(Vec<u8>, f64)>) -> Vec<(Vec<u8>, f64)> {
    let mut v = v;
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

#[test]
fn zsets_listpack_skiplist_infinities() {
    let Payload::ZSet(v) = load(fixture!("zset_small")) else { panic!() };
    let want = vec![
        (b("a"), 1.0),
        (b("b"), 2.5),
        (b("c"), -3.0),
        (b("d"), f64::INFINITY),
        (b("e"), f64::NEG_INFINITY),
        (b("f"), 1e300),
        (b("g"), 0.1),
    ];
    assert_eq!(zsorted(v), want);
    let Payload::ZSet(v) = load(fixture!("zset_big")) else { panic!() };
    let want: Vec<_> = (0..200).map(|i| (format!("m{i}").into_bytes(), f64::from(i) * 1.5)).collect();
    assert_eq!(zsorted(v), zsorted(want));
    let Payload::ZSet(v) = load(fixture!("zset_big_inf")) else { panic!() };
    assert_eq!(v.len(), 203);
    assert!(v.contains(&(b("a"), f64::INFINITY)) && v.contains(&(b("b"), f64::NEG_INFINITY)));
}

/// `body` (type byte and object) with a footer of `version` and a right CRC.
fn with_footer(body: &[u8], version: u16) -> Vec<u8> {
    let mut p = body.to_vec();
    p.extend_from_slice(&version.to_le_bytes());
    let crc = crc64(&p);
    p.extend_from_slice(&crc.to_le_bytes());
    p
}

#[test]
fn footer_checks() {
    let p = fixture!("str_raw");
    assert_eq!(decode(&p[..9]), Err(DumpError::VersionOrChecksum));
    let mut bad = p.to_vec();
    *bad.last_mut().unwrap() ^= 1;
    assert_eq!(decode(&bad), Err(DumpError::VersionOrChecksum));
    let body = &p[..p.len() - FOOTER_BYTES];
    // Redis 7.2's version is read; 7.4's is not (module notes).
    assert!(decode(&with_footer(body, RDB_VERSION_READ_MAX)).is_ok());
    assert_eq!(decode(&with_footer(body, RDB_VERSION_READ_MAX + 1)), Err(DumpError::VersionOrChecksum));
    assert!(decode(&with_footer(body, 9)).is_ok());
    assert!(decode(&with_footer(body, 1)).is_ok());
}

#[test]
fn old_list_and_text_zset() {
    // RDB_TYPE_LIST: 2 elements; RDB_TYPE_ZSET: text scores and the
    // special lengths.
    let list = with_footer(&[types::LIST, 2, 1, b'a', 2, b'b', b'c'], RDB_VERSION);
    assert_eq!(load(&list), Payload::List(strings(&["a", "bc"])));
    let z = with_footer(&[types::ZSET, 3, 1, b'a', 3, b'1', b'.', b'5', 1, b'b', 254, 1, b'c', 255], RDB_VERSION);
    assert_eq!(load(&z), Payload::ZSet(vec![(b("a"), 1.5), (b("b"), f64::INFINITY), (b("c"), f64::NEG_INFINITY)]));
    let nan = with_footer(&[types::ZSET, 1, 1, b'a', 253], RDB_VERSION);
    assert_eq!(decode(&nan), Err(DumpError::BadFormat));
}

#[test]
fn redis_load_rules() {
    let bad = |body: &[u8]| assert_eq!(decode(&with_footer(body, RDB_VERSION)), Err(DumpError::BadFormat), "{body:?}");
    // Empty collections.
    bad(&[types::SET, 0]);
    bad(&[types::LIST, 0]);
    bad(&[types::HASH, 0]);
    bad(&[types::ZSET_2, 0]);
    // Duplicates.
    bad(&[types::SET, 2, 1, b'a', 1, b'a']);
    bad(&[types::HASH, 2, 1, b'a', 1, b'x', 1, b'a', 1, b'y']);
    // NaN binary score.
    let mut z = vec![types::ZSET_2, 1, 1, b'a'];
    z.extend_from_slice(&f64::NAN.to_le_bytes());
    bad(&z);
    // Unknown and unsupported types.
    bad(&[6, 0]);
    bad(&[15, 0]);
    bad(&[200]);
    // Nothing at all.
    bad(&[]);
}

#[test]
fn listpack_types() {
    // A hash listpack with an odd entry count, a zset listpack whose
    // score does not parse, a good zset listpack with an integer score.
    let odd = build_listpack(&[Entry::Str(b"f")]);
    let mut body = vec![types::HASH_LISTPACK, odd.len() as u8];
    body.extend_from_slice(&odd);
    assert_eq!(decode(&with_footer(&body, RDB_VERSION)), Err(DumpError::BadFormat));
    let lp = build_listpack(&[Entry::Str(b"m"), Entry::Str(b"x1")]);
    let mut body = vec![types::ZSET_LISTPACK, lp.len() as u8];
    body.extend_from_slice(&lp);
    assert_eq!(decode(&with_footer(&body, RDB_VERSION)), Err(DumpError::BadFormat));
    let lp = build_listpack(&[Entry::Str(b"m"), Entry::Int(-7)]);
    let mut body = vec![types::ZSET_LISTPACK, lp.len() as u8];
    body.extend_from_slice(&lp);
    assert_eq!(load(&with_footer(&body, RDB_VERSION)), Payload::ZSet(vec![(b("m"), -7.0)]));
}

#[test]
fn intset_rules() {
    let set = |blob: &[u8]| {
        let mut body = vec![types::SET_INTSET, blob.len() as u8];
        body.extend_from_slice(blob);
        decode(&with_footer(&body, RDB_VERSION))
    };
    let mut ok = vec![2, 0, 0, 0, 2, 0, 0, 0];
    ok.extend_from_slice(&(-3i16).to_le_bytes());
    ok.extend_from_slice(&7i16.to_le_bytes());
    assert_eq!(set(&ok), Ok(Payload::Set(strings(&["-3", "7"]))));
    let mut unsorted = vec![2, 0, 0, 0, 2, 0, 0, 0];
    unsorted.extend_from_slice(&7i16.to_le_bytes());
    unsorted.extend_from_slice(&(-3i16).to_le_bytes());
    assert_eq!(set(&unsorted), Err(DumpError::BadFormat));
    assert_eq!(set(&[3, 0, 0, 0, 1, 0, 0, 0, 1, 2, 3]), Err(DumpError::BadFormat));
    assert_eq!(set(&[2, 0, 0, 0, 0, 0, 0, 0]), Err(DumpError::BadFormat));
    assert_eq!(set(&[2, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 1, 2]), Err(DumpError::BadFormat));
}

#[test]
fn hostile_counts_and_lengths() {
    // A count of 2^64-1 elements, a string of 2^32-1 bytes, an LZF
    // string claiming 2^40 bytes: refused before any allocation.
    let mut body = vec![types::SET, 0x81];
    body.extend_from_slice(&u64::MAX.to_be_bytes());
    body.extend_from_slice(&[1, b'a']);
    assert_eq!(decode(&with_footer(&body, RDB_VERSION)), Err(DumpError::BadFormat));
    let mut body = vec![types::STRING, 0x80];
    body.extend_from_slice(&u32::MAX.to_be_bytes());
    assert_eq!(decode(&with_footer(&body, RDB_VERSION)), Err(DumpError::BadFormat));
    let mut body = vec![types::STRING, 0xc3, 2, 0x81];
    body.extend_from_slice(&(1u64 << 40).to_be_bytes());
    body.extend_from_slice(&[0, b'a']);
    assert_eq!(decode(&with_footer(&body, RDB_VERSION)), Err(DumpError::BadFormat));
    // Every truncation of every fixture's body is refused, not a panic.
    for p in [fixture!("list_small"), fixture!("zset_small"), fixture!("hash_small"), fixture!("set_int")] {
        let body = &p[..p.len() - FOOTER_BYTES];
        for cut in 0..body.len() {
            assert!(decode(&with_footer(&body[..cut], RDB_VERSION)).is_err(), "cut {cut}");
        }
    }
}

#[test]
fn writer_lengths() {
    // Every length form round-trips.
    for n in [0usize, 63, 64, 16383, 16384, 70000] {
        let v = vec![b'q'; n];
        assert_eq!(load(&Writer::string(&v)), Payload::String(v));
    }
}

/// `ty` then `blob` as an RDB string, sealed as Redis 6 (RDB version 9).
fn blob_payload(ty: u8, blobs: &[Vec<u8>], count: bool) -> Vec<u8> {
    let mut w = Writer { out: vec![ty] };
    if count {
        w.length(blobs.len() as u64);
    }
    for b in blobs {
        w.raw(b);
    }
    with_footer(&w.out, 9)
}

#[test]
fn redis_6_ziplist_forms() {
    use super::ziplist::tests::build as zl;
    let h = zl(&[Entry::Str(b"f1"), Entry::Str(b"v1"), Entry::Str(b"n"), Entry::Int(-100)]);
    assert_eq!(
        load(&blob_payload(types::HASH_ZIPLIST, &[h], false)),
        Payload::Hash(vec![(b("f1"), b("v1")), (b("n"), b("-100"))])
    );
    let z = zl(&[
        Entry::Str(b"a"),
        Entry::Int(3),
        Entry::Str(b"b"),
        Entry::Str(b"2.5"),
        Entry::Str(b"c"),
        Entry::Str(b"-inf"),
    ]);
    assert_eq!(
        load(&blob_payload(types::ZSET_ZIPLIST, &[z], false)),
        Payload::ZSet(vec![(b("a"), 3.0), (b("b"), 2.5), (b("c"), f64::NEG_INFINITY)])
    );
    let l = zl(&[Entry::Str(b"x"), Entry::Int(70000)]);
    assert_eq!(
        load(&blob_payload(types::LIST_ZIPLIST, std::slice::from_ref(&l), false)),
        Payload::List(strings(&["x", "70000"]))
    );
    // A quicklist of ziplists; an empty node is skipped.
    let long = vec![b'q'; 300];
    let nodes = vec![l, zl(&[]), zl(&[Entry::Str(&long)])];
    assert_eq!(
        load(&blob_payload(types::LIST_QUICKLIST, &nodes, true)),
        Payload::List(vec![b("x"), b("70000"), long.clone()])
    );
    // Refused: all nodes empty, an odd hash, a duplicate field, a NaN score.
    assert_eq!(decode(&blob_payload(types::LIST_QUICKLIST, &[zl(&[])], true)), Err(DumpError::BadFormat));
    let odd = zl(&[Entry::Str(b"f")]);
    assert_eq!(decode(&blob_payload(types::HASH_ZIPLIST, &[odd], false)), Err(DumpError::BadFormat));
    let dup = zl(&[Entry::Str(b"f"), Entry::Int(1), Entry::Str(b"f"), Entry::Int(2)]);
    assert_eq!(decode(&blob_payload(types::HASH_ZIPLIST, &[dup], false)), Err(DumpError::BadFormat));
    let nan = zl(&[Entry::Str(b"m"), Entry::Str(b"nan")]);
    assert_eq!(decode(&blob_payload(types::ZSET_ZIPLIST, &[nan], false)), Err(DumpError::BadFormat));
}

/// An LZF string of `runs` × 264 + 1 bytes of `a` from 3 bytes a run
/// (a literal `a`, then back-references of 264 bytes at distance 1).
fn lzf_bomb(runs: usize) -> (Vec<u8>, usize) {
    let mut c = vec![0x00, b'a'];
    for _ in 0..runs {
        c.extend_from_slice(&[0xE0, 255, 0x00]);
    }
    (c, runs * 264 + 1)
}

/// A STRING payload whose value is `lzf_bomb(runs)`.
fn lzf_string_payload(runs: usize) -> (Vec<u8>, usize) {
    let (c, len) = lzf_bomb(runs);
    let mut w = Writer { out: vec![types::STRING, 0xC0 | ENC_LZF as u8] };
    w.length(c.len() as u64);
    w.length(len as u64);
    w.out.extend_from_slice(&c);
    (with_footer(&w.out, RDB_VERSION), len)
}

#[test]
fn what_a_payload_decodes_to_is_held_to_the_budget() {
    // 12 KB of LZF that would be 1 MiB: refused under a 1 MiB budget
    // before it is decompressed, decoded under a larger one.
    let (p, len) = lzf_string_payload(4000);
    assert!(p.len() < 13_000 && len > 1 << 20);
    assert_eq!(decode_within(&p, 1 << 20), Err(DumpError::TooLarge));
    assert_eq!(decode_within(&p, 2 << 20), Ok(Payload::String(vec![b'a'; len])));
    // A list of many small compressed strings: the sum counts, with each
    // element's overhead.
    let (c, n) = lzf_bomb(100);
    let mut w = Writer { out: vec![types::LIST] };
    w.length(50);
    for _ in 0..50 {
        w.out.push(0xC0 | ENC_LZF as u8);
        w.length(c.len() as u64);
        w.length(n as u64);
        w.out.extend_from_slice(&c);
    }
    let p = with_footer(&w.out, RDB_VERSION);
    let whole = 50 * (n + ELEMENT_OVERHEAD_BYTES);
    assert_eq!(decode_within(&p, whole - 1), Err(DumpError::TooLarge));
    assert!(matches!(decode_within(&p, whole), Ok(Payload::List(v)) if v.len() == 50));
    // Packed elements count one by one (a listpack of 1,000 entries).
    let entries: Vec<Entry<'_>> = (0..1000).map(Entry::Int).collect();
    let lp = build_listpack(&entries);
    let mut w = Writer { out: vec![types::LIST_QUICKLIST_2] };
    w.length(1);
    w.length(QUICKLIST_PACKED);
    w.raw(&lp);
    let p = with_footer(&w.out, RDB_VERSION);
    let blob = lp.len() + ELEMENT_OVERHEAD_BYTES;
    assert_eq!(decode_within(&p, blob + 100 * ELEMENT_OVERHEAD_BYTES), Err(DumpError::TooLarge));
    assert!(matches!(decode_within(&p, usize::MAX), Ok(Payload::List(v)) if v.len() == 1000));
    // A cut payload is a bad format whatever the budget: the missing
    // bytes are found before anything is charged.
    let (p, _) = lzf_string_payload(10);
    let body = &p[..p.len() - 10];
    let cut = with_footer(&body[..body.len() - 1], RDB_VERSION);
    assert_eq!(decode_within(&cut, 0), Err(DumpError::BadFormat));
}

#[test]
fn function_payloads_are_redis_s() {
    // redis-server 7.0.15's FUNCTION DUMP of one library.
    let code = b"#!lua name=dlib\nredis.register_function('dfn', function() return 1 end)";
    let redis = hex("f5404723216c7561206e616d653d646c69620a72656469732e72656769737465725f66756e6374696f6e282764666e272c2066756e6374696f6e28292072657475726e203120656e64290a003109be18ac207abf");
    assert_eq!(encode_functions([&code[..]]), redis);
    assert_eq!(decode_functions(&redis), Ok(vec![code.to_vec()]));
    // No library: the footer alone, as Redis's.
    assert_eq!(encode_functions([]), hex("0a005d9b5c400f7fa2da"));
    assert_eq!(decode_functions(&hex("0a005d9b5c400f7fa2da")), Ok(vec![]));
    let mut bad = redis.clone();
    bad[3] ^= 1;
    assert_eq!(decode_functions(&bad), Err(FunctionsError::VersionOrChecksum));
    assert_eq!(decode_functions(&Writer::string(b"x")), Err(FunctionsError::NotAFunction));
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex")).collect()
}
