//! memcached's operator commands that keep state of their own: `stats
//! detail on|off|dump` (per-prefix counts), `slabs automove|reassign` and
//! `lru tune|mode|temp_ttl`, answered with memcached 1.6.18's replies
//! (`proto_text.c`). The server owns one [`State`] and hands it out
//! through [`crate::Host::operator`].
//!
//! # `stats detail`
//! As memcached's `prefix.c`: a key's prefix is what comes before the
//! first delimiter (`-D`, ':' by default); a key without one is not
//! counted. Text `get`/`gets`/`gat`/`gats` count a get per key (and a hit
//! when found), every storage command a set (stored or not), `delete` a
//! del (found or not); the binary protocol's gets, touches and gats count
//! as gets, its stores and deletes likewise; meta commands are not
//! counted (memcached counts none). The dump is `PREFIX <p> get <n> hit <n> set <n> del <n>` lines,
//! by prefix, then `END`; `stats reset` empties it. While off the request
//! path pays one relaxed load of a flag in its worker's counters
//! (`Counters::stats_detail`) and a branch; while on each counted key
//! takes this table's lock, as memcached takes its STATS_LOCK.
//!
//! The table holds at most [`PREFIXES_MAX`] prefixes (memcached's grows
//! without bound): a key with a new prefix past that is not counted.
//!
//! # `slabs` and `lru`
//! Amalgam has no slab classes and no segmented LRU, so these change
//! nothing but what `stats settings` shows; their replies (OK, ERROR,
//! the refusals) are memcached's for the same arguments. `slabs reassign`
//! answers memcached's `NOSPARE source class has no spare pages` for
//! valid classes (there are never spare pages to move), `BADCLASS …`
//! for classes outside memcached's 1 to 63, `SAME …` for equal ones.

use amalgam_protocol::compose::push_line;
use amalgam_protocol::text::Keys;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// Most distinct prefixes `stats detail` keeps (see the module notes).
pub const PREFIXES_MAX: usize = 65_536;
/// memcached's most slab classes (`MAX_NUMBER_OF_SLAB_CLASSES` less 1).
const SLAB_CLASS_MAX: i64 = 63;
/// memcached's refusal of a `stats detail` subcommand.
pub const DETAIL_USAGE: &str = "CLIENT_ERROR usage: stats detail on|off|dump";

/// What a counted request was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DetailOp {
    /// A get of a key; true if found.
    Get(bool),
    /// A storage command.
    Set,
    /// A delete.
    Del,
}

/// One prefix's counts: get, hit, set, del.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Counts {
    get: u64,
    hit: u64,
    set: u64,
    del: u64,
}

/// memcached's LRU and slab tuning as the `slabs`/`lru` commands leave it
/// (`stats settings` shows it).
#[derive(Clone, Debug, PartialEq)]
pub struct Tunables {
    pub slab_automove: u32,
    pub slab_automove_ratio: f64,
    pub lru_segmented: bool,
    pub hot_lru_pct: u32,
    pub warm_lru_pct: u32,
    pub hot_max_factor: f64,
    pub warm_max_factor: f64,
    pub temp_lru: bool,
    pub temporary_ttl: i64,
}

impl Default for Tunables {
    /// memcached 1.6.18's defaults.
    fn default() -> Tunables {
        Tunables {
            slab_automove: 1,
            slab_automove_ratio: 0.8,
            lru_segmented: true,
            hot_lru_pct: 20,
            warm_lru_pct: 40,
            hot_max_factor: 0.2,
            warm_max_factor: 2.0,
            temp_lru: false,
            temporary_ttl: 61,
        }
    }
}

/// The operator state of a server's memcached port.
#[derive(Debug)]
pub struct State {
    /// `-D`'s delimiter.
    pub delimiter: u8,
    prefixes: Mutex<BTreeMap<Vec<u8>, Counts>>,
    tunables: Mutex<Tunables>,
    /// `-W`: `watch` is refused.
    pub watch_disabled: bool,
    /// `watch`'s registry (watch.rs).
    pub watchers: crate::watch::Watchers,
}

impl State {
    pub fn new(delimiter: u8, watch_disabled: bool) -> State {
        State {
            delimiter,
            prefixes: Mutex::new(BTreeMap::new()),
            tunables: Mutex::new(Tunables::default()),
            watch_disabled,
            watchers: crate::watch::Watchers::default(),
        }
    }

    /// Counts `op` on `key` under its prefix (none: not counted).
    pub fn record(&self, op: DetailOp, key: &[u8]) {
        let Some(end) = key.iter().position(|&b| b == self.delimiter) else { return };
        let prefix = &key[..end];
        let mut t = self.prefixes.lock().unwrap_or_else(|e| e.into_inner());
        if !t.contains_key(prefix) {
            if t.len() >= PREFIXES_MAX {
                return;
            }
            t.insert(prefix.to_vec(), Counts::default());
        }
        let Some(c) = t.get_mut(prefix) else { return };
        match op {
            DetailOp::Get(hit) => {
                c.get += 1;
                c.hit += u64::from(hit);
            }
            DetailOp::Set => c.set += 1,
            DetailOp::Del => c.del += 1,
        }
    }

