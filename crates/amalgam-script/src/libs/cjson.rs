//! `cjson`: lua-cjson 2.1.0 as Redis 7.0.15 ships it (deps/lua/src/
//! lua_cjson.c), written over mlua's safe API.
//!
//! ## What follows lua-cjson exactly
//! Every function Redis's table holds (`encode`, `decode`, `new`, the
//! seven configuration functions, `null`, `_NAME`, `_VERSION`), with its
//! defaults (nesting 1000 both ways, `%.14g`, sparse arrays 2/10 and an
//! error, invalid numbers refused on encode and accepted on decode), its
//! texts (errors, "bad argument" with the calling name as Lua's debug
//! information has it, `T_*` token names, "at character N") and its
//! quirks: the array test compares keys as C's `int` does (a key from
//! 2^31 makes an object), `/` is escaped, `\u007f` too, bytes from 0x80
//! pass as they are, `json_integer_option` names argument #1 whatever the
//! argument, numbers are read as glibc's `strtod` reads them (hex, `inf`,
//! `nan`, a leading `+` with `decode_invalid_numbers` on), a NUL ends the
//! text. A table's configuration is its own (`cjson.new()`), and a change
//! lasts as long as the state, as in Redis. Errors are raised as
//! `luaL_error` raises them: prefixed with the calling line (`luaL_where`,
//! "user_script:1: "), none when the caller is not Lua (`pcall(f, ...)`).
//!
//! ## What differs
//! Nesting is also bounded by [`DEPTH_MAX`] (1000, Redis's default)
//! whatever `encode_max_depth`/`decode_max_depth` say: lua-cjson goes
//! deeper with a raised setting until Lua's C stack (8000 slots) refuses,
//! and here each open level holds mlua references, of which the whole
//! state has about 8000. Past it the error is lua-cjson's own text. The
//! text `encode` builds is bounded by [`crate::LUA_MEMORY_BYTES_MAX`]
//! ("not enough memory"; lua-cjson's grows until malloc fails).
//! `encode_keep_buffer` is kept and answered and changes nothing. The
//! payload of a `nan(...)` is read and dropped.
//!
//! ## Design
//! Both ways are loops over an explicit stack of the open arrays and
//! objects, not recursion (1000 Rust frames outgrow a 2 MiB thread stack
//! in a debug build). An object is walked with Lua's own `next` (lua-
//! cjson's order). The C-runtime emulations (lauxlib's error helpers, C's
//! casts, glibc's `strtod`) are in cmsgpack.rs, shared by both.

use super::cmsgpack::{arg_error, c_int, check_integer, check_string, number, raise, strtod, type_name};
use mlua::{Function, LightUserData, Lua, LuaString, MultiValue, Table, Value};
use std::cell::RefCell;
use std::rc::Rc;

/// The deepest nesting either way, whatever the settings say (the module
/// doc's "What differs"): lua-cjson's default.
pub const DEPTH_MAX: usize = 1000;
/// The longest text `encode` builds.
const ENCODED_BYTES_MAX: usize = crate::LUA_MEMORY_BYTES_MAX;
/// One library table's settings (`json_config_t`), by these indexes.
type Config = [i32; 9];
const SPARSE_CONVERT: usize = 0;
const SPARSE_RATIO: usize = 1;
const SPARSE_SAFE: usize = 2;
const ENCODE_MAX_DEPTH: usize = 3;
const DECODE_MAX_DEPTH: usize = 4;
/// 0 refuse, 1 allow, 2 as null.
const ENCODE_INVALID_NUMBERS: usize = 5;
const ENCODE_NUMBER_PRECISION: usize = 6;
const ENCODE_KEEP_BUFFER: usize = 7;
const DECODE_INVALID_NUMBERS: usize = 8;
/// lua-cjson's defaults (DEFAULT_* in lua_cjson.c), by the indexes above.
const DEFAULTS: Config = [0, 2, 10, 1000, 1000, 0, 14, 1, 1];
const OFF_ON: &[&str] = &["off", "on"];

/// The library's table (`lua_cjson_new`): each call has its own settings.
pub fn open(lua: &Lua) -> mlua::Result<Table> {
    // Lua's `next`, which walks an object while its members are encoded.
    let next: Function = lua.globals().raw_get("next")?;
    open_with(lua, next)
}

