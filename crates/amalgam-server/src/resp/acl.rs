//! Authentication and access control on the RESP port: `--requirepass`,
//! AUTH, HELLO's AUTH option, ACL users (ACL SETUSER GETUSER DELUSER LIST
//! USERS WHOAMI CAT GENPASS SAVE LOAD LOG DRYRUN), Redis 7.0's NOAUTH,
//! WRONGPASS and NOPERM replies, and `--aclfile`.
//!
//! ## Users
//! The server's users live in one [`Acl`] (a `RwLock`ed map, written only
//! by ACL SETUSER/DELUSER/LOAD and CONFIG SET requirepass). A user is
//! immutable once published: a change builds a new [`User`] and swaps the
//! map's `Arc`, then bumps [`Acl::epoch`]. The user `default` always
//! exists: on, `nopass`, `~* &* +@all`, unless `--requirepass` (or CONFIG
//! SET requirepass) gives it a password, as Redis's does. Passwords are
//! kept only as their SHA-256 (what ACL LIST and GETUSER show as `#<hex>`,
//! as Redis does); AUTH hashes the password it is given and compares the
//! hashes in constant time ([`same_hash`]); no password is ever logged.
//!
//! ## The per-request cost
//! A connection caches what it needs in [`Auth`]: its user (an `Arc`), whether it
//! must still authenticate, and `open`, true when neither authentication
//! nor any rule can refuse it (authenticated, every command, every key) —
//! the default user's case. `resp::process` compares the connection's
//! epoch with [`Acl::epoch`] once per read (one relaxed load) and refreshes
//! the cache when a user changed; an open connection then pays one byte
//! test per command, folded into the condition the batched GET/SET path
//! already tests, and `dispatch` calls [`refused`] only when it is not open.
//! Difference from Redis: a rule changed by another connection takes
//! effect for a client from its next read, not in the middle of a
//! pipeline it already sent.
//!
//! ## The check (Redis's `processCommand` order)
//! An unknown command and a wrong argument count are answered first (by
//! dispatch and MULTI's queueing, as before); then NOAUTH for any command
//! without the `no_auth` flag (AUTH, HELLO, QUIT) on a connection that
//! must authenticate; then NOPERM when the user may not run the command
//! (the subcommand, for a container: `config|get`) or a key its key
//! specifications name (`table::keys_of`) matches none of the user's
//! patterns (`glob.rs`). A refused command inside MULTI makes EXEC abort;
//! a refused EXEC answers EXECABORT and discards the transaction, as
//! Redis's `rejectCommand` does. EXEC's queued commands are checked again
//! when they run.
//!
//! ## Rules
//! Commands are numbered (`Catalog`: the table's rows, then each
//! container's subcommands) and a user's permissions are a bitmap over
//! those numbers, so the check is a bit test. A user keeps its command
//! rules as given (`+@all`/`-@all` as the base, then `+cmd`, `-cmd`,
//! `+@cat`, `-@cat` in order; a rule replaces an earlier one on the same
//! command or category, and a category rule absorbs earlier rules on the
//! commands in it); the bitmap is the rules replayed, and ACL LIST shows
//! the rules that change it, which is what Redis 7.0 prints.
//! Key patterns grant reading, writing or both (`%R~`, `%W~`, `~` or
//! `%RW~`): a key is allowed when a pattern granting everything its key
//! specification does to it matches (`access` reads; `insert`, `delete`,
//! `update` write; SET's and BITFIELD's `variable_flags` read from their
//! arguments as Redis's getkeys procedures do), as Redis 7.0's
//! `ACLSelectorCheckKey`. `%~p` (granting nothing) is refused, where
//! Redis 7.0 accepts it and then cannot describe the user.
//! Channel rules (`&pattern`, `allchannels`, `resetchannels`) apply to
//! PUBLISH, SUBSCRIBE, SPUBLISH and SSUBSCRIBE (each channel matched against the user's
//! patterns) and PSUBSCRIBE (each pattern equal to one of them), as Redis
//! 7.0's `ACLCheckChannelAgainstList`.
//!
//! ## Selectors
//! A user's rules outside parentheses are its root [`Selector`]; each
//! `(...)` modifier adds one more (Redis 7.0's selectors; a selector
//! spread over several arguments is joined first, [`merge_selectors`],
//! and its words split as Redis's `sdssplitargs`, [`split_selector`]). A
//! command is allowed when the root or any selector allows it whole
//! (command, keys, channels); refused, the reason reported is Redis's
//! `ACLCheckAllUserCommandPerm`'s (channel over key over command, then
//! the latest argument). `clearselectors` (and `reset`) drop them; ACL
//! LIST shows each as ` (keys channels commands)`, ACL GETUSER as a map
//! under `selectors`. A user with a selector refusing nothing is `open`.
//! Difference: a selector word holding a quote or a parenthesis (after
//! unquoting) is refused, where Redis accepts it and then writes an ACL
//! file it cannot load.
//!
//! Not served: first-argument rules (`+select|0`).
//!
//! ## ACL LOG and ACL DRYRUN
//! Every refusal `refused` answers (command, key, channel; context
//! `multi` inside MULTI and EXEC) and every failed AUTH / HELLO AUTH
//! (reason `auth`) is logged (`acl_log.rs`: Redis's grouping, its
//! `acllog-max-len`); the log is touched only on those paths, never by an
//! open connection. ACL DRYRUN runs the same [`User::check`] for a named
//! user. A command whose rules changed between MULTI and EXEC is answered
//! with Redis's EXEC-time NOPERM text.
//!
//! ## Closing clients when rules change
//! As Redis 7.0: ACL SETUSER that takes channels from a user closes each
//! of its clients holding a subscription the new channels refuse
//! (`kill_refused_subscribers`, Redis's `ACLKillPubsubClientsIfNeeded`:
//! nothing is walked when the user keeps every channel it had); ACL
//! DELUSER closes the deleted users' clients and ACL LOAD every client of
//! a user other than `default` (Redis 7.0.15 frees and rebuilds those
//! users, kept ones included), at once, through each client's worker
//! (`clients::Registry::kill`), not at their next command. A client is
//! its user's by CLIENT LIST's user name. These walks (the client
//! registry, the subscriptions) run in the ACL command, never on the
//! request path.

use super::acl_log;
use super::glob::matches;
use super::server::{help, sub};
use super::table::{self, Cmd, Spec, ACL_CATEGORIES, COMMANDS};
use super::{is, multi, Arg, Ctx};
use crate::exec::After;
use amalgam_protocol::resp::{
    push_array, push_bulk, push_error, push_int, push_map, push_null, push_set, push_simple, Proto,
};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

/// Commands and subcommands the permission bitmap can number.
pub const COMMAND_IDS_MAX: usize = 512;
const BITS_WORDS: usize = COMMAND_IDS_MAX / 64;
const _: () = assert!(COMMAND_IDS_MAX % 64 == 0);
/// Users one server holds (Redis bounds them only by memory).
pub const USERS_MAX: usize = 1 << 16;
/// Passwords, key patterns, channel patterns and command rules one user
/// holds, each.
pub const USER_ENTRIES_MAX: usize = 1 << 12;
/// ACL GENPASS's largest argument, Redis's.
const GENPASS_BITS_MAX: i64 = 4096;
/// ACL GENPASS's default, Redis's.
const GENPASS_BITS_DEFAULT: i64 = 256;
/// The longest ACL file `--aclfile` and ACL LOAD read.
pub const ACL_FILE_BYTES_MAX: u64 = 64 << 20;

pub const NOAUTH: &str = "NOAUTH Authentication required.";
const HELLO_NOAUTH: &str = "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time";
const NOPERM_KEYS: &str = "NOPERM this user has no permissions to access one of the keys used as arguments";
const NOPERM_CHANNELS: &str = "NOPERM this user has no permissions to access one of the channels used as arguments";
const NO_ACL_FILE: &str = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.";
const UNKNOWN_RULE: &str = "Unknown command or category name in ACL";

type Bits = [u64; BITS_WORDS];

fn bit(b: &Bits, id: usize) -> bool {
    b[id / 64] & (1 << (id % 64)) != 0
}

fn set_bit(b: &mut Bits, id: usize, on: bool) {
    if on {
        b[id / 64] |= 1 << (id % 64);
    } else {
        b[id / 64] &= !(1 << (id % 64));
    }
}

