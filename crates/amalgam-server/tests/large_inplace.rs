//! Large data blocks received in place over memcached's protocol (issue
//! 18 item 5, server `inplace.rs`): set, add, replace and cas of a value
//! of a megabyte or more store it straight from the socket, publish it
//! only when whole, and answer as memcached does. Passes against
//! memcached 1.6.18 too (AMALGAM_TEST_BIN=/usr/bin/memcached), except the
//! memory accounting, amalgam's.

mod common;

use common::*;
use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

/// A value of `len` bytes that is not one byte repeated.
fn value(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3] ^ seed).collect()
}

/// Long enough to be received in place (1 MiB or more).
const LEN: usize = 3 << 20;

const FLAGS: [&str; 6] = ["-I", "16m", "-m", "128", "-t", "1"];

/// `line` (a storage command for `v`) and `v`, sent in two halves; the
/// server's answer.
fn store(s: &mut TcpStream, line: &str, v: &[u8]) -> String {
    s.write_all(format!("{line}\r\n").as_bytes()).unwrap();
    s.write_all(&v[..v.len() / 2]).unwrap();
    s.write_all(&v[v.len() / 2..]).unwrap();
    common::line(s, b"\r\n")
}

/// `gets k`: (flags, cas, value) or None.
fn gets(s: &mut TcpStream, k: &str) -> Option<(u32, u64, Vec<u8>)> {
    send(s, format!("gets {k}\r\n").as_bytes());
    let reply = read_until(s, b"END\r\n");
    if reply == b"END\r\n" {
        return None;
    }
    let nl = reply.iter().position(|&b| b == b'\n').expect("a VALUE line");
    let head = String::from_utf8_lossy(&reply[..nl]).into_owned();
    let w: Vec<&str> = head.split_whitespace().collect();
    assert_eq!(w[0], "VALUE", "{head}");
    let (flags, len, cas) = (w[2].parse().unwrap(), w[3].parse::<usize>().unwrap(), w[4].parse().unwrap());
    let body = &reply[nl + 1..];
    assert_eq!(body.len(), len + 7, "{head}: the value, then END");
    Some((flags, cas, body[..len].to_vec()))
}

#[test]
fn a_large_set_arriving_in_pieces_is_stored_whole_while_others_are_served() {
    let Some(server) = Server::with_flags(&FLAGS) else { return };
    let mut c = server.connect();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let k = key("mc-inplace");
    assert_eq!(line(&mut c, format!("set {k} 5 0 3\r\nold\r\n").as_bytes()), "STORED\r\n");
    let v = value(LEN, 1);
    let mut slow = server.connect();
    slow.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    slow.write_all(format!("set {k} 7 0 {LEN}\r\n").as_bytes()).unwrap();
    slow.write_all(&v[..LEN / 2]).unwrap();
    // One worker: the other client is served, and sees the old value.
    for _ in 0..3 {
        assert_eq!(gets(&mut c, &k).map(|(f, _, v)| (f, v)), Some((5, b"old".to_vec())));
    }
    slow.write_all(&v[LEN / 2..]).unwrap();
    assert_eq!(gets(&mut c, &k).map(|(f, _, v)| (f, v)), Some((5, b"old".to_vec())));
    assert_eq!(line(&mut slow, b"\r\n"), "STORED\r\n");
    let (flags, _, got) = gets(&mut c, &k).expect("stored");
    assert_eq!(flags, 7);
    assert!(got == v, "the value, byte for byte");
    assert_eq!(line(&mut c, format!("delete {k}\r\n").as_bytes()), "DELETED\r\n");
}

