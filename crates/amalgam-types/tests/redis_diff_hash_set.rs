//! Differential test against a real redis-server: random HASH and SET
//! commands applied to both `Hash`/`Set` and Redis, replies compared
//! (error texts included; unordered replies compared as sorted lists),
//! at four threshold settings so every form and conversion is exercised.
//!
//! Skipped unless `AMALGAM_TYPES_REDIS_ADDR` names a scratch Redis 7.0
//! (it deletes keys h, s1, s2, s3 and sets hash-max-listpack-*,
//! set-max-intset-entries, restoring the defaults at the end):
//! `redis-server --port 7777 --save '' --appendonly no &`
//! `AMALGAM_TYPES_REDIS_ADDR=127.0.0.1:7777 cargo test --release -p amalgam-types --test redis_diff_hash_set -- --nocapture`
//!
//! What is compared how:
//! * exact: HSET/HSETNX/HGET/HMGET/HDEL/HLEN/HSTRLEN/HEXISTS/HINCRBY/
//!   HINCRBYFLOAT replies and errors, SADD/SREM/SISMEMBER/SMISMEMBER/
//!   SCARD, SINTERCARD, OBJECT ENCODING of hashes, and whether a set is
//!   an intset (Redis 7.0 has no set listpack: our "listpack" is its
//!   "hashtable");
//! * as sorted lists: HGETALL/HKEYS/HVALS, SMEMBERS, SINTER/SUNION/SDIFF,
//!   full HSCAN/SSCAN iterations (deduplicated);
//! * by rule: HRANDFIELD/SRANDMEMBER (count, distinctness, membership);
//!   SPOP runs on ours only and Redis SREMs what we popped (each must
//!   have been a member there too).
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;

use amalgam_types::hash::Hash;
use amalgam_types::set::{self, Set};
use amalgam_types::Thresholds;

#[derive(Debug, PartialEq, Clone)]
enum R {
    S(String),
    E(String),
    I(i64),
    B(Option<Vec<u8>>),
    A(Option<Vec<R>>),
}

struct Conn {
    w: TcpStream,
    r: BufReader<TcpStream>,
}

impl Conn {
    fn cmd(&mut self, args: &[&[u8]]) -> R {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            out.extend(format!("${}\r\n", a.len()).bytes());
            out.extend_from_slice(a);
            out.extend(b"\r\n");
        }
        self.w.write_all(&out).unwrap();
        self.read()
    }
    fn read(&mut self) -> R {
        let mut line = Vec::new();
        self.r.read_until(b'\n', &mut line).unwrap();
        let body = String::from_utf8_lossy(&line[1..line.len() - 2]).to_string();
        match line[0] {
            b'+' => R::S(body),
            b'-' => R::E(body),
            b':' => R::I(body.parse().unwrap()),
            b'$' => {
                let n: i64 = body.parse().unwrap();
                if n < 0 {
                    return R::B(None);
                }
                let mut b = vec![0; n as usize + 2];
                std::io::Read::read_exact(&mut self.r, &mut b).unwrap();
                b.truncate(n as usize);
                R::B(Some(b))
            }
            b'*' => {
                let n: i64 = body.parse().unwrap();
                if n < 0 {
                    return R::A(None);
                }
                R::A(Some((0..n).map(|_| self.read()).collect()))
            }
            c => panic!("reply {c}"),
        }
    }
    /// An array reply's bulk strings, sorted.
    fn sorted(&mut self, args: &[&[u8]]) -> Vec<Vec<u8>> {
        let mut v = bulks(self.cmd(args));
        v.sort();
        v
    }
}

fn bulks(r: R) -> Vec<Vec<u8>> {
    match r {
        R::A(Some(v)) => v
            .into_iter()
            .map(|x| match x {
                R::B(Some(b)) => b,
                other => panic!("not a bulk: {other:?}"),
            })
            .collect(),
        other => panic!("not an array: {other:?}"),
    }
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn n(&mut self, m: u64) -> u64 {
        self.next() % m
    }
}

fn int(b: bool) -> R {
    R::I(i64::from(b))
}

/// Random commands per threshold setting.
const COMMANDS_PER_ROUND: usize = 6_000;
/// Fields / members drawn from.
const NAMES: u64 = 90;

