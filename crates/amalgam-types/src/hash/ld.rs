//! Redis's `long double` arithmetic for HINCRBYFLOAT (and INCRBYFLOAT),
//! in software so results are Redis's to the last digit.
//!
//! Redis parses both operands with `string2ld` (glibc `strtold`: x87
//! 80-bit extended precision, a 64-bit significand), adds them in that
//! precision and prints the sum with `%.17Lf`, trailing zeros (and a
//! bare `.`) trimmed and `-0` turned into `0` (`ld2string`'s
//! `LD_STR_HUMAN`). Doing the same in `f64` gives other digits
//! (`0.1 + 0.2` → `0.30000000000000004` instead of Redis's `0.3`), so
//! this module emulates the 80-bit format exactly: correctly rounded
//! decimal and hex parsing (round to nearest, ties to even, subnormals
//! included), a correctly rounded addition, and exact `%.17Lf` output,
//! with a small big-integer helper. Inputs are at most
//! [`LD_INPUT_BYTES_MAX`] bytes (Redis's `MAX_LONG_DOUBLE_CHARS`), so
//! every big integer here is bounded (≈ 17,000 bits).
//!
//! `string2ld`'s acceptance, reproduced: no leading whitespace; an
//! optional sign; decimal (`1`, `.5`, `5.`, `1e5`, `1E+05`), hex
//! (`0x1p3`, `0x10`) or `inf`/`infinity` (any case); nothing after the
//! number — a NUL byte anywhere included (`string2ld` copies the bytes
//! into a C string and requires `strtold` to consume all `slen` of them);
//! NaN rejected; overflow and
//! underflow to zero rejected (`ERANGE`), subnormal results accepted.

/// Inputs this long or longer are rejected (Redis's
/// `MAX_LONG_DOUBLE_CHARS`, 5 KiB).
pub const LD_INPUT_BYTES_MAX: usize = 5 * 1024;
/// Significand bits of the x87 extended format (explicit integer bit).
const MANT_BITS: i64 = 64;
/// Exponent of the significand's lowest bit for the smallest subnormal
/// (2^-16445) and for the largest finite value (2^16383 · (2 - 2^-63)).
const EXP_MIN: i64 = -16445;
const EXP_MAX: i64 = 16383 - 63;
/// Fractional digits `%.17Lf` prints.
const FRAC_DIGITS: u32 = 17;
/// Decimal exponents beyond these are certainly overflow / underflow
/// (|value| ≥ 10^4933 or < 10^-4952), checked before any big arithmetic.
const DEC_EXP_OVER: i64 = 4940;
const DEC_EXP_UNDER: i64 = -4970;

/// An x87 extended value: `(-1)^neg · mant · 2^exp`, or infinity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ld {
    neg: bool,
    /// 0 for zero; otherwise normal (top bit set) or subnormal (exp == EXP_MIN).
    mant: u64,
    exp: i64,
    inf: bool,
}

impl Ld {
    pub const ZERO: Ld = Ld { neg: false, mant: 0, exp: 0, inf: false };

    /// True for ±infinity.
    pub fn is_infinite(self) -> bool {
        self.inf
    }

    /// An integer, exactly (every i64 fits a 64-bit significand).
    pub fn from_i64(v: i64) -> Ld {
        round(&Big::from_u64(v.unsigned_abs()), false, 0, v < 0).unwrap_or(Ld::ZERO)
    }
}

/// A little-endian base-2^32 unsigned integer.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Big(Vec<u32>);

