//! memcached's meta protocol (mn mg ms md ma me), black box. Every
//! expectation here is memcached 1.6.18's answer: run with
//! `AMALGAM_TEST_BIN=/usr/bin/memcached` to check them against it.
//! CAS uniques and TTLs are read back rather than assumed.

mod common;

use common::{key, show, Server};
use std::net::TcpStream;
use std::sync::OnceLock;

fn server() -> &'static Server {
    static S: OnceLock<Server> = OnceLock::new();
    S.get_or_init(|| Server::start(&[]))
}

/// Sends `req` followed by `mn`, reads through `MN`, and asserts that what
/// came before it is exactly `want` (so quiet answers are checked too).
#[track_caller]
fn x(c: &mut TcpStream, req: &str, want: &str) {
    let got = meta(c, req);
    assert_eq!(show(got.as_bytes()), show(want.as_bytes()), "request {}", show(req.as_bytes()));
}

/// Sends `req` plus `mn` and returns the answer before `MN`.
fn meta(c: &mut TcpStream, req: &str) -> String {
    let mut r = req.as_bytes().to_vec();
    r.extend_from_slice(b"mn\r\n");
    // Every `mn` line sent is answered by one `MN`; a reply may arrive in
    // several reads, so read until all of them are in.
    let want_mn = r.split(|&b| b == b'\n').filter(|l| *l == b"mn\r" || l.starts_with(b"mn ")).count();
    let mut got = common::request(c, &r, b"MN\r\n");
    for _ in 1..want_mn {
        if got.windows(4).filter(|w| *w == b"MN\r\n").count() >= want_mn {
            break;
        }
        got.extend_from_slice(&common::read_until(c, b"MN\r\n"));
    }
    let s = String::from_utf8_lossy(&got).into_owned();
    assert!(s.ends_with("MN\r\n"), "no MN after {}: {}", show(req.as_bytes()), show(&got));
    s[..s.len() - 4].to_string()
}

/// The number after ` <flag>` in a return line.
fn field(line: &str, flag: char) -> i64 {
    let head = line.lines().next().unwrap_or("");
    let tok = head.split(' ').skip(1).find(|t| t.starts_with(flag)).unwrap_or_else(|| panic!("no {flag} in {head}"));
    tok[1..].parse().unwrap_or_else(|_| panic!("{flag} in {head}"))
}

#[test]
fn mn_and_parse_errors() {
    let mut c = server().connect();
    x(&mut c, "mn\r\nmn junk\r\n", "MN\r\nMN\r\n");
    x(&mut c, "mg\r\n", "ERROR\r\n");
    x(&mut c, "mz k\r\n", "ERROR\r\n");
    x(&mut c, "mg foo E5 v\r\n", "CLIENT_ERROR invalid flag\r\n");
    x(&mut c, "mg foo ~\r\n", "CLIENT_ERROR invalid flag\r\n");
    x(&mut c, "mg foo v v\r\n", "CLIENT_ERROR duplicate flag\r\n");
    x(&mut c, "mg foo Tx\r\n", "CLIENT_ERROR bad token in command line format\r\n");
    x(&mut c, &format!("mg foo O{}\r\n", "1".repeat(32)), "CLIENT_ERROR opaque token too long\r\n");
    x(&mut c, &format!("mg {}\r\n", "k".repeat(251)), "CLIENT_ERROR bad command line format\r\n");
    x(&mut c, "mg a b c d e f g h i j k l m n o p q r\r\n", "CLIENT_ERROR invalid flag\r\n");
    x(&mut c, "mg a b c d e f g h i j k l m n o p q r s\r\n", "CLIENT_ERROR options flags are too long\r\n");
    x(&mut c, "md a b c d e f g h i j k l m n o p q r s\r\n", "CLIENT_ERROR options flags too long\r\n");
    x(&mut c, "md foo x\r\n", "CLIENT_ERROR invalid or duplicate flag\r\n");
    x(&mut c, "ma c1 Jx\r\nma c1 Dx N0\r\nma c1 Mx\r\n",
        "CLIENT_ERROR invalid or duplicate flag\r\nCLIENT_ERROR invalid or duplicate flag\r\nCLIENT_ERROR invalid mode for ma M token\r\n");
    // ms: errors after the length swallow the data block; before, not.
    x(&mut c, "ms foo 2 F\r\nhi\r\n", "CLIENT_ERROR bad command line format\r\n");
    x(&mut c, "ms foo 2 MX\r\nhi\r\n", "CLIENT_ERROR invalid mode for ms M token\r\n");
    x(&mut c, "ms sx 2 Tx\r\nhi\r\nms sx 2 M\r\nhi\r\nms sx -1\r\n",
        "CLIENT_ERROR bad token in command line format\r\nCLIENT_ERROR incorrect length for M token\r\nCLIENT_ERROR bad command line format\r\n");
    x(&mut c, "ms foo\r\n", "CLIENT_ERROR bad command line format\r\n");
    x(&mut c, "ms foo S2\r\nhi\r\n", "CLIENT_ERROR bad command line format\r\nERROR\r\n");
    x(&mut c, "ms kk 2\r\nhiX\r\n", "CLIENT_ERROR bad data chunk\r\nERROR\r\n");
    x(&mut c, "mg @@@ b\r\nmg Zm9v= b\r\n", "CLIENT_ERROR error decoding key\r\nCLIENT_ERROR error decoding key\r\n");
    // Errors are answered even in quiet mode.
    x(&mut c, "mg foo q Tx\r\n", "CLIENT_ERROR bad token in command line format\r\n");
}

