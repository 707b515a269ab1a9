//! `cmsgpack`: lua-cmsgpack 0.4.0 as Redis 7.0.15 ships it (deps/lua/src/
//! lua_cmsgpack.c), written over mlua's safe API.
//!
//! ## What follows lua-cmsgpack exactly
//! `pack(...)` (each argument packed, the results joined), `unpack(s)`
//! (every value), `unpack_one(s [, offset])` and `unpack_limit(s, limit
//! [, offset])` (the next offset first, -1 at the end), `_NAME`,
//! `_VERSION`, `_COPYRIGHT`, `_DESCRIPTION`. Packing: a number with an
//! integral value that C's int64 holds in the smallest int form, any
//! other as a float32 when it survives the round trip (so `inf`) else a
//! float64; strings as str (fixstr, str8, str16, str32: never bin); a
//! table whose keys are exactly 1..n (compared as C's int) as an array,
//! any other (the empty table is an array) as a map in Lua's `next`
//! order; nil, functions, userdata and threads as nil; a table 16 levels
//! down (`LUACMSGPACK_MAX_NESTING`, keys count as a level too) as nil, so
//! a cycle ends. Unpacking: every msgpack type lua-cmsgpack knows, a
//! uint64 read through a signed int64 as lua-cmsgpack's `lua_pushinteger`
//! does (2^64-1 is -1), bin, ext and 0xc1 refused ("Bad data format in
//! input."), a short input "Missing bytes in input.", a nil or NaN map key
//! Lua's "table index is nil"/"table index is NaN". Lua's C stack bound
//! (8000 slots, `luaL_checkstack`) is counted as lua-cmsgpack uses it, so
//! 8000 values at once, an array 4000 deep or more than 4000 arguments to
//! `pack` fail with its words. Errors are raised as `luaL_error` raises
//! them: after the calling line (`luaL_where`: "user_script:1: ", nothing
//! when the caller is not Lua, as in `pcall(cmsgpack.unpack, s)`), "bad
//! argument" with the calling name as Lua's debug information has it.
//! The C-runtime emulations both libraries use live here: lauxlib's
//! helpers, C's casts (as x86-64 does them), glibc's `strtod` (cjson's
//! number reader).
//!
//! ## What differs
//! `unpack` returns at most 8000 - [`CALLBACK_SLOTS`] - (its arguments)
//! values at once (7975 for one argument; lua-cmsgpack 7999), raising
//! lua-cmsgpack's "too many return values" past it: mlua's callback
//! wrapper needs those slots, and would otherwise fail with its own words
//! (checked on a fresh state and a used one). The packed text is bounded
//! by [`crate::LUA_MEMORY_BYTES_MAX`] ("not enough memory"; Lua's
//! allocator, unbounded in Redis, gives lua-cmsgpack its buffer). mlua
//! keeps every string and table a call holds at once in reference slots
//! (about 8000 for the whole state), so a state holding thousands of
//! other references meets mlua's "out of Lua stack" error sooner.
//!
//! ## Design
//! Packing is recursive (at most [`NESTING_MAX`] deep). Unpacking is a
//! loop over an explicit stack of open arrays and maps: no recursion, and
//! the depth is bounded by the stack-slot count.

use mlua::{Lua, LuaString, MultiValue, Table, Value};

/// `LUACMSGPACK_MAX_NESTING`: a table this many levels down packs as nil.
pub const NESTING_MAX: usize = 16;
/// `LUAI_MAXCSTACK`: the Lua stack slots a C function may use, which
/// lua-cmsgpack's `luaL_checkstack` calls meet.
const LUA_STACK_SLOTS_MAX: usize = 8000;
/// The Lua stack slots mlua's callback wrapper may want besides the
/// arguments and results (a preallocated error value, `lua_rotate`'s
/// check; on a state's first callback about `LUA_MINSTACK` more, measured
/// at 23): `unpack` keeps them free.
pub const CALLBACK_SLOTS: usize = 24;
/// The longest text `pack` builds.
const PACKED_BYTES_MAX: usize = crate::LUA_MEMORY_BYTES_MAX;
const TOO_MANY_VALUES: &str = "too many return values at once; use unpack_one or unpack_limit instead.";

/// The library's table.
pub fn open(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set("pack", lua.create_function(pack)?)?;
    t.raw_set("unpack", lua.create_function(|lua, args: MultiValue| unpack(lua, &args, 0, 0, args.len()))?)?;
    t.raw_set(
        "unpack_one",
        lua.create_function(|lua, args: MultiValue| {
            let offset = opt_integer(lua, &args, 2)?;
            unpack(lua, &args, 1, offset, 1)
        })?,
    )?;
    t.raw_set(
        "unpack_limit",
        lua.create_function(|lua, args: MultiValue| {
            let limit = check_integer(lua, &args, 2)?;
            let offset = opt_integer(lua, &args, 3)?;
            unpack(lua, &args, limit, offset, 1)
        })?,
    )?;
    t.raw_set("_NAME", "cmsgpack")?;
    t.raw_set("_VERSION", "lua-cmsgpack 0.4.0")?;
    t.raw_set("_COPYRIGHT", "Copyright (C) 2012, Salvatore Sanfilippo")?;
    t.raw_set("_DESCRIPTION", "MessagePack C implementation for Lua")?;
    Ok(t)
}

