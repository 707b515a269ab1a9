//! Lua scripting over RESP, black-box: EVAL, EVALSHA, EVAL_RO,
//! EVALSHA_RO and SCRIPT (LOAD, EXISTS, FLUSH, KILL, HELP) with Redis
//! 7.0's semantics — how Lua values become replies (integers, strings,
//! arrays cut at the first nil, booleans, truncated numbers, status and
//! error tables, RESP3 maps, doubles and nulls under `redis.setresp(3)`),
//! KEYS and ARGV and the numkeys errors, `redis.call` and `redis.pcall`
//! and their errors (with and without the `script: <sha1>, on
//! @user_script:1.` suffix), the sandbox (no `os`, `print`, `loadfile`,
//! `dofile`, no new globals), compile errors, the script cache, read-only
//! scripts, the `redis` library's helpers, scripts inside MULTI/EXEC, and
//! the atomicity of scripts run from several clients at once.
//!
//! Every expectation here is Redis 7.0.15's own, byte for byte: CI runs
//! this file against redis-server too (`AMALGAM_TEST_RESP_ADDR`).
//!
//! The tests share one server when it is external, and run in parallel:
//! each uses keys of its own ([`key`]), and only
//! [`script_cache_evalsha_exists_and_flush`] flushes the script cache or
//! relies on a cached script surviving. Other tests learn a script's SHA1
//! from `SCRIPT LOAD` (which answers it whatever the cache holds later).
mod common;
use common::resp::*;
use common::*;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};

/// Sends `EVAL body numkeys keys... args...` and returns the reply.
fn eval(c: &mut Resp, body: &str, keys: &[&str], args: &[&str]) -> String {
    run(c, "EVAL", body, keys, args)
}

/// Sends `cmd body-or-sha numkeys keys... args...` and returns the reply.
fn run(c: &mut Resp, cmd: &str, script: &str, keys: &[&str], args: &[&str]) -> String {
    let numkeys = keys.len().to_string();
    let mut all = vec![cmd, script, &numkeys];
    all.extend_from_slice(keys);
    all.extend_from_slice(args);
    c.call(&all)
}

/// The SHA1 of `body`, as `SCRIPT LOAD` answers it (lower-case hex).
fn sha_of(c: &mut Resp, body: &str) -> String {
    let reply = c.call(&["SCRIPT", "LOAD", body]);
    let (v, _) = parse(&reply);
    let sha = v.bulk().to_string();
    assert!(
        sha.len() == 40 && sha.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
        "SCRIPT LOAD answers a lower-case hex SHA1: {reply:?}"
    );
    sha
}

/// The error reply of a script that failed on line `line`: `msg` with
/// Redis 7's suffix naming the script.
fn script_error(msg: &str, sha: &str, line: u32) -> String {
    format!("-{msg} script: {sha}, on @user_script:{line}.\r\n")
}

/// Asserts that EVAL of `body` (no keys, no args) fails on line 1 with
/// `msg` and the suffix naming the script.
#[track_caller]
fn assert_eval_fails(c: &mut Resp, body: &str, msg: &str) {
    let sha = sha_of(c, body);
    assert_eq!(eval(c, body, &[], &[]), script_error(msg, &sha, 1), "EVAL {body:?}");
}

/// A RESP connection to `addr` (for threads, which do not share the
/// [`common::Server`]).
fn connect(addr: SocketAddr) -> Resp {
    Resp::from_stream(TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}")))
}

#[test]
fn eval_converts_lua_values_to_replies() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    assert_eq!(eval(&mut c, "return 42", &[], &[]), int(42));
    assert_eq!(eval(&mut c, "return -7", &[], &[]), int(-7));
    assert_eq!(eval(&mut c, "return 'hello'", &[], &[]), bulk("hello"));
    assert_eq!(eval(&mut c, "return ''", &[], &[]), bulk(""));
    assert_eq!(eval(&mut c, "return 'a' .. 1", &[], &[]), bulk("a1"));
    assert_eq!(eval(&mut c, "return tostring(3.5)", &[], &[]), bulk("3.5"));
    // Arrays stop at the first nil; nested tables are nested arrays.
    assert_eq!(eval(&mut c, "return {1,2,'three',nil,5}", &[], &[]), "*3\r\n:1\r\n:2\r\n$5\r\nthree\r\n");
    assert_eq!(eval(&mut c, "return {}", &[], &[]), "*0\r\n");
    assert_eq!(
        eval(&mut c, "return {1,{2,'x'},false,4}", &[], &[]),
        "*4\r\n:1\r\n*2\r\n:2\r\n$1\r\nx\r\n$-1\r\n:4\r\n"
    );
    assert_eq!(eval(&mut c, "return {1,2,{ok='x'},{err='y'}}", &[], &[]), "*4\r\n:1\r\n:2\r\n+x\r\n-y\r\n");
    // nil and false are null, true is 1.
    assert_eq!(eval(&mut c, "return nil", &[], &[]), NULL2);
    assert_eq!(eval(&mut c, "return false", &[], &[]), NULL2);
    assert_eq!(eval(&mut c, "return true", &[], &[]), int(1));
    assert_eq!(eval(&mut c, "return {1, false, true}", &[], &[]), "*3\r\n:1\r\n$-1\r\n:1\r\n");
    // Numbers are truncated towards zero.
    assert_eq!(eval(&mut c, "return 3.99", &[], &[]), int(3));
    assert_eq!(eval(&mut c, "return -3.99", &[], &[]), int(-3));
    assert_eq!(eval(&mut c, "return {1.5, 2.7}", &[], &[]), "*2\r\n:1\r\n:2\r\n");
    // Status and error tables.
    assert_eq!(eval(&mut c, "return {ok='FINE'}", &[], &[]), "+FINE\r\n");
    assert_eq!(eval(&mut c, "return {err='BAD thing'}", &[], &[]), error("BAD thing"));
    assert_eq!(eval(&mut c, "return {err='bad thing'}", &[], &[]), error("bad thing"));
    assert_eq!(eval(&mut c, "return redis.status_reply('PONG')", &[], &[]), "+PONG\r\n");
    assert_eq!(eval(&mut c, "return redis.error_reply('My Error')", &[], &[]), error("My Error"));
    assert_eq!(eval(&mut c, "return redis.error_reply('-My Error')", &[], &[]), error("My Error"));
    assert_eq!(eval(&mut c, "return redis.error_reply('MYERR bad thing')", &[], &[]), error("MYERR bad thing"));
    assert_eq!(
        eval(&mut c, "local t = redis.error_reply('My Error'); return t.err", &[], &[]),
        bulk("My Error"),
        "error_reply builds an {{err=...}} table"
    );
    assert_eq!(
        eval(&mut c, "local t = redis.status_reply('S1'); return {type(t), t.ok}", &[], &[]),
        "*2\r\n$5\r\ntable\r\n$2\r\nS1\r\n"
    );
    // {double=...} is a bulk string under RESP2.
    assert_eq!(eval(&mut c, "return {double=3.5}", &[], &[]), bulk("3.5"));
    assert_eq!(eval(&mut c, "return {double=-2}", &[], &[]), bulk("-2"));
    assert_eq!(eval(&mut c, "return {1, {double=2.5}, 'x'}", &[], &[]), "*3\r\n:1\r\n$3\r\n2.5\r\n$1\r\nx\r\n");
}

