//! The script cache: every body EVAL ran or SCRIPT LOAD loaded, by its
//! SHA-1, shared by the workers (lib.rs: each worker compiles its own
//! function from the body).

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A script's name: its body's SHA-1 in 40 lower-case hex digits.
pub type Sha = [u8; 40];

/// The SHA-1 of `body` in lower-case hex (EVALSHA's name for it, and
/// `redis.sha1hex`).
pub fn sha1_hex(body: &[u8]) -> Sha {
    let hex = sha1_smol::Sha1::from(body).digest().to_string();
    let mut sha = [0u8; 40];
    sha.copy_from_slice(hex.as_bytes());
    sha
}

/// `text` as a script name: 40 hex digits, lower-cased (EVALSHA accepts
/// either case, as Redis does); None for anything else.
pub fn parse_sha(text: &[u8]) -> Option<Sha> {
    if text.len() != 40 || !text.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    let mut sha = [0u8; 40];
    for (d, s) in sha.iter_mut().zip(text) {
        *d = s.to_ascii_lowercase();
    }
    Some(sha)
}

/// The bodies by name, and the generation SCRIPT FLUSH bumps.
#[derive(Debug, Default)]
pub struct Scripts {
    bodies: Mutex<HashMap<Sha, Arc<[u8]>>>,
    generation: AtomicU64,
    /// The bytes every worker's Lua state holds, as they last reported
    /// ([`Scripts::note_lua_bytes`]).
    lua_bytes: AtomicI64,
    /// The runs in progress (busy.rs: BUSY and SCRIPT KILL).
    pub runs: Arc<crate::busy::Registry>,
    /// FUNCTION's libraries (functions.rs).
    pub functions: crate::functions::Libraries,
}

impl Scripts {
    /// Remembers `body` under `sha` (EVAL's and SCRIPT LOAD's).
    pub fn insert(&self, sha: Sha, body: &[u8]) {
        let mut m = self.bodies.lock().unwrap_or_else(|e| e.into_inner());
        m.entry(sha).or_insert_with(|| Arc::from(body));
    }

    /// The body named `sha`, if cached.
    pub fn get(&self, sha: &Sha) -> Option<Arc<[u8]>> {
        self.bodies.lock().unwrap_or_else(|e| e.into_inner()).get(sha).cloned()
    }

    /// SCRIPT EXISTS: whether `sha` names a cached body.
    pub fn contains(&self, sha: &Sha) -> bool {
        self.bodies.lock().unwrap_or_else(|e| e.into_inner()).contains_key(sha)
    }

    /// SCRIPT FLUSH: forgets every body; every worker drops its compiled
    /// functions before its next run.
    pub fn flush(&self) {
        let old = std::mem::take(&mut *self.bodies.lock().unwrap_or_else(|e| e.into_inner()));
        self.generation.fetch_add(1, Ordering::Release);
        drop(old);
    }

    /// How many bodies are cached (INFO's `number_of_cached_scripts`).
    pub fn len(&self) -> usize {
        self.bodies.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// True when no body is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes the cached bodies take (INFO's `used_memory_scripts_eval`).
    pub fn body_bytes(&self) -> usize {
        self.bodies.lock().unwrap_or_else(|e| e.into_inner()).values().map(|b| b.len() + 40).sum()
    }

    /// A worker's Lua state grew (or shrank) by `delta` bytes since its
    /// last report (`Vm::memory_delta`).
    pub fn note_lua_bytes(&self, delta: i64) {
        if delta != 0 {
            self.lua_bytes.fetch_add(delta, Ordering::Relaxed);
        }
    }

    /// The bytes the workers' Lua states hold (INFO's `used_memory_lua`).
    pub fn lua_bytes(&self) -> u64 {
        self.lua_bytes.load(Ordering::Relaxed).max(0) as u64
    }

    /// The flush generation ([`Scripts::flush`]).
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha1_of_the_empty_body_is_redis_s() {
        assert_eq!(&sha1_hex(b""), b"da39a3ee5e6b4b0d3255bfef95601890afd80709");
        assert_eq!(&sha1_hex(b"return 1"), b"e0e1f9fabfc9d4800c877a703b823ac0578ff8db");
    }

    #[test]
    fn names_parse_in_either_case() {
        let upper = b"E0E1F9FABFC9D4800C877A703B823AC0578FF8DB";
        assert_eq!(parse_sha(upper), Some(sha1_hex(b"return 1")));
        assert_eq!(parse_sha(b"abc"), None);
        assert_eq!(parse_sha(&[b'g'; 40]), None);
    }

    #[test]
    fn flush_forgets_and_bumps_the_generation() {
        let s = Scripts::default();
        let sha = sha1_hex(b"return 1");
        s.insert(sha, b"return 1");
        assert!(s.contains(&sha));
        let g = s.generation();
        s.flush();
        assert!(!s.contains(&sha));
        assert_eq!(s.generation(), g + 1);
    }
}
