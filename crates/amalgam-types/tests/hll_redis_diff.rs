//! Differential test of amalgam-types' `hll` against a real redis-server:
//! random PFADD (binary elements of every length, batches), PFMERGE of
//! random keys (sparse, dense, missing), PFCOUNT of one and several keys,
//! PFDEBUG TODENSE, at random `hll-sparse-max-bytes`, and damaged values
//! (bytes flipped, cut, appended) SET into Redis: the library's result
//! must be Redis's reply and Redis's bytes (GET), errors included.
//!
//! Skipped unless `AMALGAM_TYPES_REDIS_ADDR` names a scratch Redis 7.0 (it
//! writes keys `hd:*` and sets hll-sparse-max-bytes, restoring 3000 at the
//! end):
//! `redis-server --port 7777 --save '' --appendonly no &`
//! `AMALGAM_TYPES_REDIS_ADDR=127.0.0.1:7777 cargo test --release -p amalgam-types --test hll_redis_diff -- --nocapture`

use amalgam_types::hll::{self, Encoding, Registers, REGISTERS};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;

/// Commands per run.
const STEPS: usize = 3000;
/// HyperLogLogs the steps pick from.
const KEYS: usize = 6;

#[derive(Debug, PartialEq)]
enum R {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Option<Vec<u8>>),
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
        let mut line = Vec::new();
        self.r.read_until(b'\n', &mut line).unwrap();
        let body = String::from_utf8_lossy(&line[1..line.len() - 2]).to_string();
        match line[0] {
            b'+' => R::Simple(body),
            b'-' => R::Error(body),
            b':' => R::Int(body.parse().unwrap()),
            b'$' => {
                let n: i64 = body.parse().unwrap();
                if n < 0 {
                    return R::Bulk(None);
                }
                let mut b = vec![0; n as usize + 2];
                self.r.read_exact(&mut b).unwrap();
                b.truncate(n as usize);
                R::Bulk(Some(b))
            }
            c => panic!("reply {c}"),
        }
    }

    fn get(&mut self, k: &[u8]) -> Option<Vec<u8>> {
        match self.cmd(&[b"GET", k]) {
            R::Bulk(b) => b,
            r => panic!("GET: {r:?}"),
        }
    }
}

struct Rng(u64);
impl Rng {
    fn n(&mut self, m: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % m
    }
}

const CORRUPT: &str = "INVALIDOBJ Corrupted HLL object detected";
const NOT_HLL: &str = "WRONGTYPE Key is not a valid HyperLogLog string value.";

/// The model: Redis's PFADD on `v` (None: no key).
fn pfadd(v: Option<&[u8]>, elements: &[Vec<u8>], sparse_max: usize) -> (R, Option<Vec<u8>>) {
    let (mut w, mut changed) = match v {
        None => (hll::new_sparse(), true),
        Some(v) if hll::check(v).is_err() => return (R::Error(NOT_HLL.into()), None),
        Some(v) => (v.to_vec(), false),
    };
    for e in elements {
        match hll::add(&mut w, e, sparse_max) {
            Ok(c) => changed |= c,
            Err(_) => return (R::Error(CORRUPT.into()), None),
        }
    }
    if changed {
        hll::invalidate(&mut w);
        (R::Int(1), Some(w))
    } else {
        (R::Int(0), None)
    }
}

/// The model: merged registers of `values`, whether any is dense; or the
/// error Redis answers.
fn merge(values: &[Option<Vec<u8>>]) -> Result<(Box<Registers>, bool), R> {
    let mut max: Box<Registers> = vec![0u8; REGISTERS].into_boxed_slice().try_into().unwrap();
    let mut dense = false;
    for v in values.iter().flatten() {
        let e = hll::check(v).map_err(|_| R::Error(NOT_HLL.into()))?;
        dense |= e == Encoding::Dense;
        hll::merge_into(&mut max, v).map_err(|_| R::Error(CORRUPT.into()))?;
    }
    Ok((max, dense))
}

