//! The fuzz targets of `fuzz-server/` (memcached's authfile, the ACL
//! rules, a TLS connection through the worker's state machine) inside
//! `cargo test`: their invariants (`tests/fuzz_checks/`) over the
//! committed seeds and [`MUTATIONS_PER_SEED`] deterministic mutations of
//! each ([`TLS_MUTATIONS_PER_SEED`] for the TLS connection, whose inputs
//! cost a handshake each: about a second in all). No coverage guidance — that is `FUZZ_DIR=fuzz-server bash
//! scripts/fuzz.sh` — but every CI run feeds both parsers some thousands
//! of odd inputs without building amalgam-server under libFuzzer's
//! instrumentation, which CI's time budget cannot hold (fuzz-server's
//! Cargo.toml). A failure prints the input that broke the invariant.
//! The corpus's `regress-*` files (inputs that once broke an invariant or
//! the harness) are replayed too, unmutated.

#[path = "fuzz_checks/acl_rules.rs"]
mod acl_rules;
#[path = "fuzz_checks/authfile.rs"]
mod authfile;
#[path = "fuzz_checks/tls_conn.rs"]
mod tls_conn;

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

/// Mutated inputs per seed file.
const MUTATIONS_PER_SEED: usize = 20_000;
/// Mutated inputs per seed file of the TLS connection target.
const TLS_MUTATIONS_PER_SEED: usize = 50;
/// Edits applied to make one mutated input.
const EDITS_MAX: u64 = 8;
/// A mutated input is cut to this many bytes.
const INPUT_BYTES_MAX: usize = 4096;
/// Bytes the parsers give meaning to, tried more often than chance would.
const SPECIAL: &[u8] = b"\0\r\n :+-~%&>#<@*!^\"'\\\xff\x7fonfoffresetallkeysallcommandsnopassuser";

/// xorshift64*: fixed seed, so a failure reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// The committed seeds of `target` (`fuzz-server/corpus/<target>/seed-*`).
fn seeds(target: &str) -> Vec<Vec<u8>> {
    let seeds = corpus_files(target, "seed-");
    assert!(!seeds.is_empty(), "no seeds of {target}");
    seeds
}

/// The committed files of `target`'s corpus whose names start with
/// `prefix`, in name order.
fn corpus_files(target: &str, prefix: &str) -> Vec<Vec<u8>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz-server/corpus").join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(prefix)))
        .collect();
    files.sort();
    files.iter().map(|p| std::fs::read(p).unwrap()).collect()
}

/// One input: `base` after 1..=EDITS_MAX random edits (a byte changed,
/// inserted or deleted, a run duplicated or removed, a piece of another
/// seed spliced in).
fn mutate(rng: &mut Rng, base: &[u8], pool: &[Vec<u8>]) -> Vec<u8> {
    let mut v = base.to_vec();
    let edits = 1 + rng.next() % EDITS_MAX;
    for _ in 0..edits {
        let pick =
            |rng: &mut Rng| if rng.next() % 2 == 0 { SPECIAL[rng.below(SPECIAL.len())] } else { rng.next() as u8 };
        match rng.next() % 6 {
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] = pick(rng);
            }
            1 => {
                let i = rng.below(v.len() + 1);
                let b = pick(rng);
                v.insert(i, b);
            }
            2 if !v.is_empty() => {
                let i = rng.below(v.len());
                let n = 1 + rng.below((v.len() - i).min(16));
                v.drain(i..i + n);
            }
            3 if !v.is_empty() => {
                let i = rng.below(v.len());
                let n = 1 + rng.below((v.len() - i).min(64));
                let run = v[i..i + n].to_vec();
                let at = rng.below(v.len() + 1);
                v.splice(at..at, run);
            }
            _ => {
                let other = &pool[rng.below(pool.len())];
                if !other.is_empty() {
                    let i = rng.below(other.len());
                    let n = 1 + rng.below((other.len() - i).min(64));
                    let at = rng.below(v.len() + 1);
                    v.splice(at..at, other[i..i + n].iter().copied());
                }
            }
        }
        v.truncate(INPUT_BYTES_MAX);
    }
    v
}