#[test]
fn eval_keys_argv_and_numkeys_errors() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (k1, k2) = (key("kv-k1"), key("kv-k2"));
    assert_eq!(
        eval(&mut c, "return {KEYS[1],KEYS[2],ARGV[1],ARGV[2]}", &[&k1, &k2], &["a1", "a2"]),
        format!("*4\r\n{}{}$2\r\na1\r\n$2\r\na2\r\n", bulk(&k1), bulk(&k2))
    );
    assert_eq!(eval(&mut c, "return #KEYS + #ARGV * 10", &[&k1], &["a", "b"]), int(21));
    assert_eq!(eval(&mut c, "return #KEYS + #ARGV * 10", &[], &[]), int(0));
    assert_eq!(eval(&mut c, "return ARGV", &[], &["x", "", "z"]), "*3\r\n$1\r\nx\r\n$0\r\n\r\n$1\r\nz\r\n");
    assert_eq!(c.call(&["EVAL", "return 1", "-1"]), error("ERR Number of keys can't be negative"));
    assert_eq!(
        c.call(&["EVAL", "return 1", "2", "a"]),
        error("ERR Number of keys can't be greater than number of args")
    );
    assert_eq!(c.call(&["EVAL", "return 1", "x"]), error("ERR value is not an integer or out of range"));
    assert_eq!(c.call(&["EVAL", "return 1", "1.5"]), error("ERR value is not an integer or out of range"));
    assert_eq!(c.call(&["EVAL", "return 1"]), error("ERR wrong number of arguments for 'eval' command"));
    assert_eq!(c.call(&["EVAL"]), error("ERR wrong number of arguments for 'eval' command"));
    assert_eq!(
        c.call(&["EVALSHA", "0000000000000000000000000000000000000000"]),
        error("ERR wrong number of arguments for 'evalsha' command")
    );
    // numkeys is checked before the script is looked up.
    assert_eq!(
        c.call(&["EVALSHA", "0000000000000000000000000000000000000000", "1"]),
        error("ERR Number of keys can't be greater than number of args")
    );
    assert_eq!(
        c.call(&["EVALSHA", "0000000000000000000000000000000000000000", "x"]),
        error("ERR value is not an integer or out of range")
    );
}

