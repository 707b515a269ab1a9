//! memcached's `watch`: a connection that stops sending commands and
//! receives log lines about other connections' requests (memcached's
//! `logger.c`), in 1.6.18's formats:
//!
//! ```text
//! ts=<secs>.<usecs> gid=<n> type=item_get key=<uri> status=found|not_found clsid=<c> cfd=<fd> size=<n>
//! ts=… gid=… type=item_store key=<uri> status=stored|not_stored|exists|not_found|too_large|no_memory cmd=set|add|… ttl=<s> clsid=<c> cfd=<fd> size=<n>
//! ts=… gid=… type=eviction key=<uri> fetch=yes|no ttl=<s> la=<t> clsid=<c> size=<n>
//! ts=… gid=… type=conn_new rip=<ip> rport=<port> transport=tcp cfd=<fd>
//! ts=… gid=… type=conn_close rip=<ip> rport=<port> transport=tcp reason=normal|error|… cfd=<fd>
//! ts=… gid=… skipped=<n>
//! ```
//!
//! `<usecs>` is printed as memcached's `%d`, without leading zeros; the
//! key is URI-encoded as its `uriencode` does; `gid` counts every line
//! logged, from 1. A watcher's queue holds at most
//! [`WATCHER_QUEUE_BYTES_MAX`] (memcached's `watcher_logbuf_size`); lines
//! past it are counted and announced by a `skipped=` line once there is
//! room.
//!
//! # Where the lines come from
//! The registry ([`Watchers`]: at most [`WATCHERS_MAX`], the union of
//! their classes as one word), the formats, and the connection's side
//! (`conn.rs`: a watching connection reads no more requests and each of
//! its turns writes its queued lines). The event loop places each
//! memcached connection (`Conn::place`: worker, token, fd, peer; a
//! `conn_new` line), gives a turn to the tokens [`Watchers::ready_of`]
//! names when its waker rings, and calls `Conn::leave` at close (a
//! `conn_close` line). The text protocol's gets and storage commands log
//! `item_get` and `item_store` (`exec.rs`) when [`Watchers::wants`] says
//! someone listens (one relaxed load per batch or command), waking the
//! watcher's worker through the `Host`. The meta and binary protocols do
//! not log yet (docs/memcached-ops.md).

use amalgam_protocol::text::Keys;
use std::io::Write as _;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Most watchers at once (memcached's `WATCHER_LIMIT`).
pub const WATCHERS_MAX: usize = 20;
/// A watcher's queue (memcached's `watcher_logbuf_size` default, 256 KiB).
pub const WATCHER_QUEUE_BYTES_MAX: usize = 256 * 1024;
/// Longest key a line shows, URI-encoded (memcached's
/// `KEY_MAX_URI_ENCODED_LENGTH`: 250 bytes, each up to 3).
const KEY_URI_BYTES_MAX: usize = 250 * 3;

/// memcached's watch classes (`LOG_*`), as bits.
pub mod class {
    pub const RAWCMDS: u32 = 1 << 0;
    pub const EVICTIONS: u32 = 1 << 1;
    pub const FETCHERS: u32 = 1 << 2;
    pub const MUTATIONS: u32 = 1 << 3;
    pub const SYSEVENTS: u32 = 1 << 4;
    pub const CONNEVENTS: u32 = 1 << 5;
    pub const PROXYREQS: u32 = 1 << 6;
    pub const PROXYEVENTS: u32 = 1 << 7;
    pub const PROXYUSER: u32 = 1 << 8;
}

/// The classes `watch <args>` asks for (none: fetchers); None for a word
/// memcached does not know (it answers `ERROR`).
pub fn parse_classes(args: Keys<'_>) -> Option<u32> {
    let mut classes = 0;
    for w in args.iter() {
        classes |= match w {
            b"rawcmds" => class::RAWCMDS,
            b"evictions" => class::EVICTIONS,
            b"fetchers" => class::FETCHERS,
            b"mutations" => class::MUTATIONS,
            b"sysevents" => class::SYSEVENTS,
            b"connevents" => class::CONNEVENTS,
            b"proxyreqs" => class::PROXYREQS,
            b"proxyevents" => class::PROXYEVENTS,
            b"proxyuser" => class::PROXYUSER,
            _ => return None,
        };
    }
    Some(if classes == 0 { class::FETCHERS } else { classes })
}

/// One watcher: its classes, where its connection lives (worker, token)
/// and its queue.
#[derive(Debug)]
pub struct Watcher {
    pub classes: u32,
    pub worker: usize,
    pub token: usize,
    queue: Mutex<Queue>,
}

#[derive(Debug, Default)]
struct Queue {
    bytes: Vec<u8>,
    skipped: u64,
}

/// The figures `stats` shows (`log_worker_written`, `log_watcher_skipped`,
/// `log_watcher_sent`, `log_watchers`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WatchStats {
    pub written: u64,
    pub skipped: u64,
    pub sent: u64,
    pub watchers: u64,
}