#[test]
fn get_flags_in_request_order_and_quiet_misses() {
    let mut c = server().connect();
    let k = key("mg");
    let miss = key("miss");
    x(&mut c, &format!("mg {miss}\r\nmg {miss} v O7 k\r\nmg {miss} q v\r\n"), &format!("EN\r\nEN O7 k{miss}\r\n"));
    x(&mut c, &format!("ms {k} 2 F7 k O123\r\nhi\r\n"), &format!("HD k{k} O123\r\n"));
    x(&mut c, &format!("mg {k} q v k s f t O9 h l\r\n"), &format!("VA 2 k{k} s2 f7 t-1 O9 h0 l0\r\nhi\r\n"));
    x(&mut c, &format!("mg {k}\r\nmg {k} q\r\nmg {k} u f\r\n"), "HD\r\nHD\r\nHD f7\r\n");
    let cas = field(&meta(&mut c, &format!("mg {k} c\r\n")), 'c');
    assert!(cas > 0);
    // T sets the TTL; a `t` before it in the same request reports the old one.
    let out = meta(&mut c, &format!("mg {k} t T200\r\n"));
    assert_eq!(field(&out, 't'), -1, "{out}");
    let t = field(&meta(&mut c, &format!("mg {k} t\r\n")), 't');
    assert!((198..=200).contains(&t), "{t}");
    // touching keeps the CAS
    assert_eq!(field(&meta(&mut c, &format!("mg {k} c\r\n")), 'c'), cas);
    // quiet misses pipeline: only hits come back before MN
    x(&mut c, &format!("mg {miss} q v\r\nmg {k} q v\r\nmg {miss} q k\r\n"), "VA 2\r\nhi\r\n");
}

#[test]
fn set_modes_and_flags() {
    let mut c = server().connect();
    let k = key("ms");
    x(
        &mut c,
        &format!(
            "ms {k} 2 MA\r\nhi\r\nms {k} 2 MP\r\nhi\r\nms {k} 2 MR\r\nhi\r\nms {k} 2 ME\r\nhi\r\nms {k} 2 ME\r\nhi\r\n\
             ms {k} 2 MA\r\nzz\r\nmg {k} v\r\nms {k} 1 MP\r\n<\r\nmg {k} v\r\nms {k} 1 MS\r\n!\r\nmg {k} v\r\n"
        ),
        "NS\r\nNS\r\nNS\r\nHD\r\nNS\r\nHD\r\nVA 4\r\nhizz\r\nHD\r\nVA 5\r\n<hizz\r\nHD\r\nVA 1\r\n!\r\n",
    );
    // c returns the new CAS; a failed store answers c0.
    let out = meta(&mut c, &format!("ms {k} 2 c k O1\r\nab\r\n"));
    let cas = field(&out, 'c');
    assert_eq!(out, format!("HD c{cas} k{k} O1\r\n"));
    assert_eq!(field(&meta(&mut c, &format!("mg {k} c\r\n")), 'c'), cas);
    x(&mut c, &format!("ms {k} 2 ME c\r\nhi\r\n"), "NS c0\r\n");
    // C: compare and swap; mismatch EX, missing NF.
    x(&mut c, &format!("ms {k} 2 C{}\r\nno\r\n", cas + 1000), "EX\r\n");
    x(&mut c, &format!("ms {k} 2 C{cas} q\r\nok\r\nmg {k} v\r\n"), "VA 2\r\nok\r\n");
    x(&mut c, &format!("ms {} 2 C1\r\nno\r\n", key("absent")), "NF\r\n");
    // F and T
    x(&mut c, &format!("ms {k} 3 F42 T0\r\nabc\r\nmg {k} f t v\r\n"), "HD\r\nVA 3 f42 t-1\r\nabc\r\n");
    x(&mut c, &format!("ms {k} 1 T100\r\nx\r\n"), "HD\r\n");
    let t = field(&meta(&mut c, &format!("mg {k} t\r\n")), 't');
    assert!((98..=100).contains(&t), "{t}");
    // quiet: HD suppressed, NS not
    x(&mut c, &format!("ms {k} 2 q\r\nqq\r\nms {k} 2 q ME\r\nno\r\nmg {k} v\r\n"), "NS\r\nVA 2\r\nqq\r\n");
    // a value over the item size limit: refused, swallowed, key unlinked
    let big = "x".repeat(1024 * 1024 + 1);
    x(
        &mut c,
        &format!("ms {k} {}\r\n{big}\r\nmg {k}\r\n", big.len()),
        "SERVER_ERROR object too large for cache\r\nEN\r\n",
    );
}

