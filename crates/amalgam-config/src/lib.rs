//! # amalgam-config
//!
//! How an Amalgam server is configured before it starts, and where it
//! writes what it has to say: the command line and the server's log.
//!
//! ## Design
//! * **The command line** (`config.rs`): memcached's flags with
//!   memcached's defaults (`-p`, `-m`, `-c`, `-t`, `-I`, `-o …`, and the
//!   memcached flags Amalgam accepts and ignores, named in
//!   [`config::EXTENDED_IGNORED`]) and Redis's long options (`--port`,
//!   `--maxmemory`, `--appendonly`-style persistence, `--tls-*`,
//!   `--replicaof` …), parsed by clap into one [`config::Args`]. Every
//!   limit is a named constant with its bounds beside it, checked here at
//!   start so a bad command line stops with memcached's usage exit
//!   status ([`config::EXIT_USAGE`]) and a line naming the flag. The
//!   config file (Redis's `redis.conf` form) is read by the server's
//!   `conffile.rs` into the same `Args`, and what may change at run time
//!   (CONFIG SET) is the server's `settings.rs`: both reach the running
//!   server, this crate does not.
//! * **The log** (`logging.rs`): Redis's log line format and levels
//!   through the `log` facade, one relaxed load per disabled call site;
//!   and the eviction watch, the once-a-second line when the cache
//!   starts evicting.
//! * **The version** ([`GIT_SHA1`], [`config::VERSION_LONG`]): the
//!   commit this build came from, recorded by `build.rs`.
//!
//! ## Where it sits
//! Above the engine, persistence, types and networking crates (whose
//! configuration types the arguments name: the eviction policy, the
//! fsync policy, the collection thresholds, the output limits' memory
//! values); below the server, which is the only crate that reads it.
//! It knows no protocol and no connection.

#![forbid(unsafe_code)]

pub mod config;
pub mod logging;

/// The commit this binary was built from (`build.rs`): 8 hex digits,
/// `00000000` when built outside a git checkout.
pub const GIT_SHA1: &str = env!("AMALGAM_GIT_SHA1");