/// Every watcher of a server.
#[derive(Debug, Default)]
pub struct Watchers {
    /// The union of the watchers' classes (0: nobody watches).
    classes: AtomicU32,
    list: Mutex<Vec<Arc<Watcher>>>,
    gid: AtomicU64,
    written: AtomicU64,
    skipped: AtomicU64,
    sent: AtomicU64,
}

impl Watchers {
    /// True if some watcher wants `class`: one relaxed load.
    #[inline]
    pub fn wants(&self, class: u32) -> bool {
        self.classes.load(Ordering::Relaxed) & class != 0
    }

    /// The union of the watchers' classes.
    pub fn classes(&self) -> u32 {
        self.classes.load(Ordering::Relaxed)
    }

    /// Adds the connection at `at` (worker, token) as a watcher of
    /// `classes`; Err: memcached's refusals, `WATCHER_TOO_MANY` past
    /// [`WATCHERS_MAX`], `WATCHER_FAILED` for a connection the event loop
    /// did not place (its lines could not be delivered).
    pub fn add(&self, classes: u32, at: Option<(usize, usize)>) -> Result<Arc<Watcher>, &'static str> {
        let Some((worker, token)) = at else { return Err("WATCHER_FAILED failed to add log watcher") };
        let mut l = self.list.lock().unwrap_or_else(|e| e.into_inner());
        if l.len() >= WATCHERS_MAX {
            return Err("WATCHER_TOO_MANY log watcher limit reached");
        }
        let w = Arc::new(Watcher { classes, worker, token, queue: Mutex::new(Queue::default()) });
        l.push(Arc::clone(&w));
        self.classes.fetch_or(classes, Ordering::Relaxed);
        Ok(w)
    }

    /// Removes `w` (its connection closed).
    pub fn remove(&self, w: &Arc<Watcher>) {
        let mut l = self.list.lock().unwrap_or_else(|e| e.into_inner());
        l.retain(|x| !Arc::ptr_eq(x, w));
        self.classes.store(l.iter().fold(0, |c, x| c | x.classes), Ordering::Relaxed);
    }

    /// Logs one line of `class` (composed by `body` after the `ts= gid= `
    /// prefix, without its newline) to every watcher of that class; a
    /// watcher whose queue is full counts it skipped. `wake(worker)` is
    /// called for each watcher whose queue was empty: its worker must give
    /// it a turn ([`Watchers::ready_of`]). True if some watcher took it.
    pub fn log(&self, class: u32, body: impl FnOnce(&mut Vec<u8>), mut wake: impl FnMut(usize)) -> bool {
        let l = self.list.lock().unwrap_or_else(|e| e.into_inner());
        if !l.iter().any(|w| w.classes & class != 0) {
            return false;
        }
        let gid = self.gid.fetch_add(1, Ordering::Relaxed) + 1;
        let mut line = Vec::with_capacity(128);
        prefix(&mut line, std::time::SystemTime::now(), gid);
        body(&mut line);
        line.push(b'\n');
        self.written.fetch_add(1, Ordering::Relaxed);
        let mut taken = false;
        for w in l.iter().filter(|w| w.classes & class != 0) {
            let mut q = w.queue.lock().unwrap_or_else(|e| e.into_inner());
            if q.bytes.len() + line.len() > WATCHER_QUEUE_BYTES_MAX {
                q.skipped += 1;
                self.skipped.fetch_add(1, Ordering::Relaxed);
            } else {
                if q.bytes.is_empty() {
                    wake(w.worker);
                }
                q.bytes.extend_from_slice(&line);
                taken = true;
            }
        }
        taken
    }

    /// The tokens of `worker`'s watchers with lines (or a skipped count)
    /// waiting: the connections its woken loop gives a turn.
    pub fn ready_of(&self, worker: usize) -> Vec<usize> {
        let l = self.list.lock().unwrap_or_else(|e| e.into_inner());
        l.iter()
            .filter(|w| w.worker == worker)
            .filter(|w| {
                let q = w.queue.lock().unwrap_or_else(|e| e.into_inner());
                !q.bytes.is_empty() || q.skipped > 0
            })
            .map(|w| w.token)
            .collect()
    }

    /// Moves `w`'s queued lines to `out` (first a `skipped=` line if some
    /// were dropped).
    pub fn drain(&self, w: &Watcher, out: &mut Vec<u8>) {
        let mut q = w.queue.lock().unwrap_or_else(|e| e.into_inner());
        if q.skipped > 0 {
            let gid = self.gid.fetch_add(1, Ordering::Relaxed) + 1;
            prefix(out, std::time::SystemTime::now(), gid);
            let _ = writeln!(out, "skipped={}", q.skipped);
            q.skipped = 0;
        }
        if !q.bytes.is_empty() {
            self.sent.fetch_add(1, Ordering::Relaxed);
            out.append(&mut q.bytes);
        }
    }

    /// `stats`' figures.
    pub fn stats(&self) -> WatchStats {
        WatchStats {
            written: self.written.load(Ordering::Relaxed),
            skipped: self.skipped.load(Ordering::Relaxed),
            sent: self.sent.load(Ordering::Relaxed),
            watchers: self.list.lock().unwrap_or_else(|e| e.into_inner()).len() as u64,
        }
    }
}

