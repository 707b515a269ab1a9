//! # Redis's RDB file: `dump.rdb` around the object codec
//!
//! Redis 7.0's `rdb.c` framing (`rdbSaveRio`, `rdbLoadRioWithLoadingCtx`):
//!
//! ```text
//!   "REDIS" + 4 ASCII digits (the version)
//!   { AUX 0xFA key value | SELECTDB 0xFE db | RESIZEDB 0xFB size expires
//!   | FUNCTION2 0xF5 code
//!   | [EXPIRETIME_MS 0xFC i64 LE | EXPIRETIME 0xFD i32 LE]
//!     [IDLE 0xF8 len] [FREQ 0xF9 byte] type key object }*
//!   EOF 0xFF | CRC-64 u64 LE of every byte before it (0: not checked)
//! ```
//!
//! ## Reading ([`FileReader`])
//! A pull interface over any [`Read`] (a file, or later a replication
//! full sync from a socket): [`FileReader::new`] reads the header,
//! [`FileReader::next_item`] answers one [`Item`] at a time, `None`
//! after EOF and a sound checksum. Versions 1..=[`FILE_VERSION_MAX`]
//! are read: 11 is Redis 7.2's and what Valkey 7.2, 8.0 and 8.1 write
//! (Valkey's `rdb.h`: "RDB 11 is the last open-source Redis RDB version,
//! used by Valkey 7.x and 8.x"). What 11 added: the listpack set (type
//! 20), the stream whose consumers carry an active time (21), and, from
//! Valkey 8.0 in cluster mode, SLOT_INFO (0xF4: slot, its key count, its
//! expiring key count; a size hint, read and dropped as Valkey's own
//! `redis-check-rdb` drops it). Newer versions are refused at the header
//! ("Can't handle RDB format version"), as Redis refuses a version newer
//! than its own, rather than half-loaded: 12 is Redis 7.4-8.x's (hash
//! field expiry, types 22-25; Valkey calls 12-79 foreign and refuses
//! them), 80 and later Valkey 9's (with the `VALKEY` magic).
//!
//! Each value is not decoded from the stream directly: its bytes are
//! first *captured* by walking the object's structure (lengths and
//! strings only), then decoded whole by the fuzzed object decoder
//! (`rdb.rs`), with its rules. Types captured: every type `rdb.rs`
//! decodes (strings, lists, sets, hashes, sorted sets, streams, and their
//! compact and old forms). A type it cannot walk (modules 6 and 7, the
//! zipmap 9) stops the read with [`FileError::UnsupportedType`]
//! naming the key: its length is unknown, so nothing after it can be
//! found. A value captured whole that the decoder refuses is an
//! [`Item::Refused`] naming the key and type, and the read goes on: the
//! caller decides whether that stops a load. IDLE and FREQ are read and
//! dropped (Amalgam keeps no LRU/LFU hints from a file); RESIZEDB is
//! read and dropped (a size hint). MODULE_AUX (0xF7) and the pre-GA
//! function opcode (0xF6) are refused with their own errors.
//!
//! ## Hostile input
//! Every length is checked before anything is reserved: a value's
//! captured bytes may not pass [`Limits::value_bytes_max`] (so a claimed
//! length that large is refused before a byte is read, and bytes are
//! read as they arrive, never reserved on a claim); each value is
//! decoded within the same budget; every key, aux field and value is
//! charged (decoded bytes) against [`Limits::file_bytes_max`], and past
//! it the read stops with [`FileError::FileTooLarge`]. Each loop reads
//! at least one byte per turn, so it ends within the value's bound.
//!
//! ## Writing ([`FileWriter`])
//! What redis-server 7.0 loads: `REDIS0010` ([`FILE_VERSION_WRITTEN`]:
//! 7.0 refuses 11, and every later Redis and Valkey reads 10), the aux
//! fields the caller
//! gives (redis-server writes `redis-ver`, `redis-bits`, `ctime`,
//! `used-mem`, `aof-base`; for a replication sync also `repl-stream-db`,
//! `repl-id`, `repl-offset`), FUNCTION2 per library, then per non-empty
//! database SELECTDB and RESIZEDB, per key its expiry in ms and the
//! value as a DUMP payload ([`super::Writer`]'s forms, the footer
//! dropped), then EOF and the CRC-64.

