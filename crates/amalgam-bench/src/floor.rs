//! `amalgam-bench floor`: the fastest a GET or SET server can be over the
//! sockets API on this machine, to measure what the network stack alone
//! costs.
//!
//! It serves GETs and SETs with the cheapest work that still answers
//! correctly: no store, no general parser. Every `get <key>\r\n`
//! (memcached text) or `*2\r\n$3\r\nGET\r\n$<n>\r\n<key>\r\n` (RESP) is
//! answered with a hit of `--value-bytes` bytes for that key, and every
//! `set <key> <flags> <exptime> <bytes>\r\n<data>\r\n` or RESP `SET key
//! value` with `STORED` / `+OK` (the value is dropped), so `amalgam-bench
//! net --no-preload --get-fraction F` runs against it unchanged and checks
//! every reply. The event loop has the server's shape (an acceptor dealing
//! connections round-robin to `--threads` mio workers, edge-triggered,
//! one read and one write per round, the same drained-socket rule and the
//! same yield after each round), so its CPU per request is the floor for
//! any server built that way: what the kernel's TCP loopback path and the
//! scheduler cost, with the application's work taken out. Anything else a
//! client sends closes the connection.
//!
//! This is a measuring instrument, not a server: it answers only GETs and
//! plain SETs, keeps no data and has no limits beyond its buffers.

use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token, Waker};
use slab::Slab;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};

/// Token of each worker's waker.
const WAKER: Token = Token(usize::MAX);
/// Bytes read per `read` call (a connection's whole buffer).
const READ_BUFFER_BYTES: usize = 16 * 1024;
/// Events taken per `epoll_wait`.
const EVENTS_PER_POLL: usize = 1024;
/// Longest key the floor server echoes (memcached's limit).
const KEY_BYTES_MAX: usize = 250;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:41999")]
    pub listen: SocketAddr,
    /// Worker threads (event loops).
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// `text` (memcached) or `resp`.
    #[arg(long, default_value = "text")]
    pub protocol: String,
    /// Size of every value served.
    #[arg(long, default_value_t = 32)]
    pub value_bytes: usize,
}

/// Runs until killed.
pub fn run(args: &Args) -> Result<(), String> {
    let resp = match args.protocol.as_str() {
        "text" => false,
        "resp" => true,
        p => return Err(format!("--protocol {p}: text or resp")),
    };
    let listener = TcpListener::bind(args.listen).map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    let value = vec![b'v'; args.value_bytes];
    let mut handles = Vec::new();
    for _ in 0..args.threads.max(1) {
        let poll = Poll::new().map_err(|e| e.to_string())?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKER).map_err(|e| e.to_string())?);
        let inbox: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let (w_inbox, value) = (Arc::clone(&inbox), value.clone());
        std::thread::spawn(move || worker(poll, &w_inbox, &value, resp));
        handles.push((inbox, waker));
    }
    eprintln!("amalgam-bench floor: serving GETs and SETs ({}) on {}", args.protocol, args.listen);
    for (i, sock) in listener.incoming().enumerate() {
        let Ok(sock) = sock else { continue };
        let _ = sock.set_nodelay(true);
        if sock.set_nonblocking(true).is_err() {
            continue;
        }
        let (inbox, waker) = &handles[i % handles.len()];
        inbox.lock().unwrap_or_else(|e| e.into_inner()).push(TcpStream::from_std(sock));
        let _ = waker.wake();
    }
    Ok(())
}

struct Conn {
    sock: TcpStream,
    rbuf: Vec<u8>,
    rlen: usize,
    wbuf: Vec<u8>,
    drained: bool,
}

/// A GET's reply is `head`, (text: the key and `mid`), the value, `tail`;
/// a SET's is `stored`.
struct Reply {
    head: Vec<u8>,
    mid: Vec<u8>,
    value: Vec<u8>,
    tail: &'static [u8],
    stored: &'static [u8],
}

