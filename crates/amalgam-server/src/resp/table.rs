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
    Monitor,
    Setbit,
    Getbit,
    Bitcount,
    Bitpos,
    Bitop,
    Bitfield,
    BitfieldRo,
    Time,
    Touch,
    Object,
    Lcs,
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
pub static COMMANDS: [Spec; 63] = [
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
        subcommands: &[
            ("id", 2),
            ("getname", 2),
            ("setname", 3),
            ("setinfo", 4),
            ("info", 2),
            ("list", -2),
            ("kill", -3),
            ("reply", 3),
            ("no-evict", 3),
            ("no-touch", 3),
            ("help", 2),
        ],
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
    spec!(
        Monitor,
        "monitor",
        1,
        &["admin", "noscript", "loading", "stale"],
        (0, 0, 0),
        "server",
        "1.0.0",
        "Listen for all requests received by the server in real time"
    ),
    spec!(
        Setbit,
        "setbit",
        4,
        W,
        (1, 1, 1),
        "bitmap",
        "2.2.0",
        "Sets or clears the bit at offset in the string value stored at key"
    ),
    spec!(
        Getbit,
        "getbit",
        3,
        R,
        (1, 1, 1),
        "bitmap",
        "2.2.0",
        "Returns the bit value at offset in the string value stored at key"
    ),
    spec!(Bitcount, "bitcount", -2, &["readonly"], (1, 1, 1), "bitmap", "2.6.0", "Count set bits in a string"),
    spec!(Bitpos, "bitpos", -3, &["readonly"], (1, 1, 1), "bitmap", "2.8.7", "Find first bit set or clear in a string"),
    spec!(Bitop, "bitop", -4, W, (2, -1, 1), "bitmap", "2.6.0", "Perform bitwise operations between strings"),
    spec!(
        Bitfield,
        "bitfield",
        -2,
        W,
        (1, 1, 1),
        "bitmap",
        "3.2.0",
        "Perform arbitrary bitfield integer operations on strings"
    ),
    spec!(
        BitfieldRo,
        "bitfield_ro",
        -2,
        R,
        (1, 1, 1),
        "bitmap",
        "6.0.0",
        "Perform arbitrary bitfield integer operations on strings. Read-only variant of BITFIELD"
    ),
    spec!(
        Time,
        "time",
        1,
        &["loading", "stale", "fast"],
        (0, 0, 0),
        "server",
        "2.6.0",
        "Return the current server time"
    ),
    spec!(
        Touch,
        "touch",
        -2,
        R,
        (1, -1, 1),
        "generic",
        "3.2.1",
        "Alters the last access time of a key(s). Returns the number of existing keys specified."
    ),
    Spec {
        subcommands: &[("encoding", 3), ("freq", 3), ("idletime", 3), ("refcount", 3), ("help", 2)],
        ..spec!(
            Object,
            "object",
            -2,
            &[],
            (0, 0, 0),
            "generic",
            "2.2.3",
            "A container for object introspection commands"
        )
    },
    spec!(Lcs, "lcs", -3, &["readonly"], (1, 2, 1), "string", "7.0.0", "Find longest common substring"),
    spec!(Hello, "hello", -1, CONN, (0, 0, 0), "connection", "6.0.0", "Handshake with Redis"),
    spec!(Auth, "auth", -2, CONN, (0, 0, 0), "connection", "1.0.0", "Authenticate to the server"),
];

/// Longest command name in the table (a longer name is unknown without
/// comparing).
const NAME_BYTES_MAX: usize = 11;

/// The command named `name`, in any case.
pub fn lookup(name: &[u8]) -> Option<&'static Spec> {
    if name.len() > NAME_BYTES_MAX {
        return None;
    }
    COMMANDS.iter().find(|s| s.name.len() == name.len() && name.eq_ignore_ascii_case(s.name.as_bytes()))
}

/// `spec`'s position in [`COMMANDS`].
pub fn index_of(spec: &Spec) -> usize {
    (spec as *const Spec as usize - COMMANDS.as_ptr() as usize) / std::mem::size_of::<Spec>()
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