#[test]
fn delete_and_invalidate() {
    let mut c = server().connect();
    let k = key("md");
    x(&mut c, &format!("md {k} q\r\nmd {k} O1 k\r\n"), &format!("NF\r\nNF O1 k{k}\r\n"));
    x(&mut c, &format!("ms {k} 1\r\nx\r\nmd {k} O2 k\r\nmg {k}\r\n"), &format!("HD\r\nHD O2 k{k}\r\nEN\r\n"));
    let cas = field(&meta(&mut c, &format!("ms {k} 1 c\r\nx\r\n")), 'c');
    x(&mut c, &format!("md {k} C{}\r\nmd {k} q C{cas}\r\nmg {k}\r\n", cas + 1), "EX\r\nEN\r\n");
    // stale-while-revalidate: I marks stale (new CAS, new TTL); the first
    // reader wins the token (W), later ones see Z; a stale set with an
    // older CAS stays stale.
    let out = meta(&mut c, &format!("ms {k} 3 T100 c\r\nold\r\n"));
    let cas = field(&out, 'c');
    x(&mut c, &format!("md {k} I T30\r\n"), "HD\r\n");
    let out = meta(&mut c, &format!("mg {k} v t c\r\n"));
    assert!(out.ends_with(" X W\r\nold\r\n"), "{out}");
    assert!((28..=30).contains(&field(&out, 't')), "{out}");
    assert_ne!(field(&out, 'c'), cas);
    x(&mut c, &format!("mg {k} v\r\nmg {k}\r\n"), "VA 3 Z X\r\nold\r\nHD Z X\r\n");
    x(&mut c, &format!("ms {k} 3 C{cas} I\r\nnew\r\nmg {k} v\r\n"), "HD\r\nVA 3 Z X\r\nnew\r\n");
    // a fresh set clears the marks
    x(&mut c, &format!("ms {k} 3\r\nabc\r\nmg {k} v\r\n"), "HD\r\nVA 3\r\nabc\r\n");
}

#[test]
fn vivify_and_recache_tokens() {
    let mut c = server().connect();
    let k = key("viv");
    let out = meta(&mut c, &format!("mg {k} N30 v t\r\n"));
    assert!(out.starts_with("VA 0 t") && out.ends_with(" W\r\n\r\n"), "{out}");
    let out = meta(&mut c, &format!("mg {k} N30 v\r\nmg {k} v\r\n"));
    assert_eq!(out, "VA 0 Z\r\n\r\nVA 0 Z\r\n\r\n");
    // the winner fills it; the marks go away
    x(&mut c, &format!("ms {k} 1\r\nv\r\nmg {k} N30 v\r\n"), "HD\r\nVA 1\r\nv\r\n");
    // R: win once the TTL remaining drops below the threshold
    let r = key("rc");
    x(
        &mut c,
        &format!("ms {r} 1 T10\r\nx\r\nmg {r} R30 v\r\nmg {r} R30 v\r\nmg {r} R5\r\n"),
        "HD\r\nVA 1 W\r\nx\r\nVA 1 Z\r\nx\r\nHD Z\r\n",
    );
    let r2 = key("rc2");
    x(&mut c, &format!("ms {r2} 1 T100\r\nx\r\nmg {r2} R30 v\r\nmg {r2} R0\r\n"), "HD\r\nVA 1\r\nx\r\nHD\r\n");
}

