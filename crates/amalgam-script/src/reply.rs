//! Replies both ways, by Redis 7.0's rules (`script_lua.c`'s
//! `redisProtocolToLuaType` and `luaReplyToRedisReply`, checked against
//! redis-server 7.0.15).
//!
//! A command's reply to the script ([`to_lua`]), under the script's
//! protocol (`redis.setresp`):
//!
//! | RESP | Lua |
//! |---|---|
//! | `:n` | number |
//! | `$…` | string |
//! | `$-1`, `*-1` (RESP2 nulls) | `false` |
//! | `*n` | array table |
//! | `+s` | `{ok = s}` |
//! | `-s` | `{err = s}` (and `redis.call` raises it) |
//! | `_` | `nil` |
//! | `#t` / `#f` | `true` / `false` |
//! | `,d` | `{double = d}` |
//! | `%n` | `{map = {k = v …}}` |
//! | `~n` | `{set = {m = true …}}` |
//! | `(n` | `{big_number = "n"}` |
//! | `=n` | `{verbatim_string = {format = "txt", string = …}}` |
//!
//! The script's value to the client ([`from_lua`]), under the client's
//! protocol: a string is a bulk string; a number an integer (truncated);
//! `nil` and `false` null; `true` `:1` (under RESP3 scripts `#t`); a table
//! with a string `err` an error, with a string `ok` a status, with a
//! number `double` a double, with a string `big_number` a big number,
//! with a table `map` or `set` a map or set, and any other table the array
//! of its elements from 1 up to the first `nil`.

use amalgam_protocol::resp::{push_array, push_bulk, push_error, push_int, push_map, push_null, push_set, Proto};
use mlua::{Lua, Table, Value};

/// How deep either conversion goes (nested arrays and tables); past it
/// the element becomes `ERR reached lua stack limit`, Redis's words when
/// its Lua stack runs out on a deep or cyclic table.
pub const NESTING_MAX: usize = 128;

/// A reply too deep or malformed to convert (the front end's own replies
/// never are).
#[derive(Debug)]
pub struct Malformed;

/// Reads one reply from `buf` at `*at` into a Lua value, under the
/// script's protocol (for RESP2 nulls). Returns whether it was an error
/// reply (the top level only matters: `redis.call` raises it).
pub fn to_lua(lua: &Lua, buf: &[u8], at: &mut usize, depth: usize) -> Result<(Value, bool), Malformed> {
    if depth > NESTING_MAX {
        return Err(Malformed);
    }
    let kind = *buf.get(*at).ok_or(Malformed)?;
    let line = line_at(buf, *at + 1)?;
    *at += 1 + line.len() + 2;
    let lua_err = |_| Malformed;
    let v = match kind {
        b':' => Value::Integer(parse_i64(line)?),
        b'$' => {
            let n = parse_i64(line)?;
            if n < 0 {
                Value::Boolean(false)
            } else {
                let s = bulk(buf, at, n as usize)?;
                Value::String(lua.create_string(s).map_err(lua_err)?)
            }
        }
        b'+' => {
            let t = lua.create_table().map_err(lua_err)?;
            t.raw_set("ok", lua.create_string(line).map_err(lua_err)?).map_err(lua_err)?;
            Value::Table(t)
        }
        b'-' => {
            let t = lua.create_table().map_err(lua_err)?;
            t.raw_set("err", lua.create_string(line).map_err(lua_err)?).map_err(lua_err)?;
            return Ok((Value::Table(t), true));
        }
        b'*' | b'>' => {
            let n = parse_i64(line)?;
            if n < 0 {
                Value::Boolean(false)
            } else {
                let t = lua.create_table_with_capacity(n as usize, 0).map_err(lua_err)?;
                for i in 1..=n {
                    let (v, _) = to_lua(lua, buf, at, depth + 1)?;
                    t.raw_set(i, v).map_err(lua_err)?;
                }
                Value::Table(t)
            }
        }
        b'_' => Value::Nil,
        b'#' => Value::Boolean(line == b"t"),
        b',' => {
            let d = std::str::from_utf8(line).ok().and_then(|s| s.parse::<f64>().ok()).ok_or(Malformed)?;
            wrap(lua, "double", Value::Number(d))?
        }
        b'(' => wrap(lua, "big_number", Value::String(lua.create_string(line).map_err(lua_err)?))?,
        b'%' | b'~' => {
            let n = parse_i64(line)?.max(0);
            let t = lua.create_table().map_err(lua_err)?;
            for _ in 0..n {
                let (k, _) = to_lua(lua, buf, at, depth + 1)?;
                let v = if kind == b'%' { to_lua(lua, buf, at, depth + 1)?.0 } else { Value::Boolean(true) };
                if !k.is_nil() {
                    t.raw_set(k, v).map_err(lua_err)?;
                }
            }
            wrap(lua, if kind == b'%' { "map" } else { "set" }, Value::Table(t))?
        }
        b'=' => {
            let n = parse_i64(line)?.max(0) as usize;
            let s = bulk(buf, at, n)?;
            let (format, text) = if s.len() >= 4 && s[3] == b':' { (&s[..3], &s[4..]) } else { (&b"txt"[..], s) };
            let inner = lua.create_table().map_err(lua_err)?;
            inner.raw_set("format", lua.create_string(format).map_err(lua_err)?).map_err(lua_err)?;
            inner.raw_set("string", lua.create_string(text).map_err(lua_err)?).map_err(lua_err)?;
            wrap(lua, "verbatim_string", Value::Table(inner))?
        }
        b'|' => {
            // An attribute: skipped, the value after it is the reply.
            let n = parse_i64(line)?.max(0);
            for _ in 0..2 * n {
                to_lua(lua, buf, at, depth + 1)?;
            }
            return to_lua(lua, buf, at, depth);
        }
        _ => return Err(Malformed),
    };
    Ok((v, false))
}

