//! Client-side caching: CLIENT TRACKING, CACHING, GETREDIR, TRACKINGINFO
//! and the invalidation messages (Redis 7.0 `tracking.c`, issue 35 §3).
//!
//! ## What a client asks for
//! * **Default mode**: the keys of every read-only command (the table's
//!   `readonly` flag, as Redis's `CMD_READONLY`) a tracking client runs
//!   are remembered in a server-wide table, key → client ids. A change
//!   to a remembered key — a write from any connection on either port,
//!   an expiry, an eviction — sends each of its clients one `invalidate`
//!   message with the key, and the key is forgotten (a client reads it
//!   again to be told again). OPTIN remembers only the command after
//!   CLIENT CACHING YES, OPTOUT all but the one after CLIENT CACHING NO.
//! * **BCAST**: nothing is remembered; a change to any key under one of
//!   the client's prefixes (`""` without PREFIX) tells it.
//! * **NOLOOP**: not about changes the client made itself.
//! * **REDIRECT id**: the messages go to client `id`: as a RESP3 push if
//!   that client speaks RESP3, as a Pub/Sub `message` on
//!   `__redis__:invalidate` if it speaks RESP2 and is subscribed to
//!   anything, else nowhere (Redis's rules). A target gone is noticed when
//!   a message would go: the tracking client is flagged
//!   `broken_redirect` (`R`) and, under RESP3, told
//!   `tracking-redir-broken`.
//! * FLUSHDB and FLUSHALL (and memcached's `flush_all`) send every
//!   tracking client `invalidate` with a null: every key.
//!
//! ## How a change reaches this module
//! Through keyspace notifications' hook: while any client tracks, the
//! server sets `notify::TRACKING` and every class of `A` in the word the
//! write paths test (`Shared::refresh_notify`), so each change calls
//! `Shared::keyspace_event` with its key — RESP's families, memcached's
//! port, the engine's expiry and eviction — and that calls
//! [`Registry::invalidate`]. While no client tracks the word is what it
//! was (zero with notifications off): a write costs nothing more.
//!
//! ## Reads
//! A tracking session's commands run one by one, not batched
//! (`resp::plain_db` sees it through the same `TRACKING` bit, so other
//! sessions keep batching), and `resp::execute` hands them to [`around`],
//! which remembers the keys after the command ran.
//!
//! ## Delivery across workers
//! Each client that receives messages has an inbox (a Pub/Sub
//! `Subscriber` kept in [`Registry::inboxes`] by client id): the writer
//! appends the message and posts the client to its worker's ready list
//! (`pubsub.rs`); that worker moves the inbox to the connection's write
//! buffer (`worker.rs`). A message for the client running the command is
//! moved right after that command's reply (EXEC's and a script's: after
//! the whole reply), as Redis 7.0's `tracking_pending_keys` does.
//!
//! ## Bounds
//! * The table holds at most `tracking-table-max-keys` keys
//!   ([`TABLE_KEYS_MAX_DEFAULT`]; 0: no bound, as Redis): past it the
//!   oldest keys are invalidated for their clients and forgotten (Redis
//!   picks random ones, over several event-loop iterations).
//! * The age queue holds at most twice the table plus
//!   [`ORDER_SLACK_ENTRIES`] entries: it is compacted past that.
//! * A write checks every BCAST prefix (one per (client, prefix), as
//!   Redis's prefix table scan).
//! * An inbox is a Pub/Sub queue: bounded by the pubsub output limit.
//!
//! ## Differences from Redis
//! * BCAST sends, per client, one message with the keys a RESP command
//!   (an EXEC, a script: all of its commands) changed under its
//!   prefixes, sorted and each once; Redis sends one per prefix with the
//!   keys changed over an event-loop iteration (several commands, several
//!   clients'). Writes on the memcached port and expiries send one
//!   message per key.
//! * The table is one mutex: while clients track, every write takes it.
//! * A connection's round reads the notification word once: a write in a
//!   round that began before the first client enabled tracking is not
//!   seen by it.
//! * The key of an entry is its name, without the database, as Redis's.

