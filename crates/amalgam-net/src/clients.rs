//! The RESP client registry: what CLIENT LIST, CLIENT INFO and CLIENT KILL
//! see of connections that live on other workers, and MONITOR's fan-out.
//!
//! ## Ownership
//! A connection belongs to one worker for its whole life (lib.rs § Threads):
//! only that worker reads its socket, writes its buffers and closes it. The
//! registry holds, per RESP connection, an `Arc<Client>` with what another
//! thread may read — addresses, age, the last command, the name — as
//! atomics or under a per-client mutex that only CLIENT SETNAME/SETINFO and
//! CLIENT LIST/INFO take. The request path writes two relaxed atomics of
//! its own client per batch and per command ([`Client::touch`],
//! [`Client::set_last_cmd`]); it never takes the registry's lock.
//!
//! ## Killing a connection on another worker
//! CLIENT KILL never touches another worker's connection. It pushes the
//! victim's (client id, slab token) on the owning worker's kill inbox and
//! wakes that worker's poll; the worker drains its inbox when its waker
//! fires and closes each connection whose token still holds that client id
//! (a token freed and reused since is left alone). A connection that kills
//! itself closes after its reply, as in Redis.
//!
//! ## MONITOR
//! Each monitoring connection registers a [`Monitor`]: a bounded queue of
//! formatted lines that every worker appends to and the monitor's own
//! worker drains into its socket (woken through its waker). A monitor whose
//! queue passes [`MONITOR_QUEUE_BYTES_MAX`] is dropped (its connection
//! closed), so a slow monitor never blocks or grows a worker. With no
//! monitor attached the request path pays one relaxed load
//! ([`Registry::monitoring`]).

use mio::Waker;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// Bytes of lines a monitor may have queued and not yet sent before it is
/// dropped: Redis's default `client-output-buffer-limit` for normal
/// clients is unlimited, but a monitor that cannot keep up must not grow a
/// worker's memory without bound (Redis's pubsub class: 32 MiB hard).
pub const MONITOR_QUEUE_BYTES_MAX: usize = 32 << 20;

/// CLIENT flags a connection can carry (Redis's letters in CLIENT LIST).
pub mod flag {
    /// CLIENT NO-EVICT ON (`e`).
    pub const NO_EVICT: u8 = 1;
    /// CLIENT NO-TOUCH ON (`T`).
    pub const NO_TOUCH: u8 = 2;
    /// MONITOR (`O`).
    pub const MONITOR: u8 = 4;
    /// Holds a pub/sub subscription (`P`).
    pub const PUBSUB: u8 = 8;
    /// A replica's connection, served by a replication sender thread
    /// (`S`).
    pub const REPLICA: u8 = 16;
    /// This replica's link to its primary (`M`).
    pub const MASTER: u8 = 32;
    /// Waits in a blocking command: BLPOP and the others, WAIT (`b`).
    pub const BLOCKED: u8 = 64;
}

/// Bits of [`Client::tracking`]: CLIENT TRACKING's state as CLIENT LIST
/// shows it (Redis's `t`, `R`, `B` flags).
pub mod tracking_flag {
    /// CLIENT TRACKING ON (`t`).
    pub const ON: u8 = 1;
    /// The REDIRECT target is gone (`R`).
    pub const BROKEN_REDIR: u8 = 2;
    /// BCAST mode (`B`).
    pub const BCAST: u8 = 4;
}

/// What CLIENT KILL does to a connection no worker owns (a replica's,
/// the link to the primary): its replication thread's own way to drop it.
pub struct KillHook(Box<dyn Fn() + Send + Sync>);

impl std::fmt::Debug for KillHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KillHook")
    }
}

/// The attributes a client sets about itself.
#[derive(Debug, Default)]
pub struct Attrs {
    pub name: Option<Vec<u8>>,
    /// The ACL user, when not `default` (set by AUTH, resp/acl.rs).
    pub user: Option<Vec<u8>>,
    pub lib_name: Option<Vec<u8>>,
    pub lib_ver: Option<Vec<u8>>,
}

