//! DUMP and RESTORE, black-box: round trips of every type in its small
//! and large encodings, REPLACE and BUSYKEY, TTL and ABSTTL, IDLETIME and
//! FREQ, and every error text. Runs against amalgam and, in CI, against
//! redis-server 7.0 (`AMALGAM_TEST_RESP_ADDR`): every expectation here is
//! Redis 7.0.15's. The payloads a test makes by hand carry a right CRC
//! (amalgam-persist's `rdb::crc64`, Redis's CRC-64), so it is the object
//! that is refused, not the footer.
//!
//! `interop_with_redis_server` needs both servers: an amalgam of its own
//! and a redis-server it starts (skipped with a note when `redis-server`
//! is not on PATH, or when an external server is named): values DUMPed
//! by Redis are RESTOREd by Amalgam, and the other way round, and Redis's
//! MIGRATE moves keys into Amalgam.
mod common;
use amalgam_persist::rdb::{self, Payload};
use common::own::{redis_server, Own};
use common::resp::*;
use common::*;
use std::net::TcpStream;

/// The value of a bulk reply, None for nil; panics on anything else.
fn bulk_bytes(reply: &[u8]) -> Option<Vec<u8>> {
    if reply == b"$-1\r\n" || reply == b"_\r\n" {
        return None;
    }
    assert_eq!(reply.first(), Some(&b'$'), "not a bulk reply: {}", show(reply));
    let nl = reply.windows(2).position(|w| w == b"\r\n").unwrap();
    let n: usize = std::str::from_utf8(&reply[1..nl]).unwrap().parse().unwrap();
    Some(reply[nl + 2..nl + 2 + n].to_vec())
}

fn dump(c: &mut Resp, k: &str) -> Option<Vec<u8>> {
    c.send(&["DUMP", k]);
    bulk_bytes(&c.reply_bytes())
}

fn restore(c: &mut Resp, k: &str, ttl: &str, payload: &[u8], opts: &[&str]) -> String {
    let mut args: Vec<&[u8]> = vec![b"RESTORE", k.as_bytes(), ttl.as_bytes(), payload];
    args.extend(opts.iter().map(|o| o.as_bytes()));
    c.send_raw(&encode(&args));
    c.reply()
}

/// The elements of a flat array of bulk strings (RESP2), in order.
fn elements(c: &mut Resp, args: &[&str]) -> Vec<Vec<u8>> {
    let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    c.send_raw(&encode(&bytes));
    let r = c.reply_bytes();
    assert_eq!(r.first(), Some(&b'*'), "{args:?}: {}", show(&r));
    let mut at = r.windows(2).position(|w| w == b"\r\n").unwrap() + 2;
    let mut out = Vec::new();
    // Bounded by the reply's length.
    while at < r.len() {
        let len = reply_len(&r[at..]).unwrap();
        out.push(bulk_bytes(&r[at..at + len]).unwrap());
        at += len;
    }
    out
}

/// A key's whole value, comparable across keys and servers: its type,
/// then its elements (set members and hash pairs sorted).
fn content(c: &mut Resp, k: &str) -> (String, Vec<Vec<u8>>) {
    let ty = c.call(&["TYPE", k]);
    let v = match ty.as_str() {
        "+string\r\n" => {
            c.send(&["GET", k]);
            vec![bulk_bytes(&c.reply_bytes()).unwrap()]
        }
        "+list\r\n" => elements(c, &["LRANGE", k, "0", "-1"]),
        "+set\r\n" => {
            let mut v = elements(c, &["SMEMBERS", k]);
            v.sort();
            v
        }
        "+hash\r\n" => {
            let flat = elements(c, &["HGETALL", k]);
            let mut pairs: Vec<Vec<u8>> =
                flat.chunks(2).map(|p| [p[0].clone(), b"=".to_vec(), p[1].clone()].concat()).collect();
            pairs.sort();
            pairs
        }
        // Scores as numbers (printed in Rust's shortest form), whatever
        // digits the server printed them with.
        "+zset\r\n" => elements(c, &["ZRANGE", k, "0", "-1", "WITHSCORES"])
            .chunks(2)
            .flat_map(|p| {
                [p[0].clone(), format_score(std::str::from_utf8(&p[1]).unwrap().parse().unwrap()).into_bytes()]
            })
            .collect(),
        "+none\r\n" => Vec::new(),
        other => panic!("TYPE {k}: {other:?}"),
    };
    (ty, v)
}

