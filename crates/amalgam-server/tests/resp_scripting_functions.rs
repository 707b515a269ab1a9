//! Redis 7.0 Functions, black-box: FUNCTION LOAD (the `#!lua name=`
//! shebang, REPLACE, `redis.register_function` in both forms, flags and
//! descriptions, every load error), FCALL and FCALL_RO (the `no-writes`
//! flag), FUNCTION LIST / DELETE / FLUSH / STATS / KILL / DUMP / RESTORE
//! (Redis's payload, both ways), the shebang of
//! EVAL scripts (`#!lua flags=no-writes`), and a library loaded through
//! one connection called from others (other workers).
//!
//! Only [`functions_load_call_list_delete`] loads libraries (the others
//! check refusals), since FUNCTION FLUSH and STATS see them all.
//!
//! Every expectation is Redis 7.0.15's, byte for byte, except where a
//! comment says Redis's order is its hash table's (FUNCTION LIST's
//! functions): CI runs this file against redis-server too
//! (`AMALGAM_TEST_RESP_ADDR`).
mod common;
use common::resp::*;
use common::*;
use std::net::TcpStream;

const LIB: &str = "#!lua name=fnlib\n\
redis.register_function('fn_echo', function(keys, args) return args[1] end)\n\
redis.register_function{function_name='fn_get', callback=function(keys, args) return redis.call('get', keys[1]) end, flags={'no-writes'}, description='reads'}\n\
redis.register_function('fn_boom', function(keys, args) error('bad') end)\n\
redis.register_function('fn_set', function(keys, args) return redis.call('set', keys[1], args[1]) end)";

#[test]
fn functions_load_call_list_delete() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    assert_eq!(c.call(&["FUNCTION", "FLUSH"]), OK);
    assert_eq!(c.call(&["FUNCTION", "LOAD", LIB]), bulk("fnlib"));
    assert_eq!(c.call(&["FUNCTION", "LOAD", LIB]), error("ERR Library 'fnlib' already exists"));
    assert_eq!(c.call(&["FUNCTION", "LOAD", "REPLACE", LIB]), bulk("fnlib"));
    assert_eq!(c.call(&["FCALL", "fn_echo", "0", "hello"]), bulk("hello"));
    assert_eq!(c.call(&["FCALL", "fn_set", "1", "fn:k", "v1"]), OK);
    assert_eq!(c.call(&["FCALL", "fn_get", "1", "fn:k"]), bulk("v1"));
    assert_eq!(c.call(&["FCALL_RO", "fn_get", "1", "fn:k"]), bulk("v1"));
    assert_eq!(
        c.call(&["FCALL_RO", "fn_set", "1", "fn:k", "v2"]),
        error("ERR Can not execute a script with write flag using *_ro command.")
    );
    assert_eq!(
        c.call(&["FCALL", "fn_boom", "0"]),
        error("ERR user_function:4: bad script: fn_boom, on @user_function:4.")
    );
    assert_eq!(c.call(&["FCALL", "fn_nosuch", "0"]), error("ERR Function not found"));
    assert_eq!(c.call(&["FCALL", "fn_echo", "-1"]), error("ERR Number of keys can't be negative"));
    assert_eq!(
        c.call(&["FCALL", "fn_echo", "2", "a"]),
        error("ERR Number of keys can't be greater than number of args")
    );
    // FUNCTION LIST: the functions come in Redis's hash-table order, so
    // each function's entry is looked for, not the whole reply.
    let list = c.call(&["FUNCTION", "LIST", "LIBRARYNAME", "fnli*", "WITHCODE"]);
    assert!(
        list.starts_with(
            "*1\r\n*8\r\n$12\r\nlibrary_name\r\n$5\r\nfnlib\r\n$6\r\nengine\r\n$3\r\nLUA\r\n$9\r\nfunctions\r\n*4\r\n"
        ),
        "{list:?}"
    );
    for f in ["fn_echo", "fn_boom", "fn_set"] {
        let entry =
            format!("*6\r\n$4\r\nname\r\n${}\r\n{f}\r\n$11\r\ndescription\r\n$-1\r\n$5\r\nflags\r\n*0\r\n", f.len());
        assert!(list.contains(&entry), "{f} in {list:?}");
    }
    assert!(list.contains(
        "*6\r\n$4\r\nname\r\n$6\r\nfn_get\r\n$11\r\ndescription\r\n$5\r\nreads\r\n$5\r\nflags\r\n*1\r\n+no-writes\r\n"
    ));
    assert!(list.ends_with(&format!("$12\r\nlibrary_code\r\n${}\r\n{LIB}\r\n", LIB.len())), "{list:?}");
    assert_eq!(c.call(&["FUNCTION", "LIST", "LIBRARYNAME", "nomatch*"]), "*0\r\n");
    assert_eq!(
        c.call(&["FUNCTION", "STATS"]),
        "*4\r\n$14\r\nrunning_script\r\n$-1\r\n$7\r\nengines\r\n*2\r\n$3\r\nLUA\r\n*4\r\n$15\r\nlibraries_count\r\n:1\r\n$15\r\nfunctions_count\r\n:4\r\n"
    );
    assert_eq!(
        c.call(&[
            "FUNCTION",
            "LOAD",
            "#!lua name=fnother\nredis.register_function('fn_echo', function() return 1 end)"
        ]),
        error("ERR Function fn_echo already exists")
    );
    assert_eq!(c.call(&["FUNCTION", "KILL"]), error("NOTBUSY No scripts in execution right now."));
    assert_eq!(c.call(&["FUNCTION", "DELETE", "nosuch"]), error("ERR Library not found"));
    assert_eq!(c.call(&["FUNCTION", "DELETE", "fnlib"]), OK);
    assert_eq!(c.call(&["FCALL", "fn_echo", "0", "x"]), error("ERR Function not found"));
    assert_eq!(c.call(&["FUNCTION", "FLUSH", "bad"]), error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option"));
    assert_eq!(
        c.call(&["FUNCTION", "LOAD", "#!lua name=fnflush\nredis.register_function('fn_f', function() return 1 end)"]),
        bulk("fnflush")
    );
    assert_eq!(c.call(&["FUNCTION", "FLUSH", "SYNC"]), OK);
    assert_eq!(c.call(&["FCALL", "fn_f", "0"]), error("ERR Function not found"));
    assert_eq!(c.call(&["FUNCTION", "LIST"]), "*0\r\n");
    a_library_loaded_on_one_connection_serves_every_connection(&server, &mut c);
    dump_and_restore_move_redis_s_payload(&mut c);
    assert_eq!(c.call(&["FUNCTION", "FLUSH", "ASYNC"]), OK);
}

