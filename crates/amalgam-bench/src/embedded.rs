//! The embedded driver: the workloads through direct calls into the engine
//! and the peer maps. (Being written.)

/// Flags of `amalgam-bench embedded`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs the embedded driver.
pub fn run(_args: &Args) -> Result<(), String> {
    Err("embedded driver not built yet".into())
}