fn open_with(lua: &Lua, next: Function) -> mlua::Result<Table> {
    let cfg = Rc::new(RefCell::new(DEFAULTS));
    let t = lua.create_table()?;
    let (c, walk) = (Rc::clone(&cfg), next.clone());
    t.raw_set("encode", lua.create_function(move |lua, a: MultiValue| encode(lua, &c.borrow(), &walk, &a))?)?;
    let c = Rc::clone(&cfg);
    t.raw_set("decode", lua.create_function(move |lua, a: MultiValue| decode(lua, &c.borrow(), &a))?)?;
    let c = Rc::clone(&cfg);
    let sparse = lua.create_function(move |lua, a: MultiValue| {
        let c = &mut *c.borrow_mut();
        arg_count(lua, &a, 3)?;
        let convert = enum_option(lua, &a, 1, &mut c[SPARSE_CONVERT], OFF_ON)?;
        let ratio = int_option(lua, &a, 2, &mut c[SPARSE_RATIO], 0, i32::MAX)?;
        Ok((convert, ratio, int_option(lua, &a, 3, &mut c[SPARSE_SAFE], 0, i32::MAX)?))
    })?;
    t.raw_set("encode_sparse_array", sparse)?;
    for (name, i, min, max) in [
        ("encode_max_depth", ENCODE_MAX_DEPTH, 1, i32::MAX),
        ("decode_max_depth", DECODE_MAX_DEPTH, 1, i32::MAX),
        ("encode_number_precision", ENCODE_NUMBER_PRECISION, 1, 14),
    ] {
        let c = Rc::clone(&cfg);
        let f = lua.create_function(move |lua, a: MultiValue| {
            arg_count(lua, &a, 1)?;
            int_option(lua, &a, 1, &mut c.borrow_mut()[i], min, max)
        })?;
        t.raw_set(name, f)?;
    }
    for (name, i, options) in [
        ("encode_keep_buffer", ENCODE_KEEP_BUFFER, OFF_ON),
        ("encode_invalid_numbers", ENCODE_INVALID_NUMBERS, &["off", "on", "null"]),
        ("decode_invalid_numbers", DECODE_INVALID_NUMBERS, OFF_ON),
    ] {
        let c = Rc::clone(&cfg);
        let f = lua.create_function(move |lua, a: MultiValue| {
            arg_count(lua, &a, 1)?;
            enum_option(lua, &a, 1, &mut c.borrow_mut()[i], options)
        })?;
        t.raw_set(name, f)?;
    }
    t.raw_set("new", lua.create_function(move |lua, _: MultiValue| open_with(lua, next.clone()))?)?;
    t.raw_set("null", null())?;
    t.raw_set("_NAME", "cjson")?;
    t.raw_set("_VERSION", "2.1.0")?;
    Ok(t)
}

/// `cjson.null`: a NULL light userdata, as lua-cjson's.
fn null() -> Value {
    Value::LightUserData(LightUserData(std::ptr::null_mut()))
}

// ---- configuration ----

/// `json_arg_init`: at most `max` arguments.
fn arg_count(lua: &Lua, args: &MultiValue, max: usize) -> mlua::Result<()> {
    (args.len() <= max).then_some(()).ok_or_else(|| arg_error(lua, max as i32 + 1, "found too many arguments"))
}

/// `json_integer_option`: sets `slot` from argument `i` unless nil, and
/// answers it. The range error names argument #1 whatever `i` (as
/// lua-cjson does).
fn int_option(lua: &Lua, args: &MultiValue, i: usize, slot: &mut i32, min: i32, max: i32) -> mlua::Result<i32> {
    if !matches!(args.get(i - 1), None | Some(Value::Nil)) {
        // Stored in a C int: the low 32 bits.
        let value = check_integer(lua, args, i)? as i32;
        if !(min..=max).contains(&value) {
            return Err(arg_error(lua, 1, &format!("expected integer between {min} and {max}")));
        }
        *slot = value;
    }
    Ok(*slot)
}

/// `json_enum_option` (its `bool_true` is 1 for every caller): a boolean
/// or one of `options`; answers a boolean for 0 and 1, else the name.
fn enum_option(lua: &Lua, args: &MultiValue, i: usize, slot: &mut i32, options: &[&str]) -> mlua::Result<Value> {
    match args.get(i - 1) {
        None | Some(Value::Nil) => {}
        Some(Value::Boolean(b)) => *slot = i32::from(*b),
        Some(_) => {
            let name = check_string(lua, args, i)?;
            let name = name.as_bytes();
            let Some(p) = options.iter().position(|o| o.as_bytes() == &name[..]) else {
                let text = format!("invalid option '{}'", String::from_utf8_lossy(&name));
                return Err(arg_error(lua, i as i32, &text));
            };
            *slot = p as i32;
        }
    }
    Ok(match *slot {
        0 | 1 => Value::Boolean(*slot == 1),
        s => Value::String(lua.create_string(options[s as usize])?),
    })
}

// ---- encoding ----

fn encode(lua: &Lua, cfg: &Config, next: &Function, args: &MultiValue) -> mlua::Result<LuaString> {
    if args.len() != 1 {
        return Err(arg_error(lua, 1, "expected 1 argument"));
    }
    let mut e = Encoder { lua, cfg: *cfg, next, out: Vec::new() };
    e.document(args[0].clone())?;
    lua.create_string(&e.out)
}

struct Encoder<'a> {
    lua: &'a Lua,
    cfg: Config,
    next: &'a Function,
    out: Vec<u8>,
}

/// A table being written: an array (its length, the next index) or an
/// object (the last key `next` gave, whether a member was written).
enum Writing {
    Array(Table, i64, i64),
    Object(Table, Value, bool),
}

