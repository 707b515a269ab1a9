//! The on-disk format: file names, headers and records. Pinned by
//! `tests/golden.rs`; a change here is a new `VERSION`.
//!
//! ```text
//! files     log-<first_seq:020>.aml    log segment; records numbered
//!                                      consecutively across segments
//!           snap-<log_seq:020>.ams     complete snapshot (.ams.tmp while
//!                                      being written, then renamed)
//! log header (24 bytes)       magic "AMALGLOG" | u32 version=4 | u32 hcrc | u64 first_seq
//! snapshot header (32 bytes)  magic "AMALGSNP" | u32 version=4 | u32 hcrc | u64 log_seq | u64 created (unix s)
//!             hcrc = crc32c of the header's other bytes (0..12 and 16..);
//!             version 1, still read, had u32 flags=0 there and no check
//! record      u32 len | u32 crc32c(body) | body = u8 type, payload   (len = body bytes)
//!   1 PUT       u32 flags | u32 expiry (unix s, 0 never) | u64 cas | u8 klen | u32 vlen | key | value
//!   5 PUT_MS    u32 flags | u64 expiry (unix ms)         | u64 cas | u8 klen | u32 vlen | key | value
//!               (version 3: an item whose deadline is not a whole second;
//!               every other item is still a PUT)
//!   6 PUT_TYPED u8 tag | u32 flags | u64 expiry (unix ms, 0 never) | u64 cas | u8 klen | u32 vlen | key | value
//!               (version 4: a collection, engine object.rs's value tag
//!               1..=7. Tags 1..=6: the value is the item's packed bytes;
//!               tag 7, an object: u8 kind (amalgam-types value::tag_of),
//!               u64 version (engine ObjectCell::version), then the
//!               object's encoding, Object::encode)
//!   7 META      u32 flags | u64 expiry (unix ms, 0 never) | u64 cas | u8 klen | key
//!               (version 4, log only: the key's item keeps its value
//!               (a collection's object) and takes these fields: EXPIRE
//!               and PERSIST on a large collection)
//!   8 OP        u8 klen | key | u64 version | op   (version 4, log only:
//!               one in-place change of the key's large collection,
//!               amalgam-types op.rs's encoding; `version` is the object's
//!               after the change, so replay applies it only to the
//!               version before)
//!   2 DELETE    u8 klen | key
//!   3 FLUSH     u64 fence_cas
//!   4 FLUSH_AT  u32 at (unix s)
//!   11 FUNCTIONS payload       (version 6, log only: every FUNCTION library
//!               as FUNCTION DUMP's payload; the last one read wins)
//!   0x7F END    u64 items        (snapshot only: its last record; absent = incomplete)
//! ```
//! All integers little-endian. A record is accepted only whole and with a
//! matching CRC, so a torn write is detected wherever it tore.

use amalgam_engine::{Expiry, ItemRef, KEY_BYTES_MAX, TAG_BYTES, TAG_OBJECT, TAG_PACKED_MIN};

