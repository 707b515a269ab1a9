//! Concurrent writes to one Redis hash (amalgam-only: it needs a server
//! of its own with two worker threads, so it is skipped against an
//! external one). Several clients HINCRBY / HINCRBYFLOAT the same fields
//! and HSET distinct fields of one hash while others read it whole
//! (HGETALL, HLEN); the hash passes the compact form's 512-field
//! threshold mid-run. Afterwards no increment is lost and every field is
//! present; then the writers delete their fields again, concurrently,
//! from the large form. Readers check what any moment must show: fields
//! only ever added (phase 1), each with its own value, counters that
//! never go back.
mod common;
use common::resp::*;
use common::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};

/// Clients writing at once.
const WRITERS: usize = 4;
/// Clients reading at once.
const READERS: usize = 2;
/// Distinct fields each writer sets: WRITERS × this passes the
/// compact form's 512 fields.
const FIELDS_PER_WRITER: usize = 200;
/// HINCRBY calls per writer on the shared counter.
const INCRS_PER_WRITER: usize = 600;
/// Worker threads of the server (so clients really run in parallel).
const SERVER_THREADS: &str = "2";

/// A flat array of bulk strings, parsed.
fn strings(reply: &str) -> Vec<String> {
    let mut lines = reply.split("\r\n");
    let head = lines.next().unwrap_or("");
    let n: usize =
        head.strip_prefix('*').and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("not an array: {reply:?}"));
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let len = lines.next().unwrap_or_else(|| panic!("short array: {reply:?}"));
        assert!(len.starts_with('$'), "not a bulk string: {len:?} in {reply:?}");
        out.push(lines.next().unwrap_or_else(|| panic!("short array: {reply:?}")).to_string());
    }
    out
}

/// A reader's checks of one HGETALL taken while writers run: every
/// field has its own value, counters parse. Returns (fields, counter).
fn check_snapshot(pairs: &[String]) -> (usize, i64) {
    assert_eq!(pairs.len() % 2, 0);
    let mut counter = 0;
    for p in pairs.chunks(2) {
        match p[0].as_str() {
            "counter" => counter = p[1].parse().unwrap_or_else(|_| panic!("counter {:?}", p[1])),
            "half" => {
                let h: f64 = p[1].parse().unwrap_or_else(|_| panic!("half {:?}", p[1]));
                assert!(h >= 0.0 && (h * 2.0).fract() == 0.0, "half {h}");
            }
            f => {
                assert!(f.starts_with('w'), "unexpected field {f}");
                assert_eq!(p[1], f.replacen('w', "v", 1), "value of {f}");
            }
        }
    }
    (pairs.len() / 2, counter)
}

