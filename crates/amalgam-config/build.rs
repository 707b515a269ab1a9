//! Records the build's git commit for `--version` and INFO's
//! `redis_git_sha1`/`amalgam_git_sha1`, as Redis's `mkreleasehdr.sh` does.
//! `AMALGAM_GIT_SHA1` in the environment wins (the Dockerfile passes it:
//! its build context has no `.git`); outside a git checkout (a source
//! tarball) or without git, the commit is `00000000`, Redis's own
//! placeholder, and the build goes on.

use std::process::Command;

/// Redis prints its commit as 8 hex digits (`redis_git_sha1:00000000`).
const SHA_HEX_DIGITS: usize = 8;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    // A build without .git (the Dockerfile's) passes the commit in.
    println!("cargo:rerun-if-env-changed=AMALGAM_GIT_SHA1");
    let given = std::env::var("AMALGAM_GIT_SHA1").ok().filter(|s| s != "00000000");
    let sha = given
        .or_else(|| git(&["rev-parse", "HEAD"]))
        .filter(|s| s.len() >= SHA_HEX_DIGITS && s.bytes().all(|b| b.is_ascii_hexdigit()))
        .map(|s| s[..SHA_HEX_DIGITS].to_string())
        .unwrap_or_else(|| "0".repeat(SHA_HEX_DIGITS));
    println!("cargo:rustc-env=AMALGAM_GIT_SHA1={sha}");
    // Rebuilt when HEAD moves (a commit, a checkout); a missing file
    // (no checkout) is fine: cargo then reruns this only on source changes.
    // (--git-path: in a worktree, HEAD is the worktree's and the branch
    // is the main checkout's.) Uncommitted changes are not tracked:
    // watching the index would rebuild the server at every `git add`.
    for path in ["HEAD".to_string()].into_iter().chain(git(&["symbolic-ref", "-q", "HEAD"])) {
        // A packed ref has no file of its own: watching a missing file
        // would rerun this at every build.
        if let Some(p) = git(&["rev-parse", "--git-path", &path]).filter(|p| std::path::Path::new(p).exists()) {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