// ---- the C runtime, emulated (shared with cjson.rs) ----

/// `luaL_error`: `msg` after the calling line (`luaL_where(L, 1)`), if the
/// caller is a Lua function with a line.
pub(super) fn raise(lua: &Lua, msg: &str) -> mlua::Error {
    let at = lua.inspect_stack(1, |d| (d.source().short_src.map(|s| s.into_owned()), d.current_line()));
    match at {
        Some((Some(src), Some(line))) if line > 0 => mlua::Error::runtime(format!("{src}:{line}: {msg}")),
        _ => mlua::Error::runtime(msg),
    }
}

/// `luaL_argerror`: "bad argument #n to 'name' (extra)", the name as the
/// caller's debug information has it.
pub(super) fn arg_error(lua: &Lua, narg: i32, extra: &str) -> mlua::Error {
    let (name, what) = lua
        .inspect_stack(0, |d| {
            let n = d.names();
            (n.name.map(|s| s.into_owned()), n.name_what)
        })
        .unwrap_or((None, None));
    let mut narg = narg;
    if what == Some("method") {
        narg -= 1;
        if narg == 0 {
            let name = name.as_deref().unwrap_or("?");
            return raise(lua, &format!("calling '{name}' on bad self ({extra})"));
        }
    }
    let name = name.as_deref().unwrap_or("?");
    raise(lua, &format!("bad argument #{narg} to '{name}' ({extra})"))
}

/// `luaL_typerror`: "`expected` expected, got <type>" for argument `narg`
/// (1-based; "no value" past the last).
pub(super) fn type_error(lua: &Lua, args: &MultiValue, narg: usize, expected: &str) -> mlua::Error {
    let got = args.get(narg - 1).map_or("no value", type_name);
    arg_error(lua, narg as i32, &format!("{expected} expected, got {got}"))
}

/// Lua 5.1's `lua_typename` (a light userdata is "userdata").
pub(super) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Nil => "nil",
        Value::Boolean(_) => "boolean",
        Value::Integer(_) | Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Table(_) => "table",
        Value::Function(_) => "function",
        Value::Thread(_) => "thread",
        _ => "userdata",
    }
}

/// `luaL_checkinteger`: a number or a string Lua reads as one, truncated
/// as C's cast truncates (out of range: x86's "indefinite", i64::MIN).
pub(super) fn check_integer(lua: &Lua, args: &MultiValue, narg: usize) -> mlua::Result<i64> {
    let v = args.get(narg - 1).cloned().unwrap_or(Value::Nil);
    match lua.coerce_number(v)? {
        Some(n) => Ok(c_i64(n)),
        None => Err(type_error(lua, args, narg, "number")),
    }
}

/// `luaL_checklstring`: a string, or a number as Lua writes it.
pub(super) fn check_string(lua: &Lua, args: &MultiValue, narg: usize) -> mlua::Result<LuaString> {
    match args.get(narg - 1) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(v @ (Value::Integer(_) | Value::Number(_))) => match lua.coerce_string(v.clone())? {
            Some(s) => Ok(s),
            None => Err(type_error(lua, args, narg, "string")),
        },
        _ => Err(type_error(lua, args, narg, "string")),
    }
}

/// A Lua number's value (mlua gives whole ones as `Integer`).
pub(super) fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Integer(i) => Some(*i as f64),
        Value::Number(n) => Some(*n),
        _ => None,
    }
}

/// C's `(int64_t)d` on x86-64.
fn c_i64(d: f64) -> i64 {
    if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&d) {
        d as i64
    } else {
        i64::MIN
    }
}

/// C's `(int)d` on x86-64.
pub(super) fn c_int(d: f64) -> i32 {
    if (-2_147_483_648.0..2_147_483_648.0).contains(&d) {
        d as i32
    } else {
        i32::MIN
    }
}

/// `luaL_optinteger(L, n, 0)`.
fn opt_integer(lua: &Lua, args: &MultiValue, narg: usize) -> mlua::Result<i64> {
    match args.get(narg - 1) {
        None | Some(Value::Nil) => Ok(0),
        Some(_) => check_integer(lua, args, narg),
    }
}

/// `luaL_checkstack`'s refusal.
fn stack_overflow(lua: &Lua, what: &str) -> mlua::Error {
    raise(lua, &format!("stack overflow ({what})"))
}

// ---- packing ----

/// `mp_pack`.
fn pack(lua: &Lua, args: MultiValue) -> mlua::Result<LuaString> {
    let nargs = args.len();
    if nargs == 0 {
        return Err(arg_error(lua, 0, "MessagePack pack needs input."));
    }
    if nargs * 2 > LUA_STACK_SLOTS_MAX {
        return Err(arg_error(lua, 0, "Too many arguments for MessagePack pack."));
    }
    let mut p = Packer { lua, out: Vec::new() };
    for (i, v) in args.iter().enumerate() {
        // On Lua's stack: the arguments, the results so far, this copy.
        p.value(v, 0, nargs + i + 1)?;
    }
    lua.create_string(&p.out)
}

struct Packer<'a> {
    lua: &'a Lua,
    out: Vec<u8>,
}

