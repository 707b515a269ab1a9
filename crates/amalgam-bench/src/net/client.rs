//! A blocking, pipelining client on one connection, for the tools that
//! decide their next request from the last replies (the preload's
//! verification, `fill`, `replay`): the caller appends any number of
//! requests to one buffer, writes them with one [`Client::send`], then takes
//! the replies in order with [`Client::next`] (parsed by `proto::parse`) or,
//! for `stats`, [`Client::stats`].

use super::proto::{self, Event, Protocol};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// Bytes asked of the socket per read.
const READ_CHUNK_BYTES: usize = 64 << 10;

/// One connection with its unparsed input.
#[derive(Debug)]
pub struct Client {
    sock: TcpStream,
    /// Received bytes; `buf[head..]` is not yet returned to the caller.
    buf: Vec<u8>,
    head: usize,
}

impl Client {
    /// Connects with `timeout` for the connect and for every later read
    /// (a server that stops answering fails the tool instead of hanging it).
    pub fn connect(addr: SocketAddr, timeout: Duration) -> Result<Client, String> {
        let sock = TcpStream::connect_timeout(&addr, timeout).map_err(|e| format!("cannot connect to {addr}: {e}"))?;
        sock.set_read_timeout(Some(timeout)).map_err(|e| e.to_string())?;
        sock.set_nodelay(true).map_err(|e| e.to_string())?;
        Ok(Client { sock, buf: Vec::with_capacity(READ_CHUNK_BYTES), head: 0 })
    }

    /// Writes `bytes` (any number of requests) in full.
    pub fn send(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.sock.write_all(bytes).map_err(|e| format!("write: {e}"))
    }

    /// The next reply unit and its bytes (for [`Event::Value`], its data is
    /// `proto::value_data(unit, unit.len(), len)`; for an error reply, the
    /// unit is the server's line).
    pub fn next(&mut self, proto: Protocol) -> Result<(Event, &[u8]), String> {
        loop {
            match proto::parse(proto, &self.buf[self.head..]).map_err(|m| m.0)? {
                Some((event, used)) => {
                    let at = self.head;
                    self.head += used;
                    return Ok((event, &self.buf[at..at + used]));
                }
                None => self.fill()?,
            }
        }
    }

    /// Sends `stats` and reads its `STAT <name> <value>` lines up to `END`.
    pub fn stats(&mut self) -> Result<ServerStats, String> {
        self.send(b"stats\r\n")?;
        let mut lines = Vec::new();
        loop {
            let line = self.line()?;
            if line == b"END" {
                break;
            }
            lines.push(String::from_utf8_lossy(line).into_owned());
        }
        ServerStats::parse(lines.iter().map(String::as_str))
    }

    /// The next `\r\n`-ended line, without its end.
    fn line(&mut self) -> Result<&[u8], String> {
        loop {
            let rest = &self.buf[self.head..];
            if let Some(nl) = rest.iter().position(|&b| b == b'\n') {
                if nl == 0 || rest[nl - 1] != b'\r' {
                    return Err("reply line not ended by \\r\\n".into());
                }
                let at = self.head;
                self.head += nl + 1;
                return Ok(&self.buf[at..at + nl - 1]);
            }
            if rest.len() > proto::LINE_BYTES_MAX {
                return Err("reply line too long".into());
            }
            self.fill()?;
        }
    }

    /// A RESP server's `INFO` (Redis, or Amalgam's RESP port) as
    /// [`ServerStats`] under memcached's names where one means the same
    /// (`curr_items` the keys of every database, `get_hits`/`get_misses`
    /// the keyspace hits and misses, `evictions`, `limit_maxbytes`
    /// maxmemory, `version`), every field also under its own name. For
    /// tools that compare a Redis peer (`replay --protocol resp`).
    pub fn info_stats(&mut self) -> Result<ServerStats, String> {
        self.send(b"INFO\r\n")?;
        let head = String::from_utf8_lossy(self.line()?).into_owned();
        let len: usize = head
            .strip_prefix('$')
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| format!("INFO answered {head:?}, not a bulk string"))?;
        let mut map = BTreeMap::new();
        let (mut read, mut keys) = (0, 0u64);
        // Bounded by the reply's length: each line is at least its `\r\n`.
        while read < len + 2 {
            let line = String::from_utf8_lossy(self.line()?).into_owned();
            read += line.len() + 2;
            let Some((name, value)) = line.split_once(':') else { continue };
            if name.starts_with("db") {
                let n = value.split(',').find_map(|kv| kv.strip_prefix("keys=")).and_then(|n| n.parse::<u64>().ok());
                keys += n.unwrap_or(0);
            }
            map.insert(name.to_string(), value.to_string());
        }
        for (ours, theirs) in [
            ("get_hits", "keyspace_hits"),
            ("get_misses", "keyspace_misses"),
            ("evictions", "evicted_keys"),
            ("limit_maxbytes", "maxmemory"),
            ("version", "redis_version"),
        ] {
            if let Some(v) = map.get(theirs).cloned() {
                map.insert(ours.to_string(), v);
            }
        }
        map.insert("curr_items".into(), keys.to_string());
        Ok(ServerStats(map))
    }

    /// Reads more input, first dropping what was returned.
    fn fill(&mut self) -> Result<(), String> {
        self.buf.drain(..self.head);
        self.head = 0;
        let len = self.buf.len();
        self.buf.resize(len + READ_CHUNK_BYTES, 0);
        let n = self.sock.read(&mut self.buf[len..]);
        self.buf.truncate(len + *n.as_ref().unwrap_or(&0));
        match n {
            Ok(0) => Err("connection closed by the server".into()),
            Ok(_) => Ok(()),
            Err(e) => Err(format!("read: {e}")),
        }
    }
}