/// What other threads may see of one RESP connection.
#[derive(Debug)]
pub struct Client {
    pub id: u64,
    /// The peer's and our address, `ip:port`.
    pub addr: String,
    pub laddr: String,
    pub fd: i32,
    /// The owning worker and the connection's slab token there.
    pub worker: usize,
    pub token: usize,
    created: Instant,
    /// When the last batch was served: a `ticks` reading.
    last_tick: AtomicU64,
    /// The last command: its table index + 1 (0: none yet) in the low 16
    /// bits, its subcommand's index + 1 above.
    last_cmd: AtomicU32,
    /// [`flag`] bits.
    pub flags: AtomicU8,
    /// The protocol version (2 or 3).
    pub resp: AtomicU8,
    /// The selected database (SELECT; CLIENT LIST's `db=`).
    pub db: AtomicU32,
    /// Channels and patterns subscribed (CLIENT LIST's `sub=`, `psub=`).
    pub sub: AtomicU32,
    pub psub: AtomicU32,
    /// Shard channels subscribed (`ssub=`).
    pub ssub: AtomicU32,
    /// CLIENT TRACKING's [`tracking_flag`] bits.
    pub tracking: AtomicU8,
    /// CLIENT TRACKING's REDIRECT (`redir=`): -1 while not tracking, 0
    /// without a redirect.
    pub redir: AtomicI64,
    pub attrs: Mutex<Attrs>,
    /// Set when a replication thread serves the connection instead of a
    /// worker ([`Registry::kill`] calls it).
    kill_hook: OnceLock<KillHook>,
}

impl Client {
    /// A client of no connection (registered nowhere), for unit tests of
    /// the modules that hold clients (the server's Pub/Sub).
    pub fn detached(id: u64, worker: usize, token: usize) -> Arc<Client> {
        Arc::new(Client::new(id, String::new(), String::new(), 0, worker, token))
    }

    /// A new connection's client: RESP2, no name, nothing run yet.
    fn new(id: u64, addr: String, laddr: String, fd: i32, worker: usize, token: usize) -> Client {
        Client {
            id,
            addr,
            laddr,
            fd,
            worker,
            token,
            created: Instant::now(),
            last_tick: AtomicU64::new(crate::ticks::now()),
            last_cmd: AtomicU32::new(0),
            flags: AtomicU8::new(0),
            resp: AtomicU8::new(2),
            db: AtomicU32::new(0),
            sub: AtomicU32::new(0),
            psub: AtomicU32::new(0),
            ssub: AtomicU32::new(0),
            tracking: AtomicU8::new(0),
            redir: AtomicI64::new(-1),
            attrs: Mutex::new(Attrs::default()),
            kill_hook: OnceLock::new(),
        }
    }

    /// Records that the connection was served now (CLIENT LIST's idle).
    #[inline]
    pub fn touch(&self) {
        self.touch_at(crate::ticks::now());
    }

    /// [`Client::touch`] with the time already read (a `ticks` reading).
    #[inline]
    pub fn touch_at(&self, tick: u64) {
        self.last_tick.store(tick, Ordering::Relaxed);
    }

    /// Records the command being run (CLIENT LIST's cmd).
    #[inline]
    pub fn set_last_cmd(&self, index: usize, sub: Option<usize>) {
        let v = (index as u32 + 1) | (sub.map_or(0, |s| s as u32 + 1) << 16);
        self.last_cmd.store(v, Ordering::Relaxed);
    }

    /// The last command as (table index, subcommand index).
    pub fn last_cmd(&self) -> Option<(usize, Option<usize>)> {
        let v = self.last_cmd.load(Ordering::Relaxed);
        let cmd = (v & 0xffff) as usize;
        (cmd != 0).then(|| (cmd - 1, ((v >> 16) as usize).checked_sub(1)))
    }

    /// Seconds since the connection was accepted.
    pub fn age_secs(&self) -> u64 {
        self.created.elapsed().as_secs()
    }

    /// Seconds since the connection was last served.
    pub fn idle_secs(&self) -> u64 {
        crate::ticks::nanos_between(self.last_tick.load(Ordering::Relaxed), crate::ticks::now()) / 1_000_000_000
    }

    pub fn has(&self, f: u8) -> bool {
        self.flags.load(Ordering::Relaxed) & f != 0
    }

    pub fn set_flag(&self, f: u8, on: bool) {
        if on {
            self.flags.fetch_or(f, Ordering::Relaxed);
        } else {
            self.flags.fetch_and(!f, Ordering::Relaxed);
        }
    }

