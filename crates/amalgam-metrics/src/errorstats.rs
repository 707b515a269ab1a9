//! Error replies by their code: what Redis 7's `INFO errorstats`
//! (`errorstat_<CODE>:count=N`) and INFO stats' `total_error_replies` show,
//! and what `/metrics` exports as `redis_errors_total{err=…}`.
//!
//! ## What counts
//! Every error reply a command or the protocol gives a RESP client, as
//! Redis's `afterErrorReply` counts them: a command run alone (EXEC's
//! queued commands each on its own, a command refused by arity, ACL,
//! OOM or MULTI's queueing, an unknown command), a batched GET that found
//! another type (WRONGTYPE), and a protocol error before the connection
//! closes. Not counted, as in Redis: the refusals written before a
//! client is registered (over `maxclients`, protected mode's `-DENIED`).
//!
//! ## The code
//! Redis's rule: the bytes after `-` up to the first space within the
//! reply's first [`CODE_SEARCH_BYTES`] bytes; `ERR` when there is no space
//! there. `-WRONGTYPE Operation …` counts under `WRONGTYPE`.
//!
//! ## Cost
//! Nothing on a reply that is not an error: the callers already test the
//! reply's first byte for `failed_calls` (`cmdstats.rs`). An error takes
//! its worker's own mutex (uncontended but for INFO and CONFIG RESETSTAT)
//! and one ordered-map lookup.
//!
//! ## Bound
//! At most [`ERROR_CODES_MAX`] distinct codes per worker (Redis 7.2's 128;
//! Redis 7.0 has no bound). Amalgam's error texts start with a fixed code,
//! so the set is small by construction; past the bound a new code counts
//! under [`OVERFLOW_CODE`], the name Redis 7.2 uses once it stops adding
//! codes, and the codes already seen go on counting.

use std::collections::BTreeMap;
use std::sync::Mutex;

/// How far into a reply the code's end (a space) is looked for (Redis's 32).
pub const CODE_SEARCH_BYTES: usize = 32;
/// Distinct error codes one worker keeps (Redis 7.2's ERROR_STATS_NUMBER).
pub const ERROR_CODES_MAX: usize = 128;
/// Where errors with codes past [`ERROR_CODES_MAX`] count.
pub const OVERFLOW_CODE: &[u8] = b"ERRORSTATS_DISABLED";

/// One worker's error counts (module notes).
#[derive(Debug, Default)]
pub struct ErrorStats {
    counts: Mutex<Counts>,
}

#[derive(Debug, Default, Clone)]
struct Counts {
    /// Every error reply (INFO stats' `total_error_replies`).
    total: u64,
    codes: BTreeMap<Box<[u8]>, u64>,
}

/// The code of an error reply (`-CODE message`), Redis's rule.
pub fn code_of(reply: &[u8]) -> &[u8] {
    let head = &reply[..reply.len().min(CODE_SEARCH_BYTES)];
    match head.iter().position(|&b| b == b' ') {
        Some(space) if reply.first() == Some(&b'-') => &reply[1..space],
        _ => b"ERR",
    }
}

impl ErrorStats {
    /// Counts `n` error replies of `code`.
    pub fn count(&self, code: &[u8], n: u64) {
        let mut c = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        c.total += n;
        if let Some(v) = c.codes.get_mut(code) {
            *v += n;
        } else if c.codes.len() < ERROR_CODES_MAX {
            c.codes.insert(code.into(), n);
        } else {
            *c.codes.entry(OVERFLOW_CODE.into()).or_insert(0) += n;
        }
    }

    /// Counts the error reply `reply` (it starts with `-`).
    pub fn note(&self, reply: &[u8]) {
        self.count(code_of(reply), 1);
    }

    /// CONFIG RESETSTAT.
    pub fn reset(&self) {
        *self.counts.lock().unwrap_or_else(|e| e.into_inner()) = Counts::default();
    }
}

/// Every worker's counts summed: the total and the codes in byte order
/// (Redis lists them from its radix tree, in that order).
pub fn merged(workers: &[crate::workers::WorkerStats]) -> (u64, BTreeMap<Box<[u8]>, u64>) {
    let mut total = 0;
    let mut codes = BTreeMap::new();
    for w in workers {
        let c = w.errors.counts.lock().unwrap_or_else(|e| e.into_inner()).clone();
        total += c.total;
        for (code, n) in c.codes {
            *codes.entry(code).or_insert(0) += n;
        }
    }
    (total, codes)
}

/// INFO errorstats' lines.
pub fn info_errorstats(codes: &BTreeMap<Box<[u8]>, u64>, text: &mut String) {
    use std::fmt::Write;
    for (code, n) in codes {
        let _ = write!(text, "errorstat_{}:count={n}\r\n", String::from_utf8_lossy(code));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_code_is_the_first_word_within_32_bytes() {
        assert_eq!(code_of(b"-WRONGTYPE Operation against a key"), b"WRONGTYPE");
        assert_eq!(code_of(b"-ERR unknown command"), b"ERR");
        assert_eq!(code_of(b"-NOPERM this user"), b"NOPERM");
        // No space within the first 32 bytes: ERR.
        assert_eq!(code_of(b"-ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFGHIJ x"), b"ERR");
        assert_eq!(code_of(b"-NOSPACE"), b"ERR");
    }

    #[test]
    fn counts_sum_and_reset() {
        let s = ErrorStats::default();
        s.note(b"-ERR x");
        s.note(b"-ERR y");
        s.count(b"WRONGTYPE", 3);
        let c = s.counts.lock().unwrap().clone();
        assert_eq!(c.total, 5);
        assert_eq!(c.codes.get(&b"ERR"[..]), Some(&2));
        assert_eq!(c.codes.get(&b"WRONGTYPE"[..]), Some(&3));
        s.reset();
        assert_eq!(s.counts.lock().unwrap().total, 0);
    }

    #[test]
    fn codes_past_the_bound_count_under_the_overflow_code() {
        let s = ErrorStats::default();
        for i in 0..ERROR_CODES_MAX + 10 {
            s.count(format!("E{i}").as_bytes(), 1);
        }
        s.count(b"E0", 1);
        let c = s.counts.lock().unwrap().clone();
        assert_eq!(c.total, ERROR_CODES_MAX as u64 + 11);
        assert_eq!(c.codes.len(), ERROR_CODES_MAX + 1);
        assert_eq!(c.codes.get(OVERFLOW_CODE), Some(&10));
        assert_eq!(c.codes.get(&b"E0"[..]), Some(&2));
    }
}
