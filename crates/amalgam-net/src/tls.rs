//! TLS on both ports (issue 20; DESIGN.md § Security), with rustls and its
//! ring provider: no OpenSSL linkage.
//!
//! A TLS connection is an ordinary connection of a worker's event loop
//! whose socket reads and writes go through a `rustls::ServerConnection`
//! (the server's worker.rs: `Conn::fill` reads with [`read`], `Conn::turn`
//! writes with [`send`] and flushes queued records with [`flush`]). Everything is
//! non-blocking: a handshake that stalls just waits for readiness like an
//! idle connection, holding no worker. A peer that sends something other
//! than TLS gets rustls's alert and is closed, alone. A round whose socket
//! read came back short ends without another read, as a plaintext one
//! does ([`read`]'s `drained`).
//!
//! rustls's buffered API, not its unbuffered one: in rustls 0.23 the
//! unbuffered `ReadTraffic` still hands out plaintext copied into a
//! `Vec` of rustls's own, and `WriteTraffic::encrypt` copies a record it
//! encrypted into a `Vec` into the caller's buffer, one copy more than
//! `write_tls` (docs/security.md § The record path and its cost).
//!
//! The certificate, its key and the CA that signs client certificates are
//! read from files at start-up and again on reload (SIGHUP, RESP's
//! `CONFIG SET tls-cert-file …`, memcached's `refresh_certs`): the new
//! `ServerConfig` replaces the old behind a lock that is only taken when
//! a connection is registered, never per request; connections already
//! open keep the configuration they started with, as in memcached and
//! Redis.
//!
//! The whole path — records in, handshake, decryption, a connection's
//! turn, records out — is fuzzed over a fake socket through
//! `worker::Driven` (`fuzz-server/fuzz_targets/tls_conn.rs`; in `cargo
//! test`, `tests/fuzz_smoke.rs`).
//!
//! Client certificates: memcached's `ssl_verify_mode` (0 none, 1 request:
//! verified if sent, 2 require, 3 once: the same as 2, since rustls never
//! renegotiates) for the memcached port, Redis's `tls-auth-clients` (no,
//! optional, yes) for the TLS RESP port.

use crate::socket::Protocol;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig, ServerConnection};
use std::io::{ErrorKind, Read, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};

/// Rounds of read-records/decrypt one [`read`] call makes before it
/// reports `Interrupted` (the turn then goes on; it bounds the loop while
/// records arrive that carry no application data, such as handshake
/// messages or TLS 1.3 key updates).
const READS_PER_CALL_MAX: usize = 8;
/// `write_tls` calls one [`flush`] makes at most (each writes what the
/// socket takes; rustls keeps at most its buffer limit, 64 KiB by default).
const FLUSHES_PER_CALL_MAX: usize = 64;

/// Whether a port asks clients for a certificate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientAuth {
    /// No client certificate asked for.
    None,
    /// Asked for; verified against the CA if sent; a client without one
    /// is served (memcached's `ssl_verify_mode=1`, Redis's `optional`).
    Optional,
    /// Required and verified (memcached's 2 and 3, Redis's `yes`).
    Required,
}

impl ClientAuth {
    /// memcached's `ssl_verify_mode`.
    pub fn from_verify_mode(s: &str) -> Result<ClientAuth, String> {
        match s {
            "0" => Ok(ClientAuth::None),
            "1" => Ok(ClientAuth::Optional),
            "2" | "3" => Ok(ClientAuth::Required),
            _ => Err(format!("ssl_verify_mode takes 0 (none), 1 (request), 2 (require) or 3 (once); '{s}' is not one")),
        }
    }

    /// Redis's `tls-auth-clients`.
    pub fn from_auth_clients(s: &str) -> Result<ClientAuth, String> {
        match s.to_ascii_lowercase().as_str() {
            "no" => Ok(ClientAuth::None),
            "optional" => Ok(ClientAuth::Optional),
            "yes" => Ok(ClientAuth::Required),
            _ => Err(format!("--tls-auth-clients takes yes, no or optional; '{s}' is not one")),
        }
    }

    /// Redis's name for it (CONFIG GET tls-auth-clients).
    pub fn redis_name(self) -> &'static str {
        match self {
            ClientAuth::None => "no",
            ClientAuth::Optional => "optional",
            ClientAuth::Required => "yes",
        }
    }
}

/// The files a configuration is built from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Files {
    /// The certificate chain (PEM), leaf first.
    pub cert: PathBuf,
    /// Its private key (PEM); memcached lets it sit in the chain file.
    pub key: PathBuf,
    /// The CA certificates (PEM) that sign accepted client certificates.
    pub ca: Option<PathBuf>,
}

/// What the command line asks for (config.rs builds it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    pub files: Files,
    /// `-Z`: the memcached port speaks TLS, with this client policy.
    pub memcached: Option<ClientAuth>,
    /// `--tls-port`'s client policy.
    pub resp: ClientAuth,
}