    /// `stats detail dump`'s lines and END.
    pub fn dump(&self, out: &mut Vec<u8>) {
        let t = self.prefixes.lock().unwrap_or_else(|e| e.into_inner());
        for (p, c) in t.iter() {
            out.extend_from_slice(b"PREFIX ");
            out.extend_from_slice(p);
            let line = format!(" get {} hit {} set {} del {}\r\n", c.get, c.hit, c.set, c.del);
            out.extend_from_slice(line.as_bytes());
        }
        out.extend_from_slice(b"END\r\n");
    }

    /// `stats reset`: the prefixes are forgotten, as memcached's
    /// `stats_prefix_clear`.
    pub fn clear(&self) {
        self.prefixes.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// `stats detail <sub>`: `on` and `off` call `set(on)` (the caller
    /// flips every worker's flag) and answer OK; `dump` the table; else
    /// memcached's usage line. The whole reply, END included.
    pub fn detail_command(&self, sub: Option<&[u8]>, out: &mut Vec<u8>, set: impl FnOnce(bool)) {
        match sub {
            Some(b"on") => {
                set(true);
                push_line(out, "OK");
            }
            Some(b"off") => {
                set(false);
                push_line(out, "OK");
            }
            Some(b"dump") => self.dump(out),
            _ => push_line(out, DETAIL_USAGE),
        }
    }

    /// The tuning as it stands.
    pub fn tunables(&self) -> Tunables {
        self.tunables.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// `slabs <args>`, memcached's `process_slabs_command`.
    pub fn slabs(&self, args: Keys<'_>, out: &mut Vec<u8>) {
        let w: Vec<&[u8]> = args.iter().take(4).collect();
        match w.as_slice() {
            [b"reassign", src, dst] => {
                let (Some(src), Some(dst)) = (parse_i32(src), parse_i32(dst)) else {
                    return push_line(out, "CLIENT_ERROR bad command line format");
                };
                let valid = |c: i64| (1..=SLAB_CLASS_MAX).contains(&c);
                // memcached's slabs_reassign: a source of -1 picks any class.
                if src == dst {
                    push_line(out, "SAME src and dst class are identical");
                } else if !(valid(dst) && (valid(src) || src == -1)) {
                    push_line(out, "BADCLASS invalid src or dst class id");
                } else {
                    push_line(out, "NOSPARE source class has no spare pages");
                }
            }
            [b"automove", level, rest @ ..] => {
                let noreply = rest.last() == Some(&&b"noreply"[..]);
                let mut t = self.tunables.lock().unwrap_or_else(|e| e.into_inner());
                let reply = if *level == b"ratio" {
                    match rest.first().and_then(|r| std::str::from_utf8(r).ok()?.parse::<f64>().ok()) {
                        Some(r) => {
                            t.slab_automove_ratio = r;
                            "OK"
                        }
                        None => "ERROR",
                    }
                } else {
                    match parse_u32(level) {
                        None => "CLIENT_ERROR bad command line format",
                        Some(l @ 0..=2) => {
                            t.slab_automove = l;
                            "OK"
                        }
                        Some(_) => "ERROR",
                    }
                };
                // memcached's noreply silences any reply (out_string).
                if !noreply {
                    push_line(out, reply);
                }
            }
            _ => push_line(out, "ERROR"),
        }
    }

    /// `lru <args>`, memcached's `process_lru_command`.
    pub fn lru(&self, args: Keys<'_>, out: &mut Vec<u8>) {
        let w: Vec<&[u8]> = args.iter().take(6).collect();
        let noreply = w.last() == Some(&&b"noreply"[..]);
        let mut t = self.tunables.lock().unwrap_or_else(|e| e.into_inner());
        let reply = match w.as_slice() {
            [] => "ERROR",
            [b"tune", hot, warm, hot_factor, factor, ..] => {
                let f = |b: &[u8]| std::str::from_utf8(b).ok()?.parse::<f64>().ok();
                match (parse_u32(hot), parse_u32(warm), f(hot_factor), f(factor)) {
                    (Some(hot), Some(warm), Some(hf), Some(wf)) => {
                        if u64::from(hot) + u64::from(warm) > 80 {
                            "ERROR hot and warm pcts must not exceed 80"
                        } else if wf <= 0.0 || hf <= 0.0 {
                            "ERROR hot/warm age factors must be greater than 0"
                        } else {
                            (t.hot_lru_pct, t.warm_lru_pct, t.hot_max_factor, t.warm_max_factor) = (hot, warm, hf, wf);
                            "OK"
                        }
                    }
                    _ => "ERROR",
                }
            }
            [b"mode", b"flat", ..] => {
                t.lru_segmented = false;
                "OK"
            }
            [b"mode", b"segmented", ..] => {
                t.lru_segmented = true;
                "OK"
            }
            [b"temp_ttl", ttl, ..] => match parse_i32(ttl) {
                Some(ttl) if ttl < 0 => {
                    t.temp_lru = false;
                    "OK"
                }
                Some(ttl) => {
                    (t.temp_lru, t.temporary_ttl) = (true, ttl);
                    "OK"
                }
                None => "ERROR",
            },
            _ => "ERROR",
        };
        if !noreply {
            push_line(out, reply);
        }
    }
}

/// memcached's `safe_strtoul` on a 32-bit value.
fn parse_u32(b: &[u8]) -> Option<u32> {
    std::str::from_utf8(b).ok()?.parse().ok()
}

/// memcached's `safe_strtol`.
fn parse_i32(b: &[u8]) -> Option<i64> {
    std::str::from_utf8(b).ok()?.parse::<i32>().ok().map(i64::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(f: impl FnOnce(&mut Vec<u8>)) -> String {
        let mut out = Vec::new();
        f(&mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn prefixes_are_counted_as_memcacheds_prefix_c() {
        let s = State::new(b':', false);
        s.record(DetailOp::Get(false), b"b:1");
        s.record(DetailOp::Get(true), b"b:2");
        s.record(DetailOp::Set, b"b:2");
        s.record(DetailOp::Del, b"b:3");
        s.record(DetailOp::Get(false), b"nodelim");
        s.record(DetailOp::Get(false), b"c:1:2");
        s.record(DetailOp::Get(false), b":x");
        assert_eq!(
            reply(|o| s.dump(o)),
            "PREFIX  get 1 hit 0 set 0 del 0\r\nPREFIX b get 2 hit 1 set 1 del 1\r\n\
             PREFIX c get 1 hit 0 set 0 del 0\r\nEND\r\n"
        );
        s.clear();
        assert_eq!(reply(|o| s.dump(o)), "END\r\n");
        let hash = State::new(b'#', false);
        hash.record(DetailOp::Set, b"a#b:c");
        assert_eq!(reply(|o| hash.dump(o)), "PREFIX a get 0 hit 0 set 1 del 0\r\nEND\r\n");
    }

    #[test]
    fn the_table_is_bounded() {
        let s = State::new(b':', false);
        for i in 0..PREFIXES_MAX + 10 {
            s.record(DetailOp::Set, format!("{i}:k").as_bytes());
        }
        assert_eq!(s.prefixes.lock().unwrap().len(), PREFIXES_MAX);
    }

    #[test]
    fn detail_subcommands() {
        let s = State::new(b':', false);
        let mut on = None;
        assert_eq!(reply(|o| s.detail_command(Some(b"on"), o, |v| on = Some(v))), "OK\r\n");
        assert_eq!(on, Some(true));
        assert_eq!(reply(|o| s.detail_command(Some(b"off"), o, |v| on = Some(v))), "OK\r\n");
        assert_eq!(on, Some(false));
        assert_eq!(reply(|o| s.detail_command(None, o, |_| ())), "CLIENT_ERROR usage: stats detail on|off|dump\r\n");
        assert_eq!(reply(|o| s.detail_command(Some(b"x"), o, |_| ())), format!("{DETAIL_USAGE}\r\n"));
    }

    #[test]
    fn slabs_and_lru_answer_as_memcached() {
        let s = State::new(b':', false);
        let slabs = |a: &[u8]| reply(|o| s.slabs(Keys::new(a), o));
        assert_eq!(slabs(b"automove"), "ERROR\r\n");
        assert_eq!(slabs(b"automove 1"), "OK\r\n");
        assert_eq!(slabs(b"automove 3"), "ERROR\r\n");
        assert_eq!(slabs(b"automove x"), "CLIENT_ERROR bad command line format\r\n");
        assert_eq!(slabs(b"automove 0 noreply"), "");
        assert_eq!(slabs(b"reassign 1 2"), "NOSPARE source class has no spare pages\r\n");
        assert_eq!(slabs(b"reassign 2 2"), "SAME src and dst class are identical\r\n");
        assert_eq!(slabs(b"reassign 1 99"), "BADCLASS invalid src or dst class id\r\n");
        assert_eq!(slabs(b"reassign a 2"), "CLIENT_ERROR bad command line format\r\n");
        assert_eq!(slabs(b"reassign"), "ERROR\r\n");
        assert_eq!(s.tunables().slab_automove, 0);
        let lru = |a: &[u8]| reply(|o| s.lru(Keys::new(a), o));
        assert_eq!(lru(b"mode flat"), "OK\r\n");
        assert_eq!(lru(b"mode other"), "ERROR\r\n");
        assert_eq!(lru(b"tune 10 25 0.1 2"), "OK\r\n");
        assert_eq!(lru(b"tune 50 40 0.1 2"), "ERROR hot and warm pcts must not exceed 80\r\n");
        assert_eq!(lru(b"tune 10 20 0 2"), "ERROR hot/warm age factors must be greater than 0\r\n");
        assert_eq!(lru(b"temp_ttl 10"), "OK\r\n");
        assert_eq!(lru(b"foo"), "ERROR\r\n");
        let t = s.tunables();
        assert_eq!((t.lru_segmented, t.hot_lru_pct, t.temp_lru, t.temporary_ttl), (false, 10, true, 10));
    }
}