/// One value to carry: a name and the commands that make it at a key.
struct Fixture {
    name: &'static str,
    make: fn(&mut Resp, &str),
}

/// Sends `cmd key args…` in batches of `per` arguments.
fn fill(c: &mut Resp, cmd: &str, k: &str, args: &[String], per: usize) {
    for chunk in args.chunks(per) {
        let mut a: Vec<&str> = vec![cmd, k];
        a.extend(chunk.iter().map(String::as_str));
        let r = c.call(&a);
        assert!(r.starts_with(':') || r == OK, "{cmd}: {r}");
    }
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// Every type, small and large, in the encodings Redis 7.0 gives them.
const FIXTURES: &[Fixture] = &[
    Fixture { name: "string raw", make: |c, k| assert_eq!(c.call(&["SET", k, "hello world"]), OK) },
    Fixture { name: "string empty", make: |c, k| assert_eq!(c.call(&["SET", k, ""]), OK) },
    Fixture { name: "string int", make: |c, k| assert_eq!(c.call(&["SET", k, "-70000"]), OK) },
    Fixture {
        name: "string binary",
        make: |c, k| {
            c.send_raw(&encode(&[b"SET", k.as_bytes(), b"a\r\nb\0c\xff"]));
            assert_eq!(c.reply(), OK);
        },
    },
    Fixture {
        name: "string long compressible (LZF in Redis)",
        make: |c, k| assert_eq!(c.call(&["SET", k, &"abcdefghij".repeat(20_000)]), OK),
    },
    Fixture {
        name: "list small",
        make: |c, k| fill(c, "RPUSH", k, &strs(&["a", "b", "1", "-5", "300", "70000", "5000000000", ""]), 100),
    },
    Fixture {
        name: "list large",
        make: |c, k| fill(c, "RPUSH", k, &(0..3000).map(|i| format!("item{i}")).collect::<Vec<_>>(), 500),
    },
    Fixture {
        name: "list with a large element (a plain node in Redis)",
        make: |c, k| fill(c, "RPUSH", k, &["a".to_string(), "y".repeat(10_000), "b".to_string()], 3),
    },
    Fixture {
        name: "set intset",
        make: |c, k| fill(c, "SADD", k, &strs(&["1", "2", "-4", "100000", "5000000000"]), 100),
    },
    Fixture { name: "set small strings", make: |c, k| fill(c, "SADD", k, &strs(&["a", "b", "c"]), 100) },
    Fixture {
        name: "set large integers",
        make: |c, k| fill(c, "SADD", k, &(0..600).map(|i| i.to_string()).collect::<Vec<_>>(), 200),
    },
    Fixture {
        name: "set large strings",
        make: |c, k| fill(c, "SADD", k, &(0..300).map(|i| format!("member:{i}")).collect::<Vec<_>>(), 200),
    },
    Fixture { name: "hash small", make: |c, k| fill(c, "HSET", k, &strs(&["f1", "v1", "f2", "2", "n", "-100"]), 100) },
    Fixture { name: "hash long value", make: |c, k| fill(c, "HSET", k, &["f".to_string(), "v".repeat(100)], 2) },
    Fixture {
        name: "hash large",
        make: |c, k| {
            let args: Vec<String> = (0..600).flat_map(|i| [format!("f{i}"), format!("v{i}")]).collect();
            fill(c, "HSET", k, &args, 200)
        },
    },
    Fixture {
        name: "zset small",
        make: |c, k| {
            let args = strs(&["1", "a", "2.5", "b", "-3", "c", "inf", "d", "-inf", "e", "1e300", "f", "0.1", "g"]);
            fill(c, "ZADD", k, &args, 100)
        },
    },
    Fixture {
        name: "zset large",
        make: |c, k| {
            let mut args: Vec<String> =
                (0..300).flat_map(|i| [format!("{}", f64::from(i) * 1.5), format!("m{i}")]).collect();
            args.extend(strs(&["inf", "top", "-inf", "bottom"]));
            fill(c, "ZADD", k, &args, 200)
        },
    },
];

#[test]
fn round_trip_every_type_and_encoding() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    for f in FIXTURES {
        let (a, b) = (key("src"), key("dst"));
        (f.make)(&mut c, &a);
        let want = content(&mut c, &a);
        let p = dump(&mut c, &a).unwrap_or_else(|| panic!("{}: DUMP answered nil", f.name));
        // The payload is one this codec reads, whoever wrote it.
        assert!(rdb::decode(&p).is_ok(), "{}: {}", f.name, show(&p));
        assert_eq!(restore(&mut c, &b, "0", &p, &[]), OK, "{}", f.name);
        assert_eq!(content(&mut c, &b), want, "{}", f.name);
        assert_eq!(as_int(&c.call(&["PTTL", &b])), -1, "{}", f.name);
    }
}