    /// The attributes, poison or not (they are plain data).
    pub fn attrs(&self) -> std::sync::MutexGuard<'_, Attrs> {
        self.attrs.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One MONITOR connection's queue of lines.
#[derive(Debug)]
pub struct Monitor {
    pub client: Arc<Client>,
    /// Formatted lines not yet taken by the owning worker.
    queue: Mutex<Vec<u8>>,
    /// Set when the queue overflowed: the owning worker closes it.
    pub dropped: AtomicBool,
}

impl Monitor {
    /// Takes the queued lines into `out` (the owning worker).
    pub fn drain_into(&self, out: &mut Vec<u8>) {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        out.append(&mut q);
    }
}

/// Every RESP connection, and each worker's kill inbox and waker.
#[derive(Debug)]
pub struct Registry {
    clients: Mutex<BTreeMap<u64, Arc<Client>>>,
    /// Per worker: (client id, token) of connections to close.
    kills: Vec<Mutex<Vec<(u64, usize)>>>,
    /// Per worker: (client id, token, with the error) of blocked
    /// connections CLIENT UNBLOCK ends.
    unblocks: Vec<Mutex<Vec<(u64, usize, bool)>>>,
    /// Per worker: its poll's waker (set once at start-up by main).
    wakers: OnceLock<Vec<Arc<Waker>>>,
    /// The attached monitors; `monitoring` mirrors `!monitors.is_empty()`.
    monitors: Mutex<Vec<Arc<Monitor>>>,
    monitoring: AtomicBool,
}

impl Registry {
    pub fn new(workers: usize) -> Registry {
        Registry {
            clients: Mutex::new(BTreeMap::new()),
            kills: (0..workers).map(|_| Mutex::new(Vec::new())).collect(),
            unblocks: (0..workers).map(|_| Mutex::new(Vec::new())).collect(),
            wakers: OnceLock::new(),
            monitors: Mutex::new(Vec::new()),
            monitoring: AtomicBool::new(false),
        }
    }

    /// Gives the registry each worker's waker (index = worker id).
    pub fn set_wakers(&self, wakers: Vec<Arc<Waker>>) {
        let _ = self.wakers.set(wakers);
    }