#[test]
fn hll_matches_redis() {
    let Some(addr) = std::env::var("AMALGAM_TYPES_REDIS_ADDR").ok().filter(|s| !s.is_empty()) else {
        eprintln!("note: AMALGAM_TYPES_REDIS_ADDR is not set; skipping the HyperLogLog differential test");
        return;
    };
    let s = TcpStream::connect(&addr).unwrap();
    let mut c = Conn { w: s.try_clone().unwrap(), r: BufReader::new(s) };
    // A failure names its seed; AMALGAM_TYPES_HLL_SEED replays it.
    let seed = std::env::var("AMALGAM_TYPES_HLL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x9E37_79B9_7F4A_7C15 ^ u64::from(std::process::id()));
    eprintln!("seed {seed}");
    let mut rng = Rng(seed);
    let keys: Vec<Vec<u8>> = (0..KEYS).map(|i| format!("hd:{i}").into_bytes()).collect();
    for k in &keys {
        c.cmd(&[b"DEL", k]);
    }
    let mut sparse_max = hll::SPARSE_MAX_BYTES_DEFAULT;
    c.cmd(&[b"CONFIG", b"SET", b"hll-sparse-max-bytes", sparse_max.to_string().as_bytes()]);
    let mut damaged = 0;
    for step in 0..STEPS {
        let k = &keys[rng.n(KEYS as u64) as usize];
        let before = c.get(k);
        match rng.n(20) {
            0 => {
                sparse_max = [0usize, 30, 100, 500, 3000, 3000, 20_000][rng.n(7) as usize];
                c.cmd(&[b"CONFIG", b"SET", b"hll-sparse-max-bytes", sparse_max.to_string().as_bytes()]);
            }
            1..=9 => {
                let n = [1u64, 3, 20, 200][rng.n(4) as usize];
                let mut elements: Vec<Vec<u8>> = Vec::new();
                for _ in 0..rng.n(n) + 1 {
                    // Small alphabets repeat elements; any byte, any tail.
                    let alphabet = if rng.n(2) == 0 { 4 } else { 256 };
                    let len = rng.n(24);
                    elements.push((0..len).map(|_| rng.n(alphabet) as u8).collect());
                }
                // On a damaged value, one element per PFADD (see the SET
                // below: Redis's second element could read a byte its first
                // left past the end).
                if before.as_deref().is_some_and(|v| hll::check(v).is_ok() && hll::count(v).is_err()) {
                    elements.truncate(1);
                }
                let (want, after) = pfadd(before.as_deref(), &elements, sparse_max);
                let mut args: Vec<&[u8]> = vec![b"PFADD", k];
                args.extend(elements.iter().map(|e| &e[..]));
                let got = c.cmd(&args);
                if got != want {
                    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
                    eprintln!("before {:?}", before.as_deref().map(hex));
                    eprintln!(
                        "elements {:?} sparse_max {sparse_max}",
                        elements.iter().map(|e| hex(e)).collect::<Vec<_>>()
                    );
                    eprintln!("after {:?}", c.get(k).as_deref().map(hex));
                }
                assert_eq!(got, want, "step {step}: PFADD");
                if let (R::Int(1), Some(after)) = (&want, after) {
                    let redis = c.get(k);
                    if redis.as_ref() != Some(&after) {
                        let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
                        eprintln!("before {:?}", before.as_deref().map(hex));
                        eprintln!(
                            "elements {:?} sparse_max {sparse_max}",
                            elements.iter().map(|e| hex(e)).collect::<Vec<_>>()
                        );
                        eprintln!("redis  {:?}", redis.as_deref().map(hex));
                        eprintln!("model  {:?}", hex(&after));
                        eprintln!("redis  {:?}", redis.as_deref().map(hll::decode));
                        eprintln!("model  {:?}", hll::decode(&after));
                    }
                    assert!(redis.as_ref() == Some(&after), "step {step}: PFADD's bytes");
                    // A damaged value Redis changed may hide a byte past
                    // its end (the split of a cut-short XZERO writes its
                    // last byte there), which Redis's next change reads: a
                    // SET of the same bytes ends the string in a zero
                    // again, as this code always reads (hll.rs, "Corruption").
                    if hll::count(&after).is_err() {
                        assert_eq!(c.cmd(&[b"SET", k, &after]), R::Simple("OK".into()));
                    }
                }
            }
            10..=12 => {
                let srcs: Vec<&Vec<u8>> = (0..rng.n(3)).map(|_| &keys[rng.n(KEYS as u64) as usize]).collect();
                let mut values = vec![before.clone()];
                values.extend(srcs.iter().map(|s| c.get(s)));
                let mut args: Vec<&[u8]> = vec![b"PFMERGE", k];
                args.extend(srcs.iter().map(|s| &s[..]));
                let got = c.cmd(&args);
                match merge(&values) {
                    Err(e) => assert_eq!(got, e, "step {step}: PFMERGE"),
                    Ok((max, dense)) => {
                        assert_eq!(got, R::Simple("OK".into()), "step {step}: PFMERGE");
                        let want = hll::merged(before.as_deref(), &max, dense, sparse_max).unwrap();
                        assert!(c.get(k) == Some(want), "step {step}: PFMERGE's bytes");
                    }
                }
            }
            13..=15 => {
                let got = c.cmd(&[b"PFCOUNT", k]);
                let want = match before.as_deref().map(|v| (hll::check(v), v)) {
                    None => R::Int(0),
                    Some((Err(_), _)) => R::Error(NOT_HLL.into()),
                    Some((Ok(_), v)) => match hll::cached(v).ok_or(()).or_else(|_| hll::count(v).map_err(|_| ())) {
                        Ok(n) => R::Int(n as i64),
                        Err(()) => R::Error(CORRUPT.into()),
                    },
                };
                assert_eq!(got, want, "step {step}: PFCOUNT");
                if let (R::Int(n), Some(mut v)) = (&want, before) {
                    if hll::cached(&v).is_none() {
                        hll::set_cached(&mut v, *n as u64);
                    }
                    assert!(c.get(k) == Some(v), "step {step}: PFCOUNT's cache");
                }
            }
            16 => {
                let other = &keys[rng.n(KEYS as u64) as usize];
                let values = [before.clone(), c.get(other)];
                let want = match merge(&values) {
                    Ok((max, _)) => R::Int(hll::count_registers(&max) as i64),
                    Err(e) => e,
                };
                assert_eq!(c.cmd(&[b"PFCOUNT", k, other]), want, "step {step}: PFCOUNT of two");
            }
            17 => {
                let Some(v) = before.filter(|v| hll::check(v).is_ok()) else { continue };
                let mut d = v.clone();
                let want = match hll::to_dense(&mut d) {
                    Ok(converted) => R::Int(i64::from(converted)),
                    Err(_) => R::Error(CORRUPT.into()),
                };
                assert_eq!(c.cmd(&[b"PFDEBUG", b"TODENSE", k]), want, "step {step}: TODENSE");
                if want == R::Int(1) {
                    assert!(c.get(k) == Some(d), "step {step}: TODENSE's bytes");
                }
            }
            _ => {
                // Damage the value (a sparse one, mostly: a dense one of
                // another length is no HyperLogLog).
                let Some(mut v) = before else { continue };
                let body = v.len().saturating_sub(hll::HEADER_BYTES).max(1);
                match rng.n(4) {
                    0 => v.truncate(hll::HEADER_BYTES + rng.n(body as u64) as usize),
                    1 => v.extend((0..rng.n(3) + 1).map(|_| rng.n(256) as u8)),
                    _ if v.len() > hll::HEADER_BYTES => {
                        let at = hll::HEADER_BYTES + rng.n(body as u64) as usize;
                        v[at] = rng.n(256) as u8;
                    }
                    _ => {}
                }
                damaged += 1;
                assert_eq!(c.cmd(&[b"SET", k, &v]), R::Simple("OK".into()));
            }
        }
    }
    c.cmd(&[b"CONFIG", b"SET", b"hll-sparse-max-bytes", b"3000"]);
    for k in &keys {
        c.cmd(&[b"DEL", k]);
    }
    eprintln!("{STEPS} steps, {damaged} damaged values, all as Redis");
}