#[test]
fn dump_of_a_missing_key_is_nil() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    assert_eq!(dump(&mut c, &key("missing")), None);
}

#[test]
fn replace_and_busykey() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let s = key("s");
    assert_eq!(c.call(&["SET", &s, "v"]), OK);
    let p = rdb::encode(&Payload::List(vec![b"x".to_vec(), b"y".to_vec()]));
    assert_eq!(restore(&mut c, &s, "0", &p, &[]), error("BUSYKEY Target key name already exists."));
    // BUSYKEY comes before the TTL and the payload are looked at.
    assert_eq!(restore(&mut c, &s, "-1", b"junk", &[]), error("BUSYKEY Target key name already exists."));
    assert_eq!(c.call(&["GET", &s]), bulk("v"));
    // REPLACE overwrites a value of another type, its TTL too.
    assert_eq!(c.call(&["EXPIRE", &s, "100"]), int(1));
    assert_eq!(restore(&mut c, &s, "0", &p, &["replace"]), OK);
    assert_eq!(content(&mut c, &s), ("+list\r\n".to_string(), vec![b"x".to_vec(), b"y".to_vec()]));
    assert_eq!(as_int(&c.call(&["PTTL", &s])), -1);
}

#[test]
fn ttl_absttl_and_expired_deadlines() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let p = rdb::Writer::string(b"v");
    // Relative milliseconds.
    let k = key("rel");
    assert_eq!(restore(&mut c, &k, "5000", &p, &[]), OK);
    let left = as_int(&c.call(&["PTTL", &k]));
    assert!((4000..=5000).contains(&left), "{left}");
    // ABSTTL: a unix time in milliseconds.
    let now_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let k = key("abs");
    assert_eq!(restore(&mut c, &k, &(now_ms + 100_000).to_string(), &p, &["ABSTTL"]), OK);
    let left = as_int(&c.call(&["PTTL", &k]));
    assert!((90_000..=100_000).contains(&left), "{left}");
    // A deadline already past: OK, and no key.
    let k = key("past");
    assert_eq!(restore(&mut c, &k, "1", &p, &["ABSTTL"]), OK);
    assert_eq!(c.call(&["EXISTS", &k]), int(0));
    // With REPLACE, the old key is deleted.
    assert_eq!(c.call(&["SET", &k, "old"]), OK);
    assert_eq!(restore(&mut c, &k, "1", &p, &["ABSTTL", "REPLACE"]), OK);
    assert_eq!(c.call(&["EXISTS", &k]), int(0));
    // Without REPLACE an existing key still answers BUSYKEY.
    assert_eq!(c.call(&["SET", &k, "old"]), OK);
    assert_eq!(restore(&mut c, &k, "1", &p, &["ABSTTL"]), error("BUSYKEY Target key name already exists."));
    // A relative TTL that overflows lands in the past (Redis's wrap).
    let k = key("wrap");
    assert_eq!(restore(&mut c, &k, "9223372036854775807", &p, &[]), OK);
    assert_eq!(c.call(&["EXISTS", &k]), int(0));
    // IDLETIME and FREQ are accepted.
    let k = key("idle");
    assert_eq!(restore(&mut c, &k, "0", &p, &["IDLETIME", "100"]), OK);
    let k = key("freq");
    assert_eq!(restore(&mut c, &k, "0", &p, &["FREQ", "255", "REPLACE"]), OK);
    assert_eq!(c.call(&["GET", &k]), bulk("v"));
}

