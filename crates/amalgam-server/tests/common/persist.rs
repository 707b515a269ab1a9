//! What the persistence test files share (persist.rs, persist_damage.rs,
//! persist_restart.rs): the on-disk format of issue 5, read back to check
//! and to damage files; an amalgam persisting to a directory of its own,
//! which can be SIGKILLed and started again on the same directory and
//! ports ([`Node`]), in a scratch directory kept when a test fails
//! ([`Scratch`]); a text-protocol connection for pipelined replies
//! ([`Text`]); and the numbered keys the tests write and check.
//!
//! Not declared in common/mod.rs (every test binary would compile it):
//! the persistence test files load it with `#[path = "common/persist.rs"]`.
#![allow(dead_code)]

use crate::common::resp::Resp;
use crate::common::{binary, external_addr, Server, READ_TIMEOUT};
use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Keys per `get` when reading the state back.
pub const KEYS_PER_GET: usize = 64;

// ------------------------------------------------------------- on-disk format
// (the spec of issue 5; all integers little-endian)

/// The format version written (6: version 5 plus the FUNCTION libraries'
/// FUNCTIONS record; version 5 added replication's REPL_POS record,
/// version 4 the collections' PUT_TYPED, META and OP records, version 3
/// PUT_MS).
pub const FORMAT_VERSION: u32 = 6;
/// Log segment header: magic, u32 version (6), u32 header CRC32C, u64 first_seq.
pub const LOG_HEADER_BYTES: usize = 24;
/// Snapshot header: magic, u32 version (5), u32 header CRC32C, u64 log_seq, u64 created.
pub const SNAP_HEADER_BYTES: usize = 32;
/// Record framing: u32 body length, u32 CRC32C of the body.
pub const RECORD_HEADER_BYTES: usize = 8;
pub const LOG_MAGIC: &[u8; 8] = b"AMALGLOG";
pub const SNAP_MAGIC: &[u8; 8] = b"AMALGSNP";
pub const REC_PUT: u8 = 1;
/// PUT with a u64 expiry in unix milliseconds (the deadline is not a whole second).
pub const REC_PUT_MS: u8 = 5;
pub const REC_DELETE: u8 = 2;
pub const REC_SNAP_END: u8 = 0x7F;

/// CRC32C (Castagnoli), bitwise: test files are small.
pub fn crc32c(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0x82F6_3B78 } else { crc >> 1 };
        }
    }
    !crc
}

/// A version 2, 3 or 4 header's checksum: CRC32C of every byte but 12..16.
pub fn header_crc(h: &[u8]) -> u32 {
    let mut bytes = h[..12].to_vec();
    bytes.extend_from_slice(&h[16..]);
    crc32c(&bytes)
}

pub fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

pub fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// One framed record of a file: where its header starts, and its body.
#[derive(Debug)]
pub struct Record {
    pub offset: usize,
    pub body: Vec<u8>,
}

impl Record {
    /// The key of a PUT or DELETE record.
    pub fn key(&self) -> Option<&[u8]> {
        match *self.body.first()? {
            // type, flags, expiry, cas, klen, vlen, key
            REC_PUT => {
                let klen = *self.body.get(17)? as usize;
                self.body.get(22..22 + klen)
            }
            // type, flags, expiry (8 bytes), cas, klen, vlen, key
            REC_PUT_MS => {
                let klen = *self.body.get(21)? as usize;
                self.body.get(26..26 + klen)
            }
            REC_DELETE => {
                let klen = *self.body.get(1)? as usize;
                self.body.get(2..2 + klen)
            }
            _ => None,
        }
    }
}

/// The records of `bytes` after a header of `header` bytes, up to the
/// first one that is incomplete or fails its CRC; and whether the file
/// ended exactly after the last good one.
pub fn records(bytes: &[u8], header: usize) -> (Vec<Record>, bool) {
    let mut out = Vec::new();
    let mut at = header;
    // Bounded: every step consumes at least a record header.
    while at + RECORD_HEADER_BYTES <= bytes.len() {
        let len = u32_at(bytes, at) as usize;
        let crc = u32_at(bytes, at + 4);
        let Some(body) = bytes.get(at + RECORD_HEADER_BYTES..at + RECORD_HEADER_BYTES + len) else { break };
        if len == 0 || crc32c(body) != crc {
            break;
        }
        out.push(Record { offset: at, body: body.to_vec() });
        at += RECORD_HEADER_BYTES + len;
    }
    (out, at == bytes.len())
}

