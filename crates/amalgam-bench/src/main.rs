//! `amalgam-bench`: see the crate documentation in `lib.rs`.
use amalgam_bench::{embedded, net};
use clap::Parser;

#[derive(Parser, Debug)]
#[command(name = "amalgam-bench", about = "Amalgam's benchmarks: the papers' workloads, embedded and over the network")]
enum Cli {
    /// Direct engine calls, side by side with peer maps in one process.
    Embedded(embedded::Args),
    /// Closed-loop connections to a memcached-protocol server.
    Net(net::Args),
}

fn main() {
    let result = match Cli::parse() {
        Cli::Embedded(a) => embedded::run(&a),
        Cli::Net(a) => net::run(&a),
    };
    if let Err(e) = result {
        eprintln!("amalgam-bench: {e}");
        std::process::exit(1);
    }
}