impl Big {
    fn from_u64(v: u64) -> Big {
        let mut b = Big(vec![v as u32, (v >> 32) as u32]);
        b.trim();
        b
    }
    fn trim(&mut self) {
        // Bounded by the limbs.
        while self.0.last() == Some(&0) {
            self.0.pop();
        }
    }
    fn is_zero(&self) -> bool {
        self.0.is_empty()
    }
    fn bits(&self) -> i64 {
        match self.0.last() {
            None => 0,
            Some(&top) => 32 * (self.0.len() as i64 - 1) + (32 - top.leading_zeros() as i64),
        }
    }
    fn bit(&self, i: i64) -> bool {
        if i < 0 {
            return false;
        }
        let (w, b) = ((i / 32) as usize, i % 32);
        self.0.get(w).is_some_and(|&x| x >> b & 1 == 1)
    }
    /// True if any bit below `i` is set.
    fn any_below(&self, i: i64) -> bool {
        if i <= 0 {
            return false;
        }
        let (w, b) = ((i / 32) as usize, (i % 32) as u32);
        let full = w.min(self.0.len());
        self.0[..full].iter().any(|&x| x != 0) || (b > 0 && self.0.get(w).is_some_and(|&x| x & ((1u32 << b) - 1) != 0))
    }
    fn mul_add_small(&mut self, m: u32, a: u32) {
        let mut carry = u64::from(a);
        for x in &mut self.0 {
            let t = u64::from(*x) * u64::from(m) + carry;
            *x = t as u32;
            carry = t >> 32;
        }
        if carry != 0 {
            self.0.push(carry as u32);
        }
    }
    fn shl(&self, n: i64) -> Big {
        debug_assert!(n >= 0);
        let (w, b) = ((n / 32) as usize, (n % 32) as u32);
        let mut out = vec![0u32; w];
        let mut carry = 0u32;
        for &x in &self.0 {
            out.push((x << b) | carry);
            carry = if b == 0 { 0 } else { x >> (32 - b) };
        }
        out.push(carry);
        let mut r = Big(out);
        r.trim();
        r
    }
    /// `self >> n` as a u128 (the caller knows it fits).
    fn shr_u128(&self, n: i64) -> u128 {
        let mut r = 0u128;
        // Bounded: 128 bits.
        for i in (0..128).rev() {
            r = (r << 1) | u128::from(self.bit(n + i));
        }
        r
    }
    fn cmp(&self, o: &Big) -> std::cmp::Ordering {
        self.0.len().cmp(&o.0.len()).then_with(|| self.0.iter().rev().cmp(o.0.iter().rev()))
    }
    fn sub_assign(&mut self, o: &Big) {
        debug_assert!(self.cmp(o) != std::cmp::Ordering::Less);
        let mut borrow = 0i64;
        for (i, x) in self.0.iter_mut().enumerate() {
            let t = i64::from(*x) - i64::from(o.0.get(i).copied().unwrap_or(0)) - borrow;
            *x = t.rem_euclid(1 << 32) as u32;
            borrow = i64::from(t < 0);
        }
        self.trim();
    }
    fn add(&self, o: &Big) -> Big {
        let n = self.0.len().max(o.0.len());
        let mut out = Vec::with_capacity(n + 1);
        let mut carry = 0u64;
        for i in 0..n {
            let t =
                u64::from(self.0.get(i).copied().unwrap_or(0)) + u64::from(o.0.get(i).copied().unwrap_or(0)) + carry;
            out.push(t as u32);
            carry = t >> 32;
        }
        out.push(carry as u32);
        let mut r = Big(out);
        r.trim();
        r
    }
    fn pow10(n: u32) -> Big {
        let mut b = Big::from_u64(1);
        // Bounded by n ≤ ~5,000 (the callers' exponent checks).
        for _ in 0..n / 9 {
            b.mul_add_small(1_000_000_000, 0);
        }
        b.mul_add_small(10u32.pow(n % 9), 0);
        b
    }
    /// (floor(self / d), remainder ≠ 0), for a quotient below 2^128.
    fn div_small_quotient(&self, d: &Big) -> (u128, bool) {
        let mut r = self.clone();
        let mut q = 0u128;
        let top = (self.bits() - d.bits()).max(0);
        debug_assert!(top < 128);
        // Bounded: ≤ 128 quotient bits.
        for i in (0..=top).rev() {
            let s = d.shl(i);
            q <<= 1;
            if r.cmp(&s) != std::cmp::Ordering::Less {
                r.sub_assign(&s);
                q |= 1;
            }
        }
        (q, !r.is_zero())
    }
    /// Decimal digits (no sign); "0" for zero.
    fn to_decimal(&self) -> Vec<u8> {
        let mut limbs = self.0.clone();
        let mut chunks = Vec::new();
        // Bounded: each pass divides by 10^9.
        while !limbs.is_empty() {
            let mut rem = 0u64;
            for x in limbs.iter_mut().rev() {
                let cur = (rem << 32) | u64::from(*x);
                *x = (cur / 1_000_000_000) as u32;
                rem = cur % 1_000_000_000;
            }
            while limbs.last() == Some(&0) {
                limbs.pop();
            }
            chunks.push(rem as u32);
        }
        let mut out = Vec::new();
        match chunks.split_last() {
            None => out.push(b'0'),
            Some((top, rest)) => {
                out.extend_from_slice(top.to_string().as_bytes());
                for c in rest.iter().rev() {
                    out.extend_from_slice(format!("{c:09}").as_bytes());
                }
            }
        }
        out
    }
}

