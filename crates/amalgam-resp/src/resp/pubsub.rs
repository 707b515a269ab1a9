//! Pub/Sub: SUBSCRIBE UNSUBSCRIBE PSUBSCRIBE PUNSUBSCRIBE PUBLISH PUBSUB,
//! and the sharded SSUBSCRIBE SUNSUBSCRIBE SPUBLISH.
//!
//! ## What Redis 7.0 promises, and what we keep
//! A client subscribes to channels (exact names) and to patterns (Redis's
//! glob, `glob.rs`); PUBLISH sends a message to every subscriber of the
//! channel (`message channel payload`) and, once per matching pattern it
//! holds, to every subscriber of a pattern (`pmessage pattern channel
//! payload`), and answers how many messages it queued. Each (P)SUBSCRIBE
//! and (P)UNSUBSCRIBE answers one reply per name with the connection's
//! total of channels plus patterns after it; (P)UNSUBSCRIBE without names
//! leaves every channel (pattern), and with none held answers one reply
//! whose name is null. Shard channels (SSUBSCRIBE, SPUBLISH, `smessage`)
//! are what Redis 7.0 makes of them outside a cluster: a namespace of
//! their own (PUBLISH does not reach them, patterns never match them),
//! counted apart in replies (`ssub=`, `pubsubshard_channels`), channel
//! names rather than keys (COMMAND GETKEYS: none; ACL: channel rules), and
//! SSUBSCRIBE refused inside EXEC. In cluster mode a shard channel is
//! routed as a key (`cluster.rs`), SPUBLISH also reaches the other nodes
//! of the slot's shard (amalgam-cluster's `shard.rs`; the bus host
//! delivers what they send with `Registry::publish_shard`), and a slot
//! the shard stops serving unsubscribes its channels' subscribers with
//! a `sunsubscribe` push (`Registry::revoke_slots`, then `drain` on
//! the subscriber's worker). Under RESP2 a connection holding a subscription is
//! in subscriber mode: only (P)SUBSCRIBE, (P)UNSUBSCRIBE, PING (answered
//! `[pong, arg]`), QUIT and RESET run, the rest answer Redis's "Can't
//! execute" error. Under RESP3 every reply about subscriptions and every
//! message is a push (`>`), and any command runs meanwhile. Replies, error
//! texts and the order of a batch follow Redis 7.0.15, checked by
//! `tests/resp_pubsub.rs` against Debian's redis-server.
//!
//! ## Across workers
//! Redis is one thread: PUBLISH appends the message to each receiver's
//! output buffer and is done. Here the receivers live on any worker, and a
//! connection's output buffer belongs to its worker alone. So:
//! * Each subscribing connection has a [`Subscriber`] (shared through an
//!   `Arc`): a queue of formatted messages other threads append to, the
//!   `posted` flag, and `dropped`.
//! * The [`Registry`] (in `Shared`) maps channel → subscribers in
//!   [`CHANNEL_SHARDS`] mutex-protected shards by hash (one such map for
//!   channels, one for shard channels), and pattern →
//!   subscribers under one read-write lock (PUBLISH only reads it; Redis
//!   too scans every pattern per message). A publish locks one channel
//!   shard and, only if any pattern exists (an atomic count), reads the
//!   pattern map: no global lock, and nothing is held across another
//!   worker's delivery — delivering is an append to the receiver's queue
//!   under the queue's own mutex.
//! * A subscriber's worker learns of new messages through the machinery
//!   the blocking commands use (`blocking.rs`): the publisher posts
//!   `(token, client id)` to that worker's ready list here — once until
//!   the worker drains the queue (`posted`) — and wakes the worker with
//!   the blocking registry's per-worker `mio::Waker`
//!   ([`super::blocking::Registry::wake`]). The woken worker
//!   (`worker.rs`, its waker branch) runs the connection's turn, whose
//!   first step moves the queue into the connection's write buffer
//!   ([`drain`], from `resp::process`, blocked or not), in arrival order, before any
//!   reply of commands read later.
//! * A connection that publishes to a channel it listens on (RESP3) gets
//!   the message before PUBLISH's reply, as in Redis: PUBLISH drains the
//!   connection's own queue first.
//!
//! ## Output bound
//! Redis disconnects a pubsub client whose output buffer passes
//! `client-output-buffer-limit pubsub 32mb 8mb 60` (hard 32 MiB, or 8 MiB
//! for 60 s). Here the hard limit is `--client-output-buffer-limit-pubsub`
//! ([`OUTPUT_LIMIT_BYTES_DEFAULT`]; 0: none; CONFIG SET
//! client-output-buffer-limit "pubsub ..." changes it), checked against
//! the queue when a message is appended: a
//! message that would take it past the limit empties the queue (its memory
//! comes back at once), marks the subscriber `dropped`, and its worker
//! closes the connection, which leaves every subscription. What counts is
//! the queue; the queue moves to the write buffer only when that buffer
//! has gone out whole, so what a subscriber has pending is at most twice
//! the limit. The worker checks the write buffer against both limits too,
//! as for every client (`obuf.rs`: the soft limit once a second).
//!
//! ## Bounds and costs
//! A connection's subscriptions are bounded by what it sends (as in
//! Redis); the registry holds one entry per (name, subscriber). With no
//! subscriber anywhere a PUBLISH locks one shard and finds nothing. A
//! worker's ready list holds at most one entry per subscriber it owns
//! (`posted`) plus one per drop. Disconnecting leaves every subscription
//! ([`leave`], from `worker.rs`'s close).
//!
//! ## Differences from Redis
//! * RESET is not served (the subscriber-mode error still names it, as
//!   Redis's does).
//! * Changing a user's channel rules (`acl.rs`) does not disconnect its
//!   subscribed clients (Redis 7.0 does); they keep what they hold.
//! * Between a publish on one worker and the delivery on another, a
//!   command of the receiver may be answered first (in Redis the message is
//!   in the output buffer before any later command runs).

