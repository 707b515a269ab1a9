//! `amalgam`: start-up and shutdown. See the crate's `lib.rs` for the design.
//!
//! Start-up refuses what memcached refuses, with memcached's text and exit
//! status (`-I` above half of `-m`: 64; an unknown `-o` option: 1), and
//! says for every other failure what is wrong and what to do. `-d` runs
//! the server as a child process in its own process group (no `fork`: the
//! server forbids `unsafe`); the command returns 0 once the child listens,
//! or the child's status and its error when it could not start.
//!
//! Signals: SIGINT and SIGTERM stop the server cleanly (memcached's
//! `shutdown` and Redis's SHUTDOWN raise SIGTERM); SIGHUP never stops it:
//! memcached ignores it and Redis's users send it to make a server reopen
//! its logs. Amalgam logs to stderr and reads its config file only at
//! start (CONFIG SET changes settings at run time); with TLS on, SIGHUP
//! reloads the certificate, key and CA files (tls.rs), otherwise there is
//! nothing to reopen or reload and at loglevel verbose it says so.
//!
//! Logging (`amalgam_config::logging`) starts before anything else, at the level of
//! `--loglevel`/`-v`; the config file (`--config`, `conffile.rs`) is read
//! by `Args::parse_all` before the flags are parsed.

#![forbid(unsafe_code)]

use amalgam_server::config::{Args, ExtendedOption, EXIT_USAGE};
use amalgam_server::worker::{run_acceptor, run_worker, worker_poll, Protocol};
use amalgam_server::Shared;
use mio::{Poll, Token, Waker};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, ToSocketAddrs};
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Set in a `-d` child's environment: it serves, and reports readiness on
/// its stdout (a pipe to the parent).
const DAEMON_CHILD_ENV: &str = "AMALGAM_DAEMON_CHILD";
/// What a `-d` child writes to its parent once it listens.
const DAEMON_READY: &[u8] = b"ready\n";
/// memcached's exit status for an illegal `-o` suboption.
const EXIT_ILLEGAL_SUBOPTION: u8 = 1;

fn main() -> ExitCode {
    let args = amalgam_server::conffile::parse_all();
    amalgam_server::logging::init(args.log_level());
    if let Err(e) = args.validate_memcached() {
        eprintln!("{e}");
        return ExitCode::from(EXIT_USAGE);
    }
    for o in args.extended_options() {
        match o {
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::from(EXIT_ILLEGAL_SUBOPTION);
            }
            Ok(ExtendedOption::Warned(name, why)) => log::warn!("warning: -o {name} is not implemented: {why}"),
            Ok(_) => {}
        }
    }
    if args.license {
        // memcached's -i: the license, then exit.
        println!("amalgam {}\n\nLicensed under MIT OR Apache-2.0, at your option.", env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }
    if args.lock_memory {
        log::warn!("warning: -k is not implemented: memory is not locked (mlockall)");
    }
    match args.memcached_flag_warnings() {
        Ok(warnings) => warnings.iter().for_each(|w| log::warn!("{w}")),
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(EXIT_USAGE);
        }
    }
    if let Err(e) = args.validate() {
        eprintln!("amalgam: {e}");
        return ExitCode::from(EXIT_USAGE);
    }
    let child = std::env::var_os(DAEMON_CHILD_ENV).is_some();
    if args.daemon && !child {
        return daemonize(&args);
    }
    match run(args, child) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("amalgam: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `-d`: starts this program again as the server, in its own process
/// group with stdin and stdout detached (stderr too unless `-v`, as
/// memcached keeps it only when verbose), and returns once it listens.
/// Until then its stderr goes to a file the parent shows if it fails.
fn daemonize(args: &Args) -> ExitCode {
    use std::os::unix::process::CommandExt;
    let fail = |e: String| {
        eprintln!("amalgam: -d: {e}");
        ExitCode::FAILURE
    };
    let exe = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => return fail(format!("cannot find my own executable: {e}")),
    };
    let err_path = std::env::temp_dir().join(format!("amalgam-daemon-{}.stderr", std::process::id()));
    let stderr = if args.verbose > 0 {
        std::process::Stdio::inherit()
    } else {
        match std::fs::File::create(&err_path) {
            Ok(f) => f.into(),
            Err(e) => return fail(format!("cannot create {}: {e}", err_path.display())),
        }
    };
    let spawned = std::process::Command::new(exe)
        .args(std::env::args_os().skip(1))
        .env(DAEMON_CHILD_ENV, "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(stderr)
        .process_group(0)
        .spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => return fail(format!("cannot start the server process: {e}")),
    };
    let mut ready = [0u8; DAEMON_READY.len()];
    let ok = child.stdout.take().is_some_and(|mut out| out.read_exact(&mut ready).is_ok() && ready == DAEMON_READY);
    let errors = std::fs::read_to_string(&err_path).unwrap_or_default();
    // The child keeps writing to the file it holds; the name goes now.
    let _ = std::fs::remove_file(&err_path);
    if ok {
        // Started: pass on its warnings, not its notices (memcached -d
        // prints nothing when all is well). A log line's sixth field is
        // its level mark (logging.rs); anything else is shown.
        for l in errors.lines().filter(|l| !matches!(l.split_whitespace().nth(5), Some("*" | "-" | "."))) {
            eprintln!("{l}");
        }
        return ExitCode::SUCCESS;
    }
    eprint!("{errors}");
    match child.wait() {
        Ok(status) => ExitCode::from(status.code().and_then(|c| u8::try_from(c).ok()).unwrap_or(1)),
        Err(e) => fail(format!("the server process did not start: {e}")),
    }
}

