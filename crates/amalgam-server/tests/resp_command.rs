//! COMMAND INFO (key specifications, tips, ACL categories, subcommands),
//! COMMAND LIST FILTERBY, GETKEYS and GETKEYSANDFLAGS, black-box. Every
//! expectation is Redis 7.0's (CI runs this file against redis-server too;
//! the exact bytes below were read from Redis 7.0.15).
mod common;
use common::resp::*;
use common::*;

/// The elements of an array of bulk strings (RESP2), sorted.
fn names(reply: &str) -> Vec<String> {
    let mut v: Vec<String> =
        reply.split("\r\n").skip(1).filter(|l| !l.starts_with('$') && !l.is_empty()).map(str::to_string).collect();
    v.sort();
    v
}

const MSET_INFO: &str = "*10\r\n$4\r\nmset\r\n:-3\r\n*2\r\n+write\r\n+denyoom\r\n:1\r\n:-1\r\n:2\r\n*3\r\n+@write\r\n+@string\r\n+@slow\r\n*2\r\n$26\r\nrequest_policy:multi_shard\r\n$29\r\nresponse_policy:all_succeeded\r\n*1\r\n*6\r\n$5\r\nflags\r\n*2\r\n+OW\r\n+update\r\n$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n:1\r\n$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n*6\r\n$7\r\nlastkey\r\n:-1\r\n$7\r\nkeystep\r\n:2\r\n$5\r\nlimit\r\n:0\r\n*0\r\n";
const SET_INFO: &str = "*10\r\n$3\r\nset\r\n:-3\r\n*2\r\n+write\r\n+denyoom\r\n:1\r\n:1\r\n:1\r\n*3\r\n+@write\r\n+@string\r\n+@slow\r\n*0\r\n*1\r\n*8\r\n$5\r\nnotes\r\n$48\r\nRW and ACCESS due to the optional `GET` argument\r\n$5\r\nflags\r\n*4\r\n+RW\r\n+access\r\n+update\r\n+variable_flags\r\n$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n:1\r\n$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n*6\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n*0\r\n";
const BITOP_INFO: &str = "*10\r\n$5\r\nbitop\r\n:-4\r\n*2\r\n+write\r\n+denyoom\r\n:2\r\n:-1\r\n:1\r\n*3\r\n+@write\r\n+@bitmap\r\n+@slow\r\n*0\r\n*2\r\n*6\r\n$5\r\nflags\r\n*2\r\n+OW\r\n+update\r\n$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n:2\r\n$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n*6\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n*6\r\n$5\r\nflags\r\n*2\r\n+RO\r\n+access\r\n$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n:3\r\n$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n*6\r\n$7\r\nlastkey\r\n:-1\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n*0\r\n";
const OBJECT_FREQ_INFO: &str = "*10\r\n$11\r\nobject|freq\r\n:3\r\n*1\r\n+readonly\r\n:2\r\n:2\r\n:1\r\n*3\r\n+@keyspace\r\n+@read\r\n+@slow\r\n*1\r\n$23\r\nnondeterministic_output\r\n*1\r\n*6\r\n$5\r\nflags\r\n*1\r\n+RO\r\n$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n:2\r\n$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n*6\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n*0\r\n";

#[test]
fn command_info_with_key_specs() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    assert_eq!(
        c.call(&["COMMAND", "INFO", "mset", "SET", "bitop"]),
        format!("*3\r\n{MSET_INFO}{SET_INFO}{BITOP_INFO}")
    );
    assert_eq!(
        c.call(&["COMMAND", "INFO", "object|freq", "config|nosuch"]),
        format!("*2\r\n{OBJECT_FREQ_INFO}$-1\r\n")
    );
    let touch = c.call(&["COMMAND", "INFO", "touch"]);
    assert!(touch.contains("*3\r\n+@keyspace\r\n+@read\r\n+@fast\r\n"), "{touch}");
    let monitor = c.call(&["COMMAND", "INFO", "monitor"]);
    assert!(monitor.contains("*3\r\n+@admin\r\n+@slow\r\n+@dangerous\r\n"), "{monitor}");
    let client = c.call(&["COMMAND", "INFO", "client"]);
    assert!(
        client.starts_with("*1\r\n*10\r\n$6\r\nclient\r\n:-2\r\n*0\r\n:0\r\n:0\r\n:0\r\n*1\r\n+@slow\r\n*0\r\n*0\r\n*")
    );
    assert!(client.contains("$11\r\nclient|kill\r\n:-3\r\n*4\r\n+admin\r\n+noscript\r\n+loading\r\n+stale\r\n"));
}

#[test]
fn command_docs_of_a_container() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let docs = c.call(&["COMMAND", "DOCS", "object"]);
    assert!(docs.starts_with("*2\r\n$6\r\nobject\r\n"), "{docs}");
    assert!(docs.contains("$11\r\nsubcommands\r\n*10\r\n"), "a map of five subcommands: {docs}");
    assert!(docs.contains("$11\r\nobject|freq\r\n") && docs.contains("$15\r\nobject|encoding\r\n"), "{docs}");
    let sub = c.call(&["COMMAND", "DOCS", "client|kill"]);
    assert!(sub.starts_with("*2\r\n$11\r\nclient|kill\r\n"), "{sub}");
}

