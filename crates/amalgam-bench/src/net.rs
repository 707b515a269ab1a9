//! The network driver: closed-loop connections to any memcached server.
//! (Being written.)

/// Flags of `amalgam-bench net`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs the network driver.
pub fn run(_args: &Args) -> Result<(), String> {
    Err("network driver not built yet".into())
}
