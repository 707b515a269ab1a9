//! Redis's numbered databases: which engine namespace a database is, the
//! key arguments of a command made into stored keys, and the commands
//! that name a database (MOVE, SWAPDB; COPY … DB in `keyspace.rs`).
//!
//! ## Design (issue 35 §1; the encoding is `amalgam_engine::namespace`)
//!
//! A database is an engine namespace: one store, one index, one budget,
//! one log, one snapshot, one replication stream. Database 0's keys are
//! stored as they are, so its GET and SET pay one compare of the key's
//! first byte (`namespace::needs_encoding`); another database's keys
//! carry two bytes of prefix. The choice was measured against one table
//! per database in `docs/databases.md`.
//!
//! [`Databases`] maps a database number (what SELECT names) to its
//! namespace. The map starts as the identity; SWAPDB swaps two entries,
//! so it takes constant time whatever the databases hold, and a client
//! selected on either database sees the other's data from its next
//! command on, as in Redis. Each command reads its database's entry once
//! (one relaxed load, at dispatch): a command that started before a
//! SWAPDB finishes on the namespace it started with.
//!
//! The front end resolves the namespace and, when the database is not
//! namespace 0 (or a key begins with the escape byte), replaces the
//! command's key arguments by their stored forms ([`encode_keys`], from
//! the command's key specifications, the same that answer COMMAND
//! GETKEYS and take MULTI's locks). Below it every family works on stored
//! keys unchanged: locks, WATCH stamps, blocking registries, the log and
//! the replication stream all see one key per (database, name). What a
//! family gives back as a key name (KEYS, SCAN, RANDOMKEY, BLPOP's and
//! LMPOP's replies) goes through [`push_key`], which strips the prefix.

use crate::table::{keys_of, Spec};
use crate::{int_arg, Arg, Ctx};
use amalgam_engine::namespace::{self, NAMESPACES};
use amalgam_protocol::resp::{err, push_bulk, push_error, push_int, push_simple};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;

/// Redis's `databases` default.
pub const DATABASES_DEFAULT: usize = 16;
/// The most databases a server may have: one per engine namespace.
pub const DATABASES_MAX: usize = NAMESPACES;

/// Redis's error for SWAPDB's first index (`swapdbCommand`).
const ERR_FIRST_INDEX: &str = "ERR invalid first DB index";
/// … and for its second.
const ERR_SECOND_INDEX: &str = "ERR invalid second DB index";
/// Redis's `shared.sameobjecterr`.
pub(crate) const SAME_OBJECT: &str = "ERR source and destination objects are the same";

/// The databases: how many, and which namespace each one is now.
#[derive(Debug)]
pub struct Databases {
    count: usize,
    /// Database number → namespace.
    map: [AtomicU8; NAMESPACES],
    /// SWAPDBs one at a time (readers take no lock).
    swapping: Mutex<()>,
    /// SWAPDBs so far: a WATCH open across one aborts its EXEC.
    generation: AtomicU64,
}

impl Databases {
    /// `count` databases (1..=[`DATABASES_MAX`]), each its own namespace.
    ///
    /// # Panics
    /// If `count` is out of that range (the configuration checks it).
    pub fn new(count: usize) -> Databases {
        assert!((1..=DATABASES_MAX).contains(&count), "databases: 1..={DATABASES_MAX}");
        Databases {
            count,
            map: std::array::from_fn(|i| AtomicU8::new(i as u8)),
            swapping: Mutex::new(()),
            generation: AtomicU64::new(0),
        }
    }

    /// How many databases there are (`databases`).
    pub fn count(&self) -> usize {
        self.count
    }

    /// The namespace database `db` is now; `db` must be below [`Self::count`].
    #[inline]
    pub fn namespace(&self, db: usize) -> u8 {
        self.map[db].load(Ordering::Relaxed)
    }

    /// The database whose namespace is `ns` now, if any.
    pub fn database_of(&self, ns: u8) -> Option<usize> {
        (0..self.count).find(|&db| self.namespace(db) == ns)
    }

    /// The database number an argument names, if it is one (Redis's
    /// `getIntFromObjectOrReply` then the range check of `selectDb`).
    pub fn parse(&self, arg: &[u8]) -> Result<usize, &'static str> {
        match int_arg(arg) {
            None => Err(err::NOT_INTEGER),
            Some(n) if i32::try_from(n).is_err() => Err(err::INT_RANGE),
            Some(n) if n < 0 || n as usize >= self.count => Err(err::DB_INDEX),
            Some(n) => Ok(n as usize),
        }
    }

    /// Swaps databases `a` and `b` (SWAPDB): constant time.
    pub fn swap(&self, a: usize, b: usize) {
        let _one = self.swapping.lock().unwrap_or_else(|e| e.into_inner());
        let (na, nb) = (self.namespace(a), self.namespace(b));
        self.map[a].store(nb, Ordering::Relaxed);
        self.map[b].store(na, Ordering::Relaxed);
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// How many SWAPDBs have run (WATCH records it; EXEC compares).
    #[inline]
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }
}