/// What redis-server 7.0.15's DUMP wrote (amalgam-persist's
/// `tests/dump/*.bin`, made by its `gen.py`): every encoding it writes.
const REDIS_PAYLOADS: &[(&str, &[u8])] = &[
    ("str_raw", include_bytes!("../../amalgam-persist/tests/dump/str_raw.bin")),
    ("str_empty", include_bytes!("../../amalgam-persist/tests/dump/str_empty.bin")),
    ("str_int", include_bytes!("../../amalgam-persist/tests/dump/str_int.bin")),
    ("str_int_neg", include_bytes!("../../amalgam-persist/tests/dump/str_int_neg.bin")),
    ("str_big_int", include_bytes!("../../amalgam-persist/tests/dump/str_big_int.bin")),
    ("str_lzf", include_bytes!("../../amalgam-persist/tests/dump/str_lzf.bin")),
    ("list_small", include_bytes!("../../amalgam-persist/tests/dump/list_small.bin")),
    ("list_plain", include_bytes!("../../amalgam-persist/tests/dump/list_plain.bin")),
    ("list_large", include_bytes!("../../amalgam-persist/tests/dump/list_large.bin")),
    ("list_comp", include_bytes!("../../amalgam-persist/tests/dump/list_comp.bin")),
    ("set_int", include_bytes!("../../amalgam-persist/tests/dump/set_int.bin")),
    ("set_str", include_bytes!("../../amalgam-persist/tests/dump/set_str.bin")),
    ("set_bigint", include_bytes!("../../amalgam-persist/tests/dump/set_bigint.bin")),
    ("hash_small", include_bytes!("../../amalgam-persist/tests/dump/hash_small.bin")),
    ("hash_longval", include_bytes!("../../amalgam-persist/tests/dump/hash_longval.bin")),
    ("hash_big", include_bytes!("../../amalgam-persist/tests/dump/hash_big.bin")),
    ("zset_small", include_bytes!("../../amalgam-persist/tests/dump/zset_small.bin")),
    ("zset_big", include_bytes!("../../amalgam-persist/tests/dump/zset_big.bin")),
    ("zset_big_inf", include_bytes!("../../amalgam-persist/tests/dump/zset_big_inf.bin")),
];

/// What a key holding `p` reads as, in [`content`]'s terms.
fn expected(p: &Payload) -> (String, Vec<Vec<u8>>) {
    match p {
        Payload::String(s) => ("+string\r\n".into(), vec![s.clone()]),
        Payload::List(v) => ("+list\r\n".into(), v.clone()),
        Payload::Set(v) => {
            let mut v = v.clone();
            v.sort();
            ("+set\r\n".into(), v)
        }
        Payload::Hash(v) => {
            let mut pairs: Vec<Vec<u8>> =
                v.iter().map(|(f, x)| [f.clone(), b"=".to_vec(), x.clone()].concat()).collect();
            pairs.sort();
            ("+hash\r\n".into(), pairs)
        }
        Payload::ZSet(v) => {
            let mut v = v.clone();
            v.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
            let flat = v.into_iter().flat_map(|(m, s)| [m, format_score(s).into_bytes()]).collect();
            ("+zset\r\n".into(), flat)
        }
        // No stream among the golden payloads above (resp_stream_groups.rs has one).
        Payload::Stream(_) => ("+stream\r\n".into(), Vec::new()),
    }
}

/// A score, comparable whatever digits a server printed it with.
fn format_score(s: f64) -> String {
    format!("{s:?}")
}

#[test]
fn restores_what_redis_dumped() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    for (name, p) in REDIS_PAYLOADS {
        let k = key(name);
        assert_eq!(restore(&mut c, &k, "0", p, &[]), OK, "{name}");
        let want = expected(&rdb::decode(p).unwrap());
        assert_eq!(content(&mut c, &k), want, "{name}");
    }
}

