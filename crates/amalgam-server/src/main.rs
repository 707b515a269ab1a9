//! `amalgam`: start-up and shutdown. See the crate's `lib.rs` for the design.

#![forbid(unsafe_code)]

use amalgam_server::config::Args;
use amalgam_server::worker::{run_acceptor, run_worker, worker_poll, Protocol};
use amalgam_server::Shared;
use clap::Parser;
use mio::{Poll, Token, Waker};
use std::net::ToSocketAddrs;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::Arc;

fn main() -> ExitCode {
    let args = Args::parse();
    if let Err(e) = args.validate() {
        eprintln!("amalgam: {e}");
        return ExitCode::from(64);
    }
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("amalgam: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> Result<(), String> {
    let addr = (args.listen.as_str(), args.port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve listen address {}: {e}", args.listen))?
        .next()
        .ok_or_else(|| format!("no address for {}", args.listen))?;
    let listener = mio::net::TcpListener::bind(addr)
        .map_err(|e| format!("cannot listen on {addr}: {e} (is another server on that port? try -p)"))?;
    let mut listeners = vec![(listener, Protocol::Memcached)];
    if args.resp_port != 0 {
        let resp_addr = std::net::SocketAddr::new(addr.ip(), args.resp_port);
        let resp = mio::net::TcpListener::bind(resp_addr).map_err(|e| {
            format!("cannot listen for RESP on {resp_addr}: {e} (is Redis on that port? try --resp-port, or 0 to turn RESP off)")
        })?;
        listeners.push((resp, Protocol::Resp));
    }
    let verbose = args.verbose;
    let shared = Shared::new(args)?;
    let threads = shared.workers.len();

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

    // SIGINT / SIGTERM: stop accepting, stop the workers, exit 0.
    let mut signals = signal_hook::iterator::Signals::new([signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM])
        .map_err(|e| format!("cannot install signal handlers: {e}"))?;
    let signal_handle = signals.handle();
    let wakers: Vec<_> = handles.iter().map(|h| h.waker_clone()).collect();
    let sig_shared = Arc::clone(&shared);
    let sig_acceptor = Arc::clone(&acceptor_waker);
    let signal_thread = std::thread::Builder::new()
        .name("amalgam-signals".into())
        .spawn(move || {
            if signals.forever().next().is_some() {
                sig_shared.shutdown.store(true, Ordering::Release);
                let _ = sig_acceptor.wake();
                for w in &wakers {
                    let _ = w.wake();
                }
            }
        })
        .map_err(|e| format!("cannot start signal thread: {e}"))?;

    if verbose > 0 {
        eprintln!("amalgam: listening on {addr} with {threads} worker threads");
        if let Some((l, _)) = listeners.get(1) {
            eprintln!("amalgam: RESP on {}", l.local_addr().map(|a| a.to_string()).unwrap_or_default());
        }
    }
    run_acceptor(&shared, listeners, acceptor_poll, &handles);
    shared.shutdown.store(true, Ordering::Release);
    for h in &handles {
        h.wake();
    }
    for j in joins {
        let _ = j.join();
    }
    signal_handle.close();
    let _ = signal_thread.join();
    // Everything journaled reaches the disk, whatever the fsync policy.
    if let Some(p) = &shared.persist {
        p.shutdown();
    }
    if verbose > 0 {
        eprintln!("amalgam: shut down");
    }
    Ok(())
}
