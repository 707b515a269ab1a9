//! # What a primary sends a replica after PSYNC, read from any bytes
//!
//! From the moment a replica has sent PSYNC, everything it reads is the
//! primary's to choose, and a hostile or broken primary may send anything:
//!
//! ```text
//!   "\n"* reply
//!   reply = "+FULLRESYNC <replid> <offset>" | "+CONTINUE [<replid>]" | anything else (refused)
//!   after +FULLRESYNC, a redis-server's RDB:  "\n"* "$<len>" RDB of len bytes
//!                                           | "\n"* "$EOF:<40-byte mark>" RDB mark
//!                  or an Amalgam primary's:  sync header, records up to END
//!   then the stream: RESP commands (redis-server) or records (Amalgam)
//!   (every line ends "\r\n"; "\n" alone is a keep-alive while the primary
//!    prepares the sync)
//! ```
//!
//! This module reads it: [`Input`] over any `Read` (the link's socket;
//! a fuzz target's bytes), the lines and their bound, PSYNC's reply
//! ([`psync_reply`], Redis's `slaveTryPartialResynchronization` rules),
//! which full sync follows, the RDB's framing and its EOF mark
//! ([`load_redis`]; the RDB itself through the caller's loader, the
//! server's `Host::load_rdb`, whose reader bounds every value and the
//! whole file), an Amalgam primary's records ([`load_native`]), and the
//! stream's batches ([`native_batch`], [`redis_batch`]). The link
//! (`link.rs`) runs these on its socket and does the rest (the store, the
//! backlog, the acks); [`replay`] runs the same functions, in the link's
//! order, over a byte slice, for the `repl_sync_in` fuzz target.
//!
//! ## Bounds
//! A line at most [`HANDSHAKE_LINE_BYTES_MAX`] bytes (else the link
//! drops); reads of [`READ_CHUNK_BYTES`]; the input buffer holds at most
//! one unit (line, record, command) beyond a read, and is compacted as
//! the front is used. The RDB's own bounds are its reader's (`Limits`: a
//! value bound, a file bound the server derives from its memory). A
//! `$<len>` larger than what arrives is an error when the bytes end, never
//! a reservation. Every loop reads at least one byte per pass or ends.

use crate::{lock, unix_now, CommandFeed, Link, HANDSHAKE_LINE_BYTES_MAX, READ_CHUNK_BYTES};
use amalgam_persist::format::{self, Bad};
use amalgam_persist::repl::{self as stream, REPLID_BYTES};
use std::io::Read;
use std::sync::atomic::Ordering;

/// Bytes read from the primary, parsed from the front.
pub(crate) struct Input<S> {
    pub(crate) sock: S,
    pub(crate) buf: Vec<u8>,
    pub(crate) pos: usize,
    /// `repl-timeout` when the link started.
    pub(crate) timeout_secs: u64,
}

impl<S: Read> Input<S> {
    pub(crate) fn new(sock: S, timeout_secs: u64) -> Input<S> {
        Input { sock, buf: Vec::new(), pos: 0, timeout_secs }
    }