/// C's `IS_INT_TYPE_EQUIVALENT(x, int64_t)`.
fn is_int64(n: f64) -> bool {
    (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&n) && n.trunc() == n
}

impl Packer<'_> {
    /// `mp_encode_lua_type` for `v` at `level`, `top` the Lua stack slots
    /// in use with `v` on top.
    fn value(&mut self, v: &Value, level: usize, top: usize) -> mlua::Result<()> {
        if self.out.len() > PACKED_BYTES_MAX {
            return Err(mlua::Error::runtime("not enough memory"));
        }
        match v {
            Value::String(s) => self.bytes(&s.as_bytes()),
            Value::Boolean(b) => self.out.push(if *b { 0xc3 } else { 0xc2 }),
            Value::Integer(_) | Value::Number(_) => self.number(number(v).unwrap_or(0.0)),
            Value::Table(t) if level < NESTING_MAX => self.table(t, level, top)?,
            _ => self.out.push(0xc0),
        }
        Ok(())
    }

    /// `mp_encode_lua_number`.
    fn number(&mut self, n: f64) {
        if is_int64(n) {
            self.int(n as i64);
        } else if n == f64::from(n as f32) {
            self.out.push(0xca);
            self.out.extend_from_slice(&(n as f32).to_be_bytes());
        } else {
            self.out.push(0xcb);
            self.out.extend_from_slice(&n.to_be_bytes());
        }
    }

    /// `mp_encode_int`: the smallest form.
    fn int(&mut self, n: i64) {
        let o = &mut self.out;
        match n {
            0..=127 => o.push(n as u8),
            128..=0xff => o.extend_from_slice(&[0xcc, n as u8]),
            0x100..=0xffff => {
                o.push(0xcd);
                o.extend_from_slice(&(n as u16).to_be_bytes());
            }
            0x1_0000..=0xffff_ffff => {
                o.push(0xce);
                o.extend_from_slice(&(n as u32).to_be_bytes());
            }
            0x1_0000_0000.. => {
                o.push(0xcf);
                o.extend_from_slice(&(n as u64).to_be_bytes());
            }
            -32..=-1 => o.push(n as i8 as u8),
            -128..=-33 => o.extend_from_slice(&[0xd0, n as i8 as u8]),
            -32768..=-129 => {
                o.push(0xd1);
                o.extend_from_slice(&(n as i16).to_be_bytes());
            }
            -2_147_483_648..=-32769 => {
                o.push(0xd2);
                o.extend_from_slice(&(n as i32).to_be_bytes());
            }
            _ => {
                o.push(0xd3);
                o.extend_from_slice(&n.to_be_bytes());
            }
        }
    }

    /// `mp_encode_bytes`: str, never bin.
    fn bytes(&mut self, s: &[u8]) {
        let len = s.len();
        let o = &mut self.out;
        if len < 32 {
            o.push(0xa0 | len as u8);
        } else if len <= 0xff {
            o.extend_from_slice(&[0xd9, len as u8]);
        } else if len <= 0xffff {
            o.push(0xda);
            o.extend_from_slice(&(len as u16).to_be_bytes());
        } else {
            o.push(0xdb);
            o.extend_from_slice(&(len as u32).to_be_bytes());
        }
        o.extend_from_slice(s);
    }

    /// An array or map header (`mp_encode_array`, `mp_encode_map`).
    fn header(&mut self, n: usize, fix: u8, wide: u8) {
        if n <= 15 {
            self.out.push(fix | n as u8);
        } else if n <= 0xffff {
            self.out.push(wide);
            self.out.extend_from_slice(&(n as u16).to_be_bytes());
        } else {
            self.out.push(wide + 1);
            self.out.extend_from_slice(&(n as u32).to_be_bytes());
        }
    }

    /// `mp_encode_lua_table`.
    fn table(&mut self, t: &Table, level: usize, top: usize) -> mlua::Result<()> {
        if top + 2 > LUA_STACK_SLOTS_MAX {
            return Err(stack_overflow(self.lua, "in function table_is_an_array"));
        }
        if is_array(t)? {
            if top + 1 > LUA_STACK_SLOTS_MAX {
                return Err(stack_overflow(self.lua, "in function mp_encode_lua_table_as_array"));
            }
            let len = t.raw_len();
            self.header(len, 0x90, 0xdc);
            // Bounded: the keys are exactly 1..len.
            for j in 1..=len {
                let v: Value = t.raw_get(j)?;
                self.value(&v, level + 1, top + 1)?;
            }
            return Ok(());
        }
        if top + 3 > LUA_STACK_SLOTS_MAX {
            return Err(stack_overflow(self.lua, "in function mp_encode_lua_table_as_map"));
        }
        let mut len = 0;
        // Bounded by the table's size (twice).
        for pair in t.pairs::<Value, Value>() {
            pair?;
            len += 1;
        }
        self.header(len, 0x80, 0xde);
        for pair in t.pairs::<Value, Value>() {
            let (k, v) = pair?;
            self.value(&k, level + 1, top + 3)?;
            self.value(&v, level + 1, top + 2)?;
        }
        Ok(())
    }
}