fn wrap(lua: &Lua, field: &str, v: Value) -> Result<Value, Malformed> {
    let t = lua.create_table().map_err(|_| Malformed)?;
    t.raw_set(field, v).map_err(|_| Malformed)?;
    Ok(Value::Table(t))
}

fn line_at(buf: &[u8], from: usize) -> Result<&[u8], Malformed> {
    let rest = buf.get(from..).ok_or(Malformed)?;
    let end = rest.windows(2).position(|w| w == b"\r\n").ok_or(Malformed)?;
    Ok(&rest[..end])
}

fn bulk<'b>(buf: &'b [u8], at: &mut usize, n: usize) -> Result<&'b [u8], Malformed> {
    let s = buf.get(*at..*at + n).ok_or(Malformed)?;
    *at += n + 2;
    Ok(s)
}

fn parse_i64(line: &[u8]) -> Result<i64, Malformed> {
    std::str::from_utf8(line).ok().and_then(|s| s.parse().ok()).ok_or(Malformed)
}

/// Writes the script's value `v` as the reply, under the client's
/// protocol `client` and the script's `script` (`redis.setresp`).
pub fn from_lua(v: &Value, client: Proto, script: Proto, out: &mut Vec<u8>, depth: usize) {
    if depth > NESTING_MAX {
        return push_error(out, b"ERR reached lua stack limit");
    }
    match v {
        Value::String(s) => push_bulk(out, &s.as_bytes()),
        Value::Boolean(b) => match (script, client) {
            (Proto::Resp2, _) if *b => push_int(out, 1),
            (Proto::Resp2, _) => push_null(out, client),
            (Proto::Resp3, Proto::Resp3) => out.extend_from_slice(if *b { b"#t\r\n" } else { b"#f\r\n" }),
            (Proto::Resp3, Proto::Resp2) => push_int(out, i64::from(*b)),
        },
        Value::Integer(i) => push_int(out, *i),
        Value::Number(n) => push_int(out, *n as i64),
        Value::Table(t) => table_reply(t, client, script, out, depth),
        _ => push_null(out, client),
    }
}

