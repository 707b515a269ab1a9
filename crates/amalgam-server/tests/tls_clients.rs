//! TLS on both ports (tls.rs), driven by clients not written here:
//! `openssl s_client` on memcached's port (`-Z`) and `redis-cli --tls` on
//! the TLS RESP port (`--tls-port`). Certificates are made at test time by
//! scripts/tls-test-certs.sh (test-only keys in a temporary directory).
//!
//! Amalgam-only: each test starts its own amalgam with TLS flags, and is
//! skipped when the environment points the suite at memcached or Redis
//! (AMALGAM_TEST_BIN, AMALGAM_TEST_ADDR, AMALGAM_TEST_RESP_ADDR), or when
//! `openssl` or `redis-cli` is missing.

mod common;
#[path = "common/tls.rs"]
mod tls;

use common::acked::{tcp as witness_tcp, Proto, Witness};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tls::{cert, certs, free_port, Amalgam, MEMCACHED_TLS};

/// How long a client command may take.
const CLIENT_TIMEOUT_SECONDS: &str = "10";
/// How long a server may take to start listening.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// False (with a note) where these tests do not apply.
fn applicable() -> bool {
    tls::applicable(&["openssl", "redis-cli"])
}

/// Runs `program args`, with `input` on its stdin; its stdout and stderr.
fn run(program: &str, args: &[&str], input: &[u8]) -> String {
    let mut child = Command::new("timeout")
        .arg(CLIENT_TIMEOUT_SECONDS)
        .arg(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    let _ = writer.join();
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// memcached commands over `openssl s_client` to `port` (the commands end
/// with `quit`, so the server closes and s_client ends), with `extra`
/// client arguments (`-cert`, `-key`).
fn s_client(port: u16, commands: &str, extra: &[&str]) -> String {
    let connect = format!("127.0.0.1:{port}");
    let ca = cert("ca.crt");
    let mut args = vec!["s_client", "-connect", &connect, "-CAfile", &ca, "-verify_return_error", "-quiet"];
    args.extend_from_slice(extra);
    run("openssl", &args, format!("{commands}quit\r\n").as_bytes())
}

/// The subject of the certificate the server at `port` presents.
fn served_subject(port: u16) -> String {
    let connect = format!("127.0.0.1:{port}");
    let out = run("openssl", &["s_client", "-connect", &connect, "-CAfile", &cert("ca.crt")], b"");
    out.lines().find(|l| l.starts_with("subject=")).unwrap_or_else(|| panic!("no subject in {out}")).to_string()
}

/// `redis-cli --tls` to `port` with `extra` arguments, then the command.
fn redis_tls(port: u16, extra: &[&str], command: &[&str]) -> String {
    let port = port.to_string();
    let ca = cert("ca.crt");
    let mut args = vec!["-p", &port, "--tls", "--cacert", &ca];
    args.extend_from_slice(extra);
    args.extend_from_slice(command);
    run("redis-cli", &args, b"")
}

#[test]
fn memcached_port_speaks_tls_with_z() {
    if !applicable() {
        return;
    }
    let a = Amalgam::start(MEMCACHED_TLS);
    let out = s_client(a.port, "set k 0 0 5\r\nhello\r\nget k\r\n", &[]);
    assert!(out.contains("STORED") && out.contains("VALUE k 0 5\r\nhello\r\nEND"), "{out}");
    // The certificate served is the one given.
    assert!(served_subject(a.port).contains("CN = 127.0.0.1"));
    // A plaintext client gets no memcached reply on the TLS port.
    let mut plain = TcpStream::connect(("127.0.0.1", a.port)).unwrap();
    plain.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    plain.write_all(b"version\r\n").unwrap();
    let mut got = Vec::new();
    let _ = plain.read_to_end(&mut got);
    assert!(!String::from_utf8_lossy(&got).contains("VERSION"), "{got:?}");
    // The same keys over plain RESP.
    let out = run("redis-cli", &["-p", &a.resp.to_string(), "get", "k"], b"");
    assert_eq!(out.trim(), "hello");
}

#[test]
fn memcached_verify_mode_2_requires_a_trusted_client_certificate() {
    if !applicable() {
        return;
    }
    let a = Amalgam::start(&[
        "-Z",
        "-o",
        "ssl_chain_cert={certs}/server.crt,ssl_key={certs}/server.key,ssl_ca_cert={certs}/ca.crt,ssl_verify_mode=2",
    ]);
    let (client, key) = (cert("client.crt"), cert("client.key"));
    let out = s_client(a.port, "version\r\n", &["-cert", &client, "-key", &key]);
    assert!(out.contains("VERSION "), "{out}");
    let out = s_client(a.port, "version\r\n", &[]);
    assert!(!out.contains("VERSION "), "served without a client certificate: {out}");
    for bad in ["expired", "rogue"] {
        let (c, k) = (cert(&format!("{bad}.crt")), cert(&format!("{bad}.key")));
        let out = s_client(a.port, "version\r\n", &["-cert", &c, "-key", &k]);
        assert!(!out.contains("VERSION "), "served with the {bad} certificate: {out}");
    }
}

#[test]
fn memcached_verify_mode_1_serves_with_or_without_a_certificate() {
    if !applicable() {
        return;
    }
    let a = Amalgam::start(&[
        "-Z",
        "--ssl-chain-cert",
        "{certs}/server.crt",
        "--ssl-key",
        "{certs}/server.key",
        "--ssl-ca-cert",
        "{certs}/ca.crt",
        "--ssl-verify-mode",
        "1",
    ]);
    assert!(s_client(a.port, "version\r\n", &[]).contains("VERSION "));
    let (client, key) = (cert("client.crt"), cert("client.key"));
    assert!(s_client(a.port, "version\r\n", &["-cert", &client, "-key", &key]).contains("VERSION "));
    // A certificate that is sent must still verify.
    let (c, k) = (cert("rogue.crt"), cert("rogue.key"));
    assert!(!s_client(a.port, "version\r\n", &["-cert", &c, "-key", &k]).contains("VERSION "));
}

#[test]
fn resp_tls_port_beside_the_plain_one() {
    if !applicable() {
        return;
    }
    let a = Amalgam::start(&["--tls-cert-file", "{certs}/server.crt", "--tls-key-file", "{certs}/server.key"]);
    assert_eq!(redis_tls(a.tls, &[], &["set", "k", "v"]).trim(), "OK");
    assert_eq!(redis_tls(a.tls, &[], &["get", "k"]).trim(), "v");
    // TLS 1.2 as well as 1.3.
    let out = run(
        "openssl",
        &["s_client", "-connect", &format!("127.0.0.1:{}", a.tls), "-CAfile", &cert("ca.crt"), "-tls1_2", "-quiet"],
        b"*1\r\n$4\r\nQUIT\r\n",
    );
    assert!(out.contains("+OK"), "{out}");
    // The plain RESP port serves on beside it, the same keys.
    assert_eq!(run("redis-cli", &["-p", &a.resp.to_string(), "get", "k"], b"").trim(), "v");
    // An untrusting client refuses the server (its CA is not given).
    let out = run("redis-cli", &["-p", &a.tls.to_string(), "--tls", "--cacert", &cert("rogue.crt"), "ping"], b"");
    assert!(!out.contains("PONG"), "{out}");
}

#[test]
fn resp_tls_auth_clients_yes_and_optional() {
    if !applicable() {
        return;
    }
    let files = ["--tls-cert-file", "{certs}/server.crt", "--tls-key-file", "{certs}/server.key"];
    let ca = ["--tls-ca-cert-file", "{certs}/ca.crt"];
    let (client, key) = (cert("client.crt"), cert("client.key"));
    // Redis's default with a CA: yes.
    let a = Amalgam::start(&[&files[..], &ca[..]].concat());
    assert_eq!(redis_tls(a.tls, &["--cert", &client, "--key", &key], &["ping"]).trim(), "PONG");
    assert!(!redis_tls(a.tls, &[], &["ping"]).contains("PONG"), "served without a client certificate");
    for bad in ["expired", "rogue"] {
        let (c, k) = (cert(&format!("{bad}.crt")), cert(&format!("{bad}.key")));
        let out = redis_tls(a.tls, &["--cert", &c, "--key", &k], &["ping"]);
        assert!(!out.contains("PONG"), "served with the {bad} certificate: {out}");
    }
    drop(a);
    let a = Amalgam::start(&[&files[..], &ca[..], &["--tls-auth-clients", "optional"]].concat());
    assert_eq!(redis_tls(a.tls, &[], &["ping"]).trim(), "PONG");
    assert_eq!(redis_tls(a.tls, &["--cert", &client, "--key", &key], &["ping"]).trim(), "PONG");
}

#[test]
fn garbage_and_stalled_handshakes_disturb_no_one() {
    if !applicable() {
        return;
    }
    // One worker: a stalled handshake holding it would stall everyone.
    let a =
        Amalgam::start(&["-t", "1", "--tls-cert-file", "{certs}/server.crt", "--tls-key-file", "{certs}/server.key"]);
    let witness = Witness::start(Proto::Resp, witness_tcp(([127, 0, 0, 1], a.resp).into()));
    // Half a ClientHello, never finished.
    let mut stalled = TcpStream::connect(("127.0.0.1", a.tls)).unwrap();
    stalled.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01]).unwrap();
    // Garbage instead of a ClientHello: closed (after rustls's alert).
    let mut garbage = TcpStream::connect(("127.0.0.1", a.tls)).unwrap();
    garbage.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    garbage.write_all(b"*1\r\n$4\r\nPING\r\n").unwrap();
    let mut got = Vec::new();
    garbage.read_to_end(&mut got).expect("the garbage connection is closed, not left open");
    assert!(got.len() < 16 && !got.starts_with(b"+PONG"), "{got:?}");
    // Everyone else is served, over TLS and in the clear.
    assert_eq!(redis_tls(a.tls, &[], &["ping"]).trim(), "PONG");
    assert_eq!(run("redis-cli", &["-p", &a.resp.to_string(), "ping"], b"").trim(), "PONG");
    drop(stalled);
    witness.check();
}