    fn wake(&self, worker: usize) {
        if let Some(w) = self.wakers.get().and_then(|w| w.get(worker)) {
            let _ = w.wake();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Arc<Client>>> {
        self.clients.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers a new connection.
    pub fn add(&self, id: u64, sock: &impl crate::socket::Socket, worker: usize, token: usize) -> Arc<Client> {
        let show = |a: std::io::Result<std::net::SocketAddr>| a.map(|a| a.to_string()).unwrap_or_default();
        let c = Arc::new(Client::new(id, show(sock.peer_addr()), show(sock.local_addr()), sock.fd(), worker, token));
        self.lock().insert(id, Arc::clone(&c));
        c
    }

    /// Lists a connection a replication thread serves, not a worker: a
    /// replica's (`client`, the connection's own entry, flagged
    /// [`flag::REPLICA`]) or the link to the primary (a new entry for
    /// `sock`, flagged [`flag::MASTER`], with id `id`). CLIENT KILL runs
    /// `kill`; the thread calls [`Registry::remove`] when it ends.
    pub fn add_replication(&self, client: Arc<Client>, flag: u8, kill: impl Fn() + Send + Sync + 'static) {
        client.set_flag(flag, true);
        let _ = client.kill_hook.set(KillHook(Box::new(kill)));
        self.lock().insert(client.id, client);
    }

    /// A client entry for `sock`, owned by no worker (for
    /// [`Registry::add_replication`]).
    pub fn unowned(id: u64, sock: &std::net::TcpStream) -> Arc<Client> {
        use std::os::fd::AsRawFd;
        let show = |a: std::io::Result<std::net::SocketAddr>| a.map(|a| a.to_string()).unwrap_or_default();
        Arc::new(Client::new(id, show(sock.peer_addr()), show(sock.local_addr()), sock.as_raw_fd(), usize::MAX, 0))
    }

    /// The client `id`, if listed.
    pub fn get(&self, id: u64) -> Option<Arc<Client>> {
        self.lock().get(&id).cloned()
    }

    /// Unregisters a closed connection (and its monitor, if any).
    pub fn remove(&self, id: u64) {
        if let Some(c) = self.lock().remove(&id) {
            if c.has(flag::MONITOR) {
                self.unmonitor(id);
            }
        }
    }

    /// Every client, in id order (Redis lists them in creation order).
    pub fn snapshot(&self) -> Vec<Arc<Client>> {
        self.lock().values().cloned().collect()
    }

    /// Asks the owning worker to close `c`.
    pub fn kill(&self, c: &Client) {
        if let Some(hook) = c.kill_hook.get() {
            return (hook.0)();
        }
        let Some(inbox) = self.kills.get(c.worker) else { return };
        inbox.lock().unwrap_or_else(|e| e.into_inner()).push((c.id, c.token));
        self.wake(c.worker);
    }

    /// Asks the owning worker to end the blocking command `c` waits in
    /// (CLIENT UNBLOCK; `error`: with Redis's UNBLOCKED error, else as its
    /// timeout). A client served meanwhile is left alone by its worker.
    pub fn unblock(&self, c: &Client, error: bool) {
        let Some(inbox) = self.unblocks.get(c.worker) else { return };
        inbox.lock().unwrap_or_else(|e| e.into_inner()).push((c.id, c.token, error));
        self.wake(c.worker);
    }

    /// The CLIENT UNBLOCK requests for `worker` (called by that worker on
    /// wake-up).
    pub fn take_unblocks(&self, worker: usize) -> Vec<(u64, usize, bool)> {
        match self.unblocks.get(worker) {
            Some(m) => std::mem::take(&mut *m.lock().unwrap_or_else(|e| e.into_inner())),
            None => Vec::new(),
        }
    }

    /// The kill requests for `worker` (called by that worker on wake-up).
    pub fn take_kills(&self, worker: usize) -> Vec<(u64, usize)> {
        match self.kills.get(worker) {
            Some(m) => std::mem::take(&mut *m.lock().unwrap_or_else(|e| e.into_inner())),
            None => Vec::new(),
        }
    }

    /// True if any monitor is attached: the request path's one relaxed
    /// load. A monitor attaching between this load and a command only
    /// misses that command, as in Redis a monitor sees commands from the
    /// moment it attached.
    #[inline]
    pub fn monitoring(&self) -> bool {
        self.monitoring.load(Ordering::Relaxed)
    }

    /// Attaches `c` as a monitor.
    pub fn monitor(&self, c: &Arc<Client>) -> Arc<Monitor> {
        c.set_flag(flag::MONITOR, true);
        let m =
            Arc::new(Monitor { client: Arc::clone(c), queue: Mutex::new(Vec::new()), dropped: AtomicBool::new(false) });
        let mut ms = self.monitors.lock().unwrap_or_else(|e| e.into_inner());
        ms.push(Arc::clone(&m));
        self.monitoring.store(true, Ordering::Relaxed);
        m
    }

    /// `c` stops monitoring (RESET).
    pub fn stop_monitor(&self, c: &Client) {
        c.set_flag(flag::MONITOR, false);
        self.unmonitor(c.id);
    }

    fn unmonitor(&self, id: u64) {
        let mut ms = self.monitors.lock().unwrap_or_else(|e| e.into_inner());
        ms.retain(|m| m.client.id != id);
        self.monitoring.store(!ms.is_empty(), Ordering::Relaxed);
    }

    /// Queues `line` for every monitor; a monitor whose queue would pass
    /// [`MONITOR_QUEUE_BYTES_MAX`] is marked dropped instead (its worker
    /// closes it). Bounded by the number of monitors.
    pub fn feed(&self, line: &[u8]) {
        let ms = self.monitors.lock().unwrap_or_else(|e| e.into_inner());
        for m in ms.iter() {
            if m.dropped.load(Ordering::Relaxed) {
                continue;
            }
            {
                let mut q = m.queue.lock().unwrap_or_else(|e| e.into_inner());
                if q.len() + line.len() > MONITOR_QUEUE_BYTES_MAX {
                    q.clear();
                    m.dropped.store(true, Ordering::Relaxed);
                } else {
                    let was_empty = q.is_empty();
                    q.extend_from_slice(line);
                    if !was_empty {
                        continue;
                    }
                }
            }
            // The queue went from empty to not (or the monitor is to
            // close): its worker must look.
            self.monitor_wake(&m.client);
        }
    }

    fn monitor_wake(&self, c: &Client) {
        // A wake with nothing in the kill inbox makes the worker look at
        // its monitors (worker.rs).
        self.wake(c.worker);
    }

    /// The monitors owned by `worker`.
    pub fn monitors_of(&self, worker: usize) -> Vec<Arc<Monitor>> {
        let ms = self.monitors.lock().unwrap_or_else(|e| e.into_inner());
        ms.iter().filter(|m| m.client.worker == worker).cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(id: u64) -> Arc<Client> {
        Client::detached(id, 0, 0)
    }

    #[test]
    fn last_command_round_trips() {
        let c = client(1);
        assert_eq!(c.last_cmd(), None);
        c.set_last_cmd(0, None);
        assert_eq!(c.last_cmd(), Some((0, None)));
        c.set_last_cmd(41, Some(3));
        assert_eq!(c.last_cmd(), Some((41, Some(3))));
    }

    #[test]
    fn a_monitor_past_its_bound_is_dropped_not_grown() {
        let r = Registry::new(1);
        assert!(!r.monitoring());
        let c = client(7);
        r.clients.lock().unwrap().insert(7, Arc::clone(&c));
        let m = r.monitor(&c);
        assert!(r.monitoring() && c.has(flag::MONITOR));
        let line = vec![b'x'; 1 << 20];
        for _ in 0..MONITOR_QUEUE_BYTES_MAX / line.len() {
            r.feed(&line);
        }
        assert!(!m.dropped.load(Ordering::Relaxed));
        r.feed(&line);
        assert!(m.dropped.load(Ordering::Relaxed));
        let mut out = Vec::new();
        m.drain_into(&mut out);
        assert!(out.is_empty(), "the queue was released");
        r.remove(7);
        assert!(!r.monitoring(), "the last monitor gone, the request path is free again");
    }
}