/// `body` (type byte and object) with Redis's footer: `version` and a
/// right CRC.
fn payload(body: &[u8], version: u16) -> Vec<u8> {
    let mut p = body.to_vec();
    p.extend_from_slice(&version.to_le_bytes());
    let crc = rdb::crc64(&p);
    p.extend_from_slice(&crc.to_le_bytes());
    p
}

#[test]
fn error_texts() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("k");
    let good = payload(&[0, 1, b'v'], 10);
    assert_eq!(c.call(&["DUMP"]), error("ERR wrong number of arguments for 'dump' command"));
    assert_eq!(c.call(&["DUMP", "a", "b"]), error("ERR wrong number of arguments for 'dump' command"));
    assert_eq!(c.call(&["RESTORE", "a", "0"]), error("ERR wrong number of arguments for 'restore' command"));
    let syntax = error("ERR syntax error");
    assert_eq!(restore(&mut c, &k, "0", &good, &["REPLACE", "FOO"]), syntax);
    assert_eq!(restore(&mut c, &k, "0", &good, &["IDLETIME"]), syntax);
    assert_eq!(restore(&mut c, &k, "0", &good, &["IDLETIME", "5", "FREQ", "5"]), syntax);
    assert_eq!(restore(&mut c, &k, "0", &good, &["FREQ", "5", "IDLETIME", "5"]), syntax);
    let not_int = error("ERR value is not an integer or out of range");
    assert_eq!(restore(&mut c, &k, "0", &good, &["IDLETIME", "x"]), not_int);
    assert_eq!(restore(&mut c, &k, "0", &good, &["FREQ", "x"]), not_int);
    assert_eq!(restore(&mut c, &k, "0", &good, &["IDLETIME", "-1"]), error("ERR Invalid IDLETIME value, must be >= 0"));
    let freq = error("ERR Invalid FREQ value, must be >= 0 and <= 255");
    assert_eq!(restore(&mut c, &k, "0", &good, &["FREQ", "256"]), freq);
    assert_eq!(restore(&mut c, &k, "0", &good, &["FREQ", "-1"]), freq);
    assert_eq!(restore(&mut c, &k, "abc", &good, &[]), not_int);
    assert_eq!(restore(&mut c, &k, "99999999999999999999", &good, &[]), not_int);
    assert_eq!(restore(&mut c, &k, "-1", &good, &[]), error("ERR Invalid TTL value, must be >= 0"));
    // The footer: too short, a wrong CRC, a newer RDB version.
    let wrong = error("ERR DUMP payload version or checksum are wrong");
    assert_eq!(restore(&mut c, &k, "0", b"", &[]), wrong);
    assert_eq!(restore(&mut c, &k, "0", b"abc", &[]), wrong);
    let mut bad_crc = good.clone();
    *bad_crc.last_mut().unwrap() ^= 1;
    assert_eq!(restore(&mut c, &k, "0", &bad_crc, &[]), wrong);
    // Redis 7.4's version (12) is newer than both Redis 7.0 and Amalgam
    // read (11, Redis 7.2's, is read by Amalgam and by 7.2, not by 7.0:
    // `a_version_11_payload_restores_as_redis_7_2_restores_it`).
    assert_eq!(restore(&mut c, &k, "0", &payload(&[0, 1, b'v'], 12), &[]), wrong);
    // The object: right footer, bad contents.
    let bad = error("ERR Bad data format");
    let mut nan = vec![5, 1, 1, b'a'];
    nan.extend_from_slice(&f64::NAN.to_le_bytes());
    let hostile: &[(&str, Vec<u8>)] = &[
        ("unknown type", vec![200, 0]),
        ("nothing", vec![]),
        ("truncated string", vec![0, 0x40, 100, b'a']),
        ("empty set", vec![2, 0]),
        ("empty list", vec![1, 0]),
        ("empty hash", vec![4, 0]),
        ("duplicate set members", vec![2, 2, 1, b'a', 1, b'a']),
        ("NaN score", nan),
        ("huge count", vec![2, 0x81, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, b'a']),
        ("huge string", vec![0, 0x80, 0x7f, 0xff, 0xff, 0xff, b'a']),
        ("bad intset", vec![11, 3, 2, 0, 0]),
        ("bad listpack", vec![16, 7, 7, 0, 0, 0, 0, 0, 0]),
    ];
    for (what, body) in hostile {
        assert_eq!(restore(&mut c, &k, "0", &payload(body, 10), &[]), bad, "{what}");
    }
    // Duplicates that Redis 7.0 lets into a compact form unless
    // `sanitize-dump-payload yes` (its default is no): a small hash's
    // fields, a small integer set's members. Amalgam checks every
    // payload deeply and refuses them.
    let dups: &[(&str, Vec<u8>)] = &[
        ("duplicate hash fields", vec![4, 2, 1, b'f', 1, b'1', 1, b'f', 1, b'2']),
        ("duplicate integer members", vec![2, 2, 1, b'1', 1, b'1']),
    ];
    for (what, body) in dups {
        let r = restore(&mut c, &k, "0", &payload(body, 10), &["REPLACE"]);
        if server.is_redis {
            assert!(r == OK || r == bad, "{what}: {r}");
            assert_eq!(c.call(&["DEL", &k]), int(i64::from(r == OK)));
        } else {
            assert_eq!(r, bad, "{what}");
        }
    }
    assert_eq!(c.call(&["EXISTS", &k]), int(0));
    // An older RDB version is fine.
    assert_eq!(restore(&mut c, &k, "0", &payload(&[0, 1, b'v'], 6), &[]), OK);
    assert_eq!(c.call(&["GET", &k]), bulk("v"));
}

