//! ZUNION ZINTER ZDIFF, their STORE forms, and ZINTERCARD: Redis 7.0's
//! `zunionInterDiffGenericCommand` — numkeys, then every source looked up
//! (a plain set counts as a sorted set whose members score 1; any other
//! kind answers WRONGTYPE before the options are read), then WEIGHTS,
//! AGGREGATE, WITHSCORES or LIMIT as the command allows. The arithmetic
//! is `amalgam_types::zset::{union, inter, diff}`.
//!
//! The sources are copied out of their keys one by one and the result is
//! stored afterwards under the destination's lock: not one atomic step
//! across keys yet (issue 19, item 2; `zset.rs` module notes).

use super::super::table::Cmd;
use super::super::typed::{self, read, Access, Found};
use super::super::{int_arg, is, Arg, Ctx};
use super::{large, push_pairs, store_result};
use amalgam_protocol::resp::{err, push_error, push_int};
use amalgam_types::set::Set;
use amalgam_types::value::Value;
use amalgam_types::zset::{self, parse_score, Aggregate, Scored, ZSet};
use amalgam_types::Kind;

/// WEIGHTS's error for an argument that is not a float.
const ERR_WEIGHT: &str = "ERR weight value is not a float";
/// ZINTERCARD's LIMIT error (a non-integer too).
const ERR_LIMIT_NEGATIVE: &str = "ERR LIMIT can't be negative";

/// One source, copied out of its key.
enum Source {
    Absent,
    Z(ZSet),
    S(Set),
}

pub fn run(ctx: &mut Ctx<'_>, cmd: Cmd, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let (name, store) = match cmd {
        Cmd::Zunion => ("zunion", false),
        Cmd::Zinter => ("zinter", false),
        Cmd::Zdiff => ("zdiff", false),
        Cmd::Zunionstore => ("zunionstore", true),
        Cmd::Zinterstore => ("zinterstore", true),
        Cmd::Zdiffstore => ("zdiffstore", true),
        _ => ("zintercard", false),
    };
    let diff = matches!(cmd, Cmd::Zdiff | Cmd::Zdiffstore);
    let card_only = cmd == Cmd::Zintercard;
    let numkeys_at = if store { 2 } else { 1 };
    let Some(n) = int_arg(&args[numkeys_at]) else { return push_error(out, err::NOT_INTEGER.as_bytes()) };
    if n < 1 {
        let e = format!("ERR at least 1 input key is needed for '{name}' command");
        return push_error(out, e.as_bytes());
    }
    let after = args.len() - numkeys_at - 1;
    if n as u64 > after as u64 {
        return push_error(out, err::SYNTAX.as_bytes());
    }
    let n = n as usize;
    let t = ctx.ks.thresholds.load();
    let mut sources = Vec::with_capacity(n);
    // Bounded: numkeys ≤ the arguments.
    for k in &args[numkeys_at + 1..numkeys_at + 1 + n] {
        match source(ctx, k, &t) {
            Some(s) => sources.push(s),
            None => return push_error(out, typed::WRONGTYPE.as_bytes()),
        }
    }
    let mut weights = vec![1.0; n];
    let mut agg = Aggregate::Sum;
    let (mut withscores, mut limit) = (false, 0usize);
    let mut j = numkeys_at + 1 + n;
    // Bounded: j advances each round.
    while j < args.len() {
        let remaining = args.len() - j;
        let a = &args[j];
        if !diff && !card_only && remaining > n && is(a, "weights") {
            for (i, w) in weights.iter_mut().enumerate() {
                match parse_score(&args[j + 1 + i]) {
                    Ok(v) => *w = v,
                    Err(_) => return push_error(out, ERR_WEIGHT.as_bytes()),
                }
            }
            j += 1 + n;
        } else if !diff && !card_only && remaining >= 2 && is(a, "aggregate") {
            let v = &args[j + 1];
            agg = if is(v, "sum") {
                Aggregate::Sum
            } else if is(v, "min") {
                Aggregate::Min
            } else if is(v, "max") {
                Aggregate::Max
            } else {
                return push_error(out, err::SYNTAX.as_bytes());
            };
            j += 2;
        } else if !store && !card_only && is(a, "withscores") {
            withscores = true;
            j += 1;
        } else if card_only && remaining >= 2 && is(a, "limit") {
            match int_arg(&args[j + 1]) {
                Some(l) if l >= 0 => limit = usize::try_from(l).unwrap_or(usize::MAX),
                _ => return push_error(out, ERR_LIMIT_NEGATIVE.as_bytes()),
            }
            j += 2;
        } else {
            return push_error(out, err::SYNTAX.as_bytes());
        }
    }
    let inputs: Vec<&dyn Scored> = sources
        .iter()
        .map(|s| match s {
            Source::Absent => &EMPTY as &dyn Scored,
            Source::Z(z) => z as &dyn Scored,
            Source::S(s) => s as &dyn Scored,
        })
        .collect();
    let compute = || match cmd {
        Cmd::Zunion | Cmd::Zunionstore => zset::union(&inputs, &weights, agg, &t),
        Cmd::Zdiff | Cmd::Zdiffstore => zset::diff(&inputs, &t),
        _ => zset::inter(&inputs, &weights, agg, &t),
    };
    if store {
        // A rerun (the engine made room) computes again from the copies.
        let event = match cmd {
            Cmd::Zunionstore => "zunionstore",
            Cmd::Zdiffstore => "zdiffstore",
            _ => "zinterstore",
        };
        return store_result(ctx, &args[1], event, compute, out);
    }
    let result = compute();
    if card_only {
        let n = result.len();
        return push_int(out, if limit > 0 { n.min(limit) } else { n } as i64);
    }
    push_pairs(out, ctx.proto(), ctx.out_stop, result.len(), withscores, result.iter());
}

/// An absent source: no members.
struct Empty;
static EMPTY: Empty = Empty;

impl Scored for Empty {
    fn card(&self) -> usize {
        0
    }
    fn score_of(&self, _: &[u8]) -> Option<f64> {
        None
    }
    fn each(&self, _: &mut dyn FnMut(&[u8], f64)) {}
}

/// The source at `key`, copied out (None: a kind that is neither a sorted
/// set nor a set).
fn source(ctx: &Ctx<'_>, key: &[u8], t: &amalgam_types::Thresholds) -> Option<Source> {
    match read(ctx, key, Kind::ZSet, |z| match z {
        Found::Packed(b) => ZSet::from_packed_trusted(b.to_vec(), t),
        Found::Large(v) => large(v).duplicate(),
    }) {
        Access::Done(z) => return Some(Source::Z(z)),
        Access::Absent => return Some(Source::Absent),
        Access::WrongType => {}
    }
    match read(ctx, key, Kind::Set, |s| match s {
        Found::Packed(b) => Set::from_packed_trusted(b),
        Found::Large(Value::Set(s)) => copy_set(s),
        Found::Large(_) => Set::new(),
    }) {
        Access::Done(s) => Some(Source::S(s)),
        // Deleted between the two lookups.
        Access::Absent => Some(Source::Absent),
        Access::WrongType => None,
    }
}

/// A copy of a large set (through its snapshot encoding).
fn copy_set(s: &Set) -> Set {
    let mut bytes = Vec::new();
    s.encode(&mut bytes);
    Set::decode(&bytes).unwrap_or_default()
}
