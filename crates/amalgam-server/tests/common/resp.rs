//! A minimal RESP client for exact-byte tests: sends commands as multibulk
//! arrays (or raw bytes) and reads back one whole reply at a time, as the
//! raw RESP text, so tests compare what the server sent byte for byte.

use super::{Server, READ_TIMEOUT};
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// Encodes a command as a multibulk array.
pub fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// The length of the one complete reply at the front of `buf`, if it is
/// all there.
pub fn reply_len(buf: &[u8]) -> Option<usize> {
    let line_end = buf.windows(2).position(|w| w == b"\r\n")?;
    let head = std::str::from_utf8(&buf[1..line_end]).ok()?;
    let after = line_end + 2;
    match buf.first()? {
        b'+' | b'-' | b':' | b'_' | b',' | b'#' | b'(' => Some(after),
        b'$' | b'=' | b'!' => {
            let n: i64 = head.parse().ok()?;
            if n < 0 {
                return Some(after);
            }
            let end = after + n as usize + 2;
            (buf.len() >= end).then_some(end)
        }
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let n: i64 = head.parse().ok()?;
            let items = if matches!(buf[0], b'%' | b'|') { 2 * n } else { n };
            let mut at = after;
            for _ in 0..items.max(0) {
                at += reply_len(&buf[at..])?;
            }
            Some(at)
        }
        _ => None,
    }
}

/// One RESP connection.
#[derive(Debug)]
pub struct Resp {
    pub s: TcpStream,
    buf: Vec<u8>,
}

impl Resp {
    /// A new connection to the server's RESP address.
    pub fn new(server: &Server) -> Resp {
        Resp { s: server.resp_connect(), buf: Vec::new() }
    }

    /// A connection made elsewhere (a server the harness did not start).
    pub fn from_stream(s: TcpStream) -> Resp {
        s.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
        s.set_nodelay(true).unwrap();
        Resp { s, buf: Vec::new() }
    }

    /// Sends one command.
    pub fn send(&mut self, args: &[&str]) {
        let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.send_raw(&encode(&bytes));
    }

