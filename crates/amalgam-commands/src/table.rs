//! The command table: every command served, with Redis 7.0's arity,
//! flags, key positions, ACL categories, command tips, key specifications
//! and docs — what dispatch checks the arity against, what COMMAND (COUNT,
//! LIST, INFO, DOCS, GETKEYS, GETKEYSANDFLAGS) reports, what CLIENT LIST's
//! `cmd=` and MONITOR read. A container (CONFIG, CLIENT, COMMAND, OBJECT)
//! lists its subcommands as rows of their own, named `container|sub`, with
//! their own arity, flags and keys, as Redis's `commands/*.json` do.
//!
//! The rows were taken from Redis 7.0.15's `COMMAND INFO` and `COMMAND
//! DOCS` (CLIENT SETINFO and NO-TOUCH from Redis 7.2). A new row needs:
//! the `spec!` core (name, arity, flags, legacy first/last/step, group,
//! since, summary) and, as Redis declares them, `acl` (the categories the
//! flags do not imply: [`acl_categories`] adds @read @write @fast @slow
//! @admin @dangerous …), `tips` and `keys`.

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
    Substr,
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
    Reset,
    Select,
    Info,
    Config,
    Slowlog,
    Latency,
    Debug,
    Module,
    Readonly,
    Readwrite,
    Cluster,
    Asking,
    Command,
    Client,
    Hello,
    Auth,
    Save,
    Bgsave,
    Lastsave,
    Shutdown,
    Monitor,
    Setbit,
    Getbit,
    Bitcount,
    Bitpos,
    Bitop,
    Bitfield,
    BitfieldRo,
    Pfadd,
    Pfcount,
    Pfmerge,
    Pfdebug,
    Pfselftest,
    Xadd,
    Xrange,
    Xrevrange,
    Xlen,
    Xdel,
    Xtrim,
    Xsetid,
    Xread,
    Xreadgroup,
    Xack,
    Xpending,
    Xclaim,
    Xautoclaim,
    Xgroup,
    Xinfo,
    Time,
    Touch,
    Object,
    Lcs,
    Randomkey,
    Copy,
    Move,
    Swapdb,
    Dump,
    Restore,
    RestoreAsking,
    Migrate,
    Memory,
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
    Sadd,
    Srem,
    Smembers,
    Sismember,
    Smismember,
    Scard,
    Spop,
    Srandmember,
    Smove,
    Sinter,
    Sintercard,
    Sunion,
    Sdiff,
    Sinterstore,
    Sunionstore,
    Sdiffstore,
    Sscan,
    Zadd,
    Zincrby,
    Zrem,
    Zcard,
    Zscore,
    Zmscore,
    Zrank,
    Zrevrank,
    Zcount,
    Zlexcount,
    Zrange,
    Zrangebyscore,
    Zrevrangebyscore,
    Zrangebylex,
    Zrevrangebylex,
    Zrevrange,
    Zrangestore,
    Zpopmin,
    Zpopmax,
    Zmpop,
    Zrandmember,
    Zremrangebyrank,
    Zremrangebyscore,
    Zremrangebylex,
    Zunion,
    Zinter,
    Zdiff,
    Zunionstore,
    Zinterstore,
    Zdiffstore,
    Zintercard,
    Zscan,
    Sort,
    SortRo,
    Bzpopmin,
    Bzpopmax,
    Bzmpop,
    Geoadd,
    Geodist,
    Geohash,
    Geopos,
    Georadius,
    GeoradiusRo,
    Georadiusbymember,
    GeoradiusbymemberRo,
    Geosearch,
    Geosearchstore,
    Multi,
    Exec,
    Discard,
    Watch,
    Unwatch,
    Rename,
    Renamenx,
    Acl,
    Subscribe,
    Unsubscribe,
    Psubscribe,
    Punsubscribe,
    Publish,
    Pubsub,
    Ssubscribe,
    Sunsubscribe,
    Spublish,
    Eval,
    Evalsha,
    EvalRo,
    EvalshaRo,
    Script,
    Fcall,
    FcallRo,
    Function,
    Replicaof,
    Failover,
    Slaveof,
    Role,
    Replconf,
    Psync,
    Sync,
    Wait,
}