#[test]
fn redis_call_and_pcall_run_commands() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (s, h, n, l, none) = (key("call-s"), key("call-h"), key("call-n"), key("call-l"), key("call-none"));
    assert_eq!(eval(&mut c, "return redis.call('set', KEYS[1], ARGV[1])", &[&s], &["hello"]), OK);
    assert_eq!(eval(&mut c, "return redis.call('get', KEYS[1])", &[&s], &[]), bulk("hello"));
    assert_eq!(c.call(&["GET", &s]), bulk("hello"), "the script's write is visible outside");
    assert_eq!(eval(&mut c, "return redis.pcall('get', KEYS[1])", &[&s], &[]), bulk("hello"));
    assert_eq!(eval(&mut c, "return redis.call('get', KEYS[1])", &[&none], &[]), NULL2);
    assert_eq!(
        eval(&mut c, "local v = redis.call('get', KEYS[1]); return {type(v), tostring(v)}", &[&none], &[]),
        "*2\r\n$7\r\nboolean\r\n$5\r\nfalse\r\n",
        "a null bulk reaches Lua as false"
    );
    // incr: an integer reply is a Lua number.
    assert_eq!(
        eval(&mut c, "local n = redis.call('incr', KEYS[1]); return {type(n), n + 10}", &[&n], &[]),
        "*2\r\n$6\r\nnumber\r\n:11\r\n"
    );
    assert_eq!(eval(&mut c, "return redis.pcall('incr', KEYS[1])", &[&n], &[]), int(2));
    assert_eq!(eval(&mut c, "return redis.call('incrby', KEYS[1], 3)", &[&n], &[]), int(5), "integer arguments");
    assert_eq!(eval(&mut c, "return redis.call('incrby', KEYS[1], '3')", &[&n], &[]), int(8));
    assert_eq!(eval(&mut c, "return redis.call('set', KEYS[1], 7)", &[&n], &[]), OK);
    assert_eq!(c.call(&["GET", &n]), bulk("7"));
    // A status reply is an {ok=...} table, a bulk a string.
    assert_eq!(
        eval(&mut c, "local r = redis.call('set', KEYS[1], '5'); return {type(r), r['ok']}", &[&n], &[]),
        "*2\r\n$5\r\ntable\r\n$2\r\nOK\r\n"
    );
    assert_eq!(
        eval(&mut c, "local v = redis.call('get', KEYS[1]); return {type(v), v .. '!'}", &[&n], &[]),
        "*2\r\n$6\r\nstring\r\n$2\r\n5!\r\n"
    );
    // hset / hgetall: an array reply is a Lua table.
    assert_eq!(
        eval(&mut c, "return redis.call('hset', KEYS[1], 'f1', 'v1', 'f2', 2)", &[&h], &[]),
        int(2),
        "hset counts new fields"
    );
    assert_eq!(
        eval(&mut c, "return redis.call('hgetall', KEYS[1])", &[&h], &[]),
        "*4\r\n$2\r\nf1\r\n$2\r\nv1\r\n$2\r\nf2\r\n$1\r\n2\r\n"
    );
    assert_eq!(
        eval(&mut c, "return redis.pcall('hgetall', KEYS[1])", &[&h], &[]),
        "*4\r\n$2\r\nf1\r\n$2\r\nv1\r\n$2\r\nf2\r\n$1\r\n2\r\n"
    );
    assert_eq!(c.call(&["HGET", &h, "f2"]), bulk("2"));
    assert_eq!(
        eval(
            &mut c,
            "redis.call('rpush', KEYS[1], 'a', 'b', 'c'); local t = redis.call('lrange', KEYS[1], 0, -1); \
             return {type(t), #t, t[2]}",
            &[&l],
            &[]
        ),
        "*3\r\n$5\r\ntable\r\n:3\r\n$1\r\nb\r\n"
    );
    assert_eq!(
        eval(&mut c, "local t = redis.call('mget', KEYS[1], KEYS[2]); return {#t, tostring(t[2])}", &[&l, &none], &[]),
        "*2\r\n:2\r\n$5\r\nfalse\r\n",
        "a null inside an array is false"
    );
    // Commands are case-insensitive; replies pass through.
    assert_eq!(eval(&mut c, "return redis.call('PING')", &[], &[]), "+PONG\r\n");
    assert_eq!(eval(&mut c, "return redis.call('ping')", &[], &[]), "+PONG\r\n");
    assert_eq!(eval(&mut c, "return redis.call('echo', 'x')", &[], &[]), bulk("x"));
}

#[test]
fn redis_call_errors_carry_the_script_suffix_pcall_errors_do_not() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (s, w) = (key("err-s"), key("err-w"));
    assert_eq!(c.call(&["SET", &s, "abc"]), OK);
    assert_eq!(c.call(&["SET", &w, "x"]), OK);
    let body = "return redis.call('incr', KEYS[1])";
    let sha = sha_of(&mut c, body);
    assert_eq!(eval(&mut c, body, &[&s], &[]), script_error("ERR value is not an integer or out of range", &sha, 1));
    assert_eq!(
        eval(&mut c, "return redis.pcall('incr', KEYS[1])", &[&s], &[]),
        error("ERR value is not an integer or out of range")
    );
    assert_eq!(
        eval(&mut c, "local r = redis.pcall('incr', KEYS[1]); return type(r)", &[&s], &[]),
        bulk("table"),
        "pcall returns the error as a table"
    );
    assert_eq!(
        eval(&mut c, "local r = redis.pcall('incr', KEYS[1]); return r['err']", &[&s], &[]),
        bulk("ERR value is not an integer or out of range")
    );
    let body = "return redis.call('lpush', KEYS[1], 'x')";
    let sha = sha_of(&mut c, body);
    assert_eq!(
        eval(&mut c, body, &[&w], &[]),
        script_error("WRONGTYPE Operation against a key holding the wrong kind of value", &sha, 1)
    );
    assert_eq!(
        eval(&mut c, "return redis.pcall('lpush', KEYS[1], 'x')", &[&w], &[]),
        error("WRONGTYPE Operation against a key holding the wrong kind of value")
    );
    // Errors of the redis lib itself.
    for (call, pcall, msg) in [
        (
            "return redis.call('nosuchcmd')",
            "return redis.pcall('nosuchcmd')",
            "Unknown Redis command called from script",
        ),
        (
            "return redis.call('get')",
            "return redis.pcall('get')",
            "Wrong number of args calling Redis command from script",
        ),
        (
            "return redis.call('get', 'a', 'extra')",
            "return redis.pcall('get', 'a', 'extra')",
            "Wrong number of args calling Redis command from script",
        ),
        (
            "return redis.call('subscribe', 'x')",
            "return redis.pcall('subscribe', 'x')",
            "This Redis command is not allowed from script",
        ),
        ("return redis.call('multi')", "return redis.pcall('multi')", "This Redis command is not allowed from script"),
        (
            "return redis.call('eval', 'return 1', '0')",
            "return redis.pcall('eval', 'return 1', '0')",
            "This Redis command is not allowed from script",
        ),
        ("return redis.call()", "return redis.pcall()", "Please specify at least one argument for this redis lib call"),
        (
            "return redis.call('get', {})",
            "return redis.pcall('get', {})",
            "Lua redis lib command arguments must be strings or integers",
        ),
        (
            "return redis.call('set', 'a', true)",
            "return redis.pcall('set', 'a', true)",
            "Lua redis lib command arguments must be strings or integers",
        ),
    ] {
        let msg = format!("ERR {msg}");
        assert_eval_fails(&mut c, call, &msg);
        assert_eq!(eval(&mut c, pcall, &[], &[]), error(&msg), "EVAL {pcall:?}");
    }
}