/// Rounds `(q + sticky·ε) · 2^e0` (ε < 1) to the extended format, ties to
/// even; None on overflow.
fn round(q: &Big, sticky: bool, e0: i64, neg: bool) -> Option<Ld> {
    if q.is_zero() {
        // Only reached with sticky false (callers keep ≥ 66 bits).
        return Some(Ld { neg, ..Ld::ZERO });
    }
    let len = q.bits();
    let mut drop = len - MANT_BITS;
    if e0 + drop < EXP_MIN {
        drop = EXP_MIN - e0;
    }
    let (mut mant, exp) = if drop <= 0 {
        // Exact: q has at most 64 bits (or is subnormal-aligned).
        ((q.shr_u128(0) as u64) << (-drop), e0 + drop)
    } else {
        // len - drop ≤ 64, so the kept bits fit a u64.
        let m = q.shr_u128(drop) as u64;
        let half = q.bit(drop - 1);
        let rest = sticky || q.any_below(drop - 1);
        let up = half && (rest || m & 1 == 1);
        match m.checked_add(u64::from(up)) {
            Some(m) => (m, e0 + drop),
            // Carry out of 64 bits: 2^64 = 2^63 · 2.
            None => (1u64 << 63, e0 + drop + 1),
        }
    };
    if mant == 0 {
        return Some(Ld { neg, ..Ld::ZERO });
    }
    let mut exp = exp;
    // A subnormal may round up into the normal range: keep it as is (the
    // value mant·2^exp is the same either way).
    if mant >> 63 == 0 && exp > EXP_MIN {
        let s = mant.leading_zeros() as i64;
        mant <<= s;
        exp -= s;
    }
    (exp <= EXP_MAX).then_some(Ld { neg, mant, exp, inf: false })
}

/// The (significand, exponent) as a big integer and a power of two.
fn parts(v: Ld) -> (Big, i64) {
    (Big::from_u64(v.mant), v.exp)
}

/// `strtold` as `string2ld` uses it (module docs); None if Redis would
/// reply "not a valid float".
pub fn parse(s: &[u8]) -> Option<Ld> {
    if s.is_empty() || s.len() >= LD_INPUT_BYTES_MAX {
        return None;
    }
    // strtold stops at a NUL, short of the `slen` bytes string2ld
    // requires it to consume: Redis 7.0.15 rejects "1\0" and "\0".
    if s.contains(&0) {
        return None;
    }
    let (neg, body) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let lower = body.to_ascii_lowercase();
    if lower == b"inf" || lower == b"infinity" {
        return Some(Ld { neg, mant: 0, exp: 0, inf: true });
    }
    if lower.len() > 2 && lower.starts_with(b"0x") {
        return parse_hex(&lower[2..], neg);
    }
    parse_dec(body, neg)
}

/// Splits `digits[.digits]` from the front: (all digits, digits after
/// the point, bytes used). None if there is no digit.
fn mantissa(s: &[u8], is_digit: fn(u8) -> bool) -> Option<(Vec<u8>, usize, usize)> {
    let mut digits = Vec::new();
    let (mut frac, mut at, mut seen_point) = (0usize, 0usize, false);
    // Bounded by s.len().
    while at < s.len() {
        let c = s[at];
        if is_digit(c) {
            digits.push(c);
            if seen_point {
                frac += 1;
            }
        } else if c == b'.' && !seen_point {
            seen_point = true;
        } else {
            break;
        }
        at += 1;
    }
    (!digits.is_empty()).then_some((digits, frac, at))
}

/// An exponent suffix `[+-]digits` (the letter already consumed),
/// saturated; None if malformed.
fn exponent(s: &[u8]) -> Option<i64> {
    let (neg, d) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if d.is_empty() || !d.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let v = d.iter().fold(0i64, |a, &c| a.saturating_mul(10).saturating_add(i64::from(c - b'0')).min(1 << 40));
    Some(if neg { -v } else { v })
}

