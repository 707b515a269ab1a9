//! The command table: every command served, with Redis 7.0's arity, flags,
//! key positions and docs (what COMMAND, COMMAND COUNT and COMMAND DOCS
//! report, and what dispatch checks the arity against).

/// The commands served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmd {
    Get,
    Set,
    Setnx,
    Setex,
    Psetex,
    Getset,
    Getdel,
    Getex,
    Mget,
    Mset,
    Msetnx,
    Incr,
    Decr,
    Incrby,
    Decrby,
    Incrbyfloat,
    Append,
    Strlen,
    Getrange,
    Setrange,
    Del,
    Unlink,
    Exists,
    Expire,
    Pexpire,
    Expireat,
    Pexpireat,
    Ttl,
    Pttl,
    Expiretime,
    Pexpiretime,
    Persist,
    Type,
    Scan,
    Keys,
    Dbsize,
    Flushdb,
    Flushall,
    Ping,
    Echo,
    Quit,
    Select,
    Info,
    Config,
    Command,
    Client,
    Hello,
    Auth,
    Save,
    Bgsave,
    Lastsave,
    Hset,
    Hsetnx,
    Hget,
    Hmget,
    Hmset,
    Hdel,
    Hlen,
    Hstrlen,
    Hexists,
    Hkeys,
    Hvals,
    Hgetall,
    Hincrby,
    Hincrbyfloat,
    Hrandfield,
    Hscan,
    Lpush,
    Rpush,
    Lpushx,
    Rpushx,
    Lpop,
    Rpop,
    Llen,
    Lrange,
    Lindex,
    Lset,
    Linsert,
    Lrem,
    Ltrim,
    Lpos,
    Lmove,
    Rpoplpush,
    Lmpop,
    Blpop,
    Brpop,
    Blmove,
    Brpoplpush,
    Blmpop,
}

/// One command's description.
#[derive(Debug)]
pub struct Spec {
    pub cmd: Cmd,
    /// Lower case, as Redis reports it.
    pub name: &'static str,
    /// Redis's convention: n > 0 exactly n arguments (name included),
    /// n < 0 at least -n.
    pub arity: i32,
    pub flags: &'static [&'static str],
    pub first_key: i64,
    pub last_key: i64,
    pub key_step: i64,
    /// COMMAND DOCS `group`.
    pub group: &'static str,
    /// The Redis version that introduced it.
    pub since: &'static str,
    pub summary: &'static str,
    /// Container commands: (subcommand, arity) pairs.
    pub subcommands: &'static [(&'static str, i32)],
}

const R: &[&str] = &["readonly", "fast"];
const W: &[&str] = &["write", "denyoom"];
const WF: &[&str] = &["write", "denyoom", "fast"];
const WX: &[&str] = &["write", "fast"];
const RO: &[&str] = &["readonly"];
const BLOCKING: &[&str] = &["write", "noscript", "blocking"];
const BLOCKING_MOVE: &[&str] = &["write", "denyoom", "noscript", "blocking"];
const CONN: &[&str] = &["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"];

macro_rules! spec {
    ($cmd:ident, $name:literal, $arity:expr, $flags:expr, ($f:expr, $l:expr, $s:expr), $group:literal, $since:literal, $summary:literal) => {
        Spec {
            cmd: Cmd::$cmd,
            name: $name,
            arity: $arity,
            flags: $flags,
            first_key: $f,
            last_key: $l,
            key_step: $s,
            group: $group,
            since: $since,
            summary: $summary,
            subcommands: &[],
        }
    };
}