/// redis-server 7.0.15's FUNCTION DUMP of the one library
/// `#!lua name=dlib\nredis.register_function('dfn', function() return 1 end)`.
const REDIS_DUMP_HEX: &str = "f5404723216c7561206e616d653d646c69620a72656469732e72656769737465725f66756e6374696f6e\
                              282764666e272c2066756e6374696f6e28292072657475726e203120656e64290a003109be18ac207abf";

fn unhex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex")).collect()
}

/// FUNCTION DUMP / RESTORE: Redis's payload restores here, and the dump
/// of the same library is Redis's, byte for byte (so it restores in
/// Redis); part of [`functions_load_call_list_delete`].
fn dump_and_restore_move_redis_s_payload(c: &mut Resp) {
    let payload = unhex(REDIS_DUMP_HEX);
    let restore = |c: &mut Resp, policy: Option<&[u8]>| {
        let mut args: Vec<&[u8]> = vec![b"FUNCTION", b"RESTORE", &payload];
        args.extend(policy);
        c.call_raw(&encode(&args))
    };
    assert_eq!(c.call(&["FUNCTION", "FLUSH"]), OK);
    assert_eq!(restore(c, None), OK);
    assert_eq!(c.call(&["FCALL", "dfn", "0"]), int(1));
    c.send(&["FUNCTION", "DUMP"]);
    let mut want = format!("${}\r\n", payload.len()).into_bytes();
    want.extend_from_slice(&payload);
    want.extend_from_slice(b"\r\n");
    assert_eq!(c.reply_bytes(), want, "FUNCTION DUMP is Redis's payload");
    assert_eq!(restore(c, None), error("ERR Library dlib already exists"));
    assert_eq!(restore(c, Some(b"APPEND")), error("ERR Library dlib already exists"));
    assert_eq!(restore(c, Some(b"REPLACE")), OK);
    assert_eq!(restore(c, Some(b"FLUSH")), OK);
    assert_eq!(
        restore(c, Some(b"BOGUS")),
        error("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
    );
    assert_eq!(c.call(&["FUNCTION", "RESTORE", "bad"]), error("ERR DUMP payload version or checksum are wrong"));
    assert_eq!(c.call(&["FUNCTION", "FLUSH"]), OK);
    c.send(&["FUNCTION", "DUMP"]);
    let mut empty = b"$10\r\n".to_vec();
    empty.extend_from_slice(&unhex("0a005d9b5c400f7fa2da"));
    empty.extend_from_slice(b"\r\n");
    assert_eq!(c.reply_bytes(), empty, "the dump of no library");
}

#[test]
fn function_load_errors_are_redis_s() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let cases: &[(&str, &str)] = &[
        ("redis.register_function('x', function() return 1 end)", "ERR Missing library metadata"),
        ("#!lua\nredis.register_function('x', function() return 1 end)", "ERR Library name was not given"),
        ("#!lua name=e2 foo=bar\nredis.register_function('x', function() return 1 end)", "ERR Invalid metadata value given: foo=bar"),
        ("#!js name=e3\nredis.register_function('x', function() return 1 end)", "ERR Engine 'js' not found"),
        (
            "#!lua name=e4\nredis.call('set','a','b')",
            "ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'call'",
        ),
        ("#!lua name=e5\nlocal x = 1", "ERR No functions registered"),
        (
            "#!lua name=e6\nredis.register_function('f6', function() return 1 end, 'extra')",
            "ERR Error registering functions: ERR wrong number of arguments to redis.register_function",
        ),
        (
            "#!lua name=e7\nredis.register_function{function_name='f7', callback=function() return 1 end, flags={'bogus'}}",
            "ERR Error registering functions: ERR unknown flag given",
        ),
        ("#!lua name=e8\nx x", "ERR Error compiling function: user_function:2: '=' expected near 'x'"),
    ];
    for (code, want) in cases {
        assert_eq!(c.call(&["FUNCTION", "LOAD", code]), error(want), "FUNCTION LOAD {code:?}");
    }
}

