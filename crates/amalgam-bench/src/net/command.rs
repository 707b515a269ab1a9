//! The RESP collection commands `amalgam-bench net --protocol resp
//! --command …` sends (issue 19 §6), and what each expects back.
//!
//! Every collection key holds `--members` members, named by their member
//! number `j` (`0..members`):
//!
//! * **key**: the key id's fixed-width hex (`workload::key_into`) with its
//!   first character replaced by the type's letter (`h`, `l`, `s`, `z`), so
//!   runs of different types (and the GET/SET mix, whose keys are all hex)
//!   never meet one key of another type (`WRONGTYPE`). The flags check that
//!   the key count fits in the remaining digits.
//! * **member / field name**: `j`'s hex, left-padded with '0' to
//!   `max(value bytes, MEMBER_BYTES_MIN)`: a set's or a sorted set's member
//!   is its payload, so it is value-sized; the leading '0's keep Redis from
//!   taking it for an integer (no intset).
//! * **value** (hash values, list elements): `value bytes` bytes, one of the
//!   driver's prebuilt values chosen by `key + j`.
//! * **score**: `key number + j`, a decimal integer: in the preload the
//!   collection's key id, in the timed phase the key the stream drew (so
//!   with `--hot-key` ZADD moves members around the one sorted set; without
//!   it, it rewrites the preloaded score).
//!
//! In the timed phase each request's member number is the connection's
//! request count modulo `members`. With `--hot-key` every request names the
//! key with id 0 (the preload fills only that one).
//!
//! | command     | request                      | reply expected              |
//! |-------------|------------------------------|-----------------------------|
//! | `hset`      | `HSET k f_j v`               | integer (write)             |
//! | `hget`      | `HGET k f_j`                 | bulk of value bytes / null  |
//! | `lpush`     | `LPUSH k v`                  | integer (write)             |
//! | `lpop`      | `LPOP k`                     | bulk of value bytes / null  |
//! | `sadd`      | `SADD k m_j`                 | integer (write)             |
//! | `sismember` | `SISMEMBER k m_j`            | `:1` hit / `:0` miss        |
//! | `zadd`      | `ZADD k score m_j`           | integer (write)             |
//! | `zrange`    | `ZRANGE k 0 9`               | array, ≤ 10 (empty: miss)   |
//! | `zscore`    | `ZSCORE k m_j`               | bulk / null                 |
//! | `pfadd`     | `PFADD k m_i`                | integer (write)             |
//! | `pfcount`   | `PFCOUNT k k+1 … k+9`        | integer (> 0: hit)          |
//! | `geosearch` | `GEOSEARCH k FROMLONLAT x y BYRADIUS 100 km` | array (empty: miss) |
//!
//! HyperLogLog (`p` keys) and geo (`g` keys, a sorted set) are issue 36's
//! benchmarks. PFADD's element is `m_i` with `i = stream key number ×
//! members + j`: nearly every request adds an element the key has not seen
//! (a count of visitors grows), where `m_j` alone would repeat the
//! preload's. PFCOUNT counts the union of [`PFCOUNT_KEYS`] consecutive keys
//! (ids past the key space are missing keys: empty HyperLogLogs). A geo
//! member `m_j` sits at [`geo_point`]`(j)`, spread pseudo-randomly over the
//! globe; GEOSEARCH looks [`GEO_RADIUS_KM`] around member `m_j`'s own point
//! (so at least that member answers), which with a million members
//! (uniform in longitude and latitude) finds some sixty.
//!
//! `lpush` and `lpop` with `--hot-key` alternate on every connection
//! (`lpush`: LPUSH first, then LPOP, LPUSH, …; `lpop`: LPOP first): every
//! connection pushes onto and pops from the one list, which stays about
//! its preloaded length. Without `--hot-key`, `lpush` only pushes (lists
//! grow for the whole run) and `lpop` only pops (a list popped empty
//! answers null: a miss).
//!
//! The preload fills each collection with one variadic request
//! ([`push_fill`]: `HSET k f_0 v f_1 v …`, `LPUSH k v v …`, `SADD k m_0 …`,
//! `ZADD k s_0 m_0 …`) and checks its integer reply; the verification asks
//! the cardinality ([`push_card`]: HLEN, LLEN, SCARD, ZCARD) of a sample of
//! keys and wants at least `members`.