#[test]
fn maxclients_counts_tls_connections() {
    if !applicable() {
        return;
    }
    let a =
        Amalgam::start(&["-c", "2", "--tls-cert-file", "{certs}/server.crt", "--tls-key-file", "{certs}/server.key"]);
    // The start-up probes' connections close first: until then they count
    // (bounded wait; redis-cli itself is the one client it sees).
    let t0 = Instant::now();
    let clients = || run("redis-cli", &["-p", &a.resp.to_string(), "info", "clients"], b"");
    while !clients().lines().any(|l| l.trim() == "connected_clients:1") {
        assert!(t0.elapsed() < START_TIMEOUT, "the probes' connections stay open");
        std::thread::sleep(Duration::from_millis(50));
    }
    // And INFO's own connection closes too.
    std::thread::sleep(Duration::from_millis(500));
    let held: Vec<TcpStream> = (0..2).map(|_| TcpStream::connect(("127.0.0.1", a.tls)).unwrap()).collect();
    // The acceptor counts them as it accepts them; a third, once it has,
    // is closed at once (tried a few times: the count may lag the connects).
    let mut closed = false;
    for _attempt in 0..20 {
        let mut third = TcpStream::connect(("127.0.0.1", a.tls)).unwrap();
        third.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
        let mut got = Vec::new();
        if third.read_to_end(&mut got).is_ok() {
            assert!(got.is_empty(), "{got:?}");
            closed = true;
            break;
        }
    }
    assert!(closed, "a TLS connection over -c stayed open");
    // A plain RESP client over the limit gets Redis's answer (tried a few
    // times: a refused attempt's close may lag too).
    let refused = (0..20).any(|_| {
        let out = run("redis-cli", &["-p", &a.resp.to_string(), "ping"], b"");
        out.contains("max number of clients reached") || {
            std::thread::sleep(Duration::from_millis(100));
            false
        }
    });
    assert!(refused, "a plain client was served beside two TLS connections at -c 2");
    drop(held);
}