use std::io::{self, Read, Write};

use crc::{Crc, Digest, CRC_64_REDIS};

use super::{
    decode_object, decode_string, types, DumpError, Payload, FOOTER_BYTES, OPCODE_FUNCTION2, OPCODE_FUNCTION_PRE_GA,
};

/// The newest file version read: Redis 7.2's, Valkey 7.2-8.x's.
pub const FILE_VERSION_MAX: u16 = 11;
/// The version written: Redis 7.0's, the newest every peer loads.
pub const FILE_VERSION_WRITTEN: u16 = 10;

const _: () = assert!(FILE_VERSION_WRITTEN <= FILE_VERSION_MAX);
const _: () = assert!(FILE_VERSION_MAX == super::RDB_VERSION_READ_MAX);
/// The oldest read: Redis 1.x's (every version through 11 is a subset
/// of 11's syntax for the types read).
pub const FILE_VERSION_MIN: u16 = 1;
/// "REDIS" and four digits.
pub const HEADER_BYTES: usize = 9;
/// The version whose files end with a CRC-64 (`rdb.c`: `rdbver >= 5`).
const CHECKSUM_SINCE_VERSION: u16 = 5;

/// Opcodes (`rdb.h`).
pub mod opcode {
    /// Valkey 8.0's (cluster mode): slot, keys, expiring keys; a hint.
    pub const SLOT_INFO: u8 = 244;
    pub const FUNCTION2: u8 = super::OPCODE_FUNCTION2;
    pub const FUNCTION_PRE_GA: u8 = super::OPCODE_FUNCTION_PRE_GA;
    pub const MODULE_AUX: u8 = 247;
    pub const IDLE: u8 = 248;
    pub const FREQ: u8 = 249;
    pub const AUX: u8 = 250;
    pub const RESIZEDB: u8 = 251;
    pub const EXPIRETIME_MS: u8 = 252;
    pub const EXPIRETIME: u8 = 253;
    pub const SELECTDB: u8 = 254;
    pub const EOF: u8 = 255;
}

/// The caller's bounds on what a file may make the reader hold.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// One value's captured bytes, and its decode budget.
    pub value_bytes_max: usize,
    /// Every key, aux field and value decoded, summed.
    pub file_bytes_max: u64,
}

impl Default for Limits {
    /// Redis's `proto-max-bulk-len` per value; no bound on the file
    /// beyond what a u64 counts (the caller sets one from its memory).
    fn default() -> Self {
        Limits { value_bytes_max: super::DECODED_BYTES_MAX_DEFAULT, file_bytes_max: u64::MAX }
    }
}

/// One thing a file holds, in the file's order.
#[derive(Debug, PartialEq)]
pub enum Item {
    /// An AUX field (`redis-ver`, `ctime`, …), as text bytes.
    Aux { key: Vec<u8>, value: Vec<u8> },
    /// A FUNCTION library's code (what FUNCTION LOAD took).
    Function(Vec<u8>),
    /// A key: its database, name, absolute expiry (Unix ms) if any, value.
    Key { db: u64, key: Vec<u8>, expire_ms: Option<i64>, value: Payload },
    /// A key whose value was read whole but does not decode (or is past
    /// the value budget): the reader goes on after it.
    Refused { db: u64, key: Vec<u8>, type_byte: u8, why: DumpError },
}