#[test]
fn arithmetic() {
    let mut c = server().connect();
    let k = key("ma");
    x(&mut c, &format!("ma {k} q\r\nma {k} O1 k\r\n"), &format!("NF\r\nNF O1 k{k}\r\n"));
    x(
        &mut c,
        &format!("ma {k} N0 J5 q v\r\nma {k} q v t\r\nma {k} v MD D2 k O5\r\n"),
        &format!("VA 1\r\n5\r\nVA 1 k{k} O5\r\n4\r\n"),
    );
    x(
        &mut c,
        &format!("ma {k} v D18446744073709551615\r\nma {k} v M- D9\r\nma {k}\r\nma {k} v M+\r\n"),
        "VA 1\r\n3\r\nVA 1\r\n0\r\nHD\r\nVA 1\r\n2\r\n",
    );
    let cas = field(&meta(&mut c, &format!("ma {k} c\r\n")), 'c');
    assert_eq!(field(&meta(&mut c, &format!("mg {k} c\r\n")), 'c'), cas);
    x(&mut c, &format!("ma {k} C{} k\r\nma {k} C{cas} v\r\n", cas + 5), &format!("EX k{k}\r\nVA 1\r\n4\r\n"));
    // T after t: the t reports the TTL before the change
    let out = meta(&mut c, &format!("ma {k} t T100\r\n"));
    assert_eq!(out, "HD t-1\r\n");
    let t = field(&meta(&mut c, &format!("mg {k} t v\r\n")), 't');
    assert!((98..=100).contains(&t), "{t}");
    // wrap on incr, and the padding a shrinking decr leaves
    let w = key("wrap");
    x(
        &mut c,
        &format!("ms {w} 20\r\n18446744073709551615\r\nma {w} v D2\r\nmg {w} v\r\n"),
        "HD\r\nVA 1\r\n1\r\nVA 20\r\n1                   \r\n",
    );
    let n = key("nn");
    x(&mut c, &format!("ms {n} 3\r\nabc\r\nma {n}\r\nma {n} q\r\n"),
        "HD\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
}

#[test]
fn base64_keys() {
    let mut c = server().connect();
    // "binary\x00key" style: any bytes, sent as base64.
    let raw = key("b64");
    let enc = b64(&raw);
    x(&mut c, &format!("ms {enc} 1 b k\r\nx\r\n"), &format!("HD k{enc} b\r\n"));
    x(&mut c, &format!("mg {enc} b k v s\r\n"), &format!("VA 1 k{enc} b s1\r\nx\r\n"));
    x(&mut c, &format!("mg {raw} v\r\n"), "VA 1\r\nx\r\n");
    x(
        &mut c,
        &format!("ma {enc} b k\r\nmd {enc} b k q\r\nmd {enc} b k\r\n"),
        &format!("CLIENT_ERROR cannot increment or decrement non-numeric value\r\nNF k{enc} b\r\n"),
    );
}

fn b64(raw: &str) -> String {
    let mut enc = Vec::new();
    amalgam_protocol::meta::base64_encode(raw.as_bytes(), &mut enc);
    String::from_utf8(enc).unwrap()
}

/// A key named in base64 and the same key sent plain are one item, both
/// ways round, for every command. (The key an `mg` hit echoes for `k` is
/// where memcached differs: it encodes by how the item was stored; see
/// the server's `meta` module doc. Misses, `ms`, `md` and `ma` echo by
/// the request in both, which is what is checked here.)
#[test]
fn base64_and_plain_name_the_same_item() {
    let mut c = server().connect();
    let raw = key("b64x");
    let enc = b64(&raw);
    // stored plain, read and changed through base64
    x(&mut c, &format!("ms {raw} 2 F3\r\n10\r\nmg {enc} b v f s\r\n"), "HD\r\nVA 2 f3 s2\r\n10\r\n");
    x(&mut c, &format!("ma {enc} b v k O1\r\nmg {raw} v\r\n"), &format!("VA 2 k{enc} b O1\r\n11\r\nVA 2\r\n11\r\n"));
    x(&mut c, &format!("ms {enc} 1 b MA k\r\n!\r\nmg {raw} v\r\n"), &format!("HD k{enc} b\r\nVA 3\r\n11!\r\n"));
    x(
        &mut c,
        &format!("md {enc} b q\r\nmg {raw} k\r\nmg {enc} b k O2\r\n"),
        &format!("EN k{raw}\r\nEN k{enc} b O2\r\n"),
    );
    // stored through base64, read and changed plain
    x(&mut c, &format!("ms {enc} 1 b T100\r\n5\r\nma {raw} v k\r\n"), &format!("HD\r\nVA 1 k{raw}\r\n6\r\n"));
    let t = field(&meta(&mut c, &format!("mg {raw} t\r\n")), 't');
    assert!((98..=100).contains(&t), "{t}");
    x(&mut c, &format!("md {raw} k\r\nmg {enc} b v\r\nmd {raw} k\r\n"), &format!("HD k{raw}\r\nEN\r\nNF k{raw}\r\n"));
}

/// An `ms` with a base64 key and a value over the item size limit unlinks
/// the decoded key, whatever the mode, as memcached does for any refused
/// `ms` (and a text `set`): no stale value outlives a failed update.
#[test]
fn base64_set_too_large_unlinks_the_key() {
    let mut c = server().connect();
    let big = "x".repeat(1024 * 1024 + 1);
    for mode in ["", " MA", " ME"] {
        let raw = key("b64big");
        let enc = b64(&raw);
        x(
            &mut c,
            &format!("ms {raw} 3\r\nold\r\nms {enc} {} b{mode}\r\n{big}\r\nmg {raw} v\r\nmg {enc} b v\r\n", big.len()),
            "HD\r\nSERVER_ERROR object too large for cache\r\nEN\r\nEN\r\n",
        );
    }
}

/// `me <key>`: the fields of memcached's debug line, in its order.
fn me_fields(c: &mut TcpStream, req: &str) -> Vec<(String, String)> {
    let out = meta(c, req);
    let line = out.lines().last().unwrap_or("").to_string();
    let mut words = line.split(' ');
    assert_eq!(words.next(), Some("ME"), "{out}");
    words.next().expect("key");
    let fields: Vec<(String, String)> = words
        .map(|w| {
            let (name, value) = w.split_once('=').unwrap_or_else(|| panic!("{w} in {line}"));
            (name.to_string(), value.to_string())
        })
        .collect();
    let names: Vec<&str> = fields.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["exp", "la", "cas", "fetch", "cls", "size"], "{line}");
    fields
}

