//! Persistence of large values (issue 18 item 5): a RESP string past `-I`
//! and a memcached value up to `-I` survive a SIGKILL (recovered from the
//! log) and a restart from a snapshot (SAVE). Amalgam-only: skipped with a
//! note against memcached or an external server.

mod common;

use common::resp::*;
use common::*;
use std::path::PathBuf;
use std::time::Duration;

/// A value of `len` bytes that is not one byte repeated.
fn value(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3] ^ seed).collect()
}

/// A fresh data directory, removed afterwards unless the test failed.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("amalgam-persist-large-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn resp_get(server: &Server, k: &str) -> Vec<u8> {
    let mut c = Resp::new(server);
    c.s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    c.send_raw(&encode(&[b"GET", k.as_bytes()]));
    c.reply_bytes()
}

fn bulk_of(v: &[u8]) -> Vec<u8> {
    let mut b = format!("${}\r\n", v.len()).into_bytes();
    b.extend_from_slice(v);
    b.extend_from_slice(b"\r\n");
    b
}

#[test]
fn large_values_survive_a_crash_and_a_snapshot() {
    if external_addr().is_some() || external_resp_addr().is_some() || binary().contains("memcached") {
        eprintln!("note: persistence is amalgam's; skipping");
        return;
    }
    let dir = Dir::new("crash");
    let d = dir.0.to_string_lossy().into_owned();
    let flags = ["--dir", d.as_str(), "-m", "256", "-I", "2m", "-t", "2"];
    let mut server = Server::spawn_with(&flags, None, None).unwrap();
    let ports = server.ports();
    let resp_value = value(24 << 20, 1);
    let mc_value = value(3 << 19, 2);
    let mut c = Resp::new(&server);
    c.send_raw(&encode(&[b"SET", b"resp-big", &resp_value]));
    assert_eq!(c.reply(), "+OK\r\n");
    let mut m = server.connect();
    send(&mut m, format!("set mc-big 0 0 {}\r\n", mc_value.len()).as_bytes());
    send(&mut m, &mc_value);
    assert_eq!(line(&mut m, b"\r\n"), "STORED\r\n");
    // Recovered from the log.
    server.kill9();
    drop(server);
    let server = Server::spawn_with(&flags, Some(ports), None).unwrap();
    assert!(resp_get(&server, "resp-big") == bulk_of(&resp_value), "RESP value after a crash");
    assert!(resp_get(&server, "mc-big") == bulk_of(&mc_value), "memcached value after a crash");
    // Recovered from a snapshot.
    let mut c = Resp::new(&server);
    c.s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    assert_eq!(c.call(&["SAVE"]), "+OK\r\n");
    drop(server);
    let server = Server::spawn_with(&flags, Some(ports), None).unwrap();
    assert!(resp_get(&server, "resp-big") == bulk_of(&resp_value), "RESP value after a snapshot");
    assert!(resp_get(&server, "mc-big") == bulk_of(&mc_value), "memcached value after a snapshot");
}
