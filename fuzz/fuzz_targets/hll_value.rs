//! libFuzzer target for HyperLogLog values (amalgam-types hll.rs): any
//! string a client SETs may reach PFADD, PFCOUNT, PFMERGE and PFDEBUG.
//! The first byte picks `hll-sparse-max-bytes`; the rest is a sparse
//! value's body after a valid header (so the walks run), and also a whole
//! value as it is (so the header checks run). Nothing panics; every whole
//! walk agrees on soundness (count, merge, to dense); a change keeps a
//! HyperLogLog, and a sound one sound (unless its last XZERO is cut
//! short); a merge of a sound value is sound and counts alike. The proptest-style counterpart is
//! `crates/amalgam-types/tests/hll_golden.rs` (damaged values).
#![no_main]

use amalgam_types::hll::{self, Registers, REGISTERS};
use libfuzzer_sys::fuzz_target;

/// Elements PFADD tries: registers spread over the value.
const ELEMENTS: [&[u8]; 6] = [b"", b"a", b"hll", b"\x00\xff", b"0123456789abcdef", b"zz"];

fuzz_target!(|data: &[u8]| {
    let Some((&knob, body)) = data.split_first() else { return };
    let sparse_max = [0usize, 20, 100, 3000, 1 << 20][usize::from(knob) % 5];
    // The bytes as a whole value: the header checks.
    if hll::check(body).is_ok() {
        let _ = hll::count(body);
        let _ = hll::would_change(body, ELEMENTS);
    }
    // The bytes as a sparse value's runs.
    let mut v = hll::new_sparse();
    v.truncate(hll::HEADER_BYTES);
    v.extend_from_slice(body);
    assert!(hll::check(&v).is_ok());
    let counted = hll::count(&v);
    let mut max: Registers = [0; REGISTERS];
    let merged = hll::merge_into(&mut max, &v);
    let mut dense = v.clone();
    let converted = hll::to_dense(&mut dense);
    assert_eq!(counted.is_ok(), merged.is_ok(), "count and merge disagree on soundness");
    assert_eq!(counted.is_ok(), converted.is_ok(), "count and to_dense disagree on soundness");
    let _ = hll::decode(&v);
    if let Ok(n) = counted {
        assert_eq!(hll::count(&dense), Ok(n), "dense counts differently");
        assert_eq!(hll::count_registers(&max), n, "merged registers count differently");
        let m = hll::merged(None, &max, false, sparse_max).expect("a fresh value is sound");
        assert_eq!(hll::count(&m), Ok(n), "a merge counts differently");
    }
    // A sound value whose last XZERO is cut short (its missing byte read
    // as zero: one more zero byte leaves it sound) may lose soundness to a
    // split of that XZERO, as in Redis (hll.rs, "Corruption").
    let cut_short = counted.is_ok() && hll::count(&[&v[..], &[0]].concat()).is_ok();
    let mut w = v.clone();
    for e in ELEMENTS {
        if hll::add(&mut w, e, sparse_max).is_err() {
            break;
        }
        assert!(hll::check(&w).is_ok(), "PFADD left no HyperLogLog");
        if counted.is_ok() && !cut_short {
            assert!(hll::count(&w).is_ok(), "PFADD damaged a sound value");
        }
    }
});