/// `ts=<secs>.<usecs> gid=<gid> `, memcached's `ts=%lld.%d gid=%llu `.
fn prefix(out: &mut Vec<u8>, at: std::time::SystemTime, gid: u64) {
    let t = at.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let _ = write!(out, "ts={}.{} gid={gid} ", t.as_secs(), t.subsec_micros());
}

/// memcached's `uriencode` of a key, cut at its longest encoded length.
fn uri_key(key: &[u8], out: &mut Vec<u8>) {
    crate::slabs::uri_encode_within(key, KEY_URI_BYTES_MAX, out);
}

/// `type=item_get …`: a fetch (get, gets, gat, touch, delete, incr, …).
pub fn item_get(out: &mut Vec<u8>, key: &[u8], found: bool, clsid: u32, cfd: i64, size: usize) {
    out.extend_from_slice(b"type=item_get key=");
    uri_key(key, out);
    let status = if found { "found" } else { "not_found" };
    let _ = write!(out, " status={status} clsid={clsid} cfd={cfd} size={size}");
}

/// `type=item_store …`: a storage command's outcome (`status` one of
/// memcached's `stored not_stored exists not_found too_large no_memory`,
/// `cmd` its `set add replace append prepend cas`).
#[allow(clippy::too_many_arguments)]
pub fn item_store(out: &mut Vec<u8>, key: &[u8], status: &str, cmd: &str, ttl: u32, clsid: u32, cfd: i64, size: usize) {
    out.extend_from_slice(b"type=item_store key=");
    uri_key(key, out);
    let _ = write!(out, " status={status} cmd={cmd} ttl={ttl} clsid={clsid} cfd={cfd} size={size}");
}

/// `type=eviction …`: an item evicted (`fetch`: it had been read).
pub fn eviction(out: &mut Vec<u8>, key: &[u8], fetched: bool, ttl: i64, la: u32, clsid: u32, size: usize) {
    out.extend_from_slice(b"type=eviction key=");
    uri_key(key, out);
    let fetch = if fetched { "yes" } else { "no" };
    let _ = write!(out, " fetch={fetch} ttl={ttl} la={la} clsid={clsid} size={size}");
}

/// `type=conn_new …`: a connection accepted.
pub fn conn_new(out: &mut Vec<u8>, peer: std::net::SocketAddr, cfd: i64) {
    let _ = write!(out, "type=conn_new rip={} rport={} transport=tcp cfd={cfd}", peer.ip(), peer.port());
}