#[test]
fn lua_errors_sandbox_and_compile_errors() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    assert_eval_fails(&mut c, "error('boom')", "ERR user_script:1: boom");
    assert_eval_fails(&mut c, "local function f() error('deep') end\nf()", "ERR user_script:1: deep");
    assert_eval_fails(&mut c, "error('x', 0)", "ERR x");
    assert_eval_fails(&mut c, "error({err='MYCODE something'})", "MYCODE something");
    assert_eval_fails(
        &mut c,
        "local t = {}; return t.x.y",
        "ERR user_script:1: attempt to index field 'x' (a nil value)",
    );
    // The line the error is on is in both places.
    let body = "\n\nerror('line3')";
    let sha = sha_of(&mut c, body);
    assert_eq!(eval(&mut c, body, &[], &[]), script_error("ERR user_script:3: line3", &sha, 3));
    // Lua's own pcall catches.
    assert_eq!(
        eval(&mut c, "local ok, e = pcall(function() error('x') end); return e", &[], &[]),
        bulk("user_script:1: x")
    );
    // Globals: reading an undefined one and defining one both fail.
    assert_eval_fails(
        &mut c,
        "return a",
        "ERR user_script:1: Script attempted to access nonexistent global variable 'a'",
    );
    assert_eval_fails(&mut c, "a = 5", "ERR user_script:1: Attempt to modify a readonly table");
    // The sandbox: no os, print, loadfile, dofile.
    for (body, name) in [
        ("return os.time()", "os"),
        ("return type(os)", "os"),
        ("print('x')", "print"),
        ("return loadfile('/etc/passwd')", "loadfile"),
        ("return dofile('/etc/passwd')", "dofile"),
    ] {
        let msg = format!("ERR user_script:1: Script attempted to access nonexistent global variable '{name}'");
        assert_eval_fails(&mut c, body, &msg);
    }
    // Compile errors: no suffix, for EVAL and SCRIPT LOAD alike.
    let want = error("ERR Error compiling script (new function): user_script:1: '=' expected near 'x'");
    assert_eq!(eval(&mut c, "x x", &[], &[]), want);
    assert_eq!(c.call(&["SCRIPT", "LOAD", "x x"]), want);
    let want = error("ERR Error compiling script (new function): user_script:1: '=' expected near '<eof>'");
    assert_eq!(eval(&mut c, "x", &[], &[]), want);
    let want = error("ERR Error compiling script (new function): user_script:1: unexpected symbol near '<eof>'");
    assert_eq!(eval(&mut c, "return 1 +", &[], &[]), want);
    assert_eq!(c.call(&["SCRIPT", "LOAD", "return 1 +"]), want);
}

/// Everything that flushes the script cache or needs a cached script to
/// survive is here, in one test, so parallel tests cannot interfere.
#[test]
fn script_cache_evalsha_exists_and_flush() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("cache-k");
    let unknown = "0000000000000000000000000000000000000000";
    let noscript = error("NOSCRIPT No matching script. Please use EVAL.");
    let body = "return {'cached', KEYS[1], ARGV[1]}";
    let want = format!("*3\r\n$6\r\ncached\r\n{}$1\r\nv\r\n", bulk(&k));
    assert_eq!(c.call(&["SCRIPT", "FLUSH"]), OK);
    // SCRIPT LOAD answers the SHA1 of the body, and is idempotent.
    let sha = sha_of(&mut c, body);
    assert_eq!(sha_of(&mut c, body), sha);
    assert_eq!(c.call(&["SCRIPT", "LOAD", ""]), bulk("da39a3ee5e6b4b0d3255bfef95601890afd80709"));
    assert_eq!(run(&mut c, "EVALSHA", &sha, &[&k], &["v"]), want, "EVALSHA after SCRIPT LOAD");
    assert_eq!(run(&mut c, "EVALSHA", &sha.to_uppercase(), &[&k], &["v"]), want, "an upper-case SHA1 works");
    assert_eq!(run(&mut c, "EVALSHA_RO", &sha, &[&k], &["v"]), want);
    assert_eq!(run(&mut c, "EVALSHA", unknown, &[], &[]), noscript);
    assert_eq!(run(&mut c, "EVALSHA", "abc", &[], &[]), noscript);
    assert_eq!(run(&mut c, "EVALSHA_RO", unknown, &[], &[]), noscript);
    // SCRIPT EXISTS, known and unknown mixed (case-insensitive too).
    assert_eq!(c.call(&["SCRIPT", "EXISTS", &sha, unknown, &sha.to_uppercase()]), "*3\r\n:1\r\n:0\r\n:1\r\n");
    assert_eq!(c.call(&["SCRIPT", "EXISTS", unknown]), "*1\r\n:0\r\n");
    assert_eq!(c.call(&["SCRIPT", "EXISTS"]), error("ERR wrong number of arguments for 'script|exists' command"));
    // FLUSH forgets; EVALSHA then answers NOSCRIPT.
    assert_eq!(c.call(&["SCRIPT", "FLUSH"]), OK);
    assert_eq!(c.call(&["SCRIPT", "EXISTS", &sha]), "*1\r\n:0\r\n");
    assert_eq!(run(&mut c, "EVALSHA", &sha, &[&k], &["v"]), noscript);
    // EVAL caches the script it runs.
    assert_eq!(eval(&mut c, body, &[&k], &["v"]), want);
    assert_eq!(c.call(&["SCRIPT", "EXISTS", &sha]), "*1\r\n:1\r\n");
    assert_eq!(run(&mut c, "EVALSHA", &sha, &[&k], &["v"]), want, "EVALSHA after EVAL");
    // numkeys errors come before the lookup, for a cached script as well.
    assert_eq!(c.call(&["EVALSHA", &sha, "1"]), error("ERR Number of keys can't be greater than number of args"));
    assert_eq!(c.call(&["EVALSHA", &sha, "-1"]), error("ERR Number of keys can't be negative"));
    assert_eq!(c.call(&["EVALSHA", &sha, "x"]), error("ERR value is not an integer or out of range"));
    assert_eq!(c.call(&["SCRIPT", "FLUSH", "SYNC"]), OK);
    assert_eq!(run(&mut c, "EVALSHA", &sha, &[&k], &["v"]), noscript);
    assert_eq!(sha_of(&mut c, body), sha);
    assert_eq!(c.call(&["SCRIPT", "FLUSH", "ASYNC"]), OK);
    assert_eq!(run(&mut c, "EVALSHA", &sha, &[&k], &["v"]), noscript);
    assert_eq!(c.call(&["SCRIPT", "EXISTS", &sha]), "*1\r\n:0\r\n");
    assert_eq!(c.call(&["SCRIPT", "FLUSH", "sync"]), OK, "the mode is case-insensitive");
    assert_eq!(c.call(&["SCRIPT", "FLUSH", "async"]), OK);
    assert_eq!(c.call(&["SCRIPT", "FLUSH", "bad"]), error("ERR SCRIPT FLUSH only support SYNC|ASYNC option"));
    assert_eq!(c.call(&["SCRIPT", "FLUSH", "SYNC", "ASYNC"]), error("ERR SCRIPT FLUSH only support SYNC|ASYNC option"));
    // A script that fails at run time is cached all the same.
    let failing = "error('cached anyway')";
    let failing_sha = sha_of(&mut c, failing);
    assert_eq!(c.call(&["SCRIPT", "FLUSH"]), OK);
    assert_eq!(eval(&mut c, failing, &[], &[]), script_error("ERR user_script:1: cached anyway", &failing_sha, 1));
    assert_eq!(c.call(&["SCRIPT", "EXISTS", &failing_sha]), "*1\r\n:1\r\n");
    assert_eq!(
        run(&mut c, "EVALSHA", &failing_sha, &[], &[]),
        script_error("ERR user_script:1: cached anyway", &failing_sha, 1)
    );
}