impl Encoder<'_> {
    /// `json_encode_exception`: "Cannot serialise <type>: <reason>".
    fn refuse(&self, v: &Value, reason: &str) -> mlua::Error {
        raise(self.lua, &format!("Cannot serialise {}: {reason}", type_name(v)))
    }

    /// `json_append_data` for the whole value: lua-cjson's recursion as a
    /// loop over the tables being written.
    fn document(&mut self, root: Value) -> mlua::Result<()> {
        let mut open: Vec<Writing> = Vec::new();
        let mut pending = Some(root);
        // Bounded: every turn writes a value or ends a table, and the text
        // is bounded (`ENCODED_BYTES_MAX`).
        loop {
            if self.out.len() > ENCODED_BYTES_MAX {
                return Err(mlua::Error::runtime("not enough memory"));
            }
            match pending.take() {
                Some(Value::Table(t)) => {
                    // json_check_encode_depth (and this crate's bound).
                    let depth = open.len() + 1;
                    if depth > self.cfg[ENCODE_MAX_DEPTH] as usize || depth > DEPTH_MAX {
                        return Err(raise(self.lua, &format!("Cannot serialise, excessive nesting ({depth})")));
                    }
                    let len = self.array_length(&t)?;
                    if len > 0 {
                        self.out.push(b'[');
                        open.push(Writing::Array(t, i64::from(len), 1));
                    } else {
                        self.out.push(b'{');
                        open.push(Writing::Object(t, Value::Nil, false));
                    }
                }
                Some(v) => self.scalar(&v)?,
                None => {}
            }
            let Some(top) = open.last_mut() else { return Ok(()) };
            match top {
                Writing::Array(t, len, i) => {
                    if *i > *len {
                        self.out.push(b']');
                        open.pop();
                        continue;
                    }
                    if *i > 1 {
                        self.out.push(b',');
                    }
                    pending = Some(t.raw_get(*i)?);
                    *i += 1;
                }
                Writing::Object(t, key, written) => {
                    let (k, v): (Value, Value) = self.next.call((t.clone(), key.clone()))?;
                    if k == Value::Nil {
                        self.out.push(b'}');
                        open.pop();
                        continue;
                    }
                    if *written {
                        self.out.push(b',');
                    }
                    *written = true;
                    match &k {
                        Value::Integer(_) | Value::Number(_) => {
                            self.out.push(b'"');
                            self.number(&k)?;
                            self.out.extend_from_slice(b"\":");
                        }
                        Value::String(s) => {
                            self.string(&s.as_bytes());
                            self.out.push(b':');
                        }
                        _ => return Err(self.refuse(&k, "table key must be a number or string")),
                    }
                    *key = k;
                    pending = Some(v);
                }
            }
        }
    }

    /// `json_append_data` for a value that is not a table.
    fn scalar(&mut self, v: &Value) -> mlua::Result<()> {
        match v {
            Value::String(s) => self.string(&s.as_bytes()),
            Value::Integer(_) | Value::Number(_) => self.number(v)?,
            Value::Boolean(b) => self.out.extend_from_slice(if *b { b"true" } else { b"false" }),
            Value::Nil => self.out.extend_from_slice(b"null"),
            Value::LightUserData(p) if p.0.is_null() => self.out.extend_from_slice(b"null"),
            other => return Err(self.refuse(other, "type not supported")),
        }
        Ok(())
    }

    /// `json_append_string`: lua-cjson's escapes (`char2escape`).
    fn string(&mut self, s: &[u8]) {
        self.out.reserve(s.len() + 2);
        self.out.push(b'"');
        for &b in s {
            match b {
                b'"' => self.out.extend_from_slice(b"\\\""),
                b'\\' => self.out.extend_from_slice(b"\\\\"),
                b'/' => self.out.extend_from_slice(b"\\/"),
                b'\x08' => self.out.extend_from_slice(b"\\b"),
                b'\t' => self.out.extend_from_slice(b"\\t"),
                b'\n' => self.out.extend_from_slice(b"\\n"),
                b'\x0c' => self.out.extend_from_slice(b"\\f"),
                b'\r' => self.out.extend_from_slice(b"\\r"),
                0..=0x1f | 0x7f => {
                    const HEX: &[u8; 16] = b"0123456789abcdef";
                    self.out.extend_from_slice(b"\\u00");
                    self.out.push(HEX[usize::from(b >> 4)]);
                    self.out.push(HEX[usize::from(b & 15)]);
                }
                _ => self.out.push(b),
            }
        }
        self.out.push(b'"');
    }

    /// `json_append_number`.
    fn number(&mut self, v: &Value) -> mlua::Result<()> {
        let n = number(v).unwrap_or(0.0);
        match self.cfg[ENCODE_INVALID_NUMBERS] {
            0 if !n.is_finite() => return Err(self.refuse(v, "must not be NaN or Inf")),
            1 if n.is_nan() => {
                self.out.extend_from_slice(b"nan");
                return Ok(());
            }
            2.. if !n.is_finite() => {
                self.out.extend_from_slice(b"null");
                return Ok(());
            }
            _ => {}
        }
        self.out.extend_from_slice(fmt_g(n, self.cfg[ENCODE_NUMBER_PRECISION]).as_bytes());
        Ok(())
    }

    /// `lua_array_length`: the largest key if every key is a whole number
    /// from 1 (compared as C's int), else -1 (an object); an excessively
    /// sparse array is an error or an object.
    fn array_length(&self, t: &Table) -> mlua::Result<i32> {
        let (mut max, mut items) = (0i32, 0i32);
        // Bounded by the table's size.
        for pair in t.pairs::<Value, Value>() {
            let (k, _) = pair?;
            match number(&k) {
                Some(k) if k != 0.0 && k.floor() == k && k >= 1.0 => {
                    if k > f64::from(max) {
                        max = c_int(k);
                    }
                    items = items.wrapping_add(1);
                }
                _ => return Ok(-1),
            }
        }
        let c = &self.cfg;
        if c[SPARSE_RATIO] > 0 && max > items.wrapping_mul(c[SPARSE_RATIO]) && max > c[SPARSE_SAFE] {
            if c[SPARSE_CONVERT] == 0 {
                return Err(raise(self.lua, "Cannot serialise table: excessively sparse array"));
            }
            return Ok(-1);
        }
        Ok(max)
    }
}

