//! A primary's side: a replica that said PSYNC is served on a sender
//! thread of its own (the full sync, then the backlog) and an ack reader.

use crate::{
    lock, unix_now, Host, Peer, Psync, FULL_SYNC_CPU_PERCENT, HANDSHAKE_LINE_BYTES_MAX, REPL_PING_EVERY,
    SENDER_POLL_SLEEP, SENDER_POLL_WINDOW, SENDER_WAIT,
};
use amalgam_persist::repl::{self as stream, Attach};
use std::io::{Read, Write};
use std::net::{IpAddr, Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The primary side: `sock` said PSYNC (`req`); serves it on threads of
/// its own until it leaves. `pending`: bytes it sent after PSYNC.
/// `client`: the connection's CLIENT LIST entry, listed as a replica's
/// while it is served.
pub fn serve_replica<H: Host>(
    shared: Arc<H>,
    sock: TcpStream,
    req: Psync,
    pending: Vec<u8>,
    client: Option<Arc<amalgam_net::clients::Client>>,
) {
    let started = std::thread::Builder::new().name("amalgam-repl-send".into()).spawn(move || {
        if let Err(e) = serve(&shared, sock, &req, pending, client) {
            log::warn!("replication: a replica's stream ended: {e}");
        }
    });
    if let Err(e) = started {
        log::warn!("replication: cannot start a sender thread: {e}");
    }
}

fn serve<H: Host>(
    shared: &Arc<H>,
    sock: TcpStream,
    req: &Psync,
    pending: Vec<u8>,
    client: Option<Arc<amalgam_net::clients::Client>>,
) -> std::io::Result<()> {
    if req.rdb_only {
        return serve_rdb(&**shared, sock, req);
    }
    let r = shared.repl();
    sock.set_nonblocking(false)?;
    sock.set_nodelay(true)?;
    let peer_ip = match sock.peer_addr()?.ip() {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or_else(|| v6.to_string(), |v4| v4.to_string()),
        ip => ip.to_string(),
    };
    let peer = Arc::new(Peer {
        ip: req.ip_address.clone().unwrap_or(peer_ip),
        port: req.listening_port,
        ack: AtomicU64::new(0),
        last_ack: AtomicU64::new(unix_now()),
        online: AtomicBool::new(false),
        kill: AtomicBool::new(false),
        heard: AtomicBool::new(false),
        sock: sock.try_clone()?,
        offsets: (!req.amalgam).then(crate::redis_out::AckMap::default),
    });
    lock(&r.peers).push(Arc::clone(&peer));
    let listed = client.map(|c| {
        let (id, killed, backlog) = (c.id, Arc::clone(&peer), Arc::clone(&r.backlog));
        shared.clients().add_replication(c, amalgam_net::clients::flag::REPLICA, move || {
            killed.kill();
            backlog.wake_readers();
        });
        id
    });
    let result = (|| {
        let reader = {
            let (shared, peer, rd) = (Arc::clone(shared), Arc::clone(&peer), sock.try_clone()?);
            std::thread::Builder::new()
                .name("amalgam-repl-ack".into())
                .spawn(move || read_acks(&*shared, &peer, rd, pending))?
        };
        let mut w = sock;
        let out = if req.amalgam {
            stream_native(shared, &mut w, req, &peer)
        } else {
            crate::redis_out::stream(&**shared, &mut w, &peer, req)
        };
        let _ = w.shutdown(Shutdown::Both);
        let _ = reader.join();
        out
    })();
    let _ = peer.sock.shutdown(Shutdown::Both);
    if let Some(id) = listed {
        shared.clients().remove(id);
    }
    lock(&r.peers).retain(|p| !Arc::ptr_eq(p, &peer));
    r.wake_waiters();
    result
}

/// An Amalgam replica's sync: a partial resync from the backlog, or the
/// native full sync (the fork-less snapshot), then the backlog's bytes as
/// they come, until the replica leaves.
fn stream_native<H: Host>(shared: &Arc<H>, w: &mut TcpStream, req: &Psync, peer: &Peer) -> std::io::Result<()> {
    let r = shared.repl();
    let attach = match req.offset {
        o if o >= 0 && req.replid != "?" => r.backlog.attach(&req.replid, o as u64),
        _ => Attach::Full,
    };
    let reader_id = match attach {
        Attach::Continue { reader, replid } => {
            r.sync_partial_ok.fetch_add(1, Ordering::Relaxed);
            w.write_all(format!("+CONTINUE {replid}\r\n").as_bytes())?;
            log::warn!("Partial resynchronization request from {}:{} accepted", peer.ip, peer.port);
            reader
        }
        Attach::Full => {
            if req.replid != "?" {
                r.sync_partial_err.fetch_add(1, Ordering::Relaxed);
            }
            r.sync_full.fetch_add(1, Ordering::Relaxed);
            r.attach_journal(shared.store());
            log::warn!(
                "Replica {}:{} asks for synchronization; full sync from a fork-less snapshot",
                peer.ip,
                peer.port
            );
            let preamble = |id: &str, off: u64| format!("+FULLRESYNC {id} {off}\r\n").into_bytes();
            let sync = stream::full_sync(shared.store(), &r.backlog, w, &preamble, FULL_SYNC_CPU_PERCENT)?;
            // The FUNCTION libraries follow in the stream (every
            // replica installs the set again: harmless).
            shared.feed_functions();
            log::warn!(
                "Synchronization with replica {}:{} succeeded ({} items, {} bytes)",
                peer.ip,
                peer.port,
                sync.stats.items,
                sync.bytes
            );
            sync.reader
        }
    };
    peer.online.store(true, Ordering::Relaxed);
    // Asked at once, so the replica's first ack (and INFO's offset)
    // does not wait for its periodic one.
    r.backlog.request_acks();
    let mut buf = Vec::with_capacity(stream::SEND_CHUNK_BYTES);
    let mut last_sent = Instant::now();
    let out = loop {
        if peer.kill.load(Ordering::Relaxed) || shared.shutting_down() {
            break Ok(());
        }
        buf.clear();
        let polling = last_sent.elapsed() < SENDER_POLL_WINDOW;
        let wait = if polling { Duration::ZERO } else { SENDER_WAIT };
        match r.backlog.read_next(reader_id, &mut buf, stream::SEND_CHUNK_BYTES, wait) {
            Ok(stream::Read::Copied(0)) => {
                if polling {
                    std::thread::sleep(SENDER_POLL_SLEEP);
                    continue;
                }
                if last_sent.elapsed() >= REPL_PING_EVERY {
                    // An idle primary's ping: the replica acks it.
                    r.backlog.request_acks();
                    last_sent = Instant::now();
                }
                continue;
            }
            Ok(stream::Read::Copied(_)) => {
                last_sent = Instant::now();
                if let Err(e) = w.write_all(&buf) {
                    break Err(e);
                }
            }
            // A large record's bytes, written from the chunk the
            // backlog shares with the log (no copy).
            Ok(stream::Read::Shared(chunk, range)) => {
                last_sent = Instant::now();
                if let Err(e) = w.write_all(&chunk[range]) {
                    break Err(e);
                }
            }
            Err(stream::Gone) => {
                break Err(std::io::Error::other("the replica fell further behind than the backlog keeps"))
            }
        }
    };
    r.backlog.detach(reader_id);
    out
}

/// How much of a replica's unexpected bytes the log line shows.
const ACK_SHOWN_BYTES: usize = 64;

/// A Redis tool's full sync (issue 37 §2, `redis-cli --rdb`): the store
/// as an RDB (`redis_out::send_rdb`), then the connection closes: no
/// command stream follows.
fn serve_rdb<H: Host>(shared: &H, mut sock: TcpStream, req: &Psync) -> std::io::Result<()> {
    let sent = crate::redis_out::send_rdb(shared, &mut sock, req.sync, req.eof)?;
    shared.repl().backlog.detach(sent.reader);
    shared.repl().sync_full.fetch_add(1, Ordering::Relaxed);
    log::warn!(
        "RDB sync for a Redis tool at {}: {} keys, {} bytes in {:.3} s",
        sock.peer_addr().map(|a| a.to_string()).unwrap_or_default(),
        sent.keys,
        sent.bytes,
        sent.took.as_secs_f64()
    );
    let _ = sock.shutdown(Shutdown::Both);
    Ok(())
}

/// Reads a replica's `REPLCONF ACK <offset>` commands; anything else
/// drops the replica.
fn read_acks<H: Host>(shared: &H, peer: &Peer, mut sock: TcpStream, mut buf: Vec<u8>) {
    let mut chunk = [0u8; 4096];
    loop {
        let mut pos = 0;
        loop {
            // A redis-server replica sends bare newlines while it loads
            // the full sync (`replicationSendNewlineToMaster`).
            while buf.get(pos).is_some_and(|&b| b == b'\n' || b == b'\r') {
                pos += 1;
            }
            match next_ack(&buf[pos..]) {
                Ok(Some((used, off))) => {
                    pos += used;
                    peer.ack.fetch_max(peer.backlog_offset(off), Ordering::AcqRel);
                    peer.last_ack.store(unix_now(), Ordering::Relaxed);
                    peer.heard.store(true, Ordering::Release);
                }
                Ok(None) => break,
                Err(why) => {
                    let head = &buf[pos..buf.len().min(pos + ACK_SHOWN_BYTES)];
                    log::warn!(
                        "replication: replica {}:{} sent {why} ({:?}); dropped",
                        peer.ip,
                        peer.port,
                        String::from_utf8_lossy(head)
                    );
                    peer.kill.store(true, Ordering::Relaxed);
                    let _ = sock.shutdown(Shutdown::Both);
                    shared.repl().backlog.wake_readers();
                    return;
                }
            }
        }
        buf.drain(..pos);
        shared.repl().wake_waiters();
        match sock.read(&mut chunk) {
            Ok(0) | Err(_) => {
                peer.kill.store(true, Ordering::Relaxed);
                let _ = sock.shutdown(Shutdown::Both);
                shared.repl().backlog.wake_readers();
                return;
            }
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// The line at `*pos` (without its `\r\n`), if whole; advances `pos`.
fn take_line<'b>(buf: &'b [u8], pos: &mut usize) -> Option<&'b [u8]> {
    let rest = &buf[*pos..];
    let i = rest.windows(2).position(|w| w == b"\r\n")?;
    *pos += i + 2;
    Some(&rest[..i])
}

/// The `REPLCONF ACK <offset>` at the front of `buf` (a RESP array, as a
/// replica sends it): Some((bytes, offset)), None if incomplete, Err for
/// anything else. A primary's ack reader needs no more than this; the
/// general RESP parser stays with the workers (a second caller made the
/// optimizer stop inlining it into their batch loop: 47 instructions per
/// unpipelined GET, measured with callgrind).
fn next_ack(buf: &[u8]) -> Result<Option<(usize, u64)>, &'static str> {
    const NOT_AN_ACK: &str = "something other than REPLCONF ACK";
    let mut pos = 0;
    let Some(head) = take_line(buf, &mut pos) else {
        return if buf.len() > HANDSHAKE_LINE_BYTES_MAX { Err(NOT_AN_ACK) } else { Ok(None) };
    };
    // Redis 7.0's replicas say `REPLCONF ACK <offset> FACK <aof offset>`.
    let count = match head {
        b"*3" => 3,
        b"*5" => 5,
        _ => return Err(NOT_AN_ACK),
    };
    let mut words: [&[u8]; 5] = [&[]; 5];
    for w in &mut words[..count] {
        let Some(len) = take_line(buf, &mut pos) else { return Ok(None) };
        let n = len
            .strip_prefix(b"$")
            .and_then(|d| std::str::from_utf8(d).ok())
            .and_then(|d| d.parse::<usize>().ok())
            .filter(|&n| n <= 20)
            .ok_or(NOT_AN_ACK)?;
        if buf.len() < pos + n + 2 {
            return Ok(None);
        }
        if &buf[pos + n..pos + n + 2] != b"\r\n" {
            return Err(NOT_AN_ACK);
        }
        *w = &buf[pos..pos + n];
        pos += n + 2;
    }
    if !words[0].eq_ignore_ascii_case(b"replconf")
        || !words[1].eq_ignore_ascii_case(b"ack")
        || (count == 5 && !words[3].eq_ignore_ascii_case(b"fack"))
    {
        return Err(NOT_AN_ACK);
    }
    let off = std::str::from_utf8(words[2]).ok().and_then(|d| d.parse::<u64>().ok()).ok_or(NOT_AN_ACK)?;
    Ok(Some((pos, off)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acks_parse_and_anything_else_is_refused() {
        let ack = b"*3\r\n$8\r\nREPLCONF\r\n$3\r\nACK\r\n$4\r\n1234\r\n";
        assert_eq!(next_ack(ack), Ok(Some((ack.len(), 1234))));
        for cut in 0..ack.len() {
            assert_eq!(next_ack(&ack[..cut]), Ok(None), "a prefix of {cut} bytes");
        }
        let fack = b"*5\r\n$8\r\nREPLCONF\r\n$3\r\nACK\r\n$3\r\n123\r\n$4\r\nFACK\r\n$2\r\n99\r\n";
        assert_eq!(next_ack(fack), Ok(Some((fack.len(), 123))));
        let lower = b"*3\r\n$8\r\nreplconf\r\n$3\r\nack\r\n$1\r\n0\r\n";
        assert_eq!(next_ack(lower), Ok(Some((lower.len(), 0))));
        for bad in [
            &b"*2\r\n$4\r\nPING\r\n"[..],
            b"*3\r\n$8\r\nREPLCONF\r\n$6\r\nGETACK\r\n$1\r\n*\r\n",
            b"*3\r\n$8\r\nREPLCONF\r\n$3\r\nACK\r\n$1\r\nx\r\n",
            b"*3\r\n$8\r\nREPLCONF\r\n$3\r\nACK\r\n$99\r\n1\r\n",
            b"*3\r\n$-1\r\n",
            b"*3\r\n$8\r\nREPLCONFxx",
        ] {
            assert!(next_ack(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
        assert!(next_ack(&vec![b'x'; HANDSHAKE_LINE_BYTES_MAX + 1]).is_err());
    }
}