/// One command's description (Copy: the rows are put together at
/// compile time, `rows.rs`).
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    pub cmd: Cmd,
    /// Lower case, as Redis reports it; a subcommand is `container|sub`.
    pub name: &'static str,
    /// Redis's convention: n > 0 exactly n arguments (name included),
    /// n < 0 at least -n.
    pub arity: i32,
    pub flags: &'static [&'static str],
    /// Redis's legacy key positions (COMMAND INFO's fields 4-6).
    pub first_key: i64,
    pub last_key: i64,
    pub key_step: i64,
    /// ACL categories beyond those the flags imply (Redis's
    /// `acl_categories`), e.g. `@string`, `@keyspace`, `@dangerous`.
    pub acl: &'static [&'static str],
    /// Command tips (`nondeterministic_output`, `request_policy:…`).
    pub tips: &'static [&'static str],
    /// Key specifications (Redis 7's `key_specs`).
    pub keys: &'static [KeySpec],
    /// COMMAND DOCS `group`.
    pub group: &'static str,
    /// The Redis version that introduced it.
    pub since: &'static str,
    pub summary: &'static str,
    /// A container's subcommands, each a full row.
    pub subcommands: &'static [Spec],
}

/// One key specification: where the keys begin and how to find them.
#[derive(Debug)]
pub struct KeySpec {
    pub notes: &'static str,
    /// `RW`/`RO`/`OW`/`RM` and `access`, `update`, `insert`, `delete` …
    pub flags: &'static [&'static str],
    pub begin: Begin,
    pub find: Find,
}

/// Where a key specification's keys begin.
#[derive(Debug, Clone, Copy)]
pub enum Begin {
    /// At this argument (0 is the command name).
    Index(i64),
    /// After the first `keyword` found searching from `startfrom`
    /// (negative: from the end, backwards): MIGRATE's KEYS.
    Keyword(&'static str, i64),
    /// Not known from the arguments' positions (Redis's `unknown`: SORT's
    /// pattern reads and STORE); the command finds them itself.
    Unknown,
}

/// How many keys follow the beginning.
#[derive(Debug, Clone, Copy)]
pub enum Find {
    /// Up to `lastkey` (relative to the beginning; negative: from the
    /// end), every `keystep`; `limit` > 1 keeps 1/limit of what is left.
    Range { lastkey: i64, keystep: i64, limit: i64 },
    /// The key count is at `keynumidx`, the keys from `firstkey` (both
    /// relative to the beginning). No served command needs it yet
    /// (Redis's ZUNIONSTORE, EVAL … do).
    #[allow(dead_code)]
    Keynum { keynumidx: i64, firstkey: i64, keystep: i64 },
    /// With [`Begin::Unknown`].
    Unknown,
}

impl KeySpec {
    const fn notes(self, notes: &'static str) -> KeySpec {
        KeySpec { notes, ..self }
    }
}

/// The common key specification: keys from argument `index` to `lastkey`
/// past it, every `keystep`.
const fn range(flags: &'static [&'static str], index: i64, lastkey: i64, keystep: i64) -> KeySpec {
    KeySpec { notes: "", flags, begin: Begin::Index(index), find: Find::Range { lastkey, keystep, limit: 0 } }
}

/// What COMMAND DOCS says of a command beyond its row's summary, since and
/// group (Redis 7.0's fields, generated into `table/docs.rs` by
/// `scripts/command-docs.py`); an absent field is one Redis leaves out.
#[derive(Debug)]
pub struct Doc {
    /// `container|sub` for a subcommand.
    pub name: &'static str,
    pub complexity: Option<&'static str>,
    /// `deprecated`, `syscmd`.
    pub doc_flags: &'static [&'static str],
    pub deprecated_since: Option<&'static str>,
    pub replaced_by: Option<&'static str>,
    /// (version, what changed).
    pub history: &'static [(&'static str, &'static str)],
    pub arguments: &'static [DocArg],
}

