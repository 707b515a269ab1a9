//! Scores and ranges from argument bytes, and scores into reply bytes,
//! as Redis 7.0 reads and writes them.

/// ZADD / ZINCRBY / ZSCORE-style argument errors (Redis 7.0's texts).
pub const ERR_NOT_FLOAT: &str = "ERR value is not a valid float";
pub const ERR_RANGE_NOT_FLOAT: &str = "ERR min or max is not a float";
pub const ERR_LEX_RANGE: &str = "ERR min or max not valid string range item";

/// Digits the integer fast path of [`strtod`] takes: below 10^15 < 2^53,
/// so the value is exactly a double and needs no rounding.
const SMALL_INT_DIGITS_MAX: usize = 15;

/// strtod's reading of `s`: the value and whether the text overflowed
/// or underflowed to zero (ERANGE), or None if `s` is not entirely a
/// number. Accepts what glibc's strtod accepts: decimal with optional
/// exponent, `inf`/`infinity`/`nan` in any case, hexadecimal `0x1.8p3`;
/// no surrounding spaces (Redis rejects a leading space and any trailing
/// byte).
///
/// Most scores are short integers (redis-benchmark's ZADD sends
/// zero-padded 12-digit ones): those are read digit by digit, and other
/// decimals without a copy; only the words and hexadecimal go through a
/// lower-cased copy. The integer path was ~1,200 instructions a ZADD
/// through the general one (callgrind, docs/bench-log/2026-11-26-collections.md
/// § Command lookup, hot sorted set, score text). SORT reads its
/// weights with it too (amalgam-commands `sort.rs`).
pub fn strtod(s: &[u8]) -> Option<(f64, bool)> {
    if let Some(v) = small_integer(s) {
        return Some((v, false));
    }
    let text = std::str::from_utf8(s).ok()?;
    let (neg, body) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let b = body.as_bytes();
    let hex = b.len() >= 2 && b[0] == b'0' && (b[1] | 0x20) == b'x';
    if !hex && b.first().is_some_and(|&c| c.is_ascii_digit() || c == b'.') {
        // Decimal. Rust's grammar is strtod's decimal grammar minus the
        // words handled below; reject anything else it would accept oddly.
        if !b.iter().all(|&b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-')) {
            return None;
        }
        let v = body.parse::<f64>().ok()?;
        let mantissa = body.split(['e', 'E']).next().unwrap_or("");
        let nonzero = mantissa.bytes().any(|b| b.is_ascii_digit() && b != b'0');
        let erange = v.is_infinite() || (v == 0.0 && nonzero);
        return Some((if neg { -v } else { v }, erange));
    }
    if body.starts_with(['+', '-']) {
        return None;
    }
    let lower = body.to_ascii_lowercase();
    let v = if lower == "inf" || lower == "infinity" {
        return Some((if neg { f64::NEG_INFINITY } else { f64::INFINITY }, false));
    } else if lower == "nan" {
        return Some((f64::NAN, false));
    } else if let Some(hex) = lower.strip_prefix("0x") {
        parse_hex(hex)?
    } else {
        return None;
    };
    let mantissa = lower.split(['e', 'p']).next().unwrap_or("");
    let nonzero = mantissa.trim_start_matches("0x").bytes().any(|b| b.is_ascii_hexdigit() && b != b'0');
    let erange = v.is_infinite() || (v == 0.0 && nonzero);
    Some((if neg { -v } else { v }, erange))
}

/// `[+-]digits` with 1 to [`SMALL_INT_DIGITS_MAX`] digits, exactly.
#[inline]
fn small_integer(s: &[u8]) -> Option<f64> {
    let (neg, digits) = match s.first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || digits.len() > SMALL_INT_DIGITS_MAX {
        return None;
    }
    let mut n = 0u64;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        n = n * 10 + u64::from(d - b'0');
    }
    let v = n as f64;
    Some(if neg { -v } else { v })
}

/// Hexadecimal float digits after `0x`: `h[.h][p[+-]d]`.
fn parse_hex(s: &str) -> Option<f64> {
    let (mant, exp) = match s.split_once('p') {
        Some((m, e)) => (m, e.parse::<i32>().ok()?),
        None => (s, 0),
    };
    let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let mut v = 0f64;
    // Bounded by the argument's length.
    for c in int.chars() {
        v = v * 16.0 + f64::from(c.to_digit(16)?);
    }
    let mut scale = 1.0 / 16.0;
    for c in frac.chars() {
        v += f64::from(c.to_digit(16)?) * scale;
        scale /= 16.0;
    }
    Some(v * 2f64.powi(exp))
}

