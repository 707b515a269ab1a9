//! # `struct`: Roberto Ierusalimschy's struct library, as Redis 7.0 bundles it
//!
//! `struct.pack(fmt, ...)`, `struct.unpack(fmt, s [, pos])` (the values,
//! then the position after the last byte read) and `struct.size(fmt)`,
//! from Redis's `deps/lua/src/lua_struct.c` (struct.c 1.4 with Redis's
//! hardening: the 32-byte integer limit, the overflow check on sizes, the
//! offset and bounds checks of `unpack`). The table holds those three.
//!
//! ## Formats
//! `>` big endian, `<` little endian (the default is the machine's), `!n`
//! alignment (default 8, a power of 2), `x` a zero byte, `b`/`B` char,
//! `h`/`H` short, `l`/`L` long, `T` size_t, `i`/`I` `[n]` an integer of
//! `n` bytes (default 4, at most [`MAXINTSIZE`]), `c` `[n]` `n` chars,
//! `s` a zero-terminated string, `f` float, `d` double, ` ` ignored. Sizes
//! are the C's on a 64-bit Unix (LP64: long and size_t are 8 bytes), which
//! is what redis-server is built as.
//!
//! ## What follows the C exactly
//! * The walk over the format, alignment included (`gettoalign`'s formula
//!   as written, so odd sizes such as `i3` align as the C does), and the
//!   format ending at its first zero byte (it is a C string).
//! * Integers from doubles as gcc on x86-64 converts them
//!   ([`cvtt`], [`to_ulong`]): negative values through `long` (truncated;
//!   out of range or NaN → 0x8000000000000000), others through
//!   `unsigned long` (2^64 and more → 0); bytes past the 8th of an
//!   `i16` are zeros. Unpacking keeps the last 8 bytes read (big endian)
//!   or the first 8 (little endian), and sign-extends with the C's mask,
//!   whose shift count x86 takes modulo 64 (so `>i9` extends from bit 7).
//! * `float` conversions round to nearest, NaNs keep their sign (which
//!   `tostring` shows as "-nan").
//! * Arguments: numeric strings count as numbers and numbers as strings
//!   (`luaL_checknumber`, `luaL_checklstring`); a missing argument of
//!   `pack` is "nil" (the C pushes a nil after the arguments), of
//!   `unpack` "no value"; `pack`'s "string too short" names the argument
//!   after the string (the C increments first); `unpack`'s offset is
//!   converted as `lua_tointeger` does and then used as a `size_t`, so
//!   only 0 (or 0.5) is "offset must be 1 or greater" and a negative one
//!   is "data string too short"; `c0` takes its length from the previous
//!   result even when that is a numeric string.
//! * `struct.size` ignores unknown letters and digits (the C only checks
//!   non-alphanumeric options there).
//! * Error texts: `luaL_argerror`'s ("bad argument #1 to 'pack' (invalid
//!   format option 'q')", with the caller's name for the function, see
//!   bit.rs's `arg_error`) or `luaL_error`'s ("integral size 33 is larger
//!   than limit of 32"); Redis's reply adds "user_script:<line>: " in
//!   front, which is not raised here.
//!
//! ## What differs
//! * "stack overflow (too many results)" comes 23 values earlier than in
//!   Redis. The C raises it when its stack would pass Lua 5.1's limit for
//!   a C function ([`STACK_SLOTS_MAX`]: the arguments, the values so far
//!   and 2), so 7997 values (and the position) from a 2-argument call are
//!   fine there. A Rust function returns its results through mlua, which
//!   keeps the arguments on the stack and needs more slots of its own:
//!   measured with mlua 0.12.2, a function called with `nargs` arguments
//!   can return at most `7999 - nargs` results, and only `7977 - nargs` when
//!   mlua's pool of preallocated error values is empty (the first call in a
//!   state, and after errors); past that the call fails with mlua's own
//!   stack error. The check here counts those slots
//!   ([`MLUA_STACK_SLOTS`]), so the limit does not depend on the pool:
//!   7974 values are the most a 2-argument call returns, and the 7975th is
//!   the C's error text.
//! * "invalid format option 'X'" for a byte that is not ASCII: the C puts
//!   the raw byte in the message; here it is U+FFFD (messages are Rust
//!   strings).

use mlua::{Lua, MultiValue, Table, Value};

use super::bit::{arg_error, to_number, type_error};

/// The largest integer `i`/`I` take, in bytes (Redis's `MAXINTSIZE`).
const MAXINTSIZE: i32 = 32;
/// The default of `!` (the C's `MAXALIGN`: a double's alignment).
const MAXALIGN: i32 = 8;
/// `sizeof(short)`.
const SHORT: usize = 2;
/// `sizeof(int)`, the default size of `i`.
const INT: i32 = 4;
/// `sizeof(long)` and `sizeof(size_t)` on LP64.
const LONG: usize = 8;
/// `sizeof(float)`.
const FLOAT: usize = 4;
/// `sizeof(double)`.
const DOUBLE: usize = 8;
/// Lua 5.1's `LUAI_MAXCSTACK`: `lua_checkstack` refuses to grow a C
/// function's stack (its arguments and what it pushed) past this.
const STACK_SLOTS_MAX: usize = 8000;
/// The slots of a Rust function's stack that mlua may take besides the
/// arguments and the results when it returns them (measured, module
/// doc): with these counted, the results always fit.
const MLUA_STACK_SLOTS: usize = 23;
/// 2^63 as a double: where gcc's double → `unsigned long` switches
/// to its "subtract and flip the top bit" path.
const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;
/// What x86's truncating conversion gives for NaN and out-of-range values.
const INDEFINITE: u64 = 1 << 63;

