//! HyperLogLog exactly as Redis 7.0 stores it (Redis src/hyperloglog.c):
//! a plain string value, so GET, SET, DUMP, RESTORE, the log and
//! replication carry it unchanged, a value redis-server made counts the
//! same here, and one made here counts the same in redis-server.
//!
//! Everything is a pure function over the value's bytes (`&[u8]`, or a
//! `Vec<u8>` a write changes): the command adapters (amalgam-commands
//! `hll.rs`) read a value, call these, and store the result.
//!
//! ## The value (Redis's `struct hllhdr` and what follows it)
//! ```text
//!  0      4   5       8                16
//!  +------+---+-------+----------------+-------------------------------+
//!  | HYLL | E | 0 0 0 | cardinality LE | registers                     |
//!  +------+---+-------+----------------+-------------------------------+
//!           E: 0 dense, 1 sparse. Cardinality: the last count, cached;
//!           the top bit of byte 15 set means "stale, recount".
//! ```
//! * **Dense** ([`DENSE_BYTES`] = 16 + 12,288): [`REGISTERS`] 6-bit
//!   registers packed from each byte's least significant bit up, a
//!   register straddling into the next byte (register 1 is byte 0's top
//!   two bits and byte 1's low four):
//!   ```text
//!    byte:   0        1        2        3
//!          |11000000|22221111|33333322|55444444| …   (bit 7 … bit 0)
//!   ```
//! * **Sparse** (`sparse.rs`): a run-length code of the registers: ZERO
//!   `00xxxxxx` (1-64 zero registers), XZERO `01xxxxxx yyyyyyyy` (1-16,384
//!   zero registers), VAL `1vvvvvxx` (1-4 registers of value 1-32). A new
//!   HyperLogLog is sparse: one XZERO of 16,384. It turns dense, for good,
//!   when a register must exceed 32 or the value would pass
//!   `hll-sparse-max-bytes` ([`SPARSE_MAX_BYTES_DEFAULT`]).
//!
//! ## Adding an element (Redis's `hllPatLen`)
//! MurmurHash64A of the element with Redis's seed `0xadc83b19`: the low
//! [`P`] = 14 bits pick the register; the register becomes, if larger,
//! the position of the first set bit among the other [`Q`] = 50 bits
//! (1-based; 51 when all are zero).
//!
//! ## Counting (`count.rs`)
//! Ertl's improved estimator over the histogram of register values, as
//! Redis 7 computes it, to the last bit of the double: the same registers
//! give the same count here and in redis-server.
//!
//! ## Corruption
//! [`check`] is Redis's `isHLLObjectOrReply`: the magic, an encoding of 0
//! or 1, a dense value of exactly [`DENSE_BYTES`]. A sparse value passes
//! whatever its opcodes say; the operations that walk it whole answer
//! [`Corrupt`] (Redis's `INVALIDOBJ`) unless its runs add up to exactly
//! 16,384 registers (Redis 7.0.15 as Debian ships it, with the fix of
//! CVE-2025-32023: a run past the last register is refused, not skipped).
//! Setting one register walks only up to it, as Redis's `hllSparseSet`
//! does, so PFADD can change a damaged value Redis would also change.
//! Where Redis reads the byte past a value's end (its `sds` strings end
//! with a zero byte), these functions read a zero. One case differs: when
//! Redis splits an XZERO cut short by the value's end, the split's last
//! byte lands past the new end, hidden, and Redis's next change of that
//! value reads it there; here it is gone (as it is in Redis after a
//! DUMP/RESTORE or a SET of the same bytes).
//!
//! ## Files
//! | file | what |
//! |---|---|
//! | `hll.rs` | the header, the dense registers, hashing, the operations the commands call |
//! | `hll/sparse.rs` | the sparse encoding: set a register in place, promote, walk |
//! | `hll/count.rs` | register histograms and Ertl's estimator |
//! | `hll/selftest.rs` | PFSELFTEST |

