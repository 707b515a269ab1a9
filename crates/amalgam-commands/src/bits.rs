//! Bit commands on string values: SETBIT GETBIT BITCOUNT BITPOS BITOP
//! BITFIELD BITFIELD_RO, ported from Redis 7.0's `bitops.c` (bit 0 is the
//! most significant bit of the first byte; a missing key is an endless
//! run of zero bits).
//!
//! Every read-modify-write (SETBIT, BITFIELD with SET or INCRBY) runs
//! under the key's bucket lock through `Store::update`, so it is atomic per
//! key. BITOP reads its sources and writes the destination with all of
//! them held (`resp/multi.rs`), so it is atomic across its keys.
//!
//! A bit offset is refused when its byte would lie at or past the largest
//! string (`proto-max-bulk-len`, 512 MB by default, as Redis's), as
//! SETRANGE refuses one.

use super::strings::{engine_error, is_string};
use super::table::Cmd;
use super::typed::WRONGTYPE;
use super::{int_arg, is, Arg, Ctx};
use amalgam_engine::{Expiry, NewValue, Update};
use amalgam_protocol::resp::{err, push_array, push_error, push_int, push_null, Proto};

const BIT_OFFSET: &str = "ERR bit offset is not an integer or out of range";
const BIT_VALUE: &str = "ERR bit is not an integer or out of range";
const BIT_ARGUMENT: &str = "ERR The bit argument must be 1 or 0.";
const BITFIELD_TYPE: &str =
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.";
const OVERFLOW_TYPE: &str = "ERR Invalid OVERFLOW type specified";
const BITFIELD_RO: &str = "ERR BITFIELD_RO only supports the GET subcommand";
const BITOP_NOT: &str = "ERR BITOP NOT must be called with a single source key.";

pub fn run(ctx: &mut Ctx<'_>, cmd: Cmd, args: &[Arg<'_>], out: &mut Vec<u8>) {
    match cmd {
        Cmd::Setbit => setbit(ctx, args, out),
        Cmd::Getbit => match bit_offset(&args[2], false, 0, ctx.limits.bulk_bytes_max) {
            None => push_error(out, BIT_OFFSET.as_bytes()),
            Some(at) => match ctx.ks.store.get(&args[1], |it| is_string(&it).then(|| get_bit(it.value(), at))) {
                Some(None) => push_error(out, WRONGTYPE.as_bytes()),
                bit => push_int(out, bit.flatten().unwrap_or(0).into()),
            },
        },
        Cmd::Bitcount => bitcount(ctx, args, out),
        Cmd::Bitpos => bitpos(ctx, args, out),
        Cmd::Bitop => bitop(ctx, args, out),
        Cmd::Bitfield => bitfield(ctx, args, false, out),
        Cmd::BitfieldRo => bitfield(ctx, args, true, out),
        _ => {}
    }
}

/// Redis's `getBitOffsetFromArgument`: a non-negative integer, or with
/// `hash` `#N` meaning N times `bits`; its byte must lie below
/// `bytes_max`.
fn bit_offset(a: &[u8], hash: bool, bits: u32, bytes_max: usize) -> Option<u64> {
    let by_width = hash && bits > 0 && a.first() == Some(&b'#');
    let mut n = int_arg(if by_width { &a[1..] } else { a })?;
    if by_width {
        n = n.checked_mul(i64::from(bits))?;
    }
    (n >= 0 && ((n as u64) >> 3) < bytes_max as u64).then_some(n as u64)
}

fn get_bit(v: &[u8], at: u64) -> u8 {
    let byte = (at >> 3) as usize;
    v.get(byte).map_or(0, |b| (b >> (7 - (at & 7))) & 1)
}

fn set_bit(v: &mut [u8], at: u64, on: bool) {
    let byte = (at >> 3) as usize;
    let mask = 1u8 << (7 - (at & 7));
    if on {
        v[byte] |= mask;
    } else {
        v[byte] &= !mask;
    }
}

