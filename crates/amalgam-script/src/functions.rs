//! Redis 7.0 Functions: libraries of named Lua functions loaded with
//! FUNCTION LOAD and called with FCALL / FCALL_RO; and the shebang line
//! (`#!lua name=… ` for a library, `#!lua flags=…` for an EVAL script).
//!
//! The libraries are shared by the workers ([`Libraries`]: their code and
//! what each registered, behind a mutex taken by FUNCTION's subcommands
//! and by a worker's first call into a library since the last change).
//! Each worker runs a library's code in its own Lua state the first time
//! it calls one of its functions (vm.rs, `Vm::load_library`), as it
//! compiles an EVAL script: the code registers its functions with
//! `redis.register_function` and nothing else (no `redis.call` while
//! loading, as in Redis). A change (LOAD, DELETE, FLUSH) bumps the
//! generation and every worker drops its loaded functions before its next
//! call.
//!
//! FUNCTION DUMP and RESTORE move the libraries in Redis 7.0's payload
//! (amalgam-persist's `rdb::encode_functions`): a dump from redis-server
//! restores here and the other way round. Not yet (issue 34's next
//! step): persistence and replication of the libraries; they live until
//! the server stops.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The shebang flags Redis 7.0 knows.
pub const FLAGS: [&str; 5] = ["no-writes", "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys"];

/// FUNCTION RESTORE's policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Add the libraries; one that exists already aborts the restore (the
    /// default).
    Append,
    /// Add them, in place of those of the same names.
    Replace,
    /// Delete every library first.
    Flush,
}

/// What a library registered for one function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionInfo {
    pub name: String,
    pub description: Option<String>,
    /// Among [`FLAGS`], as given.
    pub flags: Vec<String>,
}

impl FunctionInfo {
    /// True if the function declared `no-writes` (FCALL_RO may call it).
    pub fn no_writes(&self) -> bool {
        self.flags.iter().any(|f| f == "no-writes")
    }
}

/// A loaded library.
#[derive(Debug)]
pub struct Library {
    pub name: String,
    pub code: Arc<[u8]>,
    pub functions: Vec<FunctionInfo>,
}

#[derive(Debug, Default)]
struct State {
    libs: BTreeMap<String, Arc<Library>>,
    /// Function name → its library.
    owner: HashMap<String, String>,
}

/// Every library, shared by the workers.
#[derive(Debug, Default)]
pub struct Libraries {
    state: Mutex<State>,
    generation: AtomicU64,
}

impl Libraries {
    /// FUNCTION LOAD's last step: adds `lib` (checked by a worker's load),
    /// or with `replace` puts it in place of the library of that name.
    /// Errors are Redis's texts.
    pub fn add(&self, lib: Library, replace: bool) -> Result<(), String> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if st.libs.contains_key(&lib.name) && !replace {
            return Err(format!("ERR Library '{}' already exists", lib.name));
        }
        for f in &lib.functions {
            if let Some(owner) = st.owner.get(&f.name) {
                if owner != &lib.name {
                    return Err(format!("ERR Function {} already exists", f.name));
                }
            }
        }
        if let Some(old) = st.libs.remove(&lib.name) {
            for f in &old.functions {
                st.owner.remove(&f.name);
            }
        }
        for f in &lib.functions {
            st.owner.insert(f.name.clone(), lib.name.clone());
        }
        st.libs.insert(lib.name.clone(), Arc::new(lib));
        self.generation.fetch_add(1, Ordering::Release);
        Ok(())
    }

    /// FUNCTION RESTORE: `libs` (each checked by a worker's load) added
    /// all or none, by `policy`. Errors are Redis's texts.
    pub fn restore(&self, libs: Vec<Library>, policy: Policy) -> Result<(), String> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut next = match policy {
            Policy::Flush => State::default(),
            Policy::Append | Policy::Replace => State { libs: st.libs.clone(), owner: st.owner.clone() },
        };
        for lib in libs {
            if let Some(old) = next.libs.get(&lib.name) {
                if policy != Policy::Replace {
                    return Err(format!("ERR Library {} already exists", lib.name));
                }
                for f in &old.functions {
                    next.owner.remove(&f.name);
                }
                next.libs.remove(&lib.name);
            }
            for f in &lib.functions {
                if next.owner.contains_key(&f.name) {
                    return Err(format!("ERR Function {} already exists", f.name));
                }
                next.owner.insert(f.name.clone(), lib.name.clone());
            }
            next.libs.insert(lib.name.clone(), Arc::new(lib));
        }
        *st = next;
        self.generation.fetch_add(1, Ordering::Release);
        Ok(())
    }

    /// FUNCTION DELETE.
    pub fn delete(&self, name: &str) -> Result<(), String> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let Some(old) = st.libs.remove(name) else { return Err("ERR Library not found".into()) };
        for f in &old.functions {
            st.owner.remove(&f.name);
        }
        self.generation.fetch_add(1, Ordering::Release);
        Ok(())
    }

    /// FUNCTION FLUSH.
    pub fn flush(&self) {
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) = State::default();
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// The library holding function `name`, and the function.
    pub fn find(&self, name: &str) -> Option<(Arc<Library>, FunctionInfo)> {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let lib = st.libs.get(st.owner.get(name)?)?;
        let f = lib.functions.iter().find(|f| f.name == name)?.clone();
        Some((Arc::clone(lib), f))
    }

    /// Every library, by name.
    pub fn list(&self) -> Vec<Arc<Library>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).libs.values().cloned().collect()
    }

    /// (libraries, functions): FUNCTION STATS and INFO.
    pub fn counts(&self) -> (usize, usize) {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        (st.libs.len(), st.owner.len())
    }

    /// Bumped by every change ([`Libraries::add`], delete, flush).
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }
}