use super::proto::{push_bulk, push_decimal, Event};
use crate::workload::key_into;

/// What the timed phase sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Command {
    /// The workload's GET/SET mix (the default; any protocol).
    Getset,
    /// `HSET key field value`.
    Hset,
    /// `HGET key field`.
    Hget,
    /// `LPUSH key value` (with `--hot-key`: alternating with LPOP).
    Lpush,
    /// `LPOP key` (with `--hot-key`: alternating with LPUSH).
    Lpop,
    /// `SADD key member`.
    Sadd,
    /// `SISMEMBER key member`.
    Sismember,
    /// `ZADD key score member`.
    Zadd,
    /// `ZRANGE key 0 9`.
    Zrange,
    /// `ZSCORE key member`.
    Zscore,
    /// `PFADD key element` (a new element nearly every time).
    Pfadd,
    /// `PFCOUNT key … key+9`: the union of ten HyperLogLogs.
    Pfcount,
    /// `GEOSEARCH key FROMLONLAT lon lat BYRADIUS 100 km` around member j.
    Geosearch,
}

/// Shortest member / field name, in bytes (8 hex digits hold any u32).
pub const MEMBER_BYTES_MIN: usize = 8;
/// Most members per collection (`--members`): issue 36's GEOSEARCH over a
/// million members.
pub const MEMBERS_MAX: usize = 1 << 20;
/// Members per preload request: a larger collection is filled by several
/// variadic requests of this many (each a few hundred KiB at most).
pub const FILL_MEMBERS_PER_REQUEST: usize = 4096;
/// Keys one PFCOUNT counts the union of.
pub const PFCOUNT_KEYS: u64 = 10;
/// GEOSEARCH's radius, in kilometres.
pub const GEO_RADIUS_KM: u32 = 100;
/// How far below `--members` a HyperLogLog's count may read in the
/// preload's verification (its standard error is 0.81%; small counts are
/// exact in the sparse form).
pub const HLL_COUNT_SLACK_PERCENT: usize = 5;
/// Elements `ZRANGE k 0 9` returns at most.
pub const ZRANGE_ELEMENTS: usize = 10;

/// A collection command's data type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Type {
    /// Hash.
    Hash,
    /// List.
    List,
    /// Set.
    Set,
    /// Sorted set.
    Zset,
    /// HyperLogLog (a string).
    Hll,
    /// Geo (a sorted set of geohashes).
    Geo,
}

/// What a reply to a request must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// A write: any integer.
    Write,
    /// A bulk of exactly the value size, or null.
    Value,
    /// A bulk of any size (a score), or null.
    Score,
    /// `:1` (hit) or `:0` (miss).
    Member,
    /// An array of at most [`ZRANGE_ELEMENTS`] (empty: a miss).
    Range,
    /// An array of any length (empty: a miss).
    Found,
    /// An integer: positive a hit, 0 a miss.
    Count,
    /// A cardinality of at least `members` (the verification).
    Card,
    /// A HyperLogLog's estimate of at least `members` less
    /// [`HLL_COUNT_SLACK_PERCENT`] (the verification).
    Estimate,
}

/// How a reply counts: a completed write, a read that hit or missed, or
/// not a reply the request can have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A write's reply.
    Written,
    /// A read found what it asked for.
    Hit,
    /// A read found nothing.
    Miss,
    /// A hit of the wrong size (counted as `wrong_size`, still a hit).
    WrongSize,
    /// Does not fit the request.
    Unexpected,
}