/// One argument of COMMAND DOCS's `arguments` tree.
#[derive(Debug)]
pub struct DocArg {
    pub name: &'static str,
    pub kind: ArgType,
    pub key_spec_index: Option<u8>,
    pub token: Option<&'static str>,
    pub summary: Option<&'static str>,
    pub since: Option<&'static str>,
    pub deprecated_since: Option<&'static str>,
    /// [`ARG_OPTIONAL`], [`ARG_MULTIPLE`], [`ARG_MULTIPLE_TOKEN`].
    pub flags: u8,
    /// A `Oneof`'s or a `Block`'s own arguments.
    pub arguments: &'static [DocArg],
}

pub const ARG_OPTIONAL: u8 = 1;
pub const ARG_MULTIPLE: u8 = 2;
pub const ARG_MULTIPLE_TOKEN: u8 = 4;
/// The argument flags as Redis names them, in its order.
pub const ARG_FLAGS: [(u8, &str); 3] =
    [(ARG_OPTIONAL, "optional"), (ARG_MULTIPLE, "multiple"), (ARG_MULTIPLE_TOKEN, "multiple_token")];

/// An argument's `type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgType {
    Str,
    Integer,
    Double,
    Key,
    Pattern,
    UnixTime,
    PureToken,
    Oneof,
    Block,
}

impl ArgType {
    pub fn as_str(self) -> &'static str {
        match self {
            ArgType::Str => "string",
            ArgType::Integer => "integer",
            ArgType::Double => "double",
            ArgType::Key => "key",
            ArgType::Pattern => "pattern",
            ArgType::UnixTime => "unix-time",
            ArgType::PureToken => "pure-token",
            ArgType::Oneof => "oneof",
            ArgType::Block => "block",
        }
    }
}

/// A [`Doc`] with only a name and complexity (`docs.rs` adds the rest).
const fn doc(name: &'static str, complexity: Option<&'static str>) -> Doc {
    Doc { name, complexity, doc_flags: &[], deprecated_since: None, replaced_by: None, history: &[], arguments: &[] }
}

/// A [`DocArg`] with only a name and type; the methods add the rest.
const fn arg(name: &'static str, kind: ArgType) -> DocArg {
    DocArg {
        name,
        kind,
        key_spec_index: None,
        token: None,
        summary: None,
        since: None,
        deprecated_since: None,
        flags: 0,
        arguments: &[],
    }
}

// Not every builder is used by the generated table today (no 7.0
// argument has a summary), so some may be unused.
#[allow(dead_code)]
impl DocArg {
    const fn key(self, i: u8) -> DocArg {
        DocArg { key_spec_index: Some(i), ..self }
    }
    const fn token(self, t: &'static str) -> DocArg {
        DocArg { token: Some(t), ..self }
    }
    const fn summary(self, t: &'static str) -> DocArg {
        DocArg { summary: Some(t), ..self }
    }
    const fn since(self, v: &'static str) -> DocArg {
        DocArg { since: Some(v), ..self }
    }
    const fn deprecated_since(self, v: &'static str) -> DocArg {
        DocArg { deprecated_since: Some(v), ..self }
    }
    const fn optional(self) -> DocArg {
        DocArg { flags: self.flags | ARG_OPTIONAL, ..self }
    }
    const fn multiple(self) -> DocArg {
        DocArg { flags: self.flags | ARG_MULTIPLE, ..self }
    }
    const fn multiple_token(self) -> DocArg {
        DocArg { flags: self.flags | ARG_MULTIPLE_TOKEN, ..self }
    }
    const fn args(self, arguments: &'static [DocArg]) -> DocArg {
        DocArg { arguments, ..self }
    }
}

mod docs;

/// The documentation of a command or `container|sub` subcommand (its
/// lower-case name, as the row has it), if Redis 7.0 documents it.
pub fn docs_of(name: &str) -> Option<&'static Doc> {
    docs::DOCS.binary_search_by(|d| d.name.cmp(name)).ok().map(|i| &docs::DOCS[i])
}

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
            acl: &[],
            tips: &[],
            keys: &[],
            group: $group,
            since: $since,
            summary: $summary,
            subcommands: &[],
        }
    };
}

