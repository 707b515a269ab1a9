//! The ACL log (Redis 7.0's `ACL LOG [count | RESET]`): the commands,
//! keys and channels a user was refused, and the failed AUTH / HELLO
//! AUTH attempts, newest first.
//!
//! ## HOW IT WORKS
//! One list per server, behind a mutex taken only by a refusal and by ACL
//! LOG: an open connection (acl.rs, the `open` byte) is never refused, so
//! it never reaches it. A refusal builds an entry (reason, context,
//! object, username, the client's CLIENT LIST line) and looks for the same
//! event among the [`GROUPING_SCAN_MAX`] newest entries, as Redis's
//! `addACLLogEntry`: same reason, context, object and username, and less
//! than [`GROUPING_WINDOW_MS`] apart (Redis's `ACLLogMatchEntry`). A match
//! is moved to the front with its count bumped and its time and client
//! line replaced; otherwise the entry is pushed to the front and the list
//! trimmed to `acllog-max-len` from the back (a lowered maximum applies at
//! the next push, as in Redis).
//!
//! ## LIMITS
//! The list holds at most `acllog-max-len` entries (CONFIG SET, default
//! [`LOG_LEN_DEFAULT`], Redis's); an entry's object is one argument
//! (bounded by the request bounds) and its client line is CLIENT LIST's.
//! Ages are measured on the monotonic clock in whole milliseconds, as
//! Redis's `mstime()` difference (a wall-clock step changes nothing here).

use amalgam_commands::zset::push_score;
use amalgam_protocol::resp::{push_array, push_bulk, push_int, push_map, Proto};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// `acllog-max-len`'s default (Redis's).
pub const LOG_LEN_DEFAULT: u64 = 128;
/// Entries a new event is compared with, newest first (Redis's `toscan`).
const GROUPING_SCAN_MAX: usize = 10;
/// Two events further apart than this are two entries (Redis's
/// `ACL_LOG_GROUPING_MAX_TIME_DELTA`).
const GROUPING_WINDOW_MS: u128 = 60_000;
/// ACL LOG's count when none is given (Redis's).
const SHOWN_DEFAULT: usize = 10;

/// Why an entry was logged (Redis's `ACL_DENIED_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    Command,
    Key,
    Channel,
    Auth,
}

impl Reason {
    fn name(self) -> &'static str {
        match self {
            Reason::Command => "command",
            Reason::Key => "key",
            Reason::Channel => "channel",
            Reason::Auth => "auth",
        }
    }
}

/// Where the refused command ran (Redis's `ACL_LOG_CTX_*`; Amalgam has no
/// scripts or modules).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Context {
    Toplevel,
    /// Queued inside MULTI, or run by EXEC.
    Multi,
    /// Called by a script (redis.call).
    Lua,
}

impl Context {
    fn name(self) -> &'static str {
        match self {
            Context::Toplevel => "toplevel",
            Context::Multi => "multi",
            Context::Lua => "lua",
        }
    }
}

/// One event, or several grouped.
#[derive(Debug)]
struct Entry {
    count: u64,
    reason: Reason,
    context: Context,
    /// The command (`config|get`), key, channel, or for AUTH the command
    /// name as the client typed it.
    object: Vec<u8>,
    username: Vec<u8>,
    /// The latest event's time.
    at: Instant,
    /// The client's CLIENT LIST line at the latest event, without `\n`.
    client_info: String,
}

/// The server's ACL log.
#[derive(Debug)]
pub struct Log {
    /// Newest first; at most `max_len` after each push.
    entries: Mutex<VecDeque<Entry>>,
    /// `acllog-max-len`.
    pub max_len: AtomicU64,
}

impl Default for Log {
    fn default() -> Log {
        Log { entries: Mutex::new(VecDeque::new()), max_len: AtomicU64::new(LOG_LEN_DEFAULT) }
    }
}