impl Command {
    /// Name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Command::Getset => "getset",
            Command::Hset => "hset",
            Command::Hget => "hget",
            Command::Lpush => "lpush",
            Command::Lpop => "lpop",
            Command::Sadd => "sadd",
            Command::Sismember => "sismember",
            Command::Zadd => "zadd",
            Command::Zrange => "zrange",
            Command::Zscore => "zscore",
            Command::Pfadd => "pfadd",
            Command::Pfcount => "pfcount",
            Command::Geosearch => "geosearch",
        }
    }

    /// The collection type, `None` for the GET/SET mix.
    pub fn ty(self) -> Option<Type> {
        match self {
            Command::Getset => None,
            Command::Hset | Command::Hget => Some(Type::Hash),
            Command::Lpush | Command::Lpop => Some(Type::List),
            Command::Sadd | Command::Sismember => Some(Type::Set),
            Command::Zadd | Command::Zrange | Command::Zscore => Some(Type::Zset),
            Command::Pfadd | Command::Pfcount => Some(Type::Hll),
            Command::Geosearch => Some(Type::Geo),
        }
    }

    /// The command a connection sends as its `seq`-th request: LPUSH and
    /// LPOP alternate on a hot key, starting with the one named.
    pub fn at(self, seq: u64, hot_key: bool) -> Command {
        match self {
            Command::Lpush | Command::Lpop if hot_key && seq % 2 == 1 => {
                if self == Command::Lpush {
                    Command::Lpop
                } else {
                    Command::Lpush
                }
            }
            c => c,
        }
    }

    /// The reply this command expects.
    pub fn expect(self) -> Expect {
        match self {
            Command::Getset | Command::Hset | Command::Lpush | Command::Sadd | Command::Zadd | Command::Pfadd => {
                Expect::Write
            }
            Command::Pfcount => Expect::Count,
            Command::Geosearch => Expect::Found,
            Command::Hget | Command::Lpop => Expect::Value,
            Command::Zscore => Expect::Score,
            Command::Sismember => Expect::Member,
            Command::Zrange => Expect::Range,
        }
    }
}

impl Type {
    fn letter(self) -> u8 {
        match self {
            Type::Hash => b'h',
            Type::List => b'l',
            Type::Set => b's',
            Type::Zset => b'z',
            Type::Hll => b'p',
            Type::Geo => b'g',
        }
    }

    /// The verification's expectation of a preloaded key.
    pub fn filled(self) -> Expect {
        if self == Type::Hll {
            Expect::Estimate
        } else {
            Expect::Card
        }
    }
}

impl Expect {
    /// Classifies `event` (errors are the driver's, not seen here).
    pub fn judge(self, event: Event, value_bytes: usize, members: usize) -> Outcome {
        match (self, event) {
            (Expect::Write, Event::Integer(_)) => Outcome::Written,
            (Expect::Value, Event::Value { len, .. }) if len == value_bytes => Outcome::Hit,
            (Expect::Value, Event::Value { .. }) => Outcome::WrongSize,
            (Expect::Value | Expect::Score, Event::Miss) => Outcome::Miss,
            (Expect::Score, Event::Value { .. }) => Outcome::Hit,
            (Expect::Member, Event::Integer(1)) => Outcome::Hit,
            (Expect::Member, Event::Integer(0)) => Outcome::Miss,
            (Expect::Range, Event::Array { len: 0 }) => Outcome::Miss,
            (Expect::Range, Event::Array { len }) if len <= ZRANGE_ELEMENTS => Outcome::Hit,
            (Expect::Found, Event::Array { len: 0 }) | (Expect::Count, Event::Integer(0)) => Outcome::Miss,
            (Expect::Found, Event::Array { .. }) => Outcome::Hit,
            (Expect::Count, Event::Integer(n)) if n > 0 => Outcome::Hit,
            (Expect::Estimate, Event::Integer(n)) => {
                let floor = members - members * HLL_COUNT_SLACK_PERCENT / 100;
                if usize::try_from(n).is_ok_and(|n| n >= floor) {
                    Outcome::Hit
                } else {
                    Outcome::Miss
                }
            }
            (Expect::Card, Event::Integer(n)) if usize::try_from(n).is_ok_and(|n| n >= members) => Outcome::Hit,
            (Expect::Card, Event::Integer(_)) => Outcome::Miss,
            _ => Outcome::Unexpected,
        }
    }
}

/// Per-connection scratch for encoding keys and members.
#[derive(Debug, Default)]
pub struct Scratch {
    key: Vec<u8>,
    member: Vec<u8>,
    number: Vec<u8>,
}

/// Member `j`'s point, `(longitude, latitude)` in degrees: a splitmix64 of
/// `j` spread uniformly over longitude [-180, 180) and latitude [-85, 85)
/// (inside the ±85.05112878° a geohash covers).
pub fn geo_point(j: u64) -> (f64, f64) {
    let mut z = j.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    let unit = |bits: u64| (bits & 0xffff_ffff) as f64 / 4_294_967_296.0;
    (-180.0 + 360.0 * unit(z), -85.0 + 170.0 * unit(z >> 32))
}

