//! Counting: the histogram of register values and the estimate from it,
//! as Redis 7 computes them (Redis src/hyperloglog.c, `hllCount`,
//! `hllSigma`, `hllTau`), so a count here is redis-server's to the last
//! bit.
//!
//! ## The estimator (Ertl 2017, "New cardinality estimation algorithms
//! for HyperLogLog sketches", arXiv:1702.01284, §3, Algorithm 6)
//! With m registers, C_k of them at value k and q = 50 hash bits per run:
//! ```text
//!   z = m·τ(1 − C_{q+1}/m)
//!   for k = q down to 1:  z = (z + C_k) · ½
//!   z = z + m·σ(C_0/m)
//!   E = α∞·m² / z,   α∞ = 1 / (2 ln 2)
//! ```
//! σ and τ are series (§3.2) summed until the double stops changing, as
//! Redis sums them. The order of every operation is Redis's: doubles
//! are not associative, and a different order could round the final
//! count differently. (Redis's C writes `pow(1 - x, 2)`, which its
//! compiler turns into `(1 - x) * (1 - x)`; a product is exact to the
//! last bit either way.) The estimate is rounded half away from zero,
//! as `llroundl` rounds.
//!
//! σ(1) is infinite (every register zero): z is infinite and E is 0.

use super::{Registers, REGISTERS};

/// Slots of a register histogram: every value a 6-bit register holds
/// (Redis's `reghisto[64]`; hashing yields at most Q + 1 = 51).
pub(super) const HISTOGRAM_SLOTS: usize = 64;
/// Registers per value (at most REGISTERS in all).
pub(super) type Histogram = [u64; HISTOGRAM_SLOTS];
/// α∞ = 1 / (2 ln 2) (Redis's `HLL_ALPHA_INF`).
const ALPHA_INF: f64 = 0.721_347_520_444_481_7;
/// σ's and τ's series stop when the sum stops changing: σ after about
/// 60 terms (x² per term underflows), τ after about 60 (the weight halves
/// per term). A bound far past that keeps the loops finite whatever
/// happens.
const SERIES_TERMS_MAX: usize = 4096;

const _: () = assert!(super::Q as usize + 1 < HISTOGRAM_SLOTS);

/// Redis's `hllDenseRegHisto`: adds the dense registers `regs` to `h`.
pub(super) fn dense_histogram(regs: &[u8], h: &mut Histogram) {
    debug_assert!(regs.len() * 8 >= REGISTERS * super::REGISTER_BITS);
    // Four registers per three bytes; the last group is whole (16,384
    // registers = 4,096 groups).
    for group in regs.chunks_exact(3).take(REGISTERS / 4) {
        let (b0, b1, b2) = (u32::from(group[0]), u32::from(group[1]), u32::from(group[2]));
        h[(b0 & 63) as usize] += 1;
        h[((b0 >> 6 | b1 << 2) & 63) as usize] += 1;
        h[((b1 >> 4 | b2 << 4) & 63) as usize] += 1;
        h[((b2 >> 2) & 63) as usize] += 1;
    }
}

/// The cardinality of registers held one per byte (PFCOUNT of several
/// keys: their merge; Redis's `HLL_RAW`).
///
/// Eight registers are read as one word (Redis's `hllRawRegHisto`): a
/// union of a few sparse HyperLogLogs leaves most words zero, and a zero
/// word is eight registers at 0 in one test and one add.
pub fn count_registers(regs: &Registers) -> u64 {
    let mut h: Histogram = [0; HISTOGRAM_SLOTS];
    for word in regs.chunks_exact(8) {
        let w: [u8; 8] = word.try_into().expect("chunks of eight");
        if u64::from_ne_bytes(w) == 0 {
            h[0] += 8;
        } else {
            for r in w {
                h[usize::from(r) & (HISTOGRAM_SLOTS - 1)] += 1;
            }
        }
    }
    estimate(&h)
}

/// Ertl's estimate from a histogram of [`REGISTERS`] registers.
pub(super) fn estimate(h: &Histogram) -> u64 {
    let q = super::Q as usize;
    let m = REGISTERS as f64;
    let mut z = m * tau((m - h[q + 1] as f64) / m);
    for k in (1..=q).rev() {
        z += h[k] as f64;
        z *= 0.5;
    }
    z += m * sigma(h[0] as f64 / m);
    (ALPHA_INF * m * m / z).round() as u64
}

/// Ertl's σ(x) = x + Σ_{k≥1} x^(2^k)·2^(k−1) (Redis's `hllSigma`).
fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    for _ in 0..SERIES_TERMS_MAX {
        x *= x;
        let before = z;
        z += x * y;
        y += y;
        if before == z {
            break;
        }
    }
    z
}

/// Ertl's τ(x) = (1 − x − Σ_{k≥1} (1 − x^(2^−k))²·2^−k) / 3 (Redis's
/// `hllTau`).
fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    for _ in 0..SERIES_TERMS_MAX {
        x = x.sqrt();
        let before = z;
        y *= 0.5;
        let d = 1.0 - x;
        z -= d * d * y;
        if before == z {
            break;
        }
    }
    z / 3.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_is_zero_and_one_register_is_one() {
        let mut regs = [0u8; REGISTERS];
        assert_eq!(count_registers(&regs), 0);
        regs[7] = 1;
        assert_eq!(count_registers(&regs), 1);
        regs[9] = 51;
        assert_eq!(count_registers(&regs), 2);
    }

    #[test]
    fn series_limits() {
        assert_eq!(sigma(0.0), 0.0);
        assert!(sigma(1.0).is_infinite());
        assert_eq!(tau(0.0), 0.0);
        assert_eq!(tau(1.0), 0.0);
        assert!(tau(0.5) > 0.0 && tau(0.5) < 0.5);
        assert!(sigma(0.999_999) > 1000.0);
    }

    #[test]
    fn dense_histogram_counts_every_register() {
        let mut regs = vec![0u8; (REGISTERS * 6) / 8];
        for i in 0..REGISTERS {
            super::super::dense_set(&mut regs, i, (i % 7) as u8);
        }
        let mut h: Histogram = [0; HISTOGRAM_SLOTS];
        dense_histogram(&regs, &mut h);
        assert_eq!(h.iter().sum::<u64>() as usize, REGISTERS);
        assert_eq!(h[0] as usize, REGISTERS.div_ceil(7));
        assert_eq!(h[7], 0);
    }
}
