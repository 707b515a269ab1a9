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

// COMMAND DOCS entries, read from Redis 7.0.15 (RESP2 unless named RESP3).
const SET_DOCS: &str =
    "*2\r\n$3\r\nset\r\n*12\r\n$7\r\nsummary\r\n$29\r\nSet the string value of a key\r\n$5\r\nsince\r\n$5\r\n\
    1.0.0\r\n$5\r\ngroup\r\n$6\r\nstring\r\n$10\r\ncomplexity\r\n$4\r\nO(1)\r\n$7\r\nhistory\r\n*4\r\n*2\r\n\
    $6\r\n2.6.12\r\n$44\r\nAdded the `EX`, `PX`, `NX` and `XX` options.\r\n*2\r\n$5\r\n6.0.0\r\n$27\r\n\
    Added the `KEEPTTL` option.\r\n*2\r\n$5\r\n6.2.0\r\n$42\r\n\
    Added the `GET`, `EXAT` and `PXAT` option.\r\n*2\r\n$5\r\n7.0.0\r\n$55\r\n\
    Allowed the `NX` and `GET` options to be used together.\r\n$9\r\narguments\r\n*5\r\n*6\r\n$4\r\nname\r\n\
    $3\r\nkey\r\n$4\r\ntype\r\n$3\r\nkey\r\n$14\r\nkey_spec_index\r\n:0\r\n*4\r\n$4\r\nname\r\n$5\r\n\
    value\r\n$4\r\ntype\r\n$6\r\nstring\r\n*10\r\n$4\r\nname\r\n$9\r\ncondition\r\n$4\r\ntype\r\n$5\r\n\
    oneof\r\n$5\r\nsince\r\n$6\r\n2.6.12\r\n$5\r\nflags\r\n*1\r\n+optional\r\n$9\r\narguments\r\n*2\r\n\
    *6\r\n$4\r\nname\r\n$2\r\nnx\r\n$4\r\ntype\r\n$10\r\npure-token\r\n$5\r\ntoken\r\n$2\r\nNX\r\n*6\r\n\
    $4\r\nname\r\n$2\r\nxx\r\n$4\r\ntype\r\n$10\r\npure-token\r\n$5\r\ntoken\r\n$2\r\nXX\r\n*10\r\n$4\r\n\
    name\r\n$3\r\nget\r\n$4\r\ntype\r\n$10\r\npure-token\r\n$5\r\ntoken\r\n$3\r\nGET\r\n$5\r\nsince\r\n\
    $5\r\n6.2.0\r\n$5\r\nflags\r\n*1\r\n+optional\r\n*8\r\n$4\r\nname\r\n$10\r\nexpiration\r\n$4\r\ntype\r\n\
    $5\r\noneof\r\n$5\r\nflags\r\n*1\r\n+optional\r\n$9\r\narguments\r\n*5\r\n*8\r\n$4\r\nname\r\n$7\r\n\
    seconds\r\n$4\r\ntype\r\n$7\r\ninteger\r\n$5\r\ntoken\r\n$2\r\nEX\r\n$5\r\nsince\r\n$6\r\n2.6.12\r\n\
    *8\r\n$4\r\nname\r\n$12\r\nmilliseconds\r\n$4\r\ntype\r\n$7\r\ninteger\r\n$5\r\ntoken\r\n$2\r\nPX\r\n\
    $5\r\nsince\r\n$6\r\n2.6.12\r\n*8\r\n$4\r\nname\r\n$17\r\nunix-time-seconds\r\n$4\r\ntype\r\n$9\r\n\
    unix-time\r\n$5\r\ntoken\r\n$4\r\nEXAT\r\n$5\r\nsince\r\n$5\r\n6.2.0\r\n*8\r\n$4\r\nname\r\n$22\r\n\
    unix-time-milliseconds\r\n$4\r\ntype\r\n$9\r\nunix-time\r\n$5\r\ntoken\r\n$4\r\nPXAT\r\n$5\r\nsince\r\n\
    $5\r\n6.2.0\r\n*8\r\n$4\r\nname\r\n$7\r\nkeepttl\r\n$4\r\ntype\r\n$10\r\npure-token\r\n$5\r\ntoken\r\n\
    $7\r\nKEEPTTL\r\n$5\r\nsince\r\n$5\r\n6.0.0\r\n";
