//! # Redis's DUMP payload: the RDB object serialization
//!
//! What `DUMP` returns and `RESTORE` takes in Redis 7.0 (`cluster.c`'s
//! `createDumpPayload` and `verifyDumpPayload`, `rdb.c`'s `rdbSaveObject`
//! and `rdbLoadObject`): one value in RDB's object encoding, then a
//! footer.
//!
//! ```text
//!   type (1 byte) | object (rdbSaveObject) | RDB version u16 LE | CRC-64 u64 LE
//!                   └───────── the CRC covers everything before it ─────────┘
//! ```
//! Pure bytes ↔ [`Payload`] (string, list, set, hash, sorted set): no
//! store, no server. The server turns a [`Payload`] into its own values
//! and writes a DUMP with [`Writer`].
//!
//! The file around these objects (`dump.rdb`: header, aux fields,
//! databases, expiries, EOF and CRC-64), read from any `io::Read` and
//! written, is [`file`] (`rdb/file.rs`).
//!
//! ## Sections implemented (Redis 7.0's `rdb.h` numbers)
//! * **Footer.** The version must be at most [`RDB_VERSION_READ_MAX`]
//!   (11: Redis 7.2's, which Valkey 7.2 and 8.x write too; Redis 7.2's
//!   `verifyDumpPayload` refuses only a version above its own). A payload
//!   of Redis 7.4 or later (12, a format Valkey calls foreign and refuses)
//!   is refused. The CRC is CRC-64/Jones as Redis's `crc64.c` (reflected,
//!   init 0, no final xor), the `crc` crate's `CRC_64_REDIS`.
//! * **Version written: [`RDB_VERSION`], 10.** Redis 7.0 refuses a
//!   payload or a file of version 11, and 7.2, 7.4 and Valkey load 10,
//!   so 10 is the one every peer Amalgam speaks to reads; nothing Amalgam
//!   writes needs an encoding 11 added.
//! * **Lengths** (`rdbLoadLen`): 6-bit, 14-bit, 32-bit and 64-bit forms;
//!   the "encoded" form only where a string is read.
//! * **Strings** (`rdbGenericLoadStringObject`): raw, the integer forms
//!   (`RDB_ENC_INT8/16/32`, loaded as their decimal text) and LZF
//!   (`RDB_ENC_LZF`, `lzf.rs`).
//! * **Types read:** `STRING` (0), `LIST` (1, pre-3.2 linked list), `SET`
//!   (2), `ZSET` (3, scores as text), `HASH` (4), `ZSET_2` (5, binary
//!   doubles), `SET_INTSET` (11), `HASH_LISTPACK` (16), `ZSET_LISTPACK`
//!   (17), `LIST_QUICKLIST_2` (18: packed listpack nodes and plain nodes,
//!   either possibly LZF-compressed). Redis 7.0 writes only 0, 2, 4, 5,
//!   11, 16, 17 and 18. RDB version 11 (Redis 7.2, Valkey 7.2-8.x) added
//!   two: `SET_LISTPACK` (20: a small set of strings as one listpack of
//!   its members, `rdb.c`'s `lpValidateIntegrityAndDups(.., 1)`: no
//!   duplicate, not empty) and `STREAM_LISTPACKS_3` (21: each consumer
//!   also carries its `active-time`, `rdb/stream.rs`). Also
//!   read, as 7.0 reads them, the ziplist forms Redis 3.2-6.2 wrote
//!   (`ziplist.rs`): `LIST_ZIPLIST` (10), `ZSET_ZIPLIST` (12),
//!   `HASH_ZIPLIST` (13), `LIST_QUICKLIST` (14), so a Redis 6 DUMP (RDB
//!   version 9) restores. Not read: the zipmap hash (9, Redis 2.4's),
//!   streams (15, 19), modules (6, 7); they answer "bad data format".
//! * **Types written** ([`Writer`]): `STRING` as a raw string, `LIST` (1),
//!   `SET` (2), `HASH` (4), `ZSET_2` (5): the plainest forms Redis 7.0
//!   loads, every element a raw string, no compression. Redis converts
//!   them to its compact encodings on load as its thresholds say.
//!
//! ## Rules Redis applies on load, kept here
//! An empty collection is refused (`RDB_LOAD_ERR_EMPTY_KEY`); a
//! duplicate set member, hash field or sorted-set member is refused
//! (Redis refuses them for the large forms and, under
//! `sanitize-dump-payload yes`, for the compact ones: here always); a NaN
//! score is refused ("Zset with NAN score detected"); an old text score
//! `253`/`254`/`255` is NaN, +inf, -inf.
//!
//! ## Where this is stricter than Redis 7.0
//! Redis's default `sanitize-dump-payload no` checks a compact form's
//! header only; this codec always checks as `yes` does, so a payload
//! Redis 7.0 would load corrupt is refused here: a duplicate field of a
//! small hash or a duplicate member of a small integer set (Redis keeps
//! the duplicate in its listpack or drops it silently), an intset out of
//! order, a listpack with a wrong back-length. And the object is read
//! from the bytes before the footer only: Redis's reader runs on into
//! the footer's ten bytes, so a cut object whose missing bytes the
//! footer happens to supply loads there (`tests/resp_dump.rs` uses cuts
//! that fail on both). No payload Redis writes is affected.
//!
//! ## Hostile payloads
//! Every read is bounds-checked and every failure is [`DumpError::BadFormat`];
//! nothing panics. Every loop is bounded by the payload: a declared count
//! is checked against the bytes left (each element takes at least one)
//! before anything is reserved, and reservations are capped at
//! [`PREALLOC_ELEMENTS_MAX`]; a string's length must fit in what is left;
//! an LZF string's declared length must be within
//! [`lzf::LZF_EXPANSION_MAX`] times its compressed length. So a payload
//! of n bytes allocates O(n) bytes (at most 88n for LZF). On top of that,
//! what a payload decodes to is charged against a budget as it is built
//! ([`decode_within`]: each string and element its bytes plus
//! [`ELEMENT_OVERHEAD_BYTES`]; [`DECODED_BYTES_MAX_DEFAULT`] for
//! [`decode`]); past it the payload is refused with
//! [`DumpError::TooLarge`] before the rest is decoded, so no payload can
//! make the decoder hold more than the budget, whatever it compresses.