/// Binds a listener, saying what is wrong and what to do when it cannot.
fn listen(addr: SocketAddr, what: &str, fix: &str) -> Result<mio::net::TcpListener, (ErrorKind, String)> {
    mio::net::TcpListener::bind(addr).map_err(|e| {
        let advice = match e.kind() {
            ErrorKind::AddrInUse => format!("another server holds port {}: {fix}", addr.port()),
            ErrorKind::AddrNotAvailable => format!(
                "{} is not an address of this machine: give one of its addresses with -l (127.0.0.1 for this \
                 machine only, 0.0.0.0 for every interface)",
                addr.ip()
            ),
            ErrorKind::PermissionDenied => {
                format!("ports below 1024 need root or CAP_NET_BIND_SERVICE: {fix}")
            }
            _ => format!("check -l and {fix}"),
        };
        (e.kind(), format!("cannot listen {what}on {addr}: {e}; {advice}"))
    })
}

fn run(mut args: Args, daemon_child: bool) -> Result<(), String> {
    let addr = (args.listen.as_str(), args.port)
        .to_socket_addrs()
        .map_err(|e| {
            format!(
                "-l {}: not an address or a name that resolves ({e}); give an address such as 127.0.0.1",
                args.listen
            )
        })?
        .next()
        .ok_or_else(|| format!("-l {}: the name has no address; give an address such as 127.0.0.1", args.listen))?;
    let listener = listen(addr, "", "give another port with -p").map_err(|(_, e)| e)?;
    if !addr.ip().is_loopback() && args.auth_file.is_none() {
        // memcached's protocol has no protected mode: say it loudly.
        log::warn!(
            "WARNING: the memcached port listens on {addr}, beyond this machine, with no \
             authentication: anyone who can reach it can read, change and flush every key. Give -Y FILE \
             (user:password lines) to require authentication, or -l 127.0.0.1 to serve this machine only."
        );
    }
    // -Z: memcached's port speaks TLS only, as memcached's does.
    let mut listeners = vec![(listener, Protocol::Memcached, args.enable_ssl)];
    if args.resp_port != 0 {
        let resp_addr = SocketAddr::new(addr.ip(), args.resp_port);
        let fix = "give another with --resp-port, or --resp-port 0 to turn RESP off";
        match listen(resp_addr, "for RESP ", fix) {
            Ok(resp) => listeners.push((resp, Protocol::Resp, false)),
            // Left at its default, RESP must not stop a memcached-only
            // start where Redis (or another Amalgam) holds 6379.
            Err((ErrorKind::AddrInUse, e)) if !args.resp_port_explicit => {
                log::warn!("warning: {e}; serving memcached's protocol only");
                args.resp_port = 0;
            }
            Err((_, e)) => return Err(e),
        }
    }
    if args.tls_port != 0 {
        let tls_addr = SocketAddr::new(addr.ip(), args.tls_port);
        let tls = listen(tls_addr, "for TLS RESP ", "give another with --tls-port").map_err(|(_, e)| e)?;
        listeners.push((tls, Protocol::Resp, true));
    }
    let metrics = match args.metrics_port {
        0 => None,
        port => Some(amalgam_server::metrics::bind(SocketAddr::new(addr.ip(), port))?),
    };
    let pidfile = args.pidfile.clone();
    let daemon = args.daemon;
    let cluster_bus = if args.cluster_enabled {
        // The bus port, bound before anything else starts: a node that
        // cannot listen on it refuses to start, as Redis.
        let port = if args.cluster_port != 0 { args.cluster_port } else { args.resp_port.wrapping_add(10000) };
        let bus_addr = SocketAddr::new(addr.ip(), port);
        Some(listen(bus_addr, "for the cluster bus ", "give another with --cluster-port").map_err(|(_, e)| e)?)
    } else {
        None
    };
    let shared = Shared::new(args)?;
    if let Some(bus) = cluster_bus {
        amalgam_server::resp::cluster::start_bus(&shared, bus)?;
    }
    let threads = shared.workers.len();
    if let Some(p) = &pidfile {
        // memcached writes it with or without -d.
        std::fs::write(p, format!("{}\n", std::process::id()))
            .map_err(|e| format!("-P {}: cannot write the pid file: {e}; give a writable path", p.display()))?;
    }

    let acceptor_poll = Poll::new().map_err(|e| e.to_string())?;
    let acceptor_waker = Arc::new(Waker::new(acceptor_poll.registry(), Token(usize::MAX)).map_err(|e| e.to_string())?);

    let mut handles = Vec::with_capacity(threads);
    let mut joins = Vec::with_capacity(threads);
    for id in 0..threads {
        let (poll, handle, inbox) = worker_poll().map_err(|e| e.to_string())?;
        let waker = handle.waker_clone();
        handles.push(handle);
        let shared = Arc::clone(&shared);
        let join = std::thread::Builder::new()
            .name(format!("amalgam-worker-{id}"))
            .spawn(move || run_worker(&shared, id, poll, inbox, waker))
            .map_err(|e| format!("cannot start worker thread: {e}"))?;
        joins.push(join);
    }

    shared.clients.set_wakers(handles.iter().map(|h| h.waker_clone()).collect());
    let metrics_addr = metrics.as_ref().and_then(|m| m.local_addr());
    let metrics_thread = metrics.map(|m| m.spawn(Arc::clone(&shared))).transpose()?;

    // SIGINT / SIGTERM: stop accepting, stop the workers, exit 0. SIGHUP:
    // carry on (module notes).
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])
        .map_err(|e| format!("cannot install signal handlers: {e}"))?;
    let signal_handle = signals.handle();
    let wakers: Vec<_> = handles.iter().map(|h| h.waker_clone()).collect();
    let sig_shared = Arc::clone(&shared);
    let sig_acceptor = Arc::clone(&acceptor_waker);
    let signal_thread = std::thread::Builder::new()
        .name("amalgam-signals".into())
        .spawn(move || {
            for sig in signals.forever() {
                if sig == SIGHUP {
                    // TLS: read the certificate, key and CA again; new
                    // connections use them (tls.rs).
                    if let Some(tls) = &sig_shared.tls {
                        match tls.reload(|_| {}) {
                            Ok(()) => log::warn!("SIGHUP: TLS certificates reloaded"),
                            Err(e) => log::warn!("SIGHUP: TLS certificates not reloaded, the old ones serve on: {e}"),
                        }
                    } else {
                        log::debug!("SIGHUP: nothing to reopen or reload (logs go to stderr); serving on");
                    }
                    continue;
                }
                log::info!("{}: shutting down", if sig == SIGINT { "SIGINT" } else { "SIGTERM" });
                sig_shared.shutdown.store(true, Ordering::Release);
                // A script still running (busy, even unkillable) ends at
                // its next hook, so its worker can stop.
                sig_shared.scripts.runs.abort_all();
                let _ = sig_acceptor.wake();
                for w in &wakers {
                    let _ = w.wake();
                }
                break;
            }
        })
        .map_err(|e| format!("cannot start signal thread: {e}"))?;

    log_start(&shared, addr, &listeners, metrics_addr);
    if daemon_child {
        // Listening: let the parent return. It may be gone; nothing else is
        // ever written to this pipe.
        let _ = std::io::stdout().write_all(DAEMON_READY);
        let _ = std::io::stdout().flush();
    }
    run_acceptor(&shared, listeners, acceptor_poll, &handles);
    shared.shutdown.store(true, Ordering::Release);
    for h in &handles {
        h.wake();
    }
    for j in joins {
        let _ = j.join();
    }
    if let Some(m) = metrics_thread {
        let _ = m.join();
    }
    signal_handle.close();
    let _ = signal_thread.join();
    // A cluster change the bus thread had not saved yet (it saves once
    // per iteration of its loop) reaches nodes.conf before the exit.
    shared.cluster.save_if_pending();
    // Everything journaled reaches the disk, whatever the fsync policy,
    // with the replication state of what it holds (repl.rs).
    if let (Some(p), Some(dir)) = (&shared.persist, &shared.args.dir) {
        if let Err(e) = shared.repl.save_state(dir) {
            log::warn!("cannot save the replication state in {}: {e}", dir.display());
        }
        p.shutdown();
    }
    if let (Some(p), true) = (&pidfile, daemon) {
        // memcached removes its pid file at exit in daemon mode.
        let _ = std::fs::remove_file(p);
    }
    log::info!("amalgam is now ready to exit, bye bye...");
    Ok(())
}

/// The start-up lines (notice): what listens where, with what.
fn log_start(
    shared: &Shared,
    addr: SocketAddr,
    listeners: &[amalgam_server::worker::Listener],
    metrics: Option<SocketAddr>,
) {
    let a = &shared.args;
    log::info!("amalgam {}, pid {}", amalgam_server::VERSION_LONG, std::process::id());
    log::info!(
        "memory limit {} MB, eviction {}, {} worker threads, at most {} connections",
        a.memory_limit_mb,
        a.eviction,
        shared.workers.len(),
        shared.conn_limit
    );
    match &a.dir {
        Some(d) => log::info!("persistence in {} (fsync {:?})", d.display(), a.fsync),
        None => log::info!("persistence off (no --dir)"),
    }
    log::info!("memcached protocol on {addr}");
    if let Some((l, _, _)) = listeners.get(1) {
        log::info!("RESP on {}", l.local_addr().map(|a| a.to_string()).unwrap_or_default());
    }
    if let Some(m) = metrics {
        log::info!("metrics on http://{m}/metrics");
    }
    log::info!("Ready to accept connections");
}