/// The general-purpose `stats` of a server, by name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerStats(pub BTreeMap<String, String>);

impl ServerStats {
    /// Parses `STAT <name> <value>` lines (the value may hold spaces, as
    /// memcached's `rusage_*` do not but some servers' version strings do).
    pub fn parse<'a>(lines: impl IntoIterator<Item = &'a str>) -> Result<ServerStats, String> {
        let mut map = BTreeMap::new();
        for line in lines {
            let mut parts = line.splitn(3, ' ');
            match (parts.next(), parts.next(), parts.next()) {
                (Some("STAT"), Some(name), Some(value)) if !name.is_empty() => {
                    map.insert(name.to_string(), value.to_string());
                }
                _ => return Err(format!("not a STAT line in the stats reply: {line:?}")),
            }
        }
        Ok(ServerStats(map))
    }

    /// A counter, if the server reports it as a decimal.
    pub fn u64(&self, name: &str) -> Option<u64> {
        self.0.get(name)?.parse().ok()
    }

    /// A counter the tool cannot do without.
    pub fn require(&self, name: &str) -> Result<u64, String> {
        self.u64(name).ok_or_else(|| format!("the server's stats have no numeric {name:?}"))
    }

    /// All of them as a JSON object (numbers where they parse).
    pub fn to_json(&self) -> serde_json::Value {
        let map = self
            .0
            .iter()
            .map(|(k, v)| {
                let v = v.parse::<u64>().map_or_else(|_| serde_json::Value::from(v.as_str()), serde_json::Value::from);
                (k.clone(), v)
            })
            .collect();
        serde_json::Value::Object(map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_lines_parse() {
        let s = ServerStats::parse(["STAT pid 42", "STAT version 1.6.18", "STAT rusage_user 0.1 x"]).unwrap();
        assert_eq!(s.u64("pid"), Some(42));
        assert_eq!(s.0["version"], "1.6.18");
        assert_eq!(s.0["rusage_user"], "0.1 x");
        assert_eq!(s.u64("version"), None);
        assert!(s.require("evictions").unwrap_err().contains("evictions"));
        assert_eq!(s.to_json()["pid"], 42);
        assert!(ServerStats::parse(["STAT lonely"]).is_err());
        assert!(ServerStats::parse(["VALUE a 0 1"]).is_err());
    }

    #[test]
    fn replies_and_stats_in_pieces() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut req = [0u8; 64];
            let mut got = Vec::new();
            while !got.ends_with(b"stats\r\n") {
                let n = s.read(&mut req).unwrap();
                got.extend_from_slice(&req[..n]);
            }
            let reply: &[u8] =
                b"VALUE 0001 0 3\r\nabc\r\nEND\r\nSTAT curr_items 7\r\nSTAT evictions 0\r\nEND\r\nSTORED\r\n";
            for b in reply {
                s.write_all(std::slice::from_ref(b)).unwrap();
            }
        });
        let mut c = Client::connect(addr, Duration::from_secs(5)).unwrap();
        c.send(b"get 0001\r\nstats\r\n").unwrap();
        let (e, unit) = c.next(Protocol::Text).unwrap();
        assert_eq!(e, Event::Value { key: Some(1), len: 3 });
        assert_eq!(proto::value_data(unit, unit.len(), 3), b"abc");
        assert_eq!(c.next(Protocol::Text).unwrap().0, Event::End);
        let mut lines = Vec::new();
        loop {
            let l = c.line().unwrap();
            if l == b"END" {
                break;
            }
            lines.push(String::from_utf8(l.to_vec()).unwrap());
        }
        let s = ServerStats::parse(lines.iter().map(String::as_str)).unwrap();
        assert_eq!((s.u64("curr_items"), s.u64("evictions")), (Some(7), Some(0)));
        assert_eq!(c.next(Protocol::Text).unwrap().0, Event::Stored);
        server.join().unwrap();
        assert!(c.next(Protocol::Text).unwrap_err().contains("closed"));
    }
}