/// Every command and subcommand, numbered.
struct Catalog {
    /// By id: the table's rows in order (id = row index), then each
    /// container's subcommands.
    specs: Vec<&'static Spec>,
    /// Row count: ids below it are top-level commands.
    top: usize,
    /// For each row: the id of its first subcommand.
    sub_base: Vec<usize>,
    /// By id: bit i set when the command is in `ACL_CATEGORIES[i]`.
    cats: Vec<u32>,
    /// Every id set.
    all: Bits,
}

fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let mut specs: Vec<&'static Spec> = COMMANDS.iter().collect();
        let top = specs.len();
        let mut sub_base = Vec::with_capacity(top);
        for s in COMMANDS.iter() {
            sub_base.push(specs.len());
            specs.extend(s.subcommands.iter());
        }
        assert!(specs.len() <= COMMAND_IDS_MAX, "raise COMMAND_IDS_MAX to {}", specs.len());
        let cats = specs
            .iter()
            .map(|s| {
                table::acl_categories(s).iter().fold(0u32, |m, c| {
                    m | ACL_CATEGORIES.iter().position(|n| Some(*n) == c.strip_prefix('@')).map_or(0, |i| 1 << i)
                })
            })
            .collect();
        let mut all = [0; BITS_WORDS];
        for id in 0..specs.len() {
            set_bit(&mut all, id, true);
        }
        Catalog { specs, top, sub_base, cats, all }
    })
}

impl Catalog {
    /// The id of `spec` (a row) or of its subcommand `sub`.
    fn id(&self, spec: &'static Spec, sub: Option<&'static Spec>) -> usize {
        let row = table::index_of(spec);
        match sub {
            None => row,
            Some(s) => self.sub_base[row] + spec.subcommands.iter().position(|x| std::ptr::eq(x, s)).unwrap_or(0),
        }
    }

    /// The ids a rule on `id` covers: a container's rule covers its
    /// subcommands too.
    fn covered(&self, id: usize) -> std::ops::Range<usize> {
        if id < self.top {
            let n = self.specs[id].subcommands.len();
            if n > 0 {
                return self.sub_base[id]..self.sub_base[id] + n;
            }
        }
        id..id + 1
    }
}

/// One command rule after the base.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rule {
    Command(usize),
    Category(usize),
}

/// A key pattern grants reading keys (`%R~`).
const KEY_READ: u8 = 1;
/// A key pattern grants writing keys (`%W~`).
const KEY_WRITE: u8 = 2;
/// `~pattern` (or `%RW~`): both.
const KEY_ALL: u8 = KEY_READ | KEY_WRITE;

/// One key pattern (Redis's `keyPattern`).
#[derive(Clone, Debug, PartialEq, Eq)]
struct KeyPattern {
    pattern: Vec<u8>,
    /// [`KEY_READ`], [`KEY_WRITE`] or both.
    perm: u8,
}

/// What a command does to the key its key specification `ks` names at
/// `args[i]` (Redis's `ACLSelectorCheckKey`): `access` reads; `insert`,
/// `delete` and `update` write. A specification with `variable_flags`
/// takes the flags Redis's getkeys procedure gives for these arguments
/// (SET: with GET, read and write, else write; BITFIELD: GET and
/// OVERFLOW only, read, else read and write).
fn key_perm(own: &Spec, ks: &table::KeySpec, args: &[Arg<'_>]) -> u8 {
    if ks.flags.contains(&"variable_flags") {
        match own.cmd {
            // Redis's setGetKeys: any argument after the key equal to GET.
            Cmd::Set => return if args[2..].iter().any(|a| is(a, "get")) { KEY_ALL } else { KEY_WRITE },
            // Redis's bitfieldGetKeys.
            Cmd::Bitfield => {
                let mut i = 2;
                while i < args.len() {
                    let more = args.len() - i - 1;
                    if is(&args[i], "get") && more >= 2 {
                        i += 3;
                    } else if is(&args[i], "overflow") && more >= 1 {
                        i += 2;
                    } else {
                        return KEY_ALL;
                    }
                }
                return KEY_READ;
            }
            _ => {}
        }
    }
    let mut perm = 0;
    for f in ks.flags {
        match *f {
            "access" => perm |= KEY_READ,
            "insert" | "delete" | "update" => perm |= KEY_WRITE,
            _ => {}
        }
    }
    perm
}

/// Commands, keys and channels one set of rules grants (Redis's
/// `aclSelector`): a user's root rules, or one of its `(...)` selectors.
#[derive(Clone, Debug)]
struct Selector {
    /// The base: `+@all` (true) or `-@all`.
    all_commands: bool,
    /// The rules after the base, in order: (allow, rule).
    rules: Vec<(bool, Rule)>,
    /// The rules replayed.
    allowed: Bits,
    allkeys: bool,
    /// Key patterns, in the order added, each with what it grants.
    patterns: Vec<KeyPattern>,
    allchannels: bool,
    channels: Vec<Vec<u8>>,
}

impl Selector {
    /// No commands, keys or channels (Redis 7.0's `acl-pubsub-default`).
    fn new() -> Selector {
        Selector {
            all_commands: false,
            rules: Vec::new(),
            allowed: [0; BITS_WORDS],
            allkeys: false,
            patterns: Vec::new(),
            allchannels: false,
            channels: Vec::new(),
        }
    }

    /// `~* &* +@all`.
    fn everything() -> Selector {
        Selector { all_commands: true, allowed: catalog().all, allkeys: true, allchannels: true, ..Selector::new() }
    }

    /// True when these rules refuse nothing.
    fn unrestricted(&self) -> bool {
        self.allkeys && self.allchannels && self.allowed == catalog().all
    }

    fn recompute(&mut self) {
        let cat = catalog();
        let mut b = if self.all_commands { cat.all } else { [0; BITS_WORDS] };
        for &(allow, r) in &self.rules {
            apply_rule(&mut b, allow, r);
        }
        self.allowed = b;
    }

    /// One selector modifier (Redis's `ACLSetSelector`); Err is the reason.
    fn apply(&mut self, op: &[u8]) -> Result<(), String> {
        let lower = op.to_ascii_lowercase();
        match &lower[..] {
            b"allkeys" | b"~*" => {
                self.allkeys = true;
                self.patterns.clear();
            }
            b"resetkeys" => {
                self.allkeys = false;
                self.patterns.clear();
            }
            b"allchannels" | b"&*" => {
                self.allchannels = true;
                self.channels.clear();
            }
            b"resetchannels" => {
                self.allchannels = false;
                self.channels.clear();
            }
            b"allcommands" | b"+@all" => self.set_base(true),
            b"nocommands" | b"-@all" => self.set_base(false),
            _ => match op.first() {
                Some(b'~' | b'%') => {
                    if self.allkeys {
                        return Err("Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns".into());
                    }
                    let (perm, pattern) = parse_key_pattern(op)?;
                    if has_spaces(pattern) {
                        return Err("Syntax error".into());
                    }
                    match self.patterns.iter_mut().find(|p| p.pattern[..] == pattern[..]) {
                        // The same pattern again grants what both grant.
                        Some(p) => p.perm |= perm,
                        None => {
                            bounded(self.patterns.len())?;
                            self.patterns.push(KeyPattern { pattern: pattern.to_vec(), perm });
                        }
                    }
                }
                Some(b'&') => {
                    if self.allchannels {
                        return Err("Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels".into());
                    }
                    if has_spaces(&op[1..]) {
                        return Err("Syntax error".into());
                    }
                    if !self.channels.iter().any(|p| p[..] == op[1..]) {
                        bounded(self.channels.len())?;
                        self.channels.push(op[1..].to_vec());
                    }
                }
                Some(&sign @ (b'+' | b'-')) => {
                    let rule = parse_rule(&lower[1..]).ok_or(UNKNOWN_RULE)?;
                    self.add_rule(sign == b'+', rule)?;
                }
                _ => return Err("Syntax error".into()),
            },
        }
        Ok(())
    }

    fn set_base(&mut self, all: bool) {
        self.all_commands = all;
        self.rules.clear();
        self.recompute();
    }

    /// Adds a command rule: it replaces an earlier rule on the same
    /// command or category, and a category rule absorbs the earlier rules
    /// on the commands in it.
    fn add_rule(&mut self, allow: bool, rule: Rule) -> Result<(), String> {
        let cat = catalog();
        self.rules.retain(|&(_, r)| match (r, rule) {
            (a, b) if a == b => false,
            (Rule::Command(id), Rule::Category(c)) => cat.cats[id] & (1 << c) == 0,
            _ => true,
        });
        bounded(self.rules.len())?;
        self.rules.push((allow, rule));
        self.recompute();
        Ok(())
    }

    /// Redis's `ACLSelectorCheckCmd`: the command (`own` is the
    /// subcommand for a container, `id` its number), then each key its
    /// key specifications name, then each channel. A `no_auth` command
    /// (AUTH, HELLO, QUIT) is allowed whatever the rules.
    fn check(&self, own: &'static Spec, id: usize, args: &[Arg<'_>]) -> Result<(), Denied> {
        if !own.flags.contains(&"no_auth") && !bit(&self.allowed, id) {
            return Err(Denied::Command);
        }
        if !self.allkeys {
            let refused = |&&(i, ks): &&(usize, &'static table::KeySpec)| {
                let need = key_perm(own, ks, args);
                !self.patterns.iter().any(|p| p.perm & need == need && matches(&p.pattern, &args[i], false))
            };
            if let Some(&(i, _)) = table::keys_of(own, args).iter().find(refused) {
                return Err(Denied::Key(i));
            }
        }
        if !self.allchannels {
            if let Some(i) = channel_refused(&self.channels, own.cmd, args) {
                return Err(Denied::Channel(i));
            }
        }
        Ok(())
    }

    /// The command rules as ACL LIST shows them: the base, then each rule
    /// that changes what the ones before it allowed.
    fn describe_commands(&self) -> String {
        let mut b = if self.all_commands { catalog().all } else { [0; BITS_WORDS] };
        let mut s = String::from(if self.all_commands { "+@all" } else { "-@all" });
        for &(allow, r) in &self.rules {
            let before = b;
            apply_rule(&mut b, allow, r);
            if b != before {
                s.push(' ');
                s.push(if allow { '+' } else { '-' });
                match r {
                    Rule::Command(id) => s.push_str(catalog().specs[id].name),
                    Rule::Category(c) => {
                        s.push('@');
                        s.push_str(ACL_CATEGORIES[c]);
                    }
                }
            }
        }
        s
    }

    fn describe_keys(&self) -> String {
        if self.allkeys {
            return "~*".into();
        }
        let p: Vec<String> = self
            .patterns
            .iter()
            .map(|p| {
                let prefix = match p.perm {
                    KEY_READ => "%R~",
                    KEY_WRITE => "%W~",
                    _ => "~",
                };
                format!("{prefix}{}", String::from_utf8_lossy(&p.pattern))
            })
            .collect();
        p.join(" ")
    }

    fn describe_channels(&self, for_list: bool) -> String {
        if self.allchannels {
            return "&*".into();
        }
        let mut p: Vec<String> = self.channels.iter().map(|p| format!("&{}", String::from_utf8_lossy(p))).collect();
        if for_list {
            p.insert(0, "resetchannels".into());
        }
        p.join(" ")
    }

    /// Keys, channels, commands, as ACL LIST shows them (Redis's
    /// `ACLDescribeSelector`).
    fn describe(&self) -> String {
        let mut parts = Vec::with_capacity(3);
        let keys = self.describe_keys();
        if !keys.is_empty() {
            parts.push(keys);
        }
        parts.push(self.describe_channels(true));
        parts.push(self.describe_commands());
        parts.join(" ")
    }
}

