//! memcached's `-o idle_timeout=N`, black-box: a connection idle past it
//! is closed, an active one is not. Runs against amalgam and, in CI,
//! against memcached (`AMALGAM_TEST_BIN`), which closes idle connections
//! the same way.
mod common;
use common::*;
use std::io::Read;
use std::time::Duration;

#[test]
fn an_idle_connection_is_closed() {
    let Some(server) = Server::with_flags(&["-o", "idle_timeout=1"]) else { return };
    let mut idle = server.connect();
    let mut busy = server.connect();
    assert!(request(&mut idle, b"version\r\n", b"\r\n").starts_with(b"VERSION"));
    for _ in 0..8 {
        std::thread::sleep(Duration::from_millis(500));
        assert!(request(&mut busy, b"version\r\n", b"\r\n").starts_with(b"VERSION"), "the active one stays");
    }
    idle.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut b = [0u8; 64];
    let n = idle.read(&mut b).unwrap_or(0);
    assert_eq!(n, 0, "the idle connection was closed, got {:?}", &b[..n]);
}