/// Format version both file kinds are written in. Version 4 added the
/// collections (PUT_TYPED, META and OP records): a version 3 reader would
/// call them corrupt and truncate the log at the first. Version 3 added the
/// PUT_MS record (millisecond deadlines, RESP's PX and PEXPIRE); a version
/// 2 reader would call it corrupt and truncate the log there, so the
/// version says "not for you" first. Version 2 added the header checksum
/// (version 1 headers were not covered by any CRC, so a flipped `log_seq`
/// went unnoticed).
pub const VERSION: u32 = 6;
/// Version 6 added the FUNCTIONS record (the FUNCTION libraries, issue
/// 34): a version 5 reader would call it corrupt and truncate the log
/// there. The fifth version is still read: version 6 without FUNCTIONS.
pub const VERSION_5: u32 = 5;
/// Version 5 added the REPL_POS record (a replica's place in its
/// primary's stream, issue 22): a version 4 reader would call it corrupt
/// and truncate the log there. The fourth version is still read: version
/// 5 without REPL_POS.
pub const VERSION_4: u32 = 4;
/// The third version, still read: version 4 without collections.
pub const VERSION_3: u32 = 3;
/// The second version, still read: version 3 without PUT_MS records.
pub const VERSION_2: u32 = 2;
/// The first version, still read: the same records, headers without a
/// checksum (flags, always 0, where version 2 has it).
pub const VERSION_1: u32 = 1;
/// Magic of a log segment.
pub const LOG_MAGIC: &[u8; 8] = b"AMALGLOG";
/// Magic of a snapshot.
pub const SNAP_MAGIC: &[u8; 8] = b"AMALGSNP";
/// Bytes of a log segment's header.
pub const LOG_HEADER_BYTES: usize = 24;
/// Bytes of a snapshot's header.
pub const SNAP_HEADER_BYTES: usize = 32;
/// Bytes before a record's body (len, crc).
pub const RECORD_FRAME_BYTES: usize = 8;
/// Largest record body: a PUT of the largest item the engine accepts
/// (1 GiB values) plus its fixed fields. A longer length field is corrupt.
pub const RECORD_BODY_BYTES_MAX: usize = 1 + PUT_MS_FIXED_BYTES + KEY_BYTES_MAX + (1 << 30);
/// PUT's fixed fields after the type byte.
const PUT_FIXED_BYTES: usize = 4 + 4 + 8 + 1 + 4;
/// PUT_MS's fixed fields after the type byte (the expiry is 8 bytes).
const PUT_MS_FIXED_BYTES: usize = PUT_FIXED_BYTES + 4;
/// PUT_TYPED's fixed fields after the type byte (a tag before PUT_MS's).
const PUT_TYPED_FIXED_BYTES: usize = 1 + PUT_MS_FIXED_BYTES;
/// META's fixed fields after the type byte.
const META_FIXED_BYTES: usize = 4 + 8 + 8 + 1;

/// Record type: the key now holds this item.
pub const T_PUT: u8 = 1;
/// Record type: the key now holds this item, which expires at a unix
/// millisecond that is not a whole second.
pub const T_PUT_MS: u8 = 5;
/// Record type: the key now holds this collection item.
pub const T_PUT_TYPED: u8 = 6;
/// Record type: the key's item took new fields, keeping its value.
pub const T_META: u8 = 7;
/// Record type: an in-place change of the key's large collection.
pub const T_OP: u8 = 8;
/// Record type: the key was deleted.
pub const T_DELETE: u8 = 2;
/// Record type: flush_all took effect with this CAS fence.
pub const T_FLUSH: u8 = 3;
/// Record type: a delayed flush_all was scheduled.
pub const T_FLUSH_AT: u8 = 4;
/// Record type: a replica applied its primary's stream up to here
/// (version 5): the replication id, the offset and the replica's CAS
/// shift, so a replica restarted after a crash continues by partial
/// resync from what its log holds.
pub const T_REPL_POS: u8 = 9;
/// Record type: a primary asks its replicas to acknowledge their offset
/// now (Redis's `REPLCONF GETACK *`; in the replication stream only,
/// never in a file: WAIT sends one, and an idle primary one every
/// `REPL_PING_SECS` as Redis's ping to its replicas).
pub const T_GETACK: u8 = 10;
/// Bytes of a replication id in a REPL_POS record.
pub const REPLID_BYTES: usize = 40;
/// Record type: end of a complete snapshot.
pub const T_END: u8 = 0x7F;
/// Every FUNCTION library, as FUNCTION DUMP's payload (`rdb::encode_functions`):
/// written at each change of the libraries and at the head of the log
/// segment a snapshot starts; the last one recovery reads is the set.
pub const T_FUNCTIONS: u8 = 11;

/// A log segment's file name.
pub fn log_name(first_seq: u64) -> String {
    format!("log-{first_seq:020}.aml")
}

/// A snapshot's file name.
pub fn snap_name(log_seq: u64) -> String {
    format!("snap-{log_seq:020}.ams")
}

/// Parses `log-<n>.aml` / `snap-<n>.ams` names: (is_log, n).
pub fn parse_name(name: &str) -> Option<(bool, u64)> {
    let (is_log, rest) = if let Some(r) = name.strip_prefix("log-") {
        (true, r.strip_suffix(".aml")?)
    } else {
        (false, name.strip_prefix("snap-")?.strip_suffix(".ams")?)
    };
    if rest.len() != 20 || !rest.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((is_log, rest.parse().ok()?))
}