/// Why a file could not be read on.
#[derive(Debug)]
pub enum FileError {
    /// Reading failed, or the file ended early (`UnexpectedEof`).
    Io(io::Error),
    /// The first bytes are not `REDIS` and four digits.
    NotRdb,
    /// A version outside what is read (module notes).
    Version(u16),
    /// An opcode or length that does not parse, with where it was.
    BadFormat(&'static str),
    /// MODULE_AUX: module data is not read.
    ModuleAux,
    /// Redis 7.0's release candidates' function form.
    FunctionPreGa,
    /// A type whose bytes cannot be walked (module notes).
    UnsupportedType { db: u64, key: Vec<u8>, type_byte: u8 },
    /// A key or aux field longer than the value bound.
    TooLarge(&'static str),
    /// Past [`Limits::file_bytes_max`].
    FileTooLarge,
    /// The trailer's CRC-64 is not the file's.
    Checksum { stored: u64, computed: u64 },
}

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FileError::Io(e) if e.kind() == io::ErrorKind::UnexpectedEof => write!(f, "the RDB file ends early"),
            FileError::Io(e) => write!(f, "reading the RDB file: {e}"),
            FileError::NotRdb => write!(f, "not an RDB file (no REDIS header)"),
            FileError::Version(v) => write!(
                f,
                "can't handle RDB format version {v} (versions {FILE_VERSION_MIN}..={FILE_VERSION_MAX} are read: Redis up to 7.2, Valkey up to 8.1)"
            ),
            FileError::BadFormat(w) => write!(f, "bad RDB format: {w}"),
            FileError::ModuleAux => write!(f, "the RDB file holds module data (MODULE_AUX), which is not read"),
            FileError::FunctionPreGa => write!(f, "pre-GA function format not supported"),
            FileError::UnsupportedType { db, key, type_byte } => write!(
                f,
                "key '{}' in db {db}: RDB object type {type_byte} ({}) is not read",
                String::from_utf8_lossy(key),
                type_name(*type_byte)
            ),
            FileError::TooLarge(w) => write!(f, "the RDB file's {w} is past the value bound"),
            FileError::FileTooLarge => write!(f, "the RDB file decodes to more than the bound given"),
            FileError::Checksum { stored, computed } => {
                write!(f, "wrong RDB checksum: stored {stored:#018x}, computed {computed:#018x}")
            }
        }
    }
}

impl std::error::Error for FileError {}

impl From<io::Error> for FileError {
    fn from(e: io::Error) -> Self {
        FileError::Io(e)
    }
}

/// A type byte's name for messages (`rdb.h`).
pub fn type_name(t: u8) -> &'static str {
    match t {
        types::STRING => "string",
        types::LIST | types::LIST_ZIPLIST | types::LIST_QUICKLIST | types::LIST_QUICKLIST_2 => "list",
        types::SET | types::SET_INTSET | types::SET_LISTPACK => "set",
        types::ZSET | types::ZSET_2 | types::ZSET_ZIPLIST | types::ZSET_LISTPACK => "zset",
        types::HASH | types::HASH_ZIPLIST | types::HASH_LISTPACK | 9 => "hash",
        types::STREAM_LISTPACKS | types::STREAM_LISTPACKS_2 | types::STREAM_LISTPACKS_3 => "stream",
        6 | 7 => "module",
        _ => "unknown",
    }
}

static FILE_CRC: Crc<u64> = Crc::<u64>::new(&CRC_64_REDIS);

/// The source, with the running CRC of every byte read.
struct Source<R> {
    r: R,
    crc: Digest<'static, u64>,
}

impl<R: Read> Source<R> {
    fn exact(&mut self, buf: &mut [u8]) -> Result<(), FileError> {
        self.r.read_exact(buf)?;
        self.crc.update(buf);
        Ok(())
    }

    fn byte(&mut self) -> Result<u8, FileError> {
        let mut b = [0u8; 1];
        self.exact(&mut b)?;
        Ok(b[0])
    }

    /// Appends exactly `n` bytes to `out`, as they arrive (never
    /// reserved on the claim).
    fn append(&mut self, out: &mut Vec<u8>, n: u64) -> Result<(), FileError> {
        let start = out.len();
        let got = (&mut self.r).take(n).read_to_end(out)?;
        self.crc.update(&out[start..]);
        if got as u64 != n {
            return Err(FileError::Io(io::ErrorKind::UnexpectedEof.into()));
        }
        Ok(())
    }
}

/// `RDB_ENC_LZF` in a string's encoded length.
const ENC_LZF: u64 = 3;
/// The integer forms' widths (`RDB_ENC_INT8/16/32`).
const ENC_INT_BYTES: [u64; 3] = [1, 2, 4];

/// Captures one value's bytes into `buf`, bounded by `max`.
struct Capture<'s, R> {
    src: &'s mut Source<R>,
    buf: Vec<u8>,
    max: usize,
}

