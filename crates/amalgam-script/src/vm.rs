//! One worker's Lua state: the sandbox, the `redis` library, compiling
//! and running a script (lib.rs says why and how).

use crate::busy::{Registry, Running, ERR_KILLED, ERR_SHUTDOWN};
use crate::cache::Sha;
use crate::reply::{fmt_g17, from_lua, to_lua};
use crate::LUA_MEMORY_BYTES_MAX;
use amalgam_protocol::resp::{push_error, Proto};
use mlua::{
    Function, HookTriggers, Lua, LuaOptions, LuaString, MultiValue, RegistryKey, StdLib, Table, Value, VmState,
};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

/// How many Lua instructions run between two looks at whether the run
/// must stop ([`Stop`]): a script that swallows the stop with `pcall`
/// still ends within this many instructions.
pub const HOOK_INSTRUCTIONS: u32 = 10_000;

/// How many stack frames the error handler searches for the script's own
/// line (Lua's C stack bounds a script's depth far below this anyway).
const ERROR_FRAMES_MAX: usize = 256;

/// What a run the front end stopped raises (vm's own; never a reply).
const STOPPED: &str = "script stopped";

/// What the script's errors say they come from (Redis's chunk name).
const CHUNK_NAME: &str = "@user_script";

/// A function library's chunk name (Redis's).
const FUNCTION_CHUNK_NAME: &str = "@user_function";

/// How long FUNCTION LOAD may run a library's code (Redis's
/// `LOAD_TIMEOUT_MS`): it should only register functions.
pub const LOAD_TIMEOUT_MS: u64 = 500;

/// What a run runs: an EVAL script by its name, or a library's function.
#[derive(Debug, Clone, Copy)]
pub enum Target<'t> {
    Script(&'t Sha),
    Function(&'t str),
}

/// The RESP front end's side of a run: it runs the commands a script
/// calls.
pub trait Caller {
    /// Runs `args` (`args[0]` the command's name) for the script, writing
    /// its reply under `proto` (the script's, `redis.setresp`) to `out`;
    /// an error reply is the command's answer, not a failure. `Err` ends
    /// the whole run ([`Stop`]).
    fn call(&mut self, args: &[&[u8]], proto: Proto, out: &mut Vec<u8>) -> Result<(), Stop>;

    /// `redis.acl_check_cmd`: whether the calling user may run `args`;
    /// None for an unknown command.
    fn acl_check(&mut self, args: &[&[u8]]) -> Option<bool>;
}

/// What a run's hook watches (busy.rs): the run as the registry sees it.
#[derive(Debug, Clone)]
pub struct Watch {
    pub run: Arc<Running>,
    pub registry: Arc<Registry>,
}

/// Why a run ended before its script did: the front end decides
/// ([`Caller::call`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// Run the script again from the start (it changed nothing yet).
    Again,
    /// End the run with this error reply (its text, without the `-`).
    Fail(String),
}

/// The Lua source that builds the sandbox and the `redis` library
/// (lib.rs, "The sandbox"). It receives the Rust functions and the
/// version, and returns the run state `S`, the globals `G` scripts read
/// through, and their environment `ENV`.
const PRELUDE: &str = r#"
local S, lib, libs, sha1hex, log, handler, unwrap, version, version_num, flag_names = ...
local error, type, tostring, setmetatable, getmetatable, rawset, setfenv, loadstring, load, select, xpcall, pcall =
      error, type, tostring, setmetatable, getmetatable, rawset, setfenv, loadstring, load, select, xpcall, pcall
local readonly = setmetatable({}, {__mode = 'k'})
local function refuse() error('Attempt to modify a readonly table', 2) end
local function protect(t)
  local p = setmetatable({}, {__index = t, __newindex = refuse, __metatable = false})
  readonly[p] = true
  return p
end
local redis = {}
-- redis.call is the front end's function itself (set for each run): a
-- C function, so `return redis.call(...)` is no tail call and an error
-- it raises still finds the script's line (Vm::run).
local ACL = {}
function redis.pcall(...)
  local ok, r = pcall(redis.call, ...)
  if ok then return r end
  local e, fatal = unwrap(r)
  if fatal then error(e, 0) end
  return e
end
function redis.acl_check_cmd(...)
  return redis.call(ACL, ...)
end
-- setresp, error_reply, status_reply and set_repl are C functions too
-- (Rust: lib_functions), for the same reason.
for name, f in pairs(lib) do redis[name] = f end
redis.sha1hex = sha1hex
redis.log = log
redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING = 0, 1, 2, 3
redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL = 0, 1, 2, 2, 3
function redis.replicate_commands() return true end
function redis.breakpoint() return false end
function redis.debug() end
redis.REDIS_VERSION, redis.REDIS_VERSION_NUM = version, version_num

local G = {}
for _, k in ipairs({'assert', 'collectgarbage', 'error', 'gcinfo', 'getmetatable', 'ipairs', 'next', 'pairs',
                    'pcall', 'rawequal', 'rawget', 'select', 'setmetatable', 'tonumber', 'tostring', 'type',
                    'unpack', 'xpcall', '_VERSION'}) do
  G[k] = _G[k]
