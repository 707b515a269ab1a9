//! A key holding a collection (here a hash, and a list) met by string
//! commands: Redis 7's WRONGTYPE, nil or overwrite, command by command.
//! Runs against amalgam and, in CI, against Debian's redis-server (the
//! expectations are Redis's). The memcached side (amalgam only: it needs
//! both ports) sees a collection as absent and can delete it.
mod common;
use common::resp::*;
use common::*;

const WRONGTYPE: &str = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";

#[test]
fn string_commands_on_a_collection() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let h = key("wt:hash");
    let l = key("wt:list");
    let s = key("wt:str");
    assert_eq!(c.call(&["HSET", &h, "f", "1"]), int(1));
    assert_eq!(c.call(&["RPUSH", &l, "a", "b"]), int(2));
    assert_eq!(c.call(&["SET", &s, "x"]), OK);
    for k in [&h, &l] {
        for cmd in [
            vec!["GET", k],
            vec!["GETSET", k, "v"],
            vec!["GETDEL", k],
            vec!["GETEX", k],
            vec!["GETEX", k, "PERSIST"],
            vec!["SET", k, "v", "GET"],
            vec!["APPEND", k, "x"],
            vec!["STRLEN", k],
            vec!["GETRANGE", k, "0", "-1"],
            vec!["SETRANGE", k, "0", "x"],
            vec!["INCR", k],
            vec!["DECRBY", k, "2"],
            vec!["INCRBYFLOAT", k, "1.5"],
            vec!["SETBIT", k, "1", "1"],
            vec!["GETBIT", k, "1"],
            vec!["BITCOUNT", k],
            vec!["BITPOS", k, "1"],
            vec!["BITFIELD", k, "GET", "u8", "0"],
            vec!["BITFIELD", k, "SET", "u8", "0", "1"],
            vec!["BITOP", "OR", &s, k],
        ] {
            assert_eq!(c.call(&cmd), WRONGTYPE, "{cmd:?}");
        }
        assert_eq!(c.call(&["LCS", k, &s]), error("ERR The specified keys must contain string values"));
        // MGET answers nil for it; existence-only writes see it as present.
        assert_eq!(c.call(&["MGET", &s, k]), "*2\r\n$1\r\nx\r\n$-1\r\n");
        assert_eq!(c.call(&["SET", k, "v", "NX"]), NULL2);
        assert_eq!(c.call(&["SETNX", k, "v"]), int(0));
        assert_eq!(c.call(&["MSETNX", k, "v"]), int(0));
    }
    // Nothing above changed them.
    assert_eq!(c.call(&["HGET", &h, "f"]), bulk("1"));
    assert_eq!(c.call(&["LLEN", &l]), int(2));
    assert_eq!(c.call(&["GET", &s]), bulk("x"));
    // A plain SET (and SET XX, MSET) replaces a collection with a string.
    assert_eq!(c.call(&["SET", &h, "now a string"]), OK);
    assert_eq!(c.call(&["TYPE", &h]), "+string\r\n");
    assert_eq!(c.call(&["GET", &h]), bulk("now a string"));
    assert_eq!(c.call(&["SET", &l, "v", "XX"]), OK);
    assert_eq!(c.call(&["TYPE", &l]), "+string\r\n");
    assert_eq!(c.call(&["DEL", &h, &l, &s]), int(3));
}

#[test]
fn memcached_sees_a_collection_as_absent() {
    let Some(server) = resp_private(&[]) else { return };
    if server.is_redis {
        return;
    }
    let mut mc = server.connect();
    let mut r = Resp::new(&server);
    assert_eq!(r.call(&["HSET", "h", "f", "1"]), int(1));
    assert_eq!(r.call(&["RPUSH", "l", "a"]), int(1));
    exchange(&mut mc, b"get h\r\n", b"END\r\n");
    exchange(&mut mc, b"gets h l\r\n", b"END\r\n");
    exchange(&mut mc, b"gat 100 h\r\n", b"END\r\n");
    exchange(&mut mc, b"touch h 100\r\n", b"NOT_FOUND\r\n");
    exchange(&mut mc, b"incr h 1\r\n", b"NOT_FOUND\r\n");
    exchange(&mut mc, b"append h 0 0 1\r\nx\r\n", b"NOT_STORED\r\n");
    exchange(&mut mc, b"prepend h 0 0 1\r\nx\r\n", b"NOT_STORED\r\n");
    exchange(&mut mc, b"mg h v\r\n", b"EN\r\n");
    exchange(&mut mc, b"mg h v N30\r\n", b"EN\r\n");
    exchange(&mut mc, b"me h\r\n", b"EN\r\n");
    exchange(&mut mc, b"ma h\r\n", b"NF\r\n");
    exchange(&mut mc, b"ms h 1 MA\r\nx\r\n", b"NS\r\n");
    // Untouched by all of that.
    assert_eq!(r.call(&["HGET", "h", "f"]), bulk("1"));
    assert_eq!(r.call(&["TTL", "h"]), int(-1));
    // memcached can delete a collection, and a plain set replaces it.
    exchange(&mut mc, b"delete h\r\n", b"DELETED\r\n");
    assert_eq!(r.call(&["EXISTS", "h"]), int(0));
    exchange(&mut mc, b"set l 0 0 1\r\nx\r\n", b"STORED\r\n");
    assert_eq!(r.call(&["TYPE", "l"]), "+string\r\n");
    exchange(&mut mc, b"get l\r\n", b"VALUE l 0 1\r\nx\r\nEND\r\n");
}
