//! # Lua scripting, as Redis 7.0 runs it
//!
//! EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, SCRIPT, and Redis 7.0's Functions
//! (FUNCTION, FCALL, FCALL_RO: [`functions`]) (issue 34). This crate is
//! the interpreter's side: it knows Lua and RESP's reply shapes, and no
//! store, session or command table. The RESP front end (amalgam-server's
//! `resp/script.rs`) gives it a [`Caller`] that runs one command for the
//! script, and holds the keys while the script runs.
//!
//! ## One Lua state per worker
//! Redis has one Lua state; Amalgam has one per worker thread ([`Vm`],
//! kept by the front end in a thread-local), as Dragonfly has one per
//! thread: a script runs on the worker of the connection that sent it,
//! and no two workers share an interpreter or wait for one. The script
//! cache is shared ([`Scripts`]: the bodies by SHA-1, behind a mutex taken
//! only by SCRIPT LOAD/EXISTS/FLUSH and the first run of a script on a
//! worker); each `Vm` compiles a body the first time it runs it and keeps
//! the function. SCRIPT FLUSH empties the cache and bumps its generation;
//! a `Vm` that sees a new generation drops its functions before the next
//! run (one relaxed load per run).
//!
//! ## The sandbox (Redis 7.0.15's, checked against redis-server)
//! The libraries Redis loads: base (without `print`, `dofile`,
//! `loadfile`, `require`, `module`, `setfenv`, `getfenv`, `newproxy`),
//! `string`, `table`, `math`, `coroutine`, the `redis` table, and the C
//! libraries Redis bundles, written here over mlua's safe API ([`libs`]:
//! `bit`, `cjson`, `cmsgpack`, `struct`, each checked against
//! redis-server 7.0.15 case by case); scripts
//! see the globals Redis 7.0.15 lists and no other. Redis makes the global
//! table and every library table read-only with a flag its patched Lua
//! checks; stock Lua 5.1 has no such flag, so here a script's environment
//! is an empty table whose metatable reads through to the real globals
//! (an absent one: "Script attempted to access nonexistent global
//! variable") and refuses every write ("Attempt to modify a readonly
//! table"), and each library is such a read-through table too. `rawset`
//! and `setmetatable` refuse them as Redis does, `loadstring`/`load`
//! give the chunks they compile the same environment, and the string
//! metatable is hidden, so no script can change what the next one sees.
//! What differs: `pairs()` over `_G` or a library table finds nothing
//! (Redis lists its members).
//!
//! ## Long scripts ([`busy`])
//! A run registers itself; its instruction hook marks it busy past
//! `busy-reply-threshold`, and SCRIPT KILL (or shutdown) makes the hook
//! raise, again at every hook, so `pcall` cannot hold it.
//!
//! ## Errors, as Redis words them
//! A run is `xpcall(script, handler)`. The handler turns what was raised
//! into Redis's error table — a string becomes `{err = "ERR " .. msg}`, a
//! table (what `redis.call` raises for an error reply) keeps its `err` —
//! and notes where: the innermost frame of the script's own chunk
//! (`@user_script`), as Redis's `__redis__err__handler` does with
//! `debug.getinfo`. The reply is then `-<err> script: <sha>, on
//! @user_script:<line>.` ([`vm`]). Compile errors are `ERR Error compiling
//! script (new function): user_script:1: …`.
//!
//! ## Replies, both ways ([`reply`])
//! A command's RESP reply becomes a Lua value under the script's protocol
//! (`redis.setresp`, 2 by default), and the script's return value becomes
//! the client's reply under the client's protocol, by Redis's tables
//! (numbers truncated to integers, `false` as null, `{ok=…}`, `{err=…}`,
//! and under RESP3 `{double=…}`, `{map=…}`, `{set=…}`, `{big_number=…}`).
//!
//! ## Bounds
//! Every Lua state's memory is bounded while a script's own code runs
//! ([`LUA_MEMORY_BYTES_MAX`]): an allocation past it fails with Lua's "not
//! enough memory", which the script sees as an error; the worker and every
//! other client go on. The bound is lifted while the front end's side runs
//! (setting KEYS and ARGV, a called command and the conversion of its
//! reply), whose allocations are bounded by the request and the reply:
//! mlua guards every API call with a `pcall` and a fresh C closure while a
//! limit is set, which cost about 2-3 k instructions per call and made up
//! most of an EVALSHA (callgrind, docs/bench-log/2026-12-07-scripting.md).
//! Nesting in either conversion is bounded ([`reply::NESTING_MAX`]).

pub mod busy;
pub mod cache;
pub mod functions;
pub mod libs;
pub mod reply;
pub mod vm;

pub use amalgam_protocol::resp::Proto;
pub use cache::{sha1_hex, Scripts, Sha};
pub use vm::{Caller, Stop, Target, Vm, Watch};

/// The most memory one worker's Lua state may hold (its allocator is
/// charged and refuses past it): 1 GiB, far above any script Redis's
/// test suite or the libraries in issue 34 run, and bounded.
pub const LUA_MEMORY_BYTES_MAX: usize = 1 << 30;
