//! Per-client output buffer limits: Redis's `client-output-buffer-limit`
//! for the `normal` class, on both ports.
//!
//! ## What Redis 7.0 does
//! Each client class (`normal`, `replica`/`slave`, `pubsub`) has a hard
//! limit, a soft limit and soft seconds (`client-output-buffer-limit
//! <class> <hard> <soft> <seconds>`, memory values, 0: none). A client
//! whose pending replies reach the hard limit, or stay at or above the
//! soft limit for more than the soft seconds, is closed and its buffers
//! freed; Redis logs `Client <info> scheduled to be closed ASAP for
//! overcoming of output buffer limits.` and (7.2, not 7.0.15) counts it in
//! INFO stats' `client_output_buffer_limit_disconnections`. Redis's
//! defaults: `normal 0 0 0 slave 256mb 64mb 60 pubsub 32mb 8mb 60`.
//! CONFIG SET takes any number of `<class> <hard> <soft> <seconds>`
//! groups, checks all of them first (Redis's errors: [`parse`]), and
//! changes only the classes it names; CONFIG GET shows all three.
//!
//! ## What Amalgam does
//! * What counts is the connection's write buffer not yet taken by the
//!   kernel (Redis counts its reply list, without its 16 KiB static
//!   buffer; neither counts the socket's own buffer).
//! * The hard limit is checked where output is appended: once per round
//!   of a connection's turn, after its batch ran (`worker.rs`), not per
//!   reply — one comparison per round that produced output. A round
//!   parses requests only while the write buffer is below
//!   `WRITE_BUFFER_HIGH_BYTES` (1 MiB) and runs pipelined GETs in runs of
//!   at most `GETS_RUN_REQUESTS_MAX`, so what one round can add beyond the
//!   high-water mark is one command's reply or one run of GETs. A client
//!   that does not read stops being read at the high-water mark; what the
//!   hard limit catches is a single round's reply bigger than it (KEYS *,
//!   LRANGE 0 -1 of a huge list, SMEMBERS, HGETALL, MGET or a memcached
//!   multi-get of many large values, a round of large GETs).
//! * A reply of many elements stops being built once the round's output
//!   reaches the hard limit (KEYS, LRANGE, SMEMBERS and the set
//!   operations, HKEYS/HVALS/HGETALL, the ZRANGE family, MGET, a
//!   memcached multi-get: each compares the output's length with the
//!   limit read once per round, `Ctx::out_stop`, before each element), so
//!   the server never holds more than the limit plus one element for it;
//!   the unfinished reply is never sent: the client is closed with the
//!   same accounting (`resp::process` for RESP, the per-round check for
//!   memcached's port). Redis stops appending once a client is over
//!   (`CLIENT_CLOSE_ASAP`) but still runs the command to its end; here
//!   the command stops too.
//! * Nothing of a pipelined batch after the point where the round's
//!   output reached the hard limit runs, on either port ([`RoundStop`]):
//!   a round parses no further request once the output reaches the lower
//!   of the high-water mark and the hard limit, and a request already
//!   parsed behind a run of GETs that crossed the limit (a `set` after
//!   pipelined `get`s, a SET after GETs) is dropped with the rest, as
//!   Redis's `processInputBuffer` runs nothing more for a client it is
//!   closing. memcached never closes such a client: it stops reading it
//!   while its socket is full and runs the rest of the pipeline when the
//!   client reads again (docs/security.md § Output limits).
//! * The soft limit is checked by each worker once a second
//!   ([`SWEEP_EVERY`]) over its connections (only while a soft limit is
//!   set; the worker looks at the clock every 16 rounds of its loop or
//!   when a poll found nothing, so a worker whose events come about once a
//!   second sweeps less often, at worst every 16 s): a connection found at
//!   or above it twice, more than the soft seconds apart, with no check in
//!   between finding it below, is closed.
//!   Redis checks the soft limit only when output is appended, so a client
//!   that stopped reading and gets no more output is never closed by it
//!   there; here it is (deliberately: that client holds the memory).
//! * The `normal` class covers every memcached-port connection too.
//!   memcached 1.6 never closes a client for unsent output (its replies
//!   point into the items, and it stops reading a client that does not
//!   read); Amalgam copies replies into the write buffer, so the bound is
//!   needed there as well.
//! * The `pubsub` class covers subscribed RESP clients: its hard limit is
//!   checked when a message is queued (`resp/pubsub.rs`, which holds it)
//!   and against the write buffer as above, its soft limit as above.
//! * The `replica` class is accepted and shown, not enforced: a replica is
//!   served by a replication sender (`repl.rs`) that reads the shared
//!   backlog and holds no output buffer of its own; a replica that falls
//!   behind the backlog gets a full resync instead.
//!
//! ## Amalgam's default for `normal`: `1gb 64mb 60`, not Redis's `0 0 0`
//! Deliberately finite, so that no client can hold unbounded memory by
//! default (the "limits no client can exhaust"), yet no legitimate
//! single reply is cut: 1 GiB is above the largest value either port
//! stores (`proto-max-bulk-len` 512 MB, memcached's `-I` at most 1 GiB
//! minus its header), so only replies of many values or elements reach
//! it, which a client should page (SCAN, LRANGE with bounds). 64 MiB
//! left unread for a minute is a client that is not reading. Set
//! `client-output-buffer-limit "normal 0 0 0"` for Redis's behaviour.