    /// Sends bytes as they are.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.s.write_all(bytes).unwrap_or_else(|e| panic!("write: {e}"));
    }

    /// The next whole reply, as text (lossy), or what arrived before the
    /// server closed or the read timed out.
    pub fn reply(&mut self) -> String {
        let mut chunk = [0u8; 65536];
        loop {
            if let Some(n) = reply_len(&self.buf) {
                let r: Vec<u8> = self.buf.drain(..n).collect();
                return String::from_utf8_lossy(&r).into_owned();
            }
            match self.s.read(&mut chunk) {
                Ok(0) | Err(_) => {
                    let r = std::mem::take(&mut self.buf);
                    return String::from_utf8_lossy(&r).into_owned();
                }
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }

    /// The next whole reply as bytes (for binary and large values), or
    /// what arrived before the server closed or the read timed out.
    pub fn reply_bytes(&mut self) -> Vec<u8> {
        let mut chunk = vec![0u8; 1 << 20];
        loop {
            if let Some(n) = reply_len(&self.buf) {
                return self.buf.drain(..n).collect();
            }
            match self.s.read(&mut chunk) {
                Ok(0) | Err(_) => return std::mem::take(&mut self.buf),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }

    /// Sends one command and returns its reply.
    pub fn call(&mut self, args: &[&str]) -> String {
        self.send(args);
        self.reply()
    }

    /// CONFIG GET of one parameter: its value (RESP2's reply is a
    /// two-element array, the name and the value).
    pub fn config_get(&mut self, name: &str) -> String {
        let v = call(self, &["CONFIG", "GET", name]);
        let pair = v.array();
        assert_eq!(pair.len(), 2, "CONFIG GET {name}: {v:?}");
        pair[1].bulk().to_string()
    }

    /// One field of `INFO section`, if the section has it.
    pub fn info_field(&mut self, section: &str, name: &str) -> Option<String> {
        let text = self.call(&["INFO", section]);
        text.lines().find_map(|l| l.strip_prefix(&format!("{name}:")).map(str::to_string))
    }

    /// Sends raw bytes and returns the next reply.
    pub fn call_raw(&mut self, bytes: &[u8]) -> String {
        self.send_raw(bytes);
        self.reply()
    }

    /// True if the server closes the connection (after any bytes still
    /// in flight) within [`READ_TIMEOUT`].
    pub fn closed(&mut self) -> bool {
        self.buf.clear();
        let mut b = [0u8; 4096];
        loop {
            match self.s.read(&mut b) {
                Ok(0) => return true,
                Ok(_) => continue,
                Err(e) if e.kind() == ErrorKind::ConnectionReset => return true,
                Err(_) => return false,
            }
        }
    }

    /// True if nothing arrives within a short wait.
    pub fn silent(&mut self) -> bool {
        if !self.buf.is_empty() {
            return false;
        }
        self.s.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
        let mut b = [0u8; 1];
        let r = matches!(self.s.read(&mut b), Err(ref e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::TimedOut);
        self.s.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
        r
    }
}

/// Bulk-string reply text for `v`.
pub fn bulk(v: &str) -> String {
    format!("${}\r\n{v}\r\n", v.len())
}

/// Integer reply text.
pub fn int(n: i64) -> String {
    format!(":{n}\r\n")
}

/// Error reply text.
pub fn error(m: &str) -> String {
    format!("-{m}\r\n")
}

pub const OK: &str = "+OK\r\n";
pub const NULL2: &str = "$-1\r\n";
pub const NULL3: &str = "_\r\n";

/// The integer in an integer reply.
pub fn as_int(reply: &str) -> i64 {
    reply
        .strip_prefix(':')
        .and_then(|r| r.trim_end().parse().ok())
        .unwrap_or_else(|| panic!("not an integer reply: {reply:?}"))
}

/// A reply, parsed.
#[derive(Debug, Clone, PartialEq)]
pub enum V {
    Int(i64),
    Bulk(String),
    Simple(String),
    Error(String),
    Array(Vec<V>),
    Nil,
}

impl V {
    pub fn int(&self) -> i64 {
        match self {
            V::Int(n) => *n,
            v => panic!("not an integer: {v:?}"),
        }
    }

    pub fn bulk(&self) -> &str {
        match self {
            V::Bulk(s) => s,
            v => panic!("not a bulk string: {v:?}"),
        }
    }

    pub fn array(&self) -> &[V] {
        match self {
            V::Array(a) => a,
            v => panic!("not an array: {v:?}"),
        }
    }
}

/// Parses one RESP2 reply at the start of `s`: (value, bytes used).
pub fn parse(s: &str) -> (V, usize) {
    let end = s.find("\r\n").unwrap_or_else(|| panic!("no line end: {s:?}"));
    let (head, rest) = (&s[1..end], end + 2);
    match s.as_bytes()[0] {
        b':' => (V::Int(head.parse().unwrap()), rest),
        b'+' => (V::Simple(head.to_string()), rest),
        b'-' => (V::Error(head.to_string()), rest),
        b'$' if head == "-1" => (V::Nil, rest),
        b'$' => {
            let n: usize = head.parse().unwrap();
            (V::Bulk(s[rest..rest + n].to_string()), rest + n + 2)
        }
        b'*' => {
            let n: usize = head.parse().unwrap();
            let mut at = rest;
            let mut items = Vec::with_capacity(n);
            for _ in 0..n {
                let (v, used) = parse(&s[at..]);
                items.push(v);
                at += used;
            }
            (V::Array(items), at)
        }
        b => panic!("unexpected reply type {:?} in {s:?}", b as char),
    }
}

/// Sends a command and parses its one RESP2 reply.
pub fn call(c: &mut Resp, args: &[&str]) -> V {
    let r = c.call(args);
    let (v, used) = parse(&r);
    assert_eq!(used, r.len(), "one reply: {r:?}");
    v
}