/// The library's table.
pub fn open(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set("pack", lua.create_function(|lua, a: MultiValue| pack(lua, &a).map_err(|f| f.raise(lua)))?)?;
    t.raw_set("unpack", lua.create_function(|lua, a: MultiValue| unpack(lua, &a).map_err(|f| f.raise(lua)))?)?;
    t.raw_set("size", lua.create_function(|lua, a: MultiValue| size(lua, &a).map_err(|f| f.raise(lua)))?)?;
    Ok(t)
}

/// Why a call failed: `luaL_argerror`'s kind (which names the argument and
/// the function) or `luaL_error`'s (a bare text).
enum Fail {
    Arg(usize, String),
    Plain(String),
    Lua(mlua::Error),
}

impl Fail {
    fn raise(self, lua: &Lua) -> mlua::Error {
        match self {
            Fail::Arg(narg, msg) => arg_error(lua, narg, &msg),
            Fail::Plain(msg) => super::cmsgpack::raise(lua, &msg),
            Fail::Lua(e) => e,
        }
    }
}

impl From<mlua::Error> for Fail {
    fn from(e: mlua::Error) -> Fail {
        Fail::Lua(e)
    }
}

type Answer<T> = Result<T, Fail>;

/// Byte order.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Endian {
    Big,
    Little,
}

/// The machine's order, the C's default.
const NATIVE: Endian = if cfg!(target_endian = "big") { Endian::Big } else { Endian::Little };

/// The C's `Header`: the order and alignment in force.
struct Header {
    endian: Endian,
    align: usize,
}

impl Default for Header {
    fn default() -> Header {
        Header { endian: NATIVE, align: 1 }
    }
}

/// A format being read, up to its first zero byte (a C string).
struct Fmt<'a> {
    s: &'a [u8],
    at: usize,
}