/// Every command, the most frequent first (lookup scans in order).
pub static COMMANDS: [Spec; 89] = [
    spec!(Get, "get", 2, R, (1, 1, 1), "string", "1.0.0", "Get the value of a key"),
    spec!(Set, "set", -3, W, (1, 1, 1), "string", "1.0.0", "Set the string value of a key"),
    spec!(Mget, "mget", -2, R, (1, -1, 1), "string", "1.0.0", "Get the values of all the given keys"),
    spec!(Mset, "mset", -3, W, (1, -1, 2), "string", "1.0.1", "Set multiple keys to multiple values"),
    spec!(Incr, "incr", 2, WF, (1, 1, 1), "string", "1.0.0", "Increment the integer value of a key by one"),
    spec!(Del, "del", -2, &["write"], (1, -1, 1), "generic", "1.0.0", "Delete a key"),
    spec!(Exists, "exists", -2, R, (1, -1, 1), "generic", "1.0.0", "Determine if a key exists"),
    spec!(Expire, "expire", -3, WX, (1, 1, 1), "generic", "1.0.0", "Set a key's time to live in seconds"),
    spec!(Ttl, "ttl", 2, R, (1, 1, 1), "generic", "1.0.0", "Get the time to live for a key in seconds"),
    spec!(Ping, "ping", -1, &["fast"], (0, 0, 0), "connection", "1.0.0", "Ping the server"),
    spec!(
        Setnx,
        "setnx",
        3,
        WF,
        (1, 1, 1),
        "string",
        "1.0.0",
        "Set the value of a key, only if the key does not exist"
    ),
    spec!(Setex, "setex", 4, W, (1, 1, 1), "string", "2.0.0", "Set the value and expiration of a key"),
    spec!(
        Psetex,
        "psetex",
        4,
        W,
        (1, 1, 1),
        "string",
        "2.6.0",
        "Set the value and expiration in milliseconds of a key"
    ),
    spec!(
        Getset,
        "getset",
        3,
        WF,
        (1, 1, 1),
        "string",
        "1.0.0",
        "Set the string value of a key and return its old value"
    ),
    spec!(Getdel, "getdel", 2, WX, (1, 1, 1), "string", "6.2.0", "Get the value of a key and delete the key"),
    spec!(
        Getex,
        "getex",
        -2,
        WX,
        (1, 1, 1),
        "string",
        "6.2.0",
        "Get the value of a key and optionally set its expiration"
    ),
    spec!(
        Msetnx,
        "msetnx",
        -3,
        W,
        (1, -1, 2),
        "string",
        "1.0.1",
        "Set multiple keys to multiple values, only if none of the keys exist"
    ),
    spec!(Decr, "decr", 2, WF, (1, 1, 1), "string", "1.0.0", "Decrement the integer value of a key by one"),
    spec!(
        Incrby,
        "incrby",
        3,
        WF,
        (1, 1, 1),
        "string",
        "1.0.0",
        "Increment the integer value of a key by the given amount"
    ),
    spec!(
        Decrby,
        "decrby",
        3,
        WF,
        (1, 1, 1),
        "string",
        "1.0.0",
        "Decrement the integer value of a key by the given number"
    ),
    spec!(
        Incrbyfloat,
        "incrbyfloat",
        3,
        WF,
        (1, 1, 1),
        "string",
        "2.6.0",
        "Increment the float value of a key by the given amount"
    ),
    spec!(Append, "append", 3, W, (1, 1, 1), "string", "2.0.0", "Append a value to a key"),
    spec!(Strlen, "strlen", 2, R, (1, 1, 1), "string", "2.2.0", "Get the length of the value stored in a key"),
    spec!(
        Getrange,
        "getrange",
        4,
        &["readonly"],
        (1, 1, 1),
        "string",
        "2.4.0",
        "Get a substring of the string stored at a key"
    ),
    spec!(
        Setrange,
        "setrange",
        4,
        W,
        (1, 1, 1),
        "string",
        "2.2.0",
        "Overwrite part of a string at key starting at the specified offset"
    ),
    spec!(
        Unlink,
        "unlink",
        -2,
        WX,
        (1, -1, 1),
        "generic",
        "4.0.0",
        "Delete a key asynchronously in another thread. Otherwise it is just as DEL, but non blocking."
    ),
    spec!(Pexpire, "pexpire", -3, WX, (1, 1, 1), "generic", "2.6.0", "Set a key's time to live in milliseconds"),
    spec!(
        Expireat,
        "expireat",
        -3,
        WX,
        (1, 1, 1),
        "generic",
        "1.2.0",
        "Set the expiration for a key as a UNIX timestamp"
    ),
    spec!(
        Pexpireat,
        "pexpireat",
        -3,
        WX,
        (1, 1, 1),
        "generic",
        "2.6.0",
        "Set the expiration for a key as a UNIX timestamp specified in milliseconds"
    ),
    spec!(Pttl, "pttl", 2, R, (1, 1, 1), "generic", "2.6.0", "Get the time to live for a key in milliseconds"),
    spec!(Expiretime, "expiretime", 2, R, (1, 1, 1), "generic", "7.0.0", "Get the expiration Unix timestamp for a key"),
    spec!(
        Pexpiretime,
        "pexpiretime",
        2,
        R,
        (1, 1, 1),
        "generic",
        "7.0.0",
        "Get the expiration Unix timestamp for a key in milliseconds"
    ),
    spec!(Persist, "persist", 2, WX, (1, 1, 1), "generic", "2.2.0", "Remove the expiration from a key"),
    spec!(Type, "type", 2, R, (1, 1, 1), "generic", "1.0.0", "Determine the type stored at key"),
    spec!(Scan, "scan", -2, &["readonly"], (0, 0, 0), "generic", "2.8.0", "Incrementally iterate the keys space"),
    spec!(Keys, "keys", 2, &["readonly"], (0, 0, 0), "generic", "1.0.0", "Find all keys matching the given pattern"),
    spec!(Dbsize, "dbsize", 1, R, (0, 0, 0), "server", "1.0.0", "Return the number of keys in the selected database"),
    spec!(
        Flushdb,
        "flushdb",
        -1,
        &["write"],
        (0, 0, 0),
        "server",
        "1.0.0",
        "Remove all keys from the current database"
    ),
    spec!(Flushall, "flushall", -1, &["write"], (0, 0, 0), "server", "1.0.0", "Remove all keys from all databases"),
    spec!(
        Save,
        "save",
        1,
        &["admin", "noscript", "no_async_loading", "no_multi"],
        (0, 0, 0),
        "server",
        "1.0.0",
        "Synchronously save the dataset to disk"
    ),
    spec!(
        Bgsave,
        "bgsave",
        -1,
        &["admin", "noscript", "no_async_loading", "no_multi"],
        (0, 0, 0),
        "server",
        "1.0.0",
        "Asynchronously save the dataset to disk"
    ),
    spec!(
        Lastsave,
        "lastsave",
        1,
        &["loading", "stale", "fast"],
        (0, 0, 0),
        "server",
        "1.0.0",
        "Get the UNIX time stamp of the last successful save to disk"
    ),
    spec!(Echo, "echo", 2, &["fast"], (0, 0, 0), "connection", "1.0.0", "Echo the given string"),
    spec!(Quit, "quit", -1, CONN, (0, 0, 0), "connection", "1.0.0", "Close the connection"),
    spec!(
        Select,
        "select",
        2,
        &["loading", "stale", "fast"],
        (0, 0, 0),
        "connection",
        "1.0.0",
        "Change the selected database for the current connection"
    ),
    spec!(
        Info,
        "info",
        -1,
        &["loading", "stale"],
        (0, 0, 0),
        "server",
        "1.0.0",
        "Get information and statistics about the server"
    ),
    Spec {
        subcommands: &[("get", -3), ("set", -4), ("resetstat", 2), ("help", 2)],
        ..spec!(
            Config,
            "config",
            -2,
            &[],
            (0, 0, 0),
            "server",
            "2.0.0",
            "A container for server configuration commands"
        )
    },
    Spec {
        subcommands: &[("count", 2), ("docs", -2), ("info", -2), ("list", -2), ("help", 2)],
        ..spec!(
            Command,
            "command",
            -1,
            &["loading", "stale"],
            (0, 0, 0),
            "server",
            "2.8.13",
            "Get array of Redis command details"
        )
    },
    Spec {
        subcommands: &[("id", 2), ("getname", 2), ("setname", 3), ("setinfo", 4), ("help", 2)],
        ..spec!(
            Client,
            "client",
            -2,
            &[],
            (0, 0, 0),
            "connection",
            "2.4.0",
            "A container for client connection commands"
        )
    },
    spec!(Hello, "hello", -1, CONN, (0, 0, 0), "connection", "6.0.0", "Handshake with Redis"),
    spec!(Auth, "auth", -2, CONN, (0, 0, 0), "connection", "1.0.0", "Authenticate to the server"),
    spec!(Hset, "hset", -4, WF, (1, 1, 1), "hash", "2.0.0", "Set the string value of a hash field"),
    spec!(
        Hsetnx,
        "hsetnx",
        4,
        WF,
        (1, 1, 1),
        "hash",
        "2.0.0",
        "Set the value of a hash field, only if the field does not exist"
    ),
    spec!(Hget, "hget", 3, R, (1, 1, 1), "hash", "2.0.0", "Get the value of a hash field"),
    spec!(Hmget, "hmget", -3, R, (1, 1, 1), "hash", "2.0.0", "Get the values of all the given hash fields"),
    spec!(Hmset, "hmset", -4, WF, (1, 1, 1), "hash", "2.0.0", "Set multiple hash fields to multiple values"),
    spec!(Hdel, "hdel", -3, WX, (1, 1, 1), "hash", "2.0.0", "Delete one or more hash fields"),
    spec!(Hlen, "hlen", 2, R, (1, 1, 1), "hash", "2.0.0", "Get the number of fields in a hash"),
    spec!(Hstrlen, "hstrlen", 3, R, (1, 1, 1), "hash", "3.2.0", "Get the length of the value of a hash field"),
    spec!(Hexists, "hexists", 3, R, (1, 1, 1), "hash", "2.0.0", "Determine if a hash field exists"),
    spec!(Hkeys, "hkeys", 2, RO, (1, 1, 1), "hash", "2.0.0", "Get all the fields in a hash"),
    spec!(Hvals, "hvals", 2, RO, (1, 1, 1), "hash", "2.0.0", "Get all the values in a hash"),
    spec!(Hgetall, "hgetall", 2, RO, (1, 1, 1), "hash", "2.0.0", "Get all the fields and values in a hash"),
    spec!(
        Hincrby,
        "hincrby",
        4,
        WF,
        (1, 1, 1),
        "hash",
        "2.0.0",
        "Increment the integer value of a hash field by the given number"
    ),
    spec!(
        Hincrbyfloat,
        "hincrbyfloat",
        4,
        WF,
        (1, 1, 1),
        "hash",
        "2.6.0",
        "Increment the float value of a hash field by the given amount"
    ),
    spec!(
        Hrandfield,
        "hrandfield",
        -2,
        RO,
        (1, 1, 1),
        "hash",
        "6.2.0",
        "Get one or multiple random fields from a hash"
    ),
    spec!(
        Hscan,
        "hscan",
        -3,
        RO,
        (1, 1, 1),
        "hash",
        "2.8.0",
        "Incrementally iterate hash fields and associated values"
    ),
    spec!(Lpush, "lpush", -3, WF, (1, 1, 1), "list", "1.0.0", "Prepend one or multiple elements to a list"),
    spec!(Rpush, "rpush", -3, WF, (1, 1, 1), "list", "1.0.0", "Append one or multiple elements to a list"),
    spec!(
        Lpushx,
        "lpushx",
        -3,
        WF,
        (1, 1, 1),
        "list",
        "2.2.0",
        "Prepend an element to a list, only if the list exists"
    ),
    spec!(Rpushx, "rpushx", -3, WF, (1, 1, 1), "list", "2.2.0", "Append an element to a list, only if the list exists"),
    spec!(Lpop, "lpop", -2, WX, (1, 1, 1), "list", "1.0.0", "Remove and get the first elements in a list"),
    spec!(Rpop, "rpop", -2, WX, (1, 1, 1), "list", "1.0.0", "Remove and get the last elements in a list"),
    spec!(Llen, "llen", 2, R, (1, 1, 1), "list", "1.0.0", "Get the length of a list"),
    spec!(Lrange, "lrange", 4, RO, (1, 1, 1), "list", "1.0.0", "Get a range of elements from a list"),
    spec!(Lindex, "lindex", 3, RO, (1, 1, 1), "list", "1.0.0", "Get an element from a list by its index"),
    spec!(Lset, "lset", 4, W, (1, 1, 1), "list", "1.0.0", "Set the value of an element in a list by its index"),
    spec!(
        Linsert,
        "linsert",
        5,
        W,
        (1, 1, 1),
        "list",
        "2.2.0",
        "Insert an element before or after another element in a list"
    ),
    spec!(Lrem, "lrem", 4, &["write"], (1, 1, 1), "list", "1.0.0", "Remove elements from a list"),
    spec!(Ltrim, "ltrim", 4, &["write"], (1, 1, 1), "list", "1.0.0", "Trim a list to the specified range"),
    spec!(Lpos, "lpos", -3, RO, (1, 1, 1), "list", "6.0.6", "Return the index of matching elements on a list"),
    spec!(
        Lmove,
        "lmove",
        5,
        W,
        (1, 2, 1),
        "list",
        "6.2.0",
        "Pop an element from a list, push it to another list and return it"
    ),
    spec!(
        Rpoplpush,
        "rpoplpush",
        3,
        W,
        (1, 2, 1),
        "list",
        "1.2.0",
        "Remove the last element in a list, prepend it to another list and return it"
    ),
    spec!(Lmpop, "lmpop", -4, &["write", "movablekeys"], (0, 0, 0), "list", "7.0.0", "Pop elements from a list"),
    spec!(
        Blpop,
        "blpop",
        -3,
        BLOCKING,
        (1, -2, 1),
        "list",
        "2.0.0",
        "Remove and get the first element in a list, or block until one is available"
    ),
    spec!(
        Brpop,
        "brpop",
        -3,
        BLOCKING,
        (1, -2, 1),
        "list",
        "2.0.0",
        "Remove and get the last element in a list, or block until one is available"
    ),
    spec!(
        Blmove,
        "blmove",
        6,
        BLOCKING_MOVE,
        (1, 2, 1),
        "list",
        "6.2.0",
        "Pop an element from a list, push it to another list and return it; or block until one is available"
    ),
    spec!(
        Brpoplpush,
        "brpoplpush",
        4,
        BLOCKING_MOVE,
        (1, 2, 1),
        "list",
        "2.2.0",
        "Pop an element from a list, push it to another list and return it; or block until one is available"
    ),
    spec!(
        Blmpop,
        "blmpop",
        -5,
        &["write", "blocking", "movablekeys"],
        (0, 0, 0),
        "list",
        "7.0.0",
        "Pop elements from a list, or block until one is available"
    ),
];

/// Longest command name in the table (a longer name is unknown without
/// comparing).
const NAME_BYTES_MAX: usize = 12;

/// The command named `name`, in any case.
pub fn lookup(name: &[u8]) -> Option<&'static Spec> {
    if name.len() > NAME_BYTES_MAX {
        return None;
    }
    COMMANDS.iter().find(|s| s.name.len() == name.len() && name.eq_ignore_ascii_case(s.name.as_bytes()))
}

/// A container command's subcommand and its arity.
pub fn subcommand(spec: &Spec, name: &[u8]) -> Option<(&'static str, i32)> {
    spec.subcommands.iter().copied().find(|(n, _)| name.eq_ignore_ascii_case(n.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_lower_case_and_bounded() {
        for (i, s) in COMMANDS.iter().enumerate() {
            assert_eq!(s.name, s.name.to_ascii_lowercase());
            assert!(s.name.len() <= NAME_BYTES_MAX, "{}", s.name);
            assert!(COMMANDS[..i].iter().all(|t| t.name != s.name && t.cmd != s.cmd), "{}", s.name);
            assert!(std::ptr::eq(lookup(s.name.to_ascii_uppercase().as_bytes()).unwrap(), s));
        }
        assert!(lookup(b"nosuch").is_none());
    }
}