end
local ENV = setmetatable({}, {__index = G, __newindex = refuse, __metatable = false})
readonly[ENV] = true
G._G = ENV
-- What redis.call raises reaches a script's pcall or xpcall as Redis's
-- error table.
local pcall0 = pcall
-- A stop (SCRIPT KILL, shutdown, the front end's) is raised on: no pcall
-- holds it.
local function caught(ok, ...)
  if ok then return ok, ... end
  local e, fatal = unwrap((...))
  if fatal then error(e, 0) end
  return ok, e
end
G.pcall = function(...) return caught(pcall0(...)) end
G.xpcall = function(f, h)
  return xpcall(f, function(e)
    local v, fatal = unwrap(e)
    if fatal then return v end
    return h(v)
  end)
end
G.rawset = function(t, k, v)
  if readonly[t] then error('Attempt to modify a readonly table', 2) end
  return rawset(t, k, v)
end
G.loadstring = function(s, name)
  local f, e = loadstring(s, name)
  if f then setfenv(f, ENV) end
  return f, e
end
G.load = function(fn, name)
  local f, e = load(fn, name)
  if f then setfenv(f, ENV) end
  return f, e
end
G.string, G.table, G.math, G.coroutine, G.redis =
  protect(string), protect(table), protect(math), protect(coroutine), protect(redis)
for name, t in pairs(libs) do G[name] = protect(t) end
setmetatable(G, {__index = function(_, k)
  error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
end, __newindex = refuse, __metatable = false})
local smt = getmetatable('')
smt.__index = G.string
smt.__metatable = false
function S.run(f) return xpcall(f, handler) end
function S.run_fn(f, k, a) return xpcall(function() return f(k, a) end, handler) end
-- FUNCTION LOAD: the library's code runs with a `redis` that can only
-- register functions (and log); what it registers is collected here.
local known_flags = {}
for _, f in ipairs(flag_names) do known_flags[f] = true end
local registered
local loadredis = {}
function loadredis.register_function(...)
  local n = select('#', ...)
  local name, cb, flags, desc
  if n == 1 and type((...)) == 'table' then
    for k, v in pairs((...)) do
      if k == 'function_name' then name = v
      elseif k == 'callback' then cb = v
      elseif k == 'flags' then flags = v
      elseif k == 'description' then desc = v
      else error({err = 'ERR unknown argument given to redis.register_function'}, 0) end
    end
  elseif n == 2 then
    name, cb = ...
  else
    error({err = 'ERR wrong number of arguments to redis.register_function'}, 0)
  end
  if type(name) ~= 'string' then error({err = 'ERR function_name argument given to redis.register_function must be a string'}, 0) end
  if type(cb) ~= 'function' then error({err = 'ERR callback argument given to redis.register_function must be a function'}, 0) end
  if name == '' or name:find('[^%w_]') then
    error({err = 'ERR Function names can only contain letters, numbers, or underscores(_) and must be at least one character long'}, 0)
  end
  local fl = {}
  if flags ~= nil then
    if type(flags) ~= 'table' then error({err = 'ERR flags argument to redis.register_function must be a table representing function flags'}, 0) end
    for _, f in ipairs(flags) do
      if not known_flags[f] then error({err = 'ERR unknown flag given'}, 0) end
      fl[#fl + 1] = f
    end
  end
  if desc ~= nil and type(desc) ~= 'string' then error({err = 'ERR description argument given to redis.register_function must be a string'}, 0) end
  for _, r in ipairs(registered) do
    if r.name == name then error({err = 'ERR Function already exists in the library'}, 0) end
  end
  registered[#registered + 1] = {name = name, callback = cb, flags = fl, description = desc}
end
loadredis.log = log
loadredis.LOG_DEBUG, loadredis.LOG_VERBOSE, loadredis.LOG_NOTICE, loadredis.LOG_WARNING = 0, 1, 2, 3
loadredis.REDIS_VERSION, loadredis.REDIS_VERSION_NUM = version, version_num
local loadproxy = setmetatable({}, {__index = function(_, k)
  local v = loadredis[k]
  if v == nil then error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2) end
  return v
end, __newindex = refuse, __metatable = false})
local realredis = G.redis
function S.load(chunk)
  registered = {}
  rawset(G, 'redis', loadproxy)
  local ok, e = xpcall(chunk, handler)
  rawset(G, 'redis', realredis)
  local r = registered
  registered = nil
  if not ok then return false, e end
  return true, r
end
return S, G, ENV, redis, ACL
"#;

/// A worker's Lua state and the scripts it has compiled.
pub struct Vm {
    lua: Lua,
    /// The environment every compiled script runs in.
    env: Table,
    /// The run state: `resp` (redis.setresp), `run` (xpcall with the
    /// handler).
    state: Table,
    /// `acl_check_cmd`'s mark before its arguments to `redis.call`.
    acl: Table,
    /// KEYS and ARGV, refilled for each run, and how many each held.
    keys: (Table, usize),
    argv: (Table, usize),
    /// The names the run sets, made once: "resp", "call".
    k_resp: LuaString,
    k_call: LuaString,
    /// The `redis` library (its `call` is set for each run).
    redis: Table,
    run: Function,
    /// `S.run_fn`: a library function's run (KEYS and ARGV as arguments).
    run_fn: Function,
    /// `S.load`: runs a library's code, collecting its registrations.
    load: Function,
    /// The library functions loaded here, by name, and the libraries'
    /// generation they belong to (`Libraries::generation`).
    fns: HashMap<String, (RegistryKey, bool)>,
    fn_generation: u64,
    /// FUNCTION LOAD's deadline, while a library's code runs.
    load_deadline: Rc<Cell<Option<std::time::Instant>>>,
    /// Compiled scripts by name.
    /// (In Lua's registry: a `Function` handle held here takes a slot of
    /// mlua's reference stack, about a thousand of which exist.)
    funcs: HashMap<Sha, RegistryKey, BuildShaHasher>,
    /// The scripts with a shebang: whether they declared `no-writes`.
    shebang: HashMap<Sha, bool, BuildShaHasher>,
    /// The cache generation the functions belong to (`Scripts::flush`).
    generation: u64,
    /// Set when a run must stop: the instruction hook raises from then on.
    stopping: Rc<Cell<bool>>,
    /// The run the hook watches (busy.rs), if any.
    watched: Rc<RefCell<Option<Watch>>>,
    /// The memory last reported ([`Vm::memory_delta`]).
    reported: usize,
    /// The bound on the state's memory while a script's own code runs
    /// (lib.rs, "Bounds").
    limit: usize,
    /// The calls' reused buffers.
    scratch: RefCell<Scratch>,
}

impl std::fmt::Debug for Vm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vm").field("scripts", &self.funcs.len()).field("generation", &self.generation).finish()
    }
}