impl Log {
    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Entry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Logs one refusal (see the module's notes).
    pub fn add(&self, reason: Reason, context: Context, object: &[u8], username: &[u8], client_info: String) {
        let now = Instant::now();
        let mut entries = self.lock();
        let same = entries.iter().take(GROUPING_SCAN_MAX).position(|e| {
            e.reason == reason
                && e.context == context
                && now.duration_since(e.at).as_millis() <= GROUPING_WINDOW_MS
                && e.object == object
                && e.username == username
        });
        if let Some(i) = same {
            let mut e = entries.remove(i).expect("found above");
            e.count += 1;
            e.at = now;
            e.client_info = client_info;
            entries.push_front(e);
            return;
        }
        entries.push_front(Entry {
            count: 1,
            reason,
            context,
            object: object.to_vec(),
            username: username.to_vec(),
            at: now,
            client_info,
        });
        let max = usize::try_from(self.max_len.load(Ordering::Relaxed)).unwrap_or(usize::MAX);
        entries.truncate(max);
    }

    /// ACL LOG RESET.
    pub fn reset(&self) {
        self.lock().clear();
    }

    /// ACL LOG [count]: the newest `count` entries (default
    /// [`SHOWN_DEFAULT`]; a negative count shows none), as Redis 7.0.15
    /// replies: a map of seven fields each.
    pub fn reply(&self, count: Option<i64>, proto: Proto, out: &mut Vec<u8>) {
        let want = match count {
            None => SHOWN_DEFAULT,
            Some(n) => usize::try_from(n.max(0)).unwrap_or(usize::MAX),
        };
        let now = Instant::now();
        let entries = self.lock();
        let n = want.min(entries.len());
        push_array(out, n);
        for e in entries.iter().take(n) {
            push_map(out, 7, proto);
            push_bulk(out, b"count");
            push_int(out, e.count as i64);
            push_bulk(out, b"reason");
            push_bulk(out, e.reason.name().as_bytes());
            push_bulk(out, b"context");
            push_bulk(out, e.context.name().as_bytes());
            push_bulk(out, b"object");
            push_bulk(out, &e.object);
            push_bulk(out, b"username");
            push_bulk(out, &e.username);
            push_bulk(out, b"age-seconds");
            // Whole milliseconds over 1000, as Redis's (now - ctime)/1000.
            push_score(out, proto, now.duration_since(e.at).as_millis() as f64 / 1000.0);
            push_bulk(out, b"client-info");
            push_bulk(out, e.client_info.as_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(log: &Log) -> Vec<(u64, Vec<u8>)> {
        log.lock().iter().map(|e| (e.count, e.object.clone())).collect()
    }

    #[test]
    fn repeated_events_group_and_the_list_is_trimmed() {
        let log = Log::default();
        log.add(Reason::Key, Context::Toplevel, b"a", b"u", String::new());
        log.add(Reason::Key, Context::Toplevel, b"b", b"u", String::new());
        log.add(Reason::Key, Context::Toplevel, b"a", b"u", String::new());
        assert_eq!(entries(&log), [(2, b"a".to_vec()), (1, b"b".to_vec())]);
        // A different context, reason or user is another entry.
        log.add(Reason::Key, Context::Multi, b"a", b"u", String::new());
        log.add(Reason::Command, Context::Toplevel, b"a", b"u", String::new());
        log.add(Reason::Key, Context::Toplevel, b"a", b"v", String::new());
        assert_eq!(log.lock().len(), 5);
        // Only the newest GROUPING_SCAN_MAX are searched.
        let log = Log::default();
        for i in 0..=GROUPING_SCAN_MAX {
            log.add(Reason::Key, Context::Toplevel, i.to_string().as_bytes(), b"u", String::new());
        }
        log.add(Reason::Key, Context::Toplevel, b"0", b"u", String::new());
        assert_eq!(log.lock().len(), GROUPING_SCAN_MAX + 2);
        log.max_len.store(3, Ordering::Relaxed);
        log.add(Reason::Auth, Context::Toplevel, b"AUTH", b"u", String::new());
        assert_eq!(log.lock().len(), 3);
        log.max_len.store(0, Ordering::Relaxed);
        log.add(Reason::Auth, Context::Toplevel, b"x", b"u", String::new());
        assert!(log.lock().is_empty());
    }

    #[test]
    fn reply_shows_the_newest_count() {
        let log = Log::default();
        for o in [b"a", b"b", b"c"] {
            log.add(Reason::Command, Context::Toplevel, o, b"u", "id=1".into());
        }
        let mut out = Vec::new();
        log.reply(Some(1), Proto::Resp2, &mut out);
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("*1\r\n*14\r\n$5\r\ncount\r\n:1\r\n$6\r\nreason\r\n$7\r\ncommand\r\n"), "{text}");
        assert!(text.contains("$6\r\nobject\r\n$1\r\nc\r\n") && text.ends_with("$11\r\nclient-info\r\n$4\r\nid=1\r\n"));
        let mut out = Vec::new();
        log.reply(Some(-1), Proto::Resp2, &mut out);
        assert_eq!(out, b"*0\r\n");
    }
}