/// Copies the first or the second server certificate to the files the
/// server was started with.
fn install(dir: &Path, second: bool) {
    let name = if second { "server2" } else { "server" };
    std::fs::copy(certs().join(format!("{name}.crt")), dir.join("live.crt")).unwrap();
    std::fs::copy(certs().join(format!("{name}.key")), dir.join("live.key")).unwrap();
}

#[test]
fn certificates_reload_without_a_restart() {
    if !applicable() {
        return;
    }
    let dir = certs().join(format!("reload-{}", free_port()));
    std::fs::create_dir_all(&dir).unwrap();
    install(&dir, false);
    let live = dir.display().to_string();
    let a = Amalgam::start(&[
        "-Z",
        "-o",
        &format!("ssl_chain_cert={live}/live.crt,ssl_key={live}/live.key"),
        "--tls-cert-file",
        &format!("{live}/live.crt"),
        "--tls-key-file",
        &format!("{live}/live.key"),
    ]);
    let first = "CN = 127.0.0.1";
    let second = "CN = amalgam-reloaded";
    assert!(served_subject(a.tls).contains(first));

    // memcached's refresh_certs.
    install(&dir, true);
    assert!(served_subject(a.port).contains(first), "changed before any reload");
    let out = s_client(a.port, "refresh_certs\r\n", &[]);
    assert!(out.contains("OK\r\n"), "{out}");
    assert!(served_subject(a.port).contains(second));
    assert!(served_subject(a.tls).contains(second));

    // SIGHUP.
    install(&dir, false);
    assert!(Command::new("kill").args(["-HUP", &a.pid().to_string()]).status().unwrap().success());
    let t0 = Instant::now();
    while !served_subject(a.tls).contains(first) {
        assert!(t0.elapsed() < Duration::from_secs(10), "SIGHUP did not reload");
        std::thread::sleep(Duration::from_millis(50));
    }

    // CONFIG SET, to new names; CONFIG GET shows them.
    let (c2, k2) = (cert("server2.crt"), cert("server2.key"));
    let out = redis_tls(a.tls, &[], &["config", "set", "tls-cert-file", &c2, "tls-key-file", &k2]);
    assert_eq!(out.trim(), "OK");
    assert!(served_subject(a.tls).contains(second));
    assert!(redis_tls(a.tls, &[], &["config", "get", "tls-cert-file"]).contains("server2.crt"));
    // A file that does not load changes nothing, with Redis's error.
    let out = redis_tls(a.tls, &[], &["config", "set", "tls-cert-file", "/nonexistent.crt"]);
    assert!(out.contains("Unable to update TLS configuration"), "{out}");
    assert!(served_subject(a.tls).contains(second));
    // Back to the first names; then memcached's refresh_certs reports a
    // file that does not load, and the certificate stays.
    let (c1, k1) = (format!("{live}/live.crt"), format!("{live}/live.key"));
    let out = redis_tls(a.tls, &[], &["config", "set", "tls-cert-file", &c1, "tls-key-file", &k1]);
    assert_eq!(out.trim(), "OK");
    assert!(served_subject(a.port).contains(first));
    std::fs::remove_file(dir.join("live.crt")).unwrap();
    let out = s_client(a.port, "refresh_certs\r\n", &[]);
    assert!(out.contains("Error loading the certificate chain: "), "{out}");
    assert!(served_subject(a.port).contains(first), "a failed reload changed the certificate");
}