fn parse_dec(s: &[u8], neg: bool) -> Option<Ld> {
    let (digits, frac, used) = mantissa(s, |c| c.is_ascii_digit())?;
    let exp10 = match s.get(used) {
        None => 0,
        Some(b'e' | b'E') => exponent(&s[used + 1..])?,
        Some(_) => return None,
    };
    // Drop leading zeros; value = D · 10^(exp10 - frac).
    let first = digits.iter().position(|&c| c != b'0');
    let Some(first) = first else {
        return Some(Ld { neg, ..Ld::ZERO });
    };
    let digits = &digits[first..];
    let e = exp10 - frac as i64;
    let magnitude = e + digits.len() as i64; // value < 10^magnitude
    if magnitude > DEC_EXP_OVER {
        return None;
    }
    if magnitude < DEC_EXP_UNDER {
        return None; // underflow to zero: ERANGE
    }
    let mut d = Big(Vec::new());
    // Bounded by the input length (< LD_INPUT_BYTES_MAX).
    for &c in digits {
        d.mul_add_small(10, u32::from(c - b'0'));
    }
    let r = if e >= 0 {
        let p = Big::pow10(e as u32);
        let mut n = Big(Vec::new());
        // Schoolbook product, bounded by the limbs of both.
        n.0 = vec![0; d.0.len() + p.0.len()];
        for (i, &x) in d.0.iter().enumerate() {
            let mut carry = 0u64;
            for (j, &y) in p.0.iter().enumerate() {
                let t = u64::from(n.0[i + j]) + u64::from(x) * u64::from(y) + carry;
                n.0[i + j] = t as u32;
                carry = t >> 32;
            }
            n.0[i + p.0.len()] = carry as u32;
        }
        n.trim();
        round(&n, false, 0, neg)?
    } else {
        let p = Big::pow10((-e) as u32);
        let s = (p.bits() - d.bits() + MANT_BITS + 2).max(0);
        let (q, rem) = d.shl(s).div_small_quotient(&p);
        let qb = Big(vec![q as u32, (q >> 32) as u32, (q >> 64) as u32, (q >> 96) as u32]);
        let mut qb = qb;
        qb.trim();
        round(&qb, rem, -s, neg)?
    };
    // Underflow to zero is ERANGE with a zero result: rejected.
    (r.mant != 0).then_some(r)
}

fn parse_hex(s: &[u8], neg: bool) -> Option<Ld> {
    let (digits, frac, used) = mantissa(s, |c| c.is_ascii_hexdigit())?;
    let exp2 = match s.get(used) {
        None => 0,
        Some(b'p') => exponent(&s[used + 1..])?,
        Some(_) => return None,
    };
    let mut h = Big(Vec::new());
    for &c in &digits {
        let v = (c as char).to_digit(16).unwrap_or(0);
        h.mul_add_small(16, v);
    }
    h.trim();
    if h.is_zero() {
        return Some(Ld { neg, ..Ld::ZERO });
    }
    let e = exp2 - 4 * frac as i64;
    if e + h.bits() > EXP_MAX + MANT_BITS + 1 {
        return None;
    }
    if e + h.bits() < EXP_MIN - 2 {
        return None;
    }
    let r = round(&h, false, e, neg)?;
    (r.mant != 0).then_some(r)
}

/// `a + b`, correctly rounded; None for NaN or an infinite result.
pub fn add(a: Ld, b: Ld) -> Option<Ld> {
    if a.inf || b.inf {
        return None; // inf stays inf (or is NaN): Redis rejects both
    }
    if a.mant == 0 {
        return Some(if b.mant == 0 { Ld { neg: a.neg && b.neg, ..Ld::ZERO } } else { b });
    }
    if b.mant == 0 {
        return Some(a);
    }
    // Order by magnitude so the result takes the larger's sign.
    let (big, small) = if (a.exp + 64 - a.mant.leading_zeros() as i64, a.mant << a.mant.leading_zeros())
        >= (b.exp + 64 - b.mant.leading_zeros() as i64, b.mant << b.mant.leading_zeros())
    {
        (a, b)
    } else {
        (b, a)
    };
    let diff = big.exp - small.exp;
    if diff > 2 * MANT_BITS + 4 {
        // The smaller is far below half an ulp of the larger.
        return Some(big);
    }
    let e0 = big.exp.min(small.exp);
    let (bm, be) = parts(big);
    let (sm, se) = parts(small);
    let bm = bm.shl(be - e0);
    let sm = sm.shl(se - e0);
    if big.neg == small.neg {
        round(&bm.add(&sm), false, e0, big.neg)
    } else {
        let mut r = bm;
        r.sub_assign(&sm);
        if r.is_zero() {
            return Some(Ld::ZERO);
        }
        round(&r, false, e0, big.neg)
    }
}