pub use crate::turn::RoundStop;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Amalgam's default hard limit for the normal class: 1 GiB (module
/// notes: above any single value, unlike Redis's 0).
pub const NORMAL_HARD_BYTES_DEFAULT: u64 = 1 << 30;
/// Amalgam's default soft limit for the normal class: 64 MiB.
pub const NORMAL_SOFT_BYTES_DEFAULT: u64 = 64 << 20;
/// Amalgam's default soft seconds for the normal class (Redis's for the
/// other classes).
pub const NORMAL_SOFT_SECS_DEFAULT: u64 = 60;
/// Redis's `slave 256mb 64mb 60` (shown, not enforced: module notes).
pub const REPLICA_DEFAULT: (u64, u64, u64) = (256 << 20, 64 << 20, 60);
/// Redis's `pubsub 32mb 8mb 60` soft part (the hard part is
/// `--client-output-buffer-limit-pubsub`, held by `resp/pubsub.rs`).
/// Redis's `client-output-buffer-limit pubsub` hard limit: 32 MiB (the
/// default of `--client-output-buffer-limit-pubsub`).
pub const PUBSUB_HARD_BYTES_DEFAULT: usize = 32 << 20;
pub const PUBSUB_SOFT_BYTES_DEFAULT: u64 = 8 << 20;
pub const PUBSUB_SOFT_SECS_DEFAULT: u64 = 60;
/// How often a worker checks its connections against the soft limits.
pub const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// Redis's client classes for output limits, in CONFIG GET's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    Normal = 0,
    Replica = 1,
    Pubsub = 2,
}

/// CONFIG GET's names of the classes, by [`Class`] index.
const CLASS_NAMES: [&str; 3] = ["normal", "slave", "pubsub"];

/// One class's limits (bytes, bytes, seconds; 0: none).
#[derive(Debug, Default)]
struct ClassLimits {
    hard_bytes: AtomicU64,
    soft_bytes: AtomicU64,
    soft_secs: AtomicU64,
}

/// Redis's errors for a `client-output-buffer-limit` value it refuses
/// (`setConfigClientOutputBufferLimitOption`, after "- ").
pub const ERR_ARGUMENTS: &str = "Wrong number of arguments in buffer limit configuration.";
pub const ERR_CLASS: &str = "Invalid client class specified in buffer limit configuration.";
pub const ERR_VALUE: &str = "Error in hard, soft or soft_seconds setting in buffer limit configuration.";

/// One `<class> <hard> <soft> <seconds>` group.
pub type Group = (Class, u64, u64, u64);

/// Parses a `client-output-buffer-limit` value as Redis does: groups of
/// four words; the class `normal`, `slave`/`replica` or `pubsub` (not
/// `master`), any case; hard and soft memory values; the seconds digits
/// only (Redis keeps them as a C int: a larger number wraps, as there).
/// All groups are checked before any is returned; `""` is no group.
pub fn parse(v: &[u8]) -> Result<Vec<Group>, &'static str> {
    let text = std::str::from_utf8(v).map_err(|_| ERR_VALUE)?;
    let words: Vec<&str> = text.split_ascii_whitespace().collect();
    if words.len() % 4 != 0 {
        return Err(ERR_ARGUMENTS);
    }
    let mut groups = Vec::with_capacity(words.len() / 4);
    for g in words.chunks_exact(4) {
        let class = match g[0].to_ascii_lowercase().as_str() {
            "normal" => Class::Normal,
            "slave" | "replica" => Class::Replica,
            "pubsub" => Class::Pubsub,
            _ => return Err(ERR_CLASS),
        };
        let mem = |w: &str| memory_value(w.as_bytes()).ok_or(ERR_VALUE);
        let (hard, soft) = (mem(g[1])?, mem(g[2])?);
        if g[3].is_empty() || !g[3].bytes().all(|b| b.is_ascii_digit()) {
            return Err(ERR_VALUE);
        }
        // Redis: strtoll into an int; digits past u64 saturate there too.
        let secs = u64::from(g[3].parse::<u64>().unwrap_or(u64::MAX) as u32);
        groups.push((class, hard, soft, secs));
    }
    Ok(groups)
}

