//! PFSELFTEST: Redis's self test of its HyperLogLog (Redis
//! src/hyperloglog.c, `pfselftestCommand`), run on this code.
//!
//! 1. Registers: [`REGISTER_CYCLES`] times, every dense register is set
//!    to a random value and all are read back (a register's write must
//!    not disturb its neighbours, with which it shares bytes).
//! 2. Estimates: [`ELEMENTS`] distinct elements go into a dense and a
//!    sparse HyperLogLog side by side; at 1, 10, 100, … elements the
//!    sparse one must still be sparse while small (below half of
//!    `hll-sparse-max-bytes` elements), both must count alike, and the
//!    count must be within 6 standard errors (1.04/√m each; 1 at 10
//!    elements) of the truth.
//!
//! Bounded: REGISTER_CYCLES × 16,384 register writes and reads, ELEMENTS
//! additions to each HyperLogLog, 8 counts of each. Redis runs the same
//! amount (its `HLL_TEST_CYCLES` and ten million elements); like Redis's,
//! the command holds its thread for it (about a second).

use super::{add, count, dense_get, dense_set, encoding, new_sparse, Encoding, DENSE_BYTES, HEADER_BYTES, REGISTERS};
use super::{REGISTER_MAX, SPARSE};

/// Rounds of test 1 (Redis's `HLL_TEST_CYCLES`).
pub const REGISTER_CYCLES: usize = 1000;
/// Elements of test 2 (Redis's ten million).
pub const ELEMENTS: u64 = 10_000_000;
/// How many standard errors an estimate may be off.
const ERROR_STDDEVS: f64 = 6.0;

/// Runs the self test with Redis's sizes; Err is the reply's error text
/// (Redis's `TESTFAILED …`). `seed` varies the values and elements.
pub fn self_test(seed: u64, sparse_max: usize) -> Result<(), String> {
    run(seed, sparse_max, REGISTER_CYCLES, ELEMENTS)
}

/// A SplitMix64 stream (the test's `rand()`).
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

fn run(seed: u64, sparse_max: usize, cycles: usize, elements: u64) -> Result<(), String> {
    let mut rng = Random(seed);
    // Test 1: register access.
    let mut regs = vec![0u8; DENSE_BYTES - HEADER_BYTES];
    let mut want = vec![0u8; REGISTERS];
    for _ in 0..cycles {
        for (i, w) in want.iter_mut().enumerate() {
            *w = (rng.next() as u8) & REGISTER_MAX;
            dense_set(&mut regs, i, *w);
        }
        if let Some(i) = (0..REGISTERS).find(|&i| dense_get(&regs, i) != want[i]) {
            return Err(format!("TESTFAILED Register {i} should be {} but is {}", want[i], dense_get(&regs, i)));
        }
    }

    // Test 2: approximation error, dense and sparse side by side.
    let mut dense = new_sparse();
    super::to_dense(&mut dense).map_err(|_| "TESTFAILED dense/sparse disagree".to_string())?;
    let mut sparse = new_sparse();
    debug_assert_eq!(sparse[4], SPARSE);
    let relerr = 1.04 / (REGISTERS as f64).sqrt();
    let elements_seed = rng.next();
    let mut checkpoint: u64 = 1;
    for j in 1..=elements {
        let element = (j ^ elements_seed).to_le_bytes();
        // A dense value never promotes; a fresh one is never corrupt.
        let _ = add(&mut dense, &element, usize::MAX);
        let _ = add(&mut sparse, &element, sparse_max);
        if j != checkpoint {
            continue;
        }
        if j < (sparse_max / 2) as u64 && encoding(&sparse) != Encoding::Sparse {
            return Err("TESTFAILED sparse encoding not used".into());
        }
        let d = count(&dense).unwrap_or(u64::MAX);
        if Ok(d) != count(&sparse) {
            return Err("TESTFAILED dense/sparse disagree".into());
        }
        let abserr = checkpoint.abs_diff(d);
        let maxerr = if j == 10 { 1 } else { (relerr * ERROR_STDDEVS * checkpoint as f64).ceil() as u64 };
        if abserr > maxerr {
            return Err(format!("TESTFAILED Too big error. card:{checkpoint} abserr:{abserr}"));
        }
        checkpoint *= 10;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_run_passes() {
        assert_eq!(run(1, 3000, 3, 100_000), Ok(()));
        assert_eq!(run(2, 0, 1, 1000), Ok(()), "no sparse check when the limit is 0");
    }
}
