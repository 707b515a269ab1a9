//! A large value received straight into its item (the server's
//! `inplace.rs` tells how and when): the item the engine prepared and,
//! with persistence or a replication stream, its log record staged beside
//! it. The event loop (amalgam-net) reads into it; the SET that finally
//! stores it is a data command's (amalgam-commands `strings::set`), so the
//! type lives here, below both, beside the staged record it carries.

use amalgam_engine::Prepared;

/// A value being received into its item and, with persistence, into
/// its log record beside it (persist `staged.rs`: the record is then not
/// copied from the item under the bucket lock when the value is stored).
#[derive(Debug)]
pub struct Receiving {
    pub value: Prepared,
    pub staged: Option<crate::Staged>,
}

impl Receiving {
    /// `value` as it starts to arrive; `journaled`: staged for the log
    /// or the replication stream as well.
    pub fn new(mut value: Prepared, journaled: bool) -> Receiving {
        // Where the value's first byte lies in its item (nothing is
        // received yet: the next bytes to fill are the first).
        let staged = journaled.then(|| {
            let at = value.unfilled(0).as_ptr() as usize;
            crate::Staged::new(value.key(), at, value.len())
        });
        Receiving { value, staged }
    }

    /// Copies the start of `bytes` into the value (and the record);
    /// returns how many it took.
    pub fn extend_from(&mut self, bytes: &[u8]) -> usize {
        let took = self.value.extend_from(bytes);
        if let Some(s) = self.staged.as_mut() {
            s.extend(&bytes[..took]);
        }
        took
    }

    /// Stores the value with `publish` (`Store::put_prepared`), its staged
    /// record offered to the journal meanwhile.
    pub fn publish<R>(self, publish: impl FnOnce(Prepared) -> R) -> R {
        let _staging = Staging::new(self.staged);
        publish(self.value)
    }
}

impl std::ops::Deref for Receiving {
    type Target = Prepared;
    fn deref(&self) -> &Prepared {
        &self.value
    }
}

impl std::ops::DerefMut for Receiving {
    fn deref_mut(&mut self) -> &mut Prepared {
        &mut self.value
    }
}

/// A staged record offered to this thread's journal, withdrawn when
/// dropped (the command stored nothing, or the journal took it).
struct Staging;

impl Staging {
    fn new(staged: Option<crate::Staged>) -> Staging {
        if let Some(s) = staged {
            crate::staged::stage(s);
        }
        Staging
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        crate::staged::unstage();
    }
}

/// A value whose receiving in place has just started: the value, and the
/// request's front for the parser once it is in.
#[derive(Debug)]
pub struct Started {
    pub value: Receiving,
    /// The request's bytes before the value, with the value rewritten as
    /// empty, then whatever followed the value in the read buffer.
    pub front: Vec<u8>,
}
