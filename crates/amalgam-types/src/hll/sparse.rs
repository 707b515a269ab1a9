//! The sparse encoding (Redis src/hyperloglog.c, "Sparse representation"):
//! the registers as runs, in order, each run one opcode.
//!
//! ```text
//!   ZERO   00xxxxxx            xxxxxx + 1 registers of 0        (1-64)
//!   XZERO  01xxxxxx yyyyyyyy   xxxxxxyyyyyyyy + 1 registers of 0 (1-16,384)
//!   VAL    1vvvvvxx            xx + 1 registers of vvvvv + 1     (1-4 of 1-32)
//! ```
//! Registers 1000, 1020 and 1021 at 2, 3, 3 and the rest zero read
//! `XZERO:1000 VAL:2,1 ZERO:19 VAL:3,2 XZERO:15362`: 7 bytes for 12 KiB.
//! A valid value's runs cover exactly [`REGISTERS`]; every walk here
//! checks that (Redis's `INVALIDOBJ`).
//!
//! Every loop is bounded by the value's length: each step consumes one
//! or two of its bytes. A byte read past the end is a zero, as in Redis
//! (its `sds` strings end with one), so a damaged value reads, and
//! changes, as it would there.

use super::{dense_set, Corrupt, Registers, DENSE, DENSE_BYTES, ENCODING_AT, HEADER_BYTES, REGISTERS};

/// The largest value a VAL run holds (`HLL_SPARSE_VAL_MAX_VALUE`).
pub(super) const VAL_MAX_VALUE: u8 = 32;
/// The longest VAL run (`HLL_SPARSE_VAL_MAX_LEN`).
const VAL_MAX_LEN: usize = 4;
/// The longest ZERO run (`HLL_SPARSE_ZERO_MAX_LEN`).
const ZERO_MAX_LEN: usize = 64;
/// The longest XZERO run (`HLL_SPARSE_XZERO_MAX_LEN`).
const XZERO_MAX_LEN: usize = 16_384;
const XZERO_BIT: u8 = 0x40;
const VAL_BIT: u8 = 0x80;
const KIND_MASK: u8 = 0xc0;
/// Opcodes the merge step after a change looks at (Redis's `scanlen`).
const MERGE_SCAN_OPCODES: usize = 5;
/// The longest sequence one change writes: XZERO VAL XZERO.
const SPLIT_BYTES_MAX: usize = 5;

const _: () = assert!(REGISTERS <= XZERO_MAX_LEN, "one XZERO covers a new HyperLogLog");

/// One decoded opcode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    /// `run` registers of zero; `wide`: an XZERO (two bytes).
    Zero { run: usize, wide: bool },
    /// `run` registers of `value`.
    Val { value: u8, run: usize },
}

impl Op {
    fn run(self) -> usize {
        match self {
            Op::Zero { run, .. } | Op::Val { run, .. } => run,
        }
    }

    fn bytes(self) -> usize {
        match self {
            Op::Zero { wide: true, .. } => 2,
            _ => 1,
        }
    }
}

/// The byte at `i`, or the zero past the end.
#[inline]
fn byte_at(v: &[u8], i: usize) -> u8 {
    v.get(i).copied().unwrap_or(0)
}

/// The opcode at `p` (`p < v.len()`).
#[inline]
fn op_at(v: &[u8], p: usize) -> Op {
    let b = v[p];
    if b & KIND_MASK == 0 {
        Op::Zero { run: usize::from(b & 0x3f) + 1, wide: false }
    } else if b & VAL_BIT == 0 {
        Op::Zero { run: ((usize::from(b & 0x3f) << 8) | usize::from(byte_at(v, p + 1))) + 1, wide: true }
    } else {
        Op::Val { value: ((b >> 2) & 0x1f) + 1, run: usize::from(b & 0x3) + 1 }
    }
}

fn val_byte(value: u8, run: usize) -> u8 {
    VAL_BIT | ((value - 1) << 2) | (run as u8 - 1)
}

/// Appends the opcode for `run` zero registers (1..=16,384): ZERO up to
/// 64, else XZERO.
fn push_zero_run(out: &mut Vec<u8>, run: usize) {
    if run > ZERO_MAX_LEN {
        let l = run - 1;
        out.push(XZERO_BIT | (l >> 8) as u8);
        out.push((l & 0xff) as u8);
    } else {
        out.push((run - 1) as u8);
    }
}

