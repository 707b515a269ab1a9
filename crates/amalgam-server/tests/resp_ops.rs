//! Operations on the RESP port that Redis 7.0 shares: CONFIG GET/SET
//! loglevel, CONFIG REWRITE without a config file, SHUTDOWN's argument
//! checks and ABORT, INFO server's build commit. Runs against amalgam and,
//! in CI, against redis-server 7.0 (`AMALGAM_TEST_RESP_ADDR`). What only
//! amalgam does (config files, restarts) is in `ops.rs`.
mod common;
use common::resp::*;
use common::*;

#[test]
fn loglevel_is_read_and_changed_at_run_time() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let was = c.config_get("loglevel");
    assert!(["debug", "verbose", "notice", "warning"].contains(&was.as_str()), "{was}");
    assert_eq!(c.call(&["CONFIG", "SET", "loglevel", "WARNING"]), OK);
    assert_eq!(c.config_get("loglevel"), "warning");
    assert_eq!(c.call(&["CONFIG", "SET", "loglevel", "verbose"]), OK);
    assert_eq!(c.config_get("loglevel"), "verbose");
    assert_eq!(
        c.call(&["CONFIG", "SET", "loglevel", "bogus"]),
        error(
            "ERR CONFIG SET failed (possibly related to argument 'loglevel') - argument(s) must be one of the \
             following: debug, verbose, notice, warning"
        )
    );
    assert_eq!(c.config_get("loglevel"), "verbose", "a refused value changes nothing");
    assert_eq!(c.call(&["CONFIG", "SET", "loglevel", &was]), OK);
}

#[test]
fn info_server_names_the_build_commit() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let info = c.call(&["INFO", "server"]);
    let sha = info
        .lines()
        .find_map(|l| l.strip_prefix("redis_git_sha1:"))
        .unwrap_or_else(|| panic!("no redis_git_sha1 in {info}"));
    assert!(sha.len() == 8 && sha.bytes().all(|b| b.is_ascii_hexdigit()), "{sha:?}");
    if !server.is_redis {
        assert!(info.contains(&format!("amalgam_git_sha1:{sha}\r\n")), "{info}");
    }
}

#[test]
fn config_rewrite_without_a_config_file() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    assert_eq!(c.call(&["CONFIG", "REWRITE"]), error("ERR The server is running without a config file"));
    assert_eq!(
        c.call(&["CONFIG", "REWRITE", "x"]),
        error("ERR wrong number of arguments for 'config|rewrite' command")
    );
}

#[test]
fn shutdown_refuses_bad_arguments_and_abort_without_a_shutdown() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    assert_eq!(c.call(&["SHUTDOWN", "bogus"]), error("ERR syntax error"));
    assert_eq!(c.call(&["SHUTDOWN", "NOSAVE", "SAVE"]), error("ERR syntax error"));
    assert_eq!(c.call(&["SHUTDOWN", "ABORT", "NOW"]), error("ERR syntax error"));
    assert_eq!(c.call(&["SHUTDOWN", "ABORT"]), error("ERR No shutdown in progress."));
    assert_eq!(c.call(&["PING"]), "+PONG\r\n", "the server still serves");
}