/// `ceill(v * 1000.0L)` converted to a `long long`, as Redis computes a
/// blocking command's timeout in milliseconds: the product rounded to
/// the 64-bit significand (to nearest, ties to even), then rounded up to
/// an integer. None where x86's conversion gives `LLONG_MIN` (infinity,
/// or out of the i64 range).
pub fn times_1000_ceil(v: Ld) -> Option<i64> {
    if v.inf {
        return None;
    }
    if v.mant == 0 {
        return Some(0);
    }
    // The exact product (at most 74 bits), then rounded to 64.
    let mut p = u128::from(v.mant) * 1000;
    let mut e = v.exp;
    let bits = 128 - p.leading_zeros() as i64;
    if bits > MANT_BITS {
        let shift = (bits - MANT_BITS) as u32;
        let rem = p & ((1u128 << shift) - 1);
        let half = 1u128 << (shift - 1);
        p >>= shift;
        e += i64::from(shift);
        if rem > half || (rem == half && p & 1 == 1) {
            p += 1;
            if p >> MANT_BITS != 0 {
                p >>= 1;
                e += 1;
            }
        }
    }
    // p · 2^e: its integer part and whether a fraction is left.
    let (int, frac) = if e >= 0 {
        if e >= 64 {
            return None;
        }
        let int = p.checked_shl(e as u32).filter(|i| *i <= 1u128 << 63)?;
        (int, false)
    } else if -e >= 128 {
        (0, true)
    } else {
        let s = (-e) as u32;
        (p >> s, p & ((1u128 << s) - 1) != 0)
    };
    if v.neg {
        // ceil of a negative value drops the fraction.
        i64::try_from(int).map(|i| -i).ok().or((int == 1u128 << 63).then_some(i64::MIN))
    } else {
        i64::try_from(int + u128::from(frac)).ok()
    }
}

