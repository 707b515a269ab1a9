//! # `bit`: LuaBitOp 1.0.2, as Redis 7.0 bundles it (`deps/lua/src/lua_bit.c`)
//!
//! Twelve functions over 32-bit integers: `tobit`, `tohex`, `bnot`,
//! `band`, `bor`, `bxor`, `lshift`, `rshift`, `arshift`, `rol`, `ror`,
//! `bswap`. The table holds those and nothing else (no version field), as
//! `pairs(bit)` lists them on redis-server 7.0.15.
//!
//! ## What follows the C exactly
//! * Normalisation (`barg`): an argument is converted as `lua_tonumber`
//!   does (so numeric strings such as `"0x10"` or `" 12 "` count), then
//!   `2^52 + 2^51` is added to the double and the low 32 bits of the sum's
//!   bit pattern are the value ([`TOBIT_MAGIC`]). This is done literally
//!   (`f64` addition and `to_bits`), not modelled, so every corner is the
//!   C's: fractions round half to even (0.5 → 0, 1.5 → 2, 2.5 → 2, -0.5 →
//!   0), values wrap modulo 2^32 while the sum stays exact, and past 2^52
//!   the low word of the sum is whatever it is (2^53 → 0, 1e20 →
//!   2025163840), with NaN and the infinities giving 0.
//! * Results are pushed as the double of the signed 32-bit value.
//! * `band`/`bor`/`bxor` check argument 1 first and then the others from the
//!   last to the second, as the C loop does, so the argument an error
//!   names is the same one.
//! * Shift counts keep their low 5 bits; `rol`/`ror` by 0 give the value
//!   unchanged (the C's `b >> 32` is masked to 0 by x86, as here).
//! * `tohex(x [, n])`: `n` absent means 8 (an explicit `nil` is an error, as
//!   `lua_isnone` makes it); negative `n` means upper case; `|n|` is capped
//!   at [`HEX_DIGITS_MAX`]; `n = 0` gives "".
//! * Errors are `luaL_argerror`'s text, function name included: the name
//!   is the one the call site used (`bad argument #1 to 'band' (number
//!   expected, got no value)`; `'f'` after `local f = bit.band`; `'?'`
//!   when called by `pcall`; `calling 'band' on bad self (...)` for
//!   `bit:band()`), read from the stack as `luaL_argerror` does
//!   ([`arg_error`]), after the caller's position (`user_script:<line>: `,
//!   `luaL_error`'s `luaL_where`, `cmsgpack::raise`), as Redis's reply
//!   shows it.
//!
//! ## What differs
//! * `tohex(x, -2^31)`: in 7.0.15 `-n` overflows and the C reads past its
//!   8-byte buffer (CVE-2024-31449, fixed in later releases by treating
//!   `n` as `-(2^31 - 1)`). Here it is the fixed behaviour: 8 upper-case
//!   digits.
//!
//! The helpers [`arg_error`], [`type_error`] and [`to_number`] are shared
//! with the `struct` library (structlib.rs), which raises the same kinds of
//! errors.

use mlua::{Lua, MultiValue, Table, Value};

/// 2^52 + 2^51, LuaBitOp's conversion constant: added to a double in
/// [-2^51, 2^51], it puts the integer nearest the value (ties to even)
/// in the low word of the sum.
const TOBIT_MAGIC: f64 = 6_755_399_441_055_744.0;

/// The most hex digits `tohex` writes (a 32-bit value's eight).
const HEX_DIGITS_MAX: i32 = 8;

/// The bits of a shift or rotate count that are used.
const SHIFT_MASK: u32 = 31;

/// The library's table.
pub fn open(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set("tobit", lua.create_function(|lua, a: MultiValue| Ok(ret(barg(lua, &a, 1)?)))?)?;
    t.raw_set("bnot", lua.create_function(|lua, a: MultiValue| Ok(ret(!barg(lua, &a, 1)?)))?)?;
    t.raw_set("band", lua.create_function(|lua, a: MultiValue| fold(lua, &a, |x, y| x & y))?)?;
    t.raw_set("bor", lua.create_function(|lua, a: MultiValue| fold(lua, &a, |x, y| x | y))?)?;
    t.raw_set("bxor", lua.create_function(|lua, a: MultiValue| fold(lua, &a, |x, y| x ^ y))?)?;
    t.raw_set("lshift", lua.create_function(|lua, a: MultiValue| shift(lua, &a, |b, n| b << n))?)?;
    t.raw_set("rshift", lua.create_function(|lua, a: MultiValue| shift(lua, &a, |b, n| b >> n))?)?;
    t.raw_set("arshift", lua.create_function(|lua, a: MultiValue| shift(lua, &a, |b, n| ((b as i32) >> n) as u32))?)?;
    t.raw_set("rol", lua.create_function(|lua, a: MultiValue| shift(lua, &a, u32::rotate_left))?)?;
    t.raw_set("ror", lua.create_function(|lua, a: MultiValue| shift(lua, &a, u32::rotate_right))?)?;
    t.raw_set("bswap", lua.create_function(|lua, a: MultiValue| Ok(ret(barg(lua, &a, 1)?.swap_bytes())))?)?;
    t.raw_set("tohex", lua.create_function(tohex)?)?;
    Ok(t)
}