#[test]
fn script_kill_help_subcommands_and_arity() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    assert_eq!(c.call(&["SCRIPT", "KILL"]), error("NOTBUSY No scripts in execution right now."));
    assert_eq!(c.call(&["SCRIPT", "foo"]), error("ERR unknown subcommand 'foo'. Try SCRIPT HELP."));
    assert_eq!(c.call(&["SCRIPT"]), error("ERR wrong number of arguments for 'script' command"));
    assert_eq!(c.call(&["SCRIPT", "LOAD"]), error("ERR wrong number of arguments for 'script|load' command"));
    assert_eq!(c.call(&["SCRIPT", "LOAD", "a", "b"]), error("ERR wrong number of arguments for 'script|load' command"));
    let help = c.call(&["SCRIPT", "HELP"]);
    let (v, used) = parse(&help);
    assert_eq!(used, help.len());
    let lines: Vec<&str> = v
        .array()
        .iter()
        .map(|l| match l {
            V::Simple(s) => s.as_str(),
            other => panic!("SCRIPT HELP lines are status strings: {other:?}"),
        })
        .collect();
    assert_eq!(lines[0], "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
    for want in ["EXISTS <sha1> [<sha1> ...]", "FLUSH [ASYNC|SYNC]", "KILL", "LOAD <script>", "HELP"] {
        assert!(lines.contains(&want), "SCRIPT HELP lists {want:?}: {lines:?}");
    }
    assert_eq!(lines.last(), Some(&"    Prints this help."));
}

#[test]
fn read_only_scripts_refuse_writes() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (k, n) = (key("ro-k"), key("ro-n"));
    assert_eq!(c.call(&["SET", &k, "val"]), OK);
    assert_eq!(run(&mut c, "EVAL_RO", "return redis.call('get', KEYS[1])", &[&k], &[]), bulk("val"));
    assert_eq!(run(&mut c, "EVAL_RO", "return redis.call('get', KEYS[1])", &[&n], &[]), NULL2);
    assert_eq!(run(&mut c, "EVAL_RO", "return redis.call('strlen', KEYS[1])", &[&k], &[]), int(3));
    assert_eq!(run(&mut c, "EVAL_RO", "return ARGV[1]", &[], &["a"]), bulk("a"));
    let msg = "ERR Write commands are not allowed from read-only scripts.";
    for body in [
        "return redis.call('set', KEYS[1], 'x')",
        "return redis.call('incr', KEYS[1])",
        "return redis.call('del', KEYS[1])",
    ] {
        let sha = sha_of(&mut c, body);
        assert_eq!(run(&mut c, "EVAL_RO", body, &[&n], &[]), script_error(msg, &sha, 1), "EVAL_RO {body:?}");
    }
    assert_eq!(run(&mut c, "EVAL_RO", "return redis.pcall('set', KEYS[1], 'x')", &[&n], &[]), error(msg));
    assert_eq!(c.call(&["EXISTS", &n]), int(0), "nothing was written");
    assert_eq!(c.call(&["EVAL_RO", "return 1", "-1"]), error("ERR Number of keys can't be negative"));
    assert_eq!(
        run(&mut c, "EVALSHA_RO", "0000000000000000000000000000000000000000", &[], &[]),
        error("NOSCRIPT No matching script. Please use EVAL.")
    );
}

