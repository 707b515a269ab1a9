//! `amalgam-bench`: see the crate documentation in `lib.rs`.
use amalgam_bench::{cache, embedded, floor, flows, net, plot};
use clap::Parser;

#[derive(Parser, Debug)]
#[command(name = "amalgam-bench", about = "Amalgam's benchmarks: the papers' workloads, embedded and over the network")]
enum Cli {
    /// Direct engine calls, side by side with peer maps in one process.
    Embedded(embedded::Args),
    /// Connections to a memcached-protocol or RESP server: closed loop, or open loop at --rate.
    Net(net::Args),
    /// RESP flows: consumer-group XREADGROUP+XACK, tracked GETs with invalidations, keyspace notifications.
    Flows(flows::Args),
    /// SET distinct items until the server evicts (or refuses); count what it holds.
    Fill(cache::fill::Args),
    /// A self-filling Zipf GET/SET stream (MemC3 §5.3); the miss ratio.
    Replay(cache::replay::Args),
    /// A GET/SET server doing nothing but socket I/O: the network stack's floor.
    Floor(floor::Args),
    /// SVG plots of `net` / `replay` JSON results (one per line).
    Plot(plot::Args),
}

fn main() {
    let result = match Cli::parse() {
        Cli::Embedded(a) => embedded::run(&a),
        Cli::Net(a) => net::run(&a),
        Cli::Flows(a) => flows::run(&a),
        Cli::Fill(a) => cache::fill::run(&a),
        Cli::Replay(a) => cache::replay::run(&a),
        Cli::Floor(a) => floor::run(&a),
        Cli::Plot(a) => plot::run(&a),
    };
    if let Err(e) = result {
        eprintln!("amalgam-bench: {e}");
        std::process::exit(1);
    }
}