fn me_num(fields: &[(String, String)], name: &str) -> i64 {
    let v = &fields.iter().find(|(n, _)| n == name).unwrap().1;
    v.parse().unwrap_or_else(|_| panic!("{name}={v}"))
}

#[test]
fn debug_command() {
    let mut c = server().connect();
    let k = key("me");
    // memcached's base64 skips bytes outside the alphabet, so whether a
    // plain key decodes depends on it ("ab_c" has 3 base64 digits: no;
    // "ab_cd" has 4: yes); fixed keys, not key(), keep this deterministic.
    x(
        &mut c,
        &format!("me {k}\r\nme\r\nme ab_c b\r\nme ab_cd b\r\n"),
        "EN\r\nCLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\nEN\r\n",
    );
    x(
        &mut c,
        "me @@@@ b\r\nme Zm9v= b\r\n",
        "CLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\n",
    );
    let out = meta(&mut c, &format!("ms {k} 1\r\nx\r\nme {k}\r\n"));
    assert!(out.starts_with(&format!("HD\r\nME {k} exp=-1 la=")), "{out}");
    // exp and cas are the item's: exp is now minus the expiry (negative
    // while the item lives), -1 for never.
    let cas = field(&meta(&mut c, &format!("ms {k} 1 c T100\r\nx\r\n")), 'c');
    let f = me_fields(&mut c, &format!("me {k}\r\n"));
    assert_eq!(me_num(&f, "cas"), cas, "{f:?}");
    assert!((-100..=-98).contains(&me_num(&f, "exp")), "{f:?}");
    // size is the item's footprint: it covers key and value and grows
    // byte for byte with them, and by 4 for nonzero client flags.
    let size = |c: &mut TcpStream, key: &str, vlen: usize, flags: u32| {
        let set = format!("ms {key} {vlen} F{flags}\r\n{}\r\n", "v".repeat(vlen));
        let f = me_fields(c, &format!("{set}me {key}\r\n"));
        me_num(&f, "size")
    };
    let s1 = size(&mut c, &k, 1, 0);
    assert!(s1 > k.len() as i64 + 1, "{s1}");
    assert_eq!(size(&mut c, &k, 101, 0), s1 + 100);
    assert_eq!(size(&mut c, &k, 1, 9), s1 + 4);
    assert_eq!(size(&mut c, &format!("{k}xyz"), 1, 0), s1 + 3);
    // me b: the key in base64 (`me <key> b` above: not base64).
    let enc = b64(&k);
    let f = me_fields(&mut c, &format!("me {enc} b\r\n"));
    assert_eq!(me_num(&f, "size"), s1 + 4, "{f:?}");
    let out = meta(&mut c, &format!("ms {enc} 1 b\r\nx\r\nme {enc} b\r\n"));
    assert!(out.starts_with(&format!("HD\r\nME {enc} exp=-1 la=")), "{out}");
}

