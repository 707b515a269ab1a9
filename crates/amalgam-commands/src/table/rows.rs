//! The rows of the command table (`table.rs` says what a row holds), one
//! file by family in `rows/`, named as the family's file: a family's
//! commands are described beside each other, and a new family adds its
//! file here. [`COMMANDS`] puts them together at compile time, the string
//! family first: its first rows are the front rows `lookup` compares one
//! by one (GET, SET, MGET, MSET).

use super::{Cmd, Spec};

mod acl;
mod bits;
mod blocking;
mod cluster;
mod dump;
mod geo;
mod hash;
mod hll;
mod keys;
mod keyspace;
mod lcs;
mod list;
mod memory;
mod multi;
mod object;
mod pubsub;
mod repl;
mod scripting;
mod server;
mod set;
mod sort;
mod stream;
mod strings;
mod zset;

/// The families' rows, in [`COMMANDS`]'s order.
const FAMILIES: &[&[Spec]] = &[
    strings::ROWS,
    keys::ROWS,
    server::ROWS,
    bits::ROWS,
    hll::ROWS,
    object::ROWS,
    lcs::ROWS,
    keyspace::ROWS,
    dump::ROWS,
    memory::ROWS,
    hash::ROWS,
    list::ROWS,
    blocking::ROWS,
    set::ROWS,
    zset::ROWS,
    sort::ROWS,
    geo::ROWS,
    stream::ROWS,
    multi::ROWS,
    acl::ROWS,
    pubsub::ROWS,
    repl::ROWS,
    scripting::ROWS,
    cluster::ROWS,
];

/// How many rows the table has.
pub const ROWS_TOTAL: usize = rows_total(FAMILIES);

/// Every command, the string family's first.
pub static COMMANDS: [Spec; ROWS_TOTAL] = concat(FAMILIES);

// The front rows are the string path's (`table.rs`, `FRONT_ROWS`).
const _: () = assert!(
    matches!(strings::ROWS[0].cmd, Cmd::Get)
        && matches!(strings::ROWS[1].cmd, Cmd::Set)
        && matches!(strings::ROWS[2].cmd, Cmd::Mget)
        && matches!(strings::ROWS[3].cmd, Cmd::Mset)
);

const fn rows_total(families: &[&[Spec]]) -> usize {
    let mut n = 0;
    let mut f = 0;
    while f < families.len() {
        n += families[f].len();
        f += 1;
    }
    n
}

/// The families' rows one after another (bounded: `N` rows in all).
const fn concat<const N: usize>(families: &[&[Spec]]) -> [Spec; N] {
    let mut out = [families[0][0]; N];
    let mut n = 0;
    let mut f = 0;
    while f < families.len() {
        let mut i = 0;
        while i < families[f].len() {
            out[n] = families[f][i];
            n += 1;
            i += 1;
        }
        f += 1;
    }
    assert!(n == N);
    out
}