/// LuaBitOp's normalisation of a number to 32 bits (see the module doc).
fn tobit(n: f64) -> u32 {
    // The low word of the sum's bit pattern, exactly as the C's union
    // does it on a little- or big-endian machine alike.
    (n + TOBIT_MAGIC).to_bits() as u32
}

/// `BRET`: the result as Lua sees it, the signed 32-bit value.
fn ret(b: u32) -> f64 {
    f64::from(b as i32)
}

/// `barg`: argument `i` (1-based) as 32 bits, or the C's type error.
fn barg(lua: &Lua, args: &MultiValue, i: usize) -> mlua::Result<u32> {
    let v = args.get(i - 1);
    let n = match v {
        Some(v) => to_number(lua, v)?,
        None => None,
    };
    match n {
        Some(n) => Ok(tobit(n)),
        None => Err(type_error(lua, i, "number", v)),
    }
}

/// `band`/`bor`/`bxor`: argument 1, then the others from the last down
/// to the second (the C's order, which decides which bad argument is
/// named). Bounded by the argument count.
fn fold(lua: &Lua, args: &MultiValue, op: impl Fn(u32, u32) -> u32) -> mlua::Result<f64> {
    let mut b = barg(lua, args, 1)?;
    for i in (2..=args.len()).rev() {
        b = op(b, barg(lua, args, i)?);
    }
    Ok(ret(b))
}

/// The shifts and rotates: the value, then the count's low 5 bits.
fn shift(lua: &Lua, args: &MultiValue, op: impl Fn(u32, u32) -> u32) -> mlua::Result<f64> {
    let b = barg(lua, args, 1)?;
    let n = barg(lua, args, 2)? & SHIFT_MASK;
    Ok(ret(op(b, n)))
}

/// `tohex(x [, n])`.
fn tohex(lua: &Lua, args: MultiValue) -> mlua::Result<mlua::LuaString> {
    let mut b = barg(lua, &args, 1)?;
    let mut n = if args.len() < 2 { HEX_DIGITS_MAX } else { barg(lua, &args, 2)? as i32 };
    // 7.0.15 overflows on -(-2^31); later releases clamp it so (module doc).
    if n == i32::MIN {
        n = i32::MIN + 1;
    }
    let digits: &[u8; 16] = if n < 0 { b"0123456789ABCDEF" } else { b"0123456789abcdef" };
    let n = n.unsigned_abs().min(HEX_DIGITS_MAX as u32) as usize;
    let mut buf = [0u8; HEX_DIGITS_MAX as usize];
    for slot in buf[..n].iter_mut().rev() {
        *slot = digits[(b & 15) as usize];
        b >>= 4;
    }
    lua.create_string(&buf[..n])
}

/// `lua_tonumber`'s conversion: numbers, and strings Lua reads as numbers
/// (`lua_isnumber`); `None` for anything else.
pub(crate) fn to_number(lua: &Lua, v: &Value) -> mlua::Result<Option<f64>> {
    Ok(match v {
        // mlua hands over integral doubles as `Integer`; the conversion
        // back is exact (it only does so when the bits round-trip).
        Value::Integer(i) => Some(*i as f64),
        Value::Number(n) => Some(*n),
        Value::String(_) => lua.coerce_number(v.clone())?,
        _ => None,
    })
}