fn lua_err(e: mlua::Error) -> String {
    e.to_string()
}

impl Vm {
    /// A fresh state: Redis's libraries, the sandbox, the `redis` table
    /// announcing `version` (`REDIS_VERSION`, e.g. "7.0.0").
    pub fn new(version: &str) -> Result<Vm, String> {
        // Lua 5.1's base library holds `coroutine` too.
        let libs = StdLib::TABLE | StdLib::STRING | StdLib::MATH;
        let lua = Lua::new_with(libs, LuaOptions::default()).map_err(lua_err)?;
        let sha1hex = lua
            .create_function(|lua, s: Value| {
                let bytes = match &s {
                    Value::String(s) => s.as_bytes().to_vec(),
                    Value::Integer(i) => i.to_string().into_bytes(),
                    Value::Number(n) => fmt_g17(*n).into_bytes(),
                    _ => return Err(mlua::Error::runtime("wrong number of arguments")),
                };
                lua.create_string(crate::cache::sha1_hex(&bytes))
            })
            .map_err(lua_err)?;
        let log = lua.create_function(redis_log).map_err(lua_err)?;
        let handler = lua.create_function(error_table).map_err(lua_err)?;
        let unwrap = lua.create_function(unwrap_raised).map_err(lua_err)?;
        let mut num = 0i64;
        for part in version.split('.').take(3) {
            num = num * 256 + part.parse::<i64>().unwrap_or(0);
        }
        let state = lua.create_table().map_err(lua_err)?;
        state.raw_set("resp", 2).map_err(lua_err)?;
        let lib = lib_functions(&lua, &state).map_err(lua_err)?;
        let libs = lua.create_table().map_err(lua_err)?;
        for (name, t) in crate::libs::open_all(&lua).map_err(lua_err)? {
            libs.raw_set(name, t).map_err(lua_err)?;
        }
        let (state, globals, env, redis, acl): (Table, Table, Table, Table, Table) = lua
            .load(PRELUDE)
            .set_name("=amalgam")
            .call((state, lib, libs, sha1hex, log, handler, unwrap, version, num, crate::functions::FLAGS.to_vec()))
            .map_err(lua_err)?;
        let run: Function = state.raw_get("run").map_err(lua_err)?;
        let run_fn: Function = state.raw_get("run_fn").map_err(lua_err)?;
        let load: Function = state.raw_get("load").map_err(lua_err)?;
        let stopping = Rc::new(Cell::new(false));
        let flag = Rc::clone(&stopping);
        let watched: Rc<RefCell<Option<Watch>>> = Rc::new(RefCell::new(None));
        let watch = Rc::clone(&watched);
        let load_deadline: Rc<Cell<Option<std::time::Instant>>> = Rc::new(Cell::new(None));
        let deadline = Rc::clone(&load_deadline);
        lua.set_hook(HookTriggers::new().every_nth_instruction(HOOK_INSTRUCTIONS), move |_, _| {
            if flag.get() {
                return Err(mlua::Error::runtime(STOPPED));
            }
            if deadline.get().is_some_and(|d| std::time::Instant::now() >= d) {
                return Err(raise("FUNCTION LOAD timeout"));
            }
            if let Some(w) = &*watch.borrow() {
                if let Some(why) = w.registry.stop_reason(&w.run) {
                    // Raised again at every hook: pcall cannot hold it.
                    return Err(raise(why));
                }
                w.registry.tick(&w.run);
            }
            Ok(VmState::Continue)
        })
        .map_err(lua_err)?;
        let keys = lua.create_table().map_err(lua_err)?;
        let argv = lua.create_table().map_err(lua_err)?;
        globals.raw_set("KEYS", &keys).map_err(lua_err)?;
        globals.raw_set("ARGV", &argv).map_err(lua_err)?;
        let k_resp = lua.create_string("resp").map_err(lua_err)?;
        let k_call = lua.create_string("call").map_err(lua_err)?;
        Ok(Vm {
            acl,
            keys: (keys, 0),
            argv: (argv, 0),
            k_resp,
            k_call,
            lua,
            env,
            state,
            redis,
            run,
            run_fn,
            load,
            fns: HashMap::new(),
            fn_generation: 0,
            load_deadline,
            funcs: HashMap::default(),
            shebang: HashMap::default(),
            generation: 0,
            stopping,
            watched,
            reported: 0,
            limit: LUA_MEMORY_BYTES_MAX,
            scratch: RefCell::default(),
        })
    }

    /// Drops every compiled function if the cache was flushed since they
    /// were compiled (`Scripts::generation`).
    pub fn sync(&mut self, generation: u64) {
        if generation != self.generation {
            self.funcs.clear();
            self.shebang.clear();
            self.lua.expire_registry_values();
            self.generation = generation;
            let _ = self.lua.gc_collect();
        }
    }

    /// True if the script named `sha` is compiled here.
    pub fn has(&self, sha: &Sha) -> bool {
        self.funcs.contains_key(sha)
    }

    /// A compiled script's shebang: None without one (it may write; EVAL_RO
    /// refuses only its writes), else whether it declared `no-writes`.
    pub fn script_no_writes(&self, sha: &Sha) -> Option<bool> {
        self.shebang.get(sha).copied()
    }

    /// Compiles `body` under `sha`; the error is Redis's reply text.
    pub fn compile(&mut self, sha: &Sha, body: &[u8]) -> Result<(), String> {
        let flags = crate::functions::script_flags(body)?;
        let code = crate::functions::without_shebang(body);
        let f = self.lua.load(&*code).set_name(CHUNK_NAME).set_environment(self.env.clone()).into_function().map_err(
            |e| {
                let m = match e {
                    mlua::Error::SyntaxError { message, .. } => message,
                    e => e.to_string(),
                };
                format!("ERR Error compiling script (new function): {m}")
            },
        )?;
        let key = self.lua.create_registry_value(f).map_err(|e| format!("ERR {e}"))?;
        self.funcs.insert(*sha, key);
        if let Some(flags) = flags {
            self.shebang.insert(*sha, flags.iter().any(|f| f == "no-writes"));
        }
        Ok(())
    }