mod rows;
pub use rows::COMMANDS;
use std::sync::LazyLock;

/// Longest command name in the table (a longer name is unknown without
/// comparing): `georadiusbymember_ro`.
const NAME_BYTES_MAX: usize = 20;
/// Longest name the index holds (one u128 when folded); the few longer
/// ones (GEORADIUSBYMEMBER and its _RO form) are compared one by one.
const FOLDED_BYTES_MAX: usize = 16;

/// Rows [`lookup`] compares one by one before it hashes: GET, SET, MGET
/// and MSET, the string path, where a length check rejects most rows.
const FRONT_ROWS: usize = 4;
/// Slots of the name index: a power of two, at least twice the rows.
const NAME_SLOTS: usize = 512;
const _: () = assert!(NAME_SLOTS.is_power_of_two() && NAME_SLOTS >= 2 * COMMANDS.len());
const _: () = assert!(FOLDED_BYTES_MAX == 16 && FOLDED_BYTES_MAX <= NAME_BYTES_MAX, "a folded name is one u128");
/// An empty slot of the name index.
const NO_ROW: u16 = u16::MAX;

/// An open-addressing index of [`COMMANDS`] by folded name, built on
/// first use: a command far down the table (LPUSH is row ~130) was a
/// linear scan of ~800 instructions (callgrind), paid twice by a
/// pipelined write (the batch's classification and its run).
struct NameIndex {
    rows: [u16; NAME_SLOTS],
    folded: [u128; NAME_SLOTS],
    /// The row's name has a byte other than a lower-case letter
    /// (`bitfield_ro`): a folded match is confirmed byte by byte.
    confirm: [bool; NAME_SLOTS],
}

static NAME_INDEX: LazyLock<NameIndex> = LazyLock::new(|| {
    let mut ix = NameIndex { rows: [NO_ROW; NAME_SLOTS], folded: [0; NAME_SLOTS], confirm: [false; NAME_SLOTS] };
    for (row, s) in COMMANDS.iter().enumerate().filter(|(_, s)| s.name.len() <= FOLDED_BYTES_MAX) {
        let f = fold(s.name.as_bytes());
        let mut i = slot_of(f);
        // Bounded: the table is at most half full.
        while ix.rows[i] != NO_ROW {
            i = (i + 1) & (NAME_SLOTS - 1);
        }
        ix.rows[i] = row as u16;
        ix.folded[i] = f;
        ix.confirm[i] = !s.name.bytes().all(|b| b.is_ascii_lowercase());
    }
    ix
});

/// `name` (at most [`FOLDED_BYTES_MAX`] bytes) as one word, every byte with its 0x20 bit
/// set, zero past its end. No folded byte is zero, so the length is in
/// the word. Names equal ignoring ASCII case fold alike; the converse
/// holds when one of them is all lower-case letters (a byte ORed with
/// 0x20 equals a lower-case letter only if it is that letter in either
/// case), and is checked byte by byte for the rows that are not
/// (`NameIndex::confirm`).
#[inline]
fn fold(name: &[u8]) -> u128 {
    let mut b = [0u8; 16];
    b[..name.len()].copy_from_slice(name);
    let fill = if name.is_empty() { 0 } else { u128::MAX >> (128 - 8 * name.len()) };
    u128::from_le_bytes(b) | (fill & u128::from_le_bytes([0x20; 16]))
}