const ZADD_DOCS: &str = "*2\r\n$4\r\nzadd\r\n*12\r\n$7\r\nsummary\r\n$81\r\n\
    Add one or more members to a sorted set, or update its score if it already exists\r\n$5\r\nsince\r\n\
    $5\r\n1.2.0\r\n$5\r\ngroup\r\n$10\r\nsorted-set\r\n$10\r\ncomplexity\r\n$83\r\n\
    O(log(N)) for each item added, where N is the number of elements in the sorted set.\r\n$7\r\nhistory\r\n\
    *3\r\n*2\r\n$5\r\n2.4.0\r\n$26\r\nAccepts multiple elements.\r\n*2\r\n$5\r\n3.0.2\r\n$46\r\n\
    Added the `XX`, `NX`, `CH` and `INCR` options.\r\n*2\r\n$5\r\n6.2.0\r\n$32\r\n\
    Added the `GT` and `LT` options.\r\n$9\r\narguments\r\n*6\r\n*6\r\n$4\r\nname\r\n$3\r\nkey\r\n$4\r\n\
    type\r\n$3\r\nkey\r\n$14\r\nkey_spec_index\r\n:0\r\n*10\r\n$4\r\nname\r\n$9\r\ncondition\r\n$4\r\n\
    type\r\n$5\r\noneof\r\n$5\r\nsince\r\n$5\r\n3.0.2\r\n$5\r\nflags\r\n*1\r\n+optional\r\n$9\r\n\
    arguments\r\n*2\r\n*6\r\n$4\r\nname\r\n$2\r\nnx\r\n$4\r\ntype\r\n$10\r\npure-token\r\n$5\r\ntoken\r\n\
    $2\r\nNX\r\n*6\r\n$4\r\nname\r\n$2\r\nxx\r\n$4\r\ntype\r\n$10\r\npure-token\r\n$5\r\ntoken\r\n$2\r\n\
    XX\r\n*10\r\n$4\r\nname\r\n$10\r\ncomparison\r\n$4\r\ntype\r\n$5\r\noneof\r\n$5\r\nsince\r\n$5\r\n\
    6.2.0\r\n$5\r\nflags\r\n*1\r\n+optional\r\n$9\r\narguments\r\n*2\r\n*6\r\n$4\r\nname\r\n$2\r\ngt\r\n\
    $4\r\ntype\r\n$10\r\npure-token\r\n$5\r\ntoken\r\n$2\r\nGT\r\n*6\r\n$4\r\nname\r\n$2\r\nlt\r\n$4\r\n\
    type\r\n$10\r\npure-token\r\n$5\r\ntoken\r\n$2\r\nLT\r\n*10\r\n$4\r\nname\r\n$6\r\nchange\r\n$4\r\n\
    type\r\n$10\r\npure-token\r\n$5\r\ntoken\r\n$2\r\nCH\r\n$5\r\nsince\r\n$5\r\n3.0.2\r\n$5\r\nflags\r\n\
    *1\r\n+optional\r\n*10\r\n$4\r\nname\r\n$9\r\nincrement\r\n$4\r\ntype\r\n$10\r\npure-token\r\n$5\r\n\
    token\r\n$4\r\nINCR\r\n$5\r\nsince\r\n$5\r\n3.0.2\r\n$5\r\nflags\r\n*1\r\n+optional\r\n*8\r\n$4\r\n\
    name\r\n$12\r\nscore_member\r\n$4\r\ntype\r\n$5\r\nblock\r\n$5\r\nflags\r\n*1\r\n+multiple\r\n$9\r\n\
    arguments\r\n*2\r\n*4\r\n$4\r\nname\r\n$5\r\nscore\r\n$4\r\ntype\r\n$6\r\ndouble\r\n*4\r\n$4\r\nname\r\n\
    $6\r\nmember\r\n$4\r\ntype\r\n$6\r\nstring\r\n";