fn table_reply(t: &Table, client: Proto, script: Proto, out: &mut Vec<u8>, depth: usize) {
    if let Ok(Value::String(e)) = t.raw_get::<Value>("err") {
        return push_error(out, &e.as_bytes());
    }
    if let Ok(Value::String(s)) = t.raw_get::<Value>("ok") {
        return push_line(out, b'+', &s.as_bytes());
    }
    match t.raw_get::<Value>("double") {
        Ok(Value::Number(d)) => return push_double(out, d, client),
        Ok(Value::Integer(i)) => return push_double(out, i as f64, client),
        _ => {}
    }
    if let Ok(Value::String(s)) = t.raw_get::<Value>("big_number") {
        return match client {
            Proto::Resp2 => {
                let text: Vec<u8> =
                    s.as_bytes().iter().map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }).collect();
                push_bulk(out, &text)
            }
            Proto::Resp3 => push_line(out, b'(', &s.as_bytes()),
        };
    }
    if let Ok(Value::Table(m)) = t.raw_get::<Value>("map") {
        let pairs: Vec<(Value, Value)> = m.pairs::<Value, Value>().filter_map(Result::ok).collect();
        push_map(out, pairs.len(), client);
        for (k, v) in &pairs {
            from_lua(k, client, script, out, depth + 1);
            from_lua(v, client, script, out, depth + 1);
        }
        return;
    }
    if let Ok(Value::Table(s)) = t.raw_get::<Value>("set") {
        let members: Vec<Value> = s.pairs::<Value, Value>().filter_map(Result::ok).map(|(k, _)| k).collect();
        push_set(out, members.len(), client);
        for k in &members {
            from_lua(k, client, script, out, depth + 1);
        }
        return;
    }
    // An array: elements 1, 2, … up to the first nil (Redis's loop).
    let mark = out.len();
    let mut n = 0usize;
    let mut body = Vec::new();
    // Bounded: a Lua table's array part is finite (its length fits the
    // allocator's bound, LUA_MEMORY_BYTES_MAX).
    loop {
        match t.raw_get::<Value>(n as i64 + 1) {
            Ok(Value::Nil) | Err(_) => break,
            Ok(v) => from_lua(&v, client, script, &mut body, depth + 1),
        }
        n += 1;
    }
    debug_assert_eq!(out.len(), mark);
    push_array(out, n);
    out.extend_from_slice(&body);
}

/// A one-line reply (`kind` then `text`), CR and LF in `text` turned into
/// spaces as Redis's status and big-number replies have them.
fn push_line(out: &mut Vec<u8>, kind: u8, text: &[u8]) {
    out.push(kind);
    out.extend(text.iter().map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }));
    out.extend_from_slice(b"\r\n");
}

/// Redis's `addReplyDouble`: `,d` under RESP3, a bulk string under RESP2,
/// both `%.17g`.
fn push_double(out: &mut Vec<u8>, d: f64, client: Proto) {
    let text = fmt_g17(d);
    match client {
        Proto::Resp2 => push_bulk(out, text.as_bytes()),
        Proto::Resp3 => push_line(out, b',', text.as_bytes()),
    }
}