pub mod file;
pub mod listpack;
pub mod lzf;
pub mod stream;
pub mod ziplist;

use crc::{Crc, CRC_64_REDIS};
use listpack::Entry;

/// The RDB version written in a DUMP footer: Redis 7.0's `RDB_VERSION`,
/// which every peer loads (module notes).
pub const RDB_VERSION: u16 = 10;

/// The newest RDB version read in a DUMP footer: Redis 7.2's
/// `RDB_VERSION` (Valkey 7.2-8.x write it too).
pub const RDB_VERSION_READ_MAX: u16 = 11;

const _: () = assert!(RDB_VERSION <= RDB_VERSION_READ_MAX);

/// Footer: the version (2 bytes) and the CRC (8 bytes).
pub const FOOTER_BYTES: usize = 10;

/// Redis's CRC-64 (Jones polynomial, reflected).
const CRC64: Crc<u64> = Crc::<u64>::new(&CRC_64_REDIS);

/// The most elements reserved ahead of reading them: a declared count
/// is only a claim, so vectors grow past this as elements actually
/// arrive.
pub const PREALLOC_ELEMENTS_MAX: usize = 1024;

/// The longest text score of the old `ZSET` type (its length is a byte;
/// 253-255 are the special values).
const TEXT_SCORE_BYTES_MAX: usize = 252;

/// Redis's object types (`rdb.h`).
pub mod types {
    pub const STRING: u8 = 0;
    pub const LIST: u8 = 1;
    pub const SET: u8 = 2;
    pub const ZSET: u8 = 3;
    pub const HASH: u8 = 4;
    pub const ZSET_2: u8 = 5;
    pub const LIST_ZIPLIST: u8 = 10;
    pub const SET_INTSET: u8 = 11;
    pub const ZSET_ZIPLIST: u8 = 12;
    pub const HASH_ZIPLIST: u8 = 13;
    pub const LIST_QUICKLIST: u8 = 14;
    pub const HASH_LISTPACK: u8 = 16;
    pub const ZSET_LISTPACK: u8 = 17;
    pub const LIST_QUICKLIST_2: u8 = 18;
    pub const STREAM_LISTPACKS: u8 = 15;
    pub const STREAM_LISTPACKS_2: u8 = 19;
    /// RDB version 11 (Redis 7.2).
    pub const SET_LISTPACK: u8 = 20;
    /// RDB version 11 (Redis 7.2): consumers with their active-time.
    pub const STREAM_LISTPACKS_3: u8 = 21;
}