impl<'a> Fmt<'a> {
    fn new(s: &'a [u8]) -> Fmt<'a> {
        let end = s.iter().position(|&c| c == 0).unwrap_or(s.len());
        Fmt { s: &s[..end], at: 0 }
    }

    /// The next option letter. Every call consumes a byte, so a walk over
    /// a format is bounded by its length.
    fn next(&mut self) -> Option<u8> {
        let c = *self.s.get(self.at)?;
        self.at += 1;
        Some(c)
    }

    fn digit(&self) -> Option<i32> {
        self.s.get(self.at).filter(|c| c.is_ascii_digit()).map(|c| i32::from(c - b'0'))
    }

    /// `getnum`: the number after an option, or `df`; the C's overflow
    /// check, made a digit at a time before anything wraps.
    fn getnum(&mut self, df: i32) -> Answer<i32> {
        if self.digit().is_none() {
            return Ok(df);
        }
        let mut a: i32 = 0;
        while let Some(d) = self.digit() {
            if a > i32::MAX / 10 || a * 10 > i32::MAX - d {
                return Err(Fail::Plain("integral size overflow".into()));
            }
            a = a * 10 + d;
            self.at += 1;
        }
        Ok(a)
    }
}

/// `optsize`: the bytes an option takes (0 for those that take none).
fn optsize(opt: u8, fmt: &mut Fmt<'_>) -> Answer<usize> {
    Ok(match opt {
        b'B' | b'b' | b'x' => 1,
        b'H' | b'h' => SHORT,
        b'L' | b'l' | b'T' => LONG,
        b'f' => FLOAT,
        b'd' => DOUBLE,
        b'c' => fmt.getnum(1)? as usize,
        b'i' | b'I' => {
            let sz = fmt.getnum(INT)?;
            if sz > MAXINTSIZE {
                return Err(Fail::Plain(format!("integral size {sz} is larger than limit of {MAXINTSIZE}")));
            }
            sz as usize
        }
        _ => 0,
    })
}

/// `gettoalign`: the padding before an option of `size` bytes at `len`,
/// the C's formula as written (also for sizes that are not powers of 2).
fn gettoalign(len: usize, h: &Header, opt: u8, size: usize) -> usize {
    if size == 0 || opt == b'c' {
        return 0;
    }
    let size = size.min(h.align);
    (size.wrapping_sub(len & (size - 1))) & (size - 1)
}

/// `controloptions`: ' ', '>', '<', '!' and the error for anything else.
fn controloptions(opt: u8, fmt: &mut Fmt<'_>, h: &mut Header) -> Answer<()> {
    match opt {
        b' ' => {}
        b'>' => h.endian = Endian::Big,
        b'<' => h.endian = Endian::Little,
        b'!' => {
            let a = fmt.getnum(MAXALIGN)?;
            if a <= 0 || a & (a - 1) != 0 {
                return Err(Fail::Plain(format!("alignment {a} is not a power of 2")));
            }
            h.align = a as usize;
        }
        _ => {
            let c = String::from_utf8_lossy(&[opt]).into_owned();
            return Err(Fail::Arg(1, format!("invalid format option '{c}'")));
        }
    }
    Ok(())
}

/// x86's truncating double → 64-bit integer conversion (`cvttsd2si`),
/// what gcc emits for `(long)d`: NaN and values outside the `long` range
/// give 0x8000000000000000.
fn cvtt(d: f64) -> u64 {
    if d.is_nan() || !(-TWO_POW_63..TWO_POW_63).contains(&d) {
        INDEFINITE
    } else {
        d as i64 as u64
    }
}

/// gcc's double → `unsigned long` on x86-64: `cvtt` below 2^63 (NaN
/// included), else `cvtt(d - 2^63)` with the top bit flipped (so 2^64
/// and infinity give 0).
fn to_ulong(d: f64) -> u64 {
    if d >= TWO_POW_63 {
        cvtt(d - TWO_POW_63) ^ INDEFINITE
    } else {
        cvtt(d)
    }
}

/// A double to a float as `(float)d` on x86 (`cvtsd2ss`): rounded to
/// nearest; a NaN keeps its sign and the top of its payload, made quiet.
fn to_f32(d: f64) -> f32 {
    if d.is_nan() {
        let b = d.to_bits();
        let sign = ((b >> 63) as u32) << 31;
        f32::from_bits(sign | 0x7fc0_0000 | ((b >> 29) as u32 & 0x003f_ffff))
    } else {
        d as f32
    }
}

/// A float to a double (`cvtss2sd`): exact; a NaN keeps sign and payload,
/// made quiet.
fn from_f32(f: f32) -> f64 {
    if f.is_nan() {
        let b = f.to_bits();
        let sign = u64::from(b >> 31) << 63;
        f64::from_bits(sign | 0x7ff8_0000_0000_0000 | (u64::from(b & 0x003f_ffff) << 29))
    } else {
        f64::from(f)
    }
}

/// `luaL_checklstring`: a string, or a number as Lua writes it.
fn check_string(lua: &Lua, v: Option<&Value>, narg: usize) -> Answer<mlua::LuaString> {
    let s = match v {
        Some(Value::String(s)) => Some(s.clone()),
        Some(v @ (Value::Integer(_) | Value::Number(_))) => lua.coerce_string(v.clone())?,
        _ => None,
    };
    s.ok_or_else(|| Fail::Lua(type_error(lua, narg, "string", v)))
}

/// `luaL_checknumber`: a number, or a string Lua reads as one.
fn check_number(lua: &Lua, v: Option<&Value>, narg: usize) -> Answer<f64> {
    let n = match v {
        Some(v) => to_number(lua, v)?,
        None => None,
    };
    n.ok_or_else(|| Fail::Lua(type_error(lua, narg, "number", v)))
}

/// `putinteger`: `n` as `size` bytes (bytes past the 8th are zeros).
fn putinteger(out: &mut Vec<u8>, n: f64, endian: Endian, size: usize) {
    let mut value = if n < 0.0 { cvtt(n) } else { to_ulong(n) };
    let mut buf = [0u8; MAXINTSIZE as usize];
    let buf = &mut buf[..size];
    // Bounded by `size`, at most MAXINTSIZE.
    match endian {
        Endian::Little => {
            for b in buf.iter_mut() {
                *b = value as u8;
                value >>= 8;
            }
        }
        Endian::Big => {
            for b in buf.iter_mut().rev() {
                *b = value as u8;
                value >>= 8;
            }
        }
    }
    out.extend_from_slice(buf);
}

/// Bytes in the machine's order, put in `endian`'s (`correctbytes`).
fn ordered<const N: usize>(mut b: [u8; N], endian: Endian) -> [u8; N] {
    if endian != NATIVE {
        b.reverse();
    }
    b
}

/// `struct.pack(fmt, ...)`.
fn pack(lua: &Lua, args: &MultiValue) -> Answer<mlua::LuaString> {
    let fmt = check_string(lua, args.front(), 1)?;
    let fmt = fmt.as_bytes();
    let mut fmt = Fmt::new(&fmt);
    let mut h = Header::default();
    // The C pushes a nil after the arguments: the first missing one is
    // "nil", and no option reads further (each takes one argument, and
    // that nil always fails).
    let nil = Value::Nil;
    let arg_at = |i: usize| args.get(i - 1).or(Some(&nil));
    let mut arg = 2;
    let mut out: Vec<u8> = Vec::new();
    while let Some(opt) = fmt.next() {
        let size = optsize(opt, &mut fmt)?;
        let toalign = gettoalign(out.len(), &h, opt, size);
        out.resize(out.len() + toalign, 0);
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let n = check_number(lua, arg_at(arg), arg)?;
                arg += 1;
                putinteger(&mut out, n, h.endian, size);
            }
            b'x' => out.push(0),
            b'f' => {
                let n = check_number(lua, arg_at(arg), arg)?;
                arg += 1;
                out.extend_from_slice(&ordered(to_f32(n).to_ne_bytes(), h.endian));
            }
            b'd' => {
                let n = check_number(lua, arg_at(arg), arg)?;
                arg += 1;
                out.extend_from_slice(&ordered(n.to_ne_bytes(), h.endian));
            }
            b'c' | b's' => {
                let s = check_string(lua, arg_at(arg), arg)?;
                arg += 1;
                let s = s.as_bytes();
                let size = if size == 0 { s.len() } else { size };
                if s.len() < size {
                    // The C checks after its increment: the next argument.
                    return Err(Fail::Arg(arg, "string too short".into()));
                }
                out.extend_from_slice(&s[..size]);
                if opt == b's' {
                    out.push(0);
                }
            }
            _ => controloptions(opt, &mut fmt, &mut h)?,
        }
    }
    Ok(lua.create_string(&out)?)
}

