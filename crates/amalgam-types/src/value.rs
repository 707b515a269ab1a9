//! A collection as the engine stores it (engine `object.rs`): small ones
//! as an item's packed bytes under their kind's tag, large ones as an
//! [`Object`] the item points to. [`Value`] is that object, and the
//! bridge between an item's tag and bytes and this crate's types.

use crate::hash::Hash;
use crate::list::List;
use crate::set::Set;
use crate::stream::Stream;
use crate::zset::ZSet;
use crate::{Corrupt, Kind, Thresholds};
use amalgam_engine::{Object, TAG_PACKED_MAX, TAG_PACKED_MIN};
use std::any::Any;

/// The engine's value tag of a packed (compact) value of each kind; an
/// object of that kind reports the same number as [`Object::kind`].
/// Persisted in snapshots and logs: never renumber.
pub const fn tag_of(kind: Kind) -> u8 {
    match kind {
        Kind::Hash => 1,
        Kind::List => 2,
        Kind::Set => 3,
        Kind::ZSet => 4,
        // Never a packed value (a stream is always an object): the
        // number its objects report.
        Kind::Stream => 5,
    }
}

const _: () = assert!(tag_of(Kind::Hash) >= TAG_PACKED_MIN && tag_of(Kind::Stream) <= TAG_PACKED_MAX);

/// The kind whose packed values carry `tag`, if any.
pub fn kind_of_tag(tag: u8) -> Option<Kind> {
    [Kind::Hash, Kind::List, Kind::Set, Kind::ZSet, Kind::Stream].into_iter().find(|&k| tag_of(k) == tag)
}

/// A collection of any kind and size.
#[derive(Debug)]
pub enum Value {
    Hash(Hash),
    List(List),
    Set(Set),
    ZSet(ZSet),
    Stream(Box<Stream>),
}

impl Value {
    /// An empty collection of `kind`.
    pub fn new(kind: Kind, t: &Thresholds) -> Value {
        match kind {
            Kind::Hash => Value::Hash(Hash::new()),
            Kind::List => Value::List(List::new(t)),
            Kind::Set => Value::Set(Set::new()),
            Kind::ZSet => Value::ZSet(ZSet::new(t)),
            Kind::Stream => Value::Stream(Box::default()),
        }
    }

    /// The value a packed item of `kind` holds.
    pub fn from_packed(kind: Kind, bytes: &[u8], t: &Thresholds) -> Result<Value, Corrupt> {
        match kind {
            Kind::Hash => Hash::from_packed(bytes).map(Value::Hash),
            Kind::List => List::from_packed(bytes.to_vec(), t).map(Value::List),
            Kind::Set => Set::from_packed(bytes).map(Value::Set),
            Kind::ZSet => ZSet::from_packed(bytes.to_vec(), t).map(Value::ZSet),
            // A stream is never packed (its objects carry the tag only).
            Kind::Stream => Err(Corrupt),
        }
    }

    /// [`Value::from_packed`] for the store's own items (bytes this build
    /// packed, or that recovery checked with `from_packed`): not checked
    /// again on every read and write (each type's `from_packed_trusted`).
    pub fn from_packed_trusted(kind: Kind, bytes: &[u8], t: &Thresholds) -> Value {
        match kind {
            Kind::Hash => Value::Hash(Hash::from_packed_trusted(bytes)),
            Kind::List => Value::List(List::from_packed_trusted(crate::writable_copy(bytes), t)),
            Kind::Set => Value::Set(Set::from_packed_trusted(bytes)),
            Kind::ZSet => Value::ZSet(ZSet::from_packed_trusted(crate::writable_copy(bytes), t)),
            // Unreachable: no stream is packed (`from_packed` refuses one).
            Kind::Stream => Value::Stream(Box::new(Stream::decode(bytes).unwrap_or_default())),
        }
    }

    pub fn kind(&self) -> Kind {
        match self {
            Value::Hash(_) => Kind::Hash,
            Value::List(_) => Kind::List,
            Value::Set(_) => Kind::Set,
            Value::ZSet(_) => Kind::ZSet,
            Value::Stream(_) => Kind::Stream,
        }
    }