const ZRANGE_DOCS: &str =
    "*2\r\n$6\r\nzrange\r\n*12\r\n$7\r\nsummary\r\n$41\r\nReturn a range of members in a sorted set\r\n$5\r\n\
    since\r\n$5\r\n1.2.0\r\n$5\r\ngroup\r\n$10\r\nsorted-set\r\n$10\r\ncomplexity\r\n$104\r\n\
    O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.\r\n\
    $7\r\nhistory\r\n*1\r\n*2\r\n$5\r\n6.2.0\r\n$56\r\n\
    Added the `REV`, `BYSCORE`, `BYLEX` and `LIMIT` options.\r\n$9\r\narguments\r\n*7\r\n*6\r\n$4\r\n\
    name\r\n$3\r\nkey\r\n$4\r\ntype\r\n$3\r\nkey\r\n$14\r\nkey_spec_index\r\n:0\r\n*4\r\n$4\r\nname\r\n\
    $5\r\nstart\r\n$4\r\ntype\r\n$6\r\nstring\r\n*4\r\n$4\r\nname\r\n$4\r\nstop\r\n$4\r\ntype\r\n$6\r\n\
    string\r\n*10\r\n$4\r\nname\r\n$6\r\nsortby\r\n$4\r\ntype\r\n$5\r\noneof\r\n$5\r\nsince\r\n$5\r\n\
    6.2.0\r\n$5\r\nflags\r\n*1\r\n+optional\r\n$9\r\narguments\r\n*2\r\n*6\r\n$4\r\nname\r\n$7\r\n\
    byscore\r\n$4\r\ntype\r\n$10\r\npure-token\r\n$5\r\ntoken\r\n$7\r\nBYSCORE\r\n*6\r\n$4\r\nname\r\n$5\r\n\
    bylex\r\n$4\r\ntype\r\n$10\r\npure-token\r\n$5\r\ntoken\r\n$5\r\nBYLEX\r\n*10\r\n$4\r\nname\r\n$3\r\n\
    rev\r\n$4\r\ntype\r\n$10\r\npure-token\r\n$5\r\ntoken\r\n$3\r\nREV\r\n$5\r\nsince\r\n$5\r\n6.2.0\r\n\
    $5\r\nflags\r\n*1\r\n+optional\r\n*12\r\n$4\r\nname\r\n$12\r\noffset_count\r\n$4\r\ntype\r\n$5\r\n\
    block\r\n$5\r\ntoken\r\n$5\r\nLIMIT\r\n$5\r\nsince\r\n$5\r\n6.2.0\r\n$5\r\nflags\r\n*1\r\n+optional\r\n\
    $9\r\narguments\r\n*2\r\n*4\r\n$4\r\nname\r\n$6\r\noffset\r\n$4\r\ntype\r\n$7\r\ninteger\r\n*4\r\n$4\r\n\
    name\r\n$5\r\ncount\r\n$4\r\ntype\r\n$7\r\ninteger\r\n*8\r\n$4\r\nname\r\n$10\r\nwithscores\r\n$4\r\n\
    type\r\n$10\r\npure-token\r\n$5\r\ntoken\r\n$10\r\nWITHSCORES\r\n$5\r\nflags\r\n*1\r\n+optional\r\n";
const LPOS_DOCS: &str = "*2\r\n$4\r\nlpos\r\n*10\r\n$7\r\nsummary\r\n$47\r\nReturn the index of matching elements on a list\r\n\
    $5\r\nsince\r\n$5\r\n6.0.6\r\n$5\r\ngroup\r\n$4\r\nlist\r\n$10\r\ncomplexity\r\n$217\r\n\
    O(N) where N is the number of elements in the list, for the average case. When searching for elements near the head or the tail of the list, or when the MAXLEN option is provided, the command may run in constant time.\r\n\
    $9\r\narguments\r\n*5\r\n*6\r\n$4\r\nname\r\n$3\r\nkey\r\n$4\r\ntype\r\n$3\r\nkey\r\n$14\r\n\
    key_spec_index\r\n:0\r\n*4\r\n$4\r\nname\r\n$7\r\nelement\r\n$4\r\ntype\r\n$6\r\nstring\r\n*8\r\n$4\r\n\
    name\r\n$4\r\nrank\r\n$4\r\ntype\r\n$7\r\ninteger\r\n$5\r\ntoken\r\n$4\r\nRANK\r\n$5\r\nflags\r\n*1\r\n\
    +optional\r\n*8\r\n$4\r\nname\r\n$11\r\nnum-matches\r\n$4\r\ntype\r\n$7\r\ninteger\r\n$5\r\ntoken\r\n\
    $5\r\nCOUNT\r\n$5\r\nflags\r\n*1\r\n+optional\r\n*8\r\n$4\r\nname\r\n$3\r\nlen\r\n$4\r\ntype\r\n$7\r\n\
    integer\r\n$5\r\ntoken\r\n$6\r\nMAXLEN\r\n$5\r\nflags\r\n*1\r\n+optional\r\n";