/// `luaL_typename`: what an argument is, "no value" past the last one.
pub(crate) fn type_name(v: Option<&Value>) -> &'static str {
    match v {
        None => "no value",
        Some(Value::Nil) => "nil",
        Some(Value::Boolean(_)) => "boolean",
        Some(Value::Integer(_) | Value::Number(_)) => "number",
        Some(Value::String(_)) => "string",
        Some(Value::Table(_)) => "table",
        Some(Value::Function(_)) => "function",
        Some(Value::Thread(_)) => "thread",
        // Light and full userdata (mlua's error values are userdata too).
        Some(_) => "userdata",
    }
}

/// `luaL_typerror`: "`<expected>` expected, got `<type>`" about argument
/// `narg`.
pub(crate) fn type_error(lua: &Lua, narg: usize, expected: &str, got: Option<&Value>) -> mlua::Error {
    arg_error(lua, narg, &format!("{expected} expected, got {}", type_name(got)))
}

/// `luaL_argerror`: "bad argument #`narg` to '`name`' (`extramsg`)", the
/// name being the one the calling code used for the running function
/// (`lua_getinfo` "n" on stack level 0, the library function itself);
/// for a method call the self argument is not counted, and an error in it
/// reads "calling '`name`' on bad self (`extramsg`)".
pub(crate) fn arg_error(lua: &Lua, narg: usize, extramsg: &str) -> mlua::Error {
    let names = lua.inspect_stack(0, |d| {
        let n = d.names();
        (n.name.map(|s| s.into_owned()), n.name_what)
    });
    let Some((name, what)) = names else {
        return super::cmsgpack::raise(lua, &format!("bad argument #{narg} ({extramsg})"));
    };
    let mut narg = narg;
    if what == Some("method") {
        narg -= 1;
        if narg == 0 {
            let name = name.as_deref().unwrap_or("?");
            return super::cmsgpack::raise(lua, &format!("calling '{name}' on bad self ({extramsg})"));
        }
    }
    let name = name.as_deref().unwrap_or("?");
    // luaL_argerror ends in luaL_error: the caller's position first.
    super::cmsgpack::raise(lua, &format!("bad argument #{narg} to '{name}' ({extramsg})"))
}

#[cfg(test)]
mod tests {
    //! Every expected value below is what redis-server 7.0.15 returned for
    //! the same expression (`EVAL "return …" 0`, tables of results read
    //! with redis-py); error texts are Redis's reply after its
    //! "user_script:1: " prefix.

    use super::*;

    fn lua() -> Lua {
        let lua = Lua::new();
        lua.globals().set("bit", open(&lua).unwrap()).unwrap();
        lua
    }

    fn num(code: &str) -> f64 {
        lua().load(code).eval::<f64>().unwrap()
    }

    fn nums(code: &str) -> Vec<f64> {
        lua().load(code).eval::<Vec<f64>>().unwrap()
    }

    fn text(code: &str) -> String {
        lua().load(code).eval::<String>().unwrap()
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
        // redis: pairs(bit), sorted.
        let got = text("local t={} for k in pairs(bit) do t[#t+1]=k end table.sort(t) return table.concat(t, ',')");
        assert_eq!(got, "arshift,band,bnot,bor,bswap,bxor,lshift,rol,ror,rshift,tobit,tohex");
    }

    #[test]
    fn tobit_wraps() {
        // redis: {-1, 1, -2147483648, 2147483647, 1410065408}
        assert_eq!(num("return bit.tobit(0xffffffff)"), -1.0);
        assert_eq!(num("return bit.tobit(2^32+1)"), 1.0);
        assert_eq!(num("return bit.tobit(2^31)"), -2147483648.0);
        assert_eq!(num("return bit.tobit(-2^31-1)"), 2147483647.0);
        assert_eq!(num("return bit.tobit(1e10)"), 1410065408.0);
    }

    #[test]
    fn tobit_rounds_half_to_even() {
        // redis: {0, 2, 2, 0, -2, -2, 4}
        let got = nums(
            "return {bit.tobit(0.5), bit.tobit(1.5), bit.tobit(2.5), bit.tobit(-0.5), bit.tobit(-1.5), \
             bit.tobit(-2.5), bit.tobit(3.5)}",
        );
        assert_eq!(got, [0.0, 2.0, 2.0, 0.0, -2.0, -2.0, 4.0]);
        // redis: {-2147483648, -2147483648, 0, 0}
        let got = nums(
            "return {bit.tobit(-2147483648.5), bit.tobit(2147483647.5), bit.tobit(4294967295.5), \
             bit.tobit(-4294967296.5)}",
        );
        assert_eq!(got, [-2147483648.0, -2147483648.0, 0.0, 0.0]);
        // redis: {0, 1, -1, 0, 0, 1}
        let got = nums(
            "return {bit.tobit(2^51+0.5), bit.tobit(2^51+1.5), bit.tobit(-2^51-0.5), bit.tobit(2^52-0.5), \
             bit.tobit(0.49999999999999994), bit.tobit(-2^52+0.5)}",
        );
        assert_eq!(got, [0.0, 1.0, -1.0, 0.0, 0.0, 1.0]);
    }