/// `RDB_ENC_*`: the special string forms.
const ENC_INT8: u64 = 0;
const ENC_INT16: u64 = 1;
const ENC_INT32: u64 = 2;
const ENC_LZF: u64 = 3;

/// A quicklist node's container (`QUICKLIST_NODE_CONTAINER_*`).
const QUICKLIST_PLAIN: u64 = 1;
const QUICKLIST_PACKED: u64 = 2;

/// The value a payload holds, whatever Redis encoding carried it.
#[derive(Clone, Debug, PartialEq)]
pub enum Payload {
    String(Vec<u8>),
    /// Elements head to tail.
    List(Vec<Vec<u8>>),
    /// Members, in the payload's order.
    Set(Vec<Vec<u8>>),
    /// (field, value) pairs, in the payload's order.
    Hash(Vec<(Vec<u8>, Vec<u8>)>),
    /// (member, score) pairs, in the payload's order; no score is NaN.
    ZSet(Vec<(Vec<u8>, f64)>),
    /// A stream, built (`rdb/stream.rs`).
    Stream(Box<amalgam_types::stream::Stream>),
}

/// What a decoded string or element costs against the budget besides its
/// bytes: its `Vec` (pointer, length, capacity).
pub const ELEMENT_OVERHEAD_BYTES: usize = 24;
/// [`decode`]'s budget (Redis's default `proto-max-bulk-len`).
pub const DECODED_BYTES_MAX_DEFAULT: usize = 512 << 20;

/// Why a payload was refused: Redis's two RESTORE errors, and the budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DumpError {
    /// Too short, a newer RDB version, or a wrong CRC:
    /// `ERR DUMP payload version or checksum are wrong`.
    VersionOrChecksum,
    /// The object does not decode: `ERR Bad data format`.
    BadFormat,
    /// The object decodes to more than the budget ([`decode_within`]).
    TooLarge,
}

/// Redis's CRC-64 of `bytes`.
pub fn crc64(bytes: &[u8]) -> u64 {
    CRC64.checksum(bytes)
}

/// [`decode_within`] the default budget.
pub fn decode(payload: &[u8]) -> Result<Payload, DumpError> {
    decode_within(payload, DECODED_BYTES_MAX_DEFAULT)
}

/// Checks the footer (Redis's `verifyDumpPayload`) and decodes the value,
/// refusing it once what it decodes to passes `budget` bytes (module
/// notes).
pub fn decode_within(payload: &[u8], budget: usize) -> Result<Payload, DumpError> {
    let body = checked_body(payload)?;
    let mut r = Reader { buf: body, pos: 0, budget, over: false };
    let v = r.object().ok_or(if r.over { DumpError::TooLarge } else { DumpError::BadFormat })?;
    // Redis ignores bytes between the object and the footer (its rio
    // reads what the object needs); so does this.
    Ok(v)
}

/// An object (its type byte, then `rdbSaveObject`'s bytes), with no
/// footer, as an RDB file carries it after the key: the value, and the
/// budget it used. `rdb/file.rs` captures these bytes from a stream.
pub(crate) fn decode_object(body: &[u8], budget: usize) -> Result<(Payload, usize), DumpError> {
    let mut r = Reader { buf: body, pos: 0, budget, over: false };
    let v = r.object().ok_or(if r.over { DumpError::TooLarge } else { DumpError::BadFormat })?;
    if r.left() != 0 {
        return Err(DumpError::BadFormat);
    }
    Ok((v, budget - r.budget))
}

/// One string in any of its encodings (`rdbGenericLoadStringObject`),
/// the whole of `bytes`; `None` if malformed or past `budget`.
pub(crate) fn decode_string(bytes: &[u8], budget: usize) -> Option<Vec<u8>> {
    let mut r = Reader { buf: bytes, pos: 0, budget, over: false };
    let s = r.string()?;
    (r.left() == 0).then_some(s)
}