/// Redis's `ACLStringHasSpaces`: C's `isspace` or a NUL.
fn has_spaces(s: &[u8]) -> bool {
    s.iter().any(|&b| matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | 0))
}

/// Err when a list already holds [`USER_ENTRIES_MAX`] entries.
fn bounded(n: usize) -> Result<(), String> {
    if n >= USER_ENTRIES_MAX {
        return Err(format!(
            "a user holds at most {USER_ENTRIES_MAX} passwords, patterns, rules or selectors of each kind"
        ));
    }
    Ok(())
}

/// One ACL user. Immutable once in [`Acl`]'s map.
#[derive(Clone, Debug)]
pub struct User {
    pub name: Vec<u8>,
    pub on: bool,
    pub nopass: bool,
    /// Redis's `sanitize-payload` (true) / `skip-sanitize-payload`
    /// (false) flag, None until either is given: shown, no effect here
    /// (there is no RESTORE to sanitize).
    sanitize_payload: Option<bool>,
    /// SHA-256 of each password, in the order added.
    passwords: Vec<[u8; 32]>,
    /// The rules given outside parentheses (Redis's root selector).
    root: Selector,
    /// `(...)` selectors, in the order added: a command any one of them
    /// (or the root) allows is allowed.
    selectors: Vec<Selector>,
}

impl User {
    /// A new user as ACL SETUSER creates it: off, no password, no
    /// commands, no keys, no channels (Redis 7.0's `acl-pubsub-default`).
    pub fn new(name: &[u8]) -> User {
        User {
            name: name.to_vec(),
            on: false,
            nopass: false,
            sanitize_payload: None,
            passwords: Vec::new(),
            root: Selector::new(),
            selectors: Vec::new(),
        }
    }

    /// Redis's `default` user: `on nopass ~* &* +@all`.
    fn default_user() -> User {
        User { on: true, nopass: true, root: Selector::everything(), ..User::new(b"default") }
    }

    /// True when no rule can refuse this user a command: one of its
    /// selectors refuses nothing.
    fn unrestricted(&self) -> bool {
        self.root.unrestricted() || self.selectors.iter().any(Selector::unrestricted)
    }

    /// True if `password` is one of the user's (any, with nopass).
    pub fn check_password(&self, password: &[u8]) -> bool {
        if self.nopass {
            return true;
        }
        let h = sha256(password);
        // Every stored hash is compared, each in constant time.
        self.passwords.iter().fold(false, |ok, p| same_hash(p, &h) | ok)
    }

    /// One SETUSER modifier (Redis's `ACLSetUser`); Err is the reason. A
    /// selector comes whole (`(~k* +get)`: [`merge_selectors`] joins one
    /// spread over several arguments). Fuzzed with the file's parser
    /// (`fuzz-server/fuzz_targets/acl_rules.rs`).
    pub fn apply(&mut self, op: &[u8]) -> Result<(), String> {
        let lower = op.to_ascii_lowercase();
        match &lower[..] {
            // Redis: an empty modifier does nothing.
            b"" => {}
            b"on" => self.on = true,
            b"off" => self.on = false,
            b"nopass" => {
                self.nopass = true;
                self.passwords.clear();
            }
            b"resetpass" => {
                self.nopass = false;
                self.passwords.clear();
            }
            b"sanitize-payload" => self.sanitize_payload = Some(true),
            b"skip-sanitize-payload" => self.sanitize_payload = Some(false),
            b"clearselectors" => self.selectors.clear(),
            b"reset" => {
                for o in
                    ["resetpass", "resetkeys", "resetchannels", "off", "sanitize-payload", "clearselectors", "-@all"]
                {
                    self.apply(o.as_bytes())?;
                }
            }
            _ => match op.first() {
                Some(b'>') => {
                    let h = sha256(&op[1..]);
                    self.add_password(h)?;
                }
                Some(b'#') => {
                    let h = parse_hash(&op[1..])?;
                    self.add_password(h)?;
                }
                Some(b'<') => self.remove_password(sha256(&op[1..]))?,
                Some(b'!') => self.remove_password(parse_hash(&op[1..])?)?,
                Some(b'(') if op.last() == Some(&b')') => {
                    let mut s = Selector::new();
                    for word in split_selector(&op[1..op.len() - 1])? {
                        // A quote or parenthesis inside would be written
                        // by ACL SAVE as a line that does not load back
                        // (Redis 7.0 accepts it and then cannot load its
                        // own file): refused.
                        if word.iter().any(|b| matches!(b, b'"' | b'\'' | b'(' | b')')) {
                            return Err("Syntax error".into());
                        }
                        s.apply(&word)?;
                    }
                    bounded(self.selectors.len())?;
                    self.selectors.push(s);
                }
                _ => self.root.apply(op)?,
            },
        }
        Ok(())
    }

    fn add_password(&mut self, h: [u8; 32]) -> Result<(), String> {
        if !self.passwords.contains(&h) {
            bounded(self.passwords.len())?;
            self.passwords.push(h);
        }
        self.nopass = false;
        Ok(())
    }

    fn remove_password(&mut self, h: [u8; 32]) -> Result<(), String> {
        let Some(i) = self.passwords.iter().position(|p| *p == h) else {
            return Err("The password you are trying to remove from the user does not exist".into());
        };
        self.passwords.remove(i);
        Ok(())
    }