/// `table_is_an_array`: every key a whole number from 1 below 2^31, as
/// many as the largest.
fn is_array(t: &Table) -> mlua::Result<bool> {
    let (mut count, mut max) = (0i64, 0i64);
    // Bounded by the table's size.
    for pair in t.pairs::<Value, Value>() {
        let Some(n) = number(&pair?.0) else { return Ok(false) };
        if n <= 0.0 || !(n < 2_147_483_648.0 && n.trunc() == n) {
            return Ok(false);
        }
        max = max.max(n as i64);
        count += 1;
    }
    Ok(max == count)
}

// ---- unpacking ----

/// `mp_unpack_full`: `base` is the Lua stack slots in use before the
/// first value (the arguments left there).
fn unpack(lua: &Lua, args: &MultiValue, limit: i64, offset: i64, base: usize) -> mlua::Result<MultiValue> {
    let s = check_string(lua, args, 1)?;
    let s = s.as_bytes();
    let len = s.len();
    if offset < 0 || limit < 0 {
        let msg = format!("Invalid request to unpack with offset of {} and limit of {}.", offset as i32, len as i32);
        return Err(raise(lua, &msg));
    }
    if offset as u64 > len as u64 {
        let msg = format!("Start offset {} greater than input length {}.", offset as i32, len as i32);
        return Err(raise(lua, &msg));
    }
    let decode_all = limit == 0 && offset == 0;
    let limit = if decode_all { i64::from(i32::MAX) } else { limit };
    let mut c = Cursor { lua, s: &s, at: offset as usize };
    let mut out = MultiValue::new();
    // What mlua can return besides the arguments (all still on the stack)
    // and the offset: a few values fewer than Lua's own bound.
    let room =
        LUA_STACK_SLOTS_MAX - CALLBACK_SLOTS - args.len().min(LUA_STACK_SLOTS_MAX / 2) - usize::from(!decode_all);
    // Bounded by the input: every value takes at least a byte.
    while c.at < len && (out.len() as i64) < limit {
        if out.len() >= room {
            return Err(stack_overflow(lua, TOO_MANY_VALUES));
        }
        let v = c.value(base + out.len())?;
        out.push_back(v);
    }
    if !decode_all {
        if base + out.len() + 1 > LUA_STACK_SLOTS_MAX {
            return Err(stack_overflow(lua, "in function mp_unpack_full"));
        }
        let next = if c.at == len { -1 } else { c.at as i64 };
        out.push_front(Value::Integer(next));
    }
    Ok(out)
}

struct Cursor<'a> {
    lua: &'a Lua,
    s: &'a [u8],
    at: usize,
}

/// An open array (how many values it still awaits, its next index) or map
/// (how many pairs it still awaits, the key its value awaits).
enum Open {
    Array(Table, u64, i64),
    Map(Table, u64, Option<Value>),
}