    /// Drops every loaded library function if the libraries changed
    /// since (`Libraries::generation`).
    pub fn sync_functions(&mut self, generation: u64) {
        if generation != self.fn_generation {
            self.fns.clear();
            self.lua.expire_registry_values();
            self.fn_generation = generation;
        }
    }

    /// Whether library function `name` declared `no-writes`; None if it
    /// is not loaded here.
    pub fn function_no_writes(&self, name: &str) -> Option<bool> {
        self.fns.get(name).map(|f| f.1)
    }

    /// Runs a library's code (FUNCTION LOAD, or a worker's first call
    /// into it): what it registered, each function loaded here too; the
    /// error is Redis's reply text.
    pub fn load_library(&mut self, code: &[u8]) -> Result<Vec<crate::functions::FunctionInfo>, String> {
        let chunk = self
            .lua
            .load(&*crate::functions::without_shebang(code))
            .set_name(FUNCTION_CHUNK_NAME)
            .set_environment(self.env.clone())
            .into_function()
            .map_err(|e| {
                let m = match e {
                    mlua::Error::SyntaxError { message, .. } => message,
                    e => e.to_string(),
                };
                format!("ERR Error compiling function: {m}")
            })?;
        self.load_deadline.set(Some(std::time::Instant::now() + std::time::Duration::from_millis(LOAD_TIMEOUT_MS)));
        self.lua.set_memory_limit(self.limit).map_err(lua_err)?;
        let r = self.load.call::<(bool, Value)>(chunk);
        let _ = self.lua.set_memory_limit(0);
        self.load_deadline.set(None);
        let (ok, v) = r.map_err(|e| format!("ERR Error registering functions: {e}"))?;
        let Value::Table(t) = v else { return Err("ERR Error registering functions".into()) };
        if !ok {
            let e = match t.raw_get::<Value>("err") {
                Ok(Value::String(s)) => s.to_string_lossy(),
                _ => "ERR unknown error".into(),
            };
            return Err(format!("ERR Error registering functions: {e}"));
        }
        let mut infos = Vec::new();
        let mut loaded = Vec::new();
        for entry in t.sequence_values::<Table>() {
            let entry = entry.map_err(lua_err)?;
            let name: String = entry.raw_get("name").map_err(lua_err)?;
            let callback: Function = entry.raw_get("callback").map_err(lua_err)?;
            let flags: Vec<String> = entry.raw_get("flags").map_err(lua_err)?;
            let description: Option<String> = entry.raw_get("description").map_err(lua_err)?;
            let no_writes = flags.iter().any(|f| f == "no-writes");
            infos.push(crate::functions::FunctionInfo { name: name.clone(), description, flags });
            loaded.push((name, (callback, no_writes)));
        }
        if infos.is_empty() {
            return Err("ERR No functions registered".into());
        }
        for (name, (f, no_writes)) in loaded {
            let key = self.lua.create_registry_value(f).map_err(lua_err)?;
            self.fns.insert(name, (key, no_writes));
        }
        Ok(infos)
    }

    /// Lowers (or raises) the bound on this state's memory
    /// ([`LUA_MEMORY_BYTES_MAX`] at start).
    pub fn set_memory_limit(&mut self, bytes: usize) {
        self.limit = bytes;
    }

    /// How much this state's memory changed since the last call (what
    /// the front end adds to `Scripts::note_lua_bytes`).
    pub fn memory_delta(&mut self) -> i64 {
        let now = self.lua.used_memory();
        let d = now as i64 - self.reported as i64;
        self.reported = now;
        d
    }

    /// The bytes this state holds (INFO's `used_memory_lua`).
    pub fn used_memory(&self) -> usize {
        self.lua.used_memory()
    }