/// The first slot to probe for a folded name.
#[inline]
fn slot_of(f: u128) -> usize {
    let h = ((f as u64) ^ ((f >> 64) as u64).rotate_left(29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (h >> 40) as usize & (NAME_SLOTS - 1)
}

/// The command named `name`, in any case.
pub fn lookup(name: &[u8]) -> Option<&'static Spec> {
    // The front rows first: their names are short, so a longer name
    // fails their length test and the bounds below cost GET and SET
    // nothing.
    if let Some(s) = COMMANDS[..FRONT_ROWS]
        .iter()
        .find(|s| s.name.len() == name.len() && name.eq_ignore_ascii_case(s.name.as_bytes()))
    {
        return Some(s);
    }
    if name.len() > NAME_BYTES_MAX {
        return None;
    }
    if name.len() > FOLDED_BYTES_MAX {
        // Bounded by the table: two rows have such names.
        return COMMANDS.iter().find(|s| s.name.len() == name.len() && name.eq_ignore_ascii_case(s.name.as_bytes()));
    }
    let ix = &*NAME_INDEX;
    let f = fold(name);
    let mut i = slot_of(f);
    // Bounded: the table is at most half full, so an empty slot comes.
    for _ in 0..NAME_SLOTS {
        let row = ix.rows[i];
        if row == NO_ROW {
            return None;
        }
        if ix.folded[i] == f {
            let s = &COMMANDS[row as usize];
            return (!ix.confirm[i] || name.eq_ignore_ascii_case(s.name.as_bytes())).then_some(s);
        }
        i = (i + 1) & (NAME_SLOTS - 1);
    }
    None
}

/// A command or `container|sub` subcommand by name (COMMAND INFO, DOCS).
pub fn lookup_full(name: &[u8]) -> Option<&'static Spec> {
    match name.iter().position(|&b| b == b'|') {
        None => lookup(name),
        Some(i) => subcommand(lookup(&name[..i])?, &name[i + 1..]),
    }
}

/// `spec`'s position in [`COMMANDS`].
pub fn index_of(spec: &Spec) -> usize {
    (spec as *const Spec as usize - COMMANDS.as_ptr() as usize) / std::mem::size_of::<Spec>()
}

/// The part of a subcommand's name after `|` (the whole name otherwise).
pub fn short_name(spec: &Spec) -> &'static str {
    spec.name.rsplit('|').next().unwrap_or(spec.name)
}

/// Whether Redis flags the command `may-replicate`: not a write, but a
/// side effect that is propagated (PUBLISH's message, PFCOUNT's cached
/// count). Redis 7.0's COMMAND INFO does not show the flag; read-only
/// scripts (EVAL_RO, `no-writes`) refuse these commands as writes.
pub fn may_replicate(cmd: Cmd) -> bool {
    matches!(cmd, Cmd::Publish | Cmd::Spublish | Cmd::Pfcount)
}

/// A container command's subcommand.
pub fn subcommand(spec: &'static Spec, name: &[u8]) -> Option<&'static Spec> {
    spec.subcommands.iter().find(|s| name.eq_ignore_ascii_case(short_name(s).as_bytes()))
}

/// Redis's ACL categories, in the order it lists them.
pub const ACL_CATEGORIES: [&str; 21] = [
    "keyspace",
    "read",
    "write",
    "set",
    "sortedset",
    "list",
    "hash",
    "string",
    "bitmap",
    "hyperloglog",
    "geo",
    "stream",
    "pubsub",
    "admin",
    "fast",
    "slow",
    "blocking",
    "dangerous",
    "connection",
    "transaction",
    "scripting",
];

/// The command's ACL categories as Redis reports them: the declared ones
/// plus those its flags imply (Redis's `setImplicitACLCategories`), in
/// [`ACL_CATEGORIES`] order, each with its `@`.
pub fn acl_categories(spec: &Spec) -> Vec<&'static str> {
    let has = |f: &str| spec.flags.contains(&f);
    let implied = |c: &str| match c {
        "write" => has("write"),
        "read" => has("readonly"),
        "admin" | "dangerous" => has("admin"),
        "pubsub" => has("pubsub"),
        "fast" => has("fast"),
        "blocking" => has("blocking"),
        "slow" => !has("fast") && !spec.acl.contains(&"@fast"),
        _ => false,
    };
    ACL_CATEGORIES
        .iter()
        .filter(|c| implied(c) || spec.acl.iter().any(|a| a.strip_prefix('@') == Some(**c)))
        .map(|c| spec.acl.iter().copied().find(|a| a.strip_prefix('@') == Some(*c)).unwrap_or(acl_name(c)))
        .collect()
}

