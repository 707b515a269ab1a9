//! libFuzzer target for the log's collection ops (amalgam-types op.rs):
//! `Op::decode` of arbitrary bytes never panics and never allocates far
//! beyond its input; an op it accepts re-encodes to bytes that decode to
//! the same op, and applies (Ok or a refusal, never a panic) to an empty
//! value and to a small one of its kind under tiny thresholds, as
//! recovery applies a damaged log's ops. The proptest counterpart is
//! `crates/amalgam-types/tests/op_model.rs`.
#![no_main]

use amalgam_types::op::Op;
use amalgam_types::value::Value;
use amalgam_types::Thresholds;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(op) = Op::decode(data) else { return };
    assert_eq!(Op::decode(&op.to_bytes()).as_ref(), Ok(&op), "re-encoding changed the op");
    let tiny = Thresholds {
        hash_max_listpack_entries: 2,
        hash_max_listpack_value: 4,
        set_max_intset_entries: 2,
        set_max_listpack_entries: 2,
        set_max_listpack_value: 4,
        zset_max_listpack_entries: 2,
        zset_max_listpack_value: 4,
        list_max_listpack_size: 2,
        hll_sparse_max_bytes: 30,
        stream_node_max_entries: 3,
        stream_node_max_bytes: 64,
    };
    for t in [Thresholds::default(), tiny] {
        let mut empty = Value::new(op.kind(), &t);
        let _ = op.apply(&mut empty, &t);
        let mut small = Value::new(op.kind(), &t);
        let _ = op.apply(&mut small, &t);
        let _ = op.apply(&mut small, &t);
    }
});