/// The payload's body once its footer (version, CRC) is checked (Redis's
/// `verifyDumpPayload`).
fn checked_body(payload: &[u8]) -> Result<&[u8], DumpError> {
    if payload.len() < FOOTER_BYTES {
        return Err(DumpError::VersionOrChecksum);
    }
    let body_end = payload.len() - FOOTER_BYTES;
    let version = u16::from_le_bytes([payload[body_end], payload[body_end + 1]]);
    if version > RDB_VERSION_READ_MAX {
        return Err(DumpError::VersionOrChecksum);
    }
    let crc_at = payload.len() - 8;
    let mut stored = [0u8; 8];
    stored.copy_from_slice(&payload[crc_at..]);
    if crc64(&payload[..crc_at]) != u64::from_le_bytes(stored) {
        return Err(DumpError::VersionOrChecksum);
    }
    Ok(&payload[..body_end])
}

/// `RDB_OPCODE_FUNCTION2`: one library's code, in a FUNCTION DUMP payload
/// (and in an RDB file, before the keys).
pub const OPCODE_FUNCTION2: u8 = 245;

/// `RDB_OPCODE_FUNCTION_PRE_GA`: Redis 7.0's release candidates' form,
/// which Redis 7.0 refuses too.
pub const OPCODE_FUNCTION_PRE_GA: u8 = 246;

/// Why a FUNCTION RESTORE payload was refused (beyond its footer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FunctionsError {
    /// `ERR DUMP payload version or checksum are wrong`.
    VersionOrChecksum,
    /// `ERR Pre-GA function format not supported`.
    PreGa,
    /// `ERR given type is not a function`.
    NotAFunction,
    /// A library's code does not decode.
    BadFormat,
}

/// FUNCTION DUMP's payload: each library's code after
/// [`OPCODE_FUNCTION2`], then the footer (Redis 7.0's
/// `functionDumpCommand`).
pub fn encode_functions<'a>(codes: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut w = Writer { out: Vec::new() };
    for code in codes {
        w.out.push(OPCODE_FUNCTION2);
        w.raw(code);
    }
    w.finish()
}

/// FUNCTION RESTORE's payload read back: each library's code, in order.
pub fn decode_functions(payload: &[u8]) -> Result<Vec<Vec<u8>>, FunctionsError> {
    let body = checked_body(payload).map_err(|_| FunctionsError::VersionOrChecksum)?;
    let mut r = Reader { buf: body, pos: 0, budget: DECODED_BYTES_MAX_DEFAULT, over: false };
    let mut codes = Vec::new();
    // Bounded: each step consumes at least two bytes of the body.
    while r.left() > 0 {
        match r.byte() {
            Some(OPCODE_FUNCTION2) => codes.push(r.string().ok_or(FunctionsError::BadFormat)?),
            Some(OPCODE_FUNCTION_PRE_GA) => return Err(FunctionsError::PreGa),
            _ => return Err(FunctionsError::NotAFunction),
        }
    }
    Ok(codes)
}

/// A cursor over a payload's body. Every method answers `None` for
/// bytes that are missing or malformed.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    /// Bytes the decoded value may still take (module notes).
    budget: usize,
    /// The budget ran out (the refusal is TooLarge, not BadFormat).
    over: bool,
}

/// Takes `n` bytes off `budget`; `None` (and `over` set) past it.
fn charge(budget: &mut usize, over: &mut bool, n: usize) -> Option<()> {
    match budget.checked_sub(n.saturating_add(ELEMENT_OVERHEAD_BYTES)) {
        Some(left) => {
            *budget = left;
            Some(())
        }
        None => {
            *over = true;
            None
        }
    }
}

impl<'a> Reader<'a> {
    /// Charges one decoded string or element of `n` bytes (module notes).
    fn charge(&mut self, n: usize) -> Option<()> {
        charge(&mut self.budget, &mut self.over, n)
    }

    fn left(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.buf.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }

    fn byte(&mut self) -> Option<u8> {
        self.bytes(1).map(|b| b[0])
    }