/// `getinteger`: `buf` (`size` bytes) as a number.
fn getinteger(buf: &[u8], endian: Endian, signed: bool) -> f64 {
    let mut l: u64 = 0;
    // Bounded by the size, at most MAXINTSIZE; bytes shifted out of the
    // 64 bits are lost as in the C.
    match endian {
        Endian::Big => {
            for &b in buf {
                l = (l << 8) | u64::from(b);
            }
        }
        Endian::Little => {
            for &b in buf.iter().rev() {
                l = (l << 8) | u64::from(b);
            }
        }
    }
    if !signed {
        return l as f64;
    }
    // `~0 << (size*8 - 1)`: x86 takes the count modulo 64, as
    // `wrapping_shl` does (size 0 gives -1, i.e. 63).
    let mask = u64::MAX.wrapping_shl((buf.len() as u32).wrapping_mul(8).wrapping_sub(1));
    if l & mask != 0 {
        l |= mask;
    }
    l as i64 as f64
}

/// `struct.unpack(fmt, s [, pos])`.
fn unpack(lua: &Lua, args: &MultiValue) -> Answer<MultiValue> {
    let fmt = check_string(lua, args.front(), 1)?;
    let fmt = fmt.as_bytes();
    let mut fmt = Fmt::new(&fmt);
    let data = check_string(lua, args.get(1), 2)?;
    let data = data.as_bytes();
    let ld = data.len();
    // `luaL_optinteger`, then used as a `size_t`.
    let mut pos = match args.get(2) {
        None | Some(Value::Nil) => 1,
        v => cvtt(check_number(lua, v, 3)?) as usize,
    };
    if pos == 0 {
        return Err(Fail::Arg(3, "offset must be 1 or greater".into()));
    }
    pos -= 1;
    let mut h = Header::default();
    let mut res: Vec<Value> = Vec::new();
    let short = || Fail::Arg(2, "data string too short".into());
    while let Some(opt) = fmt.next() {
        let mut size = optsize(opt, &mut fmt)?;
        pos = pos.wrapping_add(gettoalign(pos, &h, opt, size));
        if !(size <= ld && pos <= ld - size) {
            return Err(short());
        }
        // `luaL_checkstack(L, 2, ...)` with the arguments and the results
        // so far on the stack, and mlua's own slots (module doc).
        if args.len() + res.len() + 2 + MLUA_STACK_SLOTS > STACK_SLOTS_MAX {
            return Err(Fail::Plain("stack overflow (too many results)".into()));
        }
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let n = getinteger(&data[pos..pos + size], h.endian, opt.is_ascii_lowercase());
                res.push(Value::Number(n));
            }
            b'x' => {}
            b'f' => {
                let mut b = [0u8; FLOAT];
                b.copy_from_slice(&data[pos..pos + FLOAT]);
                res.push(Value::Number(from_f32(f32::from_ne_bytes(ordered(b, h.endian)))));
            }
            b'd' => {
                let mut b = [0u8; DOUBLE];
                b.copy_from_slice(&data[pos..pos + DOUBLE]);
                res.push(Value::Number(f64::from_ne_bytes(ordered(b, h.endian))));
            }
            b'c' => {
                if size == 0 {
                    let prev = match res.last() {
                        Some(v) => to_number(lua, v)?,
                        None => None,
                    };
                    let Some(prev) = prev else {
                        return Err(Fail::Plain("format 'c0' needs a previous size".into()));
                    };
                    size = to_ulong(prev) as usize;
                    res.pop();
                    if !(size <= ld && pos <= ld - size) {
                        return Err(short());
                    }
                }
                res.push(Value::String(lua.create_string(&data[pos..pos + size])?));
            }
            b's' => {
                let Some(len) = data[pos..].iter().position(|&c| c == 0) else {
                    return Err(Fail::Plain("unfinished string in data".into()));
                };
                res.push(Value::String(lua.create_string(&data[pos..pos + len])?));
                size = len + 1;
            }
            _ => controloptions(opt, &mut fmt, &mut h)?,
        }
        pos = pos.wrapping_add(size);
    }
    // `lua_pushinteger(L, pos + 1)`: a `size_t` seen as a `ptrdiff_t`.
    res.push(Value::Number(pos.wrapping_add(1) as i64 as f64));
    Ok(MultiValue::from_vec(res))
}

/// `struct.size(fmt)`.
fn size(lua: &Lua, args: &MultiValue) -> Answer<f64> {
    let fmt = check_string(lua, args.front(), 1)?;
    let fmt = fmt.as_bytes();
    let mut fmt = Fmt::new(&fmt);
    let mut h = Header::default();
    let mut pos: usize = 0;
    while let Some(opt) = fmt.next() {
        let size = optsize(opt, &mut fmt)?;
        pos = pos.wrapping_add(gettoalign(pos, &h, opt, size));
        if opt == b's' {
            return Err(Fail::Arg(1, "option 's' has no fixed size".into()));
        } else if opt == b'c' && size == 0 {
            return Err(Fail::Arg(1, "option 'c0' has no fixed size".into()));
        }
        // Unknown letters and digits are skipped: the C only looks at
        // the options that are not alphanumeric.
        if !opt.is_ascii_alphanumeric() {
            controloptions(opt, &mut fmt, &mut h)?;
        }
        pos = pos.wrapping_add(size);
    }
    Ok(pos as i64 as f64)
}

#[cfg(test)]
mod tests {
    //! Every expected value below is what redis-server 7.0.15 returned for
    //! the same expression (`EVAL "return …" 0`, read with redis-py; a
    //! table of results is compared as the list redis-py returned, floats
    //! through `tostring`); error texts are Redis's reply after its
    //! "user_script:1: " prefix.

    use super::*;