/// A library's first line: `#!lua name=<library>`; the library's name,
/// or Redis's error.
pub fn library_name(code: &[u8]) -> Result<String, String> {
    let Some(rest) = code.strip_prefix(b"#!") else { return Err("ERR Missing library metadata".into()) };
    let line = &rest[..rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len())];
    let line = String::from_utf8_lossy(line);
    let mut parts = line.split(' ').filter(|p| !p.is_empty());
    let engine = parts.next().unwrap_or("");
    if !engine.eq_ignore_ascii_case("lua") {
        return Err(format!("ERR Engine '{engine}' not found"));
    }
    let mut name = None;
    for p in parts {
        match p.strip_prefix("name=") {
            Some(n) => name = Some(n.to_string()),
            None => return Err(format!("ERR Invalid metadata value given: {p}")),
        }
    }
    name.ok_or_else(|| "ERR Library name was not given".into())
}

/// An EVAL script's flags from its shebang (`#!lua flags=no-writes,…`):
/// None without a shebang (Redis's "no flags given": the script may
/// write, and EVAL_RO refuses only its writes), else the flags; an error
/// in Redis's words.
pub fn script_flags(body: &[u8]) -> Result<Option<Vec<String>>, String> {
    let Some(rest) = body.strip_prefix(b"#!") else { return Ok(None) };
    let line = &rest[..rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len())];
    let line = String::from_utf8_lossy(line);
    let mut parts = line.split(' ').filter(|p| !p.is_empty());
    let engine = parts.next().unwrap_or("");
    if engine != "lua" {
        return Err(format!("ERR Unexpected engine in script shebang: {engine}"));
    }
    let mut flags = Vec::new();
    for p in parts {
        let Some(list) = p.strip_prefix("flags=") else {
            return Err(format!("ERR Unknown lua shebang option: {p}"));
        };
        for f in list.split(',').filter(|f| !f.is_empty()) {
            if !FLAGS.contains(&f) {
                return Err(format!("ERR Unexpected flag in script shebang: {f}"));
            }
            flags.push(f.to_string());
        }
    }
    Ok(Some(flags))
}

/// The code Lua compiles for a body with a shebang: the first line made a
/// comment, so line numbers stay the body's.
pub fn without_shebang(body: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    if body.starts_with(b"#!") {
        let mut v = Vec::with_capacity(body.len() + 2);
        v.extend_from_slice(b"--");
        v.extend_from_slice(body);
        std::borrow::Cow::Owned(v)
    } else {
        std::borrow::Cow::Borrowed(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shebangs_parse_as_redis_s() {
        assert_eq!(library_name(b"#!lua name=mylib\nx"), Ok("mylib".into()));
        assert_eq!(library_name(b"x"), Err("ERR Missing library metadata".into()));
        assert_eq!(library_name(b"#!lua\nx"), Err("ERR Library name was not given".into()));
        assert_eq!(library_name(b"#!lua name=l foo=bar\n"), Err("ERR Invalid metadata value given: foo=bar".into()));
        assert_eq!(library_name(b"#!js name=l\n"), Err("ERR Engine 'js' not found".into()));
        assert_eq!(script_flags(b"return 1"), Ok(None));
        assert_eq!(script_flags(b"#!lua\nreturn 1"), Ok(Some(vec![])));
        assert_eq!(
            script_flags(b"#!lua flags=no-writes,allow-oom\n"),
            Ok(Some(vec!["no-writes".into(), "allow-oom".into()]))
        );
        assert_eq!(script_flags(b"#!lua name=x\n"), Err("ERR Unknown lua shebang option: name=x".into()));
        assert_eq!(&*without_shebang(b"#!lua\nreturn 1"), b"--#!lua\nreturn 1");
    }

    #[test]
    fn libraries_own_their_function_names() {
        let libs = Libraries::default();
        let f = |n: &str| FunctionInfo { name: n.into(), description: None, flags: vec![] };
        let lib = |n: &str, fs: &[&str]| Library {
            name: n.into(),
            code: Arc::from(&b""[..]),
            functions: fs.iter().map(|x| f(x)).collect(),
        };
        assert_eq!(libs.add(lib("a", &["f", "g"]), false), Ok(()));
        assert_eq!(libs.add(lib("a", &["h"]), false), Err("ERR Library 'a' already exists".into()));
        assert_eq!(libs.add(lib("b", &["f"]), false), Err("ERR Function f already exists".into()));
        assert_eq!(libs.add(lib("a", &["h"]), true), Ok(()));
        assert!(libs.find("f").is_none() && libs.find("h").is_some());
        assert_eq!(libs.counts(), (1, 1));
        assert_eq!(libs.delete("zz"), Err("ERR Library not found".into()));
        libs.flush();
        assert_eq!(libs.counts(), (0, 0));
    }
}