const HRANDFIELD_DOCS: &str = "*2\r\n$10\r\nhrandfield\r\n*10\r\n$7\r\nsummary\r\n$45\r\n\
    Get one or multiple random fields from a hash\r\n$5\r\nsince\r\n$5\r\n6.2.0\r\n$5\r\ngroup\r\n$4\r\n\
    hash\r\n$10\r\ncomplexity\r\n$45\r\nO(N) where N is the number of fields returned\r\n$9\r\narguments\r\n\
    *2\r\n*6\r\n$4\r\nname\r\n$3\r\nkey\r\n$4\r\ntype\r\n$3\r\nkey\r\n$14\r\nkey_spec_index\r\n:0\r\n*8\r\n\
    $4\r\nname\r\n$7\r\noptions\r\n$4\r\ntype\r\n$5\r\nblock\r\n$5\r\nflags\r\n*1\r\n+optional\r\n$9\r\n\
    arguments\r\n*2\r\n*4\r\n$4\r\nname\r\n$5\r\ncount\r\n$4\r\ntype\r\n$7\r\ninteger\r\n*8\r\n$4\r\n\
    name\r\n$10\r\nwithvalues\r\n$4\r\ntype\r\n$10\r\npure-token\r\n$5\r\ntoken\r\n$10\r\nWITHVALUES\r\n\
    $5\r\nflags\r\n*1\r\n+optional\r\n";
const GETSET_DOCS: &str = "*2\r\n$6\r\ngetset\r\n*16\r\n$7\r\nsummary\r\n$54\r\n\
    Set the string value of a key and return its old value\r\n$5\r\nsince\r\n$5\r\n1.0.0\r\n$5\r\ngroup\r\n\
    $6\r\nstring\r\n$10\r\ncomplexity\r\n$4\r\nO(1)\r\n$9\r\ndoc_flags\r\n*1\r\n+deprecated\r\n$16\r\n\
    deprecated_since\r\n$5\r\n6.2.0\r\n$11\r\nreplaced_by\r\n$30\r\n`SET` with the `!GET` argument\r\n$9\r\n\
    arguments\r\n*2\r\n*6\r\n$4\r\nname\r\n$3\r\nkey\r\n$4\r\ntype\r\n$3\r\nkey\r\n$14\r\nkey_spec_index\r\n\
    :0\r\n*4\r\n$4\r\nname\r\n$5\r\nvalue\r\n$4\r\ntype\r\n$6\r\nstring\r\n";
