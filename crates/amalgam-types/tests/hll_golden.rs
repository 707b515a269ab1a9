//! HyperLogLogs made by redis-server 7.0.15 (`hll_redis_7_0_15.txt`,
//! written by scripts/hll-golden.py; its header says what each line is)
//! rebuilt by amalgam-types' hll.rs: the same bytes after every PFADD and
//! PFMERGE, the same PFCOUNT of one key and of several, the same cached
//! count in the header. Then values damaged at random, which must give
//! errors, never a panic; and sparse against dense on the same elements.

use amalgam_types::hll::{self, Encoding, Registers, REGISTERS};
use std::collections::HashMap;

const GOLDEN: &str = include_str!("hll_redis_7_0_15.txt");

fn unhex(s: &str) -> Vec<u8> {
    if s == "-" {
        return Vec::new();
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex")).collect()
}

/// PFADD of `elements` into a new key, as Redis runs it.
fn pfadd_new<'e>(elements: impl IntoIterator<Item = &'e [u8]>, sparse_max: usize) -> Vec<u8> {
    let mut v = hll::new_sparse();
    for e in elements {
        hll::add(&mut v, e, sparse_max).expect("a fresh value is sound");
    }
    hll::invalidate(&mut v);
    v
}

/// The values of the `add` lines after PFCOUNT cached their counts.
fn counted_values() -> HashMap<String, Vec<u8>> {
    let mut values = HashMap::new();
    for line in GOLDEN.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        if f[0] != "add" {
            continue;
        }
        let mut v = unhex(f[6]);
        v[..hll::HEADER_BYTES].copy_from_slice(&unhex(f[7]));
        values.insert(f[1].to_string(), v);
    }
    values
}

#[test]
fn pfadd_and_pfcount_match_redis() {
    let mut seen = 0;
    for line in GOLDEN.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        match f[0] {
            "add" => {
                let (name, prefix) = (f[1], f[2]);
                let (n, sparse_max, want): (u64, usize, u64) =
                    (f[3].parse().unwrap(), f[4].parse().unwrap(), f[5].parse().unwrap());
                let elements: Vec<String> = (0..n).map(|i| format!("{prefix}{i}")).collect();
                let v = pfadd_new(elements.iter().map(|e| e.as_bytes()), sparse_max);
                let redis = unhex(f[6]);
                assert!(v == redis, "{name}: bytes differ ({} against Redis's {})", v.len(), redis.len());
                assert!(hll::check(&v).is_ok());
                assert_eq!(hll::cached(&v), None, "{name}");
                assert_eq!(hll::count(&v), Ok(want), "{name}");
                let mut counted = v.clone();
                hll::set_cached(&mut counted, want);
                assert_eq!(&counted[..hll::HEADER_BYTES], &unhex(f[7])[..], "{name}: the cached count");
                if hll::encoding(&v) == Encoding::Sparse {
                    let mut d = v.clone();
                    assert_eq!(hll::to_dense(&mut d), Ok(true));
                    assert_eq!(hll::count(&d), Ok(want), "{name}: dense counts alike");
                }
            }
            "one" => {
                let element = unhex(f[1]);
                assert!(pfadd_new([&element[..]], hll::SPARSE_MAX_BYTES_DEFAULT) == unhex(f[2]), "{}", f[1]);
            }
            _ => continue,
        }
        seen += 1;
    }
    assert!(seen >= 30, "the golden file was read ({seen} lines)");
}

#[test]
fn pfmerge_and_union_match_redis() {
    let values = counted_values();
    let mut seen = 0;
    for line in GOLDEN.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        match f[0] {
            "merge" => {
                let (name, dest) = (f[1], (f[2] != "-").then(|| &values[f[2]]));
                let want: u64 = f[4].parse().unwrap();
                let mut max: Registers = [0; REGISTERS];
                let mut dense = false;
                for v in dest.into_iter().chain(f[3].split(',').map(|s| &values[s])) {
                    dense |= hll::encoding(v) == Encoding::Dense;
                    hll::merge_into(&mut max, v).unwrap();
                }
                let m = hll::merged(dest.map(|d| &d[..]), &max, dense, hll::SPARSE_MAX_BYTES_DEFAULT).unwrap();
                assert!(m == unhex(f[5]), "{name}: bytes differ ({} against {})", m.len(), f[5].len() / 2);
                assert_eq!(hll::count(&m), Ok(want), "{name}");
            }
            "union" => {
                let want: u64 = f[1].parse().unwrap();
                let mut max: Registers = [0; REGISTERS];
                for n in f[2].split(',') {
                    hll::merge_into(&mut max, &values[n]).unwrap();
                }
                assert_eq!(hll::count_registers(&max), want, "{}", f[2]);
            }
            _ => continue,
        }
        seen += 1;
    }
    assert!(seen >= 8, "{seen}");
}

/// A small deterministic stream (xorshift64*).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

#[test]
fn damaged_values_answer_errors_not_panics() {
    let values = counted_values();
    let mut rng = Rng(0x9e37_79b9);
    let mut corrupt = 0;
    for name in ["a5", "b100", "c300", "d1000", "s500"] {
        let good = &values[name];
        for _ in 0..400 {
            let mut v = good.clone();
            // Damage: flip bytes, cut the end, or add bytes.
            match rng.next() % 3 {
                0 => {
                    for _ in 0..=rng.next() % 3 {
                        let at = hll::HEADER_BYTES + (rng.next() as usize) % (v.len() - hll::HEADER_BYTES);
                        v[at] ^= rng.next() as u8 | 1;
                    }
                }
                1 => v.truncate(v.len() - 1 - (rng.next() as usize) % (v.len() - hll::HEADER_BYTES)),
                _ => v.extend((0..=rng.next() % 4).map(|_| rng.next() as u8)),
            }
            if hll::check(&v).is_err() {
                continue;
            }
            let counted = hll::count(&v);
            corrupt += usize::from(counted.is_err());
            let _ = hll::decode(&v);
            let mut d = v.clone();
            let dense = hll::to_dense(&mut d);
            let merged = hll::merge_into(&mut [0; REGISTERS], &v);
            assert_eq!(dense.is_ok(), merged.is_ok(), "{name}: one walk {:?} {:?} {}", dense, merged, hll::decode(&v));
            for e in 0..20u32 {
                let mut w = v.clone();
                if hll::add(&mut w, &e.to_le_bytes(), 3000).is_ok() {
                    assert!(hll::check(&w).is_ok(), "{name}: a write keeps a HyperLogLog");
                }
            }
            let _ = hll::would_change(&v, [&b"x"[..], b"y"]);
        }
    }
    assert!(corrupt > 100, "the damage was noticed ({corrupt})");
}

#[test]
fn sparse_and_dense_hold_the_same_registers() {
    let mut rng = Rng(7);
    for sparse_max in [30, 200, 3000, 20_000] {
        let mut sparse = hll::new_sparse();
        let mut dense = hll::new_sparse();
        hll::to_dense(&mut dense).unwrap();
        for _ in 0..4000 {
            let e = rng.next().to_le_bytes();
            let a = hll::add(&mut sparse, &e, sparse_max).unwrap();
            let b = hll::add(&mut dense, &e, sparse_max).unwrap();
            assert_eq!(a, b, "the same register rose in both");
        }
        let mut s = sparse.clone();
        hll::to_dense(&mut s).unwrap();
        assert!(s[hll::HEADER_BYTES..] == dense[hll::HEADER_BYTES..], "sparse_max {sparse_max}");
        assert!(sparse.len() <= sparse_max.max(hll::DENSE_BYTES));
    }
}
