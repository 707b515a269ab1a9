//! TIME, TOUCH and OBJECT.
//!
//! OBJECT reports what Redis would for a string written by SET: ENCODING
//! is `int` for a value Redis would keep as a long (at most 20 bytes that
//! `string2l` accepts), `embstr` up to 44 bytes, else `raw` (Redis's
//! `tryObjectEncoding`; it looks at the value, not at the command that
//! wrote it, where Redis answers `raw` after APPEND, SETRANGE or SETBIT).
//! A HyperLogLog (`HYLL` and a header) is `raw` whatever its length, as
//! after any PF* command in Redis (which creates and rewrites it as a raw
//! string; a short one SET or RESTOREd and not yet touched by a PF*
//! command is `embstr` there).
//! REFCOUNT is 1, or `INT_MAX` for the integers 0–9999 Redis shares when
//! no LRU/LFU policy is in force (store mode's `noeviction`).
//!
//! FREQ and IDLETIME report what the eviction policy knows, under Redis's
//! rules for which policy allows which ([`MaxmemoryPolicy`]; Redis's
//! `objectCommand`, object.c): FREQ only under an LFU policy, IDLETIME
//! only under any other, each answering Redis's error otherwise. The
//! engine keeps no access time, only a 2-bit frequency per item (GET hits
//! since the item was written or last kept by a reclamation, at most 3:
//! docs/cache-mode.md, "Recency without a shared write"). So FREQ is that
//! frequency (0 to 3, where Redis's logarithmic counter starts at 5 and
//! reaches 255), and IDLETIME is 0 for an item read since (the policy
//! knows it was used, not when), else the seconds since it was written
//! (the write clock, engine clock.rs: exact to about a second). Store mode
//! keeps no frequency: its IDLETIME is the time since the last write.
//! Neither counts as a use of the key (Redis's LOOKUP_NOTOUCH).

use super::table::Cmd;
use super::{help, sub};
use super::{null, Arg, Ctx};
use amalgam_engine::evict::{Eviction, Scope};
use amalgam_protocol::resp::{push_array, push_bulk, push_error, push_int, string2ll};
use std::fmt;
use std::str::FromStr;

/// Redis's `OBJ_ENCODING_EMBSTR_SIZE_LIMIT`.
const EMBSTR_BYTES_MAX: usize = 44;
/// Redis's `OBJ_SHARED_INTEGERS`: 0..10000 share one object.
const SHARED_INTEGERS: i64 = 10_000;
/// Longest value Redis tries as an integer (`LONG_STR_SIZE` - 1).
const INT_CHARS_MAX: usize = 20;

/// Redis's OBJECT FREQ under a policy that is not LFU (object.c).
const NOT_LFU: &str = "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that \
                       when switching between policies at runtime LRU and LFU data will take some time to adjust.";
/// Redis's OBJECT IDLETIME under an LFU policy (object.c).
const LFU: &str = "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching \
                   between policies at runtime LRU and LFU data will take some time to adjust.";

/// Redis's `maxmemory-policy`, each of the eight names, and what serves
/// it here: the pair the engine decides by (docs/cache-mode.md, "Redis's
/// policies"): which keys may be evicted ([`Scope`]: all, or only those
/// with a TTL) and how they are ranked (the cache's policy, S3-FIFO or
/// CLOCK, `--eviction`; volatile-ttl's soonest deadline first).
/// `noeviction` is store mode (`--eviction none`), whose memory is laid
/// out differently: switching to or from it takes a restart.
///
/// | name | scope | ranked by |
/// |---|---|---|
/// | allkeys-lru, allkeys-lfu, allkeys-random | all keys | the cache's policy (S3-FIFO by default: its hit ratio measured at or above Redis's LRU and LFU on the study's Zipf loads, docs/benchmarks.md) |
/// | volatile-lru, volatile-lfu, volatile-random | keys with a TTL | the cache's policy |
/// | volatile-ttl | keys with a TTL | the soonest deadline first |
/// | noeviction | — | — (writes past the limit answer `-OOM`) |
///
/// The name is kept as given: CONFIG GET and INFO show it, and OBJECT
/// FREQ and IDLETIME follow Redis's LFU rule by it.
///
/// ```
/// use amalgam_commands::object::MaxmemoryPolicy;
/// let p: MaxmemoryPolicy = "Volatile-TTL".parse().unwrap();
/// assert_eq!(p.name(), "volatile-ttl");
/// assert!(MaxmemoryPolicy::AllkeysLfu.lfu());
/// assert!(p.scope().unwrap().volatile());
/// assert_eq!(MaxmemoryPolicy::Noeviction.scope(), None);
/// assert!("allkeys-fifo".parse::<MaxmemoryPolicy>().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaxmemoryPolicy {
    VolatileLru,
    VolatileLfu,
    VolatileRandom,
    VolatileTtl,
    AllkeysLru,
    AllkeysLfu,
    AllkeysRandom,
    Noeviction,
}

