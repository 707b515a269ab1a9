//! DEBUG (`resp/debug.rs`), black-box: refused by default with Redis's
//! text (this part runs against redis-server too, whose default is the
//! same), DEBUG SLEEP, and — amalgam only — a panic in one command's
//! handler (DEBUG PANIC) costs that connection alone: the worker, its
//! other connections and new ones are served on.
mod common;
use common::resp::*;
use common::*;

#[test]
fn debug_is_refused_by_default() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let want = error(
        "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it \
         from a local connection, otherwise you need to set this option in the configuration file, and then \
         restart the server.",
    );
    assert_eq!(c.call(&["DEBUG", "SLEEP", "0"]), want);
    assert_eq!(c.call(&["DEBUG", "PANIC"]), want);
    assert_eq!(c.call(&["PING"]), "+PONG\r\n");
}

#[test]
fn a_panicking_handler_costs_its_connection_only() {
    // One worker: the panicking connection and the others share it.
    let Some(server) = resp_private(&["-t", "1", "--enable-debug-command", "local"]) else { return };
    let mut other = Resp::new(&server);
    assert_eq!(other.call(&["SET", "k", "v"]), "+OK\r\n");
    assert_eq!(other.call(&["DEBUG", "SLEEP", "0.01"]), "+OK\r\n");
    let mut victim = Resp::new(&server);
    victim.send(&["DEBUG", "PANIC"]);
    assert!(victim.closed(), "the panicking connection is closed");
    assert_eq!(other.call(&["GET", "k"]), bulk("v"), "the worker serves on");
    let mut fresh = Resp::new(&server);
    assert_eq!(fresh.call(&["GET", "k"]), bulk("v"), "and takes new connections");
    assert_eq!(
        fresh.call(&["DEBUG", "NOSUCH"]),
        error("ERR unknown subcommand or wrong number of arguments for 'NOSUCH'. Try DEBUG HELP.")
    );
}