    /// Reads more; Err on EOF.
    pub(crate) fn fill(&mut self, link: &Link) -> std::io::Result<usize> {
        if self.pos > 0 && self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
        } else if self.pos > READ_CHUNK_BYTES {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        let len = self.buf.len();
        self.buf.resize(len + READ_CHUNK_BYTES, 0);
        let n = loop {
            match self.sock.read(&mut self.buf[len..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.buf.truncate(len);
                    return Err(e);
                }
            }
        };
        self.buf.truncate(len + n);
        if n == 0 {
            return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "the primary closed the connection"));
        }
        link.last_io.store(unix_now(), Ordering::Relaxed);
        Ok(n)
    }

    /// [`Input::fill`], waiting through read timeouts (every ACK_EVERY:
    /// `tick` runs then) until the primary has been silent for
    /// `repl-timeout`, or the link stops.
    pub(crate) fn fill_waiting(
        &mut self,
        link: &Link,
        mut tick: impl FnMut() -> std::io::Result<()>,
    ) -> std::io::Result<usize> {
        let timeout_secs = self.timeout_secs;
        // Bounded by repl-timeout: each pass waits ACK_EVERY at most.
        loop {
            match self.fill(link) {
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                    if link.stop.load(Ordering::Relaxed) {
                        return Err(std::io::Error::other("the link was stopped"));
                    }
                    let last = link.last_io.load(Ordering::Relaxed);
                    if unix_now().saturating_sub(last) > timeout_secs.max(1) {
                        return Err(std::io::Error::new(
                            std::io::ErrorKind::TimedOut,
                            "the primary was silent past repl-timeout",
                        ));
                    }
                    tick()?;
                }
                r => return r,
            }
        }
    }

    /// After `+FULLRESYNC`: true if a redis-server's RDB follows (its
    /// `$<len>` or `$EOF:<mark>` line, after the bare newlines it sends
    /// while it prepares the sync), false for an Amalgam primary's
    /// snapshot (which begins with its magic, never `$` or a newline).
    pub(crate) fn redis_rdb_follows(&mut self, link: &Link) -> std::io::Result<bool> {
        // Bounded by repl-timeout: each fill reads a byte or more.
        loop {
            while self.buf.get(self.pos) == Some(&b'\n') {
                self.pos += 1;
            }
            if let Some(&b) = self.buf.get(self.pos) {
                return Ok(b == b'$');
            }
            self.fill_waiting(link, || Ok(()))?;
        }
    }

    /// One `\r\n`-terminated line (without it), at most
    /// [`HANDSHAKE_LINE_BYTES_MAX`] bytes.
    pub(crate) fn line(&mut self, link: &Link) -> std::io::Result<String> {
        // Bounded: each pass reads a byte or more, up to the line bound.
        loop {
            if let Some(i) = self.buf[self.pos..].windows(2).position(|w| w == b"\r\n") {
                if i > HANDSHAKE_LINE_BYTES_MAX {
                    return Err(std::io::Error::other("a handshake line past its limit"));
                }
                let line = String::from_utf8_lossy(&self.buf[self.pos..self.pos + i]).into_owned();
                self.pos += i + 2;
                return Ok(line);
            }
            if self.buf.len() - self.pos > HANDSHAKE_LINE_BYTES_MAX {
                return Err(std::io::Error::other("a handshake line past its limit"));
            }
            self.fill_waiting(link, || Ok(()))?;
        }
    }

    /// PSYNC's reply: the first line that is not empty (a primary busy
    /// preparing the sync may send bare newlines first: Redis's replica
    /// skips them, "The master may send empty newlines after it receives
    /// PSYNC").
    pub(crate) fn psync_line(&mut self, link: &Link) -> std::io::Result<String> {
        // Bounded: each pass takes a line's bytes (repl-timeout, the input).
        loop {
            let l = self.line(link)?;
            let l = l.trim_start_matches('\n');
            if !l.is_empty() {
                return Ok(l.to_string());
            }
        }
    }
}

/// PSYNC's reply, as Redis's `slaveTryPartialResynchronization` reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum PsyncReply {
    /// `+FULLRESYNC <replid> <offset>`. A replid that is not
    /// [`REPLID_BYTES`] long is blanked (`""`), as Redis blanks it ("Master
    /// replied with wrong +FULLRESYNC syntax."), so the next PSYNC cannot
    /// continue it; an offset that does not parse is 0 (Redis's strtoll).
    FullResync { replid: String, offset: u64, malformed: bool },
    /// `+CONTINUE`, and the primary's new id when it names one of
    /// [`REPLID_BYTES`] (any other word is ignored, as Redis ignores it).
    Continue { new_id: Option<String> },
    /// Anything else: the link drops.
    Other,
}

