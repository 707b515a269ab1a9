//! memcached's slab classes and sizes, as its tools see them: the chunk
//! sizes of its default `-f 1.25 -n 48` (`slabs_init`), the class an item
//! falls in, the size memcached would account an item at, and its
//! `uriencode` of keys. Amalgam has no slabs (its items live in the
//! engine's pools or segments); `stats items`, `stats slabs`, `stats
//! sizes`, metadumps and `watch` lines report through these what
//! memcached would (docs/memcached-ops.md).

/// memcached's item header (`sizeof(item)` on 64-bit).
pub const MEMCACHED_ITEM_HEADER_BYTES: usize = 48;
/// memcached's per-item CAS field (absent with `-C`).
pub const MEMCACHED_CAS_BYTES: usize = 8;
/// memcached's stored client flags (only when not 0).
pub const MEMCACHED_FLAGS_BYTES: usize = 4;
/// memcached's slab page (`slab_page_size`).
pub const SLAB_PAGE_BYTES: usize = 1 << 20;
/// memcached's largest chunk (`slab_chunk_max`, half a page).
pub const SLAB_CHUNK_BYTES_MAX: usize = SLAB_PAGE_BYTES / 2;
/// memcached's smallest chunk: the header plus `-n 48`.
const SLAB_CHUNK_BYTES_MIN: usize = MEMCACHED_ITEM_HEADER_BYTES + 48;
/// memcached's chunk alignment.
const SLAB_CHUNK_ALIGN_BYTES: usize = 8;
/// memcached's most slab classes (`MAX_NUMBER_OF_SLAB_CLASSES` less 1).
const SLAB_CLASSES_MAX: usize = 63;

/// The size memcached would account an item at (`ITEM_ntotal`).
pub fn memcached_item_bytes(key_len: usize, value_len: usize, flags: u32, cas_enabled: bool) -> usize {
    MEMCACHED_ITEM_HEADER_BYTES
        + key_len
        + 1
        + value_len
        + 2
        + if cas_enabled { MEMCACHED_CAS_BYTES } else { 0 }
        + if flags != 0 { MEMCACHED_FLAGS_BYTES } else { 0 }
}

/// memcached's chunk sizes for its default `-f 1.25 -n 48` (slabs_init):
/// 96, 120, 152, ... 394840, then 524288.
pub fn slab_chunk_sizes() -> Vec<usize> {
    let mut sizes = Vec::new();
    let mut size = SLAB_CHUNK_BYTES_MIN;
    while sizes.len() < SLAB_CLASSES_MAX - 1 {
        if size % SLAB_CHUNK_ALIGN_BYTES != 0 {
            size += SLAB_CHUNK_ALIGN_BYTES - size % SLAB_CHUNK_ALIGN_BYTES;
        }
        // memcached: stop once the next class would pass the largest
        // chunk over the growth factor (size > max / 1.25).
        if size * 5 > SLAB_CHUNK_BYTES_MAX * 4 {
            break;
        }
        sizes.push(size);
        size = size * 5 / 4;
    }
    sizes.push(SLAB_CHUNK_BYTES_MAX);
    sizes
}

/// The class (1-based) of an item of `bytes`: the first chunk that holds
/// it; larger items are memcached's chunked items, counted in the last.
pub fn class_of(chunks: &[usize], bytes: usize) -> usize {
    chunks.partition_point(|&c| c < bytes).min(chunks.len() - 1) + 1
}

/// memcached's slab class of an item of `bytes` (`watch` lines' `clsid`).
pub fn size_class(bytes: usize) -> u32 {
    u32::try_from(class_of(&slab_chunk_sizes(), bytes)).unwrap_or(u32::MAX)
}

/// memcached's `uriencode`: bytes other than letters, digits and `-_.~`
/// as `%XX`, at most `max` bytes written (whole escapes only).
pub fn uri_encode_within(key: &[u8], max: usize, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let start = out.len();
    for &b in key {
        if out.len() - start + 3 > max {
            break;
        }
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b);
        } else {
            out.extend_from_slice(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
        }
    }
}

/// memcached's `uriencode` of a whole key (a metadump's `key=`).
pub fn uri_encode(key: &[u8], out: &mut Vec<u8>) {
    uri_encode_within(key, usize::MAX, out);
}