mod count;
mod selftest;
mod sparse;

pub use count::count_registers;
pub use selftest::self_test;

/// Bits of the hash that pick a register (Redis's `HLL_P`).
pub const P: u32 = 14;
/// The hash's other bits, whose run of zeros is counted (`HLL_Q`).
pub const Q: u32 = 64 - P;
/// Registers of every HyperLogLog (`HLL_REGISTERS`).
pub const REGISTERS: usize = 1 << P;
/// Bits of a dense register (`HLL_BITS`): enough for Q + 1.
pub const REGISTER_BITS: usize = 6;
/// The largest value a dense register holds.
pub const REGISTER_MAX: u8 = (1 << REGISTER_BITS) - 1;
/// The header's bytes (`HLL_HDR_SIZE`).
pub const HEADER_BYTES: usize = 16;
/// A dense value's bytes, exactly (`HLL_DENSE_SIZE`): 12,304.
pub const DENSE_BYTES: usize = HEADER_BYTES + (REGISTERS * REGISTER_BITS).div_ceil(8);
/// Redis's `hll-sparse-max-bytes` default.
pub const SPARSE_MAX_BYTES_DEFAULT: usize = 3000;
/// The first four bytes of every HyperLogLog.
pub const MAGIC: &[u8; 4] = b"HYLL";
/// The seed Redis hashes elements with.
const HASH_SEED: u64 = 0xadc8_3b19;

/// Where the header keeps its fields.
const ENCODING_AT: usize = 4;
const CARD_AT: usize = 8;
/// The byte whose top bit marks the cached cardinality stale.
const CARD_STALE_AT: usize = CARD_AT + 7;
const CARD_STALE_BIT: u8 = 0x80;
/// The encoding byte's values (`HLL_DENSE`, `HLL_SPARSE`).
const DENSE: u8 = 0;
const SPARSE: u8 = 1;

const _: () = assert!(Q < REGISTER_MAX as u32, "a dense register holds every run length (Q + 1)");
const _: () = assert!(DENSE_BYTES == 12_304);

/// A HyperLogLog's two representations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    Dense,
    Sparse,
}

impl Encoding {
    /// PFDEBUG ENCODING's name.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Dense => "dense",
            Encoding::Sparse => "sparse",
        }
    }
}

/// A string that is not a HyperLogLog (Redis's `WRONGTYPE Key is not a
/// valid HyperLogLog string value.`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotHll;

/// A HyperLogLog whose sparse runs do not add up (Redis's `INVALIDOBJ
/// Corrupted HLL object detected`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Corrupt;

/// Registers as one byte each, for merging (PFCOUNT of several keys,
/// PFMERGE; Redis's `HLL_RAW`).
pub type Registers = [u8; REGISTERS];

/// Whether `v` is a HyperLogLog, and which kind (Redis's
/// `isHLLObjectOrReply`, past its type check).
pub fn check(v: &[u8]) -> Result<Encoding, NotHll> {
    if v.len() < HEADER_BYTES || &v[..4] != MAGIC {
        return Err(NotHll);
    }
    match v[ENCODING_AT] {
        DENSE if v.len() == DENSE_BYTES => Ok(Encoding::Dense),
        SPARSE => Ok(Encoding::Sparse),
        _ => Err(NotHll),
    }
}

/// A new, empty HyperLogLog as Redis creates one (`createHLLObject`):
/// sparse, one XZERO run of every register, cached cardinality 0.
pub fn new_sparse() -> Vec<u8> {
    let mut v = Vec::with_capacity(HEADER_BYTES + 2 + crate::WRITE_SLACK_BYTES);
    v.extend_from_slice(MAGIC);
    v.extend_from_slice(&[SPARSE, 0, 0, 0]);
    v.extend_from_slice(&[0; 8]);
    sparse::push_zeros(&mut v, REGISTERS);
    v
}