/// `h` (hit before) and `l` (seconds since the store), as memcached's
/// t/metaget.t tests them ("hit-before", "no-update", "last-access") and
/// as 1.6.18 answers these sequences: a flag reports the state before
/// this fetch; `u` reads without marking; touch, gat and a vivifying `mg`
/// count as fetches; an append leaves a new, unfetched item.
#[test]
fn hit_before_and_last_access() {
    let mut c = server().connect();
    let k = key("hitflag");
    x(&mut c, &format!("ms {k} 3 T100\r\nhit\r\n"), "HD\r\n");
    let first = meta(&mut c, &format!("mg {k} s t h l\r\n"));
    assert_eq!(field(&first, 'h'), 0, "{first}");
    assert!(field(&first, 'l') <= 1, "just stored: {first}");
    let me = meta(&mut c, &format!("me {k}\r\n"));
    assert!(me.contains(" fetch=yes "), "{me}");
    x(&mut c, &format!("mg {k} h\r\n"), "HD h1\r\n");

    let k = key("noupdate");
    x(&mut c, &format!("ms {k} 3 T100\r\nhit\r\n"), "HD\r\n");
    let me = meta(&mut c, &format!("me {k}\r\n"));
    assert!(me.contains(" fetch=no "), "{me}");
    x(&mut c, &format!("mg {k} u h\r\n"), "HD h0\r\n");
    x(&mut c, &format!("mg {k} h\r\n"), "HD h0\r\n");
    x(&mut c, &format!("mg {k} u h\r\n"), "HD h1\r\n");
    x(&mut c, &format!("append {k} 0 0 1\r\nx\r\n"), "STORED\r\n");
    x(&mut c, &format!("mg {k} h\r\n"), "HD h0\r\n");

    let (t, g) = (key("touchh"), key("gath"));
    x(&mut c, &format!("set {t} 0 100 2\r\nhi\r\nset {g} 0 100 2\r\nhi\r\n"), "STORED\r\nSTORED\r\n");
    x(&mut c, &format!("touch {t} 200\r\n"), "TOUCHED\r\n");
    x(&mut c, &format!("gat 200 {g}\r\n"), &format!("VALUE {g} 0 2\r\nhi\r\nEND\r\n"));
    x(&mut c, &format!("mg {t} h\r\nmg {g} h\r\n"), "HD h1\r\nHD h1\r\n");
    // A TTL change through mg (a new item in Amalgam) keeps the mark.
    let v = key("ttlh");
    x(&mut c, &format!("ms {v} 2 T100\r\nhi\r\n"), "HD\r\n");
    x(&mut c, &format!("mg {v} h T200\r\nmg {v} h\r\n"), "HD h0\r\nHD h1\r\n");
    let n = key("vivify");
    let won = meta(&mut c, &format!("mg {n} N30 h l\r\n"));
    assert!(won.starts_with("HD h0 l") && won.trim_end().ends_with(" W"), "{won}");
    let again = meta(&mut c, &format!("mg {n} h\r\n"));
    assert!(again.starts_with("HD h1"), "{again}");

    // Last access: memcached's `current_time - it->time`, whole seconds of
    // a clock that ticks once a second, so 2.1 s reads 2 or 3 (1 on a
    // coarse tick).
    let k = key("la_test");
    x(&mut c, &format!("ms {k} 2 T100\r\nla\r\n"), "HD\r\n");
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let out = meta(&mut c, &format!("mg {k} s t l\r\n"));
    let l = field(&out, 'l');
    assert!((1..=3).contains(&l), "been over a second since the store: {out}");
    let me = meta(&mut c, &format!("me {k}\r\n"));
    assert!(me.contains(&format!(" la={l} ")) || me.contains(&format!(" la={} ", l + 1)), "{me}");
}
