//! The users and their rules: the permission bitmap over the command
//! table (`Catalog`), selectors and key patterns, the parsing of ACL
//! SETUSER's words and of ACL files, and the server's set of users
//! ([`Acl`]). The check a request goes through, AUTH and the ACL command
//! are the RESP front end's (the server's `resp/acl.rs`), whose notes
//! describe the design.

use crate::log as acl_log;
use crate::{channel_refused, Denied};
use amalgam_commands::glob::matches;
use amalgam_commands::table::{self, Spec, ACL_CATEGORIES, COMMANDS};
use amalgam_commands::Arg;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
/// Commands and subcommands the permission bitmap can number.
pub const COMMAND_IDS_MAX: usize = 512;
pub const BITS_WORDS: usize = COMMAND_IDS_MAX / 64;
const _: () = assert!(COMMAND_IDS_MAX % 64 == 0);
/// Users one server holds (Redis bounds them only by memory).
pub const USERS_MAX: usize = 1 << 16;
/// Passwords, key patterns, channel patterns and command rules one user
/// holds, each.
pub const USER_ENTRIES_MAX: usize = 1 << 12;
/// ACL GENPASS's largest argument, Redis's.
pub const GENPASS_BITS_MAX: i64 = 4096;
/// ACL GENPASS's default, Redis's.
pub const GENPASS_BITS_DEFAULT: i64 = 256;
/// The longest ACL file `--aclfile` and ACL LOAD read.
pub const ACL_FILE_BYTES_MAX: u64 = 64 << 20;

pub const NOAUTH: &str = "NOAUTH Authentication required.";
pub const HELLO_NOAUTH: &str = "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time";
pub const NOPERM_KEYS: &str = "NOPERM this user has no permissions to access one of the keys used as arguments";
pub const NOPERM_CHANNELS: &str = "NOPERM this user has no permissions to access one of the channels used as arguments";
pub const NO_ACL_FILE: &str = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.";
pub const UNKNOWN_RULE: &str = "Unknown command or category name in ACL";

pub type Bits = [u64; BITS_WORDS];

pub fn bit(b: &Bits, id: usize) -> bool {
    b[id / 64] & (1 << (id % 64)) != 0
}

pub fn set_bit(b: &mut Bits, id: usize, on: bool) {
    if on {
        b[id / 64] |= 1 << (id % 64);
    } else {
        b[id / 64] &= !(1 << (id % 64));
    }
}

/// Every command and subcommand, numbered.
#[derive(Debug)]
pub struct Catalog {
    /// By id: the table's rows in order (id = row index), then each
    /// container's subcommands.
    pub specs: Vec<&'static Spec>,
    /// Row count: ids below it are top-level commands.
    pub top: usize,
    /// For each row: the id of its first subcommand.
    pub sub_base: Vec<usize>,
    /// By id: bit i set when the command is in `ACL_CATEGORIES[i]`.
    pub cats: Vec<u32>,
    /// Every id set.
    pub all: Bits,
}

pub fn catalog() -> &'static Catalog {
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
    pub fn id(&self, spec: &'static Spec, sub: Option<&'static Spec>) -> usize {
        let row = table::index_of(spec);
        match sub {
            None => row,
            Some(s) => self.sub_base[row] + spec.subcommands.iter().position(|x| std::ptr::eq(x, s)).unwrap_or(0),
        }
    }

    /// The ids a rule on `id` covers: a container's rule covers its
    /// subcommands too.
    pub fn covered(&self, id: usize) -> std::ops::Range<usize> {
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
pub enum Rule {
    Command(usize),
    Category(usize),
}

/// A key pattern grants reading keys (`%R~`).
pub const KEY_READ: u8 = 1;
/// A key pattern grants writing keys (`%W~`).
pub const KEY_WRITE: u8 = 2;
/// `~pattern` (or `%RW~`): both.
pub const KEY_ALL: u8 = KEY_READ | KEY_WRITE;

/// One key pattern (Redis's `keyPattern`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyPattern {
    pub pattern: Vec<u8>,
    /// [`KEY_READ`], [`KEY_WRITE`] or both.
    pub perm: u8,
}

