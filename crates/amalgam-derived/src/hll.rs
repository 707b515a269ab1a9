//! HyperLogLog commands: PFADD PFCOUNT PFMERGE PFDEBUG PFSELFTEST, thin
//! over amalgam-types' `hll` (the representation and the algorithms,
//! byte for byte Redis 7.0's src/hyperloglog.c).
//!
//! A HyperLogLog is a string value, as in Redis: GET, SET, DUMP,
//! RESTORE, APPEND … see its bytes, a collection under the key is
//! WRONGTYPE as for any string command, and a string that is not a
//! HyperLogLog answers Redis's `WRONGTYPE Key is not a valid HyperLogLog
//! string value.` ([`NOT_HLL`]); one whose sparse runs do not add up,
//! `INVALIDOBJ Corrupted HLL object detected` ([`CORRUPT`]).
//!
//! ## Writes
//! Every change is a read-modify-write of the key under its bucket lock
//! (`Store::update`): the value is copied, changed and published whole,
//! keeping its flags and expiry (Redis changes it in place; a key's TTL
//! survives PFADD and PFMERGE there too). PFADD first asks whether any
//! element would raise a register ([`hll::would_change`]), so adding
//! known elements copies nothing. PFMERGE and PFCOUNT of several keys
//! run with all their keys held (the RESP front end's `with_keys_held`,
//! from the rows' key specifications).
//!
//! ## PFCOUNT's cache
//! PFCOUNT of one key answers the count cached in the header; when it is
//! stale it counts and writes the count back, as Redis does (Redis then
//! signals the key modified and bumps `dirty`, so the write reaches
//! replicas and the AOF and aborts a WATCH on the key). Here the write
//! back is an ordinary write: journaled (log and replicas carry the
//! value with its cache), a fresh CAS unique (WATCH sees it). It is done
//! only if the key is still the item that was counted (its CAS unique),
//! and a failed write back (out of memory) still answers the count.
//!
//! ## Differences from Redis
//! A PFADD that meets a damaged value after some elements changed it
//! changes nothing here (Redis keeps the earlier registers it raised, in
//! place, without marking the cache stale); both answer INVALIDOBJ. A
//! damaged value ending in a cut-short XZERO can change differently
//! (amalgam-types `hll.rs`, "Corruption").

use amalgam_commands::strings::{engine_error, is_string};
use amalgam_commands::table::Cmd;
use amalgam_commands::typed::{random, WRONGTYPE};
use amalgam_commands::{is, Arg, Ctx};
use amalgam_engine::{Error, Expiry, ItemRef, NewValue, Update};
use amalgam_protocol::resp::{push_array, push_bulk, push_error, push_int, push_simple};
use amalgam_types::hll::{self, Encoding, Registers, REGISTERS};

/// Redis's answer for a string that is not a HyperLogLog.
pub const NOT_HLL: &str = "WRONGTYPE Key is not a valid HyperLogLog string value.";
/// Redis's answer for a HyperLogLog whose runs do not add up.
pub const CORRUPT: &str = "INVALIDOBJ Corrupted HLL object detected";
const NO_SUCH_KEY: &str = "ERR The specified key does not exist";
const NOT_SPARSE: &str = "ERR HLL encoding is not sparse";
/// The longest PFDEBUG subcommand name quoted back in its error.
const SUBCOMMAND_QUOTE_BYTES_MAX: usize = 128;

pub fn run(ctx: &mut Ctx<'_>, cmd: Cmd, args: &[Arg<'_>], out: &mut Vec<u8>) {
    match cmd {
        Cmd::Pfadd => pfadd(ctx, args, out),
        Cmd::Pfcount if args.len() == 2 => pfcount_one(ctx, &args[1], out),
        Cmd::Pfcount => pfcount_union(ctx, &args[1..], out),
        Cmd::Pfmerge => pfmerge(ctx, args, out),
        Cmd::Pfdebug => pfdebug(ctx, args, out),
        Cmd::Pfselftest => match hll::self_test(random(), ctx.ks.thresholds.hll_sparse_max_bytes()) {
            Ok(()) => push_simple(out, "OK"),
            Err(m) => push_error(out, format!("ERR {m}").as_bytes()),
        },
        _ => {}
    }
}

/// Why a command answers an error.
#[derive(Clone, Copy, Debug)]
enum Refusal {
    /// The key holds a collection.
    WrongType,
    /// A string that is not a HyperLogLog.
    NotHll,
    Corrupt,
    /// PFDEBUG of a missing key.
    NoSuchKey,
    /// PFDEBUG DECODE of a dense value.
    NotSparse,
    Engine(Error),
}