/// The live TLS configuration.
#[derive(Debug)]
pub struct Tls {
    files: Mutex<Files>,
    memcached_auth: ClientAuth,
    resp_auth: ClientAuth,
    /// Read when a connection is registered (never per request); replaced
    /// whole by a reload.
    configs: RwLock<Configs>,
}

#[derive(Debug)]
struct Configs {
    memcached: Arc<ServerConfig>,
    resp: Arc<ServerConfig>,
}

impl Tls {
    /// Builds the configuration from `settings`, reading its files.
    pub fn new(settings: &Settings) -> Result<Tls, String> {
        let memcached_auth = settings.memcached.unwrap_or(ClientAuth::None);
        let configs = build(&settings.files, memcached_auth, settings.resp)?;
        Ok(Tls {
            files: Mutex::new(settings.files.clone()),
            memcached_auth,
            resp_auth: settings.resp,
            configs: RwLock::new(configs),
        })
    }

    /// A new TLS session for a connection accepted on `protocol`'s port.
    pub fn accept(&self, protocol: Protocol) -> Result<ServerConnection, rustls::Error> {
        let configs = self.configs.read().unwrap_or_else(|e| e.into_inner());
        let config = match protocol {
            Protocol::Memcached => &configs.memcached,
            Protocol::Resp => &configs.resp,
        };
        ServerConnection::new(Arc::clone(config))
    }

    /// Reads the files again (after `change` is applied to their names)
    /// and serves new connections with them; on failure nothing changes
    /// (the names included) and the error says why.
    pub fn reload(&self, change: impl FnOnce(&mut Files)) -> Result<(), String> {
        let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        let mut next = files.clone();
        change(&mut next);
        let configs = build(&next, self.memcached_auth, self.resp_auth)?;
        *self.configs.write().unwrap_or_else(|e| e.into_inner()) = configs;
        *files = next;
        Ok(())
    }

    /// The file names now.
    pub fn files(&self) -> Files {
        self.files.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The TLS RESP port's client policy.
    pub fn resp_auth(&self) -> ClientAuth {
        self.resp_auth
    }
}

/// Both ports' configurations from the files.
fn build(files: &Files, memcached: ClientAuth, resp: ClientAuth) -> Result<Configs, String> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&files.cert)
        .and_then(|it| it.collect())
        .map_err(|e| format!("{} : {e}", files.cert.display()))?;
    if certs.is_empty() {
        return Err(format!("{} : no certificate in the file", files.cert.display()));
    }
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|e| format!("{} : {e}", files.key.display()))?;
    let roots = match &files.ca {
        None => None,
        Some(ca) => {
            let mut roots = RootCertStore::empty();
            let cas = CertificateDer::pem_file_iter(ca)
                .and_then(|it| it.collect::<Result<Vec<_>, _>>())
                .map_err(|e| format!("{} : {e}", ca.display()))?;
            let (added, _) = roots.add_parsable_certificates(cas);
            if added == 0 {
                return Err(format!("{} : no usable CA certificate in the file", ca.display()));
            }
            Some(Arc::new(roots))
        }
    };
    let one = |auth: ClientAuth| -> Result<Arc<ServerConfig>, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .map_err(|e| e.to_string())?;
        let builder = match (auth, &roots) {
            (ClientAuth::None, _) => builder.with_no_client_auth(),
            (_, None) => {
                return Err("client certificates are asked for (ssl_verify_mode, --tls-auth-clients) but no CA \
                            is given to verify them: give ssl_ca_cert / --tls-ca-cert-file"
                    .into())
            }
            (auth, Some(roots)) => {
                let v = WebPkiClientVerifier::builder_with_provider(Arc::clone(roots), provider);
                let v = if auth == ClientAuth::Optional { v.allow_unauthenticated() } else { v };
                builder.with_client_cert_verifier(v.build().map_err(|e| e.to_string())?)
            }
        };
        let config = builder
            .with_single_cert(certs.clone(), key.clone_key())
            .map_err(|e| format!("{} and {} : {e}", files.cert.display(), files.key.display()))?;
        Ok(Arc::new(config))
    };
    Ok(Configs { memcached: one(memcached)?, resp: one(resp)? })
}