/// Appends XZERO opcodes for `n` zero registers (a new value's body).
pub(super) fn push_zeros(v: &mut Vec<u8>, mut n: usize) {
    // Bounded: each step covers up to XZERO_MAX_LEN of n.
    while n > 0 {
        let run = n.min(XZERO_MAX_LEN);
        let l = run - 1;
        v.push(XZERO_BIT | (l >> 8) as u8);
        v.push((l & 0xff) as u8);
        n -= run;
    }
}

/// Calls `f(first register, op)` for each opcode of the value `v` (header
/// included), in order, until `f` says stop (false). Returns where the walk
/// ended (the byte offset) and how many registers it covered.
fn walk(v: &[u8], mut f: impl FnMut(usize, Op) -> bool) -> (usize, usize) {
    let (mut p, mut idx) = (HEADER_BYTES, 0usize);
    // Bounded: each step advances p by one or two bytes.
    while p < v.len() {
        let op = op_at(v, p);
        if !f(idx, op) {
            break;
        }
        idx += op.run();
        p += op.bytes();
    }
    (p, idx)
}

/// Redis's `hllSparseToDense`: the dense value of the same registers and
/// header; corrupt unless the runs cover exactly REGISTERS.
pub(super) fn to_dense(v: &[u8]) -> Result<Vec<u8>, Corrupt> {
    let mut dense = vec![0u8; DENSE_BYTES];
    dense[..HEADER_BYTES].copy_from_slice(&v[..HEADER_BYTES]);
    dense[ENCODING_AT] = DENSE;
    let regs = &mut dense[HEADER_BYTES..];
    walk_checked(v, |first, op| {
        if let Op::Val { value, run } = op {
            (first..first + run).for_each(|i| dense_set(regs, i, value));
        }
    })?;
    Ok(dense)
}

/// Redis's `hllMerge` for a sparse value: `max` raised to its registers;
/// corrupt unless the runs cover exactly REGISTERS.
pub(super) fn merge_into(max: &mut Registers, v: &[u8]) -> Result<(), Corrupt> {
    walk_checked(v, |first, op| {
        if let Op::Val { value, run } = op {
            max[first..first + run].iter_mut().for_each(|m| *m = (*m).max(value));
        }
    })
}

/// [`walk`] that stops at the first run reaching past the last register
/// (Redis's "Overflow" check, on every kind of run since the fix of
/// CVE-2025-32023, which Debian's 7.0.15 carries: a value is sound
/// exactly when its runs add up to REGISTERS); `f` sees only runs that
/// fit.
fn walk_checked(v: &[u8], mut f: impl FnMut(usize, Op)) -> Result<(), Corrupt> {
    let (p, idx) = walk(v, |first, op| {
        if first + op.run() > REGISTERS {
            return false;
        }
        f(first, op);
        true
    });
    if p < v.len() || idx != REGISTERS {
        return Err(Corrupt);
    }
    Ok(())
}

/// Redis's `hllSparseRegHisto`: adds to `h` how many registers of the
/// value `v` hold each value; corrupt unless the runs cover exactly
/// REGISTERS (then `h` may hold part of them).
pub(super) fn histogram(v: &[u8], h: &mut super::count::Histogram) -> Result<(), Corrupt> {
    walk_checked(v, |_, op| match op {
        Op::Zero { run, .. } => h[0] += run as u64,
        Op::Val { value, run } => h[usize::from(value)] += run as u64,
    })
}

/// The value of register `index`, None if the value is damaged where it
/// should be (Redis's `hllSparseSet` step 1 would fail).
pub(super) fn register(v: &[u8], index: usize) -> Option<u8> {
    let mut found = None;
    walk(v, |first, op| {
        if index < first + op.run() {
            found = Some(match op {
                Op::Zero { .. } => 0,
                Op::Val { value, .. } => value,
            });
            return false;
        }
        true
    });
    found
}

