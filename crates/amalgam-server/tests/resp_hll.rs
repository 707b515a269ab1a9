//! PFADD PFCOUNT PFMERGE PFDEBUG PFSELFTEST and `hll-sparse-max-bytes`,
//! black-box. Every expectation is Redis 7.0's (run this file against
//! redis-server too: AMALGAM_TEST_RESP_ADDR=127.0.0.1:PORT). The exact
//! bytes a command leaves are checked against amalgam-types' `hll`,
//! whose golden test holds it to redis-server's bytes: so a value made
//! by either server is the other's.
//!
//! The test that changes `hll-sparse-max-bytes` holds [`LIMIT`] for
//! writing; every other test holds it for reading, so none of them runs
//! while the setting is not Redis's default.
mod common;
use amalgam_types::hll;
use common::resp::*;
use common::*;
use std::sync::{RwLock, RwLockReadGuard};

static LIMIT: RwLock<()> = RwLock::new(());

/// The default `hll-sparse-max-bytes` holds while this lives.
fn default_limit() -> RwLockReadGuard<'static, ()> {
    LIMIT.read().unwrap_or_else(|e| e.into_inner())
}

const NOT_HLL: &str = "WRONGTYPE Key is not a valid HyperLogLog string value.";
const CORRUPT: &str = "INVALIDOBJ Corrupted HLL object detected";
const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

/// The value at `k` (None: no key).
fn get(c: &mut Resp, k: &str) -> Option<Vec<u8>> {
    c.send(&["GET", k]);
    let r = c.reply_bytes();
    if r.starts_with(b"$-1\r\n") {
        return None;
    }
    let nl = r.windows(2).position(|w| w == b"\r\n").unwrap();
    assert_eq!(r[0], b'$', "{}", show(&r));
    Some(r[nl + 2..r.len() - 2].to_vec())
}

/// SET of binary bytes.
fn set(c: &mut Resp, k: &str, v: &[u8]) {
    assert_eq!(c.call_raw(&encode(&[b"SET", k.as_bytes(), v])), OK);
}

/// What PFADD of `elements` into a new key leaves, by amalgam-types.
fn expected(elements: &[String], sparse_max: usize) -> Vec<u8> {
    let mut v = hll::new_sparse();
    for e in elements {
        hll::add(&mut v, e.as_bytes(), sparse_max).unwrap();
    }
    hll::invalidate(&mut v);
    v
}

fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

/// PFADD key elements… as one command.
fn pfadd(c: &mut Resp, k: &str, elements: &[String]) -> String {
    let mut args = vec!["PFADD", k];
    args.extend(elements.iter().map(String::as_str));
    c.call(&args)
}

/// A sparse value whose runs do not cover 16,384 registers (`body`
/// after a header with a stale cache).
fn damaged(body: &[u8]) -> Vec<u8> {
    let mut v = b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\x80".to_vec();
    v.extend_from_slice(body);
    v
}