/// C's `%.<precision>g` (lua-cjson's `fpconv_g_fmt`).
fn fmt_g(v: f64, precision: i32) -> String {
    if !v.is_finite() || v == 0.0 {
        let s = if v.is_nan() {
            "nan"
        } else if v.is_infinite() {
            "inf"
        } else {
            "0"
        };
        return if v.is_sign_negative() { format!("-{s}") } else { s.to_string() };
    }
    let p = precision.max(1);
    let sci = format!("{:.*e}", (p - 1) as usize, v);
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if exp < -4 || exp >= p {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim_zeros(mant), exp.abs())
    } else {
        trim_zeros(&format!("{:.*}", (p - 1 - exp) as usize, v)).to_string()
    }
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

// ---- decoding ----

/// A token (`json_token_type_t`); errors carry lua-cjson's words.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Tok {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    /// The text is the parser's `tmp`.
    Str,
    Num(f64),
    Bool(bool),
    Null,
    Colon,
    Comma,
    End,
    Error(&'static str),
}

impl Tok {
    /// lua-cjson's name for it in errors.
    fn name(self) -> &'static str {
        match self {
            Tok::Error(e) => e,
            Tok::ObjBegin => "T_OBJ_BEGIN",
            Tok::ObjEnd => "T_OBJ_END",
            Tok::ArrBegin => "T_ARR_BEGIN",
            Tok::ArrEnd => "T_ARR_END",
            Tok::Str => "T_STRING",
            Tok::Num(_) => "T_NUMBER",
            Tok::Bool(_) => "T_BOOLEAN",
            Tok::Null => "T_NULL",
            Tok::Colon => "T_COLON",
            Tok::Comma => "T_COMMA",
            Tok::End => "T_END",
        }
    }
}

struct Parser<'a> {
    lua: &'a Lua,
    cfg: Config,
    data: &'a [u8],
    ptr: usize,
    /// The last string token's bytes.
    tmp: Vec<u8>,
    /// Where the last token began (its error's place).
    index: usize,
}

/// An open array (its next index) or object (the key its value awaits).
enum Open {
    Array(Table, i64),
    Object(Table, Option<LuaString>),
}

fn decode(lua: &Lua, cfg: &Config, args: &MultiValue) -> mlua::Result<Value> {
    if args.len() != 1 {
        return Err(arg_error(lua, 1, "expected 1 argument"));
    }
    let text = check_string(lua, args, 1)?;
    let data = text.as_bytes();
    if data.len() >= 2 && (data[0] == 0 || data[1] == 0) {
        return Err(raise(lua, "JSON parser does not support UTF-16 or UTF-32"));
    }
    let mut p = Parser { lua, cfg: *cfg, data: &data, ptr: 0, tmp: Vec::new(), index: 0 };
    p.document()
}