/// Writes `new` over the key's value (grown with zero bytes to at least
/// `len`), keeping its flags and expiry; answers what `f` returns. `f`
/// gets the value to change and says whether it changed anything.
///
/// A write that leaves the bytes as they were (an existing key, the same
/// bits) writes nothing and publishes no `setbit` (Redis 7.0: neither
/// dirty nor notified).
fn modify<R>(ctx: &Ctx<'_>, key: &[u8], len: usize, mut f: impl FnMut(&mut Vec<u8>) -> R) -> Result<R, Modify> {
    let r = ctx
        .ks
        .store
        .update(key, |old| {
            if old.is_some_and(|it| !is_string(&it)) {
                return (Update::Keep, None);
            }
            let mut v = old.map_or_else(Vec::new, |it| it.value().to_vec());
            if v.len() < len {
                v.resize(len, 0);
            }
            let r = f(&mut v);
            if old.is_some_and(|it| it.value() == v.as_slice()) {
                return (Update::Keep, Some((r, false)));
            }
            let (flags, expiry) = old.map_or((0, Expiry::Never), |it| (it.flags(), it.expiry()));
            (Update::Put { value: NewValue::Owned(v), flags, expiry, fresh_cas: true, marks: 0 }, Some((r, true)))
        })
        .map(|(r, _)| r);
    match r {
        Ok(Some((r, changed))) => {
            if changed {
                ctx.notify(crate::notify::STRING, "setbit", key);
            }
            Ok(r)
        }
        Ok(None) => Err(Modify::WrongType),
        Err(e) => Err(Modify::Engine(e)),
    }
}

/// Why [`modify`] changed nothing.
enum Modify {
    /// The key holds a collection.
    WrongType,
    Engine(amalgam_engine::Error),
}

impl Modify {
    fn reply(self, out: &mut Vec<u8>) {
        match self {
            Modify::WrongType => push_error(out, WRONGTYPE.as_bytes()),
            Modify::Engine(e) => engine_error(e, out),
        }
    }
}

fn setbit(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let Some(at) = bit_offset(&args[2], false, 0, ctx.limits.bulk_bytes_max) else {
        return push_error(out, BIT_OFFSET.as_bytes());
    };
    let on = match &args[3][..] {
        b"1" => true,
        b"0" => false,
        _ => return push_error(out, BIT_VALUE.as_bytes()),
    };
    let len = (at >> 3) as usize + 1;
    match modify(ctx, &args[1], len, |v| {
        let old = get_bit(v, at);
        set_bit(v, at, on);
        old
    }) {
        Ok(old) => push_int(out, old.into()),
        Err(e) => e.reply(out),
    }
}

/// The mask of byte `i`'s bits that lie in the bit range `[start, end]`
/// (`start <= end`, both within the value).
fn range_mask(i: u64, start: u64, end: u64) -> u8 {
    let mut m = 0xffu8;
    if i == start >> 3 {
        m &= 0xff >> (start & 7);
    }
    if i == end >> 3 {
        m &= 0xff << (7 - (end & 7));
    }
    m
}

/// Set bits of `v` in the bit range `[start, end]`; one step per byte.
fn count_bits(v: &[u8], start: u64, end: u64) -> u64 {
    (start >> 3..=end >> 3).map(|i| u64::from((v[i as usize] & range_mask(i, start, end)).count_ones())).sum()
}

/// The first bit equal to `bit` in the bit range `[start, end]` of `v`;
/// one step per byte.
fn find_bit(v: &[u8], start: u64, end: u64, bit: u8) -> Option<u64> {
    (start >> 3..=end >> 3).find_map(|i| {
        let b = if bit == 1 { v[i as usize] } else { !v[i as usize] };
        let x = b & range_mask(i, start, end);
        (x != 0).then(|| i * 8 + u64::from(x.leading_zeros()))
    })
}

/// Redis's start/end conversion for BITCOUNT and BITPOS: negative from
/// the end, clamped into `[0, total - 1]`.
fn clamp_range(mut start: i64, mut end: i64, total: i64) -> (i64, i64) {
    if start < 0 {
        start += total;
    }
    if end < 0 {
        end += total;
    }
    start = start.max(0);
    end = end.max(0);
    if end >= total {
        end = total - 1;
    }
    (start, end)
}

/// BYTE or BIT (true); None is a syntax error.
fn unit(a: &[u8]) -> Option<bool> {
    if is(a, "bit") {
        Some(true)
    } else if is(a, "byte") {
        Some(false)
    } else {
        None
    }
}