    fn lua() -> Lua {
        let lua = Lua::new();
        lua.globals().set("struct", open(&lua).unwrap()).unwrap();
        lua
    }

    fn bytes(code: &str) -> Vec<u8> {
        lua().load(code).eval::<mlua::LuaString>().unwrap().as_bytes().to_vec()
    }

    fn nums(code: &str) -> Vec<f64> {
        lua().load(code).eval::<Vec<f64>>().unwrap()
    }

    fn num(code: &str) -> f64 {
        lua().load(code).eval::<f64>().unwrap()
    }

    fn texts(code: &str) -> Vec<String> {
        lua().load(code).eval::<Vec<String>>().unwrap()
    }

    /// The message the code raised, without mlua's wrapping.
    fn error(code: &str) -> String {
        // Under Redis's chunk name, without the "user_script:1: " that
        // luaL_error's position adds (vm.rs's reply carries it).
        let m = crate::vm::plain(&lua().load(code).set_name("@user_script").exec().unwrap_err());
        m.strip_prefix("user_script:1: ").map(str::to_string).unwrap_or(m)
    }

    #[test]
    fn members() {
        // redis: pairs(struct), sorted.
        let got = lua()
            .load("local t={} for k in pairs(struct) do t[#t+1]=k end table.sort(t) return table.concat(t, ',')")
            .eval::<String>()
            .unwrap();
        assert_eq!(got, "pack,size,unpack");
    }

    #[test]
    fn pack_integers_both_orders() {
        // redis: b'\x01\x02', b'\x01\x00\x00\x00', b'\xff\xff\xff\xfe'
        assert_eq!(bytes("return struct.pack('>I2', 258)"), b"\x01\x02");
        assert_eq!(bytes("return struct.pack('<i', 1)"), b"\x01\x00\x00\x00");
        assert_eq!(bytes("return struct.pack('>i', -2)"), b"\xff\xff\xff\xfe");
        // redis, every integer option in both orders:
        let args = "-1, 255, -2, 65535, -3, 2^63, 4, -5, 6";
        assert_eq!(
            bytes(&format!("return struct.pack('bBhHlLTiI', {args})")),
            b"\xff\xff\xfe\xff\xff\xff\xfd\xff\xff\xff\xff\xff\xff\xff\x00\x00\x00\x00\x00\x00\x00\x80\
              \x04\x00\x00\x00\x00\x00\x00\x00\xfb\xff\xff\xff\x06\x00\x00\x00"
        );
        assert_eq!(
            bytes(&format!("return struct.pack('>bBhHlLTiI', {args})")),
            b"\xff\xff\xff\xfe\xff\xff\xff\xff\xff\xff\xff\xff\xff\xfd\x80\x00\x00\x00\x00\x00\x00\x00\
              \x00\x00\x00\x00\x00\x00\x00\x04\xff\xff\xff\xfb\x00\x00\x00\x06"
        );
    }

    #[test]
    fn pack_odd_and_wide_integers() {
        // redis: b'\x124V', b'\xff\xff\xff', 8 zeros + 8 0xff, 8 0xff + 8
        // zeros, 9 zeros, b''
        assert_eq!(bytes("return struct.pack('>I3', 0x123456)"), b"\x12\x34\x56");
        assert_eq!(bytes("return struct.pack('<i3', -1)"), b"\xff\xff\xff");
        assert_eq!(bytes("return struct.pack('>i16', -1)"), [[0u8; 8], [0xff; 8]].concat());
        assert_eq!(bytes("return struct.pack('<i16', -1)"), [[0xffu8; 8], [0; 8]].concat());
        assert_eq!(bytes("return struct.pack('<I9', 2^64-1)"), [0u8; 9]);
        assert_eq!(bytes("return struct.pack('>i0', 5)"), b"");
    }

    #[test]
    fn pack_converts_doubles_as_gcc() {
        // redis: one line per value.
        let cases: [(&str, &[u8]); 15] = [
            ("2^63", b"\x80\0\0\0\0\0\0\0"),
            ("2^64", b"\0\0\0\0\0\0\0\0"),
            ("2^70", b"\0\0\0\0\0\0\0\0"),
            ("-2^63", b"\x80\0\0\0\0\0\0\0"),
            ("-2^64", b"\x80\0\0\0\0\0\0\0"),
            ("1/0", b"\0\0\0\0\0\0\0\0"),
            ("-1/0", b"\x80\0\0\0\0\0\0\0"),
            ("0/0", b"\x80\0\0\0\0\0\0\0"),
            ("-(0/0)", b"\x80\0\0\0\0\0\0\0"),
            ("1.9", b"\0\0\0\0\0\0\0\x01"),
            ("-1.9", b"\xff\xff\xff\xff\xff\xff\xff\xff"),
            ("'12'", b"\0\0\0\0\0\0\0\x0c"),
            ("2^64-2048", b"\xff\xff\xff\xff\xff\xff\xf8\x00"),
            ("300", b"\0\0\0\0\0\0\x01\x2c"),
            ("-129", b"\xff\xff\xff\xff\xff\xff\xff\x7f"),
        ];
        for (arg, want) in cases {
            assert_eq!(bytes(&format!("return struct.pack('>l', {arg})")), want, "{arg}");
        }
        // redis: b',', b'\x7f', b'\x00\x00'
        assert_eq!(bytes("return struct.pack('>b', 300)"), b",");
        assert_eq!(bytes("return struct.pack('>b', -129)"), b"\x7f");
        assert_eq!(bytes("return struct.pack('>h', 2^63 + 2^62)"), b"\0\0");
    }