#[test]
fn add_replace_and_cas_of_large_values_answer_as_memcached() {
    let Some(server) = Server::with_flags(&FLAGS) else { return };
    let mut c = server.connect();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let k = key("mc-inplace-ops");
    assert_eq!(store(&mut c, &format!("replace {k} 0 0 {LEN}"), &value(LEN, 1)), "NOT_STORED\r\n");
    assert!(gets(&mut c, &k).is_none());
    assert_eq!(store(&mut c, &format!("add {k} 1 0 {LEN}"), &value(LEN, 2)), "STORED\r\n");
    assert_eq!(store(&mut c, &format!("add {k} 2 0 {LEN}"), &value(LEN, 3)), "NOT_STORED\r\n");
    let (flags, cas, v) = gets(&mut c, &k).unwrap();
    assert!((flags, &v[..]) == (1, &value(LEN, 2)[..]));
    assert_eq!(store(&mut c, &format!("cas {k} 3 0 {LEN} {}", cas + 1), &value(LEN, 4)), "EXISTS\r\n");
    assert_eq!(store(&mut c, &format!("cas {k} 3 0 {LEN} {cas}"), &value(LEN, 5)), "STORED\r\n");
    let (flags, cas2, v) = gets(&mut c, &k).unwrap();
    assert!((flags, &v[..]) == (3, &value(LEN, 5)[..]));
    assert_ne!(cas2, cas);
    assert_eq!(store(&mut c, &format!("replace {k} 4 0 {LEN}"), &value(LEN, 6)), "STORED\r\n");
    // noreply: nothing answered; the next command's reply comes first.
    c.write_all(format!("set {k} 9 0 {LEN} noreply\r\n").as_bytes()).unwrap();
    c.write_all(&value(LEN, 7)).unwrap();
    assert_eq!(line(&mut c, b"\r\nmn\r\n"), "MN\r\n");
    let (flags, _, v) = gets(&mut c, &k).unwrap();
    assert!((flags, &v[..]) == (9, &value(LEN, 7)[..]));
    assert_eq!(line(&mut c, format!("delete {k}\r\n").as_bytes()), "DELETED\r\n");
    let gone = key("mc-inplace-cas-gone");
    assert_eq!(store(&mut c, &format!("cas {gone} 0 0 {LEN} 1"), &value(LEN, 8)), "NOT_FOUND\r\n");
}

#[test]
fn a_client_that_leaves_mid_value_stores_nothing_and_gives_its_memory_back() {
    for mode in [&[][..], &["--eviction", "none"][..]] {
        let mut flags = FLAGS.to_vec();
        let is_amalgam = !binary().contains("memcached");
        if is_amalgam {
            flags.extend_from_slice(mode);
        } else if !mode.is_empty() {
            continue;
        }
        let Some(server) = Server::with_flags(&flags) else { return };
        let mut c = server.connect();
        let k = key("mc-inplace-gone");
        assert_eq!(line(&mut c, format!("set {k} 0 0 3\r\nold\r\n").as_bytes()), "STORED\r\n");
        // Cache mode charges outsized bytes, store mode its reservation.
        let (which, name) = if mode.is_empty() { ("", "outsized_bytes") } else { ("slabs", "total_malloced") };
        let reading = |c: &mut TcpStream| num(&stats_map(c, which), name);
        let before = if is_amalgam { reading(&mut c) } else { 0 };
        let mut slow = server.connect();
        slow.write_all(format!("set {k} 0 0 {}\r\n", 12 << 20).as_bytes()).unwrap();
        slow.write_all(&value(6 << 20, 1)).unwrap();
        if is_amalgam {
            let mut during = before;
            for _ in 0..400 {
                during = reading(&mut c);
                if during >= before + (12 << 20) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(25));
            }
            assert!(during >= before + (12 << 20), "{name}: {before} before, {during} with half the value in");
        }
        assert_eq!(gets(&mut c, &k).map(|(_, _, v)| v), Some(b"old".to_vec()));
        drop(slow);
        if is_amalgam {
            let mut after = 0;
            for _ in 0..400 {
                after = reading(&mut c);
                if after == before {
                    break;
                }
                std::thread::sleep(Duration::from_millis(25));
            }
            assert_eq!(after, before, "{name} back to what it was");
        }
        assert_eq!(gets(&mut c, &k).map(|(_, _, v)| v), Some(b"old".to_vec()));
    }
}