use super::pubsub::Subscriber;
use super::table::{keys_of, Cmd, Spec};
use super::{is, Arg, Ctx};
use amalgam_net::clients::{flag, tracking_flag, Client};
use amalgam_protocol::resp::{err, push_array, push_bulk, push_error, push_int, push_map, push_set, push_simple};
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

/// The tables' hasher: the engine's (foldhash), seeded per table. std's
/// SipHash was 14% of a tracked GET's instructions (callgrind,
/// docs/bench-log/2026-12-07-groups-tracking.md); foldhash's quality
/// variant still spreads client-chosen keys well.
type Hasher = foldhash::quality::RandomState;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Redis's `tracking-table-max-keys` default.
pub const TABLE_KEYS_MAX_DEFAULT: u64 = 1_000_000;
/// Stale entries the age queue may hold beyond twice the table before
/// it is compacted (an entry goes stale when its key is invalidated).
const ORDER_SLACK_ENTRIES: usize = 1024;

const ERR_REDIRECT_MISSING: &str = "ERR The client ID you want redirect to does not exist";
const ERR_REDIRECT_TWICE: &str = "ERR A client can only redirect to a single other client";
const ERR_PREFIX_NEEDS_BCAST: &str = "ERR PREFIX option requires BCAST mode to be enabled";
const ERR_SWITCH_BCAST: &str = "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.";
const ERR_BCAST_OPTS: &str = "ERR OPTIN and OPTOUT are not compatible with BCAST";
const ERR_OPTIN_OPTOUT: &str = "ERR You can't specify both OPTIN mode and OPTOUT mode";
const ERR_SWITCH_OPT: &str = "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.";
const ERR_CACHING_MODE: &str =
    "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled";
const ERR_CACHING_YES: &str = "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.";
const ERR_CACHING_NO: &str = "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.";

thread_local! {
    /// The tracking client whose command runs on this thread now (0:
    /// none): NOLOOP's writer. Set only around a tracking client's
    /// commands, so every other write reads 0.
    static WRITER: Cell<u64> = const { Cell::new(0) };
    /// While a RESP command runs with a client tracking ([`around`]):
    /// the BCAST invalidations it caused, (client, its mode, key), sent
    /// when it ends as one message per client with its keys (Redis
    /// sends one per prefix and event-loop iteration). None: send at once.
    static BCAST: RefCell<Option<Vec<Pending>>> = const { RefCell::new(None) };
}

/// A BCAST invalidation waiting for its command's end: (client, its
/// mode, key).
type Pending = (u64, Mode, Vec<u8>);

/// Most BCAST invalidations one command collects before they are sent
/// (past it, a large MSET or EXEC sends the rest one by one).
const BCAST_PENDING_MAX: usize = 4096;

/// How a tracking client wants its messages (what writers read).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mode {
    /// REDIRECT's client id; 0: none.
    pub redirect: u64,
    pub bcast: bool,
    pub optin: bool,
    pub optout: bool,
    pub noloop: bool,
}

/// A tracking connection's own state (in its `Session`).
#[derive(Debug, Default)]
pub struct State {
    mode: Mode,
    /// BCAST's prefixes, in Redis's (sorted) order.
    prefixes: BTreeSet<Vec<u8>>,
    /// CLIENT CACHING was given for the next command.
    caching: bool,
}

/// One remembered key.
#[derive(Debug)]
struct Tracked {
    /// Its place in the age queue.
    seq: u64,
    /// The clients that may cache it (each once).
    ids: Vec<u64>,
}

/// The table and the tracking clients, under one lock.
#[derive(Debug, Default)]
struct Table {
    keys: HashMap<Vec<u8>, Tracked, Hasher>,
    /// (seq, key) oldest first; an entry whose seq no longer matches its
    /// key's is stale.
    order: VecDeque<(u64, Vec<u8>)>,
    next_seq: u64,
    /// Ids over every key (INFO's `tracking_total_items`).
    items: u64,
    /// BCAST prefix → its clients.
    prefixes: BTreeMap<Vec<u8>, Vec<u64>>,
    /// Every tracking client.
    clients: HashMap<u64, Mode, Hasher>,
}

impl Table {
    /// Forgets `key`; its clients.
    fn forget(&mut self, key: &[u8]) -> Option<Vec<u64>> {
        let t = self.keys.remove(key)?;
        self.items -= t.ids.len() as u64;
        Some(t.ids)
    }