/// Appends `x` with six decimals (about 0.1 m) as a bulk string.
fn push_degrees(out: &mut Vec<u8>, x: f64, tmp: &mut Vec<u8>) {
    use std::io::Write as _;
    tmp.clear();
    let _ = write!(tmp, "{x:.6}");
    push_bulk(out, tmp);
}

/// Writes collection key `id` of type `ty` into `out`.
pub fn coll_key_into(ty: Type, id: u64, key_bytes: usize, out: &mut Vec<u8>) {
    key_into(id, key_bytes, out);
    out[0] = ty.letter();
}

/// Writes member / field name `j` into `out`.
pub fn member_into(j: u64, value_bytes: usize, out: &mut Vec<u8>) {
    key_into(j, value_bytes.max(MEMBER_BYTES_MIN), out);
}

/// Appends a RESP array header of `n` elements.
fn push_header(out: &mut Vec<u8>, n: usize) {
    out.push(b'*');
    push_decimal(out, n);
    out.extend_from_slice(b"\r\n");
}

/// Which collection, member and score a request names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    /// Collection key id.
    pub key: u64,
    /// Member number.
    pub member: u64,
    /// The key number the score derives from (`score_of`).
    pub score_key: u64,
}

/// The score of member `j` under key number `key`.
pub fn score_of(key: u64, j: u64) -> u64 {
    key.saturating_add(j)
}

/// Appends the request of `cmd` (not [`Command::Getset`]) on `t`; `value`
/// is the hash value or list
/// element it writes, of the run's value size (which also sizes the member
/// name, so it is passed whatever the command).
pub fn push_request(cmd: Command, out: &mut Vec<u8>, t: Target, key_bytes: usize, value: &[u8], s: &mut Scratch) {
    let Some(ty) = cmd.ty() else { unreachable!("GET/SET is proto::push_get/push_set") };
    coll_key_into(ty, t.key, key_bytes, &mut s.key);
    member_into(t.member, value.len(), &mut s.member);
    let (name, n): (&[u8], usize) = match cmd {
        Command::Getset => unreachable!("no type"),
        Command::Hset => (b"HSET", 4),
        Command::Hget => (b"HGET", 3),
        Command::Lpush => (b"LPUSH", 3),
        Command::Lpop => (b"LPOP", 2),
        Command::Sadd => (b"SADD", 3),
        Command::Sismember => (b"SISMEMBER", 3),
        Command::Zadd => (b"ZADD", 4),
        Command::Zrange => (b"ZRANGE", 4),
        Command::Zscore => (b"ZSCORE", 3),
        Command::Pfadd => (b"PFADD", 3),
        Command::Pfcount => (b"PFCOUNT", 1 + PFCOUNT_KEYS as usize),
        Command::Geosearch => (b"GEOSEARCH", 8),
    };
    push_header(out, n);
    push_bulk(out, name);
    push_bulk(out, &s.key);
    match cmd {
        Command::Hset => {
            push_bulk(out, &s.member);
            push_bulk(out, value);
        }
        Command::Lpush => push_bulk(out, value),
        Command::Lpop => {}
        Command::Zadd => {
            push_score(out, score_of(t.score_key, t.member), &mut s.key);
            push_bulk(out, &s.member);
        }
        Command::Zrange => {
            push_bulk(out, b"0");
            push_bulk(out, b"9");
        }
        Command::Pfadd => {
            let i = t.score_key.wrapping_mul(MEMBERS_MAX as u64).wrapping_add(t.member);
            member_into(i, value.len(), &mut s.member);
            push_bulk(out, &s.member);
        }
        Command::Pfcount => {
            for k in 1..PFCOUNT_KEYS {
                coll_key_into(ty, t.key.wrapping_add(k), key_bytes, &mut s.key);
                push_bulk(out, &s.key);
            }
        }
        Command::Geosearch => {
            let (lon, lat) = geo_point(t.member);
            push_bulk(out, b"FROMLONLAT");
            push_degrees(out, lon, &mut s.number);
            push_degrees(out, lat, &mut s.number);
            push_bulk(out, b"BYRADIUS");
            s.number.clear();
            push_decimal(&mut s.number, GEO_RADIUS_KM as usize);
            push_bulk(out, &s.number);
            push_bulk(out, b"km");
        }
        _ => push_bulk(out, &s.member),
    }
}

/// Appends `score` as a bulk string (`tmp` is reused).
fn push_score(out: &mut Vec<u8>, score: u64, tmp: &mut Vec<u8>) {
    tmp.clear();
    push_decimal(tmp, usize::try_from(score).unwrap_or(usize::MAX));
    push_bulk(out, tmp);
}