    /// `rdbLoadLenByRef`: a length, and whether it is the "encoded"
    /// form (then the number is an `RDB_ENC_*`).
    fn len_or_enc(&mut self) -> Option<(u64, bool)> {
        let b = self.byte()?;
        match b >> 6 {
            0 => Some((u64::from(b & 0x3f), false)),
            1 => Some(((u64::from(b & 0x3f) << 8) | u64::from(self.byte()?), false)),
            2 => match b {
                0x80 => {
                    let s = self.bytes(4)?;
                    Some((u64::from(u32::from_be_bytes([s[0], s[1], s[2], s[3]])), false))
                }
                0x81 => {
                    let mut a = [0u8; 8];
                    a.copy_from_slice(self.bytes(8)?);
                    Some((u64::from_be_bytes(a), false))
                }
                _ => None,
            },
            _ => Some((u64::from(b & 0x3f), true)),
        }
    }

    /// A plain length.
    fn len(&mut self) -> Option<u64> {
        match self.len_or_enc()? {
            (n, false) => Some(n),
            _ => None,
        }
    }

    /// A count of elements each taking at least `min_bytes` of what is
    /// left; refused if they cannot fit, or if zero (Redis's empty-key
    /// rule).
    fn count(&mut self, min_bytes: usize) -> Option<usize> {
        let n = usize::try_from(self.len()?).ok()?;
        if n == 0 || n > self.left() / min_bytes {
            return None;
        }
        Some(n)
    }

    /// `rdbGenericLoadStringObject`.
    fn string(&mut self) -> Option<Vec<u8>> {
        match self.len_or_enc()? {
            (n, false) => {
                let n = usize::try_from(n).ok()?;
                // Missing bytes are a bad format, not a large value.
                if n > self.left() {
                    return None;
                }
                self.charge(n)?;
                self.bytes(n).map(<[u8]>::to_vec)
            }
            (ENC_INT8, true) => {
                self.charge(4)?;
                Some((self.byte()? as i8).to_string().into_bytes())
            }
            (ENC_INT16, true) => {
                self.charge(6)?;
                let s = self.bytes(2)?;
                Some(i16::from_le_bytes([s[0], s[1]]).to_string().into_bytes())
            }
            (ENC_INT32, true) => {
                self.charge(11)?;
                let s = self.bytes(4)?;
                Some(i32::from_le_bytes([s[0], s[1], s[2], s[3]]).to_string().into_bytes())
            }
            (ENC_LZF, true) => {
                let clen = usize::try_from(self.len()?).ok()?;
                let len = usize::try_from(self.len()?).ok()?;
                let c = self.bytes(clen)?;
                // An impossible length is a bad format, checked before the
                // budget is charged.
                if len == 0 || !lzf::may_expand_to(clen, len) {
                    return None;
                }
                self.charge(len)?;
                lzf::decompress(c, len)
            }
            _ => None,
        }
    }