fn bitcount(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    // Redis 7.0 looks the key up first: a missing key is 0 whatever the
    // arguments.
    let r = ctx.ks.store.get(&args[1], |it| -> Result<i64, &'static str> {
        if !is_string(&it) {
            return Err(WRONGTYPE);
        }
        let v = it.value();
        let (start, end) = match args.len() {
            2 => (0, v.len() as i64 * 8 - 1),
            4 | 5 => {
                let (Some(s), Some(e)) = (int_arg(&args[2]), int_arg(&args[3])) else { return Err(err::NOT_INTEGER) };
                let bit = if args.len() == 5 { unit(&args[4]).ok_or(err::SYNTAX)? } else { false };
                if s < 0 && e < 0 && s > e {
                    return Ok(0);
                }
                let total = v.len() as i64 * if bit { 8 } else { 1 };
                let (s, e) = clamp_range(s, e, total);
                if s > e {
                    return Ok(0);
                }
                if bit {
                    (s, e)
                } else {
                    (s * 8, e * 8 + 7)
                }
            }
            _ => return Err(err::SYNTAX),
        };
        if start > end {
            return Ok(0);
        }
        Ok(count_bits(v, start as u64, end as u64) as i64)
    });
    match r {
        None => push_int(out, 0),
        Some(Ok(n)) => push_int(out, n),
        Some(Err(m)) => push_error(out, m.as_bytes()),
    }
}

fn bitpos(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let bit = match int_arg(&args[2]) {
        None => return push_error(out, err::NOT_INTEGER.as_bytes()),
        Some(b @ (0 | 1)) => b as u8,
        Some(_) => return push_error(out, BIT_ARGUMENT.as_bytes()),
    };
    let r = ctx.ks.store.get(&args[1], |it| -> Result<i64, &'static str> {
        if !is_string(&it) {
            return Err(WRONGTYPE);
        }
        let v = it.value();
        let len = v.len() as i64;
        // The range in bits, and whether the caller gave its end.
        let (start, end, end_given) = match args.len() {
            3 => (0, len * 8 - 1, false),
            4..=6 => {
                let s = int_arg(&args[3]).ok_or(err::NOT_INTEGER)?;
                let in_bits = if args.len() == 6 { unit(&args[5]).ok_or(err::SYNTAX)? } else { false };
                let (e, given) = if args.len() >= 5 {
                    (int_arg(&args[4]).ok_or(err::NOT_INTEGER)?, true)
                } else if in_bits {
                    (len * 8 + 7, false)
                } else {
                    (len - 1, false)
                };
                let total = if in_bits { len * 8 } else { len };
                let (s, e) = clamp_range(s, e, total);
                if s > e {
                    return Ok(-1);
                }
                if in_bits {
                    (s, e, given)
                } else {
                    (s * 8, e * 8 + 7, given)
                }
            }
            _ => return Err(err::SYNTAX),
        };
        if start > end {
            return Ok(-1);
        }
        if let Some(p) = find_bit(v, start as u64, end as u64, bit) {
            return Ok(p as i64);
        }
        // No such bit. Looking for a clear bit without an end: the bits
        // past the value count as zeros, so the next byte's first bit.
        Ok(if bit == 0 && !end_given { ((end >> 3) + 1) * 8 } else { -1 })
    });
    match r {
        None => push_int(out, if bit == 1 { -1 } else { 0 }),
        Some(Ok(n)) => push_int(out, n),
        Some(Err(m)) => push_error(out, m.as_bytes()),
    }
}