impl Cursor<'_> {
    /// `mp_cur_need`: the next `n` bytes, or "Missing bytes in input.".
    fn need(&self, n: usize) -> mlua::Result<&[u8]> {
        match self.s.get(self.at..self.at.saturating_add(n)) {
            Some(b) if b.len() == n => Ok(b),
            _ => Err(raise(self.lua, "Missing bytes in input.")),
        }
    }

    /// A big-endian length of `n` bytes after the type byte.
    fn length(&self, n: usize) -> mlua::Result<u64> {
        let b = self.need(1 + n)?;
        Ok(b[1..].iter().fold(0u64, |acc, &x| acc << 8 | u64::from(x)))
    }

    /// A string of `len` bytes after a header of `hdr` bytes.
    fn string(&mut self, hdr: usize, len: u64) -> mlua::Result<Value> {
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        let b = self.need(hdr.saturating_add(len))?;
        let v = Value::String(self.lua.create_string(&b[hdr..])?);
        self.at += hdr + len;
        Ok(v)
    }

    /// `n` bytes after the type byte, the cursor past them.
    fn fixed<const N: usize>(&mut self) -> mlua::Result<[u8; N]> {
        let b = self.need(1 + N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(&b[1..]);
        self.at += 1 + N;
        Ok(a)
    }

    /// `mp_decode_to_lua_type` for one whole value, `top` the Lua stack
    /// slots in use before it: lua-cmsgpack's recursion as a loop over the
    /// open arrays and maps.
    fn value(&mut self, top: usize) -> mlua::Result<Value> {
        let mut open: Vec<Open> = Vec::new();
        // The Lua stack slots lua-cmsgpack would hold: `top`, and for each
        // open table the table and the index or key it pushed.
        let mut slots = top;
        // Bounded by the input: every turn reads at least a byte.
        loop {
            let b = self.need(1)?[0];
            if slots + 1 > LUA_STACK_SLOTS_MAX {
                return Err(stack_overflow(self.lua, TOO_MANY_VALUES));
            }
            let num = |n: f64| Value::Number(n);
            let mut value = match b {
                0x00..=0x7f => {
                    self.at += 1;
                    num(f64::from(b))
                }
                0xe0..=0xff => {
                    self.at += 1;
                    num(f64::from(b as i8))
                }
                0xc0 => {
                    self.at += 1;
                    Value::Nil
                }
                0xc2 | 0xc3 => {
                    self.at += 1;
                    Value::Boolean(b == 0xc3)
                }
                0xcc => num(f64::from(self.fixed::<1>()?[0])),
                0xcd => num(f64::from(u16::from_be_bytes(self.fixed()?))),
                0xce => num(f64::from(u32::from_be_bytes(self.fixed()?))),
                // lua_pushinteger of a uint64: through a signed int64.
                0xcf => num(u64::from_be_bytes(self.fixed()?) as i64 as f64),
                0xd0 => num(f64::from(self.fixed::<1>()?[0] as i8)),
                0xd1 => num(f64::from(i16::from_be_bytes(self.fixed()?))),
                0xd2 => num(f64::from(i32::from_be_bytes(self.fixed()?))),
                0xd3 => num(i64::from_be_bytes(self.fixed()?) as f64),
                0xca => num(f64::from(f32::from_be_bytes(self.fixed()?))),
                0xcb => num(f64::from_be_bytes(self.fixed()?)),
                0xa0..=0xbf => self.string(1, u64::from(b & 0x1f))?,
                0xd9 => self.string(2, self.length(1)?)?,
                0xda => self.string(3, self.length(2)?)?,
                0xdb => self.string(5, self.length(4)?)?,
                0x90..=0x9f | 0xdc | 0xdd => {
                    let (n, hdr) = match b {
                        0xdc => (self.length(2)?, 3),
                        0xdd => (self.length(4)?, 5),
                        _ => (u64::from(b & 0xf), 1),
                    };
                    self.at += hdr;
                    let t = self.lua.create_table()?;
                    if slots + 2 > LUA_STACK_SLOTS_MAX {
                        return Err(stack_overflow(self.lua, "in function mp_decode_to_lua_array"));
                    }
                    if n > 0 {
                        open.push(Open::Array(t, n, 1));
                        slots += 2;
                        continue;
                    }
                    Value::Table(t)
                }
                0x80..=0x8f | 0xde | 0xdf => {
                    let (n, hdr) = match b {
                        0xde => (self.length(2)?, 3),
                        0xdf => (self.length(4)?, 5),
                        _ => (u64::from(b & 0xf), 1),
                    };
                    self.at += hdr;
                    let t = self.lua.create_table()?;
                    if n > 0 {
                        open.push(Open::Map(t, n, None));
                        slots += 1;
                        continue;
                    }
                    Value::Table(t)
                }
                _ => return Err(raise(self.lua, "Bad data format in input.")),
            };
            // The value is whole: into the innermost open table, closing
            // those it fills, up to the next value.
            loop {
                match open.last_mut() {
                    None => return Ok(value),
                    Some(Open::Array(t, left, i)) => {
                        t.raw_set(*i, value)?;
                        *i += 1;
                        *left -= 1;
                        if *left > 0 {
                            break;
                        }
                    }
                    Some(Open::Map(t, left, key)) => match key.take() {
                        None => {
                            *key = Some(value);
                            slots += 1;
                            break;
                        }
                        Some(k) => {
                            // lua_settable's refusals (Lua's words, no
                            // line: the running function is C).
                            match &k {
                                Value::Nil => return Err(mlua::Error::runtime("table index is nil")),
                                Value::Number(n) if n.is_nan() => {
                                    return Err(mlua::Error::runtime("table index is NaN"))
                                }
                                _ => t.raw_set(k, value)?,
                            }
                            slots -= 1;
                            *left -= 1;
                            if *left > 0 {
                                break;
                            }
                        }
                    },
                }
                value = match open.pop() {
                    Some(Open::Array(t, ..)) => {
                        slots -= 2;
                        Value::Table(t)
                    }
                    Some(Open::Map(t, ..)) => {
                        slots -= 1;
                        Value::Table(t)
                    }
                    None => Value::Nil,
                };
            }
        }
    }
}

// ---- glibc's strtod (cjson.rs's number reader) ----

/// glibc's `strtod` from `start`: the number and where it ends, or None
/// when nothing is a number there.
pub(super) fn strtod(s: &[u8], start: usize) -> Option<(f64, usize)> {
    let at = |i: usize| s.get(i).copied().unwrap_or(0);
    let word = |i: usize, w: &[u8]| w.iter().enumerate().all(|(j, c)| at(i + j).eq_ignore_ascii_case(c));
    let mut p = start;
    let negative = at(p) == b'-';
    if matches!(at(p), b'+' | b'-') {
        p += 1;
    }
    let sign = |v: f64| if negative { -v } else { v };
    if word(p, b"inf") {
        let end = if word(p + 3, b"inity") { p + 8 } else { p + 3 };
        return Some((sign(f64::INFINITY), end));
    }
    if word(p, b"nan") {
        let mut end = p + 3;
        if at(end) == b'(' {
            let mut q = end + 1;
            // Bounded by the text.
            while at(q).is_ascii_alphanumeric() || at(q) == b'_' {
                q += 1;
            }
            if at(q) == b')' {
                end = q + 1;
            }
        }
        return Some((sign(f64::NAN), end));
    }
    if at(p) == b'0' && at(p + 1) | 0x20 == b'x' {
        let h = p + 2;
        if at(h).is_ascii_hexdigit() || (at(h) == b'.' && at(h + 1).is_ascii_hexdigit()) {
            let (v, end) = hex_float(s, h);
            return Some((sign(v), end));
        }
        // Only the "0" is a number.
        return Some((sign(0.0), p + 1));
    }
    let digits_from = |mut i: usize| {
        // Bounded by the text.
        while at(i).is_ascii_digit() {
            i += 1;
        }
        i
    };
    let int_end = digits_from(p);
    let mut end = int_end;
    let mut any = int_end > p;
    if at(end) == b'.' {
        let frac_end = digits_from(end + 1);
        any |= frac_end > end + 1;
        end = frac_end;
    }
    if !any {
        return None;
    }
    if at(end) | 0x20 == b'e' {
        let mut e = end + 1;
        if matches!(at(e), b'+' | b'-') {
            e += 1;
        }
        let exp_end = digits_from(e);
        if exp_end > e {
            end = exp_end;
        }
    }
    let text = std::str::from_utf8(&s[start..end]).ok()?;
    text.parse::<f64>().ok().map(|v| (v, end))
}