    /// Runs the compiled script `sha` with `keys` and `argv` and writes
    /// its reply, under the client's protocol `client`, to `out`.
    /// `Err(Stop::Again)`: nothing was written, run it again;
    /// `Err(Stop::Fail)` is written by the caller.
    // The run's inputs are the script's (name, KEYS, ARGV), the client's
    // protocol, the front end's caller and watch, and the reply.
    #[allow(clippy::too_many_arguments)]
    pub fn run(
        &mut self,
        target: Target<'_>,
        keys: &[&[u8]],
        argv: &[&[u8]],
        client: Proto,
        caller: &mut dyn Caller,
        watch: Option<Watch>,
        out: &mut Vec<u8>,
    ) -> Result<(), Stop> {
        let fail = |e: mlua::Error| Stop::Fail(format!("ERR {e}"));
        let killed = watch.as_ref().map(|w| Arc::clone(&w.run));
        *self.watched.borrow_mut() = watch;
        let (f, name, is_fn) = match target {
            Target::Script(sha) => (
                self.funcs
                    .get(sha)
                    .and_then(|k| self.lua.registry_value::<Function>(k).ok())
                    .ok_or_else(|| Stop::Fail("NOSCRIPT No matching script.".into()))?,
                text(sha).to_string(),
                false,
            ),
            Target::Function(n) => (
                self.fns
                    .get(n)
                    .and_then(|f| self.lua.registry_value::<Function>(&f.0).ok())
                    .ok_or_else(|| Stop::Fail("ERR Function not found".into()))?,
                n.to_string(),
                true,
            ),
        };
        let name = name.as_str();
        let lua = &self.lua;
        self.keys.1 = refill(lua, &self.keys, keys).map_err(fail)?;
        self.argv.1 = refill(lua, &self.argv, argv).map_err(fail)?;
        self.state.raw_set(&self.k_resp, 2).map_err(fail)?;
        self.stopping.set(false);
        let stop: RefCell<Option<Stop>> = RefCell::new(None);
        let caller = RefCell::new(caller);
        let limit = self.limit;
        let k_resp = &self.k_resp;
        let scratch = &self.scratch;
        let one = Invoke {
            caller: &caller,
            stop: &stop,
            stopping: &self.stopping,
            state: &self.state,
            k_resp,
            scratch,
            limit,
        };
        let (redis, run, acl, k_call) = (&self.redis, &self.run, &self.acl, &self.k_call);
        let (run_fn, keys_t, argv_t) = (&self.run_fn, &self.keys.0, &self.argv.0);
        let result = lua.scope(|scope| {
            // One function for the run: redis.call itself; redis.pcall and
            // acl_check_cmd reach it too (the prelude).
            let call = scope.create_function(|lua, args: MultiValue| {
                let mut it = args.into_iter().peekable();
                let mode = match it.peek() {
                    Some(Value::Table(t)) if t == acl => {
                        it.next();
                        Mode::Acl
                    }
                    _ => Mode::Call,
                };
                let (v, failed) = one.invoke(lua, it, mode)?;
                if !failed {
                    return Ok(v);
                }
                let err = match &v {
                    Value::Table(t) => t.raw_get::<Value>("err").ok(),
                    _ => None,
                };
                let text = match err {
                    Some(Value::String(s)) => s.to_string_lossy(),
                    _ => "ERR unknown error".into(),
                };
                Err(mlua::Error::external(Raised(text)))
            })?;
            redis.raw_set(k_call, call)?;
            lua.set_memory_limit(limit)?;
            // A function gets KEYS and ARGV as its arguments (Redis 7).
            let r =
                if is_fn { run_fn.call::<(bool, Value)>((f, keys_t, argv_t)) } else { run.call::<(bool, Value)>(f) };
            lua.set_memory_limit(0)?;
            let r = r?;
            redis.raw_set(k_call, Value::Nil)?;
            Ok(r)
        });
        *self.watched.borrow_mut() = None;
        // Whatever the script did with the error it was given, a stop
        // decides the outcome.
        if let Some(s) = stop.into_inner() {
            return Err(s);
        }
        let script =
            if self.state.raw_get::<i64>(&self.k_resp).unwrap_or(2) == 3 { Proto::Resp3 } else { Proto::Resp2 };
        match result {
            Ok((false, Value::String(_))) => {
                // Lua's own failure (out of memory): what the script
                // built is garbage now; take it back before the next run.
                let _ = self.lua.gc_collect();
                error_reply(&result.as_ref().expect("matched").1, name, out);
            }
            Ok((true, _)) if killed.is_some_and(|r| r.killed()) => {
                // Killed, and the script swallowed the error and ended
                // before the hook raised it again.
                push_error(out, format!("{ERR_KILLED} script: {name}").as_bytes());
            }
            Ok((true, v)) => from_lua(&v, client, script, out, 0),
            Ok((false, e)) => error_reply(&e, name, out),
            Err(e) => push_error(out, format!("ERR Error running script {name}, {e}").as_bytes()),
        }
        Ok(())
    }
}

/// What `redis.call` raises for an error reply: its text (Redis's error
/// table's `err`); the handler and a script's `pcall` see the table.
#[derive(Debug)]
struct Raised(String);