impl MaxmemoryPolicy {
    /// Every policy, in Redis's order (its `maxmemory-policy` enum).
    pub const ALL: [MaxmemoryPolicy; 8] = [
        MaxmemoryPolicy::VolatileLru,
        MaxmemoryPolicy::VolatileLfu,
        MaxmemoryPolicy::VolatileRandom,
        MaxmemoryPolicy::VolatileTtl,
        MaxmemoryPolicy::AllkeysLru,
        MaxmemoryPolicy::AllkeysLfu,
        MaxmemoryPolicy::AllkeysRandom,
        MaxmemoryPolicy::Noeviction,
    ];
    /// Their names, as Redis spells them.
    pub const NAMES: [&'static str; 8] = [
        "volatile-lru",
        "volatile-lfu",
        "volatile-random",
        "volatile-ttl",
        "allkeys-lru",
        "allkeys-lfu",
        "allkeys-random",
        "noeviction",
    ];

    /// Redis's name.
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    /// Position in [`MaxmemoryPolicy::ALL`] (kept in one atomic byte).
    pub fn index(self) -> u8 {
        self as u8
    }

    /// The policy at [`MaxmemoryPolicy::index`] `i` (`noeviction` past them).
    pub fn from_index(i: u8) -> MaxmemoryPolicy {
        Self::ALL.get(usize::from(i)).copied().unwrap_or(MaxmemoryPolicy::Noeviction)
    }

    /// Which keys the cache may evict under it (None: noeviction).
    pub fn scope(self) -> Option<Scope> {
        match self {
            MaxmemoryPolicy::Noeviction => None,
            MaxmemoryPolicy::VolatileTtl => Some(Scope::VolatileTtl),
            MaxmemoryPolicy::VolatileLru | MaxmemoryPolicy::VolatileLfu | MaxmemoryPolicy::VolatileRandom => {
                Some(Scope::Volatile)
            }
            _ => Some(Scope::AllKeys),
        }
    }

    /// Redis's `MAXMEMORY_FLAG_LFU`: OBJECT FREQ is answered, IDLETIME
    /// refused.
    pub fn lfu(self) -> bool {
        matches!(self, MaxmemoryPolicy::VolatileLfu | MaxmemoryPolicy::AllkeysLfu)
    }

    /// The name a store started without one reports: `noeviction` for
    /// store mode, `allkeys-lru` for a cache (the default before the eight
    /// were served: a cache evicting any key by recency of use).
    pub fn of_eviction(e: Eviction) -> MaxmemoryPolicy {
        match e {
            Eviction::None => MaxmemoryPolicy::Noeviction,
            _ => MaxmemoryPolicy::AllkeysLru,
        }
    }
}

impl fmt::Display for MaxmemoryPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for MaxmemoryPolicy {
    type Err = String;
    /// Any case, as Redis's enum configs.
    fn from_str(s: &str) -> Result<MaxmemoryPolicy, String> {
        let i = Self::NAMES.iter().position(|n| n.eq_ignore_ascii_case(s));
        i.map(|i| Self::ALL[i])
            .ok_or_else(|| format!("argument(s) must be one of the following: {}", Self::NAMES.join(", ")))
    }
}

