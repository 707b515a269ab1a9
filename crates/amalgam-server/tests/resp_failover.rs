//! FAILOVER (issue 35 §4): a primary hands over to its replica as Redis
//! 7.0 does — the replica is promoted, the old primary follows it, the
//! data and the writes after the switch flow the new way — and FAILOVER's
//! errors. Two servers of the test's own: amalgams, or in CI's Redis pass
//! (every `resp_*` file) two redis-servers with the same options, which
//! proves the expectations are Redis's.
mod common;
use common::own::{own_server, Own};
use common::resp::*;
use common::*;
use std::net::TcpStream;
use std::time::Duration;

fn connect(own: &Own) -> Resp {
    Resp::from_stream(TcpStream::connect(own.addr()).expect("connect"))
}

/// ROLE's first element.
fn role(c: &mut Resp) -> String {
    let r = c.call(&["ROLE"]);
    r.lines().nth(2).unwrap_or_default().to_string()
}

/// A primary and a replica of it, streaming.
fn pair() -> Option<(Own, Own)> {
    let primary = own_server(&[])?;
    let port = primary.addr().port().to_string();
    let replica = own_server(&["--replicaof", "127.0.0.1", &port])?;
    let mut r = connect(&replica);
    eventually("the replica streams", Duration::from_secs(20), || {
        r.info_field("replication", "master_link_status").as_deref() == Some("up")
    });
    Some((primary, replica))
}

#[test]
fn failover_promotes_the_replica_and_the_primary_follows_it() {
    let Some((a, b)) = pair() else { return };
    let (mut ca, mut cb) = (connect(&a), connect(&b));
    assert_eq!(ca.call(&["SET", "before", "1"]), "+OK\r\n");
    assert_eq!(ca.info_field("replication", "master_failover_state").as_deref(), Some("no-failover"));
    assert_eq!(ca.call(&["FAILOVER"]), "+OK\r\n");
    eventually("the roles swap", Duration::from_secs(20), || role(&mut cb) == "master" && role(&mut ca) == "slave");
    eventually("the failover ends", Duration::from_secs(20), || {
        ca.info_field("replication", "master_failover_state").as_deref() == Some("no-failover")
    });
    assert_eq!(cb.call(&["GET", "before"]), bulk("1"));
    assert_eq!(cb.call(&["SET", "after", "2"]), "+OK\r\n");
    eventually("the new primary's write reaches the old one", Duration::from_secs(20), || {
        ca.call(&["GET", "after"]) == bulk("2")
    });
    assert_eq!(ca.call(&["SET", "x", "y"]), "-READONLY You can't write against a read only replica.\r\n");
    // The new replica cannot fail over; the new primary can name it.
    assert_eq!(ca.call(&["FAILOVER"]), "-ERR FAILOVER is not valid when server is a replica.\r\n");
}

#[test]
fn failover_errors() {
    let Some(solo) = own_server(&[]) else { return };
    let mut c = connect(&solo);
    assert_eq!(c.call(&["FAILOVER"]), "-ERR FAILOVER requires connected replicas.\r\n");
    assert_eq!(c.call(&["FAILOVER", "ABORT"]), "-ERR No failover in progress.\r\n");
    assert_eq!(c.call(&["FAILOVER", "TIMEOUT", "0"]), "-ERR FAILOVER timeout must be greater than 0\r\n");
    assert_eq!(c.call(&["FAILOVER", "TIMEOUT", "x"]), "-ERR value is not an integer or out of range\r\n");
    assert_eq!(c.call(&["FAILOVER", "BOGUS"]), "-ERR syntax error\r\n");
    assert_eq!(c.call(&["FAILOVER", "TO", "127.0.0.1"]), "-ERR syntax error\r\n");
    let Some((a, _b)) = pair() else { return };
    let mut ca = connect(&a);
    assert_eq!(
        ca.call(&["FAILOVER", "FORCE"]),
        "-ERR FAILOVER with force option requires both a timeout and target HOST and IP.\r\n"
    );
    assert_eq!(
        ca.call(&["FAILOVER", "TO", "127.0.0.1", "1"]),
        "-ERR FAILOVER target HOST and PORT is not a replica.\r\n"
    );
}

/// A paused replica stops applying its primary's stream until the pause
/// ends (pause.tcl's "Test when replica paused, offset would not grow").
#[test]
fn a_paused_replica_holds_its_primarys_stream() {
    let Some((a, b)) = pair() else { return };
    let (mut ca, mut cb) = (connect(&a), connect(&b));
    assert_eq!(cb.call(&["CLIENT", "PAUSE", "100000", "WRITE"]), "+OK\r\n");
    assert_eq!(ca.call(&["SET", "held", "1"]), "+OK\r\n");
    // Past the stream's usual delay (a wait, not a timing assertion: the
    // value must not arrive however long this is).
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(cb.call(&["GET", "held"]), "$-1\r\n", "the paused replica applied its primary's write");
    assert_eq!(cb.call(&["CLIENT", "UNPAUSE"]), "+OK\r\n");
    eventually("the write arrives after the pause", Duration::from_secs(20), || cb.call(&["GET", "held"]) == bulk("1"));
}