#[test]
fn resp3_setresp_maps_doubles_and_nulls() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (h, none) = (key("r3-h"), key("r3-none"));
    assert_eq!(c.call(&["HSET", &h, "f", "v"]), int(1));
    let hello = c.call(&["HELLO", "3"]);
    assert!(hello.starts_with('%'), "HELLO 3 answers a map: {hello:?}");
    let hgetall = "redis.setresp(3); return redis.call('hgetall', KEYS[1])";
    assert_eq!(eval(&mut c, hgetall, &[&h], &[]), "%1\r\n$1\r\nf\r\n$1\r\nv\r\n");
    assert_eq!(
        eval(&mut c, "return redis.call('hgetall', KEYS[1])", &[&h], &[]),
        "*2\r\n$1\r\nf\r\n$1\r\nv\r\n",
        "without setresp(3) the script sees RESP2"
    );
    assert_eq!(
        eval(&mut c, "redis.setresp(3); local t = redis.call('hgetall', KEYS[1]); return t['map']['f']", &[&h], &[]),
        bulk("v"),
        "a RESP3 map reaches Lua as {{map={{...}}}}"
    );
    assert_eq!(eval(&mut c, "return {double=3.5}", &[], &[]), ",3.5\r\n");
    assert_eq!(eval(&mut c, "return nil", &[], &[]), NULL3);
    assert_eq!(eval(&mut c, "return false", &[], &[]), NULL3);
    assert_eq!(eval(&mut c, "return true", &[], &[]), int(1));
    assert_eq!(eval(&mut c, "redis.setresp(3); return nil", &[], &[]), NULL3);
    assert_eq!(eval(&mut c, "redis.setresp(3); return false", &[], &[]), "#f\r\n");
    assert_eq!(eval(&mut c, "redis.setresp(3); return true", &[], &[]), "#t\r\n");
    assert_eq!(eval(&mut c, "redis.setresp(3); return {1, false, true}", &[], &[]), "*3\r\n:1\r\n#f\r\n#t\r\n");
    assert_eq!(eval(&mut c, "redis.setresp(3); return redis.call('get', KEYS[1])", &[&none], &[]), NULL3);
    assert_eq!(
        eval(&mut c, "redis.setresp(3); local v = redis.call('get', KEYS[1]); return type(v)", &[&none], &[]),
        bulk("nil"),
        "a RESP3 null reaches Lua as nil"
    );
    assert_eq!(eval(&mut c, "return {map={a=1}}", &[], &[]), "%1\r\n$1\r\na\r\n:1\r\n");
    assert_eq!(eval(&mut c, "return {set={a=true}}", &[], &[]), "~1\r\n$1\r\na\r\n");
    assert_eq!(eval(&mut c, "return redis.status_reply('x')", &[], &[]), "+x\r\n");
    assert_eq!(eval(&mut c, "return {1,nil,3}", &[], &[]), "*1\r\n:1\r\n");
    let sha = sha_of(&mut c, "redis.setresp(4)");
    assert_eq!(eval(&mut c, "redis.setresp(4)", &[], &[]), script_error("ERR RESP version must be 2 or 3.", &sha, 1));
    let sha = sha_of(&mut c, "redis.setresp()");
    assert_eq!(
        eval(&mut c, "redis.setresp()", &[], &[]),
        script_error("ERR redis.setresp() requires one argument.", &sha, 1)
    );
    // Back to RESP2: the same scripts answer RESP2 types.
    let hello = c.call(&["HELLO", "2"]);
    assert!(hello.starts_with('*'), "HELLO 2 answers an array: {hello:?}");
    assert_eq!(eval(&mut c, hgetall, &[&h], &[]), "*2\r\n$1\r\nf\r\n$1\r\nv\r\n");
    assert_eq!(
        eval(&mut c, "redis.setresp(3); local t = redis.call('hgetall', KEYS[1]); return t['map']['f']", &[&h], &[]),
        bulk("v"),
        "the script's protocol does not depend on the client's"
    );
    assert_eq!(eval(&mut c, "return {double=3.5}", &[], &[]), "$3\r\n3.5\r\n");
    assert_eq!(eval(&mut c, "return nil", &[], &[]), NULL2);
    assert_eq!(eval(&mut c, "redis.setresp(3); return false", &[], &[]), int(0));
    assert_eq!(eval(&mut c, "redis.setresp(3); return true", &[], &[]), int(1));
    assert_eq!(eval(&mut c, "return {map={a=1}}", &[], &[]), "*2\r\n$1\r\na\r\n:1\r\n");
    assert_eq!(eval(&mut c, "return {set={a=true}}", &[], &[]), "*1\r\n$1\r\na\r\n");
}