    /// `rdbLoadBinaryDoubleValue`.
    fn binary_double(&mut self) -> Option<f64> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.bytes(8)?);
        Some(f64::from_le_bytes(a))
    }

    /// `rdbLoadDoubleValue`: the old text form.
    fn text_double(&mut self) -> Option<f64> {
        match self.byte()? {
            253 => Some(f64::NAN),
            254 => Some(f64::INFINITY),
            255 => Some(f64::NEG_INFINITY),
            n => {
                let n = usize::from(n);
                debug_assert!(n <= TEXT_SCORE_BYTES_MAX);
                parse_score(self.bytes(n)?)
            }
        }
    }

    fn object(&mut self) -> Option<Payload> {
        let ty = self.byte()?;
        match ty {
            types::STRING => self.string().map(Payload::String),
            types::LIST => self.strings().map(Payload::List),
            types::SET => {
                let v = self.strings()?;
                no_duplicates(v.iter().map(Vec::as_slice))?;
                Some(Payload::Set(v))
            }
            types::HASH => {
                let n = self.count(2)?;
                let mut v = Vec::with_capacity(n.min(PREALLOC_ELEMENTS_MAX));
                // Bounded by n, itself bounded by the bytes left.
                for _ in 0..n {
                    v.push((self.string()?, self.string()?));
                }
                no_duplicates(v.iter().map(|(f, _)| f.as_slice()))?;
                Some(Payload::Hash(v))
            }
            types::ZSET | types::ZSET_2 => {
                let n = self.count(2)?;
                let mut v = Vec::with_capacity(n.min(PREALLOC_ELEMENTS_MAX));
                // Bounded by n, itself bounded by the bytes left.
                for _ in 0..n {
                    let m = self.string()?;
                    let s = if ty == types::ZSET_2 { self.binary_double()? } else { self.text_double()? };
                    if s.is_nan() {
                        return None;
                    }
                    v.push((m, s));
                }
                no_duplicates(v.iter().map(|(m, _)| m.as_slice()))?;
                Some(Payload::ZSet(v))
            }
            types::SET_INTSET => {
                let blob = self.string()?;
                intset(&blob, &mut self.budget, &mut self.over).map(Payload::Set)
            }
            types::SET_LISTPACK => {
                let blob = self.string()?;
                let v = packed_elements(Packing::Listpack, &blob, &mut self.budget, &mut self.over)?;
                no_duplicates(v.iter().map(Vec::as_slice))?;
                Some(Payload::Set(v))
            }
            types::LIST_ZIPLIST => {
                let blob = self.string()?;
                packed_elements(Packing::Ziplist, &blob, &mut self.budget, &mut self.over).map(Payload::List)
            }
            types::HASH_LISTPACK | types::HASH_ZIPLIST => {
                let blob = self.string()?;
                let flat = packed_elements(packing_of(ty), &blob, &mut self.budget, &mut self.over)?;
                if flat.len() % 2 != 0 {
                    return None;
                }
                let v = pairs(flat);
                no_duplicates(v.iter().map(|(f, _)| f.as_slice()))?;
                Some(Payload::Hash(v))
            }
            types::ZSET_LISTPACK | types::ZSET_ZIPLIST => {
                let blob = self.string()?;
                let flat = packed_elements(packing_of(ty), &blob, &mut self.budget, &mut self.over)?;
                if flat.len() % 2 != 0 {
                    return None;
                }
                let mut v = Vec::with_capacity(flat.len() / 2);
                for (m, s) in pairs(flat) {
                    let s = parse_score(&s)?;
                    if s.is_nan() {
                        return None;
                    }
                    v.push((m, s));
                }
                no_duplicates(v.iter().map(|(m, _)| m.as_slice()))?;
                Some(Payload::ZSet(v))
            }
            types::LIST_QUICKLIST_2 => self.quicklist().map(Payload::List),
            types::STREAM_LISTPACKS | types::STREAM_LISTPACKS_2 | types::STREAM_LISTPACKS_3 => {
                stream::load(self, ty).map(|s| Payload::Stream(Box::new(s)))
            }
            types::LIST_QUICKLIST => self.quicklist_ziplists().map(Payload::List),
            _ => None,
        }
    }

    /// A count, then that many strings.
    fn strings(&mut self) -> Option<Vec<Vec<u8>>> {
        let n = self.count(1)?;
        let mut v = Vec::with_capacity(n.min(PREALLOC_ELEMENTS_MAX));
        // Bounded by n, itself bounded by the bytes left.
        for _ in 0..n {
            v.push(self.string()?);
        }
        Some(v)
    }

    /// `RDB_TYPE_LIST_QUICKLIST_2`: a node count, then per node its
    /// container and its bytes (an element, or a listpack of elements).
    /// Empty listpack nodes are skipped, as Redis skips them.
    fn quicklist(&mut self) -> Option<Vec<Vec<u8>>> {
        let nodes = self.count(2)?;
        let mut v = Vec::new();
        // Bounded by nodes, itself bounded by the bytes left.
        for _ in 0..nodes {
            let container = self.len()?;
            let data = self.string()?;
            match container {
                QUICKLIST_PLAIN => v.push(data),
                QUICKLIST_PACKED => {
                    let (budget, over) = (&mut self.budget, &mut self.over);
                    listpack::for_each(&data, |e| {
                        let e = e.to_bytes();
                        charge(budget, over, e.len())?;
                        v.push(e);
                        Some(())
                    })?;
                }
                _ => return None,
            }
        }
        if v.is_empty() {
            return None;
        }
        Some(v)
    }

    /// `RDB_TYPE_LIST_QUICKLIST` (Redis 3.2-6.2): a node count, then per
    /// node a ziplist of elements. Empty nodes are skipped, as Redis 7.0
    /// skips them.
    fn quicklist_ziplists(&mut self) -> Option<Vec<Vec<u8>>> {
        let nodes = self.count(1)?;
        let mut v = Vec::new();
        // Bounded by nodes, itself bounded by the bytes left.
        for _ in 0..nodes {
            let data = self.string()?;
            let (budget, over) = (&mut self.budget, &mut self.over);
            ziplist::for_each(&data, |e| {
                let e = e.to_bytes();
                charge(budget, over, e.len())?;
                v.push(e);
                Some(())
            })?;
        }
        if v.is_empty() {
            return None;
        }
        Some(v)
    }
}