impl<R: Read> Capture<'_, R> {
    fn room(&self, n: u64) -> Result<(), FileError> {
        if (self.buf.len() as u64).saturating_add(n) > self.max as u64 {
            return Err(FileError::TooLarge("value"));
        }
        Ok(())
    }

    fn take(&mut self, n: u64) -> Result<(), FileError> {
        self.room(n)?;
        self.src.append(&mut self.buf, n)
    }

    /// A length or encoding (`rdbLoadLenByRef`), copied.
    fn len_or_enc(&mut self) -> Result<(u64, bool), FileError> {
        self.room(1)?;
        let b = self.src.byte()?;
        self.buf.push(b);
        let start = self.buf.len();
        match b >> 6 {
            0 => Ok((u64::from(b & 0x3f), false)),
            1 => {
                self.take(1)?;
                Ok(((u64::from(b & 0x3f) << 8) | u64::from(self.buf[start]), false))
            }
            2 if b == 0x80 => {
                self.take(4)?;
                let s = &self.buf[start..start + 4];
                Ok((u64::from(u32::from_be_bytes([s[0], s[1], s[2], s[3]])), false))
            }
            2 if b == 0x81 => {
                self.take(8)?;
                let mut a = [0u8; 8];
                a.copy_from_slice(&self.buf[start..start + 8]);
                Ok((u64::from_be_bytes(a), false))
            }
            2 => Err(FileError::BadFormat("length")),
            _ => Ok((u64::from(b & 0x3f), true)),
        }
    }

    fn len(&mut self) -> Result<u64, FileError> {
        match self.len_or_enc()? {
            (n, false) => Ok(n),
            _ => Err(FileError::BadFormat("length")),
        }
    }

    /// A string in any encoding, copied.
    fn string(&mut self) -> Result<(), FileError> {
        match self.len_or_enc()? {
            (n, false) => self.take(n),
            (e, true) if (e as usize) < ENC_INT_BYTES.len() => self.take(ENC_INT_BYTES[e as usize]),
            (ENC_LZF, true) => {
                let clen = self.len()?;
                let _len = self.len()?;
                self.take(clen)
            }
            _ => Err(FileError::BadFormat("string encoding")),
        }
    }

    /// `n` repetitions of `f`; each reads at least one byte, so the
    /// loop ends within the value's bound.
    fn repeat(&mut self, n: u64, mut f: impl FnMut(&mut Self) -> Result<(), FileError>) -> Result<(), FileError> {
        let mut i = 0;
        while i < n {
            f(self)?;
            i += 1;
        }
        Ok(())
    }

    /// A stream id as two lengths.
    fn id(&mut self) -> Result<(), FileError> {
        self.len()?;
        self.len().map(drop)
    }

    /// The object after its type byte (`rdbLoadObject`'s reads), or
    /// `Ok(false)` for a type it cannot walk.
    fn object(&mut self, ty: u8) -> Result<bool, FileError> {
        match ty {
            types::STRING
            | types::SET_INTSET
            | types::LIST_ZIPLIST
            | types::ZSET_ZIPLIST
            | types::HASH_ZIPLIST
            | types::HASH_LISTPACK
            | types::ZSET_LISTPACK
            | types::SET_LISTPACK => self.string()?,
            types::LIST | types::SET | types::LIST_QUICKLIST => {
                let n = self.len()?;
                self.repeat(n, Self::string)?;
            }
            types::HASH => {
                let n = self.len()?;
                self.repeat(n, |c| {
                    c.string()?;
                    c.string()
                })?;
            }
            types::ZSET => {
                let n = self.len()?;
                self.repeat(n, |c| {
                    c.string()?;
                    c.room(1)?;
                    let b = c.src.byte()?;
                    c.buf.push(b);
                    if b < 253 {
                        c.take(u64::from(b))?;
                    }
                    Ok(())
                })?;
            }
            types::ZSET_2 => {
                let n = self.len()?;
                self.repeat(n, |c| {
                    c.string()?;
                    c.take(8)
                })?;
            }
            types::LIST_QUICKLIST_2 => {
                let n = self.len()?;
                self.repeat(n, |c| {
                    c.len()?;
                    c.string()
                })?;
            }
            types::STREAM_LISTPACKS => self.stream(StreamForm::V1)?,
            types::STREAM_LISTPACKS_2 => self.stream(StreamForm::V2)?,
            types::STREAM_LISTPACKS_3 => self.stream(StreamForm::V3)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// A stream (`rdb.c`'s RDB_TYPE_STREAM_LISTPACKS{,_2,_3} branch, as
    /// `rdb/stream.rs` reads it).
    fn stream(&mut self, form: StreamForm) -> Result<(), FileError> {
        let v2 = form != StreamForm::V1;
        let nodes = self.len()?;
        self.repeat(nodes, |c| {
            c.string()?;
            c.string()
        })?;
        self.len()?; // length
        self.id()?; // last id
        if v2 {
            self.id()?; // first id
            self.id()?; // max deleted id
            self.len()?; // entries added
        }
        let groups = self.len()?;
        self.repeat(groups, |c| {
            c.string()?; // name
            c.id()?; // last id
            if v2 {
                c.len()?; // entries read
            }
            let pel = c.len()?;
            c.repeat(pel, |c| {
                c.take(16 + 8)?; // raw id, delivery time
                c.len().map(drop) // delivery count
            })?;
            let consumers = c.len()?;
            c.repeat(consumers, |c| {
                c.string()?; // name
                c.take(8)?; // seen time
                if form == StreamForm::V3 {
                    c.take(8)?; // active time
                }
                let own = c.len()?;
                c.repeat(own, |c| c.take(16))
            })
        })
    }
}

/// The three stream layouts (types 15, 19, 21).
#[derive(Clone, Copy, PartialEq, Eq)]
enum StreamForm {
    V1,
    V2,
    V3,
}

/// Reads an RDB file item by item (module notes).
pub struct FileReader<R> {
    src: Source<R>,
    version: u16,
    limits: Limits,
    /// Decoded bytes charged so far against `limits.file_bytes_max`.
    decoded: u64,
    db: u64,
    done: bool,
}

impl<R: Read> FileReader<R> {
    /// Reads and checks the header.
    pub fn new(r: R, limits: Limits) -> Result<Self, FileError> {
        let mut src = Source { r, crc: FILE_CRC.digest() };
        let mut head = [0u8; HEADER_BYTES];
        src.exact(&mut head).map_err(|e| match e {
            FileError::Io(e) if e.kind() == io::ErrorKind::UnexpectedEof => FileError::NotRdb,
            e => e,
        })?;
        if &head[..5] != b"REDIS" || !head[5..].iter().all(u8::is_ascii_digit) {
            return Err(FileError::NotRdb);
        }
        let version = head[5..].iter().fold(0u16, |v, d| v * 10 + u16::from(d - b'0'));
        if !(FILE_VERSION_MIN..=FILE_VERSION_MAX).contains(&version) {
            return Err(FileError::Version(version));
        }
        Ok(FileReader { src, version, limits, decoded: 0, db: 0, done: false })
    }

    /// The file's version (from its header).
    pub fn version(&self) -> u16 {
        self.version
    }

    /// Decoded bytes read so far (keys, aux fields, values).
    pub fn decoded_bytes(&self) -> u64 {
        self.decoded
    }

    fn charge(&mut self, n: usize) -> Result<(), FileError> {
        self.decoded = self.decoded.saturating_add(n as u64);
        if self.decoded > self.limits.file_bytes_max {
            return Err(FileError::FileTooLarge);
        }
        Ok(())
    }

    fn capture(&mut self) -> Capture<'_, R> {
        Capture { src: &mut self.src, buf: Vec::new(), max: self.limits.value_bytes_max }
    }

    /// A string (key, aux field, library code), decoded.
    fn string(&mut self, what: &'static str) -> Result<Vec<u8>, FileError> {
        let max = self.limits.value_bytes_max;
        let mut c = self.capture();
        c.string().map_err(|e| match e {
            FileError::TooLarge(_) => FileError::TooLarge(what),
            e => e,
        })?;
        let bytes = c.buf;
        let s = decode_string(&bytes, max).ok_or(FileError::BadFormat(what))?;
        self.charge(s.len())?;
        Ok(s)
    }

    fn len(&mut self) -> Result<u64, FileError> {
        self.capture().len()
    }

    fn le_bytes<const N: usize>(&mut self) -> Result<[u8; N], FileError> {
        let mut a = [0u8; N];
        self.src.exact(&mut a)?;
        Ok(a)
    }

    /// The next item; `None` once EOF and the checksum are read.
    pub fn next_item(&mut self) -> Result<Option<Item>, FileError> {
        if self.done {
            return Ok(None);
        }
        let mut expire_ms = None;
        // Bounded: every opcode consumes at least one byte, and only
        // the ones without an item loop (at most one each per key:
        // SELECTDB/RESIZEDB/SLOT_INFO/IDLE/FREQ/EXPIRETIME between two
        // items is bounded by the stream's bytes).
        loop {
            let op = self.src.byte()?;
            match op {
                opcode::EOF => {
                    self.finish()?;
                    return Ok(None);
                }
                opcode::AUX => {
                    let key = self.string("aux field")?;
                    let value = self.string("aux value")?;
                    return Ok(Some(Item::Aux { key, value }));
                }
                opcode::SELECTDB => self.db = self.len()?,
                opcode::RESIZEDB => {
                    self.len()?;
                    self.len()?;
                }
                opcode::SLOT_INFO => {
                    self.len()?;
                    self.len()?;
                    self.len()?;
                }
                opcode::EXPIRETIME_MS => expire_ms = Some(i64::from_le_bytes(self.le_bytes()?)),
                opcode::EXPIRETIME => {
                    expire_ms = Some(i64::from(i32::from_le_bytes(self.le_bytes()?)) * 1000);
                }
                opcode::IDLE => {
                    self.len()?;
                }
                opcode::FREQ => {
                    self.src.byte()?;
                }
                opcode::FUNCTION2 => return Ok(Some(Item::Function(self.string("function library")?))),
                opcode::FUNCTION_PRE_GA => return Err(FileError::FunctionPreGa),
                opcode::MODULE_AUX => return Err(FileError::ModuleAux),
                ty => return self.key(ty, expire_ms).map(Some),
            }
        }
    }

    /// A key of type `ty` (read), its name and its value.
    fn key(&mut self, ty: u8, expire_ms: Option<i64>) -> Result<Item, FileError> {
        let key = self.string("key")?;
        let db = self.db;
        let max = self.limits.value_bytes_max;
        let mut c = self.capture();
        c.buf.push(ty);
        let walked = match c.object(ty) {
            Ok(w) => w,
            Err(FileError::TooLarge(_)) => {
                return Err(FileError::TooLarge("value"));
            }
            Err(e) => return Err(e),
        };
        if !walked {
            return Err(FileError::UnsupportedType { db, key, type_byte: ty });
        }
        let body = c.buf;
        match decode_object(&body, max) {
            Ok((value, used)) => {
                self.charge(used)?;
                Ok(Item::Key { db, key, expire_ms, value })
            }
            Err(why) => Ok(Item::Refused { db, key, type_byte: ty, why }),
        }
    }

    /// After EOF: the checksum (from version 5), checked unless zero.
    fn finish(&mut self) -> Result<(), FileError> {
        self.done = true;
        if self.version < CHECKSUM_SINCE_VERSION {
            return Ok(());
        }
        let computed = self.src.crc.clone().finalize();
        let mut a = [0u8; 8];
        self.src.r.read_exact(&mut a)?;
        let stored = u64::from_le_bytes(a);
        if stored != 0 && stored != computed {
            return Err(FileError::Checksum { stored, computed });
        }
        Ok(())
    }
}