use super::glob::matches;
use super::sub;
use super::table::Cmd;
use super::{Arg, Ctx};
use amalgam_net::clients::{flag, Client};
use amalgam_protocol::resp::{push_array, push_bulk, push_int, push_null, Proto};
use std::collections::hash_map::RandomState;
use std::collections::{HashMap, HashSet};
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

/// Shards of the channel → subscribers map (a publish locks one).
pub const CHANNEL_SHARDS: usize = 64;
/// Redis's `client-output-buffer-limit pubsub` hard limit: 32 MiB.
pub const OUTPUT_LIMIT_BYTES_DEFAULT: usize = amalgam_net::obuf::PUBSUB_HARD_BYTES_DEFAULT;

/// Redis 7.0's refusal of a command in RESP2 subscriber mode
/// (`processCommand`); `{}` is the command's full name.
fn err_subscriber_mode(name: &str) -> String {
    format!(
        "ERR Can't execute '{name}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
    )
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One subscribing connection as publishers see it.
#[derive(Debug)]
pub struct Subscriber {
    client: Arc<Client>,
    /// Formatted messages not yet moved to the connection's write buffer.
    queue: Mutex<Vec<u8>>,
    /// `(token, id)` is on its worker's ready list and not yet drained.
    posted: AtomicBool,
    /// The queue passed the output limit: the worker closes the connection.
    dropped: AtomicBool,
    /// Shard channels the server unsubscribed it from (its shard stopped
    /// serving their slot, [`Registry::revoke_slots`]): its worker drops
    /// them from the connection's state and sends the `sunsubscribe`
    /// pushes ([`drain`]).
    revoked: Mutex<Vec<Vec<u8>>>,
}

impl Subscriber {
    /// An empty queue for `client` (CLIENT TRACKING's inboxes are these
    /// too: `tracking.rs`).
    pub(crate) fn new(client: Arc<Client>) -> Arc<Subscriber> {
        Arc::new(Subscriber {
            client,
            queue: Mutex::new(Vec::new()),
            posted: AtomicBool::new(false),
            dropped: AtomicBool::new(false),
            revoked: Mutex::new(Vec::new()),
        })
    }

    /// Moves the queued messages to `out`.
    pub(crate) fn drain_into(&self, out: &mut Vec<u8>) {
        // Cleared first: a message appended after the take posts again.
        self.posted.store(false, Ordering::Release);
        let mut q = lock(&self.queue);
        if out.is_empty() {
            std::mem::swap(out, &mut q);
        } else {
            out.append(&mut q);
        }
    }
}

type Subscribers = HashMap<Vec<u8>, Vec<Arc<Subscriber>>>;

/// A worker's ready entry: (connection token, client id, dropped).
type Ready = (usize, u64, bool);

/// Channel → subscribers, in [`CHANNEL_SHARDS`] locks by hash.
#[derive(Debug)]
struct ChannelMap {
    shards: Box<[Mutex<Subscribers>]>,
    hasher: RandomState,
    /// Distinct channels with a subscriber.
    count: AtomicUsize,
}

impl ChannelMap {
    fn new() -> ChannelMap {
        ChannelMap {
            shards: (0..CHANNEL_SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            hasher: RandomState::new(),
            count: AtomicUsize::new(0),
        }
    }

    fn shard(&self, channel: &[u8]) -> &Mutex<Subscribers> {
        &self.shards[(self.hasher.hash_one(channel) % CHANNEL_SHARDS as u64) as usize]
    }

    fn add(&self, channel: &[u8], s: &Arc<Subscriber>) {
        let mut shard = lock(self.shard(channel));
        let subs = shard.entry(channel.to_vec()).or_default();
        if subs.is_empty() {
            self.count.fetch_add(1, Ordering::Relaxed);
        }
        subs.push(Arc::clone(s));
    }

    fn remove(&self, channel: &[u8], s: &Subscriber) {
        let mut shard = lock(self.shard(channel));
        if let Some(subs) = shard.get_mut(channel) {
            subs.retain(|x| !std::ptr::eq(&**x, s));
            if subs.is_empty() {
                shard.remove(channel);
                self.count.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }

    /// Active channels matching `pattern` (all with None).
    fn names(&self, pattern: Option<&[u8]>) -> Vec<Vec<u8>> {
        let mut names = Vec::new();
        for shard in self.shards.iter() {
            let shard = lock(shard);
            names.extend(shard.keys().filter(|c| pattern.is_none_or(|p| matches(p, c, false))).cloned());
        }
        names
    }

    fn numsub(&self, channel: &[u8]) -> usize {
        lock(self.shard(channel)).get(channel).map_or(0, Vec::len)
    }
}

/// Who listens to what, and each worker's ready list (module notes).
#[derive(Debug)]
pub struct Registry {
    channels: ChannelMap,
    /// SSUBSCRIBE's channels: a namespace of their own, as in Redis.
    shard_channels: ChannelMap,
    patterns: RwLock<Subscribers>,
    /// Distinct patterns (PUBSUB NUMPAT); 0: a publish skips `patterns`.
    pattern_count: AtomicUsize,
    /// Per worker: `(token, client id, dropped)` of subscribers to serve.
    ready: Box<[Mutex<Vec<Ready>>]>,
    /// The hard output limit in bytes (0: none).
    pub output_limit_bytes: AtomicUsize,
}

impl Registry {
    /// The clients among `of` holding a subscription `allowed` refuses
    /// (`allowed(name, is_pattern)`): Redis's ACLKillPubsubClientsIfNeeded
    /// asks this of a user whose channels shrank. One pass over every
    /// subscription (bounded by the registry's size), one lock at a time;
    /// a subscription made meanwhile was checked against the new rules by
    /// its SUBSCRIBE.
    pub(crate) fn refused_subscribers(&self, of: &HashSet<u64>, allowed: impl Fn(&[u8], bool) -> bool) -> HashSet<u64> {
        let mut found = HashSet::new();
        let mut visit = |subs: &Subscribers, is_pattern: bool| {
            for (name, list) in subs {
                if list.iter().any(|s| of.contains(&s.client.id)) && !allowed(name, is_pattern) {
                    found.extend(list.iter().map(|s| s.client.id).filter(|id| of.contains(id)));
                }
            }
        };
        for map in [&self.channels, &self.shard_channels] {
            for shard in map.shards.iter() {
                visit(&lock(shard), false);
            }
        }
        visit(&self.patterns.read().unwrap_or_else(|e| e.into_inner()), true);
        found
    }

    /// A registry for `workers` event loops.
    pub fn new(workers: usize, output_limit_bytes: usize) -> Registry {
        Registry {
            channels: ChannelMap::new(),
            shard_channels: ChannelMap::new(),
            patterns: RwLock::new(HashMap::new()),
            pattern_count: AtomicUsize::new(0),
            ready: (0..workers).map(|_| Mutex::new(Vec::new())).collect(),
            output_limit_bytes: AtomicUsize::new(output_limit_bytes),
        }
    }

    /// Distinct channels with a subscriber now.
    pub fn channels(&self) -> usize {
        self.channels.count.load(Ordering::Relaxed)
    }

    /// Distinct shard channels with a subscriber now.
    pub fn shard_channels(&self) -> usize {
        self.shard_channels.count.load(Ordering::Relaxed)
    }

    /// Distinct patterns with a subscriber now.
    pub fn patterns(&self) -> usize {
        self.pattern_count.load(Ordering::Relaxed)
    }

    /// The subscribers of worker `id` with something to do: (connection
    /// token, client id, dropped). `worker.rs` closes a dropped one and
    /// runs the others' turn.
    pub fn take_ready(&self, id: usize) -> Vec<Ready> {
        self.ready.get(id).map(|r| std::mem::take(&mut *lock(r))).unwrap_or_default()
    }

    fn patterns_read(&self) -> std::sync::RwLockReadGuard<'_, Subscribers> {
        self.patterns.read().unwrap_or_else(|e| e.into_inner())
    }

    fn patterns_write(&self) -> std::sync::RwLockWriteGuard<'_, Subscribers> {
        self.patterns.write().unwrap_or_else(|e| e.into_inner())
    }

    fn add(&self, kind: Kind, name: &[u8], s: &Arc<Subscriber>) {
        match kind {
            Kind::Channel => self.channels.add(name, s),
            Kind::Shard => self.shard_channels.add(name, s),
            Kind::Pattern => {
                let mut p = self.patterns_write();
                let subs = p.entry(name.to_vec()).or_default();
                if subs.is_empty() {
                    self.pattern_count.fetch_add(1, Ordering::Relaxed);
                }
                subs.push(Arc::clone(s));
            }
        }
    }

    fn remove(&self, kind: Kind, name: &[u8], s: &Subscriber) {
        match kind {
            Kind::Channel => self.channels.remove(name, s),
            Kind::Shard => self.shard_channels.remove(name, s),
            Kind::Pattern => {
                let mut p = self.patterns_write();
                if let Some(subs) = p.get_mut(name) {
                    subs.retain(|x| !std::ptr::eq(&**x, s));
                    if subs.is_empty() {
                        p.remove(name);
                        self.pattern_count.fetch_sub(1, Ordering::Relaxed);
                    }
                }
            }
        }
    }

    /// Appends `frame` (a RESP2 array; its first byte becomes `>` for a
    /// RESP3 receiver) to `s`'s queue; notes in `wake` the workers to wake.
    pub(crate) fn deliver(&self, s: &Subscriber, frame: &[u8], wake: &mut Vec<usize>) {
        let limit = self.output_limit_bytes.load(Ordering::Relaxed);
        let post = {
            let mut q = lock(&s.queue);
            if s.dropped.load(Ordering::Relaxed) {
                return;
            }
            if limit != 0 && q.len() + frame.len() > limit {
                // Its memory comes back now; the worker closes it.
                *q = Vec::new();
                s.dropped.store(true, Ordering::Relaxed);
                Some(true)
            } else {
                let at = q.len();
                q.extend_from_slice(frame);
                if s.client.resp.load(Ordering::Relaxed) == 3 {
                    q[at] = b'>';
                }
                (!s.posted.swap(true, Ordering::AcqRel)).then_some(false)
            }
        };
        if let Some(dropped) = post {
            self.post(s, dropped, wake);
        }
    }

    /// Puts `s` on its worker's ready list; notes the worker in `wake`.
    fn post(&self, s: &Subscriber, dropped: bool, wake: &mut Vec<usize>) {
        let w = s.client.worker;
        if let Some(r) = self.ready.get(w) {
            lock(r).push((s.client.token, s.client.id, dropped));
        }
        if !wake.contains(&w) {
            wake.push(w);
        }
    }

    /// SPUBLISH's delivery (here, or from another node of the shard):
    /// queues `smessage` for the shard channel's subscribers; answers how
    /// many.
    pub(crate) fn publish_shard(&self, channel: &[u8], message: &[u8], wake: &mut Vec<usize>) -> usize {
        self.deliver_channel(&self.shard_channels, b"smessage", channel, message, wake)
    }

    /// This node's shard stopped serving the slots `lost(slot)` says:
    /// every shard channel of those slots leaves the registry, and each of
    /// its subscribers is told to drop it (`revoked`, then [`drain`] on its
    /// worker), as Redis's `removeChannelsInSlot`. One pass over the shard
    /// channels (bounded by the registry's size), one lock at a time.
    pub(crate) fn revoke_slots(&self, lost: impl Fn(&[u8]) -> bool, wake: &mut Vec<usize>) {
        for shard in self.shard_channels.shards.iter() {
            let mut shard = lock(shard);
            let gone: Vec<Vec<u8>> = shard.keys().filter(|c| lost(c)).cloned().collect();
            for c in gone {
                let Some(subs) = shard.remove(&c) else { continue };
                self.shard_channels.count.fetch_sub(1, Ordering::Relaxed);
                for s in subs {
                    lock(&s.revoked).push(c.clone());
                    if !s.posted.swap(true, Ordering::AcqRel) {
                        self.post(&s, false, wake);
                    }
                }
            }
        }
    }

    /// Queues `[kind, channel, message]` for the channel's subscribers in
    /// `map`; answers how many.
    fn deliver_channel(
        &self,
        map: &ChannelMap,
        kind: &[u8],
        channel: &[u8],
        message: &[u8],
        wake: &mut Vec<usize>,
    ) -> usize {
        let shard = lock(map.shard(channel));
        let Some(subs) = shard.get(channel) else { return 0 };
        let mut frame = Vec::with_capacity(32 + channel.len() + message.len());
        push_array(&mut frame, 3);
        push_bulk(&mut frame, kind);
        push_bulk(&mut frame, channel);
        push_bulk(&mut frame, message);
        for s in subs {
            self.deliver(s, &frame, wake);
        }
        subs.len()
    }

    /// PUBLISH: queues the message for every receiver; answers how many
    /// messages were queued (Redis counts a pattern match as one more).
    pub(crate) fn publish(&self, channel: &[u8], message: &[u8], wake: &mut Vec<usize>) -> usize {
        let mut receivers = self.deliver_channel(&self.channels, b"message", channel, message, wake);
        if self.pattern_count.load(Ordering::Relaxed) > 0 {
            let patterns = self.patterns_read();
            for (p, subs) in patterns.iter() {
                if !matches(p, channel, false) {
                    continue;
                }
                let mut frame = Vec::with_capacity(48 + p.len() + channel.len() + message.len());
                push_array(&mut frame, 4);
                push_bulk(&mut frame, b"pmessage");
                push_bulk(&mut frame, p);
                push_bulk(&mut frame, channel);
                push_bulk(&mut frame, message);
                for s in subs {
                    self.deliver(s, &frame, wake);
                }
                receivers += subs.len();
            }
        }
        receivers
    }
}

/// The three namespaces a connection subscribes in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Channel,
    Pattern,
    /// SSUBSCRIBE's shard channels.
    Shard,
}

impl Kind {
    /// The reply names for (subscribe, unsubscribe).
    fn names(self) -> (&'static [u8], &'static [u8]) {
        match self {
            Kind::Channel => (b"subscribe", b"unsubscribe"),
            Kind::Pattern => (b"psubscribe", b"punsubscribe"),
            Kind::Shard => (b"ssubscribe", b"sunsubscribe"),
        }
    }
}

/// A connection's subscriptions (in its `Session`).
#[derive(Debug)]
pub struct State {
    sub: Arc<Subscriber>,
    /// Unordered, as Redis's per-client dict.
    channels: HashSet<Vec<u8>>,
    /// In subscription order, as Redis's per-client list.
    patterns: Vec<Vec<u8>>,
    /// Shard channels, unordered.
    shard: HashSet<Vec<u8>>,
}

impl State {
    /// The count a (un)subscribe reply of `kind` carries: shard channels
    /// count apart, as in Redis 7.0 (observed on 7.0.15).
    fn count(&self, kind: Kind) -> usize {
        match kind {
            Kind::Shard => self.shard.len(),
            _ => self.channels.len() + self.patterns.len(),
        }
    }

    fn holds(&self, kind: Kind, name: &[u8]) -> bool {
        match kind {
            Kind::Channel => self.channels.contains(name),
            Kind::Shard => self.shard.contains(name),
            Kind::Pattern => self.patterns.iter().any(|p| p[..] == name[..]),
        }
    }

    fn insert(&mut self, kind: Kind, name: &[u8]) {
        match kind {
            Kind::Channel => drop(self.channels.insert(name.to_vec())),
            Kind::Shard => drop(self.shard.insert(name.to_vec())),
            Kind::Pattern => self.patterns.push(name.to_vec()),
        }
    }

    /// Leaves `name`; true if it was held.
    fn take(&mut self, kind: Kind, name: &[u8]) -> bool {
        match kind {
            Kind::Channel => self.channels.remove(name),
            Kind::Shard => self.shard.remove(name),
            Kind::Pattern => {
                let before = self.patterns.len();
                self.patterns.retain(|p| p[..] != name[..]);
                self.patterns.len() != before
            }
        }
    }

    /// Every name held in `kind`, in the order Redis lists them.
    fn all(&self, kind: Kind) -> Vec<Vec<u8>> {
        match kind {
            Kind::Channel => self.channels.iter().cloned().collect(),
            Kind::Shard => self.shard.iter().cloned().collect(),
            Kind::Pattern => self.patterns.clone(),
        }
    }

    fn empty(&self) -> bool {
        self.channels.is_empty() && self.patterns.is_empty() && self.shard.is_empty()
    }
}

/// True when the connection is in RESP2 subscriber mode and `name` (a
/// command's full name) may not run: answers Redis's error.
pub(crate) fn refused(ctx: &Ctx<'_>, cmd: Cmd, name: &str, out: &mut Vec<u8>) -> bool {
    if ctx.session.pubsub.is_none() || ctx.proto() != Proto::Resp2 || ctx.session.multi.executing {
        return false;
    }
    if changes_subscriptions(cmd) || matches!(cmd, Cmd::Ping | Cmd::Quit | Cmd::Reset) {
        return false;
    }
    amalgam_protocol::resp::push_error(out, err_subscriber_mode(name).as_bytes());
    true
}

/// SUBSCRIBE, UNSUBSCRIBE and their pattern and shard forms: the
/// commands whose replies are subscription confirmations.
pub(crate) fn changes_subscriptions(cmd: Cmd) -> bool {
    matches!(
        cmd,
        Cmd::Subscribe | Cmd::Unsubscribe | Cmd::Psubscribe | Cmd::Punsubscribe | Cmd::Ssubscribe | Cmd::Sunsubscribe
    )
}

/// True while the connection holds a subscription.
pub fn subscribed(session: &super::Session) -> bool {
    session.pubsub.is_some()
}

/// Moves messages other threads queued for this connection into `out`,
/// then the `sunsubscribe` pushes of the shard channels the server
/// revoked (after the messages published before); true if the
/// connection was dropped for its output limit (close it). Every turn of
/// every connection calls it: the test for a subscriber is inlined, the
/// rest is not.
#[inline(always)]
pub(crate) fn drain(session: &mut super::Session, out: &mut Vec<u8>) -> bool {
    session.pubsub.is_some() && drain_subscriber(session, out)
}

#[inline(never)]
fn drain_subscriber(session: &mut super::Session, out: &mut Vec<u8>) -> bool {
    let Some(st) = session.pubsub.as_deref_mut() else { return false };
    if st.sub.dropped.load(Ordering::Relaxed) {
        return true;
    }
    st.sub.drain_into(out);
    let revoked = std::mem::take(&mut *lock(&st.sub.revoked));
    if revoked.is_empty() {
        return false;
    }
    let proto = session.proto;
    for c in &revoked {
        // Already left by its own SUNSUBSCRIBE: nothing to tell.
        if st.shard.remove(c) {
            push_reply(out, proto, Kind::Shard.names().1, Some(c), st.shard.len());
        }
    }
    if st.empty() {
        session.client.set_flag(flag::PUBSUB, false);
        session.pubsub = None;
    }
    count(session);
    false
}

/// The connection of `session` is closing: leaves every subscription.
pub fn leave(shared: &crate::Shared, session: &mut super::Session) {
    if let Some(st) = session.pubsub.take() {
        for c in &st.channels {
            shared.pubsub.remove(Kind::Channel, c, &st.sub);
        }
        for p in &st.patterns {
            shared.pubsub.remove(Kind::Pattern, p, &st.sub);
        }
        for c in &st.shard {
            shared.pubsub.remove(Kind::Shard, c, &st.sub);
        }
    }
}

/// One subscription reply: `[kind, name, count]`, a push under RESP3.
fn push_reply(out: &mut Vec<u8>, proto: Proto, kind: &[u8], name: Option<&[u8]>, count: usize) {
    if proto == Proto::Resp3 {
        out.extend_from_slice(b">3\r\n");
    } else {
        push_array(out, 3);
    }
    push_bulk(out, kind);
    match name {
        Some(n) => push_bulk(out, n),
        None => push_null(out, proto),
    }
    push_int(out, count as i64);
}

/// Wakes the workers `publish` and friends queued for.
fn wake_all(ctx: &Ctx<'_>, wake: &[usize]) {
    for &w in wake {
        ctx.shared.blocking.wake(w);
    }
}

pub(crate) fn run(ctx: &mut Ctx<'_>, cmd: Cmd, args: &[Arg<'_>], out: &mut Vec<u8>) {
    match cmd {
        Cmd::Subscribe => subscribe(ctx, Kind::Channel, &args[1..], out),
        Cmd::Psubscribe => subscribe(ctx, Kind::Pattern, &args[1..], out),
        Cmd::Ssubscribe if ctx.session.multi.executing => {
            // Redis 7.0 denies it to a client that may not block, as one
            // inside EXEC (SUBSCRIBE is let through there for backward
            // compatibility).
            amalgam_protocol::resp::push_error(out, b"ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client")
        }
        Cmd::Ssubscribe => subscribe(ctx, Kind::Shard, &args[1..], out),
        Cmd::Unsubscribe => unsubscribe(ctx, Kind::Channel, &args[1..], out),
        Cmd::Punsubscribe => unsubscribe(ctx, Kind::Pattern, &args[1..], out),
        Cmd::Sunsubscribe => unsubscribe(ctx, Kind::Shard, &args[1..], out),
        Cmd::Publish | Cmd::Spublish => {
            let r = &ctx.shared.pubsub;
            let mut wake = Vec::new();
            let n = if cmd == Cmd::Publish {
                if ctx.shared.cluster.enabled() {
                    // Every other node's subscribers, over the bus (Redis's
                    // clusterPropagatePublish); the reply counts this
                    // node's receivers only, as Redis's.
                    ctx.shared.cluster.publish(&args[1], &args[2], ctx.shared.repl.backlog.offset());
                }
                r.publish(&args[1], &args[2], &mut wake)
            } else {
                if ctx.shared.cluster.enabled() {
                    // The shard's other nodes, over the bus (Redis's
                    // clusterPropagatePublishShard); the reply counts this
                    // node's receivers only.
                    ctx.shared.cluster.publish_shard(&args[1], &args[2], ctx.shared.repl.backlog.offset());
                }
                r.publish_shard(&args[1], &args[2], &mut wake)
            };
            // Its own messages first, as Redis appends them before the
            // reply (RESP3: a subscriber may publish). A dropped
            // connection is closed by its next turn.
            drain(ctx.session, out);
            wake_all(ctx, &wake);
            push_int(out, n as i64);
        }
        Cmd::Pubsub => pubsub(ctx, args, out),
        _ => unreachable!("not a pub/sub command: {cmd:?}"),
    }
}