impl Refusal {
    fn reply(self, out: &mut Vec<u8>) {
        match self {
            Refusal::WrongType => push_error(out, WRONGTYPE.as_bytes()),
            Refusal::NotHll => push_error(out, NOT_HLL.as_bytes()),
            Refusal::Corrupt => push_error(out, CORRUPT.as_bytes()),
            Refusal::NoSuchKey => push_error(out, NO_SUCH_KEY.as_bytes()),
            Refusal::NotSparse => push_error(out, NOT_SPARSE.as_bytes()),
            Refusal::Engine(e) => engine_error(e, out),
        }
    }
}

impl From<hll::Corrupt> for Refusal {
    fn from(_: hll::Corrupt) -> Self {
        Refusal::Corrupt
    }
}

/// The HyperLogLog an item holds (Redis's `isHLLObjectOrReply`).
fn hll_of<'a>(it: &ItemRef<'a>) -> Result<&'a [u8], Refusal> {
    if !is_string(it) {
        return Err(Refusal::WrongType);
    }
    let v = it.value();
    hll::check(v).map_err(|_| Refusal::NotHll)?;
    Ok(v)
}

/// A read-modify-write of the HyperLogLog at `key` under its lock: `f`
/// gets its value (None: no key) and answers the value to store (None:
/// keep the key as it is) and the command's result. The key's flags and
/// expiry stay. `f` may run more than once (`Store::update`).
fn rewrite<R>(
    ctx: &Ctx<'_>,
    key: &[u8],
    mut f: impl FnMut(Option<&[u8]>) -> Result<(Option<Vec<u8>>, R), Refusal>,
) -> Result<R, Refusal> {
    let r = ctx.ks.store.update(key, |old| {
        let value = match old.as_ref().map(hll_of).transpose() {
            Ok(v) => v,
            Err(e) => return (Update::Keep, Err(e)),
        };
        match f(value) {
            Err(e) => (Update::Keep, Err(e)),
            Ok((None, r)) => (Update::Keep, Ok(r)),
            Ok((Some(v), r)) => {
                let (flags, expiry) = old.map_or((0, Expiry::Never), |it| (it.flags(), it.expiry()));
                (Update::Put { value: NewValue::Owned(v), flags, expiry, fresh_cas: true, marks: 0 }, Ok(r))
            }
        }
    });
    r.map_err(Refusal::Engine).and_then(|(r, _)| r)
}

fn pfadd(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let sparse_max = ctx.ks.thresholds.hll_sparse_max_bytes();
    let elements = &args[2..];
    let r = rewrite(ctx, &args[1], |old| {
        // A new key counts as a change (Redis answers 1 for PFADD key).
        let (mut v, mut changed) = match old {
            Some(v) if !hll::would_change(v, elements.iter().map(|e| &e[..])) => return Ok((None, false)),
            Some(v) => (hll::writable(v), false),
            None => (hll::new_sparse(), true),
        };
        for e in elements {
            changed |= hll::add(&mut v, e, sparse_max)?;
        }
        if !changed {
            return Ok((None, false));
        }
        hll::invalidate(&mut v);
        Ok((Some(v), true))
    });
    match r {
        Ok(changed) => {
            if changed {
                ctx.notify(amalgam_commands::notify::STRING, "pfadd", &args[1]);
            }
            push_int(out, i64::from(changed))
        }
        Err(e) => e.reply(out),
    }
}

/// PFCOUNT of one key: the cached count, or a count written back.
fn pfcount_one(ctx: &mut Ctx<'_>, key: &[u8], out: &mut Vec<u8>) {
    // (count, Some(CAS unique of the counted item) if the cache was stale)
    let read = ctx.ks.store.get(key, |it| -> Result<(u64, Option<u64>), Refusal> {
        let v = hll_of(&it)?;
        match hll::cached(v) {
            Some(card) => Ok((card, None)),
            None => Ok((hll::count(v)?, Some(it.cas()))),
        }
    });
    let card = match read {
        None => return push_int(out, 0),
        Some(Err(e)) => return e.reply(out),
        Some(Ok((card, None))) => card,
        Some(Ok((card, Some(cas)))) => {
            // Write the count back, unless the key changed meanwhile; a
            // refusal (out of memory) leaves the cache stale.
            let _ = ctx.ks.store.update(key, |old| match old {
                Some(it) if it.cas() == cas => {
                    let mut v = it.value().to_vec();
                    hll::set_cached(&mut v, card);
                    let put = NewValue::Owned(v);
                    (Update::Put { value: put, flags: it.flags(), expiry: it.expiry(), fresh_cas: true, marks: 0 }, ())
                }
                _ => (Update::Keep, ()),
            });
            card
        }
    };
    push_int(out, card as i64);
}