pub fn run(ctx: &mut Ctx<'_>, cmd: Cmd, args: &[Arg<'_>], out: &mut Vec<u8>) {
    match cmd {
        Cmd::Time => {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            push_array(out, 2);
            push_bulk(out, now.as_secs().to_string().as_bytes());
            push_bulk(out, now.subsec_micros().to_string().as_bytes());
        }
        Cmd::Touch => {
            // A read of each key: it counts as a use for the eviction
            // policy, as TOUCH updates Redis's LRU clock.
            let store = &ctx.ks.store;
            let n = args[1..].iter().filter(|k| store.get(k, |_| ()).is_some()).count();
            push_int(out, n as i64);
        }
        _ => object(ctx, args, out),
    }
}

/// Redis's encoding name for a string value written by SET (or, for a
/// HyperLogLog, by a PF* command).
fn encoding(v: &[u8]) -> &'static str {
    if v.len() <= INT_CHARS_MAX && string2ll(v).is_some() {
        "int"
    } else if v.len() <= EMBSTR_BYTES_MAX && amalgam_types::hll::check(v).is_err() {
        "embstr"
    } else {
        "raw"
    }
}

fn object(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let Some(name) = sub(Cmd::Object, args, out) else { return };
    if name == "help" {
        return help(
            &[
                "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "ENCODING <key>",
                "    Return the kind of internal representation used in order to store the value",
                "    associated with a <key>.",
                "FREQ <key>",
                "    Return the access frequency index of the <key>. The returned integer is",
                "    proportional to the logarithm of the recent access frequency of the key.",
                "IDLETIME <key>",
                "    Return the idle time of the <key>, that is the approximated number of",
                "    seconds elapsed since the last access to the key.",
                "REFCOUNT <key>",
                "    Return the number of references of the value associated with the specified",
                "    <key>.",
                "HELP",
                "    Prints this help.",
            ],
            out,
        );
    }
    let policy = ctx.ks.host.maxmemory_policy();
    let shares = ctx.ks.store.eviction() == Eviction::None;
    let store = ctx.ks.store;
    // OBJECT does not count as a use of the key (Redis's LOOKUP_NOTOUCH).
    let found = store.peek(&args[2], |it| {
        let v = it.value();
        match name {
            "encoding" => {
                let name = super::typed::encoding(&it).unwrap_or_else(|| encoding(v));
                push_bulk(out, name.as_bytes())
            }
            "freq" if !policy.lfu() => push_error(out, NOT_LFU.as_bytes()),
            "freq" => push_int(out, i64::from(it.freq())),
            "idletime" if policy.lfu() => push_error(out, LFU.as_bytes()),
            "idletime" if it.freq() > 0 => push_int(out, 0),
            "idletime" => push_int(out, i64::from(store.now().saturating_sub(store.stored_at(it.cas())))),
            _ => {
                let shared = shares
                    && it.tag() == amalgam_engine::TAG_BYTES
                    && encoding(v) == "int"
                    && string2ll(v).is_some_and(|n| (0..SHARED_INTEGERS).contains(&n));
                push_int(out, if shared { i64::from(i32::MAX) } else { 1 });
            }
        }
    });
    if found.is_none() {
        null(ctx, out);
    }
}

/// The name a store started without a `maxmemory-policy` reports
/// ([`MaxmemoryPolicy::of_eviction`]). INFO's `amalgam_eviction` names
/// the cache's own policy.
pub fn maxmemory_policy(e: amalgam_engine::evict::Eviction) -> &'static str {
    MaxmemoryPolicy::of_eviction(e).name()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_follow_redis() {
        assert_eq!(encoding(b"12345"), "int");
        assert_eq!(encoding(b"-5"), "int");
        assert_eq!(encoding(b"012"), "embstr");
        assert_eq!(encoding(b"99999999999999999999"), "embstr");
        assert_eq!(encoding(&[b'x'; 44]), "embstr");
        assert_eq!(encoding(&[b'x'; 45]), "raw");
        assert_eq!(encoding(&amalgam_types::hll::new_sparse()), "raw", "a HyperLogLog");
    }
}