fn name(i: u64) -> Vec<u8> {
    match i {
        0..=39 => format!("f{i}").into_bytes(),
        40..=69 => (i as i64 * 37 - 1500).to_string().into_bytes(),
        70 => b"01".to_vec(),
        71 => b"-0".to_vec(),
        72 => b"+5".to_vec(),
        73 => b"9223372036854775807".to_vec(),
        74 => b"-9223372036854775808".to_vec(),
        75 => b"100000".to_vec(),
        76 => b"5000000000".to_vec(),
        77 => vec![b'L'; 70],
        78 => b"".to_vec(),
        _ => format!("{}", 1_000_000 + i).into_bytes(),
    }
}

fn value(rng: &mut Rng) -> Vec<u8> {
    let pool: [&[u8]; 12] =
        [b"1", b"-7", b"10.5", b"abc", b"0", b"3.0e2", b"9223372036854775806", b"", b"0x10", b"1e400", b"inf", b"0.1"];
    match rng.n(4) {
        0 => vec![b'v'; rng.n(80) as usize],
        _ => pool[rng.n(pool.len() as u64) as usize].to_vec(),
    }
}

#[test]
fn replies_match_redis() {
    let Ok(addr) = std::env::var("AMALGAM_TYPES_REDIS_ADDR") else {
        println!("skipped: AMALGAM_TYPES_REDIS_ADDR is not set");
        return;
    };
    let s = TcpStream::connect(addr).unwrap();
    let mut c = Conn { w: s.try_clone().unwrap(), r: BufReader::new(s) };
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ u64::from(std::process::id()));
    let mut n_cmds = 0usize;
    for round in 0..4 {
        let (entries, value_max, ints) = [(0usize, 0usize, 0usize), (4, 8, 4), (32, 16, 20), (128, 64, 512)][round];
        let th = Thresholds {
            hash_max_listpack_entries: entries,
            hash_max_listpack_value: value_max,
            set_max_intset_entries: ints,
            ..Thresholds::default()
        };
        for (k, v) in [
            ("hash-max-listpack-entries", entries),
            ("hash-max-listpack-value", value_max),
            ("set-max-intset-entries", ints),
        ] {
            assert_eq!(c.cmd(&[b"config", b"set", k.as_bytes(), v.to_string().as_bytes()]), R::S("OK".into()));
        }
        c.cmd(&[b"del", b"h", b"s1", b"s2", b"s3"]);
        let mut h = Hash::new();
        let mut sets = [Set::new(), Set::new(), Set::new()];
        let keys: [&[u8]; 3] = [b"s1", b"s2", b"s3"];
        for _ in 0..COMMANDS_PER_ROUND {
            n_cmds += 1;
            // Redis deletes an emptied key; the next write creates a new
            // value in its first form, so the server will do the same.
            if h.is_empty() {
                h = Hash::new();
            }
            for s in &mut sets {
                if s.is_empty() {
                    *s = Set::new();
                }
            }
            let f = name(rng.n(NAMES));
            let si = rng.n(3) as usize;
            let key = keys[si];
            match rng.n(26) {
                0..=3 => {
                    let v = value(&mut rng);
                    let want = c.cmd(&[b"hset", b"h", &f, &v]);
                    assert_eq!(int(h.insert(&f, &v, &th)), want, "HSET {f:?}");
                }
                4 => {
                    let v = value(&mut rng);
                    let want = c.cmd(&[b"hsetnx", b"h", &f, &v]);
                    let new = !h.contains(&f) && h.insert(&f, &v, &th);
                    assert_eq!(int(new), want);
                }
                5 => {
                    let want = c.cmd(&[b"hget", b"h", &f]);
                    assert_eq!(R::B(h.get(&f).map(<[u8]>::to_vec)), want);
                    let want = c.cmd(&[b"hstrlen", b"h", &f]);
                    assert_eq!(R::I(h.get(&f).map_or(0, |v| v.len() as i64)), want);
                    let want = c.cmd(&[b"hexists", b"h", &f]);
                    assert_eq!(int(h.contains(&f)), want);
                }
                6 => {
                    let g = name(rng.n(NAMES));
                    let want = c.cmd(&[b"hmget", b"h", &f, &g]);
                    let got =
                        R::A(Some(vec![R::B(h.get(&f).map(<[u8]>::to_vec)), R::B(h.get(&g).map(<[u8]>::to_vec))]));
                    assert_eq!(got, want);
                }
                7 => {
                    let want = c.cmd(&[b"hdel", b"h", &f]);
                    assert_eq!(int(h.remove(&f)), want);
                }
                8 => {
                    let d = [1i64, -3, 1000, i64::MAX, i64::MIN][rng.n(5) as usize];
                    let want = c.cmd(&[b"hincrby", b"h", &f, d.to_string().as_bytes()]);
                    let got = match h.incr_by(&f, d, &th) {
                        Ok(v) => R::I(v),
                        Err(e) => R::E(e.message().into()),
                    };
                    assert_eq!(got, want, "HINCRBY {f:?} {d}");
                }
                9 => {
                    let d = ["0.1", "-2.5", "1e3", "abc", "inf", "3", "1e-3", "0x1p2"][rng.n(8) as usize];
                    let want = c.cmd(&[b"hincrbyfloat", b"h", &f, d.as_bytes()]);
                    let got = match h.incr_by_float(&f, d.as_bytes(), &th) {
                        Ok(v) => R::B(Some(v)),
                        Err(e) => R::E(e.message().into()),
                    };
                    assert_eq!(got, want, "HINCRBYFLOAT {f:?} {d}");
                }
                10 => {
                    let want = c.cmd(&[b"hlen", b"h"]);
                    assert_eq!(R::I(h.len() as i64), want);
                    if !h.is_empty() {
                        let want = c.cmd(&[b"object", b"encoding", b"h"]);
                        assert_eq!(R::B(Some(h.encoding().into())), want, "hash encoding");
                    }
                }
                11 => {
                    let mut all: Vec<Vec<u8>> = h.iter().flat_map(|(f, v)| [f.to_vec(), v.to_vec()]).collect();
                    let want = bulks(c.cmd(&[b"hgetall", b"h"]));
                    // Compare as sorted (field, value) pairs.
                    let pairs = |v: &[Vec<u8>]| {
                        let mut p: Vec<(Vec<u8>, Vec<u8>)> =
                            v.chunks(2).map(|c| (c[0].clone(), c[1].clone())).collect();
                        p.sort();
                        p
                    };
                    assert_eq!(pairs(&all), pairs(&want));
                    all = h.iter().map(|(f, _)| f.to_vec()).collect();
                    all.sort();
                    assert_eq!(all, c.sorted(&[b"hkeys", b"h"]));
                    let mut vals: Vec<Vec<u8>> = h.iter().map(|(_, v)| v.to_vec()).collect();
                    vals.sort();
                    assert_eq!(vals, c.sorted(&[b"hvals", b"h"]));
                }
                12 => {
                    let count = rng.n(12) as i64 - 6;
                    let mut got = Vec::new();
                    let mut r = || rng.next();
                    h.random_fields(count, &mut r, &mut |f, _| got.push(f.to_vec()));
                    let theirs = if h.is_empty() {
                        Vec::new()
                    } else {
                        bulks(c.cmd(&[b"hrandfield", b"h", count.to_string().as_bytes()]))
                    };
                    assert_eq!(got.len(), theirs.len(), "HRANDFIELD {count}");
                    let keys: BTreeSet<Vec<u8>> = c.sorted(&[b"hkeys", b"h"]).into_iter().collect();
                    assert!(got.iter().all(|f| keys.contains(f)));
                    if count > 0 {
                        assert_eq!(got.iter().collect::<BTreeSet<_>>().len(), got.len());
                    }
                }
                13 => {
                    // Full HSCAN on both, COUNT 3.
                    let mut ours = BTreeSet::new();
                    let mut cursor = 0;
                    loop {
                        cursor = h.scan(cursor, 3, &mut |f, _| {
                            ours.insert(f.to_vec());
                        });
                        if cursor == 0 {
                            break;
                        }
                    }
                    let mut theirs = BTreeSet::new();
                    let mut rc = b"0".to_vec();
                    loop {
                        let R::A(Some(mut v)) = c.cmd(&[b"hscan", b"h", &rc, b"count", b"3"]) else { panic!("hscan") };
                        let items = bulks(v.pop().unwrap());
                        theirs.extend(items.chunks(2).map(|p| p[0].clone()));
                        let R::B(Some(next)) = v.pop().unwrap() else { panic!("cursor") };
                        if next == b"0" {
                            break;
                        }
                        rc = next;
                    }
                    assert_eq!(ours, theirs);
                }
                14..=16 => {
                    let want = c.cmd(&[b"sadd", key, &f]);
                    assert_eq!(int(sets[si].insert(&f, &th)), want, "SADD {f:?}");
                }
                17 => {
                    let want = c.cmd(&[b"srem", key, &f]);
                    assert_eq!(int(sets[si].remove(&f)), want);
                }
                18 => {
                    let g = name(rng.n(NAMES));
                    assert_eq!(int(sets[si].contains(&f)), c.cmd(&[b"sismember", key, &f]));
                    let want = c.cmd(&[b"smismember", key, &f, &g]);
                    assert_eq!(R::A(Some(vec![int(sets[si].contains(&f)), int(sets[si].contains(&g))])), want);
                }
                19 => {
                    assert_eq!(R::I(sets[si].len() as i64), c.cmd(&[b"scard", key]));
                    let mut ours: Vec<Vec<u8>> = sets[si].iter().map(|m| m.to_vec()).collect();
                    ours.sort();
                    assert_eq!(ours, c.sorted(&[b"smembers", key]));
                    if !sets[si].is_empty() {
                        let R::B(Some(enc)) = c.cmd(&[b"object", b"encoding", key]) else { panic!("encoding") };
                        let ours = sets[si].encoding();
                        assert_eq!(ours == "intset", enc == b"intset", "intset status: ours {ours}");
                    }
                }
                20 => {
                    let refs = [&sets[0], &sets[1], &sets[2]];
                    let sorted = |s: Set| {
                        let mut v: Vec<Vec<u8>> = s.iter().map(|m| m.to_vec()).collect();
                        v.sort();
                        v
                    };
                    assert_eq!(sorted(set::inter(&refs, &th)), c.sorted(&[b"sinter", b"s1", b"s2", b"s3"]));
                    assert_eq!(sorted(set::union(&refs, &th)), c.sorted(&[b"sunion", b"s1", b"s2", b"s3"]));
                    assert_eq!(sorted(set::diff(&refs, &th)), c.sorted(&[b"sdiff", b"s1", b"s2", b"s3"]));
                    let pair = [&sets[si], &sets[(si + 1) % 3]];
                    let limit = rng.n(3) as usize;
                    let want =
                        c.cmd(&[b"sintercard", b"2", key, keys[(si + 1) % 3], b"limit", limit.to_string().as_bytes()]);
                    assert_eq!(R::I(set::inter_card(&pair, limit) as i64), want);
                }
                21 => {
                    let count = rng.n(10) as i64 - 5;
                    let mut got = Vec::new();
                    let mut r = || rng.next();
                    sets[si].random_members(count, &mut r, &mut |m| got.push(m.to_vec()));
                    let theirs = bulks(c.cmd(&[b"srandmember", key, count.to_string().as_bytes()]));
                    assert_eq!(got.len(), theirs.len(), "SRANDMEMBER {count}");
                    let members: BTreeSet<Vec<u8>> = c.sorted(&[b"smembers", key]).into_iter().collect();
                    assert!(got.iter().all(|m| members.contains(m)));
                }
                22 => {
                    let count = rng.n(4) as usize;
                    let mut r = || rng.next();
                    let popped = sets[si].pop_random(count, &mut r);
                    if !popped.is_empty() {
                        let mut args: Vec<&[u8]> = vec![b"srem", key];
                        args.extend(popped.iter().map(Vec::as_slice));
                        assert_eq!(c.cmd(&args), R::I(popped.len() as i64), "SPOP'd members were members");
                    }
                }
                23 => {
                    let mut ours = BTreeSet::new();
                    let mut cursor = 0;
                    loop {
                        cursor = sets[si].scan(cursor, 2, &mut |m| {
                            ours.insert(m.to_vec());
                        });
                        if cursor == 0 {
                            break;
                        }
                    }
                    let mut theirs = BTreeSet::new();
                    let mut rc = b"0".to_vec();
                    loop {
                        let R::A(Some(mut v)) = c.cmd(&[b"sscan", key, &rc, b"count", b"2"]) else { panic!("sscan") };
                        theirs.extend(bulks(v.pop().unwrap()));
                        let R::B(Some(next)) = v.pop().unwrap() else { panic!("cursor") };
                        if next == b"0" {
                            break;
                        }
                        rc = next;
                    }
                    assert_eq!(ours, theirs);
                }
                _ => {
                    // SMOVE between two sets.
                    let to = (si + 1) % 3;
                    let want = c.cmd(&[b"smove", key, keys[to], &f]);
                    let moved = sets[si].remove(&f);
                    if moved {
                        sets[to].insert(&f, &th);
                    }
                    assert_eq!(int(moved), want, "SMOVE {f:?}");
                }
            }
        }
    }
    for (k, v) in
        [("hash-max-listpack-entries", "128"), ("hash-max-listpack-value", "64"), ("set-max-intset-entries", "512")]
    {
        c.cmd(&[b"config", b"set", k.as_bytes(), v.as_bytes()]);
    }
    c.cmd(&[b"del", b"h", b"s1", b"s2", b"s3"]);
    println!("{n_cmds} commands matched redis-server");
}