    /// The oldest keys past `max` (0: none), forgotten, with their clients.
    fn over(&mut self, max: u64) -> Vec<(Vec<u8>, Vec<u64>)> {
        let mut gone = Vec::new();
        if max == 0 {
            return gone;
        }
        // Bounded by the queue's length.
        while self.keys.len() as u64 > max {
            let Some((seq, key)) = self.order.pop_front() else { break };
            if self.keys.get(&key).is_some_and(|t| t.seq == seq) {
                let ids = self.forget(&key).unwrap_or_default();
                gone.push((key, ids));
            }
        }
        gone
    }

    /// Drops the age queue's stale entries once they outnumber the live
    /// ones by [`ORDER_SLACK_ENTRIES`].
    fn compact(&mut self) {
        if self.order.len() > 2 * self.keys.len() + ORDER_SLACK_ENTRIES {
            let keys = &self.keys;
            self.order.retain(|(seq, k)| keys.get(k).is_some_and(|t| t.seq == *seq));
        }
    }
}

/// CLIENT TRACKING's server-wide state (in `Shared`).
#[derive(Debug)]
pub struct Registry {
    table: Mutex<Table>,
    /// Tracking clients (INFO's `tracking_clients`; `Shared::refresh_notify`).
    count: AtomicUsize,
    /// `tracking-table-max-keys`.
    max_keys: AtomicU64,
    /// Client id → inbox, for every client a message went to.
    inboxes: Mutex<HashMap<u64, Arc<Subscriber>, Hasher>>,
    /// `inboxes`' length: the workers look only while it is not zero.
    inbox_count: AtomicUsize,
    /// Serializes `Shared::refresh_notify`.
    serial: Mutex<()>,
}