/// A log segment's header.
pub fn log_header(first_seq: u64) -> [u8; LOG_HEADER_BYTES] {
    let mut h = [0u8; LOG_HEADER_BYTES];
    h[..8].copy_from_slice(LOG_MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_le_bytes());
    h[16..24].copy_from_slice(&first_seq.to_le_bytes());
    seal_header(&mut h);
    h
}

/// A snapshot's header.
pub fn snap_header(log_seq: u64, created: u64) -> [u8; SNAP_HEADER_BYTES] {
    let mut h = [0u8; SNAP_HEADER_BYTES];
    h[..8].copy_from_slice(SNAP_MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_le_bytes());
    h[16..24].copy_from_slice(&log_seq.to_le_bytes());
    h[24..32].copy_from_slice(&created.to_le_bytes());
    seal_header(&mut h);
    h
}

/// CRC32C of a header: every byte but the checksum field (12..16).
fn header_crc(h: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(&h[..12]), &h[16..])
}

fn seal_header(h: &mut [u8]) {
    let crc = header_crc(h);
    h[12..16].copy_from_slice(&crc.to_le_bytes());
}

/// Checks a whole header (`LOG_HEADER_BYTES` or `SNAP_HEADER_BYTES`):
/// the magic, the version and, from version 2, the header's checksum;
/// returns the u64 at 16 (first_seq or log_seq). Version 1 (no checksum:
/// its u32 at 12 is flags, always 0) is still read.
pub fn parse_header(h: &[u8], magic: &[u8; 8]) -> Result<u64, String> {
    if h.len() < 24 || &h[..8] != magic {
        return Err("bad magic".into());
    }
    let version = u32::from_le_bytes(h[8..12].try_into().expect("4 bytes"));
    let field = u32::from_le_bytes(h[12..16].try_into().expect("4 bytes"));
    match version {
        VERSION_1 if field != 0 => return Err("version 1 header with nonzero flags".into()),
        VERSION_1 => {}
        VERSION | VERSION_5 | VERSION_4 | VERSION_3 | VERSION_2 if field != header_crc(h) => {
            return Err("header checksum mismatch".into())
        }
        VERSION | VERSION_5 | VERSION_4 | VERSION_3 | VERSION_2 => {}
        _ => return Err(format!("unknown format version {version}")),
    }
    Ok(u64::from_le_bytes(h[16..24].try_into().expect("8 bytes")))
}