fn subscribe(ctx: &mut Ctx<'_>, kind: Kind, names: &[Arg<'_>], out: &mut Vec<u8>) {
    let proto = ctx.proto();
    let shared = ctx.shared;
    let session = &mut *ctx.session;
    let st = session.pubsub.get_or_insert_with(|| {
        session.client.set_flag(flag::PUBSUB, true);
        Box::new(State {
            sub: Subscriber::new(Arc::clone(&session.client)),
            channels: HashSet::new(),
            patterns: Vec::new(),
            shard: HashSet::new(),
        })
    });
    for n in names {
        if !st.holds(kind, n) {
            st.insert(kind, n);
            shared.pubsub.add(kind, n, &st.sub);
        }
        push_reply(out, proto, kind.names().0, Some(n), st.count(kind));
    }
    count(session);
}

fn unsubscribe(ctx: &mut Ctx<'_>, kind: Kind, names: &[Arg<'_>], out: &mut Vec<u8>) {
    let proto = ctx.proto();
    let shared = ctx.shared;
    let reply = kind.names().1;
    let session = &mut *ctx.session;
    let Some(st) = session.pubsub.as_deref_mut() else {
        // Nothing held: one reply per name, or one null one.
        if names.is_empty() {
            push_reply(out, proto, reply, None, 0);
        }
        for n in names {
            push_reply(out, proto, reply, Some(n), 0);
        }
        return;
    };
    let all: Vec<Vec<u8>>;
    let names: Vec<&[u8]> = if names.is_empty() {
        all = st.all(kind);
        all.iter().map(|n| &n[..]).collect()
    } else {
        names.iter().map(|n| &n[..]).collect()
    };
    let mut counts = Vec::with_capacity(names.len());
    for n in &names {
        if st.take(kind, n) {
            shared.pubsub.remove(kind, n, &st.sub);
        }
        counts.push(st.count(kind));
    }
    // What was published before it left the registry goes out before the
    // replies (nothing more can arrive for the names it left).
    st.sub.drain_into(out);
    if names.is_empty() {
        push_reply(out, proto, reply, None, st.count(kind));
    }
    for (n, c) in names.iter().zip(counts) {
        push_reply(out, proto, reply, Some(n), c);
    }
    if st.empty() {
        session.client.set_flag(flag::PUBSUB, false);
        session.pubsub = None;
    }
    count(session);
}