/// `type=conn_close …`: a connection closed, for `reason` (memcached's
/// `normal error timeout shutdown …`).
pub fn conn_close(out: &mut Vec<u8>, peer: std::net::SocketAddr, reason: &str, cfd: i64) {
    let _ =
        write!(out, "type=conn_close rip={} rport={} transport=tcp reason={reason} cfd={cfd}", peer.ip(), peer.port());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(f: impl FnOnce(&mut Vec<u8>)) -> String {
        let mut out = Vec::new();
        f(&mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn lines_are_memcacheds_logger_formats() {
        // Lines memcached 1.6.18 wrote to a watcher, past their `ts= gid= `.
        assert_eq!(
            text(|o| item_get(o, b"foo", false, 0, 26, 0)),
            "type=item_get key=foo status=not_found clsid=0 cfd=26 size=0"
        );
        assert_eq!(
            text(|o| item_get(o, b"k\x01y", true, 1, 26, 3)),
            "type=item_get key=k%01y status=found clsid=1 cfd=26 size=3"
        );
        assert_eq!(
            text(|o| item_store(o, b"foo", "stored", "set", 0, 1, 26, 3)),
            "type=item_store key=foo status=stored cmd=set ttl=0 clsid=1 cfd=26 size=3"
        );
        assert_eq!(
            text(|o| item_store(o, b"big", "too_large", "set", 0, 26, 4, 0)),
            "type=item_store key=big status=too_large cmd=set ttl=0 clsid=26 cfd=4 size=0"
        );
        let peer: std::net::SocketAddr = "127.0.0.1:39990".parse().unwrap();
        assert_eq!(text(|o| conn_new(o, peer, 26)), "type=conn_new rip=127.0.0.1 rport=39990 transport=tcp cfd=26");
        assert_eq!(
            text(|o| conn_close(o, peer, "normal", 26)),
            "type=conn_close rip=127.0.0.1 rport=39990 transport=tcp reason=normal cfd=26"
        );
        assert_eq!(
            text(|o| eviction(o, b"a b", true, -1, 1700000000, 3, 10)),
            "type=eviction key=a%20b fetch=yes ttl=-1 la=1700000000 clsid=3 size=10"
        );
        // memcached's %d microseconds: no leading zeros.
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_micros(1_796_656_410_022_705);
        assert_eq!(text(|o| prefix(o, at, 2)), "ts=1796656410.22705 gid=2 ");
    }

    #[test]
    fn classes_as_memcached_parses_them() {
        assert_eq!(parse_classes(Keys::new(b"")), Some(class::FETCHERS));
        assert_eq!(
            parse_classes(Keys::new(b"fetchers mutations evictions connevents")),
            Some(class::FETCHERS | class::MUTATIONS | class::EVICTIONS | class::CONNEVENTS)
        );
        // 1.6.18 has no `deletions` class.
        assert_eq!(parse_classes(Keys::new(b"deletions")), None);
        assert_eq!(parse_classes(Keys::new(b"foo")), None);
    }

    #[test]
    fn the_registry_queues_bounds_and_counts() {
        let ws = Watchers::default();
        assert!(!ws.wants(class::FETCHERS));
        let no_wake = |_| panic!("nobody to wake");
        assert!(!ws.log(class::FETCHERS, |o| o.extend_from_slice(b"x"), no_wake));
        assert_eq!(ws.add(class::FETCHERS, None).unwrap_err(), "WATCHER_FAILED failed to add log watcher");
        let w = ws.add(class::FETCHERS, Some((1, 7))).unwrap();
        assert!(ws.wants(class::FETCHERS) && !ws.wants(class::MUTATIONS));
        let mut woken = Vec::new();
        assert!(ws.log(class::FETCHERS, |o| item_get(o, b"k", true, 1, 5, 1), |wk| woken.push(wk)));
        assert!(ws.log(class::FETCHERS, |o| item_get(o, b"k", true, 1, 5, 1), |wk| woken.push(wk)));
        assert_eq!(woken, [1], "the worker is woken once, when the queue fills from empty");
        assert_eq!((ws.ready_of(1), ws.ready_of(0)), (vec![7], vec![]));
        assert!(!ws.log(class::MUTATIONS, |o| o.extend_from_slice(b"x"), no_wake));
        let mut out = Vec::new();
        ws.drain(&w, &mut out);
        let line = String::from_utf8(out).unwrap();
        assert!(line.starts_with("ts=") && line.contains(" gid=1 type=item_get key=k status=found"), "{line}");
        assert!(line.contains(" gid=2 type=item_get") && line.ends_with('\n'));
        assert!(ws.ready_of(1).is_empty(), "drained");
        // A full queue skips, and says so once drained.
        let big = vec![b'x'; WATCHER_QUEUE_BYTES_MAX / 2];
        for _ in 0..3 {
            ws.log(class::FETCHERS, |o| o.extend_from_slice(&big), |_| ());
        }
        let mut out = Vec::new();
        ws.drain(&w, &mut out);
        let text = String::from_utf8_lossy(&out);
        assert!(text.contains(" skipped=2\n"), "{}", &text[..80]);
        assert_eq!(ws.stats().skipped, 2);
        for _ in 1..WATCHERS_MAX {
            ws.add(class::EVICTIONS, Some((0, 1))).unwrap();
        }
        assert_eq!(ws.add(class::EVICTIONS, Some((0, 1))).unwrap_err(), "WATCHER_TOO_MANY log watcher limit reached");
        ws.remove(&w);
        assert!(!ws.wants(class::FETCHERS) && ws.wants(class::EVICTIONS));
    }
}