/// `%.17Lf` with trailing zeros and a bare `.` removed, `-0` as `0`
/// (Redis's `ld2string(..., LD_STR_HUMAN)`).
pub fn format_human(v: Ld) -> Vec<u8> {
    if v.inf {
        return if v.neg { b"-inf".to_vec() } else { b"inf".to_vec() };
    }
    // scaled = round_half_even(|v| · 10^17)
    let (m, e) = parts(v);
    let mut m = m;
    // m · 10^17 fits easily; multiply by 10 seventeen times.
    for _ in 0..FRAC_DIGITS {
        m.mul_add_small(10, 0);
    }
    let scaled = if e >= 0 {
        m.shl(e)
    } else {
        let sh = -e;
        let mut q = Big(Vec::new());
        // q = m >> sh, via limbs.
        let (w, b) = ((sh / 32) as usize, (sh % 32) as u32);
        if w < m.0.len() {
            let src = &m.0[w..];
            for i in 0..src.len() {
                let lo = src[i] >> b;
                let hi = if b == 0 { 0 } else { src.get(i + 1).map_or(0, |&x| x << (32 - b)) };
                q.0.push(lo | hi);
            }
        }
        q.trim();
        let half = m.bit(sh - 1);
        let rest = m.any_below(sh - 1);
        if half && (rest || q.bit(0)) {
            q = q.add(&Big::from_u64(1));
        }
        q
    };
    let digits = scaled.to_decimal();
    let mut out = Vec::with_capacity(digits.len() + 3);
    let frac = FRAC_DIGITS as usize;
    if v.neg {
        out.push(b'-');
    }
    if digits.len() <= frac {
        out.extend_from_slice(b"0.");
        out.extend(std::iter::repeat_n(b'0', frac - digits.len()));
        out.extend_from_slice(&digits);
    } else {
        out.extend_from_slice(&digits[..digits.len() - frac]);
        out.push(b'.');
        out.extend_from_slice(&digits[digits.len() - frac..]);
    }
    // Trim zeros after the point, then a bare point.
    while out.last() == Some(&b'0') {
        out.pop();
    }
    if out.last() == Some(&b'.') {
        out.pop();
    }
    if out == b"-0" {
        out = b"0".to_vec();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn incr(a: &str, b: &str) -> String {
        let r = add(parse(a.as_bytes()).unwrap(), parse(b.as_bytes()).unwrap()).unwrap();
        String::from_utf8(format_human(r)).unwrap()
    }

    /// Every expected string below is redis-server 7.0.15's HINCRBYFLOAT
    /// reply for that value and increment.
    /// Blocking timeouts: redis-server 7.0.15 answers 0.0009 s with a
    /// timeout (1 ms, not 0 = forever), -0.0001 s blocks forever (0), and
    /// 9223372036854775.808 s is "timeout is negative" (LLONG_MIN).
    #[test]
    fn timeout_millis() {
        let ms = |s: &str| times_1000_ceil(parse(s.as_bytes()).unwrap());
        assert_eq!(ms("0"), Some(0));
        assert_eq!(ms("1"), Some(1000));
        assert_eq!(ms("0.001"), Some(1));
        assert_eq!(ms("0.0009"), Some(1));
        assert_eq!(ms("0.0015"), Some(2));
        assert_eq!(ms("1e-9"), Some(1));
        assert_eq!(ms("-0.0001"), Some(0));
        assert_eq!(ms("-1"), Some(-1000));
        assert_eq!(ms("0x1p-10"), Some(1));
        assert_eq!(ms("2.5"), Some(2500));
        assert_eq!(ms("9223372036854775"), Some(9_223_372_036_854_775_000));
        assert_eq!(ms("9223372036854775.807"), Some(i64::MAX));
        assert_eq!(ms("9223372036854775.808"), None);
        assert_eq!(ms("-9223372036854775.808"), Some(-i64::MAX));
        assert_eq!(ms("1e300"), None);
        assert_eq!(ms("inf"), None);
        assert_eq!(ms("-inf"), None);
    }

    #[test]
    fn matches_redis() {
        assert_eq!(incr("10.5", "0.1"), "10.6");
        assert_eq!(incr("0.1", "0.2"), "0.3");
        assert_eq!(incr("01", "1"), "2");
        assert_eq!(incr("0x10", "1"), "17");
        assert_eq!(incr("0", "1000000.1"), "1000000.10000000000002274");
        assert_eq!(incr("0", "1e-5"), "0.00001");
        assert_eq!(incr("0", "0x1p3"), "8");
        assert_eq!(incr("0", "-0.0"), "0");
        assert_eq!(incr("0", "1.23456789012345678901234"), "1.23456789012345679");
        assert_eq!(incr("0", "3.0e3"), "3000");
        assert_eq!(incr("0", "+1.5"), "1.5");
        assert_eq!(incr("0", ".5"), "0.5");
        assert_eq!(incr("0", "5."), "5");
        assert_eq!(incr("0", "1e-4940"), "0");
        assert_eq!(incr("0", "123456789012345678901234567890"), "123456789012345678899921813504");
        assert!(incr("1e400", "1").starts_with(
            "10000000000000000000281880683947586514586453433629052038625910693539685534008629862039363994848324160522094053927317616200295822777259255734023828976593340661017797447434546173917862448116674971723778"
        ));
    }

    #[test]
    fn rejects_like_string2ld() {
        for bad in
            ["", " 1", "1 ", "abc", "nan", "-nan", "1e", "1e+", "0x", "1.2.3", "1e5000", "1e-4960", "--1", "0x1q"]
        {
            assert_eq!(parse(bad.as_bytes()), None, "{bad:?}");
        }
        assert!(parse(b"inf").unwrap().is_infinite());
        assert!(parse(b"-Infinity").unwrap().is_infinite());
        assert_eq!(add(parse(b"inf").unwrap(), Ld::from_i64(1)), None);
        assert_eq!(parse(&vec![b'1'; LD_INPUT_BYTES_MAX]), None);
        for bad in [&b"1\0junk"[..], b"1\0", b"\0", b"\x001"] {
            assert_eq!(parse(bad), None, "string2ld wants every byte consumed: {bad:?}");
        }
    }

    #[test]
    fn overflow_is_rejected() {
        let max = parse(b"1.18973149535723176502e+4932").unwrap();
        assert_eq!(add(max, max), None);
        assert_eq!(format_human(Ld::from_i64(-42)), b"-42");
        assert_eq!(incr("-0.1", "0.1"), "0");
        assert_eq!(incr("1", "-0.25"), "0.75");
    }
}
