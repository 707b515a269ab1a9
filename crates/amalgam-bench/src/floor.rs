//! `amalgam-bench floor`: the fastest a GET server can be over the sockets
//! API on this machine, to measure what the network stack alone costs.
//!
//! It serves GETs with the cheapest work that still answers correctly: no
//! store, no general parser. Every `get <key>\r\n` (memcached text) or
//! `*2\r\n$3\r\nGET\r\n$<n>\r\n<key>\r\n` (RESP) is answered with a hit of
//! `--value-bytes` bytes for that key, so `amalgam-bench net --no-preload
//! --get-fraction 1` runs against it unchanged and checks every reply's
//! key. The event loop has the server's shape (an acceptor dealing
//! connections round-robin to `--threads` mio workers, edge-triggered,
//! one read and one write per round, the same drained-socket rule and the
//! same yield after each round), so its CPU per request is the floor for
//! any server built that way: what the kernel's TCP loopback path and the
//! scheduler cost, with the application's work taken out. Anything else a
//! client sends closes the connection.
//!
//! This is a measuring instrument, not a server: it answers only GETs,
//! keeps no data and has no limits beyond its buffers.

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
    eprintln!("amalgam-bench floor: serving GETs ({}) on {}", args.protocol, args.listen);
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

/// A reply is `head`, (text: the key and `mid`), the value, `tail`.
struct Reply {
    head: Vec<u8>,
    mid: Vec<u8>,
    value: Vec<u8>,
    tail: &'static [u8],
}

fn worker(mut poll: Poll, inbox: &Mutex<Vec<TcpStream>>, value: &[u8], resp: bool) {
    let reply = if resp {
        Reply {
            head: format!("${}\r\n", value.len()).into_bytes(),
            mid: Vec::new(),
            value: value.to_vec(),
            tail: b"\r\n",
        }
    } else {
        let mid = format!(" 0 {}\r\n", value.len()).into_bytes();
        Reply { head: b"VALUE ".to_vec(), mid, value: value.to_vec(), tail: b"\r\nEND\r\n" }
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
        while let Some((key, used)) = next_get(&c.rbuf[pos..c.rlen], resp) {
            let Some(key) = key else { return false };
            c.wbuf.extend_from_slice(&reply.head);
            if !resp {
                c.wbuf.extend_from_slice(&c.rbuf[pos + key.0..pos + key.1]);
                c.wbuf.extend_from_slice(&reply.mid);
            }
            c.wbuf.extend_from_slice(&reply.value);
            c.wbuf.extend_from_slice(reply.tail);
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

/// The next whole GET in `buf`: `Some((Some((key_start, key_end)), bytes))`,
/// `Some((None, _))` for anything that is not a GET, `None` if incomplete.
#[allow(clippy::type_complexity)]
fn next_get(buf: &[u8], resp: bool) -> Option<(Option<(usize, usize)>, usize)> {
    let line_end = |from: usize| buf[from..].windows(2).position(|w| w == b"\r\n").map(|i| from + i);
    if !resp {
        let end = line_end(0)?;
        let ok = buf.starts_with(b"get ") && end - 4 <= KEY_BYTES_MAX && end > 4;
        return Some((ok.then_some((4, end)), end + 2));
    }
    // *2\r\n$3\r\nGET\r\n$<n>\r\n<key>\r\n
    const HEAD: &[u8] = b"*2\r\n$3\r\nGET\r\n$";
    if buf.len() < HEAD.len() {
        return None;
    }
    if !buf.starts_with(HEAD) && !buf.starts_with(b"*2\r\n$3\r\nget\r\n$") {
        return Some((None, 0));
    }
    let len_end = line_end(HEAD.len())?;
    let n: usize = match std::str::from_utf8(&buf[HEAD.len()..len_end]).ok().and_then(|s| s.parse().ok()) {
        Some(n) if n <= KEY_BYTES_MAX => n,
        _ => return Some((None, 0)),
    };
    let start = len_end + 2;
    if buf.len() < start + n + 2 {
        return None;
    }
    Some((Some((start, start + n)), start + n + 2))
}

#[cfg(test)]
mod tests {
    use super::next_get;

    #[test]
    fn text_gets_are_found_whole() {
        assert_eq!(next_get(b"get abc\r\nget", false), Some((Some((4, 7)), 9)));
        assert_eq!(next_get(b"get abc", false), None);
        assert_eq!(next_get(b"set a 0 0 1\r\n", false), Some((None, 13)));
        assert_eq!(next_get(b"get \r\n", false), Some((None, 6)));
    }

    #[test]
    fn resp_gets_are_found_whole() {
        let req = b"*2\r\n$3\r\nGET\r\n$3\r\nabc\r\n";
        assert_eq!(next_get(req, true), Some((Some((17, 20)), req.len())));
        assert_eq!(next_get(&req[..req.len() - 1], true), None);
        assert_eq!(next_get(b"*3\r\n$3\r\nSET\r\n$1\r\na\r\n", true), Some((None, 0)));
    }
}