/// RDB version 11's footer and its listpack set (type 20), as Redis 7.2
/// and Valkey 8 DUMP a small set of strings: restored as they restore it.
/// Amalgam's only (Redis 7.0 refuses version 11; the Redis pass skips
/// it): `resp_repl_from_valkey.rs` restores real Valkey 8 payloads.
#[test]
fn a_version_11_payload_restores_as_redis_7_2_restores_it() {
    if external_resp_addr().is_some() {
        eprintln!("note: Redis 7.0 refuses RDB version 11; skipping an Amalgam-only RESTORE test");
        return;
    }
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("v11");
    // A listpack of "a" and 7 (`listpack.c`): total 12 bytes, 2 entries,
    // 0x81 "a" backlen 2, 0x07 backlen 1, end.
    let lp = [12, 0, 0, 0, 2, 0, 0x81, b'a', 0x02, 0x07, 0x01, 0xFF];
    let mut body = vec![20, lp.len() as u8];
    body.extend_from_slice(&lp);
    assert_eq!(restore(&mut c, &k, "0", &payload(&body, 11), &[]), OK);
    assert_eq!(c.call(&["SORT", &k, "ALPHA"]), "*2\r\n$1\r\n7\r\n$1\r\na\r\n");
    assert_eq!(c.call(&["TYPE", &k]), "+set\r\n");
}

/// A redis-server of this test's own, on a free port; killed on drop.
fn start_redis() -> Option<Own> {
    redis_server(&[])
}