    #[test]
    fn pack_floats() {
        // redis: each value as returned.
        assert_eq!(bytes("return struct.pack('>d', 1.5)"), b"?\xf8\0\0\0\0\0\0");
        assert_eq!(bytes("return struct.pack('<d', -0.1)"), b"\x9a\x99\x99\x99\x99\x99\xb9\xbf");
        assert_eq!(bytes("return struct.pack('>f', 1.1)"), b"?\x8c\xcc\xcd");
        assert_eq!(bytes("return struct.pack('<f', 1e40)"), b"\0\0\x80\x7f");
        assert_eq!(bytes("return struct.pack('<d', 0/0)"), b"\0\0\0\0\0\0\xf8\xff");
        assert_eq!(bytes("return struct.pack('<d', -(0/0))"), b"\0\0\0\0\0\0\xf8\x7f");
        assert_eq!(bytes("return struct.pack('<f', 0/0)"), b"\0\0\xc0\xff");
        assert_eq!(bytes("return struct.pack('>d', 1/0)"), b"\x7f\xf0\0\0\0\0\0\0");
    }

    #[test]
    fn pack_alignment() {
        // redis: as returned.
        assert_eq!(
            bytes("return struct.pack('!bhbibdbf', 1, 2, 3, 4, 5, 6, 7, 8)"),
            b"\x01\x00\x02\x00\x03\x00\x00\x00\x04\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x00\x00\x18@\
              \x07\x00\x00\x00\x00\x00\x00A"
        );
        assert_eq!(bytes("return struct.pack('!4bd', 1, 2)"), b"\x01\0\0\0\0\0\0\0\0\0\0@");
        assert_eq!(bytes("return struct.pack('!2bd', 1, 2)"), b"\x01\0\0\0\0\0\0\0\0@");
        assert_eq!(bytes("return struct.pack('!8bT', 1, 2)"), b"\x01\0\0\0\0\0\0\0\x02\0\0\0\0\0\0\0");
        assert_eq!(bytes("return struct.pack('xbxx', 7)"), b"\0\x07\0\0");
    }

    #[test]
    fn pack_strings() {
        // redis: b'hello', b'hel', b'hel\x00', b'a\x00b\x00\x00', b'1',
        // b'1.5\x00', b'\x01' (the format ends at its zero byte)
        assert_eq!(bytes("return struct.pack('c0', 'hello')"), b"hello");
        assert_eq!(bytes("return struct.pack('c3', 'hello')"), b"hel");
        assert_eq!(bytes("return struct.pack('s', 'hel')"), b"hel\0");
        assert_eq!(bytes("return struct.pack('ss', 'a\\0b', '')"), b"a\0b\0\0");
        assert_eq!(bytes("return struct.pack('c1', 123)"), b"1");
        assert_eq!(bytes("return struct.pack('s', 1.5)"), b"1.5\0");
        assert_eq!(bytes("return struct.pack('b\\0b', 1, 2)"), b"\x01");
    }

    #[test]
    fn pack_errors() {
        // redis: each text after "user_script:1: ".
        let cases = [
            ("struct.pack('q', 1)", "bad argument #1 to 'pack' (invalid format option 'q')"),
            ("struct.pack(5)", "bad argument #1 to 'pack' (invalid format option '5')"),
            ("struct.pack()", "bad argument #1 to 'pack' (string expected, got no value)"),
            ("struct.pack('i33', 1)", "integral size 33 is larger than limit of 32"),
            ("struct.pack('!5', 1)", "alignment 5 is not a power of 2"),
            ("struct.pack('c5', 'abc')", "bad argument #3 to 'pack' (string too short)"),
            ("struct.pack('bc5', 1, 'abc')", "bad argument #4 to 'pack' (string too short)"),
            ("struct.pack('c2147483647', 'x')", "bad argument #3 to 'pack' (string too short)"),
            ("struct.pack('>i0')", "bad argument #2 to 'pack' (number expected, got nil)"),
            ("struct.pack('b')", "bad argument #2 to 'pack' (number expected, got nil)"),
            ("struct.pack('b', 'x')", "bad argument #2 to 'pack' (number expected, got string)"),
            ("struct.pack('s')", "bad argument #2 to 'pack' (string expected, got nil)"),
            ("struct.pack('s', {})", "bad argument #2 to 'pack' (string expected, got table)"),
        ];
        for (code, want) in cases {
            assert_eq!(error(&format!("return {code}")), want, "{code}");
        }
    }