/// A hexadecimal float's digits from `p` (after "0x"): its value and end.
fn hex_float(s: &[u8], mut p: usize) -> (f64, usize) {
    let at = |i: usize| s.get(i).copied().unwrap_or(0);
    let (mut mant, mut exp, mut sticky) = (0u64, 0i64, false);
    let mut seen_dot = false;
    // Bounded by the text.
    loop {
        let c = at(p);
        if c == b'.' && !seen_dot {
            seen_dot = true;
        } else if let Some(d) = char::from(c).to_digit(16) {
            if mant >> 60 == 0 {
                mant = mant << 4 | u64::from(d);
                if seen_dot {
                    exp -= 4;
                }
            } else {
                sticky |= d != 0;
                if !seen_dot {
                    exp += 4;
                }
            }
        } else {
            break;
        }
        p += 1;
    }
    if at(p) | 0x20 == b'p' {
        let mut e = p + 1;
        let neg = at(e) == b'-';
        if matches!(at(e), b'+' | b'-') {
            e += 1;
        }
        if at(e).is_ascii_digit() {
            let mut x: i64 = 0;
            // Bounded by the text.
            while at(e).is_ascii_digit() {
                x = (x * 10 + i64::from(at(e) - b'0')).min(1 << 20);
                e += 1;
            }
            exp += if neg { -x } else { x };
            p = e;
        }
    }
    // A dropped digit's trace in the lowest bit (60 bits are kept), so
    // the conversion rounds to nearest as strtod does.
    let mut v = (mant | u64::from(sticky)) as f64;
    let mut e = exp;
    // Bounded: |e| is at most about 2^20, 1000 a turn.
    while e > 1000 && v.is_finite() {
        v *= 2f64.powi(1000);
        e -= 1000;
    }
    while e < -1000 && v != 0.0 {
        v *= 2f64.powi(-1000);
        e += 1000;
    }
    (v * 2f64.powi(e as i32), p)
}

#[cfg(test)]
mod tests {
    //! Every expected answer below is redis-server 7.0.15's to the same
    //! script (EVAL ... 0), byte for byte; the packed bytes are compared
    //! in hex (`H`, as `redis-cli` would print them).
    use super::*;
    use crate::libs::cjson::tests::run;

    /// A state with `cmsgpack` (and `cjson`, for `cjson.null`).
    fn state() -> mlua::Result<Lua> {
        let lua = Lua::new();
        lua.globals().set("cmsgpack", open(&lua)?)?;
        lua.globals().set("cjson", crate::libs::cjson::open(&lua)?)?;
        lua.load("function H(s) return (s:gsub('.', function(c) return string.format('%02x', c:byte()) end)) end")
            .exec()?;
        Ok(lua)
    }

    fn ok(lua: &Lua, cases: &[(&str, &str)]) {
        for (code, want) in cases {
            assert_eq!(run(lua, code), Ok(want.as_bytes().to_vec()), "{code}");
        }
    }

    fn fails(lua: &Lua, cases: &[(&str, &str)]) {
        for (code, want) in cases {
            assert_eq!(run(lua, code), Err(format!("user_script:1: {want}")), "{code}");
        }
    }

    #[test]
    fn packs_numbers_in_the_smallest_form() -> mlua::Result<()> {
        let lua = state()?;
        ok(
            &lua,
            &[
                ("return H(cmsgpack.pack({1,2,'a',{x=1},1.5,-1,300,true}))", "980102a16181a17801ca3fc00000ffcd012cc3"),
                (
                    "return H(cmsgpack.pack(0, 127, 128, 255, 256, 65535, 65536, -1))",
                    "007fcc80ccffcd0100cdffffce00010000ff",
                ),
                ("return H(cmsgpack.pack(-32, -33, -128, -129, -32768, -32769))", "e0d0dfd080d1ff7fd18000d2ffff7fff"),
                (
                    "return H(cmsgpack.pack(4294967295, 4294967296, -2147483648, -2147483649))",
                    "ceffffffffcf0000000100000000d280000000d3ffffffff7fffffff",
                ),
                ("return H(cmsgpack.pack(2^53+1, -2^63))", "cf0020000000000000d38000000000000000"),
                (
                    "return H(cmsgpack.pack(1.5, 0.1, -0.0, 2^63, 2^64))",
                    "ca3fc00000cb3fb999999999999a00ca5f000000ca5f800000",
                ),
                (
                    "return H(cmsgpack.pack(1/0, -1/0, 0/0, -(0/0)))",
                    "ca7f800000caff800000cbfff8000000000000cb7ff8000000000000",
                ),
            ],
        );
        Ok(())
    }

