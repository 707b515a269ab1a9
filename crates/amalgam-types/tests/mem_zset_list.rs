//! Memory per element of the large forms, measured with a counting
//! global allocator, against issue 19's targets (Redis 7.0.15: 24 B per
//! 22-byte list item, 125 B per sorted-set member), and `mem_bytes`
//! checked against what the allocator really handed out.
//!
//! Run in release for speed, with the figures printed:
//! `cargo test --release -p amalgam-types --test mem_zset_list -- --nocapture --test-threads 1`
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use amalgam_types::Thresholds;

/// Bytes currently allocated through [`Counting`].
static LIVE_BYTES: AtomicUsize = AtomicUsize::new(0);

/// Tests measure one at a time (the counter is process-wide).
static MEASURE: Mutex<()> = Mutex::new(());

/// std's System allocator, counting requested bytes.
struct Counting;

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged, so `System`'s guarantees hold; the counter is only a side
// effect.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE_BYTES.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc` is System's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` came from `System` via this allocator with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LIVE_BYTES.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc_zeroed` is System's.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract for `realloc` is System's.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE_BYTES.fetch_add(new_size, Ordering::Relaxed);
            LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Elements each measurement builds.
const ELEMENTS: usize = 1_000_000;

/// Redis 7.0.15's bytes per 22-byte list item (issue 19); ours may not be more.
const LIST_ITEM_BYTES_MAX: f64 = 24.0;

/// Half of Redis 7.0.15's 125 B per sorted-set member (issue 19).
const ZSET_MEMBER_BYTES_MAX: f64 = 62.0;

/// How far `mem_bytes` may be from the allocator's count.
const MEM_BYTES_TOLERANCE: f64 = 0.03;

fn live() -> usize {
    LIVE_BYTES.load(Ordering::Relaxed)
}

fn agree(what: &str, counted: usize, reported: usize) {
    let off = (reported as f64 - counted as f64).abs() / counted as f64;
    println!("{what}: allocator {counted} B, mem_bytes {reported} B ({:.2}% apart)", off * 100.0);
    assert!(off <= MEM_BYTES_TOLERANCE, "{what}: mem_bytes {reported} vs allocator {counted}");
}

#[test]
fn list_of_a_million_22_byte_items() {
    let _g = MEASURE.lock().unwrap();
    let t = Thresholds::default();
    for (name, front) in [("RPUSH", false), ("LPUSH", true)] {
        let before = live();
        let mut l = amalgam_types::list::List::new(&t);
        for i in 0..ELEMENTS {
            let v = format!("item:{i:017}");
            assert_eq!(v.len(), 22);
            if front {
                l.push_front(v.as_bytes());
            } else {
                l.push_back(v.as_bytes());
            }
        }
        let bytes = live() - before + std::mem::size_of_val(&l);
        let per = bytes as f64 / ELEMENTS as f64;
        println!("list ({name}, {} items of 22 B, {}): {per:.2} B per item (Redis 7.0.15: 24)", ELEMENTS, l.encoding());
        agree("list", bytes, l.mem_bytes());
        assert!(per <= LIST_ITEM_BYTES_MAX, "{per} B per list item");
        assert_eq!(l.index(-1).map(<[u8]>::len), Some(22));
    }
}

#[test]
fn zset_of_a_million_members() {
    let _g = MEASURE.lock().unwrap();
    let t = Thresholds::default();
    // Ascending (scores j/2 in member order), then a shuffled order (the
    // tree's leaves fill ~70% instead of 100%).
    let mut order: Vec<u32> = (0..ELEMENTS as u32).collect();
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    // Bounded: one swap per element (Fisher-Yates).
    for i in (1..order.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        order.swap(i, (x % (i as u64 + 1)) as usize);
    }
    for (name, shuffled) in [("ascending", false), ("shuffled", true)] {
        let before = live();
        let mut z = amalgam_types::zset::ZSet::new(&t);
        for (k, &o) in order.iter().enumerate() {
            let j = if shuffled { o as usize } else { k };
            let m = format!("member:{j:010}");
            z.add(m.as_bytes(), j as f64 / 2.0, Default::default()).unwrap();
        }
        let bytes = live() - before + std::mem::size_of_val(&z);
        let per = bytes as f64 / ELEMENTS as f64;
        println!(
            "zset ({name}, {ELEMENTS} members of 17 B, {}): {per:.2} B per member (Redis 7.0.15: 125)",
            z.encoding()
        );
        agree("zset", bytes, z.mem_bytes());
        assert!(per <= ZSET_MEMBER_BYTES_MAX, "{per} B per zset member");
        assert_eq!(z.rank(b"member:0000500000", false), Some(500_000));
        // Remove every other member: compaction keeps the arena within
        // twice the live bytes.
        for j in (0..ELEMENTS).step_by(2) {
            z.remove(format!("member:{j:010}").as_bytes());
        }
        let bytes = live() - before + std::mem::size_of_val(&z);
        println!(
            "zset ({name}) after removing every other member: {:.2} B per remaining member",
            bytes as f64 / (ELEMENTS / 2) as f64
        );
        agree("zset after removals", bytes, z.mem_bytes());
        assert_eq!(z.rank(b"member:0000500001", false), Some(250_000));
    }
}