/// Preload requests that fill one collection of `members` members.
pub fn fill_requests(members: usize) -> u64 {
    members.div_ceil(FILL_MEMBERS_PER_REQUEST).max(1) as u64
}

/// The members the `chunk`-th preload request of a collection adds (of
/// [`fill_requests`]).
pub fn fill_chunk(chunk: u64, members: usize) -> std::ops::Range<u64> {
    let per = FILL_MEMBERS_PER_REQUEST as u64;
    chunk * per..((chunk + 1) * per).min(members as u64)
}

/// Appends a preload request filling collection key `key` of type `ty`
/// with the members `js` (a [`fill_chunk`]); `value(j)` is member `j`'s
/// hash value or list element, all of the run's value size (which sizes
/// the member names).
pub fn push_fill<'v>(
    ty: Type,
    out: &mut Vec<u8>,
    key: u64,
    js: std::ops::Range<u64>,
    key_bytes: usize,
    value: impl Fn(u64) -> &'v [u8],
    s: &mut Scratch,
) {
    let value_bytes = value(0).len();
    let (name, per): (&[u8], usize) = match ty {
        Type::Hash => (b"HSET", 2),
        Type::List => (b"LPUSH", 1),
        Type::Set => (b"SADD", 1),
        Type::Zset => (b"ZADD", 2),
        Type::Hll => (b"PFADD", 1),
        Type::Geo => (b"GEOADD", 3),
    };
    push_header(out, 2 + per * (js.end - js.start) as usize);
    push_bulk(out, name);
    coll_key_into(ty, key, key_bytes, &mut s.key);
    push_bulk(out, &s.key);
    for j in js {
        member_into(j, value_bytes, &mut s.member);
        match ty {
            Type::Hash => {
                push_bulk(out, &s.member);
                push_bulk(out, value(j));
            }
            Type::List => push_bulk(out, value(j)),
            Type::Set | Type::Hll => push_bulk(out, &s.member),
            Type::Zset => {
                push_score(out, score_of(key, j), &mut s.key);
                push_bulk(out, &s.member);
            }
            Type::Geo => {
                let (lon, lat) = geo_point(j);
                push_degrees(out, lon, &mut s.number);
                push_degrees(out, lat, &mut s.number);
                push_bulk(out, &s.member);
            }
        }
    }
}