fn worker(mut poll: Poll, inbox: &Mutex<Vec<TcpStream>>, value: &[u8], resp: bool) {
    let reply = if resp {
        Reply {
            head: format!("${}\r\n", value.len()).into_bytes(),
            mid: Vec::new(),
            value: value.to_vec(),
            tail: b"\r\n",
            stored: b"+OK\r\n",
        }
    } else {
        let mid = format!(" 0 {}\r\n", value.len()).into_bytes();
        Reply { head: b"VALUE ".to_vec(), mid, value: value.to_vec(), tail: b"\r\nEND\r\n", stored: b"STORED\r\n" }
    };
    let mut conns: Slab<Conn> = Slab::new();
    let mut events = Events::with_capacity(EVENTS_PER_POLL);
    loop {
        if poll.poll(&mut events, None).is_err() {
            continue;
        }
        let mut served = false;
        for ev in events.iter() {
            if ev.token() == WAKER {
                for mut sock in std::mem::take(&mut *inbox.lock().unwrap_or_else(|e| e.into_inner())) {
                    let entry = conns.vacant_entry();
                    if poll.registry().register(&mut sock, Token(entry.key()), Interest::READABLE).is_ok() {
                        entry.insert(Conn {
                            sock,
                            rbuf: vec![0; READ_BUFFER_BYTES],
                            rlen: 0,
                            wbuf: Vec::new(),
                            drained: false,
                        });
                    }
                }
                continue;
            }
            let key = ev.token().0;
            let Some(c) = conns.get_mut(key) else { continue };
            c.drained = false;
            served = true;
            if !serve(c, &reply, resp) {
                let mut c = conns.remove(key);
                let _ = poll.registry().deregister(&mut c.sock);
            }
        }
        if served {
            std::thread::yield_now();
        }
    }
}

/// Reads until drained, answering each whole request; false to close.
fn serve(c: &mut Conn, reply: &Reply, resp: bool) -> bool {
    while !c.drained {
        if c.rlen == c.rbuf.len() {
            return false; // a request longer than the buffer: not a GET
        }
        let n = match c.sock.read(&mut c.rbuf[c.rlen..]) {
            Ok(0) => return false,
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return false,
        };
        c.drained = c.rlen + n < c.rbuf.len();
        c.rlen += n;
        let mut pos = 0;
        while let Some((request, used)) = next_request(&c.rbuf[pos..c.rlen], resp) {
            match request {
                Request::Get(start, end) => {
                    c.wbuf.extend_from_slice(&reply.head);
                    if !resp {
                        c.wbuf.extend_from_slice(&c.rbuf[pos + start..pos + end]);
                        c.wbuf.extend_from_slice(&reply.mid);
                    }
                    c.wbuf.extend_from_slice(&reply.value);
                    c.wbuf.extend_from_slice(reply.tail);
                }
                Request::Set => c.wbuf.extend_from_slice(reply.stored),
                Request::Other => return false,
            }
            pos += used;
        }
        c.rbuf.copy_within(pos..c.rlen, 0);
        c.rlen -= pos;
        if !c.wbuf.is_empty() {
            // A blocking-style write is enough here: replies are small and
            // the client reads them; a partial write ends the connection.
            match c.sock.write(&c.wbuf) {
                Ok(n) if n == c.wbuf.len() => c.wbuf.clear(),
                _ => return false,
            }
        }
    }
    true
}

/// A request the floor answers.
#[derive(Debug, PartialEq, Eq)]
enum Request {
    /// A GET of the key at `buf[start..end]`.
    Get(usize, usize),
    /// A SET (its value is dropped).
    Set,
    /// Anything else: the connection is closed.
    Other,
}