impl Parser<'_> {
    fn at(&self, i: usize) -> u8 {
        self.data.get(i).copied().unwrap_or(0)
    }

    /// `json_throw_parse_error`.
    fn expected(&self, what: &str, tok: Tok) -> mlua::Error {
        let msg = format!("Expected {what} but found {} at character {}", tok.name(), self.index + 1);
        raise(self.lua, &msg)
    }

    /// `json_next_token`.
    fn next(&mut self) -> Tok {
        // Bounded by the text.
        while matches!(self.at(self.ptr), b' ' | b'\t' | b'\n' | b'\r') {
            self.ptr += 1;
        }
        self.index = self.ptr;
        let ch = self.at(self.ptr);
        let single = match ch {
            b'{' => Some(Tok::ObjBegin),
            b'}' => Some(Tok::ObjEnd),
            b'[' => Some(Tok::ArrBegin),
            b']' => Some(Tok::ArrEnd),
            b',' => Some(Tok::Comma),
            b':' => Some(Tok::Colon),
            0 => return Tok::End,
            b'f' | b'i' | b'I' | b'n' | b'N' | b't' | b'"' | b'+' | b'-' | b'0'..=b'9' => None,
            _ => return Tok::Error("invalid token"),
        };
        if let Some(t) = single {
            self.ptr += 1;
            return t;
        }
        let rest = &self.data[self.ptr.min(self.data.len())..];
        if ch == b'"' {
            return self.string();
        }
        if ch == b'-' || ch.is_ascii_digit() {
            if self.cfg[DECODE_INVALID_NUMBERS] == 0 && self.invalid_number() {
                return Tok::Error("invalid number");
            }
            return self.number();
        }
        for (word, tok, len) in
            [(&b"true"[..], Tok::Bool(true), 4), (b"false", Tok::Bool(false), 5), (b"null", Tok::Null, 4)]
        {
            if rest.starts_with(word) {
                self.ptr += len;
                return tok;
            }
        }
        if self.cfg[DECODE_INVALID_NUMBERS] != 0 && self.invalid_number() {
            return self.number();
        }
        Tok::Error("invalid token")
    }

    /// `json_is_invalid_number`: what strtod reads and JSON does not.
    fn invalid_number(&self) -> bool {
        let mut p = self.ptr;
        match self.at(p) {
            b'+' => return true,
            b'-' => p += 1,
            _ => {}
        }
        let c = self.at(p);
        if c == b'0' {
            let c2 = self.at(p + 1);
            return c2 | 0x20 == b'x' || c2.is_ascii_digit();
        }
        if c <= b'9' {
            return false;
        }
        let word = |w: &[u8]| (0..3).all(|i| self.at(p + i).eq_ignore_ascii_case(&w[i]));
        word(b"inf") || word(b"nan")
    }

    /// `json_next_number_token`.
    fn number(&mut self) -> Tok {
        match strtod(self.data, self.ptr) {
            Some((n, end)) => {
                self.ptr = end;
                Tok::Num(n)
            }
            None => Tok::Error("invalid number"),
        }
    }

    /// `json_next_string_token`: the text into `tmp`.
    fn string(&mut self) -> Tok {
        self.ptr += 1;
        self.tmp.clear();
        // Bounded by the text: every turn moves `ptr` on.
        loop {
            let ch = self.at(self.ptr);
            match ch {
                b'"' => break,
                0 => {
                    self.index = self.ptr;
                    return Tok::Error("unexpected end of string");
                }
                b'\\' => {
                    let esc = match self.at(self.ptr + 1) {
                        b'"' => b'"',
                        b'\\' => b'\\',
                        b'/' => b'/',
                        b'b' => 8,
                        b't' => b'\t',
                        b'n' => b'\n',
                        b'f' => 12,
                        b'r' => b'\r',
                        b'u' => {
                            if self.unicode_escape() {
                                continue;
                            }
                            self.index = self.ptr;
                            return Tok::Error("invalid unicode escape code");
                        }
                        _ => {
                            self.index = self.ptr;
                            return Tok::Error("invalid escape code");
                        }
                    };
                    self.tmp.push(esc);
                    self.ptr += 2;
                }
                _ => {
                    self.tmp.push(ch);
                    self.ptr += 1;
                }
            }
        }
        self.ptr += 1;
        Tok::Str
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        let mut v = 0;
        for i in 0..4 {
            v = v << 4 | char::from(self.at(at + i)).to_digit(16)?;
        }
        Some(v)
    }

    /// `json_append_unicode_escape`: `\uXXXX` (a surrogate pair too) as
    /// UTF-8; false when malformed.
    fn unicode_escape(&mut self) -> bool {
        let Some(mut cp) = self.hex4(self.ptr + 2) else { return false };
        let mut len = 6;
        if cp & 0xF800 == 0xD800 {
            if cp & 0x400 != 0 || self.at(self.ptr + 6) != b'\\' || self.at(self.ptr + 7) != b'u' {
                return false;
            }
            let Some(low) = self.hex4(self.ptr + 8) else { return false };
            if low & 0xFC00 != 0xDC00 {
                return false;
            }
            cp = (((cp & 0x3FF) << 10) | (low & 0x3FF)) + 0x10000;
            len = 12;
        }
        // codepoint_to_utf8: no surrogate is left, and at most 0x10FFFF.
        let Some(c) = char::from_u32(cp) else { return false };
        let mut buf = [0u8; 4];
        self.tmp.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        self.ptr += len;
        true
    }

    /// `json_decode_descend`.
    fn descend(&self, depth: usize) -> mlua::Result<()> {
        if depth > self.cfg[DECODE_MAX_DEPTH] as usize || depth > DEPTH_MAX {
            let msg = format!("Found too many nested data structures ({depth}) at character {}", self.ptr);
            return Err(raise(self.lua, &msg));
        }
        Ok(())
    }

    /// An object's key and colon, then the token its value begins with.
    fn key(&mut self, tok: Tok) -> mlua::Result<(LuaString, Tok)> {
        if tok != Tok::Str {
            return Err(self.expected("object key string", tok));
        }
        let key = self.lua.create_string(&self.tmp)?;
        let colon = self.next();
        if colon != Tok::Colon {
            return Err(self.expected("colon", colon));
        }
        Ok((key, self.next()))
    }

    /// The whole text (`json_decode`): lua-cjson's recursion as a loop
    /// over the open arrays and objects.
    fn document(&mut self) -> mlua::Result<Value> {
        let mut open: Vec<Open> = Vec::new();
        let mut tok = self.next();
        // Bounded by the text: every turn reads at least one token.
        loop {
            // `json_process_value` for `tok`.
            let mut value = match tok {
                Tok::Str => Value::String(self.lua.create_string(&self.tmp)?),
                Tok::Num(n) => Value::Number(n),
                Tok::Bool(b) => Value::Boolean(b),
                Tok::Null => null(),
                Tok::ObjBegin | Tok::ArrBegin => {
                    self.descend(open.len() + 1)?;
                    let t = self.lua.create_table()?;
                    let first = self.next();
                    if tok == Tok::ObjBegin {
                        if first == Tok::ObjEnd {
                            Value::Table(t)
                        } else {
                            let (key, next) = self.key(first)?;
                            open.push(Open::Object(t, Some(key)));
                            tok = next;
                            continue;
                        }
                    } else if first == Tok::ArrEnd {
                        Value::Table(t)
                    } else {
                        open.push(Open::Array(t, 1));
                        tok = first;
                        continue;
                    }
                }
                other => return Err(self.expected("value", other)),
            };
            // The value is whole: into the innermost open table, closing
            // those it ends, up to the next value.
            loop {
                match open.last_mut() {
                    None => {
                        let end = self.next();
                        if end != Tok::End {
                            return Err(self.expected("the end", end));
                        }
                        return Ok(value);
                    }
                    Some(Open::Array(t, i)) => {
                        t.raw_set(*i, value)?;
                        *i += 1;
                        match self.next() {
                            Tok::ArrEnd => {}
                            Tok::Comma => {
                                tok = self.next();
                                break;
                            }
                            other => return Err(self.expected("comma or array end", other)),
                        }
                    }
                    Some(Open::Object(t, key)) => {
                        t.raw_set(key.take(), value)?;
                        match self.next() {
                            Tok::ObjEnd => {}
                            Tok::Comma => {
                                let first = self.next();
                                let (k, next) = self.key(first)?;
                                *key = Some(k);
                                tok = next;
                                break;
                            }
                            other => return Err(self.expected("comma or object end", other)),
                        }
                    }
                }
                value = match open.pop() {
                    Some(Open::Array(t, _) | Open::Object(t, _)) => Value::Table(t),
                    None => Value::Nil,
                };
            }
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    //! Every expected answer below is redis-server 7.0.15's to the same
    //! script (EVAL ... 0), byte for byte.
    use super::*;

    /// A state with `cjson`, as the brief's harness has it.
    fn state() -> mlua::Result<Lua> {
        let lua = Lua::new();
        lua.globals().set("cjson", open(&lua)?)?;
        Ok(lua)
    }

    /// The innermost message (what Redis's reply carries).
    use crate::vm::plain;

    /// Runs `code` under Redis's chunk name: its string result, or the
    /// error's text.
    pub(crate) fn run(lua: &Lua, code: &str) -> Result<Vec<u8>, String> {
        match lua.load(code).set_name("@user_script").eval::<LuaString>() {
            Ok(s) => Ok(s.as_bytes().to_vec()),
            Err(e) => Err(plain(&e)),
        }
    }

    fn ok(lua: &Lua, cases: &[(&str, &[u8])]) {
        for (code, want) in cases {
            assert_eq!(run(lua, code), Ok(want.to_vec()), "{code}");
        }
    }

    fn fails(lua: &Lua, cases: &[(&str, &str)]) {
        for (code, want) in cases {
            assert_eq!(run(lua, code), Err(format!("user_script:1: {want}")), "{code}");
        }
    }

    #[test]
    fn encodes_tables_as_lua_cjson_does() -> mlua::Result<()> {
        let lua = state()?;
        ok(
            &lua,
            &[
                ("return cjson.encode({1,2,{a=1}})", br#"[1,2,{"a":1}]"#),
                ("return cjson.encode({})", b"{}"),
                ("return cjson.encode({[1]=1,[3]=3})", b"[1,null,3]"),
                ("return cjson.encode({[10]=3})", b"[null,null,null,null,null,null,null,null,null,3]"),
                ("return cjson.encode({[0]=3})", br#"{"0":3}"#),
                ("return cjson.encode({n=1, [1]='x'})", br#"{"1":"x","n":1}"#),
                ("return cjson.encode({[2^31]=1})", br#"{"2147483648":1}"#),
                ("return cjson.encode({[-0.0]=1, })", br#"{"-0":1}"#),
                ("return cjson.encode({cjson.null, 1, nil, false})", b"[null,1,null,false]"),
                ("return cjson.encode({a={b={c={}}}})", br#"{"a":{"b":{"c":{}}}}"#),
                ("return cjson.encode(nil)", b"null"),
                ("return cjson.encode(cjson.null)", b"null"),
            ],
        );
        Ok(())
    }

    #[test]
    fn encodes_strings_and_numbers() -> mlua::Result<()> {
        let lua = state()?;
        ok(
            &lua,
            &[
                (
                    r#"return cjson.encode("a/b\"c\\d\1\8\9\10\11\12\13\31\127\128\255 ~")"#,
                    b"\"a\\/b\\\"c\\\\d\\u0001\\b\\t\\n\\u000b\\f\\r\\u001f\\u007f\x80\xff ~\"",
                ),
                (
                    "return cjson.encode({0.1, 1/3, 100000000000000, 1e14-1, -0.0, 1e-5})",
                    b"[0.1,0.33333333333333,1e+14,99999999999999,-0,1e-05]",
                ),
                (
                    "return cjson.encode({5e-324, 123456789012345678, 12345.678901234567, 0.1+0.2})",
                    b"[4.9406564584125e-324,1.2345678901235e+17,12345.678901235,0.3]",
                ),
            ],
        );
        Ok(())
    }

    #[test]
    fn refuses_what_lua_cjson_refuses() -> mlua::Result<()> {
        let lua = state()?;
        fails(
            &lua,
            &[
                ("return cjson.encode({[1]=1,[20]=3})", "Cannot serialise table: excessively sparse array"),
                ("return cjson.encode({[true]=3})", "Cannot serialise boolean: table key must be a number or string"),
                ("return cjson.encode({f=function() end})", "Cannot serialise function: type not supported"),
                (
                    "return cjson.encode(coroutine.create(function() end))",
                    "Cannot serialise thread: type not supported",
                ),
                ("return cjson.encode(1/0)", "Cannot serialise number: must not be NaN or Inf"),
                ("return cjson.encode()", "bad argument #1 to 'encode' (expected 1 argument)"),
                ("local e = cjson.encode return e(1, 2)", "bad argument #1 to 'e' (expected 1 argument)"),
                ("local t = {e = cjson.decode} return t:e()", "calling 'e' on bad self (string expected, got table)"),
            ],
        );
        // Called by pcall (no Lua caller): no line, and no name.
        let (_, e): (bool, Value) = lua.load("return pcall(cjson.encode)").eval()?;
        let Value::Error(e) = e else { panic!("{e:?}") };
        assert_eq!(plain(&e), "bad argument #1 to '?' (expected 1 argument)");
        Ok(())
    }

    #[test]
    fn nesting_is_bounded_at_1000() -> mlua::Result<()> {
        let lua = state()?;
        ok(
            &lua,
            &[
                ("local t = {} local c = t for i=1,999 do c.a = {} c = c.a end return #cjson.encode(t)..''", b"5996"),
                ("return #cjson.encode(cjson.decode(string.rep('[', 1000) .. string.rep(']', 1000)))..''", b"2000"),
            ],
        );
        fails(
            &lua,
            &[
                ("local t = {} t[1] = t return cjson.encode(t)", "Cannot serialise, excessive nesting (1001)"),
                ("local t = {} t.a = t return cjson.encode(t)", "Cannot serialise, excessive nesting (1001)"),
                (
                    "return cjson.decode(string.rep('[', 1001) .. string.rep(']', 1001))",
                    "Found too many nested data structures (1001) at character 1001",
                ),
                (
                    "return cjson.decode(string.rep('  [', 1001) .. string.rep(']', 1001))",
                    "Found too many nested data structures (1001) at character 3003",
                ),
                (
                    "return cjson.decode(string.rep('{\"a\":', 1001))",
                    "Found too many nested data structures (1001) at character 5001",
                ),
            ],
        );
        Ok(())
    }

    #[test]
    fn decode_errors_name_the_token_and_place() -> mlua::Result<()> {
        let lua = state()?;
        fails(
            &lua,
            &[
                ("return cjson.decode('x')", "Expected value but found invalid token at character 1"),
                ("return cjson.decode('')", "Expected value but found T_END at character 1"),
                ("return cjson.decode('[1,2')", "Expected comma or array end but found T_END at character 5"),
                ("return cjson.decode('[1,2,]')", "Expected value but found T_ARR_END at character 6"),
                (r#"return cjson.decode('{"a":1,}')"#, "Expected object key string but found T_OBJ_END at character 8"),
                (r#"return cjson.decode('{"a" 1}')"#, "Expected colon but found T_NUMBER at character 6"),
                ("return cjson.decode('[1] x')", "Expected the end but found invalid token at character 5"),
                (r#"return cjson.decode('"abc')"#, "Expected value but found unexpected end of string at character 5"),
                (r#"return cjson.decode('"a\\qb"')"#, "Expected value but found invalid escape code at character 3"),
                (
                    r#"return cjson.decode('"\\ud800"')"#,
                    "Expected value but found invalid unicode escape code at character 2",
                ),
                ("return cjson.decode('-')", "Expected value but found invalid number at character 1"),
                ("return cjson.decode('1e')", "Expected the end but found invalid token at character 2"),
                ("return cjson.decode('1\\0')", "JSON parser does not support UTF-16 or UTF-32"),
                ("return cjson.decode({})", "bad argument #1 to 'decode' (string expected, got table)"),
            ],
        );
        Ok(())
    }

    #[test]
    fn decodes_values_escapes_and_numbers() -> mlua::Result<()> {
        let lua = state()?;
        ok(
            &lua,
            &[
                (r#"return cjson.decode('"\\ud83d\\ude00"')"#, b"\xf0\x9f\x98\x80"),
                (r#"return cjson.decode('"\\u00e9\\u0041\\u20ac\\/\\b\\f\\n\\r\\t\\"\\\\"')"#, b"\xc3\xa9A\xe2\x82\xac/\x08\x0c\n\r\t\"\\"),
                (r#"return cjson.decode('"\\u0000x"')"#, b"\0x"),
                (r#"return cjson.decode('{"a":[1,{"b":"c"}]}').a[2].b"#, b"c"),
                (r#"return tostring(cjson.decode('{"a":1,"a":2}').a)"#, b"2"),
                ("local t = cjson.decode('[1,null,3]') return tostring(t[2] == cjson.null and #t == 3)", b"true"),
                ("return cjson.encode(cjson.decode('[true,false,null,{},[]]'))", b"[true,false,null,{},{}]"),
                ("return table.concat({cjson.decode('0x10'), cjson.decode('010'), cjson.decode('+1'), cjson.decode('1.5E2')}, ' ')", b"16 10 1 150"),
                ("return table.concat({tostring(cjson.decode('1e400')), tostring(cjson.decode('-Infinity')), tostring(cjson.decode('-nan'))}, ' ')", b"inf -inf -nan"),
                (r#"return cjson.decode('"a"\0garbage')"#, b"a"),
                ("return tostring(cjson.decode(12))", b"12"),
            ],
        );
        Ok(())
    }

    #[test]
    fn settings_are_lua_cjson_s() -> mlua::Result<()> {
        let lua = state()?;
        ok(
            &lua,
            &[
                ("return table.concat({cjson.encode_max_depth(), cjson.decode_max_depth(), cjson.encode_number_precision(), tostring(cjson.encode_keep_buffer()), tostring(cjson.encode_invalid_numbers()), tostring(cjson.decode_invalid_numbers())}, ' ')", b"1000 1000 14 true false true"),
                ("local r = cjson.encode_number_precision(3) local s = cjson.encode(1/3) cjson.encode_number_precision(14) return r .. s", b"30.333"),
                ("local r = cjson.encode_invalid_numbers('null') local s = cjson.encode({1/0, 0/0}) cjson.encode_invalid_numbers(false) return r .. s", b"null[null,null]"),
                ("cjson.encode_invalid_numbers(true) local s = cjson.encode({1/0, -1/0, 0/0}) cjson.encode_invalid_numbers(false) return s", b"[inf,-inf,nan]"),
                ("cjson.encode_sparse_array(true) local s = cjson.encode({[1]=1,[20]=3}) cjson.encode_sparse_array(false) return s", br#"{"1":1,"20":3}"#),
                ("local a, b, c = cjson.encode_sparse_array(false, 2, 30) local s = cjson.encode({[1]=1,[12]=3}) cjson.encode_sparse_array(false, 2, 10) return b..c..s", b"230[1,null,null,null,null,null,null,null,null,null,null,3]"),
                ("return cjson.encode_number_precision('5') .. cjson.encode_number_precision(5.7) .. cjson.encode_number_precision(14)", b"5514"),
                ("local c = cjson.new() c.encode_max_depth(2) return cjson.encode_max_depth() .. ' ' .. c.encode_max_depth()", b"1000 2"),
                ("local t = {} for k, v in pairs(cjson) do t[#t+1] = k end table.sort(t) return table.concat(t, ' ') .. ' ' .. cjson._VERSION", b"_NAME _VERSION decode decode_invalid_numbers decode_max_depth encode encode_invalid_numbers encode_keep_buffer encode_max_depth encode_number_precision encode_sparse_array new null 2.1.0"),
            ],
        );
        fails(
            &lua,
            &[
                (
                    "return cjson.encode_number_precision(15)",
                    "bad argument #1 to 'encode_number_precision' (expected integer between 1 and 14)",
                ),
                (
                    "return cjson.encode_number_precision('x')",
                    "bad argument #1 to 'encode_number_precision' (number expected, got string)",
                ),
                (
                    "return cjson.encode_max_depth(0)",
                    "bad argument #1 to 'encode_max_depth' (expected integer between 1 and 2147483647)",
                ),
                (
                    "return cjson.encode_invalid_numbers('bogus')",
                    "bad argument #1 to 'encode_invalid_numbers' (invalid option 'bogus')",
                ),
                (
                    "return cjson.encode_sparse_array(false, 2, -1)",
                    "bad argument #1 to 'encode_sparse_array' (expected integer between 0 and 2147483647)",
                ),
                (
                    "return cjson.encode_sparse_array(false, 2, 10, 4)",
                    "bad argument #4 to 'encode_sparse_array' (found too many arguments)",
                ),
                (
                    "local c = cjson.new() c.decode_invalid_numbers(false) return c.decode('0x10')",
                    "Expected value but found invalid number at character 1",
                ),
                (
                    "local c = cjson.new() c.decode_max_depth(2) return c.decode('[[[1]]]')",
                    "Found too many nested data structures (3) at character 3",
                ),
            ],
        );
        Ok(())
    }

    #[test]
    fn g_format_rounds_as_c_does() {
        let got = [(0.125, 2), (2.5, 1), (1e23, 14), (-1.5e-7, 14), (-0.0, 14)].map(|(v, p)| fmt_g(v, p));
        assert_eq!(got, ["0.12", "2", "1e+23", "-1.5e-07", "-0"]);
    }
}