#[test]
fn eval_shebang_flags() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let ro = "#!lua flags=no-writes\nreturn redis.call('set','fn:sb','b')";
    let sha = {
        let r = c.call(&["SCRIPT", "LOAD", ro]);
        parse(&r).0.bulk().to_string()
    };
    assert_eq!(
        c.call(&["EVAL", ro, "1", "fn:sb"]),
        format!("-ERR Write commands are not allowed from read-only scripts. script: {sha}, on @user_script:2.\r\n")
    );
    assert_eq!(c.call(&["EVAL", "#!lua\nreturn 1", "0"]), int(1));
    assert_eq!(c.call(&["EVAL", "#!lua name=x\nreturn 1", "0"]), error("ERR Unknown lua shebang option: name=x"));
    assert_eq!(
        c.call(&["EVAL_RO", "#!lua\nreturn redis.call('set','fn:sb','b')", "1", "fn:sb"]),
        error("ERR Can not execute a script with write flag using *_ro command.")
    );
    assert_eq!(c.call(&["EVAL_RO", "#!lua flags=no-writes\nreturn redis.call('get','fn:sb')", "1", "fn:sb"]), NULL2);
}

/// A library loaded through one connection is called from four others
/// (on other workers) and replaced for all of them; part of
/// [`functions_load_call_list_delete`], which owns the libraries.
fn a_library_loaded_on_one_connection_serves_every_connection(server: &Server, c: &mut Resp) {
    let lib = "#!lua name=fnshared\nredis.register_function('fn_shared_incr', function(keys) return redis.call('incr', keys[1]) end)";
    assert_eq!(c.call(&["FUNCTION", "LOAD", "REPLACE", lib]), bulk("fnshared"));
    let addr = server.resp_addr();
    let key = format!("fn:shared:{}", std::process::id());
    std::thread::scope(|s| {
        for _ in 0..4 {
            let key = key.as_str();
            s.spawn(move || {
                let mut d = Resp::from_stream(TcpStream::connect(addr).expect("connect"));
                for _ in 0..50 {
                    let r = d.call(&["FCALL", "fn_shared_incr", "1", key]);
                    assert!(r.starts_with(':'), "{r:?}");
                }
            });
        }
    });
    assert_eq!(c.call(&["GET", &key]), bulk("200"));
    // Replaced: every connection sees the new code.
    let lib2 = "#!lua name=fnshared\nredis.register_function('fn_shared_incr', function(keys) return 'v2' end)";
    assert_eq!(c.call(&["FUNCTION", "LOAD", "REPLACE", lib2]), bulk("fnshared"));
    for _ in 0..4 {
        let mut d = Resp::from_stream(TcpStream::connect(addr).expect("connect"));
        assert_eq!(d.call(&["FCALL", "fn_shared_incr", "1", &key]), bulk("v2"));
    }
}
