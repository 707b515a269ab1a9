//! # amalgam-bench
//!
//! Benchmarks, never timed tests: the papers' workloads (DESIGN.md
//! § Benchmarks) run through two drivers.
//!
//! * **embedded** (`embedded.rs`, `peers.rs`): direct calls into
//!   `amalgam-engine` and, in the same run and behind one trait, the peer
//!   maps (dashmap, scc, papaya, moka, quick_cache, a sharded
//!   `Mutex<HashMap>`, a sharded `RwLock<hashbrown::HashMap>`, flurry), by default
//!   on Amalgam's hasher (foldhash) and presized, with `--peer-defaults`
//!   as their crates build them. Reports Mops/s per contender and thread
//!   count, Amalgam's ratio to the best peer, load rate and resident bytes
//!   per item.
//! * **net** (`net.rs`): closed-loop connections speaking memcached's text
//!   or meta protocol, or Redis's RESP (GET/SET, or with `--command` one of
//!   the collection commands of `net/command.rs`, over many keys or one
//!   `--hot-key`) to any server, with pipeline depth, multi-get size and
//!   HdrHistogram latencies; or open-loop at a fixed `--rate`, latency
//!   timed from each request's due time (coordinated omission corrected).
//! * **flows** (`flows.rs`): RESP flows the request/reply driver cannot
//!   send: consumer-group workers acking the id each XREADGROUP returned,
//!   tracked GETs with `invalidate` pushes mixed into the replies, SETs
//!   with keyspace notifications drained by pattern subscribers.
//! * **cache** (`cache.rs`): cache-mode measurements against any
//!   memcached-protocol server: items a memory budget holds (`fill`) and
//!   the miss ratio of a self-filling Zipf stream, with or without scans
//!   (`replay`).
//! * **plot** (`plot.rs`): SVG figures of `net` and `replay` results
//!   (latency percentile curves, latency against an open-loop rate,
//!   throughput by pipeline depth, miss ratio by cache size), from `net
//!   --plot DIR` or from JSON result files.
//! * **floor** (`floor.rs`): a GET-only server that does nothing but socket
//!   I/O in the server's event-loop shape; `net` against it measures what
//!   the kernel alone costs per request, the floor under any server.
//!
//! Key streams are generated before the timed loop (`workload.rs`).

pub mod cache;
pub mod embedded;
pub mod floor;
pub mod flows;
pub mod net;
pub mod peers;
pub mod plot;
pub mod workload;
