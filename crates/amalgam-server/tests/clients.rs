//! Real clients not written here talk to the server: the `memcache` crate
//! (ascii protocol) and, when installed, libmemcached's `memccapable`
//! conformance run (`-a`: ascii). Both run unchanged against memcached
//! (`AMALGAM_TEST_BIN=/usr/bin/memcached`).

mod common;

use common::*;
use std::collections::HashMap;
use std::process::Command;

fn client(s: &Server) -> memcache::Client {
    let url = format!("memcache://{}?protocol=ascii&timeout=5", s.addr());
    memcache::Client::connect(url.as_str()).unwrap_or_else(|e| panic!("memcache client: {e}"))
}

#[test]
fn memcache_crate_every_command() {
    let s = Server::start(&[]);
    let c = client(&s);
    let a = key("a");
    let b = key("b");
    let n = key("n");

    c.set(&a, "hello", 0).unwrap();
    assert_eq!(c.get::<String>(&a).unwrap().as_deref(), Some("hello"));
    assert_eq!(c.get::<String>(&key("missing")).unwrap(), None);
    // Binary values and flags survive the trip.
    let bytes: Vec<u8> = (0..=255).collect();
    c.set(&b, bytes.as_slice(), 0).unwrap();
    assert_eq!(c.get::<Vec<u8>>(&b).unwrap(), Some(bytes));

    // add / replace.
    // (The crate reports NOT_STORED as success; look at the data instead.)
    let _ = c.add(&a, "x", 0);
    assert_eq!(c.get::<String>(&a).unwrap().as_deref(), Some("hello"), "add over an existing key");
    c.replace(&a, "world", 0).unwrap();
    let missing = key("missing");
    let _ = c.replace(&missing, "x", 0);
    assert_eq!(c.get::<String>(&missing).unwrap(), None, "replace of a missing key");
    c.add(&missing, "added", 0).unwrap();
    assert_eq!(c.get::<String>(&missing).unwrap().as_deref(), Some("added"));
    // append / prepend.
    c.append(&a, "!").unwrap();
    c.prepend(&a, ">").unwrap();
    assert_eq!(c.get::<String>(&a).unwrap().as_deref(), Some(">world!"));

    // gets + cas: the right unique stores, a stale one does not.
    let got: HashMap<String, (Vec<u8>, u32, Option<u64>)> = c.gets(&[a.as_str(), b.as_str()]).unwrap();
    assert_eq!(got.len(), 2);
    let unique = got[&a].2.expect("gets returns a cas unique");
    assert!(c.cas(&a, "swapped", 0, unique).unwrap());
    assert!(!c.cas(&a, "stale", 0, unique).unwrap());
    assert_eq!(c.get::<String>(&a).unwrap().as_deref(), Some("swapped"));

    // incr / decr, with memcached's wrap-around and floor at 0.
    c.set(&n, 10u64, 0).unwrap();
    assert_eq!(c.increment(&n, 5).unwrap(), 15);
    assert_eq!(c.decrement(&n, 20).unwrap(), 0);
    c.set(&n, u64::MAX, 0).unwrap();
    assert_eq!(c.increment(&n, 2).unwrap(), 1);
    assert!(c.increment(&key("missing"), 1).is_err());

    // touch and delete.
    assert!(c.touch(&a, 1000).unwrap());
    assert!(!c.touch(&key("missing"), 1000).unwrap());
    assert!(c.delete(&a).unwrap());
    assert!(!c.delete(&a).unwrap());
    assert_eq!(c.get::<String>(&a).unwrap(), None);

    // Negative-looking exptime is not expressible here; a past absolute
    // time is: the item is gone at once.
    c.set(&a, "gone", 2_592_001).unwrap();
    assert_eq!(c.get::<String>(&a).unwrap(), None);

    // version and stats through the client's own parsers.
    let v = c.version().unwrap();
    assert!(v.iter().all(|(_, v)| v.starts_with("1.")), "{v:?}");
    // The crate's stats parser stops at the first line (its bug); it must
    // still read the reply without error and leave the connection usable.
    c.stats().unwrap();
    assert!(c.touch(&b, 0).unwrap());

    // Keys the client refuses itself (over 250 bytes) never reach the server.
    assert!(c.set(&"k".repeat(251), "x", 0).is_err());
}

#[test]
fn memcache_crate_large_values_and_many_keys() {
    let s = Server::start(&[]);
    let c = client(&s);
    let big = key("big");
    let value = vec![7u8; 900 << 10];
    c.set(&big, value.as_slice(), 0).unwrap();
    assert_eq!(c.get::<Vec<u8>>(&big).unwrap(), Some(value));
    // Larger than -I (1 MiB): the server refuses; the connection goes on.
    assert!(c.set(&big, vec![0u8; 2 << 20].as_slice(), 0).is_err());
    assert_eq!(c.get::<Vec<u8>>(&big).unwrap(), None, "a refused set drops the old value");

    let keys: Vec<String> = (0..100).map(|i| key(&format!("many{i}"))).collect();
    for (i, k) in keys.iter().enumerate() {
        c.set(k, i as u64, 0).unwrap();
    }
    let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
    let got: HashMap<String, u64> = c.gets(&refs).unwrap();
    assert_eq!(got.len(), 100);
    for (i, k) in keys.iter().enumerate() {
        assert_eq!(got[k], i as u64);
    }
}

#[test]
fn memcache_crate_flush() {
    let Some(s) = Server::private() else { return };
    let c = client(&s);
    c.set("f1", "x", 0).unwrap();
    c.flush().unwrap();
    assert_eq!(c.get::<String>("f1").unwrap(), None);
    c.set("f2", "x", 0).unwrap();
    c.flush_with_delay(100).unwrap();
    assert_eq!(c.get::<String>("f2").unwrap().as_deref(), Some("x"), "a delayed flush waits");
}

/// libmemcached's conformance run, ascii protocol: every case must pass.
#[test]
fn memccapable_ascii() {
    let Some(bin) =
        ["/usr/bin/memccapable", "/usr/local/bin/memccapable"].into_iter().find(|p| std::path::Path::new(p).exists())
    else {
        eprintln!("note: skipped: memccapable not installed (apt-get install libmemcached-tools)");
        return;
    };
    let Some(s) = Server::private() else { return };
    let out = Command::new(bin)
        .args(["-a", "-h", "127.0.0.1", "-p", &s.addr().port().to_string()])
        .output()
        .unwrap_or_else(|e| panic!("{bin}: {e}"));
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let passed = text.lines().filter(|l| l.trim_end().ends_with("[pass]")).count();
    let failed: Vec<&str> = text.lines().filter(|l| l.contains("[FAIL]")).collect();
    eprintln!("memccapable -a: {passed} passed, {} failed", failed.len());
    assert!(out.status.success() && failed.is_empty() && passed > 0, "memccapable -a failed:\n{text}");
}
