//! MEMORY USAGE, STATS, DOCTOR, MALLOC-STATS, PURGE and HELP.
//!
//! ## USAGE key [SAMPLES n]
//! The bytes the engine holds for the key (`Store::item_mem_bytes`): the
//! item's block — header, key and value rounded up to the pool's size
//! class, or to the segment's alignment in cache mode — plus, for a large
//! collection, its object's charge: the allocator bytes its structures
//! hold (capacities, not lengths) and its cell, the figure `-m` is
//! charged. A string or a compact collection is one block and nothing
//! else. The number is measured, not sampled: SAMPLES is parsed as Redis
//! parses it and changes nothing.
//!
//! It differs from Redis's number, which adds up `sizeof` of Redis's own
//! structures: its `robj` (16 B), the key's sds, the dictEntry (24 B)
//! and the value's allocations as jemalloc rounds them, estimating a
//! large collection from SAMPLES elements. Amalgam's item carries the key
//! and a header of a few bytes in place of robj, sds and dictEntry, and the
//! key's slot in the index (a share of a 64-byte bucket line, about 16
//! bytes at store mode's mean load) is not counted. So the same string
//! reads some tens of bytes lower here, and a large collection reads
//! what it really holds rather than an extrapolation (issue 19's memory
//! comparison measures both).
//!
//! ## The others
//! STATS answers the subset of Redis's fields the engine knows (the index
//! as the main hashtable's overhead, items and their bytes as the
//! dataset), with Redis's names; the fields about Redis's allocator, RSS,
//! replication and scripting are left out. DOCTOR has no detectors: it
//! answers Redis's text for an instance under 5 MB, else Redis's "no
//! issue" text. MALLOC-STATS answers Redis's text for an allocator
//! without statistics (Amalgam's items live in its own pools: INFO and
//! STATS report them); PURGE answers OK and frees nothing (pool chunks
//! return to the kernel only when the store is dropped: engine pool.rs).

use super::table::Cmd;
use super::{help, sub};
use super::{int_arg, is, null, Arg, Ctx};
use amalgam_protocol::resp::{err, push_bulk, push_error, push_int, push_map, push_simple, push_verbatim};

/// Below this much used memory Redis's MEMORY DOCTOR declines to judge
/// (its `empty` check: `zmalloc_used_memory() < 1024*1024*5`).
const DOCTOR_EMPTY_BYTES_MAX: u64 = 5 << 20;

const DOCTOR_EMPTY: &str =
    "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be \
                            used in these conditions. Please, leave for your mission on Earth and fill it with some \
                            data. The new Sam and I will be back to our programming as soon as I finished rebooting.\n";
const DOCTOR_FINE: &str =
    "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n";
/// Redis's answer when its allocator keeps no statistics.
const NO_MALLOC_STATS: &str = "Stats not supported for the current allocator";

pub fn run(ctx: &mut Ctx<'_>, _cmd: Cmd, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let Some(name) = sub(Cmd::Memory, args, out) else { return };
    match name {
        "usage" => usage(ctx, args, out),
        "stats" => stats(ctx, out),
        "doctor" => {
            let used = used_bytes(ctx);
            let text = if used < DOCTOR_EMPTY_BYTES_MAX { DOCTOR_EMPTY } else { DOCTOR_FINE };
            push_verbatim(out, ctx.proto(), b"txt", text.as_bytes());
        }
        "malloc-stats" => push_verbatim(out, ctx.proto(), b"txt", NO_MALLOC_STATS.as_bytes()),
        "purge" => push_simple(out, "OK"),
        _ => help(
            &[
                "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "DOCTOR",
                "    Return memory problems reports.",
                "MALLOC-STATS",
                "    Return internal statistics report from the memory allocator.",
                "PURGE",
                "    Attempt to purge dirty pages for reclamation by the allocator.",
                "STATS",
                "    Return information about the memory usage of the server.",
                "USAGE <key> [SAMPLES <count>]",
                "    Return memory in bytes used by <key> and its value. Nested values are",
                "    sampled up to <count> times (default: 5, 0 means sample all).",
                "HELP",
                "    Prints this help.",
            ],
            out,
        ),
    }
}

/// Items, their objects and the index: INFO's `used_memory`.
fn used_bytes(ctx: &Ctx<'_>) -> u64 {
    let s = ctx.ks.store.stats();
    s.item_bytes + s.index_bytes
}

/// MEMORY USAGE key [SAMPLES n], options checked first as Redis does.
fn usage(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let mut j = 3;
    // Bounded: j advances by 2 each round.
    while j < args.len() {
        if !(is(&args[j], "samples") && j + 1 < args.len()) {
            return push_error(out, err::SYNTAX.as_bytes());
        }
        match int_arg(&args[j + 1]) {
            None => return push_error(out, err::NOT_INTEGER.as_bytes()),
            Some(n) if n < 0 => return push_error(out, err::SYNTAX.as_bytes()),
            Some(_) => {}
        }
        j += 2;
    }
    // Not a use of the key (Redis reads its dict without a lookup).
    let store = &ctx.ks.store;
    match store.peek(&args[2], |it| store.item_mem_bytes(&it)) {
        Some(n) => push_int(out, n as i64),
        None => null(ctx, out),
    }
}

/// MEMORY STATS: the fields the engine can fill, by Redis's names.
fn stats(ctx: &Ctx<'_>, out: &mut Vec<u8>) {
    let s = ctx.ks.store.stats();
    let proto = ctx.proto();
    let total = s.item_bytes + s.index_bytes;
    let per_key = total.checked_div(s.items).unwrap_or(0);
    let field = |out: &mut Vec<u8>, name: &str, v: u64| {
        push_bulk(out, name.as_bytes());
        push_int(out, v as i64);
    };
    push_map(out, 6, proto);
    field(out, "total.allocated", total);
    push_bulk(out, b"db.0");
    push_map(out, 2, proto);
    field(out, "overhead.hashtable.main", s.index_bytes);
    field(out, "overhead.hashtable.expires", 0);
    field(out, "overhead.total", s.index_bytes);
    field(out, "keys.count", s.items);
    field(out, "keys.bytes-per-key", per_key);
    field(out, "dataset.bytes", s.item_bytes);
}