/// Reads decrypted bytes into `buf`, taking records from the socket as
/// needed: Ok(0) at the end of the stream (close_notify or the peer's
/// FIN), `WouldBlock` when the socket has nothing more, `InvalidData`
/// when the peer broke the protocol (its alert is sent first).
///
/// `drained` (on Ok) says whether the socket's receive queue was found
/// empty and nothing decrypted is left in rustls: the socket's last read
/// returned less than rustls asked for, so the next bytes raise a new
/// edge-triggered event, and the worker skips the read that would only
/// say EAGAIN, as it does for a plaintext short read (worker.rs
/// `Conn::drained`). Without it a TLS connection made one `recv` more per
/// round than a plaintext one: 1.9 instead of 1.0 per round at pipeline
/// 16 and 1 (docs/bench-log/2026-11-26-tls.md § A TLS round reads its
/// socket once).
// Out of line: the plaintext turn must not carry its code.
#[inline(never)]
pub fn read(
    tls: &mut ServerConnection,
    sock: &mut impl ReadWrite,
    buf: &mut [u8],
    drained: &mut bool,
) -> std::io::Result<usize> {
    // Not drained unless found so below (an error or `Interrupted`
    // leaves the socket to be read again).
    *drained = false;
    let mut sock = Short { sock, short: false };
    // What rustls holds already (plaintext the last call left, a
    // close_notify or the peer's FIN to report) goes first; `wants_read`
    // says there is none, and spares the usual round the error value a
    // read of an empty reader makes.
    if !tls.wants_read() {
        if let Some(got) = take(tls, buf, sock.short, drained) {
            return got;
        }
    }
    for _ in 0..READS_PER_CALL_MAX {
        tls.read_tls(&mut sock)?;
        if let Err(e) = tls.process_new_packets() {
            // Best effort: the alert rustls queued says why.
            let _ = flush(tls, sock.sock);
            return Err(std::io::Error::new(ErrorKind::InvalidData, e));
        }
        // Handshake messages to answer: as far as the socket takes them;
        // the rest goes at the next writable event (the worker asks for
        // one as the turn ends: Conn::rewatch; Conn::turn flushes).
        match flush(tls, sock.sock) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
        if let Some(got) = take(tls, buf, sock.short, drained) {
            return got;
        }
    }
    Err(ErrorKind::Interrupted.into())
}

/// Takes decrypted bytes rustls holds into `buf`: None if it holds none
/// (more records are needed).
/// `short`: the socket's last read came back short.
fn take(tls: &mut ServerConnection, buf: &mut [u8], short: bool, drained: &mut bool) -> Option<std::io::Result<usize>> {
    match tls.reader().read(buf) {
        Ok(n) => {
            // `wants_read`: no plaintext left in rustls, no close_notify
            // to report, no handshake reply held back.
            *drained = short && tls.wants_read();
            Some(Ok(n))
        }
        Err(e) if e.kind() == ErrorKind::WouldBlock => None,
        // The peer closed the TCP stream without close_notify.
        Err(e) if e.kind() == ErrorKind::UnexpectedEof => Some(Ok(0)),
        Err(e) => Some(Err(e)),
    }
}

/// The socket as rustls reads it, remembering whether its last read
/// returned less than asked (a stream socket's short read: its receive
/// queue is empty).
struct Short<'a, S> {
    sock: &'a mut S,
    short: bool,
}

impl<S: Read> Read for Short<'_, S> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.sock.read(buf)?;
        self.short = n < buf.len();
        Ok(n)
    }
}

/// Encrypts as much of `buf` as rustls takes and writes the records the
/// socket takes: Ok(n) for n bytes of `buf` taken (records may still be
/// queued: [`flush`] sends them), `WouldBlock` if none could be taken.
// Out of line: the plaintext turn must not carry its code.
#[inline(never)]
pub fn send(tls: &mut ServerConnection, sock: &mut impl ReadWrite, buf: &[u8]) -> std::io::Result<usize> {
    flush(tls, sock)?;
    let n = tls.writer().write(buf)?;
    match flush(tls, sock) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        Err(e) => return Err(e),
    }
    if n == 0 {
        return Err(ErrorKind::WouldBlock.into());
    }
    Ok(n)
}

/// Writes the queued records until none is left (Ok) or the socket is
/// full (`WouldBlock`).
// Out of line: the plaintext turn must not carry its code.
#[inline(never)]
pub fn flush(tls: &mut ServerConnection, sock: &mut impl ReadWrite) -> std::io::Result<()> {
    for _ in 0..FLUSHES_PER_CALL_MAX {
        if !tls.wants_write() {
            return Ok(());
        }
        if tls.write_tls(sock)? == 0 {
            return Err(ErrorKind::WriteZero.into());
        }
    }
    Ok(())
}

/// A socket (a trait so the TLS path can be driven without one).
pub trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verify_modes_are_memcacheds_and_redis() {
        assert_eq!(ClientAuth::from_verify_mode("0"), Ok(ClientAuth::None));
        assert_eq!(ClientAuth::from_verify_mode("1"), Ok(ClientAuth::Optional));
        assert_eq!(ClientAuth::from_verify_mode("2"), Ok(ClientAuth::Required));
        assert_eq!(ClientAuth::from_verify_mode("3"), Ok(ClientAuth::Required));
        assert!(ClientAuth::from_verify_mode("4").is_err());
        assert_eq!(ClientAuth::from_auth_clients("YES"), Ok(ClientAuth::Required));
        assert_eq!(ClientAuth::from_auth_clients("optional"), Ok(ClientAuth::Optional));
        assert!(ClientAuth::from_auth_clients("maybe").is_err());
    }

    #[test]
    fn missing_files_say_which() {
        let files = Files { cert: "/nonexistent/c.pem".into(), key: "/nonexistent/k.pem".into(), ca: None };
        let e = Tls::new(&Settings { files, memcached: Some(ClientAuth::None), resp: ClientAuth::None }).unwrap_err();
        assert!(e.contains("/nonexistent/c.pem"), "{e}");
    }
}