const CLIENT_KILL_DOCS: &str =
    "*2\r\n$11\r\nclient|kill\r\n*12\r\n$7\r\nsummary\r\n$31\r\nKill the connection of a client\r\n$5\r\n\
    since\r\n$5\r\n2.4.0\r\n$5\r\ngroup\r\n$10\r\nconnection\r\n$10\r\ncomplexity\r\n$48\r\n\
    O(N) where N is the number of client connections\r\n$7\r\nhistory\r\n*5\r\n*2\r\n$6\r\n2.8.12\r\n$24\r\n\
    Added new filter format.\r\n*2\r\n$6\r\n2.8.12\r\n$12\r\n`ID` option.\r\n*2\r\n$5\r\n3.2.0\r\n$41\r\n\
    Added `master` type in for `TYPE` option.\r\n*2\r\n$5\r\n5.0.0\r\n$91\r\n\
    Replaced `slave` `TYPE` with `replica`. `slave` still supported for backward compatibility.\r\n*2\r\n\
    $5\r\n6.2.0\r\n$15\r\n`LADDR` option.\r\n$9\r\narguments\r\n*1\r\n*6\r\n$4\r\nname\r\n$6\r\nfilter\r\n\
    $4\r\ntype\r\n$5\r\noneof\r\n$9\r\narguments\r\n*2\r\n*6\r\n$4\r\nname\r\n$7\r\nip:port\r\n$4\r\n\
    type\r\n$6\r\nstring\r\n$16\r\ndeprecated_since\r\n$6\r\n2.8.12\r\n*8\r\n$4\r\nname\r\n$10\r\n\
    new-format\r\n$4\r\ntype\r\n$5\r\noneof\r\n$5\r\nflags\r\n*1\r\n+multiple\r\n$9\r\narguments\r\n*6\r\n\
    *10\r\n$4\r\nname\r\n$9\r\nclient-id\r\n$4\r\ntype\r\n$7\r\ninteger\r\n$5\r\ntoken\r\n$2\r\nID\r\n$5\r\n\
    since\r\n$6\r\n2.8.12\r\n$5\r\nflags\r\n*1\r\n+optional\r\n*12\r\n$4\r\nname\r\n$26\r\n\
    normal_master_slave_pubsub\r\n$4\r\ntype\r\n$5\r\noneof\r\n$5\r\ntoken\r\n$4\r\nTYPE\r\n$5\r\nsince\r\n\
    $6\r\n2.8.12\r\n$5\r\nflags\r\n*1\r\n+optional\r\n$9\r\narguments\r\n*5\r\n*6\r\n$4\r\nname\r\n$6\r\n\
    normal\r\n$4\r\ntype\r\n$10\r\npure-token\r\n$5\r\ntoken\r\n$6\r\nNORMAL\r\n*8\r\n$4\r\nname\r\n$6\r\n\
    master\r\n$4\r\ntype\r\n$10\r\npure-token\r\n$5\r\ntoken\r\n$6\r\nMASTER\r\n$5\r\nsince\r\n$5\r\n\
    3.2.0\r\n*6\r\n$4\r\nname\r\n$5\r\nslave\r\n$4\r\ntype\r\n$10\r\npure-token\r\n$5\r\ntoken\r\n$5\r\n\
    SLAVE\r\n*8\r\n$4\r\nname\r\n$7\r\nreplica\r\n$4\r\ntype\r\n$10\r\npure-token\r\n$5\r\ntoken\r\n$7\r\n\
    REPLICA\r\n$5\r\nsince\r\n$5\r\n5.0.0\r\n*6\r\n$4\r\nname\r\n$6\r\npubsub\r\n$4\r\ntype\r\n$10\r\n\
    pure-token\r\n$5\r\ntoken\r\n$6\r\nPUBSUB\r\n*8\r\n$4\r\nname\r\n$8\r\nusername\r\n$4\r\ntype\r\n$6\r\n\
    string\r\n$5\r\ntoken\r\n$4\r\nUSER\r\n$5\r\nflags\r\n*1\r\n+optional\r\n*8\r\n$4\r\nname\r\n$7\r\n\
    ip:port\r\n$4\r\ntype\r\n$6\r\nstring\r\n$5\r\ntoken\r\n$4\r\nADDR\r\n$5\r\nflags\r\n*1\r\n+optional\r\n\
    *10\r\n$4\r\nname\r\n$7\r\nip:port\r\n$4\r\ntype\r\n$6\r\nstring\r\n$5\r\ntoken\r\n$5\r\nLADDR\r\n$5\r\n\
    since\r\n$5\r\n6.2.0\r\n$5\r\nflags\r\n*1\r\n+optional\r\n*8\r\n$4\r\nname\r\n$6\r\nyes/no\r\n$4\r\n\
    type\r\n$6\r\nstring\r\n$5\r\ntoken\r\n$6\r\nSKIPME\r\n$5\r\nflags\r\n*1\r\n+optional\r\n";
const OBJECT_DOCS_HEAD: &str =
    "*2\r\n$6\r\nobject\r\n*10\r\n$7\r\nsummary\r\n$45\r\nA container for object introspection commands\r\n\
    $5\r\nsince\r\n$5\r\n2.2.3\r\n$5\r\ngroup\r\n$7\r\ngeneric\r\n$10\r\ncomplexity\r\n$22\r\n\
    Depends on subcommand.\r\n$11\r\nsubcommands\r\n*10\r\n";
const OBJECT_ENCODING_DOCS: &str = "$15\r\nobject|encoding\r\n*10\r\n$7\r\nsummary\r\n$47\r\n\
    Inspect the internal encoding of a Redis object\r\n$5\r\nsince\r\n$5\r\n2.2.3\r\n$5\r\ngroup\r\n$7\r\n\
    generic\r\n$10\r\ncomplexity\r\n$4\r\nO(1)\r\n$9\r\narguments\r\n*1\r\n*6\r\n$4\r\nname\r\n$3\r\nkey\r\n\
    $4\r\ntype\r\n$3\r\nkey\r\n$14\r\nkey_spec_index\r\n:0\r\n";