#[test]
fn redis_library_helpers() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    assert_eq!(eval(&mut c, "return redis.sha1hex('')", &[], &[]), bulk("da39a3ee5e6b4b0d3255bfef95601890afd80709"));
    assert_eq!(eval(&mut c, "return redis.sha1hex('abc')", &[], &[]), bulk("a9993e364706816aba3e25717850c26c9cd0d89d"));
    assert_eq!(eval(&mut c, "return redis.sha1hex(123)", &[], &[]), bulk("40bd001563085fc35165329ea1ff5c5ecbdbbeef"));
    assert_eval_fails(&mut c, "return redis.sha1hex()", "ERR wrong number of arguments");
    // The SHA1 of a script's body is its EVALSHA name.
    let body = "return redis.sha1hex(ARGV[1])";
    let sha = sha_of(&mut c, body);
    assert_eq!(eval(&mut c, body, &[], &[body]), bulk(&sha));
    assert_eq!(eval(&mut c, "return type(redis.REDIS_VERSION)", &[], &[]), bulk("string"));
    assert_eq!(eval(&mut c, "return type(redis.REDIS_VERSION_NUM)", &[], &[]), bulk("number"));
    // redis.log returns nothing.
    assert_eq!(eval(&mut c, "return redis.log(redis.LOG_WARNING, 'resp_scripting test')", &[], &[]), NULL2);
    assert_eq!(eval(&mut c, "return redis.log(redis.LOG_DEBUG, 'x')", &[], &[]), NULL2);
    assert_eq!(eval(&mut c, "return select('#', redis.log(redis.LOG_NOTICE, 'x'))", &[], &[]), int(0));
    assert_eq!(
        eval(&mut c, "return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING}", &[], &[]),
        "*4\r\n:0\r\n:1\r\n:2\r\n:3\r\n"
    );
    assert_eval_fails(&mut c, "return redis.log(99, 'x')", "ERR Invalid debug level.");
    assert_eval_fails(&mut c, "return redis.log()", "ERR redis.log() requires two arguments or more.");
    // Replication controls: accepted, nothing to say.
    assert_eq!(eval(&mut c, "return redis.set_repl(redis.REPL_ALL)", &[], &[]), NULL2);
    assert_eq!(eval(&mut c, "return select('#', redis.set_repl(redis.REPL_ALL))", &[], &[]), int(0));
    assert_eq!(
        eval(
            &mut c,
            "return {redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL}",
            &[],
            &[]
        ),
        "*5\r\n:0\r\n:1\r\n:2\r\n:2\r\n:3\r\n"
    );
    assert_eval_fails(
        &mut c,
        "return redis.set_repl(99)",
        "ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.",
    );
    assert_eval_fails(&mut c, "return redis.set_repl()", "ERR redis.set_repl() requires two arguments.");
    assert_eq!(eval(&mut c, "return redis.replicate_commands()", &[], &[]), int(1));
    assert_eq!(eval(&mut c, "return tostring(redis.replicate_commands())", &[], &[]), bulk("true"));
    // The debugger's hooks do nothing outside a debugging session.
    assert_eq!(eval(&mut c, "return redis.breakpoint()", &[], &[]), NULL2);
    assert_eq!(eval(&mut c, "return tostring(redis.breakpoint())", &[], &[]), bulk("false"));
    assert_eq!(eval(&mut c, "return redis.debug('x')", &[], &[]), NULL2);
    assert_eq!(eval(&mut c, "return select('#', redis.debug('x'))", &[], &[]), int(0));
    // error_reply / status_reply need their one argument.
    assert_eq!(eval(&mut c, "return redis.error_reply()", &[], &[]), error("ERR wrong number or type of arguments"));
    assert_eq!(eval(&mut c, "return redis.status_reply()", &[], &[]), error("ERR wrong number or type of arguments"));
}

#[test]
fn eval_inside_multi_exec() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("mx-k");
    let failing = "error('in multi')";
    let failing_sha = sha_of(&mut c, failing);
    let incr = "return redis.call('incr', KEYS[1])";
    assert_eq!(c.call(&["MULTI"]), OK);
    assert_eq!(eval(&mut c, incr, &[&k], &[]), "+QUEUED\r\n");
    assert_eq!(eval(&mut c, incr, &[&k], &[]), "+QUEUED\r\n");
    assert_eq!(run(&mut c, "EVALSHA", "0000000000000000000000000000000000000000", &[], &[]), "+QUEUED\r\n");
    assert_eq!(c.call(&["EVAL", "return 1", "-1"]), "+QUEUED\r\n", "numkeys is checked when it runs");
    assert_eq!(eval(&mut c, failing, &[], &[]), "+QUEUED\r\n");
    assert_eq!(c.call(&["GET", &k]), "+QUEUED\r\n");
    assert_eq!(
        c.call(&["EXEC"]),
        format!(
            "*6\r\n:1\r\n:2\r\n-NOSCRIPT No matching script. Please use EVAL.\r\n\
             -ERR Number of keys can't be negative\r\n{}$1\r\n2\r\n",
            script_error("ERR user_script:1: in multi", &failing_sha, 1)
        )
    );
    // A wrong arity aborts the transaction.
    assert_eq!(c.call(&["MULTI"]), OK);
    assert_eq!(eval(&mut c, incr, &[&k], &[]), "+QUEUED\r\n");
    assert_eq!(c.call(&["EVAL", "return 1"]), error("ERR wrong number of arguments for 'eval' command"));
    assert_eq!(c.call(&["EXEC"]), error("EXECABORT Transaction discarded because of previous errors."));
    assert_eq!(c.call(&["GET", &k]), bulk("2"), "nothing of the aborted transaction ran");
}