/// The files `<prefix><20 digits><suffix>` in `dir`, by number.
pub fn numbered_files(dir: &Path, prefix: &str, suffix: &str) -> Vec<(u64, PathBuf)> {
    let mut out: Vec<(u64, PathBuf)> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| {
                let e = e.ok()?;
                let name = e.file_name().to_string_lossy().into_owned();
                let digits = name.strip_prefix(prefix)?.strip_suffix(suffix)?;
                (digits.len() == 20).then(|| digits.parse().ok()).flatten().map(|n| (n, e.path()))
            })
            .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

pub fn log_files(dir: &Path) -> Vec<(u64, PathBuf)> {
    numbered_files(dir, "log-", ".aml")
}

pub fn snap_files(dir: &Path) -> Vec<(u64, PathBuf)> {
    numbered_files(dir, "snap-", ".ams")
}

/// The directory's files with their sizes, for messages.
pub fn listing(dir: &Path) -> String {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| format!("{} ({} bytes)", e.file_name().to_string_lossy(), e.metadata().map_or(0, |m| m.len())))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names.join(", ")
}

/// The newest log segment and its records (asserting an undamaged file).
pub fn last_log(dir: &Path) -> (PathBuf, u64, Vec<Record>) {
    let (seq, path) = log_files(dir).pop().unwrap_or_else(|| panic!("no log file in {}", listing(dir)));
    let bytes = std::fs::read(&path).unwrap();
    assert!(bytes.len() >= LOG_HEADER_BYTES, "{} is shorter than a log header", path.display());
    assert_eq!(&bytes[..8], LOG_MAGIC, "log magic of {}", path.display());
    assert_eq!(u32_at(&bytes, 8), FORMAT_VERSION, "log version of {}", path.display());
    assert_eq!(u32_at(&bytes, 12), header_crc(&bytes[..LOG_HEADER_BYTES]), "header checksum of {}", path.display());
    assert_eq!(u64_at(&bytes, 16), seq, "first_seq in the header of {} and its name", path.display());
    let (recs, clean) = records(&bytes, LOG_HEADER_BYTES);
    assert!(clean, "{}: undamaged log does not end at a record boundary ({} records)", path.display(), recs.len());
    (path, seq, recs)
}

// ------------------------------------------------------------------- helpers

/// True when the server under test is an amalgam of our own; else prints
/// why the test is skipped.
pub fn testable() -> bool {
    if external_addr().is_some() {
        eprintln!("note: AMALGAM_TEST_ADDR is set; persistence tests need an amalgam of their own: skipped");
        return false;
    }
    let bin = binary();
    if !Path::new(&bin).file_name().is_some_and(|n| n.to_string_lossy().contains("amalgam")) {
        eprintln!("note: {bin} is not amalgam; persistence (--dir) is amalgam's: skipped");
        return false;
    }
    true
}