/// RESET: leaves every subscription without a reply (Redis unsubscribes
/// with `notify` 0), and the connection is no longer a subscriber.
pub(crate) fn reset(shared: &crate::Shared, session: &mut super::Session) {
    leave(shared, session);
    session.client.set_flag(flag::PUBSUB, false);
    count(session);
}

/// Mirrors the connection's counts into CLIENT LIST's `sub=`/`psub=`.
fn count(session: &super::Session) {
    let (c, p, s) =
        session.pubsub.as_ref().map_or((0, 0, 0), |st| (st.channels.len(), st.patterns.len(), st.shard.len()));
    session.client.sub.store(c as u32, Ordering::Relaxed);
    session.client.psub.store(p as u32, Ordering::Relaxed);
    session.client.ssub.store(s as u32, Ordering::Relaxed);
}

const HELP: &[&str] = &[
    "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CHANNELS [<pattern>]",
    "    Return the currently active channels matching a <pattern> (default: '*').",
    "NUMPAT",
    "    Return number of subscriptions to patterns.",
    "NUMSUB [<channel> ...]",
    "    Return the number of subscribers for the specified channels, excluding",
    "    pattern subscriptions(default: no channels).",
    "SHARDCHANNELS [<pattern>]",
    "    Return the currently active shard level channels matching a <pattern> (default: '*').",
    "SHARDNUMSUB [<shardchannel> ...]",
    "    Return the number of subscribers for the specified shard level channel(s)",
    "HELP",
    "    Prints this help.",
];