const OBJECT_FREQ_DOCS: &str = "$11\r\nobject|freq\r\n*10\r\n$7\r\nsummary\r\n$62\r\n\
    Get the logarithmic access frequency counter of a Redis object\r\n$5\r\nsince\r\n$5\r\n4.0.0\r\n$5\r\n\
    group\r\n$7\r\ngeneric\r\n$10\r\ncomplexity\r\n$4\r\nO(1)\r\n$9\r\narguments\r\n*1\r\n*6\r\n$4\r\n\
    name\r\n$3\r\nkey\r\n$4\r\ntype\r\n$3\r\nkey\r\n$14\r\nkey_spec_index\r\n:0\r\n";
const OBJECT_HELP_DOCS: &str = "$11\r\nobject|help\r\n*8\r\n$7\r\nsummary\r\n$49\r\n\
    Show helpful text about the different subcommands\r\n$5\r\nsince\r\n$5\r\n6.2.0\r\n$5\r\ngroup\r\n$7\r\n\
    generic\r\n$10\r\ncomplexity\r\n$4\r\nO(1)\r\n";
const OBJECT_IDLETIME_DOCS: &str = "$15\r\nobject|idletime\r\n*10\r\n$7\r\nsummary\r\n$51\r\n\
    Get the time since a Redis object was last accessed\r\n$5\r\nsince\r\n$5\r\n2.2.3\r\n$5\r\ngroup\r\n\
    $7\r\ngeneric\r\n$10\r\ncomplexity\r\n$4\r\nO(1)\r\n$9\r\narguments\r\n*1\r\n*6\r\n$4\r\nname\r\n$3\r\n\
    key\r\n$4\r\ntype\r\n$3\r\nkey\r\n$14\r\nkey_spec_index\r\n:0\r\n";
const OBJECT_REFCOUNT_DOCS: &str = "$15\r\nobject|refcount\r\n*10\r\n$7\r\nsummary\r\n$52\r\n\
    Get the number of references to the value of the key\r\n$5\r\nsince\r\n$5\r\n2.2.3\r\n$5\r\ngroup\r\n\
    $7\r\ngeneric\r\n$10\r\ncomplexity\r\n$4\r\nO(1)\r\n$9\r\narguments\r\n*1\r\n*6\r\n$4\r\nname\r\n$3\r\n\
    key\r\n$4\r\ntype\r\n$3\r\nkey\r\n$14\r\nkey_spec_index\r\n:0\r\n";
const ZRANGE_DOCS_RESP3: &str =
    "%1\r\n$6\r\nzrange\r\n%6\r\n$7\r\nsummary\r\n$41\r\nReturn a range of members in a sorted set\r\n$5\r\n\
    since\r\n$5\r\n1.2.0\r\n$5\r\ngroup\r\n$10\r\nsorted-set\r\n$10\r\ncomplexity\r\n$104\r\n\
    O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.\r\n\
    $7\r\nhistory\r\n~1\r\n*2\r\n$5\r\n6.2.0\r\n$56\r\n\
    Added the `REV`, `BYSCORE`, `BYLEX` and `LIMIT` options.\r\n$9\r\narguments\r\n*7\r\n%3\r\n$4\r\n\
    name\r\n$3\r\nkey\r\n$4\r\ntype\r\n$3\r\nkey\r\n$14\r\nkey_spec_index\r\n:0\r\n%2\r\n$4\r\nname\r\n\
    $5\r\nstart\r\n$4\r\ntype\r\n$6\r\nstring\r\n%2\r\n$4\r\nname\r\n$4\r\nstop\r\n$4\r\ntype\r\n$6\r\n\
    string\r\n%5\r\n$4\r\nname\r\n$6\r\nsortby\r\n$4\r\ntype\r\n$5\r\noneof\r\n$5\r\nsince\r\n$5\r\n\
    6.2.0\r\n$5\r\nflags\r\n~1\r\n+optional\r\n$9\r\narguments\r\n*2\r\n%3\r\n$4\r\nname\r\n$7\r\n\
    byscore\r\n$4\r\ntype\r\n$10\r\npure-token\r\n$5\r\ntoken\r\n$7\r\nBYSCORE\r\n%3\r\n$4\r\nname\r\n$5\r\n\
    bylex\r\n$4\r\ntype\r\n$10\r\npure-token\r\n$5\r\ntoken\r\n$5\r\nBYLEX\r\n%5\r\n$4\r\nname\r\n$3\r\n\
    rev\r\n$4\r\ntype\r\n$10\r\npure-token\r\n$5\r\ntoken\r\n$3\r\nREV\r\n$5\r\nsince\r\n$5\r\n6.2.0\r\n\
    $5\r\nflags\r\n~1\r\n+optional\r\n%6\r\n$4\r\nname\r\n$12\r\noffset_count\r\n$4\r\ntype\r\n$5\r\n\
    block\r\n$5\r\ntoken\r\n$5\r\nLIMIT\r\n$5\r\nsince\r\n$5\r\n6.2.0\r\n$5\r\nflags\r\n~1\r\n+optional\r\n\
    $9\r\narguments\r\n*2\r\n%2\r\n$4\r\nname\r\n$6\r\noffset\r\n$4\r\ntype\r\n$7\r\ninteger\r\n%2\r\n$4\r\n\
    name\r\n$5\r\ncount\r\n$4\r\ntype\r\n$7\r\ninteger\r\n%4\r\n$4\r\nname\r\n$10\r\nwithscores\r\n$4\r\n\
    type\r\n$10\r\npure-token\r\n$5\r\ntoken\r\n$10\r\nWITHSCORES\r\n$5\r\nflags\r\n~1\r\n+optional\r\n";

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

