//! Long scripts: `busy-reply-threshold` (Redis's `lua-time-limit`), BUSY
//! and SCRIPT KILL (issue 34 §4).
//!
//! Every run registers a [`Running`] (its held keys, its start, whether it
//! wrote, whether it was killed) in the shared [`Registry`]. The run's
//! instruction hook (vm.rs, every `HOOK_INSTRUCTIONS`) looks at the clock:
//! past the threshold the run marks itself busy and counts itself in
//! [`Registry::busy`], the one relaxed load the front end's request path
//! pays. While a script is busy, a command that would touch one of its
//! keys is answered `-BUSY` instead of waiting for the key's bucket (the
//! script holds it); commands on other keys go on, on every worker — where
//! Redis, with one thread, answers BUSY to everything. SCRIPT KILL ends a
//! busy script that has not written (its hook raises Redis's "Script
//! killed by user with SCRIPT KILL..." and keeps raising it, so `pcall`
//! cannot hold it); one that wrote is UNKILLABLE, as in Redis.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Redis's default `busy-reply-threshold` (`lua-time-limit`), ms.
pub const BUSY_REPLY_THRESHOLD_MS_DEFAULT: u64 = 5000;

/// Redis's reply to a command a busy script blocks.
pub const ERR_BUSY: &str = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";

/// What a killed script raises (and its caller gets, with the script's
/// name and line).
pub const ERR_KILLED: &str = "ERR Script killed by user with SCRIPT KILL...";

/// What a script still running at shutdown raises.
pub const ERR_SHUTDOWN: &str = "ERR Script killed: the server is shutting down";

/// One run of a script, as the others see it.
#[derive(Debug)]
pub struct Running {
    /// The keys it holds, sorted.
    pub keys: Vec<Vec<u8>>,
    /// Keys it came to hold as it ran (undeclared keys the engine added
    /// to its transaction: the server's `resp/script.rs`).
    grown: std::sync::Mutex<Vec<Vec<u8>>>,
    started: Instant,
    busy: AtomicBool,
    wrote: AtomicBool,
    kill: AtomicBool,
}

impl Running {
    /// Notes that the script changed the dataset (it can no longer be
    /// killed).
    pub fn wrote(&self) {
        self.wrote.store(true, Ordering::Relaxed);
    }

    /// True once SCRIPT KILL asked it to stop.
    pub fn killed(&self) -> bool {
        self.kill.load(Ordering::Relaxed)
    }

    /// True if it holds `key`.
    pub fn holds(&self, key: &[u8]) -> bool {
        self.keys.binary_search_by(|k| k[..].cmp(key)).is_ok()
            || self.grown.lock().unwrap_or_else(|e| e.into_inner()).iter().any(|k| k[..] == *key)
    }

    /// Notes that it holds `key` too, from now until it ends.
    pub fn grew(&self, key: Vec<u8>) {
        self.grown.lock().unwrap_or_else(|e| e.into_inner()).push(key);
    }
}

/// What SCRIPT KILL found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kill {
    /// No busy script: NOTBUSY.
    NotBusy,
    /// The busy script wrote: UNKILLABLE.
    Unkillable,
    /// Asked to stop: OK.
    Killed,
}

/// The runs in progress on every worker.
#[derive(Debug)]
pub struct Registry {
    runs: Mutex<Vec<Arc<Running>>>,
    busy: AtomicUsize,
    threshold_ms: AtomicU64,
    /// The server is shutting down: every run ends at its next hook,
    /// killable or not (SHUTDOWN NOSAVE's way out of a busy script).
    aborting: AtomicBool,
}

impl Default for Registry {
    fn default() -> Registry {
        Registry {
            runs: Mutex::new(Vec::new()),
            busy: AtomicUsize::new(0),
            threshold_ms: AtomicU64::new(BUSY_REPLY_THRESHOLD_MS_DEFAULT),
            aborting: AtomicBool::new(false),
        }
    }
}