/// Runs `check` over the seeds of `target` and `mutations` mutations of
/// each (`FUZZ_SMOKE_MUTATIONS=N` in the environment: N instead, for a
/// longer run by hand; the count run is printed).
fn run(target: &str, seed: u64, mutations: usize, check: fn(&[u8])) {
    let mutations = std::env::var("FUZZ_SMOKE_MUTATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(mutations);
    let pool = seeds(target);
    let mut rng = Rng(seed);
    let one = |input: &[u8]| {
        if let Err(e) = catch_unwind(AssertUnwindSafe(|| check(input))) {
            eprintln!("{target}: the input that broke it: {:?}", String::from_utf8_lossy(input));
            eprintln!("as bytes: {input:?}");
            resume_unwind(e);
        }
    };
    // Inputs that once broke an invariant or the harness
    // (`regress-*`): replayed as they are, not mutated (each may be
    // long: a seed's mutations are the cheap ones).
    let regressions = corpus_files(target, "regress-");
    for s in pool.iter().chain(&regressions) {
        one(s);
    }
    for s in &pool {
        for _ in 0..mutations {
            one(&mutate(&mut rng, s, &pool));
        }
    }
    eprintln!("{target}: {} inputs, invariants held", pool.len() * (1 + mutations) + regressions.len());
}

#[test]
fn authfile_invariants_hold_over_mutated_seeds() {
    run("authfile", 0x9e37_79b9_7f4a_7c15, MUTATIONS_PER_SEED, authfile::check);
}

#[test]
fn acl_rules_invariants_hold_over_mutated_seeds() {
    run("acl_rules", 0xd1b5_4a32_d192_ed03, MUTATIONS_PER_SEED, acl_rules::check);
}

#[test]
fn tls_conn_invariants_hold_over_mutated_seeds() {
    run("tls_conn", 0x6a09_e667_f3bc_c908, TLS_MUTATIONS_PER_SEED, tls_conn::check);
}

/// A pipelined round over TLS costs the worker one socket read, as over
/// plaintext: the read that brought the round's records came back short,
/// so the socket is drained and the turn waits for the next event instead
/// of reading again only to hear EAGAIN (tls.rs `read`; it used to, one
/// `recv` more per round). Not a fuzz target: it drives the same
/// connection (`tls_conn`'s fake socket and client).
#[test]
fn a_tls_round_reads_the_socket_once() {
    let gets: Vec<u8> = (0..16).flat_map(|_| b"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n".to_vec()).collect();
    let (reads, replies) = tls_conn::one_round(amalgam_server::worker::Protocol::Resp, &gets);
    assert_eq!(replies, b"$-1\r\n".repeat(16), "16 GETs of a missing key");
    assert_eq!(reads, 1, "socket reads for one round of 16 GETs");
    let (reads, replies) = tls_conn::one_round(amalgam_server::worker::Protocol::Memcached, b"version\r\n");
    assert!(replies.starts_with(b"VERSION "), "{:?}", String::from_utf8_lossy(&replies));
    assert_eq!(reads, 1, "socket reads for one memcached command");
}

/// The seeds whose ClientHello is rustls's own (the others:
/// `fuzz-server/tls_conn_seeds.py`, from `openssl s_client`): run with
/// `--ignored` to write them again.
#[test]
#[ignore]
fn write_rustls_hello_seeds() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz-server/corpus/tls_conn");
    for (name, tls12, f0, f1) in [
        ("seed-raw-rustls13-resp", false, 0b0000_0001, 0b0100),
        ("seed-raw-rustls12-memcached", true, 0b0010_1000, 0b0010),
    ] {
        let hello = tls_conn::rustls_hello(tls12);
        let mut seed = vec![f0, f1];
        seed.extend_from_slice(&hello);
        std::fs::write(dir.join(name), seed).unwrap();
    }
}