#[test]
fn command_list_filters() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let all = names(&c.call(&["COMMAND", "LIST"]));
    for n in ["get", "set", "config|get", "client|kill", "object|encoding", "bitfield_ro", "lcs"] {
        assert!(all.iter().any(|a| a == n), "COMMAND LIST lacks {n}");
    }
    assert!(as_int(&c.call(&["COMMAND", "COUNT"])) < all.len() as i64, "COUNT counts commands, LIST adds subcommands");
    assert_eq!(
        names(&c.call(&["COMMAND", "LIST", "FILTERBY", "ACLCAT", "BITMAP"])),
        ["bitcount", "bitfield", "bitfield_ro", "bitop", "bitpos", "getbit", "setbit"]
    );
    assert_eq!(
        names(&c.call(&["COMMAND", "LIST", "FILTERBY", "PATTERN", "bit*"])),
        ["bitcount", "bitfield", "bitfield_ro", "bitop", "bitpos"]
    );
    let object = names(&c.call(&["COMMAND", "LIST", "FILTERBY", "PATTERN", "OBJECT|*"]));
    assert_eq!(object, ["object|encoding", "object|freq", "object|help", "object|idletime", "object|refcount"]);
    assert_eq!(c.call(&["COMMAND", "LIST", "FILTERBY", "MODULE", "x"]), "*0\r\n");
    assert_eq!(c.call(&["COMMAND", "LIST", "FILTERBY", "ACLCAT", "nosuch"]), "*0\r\n");
    assert_eq!(c.call(&["COMMAND", "LIST", "FILTERBY", "foo", "x"]), error("ERR syntax error"));
    assert_eq!(c.call(&["COMMAND", "LIST", "FILTERBY"]), error("ERR syntax error"));
    assert_eq!(c.call(&["COMMAND", "LIST", "x"]), error("ERR syntax error"));
}

#[test]
fn command_getkeys() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    assert_eq!(c.call(&["COMMAND", "GETKEYS", "set", "a", "b"]), format!("*1\r\n{}", bulk("a")));
    assert_eq!(
        c.call(&["COMMAND", "GETKEYS", "MSET", "a", "1", "b", "2"]),
        format!("*2\r\n{}{}", bulk("a"), bulk("b"))
    );
    assert_eq!(
        c.call(&["COMMAND", "GETKEYS", "bitop", "and", "d", "a", "b"]),
        format!("*3\r\n{}{}{}", bulk("d"), bulk("a"), bulk("b"))
    );
    assert_eq!(c.call(&["COMMAND", "GETKEYS", "object", "encoding", "k"]), format!("*1\r\n{}", bulk("k")));
    assert_eq!(
        c.call(&["COMMAND", "GETKEYSANDFLAGS", "lcs", "a", "b"]),
        "*2\r\n*2\r\n$1\r\na\r\n*2\r\n+RO\r\n+access\r\n*2\r\n$1\r\nb\r\n*2\r\n+RO\r\n+access\r\n"
    );
    assert_eq!(c.call(&["COMMAND", "GETKEYSANDFLAGS", "del", "x"]), "*1\r\n*2\r\n$1\r\nx\r\n*2\r\n+RM\r\n+delete\r\n");
    assert_eq!(c.call(&["COMMAND", "GETKEYS", "nosuch", "a"]), error("ERR Invalid command specified"));
    assert_eq!(c.call(&["COMMAND", "GETKEYS", "object", "nosuch", "k"]), error("ERR Invalid command specified"));
    assert_eq!(
        c.call(&["COMMAND", "GETKEYS", "set", "a"]),
        error("ERR Invalid number of arguments specified for command")
    );
    assert_eq!(c.call(&["COMMAND", "GETKEYS", "ping", "x"]), error("ERR The command has no key arguments"));
    assert_eq!(c.call(&["COMMAND", "GETKEYS", "config", "get", "x"]), error("ERR The command has no key arguments"));
    assert_eq!(
        c.call(&["COMMAND", "GETKEYS", "ping"]),
        error("ERR wrong number of arguments for 'command|getkeys' command")
    );
}

/// RESP3: COMMAND INFO's flags, ACL categories, tips and key specs are
/// sets, and so are the subcommands when there are none (bytes read from
/// Redis 7.0.15).
#[test]
fn command_info_in_resp3() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    assert!(c.call(&["HELLO", "3"]).starts_with('%'));
    assert_eq!(
        c.call(&["COMMAND", "INFO", "get"]),
        "*1\r\n*10\r\n$3\r\nget\r\n:2\r\n~2\r\n+readonly\r\n+fast\r\n:1\r\n:1\r\n:1\r\n~3\r\n+@read\r\n+@string\r\n\
         +@fast\r\n~0\r\n~1\r\n%3\r\n$5\r\nflags\r\n~2\r\n+RO\r\n+access\r\n$12\r\nbegin_search\r\n%2\r\n$4\r\n\
         type\r\n$5\r\nindex\r\n$4\r\nspec\r\n%1\r\n$5\r\nindex\r\n:1\r\n$9\r\nfind_keys\r\n%2\r\n$4\r\ntype\r\n\
         $5\r\nrange\r\n$4\r\nspec\r\n%3\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n~0\r\n"
    );
    assert_eq!(
        c.call(&["COMMAND", "INFO", "ping"]),
        "*1\r\n*10\r\n$4\r\nping\r\n:-1\r\n~1\r\n+fast\r\n:0\r\n:0\r\n:0\r\n~2\r\n+@fast\r\n+@connection\r\n~2\r\n\
         $25\r\nrequest_policy:all_shards\r\n$29\r\nresponse_policy:all_succeeded\r\n~0\r\n~0\r\n"
    );
    // A container: no key specs (a set), its subcommands an array.
    let config = c.call(&["COMMAND", "INFO", "config"]);
    assert!(
        config.starts_with("*1\r\n*10\r\n$6\r\nconfig\r\n:-2\r\n~0\r\n:0\r\n:0\r\n:0\r\n~1\r\n+@slow\r\n~0\r\n~0\r\n*"),
        "{config}"
    );
}