impl std::fmt::Display for Raised {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Raised {}

/// The `Raised` inside an error mlua carried through Lua, if any.
fn raised(e: &mlua::Error) -> Option<&Raised> {
    match e {
        mlua::Error::ExternalError(a) => a.downcast_ref::<Raised>(),
        mlua::Error::CallbackError { cause, .. } => raised(cause),
        mlua::Error::WithContext { cause, .. } => raised(cause),
        _ => None,
    }
}

/// An error `redis.call` and the library's functions raise: Redis's
/// error table `{err = text}` as the handler and `pcall` see it.
fn raise(text: &str) -> mlua::Error {
    mlua::Error::external(Raised(text.to_string()))
}

/// The `redis` functions that may raise, as C functions (the prelude's
/// note): setresp, error_reply, status_reply, set_repl.
fn lib_functions(lua: &Lua, state: &Table) -> mlua::Result<Table> {
    const WRONG_ARGS: &str = "ERR wrong number or type of arguments";
    let lib = lua.create_table()?;
    let s = state.clone();
    lib.raw_set(
        "setresp",
        lua.create_function(move |_, args: MultiValue| {
            if args.len() != 1 {
                return Err(raise("ERR redis.setresp() requires one argument."));
            }
            match args.front().and_then(Value::as_i64) {
                Some(v @ (2 | 3)) => s.raw_set("resp", v),
                _ => Err(raise("ERR RESP version must be 2 or 3.")),
            }
        })?,
    )?;
    lib.raw_set(
        "error_reply",
        lua.create_function(|lua, e: Value| {
            let t = lua.create_table()?;
            // Redis returns (does not raise) its complaint here.
            let Value::String(e) = e else {
                t.raw_set("err", WRONG_ARGS)?;
                return Ok(t);
            };
            let bytes = e.as_bytes();
            t.raw_set("err", lua.create_string(bytes.strip_prefix(b"-").unwrap_or(&bytes))?)?;
            Ok(t)
        })?,
    )?;
    lib.raw_set(
        "status_reply",
        lua.create_function(|lua, v: Value| {
            let t = lua.create_table()?;
            let Value::String(v) = v else {
                t.raw_set("err", WRONG_ARGS)?;
                return Ok(t);
            };
            t.raw_set("ok", v)?;
            Ok(t)
        })?,
    )?;
    lib.raw_set(
        "set_repl",
        lua.create_function(|_, args: MultiValue| {
            if args.len() != 1 {
                return Err(raise("ERR redis.set_repl() requires two arguments."));
            }
            match args.front().and_then(Value::as_i64) {
                Some(0..=3) => Ok(()),
                _ => Err(raise("ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.")),
            }
        })?,
    )?;
    Ok(lib)
}

/// The message a library function raised (its `RuntimeError`), without
/// mlua's wrapping and traceback: Redis's functions raise bare texts.
pub(crate) fn plain(e: &mlua::Error) -> String {
    match e {
        mlua::Error::RuntimeError(m) => m.clone(),
        mlua::Error::CallbackError { cause, .. } => plain(cause),
        mlua::Error::WithContext { cause, .. } => plain(cause),
        e => e.to_string(),
    }
}

/// A script's pcall/xpcall: what `redis.call` raised, as Redis's table.
/// A library function's error reaches the script as its message (as a C
/// function's `luaL_error` string does); a stop (SCRIPT KILL, shutdown,
/// the front end's) comes back marked fatal, for the wrapper to raise on.
fn unwrap_raised(lua: &Lua, v: Value) -> mlua::Result<(Value, bool)> {
    let Value::Error(e) = &v else { return Ok((v, false)) };
    if let Some(r) = raised(e) {
        let fatal = r.0 == ERR_KILLED || r.0 == ERR_SHUTDOWN;
        if fatal {
            return Ok((v, true));
        }
        let t = lua.create_table()?;
        t.raw_set("err", r.0.as_str())?;
        return Ok((Value::Table(t), false));
    }
    let text = plain(e);
    if text == STOPPED {
        return Ok((v, true));
    }
    Ok((Value::String(lua.create_string(text)?), false))
}

/// Hashes a script's name by its first 16 hex digits: a SHA-1 is already
/// uniform, so SipHash over all 40 bytes (std's default, about 200
/// instructions a lookup, two lookups an EVALSHA) buys nothing here.
#[derive(Debug, Default, Clone, Copy)]
struct BuildShaHasher;

impl std::hash::BuildHasher for BuildShaHasher {
    type Hasher = ShaHasher;
    fn build_hasher(&self) -> ShaHasher {
        ShaHasher(0)
    }
}

#[derive(Debug)]
struct ShaHasher(u64);

impl std::hash::Hasher for ShaHasher {
    fn write(&mut self, bytes: &[u8]) {
        // Bounded: at most 16 of the 40 digits; hex digits fold to 4 bits.
        for &b in bytes.iter().take(16) {
            self.0 = (self.0 << 4) ^ u64::from(b & 0x4f);
        }
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// Buffers a run's calls reuse: the arguments' bytes and ends, the reply.
#[derive(Debug, Default)]
struct Scratch {
    bytes: Vec<u8>,
    ends: Vec<usize>,
    reply: Vec<u8>,
}

/// Which of the front end's services a script asked for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Run a command (redis.call, redis.pcall).
    Call,
    /// redis.acl_check_cmd.
    Acl,
}

/// What a run's functions share: the front end, the stop.
#[derive(Clone, Copy)]
struct Invoke<'r, 'c> {
    caller: &'r RefCell<&'c mut dyn Caller>,
    stop: &'r RefCell<Option<Stop>>,
    stopping: &'r Cell<bool>,
    state: &'r Table,
    k_resp: &'r LuaString,
    scratch: &'r RefCell<Scratch>,
    /// The run's memory bound, lifted while the front end's side runs.
    limit: usize,
}

impl Invoke<'_, '_> {
    /// Runs one command (or checks it, `Mode::Acl`) for the script:
    /// its reply as a Lua value, and whether it was an error.
    fn invoke(self, lua: &Lua, args: impl ExactSizeIterator<Item = Value>, mode: Mode) -> mlua::Result<(Value, bool)> {
        // The front end's side (the command, the reply's conversion) runs
        // with the bound lifted (lib.rs, "Bounds"): what it allocates is
        // bounded by the reply, and mlua's API is then unprotected.
        lua.set_memory_limit(0)?;
        let r = self.invoke_unbounded(lua, args, mode);
        lua.set_memory_limit(self.limit)?;
        r
    }