/// The registers of every HyperLogLog at `keys`, merged; and whether any
/// is dense. A missing key is an empty HyperLogLog. Stops at the first
/// key Redis would refuse.
fn merge_keys(ctx: &Ctx<'_>, keys: &[Arg<'_>]) -> Result<(Box<Registers>, bool), Refusal> {
    let mut max: Box<Registers> = vec![0u8; REGISTERS].into_boxed_slice().try_into().expect("REGISTERS bytes");
    let mut dense = false;
    for k in keys {
        let r = ctx.ks.store.get(k, |it| -> Result<bool, Refusal> {
            let v = hll_of(&it)?;
            hll::merge_into(&mut max, v)?;
            Ok(hll::encoding(v) == Encoding::Dense)
        });
        dense |= r.transpose()?.unwrap_or(false);
    }
    Ok((max, dense))
}

/// PFCOUNT of several keys: the count of their union; nothing written.
fn pfcount_union(ctx: &mut Ctx<'_>, keys: &[Arg<'_>], out: &mut Vec<u8>) {
    match merge_keys(ctx, keys) {
        Ok((max, _)) => push_int(out, hll::count_registers(&max) as i64),
        Err(e) => e.reply(out),
    }
}

/// PFMERGE dest src …: dest is a source too; the result is dense if any
/// source was, else sparse while it fits (Redis 7.0's rule).
fn pfmerge(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let (max, dense) = match merge_keys(ctx, &args[1..]) {
        Ok(m) => m,
        Err(e) => return e.reply(out),
    };
    let sparse_max = ctx.ks.thresholds.hll_sparse_max_bytes();
    let r = rewrite(ctx, &args[1], |dest| Ok((Some(hll::merged(dest, &max, dense, sparse_max)?), ())));
    match r {
        Ok(()) => {
            // Redis names PFMERGE's event as PFADD's.
            ctx.notify(amalgam_commands::notify::STRING, "pfadd", &args[1]);
            push_simple(out, "OK")
        }
        Err(e) => e.reply(out),
    }
}

/// PFDEBUG GETREG|DECODE|ENCODING|TODENSE key (the key is looked up
/// first, as Redis does: a missing key is an error whatever the
/// subcommand).
fn pfdebug(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    enum Reply {
        Registers(Vec<u8>),
        Decoded(String),
        Encoding(Encoding),
        Converted(bool),
        Unknown,
    }
    let sub: &[u8] = &args[1];
    let r = rewrite(ctx, &args[2], |v| {
        let Some(v) = v else { return Err(Refusal::NoSuchKey) };
        let dense = |v: &[u8]| -> Result<(Option<Vec<u8>>, bool), Refusal> {
            let mut d = v.to_vec();
            let converted = hll::to_dense(&mut d)?;
            Ok((converted.then_some(d), converted))
        };
        Ok(if is(sub, "getreg") {
            let (stored, _) = dense(v)?;
            let regs = hll::dense_registers(stored.as_deref().unwrap_or(v)).collect();
            (stored, Reply::Registers(regs))
        } else if is(sub, "decode") {
            if hll::encoding(v) != Encoding::Sparse {
                return Err(Refusal::NotSparse);
            }
            (None, Reply::Decoded(hll::decode(v)))
        } else if is(sub, "encoding") {
            (None, Reply::Encoding(hll::encoding(v)))
        } else if is(sub, "todense") {
            let (stored, converted) = dense(v)?;
            (stored, Reply::Converted(converted))
        } else {
            (None, Reply::Unknown)
        })
    });
    match r {
        Ok(Reply::Registers(regs)) => {
            push_array(out, regs.len());
            regs.iter().for_each(|&r| push_int(out, r.into()));
        }
        Ok(Reply::Decoded(s)) => push_bulk(out, s.as_bytes()),
        Ok(Reply::Encoding(e)) => push_simple(out, e.name()),
        Ok(Reply::Converted(c)) => push_int(out, i64::from(c)),
        Ok(Reply::Unknown) => {
            // Redis quotes the name as a C string, line breaks blanked.
            let name = sub.split(|&b| b == 0).next().unwrap_or(b"");
            let name = &name[..name.len().min(SUBCOMMAND_QUOTE_BYTES_MAX)];
            let mut m = b"ERR Unknown PFDEBUG subcommand '".to_vec();
            m.extend(name.iter().map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }));
            m.push(b'\'');
            push_error(out, &m);
        }
        Err(e) => e.reply(out),
    }
}