/// COMMAND DOCS's entries, byte for byte: summary, since, group,
/// complexity, doc flags, deprecation, history and the arguments tree.
#[test]
fn command_docs_exact() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    for (name, want) in [
        ("set", SET_DOCS),
        ("zadd", ZADD_DOCS),
        ("ZRANGE", ZRANGE_DOCS),
        ("lpos", LPOS_DOCS),
        ("hrandfield", HRANDFIELD_DOCS),
        ("getset", GETSET_DOCS),
        ("client|kill", CLIENT_KILL_DOCS),
    ] {
        assert_eq!(c.call(&["COMMAND", "DOCS", name]), want, "{name}");
    }
    // Several at once: a map of them, in the order asked; unknown names left out.
    assert_eq!(
        c.call(&["COMMAND", "DOCS", "lpos", "nosuch", "getset"]),
        format!("*4\r\n{}{}", &LPOS_DOCS[4..], &GETSET_DOCS[4..])
    );
    assert!(c.call(&["HELLO", "3"]).starts_with('%'));
    assert_eq!(c.call(&["COMMAND", "DOCS", "zrange"]), ZRANGE_DOCS_RESP3);
}

/// A container's entry lists its subcommands' entries (in Redis, in its
/// dict's order, which varies from one process to the next).
#[test]
fn command_docs_of_a_container() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let docs = c.call(&["COMMAND", "DOCS", "object"]);
    let subs = [OBJECT_ENCODING_DOCS, OBJECT_FREQ_DOCS, OBJECT_HELP_DOCS, OBJECT_IDLETIME_DOCS, OBJECT_REFCOUNT_DOCS];
    assert!(docs.starts_with(OBJECT_DOCS_HEAD), "{docs}");
    assert_eq!(docs.len(), OBJECT_DOCS_HEAD.len() + subs.iter().map(|s| s.len()).sum::<usize>(), "{docs}");
    for s in subs {
        assert!(docs[OBJECT_DOCS_HEAD.len()..].contains(s), "{s}: {docs}");
        let name = s.split("\r\n").nth(1).unwrap();
        assert_eq!(c.call(&["COMMAND", "DOCS", name]), format!("*2\r\n{s}"));
    }
    let sub = c.call(&["COMMAND", "DOCS", "client|kill"]);
    assert!(sub.starts_with("*2\r\n$11\r\nclient|kill\r\n"), "{sub}");
}

