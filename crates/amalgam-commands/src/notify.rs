//! Keyspace notifications (Redis 7.0 `notify.c`, issue 35 §2): what a
//! write tells Pub/Sub subscribers of `__keyspace@<db>__:<key>` (the event
//! as the message) and `__keyevent@<db>__:<event>` (the key as the
//! message).
//!
//! ## The classes
//! `notify-keyspace-events` is a set of class letters (Redis's table):
//!
//! | letter | class | events |
//! |---|---|---|
//! | `K` | keyspace channel | (where to publish) |
//! | `E` | keyevent channel | (where to publish) |
//! | `g` | generic | del expire persist rename_from rename_to move_from move_to copy_to restore |
//! | `$` | string | set setrange incrby incrbyfloat append setbit pfadd |
//! | `l` | list | lpush rpush lpop rpop linsert lset lrem ltrim sortstore |
//! | `s` | set | sadd srem spop sinterstore sunionstore sdiffstore |
//! | `h` | hash | hset hdel hincrby hincrbyfloat |
//! | `z` | sorted set | zadd zincr zrem zremrangeby* zpopmin zpopmax z*store |
//! | `x` | expired | expired |
//! | `e` | evicted | evicted |
//! | `t` | stream | (no streams yet) |
//! | `m` | key miss | keymiss (a read of a missing key) |
//! | `d` | module | (no modules) |
//! | `n` | new | new (a key created) |
//! | `A` | `g$lshzxetd` | (`m` and `n` only by name) |
//!
//! ## Cost while off
//! A family calls [`Ctx::notify`] after each change, as Redis calls
//! `notifyKeyspaceEvent`: one relaxed load of the flags word and a test
//! of the class bit, inlined; everything else (the database's number,
//! the channel names, the publish) is out of line in the server's
//! [`Host::notify`](crate::Host::notify), reached only when a subscriber
//! could hear it. Redis checks the class alone (`flags & type`); a class
//! with neither `K` nor `E` publishes nothing, and is cut here as well.

use crate::table::{keys_of, Cmd, Spec};
use crate::Ctx;
use std::sync::atomic::Ordering;

/// `K`: publish on `__keyspace@<db>__:<key>`.
pub const KEYSPACE: u32 = 1 << 0;
/// `E`: publish on `__keyevent@<db>__:<event>`.
pub const KEYEVENT: u32 = 1 << 1;
/// `g`: DEL, EXPIRE, RENAME … (type-independent).
pub const GENERIC: u32 = 1 << 2;
/// `$`: string commands.
pub const STRING: u32 = 1 << 3;
/// `l`: list commands.
pub const LIST: u32 = 1 << 4;
/// `s`: set commands.
pub const SET: u32 = 1 << 5;
/// `h`: hash commands.
pub const HASH: u32 = 1 << 6;
/// `z`: sorted set commands.
pub const ZSET: u32 = 1 << 7;
/// `x`: a key deleted because its time ran out.
pub const EXPIRED: u32 = 1 << 8;
/// `e`: a key evicted for memory.
pub const EVICTED: u32 = 1 << 9;
/// `t`: stream commands.
pub const STREAM: u32 = 1 << 10;
/// `m`: a read of a missing key.
pub const KEY_MISS: u32 = 1 << 11;
/// `d`: module events.
pub const MODULE: u32 = 1 << 12;
/// `n`: a key created.
pub const NEW: u32 = 1 << 13;
/// `A`: every class but `m` and `n` (Redis's `NOTIFY_ALL`).
pub const ALL: u32 = GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;
/// Internal, no letter (never parsed, never shown by CONFIG GET): a
/// client tracks keys (CLIENT TRACKING, the server's `resp/tracking.rs`).
/// The server sets it, with [`TRACKED`], in the word the write paths
/// read while any client tracks, so every change reaches
/// [`Host::notify`](crate::Host::notify) with its key through the same
/// test that keyspace notifications cost (none added while no one tracks).
pub const TRACKING: u32 = 1 << 31;
/// The classes whose events modify a key (Redis calls
/// `trackingInvalidateKey` for each, from `signalModifiedKey`, expiry and
/// eviction): every class of `A`. Not `m` (a read) nor `n` (a key's
/// creation always comes with its write's own event).
pub const TRACKED: u32 = ALL;

/// The letters, in the order Redis writes them back (`A`'s members
/// first, then the channels and `m`).
const LETTERS: [(u8, u32); 14] = [
    (b'g', GENERIC),
    (b'$', STRING),
    (b'l', LIST),
    (b's', SET),
    (b'h', HASH),
    (b'z', ZSET),
    (b'x', EXPIRED),
    (b'e', EVICTED),
    (b't', STREAM),
    (b'd', MODULE),
    (b'n', NEW),
    (b'K', KEYSPACE),
    (b'E', KEYEVENT),
    (b'm', KEY_MISS),
];

/// CONFIG SET's error for a letter outside the table (Redis 7.0's text).
pub const INVALID_CLASS: &str = "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.";

/// The flags a `notify-keyspace-events` value names (Redis's
/// `keyspaceEventsStringToFlags`); None for a letter outside the table.
pub fn parse(classes: &[u8]) -> Option<u32> {
    classes.iter().try_fold(0, |flags, &c| {
        if c == b'A' {
            return Some(flags | ALL);
        }
        LETTERS.iter().find(|(l, _)| *l == c).map(|(_, f)| flags | f)
    })
}