/// A score argument (ZADD, ZINCRBY): [`parse_float`], -0 as +0.
pub fn parse_score(s: &[u8]) -> Result<f64, &'static str> {
    parse_float(s).map(normalize)
}

/// A float argument by Redis's `getDoubleFromObject` rules: not empty, no
/// NaN, no overflow to ±inf or underflow to 0 from a number that is
/// neither; -0 stays -0 (GEOADD's error prints it).
pub fn parse_float(s: &[u8]) -> Result<f64, &'static str> {
    match strtod(s) {
        Some((v, false)) if !s.is_empty() && !v.is_nan() => Ok(v),
        _ => Err(ERR_NOT_FLOAT),
    }
}

/// Scores are stored with -0 as +0 (Redis's listpack does so; its
/// skiplist keeps -0 and prints "-0" — we always print "0").
#[inline]
pub fn normalize(v: f64) -> f64 {
    if v == 0.0 {
        0.0
    } else {
        v
    }
}

/// A score interval (ZCOUNT, ZRANGEBYSCORE…).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScoreRange {
    pub min: f64,
    pub min_exclusive: bool,
    pub max: f64,
    pub max_exclusive: bool,
}

impl ScoreRange {
    /// Everything.
    pub const ALL: ScoreRange =
        ScoreRange { min: f64::NEG_INFINITY, min_exclusive: false, max: f64::INFINITY, max_exclusive: false };

    /// Redis's `zslParseRange`: `(` makes a bound exclusive; the rest is
    /// strtod's (so "" is 0 and "1e400" is inf); NaN is an error.
    pub fn parse(min: &[u8], max: &[u8]) -> Result<ScoreRange, &'static str> {
        let one = |s: &[u8]| -> Result<(f64, bool), &'static str> {
            let (ex, num) = match s.split_first() {
                Some((b'(', rest)) => (true, rest),
                _ => (false, s),
            };
            let v = if num.is_empty() { 0.0 } else { strtod(num).ok_or(ERR_RANGE_NOT_FLOAT)?.0 };
            if v.is_nan() {
                return Err(ERR_RANGE_NOT_FLOAT);
            }
            Ok((normalize(v), ex))
        };
        let (min, min_exclusive) = one(min)?;
        let (max, max_exclusive) = one(max)?;
        Ok(ScoreRange { min, min_exclusive, max, max_exclusive })
    }

    /// True if `s` is at or above the lower bound.
    #[inline]
    pub fn above_min(&self, s: f64) -> bool {
        if self.min_exclusive {
            s > self.min
        } else {
            s >= self.min
        }
    }

    /// True if `s` is at or below the upper bound.
    #[inline]
    pub fn below_max(&self, s: f64) -> bool {
        if self.max_exclusive {
            s < self.max
        } else {
            s <= self.max
        }
    }

    pub fn contains(&self, s: f64) -> bool {
        self.above_min(s) && self.below_max(s)
    }
}

/// One end of a lex range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LexBound<'a> {
    /// `-`
    Min,
    /// `+`
    Max,
    /// `[member`
    Inclusive(&'a [u8]),
    /// `(member`
    Exclusive(&'a [u8]),
}

/// A member interval (ZLEXCOUNT, ZRANGEBYLEX…), borrowing the arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LexRange<'a> {
    pub min: LexBound<'a>,
    pub max: LexBound<'a>,
}

impl<'a> LexRange<'a> {
    /// Redis's `zslParseLexRange`.
    pub fn parse(min: &'a [u8], max: &'a [u8]) -> Result<LexRange<'a>, &'static str> {
        let one = |s: &'a [u8]| match s.split_first() {
            Some((b'-', [])) => Ok(LexBound::Min),
            Some((b'+', [])) => Ok(LexBound::Max),
            Some((b'[', rest)) => Ok(LexBound::Inclusive(rest)),
            Some((b'(', rest)) => Ok(LexBound::Exclusive(rest)),
            _ => Err(ERR_LEX_RANGE),
        };
        Ok(LexRange { min: one(min)?, max: one(max)? })
    }

    /// True if `m` is at or above the lower bound.
    pub fn above_min(&self, m: &[u8]) -> bool {
        match self.min {
            LexBound::Min => true,
            LexBound::Max => false,
            LexBound::Inclusive(b) => m >= b,
            LexBound::Exclusive(b) => m > b,
        }
    }

    /// True if `m` is at or below the upper bound.
    pub fn below_max(&self, m: &[u8]) -> bool {
        match self.max {
            LexBound::Min => false,
            LexBound::Max => true,
            LexBound::Inclusive(b) => m <= b,
            LexBound::Exclusive(b) => m < b,
        }
    }
}

