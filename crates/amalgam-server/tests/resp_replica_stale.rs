//! `replica-serve-stale-data no` (issue 35 §4): a replica whose link to
//! its primary is down answers only the commands Redis flags `stale`
//! (INFO, CONFIG, ECHO, MULTI, EXEC of such commands …) and refuses the
//! rest with MASTERDOWN, writes first with READONLY; a transaction that
//! queued a refused command aborts; `yes` (CONFIG SET) serves again. The
//! replica's primary is a port nothing listens on, so the link stays
//! down. A server of the test's own: an amalgam, or a redis-server with
//! the same options in CI's Redis pass (every `resp_*` file), which
//! proves these are Redis's answers.
mod common;
use common::own::own_server;
use common::resp::*;
use std::net::TcpStream;

const MASTERDOWN: &str = "-MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.\r\n";

#[test]
fn a_replica_with_its_link_down_refuses_stale_reads() {
    // Port 1: nothing listens there, so the link never comes up.
    let args = ["--replicaof", "127.0.0.1", "1", "--replica-serve-stale-data", "no"];
    let Some(own) = own_server(&args) else { return };
    let mut c = Resp::from_stream(TcpStream::connect(own.addr()).expect("connect"));
    assert_eq!(c.call(&["GET", "k"]), MASTERDOWN);
    assert_eq!(c.call(&["MGET", "a", "b"]), MASTERDOWN);
    assert_eq!(c.call(&["PING"]), MASTERDOWN);
    assert_eq!(c.call(&["DBSIZE"]), MASTERDOWN);
    assert_eq!(c.call(&["SET", "k", "v"]), "-READONLY You can't write against a read only replica.\r\n");
    assert_eq!(c.call(&["ECHO", "x"]), bulk("x"));
    assert!(c.call(&["INFO", "replication"]).contains("master_link_status:down"));
    assert_eq!(
        c.call(&["CONFIG", "GET", "replica-serve-stale-data"]),
        "*2\r\n$24\r\nreplica-serve-stale-data\r\n$2\r\nno\r\n"
    );
    // A transaction of stale commands runs; one that queued a refused
    // command aborts.
    assert_eq!(c.call(&["MULTI"]), "+OK\r\n");
    assert_eq!(c.call(&["ECHO", "y"]), "+QUEUED\r\n");
    assert_eq!(c.call(&["EXEC"]), format!("*1\r\n{}", bulk("y")));
    assert_eq!(c.call(&["MULTI"]), "+OK\r\n");
    assert_eq!(c.call(&["GET", "k"]), MASTERDOWN);
    assert_eq!(c.call(&["EXEC"]), "-EXECABORT Transaction discarded because of previous errors.\r\n");
    // Served again once allowed.
    assert_eq!(c.call(&["CONFIG", "SET", "replica-serve-stale-data", "yes"]), "+OK\r\n");
    assert_eq!(c.call(&["GET", "k"]), "$-1\r\n");
    assert_eq!(c.call(&["PING"]), "+PONG\r\n");
}