#[test]
fn concurrent_increments_and_sets_across_the_conversion() {
    let Some(server) = resp_private(&["-t", SERVER_THREADS]) else { return };
    let server = Arc::new(server);
    let h = key("stress");
    let start = Arc::new(Barrier::new(WRITERS + READERS));
    let writing = Arc::new(AtomicBool::new(true));

    let readers: Vec<_> = (0..READERS)
        .map(|_| {
            let (server, h, start, writing) = (server.clone(), h.clone(), start.clone(), writing.clone());
            std::thread::spawn(move || {
                let mut c = Resp::new(&server);
                start.wait();
                let (mut last_fields, mut last_counter, mut last_len, mut reads) = (0usize, 0i64, 0i64, 0usize);
                // Bounded: the writers finish.
                while writing.load(Ordering::Acquire) {
                    let (fields, counter) = check_snapshot(&strings(&c.call(&["HGETALL", &h])));
                    assert!(fields >= last_fields, "fields went from {last_fields} to {fields}");
                    assert!(counter >= last_counter, "counter went from {last_counter} to {counter}");
                    let len = as_int(&c.call(&["HLEN", &h]));
                    assert!(
                        len >= fields as i64 && len >= last_len,
                        "HLEN {len} after {fields} fields / HLEN {last_len}"
                    );
                    (last_fields, last_counter, last_len) = (fields, counter, len);
                    reads += 1;
                }
                reads
            })
        })
        .collect();

    let writers: Vec<_> = (0..WRITERS)
        .map(|t| {
            let (server, h, start) = (server.clone(), h.clone(), start.clone());
            std::thread::spawn(move || {
                let mut c = Resp::new(&server);
                start.wait();
                let mut last = 0;
                for i in 0..INCRS_PER_WRITER {
                    let n = as_int(&c.call(&["HINCRBY", &h, "counter", "1"]));
                    assert!(n > last, "HINCRBY answered {n} after {last}");
                    last = n;
                    if i % 3 == 0 {
                        let r = c.call(&["HINCRBYFLOAT", &h, "half", "0.5"]);
                        assert!(r.starts_with('$'), "{r:?}");
                    }
                    // Spread the HSETs over the increments.
                    if i * FIELDS_PER_WRITER % INCRS_PER_WRITER < FIELDS_PER_WRITER {
                        let j = i * FIELDS_PER_WRITER / INCRS_PER_WRITER;
                        assert_eq!(c.call(&["HSET", &h, &format!("w{t}_{j}"), &format!("v{t}_{j}")]), int(1));
                    }
                }
            })
        })
        .collect();
    for w in writers {
        w.join().expect("writer");
    }
    writing.store(false, Ordering::Release);
    for r in readers {
        let reads = r.join().expect("reader");
        assert!(reads > 0);
    }

    let mut c = Resp::new(&server);
    let total = WRITERS * INCRS_PER_WRITER;
    let halves = WRITERS * INCRS_PER_WRITER.div_ceil(3);
    assert_eq!(c.call(&["HGET", &h, "counter"]), bulk(&total.to_string()));
    assert_eq!(c.call(&["HGET", &h, "half"]), bulk(&format!("{}", halves as f64 / 2.0)));
    let fields = WRITERS * FIELDS_PER_WRITER;
    assert!(fields > 512, "the test must cross the compact threshold");
    assert_eq!(c.call(&["HLEN", &h]), int(fields as i64 + 2));
    let all = strings(&c.call(&["HGETALL", &h]));
    let (n, _) = check_snapshot(&all);
    assert_eq!(n, fields + 2);
    for t in 0..WRITERS {
        for j in 0..FIELDS_PER_WRITER {
            assert_eq!(c.call(&["HGET", &h, &format!("w{t}_{j}")]), bulk(&format!("v{t}_{j}")));
        }
    }

    // Phase 2: every writer deletes its fields while incrementing again;
    // readers still see consistent values (fields now only go away).
    let start = Arc::new(Barrier::new(WRITERS + 1));
    let writing = Arc::new(AtomicBool::new(true));
    let reader = {
        let (server, h, start, writing) = (server.clone(), h.clone(), start.clone(), writing.clone());
        std::thread::spawn(move || {
            let mut c = Resp::new(&server);
            start.wait();
            let (mut last_fields, mut last_counter) = (usize::MAX, 0i64);
            // Bounded: the writers finish.
            while writing.load(Ordering::Acquire) {
                let (fields, counter) = check_snapshot(&strings(&c.call(&["HGETALL", &h])));
                assert!(fields <= last_fields, "fields went from {last_fields} to {fields}");
                assert!(counter >= last_counter, "counter went from {last_counter} to {counter}");
                (last_fields, last_counter) = (fields, counter);
            }
        })
    };
    let writers: Vec<_> = (0..WRITERS)
        .map(|t| {
            let (server, h, start) = (server.clone(), h.clone(), start.clone());
            std::thread::spawn(move || {
                let mut c = Resp::new(&server);
                start.wait();
                for j in 0..FIELDS_PER_WRITER {
                    assert_eq!(c.call(&["HDEL", &h, &format!("w{t}_{j}"), "nope"]), int(1));
                    as_int(&c.call(&["HINCRBY", &h, "counter", "1"]));
                }
            })
        })
        .collect();
    for w in writers {
        w.join().expect("writer");
    }
    writing.store(false, Ordering::Release);
    reader.join().expect("reader");
    let total = total + WRITERS * FIELDS_PER_WRITER;
    assert_eq!(c.call(&["HLEN", &h]), int(2));
    assert_eq!(c.call(&["HGET", &h, "counter"]), bulk(&total.to_string()));
    assert_eq!(c.call(&["HDEL", &h, "counter", "half"]), int(2));
    assert_eq!(c.call(&["EXISTS", &h]), int(0), "an emptied hash is deleted");
}