/// The limits in force, and how many clients they closed.
#[derive(Debug)]
pub struct OutputLimits {
    classes: [ClassLimits; 3],
    /// Clients closed for their output (INFO stats'
    /// `client_output_buffer_limit_disconnections`).
    pub disconnections: AtomicU64,
}

impl OutputLimits {
    /// Amalgam's defaults (module notes), pubsub's hard limit from its
    /// flag (`resp/pubsub.rs` holds it too, for its queue).
    pub fn new(pubsub_hard_bytes: usize) -> OutputLimits {
        let l = OutputLimits { classes: Default::default(), disconnections: AtomicU64::new(0) };
        l.set(Class::Normal, NORMAL_HARD_BYTES_DEFAULT, NORMAL_SOFT_BYTES_DEFAULT, NORMAL_SOFT_SECS_DEFAULT);
        let (h, s, t) = REPLICA_DEFAULT;
        l.set(Class::Replica, h, s, t);
        l.set(Class::Pubsub, pubsub_hard_bytes as u64, PUBSUB_SOFT_BYTES_DEFAULT, PUBSUB_SOFT_SECS_DEFAULT);
        l
    }

    fn set(&self, class: Class, hard: u64, soft: u64, secs: u64) {
        let c = &self.classes[class as usize];
        c.hard_bytes.store(hard, Ordering::Relaxed);
        c.soft_bytes.store(soft, Ordering::Relaxed);
        c.soft_secs.store(secs, Ordering::Relaxed);
    }

    /// Applies checked groups (`parse`): each names its class's three
    /// values. Answers pubsub's new hard limit, if a group set it: the
    /// caller gives it to the Pub/Sub registry, which checks it as a
    /// message is queued.
    pub fn apply(&self, groups: &[Group]) -> Option<usize> {
        let mut pubsub = None;
        for &(class, hard, soft, secs) in groups {
            self.set(class, hard, soft, secs);
            if class == Class::Pubsub {
                pubsub = Some(usize::try_from(hard).unwrap_or(usize::MAX));
            }
        }
        pubsub
    }

    /// CONFIG GET's text: every class, Redis's order and names.
    pub fn format(&self) -> String {
        let mut parts = Vec::with_capacity(3);
        for (i, name) in CLASS_NAMES.iter().enumerate() {
            let c = &self.classes[i];
            parts.push(format!(
                "{name} {} {} {}",
                c.hard_bytes.load(Ordering::Relaxed),
                c.soft_bytes.load(Ordering::Relaxed),
                c.soft_secs.load(Ordering::Relaxed)
            ));
        }
        parts.join(" ")
    }

    /// The default's text (CONFIG REWRITE), with pubsub's hard limit as
    /// its flag's default.
    pub fn format_default() -> String {
        let (h, s, t) = REPLICA_DEFAULT;
        format!(
            "normal {NORMAL_HARD_BYTES_DEFAULT} {NORMAL_SOFT_BYTES_DEFAULT} {NORMAL_SOFT_SECS_DEFAULT} slave {h} {s} {t} \
             pubsub {} {PUBSUB_SOFT_BYTES_DEFAULT} {PUBSUB_SOFT_SECS_DEFAULT}",
            PUBSUB_HARD_BYTES_DEFAULT
        )
    }

    /// True if `pending` bytes reach `class`'s hard limit (the per-round
    /// check: one load and one comparison).
    #[inline]
    pub fn over_hard(&self, class: Class, pending: usize) -> bool {
        let hard = self.classes[class as usize].hard_bytes.load(Ordering::Relaxed);
        hard != 0 && pending as u64 >= hard
    }

    /// `class`'s hard limit in bytes (`usize::MAX`: none): where a reply
    /// being built stops (`Ctx::out_stop` in `resp.rs`, `exec::run_gets`).
    #[inline]
    pub fn hard_stop(&self, class: Class) -> usize {
        match self.classes[class as usize].hard_bytes.load(Ordering::Relaxed) {
            0 => usize::MAX,
            hard => usize::try_from(hard).unwrap_or(usize::MAX),
        }
    }

    /// Where a round of `class`'s batch stops (read once per round).
    #[inline]
    pub fn round_stop(&self, class: Class) -> RoundStop {
        RoundStop::new(self.hard_stop(class))
    }

    /// True while any class a worker serves has a soft limit (the worker
    /// sweeps its connections only then).
    pub fn soft_on(&self) -> bool {
        [Class::Normal, Class::Pubsub].iter().any(|&c| self.classes[c as usize].soft_bytes.load(Ordering::Relaxed) != 0)
    }

