//! Keys to hash slots, as Redis Cluster maps them (the cluster
//! specification, "Keys distribution model"; Redis's `keyHashSlot` and
//! `crc16.c`): `CRC16(key) mod 16384`, where CRC16 is the XMODEM variant
//! (polynomial 0x1021, initial value 0, no reflection, no final xor),
//! and a key holding a hash tag `{…}` — a `{`, then a `}` later with at
//! least one byte between — hashes only the bytes between the first `{`
//! and the first `}` after it, so `{user1000}.following` and
//! `{user1000}.followers` share a slot.

/// Redis Cluster's hash slots.
pub const SLOTS: usize = 16384;

/// The XMODEM CRC16 table, computed at compile time (256 entries; the
/// same table Redis's `crc16.c` spells out).
const CRC16_TABLE: [u16; 256] = {
    let mut t = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = (i as u16) << 8;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 };
            bit += 1;
        }
        t[i] = crc;
        i += 1;
    }
    t
};

/// CRC16/XMODEM of `bytes`.
#[inline]
pub fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in bytes {
        crc = (crc << 8) ^ CRC16_TABLE[(((crc >> 8) as u8) ^ b) as usize];
    }
    crc
}

/// The part of `key` that decides its slot: the hash tag's contents if
/// the key has a non-empty one, else the whole key.
#[inline]
pub fn hashed_part(key: &[u8]) -> &[u8] {
    if let Some(open) = key.iter().position(|&b| b == b'{') {
        if let Some(len) = key[open + 1..].iter().position(|&b| b == b'}') {
            if len > 0 {
                return &key[open + 1..open + 1 + len];
            }
        }
    }
    key
}

/// The hash slot of `key` (Redis's `keyHashSlot`).
#[inline]
pub fn slot_of(key: &[u8]) -> u16 {
    crc16(hashed_part(key)) & (SLOTS as u16 - 1)
}

/// A set of slots: one bit each, 2 KiB, the form the bus carries
/// (`myslots`, UPDATE's bitmap: bit `s % 8` of byte `s / 8`, as Redis's
/// `bitmapTestBit`).
#[derive(Clone, PartialEq, Eq)]
pub struct SlotSet(pub Box<[u8; SLOTS / 8]>);

impl Default for SlotSet {
    fn default() -> Self {
        SlotSet(Box::new([0; SLOTS / 8]))
    }
}

impl std::fmt::Debug for SlotSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SlotSet({})", ranges_text(&self.ranges()))
    }
}

impl SlotSet {
    /// Whether slot `s` is in the set.
    #[inline]
    pub fn has(&self, s: usize) -> bool {
        self.0[s / 8] & (1 << (s % 8)) != 0
    }

    pub fn set(&mut self, s: usize, on: bool) {
        if on {
            self.0[s / 8] |= 1 << (s % 8);
        } else {
            self.0[s / 8] &= !(1 << (s % 8));
        }
    }

    /// How many slots the set holds.
    pub fn count(&self) -> usize {
        self.0.iter().map(|b| b.count_ones() as usize).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&b| b == 0)
    }

    /// The set as inclusive ranges, in order.
    pub fn ranges(&self) -> Vec<(u16, u16)> {
        let mut out = Vec::new();
        let mut start: Option<usize> = None;
        for s in 0..SLOTS {
            match (self.has(s), start) {
                (true, None) => start = Some(s),
                (false, Some(b)) => {
                    out.push((b as u16, s as u16 - 1));
                    start = None;
                }
                _ => {}
            }
        }
        if let Some(b) = start {
            out.push((b as u16, SLOTS as u16 - 1));
        }
        out
    }
}

/// Ranges as CLUSTER NODES writes them: `0-5460 5461 …`.
pub fn ranges_text(ranges: &[(u16, u16)]) -> String {
    let mut s = String::new();
    for &(a, b) in ranges {
        if !s.is_empty() {
            s.push(' ');
        }
        if a == b {
            s.push_str(&a.to_string());
        } else {
            s.push_str(&format!("{a}-{b}"));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc16_is_xmodem() {
        // The check value of CRC-16/XMODEM, and the one Redis's crc16.c
        // tests itself with.
        assert_eq!(crc16(b"123456789"), 0x31c3);
    }

    #[test]
    fn slots_are_redis_s() {
        // As `CLUSTER KEYSLOT` answers on redis-server 7.0.
        assert_eq!(slot_of(b"foo"), 12182);
        assert_eq!(slot_of(b"bar"), 5061);
        assert_eq!(slot_of(b"somekey"), 11058);
        assert_eq!(slot_of(b"{user1000}.following"), slot_of(b"user1000"));
        assert_eq!(slot_of(b"{user1000}.followers"), slot_of(b"user1000"));
        // An empty tag hashes the whole key; only the first tag counts.
        assert_eq!(slot_of(b"foo{}{bar}"), crc16(b"foo{}{bar}") & 16383);
        assert_eq!(slot_of(b"foo{{bar}}zap"), slot_of(b"{bar"));
        assert_eq!(slot_of(b"foo{bar}{zap}"), slot_of(b"bar"));
        assert_eq!(slot_of(b""), 0);
    }

    #[test]
    fn sets_give_their_ranges() {
        let mut s = SlotSet::default();
        for i in (0..=5460).chain([7000, 16383]) {
            s.set(i, true);
        }
        assert_eq!(s.count(), 5463);
        assert_eq!(ranges_text(&s.ranges()), "0-5460 7000 16383");
        s.set(7000, false);
        assert_eq!(s.ranges(), vec![(0, 5460), (16383, 16383)]);
    }
}