/// What a command does to the key its key specification `ks` names at
/// `args[i]` (Redis's `ACLSelectorCheckKey`): `access` reads; `insert`,
/// `delete` and `update` write. A specification with `variable_flags`
/// takes the flags Redis's getkeys procedure gives for these arguments
/// ([`table::key_flags`]: SET without GET only writes; BITFIELD of GETs
/// only reads).
pub fn key_perm(own: &Spec, ks: &table::KeySpec, args: &[Arg<'_>]) -> u8 {
    let mut perm = 0;
    for f in table::key_flags(own.cmd, args, ks.flags) {
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
pub struct Selector {
    /// The base: `+@all` (true) or `-@all`.
    pub all_commands: bool,
    /// The rules after the base, in order: (allow, rule).
    pub rules: Vec<(bool, Rule)>,
    /// The rules replayed.
    pub allowed: Bits,
    pub allkeys: bool,
    /// Key patterns, in the order added, each with what it grants.
    pub patterns: Vec<KeyPattern>,
    pub allchannels: bool,
    pub channels: Vec<Vec<u8>>,
}

impl Default for Selector {
    fn default() -> Selector {
        Selector::new()
    }
}

impl Selector {
    /// No commands, keys or channels (Redis 7.0's `acl-pubsub-default`).
    pub fn new() -> Selector {
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
    pub fn everything() -> Selector {
        Selector { all_commands: true, allowed: catalog().all, allkeys: true, allchannels: true, ..Selector::new() }
    }

    /// True when these rules refuse nothing.
    pub fn unrestricted(&self) -> bool {
        self.allkeys && self.allchannels && self.allowed == catalog().all
    }

    pub fn recompute(&mut self) {
        let cat = catalog();
        let mut b = if self.all_commands { cat.all } else { [0; BITS_WORDS] };
        for &(allow, r) in &self.rules {
            apply_rule(&mut b, allow, r);
        }
        self.allowed = b;
    }

    /// One selector modifier (Redis's `ACLSetSelector`); Err is the reason.
    pub fn apply(&mut self, op: &[u8]) -> Result<(), String> {
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

    pub fn set_base(&mut self, all: bool) {
        self.all_commands = all;
        self.rules.clear();
        self.recompute();
    }

    /// Adds a command rule: it replaces an earlier rule on the same
    /// command or category, and a category rule absorbs the earlier rules
    /// on the commands in it.
    pub fn add_rule(&mut self, allow: bool, rule: Rule) -> Result<(), String> {
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
    pub fn check(&self, own: &'static Spec, id: usize, args: &[Arg<'_>]) -> Result<(), Denied> {
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
    pub fn describe_commands(&self) -> String {
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

    pub fn describe_keys(&self) -> String {
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

    pub fn describe_channels(&self, for_list: bool) -> String {
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
    pub fn describe(&self) -> String {
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
pub fn has_spaces(s: &[u8]) -> bool {
    s.iter().any(|&b| matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | 0))
}

/// Err when a list already holds [`USER_ENTRIES_MAX`] entries.
pub fn bounded(n: usize) -> Result<(), String> {
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
    pub sanitize_payload: Option<bool>,
    /// SHA-256 of each password, in the order added.
    pub passwords: Vec<[u8; 32]>,
    /// The rules given outside parentheses (Redis's root selector).
    pub root: Selector,
    /// `(...)` selectors, in the order added: a command any one of them
    /// (or the root) allows is allowed.
    pub selectors: Vec<Selector>,
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
    pub fn default_user() -> User {
        User { on: true, nopass: true, root: Selector::everything(), ..User::new(b"default") }
    }

    /// True when no rule can refuse this user a command: one of its
    /// selectors refuses nothing.
    pub fn unrestricted(&self) -> bool {
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

    pub fn add_password(&mut self, h: [u8; 32]) -> Result<(), String> {
        if !self.passwords.contains(&h) {
            bounded(self.passwords.len())?;
            self.passwords.push(h);
        }
        self.nopass = false;
        Ok(())
    }

    pub fn remove_password(&mut self, h: [u8; 32]) -> Result<(), String> {
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
    pub fn check(&self, own: &'static Spec, id: usize, args: &[Arg<'_>]) -> Result<(), Denied> {
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

    /// Redis's `ACLUserCheckCmdWithUnrestrictedKeyAccess` for reads: true
    /// if a selector that allows the command (its keys too) may read every
    /// key (`allkeys`, or a pattern `*` granting reads). SORT's BY and GET
    /// patterns need it.
    pub fn reads_every_key(&self, own: &'static Spec, id: usize, args: &[Arg<'_>]) -> bool {
        std::iter::once(&self.root).chain(&self.selectors).any(|s| {
            s.check(own, id, args).is_ok()
                && (s.allkeys || s.patterns.iter().any(|p| p.perm & KEY_READ != 0 && p.pattern == b"*"))
        })
    }

    /// Every selector's channel patterns, and whether one grants all.
    pub fn all_channels(&self) -> (bool, Vec<&Vec<u8>>) {
        let sels = || std::iter::once(&self.root).chain(&self.selectors);
        (sels().any(|s| s.allchannels), sels().flat_map(|s| &s.channels).collect())
    }

    pub fn flags(&self) -> Vec<&'static str> {
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
pub fn split_selector(text: &[u8]) -> Result<Vec<Vec<u8>>, String> {
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
pub fn apply_rule(b: &mut Bits, allow: bool, r: Rule) {
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
pub fn parse_rule(name: &[u8]) -> Option<Rule> {
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
pub fn parse_key_pattern(op: &[u8]) -> Result<(u8, &[u8]), String> {
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

pub fn parse_hash(h: &[u8]) -> Result<[u8; 32], String> {
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

pub fn sha256(data: &[u8]) -> [u8; 32] {
    Sha256::digest(data).into()
}

/// Compares two password hashes in time independent of where they differ.
pub fn same_hash(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let diff = a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y));
    std::hint::black_box(diff) == 0
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The server's users.
#[derive(Debug)]
pub struct Acl {
    pub users: RwLock<BTreeMap<Vec<u8>, Arc<User>>>,
    /// Bumped after every change to `users`; connections compare.
    pub epoch: AtomicU64,
    /// `requirepass` as given (CONFIG GET shows it, as Redis's does).
    pub requirepass: Mutex<Vec<u8>>,
    /// Redis's protected-mode (`--protected-mode`, CONFIG SET).
    pub protected_mode: AtomicBool,
    /// `--aclfile`.
    pub aclfile: Option<std::path::PathBuf>,
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

    pub fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<Vec<u8>, Arc<User>>> {
        self.users.read().unwrap_or_else(|e| e.into_inner())
    }

    pub fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<Vec<u8>, Arc<User>>> {
        self.users.write().unwrap_or_else(|e| e.into_inner())
    }

    pub fn changed(&self) {
        self.epoch.fetch_add(1, Ordering::Release);
    }

    pub fn user(&self, name: &[u8]) -> Option<Arc<User>> {
        self.read().get(name).cloned()
    }

    pub fn default_user(&self) -> Arc<User> {
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
    pub fn setuser(&self, name: &[u8], ops: &[Arg<'_>]) -> Result<(), String> {
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
    pub fn load(&self) -> Result<(), String> {
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
    pub fn save(&self) -> Result<(), String> {
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