/// The longest text [`format_score`] writes: a sign, 17 digits, the
/// point and "e-308" (`-2.2250738585072014e-308`).
pub const SCORE_TEXT_MAX: usize = 24;

/// `%.17g`'s precision: significant digits.
const PRECISION: i32 = 17;
/// 10^17: the exact decimal of a score below this (as an integer of
/// digits) has at most `PRECISION` significant digits.
const TEN_POW_PRECISION: u64 = 100_000_000_000_000_000;
/// Binary fraction digits the fast path takes: m·2^-k is m·5^k·10^-k,
/// and 5^27 < 2^63 keeps m·5^k (m < 2^53) inside a u128.
const FAST_FRACTION_BITS_MAX: u32 = 27;

/// Appends `v` as Redis 7.0 replies with a score: `%.17g`, and "inf" /
/// "-inf" (1.5 → "1.5", 2 → "2", 0.1 → "0.10000000000000001",
/// 1e21 → "1e+21").
///
/// `%.17g` prints the exact binary value rounded to 17 significant
/// digits, then drops the fraction's trailing zeros. Most scores are
/// integers or short binary fractions (timestamps, counters, j/2) whose
/// exact decimal has at most 17 digits: those are printed straight from
/// the bits ([`exact_short`], tens of instructions). The others (0.1's
/// exact value has 55 digits) take core's exact formatter, which can fall
/// back to its bignum path (~1,700 instructions a score, callgrind of the
/// hot ZPOPMIN in docs/bench-log/2026-11-26-collections.md § Long lists go
/// large, collection runs prefetched).
pub fn format_score(v: f64, out: &mut Vec<u8>) {
    let mut buf = [0u8; SCORE_TEXT_MAX];
    let n = format_score_to(v, &mut buf);
    out.extend_from_slice(&buf[..n]);
}

/// [`format_score`] into a buffer on the stack; the text's length.
pub fn format_score_to(v: f64, buf: &mut [u8; SCORE_TEXT_MAX]) -> usize {
    if v.is_nan() {
        return put(buf, 0, b"nan");
    }
    if v.is_infinite() {
        return put(buf, 0, if v > 0.0 { b"inf" } else { b"-inf" });
    }
    if v == 0.0 {
        return put(buf, 0, if v.is_sign_negative() { b"-0" } else { b"0" });
    }
    if let Some(n) = exact_short(v, buf) {
        return n;
    }
    let mut s = String::with_capacity(SCORE_TEXT_MAX + 8);
    format_general(v, &mut s);
    put(buf, 0, s.as_bytes())
}

/// Copies `b` to `buf[at..]`; the end.
fn put(buf: &mut [u8; SCORE_TEXT_MAX], at: usize, b: &[u8]) -> usize {
    buf[at..at + b.len()].copy_from_slice(b);
    at + b.len()
}

