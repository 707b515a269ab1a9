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
//! no LRU/LFU policy is in force (store mode's `noeviction`). IDLETIME is
//! 0: the engine keeps a few recency bits per item, not an access time.
//! FREQ answers Redis's error for a non-LFU policy: Amalgam reports an LRU
//! name or noeviction ([`maxmemory_policy`]).

use super::table::Cmd;
use super::{help, sub};
use super::{null, Arg, Ctx};
use amalgam_engine::evict::Eviction;
use amalgam_protocol::resp::{push_array, push_bulk, push_error, push_int, string2ll};

/// Redis's `OBJ_ENCODING_EMBSTR_SIZE_LIMIT`.
const EMBSTR_BYTES_MAX: usize = 44;
/// Redis's `OBJ_SHARED_INTEGERS`: 0..10000 share one object.
const SHARED_INTEGERS: i64 = 10_000;
/// Longest value Redis tries as an integer (`LONG_STR_SIZE` - 1).
const INT_CHARS_MAX: usize = 20;

const NOT_LFU: &str = "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that \
                       when switching between policies at runtime LRU and LFU data will take some time to adjust.";

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
    let shares = maxmemory_policy(ctx.ks.store.eviction()) == maxmemory_policy(Eviction::None);
    // OBJECT does not count as a use of the key (Redis's LOOKUP_NOTOUCH).
    let found = ctx.ks.store.get(&args[2], |it| {
        let v = it.value();
        match name {
            "encoding" => {
                let name = super::typed::encoding(&it).unwrap_or_else(|| encoding(v));
                push_bulk(out, name.as_bytes())
            }
            "freq" => push_error(out, NOT_LFU.as_bytes()),
            "idletime" => push_int(out, 0),
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

/// Redis's name for the eviction policy in force: Redis has no S3-FIFO
/// or CLOCK, and the closest of its names for a policy that evicts any
/// key (TTL or not) by recency of use is `allkeys-lru` (CLOCK approximates
/// LRU; S3-FIFO is a recency policy with a probationary queue). Store mode
/// (`--eviction none`) is Redis's `noeviction`: a full store refuses
/// writes with OOM. INFO's `amalgam_eviction` names the real policy.
pub fn maxmemory_policy(e: amalgam_engine::evict::Eviction) -> &'static str {
    match e {
        amalgam_engine::evict::Eviction::None => "noeviction",
        _ => "allkeys-lru",
    }
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
