//! Bytes per element of the issue-19 shapes, measured by the allocator,
//! and `mem_bytes()` checked against it. Run in release for speed:
//! `cargo test --release -p amalgam-types --test mem -- --nocapture`.
//!
//! Redis 7.0.15 on the same shapes (issue 19): 104 B per hash field,
//! 72 B per 17-byte set member, 56 B per integer member. Targets here:
//! at most half.
#![allow(unsafe_code)]

use amalgam_types::hash::Hash;
use amalgam_types::set::Set;
use amalgam_types::Thresholds;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;

/// Counts the bytes currently allocated (requested sizes, the figure
/// `mem_bytes` reports; malloc's own rounding is not included).
struct Counting;

static LIVE_BYTES: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged, so `System`'s guarantees carry over; the counter is only
// arithmetic on the sizes the caller passed.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `alloc`'s contract for `layout`.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE_BYTES.fetch_add(layout.size(), Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc` with this `layout` (caller's contract).
        unsafe { System.dealloc(ptr, layout) };
        LIVE_BYTES.fetch_sub(layout.size(), Relaxed);
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            LIVE_BYTES.fetch_add(layout.size(), Relaxed);
        }
        p
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr`/`layout` from a previous allocation, `new_size`
        // valid (caller's contract).
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE_BYTES.fetch_sub(layout.size(), Relaxed);
            LIVE_BYTES.fetch_add(new_size, Relaxed);
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The allocator is process-wide: measurements run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// Elements in each large shape (the issue's 1 M).
const ELEMENTS: usize = 1_000_000;
/// Per-element ceilings (half of Redis 7.0.15's figures, rounded up).
const HASH_FIELD_BYTES_MAX: f64 = 52.0;
const SET_MEMBER_BYTES_MAX: f64 = 36.0;
const SET_INT_BYTES_MAX: f64 = 28.0;
/// `mem_bytes` may differ from the allocator's count by this fraction.
const MEM_BYTES_TOLERANCE: f64 = 0.03;

fn live() -> usize {
    LIVE_BYTES.load(Relaxed)
}

/// Builds a value with `build`, returns (allocator bytes it holds,
/// its mem_bytes()).
fn measure<T>(build: impl FnOnce() -> T, mem_bytes: impl Fn(&T) -> usize) -> (usize, usize, T) {
    let before = live();
    let v = build();
    let held = live() - before;
    let reported = mem_bytes(&v);
    (held, reported, v)
}

fn check(name: &str, held: usize, reported: usize, n: usize, max_per: f64) {
    let per = held as f64 / n as f64;
    let off = (reported as f64 - held as f64).abs() / held as f64;
    println!("{name}: {per:.1} B per element ({held} B for {n}); mem_bytes {reported} ({:.2}% off)", off * 100.0);
    assert!(per <= max_per, "{name}: {per:.1} B per element > {max_per}");
    assert!(off <= MEM_BYTES_TOLERANCE, "{name}: mem_bytes {reported} vs allocator {held}");
}

#[test]
fn issue_19_shapes() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let th = Thresholds::default();

    // 1 M fields "field:%010d" (16 B) with 16-byte values.
    let (held, reported, h) = measure(
        || {
            let mut h = Hash::new();
            let (mut f, mut v) = (Vec::with_capacity(16), Vec::with_capacity(16));
            for i in 0..ELEMENTS {
                f.clear();
                v.clear();
                use std::io::Write;
                write!(f, "field:{i:010}").unwrap();
                write!(v, "value:{:010}", ELEMENTS - i).unwrap();
                assert!(h.insert(&f, &v, &th));
            }
            h
        },
        Hash::mem_bytes,
    );
    assert_eq!((h.len(), h.encoding()), (ELEMENTS, "hashtable"));
    assert_eq!(h.get(b"field:0000000007"), Some(&b"value:0000999993"[..]));
    check("hash 1M x (16 B field, 16 B value)", held, reported, ELEMENTS, HASH_FIELD_BYTES_MAX);
    drop(h);

    // 1 M members "member:%010d" (17 B).
    let (held, reported, s) = measure(
        || {
            let mut s = Set::new();
            let mut m = Vec::with_capacity(17);
            for i in 0..ELEMENTS {
                m.clear();
                use std::io::Write;
                write!(m, "member:{i:010}").unwrap();
                assert!(s.insert(&m, &th));
            }
            s
        },
        Set::mem_bytes,
    );
    assert_eq!((s.len(), s.encoding()), (ELEMENTS, "hashtable"));
    check("set 1M x 17 B member", held, reported, ELEMENTS, SET_MEMBER_BYTES_MAX);
    drop(s);

    // 1 M integers j * 7919.
    let (held, reported, s) = measure(
        || {
            let mut s = Set::new();
            for j in 0..ELEMENTS as i64 {
                assert!(s.insert((j * 7919).to_string().as_bytes(), &th));
            }
            s
        },
        Set::mem_bytes,
    );
    assert_eq!((s.len(), s.encoding()), (ELEMENTS, "hashtable"));
    assert!(s.contains(b"7919000") && !s.contains(b"7918"));
    check("set 1M integers j*7919", held, reported, ELEMENTS, SET_INT_BYTES_MAX);
    drop(s);

    // Compact: 10-field hashes f0..f9 with 16-byte values.
    let h = {
        let mut h = Hash::new();
        for i in 0..10 {
            h.insert(format!("f{i}").as_bytes(), format!("value:{i:010}").as_bytes(), &th);
        }
        h
    };
    assert_eq!(h.encoding(), "listpack");
    let packed = h.packed().unwrap().len();
    println!(
        "hash 10 x (2 B field, 16 B value), compact: {packed} B packed, {:.1} B per field \
         (payload 18 B + 2 B of lengths; header 1 B per hash)",
        packed as f64 / 10.0
    );
    assert_eq!(packed, 1 + 10 * (1 + 2 + 1 + 16));
    println!(
        "inline sizes (not in mem_bytes; the server holds the value somewhere): Hash {} B, Set {} B",
        std::mem::size_of::<Hash>(),
        std::mem::size_of::<Set>()
    );
}

/// The server shares values across threads.
#[test]
fn values_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Hash>();
    check::<Set>();
}

/// Deletes return memory: a hash filled then mostly emptied holds about
/// what its remaining fields need (compaction + index shrink).
#[test]
fn deletes_do_not_leak() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let th = Thresholds::default();
    const N: usize = 200_000;
    let before = live();
    let mut h = Hash::new();
    for i in 0..N {
        h.insert(format!("field:{i:010}").as_bytes(), &[b'v'; 16], &th);
    }
    let full = live() - before;
    for i in 0..N {
        if i % 10 != 0 {
            assert!(h.remove(format!("field:{i:010}").as_bytes()));
        }
    }
    let held = live() - before;
    let per = held as f64 / (N / 10) as f64;
    println!("hash after deleting 90% of {N}: {held} B of {full} B, {per:.1} B per remaining field");
    assert!(held * 4 < full, "{held} of {full}");
    assert!(per < 2.5 * HASH_FIELD_BYTES_MAX);
    let off = (h.mem_bytes() as f64 - held as f64).abs() / held as f64;
    assert!(off <= MEM_BYTES_TOLERANCE, "mem_bytes {} vs {held}", h.mem_bytes());
}