/// Reads PSYNC's reply line (see [`PsyncReply`]), as Redis's
/// `slaveTryPartialResynchronization` does: by prefix (`strncmp`), the
/// id after the first space and the offset after the next one, a
/// `+CONTINUE`'s new id the whole rest of its line.
pub(crate) fn psync_reply(line: &str) -> PsyncReply {
    if line.starts_with("+FULLRESYNC") {
        let rest = line.split_once(' ').map(|(_, r)| r);
        let (replid, offset) = match rest.and_then(|r| r.split_once(' ')) {
            Some((id, off)) => (Some(id), Some(off)),
            None => (None, None),
        };
        let well_formed = replid.is_some_and(|id| id.len() == REPLID_BYTES);
        return PsyncReply::FullResync {
            replid: if well_formed { replid.unwrap_or_default().to_string() } else { String::new() },
            offset: if well_formed { offset.map_or(0, leading_u64) } else { 0 },
            malformed: !well_formed,
        };
    }
    if line.starts_with("+CONTINUE") {
        let new_id = line.get("+CONTINUE ".len()..).filter(|id| id.len() == REPLID_BYTES).map(str::to_string);
        return PsyncReply::Continue { new_id };
    }
    PsyncReply::Other
}

/// The number at the front of `s`, as `strtoll` reads it (leading
/// blanks, digits up to the first other byte); 0 if none or negative, or
/// past u64.
fn leading_u64(s: &str) -> u64 {
    let s = s.trim_start();
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    s[..digits].parse().unwrap_or(0)
}

/// The RDB of a redis-server primary's full sync, read through the
/// link's input: `left` bytes for `$<len>`, or as far as the RDB reader
/// goes (its EOF opcode and checksum) for `$EOF:<mark>`.
struct RdbIn<'a, S> {
    input: &'a mut Input<S>,
    link: &'a Link,
    left: Option<u64>,
}

impl<S: Read> Read for RdbIn<'_, S> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.left == Some(0) || out.is_empty() {
            return Ok(0);
        }
        if self.input.pos == self.input.buf.len() {
            self.input.fill_waiting(self.link, || Ok(()))?;
        }
        let avail = &self.input.buf[self.input.pos..];
        let mut n = avail.len().min(out.len());
        if let Some(left) = &mut self.left {
            n = n.min(usize::try_from(*left).unwrap_or(usize::MAX));
            *left -= n as u64;
        }
        out[..n].copy_from_slice(&avail[..n]);
        self.input.pos += n;
        Ok(n)
    }
}

/// Redis's diskless sync ends its RDB with this many bytes of the mark
/// its `$EOF:` line named (`RDB_EOF_MARK_SIZE`).
pub(crate) const RDB_EOF_MARK_BYTES: usize = 40;

/// Loads a redis-server primary's RDB (issue 37 §1): the `$<len>` or
/// `$EOF:<mark>` line, the RDB through `load` (the server's loader,
/// which empties the databases first), and for `$EOF:` the mark after
/// it. `load` runs under the link's `applying` lock (as the native full
/// sync: `Link::retire` waits for it). The keys loaded.
pub(crate) fn load_redis<S: Read>(
    input: &mut Input<S>,
    link: &Link,
    load: impl FnOnce(&mut dyn Read) -> Result<u64, String>,
) -> std::io::Result<u64> {
    let head = input.line(link)?;
    let head = head.trim_start_matches('\n');
    let (left, mark) = match head.strip_prefix("$EOF:") {
        Some(mark) if mark.len() == RDB_EOF_MARK_BYTES => (None, Some(mark.as_bytes().to_vec())),
        Some(_) => return Err(std::io::Error::other(format!("a bad EOF mark from the primary: {head}"))),
        None => {
            let len = head.strip_prefix('$').and_then(|n| n.parse::<u64>().ok());
            (Some(len.ok_or_else(|| std::io::Error::other(format!("not an RDB length: {head}")))?), None)
        }
    };
    let held = lock(&link.applying);
    if link.stop.load(Ordering::Relaxed) {
        return Err(std::io::Error::other("the link was stopped during the full sync"));
    }
    let mut rdb = RdbIn { input, link, left };
    let keys = load(&mut rdb).map_err(|e| std::io::Error::other(format!("the primary's RDB: {e}")))?;
    if rdb.left.is_some_and(|l| l > 0) {
        return Err(std::io::Error::other("the primary's RDB ended before its announced length"));
    }
    drop(held);
    if let Some(mark) = mark {
        // Bounded: each fill reads a byte or more, up to the mark's 40.
        while input.buf.len() - input.pos < RDB_EOF_MARK_BYTES {
            input.fill_waiting(link, || Ok(()))?;
        }
        if input.buf[input.pos..input.pos + RDB_EOF_MARK_BYTES] != mark[..] {
            return Err(std::io::Error::other("the primary's RDB is not followed by its EOF mark"));
        }
        input.pos += RDB_EOF_MARK_BYTES;
    }
    Ok(keys)
}