    #[test]
    fn tobit_past_the_exact_range() {
        // redis: {0, 1, 0, 48, 2025163840, 2025163840, 0, 0, 0} and 0, 0
        let got = nums(
            "return {bit.tobit(2^53), bit.tobit(2^53+2), bit.tobit(2^52+1), bit.tobit(2^60+12345), \
             bit.tobit(1e20), bit.tobit(-1e20), bit.tobit(1/0), bit.tobit(-1/0), bit.tobit(0/0), \
             bit.tobit(-2^63), bit.tobit(2^63)}",
        );
        assert_eq!(got, [0.0, 1.0, 0.0, 48.0, 2025163840.0, 2025163840.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
    }

    #[test]
    fn numeric_strings_count() {
        // redis: 16, 12, 1000, 1 (band('3','5')); tostring(tobit(-0.0)) = "0"
        assert_eq!(num("return bit.tobit('0x10')"), 16.0);
        assert_eq!(num("return bit.tobit('  12  ')"), 12.0);
        assert_eq!(num("return bit.tobit('1e3')"), 1000.0);
        assert_eq!(num("return bit.band('3', '5')"), 1.0);
        assert_eq!(text("return tostring(bit.tobit(-0.0))"), "0");
        assert_eq!(text("return tostring(bit.tobit(2^31))"), "-2147483648");
        assert_eq!(text("return type(bit.tobit(1))"), "number");
    }

    #[test]
    fn bnot() {
        // redis: {-1, 0, -2147483648, -1}; tohex(bnot(0)) = "ffffffff"
        assert_eq!(
            nums("return {bit.bnot(0), bit.bnot(-1), bit.bnot(0x7fffffff), bit.bnot(2^32)}"),
            [-1.0, 0.0, -2147483648.0, -1.0]
        );
        assert_eq!(text("return bit.tohex(bit.bnot(0))"), "ffffffff");
    }

    #[test]
    fn band_bor_bxor() {
        // redis: {12, 15, 0, -1, 5, 7, -2147483648}
        let got = nums(
            "return {bit.band(0xff, 0x0f, 0x3c), bit.bor(1, 2, 4, 8), bit.bxor(0xff, 0x0f, 0xf0), bit.band(-1), \
             bit.bor(5), bit.bxor(7), bit.band(0xffffffff, 0x80000000)}",
        );
        assert_eq!(got, [12.0, 15.0, 0.0, -1.0, 5.0, 7.0, -2147483648.0]);
    }

    #[test]
    fn shifts() {
        // redis: {-2147483648, 1, 2, -2147483648, 15, -1, -16, -1, 1}
        let got = nums(
            "return {bit.lshift(1, 31), bit.lshift(1, 32), bit.lshift(1, 33), bit.lshift(1, -1), \
             bit.rshift(-1, 28), bit.rshift(-1, 0), bit.arshift(-256, 4), bit.arshift(0x80000000, 31), \
             bit.rshift(0x80000000, 31)}",
        );
        assert_eq!(got, [-2147483648.0, 1.0, 2.0, -2147483648.0, 15.0, -1.0, -16.0, -1.0, 1.0]);
        // redis: 4 (extra arguments are ignored)
        assert_eq!(num("return bit.lshift(1, 2, 'junk')"), 4.0);
        assert_eq!(num("return bit.tobit(1, 'junk')"), 1.0);
    }

    #[test]
    fn rotates() {
        // redis: {1164411171, 1736516421, 1, 1, 1, -2147483648, 2, 2}
        let got = nums(
            "return {bit.rol(0x12345678, 12), bit.ror(0x12345678, 12), bit.rol(1, 0), bit.ror(1, 0), \
             bit.rol(0x80000000, 1), bit.ror(1, 1), bit.rol(1, 33), bit.ror(1, -1)}",
        );
        assert_eq!(got, [1164411171.0, 1736516421.0, 1.0, 1.0, 1.0, -2147483648.0, 2.0, 2.0]);
    }

    #[test]
    fn bswap() {
        // redis: {2018915346, -2147483648, -1, 0}
        let got = nums("return {bit.bswap(0x12345678), bit.bswap(0x80), bit.bswap(-1), bit.bswap(0)}");
        assert_eq!(got, [2018915346.0, -2147483648.0, -1.0, 0.0]);
    }

    #[test]
    fn tohex() {
        // redis: 000000ff ff FF "" 5678 12345678 12345678 ffffffff 001 01
        let got = text(
            "return table.concat({bit.tohex(255), bit.tohex(255, 2), bit.tohex(255, -2), bit.tohex(-1, 0), \
             bit.tohex(0x12345678, 4), bit.tohex(0x12345678, 9), bit.tohex(0x12345678, -12), bit.tohex(-1), \
             bit.tohex(1, 2^32+3), bit.tohex(1, 1.5)}, ' ')",
        );
        assert_eq!(got, "000000ff ff FF  5678 12345678 12345678 ffffffff 001 01");
        // redis: "FFFFFFFF", "FFFF", ""
        assert_eq!(text("return bit.tohex(-1, -8)"), "FFFFFFFF");
        assert_eq!(text("return bit.tohex(65535, -4)"), "FFFF");
        assert_eq!(text("return bit.tohex(0, 0)"), "");
        // Not asked of redis 7.0.15 (it overflows there; module doc).
        assert_eq!(text("return bit.tohex(-1, -2^31)"), "FFFFFFFF");
    }

    #[test]
    fn errors_name_the_argument() {
        // redis: each text after "user_script:1: ".
        assert_eq!(error("return bit.band()"), "bad argument #1 to 'band' (number expected, got no value)");
        assert_eq!(error("return bit.band(nil)"), "bad argument #1 to 'band' (number expected, got nil)");
        assert_eq!(error("return bit.band(1,nil)"), "bad argument #2 to 'band' (number expected, got nil)");
        assert_eq!(error("return bit.band(1, nil, 'x')"), "bad argument #3 to 'band' (number expected, got string)");
        assert_eq!(error("return bit.band({})"), "bad argument #1 to 'band' (number expected, got table)");
        assert_eq!(error("return bit.tohex()"), "bad argument #1 to 'tohex' (number expected, got no value)");
        assert_eq!(error("return bit.tohex(1, nil)"), "bad argument #2 to 'tohex' (number expected, got nil)");
        assert_eq!(error("return bit.tohex(1, 'x')"), "bad argument #2 to 'tohex' (number expected, got string)");
        assert_eq!(error("return bit.tobit('abc')"), "bad argument #1 to 'tobit' (number expected, got string)");
        assert_eq!(error("return bit.tobit('0x')"), "bad argument #1 to 'tobit' (number expected, got string)");
        assert_eq!(error("return bit.lshift(1)"), "bad argument #2 to 'lshift' (number expected, got no value)");
        assert_eq!(error("return bit.bnot(true)"), "bad argument #1 to 'bnot' (number expected, got boolean)");
        assert_eq!(
            error("return bit.bnot(function() end)"),
            "bad argument #1 to 'bnot' (number expected, got function)"
        );
    }

    #[test]
    fn errors_use_the_callers_name() {
        // What mlua's error value prints before the message (a bare Lua
        // state; the sandbox hands scripts the message alone).
        const MLUA: &str = "runtime error: ";
        // redis: the name the call site used, '?' under pcall, and the
        // method form.
        assert_eq!(error("local f=bit.band return f()"), "bad argument #1 to 'f' (number expected, got no value)");
        assert_eq!(
            error("local t = {f = bit.bnot} return t.f('z')"),
            "bad argument #1 to 'f' (number expected, got string)"
        );
        assert_eq!(error("return bit:band(1)"), "calling 'band' on bad self (number expected, got table)");
        assert_eq!(
            error("local t = {f = bit.bnot} return t:f()"),
            "calling 'f' on bad self (number expected, got table)"
        );
        assert_eq!(
            text("local ok, e = pcall(bit.band) return tostring(e)").trim_start_matches(MLUA).lines().next().unwrap(),
            "bad argument #1 to '?' (number expected, got no value)"
        );
        assert_eq!(
            text("local ok, e = pcall(bit.tohex, 1, {}) return tostring(e)")
                .trim_start_matches(MLUA)
                .lines()
                .next()
                .unwrap(),
            "bad argument #2 to '?' (number expected, got table)"
        );
    }
}