    #[test]
    fn packs_strings_tables_and_the_rest() -> mlua::Result<()> {
        let lua = state()?;
        ok(
            &lua,
            &[
                ("return H(cmsgpack.pack(string.rep('x', 31))):sub(1, 4)", "bf78"),
                ("return H(cmsgpack.pack(string.rep('x', 32))):sub(1, 6)", "d92078"),
                ("return H(cmsgpack.pack(string.rep('x', 256))):sub(1, 8)", "da010078"),
                ("return H(cmsgpack.pack(string.rep('x', 65536))):sub(1, 12)", "db0001000078"),
                ("return H(cmsgpack.pack({}, nil, function() end, cjson.null))", "90c0c0c0"),
                ("return H(cmsgpack.pack({[1]=1,[3]=3}))", "8201010303"),
                (
                    "return H(cmsgpack.pack({[2]=1}, {[1.5]=1}, {[0]=1}, {[true]=false}))",
                    "81020181ca3fc000000181000181c3c2",
                ),
                ("return H(cmsgpack.pack({[1]=1,[2]=2,x=3}))", "8301010202a17803"),
                ("return H(cmsgpack.pack({[2^31]=1}, {[1e100]=1}))", "81ce800000000181cb54b249ad2594c37d01"),
                ("local t = {} for i=1,16 do t[i]=i end return H(cmsgpack.pack(t)):sub(1,8)", "dc001001"),
                ("local t = {} for i=1,16 do t['k'..i]=i end return H(cmsgpack.pack(t)):sub(1,8)", "de0010a3"),
                ("local t = {} for i=1,70000 do t[i]=1 end return H(cmsgpack.pack(t)):sub(1,12)", "dd0001117001"),
            ],
        );
        Ok(())
    }

    #[test]
    fn tables_16_deep_pack_as_nil() -> mlua::Result<()> {
        let lua = state()?;
        let arrays = "91".repeat(16) + "c0";
        let maps = "81a161".repeat(16) + "c0";
        let keys = "81".repeat(16) + "c0" + &"01".repeat(16);
        ok(
            &lua,
            &[
                ("local t = {} local c = t for i=1,20 do c[1] = {} c = c[1] end return H(cmsgpack.pack(t))", &arrays),
                ("local t = {} t[1] = t return H(cmsgpack.pack(t))", &arrays),
                ("local t = {} local c = t for i=1,20 do c.a = {} c = c.a end return H(cmsgpack.pack(t))", &maps),
                (
                    "local t = {} local c = t for i=1,20 do local n = {} c[n] = 1 c = n end return H(cmsgpack.pack(t))",
                    &keys,
                ),
            ],
        );
        Ok(())
    }

