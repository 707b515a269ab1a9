//! Stable-Rust fuzzing of recovery: proptest feeds [`recover_invariants::check`]
//! programs of well-formed operations with damage (cuts and bit flips in
//! the log and the snapshot) and raw bytes behind a valid or missing log
//! header. The cargo-fuzz target `fuzz/fuzz_targets/recover_files.rs`
//! checks the same invariants with coverage guidance.

mod recover_invariants;

use proptest::prelude::*;

/// A scratch directory per test thread, removed at the end.
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let p = std::env::temp_dir().join(format!("amalgam-recover-fuzz-{name}-{}", std::process::id()));
        Scratch(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One operation of the program (see the invariants module's layout).
fn op() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        6 => (0u8..8, prop::collection::vec(any::<u8>(), 0..24)).prop_map(|(k, v)| {
            let mut b = vec![k << 2, v.len() as u8];
            b.extend_from_slice(&v);
            b
        }),
        4 => (0u8..8, any::<u8>()).prop_map(|(k, m)| vec![k << 2 | 1, m]),
        2 => (0u8..8).prop_map(|k| vec![k << 2 | 2]),
        1 => Just(vec![3u8]),
    ]
}

/// A damage entry: kind and position.
fn damage() -> impl Strategy<Value = Vec<u8>> {
    (0u8..4, any::<u16>()).prop_map(|(k, p)| {
        let p = p.to_le_bytes();
        vec![k, p[0], p[1]]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, .. ProptestConfig::default() })]

    /// Well-formed operations, a snapshot or not, up to three damages.
    #[test]
    fn damaged_files_recover_to_a_prefix(
        snapshot in any::<bool>(),
        cut in any::<u8>(),
        ops in prop::collection::vec(op(), 0..40),
        damages in prop::collection::vec(damage(), 0..4),
    ) {
        let scratch = Scratch::new("prefix");
        let mut data = vec![if snapshot { 2 } else { 0 }, cut];
        for o in &ops {
            // An op byte of 0xFF would end the program early; op() never
            // makes one (key < 8).
            data.extend_from_slice(o);
        }
        data.push(0xFF);
        for d in &damages {
            data.extend_from_slice(d);
        }
        recover_invariants::check(&data, &scratch.0);
    }

    /// Arbitrary bytes as a log segment, after a valid header or not.
    #[test]
    fn raw_log_bytes_never_stop_recovery(header in any::<bool>(), bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        let scratch = Scratch::new("raw");
        let mut data = vec![if header { 3 } else { 1 }];
        data.extend_from_slice(&bytes);
        recover_invariants::check(&data, &scratch.0);
    }
}

/// This process's peak resident set (VmHWM), in bytes.
fn peak_rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).expect("VmHWM");
    let kb: u64 = line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).expect("VmHWM kB");
    kb * 1024
}

/// A length field claiming a record of 1 GiB in a file of a few bytes is
/// a torn tail, found without allocating (and zeroing) what it claims: the
/// peak RSS of this process does not grow by anything like it.
#[test]
fn a_huge_length_field_is_torn_not_allocated() {
    let scratch = Scratch::new("huge");
    let mut data = vec![3u8];
    data.extend_from_slice(&(1u32 << 30).to_le_bytes());
    data.extend_from_slice(&[0; 4]);
    data.push(1);
    let before = peak_rss_bytes();
    recover_invariants::check(&data, &scratch.0);
    let grown = peak_rss_bytes().saturating_sub(before);
    assert!(grown < 256 << 20, "recovery of a 9-byte record grew the peak RSS by {grown} bytes");
}
