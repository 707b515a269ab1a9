//! The atomics the concurrency core uses: std's in normal builds, loom's
//! under `RUSTFLAGS="--cfg loom"` so the loom models in `tests/loom.rs`
//! explore the real bucket and expansion code rather than a copy of it.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize};

pub(crate) use std::sync::atomic::Ordering;

/// Spin-wait hint. Under loom a spin must yield to the model's scheduler,
/// or a spinning thread would explore forever.
#[inline]
pub(crate) fn spin_hint() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::hint::spin_loop();
}