/// A directory of its own under the system's temp dir; removed when
/// dropped, unless the test is failing (then kept, and its path printed).
#[derive(Debug)]
pub struct Scratch {
    root: PathBuf,
}

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        static N: AtomicUsize = AtomicUsize::new(0);
        let root = std::env::temp_dir().join(format!(
            "amalgam-persist-{}-{name}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("data")).unwrap_or_else(|e| panic!("mkdir {}: {e}", root.display()));
        Scratch { root }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("kept {} (data/ and the stderr of every start) for inspection", self.root.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }
}

/// An amalgam persisting to a directory of its own, which can be killed
/// and started again on the same directory and ports.
#[derive(Debug)]
pub struct Node {
    flags: Vec<String>,
    server: Option<Server>,
    ports: Option<(u16, Option<u16>)>,
    /// Starts so far; start i writes its stderr to `stderr-<i>.txt`.
    starts: usize,
    scratch: Scratch,
}

impl Node {
    /// Starts `amalgam --dir <fresh dir> <flags>`; None (with a note) when
    /// the server under test is not an amalgam of our own.
    pub fn start(name: &str, flags: &[&str]) -> Option<Node> {
        if !testable() {
            return None;
        }
        let mut node = Node {
            flags: flags.iter().map(|s| s.to_string()).collect(),
            server: None,
            ports: None,
            starts: 0,
            scratch: Scratch::new(name),
        };
        node.boot();
        Some(node)
    }

    pub fn dir(&self) -> PathBuf {
        self.scratch.root.join("data")
    }

    pub fn stderr_path(&self, start: usize) -> PathBuf {
        self.scratch.root.join(format!("stderr-{start}.txt"))
    }

    /// What the current (or last) start wrote to stderr.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(self.stderr_path(self.starts.saturating_sub(1))).unwrap_or_default()
    }

    /// Starts the server on the directory (same ports as before); panics,
    /// with its stderr, if it does not start.
    pub fn boot(&mut self) {
        assert!(self.server.is_none(), "boot while running");
        let dir = self.dir().to_string_lossy().into_owned();
        let mut args: Vec<&str> = vec!["--dir", &dir, "-t", "2"];
        args.extend(self.flags.iter().map(|s| s.as_str()));
        let stderr = self.stderr_path(self.starts);
        self.starts += 1;
        match Server::spawn_with(&args, self.ports, Some(&stderr)) {
            Ok(s) => {
                self.ports = Some(s.ports());
                self.server = Some(s);
            }
            Err(e) => panic!(
                "the server did not start on its directory: {e}\nfiles: {}\nstderr:\n{}",
                listing(&self.dir()),
                self.stderr()
            ),
        }
    }

    /// Starts the server on the directory and SIGKILLs it `after` later,
    /// serving or not: a crash during recovery (which truncates, sets
    /// files aside and creates the next log segment).
    pub fn start_and_kill_after(&mut self, after: Duration) {
        assert!(self.server.is_none(), "start while running");
        let (port, resp_port) = self.ports.expect("booted once");
        let stderr = std::fs::File::options()
            .create(true)
            .append(true)
            .open(self.stderr_path(self.starts))
            .expect("stderr file");
        self.starts += 1;
        let mut args: Vec<String> = ["-l", "127.0.0.1", "-U", "0", "-p", &port.to_string()].map(String::from).to_vec();
        if let Some(rp) = resp_port {
            args.extend(["--resp-port".to_string(), rp.to_string()]);
        }
        args.extend(["--dir".to_string(), self.dir().to_string_lossy().into_owned(), "-t".into(), "2".into()]);
        args.extend(self.flags.iter().cloned());
        let mut child = std::process::Command::new(binary())
            .args(&args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("spawn the server");
        std::thread::sleep(after);
        let _ = child.kill();
        let _ = child.wait();
        self.assert_no_panic();
    }

    pub fn server(&self) -> &Server {
        self.server.as_ref().expect("server running")
    }

    /// Asserts the current start's stderr shows no panic.
    pub fn assert_no_panic(&self) {
        let err = self.stderr();
        assert!(!err.contains("panicked"), "the server panicked:\n{err}");
    }

    /// SIGKILL: no shutdown code runs.
    pub fn kill(&mut self) {
        let mut s = self.server.take().expect("kill while stopped");
        s.kill9();
        drop(s);
        self.assert_no_panic();
    }

    /// SIGTERM: a clean shutdown.
    pub fn stop(&mut self) {
        drop(self.server.take());
        self.assert_no_panic();
    }

    pub fn text(&self) -> Text {
        Text::new(self.server().connect())
    }

    /// A RESP connection to the running server.
    pub fn resp(&self) -> Resp {
        Resp::new(self.server())
    }

    /// SIGKILL, then a start on the same directory and ports; asserts
    /// neither start panicked.
    pub fn crash_and_restart(&mut self) {
        self.kill();
        self.boot();
        self.assert_no_panic();
    }
}

/// A text-protocol connection with a read buffer, for pipelined replies.
#[derive(Debug)]
pub struct Text {
    pub s: TcpStream,
    buf: Vec<u8>,
    at: usize,
}

impl Text {
    pub fn new(s: TcpStream) -> Text {
        Text { s, buf: Vec::with_capacity(1 << 16), at: 0 }
    }

    pub fn connect(addr: SocketAddr) -> Option<Text> {
        let s = TcpStream::connect(addr).ok()?;
        s.set_read_timeout(Some(READ_TIMEOUT)).ok()?;
        s.set_write_timeout(Some(READ_TIMEOUT)).ok()?;
        s.set_nodelay(true).ok()?;
        Some(Text::new(s))
    }

    /// Sends all of `bytes`; false if the connection failed.
    pub fn send(&mut self, bytes: &[u8]) -> bool {
        self.s.write_all(bytes).is_ok()
    }

    /// Reads more; false on EOF, error or timeout.
    pub fn fill(&mut self) -> bool {
        if self.at > 0 {
            self.buf.drain(..self.at);
            self.at = 0;
        }
        let mut chunk = [0u8; 65536];
        loop {
            match self.s.read(&mut chunk) {
                Ok(0) => return false,
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    return true;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
    }

    /// The next whole line without its CRLF; None if the connection ended
    /// (or timed out) first.
    pub fn line(&mut self) -> Option<Vec<u8>> {
        loop {
            if let Some(p) = self.buf[self.at..].windows(2).position(|w| w == b"\r\n") {
                let l = self.buf[self.at..self.at + p].to_vec();
                self.at += p + 2;
                return Some(l);
            }
            if !self.fill() {
                return None;
            }
        }
    }

    /// The next `n` bytes; None if the connection ended first.
    pub fn bytes(&mut self, n: usize) -> Option<Vec<u8>> {
        while self.buf.len() - self.at < n {
            if !self.fill() {
                return None;
            }
        }
        let b = self.buf[self.at..self.at + n].to_vec();
        self.at += n;
        Some(b)
    }

    /// One request, one line back (as text, without CRLF).
    pub fn call(&mut self, req: &str) -> String {
        assert!(self.send(req.as_bytes()), "send {req:?}");
        let l = self.line().unwrap_or_else(|| panic!("no reply to {req:?}"));
        String::from_utf8_lossy(&l).into_owned()
    }

    /// set; asserts STORED.
    pub fn set(&mut self, key: &str, flags: u32, exptime: u64, value: &[u8]) {
        let mut req = format!("set {key} {flags} {exptime} {}\r\n", value.len()).into_bytes();
        req.extend_from_slice(value);
        req.extend_from_slice(b"\r\n");
        assert!(self.send(&req), "send set {key}");
        let l = self.line().unwrap_or_else(|| panic!("no reply to set {key}"));
        assert_eq!(String::from_utf8_lossy(&l), "STORED", "set {key}");
    }

    /// The items among `keys` that exist: key -> (flags, value).
    pub fn get_many(&mut self, keys: &[&str]) -> HashMap<String, (u32, Vec<u8>)> {
        let mut out = HashMap::new();
        for chunk in keys.chunks(KEYS_PER_GET) {
            let req = format!("get {}\r\n", chunk.join(" "));
            assert!(self.send(req.as_bytes()), "send get");
            // Bounded: at most one VALUE per key asked, then END.
            for _ in 0..=chunk.len() {
                let l = self.line().expect("reply to get");
                let l = String::from_utf8_lossy(&l).into_owned();
                if l == "END" {
                    break;
                }
                let t: Vec<&str> = l.split(' ').collect();
                assert!(t.len() == 4 && t[0] == "VALUE", "get reply line {l:?}");
                let n: usize = t[3].parse().unwrap();
                let data = self.bytes(n + 2).expect("value of get");
                assert_eq!(&data[n..], b"\r\n", "value of {} ends with CRLF", t[1]);
                out.insert(t[1].to_string(), (t[2].parse().unwrap(), data[..n].to_vec()));
            }
        }
        out
    }

    pub fn get(&mut self, key: &str) -> Option<(u32, Vec<u8>)> {
        self.get_many(&[key]).remove(key)
    }
}

/// The value of `key`'s version `version`: names both, so a value that
/// lands under the wrong key or an old version is told apart; its length
/// varies with both; `big` ones span many pages.
pub fn value_for(key: &str, version: u64, big: bool) -> Vec<u8> {
    let mut v = format!("{key}.v{version}.").into_bytes();
    let h = key.bytes().fold(version.wrapping_mul(0x9E37_79B9), |h, b| h.rotate_left(5) ^ u64::from(b));
    let len = if big { 20_000 + (h % 4096) as usize } else { (h % 160) as usize };
    v.extend((0..len).map(|i| b'a' + ((h >> (i % 40)) as u8 ^ i as u8) % 26));
    v
}

/// Flags of a server whose whole history stays in its log: no snapshot
/// unless a test asks for one (RESP SAVE).
pub const LOG_ONLY: &[&str] = &["--fsync", "always", "--snapshot-every", "0", "--snapshot-after-writes", "0"];

pub fn val(key: &str, version: u64) -> Vec<u8> {
    value_for(key, version, false)
}

/// Sets `prefix0..prefix{n}` to version 1.
pub fn put_keys(c: &mut Text, prefix: &str, n: usize) {
    for i in 0..n {
        let k = format!("{prefix}{i}");
        c.set(&k, i as u32, 0, &val(&k, 1));
    }
}

/// Asserts `prefix{i}` for i in `range` hold version 1 (flags i).
#[track_caller]
pub fn assert_keys(c: &mut Text, prefix: &str, range: std::ops::Range<usize>, why: &str) {
    let names: Vec<String> = range.clone().map(|i| format!("{prefix}{i}")).collect();
    let refs: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
    let got = c.get_many(&refs);
    let missing: Vec<&str> = refs.iter().copied().filter(|k| !got.contains_key(*k)).collect();
    assert!(missing.is_empty(), "{why}: {} of {} keys missing: {missing:?}", missing.len(), refs.len());
    for (i, k) in range.zip(&refs) {
        assert_eq!(got[*k], (i as u32, val(k, 1)), "{why}: {k}");
    }
}

/// Sends RESP SAVE; asserts +OK.
pub fn resp_save(node: &Node) {
    let mut r = Resp::new(node.server());
    r.send(&["SAVE"]);
    assert_eq!(r.reply(), "+OK\r\n", "SAVE");
}
