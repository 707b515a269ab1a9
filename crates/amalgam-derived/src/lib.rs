//! # amalgam-derived
//!
//! The commands that work over other types' values, as Redis defines
//! them: geo over sorted sets (a member's score is its 52-bit geohash),
//! HyperLogLog over strings (a HyperLogLog is a string value in Redis's
//! exact `HYLL` representation), and SORT over lists, sets and sorted
//! sets (with BY and GET patterns that read strings and hashes). Each is
//! a thin adapter: the arithmetic lives in `amalgam-types` (`geo`, `hll`),
//! the values' reads and writes in `amalgam-commands` (`typed`, `zset`,
//! `strings`), and their rows in its command table.
//!
//! ## Where it stands (docs/architecture.md)
//! ```text
//!   amalgam-server     the RESP front end's `execute` calls `run` here;
//!        │             MULTI and scripts ask SORT which keys its patterns name
//!        ▼
//!   amalgam-derived    geo.rs  hll.rs  sort.rs
//!        │
//!        ▼
//!   amalgam-commands   Ctx, the table's rows, typed reads and writes, zset's
//!                      paths, keyspace notifications
//! ```
//! They left `amalgam-commands` (2026-12-07) when streams brought that
//! crate to its 15,000-line bound: the three files use the families there
//! and nothing uses them back.
//!
//! ## Files (one noun each)
//! | file | what |
//! |---|---|
//! | `geo.rs` | GEOADD GEODIST GEOHASH GEOPOS GEORADIUS… GEOSEARCH(STORE), over sorted sets (the geometry: amalgam-types `geo`) |
//! | `hll.rs` | PFADD PFCOUNT PFMERGE PFDEBUG PFSELFTEST (the representation: amalgam-types `hll`) |
//! | `sort.rs` | SORT SORT_RO (BY and GET patterns, STORE) |

#![forbid(unsafe_code)]

pub mod geo;
pub mod hll;
pub mod sort;