#[test]
fn interop_with_redis_server() {
    let Some(server) = resp_private(&[]) else { return };
    let Some(redis) = start_redis() else { return };
    let mut a = Resp::new(&server);
    let mut r = Resp::from_stream(TcpStream::connect(redis.addr()).unwrap());
    // Redis's compressed quicklist nodes too: every pass once with
    // list-compress-depth 0 (its default) and once with 1.
    for depth in ["0", "1"] {
        assert_eq!(r.call(&["CONFIG", "SET", "list-compress-depth", depth]), OK);
        for f in FIXTURES {
            // Redis → Amalgam.
            let k = key("from_redis");
            (f.make)(&mut r, &k);
            let want = content(&mut r, &k);
            let p = dump(&mut r, &k).unwrap();
            assert_eq!(restore(&mut a, &k, "0", &p, &[]), OK, "{} (depth {depth}) into amalgam", f.name);
            assert_eq!(content(&mut a, &k), want, "{} (depth {depth}): Redis → Amalgam", f.name);
            // Amalgam → Redis.
            let k = key("from_amalgam");
            (f.make)(&mut a, &k);
            let want = content(&mut a, &k);
            let p = dump(&mut a, &k).unwrap();
            assert_eq!(restore(&mut r, &k, "0", &p, &[]), OK, "{} into redis", f.name);
            assert_eq!(content(&mut r, &k), want, "{}: Amalgam → Redis", f.name);
            // And back again: what Redis DUMPs of it restores here.
            let p = dump(&mut r, &k).unwrap();
            assert_eq!(restore(&mut a, &k, "0", &p, &["REPLACE"]), OK);
            assert_eq!(content(&mut a, &k), want, "{}: Amalgam → Redis → Amalgam", f.name);
        }
    }
    // Redis's MIGRATE into Amalgam (SELECT 0, then RESTORE … REPLACE),
    // one key and KEYS; the keys leave Redis.
    let (m1, m2) = (key("mig1"), key("mig2"));
    fill(&mut r, "RPUSH", &m1, &strs(&["a", "b", "c"]), 10);
    fill(&mut r, "HSET", &m2, &strs(&["f", "v"]), 10);
    let want = (content(&mut r, &m1), content(&mut r, &m2));
    let (host, port) = (server.resp_addr().ip().to_string(), server.resp_addr().port().to_string());
    assert_eq!(r.call(&["MIGRATE", &host, &port, &m1, "0", "5000"]), OK);
    assert_eq!(r.call(&["MIGRATE", &host, &port, "", "0", "5000", "REPLACE", "KEYS", &m2]), OK);
    assert_eq!((content(&mut a, &m1), content(&mut a, &m2)), want);
    assert_eq!(r.call(&["EXISTS", &m1, &m2]), int(0));
    // A TTL crosses as RESTORE's argument, as MIGRATE sends it.
    let k = key("ttl");
    assert_eq!(r.call(&["SET", &k, "v", "PX", "60000"]), OK);
    let ttl = as_int(&r.call(&["PTTL", &k]));
    let p = dump(&mut r, &k).unwrap();
    assert_eq!(restore(&mut a, &k, &ttl.to_string(), &p, &[]), OK);
    let left = as_int(&a.call(&["PTTL", &k]));
    assert!((50_000..=60_000).contains(&left), "{left}");
}

#[test]
fn a_payload_that_decodes_past_proto_max_bulk_len_is_refused() {
    // Amalgam's bound (Redis has none: it allocates what the payload
    // declares): 12 KB of LZF that decompresses to 1,056,001 bytes, past
    // a 1 MiB proto-max-bulk-len, is refused before it is decompressed.
    let Some(server) = resp_private(&["--proto-max-bulk-len", "1mb"]) else { return };
    let mut c = Resp::new(&server);
    let mut body = vec![0u8, 0xC3];
    let mut lzf = vec![0x00, b'a'];
    for _ in 0..4000 {
        lzf.extend_from_slice(&[0xE0, 255, 0x00]);
    }
    // RDB lengths: 32-bit form (0x80, then big-endian).
    body.push(0x80);
    body.extend_from_slice(&(lzf.len() as u32).to_be_bytes());
    body.push(0x80);
    body.extend_from_slice(&(4000u32 * 264 + 1).to_be_bytes());
    body.extend_from_slice(&lzf);
    let bomb = payload(&body, 10);
    assert!(bomb.len() < 13_000);
    let k = key("dump-bomb");
    assert_eq!(
        restore(&mut c, &k, "0", &bomb, &[]),
        error("ERR DUMP payload decodes to more than proto-max-bulk-len (1048576 bytes)")
    );
    assert_eq!(c.call(&["EXISTS", &k]), int(0));
    // Within the bound the same form restores.
    let mut small = vec![0u8, 0xC3, 0x80];
    let lzf: Vec<u8> = [0x00, b'a'].into_iter().chain([0xE0, 255, 0x00].repeat(100)).collect();
    small.extend_from_slice(&(lzf.len() as u32).to_be_bytes());
    small.push(0x80);
    small.extend_from_slice(&(100u32 * 264 + 1).to_be_bytes());
    small.extend_from_slice(&lzf);
    assert_eq!(restore(&mut c, &k, "0", &payload(&small, 10), &[]), OK);
    assert_eq!(c.call(&["STRLEN", &k]), int(26_401));
}
