//! A stream entry's ID (Redis's `streamID`): milliseconds and a sequence
//! number, both `u64`, ordered as the pair. Parsed from a command's
//! argument as Redis 7.0.15's `streamGenericParseIDOrReply` does
//! (`<ms>`, `<ms>-<seq>`, `-`, `+`, and `<ms>-*` where XADD allows it),
//! and printed as `<ms>-<seq>`.

use std::fmt;

/// Redis's reply to an ID that does not parse.
pub const ERR_INVALID_ID: &str = "ERR Invalid stream ID specified as stream command argument";

/// Longest ID argument Redis parses (its 128-byte buffer, less the NUL).
const ID_ARG_BYTES_MAX: usize = 127;

/// A stream entry's ID.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

impl StreamId {
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    pub const MAX: StreamId = StreamId { ms: u64::MAX, seq: u64::MAX };

    pub const fn new(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    /// The next ID (Redis's `streamIncrID`), None past [`StreamId::MAX`].
    pub fn next(self) -> Option<StreamId> {
        if self.seq == u64::MAX {
            if self.ms == u64::MAX {
                return None;
            }
            return Some(StreamId { ms: self.ms + 1, seq: 0 });
        }
        Some(StreamId { ms: self.ms, seq: self.seq + 1 })
    }

    /// The previous ID (Redis's `streamDecrID`), None before 0-0.
    pub fn prev(self) -> Option<StreamId> {
        if self.seq == 0 {
            if self.ms == 0 {
                return None;
            }
            return Some(StreamId { ms: self.ms - 1, seq: u64::MAX });
        }
        Some(StreamId { ms: self.ms, seq: self.seq - 1 })
    }

    /// The ID as 16 big-endian bytes (snapshots, the log).
    pub fn to_bytes(self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&self.ms.to_be_bytes());
        b[8..].copy_from_slice(&self.seq.to_be_bytes());
        b
    }

    /// Reads [`StreamId::to_bytes`]'s 16 bytes.
    pub fn from_bytes(b: [u8; 16]) -> StreamId {
        let (ms, seq) = b.split_at(8);
        StreamId {
            ms: u64::from_be_bytes(ms.try_into().expect("8 bytes")),
            seq: u64::from_be_bytes(seq.try_into().expect("8 bytes")),
        }
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// An ID argument as parsed: the ID, and whether its sequence was given
/// (false for `<ms>-*`, XADD's partial form).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParsedId {
    pub id: StreamId,
    pub seq_given: bool,
}

/// How an argument is parsed (Redis's `strict` and `seq_given` flags).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParseRules {
    /// `-` and `+` refused (strict IDs: XADD, XDEL, XREAD's, exclusive bounds).
    pub strict: bool,
    /// `<ms>-*` accepted (XADD's ID only).
    pub partial_seq: bool,
    /// The sequence of a bare `<ms>`: 0 for a start, `u64::MAX` for an end.
    pub missing_seq: u64,
}

/// Strict parsing with a missing sequence of 0 (most commands).
pub const STRICT: ParseRules = ParseRules { strict: true, partial_seq: false, missing_seq: 0 };

/// Parses an ID argument as Redis 7.0.15 does; None is [`ERR_INVALID_ID`].
pub fn parse(arg: &[u8], rules: ParseRules) -> Option<ParsedId> {
    if arg.len() > ID_ARG_BYTES_MAX {
        return None;
    }
    // Redis copies into a C string: it ends at the first NUL.
    let s = &arg[..arg.iter().position(|&b| b == 0).unwrap_or(arg.len())];
    if s == b"-" || s == b"+" {
        if rules.strict {
            return None;
        }
        let id = if s == b"-" { StreamId::MIN } else { StreamId::MAX };
        return Some(ParsedId { id, seq_given: true });
    }
    let (ms_part, seq_part) = match s.iter().position(|&b| b == b'-') {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let ms = string2ull(ms_part)?;
    let (seq, seq_given) = match seq_part {
        None => (rules.missing_seq, true),
        Some(b"*") if rules.partial_seq => (0, false),
        Some(p) => (string2ull(p)?, true),
    };
    Some(ParsedId { id: StreamId { ms, seq }, seq_given })
}

/// Redis's `string2ull`: `string2ll` (negatives refused), else C's
/// `strtoull` over the whole string (leading spaces and a sign allowed,
/// a negative within `i64` refused by the first test, one past it
/// wrapping as C's does).
fn string2ull(s: &[u8]) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    // isspace(): ' ', \t, \n, \v, \f, \r.
    let start = s.iter().position(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r'))?;
    let t = &s[start..];
    let (neg, digits) = match t.first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: u64 = 0;
    // Bounded by the argument's length (at most ID_ARG_BYTES_MAX).
    for &d in digits {
        v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    if !neg {
        return Some(v);
    }
    // string2ll accepts "-1".."-9223372036854775808" (without leading
    // spaces or zeros) and string2ull refuses the negative; strtoull
    // negates the rest.
    let strict_ll = start == 0 && digits[0] != b'0' && v <= 1u64 << 63;
    if strict_ll {
        return None;
    }
    Some(v.wrapping_neg())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Option<StreamId> {
        parse(s.as_bytes(), ParseRules { strict: false, partial_seq: false, missing_seq: 0 }).map(|x| x.id)
    }

    #[test]
    fn parses_as_redis() {
        assert_eq!(p("1-2"), Some(StreamId::new(1, 2)));
        assert_eq!(p("5"), Some(StreamId::new(5, 0)));
        assert_eq!(p("-"), Some(StreamId::MIN));
        assert_eq!(p("+"), Some(StreamId::MAX));
        assert_eq!(p("18446744073709551615-18446744073709551615"), Some(StreamId::MAX));
        assert_eq!(p("18446744073709551616-0"), None);
        assert_eq!(p("1-"), None);
        assert_eq!(p("-1"), None);
        assert_eq!(p("a"), None);
        assert_eq!(p(""), None);
        assert_eq!(p("1-2-3"), None);
        assert_eq!(p("01-02"), Some(StreamId::new(1, 2)));
        assert_eq!(p("1-*"), None);
        assert_eq!(parse(b"-", STRICT), None);
        let partial = ParseRules { strict: true, partial_seq: true, missing_seq: 0 };
        assert_eq!(parse(b"7-*", partial), Some(ParsedId { id: StreamId::new(7, 0), seq_given: false }));
        let end = ParseRules { strict: false, partial_seq: false, missing_seq: u64::MAX };
        assert_eq!(parse(b"7", end).map(|x| x.id), Some(StreamId::new(7, u64::MAX)));
    }

    #[test]
    fn next_and_prev_wrap_into_ms() {
        assert_eq!(StreamId::new(1, u64::MAX).next(), Some(StreamId::new(2, 0)));
        assert_eq!(StreamId::MAX.next(), None);
        assert_eq!(StreamId::new(2, 0).prev(), Some(StreamId::new(1, u64::MAX)));
        assert_eq!(StreamId::MIN.prev(), None);
        let id = StreamId::new(123, 456);
        assert_eq!(StreamId::from_bytes(id.to_bytes()), id);
        assert_eq!(id.to_string(), "123-456");
    }
}