/// The next whole request in `buf` and the bytes it takes, or None if it
/// is incomplete.
fn next_request(buf: &[u8], resp: bool) -> Option<(Request, usize)> {
    let line_end = |from: usize| buf[from..].windows(2).position(|w| w == b"\r\n").map(|i| from + i);
    let number = |b: &[u8]| std::str::from_utf8(b).ok().and_then(|s| s.parse::<usize>().ok());
    if !resp {
        let end = line_end(0)?;
        if buf.starts_with(b"get ") {
            let ok = end > 4 && end - 4 <= KEY_BYTES_MAX;
            return Some((if ok { Request::Get(4, end) } else { Request::Other }, end + 2));
        }
        // set <key> <flags> <exptime> <bytes>\r\n<data>\r\n
        let mut words = buf[..end].split(|&b| b == b' ');
        let set = words.next() == Some(&b"set"[..]);
        // Key, flags and exptime skipped; the byte count last.
        let bytes = words.nth(3).filter(|_| set && words.next().is_none()).and_then(number);
        let Some(n) = bytes else {
            return Some((Request::Other, end + 2));
        };
        let total = end + 2 + n + 2;
        if buf.len() < total {
            return None;
        }
        let ok = &buf[total - 2..total] == b"\r\n";
        return Some((if ok { Request::Set } else { Request::Other }, total));
    }
    // *<k>\r\n then k bulk strings $<n>\r\n<bytes>\r\n: GET key or SET key value.
    if buf.is_empty() {
        return None;
    }
    if buf[0] != b'*' {
        return Some((Request::Other, 0));
    }
    let head_end = line_end(1)?;
    let k = match number(&buf[1..head_end]) {
        Some(k @ 2..=3) => k,
        _ => return Some((Request::Other, 0)),
    };
    let mut at = head_end + 2;
    let mut parts = [(0, 0); 3];
    for part in parts.iter_mut().take(k) {
        if buf.len() <= at {
            return None;
        }
        if buf[at] != b'$' {
            return Some((Request::Other, 0));
        }
        let len_end = line_end(at + 1)?;
        let Some(n) = number(&buf[at + 1..len_end]) else { return Some((Request::Other, 0)) };
        let start = len_end + 2;
        if buf.len() < start + n + 2 {
            return None;
        }
        *part = (start, start + n);
        at = start + n + 2;
    }
    let name = &buf[parts[0].0..parts[0].1];
    let request = match k {
        2 if name.eq_ignore_ascii_case(b"GET") && parts[1].1 - parts[1].0 <= KEY_BYTES_MAX => {
            Request::Get(parts[1].0, parts[1].1)
        }
        3 if name.eq_ignore_ascii_case(b"SET") => Request::Set,
        _ => Request::Other,
    };
    Some((request, at))
}

#[cfg(test)]
mod tests {
    use super::{next_request, Request};

    #[test]
    fn text_requests_are_found_whole() {
        assert_eq!(next_request(b"get abc\r\nget", false), Some((Request::Get(4, 7), 9)));
        assert_eq!(next_request(b"get abc", false), None);
        assert_eq!(next_request(b"get \r\n", false), Some((Request::Other, 6)));
        assert_eq!(next_request(b"set a 0 0 1\r\nx\r\nget", false), Some((Request::Set, 16)));
        assert_eq!(next_request(b"set a 0 0 1\r\nx", false), None);
        assert_eq!(next_request(b"set a 0 0 1\r\nxyz\r\n", false), Some((Request::Other, 16)));
        assert_eq!(next_request(b"delete a\r\n", false), Some((Request::Other, 10)));
    }

    #[test]
    fn resp_requests_are_found_whole() {
        let get = b"*2\r\n$3\r\nGET\r\n$3\r\nabc\r\n";
        assert_eq!(next_request(get, true), Some((Request::Get(17, 20), get.len())));
        assert_eq!(next_request(&get[..get.len() - 1], true), None);
        let set = b"*3\r\n$3\r\nset\r\n$1\r\na\r\n$2\r\nvv\r\n";
        assert_eq!(next_request(set, true), Some((Request::Set, set.len())));
        assert_eq!(next_request(&set[..set.len() - 3], true), None);
        assert_eq!(next_request(b"*1\r\n$4\r\nPING\r\n", true), Some((Request::Other, 0)));
        assert_eq!(next_request(b"*2\r\n$3\r\nDEL\r\n$1\r\na\r\n", true).map(|r| r.0), Some(Request::Other));
    }
}