/// `@category` for a category name of [`ACL_CATEGORIES`].
fn acl_name(c: &str) -> &'static str {
    const NAMES: [&str; 21] = [
        "@keyspace",
        "@read",
        "@write",
        "@set",
        "@sortedset",
        "@list",
        "@hash",
        "@string",
        "@bitmap",
        "@hyperloglog",
        "@geo",
        "@stream",
        "@pubsub",
        "@admin",
        "@fast",
        "@slow",
        "@blocking",
        "@dangerous",
        "@connection",
        "@transaction",
        "@scripting",
    ];
    ACL_CATEGORIES.iter().position(|n| *n == c).map_or("", |i| NAMES[i])
}

/// The keys of `args` (a whole command, name first) by `spec`'s key
/// A key specification's flags for these arguments (`args[0]` the
/// command's name): one flagged `variable_flags` resolved as Redis's key
/// finders resolve it. SET (`setGetKeys`: an argument past the value
/// equal to GET) reads and writes, else only overwrites (`OW update`);
/// BITFIELD (`bitfieldGetKeys`) only reads when every operation is a
/// whole GET or OVERFLOW, else reads and writes. COMMAND GETKEYSANDFLAGS
/// answers these, and ACL's `%R~`/`%W~` checks them.
pub fn key_flags<A: AsRef<[u8]>>(cmd: Cmd, args: &[A], flags: &'static [&'static str]) -> &'static [&'static str] {
    const RW: &[&str] = &["RW", "access", "update"];
    if !flags.contains(&"variable_flags") {
        return flags;
    }
    match cmd {
        Cmd::Set if !args.iter().skip(3).any(|a| crate::is(a.as_ref(), "get")) => &["OW", "update"],
        Cmd::Bitfield if bitfield_reads_only(args) => &["RO", "access"],
        _ => RW,
    }
}

/// BITFIELD key [GET t o | SET t o v | INCRBY t o n | OVERFLOW w] …: true
/// if every operation is a whole GET or OVERFLOW (a SET, an INCRBY or
/// anything unreadable makes the key read-write, as Redis assumes).
fn bitfield_reads_only<A: AsRef<[u8]>>(args: &[A]) -> bool {
    let mut i = 2;
    // Bounded: each step moves past at least two arguments.
    while i < args.len() {
        let rest = args.len() - i - 1;
        if crate::is(args[i].as_ref(), "get") && rest >= 2 {
            i += 3;
        } else if crate::is(args[i].as_ref(), "overflow") && rest >= 1 {
            i += 2;
        } else {
            return false;
        }
    }
    true
}

/// specifications, as Redis's `getKeysUsingKeySpecs`: each key's argument
/// index and the specification that found it. Bounded by the argument
/// count per specification.
pub fn keys_of<A: AsRef<[u8]>>(spec: &'static Spec, args: &[A]) -> Vec<(usize, &'static KeySpec)> {
    if spec.cmd == Cmd::Sort {
        // Its STORE destination is an `unknown` specification: SORT's
        // own finder, as Redis falls back to `sortGetKeys`.
        return sort_keys(spec, args);
    }
    if spec.cmd == Cmd::Migrate && args.len() > 3 && args[3].as_ref().is_empty() {
        // MIGRATE … "" … KEYS k…: the empty key is a placeholder, not a
        // key (Redis's `migrateGetKeys`); its KEYS specification finds
        // the rest.
        let mut found = keys_by_specs(spec, args);
        found.retain(|&(i, _)| i != 3);
        return found;
    }
    keys_by_specs(spec, args)
}