/// PUBSUB CHANNELS NUMSUB NUMPAT HELP.
fn pubsub(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let Some(name) = sub(Cmd::Pubsub, args, out) else { return };
    let r = &ctx.shared.pubsub;
    if matches!(name, "channels" | "shardchannels") && args.len() > 3 {
        // Redis's pubsubCommand checks these counts itself, and names the
        // subcommand as given.
        let mut m = b"ERR unknown subcommand or wrong number of arguments for '".to_vec();
        m.extend_from_slice(args[1].split(|&b| b == 0).next().unwrap_or(b""));
        m.extend_from_slice(b"'. Try PUBSUB HELP.");
        return amalgam_protocol::resp::push_error(out, &m);
    }
    match name {
        "channels" | "shardchannels" => {
            let map = if name == "channels" { &r.channels } else { &r.shard_channels };
            let names = map.names(args.get(2).map(|a| &a[..]));
            push_array(out, names.len());
            for n in &names {
                push_bulk(out, n);
            }
        }
        "numsub" | "shardnumsub" => {
            let map = if name == "numsub" { &r.channels } else { &r.shard_channels };
            // A flat array, RESP3 too (Redis 7.0's addReplyArrayLen).
            push_array(out, 2 * (args.len() - 2));
            for c in &args[2..] {
                push_bulk(out, c);
                push_int(out, map.numsub(c) as i64);
            }
        }
        "numpat" => push_int(out, r.patterns() as i64),
        _ => super::help(HELP, out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subscriber(id: u64, worker: usize, token: usize) -> Arc<Subscriber> {
        Arc::new(Subscriber {
            client: Client::detached(id, worker, token),
            queue: Mutex::new(Vec::new()),
            posted: AtomicBool::new(false),
            dropped: AtomicBool::new(false),
            revoked: Mutex::new(Vec::new()),
        })
    }

    #[test]
    fn publish_queues_posts_once_and_counts() {
        let r = Registry::new(2, 0);
        let (a, b) = (subscriber(1, 0, 5), subscriber(2, 1, 7));
        r.add(Kind::Channel, b"ch", &a);
        r.add(Kind::Channel, b"ch", &b);
        r.add(Kind::Pattern, b"c*", &b);
        r.add(Kind::Shard, b"ch", &a);
        assert_eq!((r.channels(), r.patterns(), r.shard_channels()), (1, 1, 1));
        let mut wake = Vec::new();
        assert_eq!(r.publish(b"ch", b"m1", &mut wake), 3, "two subscribers and a pattern");
        assert_eq!(r.publish(b"ch", b"m2", &mut wake), 3);
        wake.sort_unstable();
        assert_eq!(wake, [0, 1]);
        // One post per subscriber until it drains.
        assert_eq!(r.take_ready(0), [(5, 1, false)]);
        assert_eq!(r.take_ready(1), [(7, 2, false)]);
        let mut out = Vec::new();
        a.drain_into(&mut out);
        assert_eq!(
            out,
            b"*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nm1\r\n*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nm2\r\n"
        );
        // RESP3: the same frames as pushes; a pattern adds a pmessage.
        b.client.resp.store(3, Ordering::Relaxed);
        let mut wake = Vec::new();
        assert_eq!(r.publish(b"cx", b"p", &mut wake), 1);
        let mut out = Vec::new();
        b.drain_into(&mut out);
        let want_tail = b">4\r\n$8\r\npmessage\r\n$2\r\nc*\r\n$2\r\ncx\r\n$1\r\np\r\n";
        assert!(out.ends_with(want_tail), "{}", String::from_utf8_lossy(&out));
        assert!(!b.posted.load(Ordering::Relaxed));
        // Removing the last subscriber removes the name.
        r.remove(Kind::Channel, b"ch", &a);
        r.remove(Kind::Channel, b"ch", &b);
        r.remove(Kind::Pattern, b"c*", &b);
        r.remove(Kind::Shard, b"ch", &a);
        assert_eq!((r.channels(), r.patterns(), r.shard_channels()), (0, 0, 0));
        assert_eq!(r.publish(b"ch", b"m", &mut wake), 0);
    }

    #[test]
    fn past_the_limit_the_queue_is_freed_and_the_subscriber_dropped() {
        let frame_bytes = b"*3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$4\r\nxxxx\r\n".len();
        let r = Registry::new(1, 3 * frame_bytes);
        let s = subscriber(9, 0, 3);
        r.add(Kind::Channel, b"c", &s);
        let mut wake = Vec::new();
        for _ in 0..3 {
            r.publish(b"c", b"xxxx", &mut wake);
        }
        assert!(!s.dropped.load(Ordering::Relaxed), "exactly at the limit");
        r.publish(b"c", b"xxxx", &mut wake);
        assert!(s.dropped.load(Ordering::Relaxed));
        assert_eq!(lock(&s.queue).capacity(), 0, "its memory comes back");
        // The first post and the drop's.
        assert_eq!(r.take_ready(0), [(3, 9, false), (3, 9, true)]);
        r.publish(b"c", b"xxxx", &mut wake);
        assert!(r.take_ready(0).is_empty(), "nothing more for a dropped one");
    }
}