    #[test]
    fn round_trips() {
        // redis: the values, then 39 (both orders).
        for order in ['>', '<'] {
            let got = nums(&format!(
                "return {{struct.unpack('{order}bBhHlLTiI', struct.pack('{order}bBhHlLTiI', -1, 255, -2, 65535, -3, \
                 2^53, 4, -5, 6))}}"
            ));
            assert_eq!(got, [-1.0, 255.0, -2.0, 65535.0, -3.0, 9007199254740992.0, 4.0, -5.0, 6.0, 39.0]);
        }
        // redis: {1, 2, 3, 4, 5, 6, 7, 8, 33}
        let got = nums("return {struct.unpack('!bhbibdbf', struct.pack('!bhbibdbf', 1, 2, 3, 4, 5, 6, 7, 8))}");
        assert_eq!(got, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 33.0]);
    }

    #[test]
    fn unpack_wide_and_odd_integers() {
        // redis: as returned through tostring.
        let got = texts(
            "return {tostring(struct.unpack('>L', '\\255\\255\\255\\255\\255\\255\\255\\255')), \
             tostring(struct.unpack('>l', '\\128\\0\\0\\0\\0\\0\\0\\0'))}",
        );
        assert_eq!(got, ["1.844674407371e+19", "-9.2233720368548e+18"]);
        let got = texts(
            "return {tostring(struct.unpack('>i16', string.rep('\\255', 16))), \
             tostring(struct.unpack('>I16', string.rep('\\255', 16))), \
             tostring(struct.unpack('<i16', string.rep('\\255', 8) .. string.rep('\\0', 8))), \
             tostring(struct.unpack('>i16', string.rep('\\0', 8) .. string.rep('\\255', 8)))}",
        );
        assert_eq!(got, ["-1", "1.844674407371e+19", "-1", "-1"]);
        let got = texts(
            "return {tostring(struct.unpack('>i9', '\\1\\0\\0\\0\\0\\0\\0\\0\\255')), \
             tostring(struct.unpack('>i9', '\\0\\128\\0\\0\\0\\0\\0\\0\\0')), \
             tostring(struct.unpack('<i9', '\\0\\0\\0\\0\\0\\0\\0\\128\\0')), \
             tostring(struct.unpack('<i9', '\\255\\0\\0\\0\\0\\0\\0\\0\\1'))}",
        );
        assert_eq!(got, ["-1", "-128", "-128", "-1"]);
        let got = texts(
            "return {tostring(struct.unpack('>i3', '\\255\\255\\254')), tostring(struct.unpack('<I3', '\\1\\2\\3')), \
             tostring(struct.unpack('>i0', '')), tostring(struct.unpack('>i1', '\\128'))}",
        );
        assert_eq!(got, ["-2", "197121", "0", "-128"]);
    }

    #[test]
    fn unpack_floats() {
        // redis: {'1.5', '1.1000000238419', '-0', '-nan', '-nan', 'nan', '-inf'}
        let got = texts(
            "return {tostring(struct.unpack('>d', struct.pack('>d', 1.5))), \
             tostring(struct.unpack('<f', struct.pack('<f', 1.1))), \
             tostring(struct.unpack('<d', struct.pack('<d', -0.0))), \
             tostring(struct.unpack('<f', struct.pack('<f', 0/0))), \
             tostring(struct.unpack('<d', struct.pack('<d', 0/0))), \
             tostring(struct.unpack('>f', '\\127\\128\\0\\1')), tostring(struct.unpack('>f', '\\255\\128\\0\\0'))}",
        );
        assert_eq!(got, ["1.5", "1.1000000238419", "-0", "-nan", "-nan", "nan", "-inf"]);
    }

    #[test]
    fn unpack_strings() {
        // redis: {'ab', 5}, {99, 4}, {99, 4}, {97, 1, 9}, {49, 2}, 'ab', 'ab'
        assert_eq!(texts("local a, b = struct.unpack('s', 'abc\\0def', 2) return {a, tostring(b)}"), ["bc", "5"]);
        assert_eq!(nums("return {struct.unpack('xxb', 'abc')}"), [99.0, 4.0]);
        assert_eq!(nums("return {struct.unpack('b', 'abc', 3)}"), [99.0, 4.0]);
        assert_eq!(nums("return {struct.unpack('!4bi', 'a\\0\\0\\0\\1\\0\\0\\0')}"), [97.0, 1.0, 9.0]);
        assert_eq!(nums("return {struct.unpack('b', 12)}"), [49.0, 2.0]);
        // c0 takes the previous result, a numeric string included.
        assert_eq!(texts("return {struct.unpack('c1c0', '2abc')}"), ["ab", "4"]);
        assert_eq!(texts("return {struct.unpack('bc0', '\\2abc')}"), ["ab", "4"]);
        assert_eq!(texts("return {struct.unpack('ss', 'ab\\0c\\0d')}"), ["ab", "c", "6"]);
    }

    #[test]
    fn unpack_offsets() {
        // redis: 97, 98, 97, 3, 300, 2^53, -5, -2^63
        assert_eq!(num("return struct.unpack('b', 'abc', 1.9)"), 97.0);
        assert_eq!(num("return struct.unpack('b', 'abc', '2')"), 98.0);
        assert_eq!(num("return struct.unpack('b', 'abc', nil)"), 97.0);
        assert_eq!(num("return struct.unpack('', 'a', 3)"), 3.0);
        assert_eq!(num("return struct.unpack('', 'a', 300)"), 300.0);
        assert_eq!(num("return struct.unpack('', 'abc', 2^53)"), 9007199254740992.0);
        assert_eq!(num("return struct.unpack('', 'abc', -5)"), -5.0);
        assert_eq!(num("return struct.unpack('', 'abc', 2^63)"), -9223372036854775808.0);
    }

    #[test]
    fn unpack_errors() {
        // redis: each text after "user_script:1: ".
        let short = "bad argument #2 to 'unpack' (data string too short)";
        let cases = [
            ("struct.unpack('b', 'a', 0)", "bad argument #3 to 'unpack' (offset must be 1 or greater)"),
            ("struct.unpack('', 'abc', 0.5)", "bad argument #3 to 'unpack' (offset must be 1 or greater)"),
            ("struct.unpack('b', 'abc', 'x')", "bad argument #3 to 'unpack' (number expected, got string)"),
            ("struct.unpack('b', 'a', -1)", short),
            ("struct.unpack('!4i4', '\\1\\0\\0\\0', -1)", short),
            ("struct.unpack('b', 'a', 2)", short),
            ("struct.unpack('x', 'a', 3)", short),
            ("struct.unpack(' ', 'a', 3)", short),
            ("struct.unpack('b', 'abc', 2^64)", short),
            ("struct.unpack('b', 'abc', -2^64)", short),
            ("struct.unpack('b', 'abc', 0/0)", short),
            ("struct.unpack('bc0', '\\9abc')", short),
            ("struct.unpack('Bc0', '\\255abc')", short),
            ("struct.unpack('!4bi', 'a\\0\\0\\0\\1\\0\\0')", short),
            ("struct.unpack('c2147483647', 'abc')", short),
            ("struct.unpack('c0', 'abc')", "format 'c0' needs a previous size"),
            ("struct.unpack('c3c0s', 'ab3xyzhi\\0rest')", "format 'c0' needs a previous size"),
            ("struct.unpack('s', 'abc')", "unfinished string in data"),
            ("struct.unpack('s', 'abc\\0', 5)", "unfinished string in data"),
            ("struct.unpack('bs', 'a')", "unfinished string in data"),
            ("struct.unpack('q', 'abc')", "bad argument #1 to 'unpack' (invalid format option 'q')"),
            ("struct.unpack('b!#', 'abc')", "bad argument #1 to 'unpack' (invalid format option '#')"),
            ("struct.unpack(66, 'x')", "bad argument #1 to 'unpack' (invalid format option '6')"),
            ("struct.unpack('i33', 'abc')", "integral size 33 is larger than limit of 32"),
            ("struct.unpack()", "bad argument #1 to 'unpack' (string expected, got no value)"),
            ("struct.unpack('b')", "bad argument #2 to 'unpack' (string expected, got no value)"),
            ("struct.unpack('b', {})", "bad argument #2 to 'unpack' (string expected, got table)"),
        ];
        for (code, want) in cases {
            assert_eq!(error(&format!("return {code}")), want, "{code}");
        }
    }

    #[test]
    fn unpack_result_limit() {
        // redis: 7997 values from a 2-argument call, 7996 from a
        // 3-argument one; one more is "stack overflow (too many results)".
        // Here the error comes 23 values earlier (module doc: mlua's
        // slots), with the same text. (Successes are not run under pcall:
        // Lua 5.1's pcall pushes its status past the stack it checked, which
        // the API checks of a debug build abort on once there are more than
        // about 18 results; release builds, like Redis's, do not check.)
        let fits = |n: usize, extra: &str| {
            let code = format!(
                "local t = {{struct.unpack(string.rep('b', {n}), string.rep('a', {n}){extra})}} return {{#t, t[#t]}}"
            );
            lua().load(code).eval::<Vec<f64>>().unwrap()
        };
        let overflow = |n: usize, extra: &str, tail: &str| {
            let code = format!(
                "local ok, e = pcall(struct.unpack, string.rep('b', {n}) .. '{tail}', string.rep('a', {n} + 3){extra}) \
                 return {{tostring(ok), tostring(e)}}"
            );
            let got = lua().load(code).eval::<Vec<String>>().unwrap();
            assert_eq!(got[0], "false");
            assert_eq!(got[1].trim_start_matches("runtime error: ").lines().next().unwrap(), OVERFLOW);
        };
        const OVERFLOW: &str = "stack overflow (too many results)";
        assert_eq!(fits(7974, ""), [7975.0, 7975.0]);
        overflow(7975, "", "");
        assert_eq!(fits(7973, ", 1"), [7974.0, 7974.0]);
        overflow(7974, ", 1", "");
        overflow(7974, "", "xxx");
    }

    #[test]
    fn size() {
        // redis: 0, 39, 44, 40, 10, 6, 10, 6, 10, 12, 1, 6442450941, 0, 0
        let cases = [
            ("q", 0.0),
            ("bhilTfdxc3", 39.0),
            ("!bhilTfdxc3", 44.0),
            ("!4bhilTfdxc3", 40.0),
            ("!2bd", 10.0),
            ("i3i3", 6.0),
            ("!i3i3", 10.0),
            ("!b i3", 6.0),
            ("!bi5", 10.0),
            ("!bi6", 12.0),
            ("!bi0", 1.0),
            ("c2147483647c2147483647c2147483647", 6442450941.0),
            ("", 0.0),
        ];
        for (fmt, want) in cases {
            assert_eq!(num(&format!("return struct.size('{fmt}')")), want, "{fmt}");
        }
        assert_eq!(num("return struct.size(12)"), 0.0);
    }

    #[test]
    fn size_errors() {
        // redis: each text after "user_script:1: ".
        let cases = [
            ("struct.size('s')", "bad argument #1 to 'size' (option 's' has no fixed size)"),
            ("struct.size('c0')", "bad argument #1 to 'size' (option 'c0' has no fixed size)"),
            ("struct.size('!#')", "bad argument #1 to 'size' (invalid format option '#')"),
            ("struct.size('i33')", "integral size 33 is larger than limit of 32"),
            ("struct.size('!3')", "alignment 3 is not a power of 2"),
            ("struct.size('!0')", "alignment 0 is not a power of 2"),
            ("struct.size('i99999999999')", "integral size overflow"),
            ("struct.size('c99999999999')", "integral size overflow"),
            ("struct.size()", "bad argument #1 to 'size' (string expected, got no value)"),
        ];
        for (code, want) in cases {
            assert_eq!(error(&format!("return {code}")), want, "{code}");
        }
    }
}