/// The commands and subcommands Redis 7.0.15 documents without
/// `arguments` (all of them, served or not).
const NO_ARGUMENTS: [&str; 90] = [
    "acl",
    "acl|help",
    "acl|list",
    "acl|load",
    "acl|save",
    "acl|users",
    "acl|whoami",
    "asking",
    "bgrewriteaof",
    "client",
    "client|getname",
    "client|getredir",
    "client|help",
    "client|id",
    "client|info",
    "client|trackinginfo",
    "client|unpause",
    "cluster",
    "cluster|bumpepoch",
    "cluster|flushslots",
    "cluster|help",
    "cluster|info",
    "cluster|links",
    "cluster|myid",
    "cluster|nodes",
    "cluster|saveconfig",
    "cluster|shards",
    "cluster|slots",
    "command",
    "command|count",
    "command|getkeys",
    "command|getkeysandflags",
    "command|help",
    "config",
    "config|help",
    "config|resetstat",
    "config|rewrite",
    "dbsize",
    "debug",
    "discard",
    "exec",
    "function",
    "function|dump",
    "function|help",
    "function|kill",
    "function|stats",
    "lastsave",
    "latency",
    "latency|doctor",
    "latency|help",
    "latency|latest",
    "memory",
    "memory|doctor",
    "memory|help",
    "memory|malloc-stats",
    "memory|purge",
    "memory|stats",
    "module",
    "module|help",
    "module|list",
    "monitor",
    "multi",
    "object",
    "object|help",
    "pfselftest",
    "pubsub",
    "pubsub|help",
    "pubsub|numpat",
    "quit",
    "randomkey",
    "readonly",
    "readwrite",
    "replconf",
    "reset",
    "role",
    "save",
    "script",
    "script|help",
    "script|kill",
    "slowlog",
    "slowlog|help",
    "slowlog|len",
    "slowlog|reset",
    "sync",
    "time",
    "unwatch",
    "xgroup",
    "xgroup|help",
    "xinfo",
    "xinfo|help",
];
/// Served, but not in Redis 7.0 (7.2's): Redis 7.0 has no docs to match.
const NOT_IN_REDIS_7_0: [&str; 2] = ["client|no-touch", "client|setinfo"];

/// Every command and subcommand COMMAND LIST names has a COMMAND DOCS
/// entry that parses, with summary, since and group, and `arguments`
/// where Redis 7.0.15 documents them.
#[test]
fn command_docs_of_every_command() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let list = call(&mut c, &["COMMAND", "LIST"]);
    let names: Vec<&str> = list.array().iter().map(V::bulk).collect();
    assert!(names.len() > 200, "{}", names.len());
    for name in names {
        let docs = call(&mut c, &["COMMAND", "DOCS", name]);
        let [n, fields] = docs.array() else { panic!("{name}: {docs:?}") };
        assert_eq!(n.bulk(), name);
        let fields = fields.array();
        let keys: Vec<&str> = fields.iter().step_by(2).map(V::bulk).collect();
        assert_eq!(keys[..3], ["summary", "since", "group"], "{name}");
        let args = keys.iter().position(|k| *k == "arguments").map(|i| fields[2 * i + 1].array());
        if NOT_IN_REDIS_7_0.contains(&name) {
            continue;
        }
        if NO_ARGUMENTS.contains(&name) {
            assert!(args.is_none(), "{name}: {docs:?}");
        } else {
            assert!(args.is_some_and(|a| !a.is_empty()), "{name}: {docs:?}");
        }
    }
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
    // Key specs flagged variable_flags, resolved by the arguments as
    // Redis's key finders resolve them (setGetKeys, bitfieldGetKeys).
    let flags = |f: &[&str]| {
        format!("*1\r\n*2\r\n$1\r\nk\r\n*{}\r\n{}", f.len(), f.iter().map(|f| format!("+{f}\r\n")).collect::<String>())
    };
    for (cmd, want) in [
        (&["set", "k", "v"][..], &["OW", "update"][..]),
        (&["set", "k", "v", "EX", "10"], &["OW", "update"]),
        (&["set", "k", "v", "get"], &["RW", "access", "update"]),
        (&["bitfield", "k"], &["RO", "access"]),
        (&["bitfield", "k", "get", "u8", "0", "overflow", "wrap"], &["RO", "access"]),
        (&["bitfield", "k", "get", "u8", "0", "set", "u8", "0", "1"], &["RW", "access", "update"]),
        (&["bitfield", "k", "get", "u8"], &["RW", "access", "update"]),
    ] {
        let mut args = vec!["COMMAND", "GETKEYSANDFLAGS"];
        args.extend_from_slice(cmd);
        assert_eq!(c.call(&args), flags(want), "{cmd:?}");
    }
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
