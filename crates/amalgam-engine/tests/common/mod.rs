//! Helpers shared by the engine's integration tests.

/// This process's resident set size in bytes (`/proc/self/statm`'s second
/// field, in pages).
pub fn rss_bytes() -> usize {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: usize = s.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}
