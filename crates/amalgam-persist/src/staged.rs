//! A large value's log record, built while the value arrives (issue 18
//! §5).
//!
//! # Why
//! A value received in place (server `inplace.rs`) is stored without a
//! copy, but its log record still needed one: the journal's `Put` framed
//! the whole item into the log's scratch buffer, with its CRC32C, under
//! the key's bucket lock, on the worker. For a 512 MB value that was the
//! 0.6–0.8 s every other connection of the worker waited (the write(2)
//! itself is the committer thread's: `log.rs` § Large records).
//!
//! # How it works
//! * While the value arrives, each read's bytes are also copied into a
//!   [`Staged`] value (and its CRC32C extended): at most a read's worth
//!   (1 MiB) at a time, between the worker's other connections, as the
//!   item itself is filled.
//! * When the command publishes the value, the server offers the staged
//!   bytes to the journal of the publishing thread ([`stage`]) and takes
//!   back whatever was not used right after ([`unstage`]). The journal's
//!   `Put` of an item whose value *is* the staged one (the same address,
//!   length and key: the block the value was received into) frames only
//!   the record's head (`format::put_head`, the CRC combined with the
//!   value's) and hands the value's buffer to the log as a chunk of its
//!   own (`Log::append_staged`): no copy, no CRC pass under the lock.
//!   Any other `Put` is encoded as before.
//! * The record is byte for byte the one `format::put` makes, so recovery,
//!   replication and the golden format are unchanged; it reaches the file
//!   in two write(2) calls (the head closes the small records' chunk, the
//!   value is the next), one after the other under the log's I/O lock, and
//!   a crash between them is a torn record as any other.
//!
//! # Limits
//! The staged bytes are a second copy of the value in memory until the
//! record is written, as the scratch buffer was (the peak is unchanged,
//! the item plus its record), but from the value's first byte on rather
//! than from its publication, and outside the memory budget (`-m`), as
//! the log's buffers always were. Only values received in place are
//! staged: a large value that arrives any other way (APPEND, SETRANGE, a
//! MULTI) has its record framed by copy once its bucket lock is released
//! (`deferred.rs`).

use std::cell::RefCell;

use amalgam_engine::{ItemRef, TAG_BYTES};

/// A value's bytes as they arrive, for its log record (module notes).
#[derive(Debug)]
pub struct Staged {
    key: Vec<u8>,
    /// The address of the item's value (the prepared block's): what
    /// tells the journal's `Put` it is this value's.
    value_addr: usize,
    vlen: usize,
    value: Vec<u8>,
    /// CRC32C of `value`.
    crc: u32,
}

impl Staged {
    /// Staging for a value of `vlen` bytes for `key`, received at
    /// `value_addr` (the address of the value's first byte in its item).
    pub fn new(key: &[u8], value_addr: usize, vlen: usize) -> Staged {
        Staged { key: key.to_vec(), value_addr, vlen, value: Vec::with_capacity(vlen), crc: 0 }
    }

    /// The next bytes of the value, as they were received into its item.
    ///
    /// # Panics
    /// Past the value's length.
    pub fn extend(&mut self, bytes: &[u8]) {
        assert!(self.value.len() + bytes.len() <= self.vlen, "staged past the value's length");
        self.value.extend_from_slice(bytes);
        self.crc = crc32c::crc32c_append(self.crc, bytes);
    }

    /// True once every byte of the value is staged.
    pub fn is_complete(&self) -> bool {
        self.value.len() == self.vlen
    }

    /// Whether `it` is the item this value was received into.
    fn is_for(&self, it: &ItemRef<'_>) -> bool {
        self.is_complete()
            && it.tag() == TAG_BYTES
            && it.value().len() == self.vlen
            && it.value().as_ptr() as usize == self.value_addr
            && it.key() == self.key.as_slice()
    }
}

thread_local! {
    /// The value the calling thread is about to publish (module notes).
    static STAGED: RefCell<Option<Staged>> = const { RefCell::new(None) };
}

/// Offers `staged` to the journal of the calling thread's next `Put` of
/// its item (the caller publishes it next, then calls [`unstage`]).
pub fn stage(staged: Staged) {
    STAGED.with_borrow_mut(|s| *s = Some(staged));
}

/// Drops a staged value the journal did not take (the command stored
/// nothing: NX on an existing key, …); true if there was one.
pub fn unstage() -> bool {
    STAGED.with_borrow_mut(|s| s.take().is_some())
}

/// True if the staged value is `it`'s (its `Put` takes it).
pub(crate) fn is_staged_for(it: &ItemRef<'_>) -> bool {
    STAGED.with_borrow(|s| s.as_ref().is_some_and(|s| s.is_for(it)))
}

/// The staged value's bytes and CRC32C if `it` is its item (the journal's
/// `Put`).
pub(crate) fn take_for(it: &ItemRef<'_>) -> Option<(Vec<u8>, u32)> {
    STAGED.with_borrow_mut(|s| {
        if s.as_ref().is_some_and(|s| s.is_for(it)) {
            s.take().map(|s| (s.value, s.crc))
        } else {
            None
        }
    })
}