/// The command's arguments with its keys in their stored forms for
/// namespace `ns`, or None when every key is stored as written (namespace
/// 0 and no key beginning with the escape byte: the common case, one
/// compare per key).
pub fn encode_keys<'a>(spec: &'static Spec, args: &[Arg<'a>], ns: u8) -> Option<Vec<Arg<'a>>> {
    let positions = keys_of(spec, args);
    if !positions.iter().any(|&(i, _)| namespace::needs_encoding(ns, &args[i])) {
        return None;
    }
    let mut v = args.to_vec();
    for (i, _) in positions {
        v[i] = Arg::Owned(namespace::encode(ns, &args[i]));
    }
    Some(v)
}

/// The name a client gave a key (its stored form without the database).
pub fn user_key(stored: &[u8]) -> &[u8] {
    namespace::split(stored).1
}

/// Appends a stored key's name (without its namespace prefix).
#[inline]
pub fn push_key(out: &mut Vec<u8>, stored: &[u8]) {
    push_bulk(out, namespace::split(stored).1);
}

/// MOVE key db: the key into another database if it is not there
/// (Redis's `moveCommand`): 1 if moved, 0 if the source is missing or the
/// target holds the name. Atomic: the engine's rename with `nx`.
pub fn move_key(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let dbs = ctx.ks.databases;
    let db = match dbs.parse(&args[2]) {
        Ok(db) => db,
        Err(e) => return push_error(out, e.as_bytes()),
    };
    let (ns, name) = namespace::split(&args[1]);
    let target = dbs.namespace(db);
    if target == ns {
        return push_error(out, SAME_OBJECT.as_bytes());
    }
    let dst = namespace::encode(target, name);
    if amalgam_engine::check_key(&dst).is_err() {
        return push_error(out, crate::strings::KEY_INVALID.as_bytes());
    }
    match ctx.ks.store.rename(&args[1], &dst, true) {
        Ok(true) => {
            ctx.ks.host.signal(&dst);
            ctx.notify(crate::notify::GENERIC, "move_from", &args[1]);
            ctx.notify(crate::notify::GENERIC, "move_to", &dst);
            push_int(out, 1)
        }
        Ok(false) | Err(amalgam_engine::Error::NotFound) | Err(amalgam_engine::Error::BadKey) => push_int(out, 0),
        Err(e) => crate::strings::engine_error(e, out),
    }
}

/// SWAPDB index1 index2 (Redis's `swapdbCommand`): constant time.
///
/// Differences from Redis (issue 35's note): a client blocked on a key of
/// either database stays blocked on the namespace it blocked on (Redis
/// keeps it on its database number and serves it from the swapped data);
/// and every WATCH open across a SWAPDB aborts its EXEC (Redis aborts only
/// the watchers of the two databases): [`Databases::generation`].
pub fn swapdb(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let dbs = ctx.ks.databases;
    let index = |a: &[u8], e: &'static str| match int_arg(a) {
        Some(n) if i32::try_from(n).is_ok() => {
            if n < 0 || n as usize >= dbs.count() {
                Err(err::DB_INDEX)
            } else {
                Ok(n as usize)
            }
        }
        _ => Err(e),
    };
    let (a, b) = match (index(&args[1], ERR_FIRST_INDEX), index(&args[2], ERR_SECOND_INDEX)) {
        (Err(e), _) | (_, Err(e)) => return push_error(out, e.as_bytes()),
        (Ok(a), Ok(b)) => (a, b),
    };
    if a != b {
        dbs.swap(a, b);
    }
    push_simple(out, "OK");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swap_is_its_own_inverse_and_parse_checks_the_range() {
        let d = Databases::new(16);
        assert_eq!((d.namespace(3), d.namespace(9)), (3, 9));
        d.swap(3, 9);
        assert_eq!((d.namespace(3), d.namespace(9), d.database_of(9)), (9, 3, Some(3)));
        d.swap(9, 3);
        assert_eq!((d.namespace(3), d.namespace(9)), (3, 9));
        assert_eq!(d.parse(b"15"), Ok(15));
        assert_eq!(d.parse(b"16"), Err(err::DB_INDEX));
        assert_eq!(d.parse(b"-1"), Err(err::DB_INDEX));
        assert_eq!(d.parse(b"x"), Err(err::NOT_INTEGER));
        assert_eq!(d.parse(b"99999999999"), Err(err::INT_RANGE));
    }
}
