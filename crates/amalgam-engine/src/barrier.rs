//! Asymmetric fences for the epoch scheme (`local.rs`): a free *light*
//! side for every operation's pin, a costly *heavy* side for the rare
//! reclaimer.
//!
//! # HOW IT WORKS
//!
//! Every operation pins its thread's epoch: it stores its mark, then must
//! not load a shared pointer before the reclaimer can see that mark
//! (`local.rs`, "WHY IT IS CORRECT"). With plain fences both sides pay a
//! full barrier — the pin's is a locked `xchg` on x86-64, 20-odd cycles on
//! every GET — although the other side (sealing a bag of garbage, advancing
//! the epoch) runs once per many operations. Linux's `membarrier(2)` moves
//! that cost where it belongs, as the man page proposes ("replace the
//! fast-side memory barriers by simple compiler barriers ... and the
//! slow-side memory barriers by calls to membarrier()") and as folly
//! (`folly/synchronization/AsymmetricThreadFence.h`,
//! `asymmetric_thread_fence_light` / `_heavy`, used by its hazard pointers
//! and RCU) and liburcu's `urcu-memb` flavour do:
//!
//! * [`light`]: the reader's side, a *compiler* fence only: the compiler
//!   keeps the mark store before the section's loads; the CPU may still
//!   reorder them (x86's store buffer does).
//! * [`heavy`]: the reclaimer's side, `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`:
//!   when it returns, every thread of this process that was running has
//!   executed a full memory barrier (the kernel interrupts its CPU), and
//!   every thread that was not running has passed one in its context
//!   switch; the call itself is a full barrier for the caller.
//!
//! The process registers its intent once (`MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED`),
//! in [`init`], which every `Epochs` calls before it exists, so before any
//! pin or reclaim of any store.
//!
//! # WHY THE LIGHT SIDE IS ENOUGH
//!
//! What membarrier gives, in the terms of the SeqCst-fence argument of
//! `local.rs`: each heavy fence H acts as one SeqCst fence executed by
//! every thread of the process at some instruction boundary of its own
//! (for a running thread, where the kernel's interrupt lands; for a
//! sleeping one, its context switch), and the caller's own fences around
//! the call. So heavy fences are totally ordered, and for a pinned reader
//! R each H has a point P_H in R's program order; the compiler fence keeps
//! R's accesses in program order around every such point. The argument
//! then runs with P_H in place of R's fence:
//!
//! * *The stamp.* A writer W unlinks item X, runs H_W, reads the epoch S
//!   for X's bag. If R holds X, R's pointer load did not see the unlink,
//!   so it precedes P_{H_W}; so do R's epoch read and mark store (earlier
//!   in R's program order), hence W's stamp read sees an epoch ≥ R's
//!   epoch e: e ≤ S.
//! * *The advance from S + 1.* A reads g = S + 1, runs H_A, scans the
//!   marks. If P_{H_A} follows R's mark store, the scan sees the mark
//!   (e ≤ S ≠ g: no advance) or its Release clear (R's section is over).
//!   Otherwise P_{H_A} precedes R's mark store, hence precedes P_{H_W}
//!   (above): H_A is before H_W in the heavy fences' order, so W's stamp
//!   read, after H_W, sees an epoch ≥ the g = S + 1 that A read before H_A
//!   — but it read S. Either way X is not freed while R can reach it.
//!
//! Nothing here orders two light fences with each other, and the scheme
//! never needs it: the man page's table pairs `barrier()` (a compiler
//! barrier) with `membarrier()` as ordered and `barrier()` with
//! `barrier()` as not. This is the ordering of the pin against the
//! reclaimer that Mercury §3 buys with a per-thread lock each worker takes
//! around every operation and the expand thread takes to change the
//! table's state; the lock-free reads it protects are MemC3's optimistic
//! lookups (§3.2.1).
//!
//! # FALLBACK
//!
//! Without membarrier (not Linux; a kernel before 4.14; a sandbox that
//! refuses it; registration failing; `AMALGAM_MEMBARRIER=0` in the
//! environment) both sides are SeqCst fences, as before (the pin keeps its
//! x86-64 `xchg`). The choice is made once per process, before the first
//! store exists, and read on the pin as one relaxed load of a static
//! (`asymmetric`): a predictable branch, cheaper than a call through a
//! function pointer (measured in `docs/bench-log/2026-11-25-engine.md` §
//! The epoch pin without a fence, issue 23 §2). Every thread sees the final value: `init` completes (a
//! `Once`, which synchronizes) before any `Epochs` is built, and every
//! thread that uses a store got it after that.
//!
//! # LOOM
//!
//! loom cannot model membarrier, so under `cfg(loom)` [`asymmetric`] is
//! `false` and both sides are the SeqCst fences loom models. The model of
//! the ordering is the same: a heavy fence that orders with every light
//! fence is what a pair of SeqCst fences gives (the two cases above are
//! the two orders of the fences in the SeqCst total order).
//!
//! # LIMITATIONS
//!
//! A heavy fence costs a system call and an interrupt on every CPU that
//! runs one of the process's threads (about 1 µs here with the other CPU
//! busy, 0.2 µs alone), so the reclaimer side must stay rare: with
//! membarrier `local.rs` seals bags of `BAG_ITEMS_MAX_ASYMMETRIC` items
//! rather than 64, and pays one heavy fence per seal-and-advance.