/// A value's bytes copied for a change, with room for a sparse split's
/// few more bytes.
pub fn writable(v: &[u8]) -> Vec<u8> {
    crate::writable_copy(v)
}

/// The cached cardinality, if it is not stale.
pub fn cached(v: &[u8]) -> Option<u64> {
    let card = u64::from_le_bytes(v[CARD_AT..CARD_AT + 8].try_into().expect("8 bytes"));
    (v[CARD_STALE_AT] & CARD_STALE_BIT == 0).then_some(card)
}

/// Caches `card` in the header (valid).
pub fn set_cached(v: &mut [u8], card: u64) {
    v[CARD_AT..CARD_AT + 8].copy_from_slice(&card.to_le_bytes());
}

/// Marks the cached cardinality stale (Redis's `HLL_INVALIDATE_CACHE`:
/// the top bit only, the rest of the old count stays).
pub fn invalidate(v: &mut [u8]) {
    v[CARD_STALE_AT] |= CARD_STALE_BIT;
}

/// Element → (register, run length), Redis's `hllPatLen`.
pub fn pattern(element: &[u8]) -> (usize, u8) {
    let hash = murmur64a(element, HASH_SEED);
    let index = (hash & (REGISTERS as u64 - 1)) as usize;
    // The bit past Q ends every run: at most Q + 1.
    let rest = (hash >> P) | (1 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

/// MurmurHash2, 64-bit version A, as Redis has it (endian-neutral: the
/// blocks are read little-endian).
pub fn murmur64a(key: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = seed ^ (key.len() as u64).wrapping_mul(M);
    let mut blocks = key.chunks_exact(8);
    for block in &mut blocks {
        let mut k = u64::from_le_bytes(block.try_into().expect("8 bytes"));
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = blocks.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate() {
            h ^= u64::from(b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// Dense register `i` of `regs` (the bytes past the header); a byte past
/// the end reads as zero, as Redis's string terminator does.
#[inline]
pub(crate) fn dense_get(regs: &[u8], i: usize) -> u8 {
    let byte = i * REGISTER_BITS / 8;
    let shift = (i * REGISTER_BITS) & 7;
    let b0 = u32::from(regs[byte]);
    let b1 = u32::from(regs.get(byte + 1).copied().unwrap_or(0));
    (((b0 >> shift) | (b1 << (8 - shift))) & u32::from(REGISTER_MAX)) as u8
}

/// Sets dense register `i` of `regs` to `val` (at most [`REGISTER_MAX`]).
#[inline]
pub(crate) fn dense_set(regs: &mut [u8], i: usize, val: u8) {
    let byte = i * REGISTER_BITS / 8;
    let shift = (i * REGISTER_BITS) & 7;
    let (max, v) = (u32::from(REGISTER_MAX), u32::from(val));
    regs[byte] &= !(max << shift) as u8;
    regs[byte] |= (v << shift) as u8;
    // The last register ends inside its byte: nothing spills past it.
    if let Some(next) = regs.get_mut(byte + 1) {
        *next &= !(max >> (8 - shift)) as u8;
        *next |= (v >> (8 - shift)) as u8;
    }
}

/// Raises register `index` of a checked HyperLogLog to `count` if it is
/// lower (Redis's `hllDenseSet` / `hllSparseSet`): true if it changed.
/// A sparse value may turn dense (`sparse_max`: `hll-sparse-max-bytes`).
/// A change of a sparse value marks its cached count stale; of a dense
/// one, not (the caller does, as Redis's PFADD).
pub fn set(v: &mut Vec<u8>, index: usize, count: u8, sparse_max: usize) -> Result<bool, Corrupt> {
    if v[ENCODING_AT] == DENSE {
        let regs = &mut v[HEADER_BYTES..];
        if dense_get(regs, index) >= count {
            return Ok(false);
        }
        dense_set(regs, index, count);
        return Ok(true);
    }
    sparse::set(v, index, count, sparse_max)
}

/// PFADD of one element to a checked HyperLogLog (Redis's `hllAdd`):
/// true if a register rose.
pub fn add(v: &mut Vec<u8>, element: &[u8], sparse_max: usize) -> Result<bool, Corrupt> {
    let (index, count) = pattern(element);
    set(v, index, count, sparse_max)
}

/// Whether adding any of `elements` to the checked HyperLogLog `v` would
/// change it (Redis's `hllAdd` would answer 1 or an error): false lets
/// PFADD of known elements answer 0 without copying the value. One pass
/// over the value per element when sparse.
pub fn would_change<'e>(v: &[u8], elements: impl IntoIterator<Item = &'e [u8]>) -> bool {
    let dense = v[ENCODING_AT] == DENSE;
    elements.into_iter().any(|e| {
        let (index, count) = pattern(e);
        if dense {
            dense_get(&v[HEADER_BYTES..], index) < count
        } else {
            // Too large for a sparse register, a damaged value (an
            // error to report) or a lower register: PFADD must run.
            count > sparse::VAL_MAX_VALUE || sparse::register(v, index).is_none_or(|r| r < count)
        }
    })
}

/// Makes a checked HyperLogLog dense (Redis's `hllSparseToDense`): the
/// header is kept (the cached count stays valid: the registers are the
/// same). True if it was sparse.
pub fn to_dense(v: &mut Vec<u8>) -> Result<bool, Corrupt> {
    if v[ENCODING_AT] == DENSE {
        return Ok(false);
    }
    *v = sparse::to_dense(v)?;
    Ok(true)
}

/// Raises `max` to the registers of a checked HyperLogLog (Redis's
/// `hllMerge`).
pub fn merge_into(max: &mut Registers, v: &[u8]) -> Result<(), Corrupt> {
    if v[ENCODING_AT] == DENSE {
        // Four 6-bit registers per three bytes, decoded a group at a time
        // (as `count::dense_histogram` reads them), not one register's
        // bit offset at a time.
        let regs = &v[HEADER_BYTES..];
        for (group, m) in regs.chunks_exact(3).zip(max.chunks_exact_mut(4)) {
            let (b0, b1, b2) = (group[0], group[1], group[2]);
            let r = [b0 & 63, (b0 >> 6 | b1 << 2) & 63, (b1 >> 4 | b2 << 4) & 63, b2 >> 2];
            for (m, r) in m.iter_mut().zip(r) {
                *m = (*m).max(r);
            }
        }
        return Ok(());
    }
    sparse::merge_into(max, v)
}

/// PFMERGE's result (Redis's `pfmergeCommand`): `dest`'s value (checked,
/// and already merged into `max`), or a new HyperLogLog if None, with
/// every register raised to `max`; dense if any source was (`dense`),
/// else sparse until it must not be; cached count stale.
pub fn merged(dest: Option<&[u8]>, max: &Registers, dense: bool, sparse_max: usize) -> Result<Vec<u8>, Corrupt> {
    let mut v = match dest {
        Some(d) => crate::writable_copy(d),
        None => new_sparse(),
    };
    if dense {
        to_dense(&mut v)?;
    }
    for (i, &m) in max.iter().enumerate().filter(|(_, m)| **m != 0) {
        // Redis ignores this result: every source was walked already.
        let _ = set(&mut v, i, m, sparse_max);
    }
    invalidate(&mut v);
    Ok(v)
}

/// The cardinality of a checked HyperLogLog, counted (not the cache).
pub fn count(v: &[u8]) -> Result<u64, Corrupt> {
    let mut histogram: count::Histogram = [0; count::HISTOGRAM_SLOTS];
    if v[ENCODING_AT] == DENSE {
        count::dense_histogram(&v[HEADER_BYTES..], &mut histogram);
    } else {
        sparse::histogram(v, &mut histogram)?;
    }
    Ok(count::estimate(&histogram))
}

/// The registers of a checked dense HyperLogLog, in order (PFDEBUG
/// GETREG).
pub fn dense_registers(v: &[u8]) -> impl Iterator<Item = u8> + '_ {
    let regs = &v[HEADER_BYTES..];
    (0..REGISTERS).map(move |i| dense_get(regs, i))
}

/// PFDEBUG DECODE of a checked sparse HyperLogLog: its opcodes as
/// `Z:<run>` (XZERO), `z:<run>` (ZERO) and `v:<value>,<run>` (VAL),
/// space-separated.
pub fn decode(v: &[u8]) -> String {
    sparse::decode(v)
}

/// The encoding of a checked HyperLogLog.
pub fn encoding(v: &[u8]) -> Encoding {
    if v[ENCODING_AT] == DENSE {
        Encoding::Dense
    } else {
        Encoding::Sparse
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn added(elements: &[&[u8]], sparse_max: usize) -> Vec<u8> {
        let mut v = new_sparse();
        for e in elements {
            add(&mut v, e, sparse_max).unwrap();
        }
        v
    }

    #[test]
    fn new_is_one_xzero_and_checks() {
        let v = new_sparse();
        assert_eq!(v.len(), HEADER_BYTES + 2);
        assert_eq!(&v[16..], &[0x7f, 0xff]);
        assert_eq!(check(&v), Ok(Encoding::Sparse));
        assert_eq!(cached(&v), Some(0));
        assert_eq!(count(&v), Ok(0));
        assert_eq!(decode(&v), "Z:16384");
    }

    #[test]
    fn check_refuses_what_redis_refuses() {
        assert_eq!(check(b"HYLL"), Err(NotHll));
        assert_eq!(check(b"hello world, not an hll"), Err(NotHll));
        let mut v = new_sparse();
        v[ENCODING_AT] = 2;
        assert_eq!(check(&v), Err(NotHll));
        v[ENCODING_AT] = DENSE;
        assert_eq!(check(&v), Err(NotHll), "dense must be exactly DENSE_BYTES");
        let mut d = new_sparse();
        to_dense(&mut d).unwrap();
        assert_eq!((d.len(), check(&d)), (DENSE_BYTES, Ok(Encoding::Dense)));
        d.push(0);
        assert_eq!(check(&d), Err(NotHll));
        // A sparse header alone passes the check; walking it does not.
        let bare = &new_sparse()[..HEADER_BYTES];
        assert_eq!(check(bare), Ok(Encoding::Sparse));
        assert_eq!(count(bare), Err(Corrupt));
    }

    #[test]
    fn dense_registers_pack_lsb_first() {
        let mut regs = vec![0u8; DENSE_BYTES - HEADER_BYTES];
        dense_set(&mut regs, 0, 0b11_1111);
        assert_eq!(regs[..2], [0b0011_1111, 0]);
        dense_set(&mut regs, 1, 0b10_0001);
        assert_eq!(regs[..2], [0b0111_1111, 0b0000_1000]);
        dense_set(&mut regs, REGISTERS - 1, 63);
        assert_eq!(regs[regs.len() - 1], 0b1111_1100);
        assert_eq!(dense_get(&regs, REGISTERS - 1), 63);
        assert_eq!(dense_get(&regs, REGISTERS - 2), 0);
        for i in 0..REGISTERS {
            dense_set(&mut regs, i, (i % 64) as u8);
        }
        assert!((0..REGISTERS).all(|i| dense_get(&regs, i) == (i % 64) as u8));
    }

    #[test]
    fn murmur_known_values() {
        // MurmurHash64A of nothing with seed 0 is 0; redis-server's PFADD
        // of the empty element left `Z:5938 v:2,1 Z:10445`
        // (tests/hll_redis_7_0_15.txt has every tail length).
        assert_eq!(murmur64a(b"", 0), 0);
        assert_eq!(pattern(b""), (5938, 2));
        assert_eq!(decode(&added(&[b""], SPARSE_MAX_BYTES_DEFAULT)), "Z:5938 v:2,1 Z:10445");
    }

    #[test]
    fn add_reports_change_and_stays_sparse_while_small() {
        let mut v = new_sparse();
        assert_eq!(add(&mut v, b"a", 3000), Ok(true));
        assert_eq!(add(&mut v, b"a", 3000), Ok(false));
        assert_eq!(encoding(&v), Encoding::Sparse);
        for i in 0..200u32 {
            add(&mut v, format!("e{i}").as_bytes(), 3000).unwrap();
        }
        assert_eq!(encoding(&v), Encoding::Sparse);
        let c = count(&v).unwrap();
        assert!((195..=207).contains(&c), "{c}");
        let mut d = v.clone();
        assert_eq!(to_dense(&mut d), Ok(true));
        assert_eq!(count(&d), Ok(c), "the same registers count alike");
        assert_eq!(to_dense(&mut d), Ok(false));
    }

    #[test]
    fn promotes_on_size_and_on_large_registers() {
        let elements: Vec<[u8; 4]> = (0..400u32).map(u32::to_le_bytes).collect();
        let v = added(&elements.iter().map(|e| &e[..]).collect::<Vec<_>>(), 100);
        assert_eq!(encoding(&v), Encoding::Dense);
        assert_eq!(v.len(), DENSE_BYTES);
        let mut s = new_sparse();
        assert_eq!(set(&mut s, 7, 33, 3000), Ok(true));
        assert_eq!(encoding(&s), Encoding::Dense);
        assert_eq!(dense_registers(&s).nth(7), Some(33));
        let mut s = new_sparse();
        assert_eq!(set(&mut s, 7, 32, 3000), Ok(true));
        assert_eq!(decode(&s), "z:7 v:32,1 Z:16376");
    }

    #[test]
    fn would_change_agrees_with_add() {
        let mut v = new_sparse();
        for i in 0..50u32 {
            add(&mut v, format!("x{i}").as_bytes(), 3000).unwrap();
        }
        let mut d = v.clone();
        to_dense(&mut d).unwrap();
        for probe in [&b"x3"[..], b"x49", b"new", b"x0"] {
            for h in [&v, &d] {
                let mut c = h.clone();
                assert_eq!(would_change(h, [probe]), add(&mut c, probe, 3000).unwrap(), "{probe:?}");
            }
        }
        let bare = &new_sparse()[..HEADER_BYTES];
        assert!(would_change(bare, [&b"x"[..]]), "a damaged value goes to add, which reports it");
    }

    #[test]
    fn cache_bits() {
        let mut v = new_sparse();
        set_cached(&mut v, 0x0102);
        assert_eq!(cached(&v), Some(0x0102));
        invalidate(&mut v);
        assert_eq!(cached(&v), None);
        assert_eq!(&v[CARD_AT..CARD_AT + 8], &[2, 1, 0, 0, 0, 0, 0, 0x80], "only the top bit");
    }

    #[test]
    fn merged_keeps_sparse_unless_dense() {
        let a = added(&[b"a", b"b"], 3000);
        let mut max = [0u8; REGISTERS];
        merge_into(&mut max, &a).unwrap();
        let m = merged(None, &max, false, 3000).unwrap();
        assert_eq!(encoding(&m), Encoding::Sparse);
        assert_eq!(&m[HEADER_BYTES..], &a[HEADER_BYTES..]);
        let d = merged(None, &max, true, 3000).unwrap();
        assert_eq!(encoding(&d), Encoding::Dense);
        assert_eq!(count(&d), count(&a));
        assert_eq!(cached(&d), None);
        assert_eq!(count_registers(&max), count(&a).unwrap());
    }
}
