//! # amalgam-metrics
//!
//! The server's figures, kept apart from what serves requests: what
//! `INFO commandstats`, `INFO latencystats`, `INFO errorstats`, `SLOWLOG`,
//! `LATENCY` and `/metrics` report, and the per-worker counters behind
//! memcached's `stats`. No socket, no session: the front ends record into
//! these on the request path (each worker into its own cells, no shared
//! write) and the commands that report read them merged.
//!
//! ## Where it stands (docs/architecture.md)
//! ```text
//!   amalgam-server    the RESP front end records and reports (INFO, SLOWLOG,
//!        │            LATENCY, CONFIG RESETSTAT, /metrics)
//!        ▼
//!   amalgam-metrics   workers.rs  cmdstats.rs  errorstats.rs  latency.rs
//!        │
//!        ▼
//!   amalgam-commands (the command table: what a row is called) · amalgam-net
//!   (the client registry: SLOWLOG's client) · amalgam-engine ·
//!   amalgam-persist (the stalls the latency monitor names)
//! ```
//!
//! ## Files (one noun each)
//! | file | what |
//! |---|---|
//! | `workers.rs` | one worker's counters: memcached's operation counters, RESP's per-command and per-error figures |
//! | `cmdstats.rs` | per-command calls, time and histograms (INFO commandstats / latencystats), and the slow log |
//! | `errorstats.rs` | error replies by code (INFO errorstats) |
//! | `process.rs` | the process's resident set, from the kernel (INFO's `used_memory_rss`) |
//! | `latency.rs` | the latency monitor: events, samples, LATENCY GRAPH's sparkline and DOCTOR's report (the LATENCY command itself is the RESP front end's) |
//!
//! Each file's own notes say how it is recorded and what it costs.

#![forbid(unsafe_code)]

pub mod cmdstats;
pub mod errorstats;
pub mod latency;
pub mod process;
pub mod workers;
