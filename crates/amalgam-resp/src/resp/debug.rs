//! DEBUG, as far as operators and tests need it: `DEBUG SLEEP seconds`
//! (holds the worker, as Redis's holds its one thread: what LATENCY and
//! the slow log are tried with), `DEBUG PANIC` and `DEBUG HELP`, behind
//! Redis's `enable-debug-command` (`no` by default; `yes`; `local` for
//! loopback clients only), with Redis's refusal text.
//!
//! `DEBUG STALL <event> <milliseconds>` is Amalgam's own (Redis has no
//! such subcommand): it holds every step of one of the engine's or
//! persistence's LATENCY events (`latency.rs`, `STALL_EVENTS`:
//! `expire-cycle`, `eviction-cycle`, `snapshot-slice`, ...) that long, on
//! the thread doing the step, while the latency monitor is on (0 stops
//! it; at most [`STALL_MS_MAX`]). The steps' natural length is
//! microseconds, so this is how a test makes LATENCY see one.
//!
//! `DEBUG PANIC` differs from Redis's on purpose: Redis's stops the
//! server; here it panics in the command's handler, and the worker
//! catches the panic at the connection's turn (`worker.rs`): that one
//! connection is closed and the error logged, and the worker, its other
//! connections and the server go on. It is how the tests prove that a
//! bug in one command's handler costs one client, not a worker.

use super::{Arg, Ctx};
use amalgam_protocol::resp::{push_error, push_simple};

/// The longest DEBUG SLEEP (seconds): a typo does not hold a worker for
/// hours.
pub const SLEEP_SECONDS_MAX: f64 = 60.0;

/// The longest DEBUG STALL hold (milliseconds): each step held longer
/// would stop its thread (a worker, for a writer's eviction or a commit)
/// for too long to be a test's.
pub const STALL_MS_MAX: u64 = 10_000;

const ERR_NOT_ALLOWED: &str = "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", \
     you can run it from a local connection, otherwise you need to set this option in the configuration file, and \
     then restart the server.";

/// True if this client may run DEBUG.
fn allowed(ctx: &Ctx<'_>) -> bool {
    match ctx.shared.args.enable_debug_command.as_str() {
        "yes" => true,
        "local" => {
            let a = &ctx.session.client.addr;
            a.starts_with("127.") || a.starts_with("[::1]")
        }
        _ => false,
    }
}

pub(crate) fn debug(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    if !allowed(ctx) {
        return push_error(out, ERR_NOT_ALLOWED.as_bytes());
    }
    let sub = String::from_utf8_lossy(&args[1]).to_ascii_lowercase();
    match (sub.as_str(), args.len()) {
        ("sleep", 3) => {
            let secs = std::str::from_utf8(&args[2]).ok().and_then(|s| s.parse::<f64>().ok());
            let Some(secs) = secs.filter(|s| s.is_finite()) else {
                return push_error(out, b"ERR value is not a valid float");
            };
            std::thread::sleep(std::time::Duration::from_secs_f64(secs.clamp(0.0, SLEEP_SECONDS_MAX)));
            push_simple(out, "OK");
        }
        ("stall", 4) => {
            let ms = std::str::from_utf8(&args[3]).ok().and_then(|s| s.parse::<u64>().ok());
            let Some(ms) = ms.filter(|&ms| ms <= STALL_MS_MAX) else {
                let m = format!("ERR milliseconds must be an integer from 0 to {STALL_MS_MAX}");
                return push_error(out, m.as_bytes());
            };
            if !ctx.shared.latency.set_hold(&args[2][..], ms) {
                let m = format!(
                    "ERR unknown event '{}': one of {}",
                    String::from_utf8_lossy(&args[2]),
                    super::latency::STALL_EVENTS.join(", ")
                );
                return push_error(out, m.as_bytes());
            }
            push_simple(out, "OK");
        }
        ("panic", 2) => panic!("DEBUG PANIC from client {}", ctx.session.client.addr),
        ("help", 2) => super::help(
            &[
                "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "PANIC",
                "    Panic in this command's handler: Amalgam closes this connection and goes on.",
                "SLEEP <seconds>",
                "    Stop the server (this worker) for <seconds>. Decimals allowed.",
                "STALL <event> <milliseconds>",
                "    Amalgam only: hold each step of a LATENCY event of the engine or persistence (expire-cycle,",
                "    eviction-cycle, snapshot-slice, ...) that long while the latency monitor is on; 0 stops.",
                "HELP",
                "    Prints this help.",
            ],
            out,
        ),
        _ => {
            let m = format!(
                "ERR unknown subcommand or wrong number of arguments for '{}'. Try DEBUG HELP.",
                String::from_utf8_lossy(&args[1])
            );
            push_error(out, m.as_bytes());
        }
    }
}