#[cfg(not(loom))]
use std::sync::atomic::AtomicBool;
use std::sync::atomic::{compiler_fence, Ordering};

/// `membarrier` commands (linux/membarrier.h).
#[cfg(all(target_os = "linux", not(loom)))]
mod cmd {
    /// Returns the supported commands as a bit mask.
    pub const QUERY: libc::c_int = 0;
    /// A full barrier on every running thread of the calling process.
    pub const PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
    /// Required once per process before `PRIVATE_EXPEDITED`.
    pub const REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;
}

/// Set to `0` to make a process use the SeqCst fences on both sides (for
/// comparing the two, and a way out should a kernel misbehave).
pub const MEMBARRIER_ENV: &str = "AMALGAM_MEMBARRIER";

/// True once the process is registered for private expedited membarrier:
/// pins use [`light`], reclaimers [`heavy`] as membarrier. Written once,
/// inside `INIT`, before any `Epochs` exists (only ever on Linux).
#[cfg(not(loom))]
static ASYMMETRIC: AtomicBool = AtomicBool::new(false);
#[cfg(all(target_os = "linux", not(loom)))]
static INIT: std::sync::Once = std::sync::Once::new();

/// Decides, once per process, between membarrier and plain fences; later
/// calls return at once. Called by `Epochs::new`.
pub(crate) fn init() {
    #[cfg(all(target_os = "linux", not(loom)))]
    INIT.call_once(|| {
        if std::env::var_os(MEMBARRIER_ENV).is_some_and(|v| v == "0") {
            return;
        }
        // SAFETY: membarrier takes integers only and touches no memory.
        let cmds = unsafe { libc::syscall(libc::SYS_membarrier, cmd::QUERY, 0, 0) };
        let wanted = (cmd::PRIVATE_EXPEDITED | cmd::REGISTER_PRIVATE_EXPEDITED) as libc::c_long;
        if cmds < 0 || cmds & wanted != wanted {
            return;
        }
        // SAFETY: as above.
        if unsafe { libc::syscall(libc::SYS_membarrier, cmd::REGISTER_PRIVATE_EXPEDITED, 0, 0) } == 0 {
            // Relaxed: the Once's completion publishes it (module notes).
            ASYMMETRIC.store(true, Ordering::Relaxed);
        }
    });
}

/// True when the fences are asymmetric (membarrier registered); false
/// under loom, off Linux, and in the fallback.
#[cfg(not(loom))]
#[inline(always)]
pub(crate) fn asymmetric() -> bool {
    ASYMMETRIC.load(Ordering::Relaxed)
}

#[cfg(loom)]
#[inline(always)]
pub(crate) fn asymmetric() -> bool {
    false
}

/// The pin's side when [`asymmetric`]: orders the preceding mark store
/// before the section's loads for the compiler only (module notes: the
/// heavy side makes the CPU's order right).
#[inline(always)]
pub(crate) fn light() {
    compiler_fence(Ordering::SeqCst);
}

/// The reclaimer's side: membarrier when [`asymmetric`], else a SeqCst
/// fence (the one under loom).
#[inline]
pub(crate) fn heavy() {
    #[cfg(all(target_os = "linux", not(loom)))]
    if asymmetric() {
        membarrier();
        return;
    }
    crate::sync::fence(Ordering::SeqCst);
}

/// Out of line and cold: a system call per many operations.
#[cfg(all(target_os = "linux", not(loom)))]
#[cold]
#[inline(never)]
fn membarrier() {
    // A SeqCst fence too, so that two heavy fences are ordered in the
    // language's own terms (the scheme orders seals against advances);
    // tens of cycles against the call's microsecond.
    std::sync::atomic::fence(Ordering::SeqCst);
    // SAFETY: membarrier takes integers only and touches no memory.
    let r = unsafe { libc::syscall(libc::SYS_membarrier, cmd::PRIVATE_EXPEDITED, 0, 0) };
    std::sync::atomic::fence(Ordering::SeqCst);
    // The man page: "with flags set to 0, this system call is guaranteed to
    // always return the same value until reboot", and the registration
    // succeeded. Should it fail anyway, pins have been running with
    // compiler fences only and no reclaim is safe: stop rather than free
    // memory a reader may hold.
    if r != 0 {
        eprintln!(
            "amalgam-engine: membarrier(PRIVATE_EXPEDITED) failed after registering ({}); aborting rather than \
             risk freeing memory in use (set {MEMBARRIER_ENV}=0 to use plain fences)",
            std::io::Error::last_os_error()
        );
        std::process::abort();
    }
}

#[cfg(all(test, target_os = "linux", not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn membarrier_registers_here_unless_disabled() {
        init();
        // SAFETY: as in `init`.
        let cmds = unsafe { libc::syscall(libc::SYS_membarrier, cmd::QUERY, 0, 0) };
        let disabled = std::env::var_os(MEMBARRIER_ENV).is_some_and(|v| v == "0");
        let supported = cmds >= 0 && cmds & (cmd::PRIVATE_EXPEDITED as libc::c_long) != 0;
        assert_eq!(asymmetric(), supported && !disabled, "query gave {cmds:#x}");
        // Either way both sides run (and a failing membarrier would abort).
        light();
        heavy();
    }
}
