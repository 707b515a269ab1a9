//! memcached's ASCII authentication (`-Y FILE`), black-box: only the
//! authentication `set` before authenticating, memcached 1.6's texts,
//! meta and binary requests refused, stats counters. Passes against
//! memcached 1.6 too (`AMALGAM_TEST_BIN=$(which memcached)`). Each request
//! waits for its reply: memcached answers one unauthenticated line per
//! read (authfile.rs's notes).
mod common;
use common::*;
use std::io::Write;
use std::net::TcpStream;

/// An auth file with the harness's user and two of the test's.
fn authfile() -> tempfile_path::Path {
    let p = tempfile_path::Path::new("authfile");
    std::fs::write(&p.0, format!("{TEST_AUTHFILE_USER}:{TEST_AUTHFILE_PASSWORD}\nalice:pw1\nbob:sec ret:x\n")).unwrap();
    p
}

/// A file removed when dropped.
mod tempfile_path {
    pub struct Path(pub std::path::PathBuf);
    impl Path {
        pub fn new(name: &str) -> Path {
            static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
            let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Path(std::env::temp_dir().join(format!("amalgam-{name}-{}-{n}", std::process::id())))
        }
    }
    impl Drop for Path {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}

fn line(s: &mut TcpStream, req: &[u8]) -> String {
    String::from_utf8_lossy(&request(s, req, b"\r\n")).into_owned()
}

fn auth_set(user: &str, pass: &str) -> Vec<u8> {
    let token = format!("{user} {pass}");
    format!("set anykey 0 0 {}\r\n{token}\r\n", token.len()).into_bytes()
}

#[test]
fn only_the_authentication_set_before_authenticating() {
    let file = authfile();
    let path = file.0.to_string_lossy().into_owned();
    let Some(server) = Server::with_flags(&["-Y", &path]) else { return };
    let k = key("af");
    let mut s = server.connect();
    for req in [
        format!("get {k}\r\n"),
        "version\r\n".into(),
        "stats\r\n".into(),
        format!("mg {k} v\r\n"),
        "mn\r\n".into(),
        format!("delete {k}\r\n"),
        "x\r\n".into(),
    ] {
        assert_eq!(line(&mut s, req.as_bytes()), "CLIENT_ERROR unauthenticated\r\n", "{req:?}");
    }
    // A set whose data has no space is not a user and password.
    assert_eq!(line(&mut s, b"set a 0 0 1\r\nx\r\n"), "CLIENT_ERROR bad authentication token format\r\n");
    // A wrong password, a wrong user, a password with its user's prefix.
    assert_eq!(line(&mut s, &auth_set("alice", "pw2")), "CLIENT_ERROR authentication failure\r\n");
    assert_eq!(line(&mut s, &auth_set("mallory", "pw1")), "CLIENT_ERROR authentication failure\r\n");
    assert_eq!(line(&mut s, &auth_set("alice", "pw")), "CLIENT_ERROR authentication failure\r\n");
    assert_eq!(line(&mut s, format!("get {k}\r\n").as_bytes()), "CLIENT_ERROR unauthenticated\r\n");
    // The right pair (key, flags, exptime ignored; noreply still answered).
    assert_eq!(line(&mut s, b"set whatever 5 100 9 noreply\r\nalice pw1\r\n"), "STORED\r\n");
    assert_eq!(line(&mut s, format!("set {k} 0 0 1\r\nv\r\n").as_bytes()), "STORED\r\n");
    assert_eq!(
        request(&mut s, format!("get {k}\r\n").as_bytes(), b"END\r\n"),
        format!("VALUE {k} 0 1\r\nv\r\nEND\r\n").as_bytes()
    );
    assert_eq!(request(&mut s, format!("mg {k} v\r\n").as_bytes(), b"v\r\n"), b"VA 1\r\nv\r\n");
    // The authentication `set` stored nothing.
    assert_eq!(line(&mut s, b"get anykey whatever\r\n"), "END\r\n");
    // Authentication is per connection.
    let mut t = server.connect();
    assert_eq!(line(&mut t, format!("get {k}\r\n").as_bytes()), "CLIENT_ERROR unauthenticated\r\n");
    // A password holding ':' (the line splits at the first one).
    assert_eq!(line(&mut t, &auth_set("bob", "sec")), "CLIENT_ERROR authentication failure\r\n");
    let token = "bob sec ret:x";
    // memcached's token is the first word after the user: `sec`, so a
    // password with a space cannot be given; `sec` alone is wrong too.
    assert_eq!(
        line(&mut t, format!("set k 0 0 {}\r\n{token}\r\n", token.len()).as_bytes()),
        "CLIENT_ERROR authentication failure\r\n"
    );
}

#[test]
fn binary_requests_are_refused_before_authenticating() {
    let file = authfile();
    let path = file.0.to_string_lossy().into_owned();
    let Some(server) = Server::with_flags(&["-Y", &path]) else { return };
    let mut s = server.connect();
    // A binary GET header (0x80, opcode 0x00) read as a text line.
    let mut noop = vec![0x80u8, 0x00];
    noop.extend_from_slice(&[0; 22]);
    noop.extend_from_slice(b"\r\n");
    s.write_all(&noop).unwrap();
    assert_eq!(String::from_utf8_lossy(&read_until(&mut s, b"\r\n")), "CLIENT_ERROR unauthenticated\r\n");
}

#[test]
fn stats_count_authentications() {
    let file = authfile();
    let path = file.0.to_string_lossy().into_owned();
    let Some(server) = Server::with_flags(&["-Y", &path]) else { return };
    let mut s = server.connect();
    assert_eq!(line(&mut s, &auth_set("alice", "nope")), "CLIENT_ERROR authentication failure\r\n");
    assert_eq!(line(&mut s, &auth_set("alice", "pw1")), "STORED\r\n");
    let stats = stats_map(&mut s, "");
    // The harness authenticated once when the server started.
    assert_eq!(num(&stats, "auth_cmds"), 3);
    assert_eq!(num(&stats, "auth_errors"), 1);
}