fn bitop(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    #[derive(Clone, Copy, PartialEq)]
    enum Op {
        And,
        Or,
        Xor,
        Not,
    }
    let op = [("and", Op::And), ("or", Op::Or), ("xor", Op::Xor), ("not", Op::Not)]
        .into_iter()
        .find(|(n, _)| is(&args[1], n))
        .map(|(_, o)| o);
    let Some(op) = op else { return push_error(out, err::SYNTAX.as_bytes()) };
    let sources = &args[3..];
    if op == Op::Not && sources.len() != 1 {
        return push_error(out, BITOP_NOT.as_bytes());
    }
    let mut values: Vec<Vec<u8>> = Vec::with_capacity(sources.len());
    for k in sources {
        match ctx.ks.store.get(k, |it| is_string(&it).then(|| it.value().to_vec())) {
            Some(None) => return push_error(out, WRONGTYPE.as_bytes()),
            v => values.push(v.flatten().unwrap_or_default()),
        }
    }
    let len = values.iter().map(Vec::len).max().unwrap_or(0);
    if len == 0 {
        if ctx.ks.store.delete(&args[2]).is_ok() {
            ctx.notify(crate::notify::GENERIC, "del", &args[2]);
        }
        return push_int(out, 0);
    }
    let byte = |v: &Vec<u8>, i: usize| v.get(i).copied().unwrap_or(0);
    let result: Vec<u8> = (0..len)
        .map(|i| {
            let mut acc = byte(&values[0], i);
            if op == Op::Not {
                return !acc;
            }
            for v in &values[1..] {
                let b = byte(v, i);
                acc = match op {
                    Op::And => acc & b,
                    Op::Or => acc | b,
                    _ => acc ^ b,
                };
            }
            acc
        })
        .collect();
    match ctx.ks.store.set(&args[2], &result, 0, Expiry::Never) {
        Ok(_) => {
            ctx.notify(crate::notify::STRING, "set", &args[2]);
            push_int(out, len as i64)
        }
        Err(e) => engine_error(e, out),
    }
}

/// BITFIELD's OVERFLOW modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Overflow {
    Wrap,
    Sat,
    Fail,
}

#[derive(Clone, Copy, Debug)]
enum FieldOp {
    Get,
    Set(i64),
    Incrby(i64),
}

#[derive(Clone, Copy, Debug)]
struct Field {
    op: FieldOp,
    signed: bool,
    bits: u32,
    offset: u64,
    overflow: Overflow,
}

/// `i<1..64>` or `u<1..63>` (Redis's `getBitfieldTypeFromArgument`).
fn field_type(a: &[u8]) -> Option<(bool, u32)> {
    let signed = match a.first()? {
        b'i' => true,
        b'u' => false,
        _ => return None,
    };
    let bits = int_arg(&a[1..])?;
    let ok = bits >= 1 && ((signed && bits <= 64) || (!signed && bits <= 63));
    ok.then_some((signed, bits as u32))
}