/// `%.17g` of a normal `v` = m·2^e whose exact decimal has at most 17
/// significant digits: an integer below 10^17, or m·2^-k (m odd, k ≤ 27)
/// with m·5^k below 10^17, which is that decimal's digits (odd, so no
/// trailing zero for `%g` to drop). None for every other value.
fn exact_short(v: f64, buf: &mut [u8; SCORE_TEXT_MAX]) -> Option<usize> {
    /// Bits of an f64's fraction field.
    const FRACTION_BITS: u32 = 52;
    /// The exponent field's bias, plus the fraction's bits.
    const EXP_OFFSET: i32 = 1075;
    let bits = v.to_bits();
    let exp_field = ((bits >> FRACTION_BITS) & 0x7ff) as i32;
    if exp_field == 0 {
        return None; // zero and subnormals
    }
    let mut m = (bits & ((1u64 << FRACTION_BITS) - 1)) | (1u64 << FRACTION_BITS);
    let mut e = exp_field - EXP_OFFSET;
    let tz = m.trailing_zeros();
    m >>= tz;
    e += tz as i32;
    let (digits, k) = if e >= 0 {
        // m < 2^53 and 10^17 < 2^57: anything shifted further is too big.
        if e > 4 + FRACTION_BITS as i32 {
            return None;
        }
        (u128::from(m) << e, 0u32)
    } else {
        let k = e.unsigned_abs();
        if k > FAST_FRACTION_BITS_MAX {
            return None;
        }
        (u128::from(m) * 5u128.pow(k), k)
    };
    if digits >= u128::from(TEN_POW_PRECISION) {
        return None;
    }
    // The digits, most significant first.
    let mut d = [0u8; PRECISION as usize];
    let mut rest = digits as u64;
    let mut len = 0;
    while rest > 0 && len < d.len() {
        d[d.len() - 1 - len] = b'0' + (rest % 10) as u8;
        rest /= 10;
        len += 1;
    }
    let d = &d[d.len() - len..];
    let k = k as usize;
    let mut at = if v < 0.0 { put(buf, 0, b"-") } else { 0 };
    // The decimal exponent of the first digit.
    let exp10 = len as i32 - 1 - k as i32;
    if exp10 < -4 {
        // Scientific, as %g below 1e-4: d.ddde-XX (k ≤ 27: two digits).
        at = put(buf, at, &d[..1]);
        if len > 1 {
            at = put(buf, at, b".");
            at = put(buf, at, &d[1..]);
        }
        let x = exp10.unsigned_abs() as u8;
        return Some(put(buf, at, &[b'e', b'-', b'0' + x / 10, b'0' + x % 10]));
    }
    if k == 0 {
        Some(put(buf, at, d))
    } else if len > k {
        at = put(buf, at, &d[..len - k]);
        at = put(buf, at, b".");
        Some(put(buf, at, &d[len - k..]))
    } else {
        at = put(buf, at, b"0.");
        for _ in len..k {
            at = put(buf, at, b"0");
        }
        Some(put(buf, at, d))
    }
}

/// `%.17g` through core's exact formatter (any finite, nonzero `v`).
fn format_general(v: f64, out: &mut String) {
    use std::fmt::Write;
    // 17 significant digits in scientific form: d.dddddddddddddddde±X.
    let sci = format!("{:.*e}", (PRECISION - 1) as usize, v);
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..PRECISION).contains(&exp) {
        let mant = trim_fraction(mant);
        let _ = write!(out, "{mant}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    } else {
        let fixed = format!("{:.*}", (PRECISION - 1 - exp) as usize, v);
        out.push_str(trim_fraction(&fixed));
    }
}

