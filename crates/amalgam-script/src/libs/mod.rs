//! The C libraries Redis 7.0 loads into every script, written over mlua's
//! safe API: `bit` (LuaBitOp), `cjson` (lua-cjson), `cmsgpack`
//! (lua-cmsgpack) and `struct` (Roberto Ierusalimschy's struct). Each
//! module's `open` returns its library table; the sandbox makes each
//! read-only like the others (vm.rs's prelude). What each must answer is
//! Redis 7.0.15's (each module's tests state it, checked against
//! redis-server).

pub mod bit;
pub mod cjson;
pub mod cmsgpack;
pub mod structlib;

use mlua::{Lua, Table};

/// Every library by the global name scripts know it by.
pub fn open_all(lua: &Lua) -> mlua::Result<Vec<(&'static str, Table)>> {
    Ok(vec![
        ("bit", bit::open(lua)?),
        ("cjson", cjson::open(lua)?),
        ("cmsgpack", cmsgpack::open(lua)?),
        ("struct", structlib::open(lua)?),
    ])
}