/// Reads an Amalgam primary's full sync (its header, then records up to
/// END) into `apply`, which answers true at END. Each batch of records
/// is applied under the link's `applying` lock.
pub(crate) fn load_native<S: Read>(
    input: &mut Input<S>,
    link: &Link,
    mut apply: impl FnMut(format::Record<'_>) -> bool,
) -> std::io::Result<()> {
    // Bounded: each fill reads a byte or more, up to the header's size.
    while input.buf.len() - input.pos < stream::SYNC_HEADER_BYTES {
        input.fill_waiting(link, || Ok(()))?;
    }
    stream::read_sync_header(&input.buf[input.pos..input.pos + stream::SYNC_HEADER_BYTES])
        .map_err(|e| std::io::Error::other(format!("not a full sync from an Amalgam primary: {e}")))?;
    input.pos += stream::SYNC_HEADER_BYTES;
    // Bounded by the input: each pass applies records or reads bytes.
    loop {
        let held = lock(&link.applying);
        if link.stop.load(Ordering::Relaxed) {
            return Err(std::io::Error::other("the link was stopped during the full sync"));
        }
        // Bounded: each record takes bytes of the buffer.
        loop {
            match format::read_record(&input.buf[input.pos..]) {
                Ok((rec, n)) => {
                    input.pos += n;
                    if apply(rec) {
                        return Ok(());
                    }
                }
                Err(Bad::Torn) => break,
                Err(Bad::Corrupt(why)) => return Err(std::io::Error::other(format!("a corrupt sync record: {why}"))),
            }
        }
        drop(held);
        input.fill_waiting(link, || Ok(()))?;
    }
}

/// One batch of an Amalgam primary's stream: the whole records at the
/// front of `buf`, each to `apply`. The bytes they took and whether a
/// GETACK was among them.
pub(crate) fn native_batch(buf: &[u8], mut apply: impl FnMut(format::Record<'_>)) -> std::io::Result<(usize, bool)> {
    let (mut pos, mut asked) = (0, false);
    // Bounded: each record takes bytes of `buf`.
    loop {
        match format::read_record(&buf[pos..]) {
            Ok((rec, n)) => {
                asked |= matches!(rec, format::Record::GetAck);
                apply(rec);
                pos += n;
            }
            Err(Bad::Torn) => return Ok((pos, asked)),
            Err(Bad::Corrupt(why)) => return Err(std::io::Error::other(format!("a corrupt stream record: {why}"))),
        }
    }
}

/// One batch of a redis-server primary's stream: the whole commands at
/// the front of `buf` through `feed`. The bytes they took and whether a
/// `REPLCONF GETACK` was among them.
pub(crate) fn redis_batch(buf: &[u8], feed: &mut dyn CommandFeed) -> std::io::Result<(usize, bool)> {
    let (mut pos, mut asked) = (0, false);
    // Bounded: each pass takes bytes of `buf` or stops.
    loop {
        let (used, getack) = feed.feed(&buf[pos..]).map_err(std::io::Error::other)?;
        if used == 0 {
            return Ok((pos, asked));
        }
        pos += used;
        asked |= getack;
    }
}

/// What [`replay`] hands on: the store side of a full sync and of the
/// stream (the server's `Host`, or a fuzz target's stand-in).
pub trait SyncSink {
    /// A redis-server's RDB, read to its end (`Host::load_rdb`): the keys.
    fn load_rdb(&mut self, r: &mut dyn Read) -> Result<u64, String>;
    /// An Amalgam primary's record, of its full sync (`sync`: answer true
    /// at its END) or of its stream.
    fn record(&mut self, rec: format::Record<'_>, sync: bool) -> bool;
    /// A redis-server primary's command stream (`Host::command_feed`).
    fn feed(&mut self) -> &mut dyn CommandFeed;
}

/// How far [`replay`] got.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Replayed {
    /// PSYNC's reply was refused (the link drops).
    Refused,
    /// `+CONTINUE`: the stream's bytes used (Redis's commands when
    /// `redis`), until the input ended.
    Continued { redis: bool, stream_bytes: usize },
    /// A full sync loaded (keys, for a Redis RDB; records otherwise), then
    /// the stream's bytes used.
    Synced { redis: bool, loaded: u64, stream_bytes: usize },
}

/// Runs `bytes` as what a primary sends after PSYNC through the link's
/// own reading code, in the link's order (`link.rs` `session`): the
/// reply, the full sync (Redis's RDB or Amalgam's records) and the
/// stream, until the bytes end. `follows_redis`: what a `+CONTINUE`
/// continues (the link knows it from the sync before). Err: where the
/// link would drop, and why.
pub fn replay(bytes: &[u8], follows_redis: bool, sink: &mut dyn SyncSink) -> Result<Replayed, String> {
    let link = Link::detached();
    let mut input = Input::new(bytes, 0);
    let e = |e: std::io::Error| e.to_string();
    let reply = psync_reply(&input.psync_line(&link).map_err(e)?);
    let (redis, loaded) = match reply {
        PsyncReply::Other => return Ok(Replayed::Refused),
        PsyncReply::Continue { .. } => (follows_redis, None),
        PsyncReply::FullResync { .. } => {
            if input.redis_rdb_follows(&link).map_err(e)? {
                (true, Some(load_redis(&mut input, &link, |r| sink.load_rdb(r)).map_err(e)?))
            } else {
                let mut records = 0u64;
                load_native(&mut input, &link, |rec| {
                    records += 1;
                    sink.record(rec, true)
                })
                .map_err(e)?;
                (false, Some(records))
            }
        }
    };
    let mut stream_bytes = 0;
    // Bounded by `bytes`: each pass uses bytes or reads more, to the end.
    loop {
        let buf = &input.buf[input.pos..];
        let (used, _asked) = if redis {
            redis_batch(buf, sink.feed())
        } else {
            native_batch(buf, |rec| {
                sink.record(rec, false);
            })
        }
        .map_err(e)?;
        input.pos += used;
        stream_bytes += used;
        if input.fill(&link).is_err() {
            break;
        }
    }
    Ok(match loaded {
        None => Replayed::Continued { redis, stream_bytes },
        Some(loaded) => Replayed::Synced { redis, loaded, stream_bytes },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "0123456789abcdef0123456789abcdef01234567";

    #[test]
    fn psync_replies_as_redis_reads_them() {
        assert_eq!(
            psync_reply(&format!("+FULLRESYNC {ID} 42")),
            PsyncReply::FullResync { replid: ID.into(), offset: 42, malformed: false }
        );
        // A short id is blanked (and its offset not read); a bad offset is
        // 0; a missing one blanks.
        assert_eq!(
            psync_reply("+FULLRESYNC abc 42"),
            PsyncReply::FullResync { replid: String::new(), offset: 0, malformed: true }
        );
        assert_eq!(
            psync_reply(&format!("+FULLRESYNC {ID} x")),
            PsyncReply::FullResync { replid: ID.into(), offset: 0, malformed: false }
        );
        assert_eq!(
            psync_reply(&format!("+FULLRESYNC {ID} 12ab")),
            PsyncReply::FullResync { replid: ID.into(), offset: 12, malformed: false }
        );
        assert_eq!(
            psync_reply(&format!("+FULLRESYNC {ID}")),
            PsyncReply::FullResync { replid: String::new(), offset: 0, malformed: true }
        );
        assert_eq!(psync_reply("+CONTINUE"), PsyncReply::Continue { new_id: None });
        assert_eq!(psync_reply(&format!("+CONTINUE {ID}")), PsyncReply::Continue { new_id: Some(ID.into()) });
        assert_eq!(psync_reply("+CONTINUE short"), PsyncReply::Continue { new_id: None });
        // By prefix, as Redis's strncmp.
        assert_eq!(psync_reply("+CONTINUEX"), PsyncReply::Continue { new_id: None });
        assert_eq!(psync_reply("-NOMASTERLINK Can't SYNC while not connected with my master"), PsyncReply::Other);
        assert_eq!(psync_reply(""), PsyncReply::Other);
    }

    /// Counts what reaches it; the RDB is read to its end.
    #[derive(Default)]
    struct Counting {
        rdb_bytes: u64,
        records: u64,
        feed: Lines,
    }

    /// A command feed of `\r\n` lines (enough to see the framing).
    #[derive(Default)]
    struct Lines(u64);

    impl CommandFeed for Lines {
        fn feed(&mut self, buf: &[u8]) -> Result<(usize, bool), String> {
            match buf.windows(2).position(|w| w == b"\r\n") {
                Some(i) => {
                    self.0 += 1;
                    Ok((i + 2, &buf[..i] == b"GETACK"))
                }
                None => Ok((0, false)),
            }
        }
    }

    impl SyncSink for Counting {
        fn load_rdb(&mut self, r: &mut dyn Read) -> Result<u64, String> {
            let mut v = Vec::new();
            r.read_to_end(&mut v).map_err(|e| e.to_string())?;
            self.rdb_bytes = v.len() as u64;
            Ok(1)
        }
        fn record(&mut self, _rec: format::Record<'_>, _sync: bool) -> bool {
            self.records += 1;
            false
        }
        fn feed(&mut self) -> &mut dyn CommandFeed {
            &mut self.feed
        }
    }

    fn run(bytes: &[u8]) -> (Result<Replayed, String>, Counting) {
        let mut c = Counting::default();
        (replay(bytes, true, &mut c), c)
    }

    #[test]
    fn a_disk_based_sync_then_the_stream() {
        let input = format!("\n\n+FULLRESYNC {ID} 7\r\n\n\n$5\r\nREDIShello\r\nGETACK\r\npartial");
        let (r, c) = run(input.as_bytes());
        assert_eq!(r, Ok(Replayed::Synced { redis: true, loaded: 1, stream_bytes: 15 }));
        assert_eq!((c.rdb_bytes, c.feed.0), (5, 2));
    }

    #[test]
    fn a_diskless_sync_checks_its_mark() {
        // The sink reads the RDB to the end of the input: the mark is then
        // missing, as when a primary's RDB runs past its end.
        let mark = "m".repeat(RDB_EOF_MARK_BYTES);
        let (r, _) = run(format!("+FULLRESYNC {ID} 0\r\n$EOF:{mark}\r\nREDIS{mark}").as_bytes());
        assert!(r.unwrap_err().contains("closed"));
        let (r, _) = run(format!("+FULLRESYNC {ID} 0\r\n$EOF:short\r\n").as_bytes());
        assert!(r.unwrap_err().contains("bad EOF mark"));
    }

    #[test]
    fn framing_errors_drop_the_link() {
        let (r, _) = run(format!("+FULLRESYNC {ID} 0\r\n$-1\r\n").as_bytes());
        assert!(r.unwrap_err().contains("not an RDB length"));
        // An RDB shorter than its `$<len>`: the loader meets the input's end.
        let (r, _) = run(format!("+FULLRESYNC {ID} 0\r\n$99\r\nREDIS").as_bytes());
        assert!(r.clone().unwrap_err().contains("closed the connection"), "{r:?}");
        let long = "x".repeat(HANDSHAKE_LINE_BYTES_MAX + 1);
        let (r, _) = run(format!("+FULLRESYNC {long}\r\n").as_bytes());
        assert!(r.unwrap_err().contains("past its limit"));
        let (r, _) = run(long.as_bytes());
        assert!(r.unwrap_err().contains("past its limit"));
        assert_eq!(run(b"-ERR no\r\n").0, Ok(Replayed::Refused));
        // An Amalgam primary's sync must begin with its header.
        let (r, _) = run(format!("+FULLRESYNC {ID} 0\r\nAMALGAM-not-a-header-at-all-xxxxxxxxxxxxxxxxx").as_bytes());
        assert!(r.clone().unwrap_err().contains("not a full sync"), "{r:?}");
    }

    #[test]
    fn a_continue_streams_at_once() {
        let (r, c) = run(b"+CONTINUE\r\nA\r\nB\r\n");
        assert_eq!(r, Ok(Replayed::Continued { redis: true, stream_bytes: 6 }));
        assert_eq!(c.feed.0, 2);
    }
}
