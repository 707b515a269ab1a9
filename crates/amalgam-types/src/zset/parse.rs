//! Scores and ranges from argument bytes, and scores into reply bytes,
//! as Redis 7.0 reads and writes them.

/// ZADD / ZINCRBY / ZSCORE-style argument errors (Redis 7.0's texts).
pub const ERR_NOT_FLOAT: &str = "ERR value is not a valid float";
pub const ERR_RANGE_NOT_FLOAT: &str = "ERR min or max is not a float";
pub const ERR_LEX_RANGE: &str = "ERR min or max not valid string range item";

/// strtod's reading of `s`: the value and whether the text overflowed
/// or underflowed to zero (ERANGE), or None if `s` is not entirely a
/// number. Accepts what glibc's strtod accepts: decimal with optional
/// exponent, `inf`/`infinity`/`nan` in any case, hexadecimal `0x1.8p3`;
/// no surrounding spaces (Redis rejects a leading space and any trailing
/// byte).
fn strtod(s: &[u8]) -> Option<(f64, bool)> {
    let text = std::str::from_utf8(s).ok()?;
    let (neg, body) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
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
        // Rust's grammar is strtod's decimal grammar minus the words
        // handled above; reject anything else it would accept oddly.
        if !body.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-')) {
            return None;
        }
        body.parse::<f64>().ok()?
    };
    let mantissa = lower.split(['e', 'p']).next().unwrap_or("");
    let nonzero = mantissa.trim_start_matches("0x").bytes().any(|b| b.is_ascii_hexdigit() && b != b'0');
    let erange = v.is_infinite() || (v == 0.0 && nonzero);
    Some((if neg { -v } else { v }, erange))
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

/// A score argument (ZADD, ZINCRBY): Redis's `getDoubleFromObject`
/// rules: not empty, no NaN, no overflow to ±inf or underflow to 0 from
/// a number that is neither.
pub fn parse_score(s: &[u8]) -> Result<f64, &'static str> {
    match strtod(s) {
        Some((v, false)) if !s.is_empty() && !v.is_nan() => Ok(normalize(v)),
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

/// Appends `v` as Redis 7.0 replies with a score: `%.17g`, and "inf" /
/// "-inf" (1.5 → "1.5", 2 → "2", 0.1 → "0.10000000000000001",
/// 1e21 → "1e+21").
pub fn format_score(v: f64, out: &mut Vec<u8>) {
    use std::io::Write;
    if v.is_nan() {
        out.extend_from_slice(b"nan");
        return;
    }
    if v.is_infinite() {
        out.extend_from_slice(if v > 0.0 { b"inf" } else { b"-inf" });
        return;
    }
    if v == 0.0 {
        out.extend_from_slice(if v.is_sign_negative() { b"-0" } else { b"0" });
        return;
    }
    /// `%.17g`'s precision.
    const PRECISION: i32 = 17;
    // 17 significant digits in scientific form: d.dddddddddddddddde±X.
    let sci = format!("{:.*e}", (PRECISION - 1) as usize, v);
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..PRECISION).contains(&exp) {
        let mant = trim_fraction(mant);
        let _ = write!(out, "{mant}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    } else {
        let fixed = format!("{:.*}", (PRECISION - 1 - exp) as usize, v);
        out.extend_from_slice(trim_fraction(&fixed).as_bytes());
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

    #[test]
    fn parses_like_redis() {
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