/// [`keys_of`] by the key specifications alone.
fn keys_by_specs<A: AsRef<[u8]>>(spec: &'static Spec, args: &[A]) -> Vec<(usize, &'static KeySpec)> {
    let argc = args.len() as i64;
    let mut found = Vec::new();
    for ks in spec.keys {
        if ks.flags.contains(&"not_key") {
            // Shard channels (SSUBSCRIBE, SPUBLISH): not keys, as Redis's
            // default search (GET_KEYSPEC_INCLUDE_NOT_KEYS unset).
            continue;
        }
        let first = match ks.begin {
            Begin::Index(i) => i,
            Begin::Keyword(word, from) => {
                let hit = |i: &i64| args[*i as usize].as_ref().eq_ignore_ascii_case(word.as_bytes());
                let at = if from >= 0 {
                    (from.max(1)..argc).find(hit)
                } else {
                    (1..=(argc + from).min(argc - 1)).rev().find(hit)
                };
                match at {
                    Some(i) => i + 1,
                    None => continue,
                }
            }
            // Found by the command itself (SORT's patterns): no position.
            Begin::Unknown => continue,
        };
        if first < 1 || first >= argc {
            continue;
        }
        let (start, last, step) = match ks.find {
            Find::Range { lastkey, keystep, limit } => {
                let last = if lastkey >= 0 { first + lastkey } else { argc + lastkey };
                let last = if limit > 1 && lastkey < 0 { first + (last - first) / limit } else { last };
                (first, last.min(argc - 1), keystep.max(1))
            }
            Find::Keynum { keynumidx, firstkey, keystep } => {
                let at = first + keynumidx;
                let n = (at < argc).then(|| super::int_arg(args[at as usize].as_ref())).flatten().unwrap_or(0);
                let start = first + firstkey;
                let step = keystep.max(1);
                (start, (start + (n.max(0) - 1).max(-1) * step).min(argc - 1), step)
            }
            Find::Unknown => continue,
        };
        let mut i = start;
        while i <= last {
            found.push((i as usize, ks));
            i += step;
        }
    }
    found
}