/// Redis's `hllSparseSet`: raises register `index` to `count` in place,
/// splitting the run that covers it, then merges equal neighbouring VAL
/// runs; marks the cached count stale. Promotes to dense (Redis's
/// `promote:`) when `count` exceeds a VAL's range or the value would pass
/// `sparse_max` bytes. True if the register rose.
///
/// HOW: (1) find the opcode covering `index` and the one before it;
/// (2) a VAL already at least `count` needs nothing; a one-register VAL
/// or ZERO becomes VAL:count,1 in place; anything else is split into up
/// to three opcodes (zeros or the old value on either side, VAL:count,1
/// in the middle: at most 5 bytes, [`SPLIT_BYTES_MAX`]) that replace it;
/// (3) from the opcode before, up to [`MERGE_SCAN_OPCODES`] opcodes are
/// looked at and two adjacent VALs of one value merge while their runs
/// fit one VAL, exactly as Redis does, so the bytes are Redis's.
pub(super) fn set(v: &mut Vec<u8>, index: usize, count: u8, sparse_max: usize) -> Result<bool, Corrupt> {
    if count > VAL_MAX_VALUE {
        return promote(v, index, count);
    }
    // Step 1: the opcode covering `index`.
    let end = v.len();
    let (mut p, mut first, mut prev) = (HEADER_BYTES, 0usize, None);
    let mut op = None;
    // Bounded: one or two bytes per step.
    while p < end {
        let o = op_at(v, p);
        if index < first + o.run() {
            op = Some(o);
            break;
        }
        prev = Some(p);
        p += o.bytes();
        first += o.run();
    }
    let Some(op) = op else { return Err(Corrupt) };
    let last = first + op.run() - 1;

    // Step 2: the trivial cases in place, else the split sequence.
    match op {
        Op::Val { value, .. } if value >= count => return Ok(false),
        Op::Val { run: 1, .. } | Op::Zero { run: 1, wide: false } => v[p] = val_byte(count, 1),
        _ => {
            let mut seq: Vec<u8> = Vec::with_capacity(SPLIT_BYTES_MAX);
            match op {
                Op::Zero { .. } => {
                    if index != first {
                        push_zero_run(&mut seq, index - first);
                    }
                    seq.push(val_byte(count, 1));
                    if index != last {
                        push_zero_run(&mut seq, last - index);
                    }
                }
                Op::Val { value, .. } => {
                    if index != first {
                        seq.push(val_byte(value, index - first));
                    }
                    seq.push(val_byte(count, 1));
                    if index != last {
                        seq.push(val_byte(value, last - index));
                    }
                }
            }
            // Step 3: put the sequence in the opcode's place, unless the
            // value would grow past the limit.
            let old_len = op.bytes();
            let delta = seq.len() as isize - old_len as isize;
            if delta > 0 && end + delta as usize > sparse_max {
                return promote(v, index, count);
            }
            // An XZERO cut short by the value's end: Redis reads its
            // missing byte from the terminator and writes the new length.
            let padded = p + old_len > end;
            if padded {
                v.push(0);
            }
            v.splice(p..p + old_len, seq);
            v.truncate((end as isize + delta) as usize);
        }
    }

    // Step 4: merge adjacent VALs of one value, from the opcode before.
    let mut q = prev.unwrap_or(HEADER_BYTES);
    let mut scan = MERGE_SCAN_OPCODES;
    while q < v.len() && scan > 0 {
        scan -= 1;
        match op_at(v, q) {
            Op::Zero { wide, .. } => {
                q += if wide { 2 } else { 1 };
                continue;
            }
            Op::Val { value, run } => {
                if q + 1 < v.len() {
                    if let Op::Val { value: v2, run: r2 } = op_at(v, q + 1) {
                        if value == v2 && run + r2 <= VAL_MAX_LEN {
                            v[q + 1] = val_byte(value, run + r2);
                            v.remove(q);
                            // Try the merged run with the one after it.
                            continue;
                        }
                    }
                }
                q += 1;
            }
        }
    }
    super::invalidate(v);
    Ok(true)
}

/// Redis's `promote:`: the value made dense, then the register set there
/// (it always rises: a sparse register could not hold `count`, or the
/// split was needed because it was lower).
fn promote(v: &mut Vec<u8>, index: usize, count: u8) -> Result<bool, Corrupt> {
    *v = to_dense(v)?;
    let regs = &mut v[HEADER_BYTES..];
    let rose = super::dense_get(regs, index) < count;
    debug_assert!(rose, "a promoted register rises");
    if rose {
        dense_set(regs, index, count);
    }
    Ok(rose)
}

