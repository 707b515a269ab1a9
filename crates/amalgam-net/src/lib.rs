//! # amalgam-net
//!
//! The networking layer, below every front end: what a connection's turn
//! may do (`turn.rs`: its read, parse and output bounds, and where a round
//! stops for a client past its output limit), the request path's clock
//! (`ticks.rs`), what a connection needs of its socket (`socket.rs`), TLS
//! over it (`tls.rs`, rustls), the output limits by client class
//! (`obuf.rs`: Redis's `client-output-buffer-limit`), and the registry of
//! RESP connections other threads may see (`clients.rs`:
//! CLIENT LIST, KILL, UNBLOCK and MONITOR reach a connection through its
//! worker's inboxes). It knows no command and parses no protocol.
//!
//! ## Where it is going (docs/architecture.md)
//! The worker's event loop and its connections are still the server's
//! (`worker.rs`), because the loop calls the memcached and RESP
//! front ends, replication's hand-off and the blocking and Pub/Sub
//! registries by name. They move here once the loop is generic over a
//! front-end trait (a connection's `process`, its wake-ups, its close);
//! this crate is the floor they will stand on, and what the front ends
//! share of it already.

#![forbid(unsafe_code)]

pub mod clients;
pub mod obuf;
pub mod socket;
pub mod ticks;
pub mod tls;
pub mod turn;