impl Default for Registry {
    fn default() -> Registry {
        Registry {
            table: Mutex::default(),
            count: AtomicUsize::new(0),
            max_keys: AtomicU64::new(TABLE_KEYS_MAX_DEFAULT),
            inboxes: Mutex::default(),
            inbox_count: AtomicUsize::new(0),
            serial: Mutex::new(()),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// `*1\r\n$<n>\r\n<key>\r\n`: an invalidation's key array.
fn key_array(key: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(key.len() + 16);
    push_array(&mut v, 1);
    push_bulk(&mut v, key);
    v
}

/// The null an invalidation of every key carries, in the tracking
/// client's protocol (Redis's `shared.null[c->resp]`).
fn null_for(c: &Client) -> &'static [u8] {
    if c.resp.load(Ordering::Relaxed) == 3 {
        b"_\r\n"
    } else {
        b"$-1\r\n"
    }
}

impl Registry {
    /// Tracking clients now.
    pub fn clients(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    /// Held while the notification word is computed again.
    pub fn serial(&self) -> MutexGuard<'_, ()> {
        lock(&self.serial)
    }

    /// `tracking-table-max-keys`.
    pub fn max_keys(&self) -> u64 {
        self.max_keys.load(Ordering::Relaxed)
    }

    /// CONFIG SET tracking-table-max-keys: the keys past the new bound
    /// are invalidated now.
    pub fn set_max_keys(&self, shared: &crate::Shared, max: u64) {
        self.max_keys.store(max, Ordering::Relaxed);
        let gone = lock(&self.table).over(max);
        self.send_evicted(shared, gone);
    }

    /// INFO's (keys, items, prefixes).
    pub fn totals(&self) -> (usize, u64, usize) {
        let t = lock(&self.table);
        (t.keys.len(), t.items, t.prefixes.len())
    }

    /// The inbox of client `c` (made on first use).
    fn inbox(&self, c: &Arc<Client>) -> Arc<Subscriber> {
        let mut m = lock(&self.inboxes);
        let s = Arc::clone(m.entry(c.id).or_insert_with(|| Subscriber::new(Arc::clone(c))));
        self.inbox_count.store(m.len(), Ordering::Relaxed);
        s
    }

    /// Moves what was queued for client `id` to `out` (its worker, when
    /// the client was posted ready). Out of line: the event loop inlines
    /// only the call.
    #[inline(never)]
    pub fn drain(&self, id: u64, out: &mut Vec<u8>) {
        if self.inbox_count.load(Ordering::Relaxed) == 0 {
            return;
        }
        let s = lock(&self.inboxes).get(&id).cloned();
        if let Some(s) = s {
            s.drain_into(out);
        }
    }

    /// `key` (its name) changed: tells the clients that remembered it
    /// and the BCAST clients of its prefixes, and forgets it.
    pub fn invalidate(&self, shared: &crate::Shared, key: &[u8]) {
        let writer = WRITER.get();
        let mut to: Vec<(u64, Mode)> = Vec::new();
        {
            let mut t = lock(&self.table);
            if let Some(ids) = t.forget(key) {
                for id in ids {
                    if let Some(&m) = t.clients.get(&id) {
                        if !(m.bcast || (m.noloop && id == writer)) {
                            to.push((id, m));
                        }
                    }
                }
            }
            // Bounded by the prefixes registered.
            let mut bcast: Vec<(u64, Mode)> = Vec::new();
            for (p, ids) in &t.prefixes {
                if key.starts_with(p) {
                    for &id in ids {
                        if let Some(&m) = t.clients.get(&id) {
                            if !(m.noloop && id == writer) {
                                bcast.push((id, m));
                            }
                        }
                    }
                }
            }
            if !bcast.is_empty() {
                let held = BCAST.with_borrow_mut(|pending| match pending {
                    Some(v) if v.len() < BCAST_PENDING_MAX => {
                        v.extend(bcast.iter().map(|&(id, m)| (id, m, key.to_vec())));
                        true
                    }
                    _ => false,
                });
                if !held {
                    to.extend(bcast);
                }
            }
        }
        if to.is_empty() {
            return;
        }
        let body = key_array(key);
        let mut wake = Vec::new();
        for (id, m) in to {
            self.send(shared, id, m, |_| &body, &mut wake);
        }
        wake_all(shared, &wake);
    }

    /// Sends the BCAST invalidations a command collected: per client,
    /// its keys once each, in Redis's (sorted) order.
    fn send_collected(&self, shared: &crate::Shared, pending: Vec<Pending>) {
        if pending.is_empty() {
            return;
        }
        let mut per: BTreeMap<u64, (Mode, BTreeSet<Vec<u8>>)> = BTreeMap::new();
        for (id, m, key) in pending {
            per.entry(id).or_insert_with(|| (m, BTreeSet::new())).1.insert(key);
        }
        let mut wake = Vec::new();
        for (id, (m, keys)) in per {
            let mut body = Vec::new();
            push_array(&mut body, keys.len());
            for k in &keys {
                push_bulk(&mut body, k);
            }
            self.send(shared, id, m, |_| &body, &mut wake);
        }
        wake_all(shared, &wake);
    }

    /// FLUSHDB, FLUSHALL, memcached's flush_all: every tracking client is
    /// told every key is invalid, and the table is emptied.
    pub fn flushed(&self, shared: &crate::Shared) {
        let to: Vec<(u64, Mode)> = {
            let mut t = lock(&self.table);
            t.keys.clear();
            t.order.clear();
            t.items = 0;
            t.clients.iter().map(|(&id, &m)| (id, m)).collect()
        };
        let mut wake = Vec::new();
        for (id, m) in to {
            self.send(shared, id, m, null_for, &mut wake);
        }
        wake_all(shared, &wake);
    }

    /// Keys the table's bound pushed out, invalidated for their clients
    /// (no NOLOOP: no client changed them).
    fn send_evicted(&self, shared: &crate::Shared, gone: Vec<(Vec<u8>, Vec<u64>)>) {
        if gone.is_empty() {
            return;
        }
        let mut wake = Vec::new();
        for (key, ids) in gone {
            let body = key_array(&key);
            for id in ids {
                let m = lock(&self.table).clients.get(&id).copied();
                if let Some(m) = m.filter(|m| !m.bcast) {
                    self.send(shared, id, m, |_| &body, &mut wake);
                }
            }
        }
        wake_all(shared, &wake);
    }

    /// Queues one invalidation for tracking client `id` (Redis's
    /// `sendTrackingMessage`): `body(tracking client)` is the message's
    /// value (a key array or a null).
    fn send<'b>(
        &self,
        shared: &crate::Shared,
        id: u64,
        m: Mode,
        body: impl Fn(&Client) -> &'b [u8],
        wake: &mut Vec<usize>,
    ) {
        let Some(me) = shared.clients.get(id) else { return };
        let target = if m.redirect == 0 {
            Arc::clone(&me)
        } else if let Some(t) = shared.clients.get(m.redirect) {
            t
        } else {
            me.tracking.fetch_or(tracking_flag::BROKEN_REDIR, Ordering::Relaxed);
            if me.resp.load(Ordering::Relaxed) == 3 {
                let mut frame = b">2\r\n$21\r\ntracking-redir-broken\r\n".to_vec();
                push_int(&mut frame, m.redirect as i64);
                shared.pubsub.deliver(&self.inbox(&me), &frame, wake);
            }
            return;
        };
        let mut frame = Vec::with_capacity(64);
        if target.resp.load(Ordering::Relaxed) == 3 {
            frame.extend_from_slice(b">2\r\n$10\r\ninvalidate\r\n");
        } else if m.redirect != 0 && target.has(flag::PUBSUB) {
            frame.extend_from_slice(b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n");
        } else {
            // RESP2 without a subscribed redirect target: nowhere to go.
            return;
        }
        frame.extend_from_slice(body(&me));
        shared.pubsub.deliver(&self.inbox(&target), &frame, wake);
    }

    /// Remembers that client `id` may cache `key`; keys past the bound
    /// are invalidated.
    fn remember(&self, shared: &crate::Shared, id: u64, key: &[u8]) {
        let gone = {
            let mut t = lock(&self.table);
            let t = &mut *t;
            match t.keys.get_mut(key) {
                Some(k) => {
                    if !k.ids.contains(&id) {
                        k.ids.push(id);
                        t.items += 1;
                    }
                }
                None => {
                    let seq = t.next_seq;
                    t.next_seq += 1;
                    t.keys.insert(key.to_vec(), Tracked { seq, ids: vec![id] });
                    t.order.push_back((seq, key.to_vec()));
                    t.items += 1;
                }
            }
            let gone = t.over(self.max_keys());
            t.compact();
            gone
        };
        self.send_evicted(shared, gone);
    }

    /// Client `id` tracks (again) with `m` and, under BCAST, `prefixes`
    /// too.
    fn enable(&self, id: u64, m: Mode, prefixes: &BTreeSet<Vec<u8>>) {
        let mut t = lock(&self.table);
        if t.clients.insert(id, m).is_none() {
            self.count.fetch_add(1, Ordering::Relaxed);
        }
        for p in prefixes {
            let ids = t.prefixes.entry(p.clone()).or_default();
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }

    /// Client `id` stops tracking: out of the clients and the prefixes
    /// (its ids stay in the table until their keys change, as Redis's).
    fn disable(&self, id: u64, prefixes: &BTreeSet<Vec<u8>>) {
        let mut t = lock(&self.table);
        if t.clients.remove(&id).is_some() {
            self.count.fetch_sub(1, Ordering::Relaxed);
        }
        for p in prefixes {
            if let Some(ids) = t.prefixes.get_mut(p) {
                ids.retain(|&x| x != id);
                if ids.is_empty() {
                    t.prefixes.remove(p);
                }
            }
        }
    }

    /// Client `id`'s connection closed: its inbox goes.
    fn closed(&self, id: u64) {
        let mut m = lock(&self.inboxes);
        m.remove(&id);
        self.inbox_count.store(m.len(), Ordering::Relaxed);
    }
}

fn wake_all(shared: &crate::Shared, wake: &[usize]) {
    for &w in wake {
        shared.blocking.wake(w);
    }
}

/// Stops `session`'s tracking (CLIENT TRACKING OFF, RESET, close).
fn stop(shared: &crate::Shared, session: &mut super::Session) {
    if let Some(st) = session.tracking.take() {
        shared.tracking.disable(session.id, &st.prefixes);
        session.client.tracking.store(0, Ordering::Relaxed);
        session.client.redir.store(-1, Ordering::Relaxed);
        shared.refresh_notify();
    }
}

/// The connection of `session` closes: its tracking and its inbox go.
/// Out of line: the event loop's close path inlines only the call.
#[cold]
#[inline(never)]
pub fn leave(shared: &crate::Shared, session: &mut super::Session) {
    stop(shared, session);
    shared.tracking.closed(session.id);
}

/// RESET: tracking off.
pub(crate) fn reset_session(shared: &crate::Shared, session: &mut super::Session) {
    stop(shared, session);
}

/// `CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX p ...] [BCAST] [OPTIN]
/// [OPTOUT] [NOLOOP]`, with Redis 7.0's checks in its order.
pub(crate) fn tracking(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let mut m = Mode::default();
    let mut prefixes: Vec<&[u8]> = Vec::new();
    let mut j = 3;
    // Bounded by the arguments.
    while j < args.len() {
        let more = j + 1 < args.len();
        let a = &args[j];
        if is(a, "redirect") && more {
            j += 1;
            if m.redirect != 0 {
                return push_error(out, ERR_REDIRECT_TWICE.as_bytes());
            }
            let Some(id) = super::int_arg(&args[j]) else {
                return push_error(out, err::NOT_INTEGER.as_bytes());
            };
            if id <= 0 || ctx.shared.clients.get(id as u64).is_none() {
                return push_error(out, ERR_REDIRECT_MISSING.as_bytes());
            }
            m.redirect = id as u64;
        } else if is(a, "bcast") {
            m.bcast = true;
        } else if is(a, "optin") {
            m.optin = true;
        } else if is(a, "optout") {
            m.optout = true;
        } else if is(a, "noloop") {
            m.noloop = true;
        } else if is(a, "prefix") && more {
            j += 1;
            prefixes.push(&args[j]);
        } else {
            return push_error(out, err::SYNTAX.as_bytes());
        }
        j += 1;
    }
    if is(&args[2], "off") {
        stop(ctx.shared, ctx.session);
        ctx.cx.refresh_notify();
        return push_simple(out, "OK");
    }
    if !is(&args[2], "on") {
        return push_error(out, err::SYNTAX.as_bytes());
    }
    if !m.bcast && !prefixes.is_empty() {
        return push_error(out, ERR_PREFIX_NEEDS_BCAST.as_bytes());
    }
    let old = ctx.session.tracking.as_ref().map(|t| t.mode);
    if old.is_some_and(|o| o.bcast != m.bcast) {
        return push_error(out, ERR_SWITCH_BCAST.as_bytes());
    }
    if m.bcast && (m.optin || m.optout) {
        return push_error(out, ERR_BCAST_OPTS.as_bytes());
    }
    if m.optin && m.optout {
        return push_error(out, ERR_OPTIN_OPTOUT.as_bytes());
    }
    if old.is_some_and(|o| (m.optin && o.optout) || (m.optout && o.optin)) {
        return push_error(out, ERR_SWITCH_OPT.as_bytes());
    }
    if m.bcast {
        if let Some(e) = overlap(ctx.session.tracking.as_ref().map(|t| &t.prefixes), &prefixes) {
            return push_error(out, e.as_bytes());
        }
    }
    let st = ctx.session.tracking.get_or_insert_with(Box::default);
    st.mode = m;
    if m.bcast {
        if prefixes.is_empty() {
            st.prefixes.insert(Vec::new());
        }
        st.prefixes.extend(prefixes.iter().map(|p| p.to_vec()));
    }
    let c = &ctx.session.client;
    let mut bits = tracking_flag::ON;
    if m.bcast {
        bits |= tracking_flag::BCAST;
    }
    c.tracking.store(bits, Ordering::Relaxed);
    c.redir.store(m.redirect as i64, Ordering::Relaxed);
    ctx.shared.tracking.enable(ctx.session.id, m, &st.prefixes);
    ctx.shared.refresh_notify();
    ctx.cx.refresh_notify();
    push_simple(out, "OK");
}

/// Redis's `checkPrefixCollisionsOrReply`: two prefixes overlap when one
/// begins the other.
fn overlap(held: Option<&BTreeSet<Vec<u8>>>, new: &[&[u8]]) -> Option<String> {
    let begins = |a: &[u8], b: &[u8]| a.starts_with(b) || b.starts_with(a);
    let show = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    for (i, p) in new.iter().enumerate() {
        if let Some(h) = held.and_then(|h| h.iter().find(|h| begins(h, p))) {
            return Some(format!(
                "ERR Prefix '{}' overlaps with an existing prefix '{}'. Prefixes for a single client must not overlap.",
                show(p),
                show(h)
            ));
        }
        if let Some(q) = new[i + 1..].iter().find(|q| begins(q, p)) {
            return Some(format!(
                "ERR Prefix '{}' overlaps with another provided prefix '{}'. Prefixes for a single client must not overlap.",
                show(p),
                show(q)
            ));
        }
    }
    None
}

/// CLIENT CACHING YES|NO.
pub(crate) fn caching(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let Some(st) = ctx.session.tracking.as_mut() else {
        return push_error(out, ERR_CACHING_MODE.as_bytes());
    };
    if is(&args[2], "yes") {
        if !st.mode.optin {
            return push_error(out, ERR_CACHING_YES.as_bytes());
        }
    } else if is(&args[2], "no") {
        if !st.mode.optout {
            return push_error(out, ERR_CACHING_NO.as_bytes());
        }
    } else {
        return push_error(out, err::SYNTAX.as_bytes());
    }
    st.caching = true;
    push_simple(out, "OK");
}

/// CLIENT GETREDIR: the redirect, 0 without one, -1 while not tracking.
pub(crate) fn getredir(ctx: &Ctx<'_>, out: &mut Vec<u8>) {
    push_int(out, ctx.session.tracking.as_ref().map_or(-1, |t| t.mode.redirect as i64));
}

/// CLIENT TRACKINGINFO: flags, redirect, prefixes, as Redis 7.0.
pub(crate) fn trackinginfo(ctx: &Ctx<'_>, out: &mut Vec<u8>) {
    let proto = ctx.cx.proto;
    let st = ctx.session.tracking.as_deref();
    let mut flags: Vec<&str> = Vec::new();
    match st {
        None => flags.push("off"),
        Some(t) => {
            flags.push("on");
            let m = t.mode;
            if m.bcast {
                flags.push("bcast");
            }
            if m.optin {
                flags.push("optin");
                if t.caching {
                    flags.push("caching-yes");
                }
            }
            if m.optout {
                flags.push("optout");
                if t.caching {
                    flags.push("caching-no");
                }
            }
            if m.noloop {
                flags.push("noloop");
            }
            if ctx.session.client.tracking.load(Ordering::Relaxed) & tracking_flag::BROKEN_REDIR != 0 {
                flags.push("broken_redirect");
            }
        }
    }
    push_map(out, 3, proto);
    push_bulk(out, b"flags");
    push_set(out, flags.len(), proto);
    for f in flags {
        push_bulk(out, f.as_bytes());
    }
    push_bulk(out, b"redirect");
    push_int(out, st.map_or(-1, |t| t.mode.redirect as i64));
    push_bulk(out, b"prefixes");
    let prefixes = st.map(|t| &t.prefixes);
    push_array(out, prefixes.map_or(0, |p| p.len()));
    for p in prefixes.into_iter().flatten() {
        push_bulk(out, p);
    }
}

/// A command running while a client tracks: NOLOOP's writer set, and
/// (the outermost one: EXEC's and a script's commands add to it) BCAST's
/// invalidations collected; both undone when it ends, panic or not.
struct Command<'a> {
    shared: &'a crate::Shared,
    outer_writer: u64,
    collects: bool,
}

impl<'a> Command<'a> {
    fn start(shared: &'a crate::Shared, writer: Option<u64>) -> Command<'a> {
        let outer_writer = WRITER.get();
        if let Some(id) = writer {
            WRITER.set(id);
        }
        let collects = BCAST.with_borrow_mut(|p| {
            let outermost = p.is_none();
            if outermost {
                *p = Some(Vec::new());
            }
            outermost
        });
        Command { shared, outer_writer, collects }
    }
}

impl Drop for Command<'_> {
    fn drop(&mut self) {
        WRITER.set(self.outer_writer);
        if self.collects {
            let pending = BCAST.with_borrow_mut(Option::take).unwrap_or_default();
            self.shared.tracking.send_collected(self.shared, pending);
        }
    }
}

/// True if a tracking client's command reads keys Redis remembers for
/// it: read-only (the subcommand's flags for a container), not a
/// read-only script (its commands are remembered one by one), not Pub/Sub.
fn remembers(spec: &'static Spec, own: &'static Spec) -> bool {
    own.flags.contains(&"readonly")
        && !own.flags.contains(&"pubsub")
        && !matches!(spec.cmd, Cmd::EvalRo | Cmd::EvalshaRo | Cmd::FcallRo)
}

/// Runs a command while some client tracks keys (`resp::execute`'s
/// out-of-line branch): NOLOOP's writer, FLUSHDB/FLUSHALL's null
/// invalidation, the keys a tracking client read, CLIENT CACHING's one
/// command, and this client's own messages after the reply.
pub(crate) fn around(
    ctx: &mut Ctx<'_>,
    spec: &'static Spec,
    args: &[Arg<'_>],
    out: &mut Vec<u8>,
    run: impl FnOnce(&mut Ctx<'_>, &mut Vec<u8>) -> super::After,
) -> super::After {
    let id = ctx.session.id;
    let tracking = ctx.session.tracking.is_some();
    let mark = out.len();
    let after = {
        let _command = Command::start(ctx.shared, tracking.then_some(id));
        run(ctx, out)
    };
    let ok = out.get(mark) != Some(&b'-');
    if ok && matches!(spec.cmd, Cmd::Flushall | Cmd::Flushdb) {
        ctx.shared.tracking.flushed(ctx.shared);
    }
    let executing = ctx.session.multi.executing;
    let queuing = ctx.session.multi.queuing();
    let Some(st) = ctx.session.tracking.as_deref_mut() else { return after };
    let own = if spec.subcommands.is_empty() || args.len() < 2 {
        spec
    } else {
        spec.subcommands.iter().find(|s| is(&args[1], super::table::short_name(s))).unwrap_or(spec)
    };
    let m = st.mode;
    let wanted = !((m.optin && !st.caching) || (m.optout && st.caching));
    if !m.bcast && wanted && remembers(spec, own) {
        for (i, _) in keys_of(own, args) {
            let (_, name) = amalgam_engine::namespace::split(&args[i]);
            ctx.shared.tracking.remember(ctx.shared, id, name);
        }
    }
    // CLIENT CACHING's flag lasts one command, or a whole transaction
    // (Redis's resetClient).
    if spec.cmd != Cmd::Client && !queuing && !executing {
        st.caching = false;
    }
    if !executing {
        ctx.shared.tracking.drain(id, out);
    }
    after
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_overlap_as_redis_says() {
        let held: BTreeSet<Vec<u8>> = [b"a".to_vec(), b"bb".to_vec()].into();
        assert!(overlap(Some(&held), &[b"c"]).is_none());
        assert!(overlap(Some(&held), &[b"ab"]).unwrap().contains("overlaps with an existing prefix 'a'"));
        assert!(overlap(Some(&held), &[b"b"]).unwrap().contains("existing prefix 'bb'"));
        assert!(overlap(None, &[b"ab", b"a"]).unwrap().contains("'ab' overlaps with another provided prefix 'a'"));
        assert!(overlap(None, &[b"x", b"y"]).is_none());
    }

    #[test]
    fn the_table_forgets_the_oldest_past_its_bound() {
        let mut t = Table::default();
        for (seq, k) in [b"a", b"b", b"c"].iter().enumerate() {
            t.keys.insert(k.to_vec(), Tracked { seq: seq as u64, ids: vec![7] });
            t.order.push_back((seq as u64, k.to_vec()));
            t.items += 1;
        }
        assert_eq!(t.forget(b"b"), Some(vec![7]));
        let gone = t.over(1);
        assert_eq!(gone, vec![(b"a".to_vec(), vec![7])]);
        assert_eq!(t.keys.len(), 1);
        assert_eq!(t.items, 1);
        assert!(t.over(0).is_empty());
    }
}
