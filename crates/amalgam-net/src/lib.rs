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
//! worker's inboxes), and the event loop itself. It knows no command and
//! parses no protocol.
//!
//! ## The event loop
//! The acceptor (`accept.rs`) deals connections to the workers; a worker
//! (`worker.rs`) is an epoll loop giving each ready connection a bounded
//! turn (`conn.rs`: flush, parse and execute, read; repeat). What a
//! connection does with its bytes, and what other threads ask of it, is
//! its front end's: the loop is generic over [`front::FrontEnd`], which
//! the server implements once over both ports (its `front.rs`), and
//! touches of the server only the narrow [`front::Env`] it is given. The
//! loop is instantiated once, so the request path costs what the loop
//! written against the server by name did
//! (docs/bench-log/2026-12-07-event-loop.md).

#![forbid(unsafe_code)]

pub mod accept;
pub mod clients;
pub mod conn;
pub mod front;
pub mod obuf;
pub mod socket;
pub mod ticks;
pub mod tls;
pub mod turn;
pub mod worker;