    fn invoke_unbounded(
        self,
        lua: &Lua,
        args: impl ExactSizeIterator<Item = Value>,
        mode: Mode,
    ) -> mlua::Result<(Value, bool)> {
        if self.stop.borrow().is_some() {
            return Err(mlua::Error::runtime(STOPPED));
        }
        // The arguments side by side in one reused buffer (no allocation
        // per argument once it has grown).
        let mut scratch = self.scratch.borrow_mut();
        let Scratch { bytes, ends, reply } = &mut *scratch;
        bytes.clear();
        ends.clear();
        for v in args {
            match v {
                Value::String(s) => bytes.extend_from_slice(&s.as_bytes()),
                Value::Integer(i) => bytes.extend_from_slice(i.to_string().as_bytes()),
                Value::Number(n) => bytes.extend_from_slice(fmt_g17(n).as_bytes()),
                _ => return err_table(lua, "ERR Lua redis lib command arguments must be strings or integers"),
            }
            ends.push(bytes.len());
        }
        if ends.is_empty() {
            return err_table(lua, "ERR Please specify at least one argument for this redis lib call");
        }
        let mut args: Vec<&[u8]> = Vec::with_capacity(ends.len());
        let mut start = 0;
        for &end in ends.iter() {
            args.push(&bytes[start..end]);
            start = end;
        }
        if mode == Mode::Acl {
            return match self.caller.borrow_mut().acl_check(&args) {
                Some(ok) => Ok((Value::Boolean(ok), false)),
                None => err_table(lua, "ERR Invalid command passed to redis.acl_check_cmd()"),
            };
        }
        let proto = if self.state.raw_get::<i64>(self.k_resp)? == 3 { Proto::Resp3 } else { Proto::Resp2 };
        reply.clear();
        match self.caller.borrow_mut().call(&args, proto, reply) {
            Ok(()) => {
                let mut at = 0;
                to_lua(lua, reply, &mut at, 0).map_err(|_| mlua::Error::runtime("reply too deep to convert"))
            }
            Err(s) => {
                *self.stop.borrow_mut() = Some(s);
                self.stopping.set(true);
                Err(mlua::Error::runtime(STOPPED))
            }
        }
    }
}

fn text(sha: &Sha) -> &str {
    std::str::from_utf8(sha).unwrap_or("")
}

/// Refills the array `t` (holding `t.1` entries) with `items` as strings
/// (KEYS, ARGV); returns how many it holds now.
fn refill(lua: &Lua, t: &(Table, usize), items: &[&[u8]]) -> mlua::Result<usize> {
    for (i, a) in items.iter().enumerate() {
        t.0.raw_set(i + 1, lua.create_string(a)?)?;
    }
    // Bounded: the previous run's count.
    for i in items.len()..t.1 {
        t.0.raw_set(i + 1, Value::Nil)?;
    }
    Ok(items.len())
}

/// `{err = e}`, failed: what `redis.call` raises and `redis.pcall` returns.
fn err_table(lua: &Lua, e: &str) -> mlua::Result<(Value, bool)> {
    let t = lua.create_table()?;
    t.raw_set("err", e)?;
    Ok((Value::Table(t), true))
}

/// The run's error handler (Redis's `__redis__err__handler`): the raised
/// value as Redis's error table, with the script's line.
fn error_table(lua: &Lua, e: Value) -> mlua::Result<Table> {
    let t = match e {
        Value::Table(t) => t,
        other => {
            let t = lua.create_table()?;
            let msg = match &other {
                Value::String(s) => format!("ERR {}", s.to_string_lossy()),
                Value::Error(e) => match raised(e) {
                    Some(r) => r.0.clone(),
                    None => format!("ERR {}", plain(e)),
                },
                v => format!("ERR {v:?}"),
            };
            t.raw_set("err", msg)?;
            t
        }
    };
    for level in 0..ERROR_FRAMES_MAX {
        let Some(found) = lua.inspect_stack(level, |d| {
            let src = d.source().source.map(|s| s.into_owned());
            let ours = src.as_deref().filter(|s| *s == CHUNK_NAME || *s == FUNCTION_CHUNK_NAME).map(str::to_string);
            ours.map(|s| (s, d.current_line()))
        }) else {
            break;
        };
        if let Some((source, line)) = found {
            t.raw_set("source", source)?;
            if let Some(line) = line {
                t.raw_set("line", line)?;
            }
            break;
        }
    }
    Ok(t)
}

/// The reply for a script that ended in error: `-<err> script: <sha>, on
/// @user_script:<line>.` (Redis 7.0's `luaCallFunction`).
fn error_reply(e: &Value, name: &str, out: &mut Vec<u8>) {
    let Value::Table(t) = e else {
        // Lua's own failures (out of memory) come as a string, without
        // the handler.
        let msg = match e {
            Value::String(s) => s.to_string_lossy(),
            _ => "execution failure".into(),
        };
        let msg: String = msg.chars().take(100).collect();
        return push_error(out, format!("ERR Error running script {name}, {msg}").as_bytes());
    };
    let mut msg = match t.raw_get::<Value>("err") {
        Ok(Value::String(s)) => s.as_bytes().to_vec(),
        _ => b"ERR unknown error".to_vec(),
    };
    let source = t.raw_get::<Option<String>>("source").ok().flatten();
    let line = t.raw_get::<Option<i64>>("line").ok().flatten();
    if let (Some(source), Some(line)) = (source, line) {
        msg.extend_from_slice(format!(" script: {name}, on {source}:{line}.").as_bytes());
    }
    push_error(out, &msg);
}

/// `redis.log(level, message …)`: to the server's log at Redis's levels.
fn redis_log(_: &Lua, args: MultiValue) -> mlua::Result<()> {
    let mut it = args.into_iter();
    let (Some(level), Some(_)) = (it.next(), it.clone().next()) else {
        return Err(mlua::Error::runtime("redis.log() requires two arguments or more."));
    };
    let level = match level.as_i64() {
        Some(0) => log::Level::Debug,
        Some(1) => log::Level::Info,
        Some(2) => log::Level::Info,
        Some(3) => log::Level::Warn,
        _ => return Err(mlua::Error::runtime("Invalid debug level.")),
    };
    let mut text = String::new();
    for (i, v) in it.enumerate() {
        if i > 0 {
            text.push(' ');
        }
        match v {
            Value::String(s) => text.push_str(&s.to_string_lossy()),
            Value::Integer(n) => text.push_str(&n.to_string()),
            Value::Number(n) => text.push_str(&fmt_g17(n)),
            _ => {}
        }
    }
    log::log!(level, "script: {text}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::sha1_hex;

    /// Answers every command with its arguments as an array (and GET of
    /// "missing" with a null), counting calls.
    struct Echo(usize);

    impl Caller for Echo {
        fn call(&mut self, args: &[&[u8]], _: Proto, out: &mut Vec<u8>) -> Result<(), Stop> {
            self.0 += 1;
            if args[0] == b"fail" {
                out.extend_from_slice(b"-ERR it failed\r\n");
            } else if args[0] == b"stop" {
                return Err(Stop::Again);
            } else {
                amalgam_protocol::resp::push_array(out, args.len());
                for a in args {
                    amalgam_protocol::resp::push_bulk(out, a);
                }
            }
            Ok(())
        }

        fn acl_check(&mut self, args: &[&[u8]]) -> Option<bool> {
            (args[0] != b"nosuch").then_some(true)
        }
    }

    fn eval(vm: &mut Vm, body: &str, keys: &[&[u8]], argv: &[&[u8]]) -> Result<String, Stop> {
        let sha = sha1_hex(body.as_bytes());
        if let Err(e) = vm.compile(&sha, body.as_bytes()) {
            return Ok(format!("-{e}"));
        }
        let mut out = Vec::new();
        vm.run(Target::Script(&sha), keys, argv, Proto::Resp2, &mut Echo(0), None, &mut out)?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    fn suffix(body: &str) -> String {
        format!(" script: {}, on @user_script:1.\r\n", text(&sha1_hex(body.as_bytes())))
    }

    #[test]
    fn keys_argv_and_calls() {
        let mut vm = Vm::new("7.0.0").expect("a state");
        assert_eq!(
            eval(&mut vm, "return {KEYS[1], ARGV[1], #KEYS}", &[b"k"], &[b"a"]).unwrap(),
            "*3\r\n$1\r\nk\r\n$1\r\na\r\n:1\r\n"
        );
        assert_eq!(
            eval(&mut vm, "return redis.call('x', 1, 2.5)", &[], &[]).unwrap(),
            "*3\r\n$1\r\nx\r\n$1\r\n1\r\n$3\r\n2.5\r\n"
        );
        assert_eq!(eval(&mut vm, "return redis.pcall('fail')", &[], &[]).unwrap(), "-ERR it failed\r\n");
    }

    #[test]
    fn errors_are_worded_as_redis_words_them() {
        let mut vm = Vm::new("7.0.0").expect("a state");
        let b = "return a";
        assert_eq!(
            eval(&mut vm, b, &[], &[]).unwrap(),
            format!("-ERR user_script:1: Script attempted to access nonexistent global variable 'a'{}", suffix(b))
        );
        let b = "a = 1";
        assert_eq!(
            eval(&mut vm, b, &[], &[]).unwrap(),
            format!("-ERR user_script:1: Attempt to modify a readonly table{}", suffix(b))
        );
        let b = "string.x = 1";
        assert_eq!(
            eval(&mut vm, b, &[], &[]).unwrap(),
            format!("-ERR user_script:1: Attempt to modify a readonly table{}", suffix(b))
        );
        let b = "return redis.call('fail')";
        assert_eq!(eval(&mut vm, b, &[], &[]).unwrap(), format!("-ERR it failed{}", suffix(b)));
        let b = "error('boom')";
        assert_eq!(eval(&mut vm, b, &[], &[]).unwrap(), format!("-ERR user_script:1: boom{}", suffix(b)));
        let b = "return redis.call()";
        assert_eq!(
            eval(&mut vm, b, &[], &[]).unwrap(),
            format!("-ERR Please specify at least one argument for this redis lib call{}", suffix(b))
        );
        assert_eq!(
            eval(&mut vm, "x x", &[], &[]).unwrap(),
            "-ERR Error compiling script (new function): user_script:1: '=' expected near 'x'"
        );
        assert_eq!(eval(&mut vm, "return redis.error_reply('-My Error')", &[], &[]).unwrap(), "-My Error\r\n");
        assert_eq!(eval(&mut vm, "return redis.status_reply('FINE')", &[], &[]).unwrap(), "+FINE\r\n");
    }

    #[test]
    fn the_sandbox_holds() {
        let mut vm = Vm::new("7.0.0").expect("a state");
        for b in ["return type(os)", "return type(print)", "return type(dofile)", "return type(setfenv)"] {
            assert!(eval(&mut vm, b, &[], &[]).unwrap().contains("nonexistent global variable"), "{b}");
        }
        assert!(eval(&mut vm, "rawset(_G, 'x', 1)", &[], &[]).unwrap().contains("readonly table"));
        assert!(eval(&mut vm, "rawset(string, 'x', 1)", &[], &[]).unwrap().contains("readonly table"));
        assert!(eval(&mut vm, "setmetatable(_G, nil)", &[], &[]).unwrap().contains("protected metatable"));
        assert!(eval(&mut vm, "loadstring('y = 1')()", &[], &[]).unwrap().contains("readonly table"));
        assert_eq!(eval(&mut vm, "return ('x'):upper()", &[], &[]).unwrap(), "$1\r\nX\r\n");
        assert_eq!(
            eval(&mut vm, "return redis.sha1hex('')", &[], &[]).unwrap(),
            "$40\r\nda39a3ee5e6b4b0d3255bfef95601890afd80709\r\n"
        );
        assert_eq!(eval(&mut vm, "return redis.REDIS_VERSION_NUM", &[], &[]).unwrap(), ":458752\r\n");
    }

    #[test]
    fn a_stop_ends_the_run_even_under_pcall() {
        let mut vm = Vm::new("7.0.0").expect("a state");
        let r = eval(&mut vm, "while true do pcall(redis.call, 'stop') end", &[], &[]);
        assert_eq!(r, Err(Stop::Again));
        // The state is usable afterwards.
        assert_eq!(eval(&mut vm, "return 1", &[], &[]).unwrap(), ":1\r\n");
    }

    #[test]
    fn thousands_of_scripts_stay_compiled() {
        let mut vm = Vm::new("7.0.0").expect("a state");
        for i in 0..20_000 {
            let body = format!("return {i}");
            assert_eq!(eval(&mut vm, &body, &[], &[]).unwrap(), format!(":{i}\r\n"));
        }
        let first = sha1_hex(b"return 0");
        assert!(vm.has(&first));
        let mut out = Vec::new();
        vm.run(Target::Script(&first), &[], &[], Proto::Resp2, &mut Echo(0), None, &mut out).unwrap();
        assert_eq!(out, b":0\r\n");
    }

    #[test]
    fn memory_is_bounded() {
        let mut vm = Vm::new("7.0.0").expect("a state");
        vm.set_memory_limit(vm.used_memory() + (8 << 20));
        let r =
            eval(&mut vm, "local t = {} for i = 1, 1e9 do t[i] = string.rep('x', 1024) .. i end", &[], &[]).unwrap();
        assert!(r.starts_with("-ERR Error running script"), "{r}");
        assert!(r.contains("not enough memory"), "{r}");
        assert_eq!(eval(&mut vm, "return 2", &[], &[]).unwrap(), ":2\r\n");
    }
}
