//! Low-level pieces exposed for the loom models in `tests/loom.rs` only
//! (built under `--cfg loom`): the table's probe, bare items, and the
//! epoch scheme of one store over an empty pool. Its own file so that the
//! crate root imports nothing of the modules it declares.

pub use crate::table::{split_hash, BucketGuard, Probe, Table};
/// The bytes of a bare item (header, key, value).
pub fn encode_item(key: &[u8], value: &[u8], cas: u64) -> Vec<u8> {
    let meta = crate::item::Meta { cas, flags: 0, expiry: 0, expiry_ms: 0, marks: 0 };
    let mut buf = vec![0u8; crate::item::encoded_len(key.len(), value.len(), &meta)];
    let at = crate::item::write_header_and_key(&mut buf, key, value.len(), &meta);
    buf[at..].copy_from_slice(value);
    buf
}
/// Builds a bare item in a leaked buffer (loom models have no pools).
pub fn leak_item(key: &[u8], value: &[u8], cas: u64) -> *const u8 {
    Box::leak(encode_item(key, value, cas).into_boxed_slice()).as_ptr()
}
/// Copies the item at `src` to `dst` the way the segment reclaimer
/// does (`item::copy_with_freq`, keeping its frequency); returns its
/// length.
///
/// # Safety
/// `src` is a live item; `dst` is writable for its length, unpublished
/// and disjoint from it.
pub unsafe fn copy_item(src: *const u8, dst: *mut u8) -> usize {
    // SAFETY: forwarded from the caller.
    unsafe {
        let total = crate::item::layout(src).total();
        crate::item::copy_with_freq(src, dst, total, crate::item::freq(src));
        total
    }
}
/// The real epoch scheme (`local.rs`) of one store, over an empty pool.
/// Each method acts for the calling loom thread's own `Local`.
pub struct Epochs {
    epochs: crate::local::Epochs,
    shared: crate::pool::SharedPool,
}
impl std::fmt::Debug for Epochs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("loom_api::Epochs")
    }
}
impl Default for Epochs {
    fn default() -> Self {
        Epochs { epochs: crate::local::Epochs::new(), shared: crate::pool::SharedPool::new(0) }
    }
}
impl Epochs {
    fn local(&self) -> &crate::local::Local {
        self.epochs.local(&self.shared)
    }
    /// `Epochs::pin` (re-entrant).
    pub fn pin(&self) {
        self.epochs.pin(self.local())
    }
    /// `Epochs::unpin`.
    pub fn unpin(&self) {
        self.epochs.unpin(self.local(), &self.shared)
    }
    /// `Epochs::retire` of something already unlinked; `free` runs
    /// where the collector would free it.
    pub fn retire(&self, free: impl FnOnce() + Send + 'static) {
        self.epochs.retire(self.local(), &self.shared, crate::local::Garbage::Loom(Box::new(free)))
    }
    /// `Epochs::reclaim`: seal, then up to `rounds` advance-and-free
    /// passes; true when all this thread retired is freed.
    pub fn reclaim(&self, rounds: usize) -> bool {
        self.epochs.reclaim(self.local(), &self.shared, rounds)
    }
}
/// The key of an item made by `leak_item`.
pub fn key_of(p: *const u8) -> Vec<u8> {
    // SAFETY: p is a leaked item, never freed.
    unsafe { crate::item::key(p).to_vec() }
}
/// The value of an item made by `leak_item`.
pub fn value_of(p: *const u8) -> Vec<u8> {
    // SAFETY: p is a leaked item, never freed.
    unsafe {
        let l = crate::item::layout(p);
        std::slice::from_raw_parts(p.add(l.value_at()), l.vlen).to_vec()
    }
}
