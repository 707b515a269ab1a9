//! Cache-mode measurements against any memcached-protocol server (issue 4
//! §4–§6): how many items a memory budget holds (`fill`), and how often a
//! GET misses under a skewed, self-filling request stream (`replay`).
//!
//! # What is measured
//! * **`fill`** (`cache/fill.rs`, issue 4 §4, MemC3 Table 3 "# items
//!   stored"): distinct items are SET until the server starts evicting,
//!   then every key written is read back. The answer is the number of items
//!   the server's budget holds, with the server's own `curr_items`,
//!   `bytes`, `limit_maxbytes` and its resident set size beside it.
//! * **`replay`** (`cache/replay.rs`, issue 4 §5, MemC3 §5.3 and Table 3
//!   "cache miss ratio"): a Zipf (θ = 0.99) stream of 95% GETs and 5% SETs
//!   over a fixed key space, each GET miss followed by a SET of its key (a
//!   look-aside cache refilled from its backing store); the miss ratio
//!   (missed GETs / GETs) after a warm-up, optionally with one-time scans of
//!   cold keys mixed in (scan resistance).
//!
//! # Why it is fair to both servers
//! Both tools are deterministic functions of their flags: the same key
//! set (`workload::key_of`: fixed-width lower-case hex ids), the same value
//! bytes (`workload::value_of(id, 0, …)`), the same item sizes, the same
//! order of requests, over one connection whose requests a server executes
//! in order. The scripts start both servers with the same `-m` and `-t`.
//! Nothing timed is reported as a result: counts of items and misses do not
//! depend on the machine's load. What the budget `-m` covers differs by
//! server (memcached: slab pages of items only, not its hash table or
//! connection buffers), which is why `fill` reports the resident set too.

pub mod fill;
pub mod replay;

use crate::net::{self, proto};
use serde_json::Value;
use std::path::PathBuf;

#[cfg(test)]
mod tests;

/// The flags `fill` and `replay` share: the server, the item sizes, the
/// output.
#[derive(clap::Args, Debug, Clone)]
pub struct Target {
    /// Server address.
    #[arg(long, default_value = "127.0.0.1:11211")]
    pub server: String,
    /// Key bytes (fixed-width lower-case hex of the key id).
    #[arg(long, default_value_t = 16)]
    pub key_bytes: usize,
    /// Value bytes.
    #[arg(long, default_value_t = 32)]
    pub value_bytes: usize,
    /// Server process whose resident set (VmRSS, VmHWM) is reported.
    #[arg(long)]
    pub pid: Option<u32>,
    /// Also write the result as one line of JSON to this file ("-": stdout).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Label carried into the report and the JSON (e.g. the server's name).
    #[arg(long)]
    pub label: Option<String>,
}

impl Target {
    /// Checks the key size.
    pub fn check(&self) -> Result<(), String> {
        if (1..=proto::KEY_BYTES_MAX).contains(&self.key_bytes) {
            Ok(())
        } else {
            Err(format!("--key-bytes must be 1..={}", proto::KEY_BYTES_MAX))
        }
    }

    /// Prints `result`'s human report and writes its JSON if asked to.
    pub fn report(&self, result: &Value, human: fn(&Value) -> String) -> Result<(), String> {
        print!("{}", human(result));
        match &self.json {
            Some(path) => net::write_json(path, result),
            None => Ok(()),
        }
    }
}

/// The server process's `VmRSS` and `VmHWM` (peak) in bytes, from
/// `/proc/PID/status`.
pub fn rss_of(pid: u32) -> Result<(u64, u64), String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .map_err(|e| format!("cannot read /proc/{pid}/status: {e}"))?;
    let field = |name| status_kib(&status, name).ok_or_else(|| format!("/proc/{pid}/status has no {name}"));
    Ok((field("VmRSS")? * 1024, field("VmHWM")? * 1024))
}

/// A `Name:   1234 kB` field of `/proc/PID/status`, in KiB.
pub fn status_kib(status: &str, name: &str) -> Option<u64> {
    status.lines().find_map(|l| {
        let rest = l.strip_prefix(name)?.strip_prefix(':')?;
        let mut parts = rest.split_whitespace();
        let n = parts.next()?.parse().ok()?;
        (parts.next() == Some("kB")).then_some(n)
    })
}