    /// The soft check of one connection at `now` (a `ticks` reading):
    /// `since` is when it was first found at or above the soft limit
    /// (0: it was not); true if it has been there longer than the soft
    /// seconds and must be closed.
    pub fn soft_expired(&self, class: Class, pending: usize, since: &mut u64, now: u64) -> bool {
        let c = &self.classes[class as usize];
        let soft = c.soft_bytes.load(Ordering::Relaxed);
        if soft == 0 || (pending as u64) < soft {
            *since = 0;
            return false;
        }
        if *since == 0 {
            *since = now.max(1);
            return false;
        }
        let secs = c.soft_secs.load(Ordering::Relaxed);
        crate::ticks::nanos_between(*since, now) > secs.saturating_mul(1_000_000_000)
    }

    /// Counts and logs (rate-limited) a client closed for its output.
    #[cold]
    pub fn closed(&self, who: &str, class: Class, pending: usize) {
        self.disconnections.fetch_add(1, Ordering::Relaxed);
        static LOG: amalgam_persist::ratelimit::RateLimit = amalgam_persist::ratelimit::RateLimit::new();
        if let Some(held) = LOG.allow() {
            log::warn!(
                "Client {who} closed for overcoming of output buffer limits (class {}, {pending} bytes pending).{}",
                CLASS_NAMES[class as usize],
                amalgam_persist::ratelimit::held_back(held)
            );
        }
    }
}

/// Redis's `memtoull` (digits with an optional unit: k = 1000, kb =
/// 1024, m, mb, g, gb; case-insensitive; no sign), or None if `s` is not
/// a memory value. No digits read as 0, as `strtoull` reads them there:
/// `CONFIG SET maxmemory ""` and `"kb"` set 0 in Redis 7.0.
pub fn memory_value(s: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(s).ok()?.to_ascii_lowercase();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    let mul: u64 = match unit {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    let n = if digits.is_empty() { 0 } else { digits.parse::<u64>().ok()? };
    n.checked_mul(mul)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_as_redis() {
        assert_eq!(parse(b"normal 64mb 32mb 60"), Ok(vec![(Class::Normal, 64 << 20, 32 << 20, 60)]));
        assert_eq!(
            parse(b"REPLICA 1mb 2mb 3 pubsub 1k 2k 4"),
            Ok(vec![(Class::Replica, 1 << 20, 2 << 20, 3), (Class::Pubsub, 1000, 2000, 4)])
        );
        assert_eq!(parse(b""), Ok(vec![]));
        assert_eq!(parse(b"normal 1 2 99999999999"), Ok(vec![(Class::Normal, 1, 2, 1_215_752_191)]));
        assert_eq!(parse(b"normal 1 2"), Err(ERR_ARGUMENTS));
        assert_eq!(parse(b"normal 1 2 3 pubsub 1"), Err(ERR_ARGUMENTS));
        assert_eq!(parse(b"master 1 2 3"), Err(ERR_CLASS));
        assert_eq!(parse(b"normal 1 2 3 foo 1 2 3"), Err(ERR_CLASS));
        for bad in
            ["normal x 2 3", "normal -1 2 3", "normal 1 -2 3", "normal 1 2 -1", "normal 1 2 1kb", "normal 1 2 3x"]
        {
            assert_eq!(parse(bad.as_bytes()), Err(ERR_VALUE), "{bad}");
        }
    }

    #[test]
    fn round_stops() {
        let high = crate::turn::WRITE_BUFFER_HIGH_BYTES;
        let low = RoundStop::new(1000);
        assert!(low.parses(999) && !low.parses(1000));
        assert!(!low.crossed(999) && low.crossed(1000));
        let none = RoundStop::new(usize::MAX);
        assert!(none.parses(high - 1) && !none.parses(high));
        assert!(!none.crossed(usize::MAX - 1));
        let above = RoundStop::new(high * 4);
        assert!(!above.parses(high) && !above.crossed(high));
    }

    #[test]
    fn hard_and_soft() {
        let l = OutputLimits::new(0);
        l.set(Class::Normal, 100, 50, 1);
        assert!(!l.over_hard(Class::Normal, 99));
        assert!(l.over_hard(Class::Normal, 100));
        l.set(Class::Normal, 0, 50, 0);
        assert!(!l.over_hard(Class::Normal, usize::MAX));
        let mut since = 0;
        let t0 = crate::ticks::now();
        assert!(!l.soft_expired(Class::Normal, 60, &mut since, t0));
        assert_ne!(since, 0);
        // Below the soft limit in between: the clock starts again.
        assert!(!l.soft_expired(Class::Normal, 10, &mut since, t0));
        assert_eq!(since, 0);
        assert!(!l.soft_expired(Class::Normal, 60, &mut since, t0));
        // Soft seconds 0: any later check past the first closes it.
        std::thread::sleep(Duration::from_millis(2));
        assert!(l.soft_expired(Class::Normal, 60, &mut since, crate::ticks::now()));
    }
}
