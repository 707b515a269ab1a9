//! The process's own figures, read from the kernel: its resident set
//! (INFO's `used_memory_rss`, and `mem_fragmentation_ratio` from it).
//! Linux only (`/proc/self/status`); elsewhere None, and INFO shows 0.

/// The most lines of `/proc/self/status` read looking for `VmRSS` (it is
/// about the twentieth of some sixty).
const STATUS_LINES_MAX: usize = 128;

/// The process's resident set in bytes (`VmRSS` of `/proc/self/status`),
/// None where the kernel does not say.
pub fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    vm_rss(&status)
}

/// `VmRSS:   1234 kB` → 1234 × 1024.
fn vm_rss(status: &str) -> Option<u64> {
    let line = status.lines().take(STATUS_LINES_MAX).find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line["VmRSS:".len()..].trim().strip_suffix("kB")?.trim().parse().ok()?;
    kb.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_kernels_line() {
        assert_eq!(vm_rss("Name:\tx\nVmPeak:\t  10 kB\nVmRSS:\t    1234 kB\n"), Some(1234 * 1024));
        assert_eq!(vm_rss("Name:\tx\n"), None);
        assert_eq!(vm_rss("VmRSS:\t12 MB\n"), None);
    }

    #[test]
    fn this_process_is_resident_on_linux() {
        if cfg!(target_os = "linux") {
            assert!(resident_bytes().is_some_and(|b| b > 0));
        }
    }
}