/// The two packed blobs a payload may carry.
#[derive(Clone, Copy)]
enum Packing {
    /// Redis 7.0's.
    Listpack,
    /// Redis 3.2-6.2's (RDB version 9 and older).
    Ziplist,
}

/// The packing of a hash or sorted-set type's blob.
fn packing_of(ty: u8) -> Packing {
    if ty == types::HASH_ZIPLIST || ty == types::ZSET_ZIPLIST {
        Packing::Ziplist
    } else {
        Packing::Listpack
    }
}

/// Calls `f` with every entry of a packed blob (checked whole first).
fn packed_for_each<'a>(how: Packing, blob: &'a [u8], f: impl FnMut(Entry<'a>) -> Option<()>) -> Option<usize> {
    match how {
        Packing::Listpack => listpack::for_each(blob, f),
        Packing::Ziplist => ziplist::for_each(blob, f),
    }
}

/// A packed blob's entries as element bytes, each charged to the budget;
/// refused if malformed or empty.
fn packed_elements(how: Packing, blob: &[u8], budget: &mut usize, over: &mut bool) -> Option<Vec<Vec<u8>>> {
    let mut v = Vec::new();
    let n = packed_for_each(how, blob, |e: Entry<'_>| {
        let e = e.to_bytes();
        charge(budget, over, e.len())?;
        v.push(e);
        Some(())
    })?;
    (n > 0).then_some(v)
}

/// `[a, b, c, d]` → `[(a, b), (c, d)]` (an even count, checked by the caller).
fn pairs<T>(flat: Vec<T>) -> Vec<(T, T)> {
    let mut out = Vec::with_capacity(flat.len() / 2);
    let mut it = flat.into_iter();
    // Bounded: each turn takes two elements.
    while let (Some(a), Some(b)) = (it.next(), it.next()) {
        out.push((a, b));
    }
    out
}

/// A score as Redis's `zzlStrtod` reads it (`strtod`): decimal, with
/// `inf`, `-inf` (and `infinity`, any case); NaN is returned for the
/// caller to refuse.
fn parse_score(s: &[u8]) -> Option<f64> {
    std::str::from_utf8(s).ok()?.parse::<f64>().ok()
}

/// `None` if any key repeats. O(n log n), n bounded by the payload.
fn no_duplicates<'a>(keys: impl Iterator<Item = &'a [u8]>) -> Option<()> {
    let mut sorted: Vec<&[u8]> = keys.collect();
    sorted.sort_unstable();
    sorted.windows(2).all(|w| w[0] != w[1]).then_some(())
}

/// An intset blob (`intset.c`): encoding (2, 4 or 8) u32 LE, count u32
/// LE, then the integers LE, strictly ascending; as decimal members.
fn intset(blob: &[u8], budget: &mut usize, over: &mut bool) -> Option<Vec<Vec<u8>>> {
    let head = blob.get(..8)?;
    let width = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
    let n = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as usize;
    if !matches!(width, 2 | 4 | 8) || n == 0 || blob.len() != 8 + n.checked_mul(width)? {
        return None;
    }
    let mut out = Vec::with_capacity(n.min(PREALLOC_ELEMENTS_MAX));
    let mut prev: Option<i64> = None;
    // Bounded: n elements of `width` bytes, checked against the blob.
    for c in blob[8..].chunks_exact(width) {
        let v = match width {
            2 => i64::from(i16::from_le_bytes([c[0], c[1]])),
            4 => i64::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            _ => i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]),
        };
        if prev.is_some_and(|p| p >= v) {
            return None;
        }
        prev = Some(v);
        let member = v.to_string().into_bytes();
        charge(budget, over, member.len())?;
        out.push(member);
    }
    Some(out)
}