/// Appends one framed record whose body is `ty` then `parts`.
fn frame(out: &mut Vec<u8>, ty: u8, parts: &[&[u8]]) {
    let len = 1 + parts.iter().map(|p| p.len()).sum::<usize>();
    out.reserve(RECORD_FRAME_BYTES + len);
    let at = out.len();
    out.extend_from_slice(&(len as u32).to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.push(ty);
    for p in parts {
        out.extend_from_slice(p);
    }
    let crc = crc32c::crc32c(&out[at + RECORD_FRAME_BYTES..]);
    out[at + 4..at + 8].copy_from_slice(&crc.to_le_bytes());
}

/// Appends one framed record whose body is `ty` then what `body` appends.
fn frame_with(out: &mut Vec<u8>, ty: u8, body: impl FnOnce(&mut Vec<u8>)) {
    let at = out.len();
    out.extend_from_slice(&[0; RECORD_FRAME_BYTES]);
    out.push(ty);
    body(out);
    let len = out.len() - at - RECORD_FRAME_BYTES;
    let crc = crc32c::crc32c(&out[at + RECORD_FRAME_BYTES..]);
    out[at..at + 4].copy_from_slice(&(len as u32).to_le_bytes());
    out[at + 4..at + 8].copy_from_slice(&crc.to_le_bytes());
}

/// An expiry as a unix millisecond, 0 for never (PUT_TYPED and META).
fn expiry_ms(e: Expiry) -> u64 {
    e.unix_millis().unwrap_or(0)
}

/// Appends a PUT record of an item (PUT_MS if its deadline has
/// milliseconds, PUT_TYPED for a collection). Called under the item's
/// bucket lock (journal and snapshot alike), which every writer of an
/// object holds too, so an object is encoded in one consistent state.
pub fn put(out: &mut Vec<u8>, it: &ItemRef<'_>) {
    if it.tag() != TAG_BYTES {
        let cell = it.object();
        put_typed_with(out, it.key(), it.tag(), it.flags(), it.expiry(), it.cas(), |out| match cell {
            Some(cell) => {
                let o = cell.read();
                out.push(o.kind());
                out.extend_from_slice(&cell.version().to_le_bytes());
                o.encode(out);
            }
            None => out.extend_from_slice(it.value()),
        });
        return;
    }
    match it.expiry() {
        Expiry::Never => put_raw(out, it.key(), it.value(), it.flags(), 0, it.cas()),
        Expiry::At(t) => put_raw(out, it.key(), it.value(), it.flags(), t.max(1), it.cas()),
        Expiry::AtMillis(ms) => put_raw_ms(out, it.key(), it.value(), it.flags(), ms, it.cas()),
    }
}

/// The length of the record [`put`] appends for a plain item (`it.tag()`
/// is `TAG_BYTES`).
pub fn put_len(it: &ItemRef<'_>) -> usize {
    let fixed = match it.expiry() {
        Expiry::AtMillis(_) => PUT_MS_FIXED_BYTES,
        Expiry::At(_) | Expiry::Never => PUT_FIXED_BYTES,
    };
    RECORD_FRAME_BYTES + 1 + fixed + it.key().len() + it.value().len()
}

/// Appends the head of the PUT (or PUT_MS) record of a plain item
/// (`it.tag()` is `TAG_BYTES`): every byte before the value, the CRC
/// combined with `value_crc` (the CRC32C of `it.value()`). The value
/// itself follows in the log (`staged.rs`): head and value together are
/// byte for byte the record [`put`] appends.
pub fn put_head(out: &mut Vec<u8>, it: &ItemRef<'_>, value_crc: u32) {
    let (key, vlen) = (it.key(), it.value().len());
    let (ty, fixed) = match it.expiry() {
        Expiry::AtMillis(ms) => (T_PUT_MS, put_ms_fixed(key.len(), vlen, it.flags(), ms, it.cas()).to_vec()),
        Expiry::At(t) => (T_PUT, put_fixed(key.len(), vlen, it.flags(), t.max(1), it.cas()).to_vec()),
        Expiry::Never => (T_PUT, put_fixed(key.len(), vlen, it.flags(), 0, it.cas()).to_vec()),
    };
    let at = out.len();
    let len = 1 + fixed.len() + key.len() + vlen;
    out.extend_from_slice(&(len as u32).to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.push(ty);
    out.extend_from_slice(&fixed);
    out.extend_from_slice(key);
    let head_crc = crc32c::crc32c(&out[at + RECORD_FRAME_BYTES..]);
    let crc = crc32c::crc32c_combine(head_crc, value_crc, vlen);
    out[at + 4..at + 8].copy_from_slice(&crc.to_le_bytes());
}

/// A PUT_MS record's fixed fields.
fn put_ms_fixed(klen: usize, vlen: usize, flags: u32, expiry_ms: u64, cas: u64) -> [u8; PUT_MS_FIXED_BYTES] {
    let mut fixed = [0u8; PUT_MS_FIXED_BYTES];
    fixed[0..4].copy_from_slice(&flags.to_le_bytes());
    fixed[4..12].copy_from_slice(&expiry_ms.to_le_bytes());
    fixed[12..20].copy_from_slice(&cas.to_le_bytes());
    fixed[20] = klen as u8;
    fixed[21..25].copy_from_slice(&(vlen as u32).to_le_bytes());
    fixed
}

/// A PUT record's fixed fields.
fn put_fixed(klen: usize, vlen: usize, flags: u32, expiry: u32, cas: u64) -> [u8; PUT_FIXED_BYTES] {
    let mut fixed = [0u8; PUT_FIXED_BYTES];
    fixed[0..4].copy_from_slice(&flags.to_le_bytes());
    fixed[4..8].copy_from_slice(&expiry.to_le_bytes());
    fixed[8..16].copy_from_slice(&cas.to_le_bytes());
    fixed[16] = klen as u8;
    fixed[17..21].copy_from_slice(&(vlen as u32).to_le_bytes());
    fixed
}

/// Appends a PUT_MS record from its fields (`expiry_ms`: unix ms).
pub fn put_raw_ms(out: &mut Vec<u8>, key: &[u8], value: &[u8], flags: u32, expiry_ms: u64, cas: u64) {
    let fixed = put_ms_fixed(key.len(), value.len(), flags, expiry_ms, cas);
    frame(out, T_PUT_MS, &[&fixed, key, value]);
}

/// Appends a PUT record from its fields (`expiry`: unix seconds, 0 never).
pub fn put_raw(out: &mut Vec<u8>, key: &[u8], value: &[u8], flags: u32, expiry: u32, cas: u64) {
    let fixed = put_fixed(key.len(), value.len(), flags, expiry, cas);
    frame(out, T_PUT, &[&fixed, key, value]);
}

/// Appends a PUT_TYPED record from its fields: `tag` 1..=7 (for 7,
/// `value` is the kind byte and the object's encoding).
pub fn put_typed(out: &mut Vec<u8>, key: &[u8], tag: u8, flags: u32, expiry: Expiry, cas: u64, value: &[u8]) {
    put_typed_with(out, key, tag, flags, expiry, cas, |out| out.extend_from_slice(value));
}

fn put_typed_with(
    out: &mut Vec<u8>,
    key: &[u8],
    tag: u8,
    flags: u32,
    expiry: Expiry,
    cas: u64,
    value: impl FnOnce(&mut Vec<u8>),
) {
    frame_with(out, T_PUT_TYPED, |out| {
        out.push(tag);
        out.extend_from_slice(&flags.to_le_bytes());
        out.extend_from_slice(&expiry_ms(expiry).to_le_bytes());
        out.extend_from_slice(&cas.to_le_bytes());
        out.push(key.len() as u8);
        let vlen_at = out.len();
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(key);
        let v0 = out.len();
        value(out);
        let vlen = (out.len() - v0) as u32;
        out[vlen_at..vlen_at + 4].copy_from_slice(&vlen.to_le_bytes());
    });
}

/// Appends a META record of an item whose value was kept (the engine's
/// `Change::Meta`).
pub fn meta(out: &mut Vec<u8>, it: &ItemRef<'_>) {
    meta_raw(out, it.key(), it.flags(), it.expiry(), it.cas());
}

/// Appends a META record from its fields.
pub fn meta_raw(out: &mut Vec<u8>, key: &[u8], flags: u32, expiry: Expiry, cas: u64) {
    let mut fixed = [0u8; META_FIXED_BYTES];
    fixed[0..4].copy_from_slice(&flags.to_le_bytes());
    fixed[4..12].copy_from_slice(&expiry_ms(expiry).to_le_bytes());
    fixed[12..20].copy_from_slice(&cas.to_le_bytes());
    fixed[20] = key.len() as u8;
    frame(out, T_META, &[&fixed, key]);
}

/// Appends an OP record: `op` changed the large collection at `key` in
/// place, making its object's `version`.
pub fn op(out: &mut Vec<u8>, key: &[u8], version: u64, op: &[u8]) {
    frame(out, T_OP, &[&[key.len() as u8], key, &version.to_le_bytes(), op]);
}

/// Appends a DELETE record.
pub fn delete(out: &mut Vec<u8>, key: &[u8]) {
    frame(out, T_DELETE, &[&[key.len() as u8], key]);
}

/// Appends a FLUSH record.
pub fn flush(out: &mut Vec<u8>, fence_cas: u64) {
    frame(out, T_FLUSH, &[&fence_cas.to_le_bytes()]);
}

/// Appends a FLUSH_AT record.
pub fn flush_at(out: &mut Vec<u8>, at: u32) {
    frame(out, T_FLUSH_AT, &[&at.to_le_bytes()]);
}

/// Appends a REPL_POS record; `replid` is [`REPLID_BYTES`] long (a
/// longer one is cut, a shorter one padded with `0`).
pub fn repl_pos(out: &mut Vec<u8>, replid: &str, offset: u64, cas_shift: u64) {
    let mut id = [b'0'; REPLID_BYTES];
    let n = replid.len().min(REPLID_BYTES);
    id[..n].copy_from_slice(&replid.as_bytes()[..n]);
    frame(out, T_REPL_POS, &[&id, &offset.to_le_bytes(), &cas_shift.to_le_bytes()]);
}

/// Appends a FUNCTIONS record: every library, as FUNCTION DUMP's payload.
pub fn functions(out: &mut Vec<u8>, payload: &[u8]) {
    frame(out, T_FUNCTIONS, &[payload]);
}

/// Appends a GETACK record (stream only).
pub fn getack(out: &mut Vec<u8>) {
    frame(out, T_GETACK, &[]);
}

/// Appends a snapshot's END record.
pub fn end(out: &mut Vec<u8>, items: u64) {
    frame(out, T_END, &[&items.to_le_bytes()]);
}

/// A decoded record, borrowing from the buffer it was read from.
#[derive(Debug, PartialEq, Eq)]
pub enum Record<'a> {
    /// The key holds this item (a PUT or a PUT_MS record).
    Put {
        /// Key bytes.
        key: &'a [u8],
        /// Value bytes.
        value: &'a [u8],
        /// Client flags.
        flags: u32,
        /// When it expires: a PUT's seconds or a PUT_MS's milliseconds.
        expiry: Expiry,
        /// CAS unique.
        cas: u64,
    },
    /// The key holds this collection item (a PUT_TYPED record).
    PutTyped {
        /// Key bytes.
        key: &'a [u8],
        /// The engine's value tag, 1..=7.
        tag: u8,
        /// Packed bytes (tags 1..=6), or kind byte and encoding (7).
        value: &'a [u8],
        /// Client flags.
        flags: u32,
        /// When it expires.
        expiry: Expiry,
        /// CAS unique.
        cas: u64,
    },
    /// The key's item keeps its value and takes these fields.
    Meta {
        /// Key bytes.
        key: &'a [u8],
        /// Client flags.
        flags: u32,
        /// When it expires.
        expiry: Expiry,
        /// CAS unique.
        cas: u64,
    },
    /// An in-place change of the key's large collection.
    Op {
        /// Key bytes.
        key: &'a [u8],
        /// The object's version after the change.
        version: u64,
        /// The change (amalgam-types op.rs).
        op: &'a [u8],
    },
    /// The key was deleted.
    Delete {
        /// Key bytes.
        key: &'a [u8],
    },
    /// flush_all with its CAS fence.
    Flush {
        /// Items with a CAS below this are gone.
        fence_cas: u64,
    },
    /// A delayed flush_all.
    FlushAt {
        /// Unix seconds.
        at: u32,
    },
    /// A replica's place in its primary's stream (version 5).
    ReplPos {
        /// The primary's replication id.
        replid: &'a [u8],
        /// The stream offset applied up to here.
        offset: u64,
        /// The replica's CAS shift (`repl.rs`, `Applier`).
        cas_shift: u64,
    },
    /// The primary asks for an acknowledgement (stream only).
    GetAck,
    /// Every FUNCTION library (version 6): FUNCTION DUMP's payload.
    Functions {
        /// The payload (`rdb::decode_functions` reads it).
        payload: &'a [u8],
    },
    /// End of a snapshot.
    End {
        /// Items the snapshot holds.
        items: u64,
    },
}

/// Why a record could not be read.
#[derive(Debug, PartialEq, Eq)]
pub enum Bad {
    /// The buffer ends inside the record (a torn tail).
    Torn,
    /// The record is whole but wrong: CRC mismatch, impossible length,
    /// unknown type or inconsistent fields.
    Corrupt(&'static str),
}

/// Reads the record at the start of `buf`: the record and its framed
/// length, or why not. `buf` empty is not a record (the caller checks).
pub fn read_record(buf: &[u8]) -> Result<(Record<'_>, usize), Bad> {
    if buf.len() < RECORD_FRAME_BYTES {
        return Err(Bad::Torn);
    }
    let len = u32::from_le_bytes(buf[0..4].try_into().expect("4 bytes")) as usize;
    if len == 0 || len > RECORD_BODY_BYTES_MAX {
        return Err(Bad::Corrupt("impossible record length"));
    }
    let Some(body) = buf.get(RECORD_FRAME_BYTES..RECORD_FRAME_BYTES + len) else {
        return Err(Bad::Torn);
    };
    let crc = u32::from_le_bytes(buf[4..8].try_into().expect("4 bytes"));
    if crc32c::crc32c(body) != crc {
        return Err(Bad::Corrupt("checksum mismatch"));
    }
    let rec = decode_body(body)?;
    Ok((rec, RECORD_FRAME_BYTES + len))
}

fn decode_body(body: &[u8]) -> Result<Record<'_>, Bad> {
    let p = &body[1..];
    let u32_at = |at: usize| u32::from_le_bytes(p[at..at + 4].try_into().expect("4 bytes"));
    let u64_at = |at: usize| u64::from_le_bytes(p[at..at + 8].try_into().expect("8 bytes"));
    let bad = |what| Err(Bad::Corrupt(what));
    match body[0] {
        ty @ (T_PUT | T_PUT_MS) => {
            // PUT_MS's expiry is 4 bytes wider; the fields after it shift.
            let (fixed, wide) = if ty == T_PUT { (PUT_FIXED_BYTES, 0) } else { (PUT_MS_FIXED_BYTES, 4) };
            if p.len() < fixed {
                return bad("short PUT");
            }
            let klen = p[16 + wide] as usize;
            let vlen = u32_at(17 + wide) as usize;
            if klen == 0 || klen > KEY_BYTES_MAX || p.len() != fixed + klen + vlen {
                return bad("PUT lengths disagree");
            }
            let expiry = match ty {
                T_PUT if u32_at(4) == 0 => Expiry::Never,
                T_PUT => Expiry::At(u32_at(4)),
                _ if u64_at(4) == 0 => return bad("PUT_MS without an expiry"),
                _ => Expiry::at_millis(u64_at(4)),
            };
            Ok(Record::Put {
                key: &p[fixed..fixed + klen],
                value: &p[fixed + klen..],
                flags: u32_at(0),
                expiry,
                cas: u64_at(8 + wide),
            })
        }
        T_PUT_TYPED => {
            let fixed = PUT_TYPED_FIXED_BYTES;
            if p.len() < fixed {
                return bad("short PUT_TYPED");
            }
            let tag = p[0];
            let klen = p[21] as usize;
            let vlen = u32_at(22) as usize;
            if !(TAG_PACKED_MIN..=TAG_OBJECT).contains(&tag) {
                return bad("PUT_TYPED of an unknown tag");
            }
            if klen == 0 || klen > KEY_BYTES_MAX || p.len() != fixed + klen + vlen {
                return bad("PUT_TYPED lengths disagree");
            }
            Ok(Record::PutTyped {
                key: &p[fixed..fixed + klen],
                tag,
                value: &p[fixed + klen..],
                flags: u32_at(1),
                expiry: expiry_of_ms(u64_at(5)),
                cas: u64_at(13),
            })
        }
        T_META => {
            if p.len() < META_FIXED_BYTES {
                return bad("short META");
            }
            let klen = p[20] as usize;
            if klen == 0 || klen > KEY_BYTES_MAX || p.len() != META_FIXED_BYTES + klen {
                return bad("META lengths disagree");
            }
            Ok(Record::Meta {
                key: &p[META_FIXED_BYTES..],
                flags: u32_at(0),
                expiry: expiry_of_ms(u64_at(4)),
                cas: u64_at(12),
            })
        }
        T_OP => {
            let klen = *p.first().unwrap_or(&0) as usize;
            if klen == 0 || klen > KEY_BYTES_MAX || p.len() <= 1 + klen + 8 {
                return bad("OP lengths disagree");
            }
            Ok(Record::Op { key: &p[1..1 + klen], version: u64_at(1 + klen), op: &p[1 + klen + 8..] })
        }
        T_DELETE => {
            let klen = *p.first().unwrap_or(&0) as usize;
            if klen == 0 || p.len() != 1 + klen {
                return bad("DELETE lengths disagree");
            }
            Ok(Record::Delete { key: &p[1..] })
        }
        T_FLUSH if p.len() == 8 => Ok(Record::Flush { fence_cas: u64_at(0) }),
        T_FLUSH_AT if p.len() == 4 => Ok(Record::FlushAt { at: u32_at(0) }),
        T_END if p.len() == 8 => Ok(Record::End { items: u64_at(0) }),
        T_REPL_POS if p.len() == REPLID_BYTES + 16 => Ok(Record::ReplPos {
            replid: &p[..REPLID_BYTES],
            offset: u64_at(REPLID_BYTES),
            cas_shift: u64_at(REPLID_BYTES + 8),
        }),
        T_GETACK if p.is_empty() => Ok(Record::GetAck),
        T_FUNCTIONS => Ok(Record::Functions { payload: p }),
        T_FLUSH | T_FLUSH_AT | T_END | T_REPL_POS | T_GETACK => bad("wrong payload length"),
        _ => bad("unknown record type"),
    }
}

/// PUT_TYPED's and META's expiry: 0 never, else a unix millisecond
/// (whole seconds come back as `Expiry::At`, as they were).
fn expiry_of_ms(ms: u64) -> Expiry {
    if ms == 0 {
        Expiry::Never
    } else {
        Expiry::at_millis(ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        let mut b = Vec::new();
        put_raw(&mut b, b"key", b"value", 7, 1_800_000_000, 42);
        put_raw_ms(&mut b, b"key", b"value", 7, 1_800_000_000_250, 43);
        delete(&mut b, b"key");
        flush(&mut b, 99);
        flush_at(&mut b, 1234);
        end(&mut b, 3);
        put_typed(&mut b, b"h", 1, 0, Expiry::AtMillis(1_800_000_000_250), 44, b"packed");
        meta_raw(&mut b, b"h", 3, Expiry::At(1_900_000_000), 45);
        op(&mut b, b"h", 9, b"\x02\x01\x01f");
        let mut at = 0;
        let mut got = Vec::new();
        while at < b.len() {
            let (r, n) = read_record(&b[at..]).unwrap();
            got.push(format!("{r:?}"));
            at += n;
        }
        assert_eq!(got.len(), 9);
        assert!(got[6].contains("tag: 1") && got[6].contains("AtMillis(1800000000250)") && got[6].contains("cas: 44"));
        assert!(got[7].contains("At(1900000000)") && got[7].contains("cas: 45"), "{}", got[7]);
        assert!(got[8].starts_with("Op"), "{}", got[8]);
        assert!(got[0].contains("cas: 42") && got[0].contains("At(1800000000)"));
        assert!(got[1].contains("cas: 43") && got[1].contains("AtMillis(1800000000250)"), "{}", got[1]);
    }

    #[test]
    fn every_truncation_is_torn_and_every_flip_is_caught() {
        let (mut put, mut put_ms, mut typed, mut meta, mut opr) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        put_raw(&mut put, b"k", b"v1", 0, 0, 1);
        put_raw_ms(&mut put_ms, b"k", b"v2", 0, 5_500, 2);
        put_typed(&mut typed, b"k", 7, 0, Expiry::Never, 3, b"\x03obj");
        meta_raw(&mut meta, b"k", 0, Expiry::AtMillis(5_500), 4);
        op(&mut opr, b"k", 1, b"\x21\x01\x01m");
        for b in [put, put_ms, typed, meta, opr] {
            for cut in 0..b.len() {
                assert_eq!(read_record(&b[..cut]).unwrap_err(), Bad::Torn, "cut at {cut}");
            }
            for i in 0..b.len() {
                for bit in 0..8 {
                    let mut c = b.clone();
                    c[i] ^= 1 << bit;
                    assert!(read_record(&c).is_err(), "flip byte {i} bit {bit} accepted");
                }
            }
        }
    }

    #[test]
    fn a_put_head_and_its_value_are_the_put_record() {
        let store = amalgam_engine::Store::new(Default::default()).unwrap();
        let value: Vec<u8> = (0..5000u32).map(|i| (i * 7 + i / 251) as u8).collect();
        let expiries = [
            (&b"never"[..], Expiry::Never),
            (b"secs", Expiry::At(1_900_000_000)),
            (b"millis", Expiry::at_millis(1_900_000_000_250)),
        ];
        for (k, e) in expiries {
            store.set(k, &value, 5, e).unwrap();
            let same = store.get(k, |it| {
                let mut whole = Vec::new();
                put(&mut whole, &it);
                let mut head = Vec::new();
                put_head(&mut head, &it, crc32c::crc32c(it.value()));
                head.extend_from_slice(it.value());
                head == whole
            });
            assert_eq!(same, Some(true), "{e:?}");
        }
    }

    #[test]
    fn names_parse_back() {
        assert_eq!(parse_name(&log_name(17)), Some((true, 17)));
        assert_eq!(parse_name(&snap_name(u64::MAX)), Some((false, u64::MAX)));
        assert_eq!(parse_name("snap-1.ams"), None);
        assert_eq!(parse_name(&format!("{}.tmp", snap_name(3))), None);
    }
}