/// Parses BITFIELD's operations; Err is the error to answer.
fn fields(args: &[Arg<'_>], read_only: bool, bytes_max: usize) -> Result<Vec<Field>, &'static str> {
    let mut ops = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut j = 2;
    while j < args.len() {
        let left = args.len() - j - 1;
        let a: &[u8] = &args[j];
        let (op_args, kind) = if is(a, "get") && left >= 2 {
            (2, 0)
        } else if is(a, "set") && left >= 3 {
            (3, 1)
        } else if is(a, "incrby") && left >= 3 {
            (3, 2)
        } else if is(a, "overflow") && left >= 1 {
            let m: &[u8] = &args[j + 1];
            overflow = if is(m, "wrap") {
                Overflow::Wrap
            } else if is(m, "sat") {
                Overflow::Sat
            } else if is(m, "fail") {
                Overflow::Fail
            } else {
                return Err(OVERFLOW_TYPE);
            };
            j += 2;
            continue;
        } else {
            return Err(err::SYNTAX);
        };
        let (signed, bits) = field_type(&args[j + 1]).ok_or(BITFIELD_TYPE)?;
        let offset = bit_offset(&args[j + 2], true, bits, bytes_max).ok_or(BIT_OFFSET)?;
        let op = match kind {
            0 => FieldOp::Get,
            _ => {
                let n = int_arg(&args[j + 3]).ok_or(err::NOT_INTEGER)?;
                if kind == 1 {
                    FieldOp::Set(n)
                } else {
                    FieldOp::Incrby(n)
                }
            }
        };
        if read_only && !matches!(op, FieldOp::Get) {
            return Err(BITFIELD_RO);
        }
        ops.push(Field { op, signed, bits, offset, overflow });
        j += 1 + op_args;
    }
    Ok(ops)
}

fn get_unsigned(v: &[u8], offset: u64, bits: u32) -> u64 {
    (0..u64::from(bits)).fold(0u64, |acc, j| (acc << 1) | u64::from(get_bit(v, offset + j)))
}

fn get_signed(v: &[u8], offset: u64, bits: u32) -> i64 {
    let u = get_unsigned(v, offset, bits);
    if bits < 64 && u & (1 << (bits - 1)) != 0 {
        (u | (u64::MAX << bits)) as i64
    } else {
        u as i64
    }
}

fn set_field(v: &mut [u8], offset: u64, bits: u32, value: u64) {
    for j in 0..u64::from(bits) {
        set_bit(v, offset + j, value & (1 << (u64::from(bits) - 1 - j)) != 0);
    }
}

/// Redis's `checkUnsignedBitfieldOverflow`: None if `value + incr` fits
/// in `bits`, else the value OVERFLOW gives (None inside for FAIL).
fn unsigned_overflow(value: u64, incr: i64, bits: u32, mode: Overflow) -> Option<Option<u64>> {
    let max: u64 = if bits == 64 { u64::MAX } else { (1 << bits) - 1 };
    let max_incr = max.wrapping_sub(value) as i64;
    let min_incr = (value as i64).wrapping_neg();
    let wrap = || {
        let res = value.wrapping_add(incr as u64);
        if bits == 64 {
            res
        } else {
            res & !(u64::MAX << bits)
        }
    };
    if value > max || (incr > 0 && incr > max_incr) {
        Some(match mode {
            Overflow::Wrap => Some(wrap()),
            Overflow::Sat => Some(max),
            Overflow::Fail => None,
        })
    } else if incr < 0 && incr < min_incr {
        Some(match mode {
            Overflow::Wrap => Some(wrap()),
            Overflow::Sat => Some(0),
            Overflow::Fail => None,
        })
    } else {
        None
    }
}

/// Redis's `checkSignedBitfieldOverflow`, as [`unsigned_overflow`].
fn signed_overflow(value: i64, incr: i64, bits: u32, mode: Overflow) -> Option<Option<i64>> {
    let max: i64 = if bits == 64 { i64::MAX } else { (1 << (bits - 1)) - 1 };
    let min = -max - 1;
    let max_incr = (max as u64).wrapping_sub(value as u64) as i64;
    let min_incr = min.wrapping_sub(value);
    let wrap = || {
        let mut c = (value as u64).wrapping_add(incr as u64);
        if bits < 64 {
            let msb = 1u64 << (bits - 1);
            let mask = u64::MAX << bits;
            c = if c & msb != 0 { c | mask } else { c & !mask };
        }
        c as i64
    };
    if value > max || (bits != 64 && incr > max_incr) || (value >= 0 && incr > 0 && incr > max_incr) {
        Some(match mode {
            Overflow::Wrap => Some(wrap()),
            Overflow::Sat => Some(max),
            Overflow::Fail => None,
        })
    } else if value < min || (bits != 64 && incr < min_incr) || (value < 0 && incr < 0 && incr < min_incr) {
        Some(match mode {
            Overflow::Wrap => Some(wrap()),
            Overflow::Sat => Some(min),
            Overflow::Fail => None,
        })
    } else {
        None
    }
}

/// A GET's value.
fn get_field(v: &[u8], f: &Field) -> i64 {
    if f.signed {
        get_signed(v, f.offset, f.bits)
    } else {
        get_unsigned(v, f.offset, f.bits) as i64
    }
}

/// Runs one operation on `v` (grown to hold every write already): the
/// reply value, None for a write OVERFLOW FAIL refused.
fn apply(v: &mut [u8], f: &Field) -> Option<i64> {
    let (offset, bits) = (f.offset, f.bits);
    match f.op {
        FieldOp::Get => Some(get_field(v, f)),
        FieldOp::Set(n) | FieldOp::Incrby(n) => {
            let incr = matches!(f.op, FieldOp::Incrby(_));
            if f.signed {
                let old = get_signed(v, offset, bits);
                let (base, delta) = if incr { (old, n) } else { (n, 0) };
                let new = match signed_overflow(base, delta, bits, f.overflow) {
                    None => base.wrapping_add(delta),
                    Some(Some(limit)) => limit,
                    Some(None) => return None,
                };
                set_field(v, offset, bits, new as u64);
                Some(if incr { new } else { old })
            } else {
                let old = get_unsigned(v, offset, bits);
                let (base, delta) = if incr { (old, n) } else { (n as u64, 0) };
                let new = match unsigned_overflow(base, delta, bits, f.overflow) {
                    None => base.wrapping_add(delta as u64),
                    Some(Some(limit)) => limit,
                    Some(None) => return None,
                };
                set_field(v, offset, bits, new);
                Some(if incr { new as i64 } else { old as i64 })
            }
        }
    }
}

fn push_results(results: &[Option<i64>], proto: Proto, out: &mut Vec<u8>) {
    push_array(out, results.len());
    for r in results {
        match r {
            Some(n) => push_int(out, *n),
            None => push_null(out, proto),
        }
    }
}

fn bitfield(ctx: &mut Ctx<'_>, args: &[Arg<'_>], read_only: bool, out: &mut Vec<u8>) {
    let ops = match fields(args, read_only, ctx.limits.bulk_bytes_max) {
        Ok(ops) => ops,
        Err(m) => return push_error(out, m.as_bytes()),
    };
    let proto = ctx.proto();
    // The bytes the writes need (Redis grows the value to hold them all
    // before running any, so a refused write still creates the key).
    let len = ops
        .iter()
        .filter(|f| !matches!(f.op, FieldOp::Get))
        .map(|f| ((f.offset + u64::from(f.bits) - 1) >> 3) as usize + 1)
        .max();
    let Some(len) = len else {
        // Only GETs: a read, no key created.
        let read = |v: &[u8]| ops.iter().map(|f| Some(get_field(v, f))).collect::<Vec<_>>();
        let results = match ctx.ks.store.get(&args[1], |it| is_string(&it).then(|| read(it.value()))) {
            Some(None) => return push_error(out, WRONGTYPE.as_bytes()),
            r => r.flatten().unwrap_or_else(|| read(&[])),
        };
        return push_results(&results, proto, out);
    };
    match modify(ctx, &args[1], len, |v| ops.iter().map(|f| apply(v, f)).collect::<Vec<_>>()) {
        Ok(results) => push_results(&results, proto, out),
        Err(e) => e.reply(out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_read_msb_first() {
        let v = [0b1010_0000u8, 0xff];
        assert_eq!(get_unsigned(&v, 0, 3), 0b101);
        assert_eq!(get_signed(&v, 0, 3), -3);
        assert_eq!(get_unsigned(&v, 8, 8), 255);
        assert_eq!(get_signed(&v, 8, 8), -1);
        assert_eq!(get_unsigned(&v, 12, 8), 0xf0, "past the end reads zeros");
        let mut w = [0u8; 2];
        set_field(&mut w, 4, 8, 0xab);
        assert_eq!(w, [0x0a, 0xb0]);
    }

    #[test]
    fn counts_and_finds_within_bit_ranges() {
        let v = [0b0110_0000u8, 0b0000_0001];
        assert_eq!(count_bits(&v, 0, 15), 3);
        assert_eq!(count_bits(&v, 2, 14), 1);
        assert_eq!(find_bit(&v, 0, 15, 1), Some(1));
        assert_eq!(find_bit(&v, 3, 15, 1), Some(15));
        assert_eq!(find_bit(&v, 3, 14, 1), None);
        assert_eq!(find_bit(&v, 1, 2, 0), None);
        assert_eq!(find_bit(&v, 1, 3, 0), Some(3));
    }

    #[test]
    fn overflow_like_redis() {
        assert_eq!(unsigned_overflow(250, 10, 8, Overflow::Wrap), Some(Some(4)));
        assert_eq!(unsigned_overflow(250, 10, 8, Overflow::Sat), Some(Some(255)));
        assert_eq!(unsigned_overflow(250, 10, 8, Overflow::Fail), Some(None));
        assert_eq!(unsigned_overflow(5, -10, 8, Overflow::Sat), Some(Some(0)));
        assert_eq!(unsigned_overflow(5, 3, 8, Overflow::Wrap), None);
        assert_eq!(signed_overflow(120, 10, 8, Overflow::Wrap), Some(Some(-126)));
        assert_eq!(signed_overflow(-120, -10, 8, Overflow::Sat), Some(Some(-128)));
        assert_eq!(signed_overflow(i64::MAX, 1, 64, Overflow::Wrap), Some(Some(i64::MIN)));
        assert_eq!(signed_overflow(1, 1, 64, Overflow::Wrap), None);
    }
}