/// `%g` drops trailing zeros of the fraction, and the point if nothing is
/// left after it.
fn trim_fraction(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(v: f64) -> String {
        let mut out = Vec::new();
        format_score(v, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn formats_like_redis() {
        // Pairs from redis-server 7.0.15's replies.
        for (v, s) in [
            (1.5, "1.5"),
            (2.0, "2"),
            (0.1, "0.10000000000000001"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (1e300, "1.0000000000000001e+300"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (0.0, "0"),
            (1e-5, "1.0000000000000001e-05"),
            (0.30000000000000004, "0.30000000000000004"),
            (100.0, "100"),
            (1e21, "1e+21"),
            (1e308, "1e+308"),
            (1e-310, "9.9999999999999694e-311"),
            (-2.5, "-2.5"),
            (16.0, "16"),
        ] {
            assert_eq!(fmt(v), s, "{v:e}");
        }
    }

    /// The fast path agrees with core's exact formatter wherever it
    /// answers, and answers for integers and short binary fractions.
    #[test]
    fn exact_short_agrees_with_the_general_path() {
        let general = |v: f64| {
            let mut s = String::new();
            format_general(v, &mut s);
            s
        };
        let mut checked = 0;
        let mut try_one = |v: f64| {
            let mut buf = [0u8; SCORE_TEXT_MAX];
            if let Some(n) = exact_short(v, &mut buf) {
                assert_eq!(std::str::from_utf8(&buf[..n]).unwrap(), general(v), "{v:e}");
                checked += 1;
            }
        };
        // A fixed xorshift stream: integers, j/2^k, and raw bit patterns.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for i in 0..200_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let j = (x >> (i % 60)) as i64 * if i % 3 == 0 { -1 } else { 1 };
            try_one(j as f64);
            try_one(j as f64 / f64::from(1u32 << (i % 31)));
            try_one(f64::from_bits(x));
            try_one((x % 1000) as f64 / 1024.0 / 1024.0 / 64.0);
        }
        for v in [
            1e17,
            1e17 - 16.0,
            99999999999999984.0,
            2f64.powi(56),
            2f64.powi(-27),
            2f64.powi(-28),
            0.5,
            1e-4,
            6.103515625e-05,
        ] {
            try_one(v);
            try_one(-v);
        }
        assert!(checked > 200_000, "{checked}");
        // Where it must answer.
        let mut buf = [0u8; SCORE_TEXT_MAX];
        for v in [1.0, -3.0, 1.5, 1700000000000.0, 0.25, 99999999999999984.0, 2f64.powi(-20)] {
            assert!(exact_short(v, &mut buf).is_some(), "{v:e}");
        }
        for v in [0.1, 1e17, 2f64.powi(-28), 1e-310] {
            assert!(exact_short(v, &mut buf).is_none(), "{v:e}");
        }
    }

    #[test]
    fn parses_like_redis() {
        // The integer path and the general one agree.
        for t in [
            &b"000000012345"[..],
            b"-17",
            b"+5",
            b"0",
            b"-0",
            b"999999999999999",
            b"1234567890123456",
            b"12345678901234567890",
        ] {
            let text = std::str::from_utf8(t).unwrap();
            let want: f64 = text.parse().unwrap();
            assert_eq!(strtod(t), Some((want, false)), "{text}");
            assert_eq!(strtod(t).unwrap().0.is_sign_negative(), want.is_sign_negative(), "{text}");
        }
        for bad in [&b"+"[..], b"-", b"1-", b"--1", b"+-1", b"1 ", b"0x", b"1x"] {
            assert_eq!(strtod(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
        assert_eq!(strtod(b"0X1P4"), Some((16.0, false)));
        assert_eq!(strtod(b"-Inf"), Some((f64::NEG_INFINITY, false)));
        assert_eq!(strtod(b"1e-400"), Some((0.0, true)));
        assert_eq!(strtod(b"0e-400"), Some((0.0, false)));
        assert_eq!(strtod(b".5e1"), Some((5.0, false)));
        assert_eq!(parse_score(b"1.5"), Ok(1.5));
        assert_eq!(parse_score(b"0x10"), Ok(16.0));
        assert_eq!(parse_score(b"1."), Ok(1.0));
        assert_eq!(parse_score(b".5"), Ok(0.5));
        assert_eq!(parse_score(b"INFINITY"), Ok(f64::INFINITY));
        assert_eq!(parse_score(b"-inf"), Ok(f64::NEG_INFINITY));
        assert_eq!(parse_score(b"-0"), Ok(0.0));
        assert!(parse_score(b"-0").unwrap().is_sign_positive());
        assert_eq!(parse_score(b"1e-310"), Ok(1e-310));
        for bad in [&b"1e400"[..], b"1e-400", b" 1", b"1 ", b"", b"nan", b"abc", b"1e", b"0x"] {
            assert_eq!(parse_score(bad), Err(ERR_NOT_FLOAT), "{:?}", String::from_utf8_lossy(bad));
        }
        let r = ScoreRange::parse(b"(1.5", b"+inf").unwrap();
        assert!(r.min_exclusive && r.min == 1.5 && r.max == f64::INFINITY);
        let r = ScoreRange::parse(b"", b"(").unwrap();
        assert!(r.min == 0.0 && r.max == 0.0 && r.max_exclusive);
        assert_eq!(ScoreRange::parse(b"1e400", b"inf").unwrap().min, f64::INFINITY);
        assert_eq!(ScoreRange::parse(b"x", b"1"), Err(ERR_RANGE_NOT_FLOAT));
        assert_eq!(ScoreRange::parse(b"nan", b"1"), Err(ERR_RANGE_NOT_FLOAT));
        assert_eq!(LexRange::parse(b"x", b"+"), Err(ERR_LEX_RANGE));
        assert_eq!(LexRange::parse(b"-", b"+x"), Err(ERR_LEX_RANGE));
        assert_eq!(
            LexRange::parse(b"[a", b"(b").unwrap(),
            LexRange { min: LexBound::Inclusive(b"a"), max: LexBound::Exclusive(b"b") }
        );
    }
}