impl Registry {
    /// Registers a run holding `keys` (sorted).
    pub fn start(&self, keys: Vec<Vec<u8>>) -> Arc<Running> {
        let r = Arc::new(Running {
            keys,
            grown: std::sync::Mutex::new(Vec::new()),
            started: Instant::now(),
            busy: AtomicBool::new(false),
            wrote: AtomicBool::new(false),
            kill: AtomicBool::new(false),
        });
        self.runs.lock().unwrap_or_else(|e| e.into_inner()).push(Arc::clone(&r));
        r
    }

    /// Removes a run that ended.
    pub fn end(&self, r: &Arc<Running>) {
        let mut runs = self.runs.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = runs.iter().position(|x| Arc::ptr_eq(x, r)) {
            runs.swap_remove(i);
        }
        if r.busy.load(Ordering::Relaxed) {
            self.busy.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// The hook's look at the clock: marks `r` busy once it has run past
    /// the threshold.
    pub fn tick(&self, r: &Running) {
        if r.busy.load(Ordering::Relaxed) {
            return;
        }
        let ms = r.started.elapsed().as_millis() as u64;
        if ms >= self.threshold_ms.load(Ordering::Relaxed) && !r.busy.swap(true, Ordering::Relaxed) {
            self.busy.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// True while some script is busy (one relaxed load: the request
    /// path's test).
    #[inline]
    pub fn busy(&self) -> bool {
        self.busy.load(Ordering::Relaxed) != 0
    }

    /// True if a busy script holds `key`.
    pub fn blocks(&self, key: &[u8]) -> bool {
        let runs = self.runs.lock().unwrap_or_else(|e| e.into_inner());
        runs.iter().any(|r| r.busy.load(Ordering::Relaxed) && r.holds(key))
    }

    /// SCRIPT KILL: stops every busy script that has not written.
    pub fn kill(&self) -> Kill {
        let runs = self.runs.lock().unwrap_or_else(|e| e.into_inner());
        let mut found = Kill::NotBusy;
        for r in runs.iter().filter(|r| r.busy.load(Ordering::Relaxed)) {
            if r.wrote.load(Ordering::Relaxed) {
                if found == Kill::NotBusy {
                    found = Kill::Unkillable;
                }
            } else {
                r.kill.store(true, Ordering::Relaxed);
                found = Kill::Killed;
            }
        }
        found
    }

    /// Shutdown: ends every run at its next hook (their callers get
    /// [`ERR_SHUTDOWN`]), so that the workers can stop.
    pub fn abort_all(&self) {
        self.aborting.store(true, Ordering::Relaxed);
    }

    /// What the hook of `r` must raise now, if anything.
    pub fn stop_reason(&self, r: &Running) -> Option<&'static str> {
        if r.killed() {
            Some(ERR_KILLED)
        } else if self.aborting.load(Ordering::Relaxed) {
            Some(ERR_SHUTDOWN)
        } else {
            None
        }
    }

    /// `busy-reply-threshold` in milliseconds.
    pub fn threshold_ms(&self) -> u64 {
        self.threshold_ms.load(Ordering::Relaxed)
    }

    /// CONFIG SET busy-reply-threshold.
    pub fn set_threshold_ms(&self, ms: u64) {
        self.threshold_ms.store(ms, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_turns_busy_past_the_threshold_and_kill_follows_writes() {
        let reg = Registry::default();
        reg.set_threshold_ms(0);
        let r = reg.start(vec![b"a".to_vec(), b"b".to_vec()]);
        assert!(!reg.busy());
        assert_eq!(reg.kill(), Kill::NotBusy);
        reg.tick(&r);
        assert!(reg.busy());
        assert!(reg.blocks(b"a") && !reg.blocks(b"c"));
        r.wrote();
        assert_eq!(reg.kill(), Kill::Unkillable);
        assert!(!r.killed());
        reg.end(&r);
        assert!(!reg.busy());
        let r = reg.start(vec![]);
        reg.tick(&r);
        assert_eq!(reg.kill(), Kill::Killed);
        assert!(r.killed());
        reg.end(&r);
    }
}
