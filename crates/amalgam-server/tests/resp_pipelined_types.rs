//! Collection commands pipelined with SETs, GETs and each other in one
//! write: the server runs a run of single-key collection commands (and
//! SETs) after prefetching their keys (server `resp.rs`, `run_sets`), so
//! this checks every reply comes back in order and every command saw the
//! writes before it — including lists that cross into the large form on
//! the way (a compact list past 1 KiB written again, server
//! amalgam-commands `typed.rs`). Runs against amalgam by default and against Debian's
//! redis-server 7 with `AMALGAM_TEST_RESP_ADDR` (`common/mod.rs`).
mod common;
use common::resp::*;
use common::*;

/// A server of two workers when it is amalgam; Redis when one is named.
fn server() -> Option<Server> {
    resp_private(&["-t", "2"]).or_else(resp_server)
}

#[test]
fn a_mixed_pipeline_answers_in_order() {
    let Some(server) = server() else { return };
    let mut c = Resp::new(&server);
    let (s, l, h, st, z) = (key("ps"), key("pl"), key("ph"), key("pst"), key("pz"));
    let cmds: Vec<Vec<&str>> = vec![
        vec!["SET", &s, "1"],
        vec!["LPUSH", &l, "a"],
        vec!["LPUSH", &l, "b"],
        vec!["HSET", &h, "f", "v"],
        vec!["GET", &s],
        vec!["RPUSH", &l, "c"],
        vec!["LRANGE", &l, "0", "-1"],
        vec!["HGET", &h, "f"],
        vec!["SET", &s, "2"],
        vec!["SADD", &st, "x", "y"],
        vec!["SISMEMBER", &st, "y"],
        vec!["ZADD", &z, "1.5", "m"],
        vec!["ZSCORE", &z, "m"],
        vec!["LPOP", &l],
        vec!["INCR", &s],
        vec!["HSET", &s, "f", "v"],
        vec!["LLEN", &l],
        vec!["GET", &s],
    ];
    let mut bytes = Vec::new();
    for cmd in &cmds {
        let args: Vec<&[u8]> = cmd.iter().map(|a| a.as_bytes()).collect();
        bytes.extend_from_slice(&encode(&args));
    }
    c.send_raw(&bytes);
    let want = [
        "+OK\r\n".to_string(),
        int(1),
        int(2),
        int(1),
        bulk("1"),
        int(3),
        "*3\r\n$1\r\nb\r\n$1\r\na\r\n$1\r\nc\r\n".to_string(),
        bulk("v"),
        "+OK\r\n".to_string(),
        int(2),
        int(1),
        int(1),
        bulk("1.5"),
        bulk("b"),
        int(3),
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n".to_string(),
        int(2),
        bulk("3"),
    ];
    for (i, w) in want.iter().enumerate() {
        assert_eq!(&c.reply(), w, "reply {i} ({:?})", cmds[i]);
    }
}

/// Lists pushed past 1 KiB in one pipeline per round, many keys
/// interleaved, popped at both ends in between: every list ends with its
/// items in push order, whatever form it is in by then.
#[test]
fn lists_growing_through_pipelines_keep_their_items() {
    let Some(server) = server() else { return };
    let mut c = Resp::new(&server);
    let keys: Vec<String> = (0..8).map(|i| key(&format!("grow{i}"))).collect();
    let item = |k: usize, j: usize| format!("{k:02}-{j:04}-{}", "i".repeat(24));
    let (mut front, mut back) = (vec![Vec::new(); keys.len()], vec![Vec::new(); keys.len()]);
    // Bounded: 12 rounds of 8 keys x 8 pushes (~3 KiB per list at the end).
    for round in 0..12 {
        let mut bytes = Vec::new();
        let mut n = 0;
        for j in 0..8 {
            for (k, name) in keys.iter().enumerate() {
                let v = item(k, round * 8 + j);
                let cmd: &[u8] = if j % 2 == 0 { b"LPUSH" } else { b"RPUSH" };
                bytes.extend_from_slice(&encode(&[cmd, name.as_bytes(), v.as_bytes()]));
                if j % 2 == 0 {
                    front[k].push(v);
                } else {
                    back[k].push(v);
                }
                n += 1;
            }
        }
        c.send_raw(&bytes);
        for _ in 0..n {
            assert!(c.reply().starts_with(':'));
        }
        if round % 3 == 2 {
            // A pop at each end of every list, pipelined.
            let mut bytes = Vec::new();
            for name in &keys {
                bytes.extend_from_slice(&encode(&[b"LPOP", name.as_bytes()]));
                bytes.extend_from_slice(&encode(&[b"RPOP", name.as_bytes()]));
            }
            c.send_raw(&bytes);
            for k in 0..keys.len() {
                assert_eq!(c.reply(), bulk(&front[k].pop().expect("pushed")));
                assert_eq!(c.reply(), bulk(&back[k].pop().expect("pushed")));
            }
        }
    }
    for (k, name) in keys.iter().enumerate() {
        let want: Vec<&str> = front[k].iter().rev().chain(back[k].iter()).map(String::as_str).collect();
        let mut s = format!("*{}\r\n", want.len());
        for w in &want {
            s.push_str(&bulk(w));
        }
        assert_eq!(c.call(&["LRANGE", name, "0", "-1"]), s, "list {k}");
        assert_eq!(c.call(&["LLEN", name]), int(want.len() as i64));
    }
}