impl<R> std::fmt::Debug for FileReader<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileReader").field("version", &self.version).field("decoded", &self.decoded).finish()
    }
}

/// The sink, with the running CRC of every byte written.
pub struct FileWriter<W: Write> {
    w: W,
    crc: Digest<'static, u64>,
    /// The database last selected (none yet: `None`).
    db: Option<u64>,
}

impl<W: Write> FileWriter<W> {
    /// Writes the header (`REDIS0010`, [`FILE_VERSION_WRITTEN`]) and the
    /// aux fields, in order.
    pub fn new<'a>(w: W, aux: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> io::Result<Self> {
        let mut f = FileWriter { w, crc: FILE_CRC.digest(), db: None };
        f.put(format!("REDIS{FILE_VERSION_WRITTEN:04}").as_bytes())?;
        for (k, v) in aux {
            f.put(&[opcode::AUX])?;
            f.string(k.as_bytes())?;
            f.string(v)?;
        }
        Ok(f)
    }

    fn put(&mut self, b: &[u8]) -> io::Result<()> {
        self.crc.update(b);
        self.w.write_all(b)
    }

    /// `rdbSaveLen`.
    fn length(&mut self, n: u64) -> io::Result<()> {
        if n < 1 << 6 {
            self.put(&[n as u8])
        } else if n < 1 << 14 {
            self.put(&[0x40 | (n >> 8) as u8, n as u8])
        } else if let Ok(n32) = u32::try_from(n) {
            self.put(&[0x80])?;
            self.put(&n32.to_be_bytes())
        } else {
            self.put(&[0x81])?;
            self.put(&n.to_be_bytes())
        }
    }

    /// A raw string.
    fn string(&mut self, b: &[u8]) -> io::Result<()> {
        self.length(b.len() as u64)?;
        self.put(b)
    }

    /// A FUNCTION library's code (before the databases, as Redis writes it).
    pub fn function(&mut self, code: &[u8]) -> io::Result<()> {
        self.put(&[opcode::FUNCTION2])?;
        self.string(code)
    }

    /// Starts database `db`: SELECTDB and RESIZEDB with its key count and
    /// how many of them expire (hints to the loader).
    pub fn select_db(&mut self, db: u64, keys: u64, expires: u64) -> io::Result<()> {
        self.put(&[opcode::SELECTDB])?;
        self.length(db)?;
        self.put(&[opcode::RESIZEDB])?;
        self.length(keys)?;
        self.length(expires)?;
        self.db = Some(db);
        Ok(())
    }

    /// Switches to database `db` (SELECTDB alone, no size hints): for a
    /// writer whose keys do not come grouped by database.
    pub fn switch_db(&mut self, db: u64) -> io::Result<()> {
        self.put(&[opcode::SELECTDB])?;
        self.length(db)?;
        self.db = Some(db);
        Ok(())
    }

    /// One key of the database selected: its absolute expiry (Unix ms)
    /// if any and its value as a DUMP payload (`rdb::Writer`'s, or
    /// `rdb::encode`'s; the footer is dropped).
    pub fn key(&mut self, key: &[u8], expire_ms: Option<i64>, dump: &[u8]) -> io::Result<()> {
        if self.db.is_none() {
            self.select_db(0, 0, 0)?;
        }
        if dump.len() <= FOOTER_BYTES {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a DUMP payload"));
        }
        let object = &dump[..dump.len() - FOOTER_BYTES];
        if let Some(ms) = expire_ms {
            self.put(&[opcode::EXPIRETIME_MS])?;
            self.put(&ms.to_le_bytes())?;
        }
        self.put(&object[..1])?;
        self.string(key)?;
        self.put(&object[1..])
    }

    /// EOF and the CRC-64; answers the sink (flushed).
    pub fn finish(mut self) -> io::Result<W> {
        self.put(&[opcode::EOF])?;
        let crc = self.crc.clone().finalize();
        self.w.write_all(&crc.to_le_bytes())?;
        self.w.flush()?;
        Ok(self.w)
    }
}

impl<W: Write> std::fmt::Debug for FileWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileWriter").field("db", &self.db).finish()
    }
}

/// The aux fields redis-server 7.0 writes in a `SAVE`, with Amalgam's
/// values: `redis-ver` says the Redis version whose format this is.
pub fn save_aux(ctime_s: u64, used_mem: u64) -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("redis-ver", REDIS_VER_WRITTEN.as_bytes().to_vec()),
        ("redis-bits", b"64".to_vec()),
        ("ctime", ctime_s.to_string().into_bytes()),
        ("used-mem", used_mem.to_string().into_bytes()),
        ("aof-base", b"0".to_vec()),
    ]
}

/// The `redis-ver` Amalgam's files carry: the Redis release whose RDB
/// version (10) and encodings they use.
pub const REDIS_VER_WRITTEN: &str = "7.0.0";

#[cfg(test)]
#[path = "file_tests.rs"]
mod tests;