/// PFDEBUG DECODE (Redis's format: `Z:` XZERO, `z:` ZERO, `v:value,run`).
pub(super) fn decode(v: &[u8]) -> String {
    let mut s = String::new();
    walk(v, |_, op| {
        if !s.is_empty() {
            s.push(' ');
        }
        match op {
            Op::Zero { run, wide: true } => s.push_str(&format!("Z:{run}")),
            Op::Zero { run, wide: false } => s.push_str(&format!("z:{run}")),
            Op::Val { value, run } => s.push_str(&format!("v:{value},{run}")),
        }
        true
    });
    s
}

#[cfg(test)]
mod tests {
    use super::super::{count, new_sparse, REGISTERS};
    use super::*;

    fn with(body: &[u8]) -> Vec<u8> {
        let mut v = new_sparse();
        v.truncate(HEADER_BYTES);
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn redis_example_decodes() {
        // XZERO:1000 VAL:2,1 ZERO:19 VAL:3,2 XZERO:15362
        let mut body = Vec::new();
        push_zero_run(&mut body, 1000);
        body.push(val_byte(2, 1));
        push_zero_run(&mut body, 19);
        body.push(val_byte(3, 2));
        push_zero_run(&mut body, 15362);
        assert_eq!(body.len(), 7);
        let v = with(&body);
        assert_eq!(decode(&v), "Z:1000 v:2,1 z:19 v:3,2 Z:15362");
        assert_eq!(register(&v, 1000), Some(2));
        assert_eq!(register(&v, 1021), Some(3));
        assert_eq!(register(&v, 1022), Some(0));
        let d = to_dense(&v).unwrap();
        assert_eq!(count(&d), count(&v));
    }

    #[test]
    fn splits_and_merges_like_redis() {
        let mut v = new_sparse();
        assert_eq!(set(&mut v, 100, 3, 3000), Ok(true));
        assert_eq!(decode(&v), "Z:100 v:3,1 Z:16283");
        assert_eq!(set(&mut v, 101, 3, 3000), Ok(true));
        assert_eq!(decode(&v), "Z:100 v:3,2 Z:16282", "merged with its left neighbour");
        assert_eq!(set(&mut v, 102, 3, 3000), Ok(true));
        assert_eq!(set(&mut v, 103, 3, 3000), Ok(true));
        assert_eq!(set(&mut v, 104, 3, 3000), Ok(true));
        assert_eq!(decode(&v), "Z:100 v:3,4 v:3,1 Z:16279", "a VAL holds at most 4");
        assert_eq!(set(&mut v, 101, 2, 3000), Ok(false));
        assert_eq!(set(&mut v, 101, 5, 3000), Ok(true));
        assert_eq!(decode(&v), "Z:100 v:3,1 v:5,1 v:3,3 Z:16279", "the split merges on its right");
        assert_eq!(set(&mut v, 0, 1, 3000), Ok(true));
        assert_eq!(decode(&v), "v:1,1 Z:99 v:3,1 v:5,1 v:3,3 Z:16279");
    }

    #[test]
    fn damaged_runs_are_corrupt() {
        let short = with(&[0x00]);
        assert_eq!(to_dense(&short), Err(Corrupt));
        assert_eq!(set(&mut short.clone(), 5, 1, 3000), Err(Corrupt));
        let mut max = [0u8; REGISTERS];
        assert_eq!(merge_into(&mut max, &short), Err(Corrupt));
        let mut long = new_sparse();
        long.push(0x00);
        assert_eq!(count(&long), Err(Corrupt));
        // A VAL run past the last register stops the walk.
        let mut over = with(&[0x7f, 0xfe]);
        over.push(val_byte(1, 2));
        assert_eq!(to_dense(&over), Err(Corrupt));
        // Any run past the last one, even after exactly 16,384 registers
        // (redis-server 7.0.15 with the CVE-2025-32023 fix refuses these).
        for tail in [&[0x7f, 0xff][..], &[0x00], &[val_byte(1, 1)]] {
            let mut v = new_sparse();
            v.extend_from_slice(tail);
            assert_eq!(to_dense(&v), Err(Corrupt), "{tail:?}");
            assert_eq!(merge_into(&mut [0; REGISTERS], &v), Err(Corrupt));
            assert_eq!(count(&v), Err(Corrupt));
        }
    }

    #[test]
    fn grows_past_the_limit_into_dense() {
        let mut v = new_sparse();
        assert_eq!(set(&mut v, 5000, 1, HEADER_BYTES + 4), Ok(true), "XZERO VAL XZERO: 5 bytes");
        assert_eq!(v.len(), DENSE_BYTES);
    }
}