/// Appends the cardinality request of collection key `key`: HLEN, LLEN,
/// SCARD, ZCARD (of a sorted set or a geo key) or PFCOUNT.
pub fn push_card(ty: Type, out: &mut Vec<u8>, key: u64, key_bytes: usize, s: &mut Scratch) {
    let name: &[u8] = match ty {
        Type::Hash => b"HLEN",
        Type::List => b"LLEN",
        Type::Set => b"SCARD",
        Type::Zset | Type::Geo => b"ZCARD",
        Type::Hll => b"PFCOUNT",
    };
    push_header(out, 2);
    push_bulk(out, name);
    coll_key_into(ty, key, key_bytes, &mut s.key);
    push_bulk(out, &s.key);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The request of `cmd` on key 0x1b, member 2, score key 5, with 4-byte
    /// keys and the 3-byte value "abc" (member names pad to 8).
    fn request(cmd: Command) -> String {
        let mut out = Vec::new();
        let t = Target { key: 0x1b, member: 2, score_key: 5 };
        push_request(cmd, &mut out, t, 4, b"abc", &mut Scratch::default());
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn requests_are_composed() {
        let m = "$8\r\n00000002\r\n";
        let cases = [
            (Command::Hset, format!("*4\r\n$4\r\nHSET\r\n$4\r\nh01b\r\n{m}$3\r\nabc\r\n")),
            (Command::Hget, format!("*3\r\n$4\r\nHGET\r\n$4\r\nh01b\r\n{m}")),
            (Command::Lpush, "*3\r\n$5\r\nLPUSH\r\n$4\r\nl01b\r\n$3\r\nabc\r\n".to_string()),
            (Command::Lpop, "*2\r\n$4\r\nLPOP\r\n$4\r\nl01b\r\n".to_string()),
            (Command::Sadd, format!("*3\r\n$4\r\nSADD\r\n$4\r\ns01b\r\n{m}")),
            (Command::Sismember, format!("*3\r\n$9\r\nSISMEMBER\r\n$4\r\ns01b\r\n{m}")),
            (Command::Zadd, format!("*4\r\n$4\r\nZADD\r\n$4\r\nz01b\r\n$1\r\n7\r\n{m}")),
            (Command::Zrange, "*4\r\n$6\r\nZRANGE\r\n$4\r\nz01b\r\n$1\r\n0\r\n$1\r\n9\r\n".to_string()),
            (Command::Zscore, format!("*3\r\n$6\r\nZSCORE\r\n$4\r\nz01b\r\n{m}")),
            (Command::Pfadd, "*3\r\n$5\r\nPFADD\r\n$4\r\np01b\r\n$8\r\n00500002\r\n".to_string()),
        ];
        for (cmd, want) in cases {
            assert_eq!(request(cmd), want, "{cmd:?}");
        }
        // Value-sized members when values are longer than MEMBER_BYTES_MIN.
        let mut out = Vec::new();
        let v = vec![b'v'; 12];
        push_request(
            Command::Sadd,
            &mut out,
            Target { key: 1, member: 0xa, score_key: 1 },
            4,
            &v,
            &mut Scratch::default(),
        );
        assert_eq!(out, b"*3\r\n$4\r\nSADD\r\n$4\r\ns001\r\n$12\r\n00000000000a\r\n");
    }

    #[test]
    fn hyperloglog_and_geo_requests_are_composed() {
        let keys: String = (0x1b..0x1b + PFCOUNT_KEYS).map(|k| format!("$4\r\np{k:03x}\r\n")).collect();
        assert_eq!(request(Command::Pfcount), format!("*11\r\n$7\r\nPFCOUNT\r\n{keys}"));
        let (lon, lat) = geo_point(2);
        let (lon, lat) = (format!("{lon:.6}"), format!("{lat:.6}"));
        let want = format!(
            "*8\r\n$9\r\nGEOSEARCH\r\n$4\r\ng01b\r\n$10\r\nFROMLONLAT\r\n${}\r\n{lon}\r\n${}\r\n{lat}\r\n\
             $8\r\nBYRADIUS\r\n$3\r\n100\r\n$2\r\nkm\r\n",
            lon.len(),
            lat.len()
        );
        assert_eq!(request(Command::Geosearch), want);
        for j in 0..10_000 {
            let (lon, lat) = geo_point(j);
            assert!((-180.0..180.0).contains(&lon) && (-85.0..85.0).contains(&lat), "{j}: {lon} {lat}");
        }
        let mut out = Vec::new();
        let values = [b"abc".as_slice(); 2];
        push_fill(Type::Geo, &mut out, 3, 0..1, 4, |j| values[j as usize], &mut Scratch::default());
        let (lon, lat) = geo_point(0);
        let (lon, lat) = (format!("{lon:.6}"), format!("{lat:.6}"));
        let want = format!(
            "*5\r\n$6\r\nGEOADD\r\n$4\r\ng003\r\n${}\r\n{lon}\r\n${}\r\n{lat}\r\n$8\r\n00000000\r\n",
            lon.len(),
            lat.len()
        );
        assert_eq!(String::from_utf8(out).unwrap(), want);
    }

    #[test]
    fn large_collections_fill_in_chunks() {
        assert_eq!(fill_requests(1), 1);
        assert_eq!(fill_requests(FILL_MEMBERS_PER_REQUEST), 1);
        assert_eq!(fill_requests(FILL_MEMBERS_PER_REQUEST + 1), 2);
        assert_eq!(fill_requests(MEMBERS_MAX), (MEMBERS_MAX / FILL_MEMBERS_PER_REQUEST) as u64);
        let per = FILL_MEMBERS_PER_REQUEST as u64;
        assert_eq!(fill_chunk(0, 10), 0..10);
        assert_eq!(fill_chunk(1, FILL_MEMBERS_PER_REQUEST + 5), per..per + 5);
        let all: u64 = (0..fill_requests(MEMBERS_MAX - 3)).map(|c| fill_chunk(c, MEMBERS_MAX - 3).count() as u64).sum();
        assert_eq!(all, MEMBERS_MAX as u64 - 3);
    }

    #[test]
    fn hyperloglog_estimates_and_counts_are_judged() {
        assert_eq!(Expect::Estimate.judge(Event::Integer(95), 0, 100), Outcome::Hit);
        assert_eq!(Expect::Estimate.judge(Event::Integer(94), 0, 100), Outcome::Miss);
        assert_eq!(Expect::Count.judge(Event::Integer(3), 0, 1), Outcome::Hit);
        assert_eq!(Expect::Count.judge(Event::Integer(0), 0, 1), Outcome::Miss);
        assert_eq!(Expect::Found.judge(Event::Array { len: 70 }, 0, 1), Outcome::Hit);
        assert_eq!(Expect::Found.judge(Event::Array { len: 0 }, 0, 1), Outcome::Miss);
    }

    #[test]
    fn fills_and_cards_are_composed() {
        let values: [&[u8]; 2] = [b"x0", b"y1"];
        let mut s = Scratch::default();
        let mut out = Vec::new();
        push_fill(Type::Hash, &mut out, 3, 0..2, 4, |j| values[j as usize], &mut s);
        push_fill(Type::List, &mut out, 3, 0..2, 4, |j| values[j as usize], &mut s);
        push_fill(Type::Set, &mut out, 3, 0..2, 4, |j| values[j as usize], &mut s);
        push_fill(Type::Zset, &mut out, 3, 0..2, 4, |j| values[j as usize], &mut s);
        push_card(Type::Zset, &mut out, 3, 4, &mut s);
        let (m0, m1) = ("$8\r\n00000000\r\n", "$8\r\n00000001\r\n");
        let want = format!(
            "*6\r\n$4\r\nHSET\r\n$4\r\nh003\r\n{m0}$2\r\nx0\r\n{m1}$2\r\ny1\r\n\
             *4\r\n$5\r\nLPUSH\r\n$4\r\nl003\r\n$2\r\nx0\r\n$2\r\ny1\r\n\
             *4\r\n$4\r\nSADD\r\n$4\r\ns003\r\n{m0}{m1}\
             *6\r\n$4\r\nZADD\r\n$4\r\nz003\r\n$1\r\n3\r\n{m0}$1\r\n4\r\n{m1}\
             *2\r\n$5\r\nZCARD\r\n$4\r\nz003\r\n"
        );
        assert_eq!(String::from_utf8(out).unwrap(), want);
    }

    #[test]
    fn hot_lists_alternate() {
        let seq = |c: Command, hot| (0..4).map(|i| c.at(i, hot)).collect::<Vec<_>>();
        use Command::{Lpop, Lpush};
        assert_eq!(seq(Lpush, true), [Lpush, Lpop, Lpush, Lpop]);
        assert_eq!(seq(Lpop, true), [Lpop, Lpush, Lpop, Lpush]);
        assert_eq!(seq(Lpop, false), [Lpop; 4]);
        assert_eq!(seq(Command::Hset, true), [Command::Hset; 4]);
    }

    #[test]
    fn replies_are_judged() {
        let v = |len| Event::Value { key: None, len };
        let cases = [
            (Expect::Write, Event::Integer(0), Outcome::Written),
            (Expect::Write, Event::Stored, Outcome::Unexpected),
            (Expect::Value, v(32), Outcome::Hit),
            (Expect::Value, v(31), Outcome::WrongSize),
            (Expect::Value, Event::Miss, Outcome::Miss),
            (Expect::Value, Event::Integer(1), Outcome::Unexpected),
            (Expect::Score, v(2), Outcome::Hit),
            (Expect::Score, Event::Miss, Outcome::Miss),
            (Expect::Member, Event::Integer(1), Outcome::Hit),
            (Expect::Member, Event::Integer(0), Outcome::Miss),
            (Expect::Member, Event::Integer(2), Outcome::Unexpected),
            (Expect::Range, Event::Array { len: 10 }, Outcome::Hit),
            (Expect::Range, Event::Array { len: 0 }, Outcome::Miss),
            (Expect::Range, Event::Array { len: 11 }, Outcome::Unexpected),
            (Expect::Range, Event::Miss, Outcome::Unexpected),
            (Expect::Card, Event::Integer(10), Outcome::Hit),
            (Expect::Card, Event::Integer(9), Outcome::Miss),
            (Expect::Card, Event::Integer(-1), Outcome::Miss),
        ];
        for (expect, event, want) in cases {
            assert_eq!(expect.judge(event, 32, 10), want, "{expect:?} {event:?}");
        }
    }
}
