//! Redis's `timeout` (CONFIG SET timeout N), black-box: a client idle
//! past it is closed; a client blocked in BLPOP and a subscriber are not;
//! an active client is not. Runs against amalgam and, in CI, against
//! redis-server 7.0 (`AMALGAM_TEST_RESP_ADDR`): Redis's rule. Puts the
//! timeout back to 0 when done.
mod common;
use common::resp::*;
use common::*;
use std::time::Duration;

/// Sets `timeout` back to 0 (never) when dropped.
struct Never(std::net::SocketAddr);

impl Drop for Never {
    fn drop(&mut self) {
        if let Ok(s) = std::net::TcpStream::connect(self.0) {
            let _ = Resp::from_stream(s).call(&["CONFIG", "SET", "timeout", "0"]);
        }
    }
}

#[test]
fn idle_clients_are_closed_but_not_blocked_ones_or_subscribers() {
    let Some(server) = resp_server() else { return };
    let mut ctl = Resp::new(&server);
    let _never = Never(server.resp_addr());
    let mut idle = Resp::new(&server);
    assert_eq!(idle.call(&["PING"]), "+PONG\r\n");
    let mut blocked = Resp::new(&server);
    blocked.send(&["BLPOP", "timeout:nothing-here", "0"]);
    let mut sub = Resp::new(&server);
    sub.send(&["SUBSCRIBE", "timeout:channel"]);
    assert!(sub.reply().contains("subscribe"));
    assert_eq!(ctl.call(&["CONFIG", "SET", "timeout", "1"]), "+OK\r\n");
    let got = call(&mut ctl, &["CONFIG", "GET", "timeout"]);
    assert_eq!(got.array()[1].bulk(), "1");
    // Redis closes a client idle more than 1 s at its next check (about
    // 2 s); the controller keeps talking, so it stays.
    for _ in 0..7 {
        std::thread::sleep(Duration::from_millis(500));
        assert_eq!(ctl.call(&["PING"]), "+PONG\r\n");
    }
    assert!(idle.closed(), "the idle client is closed");
    assert_eq!(call(&mut ctl, &["CONFIG", "SET", "timeout", "0"]), V::Simple("OK".into()));
    // The blocked client is still there: a push serves it.
    assert_eq!(as_int(&ctl.call(&["RPUSH", "timeout:nothing-here", "x"])), 1);
    let r = blocked.reply();
    assert!(r.contains("timeout:nothing-here") && r.contains('x'), "{r:?}");
    // So is the subscriber.
    assert_eq!(as_int(&ctl.call(&["PUBLISH", "timeout:channel", "hello"])), 1);
    assert!(sub.reply().contains("hello"));
}
