//! The C libraries Redis 7.0 loads into scripts, black-box through EVAL:
//! `cjson`, `cmsgpack`, `bit` and `struct` (crate amalgam-script,
//! `src/libs/`). Each case is a script and the exact reply redis-server
//! 7.0.15 gives (its error replies name the script's SHA-1 and line, so
//! they are stated whole). CI runs this file against redis-server too
//! (`AMALGAM_TEST_RESP_ADDR`). The libraries' own unit tests hold many
//! more cases.
mod common;
use common::*;
use std::io::{Read, Write};

/// (script, Redis 7.0.15's reply to `EVAL script 0`).
const CASES: &[(&str, &[u8])] = &[
    ("return cjson.encode({1,2,{a=1}})", b"$13\r\n[1,2,{\"a\":1}]\r\n"),
    ("return cjson.encode({})", b"$2\r\n{}\r\n"),
    ("return cjson.encode({[1]=1,[3]=3})", b"$10\r\n[1,null,3]\r\n"),
    ("return cjson.encode('a/b\"c')", b"$9\r\n\"a\\/b\\\"c\"\r\n"),
    ("return cjson.encode(3.14159265358979)", b"$15\r\n3.1415926535898\r\n"),
    ("return cjson.decode('[1,2,{\"a\":\"x\"}]')[3].a", b"$1\r\nx\r\n"),
    ("return cjson.decode('{\"a\":null}').a == cjson.null and 1 or 0", b":1\r\n"),
    ("return cjson.encode(cjson.decode('{\"k\":[true,false,null,1.5]}'))", b"$27\r\n{\"k\":[true,false,null,1.5]}\r\n"),
    ("return cjson.decode('x')", b"-ERR user_script:1: Expected value but found invalid token at character 1 script: 5f58dd5cefb3eb0313af3534f36be4b83e79ae80, on @user_script:1.\r\n"),
    ("return cjson.encode(function() end)", b"-ERR user_script:1: Cannot serialise function: type not supported script: c6600573aa08cdf0af5da6e0ef682db69a3acc00, on @user_script:1.\r\n"),
    ("return cmsgpack.pack({1,2,'a',{x=1},1.5,-1,300,true})", b"$19\r\n\x98\x01\x02\xa1a\x81\xa1x\x01\xca?\xc0\x00\x00\xff\xcd\x01,\xc3\r\n"),
    ("return cmsgpack.unpack(cmsgpack.pack({1,2,3}))", b"*3\r\n:1\r\n:2\r\n:3\r\n"),
    ("return {cmsgpack.unpack(cmsgpack.pack(1, 'two', 3.5))}", b"*3\r\n:1\r\n$3\r\ntwo\r\n:3\r\n"),
    ("return cmsgpack.unpack('\\193')", b"-ERR user_script:1: Bad data format in input. script: dc135bd7bc2955014f03280e151acf74360378e7, on @user_script:1.\r\n"),
    ("return bit.tohex(bit.bnot(0))", b"$8\r\nffffffff\r\n"),
    ("return bit.band(0xff, 0x0f, 0x3)", b":3\r\n"),
    ("return bit.tobit(2^32 + 1)", b":1\r\n"),
    ("return bit.lshift(1, 31)", b":-2147483648\r\n"),
    ("return bit.tohex(255, -4)", b"$4\r\n00FF\r\n"),
    ("return bit.band()", b"-ERR user_script:1: bad argument #1 to 'band' (number expected, got no value) script: 5cf53f885283a4f44a8fe7ad7e7fccaed4113e62, on @user_script:1.\r\n"),
    ("return struct.pack('>I2', 258)", b"$2\r\n\x01\x02\r\n"),
    ("return {struct.unpack('<i4 h', struct.pack('<i4 h', -2, 7))}", b"*3\r\n:-2\r\n:7\r\n:7\r\n"),
    ("return struct.size('>i4 d b')", b":13\r\n"),
    ("return struct.pack('q', 1)", b"-ERR user_script:1: bad argument #1 to 'pack' (invalid format option 'q') script: 49599a2466f241bd45a2bd4f631df3a1a1ec9790, on @user_script:1.\r\n"),
    ("return struct.unpack('s', 'abc')", b"-ERR user_script:1: unfinished string in data script: 3c8c11118da3ea1fd285856434f3f28c04cc4a2a, on @user_script:1.\r\n"),
];

#[test]
fn the_libraries_answer_as_redis_s() {
    let Some(server) = resp_server() else { return };
    let mut s = server.resp_connect();
    for (body, want) in CASES {
        let req = common::resp::encode(&[b"EVAL", body.as_bytes(), b"0"]);
        s.write_all(&req).expect("send");
        let mut got = Vec::new();
        let mut b = [0u8; 4096];
        // Bounded by the read timeout: one reply.
        while common::resp::reply_len(&got).is_none() {
            let n = s.read(&mut b).expect("a reply");
            assert!(n > 0, "closed during {body:?}");
            got.extend_from_slice(&b[..n]);
        }
        assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(want), "EVAL {body:?}");
    }
}