/// SORT's keys, as Redis's `sortGetKeys` finds them: the sorted key, and
/// the destination of the last STORE, skipping LIMIT's and BY's and GET's
/// arguments (SORT_RO's key specifications say all).
fn sort_keys<A: AsRef<[u8]>>(spec: &'static Spec, args: &[A]) -> Vec<(usize, &'static KeySpec)> {
    if args.len() < 2 {
        return Vec::new();
    }
    let mut keys = vec![(1, &spec.keys[0])];
    let mut store = None;
    let mut i = 2;
    // Bounded: i grows every turn.
    while i < args.len() {
        let a = args[i].as_ref();
        if super::is(a, "limit") {
            i += 2;
        } else if super::is(a, "store") && i + 1 < args.len() {
            store = Some(i + 1);
        } else if super::is(a, "get") || super::is(a, "by") {
            i += 1;
        }
        i += 1;
    }
    if let Some(at) = store {
        keys.push((at, &spec.keys[2]));
    }
    keys
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
            for sub in s.subcommands {
                assert!(sub.name.starts_with(&format!("{}|", s.name)), "{}", sub.name);
                assert!(std::ptr::eq(lookup_full(sub.name.as_bytes()).unwrap(), sub));
            }
        }
        assert!(lookup(b"nosuch").is_none());
        // Any case, and names one byte off (same hash slot or not).
        for s in &COMMANDS {
            assert!(std::ptr::eq(lookup(s.name.as_bytes()).unwrap(), s));
            let mut odd: Vec<u8> =
                s.name.bytes().enumerate().map(|(i, b)| if i % 2 == 0 { b.to_ascii_uppercase() } else { b }).collect();
            assert!(std::ptr::eq(lookup(&odd).unwrap(), s));
            let last = odd.len() - 1;
            for b in [b'@', b'`', b'_', b'0', b'z' + 1, 0, b'\r', b' '] {
                odd[last] = b;
                if let Some(t) = lookup(&odd) {
                    assert!(t.name.as_bytes().eq_ignore_ascii_case(&odd), "{} for {:?}", t.name, odd);
                }
            }
        }
        assert!(lookup(b"").is_none());
        // A name whose '_' folds like DEL (0x7f) is still only itself.
        assert!(lookup(b"bitfield_ro").is_some());
        assert!(lookup(b"BITFIELD_RO").is_some());
        assert!(lookup(b"bitfield\x7fro").is_none());
        assert!(lookup(&[b'a'; NAME_BYTES_MAX + 1]).is_none());
    }

    #[test]
    fn docs_sorted_and_of_rows() {
        assert!(docs::DOCS.windows(2).all(|w| w[0].name < w[1].name));
        for d in &docs::DOCS {
            assert!(lookup_full(d.name.as_bytes()).is_some_and(|s| s.name == d.name), "{}", d.name);
        }
        assert_eq!(docs_of("set").unwrap().name, "set");
        assert_eq!(docs_of("object|freq").unwrap().name, "object|freq");
        assert!(docs_of("client|setinfo").is_none() && docs_of("nosuch").is_none());
    }

    #[test]
    fn categories_follow_redis() {
        assert_eq!(acl_categories(lookup(b"set").unwrap()), ["@write", "@string", "@slow"]);
        assert_eq!(acl_categories(lookup(b"touch").unwrap()), ["@keyspace", "@read", "@fast"]);
        assert_eq!(acl_categories(lookup(b"monitor").unwrap()), ["@admin", "@slow", "@dangerous"]);
    }

    #[test]
    fn keys_by_specification() {
        let idx = |cmd: &str| {
            let args: Vec<&[u8]> = cmd.split(' ').map(str::as_bytes).collect();
            keys_of(lookup(args[0]).unwrap(), &args).iter().map(|k| k.0).collect::<Vec<_>>()
        };
        assert_eq!(idx("mset a 1 b 2"), [1, 3]);
        assert_eq!(idx("del a b c"), [1, 2, 3]);
        assert_eq!(idx("bitop and d a b"), [2, 3, 4]);
        assert_eq!(idx("lcs a b idx"), [1, 2]);
        assert_eq!(idx("ping"), Vec::<usize>::new());
    }

    #[test]
    fn keynum_and_keyword_specifications() {
        // ZUNIONSTORE-like: destination at 1, the key count at 2, keys after
        // it; MIGRATE-like: keys after the KEYS keyword.
        static NUMKEYS: Spec = Spec {
            keys: &[
                range(&["OW", "update"], 1, 0, 1),
                KeySpec {
                    notes: "",
                    flags: &["RO", "access"],
                    begin: Begin::Index(2),
                    find: Find::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 },
                },
            ],
            ..spec!(Get, "zunionstore", -4, &["write"], (1, 1, 1), "sorted-set", "2.0.0", "")
        };
        static KEYWORD: Spec = Spec {
            keys: &[KeySpec {
                notes: "",
                flags: &["RW"],
                begin: Begin::Keyword("KEYS", -2),
                find: Find::Range { lastkey: -1, keystep: 1, limit: 0 },
            }],
            ..spec!(Get, "migrate", -6, &["write"], (3, 3, 1), "generic", "2.6.0", "")
        };
        let idx = |spec: &'static Spec, cmd: &str| {
            let args: Vec<&[u8]> = cmd.split(' ').map(str::as_bytes).collect();
            keys_of(spec, &args).iter().map(|k| k.0).collect::<Vec<_>>()
        };
        assert_eq!(idx(&NUMKEYS, "zunionstore d 2 a b weights 1 2"), [1, 3, 4]);
        assert_eq!(idx(&NUMKEYS, "zunionstore d 0"), [1]);
        assert_eq!(idx(&NUMKEYS, "zunionstore d x a"), [1], "a bad count finds no keys");
        assert_eq!(idx(&KEYWORD, "migrate h p \"\" 0 5 keys a b"), [7, 8]);
        assert_eq!(idx(&KEYWORD, "migrate h p k 0 5"), Vec::<usize>::new());
    }

    #[test]
    fn keys_as_sort_get_keys_finds_them() {
        let spec = lookup(b"sort").unwrap();
        let idx = |s: &str| {
            let a: Vec<&[u8]> = s.split(' ').map(str::as_bytes).collect();
            sort_keys(spec, &a).iter().map(|k| k.0).collect::<Vec<_>>()
        };
        assert_eq!(idx("sort k"), [1]);
        assert_eq!(idx("sort k store d"), [1, 3]);
        assert_eq!(idx("sort k store d by x store e"), [1, 7]);
        assert_eq!(idx("sort k get store by store"), [1], "GET's and BY's arguments are skipped");
        assert_eq!(idx("sort k limit store x store d"), [1, 6]);
        assert_eq!(idx("sort k store"), [1]);
    }
}
