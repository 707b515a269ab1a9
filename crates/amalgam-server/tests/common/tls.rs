//! What the TLS tests share (tls_clients.rs, tls_hostile.rs): test
//! certificates made by scripts/tls-test-certs.sh, an amalgam started with
//! TLS flags, and a rustls client (a crate, not code written here) over a
//! TcpStream for byte-level control: the handshake done by rustls, then
//! records read and written through it or, for hostile input, raw bytes
//! on the socket beneath.
//!
//! Not declared in common/mod.rs (every test binary would compile the
//! client): the TLS test files load it with `#[path = "common/tls.rs"]`.
#![allow(dead_code)]

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// How long a server may take to start listening.
const START_TIMEOUT: Duration = Duration::from_secs(20);
/// How long a TLS test waits for bytes it expects (a handshake in the
/// debug build, on a loaded machine, included).
pub const TLS_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// The test certificates, made once per test process.
pub fn certs() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("amalgam-tls-test-{}", std::process::id()));
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/tls-test-certs.sh");
        let ok = Command::new("bash").arg(script).arg(&dir).status().map(|s| s.success()).unwrap_or(false);
        assert!(ok, "scripts/tls-test-certs.sh failed");
        dir
    })
}

/// The path of one of the test certificates or keys.
pub fn cert(name: &str) -> String {
    certs().join(name).display().to_string()
}

/// False (with a note) where these amalgam-only tests do not apply: the
/// environment points the suite at another server, or one of `tools`
/// is missing.
pub fn applicable(tools: &[&str]) -> bool {
    for var in ["AMALGAM_TEST_BIN", "AMALGAM_TEST_ADDR", "AMALGAM_TEST_RESP_ADDR"] {
        if std::env::var(var).is_ok_and(|v| !v.is_empty()) {
            eprintln!("note: {var} is set; skipping an amalgam-only TLS test");
            return false;
        }
    }
    for tool in tools {
        if Command::new(tool).arg("--version").output().is_err() {
            eprintln!("note: {tool} is missing; skipping a TLS test");
            return false;
        }
    }
    true
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// An amalgam of this test's own; killed when dropped.
#[derive(Debug)]
pub struct Amalgam {
    child: Child,
    /// memcached's port, the plain RESP port and the TLS RESP port.
    pub port: u16,
    pub resp: u16,
    pub tls: u16,
}

impl Amalgam {
    /// Starts amalgam with `args` (`{certs}` replaced by the certificate
    /// directory), a plain RESP port and a TLS RESP port.
    pub fn start(args: &[&str]) -> Amalgam {
        let dir = certs().display().to_string();
        for _attempt in 0..5 {
            let (port, resp, tls) = (free_port(), free_port(), free_port());
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_amalgam"));
            cmd.args(["-l", "127.0.0.1", "-U", "0", "-p", &port.to_string(), "--resp-port", &resp.to_string()]);
            cmd.args(["--tls-port", &tls.to_string()]);
            cmd.args(args.iter().map(|a| a.replace("{certs}", &dir)));
            let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
            let t0 = Instant::now();
            loop {
                if child.try_wait().unwrap().is_some() {
                    break;
                }
                if TcpStream::connect(("127.0.0.1", resp)).is_ok() && TcpStream::connect(("127.0.0.1", tls)).is_ok() {
                    return Amalgam { child, port, resp, tls };
                }
                assert!(t0.elapsed() < START_TIMEOUT, "amalgam {args:?} did not start");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        panic!("amalgam {args:?} exited at start");
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// True while the process runs.
    pub fn alive(&mut self) -> bool {
        self.child.try_wait().map(|s| s.is_none()).unwrap_or(false)
    }
}

impl Drop for Amalgam {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Flags for TLS on memcached's port (`-Z`).
pub const MEMCACHED_TLS: &[&str] = &["-Z", "-o", "ssl_chain_cert={certs}/server.crt,ssl_key={certs}/server.key"];
/// Flags for TLS on the RESP TLS port.
pub const RESP_TLS: &[&str] = &["--tls-cert-file", "{certs}/server.crt", "--tls-key-file", "{certs}/server.key"];

/// A rustls client configuration that trusts the test CA.
pub fn client_config() -> Arc<ClientConfig> {
    static CONFIG: OnceLock<Arc<ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let mut roots = RootCertStore::empty();
            roots.add(CertificateDer::from_pem_file(cert("ca.crt")).expect("the test CA")).unwrap();
            Arc::new(ClientConfig::builder().with_root_certificates(roots).with_no_client_auth())
        })
        .clone()
}

/// A rustls client session for 127.0.0.1, not yet started.
pub fn client_session() -> ClientConnection {
    ClientConnection::new(client_config(), ServerName::try_from("127.0.0.1").unwrap().to_owned()).unwrap()
}

/// A TLS stream over `sock`.
pub type Tls = StreamOwned<ClientConnection, TcpStream>;

/// A TCP connection to 127.0.0.1:`port` with [`TLS_READ_TIMEOUT`] both
/// ways, retried a few times (a burst of connects can overflow the
/// listen backlog).
pub fn tcp_connect(port: u16) -> TcpStream {
    for _attempt in 0..100 {
        if let Ok(s) = TcpStream::connect(("127.0.0.1", port)) {
            s.set_read_timeout(Some(TLS_READ_TIMEOUT)).unwrap();
            s.set_write_timeout(Some(TLS_READ_TIMEOUT)).unwrap();
            s.set_nodelay(true).unwrap();
            return s;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("cannot connect to 127.0.0.1:{port}");
}

/// A TLS connection to `port` with its handshake done (Err: why not).
pub fn try_tls_connect(port: u16) -> Result<Tls, String> {
    let mut sock = tcp_connect(port);
    let mut conn = client_session();
    // Bounded: each round trip has the socket's timeout, and a TLS 1.3
    // handshake is one or two of them.
    for _ in 0..10 {
        if !conn.is_handshaking() {
            return Ok(StreamOwned::new(conn, sock));
        }
        conn.complete_io(&mut sock).map_err(|e| format!("handshake with port {port}: {e}"))?;
    }
    Err(format!("handshake with port {port} did not end"))
}

/// A TLS connection to `port` with its handshake done.
#[track_caller]
pub fn tls_connect(port: u16) -> Tls {
    try_tls_connect(port).unwrap_or_else(|e| panic!("{e}"))
}

/// The TLS records that carry `plaintext` on `tls`'s session, to be
/// written to its socket by the caller (a byte at a time, say).
pub fn seal(tls: &mut Tls, plaintext: &[u8]) -> Vec<u8> {
    tls.conn.writer().write_all(plaintext).unwrap();
    let mut records = Vec::new();
    while tls.conn.wants_write() {
        tls.conn.write_tls(&mut records).unwrap();
    }
    records
}

/// A ClientHello (the bytes a client sends first), as a fresh session
/// would send it.
pub fn client_hello() -> Vec<u8> {
    let mut conn = client_session();
    let mut hello = Vec::new();
    while conn.wants_write() {
        conn.write_tls(&mut hello).unwrap();
    }
    hello
}