#[test]
fn concurrent_incr_scripts_are_atomic() {
    let Some(server) = resp_server() else { return };
    let addr = server.resp_addr();
    let k = key("atomic-incr");
    const THREADS: usize = 4;
    const EVALS: usize = 500;
    let seen: Vec<Vec<i64>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|_| {
                let k = k.clone();
                s.spawn(move || {
                    let mut c = connect(addr);
                    (0..EVALS)
                        .map(|_| as_int(&eval(&mut c, "return redis.call('incr', KEYS[1])", &[&k], &[])))
                        .collect::<Vec<i64>>()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut all: Vec<i64> = seen.into_iter().flatten().collect();
    all.sort_unstable();
    let total = (THREADS * EVALS) as i64;
    assert_eq!(all, (1..=total).collect::<Vec<i64>>(), "every increment saw a value of its own");
    let mut c = Resp::new(&server);
    assert_eq!(c.call(&["GET", &k]), bulk(&total.to_string()));
}

#[test]
fn scripts_never_see_or_leave_a_torn_state() {
    let Some(server) = resp_server() else { return };
    let addr = server.resp_addr();
    let (a, b) = (key("torn-a"), key("torn-b"));
    const TOTAL: i64 = 1000;
    const TRANSFERS: usize = 300;
    let mut c = Resp::new(&server);
    assert_eq!(c.call(&["MSET", &a, &TOTAL.to_string(), &b, "0"]), OK);
    // Moves ARGV[1] from KEYS[1] to KEYS[2] with two separate SETs: only
    // the script's atomicity keeps others from seeing the sum change.
    let transfer = "local a = tonumber(redis.call('get', KEYS[1])) \
                    local b = tonumber(redis.call('get', KEYS[2])) \
                    redis.call('set', KEYS[1], a - ARGV[1]) \
                    redis.call('set', KEYS[2], b + ARGV[1]) \
                    return a + b";
    let sum = "return tonumber(redis.call('get', KEYS[1])) + tonumber(redis.call('get', KEYS[2]))";
    let writers_done = AtomicBool::new(false);
    let reads = std::thread::scope(|s| {
        let writers: Vec<_> = (0..2)
            .map(|w| {
                let (a, b) = (a.as_str(), b.as_str());
                s.spawn(move || {
                    let mut c = connect(addr);
                    for i in 0..TRANSFERS {
                        let amount = ((i % 7) + 1) as i64 * if (i + w) % 2 == 0 { 1 } else { -1 };
                        let (from, to) = if w == 0 { (a, b) } else { (b, a) };
                        let r = eval(&mut c, transfer, &[from, to], &[&amount.to_string()]);
                        assert_eq!(r, int(TOTAL), "a transfer saw a torn state");
                    }
                })
            })
            .collect();
        let script_reader = s.spawn(|| {
            let mut c = connect(addr);
            let mut n = 0;
            while !writers_done.load(Ordering::SeqCst) || n < 10 {
                assert_eq!(eval(&mut c, sum, &[&a, &b], &[]), int(TOTAL), "a reading script saw a torn state");
                n += 1;
            }
            n
        });
        // Both keys read at one instant by a transaction (MGET reads
        // each key atomically, but in Amalgam not both at one instant:
        // resp/multi.rs).
        let exec_reader = s.spawn(|| {
            let mut c = connect(addr);
            let mut n = 0;
            while !writers_done.load(Ordering::SeqCst) || n < 10 {
                call(&mut c, &["MULTI"]);
                call(&mut c, &["GET", &a]);
                call(&mut c, &["GET", &b]);
                let v = call(&mut c, &["EXEC"]);
                let pair: Vec<i64> = v.array().iter().map(|x| x.bulk().parse().unwrap()).collect();
                assert_eq!(pair[0] + pair[1], TOTAL, "a transaction saw a torn state: {pair:?}");
                n += 1;
            }
            n
        });
        for w in writers {
            w.join().unwrap();
        }
        writers_done.store(true, Ordering::SeqCst);
        (script_reader.join().unwrap(), exec_reader.join().unwrap())
    });
    assert!(reads.0 >= 10 && reads.1 >= 10, "the readers ran: {reads:?}");
    let v = call(&mut c, &["MGET", &a, &b]);
    let pair: Vec<i64> = v.array().iter().map(|x| x.bulk().parse().unwrap()).collect();
    assert_eq!(pair[0] + pair[1], TOTAL, "the end state: {pair:?}");
}

#[test]
fn keys_not_declared_in_keys_are_allowed() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let (k, n) = (key("undeclared"), key("undeclared-n"));
    assert_eq!(
        eval(&mut c, "redis.call('set', ARGV[1], 'v'); return redis.call('get', ARGV[1])", &[], &[&k]),
        bulk("v")
    );
    assert_eq!(c.call(&["GET", &k]), bulk("v"));
    assert_eq!(eval(&mut c, "return redis.call('get', ARGV[1])", &[], &[&k]), bulk("v"));
    assert_eq!(eval(&mut c, "redis.call('incr', ARGV[1]); return redis.call('incr', ARGV[1])", &[], &[&n]), int(2));
}

#[test]
fn a_script_writes_keys_it_names_after_it_wrote() {
    // BullMQ's addStandardJob shape: INCR a declared id counter, then
    // write the job's own keys, named by the new id, which KEYS could not
    // name (Redis's standalone mode allows it). From two connections at
    // once: every id gets its job, nothing is lost.
    let Some(server) = resp_server() else { return };
    const JOBS: usize = 200;
    let (counter, prefix) = (key("jobs:id"), key("jobs:"));
    let script = "local id = redis.call('incr', KEYS[1]) \
                  redis.call('hset', ARGV[1] .. id, 'name', 'job', 'n', id) \
                  redis.call('rpush', ARGV[1] .. 'wait', id) \
                  redis.call('set', ARGV[1] .. id .. ':lock', 'x', 'PX', 60000) \
                  return id";
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                let mut c = Resp::new(&server);
                for _ in 0..JOBS {
                    let id = eval(&mut c, script, &[&counter], &[&prefix]);
                    assert!(id.starts_with(':'), "{id:?}");
                }
            });
        }
    });
    let mut c = Resp::new(&server);
    assert_eq!(c.call(&["GET", &counter]), bulk(&(2 * JOBS).to_string()));
    let wait = format!("{prefix}wait");
    assert_eq!(c.call(&["LLEN", &wait]), int(2 * JOBS as i64));
    for id in 1..=2 * JOBS {
        assert_eq!(c.call(&["HGET", &format!("{prefix}{id}"), "n"]), bulk(&id.to_string()), "job {id}");
        assert_eq!(c.call(&["EXISTS", &format!("{prefix}{id}:lock")]), int(1));
    }
}