    /// Redis's `ACLCheckAllUserCommandPerm`: allowed when the root or any
    /// selector allows; otherwise the refusal to report is a channel
    /// before a key before a command, and among equals the latest
    /// argument.
    fn check(&self, own: &'static Spec, id: usize, args: &[Arg<'_>]) -> Result<(), Denied> {
        let mut worst = Denied::Command;
        for s in std::iter::once(&self.root).chain(&self.selectors) {
            match s.check(own, id, args) {
                Ok(()) => return Ok(()),
                Err(d) => {
                    if d.rank() > worst.rank() {
                        worst = d;
                    }
                }
            }
        }
        Err(worst)
    }

    /// Every selector's channel patterns, and whether one grants all.
    fn all_channels(&self) -> (bool, Vec<&Vec<u8>>) {
        let sels = || std::iter::once(&self.root).chain(&self.selectors);
        (sels().any(|s| s.allchannels), sels().flat_map(|s| &s.channels).collect())
    }

    fn flags(&self) -> Vec<&'static str> {
        let mut f = vec![if self.on { "on" } else { "off" }];
        if self.nopass {
            f.push("nopass");
        }
        match self.sanitize_payload {
            Some(false) => f.push("skip-sanitize-payload"),
            Some(true) => f.push("sanitize-payload"),
            None => {}
        }
        f
    }

    /// The user as ACL LIST and the ACL file write it.
    pub fn describe(&self) -> String {
        let mut parts = vec![format!("user {}", String::from_utf8_lossy(&self.name))];
        parts.extend(self.flags().iter().map(|f| f.to_string()));
        parts.extend(self.passwords.iter().map(|h| format!("#{}", hex(h))));
        parts.push(self.root.describe());
        parts.extend(self.selectors.iter().map(|s| format!("({})", s.describe())));
        parts.join(" ")
    }
}

/// The modifiers inside a selector's parentheses (Redis's
/// `sdssplitargs`: words separated by spaces, `"…"` and `'…'` quoting,
/// `\` escapes within double quotes). A modifier holding a space, or
/// unbalanced quotes, is a syntax error, as in Redis.
fn split_selector(text: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    let syntax = || "Syntax error".to_string();
    let mut words = Vec::new();
    let mut i = 0;
    // Each turn consumes at least one byte: bounded by the text.
    while i < text.len() {
        if text[i].is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let mut word = Vec::new();
        while i < text.len() && !text[i].is_ascii_whitespace() {
            match text[i] {
                q @ (b'"' | b'\'') => {
                    i += 1;
                    loop {
                        match text.get(i) {
                            None => return Err(syntax()),
                            Some(&c) if c == q => break,
                            Some(b'\\') if q == b'"' && i + 1 < text.len() => {
                                word.push(text[i + 1]);
                                i += 2;
                            }
                            Some(&c) => {
                                word.push(c);
                                i += 1;
                            }
                        }
                    }
                    i += 1;
                    // A closing quote must end the word (sdssplitargs).
                    if i < text.len() && !text[i].is_ascii_whitespace() {
                        return Err(syntax());
                    }
                }
                c => {
                    word.push(c);
                    i += 1;
                }
            }
        }
        words.push(word);
    }
    Ok(words)
}

/// Redis's `ACLMergeSelectorArguments`: a selector spread over several
/// modifiers (`(~k*`, `+get)`) joined with spaces into one. Err: the
/// modifier that opens a selector never closed.
pub fn merge_selectors<'a>(ops: impl IntoIterator<Item = &'a [u8]>) -> Result<Vec<Vec<u8>>, Vec<u8>> {
    let mut merged = Vec::new();
    let mut open: Option<Vec<u8>> = None;
    let mut start: &[u8] = b"";
    for op in ops {
        if let Some(sel) = &mut open {
            sel.push(b' ');
            sel.extend_from_slice(op);
            if op.last() == Some(&b')') {
                merged.push(open.take().expect("open"));
            }
        } else if op.first() == Some(&b'(') && op.last() != Some(&b')') {
            open = Some(op.to_vec());
            start = op;
        } else {
            merged.push(op.to_vec());
        }
    }
    match open {
        Some(_) => Err(start.to_vec()),
        None => Ok(merged),
    }
}

/// Applies one rule to a permission bitmap.
fn apply_rule(b: &mut Bits, allow: bool, r: Rule) {
    let cat = catalog();
    match r {
        Rule::Command(id) => {
            set_bit(b, id, allow);
            for s in cat.covered(id) {
                set_bit(b, s, allow);
            }
        }
        Rule::Category(c) => {
            for id in 0..cat.specs.len() {
                if cat.cats[id] & (1 << c) != 0 {
                    set_bit(b, id, allow);
                }
            }
        }
    }
}

/// `get`, `config|get` or `@string` (lower case, sign removed).
fn parse_rule(name: &[u8]) -> Option<Rule> {
    if let Some(c) = name.strip_prefix(b"@") {
        return ACL_CATEGORIES.iter().position(|n| n.as_bytes() == c).map(Rule::Category);
    }
    let spec = table::lookup_full(name)?;
    let cat = catalog();
    match name.iter().position(|&b| b == b'|') {
        None => Some(Rule::Command(table::index_of(spec))),
        Some(i) => {
            let parent = table::lookup(&name[..i])?;
            Some(Rule::Command(cat.id(parent, Some(spec))))
        }
    }
}

/// `~pattern` or `%R~`, `%W~`, `%RW~pattern` (Redis's `ACLSetSelector`:
/// R and W each at most once, any case, before the `~`): what it grants
/// and the pattern.
fn parse_key_pattern(op: &[u8]) -> Result<(u8, &[u8]), String> {
    if op[0] == b'~' {
        return Ok((KEY_ALL, &op[1..]));
    }
    let mut perm = 0;
    let mut at = 1;
    // Bounded by the modifier's length.
    while at < op.len() {
        let c = op[at];
        at += 1;
        match c.to_ascii_uppercase() {
            b'R' if perm & KEY_READ == 0 => perm |= KEY_READ,
            b'W' if perm & KEY_WRITE == 0 => perm |= KEY_WRITE,
            b'~' => break,
            _ => return Err("Syntax error".into()),
        }
    }
    if perm == 0 {
        // `%~p` grants nothing; Redis 7.0 accepts it and then cannot
        // describe the user: refused here.
        return Err("Syntax error".into());
    }
    Ok((perm, &op[at..]))
}

fn parse_hash(h: &[u8]) -> Result<[u8; 32], String> {
    let bad = || "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters";
    if h.len() != 64 || !h.iter().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c)) {
        return Err(bad().into());
    }
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        let s = std::str::from_utf8(&h[2 * i..2 * i + 2]).map_err(|_| bad())?;
        *o = u8::from_str_radix(s, 16).map_err(|_| bad())?;
    }
    Ok(out)
}

fn sha256(data: &[u8]) -> [u8; 32] {
    Sha256::digest(data).into()
}

/// Compares two password hashes in time independent of where they differ.
fn same_hash(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let diff = a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y));
    std::hint::black_box(diff) == 0
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The server's users.
#[derive(Debug)]
pub struct Acl {
    users: RwLock<BTreeMap<Vec<u8>, Arc<User>>>,
    /// Bumped after every change to `users`; connections compare.
    epoch: AtomicU64,
    /// `requirepass` as given (CONFIG GET shows it, as Redis's does).
    requirepass: Mutex<Vec<u8>>,
    /// Redis's protected-mode (`--protected-mode`, CONFIG SET).
    pub protected_mode: AtomicBool,
    /// `--aclfile`.
    aclfile: Option<std::path::PathBuf>,
    /// ACL LOG's entries (`acl_log.rs`).
    pub log: acl_log::Log,
}