/// C's `%.17g` (Redis formats script numbers and doubles so): 17
/// significant digits, trailing zeros dropped, an exponent below 1e-4 and
/// from 1e17.
pub fn fmt_g17(v: f64) -> String {
    /// `%.17g`'s precision.
    const P: i32 = 17;
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    let sci = format!("{:.*e}", (P - 1) as usize, v);
    let (mant, exp) = sci.split_once('e').expect("`{:e}` writes an exponent");
    let exp: i32 = exp.parse().expect("`{:e}`'s exponent is an integer");
    if !(-4..P).contains(&exp) {
        let mant = trim_zeros(mant);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mant}e{sign}{:02}", exp.abs())
    } else {
        trim_zeros(&format!("{:.*}", (P - 1 - exp) as usize, v)).to_string()
    }
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g17_is_c_s() {
        assert_eq!(fmt_g17(3.7), "3.7000000000000002");
        assert_eq!(fmt_g17(3.0), "3");
        assert_eq!(fmt_g17(0.5), "0.5");
        assert_eq!(fmt_g17(3.5), "3.5");
        assert_eq!(fmt_g17(1e20), "1e+20");
        assert_eq!(fmt_g17(-1.5e-7), "-1.4999999999999999e-07");
        assert_eq!(fmt_g17(123456789012345678.0), "1.2345678901234568e+17");
        assert_eq!(fmt_g17(f64::INFINITY), "inf");
    }

    fn round_trip(reply: &[u8], client: Proto, script: Proto) -> (Vec<u8>, bool) {
        let lua = Lua::new();
        let mut at = 0;
        let (v, failed) = to_lua(&lua, reply, &mut at, 0).expect("well-formed");
        assert_eq!(at, reply.len());
        let mut out = Vec::new();
        from_lua(&v, client, script, &mut out, 0);
        (out, failed)
    }

    #[test]
    fn replies_come_back_as_redis_returns_them() {
        let r2 = Proto::Resp2;
        let r3 = Proto::Resp3;
        assert_eq!(round_trip(b":42\r\n", r2, r2), (b":42\r\n".to_vec(), false));
        assert_eq!(round_trip(b"$3\r\nabc\r\n", r2, r2), (b"$3\r\nabc\r\n".to_vec(), false));
        assert_eq!(round_trip(b"+OK\r\n", r2, r2), (b"+OK\r\n".to_vec(), false));
        assert_eq!(round_trip(b"-ERR no\r\n", r2, r2), (b"-ERR no\r\n".to_vec(), true));
        assert_eq!(round_trip(b"$-1\r\n", r2, r2).0, b"$-1\r\n");
        assert_eq!(round_trip(b"$-1\r\n", r3, r2).0, b"_\r\n");
        assert_eq!(round_trip(b"*2\r\n:1\r\n$1\r\nx\r\n", r2, r2).0, b"*2\r\n:1\r\n$1\r\nx\r\n");
        assert_eq!(round_trip(b",3.5\r\n", r3, r3).0, b",3.5\r\n");
        assert_eq!(round_trip(b",3.5\r\n", r2, r3).0, b"$3\r\n3.5\r\n");
        assert_eq!(round_trip(b"%1\r\n$1\r\na\r\n:1\r\n", r3, r3).0, b"%1\r\n$1\r\na\r\n:1\r\n");
        assert_eq!(round_trip(b"%1\r\n$1\r\na\r\n:1\r\n", r2, r3).0, b"*2\r\n$1\r\na\r\n:1\r\n");
        assert_eq!(round_trip(b"~1\r\n$1\r\na\r\n", r3, r3).0, b"~1\r\n$1\r\na\r\n");
        assert_eq!(round_trip(b"#t\r\n", r3, r3).0, b"#t\r\n");
        assert_eq!(round_trip(b"#f\r\n", r2, r3).0, b":0\r\n");
        assert_eq!(round_trip(b"(123\r\n", r3, r3).0, b"(123\r\n");
        assert_eq!(round_trip(b"_\r\n", r3, r3).0, b"_\r\n");
    }

    #[test]
    fn an_array_stops_at_its_first_nil_and_numbers_truncate() {
        let lua = Lua::new();
        let v: Value = lua.load("return {1, 2.9, 'x', nil, 4}").eval().expect("evaluates");
        let mut out = Vec::new();
        from_lua(&v, Proto::Resp2, Proto::Resp2, &mut out, 0);
        assert_eq!(out, b"*3\r\n:1\r\n:2\r\n$1\r\nx\r\n");
    }

    #[test]
    fn a_cyclic_table_is_bounded() {
        let lua = Lua::new();
        let v: Value = lua.load("local t = {} t[1] = t return t").eval().expect("evaluates");
        let mut out = Vec::new();
        from_lua(&v, Proto::Resp2, Proto::Resp2, &mut out, 0);
        assert!(out.ends_with(b"-ERR reached lua stack limit\r\n"));
    }
}