#[test]
fn pfadd_and_pfcount() {
    let _limit = default_limit();
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (k, missing) = (key("hll"), key("nokey"));
    assert_eq!(c.call(&["PFCOUNT", &missing]), int(0));
    assert_eq!(c.call(&["EXISTS", &missing]), int(0), "PFCOUNT creates nothing");
    assert_eq!(c.call(&["PFADD", &k, "a", "b", "c"]), int(1));
    assert_eq!(c.call(&["PFADD", &k, "a", "b"]), int(0), "no register rose");
    assert_eq!(c.call(&["PFADD", &k]), int(0));
    assert_eq!(c.call(&["TYPE", &k]), "+string\r\n");
    assert_eq!(c.call(&["OBJECT", "ENCODING", &k]), bulk("raw"));
    let v = get(&mut c, &k).unwrap();
    assert_eq!(v, expected(&["a".into(), "b".into(), "c".into()], 3000), "Redis's bytes");
    assert_eq!(v[15] & 0x80, 0x80, "the cached count is stale after PFADD");
    assert_eq!(c.call(&["PFCOUNT", &k]), int(3));
    let cached = get(&mut c, &k).unwrap();
    assert_eq!(&cached[8..16], &[3, 0, 0, 0, 0, 0, 0, 0], "PFCOUNT caches its count in the header");
    assert_eq!(cached[16..], v[16..]);
    assert_eq!(c.call(&["PFCOUNT", &k]), int(3));

    // PFADD key with no element creates an empty HyperLogLog (answer 1).
    let empty = key("empty");
    assert_eq!(c.call(&["PFADD", &empty]), int(1));
    assert_eq!(get(&mut c, &empty).unwrap(), b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\x80\x7f\xff");
    assert_eq!(c.call(&["PFCOUNT", &empty]), int(0));

    // Larger counts are Redis's estimates, to the unit.
    let many = key("many");
    let elements = names("h", 1000);
    assert_eq!(pfadd(&mut c, &many, &elements), int(1));
    assert_eq!(get(&mut c, &many).unwrap(), expected(&elements, 3000));
    assert_eq!(c.call(&["PFCOUNT", &many]), int(1001));
    assert_eq!(pfadd(&mut c, &many, &names("h", 5000)), int(1));
    assert_eq!(c.call(&["PFCOUNT", &many]), int(4999));

    assert_eq!(c.call(&["PFADD"]), error("ERR wrong number of arguments for 'pfadd' command"));
    assert_eq!(c.call(&["PFCOUNT"]), error("ERR wrong number of arguments for 'pfcount' command"));
}

#[test]
fn a_ttl_survives_every_write() {
    let _limit = default_limit();
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (k, src) = (key("ttl"), key("src"));
    assert_eq!(c.call(&["PFADD", &k, "a"]), int(1));
    assert_eq!(c.call(&["EXPIRE", &k, "1000"]), int(1));
    assert_eq!(c.call(&["PFADD", &k, "b"]), int(1));
    assert_eq!(c.call(&["PFCOUNT", &k]), int(2), "a stale cache: counted and written back");
    assert_eq!(c.call(&["PFADD", &src, "x", "y"]), int(1));
    assert_eq!(c.call(&["PFMERGE", &k, &src]), OK);
    let ttl = as_int(&c.call(&["TTL", &k]));
    assert!((990..=1000).contains(&ttl), "{ttl}");
    assert_eq!(c.call(&["PFCOUNT", &k]), int(4));
}

#[test]
fn pfcount_of_several_keys_is_the_union_and_writes_nothing() {
    let _limit = default_limit();
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (a, b, missing) = (key("a"), key("b"), key("missing"));
    assert_eq!(pfadd(&mut c, &a, &names("x", 100)), int(1));
    assert_eq!(pfadd(&mut c, &b, &names("x", 150)), int(1));
    let (va, vb) = (get(&mut c, &a).unwrap(), get(&mut c, &b).unwrap());
    assert_eq!(c.call(&["PFCOUNT", &a, &b, &missing]), int(148), "Redis's estimate");
    assert_eq!(c.call(&["PFCOUNT", &a, &a]), int(99));
    assert_eq!(c.call(&["PFCOUNT", &missing, &missing]), int(0));
    assert_eq!((get(&mut c, &a).unwrap(), get(&mut c, &b).unwrap()), (va, vb), "stale caches stay stale");
    assert_eq!(c.call(&["EXISTS", &missing]), int(0));
}

#[test]
fn pfmerge() {
    let _limit = default_limit();
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (a, b, dest, missing) = (key("a"), key("b"), key("dest"), key("missing"));
    assert_eq!(pfadd(&mut c, &a, &names("m", 30)), int(1));
    assert_eq!(pfadd(&mut c, &b, &names("m", 60)[20..]), int(1));
    assert_eq!(c.call(&["PFMERGE", &dest, &a, &b, &missing]), OK);
    assert_eq!(c.call(&["PFCOUNT", &dest]), int(60));
    // The destination is a source too.
    assert_eq!(pfadd(&mut c, &dest, &names("n", 10)), int(1));
    assert_eq!(c.call(&["PFMERGE", &dest, &a]), OK);
    assert_eq!(c.call(&["PFCOUNT", &dest]), int(70));
    // PFMERGE dest alone: a new empty HyperLogLog.
    let alone = key("alone");
    assert_eq!(c.call(&["PFMERGE", &alone]), OK);
    assert_eq!(get(&mut c, &alone).unwrap(), b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\x80\x7f\xff");
    // The merge of two sparse values is the PFADD of their elements.
    let both = key("both");
    assert_eq!(c.call(&["PFMERGE", &both, &a, &b]), OK);
    assert_eq!(get(&mut c, &both).unwrap(), expected(&names("m", 60), 3000));
    assert_eq!(c.call(&["PFMERGE"]), error("ERR wrong number of arguments for 'pfmerge' command"));
}

#[test]
fn not_a_hyperloglog() {
    let _limit = default_limit();
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (s, l, h, num) = (key("str"), key("list"), key("hll"), key("num"));
    assert_eq!(c.call(&["SET", &s, "hello world, a long enough string"]), OK);
    assert_eq!(c.call(&["RPUSH", &l, "x"]), int(1));
    assert_eq!(c.call(&["SET", &num, "12345"]), OK);
    assert_eq!(c.call(&["PFADD", &h, "x"]), int(1));
    for k in [&s, &num] {
        assert_eq!(c.call(&["PFADD", k, "x"]), error(NOT_HLL));
        assert_eq!(c.call(&["PFCOUNT", k]), error(NOT_HLL));
        assert_eq!(c.call(&["PFCOUNT", &h, k]), error(NOT_HLL));
        assert_eq!(c.call(&["PFMERGE", &h, k]), error(NOT_HLL));
        assert_eq!(c.call(&["PFMERGE", k, &h]), error(NOT_HLL), "the destination is checked as a source");
        assert_eq!(c.call(&["PFDEBUG", "ENCODING", k]), error(NOT_HLL));
    }
    assert_eq!(c.call(&["PFADD", &l, "x"]), error(WRONGTYPE));
    assert_eq!(c.call(&["PFCOUNT", &l]), error(WRONGTYPE));
    assert_eq!(c.call(&["PFCOUNT", &h, &l]), error(WRONGTYPE));
    assert_eq!(c.call(&["PFMERGE", &l, &h]), error(WRONGTYPE));
    assert_eq!(c.call(&["PFDEBUG", "GETREG", &l]), error(WRONGTYPE));
    assert_eq!(c.call(&["GET", &s]), bulk("hello world, a long enough string"), "nothing changed");

    // The header's checks: magic, an encoding of 0 or 1, a dense value
    // of exactly 12,304 bytes.
    let bad = key("bad");
    for v in [
        &b"HYLL\x01"[..],
        b"HYLX\x01\0\0\0\0\0\0\0\0\0\0\x80\x7f\xff",
        b"HYLL\x02\0\0\0\0\0\0\0\0\0\0\x80\x7f\xff",
        b"HYLL\x00\0\0\0\0\0\0\0\0\0\0\x80\x7f\xff",
    ] {
        set(&mut c, &bad, v);
        assert_eq!(c.call(&["PFADD", &bad, "x"]), error(NOT_HLL), "{}", show(v));
    }
    let mut dense = vec![0u8; 12_304];
    dense[..4].copy_from_slice(b"HYLL");
    set(&mut c, &bad, &dense);
    assert_eq!(c.call(&["PFCOUNT", &bad]), int(0), "a dense value of the right size");
    dense.push(0);
    set(&mut c, &bad, &dense);
    assert_eq!(c.call(&["PFCOUNT", &bad]), error(NOT_HLL));
}

#[test]
fn damaged_runs_are_invalidobj() {
    let _limit = default_limit();
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (bad, good, short) = (key("bad"), key("good"), key("short"));
    assert_eq!(c.call(&["PFADD", &good, "a"]), int(1));
    // XZERO:16383: one register short.
    set(&mut c, &bad, &damaged(b"\x7f\xfe"));
    assert_eq!(c.call(&["PFCOUNT", &bad]), error(CORRUPT));
    assert_eq!(c.call(&["PFCOUNT", &good, &bad]), error(CORRUPT));
    assert_eq!(c.call(&["PFMERGE", &good, &bad]), error(CORRUPT));
    assert_eq!(c.call(&["PFMERGE", &bad, &good]), error(CORRUPT));
    assert_eq!(c.call(&["PFDEBUG", "GETREG", &bad]), error(CORRUPT));
    assert_eq!(c.call(&["PFDEBUG", "TODENSE", &bad]), error(CORRUPT));
    assert_eq!(c.call(&["PFDEBUG", "DECODE", &bad]), bulk("Z:16383"), "DECODE only walks");
    assert_eq!(c.call(&["PFDEBUG", "ENCODING", &bad]), "+sparse\r\n");
    // No runs at all: every PFADD fails to find its register.
    set(&mut c, &short, &damaged(b""));
    assert_eq!(c.call(&["PFADD", &short, "x", "y"]), error(CORRUPT));
    assert_eq!(get(&mut c, &short).unwrap(), damaged(b""), "nothing written");
    assert_eq!(c.call(&["PFDEBUG", "DECODE", &short]), bulk(""));
    // Runs past the 16,384th register, even after exactly 16,384 (Redis
    // 7.0.15 with the CVE-2025-32023 fix); PFADD walks only up to its
    // register, so it still changes such a value.
    let tail = key("tail");
    for body in [&b"\x7f\xff\x80"[..], b"\x7f\xff\x00", b"\x7f\xff\x7f\xff"] {
        set(&mut c, &tail, &damaged(body));
        assert_eq!(c.call(&["PFCOUNT", &tail]), error(CORRUPT), "{}", show(body));
        assert_eq!(c.call(&["PFCOUNT", &tail, &good]), error(CORRUPT));
        assert_eq!(c.call(&["PFDEBUG", "TODENSE", &tail]), error(CORRUPT));
        assert_eq!(c.call(&["PFADD", &tail, "a", "b", "c"]), int(1));
        assert_eq!(c.call(&["PFCOUNT", &tail]), error(CORRUPT));
    }
    // A valid cache is answered without looking at the runs.
    let mut cached = damaged(b"\x7f\xfe");
    cached[8] = 42;
    cached[15] = 0;
    set(&mut c, &bad, &cached);
    assert_eq!(c.call(&["PFCOUNT", &bad]), int(42));
    assert_eq!(c.call(&["PFCOUNT", &bad, &good]), error(CORRUPT));
}

#[test]
fn pfdebug() {
    let _limit = default_limit();
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (k, missing) = (key("dbg"), key("missing"));
    assert_eq!(c.call(&["PFADD", &k, "a"]), int(1));
    let (i, run) = hll::pattern(b"a");
    let zeros = |n: usize| if n > 64 { format!("Z:{n}") } else { format!("z:{n}") };
    let decoded = [zeros(i), format!("v:{run},1"), zeros(hll::REGISTERS - i - 1)].join(" ");
    assert_eq!(c.call(&["PFDEBUG", "DECODE", &k]), bulk(&decoded));
    assert_eq!(c.call(&["PFDEBUG", "encoding", &k]), "+sparse\r\n");
    let regs = call(&mut c, &["PFDEBUG", "GETREG", &k]);
    let regs = regs.array();
    assert_eq!(regs.len(), hll::REGISTERS);
    assert!(regs.iter().enumerate().all(|(j, r)| r.int() == if j == i { i64::from(run) } else { 0 }));
    assert_eq!(c.call(&["PFDEBUG", "ENCODING", &k]), "+dense\r\n", "GETREG converts a sparse value");
    assert_eq!(get(&mut c, &k).unwrap().len(), hll::DENSE_BYTES);
    assert_eq!(c.call(&["PFDEBUG", "DECODE", &k]), error("ERR HLL encoding is not sparse"));
    assert_eq!(c.call(&["PFDEBUG", "TODENSE", &k]), int(0));
    assert_eq!(c.call(&["PFCOUNT", &k]), int(1));
    let k2 = key("dbg2");
    assert_eq!(c.call(&["PFADD", &k2, "a"]), int(1));
    assert_eq!(c.call(&["PFDEBUG", "TODENSE", &k2]), int(1));
    assert_eq!(get(&mut c, &k2).unwrap()[16..], get(&mut c, &k).unwrap()[16..]);
    assert_eq!(c.call(&["PFDEBUG", "NOSUCH", &k]), error("ERR Unknown PFDEBUG subcommand 'NOSUCH'"));
    assert_eq!(c.call(&["PFDEBUG", "NOSUCH", &missing]), error("ERR The specified key does not exist"));
    assert_eq!(c.call(&["PFDEBUG", "GETREG", &missing]), error("ERR The specified key does not exist"));
    assert_eq!(c.call(&["PFDEBUG", "GETREG"]), error("ERR wrong number of arguments for 'pfdebug' command"));
    assert_eq!(c.call(&["PFDEBUG", "GETREG", &k, "x"]), error("ERR wrong number of arguments for 'pfdebug' command"));
}

#[test]
fn pfselftest() {
    let _limit = default_limit();
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    assert_eq!(c.call(&["PFSELFTEST"]), OK);
    assert_eq!(c.call(&["PFSELFTEST", "x"]), error("ERR wrong number of arguments for 'pfselftest' command"));
}

#[test]
fn sparse_dense_and_the_sparse_limit() {
    let _only = LIMIT.write().unwrap_or_else(|e| e.into_inner());
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    assert_eq!(c.config_get("hll-sparse-max-bytes"), "3000");
    let (small, large, mixed, sparse2) = (key("small"), key("large"), key("mixed"), key("sparse2"));
    assert_eq!(pfadd(&mut c, &small, &names("s", 200)), int(1));
    assert_eq!(c.call(&["PFDEBUG", "ENCODING", &small]), "+sparse\r\n");
    assert_eq!(pfadd(&mut c, &large, &names("l", 3000)), int(1));
    assert_eq!(c.call(&["PFDEBUG", "ENCODING", &large]), "+dense\r\n", "past 3000 bytes");
    assert_eq!(get(&mut c, &large).unwrap(), expected(&names("l", 3000), 3000));
    // PFMERGE: dense if any source is, sparse while every one is.
    assert_eq!(c.call(&["PFMERGE", &mixed, &small, &large]), OK);
    assert_eq!(c.call(&["PFDEBUG", "ENCODING", &mixed]), "+dense\r\n");
    assert_eq!(c.call(&["PFADD", &sparse2, "q"]), int(1));
    assert_eq!(c.call(&["PFMERGE", &sparse2, &small]), OK);
    assert_eq!(c.call(&["PFDEBUG", "ENCODING", &sparse2]), "+sparse\r\n");
    assert_eq!(c.call(&["PFCOUNT", &mixed]), c.call(&["PFCOUNT", &small, &large]));

    // The limit, set at run time: a memory value, Redis's errors.
    let over = key("over");
    assert_eq!(c.call(&["CONFIG", "SET", "hll-sparse-max-bytes", "100"]), OK);
    assert_eq!(pfadd(&mut c, &over, &names("o", 40)), int(1));
    assert_eq!(c.call(&["PFDEBUG", "ENCODING", &over]), "+dense\r\n");
    assert_eq!(get(&mut c, &over).unwrap(), expected(&names("o", 40), 100));
    assert_eq!(c.call(&["CONFIG", "SET", "hll-sparse-max-bytes", "1kb"]), OK);
    assert_eq!(c.config_get("hll-sparse-max-bytes"), "1024");
    let msg = |why: &str| {
        error(&format!("ERR CONFIG SET failed (possibly related to argument 'hll-sparse-max-bytes') - {why}"))
    };
    assert_eq!(c.call(&["CONFIG", "SET", "hll-sparse-max-bytes", "-1"]), msg("argument must be a memory value"));
    assert_eq!(c.call(&["CONFIG", "SET", "hll-sparse-max-bytes", "x"]), msg("argument must be a memory value"));
    assert_eq!(c.call(&["CONFIG", "SET", "hll-sparse-max-bytes", "3000"]), OK);
    assert_eq!(c.call(&["CONFIG", "GET", "hll-sparse-*"]), "*2\r\n$20\r\nhll-sparse-max-bytes\r\n$4\r\n3000\r\n");
}

#[test]
fn in_transactions_scripts_and_databases() {
    let _limit = default_limit();
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (k, k2, d) = (key("t"), key("t2"), key("d"));
    assert_eq!(c.call(&["MULTI"]), OK);
    assert_eq!(c.call(&["PFADD", &k, "a", "b"]), "+QUEUED\r\n");
    assert_eq!(c.call(&["PFCOUNT", &k]), "+QUEUED\r\n");
    assert_eq!(c.call(&["PFMERGE", &k2, &k]), "+QUEUED\r\n");
    assert_eq!(c.call(&["EXEC"]), "*3\r\n:1\r\n:2\r\n+OK\r\n");
    let eval = |c: &mut Resp, cmd: &str, script: &str, keys: &[&str]| {
        let n = keys.len().to_string();
        let mut args = vec![cmd, script, &n];
        args.extend_from_slice(keys);
        c.call(&args)
    };
    assert_eq!(eval(&mut c, "EVAL", "return redis.call('pfadd', KEYS[1], 'c')", &[&k]), int(1));
    assert_eq!(eval(&mut c, "EVAL", "return redis.call('pfcount', KEYS[1], KEYS[2])", &[&k, &k2]), int(3));
    assert_eq!(eval(&mut c, "EVAL", "return redis.call('pfmerge', KEYS[2], KEYS[1])", &[&k, &k2]), OK);
    // PFCOUNT may write (its cache): read-only scripts refuse it.
    let ro = eval(&mut c, "EVAL_RO", "return redis.call('pfcount', KEYS[1])", &[&k]);
    assert!(ro.starts_with("-ERR Write commands are not allowed from read-only scripts."), "{ro}");
    let err = eval(&mut c, "EVAL", "return redis.pcall('pfcount', KEYS[1])", &[&key("x")]);
    assert_eq!(err, int(0));

    // Numbered databases: the keys live in the selected one.
    assert_eq!(c.call(&["SELECT", "3"]), OK);
    assert_eq!(c.call(&["PFADD", &d, "x", "y"]), int(1));
    assert_eq!(c.call(&["PFMERGE", &k, &d]), OK);
    assert_eq!(c.call(&["PFCOUNT", &k]), int(2));
    assert_eq!(c.call(&["PFDEBUG", "ENCODING", &k]), "+sparse\r\n");
    assert_eq!(c.call(&["SELECT", "0"]), OK);
    assert_eq!(c.call(&["PFCOUNT", &d]), int(0));
    assert_eq!(c.call(&["PFCOUNT", &k]), int(3));
    assert_eq!(c.call(&["SELECT", "3"]), OK);
    assert_eq!(c.call(&["DEL", &k, &d]), int(2));
    assert_eq!(c.call(&["SELECT", "0"]), OK);
}

#[test]
fn a_cache_write_back_aborts_a_watch() {
    let _limit = default_limit();
    let Some(server) = resp_server() else { return };
    let (mut c, mut other) = (Resp::new(&server), Resp::new(&server));
    let k = key("w");
    assert_eq!(c.call(&["PFADD", &k, "a"]), int(1));
    assert_eq!(c.call(&["WATCH", &k]), OK);
    assert_eq!(other.call(&["PFCOUNT", &k]), int(1), "the stale cache is written back");
    assert_eq!(c.call(&["MULTI"]), OK);
    assert_eq!(c.call(&["PING"]), "+QUEUED\r\n");
    assert_eq!(c.call(&["EXEC"]), "*-1\r\n");
    // A valid cache: PFCOUNT writes nothing.
    assert_eq!(c.call(&["WATCH", &k]), OK);
    assert_eq!(other.call(&["PFCOUNT", &k]), int(1));
    assert_eq!(c.call(&["MULTI"]), OK);
    assert_eq!(c.call(&["PING"]), "+QUEUED\r\n");
    assert_eq!(c.call(&["EXEC"]), "*1\r\n+PONG\r\n");
}

#[test]
fn dump_restore_and_the_table() {
    let _limit = default_limit();
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (k, copy) = (key("d"), key("copy"));
    assert_eq!(pfadd(&mut c, &k, &names("d", 4000)), int(1));
    c.send(&["DUMP", &k]);
    let dump = c.reply_bytes();
    let nl = dump.windows(2).position(|w| w == b"\r\n").unwrap();
    let payload = &dump[nl + 2..dump.len() - 2];
    assert_eq!(c.call_raw(&encode(&[b"RESTORE", copy.as_bytes(), b"0", payload])), OK);
    assert_eq!(get(&mut c, &copy), get(&mut c, &k));
    assert_eq!(c.call(&["PFCOUNT", &copy]), c.call(&["PFCOUNT", &k]));

    let keys =
        |c: &mut Resp, args: &[&str]| call(c, args).array().iter().map(|v| v.bulk().to_string()).collect::<Vec<_>>();
    assert_eq!(keys(&mut c, &["COMMAND", "GETKEYS", "PFMERGE", "d", "a", "b"]), ["d", "a", "b"]);
    assert_eq!(keys(&mut c, &["COMMAND", "GETKEYS", "PFDEBUG", "GETREG", "k"]), ["k"]);
    assert_eq!(keys(&mut c, &["COMMAND", "GETKEYS", "PFCOUNT", "a", "b"]), ["a", "b"]);
    let mut cat = keys(&mut c, &["ACL", "CAT", "hyperloglog"]);
    cat.sort();
    assert_eq!(cat, ["pfadd", "pfcount", "pfdebug", "pfmerge", "pfselftest"]);
    let info = c.call(&["COMMAND", "INFO", "pfcount"]);
    assert!(info.starts_with("*1\r\n*10\r\n$7\r\npfcount\r\n:-2\r\n*1\r\n+readonly\r\n:1\r\n:-1\r\n:1\r\n"), "{info}");
    assert!(info.contains("+@read\r\n+@hyperloglog\r\n+@slow\r\n"), "{info}");
}

/// `--hll-sparse-max-bytes` at start (amalgam's own server: the flag is
/// Redis's config directive given on the command line).
#[test]
fn the_limit_given_at_start() {
    let Some(server) = resp_private(&["--hll-sparse-max-bytes", "100"]) else { return };
    let mut c = Resp::new(&server);
    assert_eq!(c.config_get("hll-sparse-max-bytes"), "100");
    let k = key("start");
    assert_eq!(pfadd(&mut c, &k, &names("o", 40)), int(1));
    assert_eq!(c.call(&["PFDEBUG", "ENCODING", &k]), "+dense\r\n");
    assert_eq!(get(&mut c, &k).unwrap(), expected(&names("o", 40), 100));
}