impl Acl {
    /// The users at start-up: `default`, its password from `requirepass`,
    /// and the ACL file's users. Err says what is wrong with the file.
    pub fn new(
        requirepass: Option<&str>,
        protected_mode: bool,
        aclfile: Option<&std::path::Path>,
    ) -> Result<Acl, String> {
        let acl = Acl {
            users: RwLock::new(BTreeMap::new()),
            epoch: AtomicU64::new(0),
            requirepass: Mutex::new(Vec::new()),
            protected_mode: AtomicBool::new(protected_mode),
            aclfile: aclfile.map(|p| p.to_path_buf()),
            log: acl_log::Log::default(),
        };
        let mut users = BTreeMap::new();
        users.insert(b"default".to_vec(), Arc::new(User::default_user()));
        *acl.users.write().unwrap_or_else(|e| e.into_inner()) = users;
        if let Some(p) = requirepass {
            acl.set_requirepass(p.as_bytes());
        }
        if acl.aclfile.is_some() {
            acl.load()?;
        }
        Ok(acl)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<Vec<u8>, Arc<User>>> {
        self.users.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<Vec<u8>, Arc<User>>> {
        self.users.write().unwrap_or_else(|e| e.into_inner())
    }

    fn changed(&self) {
        self.epoch.fetch_add(1, Ordering::Release);
    }

    pub fn user(&self, name: &[u8]) -> Option<Arc<User>> {
        self.read().get(name).cloned()
    }

    fn default_user(&self) -> Arc<User> {
        self.user(b"default").unwrap_or_else(|| Arc::new(User::default_user()))
    }

    /// True when the default user needs no password (protected mode's
    /// and NOAUTH's question).
    pub fn default_nopass(&self) -> bool {
        let d = self.default_user();
        d.nopass && d.on
    }

    /// Redis's `ACLUpdateDefaultUserPassword`: resetpass, then the
    /// password, or nopass for an empty one.
    pub fn set_requirepass(&self, pass: &[u8]) {
        *self.requirepass.lock().unwrap_or_else(|e| e.into_inner()) = pass.to_vec();
        let mut users = self.write();
        let mut d = users.get(&b"default"[..]).map_or_else(User::default_user, |u| (**u).clone());
        d.passwords.clear();
        if pass.is_empty() {
            d.nopass = true;
        } else {
            d.nopass = false;
            d.passwords.push(sha256(pass));
        }
        users.insert(b"default".to_vec(), Arc::new(d));
        drop(users);
        self.changed();
    }

    pub fn requirepass(&self) -> Vec<u8> {
        self.requirepass.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// ACL SETUSER: every modifier applied to a copy, published only if
    /// all are valid.
    fn setuser(&self, name: &[u8], ops: &[Arg<'_>]) -> Result<(), String> {
        let mut users = self.write();
        let mut u = match users.get(name) {
            Some(u) => (**u).clone(),
            None if users.len() >= USERS_MAX => return Err(format!("ERR at most {USERS_MAX} users")),
            None => User::new(name),
        };
        let ops = merge_selectors(ops.iter().map(|a| &a[..])).map_err(|start| {
            format!("ERR Unmatched parenthesis in acl selector starting at '{}'.", String::from_utf8_lossy(&start))
        })?;
        for op in &ops {
            u.apply(op)
                .map_err(|why| format!("ERR Error in ACL SETUSER modifier '{}': {why}", String::from_utf8_lossy(op)))?;
        }
        users.insert(name.to_vec(), Arc::new(u));
        drop(users);
        self.changed();
        Ok(())
    }

    /// Parses the ACL file's users (lines `user <name> <rules…>`; blank
    /// lines and `#` comments skipped) and replaces every user with them;
    /// on any error nothing changes. A file without `default` keeps the
    /// built-in one.
    fn load(&self) -> Result<(), String> {
        let Some(path) = &self.aclfile else { return Err(NO_ACL_FILE.into()) };
        let shown = path.display();
        let text = match std::fs::metadata(path) {
            Ok(m) if m.len() > ACL_FILE_BYTES_MAX => {
                return Err(format!("ERR {shown} is larger than {ACL_FILE_BYTES_MAX} bytes"))
            }
            Ok(_) => std::fs::read(path).map_err(|e| format!("ERR Error loading ACLs, opening file '{shown}': {e}"))?,
            // Redis starts with an empty set of users when the file is
            // missing at start-up; ACL LOAD then reports it.
            Err(e) => return Err(format!("ERR Error loading ACLs, opening file '{shown}': {e}")),
        };
        let users = parse_acl_file(&text, &shown.to_string())?;
        *self.write() = users;
        self.changed();
        Ok(())
    }

    /// Writes every user to the ACL file (a temporary file renamed over
    /// it, as Redis does).
    fn save(&self) -> Result<(), String> {
        let Some(path) = &self.aclfile else { return Err(NO_ACL_FILE.into()) };
        let mut text = String::new();
        for u in self.read().values() {
            text.push_str(&u.describe());
            text.push('\n');
        }
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, text)
            .and_then(|_| std::fs::rename(&tmp, path))
            .map_err(|e| format!("ERR There was an error trying to save the ACLs. Please check the server logs for more information ({e})"))
    }
}

/// The users of an ACL file's text (`shown` names it in errors): lines
/// `user <name> <rules…>`, blank lines and `#` comments skipped; each
/// user's rules in full, from a new user; `default` built in if the file
/// has none. Bounded by the lines and [`USERS_MAX`]. Fuzzed
/// (`fuzz-server/fuzz_targets/acl_rules.rs`: what ACL SAVE writes loads back the
/// same).
pub fn parse_acl_file(text: &[u8], shown: &str) -> Result<BTreeMap<Vec<u8>, Arc<User>>, String> {
    let mut users: BTreeMap<Vec<u8>, Arc<User>> = BTreeMap::new();
    for (n, line) in text.split(|&b| b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let words: Vec<&[u8]> = line.split(|b| b.is_ascii_whitespace()).filter(|w| !w.is_empty()).collect();
        if words.is_empty() || words[0].starts_with(b"#") {
            continue;
        }
        let at = |why: &str| format!("ERR {shown}:{}: {why}", n + 1);
        if words[0] != b"user" || words.len() < 2 {
            return Err(at("should start with user keyword"));
        }
        if users.len() >= USERS_MAX {
            return Err(at("too many users"));
        }
        // The file states each user's rules in full, the default
        // user's too.
        let mut u = User::new(words[1]);
        let ops = merge_selectors(words[2..].iter().copied())
            .map_err(|_| at("Unmatched parenthesis in selector definition."))?;
        for w in &ops {
            u.apply(w).map_err(|e| at(&format!("{e}. ")))?;
        }
        users.insert(words[1].to_vec(), Arc::new(u));
    }
    users.entry(b"default".to_vec()).or_insert_with(|| Arc::new(User::default_user()));
    Ok(users)
}

/// Redis 7.0's reply to a non-loopback client in protected mode.
pub const DENIED: &str = "-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n";

/// Redis's protected mode (`clientAcceptHandlerCommon`): on, the default
/// user without a password, and a client not on the loopback interface.
/// Asked once per accepted RESP connection, by the acceptor.
pub fn protected(shared: &crate::Shared, peer: std::net::SocketAddr) -> bool {
    let acl = &shared.acl;
    let ip = match peer.ip() {
        std::net::IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(std::net::IpAddr::V6(v6), std::net::IpAddr::V4),
        v4 => v4,
    };
    acl.protected_mode.load(Ordering::Relaxed) && !ip.is_loopback() && acl.default_user().nopass
}

/// A connection's authentication state (see the module's notes).
#[derive(Debug)]
pub struct Auth {
    user: Arc<User>,
    /// AUTH or HELLO AUTH succeeded, or the connection began while the
    /// default user needed no password (Redis's `c->authenticated`).
    authenticated: bool,
    /// Commands other than AUTH/HELLO/QUIT answer NOAUTH.
    required: bool,
    /// Neither authentication nor any rule can refuse a command.
    pub open: bool,
    epoch: u64,
}

impl Auth {
    /// True while the connection must authenticate before anything but
    /// AUTH, HELLO and the other no-auth commands runs.
    #[inline]
    pub(crate) fn required(&self) -> bool {
        self.required
    }

    /// A new connection's state: the default user.
    pub fn new(acl: &Acl) -> Auth {
        let epoch = acl.epoch.load(Ordering::Acquire);
        let user = acl.default_user();
        let authenticated = user.nopass && user.on;
        let mut a = Auth { user, authenticated, required: false, open: false, epoch };
        a.settle(authenticated);
        a
    }

    /// Recomputes `required` and `open`; `default_nopass` is the default
    /// user's state now.
    fn settle(&mut self, default_nopass: bool) {
        self.required = !self.authenticated && !default_nopass;
        self.open = !self.required && self.user.unrestricted();
    }

    pub fn user_name(&self) -> &[u8] {
        &self.user.name
    }
}

/// Brings the connection's cached user up to date with the server's
/// (one relaxed load when nothing changed). False when its user was
/// deleted: Redis closes such connections.
#[inline]
pub fn fresh(acl: &Acl, auth: &mut Auth) -> bool {
    // The common case inline: one load and a compare per read (out of
    // line, the function's prologue and epilogue cost ~50 instructions a
    // read: callgrind, unpipelined GET).
    acl.epoch.load(Ordering::Relaxed) == auth.epoch || refresh(acl, auth)
}

/// [`fresh`]'s slow path: a user changed; re-reads this connection's.
#[cold]
#[inline(never)]
fn refresh(acl: &Acl, auth: &mut Auth) -> bool {
    auth.epoch = acl.epoch.load(Ordering::Acquire);
    let users = acl.read();
    let Some(u) = users.get(&auth.user.name) else { return false };
    auth.user = Arc::clone(u);
    let nopass = users.get(&b"default"[..]).is_some_and(|d| d.nopass && d.on);
    drop(users);
    auth.settle(nopass);
    true
}

/// Authenticates the connection as `user` (Redis's
/// `ACLAuthenticateUser`): true on success; a failure is logged (ACL
/// LOG's reason `auth`, its object `command` as the client typed it).
fn authenticate(ctx: &mut Ctx<'_>, command: &[u8], user: &[u8], password: &[u8]) -> bool {
    let acl = &ctx.shared.acl;
    let Some(u) = acl.user(user).filter(|u| u.on && u.check_password(password)) else {
        let info = client_info(ctx);
        acl.log.add(acl_log::Reason::Auth, log_context(ctx), command, user, info);
        return false;
    };
    // CLIENT LIST's user= field.
    ctx.session.client.attrs().user = (u.name != b"default").then(|| u.name.clone());
    let auth = &mut ctx.session.auth;
    auth.user = u;
    auth.authenticated = true;
    auth.epoch = acl.epoch.load(Ordering::Acquire);
    auth.settle(acl.default_nopass());
    true
}

/// AUTH [user] password.
pub(crate) fn auth(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let (user, pass): (&[u8], &[u8]) = match args.len() {
        2 => {
            if ctx.shared.acl.default_nopass() {
                return push_error(out, amalgam_protocol::resp::err::AUTH_NO_PASSWORD.as_bytes());
            }
            (b"default", &args[1])
        }
        3 => (&args[1], &args[2]),
        _ => return push_error(out, amalgam_protocol::resp::err::SYNTAX.as_bytes()),
    };
    if authenticate(ctx, &args[0], user, pass) {
        push_simple(out, "OK");
    } else {
        push_error(out, amalgam_protocol::resp::err::WRONGPASS.as_bytes());
    }
}

/// HELLO's AUTH step (after its options parsed): Err is the error reply.
pub(crate) fn hello_auth(ctx: &mut Ctx<'_>, command: &[u8], creds: Option<(&[u8], &[u8])>) -> Result<(), &'static str> {
    if let Some((user, pass)) = creds {
        if !authenticate(ctx, command, user, pass) {
            return Err(amalgam_protocol::resp::err::WRONGPASS);
        }
    }
    if !ctx.session.auth.authenticated {
        return Err(HELLO_NOAUTH);
    }
    Ok(())
}

/// The first channel `cmd` names that is not within `allowed` (Redis's
/// `ACLCheckChannelAgainstList`): a channel must match a pattern of the
/// user's; a PSUBSCRIBE pattern must equal one. None: every one is.
fn channel_refused(allowed: &[Vec<u8>], cmd: Cmd, args: &[Arg<'_>]) -> Option<usize> {
    let names = match cmd {
        Cmd::Publish | Cmd::Spublish => 1..2,
        Cmd::Subscribe | Cmd::Psubscribe | Cmd::Ssubscribe => 1..args.len(),
        _ => return None,
    };
    let literal = cmd == Cmd::Psubscribe;
    names.into_iter().find(|&i| {
        let n = &args[i];
        !allowed.iter().any(|p| if literal { p[..] == n[..] } else { matches(p, n, false) })
    })
}

/// Why a user may not run a command (Redis's `ACL_DENIED_*`), with the
/// argument refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Denied {
    Command,
    /// The index of the first key refused.
    Key(usize),
    /// The index of the first channel refused.
    Channel(usize),
}

impl Denied {
    /// Which refusal of several selectors' is reported (Redis's
    /// `ACL_DENIED_*` values, then the argument's index): the largest.
    fn rank(self) -> (u8, usize) {
        match self {
            Denied::Command => (1, 0),
            Denied::Key(i) => (2, i),
            Denied::Channel(i) => (4, i),
        }
    }
}

/// Where a refusal happens, for the ACL log.
fn log_context(ctx: &Ctx<'_>) -> acl_log::Context {
    if ctx.session.multi.queuing() || ctx.session.multi.executing {
        acl_log::Context::Multi
    } else {
        acl_log::Context::Toplevel
    }
}

/// This connection's CLIENT LIST line, as the ACL log keeps it.
fn client_info(ctx: &Ctx<'_>) -> String {
    let mut line = String::new();
    super::client::line(&ctx.session.client, &mut line);
    if line.ends_with('\n') {
        line.pop();
    }
    line
}

/// The check before dispatch (see the module's notes): true when the
/// command was refused, its error answered and the refusal logged.
/// Called only when the connection is not `open`.
pub(crate) fn refused(ctx: &mut Ctx<'_>, spec: Option<&'static Spec>, args: &[Arg<'_>], out: &mut Vec<u8>) -> bool {
    // Unknown commands and wrong arities are answered by dispatch (or
    // MULTI's queueing) first, as in Redis.
    let Some(spec) = spec else { return false };
    if !super::arity_ok(spec.arity, args.len()) {
        return false;
    }
    let sub = if spec.subcommands.is_empty() || args.len() < 2 {
        None
    } else {
        match table::subcommand(spec, &args[1]) {
            Some(s) if super::arity_ok(s.arity, args.len()) => Some(s),
            // An unknown subcommand or its arity: answered by the handler.
            _ => return false,
        }
    };
    // AUTH, HELLO and QUIT: allowed before authenticating and to every
    // user, whatever its rules (Redis's ACLSelectorCheckCmd).
    if spec.flags.contains(&"no_auth") {
        return false;
    }
    let own = sub.unwrap_or(spec);
    let executing = ctx.session.multi.executing;
    let error = if ctx.session.auth.required {
        NOAUTH.to_string()
    } else {
        let denied = match ctx.session.auth.user.check(own, catalog().id(spec, sub), args) {
            Ok(()) => return false,
            Err(d) => d,
        };
        let (reason, object): (_, &[u8]) = match denied {
            Denied::Command => (acl_log::Reason::Command, own.name.as_bytes()),
            Denied::Key(i) => (acl_log::Reason::Key, &args[i]),
            Denied::Channel(i) => (acl_log::Reason::Channel, &args[i]),
        };
        if !executing {
            // Redis names the refused command in CLIENT LIST (EXEC's
            // queued commands leave `exec` there).
            let row = table::index_of(spec);
            let sub_index = sub.and_then(|s| spec.subcommands.iter().position(|x| std::ptr::eq(x, s)));
            ctx.session.client.set_last_cmd(row, sub_index);
        }
        let info = client_info(ctx);
        ctx.shared.acl.log.add(reason, log_context(ctx), object, &ctx.session.auth.user.name, info);
        match (executing, denied) {
            // Redis's execCommand: the rules changed since queueing.
            (true, d) => format!(
                "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: {}",
                match d {
                    Denied::Command => "no permission to execute the command or subcommand",
                    Denied::Key(_) => "no permission to touch the specified keys",
                    Denied::Channel(_) => "no permission to access one of the channels used as arguments",
                }
            ),
            (false, Denied::Command) => format!("NOPERM this user has no permissions to run the '{}' command", own.name),
            (false, Denied::Key(_)) => NOPERM_KEYS.to_string(),
            (false, Denied::Channel(_)) => NOPERM_CHANNELS.to_string(),
        }
    };
    if spec.cmd == Cmd::Exec {
        // Redis's execCommandAbort.
        multi::reset(&mut ctx.session.multi);
        push_error(out, format!("EXECABORT Transaction discarded because of: {error}").as_bytes());
    } else {
        multi::flag(&mut ctx.session.multi);
        push_error(out, error.as_bytes());
    }
    true
}

/// ACL DRYRUN user command [arg ...]: Redis 7.0's answer to "may this
/// user run this?", the refusal as a bulk string.
fn dryrun(acl: &Acl, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let quoted = |before: &str, a: &[u8], after: &str| {
        let mut m = before.as_bytes().to_vec();
        m.extend_from_slice(a.split(|&b| b == 0).next().unwrap_or(b""));
        m.extend_from_slice(after.as_bytes());
        m
    };
    let Some(user) = acl.user(&args[2]) else {
        return push_error(out, &quoted("ERR User '", &args[2], "' not found"));
    };
    let cmd_args = &args[3..];
    // Redis's lookupCommand: a container with an argument names its
    // subcommand, and an unknown one is an unknown command.
    let spec = table::lookup(&cmd_args[0]);
    let sub = match spec {
        Some(s) if !s.subcommands.is_empty() && cmd_args.len() >= 2 => table::subcommand(s, &cmd_args[1]),
        _ => None,
    };
    let Some(spec) = spec.filter(|s| s.subcommands.is_empty() || cmd_args.len() < 2 || sub.is_some()) else {
        return push_error(out, &quoted("ERR Command '", &cmd_args[0], "' not found"));
    };
    let own = sub.unwrap_or(spec);
    if !super::arity_ok(own.arity, cmd_args.len()) {
        return push_error(out, format!("ERR wrong number of arguments for '{}' command", own.name).as_bytes());
    }
    let text = match user.check(own, catalog().id(spec, sub), cmd_args) {
        Ok(()) => return push_simple(out, "OK"),
        Err(Denied::Command) => format!("This user has no permissions to run the '{}' command", own.name).into_bytes(),
        Err(Denied::Key(i)) => quoted("This user has no permissions to access the '", &cmd_args[i], "' key"),
        Err(Denied::Channel(i)) => quoted("This user has no permissions to access the '", &cmd_args[i], "' channel"),
    };
    push_bulk(out, &text);
}

/// The ACL command.
pub(crate) fn run(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) -> After {
    let Some(name) = sub(Cmd::Acl, args, out) else { return After::Continue };
    let acl = &ctx.shared.acl;
    match name {
        "setuser" => {
            let user = &args[2];
            if user.iter().any(|&b| b == b' ' || b == 0) {
                push_error(out, b"ERR Usernames can't contain spaces or null characters");
            } else {
                let before = acl.user(user);
                match acl.setuser(user, &args[3..]) {
                    Ok(()) => {
                        if let (Some(old), Some(new)) = (before, acl.user(user)) {
                            kill_refused_subscribers(ctx.shared, &old, &new);
                        }
                        push_simple(out, "OK")
                    }
                    Err(e) => push_error(out, e.as_bytes()),
                }
            }
        }
        "getuser" => match acl.user(&args[2]) {
            None => push_null(out, ctx.proto()),
            Some(u) => getuser(&u, ctx.proto(), out),
        },
        "deluser" => {
            if args[2..].iter().any(|a| &a[..] == b"default") {
                push_error(out, b"ERR The 'default' user cannot be removed");
            } else {
                let mut users = acl.write();
                let gone: HashSet<Vec<u8>> =
                    args[2..].iter().filter(|a| users.remove(&a[..]).is_some()).map(|a| a.to_vec()).collect();
                drop(users);
                acl.changed();
                // Redis's ACLFreeUserAndKillClients: at once, not at their
                // next command (this connection: by `fresh` below).
                kill_clients(ctx, |name| name.is_some_and(|n| gone.contains(n)));
                push_int(out, gone.len() as i64);
            }
        }
        "list" => {
            let lines: Vec<String> = acl.read().values().map(|u| u.describe()).collect();
            push_array(out, lines.len());
            for l in lines {
                push_bulk(out, l.as_bytes());
            }
        }
        "users" => {
            let names: Vec<Vec<u8>> = acl.read().keys().cloned().collect();
            push_array(out, names.len());
            for n in names {
                push_bulk(out, &n);
            }
        }
        "whoami" => push_bulk(out, &ctx.session.auth.user.name),
        "cat" => cat(args, out),
        "genpass" => genpass(args, out),
        "save" => match acl.save() {
            Ok(()) => push_simple(out, "OK"),
            Err(e) => push_error(out, e.as_bytes()),
        },
        "load" => match acl.load() {
            Ok(()) => {
                // Redis 7.0 frees every user but `default` and their
                // clients with them, whether the file kept the user or
                // not (observed on 7.0.15); `default` is updated in
                // place, its clients kept.
                kill_clients(ctx, |name| name.is_some());
                push_simple(out, "OK");
                if ctx.session.auth.user.name != b"default" {
                    return After::Close;
                }
            }
            Err(e) => push_error(out, e.as_bytes()),
        },
        "log" => match args.get(2) {
            None => acl.log.reply(None, ctx.proto(), out),
            Some(_) if args.len() > 3 => {
                let mut m = b"ERR unknown subcommand or wrong number of arguments for '".to_vec();
                m.extend_from_slice(args[1].split(|&b| b == 0).next().unwrap_or(b""));
                m.extend_from_slice(b"'. Try ACL HELP.");
                push_error(out, &m);
            }
            Some(a) if is(a, "reset") => {
                acl.log.reset();
                push_simple(out, "OK");
            }
            Some(a) => match super::int_arg(a) {
                Some(n) => acl.log.reply(Some(n), ctx.proto(), out),
                None => push_error(out, amalgam_protocol::resp::err::NOT_INTEGER.as_bytes()),
            },
        },
        "dryrun" => dryrun(acl, args, out),
        _ => help(
            &[
                "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "CAT [<category>]",
                "    List all commands that belong to <category>, or all command categories",
                "    when no category is specified.",
                "DELUSER <username> [<username> ...]",
                "    Delete a list of users.",
                "DRYRUN <username> <command> [<arg> ...]",
                "    Returns whether the user can execute the given command without executing the command.",
                "GETUSER <username>",
                "    Get the user's details.",
                "GENPASS [<bits>]",
                "    Generate a secure 256-bit user password. The optional `bits` argument can",
                "    be used to specify a different size.",
                "LIST",
                "    Show users details in config file format.",
                "LOAD",
                "    Reload users from the ACL file.",
                "LOG [<count> | RESET]",
                "    Show the ACL log entries.",
                "SAVE",
                "    Save the current config to the ACL file.",
                "SETUSER <username> <attribute> [<attribute> ...]",
                "    Create or modify a user with the specified attributes.",
                "USERS",
                "    List all the registered usernames.",
                "WHOAMI",
                "    Return the current connection username.",
                "HELP",
                "    Prints this help.",
            ],
            out,
        ),
    }
    // This connection's own user may have changed (or gone).
    if !fresh(acl, &mut ctx.session.auth) {
        return After::Close;
    }
    After::Continue
}

/// Closes every other client whose user `matches` (by CLIENT LIST's
/// user name: None is `default`) through its worker's kill inbox. One
/// pass over the client registry.
fn kill_clients(ctx: &Ctx<'_>, matches: impl Fn(Option<&Vec<u8>>) -> bool) {
    let me = ctx.session.client.id;
    for c in ctx.shared.clients.snapshot() {
        if c.id != me && matches(c.attrs().user.as_ref()) {
            ctx.shared.clients.kill(&c);
        }
    }
}

/// Redis 7.0's ACLKillPubsubClientsIfNeeded: when `new` (the user after
/// ACL SETUSER) lost channels `old` had, closes each of the user's
/// clients holding a subscription the new channels refuse (a channel or
/// shard channel matching none of them, a pattern equal to none). Nothing
/// is walked when the user keeps all channels or every old pattern.
fn kill_refused_subscribers(shared: &crate::Shared, old: &User, new: &User) {
    let ((old_all, old_channels), (new_all, new_channels)) = (old.all_channels(), new.all_channels());
    if new_all || (!old_all && old_channels.iter().all(|c| new_channels.contains(c))) {
        return;
    }
    let name = (new.name != b"default").then_some(&new.name);
    let clients = shared.clients.snapshot();
    let of: HashSet<u64> = clients.iter().filter(|c| c.attrs().user.as_ref() == name).map(|c| c.id).collect();
    if of.is_empty() {
        return;
    }
    let refused = shared.pubsub.refused_subscribers(&of, |channel, is_pattern| {
        new_channels.iter().any(|p| if is_pattern { p[..] == channel[..] } else { matches(p, channel, false) })
    });
    for c in clients.iter().filter(|c| refused.contains(&c.id)) {
        shared.clients.kill(c);
    }
}

fn getuser(u: &User, proto: Proto, out: &mut Vec<u8>) {
    push_map(out, 6, proto);
    push_bulk(out, b"flags");
    let flags = u.flags();
    // A set in RESP3, as Redis's setDeferredSetLen.
    push_set(out, flags.len(), proto);
    for f in flags {
        push_bulk(out, f.as_bytes());
    }
    push_bulk(out, b"passwords");
    push_array(out, u.passwords.len());
    for h in &u.passwords {
        push_bulk(out, hex(h).as_bytes());
    }
    describe_selector(&u.root, out);
    push_bulk(out, b"selectors");
    push_array(out, u.selectors.len());
    for s in &u.selectors {
        push_map(out, 3, proto);
        describe_selector(s, out);
    }
}

/// ACL GETUSER's three fields of a selector (Redis's
/// `aclAddReplySelectorDescription`).
fn describe_selector(s: &Selector, out: &mut Vec<u8>) {
    push_bulk(out, b"commands");
    push_bulk(out, s.describe_commands().as_bytes());
    push_bulk(out, b"keys");
    push_bulk(out, s.describe_keys().as_bytes());
    push_bulk(out, b"channels");
    push_bulk(out, s.describe_channels(false).as_bytes());
}

/// ACL CAT [category].
fn cat(args: &[Arg<'_>], out: &mut Vec<u8>) {
    if args.len() == 2 {
        push_array(out, ACL_CATEGORIES.len());
        for c in ACL_CATEGORIES {
            push_bulk(out, c.as_bytes());
        }
        return;
    }
    let Some(c) = ACL_CATEGORIES.iter().position(|n| is(&args[2], n)) else {
        let mut m = b"ERR Unknown category '".to_vec();
        m.extend_from_slice(&args[2]);
        m.push(b'\'');
        return push_error(out, &m);
    };
    let cat = catalog();
    let names: Vec<&str> =
        (0..cat.specs.len()).filter(|&id| cat.cats[id] & (1 << c) != 0).map(|id| cat.specs[id].name).collect();
    push_array(out, names.len());
    for n in names {
        push_bulk(out, n.as_bytes());
    }
}

/// ACL GENPASS [bits]: random hex from the kernel's generator.
fn genpass(args: &[Arg<'_>], out: &mut Vec<u8>) {
    let bits = match args.get(2) {
        None => GENPASS_BITS_DEFAULT,
        Some(a) => match super::int_arg(a) {
            Some(n) if (1..=GENPASS_BITS_MAX).contains(&n) => n,
            _ => {
                return push_error(
                    out,
                    b"ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096",
                )
            }
        },
    };
    let chars = (bits as usize).div_ceil(4);
    let mut raw = vec![0u8; chars.div_ceil(2)];
    use std::io::Read;
    if std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut raw)).is_err() {
        return push_error(out, b"ERR cannot read /dev/urandom");
    }
    push_bulk(out, &hex(&raw).as_bytes()[..chars]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(ops: &str) -> User {
        let mut u = User::new(b"t");
        for op in ops.split(' ').filter(|o| !o.is_empty()) {
            u.apply(op.as_bytes()).unwrap();
        }
        u
    }

    #[test]
    fn rules_describe_as_redis() {
        // Each pair as Redis 7.0.15's ACL LIST shows it.
        for (ops, want) in [
            ("+get -get", "-@all"),
            ("+@string +get", "-@all +@string"),
            ("+get +@string", "-@all +@string"),
            ("+get -@string", "-@all"),
            ("-@all +get +set -get", "-@all +set"),
            ("+@all -get +@read", "+@all"),
            ("+@read -@read", "-@all"),
            ("+config|get", "-@all +config|get"),
            ("+@all -config|set", "+@all -config|set"),
            ("allcommands -get nocommands +set", "-@all +set"),
            ("+@all -@dangerous", "+@all -@dangerous"),
            ("+get +@string -set", "-@all +@string -set"),
        ] {
            assert_eq!(user(ops).root.describe_commands(), want, "{ops}");
        }
        assert_eq!(
            user("on >pw1 ~k* +get +@string -set").describe(),
            "user t on #c592df4a86933b92addc9842402ddf198c638ea9be58916ee6e3734e1e3152f8 ~k* resetchannels -@all +@string -set"
        );
        assert_eq!(User::default_user().describe(), "user default on nopass ~* &* +@all");
        assert_eq!(user("~a allkeys").describe(), "user t off ~* resetchannels -@all");
        assert_eq!(user(">a nopass").describe(), "user t off nopass resetchannels -@all");
    }

    #[test]
    fn permissions_are_the_rules_replayed() {
        let cat = catalog();
        let id = |n: &str| table::index_of(table::lookup(n.as_bytes()).unwrap());
        let u = user("+@string -set");
        assert!(
            bit(&u.root.allowed, id("get")) && !bit(&u.root.allowed, id("set")) && !bit(&u.root.allowed, id("hget"))
        );
        let u = user("+@all -config|set");
        let config = table::lookup(b"config").unwrap();
        let set = table::subcommand(config, b"set").unwrap();
        let get = table::subcommand(config, b"get").unwrap();
        assert!(!bit(&u.root.allowed, cat.id(config, Some(set))) && bit(&u.root.allowed, cat.id(config, Some(get))));
        assert!(!u.unrestricted() && User::default_user().unrestricted());
    }

    #[test]
    fn passwords_are_hashed_and_checked() {
        let u = user(">pw1 >pw2");
        assert!(u.check_password(b"pw1") && u.check_password(b"pw2") && !u.check_password(b"pw3"));
        assert!(user("nopass").check_password(b"anything"));
        assert!(!user("").check_password(b""), "a user with no password and no nopass accepts none");
        assert!(User::new(b"x").apply(b"<nope").is_err());
        assert!(User::new(b"x").apply(b"#abc").is_err());
        assert!(User::new(b"x").apply(b"bogus").is_err());
        assert!(User::new(b"x").apply(b"+nosuch").is_err());
        assert!(user("allkeys").apply(b"~x").is_err());
    }

    #[test]
    fn selectors_parse_merge_and_describe_as_redis() {
        let merged = merge_selectors([&b"on"[..], b"(~a*", b"+get)", b"(+set)"]).unwrap();
        assert_eq!(merged, [&b"on"[..], b"(~a* +get)", b"(+set)"]);
        assert_eq!(merge_selectors([&b"(+get"[..], b"~x*"]), Err(b"(+get".to_vec()));
        assert_eq!(merge_selectors([&b"(+get)x"[..]]), Err(b"(+get)x".to_vec()));
        assert_eq!(split_selector(b"  +get  '~a'  \"&b\" ").unwrap(), [&b"+get"[..], b"~a", b"&b"]);
        assert!(split_selector(b"'~a").is_err() && split_selector(b"'~a'b").is_err());
        let mut u = user("on ~k* +@all");
        u.apply(b"(&x* +publish ~*)").unwrap();
        u.apply(b"()").unwrap();
        assert_eq!(
            u.describe(),
            "user t on ~k* resetchannels +@all (~* resetchannels &x* -@all +publish) (resetchannels -@all)"
        );
        for bad in [&b"(on)"[..], b"(reset)", b"(~'q r')", b"x(+get)"] {
            assert_eq!(u.apply(bad), Err("Syntax error".into()), "{}", String::from_utf8_lossy(bad));
        }
        u.apply(b"clearselectors").unwrap();
        assert_eq!(u.describe(), "user t on ~k* resetchannels +@all");
        assert!(!u.unrestricted());
        u.apply(b"(~* &* +@all)").unwrap();
        assert!(u.unrestricted(), "a selector refusing nothing opens the user");
        assert_eq!(u.apply(b"('~a\"b')"), Err("Syntax error".into()), "would not load back");
        // What ACL SAVE writes loads back the same.
        let text = b"user x on #c592df4a86933b92addc9842402ddf198c638ea9be58916ee6e3734e1e3152f8 (~a* +get) ( %R~b* &c  ) +set\n";
        let line = parse_acl_file(text, "t").unwrap()[&b"x"[..]].describe();
        assert_eq!(
            line,
            "user x on #c592df4a86933b92addc9842402ddf198c638ea9be58916ee6e3734e1e3152f8 resetchannels -@all +set (~a* resetchannels -@all +get) (%R~b* resetchannels &c -@all)"
        );
        assert_eq!(parse_acl_file(line.as_bytes(), "t").unwrap()[&b"x"[..]].describe(), line);
        assert!(parse_acl_file(b"user x (~a* +get\n", "t")
            .unwrap_err()
            .ends_with("Unmatched parenthesis in selector definition."));
    }
}