/// Writes a DUMP payload in the plainest forms Redis 7.0 loads (see the
/// module notes): start with one of the constructors, add exactly the
/// elements announced, then [`Writer::finish`].
#[derive(Debug)]
pub struct Writer {
    out: Vec<u8>,
}

impl Writer {
    /// A string value's whole payload.
    pub fn string(value: &[u8]) -> Vec<u8> {
        let mut w = Writer { out: Vec::with_capacity(value.len() + 16) };
        w.out.push(types::STRING);
        w.raw(value);
        w.finish()
    }

    fn collection(ty: u8, len: usize) -> Writer {
        let mut w = Writer { out: Vec::with_capacity(64) };
        w.out.push(ty);
        w.length(len as u64);
        w
    }

    /// A list of `len` elements: then [`Writer::element`] each, head first.
    pub fn list(len: usize) -> Writer {
        Writer::collection(types::LIST, len)
    }

    /// A set of `len` members: then [`Writer::element`] each.
    pub fn set(len: usize) -> Writer {
        Writer::collection(types::SET, len)
    }

    /// A hash of `len` fields: then [`Writer::element`] the field and
    /// the value, for each.
    pub fn hash(len: usize) -> Writer {
        Writer::collection(types::HASH, len)
    }

    /// A sorted set of `len` members: then [`Writer::scored`] each.
    pub fn zset(len: usize) -> Writer {
        Writer::collection(types::ZSET_2, len)
    }

    /// One string of the collection.
    pub fn element(&mut self, bytes: &[u8]) {
        self.raw(bytes);
    }

    /// One member of a sorted set and its score.
    pub fn scored(&mut self, member: &[u8], score: f64) {
        self.raw(member);
        self.out.extend_from_slice(&score.to_le_bytes());
    }

    /// Appends the footer: the version and the CRC.
    pub fn finish(mut self) -> Vec<u8> {
        self.out.extend_from_slice(&RDB_VERSION.to_le_bytes());
        let crc = crc64(&self.out);
        self.out.extend_from_slice(&crc.to_le_bytes());
        self.out
    }

    /// `rdbSaveLen`.
    fn length(&mut self, n: u64) {
        if n < 1 << 6 {
            self.out.push(n as u8);
        } else if n < 1 << 14 {
            self.out.push(0x40 | (n >> 8) as u8);
            self.out.push(n as u8);
        } else if let Ok(n32) = u32::try_from(n) {
            self.out.push(0x80);
            self.out.extend_from_slice(&n32.to_be_bytes());
        } else {
            self.out.push(0x81);
            self.out.extend_from_slice(&n.to_be_bytes());
        }
    }

    /// `rdbSaveRawString` without compression or the integer forms.
    fn raw(&mut self, bytes: &[u8]) {
        self.length(bytes.len() as u64);
        self.out.extend_from_slice(bytes);
    }
}

/// [`Payload`] as [`Writer`] writes it (for tests and the fuzz target's
/// round trip).
pub fn encode(p: &Payload) -> Vec<u8> {
    match p {
        Payload::String(s) => Writer::string(s),
        Payload::List(v) | Payload::Set(v) => {
            let mut w = if matches!(p, Payload::List(_)) { Writer::list(v.len()) } else { Writer::set(v.len()) };
            for e in v {
                w.element(e);
            }
            w.finish()
        }
        Payload::Hash(v) => {
            let mut w = Writer::hash(v.len());
            for (f, val) in v {
                w.element(f);
                w.element(val);
            }
            w.finish()
        }
        Payload::ZSet(v) => {
            let mut w = Writer::zset(v.len());
            for (m, s) in v {
                w.scored(m, *s);
            }
            w.finish()
        }
        Payload::Stream(s) => stream::dump(s),
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod v11_tests;
