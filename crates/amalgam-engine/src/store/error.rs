//! [`Error`]: why an operation did not store, find or change an item.

#[cfg(doc)]
use crate::item::KEY_BYTES_MAX;

/// Why an operation did not store, find or change an item. These map one
/// to one onto memcached's replies (`NOT_STORED`, `EXISTS`, `NOT_FOUND`,
/// `CLIENT_ERROR …`, `SERVER_ERROR …`).
///
/// ```
/// use amalgam_engine::{Error, Expiry, Store};
/// let store = Store::new(Default::default()).unwrap();
/// assert_eq!(store.add(b"k", b"v", 0, Expiry::Never).map(|_| ()), Ok(()));
/// assert_eq!(store.add(b"k", b"v", 0, Expiry::Never), Err(Error::NotStored));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// add on a present key, replace/append/prepend on a missing one.
    NotStored,
    /// cas with a CAS unique that is no longer current.
    Exists,
    /// The key is not present (or has expired).
    NotFound,
    /// The key is empty or longer than [`KEY_BYTES_MAX`].
    BadKey,
    /// The item would exceed the configured maximum item size.
    TooLarge,
    /// The memory budget is exhausted.
    OutOfMemory,
    /// incr/decr on a value that is not a decimal u64.
    NonNumeric,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Error::NotStored => "not stored",
            Error::Exists => "cas unique does not match",
            Error::NotFound => "not found",
            Error::BadKey => "key must be 1 to 250 bytes",
            Error::TooLarge => "object too large for cache",
            Error::OutOfMemory => "out of memory storing object",
            Error::NonNumeric => "cannot increment or decrement non-numeric value",
        })
    }
}

impl std::error::Error for Error {}