    /// The compact bytes while the value is compact (an item's value).
    pub fn packed(&self) -> Option<&[u8]> {
        match self {
            Value::Hash(h) => h.packed(),
            Value::List(l) => l.packed(),
            Value::Set(st) => st.packed(),
            Value::ZSet(z) => z.packed(),
            Value::Stream(_) => None,
        }
    }

    /// The compact bytes, moved out while the value is compact (the next
    /// version of an item's value, with no copy), or the value back.
    /// (Boxed back as the object it then becomes.)
    pub fn into_packed(mut self) -> Result<Vec<u8>, Box<Value>> {
        let taken = match &mut self {
            Value::Hash(h) => h.take_packed(),
            Value::List(l) => l.take_packed(),
            Value::Set(st) => st.take_packed(),
            Value::ZSet(z) => z.take_packed(),
            Value::Stream(_) => None,
        };
        taken.ok_or_else(|| Box::new(self))
    }

    pub fn len(&self) -> usize {
        match self {
            Value::Hash(h) => h.len(),
            Value::List(l) => l.len(),
            Value::Set(st) => st.len(),
            Value::ZSet(z) => z.len(),
            Value::Stream(s) => usize::try_from(s.len()).unwrap_or(usize::MAX),
        }
    }

    /// True for a collection that holds nothing and so is no key (a
    /// write that empties one deletes its key, as Redis does). Never a
    /// stream: Redis keeps an empty stream (its IDs, its groups).
    pub fn is_empty(&self) -> bool {
        !matches!(self, Value::Stream(_)) && self.len() == 0
    }

    /// OBJECT ENCODING's name.
    pub fn encoding(&self) -> &'static str {
        match self {
            Value::Hash(h) => h.encoding(),
            Value::List(l) => l.encoding(),
            Value::Set(st) => st.encoding(),
            Value::ZSet(z) => z.encoding(),
            Value::Stream(_) => "stream",
        }
    }

    /// The snapshot encoding of the value (its kind is stored beside it).
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Value::Hash(h) => h.encode(out),
            Value::List(l) => l.encode(out),
            Value::Set(st) => st.encode(out),
            Value::ZSet(z) => z.encode(out),
            Value::Stream(s) => s.encode(out),
        }
    }

    /// Reads [`Value::encode`]'s bytes for `kind`; never panics.
    pub fn decode(kind: Kind, bytes: &[u8], t: &Thresholds) -> Result<Value, Corrupt> {
        match kind {
            Kind::Hash => Hash::decode(bytes).map(Value::Hash),
            Kind::List => List::decode(bytes, t).map(Value::List),
            Kind::Set => Set::decode(bytes).map(|mut st| {
                st.fit(t);
                Value::Set(st)
            }),
            Kind::ZSet => ZSet::decode(bytes, t).map(Value::ZSet),
            Kind::Stream => Stream::decode(bytes).map(|s| Value::Stream(Box::new(s))),
        }
    }
}

impl Object for Value {
    fn mem_bytes(&self) -> usize {
        match self {
            Value::Hash(h) => h.mem_bytes(),
            Value::List(l) => l.mem_bytes(),
            Value::Set(st) => st.mem_bytes(),
            Value::ZSet(z) => z.mem_bytes(),
            Value::Stream(s) => s.mem_bytes(),
        }
    }
    fn kind(&self) -> u8 {
        tag_of(Value::kind(self))
    }
    fn encode(&self, out: &mut Vec<u8>) {
        Value::encode(self, out)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
    fn hint_addrs(&self, level: usize) -> [usize; amalgam_engine::HINT_ADDRS] {
        match self {
            // A list's writes and reads start at its end chunks; the
            // other large forms start from a hash of the member.
            Value::List(l) => l.hint_addrs(level),
            _ => [0; amalgam_engine::HINT_ADDRS],
        }
    }
}