    #[test]
    fn unpacks_every_type() -> mlua::Result<()> {
        let lua = state()?;
        ok(
            &lua,
            &[
                ("return cjson.encode({cmsgpack.unpack(cmsgpack.pack({1,2,'a',{x=1},1.5,-1,300,true}))})", r#"[[1,2,"a",{"x":1},1.5,-1,300,true]]"#),
                ("return cjson.encode({cmsgpack.unpack(cmsgpack.pack(1, 'two', 3))})", r#"[1,"two",3]"#),
                ("return select('#', cmsgpack.unpack('')) .. select('#', cmsgpack.unpack(cmsgpack.pack(nil, nil, 1)))", "03"),
                ("return table.concat({cmsgpack.unpack('\\207\\255\\255\\255\\255\\255\\255\\255\\255\\207\\127\\255\\255\\255\\255\\255\\255\\255')}, ' ')", "-1 9.2233720368548e+18"),
                ("return table.concat({cmsgpack.unpack('\\211\\128\\0\\0\\0\\0\\0\\0\\0\\206\\255\\255\\255\\255\\210\\128\\0\\0\\0\\209\\128\\0\\208\\128')}, ' ')", "-9.2233720368548e+18 4294967295 -2147483648 -32768 -128"),
                ("return table.concat({cmsgpack.unpack('\\202\\63\\192\\0\\0\\202\\61\\204\\204\\205\\203\\63\\185\\153\\153\\153\\153\\153\\154\\255\\224')}, ' ')", "1.5 0.10000000149012 0.1 -1 -32"),
                ("return cjson.encode({cmsgpack.unpack('\\217\\3abc\\218\\0\\1d\\220\\0\\2\\1\\2\\222\\0\\1\\1\\2\\195\\194')})", r#"["abc","d",[1,2],[2],true,false]"#),
                ("return cjson.encode({cmsgpack.unpack(12)})", "[49,50]"),
            ],
        );
        Ok(())
    }

    #[test]
    fn unpack_one_and_limit_give_the_next_offset() -> mlua::Result<()> {
        let lua = state()?;
        ok(
            &lua,
            &[
                ("return cjson.encode({cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3))})", "[1,1]"),
                ("return cjson.encode({cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3), 2)})", "[-1,3]"),
                ("return cjson.encode({cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3), 3)})", "[-1]"),
                ("return cjson.encode({cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 2)})", "[2,1,2]"),
                ("return cjson.encode({cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 0)})", "[1,2,3]"),
                ("return cjson.encode({cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 0, 1)})", "[1]"),
                ("return cjson.encode({cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), '2', 1.9)})", "[-1,2,3]"),
            ],
        );
        fails(
            &lua,
            &[
                (
                    "return cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3), 4)",
                    "Start offset 4 greater than input length 3.",
                ),
                (
                    "return cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3), -1)",
                    "Invalid request to unpack with offset of -1 and limit of 3.",
                ),
                (
                    "return cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), -1)",
                    "Invalid request to unpack with offset of 0 and limit of 3.",
                ),
                (
                    "return cmsgpack.unpack_limit('x')",
                    "bad argument #2 to 'unpack_limit' (number expected, got no value)",
                ),
                ("return cmsgpack.unpack_one({})", "bad argument #1 to 'unpack_one' (string expected, got table)"),
            ],
        );
        Ok(())
    }

    #[test]
    fn unpack_refuses_what_lua_cmsgpack_refuses() -> mlua::Result<()> {
        let lua = state()?;
        fails(
            &lua,
            &[
                ("return cmsgpack.unpack('\\193')", "Bad data format in input."),
                ("return cmsgpack.unpack('\\196\\1a')", "Bad data format in input."),
                ("return cmsgpack.unpack('\\212\\1a')", "Bad data format in input."),
                ("return cmsgpack.unpack('\\1\\193')", "Bad data format in input."),
                ("return cmsgpack.unpack('\\205\\1')", "Missing bytes in input."),
                ("return cmsgpack.unpack('\\146\\1')", "Missing bytes in input."),
                ("return cmsgpack.unpack('\\219\\0\\0\\0\\5ab')", "Missing bytes in input."),
                ("return cmsgpack.unpack()", "bad argument #1 to 'unpack' (string expected, got no value)"),
                ("return cmsgpack.pack()", "bad argument #0 to 'pack' (MessagePack pack needs input.)"),
            ],
        );
        // Lua's own words, without a line (the running function is C).
        assert_eq!(run(&lua, "return cmsgpack.unpack('\\129\\192\\1')"), Err("table index is nil".into()));
        Ok(())
    }

    #[test]
    fn lua_stack_bounds_are_lua_cmsgpack_s() -> mlua::Result<()> {
        let lua = state()?;
        ok(
            &lua,
            &[
                ("return select('#', cmsgpack.unpack(string.rep('\\1', 7975))) .. ''", "7975"),
                ("local t = cmsgpack.unpack(string.rep('\\145', 3999) .. '\\1') local n = 0 while type(t) == 'table' do t = t[1] n = n + 1 end return n .. ''", "3999"),
                ("local t = {} for i = 1, 4000 do t[i] = i end return #cmsgpack.pack(unpack(t)) .. ''", "11618"),
            ],
        );
        let too_many = "stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)";
        fails(
            &lua,
            &[
                ("return cmsgpack.unpack(string.rep('\\1', 8000))", too_many),
                ("return cmsgpack.unpack(string.rep('\\129\\1', 4000) .. '\\1')", too_many),
                (
                    "return cmsgpack.unpack(string.rep('\\145', 4000) .. '\\1')",
                    "stack overflow (in function mp_decode_to_lua_array)",
                ),
                (
                    "local t = {} for i = 1, 4001 do t[i] = i end return cmsgpack.pack(unpack(t))",
                    "bad argument #0 to 'pack' (Too many arguments for MessagePack pack.)",
                ),
                (
                    "local t = {} for i = 1, 4000 do t[i] = {} end return cmsgpack.pack(unpack(t))",
                    "stack overflow (in function table_is_an_array)",
                ),
            ],
        );
        Ok(())
    }

    #[test]
    fn the_table_is_lua_cmsgpack_s() -> mlua::Result<()> {
        let lua = state()?;
        ok(
            &lua,
            &[(
                "local t = {} for k, v in pairs(cmsgpack) do t[#t+1] = k end table.sort(t) return table.concat(t, ' ') .. ' ' .. cmsgpack._VERSION",
                "_COPYRIGHT _DESCRIPTION _NAME _VERSION pack unpack unpack_limit unpack_one lua-cmsgpack 0.4.0",
            )],
        );
        Ok(())
    }

    #[test]
    fn strtod_reads_as_glibc_does() {
        let read = |s: &str| strtod(s.as_bytes(), 0);
        assert_eq!(read("0x1.8p1x"), Some((3.0, 7)));
        assert_eq!(read("0x"), Some((0.0, 1)));
        assert_eq!(read("-infinity"), Some((f64::NEG_INFINITY, 9)));
        assert_eq!(read("1e+"), Some((1.0, 1)));
        assert_eq!(read(".e1"), None);
        assert!(read("nan(12)").is_some_and(|(v, end)| v.is_nan() && end == 7));
    }
}