/// The value CONFIG GET shows for `flags` (Redis's
/// `keyspaceEventsFlagsToString`): `A` stands for all of its classes,
/// and then hides `n` as Redis's does.
pub fn format(flags: u32) -> String {
    let mut s = String::new();
    let channels = KEYSPACE | KEYEVENT | KEY_MISS;
    if flags & ALL == ALL {
        s.push('A');
    }
    for &(letter, f) in &LETTERS {
        let in_a = f & channels == 0;
        if flags & f != 0 && !(in_a && flags & ALL == ALL) {
            s.push(letter as char);
        }
    }
    s
}

impl Ctx<'_> {
    /// True if events of `class` reach a channel now.
    #[inline(always)]
    pub fn notifying(&self, class: u32) -> bool {
        self.notify & class != 0
    }

    /// Reads `notify-keyspace-events` again (the round's copy in
    /// [`Ctx::notify`](crate::Ctx::notify), as [`in_effect`]).
    pub fn refresh_notify(&mut self) {
        self.notify = in_effect(self.ks.notify.load(Ordering::Relaxed));
    }

    /// Tells subscribers that `event` of `class` happened to `key` (its
    /// stored form: the server finds the database from it).
    #[inline(always)]
    pub fn notify(&self, class: u32, event: &'static str, key: &[u8]) {
        if self.notifying(class) {
            self.publish(class, event, key);
        }
    }

    /// The publishing half of [`Ctx::notify`], out of line: the write
    /// paths inline only the test (no call set up while notifications
    /// are off).
    #[cold]
    #[inline(never)]
    fn publish(&self, class: u32, event: &'static str, key: &[u8]) {
        self.ks.host.notify(class, event, key);
    }
}

/// The classes whose events reach a channel under `flags`: none unless
/// `K` or `E` is on (Redis publishes nothing without a channel), or a
/// client tracks keys ([`TRACKING`]: the server then sets [`TRACKED`]
/// too). A write's test is then one AND of the word
/// [`Ctx::notify`](crate::Ctx::notify) holds, zero while notifications
/// are off and no one tracks.
#[inline(always)]
pub fn in_effect(flags: u32) -> u32 {
    if flags & (KEYSPACE | KEYEVENT | TRACKING) != 0 {
        flags
    } else {
        0
    }
}

/// Commands whose read-write key is looked up for reading first (Redis's
/// `lookupKeyRead`), so a missing one is a `keymiss`: every other RW key
/// is looked up for writing (LPOP, HDEL, INCR …), which tells nothing.
const READS_ITS_RW_KEY: &[Cmd] = &[Cmd::Getdel, Cmd::Getex, Cmd::Getset, Cmd::Bitfield, Cmd::Pfcount];

/// `m`: the `keymiss` events of a command about to run (Redis's
/// `lookupKeyRead` notifies them as it looks, before the command's own
/// events). A read-only key (key spec `RO`) missing is a miss, but for
/// OBJECT and MEMORY USAGE, which look without notifying; so is a
/// read-write key of the commands that read it first, SET's with GET.
/// Runs only while `m` is on (one lookup per key).
#[cold]
#[inline(never)]
pub fn key_misses(ctx: &Ctx<'_>, spec: &'static Spec, args: &[crate::Arg<'_>]) {
    if matches!(spec.cmd, Cmd::Object | Cmd::Memory) {
        return;
    }
    let reads_rw =
        READS_ITS_RW_KEY.contains(&spec.cmd) || (spec.cmd == Cmd::Set && args[3..].iter().any(|a| crate::is(a, "get")));
    for (i, ks) in keys_of(spec, args) {
        let read = ks.flags.contains(&"RO") || (reads_rw && ks.flags.contains(&"RW"));
        if read && ctx.ks.store.peek(&args[i], |_| ()).is_none() {
            ctx.ks.host.notify(KEY_MISS, "keymiss", &args[i]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_parse_and_print_as_redis_7_0() {
        // Each pair checked against redis-server 7.0.15's CONFIG SET/GET.
        for (set, get) in
            [("KEA", "AKE"), ("Kg$n", "g$nK"), ("KEAnm", "AKEm"), ("g", "g"), ("", ""), ("Elz", "lzE"), ("Ex", "xE")]
        {
            let flags = parse(set.as_bytes()).unwrap();
            assert_eq!(format(flags), get, "{set}");
        }
        assert_eq!(parse(b"KEq"), None);
        assert_eq!(parse(b"A"), Some(ALL));
        assert_eq!(parse(b"AKEnm").map(|f| f & (NEW | KEY_MISS)), Some(NEW | KEY_MISS));
        // Every letter of the error's list parses.
        assert!(parse(b"Ag$lshzxeKEtmdn").is_some());
        // The tracking bit has no letter and is never shown.
        assert_eq!(format(TRACKING), "");
        assert_eq!(format(TRACKING | ALL), "A");
        assert_eq!(parse(b"Ag$lshzxeKEtmdn").map(|f| f & TRACKING), Some(0));
    }
}
